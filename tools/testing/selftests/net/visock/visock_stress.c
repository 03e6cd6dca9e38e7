// SPDX-License-Identifier: GPL-2.0
/*
 * visock stress: many processes connect, move data, shut down, close and
 * abort in random interleavings, for a bounded time, between two hosts
 * with net.visock.enable=1 (run after hs.rdma_ready, like dp and lgr).
 *
 * mix		4 client processes against 4 server processes sharing one
 *		listener, for STRESS_MS.  Each connection does one thing,
 *		chosen at random (the seeds are printed) and announced in its
 *		first 4 bytes:
 *		ECHO	a checksummed stream each way (half of them after a
 *			non-blocking connect and the first write as soon as
 *			poll() says POLLOUT, while the handshake may still run):
 *			must arrive intact
 *		C_ABORT	the client writes part of a stream, then closes
 *			with SO_LINGER {1, 0}: the server reads a prefix, then
 *			end of stream or ECONNRESET
 *		C_UNREAD the client closes without reading what the server
 *			sends: the server's writes may fail with EPIPE or
 *			ECONNRESET, nothing hangs
 *		S_ABORT	the server resets after the announcement: the client
 *			sees end of stream or ECONNRESET
 *		NB_CLOSE a non-blocking connect closed at once, racing the
 *			handshake and the switch to RDMA: the server sees
 *			end of stream or ECONNRESET before any byte
 *		Every socket has SO_RCVTIMEO/SO_SNDTIMEO, so a hang fails
 *		the test instead of stalling it.  Afterwards no connection is
 *		left on the link groups of either host.
 * signals	SIGUSR1 every millisecond (handler without SA_RESTART) on
 *		both hosts for 20 s against blocking connect, accept, write
 *		and read of 256 KiB checksummed echoes: every stream intact
 *		and on RDMA, and calls were interrupted (EINTR counted).
 *
 * Nothing here is timed; every wait is bounded.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>

#include <linux/visock.h>

#include "ctl.h"
#include "harness.h"
#include "hostutil.h"
#include "ktap.h"
#include "sockutil.h"

#define KiB		1024ULL
#define STRESS_MS	40000
#define NPROC		4
#define IO_TIMEOUT_S	30	/* SO_RCVTIMEO/SO_SNDTIMEO, x time scale */
#define STRESS_HS_TIMEOUT_MS	10000	/* net.visock.handshake_timeout_ms */

enum op { OP_ECHO, OP_C_ABORT, OP_C_UNREAD, OP_S_ABORT, OP_NB_CLOSE, NOPS };

static const char *const op_names[NOPS] = {
	"echo", "client_abort", "client_unread", "server_abort",
	"nb_close",
};

/* Shared between the processes of one host. */
struct stress_shared {
	long long ops[NOPS];		/* client: done, server: seen */
	long long early_write;		/* client: ECHO written at POLLOUT */
	long long resets;		/* ECONNRESET/EPIPE seen where allowed */
	long long connect_err[4];	/* client: REFUSED, TIMEDOUT, RESET, other */
	long long first_err_ms;		/* client: first connect error, from start */
	int stop;			/* server: the clients are done */
};

static struct stress_shared *sh;

#define HS_TIMEOUT_PATH	HU_SYSCTL_DIR "handshake_timeout_ms"

static long long hs_timeout_saved = -1;

static void restore_hs_timeout(const struct vt_ctx *c)
{
	(void)c;
	if (hs_timeout_saved > 0)
		hu_write_ll(HS_TIMEOUT_PATH, hs_timeout_saved);
}

static long long t_start;

/* An op word: the op in the low byte, the reply length in KiB above. */
static uint32_t op_word(enum op op, unsigned int reply_kib)
{
	return op | reply_kib << 8;
}

static void set_timeouts(int fd)
{
	struct timeval tv = { .tv_sec = IO_TIMEOUT_S * vt_time_scale };

	vt_try(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)),
	       "setsockopt(SO_RCVTIMEO)");
	vt_try(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)),
	       "setsockopt(SO_SNDTIMEO)");
}

static void linger0(int fd)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	vt_try(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)),
	       "setsockopt(SO_LINGER)");
}

