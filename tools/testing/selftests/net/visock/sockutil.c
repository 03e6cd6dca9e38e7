// SPDX-License-Identifier: GPL-2.0
/*
 * Socket and payload helpers for the visock stream tests.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/visock.h>

#include "sockutil.h"

#define SU_CHUNK	65536

static const uint8_t pl_magic[8] = { 'V', 'I', 'S', 'K', 'P', 'L', 'D', '1' };

int su_socket(enum vt_family fam, bool v6, int flags)
{
	int fd;

	if (fam == VT_FAMILY_VISOCK)
		fd = socket(AF_VISOCK, SOCK_STREAM | flags,
			    v6 ? VISOCKPROTO_TCP6 : VISOCKPROTO_TCP4);
	else
		fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | flags, 0);
	if (fd < 0)
		vt_fail("socket(%s, %s): %s (%s)",
			fam == VT_FAMILY_VISOCK ? "AF_VISOCK" : "AF_INET",
			v6 ? "IPv6" : "IPv4", vt_errname(errno),
			strerror(errno));
	return fd;
}

int su_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	vt_try(getsockname(fd, (struct sockaddr *)&ss, &len), "getsockname");
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	vt_assert(ss.ss_family == AF_INET, "getsockname: family %d",
		  ss.ss_family);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

int su_listen(enum vt_family fam, bool v6, int backlog, int flags)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd;

	memset(&ss, 0, sizeof(ss));
	if (v6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_addr = in6addr_any;
		len = sizeof(*sin6);
	} else {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = htonl(INADDR_ANY);
		len = sizeof(*sin);
	}
	fd = su_socket(fam, v6, flags);
	vt_try(bind(fd, (struct sockaddr *)&ss, len), "bind");
	vt_try(listen(fd, backlog), "listen");
	return fd;
}

socklen_t su_peer_addr(const struct vt_ctx *c, bool v6, int port,
		       struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (v6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		vt_assert(inet_pton(AF_INET6, c->peer6, &sin6->sin6_addr) == 1,
			  "bad peer IPv6 address \"%s\"", c->peer6);
		return sizeof(*sin6);
	}
	((struct sockaddr_in *)ss)->sin_family = AF_INET;
	((struct sockaddr_in *)ss)->sin_port = htons(port);
	vt_assert(inet_pton(AF_INET, c->peer,
			    &((struct sockaddr_in *)ss)->sin_addr) == 1,
		  "bad peer IPv4 address \"%s\"", c->peer);
	return sizeof(struct sockaddr_in);
}

int su_accept(int lfd, int flags)
{
	int fd;

	su_wait(lfd, POLLIN, "incoming connection");
	fd = accept4(lfd, NULL, NULL, flags);
	if (fd < 0)
		vt_fail("accept: %s (%s)", vt_errname(errno), strerror(errno));
	return fd;
}

int su_connect(const struct vt_ctx *c, enum vt_family fam, bool v6,
	       int port)
{
	struct sockaddr_storage ss;
	socklen_t len = su_peer_addr(c, v6, port, &ss);
	int fd = su_socket(fam, v6, SOCK_CLOEXEC);

	if (connect(fd, (struct sockaddr *)&ss, len))
		vt_fail("connect to %s port %d: %s (%s)",
			v6 ? c->peer6 : c->peer, port, vt_errname(errno),
			strerror(errno));
	return fd;
}

void su_send_port(struct vt_ctx *c, int lfd)
{
	vt_send_num(c, "PORT", su_port(lfd));
}

int su_recv_port(struct vt_ctx *c)
{
	long long port = vt_recv_num(c, "PORT");

	vt_assert(port > 0 && port < 65536, "bad port %lld", port);
	return (int)port;
}

int su_pair_fam(struct vt_ctx *c, enum vt_family fam, bool v6)
{
	int lfd, fd;

	if (vt_is_client(c))
		return su_connect(c, fam, v6, su_recv_port(c));
	lfd = su_listen(fam, v6, 16, SOCK_CLOEXEC);
	su_send_port(c, lfd);
	fd = su_accept(lfd, SOCK_CLOEXEC);
	close(lfd);
	return fd;
}

int su_pair(struct vt_ctx *c)
{
	return su_pair_fam(c, c->family, false);
}

void su_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t ret;

	while (len) {
		ret = write(fd, p, len);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret <= 0)
			vt_fail("write: %s (%s)",
				ret ? vt_errname(errno) : "returned 0",
				ret ? strerror(errno) : "");
		p += ret;
		len -= (size_t)ret;
	}
}

void su_read_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	ssize_t ret;

	while (len) {
		ret = read(fd, p, len);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0)
			vt_fail("read: %s (%s)", vt_errname(errno),
				strerror(errno));
		if (ret == 0)
			vt_fail("read: unexpected EOF, %zu bytes missing", len);
		p += ret;
		len -= (size_t)ret;
	}
}

void su_reset(int fd)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	vt_try(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)),
	       "setsockopt(SO_LINGER {1, 0})");
	close(fd);
}

void su_expect_eof(int fd)
{
	char ch;
	ssize_t ret;

	do {
		ret = read(fd, &ch, 1);
	} while (ret < 0 && errno == EINTR);
	if (ret < 0)
		vt_fail("read: expected EOF, got %s (%s)", vt_errname(errno),
			strerror(errno));
	vt_assert(ret == 0, "read: expected EOF, got data (0x%02x)",
		  (unsigned char)ch);
}

ssize_t su_read_within(int fd, void *buf, size_t len, int timeout_ms)
{
	long long deadline = ctl_now_ms() + timeout_ms;
	size_t got = 0;

	while (got < len) {
		long long left = deadline - ctl_now_ms();
		ssize_t n;

		if (left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		if (su_poll(fd, POLLIN, (int)left) == 0)
			continue;
		n = recv(fd, (char *)buf + got, len - got, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

short su_poll(int fd, short events, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int ret;

	do {
		ret = poll(&pfd, 1, timeout_ms);
	} while (ret < 0 && errno == EINTR);
	vt_try(ret, "poll");
	return ret ? pfd.revents : 0;
}

short su_wait(int fd, short events, const char *what)
{
	long long deadline = ctl_now_ms() + SU_WAIT_MS;
	short rev;

	for (;;) {
		long long left = deadline - ctl_now_ms();

		rev = su_poll(fd, events, left > 0 ? (int)left : 0);
		if (rev & events)
			return rev;
		if (left <= 0)
			break;
		/* Other bits (POLLERR, POLLHUP) are reported regardless. */
		if (rev)
			usleep(10000);
	}
	vt_fail("waiting %d ms for %s: not reported (revents 0x%x)",
		SU_WAIT_MS, what, rev);
}

