// SPDX-License-Identifier: GPL-2.0
/*
 * Stream socket semantics of AF_VISOCK.
 *
 * A visock socket must behave like a TCP socket.  With net.visock.enable=0
 * on both hosts every connection runs over plain TCP, and each test here
 * checks one piece of the TCP socket API against what TCP does.  Each
 * test has a client and a server half; they run on two hosts (--role
 * client / --role server) or on one host over loopback (--role single).
 *
 * --family inet runs exactly the same tests on plain AF_INET TCP sockets,
 * which checks the tests themselves: all of them must pass (or skip, for
 * the few that only make sense on AF_VISOCK) in that mode.
 *
 * Several tests run a scenario twice, once on plain TCP sockets and once
 * on the sockets under test, and compare what poll()/epoll/getsockopt()
 * report.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/sockios.h>
#include <linux/visock.h>

#include "harness.h"
#include "sockutil.h"

#define KiB 1024ULL
#define MiB (1024ULL * 1024)

/* Events every poll snapshot asks for. */
#define PEV (POLLIN | POLLPRI | POLLOUT | POLLRDHUP)

static const char *fam_name(enum vt_family fam)
{
	return fam == VT_FAMILY_VISOCK ? "AF_VISOCK" : "TCP";
}

static bool is_visock(const struct vt_ctx *c)
{
	return c->family == VT_FAMILY_VISOCK;
}

/* One byte each way: the connection works. */
static void ping_pong(struct vt_ctx *c, int fd)
{
	char ch;

	if (vt_is_client(c)) {
		su_write_all(fd, "p", 1);
		su_read_all(fd, &ch, 1);
		vt_assert(ch == 'q', "ping: got 0x%02x", (unsigned char)ch);
	} else {
		su_read_all(fd, &ch, 1);
		vt_assert(ch == 'p', "ping: got 0x%02x", (unsigned char)ch);
		su_write_all(fd, "q", 1);
	}
}

static void fill_pattern(unsigned char *buf, size_t len, unsigned int salt)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (unsigned char)(i * 31 + salt + (i >> 8));
}

static void check_pattern(const unsigned char *buf, size_t len,
			  unsigned int salt, const char *what)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != (unsigned char)(i * 31 + salt + (i >> 8)))
			vt_fail("%s: byte %zu of %zu differs", what, i, len);
}

/* Both halves agree that IPv6 can be used; skip otherwise. */
static void need_ipv6(struct vt_ctx *c)
{
	int fd = socket(AF_INET6, SOCK_STREAM, 0);
	bool ok = fd >= 0;

	if (fd >= 0)
		close(fd);
	if (!ok) {
		vt_agree(c, false, "IPv6 is disabled on this host");
		return;
	}
	if (vt_is_client(c) && !c->peer6[0]) {
		vt_agree(c, false,
			 "no IPv6 address of the peer (--peer6 / VISOCK_PEER_IP6)");
		return;
	}
	vt_agree(c, true, NULL);
}

/* ---- connection setup ---- */

static void connect_accept_common(struct vt_ctx *c, bool v6)
{
	int fd = su_pair_fam(c, c->family, v6);
	char buf[4];

	if (vt_is_client(c)) {
		su_write_all(fd, "ping", 4);
		su_read_all(fd, buf, 4);
		vt_assert(!memcmp(buf, "pong", 4), "bad reply");
	} else {
		su_read_all(fd, buf, 4);
		vt_assert(!memcmp(buf, "ping", 4), "bad request");
		su_write_all(fd, "pong", 4);
		su_expect_eof(fd);
	}
	close(fd);
}

static void connect_accept(struct vt_ctx *c)
{
	connect_accept_common(c, false);
}

static void connect_accept_v6(struct vt_ctx *c)
{
	need_ipv6(c);
	connect_accept_common(c, true);
}

static void check_domain_type(int fd, int domain, int acceptconn,
			      const char *what)
{
	int val;

	val = su_getint(fd, SOL_SOCKET, SO_TYPE);
	vt_assert(val == SOCK_STREAM, "%s: SO_TYPE %d", what, val);
	val = su_getint(fd, SOL_SOCKET, SO_DOMAIN);
	vt_assert(val == domain, "%s: SO_DOMAIN %d, expected %d", what, val,
		  domain);
	val = su_getint(fd, SOL_SOCKET, SO_ACCEPTCONN);
	vt_assert(val == acceptconn, "%s: SO_ACCEPTCONN %d", what, val);
}

static void so_domain_type(struct vt_ctx *c)
{
	int domain = is_visock(c) ? AF_VISOCK : AF_INET;
	int fd, lfd;

	if (vt_is_client(c)) {
		fd = su_connect(c, c->family, false, su_recv_port(c));
		check_domain_type(fd, domain, 0, "connected socket");
		ping_pong(c, fd);
	} else {
		lfd = su_listen(c->family, false, 4, 0);
		check_domain_type(lfd, domain, 1, "listener");
		su_send_port(c, lfd);
		fd = su_accept(lfd, 0);
		check_domain_type(fd, domain, 0, "accepted socket");
		ping_pong(c, fd);
		close(lfd);
	}
	close(fd);
}

static void serve_one_ping(struct vt_ctx *c, int flags)
{
	int lfd = su_listen(c->family, false, 4, 0);
	int fd;

	su_send_port(c, lfd);
	fd = su_accept(lfd, flags);
	ping_pong(c, fd);
	su_expect_eof(fd);
	close(fd);
	close(lfd);
}

static void connect_nonblock(struct vt_ctx *c)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, err, ret;
	short rev;

	if (!vt_is_client(c)) {
		serve_one_ping(c, 0);
		return;
	}
	len = su_peer_addr(c, false, su_recv_port(c), &ss);
	fd = su_socket(c->family, false, SOCK_NONBLOCK);
	vt_expect_errno(connect(fd, (struct sockaddr *)&ss, len), EINPROGRESS,
			"non-blocking connect");
	rev = su_wait(fd, POLLOUT, "POLLOUT after connect");
	vt_assert(!(rev & (POLLERR | POLLHUP)), "revents 0x%x after connect",
		  rev);
	err = su_getint(fd, SOL_SOCKET, SO_ERROR);
	vt_assert(err == 0, "SO_ERROR %s after connect", vt_errname(err));
	/* Like TCP: the next connect() reports the completed connection. */
	ret = connect(fd, (struct sockaddr *)&ss, len);
	vt_assert(ret == 0, "connect after completion: %s, expected success",
		  vt_errname(errno));
	vt_expect_errno(connect(fd, (struct sockaddr *)&ss, len), EISCONN,
			"connect on a connected socket");
	su_nonblock(fd, false);
	ping_pong(c, fd);
	close(fd);
}

/* Server: a port nothing listens on (held by a bound TCP socket). */
static void serve_closed_port(struct vt_ctx *c)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int fd = su_socket(VT_FAMILY_INET, false, 0);

	vt_try(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), "bind");
	su_send_port(c, fd);
	vt_expect(c, "DONE");
	close(fd);
}

static void connect_refused(struct vt_ctx *c)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, err;

	if (!vt_is_client(c)) {
		serve_closed_port(c);
		return;
	}
	len = su_peer_addr(c, false, su_recv_port(c), &ss);
	fd = su_socket(c->family, false, 0);
	vt_expect_errno(connect(fd, (struct sockaddr *)&ss, len), ECONNREFUSED,
			"connect to a closed port");
	err = su_getint(fd, SOL_SOCKET, SO_ERROR);
	vt_assert(err == 0, "SO_ERROR %s after the failed connect",
		  vt_errname(err));
	close(fd);
	vt_send(c, "DONE");
}

/* Non-blocking connect to @port: revents once it is over, and SO_ERROR. */
static void refused_nb_one(struct vt_ctx *c, enum vt_family fam, int port,
			   short *rev, int *err)
{
	struct sockaddr_storage ss;
	socklen_t len = su_peer_addr(c, false, port, &ss);
	int fd = su_socket(fam, false, SOCK_NONBLOCK);

	vt_expect_errno(connect(fd, (struct sockaddr *)&ss, len), EINPROGRESS,
			"non-blocking connect to a closed port");
	su_wait(fd, POLLOUT | POLLERR, "end of the connection attempt");
	*rev = su_poll(fd, PEV, 0);
	*err = su_getint(fd, SOL_SOCKET, SO_ERROR);
	vt_assert(su_getint(fd, SOL_SOCKET, SO_ERROR) == 0,
		  "SO_ERROR not cleared by reading it");
	close(fd);
}

static void connect_refused_nonblock(struct vt_ctx *c)
{
	char b1[64], b2[64];
	short rrev, trev;
	int port, rerr, terr;

	if (!vt_is_client(c)) {
		serve_closed_port(c);
		return;
	}
	port = su_recv_port(c);
	refused_nb_one(c, VT_FAMILY_INET, port, &rrev, &rerr);
	refused_nb_one(c, c->family, port, &trev, &terr);
	vt_send(c, "DONE");
	vt_assert(terr == ECONNREFUSED, "SO_ERROR %s, expected ECONNREFUSED",
		  vt_errname(terr));
	vt_assert(trev == rrev, "revents %s, TCP reports %s",
		  su_revents_str(trev, b1, sizeof(b1)),
		  su_revents_str(rrev, b2, sizeof(b2)));
	vt_assert(rerr == terr, "TCP reported SO_ERROR %s", vt_errname(rerr));
}

static void accept_nonblock(struct vt_ctx *c)
{
	int lfd, lfd2, fd;

	if (vt_is_client(c)) {
		fd = su_connect(c, c->family, false, su_recv_port(c));
		ping_pong(c, fd);
		close(fd);
		return;
	}
	lfd = su_listen(c->family, false, 4, SOCK_NONBLOCK);
	vt_expect_errno(accept(lfd, NULL, NULL), EAGAIN,
			"accept on a SOCK_NONBLOCK listener");
	lfd2 = su_listen(c->family, false, 4, 0);
	su_nonblock(lfd2, true);
	vt_expect_errno(accept4(lfd2, NULL, NULL, SOCK_CLOEXEC), EAGAIN,
			"accept4 on an O_NONBLOCK listener");
	close(lfd2);
	su_send_port(c, lfd);
	su_wait(lfd, POLLIN, "incoming connection");
	fd = accept(lfd, NULL, NULL);
	vt_assert(fd >= 0, "accept after POLLIN: %s", vt_errname(errno));
	vt_assert(!(fcntl(fd, F_GETFL) & O_NONBLOCK),
		  "accepted socket inherited O_NONBLOCK");
	ping_pong(c, fd);
	close(fd);
	close(lfd);
}

static void accept4_flags(struct vt_ctx *c)
{
	int lfd, a, b, fd1, fd2;
	char ch;

	if (vt_is_client(c)) {
		int port = su_recv_port(c);

		fd1 = su_connect(c, c->family, false, port);
		fd2 = su_connect(c, c->family, false, port);
		vt_expect(c, "CHECKED");
		su_write_all(fd1, "a", 1);
		su_write_all(fd2, "b", 1);
		vt_expect(c, "DONE");
		close(fd1);
		close(fd2);
		return;
	}
	lfd = su_listen(c->family, false, 4, 0);
	su_send_port(c, lfd);
	a = su_accept(lfd, SOCK_NONBLOCK | SOCK_CLOEXEC);
	vt_assert(fcntl(a, F_GETFL) & O_NONBLOCK,
		  "accept4(SOCK_NONBLOCK): O_NONBLOCK not set");
	vt_assert(fcntl(a, F_GETFD) & FD_CLOEXEC,
		  "accept4(SOCK_CLOEXEC): FD_CLOEXEC not set");
	vt_expect_errno(recv(a, &ch, 1, 0), EAGAIN,
			"recv on the SOCK_NONBLOCK accepted socket");
	b = su_accept(lfd, 0);
	vt_assert(!(fcntl(b, F_GETFL) & O_NONBLOCK),
		  "accept4(0): O_NONBLOCK set");
	vt_assert(!(fcntl(b, F_GETFD) & FD_CLOEXEC),
		  "accept4(0): FD_CLOEXEC set");
	vt_send(c, "CHECKED");
	su_wait(a, POLLIN, "data on the non-blocking socket");
	vt_try(read(a, &ch, 1), "read");
	su_read_all(b, &ch, 1);
	vt_send(c, "DONE");
	close(a);
	close(b);
	close(lfd);
}

