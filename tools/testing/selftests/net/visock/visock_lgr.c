// SPDX-License-Identifier: GPL-2.0
/*
 * visock link group tests: connections to the same peer share a few RDMA
 * queue pairs and pooled ring buffers.
 *
 * Runs between two hosts with net.visock.enable=1 on both and an ACTIVE
 * RoCE port (run_tests.sh runs it in the handshake pass after
 * hs.rdma_ready).  Both halves read the module's counters in
 * /proc/net/visock; "qps" and "lgr_connections" are gauges of the
 * namespace.
 *
 * share		16 connections over at most net.visock.lgr_max_links
 *			QPs; later ones joined (lgr_qp_reused)
 * conns1000		1000 concurrent connections, each moving checksummed
 *			data over RDMA, within the QP cap per peer (the
 *			group grows by larger QPs); prints the setup time
 *			ratios (not judged)
 * churn		10000 connect/transfer/close cycles from 4 processes
 *			(VISOCK_TEST_CHURN_CYCLES; 1000 on a KASAN kernel);
 *			afterwards no connection, ring or QP is left once
 *			the QPs idled out (registered_bytes back to 0)
 * idle_teardown	an idle QP goes after lgr_idle_ms on both hosts (the
 *			client tells the server) and a new one comes up
 * idle_race		connections racing the teardown of their QP
 *			(lgr_idle_ms=0) all carry their data, on RDMA or,
 *			with reason link_busy / link_gone, on TCP
 * prefork		a listener served by 4 pre-forked children: their
 *			connections share the QPs like any other
 * pool_reuse		the next connection gets the rings of a closed one:
 *			no new memory is registered
 * group_full		lgr_max_links=1, lgr_link_conns=4: the 5th and 6th
 *			connection fall back with reason link_busy, intact
 * mem_limit		lgr_mem_max_mb=1: a connection whose rings do not
 *			fit falls back with reason buf_exhausted, intact
 * qp_small		one connection: its QP (genl GET_LINKS) takes
 *			lgr_link_conns_min connections and its queue bytes,
 *			as charged (qp_queue_bytes), are far below those of
 *			a QP for lgr_link_conns, on both hosts
 * qp_grow		40 connections: a second QP twice as large, both
 *			hosts; all carry checked data over RDMA
 * qp_grow_cap		a group growing 4 -> 8 -> 16 under lgr_max_links=1
 *			then link_busy; with lgr_peer_qps_max=2 the retired
 *			QP still counts: qp_limit
 * multi_peer		connections from two addresses of the client
 *			(VISOCK_TEST_ALT_IP) are on separate QPs of the
 *			server: a link group per peer
 * stale_token		the client's module sends an extra cursor message
 * unknown_token	with a stale token / an unused index (debugfs
 *			cdc_inject): the server drops and counts it
 *			(lgr_stale_dropped + 1), the stream is intact
 * bad_prod, bad_cons,	a cursor message with a producer cursor beyond
 * bad_credits		the ring / a consumer cursor ahead of the data /
 *			too many credits: that connection is reset on both
 *			hosts, another one on the same QP carries on
 * linger_drain		connections end in every way (either side first,
 *			both at once, a reset from either side, close with
 *			unread data) on a QP a further connection keeps up:
 *			no closed connection lingers on either host
 *			(lgr_lingering 0), the QP is the same
 * linger_retire	the server sends no closed or abort flag (debugfs
 *			mute_end_flags): with 3 of a QP's 4 slots
 *			lingering the next connection retires it and gets a
 *			new QP; the old one ends with its last live one
 *
 * No test checks how long anything takes; every wait is bounded.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <linux/visock.h>

#include "ctl.h"
#include "harness.h"
#include "hostutil.h"
#include "ktap.h"
#include "sockutil.h"

#define KiB		1024ULL
#define WAIT_MS		10000		/* something the peer owes */
#define XFER_MS		300000		/* a bulk transfer of many sockets */

/* ---- host state ---- */

/* Print the fallbacks since @v0 by reason; returns their number. */
static long long fb_report(const char *what, const long long *v0)
{
	long long v[HU_NFB], n = 0;
	char buf[512] = "";
	unsigned int i;
	size_t len = 0;

	hu_fb_snap(v);
	for (i = 1; i < HU_NFB; i++) {
		if (v[i] == v0[i])
			continue;
		n += v[i] - v0[i];
		len += snprintf(buf + len, sizeof(buf) - len, " %s %lld",
				hu_fb_names[i], v[i] - v0[i]);
		if (len >= sizeof(buf))
			break;
	}
	vt_diag("%s: %lld fell back%s%s", what, n, n ? ":" : "", buf);
	return n;
}

/*
 * Sysctls the tests change: read when the program starts and restored by
 * the cleanup hook (in the runner process) after every test half,
 * however it ended.
 */
static struct hu_saved_sysctl saved[] = {
	{ "lgr_max_links", -1 }, { "lgr_link_conns", -1 },
	{ "lgr_idle_ms", -1 }, { "lgr_mem_max_mb", -1 }, { "lazy_bytes", -1 },
	{ "lgr_link_conns_min", -1 }, { "lgr_peer_qps_max", -1 },
};

static long long sysctl_get(const char *name)
{
	char path[128];
	long long v;

	snprintf(path, sizeof(path), HU_SYSCTL_DIR "%s", name);
	v = hu_read_ll(path);
	vt_assert(v >= 0, "cannot read %s", path);
	return v;
}

/* debugfs: a lazy connection handles the peer's SWITCH this late */
#define SW_DELAY	HU_DEBUGFS_DIR "sw_delay_ms"

static void restore_sysctls(const struct vt_ctx *c)
{
	(void)c;
	hu_sysctls_restore(saved, ARRAY_SIZE(saved));
	if (hu_read_ll(HU_DEBUGFS_DIR "cdc_inject") > 0)
		hu_write_ll(HU_DEBUGFS_DIR "cdc_inject", 0);
	if (hu_read_ll(HU_DEBUGFS_DIR "mute_end_flags") > 0)
		hu_write_ll(HU_DEBUGFS_DIR "mute_end_flags", 0);
	if (hu_read_ll(SW_DELAY) > 0)
		hu_write_ll(SW_DELAY, 0);
}

static void set_nofile(int n)
{
	struct rlimit rl = { .rlim_cur = n, .rlim_max = n };

	vt_try(setrlimit(RLIMIT_NOFILE, &rl), "setrlimit(RLIMIT_NOFILE)");
}

/* Small rings: 1000 connections fit the guests' memory. */
static void small_rings(int fd)
{
	int v = 16 * 1024;

	vt_try(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)),
	       "setsockopt(SO_RCVBUF)");
}

/* Connect to the peer's @port with receive buffer @rcvbuf (0: default). */
static int connect_rcvbuf(struct vt_ctx *c, int port, int rcvbuf)
{
	struct sockaddr_storage ss;
	socklen_t len = su_peer_addr(c, false, port, &ss);
	int fd = su_socket(VT_FAMILY_VISOCK, false, SOCK_CLOEXEC);

	if (rcvbuf)
		vt_try(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf,
				  sizeof(rcvbuf)), "setsockopt(SO_RCVBUF)");
	vt_try(connect(fd, (struct sockaddr *)&ss, len), "connect");
	return fd;
}

/* Distinct local QP numbers of @fds (all in RDMA mode). */
static int count_qps(const int *fds, int n, const char *what)
{
	uint32_t *qpn = calloc(n, sizeof(*qpn));
	int i, j, distinct = 0;
	struct visock_info vi;
	char w[64];

	vt_assert(qpn, "out of memory");
	for (i = 0; i < n; i++) {
		snprintf(w, sizeof(w), "%s %d", what, i);
		hu_expect_rdma(fds[i], w, &vi);
		for (j = 0; j < distinct; j++)
			if (qpn[j] == vi.vi_local_qpn)
				break;
		if (j == distinct)
			qpn[distinct++] = vi.vi_local_qpn;
	}
	free(qpn);
	return distinct;
}

/* The server's half of the simple tests: accept @n and echo them. */
static int *accept_n(struct vt_ctx *c, int n, bool small)
{
	int *fds = calloc(n, sizeof(*fds));
	int lfd, i;

	vt_assert(fds, "out of memory");
	lfd = su_listen(VT_FAMILY_VISOCK, false, n + 16, SOCK_CLOEXEC);
	if (small)
		small_rings(lfd);
	su_send_port(c, lfd);
	for (i = 0; i < n; i++)
		fds[i] = su_accept(lfd, SOCK_CLOEXEC);
	close(lfd);
	return fds;
}

/*
 * End a test without QPs: a new lgr_idle_ms only counts for QPs that go
 * idle later, so one more connection on each QP left ends with it at 0.
 */
static void settle(struct vt_ctx *c)
{
	int fd;

	vt_sync(c, "no QP left: start");
	hu_sysctl_set("lgr_idle_ms", 0);
	vt_sync(c, "no QP left: set");
	fd = su_pair(c);
	close(fd);
	vt_assert(hu_proc_wait("lgr_connections", 0, WAIT_MS) == 0,
		  "lgr_connections %lld after close", hu_proc("lgr_connections"));
	vt_assert(hu_proc_wait("qps", 0, 40000) == 0, "%lld QPs left",
		  hu_proc("qps"));
	vt_sync(c, "no QP left: done");
}

/* ---- share ---- */

#define NSHARE	16

static void share(struct vt_ctx *c)
{
	long long reused0, max_links;
	int *fds, i, port, qps;

	hu_need_rdma(c);
	max_links = sysctl_get("lgr_max_links");
	reused0 = hu_proc("lgr_qp_reused");
	if (vt_is_client(c)) {
		port = su_recv_port(c);
		fds = calloc(NSHARE, sizeof(*fds));
		vt_assert(fds, "out of memory");
		for (i = 0; i < NSHARE; i++)
			fds[i] = su_connect(c, VT_FAMILY_VISOCK, false, port);
	} else {
		fds = accept_n(c, NSHARE, false);
	}
	vt_sync(c, "connected");
	su_xfer(fds, NSHARE, 256 * KiB, XFER_MS);
	qps = count_qps(fds, NSHARE, "connection");
	vt_diag("%d connections on %d QP(s), lgr_max_links %lld, %lld joined an existing QP",
		NSHARE, qps, max_links, hu_proc("lgr_qp_reused") - reused0);
	vt_assert(qps <= max_links, "%d QPs for %d connections, limit %lld",
		  qps, NSHARE, max_links);
	vt_assert(hu_proc("lgr_qp_reused") - reused0 >= NSHARE - max_links,
		  "only %lld of %d connections joined an existing QP",
		  hu_proc("lgr_qp_reused") - reused0, NSHARE);
	vt_sync(c, "checked");
	for (i = 0; i < NSHARE; i++)
		close(fds[i]);
	free(fds);
}

/* ---- conns1000 ---- */

#define NCONNS		1000
#define NTCP		50

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

/* connect + one byte there and back, in microseconds. */
static long long setup_rtt(struct vt_ctx *c, enum vt_family fam, int port,
			   int *out)
{
	struct timespec a, b;
	char ch = 'x';
	int fd;

	clock_gettime(CLOCK_MONOTONIC, &a);
	if (fam == VT_FAMILY_VISOCK)
		fd = connect_rcvbuf(c, port, 16 * 1024);
	else
		fd = su_connect(c, fam, false, port);
	su_write_all(fd, &ch, 1);
	su_read_all(fd, &ch, 1);
	clock_gettime(CLOCK_MONOTONIC, &b);
	*out = fd;
	return (b.tv_sec - a.tv_sec) * 1000000LL +
	       (b.tv_nsec - a.tv_nsec) / 1000;
}

