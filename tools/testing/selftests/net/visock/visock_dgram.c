// SPDX-License-Identifier: GPL-2.0
/*
 * visock datagram sockets: UDP's semantics, between two hosts and over
 * loopback.
 *
 *   client host                               server host
 *   +--------------------+    datagrams    +--------------------+
 *   | visock_dgram       | --------------> | visock_dgram       |
 *   | --role client      | <-------------- | --role server      |
 *   +--------------------+   control TCP   +--------------------+
 *
 * With --family visock (the default) the sockets under test are
 * socket(AF_VISOCK, SOCK_DGRAM, VISOCKPROTO_UDP4/6), or for the tests
 * named inet_* socket(AF_INET[6], SOCK_DGRAM, IPPROTO_VISOCK); the
 * program turns net.visock.dgram_enable on for them and puts it back
 * after each test.  With --family inet every socket is a plain UDP one:
 * the same checks then describe what UDP does, which visock must match.
 * The tests without a server half run on the local host, over loopback.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>
#include <linux/visock.h>

#include "harness.h"
#include "hostutil.h"
#include "sockutil.h"

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif

#define MAX4		65507	/* largest UDP payload over IPv4 */
#define MAX6		65527	/* over IPv6 (no jumbograms) */
#define WAIT_MS		10000

enum kind {
	K_VISOCK,	/* AF_VISOCK, VISOCKPROTO_UDP4/6 */
	K_INET,		/* AF_INET[6], IPPROTO_VISOCK */
};

static struct hu_saved_sysctl saved[] = {
	{ "dgram_enable", -1 },
};

static void cleanup(const struct vt_ctx *c)
{
	(void)c;
	hu_sysctls_restore(saved, ARRAY_SIZE(saved));
}

static bool is_visock(const struct vt_ctx *c)
{
	return c->family == VT_FAMILY_VISOCK;
}

/* Datagram socket under test; fails the test if it cannot be made. */
static int dsock(const struct vt_ctx *c, enum kind k, bool v6)
{
	int fam = v6 ? AF_INET6 : AF_INET;
	int fd, proto;

	if (!is_visock(c))
		return (int)vt_try(socket(fam, SOCK_DGRAM | SOCK_CLOEXEC, 0),
				   "socket(UDP)");
	/* Without the sysctl socket() tells what is missing. */
	if (hu_sysctl("dgram_enable") >= 0)
		hu_sysctl_set("dgram_enable", 1);
	if (k == K_VISOCK) {
		fd = socket(AF_VISOCK, SOCK_DGRAM | SOCK_CLOEXEC,
			    v6 ? VISOCKPROTO_UDP6 : VISOCKPROTO_UDP4);
		vt_assert(fd >= 0, "socket(AF_VISOCK, SOCK_DGRAM, %s): %s",
			  v6 ? "VISOCKPROTO_UDP6" : "VISOCKPROTO_UDP4",
			  vt_errname(errno));
		fam = AF_VISOCK;
	} else {
		fd = socket(fam, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_VISOCK);
		vt_assert(fd >= 0, "socket(%s, SOCK_DGRAM, IPPROTO_VISOCK): %s",
			  v6 ? "AF_INET6" : "AF_INET", vt_errname(errno));
	}
	vt_assert(su_getint(fd, SOL_SOCKET, SO_DOMAIN) == fam,
		  "SO_DOMAIN is not %d", fam);
	vt_assert(su_getint(fd, SOL_SOCKET, SO_TYPE) == SOCK_DGRAM,
		  "SO_TYPE is not SOCK_DGRAM");
	proto = su_getint(fd, SOL_SOCKET, SO_PROTOCOL);
	vt_assert(k == K_VISOCK ? proto == (v6 ? VISOCKPROTO_UDP6 :
					    VISOCKPROTO_UDP4) :
		  proto == IPPROTO_VISOCK, "SO_PROTOCOL is %d", proto);
	return fd;
}

static socklen_t loop_addr(bool v6, int port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (v6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_addr = in6addr_loopback;
		s6->sin6_port = htons(port);
		return sizeof(*s6);
	}
	((struct sockaddr_in *)ss)->sin_family = AF_INET;
	((struct sockaddr_in *)ss)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	((struct sockaddr_in *)ss)->sin_port = htons(port);
	return sizeof(struct sockaddr_in);
}

/* Bind @fd to the loopback address, any port; returns the port. */
static int bind_loop(int fd, bool v6)
{
	struct sockaddr_storage ss;
	socklen_t len = loop_addr(v6, 0, &ss);

	vt_try(bind(fd, (struct sockaddr *)&ss, len), "bind(loopback)");
	return su_port(fd);
}

