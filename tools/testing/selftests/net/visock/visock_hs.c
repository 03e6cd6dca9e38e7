// SPDX-License-Identifier: GPL-2.0
/*
 * The visock handshake between two hosts.
 *
 * rdma_ready	both hosts have visock and an ACTIVE RDMA port; the runner
 *		runs the stream tests with net.visock.enable=1 only then.
 * success*	net.visock.enable=1 on both hosts: the handshake succeeds,
 *		VISOCK_INFO agrees on both ends, the queue pair of each end
 *		is listed in RTS by "rdma resource show qp", the stream is
 *		intact in both directions, and the QPs go away on close.
 * fb_*		fallback matrix: a peer without visock, with enable=0,
 *		without RDMA device (Soft-RoCE device deleted), an option
 *		stripped from the SYN or the SYN-ACK by a middlebox (an
 *		iptables TCPOPTSTRIP rule).  Each checks the reason on both
 *		ends and a checksummed stream in both directions.
 * hostile_client_* / hostile_server_*
 *		one host sets /sys/kernel/debug/visock/raw_handshake, so
 *		that its visock sockets announce visock in SYN / SYN-ACK
 *		but leave the handshake to the application; the test then
 *		sends crafted messages to the other (normal) host, which
 *		must either fall back to an intact TCP stream or end the
 *		connection with an error, within a bounded time, with the
 *		outcome visock_handshake.c defines.
 *
 * Settings (sysctls, debugfs, iptables rules, RDMA links) are changed on
 * the host that needs them, by the half running there, and put back at
 * the end of the half; a cleanup hook that the harness runs after every
 * half puts them back as well when the half failed or was killed.
 *
 * The handshake messages are built and parsed by this file's own small
 * encoder and decoder, from the format in Documentation/networking/
 * visock/design.rst (big-endian, 8-byte header, TLVs).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/visock.h>

#include "harness.h"
#include "hostutil.h"
#include "hsmsg.h"
#include "ktap.h"
#include "sockutil.h"

#define SYSCTL_DIR	"/proc/sys/net/visock/"
#define ENABLE_PATH	SYSCTL_DIR "enable"
#define TIMEOUT_PATH	SYSCTL_DIR "handshake_timeout_ms"
#define DEBUGFS_DIR	"/sys/kernel/debug"
#define RAW_PATH	DEBUGFS_DIR "/visock/raw_handshake"
#define DELAY_PATH	DEBUGFS_DIR "/visock/hs_delay_ms"
#define IB_CLASS	"/sys/class/infiniband"
#define IPT_TAG		"visock-selftest"
#define RXE_ENV		"VISOCK_TEST_RXE_NETDEV"

#define HOSTILE_TIMEOUT_MS	1000	/* handshake_timeout_ms, hostile tests */
#define ECHO_TIMEOUT_MS		500	/* ... server-speaks-first fallback */
#define SLOW_TIMEOUT_MS		1000	/* ... both hosts, slow client tests */
#define SLOW_DELAY_MS		2000	/* the slow client's first message */
#define MARGIN_MS		5000	/* slack on top of a timeout */
#define MSG_WAIT_MS		10000	/* a handshake message the peer owes */
#define CMD_TIMEOUT_MS		30000	/* iptables, rdma */
#define SETTLE_GUARD_S		15	/* SO_SNDTIMEO: connect() must settle */
#define XFER_LEN		(64 * 1024)
#define XFER_LEN_BIG		(1024 * 1024)
#define XFER_MS			60000

/* ---- the handshake wire format (hsmsg.h), what the tests add ---- */

#define TLV_CRITICAL	0x8000
#define TLV_UNKNOWN	0x0123		/* a type no version 1 peer knows */
#define BIT_T(t)	(1u << (t))
#define SETUP_TLVS	(BIT_T(TLV_FEATURES) | BIT_T(TLV_GID) |	\
			 BIT_T(TLV_QPN) | BIT_T(TLV_PSN) |		\
			 BIT_T(TLV_MTU) | BIT_T(TLV_RBUF) |		\
			 BIT_T(TLV_TOKEN) | BIT_T(TLV_LINK))

/* ---- host settings and their cleanup ---- */

struct host_knobs {
	int enable;		/* -1: not readable */
	int timeout;
	int raw;
	int delay;
};

/* Shared between the runner and the test halves it forks. */
struct hs_dirty {
	int knobs;		/* a sysctl or the debugfs hook was written */
	int ipt_port;		/* an iptables rule for this port is in */
	int ipt_synack;		/* ... matching SYN-ACKs (else SYNs) */
	int ipt_roce;		/* outgoing RoCE v2 packets are dropped */
	int rxe_gone;		/* rxe_dev was deleted */
	char rxe_dev[64];
	char rxe_netdev[64];
};

static struct host_knobs base;
static struct hs_dirty *dirty;

/* The debugfs test hook @path exists (mounting debugfs if needed). */
static bool have_hook(const char *path)
{
	if (access(path, W_OK) == 0)
		return true;
	mount("debugfs", DEBUGFS_DIR, "debugfs", 0, NULL);
	return access(path, W_OK) == 0;
}

static void set_knob(const char *path, int val)
{
	dirty->knobs = 1;
	if (hu_write_ll(path, val))
		vt_fail("writing %d to %s: %s", val, path, strerror(errno));
}

#define CMD_MAX_ARGS	32

/*
 * Run a command (arguments up to a NULL) with its output in @out, bounded
 * by CMD_TIMEOUT_MS.  Return: its exit status, 127 if it cannot be run,
 * -1 on timeout or if it died of a signal.  Never fails the test (usable
 * from the cleanup).
 */
static int run_cmd(char *out, size_t size, const char *arg0, ...)
{
	long long deadline = ctl_now_ms() + CMD_TIMEOUT_MS;
	const char *argv[CMD_MAX_ARGS + 1];
	int pfd[2], status, devnull, argc = 0;
	bool timed_out = false;
	size_t off = 0;
	va_list ap;
	pid_t pid;

	va_start(ap, arg0);
	for (argv[0] = arg0; argv[argc] && argc < CMD_MAX_ARGS;)
		argv[++argc] = va_arg(ap, const char *);
	va_end(ap);
	argv[argc] = NULL;
	if (size)
		out[0] = '\0';
	if (pipe2(pfd, O_CLOEXEC))
		return 127;
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return 127;
	}
	if (pid == 0) {
		devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0)
			dup2(devnull, 0);
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(pfd[1]);
	for (;;) {
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		long long left = deadline - ctl_now_ms();
		char buf[512];
		ssize_t n;
		int ret;

		if (left <= 0) {
			timed_out = true;
			break;
		}
		ret = poll(&p, 1, (int)left);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret <= 0)
			continue;
		n = read(pfd[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (size && off < size - 1) {
			size_t k = (size_t)n < size - 1 - off ?
				   (size_t)n : size - 1 - off;

			memcpy(out + off, buf, k);
			off += k;
			out[off] = '\0';
		}
	}
	close(pfd[0]);
	if (timed_out)
		kill(pid, SIGKILL);
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	if (timed_out) {
		snprintf(out, size, "timed out after %d ms", CMD_TIMEOUT_MS);
		return -1;
	}
	if (!WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* First line of @s, for messages. */
static const char *first_line(char *s)
{
	char *nl = strchr(s, '\n');

	if (nl)
		*nl = '\0';
	return *s ? s : "(no output)";
}

/* ---- iptables: strip option 253 from incoming SYNs or SYN-ACKs ---- */

static int ipt_rule(bool add, int port, bool synack, char *out, size_t size)
{
	char p[16];

	snprintf(p, sizeof(p), "%d", port);
	return run_cmd(out, size, "iptables", "-w", "5", "-t", "mangle",
		       add ? "-A" : "-D", "PREROUTING", "-p", "tcp",
		       synack ? "--sport" : "--dport", p, "--tcp-flags",
		       synack ? "SYN,ACK" : "SYN,RST,ACK,FIN",
		       synack ? "SYN,ACK" : "SYN", "-m", "comment",
		       "--comment", IPT_TAG, "-j", "TCPOPTSTRIP",
		       "--strip-options", "253", NULL);
}

/* Can this host strip TCP options?  Adds and removes a dummy rule. */
static bool ipt_usable(char *why, size_t size)
{
	char out[512];
	int ret = ipt_rule(true, 9, false, out, sizeof(out));

	if (ret) {
		snprintf(why, size, "%s",
			 ret == 127 ? "no iptables command" :
			 "iptables cannot add a TCPOPTSTRIP rule");
		return false;
	}
	ipt_rule(false, 9, false, out, sizeof(out));
	return true;
}

static void strip_add(int port, bool synack)
{
	char out[512];

	dirty->ipt_synack = synack;
	dirty->ipt_port = port;
	if (ipt_rule(true, port, synack, out, sizeof(out))) {
		dirty->ipt_port = 0;
		vt_fail("iptables: adding the TCPOPTSTRIP rule: %s",
			first_line(out));
	}
	vt_diag("stripping option 253 from incoming %s of port %d",
		synack ? "SYN-ACKs" : "SYNs", port);
}

static void strip_del(void)
{
	char out[512];
	int port = dirty->ipt_port;

	if (!port)
		return;
	if (ipt_rule(false, port, dirty->ipt_synack, out, sizeof(out)))
		vt_fail("iptables: removing the TCPOPTSTRIP rule: %s",
			first_line(out));
	dirty->ipt_port = 0;
}

/*
 * Drop (or stop dropping) the RoCE v2 packets (UDP port 4791) this host
 * receives: the peer's RDMA requests, responses and acknowledgements are
 * lost on the way in, as on a broken path, while TCP still goes through.
 * Both QPs' requests then go unacknowledged until their retries run out
 * (rdma_ack_timeout, VISOCK_QP_RETRY).  Only Soft-RoCE packets pass
 * through netfilter; a NIC's do not.
 */
static int roce_drop_rule(bool add, char *out, size_t size)
{
	return run_cmd(out, size, "iptables", "-w", "5", add ? "-A" : "-D",
		       "INPUT", "-p", "udp", "--dport", "4791", "-m",
		       "comment", "--comment", IPT_TAG, "-j", "DROP", NULL);
}

/* Can this host drop packets?  Adds and removes a dummy rule. */
static bool drop_usable(char *why, size_t size)
{
	char out[512];
	int ret = run_cmd(out, sizeof(out), "iptables", "-w", "5", "-A",
			  "OUTPUT", "-p", "udp", "--dport", "9", "-m",
			  "comment", "--comment", IPT_TAG, "-j", "DROP", NULL);

	if (ret) {
		snprintf(why, size, "%s",
			 ret == 127 ? "no iptables command" :
			 "iptables cannot add a DROP rule");
		return false;
	}
	run_cmd(out, sizeof(out), "iptables", "-w", "5", "-D", "OUTPUT", "-p",
		"udp", "--dport", "9", "-m", "comment", "--comment", IPT_TAG,
		"-j", "DROP", NULL);
	return true;
}

static void roce_drop(bool on)
{
	char out[512];

	if (!on && !dirty->ipt_roce)
		return;
	if (roce_drop_rule(on, out, sizeof(out)))
		vt_fail("iptables: %s the RoCE drop rule: %s",
			on ? "adding" : "removing", first_line(out));
	dirty->ipt_roce = on;
	vt_diag("%s incoming RoCE v2 packets",
		on ? "dropping" : "no longer dropping");
}

/* ---- RDMA devices ---- */

/* Number of ACTIVE RDMA ports; a description of all in @desc. */
static int active_ports(char *desc, size_t size)
{
	struct dirent *dev, *port;
	char path[600], state[64];
	size_t off = 0;
	DIR *dd, *pd;
	int active = 0;

	if (size)
		desc[0] = '\0';
	dd = opendir(IB_CLASS);
	if (!dd)
		return 0;
	while ((dev = readdir(dd))) {
		if (dev->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), IB_CLASS "/%s/ports", dev->d_name);
		pd = opendir(path);
		if (!pd)
			continue;
		while ((port = readdir(pd))) {
			if (port->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), IB_CLASS "/%s/ports/%s/state",
				 dev->d_name, port->d_name);
			if (hu_read_text(path, state, sizeof(state)))
				continue;
			if (strstr(state, "ACTIVE"))
				active++;
			if (off < size)
				off += snprintf(desc + off, size - off,
						"%s%s/%s=%s", off ? " " : "",
						dev->d_name, port->d_name,
						state);
		}
		closedir(pd);
	}
	closedir(dd);
	return active;
}

/*
 * The Soft-RoCE device on @netdev (its "parent"), and the number of
 * other RDMA devices (which would keep the host RDMA capable).
 */
static int soft_dev(const char *netdev, char *name, size_t size, int *others)
{
	char path[600], parent[64];
	struct dirent *d;
	int found = 0;
	DIR *dd;

	*others = 0;
	name[0] = '\0';
	dd = opendir(IB_CLASS);
	if (!dd)
		return 0;
	while ((d = readdir(dd))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), IB_CLASS "/%s/parent", d->d_name);
		if (!hu_read_text(path, parent, sizeof(parent)) &&
		    !strcmp(parent, netdev) && !found) {
			snprintf(name, size, "%.*s", (int)size - 1,
				 d->d_name);
			found = 1;
		} else {
			(*others)++;
		}
	}
	closedir(dd);
	return found;
}

/* Port 1 of @dev is ACTIVE and has an IPv4-mapped (RoCE v2) GID. */
static bool dev_ready(const char *dev)
{
	char path[600], buf[128];
	int i;

	snprintf(path, sizeof(path), IB_CLASS "/%s/ports/1/state", dev);
	if (hu_read_text(path, buf, sizeof(buf)) || !strstr(buf, "ACTIVE"))
		return false;
	for (i = 0; i < 32; i++) {
		snprintf(path, sizeof(path), IB_CLASS "/%s/ports/1/gids/%d",
			 dev, i);
		if (!hu_read_text(path, buf, sizeof(buf)) &&
		    !strncmp(buf, "0000:0000:0000:0000:0000:ffff:", 30))
			return true;
	}
	return false;
}

/* Add the Soft-RoCE device back and wait until it is usable. */
static int rxe_add(const char *dev, const char *netdev, char *out,
		   size_t size)
{
	long long deadline;
	int ret;

	ret = run_cmd(out, size, "rdma", "link", "add", dev, "type", "rxe",
		      "netdev", netdev, NULL);
	if (ret)
		return ret;
	deadline = ctl_now_ms() + 30000;
	while (!dev_ready(dev)) {
		if (ctl_now_ms() > deadline) {
			snprintf(out, size, "%s not ACTIVE with a GID after 30 s",
				 dev);
			return -1;
		}
		usleep(100000);
	}
	return 0;
}

static void rxe_delete(const char *dev, const char *netdev)
{
	char out[512], path[600];
	long long deadline;

	snprintf(dirty->rxe_dev, sizeof(dirty->rxe_dev), "%s", dev);
	snprintf(dirty->rxe_netdev, sizeof(dirty->rxe_netdev), "%s", netdev);
	dirty->rxe_gone = 1;
	if (run_cmd(out, sizeof(out), "rdma", "link", "delete", dev, NULL))
		vt_fail("rdma link delete %s: %s", dev, first_line(out));
	snprintf(path, sizeof(path), IB_CLASS "/%s", dev);
	deadline = ctl_now_ms() + 10000;
	while (access(path, F_OK) == 0) {
		if (ctl_now_ms() > deadline)
			vt_fail("%s still exists 10 s after rdma link delete",
				path);
		usleep(50000);
	}
	vt_diag("deleted RDMA device %s (Soft-RoCE on %s)", dev, netdev);
}

static void rxe_restore(void)
{
	char out[512];

	if (!dirty->rxe_gone)
		return;
	if (rxe_add(dirty->rxe_dev, dirty->rxe_netdev, out, sizeof(out)))
		vt_fail("rdma link add %s type rxe netdev %s: %s",
			dirty->rxe_dev, dirty->rxe_netdev, first_line(out));
	dirty->rxe_gone = 0;
}

/*
 * State of queue pair @qpn in "rdma resource show qp" (e.g. "RTS") in
 * @state.  Return: 1 listed, 0 not listed, -1 the tool failed (@state
 * then says why).
 */
static int qp_state(uint32_t qpn, char *state, size_t size)
{
	static char out[65536];
	char key[32], *line, *save = NULL, *s;
	int ret;

	ret = run_cmd(out, sizeof(out), "rdma", "resource", "show", "qp",
		      NULL);
	if (ret) {
		snprintf(state, size, "%s", ret == 127 ?
			 "no rdma command (iproute2)" :
			 "rdma resource show qp failed");
		return -1;
	}
	snprintf(key, sizeof(key), " lqpn %u ", qpn);
	for (line = strtok_r(out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!strstr(line, key))
			continue;
		s = strstr(line, " state ");
		if (!s) {
			snprintf(state, size, "?");
			return 1;
		}
		s += 7;
		snprintf(state, size, "%.*s", (int)strcspn(s, " "), s);
		return 1;
	}
	return 0;
}

/* ---- cleanup, in the runner after every half ---- */

