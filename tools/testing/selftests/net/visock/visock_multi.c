// SPDX-License-Identifier: GPL-2.0
/*
 * visock multi: checksummed streams between one host and several peer
 * hosts at once, for the four-host test bed (vm.sh --hosts 4).  Not part
 * of the two-host test table: tools/testing/vm/multi.sh runs it on every
 * host of the bed with a role each.
 *
 *   visock_multi [options] serve PORT NCONN
 *	accepts NCONN AF_VISOCK connections (from any number of hosts) and
 *	checks every byte each one sends against the pattern its header
 *	names; answers each complete stream with one verdict byte ('K' all
 *	bytes right, 'X' not) and waits for the client's end of stream.
 *	KTAP: the connections came from the expected number of peer hosts
 *	(-p), all of them on RDMA; every stream not from the dead host (-d)
 *	arrived complete and right; every one from the dead host ended with
 *	an error; nothing stalled longer than the gap bound.
 *
 *   visock_multi [options] stream PORT NCONN BYTES HOST...
 *	opens NCONN connections to each HOST at once, all on RDMA, writes
 *	-r FILE when they are up and waits for -g FILE (the orchestrating
 *	script measures memory in between; with -1 FILE it writes FILE
 *	after the first connection to each host and waits for -2 FILE
 *	before opening the others), then streams BYTES on every
 *	connection at once and waits for each verdict.  KTAP: connected on
 *	RDMA, every stream verified by its server, and no connection made
 *	no progress for longer than the gap bound.  With -k N the host dies
 *	(sysrq o, after leaving its result files as the bed's guest would)
 *	once N bytes were written in total.
 *
 * The gap bound (-G ms, default 30000, times VISOCK_TEST_TIME_SCALE) is a
 * hang detector, not a performance assertion: a connection that still
 * has bytes to move but moved none for that long has stalled.  The
 * largest gap seen is printed either way.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <linux/visock.h>

#include "ctl.h"
#include "hostutil.h"
#include "ktap.h"

#define MAXCONN		256
#define CHUNK		(64 * 1024)
#define HDR_MAGIC	0x564d5531u	/* "VMU1" */

struct hdr {
	uint32_t magic;
	uint32_t seed;
	uint64_t total;
} __packed;

static unsigned int npass, nfail, nr;
static long long gap_ms = 30000;
static const char *name = "multi";
static const char *ready_file, *go_file, *dead_ip, *ready1_file, *go1_file;
static long long die_after = -1;
static int want_peers = -1;

static void result(bool ok, const char *test, const char *fmt, ...)
{
	char full[128];
	va_list ap;

	if (!ok && fmt) {
		va_start(ap, fmt);
		ktap_vdiag(fmt, ap);
		va_end(ap);
	}
	snprintf(full, sizeof(full), "multi.%s.%s", name, test);
	ktap_result(++nr, full, ok ? KTAP_PASS : KTAP_FAIL, NULL);
	if (ok)
		npass++;
	else
		nfail++;
}

/* Byte @off of the stream with seed @seed. */
static inline uint8_t pat(uint32_t seed, uint64_t off)
{
	return (uint8_t)(((uint32_t)off * 0x9e3779b1u + seed) >> 24) ^
	       (uint8_t)(off >> 16);
}

static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

/* ---- server ---- */

struct sconn {
	int fd;
	char peer[INET_ADDRSTRLEN];
	unsigned char hbuf[sizeof(struct hdr)];
	size_t hlen;
	struct hdr h;
	uint64_t got;
	long long bad_at;	/* first wrong byte, -1: none */
	bool rdma, answered, ended;
	int err;		/* errno it ended with, 0: end of stream */
	long long last, max_gap, end_ms;
};

static void check_bytes(struct sconn *c, const unsigned char *p, size_t n)
{
	size_t i;

	if (c->bad_at >= 0)
		return;
	for (i = 0; i < n; i++) {
		if (p[i] != pat(c->h.seed, c->got + i)) {
			c->bad_at = c->got + i;
			return;
		}
	}
}

static bool from_dead(const struct sconn *c)
{
	return dead_ip && !strcmp(c->peer, dead_ip);
}

