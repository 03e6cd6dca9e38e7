// SPDX-License-Identifier: GPL-2.0
/*
 * Transparent redirect of AF_INET/AF_INET6 TCP sockets to visock: the
 * module's inet protosw (IPPROTO_VISOCK) and the BPF program that
 * visock_redirect(8) attaches to update_socket_protocol() (6.6+).  One
 * host, loopback.  run_tests.sh runs the tests in three phases, loading
 * the redirect with
 *   --comm vr_redirected --uid 4242 --cgroup $VISOCK_TEST_CGROUP
 *   --exclude-comm vr_excluded
 * before the second and unloading it before the third.  A test sets the
 * comm that the BPF program sees with prctl(PR_SET_NAME) before its
 * socket() calls: the program looks at the comm at socket() time.
 *
 * Without redirect:
 * inet_direct	socket(AF_INET, SOCK_STREAM, IPPROTO_VISOCK) is a visock
 *		socket that looks like an inet one and carries data
 * inet6_direct	the same for AF_INET6
 * inet_reuseport SO_REUSEPORT works natively: two listeners share a port
 * policy_netns	destination policy rules are per network namespace
 *		(IPPROTO_VISOCK sockets, every kernel; policy_tests.c)
 * policy_unpriv	changing them needs CAP_NET_ADMIN (EPERM otherwise)
 * With the redirect loaded:
 * comm_match	plain TCP sockets of a listed comm become visock sockets
 *		(IPv4 and IPv6) and carry data
 * comm_other	another comm's sockets stay TCP
 * type_flags	SOCK_NONBLOCK/SOCK_CLOEXEC and IPPROTO_TCP are redirected
 *		too (and keep their flags); datagram sockets are not
 * uid_match	a listed uid's sockets are redirected
 * cgroup_match	sockets of a task in a listed cgroup are redirected, an
 *		excluded comm wins over the cgroup
 * disabled	net.visock.enable=0: redirected connections are plain TCP,
 *		fallback reason DISABLED
 * enabled	net.visock.enable=1: they do the visock handshake
 * After unloading:
 * after_unload	nothing is redirected any more
 * Between two hosts, in the handshake pass (net.visock.enable=1, RDMA
 * between the hosts), with the redirect loaded on both for vr_redirected:
 * xhost_rdma	plain TCP sockets on both ends become visock sockets that
 *		switch to RDMA and carry data
 * xhost_policy	a redirected socket connecting to a denied port is plain
 *		TCP with reason POLICY, to another port RDMA (policy_tests.c)
 * With the module reloaded with inet_proto=262 (IPPROTO_MPTCP, taken):
 * proto_taken	the module left MPTCP's protosw alone (socket(AF_INET,
 *		SOCK_STREAM, 262) is still MPTCP) and AF_VISOCK still works
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/visock.h>

#include "harness.h"
#include "ktap.h"
#include "policy_tests.h"
#include "sockutil.h"

#define ENABLE_PATH	"/proc/sys/net/visock/enable"
#define PROTO_PATH	"/sys/module/visock/parameters/inet_proto"
#define TEST_UID	4242

static int ipproto_visock = IPPROTO_VISOCK;
static int orig_enable = -1;

static void set_comm(const char *comm)
{
	vt_try(prctl(PR_SET_NAME, comm, 0, 0, 0), "prctl(PR_SET_NAME)");
}

static int write_int(const char *path, int v)
{
	FILE *f = fopen(path, "we");
	int ret;

	if (!f)
		return -1;
	ret = fprintf(f, "%d\n", v) < 0 ? -1 : 0;
	if (fclose(f))
		ret = -1;
	return ret;
}

static void set_enable(int v)
{
	vt_assert(!write_int(ENABLE_PATH, v), "cannot write %s: %s",
		  ENABLE_PATH, vt_errname(errno));
}

/* Restore net.visock.enable after every test, however it ended. */
static void restore_enable(const struct vt_ctx *c)
{
	(void)c;
	pt_cleanup();
	if (orig_enable >= 0)
		write_int(ENABLE_PATH, orig_enable);
}

static bool is_visock(int fd)
{
	socklen_t len = sizeof(int);
	int mode;

	return !getsockopt(fd, SOL_VISOCK, VISOCK_MODE, &mode, &len);
}