/* Errors a peer's reset or close may give, counted. */
static bool reset_errno(int err)
{
	if (err != ECONNRESET && err != EPIPE)
		return false;
	__atomic_add_fetch(&sh->resets, 1, __ATOMIC_RELAXED);
	return true;
}

/* Read until end of stream or a reset; anything else fails. */
static void drain(int fd, const char *what)
{
	char buf[16384];
	ssize_t n;

	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n > 0)
			continue;
		if (n == 0)
			return;
		if (errno == EINTR)
			continue;
		if (reset_errno(errno))
			return;
		vt_fail("%s: read: %s (%s)", what, vt_errname(errno),
			strerror(errno));
	}
}

/* Write @len bytes, stopping quietly at a reset. */
static void write_some(int fd, size_t len, const char *what)
{
	char buf[16384];
	ssize_t n;

	memset(buf, 0x3c, sizeof(buf));
	while (len) {
		n = send(fd, buf, len < sizeof(buf) ? len : sizeof(buf),
			 MSG_NOSIGNAL);
		if (n > 0) {
			len -= n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && reset_errno(errno))
			return;
		vt_fail("%s: write: %s (%s)", what,
			n < 0 ? vt_errname(errno) : "0",
			n < 0 ? strerror(errno) : "");
	}
}

/* ---- client ---- */

/*
 * Source ports of NB_CLOSE connections.  A connect closed before the
 * server's SYN-ACK came back leaves the server a half-open request until
 * our RST for that SYN-ACK reaches it, while TCP gives the port back at
 * once: another process's connect can take the same port within a
 * millisecond, and its SYN, inside the old request's window, is answered
 * with a RST - ECONNREFUSED, plain TCP does the same (seen in a capture:
 * two SYNs from one port 0.6 ms apart, the second refused).  So NB_CLOSE
 * binds to ports outside the ephemeral range, NB_PORTS of them per
 * process used in turn, and the other connections never meet such a
 * request.
 */
#define NB_PORTS	2000

static unsigned int nb_base;		/* NPROC * NB_PORTS ports from here */
static unsigned int client_idx;		/* this client process, 0..NPROC-1 */
static unsigned int nb_next;		/* its next NB_CLOSE port */

/* Below net.ipv4.ip_local_port_range, or above it. */
static void nb_ports_choose(void)
{
	unsigned int lo = 32768, hi = 60999;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");

	if (f) {
		if (fscanf(f, "%u %u", &lo, &hi) != 2)
			lo = 32768, hi = 60999;
		fclose(f);
	}
	if (lo >= 1024 + NPROC * NB_PORTS)
		nb_base = lo - NPROC * NB_PORTS;
	else
		nb_base = hi + 1;
	vt_assert(nb_base + NPROC * NB_PORTS <= 65536,
		  "no room for %u ports outside ip_local_port_range %u-%u",
		  NPROC * NB_PORTS, lo, hi);
}

static void nb_bind(int fd)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	unsigned int tries;

	for (tries = 0; tries < 16; tries++) {
		sin.sin_port = htons(nb_base + client_idx * NB_PORTS +
				     nb_next++ % NB_PORTS);
		if (!bind(fd, (struct sockaddr *)&sin, sizeof(sin)))
			return;
		vt_assert(errno == EADDRINUSE, "bind: %s", strerror(errno));
	}
	vt_fail("bind: no free port of %u in 16 tries", NB_PORTS);
}

static int stress_connect(struct vt_ctx *c, int port, bool nonblock,
			  bool nb_close)
{
	struct sockaddr_storage ss;
	socklen_t len = su_peer_addr(c, false, port, &ss);
	int fd = su_socket(VT_FAMILY_VISOCK, false,
			   SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0));

	set_timeouts(fd);
	if (nb_close)
		nb_bind(fd);
	if (connect(fd, (struct sockaddr *)&ss, len) &&
	    !(nonblock && errno == EINPROGRESS)) {
		int k = errno == ECONNREFUSED ? 0 : errno == EINPROGRESS ? 1 :
			errno == ECONNRESET ? 2 : 3;

		if (!__atomic_fetch_add(&sh->connect_err[k], 1,
					__ATOMIC_RELAXED))
			vt_diag("connect: %s after %lld ms", vt_errname(errno),
				ctl_now_ms() - t_start);
		close(fd);
		return -1;
	}
	return fd;
}

