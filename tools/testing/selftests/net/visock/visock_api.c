// SPDX-License-Identifier: GPL-2.0
/*
 * What an application sees of a TCP socket's receive API, on plain TCP
 * and on visock connections between the two hosts (net.visock.enable=1
 * on both; the runner only runs these after hs.rdma_ready passed).
 * Every test runs its check three times with the same expectations:
 * over an AF_INET SOCK_STREAM connection (so the expectations are
 * TCP's), over an AF_VISOCK connection whose both ends are in
 * VISOCK_MODE_RDMA before and after the check, and over an AF_VISOCK
 * connection in VISOCK_MODE_TCP on both ends (the client connects with
 * net.visock.enable=0 for that moment, so it announces no visock).  The
 * server reads and checks, the client writes what it is told to.
 *
 * inq		TCP_INQ: getsockopt() reads back 1, every recvmsg() has a
 *		TCP_CM_INQ control message with the bytes still queued
 *		(N written, all queued, k read: N - k), equal to
 *		SIOCINQ/FIONREAD; 1 at end of file; none once TCP_INQ is
 *		0; SO_RCVLOWAT: poll() and epoll report no EPOLLIN below
 *		it, a non-blocking recv() returns what is there, a blocking
 *		one waits for it; the writer's SIOCOUTQ and SIOCOUTQNSD
 *		reach 0 once the reader has everything
 * recv_flags	MSG_PEEK (repeatable, leaves the TCP_CM_INQ count alone),
 *		MSG_TRUNC (discards, returns the count), MSG_WAITALL (waits
 *		for bytes written later), each with its TCP_CM_INQ message
 * timestamps	SO_TIMESTAMP, SO_TIMESTAMPNS, SO_TIMESTAMP_NEW,
 *		SO_TIMESTAMPNS_NEW, SO_TIMESTAMPING (_OLD and _NEW) with
 *		SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE:
 *		one control message of the right level, type and size per
 *		read, a time that is not 0, not before the reader asked the
 *		writer for the bytes, not after the read returned, and not
 *		before the previous read's
 *
 * No test checks how long anything takes; every wait is bounded.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/net_tstamp.h>
#include <linux/sockios.h>
#include <linux/time_types.h>
#include <linux/visock.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "harness.h"
#include "hostutil.h"
#include "ktap.h"
#include "sockutil.h"

#ifndef TCP_INQ
#define TCP_INQ			36
#endif
#ifndef TCP_CM_INQ
#define TCP_CM_INQ		TCP_INQ
#endif
#ifndef SO_TIMESTAMP_OLD
#define SO_TIMESTAMP_OLD	29
#define SO_TIMESTAMPNS_OLD	35
#define SO_TIMESTAMPING_OLD	37
#endif
#ifndef SO_TIMESTAMP_NEW
#define SO_TIMESTAMP_NEW	63
#define SO_TIMESTAMPNS_NEW	64
#define SO_TIMESTAMPING_NEW	65
#endif

#define WAIT_MS		10000		/* something the peer owes */
#define INQ_N		10000		/* bytes queued in the inq test */
#define INQ_K		1000		/* bytes read of them first */
#define LOWAT		1000

/* The connections every test checks. */
enum api_kind { API_TCP, API_RDMA, API_VTCP, API_NKINDS };

static const char *const kind_name[] = { "TCP", "visock RDMA", "visock TCP" };

static long long api_orig_enable = -1;

static void api_cleanup(const struct vt_ctx *c)
{
	(void)c;
	if (api_orig_enable >= 0)
		hu_write_ll("/proc/sys/net/visock/enable", api_orig_enable);
	api_orig_enable = -1;
}

/*
 * @fd is a visock connection in TCP mode because the client announced no
 * visock: DISABLED on the client, PEER_NO_VISOCK on the server.
 */
static void api_expect_tcp_mode(const struct vt_ctx *c, int fd,
				const char *what)
{
	unsigned int want = vt_is_client(c) ? VISOCK_FB_DISABLED :
					      VISOCK_FB_PEER_NO_VISOCK;
	struct visock_info vi;

	hu_get_info(fd, &vi);
	vt_assert(vi.vi_mode == VISOCK_MODE_TCP &&
		  vi.vi_fallback_reason == want,
		  "%s: mode %u, fallback reason %u (%s), expected TCP (%u) for reason %u (%s)",
		  what, vi.vi_mode, vi.vi_fallback_reason,
		  hu_fb_name(vi.vi_fallback_reason), VISOCK_MODE_TCP, want,
		  hu_fb_name(want));
}