static void fill(uint8_t *buf, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

static void check(const uint8_t *buf, size_t len, unsigned int seed,
		  const char *what)
{
	size_t i;

	for (i = 0; i < len; i++)
		vt_assert(buf[i] == (uint8_t)(seed * 131 + i * 7 + (i >> 8)),
			  "%s: byte %zu of %zu differs", what, i, len);
}

static void wait_in(int fd, const char *what)
{
	su_wait(fd, POLLIN, what);
}

/* Nothing more queued on @fd. */
static void expect_empty(int fd, const char *what)
{
	char b;

	vt_expect_errno(recv(fd, &b, 1, MSG_DONTWAIT), EAGAIN, what);
}

static bool same_port(const struct sockaddr_storage *a, int port)
{
	if (a->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)a)->sin_port) == port;
	return ntohs(((const struct sockaddr_in6 *)a)->sin6_port) == port;
}

static const size_t sizes4[] = { 0, 1, 1471, 1472, 1473, MAX4 };
static const size_t sizes6[] = { 0, 1, 1471, 1472, 1473, MAX4, MAX6 };

/* ---- over loopback ---- */

static void loop_sizes(struct vt_ctx *c, enum kind k, bool v6)
{
	const size_t *sizes = v6 ? sizes6 : sizes4;
	size_t n = v6 ? ARRAY_SIZE(sizes6) : ARRAY_SIZE(sizes4);
	static uint8_t buf[MAX6 + 64];
	struct sockaddr_storage to, from;
	int a, b, pa, pb;
	socklen_t tl, fl;
	ssize_t r;
	size_t i;

	a = dsock(c, k, v6);
	b = dsock(c, k, v6);
	pa = bind_loop(a, v6);
	pb = bind_loop(b, v6);
	tl = loop_addr(v6, pb, &to);
	for (i = 0; i < n; i++) {
		fill(buf, sizes[i], (unsigned int)i);
		r = vt_try(sendto(a, buf, sizes[i], 0, (struct sockaddr *)&to,
				  tl), "sendto");
		vt_assert((size_t)r == sizes[i], "sent %zd of %zu", r,
			  sizes[i]);
	}
	for (i = 0; i < n; i++) {
		wait_in(b, "datagram");
		memset(buf, 0xa5, sizeof(buf));
		fl = sizeof(from);
		r = vt_try(recvfrom(b, buf, sizeof(buf), 0,
				    (struct sockaddr *)&from, &fl), "recvfrom");
		vt_assert((size_t)r == sizes[i],
			  "datagram %zu: %zd bytes, sent %zu", i, r, sizes[i]);
		check(buf, r, (unsigned int)i, "payload");
		vt_assert(from.ss_family == (v6 ? AF_INET6 : AF_INET) &&
			  same_port(&from, pa), "wrong source address");
	}
	expect_empty(b, "no duplicate");
	fill(buf, v6 ? MAX6 + 1 : MAX4 + 1, 1);
	vt_expect_errno(sendto(a, buf, v6 ? MAX6 + 1 : MAX4 + 1, 0,
			       (struct sockaddr *)&to, tl), EMSGSIZE,
			"one byte over the largest datagram");
	close(a);
	close(b);
}

static void sizes_v4(struct vt_ctx *c) { loop_sizes(c, K_VISOCK, false); }
static void sizes_v6(struct vt_ctx *c) { loop_sizes(c, K_VISOCK, true); }
static void inet_sizes_v4(struct vt_ctx *c) { loop_sizes(c, K_INET, false); }
static void inet_sizes_v6(struct vt_ctx *c) { loop_sizes(c, K_INET, true); }

/* Sender @a and bound receiver @b over IPv4 loopback; @b's port. */
static int loop_pair(struct vt_ctx *c, enum kind k, int *a, int *b)
{
	*a = dsock(c, k, false);
	*b = dsock(c, k, false);
	return bind_loop(*b, false);
}

static void send_to(int fd, int port, const void *buf, size_t len)
{
	struct sockaddr_storage to;
	socklen_t tl = loop_addr(false, port, &to);

	vt_assert(sendto(fd, buf, len, 0, (struct sockaddr *)&to, tl) ==
		  (ssize_t)len, "sendto: %s", vt_errname(errno));
}