void su_wait_bytes(int fd, int bytes)
{
	long long deadline = ctl_now_ms() + SU_WAIT_MS;
	int avail = 0;

	while (ctl_now_ms() < deadline) {
		vt_try(ioctl(fd, FIONREAD, &avail), "ioctl(FIONREAD)");
		if (avail >= bytes)
			return;
		usleep(5000);
	}
	vt_fail("waiting for %d bytes to arrive: only %d", bytes, avail);
}

int su_getint_at(int fd, int level, int name, const char *what)
{
	socklen_t len = sizeof(int);
	int val = 0;

	if (getsockopt(fd, level, name, &val, &len))
		vt_fail("getsockopt(%s): %s (%s)", what, vt_errname(errno),
			strerror(errno));
	vt_assert(len == sizeof(int), "getsockopt(%s): optlen %u", what, len);
	return val;
}

void su_setint_at(int fd, int level, int name, const char *what, int val)
{
	if (setsockopt(fd, level, name, &val, sizeof(val)))
		vt_fail("setsockopt(%s, %d): %s (%s)", what, val,
			vt_errname(errno), strerror(errno));
}

void su_nonblock(int fd, bool on)
{
	int fl = (int)vt_try(fcntl(fd, F_GETFL), "fcntl(F_GETFL)");

	fl = on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK;
	vt_try(fcntl(fd, F_SETFL, fl), "fcntl(F_SETFL)");
}