static void hs_cleanup(const struct vt_ctx *c)
{
	char out[512];
	int i;

	(void)c;
	if (dirty->knobs) {
		if (base.enable >= 0)
			hu_write_ll(ENABLE_PATH, base.enable);
		if (base.timeout >= 0)
			hu_write_ll(TIMEOUT_PATH, base.timeout);
		if (base.raw >= 0)
			hu_write_ll(RAW_PATH, base.raw);
		if (base.delay >= 0)
			hu_write_ll(DELAY_PATH, base.delay);
		dirty->knobs = 0;
	}
	for (i = 0; dirty->ipt_port && i < 4; i++)
		if (ipt_rule(false, dirty->ipt_port, dirty->ipt_synack, out,
			     sizeof(out)))
			break;
	dirty->ipt_port = 0;
	if (dirty->ipt_roce && !roce_drop_rule(false, out, sizeof(out)))
		dirty->ipt_roce = 0;
	if (dirty->rxe_gone) {
		ktap_diag("cleanup: adding RDMA device %s on %s back",
			  dirty->rxe_dev, dirty->rxe_netdev);
		if (rxe_add(dirty->rxe_dev, dirty->rxe_netdev, out,
			    sizeof(out)))
			ktap_diag("cleanup: rdma link add %s: %s",
				  dirty->rxe_dev, first_line(out));
		dirty->rxe_gone = 0;
	}
}

/* ---- sockets ---- */

static const char *const fb_names[] = {
	"NONE", "DISABLED", "PEER_NO_VISOCK", "NO_DEVICE", "PEER_NO_DEVICE",
	"VERSION", "BAD_MSG", "TIMEOUT", "NOMEM", "PEER_DECLINE", "QP_SETUP",
	"BUF_EXHAUSTED", "DEVICE_GONE", "SYNCOOKIE", "IO",
};

static const char *fb_name(uint32_t r)
{
	static char buf[16];

	if (r < ARRAY_SIZE(fb_names))
		return fb_names[r];
	snprintf(buf, sizeof(buf), "%u", r);
	return buf;
}

static const char *mode_name(uint32_t m)
{
	static const char *const names[] = { "INIT", "HANDSHAKE", "RDMA",
					     "TCP" };

	return m < ARRAY_SIZE(names) ? names[m] : "?";
}

static uint32_t visock_u32(int fd, int name, const char *what)
{
	socklen_t len = sizeof(uint32_t);
	uint32_t val = 0;

	if (getsockopt(fd, SOL_VISOCK, name, &val, &len))
		vt_fail("getsockopt(SOL_VISOCK, %s): %s (%s)", what,
			vt_errname(errno), strerror(errno));
	vt_assert(len == sizeof(uint32_t), "%s: optlen %u", what, len);
	return val;
}

static void get_info(int fd, struct visock_info *vi)
{
	socklen_t len = sizeof(*vi);

	memset(vi, 0, sizeof(*vi));
	if (getsockopt(fd, SOL_VISOCK, VISOCK_INFO, vi, &len))
		vt_fail("getsockopt(SOL_VISOCK, VISOCK_INFO): %s (%s)",
			vt_errname(errno), strerror(errno));
	vt_assert(len >= offsetof(struct visock_info, vi_flags) +
		  sizeof(vi->vi_flags), "VISOCK_INFO: optlen %u", len);
}

static const char *info_str(const struct visock_info *vi)
{
	static const char *const rdma_states[] = { "live", "failed",
						   "stopped", "failing-over",
						   "failed-over" };
	static char buf[320];
	int n;

	n = snprintf(buf, sizeof(buf),
		     "mode %s reason %s version %u qpn %u peer_qpn %u token %#x peer_token %#x rbuf %u peer_rbuf %u flags%s%s%s%s",
		     mode_name(vi->vi_mode), fb_name(vi->vi_fallback_reason),
		     vi->vi_version, vi->vi_local_qpn, vi->vi_peer_qpn,
		     vi->vi_local_token, vi->vi_peer_token, vi->vi_rbuf_size,
		     vi->vi_peer_rbuf_size,
		     vi->vi_flags & VISOCK_INFO_F_SYN_OPT ? " SYN_OPT" : "",
		     vi->vi_flags & VISOCK_INFO_F_PEER_OPT ? " PEER_OPT" : "",
		     vi->vi_flags & VISOCK_INFO_F_LINK_UP ? " LINK_UP" : "",
		     vi->vi_flags & VISOCK_INFO_F_FAILOVER ? " FAILOVER" : "");
	if (vi->vi_mode == VISOCK_MODE_RDMA && n > 0 && n < (int)sizeof(buf))
		snprintf(buf + n, sizeof(buf) - n, " rdma_state %s",
			 vi->vi_rdma_state < ARRAY_SIZE(rdma_states) ?
			 rdma_states[vi->vi_rdma_state] : "?");
	return buf;
}

/* The connection fell back to TCP with @reason; flags as expected. */
static void expect_fallback(int fd, uint32_t reason, uint32_t flags)
{
	uint32_t mode = visock_u32(fd, VISOCK_MODE, "VISOCK_MODE");
	uint32_t fb = visock_u32(fd, VISOCK_FALLBACK_REASON,
				 "VISOCK_FALLBACK_REASON");
	struct visock_info vi;

	get_info(fd, &vi);
	vt_diag("VISOCK_INFO: %s", info_str(&vi));
	vt_assert(fb == reason,
		  "VISOCK_FALLBACK_REASON %s (%u), expected %s (%u)",
		  fb_name(fb), fb, fb_name(reason), reason);
	vt_assert(mode == VISOCK_MODE_TCP, "VISOCK_MODE %s, expected TCP",
		  mode_name(mode));
	vt_assert(vi.vi_mode == mode && vi.vi_fallback_reason == fb,
		  "VISOCK_INFO (mode %u reason %u) disagrees with VISOCK_MODE %u / VISOCK_FALLBACK_REASON %u",
		  vi.vi_mode, vi.vi_fallback_reason, mode, fb);
	vt_assert(!(vi.vi_flags & VISOCK_INFO_F_LINK_UP),
		  "VISOCK_INFO_F_LINK_UP set on a connection that fell back");
	vt_assert((vi.vi_flags & (VISOCK_INFO_F_SYN_OPT |
				  VISOCK_INFO_F_PEER_OPT)) == flags,
		  "VISOCK_INFO flags %#x, expected SYN_OPT/PEER_OPT bits %#x",
		  vi.vi_flags, flags);
}

/* A visock socket that fails the half instead of hanging in connect(). */
static int settle_guarded_socket(enum vt_family fam, bool v6)
{
	struct timeval tv = { .tv_sec = SETTLE_GUARD_S };
	int fd = su_socket(fam, v6, SOCK_CLOEXEC);

	vt_try(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)),
	       "setsockopt(SO_SNDTIMEO)");
	return fd;
}

/*
 * Address of the peer at @port: the server host's (--peer) for the
 * client half; for the server half, the client host's address as seen
 * on the control connection.
 */
static socklen_t peer_addr(struct vt_ctx *c, bool v6, int port,
			   struct sockaddr_storage *ss)
{
	socklen_t len = sizeof(*ss);

	if (vt_is_client(c))
		return su_peer_addr(c, v6, port, ss);
	vt_assert(!v6, "reverse connections are IPv4 only");
	vt_try(getpeername(c->ctl, (struct sockaddr *)ss, &len),
	       "getpeername(control connection)");
	if (ss->ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		struct sockaddr_in sin = { .sin_family = AF_INET };

		vt_assert(IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr),
			  "the control connection is not IPv4");
		memcpy(&sin.sin_addr, &s6->sin6_addr.s6_addr[12], 4);
		memset(ss, 0, sizeof(*ss));
		memcpy(ss, &sin, sizeof(sin));
	}
	vt_assert(ss->ss_family == AF_INET, "control connection family %d",
		  ss->ss_family);
	((struct sockaddr_in *)ss)->sin_port = htons(port);
	return sizeof(struct sockaddr_in);
}

/* connect() to the peer; -1 with errno on failure. */
static int connect_peer(struct vt_ctx *c, int fd, bool v6, int port)
{
	struct sockaddr_storage ss;
	socklen_t len = peer_addr(c, v6, port, &ss);
	int ret;

	do {
		ret = connect(fd, (struct sockaddr *)&ss, len);
	} while (ret && errno == EINTR);
	return ret;
}

static int connect_or_fail(struct vt_ctx *c, int fd, bool v6, int port)
{
	if (connect_peer(c, fd, v6, port))
		vt_fail("connect to port %d: %s (%s)", port, vt_errname(errno),
			strerror(errno));
	return fd;
}

/*
 * Wait up to @timeout_ms for the connection to end (EOF or an error),
 * discarding data.  Return: 0 and how it ended in @how, -1 on timeout.
 */
static int wait_end(int fd, int timeout_ms, char *how, size_t size,
		    size_t *discarded)
{
	long long deadline = ctl_now_ms() + timeout_ms;
	char buf[4096];

	*discarded = 0;
	for (;;) {
		long long left = deadline - ctl_now_ms();
		ssize_t n;

		if (left <= 0)
			return -1;
		if (su_poll(fd, POLLIN, (int)left) == 0)
			continue;
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n > 0) {
			*discarded += (size_t)n;
			continue;
		}
		snprintf(how, size, "%s", n == 0 ? "EOF" : vt_errname(errno));
		return 0;
	}
}

static void hex_encode(const uint8_t *b, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < len; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * len] = '\0';
}

static size_t hex_decode(const char *s, uint8_t *out, size_t size)
{
	size_t n = 0;
	unsigned int v;

	while (s[0] && s[1] && n < size && sscanf(s, "%2x", &v) == 1) {
		out[n++] = (uint8_t)v;
		s += 2;
	}
	return n;
}

/* ---- handshake messages: encoder (hsmsg.c) ---- */

/* How a hostile message differs from a valid one. */
enum mut {
	M_NONE,
	M_BAD_MAGIC,
	M_SHORT_EOF,
	M_EOF,
	M_LEN_BIG,
	M_LEN_SMALL,
	M_VERSION0,
	M_TYPE_UNKNOWN,
	M_WRONG_TYPE,
	M_MISSING_TLV,
	M_DUP_TLV,
	M_TLV_OVERRUN,
	M_TLV_TRAILING,
	M_TLV_LEN,
	M_QPN0,
	M_QPN_BIG,
	M_PSN_BIG,
	M_MTU0,
	M_MTU6,
	M_RBUF_NPOT,
	M_RBUF_BIG,
	M_RBUF_SMALL,
	M_TOKEN0,
	M_CRITICAL_TLV,
	M_DECLINE_NO_DEVICE,
	M_DECLINE_VERSION,
	M_DECLINE_BAD_REASON,
	M_DECLINE_NO_REASON,
	M_GARBAGE,
	M_SILENCE,
	M_UNREACHABLE_GID,
	M_CONFIRM_BAD_TOKEN,
	M_FUTURE_REQ_OK,
	M_FAKE_QP,
	M_DEVICE_GONE,
	M_REPLAY_REQ,
	M_REPLAY_CONFIRM,
	M_CONFIRM_TWICE,
};

/* A REQ / REP with every required TLV, changed by @mut. */
static void hm_setup(struct hmsg *m, uint8_t type, const struct hparams *hp,
		     enum mut mut)
{
	struct hparams p = *hp;
	uint8_t v[16];

	switch (mut) {
	case M_QPN0:
		p.qpn = 0;
		break;
	case M_QPN_BIG:
		p.qpn = 1u << 24;
		break;
	case M_PSN_BIG:
		p.psn = 1u << 24;
		break;
	case M_MTU0:
		p.mtu = 0;
		break;
	case M_MTU6:
		p.mtu = 6;
		break;
	case M_RBUF_NPOT:
		p.rbuf_size = 48 * 1024;
		break;
	case M_RBUF_BIG:
		p.rbuf_size = 16 * 1024 * 1024;
		break;
	case M_RBUF_SMALL:
		p.rbuf_size = 8 * 1024;
		break;
	case M_TOKEN0:
		p.token = 0;
		break;
	case M_UNREACHABLE_GID:
		/* ::ffff:192.0.2.1, TEST-NET-1: no host answers there */
		memset(p.gid, 0, sizeof(p.gid));
		p.gid[10] = 0xff;
		p.gid[11] = 0xff;
		p.gid[12] = 192;
		p.gid[13] = 0;
		p.gid[14] = 2;
		p.gid[15] = 1;
		break;
	default:
		break;
	}
	if (mut == M_TYPE_UNKNOWN)
		type = 9;
	hm_start(m, type, mut == M_VERSION0 ? 0 :
			  mut == M_FUTURE_REQ_OK ? 2 : HS_VERSION);

	put64(v, p.features);
	hm_tlv(m, TLV_FEATURES, v, 8);
	if (mut != M_MISSING_TLV)
		hm_tlv(m, TLV_GID, p.gid, 16);
	if (mut == M_TLV_LEN) {
		put16(v, p.qpn & 0xffff);
		hm_tlv(m, TLV_QPN, v, 2);
	} else {
		hm_tlv32(m, TLV_QPN, p.qpn);
	}
	hm_tlv32(m, TLV_PSN, p.psn);
	v[0] = p.mtu;
	hm_tlv(m, TLV_MTU, v, 1);
	put64(v, p.rbuf_addr);
	put32(v + 8, p.rbuf_rkey);
	put32(v + 12, p.rbuf_size);
	hm_tlv(m, TLV_RBUF, v, 16);
	hm_tlv32(m, TLV_TOKEN, p.token);
	if (mut == M_DUP_TLV)
		hm_tlv32(m, TLV_QPN, p.qpn);
	if (mut == M_CRITICAL_TLV)
		hm_tlv32(m, TLV_CRITICAL | TLV_UNKNOWN, 0);
	if (mut == M_FUTURE_REQ_OK)
		hm_tlv32(m, TLV_UNKNOWN, 0xfeedbeef);
	put32(v, p.lgr_id);
	put32(v + 4, p.link_id);
	if (mut == M_TLV_OVERRUN)
		/* says 8 value bytes; the message ends after 4 */
		hm_tlv_raw(m, TLV_LINK, 8, v, 4);
	else
		hm_tlv(m, TLV_LINK, v, 8);
	if (mut == M_TLV_TRAILING) {
		/* two bytes: too short for a TLV header */
		m->b[m->len++] = 0;
		m->b[m->len++] = 1;
	}
	hm_end(m);
	if (mut == M_LEN_BIG)
		put16(m->b + 6, HS_MAX_LEN + 1);
	if (mut == M_LEN_SMALL)
		put16(m->b + 6, HS_HDR_LEN - 1);
	if (mut == M_BAD_MAGIC)
		m->b[3] = 'X';		/* "VSKX" */
}

static void hm_decline(struct hmsg *m, uint32_t reason, bool with_reason)
{
	hm_start(m, HS_DECLINE, HS_VERSION);
	if (with_reason)
		hm_tlv32(m, TLV_REASON, reason);
	hm_end(m);
}

/*
 * Random bytes behind a valid header start (magic, version 1, @type) and
 * a length field in 8..@total: the message the peer reads is garbage of
 * that length, the rest of the @total bytes is stream data after it.
 */
static uint16_t hm_garbage(struct hmsg *m, uint8_t type, size_t total)
{
	uint16_t len;

	memset(m, 0, sizeof(*m));
	if (getrandom(m->b, total, 0) != (ssize_t)total)
		vt_fail("getrandom: %s", strerror(errno));
	put32(m->b, HS_MAGIC);
	m->b[4] = type;
	m->b[5] = HS_VERSION;
	len = (uint16_t)(HS_HDR_LEN + get16(m->b + 6) %
			 (total - HS_HDR_LEN + 1));
	put16(m->b + 6, len);
	m->len = total;
	return len;
}

/* ---- handshake messages: decoder ---- */

struct hdec {
	uint8_t type;
	uint8_t version;
	uint32_t present;
	uint32_t qpn, psn, token, reason, rbuf_size;
	uint32_t lgr_id;	/* LINK: the QP the sender joins, 0: new */
	uint64_t rbuf_addr;
	uint8_t mtu;
};

static const uint8_t tlv_size[] = {
	[TLV_FEATURES] = 8, [TLV_GID] = 16, [TLV_QPN] = 4, [TLV_PSN] = 4,
	[TLV_MTU] = 1, [TLV_RBUF] = 16, [TLV_TOKEN] = 4, [TLV_LINK] = 8,
	[TLV_REASON] = 4,
};