static void trunc_test(struct vt_ctx *c)
{
	uint8_t buf[1000], small[100];
	struct iovec iov = { small, sizeof(small) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	int a, b, pb;
	ssize_t r;

	pb = loop_pair(c, K_VISOCK, &a, &b);
	fill(buf, sizeof(buf), 7);
	send_to(a, pb, buf, sizeof(buf));
	send_to(a, pb, buf, sizeof(buf));
	wait_in(b, "datagram");
	r = vt_try(recv(b, small, sizeof(small), MSG_TRUNC), "recv(TRUNC)");
	vt_assert(r == sizeof(buf), "MSG_TRUNC returned %zd, not %zu", r,
		  sizeof(buf));
	check(small, sizeof(small), 7, "truncated payload");
	wait_in(b, "second datagram");
	r = vt_try(recvmsg(b, &m, 0), "recvmsg");
	vt_assert(r == sizeof(small) && (m.msg_flags & MSG_TRUNC),
		  "recvmsg: %zd bytes, flags %#x", r, m.msg_flags);
	expect_empty(b, "the rest of a truncated datagram is gone");
	close(a);
	close(b);
}

static void peek_test(struct vt_ctx *c)
{
	uint8_t buf[64];
	int a, b, pb, i;

	pb = loop_pair(c, K_VISOCK, &a, &b);
	fill(buf, 10, 1);
	send_to(a, pb, buf, 10);
	fill(buf, 20, 2);
	send_to(a, pb, buf, 20);
	wait_in(b, "datagram");
	for (i = 0; i < 2; i++) {
		memset(buf, 0, sizeof(buf));
		vt_assert(recv(b, buf, sizeof(buf), MSG_PEEK) == 10,
			  "MSG_PEEK %d", i);
		check(buf, 10, 1, "peeked");
	}
	vt_assert(recv(b, buf, sizeof(buf), 0) == 10, "first read");
	check(buf, 10, 1, "first");
	wait_in(b, "second");
	vt_assert(recv(b, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT) == 20,
		  "peek second");
	vt_assert(recv(b, buf, sizeof(buf), 0) == 20, "second read");
	check(buf, 20, 2, "second");
	expect_empty(b, "after two");
	close(a);
	close(b);
}

#define NMSG	64

static void mmsg_test(struct vt_ctx *c)
{
	static uint8_t out[NMSG][1500], in[NMSG][1600];
	struct mmsghdr sm[NMSG], rm[NMSG];
	struct iovec siov[NMSG], riov[NMSG];
	struct sockaddr_storage to;
	socklen_t tl;
	int a, b, pb, i, n;

	a = dsock(c, K_VISOCK, false);
	b = dsock(c, K_VISOCK, false);
	su_setint(b, SOL_SOCKET, SO_RCVBUF, 1 << 20);
	pb = bind_loop(b, false);
	tl = loop_addr(false, pb, &to);
	memset(sm, 0, sizeof(sm));
	memset(rm, 0, sizeof(rm));
	for (i = 0; i < NMSG; i++) {
		size_t len = (size_t)(i * 23) % 1500;

		fill(out[i], len, i);
		siov[i] = (struct iovec){ out[i], len };
		sm[i].msg_hdr.msg_iov = &siov[i];
		sm[i].msg_hdr.msg_iovlen = 1;
		sm[i].msg_hdr.msg_name = &to;
		sm[i].msg_hdr.msg_namelen = tl;
		riov[i] = (struct iovec){ in[i], sizeof(in[i]) };
		rm[i].msg_hdr.msg_iov = &riov[i];
		rm[i].msg_hdr.msg_iovlen = 1;
	}
	n = (int)vt_try(sendmmsg(a, sm, NMSG, 0), "sendmmsg");
	vt_assert(n == NMSG, "sendmmsg sent %d of %d", n, NMSG);
	wait_in(b, "datagrams");
	n = (int)vt_try(recvmmsg(b, rm, NMSG, 0, NULL), "recvmmsg");
	vt_assert(n == NMSG, "recvmmsg got %d of %d", n, NMSG);
	for (i = 0; i < NMSG; i++) {
		vt_assert(rm[i].msg_len == siov[i].iov_len,
			  "message %d: %u bytes, sent %zu", i, rm[i].msg_len,
			  siov[i].iov_len);
		check(in[i], rm[i].msg_len, i, "recvmmsg payload");
	}
	expect_empty(b, "after 64");
	close(a);
	close(b);
}

/* The SO_RXQ_OVFL count of a received message, -1 if none. */
static long long rxq_ovfl(struct msghdr *m)
{
	struct cmsghdr *cm;
	uint32_t v;

	for (cm = CMSG_FIRSTHDR(m); cm; cm = CMSG_NXTHDR(m, cm))
		if (cm->cmsg_level == SOL_SOCKET &&
		    cm->cmsg_type == SO_RXQ_OVFL) {
			memcpy(&v, CMSG_DATA(cm), sizeof(v));
			return v;
		}
	return -1;
}

static void rcvbuf_test(struct vt_ctx *c)
{
	char ctl[CMSG_SPACE(sizeof(uint32_t))];
	uint8_t buf[1000];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	int a, b, pb, i, got = 0, sent = 200, rb;
	long long ovfl;
	ssize_t r;

	/*
	 * Options before bind(), as programs usually set them: before 6.7
	 * visock passes socket-level options on at the socket's next call.
	 */
	a = dsock(c, K_VISOCK, false);
	b = dsock(c, K_VISOCK, false);
	su_setint(b, SOL_SOCKET, SO_RCVBUF, 8192);
	rb = su_getint(b, SOL_SOCKET, SO_RCVBUF);
	vt_assert(rb >= 8192 && rb <= 65536, "SO_RCVBUF reads %d", rb);
	su_setint(b, SOL_SOCKET, SO_RXQ_OVFL, 1);
	vt_assert(su_getint(b, SOL_SOCKET, SO_RXQ_OVFL) == 1, "SO_RXQ_OVFL");
	pb = bind_loop(b, false);
	for (i = 0; i < sent; i++) {
		fill(buf, sizeof(buf), i);
		send_to(a, pb, buf, sizeof(buf));
	}
	for (;;) {
		m.msg_control = ctl;
		m.msg_controllen = sizeof(ctl);
		r = recvmsg(b, &m, MSG_DONTWAIT);
		if (r < 0) {
			vt_assert(errno == EAGAIN, "recvmsg: %s",
				  vt_errname(errno));
			break;
		}
		vt_assert(r == sizeof(buf), "%zd bytes", r);
		got++;
	}
	vt_assert(got > 0 && got < sent,
		  "received %d of %d datagrams into an 8 KiB buffer", got,
		  sent);
	/* Recovers: the next datagram arrives and reports the drops. */
	fill(buf, sizeof(buf), 999);
	send_to(a, pb, buf, sizeof(buf));
	wait_in(b, "datagram after the drops");
	m.msg_control = ctl;
	m.msg_controllen = sizeof(ctl);
	r = vt_try(recvmsg(b, &m, 0), "recvmsg");
	check(buf, r, 999, "after drops");
	ovfl = rxq_ovfl(&m);
	vt_assert(ovfl == sent - got, "SO_RXQ_OVFL says %lld dropped, %d were",
		  ovfl, sent - got);
	vt_diag("%d of %d received, %lld dropped", got, sent, ovfl);
	close(a);
	close(b);
}

static void connected_test(struct vt_ctx *c)
{
	struct sockaddr_storage ss, peer;
	socklen_t len, pl = sizeof(peer);
	int a, b, o, pa, pb;
	uint8_t buf[32];

	pb = loop_pair(c, K_VISOCK, &a, &b);
	o = dsock(c, K_VISOCK, false);
	vt_expect_errno(send(a, "x", 1, 0), EDESTADDRREQ,
			"send() unconnected");
	len = loop_addr(false, pb, &ss);
	vt_try(connect(a, (struct sockaddr *)&ss, len), "connect");
	pa = su_port(a);
	vt_try(getpeername(a, (struct sockaddr *)&peer, &pl), "getpeername");
	vt_assert(same_port(&peer, pb), "getpeername: wrong port");
	vt_assert(send(a, "hello", 5, 0) == 5, "send connected");
	wait_in(b, "datagram");
	pl = sizeof(peer);
	vt_assert(recvfrom(b, buf, sizeof(buf), 0, (struct sockaddr *)&peer,
			   &pl) == 5 && same_port(&peer, pa), "recvfrom");
	/* Only the connected peer's datagrams reach @a. */
	send_to(o, pa, "other", 5);
	send_to(b, pa, "reply", 5);
	wait_in(a, "reply");
	vt_assert(recv(a, buf, sizeof(buf), 0) == 5 &&
		  !memcmp(buf, "reply", 5), "reply");
	expect_empty(a, "a stranger's datagram is filtered");
	/* connect(AF_UNSPEC) dissolves the association. */
	memset(&ss, 0, sizeof(ss));
	ss.ss_family = AF_UNSPEC;
	vt_try(connect(a, (struct sockaddr *)&ss, sizeof(ss)),
	       "connect(AF_UNSPEC)");
	pl = sizeof(peer);
	vt_expect_errno(getpeername(a, (struct sockaddr *)&peer, &pl),
			ENOTCONN, "getpeername after AF_UNSPEC");
	close(a);
	close(b);
	close(o);
}

static void pktinfo_test(struct vt_ctx *c, bool v6)
{
	char ctl[256];
	uint8_t buf[16];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = ctl,
			    .msg_controllen = sizeof(ctl) };
	struct sockaddr_storage to;
	struct cmsghdr *cm;
	int a, b, pb, found = 0;
	socklen_t tl;

	a = dsock(c, K_VISOCK, v6);
	b = dsock(c, K_VISOCK, v6);
	pb = bind_loop(b, v6);
	if (v6)
		su_setint(b, IPPROTO_IPV6, IPV6_RECVPKTINFO, 1);
	else
		su_setint(b, IPPROTO_IP, IP_PKTINFO, 1);
	tl = loop_addr(v6, pb, &to);
	vt_try(sendto(a, "pkt", 3, 0, (struct sockaddr *)&to, tl), "sendto");
	wait_in(b, "datagram");
	vt_assert(recvmsg(b, &m, 0) == 3, "recvmsg");
	for (cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm)) {
		if (!v6 && cm->cmsg_level == IPPROTO_IP &&
		    cm->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;

			memcpy(&pi, CMSG_DATA(cm), sizeof(pi));
			vt_assert(pi.ipi_addr.s_addr == htonl(INADDR_LOOPBACK),
				  "IP_PKTINFO: wrong destination");
			found = 1;
		}
		if (v6 && cm->cmsg_level == IPPROTO_IPV6 &&
		    cm->cmsg_type == IPV6_PKTINFO) {
			struct in6_pktinfo pi;

			memcpy(&pi, CMSG_DATA(cm), sizeof(pi));
			vt_assert(IN6_IS_ADDR_LOOPBACK(&pi.ipi6_addr),
				  "IPV6_PKTINFO: wrong destination");
			found = 1;
		}
	}
	vt_assert(found, "no %s control message", v6 ? "IPV6_PKTINFO" :
		  "IP_PKTINFO");
	close(a);
	close(b);
}