/* @fd must be a visock socket of family @family in every respect. */
static void expect_inet_visock(int fd, int family, const char *what)
{
	int d = su_getint(fd, SOL_SOCKET, SO_DOMAIN);
	int p = su_getint(fd, SOL_SOCKET, SO_PROTOCOL);
	int t = su_getint(fd, SOL_SOCKET, SO_TYPE);

	vt_assert(d == family, "%s: SO_DOMAIN %d, want %d", what, d, family);
	vt_assert(p == ipproto_visock, "%s: SO_PROTOCOL %d, want %d", what, p,
		  ipproto_visock);
	vt_assert(t == SOCK_STREAM, "%s: SO_TYPE %d", what, t);
	vt_assert(is_visock(fd), "%s: getsockopt(SOL_VISOCK, VISOCK_MODE): %s",
		  what, vt_errname(errno));
}

/* @fd must be an ordinary TCP socket of family @family. */
static void expect_tcp(int fd, int family, const char *what)
{
	int d = su_getint(fd, SOL_SOCKET, SO_DOMAIN);
	int p = su_getint(fd, SOL_SOCKET, SO_PROTOCOL);

	vt_assert(d == family, "%s: SO_DOMAIN %d, want %d", what, d, family);
	vt_assert(p == IPPROTO_TCP, "%s: SO_PROTOCOL %d, want TCP (%d)", what,
		  p, IPPROTO_TCP);
	vt_assert(!is_visock(fd), "%s: SOL_VISOCK works on a TCP socket",
		  what);
}

static socklen_t loop_addr(int family, int port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		s6->sin6_addr = in6addr_loopback;
		return sizeof(*s6);
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

	s4->sin_family = AF_INET;
	s4->sin_port = htons(port);
	s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sizeof(*s4);
}

static int new_socket(int family, int protocol)
{
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, protocol);

	vt_assert(fd >= 0, "socket(%s, SOCK_STREAM, %d): %s",
		  family == AF_INET6 ? "AF_INET6" : "AF_INET", protocol,
		  vt_errname(errno));
	return fd;
}

static int loop_listen(int family, int protocol, bool reuseport, int port)
{
	struct sockaddr_storage ss;
	int fd = new_socket(family, protocol), one = 1;
	socklen_t len = loop_addr(family, port, &ss);

	if (reuseport)
		vt_try(setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one,
				  sizeof(one)), "setsockopt(SO_REUSEPORT)");
	vt_try(bind(fd, (struct sockaddr *)&ss, len), "bind");
	vt_try(listen(fd, 16), "listen");
	return fd;
}

static int loop_connect(int family, int protocol, int port)
{
	struct sockaddr_storage ss;
	int fd = new_socket(family, protocol);
	socklen_t len = loop_addr(family, port, &ss);

	vt_try(connect(fd, (struct sockaddr *)&ss, len), "connect");
	return fd;
}

/* Both ways, checked byte for byte. */
static void pingpong(int a, int b)
{
	unsigned char out[65536], in[sizeof(out)];
	size_t i;

	for (i = 0; i < sizeof(out); i++)
		out[i] = (unsigned char)(i * 13 + (i >> 8));
	su_write_all(a, out, sizeof(out));
	su_read_all(b, in, sizeof(in));
	vt_assert(!memcmp(in, out, sizeof(in)), "data differs");
	su_write_all(b, in, sizeof(in));
	su_read_all(a, out, sizeof(out));
	vt_assert(!memcmp(in, out, sizeof(in)), "echoed data differs");
}

struct conn {
	int lfd, cfd, sfd;
};

/* Listener, client and accepted socket over loopback, all @protocol. */
static void conn_open(struct conn *k, int family, int protocol)
{
	k->lfd = loop_listen(family, protocol, false, 0);
	k->cfd = loop_connect(family, protocol, su_port(k->lfd));
	k->sfd = su_accept(k->lfd, SOCK_CLOEXEC);
}

static void conn_close(struct conn *k)
{
	close(k->cfd);
	su_expect_eof(k->sfd);
	close(k->sfd);
	close(k->lfd);
}

