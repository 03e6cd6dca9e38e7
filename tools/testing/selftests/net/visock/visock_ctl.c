// SPDX-License-Identifier: GPL-2.0
/*
 * visockctl against live sockets: what the tool prints must match what
 * the test did.  Runs in the handshake pass (net.visock.enable=1 on both
 * hosts, an ACTIVE RDMA port on both; the runner only runs these after
 * hs.rdma_ready passed).
 *
 * sockets_match	3 connections in RDMA mode and 2 that fell back (the
 *			client disabled visock for them): `visockctl sockets
 *			--json` on both hosts lists exactly these, each with
 *			its inode, ports, uid, mode, fallback reason and byte
 *			counters equal to the bytes sent; --rdma and --tcp
 *			filter; -l shows the listener; `links` shows the QPs
 *			of the RDMA connections with their peer QPNs
 * stats_match		`stats --reset` zeroes the counters; after 2 RDMA
 *			and 1 fallback connection the counters are exactly
 *			what they did (connections, reasons, handshakes,
 *			bytes), gauges show the QPs while they exist and
 *			none after close; /proc/net/visock agrees
 * netns_isolation	a connection in another network namespace shows
 *			there (sockets, stats) and not here; `visockctl
 *			enable/disable` there does not change this one;
 *			`devices` there shows no GID of this namespace
 * tracepoints		events/visock: handshake start and result, fallback
 *			with its reason, link up and down, for connections
 *			the test made
 * links_peers		`links --json` (the genl link dump) lists exactly
 *			the RDMA connections, with the QPNs of VISOCK_INFO,
 *			state up, registered memory and the peer's GID;
 *			`peers --json` groups them under that one peer GID
 * monitor_events	`visockctl monitor --json` started before the
 *			connections prints a link_up event with the QPNs of
 *			VISOCK_INFO, a fallback event with the reason of
 *			each end (disabled / peer_no_visock), an abort with
 *			ECONNRESET on the server when the client resets a
 *			connection and, after the close, link_down
 * filters		src/dst ADDR, sport/dport, mode filters of
 *			`sockets` return exactly the matching connections,
 *			IPv4 and (with a peer IPv6 address) IPv6
 * transforms_list	local: `transforms --json` and the table list every
 *			pair of enum visock_xform with its name, algorithm,
 *			sizes and a driver that /proc/crypto shows for that
 *			algorithm with the same priority and async flag
 *
 * netns_isolation also checks --netns NAME (a bind mount in /run/netns
 * like `ip netns add`): that namespace's sockets, not this one's; and
 * stats_match the gauges links_up and netns_rdma_devices.
 *
 * The tool is $VISOCKCTL, else $VISOCK_SRC/tools/visock/visockctl, else
 * visockctl from PATH.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <linux/visock.h>

#include "harness.h"
#include "hostutil.h"
#include "ktap.h"
#include "sockutil.h"

#define ENABLE_PATH	"/proc/sys/net/visock/enable"
#define PROC_PATH	"/proc/net/visock"
#define TRACE_DIR	"/sys/kernel/tracing"
#define OUT_MAX		(256 * 1024)
#define N_RDMA		3
#define N_FB		2
#define MAX_CONNS	8

/* ---- host state ---- */

static int orig_enable = -1;

static int write_text(const char *path, const char *text)
{
	ssize_t n;
	int fd;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

static void set_enable(int val)
{
	vt_assert(!write_text(ENABLE_PATH, val ? "1\n" : "0\n"),
		  "writing %s: %s", ENABLE_PATH, strerror(errno));
}

static void ctl_cleanup(const struct vt_ctx *c)
{
	(void)c;
	if (orig_enable >= 0)
		write_text(ENABLE_PATH, orig_enable ? "1\n" : "0\n");
	write_text(TRACE_DIR "/events/visock/enable", "0\n");
}

/* ---- running visockctl ---- */

/* Run visockctl with @args; its output (stdout and stderr) in @out. */
static int run_ctl_status(char *out, size_t size, const char *args)
{
	char cmd[1024];
	size_t len = 0;
	FILE *f;
	int st;

	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", hu_visockctl_path(), args);
	f = popen(cmd, "r");
	vt_assert(f, "popen(%s): %s", cmd, strerror(errno));
	while (len + 1 < size) {
		size_t n = fread(out + len, 1, size - 1 - len, f);

		if (!n)
			break;
		len += n;
	}
	out[len] = '\0';
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Run it and fail the test unless it exits 0. */
static char *run_ctl(const char *args)
{
	char *out = malloc(OUT_MAX);
	int st;

	vt_assert(out, "out of memory");
	st = run_ctl_status(out, OUT_MAX, args);
	vt_assert(st == 0, "visockctl %s: exit %d: %.400s", args, st, out);
	return out;
}

/* ---- reading its JSON (one object per line) ---- */

/* The line of the object with "@key":@val, or NULL. */
static const char *json_find(const char *out, const char *key,
			     unsigned long long val)
{
	char pat[128];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":%llu,", key, val);
	p = strstr(out, pat);
	if (!p) {
		snprintf(pat, sizeof(pat), "\"%s\":%llu}", key, val);
		p = strstr(out, pat);
	}
	if (!p)
		return NULL;
	while (p > out && p[-1] != '\n')
		p--;
	return p;
}

static bool json_has_num(const char *line, const char *key)
{
	char pat[128];
	const char *end = strchr(line, '\n');
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(line, pat);
	return p && (!end || p < end);
}

static unsigned long long json_num(const char *line, const char *key)
{
	char pat[128];
	const char *end = strchr(line, '\n');
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(line, pat);
	vt_assert(p && (!end || p < end), "no \"%s\" in: %.300s", key, line);
	return strtoull(p + strlen(pat), NULL, 10);
}

static void json_str(const char *line, const char *key, char *buf,
		     size_t size)
{
	char pat[128];
	const char *end = strchr(line, '\n');
	const char *p, *q;

	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	p = strstr(line, pat);
	vt_assert(p && (!end || p < end), "no \"%s\" in: %.300s", key, line);
	p += strlen(pat);
	q = strchr(p, '"');
	vt_assert(q && (size_t)(q - p) < size, "bad \"%s\" in: %.300s", key,
		  line);
	memcpy(buf, p, q - p);
	buf[q - p] = '\0';
}

/* Objects in a JSON array printed one per line. */
static unsigned int json_count(const char *out)
{
	unsigned int n = 0;
	const char *p = out;

	while ((p = strstr(p, "\n  {"))) {
		n++;
		p++;
	}
	return n;
}

/* ---- sockets ---- */

static int local_port(int fd)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);

	vt_try(getsockname(fd, (struct sockaddr *)&sin, &len), "getsockname");
	return ntohs(sin.sin_port);
}

static int peer_port(int fd)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);

	vt_try(getpeername(fd, (struct sockaddr *)&sin, &len), "getpeername");
	return ntohs(sin.sin_port);
}

static unsigned int sock_mode(int fd)
{
	unsigned int mode = ~0u;
	socklen_t len = sizeof(mode);

	vt_try(getsockopt(fd, SOL_VISOCK, VISOCK_MODE, &mode, &len),
	       "getsockopt(VISOCK_MODE)");
	return mode;
}

static void fill(char *buf, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (char)(seed * 31 + i * 7);
}

struct conn {
	int fd;
	size_t bytes;		/* payload the client sent */
	bool rdma;		/* expected in RDMA mode */
	int cport;		/* the client's port */
};

/*
 * Check the JSON line of @k's socket.  @sender: this end sent the bytes;
 * @reason: expected fallback reason when not in RDMA mode.
 */