/* Full validation of a message the kernel sent: 0, or -1 with @err. */
static int hm_decode(const uint8_t *b, size_t len, struct hdec *d,
		     char *err, size_t size)
{
	static const uint32_t required[] = {
		[HS_REQ] = SETUP_TLVS, [HS_REP] = SETUP_TLVS,
		[HS_CONFIRM] = BIT_T(TLV_TOKEN),
		[HS_DECLINE] = BIT_T(TLV_REASON),
	};
	size_t off = HS_HDR_LEN;

	memset(d, 0, sizeof(*d));
	if (len < HS_HDR_LEN || get32(b) != HS_MAGIC ||
	    get16(b + 6) != len) {
		snprintf(err, size, "bad header");
		return -1;
	}
	d->type = b[4];
	d->version = b[5];
	if (d->type < HS_REQ || d->type > HS_DECLINE || d->version != 1) {
		snprintf(err, size, "type %u version %u", d->type, d->version);
		return -1;
	}
	while (off < len) {
		uint16_t t, l;
		const uint8_t *v;

		if (len - off < 4) {
			snprintf(err, size, "truncated TLV header at %zu", off);
			return -1;
		}
		t = get16(b + off);
		l = get16(b + off + 2);
		v = b + off + 4;
		if (l > len - off - 4) {
			snprintf(err, size, "TLV %u runs past the end", t);
			return -1;
		}
		if (t < 1 || t > TLV_REASON || l != tlv_size[t] ||
		    (d->present & BIT_T(t))) {
			snprintf(err, size, "TLV %u length %u unexpected", t, l);
			return -1;
		}
		d->present |= BIT_T(t);
		switch (t) {
		case TLV_QPN:
			d->qpn = get32(v);
			break;
		case TLV_PSN:
			d->psn = get32(v);
			break;
		case TLV_MTU:
			d->mtu = v[0];
			break;
		case TLV_RBUF:
			d->rbuf_addr = get64(v);
			d->rbuf_size = get32(v + 12);
			break;
		case TLV_TOKEN:
			d->token = get32(v);
			break;
		case TLV_REASON:
			d->reason = get32(v);
			break;
		case TLV_LINK:
			d->lgr_id = get32(v);
			break;
		}
		off += 4 + l;
	}
	if ((d->present & required[d->type]) != required[d->type]) {
		snprintf(err, size, "TLVs %#x, %#x required", d->present,
			 required[d->type]);
		return -1;
	}
	if (((d->present & BIT_T(TLV_QPN)) &&
	     (!d->qpn || d->qpn >= 1u << 24)) ||
	    ((d->present & BIT_T(TLV_PSN)) && d->psn >= 1u << 24) ||
	    ((d->present & BIT_T(TLV_MTU)) && (d->mtu < 1 || d->mtu > 5)) ||
	    ((d->present & BIT_T(TLV_RBUF)) &&
	     ((d->rbuf_size & (d->rbuf_size - 1)) ||
	      d->rbuf_size < 16384 || d->rbuf_size > 8u << 20)) ||
	    ((d->present & BIT_T(TLV_TOKEN)) && !d->token) ||
	    ((d->present & BIT_T(TLV_REASON)) && d->reason > VISOCK_FB_MAX)) {
		snprintf(err, size, "value out of range");
		return -1;
	}
	/* Rings are zero-based: no kernel or DMA address on the wire. */
	if ((d->present & BIT_T(TLV_RBUF)) && d->rbuf_addr) {
		snprintf(err, size, "RBUF address %#llx is not 0",
			 (unsigned long long)d->rbuf_addr);
		return -1;
	}
	return 0;
}

static const char *type_name(uint8_t t)
{
	static const char *const n[] = { "?", "REQ", "REP", "CONFIRM",
					 "DECLINE" };

	return t < ARRAY_SIZE(n) ? n[t] : "?";
}

/*
 * Read the next message the normal side sent, check that it is valid
 * and of type @want.  Fails the test otherwise.
 */
static void read_msg(int fd, uint8_t want, struct hdec *d)
{
	uint8_t b[HS_MAX_LEN];
	char err[128], hex[2 * HS_HDR_LEN + 1];
	ssize_t n;
	size_t len;

	n = su_read_within(fd, b, HS_HDR_LEN, MSG_WAIT_MS);
	if (n < 0)
		vt_fail("waiting for %s: %s", type_name(want),
			vt_errname(errno));
	if (n < HS_HDR_LEN)
		vt_fail("waiting for %s: connection closed after %zd bytes",
			type_name(want), n);
	hex_encode(b, HS_HDR_LEN, hex);
	len = get16(b + 6);
	vt_assert(get32(b) == HS_MAGIC && len >= HS_HDR_LEN &&
		  len <= HS_MAX_LEN, "waiting for %s: got header %s",
		  type_name(want), hex);
	n = su_read_within(fd, b + HS_HDR_LEN, len - HS_HDR_LEN, MSG_WAIT_MS);
	vt_assert(n == (ssize_t)(len - HS_HDR_LEN),
		  "%s: only %zd of %zu bytes", type_name(want),
		  n + HS_HDR_LEN, len);
	if (hm_decode(b, len, d, err, sizeof(err)))
		vt_fail("invalid %s from visock: %s", type_name(b[4]), err);
	vt_assert(d->type == want, "got %s, expected %s", type_name(d->type),
		  type_name(want));
}

/* ---- requirements ---- */

static bool visock_loaded(void)
{
	int v;

	return hu_read_int(ENABLE_PATH, &v) == 0;
}

enum need {
	NEED_RDMA = 1,		/* an ACTIVE RDMA port here */
	NEED_RAW = 2,		/* the debugfs raw_handshake hook here */
	NEED_RXE = 4,		/* a Soft-RoCE device that may be deleted */
	NEED_IPT = 8,		/* iptables with TCPOPTSTRIP */
	NEED_NO_TESTNET = 16,	/* no route to 192.0.2.1 */
	NEED_V6 = 32,		/* IPv6 addresses of both hosts */
	NEED_IPT_DROP = 64,	/* iptables with DROP and the comment match */
	NEED_DELAY = 128,	/* the debugfs hs_delay_ms hook here */
};

static bool routable(const char *ip)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(9) };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool ok;

	if (fd < 0)
		return false;
	inet_pton(AF_INET, ip, &sin.sin_addr);
	ok = !connect(fd, (struct sockaddr *)&sin, sizeof(sin));
	close(fd);
	return ok;
}

/*
 * Both halves check what they need (@mine) and agree; skip otherwise.
 * The visock module is always needed.  @rxe gets the device to delete.
 */
/*
 * Shared QPs of earlier tests go once idle (run_tests.sh sets
 * net.visock.lgr_idle_ms=0 for this pass): wait for them, so that every
 * test starts without a QP to join - the fake peers expect the REQ of a
 * new QP.  Quietly gives up after 15 s; the test then shows what is left.
 */
static void wait_no_qps(void)
{
	char line[256], key[64];
	long long v, left = 15000;
	FILE *f;

	for (; left > 0; left -= 50) {
		v = 0;
		f = fopen("/proc/net/visock", "re");
		if (!f)
			return;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "%63s %lld", key, &v) == 2 &&
			    !strcmp(key, "qps"))
				break;
		fclose(f);
		if (!v)
			return;
		usleep(50 * 1000);
	}
}

static void need(struct vt_ctx *c, unsigned int mine, char *rxe, size_t size)
{
	char why[640] = "", desc[512];
	const char *netdev;
	int others, fd;

	if (c->family == VT_FAMILY_VISOCK && visock_loaded() &&
	    (mine & NEED_RDMA))
		wait_no_qps();
	if (c->family != VT_FAMILY_VISOCK) {
		snprintf(why, sizeof(why), "family inet: needs AF_VISOCK");
	} else if (!visock_loaded()) {
		snprintf(why, sizeof(why), "visock is not loaded (no %s)",
			 ENABLE_PATH);
	} else if ((mine & NEED_RDMA) && !active_ports(desc, sizeof(desc))) {
		snprintf(why, sizeof(why), "no ACTIVE RDMA port (%s)",
			 *desc ? desc : "no RDMA device");
	} else if ((mine & NEED_RAW) && !have_hook(RAW_PATH)) {
		snprintf(why, sizeof(why), "no %s (debugfs hook)", RAW_PATH);
	} else if ((mine & NEED_DELAY) && !have_hook(DELAY_PATH)) {
		snprintf(why, sizeof(why), "no %s (debugfs hook)", DELAY_PATH);
	} else if (mine & NEED_RXE) {
		netdev = getenv(RXE_ENV);
		if (!netdev || !*netdev)
			snprintf(why, sizeof(why),
				 "%s does not name a Soft-RoCE net device",
				 RXE_ENV);
		else if (!soft_dev(netdev, rxe, size, &others))
			snprintf(why, sizeof(why),
				 "no Soft-RoCE device on %s=%s", RXE_ENV,
				 netdev);
		else if (others)
			snprintf(why, sizeof(why),
				 "%d RDMA devices besides %s", others, rxe);
	}
	if (!*why && (mine & NEED_IPT))
		ipt_usable(why, sizeof(why));
	if (!*why && (mine & NEED_IPT_DROP))
		drop_usable(why, sizeof(why));
	if (!*why && (mine & NEED_NO_TESTNET) && routable("192.0.2.1"))
		snprintf(why, sizeof(why),
			 "192.0.2.1 is routable here: cannot fake an unreachable GID");
	if (!*why && (mine & NEED_V6)) {
		fd = socket(AF_INET6, SOCK_STREAM, 0);
		if (fd < 0)
			snprintf(why, sizeof(why), "IPv6 is disabled here");
		else
			close(fd);
		if (fd >= 0 && vt_is_client(c) && !c->peer6[0])
			snprintf(why, sizeof(why),
				 "no IPv6 address of the peer (--peer6)");
	}
	vt_agree(c, !*why, why);
}

/* ---- rdma_ready ---- */

static void rdma_ready(struct vt_ctx *c)
{
	char desc[512];

	active_ports(desc, sizeof(desc));
	vt_diag("RDMA ports: %s", *desc ? desc : "none");
	need(c, NEED_RDMA, NULL, 0);
}

/* ---- success ---- */

static bool success_info(const struct visock_info *vi)
{
	return vi->vi_fallback_reason == VISOCK_FB_NONE &&
	       (vi->vi_mode == VISOCK_MODE_RDMA ||
		(vi->vi_mode == VISOCK_MODE_TCP &&
		 (vi->vi_flags & VISOCK_INFO_F_LINK_UP)));
}

/* What a host owes within 20 s on the bed, longer on slower kernels. */
static long long hs_wait_ms(void)
{
	return 20000LL * vt_time_scale;
}

/*
 * Wait up to hs_wait_ms() until queue pair @qpn is gone from the rdma
 * tool.  QPs are shared and go when idle (run_tests.sh sets
 * lgr_idle_ms=0 for this pass): the client's at once, the server's on
 * the client's delete message or 2 s later.
 */
static void expect_qp_gone(uint32_t qpn)
{
	long long deadline = ctl_now_ms() + hs_wait_ms();
	char state[128];
	int ret;

	for (;;) {
		ret = qp_state(qpn, state, sizeof(state));
		if (ret <= 0)
			return;
		vt_assert(ctl_now_ms() < deadline,
			  "QP %u still listed (state %s) %lld ms after close",
			  qpn, state, hs_wait_ms());
		usleep(100000);
	}
}

static void success_common(struct vt_ctx *c, bool reverse, bool v6,
			   bool nonblock)
{
	bool connector = vt_is_client(c) != reverse;
	struct visock_info vi, after;
	unsigned int pqpn, ptoken, prbuf, pver;
	char line[CTL_LINE_MAX], state[128] = "", qp_skip[128] = "";
	int fd, lfd, port, ret;

	need(c, NEED_RDMA | (v6 ? NEED_V6 : 0), NULL, 0);
	set_knob(ENABLE_PATH, 1);
	vt_sync(c, "configured");

	if (connector) {
		port = su_recv_port(c);
		fd = settle_guarded_socket(VT_FAMILY_VISOCK, v6);
		if (nonblock) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };
			int err;
			socklen_t elen = sizeof(err);

			su_nonblock(fd, true);
			ret = connect_peer(c, fd, v6, port);
			vt_assert(ret == -1 && errno == EINPROGRESS,
				  "non-blocking connect: %s, expected EINPROGRESS",
				  ret ? vt_errname(errno) : "success");
			vt_try(poll(&p, 1, (int)hs_wait_ms()), "poll");
			vt_assert(p.revents & POLLOUT,
				  "no POLLOUT within %lld ms of connect (revents %#x)",
				  hs_wait_ms(), p.revents);
			vt_try(getsockopt(fd, SOL_SOCKET, SO_ERROR, &err,
					  &elen), "getsockopt(SO_ERROR)");
			vt_assert(!err, "SO_ERROR %s after connect",
				  vt_errname(err));
			vt_assert(visock_u32(fd, VISOCK_MODE, "VISOCK_MODE") !=
				  VISOCK_MODE_HANDSHAKE,
				  "POLLOUT while the handshake still runs");
			su_nonblock(fd, false);
		} else {
			connect_or_fail(c, fd, v6, port);
		}
	} else {
		lfd = su_listen(VT_FAMILY_VISOCK, v6, 16, SOCK_CLOEXEC);
		su_send_port(c, lfd);
		fd = su_accept(lfd, SOCK_CLOEXEC);
		close(lfd);
	}

	get_info(fd, &vi);
	vt_diag("%s: VISOCK_INFO: %s", connector ? "connect" : "accept",
		info_str(&vi));
	vt_send(c, "INFO %u %u %u %u", vi.vi_local_qpn, vi.vi_local_token,
		vi.vi_rbuf_size, vi.vi_version);
	vt_recv(c, line, sizeof(line));
	vt_assert(sscanf(line, "INFO %u %u %u %u", &pqpn, &ptoken, &prbuf,
			 &pver) == 4, "control channel: \"%s\"", line);

	vt_assert(success_info(&vi),
		  "handshake did not succeed: %s", info_str(&vi));
	vt_assert(visock_u32(fd, VISOCK_MODE, "VISOCK_MODE") == vi.vi_mode &&
		  visock_u32(fd, VISOCK_FALLBACK_REASON,
			     "VISOCK_FALLBACK_REASON") == VISOCK_FB_NONE,
		  "VISOCK_MODE / VISOCK_FALLBACK_REASON disagree with VISOCK_INFO");
	vt_assert((vi.vi_flags & (VISOCK_INFO_F_SYN_OPT |
				  VISOCK_INFO_F_PEER_OPT)) ==
		  (VISOCK_INFO_F_SYN_OPT | VISOCK_INFO_F_PEER_OPT),
		  "flags %#x: SYN_OPT and PEER_OPT expected", vi.vi_flags);
	vt_assert(vi.vi_version == 1 && pver == 1,
		  "negotiated version %u here, %u on the peer", vi.vi_version,
		  pver);
	vt_assert(vi.vi_local_qpn && vi.vi_local_qpn < 1u << 24,
		  "local QPN %u", vi.vi_local_qpn);
	vt_assert(vi.vi_peer_qpn == pqpn,
		  "peer QPN %u here, the peer's local QPN is %u",
		  vi.vi_peer_qpn, pqpn);
	vt_assert(vi.vi_local_token && vi.vi_peer_token == ptoken,
		  "token %#x, peer token %#x here, the peer's is %#x",
		  vi.vi_local_token, vi.vi_peer_token, ptoken);
	vt_assert(vi.vi_peer_rbuf_size == prbuf,
		  "peer ring %u bytes here, the peer's ring is %u",
		  vi.vi_peer_rbuf_size, prbuf);

	ret = qp_state(vi.vi_local_qpn, state, sizeof(state));
	if (ret < 0)
		snprintf(qp_skip, sizeof(qp_skip), "%s", state);
	else
		vt_assert(ret == 1 && !strcmp(state, "RTS"),
			  "rdma resource show qp: QP %u %s%s",
			  vi.vi_local_qpn, ret ? "in state " : "not listed",
			  ret ? state : "");

	su_xfer(&fd, 1, XFER_LEN_BIG, XFER_MS);
	get_info(fd, &after);
	vt_assert(success_info(&after) && after.vi_local_qpn == vi.vi_local_qpn,
		  "after the transfer: %s", info_str(&after));
	if (after.vi_mode == VISOCK_MODE_RDMA)
		vt_diag("RDMA mode: %llu bytes sent, %llu received by RDMA, %llu / %llu by TCP",
			(unsigned long long)after.vi_rdma_bytes_sent,
			(unsigned long long)after.vi_rdma_bytes_rcvd,
			(unsigned long long)after.vi_tcp_bytes_sent,
			(unsigned long long)after.vi_tcp_bytes_rcvd);
	vt_sync(c, "transferred");
	close(fd);
	vt_sync(c, "closed");
	if (!*qp_skip)
		expect_qp_gone(vi.vi_local_qpn);
	/* Neither half ends while the other still waits for its QP. */
	vt_sync(c, "qp gone");
	if (*qp_skip)
		vt_skip("VISOCK_INFO checks passed; QP state not checked: %s",
			qp_skip);
}

static void success(struct vt_ctx *c)
{
	success_common(c, false, false, false);
}

static void success_reverse(struct vt_ctx *c)
{
	success_common(c, true, false, false);
}

static void success_v6(struct vt_ctx *c)
{
	success_common(c, false, true, false);
}

static void success_nonblock(struct vt_ctx *c)
{
	success_common(c, false, false, true);
}

/* ---- fallback matrix ---- */

#define F_SO	VISOCK_INFO_F_SYN_OPT
#define F_PO	VISOCK_INFO_F_PEER_OPT
#define PLAIN	(-1)		/* that end is a plain AF_INET socket */

enum side { SIDE_NONE, SIDE_CLIENT, SIDE_SERVER };

struct fb_case {
	const char *name;
	int cen, sen;			/* enable; PLAIN: AF_INET socket */
	enum side nodev;		/* RDMA device deleted there */
	enum side strip;		/* SERVER: SYN, CLIENT: SYN-ACK */
	bool server_first;		/* the client sends nothing first */
	int creason, sreason;		/* expected; PLAIN: not visock */
	unsigned int cflags, sflags;
	const char *desc;
	bool slow_client;		/* its handshake starts too late */
};

