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
 *			data over RDMA, on at most lgr_max_links QPs per
 *			host; prints the setup time ratios (not judged)
 * churn		10000 connect/transfer/close cycles from 4 processes;
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

#include <netinet/in.h>

#include <linux/visock.h>

#include "harness.h"
#include "ktap.h"
#include "sockutil.h"

#define KiB		1024ULL
#define ENABLE_PATH	"/proc/sys/net/visock/enable"
#define SYSCTL_DIR	"/proc/sys/net/visock/"
#define PROC_PATH	"/proc/net/visock"
#define WAIT_MS		10000		/* something the peer owes */
#define XFER_MS		300000		/* a bulk transfer of many sockets */

/* ---- host state ---- */

static long long read_ll(const char *path)
{
	char buf[64];
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return strtoll(buf, NULL, 0);
}

static void write_ll(const char *path, long long val)
{
	char buf[32];
	int fd, len;

	len = snprintf(buf, sizeof(buf), "%lld\n", val);
	fd = vt_try(open(path, O_WRONLY | O_CLOEXEC), path);
	vt_assert(write(fd, buf, len) == len, "write %s: %s", path,
		  strerror(errno));
	close(fd);
}

/* Counter @name of /proc/net/visock (fails the test if absent). */
static long long proc_get(const char *name)
{
	char line[256], key[128];
	long long val = -1, v;
	FILE *f;

	f = fopen(PROC_PATH, "re");
	vt_assert(f, "%s: %s", PROC_PATH, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%127s %lld", key, &v) == 2 &&
		    !strcmp(key, name)) {
			val = v;
			break;
		}
	}
	fclose(f);
	vt_assert(val >= 0, "%s has no counter %s", PROC_PATH, name);
	return val;
}

static const char *const fb_names[] = {
	"none", "disabled", "peer_no_visock", "no_device", "peer_no_device",
	"version", "bad_msg", "timeout", "nomem", "peer_decline", "qp_setup",
	"buf_exhausted", "device_gone", "syncookie", "io", "policy",
	"link_busy", "link_gone",
};

#define NFB	ARRAY_SIZE(fb_names)

static void fb_snap(long long *v)
{
	char name[64];
	unsigned int i;

	for (i = 1; i < NFB; i++) {
		snprintf(name, sizeof(name), "fallback_%s", fb_names[i]);
		v[i] = proc_get(name);
	}
}

/* Print the fallbacks since @v0 by reason; returns their number. */
static long long fb_report(const char *what, const long long *v0)
{
	long long v[NFB], n = 0;
	char buf[512] = "";
	unsigned int i;
	size_t len = 0;

	fb_snap(v);
	for (i = 1; i < NFB; i++) {
		if (v[i] == v0[i])
			continue;
		n += v[i] - v0[i];
		len += snprintf(buf + len, sizeof(buf) - len, " %s %lld",
				fb_names[i], v[i] - v0[i]);
		if (len >= sizeof(buf))
			break;
	}
	vt_diag("%s: %lld fell back%s%s", what, n, n ? ":" : "", buf);
	return n;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Wait up to @ms for proc counter @name to be @want; returns its value. */
static long long proc_wait(const char *name, long long want, int ms)
{
	long long end = now_ms() + ms, v;

	while ((v = proc_get(name)) != want && now_ms() < end)
		usleep(50 * 1000);
	return v;
}

/*
 * Sysctls the tests change: read when the program starts and restored by
 * the cleanup hook (in the runner process) after every test half,
 * however it ended.
 */
static const char *const saved_names[] = {
	"lgr_max_links", "lgr_link_conns", "lgr_idle_ms", "lgr_mem_max_mb",
};

static long long saved_vals[4] = { -1, -1, -1, -1 };

static void save_sysctls(void)
{
	char path[128];
	unsigned int i;

	for (i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), SYSCTL_DIR "%s", saved_names[i]);
		saved_vals[i] = read_ll(path);
	}
}

static void sysctl_set(const char *name, long long val)
{
	char path[128];

	snprintf(path, sizeof(path), SYSCTL_DIR "%s", name);
	write_ll(path, val);
}

static long long sysctl_get(const char *name)
{
	char path[128];
	long long v;

	snprintf(path, sizeof(path), SYSCTL_DIR "%s", name);
	v = read_ll(path);
	vt_assert(v >= 0, "cannot read %s", path);
	return v;
}