static void check_sock_line(const char *out, const struct conn *k,
			    bool sender, const char *reason)
{
	unsigned long long sent, rcvd, tsent, trcvd, n = k->bytes;
	unsigned long ino = hu_sock_ino(k->fd);
	char mode[32], fb[32], local[96], peer[96], want[96];
	const char *line = json_find(out, "inode", ino);

	vt_assert(line, "socket inode %lu (port %d) not listed:\n%.1500s",
		  ino, local_port(k->fd), out);
	json_str(line, "mode", mode, sizeof(mode));
	json_str(line, "fallback", fb, sizeof(fb));
	json_str(line, "local", local, sizeof(local));
	json_str(line, "peer", peer, sizeof(peer));
	vt_assert(!strcmp(mode, k->rdma ? "rdma" : "tcp"),
		  "inode %lu: mode %s, getsockopt says %u, expected %s", ino,
		  mode, sock_mode(k->fd), k->rdma ? "rdma" : "tcp");
	vt_assert(!strcmp(fb, k->rdma ? "none" : reason),
		  "inode %lu: fallback %s, expected %s", ino, fb,
		  k->rdma ? "none" : reason);
	snprintf(want, sizeof(want), ":%d", local_port(k->fd));
	vt_assert(strstr(local, want), "inode %lu: local %s, port is %d",
		  ino, local, local_port(k->fd));
	snprintf(want, sizeof(want), ":%d", peer_port(k->fd));
	vt_assert(strstr(peer, want), "inode %lu: peer %s, peer port is %d",
		  ino, peer, peer_port(k->fd));
	vt_assert(json_num(line, "uid") == getuid(), "inode %lu: uid %llu",
		  ino, json_num(line, "uid"));

	sent = json_num(line, "rdma_bytes_sent");
	rcvd = json_num(line, "rdma_bytes_rcvd");
	tsent = json_num(line, "tcp_bytes_sent");
	trcvd = json_num(line, "tcp_bytes_rcvd");
	if (k->rdma) {
		/* Every byte went by RDMA; TCP carried the handshake only. */
		vt_assert(sender ? sent == n && rcvd == 0 :
				   rcvd == n && sent == 0,
			  "inode %lu: rdma sent %llu rcvd %llu, %s %llu bytes",
			  ino, sent, rcvd, sender ? "sent" : "received", n);
		vt_assert(tsent < 1024 && trcvd < 1024,
			  "inode %lu: %llu/%llu TCP bytes in RDMA mode", ino,
			  tsent, trcvd);
		vt_assert(json_num(line, "local_qpn") != 0 &&
			  json_num(line, "peer_qpn") != 0,
			  "inode %lu: RDMA without QPNs: %.300s", ino, line);
		vt_assert(json_has_num(line, "rx_ring_used"),
			  "inode %lu: no ring fill levels: %.300s", ino, line);
	} else {
		/* TCP counts retransmissions in bytes_sent. */
		vt_assert(sent == 0 && rcvd == 0,
			  "inode %lu: fallback with RDMA bytes %llu/%llu", ino,
			  sent, rcvd);
		vt_assert(sender ? tsent >= n && tsent <= n + n / 2 + 4096 :
				   trcvd == n,
			  "inode %lu: tcp sent %llu rcvd %llu, %s %llu bytes",
			  ino, tsent, trcvd, sender ? "sent" : "received", n);
	}
}

/* Client: connect @n sockets, write their bytes, tell the server. */
static void client_conns(struct vt_ctx *c, int port, struct conn *k,
			 unsigned int first, unsigned int n, bool rdma)
{
	static char buf[256 * 1024];
	unsigned int i;

	if (!rdma)
		set_enable(0);
	for (i = first; i < first + n; i++) {
		k[i].fd = su_connect(c, VT_FAMILY_VISOCK, false, port);
		k[i].rdma = rdma;
		k[i].bytes = 10000 * (i + 1) + i;
		k[i].cport = local_port(k[i].fd);
		vt_assert(sock_mode(k[i].fd) ==
			  (rdma ? VISOCK_MODE_RDMA : VISOCK_MODE_TCP),
			  "connection %u: mode %u (getsockopt)", i,
			  sock_mode(k[i].fd));
		fill(buf, k[i].bytes, i);
		su_write_all(k[i].fd, buf, k[i].bytes);
		vt_send(c, "CONN %d %zu %d", k[i].cport, k[i].bytes, rdma);
	}
	if (!rdma)
		set_enable(1);
}

/* Server: accept @n connections announced by client_conns(). */
static void server_conns(struct vt_ctx *c, int lfd, struct conn *k,
			 unsigned int n)
{
	static char buf[256 * 1024], want[256 * 1024];
	char line[CTL_LINE_MAX];
	int fds[MAX_CONNS];
	unsigned int i, j;

	for (i = 0; i < n; i++) {
		int cport, rdma;
		size_t bytes;

		vt_recv(c, line, sizeof(line));
		vt_assert(sscanf(line, "CONN %d %zu %d", &cport, &bytes,
				 &rdma) == 3, "bad line '%s'", line);
		fds[i] = su_accept(lfd, 0);
		k[i].fd = -1;
		k[i].cport = cport;
		k[i].bytes = bytes;
		k[i].rdma = rdma;
	}
	/* Match by the client's port. */
	for (i = 0; i < n; i++) {
		int p = peer_port(fds[i]);

		for (j = 0; j < n; j++)
			if (k[j].cport == p && k[j].fd < 0)
				break;
		vt_assert(j < n, "accepted a connection from port %d that the client did not announce",
			  p);
		k[j].fd = fds[i];
	}
	for (i = 0; i < n; i++) {
		su_read_all(k[i].fd, buf, k[i].bytes);
		fill(want, k[i].bytes, i);
		vt_assert(!memcmp(buf, want, k[i].bytes),
			  "connection %u: data differs", i);
	}
}

/*
 * @nrdma connections in RDMA mode, then @nfb that fall back (the client
 * disables visock for them), their bytes written and read: @k in the
 * client's order on both ends.  Return: the server's listener, or -1.
 */
static int make_conns(struct vt_ctx *c, struct conn *k, unsigned int nrdma,
		      unsigned int nfb)
{
	int lfd = -1, port;

	if (vt_is_client(c)) {
		port = su_recv_port(c);
		client_conns(c, port, k, 0, nrdma, true);
		client_conns(c, port, k, nrdma, nfb, false);
		vt_expect(c, "READ");
	} else {
		lfd = su_listen(VT_FAMILY_VISOCK, false, 16, 0);
		su_send_port(c, lfd);
		server_conns(c, lfd, k, nrdma + nfb);
		vt_send(c, "READ");
	}
	return lfd;
}

/* Close what make_conns() opened. */
static void close_conns(const struct conn *k, unsigned int n, int lfd)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (k[i].fd >= 0)
			close(k[i].fd);
	if (lfd >= 0)
		close(lfd);
}

static void check_links(const struct conn *k, unsigned int n)
{
	char *out = run_ctl("links --json");
	unsigned int i, nr = 0;

	for (i = 0; i < n; i++) {
		unsigned int mode_qpn;
		socklen_t len;
		struct visock_info vi;
		const char *line;

		if (!k[i].rdma)
			continue;
		nr++;
		memset(&vi, 0, sizeof(vi));
		len = sizeof(vi);
		vt_try(getsockopt(k[i].fd, SOL_VISOCK, VISOCK_INFO, &vi, &len),
		       "getsockopt(VISOCK_INFO)");
		mode_qpn = vi.vi_local_qpn;
		line = json_find(out, "inode", hu_sock_ino(k[i].fd));
		vt_assert(line, "links: no link of inode %lu:\n%.1500s",
			  hu_sock_ino(k[i].fd), out);
		vt_assert(json_num(line, "qpn") == mode_qpn &&
			  json_num(line, "peer_qpn") == vi.vi_peer_qpn,
			  "links: qpn %llu/%llu, VISOCK_INFO says %u/%u",
			  json_num(line, "qpn"), json_num(line, "peer_qpn"),
			  mode_qpn, vi.vi_peer_qpn);
		vt_assert(strstr(line, "\"state\":\"up\""),
			  "links: link not up: %.300s", line);
		vt_assert(json_num(line, "registered_bytes") > 0,
			  "links: no registered memory: %.300s", line);
	}
	vt_assert(json_count(out) == nr,
		  "links: %u links listed, this host has %u RDMA connections:\n%.1500s",
		  json_count(out), nr, out);
	free(out);
}