static void conns1000(struct vt_ctx *c)
{
	long long *us = NULL, tcp_us[NTCP], med, tcp_med, max_links, peer_cap;
	int *fds, i, port, tport, lfd, tlfd, qps;
	char ch;

	hu_need_rdma(c);
	set_nofile(4 * NCONNS);
	max_links = sysctl_get("lgr_max_links");
	peer_cap = sysctl_get("lgr_peer_qps_max") ?: 8 * max_links;
	if (vt_is_client(c)) {
		/* Plain TCP first, for the ratio. */
		tport = su_recv_port(c);
		for (i = 0; i < NTCP; i++) {
			int fd;

			tcp_us[i] = setup_rtt(c, VT_FAMILY_INET, tport, &fd);
			close(fd);
		}
		port = su_recv_port(c);
		fds = calloc(NCONNS, sizeof(*fds));
		us = calloc(NCONNS, sizeof(*us));
		vt_assert(fds && us, "out of memory");
		for (i = 0; i < NCONNS; i++)
			us[i] = setup_rtt(c, VT_FAMILY_VISOCK, port, &fds[i]);
	} else {
		tlfd = su_listen(VT_FAMILY_INET, false, NTCP + 16,
				 SOCK_CLOEXEC);
		su_send_port(c, tlfd);
		for (i = 0; i < NTCP; i++) {
			int fd = su_accept(tlfd, SOCK_CLOEXEC);

			su_read_all(fd, &ch, 1);
			su_write_all(fd, &ch, 1);
			close(fd);
		}
		close(tlfd);
		fds = calloc(NCONNS, sizeof(*fds));
		vt_assert(fds, "out of memory");
		lfd = su_listen(VT_FAMILY_VISOCK, false, NCONNS + 16,
				SOCK_CLOEXEC);
		small_rings(lfd);
		su_send_port(c, lfd);
		for (i = 0; i < NCONNS; i++) {
			fds[i] = su_accept(lfd, SOCK_CLOEXEC);
			su_read_all(fds[i], &ch, 1);
			su_write_all(fds[i], &ch, 1);
		}
		close(lfd);
	}
	vt_sync(c, "connected");
	/* All at once, each with its own checksummed stream both ways. */
	su_xfer(fds, NCONNS, 16 * KiB, XFER_MS);
	qps = count_qps(fds, NCONNS, "connection");
	for (i = 0; i < NCONNS; i++) {
		struct visock_info vi;

		hu_get_info(fds[i], &vi);
		/* (The 1-byte ping before may have gone either way.) */
		vt_assert(vi.vi_rdma_bytes_sent >= pl_total(16 * KiB) &&
			  vi.vi_rdma_bytes_rcvd >= pl_total(16 * KiB),
			  "connection %d: RDMA bytes %llu/%llu, expected %llu",
			  i, (unsigned long long)vi.vi_rdma_bytes_sent,
			  (unsigned long long)vi.vi_rdma_bytes_rcvd,
			  (unsigned long long)pl_total(16 * KiB));
	}
	/*
	 * The group grows by QPs twice as large, each full one retired by
	 * the next but keeping its connections: at most lgr_max_links QPs
	 * per size from lgr_link_conns_min up, and the peer cap.
	 */
	vt_diag("%d connections on %d QP(s) (max_links %lld, peer cap %lld), lgr_connections %lld",
		NCONNS, qps, max_links, peer_cap, hu_proc("lgr_connections"));
	vt_assert(qps <= peer_cap, "%d QPs for %d connections, peer cap %lld",
		  qps, NCONNS, peer_cap);
	vt_assert(hu_proc("lgr_connections") >= NCONNS,
		  "lgr_connections %lld, expected at least %d",
		  hu_proc("lgr_connections"), NCONNS);
	if (vt_is_client(c)) {
		/* A benchmark, printed and not judged. */
		qsort(tcp_us, NTCP, sizeof(*tcp_us), cmp_ll);
		tcp_med = tcp_us[NTCP / 2];
		qsort(us + 1, NCONNS - 1, sizeof(*us), cmp_ll);
		med = us[1 + (NCONNS - 1) / 2];
		vt_diag("connect+first byte: 1st %lld us, median of 2nd..%dth %lld us",
			us[0], NCONNS, med);
		vt_diag("ratios: %.2f x the 1st; TCP median %lld us: visock %.2f x TCP",
			us[0] ? (double)med / us[0] : 0.0, tcp_med,
			tcp_med ? (double)med / tcp_med : 0.0);
	}
	vt_sync(c, "checked");
	for (i = 0; i < NCONNS; i++)
		close(fds[i]);
	free(fds);
	free(us);
}

/* ---- churn ---- */

#define CHURN_PROCS	4

/* VISOCK_TEST_CHURN_CYCLES, rounded down to a multiple of CHURN_PROCS. */
static int churn_cycles = 10000;

/* One process's share of cycles: connect, 4 KiB each way, close. */
static void churn_client(struct vt_ctx *c, int port, int cycles)
{
	int i, fd;

	for (i = 0; i < cycles; i++) {
		fd = connect_rcvbuf(c, port, 16 * 1024);
		su_xfer(&fd, 1, 4 * KiB, WAIT_MS * 3);
		close(fd);
	}
}

static void churn_server(int lfd, int cycles)
{
	int i, fd;

	for (i = 0; i < cycles; i++) {
		fd = su_accept(lfd, SOCK_CLOEXEC);
		su_xfer(&fd, 1, 4 * KiB, WAIT_MS * 3);
		close(fd);
	}
}

/* Run @fn in CHURN_PROCS children; fail if any of them failed. */
static void churn_fork(struct vt_ctx *c, int port_or_lfd)
{
	pid_t pids[CHURN_PROCS];
	int i, st, bad = 0;

	for (i = 0; i < CHURN_PROCS; i++) {
		pids[i] = vt_try(fork(), "fork");
		if (!pids[i]) {
			/* vt_fail() in a child ends it with a message. */
			if (vt_is_client(c))
				churn_client(c, port_or_lfd,
					     churn_cycles / CHURN_PROCS);
			else
				churn_server(port_or_lfd,
					     churn_cycles / CHURN_PROCS);
			_exit(0);
		}
	}
	for (i = 0; i < CHURN_PROCS; i++) {
		vt_try(waitpid(pids[i], &st, 0), "waitpid");
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			bad++;
	}
	vt_assert(!bad, "%d of %d churn processes failed", bad, CHURN_PROCS);
}

static void churn(struct vt_ctx *c)
{
	long long rdma0, created0, qps, mem, fb0[HU_NFB], fb;
	int lfd = -1, port;

	hu_need_rdma(c);
	/* As on a busy host: the QPs stay between the cycles. */
	hu_sysctl_set("lgr_idle_ms", 10000);
	vt_sync(c, "set");
	hu_fb_snap(fb0);
	rdma0 = hu_proc("connections_rdma");
	created0 = hu_proc("lgr_qps_created");
	if (vt_is_client(c)) {
		port = su_recv_port(c);
		churn_fork(c, port);
	} else {
		lfd = su_listen(VT_FAMILY_VISOCK, false, 64, SOCK_CLOEXEC);
		small_rings(lfd);
		su_send_port(c, lfd);
		churn_fork(c, lfd);
		close(lfd);
	}
	vt_diag("%d cycles, every stream intact: %lld connections on RDMA, %lld QPs created",
		churn_cycles, hu_proc("connections_rdma") - rdma0,
		hu_proc("lgr_qps_created") - created0);
	fb = fb_report("churn", fb0);
	/*
	 * A connection may find every QP it may have still being set up
	 * for half the handshake timeout on a loaded emulated host
	 * (link_busy); nothing else is expected.
	 */
	vt_assert(hu_proc("connections_rdma") - rdma0 + fb == churn_cycles &&
		  fb <= churn_cycles / 100,
		  "%lld of %d connections on RDMA, %lld fell back",
		  hu_proc("connections_rdma") - rdma0, churn_cycles, fb);
	vt_sync(c, "done");
	/* Closing finishes in the background: every connection leaves. */
	vt_assert(hu_proc_wait("lgr_connections", 0, 30000) == 0,
		  "lgr_connections %lld after every socket closed",
		  hu_proc("lgr_connections"));
	vt_sync(c, "closed");
	/* Then the QPs go, and with them every ring they pooled. */
	hu_sysctl_set("lgr_idle_ms", 200);
	qps = hu_proc_wait("qps", 0, 60000);
	mem = hu_proc_wait("registered_bytes", 0, 5000);
	vt_diag("afterwards: qps %lld, registered_bytes %lld, lgr_stale_dropped %lld",
		qps, mem, hu_proc("lgr_stale_dropped"));
	vt_assert(!qps && !mem, "left over: %lld QPs, %lld registered bytes",
		  qps, mem);
	vt_sync(c, "idle");
}

/* ---- idle_teardown, idle_server_first ---- */

/*
 * One end's QP idles out first (lgr_idle_ms @client_ms on the client,
 * @server_ms on the server); the other end's must follow it within 20 s
 * (only its delete link message can make it), and the next connection
 * must be on RDMA over a new QP.
 */
static void idle_one_end_first(struct vt_ctx *c, long long client_ms,
			       long long server_ms, const char *first)
{
	long long created0, destroyed0;
	int fd;

	hu_need_rdma(c);
	/* QPs of earlier tests (lingering connections keep one <= 30 s). */
	hu_sysctl_set("lgr_idle_ms", 0);
	vt_assert(hu_proc_wait("qps", 0, 40000) == 0,
		  "%lld QPs of earlier tests left", hu_proc("qps"));
	vt_sync(c, "no QP");
	hu_sysctl_set("lgr_idle_ms", vt_is_client(c) ? client_ms : server_ms);
	vt_sync(c, "set");
	created0 = hu_proc("lgr_qps_created");
	destroyed0 = hu_proc("lgr_qps_destroyed");
	fd = su_pair(c);
	hu_expect_rdma(fd, "first connection", NULL);
	su_xfer(&fd, 1, 64 * KiB, XFER_MS);
	vt_sync(c, "xfer");
	close(fd);
	vt_sync(c, "closed");
	vt_assert(hu_proc_wait("qps", 0, 20000) == 0,
		  "%lld QP(s) still there 20 s after the %s's end idled out",
		  hu_proc("qps"), first);
	vt_assert(hu_proc("lgr_qps_destroyed") > destroyed0,
		  "lgr_qps_destroyed did not grow");
	vt_sync(c, "gone");
	fd = su_pair(c);
	hu_expect_rdma(fd, "connection after the teardown", NULL);
	su_xfer(&fd, 1, 64 * KiB, XFER_MS);
	vt_assert(hu_proc("lgr_qps_created") >= created0 + 2,
		  "no new QP was created (%lld -> %lld)", created0,
		  hu_proc("lgr_qps_created"));
	vt_sync(c, "again");
	close(fd);
}

/*
 * The client's end goes after 1 s; the server would keep its end for
 * 2 * 60 + 2 s on its own.
 */
static void idle_teardown(struct vt_ctx *c)
{
	idle_one_end_first(c, 1000, 60000, "client");
}

/*
 * The other way round: the server's end idles out first, after
 * 2 * 100 ms + 2 s (hosts may well have different net.visock.lgr_idle_ms).
 * The client would keep its end for a minute and name it in its next
 * REQ, which the server would have to decline (LINK_GONE).
 */
static void idle_server_first(struct vt_ctx *c)
{
	idle_one_end_first(c, 60000, 100, "server");
	/* Leave no QP with the server's short idle time to the next test. */
	vt_assert(hu_proc_wait("qps", 0, 20000) == 0,
		  "%lld QP(s) left at the end", hu_proc("qps"));
}

/* ---- idle_race ---- */

#define NRACE	100

static void idle_race(struct vt_ctx *c)
{
	long long fb0[HU_NFB], created0 = hu_proc("lgr_qps_created");
	int i, fd, rdma = 0, tcp = 0;
	struct visock_info vi;

	hu_need_rdma(c);
	hu_fb_snap(fb0);
	/* Every QP goes the moment its last connection closes. */
	hu_sysctl_set("lgr_idle_ms", 0);
	vt_sync(c, "set");
	for (i = 0; i < NRACE; i++) {
		fd = su_pair(c);
		su_xfer(&fd, 1, 8 * KiB, XFER_MS);
		hu_get_info(fd, &vi);
		if (vi.vi_mode == VISOCK_MODE_RDMA) {
			rdma++;
		} else {
			vt_assert(vi.vi_fallback_reason == VISOCK_FB_LINK_BUSY ||
				  vi.vi_fallback_reason == VISOCK_FB_LINK_GONE ||
				  vi.vi_fallback_reason == VISOCK_FB_PEER_DECLINE,
				  "connection %d: mode %u, fallback reason %u",
				  i, vi.vi_mode, vi.vi_fallback_reason);
			tcp++;
		}
		vt_sync(c, "round");
		close(fd);
	}
	vt_diag("%d connections racing QP teardown: %d on RDMA, %d fell back",
		NRACE, rdma, tcp);
	vt_diag("%lld QPs created, %lld QPs now",
		hu_proc("lgr_qps_created") - created0, hu_proc("qps"));
	fb_report("idle_race", fb0);
	vt_assert(rdma > 0, "no connection used RDMA");
}

