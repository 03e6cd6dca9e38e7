// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring on a visock connection against io_uring on TCP, between the
 * two hosts with net.visock.enable=1 on both (the runner only runs these
 * after hs.rdma_ready passed).  Every test runs its check three times
 * with the same expectations: over an AF_INET SOCK_STREAM connection (so
 * the expectations are TCP's), over an AF_VISOCK connection in
 * VISOCK_MODE_TCP on both ends (the client connects with
 * net.visock.enable=0, so both ends fall back) and over an AF_VISOCK
 * connection in VISOCK_MODE_RDMA on both ends before and after the
 * check.  Every connection is made with IORING_OP_ACCEPT and
 * IORING_OP_CONNECT.  The server reads and checks every byte, the client
 * writes what it is told to (with write(), IORING_OP_SEND, SENDMSG,
 * SEND_ZC or SENDMSG_ZC) and reports how its completions looked.
 *
 * accept_connect	IORING_OP_ACCEPT returns the connection with the
 *			client's address and honours SOCK_NONBLOCK;
 *			IORING_OP_CONNECT completes with 0 and the peer's
 *			address, and with -ECONNREFUSED towards a closed port
 * send_recv		IORING_OP_SEND / IORING_OP_RECV, small and larger
 *			than a socket buffer
 * sendmsg_recvmsg	IORING_OP_SENDMSG with three iovecs, IORING_OP_RECVMSG
 *			with two, msg_flags 0
 * recv_multishot	IORING_RECV_MULTISHOT with a provided buffer ring:
 *			one CQE per buffer with IORING_CQE_F_BUFFER and
 *			IORING_CQE_F_MORE, buffers given back and reused;
 *			without buffers given back, -ENOBUFS ends it and the
 *			rest of the stream stays queued
 * send_zc		IORING_OP_SEND_ZC and IORING_OP_SENDMSG_ZC: a result
 *			CQE with IORING_CQE_F_MORE, then one notification
 *			(IORING_CQE_F_NOTIF, res 0); the buffer is overwritten
 *			after the notification and the reader still gets the
 *			bytes that were in it
 * poll_first		IORING_RECVSEND_POLL_FIRST on RECV (nothing queued:
 *			no completion until the peer writes; bytes queued:
 *			completes with them) and on SEND; IORING_OP_POLL_ADD
 *			for POLLIN
 * eof			after the peer's shutdown(SHUT_WR), a pending RECV, a
 *			RECV, a RECVMSG and a multishot RECV complete with 0
 *			(the multishot one without IORING_CQE_F_MORE)
 *
 * No test checks how long anything takes; every wait is bounded.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <liburing.h>
#include <linux/visock.h>
#include <netinet/in.h>

#include "harness.h"
#include "hostutil.h"
#include "ktap.h"
#include "sockutil.h"

#define WAIT_MS		10000		/* something the peer owes */
#define BIG		300000		/* more than a socket buffer */
#define NBUF		8		/* provided buffers */
#define BUF_SZ		4096		/* each */
#define BGID		7

enum ur_kind { UR_TCP, UR_VTCP, UR_RDMA };

static const char *const kind_name[] = {
	"TCP", "visock TCP mode", "visock RDMA"
};

static struct hu_saved_sysctl saved[] = { { "enable", -1 } };

static void ur_cleanup(const struct vt_ctx *c)
{
	(void)c;
	hu_sysctls_restore(saved, ARRAY_SIZE(saved));
}

/* ---- io_uring helpers ---- */

struct cqe {
	int res;
	unsigned int flags;
	uint64_t data;
};

static void ur_init(struct io_uring *r)
{
	int ret = io_uring_queue_init(32, r, 0);

	if (ret)
		vt_fail("io_uring_queue_init: %s (%s)", vt_errname(-ret),
			strerror(-ret));
}

static struct io_uring_sqe *ur_sqe(struct io_uring *r)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(r);

	vt_assert(sqe, "no free SQE");
	return sqe;
}

static void ur_submit(struct io_uring *r)
{
	int ret = io_uring_submit(r);

	vt_assert(ret >= 1, "io_uring_submit: %d (%s)", ret,
		  ret < 0 ? strerror(-ret) : "nothing submitted");
}

/* Next completion within WAIT_MS; false (and *c untouched) if none. */
static bool ur_wait_ms(struct io_uring *r, struct cqe *c, int ms)
{
	struct __kernel_timespec ts = {
		.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000LL,
	};
	struct io_uring_cqe *cqe;
	int ret;

	do {
		ret = io_uring_wait_cqe_timeout(r, &cqe, &ts);
	} while (ret == -EINTR);
	if (ret == -ETIME)
		return false;
	if (ret)
		vt_fail("io_uring_wait_cqe: %s (%s)", vt_errname(-ret),
			strerror(-ret));
	c->res = cqe->res;
	c->flags = cqe->flags;
	c->data = cqe->user_data;
	io_uring_cqe_seen(r, cqe);
	return true;
}