static void client_one(struct vt_ctx *c, int port, enum op op,
		       unsigned int *seed)
{
	unsigned int kib = rand_r(seed) % 257, reply = rand_r(seed) % 65;
	uint32_t word = op_word(op, reply);
	bool early = op == OP_ECHO && (rand_r(seed) & 1);
	int fd;

	if (op == OP_NB_CLOSE) {
		fd = stress_connect(c, port, true, true);
		if (fd < 0)
			return;
		close(fd);
		__atomic_add_fetch(&sh->ops[op], 1, __ATOMIC_RELAXED);
		return;
	}
	fd = stress_connect(c, port, early, false);
	if (fd < 0)
		return;
	if (early) {
		/*
		 * First write as soon as the socket is writable: once the
		 * handshake settled, which may take up to its timeout (a
		 * link being set up, a registration that does not complete).
		 */
		vt_assert(su_poll(fd, POLLOUT, (STRESS_HS_TIMEOUT_MS +
						SU_WAIT_MS) * vt_time_scale) &
			  POLLOUT, "non-blocking connect: no POLLOUT");
		su_nonblock(fd, false);
		__atomic_add_fetch(&sh->early_write, 1, __ATOMIC_RELAXED);
	}
	su_write_all(fd, &word, sizeof(word));
	switch (op) {
	case OP_ECHO:
		pl_send(fd, kib * KiB);
		vt_try(shutdown(fd, SHUT_WR), "shutdown");
		pl_recv(fd, reply * KiB);
		break;
	case OP_C_ABORT:
		write_some(fd, kib * KiB / 2, "client_abort");
		linger0(fd);
		break;
	case OP_C_UNREAD:
		vt_try(shutdown(fd, SHUT_WR), "shutdown");
		break;
	case OP_S_ABORT:
		drain(fd, "server_abort");
		break;
	default:
		break;
	}
	close(fd);
	__atomic_add_fetch(&sh->ops[op], 1, __ATOMIC_RELAXED);
}

static void client_proc(struct vt_ctx *c, int port, unsigned int seed)
{
	long long end = ctl_now_ms() + (long long)STRESS_MS * vt_time_scale;
	unsigned int i;

	/* Every op at least once, then at random. */
	for (i = 0; ctl_now_ms() < end; i++)
		client_one(c, port, i < NOPS ? i : (unsigned int)rand_r(&seed) % NOPS,
			   &seed);
}

/* ---- server ---- */

static void server_one(int fd)
{
	uint32_t word = 0;
	size_t got = 0;
	ssize_t n;
	enum op op;

	set_timeouts(fd);
	while (got < sizeof(word)) {
		n = read(fd, (char *)&word + got, sizeof(word) - got);
		if (n > 0) {
			got += n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		/* A connect closed at once (NB_CLOSE) says nothing. */
		if (n == 0 || reset_errno(errno)) {
			vt_assert(!got, "the op word ended after %zu bytes",
				  got);
			__atomic_add_fetch(&sh->ops[OP_NB_CLOSE], 1,
					   __ATOMIC_RELAXED);
			close(fd);
			return;
		}
		vt_fail("read op: %s (%s)", vt_errname(errno),
			strerror(errno));
	}
	op = word & 0xff;
	vt_assert(op < NOPS && op != OP_NB_CLOSE, "op word %#x", word);
	switch (op) {
	case OP_ECHO:
		pl_recv(fd, UINT64_MAX);
		pl_send(fd, (word >> 8) * KiB);
		break;
	case OP_C_ABORT:
		drain(fd, "client_abort");
		break;
	case OP_C_UNREAD:
		drain(fd, "client_unread");
		write_some(fd, (word >> 8) * KiB, "client_unread");
		break;
	case OP_S_ABORT:
		linger0(fd);
		break;
	default:
		break;
	}
	close(fd);
	__atomic_add_fetch(&sh->ops[op], 1, __ATOMIC_RELAXED);
}

static void server_proc(int lfd)
{
	int fd;

	while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
		if (!(su_poll(lfd, POLLIN, 200) & POLLIN))
			continue;
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			/* Another process took it. */
			if (errno == EAGAIN || errno == EINTR)
				continue;
			vt_fail("accept: %s (%s)", vt_errname(errno),
				strerror(errno));
		}
		server_one(fd);
	}
}

