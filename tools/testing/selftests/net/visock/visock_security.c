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
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/mount.h>
#include <sys/utsname.h>
#include <grp.h>
#include <stdarg.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <linux/userfaultfd.h>
#include <linux/visock.h>

#include "harness.h"
#include "hostutil.h"
#include "hsmsg.h"
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

/* ---- backlog_bound ---- */

#define BL_BACKLOG	4
#define BL_CONNS	(10 * BL_BACKLOG + 50)
#define BL_BOUND	(BL_BACKLOG + 1)	/* as TCP's accept queue */
#define SOCKS_PATH	HU_DEBUGFS_DIR "socks"

/* Inode number of this process's network namespace. */
static unsigned long long netns_inum(void)
{
	struct stat st;

	vt_try(stat("/proc/self/ns/net", &st), "stat(/proc/self/ns/net)");
	return (unsigned long long)st.st_ino;
}

/*
 * Live established visock socks of namespace @net numbered above @after
 * (debugfs "socks"); *@max_id gets the highest number seen, if given.
 */
static int count_socks(unsigned long long net, unsigned long long after,
		       unsigned long long *max_id)
{
	unsigned long long n, id;
	unsigned int ref, state;
	int orphan, count = 0;
	char line[512];
	const char *o;
	FILE *f;

	f = fopen(SOCKS_PATH, "re");
	vt_assert(f, "%s: %s", SOCKS_PATH, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "net %llu id %llu ref %u state %u", &n, &id,
			   &ref, &state) != 4 || n != net)
			continue;
		if (max_id && id > *max_id)
			*max_id = id;
		o = strstr(line, " orphan ");
		orphan = o ? atoi(o + 8) : 0;
		if (id > after && state == 1 && !orphan)
			count++;
	}
	fclose(f);
	return count;
}

/*
 * backlog_bound, server: a listener with backlog BL_BACKLOG that does not
 * accept while the client connects BL_CONNS times.  Its children (in
 * their handshake or waiting for accept()) never exceed BL_BOUND.  Then
 * it accepts the queued ones, each of which carries a byte.
 */
static void backlog_bound_server(struct vt_ctx *c)
{
	unsigned long long net = netns_inum(), base = 0;
	int lfd, n, max = 0, samples = 0, queued, fds[BL_BOUND + 8], i;
	struct pollfd p;

	hu_need_rdma(c);
	vt_assert(hu_debugfs_ready("socks"), "no %s", SOCKS_PATH);
	lfd = su_listen(VT_FAMILY_VISOCK, false, BL_BACKLOG, 0);
	count_socks(net, 0, &base);
	su_send_port(c, lfd);

	/* Sample until the client says every connect() has had its turn. */
	p.fd = c->ctl;
	p.events = POLLIN;
	for (;;) {
		n = count_socks(net, base, NULL);
		samples++;
		if (n > max)
			max = n;
		if (poll(&p, 1, 20) > 0)
			break;
	}
	vt_expect(c, "FLOODED");
	queued = (int)hu_proc_get("listen_queued");
	vt_diag("children: at most %d in %d samples (bound %d); queued now %d, handshaking %lld",
		max, samples, BL_BOUND, queued,
		hu_proc_get("listen_handshaking"));
	vt_assert(max <= BL_BOUND,
		  "a listener with backlog %d held %d connections (bound %d)",
		  BL_BACKLOG, max, BL_BOUND);
	vt_assert(queued >= 1 && queued <= BL_BOUND,
		  "listen_queued %d, expected 1..%d", queued, BL_BOUND);

	/* The queued connections work. */
	vt_send_num(c, "queued", queued);
	for (i = 0; i < queued; i++) {
		fds[i] = su_accept(lfd, 0);
		su_write_all(fds[i], "k", 1);
	}
	vt_expect(c, "READ");
	for (i = 0; i < queued; i++)
		close(fds[i]);
	close(lfd);
	vt_sync(c, "closed");
}

/* An error a connect() beyond the backlog may end with. */
static bool clean_connect_err(int err)
{
	return err == ETIMEDOUT || err == ECONNREFUSED || err == ECONNRESET;
}

/*
 * backlog_bound, client: BL_CONNS non-blocking connects; every one that
 * fails does so with a clean error; the connections the server accepted
 * each receive its byte.
 */
static void backlog_bound_client(struct vt_ctx *c)
{
	struct sockaddr_storage ss;
	int fds[BL_CONNS], state[BL_CONNS], errs[BL_CONNS], i, port, queued;
	int nconn = 0, nfail = 0, nbad = 0, got = 0, err, ms;
	ssize_t n;
	struct pollfd p[BL_CONNS];
	socklen_t len, alen;
	char b;

	hu_need_rdma(c);
	port = su_recv_port(c);
	alen = su_peer_addr(c, false, port, &ss);
	for (i = 0; i < BL_CONNS; i++) {
		fds[i] = su_socket(VT_FAMILY_VISOCK, false, SOCK_NONBLOCK);
		state[i] = 0;	/* 0 not known yet, 1 got its byte, 2 ended */
		errs[i] = 0;
		if (connect(fds[i], (struct sockaddr *)&ss, alen) &&
		    errno != EINPROGRESS)
			vt_fail("connect %d: %s", i, vt_errname(errno));
	}
	/*
	 * Give every connect() time to go through TCP and the handshake
	 * (or to time out in it): three handshake timeouts.
	 */
	ms = 3 * (int)hu_read_ll(HU_SYSCTL_DIR "handshake_timeout_ms");
	usleep((useconds_t)ms * 1000);
	vt_send(c, "FLOODED");
	queued = (int)vt_recv_num(c, "queued");

	/* Each accepted connection receives one byte; none other does. */
	for (ms = 0; got < queued && ms < SU_WAIT_MS; ms += 50) {
		for (i = 0; i < BL_CONNS; i++) {
			p[i].fd = state[i] ? -1 : fds[i];
			p[i].events = POLLIN;
		}
		poll(p, BL_CONNS, 50);
		for (i = 0; i < BL_CONNS; i++) {
			if (p[i].fd < 0 || !p[i].revents)
				continue;
			n = recv(fds[i], &b, 1, 0);
			if (n == 1 && b == 'k') {
				state[i] = 1;
				got++;
			} else if (n == 0 || errno != EAGAIN) {
				/* The error is consumed: keep it. */
				state[i] = 2;
				errs[i] = n ? errno : 0;
			}
		}
	}
	vt_assert(got == queued, "%d connections got their byte, %d accepted",
		  got, queued);
	vt_send(c, "READ");
	vt_sync(c, "closed");

	/* The others: connected over TCP, pending, or failed cleanly. */
	for (i = 0; i < BL_CONNS; i++) {
		if (state[i] == 1)
			continue;
		err = errs[i];
		len = sizeof(err);
		if (!state[i])
			vt_try(getsockopt(fds[i], SOL_SOCKET, SO_ERROR, &err,
					  &len), "getsockopt(SO_ERROR)");
		if (state[i] == 2 && !err) {
			nfail++;	/* end of stream */
		} else if (!err && su_poll(fds[i], POLLOUT, 0) & POLLOUT) {
			nconn++;
		} else if (err) {
			nfail++;
			if (!clean_connect_err(err)) {
				vt_diag("connection %d: %s", i, vt_errname(err));
				nbad++;
			}
		}
	}
	vt_diag("%d accepted, %d others connected, %d failed, %d pending",
		queued, nconn, nfail, BL_CONNS - queued - nconn - nfail);
	for (i = 0; i < BL_CONNS; i++)
		close(fds[i]);
	vt_assert(!nbad, "%d connections failed with an unexpected error",
		  nbad);
}

/* ---- diag_stalled ---- */

#define STALL_LEN	8192
#define CTL_BOUND_S	30	/* a dump that takes longer hangs */

/*
 * Run "visockctl @args --json" with its output in @out.  Returns its
 * exit status, or -1 if it had not finished after CTL_BOUND_S seconds
 * (it is then left running; *@pid names it).
 */