/* Formatted local or peer name of @fd, checking family and length. */
static void name_of(int fd, bool peer, bool v6, char *buf, size_t size)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	const char *what = peer ? "getpeername" : "getsockname";

	memset(&ss, 0xa5, sizeof(ss));
	if (peer)
		vt_try(getpeername(fd, (struct sockaddr *)&ss, &len), what);
	else
		vt_try(getsockname(fd, (struct sockaddr *)&ss, &len), what);
	vt_assert(ss.ss_family == (v6 ? AF_INET6 : AF_INET),
		  "%s: family %d", what, ss.ss_family);
	vt_assert(len == (v6 ? sizeof(struct sockaddr_in6) :
			  sizeof(struct sockaddr_in)),
		  "%s: address length %u", what, len);
	su_addr_str((struct sockaddr *)&ss, buf, size);
}

static void getname_common(struct vt_ctx *c, bool v6)
{
	char me[80], peer[80], line[CTL_LINE_MAX], want[200];
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, lfd, port;

	if (vt_is_client(c)) {
		port = su_recv_port(c);
		fd = su_socket(c->family, v6, 0);
		len = sizeof(ss);
		vt_try(getsockname(fd, (struct sockaddr *)&ss, &len),
		       "getsockname (unbound)");
		vt_assert(ss.ss_family == (v6 ? AF_INET6 : AF_INET),
			  "getsockname (unbound): family %d", ss.ss_family);
		vt_assert(su_port(fd) == 0, "unbound socket has port %d",
			  su_port(fd));
		len = sizeof(ss);
		vt_expect_errno(getpeername(fd, (struct sockaddr *)&ss, &len),
				ENOTCONN, "getpeername (unconnected)");
		len = su_peer_addr(c, v6, port, &ss);
		vt_try(connect(fd, (struct sockaddr *)&ss, len), "connect");
		name_of(fd, false, v6, me, sizeof(me));
		name_of(fd, true, v6, peer, sizeof(peer));
		su_addr_str((struct sockaddr *)&ss, want, sizeof(want));
		vt_assert(!strcmp(peer, want), "getpeername %s, connected to %s",
			  peer, want);
	} else {
		struct sockaddr_storage from;
		socklen_t flen = sizeof(from);

		lfd = su_listen(c->family, v6, 4, 0);
		port = su_port(lfd);
		vt_assert(port > 0, "listener has no port");
		su_send_port(c, lfd);
		su_wait(lfd, POLLIN, "incoming connection");
		fd = accept(lfd, (struct sockaddr *)&from, &flen);
		vt_assert(fd >= 0, "accept: %s", vt_errname(errno));
		name_of(fd, false, v6, me, sizeof(me));
		name_of(fd, true, v6, peer, sizeof(peer));
		vt_assert(flen == (v6 ? sizeof(struct sockaddr_in6) :
				   sizeof(struct sockaddr_in)),
			  "accept: address length %u", flen);
		su_addr_str((struct sockaddr *)&from, want, sizeof(want));
		vt_assert(!strcmp(peer, want),
			  "accept() returned %s, getpeername %s", want, peer);
		vt_assert(su_port(fd) == port, "accepted socket port %d, not %d",
			  su_port(fd), port);
		close(lfd);
	}
	vt_send(c, "NAME %s %s", me, peer);
	vt_recv(c, line, sizeof(line));
	snprintf(want, sizeof(want), "NAME %s %s", peer, me);
	vt_assert(!strcmp(line, want),
		  "names do not match: here %s -> %s, peer says \"%s\"", me,
		  peer, line);
	close(fd);
}

static void getname(struct vt_ctx *c)
{
	getname_common(c, false);
}

static void getname_v6(struct vt_ctx *c)
{
	need_ipv6(c);
	getname_common(c, true);
}

/* ---- I/O system calls ---- */

enum io_api { IO_RW, IO_VEC, IO_SEND, IO_MSG };

static ssize_t io_out(int fd, enum io_api api, const unsigned char *buf,
		      size_t len)
{
	struct iovec iov[3];
	struct msghdr msg = { .msg_iov = iov };
	size_t a = len / 3, b = len / 2;

	switch (api) {
	case IO_RW:
		return write(fd, buf, len);
	case IO_SEND:
		return send(fd, buf, len, 0);
	case IO_VEC:
	default:
		iov[0] = (struct iovec){ (void *)buf, a };
		iov[1] = (struct iovec){ (void *)(buf + a), b - a };
		iov[2] = (struct iovec){ (void *)(buf + b), len - b };
		if (api == IO_VEC)
			return writev(fd, iov, 3);
		msg.msg_iovlen = 3;
		return sendmsg(fd, &msg, 0);
	}
}

static ssize_t io_in(int fd, enum io_api api, unsigned char *buf,
		     size_t len)
{
	struct sockaddr_storage name;
	struct iovec iov[2];
	struct msghdr msg = {
		.msg_iov = iov,
		.msg_iovlen = 2,
		.msg_name = &name,
		.msg_namelen = sizeof(name),
	};
	size_t a = len / 2;
	ssize_t ret;

	switch (api) {
	case IO_RW:
		return read(fd, buf, len);
	case IO_SEND:
		return recv(fd, buf, len, 0);
	case IO_VEC:
		iov[0] = (struct iovec){ buf, a };
		iov[1] = (struct iovec){ buf + a, len - a };
		return readv(fd, iov, 2);
	default:
		iov[0] = (struct iovec){ buf, a };
		iov[1] = (struct iovec){ buf + a, len - a };
		ret = recvmsg(fd, &msg, 0);
		if (ret >= 0) {
			vt_assert(msg.msg_flags == 0, "recvmsg: msg_flags 0x%x",
				  msg.msg_flags);
			vt_assert(msg.msg_namelen == 0,
				  "recvmsg: msg_namelen %u on a stream socket",
				  msg.msg_namelen);
		}
		return ret;
	}
}

static const char *const io_names[] = { "write/read", "writev/readv",
					"send/recv", "sendmsg/recvmsg" };

static void io_send_all(int fd, enum io_api api, const unsigned char *buf,
			size_t len)
{
	ssize_t ret;

	while (len) {
		ret = io_out(fd, api, buf, len);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret <= 0)
			vt_fail("%s: send side returned %zd: %s", io_names[api],
				ret, ret ? vt_errname(errno) : "");
		buf += ret;
		len -= (size_t)ret;
	}
}

static void io_recv_all(int fd, enum io_api api, unsigned char *buf,
			size_t len)
{
	ssize_t ret;

	while (len) {
		ret = io_in(fd, api, buf, len);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret <= 0)
			vt_fail("%s: receive side returned %zd: %s",
				io_names[api], ret,
				ret ? vt_errname(errno) : "EOF");
		buf += ret;
		len -= (size_t)ret;
	}
}

static void io_common(struct vt_ctx *c, enum io_api api)
{
	static unsigned char buf[5000];
	int fd = su_pair(c);
	unsigned char ch;

	if (vt_is_client(c)) {
		fill_pattern(buf, 3000, 1);
		io_send_all(fd, api, buf, 3000);
		memset(buf, 0, sizeof(buf));
		io_recv_all(fd, api, buf, 5000);
		check_pattern(buf, 5000, 2, io_names[api]);
	} else {
		memset(buf, 0, sizeof(buf));
		io_recv_all(fd, api, buf, 3000);
		check_pattern(buf, 3000, 1, io_names[api]);
		fill_pattern(buf, 5000, 2);
		io_send_all(fd, api, buf, 5000);
		vt_assert(io_in(fd, api, &ch, 1) == 0,
			  "%s: no EOF after the peer closed", io_names[api]);
	}
	close(fd);
}

static void io_read_write(struct vt_ctx *c)
{
	io_common(c, IO_RW);
}

static void io_readv_writev(struct vt_ctx *c)
{
	io_common(c, IO_VEC);
}

static void io_send_recv(struct vt_ctx *c)
{
	io_common(c, IO_SEND);
}

static void io_sendmsg_recvmsg(struct vt_ctx *c)
{
	io_common(c, IO_MSG);
}

/* ---- data integrity ---- */

static void data_common(struct vt_ctx *c, uint64_t len)
{
	int fd = su_pair(c);

	if (vt_is_client(c)) {
		pl_send(fd, len);
		vt_try(shutdown(fd, SHUT_WR), "shutdown(SHUT_WR)");
		pl_recv(fd, len);
	} else {
		pl_recv(fd, len);
		pl_send(fd, len);
	}
	close(fd);
}

static void data_1B(struct vt_ctx *c)
{
	data_common(c, 1);
}

static void data_1000B(struct vt_ctx *c)
{
	data_common(c, 1000);
}

static void data_64KiB(struct vt_ctx *c)
{
	data_common(c, 64 * KiB);
}

static void data_1MiB(struct vt_ctx *c)
{
	data_common(c, MiB);
}

static void data_16MiB(struct vt_ctx *c)
{
	data_common(c, 16 * MiB);
}

static void data_bidir(struct vt_ctx *c)
{
	int fd = su_pair(c);

	su_xfer(&fd, 1, 16 * MiB, 280 * 1000);
	close(fd);
}

#define NPAR 64

static void data_parallel64(struct vt_ctx *c)
{
	int fds[NPAR], i, lfd, port;

	if (vt_is_client(c)) {
		port = su_recv_port(c);
		for (i = 0; i < NPAR; i++)
			fds[i] = su_connect(c, c->family, false, port);
	} else {
		lfd = su_listen(c->family, false, 2 * NPAR, SOCK_CLOEXEC);
		su_send_port(c, lfd);
		for (i = 0; i < NPAR; i++)
			fds[i] = su_accept(lfd, SOCK_CLOEXEC);
		close(lfd);
	}
	su_xfer(fds, NPAR, 256 * KiB, 280 * 1000);
	for (i = 0; i < NPAR; i++)
		close(fds[i]);
}

static void data_v6(struct vt_ctx *c)
{
	int fd;

	need_ipv6(c);
	fd = su_pair_fam(c, c->family, true);
	su_xfer(&fd, 1, MiB, 110 * 1000);
	close(fd);
}

/* ---- shutdown and flags ---- */

