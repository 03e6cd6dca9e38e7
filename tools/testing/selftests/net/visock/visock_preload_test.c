// SPDX-License-Identifier: GPL-2.0
/*
 * The LD_PRELOAD wrapper (tools/visock/visock_preload.so, visock_run(8))
 * seen from an unmodified program: this program only ever asks for
 * AF_INET/AF_INET6 sockets and runs with the wrapper preloaded
 * (run_tests.sh sets LD_PRELOAD).  One host, loopback.
 *
 * domain	TCP stream sockets become AF_VISOCK, everything else stays
 * reuseport	setsockopt(SOL_SOCKET, SO_REUSEPORT) works as for TCP on
 *		every kernel (before 6.7 the wrapper maps it to
 *		VISOCK_REUSEPORT): two listeners share a port
 * pingpong	a connection made with the wrapped calls carries data
 * policy_netns	destination policy rules are per network namespace
 * policy_unpriv	changing them needs CAP_NET_ADMIN (EPERM otherwise)
 * Between the hosts (group preload_hs, net.visock.enable=1, RDMA):
 * xhost_policy	a wrapped socket connecting to a denied port is plain TCP
 *		with reason POLICY, to another port RDMA (policy_tests.c)
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/visock.h>

#include "harness.h"
#include "ktap.h"
#include "policy_tests.h"
#include "sockutil.h"

#define NREUSE	16

static int domain_of(int fd)
{
	return su_getint(fd, SOL_SOCKET, SO_DOMAIN);
}

/* socket(@family, @type, @proto) must give a socket of domain @want. */
static void expect_domain(int family, int type, int proto, int want,
			  const char *what)
{
	int fd, d;

	fd = socket(family, type | SOCK_CLOEXEC, proto);
	vt_assert(fd >= 0, "socket(%s): %s", what, vt_errname(errno));
	d = domain_of(fd);
	close(fd);
	vt_assert(d == want, "%s socket has domain %d, expected %d", what, d,
		  want);
}

static void domain(struct vt_ctx *c)
{
	(void)c;
	expect_domain(AF_INET, SOCK_STREAM, 0, AF_VISOCK, "AF_INET stream");
	expect_domain(AF_INET6, SOCK_STREAM, IPPROTO_TCP, AF_VISOCK,
		      "AF_INET6 stream");
	expect_domain(AF_INET, SOCK_DGRAM, 0, AF_INET, "AF_INET datagram");
}

static int reuse_listener(int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = su_socket(VT_FAMILY_INET, false, SOCK_CLOEXEC), one = 1;

	vt_assert(domain_of(fd) == AF_VISOCK, "listener is not AF_VISOCK");
	vt_try(setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)),
	       "setsockopt(SOL_SOCKET, SO_REUSEPORT)");
	vt_assert(su_getint(fd, SOL_SOCKET, SO_REUSEPORT) == 1,
		  "SO_REUSEPORT does not read back 1");
	vt_try(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), "bind");
	vt_try(listen(fd, NREUSE), "listen");
	return fd;
}

static int loop_connect(int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = su_socket(VT_FAMILY_INET, false, SOCK_CLOEXEC);

	vt_try(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), "connect");
	return fd;
}

static void reuseport(struct vt_ctx *c)
{
	int l[2], fds[NREUSE], counts[2] = { 0, 0 }, i, n = 0, port;

	(void)c;
	l[0] = reuse_listener(0);
	port = su_port(l[0]);
	l[1] = reuse_listener(port);
	for (i = 0; i < NREUSE; i++)
		fds[i] = loop_connect(port);
	while (n < NREUSE) {
		struct pollfd p[2] = { { .fd = l[0], .events = POLLIN },
				       { .fd = l[1], .events = POLLIN } };

		vt_assert(poll(p, 2, 10000) > 0,
			  "only %d of %d connections accepted", n, NREUSE);
		for (i = 0; i < 2; i++) {
			if (!(p[i].revents & POLLIN))
				continue;
			close(su_accept(l[i], SOCK_CLOEXEC));
			counts[i]++;
			n++;
		}
	}
	vt_diag("connections per listener: %d + %d", counts[0], counts[1]);
	vt_assert(counts[0] && counts[1],
		  "all connections went to one listener: %d + %d",
		  counts[0], counts[1]);
	for (i = 0; i < NREUSE; i++)
		close(fds[i]);
	close(l[0]);
	close(l[1]);
}

static void pingpong(struct vt_ctx *c)
{
	unsigned char out[65536], in[sizeof(out)];
	int lfd, cfd, sfd;
	size_t i;

	(void)c;
	lfd = su_listen(VT_FAMILY_INET, false, 4, SOCK_CLOEXEC);
	vt_assert(domain_of(lfd) == AF_VISOCK, "listener is not AF_VISOCK");
	cfd = loop_connect(su_port(lfd));
	sfd = su_accept(lfd, SOCK_CLOEXEC);
	vt_assert(domain_of(sfd) == AF_VISOCK,
		  "accepted socket is not AF_VISOCK");
	for (i = 0; i < sizeof(out); i++)
		out[i] = (unsigned char)(i * 7 + (i >> 9));
	su_write_all(cfd, out, sizeof(out));
	su_read_all(sfd, in, sizeof(in));
	vt_assert(!memcmp(in, out, sizeof(in)), "data differs");
	su_write_all(sfd, in, sizeof(in));
	su_read_all(cfd, out, sizeof(out));
	vt_assert(!memcmp(in, out, sizeof(in)), "echoed data differs");
	close(cfd);
	su_expect_eof(sfd);
	close(sfd);
	close(lfd);
}

/* What the program asks for; the wrapper makes it AF_VISOCK. */
static int wrapped_socket(int family)
{
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	vt_assert(fd >= 0, "socket: %s", vt_errname(errno));
	vt_assert(domain_of(fd) == AF_VISOCK, "socket is not AF_VISOCK");
	return fd;
}

static const struct pt_ops wrapped_ops = { .socket = wrapped_socket };

static int orig_enable = -1;

static void cleanup(const struct vt_ctx *c)
{
	FILE *f;

	(void)c;
	pt_cleanup();
	f = orig_enable >= 0 ? fopen("/proc/sys/net/visock/enable", "we") :
			       NULL;
	if (f) {
		fprintf(f, "%d\n", orig_enable);
		fclose(f);
	}
}

static const struct vt_test tests[] = {
	{ "domain", domain, NULL, 0, "stream sockets become AF_VISOCK" },
	{ "reuseport", reuseport, NULL, 0, "SO_REUSEPORT on every kernel" },
	{ "pingpong", pingpong, NULL, 0, "data over a wrapped connection" },
	{ "policy_netns", pt_netns, NULL, 0, "policy rules per namespace" },
	{ "policy_unpriv", pt_unpriv, NULL, 0, "policy changes need CAP_NET_ADMIN" },
	{ "xhost_policy", pt_xhost_client, pt_xhost_server, 0,
	  "denied port: TCP with reason POLICY, other port: RDMA" },
};

int main(int argc, char **argv)
{
	orig_enable = pt_read_int("/proc/sys/net/visock/enable");
	pt_ops = &wrapped_ops;
	vt_set_cleanup(cleanup);
	return vt_main(argc, argv, "visock_preload_test", tests,
		       ARRAY_SIZE(tests));
}