/* socket(@family, SOCK_STREAM, IPPROTO_VISOCK) works, or skip. */
static void need_protosw(int family)
{
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, ipproto_visock);

	if (fd >= 0) {
		close(fd);
		return;
	}
	if (family == AF_INET6 &&
	    (errno == EAFNOSUPPORT || access("/proc/sys/net/ipv6", F_OK)))
		vt_skip("IPv6 is disabled");
	vt_fail("socket(%s, SOCK_STREAM, %d): %s (inet protosw not registered?)",
		family == AF_INET6 ? "AF_INET6" : "AF_INET", ipproto_visock,
		vt_errname(errno));
}

static void direct(int family)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct visock_info info;
	struct conn k;
	int one = 1;

	need_protosw(family);
	conn_open(&k, family, ipproto_visock);
	expect_inet_visock(k.lfd, family, "listener");
	expect_inet_visock(k.cfd, family, "client");
	expect_inet_visock(k.sfd, family, "accepted");
	vt_try(getsockname(k.cfd, (struct sockaddr *)&ss, &len), "getsockname");
	vt_assert(ss.ss_family == family, "getsockname: family %d",
		  ss.ss_family);
	len = sizeof(ss);
	vt_try(getpeername(k.sfd, (struct sockaddr *)&ss, &len), "getpeername");
	vt_assert(ss.ss_family == family, "getpeername: family %d",
		  ss.ss_family);
	/* What TCP programs commonly do with their sockets. */
	vt_try(setsockopt(k.cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)),
	       "setsockopt(TCP_NODELAY)");
	vt_assert(su_getint(k.cfd, IPPROTO_TCP, TCP_NODELAY) == 1,
		  "TCP_NODELAY does not read back 1");
	len = sizeof(info);
	vt_try(getsockopt(k.sfd, SOL_VISOCK, VISOCK_INFO, &info, &len),
	       "getsockopt(VISOCK_INFO)");
	pingpong(k.cfd, k.sfd);
	vt_diag("mode %d, fallback reason %d",
		su_getint(k.cfd, SOL_VISOCK, VISOCK_MODE),
		su_getint(k.cfd, SOL_VISOCK, VISOCK_FALLBACK_REASON));
	conn_close(&k);
}

static void inet_direct(struct vt_ctx *c)
{
	(void)c;
	direct(AF_INET);
}

static void inet6_direct(struct vt_ctx *c)
{
	(void)c;
	direct(AF_INET6);
}

static void inet_reuseport(struct vt_ctx *c)
{
	int l[2], fds[16], counts[2] = { 0, 0 }, i, n = 0, port;

	(void)c;
	need_protosw(AF_INET);
	l[0] = loop_listen(AF_INET, ipproto_visock, true, 0);
	port = su_port(l[0]);
	l[1] = loop_listen(AF_INET, ipproto_visock, true, port);
	for (i = 0; i < 16; i++)
		fds[i] = loop_connect(AF_INET, ipproto_visock, port);
	while (n < 16) {
		struct pollfd p[2] = { { .fd = l[0], .events = POLLIN },
				       { .fd = l[1], .events = POLLIN } };

		vt_assert(poll(p, 2, 10000) > 0,
			  "only %d of 16 connections accepted", n);
		for (i = 0; i < 2; i++) {
			if (!(p[i].revents & POLLIN))
				continue;
			close(su_accept(l[i], SOCK_CLOEXEC));
			counts[i]++;
			n++;
		}
	}
	vt_assert(counts[0] && counts[1],
		  "all connections went to one listener: %d + %d",
		  counts[0], counts[1]);
	for (i = 0; i < 16; i++)
		close(fds[i]);
	close(l[0]);
	close(l[1]);
}

static bool have_protosw(int family)
{
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, ipproto_visock);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static void comm_match(struct vt_ctx *c)
{
	static const int families[] = { AF_INET, AF_INET6 };
	struct conn k;
	size_t i;

	(void)c;
	set_comm("vr_redirected");
	for (i = 0; i < ARRAY_SIZE(families); i++) {
		if (families[i] == AF_INET6 && !have_protosw(AF_INET6)) {
			vt_diag("no AF_INET6 visock sockets: IPv6 part skipped");
			continue;
		}
		conn_open(&k, families[i], 0);
		expect_inet_visock(k.lfd, families[i], "listener");
		expect_inet_visock(k.cfd, families[i], "client");
		expect_inet_visock(k.sfd, families[i], "accepted");
		pingpong(k.cfd, k.sfd);
		conn_close(&k);
	}
}