static void shutdown_wr(struct vt_ctx *c)
{
	int fd = su_pair(c), un;
	char buf[8];

	if (vt_is_client(c)) {
		un = su_socket(c->family, false, 0);
		vt_expect_errno(shutdown(un, SHUT_WR), ENOTCONN,
				"shutdown on an unconnected socket");
		close(un);
		su_write_all(fd, "abc", 3);
		vt_try(shutdown(fd, SHUT_WR), "shutdown(SHUT_WR)");
		vt_expect_errno(send(fd, "x", 1, MSG_NOSIGNAL), EPIPE,
				"send after shutdown(SHUT_WR)");
		su_read_all(fd, buf, 5);
		vt_assert(!memcmp(buf, "reply", 5),
			  "data sent after our SHUT_WR corrupted");
		su_expect_eof(fd);
	} else {
		su_read_all(fd, buf, 3);
		vt_assert(!memcmp(buf, "abc", 3), "bad data");
		su_expect_eof(fd);
		vt_assert(su_poll(fd, POLLRDHUP, 0) & POLLRDHUP,
			  "no POLLRDHUP after the peer's SHUT_WR");
		su_write_all(fd, "reply", 5);
		su_expect_eof(fd);
	}
	close(fd);
}

static void msg_peek(struct vt_ctx *c)
{
	long long deadline = ctl_now_ms() + SU_WAIT_MS;
	int fd = su_pair(c);
	char a[16], b[16];
	ssize_t n;

	if (!vt_is_client(c)) {
		su_write_all(fd, "peekaboo", 8);
		su_expect_eof(fd);
		close(fd);
		return;
	}
	do {
		n = recv(fd, a, 8, MSG_PEEK | MSG_DONTWAIT);
		if (n < 0 && errno != EAGAIN)
			vt_fail("recv(MSG_PEEK): %s", vt_errname(errno));
		if (n < 8)
			usleep(5000);
	} while (n < 8 && ctl_now_ms() < deadline);
	vt_assert(n == 8 && !memcmp(a, "peekaboo", 8), "peek returned %zd",
		  n);
	n = recv(fd, a, 4, MSG_PEEK);
	vt_assert(n == 4 && !memcmp(a, "peek", 4), "second peek: %zd", n);
	n = recv(fd, b, sizeof(b), 0);
	vt_assert(n == 8 && !memcmp(b, "peekaboo", 8),
		  "recv after peek returned %zd", n);
	vt_expect_errno(recv(fd, a, 1, MSG_PEEK | MSG_DONTWAIT), EAGAIN,
			"peek with nothing queued");
	close(fd);
}

static void msg_waitall(struct vt_ctx *c)
{
	static unsigned char buf[4000];
	int fd = su_pair(c), i;
	ssize_t n;

	if (vt_is_client(c)) {
		vt_send(c, "GO");
		n = recv(fd, buf, sizeof(buf), MSG_WAITALL);
		vt_assert(n == (ssize_t)sizeof(buf),
			  "recv(MSG_WAITALL) returned %zd of %zu", n,
			  sizeof(buf));
		check_pattern(buf, sizeof(buf), 7, "MSG_WAITALL data");
		vt_send(c, "GOT");
		n = recv(fd, buf, 1000, MSG_WAITALL);
		vt_assert(n == 100,
			  "recv(MSG_WAITALL) at EOF returned %zd, expected the 100 bytes sent",
			  n);
	} else {
		fill_pattern(buf, sizeof(buf), 7);
		vt_expect(c, "GO");
		for (i = 0; i < 4; i++) {
			su_write_all(fd, buf + i * 1000, 1000);
			usleep(50000);
		}
		vt_expect(c, "GOT");
		su_write_all(fd, buf, 100);
		vt_try(shutdown(fd, SHUT_WR), "shutdown");
		su_expect_eof(fd);
	}
	close(fd);
}

static void msg_dontwait(struct vt_ctx *c)
{
	static char buf[65536];
	long long total = 0, left;
	int fd = su_pair(c);
	ssize_t n;

	if (vt_is_client(c)) {
		vt_expect_errno(recv(fd, buf, 1, MSG_DONTWAIT), EAGAIN,
				"recv(MSG_DONTWAIT) with nothing queued");
		vt_send(c, "SEND");
		su_wait(fd, POLLIN, "data");
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		vt_assert(n == 1 && buf[0] == 'z', "recv returned %zd", n);
		/* Fill the connection: the peer does not read yet. */
		for (;;) {
			n = send(fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (n < 0)
				break;
			total += n;
			vt_assert(total < 1LL << 30,
				  "send(MSG_DONTWAIT) never returned EAGAIN");
		}
		vt_expect_errno(n, EAGAIN, "send(MSG_DONTWAIT) on a full socket");
		vt_assert(!(fcntl(fd, F_GETFL) & O_NONBLOCK),
			  "MSG_DONTWAIT changed the file flags");
		vt_send_num(c, "TOTAL", total);
		vt_expect(c, "DRAINED");
		su_wait(fd, POLLOUT, "room to send");
		n = send(fd, buf, 1, MSG_DONTWAIT);
		vt_assert(n == 1, "send after the peer drained: %zd (%s)", n,
			  vt_errname(errno));
	} else {
		vt_expect(c, "SEND");
		su_write_all(fd, "z", 1);
		left = vt_recv_num(c, "TOTAL");
		while (left > 0) {
			n = read(fd, buf, left < (long long)sizeof(buf) ?
					  (size_t)left : sizeof(buf));
			vt_assert(n > 0, "read: %zd (%s)", n, vt_errname(errno));
			left -= n;
		}
		vt_send(c, "DRAINED");
		su_read_all(fd, buf, 1);
		su_expect_eof(fd);
	}
	close(fd);
}

/* Updated from a signal handler: accessed atomically only. */
static int sig_count;

static void count_signal(int sig)
{
	(void)sig;
	__atomic_add_fetch(&sig_count, 1, __ATOMIC_SEQ_CST);
}

static int signals_seen(void)
{
	return __atomic_load_n(&sig_count, __ATOMIC_SEQ_CST);
}

static void catch_signal(int sig, bool restart)
{
	struct sigaction sa = { .sa_handler = count_signal };

	sigemptyset(&sa.sa_mask);
	sa.sa_flags = restart ? SA_RESTART : 0;
	vt_try(sigaction(sig, &sa, NULL), "sigaction");
}

/* Send after the peer closed; returns the errno of the first failure. */
static int send_until_error(int fd, int flags)
{
	char buf[100] = { 0 };
	int i;

	for (i = 0; i < 1000; i++) {
		if (send(fd, buf, sizeof(buf), flags) < 0)
			return errno;
		usleep(10000);
	}
	vt_fail("send kept succeeding after the peer closed");
}

static void epipe_common(struct vt_ctx *c, bool nosignal)
{
	int fd = su_pair(c), err, status;
	pid_t pid;

	if (!vt_is_client(c)) {
		vt_expect(c, "CLOSE");
		close(fd);
		return;
	}
	catch_signal(SIGPIPE, true);
	vt_send(c, "CLOSE");
	su_expect_eof(fd);
	err = send_until_error(fd, nosignal ? MSG_NOSIGNAL : 0);
	vt_assert(err == EPIPE, "send after the peer closed: %s, expected EPIPE",
		  vt_errname(err));
	if (nosignal) {
		vt_assert(signals_seen() == 0,
			  "SIGPIPE raised despite MSG_NOSIGNAL");
		vt_expect_errno(send(fd, "x", 1, MSG_NOSIGNAL), EPIPE,
				"second send(MSG_NOSIGNAL)");
		vt_assert(signals_seen() == 0,
			  "SIGPIPE raised despite MSG_NOSIGNAL");
		close(fd);
		return;
	}
	vt_assert(signals_seen() == 1, "%d SIGPIPE for one failed send",
		  signals_seen());
	vt_expect_errno(write(fd, "x", 1), EPIPE, "write after EPIPE");
	vt_assert(signals_seen() == 2, "write: no SIGPIPE");
	/* Default action: the writer dies. */
	fflush(stdout);
	pid = fork();
	vt_try(pid, "fork");
	if (pid == 0) {
		signal(SIGPIPE, SIG_DFL);
		if (write(fd, "x", 1) < 0)
			_exit(3);
		_exit(4);
	}
	vt_try(waitpid(pid, &status, 0), "waitpid");
	vt_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGPIPE,
		  "writer with default SIGPIPE action was not killed by it (status 0x%x)",
		  status);
	close(fd);
}

static void msg_nosignal_epipe(struct vt_ctx *c)
{
	epipe_common(c, true);
}

static void sigpipe(struct vt_ctx *c)
{
	epipe_common(c, false);
}

/* ---- timeouts, watermarks, queue sizes ---- */

static void set_tv(int fd, int name, long usec)
{
	struct timeval tv = { .tv_sec = usec / 1000000,
			      .tv_usec = usec % 1000000 };

	vt_try(setsockopt(fd, SOL_SOCKET, name, &tv, sizeof(tv)),
	       "setsockopt(timeout)");
}

static void check_tv_like_tcp(int fd, int name, const char *what)
{
	struct timeval a, b;
	socklen_t la = sizeof(a), lb = sizeof(b);
	int ref = su_socket(VT_FAMILY_INET, false, 0);

	set_tv(ref, name, 200000);
	vt_try(getsockopt(fd, SOL_SOCKET, name, &a, &la), what);
	vt_try(getsockopt(ref, SOL_SOCKET, name, &b, &lb), what);
	vt_assert(la == lb && a.tv_sec == b.tv_sec && a.tv_usec == b.tv_usec,
		  "%s: %ld.%06ld s, TCP reports %ld.%06ld s", what,
		  (long)a.tv_sec, (long)a.tv_usec, (long)b.tv_sec,
		  (long)b.tv_usec);
	close(ref);
}

static void so_rcvtimeo(struct vt_ctx *c)
{
	long long deadline;
	int fd = su_pair(c), lfd;
	ssize_t n;
	char ch;

	if (!vt_is_client(c)) {
		lfd = su_listen(c->family, false, 4, 0);
		set_tv(lfd, SO_RCVTIMEO, 200000);
		vt_expect_errno(accept(lfd, NULL, NULL), EAGAIN,
				"accept with SO_RCVTIMEO and no connection");
		close(lfd);
		vt_expect(c, "SEND");
		su_write_all(fd, "k", 1);
		su_expect_eof(fd);
		close(fd);
		return;
	}
	set_tv(fd, SO_RCVTIMEO, 200000);
	check_tv_like_tcp(fd, SO_RCVTIMEO, "SO_RCVTIMEO");
	vt_expect_errno(recv(fd, &ch, 1, 0), EAGAIN,
			"recv with SO_RCVTIMEO and no data");
	vt_send(c, "SEND");
	deadline = ctl_now_ms() + SU_WAIT_MS;
	do {
		n = recv(fd, &ch, 1, 0);
		vt_assert(n == 1 || (n < 0 && errno == EAGAIN),
			  "recv: %zd (%s)", n, vt_errname(errno));
	} while (n < 0 && ctl_now_ms() < deadline);
	vt_assert(n == 1 && ch == 'k', "no data after the timeouts");
	close(fd);
}

static void so_sndtimeo(struct vt_ctx *c)
{
	static char buf[65536];
	long long total = 0, left;
	int fd = su_pair(c);
	ssize_t n;

	if (!vt_is_client(c)) {
		left = vt_recv_num(c, "TOTAL");
		while (left > 0) {
			n = read(fd, buf, left < (long long)sizeof(buf) ?
					  (size_t)left : sizeof(buf));
			vt_assert(n > 0, "read: %zd (%s)", n, vt_errname(errno));
			left -= n;
		}
		su_expect_eof(fd);
		close(fd);
		return;
	}
	su_setint(fd, SOL_SOCKET, SO_SNDBUF, 4096);
	set_tv(fd, SO_SNDTIMEO, 200000);
	check_tv_like_tcp(fd, SO_SNDTIMEO, "SO_SNDTIMEO");
	for (;;) {
		n = send(fd, buf, sizeof(buf), 0);
		if (n < 0)
			break;
		total += n;
		vt_assert(total < 1LL << 30, "blocking send never timed out");
	}
	vt_expect_errno(n, EAGAIN, "send on a full socket with SO_SNDTIMEO");
	vt_send_num(c, "TOTAL", total);
	close(fd);
}