static int api_pair(struct vt_ctx *c, enum api_kind kind)
{
	struct timeval tv = { .tv_sec = WAIT_MS / 1000 };
	const char *what = vt_is_client(c) ? "connect()ed socket" :
					     "accept()ed socket";
	int fd;

	switch (kind) {
	case API_TCP:
		fd = su_pair_fam(c, VT_FAMILY_INET, false);
		break;
	case API_RDMA:
		fd = su_pair_fam(c, VT_FAMILY_VISOCK, false);
		hu_expect_rdma(fd, what, NULL);
		break;
	default:
		if (vt_is_client(c)) {
			api_orig_enable = hu_sysctl("enable");
			vt_assert(api_orig_enable >= 0, "net.visock.enable: %s",
				  strerror(errno));
			vt_set_cleanup(api_cleanup);
			hu_sysctl_set("enable", 0);
		}
		fd = su_pair_fam(c, VT_FAMILY_VISOCK, false);
		api_cleanup(c);
		api_expect_tcp_mode(c, fd, what);
		break;
	}
	vt_try(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)),
	       "setsockopt(SO_RCVTIMEO)");
	vt_try(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)),
	       "setsockopt(SO_SNDTIMEO)");
	return fd;
}

static void api_done(const struct vt_ctx *c, int fd, enum api_kind kind)
{
	if (kind == API_RDMA)
		hu_expect_rdma(fd, "after the checks", NULL);
	else if (kind == API_VTCP)
		api_expect_tcp_mode(c, fd, "after the checks");
	close(fd);
}

/* The client writes @n bytes of a counting pattern when told "write n". */
static void writer_loop(struct vt_ctx *c, int fd)
{
	static uint8_t buf[INQ_N * 2];
	char line[CTL_LINE_MAX];
	unsigned int pos = 0;
	long n;
	int v;

	for (;;) {
		vt_recv(c, line, sizeof(line));
		if (!strcmp(line, "end"))
			return;
		if (!strcmp(line, "shut")) {
			vt_try(shutdown(fd, SHUT_WR), "shutdown(SHUT_WR)");
			vt_send(c, "ok");
			continue;
		}
		if (!strcmp(line, "outq")) {
			/* Everything was read: nothing may stay queued. */
			long long deadline = ctl_now_ms() + WAIT_MS;
			int q = -1, nsd = -1;

			while (ctl_now_ms() < deadline) {
				vt_try(ioctl(fd, SIOCOUTQ, &q), "ioctl(SIOCOUTQ)");
				vt_try(ioctl(fd, SIOCOUTQNSD, &nsd),
				       "ioctl(SIOCOUTQNSD)");
				if (!q && !nsd)
					break;
				usleep(5000);
			}
			vt_send(c, "outq %d %d", q, nsd);
			continue;
		}
		/* The reader blocks in recv() meanwhile (or not: same). */
		if (sscanf(line, "later %ld", &n) == 1)
			usleep(200000);
		else if (sscanf(line, "write %ld", &n) != 1)
			n = -1;
		if (n < 0 ||
		    n > (long)sizeof(buf))
			vt_fail("writer: unexpected line '%s'", line);
		for (v = 0; v < n; v++)
			buf[v] = (uint8_t)(pos++ % 251);
		su_write_all(fd, buf, (size_t)n);
		vt_send(c, "ok");
	}
}

/* Reader: have the writer write @n bytes and wait until it did. */
static void ask_write(struct vt_ctx *c, long n)
{
	vt_send(c, "write %ld", n);
	vt_expect(c, "ok");
}

/* What one recvmsg() returned. */
struct rcv {
	ssize_t ret;
	int ncmsg;
	bool has_inq;
	int inq;
	int ts_level, ts_type;	/* the first SOL_SOCKET control message */
	size_t ts_len;
	uint8_t ts[64];
	int msg_flags;
};