static int run_visockctl(const char *args, char *out, size_t size,
			 pid_t *pid)
{
	char tmpl[] = "/tmp/visock_sec_XXXXXX", cmd[640];
	int fd, st, i;
	ssize_t n;

	fd = (int)vt_try(mkstemp(tmpl), "mkstemp");
	unlink(tmpl);
	snprintf(cmd, sizeof(cmd), "exec %s %s --json", hu_visockctl_path(), args);
	*pid = fork();
	vt_assert(*pid >= 0, "fork: %s", strerror(errno));
	if (!*pid) {
		dup2(fd, 1);
		dup2(fd, 2);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < CTL_BOUND_S * 10 * (int)vt_time_scale; i++) {
		if (waitpid(*pid, &st, WNOHANG) == *pid)
			break;
		usleep(100 * 1000);
	}
	if (i == CTL_BOUND_S * 10 * (int)vt_time_scale) {
		close(fd);
		return -1;
	}
	n = pread(fd, out, size - 1, 0);
	out[n > 0 ? n : 0] = '\0';
	close(fd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The JSON object of @out with "inode":@ino, up to its end; or NULL. */
static const char *json_obj(const char *out, unsigned long ino,
			    char *buf, size_t size)
{
	const char *p, *start, *end;
	char pat[48];

	snprintf(pat, sizeof(pat), "\"inode\":%lu,", ino);
	p = strstr(out, pat);
	if (!p)
		return NULL;
	for (start = p; start > out && *start != '{'; start--)
		;
	end = strchr(p, '}');
	if (!end)
		end = p + strlen(p);
	snprintf(buf, size, "%.*s", (int)(end - start + 1), start);
	return buf;
}

struct stall_send {
	int fd;
	void *buf;
	ssize_t ret;
	int err;
};

static void *stall_send_fn(void *arg)
{
	struct stall_send *s = arg;

	s->ret = send(s->fd, s->buf, STALL_LEN, 0);
	s->err = errno;
	return NULL;
}

/*
 * diag_stalled, client: a sendmsg() on an RDMA connection stalls inside
 * the visock socket's lock_sock(), copying from a page a userfaultfd
 * never provides.  Meanwhile "visockctl sockets" and "visockctl links"
 * finish and list the other sockets (the stalled one marked busy);
 * then the page comes and the bytes arrive.
 */
static void diag_stalled_client(struct vt_ctx *c)
{
	struct uffdio_register reg = { 0 };
	struct uffdio_api api = { .api = UFFD_API };
	char *out = malloc(1 << 20), obj[2048];
	unsigned long ino1, ino2, inol;
	struct stall_send ss = { 0 };
	int fd1, fd2, lfd, uffd, st;
	struct uffd_msg msg;
	struct pollfd p;
	pthread_t th;
	pid_t pid;
	void *buf;

	vt_assert(out, "out of memory");
	hu_need_rdma(c);
	uffd = (int)syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	vt_assert(uffd >= 0, "userfaultfd: %s", strerror(errno));
	vt_try(ioctl(uffd, UFFDIO_API, &api), "UFFDIO_API");

	fd1 = su_pair(c);
	fd2 = su_pair(c);
	hu_expect_rdma(fd1, "stalled connection", NULL);
	hu_expect_rdma(fd2, "other connection", NULL);
	lfd = su_listen(VT_FAMILY_VISOCK, false, 4, 0);
	ino1 = hu_sock_ino(fd1);
	ino2 = hu_sock_ino(fd2);
	inol = hu_sock_ino(lfd);

	buf = mmap(NULL, STALL_LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	vt_assert(buf != MAP_FAILED, "mmap: %s", strerror(errno));
	reg.range.start = (unsigned long)buf;
	reg.range.len = STALL_LEN;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	vt_try(ioctl(uffd, UFFDIO_REGISTER, &reg), "UFFDIO_REGISTER");

	ss.fd = fd1;
	ss.buf = buf;
	vt_assert(!pthread_create(&th, NULL, stall_send_fn, &ss),
		  "pthread_create");
	/* The sender is inside sendmsg(), waiting for the page. */
	p.fd = uffd;
	p.events = POLLIN;
	vt_assert(poll(&p, 1, SU_WAIT_MS) == 1, "send() did not fault");
	vt_assert(read(uffd, &msg, sizeof(msg)) == sizeof(msg) &&
		  msg.event == UFFD_EVENT_PAGEFAULT,
		  "no page fault event from userfaultfd");

	st = run_visockctl("sockets -a", out, 1 << 20, &pid);
	if (st < 0) {
		/* Let it finish before failing: it waits for the lock. */
		close(uffd);
		waitpid(pid, NULL, 0);
		vt_fail("visockctl sockets did not finish within %d s while a socket was stalled in sendmsg()",
			CTL_BOUND_S * (int)vt_time_scale);
	}
	vt_assert(st == 0, "visockctl sockets: exit %d: %.300s", st, out);
	vt_assert(json_obj(out, ino2, obj, sizeof(obj)) &&
		  strstr(obj, "\"busy\":false") &&
		  strstr(obj, "\"mode\":\"rdma\""),
		  "other connection (inode %lu) not listed, or busy: %.300s",
		  ino2, out);
	vt_assert(json_obj(out, inol, obj, sizeof(obj)),
		  "listener (inode %lu) not listed: %.300s", inol, out);
	vt_assert(json_obj(out, ino1, obj, sizeof(obj)) &&
		  strstr(obj, "\"busy\":true"),
		  "stalled connection (inode %lu) not listed as busy: %.300s",
		  ino1, out);

	st = run_visockctl("links", out, 1 << 20, &pid);
	if (st < 0) {
		close(uffd);
		waitpid(pid, NULL, 0);
		vt_fail("visockctl links did not finish within %d s while a socket was stalled in sendmsg()",
			CTL_BOUND_S * (int)vt_time_scale);
	}
	vt_assert(st == 0, "visockctl links: exit %d: %.300s", st, out);
	vt_assert(json_obj(out, ino2, obj, sizeof(obj)),
		  "link of the other connection (inode %lu) not listed: %.300s",
		  ino2, out);

	/* Without the userfaultfd the fault is an ordinary one: zeroes. */
	close(uffd);
	pthread_join(th, NULL);
	vt_assert(ss.ret == STALL_LEN, "send(): %zd (%s)", ss.ret,
		  ss.ret < 0 ? vt_errname(ss.err) : "short");
	vt_sync(c, "sent");
	close(fd1);
	close(fd2);
	close(lfd);
	munmap(buf, STALL_LEN);
	free(out);
}

static void diag_stalled_server(struct vt_ctx *c)
{
	char buf[STALL_LEN];
	int fd1, fd2, i;

	hu_need_rdma(c);
	fd1 = su_pair(c);
	fd2 = su_pair(c);
	vt_sync(c, "sent");
	su_read_all(fd1, buf, sizeof(buf));
	for (i = 0; i < STALL_LEN; i++)
		vt_assert(!buf[i], "byte %d of the stalled send is %#x", i,
			  (unsigned char)buf[i]);
	close(fd1);
	close(fd2);
}

/* ---- hostile handshakes: queue pairs a remote peer makes us create ---- */

/*
 * The attacker's end is a visock socket with the debugfs raw_handshake
 * hook set while it connects: its SYN announces visock, and the
 * handshake is ours to write (the wire format of
 * Documentation/networking/visock.rst: big-endian, 8-byte header,
 * TLVs).  The server is an unmodified host.
 */
#define RAW_HOOK	HU_DEBUGFS_DIR "raw_handshake"
#define LAZY_BYTES	HU_SYSCTL_DIR "lazy_bytes"
#define SWREP_DELAY	HU_DEBUGFS_DIR "swrep_delay_ms"
#define LGR_MAX_LINKS	HU_SYSCTL_DIR "lgr_max_links"
#define LGR_PEER_QPS	HU_SYSCTL_DIR "lgr_peer_qps_max"
#define LGR_MEM_MAX	HU_SYSCTL_DIR "lgr_mem_max_mb"
#define LGR_CONNS_MIN	HU_SYSCTL_DIR "lgr_link_conns_min"
#define FO_LEN		16		/* failover message */
#define MSG_MS		10000		/* a message the server owes */
#define LAZY_L		4096		/* lazy_bytes of decline_foreign_qp */
#define FOREIGN_TOKEN	0x5a5a0fffu	/* index 4095: never a connection */

/* A message the server sent: its type and the TLVs the tests look at. */
struct rawdec {
	uint8_t type;
	uint32_t token, reason, qpn;
};

/*
 * What a hostile REQ or SWITCH says, from @fd's address: a made-up QP
 * with a 64 KiB ring; the tests change what they need.
 */
static void raw_params(struct hparams *p, int fd)
{
	memset(p, 0, sizeof(*p));
	hm_local_gid(fd, p->gid);
	p->features = 1;		/* WRITE with immediate */
	p->qpn = (hm_rand32() % 0xfffff0) + 1;
	p->psn = hm_rand32() & 0xffffff;
	p->mtu = 3;			/* IB_MTU_1024 */
	p->rbuf_rkey = hm_rand32();
	p->rbuf_size = 64 * 1024;
	p->token = hm_rand32() | 1;
	p->link_id = p->qpn;
}

/* A valid failover message: "I received nothing over RDMA". */
static void rm_failover(struct hmsg *m)
{
	memset(m, 0, sizeof(*m));
	m->b[0] = 0xf0;
	m->b[1] = 1;
	put32(m->b + 4, 0x56534b46);	/* "VSKF" */
	m->len = FO_LEN;
}

/* The server's next handshake message; fails the test if there is none. */
static void rm_read(int fd, struct rawdec *d)
{
	uint8_t b[HS_MAX_LEN];
	size_t len, off = HS_HDR_LEN;
	ssize_t n;

	memset(d, 0, sizeof(*d));
	n = su_read_within(fd, b, HS_HDR_LEN, MSG_MS);
	vt_assert(n == HS_HDR_LEN, "no handshake message from the server (%zd, %s)",
		  n, n < 0 ? vt_errname(errno) : "EOF");
	len = get16(b + 6);
	vt_assert(get32(b) == HS_MAGIC && len >= HS_HDR_LEN &&
		  len <= HS_MAX_LEN,
		  "not a handshake message from the server");
	n = su_read_within(fd, b + HS_HDR_LEN, len - HS_HDR_LEN, MSG_MS);
	vt_assert(n == (ssize_t)(len - HS_HDR_LEN), "a short handshake message");
	d->type = b[4];
	while (off + 4 <= len) {
		uint16_t t = get16(b + off), l = get16(b + off + 2);

		if (off + 4 + l > len)
			break;
		if (t == TLV_TOKEN && l == 4)
			d->token = get32(b + off + 4);
		if (t == TLV_REASON && l == 4)
			d->reason = get32(b + off + 4);
		if (t == TLV_QPN && l == 4)
			d->qpn = get32(b + off + 4);
		off += 4 + l;
	}
}

/* The second client address of the test bed, or false. */
static bool alt_ip(struct in_addr *ip)
{
	const char *alt = getenv("VISOCK_TEST_ALT_IP");

	return alt && inet_pton(AF_INET, alt, ip) == 1;
}

/*
 * Client: a connection to @port from @src (NULL: the default address),
 * with the raw handshake hook set while it connects.
 */
static int raw_connect(struct vt_ctx *c, int port, const struct in_addr *src)
{
	struct sockaddr_storage ss;
	socklen_t len = su_peer_addr(c, false, port, &ss);
	struct visock_info vi;
	int fd = su_socket(VT_FAMILY_VISOCK, false, SOCK_CLOEXEC);

	if (src) {
		struct sockaddr_in sin = { .sin_family = AF_INET,
					   .sin_addr = *src };

		vt_try(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), "bind");
	}
	hu_set_ll(RAW_HOOK, 1);
	if (connect(fd, (struct sockaddr *)&ss, len)) {
		hu_write_ll(RAW_HOOK, 0);
		vt_fail("connect: %s", vt_errname(errno));
	}
	hu_set_ll(RAW_HOOK, 0);
	hu_get_info(fd, &vi);
	vt_assert(vi.vi_mode == VISOCK_MODE_TCP && !vi.vi_local_qpn,
		  "raw_handshake connection: mode %u, QP %u", vi.vi_mode,
		  vi.vi_local_qpn);
	return fd;
}

/*
 * A lazy connection whose switch the server resets: its application
 * reads exactly the @want bytes the client wrote before the switch
 * (each @fill), then ECONNRESET; never a byte of the message after
 * them, never the end of the stream.
 */
static void lazy_expect_prefix_reset(int fd, size_t want, char fill,
				     const char *what)
{
	long long deadline = ctl_now_ms() + 30000;
	char buf[16384];
	size_t got = 0, bad = 0, i;
	ssize_t n;
	int err;

	for (;;) {
		/* Each recv() on its own: the bytes before an error count. */
		if (ctl_now_ms() > deadline || !su_poll(fd, POLLIN, 30000)) {
			n = -1;
			errno = ETIMEDOUT;
			break;
		}
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		for (i = 0; i < (size_t)n; i++)
			if (buf[i] != fill && !bad++)
				vt_diag("%s: byte %zu is %#x, not %#x", what,
					got + i, (unsigned char)buf[i],
					(unsigned char)fill);
		got += n;
	}
	err = n < 0 ? errno : 0;
	vt_diag("%s: read %zu bytes (%zu not the client's), then %s", what,
		got, bad, err ? vt_errname(err) : "EOF");
	vt_assert(got == want && !bad,
		  "%s: read %zu bytes, %zu of them not the client's; expected exactly its %zu",
		  what, got, bad, want);
	vt_assert(err == ECONNRESET, "%s: read ended with %s, expected ECONNRESET",
		  what, err ? vt_errname(err) : "EOF");
}

static void hostile_cleanup(const struct vt_ctx *c)
{
	(void)c;
	hu_write_ll(RAW_HOOK, 0);
	hu_write_ll(LAZY_BYTES, 0);
	hu_write_ll(SWREP_DELAY, 0);
	/* qp_mem_budget's value, should its server half have failed. */
	if (hu_read_ll(LGR_MEM_MAX) == 8)
		hu_write_ll(LGR_MEM_MAX, 256);
	if (hu_read_ll(LGR_PEER_QPS) == 65536)
		hu_write_ll(LGR_PEER_QPS, 0);
	if (hu_read_ll(LGR_CONNS_MIN) == 512)
		hu_write_ll(LGR_CONNS_MIN, 16);
}

/* Client: the hook exists here and the server can run RDMA. */
static void need_hostile(struct vt_ctx *c, bool alt)
{
	struct in_addr ip;

	hu_need_rdma(c);
	vt_agree(c, !vt_is_client(c) || hu_debugfs_ready("raw_handshake"),
		 "no debugfs file visock/raw_handshake");
	if (alt)
		vt_agree(c, !vt_is_client(c) || alt_ip(&ip),
			 "VISOCK_TEST_ALT_IP is not set: no second client address");
}

/*
 * decline_foreign_qp: host A (the client's second address) has a QP
 * with the server; host B (the client's first address) starts a lazy
 * connection and writes a SWITCH that names A's QP (both QP numbers, as
 * VISOCK_INFO shows them; on a real network they are easy to guess).
 * The server cannot join it for B and declines; the decline must not go
 * out on A's QP: A's end sees no message for a token it does not know,
 * and the server counts the foreign SWITCH.
 */
static void decline_foreign_qp(struct vt_ctx *c)
{
	long long stale0, declined0, foreign0, reset0;
	struct visock_info vi;
	struct hparams rp;
	struct hmsg m;
	int lfd, port, victim, fd, i;
	char pad[LAZY_L], line[64];
	struct in_addr ip;

	need_hostile(c, true);
	hu_set_ll(LAZY_BYTES, LAZY_L);
	if (!vt_is_client(c)) {
		lfd = su_listen(VT_FAMILY_VISOCK, false, 16, SOCK_CLOEXEC);
		su_send_port(c, lfd);
		victim = su_accept(lfd, SOCK_CLOEXEC);
		hu_expect_rdma(victim, "host A's connection", NULL);
		declined0 = hu_proc("lazy_switch_declined");
		reset0 = hu_proc("lazy_switch_reset");
		foreign0 = hu_proc_get("lazy_switch_foreign");
		vt_sync(c, "victim up");
		fd = su_accept(lfd, SOCK_CLOEXEC);
		/*
		 * Only a lazy connection looks for a SWITCH: if host B's
		 * connection is not one, the rest proves nothing.
		 */
		for (i = 0; i < 500; i++) {
			hu_get_info(fd, &vi);
			if (vi.vi_flags & VISOCK_INFO_F_LAZY)
				break;
			usleep(10 * 1000);
		}
		vt_diag("host B's connection: mode %u, fallback reason %u, flags %#x",
			vi.vi_mode, vi.vi_fallback_reason, vi.vi_flags);
		vt_assert(vi.vi_flags & VISOCK_INFO_F_LAZY,
			  "host B's connection is not a lazy one (flags %#x)",
			  vi.vi_flags);
		/* Wait until the server acted on the SWITCH. */
		hu_proc_wait_ge("lazy_switch_declined", declined0 + 1, 5000);
		hu_proc_wait_ge("lazy_switch_reset", reset0 + 1, 5000);
		vt_send_num(c, "declined",
			    hu_proc("lazy_switch_declined") - declined0);
		vt_diag("SWITCH for a foreign QP: declined +%lld, reset +%lld, foreign +%lld",
			hu_proc("lazy_switch_declined") - declined0,
			hu_proc("lazy_switch_reset") - reset0,
			hu_proc_get("lazy_switch_foreign") - foreign0);
		vt_assert(hu_proc("lazy_switch_declined") == declined0,
			  "the server declined the SWITCH on another host's QP");
		vt_assert(hu_proc_get("lazy_switch_foreign") == foreign0 + 1,
			  "lazy_switch_foreign did not count the SWITCH");
		lazy_expect_prefix_reset(fd, LAZY_L, 'p',
					 "SWITCH for a foreign QP");
		vt_sync(c, "checked");
		su_xfer(&victim, 1, 64 * 1024, 60000);
		close(fd);
		close(victim);
		close(lfd);
		hu_set_ll(LAZY_BYTES, 0);
		return;
	}
	alt_ip(&ip);
	port = su_recv_port(c);
	/* Host A: a normal connection from the second address. */
	{
		struct sockaddr_in sin = { .sin_family = AF_INET,
					   .sin_addr = ip };
		struct sockaddr_storage ss;
		socklen_t len = su_peer_addr(c, false, port, &ss);

		victim = su_socket(VT_FAMILY_VISOCK, false, SOCK_CLOEXEC);
		vt_try(bind(victim, (struct sockaddr *)&sin, sizeof(sin)),
		       "bind(VISOCK_TEST_ALT_IP)");
		vt_try(connect(victim, (struct sockaddr *)&ss, len), "connect");
	}
	hu_expect_rdma(victim, "host A's connection", &vi);
	vt_sync(c, "victim up");
	stale0 = hu_proc("lgr_stale_dropped");

	/* Host B: a lazy start (a QP to the server is up), then SWITCH. */
	fd = raw_connect(c, port, NULL);
	raw_params(&rp, fd);
	rp.qpn = vi.vi_local_qpn;
	rp.token = FOREIGN_TOKEN;
	rp.lgr_id = vi.vi_peer_qpn;
	rp.link_id = vi.vi_local_qpn;
	hm_setup_valid(&m, HS_SWITCH, &rp);
	memset(pad, 'p', sizeof(pad));
	su_write_all(fd, pad, sizeof(pad));
	su_write_all(fd, m.b, m.len);
	vt_diag("SWITCH from B names A's QPs %u (server) / %u (client)",
		rp.lgr_id, rp.link_id);
	vt_recv(c, line, sizeof(line));
	/* A message on A's QP would be dropped there, as a stale token. */
	usleep(500 * 1000);
	vt_diag("stale messages on this host: +%lld",
		hu_proc("lgr_stale_dropped") - stale0);
	vt_assert(hu_proc("lgr_stale_dropped") == stale0,
		  "a message for host B's token arrived on host A's QP");
	vt_sync(c, "checked");
	su_xfer(&victim, 1, 64 * 1024, 60000);
	close(fd);
	close(victim);
	hu_set_ll(LAZY_BYTES, 0);
}

/*
 * lazy_bad_switch: host B's raw_handshake client starts lazy connections
 * (a keeper connection holds the QP up) and writes, after its byte
 * LAZY_L - 1, a malformed message where its SWITCH would stand: one that
 * is no handshake message (bad magic), a REQ, a SWITCH whose TLV runs
 * past its end.  The server resets each connection: its application
 * reads exactly the LAZY_L bytes before the message, then ECONNRESET,
 * and it counts lazy_switch_reset.
 */
static const char *const bad_switch_names[] = {
	"bad magic", "a REQ", "a TLV past the end",
};

static void bad_switch_msg(struct hmsg *m, unsigned int i, int fd)
{
	uint8_t v[4] = { 0 };
	struct hparams rp;

	raw_params(&rp, fd);
	switch (i) {
	case 0:
		hm_setup_valid(m, HS_SWITCH, &rp);
		put32(m->b, 0x47455420);	/* "GET " */
		break;
	case 1:
		hm_setup_valid(m, HS_REQ, &rp);
		break;
	default:
		hm_start(m, HS_SWITCH, HS_VERSION);
		hm_tlv_raw(m, TLV_TOKEN, 64, v, sizeof(v));
		hm_end(m);
		break;
	}
}

static void lazy_bad_switch(struct vt_ctx *c)
{
	struct visock_info vi;
	int lfd, port, keeper, fd, i;
	char pad[LAZY_L], what[64];
	long long reset0;
	unsigned int k;
	struct hmsg m;

	need_hostile(c, false);
	hu_set_ll(LAZY_BYTES, LAZY_L);
	vt_sync(c, "lazy_bytes set");
	if (!vt_is_client(c)) {
		lfd = su_listen(VT_FAMILY_VISOCK, false, 16, SOCK_CLOEXEC);
		su_send_port(c, lfd);
		keeper = su_accept(lfd, SOCK_CLOEXEC);
		hu_expect_rdma(keeper, "the keeper", NULL);
		for (k = 0; k < ARRAY_SIZE(bad_switch_names); k++) {
			snprintf(what, sizeof(what), "after byte %d: %s",
				 LAZY_L - 1, bad_switch_names[k]);
			reset0 = hu_proc("lazy_switch_reset");
			vt_sync(c, "next");
			fd = su_accept(lfd, SOCK_CLOEXEC);
			for (i = 0; i < 500; i++) {
				hu_get_info(fd, &vi);
				if (vi.vi_flags & VISOCK_INFO_F_LAZY)
					break;
				usleep(10 * 1000);
			}
			vt_assert(vi.vi_flags & VISOCK_INFO_F_LAZY,
				  "%s: not a lazy connection (flags %#x)",
				  what, vi.vi_flags);
			lazy_expect_prefix_reset(fd, LAZY_L, 'p', what);
			vt_assert(hu_proc("lazy_switch_reset") >= reset0 + 1,
				  "%s: lazy_switch_reset did not count it",
				  what);
			vt_sync(c, "read");
			close(fd);
		}
		close(keeper);
		close(lfd);
		hu_set_ll(LAZY_BYTES, 0);
		return;
	}
	port = su_recv_port(c);
	/* The keeper brings the QP up: it proposes no lazy start. */
	hu_set_ll(LAZY_BYTES, 0);
	keeper = su_connect(c, VT_FAMILY_VISOCK, false, port);
	hu_set_ll(LAZY_BYTES, LAZY_L);
	hu_expect_rdma(keeper, "the keeper", NULL);
	memset(pad, 'p', sizeof(pad));
	for (k = 0; k < ARRAY_SIZE(bad_switch_names); k++) {
		vt_sync(c, "next");
		fd = raw_connect(c, port, NULL);
		bad_switch_msg(&m, k, fd);
		su_write_all(fd, pad, sizeof(pad));
		su_write_all(fd, m.b, m.len);
		vt_sync(c, "read");
		close(fd);
	}
	close(keeper);
	hu_set_ll(LAZY_BYTES, 0);
}

/*
 * gid_mismatch: a REQ whose GID is not the address the client connects
 * from (here the client host's other address, which answers RoCE: the
 * server could connect a QP to it) is declined with BAD_MSG.
 */
static void gid_mismatch(struct vt_ctx *c)
{
	struct visock_info vi;
	struct hparams rp;
	struct rawdec d;
	struct hmsg m;
	struct in_addr ip;
	long long mism0;
	int lfd, fd;

	need_hostile(c, true);
	if (!vt_is_client(c)) {
		mism0 = hu_proc_get("lgr_gid_mismatch");
		lfd = su_listen(VT_FAMILY_VISOCK, false, 16, SOCK_CLOEXEC);
		su_send_port(c, lfd);
		vt_assert(su_poll(lfd, POLLIN, 3 * MSG_MS) & POLLIN,
			  "no connection settled within %d ms", 3 * MSG_MS);
		fd = su_accept(lfd, SOCK_CLOEXEC);
		hu_get_info(fd, &vi);
		vt_diag("server: mode %u, fallback reason %u, lgr_gid_mismatch +%lld",
			vi.vi_mode, vi.vi_fallback_reason,
			hu_proc_get("lgr_gid_mismatch") - mism0);
		vt_assert(vi.vi_fallback_reason == VISOCK_FB_BAD_MSG,
			  "fallback reason %u, expected BAD_MSG (%u)",
			  vi.vi_fallback_reason, VISOCK_FB_BAD_MSG);
		vt_assert(hu_proc_get("lgr_gid_mismatch") == mism0 + 1,
			  "lgr_gid_mismatch did not count the REQ");
		vt_sync(c, "checked");
		close(fd);
		close(lfd);
		return;
	}
	alt_ip(&ip);
	fd = raw_connect(c, su_recv_port(c), NULL);
	raw_params(&rp, fd);
	hm_gid_of(&ip, rp.gid);
	rp.link_id = 0;
	hm_setup_valid(&m, HS_REQ, &rp);
	su_write_all(fd, m.b, m.len);
	rm_read(fd, &d);
	vt_diag("REQ with GID %s from another address: type %u, reason %u",
		getenv("VISOCK_TEST_ALT_IP"), d.type, d.reason);
	vt_assert(d.type == HS_DECLINE,
		  "the server answered type %u (REP is 2), expected DECLINE",
		  d.type);
	vt_assert(d.reason == VISOCK_FB_BAD_MSG,
		  "DECLINE reason %u, expected BAD_MSG (%u)", d.reason,
		  VISOCK_FB_BAD_MSG);
	vt_sync(c, "checked");
	close(fd);
}

/*
 * One hostile attempt: REQ for a new QP (LINK 0) with a made-up QP,
 * CONFIRM, then a valid failover message, which makes the server's QP
 * dying.  Returns 0 if the server set up a QP (the connection is left
 * open in *@fdp), else the reason of its DECLINE (*@fdp is -1).
 */
static uint32_t hostile_attempt(struct vt_ctx *c, int port, int *fdp)
{
	struct hparams rp;
	struct rawdec d;
	struct hmsg m;
	uint8_t fo[FO_LEN];
	int fd = raw_connect(c, port, NULL);

	raw_params(&rp, fd);
	hm_setup_valid(&m, HS_REQ, &rp);
	su_write_all(fd, m.b, m.len);
	rm_read(fd, &d);
	if (d.type == HS_DECLINE) {
		close(fd);
		*fdp = -1;
		return d.reason ?: 255;
	}
	vt_assert(d.type == HS_REP, "the server answered type %u", d.type);
	hm_confirm(&m, d.token);
	su_write_all(fd, m.b, m.len);
	/*
	 * Let the server settle on RDMA first: bytes that arrive with the
	 * CONFIRM are only looked at on TCP's next event.
	 */
	usleep(300 * 1000);
	rm_failover(&m);
	su_write_all(fd, m.b, m.len);
	/* The server answers with its own once its QP is dying. */
	if (su_read_within(fd, fo, sizeof(fo), MSG_MS) != sizeof(fo))
		vt_diag("no failover message from the server");
	*fdp = fd;
	return 0;
}

/* Slab + VmallocUsed of /proc/meminfo, KiB. */
static long long kmem_kib(void)
{
	char line[256];
	long long v, sum = 0;
	FILE *f = fopen("/proc/meminfo", "r");

	vt_assert(f, "/proc/meminfo: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Slab: %lld", &v) == 1 ||
		    sscanf(line, "VmallocUsed: %lld", &v) == 1)
			sum += v;
	fclose(f);
	return sum;
}

/* The server's cap on QPs with one peer host. */
static long long peer_cap(void)
{
	long long cap = hu_read_ll(LGR_PEER_QPS);

	if (cap <= 0)
		cap = 8 * hu_read_ll(LGR_MAX_LINKS);
	return cap;
}

/* Fixed part of what the hostile connections may cost beyond QPs, MiB. */
#define HOSTILE_OVERHEAD_MB	32

/*
 * Server of the hostile handshake tests: accept whatever comes until the
 * client is done, keep the connections with a QP open (close fallen back
 * ones), and watch the QP gauges.  With @mem, slab + vmalloc growth is
 * checked as well.
 */
static void hostile_server(struct vt_ctx *c, bool mem)
{
	long long cap = peer_cap(), qps0, alive0, qps, alive, max_qps = 0;
	long long max_alive = 0, kib0, kib = 0, limit, capped0;
	int lfd, fd, n = 0, nfds = 0, *fds = NULL;
	char line[64];

	/* QPs of earlier tests go first: they would count here. */
	hu_proc_wait("qps", 0, 60000);
	if (hu_proc_get("qps_alive") > 0)
		hu_proc_wait("qps_alive", 0, 60000);
	qps0 = hu_proc("qps");
	alive0 = hu_proc_get("qps_alive");
	capped0 = hu_proc_get("lgr_qps_capped");
	kib0 = kmem_kib();
	lfd = su_listen(VT_FAMILY_VISOCK, false, 256, SOCK_CLOEXEC);
	su_send_port(c, lfd);
	vt_send_num(c, "cap", cap);
	for (;;) {
		struct pollfd pfd[2] = { { .fd = lfd, .events = POLLIN },
					 { .fd = c->ctl, .events = POLLIN } };

		vt_try(poll(pfd, 2, 60000), "poll");
		if (pfd[0].revents & POLLIN) {
			struct visock_info vi;

			fd = su_accept(lfd, SOCK_CLOEXEC);
			n++;
			hu_get_info(fd, &vi);
			if (vi.vi_fallback_reason) {
				close(fd);
			} else {
				fds = realloc(fds, (nfds + 1) * sizeof(*fds));
				vt_assert(fds, "out of memory");
				fds[nfds++] = fd;
			}
			qps = hu_proc("qps") - qps0;
			alive = hu_proc_get("qps_alive") - alive0;
			max_qps = qps > max_qps ? qps : max_qps;
			max_alive = alive > max_alive ? alive : max_alive;
			if (mem && kmem_kib() - kib0 > kib)
				kib = kmem_kib() - kib0;
			continue;
		}
		if (pfd[1].revents)
			break;
	}
	vt_recv(c, line, sizeof(line));
	vt_assert(!strncmp(line, "done", 4), "client: %s", line);
	qps = hu_proc("qps") - qps0;
	alive = hu_proc_get("qps_alive") - alive0;
	max_qps = qps > max_qps ? qps : max_qps;
	max_alive = alive > max_alive ? alive : max_alive;
	if (mem && kmem_kib() - kib0 > kib)
		kib = kmem_kib() - kib0;
	vt_diag("server: %d connections, %d with a QP, cap %lld, capped +%lld",
		n, nfds, cap, hu_proc_get("lgr_qps_capped") - capped0);
	vt_diag("server: QPs listed %lld (max %lld), not freed %lld (max %lld); qp_queue_bytes %lld, registered_bytes %lld",
		qps, max_qps, alive, max_alive, hu_proc_get("qp_queue_bytes"),
		hu_proc("registered_bytes"));
	if (mem) {
		limit = hu_read_ll(LGR_MEM_MAX) +
			HOSTILE_OVERHEAD_MB;
		vt_diag("server: slab + vmalloc grew by %lld KiB (%lld KiB per connection with a QP); limit %lld MiB",
			kib, nfds ? kib / nfds : 0, limit);
		vt_assert(kib <= limit * 1024,
			  "slab + vmalloc grew by %lld KiB, more than lgr_mem_max_mb + %d MiB",
			  kib, HOSTILE_OVERHEAD_MB);
	}
	vt_assert(max_qps <= cap && max_alive <= cap,
		  "%lld QPs listed, %lld not freed at most: the cap is %lld",
		  max_qps, max_alive, cap);
	vt_sync(c, "checked");
	while (nfds--)
		close(fds[nfds]);
	free(fds);
	close(lfd);
}

/* Client of the hostile handshake tests: @n attempts. */
static void hostile_client(struct vt_ctx *c, int n)
{
	int port = su_recv_port(c), i, fd, nfds = 0, *fds;
	long long cap = vt_recv_num(c, "cap");
	unsigned int declined[VISOCK_FB_MAX + 2] = { 0 };
	uint32_t r;

	fds = calloc(cap + 4, sizeof(*fds));
	vt_assert(fds, "out of memory");
	for (i = 0; i < n; i++) {
		r = hostile_attempt(c, port, &fd);
		if (!r)
			fds[nfds++] = fd;
		else
			declined[r > VISOCK_FB_MAX ? VISOCK_FB_MAX + 1 : r]++;
		/* Far beyond the cap: stop before the server runs dry. */
		if (nfds >= cap + 4)
			break;
	}
	vt_send(c, "done");
	vt_diag("client: %d attempts, %d QPs set up, declined: QP_LIMIT %u, LINK_BUSY %u, other %u",
		i < n ? i + 1 : n, nfds, declined[VISOCK_FB_QP_LIMIT],
		declined[VISOCK_FB_LINK_BUSY],
		i - nfds - declined[VISOCK_FB_QP_LIMIT] -
		declined[VISOCK_FB_LINK_BUSY] + (i < n));
	vt_assert(nfds <= cap, "the server set up %d QPs for one host, cap %lld",
		  nfds, cap);
	vt_assert(declined[VISOCK_FB_QP_LIMIT],
		  "no attempt was declined with QP_LIMIT");
	vt_sync(c, "checked");
	while (nfds--)
		close(fds[nfds]);
	free(fds);
}

/*
 * qp_cap_dying: REQ for a new QP, CONFIRM, a failover message (the QP
 * is dying), again and again, holding every connection: the server's QPs
 * with this host stay at or below net.visock.lgr_peer_qps_max, counted
 * in every state, and the attempts beyond it are declined with QP_LIMIT.
 */
static void qp_cap_dying(struct vt_ctx *c)
{
	need_hostile(c, false);
	if (vt_is_client(c))
		hostile_client(c, 8 * (int)hu_read_ll(LGR_MAX_LINKS) +
				  8);
	else
		hostile_server(c, false);
}

#define HOSTILE_ATTEMPTS	2000

/*
 * hostile_handshakes: HOSTILE_ATTEMPTS such attempts from one host leave
 * the server's QPs at or below the cap, and its slab + vmalloc growth
 * within lgr_mem_max_mb plus HOSTILE_OVERHEAD_MB.
 */
static void hostile_handshakes(struct vt_ctx *c)
{
	need_hostile(c, false);
	if (vt_is_client(c))
		hostile_client(c, HOSTILE_ATTEMPTS);
	else
		hostile_server(c, true);
}

/*
 * qp_mem_budget: the queues of a QP count in the namespace's memory
 * budget.  With net.visock.lgr_mem_max_mb=8 on the server, a QP sized
 * for 512 connections (lgr_link_conns_min 512 there: about 9 MiB of
 * queues) does not fit, while a connection's rings (128 KiB) would: a
 * REQ for a new QP is declined with BUF_EXHAUSTED and nothing stays
 * charged.
 */
static void qp_mem_budget(struct vt_ctx *c)
{
	long long saved, saved_cap, saved_min;
	struct hparams rp;
	struct rawdec d;
	struct hmsg m;
	int lfd, fd;

	need_hostile(c, false);
	if (!vt_is_client(c)) {
		/*
		 * Only the memory budget may decline: the queue pairs the
		 * tests before left dying must not hit the peer cap first.
		 */
		saved_cap = hu_read_ll(LGR_PEER_QPS);
		hu_set_ll(LGR_PEER_QPS, 65536);
		saved = hu_read_ll(LGR_MEM_MAX);
		hu_set_ll(LGR_MEM_MAX, 8);
		/* The group's first QP as large as lgr_link_conns (512). */
		saved_min = hu_read_ll(LGR_CONNS_MIN);
		hu_set_ll(LGR_CONNS_MIN, 512);
		lfd = su_listen(VT_FAMILY_VISOCK, false, 16, SOCK_CLOEXEC);
		su_send_port(c, lfd);
		vt_expect(c, "answered");
		hu_set_ll(LGR_MEM_MAX, saved);
		hu_set_ll(LGR_PEER_QPS, saved_cap);
		hu_set_ll(LGR_CONNS_MIN, saved_min);
		vt_assert(hu_proc_wait("registered_bytes", 0, 5000) == 0,
			  "%lld ring bytes still charged",
			  hu_proc("registered_bytes"));
		vt_sync(c, "checked");
		close(lfd);
		return;
	}
	fd = raw_connect(c, su_recv_port(c), NULL);
	raw_params(&rp, fd);
	hm_setup_valid(&m, HS_REQ, &rp);
	su_write_all(fd, m.b, m.len);
	rm_read(fd, &d);
	vt_send(c, "answered");
	vt_diag("REQ for a new QP, server lgr_mem_max_mb=8: type %u, reason %u",
		d.type, d.reason);
	vt_assert(d.type == HS_DECLINE && d.reason == VISOCK_FB_BUF_EXHAUSTED,
		  "the server answered type %u reason %u, expected DECLINE(BUF_EXHAUSTED)",
		  d.type, d.reason);
	vt_sync(c, "checked");
	close(fd);
}

/* ---- vc lifetime: lazy rings, lingering vcs, QP teardown ---- */

#define LT_LAZY_L	4096	/* net.visock.lazy_bytes of lazy_ring_isolation */
#define LT_CYCLES	1000	/* victims of lazy_ring_isolation */
#define LT_CARRIERS	4	/* connections carrying patterns meanwhile */
#define LT_CHUNK	2048	/* bytes per carrier and cycle */
#define LT_UNLOADS	20	/* cycles of unload_qp_teardown */
#define LT_WAIT_MS	10000	/* something the peer owes */

enum { LT_VICTIM = 1, LT_CARRIER = 2 };

/* Sysctls the tests change, as the program found them (-1: unknown). */
static struct hu_saved_sysctl lt_saved[] = {
	{ "lazy_bytes", -1 }, { "enable", -1 }, { "lgr_idle_ms", -1 },
	{ "lgr_mem_max_mb", -1 },
};

static long long lt_wait_injected(const char *point, long long want)
{
	long long v;
	int ms;

	for (ms = 0; ms < LT_WAIT_MS; ms += 5) {
		v = hu_fault_injected(point);
		if (v >= want)
			return v;
		usleep(5000);
	}
	return hu_fault_injected(point);
}

/* Byte @off of connection @id's stream from the server. */
static uint8_t lt_pat(uint32_t id, uint64_t off)
{
	return (uint8_t)(id * 151u + off * 7u + (off >> 8) * 13u + 1u);
}

static void lt_fill(uint8_t *buf, size_t len, uint32_t id, uint64_t off)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = lt_pat(id, off + i);
}