/* Checks of one end; both ends run them with their own view. */
static void check_sockets(struct conn *k, unsigned int n, bool client,
			  int lfd, int port)
{
	const char *reason = client ? "disabled" : "peer_no_visock";
	unsigned int i, nr = 0, nf = 0;
	char *out, args[64];

	out = run_ctl("sockets --json");
	for (i = 0; i < n; i++)
		check_sock_line(out, &k[i], client, reason);
	vt_assert(json_count(out) == n,
		  "sockets: %u listed, this host has %u connections:\n%.2000s",
		  json_count(out), n, out);
	free(out);

	out = run_ctl("sockets --rdma --json");
	for (i = 0; i < n; i++) {
		bool listed = json_find(out, "inode", hu_sock_ino(k[i].fd));

		vt_assert(listed == k[i].rdma, "sockets --rdma: inode %lu %s",
			  hu_sock_ino(k[i].fd), listed ? "listed" : "missing");
		nr += k[i].rdma;
	}
	vt_assert(json_count(out) == nr, "sockets --rdma: %u listed, %u expected",
		  json_count(out), nr);
	free(out);

	out = run_ctl("sockets --tcp --json");
	for (i = 0; i < n; i++) {
		bool listed = json_find(out, "inode", hu_sock_ino(k[i].fd));

		vt_assert(listed == !k[i].rdma, "sockets --tcp: inode %lu %s",
			  hu_sock_ino(k[i].fd), listed ? "listed" : "missing");
		nf += !k[i].rdma;
	}
	vt_assert(json_count(out) == nf, "sockets --tcp: %u listed, %u expected",
		  json_count(out), nf);
	free(out);

	/* The server's port is local there, the peer's here. */
	snprintf(args, sizeof(args), "sockets --port %d --json", port);
	out = run_ctl(args);
	vt_assert(json_count(out) == n, "%s: %u listed, %u expected", args,
		  json_count(out), n);
	free(out);
	snprintf(args, sizeof(args), "sockets --port %d --json",
		 port == 65535 ? 1 : port + 1);
	out = run_ctl(args);
	for (i = 0; i < n; i++)
		vt_assert(!json_find(out, "inode", hu_sock_ino(k[i].fd)) ||
			  k[i].cport == (port == 65535 ? 1 : port + 1),
			  "%s lists inode %lu", args, hu_sock_ino(k[i].fd));
	free(out);

	if (lfd >= 0) {
		const char *line;
		char state[32];

		out = run_ctl("sockets -l --json");
		line = json_find(out, "inode", hu_sock_ino(lfd));
		vt_assert(line, "sockets -l: listener not listed:\n%.1000s",
			  out);
		json_str(line, "state", state, sizeof(state));
		vt_assert(!strcmp(state, "LISTEN"), "listener in state %s",
			  state);
		vt_assert(json_count(out) == 1, "sockets -l: %u listed",
			  json_count(out));
		free(out);
	}
	check_links(k, n);
}

static void sockets_match(struct vt_ctx *c)
{
	struct conn k[MAX_CONNS];
	unsigned int n = N_RDMA + N_FB;
	int lfd;

	if (hu_read_int(ENABLE_PATH, &orig_enable))
		vt_skip("visock not loaded");
	lfd = make_conns(c, k, N_RDMA, N_FB);
	/* The server's port: its listener's, the client's peer port. */
	check_sockets(k, n, vt_is_client(c), lfd,
		      lfd >= 0 ? su_port(lfd) : peer_port(k[0].fd));
	vt_sync(c, "checked");
	close_conns(k, n, lfd);
}

/* ---- statistics ---- */

static void check_stat(const char *out, const char *key,
		       unsigned long long lo, unsigned long long hi)
{
	unsigned long long v = json_num(out, key);

	vt_assert(v >= lo && v <= hi, "stats: %s = %llu, expected %llu..%llu",
		  key, v, lo, hi);
}

/* The same counter in /proc/net/visock. */
static unsigned long long proc_stat(const char *name)
{
	char line[256], key[128];
	unsigned long long v;
	FILE *f = fopen(PROC_PATH, "r");

	vt_assert(f, "%s: %s", PROC_PATH, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%127s %llu", key, &v) == 2 &&
		    !strcmp(key, name)) {
			fclose(f);
			return v;
		}
	}
	fclose(f);
	vt_fail("%s has no %s", PROC_PATH, name);
}

static const char *const zeroed[] = {
	"connections_rdma", "connections_fallback", "handshakes_started",
	"handshakes_done", "handshakes_aborted", "rdma_bytes_sent",
	"rdma_bytes_rcvd", "tcp_bytes_sent", "tcp_bytes_rcvd",
	"rdma_wr_posted", "rdma_wc", "cursor_msgs_sent", "cursor_msgs_rcvd",
	"fallback_disabled", "fallback_peer_no_visock",
};

static void stats_match(struct vt_ctx *c)
{
	unsigned long long rdma = 0, fb = 0, slack = 64 * 1024;
	struct conn k[MAX_CONNS];
	unsigned int i, n = 3;
	int lfd = -1;
	char *out;

	if (hu_read_int(ENABLE_PATH, &orig_enable))
		vt_skip("visock not loaded");
	/* Let connections of earlier tests finish closing. */
	vt_sync(c, "quiet");
	out = run_ctl("stats --reset --json");
	for (i = 0; i < ARRAY_SIZE(zeroed); i++)
		check_stat(out, zeroed[i], 0, 0);
	vt_assert(proc_stat("connections_rdma") == 0 &&
		  proc_stat("rdma_bytes_sent") == 0,
		  "%s not reset", PROC_PATH);
	free(out);
	vt_sync(c, "reset");

	lfd = make_conns(c, k, 2, 1);
	for (i = 0; i < n; i++) {
		if (k[i].rdma)
			rdma += k[i].bytes;
		else
			fb += k[i].bytes;
	}

	out = run_ctl("stats --json");
	check_stat(out, "connections_rdma", 2, 2);
	check_stat(out, "connections_fallback", 1, 1);
	check_stat(out, "handshakes_started", 2, 2);
	check_stat(out, "handshakes_done", 2, 2);
	check_stat(out, "handshakes_aborted", 0, 0);
	check_stat(out, vt_is_client(c) ? "fallback_disabled" :
		   "fallback_peer_no_visock", 1, 1);
	check_stat(out, vt_is_client(c) ? "fallback_peer_no_visock" :
		   "fallback_disabled", 0, 0);
	check_stat(out, vt_is_client(c) ? "rdma_bytes_sent" :
		   "rdma_bytes_rcvd", rdma, rdma + slack);
	check_stat(out, vt_is_client(c) ? "tcp_bytes_sent" :
		   "tcp_bytes_rcvd", fb, fb);
	/* A receiver of little data may have posted nothing. */
	check_stat(out, "rdma_wr_posted", vt_is_client(c) ? 2 : 0, ~0ULL);
	check_stat(out, "rdma_wc", 1, ~0ULL);
	/* Gauges: the two connections share one QP or have one each. */
	check_stat(out, "qps", 1, 2);
	check_stat(out, "links_up", 1, 2);
	check_stat(out, "lgr_connections", 2, 2);
	check_stat(out, "netns_rdma_devices", 1, ~0ULL);
	check_stat(out, "registered_bytes", 1, ~0ULL);
	check_stat(out, "sockets", n + (lfd >= 0), n + (lfd >= 0));
	vt_assert(json_num(out, "connections_rdma") ==
		  proc_stat("connections_rdma") &&
		  json_num(out, "fallback_disabled") ==
		  proc_stat("fallback_disabled"),
		  "stats and %s disagree", PROC_PATH);
	free(out);
	vt_sync(c, "checked");

	close_conns(k, n, lfd);
	/*
	 * The links go away once both ends closed; a QP's rings are
	 * unregistered as it is freed, just after it left the qps gauge.
	 */
	for (i = 0; i < 100; i++) {
		out = run_ctl("stats --json");
		if (json_num(out, "qps") == 0 && json_num(out, "sockets") == 0 &&
		    json_num(out, "registered_bytes") == 0)
			break;
		free(out);
		out = NULL;
		usleep(100 * 1000);
	}
	if (!out)
		out = run_ctl("stats --json");
	check_stat(out, "qps", 0, 0);
	check_stat(out, "links_up", 0, 0);
	check_stat(out, "registered_bytes", 0, 0);
	check_stat(out, "sockets", 0, 0);
	free(out);
	vt_sync(c, "closed");
}