static void ur_wait(struct io_uring *r, struct cqe *c, const char *what)
{
	if (!ur_wait_ms(r, c, WAIT_MS))
		vt_fail("%s: no completion within %d ms", what, WAIT_MS);
}

/* Nothing completed (yet). */
static bool ur_idle(struct io_uring *r)
{
	struct io_uring_cqe *cqe;

	return io_uring_peek_cqe(r, &cqe) == -EAGAIN;
}

static const char *res_str(int res, char *buf, size_t size)
{
	if (res < 0)
		snprintf(buf, size, "-%s", vt_errname(-res));
	else
		snprintf(buf, size, "%d", res);
	return buf;
}

/* ---- the byte stream: a counting pattern modulo 251 ---- */

static void fill(uint8_t *buf, size_t n, unsigned long *pos)
{
	size_t i;

	for (i = 0; i < n; i++)
		buf[i] = (uint8_t)((*pos)++ % 251);
}

static void expect_bytes(const char *k, const uint8_t *buf, size_t n,
			 unsigned long *pos)
{
	size_t i;

	for (i = 0; i < n; i++, (*pos)++)
		vt_assert(buf[i] == (uint8_t)(*pos % 251),
			  "%s: stream byte %lu is %u, expected %lu", k, *pos,
			  buf[i], *pos % 251);
}

/* ---- connection through IORING_OP_ACCEPT / IORING_OP_CONNECT ---- */

static int ur_mode(int fd)
{
	uint32_t m = 0;
	socklen_t len = sizeof(m);

	vt_try(getsockopt(fd, SOL_VISOCK, VISOCK_MODE, &m, &len),
	       "getsockopt(VISOCK_MODE)");
	return (int)m;
}

/* A visock connection settles on TCP or RDMA shortly after it is up. */
static void expect_mode(int fd, enum ur_kind kind, const char *what)
{
	long long deadline = ctl_now_ms() + WAIT_MS;
	int m;

	if (kind == UR_TCP)
		return;
	while ((m = ur_mode(fd)) == VISOCK_MODE_HANDSHAKE &&
	       ctl_now_ms() < deadline)
		usleep(5000);
	if (kind == UR_RDMA) {
		hu_expect_rdma(fd, what, NULL);
		return;
	}
	vt_assert(m == VISOCK_MODE_TCP, "%s: mode %d, expected TCP (%d)", what,
		  m, VISOCK_MODE_TCP);
}

static int sin_port(const struct sockaddr_storage *ss)
{
	vt_assert(ss->ss_family == AF_INET, "address family %d, expected %d",
		  ss->ss_family, AF_INET);
	return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

static int peer_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	vt_try(getpeername(fd, (struct sockaddr *)&ss, &len), "getpeername");
	return sin_port(&ss);
}

/*
 * Server: IORING_OP_ACCEPT of the client's connection (@flags: accept4()
 * flags), checking the address it returns; client: IORING_OP_CONNECT.
 */
static int ur_pair(struct vt_ctx *c, struct io_uring *r, enum ur_kind kind,
		   int flags)
{
	enum vt_family fam = kind == UR_TCP ? VT_FAMILY_INET :
					      VT_FAMILY_VISOCK;
	struct timeval tv = { .tv_sec = WAIT_MS / 1000 };
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char rs[32];
	struct cqe q;
	int fd, lfd;

	if (vt_is_client(c)) {
		int port = su_recv_port(c);

		if (kind == UR_VTCP)
			hu_sysctl_set("enable", 0);
		len = su_peer_addr(c, false, port, &ss);
		fd = su_socket(fam, false, SOCK_CLOEXEC);
		io_uring_prep_connect(ur_sqe(r), fd, (struct sockaddr *)&ss,
				      len);
		ur_submit(r);
		ur_wait(r, &q, "IORING_OP_CONNECT");
		if (kind == UR_VTCP)
			hu_sysctl_set("enable", 1);
		vt_assert(q.res == 0, "%s: IORING_OP_CONNECT: %s, expected 0",
			  kind_name[kind], res_str(q.res, rs, sizeof(rs)));
		vt_assert(peer_port(fd) == port,
			  "%s: connected to port %d, expected %d",
			  kind_name[kind], peer_port(fd), port);
		vt_send_num(c, "ME", su_port(fd));
	} else {
		lfd = su_listen(fam, false, 16, SOCK_CLOEXEC);
		su_send_port(c, lfd);
		memset(&ss, 0, sizeof(ss));
		io_uring_prep_accept(ur_sqe(r), lfd, (struct sockaddr *)&ss,
				     &len, SOCK_CLOEXEC | flags);
		ur_submit(r);
		ur_wait(r, &q, "IORING_OP_ACCEPT");
		vt_assert(q.res >= 0, "%s: IORING_OP_ACCEPT: %s",
			  kind_name[kind], res_str(q.res, rs, sizeof(rs)));
		fd = q.res;
		close(lfd);
		vt_assert(len == sizeof(struct sockaddr_in),
			  "%s: IORING_OP_ACCEPT: address length %u", kind_name[kind],
			  len);
		{
			long long me = vt_recv_num(c, "ME");

			vt_assert(sin_port(&ss) == me && peer_port(fd) == me,
				  "%s: accepted address port %d, getpeername() %d, the client's is %lld",
				  kind_name[kind], sin_port(&ss), peer_port(fd), me);
		}
	}
	expect_mode(fd, kind, vt_is_client(c) ? "io_uring connected socket" :
			      "io_uring accepted socket");
	vt_try(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)),
	       "setsockopt(SO_RCVTIMEO)");
	vt_try(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)),
	       "setsockopt(SO_SNDTIMEO)");
	return fd;
}

