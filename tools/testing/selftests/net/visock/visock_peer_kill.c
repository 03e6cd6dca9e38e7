// SPDX-License-Identifier: GPL-2.0
/*
 * visock peer kill: the peer host dies in the middle of RDMA streams.
 * The survivor's sockets must end with an error within the configured
 * timeouts, and everything they held must be freed once they are closed.
 *
 * Not part of the two-host test table (its peer does not come back):
 * tools/testing/vm/peer-kill.sh runs it in the VM test bed.
 *
 *   visock_peer_kill serve PORT
 *	(the victim, host b) accepts NCONN AF_VISOCK connections and reads
 *	them; once NWRITE * PK_BEFORE bytes came in, it leaves exit status
 *	0 and its kernel log in $VISOCK_RESULTS (the test bed's result
 *	files) and powers the host off at once (sysrq o): no FIN, no
 *	RDMA disconnect, nothing more on the wire.
 *
 *   visock_peer_kill survive HOST PORT
 *	(the survivor, host a) opens NCONN connections to HOST:PORT, all
 *	on RDMA and, with net.visock.lgr_max_links=1 (the job sets it), on
 *	one QP; the first NWRITE keep writing, the others only read.
 *	Prints KTAP: every connection ends with an error within the bound
 *	below, and after close() no connection, QP or ring is left.
 *
 * The bound: a QP with connections sends a keepalive every
 * net.visock.lgr_keepalive_ms (the job sets 2 s; a writer's own requests
 * do the same), which fails after (VISOCK_QP_RETRY + 1) transport
 * timeouts of 4.096 us * 2^net.visock.rdma_ack_timeout; the connections
 * fail over to TCP and wait VISOCK_FO_TIMEOUT (5 s) for the peer's
 * failover message, then reset; plus 30 s of slack for the emulated
 * hosts, all times VISOCK_TEST_TIME_SCALE.  It is counted from the
 * writers' last progress, which is at or after the peer's death.  Times are printed, not judged
 * beyond that bound (it says "nothing hangs", not "fast").
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

#define NCONN		8
#define NWRITE		4
#define PK_BEFORE	1048576		/* bytes per writer before the kill */
#define CHUNK		(64 * 1024)
#define LINK_RETRY	6		/* VISOCK_QP_RETRY */
#define FO_TIMEOUT_MS	5000		/* VISOCK_FO_TIMEOUT */
#define SLACK_MS	30000
#define ACK_PATH	"/proc/sys/net/visock/rdma_ack_timeout"
#define KA_PATH		"/proc/sys/net/visock/lgr_keepalive_ms"

static unsigned int npass, nfail, nr;
static unsigned int scale = 1;

static void result(bool ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	if (!ok && fmt) {
		va_start(ap, fmt);
		ktap_vdiag(fmt, ap);
		va_end(ap);
	}
	ktap_result(++nr, name, ok ? KTAP_PASS : KTAP_FAIL, NULL);
	if (ok)
		npass++;
	else
		nfail++;
}

/* Wait up to @ms for every counter in @names to be 0. */
static bool proc_zero(const char *const *names, int n, int ms, char *why,
		      size_t size)
{
	long long end = ctl_now_ms() + ms, v;
	int i;

	for (;;) {
		for (i = 0; i < n; i++) {
			v = hu_proc_get(names[i]);
			if (v != 0) {
				snprintf(why, size, "%s %lld", names[i], v);
				break;
			}
		}
		if (i == n)
			return true;
		if (ctl_now_ms() > end)
			return false;
		usleep(100 * 1000);
	}
}

/* ---- the victim ---- */

static int serve(int port)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
	};
	struct pollfd pfd[NCONN];
	long long total = 0;
	static char buf[CHUNK];
	int lfd, i, n = 0, one = 1;
	ssize_t r;

	lfd = hu_visock_socket();
	if (lfd < 0 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(lfd, NCONN)) {
		perror("victim: listen");
		return 1;
	}
	printf("# victim: listening on port %d\n", port);
	fflush(stdout);
	while (n < NCONN) {
		pfd[n].fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (pfd[n].fd < 0) {
			perror("victim: accept");
			return 1;
		}
		pfd[n++].events = POLLIN;
	}
	while (total < (long long)NWRITE * PK_BEFORE) {
		if (poll(pfd, NCONN, 60000) <= 0) {
			fprintf(stderr, "victim: nothing for 60 s\n");
			return 1;
		}
		for (i = 0; i < NCONN; i++) {
			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			r = read(pfd[i].fd, buf, sizeof(buf));
			if (r <= 0) {
				fprintf(stderr, "victim: connection %d ended (%zd)\n",
					i, r);
				return 1;
			}
			total += r;
		}
	}
	printf("# victim: %lld bytes in from %d connections\n", total, NCONN);
	hu_power_off("victim");
	return 0;
}

/* ---- the survivor ---- */

struct conn {
	int fd;
	bool writer;
	long long moved;	/* bytes written or read */
	long long end_ms;	/* when it ended, 0: not yet */
	int err;		/* errno it ended with, 0: end of stream */
};

static bool ended_badly(int err)
{
	return err == ECONNRESET || err == ETIMEDOUT || err == EPIPE ||
	       err == EHOSTUNREACH || err == ECONNABORTED;
}