static void so_rcvlowat(struct vt_ctx *c)
{
	int fd = su_pair(c);
	char buf[32];
	ssize_t n;
	short rev;

	if (!vt_is_client(c)) {
		vt_expect(c, "A");
		su_write_all(fd, "01234", 5);
		vt_expect(c, "B");
		su_write_all(fd, "56789", 5);
		su_expect_eof(fd);
		close(fd);
		return;
	}
	su_setint(fd, SOL_SOCKET, SO_RCVLOWAT, 10);
	vt_assert(su_getint(fd, SOL_SOCKET, SO_RCVLOWAT) == 10,
		  "SO_RCVLOWAT did not stick");
	vt_send(c, "A");
	su_wait_bytes(fd, 5);
	rev = su_poll(fd, POLLIN, 100);
	vt_assert(!(rev & POLLIN), "POLLIN with 5 bytes queued, SO_RCVLOWAT 10");
	vt_send(c, "B");
	su_wait(fd, POLLIN, "POLLIN with 10 bytes queued");
	n = recv(fd, buf, sizeof(buf), 0);
	vt_assert(n == 10 && !memcmp(buf, "0123456789", 10),
		  "recv returned %zd", n);
	close(fd);
}

static void fionread(struct vt_ctx *c)
{
	static unsigned char buf[1000];
	int fd = su_pair(c), lfd, val = -1;

	if (!vt_is_client(c)) {
		lfd = su_listen(c->family, false, 4, 0);
		vt_expect_errno(ioctl(lfd, SIOCINQ, &val), EINVAL,
				"SIOCINQ on a listener");
		close(lfd);
		vt_expect(c, "SEND");
		fill_pattern(buf, sizeof(buf), 3);
		su_write_all(fd, buf, sizeof(buf));
		su_expect_eof(fd);
		close(fd);
		return;
	}
	vt_try(ioctl(fd, FIONREAD, &val), "FIONREAD");
	vt_assert(val == 0, "FIONREAD %d on an idle connection", val);
	vt_send(c, "SEND");
	su_wait_bytes(fd, 1000);
	vt_try(ioctl(fd, FIONREAD, &val), "FIONREAD");
	vt_assert(val == 1000, "FIONREAD %d, expected 1000", val);
	vt_try(ioctl(fd, SIOCINQ, &val), "SIOCINQ");
	vt_assert(val == 1000, "SIOCINQ %d, expected 1000", val);
	su_read_all(fd, buf, 400);
	vt_try(ioctl(fd, FIONREAD, &val), "FIONREAD");
	vt_assert(val == 600, "FIONREAD %d after reading 400 of 1000", val);
	su_read_all(fd, buf + 400, 600);
	check_pattern(buf, sizeof(buf), 3, "data");
	vt_try(ioctl(fd, FIONREAD, &val), "FIONREAD");
	vt_assert(val == 0, "FIONREAD %d after reading everything", val);
	close(fd);
}

static void siocoutq(struct vt_ctx *c)
{
	static unsigned char buf[1000];
	long long deadline;
	int fd = su_pair(c), lfd, val = -1;

	if (!vt_is_client(c)) {
		lfd = su_listen(c->family, false, 4, 0);
		vt_expect_errno(ioctl(lfd, SIOCOUTQ, &val), EINVAL,
				"SIOCOUTQ on a listener");
		close(lfd);
		vt_expect(c, "SENT");
		su_read_all(fd, buf, sizeof(buf));
		check_pattern(buf, sizeof(buf), 5, "data");
		su_expect_eof(fd);
		close(fd);
		return;
	}
	vt_try(ioctl(fd, SIOCOUTQ, &val), "SIOCOUTQ");
	vt_assert(val == 0, "SIOCOUTQ %d on an idle connection", val);
	fill_pattern(buf, sizeof(buf), 5);
	su_write_all(fd, buf, sizeof(buf));
	vt_try(ioctl(fd, SIOCOUTQ, &val), "SIOCOUTQ");
	vt_assert(val >= 0 && val <= 1000, "SIOCOUTQ %d after sending 1000",
		  val);
	/* The peer acknowledges the data even though it does not read it. */
	deadline = ctl_now_ms() + SU_WAIT_MS;
	while (val && ctl_now_ms() < deadline) {
		usleep(5000);
		vt_try(ioctl(fd, SIOCOUTQ, &val), "SIOCOUTQ");
	}
	vt_assert(val == 0, "SIOCOUTQ still %d: data never acknowledged", val);
	vt_send(c, "SENT");
	close(fd);
}

/* ---- socket options ---- */

static void so_buffers(struct vt_ctx *c)
{
	static const int names[] = { SO_RCVBUF, SO_SNDBUF };
	static const char *const what[] = { "SO_RCVBUF", "SO_SNDBUF" };
	static const int vals[] = { 4096, 65536, 1 << 20 };
	int fd = su_pair(c), ref, i, j, a, b;

	ref = su_socket(VT_FAMILY_INET, false, 0);
	for (i = 0; i < 2; i++) {
		for (j = 0; j < 3; j++) {
			su_setint_at(fd, SOL_SOCKET, names[i], what[i], vals[j]);
			su_setint_at(ref, SOL_SOCKET, names[i], what[i],
				     vals[j]);
			a = su_getint_at(fd, SOL_SOCKET, names[i], what[i]);
			b = su_getint_at(ref, SOL_SOCKET, names[i], what[i]);
			vt_assert(a == b, "%s set to %d reads %d, TCP reads %d",
				  what[i], vals[j], a, b);
		}
	}
	close(ref);
	su_xfer(&fd, 1, 256 * KiB, 50 * 1000);
	close(fd);
}

static void so_keepalive(struct vt_ctx *c)
{
	int fd = su_pair(c), val;

	val = su_getint(fd, SOL_SOCKET, SO_KEEPALIVE);
	vt_assert(val == 0, "SO_KEEPALIVE %d by default", val);
	su_setint(fd, SOL_SOCKET, SO_KEEPALIVE, 1);
	val = su_getint(fd, SOL_SOCKET, SO_KEEPALIVE);
	vt_assert(val == 1, "SO_KEEPALIVE set to 1 reads %d", val);
	ping_pong(c, fd);
	su_setint(fd, SOL_SOCKET, SO_KEEPALIVE, 0);
	val = su_getint(fd, SOL_SOCKET, SO_KEEPALIVE);
	vt_assert(val == 0, "SO_KEEPALIVE set to 0 reads %d", val);
	close(fd);
}

/*
 * Kernels before 6.7 have no SOCK_CUSTOM_SOCKOPT, so setsockopt(SOL_SOCKET)
 * never reaches visock, and stable kernels refuse SO_REUSEPORT on sockets
 * that are not AF_INET/AF_INET6 (EOPNOTSUPP).  There the documented
 * SOL_VISOCK alias VISOCK_REUSEPORT must do the same; from 6.7 on
 * SO_REUSEPORT itself must work.
 */
static bool reuseport_limited_kernel(void)
{
	struct utsname u;
	int major = 0, minor = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return false;
	return major < 6 || (major == 6 && minor < 7);
}

static void set_reuseport(int fd, enum vt_family fam)
{
	int one = 1;

	if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one))) {
		vt_assert(errno == EOPNOTSUPP && fam == VT_FAMILY_VISOCK &&
			  reuseport_limited_kernel(),
			  "setsockopt(SO_REUSEPORT): %s", vt_errname(errno));
		su_setint_at(fd, SOL_VISOCK, VISOCK_REUSEPORT,
			     "VISOCK_REUSEPORT", 1);
	}
	vt_assert(su_getint(fd, SOL_SOCKET, SO_REUSEPORT) == 1,
		  "SO_REUSEPORT does not read back 1");
	if (fam == VT_FAMILY_VISOCK)
		vt_assert(su_getint_at(fd, SOL_VISOCK, VISOCK_REUSEPORT,
				       "VISOCK_REUSEPORT") == 1,
			  "VISOCK_REUSEPORT does not read back 1");
}

static int bind_port(enum vt_family fam, int port, bool reuseaddr,
		     bool reuseport)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port) };
	int fd = su_socket(fam, false, SOCK_CLOEXEC);

	if (reuseaddr) {
		su_setint(fd, SOL_SOCKET, SO_REUSEADDR, 1);
		vt_assert(su_getint(fd, SOL_SOCKET, SO_REUSEADDR) == 1,
			  "SO_REUSEADDR does not read back 1");
	}
	if (reuseport)
		set_reuseport(fd, fam);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		int err = errno;

		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

static void so_reuseaddr(struct vt_ctx *c)
{
	int lfd, fd, port;
	char ch;

	if (vt_is_client(c)) {
		port = su_recv_port(c);
		fd = su_connect(c, c->family, false, port);
		su_write_all(fd, "a", 1);
		su_expect_eof(fd);
		close(fd);
		vt_send(c, "CLOSED");
		vt_assert(su_recv_port(c) == port, "server changed the port");
		fd = su_connect(c, c->family, false, port);
		su_write_all(fd, "b", 1);
		su_expect_eof(fd);
		close(fd);
		return;
	}
	lfd = bind_port(c->family, 0, true, false);
	vt_assert(lfd >= 0, "bind: %s", vt_errname(errno));
	vt_try(listen(lfd, 4), "listen");
	port = su_port(lfd);
	su_send_port(c, lfd);
	fd = su_accept(lfd, 0);
	su_read_all(fd, &ch, 1);
	/* Close first: this side's end of the connection goes to TIME_WAIT. */
	close(fd);
	vt_expect(c, "CLOSED");
	close(lfd);
	lfd = bind_port(c->family, port, true, false);
	vt_assert(lfd >= 0,
		  "SO_REUSEADDR bind to port %d with a TIME_WAIT connection: %s",
		  port, vt_errname(errno));
	vt_try(listen(lfd, 4), "listen");
	su_send_port(c, lfd);
	fd = su_accept(lfd, 0);
	su_read_all(fd, &ch, 1);
	close(fd);
	close(lfd);
}

#define NREUSE 16

static void so_reuseport(struct vt_ctx *c)
{
	int l[2], fds[NREUSE], counts[2] = { 0, 0 }, i, n = 0, port, third;
	struct pollfd pfd[2];
	char ch;

	if (vt_is_client(c)) {
		port = su_recv_port(c);
		for (i = 0; i < NREUSE; i++) {
			fds[i] = su_connect(c, c->family, false, port);
			su_write_all(fds[i], "r", 1);
		}
		vt_expect(c, "ACCEPTED");
		for (i = 0; i < NREUSE; i++)
			close(fds[i]);
		return;
	}
	l[0] = bind_port(c->family, 0, false, true);
	vt_assert(l[0] >= 0, "bind: %s", vt_errname(errno));
	port = su_port(l[0]);
	l[1] = bind_port(c->family, port, false, true);
	vt_assert(l[1] >= 0, "second SO_REUSEPORT bind to port %d: %s", port,
		  vt_errname(errno));
	third = bind_port(c->family, port, false, false);
	vt_assert(third < 0 && errno == EADDRINUSE,
		  "bind without SO_REUSEPORT to a used port: %s",
		  third < 0 ? vt_errname(errno) : "succeeded");
	vt_try(listen(l[0], NREUSE), "listen");
	vt_try(listen(l[1], NREUSE), "listen");
	su_send_port(c, l[0]);
	while (n < NREUSE) {
		pfd[0] = (struct pollfd){ .fd = l[0], .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = l[1], .events = POLLIN };
		vt_assert(poll(pfd, 2, SU_WAIT_MS) > 0,
			  "only %d of %d connections arrived", n, NREUSE);
		for (i = 0; i < 2; i++) {
			if (!(pfd[i].revents & POLLIN))
				continue;
			fds[n] = accept(l[i], NULL, NULL);
			vt_assert(fds[n] >= 0, "accept: %s", vt_errname(errno));
			su_read_all(fds[n], &ch, 1);
			counts[i]++;
			n++;
		}
	}
	vt_diag("connections per listener: %d + %d", counts[0], counts[1]);
	vt_send(c, "ACCEPTED");
	for (i = 0; i < NREUSE; i++) {
		su_expect_eof(fds[i]);
		close(fds[i]);
	}
	close(l[0]);
	close(l[1]);
}