static void comm_other(struct vt_ctx *c)
{
	struct conn k;

	(void)c;
	set_comm("vr_plain");
	conn_open(&k, AF_INET, 0);
	expect_tcp(k.lfd, AF_INET, "listener");
	expect_tcp(k.cfd, AF_INET, "client");
	expect_tcp(k.sfd, AF_INET, "accepted");
	pingpong(k.cfd, k.sfd);
	conn_close(&k);
}

static void type_flags(struct vt_ctx *c)
{
	int fd, fl;

	(void)c;
	set_comm("vr_redirected");
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    IPPROTO_TCP);
	vt_assert(fd >= 0, "socket(SOCK_NONBLOCK|SOCK_CLOEXEC, IPPROTO_TCP): %s",
		  vt_errname(errno));
	expect_inet_visock(fd, AF_INET, "SOCK_NONBLOCK|SOCK_CLOEXEC socket");
	fl = fcntl(fd, F_GETFL);
	vt_assert(fl >= 0 && (fl & O_NONBLOCK), "O_NONBLOCK lost");
	fl = fcntl(fd, F_GETFD);
	vt_assert(fl >= 0 && (fl & FD_CLOEXEC), "FD_CLOEXEC lost");
	close(fd);

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	vt_assert(fd >= 0, "socket(SOCK_DGRAM): %s", vt_errname(errno));
	vt_assert(su_getint(fd, SOL_SOCKET, SO_PROTOCOL) == IPPROTO_UDP,
		  "datagram socket was redirected");
	close(fd);

	/* Asking for visock explicitly still works. */
	fd = new_socket(AF_INET, ipproto_visock);
	expect_inet_visock(fd, AF_INET, "explicit IPPROTO_VISOCK socket");
	close(fd);
}

static void uid_match(struct vt_ctx *c)
{
	int fd;

	(void)c;
	set_comm("vr_uidonly");
	fd = new_socket(AF_INET, 0);
	expect_tcp(fd, AF_INET, "socket of uid 0");
	close(fd);
	/* This test half's process is thrown away afterwards. */
	vt_try(setresgid(TEST_UID, TEST_UID, TEST_UID), "setresgid");
	vt_try(setresuid(TEST_UID, TEST_UID, TEST_UID), "setresuid");
	fd = new_socket(AF_INET, 0);
	expect_inet_visock(fd, AF_INET, "socket of uid " VT_STR(TEST_UID));
	close(fd);
}

/* Move this process into the cgroup v2 directory @dir. */
static void join_cgroup(const char *dir)
{
	char path[PATH_MAX];

	vt_assert(snprintf(path, sizeof(path), "%s/cgroup.procs", dir) <
		  (int)sizeof(path), "cgroup path too long: %s", dir);
	vt_assert(!write_int(path, getpid()), "cannot join %s: %s", dir,
		  vt_errname(errno));
}

static void cgroup_match(struct vt_ctx *c)
{
	const char *cg = getenv("VISOCK_TEST_CGROUP");
	char parent[512], *slash;
	int fd;

	(void)c;
	if (!cg || !*cg)
		vt_skip("VISOCK_TEST_CGROUP not set (no cgroup v2?)");
	snprintf(parent, sizeof(parent), "%s", cg);
	slash = strrchr(parent, '/');
	vt_assert(slash && slash != parent, "bad VISOCK_TEST_CGROUP %s", cg);
	*slash = '\0';

	set_comm("vr_cgonly");
	fd = new_socket(AF_INET, 0);
	expect_tcp(fd, AF_INET, "socket outside the cgroup");
	close(fd);

	join_cgroup(cg);
	fd = new_socket(AF_INET, 0);
	expect_inet_visock(fd, AF_INET, "socket inside the cgroup");
	close(fd);
	/* --exclude-comm vr_excluded beats the cgroup. */
	set_comm("vr_excluded");
	fd = new_socket(AF_INET, 0);
	expect_tcp(fd, AF_INET, "excluded comm inside the cgroup");
	close(fd);
	join_cgroup(parent);
}

