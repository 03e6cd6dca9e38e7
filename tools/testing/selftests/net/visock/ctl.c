// SPDX-License-Identifier: GPL-2.0
/*
 * Control channel for the visock selftests: a plain TCP connection
 * carrying newline terminated text lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"

static char last_line[CTL_LINE_MAX];

long long ctl_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *ctl_last_line(void)
{
	return last_line;
}

/* Wait until @fd reports one of @events or @deadline (ms) passes. */
static int ctl_wait(int fd, short events, long long deadline)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	long long left;
	int ret;

	for (;;) {
		left = deadline - ctl_now_ms();
		if (left < 0)
			left = 0;
		ret = poll(&pfd, 1, (int)left);
		if (ret > 0)
			return 0;
		if (ret == 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		if (errno != EINTR)
			return -1;
	}
}

static void ctl_tune(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int ctl_listen_one(int family, const char *addr, int port)
{
	struct addrinfo hints = {
		.ai_family = family,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV,
	};
	struct addrinfo *res;
	char service[16];
	int fd, one = 1, zero = 0;

	snprintf(service, sizeof(service), "%d", port);
	if (getaddrinfo(addr, service, &hints, &res)) {
		errno = EADDRNOTAVAIL;
		return -1;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto out;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (res->ai_family == AF_INET6 && !addr)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, res->ai_addr, res->ai_addrlen) || listen(fd, 16)) {
		int err = errno;

		close(fd);
		errno = err;
		fd = -1;
	}
out:
	freeaddrinfo(res);
	return fd;
}

int ctl_listen(const char *addr, int port)
{
	int fd;

	if (addr)
		return ctl_listen_one(AF_UNSPEC, addr, port);
	fd = ctl_listen_one(AF_INET6, NULL, port);
	if (fd < 0 && errno != EADDRINUSE)
		fd = ctl_listen_one(AF_INET, NULL, port);
	return fd;
}

int ctl_local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return -1;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return -1;
}

int ctl_accept(int lfd, int timeout_ms)
{
	int fd;

	if (ctl_wait(lfd, POLLIN, ctl_now_ms() + timeout_ms))
		return -1;
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0)
		ctl_tune(fd);
	return fd;
}

/* One non-blocking connect attempt bounded by @deadline. */
static int ctl_try_connect(const struct addrinfo *ai, long long deadline)
{
	socklen_t len = sizeof(int);
	int fd, err = 0;

	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    0);
	if (fd < 0)
		return -1;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		if (errno != EINPROGRESS)
			goto fail;
		if (ctl_wait(fd, POLLOUT, deadline))
			goto fail;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len))
			goto fail;
		if (err) {
			errno = err;
			goto fail;
		}
	}
	if (fcntl(fd, F_SETFL, 0))
		goto fail;
	ctl_tune(fd);
	return fd;
fail:
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

int ctl_connect(const char *host, int port, int timeout_ms)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICSERV,
	};
	long long deadline = ctl_now_ms() + timeout_ms;
	struct addrinfo *res, *ai;
	char service[16];
	int fd, err = ETIMEDOUT;

	snprintf(service, sizeof(service), "%d", port);
	for (;;) {
		if (getaddrinfo(host, service, &hints, &res) == 0) {
			for (ai = res; ai; ai = ai->ai_next) {
				long long step = ctl_now_ms() + 5000;

				fd = ctl_try_connect(ai, step < deadline ?
							 step : deadline);
				if (fd >= 0) {
					freeaddrinfo(res);
					return fd;
				}
				err = errno;
			}
			freeaddrinfo(res);
		} else {
			err = EHOSTUNREACH;
		}
		if (ctl_now_ms() + 500 >= deadline)
			break;
		usleep(500 * 1000);
	}
	errno = err;
	return -1;
}

int ctl_writeln(int fd, const char *fmt, ...)
{
	char buf[CTL_LINE_MAX + 1];
	size_t len, off = 0;
	va_list ap;
	ssize_t ret;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf) - 1 || strchr(buf, '\n')) {
		errno = EMSGSIZE;
		return -1;
	}
	len = (size_t)n;
	buf[len++] = '\n';
	while (off < len) {
		ret = send(fd, buf + off, len - off, MSG_NOSIGNAL);
		if (ret < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		off += (size_t)ret;
	}
	return 0;
}

int ctl_readln(int fd, char *buf, size_t size, int timeout_ms)
{
	long long deadline = ctl_now_ms() + timeout_ms;
	size_t len = 0;
	ssize_t ret;
	char ch;

	for (;;) {
		if (ctl_wait(fd, POLLIN, deadline))
			return -1;
		ret = recv(fd, &ch, 1, MSG_DONTWAIT);
		if (ret < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -1;
		}
		if (ret == 0) {
			errno = ECONNABORTED;
			return -1;
		}
		if (ch == '\n')
			break;
		if (ch == '\r')
			continue;
		if (len + 1 >= size) {
			errno = EMSGSIZE;
			return -1;
		}
		buf[len++] = ch;
	}
	buf[len] = '\0';
	snprintf(last_line, sizeof(last_line), "%s", buf);
	return (int)len;
}

int ctl_expectln(int fd, const char *want, int timeout_ms)
{
	char buf[CTL_LINE_MAX];

	if (ctl_readln(fd, buf, sizeof(buf), timeout_ms) < 0)
		return -1;
	if (strcmp(buf, want)) {
		errno = EPROTO;
		return -1;
	}
	return 0;
}

int ctl_barrier(int fd, const char *tag, int timeout_ms)
{
	char want[CTL_LINE_MAX];

	snprintf(want, sizeof(want), "BARRIER %s", tag);
	if (ctl_writeln(fd, "%s", want))
		return -1;
	return ctl_expectln(fd, want, timeout_ms);
}