/* ---- prefork ---- */

#define NPRE_CHILD	4
#define NPRE_CONNS	16

static void prefork(struct vt_ctx *c)
{
	pid_t pids[NPRE_CHILD];
	int *fds, i, lfd, port, st, bad = 0, qps;
	long long max_links = sysctl_get("lgr_max_links");

	hu_need_rdma(c);
	if (vt_is_client(c)) {
		port = su_recv_port(c);
		fds = calloc(NPRE_CONNS, sizeof(*fds));
		vt_assert(fds, "out of memory");
		for (i = 0; i < NPRE_CONNS; i++)
			fds[i] = su_connect(c, VT_FAMILY_VISOCK, false, port);
		su_xfer(fds, NPRE_CONNS, 128 * KiB, XFER_MS);
		qps = count_qps(fds, NPRE_CONNS, "connection");
		vt_assert(qps <= max_links, "%d QPs for %d connections", qps,
			  NPRE_CONNS);
		vt_sync(c, "done");
		for (i = 0; i < NPRE_CONNS; i++)
			close(fds[i]);
		free(fds);
		return;
	}
	/* The parent listens; pre-forked children accept and serve. */
	lfd = su_listen(VT_FAMILY_VISOCK, false, 64, SOCK_CLOEXEC);
	su_send_port(c, lfd);
	for (i = 0; i < NPRE_CHILD; i++) {
		pids[i] = vt_try(fork(), "fork");
		if (!pids[i]) {
			int k, n = NPRE_CONNS / NPRE_CHILD, cf[NPRE_CONNS];

			for (k = 0; k < n; k++)
				cf[k] = su_accept(lfd, SOCK_CLOEXEC);
			su_xfer(cf, n, 128 * KiB, XFER_MS);
			for (k = 0; k < n; k++)
				hu_expect_rdma(cf[k], "child connection", NULL);
			_exit(0);
		}
	}
	close(lfd);
	for (i = 0; i < NPRE_CHILD; i++) {
		vt_try(waitpid(pids[i], &st, 0), "waitpid");
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			bad++;
	}
	vt_assert(!bad, "%d of %d pre-forked children failed", bad,
		  NPRE_CHILD);
	vt_sync(c, "done");
}

/* ---- pool_reuse ---- */

static void pool_reuse(struct vt_ctx *c)
{
	long long mem1, mem2, reused0;
	int fd;

	hu_need_rdma(c);
	/* Keep the QP, and with it the pool, between the connections. */
	hu_sysctl_set("lgr_idle_ms", 60000);
	vt_sync(c, "set");
	fd = su_pair(c);
	hu_expect_rdma(fd, "first connection", NULL);
	su_xfer(&fd, 1, 256 * KiB, XFER_MS);
	vt_sync(c, "xfer");
	close(fd);
	/* Both closed flags arrive, the rings go back to the pool. */
	vt_assert(hu_proc_wait("lgr_connections", 0, WAIT_MS) == 0,
		  "lgr_connections %lld after close", hu_proc("lgr_connections"));
	vt_sync(c, "closed");
	usleep(500 * 1000);
	vt_diag("after close: qps %lld, created %lld, destroyed %lld, lgr_idle_ms %lld",
		hu_proc("qps"), hu_proc("lgr_qps_created"),
		hu_proc("lgr_qps_destroyed"), sysctl_get("lgr_idle_ms"));
	mem1 = hu_proc("registered_bytes");
	reused0 = hu_proc("lgr_qp_reused");
	vt_sync(c, "measured");
	fd = su_pair(c);
	hu_expect_rdma(fd, "second connection", NULL);
	su_xfer(&fd, 1, 256 * KiB, XFER_MS);
	mem2 = hu_proc("registered_bytes");
	vt_diag("ring memory before the second connection %lld, with it %lld; joined the QP: %lld",
		mem1, mem2, hu_proc("lgr_qp_reused") - reused0);
	vt_assert(mem1 > 0 && mem2 == mem1,
		  "registered_bytes %lld -> %lld: the rings were not reused",
		  mem1, mem2);
	vt_assert(!vt_is_client(c) || hu_proc("lgr_qp_reused") > reused0,
		  "the second connection did not join the QP");
	vt_sync(c, "checked");
	close(fd);
	settle(c);
}

/* ---- group_full, mem_limit ---- */

/*
 * A limit of the client's link group: the client sets @sysctl[] on a
 * fresh group (no QP, no ring left from earlier tests), opens @n
 * connections with receive buffer @rcvbuf (0: default) and every one
 * moves checksummed data.  Those that fell back must give @reason on
 * the client and @peer_reason (0: any) on the server.
 */
#define LC_SYSCTLS	4

struct limit_case {
	const char *what;
	int n;
	int rcvbuf;
	struct { const char *name; long long val; } sysctl[LC_SYSCTLS];
	unsigned int reason, peer_reason;
};

/*
 * Set net.visock.@name if the module has it (a module without it runs
 * the test with its own behaviour, which the test then judges).
 */
static void sysctl_try_set(const char *name, long long val)
{
	if (hu_sysctl(name) < 0) {
		vt_diag("the module has no net.visock.%s", name);
		return;
	}
	hu_sysctl_set(name, val);
}

static void limit_restore(const struct limit_case *lc)
{
	unsigned int i, j;

	for (i = 0; i < LC_SYSCTLS && lc->sysctl[i].name; i++)
		for (j = 0; j < ARRAY_SIZE(saved); j++)
			if (!strcmp(lc->sysctl[i].name, saved[j].name) &&
			    saved[j].val >= 0)
				hu_sysctl_set(saved[j].name, saved[j].val);
}

/* Client: no QP and no ring left from earlier tests. */
static void fresh_group(void)
{
	hu_sysctl_set("lgr_idle_ms", 0);
	vt_assert(hu_proc_wait("qps", 0, 30000) == 0, "%lld QPs left",
		  hu_proc("qps"));
	vt_assert(hu_proc_wait("registered_bytes", 0, 5000) == 0,
		  "%lld bytes still registered", hu_proc("registered_bytes"));
	/* QPs off the list count against the QP caps until freed. */
	vt_assert(hu_proc_wait("qp_queue_bytes", 0, 10000) == 0,
		  "%lld queue bytes still charged", hu_proc("qp_queue_bytes"));
}

/* Returns how many connections are on RDMA, *@fb how many fell back. */
static int limit_run(struct vt_ctx *c, const struct limit_case *lc, int *fb)
{
	int *fds, i, port, rdma = 0;
	struct visock_info vi;
	unsigned int want;

	hu_need_rdma(c);
	*fb = 0;
	if (vt_is_client(c)) {
		fresh_group();
		for (i = 0; i < LC_SYSCTLS && lc->sysctl[i].name; i++)
			sysctl_try_set(lc->sysctl[i].name, lc->sysctl[i].val);
		hu_sysctl_set("lgr_idle_ms", 10000);
		vt_sync(c, "prepared");
		port = su_recv_port(c);
		fds = calloc(lc->n, sizeof(*fds));
		vt_assert(fds, "out of memory");
		for (i = 0; i < lc->n; i++)
			fds[i] = connect_rcvbuf(c, port, lc->rcvbuf);
	} else {
		vt_sync(c, "prepared");
		fds = accept_n(c, lc->n, false);
	}
	su_xfer(fds, lc->n, 64 * KiB, XFER_MS);
	want = vt_is_client(c) ? lc->reason : lc->peer_reason;
	for (i = 0; i < lc->n; i++) {
		hu_get_info(fds[i], &vi);
		if (vi.vi_mode == VISOCK_MODE_RDMA) {
			rdma++;
			continue;
		}
		(*fb)++;
		vt_assert(!want || vi.vi_fallback_reason == want,
			  "connection %d: mode %u, fallback reason %u, expected %u",
			  i, vi.vi_mode, vi.vi_fallback_reason, want);
	}
	vt_diag("%s: %d of %d connections on RDMA, %d fell back", lc->what,
		rdma, lc->n, *fb);
	vt_sync(c, "done");
	for (i = 0; i < lc->n; i++)
		close(fds[i]);
	free(fds);
	limit_restore(lc);
	settle(c);
	return rdma;
}

static void group_full(struct vt_ctx *c)
{
	static const struct limit_case lc = {
		.what = "lgr_max_links=1, lgr_link_conns=4",
		.n = 6,
		.sysctl = { { "lgr_max_links", 1 }, { "lgr_link_conns", 4 } },
		.reason = VISOCK_FB_LINK_BUSY,
		.peer_reason = VISOCK_FB_PEER_DECLINE,
	};
	int fb, rdma = limit_run(c, &lc, &fb);

	vt_assert(rdma == 4 && fb == 2,
		  "%d connections on RDMA, %d fell back, expected 4 and 2",
		  rdma, fb);
}

static void mem_limit(struct vt_ctx *c)
{
	/*
	 * 1 MiB on the client: a small QP (8 connections: about 150 KiB of
	 * queues, which count too) and one connection's 256 KiB ring and
	 * buffer fit, the next connection's do not.
	 */
	static const struct limit_case lc = {
		.what = "lgr_mem_max_mb=1 on the client",
		.n = 8,
		.rcvbuf = 256 * 1024,
		.sysctl = { { "lgr_mem_max_mb", 1 }, { "lgr_link_conns", 8 } },
		.reason = VISOCK_FB_BUF_EXHAUSTED,
	};
	int fb, rdma = limit_run(c, &lc, &fb);

	vt_assert(rdma >= 1 && fb >= 1,
		  "%d on RDMA, %d fell back: expected both", rdma, fb);
}

/* ---- qp_small, qp_grow, qp_grow_cap: QPs sized by their group ---- */

/*
 * A QP for lgr_link_conns 512 has about 9.3 MiB of queues, one for 16
 * connections about 330 KiB.
 */
#define QP_SMALL_BYTES	(1024 * KiB)
#define QP_MIN		16	/* lgr_link_conns_min of the tests */
#define QP_MAX		512	/* lgr_link_conns of the tests */
#define NGROW		40	/* more than a QP of QP_MIN takes */
#define QP_ROWS		64
#define LINKS_OUT	(512 * 1024)

/* A QP as `visockctl links --json` shows it. */
struct qp_row {
	unsigned long long qpn, max_conns, conns, queue_bytes;
};

/* The number after "@key": in @obj, 0 if missing. */
static unsigned long long json_num(const char *obj, const char *key)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), "\"%s\":", key);
	p = strstr(obj, k);
	if (!p)
		return 0;
	p += strlen(k);
	while (*p == ' ')
		p++;
	return strtoull(p, NULL, 10);
}

static int cmp_row(const void *a, const void *b)
{
	const struct qp_row *x = a, *y = b;

	return (x->max_conns > y->max_conns) - (x->max_conns < y->max_conns);
}

/*
 * The distinct QPs of this host's links (genl GET_LINKS through
 * `visockctl links --json`), smallest first; returns their number.
 */
static int qp_rows(struct qp_row *rows, int max)
{
	char cmd[512], *out = malloc(LINKS_OUT), *p, *e;
	int i, n = 0, st;
	size_t len = 0;
	FILE *f;

	vt_assert(out, "out of memory");
	snprintf(cmd, sizeof(cmd), "%s links --json 2>&1",
		 hu_visockctl_path());
	f = popen(cmd, "r");
	vt_assert(f, "popen(%s): %s", cmd, strerror(errno));
	while (len + 1 < LINKS_OUT) {
		size_t k = fread(out + len, 1, LINKS_OUT - 1 - len, f);

		if (!k)
			break;
		len += k;
	}
	out[len] = '\0';
	st = pclose(f);
	vt_assert(WIFEXITED(st) && !WEXITSTATUS(st),
		  "visockctl links --json: status %d: %.300s", st, out);
	for (p = strchr(out, '{'); p; p = strchr(e, '{')) {
		struct qp_row r;

		e = strchr(p, '}');
		vt_assert(e, "visockctl links --json: no end: %.300s", p);
		*e++ = '\0';
		r.qpn = json_num(p, "qpn");
		r.max_conns = json_num(p, "max_conns");
		r.conns = json_num(p, "conns");
		r.queue_bytes = json_num(p, "queue_bytes");
		for (i = 0; i < n; i++)
			if (rows[i].qpn == r.qpn)
				break;
		if (i < n || !r.qpn)
			continue;
		vt_assert(n < max, "more than %d QPs", max);
		rows[n++] = r;
	}
	free(out);
	qsort(rows, n, sizeof(*rows), cmp_row);
	return n;
}