/* ---- the client: writes what it is told ---- */

struct writer {
	struct vt_ctx *c;
	struct io_uring *r;
	int fd;
	const char *k;
	unsigned long pos;
	uint8_t *buf;
};

/* Tell the server why, then fail. */
static __printf(2, 3) __noreturn void wfail(struct writer *w,
					    const char *fmt, ...)
{
	char msg[CTL_LINE_MAX - 16];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	vt_send(w->c, "fail %s", msg);
	vt_fail("%s: %s", w->k, msg);
}

/* IORING_OP_SEND (@poll_first: IORING_RECVSEND_POLL_FIRST) or SENDMSG. */
static void w_send(struct writer *w, long n, bool msg, bool poll_first)
{
	long done = 0;
	char rs[32];
	struct cqe q;

	fill(w->buf, (size_t)n, &w->pos);
	while (done < n) {
		struct io_uring_sqe *sqe = ur_sqe(w->r);
		struct iovec iov[3];
		struct msghdr mh = { .msg_iov = iov };
		long left = n - done, a = left / 7, b = left / 3;

		if (msg) {
			/* Three pieces (some may be empty). */
			iov[0].iov_base = w->buf + done;
			iov[0].iov_len = (size_t)a;
			iov[1].iov_base = w->buf + done + a;
			iov[1].iov_len = (size_t)b;
			iov[2].iov_base = w->buf + done + a + b;
			iov[2].iov_len = (size_t)(left - a - b);
			mh.msg_iovlen = 3;
			io_uring_prep_sendmsg(sqe, w->fd, &mh, 0);
		} else {
			io_uring_prep_send(sqe, w->fd, w->buf + done,
					   (size_t)left, 0);
			if (poll_first)
				sqe->ioprio |= IORING_RECVSEND_POLL_FIRST;
		}
		ur_submit(w->r);
		if (!ur_wait_ms(w->r, &q, WAIT_MS))
			wfail(w, "%s: no completion within %d ms",
			      msg ? "SENDMSG" : "SEND", WAIT_MS);
		if (q.res <= 0)
			wfail(w, "%s of %ld bytes: %s", msg ? "SENDMSG" : "SEND",
			      left, res_str(q.res, rs, sizeof(rs)));
		done += q.res;
	}
}

/*
 * SEND_ZC or SENDMSG_ZC of @n bytes: each request completes with its
 * result (IORING_CQE_F_MORE set) and one notification (IORING_CQE_F_NOTIF,
 * res 0, no IORING_CQE_F_MORE), in either order.  After the notification
 * the buffer is the application's again: it is overwritten.
 */
static void w_send_zc(struct writer *w, long n, bool msg)
{
	const char *op = msg ? "SENDMSG_ZC" : "SEND_ZC";
	long done = 0;
	char rs[32];
	struct cqe q;

	fill(w->buf, (size_t)n, &w->pos);
	while (done < n) {
		struct io_uring_sqe *sqe = ur_sqe(w->r);
		struct iovec iov = {
			.iov_base = w->buf + done, .iov_len = (size_t)(n - done),
		};
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		bool res_seen = false, more = false, notif_seen = false;
		int res = 0;

		if (msg)
			io_uring_prep_sendmsg_zc(sqe, w->fd, &mh, 0);
		else
			io_uring_prep_send_zc(sqe, w->fd, iov.iov_base,
					      iov.iov_len, 0, 0);
		ur_submit(w->r);
		while (!res_seen || (more && !notif_seen)) {
			if (!ur_wait_ms(w->r, &q, WAIT_MS))
				wfail(w, "%s: %s within %d ms", op,
				      res_seen ? "no notification" :
				      "no completion", WAIT_MS);
			if (q.flags & IORING_CQE_F_NOTIF) {
				if (notif_seen || q.res ||
				    (q.flags & IORING_CQE_F_MORE))
					wfail(w, "%s: notification res %d flags %#x%s",
					      op, q.res, q.flags,
					      notif_seen ? " (a second one)" : "");
				notif_seen = true;
				continue;
			}
			if (res_seen)
				wfail(w, "%s: a second result CQE", op);
			res_seen = true;
			res = q.res;
			more = q.flags & IORING_CQE_F_MORE;
		}
		if (res <= 0)
			wfail(w, "%s of %ld bytes: %s", op, n - done,
			      res_str(res, rs, sizeof(rs)));
		if (!more)
			wfail(w, "%s: result %d without IORING_CQE_F_MORE", op,
			      res);
		/* The buffer is ours again: what was sent must not change. */
		memset(w->buf + done, 0xdd, (size_t)res);
		done += res;
	}
}