/* ---- namespaces ---- */

static void lo_up(void)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (!ioctl(fd, SIOCGIFFLAGS, &ifr)) {
		ifr.ifr_flags |= IFF_UP;
		ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	close(fd);
}

/* Child in a new namespace: report failures on @wfd, then exit. */
__printf(2, 3) static void ns_fail(int wfd, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(msg) - 1)
		n = sizeof(msg) - 1;
	n = write(wfd, msg, n);
	_exit(n > 0 ? 1 : 2);
}

/*
 * The part that runs in the other namespace.  Writes "ino ino ino\n" to
 * @wfd, waits for a byte on @rfd, checks, and exits 0 or writes why not.
 */
static void ns_child(int wfd, int rfd, int parent_enable)
{
	static char out[OUT_MAX], buf[20000];
	int lfd, cfd, sfd, st, en;
	const size_t n = sizeof(buf);
	char msg[128], *line;

	if (unshare(CLONE_NEWNET))
		ns_fail(wfd, "unshare(CLONE_NEWNET): %s", strerror(errno));
	lo_up();
	/* The switch of this namespace only. */
	st = run_ctl_status(out, sizeof(out), parent_enable ? "disable" :
			    "enable");
	if (st || hu_read_int(ENABLE_PATH, &en) || en == parent_enable)
		ns_fail(wfd, "visockctl %s in the new namespace: exit %d, enable now %d: %s",
			parent_enable ? "disable" : "enable", st, en, out);
	/* No RDMA device here: the connection falls back either way. */
	st = run_ctl_status(out, sizeof(out), "disable");
	if (st)
		ns_fail(wfd, "visockctl disable: exit %d: %s", st, out);

	lfd = socket(AF_VISOCK, SOCK_STREAM, VISOCKPROTO_TCP4);
	if (lfd < 0)
		ns_fail(wfd, "socket: %s", strerror(errno));
	{
		struct sockaddr_in sin = { .sin_family = AF_INET };
		socklen_t len = sizeof(sin);

		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) ||
		    listen(lfd, 4) ||
		    getsockname(lfd, (struct sockaddr *)&sin, &len))
			ns_fail(wfd, "listen: %s", strerror(errno));
		cfd = socket(AF_VISOCK, SOCK_STREAM, VISOCKPROTO_TCP4);
		if (cfd < 0 ||
		    connect(cfd, (struct sockaddr *)&sin, sizeof(sin)))
			ns_fail(wfd, "connect: %s", strerror(errno));
		sfd = accept(lfd, NULL, NULL);
		if (sfd < 0)
			ns_fail(wfd, "accept: %s", strerror(errno));
	}
	memset(buf, 'x', n);
	if (write(cfd, buf, n) != (ssize_t)n)
		ns_fail(wfd, "write: %s", strerror(errno));
	{
		size_t got = 0;

		while (got < n) {
			ssize_t r = read(sfd, buf, n - got);

			if (r <= 0)
				ns_fail(wfd, "read: %zd %s", r, strerror(errno));
			got += r;
		}
	}

	st = run_ctl_status(out, sizeof(out), "sockets -a --json");
	if (st || json_count(out) != 3)
		ns_fail(wfd, "sockets in the new namespace: exit %d, %u listed, expected 3:\n%.1500s",
			st, json_count(out), out);
	{
		int fds[3] = { lfd, cfd, sfd };
		struct stat sst;
		int i;

		for (i = 0; i < 3; i++) {
			if (fstat(fds[i], &sst) ||
			    !json_find(out, "inode", sst.st_ino))
				ns_fail(wfd, "socket inode %lu not listed in its namespace:\n%.1500s",
					(unsigned long)sst.st_ino, out);
		}
		if (fstat(cfd, &sst))
			ns_fail(wfd, "fstat: %s", strerror(errno));
		line = (char *)json_find(out, "inode", sst.st_ino);
		if (!strstr(line, "\"mode\":\"tcp\"") ||
		    !strstr(line, "\"fallback\":\"disabled\""))
			ns_fail(wfd, "client socket: %.400s", line);
	}
	st = run_ctl_status(out, sizeof(out), "stats --json");
	if (st || !strstr(out, "\"connections_fallback\":2,") ||
	    !strstr(out, "\"connections_rdma\":0,") ||
	    !strstr(out, "\"handshakes_started\":0,") ||
	    !strstr(out, "\"netns_rdma_devices\":0,") ||
	    !strstr(out, "\"links_up\":0"))
		ns_fail(wfd, "stats in the new namespace: exit %d: %s", st, out);
	snprintf(msg, sizeof(msg), "\"tcp_bytes_sent\":%zu,", n);
	if (!strstr(out, msg))
		ns_fail(wfd, "stats in the new namespace, want %s: %s", msg,
			out);
	snprintf(msg, sizeof(msg), "\"tcp_bytes_rcvd\":%zu,", n);
	if (!strstr(out, msg))
		ns_fail(wfd, "stats in the new namespace, want %s: %s", msg,
			out);
	/* The RDMA device's net device lives in the other namespace. */
	st = run_ctl_status(out, sizeof(out), "devices --json");
	if (st || strstr(out, "\"gid\":"))
		ns_fail(wfd, "devices in the new namespace: exit %d: %s", st,
			out);

	{
		struct stat a, b, s;

		fstat(lfd, &a);
		fstat(cfd, &b);
		fstat(sfd, &s);
		snprintf(msg, sizeof(msg), "INO %lu %lu %lu\n",
			 (unsigned long)a.st_ino, (unsigned long)b.st_ino,
			 (unsigned long)s.st_ino);
	}
	if (write(wfd, msg, strlen(msg)) < 0)
		_exit(2);
	/* Keep the sockets open until the parent looked. */
	if (read(rfd, buf, 1) < 0)
		_exit(2);
	_exit(0);
}

/*
 * `visockctl --netns NAME` with NAME bound to the namespace of @pid, as
 * `ip netns add` does: it lists that namespace's three sockets @ino and
 * not a listener of this one.
 */