static int survive(const char *host, int port)
{
	static const char *const freed[] = {
		"lgr_connections", "qps", "registered_bytes", "sockets",
	};
	static char buf[CHUNK];
	long long ack, ka, bound_ms, t0, last, worst = 0;
	struct conn c[NCONN] = {};
	struct pollfd pfd[NCONN];
	int i, left = NCONN, fb = 0, bad = 0;
	uint32_t qpn[NCONN];
	char why[128];
	ssize_t r;

	ktap_header(3);
	ack = hu_read_ll(ACK_PATH);
	ka = hu_read_ll(KA_PATH);
	if (ack < 0 || ka < 0) {
		ktap_diag("needs visock with net.visock.rdma_ack_timeout and lgr_keepalive_ms");
		return 1;
	}
	/* 4.096 us * 2^ack per try, LINK_RETRY + 1 tries. */
	bound_ms = ka + ((LINK_RETRY + 1) * 4096LL * (1LL << ack)) / 1000000 +
		   FO_TIMEOUT_MS + SLACK_MS;
	bound_ms *= scale;
	ktap_diag("peer %s:%d, rdma_ack_timeout %lld, lgr_keepalive_ms %lld",
		  host, port, ack, ka);
	ktap_diag("every connection must end within %lld ms of the peer's death",
		  bound_ms);

	for (i = 0; i < NCONN; i++) {
		c[i].fd = hu_connect_retry(host, port, 120000, 200);
		c[i].writer = i < NWRITE;
		if (c[i].fd < 0) {
			ktap_diag("connect %d: %s", i, strerror(errno));
			break;
		}
		if (!hu_on_rdma(c[i].fd, &qpn[i]))
			fb++;
	}
	result(i == NCONN && !fb && qpn[0] == qpn[NCONN - 1],
	       "peer_kill.connect",
	       "%d of %d connected, %d not on RDMA, QPs %u and %u", i, NCONN,
	       fb, qpn[0], i == NCONN ? qpn[NCONN - 1] : 0);
	if (i < NCONN)
		return 1;
	ktap_diag("%d connections on QP %u, %d writing, %d reading", NCONN,
		  qpn[0], NWRITE, NCONN - NWRITE);

	memset(buf, 0x5a, sizeof(buf));
	t0 = ctl_now_ms();
	for (i = 0; i < NCONN; i++) {
		fcntl(c[i].fd, F_SETFL, O_NONBLOCK);
		pfd[i].fd = c[i].fd;
		pfd[i].events = c[i].writer ? POLLOUT : POLLIN;
	}
	/*
	 * The peer dies once the writers moved PK_BEFORE together; from then
	 * on nothing moves.  Its death is taken as the last progress.
	 */
	last = t0;
	while (left) {
		long long now = ctl_now_ms();

		if (now - last > bound_ms)
			break;
		poll(pfd, NCONN, 500);
		now = ctl_now_ms();
		for (i = 0; i < NCONN; i++) {
			if (c[i].end_ms || !pfd[i].revents)
				continue;
			if (c[i].writer)
				r = write(c[i].fd, buf, sizeof(buf));
			else
				r = read(c[i].fd, buf, sizeof(buf));
			if (r > 0) {
				c[i].moved += r;
				last = now;
				continue;
			}
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			c[i].err = r < 0 ? errno : 0;
			c[i].end_ms = now;
			pfd[i].fd = -1;
			left--;
		}
	}

	for (i = 0; i < NCONN; i++) {
		long long took = c[i].end_ms ? c[i].end_ms - last : -1;
		struct visock_info vi;
		socklen_t len = sizeof(vi);

		memset(&vi, 0, sizeof(vi));
		getsockopt(c[i].fd, SOL_VISOCK, VISOCK_INFO, &vi, &len);

		ktap_diag("connection %d (%s, %lld bytes): %s %lld ms after the last progress",
			  i, c[i].writer ? "writer" : "reader", c[i].moved,
			  c[i].end_ms ? (c[i].err ? strerror(c[i].err) :
					 "end of stream") : "still open",
			  took);
		ktap_diag("  mode %u, rdma state %u, credits %u, WRs %llu, WCs %llu",
			  vi.vi_mode, vi.vi_rdma_state,
			  vi.vi_rdma_credits,
			  (unsigned long long)vi.vi_rdma_wr_posted,
			  (unsigned long long)vi.vi_rdma_wc);
		if (!c[i].end_ms || !ended_badly(c[i].err))
			bad++;
		else if (took > worst)
			worst = took;
	}
	result(!bad, "peer_kill.sockets_end",
	       "%d of %d connections did not end with an error within %lld ms",
	       bad, NCONN, bound_ms);
	ktap_diag("the last connection ended %lld ms after the last progress",
		  worst);

	for (i = 0; i < NCONN; i++)
		close(c[i].fd);
	/* The broken QP goes with its last connection. */
	result(proc_zero(freed, 4, 60000 * scale, why, sizeof(why)),
	       "peer_kill.freed", "60 s after close: %s", why);
	ktap_totals("visock_peer_kill", npass, nfail, 0);
	return nfail ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *s = getenv("VISOCK_TEST_TIME_SCALE");

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (s && atoi(s) > 0 && atoi(s) <= 20)
		scale = atoi(s);
	if (argc == 3 && !strcmp(argv[1], "serve"))
		return serve(atoi(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "survive"))
		return survive(argv[2], atoi(argv[3]));
	fprintf(stderr, "usage: %s serve PORT | survive HOST PORT\n", argv[0]);
	return 2;
}
