// SPDX-License-Identifier: GPL-2.0
/*
 * visock_bench - stream throughput and 64 B ping-pong round-trip time
 * over AF_VISOCK, AF_INET (TCP) or AF_SMC (SMC-R).
 *
 *   visock_bench server [-f FAMILY] [-p PORT] [-n CONNS] [-T SECS]
 *   visock_bench client -c HOST [-f FAMILY] [-p PORT] [-t SECS] [-w BYTES]
 *                       [-r ROUNDS] [-W WARMUP] [-m MSGSIZE] [-T SECS]
 *
 * The client opens two connections one after the other: a stream test
 * (-w byte writes for -t seconds, then shutdown(SHUT_WR); the time is
 * taken when the server has confirmed every byte) and a ping-pong test
 * (-m byte messages echoed by the server, -W warm-up rounds, then -r
 * timed rounds).  Each connection starts with a small header telling the
 * server which test follows.
 *
 * Output: one "RESULT key=value ..." line per test (machine readable),
 * then a human-readable line.  For AF_VISOCK the client also prints the
 * connection's VISOCK_INFO (mode, fallback reason, per-connection RDMA
 * and TCP byte counters) and the change of the per-namespace counters in
 * /proc/net/visock over the test, so the output shows which transport
 * really carried the bytes.
 *
 * This is a benchmark, not a test: it never judges the numbers.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/visock.h>

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

static void run_server(const struct opts *o)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int one = 1, lfd, fd, i;
	struct hdr h;

	lfd = bench_socket(o->fam);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sin.sin_port = htons(o->port);
	sin.sin_addr.s_addr = htonl(INADDR_ANY);
	if (bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
		die("bind(%d): %s", o->port, strerror(errno));
	if (listen(lfd, 8) < 0)
		die("listen: %s", strerror(errno));
	printf("server: %s listening on port %d for %d connection(s)\n",
	       fam_names[o->fam], o->port, o->conns);
	fflush(stdout);

	for (i = 0; i < o->conns; i++) {
		fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			die("accept: %s", strerror(errno));
		set_nodelay(fd);
		read_full(fd, &h, sizeof(h), "header");
		if (h.magic != BENCH_MAGIC)
			die("bad header magic 0x%08x", h.magic);
		if (h.op == OP_STREAM)
			serve_stream(fd, &h);
		else if (h.op == OP_PINGPONG)
			serve_pingpong(fd, &h);
		else
			die("unknown op %u", h.op);
		close(fd);
	}
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
	return fd;
}

static void client_stream(const struct opts *o)
{
	struct hdr h = { .magic = BENCH_MAGIC, .op = OP_STREAM };
	unsigned long long sent = 0, acked = 0;
	double t0, t1, deadline, secs, mbps;
	struct vcounters before;
	char ev[512] = "";
	char *buf;
	int fd;

	buf = malloc(o->wsize);
	if (!buf)
		die("out of memory");
	memset(buf, 0x5a, o->wsize);

	read_vcounters(&before);
	fd = client_connect(o);
	write_full(fd, &h, sizeof(h), "header");

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
	if (acked != sent)
		die("server received %llu of %llu bytes", acked, sent);

	if (o->fam == FAM_VISOCK)
		visock_evidence(fd, &before, ev, sizeof(ev));
	close(fd);

	secs = (t1 - t0) / 1e6;
	mbps = sent / secs / 1e6;
	printf("RESULT label=%s family=%s test=stream write_size=%u",
	       o->label, fam_names[o->fam], o->wsize);
	printf(" bytes=%llu secs=%.3f MBps=%.2f Gbps=%.4f%s\n",
	       sent, secs, mbps, mbps * 8 / 1000, ev);
	printf("%-8s stream   %u B writes: %llu bytes in %.2f s = %.2f MB/s (%.3f Gbit/s)\n",
	       o->label, o->wsize, sent, secs, mbps, mbps * 8 / 1000);
	fflush(stdout);
	free(buf);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void client_pingpong(const struct opts *o)
{
	struct hdr h = { .magic = BENCH_MAGIC, .op = OP_PINGPONG };
	double *rtt, t, sum = 0, median, p99, mean;
	struct vcounters before;
	char buf[65536];
	char ev[512] = "";
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
		t = now_us();
		write_full(fd, buf, o->msg, "ping");
		read_full(fd, buf, o->msg, "pong");
		if (i >= o->warmup)
			rtt[i - o->warmup] = now_us() - t;
	}
	if (o->fam == FAM_VISOCK)
		visock_evidence(fd, &before, ev, sizeof(ev));
	close(fd);

	for (i = 0; i < n; i++)
		sum += rtt[i];
	qsort(rtt, n, sizeof(*rtt), cmp_double);
	median = n % 2 ? rtt[n / 2] : (rtt[n / 2 - 1] + rtt[n / 2]) / 2;
	p99 = rtt[(size_t)((n - 1) * 0.99)];
	mean = sum / n;
	printf("RESULT label=%s family=%s test=pingpong msg_size=%u",
	       o->label, fam_names[o->fam], o->msg);
	printf(" rounds=%u warmup=%u rtt_median_us=%.1f rtt_p99_us=%.1f",
	       n, o->warmup, median, p99);
	printf(" rtt_mean_us=%.1f rtt_min_us=%.1f rtt_max_us=%.1f%s\n",
	       mean, rtt[0], rtt[n - 1], ev);
	printf("%-8s pingpong %u B x %u: RTT median %.1f us, p99 %.1f us, mean %.1f us\n",
	       o->label, o->msg, n, median, p99, mean);
	fflush(stdout);
	free(rtt);
}

/* ------------------------------------------------------------------ main */

static void print_usage(int rc)
{
	fprintf(rc ? stderr : stdout,
		"usage: visock_bench server [-f visock|inet|smc] [-p PORT] [-n CONNS] [-T SECS]\n"
		"       visock_bench client -c HOST [-f visock|inet|smc] [-p PORT] [-t SECS]\n"
		"                    [-w WRITE_BYTES] [-r ROUNDS] [-W WARMUP] [-m MSG_BYTES]\n"
		"                    [-l LABEL] [-T SECS] [-S|-P]\n"
		"  -f  socket family (default inet)      -p  port (default 5300)\n"
		"  -n  server: connections to serve (default 2)\n"
		"  -t  stream seconds (default 10)       -w  stream write size (default 65536)\n"
		"  -r  ping-pong rounds (default 2000)   -W  warm-up rounds (default 200)\n"
		"  -m  ping-pong message size (default 64)\n"
		"  -S  stream test only   -P  ping-pong test only (client)\n"
		"  -T  give up after SECS (default 300)  -l  label in the output\n");
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
	bool server, do_stream = true, do_pp = true;
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

	while ((c = getopt(argc, argv, "f:c:p:n:t:w:r:W:m:T:l:SPh")) != -1) {
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
			do_pp = false;
			break;
		case 'P':
			do_stream = false;
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
	if (do_stream)
		client_stream(&o);
	if (do_pp)
		client_pingpong(&o);
	return 0;
}