static int serve(int port, int nconn)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
	};
	static struct sconn c[MAXCONN];
	static unsigned char buf[CHUNK];
	struct pollfd pfd[MAXCONN + 1];
	char peers[MAXCONN][INET_ADDRSTRLEN];
	int lfd, i, n = 0, ended = 0, npeers = 0, one = 1;
	int nrdma = 0, ok = 0, bad = 0, dead_err = 0, dead_n = 0, stalled = 0;
	long long t0, worst = 0;
	ssize_t r;

	ktap_header(4);
	lfd = hu_visock_socket();
	if (lfd < 0 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(lfd, MAXCONN)) {
		ktap_diag("listen on port %d: %s", port, strerror(errno));
		return 1;
	}
	fcntl(lfd, F_SETFL, O_NONBLOCK);
	ktap_diag("%s: listening on port %d for %d connections", name, port,
		  nconn);
	if (ready_file)
		touch(ready_file);
	t0 = ctl_now_ms();
	while (ended < nconn) {
		long long now = ctl_now_ms();
		int np = 0;

		/* Hang detector: a stream that is not over moved nothing. */
		for (i = 0; i < n; i++) {
			if (c[i].ended || c[i].answered || !c[i].hlen ||
			    from_dead(&c[i]))
				continue;
			if (now - c[i].last > gap_ms) {
				ktap_diag("connection %d from %s: nothing for %lld ms (%llu of %llu bytes)",
					  i, c[i].peer, now - c[i].last,
					  (unsigned long long)c[i].got,
					  (unsigned long long)c[i].h.total);
				c[i].max_gap = now - c[i].last;
				stalled++;
			}
		}
		if (stalled)
			break;
		if (n < nconn && now - t0 > 10 * gap_ms) {
			ktap_diag("only %d of %d connections came in %lld ms",
				  n, nconn, now - t0);
			stalled++;
			break;
		}
		pfd[np].fd = n < nconn ? lfd : -1;
		pfd[np++].events = POLLIN;
		for (i = 0; i < n; i++) {
			pfd[np].fd = c[i].ended ? -1 : c[i].fd;
			pfd[np++].events = POLLIN;
		}
		poll(pfd, np, 500);
		now = ctl_now_ms();
		if (pfd[0].revents & POLLIN) {
			struct sockaddr_in pa;
			socklen_t plen = sizeof(pa);
			int fd = accept4(lfd, (struct sockaddr *)&pa, &plen,
					 SOCK_CLOEXEC | SOCK_NONBLOCK);

			if (fd >= 0) {
				memset(&c[n], 0, sizeof(c[n]));
				c[n].fd = fd;
				c[n].bad_at = -1;
				c[n].last = now;
				c[n].rdma = hu_on_rdma(fd, NULL);
				inet_ntop(AF_INET, &pa.sin_addr, c[n].peer,
					  sizeof(c[n].peer));
				for (i = 0; i < npeers; i++)
					if (!strcmp(peers[i], c[n].peer))
						break;
				if (i == npeers)
					memcpy(peers[npeers++], c[n].peer,
					       sizeof(peers[0]));
				n++;
			}
		}
		for (i = 0; i < n; i++) {
			struct sconn *s = &c[i];

			if (s->ended || !(pfd[i + 1].revents &
					  (POLLIN | POLLHUP | POLLERR)))
				continue;
			r = read(s->fd, buf, sizeof(buf));
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (r <= 0) {
				s->err = r < 0 ? errno : 0;
				s->ended = true;
				s->end_ms = now;
				ended++;
				continue;
			}
			/* From the first byte on: before it, the client waits. */
			if (s->hlen && now - s->last > s->max_gap)
				s->max_gap = now - s->last;
			s->last = now;
			if (s->hlen < sizeof(s->hbuf)) {
				size_t take = sizeof(s->hbuf) - s->hlen;

				if (take > (size_t)r)
					take = r;
				memcpy(s->hbuf + s->hlen, buf, take);
				s->hlen += take;
				memmove(buf, buf + take, r - take);
				r -= take;
				if (s->hlen == sizeof(s->hbuf)) {
					memcpy(&s->h, s->hbuf, sizeof(s->h));
					if (s->h.magic != HDR_MAGIC)
						s->bad_at = 0;
				}
			}
			if (s->got + r > s->h.total) {
				s->bad_at = s->got;	/* too many bytes */
				r = s->h.total - s->got;
			}
			check_bytes(s, buf, r);
			s->got += r;
			if (s->hlen == sizeof(s->hbuf) && !s->answered &&
			    s->got == s->h.total) {
				char v = s->bad_at < 0 ? 'K' : 'X';

				if (write(s->fd, &v, 1) == 1)
					s->answered = true;
				s->rdma = s->rdma && hu_on_rdma(s->fd, NULL);
			}
		}
	}
	for (i = 0; i < n; i++) {
		bool good = c[i].answered && c[i].bad_at < 0 && c[i].ended &&
			    !c[i].err;

		nrdma += c[i].rdma;
		if (c[i].max_gap > worst && !from_dead(&c[i]))
			worst = c[i].max_gap;
		if (from_dead(&c[i])) {
			dead_n++;
			if (c[i].ended && c[i].err)
				dead_err++;
			ktap_diag("connection %d from %s (dead host): %llu bytes, %s %lld ms after its last progress",
				  i, c[i].peer, (unsigned long long)c[i].got,
				  c[i].ended ? (c[i].err ? strerror(c[i].err) :
						"end of stream") : "still open",
				  c[i].ended ? c[i].end_ms - c[i].last : -1);
			continue;
		}
		if (good)
			ok++;
		else
			bad++;
		if (!good)
			ktap_diag("connection %d from %s: %llu of %llu bytes, first wrong byte %lld, %s",
				  i, c[i].peer, (unsigned long long)c[i].got,
				  (unsigned long long)c[i].h.total, c[i].bad_at,
				  c[i].ended ? (c[i].err ? strerror(c[i].err) :
						"end of stream") : "still open");
	}
	ktap_diag("%s: %d connections from %d hosts, %d verified, %d on RDMA, largest gap %lld ms",
		  name, n, npeers, ok, nrdma, worst);
	result(n == nconn && nrdma == n &&
	       (want_peers < 0 || npeers == want_peers), "server_peers",
	       "%d of %d connections from %d hosts (want %d), %d on RDMA", n,
	       nconn, npeers, want_peers, nrdma);
	result(!bad && ok + dead_n == n && n == nconn, "server_verified",
	       "%d connections not verified", bad + nconn - n);
	result(!dead_ip || (dead_n > 0 && dead_err == dead_n), "server_dead_ended",
	       "%d of %d connections from %s ended with an error", dead_err,
	       dead_n, dead_ip ? dead_ip : "-");
	result(!stalled, "server_no_stall", "a connection stalled (bound %lld ms)",
	       gap_ms);
	for (i = 0; i < n; i++)
		close(c[i].fd);
	close(lfd);
	ktap_totals("visock_multi", npass, nfail, 0);
	return nfail ? 1 : 0;
}