static void restore_sysctls(const struct vt_ctx *c)
{
	char path[128], buf[32];
	unsigned int i;
	int fd, len;

	(void)c;
	for (i = 0; i < 4; i++) {
		if (saved_vals[i] < 0)
			continue;
		snprintf(path, sizeof(path), SYSCTL_DIR "%s", saved_names[i]);
		len = snprintf(buf, sizeof(buf), "%lld\n", saved_vals[i]);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			if (write(fd, buf, len) != len)
				fprintf(stderr, "# restoring %s failed\n", path);
			close(fd);
		}
	}
}

static bool active_rdma_port(void)
{
	return read_ll(ENABLE_PATH) >= 0 && proc_get("rdma_devices") > 0;
}

static void need_rdma(struct vt_ctx *c)
{
	const char *why = "";

	if (c->family != VT_FAMILY_VISOCK)
		why = "family inet: needs AF_VISOCK";
	else if (c->loopback)
		why = "both halves on one host: loopback connections do not use RDMA";
	else if (read_ll(ENABLE_PATH) < 0)
		why = "visock is not loaded";
	else if (read_ll(ENABLE_PATH) != 1)
		why = "net.visock.enable is not 1";
	else if (!active_rdma_port())
		why = "no RDMA device";
	vt_agree(c, !*why, why);
}

static void get_info(int fd, struct visock_info *vi)
{
	socklen_t len = sizeof(*vi);

	memset(vi, 0, sizeof(*vi));
	vt_try(getsockopt(fd, SOL_VISOCK, VISOCK_INFO, vi, &len),
	       "getsockopt(VISOCK_INFO)");
}

static void expect_rdma(int fd, const char *what, struct visock_info *vi)
{
	struct visock_info tmp;

	if (!vi)
		vi = &tmp;
	get_info(fd, vi);
	vt_assert(vi->vi_mode == VISOCK_MODE_RDMA,
		  "%s: mode %u (fallback reason %u), expected RDMA (%u)",
		  what, vi->vi_mode, vi->vi_fallback_reason, VISOCK_MODE_RDMA);
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

static int connect_small(struct vt_ctx *c, int port)
{
	struct sockaddr_storage ss;
	socklen_t len = su_peer_addr(c, false, port, &ss);
	int fd = su_socket(VT_FAMILY_VISOCK, false, SOCK_CLOEXEC);

	small_rings(fd);
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
		expect_rdma(fds[i], w, &vi);
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
	sysctl_set("lgr_idle_ms", 0);
	vt_sync(c, "no QP left: set");
	fd = su_pair(c);
	close(fd);
	vt_assert(proc_wait("lgr_connections", 0, WAIT_MS) == 0,
		  "lgr_connections %lld after close", proc_get("lgr_connections"));
	vt_assert(proc_wait("qps", 0, 40000) == 0, "%lld QPs left",
		  proc_get("qps"));
	vt_sync(c, "no QP left: done");
}

/* ---- share ---- */

#define NSHARE	16

static void share(struct vt_ctx *c)
{
	long long reused0, max_links;
	int *fds, i, port, qps;

	need_rdma(c);
	max_links = sysctl_get("lgr_max_links");
	reused0 = proc_get("lgr_qp_reused");
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
		NSHARE, qps, max_links, proc_get("lgr_qp_reused") - reused0);
	vt_assert(qps <= max_links, "%d QPs for %d connections, limit %lld",
		  qps, NSHARE, max_links);
	vt_assert(proc_get("lgr_qp_reused") - reused0 >= NSHARE - max_links,
		  "only %lld of %d connections joined an existing QP",
		  proc_get("lgr_qp_reused") - reused0, NSHARE);
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
		fd = connect_small(c, port);
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
	long long *us = NULL, tcp_us[NTCP], med, tcp_med, max_links;
	int *fds, i, port, tport, lfd, tlfd, qps;
	char ch;

	need_rdma(c);
	set_nofile(4 * NCONNS);
	max_links = sysctl_get("lgr_max_links");
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

		get_info(fds[i], &vi);
		/* (The 1-byte ping before may have gone either way.) */
		vt_assert(vi.vi_rdma_bytes_sent >= pl_total(16 * KiB) &&
			  vi.vi_rdma_bytes_rcvd >= pl_total(16 * KiB),
			  "connection %d: RDMA bytes %llu/%llu, expected %llu",
			  i, (unsigned long long)vi.vi_rdma_bytes_sent,
			  (unsigned long long)vi.vi_rdma_bytes_rcvd,
			  (unsigned long long)pl_total(16 * KiB));
	}
	vt_diag("%d connections on %d QP(s) (limit %lld), lgr_connections %lld",
		NCONNS, qps, max_links, proc_get("lgr_connections"));
	vt_assert(qps <= max_links, "%d QPs for %d connections, limit %lld",
		  qps, NCONNS, max_links);
	vt_assert(proc_get("lgr_connections") >= NCONNS,
		  "lgr_connections %lld, expected at least %d",
		  proc_get("lgr_connections"), NCONNS);
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