static void writer_loop(struct vt_ctx *c, struct io_uring *r, int fd,
			const char *k)
{
	struct writer w = { .c = c, .r = r, .fd = fd, .k = k };
	char line[CTL_LINE_MAX], op[32];
	long n;

	w.buf = malloc(BIG);
	vt_assert(w.buf, "malloc");
	for (;;) {
		vt_recv(c, line, sizeof(line));
		if (!strcmp(line, "end"))
			break;
		if (!strcmp(line, "shut")) {
			vt_try(shutdown(fd, SHUT_WR), "shutdown(SHUT_WR)");
			vt_send(c, "ok");
			continue;
		}
		if (sscanf(line, "%31s %ld", op, &n) != 2 || n <= 0 || n > BIG)
			vt_fail("writer: unexpected line '%s'", line);
		if (!strcmp(op, "write")) {
			fill(w.buf, (size_t)n, &w.pos);
			su_write_all(fd, w.buf, (size_t)n);
		} else if (!strcmp(op, "send")) {
			w_send(&w, n, false, false);
		} else if (!strcmp(op, "send_pf")) {
			w_send(&w, n, false, true);
		} else if (!strcmp(op, "sendmsg")) {
			w_send(&w, n, true, false);
		} else if (!strcmp(op, "send_zc")) {
			w_send_zc(&w, n, false);
		} else if (!strcmp(op, "sendmsg_zc")) {
			w_send_zc(&w, n, true);
		} else {
			vt_fail("writer: unexpected line '%s'", line);
		}
		vt_send(c, "ok");
	}
	free(w.buf);
}

/* ---- the server's side ---- */

struct reader {
	struct vt_ctx *c;
	struct io_uring *r;
	int fd;
	const char *k;
	unsigned long pos;
	enum ur_kind kind;
};

/* The client did what it was told (it says why not). */
static void r_ok(struct reader *rd, const char *what)
{
	char line[CTL_LINE_MAX];

	vt_recv(rd->c, line, sizeof(line));
	if (strcmp(line, "ok"))
		vt_fail("%s: client's %s: %s", rd->k, what, line);
}

/* Have the client send @n bytes its way @op (no wait for its answer). */
static void r_ask(struct reader *rd, const char *op, long n)
{
	vt_send(rd->c, "%s %ld", op, n);
}

/* IORING_OP_RECV until @n bytes arrived, each checked. */
static void r_recv(struct reader *rd, long n, const char *what)
{
	static uint8_t buf[BIG];
	char rs[32];
	struct cqe q;
	long got = 0;

	while (got < n) {
		io_uring_prep_recv(ur_sqe(rd->r), rd->fd, buf, sizeof(buf), 0);
		ur_submit(rd->r);
		ur_wait(rd->r, &q, what);
		vt_assert(q.res > 0, "%s: %s: RECV %s after %ld of %ld bytes",
			  rd->k, what, res_str(q.res, rs, sizeof(rs)), got, n);
		vt_assert(q.res <= n - got,
			  "%s: %s: RECV returned %d, only %ld were written",
			  rd->k, what, q.res, n - got);
		expect_bytes(rd->k, buf, (size_t)q.res, &rd->pos);
		got += q.res;
	}
}

/* One RECV (prepared by the caller as user_data 1) must return @want. */
static void r_expect_res(struct reader *rd, int want, const char *what)
{
	char rs[32], ws[32];
	struct cqe q;

	ur_wait(rd->r, &q, what);
	vt_assert(q.res == want, "%s: %s: %s, expected %s", rd->k, what,
		  res_str(q.res, rs, sizeof(rs)), res_str(want, ws, sizeof(ws)));
}

/* ---- accept_connect ---- */

