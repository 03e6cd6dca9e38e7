// SPDX-License-Identifier: GPL-2.0
/*
 * visock fault campaign: one injected fault per test at a fault point of
 * the module (/sys/kernel/debug/visock/fault/, see visock_fault.c in the
 * module), between two hosts with net.visock.enable=1 and an ACTIVE RoCE
 * port (run_tests.sh runs it in the handshake pass after hs.rdma_ready).
 *
 * Test fault.<point>_<side>: the fault is armed on the client or the
 * server host, once (times=1).  Each connection gets its own QP
 * (lgr_link_conns=1), so a setup fault hits a new QP only.
 *
 *   A   connected before the fault, must stay on RDMA;
 *   B   the connection the fault hits:
 *	 setup points: B falls back to TCP, with reason nomem (ENOMEM
 *	 points) or qp_setup (QP state changes) on the faulting host and
 *	 peer_decline on the other;
 *	 data points (post_write, post_ctrl): B is on RDMA, the fault hits
 *	 its transfer, B fails over to TCP (VISOCK_INFO_F_FAILOVER, state
 *	 "failed over") on both hosts;
 *	 close (post_ctrl_close): armed after the server read all the
 *	 client wrote, so that the cursor message of close() is the one
 *	 that fails; the server still sees end of stream;
 *	 accept (child_alloc): the server drops the accepted connection:
 *	 the client's connect() or its first read fails or sees EOF;
 *   C   connected after the fault, must be on RDMA.
 *
 * Then A, C (and B, unless it was closed or dropped) move 256 KiB each way
 * with checksums; the faulting host's injected count for the point must
 * have grown (else the test fails: the fault never fired); after closing,
 * lgr_connections, qps and registered_bytes of /proc/net/visock return to
 * 0 on both hosts.  Each faulting half prints
 * "# fault <point>: injected N, fallbacks M, failovers F" (this host's
 * fallbacks and failovers during the test).
 *
 * dev_rtr_<side>: not a fault point of visock but an allocation of the
 * device: failslab fails, once, the first allocation under Soft-RoCE's
 * rxe_qp_from_attr(), which is its array for IB_QP_MAX_DEST_RD_ATOMIC in
 * the change to RTR of B's new QP.  Soft-RoCE then fails the change with
 * ENOMEM and leaves its responder stopped, so the QP can no longer be
 * drained: B falls back (nomem), and the QP must still go after close
 * (skipped without Soft-RoCE, failslab or its stack trace filter).
 *
 * Three more tests of teardown under stress:
 *
 * signal_storm	SIGUSR1 every millisecond (a helper process) at both
 *		halves while they connect, accept, send and receive 8
 *		connections (blocking calls, no SA_RESTART): every
 *		connection is on RDMA, its data intact; nothing left
 *		afterwards.
 * netns_del	client host only: in a new namespace (ip netns add), a
 *		listener, a loopback connection moving data and one left
 *		unaccepted; ip netns del while they are open, then the
 *		process exits: the module's reference count returns to
 *		what it was and the init namespace's gauges are unchanged.
 *		Loopback only: the Soft-RoCE device belongs to the init
 *		namespace, a new namespace has no RDMA path (the handshake
 *		declines), so no link group is created in it.
 * close_handoff	4 times: a connection on RDMA, 64 KiB from the client,
 *		read by the server; the client arms the "close_handoff"
 *		delay and closes: close() waits 1 s right after it handed
 *		the rest to its close work, which the completion of its
 *		closed flag runs to its end meanwhile.  The server sees
 *		EOF; every connection leaves; the kernel log of both
 *		hosts gains no report (BUG, WARNING, refcount_t, Oops).
 *
 * No test checks how long anything takes; every wait is bounded.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>

#include <linux/visock.h>

#include "ctl.h"
#include "harness.h"
#include "hostutil.h"
#include "ktap.h"
#include "sockutil.h"

#define KiB		1024ULL
#define XFER_LEN	(256 * KiB)
#define ENABLE_PATH	"/proc/sys/net/visock/enable"
#define SYSCTL_DIR	"/proc/sys/net/visock/"
#define DEBUGFS_DIR	"/sys/kernel/debug"
#define FAULT_DIR	DEBUGFS_DIR "/visock/fault/"
#define WAIT_MS		30000		/* something the peer owes */
#define XFER_MS		300000

enum fkind {
	FK_SETUP,	/* connect/accept/handshake/link setup of B */
	FK_DATA,	/* B's transfer */
	FK_CLOSE,	/* B's close() after a write (client side) */
	FK_ACCEPT,	/* the server's accept of B */
};

struct fcase {
	const char *name;	/* test name */
	const char *point;	/* fault point */
	bool server;		/* armed on the server host */
	enum fkind kind;
	unsigned int reason;	/* FK_SETUP: reason on the faulting host */
};

#define NOMEM	VISOCK_FB_NOMEM
#define QPSET	VISOCK_FB_QP_SETUP

static const struct fcase fcases[] = {
	{ "child_alloc_server", "child_alloc", true, FK_ACCEPT, 0 },
	{ "link_alloc_client", "link_alloc", false, FK_SETUP, NOMEM },
	{ "link_alloc_server", "link_alloc", true, FK_SETUP, NOMEM },
	{ "qp_alloc_client", "qp_alloc", false, FK_SETUP, NOMEM },
	{ "qp_alloc_server", "qp_alloc", true, FK_SETUP, NOMEM },
	{ "pd_alloc_client", "pd_alloc", false, FK_SETUP, NOMEM },
	{ "pd_alloc_server", "pd_alloc", true, FK_SETUP, NOMEM },
	{ "cq_create_client", "cq_create", false, FK_SETUP, NOMEM },
	{ "cq_create_server", "cq_create", true, FK_SETUP, NOMEM },
	{ "qp_create_client", "qp_create", false, FK_SETUP, NOMEM },
	{ "qp_create_server", "qp_create", true, FK_SETUP, NOMEM },
	{ "qp_init_client", "qp_init", false, FK_SETUP, QPSET },
	{ "qp_init_server", "qp_init", true, FK_SETUP, QPSET },
	{ "ctrl_alloc_client", "ctrl_alloc", false, FK_SETUP, NOMEM },
	{ "ctrl_alloc_server", "ctrl_alloc", true, FK_SETUP, NOMEM },
	{ "post_recv_client", "post_recv", false, FK_SETUP, NOMEM },
	{ "post_recv_server", "post_recv", true, FK_SETUP, NOMEM },
	{ "rbuf_alloc_client", "rbuf_alloc", false, FK_SETUP, NOMEM },
	{ "rbuf_alloc_server", "rbuf_alloc", true, FK_SETUP, NOMEM },
	{ "rbuf_map_client", "rbuf_map", false, FK_SETUP, NOMEM },
	{ "rbuf_map_server", "rbuf_map", true, FK_SETUP, NOMEM },
	{ "mr_alloc_client", "mr_alloc", false, FK_SETUP, NOMEM },
	{ "mr_alloc_server", "mr_alloc", true, FK_SETUP, NOMEM },
	{ "qp_rtr_client", "qp_rtr", false, FK_SETUP, QPSET },
	{ "qp_rtr_server", "qp_rtr", true, FK_SETUP, QPSET },
	{ "qp_rts_client", "qp_rts", false, FK_SETUP, QPSET },
	{ "qp_rts_server", "qp_rts", true, FK_SETUP, QPSET },
	{ "post_reg_client", "post_reg", false, FK_SETUP, NOMEM },
	{ "post_reg_server", "post_reg", true, FK_SETUP, NOMEM },
	{ "dp_alloc_client", "dp_alloc", false, FK_SETUP, NOMEM },
	{ "dp_alloc_server", "dp_alloc", true, FK_SETUP, NOMEM },
	{ "post_write_client", "post_write", false, FK_DATA, 0 },
	{ "post_write_server", "post_write", true, FK_DATA, 0 },
	{ "post_ctrl_client", "post_ctrl", false, FK_DATA, 0 },
	{ "post_ctrl_server", "post_ctrl", true, FK_DATA, 0 },
	{ "post_ctrl_close", "post_ctrl", false, FK_CLOSE, 0 },
	{ "dev_rtr_client", "dev_rtr", false, FK_SETUP, NOMEM },
	{ "dev_rtr_server", "dev_rtr", true, FK_SETUP, NOMEM },
};

/* Device points: an allocation under this function fails (failslab). */
static const char *dev_func(const struct fcase *fc)
{
	return strcmp(fc->point, "dev_rtr") ? NULL : "rxe_qp_from_attr";
}

/* ---- host state ---- */

/* Write @val to @path; 0 or -1 with errno. */
static int write_str(const char *path, const char *val)
{
	int fd, len = strlen(val), ret = 0;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (write(fd, val, len) != len)
		ret = -1;
	close(fd);
	return ret;
}

/* Fallbacks since @v0; their reasons into @buf. */
static long long fb_since(const long long *v0, char *buf, size_t size)
{
	long long v[HU_NFB], n = 0;
	unsigned int i;
	size_t len = 0;

	buf[0] = '\0';
	hu_fb_snap(v);
	for (i = 1; i < HU_NFB; i++) {
		if (v[i] == v0[i])
			continue;
		n += v[i] - v0[i];
		if (len < size)
			len += snprintf(buf + len, size - len, " %s %lld",
					hu_fb_names[i], v[i] - v0[i]);
	}
	return n;
}

/* ---- sysctls, restored after every test half ---- */