static void do_recv(int fd, void *buf, size_t len, int flags, struct rcv *r)
{
	union {
		char b[512];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl.b, .msg_controllen = sizeof(ctl.b),
	};
	struct cmsghdr *cm;

	memset(r, 0, sizeof(*r));
	r->ts_level = -1;
	r->ret = recvmsg(fd, &msg, flags);
	if (r->ret < 0)
		vt_fail("recvmsg(%zu, flags %#x): %s (%s)", len, flags,
			vt_errname(errno), strerror(errno));
	r->msg_flags = msg.msg_flags;
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		size_t dlen = cm->cmsg_len - CMSG_LEN(0);

		r->ncmsg++;
		if (cm->cmsg_level == SOL_TCP && cm->cmsg_type == TCP_CM_INQ) {
			vt_assert(dlen == sizeof(int),
				  "TCP_CM_INQ of %zu bytes", dlen);
			r->has_inq = true;
			memcpy(&r->inq, CMSG_DATA(cm), sizeof(int));
		} else if (cm->cmsg_level == SOL_SOCKET && r->ts_level < 0) {
			r->ts_level = cm->cmsg_level;
			r->ts_type = cm->cmsg_type;
			r->ts_len = dlen;
			memcpy(r->ts, CMSG_DATA(cm),
			       dlen < sizeof(r->ts) ? dlen : sizeof(r->ts));
		}
	}
}

static int fionread(int fd)
{
	int v = -1;

	vt_try(ioctl(fd, FIONREAD, &v), "ioctl(FIONREAD)");
	return v;
}

static int siocinq(int fd)
{
	int v = -1;

	vt_try(ioctl(fd, SIOCINQ, &v), "ioctl(SIOCINQ)");
	return v;
}

/* recvmsg() of exactly @want bytes with a TCP_CM_INQ of @inq. */
static void expect_inq(int fd, const char *k, const char *what, size_t len,
		       int flags, ssize_t want, int inq)
{
	static uint8_t buf[INQ_N * 2];
	struct rcv r;

	do_recv(fd, buf, len, flags, &r);
	vt_assert(r.ret == want, "%s: %s: recvmsg returned %zd, expected %zd",
		  k, what, r.ret, want);
	vt_assert(r.has_inq, "%s: %s: no TCP_CM_INQ control message (%d others)",
		  k, what, r.ncmsg);
	vt_assert(r.inq == inq, "%s: %s: TCP_CM_INQ %d, expected %d",
		  k, what, r.inq, inq);
}

/* ---- inq ---- */