static void pktinfo_v4(struct vt_ctx *c) { pktinfo_test(c, false); }
static void pktinfo_v6(struct vt_ctx *c) { pktinfo_test(c, true); }

static void poll_test(struct vt_ctx *c)
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	struct sockaddr_storage ss;
	int a, b, pb, ep, n, err;
	socklen_t len;
	char buf[8];

	pb = loop_pair(c, K_VISOCK, &a, &b);
	vt_assert(su_poll(b, POLLIN | POLLOUT, 0) == POLLOUT,
		  "empty socket: not just POLLOUT");
	ep = (int)vt_try(epoll_create1(EPOLL_CLOEXEC), "epoll_create1");
	ev.data.fd = b;
	vt_try(epoll_ctl(ep, EPOLL_CTL_ADD, b, &ev), "EPOLL_CTL_ADD");
	vt_assert(epoll_wait(ep, &out, 1, 0) == 0, "epoll: ready when empty");
	/* Only the wake-up can tell epoll now. */
	send_to(a, pb, "e", 1);
	n = epoll_wait(ep, &out, 1, WAIT_MS);
	vt_assert(n == 1 && (out.events & EPOLLIN), "epoll: no EPOLLIN (%d)",
		  n);
	vt_assert(su_poll(b, POLLIN, 0) == POLLIN, "poll: no POLLIN");
	vt_assert(recv(b, buf, sizeof(buf), 0) == 1, "recv");
	vt_assert(epoll_wait(ep, &out, 1, 0) == 0, "epoll: ready after read");
	close(ep);

	/* An ICMP error: POLLERR, once through SO_ERROR, then nothing. */
	close(b);
	len = loop_addr(false, pb, &ss);
	vt_try(connect(a, (struct sockaddr *)&ss, len), "connect");
	vt_assert(send(a, "x", 1, 0) == 1, "send to a closed port");
	su_wait(a, POLLERR, "POLLERR after port unreachable");
	err = su_getint(a, SOL_SOCKET, SO_ERROR);
	vt_assert(err == ECONNREFUSED, "SO_ERROR %d", err);
	vt_assert(su_getint(a, SOL_SOCKET, SO_ERROR) == 0, "SO_ERROR again");
	expect_empty(a, "error consumed by SO_ERROR");
	/* And once through recv(). */
	vt_assert(send(a, "x", 1, 0) == 1, "send again");
	su_wait(a, POLLERR, "POLLERR again");
	vt_expect_errno(recv(a, buf, sizeof(buf), MSG_DONTWAIT), ECONNREFUSED,
			"recv reports the error");
	vt_assert(su_getint(a, SOL_SOCKET, SO_ERROR) == 0,
		  "SO_ERROR after recv reported it");
	close(a);
}

