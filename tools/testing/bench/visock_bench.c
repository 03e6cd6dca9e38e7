// SPDX-License-Identifier: GPL-2.0
/*
 * visock_bench - stream throughput, ping-pong round-trip time, connection
 * rate and parallel streams over AF_VISOCK, AF_INET (TCP; also rsocket
 * when rdma-core's librspreload.so is preloaded) or AF_SMC (SMC-R).
 *
 *   visock_bench server [-f FAMILY] [-p PORT] [-n CONNS] [-T SECS]
 *                       [-K CIPHER | -X XFORM]
 *   visock_bench client -c HOST [-f FAMILY] [-p PORT] [-t SECS] [-w BYTES]
 *                       [-r ROUNDS] [-W WARMUP] [-m MSGSIZE] [-T SECS]
 *                       [-K CIPHER | -X XFORM]
 *                       [-S | -P | -C [-k] | -N STREAMS]
 *
 * Without a test option the client opens two connections one after the
 * other: a stream test (-S: -w byte writes for -t seconds, then
 * shutdown(SHUT_WR); the time is taken when the server has confirmed
 * every byte) and a ping-pong test (-P: -m byte messages echoed by the
 * server, -W warm-up rounds, then -r timed rounds).  -C measures
 * connect + one -m byte request and response + close, one connection
 * after the other for -t seconds (CRR); with -k one more connection to
 * the same server stays open meanwhile.  -N runs N stream connections in
 * parallel (threads), each with -w byte writes for -t seconds.  Each
 * connection starts with a small header telling the server which test
 * follows; the server serves every connection in a thread of its own
 * (rsocket cannot follow a fork), -n of them (0: until killed).
 *
 * Output: one "RESULT key=value ..." line per test (machine readable),
 * then a human-readable line.  For AF_VISOCK the client also prints the
 * connection's VISOCK_INFO (mode, fallback reason, per-connection RDMA
 * and TCP byte counters) and the change of the per-namespace counters in
 * /proc/net/visock over the test, so the output shows which transport
 * really carried the bytes.
 *
 * -K CIPHER (inet only: gcm-aes-128 or chacha20-poly1305) turns kernel
 * TLS on for every connection, on both ends, right after connect() and
 * accept(): the "tls" upper layer protocol, then TLS 1.2 records in both
 * directions with fixed benchmark keys (never secret: this measures the
 * record layer, not a TLS handshake).  -X XFORM (visock only:
 * gcm-aes-128, chacha20-poly1305, gmac-aes-128, ...) asks for that
 * transform pair with the VISOCK_TRANSFORM socket option; it needs an
 * authenticated handshake (net.visock.auth and a key on both hosts).  A
 * client connection that did not get what -K or -X asked for (no RDMA,
 * another transform, kernel TLS not in place) ends the client with an
 * error instead of a RESULT line.
 *
 * This is a benchmark, not a test: it never judges the numbers.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/tls.h>
#include <linux/visock.h>

#ifndef SOL_TLS
#define SOL_TLS		282
#endif
#ifndef TCP_ULP
#define TCP_ULP		31
#endif

#ifndef AF_SMC
#define AF_SMC		43
#endif
#define SMCPROTO_SMC	0	/* SMC over IPv4 */

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif
#ifndef __printf
#define __printf(fmt, args)						\
	__attribute__((							\
		__format__(__printf__, fmt, args)))
#endif

#define BENCH_MAGIC	0x56534b42u	/* "VSKB" */
#define OP_STREAM	1
#define OP_PINGPONG	2
#define OP_CRR		3	/* one request and response, then close */
#define OP_HOLD		4	/* idle until the client closes */
#define MAX_PAR		256
#define MAX_MSG		(1024 * 1024)

enum family { FAM_INET, FAM_VISOCK, FAM_SMC };

struct hdr {
	uint32_t magic;
	uint32_t op;
	uint32_t msg_size;
	uint32_t rounds;	/* ping-pong: warm-up + timed rounds */
};

struct opts {
	enum family fam;
	const char *host;
	int port;
	int conns;
	double secs;
	unsigned int wsize;
	unsigned int rounds;
	unsigned int warmup;
	unsigned int msg;
	unsigned int timeout;
	const char *label;
	bool keep;
	unsigned int par;
	int ktls;		/* TLS_CIPHER_*, 0: no kernel TLS */
	int xform;		/* enum visock_xform, 0: none asked for */
};

/* Per-namespace counters of /proc/net/visock that the report uses. */
struct vcounters {
	unsigned long long rdma_sent, rdma_rcvd, tcp_sent, tcp_rcvd;
	bool valid;
};

