// SPDX-License-Identifier: GPL-2.0
/*
 * visock_interop: streams between two hosts that may run different visock
 * releases.  Uses nothing but the socket API (socket(AF_INET,
 * SOCK_STREAM, IPPROTO_VISOCK)), which every release has, so that the same
 * binary runs against any module; the caller reads /proc/net/visock for
 * how the connections were carried.
 *
 *   visock_interop serve PORT NCONN      accept NCONN connections, one
 *                                        after the other, then exit
 *   visock_interop connect ADDR PORT NCONN
 *   visock_interop hold PORT             a listener on 127.0.0.1:PORT and
 *                                        one connection to it, both ends
 *                                        open until the process is killed
 *
 * Every connection carries data both ways at once: the client sends a
 * 16-byte header (magic, index, bytes each way) and its bytes, the server
 * its bytes; each side checks every byte it receives against the
 * generator, then the end of the stream.  Sizes cycle through
 * interop_sizes[].  A connection that makes no progress for
 * STALL_SECS fails; the whole program has RUN_SECS (alarm) to finish.
 * Exit status 0 only if every byte matched in both directions.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "compiler.h"

/* The same value in every release's uapi (linux/visock.h). */
#ifndef IPPROTO_VISOCK
#define IPPROTO_VISOCK 259
#endif

#define MAGIC		0x56534931u	/* "VSI1" */
#define STALL_SECS	30
#define RUN_SECS	600
#define CONNECT_SECS	120

/* client -> server, server -> client bytes of connection i % N */
static const uint32_t interop_sizes[][2] = {
	{ 1, 1 },
	{ 4093, 65537 },
	{ (1u << 20) + 17, (1u << 20) + 3 },
	{ 3u << 20, 1u << 16 },
	{ 0, 2u << 20 },
};

static __noreturn __printf(1, 2) void
die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "visock_interop: FAIL: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static void on_alarm(int sig)
{
	static const char m[] = "visock_interop: FAIL: did not finish in time\n";

	(void)sig;
	if (write(2, m, sizeof(m) - 1) < 0)
		_exit(1);
	_exit(1);
}

/* Byte @off of the stream seeded with @seed: a stateless hash. */
static uint8_t gen_byte(uint32_t seed, uint64_t off)
{
	uint32_t x = seed ^ (uint32_t)(off >> 2) ^ (uint32_t)(off >> 34) * 0x9e3779b9u;

	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x >> (8 * (off & 3));
}

static uint32_t stream_seed(uint32_t idx, int to_server)
{
	return 0x1234567u * (idx + 1) ^ (to_server ? 0xa5a5a5a5u : 0x5a5a5a5au);
}

struct dir {
	uint32_t seed;
	uint64_t len, done;
	uint32_t fnv;		/* FNV-1a of the bytes, for the log */
};

static void fnv_add(struct dir *d, const uint8_t *p, size_t n)
{
	while (n--) {
		d->fnv ^= *p++;
		d->fnv *= 16777619u;
	}
}

/*
 * Send @tx and receive @rx on @fd at the same time; @pre is sent first
 * (the header).  Returns after EOF was read and everything was sent.
 */
static void run_conn(int fd, const char *who, uint32_t idx,
		     const uint8_t *pre, size_t prelen,
		     struct dir *tx, struct dir *rx)
{
	static uint8_t buf[65536];
	size_t pre_done = 0;
	int shut = 0, eof = 0;