static void accept_connect_client(struct vt_ctx *c, struct io_uring *r,
				  int fd, enum ur_kind kind)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char rs[32];
	struct cqe q;
	int port, s;

	(void)fd;
	/* A port nobody listens on. */
	port = su_recv_port(c);
	len = su_peer_addr(c, false, port, &ss);
	s = su_socket(kind == UR_TCP ? VT_FAMILY_INET : VT_FAMILY_VISOCK,
		      false, SOCK_CLOEXEC);
	io_uring_prep_connect(ur_sqe(r), s, (struct sockaddr *)&ss, len);
	ur_submit(r);
	ur_wait(r, &q, "IORING_OP_CONNECT to a closed port");
	close(s);
	if (q.res != -ECONNREFUSED) {
		vt_send(c, "fail CONNECT to a closed port: %s",
			res_str(q.res, rs, sizeof(rs)));
		vt_fail("%s: IORING_OP_CONNECT to a closed port: %s, expected -ECONNREFUSED",
			kind_name[kind], res_str(q.res, rs, sizeof(rs)));
	}
	vt_send(c, "ok");
}

static void accept_connect_server(struct reader *rd)
{
	int lfd, port, fl;

	/* The connection came with SOCK_NONBLOCK (ur_run()). */
	fl = vt_try(fcntl(rd->fd, F_GETFL), "fcntl(F_GETFL)");
	vt_assert(fl & O_NONBLOCK,
		  "%s: IORING_OP_ACCEPT with SOCK_NONBLOCK: no O_NONBLOCK", rd->k);
	lfd = su_listen(rd->kind == UR_TCP ? VT_FAMILY_INET : VT_FAMILY_VISOCK,
			false, 1, SOCK_CLOEXEC);
	port = su_port(lfd);
	close(lfd);
	vt_send_num(rd->c, "PORT", port);
	r_ok(rd, "CONNECT to a closed port");
	/* And the connection works. */
	r_ask(rd, "send", 1000);
	r_recv(rd, 1000, "RECV on the accepted connection");
	r_ok(rd, "SEND");
}

/* ---- send_recv ---- */

static void send_recv_server(struct reader *rd)
{
	r_ask(rd, "send", 1000);
	r_recv(rd, 1000, "RECV of 1000 bytes");
	r_ok(rd, "SEND of 1000");
	/* Larger than a socket buffer: both sides wait for each other. */
	r_ask(rd, "send", BIG);
	r_recv(rd, BIG, "RECV of a long stream");
	r_ok(rd, "SEND of a long stream");
}

/* ---- sendmsg_recvmsg ---- */

static void r_recvmsg(struct reader *rd, long n)
{
	static uint8_t a[1000], b[3000];
	struct iovec iov[2] = {
		{ .iov_base = a, .iov_len = sizeof(a) },
		{ .iov_base = b, .iov_len = sizeof(b) },
	};
	struct msghdr mh;
	char rs[32];
	struct cqe q;
	long got = 0;

	while (got < n) {
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = iov;
		mh.msg_iovlen = 2;
		io_uring_prep_recvmsg(ur_sqe(rd->r), rd->fd, &mh, 0);
		ur_submit(rd->r);
		ur_wait(rd->r, &q, "RECVMSG");
		vt_assert(q.res > 0 && q.res <= n - got,
			  "%s: RECVMSG %s after %ld of %ld bytes", rd->k,
			  res_str(q.res, rs, sizeof(rs)), got, n);
		vt_assert(!mh.msg_flags, "%s: RECVMSG msg_flags %#x", rd->k,
			  mh.msg_flags);
		if (q.res <= (int)sizeof(a)) {
			expect_bytes(rd->k, a, (size_t)q.res, &rd->pos);
		} else {
			expect_bytes(rd->k, a, sizeof(a), &rd->pos);
			expect_bytes(rd->k, b, (size_t)q.res - sizeof(a),
				     &rd->pos);
		}
		got += q.res;
	}
}

static void sendmsg_recvmsg_server(struct reader *rd)
{
	r_ask(rd, "sendmsg", 3500);
	r_recvmsg(rd, 3500);
	r_ok(rd, "SENDMSG of 3500");
	r_ask(rd, "sendmsg", BIG);
	r_recvmsg(rd, BIG);
	r_ok(rd, "SENDMSG of a long stream");
}

/* ---- recv_multishot ---- */

struct bufring {
	struct io_uring_buf_ring *br;
	uint8_t *mem;
	size_t ring_sz;
};