static void qp_rows_diag(const char *what, const struct qp_row *r, int n)
{
	char buf[1024] = "";
	size_t len = 0;
	int i;

	for (i = 0; i < n && len < sizeof(buf); i++)
		len += snprintf(buf + len, sizeof(buf) - len,
				" [qpn %llu: %llu/%llu connections, %llu queue bytes]",
				r[i].qpn, r[i].conns, r[i].max_conns,
				r[i].queue_bytes);
	vt_diag("%s: %d QP(s)%s; qp_queue_bytes %lld", what, n, buf,
		hu_proc("qp_queue_bytes"));
}

/*
 * Both hosts: no QP left, and the sizes of the tests (a module without
 * lgr_link_conns_min sizes every QP for lgr_link_conns).
 */
static void qp_fresh(struct vt_ctx *c)
{
	vt_sync(c, "fresh: start");
	fresh_group();
	sysctl_try_set("lgr_link_conns_min", QP_MIN);
	hu_sysctl_set("lgr_link_conns", QP_MAX);
	hu_sysctl_set("lgr_idle_ms", 10000);
	vt_sync(c, "fresh: done");
}

/*
 * qp_small: the first QP of a group is small, on both hosts: one
 * connection's QP takes lgr_link_conns_min connections and its queues
 * (what genl shows and what the namespace is charged) stay far below
 * those of a QP for lgr_link_conns.
 */
static void qp_small(struct vt_ctx *c)
{
	struct qp_row r[QP_ROWS];
	struct visock_info vi;
	long long qmem;
	int fd, n;

	hu_need_rdma(c);
	qp_fresh(c);
	fd = su_pair(c);
	su_xfer(&fd, 1, 64 * KiB, XFER_MS);
	hu_expect_rdma(fd, "the connection", &vi);
	n = qp_rows(r, QP_ROWS);
	qmem = hu_proc("qp_queue_bytes");
	qp_rows_diag("1 connection", r, n);
	vt_assert(n == 1 && r[0].qpn == vi.vi_local_qpn,
		  "%d QPs listed, expected the connection's (qpn %u)", n,
		  vi.vi_local_qpn);
	vt_assert(r[0].max_conns == QP_MIN,
		  "the QP takes %llu connections, expected lgr_link_conns_min %d",
		  r[0].max_conns, QP_MIN);
	vt_assert(r[0].conns == 1, "the QP has %llu connections, expected 1",
		  r[0].conns);
	vt_assert(qmem > 0 && qmem < (long long)QP_SMALL_BYTES,
		  "%lld queue bytes charged for one connection, expected less than %llu",
		  qmem, QP_SMALL_BYTES);
	vt_assert(r[0].queue_bytes == (unsigned long long)qmem,
		  "the QP shows %llu queue bytes, the namespace is charged %lld",
		  r[0].queue_bytes, qmem);
	vt_sync(c, "checked");
	close(fd);
	settle(c);
}

/*
 * qp_grow: NGROW connections, more than the first QP takes: the group
 * grows by a QP twice as large, on both hosts; every connection carries
 * checked data over RDMA, the first QP keeps its connections, and the
 * queue bytes charged are exactly those the QPs show.
 */
static void qp_grow(struct vt_ctx *c)
{
	unsigned long long sum = 0, conns = 0;
	struct qp_row r[QP_ROWS];
	int *fds, i, port, n, qps;
	long long qmem;

	hu_need_rdma(c);
	qp_fresh(c);
	if (vt_is_client(c)) {
		port = su_recv_port(c);
		fds = calloc(NGROW, sizeof(*fds));
		vt_assert(fds, "out of memory");
		for (i = 0; i < NGROW; i++)
			fds[i] = su_connect(c, VT_FAMILY_VISOCK, false, port);
	} else {
		fds = accept_n(c, NGROW, false);
	}
	vt_sync(c, "connected");
	su_xfer(fds, NGROW, 64 * KiB, XFER_MS);
	qps = count_qps(fds, NGROW, "connection");
	n = qp_rows(r, QP_ROWS);
	qmem = hu_proc("qp_queue_bytes");
	qp_rows_diag("40 connections", r, n);
	for (i = 0; i < n; i++) {
		sum += r[i].queue_bytes;
		conns += r[i].conns;
	}
	vt_assert(n == qps, "genl lists %d QPs, the connections are on %d",
		  n, qps);
	vt_assert(n == 2, "%d connections on %d QP(s), expected 2", NGROW, n);
	vt_assert(r[0].max_conns == QP_MIN && r[0].conns == QP_MIN,
		  "the first QP has %llu/%llu connections, expected %d/%d",
		  r[0].conns, r[0].max_conns, QP_MIN, QP_MIN);
	vt_assert(r[1].max_conns == 2 * QP_MIN &&
		  r[1].conns == NGROW - QP_MIN,
		  "the second QP has %llu/%llu connections, expected %d/%d",
		  r[1].conns, r[1].max_conns, NGROW - QP_MIN, 2 * QP_MIN);
	vt_assert(r[1].queue_bytes > r[0].queue_bytes,
		  "the larger QP has %llu queue bytes, the smaller %llu",
		  r[1].queue_bytes, r[0].queue_bytes);
	vt_assert(sum == (unsigned long long)qmem && conns == NGROW,
		  "the QPs show %llu queue bytes and %llu connections, the namespace is charged %lld for %d",
		  sum, conns, qmem, NGROW);
	vt_sync(c, "checked");
	for (i = 0; i < NGROW; i++)
		close(fds[i]);
	free(fds);
	settle(c);
}

/*
 * qp_grow_cap: the caps hold while a group grows.  With lgr_max_links 1
 * the group grows 4 -> 8 -> 16 connections (lgr_link_conns), each full
 * QP retired by the next, and then is full: 28 connections on RDMA, the
 * rest link_busy.  With lgr_peer_qps_max 2 as well the retired QP of 4
 * still counts: 4 + 8 on RDMA, the rest qp_limit.
 */
static void qp_grow_cap(struct vt_ctx *c)
{
	static const struct limit_case grow = {
		.what = "lgr_max_links=1, lgr_link_conns_min=4, lgr_link_conns=16",
		.n = 30,
		.sysctl = { { "lgr_max_links", 1 }, { "lgr_link_conns_min", 4 },
			    { "lgr_link_conns", 16 } },
		.reason = VISOCK_FB_LINK_BUSY,
	};
	static const struct limit_case peer = {
		.what = "the same with lgr_peer_qps_max=2",
		.n = 14,
		.sysctl = { { "lgr_max_links", 1 }, { "lgr_link_conns_min", 4 },
			    { "lgr_link_conns", 16 }, { "lgr_peer_qps_max", 2 } },
		.reason = VISOCK_FB_QP_LIMIT,
	};
	int fb, rdma;

	rdma = limit_run(c, &grow, &fb);
	vt_assert(rdma == 28 && fb == 2,
		  "%d connections on RDMA, %d fell back, expected 28 and 2",
		  rdma, fb);
	rdma = limit_run(c, &peer, &fb);
	vt_assert(rdma == 12 && fb == 2,
		  "%d connections on RDMA, %d fell back, expected 12 and 2",
		  rdma, fb);
}

/* ---- multi_peer ---- */

#define NMP	4	/* connections from each client address */

/*
 * The server's link groups are per client address: connections from two
 * addresses of the client host (the second one in VISOCK_TEST_ALT_IP,
 * set up by run_tests.sh in the test bed) never share a QP there.
 */
static void multi_peer(struct vt_ctx *c)
{
	const char *alt = getenv("VISOCK_TEST_ALT_IP");
	char addr[2 * NMP][64], *p;
	uint32_t qpn[2 * NMP];
	struct visock_info vi;
	int *fds, i, j, port, naddr = 0;

	hu_need_rdma(c);
	vt_agree(c, !vt_is_client(c) || (alt && *alt),
		 "VISOCK_TEST_ALT_IP is not set: no second client address");
	if (vt_is_client(c)) {
		struct sockaddr_in sin = { .sin_family = AF_INET };

		vt_assert(inet_pton(AF_INET, alt, &sin.sin_addr) == 1,
			  "VISOCK_TEST_ALT_IP %s is not an IPv4 address", alt);
		port = su_recv_port(c);
		fds = calloc(2 * NMP, sizeof(*fds));
		vt_assert(fds, "out of memory");
		for (i = 0; i < 2 * NMP; i++) {
			struct sockaddr_storage ss;
			socklen_t len = su_peer_addr(c, false, port, &ss);

			fds[i] = su_socket(VT_FAMILY_VISOCK, false,
					   SOCK_CLOEXEC);
			if (i % 2)
				vt_try(bind(fds[i], (struct sockaddr *)&sin,
					    sizeof(sin)), "bind(VISOCK_TEST_ALT_IP)");
			vt_try(connect(fds[i], (struct sockaddr *)&ss, len),
			       "connect");
		}
	} else {
		fds = accept_n(c, 2 * NMP, false);
	}
	su_xfer(fds, 2 * NMP, 64 * KiB, XFER_MS);
	for (i = 0; i < 2 * NMP; i++) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);

		hu_expect_rdma(fds[i], "connection", &vi);
		qpn[i] = vi.vi_local_qpn;
		vt_try(getpeername(fds[i], (struct sockaddr *)&ss, &len),
		       "getpeername");
		su_addr_str((struct sockaddr *)&ss, addr[i], sizeof(addr[i]));
		p = strrchr(addr[i], ':');
		if (p)
			*p = '\0';	/* the port */
		for (j = 0; j < i; j++)
			if (!strcmp(addr[i], addr[j]))
				break;
		if (j == i)
			naddr++;
	}
	if (!vt_is_client(c)) {
		for (i = 0; i < 2 * NMP; i++)
			for (j = 0; j < i; j++)
				vt_assert(!strcmp(addr[i], addr[j]) ||
					  qpn[i] != qpn[j],
					  "connections from %s and %s share QP %u",
					  addr[i], addr[j], qpn[i]);
		vt_diag("%d connections from %d client addresses on %d QPs, none shared",
			2 * NMP, naddr, count_qps(fds, 2 * NMP, "connection"));
		vt_assert(naddr == 2,
			  "connections from %d client addresses, expected 2",
			  naddr);
	}
	vt_sync(c, "checked");
	for (i = 0; i < 2 * NMP; i++)
		close(fds[i]);
	free(fds);
}

/* ---- injected cursor messages ---- */

/*
 * The client's module sends a wrong cursor message on one connection
 * (debugfs cdc_inject, see visock_debugfs.c): a copy with a stale or
 * unknown token, which the server must drop and count, or a message with
 * an out-of-range cursor or credit count, which must reset that
 * connection only.
 */
#define CDC_TOKEN	HU_DEBUGFS_DIR "cdc_token"
#define CDC_INJECT	HU_DEBUGFS_DIR "cdc_inject"
#define CDC_INJECTED	HU_DEBUGFS_DIR "cdc_injected"

enum { CDC_STALE = 1, CDC_UNKNOWN, CDC_BAD_PROD, CDC_BAD_CONS, CDC_BAD_CREDITS };

static void need_cdc_hook(struct vt_ctx *c)
{
	hu_need_rdma(c);
	vt_agree(c, !vt_is_client(c) || hu_debugfs_ready("cdc_inject"),
		 "no debugfs file visock/cdc_inject");
}

/* Client: arm the hook for @fd's next cursor message; returns the count. */
static long long cdc_arm(int fd, int mode)
{
	long long n0 = hu_read_ll(CDC_INJECTED);
	struct visock_info vi;

	hu_expect_rdma(fd, "connection to inject into", &vi);
	hu_set_ll(CDC_TOKEN, vi.vi_local_token);
	hu_set_ll(CDC_INJECT, mode);
	return n0;
}

static void cdc_fired(long long n0)
{
	long long mode = hu_read_ll(CDC_INJECT), n = hu_read_ll(CDC_INJECTED);

	vt_assert(mode == 0 && n == n0 + 1,
		  "no injection happened: cdc_inject %lld, cdc_injected %lld -> %lld",
		  mode, n0, n);
}