static void netns_by_name(pid_t pid, const unsigned long *ino)
{
	char name[64], path[128], src[64], args[160], why[2048] = "";
	int lfd = su_listen(VT_FAMILY_VISOCK, false, 4, 0);
	unsigned long here = hu_sock_ino(lfd);
	char *out;
	int fd, i;

	snprintf(name, sizeof(name), "visock_ctl_%d", (int)getpid());
	snprintf(path, sizeof(path), "/run/netns/%s", name);
	snprintf(src, sizeof(src), "/proc/%d/ns/net", (int)pid);
	if (mkdir("/run/netns", 0755) && errno != EEXIST)
		vt_fail("mkdir /run/netns: %s", strerror(errno));
	fd = vt_try(open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0444), path);
	close(fd);
	if (mount(src, path, NULL, MS_BIND, NULL)) {
		unlink(path);
		vt_fail("bind mount %s on %s: %s", src, path, strerror(errno));
	}
	snprintf(args, sizeof(args), "--netns %s sockets -a --json", name);
	out = malloc(OUT_MAX);
	if (!out || run_ctl_status(out, OUT_MAX, args)) {
		snprintf(why, sizeof(why), "visockctl %s failed: %.1000s", args,
			 out ? out : "");
	} else {
		for (i = 0; i < 3; i++)
			if (!json_find(out, "inode", ino[i]))
				snprintf(why, sizeof(why),
					 "%s: inode %lu of that namespace missing:\n%.1000s",
					 args, ino[i], out);
		if (json_find(out, "inode", here))
			snprintf(why, sizeof(why),
				 "%s: lists inode %lu of this namespace:\n%.1000s",
				 args, here, out);
		if (json_count(out) != 3)
			snprintf(why, sizeof(why), "%s: %u sockets, expected 3:\n%.1000s",
				 args, json_count(out), out);
	}
	umount2(path, MNT_DETACH);
	unlink(path);
	free(out);
	vt_assert(!why[0], "%s", why);

	out = run_ctl("sockets -l --json");
	vt_assert(json_find(out, "inode", here),
		  "without --netns: the listener of this namespace is missing:\n%.1000s",
		  out);
	free(out);
	close(lfd);
}

static void netns_isolation(struct vt_ctx *c)
{
	int up[2], down[2], en, en2, st;
	unsigned long ino[3];
	char msg[4096], *before, *out;
	ssize_t len;
	pid_t pid;
	int i;

	(void)c;
	if (hu_read_int(ENABLE_PATH, &en))
		vt_skip("visock not loaded");
	before = run_ctl("stats --json");
	vt_try(pipe(up), "pipe");
	vt_try(pipe(down), "pipe");
	pid = vt_try(fork(), "fork");
	if (!pid) {
		close(up[0]);
		close(down[1]);
		ns_child(up[1], down[0], en);
	}
	close(up[1]);
	close(down[0]);
	len = read(up[0], msg, sizeof(msg) - 1);
	msg[len > 0 ? len : 0] = '\0';
	if (sscanf(msg, "INO %lu %lu %lu", &ino[0], &ino[1], &ino[2]) != 3) {
		waitpid(pid, &st, 0);
		vt_fail("in the new namespace: %s", len > 0 ? msg :
			"child died without a word");
	}

	netns_by_name(pid, ino);

	/* Here, now: none of its sockets, none of its traffic. */
	out = run_ctl("sockets -a --json");
	for (i = 0; i < 3; i++)
		vt_assert(!json_find(out, "inode", ino[i]),
			  "socket inode %lu of another namespace listed here:\n%.1500s",
			  ino[i], out);
	free(out);
	out = run_ctl("stats --json");
	vt_assert(json_num(out, "tcp_bytes_sent") ==
		  json_num(before, "tcp_bytes_sent") &&
		  json_num(out, "connections_fallback") ==
		  json_num(before, "connections_fallback"),
		  "counters here changed by another namespace:\nbefore %s\nafter %s",
		  before, out);
	vt_assert(!hu_read_int(ENABLE_PATH, &en2) && en2 == en,
		  "visockctl in another namespace changed enable here: %d -> %d",
		  en, en2);
	free(out);
	free(before);

	vt_try(write(down[1], "x", 1), "write");
	close(down[1]);
	len = read(up[0], msg, sizeof(msg) - 1);
	msg[len > 0 ? len : 0] = '\0';
	close(up[0]);
	waitpid(pid, &st, 0);
	vt_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "in the new namespace: %s", len > 0 ? msg : "child failed");
}

/* ---- tracepoints ---- */

static char *read_trace(void)
{
	char *buf = malloc(OUT_MAX);
	size_t len = 0;
	ssize_t n;
	int fd;

	vt_assert(buf, "out of memory");
	fd = open(TRACE_DIR "/trace", O_RDONLY | O_CLOEXEC);
	vt_assert(fd >= 0, "%s/trace: %s", TRACE_DIR, strerror(errno));
	while (len + 1 < OUT_MAX &&
	       (n = read(fd, buf + len, OUT_MAX - 1 - len)) > 0)
		len += n;
	close(fd);
	buf[len] = '\0';
	return buf;
}

/* True when @what occurs in the line starting at @line. */
static bool in_line(const char *line, const char *what)
{
	const char *end = strchr(line, '\n');
	const char *p = strstr(line, what);

	return p && (!end || p < end);
}

/* An @event line containing both @what and @what2. */
static void expect_event(const char *trace, const char *event,
			 const char *what, const char *what2)
{
	const char *p = trace;
	char ev[64];

	snprintf(ev, sizeof(ev), " %s: ", event);
	while ((p = strstr(p, ev))) {
		if (in_line(p, what) && in_line(p, what2))
			return;
		p++;
	}
	vt_fail("no %s event with '%s' and '%s' in the trace:\n%.2000s",
		event, what, what2, trace);
}

static void tracepoints(struct vt_ctx *c)
{
	struct conn k[MAX_CONNS];
	unsigned int i, n = 2;
	int lfd = -1;
	bool ok = true;
	char *trace, what[64];

	if (hu_read_int(ENABLE_PATH, &orig_enable))
		vt_skip("visock not loaded");
	if (access(TRACE_DIR "/trace", F_OK) &&
	    mount("tracefs", TRACE_DIR, "tracefs", 0, NULL))
		ok = false;
	if (ok && (write_text(TRACE_DIR "/trace", "") ||
		   write_text(TRACE_DIR "/events/visock/enable", "1\n")))
		ok = false;
	vt_agree(c, ok, "no tracefs or no events/visock");

	lfd = make_conns(c, k, 1, 1);
	vt_sync(c, "transferred");
	close_conns(k, n, lfd);
	vt_sync(c, "closed");
	/* The link goes down once the close finished (in the background). */
	for (i = 0; i < 50; i++) {
		trace = read_trace();
		if (strstr(trace, " visock_link_down: "))
			break;
		free(trace);
		usleep(100 * 1000);
	}
	trace = read_trace();
	write_text(TRACE_DIR "/events/visock/enable", "0\n");

	snprintf(what, sizeof(what), ":%d ", k[0].cport);
	expect_event(trace, "visock_hs_start", what,
		     vt_is_client(c) ? "arg=0" : "arg=1");
	expect_event(trace, "visock_hs_result", what, "arg=0");
	snprintf(what, sizeof(what), ":%d ", k[1].cport);
	expect_event(trace, "visock_fallback", what,
		     vt_is_client(c) ? "reason=disabled" :
		     "reason=peer_no_visock");
	expect_event(trace, "visock_link_up", "dev=", " qpn=");
	expect_event(trace, "visock_link_down", "was_up=1", "cause=destroyed");
	free(trace);
}

/* ---- links and peers ---- */

static void links_peers(struct vt_ctx *c)
{
	struct conn k[MAX_CONNS];
	unsigned int i, n = 3, nr = 2;
	int lfd = -1;
	char *out, gid[64];
	const char *line;

	if (hu_read_int(ENABLE_PATH, &orig_enable))
		vt_skip("visock not loaded");
	vt_sync(c, "quiet");
	lfd = make_conns(c, k, nr, 1);
	/* Count, QPNs, state, memory: as sockets_match does. */
	check_links(k, n);

	out = run_ctl("links --json");
	for (i = 0; i < n; i++) {
		if (!k[i].rdma)
			continue;
		line = json_find(out, "inode", hu_sock_ino(k[i].fd));
		json_str(line, "peer_gid", gid, sizeof(gid));
		vt_assert(strcmp(gid, "::") && strchr(gid, ':'),
			  "links: no peer GID: %.300s", line);
		vt_assert(json_num(line, "socket_id") != 0,
			  "links: no socket: %.300s", line);
	}
	free(out);

	/* One peer host: one group with every link, all up. */
	out = run_ctl("peers --json");
	vt_assert(json_count(out) == 1, "peers: %u peers, expected 1:\n%.1500s",
		  json_count(out), out);
	line = strstr(out, "\n  {") + 1;
	vt_assert(json_num(line, "links") == nr &&
		  json_num(line, "links_up") == nr,
		  "peers: %llu links, %llu up, expected %u:\n%.1500s",
		  json_num(line, "links"), json_num(line, "links_up"), nr, out);
	json_str(line, "peer_gid", gid, sizeof(gid));
	vt_assert(strcmp(gid, "::"), "peers: no peer GID:\n%.1500s", out);
	free(out);
	vt_sync(c, "checked");
	close_conns(k, n, lfd);
}