static struct hu_saved_sysctl saved[] = {
	{ "lgr_max_links", -1 }, { "lgr_link_conns", -1 },
	{ "lgr_idle_ms", -1 }, { "lazy_bytes", -1 },
};

#define SAVED_LAZY	3	/* saved[] index of lazy_bytes */

static void fi_restore(void);
static int rc_qps(void);
static void dev_need(struct vt_ctx *c, const char *func);
static void dev_arm(const char *func);
static long long dev_disarm(void);

/* Cleanup hook (runner process): disarm, restore the sysctls. */
static void cleanup(const struct vt_ctx *c)
{
	(void)c;
	fi_restore();
	write_str(FAULT_DIR "point", "none\n");
	write_str(FAULT_DIR "times", "0\n");
	write_str(FAULT_DIR "skip", "0\n");
	hu_sysctls_restore(saved, ARRAY_SIZE(saved));
}

/* ---- fault control ---- */

/* ---- connections ---- */

/* hu_need_rdma(), and the module's fault points must be there. */
static void need_rdma(struct vt_ctx *c)
{
	const char *why = hu_rdma_missing(c);

	if (!*why && !hu_fault_ready())
		why = "no " FAULT_DIR " (debugfs fault points)";
	vt_agree(c, !*why, why);
}

/* Wait for the handshake of @fd to end; its info into @vi. */
static void settled_info(int fd, struct visock_info *vi)
{
	long long end = ctl_now_ms() + (long long)WAIT_MS * vt_time_scale;

	for (;;) {
		hu_get_info(fd, vi);
		if (vi->vi_mode != VISOCK_MODE_INIT &&
		    vi->vi_mode != VISOCK_MODE_HANDSHAKE)
			return;
		vt_assert(ctl_now_ms() < end, "handshake still running (mode %u)",
			  vi->vi_mode);
		usleep(20 * 1000);
	}
}

static void expect_rdma(int fd, const char *what)
{
	struct visock_info vi;

	settled_info(fd, &vi);
	vt_assert(vi.vi_mode == VISOCK_MODE_RDMA &&
		  !(vi.vi_flags & VISOCK_INFO_F_FAILOVER),
		  "%s: mode %u, fallback reason %s, flags %#x: expected RDMA",
		  what, vi.vi_mode, hu_fb_name(vi.vi_fallback_reason),
		  vi.vi_flags);
}

/* One connection: client connects, server accepts from @lfd. */
static int pair(struct vt_ctx *c, int port, int lfd)
{
	return vt_is_client(c) ? su_connect(c, VT_FAMILY_VISOCK, false, port) :
				 su_accept(lfd, SOCK_CLOEXEC);
}

/*
 * The row of @tab (@n rows of @size bytes, each starting with its test
 * name) of the running test; fails the test if there is none.
 */
static const void *case_row(const struct vt_ctx *c, const void *tab,
			    size_t n, size_t size, const char *kind)
{
	const char *row = tab;
	size_t i;

	for (i = 0; i < n; i++, row += size)
		if (!strcmp(c->test->name, *(const char *const *)row))
			return row;
	vt_fail("no %s case %s", kind, c->test->name);
}

/* The row of case table @tab (its first member: the name) of the test. */
#define find_case(c, tab, kind)						\
	((const typeof((tab)[0]) *)case_row(c, tab, ARRAY_SIZE(tab),	\
					    sizeof((tab)[0]), kind))

/* Client, child_alloc: B's connect() or first read must fail or see EOF. */
static void dropped_connect(struct vt_ctx *c, int port)
{
	struct sockaddr_storage ss;
	socklen_t len = su_peer_addr(c, false, port, &ss);
	int fd = su_socket(VT_FAMILY_VISOCK, false, SOCK_CLOEXEC);
	char b;
	ssize_t r;

	if (connect(fd, (struct sockaddr *)&ss, len)) {
		vt_diag("dropped connection: connect: %s", vt_errname(errno));
		close(fd);
		return;
	}
	vt_assert(su_poll(fd, POLLIN, WAIT_MS * vt_time_scale) &
		  (POLLIN | POLLHUP | POLLERR),
		  "dropped connection: no EOF or error after %d ms", WAIT_MS);
	r = read(fd, &b, 1);
	vt_assert(r <= 0, "dropped connection: read %zd byte(s)", r);
	vt_diag("dropped connection: connect ok, then read %zd (%s)", r,
		r < 0 ? vt_errname(errno) : "EOF");
	close(fd);
}

/* Read and check a whole stream of @len payload bytes, not the EOF. */
static void read_stream(int fd, uint64_t len)
{
	size_t total = pl_total(len);
	uint8_t *buf = malloc(total);
	struct pl_rx rx;

	vt_assert(buf, "out of memory");
	su_read_all(fd, buf, total);
	pl_rx_init(&rx, len);
	pl_check(&rx, buf, total);
	vt_assert(pl_rx_done(&rx), "stream incomplete");
	free(buf);
}

static void fault_case(struct vt_ctx *c)
{
	const struct fcase *fc = find_case(c, fcases, "fault");
	bool mine = fc->server != vt_is_client(c);
	long long inj0 = 0, inj = 0, fo0, fo, fb0[HU_NFB], nfb, end;
	int fds[3] = { -1, -1, -1 }, nx = 0, lfd = -1, port = 0, a, b, cc;
	int nqp;
	struct visock_info vi;
	char why[256];

	need_rdma(c);
	if (dev_func(fc))
		dev_need(c, dev_func(fc));
	hu_sysctl_set("lgr_link_conns", 1);
	hu_sysctl_set("lgr_max_links", 8);
	hu_sysctl_set("lgr_idle_ms", 0);
	vt_assert(hu_proc_wait("qps", 0, WAIT_MS) == 0,
		  "%lld QPs left from before", hu_proc("qps"));
	hu_fb_snap(fb0);
	fo0 = hu_proc("rdma_failovers");
	if (vt_is_client(c)) {
		port = su_recv_port(c);
	} else {
		lfd = su_listen(VT_FAMILY_VISOCK, false, 16, SOCK_CLOEXEC);
		su_send_port(c, lfd);
	}

	/* A: up before the fault. */
	a = pair(c, port, lfd);
	expect_rdma(a, "A (before the fault)");
	vt_sync(c, "A up");

	/* B: the fault. */
	b = -1;
	if (fc->kind != FK_SETUP && fc->kind != FK_ACCEPT) {
		b = pair(c, port, lfd);
		expect_rdma(b, "B (before its fault)");
	}
	if (mine && dev_func(fc)) {
		dev_arm(dev_func(fc));
	} else if (mine && fc->kind != FK_CLOSE) {
		inj0 = hu_fault_injected(fc->point);
		hu_fault_arm(fc->point, 1);
	}
	vt_sync(c, "armed");
	switch (fc->kind) {
	case FK_ACCEPT:
		if (vt_is_client(c))
			dropped_connect(c, port);
		break;
	case FK_SETUP:
		b = pair(c, port, lfd);
		settled_info(b, &vi);
		break;
	case FK_DATA:
		su_xfer(&b, 1, XFER_LEN, XFER_MS);
		break;
	case FK_CLOSE:
		/*
		 * Armed once the server has read everything: the client
		 * receives nothing and so owes no credits, its next cursor
		 * message is the one of close().
		 */
		if (vt_is_client(c)) {
			pl_send(b, XFER_LEN);
			vt_sync(c, "all read");
			inj0 = hu_fault_injected(fc->point);
			hu_fault_arm(fc->point, 1);
			close(b);
		} else {
			read_stream(b, XFER_LEN);
			vt_sync(c, "all read");
			su_expect_eof(b);
			close(b);
		}
		b = -1;
		break;
	}
	vt_sync(c, "B done");
	if (mine && dev_func(fc)) {
		inj = dev_disarm();
	} else if (mine) {
		hu_fault_disarm();
		inj = hu_fault_injected(fc->point) - inj0;
	}

	/* What happened to B. */
	if (fc->kind == FK_SETUP) {
		unsigned int want = mine ? fc->reason : VISOCK_FB_PEER_DECLINE;

		vt_assert(vi.vi_mode == VISOCK_MODE_TCP,
			  "B: mode %u after a fault at %s, expected TCP",
			  vi.vi_mode, fc->point);
		vt_assert(vi.vi_fallback_reason == want,
			  "B: fallback reason %s, expected %s",
			  hu_fb_name(vi.vi_fallback_reason), hu_fb_name(want));
		vt_diag("B: TCP, fallback reason %s",
			hu_fb_name(vi.vi_fallback_reason));
	} else if (fc->kind == FK_DATA) {
		hu_get_info(b, &vi);
		vt_diag("B: mode %u, flags %#x, rdma_state %u", vi.vi_mode,
			vi.vi_flags, vi.vi_rdma_state);
		vt_assert((vi.vi_flags & VISOCK_INFO_F_FAILOVER) &&
			  vi.vi_rdma_state == 4,
			  "B: flags %#x, rdma_state %u: expected a failover to TCP",
			  vi.vi_flags, vi.vi_rdma_state);
	}

	/* C: after the fault. */
	cc = pair(c, port, lfd);
	expect_rdma(cc, "C (after the fault)");
	expect_rdma(a, "A (after the fault)");
	vt_sync(c, "C up");

	fds[nx++] = a;
	fds[nx++] = cc;
	if (fc->kind == FK_SETUP)
		fds[nx++] = b;
	su_xfer(fds, nx, XFER_LEN, XFER_MS);
	expect_rdma(a, "A (after its transfer)");
	expect_rdma(cc, "C (after its transfer)");
	vt_sync(c, "transferred");
	for (a = 0; a < nx; a++)
		close(fds[a]);
	if (fc->kind == FK_DATA)
		close(b);
	if (lfd >= 0)
		close(lfd);

	nfb = fb_since(fb0, why, sizeof(why));
	fo = hu_proc("rdma_failovers") - fo0;
	if (mine)
		vt_diag("fault %s: injected %lld, fallbacks %lld, failovers %lld (%s host;%s)",
			fc->point, inj, nfb, fo, vt_is_client(c) ? "client" :
			"server", nfb ? why : " no fallback");
	else
		vt_diag("peer of the fault: fallbacks %lld, failovers %lld%s",
			nfb, fo, why);
	if (mine)
		vt_assert(inj >= 1, "the fault at %s never fired", fc->point);

	vt_assert(hu_proc_wait("lgr_connections", 0, WAIT_MS) == 0,
		  "lgr_connections %lld after close",
		  hu_proc("lgr_connections"));
	vt_assert(hu_proc_wait("qps", 0, WAIT_MS + 30000) == 0, "%lld QPs left",
		  hu_proc("qps"));
	vt_assert(hu_proc_wait("registered_bytes", 0, WAIT_MS) == 0,
		  "%lld bytes still registered", hu_proc("registered_bytes"));
	/* A QP whose teardown hangs has left the gauge, not the device. */
	end = ctl_now_ms() + (long long)WAIT_MS * vt_time_scale;
	while ((nqp = rc_qps()) > 0 && ctl_now_ms() < end)
		usleep(200 * 1000);
	vt_assert(nqp <= 0, "%d RC QPs still on the device", nqp);
	vt_sync(c, "clean");
}