static void inq_check(struct vt_ctx *c, int fd, const char *k)
{
	struct epoll_event ev = { .events = EPOLLIN };
	uint8_t buf[4096];
	struct rcv r;
	int ep;
	short re;

	su_setint(fd, SOL_TCP, TCP_INQ, 1);
	vt_assert(su_getint(fd, SOL_TCP, TCP_INQ) == 1,
		  "%s: getsockopt(TCP_INQ) does not read back 1", k);

	ask_write(c, INQ_N);
	su_wait_bytes(fd, INQ_N);
	vt_assert(fionread(fd) == INQ_N && siocinq(fd) == INQ_N,
		  "%s: FIONREAD %d, SIOCINQ %d with %d bytes queued", k,
		  fionread(fd), siocinq(fd), INQ_N);
	expect_inq(fd, k, "first read", INQ_K, 0, INQ_K, INQ_N - INQ_K);
	vt_assert(siocinq(fd) == INQ_N - INQ_K,
		  "%s: SIOCINQ %d after reading %d of %d", k, siocinq(fd),
		  INQ_K, INQ_N);
	expect_inq(fd, k, "reading the rest", INQ_N, 0, INQ_N - INQ_K, 0);
	vt_assert(siocinq(fd) == 0, "%s: SIOCINQ %d with nothing queued", k,
		  siocinq(fd));

	/* SO_RCVLOWAT: no EPOLLIN below it. */
	su_setint(fd, SOL_SOCKET, SO_RCVLOWAT, LOWAT);
	ep = vt_try(epoll_create1(EPOLL_CLOEXEC), "epoll_create1");
	vt_try(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), "epoll_ctl");
	ask_write(c, LOWAT / 2);
	su_wait_bytes(fd, LOWAT / 2);
	re = su_poll(fd, POLLIN, 0);
	vt_assert(!(re & POLLIN), "%s: POLLIN with %d bytes below SO_RCVLOWAT %d",
		  k, LOWAT / 2, LOWAT);
	vt_assert(epoll_wait(ep, &ev, 1, 0) == 0,
		  "%s: epoll reports %#x with %d bytes below SO_RCVLOWAT %d", k,
		  ev.events, LOWAT / 2, LOWAT);
	ask_write(c, LOWAT / 2 + 100);
	re = su_poll(fd, POLLIN, WAIT_MS);
	vt_assert(re & POLLIN, "%s: no POLLIN with %d bytes, SO_RCVLOWAT %d",
		  k, LOWAT + 100, LOWAT);
	vt_assert(epoll_wait(ep, &ev, 1, WAIT_MS) == 1 && (ev.events & EPOLLIN),
		  "%s: epoll: no EPOLLIN with %d bytes, SO_RCVLOWAT %d", k,
		  LOWAT + 100, LOWAT);
	close(ep);
	expect_inq(fd, k, "read 10 of SO_RCVLOWAT's bytes", 10, 0, 10,
		   LOWAT + 90);
	/* Non-blocking: what is there, even below SO_RCVLOWAT. */
	expect_inq(fd, k, "non-blocking read below SO_RCVLOWAT", sizeof(buf),
		   MSG_DONTWAIT, LOWAT + 90, 0);
	/* Blocking: waits for SO_RCVLOWAT bytes, then takes all there is. */
	ask_write(c, LOWAT / 2);
	vt_send(c, "later %d", LOWAT / 2);
	expect_inq(fd, k, "blocking read with SO_RCVLOWAT", sizeof(buf), 0,
		   LOWAT, 0);
	vt_expect(c, "ok");
	su_setint(fd, SOL_SOCKET, SO_RCVLOWAT, 1);

	/* The writer's queues are empty once the reader has everything. */
	vt_send(c, "outq");
	vt_recv(c, (char *)buf, sizeof(buf));
	vt_assert(!strcmp((char *)buf, "outq 0 0"),
		  "%s: writer's SIOCOUTQ, SIOCOUTQNSD after everything was read: %s",
		  k, (char *)buf);

	/* End of file: 0 bytes, TCP_CM_INQ 1 (read on to see it). */
	vt_send(c, "shut");
	vt_expect(c, "ok");
	expect_inq(fd, k, "end of file", sizeof(buf), 0, 0, 1);

	/* TCP_INQ 0: no control message any more. */
	su_setint(fd, SOL_TCP, TCP_INQ, 0);
	do_recv(fd, buf, sizeof(buf), 0, &r);
	vt_assert(r.ret == 0 && !r.ncmsg,
		  "%s: TCP_INQ 0 at end of file: recvmsg %zd with %d control messages",
		  k, r.ret, r.ncmsg);
}

/* ---- recv_flags ---- */

static void flags_check(struct vt_ctx *c, int fd, const char *k)
{
	uint8_t a[256], b[256];
	struct rcv r;
	int i;

	su_setint(fd, SOL_TCP, TCP_INQ, 1);
	ask_write(c, 1000);
	su_wait_bytes(fd, 1000);

	/* MSG_PEEK twice, then the same bytes read. */
	do_recv(fd, a, 100, MSG_PEEK, &r);
	vt_assert(r.ret == 100 && r.has_inq && r.inq == 1000,
		  "%s: MSG_PEEK: %zd bytes, TCP_CM_INQ %s%d, expected 100, 1000",
		  k, r.ret, r.has_inq ? "" : "none ", r.inq);
	do_recv(fd, b, 100, MSG_PEEK, &r);
	vt_assert(r.ret == 100 && !memcmp(a, b, 100),
		  "%s: second MSG_PEEK: %zd bytes or other bytes", k, r.ret);
	expect_inq(fd, k, "read after MSG_PEEK", 100, 0, 100, 900);
	vt_assert(!memcmp(a, b, 100), "%s: read other bytes than peeked", k);
	/* The stream is a counting pattern modulo 251. */
	for (i = 0; i < 100; i++)
		vt_assert(a[i] == (uint8_t)(i % 251),
			  "%s: byte %d is %u, expected %u", k, i, a[i], i % 251);

	/* MSG_TRUNC: discards, returns the count. */
	memset(a, 0xee, sizeof(a));
	do_recv(fd, a, 200, MSG_TRUNC, &r);
	vt_assert(r.ret == 200 && r.has_inq && r.inq == 700,
		  "%s: MSG_TRUNC: %zd bytes, TCP_CM_INQ %s%d, expected 200, 700",
		  k, r.ret, r.has_inq ? "" : "none ", r.inq);
	for (i = 0; i < 200; i++)
		vt_assert(a[i] == 0xee, "%s: MSG_TRUNC wrote to the buffer", k);
	do_recv(fd, b, 1, 0, &r);
	vt_assert(r.ret == 1 && r.has_inq && r.inq == 699,
		  "%s: read after MSG_TRUNC: %zd bytes, TCP_CM_INQ %s%d, expected 1, 699",
		  k, r.ret, r.has_inq ? "" : "none ", r.inq);
	vt_assert(b[0] == 300 % 251, "%s: after MSG_TRUNC byte %u, expected %u",
		  k, b[0], 300 % 251);

	/* MSG_WAITALL: waits for bytes written after the call began. */
	vt_send(c, "later 500");
	expect_inq(fd, k, "MSG_WAITALL", 1199, MSG_WAITALL, 1199, 0);
	vt_expect(c, "ok");
}