/* Ring of NBUF buffers of BUF_SZ in group BGID, all given. */
static void bufring_setup(struct io_uring *r, struct bufring *b)
{
	struct io_uring_buf_reg reg = { .ring_entries = NBUF, .bgid = BGID };
	int i, ret;

	b->ring_sz = NBUF * sizeof(struct io_uring_buf);
	b->br = mmap(NULL, b->ring_sz, PROT_READ | PROT_WRITE,
		     MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
	vt_assert(b->br != MAP_FAILED, "mmap of the buffer ring: %s",
		  strerror(errno));
	b->mem = malloc(NBUF * BUF_SZ);
	vt_assert(b->mem, "malloc");
	reg.ring_addr = (unsigned long)b->br;
	io_uring_buf_ring_init(b->br);
	ret = io_uring_register_buf_ring(r, &reg, 0);
	vt_assert(!ret, "io_uring_register_buf_ring: %s", strerror(-ret));
	for (i = 0; i < NBUF; i++)
		io_uring_buf_ring_add(b->br, b->mem + i * BUF_SZ, BUF_SZ, i,
				      io_uring_buf_ring_mask(NBUF), i);
	io_uring_buf_ring_advance(b->br, NBUF);
}

static void bufring_give(struct bufring *b, int bid)
{
	io_uring_buf_ring_add(b->br, b->mem + bid * BUF_SZ, BUF_SZ, bid,
			      io_uring_buf_ring_mask(NBUF), 0);
	io_uring_buf_ring_advance(b->br, 1);
}

static void bufring_free(struct io_uring *r, struct bufring *b)
{
	io_uring_unregister_buf_ring(r, BGID);
	munmap(b->br, b->ring_sz);
	free(b->mem);
}

static void prep_multishot(struct reader *rd)
{
	struct io_uring_sqe *sqe = ur_sqe(rd->r);

	io_uring_prep_recv(sqe, rd->fd, NULL, 0, 0);
	sqe->user_data = 1;
	sqe->ioprio |= IORING_RECV_MULTISHOT;
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = BGID;
	ur_submit(rd->r);
}

/*
 * Completions of a multishot RECV carrying data: @n bytes in all; the
 * buffers are given back unless @keep.  Returns the bytes received
 * before the request ended (then *@end gets its res), else @n.
 */
static long r_multishot(struct reader *rd, struct bufring *b, long n,
			bool keep, int *end)
{
	char rs[32];
	struct cqe q;
	long got = 0;
	int bid;

	*end = 1;
	while (got < n) {
		ur_wait(rd->r, &q, "multishot RECV");
		if (!(q.flags & IORING_CQE_F_MORE)) {
			*end = q.res;
			vt_assert(q.res <= 0,
				  "%s: multishot RECV ended with %d bytes",
				  rd->k, q.res);
			return got;
		}
		vt_assert(q.res > 0 && q.res <= n - got,
			  "%s: multishot RECV %s after %ld of %ld bytes", rd->k,
			  res_str(q.res, rs, sizeof(rs)), got, n);
		vt_assert(q.flags & IORING_CQE_F_BUFFER,
			  "%s: multishot RECV without IORING_CQE_F_BUFFER (%#x)",
			  rd->k, q.flags);
		bid = (int)(q.flags >> IORING_CQE_BUFFER_SHIFT);
		vt_assert(bid >= 0 && bid < NBUF, "%s: buffer id %d", rd->k,
			  bid);
		vt_assert(q.res <= BUF_SZ, "%s: %d bytes in a %d byte buffer",
			  rd->k, q.res, BUF_SZ);
		expect_bytes(rd->k, b->mem + bid * BUF_SZ, (size_t)q.res,
			     &rd->pos);
		got += q.res;
		if (!keep)
			bufring_give(b, bid);
	}
	return got;
}

static void recv_multishot_server(struct reader *rd)
{
	struct io_uring_sqe *sqe;
	long got, all = 0, n = 40000;
	bool ended = false, cancelled = false;
	struct bufring b;
	struct cqe q;
	char rs[32];
	int end;

	bufring_setup(rd->r, &b);
	prep_multishot(rd);
	vt_assert(ur_idle(rd->r), "%s: multishot RECV completed with nothing queued",
		  rd->k);
	/*
	 * Every buffer used several times over.  The reader may fall behind
	 * giving them back: then -ENOBUFS ends the request, as on TCP, and
	 * it is submitted again.
	 */
	r_ask(rd, "send", 100000);
	while (all < 100000) {
		got = r_multishot(rd, &b, 100000 - all, false, &end);
		all += got;
		if (all == 100000)
			break;
		vt_assert(end == -ENOBUFS,
			  "%s: multishot RECV ended (%s) after %ld of 100000 bytes",
			  rd->k, res_str(end, rs, sizeof(rs)), all);
		prep_multishot(rd);
	}
	vt_assert(all > NBUF * BUF_SZ, "%s: %ld bytes", rd->k, all);
	r_ok(rd, "SEND of 100000");
	/*
	 * Cancel it before the next one; it may have ended already (no
	 * buffer when it looked for more), with a CQE before the cancel's.
	 */
	sqe = ur_sqe(rd->r);
	io_uring_prep_cancel64(sqe, 1, 0);
	sqe->user_data = 2;
	ur_submit(rd->r);
	for (;;) {
		ur_wait(rd->r, &q, "cancelling the multishot RECV");
		if (q.data == 1) {
			vt_assert(q.res <= 0 && !(q.flags & IORING_CQE_F_MORE),
				  "%s: multishot RECV: %s flags %#x with no more bytes",
				  rd->k, res_str(q.res, rs, sizeof(rs)), q.flags);
			ended = true;
			if (cancelled)
				break;
			continue;
		}
		vt_assert(q.data == 2 && (q.res == 0 || (q.res == -ENOENT && ended)),
			  "%s: cancelling the multishot RECV: %s%s", rd->k,
			  res_str(q.res, rs, sizeof(rs)),
			  ended ? "" : " and it had not ended");
		cancelled = true;
		if (ended)
			break;
	}

	/*
	 * Buffers not given back: once the NBUF * BUF_SZ bytes are used up
	 * the request ends with -ENOBUFS; the rest stays queued.
	 */
	prep_multishot(rd);
	r_ask(rd, "write", n);
	got = r_multishot(rd, &b, n, true, &end);
	vt_assert(got <= NBUF * BUF_SZ && end == -ENOBUFS,
		  "%s: multishot RECV without buffers: %ld of %ld bytes, then %s, expected at most %d, then -ENOBUFS",
		  rd->k, got, n, res_str(end, rs, sizeof(rs)), NBUF * BUF_SZ);
	r_ok(rd, "write");
	r_recv(rd, n - got, "RECV of what the multishot RECV left");
	bufring_free(rd->r, &b);
}

/* ---- send_zc ---- */

static void send_zc_server(struct reader *rd)
{
	static const long sizes[] = { 1000, BIG };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		r_ask(rd, "send_zc", sizes[i]);
		r_recv(rd, sizes[i], "RECV of SEND_ZC's bytes");
		r_ok(rd, "SEND_ZC");
		r_ask(rd, "sendmsg_zc", sizes[i]);
		r_recv(rd, sizes[i], "RECV of SENDMSG_ZC's bytes");
		r_ok(rd, "SENDMSG_ZC");
	}
}