/* ---- signal_storm ---- */

#define NSTORM	8
#define STORM_LEN	(512 * KiB)

static sig_atomic_t storm_sigs;	/* read after the storm stopped */
static int storm_eintr;		/* connect()/accept() interrupted */

static void storm_handler(int sig)
{
	(void)sig;
	storm_sigs++;
}

/* A process that sends SIGUSR1 to @pid every millisecond until killed. */
static pid_t storm_start(pid_t pid)
{
	struct sigaction sa = { .sa_handler = storm_handler };
	pid_t kid;

	sigemptyset(&sa.sa_mask);
	vt_try(sigaction(SIGUSR1, &sa, NULL), "sigaction");
	kid = vt_try(fork(), "fork");
	if (!kid) {
		for (;;) {
			if (kill(pid, SIGUSR1))
				_exit(0);
			usleep(1000);
		}
	}
	return kid;
}

static void storm_stop(pid_t kid)
{
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
	signal(SIGUSR1, SIG_IGN);
}

/* Blocking connect that survives EINTR: the attempt goes on. */
static int storm_connect(struct vt_ctx *c, int port)
{
	struct sockaddr_storage ss;
	socklen_t len = su_peer_addr(c, false, port, &ss), elen;
	int fd = su_socket(VT_FAMILY_VISOCK, false, SOCK_CLOEXEC), err;
	long long end = ctl_now_ms() + (long long)WAIT_MS * vt_time_scale;

	if (!connect(fd, (struct sockaddr *)&ss, len))
		return fd;
	vt_assert(errno == EINTR, "connect: %s", vt_errname(errno));
	storm_eintr++;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };

		vt_assert(ctl_now_ms() < end, "connect not done after %d ms",
			  WAIT_MS);
		if (poll(&p, 1, 100) <= 0)
			continue;
		elen = sizeof(err);
		vt_try(getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen),
		       "getsockopt(SO_ERROR)");
		vt_assert(!err, "interrupted connect: %s", vt_errname(err));
		return fd;
	}
}

static int storm_accept(int lfd)
{
	long long end = ctl_now_ms() + (long long)WAIT_MS * vt_time_scale;
	int fd;

	for (;;) {
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			return fd;
		vt_assert(errno == EINTR, "accept: %s", vt_errname(errno));
		storm_eintr++;
		vt_assert(ctl_now_ms() < end, "accept not done after %d ms",
			  WAIT_MS);
	}
}

static void signal_storm(struct vt_ctx *c)
{
	int fds[NSTORM], i, lfd = -1, port = 0;
	long long fb0[HU_NFB], nfb;
	char why[256];
	pid_t kid;

	need_rdma(c);
	vt_assert(hu_proc_wait("qps", 0, WAIT_MS) == 0,
		  "%lld QPs left from before", hu_proc("qps"));
	hu_fb_snap(fb0);
	if (vt_is_client(c)) {
		port = su_recv_port(c);
	} else {
		lfd = su_listen(VT_FAMILY_VISOCK, false, NSTORM + 4,
				SOCK_CLOEXEC);
		su_send_port(c, lfd);
	}
	vt_sync(c, "storm");
	storm_sigs = 0;
	storm_eintr = 0;
	kid = storm_start(getpid());
	for (i = 0; i < NSTORM; i++)
		fds[i] = vt_is_client(c) ? storm_connect(c, port) :
					   storm_accept(lfd);
	/*
	 * Blocking writes and reads (retried after EINTR by the helpers),
	 * one connection after the other, client to server, then back.
	 */
	for (i = 0; i < NSTORM; i++) {
		if (vt_is_client(c)) {
			pl_send(fds[i], STORM_LEN);
			vt_try(shutdown(fds[i], SHUT_WR), "shutdown");
		} else {
			pl_recv(fds[i], STORM_LEN);
		}
	}
	for (i = 0; i < NSTORM; i++) {
		if (vt_is_client(c)) {
			pl_recv(fds[i], STORM_LEN);
		} else {
			pl_send(fds[i], STORM_LEN);
			vt_try(shutdown(fds[i], SHUT_WR), "shutdown");
		}
	}
	storm_stop(kid);
	vt_diag("%d signals during %d connects/accepts and transfers",
		(int)storm_sigs, NSTORM);
	vt_diag("%d connect/accept calls interrupted", storm_eintr);
	vt_assert(storm_sigs > 0, "no signal arrived");
	for (i = 0; i < NSTORM; i++)
		expect_rdma(fds[i], "connection under signals");
	vt_sync(c, "transferred");
	for (i = 0; i < NSTORM; i++)
		close(fds[i]);
	if (lfd >= 0)
		close(lfd);
	nfb = fb_since(fb0, why, sizeof(why));
	vt_assert(!nfb, "%lld fallbacks:%s", nfb, why);
	vt_assert(hu_proc_wait("lgr_connections", 0, WAIT_MS) == 0,
		  "lgr_connections %lld after close",
		  hu_proc("lgr_connections"));
	vt_assert(hu_proc_wait("qps", 0, WAIT_MS + 30000) == 0, "%lld QPs left",
		  hu_proc("qps"));
	vt_assert(hu_proc_wait("registered_bytes", 0, WAIT_MS) == 0,
		  "%lld bytes still registered", hu_proc("registered_bytes"));
	vt_sync(c, "clean");
}

/* ---- netns_del ---- */

#define NS_NAME		"visock_fault_ns"
#define NS_PATH		"/var/run/netns/" NS_NAME
#define MODREF_PATH	"/sys/module/visock/refcnt"