static void ioctl_test(struct vt_ctx *c)
{
	uint8_t buf[300];
	int a, b, pb, v;

	pb = loop_pair(c, K_VISOCK, &a, &b);
	v = -1;
	vt_try(ioctl(b, SIOCINQ, &v), "SIOCINQ");
	vt_assert(v == 0, "SIOCINQ %d when empty", v);
	send_to(a, pb, buf, 300);
	send_to(a, pb, buf, 100);
	wait_in(b, "datagram");
	vt_try(ioctl(b, SIOCINQ, &v), "SIOCINQ");
	vt_assert(v == 300, "SIOCINQ %d, not the next datagram's 300", v);
	vt_try(ioctl(a, SIOCOUTQ, &v), "SIOCOUTQ");
	vt_assert(v >= 0, "SIOCOUTQ %d", v);
	close(a);
	close(b);
}

static void nonblock_test(struct vt_ctx *c)
{
	struct timeval tv = { 0, 100000 };
	int a, b;
	char x;

	(void)loop_pair(c, K_VISOCK, &a, &b);
	vt_expect_errno(recv(b, &x, 1, MSG_DONTWAIT), EAGAIN, "MSG_DONTWAIT");
	su_nonblock(b, true);
	vt_expect_errno(recv(b, &x, 1, 0), EAGAIN, "O_NONBLOCK");
	su_nonblock(b, false);
	vt_try(setsockopt(b, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)),
	       "SO_RCVTIMEO");
	vt_expect_errno(recv(b, &x, 1, 0), EAGAIN, "SO_RCVTIMEO");
	close(a);
	close(b);
}