static const char * const fam_names[] = {
	[FAM_INET] = "inet", [FAM_VISOCK] = "visock", [FAM_SMC] = "smc",
};

static const char * const mode_names[] = {
	[VISOCK_MODE_INIT] = "INIT", [VISOCK_MODE_HANDSHAKE] = "HANDSHAKE",
	[VISOCK_MODE_RDMA] = "RDMA", [VISOCK_MODE_TCP] = "TCP",
};

static const char * const xform_names[] = {
	[VISOCK_XFORM_NONE] = "none",
	[VISOCK_XFORM_AES128_GCM] = "gcm-aes-128",
	[VISOCK_XFORM_AES256_GCM] = "gcm-aes-256",
	[VISOCK_XFORM_CHACHA20_POLY1305] = "chacha20-poly1305",
	[VISOCK_XFORM_AES128_GMAC] = "gmac-aes-128",
	[VISOCK_XFORM_AES256_GMAC] = "gmac-aes-256",
};

/* The server's -K: serve_conn() only gets the accepted socket. */
static int server_ktls;

static __printf(1, 2) void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "visock_bench: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int bench_socket(enum family fam)
{
	int fd;

	switch (fam) {
	case FAM_VISOCK:
		fd = socket(AF_VISOCK, SOCK_STREAM, VISOCKPROTO_TCP4);
		break;
	case FAM_SMC:
		fd = socket(AF_SMC, SOCK_STREAM, SMCPROTO_SMC);
		break;
	default:
		fd = socket(AF_INET, SOCK_STREAM, 0);
		break;
	}
	if (fd < 0)
		die("socket(%s): %s", fam_names[fam], strerror(errno));
	return fd;
}