const char *su_addr_str(const struct sockaddr *sa, char *buf, size_t size)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)sa;

		inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
		snprintf(buf, size, "%s:%u", ip, ntohs(sin->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)sa;

		inet_ntop(AF_INET6, &sin6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, size, "[%s]:%u", ip, ntohs(sin6->sin6_port));
	} else {
		snprintf(buf, size, "family-%d", sa->sa_family);
	}
	return buf;
}

const char *su_revents_str(short rev, char *buf, size_t size)
{
	static const struct {
		short bit;
		const char *name;
	} bits[] = {
		{ POLLIN, "IN" }, { POLLPRI, "PRI" }, { POLLOUT, "OUT" },
		{ POLLERR, "ERR" }, { POLLHUP, "HUP" }, { POLLNVAL, "NVAL" },
		{ POLLRDNORM, "RDNORM" }, { POLLRDBAND, "RDBAND" },
		{ POLLWRNORM, "WRNORM" }, { POLLWRBAND, "WRBAND" },
		{ POLLRDHUP, "RDHUP" },
	};
	size_t i, off = 0;

	buf[0] = '\0';
	for (i = 0; i < ARRAY_SIZE(bits); i++)
		if ((rev & bits[i].bit) && off < size)
			off += snprintf(buf + off, size - off, "%s%s",
					off ? "|" : "", bits[i].name);
	if (!off)
		snprintf(buf, size, "0");
	return buf;
}

/* ---- payload streams ---- */