static void shutdown_test(struct vt_ctx *c)
{
	struct sockaddr_storage ss;
	int a, b, pb;
	socklen_t len;
	char x;

	pb = loop_pair(c, K_VISOCK, &a, &b);
	len = loop_addr(false, pb, &ss);
	vt_try(connect(a, (struct sockaddr *)&ss, len), "connect");
	vt_try(shutdown(a, SHUT_RD), "shutdown(SHUT_RD)");
	vt_assert(su_poll(a, POLLIN, 0) & POLLIN, "no POLLIN after SHUT_RD");
	vt_assert(recv(a, &x, 1, 0) == 0, "recv after SHUT_RD: not 0");
	close(a);
	close(b);
}

static int set_reuseport(int fd)
{
	int one = 1;

	if (!setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)))
		return 0;
	/* AF_VISOCK before 6.7: the socket layer refuses it for us. */
	if (su_getint(fd, SOL_SOCKET, SO_DOMAIN) == AF_VISOCK)
		return setsockopt(fd, SOL_VISOCK, VISOCK_REUSEPORT, &one,
				  sizeof(one));
	return -1;
}

static void reuseport_test(struct vt_ctx *c)
{
	struct sockaddr_storage ss;
	int a, b, d, port;
	socklen_t len;

	a = dsock(c, K_VISOCK, false);
	b = dsock(c, K_VISOCK, false);
	d = dsock(c, K_VISOCK, false);
	vt_try(set_reuseport(a), "SO_REUSEPORT");
	vt_try(set_reuseport(b), "SO_REUSEPORT");
	vt_assert(su_getint(a, SOL_SOCKET, SO_REUSEPORT) == 1,
		  "SO_REUSEPORT reads 0");
	port = bind_loop(a, false);
	len = loop_addr(false, port, &ss);
	vt_try(bind(b, (struct sockaddr *)&ss, len), "second bind with reuse");
	vt_expect_errno(bind(d, (struct sockaddr *)&ss, len), EADDRINUSE,
			"bind without SO_REUSEPORT");
	close(a);
	close(b);
	close(d);
}

static void sysctl_test(struct vt_ctx *c)
{
	int fd;

	if (!is_visock(c)) {
		/* Plain UDP does not care about visock's switch. */
		if (hu_sysctl("dgram_enable") >= 0)
			hu_sysctl_set("dgram_enable", 0);
		fd = dsock(c, K_VISOCK, false);
		close(fd);
		return;
	}
	hu_sysctl_set("dgram_enable", 0);
	vt_expect_errno(socket(AF_VISOCK, SOCK_DGRAM, VISOCKPROTO_UDP4),
			ESOCKTNOSUPPORT, "AF_VISOCK datagrams off");
	vt_expect_errno(socket(AF_INET, SOCK_DGRAM, IPPROTO_VISOCK),
			EPROTONOSUPPORT, "AF_INET IPPROTO_VISOCK datagrams off");
	fd = (int)vt_try(socket(AF_INET, SOCK_DGRAM, 0), "plain UDP");
	close(fd);
	fd = (int)vt_try(socket(AF_VISOCK, SOCK_STREAM, VISOCKPROTO_TCP4),
			 "visock stream");
	close(fd);
	hu_sysctl_set("dgram_enable", 1);
	vt_expect_errno(socket(AF_VISOCK, SOCK_DGRAM, VISOCKPROTO_TCP4),
			EPROTONOSUPPORT, "SOCK_DGRAM with a stream protocol");
	fd = dsock(c, K_VISOCK, false);
	close(fd);
	fd = dsock(c, K_INET, false);
	close(fd);
}