/* ---- the test ---- */

static void mix(struct vt_ctx *c)
{
	unsigned int base = (unsigned int)time(NULL) ^ getpid();
	long long start = ctl_now_ms(), ab0, fb0[HU_NFB], fb1[HU_NFB];
	pid_t pids[NPROC];
	int i, st, bad = 0, lfd = -1, port = 0;
	long long total = 0;
	char line[256];
	size_t len = 0;

	hu_need_rdma(c);
	t_start = start;
	/*
	 * Four processes per host on an emulated, loaded host: a handshake
	 * step may wait its turn for seconds.
	 */
	hs_timeout_saved = hu_read_ll(HS_TIMEOUT_PATH);
	hu_set_ll(HS_TIMEOUT_PATH, STRESS_HS_TIMEOUT_MS);
	vt_sync(c, "timeout set");
	ab0 = hu_proc("handshakes_aborted");
	hu_fb_snap(fb0);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	vt_assert(sh != MAP_FAILED, "mmap: %s", strerror(errno));
	memset(sh, 0, sizeof(*sh));
	if (vt_is_client(c)) {
		port = su_recv_port(c);
		nb_ports_choose();
		vt_diag("seeds %u..%u, nb_close source ports %u-%u", base,
			base + NPROC - 1, nb_base, nb_base + NPROC * NB_PORTS - 1);
	} else {
		lfd = su_listen(VT_FAMILY_VISOCK, false, 128,
				SOCK_CLOEXEC | SOCK_NONBLOCK);
		su_send_port(c, lfd);
	}
	for (i = 0; i < NPROC; i++) {
		pids[i] = vt_try(fork(), "fork");
		if (!pids[i]) {
			client_idx = i;
			if (vt_is_client(c))
				client_proc(c, port, base + i);
			else
				server_proc(lfd);
			_exit(0);
		}
	}
	if (vt_is_client(c)) {
		for (i = 0; i < NPROC; i++) {
			vt_try(waitpid(pids[i], &st, 0), "waitpid");
			if (!WIFEXITED(st) || WEXITSTATUS(st))
				bad++;
		}
		vt_sync(c, "clients done");
	} else {
		/* The clients run STRESS_MS, plus their last connection. */
		while (ctl_now_ms() < start + (long long)STRESS_MS * vt_time_scale)
			usleep(100 * 1000);
		vt_sync(c, "clients done");
		__atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
		for (i = 0; i < NPROC; i++) {
			vt_try(waitpid(pids[i], &st, 0), "waitpid");
			if (!WIFEXITED(st) || WEXITSTATUS(st))
				bad++;
		}
		close(lfd);
	}
	for (i = 0; i < NOPS; i++) {
		total += sh->ops[i];
		len += snprintf(line + len, sizeof(line) - len, " %s %lld",
				op_names[i], sh->ops[i]);
	}
	vt_diag("%lld connections:%s", total, line);
	vt_diag("%lld echoes written at the first POLLOUT, %lld resets where allowed",
		sh->early_write, sh->resets);
	hu_fb_snap(fb1);
	len = 0;
	line[0] = '\0';
	for (i = 1; i < HU_NFB; i++)
		if (fb1[i] != fb0[i])
			len += snprintf(line + len, sizeof(line) - len,
					" %s %lld", hu_fb_names[i],
					fb1[i] - fb0[i]);
	vt_diag("handshakes aborted %lld, fallbacks:%s",
		hu_proc("handshakes_aborted") - ab0, len ? line : " none");
	if (vt_is_client(c))
		vt_diag("connect errors: refused %lld, timed out %lld, reset %lld, other %lld",
			sh->connect_err[0], sh->connect_err[1],
			sh->connect_err[2], sh->connect_err[3]);
	vt_assert(!bad, "%d of %d processes failed", bad, NPROC);
	vt_assert(!sh->connect_err[0] && !sh->connect_err[1] &&
		  !sh->connect_err[2] && !sh->connect_err[3],
		  "connect() failed");
	if (vt_is_client(c))
		for (i = 0; i < NOPS; i++)
			vt_assert(sh->ops[i] > 0, "no %s done", op_names[i]);
	/* Closing ends in the background: every connection leaves. */
	vt_assert(hu_proc_wait("lgr_connections", 0, 60000) == 0,
		  "lgr_connections %lld after every socket closed",
		  hu_proc("lgr_connections"));
	/*
	 * Shown, not judged: a server whose client closed before it took
	 * the REP cannot be told (visock/design.rst), the QP's end reaps those.
	 */
	vt_diag("lgr_lingering %lld, qps %lld after every socket closed",
		hu_proc("lgr_lingering"), hu_proc("qps"));
	vt_sync(c, "checked");
	munmap(sh, sizeof(*sh));
}