/* The first bytes of every connection: its number and kind. */
static void lt_header(uint8_t *buf, size_t len, uint32_t id, uint32_t kind)
{
	memset(buf, 0x5a, len);
	memcpy(buf, &id, sizeof(id));
	memcpy(buf + 4, &kind, sizeof(kind));
}

static int lt_connect(struct vt_ctx *c, int port)
{
	struct sockaddr_storage ss;
	socklen_t len = su_peer_addr(c, false, port, &ss);
	int fd = su_socket(VT_FAMILY_VISOCK, false, SOCK_CLOEXEC);

	vt_try(connect(fd, (struct sockaddr *)&ss, len), "connect");
	return fd;
}

/* ---- lazy switch: the responder's first messages on the QP ---- */

/*
 * The side that answered a SWITCH (the responder) writes over RDMA as
 * soon as it answered; its cursor messages (a producer update, done
 * writing, closed) may reach the initiator before the initiator handled
 * the reply, while it does not know the responder's ring yet.  They must
 * count as the new connection's first messages: the initiator reads
 * every byte and then the end of the stream, never ECONNRESET.
 * debugfs swrep_delay_ms makes the initiator handle every reply late, so
 * those messages are always first.
 */
#define EC_L		4096	/* lazy_bytes of lazy_early_cursor */
#define EC_ROUNDS	200
#define EC_PRE		10	/* the responder's bytes on TCP */
#define EC_POST		300	/* its bytes over RDMA, then the end */
#define EC_DELAY_MS	30	/* swrep_delay_ms */
#define EC_WAIT_MS	10000	/* something the peer owes */

static uint8_t ec_byte(int round, int off)
{
	return (uint8_t)(round * 29 + off * 7 + (off >> 8) + 1);
}

/* The side that writes past byte L - 1 in round @r: client or server. */
static bool ec_initiates(const struct vt_ctx *c, int r)
{
	return vt_is_client(c) == !(r & 1);
}

/*
 * Initiator: the bytes up to L go to TCP, byte L starts the switch and
 * is not taken until the reply is handled (a non-blocking write stops
 * at L).  Then read the responder's bytes (TCP, then the ring) and the
 * end of the stream.  What went wrong goes to @why ("" if nothing did).
 */
static void ec_initiator(int fd, int r, char *why, size_t size)
{
	static uint8_t out[EC_L + 1];
	uint8_t in[EC_PRE + EC_POST];
	size_t got = 0;
	ssize_t n;
	int i;

	memset(out, 'x', sizeof(out));
	su_nonblock(fd, true);
	n = send(fd, out, sizeof(out), MSG_NOSIGNAL);
	vt_assert(n == EC_L, "round %d: a non-blocking write of L + 1 bytes took %zd (%s)",
		  r, n, n < 0 ? vt_errname(errno) : "bytes");
	su_nonblock(fd, false);
	*why = '\0';
	while (got < sizeof(in)) {
		/* A socket error is not the same as nothing at all. */
		if (!su_poll(fd, POLLIN, EC_WAIT_MS)) {
			snprintf(why, size, "%zu of %zu bytes, then nothing for %d ms",
				 got, sizeof(in), EC_WAIT_MS);
			return;
		}
		n = recv(fd, in + got, sizeof(in) - got, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			snprintf(why, size, "%zu of %zu bytes, then %s", got,
				 sizeof(in), n < 0 ? vt_errname(errno) : "EOF");
			return;
		}
		got += n;
	}
	for (i = 0; i < (int)sizeof(in); i++)
		vt_assert(in[i] == ec_byte(r, i), "round %d: byte %d wrong", r, i);
	n = su_read_within(fd, in, 1, EC_WAIT_MS);
	if (n)
		snprintf(why, size, "expected the end of the stream, got %s",
			 n < 0 ? vt_errname(errno) : "data");
}

/*
 * Responder: a few bytes on TCP, read the initiator's L bytes, wait for
 * the switch (our reply is out then), a few bytes over RDMA, and the end:
 * shutdown(SHUT_WR) (then the initiator's end of the stream) or close().
 * What went wrong goes to @why ("" if nothing did).
 */
static void ec_responder(int fd, int r, bool shut, char *why, size_t size)
{
	static uint8_t in[EC_L];
	uint8_t out[EC_PRE + EC_POST];
	struct visock_info vi;
	int i, ms;
	ssize_t n;

	for (i = 0; i < (int)sizeof(out); i++)
		out[i] = ec_byte(r, i);
	*why = '\0';
	su_write_all(fd, out, EC_PRE);
	su_read_all(fd, in, sizeof(in));
	for (ms = 0; ms < EC_WAIT_MS; ms++) {
		hu_get_info(fd, &vi);
		if (vi.vi_mode == VISOCK_MODE_RDMA)
			break;
		usleep(1000);
	}
	if (vi.vi_mode != VISOCK_MODE_RDMA) {
		snprintf(why, size, "the responder did not switch");
		return;
	}
	su_write_all(fd, out + EC_PRE, EC_POST);
	if (shut) {
		vt_try(shutdown(fd, SHUT_WR), "shutdown(SHUT_WR)");
		/* The initiator ends its stream after it read ours. */
		n = su_read_within(fd, in, 1, 2 * EC_WAIT_MS);
		if (n)
			snprintf(why, size, "after shutdown: expected the end of the stream, got %s",
				 n < 0 ? vt_errname(errno) : "data");
	}
}

/* One end's view of round @r's connection, for the control channel. */
static void ec_state(int fd, int r, const char *role, const char *why,
		     char *buf, size_t size)
{
	struct visock_info vi;

	hu_get_info(fd, &vi);
	snprintf(buf, size,
		 "round %d %s%s%s: mode %u flags %#x fallback %s qpn %u/%u token %#x/%#x rdma state %u credits %u cdc sent %llu rcvd %llu rdma sent %llu rcvd %llu tcp sent %llu rcvd %llu; lazy_switch_reset %lld lgr_stale_dropped %lld",
		 r, role, *why ? " FAIL: " : " ok", why, vi.vi_mode,
		 vi.vi_flags, hu_fb_name(vi.vi_fallback_reason),
		 vi.vi_local_qpn, vi.vi_peer_qpn, vi.vi_local_token,
		 vi.vi_peer_token, vi.vi_rdma_state, vi.vi_rdma_credits,
		 (unsigned long long)vi.vi_cdc_sent,
		 (unsigned long long)vi.vi_cdc_rcvd,
		 (unsigned long long)vi.vi_rdma_bytes_sent,
		 (unsigned long long)vi.vi_rdma_bytes_rcvd,
		 (unsigned long long)vi.vi_tcp_bytes_sent,
		 (unsigned long long)vi.vi_tcp_bytes_rcvd,
		 hu_proc("lazy_switch_reset"), hu_proc("lgr_stale_dropped"));
}

static void lazy_early_cursor(struct vt_ctx *c)
{
	char why[256], mine[CTL_LINE_MAX / 2], peer[CTL_LINE_MAX];
	long long switches, reset, t0, t, slowest = 0;
	int lfd = -1, port = 0, keeper, fd, r;

	hu_need_rdma(c);
	vt_agree(c, hu_debugfs_ready("swrep_delay_ms"),
		 "no debugfs file visock/swrep_delay_ms");
	hu_set_ll(LAZY_BYTES, EC_L);
	/* The keeper brings the QP up: a lazy start needs one. */
	if (vt_is_client(c)) {
		port = su_recv_port(c);
		keeper = lt_connect(c, port);
	} else {
		lfd = su_listen(VT_FAMILY_VISOCK, false, 16, SOCK_CLOEXEC);
		su_send_port(c, lfd);
		keeper = su_accept(lfd, SOCK_CLOEXEC);
	}
	hu_expect_rdma(keeper, "the keeper", NULL);
	hu_set_ll(SWREP_DELAY, EC_DELAY_MS);
	switches = hu_proc("lazy_switches");
	reset = hu_proc("lazy_switch_reset");
	vt_sync(c, "keeper up");
	t0 = ctl_now_ms();
	for (r = 0; r < EC_ROUNDS; r++) {
		t = ctl_now_ms();
		fd = vt_is_client(c) ? lt_connect(c, port) :
				       su_accept(lfd, SOCK_CLOEXEC);
		if (ec_initiates(c, r))
			ec_initiator(fd, r, why, sizeof(why));
		else
			ec_responder(fd, r, !(r & 2), why, sizeof(why));
		/* Both ends' view, for a failure to say what did not happen. */
		ec_state(fd, r, ec_initiates(c, r) ? "initiator" : "responder",
			 why, mine, sizeof(mine));
		close(fd);
		vt_send(c, "%s", mine);
		vt_recv(c, peer, sizeof(peer));
		if (*why || strstr(peer, " FAIL: ")) {
			vt_diag("%s: %s", vt_is_client(c) ? "client" : "server",
				mine);
			vt_diag("%s: %s", vt_is_client(c) ? "server" : "client",
				peer);
			vt_fail("round %d failed (%s initiated)", r,
				ec_initiates(c, r) == vt_is_client(c) ?
				"the client" : "the server");
		}
		t = ctl_now_ms() - t;
		if (t > slowest)
			slowest = t;
	}
	hu_set_ll(SWREP_DELAY, 0);
	/* Times for the record only: a late reply used to stall rounds. */
	vt_diag("%d rounds in %lld ms (slowest %lld ms): lazy_switches +%lld, lazy_switch_reset +%lld",
		EC_ROUNDS, ctl_now_ms() - t0, slowest,
		hu_proc("lazy_switches") - switches,
		hu_proc("lazy_switch_reset") - reset);
	vt_assert(hu_proc("lazy_switches") - switches == EC_ROUNDS,
		  "lazy_switches +%lld, expected %d",
		  hu_proc("lazy_switches") - switches, EC_ROUNDS);
	vt_assert(hu_proc("lazy_switch_reset") == reset,
		  "lazy_switch_reset +%lld", hu_proc("lazy_switch_reset") - reset);
	vt_sync(c, "ec done");
	close(keeper);
	if (lfd >= 0)
		close(lfd);
	hu_set_ll(LAZY_BYTES, 0);
}

/*
 * Client of a victim: the bytes up to L go to TCP, byte L starts the
 * switch (the ring is announced in the SWITCH) and is not taken until
 * the reply is in: close right then.
 */
static void lt_victim_client(int fd, uint32_t id)
{
	static uint8_t buf[LT_LAZY_L + 1];
	size_t off = 0;
	ssize_t n;

	lt_header(buf, sizeof(buf), id, LT_VICTIM);
	su_nonblock(fd, true);
	while (off < sizeof(buf)) {
		n = send(fd, buf + off, sizeof(buf) - off, MSG_NOSIGNAL);
		if (n > 0) {
			off += n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN && off < LT_LAZY_L) {
			su_poll(fd, POLLOUT, 1000);
			continue;
		}
		break;
	}
	close(fd);
}

/* The first 8 bytes of a connection: false if it was reset before. */
static bool lt_read_header(int fd, uint32_t *hdr)
{
	size_t got = 0;
	ssize_t n;

	hdr[0] = 0;
	hdr[1] = 0;
	while (got < 2 * sizeof(*hdr)) {
		n = read(fd, (char *)hdr + got, 2 * sizeof(*hdr) - got);
		if (n > 0)
			got += n;
		else if (!(n < 0 && errno == EINTR))
			return false;
	}
	return true;
}

/*
 * Server of a victim: read what came over TCP, give the switch a moment
 * to be answered, then write as a server does that answers at once.
 * Whatever the client's reset does to this connection is fine.
 * Return: true if the connection was on RDMA when it wrote.
 */
static bool lt_victim_server(int lfd, uint32_t id)
{
	static uint8_t buf[LT_CHUNK];
	struct visock_info vi;
	socklen_t len;
	size_t got = 8;		/* the header */
	bool rdma = false;
	uint32_t hdr[2];
	ssize_t n;
	int i, fd;

	/* A victim the client reset may never be accepted. */
	if (!(su_poll(lfd, POLLIN, 2000) & POLLIN))
		return false;
	fd = su_accept(lfd, SOCK_CLOEXEC);
	if (!lt_read_header(fd, hdr) || hdr[0] != id) {
		close(fd);
		return false;
	}
	su_nonblock(fd, true);
	while (got < LT_LAZY_L) {
		n = recv(fd, buf, sizeof(buf) < LT_LAZY_L - got ?
			 sizeof(buf) : LT_LAZY_L - got, 0);
		if (n > 0) {
			got += n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR) &&
		    su_poll(fd, POLLIN, 2000))
			continue;
		break;
	}
	for (i = 0; i < 100 && !rdma; i++) {
		len = sizeof(vi);
		memset(&vi, 0, sizeof(vi));
		if (getsockopt(fd, SOL_VISOCK, VISOCK_INFO, &vi, &len))
			break;
		rdma = vi.vi_mode == VISOCK_MODE_RDMA;
		if (!rdma)
			usleep(2000);
	}
	lt_fill(buf, sizeof(buf), id, 0);
	n = send(fd, buf, sizeof(buf), MSG_NOSIGNAL | MSG_DONTWAIT);
	close(fd);
	return rdma && n > 0;
}

/*
 * A carrier: a connection through the handshake listener (made before
 * lazy starts were on), on the same QP; it takes a ring from the pool.
 */
static int lt_carrier_open(struct vt_ctx *c, int lfd, int port, uint32_t id)
{
	uint32_t hdr[2] = { id, LT_CARRIER };
	int fd;

	if (vt_is_client(c)) {
		fd = lt_connect(c, port);
		su_write_all(fd, hdr, sizeof(hdr));
		return fd;
	}
	fd = su_accept(lfd, SOCK_CLOEXEC);
	vt_assert(lt_read_header(fd, hdr), "carrier %u: no first bytes", id);
	vt_assert(hdr[0] == id && hdr[1] == LT_CARRIER,
		  "carrier %u: its first bytes name connection %u", id,
		  hdr[0]);
	return fd;
}

/* One chunk of a carrier's pattern; the client checks every byte. */
static void lt_carrier_chunk(struct vt_ctx *c, int fd, uint32_t id,
			     uint64_t off)
{
	static uint8_t buf[LT_CHUNK], want[LT_CHUNK];
	size_t i;

	lt_fill(want, sizeof(want), id, off);
	if (!vt_is_client(c)) {
		su_write_all(fd, want, sizeof(want));
		return;
	}
	su_read_all(fd, buf, sizeof(buf));
	for (i = 0; i < sizeof(buf); i++)
		vt_assert(buf[i] == want[i],
			  "carrier %u: byte %llu is %#x, expected %#x: a foreign byte",
			  id, (unsigned long long)(off + i), buf[i], want[i]);
}

/*
 * lazy_ring_isolation: lazy starts on; LT_CYCLES times a client writes
 * past L (its SWITCH announces its ring) and closes at once, while the
 * server answers the switch and writes; meanwhile LT_CARRIERS connections
 * on the same QP, replaced one per cycle (so that they take rings that
 * went back to the pool), carry per-connection patterns.  No carrier may
 * read a foreign byte, and the client must drop no message for an
 * unknown connection (lgr_stale_dropped): the server's late writes go to
 * a ring its client still holds for it, not to one it gave back.
 */
static void lazy_ring_isolation(struct vt_ctx *c)
{
	int carriers[LT_CARRIERS], lfd = -1, lfd_lazy = -1, port = 0;
	int port_lazy = 0, keeper, i, n = 0;
	uint64_t coff[LT_CARRIERS];
	uint32_t cid[LT_CARRIERS], id = 1;
	long long lazy0, stale0, stale, sw0, reset0, rdma_writes = 0;
	struct timespec t0, t1;

	hu_need_rdma(c);
	/* Keeper and carriers: a listener from before lazy starts. */
	if (vt_is_client(c)) {
		port = su_recv_port(c);
		keeper = lt_connect(c, port);
	} else {
		lfd = su_listen(VT_FAMILY_VISOCK, false, 64, SOCK_CLOEXEC);
		su_send_port(c, lfd);
		keeper = su_accept(lfd, SOCK_CLOEXEC);
	}
	lazy0 = hu_sysctl("lazy_bytes");
	hu_sysctl_set("lazy_bytes", LT_LAZY_L);
	vt_sync(c, "lazy_bytes set");
	if (vt_is_client(c)) {
		port_lazy = su_recv_port(c);
	} else {
		lfd_lazy = su_listen(VT_FAMILY_VISOCK, false, 64, SOCK_CLOEXEC);
		su_send_port(c, lfd_lazy);
	}
	{
		struct visock_info vi;

		hu_expect_rdma(keeper, "the keeper (handshake)", &vi);
	}
	vt_sync(c, "keeper up");
	stale0 = hu_proc("lgr_stale_dropped");
	sw0 = hu_proc("lazy_switches");
	reset0 = hu_proc("lazy_switch_reset");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < LT_CYCLES; i++) {
		uint32_t vid = id++;
		int k;

		if (!(i % 250))
			vt_diag("cycle %d", i);
		if (vt_is_client(c))
			lt_victim_client(lt_connect(c, port_lazy), vid);
		else
			rdma_writes += lt_victim_server(lfd_lazy, vid);
		if (n == LT_CARRIERS) {
			close(carriers[0]);
			memmove(carriers, carriers + 1,
				(n - 1) * sizeof(carriers[0]));
			memmove(cid, cid + 1, (n - 1) * sizeof(cid[0]));
			memmove(coff, coff + 1, (n - 1) * sizeof(coff[0]));
			n--;
		}
		cid[n] = id++;
		coff[n] = 0;
		carriers[n] = lt_carrier_open(c, lfd, port, cid[n]);
		n++;
		for (k = 0; k < n; k++) {
			lt_carrier_chunk(c, carriers[k], cid[k], coff[k]);
			coff[k] += LT_CHUNK;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (i = 0; i < n; i++)
		close(carriers[i]);
	vt_sync(c, "cycles done");
	stale = hu_proc("lgr_stale_dropped") - stale0;
	vt_diag("%d victims in %lld s: lazy_switches +%lld, lazy_switch_reset +%lld, lgr_stale_dropped +%lld%s",
		LT_CYCLES, (long long)(t1.tv_sec - t0.tv_sec),
		hu_proc("lazy_switches") - sw0,
		hu_proc("lazy_switch_reset") - reset0, stale,
		vt_is_client(c) ? "" : " (server)");
	if (!vt_is_client(c))
		vt_diag("server: %lld victims written to over RDMA",
			rdma_writes);
	if (vt_is_client(c))
		vt_diag("client: lgr_lingering %lld after the cycles",
			hu_proc("lgr_lingering"));
	close(keeper);
	if (lfd >= 0)
		close(lfd);
	if (lfd_lazy >= 0)
		close(lfd_lazy);
	hu_sysctl_set("lazy_bytes", lazy0 > 0 ? lazy0 : 0);
	if (vt_is_client(c))
		vt_assert(!stale,
			  "%lld messages for connections the client had given up (their rings went back to the pool)",
			  stale);
	vt_sync(c, "isolation done");
}

/*
 * linger_reap_race: the client closes first, so its end lingers (the
 * server has not said it is done); the "link_linger" delay holds its
 * visock_vc_destroy() right after it handed the vc to the QP, and
 * the server's close (its closed flag reaps and frees the vc) comes
 * in that window.  The vc must be reaped, nothing lingers, and the
 * kernel log stays clean (the use after free it guards against shows
 * under KASAN).
 */
static void linger_reap_race(struct vt_ctx *c)
{
	long long inj0 = 0, inj;
	char ch = 'l';
	pid_t pid;
	int fd, st;

	hu_need_rdma(c);
	if (vt_is_client(c)) {
		vt_assert(hu_fault_ready(), "no fault injection in debugfs (%s)",
			  HU_FAULT_DIR);
		inj0 = hu_fault_injected("link_linger");
	}
	fd = su_pair(c);
	{
		struct visock_info vi;

		hu_expect_rdma(fd, "the connection", &vi);
	}
	if (vt_is_client(c)) {
		su_write_all(fd, &ch, 1);
		su_read_all(fd, &ch, 1);
	} else {
		su_read_all(fd, &ch, 1);
		su_write_all(fd, &ch, 1);
	}
	vt_sync(c, "connected");
	if (!vt_is_client(c)) {
		vt_sync(c, "client lingers");
		close(fd);
		vt_sync(c, "server closed");
		return;
	}
	hu_fault_arm("link_linger", 1);
	/* The child's close releases the socket; it may block in the delay. */
	pid = fork();
	vt_assert(pid >= 0, "fork: %s", strerror(errno));
	if (!pid) {
		close(fd);
		_exit(0);
	}
	close(fd);
	inj = lt_wait_injected("link_linger", inj0 + 1);
	vt_sync(c, "client lingers");
	vt_sync(c, "server closed");
	vt_assert(waitpid(pid, &st, 0) == pid, "waitpid: %s", strerror(errno));
	hu_fault_disarm();
	vt_assert(inj == inj0 + 1,
		  "link_linger injected %lld times, expected 1: the client's end did not linger",
		  inj - inj0);
	vt_assert(hu_proc_wait("lgr_lingering", 0, LT_WAIT_MS) == 0,
		  "%lld connections still linger after the server's close",
		  hu_proc("lgr_lingering"));
	vt_assert(hu_proc_wait("lgr_connections", 0, LT_WAIT_MS) == 0,
		  "lgr_connections %lld after both closed",
		  hu_proc("lgr_connections"));
}

#define RK_BYTES	(256 * 1024)	/* connection B's stream */
#define RK_REM_ACCESS	10		/* IB_WC_REM_ACCESS_ERR */

static long long rk_hook(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), HU_DEBUGFS_DIR "%s", name);
	return hu_read_ll(path);
}