static uint64_t pl_word(uint64_t seed, uint64_t idx)
{
	uint64_t z = seed + (idx + 1) * 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline uint64_t fnv1a(uint64_t h, uint8_t b)
{
	return (h ^ b) * 0x100000001b3ULL;
}

#define FNV_BASIS 0xcbf29ce484222325ULL

static void put_le64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

uint64_t pl_total(uint64_t len)
{
	return PL_HDR_LEN + len + PL_TRAILER_LEN;
}

void pl_tx_init(struct pl_tx *tx, uint64_t len)
{
	memset(tx, 0, sizeof(*tx));
	if (getrandom(&tx->seed, sizeof(tx->seed), 0) != sizeof(tx->seed))
		tx->seed = (uint64_t)getpid() * 0x2545f4914f6cdd1dULL ^
			   (uint64_t)ctl_now_ms();
	tx->len = len;
	tx->sum = FNV_BASIS;
}

bool pl_tx_done(const struct pl_tx *tx)
{
	return tx->pos == pl_total(tx->len);
}

size_t pl_tx_fill(struct pl_tx *tx, uint8_t *buf, size_t size)
{
	uint8_t hdr[PL_HDR_LEN], trailer[PL_TRAILER_LEN];
	uint64_t total = pl_total(tx->len);
	uint64_t word = 0;
	size_t n = 0;

	memcpy(hdr, pl_magic, 8);
	put_le64(hdr + 8, tx->seed);
	put_le64(hdr + 16, tx->len);
	while (n < size && tx->pos < total) {
		uint64_t p = tx->pos;
		uint8_t b;

		if (p < PL_HDR_LEN) {
			b = hdr[p];
		} else if (p < PL_HDR_LEN + tx->len) {
			uint64_t off = p - PL_HDR_LEN;

			if (!(off & 7) || n == 0)
				word = pl_word(tx->seed, off >> 3);
			b = (uint8_t)(word >> ((off & 7) * 8));
			tx->sum = fnv1a(tx->sum, b);
		} else {
			put_le64(trailer, tx->sum);
			b = trailer[p - PL_HDR_LEN - tx->len];
		}
		buf[n++] = b;
		tx->pos++;
	}
	return n;
}

void pl_rx_init(struct pl_rx *rx, uint64_t want_len)
{
	memset(rx, 0, sizeof(*rx));
	rx->want_len = want_len;
	rx->sum = FNV_BASIS;
}

bool pl_rx_done(const struct pl_rx *rx)
{
	return rx->pos >= PL_HDR_LEN && rx->pos == pl_total(rx->len);
}

int pl_rx_feed(struct pl_rx *rx, const uint8_t *buf, size_t len)
{
	uint64_t word = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		uint64_t p = rx->pos;
		uint8_t b = buf[i];

		if (p < PL_HDR_LEN) {
			rx->hdr[p] = b;
			rx->pos++;
			if (rx->pos < PL_HDR_LEN)
				continue;
			if (memcmp(rx->hdr, pl_magic, 8)) {
				snprintf(rx->err, sizeof(rx->err),
					 "stream header: bad magic");
				return -1;
			}
			rx->seed = get_le64(rx->hdr + 8);
			rx->len = get_le64(rx->hdr + 16);
			if (rx->want_len != UINT64_MAX &&
			    rx->len != rx->want_len) {
				snprintf(rx->err, sizeof(rx->err),
					 "stream header: length %llu, expected %llu",
					 (unsigned long long)rx->len,
					 (unsigned long long)rx->want_len);
				return -1;
			}
			continue;
		}
		if (p >= pl_total(rx->len)) {
			snprintf(rx->err, sizeof(rx->err),
				 "%zu unexpected bytes after the end of the stream",
				 len - i);
			return -1;
		}
		if (p < PL_HDR_LEN + rx->len) {
			uint64_t off = p - PL_HDR_LEN;
			uint8_t want;

			if (!(off & 7) || i == 0 || p == PL_HDR_LEN)
				word = pl_word(rx->seed, off >> 3);
			want = (uint8_t)(word >> ((off & 7) * 8));
			if (b != want) {
				snprintf(rx->err, sizeof(rx->err),
					 "payload byte %llu of %llu is 0x%02x, expected 0x%02x",
					 (unsigned long long)off,
					 (unsigned long long)rx->len, b, want);
				return -1;
			}
			rx->sum = fnv1a(rx->sum, b);
		} else {
			rx->trailer[p - PL_HDR_LEN - rx->len] = b;
		}
		rx->pos++;
		if (rx->pos != pl_total(rx->len))
			continue;
		if (get_le64(rx->trailer) != rx->sum) {
			snprintf(rx->err, sizeof(rx->err),
				 "checksum mismatch: sender 0x%016llx, received data 0x%016llx",
				 (unsigned long long)get_le64(rx->trailer),
				 (unsigned long long)rx->sum);
			return -1;
		}
		vt_note_stream(rx->len, rx->sum);
	}
	return 0;
}

void pl_check(struct pl_rx *rx, const void *buf, size_t len)
{
	if (pl_rx_feed(rx, buf, len))
		vt_fail("received data: %s", rx->err);
}

void pl_send(int fd, uint64_t len)
{
	uint8_t *buf = malloc(SU_CHUNK);
	struct pl_tx tx;
	size_t n;

	vt_assert(buf, "out of memory");
	pl_tx_init(&tx, len);
	while ((n = pl_tx_fill(&tx, buf, SU_CHUNK)))
		su_write_all(fd, buf, n);
	free(buf);
}

void pl_recv(int fd, uint64_t len)
{
	uint8_t *buf = malloc(SU_CHUNK);
	struct pl_rx rx;
	ssize_t ret;

	vt_assert(buf, "out of memory");
	pl_rx_init(&rx, len);
	for (;;) {
		ret = read(fd, buf, SU_CHUNK);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0)
			vt_fail("read after %llu bytes: %s (%s)",
				(unsigned long long)rx.pos, vt_errname(errno),
				strerror(errno));
		if (ret == 0)
			break;
		pl_check(&rx, buf, (size_t)ret);
	}
	vt_assert(pl_rx_done(&rx), "EOF after %llu of %llu stream bytes",
		  (unsigned long long)rx.pos,
		  (unsigned long long)pl_total(len));
	free(buf);
}