static void enable_case(int enable)
{
	struct conn k;
	int mode, reason;

	vt_assert(orig_enable >= 0, "cannot read %s", ENABLE_PATH);
	set_enable(enable);
	set_comm("vr_redirected");
	conn_open(&k, AF_INET, 0);
	expect_inet_visock(k.cfd, AF_INET, "client");
	expect_inet_visock(k.sfd, AF_INET, "accepted");
	pingpong(k.cfd, k.sfd);
	mode = su_getint(k.cfd, SOL_VISOCK, VISOCK_MODE);
	reason = su_getint(k.cfd, SOL_VISOCK, VISOCK_FALLBACK_REASON);
	vt_diag("enable=%d: mode %d, fallback reason %d", enable, mode, reason);
	if (!enable) {
		vt_assert(mode == VISOCK_MODE_TCP, "mode %d, want TCP", mode);
		vt_assert(reason == VISOCK_FB_DISABLED,
			  "fallback reason %d, want DISABLED", reason);
		reason = su_getint(k.sfd, SOL_VISOCK, VISOCK_FALLBACK_REASON);
		vt_assert(reason == VISOCK_FB_DISABLED,
			  "server: fallback reason %d, want DISABLED", reason);
	} else {
		vt_assert(mode == VISOCK_MODE_RDMA || mode == VISOCK_MODE_TCP,
			  "mode %d after connect", mode);
		vt_assert(reason != VISOCK_FB_DISABLED,
			  "fallback reason DISABLED with enable=1");
	}
	conn_close(&k);
}

static void disabled(struct vt_ctx *c)
{
	(void)c;
	enable_case(0);
}

static void enabled(struct vt_ctx *c)
{
	(void)c;
	enable_case(1);
}

static void after_unload(struct vt_ctx *c)
{
	int fd;

	(void)c;
	set_comm("vr_redirected");
	fd = new_socket(AF_INET, 0);
	expect_tcp(fd, AF_INET, "socket after unload");
	close(fd);
	fd = new_socket(AF_INET6, 0);
	expect_tcp(fd, AF_INET6, "IPv6 socket after unload");
	close(fd);
}

static void proto_taken(struct vt_ctx *c)
{
	int fd, p;

	(void)c;
	vt_assert(ipproto_visock == 262, "module not loaded with inet_proto=262 (%d)",
		  ipproto_visock);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 262);
	if (fd < 0 && errno == EPROTONOSUPPORT)
		vt_skip("no MPTCP in this kernel");
	vt_assert(fd >= 0, "socket(AF_INET, SOCK_STREAM, 262): %s",
		  vt_errname(errno));
	p = su_getint(fd, SOL_SOCKET, SO_PROTOCOL);
	vt_assert(p == 262, "SO_PROTOCOL %d", p);
	vt_assert(!is_visock(fd), "protocol 262 became a visock socket");
	close(fd);
	fd = socket(AF_VISOCK, SOCK_STREAM | SOCK_CLOEXEC, VISOCKPROTO_TCP4);
	vt_assert(fd >= 0, "socket(AF_VISOCK): %s", vt_errname(errno));
	vt_assert(is_visock(fd), "AF_VISOCK socket is not visock");
	close(fd);
}

/* Both halves: the test program, seen as an unmodified TCP program. */
static void xhost_check(struct vt_ctx *c, int fd)
{
	int mode;

	expect_inet_visock(fd, AF_INET, vt_is_client(c) ? "client" : "server");
	mode = su_getint(fd, SOL_VISOCK, VISOCK_MODE);
	vt_assert(mode == VISOCK_MODE_RDMA, "mode %d (fallback reason %d), want RDMA",
		  mode, su_getint(fd, SOL_VISOCK, VISOCK_FALLBACK_REASON));
}

static void xhost_rdma_client(struct vt_ctx *c)
{
	unsigned char buf[65536];
	size_t i;
	int fd;

	set_comm("vr_redirected");
	fd = su_connect(c, VT_FAMILY_INET, false, su_recv_port(c));
	xhost_check(c, fd);
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 31 + (i >> 10));
	su_write_all(fd, buf, sizeof(buf));
	memset(buf, 0, sizeof(buf));
	su_read_all(fd, buf, sizeof(buf));
	for (i = 0; i < sizeof(buf); i++)
		vt_assert(buf[i] == (unsigned char)(i * 31 + (i >> 10)),
			  "echoed byte %zu differs", i);
	close(fd);
}

