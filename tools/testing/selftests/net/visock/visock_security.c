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

/* ---- sockopt_allowlist ---- */

#ifndef TCP_AO_ADD_KEY
#define TCP_AO_ADD_KEY		38
#define TCP_AO_DEL_KEY		39
#define TCP_AO_INFO		40
#define TCP_AO_GET_KEYS		41
#define TCP_AO_REPAIR		42
#endif
#ifndef TCP_ZEROCOPY_RECEIVE
#define TCP_ZEROCOPY_RECEIVE	35
#endif
#ifndef TCP_FASTOPEN_KEY
#define TCP_FASTOPEN_KEY	33
#endif
#ifndef TCP_FASTOPEN_NO_COOKIE
#define TCP_FASTOPEN_NO_COOKIE	34
#endif
#ifndef IPV6_MINHOPCOUNT
#define IPV6_MINHOPCOUNT	73
#endif
#ifndef SOL_TLS
#define SOL_TLS			282
#endif

#define SOCKOPT_PING	"sockopt-ping"

/*
 * Options that must never reach the internal TCP socket, with a value
 * that would be harmless if it did (so that the test also runs to its
 * end against a module that lets them through): an int 0, or zeroed
 * bytes of the option's size.  Listed in Documentation/networking/
 * visock.rst as refused.
 */
struct refused_opt {
	int level;
	int name;
	const char *what;
	unsigned int len;	/* bytes of zeroes; 0: no value at all */
};

#define R(l, n, len)	{ l, n, #n, len }

static const struct refused_opt refused_opts[] = {
	R(SOL_TCP, TCP_ULP, 3),
	R(SOL_TCP, TCP_REPAIR, sizeof(int)),
	R(SOL_TCP, TCP_REPAIR_QUEUE, sizeof(int)),
	R(SOL_TCP, TCP_QUEUE_SEQ, sizeof(int)),
	R(SOL_TCP, TCP_REPAIR_OPTIONS, 8),
	R(SOL_TCP, TCP_REPAIR_WINDOW, 20),
	R(SOL_TCP, TCP_TIMESTAMP, sizeof(int)),
	R(SOL_TCP, TCP_ZEROCOPY_RECEIVE, 64),
	R(SOL_TCP, TCP_FASTOPEN, sizeof(int)),
	R(SOL_TCP, TCP_FASTOPEN_CONNECT, sizeof(int)),
	R(SOL_TCP, TCP_FASTOPEN_KEY, 16),
	R(SOL_TCP, TCP_FASTOPEN_NO_COOKIE, sizeof(int)),
	R(SOL_TCP, TCP_MD5SIG, 216),
	R(SOL_TCP, TCP_MD5SIG_EXT, 216),
	R(SOL_TCP, TCP_AO_ADD_KEY, 184),
	R(SOL_TCP, TCP_AO_DEL_KEY, 152),
	R(SOL_TCP, TCP_AO_INFO, 48),
	R(SOL_TCP, TCP_AO_GET_KEYS, 176),
	R(SOL_TCP, TCP_AO_REPAIR, 16),
	R(SOL_TCP, TCP_SAVE_SYN, sizeof(int)),
	R(SOL_TCP, TCP_SAVED_SYN, 64),
	R(SOL_TCP, 200, sizeof(int)),		/* no such option */
	R(SOL_IP, IP_IPSEC_POLICY, 0),
	R(SOL_IP, IP_XFRM_POLICY, 0),
	R(SOL_IP, IP_MINTTL, sizeof(int)),
	R(SOL_IPV6, IPV6_ADDRFORM, sizeof(int)),
	R(SOL_IPV6, IPV6_IPSEC_POLICY, 0),
	R(SOL_IPV6, IPV6_XFRM_POLICY, 0),
	R(SOL_IPV6, IPV6_MINHOPCOUNT, sizeof(int)),
	R(SOL_TLS, 1, sizeof(int)),		/* TLS_TX */
};

/*
 * Every refused option fails with EOPNOTSUPP, set and get, on @fd.
 * Returns how many did not (each one is reported).
 */
static int check_refused(int fd, const char *what)
{
	unsigned char val[256];
	unsigned int i;
	socklen_t len;
	int bad = 0, ret;

	for (i = 0; i < ARRAY_SIZE(refused_opts); i++) {
		const struct refused_opt *o = &refused_opts[i];

		memset(val, 0, sizeof(val));
		if (o->name == TCP_ULP)
			memcpy(val, "tls", 3);
		errno = 0;
		ret = setsockopt(fd, o->level, o->name, o->len ? val : NULL,
				 o->len);
		if (ret == 0 || errno != EOPNOTSUPP) {
			vt_diag("%s: setsockopt(%s): %s, expected EOPNOTSUPP",
				what, o->what, ret ? vt_errname(errno) : "ok");
			bad++;
		}
		memset(val, 0, sizeof(val));
		len = o->len ? o->len : sizeof(int);
		errno = 0;
		ret = getsockopt(fd, o->level, o->name, val, &len);
		if (ret == 0 || errno != EOPNOTSUPP) {
			vt_diag("%s: getsockopt(%s): %s, expected EOPNOTSUPP",
				what, o->what, ret ? vt_errname(errno) : "ok");
			bad++;
		}
	}
	return bad;
}