/* ---- monitor ---- */

/* Start `visockctl monitor --json` with its output in @file. */
static pid_t monitor_start(const char *file)
{
	const char *bin = hu_visockctl_path();
	unsigned int i;
	pid_t pid;
	int fd;

	pid = vt_try(fork(), "fork");
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(127);
		execlp(bin, bin, "monitor", "--json", (char *)NULL);
		_exit(127);
	}
	/* Subscribed once its generic netlink socket has a group. */
	for (i = 0; i < 50; i++) {
		char line[512];
		unsigned int eth, npid, groups;
		bool found = false;
		FILE *f = fopen("/proc/net/netlink", "r");

		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "%*s %u %u %x", &eth, &npid,
				   &groups) == 3 &&
			    eth == NETLINK_GENERIC && npid == (unsigned int)pid &&
			    groups)
				found = true;
		if (f)
			fclose(f);
		if (found)
			break;
		usleep(100 * 1000);
	}
	return pid;
}

static char *read_file(const char *file)
{
	char *buf = malloc(OUT_MAX);
	ssize_t n = -1;
	int fd;

	vt_assert(buf, "out of memory");
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, OUT_MAX - 1);
		close(fd);
	}
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* A line of @out with every one of @what (NULL-terminated). */
static const char *find_line(const char *out, const char *const *what)
{
	const char *p = out;
	unsigned int i;

	while (*p) {
		for (i = 0; what[i] && in_line(p, what[i]); i++)
			;
		if (!what[i])
			return p;
		p = strchr(p, '\n');
		if (!p)
			break;
		p++;
	}
	return NULL;
}

/* Wait up to 10 s for a line of @file with all of @what. */
static void expect_mon(const char *file, const char *const *what)
{
	unsigned int i;
	char *out = NULL;

	for (i = 0; i < 100; i++) {
		free(out);
		out = read_file(file);
		if (find_line(out, what))
			break;
		usleep(100 * 1000);
	}
	vt_assert(find_line(out, what),
		  "monitor: no event with %s %s %s %s:\n%.2000s", what[0],
		  what[1] ? what[1] : "", what[1] && what[2] ? what[2] : "",
		  what[1] && what[2] && what[3] ? what[3] : "", out);
	free(out);
}

static void monitor_events(struct vt_ctx *c)
{
	char file[64], port0[32], port1[32], port2[32], qpn[32], pqpn[32];
	char reset[32];
	const char *reason;
	struct conn k[MAX_CONNS];
	struct visock_info vi;
	socklen_t len = sizeof(vi);
	unsigned int n = 3;
	int lfd = -1, st;
	pid_t mon;

	if (hu_read_int(ENABLE_PATH, &orig_enable))
		vt_skip("visock not loaded");
	snprintf(file, sizeof(file), "/tmp/visock_ctl_mon.%d", (int)getpid());
	mon = monitor_start(file);
	vt_sync(c, "monitoring");

	/* k[0] and k[1] over RDMA (k[1] is reset later), k[2] falls back. */
	lfd = make_conns(c, k, 2, 1);
	memset(&vi, 0, sizeof(vi));
	vt_try(getsockopt(k[0].fd, SOL_VISOCK, VISOCK_INFO, &vi, &len),
	       "getsockopt(VISOCK_INFO)");
	snprintf(port0, sizeof(port0), ":%d\"", k[0].cport);
	snprintf(port1, sizeof(port1), ":%d\"", k[1].cport);
	snprintf(port2, sizeof(port2), ":%d\"", k[2].cport);
	snprintf(qpn, sizeof(qpn), ",\"qpn\":%u,", vi.vi_local_qpn);
	snprintf(pqpn, sizeof(pqpn), "\"peer_qpn\":%u,", vi.vi_peer_qpn);
	snprintf(reset, sizeof(reset), "\"error\":%d", -ECONNRESET);
	reason = vt_is_client(c) ? "\"reason\":\"disabled\"" :
				   "\"reason\":\"peer_no_visock\"";
	{
		const char *const up[] = { "\"event\":\"link_up\"", port0, qpn,
					   pqpn, NULL };
		const char *const fb[] = { "\"event\":\"fallback\"", port2,
					   reason, NULL };

		expect_mon(file, up);
		expect_mon(file, fb);
	}
	vt_sync(c, "seen");

	/* A reset (SO_LINGER 0) of k[1]: the server's end is aborted. */
	if (vt_is_client(c)) {
		su_reset(k[1].fd);
		k[1].fd = -1;
	} else {
		const char *const ab[] = { "\"event\":\"abort\"", port1,
					   reset, NULL };

		expect_mon(file, ab);
	}
	vt_sync(c, "aborted");

	close_conns(k, n, lfd);
	{
		const char *const down[] = { "\"event\":\"link_down\"", port0,
					     qpn, NULL };

		expect_mon(file, down);
	}
	kill(mon, SIGTERM);
	waitpid(mon, &st, 0);
	unlink(file);
	vt_sync(c, "closed");
}

/* ---- filters ---- */

/* Address (text) and port of the local or peer end of @fd. */
static void end_of(int fd, bool peer, char *ip, size_t size, int *port)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (peer)
		vt_try(getpeername(fd, (struct sockaddr *)&ss, &len),
		       "getpeername");
	else
		vt_try(getsockname(fd, (struct sockaddr *)&ss, &len),
		       "getsockname");
	if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, ip, size);
		*port = ntohs(s6->sin6_port);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &s4->sin_addr, ip, size);
		*port = ntohs(s4->sin_port);
	}
}

/* `visockctl sockets @args --json` lists exactly the sockets in @want. */
static void expect_set(const char *args, const int *fds, const bool *want,
		       unsigned int n)
{
	char cmd[600];
	unsigned int i, nw = 0;
	char *out;

	snprintf(cmd, sizeof(cmd), "sockets %s --json", args);
	out = run_ctl(cmd);
	for (i = 0; i < n; i++) {
		bool listed = json_find(out, "inode", hu_sock_ino(fds[i]));

		vt_assert(listed == want[i], "%s: connection %u (inode %lu) %s:\n%.1500s",
			  cmd, i, hu_sock_ino(fds[i]),
			  listed ? "listed" : "missing", out);
		nw += want[i];
	}
	vt_assert(json_count(out) == nw, "%s: %u listed, %u expected:\n%.1500s",
		  cmd, json_count(out), nw, out);
	free(out);
}