static void counters_test(struct vt_ctx *c)
{
	long long s0, r0, b0, p0, s1, r1, b1, p1;
	const char *path;
	uint8_t buf[100];
	int a, b, pb, i;

	path = hu_sysctl("enable") > 0 ? "dgram_sent_udp_no_transport" :
					 "dgram_sent_udp_disabled";
	s0 = hu_proc("dgram_sent");
	r0 = hu_proc("dgram_rcvd");
	b0 = hu_proc("dgram_bytes_rcvd");
	p0 = hu_proc(path);
	pb = loop_pair(c, K_VISOCK, &a, &b);
	for (i = 0; i < 3; i++)
		send_to(a, pb, buf, sizeof(buf));
	for (i = 0; i < 3; i++) {
		wait_in(b, "datagram");
		vt_assert(recv(b, buf, sizeof(buf), i ? 0 : MSG_PEEK) ==
			  sizeof(buf), "recv");
	}
	vt_assert(recv(b, buf, sizeof(buf), 0) == sizeof(buf), "recv");
	s1 = hu_proc("dgram_sent");
	r1 = hu_proc("dgram_rcvd");
	b1 = hu_proc("dgram_bytes_rcvd");
	p1 = hu_proc(path);
	if (!is_visock(c)) {
		/* Other tests may run meanwhile; plain UDP adds nothing. */
		vt_diag("plain UDP: dgram_sent moved by %lld", s1 - s0);
		close(a);
		close(b);
		return;
	}
	vt_assert(s1 - s0 >= 3 && p1 - p0 >= 3,
		  "dgram_sent +%lld, %s +%lld; 3 sent", s1 - s0, path,
		  p1 - p0);
	vt_assert(r1 - r0 >= 3 && b1 - b0 >= 300,
		  "dgram_rcvd +%lld (%lld bytes); 3 read, 1 peek", r1 - r0,
		  b1 - b0);
	vt_assert(hu_proc("dgram_sent_rdma") == 0, "dgram_sent_rdma");
	close(a);
	close(b);
}

/* ---- between the hosts ---- */

/*
 * Server: bind, announce the port, receive every size in lockstep and
 * check it; client: send each size once the server is ready for it.
 */
static void xh_sizes(struct vt_ctx *c, enum kind k, bool v6)
{
	const size_t *sizes = v6 ? sizes6 : sizes4;
	size_t n = v6 ? ARRAY_SIZE(sizes6) : ARRAY_SIZE(sizes4);
	static uint8_t buf[MAX6 + 64];
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, port;
	ssize_t r;
	size_t i;

	if (v6)
		vt_agree(c, !vt_is_client(c) || c->peer6[0],
			 "no IPv6 address of the peer");
	fd = dsock(c, k, v6);
	if (!vt_is_client(c)) {
		su_setint(fd, SOL_SOCKET, SO_RCVBUF, 1 << 20);
		memset(&ss, 0, sizeof(ss));
		ss.ss_family = v6 ? AF_INET6 : AF_INET;
		vt_try(bind(fd, (struct sockaddr *)&ss,
			    v6 ? sizeof(struct sockaddr_in6) :
				 sizeof(struct sockaddr_in)), "bind");
		vt_send_num(c, "port", su_port(fd));
		for (i = 0; i < n; i++) {
			vt_sync(c, "go");
			wait_in(fd, "datagram from the client");
			memset(buf, 0x5a, sizeof(buf));
			r = vt_try(recv(fd, buf, sizeof(buf), 0), "recv");
			vt_assert((size_t)r == sizes[i],
				  "datagram %zu: %zd bytes, sent %zu", i, r,
				  sizes[i]);
			check(buf, r, (unsigned int)i + 40, "payload");
		}
		vt_sync(c, "done");
		expect_empty(fd, "no duplicate");
		close(fd);
		return;
	}
	port = (int)vt_recv_num(c, "port");
	len = su_peer_addr(c, v6, port, &ss);
	for (i = 0; i < n; i++) {
		vt_sync(c, "go");
		fill(buf, sizes[i], (unsigned int)i + 40);
		r = vt_try(sendto(fd, buf, sizes[i], 0,
				  (struct sockaddr *)&ss, len), "sendto");
		vt_assert((size_t)r == sizes[i], "sent %zd", r);
	}
	vt_sync(c, "done");
	close(fd);
}

static void xh_sizes_v4(struct vt_ctx *c) { xh_sizes(c, K_VISOCK, false); }
static void xh_sizes_v6(struct vt_ctx *c) { xh_sizes(c, K_VISOCK, true); }
static void xh_inet_sizes(struct vt_ctx *c) { xh_sizes(c, K_INET, false); }