#define CHURN_CYCLES	10000
#define CHURN_PROCS	4

/* One process's share of cycles: connect, 4 KiB each way, close. */
static void churn_client(struct vt_ctx *c, int port, int cycles)
{
	int i, fd;

	for (i = 0; i < cycles; i++) {
		fd = connect_small(c, port);
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
					     CHURN_CYCLES / CHURN_PROCS);
			else
				churn_server(port_or_lfd,
					     CHURN_CYCLES / CHURN_PROCS);
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
	long long rdma0, created0, qps, mem, fb0[NFB], fb;
	int lfd = -1, port;

	need_rdma(c);
	/* As on a busy host: the QPs stay between the cycles. */
	sysctl_set("lgr_idle_ms", 10000);
	vt_sync(c, "set");
	fb_snap(fb0);
	rdma0 = proc_get("connections_rdma");
	created0 = proc_get("lgr_qps_created");
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
		CHURN_CYCLES, proc_get("connections_rdma") - rdma0,
		proc_get("lgr_qps_created") - created0);
	fb = fb_report("churn", fb0);
	/*
	 * A connection may find every QP it may have still being set up
	 * for half the handshake timeout on a loaded emulated host
	 * (link_busy); nothing else is expected.
	 */
	vt_assert(proc_get("connections_rdma") - rdma0 + fb == CHURN_CYCLES &&
		  fb <= CHURN_CYCLES / 100,
		  "%lld of %d connections on RDMA, %lld fell back",
		  proc_get("connections_rdma") - rdma0, CHURN_CYCLES, fb);
	vt_sync(c, "done");
	/* Closing finishes in the background: every connection leaves. */
	vt_assert(proc_wait("lgr_connections", 0, 30000) == 0,
		  "lgr_connections %lld after every socket closed",
		  proc_get("lgr_connections"));
	vt_sync(c, "closed");
	/* Then the QPs go, and with them every ring they pooled. */
	sysctl_set("lgr_idle_ms", 200);
	qps = proc_wait("qps", 0, 60000);
	mem = proc_wait("registered_bytes", 0, 5000);
	vt_diag("afterwards: qps %lld, registered_bytes %lld, lgr_stale_dropped %lld",
		qps, mem, proc_get("lgr_stale_dropped"));
	vt_assert(!qps && !mem, "left over: %lld QPs, %lld registered bytes",
		  qps, mem);
	vt_sync(c, "idle");
}

/* ---- idle_teardown ---- */

static void idle_teardown(struct vt_ctx *c)
{
	long long created0, destroyed0;
	int fd;

	need_rdma(c);
	/*
	 * The server would keep its end for 2 * 60 + 2 s on its own: it
	 * goes within 20 s only if the client's delete message arrives.
	 */
	sysctl_set("lgr_idle_ms", vt_is_client(c) ? 1000 : 60000);
	vt_sync(c, "set");
	created0 = proc_get("lgr_qps_created");
	destroyed0 = proc_get("lgr_qps_destroyed");
	fd = su_pair(c);
	expect_rdma(fd, "first connection", NULL);
	su_xfer(&fd, 1, 64 * KiB, XFER_MS);
	vt_sync(c, "xfer");
	close(fd);
	vt_sync(c, "closed");
	/* Both ends go: the client's idle work tells the server. */
	vt_assert(proc_wait("qps", 0, 20000) == 0,
		  "%lld QPs still there after 20 s idle", proc_get("qps"));
	vt_assert(proc_get("lgr_qps_destroyed") > destroyed0,
		  "lgr_qps_destroyed did not grow");
	vt_sync(c, "gone");
	fd = su_pair(c);
	expect_rdma(fd, "connection after the teardown", NULL);
	su_xfer(&fd, 1, 64 * KiB, XFER_MS);
	vt_assert(proc_get("lgr_qps_created") >= created0 + 2,
		  "no new QP was created (%lld -> %lld)", created0,
		  proc_get("lgr_qps_created"));
	vt_sync(c, "again");
	close(fd);
}