/* ---- poll_first ---- */

static void poll_first_server(struct reader *rd)
{
	static uint8_t buf[8192];
	struct io_uring_sqe *sqe;
	struct cqe q;

	/* Nothing queued: the RECV waits for the peer. */
	sqe = ur_sqe(rd->r);
	io_uring_prep_recv(sqe, rd->fd, buf, sizeof(buf), 0);
	sqe->ioprio |= IORING_RECVSEND_POLL_FIRST;
	ur_submit(rd->r);
	usleep(100000);
	vt_assert(ur_idle(rd->r),
		  "%s: POLL_FIRST RECV completed with nothing queued", rd->k);
	r_ask(rd, "write", 3000);
	ur_wait(rd->r, &q, "POLL_FIRST RECV");
	vt_assert(q.res > 0 && q.res <= 3000,
		  "%s: POLL_FIRST RECV returned %d, 3000 written", rd->k, q.res);
	expect_bytes(rd->k, buf, (size_t)q.res, &rd->pos);
	r_ok(rd, "write");
	r_recv(rd, 3000 - q.res, "RECV of the rest");

	/* Bytes queued: completes with them. */
	r_ask(rd, "write", 2000);
	r_ok(rd, "write");
	su_wait_bytes(rd->fd, 2000);
	sqe = ur_sqe(rd->r);
	io_uring_prep_recv(sqe, rd->fd, buf, sizeof(buf), 0);
	sqe->ioprio |= IORING_RECVSEND_POLL_FIRST;
	ur_submit(rd->r);
	r_expect_res(rd, 2000, "POLL_FIRST RECV with 2000 bytes queued");
	expect_bytes(rd->k, buf, 2000, &rd->pos);

	/* IORING_OP_POLL_ADD: POLLIN once bytes arrive. */
	io_uring_prep_poll_add(ur_sqe(rd->r), rd->fd, POLLIN);
	ur_submit(rd->r);
	usleep(100000);
	vt_assert(ur_idle(rd->r), "%s: POLL_ADD(POLLIN) completed with nothing queued",
		  rd->k);
	r_ask(rd, "write", 500);
	ur_wait(rd->r, &q, "POLL_ADD(POLLIN)");
	vt_assert(q.res > 0 && (q.res & POLLIN),
		  "%s: POLL_ADD(POLLIN) completed with %#x", rd->k, q.res);
	r_ok(rd, "write");
	r_recv(rd, 500, "RECV after POLL_ADD");

	/* SEND with POLL_FIRST on the client. */
	r_ask(rd, "send_pf", 5000);
	r_recv(rd, 5000, "RECV of POLL_FIRST SEND's bytes");
	r_ok(rd, "POLL_FIRST SEND");
}