/* A copy for a connection that is not there: dropped, counted, no harm. */
static void cdc_dropped(struct vt_ctx *c, int mode, const char *what)
{
	long long stale0, n0 = 0, stale;
	int fd;

	need_cdc_hook(c);
	stale0 = hu_proc("lgr_stale_dropped");
	fd = su_pair(c);
	if (vt_is_client(c))
		n0 = cdc_arm(fd, mode);
	vt_sync(c, "armed");
	/* The client's cursor messages return credits and consumer cursors. */
	su_xfer(&fd, 1, 256 * KiB, XFER_MS);
	if (vt_is_client(c)) {
		cdc_fired(n0);
	} else {
		stale = hu_proc_wait_ge("lgr_stale_dropped", stale0 + 1,
					WAIT_MS);
		vt_diag("%s: lgr_stale_dropped %lld -> %lld", what, stale0,
			stale);
		vt_assert(stale == stale0 + 1,
			  "lgr_stale_dropped %lld -> %lld, expected one more",
			  stale0, stale);
	}
	hu_expect_rdma(fd, "the connection after the dropped copy", NULL);
	vt_sync(c, "checked");
	close(fd);
}

static void stale_token(struct vt_ctx *c)
{
	cdc_dropped(c, CDC_STALE, "copy with a stale token");
}

static void unknown_token(struct vt_ctx *c)
{
	cdc_dropped(c, CDC_UNKNOWN, "copy with an unknown token index");
}

/* The next read of @fd must fail with ECONNRESET. */
static void expect_reset(int fd, const char *what)
{
	char buf[256];
	ssize_t n;

	su_wait(fd, POLLIN, what);
	n = read(fd, buf, sizeof(buf));
	vt_assert(n < 0 && errno == ECONNRESET,
		  "%s: read returned %zd (%s), expected ECONNRESET", what, n,
		  n < 0 ? strerror(errno) : n ? "data" : "end of stream");
}

/*
 * An impossible cursor message on one of two connections sharing a QP:
 * that connection is reset on both hosts, the other one carries on.
 */
static void cdc_reset(struct vt_ctx *c, int mode, const char *what)
{
	struct visock_info v0, v1;
	long long n0 = 0;
	int fds[2];

	need_cdc_hook(c);
	if (vt_is_client(c)) {
		fresh_group();
		hu_sysctl_set("lgr_max_links", 1);
		hu_sysctl_set("lgr_idle_ms", 10000);
	}
	vt_sync(c, "prepared");
	fds[0] = su_pair(c);
	fds[1] = su_pair(c);
	hu_expect_rdma(fds[0], "victim", &v0);
	hu_expect_rdma(fds[1], "bystander", &v1);
	vt_assert(v0.vi_local_qpn == v1.vi_local_qpn,
		  "the two connections are on QPs %u and %u, expected one",
		  v0.vi_local_qpn, v1.vi_local_qpn);
	if (vt_is_client(c))
		n0 = cdc_arm(fds[0], mode);
	vt_sync(c, "armed");
	if (vt_is_client(c)) {
		/* A cursor message with the done-writing flag. */
		vt_try(shutdown(fds[0], SHUT_WR), "shutdown");
		expect_reset(fds[0], "victim (client)");
		cdc_fired(n0);
	} else {
		expect_reset(fds[0], "victim (server)");
	}
	vt_sync(c, "reset");
	su_xfer(&fds[1], 1, 256 * KiB, XFER_MS);
	hu_expect_rdma(fds[1], "bystander after the reset", NULL);
	vt_diag("%s: the victim was reset, the bystander on QP %u moved 256 KiB each way",
		what, v1.vi_local_qpn);
	vt_sync(c, "checked");
	close(fds[0]);
	close(fds[1]);
	if (vt_is_client(c))
		hu_sysctl_set("lgr_max_links", saved[0].val);
	settle(c);
}

static void bad_prod(struct vt_ctx *c)
{
	cdc_reset(c, CDC_BAD_PROD, "producer cursor beyond the ring");
}

static void bad_cons(struct vt_ctx *c)
{
	cdc_reset(c, CDC_BAD_CONS, "consumer cursor ahead of the data");
}

static void bad_credits(struct vt_ctx *c)
{
	cdc_reset(c, CDC_BAD_CREDITS, "more credits than receive requests");
}

/* ---- linger_drain ---- */

/* How a connection of linger_drain ends. */
enum { LD_CLI_FIRST, LD_SRV_FIRST, LD_BOTH, LD_CLI_RESET, LD_SRV_RESET,
	LD_UNREAD, LD_NKINDS };

static const char *const ld_names[LD_NKINDS] = {
	"client closes first", "server closes first", "both close at once",
	"client resets", "server resets", "server closes with unread data",
};

#define NLD	4	/* connections per kind */

/* Read @fd until end of stream or a reset: the peer ended. */
static void ld_wait_end(int fd, const char *what)
{
	char buf[4096];
	ssize_t n;

	for (;;) {
		su_wait(fd, POLLIN, what);
		n = read(fd, buf, sizeof(buf));
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return;
		vt_assert(n > 0 || errno == EINTR || errno == EAGAIN,
			  "%s: read: %s", what, strerror(errno));
	}
}

/* End a connection of kind @k; both hosts call this in step. */
static void ld_end(struct vt_ctx *c, int fd, int k)
{
	bool first = vt_is_client(c) ? (k == LD_CLI_FIRST || k == LD_CLI_RESET)
				     : (k == LD_SRV_FIRST || k == LD_SRV_RESET);
	static const char data[4096];

	switch (k) {
	case LD_BOTH:
		vt_sync(c, "close both");
		close(fd);
		return;
	case LD_UNREAD:
		/* The server closes with the client's bytes unread: reset. */
		if (vt_is_client(c)) {
			su_write_all(fd, data, sizeof(data));
			vt_sync(c, "unread written");
			ld_wait_end(fd, "unread: client");
		} else {
			vt_sync(c, "unread written");
			su_wait_bytes(fd, sizeof(data));
		}
		close(fd);
		return;
	}
	if (first) {
		if (k == LD_CLI_RESET || k == LD_SRV_RESET)
			su_reset(fd);
		else
			close(fd);
		return;
	}
	ld_wait_end(fd, ld_names[k]);
	close(fd);
}

/*
 * Every way a connection ends - either side closing first, both at once,
 * a reset from either side, close with unread data - on a QP that a
 * further connection keeps up: afterwards no connection lingers on either
 * host (each end said it writes nothing more, so the peer freed its
 * ring and token), and the QP is still the one it was.
 */
static void linger_drain(struct vt_ctx *c)
{
	struct visock_info vk, vi;
	int keeper, fd, k, i;
	long long qps;

	hu_need_rdma(c);
	if (vt_is_client(c)) {
		fresh_group();
		hu_sysctl_set("lgr_max_links", 1);
		hu_sysctl_set("lgr_idle_ms", 10000);
	}
	vt_sync(c, "prepared");
	keeper = su_pair(c);
	hu_expect_rdma(keeper, "keeper", &vk);
	qps = hu_proc("qps");
	for (k = 0; k < LD_NKINDS; k++) {
		for (i = 0; i < NLD; i++) {
			fd = su_pair(c);
			hu_expect_rdma(fd, ld_names[k], &vi);
			vt_assert(vi.vi_local_qpn == vk.vi_local_qpn,
				  "%s: on QP %u, the keeper on %u", ld_names[k],
				  vi.vi_local_qpn, vk.vi_local_qpn);
			/* LD_UNREAD writes itself: su_xfer() shuts down. */
			if (k != LD_UNREAD)
				su_xfer(&fd, 1, 64 * KiB, XFER_MS);
			/* A reset must not cut the peer's transfer short. */
			vt_sync(c, "transferred");
			ld_end(c, fd, k);
			vt_sync(c, "ended");
		}
		vt_assert(hu_proc_wait("lgr_connections", 1, WAIT_MS) == 1,
			  "%s: lgr_connections %lld, expected the keeper only",
			  ld_names[k], hu_proc("lgr_connections"));
		vt_assert(hu_proc_wait("lgr_lingering", 0, WAIT_MS) == 0,
			  "%s: %lld closed connections still hold their place on the QP",
			  ld_names[k], hu_proc("lgr_lingering"));
		vt_sync(c, "kind checked");
	}
	vt_assert(hu_proc("qps") == qps, "qps %lld, was %lld",
		  hu_proc("qps"), qps);
	hu_expect_rdma(keeper, "keeper at the end", &vi);
	vt_assert(vi.vi_local_qpn == vk.vi_local_qpn, "the keeper's QP changed");
	vt_diag("%d connections ended in %d ways on QP %u: none lingers",
		NLD * LD_NKINDS, LD_NKINDS, vk.vi_local_qpn);
	vt_sync(c, "checked");
	su_xfer(&keeper, 1, 64 * KiB, XFER_MS);
	close(keeper);
	if (vt_is_client(c))
		hu_sysctl_set("lgr_max_links", saved[0].val);
	settle(c);
}

/* ---- linger_retire ---- */

#define MUTE_PATH	HU_DEBUGFS_DIR "mute_end_flags"

/*
 * Lingering connections cannot fill a link group.  The client's group
 * is one QP of 4 connections (lgr_max_links 1, lgr_link_conns 4) that a
 * keeper connection holds; the server sends no closed or abort flag
 * (debugfs mute_end_flags), so the client's end of 3 connections it
 * resets lingers.  The QP is then full, and more than half of it
 * lingers: the next connection retires it (lgr_qps_retired + 1) and is on
 * RDMA over a new QP (the limit of 1 does not count the old one), and the
 * old QP ends once the keeper has closed, taking the lingering ones
 * along - but not before the server's closed flag for the keeper came:
 * the server's end of the keeper must go within WAIT_MS.
 */
static void linger_retire(struct vt_ctx *c)
{
	struct visock_info vk, vi;
	int keeper, fd, i;
	long long retired0;

	hu_need_rdma(c);
	vt_agree(c, vt_is_client(c) || hu_debugfs_ready("mute_end_flags"),
		 "no debugfs file visock/mute_end_flags");
	if (vt_is_client(c)) {
		fresh_group();
		hu_sysctl_set("lgr_max_links", 1);
		hu_sysctl_set("lgr_link_conns", 4);
		hu_sysctl_set("lgr_idle_ms", 10000);
	} else {
		hu_set_ll(MUTE_PATH, 1);
	}
	vt_sync(c, "prepared");
	keeper = su_pair(c);
	hu_expect_rdma(keeper, "keeper", &vk);
	retired0 = hu_proc("lgr_qps_retired");
	for (i = 0; i < 3; i++) {
		fd = su_pair(c);
		hu_expect_rdma(fd, "connection to reset", &vi);
		vt_assert(vi.vi_local_qpn == vk.vi_local_qpn,
			  "connection %d on QP %u, the keeper on %u", i,
			  vi.vi_local_qpn, vk.vi_local_qpn);
		su_xfer(&fd, 1, 64 * KiB, XFER_MS);
		vt_sync(c, "transferred");
		if (vt_is_client(c)) {
			su_reset(fd);
		} else {
			ld_wait_end(fd, "reset by the client");
			close(fd);
		}
		vt_sync(c, "ended");
	}
	if (vt_is_client(c)) {
		vt_assert(hu_proc_wait("lgr_lingering", 3, WAIT_MS) == 3,
			  "lgr_lingering %lld, expected the 3 reset connections",
			  hu_proc("lgr_lingering"));
	} else {
		/*
		 * close() leaves the end of a connection to a work item, and
		 * that one would send the closed flag if the flags were
		 * allowed again first: the 3 ends must be gone before.
		 */
		vt_assert(hu_proc_wait("lgr_connections", 1, WAIT_MS) == 1,
			  "lgr_connections %lld, expected the keeper only",
			  hu_proc("lgr_connections"));
		hu_set_ll(MUTE_PATH, 0);
	}
	vt_sync(c, "lingering");
	fd = su_pair(c);
	hu_expect_rdma(fd, "the next connection", &vi);
	if (vt_is_client(c)) {
		vt_assert(vi.vi_local_qpn != vk.vi_local_qpn,
			  "the next connection is on QP %u, 3 of whose 4 slots linger",
			  vk.vi_local_qpn);
		vt_assert(hu_proc("lgr_qps_retired") == retired0 + 1,
			  "lgr_qps_retired %lld, was %lld: expected + 1",
			  hu_proc("lgr_qps_retired"), retired0);
	}
	su_xfer(&fd, 1, 64 * KiB, XFER_MS);
	vt_diag("3 of 4 slots of QP %u lingering: the next connection on QP %u",
		vk.vi_local_qpn, vi.vi_local_qpn);
	vt_sync(c, "next checked");
	su_xfer(&keeper, 1, 64 * KiB, XFER_MS);
	/*
	 * The client closes the keeper first, so that its end lingers on
	 * the retired QP until the server's closed flag comes: the QP must
	 * wait for it, or the server's close would wait for the transport's
	 * retries to a QP that is gone.
	 */
	if (vt_is_client(c)) {
		close(keeper);
		vt_assert(hu_proc_wait("lgr_lingering", 4, WAIT_MS) == 4,
			  "lgr_lingering %lld after the keeper closed, expected 4",
			  hu_proc("lgr_lingering"));
	}
	vt_sync(c, "keeper closed by the client");
	if (!vt_is_client(c)) {
		ld_wait_end(keeper, "the keeper closed by the client");
		close(keeper);
		vt_assert(hu_proc_wait("lgr_connections", 1, WAIT_MS) == 1,
			  "lgr_connections %lld after the keeper closed, expected 1",
			  hu_proc("lgr_connections"));
	}
	vt_sync(c, "keeper closed");
	if (vt_is_client(c)) {
		vt_assert(hu_proc_wait("lgr_lingering", 0, 40000) == 0,
			  "lgr_lingering %lld after the old QP's last connection closed",
			  hu_proc("lgr_lingering"));
		vt_assert(hu_proc("qps") == 1, "qps %lld, expected the new one",
			  hu_proc("qps"));
	}
	vt_sync(c, "old QP gone");
	close(fd);
	if (vt_is_client(c)) {
		hu_sysctl_set("lgr_max_links", saved[0].val);
		hu_sysctl_set("lgr_link_conns", saved[1].val);
	}
	settle(c);
}