static void so_linger0(struct vt_ctx *c)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 }, got;
	socklen_t len = sizeof(got);
	int fd = su_pair(c), err;
	char ch;

	if (vt_is_client(c)) {
		vt_try(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)),
		       "setsockopt(SO_LINGER)");
		vt_try(getsockopt(fd, SOL_SOCKET, SO_LINGER, &got, &len),
		       "getsockopt(SO_LINGER)");
		vt_assert(len == sizeof(got) && got.l_onoff && !got.l_linger,
			  "SO_LINGER reads {%d, %d}", got.l_onoff,
			  got.l_linger);
		su_write_all(fd, "x", 1);
		vt_expect(c, "GOT");
		close(fd);
		vt_send(c, "CLOSED");
		return;
	}
	su_read_all(fd, &ch, 1);
	vt_send(c, "GOT");
	vt_expect(c, "CLOSED");
	vt_expect_errno(recv(fd, &ch, 1, 0), ECONNRESET,
			"recv after the peer closed with SO_LINGER {1, 0}");
	err = su_getint(fd, SOL_SOCKET, SO_ERROR);
	vt_assert(err == 0, "SO_ERROR %s after the reset was reported",
		  vt_errname(err));
	vt_assert(recv(fd, &ch, 1, 0) == 0, "no EOF after the reset");
	close(fd);
}

/*
 * Connections the client resets right after connect() are still returned
 * by accept(), as TCP does: each one gives (a prefix of) the bytes sent
 * and then ECONNRESET.
 */
#define NRESET		20
#define RESET_BYTES	1000

static void reset_before_accept(struct vt_ctx *c)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	char buf[RESET_BYTES], want[RESET_BYTES];
	int i, fd, lfd, port, got;
	ssize_t n;

	memset(want, 'r', sizeof(want));
	if (vt_is_client(c)) {
		port = su_recv_port(c);
		for (i = 0; i < NRESET; i++) {
			fd = su_connect(c, c->family, false, port);
			su_write_all(fd, want, sizeof(want));
			vt_try(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg,
					  sizeof(lg)), "setsockopt(SO_LINGER)");
			close(fd);
		}
		vt_send(c, "RESET");
		vt_expect(c, "DONE");
		return;
	}
	lfd = su_listen(c->family, false, 2 * NRESET, SOCK_CLOEXEC);
	su_send_port(c, lfd);
	vt_expect(c, "RESET");
	for (i = 0; i < NRESET; i++) {
		vt_assert(su_poll(lfd, POLLIN, 10000) & POLLIN,
			  "accept() has only %d of the %d reset connections",
			  i, NRESET);
		fd = su_accept(lfd, SOCK_CLOEXEC);
		got = 0;
		for (;;) {
			vt_assert(su_poll(fd, POLLIN, 10000) & POLLIN,
				  "connection %d: not readable after %d bytes",
				  i, got);
			n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (n <= 0)
				break;
			vt_assert(got + n <= RESET_BYTES &&
				  !memcmp(buf, want, n),
				  "connection %d: wrong data after %d bytes",
				  i, got);
			got += n;
		}
		vt_assert(n < 0 && errno == ECONNRESET,
			  "connection %d: %s after %d bytes, expected ECONNRESET",
			  i, n ? vt_errname(errno) : "EOF", got);
		close(fd);
	}
	vt_diag("accept() returned all %d connections reset after connect()",
		NRESET);
	close(lfd);
	vt_send(c, "DONE");
}

/* Set an int option on the socket under test and a TCP socket. */
static void int_opt_like_tcp(int fd, int ref, int level, int name,
			     const char *what, int val)
{
	int a, b, ea = 0, eb = 0;

	if (setsockopt(fd, level, name, &val, sizeof(val)))
		ea = errno;
	if (setsockopt(ref, level, name, &val, sizeof(val)))
		eb = errno;
	vt_assert(ea == eb, "setsockopt(%s, %d): %s, TCP: %s", what, val,
		  ea ? vt_errname(ea) : "ok", eb ? vt_errname(eb) : "ok");
	a = su_getint_at(fd, level, name, what);
	b = su_getint_at(ref, level, name, what);
	vt_assert(a == b, "%s reads %d after setting %d, TCP reads %d", what,
		  a, val, b);
	vt_assert(ea || a == val, "%s set to %d reads %d", what, val, a);
}

static void tcp_int_opts(struct vt_ctx *c, int name, const char *what,
			 const int *vals, int nvals)
{
	int fd = su_pair(c), ref, i, a, b;

	ref = su_socket(VT_FAMILY_INET, false, 0);
	a = su_getint_at(fd, IPPROTO_TCP, name, what);
	b = su_getint_at(ref, IPPROTO_TCP, name, what);
	vt_assert(a == b, "%s defaults to %d, TCP to %d", what, a, b);
	for (i = 0; i < nvals; i++)
		int_opt_like_tcp(fd, ref, IPPROTO_TCP, name, what, vals[i]);
	close(ref);
	ping_pong(c, fd);
	close(fd);
}

static void tcp_nodelay(struct vt_ctx *c)
{
	static const int vals[] = { 1, 0, 1 };

	tcp_int_opts(c, TCP_NODELAY, "TCP_NODELAY", vals, 3);
}

static void tcp_keepalive_opts(struct vt_ctx *c)
{
	static const int idle[] = { 30, 0, 7200 };
	static const int intvl[] = { 5, 0, 75 };
	static const int cnt[] = { 4, 0, 9 };

	tcp_int_opts(c, TCP_KEEPIDLE, "TCP_KEEPIDLE", idle, 3);
	tcp_int_opts(c, TCP_KEEPINTVL, "TCP_KEEPINTVL", intvl, 3);
	tcp_int_opts(c, TCP_KEEPCNT, "TCP_KEEPCNT", cnt, 3);
}

static void tcp_user_timeout(struct vt_ctx *c)
{
	static const int vals[] = { 5000, -1, 0 };

	tcp_int_opts(c, TCP_USER_TIMEOUT, "TCP_USER_TIMEOUT", vals, 3);
}

static void tcp_cork(struct vt_ctx *c)
{
	int fd = su_pair(c), ref, val;
	char buf[3];

	if (!vt_is_client(c)) {
		su_read_all(fd, buf, 3);
		vt_assert(!memcmp(buf, "abc", 3), "bad data");
		su_expect_eof(fd);
		close(fd);
		return;
	}
	ref = su_socket(VT_FAMILY_INET, false, 0);
	int_opt_like_tcp(fd, ref, IPPROTO_TCP, TCP_CORK, "TCP_CORK", 1);
	su_write_all(fd, "abc", 3);
	int_opt_like_tcp(fd, ref, IPPROTO_TCP, TCP_CORK, "TCP_CORK", 0);
	val = su_getint(fd, IPPROTO_TCP, TCP_CORK);
	vt_assert(val == 0, "TCP_CORK reads %d after uncorking", val);
	close(ref);
	close(fd);
}

static void get_cc(int fd, char *buf, size_t size)
{
	socklen_t len = (socklen_t)size;

	memset(buf, 0, size);
	vt_try(getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, buf, &len),
	       "getsockopt(TCP_CONGESTION)");
	vt_assert(len > 0 && len <= size, "TCP_CONGESTION length %u", len);
	buf[size - 1] = '\0';
}

static void tcp_congestion(struct vt_ctx *c)
{
	char a[17], b[17];
	int fd = su_pair(c), ref;

	ref = su_socket(VT_FAMILY_INET, false, 0);
	get_cc(fd, a, sizeof(a));
	get_cc(ref, b, sizeof(b));
	vt_assert(!strcmp(a, b), "default congestion control \"%s\", TCP \"%s\"",
		  a, b);
	vt_try(setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, "reno", 4),
	       "setsockopt(TCP_CONGESTION, reno)");
	get_cc(fd, a, sizeof(a));
	vt_assert(!strcmp(a, "reno"), "TCP_CONGESTION reads \"%s\" after reno",
		  a);
	vt_try(setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, b, strlen(b)),
	       "setsockopt(TCP_CONGESTION, default)");
	get_cc(fd, a, sizeof(a));
	vt_assert(!strcmp(a, b), "TCP_CONGESTION reads \"%s\" after \"%s\"",
		  a, b);
	close(ref);
	ping_pong(c, fd);
	close(fd);
}

static void tcp_info(struct vt_ctx *c)
{
	struct tcp_info ti, rti;
	socklen_t len = sizeof(ti), rlen = sizeof(rti);
	int fd = su_pair(c), ref;

	ping_pong(c, fd);
	ref = su_socket(VT_FAMILY_INET, false, 0);
	memset(&ti, 0xff, sizeof(ti));
	vt_try(getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len),
	       "getsockopt(TCP_INFO)");
	vt_try(getsockopt(ref, IPPROTO_TCP, TCP_INFO, &rti, &rlen),
	       "getsockopt(TCP_INFO) on TCP");
	vt_assert(len == rlen, "TCP_INFO length %u, TCP returns %u", len, rlen);
	vt_assert(ti.tcpi_state == TCP_ESTABLISHED,
		  "tcpi_state %u, expected TCP_ESTABLISHED", ti.tcpi_state);
	close(ref);
	vt_sync(c, "info");
	close(fd);
}

/* ---- poll and epoll, compared with plain TCP ---- */

static void compare_steps(const char *scenario, const char *const *steps,
			  int n, const short *tst, const short *ref,
			  const short *want, const char *fam)
{
	char b1[96], b2[96];
	int i;

	for (i = 0; i < n; i++) {
		vt_assert(tst[i] == ref[i], "%s, %s: %s reports %s, TCP %s",
			  scenario, steps[i], fam,
			  su_revents_str(tst[i], b1, sizeof(b1)),
			  su_revents_str(ref[i], b2, sizeof(b2)));
		vt_assert(!want || tst[i] == want[i],
			  "%s, %s: revents %s, expected %s", scenario, steps[i],
			  su_revents_str(tst[i], b1, sizeof(b1)),
			  su_revents_str(want[i], b2, sizeof(b2)));
	}
}

/*
 * Client observes: idle, data arrived, data read, peer SHUT_WR, own
 * SHUT_WR.  Server observes: idle, own SHUT_WR, peer SHUT_WR.
 */