	tx->fnv = 2166136261u;
	rx->fnv = 2166136261u;
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK))
		die("%s %u: fcntl: %s", who, idx, strerror(errno));
	while (!shut || !eof) {
		struct pollfd p = { .fd = fd, .events = 0 };
		ssize_t n;
		int r;

		if (!eof)
			p.events |= POLLIN;
		if (!shut)
			p.events |= POLLOUT;
		r = poll(&p, 1, STALL_SECS * 1000);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("%s %u: poll: %s", who, idx, strerror(errno));
		if (r == 0)
			die("%s %u: no progress for %d s (sent %llu/%llu, received %llu/%llu)",
			    who, idx, STALL_SECS,
			    (unsigned long long)tx->done, (unsigned long long)tx->len,
			    (unsigned long long)rx->done, (unsigned long long)rx->len);
		if (!shut && (p.revents & (POLLOUT | POLLERR | POLLHUP))) {
			size_t want;

			if (pre_done < prelen) {
				n = send(fd, pre + pre_done, prelen - pre_done,
					 MSG_NOSIGNAL);
				if (n > 0)
					pre_done += n;
			} else if (tx->done < tx->len) {
				want = tx->len - tx->done;
				if (want > sizeof(buf))
					want = sizeof(buf);
				for (size_t i = 0; i < want; i++)
					buf[i] = gen_byte(tx->seed, tx->done + i);
				n = send(fd, buf, want, MSG_NOSIGNAL);
				if (n > 0) {
					fnv_add(tx, buf, n);
					tx->done += n;
				}
			} else {
				n = 0;
			}
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				die("%s %u: send: %s (sent %llu/%llu)", who, idx,
				    strerror(errno), (unsigned long long)tx->done,
				    (unsigned long long)tx->len);
			if (pre_done == prelen && tx->done == tx->len) {
				if (shutdown(fd, SHUT_WR))
					die("%s %u: shutdown: %s", who, idx,
					    strerror(errno));
				shut = 1;
			}
		}
		if (!eof && (p.revents & (POLLIN | POLLERR | POLLHUP))) {
			n = recv(fd, buf, sizeof(buf), 0);
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				die("%s %u: recv: %s (received %llu/%llu)", who,
				    idx, strerror(errno),
				    (unsigned long long)rx->done,
				    (unsigned long long)rx->len);
			if (n == 0) {
				if (rx->done != rx->len)
					die("%s %u: end of stream after %llu of %llu bytes",
					    who, idx, (unsigned long long)rx->done,
					    (unsigned long long)rx->len);
				eof = 1;
			}
			for (ssize_t i = 0; i < n; i++) {
				if (rx->done + i >= rx->len)
					die("%s %u: %zd bytes beyond the %llu expected",
					    who, idx, n - i,
					    (unsigned long long)rx->len);
				if (buf[i] != gen_byte(rx->seed, rx->done + i))
					die("%s %u: byte %llu is 0x%02x, want 0x%02x",
					    who, idx,
					    (unsigned long long)(rx->done + i),
					    buf[i], gen_byte(rx->seed, rx->done + i));
			}
			if (n > 0) {
				fnv_add(rx, buf, n);
				rx->done += n;
			}
		}
	}
	printf("%s %u: ok: sent %llu bytes (fnv %08x), received %llu bytes (fnv %08x)\n",
	       who, idx, (unsigned long long)tx->len, tx->fnv,
	       (unsigned long long)rx->len, rx->fnv);
	fflush(stdout);
}

static int vsock_socket(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, IPPROTO_VISOCK);

	if (fd < 0)
		die("socket(AF_INET, SOCK_STREAM, IPPROTO_VISOCK): %s",
		    strerror(errno));
	return fd;
}

static int listen_on(const char *addr, int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int fd = vsock_socket(), one = 1;

	sin.sin_port = htons(port);
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		die("bad address %s", addr);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) || listen(fd, 16))
		die("bind/listen %s:%d: %s", addr, port, strerror(errno));
	return fd;
}

static int accept_one(int lfd)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	int fd;

	if (poll(&p, 1, CONNECT_SECS * 1000) != 1)
		die("no connection within %d s", CONNECT_SECS);
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		die("accept: %s", strerror(errno));
	return fd;
}