/* One connection more through @lfd (server) or to @port (client). */
static int rk_open(struct vt_ctx *c, int lfd, int port, const char *what,
		   struct visock_info *vi)
{
	int fd = vt_is_client(c) ? lt_connect(c, port) :
				   su_accept(lfd, SOCK_CLOEXEC);

	hu_expect_rdma(fd, what, vi);
	return fd;
}

/*
 * rkey_rotation: a keeper connection holds the QP; connection A gets a
 * receive ring on each host and is closed by both ends, so that the
 * rings go back to the pools (nothing lingers); connection B on the same
 * QP takes them again.  Each host must count a new key for its ring
 * (lgr_rkey_rotations).  Then the client's stale_write hook makes the
 * client's first WRITE of B preceded by one WRITE to A's old ring with
 * the key the client learnt for A: the key B's REP gave must differ, the
 * server's device must refuse that WRITE (remote access error on the
 * client's QP), and B's 256 KiB must arrive intact all the same (on TCP,
 * after the failover the broken QP causes).
 */
static void rkey_rotation(struct vt_ctx *c)
{
	static uint8_t buf[RK_BYTES], want[RK_BYTES];
	long long rot0, rot, done0 = 0, done, status, oldk, newk;
	int keeper, fd, lfd = -1, port = 0;
	struct visock_info vi;
	uint32_t qpn_a;
	char ch = 'a';
	size_t i;

	hu_need_rdma(c);
	if (vt_is_client(c)) {
		vt_assert(hu_debugfs_ready("stale_write"),
			  "no stale_write test hook in %s", HU_DEBUGFS_DIR);
		port = su_recv_port(c);
	} else {
		lfd = su_listen(VT_FAMILY_VISOCK, false, 8, SOCK_CLOEXEC);
		su_send_port(c, lfd);
	}
	keeper = rk_open(c, lfd, port, "the keeper", &vi);
	fd = rk_open(c, lfd, port, "connection A", &vi);
	qpn_a = vi.vi_local_qpn;
	if (vt_is_client(c)) {
		su_write_all(fd, &ch, 1);
		su_read_all(fd, &ch, 1);
		close(fd);
	} else {
		su_read_all(fd, &ch, 1);
		su_write_all(fd, &ch, 1);
		while (read(fd, &ch, 1) > 0)
			;
		close(fd);
	}
	vt_assert(hu_proc_wait("lgr_lingering", 0, LT_WAIT_MS) == 0,
		  "%lld connections still linger after A closed on both ends",
		  hu_proc("lgr_lingering"));
	rot0 = hu_proc("lgr_rkey_rotations");
	vt_sync(c, "A gone");

	fd = rk_open(c, lfd, port, "connection B", &vi);
	vt_assert(vi.vi_local_qpn == qpn_a,
		  "B is on QP %u, A was on QP %u: no ring to reuse",
		  vi.vi_local_qpn, qpn_a);
	rot = hu_proc("lgr_rkey_rotations") - rot0;
	vt_diag("lgr_rkey_rotations +%lld%s", rot,
		vt_is_client(c) ? "" : " (server)");
	vt_sync(c, "B up");

	lt_fill(want, sizeof(want), 7, 0);
	if (!vt_is_client(c)) {
		su_read_all(fd, buf, sizeof(buf));
		for (i = 0; i < sizeof(buf); i++)
			vt_assert(buf[i] == want[i],
				  "B: byte %zu is %#x, expected %#x", i,
				  buf[i], want[i]);
		su_write_all(fd, &ch, 1);
		close(fd);
		close(keeper);
		close(lfd);
		vt_assert(rot > 0,
			  "B took A's ring without a new key (lgr_rkey_rotations +0)");
		return;
	}
	done0 = rk_hook("stale_done");
	hu_set_ll(HU_DEBUGFS_DIR "stale_write", 1);
	su_write_all(fd, want, sizeof(want));
	su_read_all(fd, &ch, 1);
	for (i = 0; i < LT_WAIT_MS / 5; i++) {
		if (rk_hook("stale_done") > done0)
			break;
		usleep(5000);
	}
	done = rk_hook("stale_done");
	status = rk_hook("stale_status");
	oldk = rk_hook("stale_old_rkey");
	newk = rk_hook("stale_new_rkey");
	hu_get_info(fd, &vi);
	vt_diag("late WRITE: done +%lld, status %lld, A's key %#llx, B's key %#llx, B's mode %u",
		done - done0, status, oldk, newk, vi.vi_mode);
	close(fd);
	close(keeper);
	vt_assert(done == done0 + 1,
		  "the late WRITE with A's key was not posted or did not complete");
	vt_assert(oldk != newk,
		  "B's peer ring has A's key %#llx: the ring was reused with the same key",
		  oldk);
	vt_assert(status == RK_REM_ACCESS,
		  "the late WRITE with A's key completed with status %lld, expected %d (remote access error): it reached B's ring",
		  status, RK_REM_ACCESS);
	vt_assert(rot > 0,
		  "B took A's ring without a new key (lgr_rkey_rotations +0)");
}

/* Kernel log lines that match the extended regular expression @re. */
static int lt_dmesg_count(const char *re)
{
	char cmd[256];
	FILE *f;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "dmesg 2>/dev/null | grep -cE '%s'", re);
	f = popen(cmd, "r");

	vt_assert(f, "dmesg: %s", strerror(errno));
	if (fscanf(f, "%d", &n) != 1)
		n = -1;
	pclose(f);
	return n;
}

/* Kernel log lines that report a bug, a warning or corrupted memory. */
static int lt_splats(void)
{
	return lt_dmesg_count("BUG[: ]|WARNING:|Oops|general protection|KASAN|Poison overwritten|corrupted");
}

/* QPs a device removal found (at unload: left over by the namespace). */
static int lt_removal_kills(void)
{
	return lt_dmesg_count("visock: QP [0-9]+ killed: device removed");
}

/* The module file run_tests.sh loaded (VISOCK_KO, or the source tree's). */
static void lt_module_path(char *buf, size_t size)
{
	const char *ko = getenv("VISOCK_KO"), *src = getenv("VISOCK_SRC");
	struct utsname u;

	buf[0] = 0;
	if (ko && *ko) {
		snprintf(buf, size, "%s", ko);
		return;
	}
	if (src && *src && !uname(&u))
		snprintf(buf, size, "%s/build/%s/visock.ko", src, u.release);
	if (buf[0] && access(buf, R_OK))
		buf[0] = 0;
}

/*
 * unload_qp_teardown: the Soft-RoCE device is in the initial namespace,
 * so a new namespace gets no QP; the same teardown meets the namespace's
 * exit at module unload.  LT_UNLOADS times: a connection, closed; the
 * client's QP goes idle at once (lgr_idle_ms 0) and its idle work is held
 * for a while ("qp_teardown" delay) after it took the QP off the list;
 * rmmod right then, then the module is loaded again.  The unload must
 * wait for the QP (its freeing writes the namespace's counters): the
 * device removal that follows the namespace's exit finds no QP left to
 * kill, and the kernel log shows no report.  On a kernel without KASAN a write to
 * freed per-namespace memory is silent: the test then sees only what it
 * breaks (oops, warnings, a failed unload or reload).
 */
static void unload_qp_teardown(struct vt_ctx *c)
{
	long long enable = 1, idle = 0, inj0 = 0;
	char ko[512], cmd[600];
	int i, fd, tries, splats0 = 0, kills0 = 0, kills;
	char ch = 'u';

	hu_need_rdma(c);
	if (vt_is_client(c)) {
		lt_module_path(ko, sizeof(ko));
		vt_assert(ko[0], "no module file to load again (VISOCK_KO, VISOCK_SRC)");
		enable = hu_sysctl("enable");
		idle = hu_sysctl("lgr_idle_ms");
		splats0 = lt_splats();
	}
	for (i = 0; i < LT_UNLOADS; i++) {
		if (vt_is_client(c)) {
			hu_sysctl_set("lgr_idle_ms", 0);
			vt_assert(hu_fault_ready(),
				  "no fault injection in debugfs (%s)",
				  HU_FAULT_DIR);
			inj0 = hu_fault_injected("qp_teardown");
		}
		vt_sync(c, "unload cycle");
		fd = su_pair(c);
		if (vt_is_client(c)) {
			su_write_all(fd, &ch, 1);
			su_read_all(fd, &ch, 1);
			kills0 = lt_removal_kills();
			hu_fault_arm("qp_teardown", 1);
			close(fd);
			vt_assert(lt_wait_injected("qp_teardown", inj0 + 1) ==
				  inj0 + 1, "cycle %d: no idle teardown of the QP",
				  i);
			for (tries = 0; tries < 500; tries++) {
				if (!system("rmmod visock 2>/dev/null"))
					break;
				usleep(10000);
			}
			vt_assert(tries < 500, "cycle %d: rmmod visock failed", i);
			kills = lt_removal_kills() - kills0;
			snprintf(cmd, sizeof(cmd), "insmod '%s'", ko);
			vt_assert(!system(cmd), "cycle %d: %s failed", i, cmd);
			hu_sysctl_set("enable", enable);
			hu_sysctl_set("lgr_idle_ms", idle);
			vt_assert(!kills,
				  "cycle %d: the unload left a QP in teardown to the device removal (\"killed: device removed\")",
				  i);
			vt_assert(lt_splats() == splats0,
				  "cycle %d: the kernel log reports a bug (dmesg)",
				  i);
		} else {
			su_read_all(fd, &ch, 1);
			su_write_all(fd, &ch, 1);
			su_expect_eof(fd);
			close(fd);
		}
		vt_sync(c, "reloaded");
		/* The module is back: the peer's QP end is gone at once. */
		if (vt_is_client(c))
			vt_assert(hu_proc_wait("rdma_devices", 1, LT_WAIT_MS) > 0,
				  "cycle %d: no RDMA device after the reload", i);
	}
	if (vt_is_client(c))
		vt_diag("%d unloads during a QP's idle teardown", LT_UNLOADS);
}

/* ---- memcg_rings: rings charged to the socket's memory cgroup ---- */

#define MC_CONNS	4		/* connections of the charge phase */
#define MC_BIG_RING	(4 * 1024 * 1024)	/* SO_RCVBUFFORCE, limit phase */
#define MC_HEADROOM	(1024 * 1024)	/* memory.max above memory.current */
#define MC_WAIT_MS	20000		/* closes to return their charge */
#define MC_MNT		"/tmp/visock-memcg-mnt"
#define MC_CG_NAME	"visock-memcg-test-"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC	0x63677270
#endif

/* This half's cgroup directory, for the cleanup in the runner. */
static char mc_cg[256];
static bool mc_mounted;

static void mc_cg_path(const struct vt_ctx *c, char *buf, size_t size,
		       const char *root)
{
	snprintf(buf, size, "%s/" MC_CG_NAME "%s", root,
		 vt_is_client(c) ? "client" : "server");
}

static bool mc_write(const char *dir, const char *file, const char *val)
{
	char path[512];
	int fd;
	bool ok;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ok = write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	close(fd);
	return ok;
}

/* A key of the cgroup's memory.stat, in bytes. */
static long long mc_stat(const char *key)
{
	char path[512], line[256];
	long long v = -1;
	size_t n = strlen(key);
	FILE *f;

	snprintf(path, sizeof(path), "%s/memory.stat", mc_cg);
	f = fopen(path, "re");
	vt_assert(f, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ' ')
			v = atoll(line + n + 1);
	fclose(f);
	vt_assert(v >= 0, "%s has no \"%s\"", path, key);
	return v;
}

static long long mc_current(void)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/memory.current", mc_cg);
	return hu_read_ll(path);
}

/*
 * Put this test half into a cgroup v2 group of its own with the memory
 * controller, mounting cgroup2 and enabling the controller if needed.
 * Return: "" or why it cannot (the kernel lacks cgroup2 or memcg).
 */
static const char *mc_join(const struct vt_ctx *c)
{
	static char why[800];
	const char *root = "/sys/fs/cgroup";
	char path[512], buf[128], pid[32];
	struct statfs st;

	if (statfs(root, &st) || st.f_type != CGROUP2_SUPER_MAGIC) {
		root = MC_MNT;
		if (statfs(root, &st) || st.f_type != CGROUP2_SUPER_MAGIC) {
			mkdir(MC_MNT, 0700);
			if (mount("none", MC_MNT, "cgroup2", 0, NULL)) {
				snprintf(why, sizeof(why),
					 "kernel has no cgroup2: mount: %s",
					 strerror(errno));
				return why;
			}
		}
		mc_mounted = true;
	}
	snprintf(path, sizeof(path), "%s/cgroup.controllers", root);
	if (hu_read_text(path, buf, sizeof(buf)) < 0 ||
	    !strstr(buf, "memory")) {
		snprintf(why, sizeof(why),
			 "kernel has no memory controller in cgroup2 (%s: \"%s\")",
			 path, buf);
		return why;
	}
	/* Already on, or refused: the directory's files tell. */
	mc_write(root, "cgroup.subtree_control", "+memory");
	mc_cg_path(c, mc_cg, sizeof(mc_cg), root);
	rmdir(mc_cg);
	vt_assert(!mkdir(mc_cg, 0755), "mkdir %s: %s", mc_cg, strerror(errno));
	snprintf(path, sizeof(path), "%s/memory.max", mc_cg);
	vt_assert(!access(path, F_OK),
		  "%s: no memory.max (controller not enabled in %s)", mc_cg,
		  root);
	snprintf(pid, sizeof(pid), "%d", getpid());
	vt_assert(mc_write(mc_cg, "cgroup.procs", pid),
		  "moving the test into %s: %s", mc_cg, strerror(errno));
	return "";
}

/* Both connections' rings, as VISOCK_INFO reports them. */
static long long mc_rings(int fd)
{
	struct visock_info vi;

	hu_expect_rdma(fd, "connection in the cgroup", &vi);
	return (long long)vi.vi_rbuf_size + vi.vi_peer_rbuf_size;
}

/*
 * memcg_rings: ring memory is charged to the socket's memory cgroup,
 * on both ends (the server's rings are taken by a workqueue, and
 * charged to its listener's cgroup).  Each half runs in a cgroup v2
 * group of its own.  MC_CONNS RDMA connections raise memory.stat
 * "sock" by at least their rings' bytes, and closing them brings it
 * back.  Then, on the client, memory.max only MC_HEADROOM above
 * memory.current and an MC_BIG_RING ring asked for: the connection
 * falls back to TCP with VISOCK_FB_NOMEM and carries bytes.
 */
static void memcg_rings(struct vt_ctx *c)
{
	long long sock0, sock1, sock2 = -1, rings = 0, cur;
	int fds[MC_CONNS], lfd = -1, fd, i, port = 0, ms;
	struct sockaddr_storage ss;
	struct visock_info vi;
	char ch = 'm', val[32];
	const char *why;
	socklen_t len;

	hu_need_rdma(c);
	why = mc_join(c);
	vt_agree(c, !*why, why);
	vt_assert(mc_write(mc_cg, "memory.max", "max"), "memory.max: %s",
		  strerror(errno));
	sock0 = mc_stat("sock");
	/* The listener is made in the cgroup: its children are charged here. */
	if (!vt_is_client(c)) {
		lfd = su_listen(VT_FAMILY_VISOCK, false, MC_CONNS + 2,
				SOCK_CLOEXEC);
		su_send_port(c, lfd);
	} else {
		port = su_recv_port(c);
	}
	for (i = 0; i < MC_CONNS; i++) {
		if (vt_is_client(c))
			fds[i] = su_connect(c, VT_FAMILY_VISOCK, false, port);
		else
			fds[i] = su_accept(lfd, SOCK_CLOEXEC);
		if (vt_is_client(c)) {
			su_write_all(fds[i], &ch, 1);
			su_read_all(fds[i], &ch, 1);
		} else {
			su_read_all(fds[i], &ch, 1);
			su_write_all(fds[i], &ch, 1);
		}
		rings += mc_rings(fds[i]);
	}
	sock1 = mc_stat("sock");
	vt_diag("%s: %d connections, rings %lld bytes: memory.stat sock %lld -> %lld",
		vt_is_client(c) ? "client" : "server", MC_CONNS, rings, sock0,
		sock1);
	vt_assert(sock1 - sock0 >= rings,
		  "memory.stat sock rose by %lld bytes with %d RDMA connections open, their rings are %lld bytes",
		  sock1 - sock0, MC_CONNS, rings);
	vt_sync(c, "charged");
	for (i = 0; i < MC_CONNS; i++)
		close(fds[i]);
	for (ms = 0; ms < MC_WAIT_MS * (int)vt_time_scale; ms += 10) {
		sock2 = mc_stat("sock");
		if (sock2 - sock0 < rings / MC_CONNS / 2)
			break;
		usleep(10000);
	}
	vt_diag("after close: memory.stat sock %lld", sock2);
	vt_assert(sock2 - sock0 < rings / MC_CONNS / 2,
		  "memory.stat sock still %lld bytes above its start after the connections closed (rings: %lld)",
		  sock2 - sock0, rings);
	vt_sync(c, "uncharged");

	/* Limit phase: a ring larger than what the client's cgroup has left. */
	if (!vt_is_client(c)) {
		fd = su_accept(lfd, SOCK_CLOEXEC);
		su_read_all(fd, &ch, 1);
		su_write_all(fd, &ch, 1);
		hu_get_info(fd, &vi);
		vt_assert(vi.vi_mode == VISOCK_MODE_TCP,
			  "server: mode %u, expected TCP after the client's cgroup refused its ring",
			  vi.vi_mode);
		vt_sync(c, "limited");
		close(fd);
		close(lfd);
		return;
	}
	fd = su_socket(VT_FAMILY_VISOCK, false, SOCK_CLOEXEC);
	su_setint(fd, SOL_SOCKET, SO_RCVBUFFORCE, MC_BIG_RING);
	cur = mc_current();
	snprintf(val, sizeof(val), "%lld", cur + MC_HEADROOM);
	vt_assert(mc_write(mc_cg, "memory.max", val), "memory.max %s: %s",
		  val, strerror(errno));
	len = su_peer_addr(c, false, port, &ss);
	vt_try(connect(fd, (struct sockaddr *)&ss, len),
	       "connect with memory.max near memory.current");
	su_write_all(fd, &ch, 1);
	su_read_all(fd, &ch, 1);
	hu_get_info(fd, &vi);
	vt_diag("memory.max %s (current %lld), ring asked %d: mode %u reason %u (%s)",
		val, cur, MC_BIG_RING, vi.vi_mode, vi.vi_fallback_reason,
		hu_fb_name(vi.vi_fallback_reason));
	vt_assert(vi.vi_mode == VISOCK_MODE_TCP &&
		  vi.vi_fallback_reason == VISOCK_FB_NOMEM,
		  "mode %u reason %u (%s), expected TCP with NOMEM: a %d byte ring does not fit in memory.max",
		  vi.vi_mode, vi.vi_fallback_reason,
		  hu_fb_name(vi.vi_fallback_reason), MC_BIG_RING);
	vt_assert(mc_stat("sock") - sock0 < MC_BIG_RING,
		  "memory.stat sock %lld above its start with a refused ring",
		  mc_stat("sock") - sock0);
	vt_sync(c, "limited");
	close(fd);
}

/* The runner's cleanup: the group goes once the test half has exited. */
static void mc_cleanup(const struct vt_ctx *c)
{
	char path[512];

	mc_cg_path(c, path, sizeof(path), "/sys/fs/cgroup");
	rmdir(path);
	mc_cg_path(c, path, sizeof(path), MC_MNT);
	rmdir(path);
	if (!umount(MC_MNT))
		rmdir(MC_MNT);
}

/* ---- pre-shared keys and the authenticated handshake ---- */

/*
 * Hosts a and b get keys with visockctl and net.visock.auth, then make
 * one connection and exchange PSK_BYTES each way:
 *
 *   psk_auth            same key on both, auth=2 (require): RDMA, the
 *                       connection says it is authenticated (flag,
 *                       visockctl sockets, hs_auth_ok)
 *   psk_mismatch        same key id, other secrets, auth=1 (prefer):
 *                       TCP with reason AUTH on both, bytes intact
 *   psk_missing         client: no key, auth=0; server: key, auth=2:
 *                       TCP with reason AUTH_MISSING on both
 *   psk_list_no_secret  visockctl key list shows id, name, state, never
 *                       the secret; del removes the key
 *   psk_unprivileged    a user without CAP_NET_ADMIN can neither add
 *                       nor list keys
 */
#define PSK_A		"000102030405060708090a0b0c0d0e0f" \
			"101112131415161718191a1b1c1d1e1f"
#define PSK_B		"f0e1d2c3b4a5968778695a4b3c2d1e0f" \
			"0123456789abcdef0123456789abcdef"
#define PSK_C		"5ec7e75ec7e75ec7e75ec7e75ec7e75e"
#define PSK_BYTES	(256 * 1024)
#define PSK_OUT		8192

static struct hu_saved_sysctl psk_saved[] = {
	{ "auth", -1 },
	{ "transform", -1 },
	{ "transform_require", -1 },
};