static const struct fb_case fb_cases[] = {
	{ "fb_plain_server", 1, PLAIN, SIDE_NONE, SIDE_NONE, false,
	  VISOCK_FB_PEER_NO_VISOCK, PLAIN, F_SO, 0,
	  "AF_VISOCK client, plain TCP server", false },
	{ "fb_plain_client", PLAIN, 1, SIDE_NONE, SIDE_NONE, false,
	  PLAIN, VISOCK_FB_PEER_NO_VISOCK, 0, 0,
	  "plain TCP client, AF_VISOCK server", false },
	{ "fb_disabled_server", 1, 0, SIDE_NONE, SIDE_NONE, false,
	  VISOCK_FB_PEER_NO_VISOCK, VISOCK_FB_DISABLED, F_SO, 0,
	  "server with net.visock.enable=0", false },
	{ "fb_disabled_client", 0, 1, SIDE_NONE, SIDE_NONE, false,
	  VISOCK_FB_DISABLED, VISOCK_FB_PEER_NO_VISOCK, 0, 0,
	  "client with net.visock.enable=0", false },
	{ "fb_nodev_server", 1, 1, SIDE_SERVER, SIDE_NONE, false,
	  VISOCK_FB_PEER_NO_DEVICE, VISOCK_FB_NO_DEVICE, F_SO | F_PO,
	  F_SO | F_PO, "no RDMA device on the server", false },
	{ "fb_nodev_client", 1, 1, SIDE_CLIENT, SIDE_NONE, false,
	  VISOCK_FB_NO_DEVICE, VISOCK_FB_PEER_NO_DEVICE, F_SO | F_PO,
	  F_SO | F_PO, "no RDMA device on the client", false },
	{ "fb_strip_syn", 1, 1, SIDE_NONE, SIDE_SERVER, false,
	  VISOCK_FB_PEER_NO_VISOCK, VISOCK_FB_PEER_NO_VISOCK, F_SO, 0,
	  "a middlebox strips the option from the SYN", false },
	{ "fb_strip_echo", 1, 1, SIDE_NONE, SIDE_CLIENT, false,
	  VISOCK_FB_PEER_NO_VISOCK, VISOCK_FB_PEER_NO_VISOCK, F_SO,
	  F_SO | F_PO, "a middlebox strips the echo; the client writes first",
	  false },
	{ "fb_strip_echo_timeout", 1, 1, SIDE_NONE, SIDE_CLIENT, true,
	  VISOCK_FB_PEER_NO_VISOCK, VISOCK_FB_TIMEOUT, F_SO, F_SO | F_PO,
	  "a middlebox strips the echo; the server writes first", false },
	/*
	 * The client's handshake work first runs after the server's
	 * handshake timeout (hs_delay_ms): it must not send REQ then, which
	 * the server's application would read as stream bytes.
	 */
	{ "fb_slow_client", 1, 1, SIDE_NONE, SIDE_NONE, false,
	  VISOCK_FB_TIMEOUT, VISOCK_FB_TIMEOUT, F_SO | F_PO, F_SO | F_PO,
	  "the client is too late for the server's timeout; it writes first",
	  true },
	{ "fb_slow_client_server_first", 1, 1, SIDE_NONE, SIDE_NONE, true,
	  VISOCK_FB_TIMEOUT, VISOCK_FB_TIMEOUT, F_SO | F_PO, F_SO | F_PO,
	  "the client is too late for the server's timeout; the server writes first",
	  true },
};

static const struct fb_case *find_fb(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(fb_cases); i++)
		if (!strcmp(fb_cases[i].name, name))
			return &fb_cases[i];
	vt_fail("no fallback case %s", name);
}

static void fb_test(struct vt_ctx *c)
{
	const struct fb_case *fc = find_fb(c->test->name);
	bool client = vt_is_client(c);
	enum side me = client ? SIDE_CLIENT : SIDE_SERVER;
	int en = client ? fc->cen : fc->sen;
	int reason = client ? fc->creason : fc->sreason;
	unsigned int flags = client ? fc->cflags : fc->sflags;
	enum vt_family fam = en == PLAIN ? VT_FAMILY_INET : VT_FAMILY_VISOCK;
	unsigned int mine = 0;
	char rxe[64] = "", greet[6];
	long long t0;
	int fd, lfd, port;

	if (fc->nodev != SIDE_NONE || fc->strip != SIDE_NONE)
		mine |= NEED_RDMA;
	if (fc->nodev == me)
		mine |= NEED_RXE;
	if (fc->strip == me)
		mine |= NEED_IPT;
	if (fc->slow_client)
		mine |= NEED_RDMA | (client ? NEED_DELAY : 0);
	need(c, mine, rxe, sizeof(rxe));

	if (en != PLAIN)
		set_knob(ENABLE_PATH, en);
	if (fc->slow_client) {
		set_knob(TIMEOUT_PATH, SLOW_TIMEOUT_MS);
		if (client)
			set_knob(DELAY_PATH, SLOW_DELAY_MS);
	} else if (fc->server_first && !client) {
		set_knob(TIMEOUT_PATH, ECHO_TIMEOUT_MS);
	}
	if (fc->nodev == me)
		rxe_delete(rxe, getenv(RXE_ENV));
	vt_sync(c, "configured");

	if (client) {
		port = su_recv_port(c);
		if (fc->strip == SIDE_CLIENT)
			strip_add(port, true);
		fd = settle_guarded_socket(fam, false);
		connect_or_fail(c, fd, false, port);
	} else {
		lfd = su_listen(fam, false, 16, SOCK_CLOEXEC);
		if (fc->strip == SIDE_SERVER)
			strip_add(su_port(lfd), false);
		su_send_port(c, lfd);
		t0 = ctl_now_ms();
		fd = su_accept(lfd, SOCK_CLOEXEC);
		close(lfd);
		if (fc->server_first)
			vt_diag("accept() returned after %lld ms",
				ctl_now_ms() - t0);
	}
	if (reason != PLAIN)
		expect_fallback(fd, (uint32_t)reason, flags);

	if (fc->server_first) {
		/* The client waits for the server's first bytes. */
		if (client) {
			vt_assert(su_read_within(fd, greet, 6, (int)hs_wait_ms()) == 6 &&
				  !memcmp(greet, "hello\n", 6),
				  "the server's first bytes did not arrive");
		} else {
			su_write_all(fd, "hello\n", 6);
		}
	}
	su_xfer(&fd, 1, XFER_LEN, XFER_MS);
	vt_sync(c, "transferred");
	close(fd);

	strip_del();
	rxe_restore();
	vt_sync(c, "restored");
}

/* ---- hostile peer ---- */

/* O_SPECIAL: the normal side reports what it got (special_*()). */
enum outcome { O_NONE, O_FALLBACK, O_ABORT, O_SPECIAL };

struct expect {
	enum outcome kind;
	int reason;		/* fallback reason of the normal side */
	int decline;		/* reason of its DECLINE, -1: none sent */
	int err;		/* abort: errno of a normal client, 0: any */
	bool or_abort;		/* fallback expected, abort accepted */
};

#define FB(r, d)	{ O_FALLBACK, VISOCK_FB_##r, d, 0, false }
#define FB_DECL(r)	FB(r, VISOCK_FB_##r)
#define AB(e)		{ O_ABORT, 0, -1, e, false }
#define NONE		{ O_NONE, 0, -1, 0, false }
#define SPECIAL		{ O_SPECIAL, 0, -1, 0, false }

struct scenario {
	const char *name;
	enum mut mut;
	struct expect as_client;	/* hostile client, normal server */
	struct expect as_server;	/* hostile server, normal client */
	const char *desc;
};

/*
 * What visock_handshake.c makes of each message:
 *  - the server waiting for the first message falls back without a word
 *    when the bytes do not start with the magic (PEER_NO_VISOCK, the
 *    bytes stay for the application), on EOF (IO), or when nothing
 *    complete arrives in time (TIMEOUT);
 *  - magic with a length field outside 8..512 ends the connection
 *    (EPROTO); so do non-magic bytes, EOF or silence where a client waits
 *    for REP (EPROTO, ECONNRESET, ETIMEDOUT), and silence where a server
 *    waits for CONFIRM;
 *  - a complete message that is invalid, or of the wrong type, is
 *    answered with DECLINE(BAD_MSG) and both use TCP; one written in a
 *    version the receiver does not speak (header version 0, an unknown
 *    critical TLV) with DECLINE(VERSION); a server waiting for CONFIRM
 *    owes nothing and falls back without DECLINE;
 *  - a valid DECLINE maps to PEER_NO_DEVICE, VERSION or PEER_DECLINE;
 *  - a REQ or REP whose GID is not the address of the sender's end of
 *    the TCP connection is declined (BAD_MSG);
 *  - a queue pair that cannot be connected is declined (QP_SETUP), and so
 *    is a REQ joining a queue pair with the token of a live connection
 *    on it (a replay: visock_vc_connect() returns EPROTO);
 *  - after success, bytes on the TCP connection are the peer's failover
 *    message: a second CONFIRM, which does not decode as one, resets
 *    that connection (ECONNRESET).
 */
static const struct scenario scenarios[] = {
	{ "bad_magic", M_BAD_MAGIC, FB(PEER_NO_VISOCK, -1), AB(EPROTO),
	  "a setup message with magic VSKX" },
	{ "short_header_eof", M_SHORT_EOF, AB(0), AB(EPROTO),
	  "magic and one header byte, then EOF" },
	{ "eof", M_EOF, FB(IO, -1), AB(ECONNRESET),
	  "EOF instead of the first message" },
	{ "len_too_big", M_LEN_BIG, AB(0), AB(EPROTO),
	  "length field 513" },
	{ "len_too_small", M_LEN_SMALL, AB(0), AB(EPROTO),
	  "length field 7" },
	{ "version0", M_VERSION0, FB_DECL(VERSION), FB_DECL(VERSION),
	  "header version 0" },
	{ "unknown_type", M_TYPE_UNKNOWN, FB_DECL(BAD_MSG), FB_DECL(BAD_MSG),
	  "message type 9" },
	{ "wrong_type", M_WRONG_TYPE, FB_DECL(BAD_MSG), FB_DECL(BAD_MSG),
	  "REP sent as first message / REQ sent as answer" },
	{ "missing_tlv", M_MISSING_TLV, FB_DECL(BAD_MSG), FB_DECL(BAD_MSG),
	  "no GID TLV" },
	{ "duplicate_tlv", M_DUP_TLV, FB_DECL(BAD_MSG), FB_DECL(BAD_MSG),
	  "QPN TLV twice" },
	{ "tlv_overrun", M_TLV_OVERRUN, FB_DECL(BAD_MSG), FB_DECL(BAD_MSG),
	  "last TLV runs past the end of the message" },
	{ "tlv_trailing", M_TLV_TRAILING, FB_DECL(BAD_MSG), FB_DECL(BAD_MSG),
	  "two bytes after the last TLV" },
	{ "tlv_length", M_TLV_LEN, FB_DECL(BAD_MSG), FB_DECL(BAD_MSG),
	  "QPN TLV with a 2-byte value" },
	{ "qpn0", M_QPN0, FB_DECL(BAD_MSG), FB_DECL(BAD_MSG), "QPN 0" },
	{ "qpn_too_big", M_QPN_BIG, FB_DECL(BAD_MSG), FB_DECL(BAD_MSG),
	  "QPN 2^24" },
	{ "psn_too_big", M_PSN_BIG, FB_DECL(BAD_MSG), FB_DECL(BAD_MSG),
	  "PSN 2^24" },
	{ "mtu0", M_MTU0, FB_DECL(BAD_MSG), FB_DECL(BAD_MSG), "MTU 0" },
	{ "mtu6", M_MTU6, FB_DECL(BAD_MSG), FB_DECL(BAD_MSG), "MTU 6" },
	{ "rbuf_not_pow2", M_RBUF_NPOT, FB_DECL(BAD_MSG), FB_DECL(BAD_MSG),
	  "ring of 48 KiB" },
	{ "rbuf_too_big", M_RBUF_BIG, FB_DECL(BAD_MSG), FB_DECL(BAD_MSG),
	  "ring of 16 MiB" },
	{ "rbuf_too_small", M_RBUF_SMALL, FB_DECL(BAD_MSG), FB_DECL(BAD_MSG),
	  "ring of 8 KiB" },
	{ "token0", M_TOKEN0, FB_DECL(BAD_MSG), FB_DECL(BAD_MSG), "TOKEN 0" },
	{ "critical_tlv", M_CRITICAL_TLV, FB_DECL(VERSION), FB_DECL(VERSION),
	  "an unknown critical TLV" },
	{ "decline_no_device", M_DECLINE_NO_DEVICE, FB(PEER_NO_DEVICE, -1),
	  FB(PEER_NO_DEVICE, -1), "DECLINE(NO_DEVICE)" },
	{ "decline_version", M_DECLINE_VERSION, FB(VERSION, -1),
	  FB(VERSION, -1), "DECLINE(VERSION)" },
	{ "decline_bad_reason", M_DECLINE_BAD_REASON, FB_DECL(BAD_MSG),
	  FB_DECL(BAD_MSG), "DECLINE with reason 200" },
	{ "decline_no_reason", M_DECLINE_NO_REASON, FB_DECL(BAD_MSG),
	  FB_DECL(BAD_MSG), "DECLINE without REASON TLV" },
	{ "garbage", M_GARBAGE, FB_DECL(BAD_MSG), FB_DECL(BAD_MSG),
	  "random bytes behind magic, type and a length in range" },
	{ "silence", M_SILENCE, AB(0), AB(ETIMEDOUT),
	  "valid REQ then silence / no answer to REQ" },
	{ "unreachable_gid", M_UNREACHABLE_GID,
	  { O_FALLBACK, VISOCK_FB_BAD_MSG, VISOCK_FB_BAD_MSG, 0, true },
	  { O_FALLBACK, VISOCK_FB_BAD_MSG, VISOCK_FB_BAD_MSG, 0, true },
	  "valid message with the GID of 192.0.2.1" },
	{ "confirm_bad_token", M_CONFIRM_BAD_TOKEN, FB(BAD_MSG, -1), NONE,
	  "valid REQ, then CONFIRM with a wrong token" },
	{ "future_req_ok", M_FUTURE_REQ_OK, FB(PEER_DECLINE, -1), NONE,
	  "REQ version 2 with an unknown non-critical TLV is answered; then DECLINE" },
	{ "fake_qp", M_FAKE_QP, SPECIAL, SPECIAL,
	  "complete handshake naming a QP that does not exist: I/O must end" },
	{ "device_gone", M_DEVICE_GONE, SPECIAL, SPECIAL,
	  "the normal side's RDMA device is deleted during the handshake" },
	/* The REQ of a live connection joining a QP: visock_vc_connect(). */
	{ "replay_req", M_REPLAY_REQ, FB_DECL(QP_SETUP), NONE,
	  "REQ and CONFIRM of a live connection replayed on a new one" },
	/* Its token is the other connection's: srv_confirm(). */
	{ "replay_confirm", M_REPLAY_CONFIRM, FB(BAD_MSG, -1), NONE,
	  "a REQ of its own, then the CONFIRM of a live connection" },
	/* After success, TCP bytes are the peer's failover message. */
	{ "confirm_twice", M_CONFIRM_TWICE,
	  { O_SPECIAL, 0, -1, ECONNRESET, false }, NONE,
	  "a second CONFIRM after the handshake succeeded" },
};

#define HOSTILE_CLIENT	"hostile_client_"
#define HOSTILE_SERVER	"hostile_server_"

static const struct scenario *find_scenario(const char *name,
					    bool *hostile_client)
{
	size_t i;

	*hostile_client = !strncmp(name, HOSTILE_CLIENT,
				   strlen(HOSTILE_CLIENT));
	name += strlen(HOSTILE_CLIENT);	/* same length as the other */
	for (i = 0; i < ARRAY_SIZE(scenarios); i++)
		if (!strcmp(scenarios[i].name, name))
			return &scenarios[i];
	vt_fail("no scenario %s", name);
}

/* raw_handshake is set: connected, it is cleared; check what it did. */
static void raw_connected(int fd)
{
	struct visock_info vi;

	/* Decided: visock read the hook for this connection already. */
	set_knob(RAW_PATH, 0);
	get_info(fd, &vi);
	vt_assert((vi.vi_flags & (F_SO | F_PO)) == (F_SO | F_PO) &&
		  vi.vi_mode == VISOCK_MODE_TCP,
		  "raw_handshake socket: %s; both SYN and SYN-ACK must announce visock",
		  info_str(&vi));
}

/*
 * A client connection to @port whose SYN announces visock and whose
 * handshake is the application's (raw_handshake, cleared again).
 */
static int raw_connect(struct vt_ctx *c, int port)
{
	int fd = su_socket(VT_FAMILY_VISOCK, false, SOCK_CLOEXEC);

	set_knob(RAW_PATH, 1);
	connect_or_fail(c, fd, false, port);
	raw_connected(fd);
	return fd;
}

static void hostile_params(int fd, struct hparams *hp);

/*
 * The hostile side's connection (raw_handshake set) and what it puts in
 * a REQ / REP; as server, it has read the normal client's REQ into @req.
 */
static int hostile_connect(struct vt_ctx *c, bool as_client,
			   struct hparams *hp, struct hdec *req)
{
	int fd, lfd;

	if (as_client) {
		fd = raw_connect(c, su_recv_port(c));
	} else {
		lfd = su_listen(VT_FAMILY_VISOCK, false, 16, SOCK_CLOEXEC);
		su_send_port(c, lfd);
		fd = su_accept(lfd, SOCK_CLOEXEC);
		close(lfd);
		raw_connected(fd);
		read_msg(fd, HS_REQ, req);
	}
	hostile_params(fd, hp);
	return fd;
}

/* A REQ / REP of a peer with a made-up QP, on connection @fd. */
static void hostile_params(int fd, struct hparams *hp)
{
	memset(hp, 0, sizeof(*hp));
	hm_local_gid(fd, hp->gid);
	hp->qpn = (hm_rand32() % 0xfffff0) + 1;
	hp->psn = hm_rand32() & 0xffffff;
	hp->mtu = 3;
	hp->rbuf_addr = 0x7f0000000000ULL;
	hp->rbuf_rkey = hm_rand32();
	hp->rbuf_size = 64 * 1024;
	hp->token = hm_rand32() | 1;
	hp->link_id = hp->qpn;
}