/* ---- lazy start and switch ---- */

#define LAZY_L		4096	/* net.visock.lazy_bytes of these tests */
#define LAZY_CRR	50	/* short connections of lazy_crr */

/*
 * Both hosts take lazy starts; the server's listener is made afterwards
 * (a listener takes them if lazy_bytes was set when it started).  The
 * client's keeper connection sets up the QP with the handshake and stays
 * open: lazy starts need a QP that is up.  Returns the keeper.
 */
static int lazy_begin(struct vt_ctx *c, int *lfd, int *port)
{
	struct visock_info vi;
	int keeper;

	hu_need_rdma(c);
	if (!vt_is_client(c))
		fresh_group();
	hu_sysctl_set("lazy_bytes", LAZY_L);
	vt_sync(c, "lazy_bytes set");
	if (vt_is_client(c)) {
		*lfd = -1;
		*port = su_recv_port(c);
		keeper = connect_rcvbuf(c, *port, 0);
	} else {
		*lfd = su_listen(VT_FAMILY_VISOCK, false, 64, SOCK_CLOEXEC);
		su_send_port(c, *lfd);
		keeper = su_accept(*lfd, SOCK_CLOEXEC);
	}
	hu_expect_rdma(keeper, "the keeper (handshake)", &vi);
	vt_assert(!(vi.vi_flags & VISOCK_INFO_F_LAZY),
		  "the keeper reports a lazy start without a QP up before it");
	vt_sync(c, "keeper up");
	return keeper;
}

static void lazy_end(struct vt_ctx *c, int lfd, int keeper)
{
	vt_sync(c, "lazy test done");
	if (lfd >= 0)
		close(lfd);
	close(keeper);
	hu_sysctl_set("lazy_bytes", saved[4].val > 0 ? saved[4].val : 0);
	settle(c);
}

/* A lazy connection that has not switched: TCP, no handshake. */
static void lazy_expect_tcp(int fd, const char *what)
{
	struct visock_info vi;

	hu_get_info(fd, &vi);
	vt_assert(vi.vi_flags & VISOCK_INFO_F_LAZY,
		  "%s: no lazy start (flags %#x, mode %u)", what, vi.vi_flags,
		  vi.vi_mode);
	vt_assert(vi.vi_mode == VISOCK_MODE_TCP &&
		  vi.vi_fallback_reason == VISOCK_FB_NONE && !vi.vi_local_qpn,
		  "%s: mode %u, fallback reason %u, QP %u: expected TCP without a QP",
		  what, vi.vi_mode, vi.vi_fallback_reason, vi.vi_local_qpn);
}

/*
 * A lazy connection that switched to RDMA (@vi, its VISOCK_INFO), the
 * one switch since the counters were @switches and @declined.
 */
static void lazy_expect_switched(const struct visock_info *vi,
				 long long switches, long long declined)
{
	vt_assert(vi->vi_mode == VISOCK_MODE_RDMA && vi->vi_local_qpn &&
		  (vi->vi_flags & VISOCK_INFO_F_LAZY),
		  "mode %u, QP %u, flags %#x: expected a switched connection",
		  vi->vi_mode, vi->vi_local_qpn, vi->vi_flags);
	vt_assert(hu_proc("lazy_switches") - switches == 1 &&
		  hu_proc("lazy_switch_declined") == declined,
		  "lazy_switches +%lld, declined +%lld: expected 1 and 0",
		  hu_proc("lazy_switches") - switches,
		  hu_proc("lazy_switch_declined") - declined);
}

/*
 * Short connections (connect, 64 B request and response, close) to a
 * peer with a QP up: none runs the handshake or touches the QP.
 */
static void lazy_crr(struct vt_ctx *c)
{
	long long started, switches, wrs, hs;
	char req[64], rsp[64];
	int lfd, port, keeper, fd, i, j;

	keeper = lazy_begin(c, &lfd, &port);
	started = hu_proc("lazy_started");
	switches = hu_proc("lazy_switches");
	wrs = hu_proc("rdma_wr_posted");
	hs = hu_proc("handshakes_started");
	/* The server counts a lazy start when the client connects. */
	vt_sync(c, "counters sampled");
	for (i = 0; i < LAZY_CRR; i++) {
		for (j = 0; j < (int)sizeof(req); j++)
			req[j] = (char)(i * 7 + j);
		if (vt_is_client(c)) {
			struct sockaddr_storage ss;
			socklen_t len = su_peer_addr(c, false, port, &ss);

			fd = su_socket(VT_FAMILY_VISOCK, false, SOCK_CLOEXEC);
			vt_try(connect(fd, (struct sockaddr *)&ss, len),
			       "connect");
			lazy_expect_tcp(fd, "client");
			su_write_all(fd, req, sizeof(req));
			su_read_all(fd, rsp, sizeof(rsp));
			for (j = 0; j < (int)sizeof(rsp); j++)
				vt_assert(rsp[j] == (char)~req[j],
					  "connection %d: response byte %d wrong",
					  i, j);
		} else {
			fd = su_accept(lfd, SOCK_CLOEXEC);
			lazy_expect_tcp(fd, "server");
			su_read_all(fd, rsp, sizeof(rsp));
			vt_assert(!memcmp(rsp, req, sizeof(req)),
				  "connection %d: request wrong", i);
			for (j = 0; j < (int)sizeof(rsp); j++)
				rsp[j] = (char)~rsp[j];
			su_write_all(fd, rsp, sizeof(rsp));
			su_expect_eof(fd);
		}
		close(fd);
	}
	vt_diag("%d connections: lazy_started +%lld, lazy_switches +%lld",
		LAZY_CRR, hu_proc("lazy_started") - started,
		hu_proc("lazy_switches") - switches);
	vt_diag("rdma_wr_posted +%lld, handshakes_started +%lld",
		hu_proc("rdma_wr_posted") - wrs,
		hu_proc("handshakes_started") - hs);
	vt_assert(hu_proc("lazy_started") - started == LAZY_CRR,
		  "lazy_started +%lld, expected %d",
		  hu_proc("lazy_started") - started, LAZY_CRR);
	vt_assert(hu_proc("lazy_switches") == switches &&
		  hu_proc("handshakes_started") == hs &&
		  hu_proc("rdma_wr_posted") == wrs,
		  "short connections switched, ran the handshake or posted work requests");
	vt_assert(hu_proc("lgr_connections") == 1,
		  "lgr_connections %lld, expected the keeper only",
		  hu_proc("lgr_connections"));
	lazy_end(c, lfd, keeper);
}

/*
 * A lazy connection moves 8 MiB each way (checksummed): the client's
 * bytes past L move it to RDMA in the middle of both streams, with
 * non-blocking sockets.
 */
static void lazy_switch(struct vt_ctx *c)
{
	long long switches, declined;
	struct visock_info vi;
	int lfd, port, keeper, fd;

	keeper = lazy_begin(c, &lfd, &port);
	switches = hu_proc("lazy_switches");
	declined = hu_proc("lazy_switch_declined");
	fd = vt_is_client(c) ? connect_rcvbuf(c, port, 0) :
			       su_accept(lfd, SOCK_CLOEXEC);
	lazy_expect_tcp(fd, vt_is_client(c) ? "client" : "server");
	/* Both ends looked before either writes: a switch may be quick. */
	vt_sync(c, "lazy start seen");
	su_xfer(&fd, 1, 8192 * KiB, XFER_MS);
	hu_get_info(fd, &vi);
	vt_diag("after 8 MiB each way: mode %u, QP %u, lazy_switches +%lld",
		vi.vi_mode, vi.vi_local_qpn,
		hu_proc("lazy_switches") - switches);
	lazy_expect_switched(&vi, switches, declined);
	vt_assert(vi.vi_rdma_bytes_sent > 0 && vi.vi_rdma_bytes_rcvd > 0,
		  "RDMA bytes sent %llu, received %llu: expected both",
		  (unsigned long long)vi.vi_rdma_bytes_sent,
		  (unsigned long long)vi.vi_rdma_bytes_rcvd);
	close(fd);
	lazy_end(c, lfd, keeper);
}

/*
 * The server's end of the QP has no room for the switch: it declines
 * from the QP's own slot and both ends stay on TCP, data intact.
 */
static void lazy_decline(struct vt_ctx *c)
{
	long long declined, reset;
	int lfd, port, keeper, fd;

	/* The server's QP end takes one connection: the keeper. */
	if (!vt_is_client(c)) {
		fresh_group();
		hu_sysctl_set("lgr_link_conns", 1);
	}
	keeper = lazy_begin(c, &lfd, &port);
	declined = hu_proc("lazy_switch_declined");
	reset = hu_proc("lazy_switch_reset");
	fd = vt_is_client(c) ? connect_rcvbuf(c, port, 0) :
			       su_accept(lfd, SOCK_CLOEXEC);
	lazy_expect_tcp(fd, vt_is_client(c) ? "client" : "server");
	su_xfer(&fd, 1, 1024 * KiB, XFER_MS);
	lazy_expect_tcp(fd, "after the transfer");
	vt_assert(hu_proc("lazy_switch_declined") - declined == 1 &&
		  hu_proc("lazy_switch_reset") == reset,
		  "lazy_switch_declined +%lld, reset +%lld: expected 1 and 0",
		  hu_proc("lazy_switch_declined") - declined,
		  hu_proc("lazy_switch_reset") - reset);
	close(fd);
	if (!vt_is_client(c))
		hu_sysctl_set("lgr_link_conns", saved[1].val);
	lazy_end(c, lfd, keeper);
}

/*
 * A client that writes exactly L bytes and shuts down never switches:
 * the server reads the L bytes and the end of the stream (no SWITCH can
 * follow), and its answer, written only then, comes back over TCP.
 */