static void filters(struct vt_ctx *c)
{
	char ip[4][INET6_ADDRSTRLEN], pip[4][INET6_ADDRSTRLEN], args[512];
	int fds[4], lp[4], pp[4], lfd = -1, lfd6 = -1, port, port6 = 0;
	bool rdma[4] = { true, true, false, true }, want[4];
	unsigned int i, j, n = 3;
	bool v6;

	if (hu_read_int(ENABLE_PATH, &orig_enable))
		vt_skip("visock not loaded");
	if (vt_is_client(c)) {
		v6 = c->peer6[0];
		vt_send_num(c, "V6", v6);
		port = su_recv_port(c);
		if (v6)
			port6 = su_recv_port(c);
		for (i = 0; i < 3; i++) {
			if (!rdma[i])
				set_enable(0);
			fds[i] = su_connect(c, VT_FAMILY_VISOCK, false, port);
			if (!rdma[i])
				set_enable(1);
		}
		if (v6)
			fds[3] = su_connect(c, VT_FAMILY_VISOCK, true, port6);
		for (i = 0; i < (v6 ? 4u : 3u); i++)
			vt_send_num(c, "CPORT", local_port(fds[i]));
	} else {
		int acc[4], cport[4];

		v6 = vt_recv_num(c, "V6");
		lfd = su_listen(VT_FAMILY_VISOCK, false, 16, 0);
		su_send_port(c, lfd);
		if (v6) {
			lfd6 = su_listen(VT_FAMILY_VISOCK, true, 16, 0);
			su_send_port(c, lfd6);
		}
		for (i = 0; i < (v6 ? 4u : 3u); i++)
			cport[i] = vt_recv_num(c, "CPORT");
		for (i = 0; i < 3; i++)
			acc[i] = su_accept(lfd, 0);
		if (v6)
			acc[3] = su_accept(lfd6, 0);
		/*
		 * Index by the client's port, as the client numbers them.
		 * The IPv6 connection may have the port of an IPv4 one: it
		 * is only looked for among its own family.
		 */
		for (i = 0; i < 3; i++) {
			for (j = 0; j < 3; j++)
				if (peer_port(acc[j]) == cport[i])
					break;
			vt_assert(j < 3, "no accepted connection from port %d",
				  cport[i]);
			fds[i] = acc[j];
		}
		if (v6) {
			vt_assert(peer_port(acc[3]) == cport[3],
				  "the IPv6 connection is from port %d, not %d",
				  peer_port(acc[3]), cport[3]);
			fds[3] = acc[3];
		}
	}
	n = v6 ? 4 : 3;
	/* Whether IPv6 gets RDMA is not this test's business. */
	if (v6)
		rdma[3] = sock_mode(fds[3]) == VISOCK_MODE_RDMA;
	for (i = 0; i < n; i++) {
		end_of(fds[i], false, ip[i], sizeof(ip[i]), &lp[i]);
		end_of(fds[i], true, pip[i], sizeof(pip[i]), &pp[i]);
		vt_assert(sock_mode(fds[i]) ==
			  (rdma[i] ? VISOCK_MODE_RDMA : VISOCK_MODE_TCP),
			  "connection %u: mode %u, expected %s", i,
			  sock_mode(fds[i]), rdma[i] ? "rdma" : "tcp");
	}

	/*
	 * One connection by its full 4-tuple, and by the client's end alone
	 * (local here on the client, peer on the server).
	 */
	for (i = 0; i < n; i++) {
		for (j = 0; j < n; j++)
			want[j] = j == i;
		snprintf(args, sizeof(args), "src %s sport %d dst %s dport %d",
			 ip[i], lp[i], pip[i], pp[i]);
		expect_set(args, fds, want, n);
		if (vt_is_client(c))
			snprintf(args, sizeof(args), "src %s sport %d", ip[i],
				 lp[i]);
		else
			snprintf(args, sizeof(args), "dst %s dport %d", pip[i],
				 pp[i]);
		expect_set(args, fds, want, n);
	}
	/* By peer address: every connection of that family. */
	for (j = 0; j < n; j++)
		want[j] = j < 3;
	snprintf(args, sizeof(args), "dst %s", pip[0]);
	expect_set(args, fds, want, n);
	snprintf(args, sizeof(args), "dst %s/%d", pip[0], 24);
	expect_set(args, fds, want, n);
	snprintf(args, sizeof(args), "src %s", ip[0]);
	expect_set(args, fds, want, n);
	if (v6) {
		for (j = 0; j < n; j++)
			want[j] = j == 3;
		snprintf(args, sizeof(args), "dst %s", pip[3]);
		expect_set(args, fds, want, n);
		snprintf(args, sizeof(args), "src %s %s %d", ip[3],
			 vt_is_client(c) ? "sport" : "dport",
			 vt_is_client(c) ? lp[3] : pp[3]);
		expect_set(args, fds, want, n);
	}
	/* A port no connection has: none; the server's port: all. */
	for (j = 0; j < n; j++)
		want[j] = false;
	for (port = 1; port < 65535; port++) {
		for (j = 0; j < n; j++)
			if (port == lp[j] || port == pp[j])
				break;
		if (j == n)
			break;
	}
	snprintf(args, sizeof(args), "dst %s dport %d", pip[0], port);
	expect_set(args, fds, want, n);
	snprintf(args, sizeof(args), "sport %d", port);
	expect_set(args, fds, want, n);
	for (j = 0; j < n; j++)
		want[j] = j < 3;
	snprintf(args, sizeof(args), "%s %d", vt_is_client(c) ? "dport" :
		 "sport", vt_is_client(c) ? pp[0] : lp[0]);
	expect_set(args, fds, want, n);
	/* By mode. */
	for (j = 0; j < n; j++)
		want[j] = rdma[j];
	expect_set("mode rdma", fds, want, n);
	for (j = 0; j < n; j++)
		want[j] = !rdma[j];
	expect_set("mode fallback", fds, want, n);
	expect_set("mode tcp", fds, want, n);
	snprintf(args, sizeof(args), "mode rdma dst %s", pip[0]);
	for (j = 0; j < n; j++)
		want[j] = rdma[j] && j < 3;
	expect_set(args, fds, want, n);

	vt_sync(c, "checked");
	for (i = 0; i < n; i++)
		close(fds[i]);
	if (lfd >= 0)
		close(lfd);
	if (lfd6 >= 0)
		close(lfd6);
}

/* ---- transform pairs ---- */

/* What each pair of enum visock_xform is (visock/design.rst, "Pairs"). */
static const struct {
	const char *name;
	const char *alg;
	unsigned int key;
	bool integrity_only;
	const char *comp;
} xforms[] = {
	[VISOCK_XFORM_AES128_GCM] = { "gcm-aes-128", "gcm(aes)", 16, false },
	[VISOCK_XFORM_AES256_GCM] = { "gcm-aes-256", "gcm(aes)", 32, false },
	[VISOCK_XFORM_CHACHA20_POLY1305] = {
		"chacha20-poly1305", "rfc7539(chacha20,poly1305)", 32, false },
	[VISOCK_XFORM_AES128_GMAC] = { "gmac-aes-128", "gcm(aes)", 16, true },
	[VISOCK_XFORM_AES256_GMAC] = { "gmac-aes-256", "gcm(aes)", 32, true },
	[VISOCK_XFORM_LZ4_AES128_GCM] = {
		"lz4-gcm-aes-128", "gcm(aes)", 16, false, "lz4" },
	[VISOCK_XFORM_ZSTD_AES128_GCM] = {
		"zstd-gcm-aes-128", "gcm(aes)", 16, false, "zstd" },
	[VISOCK_XFORM_LZ4_AES128_GMAC] = {
		"lz4-gmac-aes-128", "gcm(aes)", 16, true, "lz4" },
	[VISOCK_XFORM_ZSTD_AES128_GMAC] = {
		"zstd-gmac-aes-128", "gcm(aes)", 16, true, "zstd" },
	[VISOCK_XFORM_LZ4_AES256_GCM] = {
		"lz4-gcm-aes-256", "gcm(aes)", 32, false, "lz4" },
	[VISOCK_XFORM_ZSTD_AES256_GCM] = {
		"zstd-gcm-aes-256", "gcm(aes)", 32, false, "zstd" },
	[VISOCK_XFORM_LZ4_CHACHA20_POLY1305] = {
		"lz4-chacha20-poly1305", "rfc7539(chacha20,poly1305)", 32,
		false, "lz4" },
	[VISOCK_XFORM_ZSTD_CHACHA20_POLY1305] = {
		"zstd-chacha20-poly1305", "rfc7539(chacha20,poly1305)", 32,
		false, "zstd" },
};

static_assert(ARRAY_SIZE(xforms) == VISOCK_XFORM_MAX + 1,
	      "a pair of enum visock_xform is missing from xforms[]");