static void hostile_side(struct vt_ctx *c, const struct scenario *s,
			 const struct expect *x, bool as_client)
{
	char hex[2 * sizeof(((struct hmsg *)0)->b) + 1];
	char how[64];
	struct hparams hp;
	struct hmsg m;
	struct hdec d;
	size_t skip = 0, discarded;
	long long t0;
	int fd;
	uint8_t type = as_client ? HS_REQ : HS_REP;
	bool shut = false, fallback;

	fd = hostile_connect(c, as_client, &hp, &d);

	switch (s->mut) {
	case M_EOF:
		m.len = 0;
		shut = true;
		break;
	case M_SHORT_EOF:
		hm_start(&m, type, HS_VERSION);
		m.len = 5;
		skip = 5;
		shut = true;
		break;
	case M_SILENCE:
		m.len = 0;
		if (as_client)
			hm_setup(&m, HS_REQ, &hp, M_NONE);
		break;
	case M_CONFIRM_BAD_TOKEN:
	case M_FUTURE_REQ_OK:
		hm_setup(&m, HS_REQ, &hp, s->mut == M_FUTURE_REQ_OK ?
			 M_FUTURE_REQ_OK : M_NONE);
		break;
	case M_DECLINE_NO_DEVICE:
		hm_decline(&m, VISOCK_FB_NO_DEVICE, true);
		break;
	case M_DECLINE_VERSION:
		hm_decline(&m, VISOCK_FB_VERSION, true);
		break;
	case M_DECLINE_BAD_REASON:
		hm_decline(&m, 200, true);
		break;
	case M_DECLINE_NO_REASON:
		hm_decline(&m, 0, false);
		break;
	case M_GARBAGE:
		skip = hm_garbage(&m, type, 256);
		skip = m.len - skip;
		break;
	case M_WRONG_TYPE:
		hm_setup(&m, as_client ? HS_REP : HS_REQ, &hp, M_NONE);
		break;
	case M_BAD_MAGIC:
		hm_setup(&m, type, &hp, s->mut);
		skip = m.len;
		break;
	default:
		hm_setup(&m, type, &hp, s->mut);
		break;
	}
	if (s->mut == M_GARBAGE) {
		hex_encode(m.b, m.len, hex);
		vt_diag("garbage sent: %s", hex);
	}
	/* The stream bytes the normal side's application gets first. */
	if (skip) {
		hex_encode(m.b + m.len - skip, skip, hex);
		vt_send(c, "LEFTOVER %s", hex);
	} else {
		vt_send(c, "LEFTOVER -");
	}
	t0 = ctl_now_ms();
	if (m.len)
		su_write_all(fd, m.b, m.len);
	if (shut)
		vt_try(shutdown(fd, SHUT_WR), "shutdown(SHUT_WR)");

	if (as_client && (s->mut == M_SILENCE ||
			  s->mut == M_CONFIRM_BAD_TOKEN ||
			  s->mut == M_FUTURE_REQ_OK)) {
		read_msg(fd, HS_REP, &d);
		vt_diag("REP: qpn %u token %#x ring %u mtu %u", d.qpn, d.token,
			d.rbuf_size, d.mtu);
		if (s->mut == M_CONFIRM_BAD_TOKEN) {
			hm_confirm(&m, d.token + 1 ? d.token + 1 : 1);
			su_write_all(fd, m.b, m.len);
		} else if (s->mut == M_FUTURE_REQ_OK) {
			hm_decline(&m, VISOCK_FB_QP_SETUP, true);
			su_write_all(fd, m.b, m.len);
		}
		t0 = ctl_now_ms();
	}

	fallback = x->kind == O_FALLBACK;
	if (fallback && x->or_abort) {
		/* DECLINE or the end of the connection, whichever comes. */
		uint8_t b;

		if (!(su_poll(fd, POLLIN, MSG_WAIT_MS) & (POLLIN | POLLHUP |
							   POLLERR)))
			vt_fail("neither DECLINE nor the end within %d ms",
				MSG_WAIT_MS);
		if (recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) != 1)
			fallback = false;
	}
	if (fallback) {
		if (x->decline >= 0) {
			read_msg(fd, HS_DECLINE, &d);
			vt_diag("got DECLINE(%s)", fb_name(d.reason));
			vt_assert(d.reason == (uint32_t)x->decline,
				  "DECLINE reason %s, expected %s",
				  fb_name(d.reason), fb_name(x->decline));
		}
		vt_send(c, "PATH fallback");
		if (shut) {
			pl_recv(fd, XFER_LEN);
		} else {
			vt_sync(c, "xfer");
			su_xfer(&fd, 1, XFER_LEN, XFER_MS);
		}
	} else {
		if (wait_end(fd, HOSTILE_TIMEOUT_MS + MARGIN_MS, how,
			     sizeof(how), &discarded))
			vt_fail("the connection did not end within %d ms",
				HOSTILE_TIMEOUT_MS + MARGIN_MS);
		vt_diag("connection ended (%s) %lld ms after the last message%s",
			how, ctl_now_ms() - t0,
			discarded ? " (data discarded)" : "");
		vt_send(c, "PATH abort %s %lld", how, ctl_now_ms() - t0);
	}
	vt_sync(c, "done");
	close(fd);
}

/* Parse "LEFTOVER <hex>|-": the bytes the application must get first. */
static size_t leftover(const char *line, uint8_t *buf, size_t size)
{
	if (strncmp(line, "LEFTOVER ", 9))
		vt_fail("control channel: \"%s\"", line);
	if (!strcmp(line + 9, "-"))
		return 0;
	return hex_decode(line + 9, buf, size);
}

/*
 * Wait for the connection of a hostile client: it is accepted (the
 * server fell back) or the hostile side reports over the control
 * connection (in @path) that it ended.  Return: the accepted socket or
 * -1.
 */
static int wait_accept(struct vt_ctx *c, int lfd, char *path, size_t size,
		       bool *have_path)
{
	long long deadline = ctl_now_ms() + HOSTILE_TIMEOUT_MS + 2 * MARGIN_MS;

	for (;;) {
		struct pollfd p[2] = { { .fd = lfd, .events = POLLIN },
				       { .fd = c->ctl, .events = POLLIN } };
		long long left = deadline - ctl_now_ms();
		int fd;

		if (left <= 0)
			return -1;
		if (poll(p, 2, (int)left) < 0 && errno != EINTR)
			vt_fail("poll: %s", strerror(errno));
		if (p[0].revents & POLLIN) {
			fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0)
				return fd;
		}
		if (!*have_path && (p[1].revents & (POLLIN | POLLHUP))) {
			vt_recv(c, path, size);
			*have_path = true;
			if (!strcmp(path, "PATH fallback"))
				/* its DECLINE can come before the queueing */
				return su_accept(lfd, SOCK_CLOEXEC);
			return -1;
		}
	}
}

static void normal_side(struct vt_ctx *c, const struct scenario *s,
			const struct expect *x, bool hostile_client)
{
	uint8_t want[HS_MAX_LEN], got[HS_MAX_LEN];
	char line[CTL_LINE_MAX], pathline[CTL_LINE_MAX], path[32];
	size_t nwant = 0;
	long long t0, ms;
	int fd = -1, lfd = -1, port, ret, err = 0;
	bool eof = s->mut == M_EOF || s->mut == M_SHORT_EOF;
	bool fallback, have_path = false;

	if (hostile_client) {
		lfd = su_listen(VT_FAMILY_VISOCK, false, 16, SOCK_CLOEXEC);
		su_send_port(c, lfd);
		vt_recv(c, line, sizeof(line));
		nwant = leftover(line, want, sizeof(want));
		t0 = ctl_now_ms();
		fd = wait_accept(c, lfd, pathline, sizeof(pathline),
				 &have_path);
		ms = ctl_now_ms() - t0;
		fallback = fd >= 0;
		if (!fallback && x->kind == O_FALLBACK && !x->or_abort)
			vt_fail("nothing to accept after %lld ms, expected a fallback (%s)",
				ms, fb_name(x->reason));
	} else {
		port = su_recv_port(c);
		fd = settle_guarded_socket(VT_FAMILY_VISOCK, false);
		t0 = ctl_now_ms();
		ret = connect_peer(c, fd, false, port);
		err = errno;
		ms = ctl_now_ms() - t0;
		vt_recv(c, line, sizeof(line));
		nwant = leftover(line, want, sizeof(want));
		if (ret && err == EINPROGRESS)
			vt_fail("connect() did not settle within %d s",
				SETTLE_GUARD_S);
		fallback = ret == 0;
		if (!fallback) {
			close(fd);
			fd = -1;
		}
		if (!fallback && (x->kind == O_FALLBACK && !x->or_abort))
			vt_fail("connect: %s after %lld ms, expected a fallback to TCP (%s)",
				vt_errname(err), ms, fb_name(x->reason));
	}

	if (fallback) {
		vt_diag("outcome: fallback after %lld ms, reason %s", ms,
			fb_name(visock_u32(fd, VISOCK_FALLBACK_REASON,
					   "VISOCK_FALLBACK_REASON")));
		vt_assert(x->kind == O_FALLBACK,
			  "the connection fell back to TCP, expected it to end with an error");
		expect_fallback(fd, x->reason, F_SO | F_PO);
	} else {
		vt_diag("outcome: abort after %lld ms%s%s", ms,
			hostile_client ? " (never accepted)" : ", connect: ",
			hostile_client ? "" : vt_errname(err));
		if (!hostile_client) {
			vt_assert(err == EPROTO || err == ETIMEDOUT ||
				  err == ECONNRESET,
				  "connect: %s (%s), expected EPROTO, ETIMEDOUT or ECONNRESET",
				  vt_errname(err), strerror(err));
			vt_assert(!x->err || err == x->err,
				  "connect: %s, expected %s", vt_errname(err),
				  vt_errname(x->err));
			vt_assert(ms <= HOSTILE_TIMEOUT_MS + MARGIN_MS,
				  "connect took %lld ms", ms);
		}
	}

	if (!have_path)
		vt_recv(c, pathline, sizeof(pathline));
	vt_assert(sscanf(pathline, "PATH %31s", path) == 1,
		  "control channel: \"%s\"", pathline);
	vt_assert(!strcmp(path, fallback ? "fallback" : "abort"),
		  "the hostile side saw %s", pathline + 5);
	if (!fallback) {
		vt_diag("the hostile side saw the end: %s", pathline + 11);
		if (hostile_client)
			vt_assert(!(su_poll(lfd, POLLIN, 200) & POLLIN),
				  "a connection was queued for accept() after the hostile client saw the end");
		vt_sync(c, "done");
		if (hostile_client)
			close(lfd);
		return;
	}
	if (hostile_client)
		close(lfd);

	if (nwant) {
		ret = (int)su_read_within(fd, got, nwant, MSG_WAIT_MS);
		vt_assert(ret == (int)nwant && !memcmp(got, want, nwant),
			  "the application did not get the %zu stream bytes that are not a handshake message first (got %d)",
			  nwant, ret);
	}
	if (eof) {
		su_expect_eof(fd);
		pl_send(fd, XFER_LEN);
		vt_try(shutdown(fd, SHUT_WR), "shutdown(SHUT_WR)");
	} else {
		vt_sync(c, "xfer");
		su_xfer(&fd, 1, XFER_LEN, XFER_MS);
	}
	vt_sync(c, "done");
	close(fd);
}

/* ---- scenarios whose outcome the normal side reports ---- */

#define DEAD_IO_MS	45000	/* I/O over a dead RDMA link must end */

/*
 * Send and receive (discarding) until the connection reports an error
 * or EOF.  Return: 0 with how it ended in @how, -1 if it still runs
 * after @timeout_ms.
 */
static int io_until_end(int fd, int timeout_ms, char *how, size_t size)
{
	long long deadline = ctl_now_ms() + timeout_ms;
	static char buf[16384];
	ssize_t n;

	su_nonblock(fd, true);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT };
		long long left = deadline - ctl_now_ms();

		if (left <= 0)
			return -1;
		if (poll(&p, 1, left > 1000 ? 1000 : (int)left) < 0 &&
		    errno != EINTR)
			vt_fail("poll: %s", strerror(errno));
		if (p.revents & POLLOUT) {
			n = send(fd, buf, sizeof(buf), MSG_NOSIGNAL);
			if (n < 0 && errno != EAGAIN && errno != EINTR) {
				snprintf(how, size, "send: %s",
					 vt_errname(errno));
				return 0;
			}
		}
		if (p.revents & (POLLIN | POLLERR | POLLHUP)) {
			n = recv(fd, buf, sizeof(buf), 0);
			if (n == 0) {
				snprintf(how, size, "EOF");
				return 0;
			}
			if (n < 0 && errno != EAGAIN && errno != EINTR) {
				snprintf(how, size, "recv: %s",
					 vt_errname(errno));
				return 0;
			}
		}
	}
}

/*
 * Normal side of fake_qp / device_gone.  device_gone deletes this host's
 * Soft-RoCE device @rxe when the hostile side says DELETE (between REP
 * and CONFIRM on a server, while a client waits for REP).
 */
static void special_normal(struct vt_ctx *c, const struct scenario *s,
			   bool hostile_client, const char *rxe)
{
	long long deadline = ctl_now_ms() + hs_wait_ms(), t0 = ctl_now_ms();
	char line[CTL_LINE_MAX], how[64];
	struct visock_info vi;
	int fd = -1, lfd = -1, port, err = 0, ret;
	socklen_t elen = sizeof(err);
	bool deleted = false;

	if (hostile_client) {
		lfd = su_listen(VT_FAMILY_VISOCK, false, 16, SOCK_CLOEXEC);
		su_send_port(c, lfd);
	} else {
		port = su_recv_port(c);
		fd = su_socket(VT_FAMILY_VISOCK, false, SOCK_CLOEXEC);
		su_nonblock(fd, true);
		ret = connect_peer(c, fd, false, port);
		vt_assert(ret && errno == EINPROGRESS,
			  "non-blocking connect: %s, expected EINPROGRESS",
			  ret ? vt_errname(errno) : "success");
	}
	/* Until the connection settled: serve DELETE requests. */
	for (;;) {
		struct pollfd p[2] = {
			{ .fd = hostile_client ? lfd : fd,
			  .events = hostile_client ? POLLIN : POLLOUT },
			{ .fd = c->ctl, .events = POLLIN },
		};
		long long left = deadline - ctl_now_ms();

		vt_assert(left > 0, "the connection did not settle in %lld ms",
			  hs_wait_ms());
		if (poll(p, 2, (int)left) < 0 && errno != EINTR)
			vt_fail("poll: %s", strerror(errno));
		if (p[1].revents & (POLLIN | POLLHUP)) {
			vt_recv(c, line, sizeof(line));
			if (!strncmp(line, "GONE", 4))
				break;	/* hostile client saw the end */
			vt_assert(!strcmp(line, "DELETE") &&
				  s->mut == M_DEVICE_GONE && !deleted,
				  "control channel: \"%s\"", line);
			rxe_delete(rxe, getenv(RXE_ENV));
			deleted = true;
			vt_send(c, "DELETED");
		}
		if (hostile_client && (p[0].revents & POLLIN)) {
			fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0)
				break;
		}
		if (!hostile_client && p[0].revents) {
			vt_try(getsockopt(fd, SOL_SOCKET, SO_ERROR, &err,
					  &elen), "getsockopt(SO_ERROR)");
			break;
		}
	}
	if (lfd >= 0)
		close(lfd);
	/* As TCP, accept() returns a connection reset after it was set up. */
	if (hostile_client && fd >= 0)
		vt_try(getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen),
		       "getsockopt(SO_ERROR)");

	if (fd < 0 || err) {
		vt_diag("outcome: abort after %lld ms%s%s",
			ctl_now_ms() - t0, fd < 0 ? " (never accepted)" :
			", SO_ERROR ", fd < 0 ? "" : vt_errname(err));
		vt_assert(s->mut == M_DEVICE_GONE,
			  "the handshake failed, expected it to complete");
		vt_send(c, "OUTCOME abort");
		goto out;
	}
	su_nonblock(fd, false);
	get_info(fd, &vi);
	vt_diag("outcome after %lld ms: %s", ctl_now_ms() - t0,
		info_str(&vi));
	if (!success_info(&vi)) {
		vt_send(c, "OUTCOME fallback %u", vi.vi_fallback_reason);
		vt_assert(s->mut == M_DEVICE_GONE,
			  "fell back (%s), expected the handshake to complete",
			  fb_name(vi.vi_fallback_reason));
		vt_assert(vi.vi_fallback_reason == VISOCK_FB_DEVICE_GONE ||
			  vi.vi_fallback_reason == VISOCK_FB_NO_DEVICE,
			  "fell back with %s, expected DEVICE_GONE or NO_DEVICE",
			  fb_name(vi.vi_fallback_reason));
		vt_sync(c, "xfer");
		su_xfer(&fd, 1, XFER_LEN, XFER_MS);
		goto out;
	}
	vt_send(c, "OUTCOME %s", vi.vi_mode == VISOCK_MODE_RDMA ? "rdma" :
		"tcp");
	vt_assert(s->mut != M_DEVICE_GONE,
		  "the handshake succeeded after the RDMA device %s was deleted: %s",
		  rxe, info_str(&vi));
	if (vi.vi_mode == VISOCK_MODE_RDMA) {
		/* Nobody reads the ring, nobody answers the QP. */
		t0 = ctl_now_ms();
		if (io_until_end(fd, DEAD_IO_MS, how, sizeof(how)))
			vt_fail("I/O to a peer without queue pair still running after %d ms",
				DEAD_IO_MS);
		vt_diag("I/O ended after %lld ms: %s", ctl_now_ms() - t0, how);
		get_info(fd, &vi);
		vt_diag("then: %s", info_str(&vi));
	} else {
		/* No RDMA data path: the stream still goes over TCP. */
		vt_sync(c, "xfer");
		su_xfer(&fd, 1, XFER_LEN, XFER_MS);
	}