static void set_nodelay(int fd)
{
	int one = 1;

	/* Best effort: visock and SMC mirror TCP_NODELAY where they can. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void read_full(int fd, void *buf, size_t len, const char *what)
{
	char *p = buf;
	ssize_t n;

	while (len) {
		n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("read (%s): %s", what, strerror(errno));
		if (n == 0)
			die("read (%s): unexpected end of stream", what);
		p += n;
		len -= n;
	}
}

static void write_full(int fd, const void *buf, size_t len, const char *what)
{
	const char *p = buf;
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("write (%s): %s", what, strerror(errno));
		p += n;
		len -= n;
	}
}

static void read_vcounters(struct vcounters *c)
{
	char key[64];
	unsigned long long v;
	FILE *f;

	memset(c, 0, sizeof(*c));
	f = fopen("/proc/net/visock", "r");
	if (!f)
		return;
	while (fscanf(f, "%63s %llu", key, &v) == 2) {
		if (!strcmp(key, "rdma_bytes_sent"))
			c->rdma_sent = v;
		else if (!strcmp(key, "rdma_bytes_rcvd"))
			c->rdma_rcvd = v;
		else if (!strcmp(key, "tcp_bytes_sent"))
			c->tcp_sent = v;
		else if (!strcmp(key, "tcp_bytes_rcvd"))
			c->tcp_rcvd = v;
	}
	c->valid = true;
	fclose(f);
}

/*
 * Append the transport evidence of a visock connection to a RESULT line:
 * VISOCK_INFO of the socket and the /proc/net/visock deltas.
 */
static void visock_evidence(int fd, const struct vcounters *before,
			    char *buf, size_t len)
{
	struct visock_info vi;
	socklen_t vlen = sizeof(vi);
	struct vcounters after;
	const char *mode = "?";
	int off = 0;

	memset(&vi, 0, sizeof(vi));
	if (getsockopt(fd, SOL_VISOCK, VISOCK_INFO, &vi, &vlen) < 0) {
		off = snprintf(buf, len, " mode=unknown info_error=%d", errno);
	} else {
		if (vi.vi_mode < ARRAY_SIZE(mode_names))
			mode = mode_names[vi.vi_mode];
		off = snprintf(buf, len,
			       " mode=%s fallback_reason=%u qpn=%u peer_qpn=%u conn_rdma_sent=%llu conn_rdma_rcvd=%llu conn_tcp_sent=%llu conn_tcp_rcvd=%llu",
			       mode, vi.vi_fallback_reason, vi.vi_local_qpn,
			       vi.vi_peer_qpn,
			       (unsigned long long)vi.vi_rdma_bytes_sent,
			       (unsigned long long)vi.vi_rdma_bytes_rcvd,
			       (unsigned long long)vi.vi_tcp_bytes_sent,
			       (unsigned long long)vi.vi_tcp_bytes_rcvd);
	}
	read_vcounters(&after);
	if (before->valid && after.valid && off >= 0 && (size_t)off < len)
		snprintf(buf + off, len - off,
			 " ns_rdma_sent=%llu ns_rdma_rcvd=%llu ns_tcp_sent=%llu ns_tcp_rcvd=%llu",
			 after.rdma_sent - before->rdma_sent,
			 after.rdma_rcvd - before->rdma_rcvd,
			 after.tcp_sent - before->tcp_sent,
			 after.tcp_rcvd - before->tcp_rcvd);
}

/* ------------------------------------------------- kernel TLS, transforms */

union ktls_info {
	struct tls_crypto_info base;
	struct tls12_crypto_info_aes_gcm_128 gcm;
	struct tls12_crypto_info_chacha20_poly1305 chacha;
};

static const char *ktls_name(int cipher)
{
	switch (cipher) {
	case TLS_CIPHER_AES_GCM_128:
		return "gcm-aes-128";
	case TLS_CIPHER_CHACHA20_POLY1305:
		return "chacha20-poly1305";
	}
	return "?";
}

/*
 * The fixed parameters of one direction of a benchmark TLS session: each
 * direction has keys and IVs of its own (@dir 1: client to server, 2:
 * server to client), and both start at record sequence number 0.
 */
static socklen_t ktls_fill(union ktls_info *ci, int cipher, uint8_t dir)
{
	memset(ci, 0, sizeof(*ci));
	ci->base.version = TLS_1_2_VERSION;
	ci->base.cipher_type = cipher;
	if (cipher == TLS_CIPHER_AES_GCM_128) {
		memset(ci->gcm.key, 0x10 + dir, sizeof(ci->gcm.key));
		memset(ci->gcm.iv, 0x20 + dir, sizeof(ci->gcm.iv));
		memset(ci->gcm.salt, 0x30 + dir, sizeof(ci->gcm.salt));
		return sizeof(ci->gcm);
	}
	memset(ci->chacha.key, 0x40 + dir, sizeof(ci->chacha.key));
	memset(ci->chacha.iv, 0x50 + dir, sizeof(ci->chacha.iv));
	return sizeof(ci->chacha);
}

/* Turn kernel TLS on for both directions of a connected TCP socket. */
static void ktls_start(int fd, int cipher, bool client)
{
	union ktls_info ci;
	socklen_t len;

	if (setsockopt(fd, SOL_TCP, TCP_ULP, "tls", sizeof("tls")) < 0)
		die("setsockopt(TCP_ULP, tls): %s (is the tls module loaded?)",
		    strerror(errno));
	len = ktls_fill(&ci, cipher, client ? 1 : 2);
	if (setsockopt(fd, SOL_TLS, TLS_TX, &ci, len) < 0)
		die("setsockopt(TLS_TX, %s): %s", ktls_name(cipher),
		    strerror(errno));
	len = ktls_fill(&ci, cipher, client ? 2 : 1);
	if (setsockopt(fd, SOL_TLS, TLS_RX, &ci, len) < 0)
		die("setsockopt(TLS_RX, %s): %s", ktls_name(cipher),
		    strerror(errno));
}

/*
 * After a client test: the evidence that the connection ran what the
 * options asked for, appended to a RESULT line; no such connection ends
 * the client (the report then has an error, not a number).
 */
static void transform_evidence(int fd, const struct opts *o, char *buf,
			       size_t len)
{
	union ktls_info ci;
	struct visock_info vi;
	socklen_t clen = sizeof(ci.base), vlen = sizeof(vi);
	const char *mode = "?";

	if (o->ktls) {
		/* The version and cipher only: any other length must be
		 * the exact size of the cipher's struct.
		 */
		memset(&ci, 0, sizeof(ci));
		if (getsockopt(fd, SOL_TLS, TLS_TX, &ci, &clen) < 0)
			die("getsockopt(TLS_TX): %s: kernel TLS not in place",
			    strerror(errno));
		if (ci.base.cipher_type != o->ktls)
			die("kernel TLS runs cipher %u, not %s",
			    ci.base.cipher_type, ktls_name(o->ktls));
		snprintf(buf, len, " ktls=%s", ktls_name(o->ktls));
		return;
	}
	if (!o->xform)
		return;
	memset(&vi, 0, sizeof(vi));
	if (getsockopt(fd, SOL_VISOCK, VISOCK_INFO, &vi, &vlen) < 0)
		die("getsockopt(VISOCK_INFO): %s", strerror(errno));
	if (vi.vi_mode < ARRAY_SIZE(mode_names))
		mode = mode_names[vi.vi_mode];
	if (vi.vi_mode != VISOCK_MODE_RDMA || vi.vi_xform != (__u32)o->xform)
		die("not %s over RDMA: mode %s (fallback reason %u), transform %s",
		    xform_names[o->xform], mode, vi.vi_fallback_reason,
		    vi.vi_xform < ARRAY_SIZE(xform_names) ?
		    xform_names[vi.vi_xform] : "?");
	snprintf(buf, len, " xform=%s", xform_names[o->xform]);
}

/* The VISOCK_TRANSFORM of -X, before connect() or listen(). */
static void set_xform(int fd, const struct opts *o)
{
	if (o->xform && setsockopt(fd, SOL_VISOCK, VISOCK_TRANSFORM, &o->xform,
				   sizeof(o->xform)) < 0)
		die("setsockopt(VISOCK_TRANSFORM, %s): %s",
		    xform_names[o->xform], strerror(errno));
}

/* ---------------------------------------------------------------- server */

static void serve_stream(int fd, const struct hdr *h)
{
	unsigned long long total = 0, net;
	char *buf;
	ssize_t n;

	buf = malloc(MAX_MSG);
	if (!buf)
		die("out of memory");
	for (;;) {
		n = read(fd, buf, MAX_MSG);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("read (stream): %s", strerror(errno));
		if (n == 0)
			break;
		total += n;
	}
	/* Confirm every byte; the client stops its clock on this. */
	net = total;
	write_full(fd, &net, sizeof(net), "stream ack");
	(void)h;
	free(buf);
}

static void serve_pingpong(int fd, const struct hdr *h)
{
	char buf[MAX_MSG > 65536 ? 65536 : MAX_MSG];
	uint32_t i;

	if (h->msg_size > sizeof(buf))
		die("ping-pong message of %u bytes too large", h->msg_size);
	for (i = 0; i < h->rounds; i++) {
		read_full(fd, buf, h->msg_size, "ping");
		write_full(fd, buf, h->msg_size, "pong");
	}
}

static void serve_crr(int fd, const struct hdr *h)
{
	char buf[65536];

	if (h->msg_size > sizeof(buf))
		die("request of %u bytes too large", h->msg_size);
	read_full(fd, buf, h->msg_size, "request");
	write_full(fd, buf, h->msg_size, "response");
}

static void serve_hold(int fd)
{
	char buf[256];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
}

static int active_conns;

static void *serve_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	struct hdr h;

	set_nodelay(fd);
	if (server_ktls)
		ktls_start(fd, server_ktls, false);
	read_full(fd, &h, sizeof(h), "header");
	if (h.magic != BENCH_MAGIC)
		die("bad header magic 0x%08x", h.magic);
	if (h.op == OP_STREAM)
		serve_stream(fd, &h);
	else if (h.op == OP_PINGPONG)
		serve_pingpong(fd, &h);
	else if (h.op == OP_CRR)
		serve_crr(fd, &h);
	else if (h.op == OP_HOLD)
		serve_hold(fd);
	else
		die("unknown op %u", h.op);
	close(fd);
	__atomic_sub_fetch(&active_conns, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void run_server(const struct opts *o)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int one = 1, lfd, fd, i, err;
	pthread_attr_t attr;
	pthread_t tid;

	lfd = bench_socket(o->fam);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	set_xform(lfd, o);
	server_ktls = o->ktls;
	sin.sin_port = htons(o->port);
	sin.sin_addr.s_addr = htonl(INADDR_ANY);
	if (bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
		die("bind(%d): %s", o->port, strerror(errno));
	if (listen(lfd, 128) < 0)
		die("listen: %s", strerror(errno));
	printf("server: %s listening on port %d for %d connection(s)\n",
	       fam_names[o->fam], o->port, o->conns);
	fflush(stdout);

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (i = 0; !o->conns || i < o->conns; i++) {
		fd = accept(lfd, NULL, NULL);
		if (fd < 0 && errno == EINTR)
			continue;
		if (fd < 0)
			die("accept: %s", strerror(errno));
		__atomic_add_fetch(&active_conns, 1, __ATOMIC_SEQ_CST);
		err = pthread_create(&tid, &attr, serve_conn,
				     (void *)(intptr_t)fd);
		if (err)
			die("pthread_create: %s", strerror(err));
	}
	/* Let the last connections finish. */
	while (__atomic_load_n(&active_conns, __ATOMIC_SEQ_CST))
		usleep(10000);
	close(lfd);
}

/* ---------------------------------------------------------------- client */

static int client_connect(const struct opts *o)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int fd, tries;

	sin.sin_port = htons(o->port);
	if (inet_pton(AF_INET, o->host, &sin.sin_addr) != 1)
		die("bad IPv4 address '%s'", o->host);

	/* The server may not listen yet: retry for about 30 s. */
	for (tries = 0; ; tries++) {
		fd = bench_socket(o->fam);
		set_xform(fd, o);
		if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0)
			break;
		if (tries >= 300 || (errno != ECONNREFUSED &&
				     errno != ETIMEDOUT && errno != EINTR))
			die("connect(%s %s:%d): %s", fam_names[o->fam],
			    o->host, o->port, strerror(errno));
		close(fd);
		usleep(100000);
	}
	set_nodelay(fd);
	if (o->ktls)
		ktls_start(fd, o->ktls, true);
	return fd;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* CPU seconds (user, system) this process used so far. */
static void cpu_secs(double *user, double *sys)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	*user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
	*sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static void percentiles(double *v, unsigned int n, double *median,
			double *p99)
{
	qsort(v, n, sizeof(*v), cmp_double);
	*median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	*p99 = v[(size_t)((n - 1) * 0.99)];
}

static void client_stream(const struct opts *o)
{
	struct hdr h = { .magic = BENCH_MAGIC, .op = OP_STREAM };
	unsigned long long sent = 0, acked = 0;
	double t0, t1, deadline, secs, mbps, u0, s0, u1, s1;
	struct vcounters before;
	char ev[512] = "", xev[64] = "";
	char *buf;
	int fd;

	buf = malloc(o->wsize);
	if (!buf)
		die("out of memory");
	memset(buf, 0x5a, o->wsize);

	read_vcounters(&before);
	fd = client_connect(o);
	write_full(fd, &h, sizeof(h), "header");

	cpu_secs(&u0, &s0);
	t0 = now_us();
	deadline = t0 + o->secs * 1e6;
	do {
		write_full(fd, buf, o->wsize, "stream");
		sent += o->wsize;
	} while (now_us() < deadline);
	if (shutdown(fd, SHUT_WR) < 0)
		die("shutdown: %s", strerror(errno));
	read_full(fd, &acked, sizeof(acked), "stream ack");
	t1 = now_us();
	cpu_secs(&u1, &s1);
	if (acked != sent)
		die("server received %llu of %llu bytes", acked, sent);

	transform_evidence(fd, o, xev, sizeof(xev));
	if (o->fam == FAM_VISOCK)
		visock_evidence(fd, &before, ev, sizeof(ev));
	close(fd);

	secs = (t1 - t0) / 1e6;
	mbps = sent / secs / 1e6;
	printf("RESULT label=%s family=%s test=stream write_size=%u",
	       o->label, fam_names[o->fam], o->wsize);
	printf(" bytes=%llu secs=%.3f MBps=%.2f Gbps=%.4f", sent, secs, mbps,
	       mbps * 8 / 1000);
	printf(" client_cpu_user_s=%.3f client_cpu_sys_s=%.3f%s%s\n",
	       u1 - u0, s1 - s0, xev, ev);
	printf("%-8s stream   %u B writes: %llu bytes in %.2f s = %.2f MB/s (%.3f Gbit/s)\n",
	       o->label, o->wsize, sent, secs, mbps, mbps * 8 / 1000);
	fflush(stdout);
	free(buf);
}

static void client_pingpong(const struct opts *o)
{
	struct hdr h = { .magic = BENCH_MAGIC, .op = OP_PINGPONG };
	double *rtt, t, sum = 0, median, p99, mean, u0 = 0, s0 = 0, u1, s1;
	struct vcounters before;
	char buf[65536];
	char ev[512] = "", xev[64] = "";
	unsigned int i, n = o->rounds;
	int fd;

	if (o->msg > sizeof(buf))
		die("ping-pong message size %u too large", o->msg);
	rtt = calloc(n, sizeof(*rtt));
	if (!rtt)
		die("out of memory");
	memset(buf, 0xa5, o->msg);
	h.msg_size = o->msg;
	h.rounds = o->warmup + n;

	read_vcounters(&before);
	fd = client_connect(o);
	write_full(fd, &h, sizeof(h), "header");
	for (i = 0; i < o->warmup + n; i++) {
		if (i == o->warmup)
			cpu_secs(&u0, &s0);
		t = now_us();
		write_full(fd, buf, o->msg, "ping");
		read_full(fd, buf, o->msg, "pong");
		if (i >= o->warmup)
			rtt[i - o->warmup] = now_us() - t;
	}
	cpu_secs(&u1, &s1);
	transform_evidence(fd, o, xev, sizeof(xev));
	if (o->fam == FAM_VISOCK)
		visock_evidence(fd, &before, ev, sizeof(ev));
	close(fd);

	for (i = 0; i < n; i++)
		sum += rtt[i];
	percentiles(rtt, n, &median, &p99);
	mean = sum / n;
	printf("RESULT label=%s family=%s test=pingpong msg_size=%u",
	       o->label, fam_names[o->fam], o->msg);
	printf(" rounds=%u warmup=%u rtt_median_us=%.1f rtt_p99_us=%.1f",
	       n, o->warmup, median, p99);
	printf(" rtt_mean_us=%.1f rtt_min_us=%.1f rtt_max_us=%.1f",
	       mean, rtt[0], rtt[n - 1]);
	printf(" client_cpu_user_s=%.3f client_cpu_sys_s=%.3f%s%s\n",
	       u1 - u0, s1 - s0, xev, ev);
	printf("%-8s pingpong %u B x %u: RTT median %.1f us, p99 %.1f us, mean %.1f us\n",
	       o->label, o->msg, n, median, p99, mean);
	fflush(stdout);
	free(rtt);
}

/*
 * CRR: connect, one request, its response, close; one connection after
 * the other for -t seconds.  The first connection's time is reported on
 * its own: it is the only one that may have to reach a new peer (link
 * or QP setup that later ones find cached).
 */
static void client_crr(const struct opts *o)
{
	struct hdr h = { .magic = BENCH_MAGIC, .op = OP_CRR };
	struct hdr hold = { .magic = BENCH_MAGIC, .op = OP_HOLD };
	unsigned int n = 0, cap = 1024;
	double t0, t, deadline, *lat, median, p99, first, u0, s0, u1, s1;
	char buf[sizeof(h) + 65536];
	int fd, kfd = -1;

	if (o->msg > 65536)
		die("request size %u too large", o->msg);
	lat = malloc(cap * sizeof(*lat));
	if (!lat)
		die("out of memory");
	h.msg_size = o->msg;
	memcpy(buf, &h, sizeof(h));
	memset(buf + sizeof(h), 0x3c, o->msg);
	if (o->keep) {
		kfd = client_connect(o);
		write_full(kfd, &hold, sizeof(hold), "header");
	}
	cpu_secs(&u0, &s0);
	t0 = now_us();
	deadline = t0 + o->secs * 1e6;
	do {
		t = now_us();
		fd = client_connect(o);
		/* Header and request in one write: one request message. */
		write_full(fd, buf, sizeof(h) + o->msg, "request");
		read_full(fd, buf + sizeof(h), o->msg, "response");
		close(fd);
		if (n == cap) {
			cap *= 2;
			lat = realloc(lat, cap * sizeof(*lat));
			if (!lat)
				die("out of memory");
		}
		lat[n++] = now_us() - t;
	} while (now_us() < deadline);
	t = now_us();
	cpu_secs(&u1, &s1);
	if (kfd >= 0)
		close(kfd);
	first = lat[0];
	percentiles(lat, n, &median, &p99);
	printf("RESULT label=%s family=%s test=%s msg_size=%u conns=%u secs=%.3f",
	       o->label, fam_names[o->fam], o->keep ? "crr-keep" : "crr",
	       o->msg, n, (t - t0) / 1e6);
	printf(" conn_per_s=%.1f crr_median_us=%.1f crr_p99_us=%.1f first_us=%.1f",
	       n / ((t - t0) / 1e6), median, p99, first);
	printf(" client_cpu_user_s=%.3f client_cpu_sys_s=%.3f\n",
	       u1 - u0, s1 - s0);
	printf("%-8s crr%s %u B: %u connections, %.1f/s, median %.1f us, ",
	       o->label, o->keep ? " (one more open)" : "", o->msg, n,
	       n / ((t - t0) / 1e6), median);
	printf("p99 %.1f us, first %.1f us\n", p99, first);
	fflush(stdout);
	free(lat);
}

struct par_stream {
	const struct opts *o;
	pthread_t tid;
	int fd;
	unsigned long long sent;
	double end;		/* when the server confirmed the last byte */
};

static pthread_barrier_t par_start;
static double par_deadline;

static void *par_thread(void *arg)
{
	struct par_stream *ps = arg;
	unsigned long long acked = 0;
	char *buf;

	buf = malloc(ps->o->wsize);
	if (!buf)
		die("out of memory");
	memset(buf, 0x5a, ps->o->wsize);
	pthread_barrier_wait(&par_start);
	do {
		write_full(ps->fd, buf, ps->o->wsize, "stream");
		ps->sent += ps->o->wsize;
	} while (now_us() < par_deadline);
	if (shutdown(ps->fd, SHUT_WR) < 0)
		die("shutdown: %s", strerror(errno));
	read_full(ps->fd, &acked, sizeof(acked), "stream ack");
	ps->end = now_us();
	if (acked != ps->sent)
		die("server received %llu of %llu bytes", acked, ps->sent);
	free(buf);
	return NULL;
}

/* -N parallel streams: all connected first, then started together. */
static void client_parallel(const struct opts *o)
{
	struct hdr h = { .magic = BENCH_MAGIC, .op = OP_STREAM };
	unsigned long long sent = 0;
	double t0, t1 = 0, secs, mbps, u0, s0, u1, s1;
	struct par_stream *ps;
	char xev[64] = "";
	unsigned int i;
	int err;

	ps = calloc(o->par, sizeof(*ps));
	if (!ps)
		die("out of memory");
	for (i = 0; i < o->par; i++) {
		ps[i].o = o;
		ps[i].fd = client_connect(o);
		write_full(ps[i].fd, &h, sizeof(h), "header");
	}
	pthread_barrier_init(&par_start, NULL, o->par + 1);
	for (i = 0; i < o->par; i++) {
		err = pthread_create(&ps[i].tid, NULL, par_thread, &ps[i]);
		if (err)
			die("pthread_create: %s", strerror(err));
	}
	cpu_secs(&u0, &s0);
	t0 = now_us();
	par_deadline = t0 + o->secs * 1e6;
	pthread_barrier_wait(&par_start);
	transform_evidence(ps[0].fd, o, xev, sizeof(xev));
	for (i = 0; i < o->par; i++) {
		pthread_join(ps[i].tid, NULL);
		sent += ps[i].sent;
		if (ps[i].end > t1)
			t1 = ps[i].end;
		close(ps[i].fd);
	}
	cpu_secs(&u1, &s1);
	secs = (t1 - t0) / 1e6;
	mbps = sent / secs / 1e6;
	printf("RESULT label=%s family=%s test=par streams=%u write_size=%u",
	       o->label, fam_names[o->fam], o->par, o->wsize);
	printf(" bytes=%llu secs=%.3f MBps=%.2f Gbps=%.4f", sent, secs, mbps,
	       mbps * 8 / 1000);
	printf(" client_cpu_user_s=%.3f client_cpu_sys_s=%.3f%s\n",
	       u1 - u0, s1 - s0, xev);
	printf("%-8s %u parallel streams, %u B writes: %llu bytes in %.2f s = %.2f MB/s\n",
	       o->label, o->par, o->wsize, sent, secs, mbps);
	fflush(stdout);
	free(ps);
}

/* ------------------------------------------------------------------ main */

static void print_usage(int rc)
{
	fprintf(rc ? stderr : stdout,
		"usage: visock_bench server [-f visock|inet|smc] [-p PORT] [-n CONNS] [-T SECS]\n"
		"       visock_bench client -c HOST [-f visock|inet|smc] [-p PORT] [-t SECS]\n"
		"                    [-w WRITE_BYTES] [-r ROUNDS] [-W WARMUP] [-m MSG_BYTES]\n"
		"                    [-l LABEL] [-T SECS] [-S] [-P] [-C [-k]] [-N STREAMS]\n"
		"  -f  socket family (default inet)      -p  port (default 5300)\n"
		"  -n  server: connections to serve, 0: until killed (default 2)\n"
		"  -t  stream seconds (default 10)       -w  stream write size (default 65536)\n"
		"  -r  ping-pong rounds (default 2000)   -W  warm-up rounds (default 200)\n"
		"  -m  ping-pong message size (default 64)\n"
		"  -S  stream test   -P  ping-pong test (default: both)\n"
		"  -C  connect/request/close for -t seconds, -m byte requests\n"
		"  -k  with -C: keep one more connection open meanwhile\n"
		"  -N  STREAMS parallel streams for -t seconds, -w byte writes\n"
		"  -T  give up after SECS (default 300)  -l  label in the output\n"
		"  -K  inet: kernel TLS with CIPHER (gcm-aes-128, chacha20-poly1305)\n"
		"  -X  visock: ask for transform XFORM (gcm-aes-128, chacha20-poly1305,\n"
		"      gmac-aes-128, gcm-aes-256, gmac-aes-256)\n");
	exit(rc);
}

static unsigned int parse_uint(const char *s, const char *what)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || *end || !*s || v > 0x7fffffff)
		die("bad %s '%s'", what, s);
	return v;
}