/* Run visockctl with @args (as user @uid unless it is 0); its exit code. */
static int psk_ctl_as(uid_t uid, char *out, size_t size, const char *fmt, ...)
{
	const char *bin = hu_visockctl_path();
	char args[512], cmd[1024];
	size_t len = 0;
	int pfd[2], st;
	va_list ap;
	pid_t pid;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "exec %s %s 2>&1", bin, args);
	vt_try(pipe(pfd), "pipe");
	pid = vt_try(fork(), "fork");
	if (!pid) {
		close(pfd[0]);
		if (dup2(pfd[1], 1) < 0)
			_exit(126);
		if (uid && (setgroups(0, NULL) || setgid(uid) || setuid(uid)))
			_exit(125);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	while (len + 1 < size) {
		ssize_t n = read(pfd[0], out + len, size - 1 - len);

		if (n <= 0)
			break;
		len += n;
	}
	out[len] = '\0';
	close(pfd[0]);
	vt_try(waitpid(pid, &st, 0), "waitpid");
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* A file with @hex in it, readable by everybody; its name in @path. */
static void psk_secret_file(char *path, size_t size, const char *hex)
{
	int fd;

	snprintf(path, size, "/tmp/visock-psk-XXXXXX");
	fd = vt_try(mkstemp(path), "mkstemp");
	su_write_all(fd, hex, strlen(hex));
	vt_try(fchmod(fd, 0644), "fchmod");
	close(fd);
}

static void psk_add(uint32_t id, const char *name, const char *hex)
{
	char path[64], out[PSK_OUT];
	int st;

	psk_secret_file(path, sizeof(path), hex);
	st = psk_ctl_as(0, out, sizeof(out), "key add %u name %s secret-file %s",
			id, name, path);
	unlink(path);
	vt_assert(st == 0, "visockctl key add %u: exit %d: %.300s", id, st,
		  out);
}

/* Remove every key the tests use; absent ones are no error. */
static void psk_clear(void)
{
	char out[PSK_OUT];
	unsigned int id;

	for (id = 1; id <= 9; id++)
		psk_ctl_as(0, out, sizeof(out), "key del %u", id);
}

static void psk_cleanup(const struct vt_ctx *c)
{
	(void)c;
	hu_sysctls_restore(psk_saved, ARRAY_SIZE(psk_saved));
	if (hu_write_ll(HU_DEBUGFS_DIR "rekey_records", 0) && errno != ENOENT)
		vt_diag("resetting rekey_records: %s", strerror(errno));
	if (hu_write_ll(HU_DEBUGFS_DIR "forge_write", 0) && errno != ENOENT)
		vt_diag("disarming forge_write: %s", strerror(errno));
	if (!access(HU_SYSCTL_DIR "auth", F_OK)) {
		char out[PSK_OUT];

		psk_clear();
		psk_ctl_as(0, out, sizeof(out), "policy flush");
	}
}

/* PSK_BYTES from the client, echoed back by the server; bytes checked. */
static void psk_echo(struct vt_ctx *c, int fd)
{
	static uint8_t buf[PSK_BYTES];
	uint32_t i;

	for (i = 0; i < PSK_BYTES; i++)
		buf[i] = (uint8_t)(i * 31 + 7);
	if (vt_is_client(c)) {
		su_write_all(fd, buf, PSK_BYTES);
		memset(buf, 0, PSK_BYTES);
		su_read_all(fd, buf, PSK_BYTES);
	} else {
		su_read_all(fd, buf, PSK_BYTES);
		su_write_all(fd, buf, PSK_BYTES);
	}
	for (i = 0; i < PSK_BYTES; i++)
		if (buf[i] != (uint8_t)(i * 31 + 7))
			vt_fail("byte %u of the echo is %#x, expected %#x", i,
				buf[i], (uint8_t)(i * 31 + 7));
}

/* Both hosts: keys and policy set, then one connection; bytes checked. */
static int psk_connect(struct vt_ctx *c)
{
	int fd;

	vt_sync(c, "keys set");
	fd = su_pair(c);
	psk_echo(c, fd);
	return fd;
}

static void psk_expect_fallback(int fd, uint32_t reason, const char *what)
{
	struct visock_info vi;

	hu_get_info(fd, &vi);
	vt_diag("%s: mode %u, fallback reason %s", what, vi.vi_mode,
		hu_fb_name(vi.vi_fallback_reason));
	vt_assert(vi.vi_mode == VISOCK_MODE_TCP &&
		  vi.vi_fallback_reason == reason,
		  "%s: mode %u reason %s, expected TCP with %s", what,
		  vi.vi_mode, hu_fb_name(vi.vi_fallback_reason),
		  hu_fb_name(reason));
	vt_assert(!(vi.vi_flags & VISOCK_INFO_F_AUTH),
		  "%s: a fallen-back connection says it is authenticated",
		  what);
}

static void psk_auth(struct vt_ctx *c)
{
	char out[PSK_OUT];
	struct visock_info vi;
	long long ok0;
	int fd, st;

	hu_need_rdma(c);
	psk_clear();
	psk_add(1, "fleet-a", PSK_A);
	hu_sysctl_set("auth", 2);
	ok0 = hu_proc("hs_auth_ok");
	fd = psk_connect(c);
	hu_expect_rdma(fd, "same key, auth required", &vi);
	vt_assert(vi.vi_flags & VISOCK_INFO_F_AUTH,
		  "RDMA, but the connection is not marked authenticated");
	vt_diag("hs_auth_ok %lld -> %lld", ok0, hu_proc("hs_auth_ok"));
	vt_assert(hu_proc("hs_auth_ok") >= ok0 + 1,
		  "hs_auth_ok did not count the handshake");
	st = psk_ctl_as(0, out, sizeof(out), "--json sockets --ino %lu",
			hu_sock_ino(fd));
	vt_assert(st == 0 && strstr(out, "\"auth\":true"),
		  "visockctl sockets does not show the authentication: %.300s",
		  out);
	vt_sync(c, "checked");
	close(fd);
}

static void psk_mismatch(struct vt_ctx *c)
{
	long long failed0;
	int fd;

	hu_need_rdma(c);
	psk_clear();
	psk_add(1, "fleet", vt_is_client(c) ? PSK_A : PSK_B);
	hu_sysctl_set("auth", 1);
	failed0 = hu_proc("hs_auth_failed");
	fd = psk_connect(c);
	psk_expect_fallback(fd, VISOCK_FB_AUTH, vt_is_client(c) ?
			    "client, other key" : "server, other key");
	if (!vt_is_client(c))
		vt_assert(hu_proc("hs_auth_failed") >= failed0 + 1,
			  "hs_auth_failed did not count the REQ");
	vt_sync(c, "checked");
	close(fd);
}

static void psk_missing(struct vt_ctx *c)
{
	long long missing0;
	int fd;

	hu_need_rdma(c);
	psk_clear();
	if (vt_is_client(c)) {
		hu_sysctl_set("auth", 0);
	} else {
		psk_add(1, "fleet-a", PSK_A);
		hu_sysctl_set("auth", 2);
	}
	missing0 = hu_proc("hs_auth_missing");
	fd = psk_connect(c);
	psk_expect_fallback(fd, VISOCK_FB_AUTH_MISSING, vt_is_client(c) ?
			    "client without a key" : "server requiring one");
	if (!vt_is_client(c))
		vt_assert(hu_proc("hs_auth_missing") >= missing0 + 1,
			  "hs_auth_missing did not count the REQ");
	vt_sync(c, "checked");
	close(fd);
}

/* ---- negotiating a transform ---- */

/*
 * xform_negotiate   same key on both, auth 1; for each pair of
 *                   net.visock.transform settings (client, server) one
 *                   connection: both ends report the transform the
 *                   server must choose in vi_xform, and visockctl
 *                   sockets names it
 * xform_no_psk      the client has no key (auth 0), both ask for
 *                   gcm-aes-128: RDMA without a transform on both ends
 */
static const struct {
	int client, server, want;
} xform_cases[] = {
	{ 1, 1, 1 }, { 2, 2, 2 }, { 3, 3, 3 }, { 4, 4, 4 }, { 5, 5, 5 },
	/* the server's choice wins when the client offered it */
	{ 3, 1, 1 },
	/* an integrity-only client also offers the AEADs */
	{ 4, 2, 2 },
	/* an AEAD client never offers integrity only */
	{ 1, 4, 1 },
	/* either side off: none */
	{ 1, 0, 0 }, { 0, 1, 0 },
	/* compressing pairs, and their AEAD without compression */
	{ 6, 6, 6 }, { 7, 7, 7 }, { 6, 7, 7 }, { 6, 1, 1 },
	/* compression only for a connection that asks for it */
	{ 1, 6, 1 },
	/* compression without encryption, still authenticated */
	{ 8, 8, 8 }, { 9, 9, 9 },
	/* it offers every pair after itself: the server's own wins */
	{ 8, 6, 6 },
	/* it never stands in for an AEAD, compressing or not */
	{ 6, 8, 6 }, { 8, 1, 1 },
	/* compression with gcm-aes-256 and chacha20-poly1305 */
	{ 10, 10, 10 }, { 11, 11, 11 }, { 12, 12, 12 }, { 13, 13, 13 },
	/* their client also offers the older pairs */
	{ 12, 3, 3 }, { 11, 7, 7 },
};

static const char *const xform_names[] = {
	"none", "gcm-aes-128", "gcm-aes-256", "chacha20-poly1305",
	"gmac-aes-128", "gmac-aes-256", "lz4-gcm-aes-128", "zstd-gcm-aes-128",
	"lz4-gmac-aes-128", "zstd-gmac-aes-128", "lz4-gcm-aes-256",
	"zstd-gcm-aes-256", "lz4-chacha20-poly1305", "zstd-chacha20-poly1305",
};

static void xform_expect(int fd, int want, const char *what)
{
	char out[PSK_OUT], key[64];
	struct visock_info vi;
	int st;

	hu_expect_rdma(fd, what, &vi);
	vt_diag("%s: transform %u (%s expected)", what, vi.vi_xform,
		xform_names[want]);
	vt_assert(vi.vi_xform == (uint32_t)want,
		  "%s: vi_xform %u, expected %d (%s)", what, vi.vi_xform,
		  want, xform_names[want]);
	st = psk_ctl_as(0, out, sizeof(out), "--json sockets --ino %lu",
			hu_sock_ino(fd));
	snprintf(key, sizeof(key), "\"transform\":\"%s\"", xform_names[want]);
	vt_assert(st == 0 && strstr(out, key),
		  "%s: visockctl sockets does not show %s: %.300s", what, key,
		  out);
}

static void xform_negotiate(struct vt_ctx *c)
{
	char what[64];
	unsigned int i;
	int fd;

	hu_need_rdma(c);
	psk_clear();
	psk_add(1, "fleet-a", PSK_A);
	hu_sysctl_set("auth", 1);
	for (i = 0; i < ARRAY_SIZE(xform_cases); i++) {
		hu_sysctl_set("transform", vt_is_client(c) ?
			      xform_cases[i].client : xform_cases[i].server);
		fd = psk_connect(c);
		snprintf(what, sizeof(what), "%s, client %d server %d",
			 vt_is_client(c) ? "client" : "server",
			 xform_cases[i].client, xform_cases[i].server);
		xform_expect(fd, xform_cases[i].want, what);
		vt_sync(c, "checked");
		close(fd);
	}
}

/* The client ends its writing; the server reads the end of the stream. */
static void echo_end(struct vt_ctx *c, int fd, const char *name)
{
	char b;

	if (vt_is_client(c))
		vt_try(shutdown(fd, SHUT_WR), "shutdown");
	else
		vt_assert(read(fd, &b, 1) == 0,
			  "%s: no end of file after the echo", name);
}

/*
 * xform_stream      same key, auth 1, both hosts the same transform, for
 *                   each of the five: 256 KiB echoed (the 64 KiB rings
 *                   wrap several times each way), then the client's
 *                   shutdown(SHUT_WR) reaches the server as end of file;
 *                   both ends say the transform is in use and sealed and
 *                   opened at least 16 records (a record carries at most
 *                   16 KiB)
 */
static void xform_stream(struct vt_ctx *c)
{
	struct visock_info vi;
	int x, fd;

	hu_need_rdma(c);
	psk_clear();
	psk_add(1, "fleet-a", PSK_A);
	hu_sysctl_set("auth", 1);
	for (x = 1; x <= 5; x++) {
		hu_sysctl_set("transform", x);
		fd = psk_connect(c);
		echo_end(c, fd, xform_names[x]);
		hu_expect_rdma(fd, xform_names[x], &vi);
		vt_diag("%s: transform %u, %llu records sealed, %llu opened",
			xform_names[x], vi.vi_xform,
			(unsigned long long)vi.vi_rec_sealed,
			(unsigned long long)vi.vi_rec_opened);
		vt_assert(vi.vi_xform == (uint32_t)x,
			  "%s: vi_xform %u", xform_names[x], vi.vi_xform);
		vt_assert(vi.vi_rec_sealed >= PSK_BYTES / 16384 &&
			  vi.vi_rec_opened >= PSK_BYTES / 16384,
			  "%s: %llu records sealed, %llu opened: the stream did not go through records",
			  xform_names[x],
			  (unsigned long long)vi.vi_rec_sealed,
			  (unsigned long long)vi.vi_rec_opened);
		vt_sync(c, "checked");
		close(fd);
	}
}

/*
 * comp_stream       same key, auth 1, both hosts the same compressing
 *                   transform, for lz4-gcm-aes-128 and zstd-gcm-aes-128:
 *                   512 KiB of text, then 512 KiB of pseudo-random bytes,
 *                   each sent by the client, checked byte by byte by the
 *                   server, sent back and checked by the client; for the
 *                   text every end compressed and decompressed at least 3
 *                   in 4 of the records it sealed and opened for it (at
 *                   least 16 each), for the random bytes none of at least
 *                   32 records each way
 */
#define COMP_BYTES	(512 << 10)

static uint8_t comp_buf[COMP_BYTES];
static uint8_t comp_want[COMP_BYTES];

/* Text that compresses well, different for each @x. */
static void comp_text(uint8_t *p, size_t n, int x)
{
	size_t off = 0;
	unsigned int i = 0;
	char line[96];
	int len;

	while (off < n) {
		len = snprintf(line, sizeof(line),
			       "%08u transform %d: the quick brown fox jumps over the lazy dog\n",
			       i++, x);
		if ((size_t)len > n - off)
			len = n - off;
		memcpy(p + off, line, len);
		off += len;
	}
}

/* Bytes no compressor shrinks: xorshift64*, seeded by @x. */
static void comp_random(uint8_t *p, size_t n, int x)
{
	uint64_t v = 0x9e3779b97f4a7c15ULL ^ (uint64_t)x;
	size_t i;

	for (i = 0; i < n; i++) {
		v ^= v >> 12;
		v ^= v << 25;
		v ^= v >> 27;
		p[i] = (uint8_t)((v * 0x2545f4914f6cdd1dULL) >> 56);
	}
}

/* Client sends, server checks and sends back, client checks. */
static void comp_echo(struct vt_ctx *c, int fd, int x, const char *kind)
{
	size_t i;

	if (vt_is_client(c))
		su_write_all(fd, comp_want, COMP_BYTES);
	memset(comp_buf, 0, COMP_BYTES);
	su_read_all(fd, comp_buf, COMP_BYTES);
	for (i = 0; i < COMP_BYTES; i++)
		if (comp_buf[i] != comp_want[i])
			vt_fail("%s, %s: byte %zu of the %s is %#x, expected %#x",
				xform_names[x], kind, i,
				vt_is_client(c) ? "echo" : "stream",
				comp_buf[i], comp_want[i]);
	if (!vt_is_client(c))
		su_write_all(fd, comp_buf, COMP_BYTES);
}

/* One phase: @kind's bytes both ways, then this end's record counts. */
static void comp_phase(struct vt_ctx *c, int fd, int x, bool text)
{
	const char *kind = text ? "text" : "random bytes";
	unsigned long long sealed, opened, comp, decomp;
	struct visock_info a, b;

	if (text)
		comp_text(comp_want, COMP_BYTES, x);
	else
		comp_random(comp_want, COMP_BYTES, x);
	hu_get_info(fd, &a);
	comp_echo(c, fd, x, kind);
	vt_sync(c, text ? "text echoed" : "random echoed");
	hu_get_info(fd, &b);
	sealed = b.vi_rec_sealed - a.vi_rec_sealed;
	opened = b.vi_rec_opened - a.vi_rec_opened;
	comp = b.vi_rec_compressed - a.vi_rec_compressed;
	decomp = b.vi_rec_decompressed - a.vi_rec_decompressed;
	vt_diag("%s, %s: %llu records sealed, %llu of them compressed; %llu opened, %llu decompressed",
		xform_names[x], kind, sealed, comp, opened, decomp);
	if (text) {
		vt_assert(sealed >= 16 && opened >= 16 &&
			  comp * 4 >= sealed * 3 && decomp * 4 >= opened * 3,
			  "%s, text: %llu of %llu records sealed compressed, %llu of %llu opened decompressed",
			  xform_names[x], comp, sealed, decomp, opened);
	} else {
		vt_assert(sealed >= COMP_BYTES / 16384 &&
			  opened >= COMP_BYTES / 16384 && !comp && !decomp,
			  "%s, random bytes: %llu of %llu records sealed compressed, %llu of %llu opened decompressed (expected none of at least %d)",
			  xform_names[x], comp, sealed, decomp, opened,
			  COMP_BYTES / 16384);
	}
}

/* Both phases over a connection of each pair of @pairs in turn. */
static void comp_stream_pairs(struct vt_ctx *c, const int *pairs,
			      unsigned int n)
{
	struct visock_info vi;
	unsigned int i;
	int x, fd;

	hu_need_rdma(c);
	psk_clear();
	psk_add(1, "fleet-a", PSK_A);
	hu_sysctl_set("auth", 1);
	for (i = 0; i < n; i++) {
		x = pairs[i];
		hu_sysctl_set("transform", x);
		fd = psk_connect(c);
		hu_expect_rdma(fd, xform_names[x], &vi);
		vt_assert(vi.vi_xform == (uint32_t)x, "%s: vi_xform %u",
			  xform_names[x], vi.vi_xform);
		comp_phase(c, fd, x, true);
		comp_phase(c, fd, x, false);
		vt_sync(c, "checked");
		close(fd);
	}
}

static void comp_stream(struct vt_ctx *c)
{
	static const int pairs[] = {
		VISOCK_XFORM_LZ4_AES128_GCM, VISOCK_XFORM_ZSTD_AES128_GCM,
	};

	comp_stream_pairs(c, pairs, ARRAY_SIZE(pairs));
}

/*
 * comp_stream_gmac     comp_stream for lz4-gmac-aes-128 and
 *                      zstd-gmac-aes-128 (compressed, authenticated,
 *                      not encrypted)
 * comp_stream_aes256   the same for lz4-gcm-aes-256 and zstd-gcm-aes-256
 * comp_stream_chacha   the same for lz4-chacha20-poly1305 and
 *                      zstd-chacha20-poly1305
 */
static void comp_stream_gmac(struct vt_ctx *c)
{
	static const int pairs[] = {
		VISOCK_XFORM_LZ4_AES128_GMAC, VISOCK_XFORM_ZSTD_AES128_GMAC,
	};

	comp_stream_pairs(c, pairs, ARRAY_SIZE(pairs));
}

static void comp_stream_aes256(struct vt_ctx *c)
{
	static const int pairs[] = {
		VISOCK_XFORM_LZ4_AES256_GCM, VISOCK_XFORM_ZSTD_AES256_GCM,
	};

	comp_stream_pairs(c, pairs, ARRAY_SIZE(pairs));
}

static void comp_stream_chacha(struct vt_ctx *c)
{
	static const int pairs[] = {
		VISOCK_XFORM_LZ4_CHACHA20_POLY1305,
		VISOCK_XFORM_ZSTD_CHACHA20_POLY1305,
	};

	comp_stream_pairs(c, pairs, ARRAY_SIZE(pairs));
}

/*
 * xform_rekey       same key, auth 1, debugfs rekey_records 64 on both
 *                   hosts, for each of the five transforms: 4 MiB echoed
 *                   and checked byte by byte, then end of file; each end
 *                   changed the key of each direction exactly as often as
 *                   its record counts require ((records - 1) / 64), at
 *                   least 3 times, and its count of received key changes
 *                   is the peer's count of sent ones
 */
#define REKEY_RECORDS	64
#define REKEY_BYTES	(4 << 20)

static uint8_t rekey_buf[REKEY_BYTES];

static uint8_t rekey_byte(uint32_t i, int x)
{
	return (uint8_t)(i * 131 + (i >> 13) + x);
}

/* Key changes @records records need with a change every REKEY_RECORDS. */
static unsigned long long rekey_want(unsigned long long records)
{
	return records ? (records - 1) / REKEY_RECORDS : 0;
}

static void rekey_echo(struct vt_ctx *c, int fd, int x)
{
	uint32_t i;

	if (vt_is_client(c)) {
		for (i = 0; i < REKEY_BYTES; i++)
			rekey_buf[i] = rekey_byte(i, x);
		su_write_all(fd, rekey_buf, REKEY_BYTES);
		memset(rekey_buf, 0, REKEY_BYTES);
		su_read_all(fd, rekey_buf, REKEY_BYTES);
	} else {
		su_read_all(fd, rekey_buf, REKEY_BYTES);
	}
	for (i = 0; i < REKEY_BYTES; i++)
		if (rekey_buf[i] != rekey_byte(i, x))
			vt_fail("%s: byte %u of the %s is %#x, expected %#x",
				xform_names[x], i,
				vt_is_client(c) ? "echo" : "stream",
				rekey_buf[i], rekey_byte(i, x));
	if (!vt_is_client(c))
		su_write_all(fd, rekey_buf, REKEY_BYTES);
}

static void xform_rekey(struct vt_ctx *c)
{
	unsigned long long tx, rx, peer_tx, peer_rx;
	struct visock_info vi;
	int x, fd;

	hu_need_rdma(c);
	vt_assert(hu_debugfs_ready("rekey_records"),
		  "debugfs visock/rekey_records is missing: no key updates");
	hu_set_ll(HU_DEBUGFS_DIR "rekey_records", REKEY_RECORDS);
	psk_clear();
	psk_add(1, "fleet-a", PSK_A);
	hu_sysctl_set("auth", 1);
	for (x = 1; x <= 5; x++) {
		hu_sysctl_set("transform", x);
		vt_sync(c, "keys set");
		fd = su_pair(c);
		rekey_echo(c, fd, x);
		echo_end(c, fd, xform_names[x]);
		hu_expect_rdma(fd, xform_names[x], &vi);
		tx = vi.vi_rec_tx_rekeys;
		rx = vi.vi_rec_rx_rekeys;
		vt_diag("%s: records %llu sealed, %llu opened; keys %llu/%llu",
			xform_names[x], (unsigned long long)vi.vi_rec_sealed,
			(unsigned long long)vi.vi_rec_opened, tx, rx);
		vt_assert(vi.vi_xform == (uint32_t)x, "%s: vi_xform %u",
			  xform_names[x], vi.vi_xform);
		vt_assert(vi.vi_rec_sealed >= REKEY_BYTES / 16384 &&
			  vi.vi_rec_opened >= REKEY_BYTES / 16384,
			  "%s: %llu records sealed, %llu opened",
			  xform_names[x],
			  (unsigned long long)vi.vi_rec_sealed,
			  (unsigned long long)vi.vi_rec_opened);
		vt_assert(tx == rekey_want(vi.vi_rec_sealed),
			  "%s: %llu key changes sent for %llu records, expected %llu",
			  xform_names[x], tx,
			  (unsigned long long)vi.vi_rec_sealed,
			  rekey_want(vi.vi_rec_sealed));
		vt_assert(rx == rekey_want(vi.vi_rec_opened),
			  "%s: %llu key changes received for %llu records, expected %llu",
			  xform_names[x], rx,
			  (unsigned long long)vi.vi_rec_opened,
			  rekey_want(vi.vi_rec_opened));
		vt_assert(tx >= 3 && rx >= 3,
			  "%s: %llu key changes sent, %llu received: expected 3 or more",
			  xform_names[x], tx, rx);
		vt_send_num(c, "TX", tx);
		vt_send_num(c, "RX", rx);
		peer_tx = vt_recv_num(c, "TX");
		peer_rx = vt_recv_num(c, "RX");
		vt_assert(rx == peer_tx && tx == peer_rx,
			  "%s: received %llu key changes, the peer sent %llu; sent %llu, the peer received %llu",
			  xform_names[x], rx, peer_tx, tx, peer_rx);
		vt_sync(c, "checked");
		close(fd);
	}
}

/*
 * xform_rekey_late  same key, auth 1, gcm-aes-128; rekey_records 64 on
 *                   the server, 0 (the pair's 2^24) on the client: the
 *                   client's record 64 comes without the key change the
 *                   server requires.  The server resets the connection:
 *                   its reader gets ECONNRESET after exactly the bytes
 *                   of records 0 to 63, all intact (vi_rec_opened 64, no
 *                   key change), hs_auth_failed counts it, and the client
 *                   gets an error, never a clean end
 */
static void xform_rekey_late(struct vt_ctx *c)
{
	long long failed0 = hu_proc("hs_auth_failed");
	struct visock_info vi;
	size_t got = 0;
	ssize_t n;
	uint32_t i;
	int fd;

	hu_need_rdma(c);
	vt_assert(hu_debugfs_ready("rekey_records"),
		  "debugfs visock/rekey_records is missing: no key updates");
	hu_set_ll(HU_DEBUGFS_DIR "rekey_records",
		  vt_is_client(c) ? 0 : REKEY_RECORDS);
	psk_clear();
	psk_add(1, "fleet-a", PSK_A);
	hu_sysctl_set("auth", 1);
	hu_sysctl_set("transform", 1);
	vt_sync(c, "keys set");
	fd = su_pair(c);
	if (vt_is_client(c)) {
		for (i = 0; i < REKEY_BYTES; i++)
			rekey_buf[i] = rekey_byte(i, 0);
		while (got < REKEY_BYTES) {
			n = send(fd, rekey_buf + got, REKEY_BYTES - got,
				 MSG_NOSIGNAL);
			if (n <= 0)
				break;
			got += n;
		}
		if (got == REKEY_BYTES) {
			n = read(fd, rekey_buf, 1);
			vt_assert(n < 0, "the client read %zd, expected an error",
				  n);
		}
		vt_diag("client: %zu bytes sent, then %s", got,
			strerror(errno));
		vt_assert(errno == ECONNRESET || errno == EPIPE,
			  "the client's connection ended with %s, expected a reset",
			  strerror(errno));
	} else {
		for (;;) {
			n = read(fd, rekey_buf + got, REKEY_BYTES - got);
			if (n <= 0)
				break;
			got += n;
		}
		vt_assert(n < 0 && errno == ECONNRESET,
			  "the server's read ended with %zd (%s), expected ECONNRESET",
			  n, n < 0 ? strerror(errno) : "end of file");
		for (i = 0; i < got; i++)
			if (rekey_buf[i] != rekey_byte(i, 0))
				vt_fail("byte %u is %#x, expected %#x", i,
					rekey_buf[i], rekey_byte(i, 0));
		hu_get_info(fd, &vi);
		vt_diag("server: %zu bytes read, %llu records opened, %llu key changes",
			got, (unsigned long long)vi.vi_rec_opened,
			(unsigned long long)vi.vi_rec_rx_rekeys);
		vt_assert(vi.vi_rec_opened == REKEY_RECORDS &&
			  !vi.vi_rec_rx_rekeys,
			  "%llu records opened, %llu key changes: expected %d and 0",
			  (unsigned long long)vi.vi_rec_opened,
			  (unsigned long long)vi.vi_rec_rx_rekeys,
			  REKEY_RECORDS);
		vt_assert(got > 0 && got < REKEY_BYTES,
			  "%zu bytes read of %d", got, REKEY_BYTES);
		vt_assert(hu_proc("hs_auth_failed") >= failed0 + 1,
			  "hs_auth_failed did not count the record");
	}
	vt_sync(c, "checked");
	close(fd);
}

/*
 * forged_write      an attacker on the path of a connection that saw its
 *                   ring's key in the handshake and its WRITEs on the
 *                   wire: same key, auth 1, both hosts transform @xform.
 *                   A bystander connection and the victim are set up on
 *                   the same queue pair; the client sends FW_MSG bytes
 *                   on the victim, and its forge_write hook then posts
 *                   one RDMA WRITE WITH IMMEDIATE of FW_LEN bytes of the
 *                   marker (a record of them with a transform: the next
 *                   sequence number, an all-zero tag) through the
 *                   victim's queue pair with the server's ring key, to
 *                   where the next byte lands.  The server's device must
 *                   take it (completion status 0); the server reads only
 *                   then, with both in its ring.  With a transform the
 *                   server's reader gets the FW_MSG bytes intact, then
 *                   ECONNRESET, never a byte of the marker;
 *                   rec_auth_failed counts exactly one record on the
 *                   server (however often it is read) and none on the
 *                   client, in /proc and in the generic netlink
 *                   statistics (visockctl stats) alike, and the client's end of the victim is reset
 *                   too.  Without one the reader gets the FW_MSG bytes
 *                   followed by the marker: what the transform is for.
 *                   The bystander echoes 256 KiB on RDMA afterwards
 *                   either way.
 */
#define FW_MSG		4096	/* the victim's bytes before the forgery */
#define FW_LEN		256	/* forged bytes: the marker, repeated */
#define FW_MARK		"FORGED!\n"
#define FW_WAIT_MS	10000	/* something the peer owes */

static uint8_t fw_byte(uint32_t i)
{
	/* Never the marker's first byte ('F'): it cannot appear by chance. */
	return (uint8_t)('a' + i % 26);
}

static long long fw_hook(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), HU_DEBUGFS_DIR "%s", name);
	return hu_read_ll(path);
}