struct su_xf {
	struct pl_tx tx;
	struct pl_rx rx;
	uint8_t *buf;		/* pending output */
	size_t off, n;
	bool shut, eof;
};

void su_xfer(const int *fds, int n, uint64_t len, int timeout_ms)
{
	long long budget = (long long)timeout_ms * vt_time_scale;
	long long deadline = ctl_now_ms() + budget;
	struct pollfd *pfd = calloc(n, sizeof(*pfd));
	struct su_xf *xf = calloc(n, sizeof(*xf));
	uint8_t *in = malloc(SU_CHUNK);
	int i, left = n;

	vt_assert(pfd && xf && in, "out of memory");
	for (i = 0; i < n; i++) {
		su_nonblock(fds[i], true);
		pl_tx_init(&xf[i].tx, len);
		pl_rx_init(&xf[i].rx, len);
		xf[i].buf = malloc(SU_CHUNK);
		vt_assert(xf[i].buf, "out of memory");
	}
	while (left) {
		int ret;

		for (i = 0; i < n; i++) {
			pfd[i].fd = (xf[i].shut && xf[i].eof) ? -1 : fds[i];
			pfd[i].events = (xf[i].shut ? 0 : POLLOUT) |
					(xf[i].eof ? 0 : POLLIN);
		}
		ret = poll(pfd, n, 1000);
		if (ret < 0 && errno == EINTR)
			continue;
		vt_try(ret, "poll");
		if (ctl_now_ms() > deadline)
			vt_fail("transfer not finished after %lld ms (%d of %d connections open)",
				budget, left, n);
		for (i = 0; i < n; i++) {
			struct su_xf *x = &xf[i];
			ssize_t r;

			if (pfd[i].fd < 0 || !pfd[i].revents)
				continue;
			if (!x->shut && (pfd[i].revents & (POLLOUT | POLLERR))) {
				if (x->off == x->n) {
					x->off = 0;
					x->n = pl_tx_fill(&x->tx, x->buf,
							  SU_CHUNK);
				}
				r = send(fds[i], x->buf + x->off, x->n - x->off,
					 MSG_NOSIGNAL);
				if (r < 0 && errno != EAGAIN && errno != EINTR)
					vt_fail("connection %d: send: %s (%s)",
						i, vt_errname(errno),
						strerror(errno));
				if (r > 0)
					x->off += (size_t)r;
				if (x->off == x->n && pl_tx_done(&x->tx)) {
					vt_try(shutdown(fds[i], SHUT_WR),
					       "shutdown(SHUT_WR)");
					x->shut = true;
				}
			}
			if (!x->eof && (pfd[i].revents &
					(POLLIN | POLLERR | POLLHUP))) {
				r = recv(fds[i], in, SU_CHUNK, 0);
				if (r < 0 && errno != EAGAIN && errno != EINTR)
					vt_fail("connection %d: recv: %s (%s)",
						i, vt_errname(errno),
						strerror(errno));
				if (r > 0 && pl_rx_feed(&x->rx, in, (size_t)r))
					vt_fail("connection %d: %s", i,
						x->rx.err);
				if (r == 0) {
					vt_assert(pl_rx_done(&x->rx),
						  "connection %d: EOF after %llu of %llu bytes",
						  i,
						  (unsigned long long)x->rx.pos,
						  (unsigned long long)pl_total(len));
					x->eof = true;
				}
			}
			if (x->shut && x->eof)
				left--;
		}
	}
	for (i = 0; i < n; i++) {
		su_nonblock(fds[i], false);
		free(xf[i].buf);
	}
	free(in);
	free(xf);
	free(pfd);
}