/* ---- idle_race ---- */

#define NRACE	100

static void idle_race(struct vt_ctx *c)
{
	long long fb0[NFB], created0 = proc_get("lgr_qps_created");
	int i, fd, rdma = 0, tcp = 0;
	struct visock_info vi;

	need_rdma(c);
	fb_snap(fb0);
	/* Every QP goes the moment its last connection closes. */
	sysctl_set("lgr_idle_ms", 0);
	vt_sync(c, "set");
	for (i = 0; i < NRACE; i++) {
		fd = su_pair(c);
		su_xfer(&fd, 1, 8 * KiB, XFER_MS);
		get_info(fd, &vi);
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
		proc_get("lgr_qps_created") - created0, proc_get("qps"));
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

	need_rdma(c);
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
				expect_rdma(cf[k], "child connection", NULL);
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

	need_rdma(c);
	/* Keep the QP, and with it the pool, between the connections. */
	sysctl_set("lgr_idle_ms", 60000);
	vt_sync(c, "set");
	fd = su_pair(c);
	expect_rdma(fd, "first connection", NULL);
	su_xfer(&fd, 1, 256 * KiB, XFER_MS);
	vt_sync(c, "xfer");
	close(fd);
	/* Both closed flags arrive, the rings go back to the pool. */
	vt_assert(proc_wait("lgr_connections", 0, WAIT_MS) == 0,
		  "lgr_connections %lld after close", proc_get("lgr_connections"));
	vt_sync(c, "closed");
	usleep(500 * 1000);
	vt_diag("after close: qps %lld, created %lld, destroyed %lld, lgr_idle_ms %lld",
		proc_get("qps"), proc_get("lgr_qps_created"),
		proc_get("lgr_qps_destroyed"), sysctl_get("lgr_idle_ms"));
	mem1 = proc_get("registered_bytes");
	reused0 = proc_get("lgr_qp_reused");
	vt_sync(c, "measured");
	fd = su_pair(c);
	expect_rdma(fd, "second connection", NULL);
	su_xfer(&fd, 1, 256 * KiB, XFER_MS);
	mem2 = proc_get("registered_bytes");
	vt_diag("ring memory before the second connection %lld, with it %lld; joined the QP: %lld",
		mem1, mem2, proc_get("lgr_qp_reused") - reused0);
	vt_assert(mem1 > 0 && mem2 == mem1,
		  "registered_bytes %lld -> %lld: the rings were not reused",
		  mem1, mem2);
	vt_assert(!vt_is_client(c) || proc_get("lgr_qp_reused") > reused0,
		  "the second connection did not join the QP");
	vt_sync(c, "checked");
	close(fd);
	settle(c);
}

/* ---- group_full ---- */

#define NFULL	6

static void group_full(struct vt_ctx *c)
{
	int *fds, i, port, rdma = 0;
	struct visock_info vi;

	need_rdma(c);
	if (vt_is_client(c)) {
		/* A fresh group: the QPs of earlier tests must be gone. */
		sysctl_set("lgr_idle_ms", 0);
		vt_assert(proc_wait("qps", 0, 30000) == 0, "%lld QPs left",
			  proc_get("qps"));
		sysctl_set("lgr_max_links", 1);
		sysctl_set("lgr_link_conns", 4);
		sysctl_set("lgr_idle_ms", 10000);
		vt_sync(c, "prepared");
		port = su_recv_port(c);
		fds = calloc(NFULL, sizeof(*fds));
		vt_assert(fds, "out of memory");
		for (i = 0; i < NFULL; i++)
			fds[i] = su_connect(c, VT_FAMILY_VISOCK, false, port);
	} else {
		vt_sync(c, "prepared");
		fds = accept_n(c, NFULL, false);
	}
	su_xfer(fds, NFULL, 64 * KiB, XFER_MS);
	for (i = 0; i < NFULL; i++) {
		get_info(fds[i], &vi);
		if (vi.vi_mode == VISOCK_MODE_RDMA) {
			rdma++;
			continue;
		}
		vt_assert(vi.vi_fallback_reason ==
			  (vt_is_client(c) ? VISOCK_FB_LINK_BUSY :
					     VISOCK_FB_PEER_DECLINE),
			  "connection %d: mode %u, fallback reason %u", i,
			  vi.vi_mode, vi.vi_fallback_reason);
	}
	vt_diag("%d of %d connections on RDMA with one QP of 4", rdma, NFULL);
	vt_assert(rdma == 4, "%d connections on RDMA, expected 4", rdma);
	vt_sync(c, "done");
	for (i = 0; i < NFULL; i++)
		close(fds[i]);
	free(fds);
	sysctl_set("lgr_max_links", saved_vals[0]);
	sysctl_set("lgr_link_conns", saved_vals[1]);
	settle(c);
}