out:
	if (fd >= 0)
		close(fd);
	vt_sync(c, "done");
	rxe_restore();
	vt_sync(c, "restored");
}

/*
 * Hostile client: wait for the server's OUTCOME; if the connection ends
 * first (the server dropped it before accept()), say GONE: the server
 * cannot see that.
 */
static void outcome_or_gone(struct vt_ctx *c, int fd, char *line,
			    size_t size)
{
	long long deadline = ctl_now_ms() + 30000;
	bool watch = true;
	char b;

	for (;;) {
		struct pollfd p[2] = { { .fd = c->ctl, .events = POLLIN },
				       { .fd = watch ? fd : -1,
					 .events = POLLIN } };
		long long left = deadline - ctl_now_ms();
		ssize_t n;

		vt_assert(left > 0, "no OUTCOME from the normal side in 30 s");
		if (poll(p, 2, (int)left) < 0 && errno != EINTR)
			vt_fail("poll: %s", strerror(errno));
		if (p[0].revents) {
			vt_recv(c, line, size);
			return;
		}
		if (!p[1].revents)
			continue;
		n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
		if (n > 0) {
			watch = false;	/* data: not our business here */
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		vt_send(c, "GONE");
		vt_recv(c, line, size);
		return;
	}
}

static void special_hostile(struct vt_ctx *c, const struct scenario *s,
			    bool as_client)
{
	char line[CTL_LINE_MAX], how[64];
	struct hparams hp;
	struct hmsg m;
	struct hdec d;
	size_t discarded;
	int fd;

	fd = hostile_connect(c, as_client, &hp, &d);
	if (as_client) {
		hm_setup(&m, HS_REQ, &hp, M_NONE);
		su_write_all(fd, m.b, m.len);
		read_msg(fd, HS_REP, &d);
	}
	if (s->mut == M_DEVICE_GONE) {
		vt_send(c, "DELETE");
		vt_expect(c, "DELETED");
	}
	if (as_client)
		hm_confirm(&m, d.token);
	else
		hm_setup(&m, HS_REP, &hp, M_NONE);
	if (send(fd, m.b, m.len, MSG_NOSIGNAL) != (ssize_t)m.len)
		vt_diag("sending %s: %s", as_client ? "CONFIRM" : "REP",
			vt_errname(errno));
	if (as_client)
		outcome_or_gone(c, fd, line, sizeof(line));
	else
		vt_recv(c, line, sizeof(line));
	if (!strncmp(line, "OUTCOME fallback", 16)) {
		/* A client declines a REP it cannot use. */
		if (!as_client)
			read_msg(fd, HS_DECLINE, &d);
		vt_sync(c, "xfer");
		su_xfer(&fd, 1, XFER_LEN, XFER_MS);
	} else if (!strcmp(line, "OUTCOME tcp")) {
		if (!as_client)
			read_msg(fd, HS_CONFIRM, &d);
		vt_sync(c, "xfer");
		su_xfer(&fd, 1, XFER_LEN, XFER_MS);
	} else {
		vt_assert(!strcmp(line, "OUTCOME rdma") ||
			  !strcmp(line, "OUTCOME abort"),
			  "control channel: \"%s\"", line);
		if (wait_end(fd, DEAD_IO_MS + MARGIN_MS, how, sizeof(how),
			     &discarded))
			vt_fail("the connection did not end within %d ms",
				DEAD_IO_MS + MARGIN_MS);
		vt_diag("connection ended (%s, %zu bytes discarded)", how,
			discarded);
	}
	close(fd);
	vt_sync(c, "done");
	vt_sync(c, "restored");
}

/* ---- replays and duplicates ---- */

static void ping_both(struct vt_ctx *c, int fd);

/* A value of /proc/net/visock; -1 if it is not there. */
static long long proc_counter(const char *name)
{
	char line[256], key[64];
	long long v, val = -1;
	FILE *f = fopen("/proc/net/visock", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lld", key, &v) == 2 &&
		    !strcmp(key, name))
			val = v;
	fclose(f);
	return val;
}

static const char *const hs_counters[] = {
	"handshakes_done", "handshakes_aborted", "fallback_qp_setup",
	"fallback_bad_msg", "rdma_failovers",
};

enum { HC_DONE, HC_ABORTED, HC_QP_SETUP, HC_BAD_MSG, HC_FAILOVERS, HC_N };

static void counters_read(long long *v)
{
	size_t i;

	for (i = 0; i < HC_N; i++)
		v[i] = proc_counter(hs_counters[i]);
}

/* @v: the values before; becomes the growth since, printed. */
static void counters_delta(long long *v)
{
	char buf[256];
	size_t i;
	int n = 0;

	for (i = 0; i < HC_N; i++) {
		v[i] = proc_counter(hs_counters[i]) - v[i];
		n += snprintf(buf + n, sizeof(buf) - n, " %s +%lld",
			      hs_counters[i], v[i]);
	}
	vt_diag("/proc/net/visock:%s", buf);
}

#define REPLAY_XFER_LEN	(8 * 1024 * 1024)	/* connection B, each way */

/* su_xfer() on @fd in a child process, so that it runs meanwhile. */
static pid_t xfer_child(int fd, uint64_t len)
{
	pid_t pid = fork();

	vt_assert(pid >= 0, "fork: %s", strerror(errno));
	if (!pid) {
		su_xfer(&fd, 1, len, XFER_MS);
		_exit(0);
	}
	return pid;
}

/* Is the child still running (without reaping it)? */
static bool child_running(pid_t pid)
{
	siginfo_t si = { 0 };

	return !waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT) &&
	       !si.si_pid;
}

/* The child's transfer completed intact (its failure is printed). */
static void xfer_child_done(pid_t pid, const char *what)
{
	int status = 0;

	vt_assert(waitpid(pid, &status, 0) == pid, "waitpid: %s",
		  strerror(errno));
	vt_assert(WIFEXITED(status) && !WEXITSTATUS(status),
		  "%s: its checksummed stream failed (status %#x, see above)",
		  what, status);
}

/* A bystander connection is still on RDMA and never failed over. */
static void expect_untouched(int fd, const char *what)
{
	struct visock_info vi;

	get_info(fd, &vi);
	vt_diag("%s afterwards: %s", what, info_str(&vi));
	vt_assert(vi.vi_mode == VISOCK_MODE_RDMA &&
		  !(vi.vi_flags & VISOCK_INFO_F_FAILOVER),
		  "%s was disturbed: %s", what, info_str(&vi));
}

/*
 * Handshake messages that this host's sockets send to port @dport,
 * captured with an AF_PACKET socket (outgoing IPv4 TCP segments).
 */
struct cap_msg {
	uint16_t sport;
	uint32_t seq;		/* sequence number of the first byte */
	size_t len;
	uint8_t b[HS_MAX_LEN];
};

struct capture {
	int fd;
	uint16_t dport;
	size_t n;
	struct cap_msg msgs[32];
};

static void cap_open(struct capture *cap, int dport)
{
	/*
	 * ETH_P_ALL: a socket bound to one protocol does not see outgoing
	 * packets.  SOCK_DGRAM: the network header first; byte 9 of IPv4's
	 * is the protocol.
	 */
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 9),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_TCP, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, 0xffff),
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog = { .len = ARRAY_SIZE(code), .filter = code };
	int size = 1 << 20;

	memset(cap, 0, sizeof(*cap));
	cap->dport = (uint16_t)dport;
	cap->fd = (int)vt_try(socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC,
				     htons(ETH_P_ALL)), "socket(AF_PACKET)");
	vt_try(setsockopt(cap->fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog,
			  sizeof(prog)), "setsockopt(SO_ATTACH_FILTER)");
	vt_try(setsockopt(cap->fd, SOL_SOCKET, SO_RCVBUF, &size,
			  sizeof(size)), "setsockopt(SO_RCVBUF)");
}

/* Keep a message; a retransmission (same port and sequence) is dropped. */
static void cap_add(struct capture *cap, uint16_t sport, uint32_t seq,
		    const uint8_t *m, size_t len)
{
	struct cap_msg *cm;
	size_t i;

	for (i = 0; i < cap->n; i++)
		if (cap->msgs[i].sport == sport && cap->msgs[i].seq == seq)
			return;
	if (cap->n == ARRAY_SIZE(cap->msgs))
		return;
	cm = &cap->msgs[cap->n++];
	cm->sport = sport;
	cm->seq = seq;
	cm->len = len;
	memcpy(cm->b, m, len);
}

/* Parse what the packet socket has queued. */
static void cap_drain(struct capture *cap)
{
	static uint8_t pkt[65536];

	for (;;) {
		struct sockaddr_ll sll;
		socklen_t sl = sizeof(sll);
		size_t ihl, doff, tot, off;
		ssize_t n;

		n = recvfrom(cap->fd, pkt, sizeof(pkt), MSG_DONTWAIT,
			     (struct sockaddr *)&sll, &sl);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		vt_assert(n >= 0, "packet socket: %s", strerror(errno));
		if (sll.sll_pkttype != PACKET_OUTGOING ||
		    sll.sll_protocol != htons(ETH_P_IP) || n < 40 ||
		    pkt[0] >> 4 != 4 || pkt[9] != IPPROTO_TCP)
			continue;
		ihl = (pkt[0] & 15) * 4u;
		tot = get16(pkt + 2);
		if (tot > (size_t)n)
			tot = (size_t)n;
		if (ihl < 20 || tot < ihl + 20 ||
		    get16(pkt + ihl + 2) != cap->dport)
			continue;
		doff = (pkt[ihl + 12] >> 4) * 4u;
		if (doff < 20 || tot < ihl + doff)
			continue;
		/* One segment may carry more than one message. */
		for (off = ihl + doff; tot - off >= HS_HDR_LEN;) {
			const uint8_t *m = pkt + off;
			size_t len = get16(m + 6);

			if (get32(m) != HS_MAGIC || len < HS_HDR_LEN ||
			    len > tot - off)
				break;
			cap_add(cap, get16(pkt + ihl),
				get32(pkt + ihl + 4) + (uint32_t)(off - ihl - doff),
				m, len);
			off += len;
		}
	}
}

/* The message of type @type that local port @sport sent; fails if none. */
static const struct cap_msg *cap_find(struct capture *cap, int sport,
				      uint8_t type)
{
	long long deadline = ctl_now_ms() + MSG_WAIT_MS;
	size_t i;

	for (;;) {
		cap_drain(cap);
		for (i = 0; i < cap->n; i++)
			if (cap->msgs[i].sport == sport &&
			    cap->msgs[i].b[4] == type)
				return &cap->msgs[i];
		vt_assert(ctl_now_ms() < deadline,
			  "no %s from port %d seen on the wire (%zu handshake messages captured)",
			  type_name(type), sport, cap->n);
		su_poll(cap->fd, POLLIN, 100);
	}
}

/* A normal visock connection to the peer's @port, in RDMA mode. */
static int rdma_connect(struct vt_ctx *c, int port, const char *what)
{
	int fd = settle_guarded_socket(VT_FAMILY_VISOCK, false);
	struct visock_info vi;

	connect_or_fail(c, fd, false, port);
	get_info(fd, &vi);
	vt_diag("%s: %s", what, info_str(&vi));
	vt_assert(vi.vi_mode == VISOCK_MODE_RDMA && success_info(&vi),
		  "%s did not get RDMA: %s", what, info_str(&vi));
	return fd;
}

/* Accept a normal connection in RDMA mode; its peer port in @pport. */
static int rdma_accept(int lfd, const char *what, int *pport)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct visock_info vi;
	int fd = su_accept(lfd, SOCK_CLOEXEC);

	vt_try(getpeername(fd, (struct sockaddr *)&ss, &len), "getpeername");
	*pport = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	get_info(fd, &vi);
	vt_diag("%s (port %d): %s", what, *pport, info_str(&vi));
	vt_assert(vi.vi_mode == VISOCK_MODE_RDMA && success_info(&vi),
		  "%s did not get RDMA: %s", what, info_str(&vi));
	return fd;
}

/*
 * After a replay: the replaying connection @fd moves checksummed data over
 * TCP, and connections B (@b, streaming in @child) and A (@a) are intact
 * and still on RDMA.  Both halves.
 */
static void replay_bystanders(struct vt_ctx *c, int fd, pid_t child, int a,
			      int b)
{
	su_xfer(&fd, 1, XFER_LEN, XFER_MS);

	xfer_child_done(child, "connection B");
	expect_untouched(b, "connection B");
	ping_both(c, a);
	expect_untouched(a, "connection A");
}

/*
 * replay_req, client host.  Two normal connections: A creates the QP, B
 * joins it.  An AF_PACKET socket captures B's REQ and CONFIRM on the
 * wire.  While B streams checksummed data both ways, a connection with
 * raw_handshake replays both messages at once: the server must decline
 * it (visock_vc_connect() refuses the token of the live B) and use
 * TCP for it alone; the CONFIRM is then its first stream bytes.
 * replay_confirm (@confirm_only): the raw connection sends a REQ of its
 * own (a made-up QP) and answers the REP with B's CONFIRM: the server
 * falls back (BAD_MSG), owing no DECLINE.
 */
static void replay_hostile(struct vt_ctx *c, const struct expect *x,
			   bool confirm_only)
{
	struct hparams hp;
	struct hmsg m;
	char hex[2 * HS_MAX_LEN + 1], err[128];
	uint8_t replay[2 * HS_MAX_LEN];
	const struct cap_msg *req, *conf;
	struct capture cap;
	struct visock_info vi;
	struct hdec d;
	int port, a, b, fd;
	bool running;
	pid_t child;

	port = su_recv_port(c);
	cap_open(&cap, port);
	a = rdma_connect(c, port, "connection A");
	b = rdma_connect(c, port, "connection B");
	vt_send(c, "CONNS %d %d", su_port(a), su_port(b));
	req = cap_find(&cap, su_port(b), HS_REQ);
	conf = cap_find(&cap, su_port(b), HS_CONFIRM);
	close(cap.fd);

	get_info(b, &vi);
	if (hm_decode(req->b, req->len, &d, err, sizeof(err)))
		vt_fail("captured REQ: %s", err);
	vt_diag("captured B's REQ (%zu bytes: token %#x, QPN %u, LINK %u) and CONFIRM (%zu bytes)",
		req->len, d.token, d.qpn, d.lgr_id, conf->len);
	vt_assert(d.token == vi.vi_local_token,
		  "captured REQ token %#x, B's VISOCK_INFO says %#x", d.token,
		  vi.vi_local_token);
	vt_assert(d.lgr_id, "B's REQ asks for a new QP (LINK 0): it did not join A's");
	vt_sync(c, "captured");

	child = xfer_child(b, REPLAY_XFER_LEN);
	fd = raw_connect(c, port);
	if (confirm_only) {
		vt_send(c, "LEFTOVER -");
		hostile_params(fd, &hp);
		hm_setup(&m, HS_REQ, &hp, M_NONE);
		su_write_all(fd, m.b, m.len);
		read_msg(fd, HS_REP, &d);
		running = child_running(child);
		su_write_all(fd, conf->b, conf->len);
		vt_diag("sent B's CONFIRM for REP token %#x; B's stream was %s then",
			d.token, running ? "running" : "over already");
	} else {
		/* The server reads the REQ; the CONFIRM is data after it. */
		hex_encode(conf->b, conf->len, hex);
		vt_send(c, "LEFTOVER %s", hex);
		memcpy(replay, req->b, req->len);
		memcpy(replay + req->len, conf->b, conf->len);
		running = child_running(child);
		su_write_all(fd, replay, req->len + conf->len);
		read_msg(fd, HS_DECLINE, &d);
		vt_diag("got DECLINE(%s); B's stream was %s when the replay went out",
			fb_name(d.reason), running ? "running" : "over already");
		vt_assert(d.reason == (uint32_t)x->decline,
			  "DECLINE reason %s, expected %s", fb_name(d.reason),
			  fb_name(x->decline));
	}
	vt_send(c, "PATH fallback");
	vt_sync(c, "xfer");
	replay_bystanders(c, fd, child, a, b);
	vt_sync(c, "done");
	close(fd);
	close(a);
	close(b);
}

