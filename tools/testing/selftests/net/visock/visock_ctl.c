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
 *
 * The tool is $VISOCKCTL, else $VISOCK_SRC/tools/visock/visockctl, else
 * visockctl from PATH.
 */
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
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <unistd.h>

#include <linux/visock.h>

#include "harness.h"
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

static int read_int(const char *path, int *val)
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
	*val = atoi(buf);
	return 0;
}

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

static const char *ctl_bin(void)
{
	static char path[512];
	const char *env = getenv("VISOCKCTL");
	const char *src = getenv("VISOCK_SRC");

	if (env && *env)
		return env;
	if (src && *src) {
		snprintf(path, sizeof(path), "%s/tools/visock/visockctl", src);
		if (!access(path, X_OK))
			return path;
	}
	return "visockctl";
}

/* Run visockctl with @args; its output (stdout and stderr) in @out. */
static int run_ctl_status(char *out, size_t size, const char *args)
{
	char cmd[1024];
	size_t len = 0;
	FILE *f;
	int st;

	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", ctl_bin(), args);
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

static unsigned long sock_ino(int fd)
{
	struct stat st;

	vt_try(fstat(fd, &st), "fstat");
	return st.st_ino;
}

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
	unsigned long ino = sock_ino(k->fd);
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
		line = json_find(out, "inode", sock_ino(k[i].fd));
		vt_assert(line, "links: no link of inode %lu:\n%.1500s",
			  sock_ino(k[i].fd), out);
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
		bool listed = json_find(out, "inode", sock_ino(k[i].fd));

		vt_assert(listed == k[i].rdma, "sockets --rdma: inode %lu %s",
			  sock_ino(k[i].fd), listed ? "listed" : "missing");
		nr += k[i].rdma;
	}
	vt_assert(json_count(out) == nr, "sockets --rdma: %u listed, %u expected",
		  json_count(out), nr);
	free(out);

	out = run_ctl("sockets --tcp --json");
	for (i = 0; i < n; i++) {
		bool listed = json_find(out, "inode", sock_ino(k[i].fd));

		vt_assert(listed == !k[i].rdma, "sockets --tcp: inode %lu %s",
			  sock_ino(k[i].fd), listed ? "listed" : "missing");
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
		vt_assert(!json_find(out, "inode", sock_ino(k[i].fd)) ||
			  k[i].cport == (port == 65535 ? 1 : port + 1),
			  "%s lists inode %lu", args, sock_ino(k[i].fd));
	free(out);

	if (lfd >= 0) {
		const char *line;
		char state[32];

		out = run_ctl("sockets -l --json");
		line = json_find(out, "inode", sock_ino(lfd));
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
	unsigned int i, n = N_RDMA + N_FB;
	int lfd = -1, port = 0;

	if (read_int(ENABLE_PATH, &orig_enable))
		vt_skip("visock not loaded");
	if (vt_is_client(c)) {
		port = su_recv_port(c);
		client_conns(c, port, k, 0, N_RDMA, true);
		client_conns(c, port, k, N_RDMA, N_FB, false);
		vt_expect(c, "READ");
	} else {
		lfd = su_listen(VT_FAMILY_VISOCK, false, 16, 0);
		su_send_port(c, lfd);
		server_conns(c, lfd, k, n);
		vt_send(c, "READ");
	}
	check_sockets(k, n, vt_is_client(c), lfd,
		      lfd >= 0 ? su_port(lfd) : port);
	vt_sync(c, "checked");
	for (i = 0; i < n; i++)
		close(k[i].fd);
	if (lfd >= 0)
		close(lfd);
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
	int lfd = -1, port;
	char *out;

	if (read_int(ENABLE_PATH, &orig_enable))
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

	if (vt_is_client(c)) {
		port = su_recv_port(c);
		client_conns(c, port, k, 0, 2, true);
		client_conns(c, port, k, 2, 1, false);
		vt_expect(c, "READ");
	} else {
		lfd = su_listen(VT_FAMILY_VISOCK, false, 16, 0);
		su_send_port(c, lfd);
		server_conns(c, lfd, k, n);
		vt_send(c, "READ");
	}
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
	check_stat(out, "qps", 2, 2);
	check_stat(out, "registered_bytes", 1, ~0ULL);
	check_stat(out, "sockets", n + (lfd >= 0), n + (lfd >= 0));
	vt_assert(json_num(out, "connections_rdma") ==
		  proc_stat("connections_rdma") &&
		  json_num(out, "fallback_disabled") ==
		  proc_stat("fallback_disabled"),
		  "stats and %s disagree", PROC_PATH);
	free(out);
	vt_sync(c, "checked");

	for (i = 0; i < n; i++)
		close(k[i].fd);
	if (lfd >= 0)
		close(lfd);
	/* The links go away once both ends closed. */
	for (i = 0; i < 100; i++) {
		out = run_ctl("stats --json");
		if (json_num(out, "qps") == 0 && json_num(out, "sockets") == 0)
			break;
		free(out);
		out = NULL;
		usleep(100 * 1000);
	}
	if (!out)
		out = run_ctl("stats --json");
	check_stat(out, "qps", 0, 0);
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
	if (st || read_int(ENABLE_PATH, &en) || en == parent_enable)
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
	    !strstr(out, "\"handshakes_started\":0,"))
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

static void netns_isolation(struct vt_ctx *c)
{
	int up[2], down[2], en, en2, st;
	unsigned long ino[3];
	char msg[4096], *before, *out;
	ssize_t len;
	pid_t pid;
	int i;

	(void)c;
	if (read_int(ENABLE_PATH, &en))
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
	vt_assert(!read_int(ENABLE_PATH, &en2) && en2 == en,
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
	int lfd = -1, port;
	bool ok = true;
	char *trace, what[64];

	if (read_int(ENABLE_PATH, &orig_enable))
		vt_skip("visock not loaded");
	if (access(TRACE_DIR "/trace", F_OK) &&
	    mount("tracefs", TRACE_DIR, "tracefs", 0, NULL))
		ok = false;
	if (ok && (write_text(TRACE_DIR "/trace", "") ||
		   write_text(TRACE_DIR "/events/visock/enable", "1\n")))
		ok = false;
	vt_agree(c, ok, "no tracefs or no events/visock");

	if (vt_is_client(c)) {
		port = su_recv_port(c);
		client_conns(c, port, k, 0, 1, true);
		client_conns(c, port, k, 1, 1, false);
		vt_expect(c, "READ");
	} else {
		lfd = su_listen(VT_FAMILY_VISOCK, false, 16, 0);
		su_send_port(c, lfd);
		server_conns(c, lfd, k, n);
		vt_send(c, "READ");
	}
	vt_sync(c, "transferred");
	for (i = 0; i < n; i++)
		close(k[i].fd);
	if (lfd >= 0)
		close(lfd);
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

#define T(fn, tmo, d)	{ #fn, fn, fn, tmo, d }

static const struct vt_test tests[] = {
	T(sockets_match, 120, "visockctl sockets/links match the connections"),
	T(stats_match, 120, "visockctl stats match what the connections did"),
	{ "netns_isolation", netns_isolation, NULL, 60,
	  "another namespace's sockets and counters do not show here" },
	T(tracepoints, 120, "events/visock for a handshake, a fallback, a link"),
};

int main(int argc, char **argv)
{
	vt_set_cleanup(ctl_cleanup);
	return vt_main(argc, argv, "visock_ctl", tests, ARRAY_SIZE(tests));
}