/* "@key":true or "@key":false in the object @line. */
static bool json_bool(const char *line, const char *key)
{
	const char *end = strchr(line, '\n');
	char pat[128];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(line, pat);
	vt_assert(p && (!end || p < end), "no \"%s\" in: %.300s", key, line);
	p += strlen(pat);
	vt_assert(!strncmp(p, "true", 4) || !strncmp(p, "false", 5),
		  "\"%s\" is not a boolean in: %.300s", key, line);
	return *p == 't';
}

/* An implementation in /proc/crypto, by its driver name. */
struct crypto_entry {
	char name[256];
	char type[256];
	unsigned int priority;
	bool async;
};

/* Find @driver in /proc/crypto; false if it is not there. */
static bool proc_crypto(const char *driver, struct crypto_entry *e)
{
	char line[512], key[64], val[256];
	bool in = false, found = false;
	FILE *f = fopen("/proc/crypto", "r");

	vt_assert(f, "/proc/crypto: %s", strerror(errno));
	memset(e, 0, sizeof(*e));
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '\n') {		/* end of an entry */
			if (in && !strcmp(e->type, "aead")) {
				found = true;
				break;
			}
			in = false;
			memset(e, 0, sizeof(*e));
			continue;
		}
		if (sscanf(line, "%63s : %255[^\n]", key, val) != 2)
			continue;
		if (!strcmp(key, "name"))
			snprintf(e->name, sizeof(e->name), "%s", val);
		else if (!strcmp(key, "driver"))
			in = !strcmp(val, driver);
		else if (!strcmp(key, "type"))
			snprintf(e->type, sizeof(e->type), "%s", val);
		else if (!strcmp(key, "priority"))
			e->priority = strtoul(val, NULL, 10);
		else if (!strcmp(key, "async"))
			e->async = !strcmp(val, "yes");
	}
	if (!found && in && !strcmp(e->type, "aead"))
		found = true;		/* the last entry */
	fclose(f);
	return found;
}

static void transforms_list(struct vt_ctx *c)
{
	char name[64], alg[128], driver[128], tname[64], talg[128];
	char tdriver[128], comp[64], cdriver[128], *out, *table;
	unsigned int id, tid, tprio, tkey, ttag, tnonce, trec;
	unsigned long long rec;
	struct crypto_entry e;
	const char *line, *p;
	int orig;

	(void)c;
	if (hu_read_int(ENABLE_PATH, &orig))
		vt_skip("visock not loaded");
	out = run_ctl("transforms --json");
	table = run_ctl("transforms");
	vt_assert(json_count(out) == VISOCK_XFORM_MAX,
		  "%u pairs listed, enum visock_xform has %u: %.600s",
		  json_count(out), VISOCK_XFORM_MAX, out);
	vt_assert(!json_find(out, "id", VISOCK_XFORM_NONE),
		  "\"none\" is listed as a pair: %.600s", out);
	for (id = VISOCK_XFORM_NONE + 1; id <= VISOCK_XFORM_MAX; id++) {
		line = json_find(out, "id", id);
		vt_assert(line, "pair %u (%s) is not listed: %.600s", id,
			  xforms[id].name, out);
		json_str(line, "name", name, sizeof(name));
		json_str(line, "alg", alg, sizeof(alg));
		json_str(line, "driver", driver, sizeof(driver));
		vt_assert(!strcmp(name, xforms[id].name) &&
			  !strcmp(alg, xforms[id].alg),
			  "pair %u: name %s alg %s, expected %s %s", id, name,
			  alg, xforms[id].name, xforms[id].alg);
		vt_assert(json_bool(line, "available"),
			  "%s: not available here: %.300s", name, line);
		vt_assert(driver[0], "%s: no driver: %.300s", name, line);
		vt_assert(json_num(line, "key_size") == xforms[id].key &&
			  json_num(line, "tag_size") == 16 &&
			  json_num(line, "nonce_size") == 12,
			  "%s: sizes key %llu tag %llu nonce %llu, expected %u 16 12",
			  name, json_num(line, "key_size"),
			  json_num(line, "tag_size"),
			  json_num(line, "nonce_size"), xforms[id].key);
		rec = json_num(line, "record_size");
		vt_assert(rec >= 1024 && rec <= 1ULL << 24,
			  "%s: record_size %llu", name, rec);
		vt_assert(json_bool(line, "integrity_only") ==
			  xforms[id].integrity_only,
			  "%s: integrity_only wrong: %.300s", name, line);
		vt_assert(json_num(line, "max_records") >= 1ULL << 20,
			  "%s: max_records %llu", name,
			  json_num(line, "max_records"));

		/* A compressing pair names its compressor and its driver. */
		if (xforms[id].comp) {
			json_str(line, "comp", comp, sizeof(comp));
			json_str(line, "comp_driver", cdriver, sizeof(cdriver));
			vt_assert(!strcmp(comp, xforms[id].comp) && cdriver[0],
				  "%s: compressor \"%s\" driver \"%s\", expected %s",
				  name, comp, cdriver, xforms[id].comp);
		} else {
			p = strstr(line, "\"comp\"");
			vt_assert(!p || (strchr(line, '\n') &&
					 p > strchr(line, '\n')),
				  "%s: a compressor is listed: %.300s", name,
				  line);
		}

		/* The crypto API has that driver for that algorithm. */
		vt_assert(proc_crypto(driver, &e),
			  "%s: driver %s is not an aead in /proc/crypto", name,
			  driver);
		vt_assert(!strcmp(e.name, alg),
			  "%s: /proc/crypto says %s implements %s, not %s",
			  name, driver, e.name, alg);
		vt_assert(e.priority == json_num(line, "priority") &&
			  e.async == json_bool(line, "async"),
			  "%s: %s has priority %u async %d in /proc/crypto: %.300s",
			  name, driver, e.priority, e.async, line);

		/* The table's row says the same. */
		p = table;
		tname[0] = '\0';
		while (p && *p) {
			if (sscanf(p, "%63s %u %127s %127s %u %u %u %u %u",
				   tname, &tid, talg, tdriver, &tprio, &tkey,
				   &ttag, &tnonce, &trec) == 9 &&
			    !strcmp(tname, name))
				break;
			tname[0] = '\0';
			p = strchr(p, '\n');
			if (p)
				p++;
		}
		vt_assert(tname[0], "%s: no row in the table: %.600s", name,
			  table);
		vt_assert(tid == id && !strcmp(talg, alg) &&
			  !strcmp(tdriver, driver) && tprio == e.priority &&
			  tkey == xforms[id].key && ttag == 16 && tnonce == 12 &&
			  trec == rec,
			  "%s: the table row differs from the JSON: %.300s",
			  name, p);
		vt_diag("%s: %s (priority %u%s)", name, driver, e.priority,
			e.async ? ", async" : "");
	}
	free(out);
	free(table);
}

#define T(fn, tmo, d)	{ #fn, fn, fn, tmo, d }

static const struct vt_test tests[] = {
	T(sockets_match, 120, "visockctl sockets/links match the connections"),
	T(stats_match, 120, "visockctl stats match what the connections did"),
	{ "netns_isolation", netns_isolation, NULL, 60,
	  "another namespace's sockets and counters do not show here" },
	T(tracepoints, 120, "events/visock for a handshake, a fallback, a link"),
	T(links_peers, 120, "visockctl links/peers: the genl link dump"),
	T(monitor_events, 120, "visockctl monitor: link up, fallback, link down"),
	T(filters, 120, "visockctl sockets filters: addresses, ports, mode"),
	{ "transforms_list", transforms_list, NULL, 60,
	  "visockctl transforms: every pair, its driver as /proc/crypto has it" },
};

int main(int argc, char **argv)
{
	vt_set_cleanup(ctl_cleanup);
	return vt_main(argc, argv, "visock_ctl", tests, ARRAY_SIZE(tests));
}