/* replay_req and replay_confirm, server host (normal). */
static void replay_normal(struct vt_ctx *c, const struct expect *x)
{
	uint8_t want[HS_MAX_LEN], got[HS_MAX_LEN];
	char line[CTL_LINE_MAX], pathline[CTL_LINE_MAX];
	int lfd, a, b, fd, pa, pb, p1, p2, ret;
	struct visock_info va, vb;
	bool have_path = false, fb_qp;
	long long cnt[HC_N];
	size_t nwant;
	pid_t child;

	counters_read(cnt);
	lfd = su_listen(VT_FAMILY_VISOCK, false, 16, SOCK_CLOEXEC);
	su_send_port(c, lfd);
	a = rdma_accept(lfd, "connection", &p1);
	b = rdma_accept(lfd, "connection", &p2);
	vt_recv(c, line, sizeof(line));
	vt_assert(sscanf(line, "CONNS %d %d", &pa, &pb) == 2,
		  "control channel: \"%s\"", line);
	if (p1 == pb && p2 == pa) {
		fd = a;
		a = b;
		b = fd;
	} else {
		vt_assert(p1 == pa && p2 == pb,
			  "accepted ports %d, %d; the client connected %d, %d",
			  p1, p2, pa, pb);
	}
	get_info(a, &va);
	get_info(b, &vb);
	vt_assert(va.vi_local_qpn == vb.vi_local_qpn,
		  "A and B do not share a QP (%u, %u)", va.vi_local_qpn,
		  vb.vi_local_qpn);
	vt_sync(c, "captured");

	child = xfer_child(b, REPLAY_XFER_LEN);
	vt_recv(c, line, sizeof(line));
	nwant = leftover(line, want, sizeof(want));
	fd = wait_accept(c, lfd, pathline, sizeof(pathline), &have_path);
	vt_assert(fd >= 0, "the replaying connection was not accepted, expected a fallback (%s)",
		  fb_name(x->reason));
	vt_diag("outcome: fallback, reason %s",
		fb_name(visock_u32(fd, VISOCK_FALLBACK_REASON,
				   "VISOCK_FALLBACK_REASON")));
	expect_fallback(fd, x->reason, F_SO | F_PO);
	if (!have_path)
		vt_recv(c, pathline, sizeof(pathline));
	vt_assert(!strcmp(pathline, "PATH fallback"),
		  "control channel: \"%s\"", pathline);
	if (nwant) {
		ret = (int)su_read_within(fd, got, nwant, MSG_WAIT_MS);
		vt_assert(ret == (int)nwant && !memcmp(got, want, nwant),
			  "the replayed CONFIRM (%zu bytes) is not the first stream data (got %d)",
			  nwant, ret);
	}
	vt_sync(c, "xfer");
	replay_bystanders(c, fd, child, a, b);
	counters_delta(cnt);
	fb_qp = x->reason == VISOCK_FB_QP_SETUP;
	vt_assert(cnt[HC_QP_SETUP] == fb_qp && cnt[HC_BAD_MSG] == !fb_qp &&
		  cnt[HC_DONE] == 2 && cnt[HC_ABORTED] == 0 &&
		  cnt[HC_FAILOVERS] == 0,
		  "counters: expected fallback_%s +1 and handshakes_done +2 only",
		  fb_qp ? "qp_setup" : "bad_msg");
	vt_sync(c, "done");
	close(fd);
	close(a);
	close(b);
	close(lfd);
}

#define CONFIRM2_END_MS	15000	/* the failover's 5 s and a margin */

/*
 * confirm_twice, client host.  A bystander connection on RDMA; then a
 * raw connection completes the handshake (REQ of a made-up QP, the REP's
 * token in CONFIRM) and, once the server accepted it, sends the same
 * CONFIRM again.  After success the server takes any byte on the TCP
 * connection for the peer's failover message (visock_failover.c): it
 * sends its own, reads the 16 bytes of CONFIRM as the peer's, which do
 * not decode, and resets that connection (ECONNRESET).
 */
static void confirm_twice_hostile(struct vt_ctx *c)
{
	char line[CTL_LINE_MAX], how[64];
	struct hparams hp;
	struct hmsg m;
	struct hdec d;
	uint8_t fo[16];
	size_t discarded;
	int port, by, fd;
	ssize_t n;

	port = su_recv_port(c);
	by = rdma_connect(c, port, "bystander");
	fd = raw_connect(c, port);
	hostile_params(fd, &hp);
	hm_setup(&m, HS_REQ, &hp, M_NONE);
	su_write_all(fd, m.b, m.len);
	read_msg(fd, HS_REP, &d);
	hm_confirm(&m, d.token);
	su_write_all(fd, m.b, m.len);
	vt_recv(c, line, sizeof(line));
	vt_assert(!strcmp(line, "ACCEPTED rdma"), "the server: \"%s\"", line);
	su_write_all(fd, m.b, m.len);
	vt_send(c, "SENT");

	n = su_read_within(fd, fo, sizeof(fo), MSG_WAIT_MS);
	vt_assert(n == (ssize_t)sizeof(fo) && fo[0] == 0xf0 &&
		  get32(fo + 4) == 0x56534b46,
		  "expected the server's failover message (16 bytes, type 0xf0, VSKF), got %zd bytes",
		  n);
	vt_diag("the server sent its failover message");
	vt_recv(c, line, sizeof(line));
	vt_diag("the server: %s", line);
	if (wait_end(fd, MSG_WAIT_MS, how, sizeof(how), &discarded))
		vt_fail("the connection did not end within %d ms after the server closed it",
			MSG_WAIT_MS);
	vt_diag("connection ended (%s, %zu more bytes)", how, discarded);
	vt_sync(c, "xfer");
	su_xfer(&by, 1, XFER_LEN, XFER_MS);
	expect_untouched(by, "the bystander");
	vt_sync(c, "done");
	close(fd);
	close(by);
}

/* confirm_twice, server host (normal). */
static void confirm_twice_normal(struct vt_ctx *c, const struct expect *x)
{
	long long cnt[HC_N], t0;
	struct visock_info vi;
	int lfd, by, fd, pby;
	char b, how[64];
	ssize_t n;

	counters_read(cnt);
	lfd = su_listen(VT_FAMILY_VISOCK, false, 16, SOCK_CLOEXEC);
	su_send_port(c, lfd);
	by = rdma_accept(lfd, "bystander", &pby);
	vt_assert(su_poll(lfd, POLLIN, MSG_WAIT_MS) & POLLIN,
		  "nothing to accept %d ms after the bystander", MSG_WAIT_MS);
	fd = su_accept(lfd, SOCK_CLOEXEC);
	get_info(fd, &vi);
	vt_diag("the hostile connection: %s", info_str(&vi));
	vt_send(c, "ACCEPTED %s", vi.vi_mode == VISOCK_MODE_RDMA ? "rdma" :
		"other");
	vt_assert(vi.vi_mode == VISOCK_MODE_RDMA && success_info(&vi),
		  "the handshake did not succeed: %s", info_str(&vi));
	vt_expect(c, "SENT");

	/* No I/O of ours: the second CONFIRM alone must end it. */
	t0 = ctl_now_ms();
	vt_assert(su_poll(fd, POLLIN, CONFIRM2_END_MS) & (POLLIN | POLLERR |
							   POLLHUP),
		  "still open %d ms after the second CONFIRM", CONFIRM2_END_MS);
	n = recv(fd, &b, 1, MSG_DONTWAIT);
	snprintf(how, sizeof(how), "%s", n < 0 ? vt_errname(errno) :
		 n ? "data" : "EOF");
	get_info(fd, &vi);
	vt_diag("outcome: %s after %lld ms; %s", how, ctl_now_ms() - t0,
		info_str(&vi));
	vt_assert(n < 0 && errno == x->err, "read: %s, expected %s", how,
		  vt_errname(x->err));
	vt_send(c, "ENDED %s", how);
	close(fd);

	vt_sync(c, "xfer");
	su_xfer(&by, 1, XFER_LEN, XFER_MS);
	expect_untouched(by, "the bystander");
	counters_delta(cnt);
	vt_assert(cnt[HC_DONE] == 2 && cnt[HC_ABORTED] == 0 &&
		  cnt[HC_FAILOVERS] == 1,
		  "counters: expected handshakes_done +2, rdma_failovers +1");
	vt_sync(c, "done");
	close(by);
	close(lfd);
}

/* Number of RC queue pairs the rdma tool lists; -1 if it cannot. */
static int rc_qps(void)
{
	static char out[65536];
	const char *p;
	int n = 0;

	if (run_cmd(out, sizeof(out), "rdma", "resource", "show", "qp",
		    NULL))
		return -1;
	for (p = out; (p = strstr(p, " type RC ")); p++)
		n++;
	return n;
}

/* The normal side released every queue pair of the test within @ms. */
static void expect_no_qp_leak(int before, int ms)
{
	long long deadline = ctl_now_ms() + ms;
	int now;

	if (before < 0)
		return;
	while ((now = rc_qps()) > before) {
		vt_assert(ctl_now_ms() < deadline,
			  "%d RC queue pairs %d s after the test, %d before: leaked",
			  now, ms / 1000, before);
		usleep(100000);
	}
}

static void hostile(struct vt_ctx *c)
{
	bool hostile_client;
	const struct scenario *s = find_scenario(c->test->name,
						 &hostile_client);
	const struct expect *x = hostile_client ? &s->as_client :
						  &s->as_server;
	bool me_hostile = vt_is_client(c) == hostile_client;
	/* They make normal connections too, before the raw one. */
	bool replay = s->mut == M_REPLAY_REQ || s->mut == M_REPLAY_CONFIRM;
	bool own = replay || s->mut == M_CONFIRM_TWICE;
	unsigned int mine = NEED_RDMA;
	char rxe[64] = "";
	int qps = -1;

	if (me_hostile)
		mine |= NEED_RAW;
	if (!me_hostile && s->mut == M_UNREACHABLE_GID)
		mine |= NEED_NO_TESTNET;
	if (!me_hostile && s->mut == M_DEVICE_GONE)
		mine |= NEED_RXE;
	need(c, mine, rxe, sizeof(rxe));

	set_knob(ENABLE_PATH, 1);
	if (me_hostile && !own)
		set_knob(RAW_PATH, 1);
	else if (!me_hostile)
		set_knob(TIMEOUT_PATH, x->kind == O_SPECIAL || own ? 10000 :
			 HOSTILE_TIMEOUT_MS);
	if (!me_hostile)
		qps = rc_qps();
	vt_sync(c, "configured");
	if (replay && me_hostile)
		replay_hostile(c, x, s->mut == M_REPLAY_CONFIRM);
	else if (replay)
		replay_normal(c, x);
	else if (s->mut == M_CONFIRM_TWICE && me_hostile)
		confirm_twice_hostile(c);
	else if (s->mut == M_CONFIRM_TWICE)
		confirm_twice_normal(c, x);
	else if (me_hostile && x->kind == O_SPECIAL)
		special_hostile(c, s, hostile_client);
	else if (me_hostile)
		hostile_side(c, s, x, hostile_client);
	else if (x->kind == O_SPECIAL)
		special_normal(c, s, hostile_client, rxe);
	else
		normal_side(c, s, x, hostile_client);
	/*
	 * confirm_twice: the server's end of the failed connection lingers
	 * on its QP until the peer's closed flag (never: the peer is fake)
	 * or VISOCK_LINGER_MAX (30 s).
	 */
	if (!me_hostile && s->mut != M_DEVICE_GONE)
		expect_no_qp_leak(qps, s->mut == M_CONFIRM_TWICE ? 45000 :
				  10000);
}

/* ---- the RDMA device goes away under an open connection ---- */

/*
 * su_xfer() for one socket that tolerates the connection ending: 0 when
 * both streams were exchanged intact, 1 (and @how) when the connection
 * ended with an error or early EOF, -1 (and in @how how far each
 * stream got) when it still ran after @timeout_ms (times the test time
 * scale).  Corrupted data fails the test.
 */
static int xfer_tolerant(int fd, uint64_t len, int timeout_ms, char *how,
			 size_t size)
{
	long long deadline = ctl_now_ms() +
			     (long long)timeout_ms * vt_time_scale;
	static uint8_t out[65536], in[65536];
	size_t off = 0, n = 0;
	bool shut = false, eof = false;
	struct pl_tx tx;
	struct pl_rx rx;
	ssize_t r;

	pl_tx_init(&tx, len);
	pl_rx_init(&rx, len);
	su_nonblock(fd, true);
	while (!shut || !eof) {
		struct pollfd p = { .fd = fd,
				    .events = (shut ? 0 : POLLOUT) |
					      (eof ? 0 : POLLIN) };
		long long left = deadline - ctl_now_ms();

		if (left <= 0) {
			snprintf(how, size,
				 "still running after %lld s: %llu of %llu stream bytes sent, %llu received",
				 (long long)timeout_ms * vt_time_scale / 1000,
				 (unsigned long long)tx.pos,
				 (unsigned long long)pl_total(len),
				 (unsigned long long)rx.pos);
			return -1;
		}
		if (poll(&p, 1, left > 1000 ? 1000 : (int)left) < 0 &&
		    errno != EINTR)
			vt_fail("poll: %s", strerror(errno));
		if (!shut && (p.revents & (POLLOUT | POLLERR))) {
			if (off == n) {
				off = 0;
				n = pl_tx_fill(&tx, out, sizeof(out));
			}
			r = send(fd, out + off, n - off, MSG_NOSIGNAL);
			if (r < 0 && errno != EAGAIN && errno != EINTR) {
				snprintf(how, size, "send: %s after %llu bytes",
					 vt_errname(errno),
					 (unsigned long long)tx.pos);
				return 1;
			}
			if (r > 0)
				off += (size_t)r;
			if (off == n && pl_tx_done(&tx)) {
				shutdown(fd, SHUT_WR);
				shut = true;
			}
		}
		if (!eof && (p.revents & (POLLIN | POLLERR | POLLHUP))) {
			r = recv(fd, in, sizeof(in), 0);
			if (r < 0 && errno != EAGAIN && errno != EINTR) {
				snprintf(how, size, "recv: %s after %llu bytes",
					 vt_errname(errno),
					 (unsigned long long)rx.pos);
				return 1;
			}
			if (r > 0)
				pl_check(&rx, in, (size_t)r);
			if (r == 0 && !pl_rx_done(&rx)) {
				snprintf(how, size, "EOF after %llu bytes",
					 (unsigned long long)rx.pos);
				return 1;
			}
			eof = r == 0;
		}
	}
	return 0;
}

#define PING_LEN	1000

/* PING_LEN bytes each way, blocking. */
static void ping_both(struct vt_ctx *c, int fd)
{
	static uint8_t buf[PING_LEN], got[PING_LEN];
	size_t i;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7 + vt_is_client(c));
	su_write_all(fd, buf, sizeof(buf));
	su_read_all(fd, got, sizeof(got));
	for (i = 0; i < sizeof(got); i++)
		vt_assert(got[i] == (uint8_t)(i * 7 + !vt_is_client(c)),
			  "ping byte %zu differs", i);
}

static int pair_visock(struct vt_ctx *c)
{
	int fd, lfd;

	if (vt_is_client(c)) {
		fd = settle_guarded_socket(VT_FAMILY_VISOCK, false);
		return connect_or_fail(c, fd, false, su_recv_port(c));
	}
	lfd = su_listen(VT_FAMILY_VISOCK, false, 16, SOCK_CLOEXEC);
	su_send_port(c, lfd);
	fd = su_accept(lfd, SOCK_CLOEXEC);
	close(lfd);
	return fd;
}

/* After a failure (@after): a new connection is on RDMA and works. */
static void rdma_again(struct vt_ctx *c, const char *after)
{
	struct visock_info vi;
	int fd = pair_visock(c);

	get_info(fd, &vi);
	vt_diag("new connection: %s", info_str(&vi));
	vt_assert(success_info(&vi), "no handshake success after %s: %s",
		  after, info_str(&vi));
	ping_both(c, fd);
	vt_sync(c, "pinged");
	close(fd);
}

/*
 * The server's Soft-RoCE device is deleted while an RDMA connection is
 * open: the deletion must not wait for the connection, I/O must end or
 * complete intact within a bounded time on both ends, and once the
 * device is back, new connections use RDMA again.
 */
/*
 * An RDMA device is deleted under an open connection (on the server, or
 * with @client_side on the client): the connection fails over to its TCP
 * socket and both streams arrive intact, with the failover flag set on
 * both ends.  Once the device is back, new connections use RDMA again.
 */
#define GONE_XFER_LEN	(8 * 1024 * 1024)	/* each way */
#define GONE_DELAY_MS	300			/* into the transfer */

/*
 * After device_gone's transfer (PING_LEN, then GONE_XFER_LEN bytes each
 * way), one direction's bytes split into what RDMA WRITEs carried (posted
 * bytes, never more than the stream) and what TCP carried (its counters
 * also hold the handshake and failover messages).  Counting the bytes
 * TCP resent after the failover as RDMA bytes as well - a bug once -
 * pushes the RDMA count past the stream.
 */
static void check_split(const struct visock_info *vi, bool sent)
{
	uint64_t total = PING_LEN + GONE_XFER_LEN;
	uint64_t rdma = sent ? vi->vi_rdma_bytes_sent : vi->vi_rdma_bytes_rcvd;
	uint64_t tcp = sent ? vi->vi_tcp_bytes_sent : vi->vi_tcp_bytes_rcvd;
	const char *dir = sent ? "sent" : "received";

	vt_diag("bytes %s: RDMA %llu + TCP %llu for a stream of %llu", dir,
		(unsigned long long)rdma, (unsigned long long)tcp,
		(unsigned long long)total);
	vt_assert(rdma <= total && rdma + tcp >= total,
		  "bytes %s: RDMA %llu + TCP %llu do not split %llu",
		  dir, (unsigned long long)rdma, (unsigned long long)tcp,
		  (unsigned long long)total);
}

/*
 * The common start of the link failure tests: check @mine (need()),
 * enable visock, then one RDMA connection that both sides have used.
 */
static int used_rdma_pair(struct vt_ctx *c, unsigned int mine, char *rxe,
			  size_t size)
{
	struct visock_info vi;
	int fd;

	need(c, mine, rxe, size);
	set_knob(ENABLE_PATH, 1);
	vt_sync(c, "configured");

	fd = pair_visock(c);
	get_info(fd, &vi);
	vt_assert(success_info(&vi), "handshake did not succeed: %s",
		  info_str(&vi));
	ping_both(c, fd);
	vt_sync(c, "used");
	return fd;
}