/* An allowed int option reads back what was set. */
static void check_int_opt(int fd, int level, int name, const char *what,
			  int val)
{
	int got;

	su_setint_at(fd, level, name, what, val);
	got = su_getint_at(fd, level, name, what);
	vt_assert(got == val, "%s set to %d reads %d", what, val, got);
}

/* Options a TCP application relies on still work on @fd. */
static void check_allowed(int fd, bool connected)
{
	struct tcp_info ti;
	socklen_t len;
	char cc[16];

	check_int_opt(fd, SOL_TCP, TCP_NODELAY, "TCP_NODELAY", 1);
	check_int_opt(fd, SOL_TCP, TCP_KEEPIDLE, "TCP_KEEPIDLE", 77);
	check_int_opt(fd, SOL_TCP, TCP_KEEPINTVL, "TCP_KEEPINTVL", 11);
	check_int_opt(fd, SOL_TCP, TCP_KEEPCNT, "TCP_KEEPCNT", 5);
	check_int_opt(fd, SOL_TCP, TCP_USER_TIMEOUT, "TCP_USER_TIMEOUT",
		      4321);
	check_int_opt(fd, SOL_IP, IP_TOS, "IP_TOS", 0x20);
	check_int_opt(fd, SOL_IP, IP_TTL, "IP_TTL", 33);
	if (!connected)
		check_int_opt(fd, SOL_TCP, TCP_MAXSEG, "TCP_MAXSEG", 1000);
	memset(cc, 0, sizeof(cc));
	len = sizeof(cc);
	vt_try(getsockopt(fd, SOL_TCP, TCP_CONGESTION, cc, &len),
	       "getsockopt(TCP_CONGESTION)");
	vt_assert(len > 0 && cc[0], "TCP_CONGESTION reads nothing");
	len = sizeof(ti);
	vt_try(getsockopt(fd, SOL_TCP, TCP_INFO, &ti, &len),
	       "getsockopt(TCP_INFO)");
	vt_assert(ti.tcpi_state == (connected ? 1 : 7),
		  "TCP_INFO: state %u on a %s socket", ti.tcpi_state,
		  connected ? "connected" : "new");
}

/*
 * sockopt_allowlist: every option on the refused list fails with
 * EOPNOTSUPP (set and get) on a new IPv4 and IPv6 socket, a listener
 * and both ends of a connection; allowed options read back what was
 * set; the connection then carries bytes both ways unchanged.
 */
static void sockopt_allowlist(struct vt_ctx *c)
{
	char buf[sizeof(SOCKOPT_PING)];
	int fd, bad = 0;

	fd = su_socket(VT_FAMILY_VISOCK, false, 0);
	bad += check_refused(fd, "new socket");
	check_allowed(fd, false);
	close(fd);
	fd = su_socket(VT_FAMILY_VISOCK, true, 0);
	bad += check_refused(fd, "new IPv6 socket");
	check_int_opt(fd, SOL_IPV6, IPV6_V6ONLY, "IPV6_V6ONLY", 1);
	check_int_opt(fd, SOL_IPV6, IPV6_TCLASS, "IPV6_TCLASS", 0x20);
	close(fd);
	fd = su_listen(VT_FAMILY_VISOCK, false, 4, 0);
	bad += check_refused(fd, "listener");
	close(fd);

	fd = su_pair(c);
	bad += check_refused(fd, vt_is_client(c) ? "connect()ed socket" :
			     "accept()ed socket");
	check_allowed(fd, true);
	if (vt_is_client(c)) {
		su_write_all(fd, SOCKOPT_PING, sizeof(SOCKOPT_PING));
		su_read_all(fd, buf, sizeof(buf));
	} else {
		su_read_all(fd, buf, sizeof(buf));
		su_write_all(fd, buf, sizeof(buf));
	}
	vt_assert(!memcmp(buf, SOCKOPT_PING, sizeof(SOCKOPT_PING)),
		  "the connection's bytes changed");
	vt_diag("mode %d after the options", su_getint(fd, SOL_VISOCK,
						       VISOCK_MODE));
	close(fd);
	vt_assert(!bad, "%d option calls were not refused with EOPNOTSUPP",
		  bad);
}

#define T(fn, tmo, d)	{ #fn, fn, fn, tmo, d }

static const struct vt_test tests[] = {
	T(tcp_ulp, 60, "TCP_ULP refused on every visock socket"),
	T(sockopt_allowlist, 60,
	  "only allowed options reach the internal TCP socket"),
};

int main(int argc, char **argv)
{
	return vt_main(argc, argv, "visock_security", tests,
		       ARRAY_SIZE(tests));
}