/* ---- signals ---- */

#define SIG_MS		20000
#define SIG_LEN		(256 * KiB)

static int sig_seen;	/* handler runs: atomic builtins */

static void on_usr1(int sig)
{
	(void)sig;
	__atomic_add_fetch(&sig_seen, 1, __ATOMIC_RELAXED);
}

/*
 * SIGUSR1 every millisecond at this process (a child sends them) with a
 * handler without SA_RESTART: blocking calls return EINTR, or a partial
 * count, as often as the kernel lets them.  Returns the storm's pid.
 */
static pid_t storm_start(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	pid_t parent = getpid(), pid;

	vt_try(sigaction(SIGUSR1, &sa, NULL), "sigaction");
	pid = vt_try(fork(), "fork");
	if (!pid) {
		for (;;) {
			if (kill(parent, SIGUSR1))
				_exit(0);
			usleep(1000);
		}
	}
	return pid;
}

static void storm_stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	signal(SIGUSR1, SIG_IGN);
}

/* EINTR seen by connect, accept, write, read */
enum { E_CONNECT, E_ACCEPT, E_WRITE, E_READ, NE };
static long long eintrs[NE];

/* write() all of @buf, going on after EINTR and partial writes. */
static void sig_write_all(int fd, const uint8_t *buf, size_t len)
{
	ssize_t n;

	while (len) {
		n = write(fd, buf, len);
		if (n < 0 && errno == EINTR) {
			eintrs[E_WRITE]++;
			continue;
		}
		if (n <= 0)
			vt_fail("write: %s (%s)", n ? vt_errname(errno) : "0",
				n ? strerror(errno) : "");
		buf += n;
		len -= n;
	}
}

/* Send a checksummed stream of @len bytes, then SHUT_WR. */
static void sig_send(int fd, uint64_t len)
{
	static uint8_t buf[16384];
	struct pl_tx tx;
	size_t n;

	pl_tx_init(&tx, len);
	while ((n = pl_tx_fill(&tx, buf, sizeof(buf))))
		sig_write_all(fd, buf, n);
	while (shutdown(fd, SHUT_WR))
		vt_assert(errno == EINTR, "shutdown: %s", strerror(errno));
}

/* Receive and check a whole stream up to end of stream. */
static void sig_recv_rx(int fd, struct pl_rx *rx)
{
	static uint8_t buf[16384];
	ssize_t n;

	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR) {
			eintrs[E_READ]++;
			continue;
		}
		if (n < 0)
			vt_fail("read after %llu bytes: %s (%s)",
				(unsigned long long)rx->pos, vt_errname(errno),
				strerror(errno));
		if (!n)
			break;
		pl_check(rx, buf, n);
	}
	vt_assert(pl_rx_done(rx), "end of stream after %llu bytes",
		  (unsigned long long)rx->pos);
}

static void sig_recv(int fd, uint64_t len)
{
	struct pl_rx rx;

	pl_rx_init(&rx, len);
	sig_recv_rx(fd, &rx);
}

/* Blocking connect that goes on after EINTR, as TCP's does. */
static int sig_connect(struct vt_ctx *c, int port)
{
	struct sockaddr_storage ss;
	socklen_t len = su_peer_addr(c, false, port, &ss);
	int fd = su_socket(VT_FAMILY_VISOCK, false, SOCK_CLOEXEC), err;

	set_timeouts(fd);
	if (!connect(fd, (struct sockaddr *)&ss, len))
		return fd;
	vt_assert(errno == EINTR, "connect: %s (%s)", vt_errname(errno),
		  strerror(errno));
	eintrs[E_CONNECT]++;
	/* Interrupted: the connection goes on; wait for it. */
	vt_assert(su_poll(fd, POLLOUT, SU_WAIT_MS * vt_time_scale) & POLLOUT,
		  "interrupted connect: no POLLOUT");
	err = su_getint_at(fd, SOL_SOCKET, SO_ERROR, "SO_ERROR");
	vt_assert(!err, "interrupted connect: %s", strerror(err));
	return fd;
}