static void device_gone_common(struct vt_ctx *c, bool client_side)
{
	bool server = !vt_is_client(c), deleter = server != client_side;
	char rxe[64] = "", how[128] = "";
	struct visock_info vi;
	int fd, ret, status = 0;
	pid_t child = -1;
	long long t0;

	fd = used_rdma_pair(c, NEED_RDMA | (deleter ? NEED_RXE : 0), rxe,
			    sizeof(rxe));
	/* Delete the device while the streams are in full flow. */
	if (deleter) {
		child = fork();
		vt_assert(child >= 0, "fork: %s", strerror(errno));
		if (!child) {
			usleep(GONE_DELAY_MS * 1000);
			t0 = ctl_now_ms();
			rxe_delete(rxe, getenv(RXE_ENV));
			vt_diag("deleting %s during the transfer took %lld ms",
				rxe, ctl_now_ms() - t0);
			_exit(0);
		}
	}
	t0 = ctl_now_ms();
	ret = xfer_tolerant(fd, GONE_XFER_LEN, DEAD_IO_MS, how, sizeof(how));
	if (deleter) {
		vt_assert(waitpid(child, &status, 0) == child &&
			  WIFEXITED(status) && !WEXITSTATUS(status),
			  "deleting %s failed (status 0x%x)", rxe, status);
	}
	vt_sync(c, "deleted");
	get_info(fd, &vi);
	vt_diag("after %lld ms: %s; %s", ctl_now_ms() - t0,
		ret == 0 ? "both streams intact" : how, info_str(&vi));
	vt_assert(ret == 0,
		  "the stream did not continue over TCP after the RDMA device was deleted: %s",
		  how);
	vt_assert((vi.vi_flags & VISOCK_INFO_F_FAILOVER) &&
		  vi.vi_rdma_state == 4,
		  "streams intact, but VISOCK_INFO does not say failed over: %s",
		  info_str(&vi));
	vt_assert(!(vi.vi_flags & VISOCK_INFO_F_LINK_UP),
		  "failed over, but the link is still reported up: %s",
		  info_str(&vi));
	/*
	 * Every byte went either way: RDMA up to the failover, then TCP.
	 * The RDMA counters must not include what TCP carried (if they
	 * did, they would reach the whole stream on their own).
	 */
	check_split(&vi, true);
	check_split(&vi, false);
	close(fd);
	vt_sync(c, "closed");
	if (deleter)
		rxe_restore();
	vt_sync(c, "restored");
	rdma_again(c, "the device came back");
}

static void device_gone_open(struct vt_ctx *c)
{
	device_gone_common(c, false);
}

static void device_gone_client(struct vt_ctx *c)
{
	device_gone_common(c, true);
}

/*
 * A connection whose writer closes gracefully must still deliver every
 * byte when its RDMA path breaks while the close waits for the last
 * writes: the server drops every RoCE packet it receives (iptables, so
 * the server needs Soft-RoCE, like the device tests), the client writes
 * CLOSING_LEN bytes and closes the socket.  Neither the writes nor the
 * closed flag arrive; the client's QP retries until its retry count runs
 * out (about 15 s with the suite's rdma_ack_timeout 19), then fails with
 * the rest of its requests flushed.  The close must wait for the
 * failover to TCP, which resends the stream, instead of releasing the
 * TCP connection as soon as the send queue is empty (which reset the
 * server's side: ECONNRESET, the bytes lost).  Pass: the server reads
 * all of the stream, intact, then end of file, and the client counts a
 * failover; afterwards a new connection uses RDMA.
 */
#define CLOSING_LEN	(32 * 1024)
#define CLOSING_FO_MS	60000	/* retries run out, the failover starts */

static void link_broken_closing(struct vt_ctx *c)
{
	bool server = !vt_is_client(c);
	struct visock_info vi;
	struct timeval tv = { .tv_sec = DEAD_IO_MS / 1000 };
	char rxe[64] = "";
	long long fo0, t0;
	int fd;

	fd = used_rdma_pair(c, NEED_RDMA |
			    (server ? NEED_IPT_DROP | NEED_RXE : 0), rxe,
			    sizeof(rxe));
	if (server) {
		roce_drop(true);
		vt_sync(c, "dropping");
		vt_try(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)),
		       "SO_RCVTIMEO");
		pl_recv(fd, CLOSING_LEN);
		get_info(fd, &vi);
		vt_diag("the whole stream and end of file: %s", info_str(&vi));
		close(fd);
		vt_sync(c, "read");
		roce_drop(false);
	} else {
		vt_sync(c, "dropping");
		fo0 = hu_proc("rdma_failovers");
		t0 = ctl_now_ms();
		pl_send(fd, CLOSING_LEN);
		close(fd);
		vt_assert(hu_proc_wait_ge("rdma_failovers", fo0 + 1,
					  CLOSING_FO_MS) >= fo0 + 1,
			  "no failover %d ms after the server stopped receiving RoCE",
			  CLOSING_FO_MS);
		vt_diag("the closed connection failed over %lld ms after its first write",
			ctl_now_ms() - t0);
		vt_sync(c, "read");
	}
	vt_sync(c, "restored");
	rdma_again(c, "the failover");
}

/*
 * The RDMA device of one host (the server's, or with @client_side the
 * client's) is deleted while connections close.  GC_CLOSING RDMA
 * connections: on each the client writes as much of a stream as the
 * socket takes without blocking (of GC_BIG bytes on the even ones: the
 * server's ring fills up, unread; GC_SMALL on the odd ones) and closes it
 * at once: close() hands the rest to the background close, which waits
 * for the RDMA writes and the closed flag to complete.  The device is
 * deleted right then, while the server starts reading.  GC_SURVIVORS
 * more connections stay open across it.
 *
 * Pass: close() returns; on every closed connection the server reads
 * exactly what the client wrote, then end of stream, or gets an error
 * (never a clean end of stream with bytes missing), within DEAD_IO_MS;
 * the survivors carry a checksummed stream each way (failed over to
 * TCP); after everything is closed no visock socket, connection, QP or
 * registered ring is left on either host; with the device back, a new
 * connection is on RDMA.
 */
#define GC_CLOSING	8
#define GC_SURVIVORS	2
#define GC_BIG		(1024 * 1024)
#define GC_SMALL	(16 * 1024)

/* Client: write stream @len until it would block; bytes written. */
static uint64_t write_some(int fd, uint64_t len)
{
	static uint8_t buf[65536];
	uint64_t done = 0;
	struct pl_tx tx;
	size_t n = 0, off = 0;
	ssize_t r;

	pl_tx_init(&tx, len);
	su_nonblock(fd, true);
	for (;;) {
		if (off == n) {
			off = 0;
			n = pl_tx_fill(&tx, buf, sizeof(buf));
			if (!n)
				break;
		}
		r = send(fd, buf + off, n - off, MSG_NOSIGNAL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			break;
		vt_assert(r > 0, "send: %s", r < 0 ? vt_errname(errno) : "0");
		off += (size_t)r;
		done += (uint64_t)r;
	}
	return done;
}

/*
 * Server: read every connection of @fds up to end of stream or an error;
 * @want[i] bytes were written into it.  Fails on data loss, corrupted
 * data or no end within @ms.
 */
static void read_closed(const int *fds, const uint64_t *want, int n, int ms,
			int *nerr)
{
	long long end = ctl_now_ms() + ms;
	static uint8_t in[65536];
	struct pollfd pfd[GC_CLOSING];
	struct pl_rx rx[GC_CLOSING];
	bool done[GC_CLOSING] = { false };
	int i, left = n;
	ssize_t r;

	for (i = 0; i < n; i++) {
		pl_rx_init(&rx[i], UINT64_MAX);
		su_nonblock(fds[i], true);
	}
	while (left) {
		for (i = 0; i < n; i++) {
			pfd[i].fd = done[i] ? -1 : fds[i];
			pfd[i].events = POLLIN;
		}
		vt_assert(ctl_now_ms() < end,
			  "%d closed connections neither ended nor failed %d ms after the device was deleted",
			  left, ms);
		if (poll(pfd, n, 1000) < 0 && errno != EINTR)
			vt_fail("poll: %s", strerror(errno));
		for (i = 0; i < n; i++) {
			if (done[i] || !pfd[i].revents)
				continue;
			r = recv(fds[i], in, sizeof(in), 0);
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (r < 0) {
				vt_diag("closed connection %d: %s after %llu of %llu bytes",
					i, vt_errname(errno),
					(unsigned long long)rx[i].pos,
					(unsigned long long)want[i]);
				(*nerr)++;
			} else if (r > 0) {
				pl_check(&rx[i], in, (size_t)r);
				continue;
			} else {
				vt_assert(rx[i].pos == want[i],
					  "closed connection %d: end of stream after %llu of the %llu bytes written: data lost",
					  i, (unsigned long long)rx[i].pos,
					  (unsigned long long)want[i]);
			}
			done[i] = true;
			left--;
		}
	}
}

static void device_gone_close_common(struct vt_ctx *c, bool client_side)
{
	bool server = !vt_is_client(c), deleter = server != client_side;
	int fds[GC_CLOSING], surv[GC_SURVIVORS], i, lfd = -1, port = 0;
	int status = 0, nerr = 0, ret;
	long long sockets0, t0;
	uint64_t want[GC_CLOSING];
	char rxe[64] = "", how[128] = "";
	struct visock_info vi;
	pid_t child = -1;

	need(c, NEED_RDMA | (deleter ? NEED_RXE : 0), rxe, sizeof(rxe));
	set_knob(ENABLE_PATH, 1);
	vt_assert(hu_proc_wait("sockets_closing", 0, 45000) == 0,
		  "%lld sockets still closing from before",
		  hu_proc("sockets_closing"));
	sockets0 = hu_proc("sockets");
	vt_sync(c, "configured");

	if (vt_is_client(c)) {
		port = su_recv_port(c);
	} else {
		lfd = su_listen(VT_FAMILY_VISOCK, false, 16, SOCK_CLOEXEC);
		su_send_port(c, lfd);
	}
	for (i = 0; i < GC_SURVIVORS + GC_CLOSING; i++) {
		int fd = vt_is_client(c) ?
			 su_connect(c, VT_FAMILY_VISOCK, false, port) :
			 su_accept(lfd, SOCK_CLOEXEC);

		get_info(fd, &vi);
		vt_assert(success_info(&vi), "connection %d not on RDMA: %s",
			  i, info_str(&vi));
		/* Connections are made one after the other: same order. */
		ping_both(c, fd);
		if (i < GC_SURVIVORS)
			surv[i] = fd;
		else
			fds[i - GC_SURVIVORS] = fd;
	}
	if (lfd >= 0)
		close(lfd);
	vt_sync(c, "connected");

	/* Client: write and close; the server learns what was written. */
	if (vt_is_client(c)) {
		for (i = 0; i < GC_CLOSING; i++) {
			want[i] = write_some(fds[i], i % 2 ? GC_SMALL : GC_BIG);
			vt_send(c, "W %llu", (unsigned long long)want[i]);
		}
		vt_diag("written before close(): %llu (big), %llu (small) bytes",
			(unsigned long long)want[0],
			(unsigned long long)want[1]);
		t0 = ctl_now_ms();
		for (i = 0; i < GC_CLOSING; i++)
			close(fds[i]);
		vt_diag("%d close() calls returned in %lld ms", GC_CLOSING,
			ctl_now_ms() - t0);
	} else {
		for (i = 0; i < GC_CLOSING; i++)
			want[i] = (uint64_t)vt_recv_num(c, "W");
	}
	vt_sync(c, "closing");
	vt_diag("closing: %lld sockets closing here",
		hu_proc("sockets_closing"));
	if (deleter) {
		child = fork();
		vt_assert(child >= 0, "fork: %s", strerror(errno));
		if (!child) {
			t0 = ctl_now_ms();
			rxe_delete(rxe, getenv(RXE_ENV));
			vt_diag("deleting %s while %d connections closed took %lld ms",
				rxe, GC_CLOSING, ctl_now_ms() - t0);
			_exit(0);
		}
	}
	if (server) {
		read_closed(fds, want, GC_CLOSING, DEAD_IO_MS, &nerr);
		vt_diag("closed connections: %d ended with an error, %d with all data and EOF",
			nerr, GC_CLOSING - nerr);
		for (i = 0; i < GC_CLOSING; i++)
			close(fds[i]);
	}
	/* The server may read for up to DEAD_IO_MS, longer than a sync. */
	if (server) {
		vt_send(c, "read");
	} else {
		char line[64];

		vt_assert(ctl_readln(c->ctl, line, sizeof(line),
				     DEAD_IO_MS + MARGIN_MS) >= 0 &&
			  !strcmp(line, "read"),
			  "the server did not finish reading");
	}
	if (deleter)
		vt_assert(waitpid(child, &status, 0) == child &&
			  WIFEXITED(status) && !WEXITSTATUS(status),
			  "deleting %s failed (status 0x%x)", rxe, status);
	vt_sync(c, "deleted");

	/* The survivors carry on over TCP. */
	for (i = 0; i < GC_SURVIVORS; i++) {
		ret = xfer_tolerant(surv[i], XFER_LEN, DEAD_IO_MS, how,
				    sizeof(how));
		get_info(surv[i], &vi);
		vt_assert(ret == 0, "survivor %d: %s; %s", i, how,
			  info_str(&vi));
		vt_assert(vi.vi_flags & VISOCK_INFO_F_FAILOVER,
			  "survivor %d: streams intact, but not failed over: %s",
			  i, info_str(&vi));
		close(surv[i]);
	}
	vt_sync(c, "survived");

	/* Nothing left behind. */
	vt_assert(hu_proc_wait("sockets_closing", 0, 45000) == 0,
		  "%lld sockets still closing 45 s later",
		  hu_proc("sockets_closing"));
	vt_assert(hu_proc_wait("sockets", sockets0, 15000) == sockets0,
		  "%lld visock sockets, %lld before the test",
		  hu_proc("sockets"), sockets0);
	vt_assert(hu_proc_wait("lgr_connections", 0, 15000) == 0,
		  "lgr_connections %lld after close",
		  hu_proc("lgr_connections"));
	vt_assert(hu_proc_wait("qps", 0, 30000) == 0, "%lld QPs left",
		  hu_proc("qps"));
	vt_assert(hu_proc_wait("registered_bytes", 0, 15000) == 0,
		  "%lld bytes still registered", hu_proc("registered_bytes"));
	vt_sync(c, "clean");
	if (deleter)
		rxe_restore();
	vt_sync(c, "restored");
	rdma_again(c, "the device came back");
}

static void device_gone_close_server(struct vt_ctx *c)
{
	device_gone_close_common(c, false);
}

static void device_gone_close_client(struct vt_ctx *c)
{
	device_gone_close_common(c, true);
}

/* ---- the table ---- */

static const struct vt_test fixed_tests[] = {
	{ "rdma_ready", rdma_ready, rdma_ready, 0,
	  "visock and an ACTIVE RDMA port on both hosts" },
	{ "success", success, success, 120,
	  "handshake succeeds, client host connects" },
	{ "success_reverse", success_reverse, success_reverse, 120,
	  "handshake succeeds, server host connects" },
	{ "success_v6", success_v6, success_v6, 120,
	  "handshake succeeds over IPv6" },
	{ "success_nonblock", success_nonblock, success_nonblock, 120,
	  "non-blocking connect: POLLOUT once the handshake settled" },
	{ "device_gone_open", device_gone_open, device_gone_open, 180,
	  "the server's RDMA device is deleted under an open connection" },
	{ "device_gone_client", device_gone_client, device_gone_client, 180,
	  "the client's RDMA device is deleted under an open connection" },
	{ "link_broken_closing", link_broken_closing, link_broken_closing, 180,
	  "a closed connection's link breaks before its last bytes went" },
	{ "device_gone_close_server", device_gone_close_server,
	  device_gone_close_server, 300,
	  "the server's RDMA device is deleted while connections close" },
	{ "device_gone_close_client", device_gone_close_client,
	  device_gone_close_client, 300,
	  "the client's RDMA device is deleted while connections close" },
};

int main(int argc, char **argv)
{
	size_t nfixed = ARRAY_SIZE(fixed_tests), nfb = ARRAY_SIZE(fb_cases);
	size_t i, n = 0, max;
	struct vt_test *tests;
	char name[128];

	dirty = mmap(NULL, sizeof(*dirty), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (dirty == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memset(dirty, 0, sizeof(*dirty));
	if (hu_read_int(ENABLE_PATH, &base.enable))
		base.enable = -1;
	if (hu_read_int(TIMEOUT_PATH, &base.timeout))
		base.timeout = -1;
	if (hu_read_int(RAW_PATH, &base.raw))
		base.raw = -1;
	if (hu_read_int(DELAY_PATH, &base.delay))
		base.delay = -1;
	vt_set_cleanup(hs_cleanup);

	max = nfixed + nfb + 2 * ARRAY_SIZE(scenarios);
	tests = calloc(max, sizeof(*tests));
	if (!tests)
		return 1;
	for (i = 0; i < nfixed; i++)
		tests[n++] = fixed_tests[i];
	for (i = 0; i < nfb; i++) {
		tests[n].name = fb_cases[i].name;
		tests[n].run_client = fb_test;
		tests[n].run_server = fb_test;
		tests[n].timeout = 120;
		tests[n++].desc = fb_cases[i].desc;
	}
	for (i = 0; i < 2 * ARRAY_SIZE(scenarios); i++) {
		bool as_client = i < ARRAY_SIZE(scenarios);
		const struct scenario *s =
			&scenarios[i % ARRAY_SIZE(scenarios)];

		if ((as_client ? s->as_client : s->as_server).kind == O_NONE)
			continue;
		snprintf(name, sizeof(name), "%s%s",
			 as_client ? HOSTILE_CLIENT : HOSTILE_SERVER, s->name);
		tests[n].name = strdup(name);
		tests[n].run_client = hostile;
		tests[n].run_server = hostile;
		tests[n].timeout = s->mut == M_REPLAY_REQ ||
				   s->mut == M_REPLAY_CONFIRM ||
				   s->mut == M_CONFIRM_TWICE ? 150 : 60;
		tests[n++].desc = s->desc;
	}
	return vt_main(argc, argv, "visock_hs", tests, n);
}