static int run_cmd(const char *cmd)
{
	int st = system(cmd);

	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * Child: enter the namespace, bring up lo, enable visock, make a
 * loopback connection (data both ways) and one left in the accept
 * queue, tell the parent (@wfd) and wait until it deleted the name
 * (@rfd), move more data, exit with everything open.
 */
static void netns_child(int wfd, int rfd)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct ifreq ifr = { .ifr_name = "lo" };
	int nsfd, s, lfd, cfd, afd, pend;
	socklen_t len = sizeof(sin);
	char ch = 0, buf[4096];
	ssize_t n;
	int i;

	nsfd = open(NS_PATH, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0 || setns(nsfd, CLONE_NEWNET))
		_exit(10);
	close(nsfd);
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr))
		_exit(11);
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr))
		_exit(12);
	close(s);
	if (write_str(ENABLE_PATH, "1\n"))
		_exit(13);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_VISOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(lfd, 4) || getsockname(lfd, (struct sockaddr *)&sin, &len))
		_exit(14);
	cfd = socket(AF_VISOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (cfd < 0 || connect(cfd, (struct sockaddr *)&sin, sizeof(sin)))
		_exit(15);
	afd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (afd < 0)
		_exit(16);
	pend = socket(AF_VISOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (pend < 0 || connect(pend, (struct sockaddr *)&sin, sizeof(sin)))
		_exit(17);
	memset(buf, 0x5a, sizeof(buf));
	for (i = 0; i < 2; i++) {
		if (write(cfd, buf, sizeof(buf)) != sizeof(buf))
			_exit(18);
		for (n = 0; n < (ssize_t)sizeof(buf);) {
			ssize_t r = read(afd, buf, sizeof(buf) - n);

			if (r <= 0)
				_exit(19);
			n += r;
		}
		if (!i) {
			unsigned int r = 255;
			socklen_t rl = sizeof(r);

			/* Tell the parent the connection's fallback reason. */
			getsockopt(cfd, SOL_VISOCK, VISOCK_FALLBACK_REASON, &r,
				   &rl);
			ch = (char)r;
			/* Wait for the namespace's name to go. */
			if (write(wfd, &ch, 1) != 1 || read(rfd, &ch, 1) != 1)
				_exit(20);
		}
	}
	/* Exit with the listener, both ends and the queued one open. */
	_exit(0);
}

static void netns_del(struct vt_ctx *c)
{
	long long ref0, ref, sockets0, sockets;
	int up[2], down[2], st, rc;
	char ch;
	pid_t kid;

	if (c->family != VT_FAMILY_VISOCK)
		vt_skip("family inet: needs AF_VISOCK");
	if (!vt_is_client(c)) {
		vt_sync(c, "netns done");
		return;
	}
	if (run_cmd("ip netns del " NS_NAME " 2>/dev/null; ip netns add " NS_NAME))
		vt_skip("ip netns add failed (no iproute2?)");
	ref0 = hu_read_ll(MODREF_PATH);
	sockets0 = hu_proc("sockets");
	vt_try(pipe(up), "pipe");
	vt_try(pipe(down), "pipe");
	kid = vt_try(fork(), "fork");
	if (!kid)
		netns_child(up[1], down[0]);
	rc = read(up[0], &ch, 1);
	if (rc != 1) {
		waitpid(kid, &st, 0);
		run_cmd("ip netns del " NS_NAME " 2>/dev/null");
		vt_fail("child in the namespace failed (exit %d)",
			WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	}
	vt_diag("module refcnt %lld before, %lld with 4 sockets in the namespace",
		ref0, hu_read_ll(MODREF_PATH));
	vt_diag("the loopback connection's fallback reason: %s",
		hu_fb_name((unsigned char)ch));
	vt_assert(ref0 >= 0, "cannot read " MODREF_PATH);
	vt_assert(!run_cmd("ip netns del " NS_NAME), "ip netns del failed");
	vt_assert(write(down[1], &ch, 1) == 1, "pipe: %s", strerror(errno));
	vt_try(waitpid(kid, &st, 0), "waitpid");
	vt_assert(WIFEXITED(st) && !WEXITSTATUS(st),
		  "child in the namespace: status %#x", st);
	/* The namespace is cleaned up asynchronously. */
	{
		long long end = ctl_now_ms() + 60000LL * vt_time_scale;

		while ((ref = hu_read_ll(MODREF_PATH)) != ref0 && ctl_now_ms() < end)
			usleep(100 * 1000);
	}
	sockets = hu_proc("sockets");
	vt_diag("module refcnt %lld after the namespace went; init netns sockets %lld -> %lld",
		ref, sockets0, sockets);
	vt_assert(ref == ref0, "module refcnt %lld, was %lld: a leaked reference",
		  ref, ref0);
	vt_assert(sockets == sockets0, "init netns sockets %lld, was %lld",
		  sockets, sockets0);
	close(up[0]);
	close(up[1]);
	close(down[0]);
	close(down[1]);
	vt_sync(c, "netns done");
}

/* ---- allocation failure campaigns: failslab and fail_page_alloc ---- */

/*
 * The kernel's fault injection (lib/fault-inject.c) is global: an
 * allocation fails when the probability says so and one of the first
 * stacktrace-depth return addresses on its stack lies in [require-start,
 * require-end).  That range is visock's text, so only allocations made
 * by visock, or by what visock calls (at most stacktrace-depth frames
 * down: the verbs, Soft-RoCE, sk_alloc(), TCP), fail, in process and in
 * softirq context.  "times" counts down once per injected failure: what
 * it lost is the number injected.
 */
#define FI_SLAB		DEBUGFS_DIR "/failslab/"
#define FI_PAGE		DEBUGFS_DIR "/fail_page_alloc/"
#define FI_TIMES	1000000
#define MOD_TEXT	"/sys/module/visock/sections/.text"
#define KALLSYMS	"/proc/kallsyms"

#define AF_SLAB		1	/* failslab */
#define AF_PAGE		2	/* fail_page_alloc */

#define AP_SETUP	1	/* socket, connect, accept, handshake, link */
#define AP_DATA		2	/* the streams and their shutdown */
#define AP_CLOSE	4	/* close() and the teardown behind it */
#define AP_ALL		(AP_SETUP | AP_DATA | AP_CLOSE)

#define A_ROUNDS	4
#define A_CONNS		8		/* per round */
#define A_MAX		(2 * A_CONNS)	/* server: extra children */
#define A_LEN		(64 * KiB)	/* each way, per connection */
#define A_XFER_MS	25000	/* unscaled: below a control message's 30 s */
#define A_ACCEPT_MS	20000		/* after the client's list came */

struct acase {
	const char *name;
	unsigned int attrs;	/* AF_* */
	unsigned int phases;	/* AP_*: injection on during these */
	unsigned int prob;	/* percent */
	unsigned int depth;	/* stack frames searched for visock */
};

/*
 * Every stack frame the filter can see (32) counts, so TCP's own
 * allocations below visock fail too, except under tcp_send_fin() and
 * tcp_send_active_reset() (the reject range, see tcp_fin_rst()): TCP
 * does not try again to send a FIN or RST whose buffer it could not
 * allocate, and a peer then waits for ever - TCP's limit, not visock's.
 */
static const struct acase acases[] = {
	{ "alloc_slab_setup", AF_SLAB, AP_SETUP, 20, 32 },
	{ "alloc_slab_data", AF_SLAB, AP_DATA, 20, 32 },
	{ "alloc_slab_close", AF_SLAB, AP_CLOSE, 50, 32 },
	{ "alloc_slab_all", AF_SLAB, AP_ALL, 5, 32 },
	{ "alloc_page_setup", AF_PAGE, AP_SETUP, 50, 32 },
	{ "alloc_page_all", AF_PAGE, AP_ALL, 20, 32 },
	{ "alloc_both_all", AF_SLAB | AF_PAGE, AP_ALL, 10, 32 },
};

/* The files of a fault attribute that a campaign sets. */
static const char *const fi_files[] = {
	"probability", "interval", "times", "space", "verbose",
	"task-filter", "stacktrace-depth", "require-start", "require-end",
	"reject-start", "reject-end", "ignore-gfp-wait", "cache-filter",
	"ignore-gfp-highmem", "min-order",
};

#define NFI	ARRAY_SIZE(fi_files)

static char fi_saved[2][NFI][40];	/* "" when absent */

static const char *fi_dir(unsigned int attr)
{
	return attr == AF_SLAB ? FI_SLAB : FI_PAGE;
}

static void fi_path(char *buf, size_t size, unsigned int attr,
		    const char *file)
{
	snprintf(buf, size, "%s%s", fi_dir(attr), file);
}

/* Before any test: what to put back. */
static void fi_save(void)
{
	unsigned int a, i;
	char path[160];

	for (a = 0; a < 2; a++) {
		for (i = 0; i < NFI; i++) {
			fi_path(path, sizeof(path), a + 1, fi_files[i]);
			if (hu_read_text(path, fi_saved[a][i],
					 sizeof(fi_saved[a][i])))
				fi_saved[a][i][0] = '\0';
		}
	}
}

/* Cleanup hook: probability 0 first (that alone stops it), then the rest. */
static void fi_restore(void)
{
	char path[160], buf[48];
	unsigned int a, i;

	for (a = 0; a < 2; a++) {
		if (!fi_saved[a][0][0])
			continue;
		fi_path(path, sizeof(path), a + 1, "probability");
		write_str(path, "0\n");
		for (i = NFI; i-- > 0;) {
			if (!fi_saved[a][i][0])
				continue;
			fi_path(path, sizeof(path), a + 1, fi_files[i]);
			snprintf(buf, sizeof(buf), "%s\n", fi_saved[a][i]);
			write_str(path, buf);
		}
	}
}

static void fi_set(unsigned int attr, const char *file, const char *fmt,
		   unsigned long long val)
{
	char path[160], buf[48];

	fi_path(path, sizeof(path), attr, file);
	snprintf(buf, sizeof(buf), fmt, val);
	vt_assert(!write_str(path, buf), "write %s to %s: %s", buf, path,
		  strerror(errno));
}

/*
 * visock's text: from its .text section (or its lowest function, if
 * lower) to the page after the page of its highest function in
 * /proc/kallsyms (a module's text is a page-aligned allocation; the last
 * function may run into the next page, which is still the module's or
 * the unmapped guard page behind it).
 */
static void visock_text(unsigned long long *start, unsigned long long *end)
{
	unsigned long long a, lo = ~0ULL, hi = 0, text;
	char line[512], type, name[256], mod[64];
	FILE *f;

	vt_assert(!hu_read_text(MOD_TEXT, line, sizeof(line)), "cannot read %s",
		  MOD_TEXT);
	/* Kernel addresses do not fit a long long. */
	text = strtoull(line, NULL, 16);
	vt_assert(text, "%s: \"%s\"", MOD_TEXT, line);
	f = fopen(KALLSYMS, "re");
	vt_assert(f, "%s: %s", KALLSYMS, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s [%63[^]]]", &a, &type, name,
			   mod) != 4 || strcmp(mod, "visock") ||
		    (type != 't' && type != 'T'))
			continue;
		if (a < lo)
			lo = a;
		if (a > hi)
			hi = a;
	}
	fclose(f);
	vt_assert(hi && lo, "no visock function in %s (kptr_restrict?)",
		  KALLSYMS);
	*start = lo < text ? lo : text;
	*end = (hi | 0xfff) + 1 + 0x1000;
}

/* @file of every attribute in @attrs can be written. */
static bool fi_usable(unsigned int attrs, const char *file)
{
	char path[160];
	unsigned int a;

	if (access(DEBUGFS_DIR "/failslab", F_OK))
		mount("debugfs", DEBUGFS_DIR, "debugfs", 0, NULL);
	for (a = AF_SLAB; a <= AF_PAGE; a++) {
		fi_path(path, sizeof(path), a, file);
		if ((attrs & a) && access(path, W_OK))
			return false;
	}
	return true;
}