/* ---- client ---- */

struct cconn {
	int fd;
	const char *host;
	struct hdr h;
	uint64_t sent;
	bool verdict, ok, ended;
	long long last, max_gap;
};

/* Wait up to 10 minutes for @path to exist (another host's marker). */
static void wait_file(const char *path)
{
	long long end = ctl_now_ms() + 600000;

	while (path && access(path, F_OK) && ctl_now_ms() < end)
		usleep(200 * 1000);
}

static int stream(int port, int nconn, long long bytes, char **hosts,
		  int nhosts)
{
	static struct cconn c[MAXCONN];
	static unsigned char buf[CHUNK];
	struct pollfd pfd[MAXCONN];
	int i, n = 0, nrdma = 0, left, verified = 0, stalled = 0;
	long long written = 0, worst = 0, t0;

	ktap_header(3);
	if (nconn * nhosts > MAXCONN) {
		ktap_diag("too many connections");
		return 1;
	}
	for (i = 0; i < nconn * nhosts; i++) {
		/* One connection to each host so far: -1, then wait for -2. */
		if (i == nhosts && ready1_file) {
			touch(ready1_file);
			wait_file(go1_file);
		}
		c[n].host = hosts[i % nhosts];
		c[n].fd = hu_connect_retry(c[n].host, port, 300000, 500);
		if (c[n].fd < 0) {
			ktap_diag("connect %d to %s: %s", i, c[n].host,
				  strerror(errno));
			break;
		}
		c[n].h.magic = HDR_MAGIC;
		c[n].h.seed = ((uint32_t)getpid() << 8) + i;
		c[n].h.total = bytes;
		nrdma += hu_on_rdma(c[n].fd, NULL);
		n++;
	}
	result(n == nconn * nhosts && nrdma == n, "connect",
	       "%d of %d connected, %d on RDMA", n, nconn * nhosts, nrdma);
	ktap_diag("%s: %d connections to %d hosts, %d on RDMA", name, n, nhosts,
		  nrdma);
	if (ready_file)
		touch(ready_file);
	wait_file(go_file);
	for (i = 0; i < n; i++) {
		if (write(c[i].fd, &c[i].h, sizeof(c[i].h)) != sizeof(c[i].h))
			ktap_diag("connection %d: header: %s", i, strerror(errno));
		fcntl(c[i].fd, F_SETFL, O_NONBLOCK);
		pfd[i].fd = c[i].fd;
		pfd[i].events = POLLOUT;
	}
	t0 = ctl_now_ms();
	for (i = 0; i < n; i++)
		c[i].last = t0;
	left = n;
	while (left) {
		long long now = ctl_now_ms();

		for (i = 0; i < n; i++) {
			if (c[i].ended || now - c[i].last <= gap_ms)
				continue;
			ktap_diag("connection %d to %s: nothing for %lld ms (%llu of %lld bytes sent)",
				  i, c[i].host, now - c[i].last,
				  (unsigned long long)c[i].sent, bytes);
			c[i].max_gap = now - c[i].last;
			stalled++;
		}
		if (stalled)
			break;
		poll(pfd, n, 500);
		now = ctl_now_ms();
		for (i = 0; i < n; i++) {
			struct cconn *s = &c[i];
			ssize_t r;

			if (s->ended || !pfd[i].revents)
				continue;
			if (s->sent < (uint64_t)bytes) {
				size_t len = bytes - s->sent, k;

				if (len > sizeof(buf))
					len = sizeof(buf);
				for (k = 0; k < len; k++)
					buf[k] = pat(s->h.seed, s->sent + k);
				r = write(s->fd, buf, len);
				if (r > 0) {
					s->sent += r;
					written += r;
					if (s->sent == (uint64_t)bytes)
						pfd[i].events = POLLIN;
				}
			} else {
				char v;

				r = read(s->fd, &v, 1);
				if (r == 1) {
					s->verdict = true;
					s->ok = v == 'K';
					verified += s->ok;
				}
			}
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (r <= 0) {
				ktap_diag("connection %d to %s ended after %llu bytes: %s",
					  i, s->host, (unsigned long long)s->sent,
					  r ? strerror(errno) : "EOF");
			}
			if (r > 0) {
				if (now - s->last > s->max_gap)
					s->max_gap = now - s->last;
				s->last = now;
			}
			if (r <= 0 || s->verdict) {
				s->ended = true;
				pfd[i].fd = -1;
				left--;
			}
			if (die_after >= 0 && written >= die_after)
				hu_power_off(name);
		}
	}
	for (i = 0; i < n; i++) {
		if (c[i].max_gap > worst)
			worst = c[i].max_gap;
		if (c[i].verdict && !c[i].ok)
			ktap_diag("connection %d to %s: the server found wrong bytes",
				  i, c[i].host);
	}
	ktap_diag("%s: %lld bytes in %lld ms on %d connections, largest gap %lld ms (bound %lld)",
		  name, written, ctl_now_ms() - t0, n, worst, gap_ms);
	result(!stalled, "no_stall", "a connection stalled (bound %lld ms)",
	       gap_ms);
	result(n && verified == n, "verified",
	       "%d of %d streams verified by their server", verified, n);
	/* The server closes after our end of stream. */
	for (i = 0; i < n; i++)
		close(c[i].fd);
	ktap_totals("visock_multi", npass, nfail, 0);
	return nfail ? 1 : 0;
}