static void xhost_rdma_server(struct vt_ctx *c)
{
	unsigned char buf[65536];
	int lfd, fd;

	set_comm("vr_redirected");
	lfd = su_listen(VT_FAMILY_INET, false, 4, SOCK_CLOEXEC);
	expect_inet_visock(lfd, AF_INET, "listener");
	su_send_port(c, lfd);
	fd = su_accept(lfd, SOCK_CLOEXEC);
	xhost_check(c, fd);
	su_read_all(fd, buf, sizeof(buf));
	su_write_all(fd, buf, sizeof(buf));
	su_expect_eof(fd);
	close(fd);
	close(lfd);
}

/* Sockets for the policy tests: IPPROTO_VISOCK ones (every kernel)... */
static int direct_socket(int family)
{
	need_protosw(family);
	return new_socket(family, ipproto_visock);
}

/* ... or plain TCP ones the BPF program redirects (6.6+). */
static int redirected_socket(int family)
{
	int fd = new_socket(family, 0);

	expect_inet_visock(fd, family, "redirected socket");
	return fd;
}

static void redirected_prepare(void)
{
	set_comm("vr_redirected");
}

static const struct pt_ops direct_ops = { .socket = direct_socket };
static const struct pt_ops redirected_ops = {
	.socket		= redirected_socket,
	.prepare	= redirected_prepare,
};

static void policy_netns(struct vt_ctx *c)
{
	pt_ops = &direct_ops;
	pt_netns(c);
}

static void policy_unpriv(struct vt_ctx *c)
{
	pt_ops = &direct_ops;
	pt_unpriv(c);
}

static void xhost_policy_client(struct vt_ctx *c)
{
	pt_ops = &redirected_ops;
	pt_xhost_client(c);
}

static void xhost_policy_server(struct vt_ctx *c)
{
	pt_ops = &redirected_ops;
	pt_xhost_server(c);
}

static const struct vt_test tests[] = {
	{ "inet_direct", inet_direct, NULL, 0, "AF_INET IPPROTO_VISOCK socket" },
	{ "inet6_direct", inet6_direct, NULL, 0, "AF_INET6 IPPROTO_VISOCK socket" },
	{ "inet_reuseport", inet_reuseport, NULL, 0, "SO_REUSEPORT natively" },
	{ "comm_match", comm_match, NULL, 0, "listed comm is redirected" },
	{ "comm_other", comm_other, NULL, 0, "other comm is not" },
	{ "type_flags", type_flags, NULL, 0, "type flags, IPPROTO_TCP, UDP" },
	{ "uid_match", uid_match, NULL, 0, "listed uid is redirected" },
	{ "cgroup_match", cgroup_match, NULL, 0, "listed cgroup, exclusion" },
	{ "disabled", disabled, NULL, 0, "enable=0: plain TCP, DISABLED" },
	{ "enabled", enabled, NULL, 0, "enable=1: handshake" },
	{ "after_unload", after_unload, NULL, 0, "nothing redirected" },
	{ "proto_taken", proto_taken, NULL, 0, "taken number left alone" },
	{ "xhost_rdma", xhost_rdma_client, xhost_rdma_server, 0,
	  "redirected program gets RDMA between hosts" },
	{ "policy_netns", policy_netns, NULL, 0, "policy rules per namespace" },
	{ "policy_unpriv", policy_unpriv, NULL, 0,
	  "policy changes need CAP_NET_ADMIN" },
	{ "xhost_policy", xhost_policy_client, xhost_policy_server, 0,
	  "denied port: TCP with reason POLICY, other port: RDMA" },
};

int main(int argc, char **argv)
{
	int proto = pt_read_int(PROTO_PATH);

	if (proto > 0)
		ipproto_visock = proto;
	orig_enable = pt_read_int(ENABLE_PATH);
	vt_set_cleanup(restore_enable);
	return vt_main(argc, argv, "visock_redirect_test", tests,
		       ARRAY_SIZE(tests));
}