/*
 * The lowest address of a function in /proc/kallsyms (open as @f) above
 * @after, only among the functions of module @mod unless it is NULL;
 * ~0ULL if there is none.
 */
static unsigned long long next_func(FILE *f, unsigned long long after,
				    const char *mod)
{
	unsigned long long a, next = ~0ULL;
	char line[512], type, name[256], m[64];
	int n;

	rewind(f);
	while (fgets(line, sizeof(line), f)) {
		n = sscanf(line, "%llx %c %255s [%63[^]]]", &a, &type, name, m);
		if (n < 3 || (mod && (n != 4 || strcmp(m, mod))))
			continue;
		if ((type == 't' || type == 'T') && a > after && a < next &&
		    strncmp(name, "__pfx_", 6))
			next = a;
	}
	return next;
}

/*
 * The text of tcp_send_fin() and tcp_send_active_reset(), neighbours in
 * tcp_output.c: from the lower of the two to the next function after
 * the higher one; 0, 0 if either is not in /proc/kallsyms.
 */
static void tcp_fin_rst(unsigned long long *start, unsigned long long *end)
{
	unsigned long long a, fin = 0, rst = 0, hi, next;
	char line[512], type, name[256];
	FILE *f;

	*start = 0;
	*end = 0;
	f = fopen(KALLSYMS, "re");
	vt_assert(f, "%s: %s", KALLSYMS, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &a, &type, name) != 3)
			continue;
		if (!strcmp(name, "tcp_send_fin"))
			fin = a;
		else if (!strcmp(name, "tcp_send_active_reset"))
			rst = a;
	}
	if (!fin || !rst) {
		fclose(f);
		return;
	}
	hi = fin > rst ? fin : rst;
	next = next_func(f, hi, NULL);
	fclose(f);
	*start = fin < rst ? fin : rst;
	*end = next;
}

/* Both halves: skip unless the kernel can restrict injection to visock. */
static void need_fi(struct vt_ctx *c, unsigned int attrs)
{
	const char *why = "";

	if (c->family != VT_FAMILY_VISOCK)
		why = "family inet: needs AF_VISOCK";
	else if (c->loopback)
		why = "both halves on one host: loopback connections do not use RDMA";
	else if (hu_read_ll(ENABLE_PATH) != 1)
		why = "visock not loaded or net.visock.enable is not 1";
	else if (hu_proc("rdma_devices") < 1)
		why = "no RDMA device";
	else if (!fi_usable(attrs, "probability"))
		why = "no debugfs failslab/fail_page_alloc (kernel config)";
	else if (!fi_usable(attrs, "stacktrace-depth"))
		why = "no fault injection stack trace filter (kernel config)";
	else if (access(MOD_TEXT, R_OK))
		why = "no " MOD_TEXT;
	vt_agree(c, !*why, why);
}

struct afi {
	const struct acase *ac;
	unsigned long long start, end;		/* visock */
	unsigned long long rstart, rend;	/* not under these */
	long long injected[2];	/* per attribute */
	bool armed;
};

/*
 * Arm attribute @a: fail @times allocations, with probability @prob %,
 * of those with a return address in [@start, @end) and none in
 * [@rstart, @rend) among the @depth innermost frames of their stack.
 */
static void fi_arm_attr(unsigned int a, unsigned long long times,
			unsigned int depth, unsigned long long start,
			unsigned long long end, unsigned long long rstart,
			unsigned long long rend, unsigned int prob)
{
	fi_set(a, "probability", "%llu\n", 0);
	fi_set(a, "interval", "%llu\n", 1);
	fi_set(a, "times", "%llu\n", times);
	fi_set(a, "space", "%llu\n", 0);
	fi_set(a, "verbose", "%llu\n", 0);
	fi_set(a, "task-filter", "%llu\n", 0);
	fi_set(a, "stacktrace-depth", "%llu\n", depth);
	fi_set(a, "require-start", "0x%llx\n", start);
	fi_set(a, "require-end", "0x%llx\n", end);
	fi_set(a, "reject-start", "0x%llx\n", rstart);
	fi_set(a, "reject-end", "0x%llx\n", rend);
	/* Sleeping allocations fail too. */
	fi_set(a, "ignore-gfp-wait", "%llu\n", 0);
	if (a == AF_SLAB) {
		fi_set(a, "cache-filter", "%llu\n", 0);
	} else {
		fi_set(a, "ignore-gfp-highmem", "%llu\n", 0);
		fi_set(a, "min-order", "%llu\n", 0);
	}
	fi_set(a, "probability", "%llu\n", prob);
}

static void fi_arm(struct afi *fi)
{
	unsigned int a;

	for (a = AF_SLAB; a <= AF_PAGE; a++)
		if (fi->ac->attrs & a)
			fi_arm_attr(a, FI_TIMES, fi->ac->depth, fi->start,
				    fi->end, fi->rstart, fi->rend,
				    fi->ac->prob);
	fi->armed = true;
}

static void fi_disarm(struct afi *fi)
{
	char path[160];
	unsigned int a;
	long long t;

	if (!fi->armed)
		return;
	for (a = AF_SLAB; a <= AF_PAGE; a++) {
		if (!(fi->ac->attrs & a))
			continue;
		fi_set(a, "probability", "%llu\n", 0);
		fi_path(path, sizeof(path), a, "times");
		t = hu_read_ll(path);
		vt_assert(t >= 0 && t <= FI_TIMES, "%s: %lld", path, t);
		fi->injected[a - 1] += FI_TIMES - t;
	}
	fi->armed = false;
}

/*
 * The text of @func of a module: from it to the module's next function;
 * 0, 0 if it is not in /proc/kallsyms.
 */
static void mod_func(const char *func, unsigned long long *start,
		     unsigned long long *end)
{
	unsigned long long a, next;
	char line[512], type, name[256], mod[64], fmod[64] = "";
	FILE *f;

	*start = 0;
	*end = 0;
	f = fopen(KALLSYMS, "re");
	vt_assert(f, "%s: %s", KALLSYMS, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s [%63[^]]]", &a, &type, name,
			   mod) == 4 && (type == 't' || type == 'T') &&
		    !strcmp(name, func)) {
			*start = a;
			snprintf(fmod, sizeof(fmod), "%s", mod);
			break;
		}
	}
	if (*start) {
		next = next_func(f, *start, fmod);
		if (next != ~0ULL)
			*end = next;
		else
			*start = 0;
	}
	fclose(f);
}

/* Both halves: skip unless failslab can fail an allocation under @func. */
static void dev_need(struct vt_ctx *c, const char *func)
{
	unsigned long long start, end;
	static char why[128];

	why[0] = '\0';
	if (!fi_usable(AF_SLAB, "probability")) {
		snprintf(why, sizeof(why), "no debugfs failslab (kernel config)");
	} else if (!fi_usable(AF_SLAB, "stacktrace-depth")) {
		snprintf(why, sizeof(why),
			 "no fault injection stack trace filter (kernel config)");
	} else {
		mod_func(func, &start, &end);
		if (!start)
			snprintf(why, sizeof(why),
				 "no %s() in %s (not Soft-RoCE?)", func,
				 KALLSYMS);
	}
	vt_agree(c, !why[0], why);
}

/* failslab, once, for the first allocation under @func. */
static void dev_arm(const char *func)
{
	unsigned long long start, end;

	mod_func(func, &start, &end);
	vt_assert(start, "no %s() in %s", func, KALLSYMS);
	vt_diag("failslab once under [%#llx, %#llx) (%s)", start, end, func);
	fi_arm_attr(AF_SLAB, 1, 32, start, end, 0, 0, 100);
}

/* Disarm; how many allocations failed (0 or 1). */
static long long dev_disarm(void)
{
	char path[160];
	long long t;

	fi_set(AF_SLAB, "probability", "%llu\n", 0);
	fi_path(path, sizeof(path), AF_SLAB, "times");
	t = hu_read_ll(path);
	vt_assert(t == 0 || t == 1, "%s: %lld", path, t);
	return 1 - t;
}

static void fi_phase_on(struct afi *fi, unsigned int phase)
{
	if (fi->ac->phases & phase)
		fi_arm(fi);
}

enum aout { AO_NONE, AO_OK, AO_ERR, AO_SHORT, AO_HANG };

static const char *const aout_names[] = {
	"none", "ok", "error", "eof", "hang",
};

struct aconn {
	int fd;
	int port;		/* the client's port: the key on both hosts */
	enum aout out;
	int err;
	struct visock_info vi;	/* after the transfer */
	struct pl_tx tx;
	struct pl_rx rx;
	uint8_t *buf;
	size_t off, n;
	bool shut, eof;
};

struct astats {
	long long conns, setup_err, ok, err, eof, dropped;
	long long rdma, fallback, failover;
	char errs[256];		/* errno names seen */
};

static void note_err(struct astats *st, int err)
{
	const char *n = vt_errname(err);
	size_t len = strlen(st->errs);

	if (strstr(st->errs, n))
		return;
	if (len + strlen(n) + 2 < sizeof(st->errs))
		snprintf(st->errs + len, sizeof(st->errs) - len, " %s", n);
}

/* Reset a connection the application saw fail: the peer must not wait. */
static void abort_conn(struct aconn *x)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(x->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(x->fd);
	x->fd = -1;
}

/*
 * Client: a non-blocking connect that settles within the bound (the
 * handshake included); the socket or -1 with the error in *@err.
 */