/* Client: arm the hook on @fd, send FW_MSG bytes, wait for the WRITE. */
static void fw_forge(int fd)
{
	static uint8_t msg[FW_MSG];
	long long posted0, done0, posted, done, status, armed;
	struct visock_info vi;
	uint32_t i;

	for (i = 0; i < FW_MSG; i++)
		msg[i] = fw_byte(i);
	hu_get_info(fd, &vi);
	posted0 = fw_hook("forge_posted");
	done0 = fw_hook("forge_done");
	hu_set_ll(HU_DEBUGFS_DIR "forge_token", vi.vi_local_token);
	hu_set_ll(HU_DEBUGFS_DIR "forge_write", FW_LEN);
	su_write_all(fd, msg, FW_MSG);
	for (i = 0; i < FW_WAIT_MS / 5; i++) {
		if (fw_hook("forge_done") > done0)
			break;
		usleep(5000);
	}
	armed = fw_hook("forge_write");
	posted = fw_hook("forge_posted");
	done = fw_hook("forge_done");
	status = fw_hook("forge_status");
	vt_diag("forged WRITE: posted +%lld, done +%lld, status %lld, still armed %lld",
		posted - posted0, done - done0, status, armed);
	vt_assert(!armed && posted == posted0 + 1,
		  "the forged WRITE was not posted (forge_write %lld, forge_posted +%lld)",
		  armed, posted - posted0);
	vt_assert(done == done0 + 1 && status == 0,
		  "the forged WRITE did not complete (done +%lld, status %lld): the server's device refused it",
		  done - done0, status);
}

/*
 * Server: read @fd until FW_MSG + FW_LEN bytes, the end or an error into
 * @buf; the bytes read, with *@err the errno of a failed read (0 if
 * none).
 */
static size_t fw_read(int fd, uint8_t *buf, int *err)
{
	size_t got = 0;
	ssize_t n;

	*err = 0;
	while (got < FW_MSG + FW_LEN) {
		if (!su_poll(fd, POLLIN, FW_WAIT_MS * vt_time_scale)) {
			*err = ETIMEDOUT;
			break;
		}
		n = recv(fd, buf + got, FW_MSG + FW_LEN - got, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			*err = errno;
		if (n <= 0)
			break;
		got += n;
	}
	return got;
}

/* rec_auth_failed as the generic netlink statistics give it. */
static long long fw_ctl_failed(void)
{
	static char out[16384];
	const char *p;
	pid_t pid;
	int st;

	st = run_visockctl("stats", out, sizeof(out), &pid);
	vt_assert(st == 0, "visockctl stats: exit %d: %.300s", st, out);
	p = strstr(out, "\"rec_auth_failed\":");
	vt_assert(p, "visockctl stats has no rec_auth_failed: %.300s", out);
	return strtoll(p + strlen("\"rec_auth_failed\":"), NULL, 10);
}

static void forged_write(struct vt_ctx *c, int xform)
{
	static uint8_t buf[FW_MSG + FW_LEN];
	struct visock_info vi, vi2;
	long long failed0, failed, ctl0, ctl;
	size_t got, i;
	int fd, fd2, err;
	char ch;

	hu_need_rdma(c);
	if (vt_is_client(c))
		vt_assert(hu_debugfs_ready("forge_write"),
			  "no forge_write test hook in %s", HU_DEBUGFS_DIR);
	psk_clear();
	psk_add(1, "fleet-a", PSK_A);
	hu_sysctl_set("auth", 1);
	hu_sysctl_set("transform", xform);
	vt_sync(c, "keys set");
	fd2 = su_pair(c);
	fd = su_pair(c);
	xform_expect(fd2, xform, "the bystander");
	xform_expect(fd, xform, "the victim");
	hu_get_info(fd, &vi);
	hu_get_info(fd2, &vi2);
	vt_assert(vi.vi_local_qpn == vi2.vi_local_qpn,
		  "the victim is on QP %u, the bystander on QP %u",
		  vi.vi_local_qpn, vi2.vi_local_qpn);
	failed0 = hu_proc("rec_auth_failed");
	ctl0 = fw_ctl_failed();
	vt_sync(c, "pair up");

	if (vt_is_client(c)) {
		fw_forge(fd);
		vt_sync(c, "forged");
	} else {
		/* Both records in the ring before the first read. */
		vt_sync(c, "forged");
		got = fw_read(fd, buf, &err);
		vt_diag("%s: the server read %zu bytes, then %s",
			xform_names[xform], got,
			err ? strerror(err) : "nothing more");
		for (i = 0; i < got && i < FW_MSG; i++)
			vt_assert(buf[i] == fw_byte(i),
				  "byte %zu is %#x, expected %#x", i, buf[i],
				  fw_byte(i));
		if (xform) {
			vt_assert(got == FW_MSG && err == ECONNRESET,
				  "%s: %zu bytes read, then %s: expected %d, then ECONNRESET",
				  xform_names[xform], got,
				  err ? strerror(err) : "no error", FW_MSG);
			vt_assert(!memmem(buf, got, FW_MARK, strlen(FW_MARK)),
				  "a forged byte was delivered");
		} else {
			vt_assert(got == FW_MSG + FW_LEN,
				  "no transform: %zu bytes read (%s), expected %d with the forged ones",
				  got, err ? strerror(err) : "no error",
				  FW_MSG + FW_LEN);
			for (i = 0; i < FW_LEN; i++)
				vt_assert(buf[FW_MSG + i] ==
					  (uint8_t)FW_MARK[i % strlen(FW_MARK)],
					  "no transform: forged byte %zu is %#x, not the marker",
					  i, buf[FW_MSG + i]);
		}
	}
	failed = xform && !vt_is_client(c) ?
		 hu_proc_wait_ge("rec_auth_failed", failed0 + 1, FW_WAIT_MS) :
		 hu_proc("rec_auth_failed");
	vt_diag("%s: rec_auth_failed +%lld", vt_is_client(c) ? "client" :
		"server", failed - failed0);
	vt_assert(failed == failed0 + (xform && !vt_is_client(c)),
		  "rec_auth_failed +%lld, expected +%d", failed - failed0,
		  xform && !vt_is_client(c));
	ctl = fw_ctl_failed();
	vt_assert(ctl - ctl0 == failed - failed0,
		  "visockctl stats: rec_auth_failed +%lld, /proc +%lld",
		  ctl - ctl0, failed - failed0);
	if (xform && vt_is_client(c)) {
		su_wait(fd, POLLIN, "the victim's reset");
		vt_assert(read(fd, &ch, 1) < 0 && errno == ECONNRESET,
			  "the client's end of the victim did not get ECONNRESET");
	}
	vt_sync(c, "checked");
	close(fd);
	psk_echo(c, fd2);
	xform_expect(fd2, xform, "the bystander after the forgery");
	vt_sync(c, "bystander checked");
	close(fd2);
}

static void forged_write_gcm(struct vt_ctx *c)
{
	forged_write(c, 1);
}

static void forged_write_gmac(struct vt_ctx *c)
{
	forged_write(c, 4);
}

static void forged_write_plain(struct vt_ctx *c)
{
	forged_write(c, 0);
}

static void xform_no_psk(struct vt_ctx *c)
{
	struct visock_info vi;
	int fd;

	hu_need_rdma(c);
	psk_clear();
	if (vt_is_client(c)) {
		hu_sysctl_set("auth", 0);
	} else {
		psk_add(1, "fleet-a", PSK_A);
		hu_sysctl_set("auth", 1);
	}
	hu_sysctl_set("transform", 1);
	fd = psk_connect(c);
	xform_expect(fd, 0, vt_is_client(c) ? "client without a key" :
			    "server with a key");
	hu_get_info(fd, &vi);
	vt_assert(!(vi.vi_flags & VISOCK_INFO_F_AUTH),
		  "a handshake without a key on one side is authenticated");
	vt_sync(c, "checked");
	close(fd);
}

/* ---- choosing the transform per socket and per destination ---- */

/*
 * xform_sockopt     same key, auth 1, net.visock.transform 0 on both
 *                   hosts: the pair comes from VISOCK_TRANSFORM only.
 *                   (a) both sockets ask for chacha20-poly1305 (the
 *                   server on its listener, which its connection
 *                   inherits); (b) the client's socket asks for
 *                   gcm-aes-256 and the server takes it with its
 *                   sysctl at 2.  Each: RDMA on both ends with that
 *                   vi_xform, 256 KiB echoed intact through records
 * xform_require     client: key, auth 1, a policy rule "transform
 *                   gcm-aes-256 require" for the server's address.
 *                   Against (a) a server without a key (auth 0) and
 *                   (b) a server with the key and no transform: TCP on
 *                   both ends with reason XFORM_REQUIRED (21), counted
 *                   in fallback_xform_required, 256 KiB intact; (c)
 *                   the same rule without require against server (b):
 *                   RDMA without a transform
 * xform_require_server  server: key, auth 1, net.visock.transform 1
 *                   (gcm-aes-128) and transform_require 1.  Clients
 *                   (a) with the key, asking for no transform, (b)
 *                   without authentication (auth 0): TCP on both ends
 *                   with reason XFORM_REQUIRED, counted on the server,
 *                   256 KiB intact; (c) a client asking for gcm-aes-128:
 *                   RDMA with it on both ends; (d) require back to 0
 *                   with client (a): RDMA without a transform
 */
#define XF_CHACHA	3
#define XF_GCM256	2

/* One connection; VISOCK_TRANSFORM @opt (0: not set) before connect() or listen(). */
static int xform_opt_pair(struct vt_ctx *c, int opt)
{
	struct sockaddr_storage ss;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len;
	int fd, lfd;

	vt_sync(c, "keys set");
	if (vt_is_client(c)) {
		len = su_peer_addr(c, false, su_recv_port(c), &ss);
		fd = su_socket(c->family, false, SOCK_CLOEXEC);
		if (opt)
			su_setint_at(fd, SOL_VISOCK, VISOCK_TRANSFORM,
				     "VISOCK_TRANSFORM", opt);
		vt_try(connect(fd, (struct sockaddr *)&ss, len), "connect");
		return fd;
	}
	lfd = su_socket(c->family, false, SOCK_CLOEXEC);
	if (opt)
		su_setint_at(lfd, SOL_VISOCK, VISOCK_TRANSFORM,
			     "VISOCK_TRANSFORM", opt);
	sin.sin_addr.s_addr = htonl(INADDR_ANY);
	vt_try(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)), "bind");
	vt_try(listen(lfd, 4), "listen");
	su_send_port(c, lfd);
	fd = su_accept(lfd, SOCK_CLOEXEC);
	close(lfd);
	return fd;
}

static void xform_opt_expect(int fd, int want, const char *what)
{
	struct visock_info vi;

	xform_expect(fd, want, what);
	hu_get_info(fd, &vi);
	vt_diag("%s: %llu records sealed, %llu opened", what,
		(unsigned long long)vi.vi_rec_sealed,
		(unsigned long long)vi.vi_rec_opened);
	vt_assert(vi.vi_rec_sealed >= PSK_BYTES / 16384 &&
		  vi.vi_rec_opened >= PSK_BYTES / 16384,
		  "%s: %llu records sealed, %llu opened", what,
		  (unsigned long long)vi.vi_rec_sealed,
		  (unsigned long long)vi.vi_rec_opened);
}

static void xform_sockopt(struct vt_ctx *c)
{
	const char *side = vt_is_client(c) ? "client" : "server";
	char what[64];
	int fd;

	hu_need_rdma(c);
	psk_clear();
	psk_add(1, "fleet-a", PSK_A);
	hu_sysctl_set("auth", 1);
	hu_sysctl_set("transform", 0);

	/* (a) both sockets ask, the server on its listener */
	fd = xform_opt_pair(c, XF_CHACHA);
	psk_echo(c, fd);
	snprintf(what, sizeof(what), "%s, both sockets chacha20-poly1305",
		 side);
	xform_opt_expect(fd, XF_CHACHA, what);
	vt_assert(su_getint_at(fd, SOL_VISOCK, VISOCK_TRANSFORM,
			       "VISOCK_TRANSFORM") == XF_CHACHA,
		  "%s: VISOCK_TRANSFORM not %d (set, or inherited)", what,
		  XF_CHACHA);
	vt_sync(c, "checked a");
	close(fd);

	/* (b) only the client's socket asks; the server's sysctl agrees */
	if (!vt_is_client(c))
		hu_sysctl_set("transform", XF_GCM256);
	fd = xform_opt_pair(c, vt_is_client(c) ? XF_GCM256 : 0);
	psk_echo(c, fd);
	snprintf(what, sizeof(what), "%s, client socket gcm-aes-256", side);
	xform_opt_expect(fd, XF_GCM256, what);
	vt_sync(c, "checked b");
	close(fd);
}

/* Client: one policy rule for the server's address, or none (@rule NULL). */
static void xform_policy(struct vt_ctx *c, const char *rule)
{
	char out[PSK_OUT];
	int st;

	psk_ctl_as(0, out, sizeof(out), "policy flush");
	if (!rule)
		return;
	st = psk_ctl_as(0, out, sizeof(out), "policy add allow to %s/32 %s",
			c->peer, rule);
	vt_assert(st == 0, "visockctl policy add ... %s: exit %d: %.300s",
		  rule, st, out);
	st = psk_ctl_as(0, out, sizeof(out), "policy");
	vt_diag("policy: %.300s", out);
	vt_assert(st == 0 && strstr(out, rule),
		  "visockctl policy does not list '%s': %.300s", rule, out);
}

/*
 * One connection that a required pair keeps on TCP: reason 21 on this
 * end, and counted here.
 */
static void xform_require_round(struct vt_ctx *c, const char *what)
{
	long long fb0 = hu_proc("fallback_xform_required");
	int fd;

	fd = psk_connect(c);
	psk_expect_fallback(fd, VISOCK_FB_XFORM_REQUIRED, what);
	vt_diag("%s: fallback_xform_required %lld -> %lld", what, fb0,
		hu_proc("fallback_xform_required"));
	vt_assert(hu_proc("fallback_xform_required") >= fb0 + 1,
		  "%s: fallback_xform_required did not count", what);
	vt_sync(c, "checked");
	close(fd);
}

static void xform_require(struct vt_ctx *c)
{
	int fd;

	hu_need_rdma(c);
	psk_clear();
	hu_sysctl_set("transform", 0);
	if (vt_is_client(c)) {
		psk_add(1, "fleet-a", PSK_A);
		hu_sysctl_set("auth", 1);
		xform_policy(c, "transform gcm-aes-256 require");
	} else {
		hu_sysctl_set("auth", 0);
	}

	/* (a) a server without a key: it cannot authenticate */
	if (vt_is_client(c))
		xform_require_round(c, "client, server without a key");
	else
		xform_require_round(c, "server without a key");

	/* (b) a server with the key that chooses no transform */
	if (!vt_is_client(c)) {
		psk_add(1, "fleet-a", PSK_A);
		hu_sysctl_set("auth", 1);
	}
	xform_require_round(c, vt_is_client(c) ?
			    "client, server choosing none" :
			    "server choosing none");

	/* (c) the rule without require: RDMA without a transform */
	if (vt_is_client(c))
		xform_policy(c, "transform gcm-aes-256");
	fd = psk_connect(c);
	xform_expect(fd, 0, vt_is_client(c) ? "client, rule without require" :
			    "server, rule without require");
	vt_sync(c, "checked c");
	close(fd);
	if (vt_is_client(c))
		xform_policy(c, NULL);
}