/* ---- eof ---- */

static void eof_server(struct reader *rd)
{
	static uint8_t buf[4096];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct bufring b;
	char rs[32];
	long got;
	int end;

	/* Bytes, then end of file, while a RECV is pending. */
	r_ask(rd, "write", 700);
	r_ok(rd, "write");
	r_recv(rd, 700, "RECV before end of file");
	io_uring_prep_recv(ur_sqe(rd->r), rd->fd, buf, sizeof(buf), 0);
	ur_submit(rd->r);
	usleep(100000);
	vt_assert(ur_idle(rd->r), "%s: RECV completed with nothing queued",
		  rd->k);
	vt_send(rd->c, "shut");
	r_ok(rd, "shutdown");
	r_expect_res(rd, 0, "pending RECV at end of file");
	/* And again, each way. */
	io_uring_prep_recv(ur_sqe(rd->r), rd->fd, buf, sizeof(buf), 0);
	ur_submit(rd->r);
	r_expect_res(rd, 0, "RECV after end of file");
	io_uring_prep_recvmsg(ur_sqe(rd->r), rd->fd, &mh, 0);
	ur_submit(rd->r);
	r_expect_res(rd, 0, "RECVMSG after end of file");
	bufring_setup(rd->r, &b);
	prep_multishot(rd);
	got = r_multishot(rd, &b, 1, false, &end);
	vt_assert(!got && !end,
		  "%s: multishot RECV after end of file: %ld bytes, ended with %s, expected 0",
		  rd->k, got, res_str(end, rs, sizeof(rs)));
	bufring_free(rd->r, &b);
}

/* ---- runner ---- */

static void ur_run(struct vt_ctx *c, void (*check)(struct reader *rd),
		   bool accept_connect)
{
	enum ur_kind kind;
	struct io_uring r;
	int fd;

	hu_need_rdma(c);
	for (kind = UR_TCP; kind <= UR_RDMA; kind++) {
		vt_sync(c, kind_name[kind]);
		ur_init(&r);
		fd = ur_pair(c, &r, kind,
			     accept_connect && !vt_is_client(c) ?
			     SOCK_NONBLOCK : 0);
		if (vt_is_client(c)) {
			if (accept_connect)
				accept_connect_client(c, &r, fd, kind);
			writer_loop(c, &r, fd, kind_name[kind]);
		} else {
			struct reader rd = {
				.c = c, .r = &r, .fd = fd, .k = kind_name[kind],
				.kind = kind,
			};

			check(&rd);
			vt_send(c, "end");
		}
		if (kind == UR_RDMA)
			hu_expect_rdma(fd, "after the checks", NULL);
		else
			expect_mode(fd, kind, "after the checks");
		close(fd);
		io_uring_queue_exit(&r);
	}
}

static void accept_connect(struct vt_ctx *c)
{
	ur_run(c, accept_connect_server, true);
}

static void send_recv(struct vt_ctx *c)
{
	ur_run(c, send_recv_server, false);
}

static void sendmsg_recvmsg(struct vt_ctx *c)
{
	ur_run(c, sendmsg_recvmsg_server, false);
}

static void recv_multishot(struct vt_ctx *c)
{
	ur_run(c, recv_multishot_server, false);
}

static void send_zc(struct vt_ctx *c)
{
	ur_run(c, send_zc_server, false);
}

static void poll_first(struct vt_ctx *c)
{
	ur_run(c, poll_first_server, false);
}

static void eof(struct vt_ctx *c)
{
	ur_run(c, eof_server, false);
}

#define T(fn, tmo, d)	{ #fn, fn, fn, tmo, d }

static const struct vt_test tests[] = {
	T(accept_connect, 60, "IORING_OP_ACCEPT, IORING_OP_CONNECT as TCP"),
	T(send_recv, 60, "IORING_OP_SEND, IORING_OP_RECV as TCP"),
	T(sendmsg_recvmsg, 60, "IORING_OP_SENDMSG, IORING_OP_RECVMSG as TCP"),
	T(recv_multishot, 60, "multishot RECV with a buffer ring as TCP"),
	T(send_zc, 60, "IORING_OP_SEND_ZC, IORING_OP_SENDMSG_ZC as TCP"),
	T(poll_first, 60, "IORING_RECVSEND_POLL_FIRST, POLL_ADD as TCP"),
	T(eof, 60, "RECV, RECVMSG, multishot RECV at end of file as TCP"),
};

int main(int argc, char **argv)
{
	hu_sysctls_save(saved, ARRAY_SIZE(saved));
	vt_set_cleanup(ur_cleanup);
	return vt_main(argc, argv, "visock_uring", tests, ARRAY_SIZE(tests));
}