static int a_connect(struct vt_ctx *c, int port, int *err)
{
	long long end = ctl_now_ms() + (long long)WAIT_MS * vt_time_scale;
	struct sockaddr_storage ss;
	socklen_t len = su_peer_addr(c, false, port, &ss), el;
	int fd, e = 0;

	fd = socket(AF_VISOCK, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    VISOCKPROTO_TCP4);
	if (fd < 0) {
		*err = errno;
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&ss, len) && errno != EINPROGRESS) {
		*err = errno;
		close(fd);
		return -1;
	}
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };

		vt_assert(ctl_now_ms() < end,
			  "connect neither done nor failed after %d ms",
			  WAIT_MS * vt_time_scale);
		if (poll(&p, 1, 100) > 0)
			break;
	}
	el = sizeof(e);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el))
		e = errno;
	if (e) {
		*err = e;
		close(fd);
		return -1;
	}
	return fd;
}

static int peer_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getpeername(fd, (struct sockaddr *)&ss, &len))
		return -1;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

static bool port_listed(const int *ports, int n, int port)
{
	int i;

	for (i = 0; i < n; i++)
		if (ports[i] == port)
			return true;
	return false;
}

/*
 * Client: A_CONNS connections, then the list of their ports to the
 * server.  Server: accept (also while waiting for the list) until every
 * listed port is accepted or A_ACCEPT_MS after the list came; then the
 * listener goes, which resets children nobody accepted.
 */
static int a_setup(struct vt_ctx *c, int lfd, int port, struct aconn *cs,
		   struct astats *st)
{
	char line[CTL_LINE_MAX], *p, *q;
	int n = 0, i, err, fd, ports[A_MAX], np = -1, got = 0;
	long long end = 0;
	size_t len;

	if (vt_is_client(c)) {
		len = snprintf(line, sizeof(line), "PORTS");
		for (i = 0; i < A_CONNS; i++) {
			fd = a_connect(c, port, &err);
			st->conns++;
			if (fd < 0) {
				st->setup_err++;
				note_err(st, err);
				continue;
			}
			cs[n].fd = fd;
			cs[n].port = su_port(fd);
			len += snprintf(line + len, sizeof(line) - len, " %d",
					cs[n].port);
			n++;
		}
		vt_send(c, "%s", line);
		return n;
	}
	su_nonblock(lfd, true);
	for (;;) {
		struct pollfd pf[2] = {
			{ .fd = lfd, .events = POLLIN },
			{ .fd = np < 0 ? c->ctl : -1, .events = POLLIN },
		};

		if (np >= 0 && (got == np || ctl_now_ms() > end))
			break;
		if (poll(pf, 2, 200) < 0 && errno != EINTR)
			vt_fail("poll: %s", strerror(errno));
		if (pf[1].revents) {
			vt_recv(c, line, sizeof(line));
			vt_assert(!strncmp(line, "PORTS", 5),
				  "expected PORTS, got \"%s\"", line);
			np = 0;
			for (p = line + 5; np < A_MAX; p = q) {
				long v = strtol(p, &q, 10);

				if (q == p)
					break;
				ports[np++] = (int)v;
			}
			/* Not scaled: the peer waits in a sync meanwhile. */
			end = ctl_now_ms() + A_ACCEPT_MS;
			for (i = 0; i < n; i++)
				got += port_listed(ports, np, cs[i].port);
		}
		if (!pf[0].revents || n == A_MAX)
			continue;
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR) {
				st->setup_err++;
				note_err(st, errno);
			}
			continue;
		}
		cs[n].fd = fd;
		cs[n].port = peer_port(fd);
		if (np >= 0)
			got += port_listed(ports, np, cs[n].port);
		st->conns++;
		n++;
	}
	return n;
}

/*
 * Every connection sends its stream of A_LEN bytes, shuts down writing
 * and reads the peer's up to EOF.  An error ends (resets) that
 * connection only; corrupted data fails the test at once.
 */
static void a_xfer(struct aconn *cs, int n)
{
	long long end = ctl_now_ms() + A_XFER_MS;
	struct pollfd pfd[A_MAX];
	uint8_t *in = malloc(65536);
	int i, left = 0;
	ssize_t r;

	vt_assert(in, "out of memory");
	for (i = 0; i < n; i++) {
		struct aconn *x = &cs[i];

		pl_tx_init(&x->tx, A_LEN);
		pl_rx_init(&x->rx, A_LEN);
		x->buf = malloc(65536);
		vt_assert(x->buf, "out of memory");
		su_nonblock(x->fd, true);
		left++;
	}
	while (left) {
		for (i = 0; i < n; i++) {
			struct aconn *x = &cs[i];

			pfd[i].fd = x->out == AO_NONE ? x->fd : -1;
			pfd[i].events = (x->shut ? 0 : POLLOUT) |
					(x->eof ? 0 : POLLIN);
			pfd[i].revents = 0;
		}
		if (poll(pfd, n, 1000) < 0 && errno != EINTR)
			vt_fail("poll: %s", strerror(errno));
		if (ctl_now_ms() > end) {
			for (i = 0; i < n; i++)
				if (cs[i].out == AO_NONE)
					cs[i].out = AO_HANG;
			break;
		}
		for (i = 0; i < n; i++) {
			struct aconn *x = &cs[i];

			if (pfd[i].fd < 0 || !pfd[i].revents)
				continue;
			if (!x->shut && (pfd[i].revents & (POLLOUT | POLLERR))) {
				if (x->off == x->n) {
					x->off = 0;
					x->n = pl_tx_fill(&x->tx, x->buf, 65536);
				}
				r = send(x->fd, x->buf + x->off, x->n - x->off,
					 MSG_NOSIGNAL);
				if (r < 0 && errno != EAGAIN && errno != EINTR) {
					x->out = AO_ERR;
					x->err = errno;
				}
				if (r > 0)
					x->off += (size_t)r;
				if (x->out == AO_NONE && x->off == x->n &&
				    pl_tx_done(&x->tx)) {
					if (shutdown(x->fd, SHUT_WR)) {
						x->out = AO_ERR;
						x->err = errno;
					}
					x->shut = true;
				}
			}
			if (x->out == AO_NONE && !x->eof &&
			    (pfd[i].revents & (POLLIN | POLLERR | POLLHUP))) {
				r = recv(x->fd, in, 65536, 0);
				if (r < 0 && errno != EAGAIN && errno != EINTR) {
					x->out = AO_ERR;
					x->err = errno;
				}
				if (r > 0 && pl_rx_feed(&x->rx, in, (size_t)r))
					vt_fail("connection of port %d: %s",
						x->port, x->rx.err);
				if (!r && !pl_rx_done(&x->rx))
					x->out = AO_SHORT;
				x->eof = !r;
			}
			if (x->out == AO_NONE && x->shut && x->eof)
				x->out = AO_OK;
			if (x->out != AO_NONE)
				left--;
			/* The peer must learn of a failure at once. */
			if (x->out == AO_ERR || x->out == AO_SHORT)
				abort_conn(x);
		}
	}
	for (i = 0; i < n; i++)
		free(cs[i].buf);
	free(in);
}

/* Exchange the outcomes and judge this host's connections. */
static void a_judge(struct vt_ctx *c, struct aconn *cs, int n,
		    struct astats *st)
{
	char line[CTL_LINE_MAX];
	int pport[A_MAX], pout[A_MAX], np = 0, i, j;

	for (i = 0; i < n; i++)
		vt_send(c, "C %d %d", cs[i].port, cs[i].out);
	vt_send(c, "END");
	for (;;) {
		int pt, o;

		vt_recv(c, line, sizeof(line));
		if (!strcmp(line, "END"))
			break;
		vt_assert(sscanf(line, "C %d %d", &pt, &o) == 2 && np < A_MAX,
			  "bad outcome line \"%s\"", line);
		pport[np] = pt;
		pout[np++] = o;
	}
	for (i = 0; i < n; i++) {
		struct aconn *x = &cs[i];
		int po = AO_NONE;

		for (j = 0; j < np; j++)
			if (pport[j] == x->port)
				po = pout[j];
		vt_assert(x->out != AO_HANG,
			  "port %d: neither done nor failed after %d ms (peer: %s), mode %u",
			  x->port, A_XFER_MS, aout_names[po],
			  x->vi.vi_mode);
		switch (x->out) {
		case AO_OK:
			/*
			 * Our stream arrived whole too, unless the peer got
			 * an error (it cannot see a whole stream and EOF
			 * and call it short).
			 */
			vt_assert(po == AO_OK || po == AO_ERR,
				  "port %d: complete here, %s on the peer",
				  x->port, aout_names[po]);
			st->ok++;
			break;
		case AO_ERR:
			st->err++;
			note_err(st, x->err);
			break;
		case AO_SHORT:
			/*
			 * End of stream before the end of the data: only
			 * clean if the peer's application got an error or
			 * never had the connection (a child dropped on
			 * setup, or a connect() that failed).
			 */
			vt_assert(po == AO_ERR || po == AO_NONE,
				  "port %d: end of stream after %llu of %llu bytes, but the peer saw %s: data lost silently",
				  x->port, (unsigned long long)x->rx.pos,
				  (unsigned long long)pl_total(A_LEN),
				  aout_names[po]);
			if (po == AO_NONE)
				st->dropped++;
			else
				st->eof++;
			break;
		default:
			break;
		}
		if (x->vi.vi_flags & VISOCK_INFO_F_FAILOVER)
			st->failover++;
		else if (x->vi.vi_mode == VISOCK_MODE_RDMA)
			st->rdma++;
		else
			st->fallback++;
	}
}