/*
 * xform_require_comp_gmac  server: transform 1 (gcm-aes-128) and
 *                          transform_require 1; client: the rule
 *                          "transform lz4-gmac-aes-128 require", so it
 *                          offers that pair alone: it does not encrypt,
 *                          so it does not meet the server's requirement
 *                          (TCP with XFORM_REQUIRED on both ends); then
 *                          the server requires lz4-gmac-aes-128 and a
 *                          client asks for gcm-aes-128, which protects
 *                          more: RDMA with gcm-aes-128
 */
static void xform_require_comp_gmac(struct vt_ctx *c)
{
	const char *side = vt_is_client(c) ? "client" : "server";
	char what[96];
	int fd;

	hu_need_rdma(c);
	psk_clear();
	psk_add(1, "fleet-a", PSK_A);
	hu_sysctl_set("auth", 1);
	hu_sysctl_set("transform_require", 0);
	if (vt_is_client(c)) {
		hu_sysctl_set("transform", 0);
		xform_policy(c, "transform lz4-gmac-aes-128 require");
	} else {
		hu_sysctl_set("transform", VISOCK_XFORM_AES128_GCM);
		hu_sysctl_set("transform_require", 1);
	}
	snprintf(what, sizeof(what), "%s, lz4-gmac-aes-128 for gcm-aes-128",
		 side);
	xform_require_round(c, what);

	if (vt_is_client(c)) {
		xform_policy(c, NULL);
		hu_sysctl_set("transform", VISOCK_XFORM_AES128_GCM);
	} else {
		hu_sysctl_set("transform", VISOCK_XFORM_LZ4_AES128_GMAC);
	}
	fd = psk_connect(c);
	snprintf(what, sizeof(what), "%s, gcm-aes-128 for lz4-gmac-aes-128",
		 side);
	xform_expect(fd, VISOCK_XFORM_AES128_GCM, what);
	vt_sync(c, "checked b");
	close(fd);
	if (!vt_is_client(c))
		hu_sysctl_set("transform_require", 0);
	hu_sysctl_set("transform", 0);
}

static void xform_require_server(struct vt_ctx *c)
{
	const char *side = vt_is_client(c) ? "client" : "server";
	char what[96];
	int fd;

	hu_need_rdma(c);
	vt_agree(c, hu_sysctl("transform_require") >= 0,
		 "no sysctl net.visock.transform_require");
	psk_clear();
	psk_add(1, "fleet-a", PSK_A);
	hu_sysctl_set("auth", 1);
	if (vt_is_client(c)) {
		hu_sysctl_set("transform", 0);
		hu_sysctl_set("transform_require", 0);
	} else {
		hu_sysctl_set("transform", 1);
		hu_sysctl_set("transform_require", 1);
	}

	/* (a) an authenticated client that asks for no transform */
	snprintf(what, sizeof(what), "%s, client asking for none", side);
	xform_require_round(c, what);

	/* (b) a client that does not authenticate */
	if (vt_is_client(c))
		hu_sysctl_set("auth", 0);
	snprintf(what, sizeof(what), "%s, client without auth", side);
	xform_require_round(c, what);

	/* (c) a client that asks for the server's pair */
	if (vt_is_client(c)) {
		hu_sysctl_set("auth", 1);
		hu_sysctl_set("transform", 1);
	}
	fd = psk_connect(c);
	snprintf(what, sizeof(what), "%s, client asking for gcm-aes-128", side);
	xform_expect(fd, 1, what);
	vt_sync(c, "checked c");
	close(fd);

	/* (d) not required any more: client (a) gets RDMA in the clear */
	if (vt_is_client(c))
		hu_sysctl_set("transform", 0);
	else
		hu_sysctl_set("transform_require", 0);
	fd = psk_connect(c);
	snprintf(what, sizeof(what), "%s, nothing required", side);
	xform_expect(fd, 0, what);
	vt_sync(c, "checked d");
	close(fd);
}

/* ---- the lazy switch, authenticated ---- */

/*
 * psk_lazy_auth       same key, auth 1 then 2: a lazy connection
 *                     switches to RDMA and says it is authenticated
 * psk_lazy_mismatch   auth 2, the server's key replaced after the keeper
 *                     came up: the lazy connection stays on TCP with
 *                     reason AUTH on both ends, bytes intact
 * psk_refuse          auth 3 and other keys: the handshake is reset; a
 *                     lazy switch with the server's key replaced is reset:
 *                     the server reads the client's bytes before the
 *                     SWITCH, then ECONNRESET
 * psk_rotation        keys 1 and 2 on both, the client uses 2, the
 *                     server 1: handshake and lazy switch authenticated
 */
#define PSK_LAZY_L	4096
#define PSK_LAZY_BYTES	(1024 * 1024)
#define PSK_XFER_MS	120000

/*
 * Lazy starts on, a listener made after that, and the keeper connection
 * (a handshake) that brings the QP up.  Returns the keeper.
 */
static int psk_lazy_begin(struct vt_ctx *c, int *lfd, int *port)
{
	struct visock_info vi;
	int keeper;

	hu_write_ll(LAZY_BYTES, PSK_LAZY_L);
	vt_sync(c, "lazy_bytes set");
	if (vt_is_client(c)) {
		*lfd = -1;
		*port = su_recv_port(c);
		keeper = su_connect(c, VT_FAMILY_VISOCK, false, *port);
	} else {
		*lfd = su_listen(VT_FAMILY_VISOCK, false, 16, SOCK_CLOEXEC);
		su_send_port(c, *lfd);
		keeper = su_accept(*lfd, SOCK_CLOEXEC);
	}
	hu_expect_rdma(keeper, "the keeper (handshake)", &vi);
	vt_assert(vi.vi_flags & VISOCK_INFO_F_AUTH,
		  "the keeper's handshake is not authenticated");
	vt_sync(c, "keeper up");
	return keeper;
}

/* The next lazy connection: connected or accepted, still on TCP. */
static int psk_lazy_conn(struct vt_ctx *c, int lfd, int port)
{
	struct visock_info vi;
	int fd;

	fd = vt_is_client(c) ? su_connect(c, VT_FAMILY_VISOCK, false, port) :
			       su_accept(lfd, SOCK_CLOEXEC);
	hu_get_info(fd, &vi);
	vt_assert((vi.vi_flags & VISOCK_INFO_F_LAZY) &&
		  vi.vi_mode == VISOCK_MODE_TCP,
		  "not a lazy start (flags %#x, mode %u)", vi.vi_flags,
		  vi.vi_mode);
	/* Either side may start the switch once it writes: both looked. */
	vt_sync(c, "lazy connection up");
	return fd;
}

/* The server's key 1 replaced by another secret under the same id. */
static void psk_server_rekey(struct vt_ctx *c)
{
	if (!vt_is_client(c)) {
		psk_clear();
		psk_add(1, "fleet", PSK_B);
	}
	vt_sync(c, "server rekeyed");
}

/* A lazy connection moves PSK_LAZY_BYTES each way and is authenticated. */
static void psk_lazy_expect_auth(struct vt_ctx *c, int lfd, int port,
				 const char *what)
{
	long long ok0 = hu_proc("hs_auth_ok");
	char out[PSK_OUT];
	struct visock_info vi;
	int fd, st;

	fd = psk_lazy_conn(c, lfd, port);
	su_xfer(&fd, 1, PSK_LAZY_BYTES, PSK_XFER_MS);
	hu_get_info(fd, &vi);
	vt_diag("%s: mode %u, flags %#x, reason %s, hs_auth_ok +%lld", what,
		vi.vi_mode, vi.vi_flags, hu_fb_name(vi.vi_fallback_reason),
		hu_proc("hs_auth_ok") - ok0);
	vt_assert(vi.vi_mode == VISOCK_MODE_RDMA &&
		  (vi.vi_flags & VISOCK_INFO_F_LAZY) &&
		  (vi.vi_flags & VISOCK_INFO_F_AUTH),
		  "%s: mode %u flags %#x reason %s, expected a switched, authenticated connection",
		  what, vi.vi_mode, vi.vi_flags,
		  hu_fb_name(vi.vi_fallback_reason));
	vt_assert(hu_proc("hs_auth_ok") >= ok0 + 1,
		  "%s: hs_auth_ok did not count the switch", what);
	st = psk_ctl_as(0, out, sizeof(out), "--json sockets --ino %lu",
			hu_sock_ino(fd));
	vt_assert(st == 0 && strstr(out, "\"auth\":true"),
		  "%s: visockctl sockets does not show the authentication: %.300s",
		  what, out);
	vt_sync(c, "switch checked");
	close(fd);
}

static void psk_lazy_auth(struct vt_ctx *c)
{
	int lfd, port, keeper;

	hu_need_rdma(c);
	psk_clear();
	psk_add(1, "fleet-a", PSK_A);
	hu_sysctl_set("auth", 1);
	keeper = psk_lazy_begin(c, &lfd, &port);
	psk_lazy_expect_auth(c, lfd, port, "auth 1");
	hu_sysctl_set("auth", 2);
	vt_sync(c, "auth 2");
	psk_lazy_expect_auth(c, lfd, port, "auth 2");
	close(keeper);
	if (lfd >= 0)
		close(lfd);
}

/* What the client writes before the transfer: twice the threshold. */
static uint8_t psk_first[2 * PSK_LAZY_L];
static const uint8_t psk_first_want[2 * PSK_LAZY_L];

static void psk_lazy_mismatch(struct vt_ctx *c)
{
	long long failed0, declined0;
	int lfd, port, keeper, fd;

	hu_need_rdma(c);
	psk_clear();
	psk_add(1, "fleet", PSK_A);
	hu_sysctl_set("auth", 2);
	keeper = psk_lazy_begin(c, &lfd, &port);
	psk_server_rekey(c);
	failed0 = hu_proc("hs_auth_failed");
	declined0 = hu_proc("lazy_switch_declined");
	fd = psk_lazy_conn(c, lfd, port);
	/* The client's bytes reach L first: the server is the responder. */
	if (vt_is_client(c)) {
		su_write_all(fd, psk_first, sizeof(psk_first));
	} else {
		su_read_all(fd, psk_first, sizeof(psk_first));
		vt_assert(!memcmp(psk_first, psk_first_want, sizeof(psk_first)),
			  "the first %zu bytes changed", sizeof(psk_first));
	}
	su_xfer(&fd, 1, PSK_LAZY_BYTES, PSK_XFER_MS);
	psk_expect_fallback(fd, VISOCK_FB_AUTH, vt_is_client(c) ?
			    "client, other key" : "server, other key");
	vt_diag("hs_auth_failed +%lld, lazy_switch_declined +%lld",
		hu_proc("hs_auth_failed") - failed0,
		hu_proc("lazy_switch_declined") - declined0);
	vt_assert(hu_proc("lazy_switch_declined") >= declined0 + 1,
		  "lazy_switch_declined did not count the switch");
	if (!vt_is_client(c))
		vt_assert(hu_proc("hs_auth_failed") >= failed0 + 1,
			  "hs_auth_failed did not count the SWITCH");
	vt_sync(c, "checked");
	close(fd);
	close(keeper);
	if (lfd >= 0)
		close(lfd);
}

/* Read until the connection ends; its errno, 0 for an orderly end. */
static int psk_read_to_end(int fd, size_t *got)
{
	char buf[16384];
	ssize_t n;

	*got = 0;
	for (;;) {
		n = su_read_within(fd, buf, sizeof(buf), 30000);
		if (n > 0) {
			*got += n;
			continue;
		}
		return n < 0 ? errno : 0;
	}
}

/* Write @len bytes or until an error; the errno or 0. */
static int psk_write_some(int fd, size_t len)
{
	static char buf[16384];
	ssize_t n;

	while (len) {
		n = send(fd, buf, len < sizeof(buf) ? len : sizeof(buf),
			 MSG_NOSIGNAL);
		if (n < 0)
			return errno;
		len -= n;
	}
	return 0;
}

static bool psk_reset_err(int err)
{
	return err == ECONNRESET || err == ECONNREFUSED || err == EPIPE ||
	       err == ECONNABORTED;
}

/*
 * The client of a connection that must be reset: it writes
 * PSK_LAZY_BYTES and reads; it must see an error, not the end or all
 * the bytes.
 */
static void psk_expect_reset(int fd, const char *what)
{
	int werr, rerr;
	size_t got;

	werr = psk_write_some(fd, PSK_LAZY_BYTES);
	rerr = psk_read_to_end(fd, &got);
	vt_diag("%s: write %s, read %s after %zu bytes", what,
		werr ? strerror(werr) : "ok", rerr ? strerror(rerr) : "EOF",
		got);
	vt_assert(psk_reset_err(rerr) || psk_reset_err(werr),
		  "%s: the connection was not reset (write %s, read %s after %zu bytes)",
		  what, werr ? strerror(werr) : "ok",
		  rerr ? strerror(rerr) : "EOF", got);
	vt_assert(got < PSK_LAZY_BYTES,
		  "%s: all %zu bytes arrived over a connection to be reset",
		  what, got);
}

static void psk_refuse(struct vt_ctx *c)
{
	long long failed0, reset0;
	struct sockaddr_storage ss;
	int lfd = -1, port, keeper, fd;
	socklen_t len;

	hu_need_rdma(c);
	/* The handshake with other keys. */
	psk_clear();
	psk_add(1, "fleet", vt_is_client(c) ? PSK_A : PSK_B);
	hu_sysctl_set("auth", 3);
	failed0 = hu_proc("hs_auth_failed");
	vt_sync(c, "keys set");
	if (vt_is_client(c)) {
		port = su_recv_port(c);
		len = su_peer_addr(c, false, port, &ss);
		fd = su_socket(VT_FAMILY_VISOCK, false, SOCK_CLOEXEC);
		if (connect(fd, (struct sockaddr *)&ss, len)) {
			vt_diag("handshake: connect: %s", strerror(errno));
			vt_assert(psk_reset_err(errno),
				  "handshake: connect: %s, expected a reset",
				  strerror(errno));
		} else {
			psk_expect_reset(fd, "handshake, other key");
		}
		close(fd);
	} else {
		lfd = su_listen(VT_FAMILY_VISOCK, false, 16, SOCK_CLOEXEC);
		su_send_port(c, lfd);
	}
	vt_sync(c, "handshake done");
	if (!vt_is_client(c)) {
		vt_diag("hs_auth_failed +%lld",
			hu_proc("hs_auth_failed") - failed0);
		vt_assert(hu_proc("hs_auth_failed") >= failed0 + 1,
			  "hs_auth_failed did not count the REQ");
		close(lfd);
	}

	/* A lazy switch, the server's key replaced after the keeper. */
	psk_clear();
	psk_add(1, "fleet", PSK_A);
	keeper = psk_lazy_begin(c, &lfd, &port);
	psk_server_rekey(c);
	reset0 = hu_proc("lazy_switch_reset");
	fd = psk_lazy_conn(c, lfd, port);
	/*
	 * The server reads the client's bytes before its SWITCH, then the
	 * reset: the SWITCH that did not verify is no part of the stream.
	 */
	if (vt_is_client(c))
		psk_expect_reset(fd, "lazy switch, other key");
	else
		lazy_expect_prefix_reset(fd, PSK_LAZY_L, 0,
					 "lazy switch, other key");
	vt_diag("lazy_switch_reset +%lld", hu_proc("lazy_switch_reset") - reset0);
	if (!vt_is_client(c))
		vt_assert(hu_proc("lazy_switch_reset") >= reset0 + 1,
			  "lazy_switch_reset did not count the switch");
	vt_sync(c, "checked");
	close(fd);
	close(keeper);
	if (lfd >= 0)
		close(lfd);
}

static void psk_rotation(struct vt_ctx *c)
{
	char out[PSK_OUT];
	int lfd, port, keeper, st;

	hu_need_rdma(c);
	psk_clear();
	psk_add(1, "fleet-a", PSK_A);
	psk_add(2, "fleet-b", PSK_B);
	if (vt_is_client(c)) {
		st = psk_ctl_as(0, out, sizeof(out), "key use 2");
		vt_assert(st == 0, "key use 2: exit %d: %.300s", st, out);
	}
	st = psk_ctl_as(0, out, sizeof(out), "key list");
	vt_diag("key list: %s", out);
	hu_sysctl_set("auth", 2);
	/* The keeper's handshake is authenticated with the client's key 2. */
	keeper = psk_lazy_begin(c, &lfd, &port);
	psk_lazy_expect_auth(c, lfd, port, "client on key 2, server on 1");
	close(keeper);
	if (lfd >= 0)
		close(lfd);
}

/* Neither the hex text nor any 8 bytes of it in @out. */
static void psk_no_secret_in(const char *out, const char *what)
{
	char frag[17], up[17];
	size_t i, j;

	for (i = 0; i + 16 <= strlen(PSK_C); i += 2) {
		memcpy(frag, PSK_C + i, 16);
		frag[16] = '\0';
		for (j = 0; j <= 16; j++)
			up[j] = frag[j] >= 'a' && frag[j] <= 'f' ?
				frag[j] - 'a' + 'A' : frag[j];
		vt_assert(!strstr(out, frag) && !strstr(out, up),
			  "%s shows the secret: %.300s", what, out);
	}
}

static void psk_list_no_secret(struct vt_ctx *c)
{
	char out[PSK_OUT];
	int st;

	psk_clear();
	psk_add(3, "fleet-c", PSK_C);
	st = psk_ctl_as(0, out, sizeof(out), "key list");
	vt_diag("key list: %s", out);
	vt_assert(st == 0 && strstr(out, "fleet-c") && strstr(out, "3\t") &&
		  strstr(out, "current"),
		  "key list: exit %d, without id 3, its name or state: %.300s",
		  st, out);
	psk_no_secret_in(out, "key list");
	st = psk_ctl_as(0, out, sizeof(out), "--json key list");
	vt_assert(st == 0 && strstr(out, "\"id\":3"),
		  "key list --json: exit %d: %.300s", st, out);
	psk_no_secret_in(out, "key list --json");
	vt_assert(hu_read_text("/proc/keys", out, sizeof(out)) >= 0 ||
		  errno == ENOENT, "/proc/keys: %s", strerror(errno));
	psk_no_secret_in(out, "/proc/keys");
	st = psk_ctl_as(0, out, sizeof(out), "key del 3");
	vt_assert(st == 0, "key del 3: exit %d: %.300s", st, out);
	st = psk_ctl_as(0, out, sizeof(out), "key list");
	vt_assert(st == 0 && !strstr(out, "fleet-c"),
		  "key list after del: exit %d: %.300s", st, out);
	vt_sync(c, "checked");
}

static void psk_unprivileged(struct vt_ctx *c)
{
	char path[64], out[PSK_OUT];
	int st;

	psk_clear();
	psk_secret_file(path, sizeof(path), PSK_A);
	st = psk_ctl_as(65534, out, sizeof(out),
			"key add 9 name intruder secret-file %s", path);
	unlink(path);
	vt_diag("unprivileged key add: exit %d: %s", st, out);
	vt_assert(st == 1 && strstr(out, "permission denied"),
		  "unprivileged key add: exit %d, expected 1 and permission denied: %.300s",
		  st, out);
	st = psk_ctl_as(65534, out, sizeof(out), "key list");
	vt_assert(st == 1 && strstr(out, "permission denied"),
		  "unprivileged key list: exit %d: %.300s", st, out);
	st = psk_ctl_as(0, out, sizeof(out), "key list");
	vt_assert(st == 0 && !strstr(out, "intruder"),
		  "key list: exit %d, or the key was added: %.300s", st, out);
	vt_sync(c, "checked");
}

/* ---- memcg_records: a transform's buffers charged to the cgroup ---- */

/*
 * memcg_records: the records' state and staging buffers of a connection
 * with a transform are charged to its socket's memory cgroup, on both
 * ends (the server's are set up by its handshake work).  Each half runs
 * in a cgroup v2 group of its own, same key on both, auth 1.
 * MCR_CONNS connections without a transform, then MCR_CONNS with
 * gcm-aes-128, all open at the end: the second batch must raise
 * memory.current by at least 3/4 of its record buffers' bytes more than
 * the first (memory.current moves in per-CPU batches of up to 256 KiB,
 * so the numbers are not exact).  A connection's record buffers, with a
 * record's payload at most a quarter of the ring less the header and
 * tag, and at most 16 KiB: one sealed record to send, one to open, one
 * opened payload.
 */
#define MCR_CONNS	64
#define MCR_OVERHEAD	32	/* record header and tag */
#define MCR_PAYLOAD	16384	/* largest payload of a record */

static long long mcr_max_payload(uint32_t ring)
{
	long long p = (long long)ring / 4 - MCR_OVERHEAD;

	return p < MCR_PAYLOAD ? p : MCR_PAYLOAD;
}

/*
 * MCR_CONNS connections, each with one byte echoed; every one on RDMA
 * with transform @xform.  Returns the record buffers they hold.
 */
static long long mcr_open(struct vt_ctx *c, int lfd, int port, int *fds,
			  int xform)
{
	struct visock_info vi;
	long long bufs = 0;
	char ch = 'r';
	int i;

	for (i = 0; i < MCR_CONNS; i++) {
		if (vt_is_client(c)) {
			fds[i] = su_connect(c, VT_FAMILY_VISOCK, false, port);
			su_write_all(fds[i], &ch, 1);
			su_read_all(fds[i], &ch, 1);
		} else {
			fds[i] = su_accept(lfd, SOCK_CLOEXEC);
			su_read_all(fds[i], &ch, 1);
			su_write_all(fds[i], &ch, 1);
		}
		hu_expect_rdma(fds[i], xform_names[xform], &vi);
		vt_assert(vi.vi_xform == (uint32_t)xform,
			  "connection %d: vi_xform %u, expected %d (%s)", i,
			  vi.vi_xform, xform, xform_names[xform]);
		bufs += mcr_max_payload(vi.vi_peer_rbuf_size) + MCR_OVERHEAD +
			mcr_max_payload(vi.vi_rbuf_size) + MCR_OVERHEAD +
			mcr_max_payload(vi.vi_rbuf_size);
	}
	return bufs;
}