/* ---- timestamps ---- */

struct ts_case {
	const char *name;
	int opt;		/* SOL_SOCKET option */
	int val;
	int type;		/* control message type */
	size_t len;		/* its size */
	long long unit;		/* ns per unit of the sub-second field */
};

#define TS_SW	(SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE)

/* x86_64: every variant is { 64-bit seconds, 64-bit fraction }[n]. */
static const struct ts_case ts_cases[] = {
	{ "SO_TIMESTAMP", SO_TIMESTAMP_OLD, 1, SO_TIMESTAMP_OLD, 16, 1000 },
	{ "SO_TIMESTAMPNS", SO_TIMESTAMPNS_OLD, 1, SO_TIMESTAMPNS_OLD, 16, 1 },
	{ "SO_TIMESTAMP_NEW", SO_TIMESTAMP_NEW, 1, SO_TIMESTAMP_NEW, 16, 1000 },
	{ "SO_TIMESTAMPNS_NEW", SO_TIMESTAMPNS_NEW, 1, SO_TIMESTAMPNS_NEW, 16,
	  1 },
	{ "SO_TIMESTAMPING", SO_TIMESTAMPING_OLD, TS_SW, SO_TIMESTAMPING_OLD,
	  48, 1 },
	{ "SO_TIMESTAMPING_NEW", SO_TIMESTAMPING_NEW, TS_SW,
	  SO_TIMESTAMPING_NEW, 48, 1 },
};

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * TCP takes its receive stamp from the skb, and the kernel stamps skbs
 * only while some socket wants stamps.  The first socket to ask turns
 * that on from a work item, so bytes that arrive just after the
 * setsockopt() may carry no stamp, and TCP then sends no control
 * message.  The keeper is a loopback TCP pair with SO_TIMESTAMP on; it
 * returns once a byte through it came back stamped (so stamping is on)
 * and keeps it on until ts_keeper_end().
 */
struct ts_keeper {
	int lfd, wfd, rfd;
};

static void ts_keeper_start(struct ts_keeper *tk)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	uint8_t b = 0;
	struct rcv r;
	int one = 1, i;

	tk->lfd = socket(AF_INET, SOCK_STREAM, 0);
	vt_try(tk->lfd, "keeper: socket");
	vt_try(bind(tk->lfd, (struct sockaddr *)&a, sizeof(a)), "keeper: bind");
	vt_try(listen(tk->lfd, 1), "keeper: listen");
	vt_try(getsockname(tk->lfd, (struct sockaddr *)&a, &alen),
	       "keeper: getsockname");
	tk->wfd = socket(AF_INET, SOCK_STREAM, 0);
	vt_try(tk->wfd, "keeper: socket");
	vt_try(connect(tk->wfd, (struct sockaddr *)&a, sizeof(a)),
	       "keeper: connect");
	tk->rfd = accept(tk->lfd, NULL, NULL);
	vt_try(tk->rfd, "keeper: accept");
	vt_try(setsockopt(tk->rfd, SOL_SOCKET, SO_TIMESTAMP_OLD, &one,
			  sizeof(one)), "keeper: SO_TIMESTAMP");
	for (i = 0; i < WAIT_MS / 20; i++) {
		su_write_all(tk->wfd, &b, 1);
		su_wait_bytes(tk->rfd, 1);
		do_recv(tk->rfd, &b, 1, 0, &r);
		if (r.ret == 1 && r.ts_level == SOL_SOCKET)
			return;
		poll(NULL, 0, 20);
	}
	vt_fail("keeper: no loopback TCP stamp within %d ms", WAIT_MS);
}

static void ts_keeper_end(struct ts_keeper *tk)
{
	close(tk->rfd);
	close(tk->wfd);
	close(tk->lfd);
}