static void print_usage(const char *prog)
{
	fprintf(stderr, "usage: %s [-n NAME] [-G GAP_MS] [-r READY] [-g GO]\n"
		"\t[-p PEERS] [-d DEAD_IP] serve PORT NCONN\n", prog);
	fprintf(stderr, "       %s [-n NAME] [-G GAP_MS] [-1 READY1 -2 GO1]\n"
		"\t[-r READY] [-g GO] [-k BYTES] stream PORT NCONN BYTES HOST...\n",
		prog);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *s = getenv("VISOCK_TEST_TIME_SCALE");
	int opt, scale = 1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (s && atoi(s) > 0 && atoi(s) <= 20)
		scale = atoi(s);
	while ((opt = getopt(argc, argv, "+n:G:r:g:p:d:k:1:2:")) != -1) {
		switch (opt) {
		case '1':
			ready1_file = optarg;
			break;
		case '2':
			go1_file = optarg;
			break;
		case 'n':
			name = optarg;
			break;
		case 'G':
			gap_ms = atoll(optarg);
			break;
		case 'r':
			ready_file = optarg;
			break;
		case 'g':
			go_file = optarg;
			break;
		case 'p':
			want_peers = atoi(optarg);
			break;
		case 'd':
			dead_ip = optarg;
			break;
		case 'k':
			die_after = atoll(optarg);
			break;
		default:
			print_usage(argv[0]);
		}
	}
	gap_ms *= scale;
	argc -= optind;
	argv += optind;
	if (argc == 3 && !strcmp(argv[0], "serve") && atoi(argv[2]) > 0 &&
	    atoi(argv[2]) <= MAXCONN)
		return serve(atoi(argv[1]), atoi(argv[2]));
	if (argc >= 5 && !strcmp(argv[0], "stream") && atoi(argv[2]) > 0)
		return stream(atoi(argv[1]), atoi(argv[2]), atoll(argv[3]),
			      argv + 4, argc - 4);
	print_usage("visock_multi");
	return 2;
}