static void memcg_records(struct vt_ctx *c)
{
	long long cur0, cur1, cur2, plain, xf, bufs, diff;
	int fds[2 * MCR_CONNS], lfd = -1, port = 0, i;
	const char *side = vt_is_client(c) ? "client" : "server";
	const char *why;

	hu_need_rdma(c);
	why = mc_join(c);
	vt_agree(c, !*why, why);
	vt_assert(mc_write(mc_cg, "memory.max", "max"), "memory.max: %s",
		  strerror(errno));
	psk_clear();
	psk_add(1, "fleet-a", PSK_A);
	hu_sysctl_set("auth", 1);
	hu_sysctl_set("transform", 0);
	/* The listener is made in the cgroup: its children are charged here. */
	if (!vt_is_client(c)) {
		lfd = su_listen(VT_FAMILY_VISOCK, false, 16, SOCK_CLOEXEC);
		su_send_port(c, lfd);
	} else {
		port = su_recv_port(c);
	}
	cur0 = mc_current();
	mcr_open(c, lfd, port, fds, 0);
	vt_sync(c, "plain open");
	cur1 = mc_current();
	hu_sysctl_set("transform", 1);
	vt_sync(c, "transform set");
	bufs = mcr_open(c, lfd, port, fds + MCR_CONNS, 1);
	vt_sync(c, "transformed open");
	cur2 = mc_current();
	plain = cur1 - cur0;
	xf = cur2 - cur1;
	diff = xf - plain;
	vt_diag("%s: memory.current +%lld (%d plain), +%lld (%d gcm-aes-128)",
		side, plain, MCR_CONNS, xf, MCR_CONNS);
	vt_diag("%s: %lld bytes more with the transform, record buffers %lld",
		side, diff, bufs);
	vt_assert(diff >= bufs / 4 * 3,
		  "%s: %d connections with gcm-aes-128 raised memory.current by %lld bytes more than %d without (%lld vs %lld); their record buffers are %lld bytes, expected at least 3/4 of that",
		  side, MCR_CONNS, diff, MCR_CONNS, xf, plain, bufs);
	vt_sync(c, "checked");
	for (i = 0; i < 2 * MCR_CONNS; i++)
		close(fds[i]);
	if (lfd >= 0)
		close(lfd);
}

/*
 * xform_mem_budget  same key, auth 1, both hosts zstd-gcm-aes-128; the
 *                   client's net.visock.lgr_mem_max_mb is XM_BUDGET_MB.
 *                   XM_CONNS connections opened and held, each echoing
 *                   256 KiB: the first gets the pair on RDMA, and once
 *                   the pair's state (a zstd compressor's workspaces,
 *                   about a megabyte) no longer fits, that connection and
 *                   every later one stay on TCP with reason XFORM_MEM on
 *                   both ends, counted in fallback_xform_mem; at least
 *                   one is refused.  While they are held the client's
 *                   xform_bytes grew, and the budget's reading stayed
 *                   within it; once all are closed xform_bytes is back
 *                   where it started on both hosts.
 */
#define XF_ZSTD		7
#define XM_BUDGET_MB	4
#define XM_CONNS	6

static void xform_mem_budget(struct vt_ctx *c)
{
	const char *side = vt_is_client(c) ? "client" : "server";
	long long x0, fb0, x, used;
	int fd[XM_CONNS], i, paired = 0, refused = 0;
	struct visock_info vi;
	char what[64];

	hu_need_rdma(c);
	psk_clear();
	psk_add(1, "fleet-a", PSK_A);
	hu_sysctl_set("auth", 1);
	hu_sysctl_set("transform", XF_ZSTD);
	if (vt_is_client(c))
		hu_sysctl_set("lgr_mem_max_mb", XM_BUDGET_MB);
	/* Counters read with hu_proc() once the behaviour is checked. */
	x0 = hu_proc_get("xform_bytes");
	fb0 = hu_proc_get("fallback_xform_mem");
	for (i = 0; i < XM_CONNS; i++) {
		fd[i] = psk_connect(c);
		hu_get_info(fd[i], &vi);
		x = hu_proc_get("xform_bytes");
		vt_diag("%s, connection %d: mode %u, transform %u, reason %s",
			side, i, vi.vi_mode, vi.vi_xform,
			hu_fb_name(vi.vi_fallback_reason));
		vt_diag("%s, connection %d: xform_bytes %lld", side, i, x);
		snprintf(what, sizeof(what), "%s, connection %d", side, i);
		if (vi.vi_mode == VISOCK_MODE_RDMA) {
			vt_assert(!refused,
				  "%s: on RDMA after an earlier one was refused",
				  what);
			xform_expect(fd[i], XF_ZSTD, what);
			paired++;
		} else {
			psk_expect_fallback(fd[i], VISOCK_FB_XFORM_MEM, what);
			refused++;
		}
	}
	vt_diag("%s: %d connections with the pair, %d refused", side,
		paired, refused);
	vt_diag("%s: fallback_xform_mem %lld -> %lld", side, fb0,
		hu_proc_get("fallback_xform_mem"));
	vt_assert(paired >= 1, "%s: no connection got the pair", side);
	vt_assert(refused >= 1,
		  "%s: all %d connections got the pair within %d MiB",
		  side, XM_CONNS, XM_BUDGET_MB);
	vt_assert(x0 >= 0 && fb0 >= 0,
		  "%s: no xform_bytes or fallback_xform_mem", side);
	vt_assert(hu_proc("fallback_xform_mem") >= fb0 + refused,
		  "%s: fallback_xform_mem did not count %d", side, refused);
	if (vt_is_client(c)) {
		x = hu_proc("xform_bytes");
		used = hu_proc("registered_bytes") + hu_proc("qp_queue_bytes") +
		       x;
		vt_diag("client: xform_bytes %lld (%lld a connection)",
			x, (x - x0) / paired);
		vt_diag("client: budget in use %lld of %d MiB", used,
			XM_BUDGET_MB);
		vt_assert(x > x0, "client: xform_bytes did not grow (%lld)",
			  x);
		vt_assert(used <= (long long)XM_BUDGET_MB << 20,
			  "client: %lld bytes in use, over the %d MiB budget",
			  used, XM_BUDGET_MB);
	}
	vt_sync(c, "counted");
	for (i = 0; i < XM_CONNS; i++)
		close(fd[i]);
	x = hu_proc_wait("xform_bytes", x0, 30000);
	vt_diag("%s: all closed: xform_bytes %lld, baseline %lld", side, x,
		x0);
	vt_assert(x == x0, "%s: xform_bytes %lld after all closed, was %lld",
		  side, x, x0);
	vt_sync(c, "checked");
}

/* ---- xform_no_lazy: a transform is never skipped by a lazy start ---- */

/*
 * xform_no_lazy: lazy_bytes set on both hosts, same key, auth 1.  A
 * lazy switch negotiates no transform, so a socket that asks for one
 * neither proposes a lazy start nor, as a listener, takes one.  After
 * the keeper brought the queue pair up, for each case the sockets ask
 * for a transform through net.visock.transform (client, server), the
 * VISOCK_TRANSFORM option of the client's socket and the server's
 * listener, or a policy rule of the client naming a pair for the
 * server, all set before the listener and the connection are made: the
 * connection is not lazy, moves PSK_LAZY_BYTES each way intact over
 * RDMA, with the transform the handshake negotiates, and through
 * records when there is one.
 */
static const struct {
	int client, server;		/* net.visock.transform */
	int opt_client, opt_server;	/* VISOCK_TRANSFORM, 0: not set */
	const char *rule;		/* the client's policy rule, or NULL */
	int want;
} xnl_cases[] = {
	/* both ask: the transform, on RDMA at once */
	{ 1, 1, 0, 0, NULL, 1 },
	/* the client proposes no lazy start */
	{ 1, 0, 0, 0, NULL, 0 },
	/* the listener takes none */
	{ 0, 1, 0, 0, NULL, 0 },
	/* the same through the socket option */
	{ 0, 0, 1, 1, NULL, 1 },
	{ 0, 0, 1, 0, NULL, 0 },
	{ 0, 0, 0, 1, NULL, 0 },
	/* and through a rule without require */
	{ 0, 0, 0, 0, "transform gcm-aes-128", 0 },
};

static void xform_no_lazy(struct vt_ctx *c)
{
	int lfd, port, keeper, fd, i;
	struct visock_info vi;
	char what[64];

	hu_need_rdma(c);
	psk_clear();
	psk_add(1, "fleet-a", PSK_A);
	hu_sysctl_set("auth", 1);
	hu_sysctl_set("transform", 0);
	keeper = psk_lazy_begin(c, &lfd, &port);
	if (lfd >= 0)
		close(lfd);
	for (i = 0; i < (int)ARRAY_SIZE(xnl_cases); i++) {
		snprintf(what, sizeof(what), "%s, case %d",
			 vt_is_client(c) ? "client" : "server", i);
		hu_sysctl_set("transform", vt_is_client(c) ?
			      xnl_cases[i].client : xnl_cases[i].server);
		if (vt_is_client(c))
			xform_policy(c, xnl_cases[i].rule);
		vt_sync(c, "transform set");
		if (xnl_cases[i].opt_client || xnl_cases[i].opt_server) {
			lfd = -1;
			fd = xform_opt_pair(c, vt_is_client(c) ?
					    xnl_cases[i].opt_client :
					    xnl_cases[i].opt_server);
		} else if (vt_is_client(c)) {
			lfd = -1;
			port = su_recv_port(c);
			fd = su_connect(c, VT_FAMILY_VISOCK, false, port);
		} else {
			lfd = su_listen(VT_FAMILY_VISOCK, false, 16,
					SOCK_CLOEXEC);
			su_send_port(c, lfd);
			fd = su_accept(lfd, SOCK_CLOEXEC);
		}
		hu_get_info(fd, &vi);
		vt_diag("%s: mode %u, flags %#x after connect", what,
			vi.vi_mode, vi.vi_flags);
		vt_assert(!(vi.vi_flags & VISOCK_INFO_F_LAZY),
			  "%s: a lazy start (flags %#x, mode %u): its switch would reach RDMA without the transform",
			  what, vi.vi_flags, vi.vi_mode);
		vt_sync(c, "looked");
		su_xfer(&fd, 1, PSK_LAZY_BYTES, PSK_XFER_MS);
		hu_expect_rdma(fd, what, &vi);
		vt_diag("%s: transform %u, flags %#x, %llu records sealed, %llu opened",
			what, vi.vi_xform, vi.vi_flags,
			(unsigned long long)vi.vi_rec_sealed,
			(unsigned long long)vi.vi_rec_opened);
		vt_assert(!(vi.vi_flags & VISOCK_INFO_F_LAZY),
			  "%s: flags %#x: a lazy connection", what,
			  vi.vi_flags);
		vt_assert(vi.vi_xform == (uint32_t)xnl_cases[i].want,
			  "%s: vi_xform %u, expected %d (%s)", what,
			  vi.vi_xform, xnl_cases[i].want,
			  xform_names[xnl_cases[i].want]);
		if (xnl_cases[i].want)
			vt_assert(vi.vi_rec_sealed >= PSK_LAZY_BYTES / 16384 &&
				  vi.vi_rec_opened >= PSK_LAZY_BYTES / 16384,
				  "%s: %llu records sealed, %llu opened: the stream did not go through records",
				  what, (unsigned long long)vi.vi_rec_sealed,
				  (unsigned long long)vi.vi_rec_opened);
		vt_sync(c, "checked");
		close(fd);
		if (lfd >= 0)
			close(lfd);
	}
	if (vt_is_client(c))
		xform_policy(c, NULL);
	close(keeper);
}

/* ---- what the link carries ---- */

/*
 * capture_none, capture_gcm_aes_128, capture_chacha20_poly1305: same key,
 * auth 1, net.visock.transform 0 on both hosts; the client's socket and
 * the server's listener ask for the transform with VISOCK_TRANSFORM
 * (none: not set).  The client streams CAP_BYTES of a marker text that
 * names the transform, the server checks every byte; both ends say RDMA
 * with that vi_xform.  Around the connection the client sends a datagram
 * to the server's UDP port CAP_BEACON_PORT:
 *
 *	visock-capture begin TEST TRANSFORM MARKER-IN-HEX BYTES
 *	visock-capture end TEST
 *
 * the first before connect(), the second once the server has all bytes.
 * The datagrams carry the marker in hex only, so the marker itself is on
 * the link only where the stream carries it.  On its own a test checks
 * the stream; with the link captured (vm.sh run --capture),
 * tools/testing/vm/capture-check.py checks the capture: the marker of
 * capture_none in the RoCE payloads between its datagrams, the AEADs'
 * markers nowhere in the capture while their RoCE packets between the
 * datagrams carry at least BYTES (tools/testing/check-capture.sh).
 */
#define CAP_BYTES	(256 * 1024)
#define CAP_BEACON_PORT	7796
#define CAP_MARKER_MAX	128

/* The marker text of transform @x, repeated through the stream. */
static size_t cap_marker(char *buf, size_t size, int x)
{
	int n = snprintf(buf, size,
			 "<VISOCK-CAPTURE-MARKER:%s:The quick brown fox jumps over the lazy dog.>",
			 xform_names[x]);

	vt_assert(n > 0 && (size_t)n < size, "marker too long");
	return (size_t)n;
}

/* Client: one datagram to the server's CAP_BEACON_PORT. */
static void cap_beacon(struct vt_ctx *c, const char *text)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(CAP_BEACON_PORT),
	};
	int fd;

	vt_assert(inet_pton(AF_INET, c->peer, &sin.sin_addr) == 1,
		  "peer address %s", c->peer);
	fd = vt_try(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0),
		    "socket(AF_INET, SOCK_DGRAM)");
	vt_try(sendto(fd, text, strlen(text), 0, (struct sockaddr *)&sin,
		      sizeof(sin)), "sendto (capture datagram)");
	close(fd);
}

static void capture_stream(struct vt_ctx *c, int x)
{
	static uint8_t buf[CAP_BYTES];
	char marker[CAP_MARKER_MAX], text[2 * CAP_MARKER_MAX + 128], what[64];
	size_t mlen, i, off;
	int fd;

	hu_need_rdma(c);
	psk_clear();
	psk_add(1, "fleet-a", PSK_A);
	hu_sysctl_set("auth", 1);
	hu_sysctl_set("transform", 0);
	mlen = cap_marker(marker, sizeof(marker), x);
	snprintf(what, sizeof(what), "%s, %s",
		 vt_is_client(c) ? "client" : "server", c->test->name);
	if (vt_is_client(c)) {
		off = (size_t)snprintf(text, sizeof(text),
				       "visock-capture begin %s %s ",
				       c->test->name, xform_names[x]);
		for (i = 0; i < mlen; i++)
			off += (size_t)snprintf(text + off, sizeof(text) - off,
						"%02x", (uint8_t)marker[i]);
		snprintf(text + off, sizeof(text) - off, " %d", CAP_BYTES);
		cap_beacon(c, text);
	}
	for (i = 0; i < CAP_BYTES; i++)
		buf[i] = (uint8_t)marker[i % mlen];
	fd = xform_opt_pair(c, x);
	if (vt_is_client(c)) {
		su_write_all(fd, buf, CAP_BYTES);
	} else {
		memset(buf, 0, CAP_BYTES);
		su_read_all(fd, buf, CAP_BYTES);
		for (i = 0; i < CAP_BYTES; i++)
			if (buf[i] != (uint8_t)marker[i % mlen])
				vt_fail("%s: byte %zu is %#x, expected %#x",
					what, i, buf[i],
					(uint8_t)marker[i % mlen]);
	}
	xform_expect(fd, x, what);
	vt_sync(c, "received");
	if (vt_is_client(c)) {
		snprintf(text, sizeof(text), "visock-capture end %s",
			 c->test->name);
		cap_beacon(c, text);
	}
	close(fd);
}

static void capture_none(struct vt_ctx *c)
{
	capture_stream(c, 0);
}

static void capture_gcm_aes_128(struct vt_ctx *c)
{
	capture_stream(c, 1);
}

static void capture_chacha20_poly1305(struct vt_ctx *c)
{
	capture_stream(c, XF_CHACHA);
}

#define T(fn, tmo, d)	{ #fn, fn, fn, tmo, d }

static const struct vt_test tests[] = {
	T(tcp_ulp, 60, "TCP_ULP refused on every visock socket"),
	T(decline_foreign_qp, 120, "a SWITCH naming another host's QP posts nothing on it"),
	T(lazy_bad_switch, 120,
	  "a malformed SWITCH: the server reads the bytes before it, then a reset"),
	T(sockopt_allowlist, 60,
	  "only allowed options reach the internal TCP socket"),
	{ "backlog_bound", backlog_bound_client, backlog_bound_server, 120,
	  "a listener holds at most backlog + 1 connections" },
	{ "diag_stalled", diag_stalled_client, diag_stalled_server, 240,
	  "a socket stalled in sendmsg() does not block the dumps" },
	T(gid_mismatch, 60, "a REQ whose GID is not the TCP peer's is declined"),
	T(qp_cap_dying, 600, "QPs made dying by their peer still count against the cap"),
	T(hostile_handshakes, 900, "2,000 hostile handshakes: QPs and memory bounded"),
	T(qp_mem_budget, 60, "a QP's queues count in lgr_mem_max_mb"),
	T(lazy_early_cursor, 300,
	  "a responder's first cursor messages ahead of the switch reply"),
	T(lazy_ring_isolation, 900,
	  "a failed lazy switch's ring is not reused while the peer writes"),
	T(linger_reap_race, 60,
	  "a lingering link reaped while its destroy still runs"),
	T(unload_qp_teardown, 600,
	  "rmmod waits for a QP in its idle teardown"),
	T(rkey_rotation, 120,
	  "a reused ring gets a new rkey: a late WRITE with the old one fails"),
	T(memcg_rings, 300,
	  "rings are charged to the socket's memory cgroup; over memory.max: TCP"),
	T(psk_auth, 120, "same pre-shared key: RDMA, handshake authenticated"),
	T(psk_lazy_auth, 300,
	  "same key, auth 1 and 2: a lazy switch is authenticated"),
	T(psk_lazy_mismatch, 300,
	  "auth 2, other keys: a lazy switch stays on TCP with AUTH"),
	T(psk_mismatch, 120, "other pre-shared keys: TCP with reason AUTH"),
	T(psk_missing, 120,
	  "a key required, the peer has none: TCP with AUTH_MISSING"),
	T(psk_list_no_secret, 60, "visockctl key list never shows the secret"),
	T(psk_refuse, 300,
	  "auth 3, other keys: the handshake and a lazy switch are reset"),
	T(psk_rotation, 300,
	  "keys 1 and 2 on both, one side uses 2: still authenticated"),
	T(psk_unprivileged, 60, "no key added or listed without CAP_NET_ADMIN"),
	T(xform_negotiate, 300,
	  "same key: the transform both ends ask for is negotiated"),
	T(xform_no_psk, 120, "a peer without the key: no transform"),
	T(xform_stream, 300,
	  "every transform: the stream echoes intact through records"),
	T(xform_no_lazy, 300,
	  "lazy_bytes and a transform: the handshake, not a lazy start"),
	T(memcg_records, 600,
	  "a transform's record buffers are charged to the socket's cgroup"),
	T(xform_sockopt, 300,
	  "VISOCK_TRANSFORM picks the transform, net.visock.transform 0"),
	T(xform_require, 300,
	  "a policy rule requires a transform the server does not do: TCP"),
	T(xform_require_server, 300,
	  "a server requires a transform: clients without it stay on TCP"),
	T(xform_require_comp_gmac, 300,
	  "compression without encryption never meets a required AEAD"),
	T(xform_mem_budget, 600,
	  "a pair's state counts in lgr_mem_max_mb: beyond it, TCP (XFORM_MEM)"),
	T(xform_rekey, 900,
	  "every transform, 64 records a key: keys change, the stream is intact"),
	T(xform_rekey_late, 300,
	  "a key change missing where the receiver requires it: reset"),
	T(capture_none, 120,
	  "no transform: the marker stream on RDMA, between capture datagrams"),
	T(capture_gcm_aes_128, 120,
	  "gcm-aes-128: the marker stream sealed, between capture datagrams"),
	T(capture_chacha20_poly1305, 120,
	  "chacha20-poly1305: the marker stream sealed, between capture datagrams"),
	T(forged_write_gcm, 300,
	  "gcm-aes-128: a forged RDMA WRITE resets that connection only"),
	T(forged_write_gmac, 300,
	  "gmac-aes-128: a forged RDMA WRITE resets that connection only"),
	T(forged_write_plain, 300,
	  "no transform: the bytes of a forged RDMA WRITE are delivered"),
	T(comp_stream, 300,
	  "lz4 and zstd pairs: text goes compressed, random bytes stored"),
	T(comp_stream_gmac, 300,
	  "lz4 and zstd with gmac-aes-128: compressed, authenticated only"),
	T(comp_stream_aes256, 300,
	  "lz4 and zstd with gcm-aes-256: text compressed, random stored"),
	T(comp_stream_chacha, 300,
	  "lz4 and zstd with chacha20-poly1305: text compressed, random stored"),
};

/*
 * After every test half, however it ended (in the runner process): the
 * module loaded again if a test left it unloaded, the sysctls back, no
 * fault point armed.
 */
static void lt_cleanup(const struct vt_ctx *c)
{
	char path[] = HU_FAULT_DIR "point", ko[512], cmd[600];
	int fd;

	(void)c;
	if (access("/sys/module/visock", F_OK)) {
		lt_module_path(ko, sizeof(ko));
		snprintf(cmd, sizeof(cmd), "insmod '%s'", ko);
		if (!ko[0] || system(cmd))
			vt_diag("cannot load visock again (%s)", ko);
	}
	hu_sysctls_restore(lt_saved, ARRAY_SIZE(lt_saved));
	if (hu_write_ll(HU_DEBUGFS_DIR "stale_write", 0) && errno != ENOENT)
		vt_diag("disarming stale_write: %s", strerror(errno));
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "none\n", 5) < 0)
			vt_diag("disarming the fault point: %s",
				strerror(errno));
		close(fd);
	}
}

/*
 * What every group of tests puts back after each test half, whatever
 * it did: its sysctls, hooks and fault points.
 */
static void (*const cleanups[])(const struct vt_ctx *c) = {
	hostile_cleanup,
	lt_cleanup,
	mc_cleanup,
	psk_cleanup,
};

static void security_cleanup(const struct vt_ctx *c)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cleanups); i++)
		cleanups[i](c);
}

int main(int argc, char **argv)
{
	hu_sysctls_save(lt_saved, ARRAY_SIZE(lt_saved));
	hu_sysctls_save(psk_saved, ARRAY_SIZE(psk_saved));
	vt_set_cleanup(security_cleanup);
	return vt_main(argc, argv, "visock_security", tests,
		       ARRAY_SIZE(tests));
}