/* ---- mem_limit ---- */

#define NMEM	8

static void mem_limit(struct vt_ctx *c)
{
	int *fds, i, port, rdma = 0, fb = 0;
	struct visock_info vi;

	need_rdma(c);
	if (vt_is_client(c)) {
		sysctl_set("lgr_idle_ms", 0);
		vt_assert(proc_wait("qps", 0, 30000) == 0, "%lld QPs left",
			  proc_get("qps"));
		vt_assert(proc_wait("registered_bytes", 0, 5000) == 0,
			  "%lld bytes still registered",
			  proc_get("registered_bytes"));
		/* 1 MiB: two connections' 256 KiB ring + buffer each. */
		sysctl_set("lgr_mem_max_mb", 1);
		sysctl_set("lgr_idle_ms", 10000);
		vt_sync(c, "prepared");
		port = su_recv_port(c);
		fds = calloc(NMEM, sizeof(*fds));
		vt_assert(fds, "out of memory");
		for (i = 0; i < NMEM; i++) {
			int v = 256 * 1024;

			fds[i] = su_socket(VT_FAMILY_VISOCK, false,
					   SOCK_CLOEXEC);
			vt_try(setsockopt(fds[i], SOL_SOCKET, SO_RCVBUF, &v,
					  sizeof(v)), "setsockopt(SO_RCVBUF)");
			{
				struct sockaddr_storage ss;
				socklen_t len = su_peer_addr(c, false, port,
							     &ss);

				vt_try(connect(fds[i], (struct sockaddr *)&ss,
					       len), "connect");
			}
		}
	} else {
		vt_sync(c, "prepared");
		fds = accept_n(c, NMEM, false);
	}
	su_xfer(fds, NMEM, 64 * KiB, XFER_MS);
	for (i = 0; i < NMEM; i++) {
		get_info(fds[i], &vi);
		if (vi.vi_mode == VISOCK_MODE_RDMA) {
			rdma++;
			continue;
		}
		fb++;
		if (vt_is_client(c))
			vt_assert(vi.vi_fallback_reason ==
				  VISOCK_FB_BUF_EXHAUSTED,
				  "connection %d: fallback reason %u", i,
				  vi.vi_fallback_reason);
	}
	vt_diag("lgr_mem_max_mb=1 on the client: %d on RDMA, %d fell back",
		rdma, fb);
	vt_assert(rdma >= 1 && fb >= 1,
		  "%d on RDMA, %d fell back: expected both", rdma, fb);
	vt_sync(c, "done");
	for (i = 0; i < NMEM; i++)
		close(fds[i]);
	free(fds);
	sysctl_set("lgr_mem_max_mb", saved_vals[3]);
	settle(c);
}

#define T(fn, tmo, d)	{ #fn, fn, fn, tmo, d }

static const struct vt_test tests[] = {
	T(share, 180, "16 connections share at most lgr_max_links QPs"),
	T(conns1000, 900, "1000 concurrent connections on few QPs"),
	T(churn, 1200, "10000 connect/transfer/close cycles, nothing left"),
	T(idle_teardown, 120, "an idle QP goes on both hosts, a new one comes"),
	T(idle_race, 300, "connections racing the teardown of their QP"),
	T(prefork, 180, "pre-forked children serve connections on shared QPs"),
	T(pool_reuse, 120, "a closed connection's rings serve the next one"),
	T(group_full, 120, "a full link group: link_busy, data intact"),
	T(mem_limit, 120, "the ring memory limit: buf_exhausted, data intact"),
};

int main(int argc, char **argv)
{
	save_sysctls();
	vt_set_cleanup(restore_sysctls);
	return vt_main(argc, argv, "visock_lgr", tests, ARRAY_SIZE(tests));
}