static void lazy_exact(struct vt_ctx *c)
{
	int lfd, port, keeper, fd, i, mine, theirs;
	static char out[3 * LAZY_L], in[3 * LAZY_L];
	long long switches;

	keeper = lazy_begin(c, &lfd, &port);
	switches = hu_proc("lazy_switches");
	/* The client sends L bytes, the server 3 L: no SWITCH either way. */
	mine = vt_is_client(c) ? LAZY_L : 3 * LAZY_L;
	theirs = vt_is_client(c) ? 3 * LAZY_L : LAZY_L;
	for (i = 0; i < 3 * LAZY_L; i++)
		out[i] = (char)(i * 13 + 5);
	fd = vt_is_client(c) ? connect_rcvbuf(c, port, 0) :
			       su_accept(lfd, SOCK_CLOEXEC);
	/*
	 * The server answers once it has read the end of the stream: a
	 * server that wrote past its byte L - 1 before the client's end
	 * arrived would start a switch of its own.
	 */
	if (vt_is_client(c)) {
		su_write_all(fd, out, mine);
		vt_try(shutdown(fd, SHUT_WR), "shutdown(SHUT_WR)");
	}
	su_read_all(fd, in, theirs);
	su_expect_eof(fd);
	if (!vt_is_client(c)) {
		su_write_all(fd, out, mine);
		vt_try(shutdown(fd, SHUT_WR), "shutdown(SHUT_WR)");
	}
	vt_assert(!memcmp(in, out, theirs), "the peer's bytes differ");
	lazy_expect_tcp(fd, "after the exchange");
	vt_assert(hu_proc("lazy_switches") == switches,
		  "lazy_switches +%lld, expected none",
		  hu_proc("lazy_switches") - switches);
	close(fd);
	lazy_end(c, lfd, keeper);
}

/*
 * A connection that ran on the QP closes, and at once a lazy connection
 * streams 64 KiB writes after a 16-byte header (as visock_bench does),
 * so that the client's SWITCH arrives while the server's reader is
 * taking the bytes before it from TCP.  Every stream must arrive intact,
 * on RDMA or on TCP, and no switch may end in a reset.
 */
#define LAC_ROUNDS	12
#define LAC_TRIPS	20
#define LAC_HDR		16
#define LAC_WRITE	(64 * KiB)
#define LAC_LEN		(2048 * KiB)

static uint8_t lac_byte(int round, uint64_t pos)
{
	return (uint8_t)(pos * 7 + pos / 251 + round);
}

static void lac_nodelay(int fd)
{
	int one = 1;

	vt_try(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)),
	       "setsockopt(TCP_NODELAY)");
}

/* Client: the stream of round @r; returns the connection's mode. */
static unsigned int lac_send(struct vt_ctx *c, int port, int r)
{
	static uint8_t buf[LAC_WRITE];
	uint8_t hdr[LAC_HDR] = { 'h', 'd', 'r' };
	struct visock_info vi;
	uint64_t pos = 0, ack = 0;
	unsigned int i;
	int fd;

	fd = connect_rcvbuf(c, port, 0);
	lac_nodelay(fd);
	lazy_expect_tcp(fd, "the stream");
	su_write_all(fd, hdr, sizeof(hdr));
	while (pos < LAC_LEN) {
		for (i = 0; i < LAC_WRITE; i++)
			buf[i] = lac_byte(r, pos + i);
		su_write_all(fd, buf, LAC_WRITE);
		pos += LAC_WRITE;
	}
	vt_try(shutdown(fd, SHUT_WR), "shutdown(SHUT_WR)");
	su_read_all(fd, &ack, sizeof(ack));
	vt_assert(ack == LAC_LEN, "round %d: the server got %llu of %llu bytes",
		  r, (unsigned long long)ack, (unsigned long long)LAC_LEN);
	su_expect_eof(fd);
	hu_get_info(fd, &vi);
	close(fd);
	return vi.vi_mode;
}

/* Server: take the stream of round @r with large reads, check it. */
static void lac_recv(int lfd, int r)
{
	static uint8_t buf[LAC_WRITE];
	uint8_t hdr[LAC_HDR];
	uint64_t pos = 0;
	ssize_t n, i;
	int fd;

	fd = su_accept(lfd, SOCK_CLOEXEC);
	lac_nodelay(fd);
	su_read_all(fd, hdr, sizeof(hdr));
	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		vt_assert(n >= 0, "round %d: read after %llu bytes: %s", r,
			  (unsigned long long)pos, strerror(errno));
		if (!n)
			break;
		for (i = 0; i < n; i++)
			vt_assert(buf[i] == lac_byte(r, pos + i),
				  "round %d: byte %llu wrong", r,
				  (unsigned long long)(pos + i));
		pos += n;
	}
	su_write_all(fd, &pos, sizeof(pos));
	close(fd);
}

static void lazy_after_close(struct vt_ctx *c)
{
	int lfd = -1, port = 0, fd, r, i, rdma = 0, tcp = 0;
	long long reset, aborted;
	char msg[64];

	hu_need_rdma(c);
	if (!vt_is_client(c))
		fresh_group();
	vt_sync(c, "lac: no QP");
	/* The QP stays up between the connections. */
	hu_sysctl_set("lgr_idle_ms", 10000);
	hu_sysctl_set("lazy_bytes", LAZY_L);
	if (vt_is_client(c)) {
		port = su_recv_port(c);
	} else {
		lfd = su_listen(VT_FAMILY_VISOCK, false, 64, SOCK_CLOEXEC);
		su_send_port(c, lfd);
	}
	reset = hu_proc("lazy_switch_reset");
	aborted = hu_proc("handshakes_aborted");
	vt_sync(c, "counters sampled");
	for (r = 0; r < LAC_ROUNDS; r++) {
		if (vt_is_client(c)) {
			/* On the QP: this one proposes no lazy start. */
			hu_sysctl_set("lazy_bytes", 0);
			fd = connect_rcvbuf(c, port, 0);
			hu_sysctl_set("lazy_bytes", LAZY_L);
			hu_expect_rdma(fd, "the round trips", NULL);
			for (i = 0; i < LAC_TRIPS; i++) {
				memset(msg, r + i, sizeof(msg));
				su_write_all(fd, msg, sizeof(msg));
				su_read_all(fd, msg, sizeof(msg));
			}
			close(fd);
			if (lac_send(c, port, r) == VISOCK_MODE_RDMA)
				rdma++;
			else
				tcp++;
		} else {
			fd = su_accept(lfd, SOCK_CLOEXEC);
			for (i = 0; i < LAC_TRIPS; i++) {
				su_read_all(fd, msg, sizeof(msg));
				su_write_all(fd, msg, sizeof(msg));
			}
			su_expect_eof(fd);
			close(fd);
			lac_recv(lfd, r);
		}
	}
	if (vt_is_client(c))
		vt_diag("%d streams: %d switched to RDMA, %d stayed on TCP",
			LAC_ROUNDS, rdma, tcp);
	vt_diag("lazy_switch_reset +%lld, handshakes_aborted +%lld",
		hu_proc("lazy_switch_reset") - reset,
		hu_proc("handshakes_aborted") - aborted);
	vt_assert(hu_proc("lazy_switch_reset") == reset &&
		  hu_proc("handshakes_aborted") == aborted,
		  "a switch ended in a reset");
	vt_sync(c, "lac: done");
	if (lfd >= 0)
		close(lfd);
	hu_sysctl_set("lazy_bytes", saved[4].val > 0 ? saved[4].val : 0);
	settle(c);
}

/*
 * A download: the server writes 8 MiB (checksummed) and shuts down, the
 * client only reads.  The server's bytes past L make the server start
 * the switch, and the connection ends on RDMA on both hosts.
 */
#define DL_LEN		(8192 * KiB)
#define DL_CHUNK	(64 * KiB)

static uint8_t dl_byte(uint64_t pos)
{
	return (uint8_t)(pos * 13 + pos / 509 + 3);
}