/* Client connects and sends; the server answers to the source address. */
static void xh_connected(struct vt_ctx *c)
{
	struct sockaddr_storage ss, from;
	socklen_t len, fl = sizeof(from);
	uint8_t buf[2000];
	int fd, i;

	fd = dsock(c, K_VISOCK, false);
	if (!vt_is_client(c)) {
		memset(&ss, 0, sizeof(ss));
		ss.ss_family = AF_INET;
		vt_try(bind(fd, (struct sockaddr *)&ss,
			    sizeof(struct sockaddr_in)), "bind");
		vt_send_num(c, "port", su_port(fd));
		for (i = 0; i < 3; i++) {
			wait_in(fd, "request");
			fl = sizeof(from);
			len = vt_try(recvfrom(fd, buf, sizeof(buf), 0,
					      (struct sockaddr *)&from, &fl),
				     "recvfrom");
			vt_assert(len == 1400, "request of %u bytes", len);
			check(buf, len, i, "request");
			fill(buf, 1500, i + 100);
			vt_assert(sendto(fd, buf, 1500, 0,
					 (struct sockaddr *)&from, fl) == 1500,
				  "sendto: %s", vt_errname(errno));
		}
		vt_sync(c, "done");
		close(fd);
		return;
	}
	len = su_peer_addr(c, false, (int)vt_recv_num(c, "port"), &ss);
	vt_try(connect(fd, (struct sockaddr *)&ss, len), "connect");
	for (i = 0; i < 3; i++) {
		fill(buf, 1400, i);
		vt_assert(send(fd, buf, 1400, 0) == 1400, "send: %s",
			  vt_errname(errno));
		wait_in(fd, "reply");
		vt_assert(recv(fd, buf, sizeof(buf), 0) == 1500, "reply size");
		check(buf, 1500, i + 100, "reply");
	}
	vt_sync(c, "done");
	close(fd);
}

static const struct vt_test tests[] = {
	{ "sysctl_off", sysctl_test, NULL, 0,
	  "net.visock.dgram_enable=0: socket() fails as without datagrams" },
	{ "sizes_v4", sizes_v4, NULL, 0,
	  "0..65507 byte datagrams over IPv4 loopback, boundaries kept" },
	{ "sizes_v6", sizes_v6, NULL, 0,
	  "0..65527 byte datagrams over IPv6 loopback" },
	{ "inet_sizes_v4", inet_sizes_v4, NULL, 0,
	  "the same with socket(AF_INET, SOCK_DGRAM, IPPROTO_VISOCK)" },
	{ "inet_sizes_v6", inet_sizes_v6, NULL, 0,
	  "the same with socket(AF_INET6, SOCK_DGRAM, IPPROTO_VISOCK)" },
	{ "trunc", trunc_test, NULL, 0,
	  "MSG_TRUNC returns the real length; msg_flags MSG_TRUNC" },
	{ "peek", peek_test, NULL, 0, "MSG_PEEK leaves the datagram queued" },
	{ "mmsg64", mmsg_test, NULL, 0, "sendmmsg/recvmmsg of 64 datagrams" },
	{ "rcvbuf_drop", rcvbuf_test, NULL, 0,
	  "full SO_RCVBUF drops, SO_RXQ_OVFL counts, then recovers" },
	{ "connected", connected_test, NULL, 0,
	  "connect, peer filter, getpeername, connect(AF_UNSPEC)" },
	{ "pktinfo_v4", pktinfo_v4, NULL, 0, "IP_PKTINFO control message" },
	{ "pktinfo_v6", pktinfo_v6, NULL, 0,
	  "IPV6_RECVPKTINFO control message" },
	{ "poll_err", poll_test, NULL, 0,
	  "poll/epoll readiness and wake-up, ICMP error once" },
	{ "ioctl", ioctl_test, NULL, 0, "SIOCINQ is the next datagram's size" },
	{ "nonblock", nonblock_test, NULL, 0,
	  "MSG_DONTWAIT, O_NONBLOCK, SO_RCVTIMEO" },
	{ "shutdown", shutdown_test, NULL, 0, "shutdown(SHUT_RD) of UDP" },
	{ "reuseport", reuseport_test, NULL, 0, "SO_REUSEPORT shares a port" },
	{ "counters", counters_test, NULL, 0,
	  "/proc/net/visock counts datagrams and their path" },
	{ "xh_sizes_v4", xh_sizes_v4, xh_sizes_v4, 0,
	  "0..65507 byte datagrams between the hosts, IPv4" },
	{ "xh_sizes_v6", xh_sizes_v6, xh_sizes_v6, 0,
	  "0..65527 byte datagrams between the hosts, IPv6" },
	{ "xh_inet_sizes", xh_inet_sizes, xh_inet_sizes, 0,
	  "between the hosts with socket(AF_INET, ..., IPPROTO_VISOCK)" },
	{ "xh_connected", xh_connected, xh_connected, 0,
	  "connected client, server replies to the source address" },
};

int main(int argc, char **argv)
{
	hu_sysctls_save(saved, ARRAY_SIZE(saved));
	vt_set_cleanup(cleanup);
	return vt_main(argc, argv, "visock_dgram", tests, ARRAY_SIZE(tests));
}