static void a_round(struct vt_ctx *c, struct afi *fi, struct astats *st)
{
	struct aconn cs[A_MAX];
	int n, i, lfd = -1, port = 0;

	memset(cs, 0, sizeof(cs));
	if (vt_is_client(c)) {
		port = su_recv_port(c);
	} else {
		lfd = su_listen(VT_FAMILY_VISOCK, false, A_MAX, SOCK_CLOEXEC);
		su_send_port(c, lfd);
	}
	vt_sync(c, "setup");
	fi_phase_on(fi, AP_SETUP);
	n = a_setup(c, lfd, port, cs, st);
	if (lfd >= 0)
		close(lfd);
	fi_disarm(fi);
	for (i = 0; i < n; i++)
		hu_get_info(cs[i].fd, &cs[i].vi);
	vt_sync(c, "set up");

	fi_phase_on(fi, AP_DATA);
	a_xfer(cs, n);
	fi_disarm(fi);
	for (i = 0; i < n; i++)
		if (cs[i].fd >= 0)
			hu_get_info(cs[i].fd, &cs[i].vi);
	a_judge(c, cs, n, st);
	vt_sync(c, "judged");

	fi_phase_on(fi, AP_CLOSE);
	for (i = 0; i < n; i++)
		if (cs[i].fd >= 0)
			close(cs[i].fd);
	vt_sync(c, "closed");
	/* Let the teardown run under injection, bounded. */
	hu_proc_wait("lgr_connections", 0, 15000);
	fi_disarm(fi);
	vt_sync(c, "round");
}

/*
 * RC queue pairs the RDMA core still lists ("rdma resource show qp"):
 * the "qps" gauge drops when a QP starts to go, this when it is gone.
 * -1 if the rdma tool cannot tell.
 */