static void poll_states_run(struct vt_ctx *c, enum vt_family fam, short *s)
{
	int fd = su_pair_fam(c, fam, false);
	char buf[10];

	if (vt_is_client(c)) {
		s[0] = su_poll(fd, PEV, 0);
		vt_send(c, "SEND");
		su_wait(fd, POLLIN, "data");
		su_wait_bytes(fd, 10);
		s[1] = su_poll(fd, PEV, 0);
		su_read_all(fd, buf, 10);
		s[2] = su_poll(fd, PEV, 0);
		vt_send(c, "SHUT");
		su_wait(fd, POLLRDHUP, "peer's SHUT_WR");
		s[3] = su_poll(fd, PEV, 0);
		/* The peer looks at its socket before we shut down too. */
		vt_expect(c, "SNAP");
		vt_try(shutdown(fd, SHUT_WR), "shutdown");
		s[4] = su_poll(fd, PEV, 0);
		vt_sync(c, "done");
	} else {
		s[0] = su_poll(fd, PEV, 0);
		vt_expect(c, "SEND");
		su_write_all(fd, "0123456789", 10);
		vt_expect(c, "SHUT");
		vt_try(shutdown(fd, SHUT_WR), "shutdown");
		s[1] = su_poll(fd, PEV, 0);
		vt_send(c, "SNAP");
		su_wait(fd, POLLRDHUP, "peer's SHUT_WR");
		s[2] = su_poll(fd, PEV, 0);
		vt_sync(c, "done");
	}
	close(fd);
}

static void poll_states(struct vt_ctx *c)
{
	static const char *const csteps[] = {
		"idle", "data queued", "data read", "after peer SHUT_WR",
		"after own SHUT_WR",
	};
	static const char *const ssteps[] = {
		"idle", "after own SHUT_WR", "after both SHUT_WR",
	};
	static const short cwant[] = {
		POLLOUT, POLLIN | POLLOUT, POLLOUT,
		POLLIN | POLLOUT | POLLRDHUP,
		POLLIN | POLLOUT | POLLRDHUP | POLLHUP,
	};
	static const short swant[] = {
		POLLOUT, POLLOUT, POLLIN | POLLOUT | POLLRDHUP | POLLHUP,
	};
	short ref[5] = { 0 }, tst[5] = { 0 };
	bool cl = vt_is_client(c);

	poll_states_run(c, VT_FAMILY_INET, ref);
	poll_states_run(c, c->family, tst);
	compare_steps("poll", cl ? csteps : ssteps, cl ? 5 : 3, tst, ref,
		      cl ? cwant : swant, fam_name(c->family));
}

/* Peer resets the connection: POLLERR, SO_ERROR, then EOF. */
static void poll_reset_run(struct vt_ctx *c, enum vt_family fam, short *s,
			   int *err, ssize_t *rd)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	int fd = su_pair_fam(c, fam, false);
	char ch;

	if (!vt_is_client(c)) {
		vt_expect(c, "RESET");
		vt_try(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)),
		       "SO_LINGER");
		close(fd);
		vt_sync(c, "done");
		return;
	}
	s[0] = su_poll(fd, PEV, 0);
	vt_send(c, "RESET");
	su_wait(fd, POLLERR, "reset from the peer");
	s[1] = su_poll(fd, PEV, 0);
	*err = su_getint(fd, SOL_SOCKET, SO_ERROR);
	s[2] = su_poll(fd, PEV, 0);
	*rd = recv(fd, &ch, 1, MSG_DONTWAIT);
	if (*rd < 0)
		*rd = -errno;
	vt_sync(c, "done");
	close(fd);
}

static void poll_reset(struct vt_ctx *c)
{
	static const char *const steps[] = {
		"idle", "after reset", "after reading SO_ERROR",
	};
	static const short want[] = {
		POLLOUT, POLLIN | POLLOUT | POLLERR | POLLHUP | POLLRDHUP,
		POLLIN | POLLOUT | POLLHUP | POLLRDHUP,
	};
	short ref[3] = { 0 }, tst[3] = { 0 };
	int rerr = 0, terr = 0;
	ssize_t rrd = 0, trd = 0;

	poll_reset_run(c, VT_FAMILY_INET, ref, &rerr, &rrd);
	poll_reset_run(c, c->family, tst, &terr, &trd);
	if (!vt_is_client(c))
		return;
	compare_steps("reset", steps, 3, tst, ref, want, fam_name(c->family));
	vt_assert(terr == ECONNRESET, "SO_ERROR %s after reset, expected ECONNRESET",
		  vt_errname(terr));
	vt_assert(rerr == terr, "TCP SO_ERROR %s", vt_errname(rerr));
	vt_assert(trd == 0 && rrd == 0,
		  "recv after the reset was reported: %zd, TCP %zd (0 = EOF)",
		  trd, rrd);
}

/* Unconnected socket, idle listener, listener with a pending connection. */
static void poll_listen_run(struct vt_ctx *c, enum vt_family fam, short *s)
{
	int fd, lfd;

	if (vt_is_client(c)) {
		struct sockaddr_storage ss;
		socklen_t len = su_peer_addr(c, false, su_recv_port(c), &ss);

		fd = su_socket(fam, false, SOCK_NONBLOCK);
		s[0] = su_poll(fd, PEV, 0);
		if (connect(fd, (struct sockaddr *)&ss, len) &&
		    errno != EINPROGRESS)
			vt_fail("connect: %s", vt_errname(errno));
		su_wait(fd, POLLOUT, "connection");
		s[1] = su_poll(fd, PEV, 0);
		vt_sync(c, "done");
		close(fd);
		return;
	}
	fd = su_socket(fam, false, 0);
	s[0] = su_poll(fd, PEV, 0);
	close(fd);
	lfd = su_listen(fam, false, 4, 0);
	s[1] = su_poll(lfd, PEV, 0);
	su_send_port(c, lfd);
	su_wait(lfd, POLLIN, "pending connection");
	s[2] = su_poll(lfd, PEV, 0);
	fd = su_accept(lfd, 0);
	s[3] = su_poll(lfd, PEV, 0);
	vt_sync(c, "done");
	close(fd);
	close(lfd);
}

static void poll_listen(struct vt_ctx *c)
{
	static const char *const csteps[] = { "new socket", "connected" };
	static const char *const ssteps[] = {
		"new socket", "idle listener", "pending connection",
		"after accept",
	};
	static const short cwant[] = { POLLOUT | POLLHUP, POLLOUT };
	static const short swant[] = { POLLOUT | POLLHUP, 0, POLLIN, 0 };
	short ref[4] = { 0 }, tst[4] = { 0 };
	bool cl = vt_is_client(c);

	poll_listen_run(c, VT_FAMILY_INET, ref);
	poll_listen_run(c, c->family, tst);
	compare_steps("poll", cl ? csteps : ssteps, cl ? 2 : 4, tst, ref,
		      cl ? cwant : swant, fam_name(c->family));
}

/* epoll_wait() once; returns the events of @fd or 0 (no event). */
static short ep_events(int ep, int fd, int timeout_ms)
{
	struct epoll_event ev[4];
	int n, i;
	short got = 0;

	do {
		n = epoll_wait(ep, ev, 4, timeout_ms);
	} while (n < 0 && errno == EINTR);
	vt_try(n, "epoll_wait");
	for (i = 0; i < n; i++) {
		vt_assert(ev[i].data.fd == fd, "event for an unknown fd");
		got |= (short)ev[i].events;
	}
	return got;
}

#define EPS 9

/*
 * Client watches its end with epoll (edge or level triggered) while the
 * server sends data twice and then shuts down writing.
 */
static void epoll_run(struct vt_ctx *c, enum vt_family fam, bool et,
		      short *s)
{
	struct epoll_event ev = {
		.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | (et ? EPOLLET : 0),
	};
	int fd = su_pair_fam(c, fam, false), ep;
	char buf[20];

	if (!vt_is_client(c)) {
		vt_expect(c, "SEND");
		su_write_all(fd, "0123456789", 10);
		vt_expect(c, "SEND");
		su_write_all(fd, "abcdefghij", 10);
		vt_expect(c, "SHUT");
		vt_try(shutdown(fd, SHUT_WR), "shutdown");
		su_expect_eof(fd);
		close(fd);
		return;
	}
	ep = (int)vt_try(epoll_create1(EPOLL_CLOEXEC), "epoll_create1");
	ev.data.fd = fd;
	vt_try(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), "epoll_ctl");
	s[0] = ep_events(ep, fd, 0);		/* just added */
	s[1] = ep_events(ep, fd, 0);		/* again */
	vt_send(c, "SEND");
	su_wait_bytes(fd, 10);
	s[2] = ep_events(ep, fd, SU_WAIT_MS);	/* data arrived */
	s[3] = ep_events(ep, fd, 0);		/* nothing new */
	vt_send(c, "SEND");
	su_wait_bytes(fd, 20);
	s[4] = ep_events(ep, fd, SU_WAIT_MS);	/* more data */
	su_read_all(fd, buf, 20);
	s[5] = ep_events(ep, fd, 0);		/* all read */
	vt_send(c, "SHUT");
	su_wait(fd, POLLRDHUP, "peer's SHUT_WR");
	s[6] = ep_events(ep, fd, SU_WAIT_MS);	/* peer shut down */
	s[7] = ep_events(ep, fd, 0);
	vt_try(shutdown(fd, SHUT_WR), "shutdown");
	s[8] = ep_events(ep, fd, SU_WAIT_MS);	/* own shutdown */
	close(ep);
	close(fd);
}

static const char *const ep_steps[EPS] = {
	"just added", "second wait", "data arrived", "data unread",
	"more data", "all read", "peer SHUT_WR", "again", "own SHUT_WR",
};

static void epoll_common(struct vt_ctx *c, bool et)
{
	static const short lt_want[EPS] = {
		EPOLLOUT, EPOLLOUT, EPOLLIN | EPOLLOUT, EPOLLIN | EPOLLOUT,
		EPOLLIN | EPOLLOUT, EPOLLOUT, EPOLLIN | EPOLLOUT | EPOLLRDHUP,
		EPOLLIN | EPOLLOUT | EPOLLRDHUP,
		EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLHUP,
	};
	static const short et_want[EPS] = {
		EPOLLOUT, 0, EPOLLIN | EPOLLOUT, 0, EPOLLIN | EPOLLOUT, 0,
		EPOLLIN | EPOLLOUT | EPOLLRDHUP, 0,
		EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLHUP,
	};
	short ref[EPS] = { 0 }, tst[EPS] = { 0 };

	epoll_run(c, VT_FAMILY_INET, et, ref);
	epoll_run(c, c->family, et, tst);
	if (vt_is_client(c))
		compare_steps(et ? "epoll edge" : "epoll level", ep_steps, EPS,
			      tst, ref, et ? et_want : lt_want,
			      fam_name(c->family));
}

static void epoll_level(struct vt_ctx *c)
{
	epoll_common(c, false);
}

static void epoll_edge(struct vt_ctx *c)
{
	epoll_common(c, true);
}

/* ---- processes ---- */

static void echo_1000(int fd)
{
	unsigned char buf[1000];

	su_read_all(fd, buf, sizeof(buf));
	su_write_all(fd, buf, sizeof(buf));
	su_expect_eof(fd);
}

static void client_echo_check(struct vt_ctx *c)
{
	unsigned char out[1000], in[1000];
	int fd = su_pair(c);

	fill_pattern(out, sizeof(out), 9);
	su_write_all(fd, out, sizeof(out));
	su_read_all(fd, in, sizeof(in));
	vt_assert(!memcmp(in, out, sizeof(in)), "echoed data differs");
	close(fd);
}