/* Connect, retrying while the server is not listening yet. */
static int connect_to(const char *addr, int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	time_t end = time(NULL) + CONNECT_SECS;

	sin.sin_port = htons(port);
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		die("bad address %s", addr);
	for (;;) {
		int fd = vsock_socket();

		if (!connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
			return fd;
		if (errno != ECONNREFUSED || time(NULL) > end)
			die("connect %s:%d: %s", addr, port, strerror(errno));
		close(fd);
		usleep(200 * 1000);
	}
}

static int cmd_serve(int port, unsigned int nconn)
{
	int lfd = listen_on("0.0.0.0", port);

	printf("serve: listening on port %d for %u connections\n", port, nconn);
	fflush(stdout);
	for (unsigned int i = 0; i < nconn; i++) {
		int fd = accept_one(lfd);
		uint8_t hdr[16];
		uint32_t w[4];
		struct dir tx = { 0 }, rx = { 0 };
		size_t got = 0;
		struct pollfd p = { .fd = fd, .events = POLLIN };

		while (got < sizeof(hdr)) {
			ssize_t n;

			if (poll(&p, 1, STALL_SECS * 1000) != 1)
				die("server: no header within %d s", STALL_SECS);
			n = recv(fd, hdr + got, sizeof(hdr) - got, 0);
			if (n <= 0)
				die("server: header: %s",
				    n ? strerror(errno) : "end of stream");
			got += n;
		}
		memcpy(w, hdr, sizeof(w));
		for (int k = 0; k < 4; k++)
			w[k] = ntohl(w[k]);
		if (w[0] != MAGIC || w[1] != i)
			die("server: bad header (magic %08x, index %u, want %u)",
			    w[0], w[1], i);
		rx.len = w[2];
		tx.len = w[3];
		rx.seed = stream_seed(i, 1);
		tx.seed = stream_seed(i, 0);
		run_conn(fd, "server", i, NULL, 0, &tx, &rx);
		close(fd);
	}
	close(lfd);
	return 0;
}

static int cmd_connect(const char *addr, int port, unsigned int nconn)
{
	for (unsigned int i = 0; i < nconn; i++) {
		const uint32_t *sz = interop_sizes[i % ARRAY_SIZE(interop_sizes)];
		struct dir tx = { .len = sz[0], .seed = stream_seed(i, 1) };
		struct dir rx = { .len = sz[1], .seed = stream_seed(i, 0) };
		uint32_t w[4] = { htonl(MAGIC), htonl(i), htonl(sz[0]),
				  htonl(sz[1]) };
		int fd = connect_to(addr, port);

		run_conn(fd, "client", i, (const uint8_t *)w, sizeof(w),
			 &tx, &rx);
		close(fd);
	}
	return 0;
}

static __noreturn void cmd_hold(int port)
{
	int lfd = listen_on("127.0.0.1", port);
	int cfd = connect_to("127.0.0.1", port);
	int afd = accept_one(lfd);

	/* Until killed: the sockets close with the process. */
	alarm(0);
	printf("hold: holding 3 visock sockets (fds %d %d %d)\n", lfd, cfd, afd);
	fflush(stdout);
	for (;;)
		pause();
}

static void print_usage(void)
{
	fprintf(stderr, "usage: visock_interop serve PORT NCONN\n"
		"       visock_interop connect ADDR PORT NCONN\n"
		"       visock_interop hold PORT\n");
}

int main(int argc, char **argv)
{
	signal(SIGALRM, on_alarm);
	signal(SIGPIPE, SIG_IGN);
	alarm(RUN_SECS);
	if (argc == 4 && !strcmp(argv[1], "serve"))
		return cmd_serve(atoi(argv[2]), strtoul(argv[3], NULL, 0));
	if (argc == 5 && !strcmp(argv[1], "connect"))
		return cmd_connect(argv[2], atoi(argv[3]),
				   strtoul(argv[4], NULL, 0));
	if (argc == 3 && !strcmp(argv[1], "hold"))
		cmd_hold(atoi(argv[2]));
	print_usage();
	return 2;
}
