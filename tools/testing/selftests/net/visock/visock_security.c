// SPDX-License-Identifier: GPL-2.0
/*
 * visock against hostile peers and local users.
 *
 * Each test takes the part of an attacker: a local unprivileged program
 * that reaches for the internal TCP socket, or a remote host that sends
 * what a well-behaved visock peer never would.  A test passes when the
 * attack is refused or contained: the attacker loses its own connection
 * at most, every other connection keeps its bytes, and nothing the peer
 * or the user asked for grows without bound.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <linux/visock.h>

#include "harness.h"
#include "hostutil.h"
#include "sockutil.h"

#ifndef TCP_ULP
#define TCP_ULP	31
#endif

#define ULP_PING	"ulp-ping"

/*
 * setsockopt(TCP_ULP) on @fd must be refused with EOPNOTSUPP: an upper
 * layer protocol on the internal TCP socket would rewrite the bytes that
 * carry visock's own handshake and failover messages.
 */
static void expect_ulp_refused(int fd, const char *what)
{
	static const char * const ulps[] = { "tls", "espintcp", "mptcp", "" };
	unsigned int i;
	char name[16];
	socklen_t len;

	for (i = 0; i < ARRAY_SIZE(ulps); i++) {
		errno = 0;
		vt_assert(setsockopt(fd, SOL_TCP, TCP_ULP, ulps[i],
				     strlen(ulps[i])) < 0,
			  "%s: setsockopt(TCP_ULP, \"%s\") succeeded", what,
			  ulps[i]);
		vt_assert(errno == EOPNOTSUPP,
			  "%s: setsockopt(TCP_ULP, \"%s\"): %s, expected EOPNOTSUPP",
			  what, ulps[i], strerror(errno));
	}
	len = sizeof(name);
	memset(name, 0, sizeof(name));
	if (getsockopt(fd, SOL_TCP, TCP_ULP, name, &len) == 0)
		vt_assert(!name[0], "%s: TCP_ULP reads \"%.*s\" afterwards",
			  what, (int)len, name);
}

/*
 * tcp_ulp: TCP_ULP is refused on a new, a listening and a connected
 * visock socket (with the tls module loaded where the kernel has it),
 * and the connection still carries bytes afterwards.
 */
static void tcp_ulp(struct vt_ctx *c)
{
	char buf[sizeof(ULP_PING)];
	int fd, lfd;

	/* Best effort: without the module the test still checks EOPNOTSUPP. */
	if (system("modprobe -q tls 2>/dev/null"))
		vt_diag("no tls module here");
	fd = su_socket(VT_FAMILY_VISOCK, false, 0);
	expect_ulp_refused(fd, "new socket");
	close(fd);
	lfd = su_listen(VT_FAMILY_VISOCK, false, 4, 0);
	expect_ulp_refused(lfd, "listener");
	close(lfd);

	fd = su_pair(c);
	expect_ulp_refused(fd, vt_is_client(c) ? "connect()ed socket" :
			   "accept()ed socket");
	if (vt_is_client(c)) {
		su_write_all(fd, ULP_PING, sizeof(ULP_PING));
		su_read_all(fd, buf, sizeof(buf));
	} else {
		su_read_all(fd, buf, sizeof(buf));
		su_write_all(fd, buf, sizeof(buf));
	}
	vt_assert(!memcmp(buf, ULP_PING, sizeof(ULP_PING)),
		  "the connection's bytes changed after TCP_ULP was refused");
	close(fd);
}

#define T(fn, tmo, d)	{ #fn, fn, fn, tmo, d }

static const struct vt_test tests[] = {
	T(tcp_ulp, 60, "TCP_ULP refused on every visock socket"),
};

int main(int argc, char **argv)
{
	return vt_main(argc, argv, "visock_security", tests,
		       ARRAY_SIZE(tests));
}
