// SPDX-License-Identifier: GPL-2.0
/*
 * visock_preload.so: make an unmodified program's TCP sockets visock
 * sockets.  Loaded with LD_PRELOAD by visock_run(8).
 *
 * socket(AF_INET or AF_INET6, SOCK_STREAM, 0 or IPPROTO_TCP) is turned
 * into socket(AF_VISOCK, SOCK_STREAM, VISOCKPROTO_TCP4 or _TCP6).  A
 * visock socket takes the same addresses, options and calls as a TCP
 * socket, and is plain TCP unless both ends enabled visock.  When visock
 * is not available (module not loaded, socket() fails), the original
 * call is made: the program never sees a difference.
 *
 * setsockopt(SOL_SOCKET, SO_REUSEPORT) on a visock socket fails with
 * EOPNOTSUPP on kernels before 6.7, whose socket layer refuses it for
 * families other than AF_INET/AF_INET6; the wrapper then sets the
 * SOL_VISOCK alias VISOCK_REUSEPORT, which does the same.
 *
 * Statically linked programs and programs that make system calls
 * directly (Go) are not affected: LD_PRELOAD cannot reach them.
 *
 * Environment:
 *   VISOCK_PRELOAD_DEBUG=1   print each decision on stderr
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <linux/visock.h>

typedef int (*socket_fn)(int, int, int);
typedef int (*setsockopt_fn)(int, int, int, const void *, socklen_t);

static int debug_enabled(void)
{
	const char *v = getenv("VISOCK_PRELOAD_DEBUG");

	return v && *v == '1';
}

int socket(int domain, int type, int protocol)
{
	static socket_fn real_socket;
	int base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
	int saved = errno;
	int fd;

	if (!real_socket) {
		real_socket = (socket_fn)dlsym(RTLD_NEXT, "socket");
		if (!real_socket) {
			errno = EAFNOSUPPORT;
			return -1;
		}
	}
	if ((domain == AF_INET || domain == AF_INET6) &&
	    base == SOCK_STREAM && (protocol == 0 || protocol == IPPROTO_TCP)) {
		fd = real_socket(AF_VISOCK, type, domain == AF_INET ?
				 VISOCKPROTO_TCP4 : VISOCKPROTO_TCP6);
		if (debug_enabled())
			fprintf(stderr, "visock_preload: %s stream socket -> %s\n",
				domain == AF_INET ? "AF_INET" : "AF_INET6",
				fd >= 0 ? "AF_VISOCK" : "TCP (visock unavailable)");
		if (fd >= 0) {
			errno = saved;
			return fd;
		}
		errno = saved;
	}
	return real_socket(domain, type, protocol);
}

static int is_visock(int fd)
{
	int domain = 0;
	socklen_t len = sizeof(domain);

	return !getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) &&
	       domain == AF_VISOCK;
}

int setsockopt(int fd, int level, int optname, const void *optval,
	       socklen_t optlen)
{
	static setsockopt_fn real_setsockopt;
	int ret, err;

	if (!real_setsockopt) {
		real_setsockopt = (setsockopt_fn)dlsym(RTLD_NEXT,
						       "setsockopt");
		if (!real_setsockopt) {
			errno = ENOPROTOOPT;
			return -1;
		}
	}
	ret = real_setsockopt(fd, level, optname, optval, optlen);
	if (!ret || errno != EOPNOTSUPP || level != SOL_SOCKET ||
	    optname != SO_REUSEPORT)
		return ret;
	err = errno;
	if (!is_visock(fd)) {
		errno = err;
		return ret;
	}
	ret = real_setsockopt(fd, SOL_VISOCK, VISOCK_REUSEPORT, optval,
			      optlen);
	if (debug_enabled())
		fprintf(stderr, "visock_preload: SO_REUSEPORT via VISOCK_REUSEPORT: %s\n",
			ret ? "failed" : "ok");
	if (ret)
		errno = err;
	return ret;
}