static void wait_helper(pid_t pid, const char *what)
{
	long long deadline = ctl_now_ms() + 30000;
	int status;
	pid_t ret;

	while ((ret = waitpid(pid, &status, WNOHANG)) == 0 &&
	       ctl_now_ms() < deadline)
		usleep(10000);
	if (ret == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		vt_fail("%s did not finish", what);
	}
	vt_try(ret, "waitpid");
	vt_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "%s failed (status 0x%x)", what, status);
}

static void fork_child_serves(struct vt_ctx *c)
{
	int lfd, fd;
	pid_t pid;

	if (vt_is_client(c)) {
		client_echo_check(c);
		return;
	}
	lfd = su_listen(c->family, false, 4, 0);
	su_send_port(c, lfd);
	fd = su_accept(lfd, 0);
	fflush(stdout);
	pid = fork();
	vt_try(pid, "fork");
	if (pid == 0) {
		close(lfd);
		echo_1000(fd);
		_exit(0);
	}
	close(fd);
	close(lfd);
	wait_helper(pid, "child serving the connection");
}

static void send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = "F", .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	vt_assert(sendmsg(sock, &msg, 0) == 1, "sendmsg(SCM_RIGHTS): %s",
		  vt_errname(errno));
}

static int recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))], ch;
	struct iovec iov = { .iov_base = &ch, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;
	int fd;

	su_wait(sock, POLLIN, "descriptor from the parent");
	vt_assert(recvmsg(sock, &msg, 0) == 1, "recvmsg(SCM_RIGHTS): %s",
		  vt_errname(errno));
	cm = CMSG_FIRSTHDR(&msg);
	vt_assert(cm && cm->cmsg_level == SOL_SOCKET &&
		  cm->cmsg_type == SCM_RIGHTS, "no SCM_RIGHTS message");
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

static void scm_rights(struct vt_ctx *c)
{
	int sv[2], lfd, fd, domain;
	pid_t pid;

	if (vt_is_client(c)) {
		client_echo_check(c);
		return;
	}
	vt_try(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), "socketpair");
	fflush(stdout);
	/* The child exists before the connection: it only gets it by fd. */
	pid = fork();
	vt_try(pid, "fork");
	if (pid == 0) {
		close(sv[0]);
		fd = recv_fd(sv[1]);
		domain = su_getint(fd, SOL_SOCKET, SO_DOMAIN);
		vt_assert(domain == (is_visock(c) ? AF_VISOCK : AF_INET),
			  "passed socket has SO_DOMAIN %d", domain);
		echo_1000(fd);
		_exit(0);
	}
	close(sv[1]);
	lfd = su_listen(c->family, false, 4, 0);
	su_send_port(c, lfd);
	fd = su_accept(lfd, 0);
	send_fd(sv[0], fd);
	close(fd);
	close(lfd);
	wait_helper(pid, "process serving the passed socket");
	close(sv[0]);
}

/* ---- signals ---- */

/* A process sending SIGUSR1 to us every 20 ms until killed. */
static pid_t start_pinger(void)
{
	pid_t parent = getpid(), pid;

	fflush(stdout);
	pid = fork();
	vt_try(pid, "fork");
	if (pid == 0) {
		while (getppid() == parent) {
			kill(parent, SIGUSR1);
			usleep(20000);
		}
		_exit(0);
	}
	return pid;
}