int main(int argc, char **argv)
{
	struct opts o = {
		.fam = FAM_INET, .port = 5300, .conns = 2, .secs = 10,
		.wsize = 65536, .rounds = 2000, .warmup = 200, .msg = 64,
		.timeout = 300,
	};
	bool server, do_stream = false, do_pp = false, do_crr = false;
	int c;

	if (argc < 2)
		print_usage(2);
	if (!strcmp(argv[1], "server"))
		server = true;
	else if (!strcmp(argv[1], "client"))
		server = false;
	else if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		print_usage(0);
	else
		print_usage(2);
	optind = 2;

	while ((c = getopt(argc, argv, "f:c:p:n:t:w:r:W:m:T:l:SPCkN:K:X:h")) != -1) {
		switch (c) {
		case 'f':
			if (!strcmp(optarg, "visock"))
				o.fam = FAM_VISOCK;
			else if (!strcmp(optarg, "inet") || !strcmp(optarg, "tcp"))
				o.fam = FAM_INET;
			else if (!strcmp(optarg, "smc"))
				o.fam = FAM_SMC;
			else
				die("unknown family '%s'", optarg);
			break;
		case 'c':
			o.host = optarg;
			break;
		case 'p':
			o.port = parse_uint(optarg, "port");
			break;
		case 'n':
			o.conns = parse_uint(optarg, "connection count");
			break;
		case 't':
			o.secs = atof(optarg);
			if (o.secs <= 0)
				die("bad duration '%s'", optarg);
			break;
		case 'w':
			o.wsize = parse_uint(optarg, "write size");
			if (!o.wsize || o.wsize > MAX_MSG)
				die("write size must be 1..%d", MAX_MSG);
			break;
		case 'r':
			o.rounds = parse_uint(optarg, "rounds");
			if (!o.rounds)
				die("rounds must be at least 1");
			break;
		case 'W':
			o.warmup = parse_uint(optarg, "warm-up rounds");
			break;
		case 'm':
			o.msg = parse_uint(optarg, "message size");
			if (!o.msg)
				die("message size must be at least 1");
			break;
		case 'T':
			o.timeout = parse_uint(optarg, "timeout");
			break;
		case 'l':
			o.label = optarg;
			break;
		case 'S':
			do_stream = true;
			break;
		case 'P':
			do_pp = true;
			break;
		case 'C':
			do_crr = true;
			break;
		case 'k':
			o.keep = true;
			break;
		case 'N':
			o.par = parse_uint(optarg, "stream count");
			if (!o.par || o.par > MAX_PAR)
				die("parallel streams must be 1..%d", MAX_PAR);
			break;
		case 'K':
			if (!strcmp(optarg, "gcm-aes-128"))
				o.ktls = TLS_CIPHER_AES_GCM_128;
			else if (!strcmp(optarg, "chacha20-poly1305"))
				o.ktls = TLS_CIPHER_CHACHA20_POLY1305;
			else
				die("unknown kernel TLS cipher '%s'", optarg);
			break;
		case 'X':
			for (c = 1; c < (int)ARRAY_SIZE(xform_names); c++)
				if (!strcmp(optarg, xform_names[c]))
					break;
			if (c == (int)ARRAY_SIZE(xform_names))
				die("unknown transform '%s'", optarg);
			o.xform = c;
			break;
		case 'h':
			print_usage(0);
			break;
		default:
			print_usage(2);
		}
	}
	if (optind != argc)
		print_usage(2);
	if (!o.label)
		o.label = fam_names[o.fam];
	if (o.ktls && o.fam != FAM_INET)
		die("-K is for -f inet");
	if (o.xform && o.fam != FAM_VISOCK)
		die("-X is for -f visock");

	signal(SIGPIPE, SIG_IGN);
	/* Never hang a test bed: SIGALRM's default action ends us. */
	if (o.timeout)
		alarm(o.timeout);

	if (server) {
		run_server(&o);
		return 0;
	}
	if (!o.host)
		die("client needs -c HOST");
	if (!do_stream && !do_pp && !do_crr && !o.par) {
		do_stream = true;
		do_pp = true;
	}
	if (do_stream)
		client_stream(&o);
	if (do_pp)
		client_pingpong(&o);
	if (do_crr)
		client_crr(&o);
	if (o.par)
		client_parallel(&o);
	return 0;
}