static int sig_accept(int lfd)
{
	int fd;

	for (;;) {
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			return fd;
		vt_assert(errno == EINTR, "accept: %s (%s)", vt_errname(errno),
			  strerror(errno));
		eintrs[E_ACCEPT]++;
	}
}

/*
 * Blocking connect, accept, write and read under a signal storm on both
 * hosts: every stream arrives intact, on RDMA, and the calls were
 * interrupted (EINTR counted) - so the waits in visock's connect,
 * accept, sendmsg and recvmsg were all woken by signals many times.
 */
static void signals(struct vt_ctx *c)
{
	long long end, n = 0, rdma = 0;
	unsigned int fb_mode = 0, fb_reason = 0;
	struct visock_info vi;
	int lfd = -1, port = 0, fd;
	pid_t storm;

	hu_need_rdma(c);
	if (vt_is_client(c)) {
		port = su_recv_port(c);
	} else {
		lfd = su_listen(VT_FAMILY_VISOCK, false, 16, SOCK_CLOEXEC);
		su_send_port(c, lfd);
	}
	storm = storm_start();
	end = ctl_now_ms() + (long long)SIG_MS * vt_time_scale;
	for (;;) {
		if (vt_is_client(c)) {
			/* The client decides when it ends: a 0 byte stream. */
			bool last = ctl_now_ms() > end;

			fd = sig_connect(c, port);
			sig_send(fd, last ? 0 : SIG_LEN);
			sig_recv(fd, last ? 0 : SIG_LEN);
			hu_get_info(fd, &vi);
			close(fd);
			if (last)
				break;
		} else {
			struct pl_rx probe;
			uint64_t len;

			fd = sig_accept(lfd);
			set_timeouts(fd);
			/* The length comes first: receive, then echo as much. */
			pl_rx_init(&probe, UINT64_MAX);
			sig_recv_rx(fd, &probe);
			len = probe.len;
			sig_send(fd, len);
			hu_get_info(fd, &vi);
			close(fd);
			if (!len)
				break;
		}
		n++;
		rdma += vi.vi_mode == VISOCK_MODE_RDMA;
		if (vi.vi_mode != VISOCK_MODE_RDMA && !fb_mode) {
			fb_mode = vi.vi_mode;
			fb_reason = vi.vi_fallback_reason;
		}
	}
	storm_stop(storm);
	if (lfd >= 0)
		close(lfd);
	vt_diag("%lld connections of %llu KiB each way under SIGUSR1 every ms",
		n, SIG_LEN / KiB);
	vt_diag("%lld on RDMA, %d SIGUSR1; EINTR: connect %lld, accept %lld, write %lld, read %lld",
		rdma, __atomic_load_n(&sig_seen, __ATOMIC_RELAXED),
		eintrs[E_CONNECT], eintrs[E_ACCEPT], eintrs[E_WRITE],
		eintrs[E_READ]);
	vt_assert(n > 0 && rdma == n,
		  "%lld of %lld connections on RDMA (the first other: mode %u, fallback reason %s)",
		  rdma, n, fb_mode,
		  fb_reason < HU_NFB ? hu_fb_names[fb_reason] : "?");
	vt_assert(__atomic_load_n(&sig_seen, __ATOMIC_RELAXED) > 100,
		  "only %d SIGUSR1 arrived", sig_seen);
	vt_assert(eintrs[E_CONNECT] + eintrs[E_ACCEPT] + eintrs[E_WRITE] +
		  eintrs[E_READ] > 0, "no call was interrupted");
	vt_sync(c, "checked");
}

#define T(fn, tmo, d)	{ #fn, fn, fn, tmo, d }

static const struct vt_test tests[] = {
	T(mix, 300, "random connect/transfer/close/abort, 4 processes"),
	T(signals, 180, "SIGUSR1 every ms against blocking calls"),
};

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	vt_set_cleanup(restore_hs_timeout);
	return vt_main(argc, argv, "visock_stress", tests, ARRAY_SIZE(tests));
}