static void stop_pinger(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void eintr_setup(void)
{
	catch_signal(SIGUSR1, false);
	/* If the call is never interrupted, SIGALRM ends the test. */
	alarm(20);
}

static void eintr_recv(struct vt_ctx *c)
{
	int fd = su_pair(c), err;
	pid_t pinger;
	ssize_t ret;
	char ch;

	if (!vt_is_client(c)) {
		vt_expect(c, "DONE");
		close(fd);
		return;
	}
	eintr_setup();
	pinger = start_pinger();
	ret = recv(fd, &ch, 1, 0);
	err = errno;
	stop_pinger(pinger);
	alarm(0);
	vt_expect_errno_at(VT_WHERE, ret, err, EINTR,
			   "blocking recv interrupted by a signal");
	vt_send(c, "DONE");
	su_expect_eof(fd);
	close(fd);
}

static void eintr_accept(struct vt_ctx *c)
{
	pid_t pinger;
	int lfd, ret, err;

	if (vt_is_client(c)) {
		vt_sync(c, "done");
		return;
	}
	lfd = su_listen(c->family, false, 4, 0);
	eintr_setup();
	pinger = start_pinger();
	ret = accept(lfd, NULL, NULL);
	err = errno;
	stop_pinger(pinger);
	alarm(0);
	vt_expect_errno_at(VT_WHERE, ret, err, EINTR,
			   "blocking accept interrupted by a signal");
	close(lfd);
	vt_sync(c, "done");
}

static void eintr_connect(struct vt_ctx *c)
{
	struct sockaddr_storage ss;
	int fds[64], i, n = 0, ret = 0, err = 0, lfd;
	socklen_t len;
	pid_t pinger;

	if (!vt_is_client(c)) {
		/* Backlog 0: once one connection waits, further SYNs drop. */
		lfd = su_listen(c->family, false, 0, 0);
		su_send_port(c, lfd);
		vt_expect(c, "DONE");
		close(lfd);
		return;
	}
	len = su_peer_addr(c, false, su_recv_port(c), &ss);
	eintr_setup();
	pinger = start_pinger();
	for (i = 0; i < 64; i++) {
		fds[n] = su_socket(c->family, false, 0);
		ret = connect(fds[n], (struct sockaddr *)&ss, len);
		err = errno;
		n++;
		if (ret)
			break;
	}
	stop_pinger(pinger);
	alarm(0);
	vt_send(c, "DONE");
	vt_assert(ret, "64 connects to a full listener all succeeded");
	vt_expect_errno_at(VT_WHERE, ret, err, EINTR,
			   "blocking connect interrupted by a signal");
	for (i = 0; i < n; i++)
		close(fds[i]);
}

/* ---- zero copy paths ---- */

static int stream_memfd(uint64_t len, uint64_t *total)
{
	uint8_t *buf = malloc(65536);
	struct pl_tx tx;
	size_t n;
	int fd;

	vt_assert(buf, "out of memory");
	fd = (int)vt_try(memfd_create("visock-selftest", MFD_CLOEXEC),
			 "memfd_create");
	pl_tx_init(&tx, len);
	while ((n = pl_tx_fill(&tx, buf, 65536)))
		su_write_all(fd, buf, n);
	free(buf);
	*total = pl_total(len);
	return fd;
}

static void sendfile_to_sock(struct vt_ctx *c)
{
	int fd = su_pair(c), mfd;
	uint64_t total;
	off_t off = 0;
	ssize_t n;

	if (!vt_is_client(c)) {
		pl_recv(fd, MiB);
		close(fd);
		return;
	}
	mfd = stream_memfd(MiB, &total);
	while ((uint64_t)off < total) {
		n = sendfile(fd, mfd, &off, total - (uint64_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		vt_assert(n > 0, "sendfile returned %zd (%s) at offset %lld", n,
			  vt_errname(errno), (long long)off);
	}
	vt_try(shutdown(fd, SHUT_WR), "shutdown");
	su_expect_eof(fd);
	close(mfd);
	close(fd);
}

static void splice_from_sock(struct vt_ctx *c)
{
	int fd = su_pair(c), p[2];
	uint8_t *buf;
	struct pl_rx rx;
	ssize_t n, m;

	if (!vt_is_client(c)) {
		pl_send(fd, MiB);
		vt_try(shutdown(fd, SHUT_WR), "shutdown");
		su_expect_eof(fd);
		close(fd);
		return;
	}
	buf = malloc(65536);
	vt_assert(buf, "out of memory");
	vt_try(pipe(p), "pipe");
	pl_rx_init(&rx, MiB);
	for (;;) {
		n = splice(fd, NULL, p[1], NULL, 65536, SPLICE_F_MOVE);
		if (n < 0 && errno == EINTR)
			continue;
		vt_assert(n >= 0, "splice from the socket: %s",
			  vt_errname(errno));
		if (n == 0)
			break;
		while (n > 0) {
			m = read(p[0], buf, (size_t)n);
			vt_assert(m > 0, "read from the pipe: %s",
				  vt_errname(errno));
			pl_check(&rx, buf, (size_t)m);
			n -= m;
		}
	}
	vt_assert(pl_rx_done(&rx), "EOF after %llu stream bytes",
		  (unsigned long long)rx.pos);
	free(buf);
	close(p[0]);
	close(p[1]);
	close(fd);
}

static void splice_to_sock(struct vt_ctx *c)
{
	int fd = su_pair(c), p[2];
	uint8_t buf[16384];
	struct pl_tx tx;
	ssize_t n, m;

	if (!vt_is_client(c)) {
		pl_recv(fd, MiB);
		close(fd);
		return;
	}
	vt_try(pipe(p), "pipe");
	pl_tx_init(&tx, MiB);
	while ((n = (ssize_t)pl_tx_fill(&tx, buf, sizeof(buf)))) {
		su_write_all(p[1], buf, (size_t)n);
		while (n > 0) {
			m = splice(p[0], NULL, fd, NULL, (size_t)n,
				   SPLICE_F_MOVE);
			if (m < 0 && errno == EINTR)
				continue;
			vt_assert(m > 0, "splice to the socket: %s",
				  vt_errname(errno));
			n -= m;
		}
	}
	vt_try(shutdown(fd, SHUT_WR), "shutdown");
	su_expect_eof(fd);
	close(p[0]);
	close(p[1]);
	close(fd);
}

/* ---- visock specific ---- */

static int read_enable(void)
{
	FILE *f = fopen("/proc/sys/net/visock/enable", "r");
	int val = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &val) != 1)
		val = -1;
	fclose(f);
	return val;
}

static unsigned int visock_opt(int fd, int name, const char *what)
{
	socklen_t len = sizeof(__u32);
	__u32 val = 0xdeadbeef;

	if (getsockopt(fd, SOL_VISOCK, name, &val, &len))
		vt_fail("getsockopt(SOL_VISOCK, %s): %s (%s)", what,
			vt_errname(errno), strerror(errno));
	vt_assert(len == sizeof(__u32), "%s: optlen %u", what, len);
	return val;
}

/* ---- urgent data ---- */

/*
 * What an urgent data scenario showed the receiving half, as text: the
 * scenario runs on plain TCP and then on the sockets under test, and the
 * two texts must be the same.
 */
struct urg_log {
	char text[512];
	size_t len;
};

static __printf(2, 3) void urg_note(struct urg_log *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(l->text + l->len, sizeof(l->text) - l->len, fmt, ap);
	va_end(ap);
	vt_assert(n >= 0 && (size_t)n < sizeof(l->text) - l->len,
		  "urgent data log overflows");
	l->len += n;
}

static void urg_note_ret(struct urg_log *l, const char *what, ssize_t ret,
			 const char *buf)
{
	if (ret < 0)
		urg_note(l, " %s %s", what, vt_errname(errno));
	else
		urg_note(l, " %s '%.*s'", what, (int)ret, buf);
}

static int urg_atmark(int fd)
{
	int val = -1;

	vt_try(ioctl(fd, SIOCATMARK, &val), "ioctl(SIOCATMARK)");
	return val;
}

/*
 * After ping_pong(): does the connection carry the application's bytes on
 * TCP?  Both halves must agree; plain TCP sockets always do.
 */
static bool urg_on_tcp(struct vt_ctx *c, enum vt_family fam, int fd)
{
	unsigned int mode = VISOCK_MODE_TCP;
	long long peer;

	if (fam == VT_FAMILY_VISOCK)
		mode = visock_opt(fd, VISOCK_MODE, "VISOCK_MODE");
	if (vt_is_client(c)) {
		vt_send_num(c, "MODE", mode);
	} else {
		peer = vt_recv_num(c, "MODE");
		vt_assert(peer == mode, "VISOCK_MODE %u here, %lld at the peer",
			  mode, peer);
	}
	return mode == VISOCK_MODE_TCP;
}

/* A visock connection on RDMA: urgent data is refused, the stream works. */
static void urg_refused(struct vt_ctx *c, int fd)
{
	char ch;

	vt_expect_errno(send(fd, "!", 1, MSG_OOB), EOPNOTSUPP,
			"RDMA mode: send(MSG_OOB)");
	vt_expect_errno(recv(fd, &ch, 1, MSG_OOB | MSG_DONTWAIT), EOPNOTSUPP,
			"RDMA mode: recv(MSG_OOB)");
	vt_assert(!(su_poll(fd, POLLPRI, 0) & POLLPRI), "RDMA mode: POLLPRI");
	vt_assert(urg_atmark(fd) == 0, "RDMA mode: SIOCATMARK is not 0");
	vt_sync(c, "refused");
	ping_pong(c, fd);
	if (!vt_is_client(c))
		vt_diag("RDMA mode: urgent data refused, as expected");
}

/*
 * Both ends of an urgent-data run after the connection is up: false if
 * the connection is on RDMA (urg_refused() checked it, @fd is closed).
 * The client then sends @urg with MSG_OOB when the server says SEND,
 * writes @tail, and is done (@fd closed, *@done set); the server goes
 * on with its checks.
 */
static bool urg_send_phase(struct vt_ctx *c, enum vt_family fam, int fd,
			   const char *urg, const char *tail, bool *done)
{
	*done = false;
	ping_pong(c, fd);
	if (!urg_on_tcp(c, fam, fd)) {
		urg_refused(c, fd);
		close(fd);
		return false;
	}
	if (!vt_is_client(c))
		return true;
	vt_expect(c, "SEND");
	vt_assert(send(fd, urg, strlen(urg), MSG_OOB) == (ssize_t)strlen(urg),
		  "send(MSG_OOB): %s", vt_errname(errno));
	su_write_all(fd, tail, strlen(tail));
	vt_sync(c, "done");
	close(fd);
	*done = true;
	return true;
}

/*
 * send(MSG_OOB) of "abc", then "d": the receiver reads "ab" up to the
 * mark, the urgent 'c' with recv(MSG_OOB), then "d".  Logs poll's
 * POLLPRI, SIGURG, SIOCATMARK and recv(MSG_OOB) on the way.  Returns
 * false for a visock connection on RDMA (checked by urg_refused()).
 */
static bool msg_oob_run(struct vt_ctx *c, enum vt_family fam,
			struct urg_log *l)
{
	int fd = su_pair_fam(c, fam, false);
	char buf[16];
	bool done;
	ssize_t n;
	int sigs;

	if (!urg_send_phase(c, fam, fd, "abc", "d", &done))
		return false;
	if (done)
		return true;
	catch_signal(SIGURG, true);
	vt_try(fcntl(fd, F_SETOWN, getpid()), "F_SETOWN");
	sigs = signals_seen();
	urg_note(l, "idle: pri %d atmark %d",
		 !!(su_poll(fd, POLLPRI, 0) & POLLPRI), urg_atmark(fd));
	n = recv(fd, buf, 1, MSG_OOB | MSG_DONTWAIT);
	urg_note_ret(l, "oob", n, buf);
	vt_send(c, "SEND");
	su_wait(fd, POLLPRI, "urgent data");
	urg_note(l, "; urgent: sigurg %d atmark %d",
		 signals_seen() > sigs, urg_atmark(fd));
	n = recv(fd, buf, sizeof(buf), 0);
	urg_note_ret(l, "read", n, buf);
	urg_note(l, " atmark %d", urg_atmark(fd));
	n = recv(fd, buf, 1, MSG_OOB);
	urg_note_ret(l, "oob", n, buf);
	n = recv(fd, buf, 1, MSG_OOB | MSG_DONTWAIT);
	urg_note_ret(l, "oob", n, buf);
	urg_note(l, " pri %d", !!(su_poll(fd, POLLPRI, 0) & POLLPRI));
	su_read_all(fd, buf, 1);
	urg_note_ret(l, "read", 1, buf);
	urg_note(l, " atmark %d", urg_atmark(fd));
	vt_sync(c, "done");
	close(fd);
	signal(SIGURG, SIG_DFL);
	return true;
}

static void urg_compare(struct vt_ctx *c, const char *what,
			const struct urg_log *ref, const struct urg_log *tst,
			const char *const *want)
{
	struct urg_log w = { };

	if (vt_is_client(c))
		return;
	for (; *want; want++)
		urg_note(&w, "%s", *want);
	vt_diag("%s on TCP: %s", what, ref->text);
	vt_assert(!strcmp(ref->text, w.text),
		  "%s: TCP itself shows \"%s\", the test expects \"%s\"",
		  what, ref->text, w.text);
	vt_assert(!strcmp(tst->text, ref->text),
		  "%s on %s: \"%s\", TCP: \"%s\"", what, fam_name(c->family),
		  tst->text, ref->text);
}

static void msg_oob(struct vt_ctx *c)
{
	static const char *const want[] = {
		"idle: pri 0 atmark 0 oob EINVAL",
		"; urgent: sigurg 1 atmark 0 read 'ab' atmark 1 oob 'c'",
		" oob EINVAL pri 0 read 'd' atmark 0",
		NULL,
	};
	struct urg_log ref = { }, tst = { };

	msg_oob_run(c, VT_FAMILY_INET, &ref);
	if (msg_oob_run(c, c->family, &tst))
		urg_compare(c, "urgent data", &ref, &tst, want);
}

/*
 * SO_OOBINLINE: the urgent byte of "xyz" stays in the stream, "xy" up to
 * the mark, then "z" and the following "w"; recv(MSG_OOB) fails.
 */
static bool so_oobinline_run(struct vt_ctx *c, enum vt_family fam,
			     struct urg_log *l)
{
	int fd = su_pair_fam(c, fam, false);
	char buf[16];
	bool done;
	ssize_t n;

	if (!vt_is_client(c)) {
		su_setint(fd, SOL_SOCKET, SO_OOBINLINE, 1);
		urg_note(l, "opt %d",
			 su_getint(fd, SOL_SOCKET, SO_OOBINLINE));
	}
	if (!urg_send_phase(c, fam, fd, "xyz", "w", &done))
		return false;
	if (done)
		return true;
	vt_send(c, "SEND");
	su_wait(fd, POLLPRI, "urgent data");
	urg_note(l, "; urgent: atmark %d", urg_atmark(fd));
	n = recv(fd, buf, sizeof(buf), 0);
	urg_note_ret(l, "read", n, buf);
	urg_note(l, " atmark %d", urg_atmark(fd));
	n = recv(fd, buf, 1, MSG_OOB | MSG_DONTWAIT);
	urg_note_ret(l, "oob", n, buf);
	su_read_all(fd, buf, 2);
	urg_note_ret(l, "read", 2, buf);
	urg_note(l, " atmark %d", urg_atmark(fd));
	su_setint(fd, SOL_SOCKET, SO_OOBINLINE, 0);
	urg_note(l, " opt %d", su_getint(fd, SOL_SOCKET, SO_OOBINLINE));
	vt_sync(c, "done");
	close(fd);
	return true;
}

static void so_oobinline(struct vt_ctx *c)
{
	static const char *const want[] = {
		"opt 1",
		"; urgent: atmark 0 read 'xy' atmark 1 oob EINVAL",
		" read 'zw' atmark 0 opt 0",
		NULL,
	};
	struct urg_log ref = { }, tst = { };

	so_oobinline_run(c, VT_FAMILY_INET, &ref);
	if (so_oobinline_run(c, c->family, &tst))
		urg_compare(c, "SO_OOBINLINE", &ref, &tst, want);
}

static void visock_tcp_fallback(struct vt_ctx *c)
{
	unsigned int mode, reason;
	int fd, en;

	if (!is_visock(c))
		vt_skip("family inet: no AF_VISOCK socket options");
	en = read_enable();
	vt_agree(c, en == 0, en < 0 ?
		 "cannot read /proc/sys/net/visock/enable" :
		 "net.visock.enable is not 0 on this host");
	fd = su_pair(c);
	ping_pong(c, fd);
	mode = visock_opt(fd, VISOCK_MODE, "VISOCK_MODE");
	reason = visock_opt(fd, VISOCK_FALLBACK_REASON,
			    "VISOCK_FALLBACK_REASON");
	vt_sync(c, "checked");
	vt_assert(mode == VISOCK_MODE_TCP,
		  "VISOCK_MODE %u, expected VISOCK_MODE_TCP (%d)", mode,
		  VISOCK_MODE_TCP);
	vt_assert(reason == VISOCK_FB_DISABLED,
		  "VISOCK_FALLBACK_REASON %u, expected VISOCK_FB_DISABLED (%d)",
		  reason, VISOCK_FB_DISABLED);
	close(fd);
}

#define T(fn, to)  { #fn, fn, fn, to, NULL }

static const struct vt_test tests[] = {
	T(connect_accept, 0),
	T(connect_accept_v6, 0),
	T(so_domain_type, 0),
	T(connect_nonblock, 0),
	T(connect_refused, 0),
	T(connect_refused_nonblock, 0),
	T(accept_nonblock, 0),
	T(accept4_flags, 0),
	T(getname, 0),
	T(getname_v6, 0),
	T(io_read_write, 0),
	T(io_readv_writev, 0),
	T(io_send_recv, 0),
	T(io_sendmsg_recvmsg, 0),
	T(data_1B, 0),
	T(data_1000B, 0),
	T(data_64KiB, 0),
	T(data_1MiB, 120),
	T(data_16MiB, 300),
	T(data_bidir, 300),
	T(data_parallel64, 300),
	T(data_v6, 120),
	T(shutdown_wr, 0),
	T(msg_peek, 0),
	T(msg_waitall, 0),
	T(msg_dontwait, 120),
	T(msg_nosignal_epipe, 0),
	T(sigpipe, 0),
	T(msg_oob, 0),
	T(so_oobinline, 0),
	T(so_rcvtimeo, 0),
	T(so_sndtimeo, 120),
	T(so_rcvlowat, 0),
	T(fionread, 0),
	T(siocoutq, 0),
	T(so_buffers, 0),
	T(so_keepalive, 0),
	T(so_reuseaddr, 0),
	T(so_reuseport, 0),
	T(so_linger0, 0),
	T(reset_before_accept, 0),
	T(tcp_nodelay, 0),
	T(tcp_cork, 0),
	T(tcp_keepalive_opts, 0),
	T(tcp_user_timeout, 0),
	T(tcp_congestion, 0),
	T(tcp_info, 0),
	T(poll_states, 0),
	T(poll_reset, 0),
	T(poll_listen, 0),
	T(epoll_level, 0),
	T(epoll_edge, 0),
	T(fork_child_serves, 0),
	T(scm_rights, 0),
	T(eintr_recv, 0),
	T(eintr_accept, 0),
	T(eintr_connect, 0),
	T(sendfile_to_sock, 120),
	T(splice_from_sock, 120),
	T(splice_to_sock, 120),
	T(visock_tcp_fallback, 0),
};

int main(int argc, char **argv)
{
	return vt_main(argc, argv, "visock_stream", tests,
		       ARRAY_SIZE(tests));
}