static int rc_qps(void)
{
	char line[512];
	int n = 0;
	FILE *f;

	f = popen("rdma resource show qp 2>/dev/null", "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += !!strstr(line, " type RC ");
	return pclose(f) ? -1 : n;
}

static void alloc_case(struct vt_ctx *c)
{
	struct afi fi = { .ac = find_case(c, acases, "allocation") };
	struct astats st = { .conns = 0 };
	long long sockets0, fb0[HU_NFB], nfb, fo0, inj, end;
	int r, fd, lfd = -1, port = 0, nqp;
	char why[256];

	need_fi(c, fi.ac->attrs);
	hu_sysctl_set("lgr_idle_ms", 0);
	vt_assert(hu_proc_wait("qps", 0, WAIT_MS) == 0,
		  "%lld QPs left from before", hu_proc("qps"));
	vt_assert(hu_proc_wait("sockets_closing", 0, WAIT_MS) == 0,
		  "%lld sockets closing from before",
		  hu_proc("sockets_closing"));
	visock_text(&fi.start, &fi.end);
	tcp_fin_rst(&fi.rstart, &fi.rend);
	vt_diag("injecting under [%#llx, %#llx) (visock's text), %u%%, stack depth %u",
		fi.start, fi.end, fi.ac->prob, fi.ac->depth);
	vt_diag("not under [%#llx, %#llx) (tcp_send_fin, tcp_send_active_reset)",
		fi.rstart, fi.rend);
	sockets0 = hu_proc("sockets");
	hu_fb_snap(fb0);
	fo0 = hu_proc("rdma_failovers");

	for (r = 0; r < A_ROUNDS; r++)
		a_round(c, &fi, &st);

	nfb = fb_since(fb0, why, sizeof(why));
	inj = fi.injected[0] + fi.injected[1];
	vt_diag("%s host: injected %lld (failslab %lld, fail_page_alloc %lld) in %d rounds",
		vt_is_client(c) ? "client" : "server", inj, fi.injected[0],
		fi.injected[1], A_ROUNDS);
	vt_diag("connections %lld: setup failed %lld, complete %lld, error %lld,",
		st.conns, st.setup_err, st.ok, st.err);
	vt_diag("  eof after the peer's error %lld, dropped %lld;%s%s",
		st.eof, st.dropped, *st.errs ? " errors" : "", st.errs);
	vt_diag("modes: RDMA %lld, fallback %lld, failover %lld; fallbacks %lld:%s; failovers %lld",
		st.rdma, st.fallback, st.failover, nfb, nfb ? why : " none",
		hu_proc("rdma_failovers") - fo0);
	vt_assert(inj > 0, "nothing was injected on this host");

	/* Injection off: what it broke must be gone. */
	vt_assert(hu_proc_wait("lgr_connections", 0, WAIT_MS) == 0,
		  "lgr_connections %lld after close",
		  hu_proc("lgr_connections"));
	vt_assert(hu_proc_wait("qps", 0, WAIT_MS + 30000) == 0, "%lld QPs left",
		  hu_proc("qps"));
	vt_assert(hu_proc_wait("registered_bytes", 0, WAIT_MS) == 0,
		  "%lld bytes still registered", hu_proc("registered_bytes"));
	vt_assert(hu_proc_wait("sockets", sockets0, WAIT_MS + 30000) ==
		  sockets0, "%lld visock sockets, %lld before the test",
		  hu_proc("sockets"), sockets0);
	/* A QP whose teardown hangs has left the gauge, not the device. */
	end = ctl_now_ms() + WAIT_MS;
	while ((nqp = rc_qps()) > 0 && ctl_now_ms() < end)
		usleep(200 * 1000);
	if (nqp < 0)
		vt_diag("no rdma tool: the device's QPs are not checked");
	vt_assert(nqp <= 0, "%d RC QPs still on the device", nqp);
	vt_sync(c, "clean");

	/* And a new connection is on RDMA. */
	if (vt_is_client(c)) {
		port = su_recv_port(c);
		fd = su_connect(c, VT_FAMILY_VISOCK, false, port);
	} else {
		lfd = su_listen(VT_FAMILY_VISOCK, false, 4, SOCK_CLOEXEC);
		su_send_port(c, lfd);
		fd = su_accept(lfd, SOCK_CLOEXEC);
		close(lfd);
	}
	expect_rdma(fd, "the connection after the campaign");
	su_xfer(&fd, 1, XFER_LEN, XFER_MS);
	close(fd);
	vt_sync(c, "after");
	vt_assert(hu_proc_wait("qps", 0, WAIT_MS + 30000) == 0, "%lld QPs left",
		  hu_proc("qps"));
	vt_assert(hu_proc_wait("registered_bytes", 0, WAIT_MS) == 0,
		  "%lld bytes still registered", hu_proc("registered_bytes"));
	vt_sync(c, "done");
}

/* ---- faults in a lazy connection's switch ---- */

#define LAZY_L		4096	/* net.visock.lazy_bytes */
#define LAZY_XFER	(1024 * KiB)

struct lcase {
	const char *name;	/* test name */
	const char *point;	/* fault point */
	bool server;		/* armed on the server host */
};

/*
 * Steps of the switch that can fail: the client's before it writes its
 * SWITCH (it then does not send it), the server's before its reply is
 * out (it declines from the QP's own slot).
 */
static const struct lcase lcases[] = {
	{ "lazy_link_alloc_client", "link_alloc", false },
	{ "lazy_rbuf_alloc_client", "rbuf_alloc", false },
	{ "lazy_post_reg_client", "post_reg", false },
	{ "lazy_dp_alloc_client", "dp_alloc", false },
	{ "lazy_link_alloc_server", "link_alloc", true },
	{ "lazy_rbuf_alloc_server", "rbuf_alloc", true },
	{ "lazy_mr_alloc_server", "mr_alloc", true },
	{ "lazy_post_reg_server", "post_reg", true },
	{ "lazy_dp_alloc_server", "dp_alloc", true },
	{ "lazy_post_ctrl_server", "post_ctrl", true },
};

/*
 * lazy_<point>_<side>: with net.visock.lazy_bytes set on both hosts and
 * a keeper connection holding the QP up, one fault at <point> on <side>
 * hits the switch of a lazy connection that then moves 1 MiB each way
 * (checksummed).  A switch that cannot complete leaves the connection on
 * TCP: the data arrives intact, the connection is in mode TCP (or RDMA,
 * had the fault missed it), and neither host counts a reset switch or an
 * aborted handshake.  The fault must have fired.
 */
static void lazy_fault(struct vt_ctx *c)
{
	const struct lcase *lc = find_case(c, lcases, "lazy fault");
	long long inj0 = 0, reset, aborted;
	int lfd = -1, port = 0, keeper, fd;
	struct visock_info vi;
	bool mine;

	mine = lc->server != vt_is_client(c);
	need_rdma(c);
	hu_sysctl_set("lgr_idle_ms", 0);
	vt_assert(hu_proc_wait("qps", 0, WAIT_MS) == 0,
		  "%lld QPs left from before", hu_proc("qps"));
	hu_sysctl_set("lazy_bytes", LAZY_L);
	vt_sync(c, "lazy_bytes set");
	if (vt_is_client(c)) {
		port = su_recv_port(c);
		/* The keeper sets up the QP: it proposes no lazy start. */
		hu_sysctl_set("lazy_bytes", 0);
		keeper = su_connect(c, VT_FAMILY_VISOCK, false, port);
		hu_sysctl_set("lazy_bytes", LAZY_L);
	} else {
		lfd = su_listen(VT_FAMILY_VISOCK, false, 16, SOCK_CLOEXEC);
		su_send_port(c, lfd);
		keeper = su_accept(lfd, SOCK_CLOEXEC);
	}
	expect_rdma(keeper, "the keeper");
	reset = hu_proc("lazy_switch_reset");
	aborted = hu_proc("handshakes_aborted");
	if (mine) {
		inj0 = hu_fault_injected(lc->point);
		hu_fault_arm(lc->point, 1);
	}
	vt_sync(c, "armed");

	fd = pair(c, port, lfd);
	hu_get_info(fd, &vi);
	vt_assert(vi.vi_flags & VISOCK_INFO_F_LAZY,
		  "no lazy start (flags %#x, mode %u)", vi.vi_flags, vi.vi_mode);
	su_xfer(&fd, 1, LAZY_XFER, XFER_MS);
	hu_get_info(fd, &vi);
	vt_diag("after 1 MiB each way: mode %u, fallback reason %u",
		vi.vi_mode, vi.vi_fallback_reason);
	vt_assert(vi.vi_mode == VISOCK_MODE_TCP ||
		  vi.vi_mode == VISOCK_MODE_RDMA,
		  "mode %u after the switch", vi.vi_mode);
	if (mine) {
		hu_fault_disarm();
		vt_assert(hu_fault_injected(lc->point) > inj0,
			  "the fault at %s never fired", lc->point);
	}
	vt_assert(hu_proc("lazy_switch_reset") == reset &&
		  hu_proc("handshakes_aborted") == aborted,
		  "lazy_switch_reset +%lld, handshakes_aborted +%lld: expected none",
		  hu_proc("lazy_switch_reset") - reset,
		  hu_proc("handshakes_aborted") - aborted);
	vt_sync(c, "lazy done");
	close(fd);
	close(keeper);
	if (lfd >= 0)
		close(lfd);
	hu_sysctl_set("lazy_bytes", saved[SAVED_LAZY].val > 0 ? saved[SAVED_LAZY].val : 0);
	vt_sync(c, "done");
}

/* ---- close_handoff ---- */

#define HANDOFF_CONNS	4
#define HANDOFF_LEN	(64 * KiB)

/* Kernel log lines that report a bug, a warning or a refcount error. */
#define KLOG_SPLATS	"BUG[: ]|WARNING:|Oops|general protection|" \
			"refcount_t|KASAN|Poison overwritten"

static int klog_splats(void)
{
	FILE *f;
	int n = -1;

	f = popen("dmesg 2>/dev/null | grep -cE '" KLOG_SPLATS "'", "r");
	vt_assert(f, "dmesg: %s", strerror(errno));
	if (fscanf(f, "%d", &n) != 1)
		n = -1;
	pclose(f);
	vt_assert(n >= 0, "cannot read the kernel log (dmesg)");
	return n;
}

/*
 * close() of a connection in RDMA mode hands the rest of the close to a
 * work item; the "close_handoff" delay holds the closing task 1 s right
 * after that, while the completion of its closed flag (and then the
 * server's) kick the work, which runs to its end first: the vc goes and
 * the work drops its socket reference before close() returns.
 */
static void close_handoff(struct vt_ctx *c)
{
	long long inj0, inj;
	int lfd = -1, port = 0, fd, i, splats0, splats;

	need_rdma(c);
	splats0 = klog_splats();
	if (vt_is_client(c)) {
		port = su_recv_port(c);
	} else {
		lfd = su_listen(VT_FAMILY_VISOCK, false, 16, SOCK_CLOEXEC);
		su_send_port(c, lfd);
	}
	for (i = 0; i < HANDOFF_CONNS; i++) {
		fd = pair(c, port, lfd);
		expect_rdma(fd, "connection");
		if (vt_is_client(c)) {
			pl_send(fd, HANDOFF_LEN);
			vt_sync(c, "all read");
			inj0 = hu_fault_injected("close_handoff");
			hu_fault_arm("close_handoff", 1);
			close(fd);
			hu_fault_disarm();
			inj = hu_fault_injected("close_handoff") - inj0;
			vt_assert(inj == 1,
				  "cycle %d: the delay fired %lld times, expected once",
				  i, inj);
		} else {
			read_stream(fd, HANDOFF_LEN);
			vt_sync(c, "all read");
			su_expect_eof(fd);
			close(fd);
		}
		vt_sync(c, "closed");
	}
	if (lfd >= 0)
		close(lfd);
	vt_assert(hu_proc_wait("lgr_connections", 0, WAIT_MS) == 0,
		  "lgr_connections %lld after every connection closed",
		  hu_proc("lgr_connections"));
	splats = klog_splats() - splats0;
	vt_diag("%d closes held after the handoff, %d kernel log reports",
		HANDOFF_CONNS, splats);
	vt_assert(!splats,
		  "the kernel log reports %d bug(s) or warning(s) (dmesg)",
		  splats);
	vt_sync(c, "done");
}

#define T(n, d)	{ n, fault_case, fault_case, 180, d }
#define A(n, d)	{ n, alloc_case, alloc_case, 900, d }
#define L(n, d)	{ n, lazy_fault, lazy_fault, 180, d }

static const struct vt_test tests[] = {
	T("child_alloc_server", "server drops an accepted connection"),
	T("link_alloc_client", "client: link struct allocation fails"),
	T("link_alloc_server", "server: link struct allocation fails"),
	T("qp_alloc_client", "client: link group QP allocation fails"),
	T("qp_alloc_server", "server: link group QP allocation fails"),
	T("pd_alloc_client", "client: ib_alloc_pd fails"),
	T("pd_alloc_server", "server: ib_alloc_pd fails"),
	T("cq_create_client", "client: ib_alloc_cq fails"),
	T("cq_create_server", "server: ib_alloc_cq fails"),
	T("qp_create_client", "client: ib_create_qp fails"),
	T("qp_create_server", "server: ib_create_qp fails"),
	T("qp_init_client", "client: QP to INIT fails"),
	T("qp_init_server", "server: QP to INIT fails"),
	T("ctrl_alloc_client", "client: cursor slots allocation fails"),
	T("ctrl_alloc_server", "server: cursor slots allocation fails"),
	T("post_recv_client", "client: ib_post_recv fails in setup"),
	T("post_recv_server", "server: ib_post_recv fails in setup"),
	T("rbuf_alloc_client", "client: ring memory allocation fails"),
	T("rbuf_alloc_server", "server: ring memory allocation fails"),
	T("rbuf_map_client", "client: ring DMA mapping fails"),
	T("rbuf_map_server", "server: ring DMA mapping fails"),
	T("mr_alloc_client", "client: ib_alloc_mr fails"),
	T("mr_alloc_server", "server: ib_alloc_mr fails"),
	T("qp_rtr_client", "client: QP to RTR fails"),
	T("qp_rtr_server", "server: QP to RTR fails"),
	T("qp_rts_client", "client: QP to RTS fails"),
	T("qp_rts_server", "server: QP to RTS fails"),
	T("post_reg_client", "client: posting the ring registration fails"),
	T("post_reg_server", "server: posting the ring registration fails"),
	T("dp_alloc_client", "client: data path state allocation fails"),
	T("dp_alloc_server", "server: data path state allocation fails"),
	T("post_write_client", "client: an RDMA WRITE post fails: failover"),
	T("post_write_server", "server: an RDMA WRITE post fails: failover"),
	T("post_ctrl_client", "client: a cursor message post fails: failover"),
	T("post_ctrl_server", "server: a cursor message post fails: failover"),
	T("post_ctrl_close", "client: the cursor message of close() fails"),
	T("dev_rtr_client", "client: Soft-RoCE fails the QP's RTR (ENOMEM)"),
	T("dev_rtr_server", "server: Soft-RoCE fails the QP's RTR (ENOMEM)"),
	L("lazy_link_alloc_client", "lazy switch, client: link allocation fails"),
	L("lazy_rbuf_alloc_client", "lazy switch, client: ring allocation fails"),
	L("lazy_post_reg_client", "lazy switch, client: ring registration fails"),
	L("lazy_dp_alloc_client", "lazy switch, client: data path allocation fails"),
	L("lazy_link_alloc_server", "lazy switch, server: link allocation fails"),
	L("lazy_rbuf_alloc_server", "lazy switch, server: ring allocation fails"),
	L("lazy_mr_alloc_server", "lazy switch, server: ib_alloc_mr fails"),
	L("lazy_post_reg_server", "lazy switch, server: ring registration fails"),
	L("lazy_dp_alloc_server", "lazy switch, server: data path allocation fails"),
	L("lazy_post_ctrl_server", "lazy switch, server: posting the reply fails"),
	{ "signal_storm", signal_storm, signal_storm, 300,
	  "SIGUSR1 every ms at blocking connect/accept/send/recv" },
	{ "netns_del", netns_del, netns_del, 180,
	  "ip netns del with visock sockets open, then exit: no leak" },
	{ "close_handoff", close_handoff, close_handoff, 180,
	  "close work runs to its end while close() still returns" },
	A("alloc_slab_setup", "failslab in visock during connect/accept/handshake"),
	A("alloc_slab_data", "failslab in visock during the streams"),
	A("alloc_slab_close", "failslab in visock during close and teardown"),
	A("alloc_slab_all", "failslab in visock from connect to teardown"),
	A("alloc_page_setup", "fail_page_alloc in visock during setup"),
	A("alloc_page_all", "fail_page_alloc in visock from connect to teardown"),
	A("alloc_both_all", "failslab and fail_page_alloc, connect to teardown"),
};

int main(int argc, char **argv)
{
	hu_sysctls_save(saved, ARRAY_SIZE(saved));
	fi_save();
	vt_set_cleanup(cleanup);
	return vt_main(argc, argv, "visock_fault", tests, ARRAY_SIZE(tests));
}