static void ts_check(struct vt_ctx *c, int fd, const char *k)
{
	struct ts_keeper tk;
	const struct ts_case *tc;
	long long t0, t1, at, prev;
	int64_t f[2];
	uint8_t buf[256];
	struct rcv r;
	int round, off = 0;
	size_t i;

	ts_keeper_start(&tk);
	for (i = 0; i < ARRAY_SIZE(ts_cases); i++) {
		tc = &ts_cases[i];
		vt_try(setsockopt(fd, SOL_SOCKET, tc->opt, &tc->val,
				  sizeof(tc->val)), tc->name);
		prev = 0;
		for (round = 0; round < 2; round++) {
			t0 = now_ns();
			ask_write(c, 100);
			su_wait_bytes(fd, 100);
			do_recv(fd, buf, sizeof(buf), 0, &r);
			t1 = now_ns();
			vt_assert(r.ret == 100, "%s: %s: read %zd of 100 bytes",
				  k, tc->name, r.ret);
			vt_assert(r.ts_level == SOL_SOCKET,
				  "%s: %s: no timestamp control message (%d others)",
				  k, tc->name, r.ncmsg);
			vt_assert(r.ncmsg == 1,
				  "%s: %s: %d control messages, expected 1", k,
				  tc->name, r.ncmsg);
			vt_assert(r.ts_type == tc->type && r.ts_len == tc->len,
				  "%s: %s: control message type %d of %zu bytes, expected %d of %zu",
				  k, tc->name, r.ts_type, r.ts_len, tc->type,
				  tc->len);
			memcpy(f, r.ts, sizeof(f));
			at = f[0] * 1000000000LL + f[1] * tc->unit;
			vt_assert(at, "%s: %s: timestamp 0", k, tc->name);
			/* In the unit of the stamp, the stamp's ends too. */
			t0 -= t0 % tc->unit;
			vt_assert(at >= t0 && at <= t1,
				  "%s: %s: timestamp %lld.%09lld outside the read's window %lld.%09lld .. %lld.%09lld",
				  k, tc->name, at / 1000000000, at % 1000000000,
				  t0 / 1000000000, t0 % 1000000000,
				  t1 / 1000000000, t1 % 1000000000);
			vt_assert(at >= prev,
				  "%s: %s: timestamp went back from the previous read's",
				  k, tc->name);
			prev = at;
		}
		vt_try(setsockopt(fd, SOL_SOCKET, tc->opt, &off, sizeof(off)),
		       tc->name);
	}
	/* Off again: no control message. */
	ask_write(c, 100);
	su_wait_bytes(fd, 100);
	do_recv(fd, buf, sizeof(buf), 0, &r);
	vt_assert(r.ret == 100 && !r.ncmsg,
		  "%s: timestamps off: %zd bytes, %d control messages", k, r.ret,
		  r.ncmsg);
	ts_keeper_end(&tk);
}

/* ---- runner ---- */

static void api_run(struct vt_ctx *c,
		    void (*check)(struct vt_ctx *c, int fd, const char *k))
{
	enum api_kind kind;
	int fd;

	hu_need_rdma(c);
	for (kind = API_TCP; kind < API_NKINDS; kind++) {
		vt_sync(c, kind_name[kind]);
		fd = api_pair(c, kind);
		if (vt_is_client(c)) {
			writer_loop(c, fd);
		} else {
			check(c, fd, kind_name[kind]);
			vt_send(c, "end");
		}
		api_done(c, fd, kind);
	}
}

static void inq(struct vt_ctx *c)
{
	api_run(c, inq_check);
}

static void recv_flags(struct vt_ctx *c)
{
	api_run(c, flags_check);
}

static void timestamps(struct vt_ctx *c)
{
	api_run(c, ts_check);
}

#define T(fn, tmo, d)	{ #fn, fn, fn, tmo, d }

static const struct vt_test tests[] = {
	T(inq, 60, "TCP_INQ, SIOCINQ, SIOCOUTQ(NSD), SO_RCVLOWAT as TCP"),
	T(recv_flags, 60, "MSG_PEEK, MSG_TRUNC, MSG_WAITALL as TCP"),
	T(timestamps, 60, "SO_TIMESTAMP(NS)(_NEW), SO_TIMESTAMPING as TCP"),
};

int main(int argc, char **argv)
{
	return vt_main(argc, argv, "visock_api", tests, ARRAY_SIZE(tests));
}