static void lazy_download(struct vt_ctx *c)
{
	long long switches, declined, started;
	static uint8_t buf[DL_CHUNK];
	int lfd, port, keeper, fd;
	struct visock_info vi;
	uint64_t pos = 0;
	ssize_t n, i;

	keeper = lazy_begin(c, &lfd, &port);
	switches = hu_proc("lazy_switches");
	declined = hu_proc("lazy_switch_declined");
	/* Checked last: what matters first is where the bytes went. */
	started = hu_proc_get("lazy_switch_started");
	fd = vt_is_client(c) ? connect_rcvbuf(c, port, 0) :
			       su_accept(lfd, SOCK_CLOEXEC);
	lazy_expect_tcp(fd, vt_is_client(c) ? "client" : "server");
	/* The server's first L bytes start the switch: both looked first. */
	vt_sync(c, "both on TCP");
	if (!vt_is_client(c)) {
		while (pos < DL_LEN) {
			for (i = 0; i < (ssize_t)DL_CHUNK; i++)
				buf[i] = dl_byte(pos + i);
			su_write_all(fd, buf, DL_CHUNK);
			pos += DL_CHUNK;
		}
		vt_try(shutdown(fd, SHUT_WR), "shutdown(SHUT_WR)");
		/* The client closes once it has checked everything. */
		su_expect_eof(fd);
	} else {
		for (;;) {
			n = read(fd, buf, sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			vt_assert(n >= 0, "read after %llu bytes: %s",
				  (unsigned long long)pos, strerror(errno));
			if (!n)
				break;
			for (i = 0; i < n; i++)
				vt_assert(buf[i] == dl_byte(pos + i),
					  "byte %llu wrong",
					  (unsigned long long)(pos + i));
			pos += n;
		}
		vt_assert(pos == DL_LEN, "end of the stream after %llu of %llu bytes",
			  (unsigned long long)pos, (unsigned long long)DL_LEN);
	}
	hu_get_info(fd, &vi);
	vt_diag("after the 8 MiB download: mode %u, QP %u, RDMA bytes sent %llu received %llu",
		vi.vi_mode, vi.vi_local_qpn,
		(unsigned long long)vi.vi_rdma_bytes_sent,
		(unsigned long long)vi.vi_rdma_bytes_rcvd);
	vt_diag("lazy_switches +%lld, lazy_switch_started +%lld",
		hu_proc("lazy_switches") - switches,
		hu_proc_get("lazy_switch_started") - started);
	lazy_expect_switched(&vi, switches, declined);
	/* The server started it: the client wrote nothing. */
	vt_assert(started >= 0 &&
		  hu_proc("lazy_switch_started") - started ==
		  (vt_is_client(c) ? 0 : 1),
		  "lazy_switch_started +%lld on the %s",
		  hu_proc("lazy_switch_started") - started,
		  vt_is_client(c) ? "client" : "server");
	if (vt_is_client(c))
		vt_assert(vi.vi_rdma_bytes_rcvd > 0,
			  "no byte of the download came over RDMA");
	else
		vt_assert(vi.vi_rdma_bytes_sent > 0,
			  "no byte of the download went over RDMA");
	close(fd);
	lazy_end(c, lfd, keeper);
}

/*
 * Both sides write past L at once, 20 times: each writes L bytes and
 * reads the peer's L, then both go on at the same moment with 256 KiB
 * each way (checksummed, non-blocking).  debugfs sw_delay_ms makes each
 * side handle the peer's SWITCH 500 ms late, so both SWITCHes are always
 * written: the client's wins, every connection ends on RDMA.
 */
#define CROSS_ROUNDS	20
#define CROSS_LEN	(256 * KiB)
#define CROSS_DELAY_MS	500

static void lazy_crossed(struct vt_ctx *c)
{
	long long switches, crossed, started, declined, reset;
	static char out[LAZY_L], in[LAZY_L];
	int lfd, port, keeper, fd, r, i;
	struct visock_info vi;
	bool hook;

	keeper = lazy_begin(c, &lfd, &port);
	/* Without the hook the rounds still run; the counters then fail. */
	hook = hu_debugfs_ready("sw_delay_ms");
	if (hook)
		hu_set_ll(SW_DELAY, CROSS_DELAY_MS);
	else
		vt_diag("no debugfs file visock/sw_delay_ms");
	switches = hu_proc("lazy_switches");
	crossed = hu_proc_get("lazy_switch_crossed");
	started = hu_proc_get("lazy_switch_started");
	declined = hu_proc("lazy_switch_declined");
	reset = hu_proc("lazy_switch_reset");
	for (r = 0; r < CROSS_ROUNDS; r++) {
		fd = vt_is_client(c) ? connect_rcvbuf(c, port, 0) :
				       su_accept(lfd, SOCK_CLOEXEC);
		for (i = 0; i < LAZY_L; i++)
			out[i] = (char)(i * 11 + r);
		su_write_all(fd, out, LAZY_L);
		su_read_all(fd, in, LAZY_L);
		vt_assert(!memcmp(in, out, LAZY_L),
			  "round %d: the peer's first L bytes differ", r);
		lazy_expect_tcp(fd, "at byte L");
		vt_sync(c, "both at byte L");
		su_xfer(&fd, 1, CROSS_LEN, XFER_MS);
		hu_get_info(fd, &vi);
		vt_assert(vi.vi_mode == VISOCK_MODE_RDMA && vi.vi_local_qpn,
			  "round %d: mode %u, QP %u: expected RDMA", r,
			  vi.vi_mode, vi.vi_local_qpn);
		close(fd);
		vt_sync(c, "round done");
	}
	if (hook)
		hu_set_ll(SW_DELAY, 0);
	vt_diag("%d rounds: lazy_switches +%lld, started +%lld, crossed +%lld",
		CROSS_ROUNDS, hu_proc("lazy_switches") - switches,
		hu_proc_get("lazy_switch_started") - started,
		hu_proc_get("lazy_switch_crossed") - crossed);
	vt_diag("lazy_switch_declined +%lld, lazy_switch_reset +%lld",
		hu_proc("lazy_switch_declined") - declined,
		hu_proc("lazy_switch_reset") - reset);
	vt_assert(hu_proc("lazy_switches") - switches == CROSS_ROUNDS,
		  "lazy_switches +%lld, expected %d",
		  hu_proc("lazy_switches") - switches, CROSS_ROUNDS);
	vt_assert(started >= 0 && crossed >= 0 &&
		  hu_proc("lazy_switch_started") - started == CROSS_ROUNDS &&
		  hu_proc("lazy_switch_crossed") - crossed == CROSS_ROUNDS,
		  "not every switch started by both sides: expected started and crossed +%d (from %lld, %lld)",
		  CROSS_ROUNDS, started, crossed);
	vt_assert(hu_proc("lazy_switch_declined") == declined &&
		  hu_proc("lazy_switch_reset") == reset,
		  "a crossed switch was declined or reset");
	lazy_end(c, lfd, keeper);
}

/*
 * close() or shutdown(SHUT_WR) during a switch's round trip: the
 * initiator writes past byte L - 1 (a non-blocking write stops at L: its
 * SWITCH is out, the reply not in) and at once closes, or shuts down and
 * reads to the end.  debugfs sw_delay_ms makes the responder handle the
 * SWITCH 100 ms late, so the close always falls inside the round trip.
 * The responder reads every byte (checked) and the end of the stream,
 * never a reset; after a shutdown it answers with a few bytes, which
 * the initiator reads before its own end.  Rounds alternate the
 * initiator (client, server) and the end (close, shutdown); in the
 * second phase the server's end of the QP is full (lgr_link_conns 1),
 * so the switches are declined (a server that cannot start one writes
 * its DECLINE and takes all L + 1 bytes).  Each host settles every
 * connection once, switched or declined, and resets none.
 */
#define LCS_ROUNDS	40	/* per phase */
#define LCS_DELAY_MS	100
#define LCS_ANSWER	300
#define LCS_WAIT_MS	10000

static uint8_t lcs_byte(int r, int off)
{
	return (uint8_t)(r * 31 + off * 11 + (off >> 9) + 7);
}

/*
 * Initiator of round @r; false if its connection was reset.  @wrote:
 * the bytes its write took, L (its SWITCH is out) or, if it could not
 * even start a switch (@all_ok), all L + 1.
 */
static bool lcs_initiator(int fd, int r, bool shut, bool all_ok,
			  ssize_t *wrote)
{
	static uint8_t out[LAZY_L + 1];
	uint8_t in[LCS_ANSWER];
	size_t got = 0;
	ssize_t n;
	int i;

	for (i = 0; i < (int)sizeof(out); i++)
		out[i] = lcs_byte(r, i);
	su_nonblock(fd, true);
	n = send(fd, out, sizeof(out), MSG_NOSIGNAL);
	vt_assert(n == LAZY_L || (all_ok && n == LAZY_L + 1),
		  "round %d: a non-blocking write of L + 1 bytes took %zd (%s)",
		  r, n, n < 0 ? vt_errname(errno) : "bytes");
	*wrote = n;
	su_nonblock(fd, false);
	if (!shut)
		return true;	/* close() right away */
	vt_try(shutdown(fd, SHUT_WR), "shutdown(SHUT_WR)");
	while (got < sizeof(in)) {
		n = su_read_within(fd, in + got, sizeof(in) - got, LCS_WAIT_MS);
		if (n < 0 && errno == ECONNRESET)
			return false;
		vt_assert(n > 0, "round %d: %zu of %d answer bytes, then %s", r,
			  got, LCS_ANSWER, n < 0 ? vt_errname(errno) : "EOF");
		got += n;
	}
	for (i = 0; i < LCS_ANSWER; i++)
		vt_assert(in[i] == lcs_byte(r + 1, i),
			  "round %d: answer byte %d wrong", r, i);
	do {
		n = read(fd, in, 1);
	} while (n < 0 && errno == EINTR);
	if (n < 0 && errno == ECONNRESET)
		return false;
	vt_assert(!n, "round %d: expected the end after the answer, got %s",
		  r, n < 0 ? vt_errname(errno) : "data");
	return true;
}

/* Responder of round @r; false if its connection was reset. */
static bool lcs_responder(int fd, int r, bool shut, size_t *read_)
{
	static uint8_t in[LAZY_L + 1];
	uint8_t out[LCS_ANSWER];
	size_t got = 0;
	ssize_t n;
	int i;

	for (;;) {
		n = su_read_within(fd, in + got, sizeof(in) - got, LCS_WAIT_MS);
		if (n < 0 && errno == ECONNRESET)
			return false;
		vt_assert(n >= 0, "round %d: read after %zu bytes: %s", r, got,
			  vt_errname(errno));
		if (!n)
			break;
		got += n;
		vt_assert(got <= LAZY_L + 1, "round %d: more than L + 1 bytes",
			  r);
	}
	*read_ = got;
	for (i = 0; i < (int)got; i++)
		vt_assert(in[i] == lcs_byte(r, i), "round %d: byte %d wrong", r,
			  i);
	if (shut) {
		for (i = 0; i < LCS_ANSWER; i++)
			out[i] = lcs_byte(r + 1, i);
		su_write_all(fd, out, sizeof(out));
	}
	return true;
}

static void lazy_close_switch(struct vt_ctx *c)
{
	long long switches, declined, reset, sw[2], dec[2], want;
	int lfd, port, keeper, fd, r, resets = 0, phase;
	bool hook, shut, mine, ok;
	ssize_t wrote = 0;
	size_t got = 0;

	/* Without the hook the rounds still run; the counters then fail. */
	hook = hu_debugfs_ready("sw_delay_ms");
	if (!hook)
		vt_diag("no debugfs file visock/sw_delay_ms");
	reset = hu_proc("lazy_switch_reset");
	for (phase = 0; phase < 2; phase++) {
		/* Second phase: the server's QP end takes only the keeper. */
		if (phase == 1 && !vt_is_client(c)) {
			fresh_group();
			hu_sysctl_set("lgr_link_conns", 1);
		}
		keeper = lazy_begin(c, &lfd, &port);
		if (hook)
			hu_set_ll(SW_DELAY, LCS_DELAY_MS);
		switches = hu_proc("lazy_switches");
		declined = hu_proc("lazy_switch_declined");
		for (r = 0; r < LCS_ROUNDS; r++) {
			/* Rounds 0, 1: the client initiates; 2, 3: the server. */
			mine = vt_is_client(c) == !(r & 2);
			shut = r & 1;
			fd = vt_is_client(c) ? connect_rcvbuf(c, port, 0) :
					       su_accept(lfd, SOCK_CLOEXEC);
			ok = mine ? lcs_initiator(fd, r, shut, phase, &wrote) :
				    lcs_responder(fd, r, shut, &got);
			if (!ok) {
				resets++;
				vt_diag("phase %d round %d: reset on the %s (%s)",
					phase, r, mine ? "initiator" : "responder",
					shut ? "shutdown" : "close");
			}
			close(fd);
			/* Every byte the initiator's write took, no more. */
			if (mine) {
				vt_send_num(c, "lcs wrote", wrote);
			} else {
				want = vt_recv_num(c, "lcs wrote");
				vt_assert(!ok || (long long)got == want,
					  "phase %d round %d: read %zu bytes and the end, the initiator wrote %lld",
					  phase, r, got, want);
			}
			vt_sync(c, "lcs: round done");
		}
		sw[phase] = hu_proc("lazy_switches") - switches;
		dec[phase] = hu_proc("lazy_switch_declined") - declined;
		if (hook)
			hu_set_ll(SW_DELAY, 0);
		if (phase == 1 && !vt_is_client(c))
			hu_sysctl_set("lgr_link_conns", saved[1].val);
		lazy_end(c, lfd, keeper);
	}
	vt_diag("%d connections: switched %lld then %lld, declined %lld then %lld, lazy_switch_reset +%lld, resets seen %d",
		2 * LCS_ROUNDS, sw[0], sw[1], dec[0], dec[1],
		hu_proc("lazy_switch_reset") - reset, resets);
	vt_assert(!resets, "%d connections were reset", resets);
	vt_assert(hu_proc("lazy_switch_reset") == reset,
		  "lazy_switch_reset +%lld", hu_proc("lazy_switch_reset") - reset);
	vt_assert(sw[0] == LCS_ROUNDS && !dec[0],
		  "first phase: switched %lld, declined %lld, expected %d and 0",
		  sw[0], dec[0], LCS_ROUNDS);
	vt_assert(!sw[1] && dec[1] == LCS_ROUNDS,
		  "second phase: switched %lld, declined %lld, expected 0 and %d",
		  sw[1], dec[1], LCS_ROUNDS);
}

#define T(fn, tmo, d)	{ #fn, fn, fn, tmo, d }

static const struct vt_test tests[] = {
	T(share, 180, "16 connections share at most lgr_max_links QPs"),
	T(conns1000, 900, "1000 concurrent connections on few QPs"),
	T(churn, 1200, "connect/transfer/close cycles (10000), nothing left"),
	T(idle_teardown, 120, "an idle QP goes on both hosts, a new one comes"),
	T(idle_server_first, 120, "the server's idle QP goes first: the client's follows"),
	T(idle_race, 300, "connections racing the teardown of their QP"),
	T(prefork, 180, "pre-forked children serve connections on shared QPs"),
	T(pool_reuse, 120, "a closed connection's rings serve the next one"),
	T(group_full, 120, "a full link group: link_busy, data intact"),
	T(mem_limit, 120, "the ring memory limit: buf_exhausted, data intact"),
	T(qp_small, 120, "a group's first QP is small: lgr_link_conns_min"),
	T(qp_grow, 180, "a full group grows by a QP twice as large"),
	T(qp_grow_cap, 240, "a growing group keeps lgr_max_links and the peer cap"),
	T(multi_peer, 120, "the server has a link group per client address"),
	T(stale_token, 120, "a cursor message with a stale token: dropped, counted"),
	T(unknown_token, 120, "a cursor message for an unused index: dropped, counted"),
	T(bad_prod, 120, "a producer cursor beyond the ring resets one connection"),
	T(bad_cons, 120, "a consumer cursor ahead of the data resets one connection"),
	T(bad_credits, 120, "excess credits reset one connection"),
	T(linger_drain, 300, "every way of ending frees the peer's ring at once"),
	T(linger_retire, 300, "lingering connections cannot fill a link group"),
	T(lazy_crr, 180, "lazy start: short connections never touch the QP"),
	T(lazy_switch, 300, "lazy start: 8 MiB each way switch to RDMA midway"),
	T(lazy_decline, 180, "lazy start: a declined switch stays on TCP, data intact"),
	T(lazy_exact, 120, "lazy start: exactly L bytes and the end: no switch, no hang"),
	T(lazy_after_close, 600, "lazy start: streams right after a close never reset"),
	T(lazy_download, 300, "lazy start: a download switches, started by the server"),
	T(lazy_crossed, 600, "lazy start: both sides start the switch at once, 20 times"),
	T(lazy_close_switch, 900,
	  "lazy start: close or shutdown during the switch ends the stream cleanly"),
};

int main(int argc, char **argv)
{
	const char *cycles = getenv("VISOCK_TEST_CHURN_CYCLES");

	if (cycles && atoi(cycles) >= CHURN_PROCS)
		churn_cycles = atoi(cycles) / CHURN_PROCS * CHURN_PROCS;
	hu_sysctls_save(saved, ARRAY_SIZE(saved));
	vt_set_cleanup(restore_sysctls);
	return vt_main(argc, argv, "visock_lgr", tests, ARRAY_SIZE(tests));
}
