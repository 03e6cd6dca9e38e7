// SPDX-License-Identifier: GPL-2.0
/*
 * Single-host visock checks: the net.visock.enable sysctl (values,
 * errors, per network namespace behaviour), socket creation, the
 * SOL_VISOCK options of a new socket (VISOCK_TRANSFORM also on a
 * loopback connection) and /proc/net/protocols.
 *
 * Helper modes for run_tests.sh (not tests):
 *	visock_basic --probe		try socket(AF_VISOCK), print the result;
 *					exit 0 ok, 1 EAFNOSUPPORT, 2 other error
 *	visock_basic --hold SECONDS	keep an AF_VISOCK socket open
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/visock.h>

#include "harness.h"

/* Overridable to check these tests against another 0/1 sysctl. */
#ifndef SYSCTL_DIR
#define SYSCTL_DIR "/proc/sys/net/visock"
#endif
#ifndef ENABLE_PATH
#define ENABLE_PATH SYSCTL_DIR "/enable"
#endif

/* ---- sysctl access ---- */

/* Value of sysctl @path in the caller's network namespace, -1: absent. */
static int num_read(const char *path)
{
	char buf[32] = "";
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? atoi(buf) : -1;
}

static int enable_read(void)
{
	return num_read(ENABLE_PATH);
}

/* write(2) @len bytes of @val in one call; 0 or the errno. */
static int enable_write(const char *val, size_t len)
{
	ssize_t n;
	int fd, err = 0;

	fd = open(ENABLE_PATH, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	n = write(fd, val, len);
	if (n < 0)
		err = errno;
	else if ((size_t)n != len)
		err = EIO;
	close(fd);
	return err;
}

static void enable_set(int val)
{
	char buf[8];
	int err;

	snprintf(buf, sizeof(buf), "%d\n", val);
	err = enable_write(buf, strlen(buf));
	if (err)
		vt_fail("writing %d to %s: %s (%s)", val, ENABLE_PATH,
			vt_errname(err), strerror(err));
	vt_assert(enable_read() == val, "%s reads %d after writing %d",
		  ENABLE_PATH, enable_read(), val);
}

static int enable_require(void)
{
	int val = enable_read();

	if (val < 0)
		vt_fail("%s: %s (visock not loaded?)", ENABLE_PATH,
			strerror(errno));
	return val;
}

static void sysctl_present(struct vt_ctx *c)
{
	struct stat st;
	int val;

	(void)c;
	vt_assert(stat(SYSCTL_DIR, &st) == 0 && S_ISDIR(st.st_mode),
		  "%s is not a directory: %s", SYSCTL_DIR, strerror(errno));
	vt_assert(stat(ENABLE_PATH, &st) == 0 && S_ISREG(st.st_mode),
		  "%s missing: %s", ENABLE_PATH, strerror(errno));
	vt_assert((st.st_mode & 0777) == 0644, "%s has mode %03o, expected 644",
		  ENABLE_PATH, st.st_mode & 0777);
	val = enable_require();
	vt_assert(val == 0 || val == 1, "%s reads %d", ENABLE_PATH, val);
}

static void sysctl_write_valid(struct vt_ctx *c)
{
	int orig = enable_require(), err;

	(void)c;
	enable_set(1);
	enable_set(0);
	enable_set(1);
	/* Without a trailing newline, as a plain write(2) would do. */
	err = enable_write("0", 1);
	vt_assert(!err, "writing \"0\": %s", vt_errname(err));
	vt_assert(enable_read() == 0, "reads %d after \"0\"", enable_read());
	enable_set(orig);
}

/* @val for messages, newlines escaped. */
static const char *show(const char *val, size_t len)
{
	static char buf[64];
	size_t i, off = 0;

	for (i = 0; i < len && off + 3 < sizeof(buf); i++) {
		if (val[i] == '\n') {
			buf[off++] = '\\';
			buf[off++] = 'n';
		} else {
			buf[off++] = val[i];
		}
	}
	buf[off] = '\0';
	return buf;
}

/*
 * Writing @val (exactly @len bytes) must fail with EINVAL and leave the
 * value alone, whether it is 0 or 1.
 */
static void reject_common(const char *val, size_t len)
{
	int orig = enable_require(), start, err;

	for (start = 0; start <= 1; start++) {
		enable_set(start);
		err = enable_write(val, len);
		if (err != EINVAL) {
			enable_set(orig);
			vt_fail("writing \"%s\" (%zu bytes): %s, expected EINVAL",
				show(val, len), len, err ? vt_errname(err) :
				"accepted");
		}
		vt_assert(enable_read() == start,
			  "value changed from %d to %d by rejected \"%s\"",
			  start, enable_read(), show(val, len));
	}
	enable_set(orig);
}

static void sysctl_reject_2(struct vt_ctx *c)
{
	(void)c;
	reject_common("2\n", 2);
}

static void sysctl_reject_minus1(struct vt_ctx *c)
{
	(void)c;
	reject_common("-1\n", 3);
}

static void sysctl_reject_huge(struct vt_ctx *c)
{
	(void)c;
	reject_common("99999999999\n", 12);
}

static void sysctl_reject_text(struct vt_ctx *c)
{
	(void)c;
	reject_common("abc\n", 4);
}

/* An empty value: what `echo "" > file` writes. */
static void sysctl_reject_empty(struct vt_ctx *c)
{
	(void)c;
	reject_common("\n", 1);
}

/*
 * A zero-length write(2) carries no value: like for any sysctl it may
 * succeed as a no-op or fail with EINVAL, but it must not change anything.
 */
static void sysctl_empty_write(struct vt_ctx *c)
{
	int orig = enable_require(), start, err;

	(void)c;
	for (start = 0; start <= 1; start++) {
		enable_set(start);
		err = enable_write("", 0);
		vt_assert(!err || err == EINVAL,
			  "zero-length write: %s, expected success or EINVAL",
			  vt_errname(err));
		vt_assert(enable_read() == start,
			  "zero-length write changed the value from %d to %d",
			  start, enable_read());
	}
	enable_set(orig);
}

/*
 * Run @fn in a child process in a new network namespace; returns its
 * exit status (0 ok, 1 failed, 2 cannot create a namespace).  Messages
 * go to @msg.
 */
static int in_new_netns(int (*fn)(char *msg, size_t size), char *msg,
			size_t size)
{
	int pipefd[2], status;
	ssize_t n;
	pid_t pid;

	vt_try(pipe(pipefd), "pipe");
	fflush(stdout);
	pid = fork();
	vt_try(pid, "fork");
	if (pid == 0) {
		char buf[256] = "";
		int ret;

		close(pipefd[0]);
		if (unshare(CLONE_NEWNET)) {
			snprintf(buf, sizeof(buf), "unshare(CLONE_NEWNET): %s",
				 strerror(errno));
			ret = 2;
		} else {
			ret = fn(buf, sizeof(buf));
		}
		if (write(pipefd[1], buf, strlen(buf)) < 0)
			ret = 1;
		_exit(ret);
	}
	close(pipefd[1]);
	n = read(pipefd[0], msg, size - 1);
	msg[n > 0 ? n : 0] = '\0';
	close(pipefd[0]);
	vt_try(waitpid(pid, &status, 0), "waitpid");
	if (!WIFEXITED(status))
		return 1;
	return WEXITSTATUS(status);
}

static void netns_run(int (*fn)(char *msg, size_t size))
{
	char msg[256];
	int ret = in_new_netns(fn, msg, sizeof(msg));

	if (ret == 2)
		vt_skip("%s", msg);
	if (ret)
		vt_fail("in a new network namespace: %s", msg);
}

static int ns_dir_exists(char *msg, size_t size)
{
	struct stat st;

	if (stat(SYSCTL_DIR, &st) || !S_ISDIR(st.st_mode)) {
		snprintf(msg, size, "%s missing: %s", SYSCTL_DIR,
			 strerror(errno));
		return 1;
	}
	if (stat(ENABLE_PATH, &st)) {
		snprintf(msg, size, "%s missing: %s", ENABLE_PATH,
			 strerror(errno));
		return 1;
	}
	return 0;
}

static int ns_reads_zero(char *msg, size_t size)
{
	int val;

	if (ns_dir_exists(msg, size))
		return 1;
	val = enable_read();
	if (val != 0) {
		snprintf(msg, size, "enable reads %d, expected 0", val);
		return 1;
	}
	return 0;
}

static int ns_set(int val, char *msg, size_t size)
{
	char buf[8];
	int err;

	if (ns_reads_zero(msg, size))
		return 1;
	snprintf(buf, sizeof(buf), "%d\n", val);
	err = enable_write(buf, strlen(buf));
	if (err) {
		snprintf(msg, size, "writing %d: %s", val, strerror(err));
		return 1;
	}
	if (enable_read() != val) {
		snprintf(msg, size, "reads %d after writing %d", enable_read(),
			 val);
		return 1;
	}
	return 0;
}

static int ns_set_one(char *msg, size_t size)
{
	return ns_set(1, msg, size);
}

static int ns_set_zero(char *msg, size_t size)
{
	return ns_set(0, msg, size);
}

static int ns_reject(char *msg, size_t size)
{
	int err;

	if (ns_reads_zero(msg, size))
		return 1;
	err = enable_write("2\n", 2);
	if (err != EINVAL) {
		snprintf(msg, size, "writing 2: %s, expected EINVAL",
			 err ? strerror(err) : "accepted");
		return 1;
	}
	if (enable_read() != 0) {
		snprintf(msg, size, "reads %d after a rejected write",
			 enable_read());
		return 1;
	}
	return 0;
}

/* ---- numeric sysctls: range and default ---- */

struct num_sysctl {
	const char *name;
	int min, max, def;
};

static const struct num_sysctl num_sysctls[] = {
	{ "handshake_timeout_ms", 100, 60000, 3000 },
	{ "rdma_ack_timeout", 12, 24, 17 },
	{ "rbuf_default", 16384, 8388608, 65536 },
};

static int num_write(const char *path, int val)
{
	char buf[16];
	ssize_t n;
	int fd, err = 0;

	snprintf(buf, sizeof(buf), "%d\n", val);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	n = write(fd, buf, strlen(buf));
	if (n < 0)
		err = errno;
	close(fd);
	return err;
}

/* Defaults of a fresh namespace (run in one by netns_run()). */
static int ns_num_defaults(char *msg, size_t size)
{
	char path[128];
	size_t i;
	int val;

	for (i = 0; i < ARRAY_SIZE(num_sysctls); i++) {
		snprintf(path, sizeof(path), SYSCTL_DIR "/%s",
			 num_sysctls[i].name);
		val = num_read(path);
		if (val != num_sysctls[i].def) {
			snprintf(msg, size, "%s reads %d in a new namespace, default is %d",
				 num_sysctls[i].name, val, num_sysctls[i].def);
			return 1;
		}
	}
	return 0;
}

/*
 * Each numeric sysctl takes its minimum and maximum, rejects one less and
 * one more with EINVAL (keeping its value), and starts at its default in
 * a new namespace.
 */
static void sysctl_ranges(struct vt_ctx *c)
{
	const struct num_sysctl *t;
	char path[128];
	int orig, err, bad[2], i;
	size_t k;

	(void)c;
	enable_require();
	for (k = 0; k < ARRAY_SIZE(num_sysctls); k++) {
		t = &num_sysctls[k];
		snprintf(path, sizeof(path), SYSCTL_DIR "/%s", t->name);
		orig = num_read(path);
		vt_assert(orig >= t->min && orig <= t->max, "%s reads %d",
			  t->name, orig);
		err = num_write(path, t->min);
		vt_assert(!err && num_read(path) == t->min,
			  "%s: writing the minimum %d: %s", t->name, t->min,
			  err ? vt_errname(err) : "does not read back");
		err = num_write(path, t->max);
		vt_assert(!err && num_read(path) == t->max,
			  "%s: writing the maximum %d: %s", t->name, t->max,
			  err ? vt_errname(err) : "does not read back");
		bad[0] = t->min - 1;
		bad[1] = t->max + 1;
		for (i = 0; i < 2; i++) {
			err = num_write(path, bad[i]);
			vt_assert(err == EINVAL && num_read(path) == t->max,
				  "%s: writing %d: %s, expected EINVAL",
				  t->name, bad[i],
				  err ? vt_errname(err) : "accepted");
		}
		vt_assert(!num_write(path, orig), "%s: restoring %d", t->name,
			  orig);
	}
	netns_run(ns_num_defaults);
}

static void sysctl_netns_dir(struct vt_ctx *c)
{
	(void)c;
	enable_require();
	netns_run(ns_dir_exists);
}

static void sysctl_netns_default(struct vt_ctx *c)
{
	int orig = enable_require();

	(void)c;
	/* A new namespace starts at 0 whatever the initial one has. */
	enable_set(1);
	netns_run(ns_reads_zero);
	enable_set(orig);
}

static void sysctl_netns_isolated(struct vt_ctx *c)
{
	int orig = enable_require();

	(void)c;
	enable_set(0);
	netns_run(ns_set_one);
	vt_assert(enable_read() == 0,
		  "setting 1 in another namespace changed this one to %d",
		  enable_read());
	enable_set(1);
	netns_run(ns_set_zero);
	vt_assert(enable_read() == 1,
		  "setting 0 in another namespace changed this one to %d",
		  enable_read());
	enable_set(orig);
}

static void sysctl_netns_reject(struct vt_ctx *c)
{
	(void)c;
	enable_require();
	netns_run(ns_reject);
}

/* ---- socket creation ---- */

static void socket_ok(int proto, int flags)
{
	int fd = socket(AF_VISOCK, SOCK_STREAM | flags, proto);

	if (fd < 0)
		vt_fail("socket(AF_VISOCK, SOCK_STREAM%s, %d): %s (%s)",
			flags ? "|flags" : "", proto, vt_errname(errno),
			strerror(errno));
	close(fd);
}

static bool have_ipv6(void)
{
	int fd = socket(AF_INET6, SOCK_STREAM, 0);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static void socket_tcp4(struct vt_ctx *c)
{
	(void)c;
	socket_ok(VISOCKPROTO_TCP4, 0);
}

static void socket_tcp6(struct vt_ctx *c)
{
	(void)c;
	if (!have_ipv6())
		vt_skip("IPv6 is disabled on this host");
	socket_ok(VISOCKPROTO_TCP6, 0);
}

static void socket_flags(struct vt_ctx *c)
{
	int fd, fl;

	(void)c;
	fd = socket(AF_VISOCK, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    VISOCKPROTO_TCP4);
	vt_assert(fd >= 0, "socket(SOCK_NONBLOCK|SOCK_CLOEXEC): %s",
		  vt_errname(errno));
	fl = fcntl(fd, F_GETFL);
	vt_assert(fl >= 0 && (fl & O_NONBLOCK), "O_NONBLOCK not set");
	fl = fcntl(fd, F_GETFD);
	vt_assert(fl >= 0 && (fl & FD_CLOEXEC), "FD_CLOEXEC not set");
	close(fd);
	fd = socket(AF_VISOCK, SOCK_STREAM, VISOCKPROTO_TCP4);
	vt_assert(fd >= 0, "socket: %s", vt_errname(errno));
	vt_assert(!(fcntl(fd, F_GETFL) & O_NONBLOCK), "O_NONBLOCK set");
	vt_assert(!(fcntl(fd, F_GETFD) & FD_CLOEXEC), "FD_CLOEXEC set");
	close(fd);
}

static void socket_fails(int type, int proto, int err, const char *what)
{
	int fd = socket(AF_VISOCK, type, proto);
	int got = errno;

	if (fd >= 0)
		close(fd);
	vt_expect_errno_at(VT_WHERE, fd, got, err, what);
}

static void socket_type_dgram(struct vt_ctx *c)
{
	(void)c;
	socket_fails(SOCK_DGRAM, 0, ESOCKTNOSUPPORT, "SOCK_DGRAM");
}

static void socket_type_seqpacket(struct vt_ctx *c)
{
	(void)c;
	socket_fails(SOCK_SEQPACKET, 0, ESOCKTNOSUPPORT, "SOCK_SEQPACKET");
}

static void socket_type_raw(struct vt_ctx *c)
{
	(void)c;
	socket_fails(SOCK_RAW, 0, ESOCKTNOSUPPORT, "SOCK_RAW");
}

static void socket_type_rdm(struct vt_ctx *c)
{
	(void)c;
	socket_fails(SOCK_RDM, 0, ESOCKTNOSUPPORT, "SOCK_RDM");
}

static void socket_bad_protocols(struct vt_ctx *c)
{
	static const int protos[] = { 2, 6, 17, 255, -1 };
	char what[64];
	size_t i;

	(void)c;
	for (i = 0; i < ARRAY_SIZE(protos); i++) {
		snprintf(what, sizeof(what), "SOCK_STREAM protocol %d",
			 protos[i]);
		socket_fails(SOCK_STREAM, protos[i], EPROTONOSUPPORT, what);
	}
}

/* ---- SOL_VISOCK options of a new socket ---- */

static void check_u32_opt(int fd, int name, const char *what, __u32 want)
{
	socklen_t len = sizeof(__u32);
	__u32 val = 0xdeadbeef;

	if (getsockopt(fd, SOL_VISOCK, name, &val, &len))
		vt_fail("getsockopt(SOL_VISOCK, %s): %s (%s)", what,
			vt_errname(errno), strerror(errno));
	vt_assert(len == sizeof(__u32), "%s: optlen %u, expected 4", what,
		  len);
	vt_assert(val == want, "%s is %u, expected %u", what, val, want);
}

static void sockopt_new_socket(int proto)
{
	int fd = socket(AF_VISOCK, SOCK_STREAM, proto);

	vt_assert(fd >= 0, "socket: %s", vt_errname(errno));
	check_u32_opt(fd, VISOCK_MODE, "VISOCK_MODE", VISOCK_MODE_INIT);
	check_u32_opt(fd, VISOCK_FALLBACK_REASON, "VISOCK_FALLBACK_REASON",
		      VISOCK_FB_NONE);
	close(fd);
}

static void sockopt_mode_init(struct vt_ctx *c)
{
	(void)c;
	sockopt_new_socket(VISOCKPROTO_TCP4);
	if (have_ipv6())
		sockopt_new_socket(VISOCKPROTO_TCP6);
}

static void sockopt_short_optlen(struct vt_ctx *c)
{
	static const int names[] = { VISOCK_MODE, VISOCK_FALLBACK_REASON };
	char what[64], buf[8];
	socklen_t len;
	int fd, ret, err, i, l;

	(void)c;
	fd = socket(AF_VISOCK, SOCK_STREAM, VISOCKPROTO_TCP4);
	vt_assert(fd >= 0, "socket: %s", vt_errname(errno));
	for (i = 0; i < 2; i++) {
		for (l = 0; l < 4; l++) {
			len = (socklen_t)l;
			ret = getsockopt(fd, SOL_VISOCK, names[i], buf, &len);
			err = errno;
			snprintf(what, sizeof(what),
				 "getsockopt(SOL_VISOCK, %d) with optlen %d",
				 names[i], l);
			vt_expect_errno_at(VT_WHERE, ret, err, EINVAL, what);
		}
	}
	close(fd);
}

/* setsockopt(SOL_VISOCK, VISOCK_TRANSFORM, @val): 0 or the errno. */
static int xform_set(int fd, int val)
{
	return setsockopt(fd, SOL_VISOCK, VISOCK_TRANSFORM, &val,
			  sizeof(val)) ? errno : 0;
}

static void xform_expect_err(int fd, int val, int want, const char *what)
{
	int err = xform_set(fd, val);

	vt_assert(err == want, "setsockopt(VISOCK_TRANSFORM, %d) %s: %s, expected %s",
		  val, what, err ? vt_errname(err) : "success",
		  vt_errname(want));
}

/*
 * VISOCK_TRANSFORM: 0 on a new socket; every pair this host can run reads
 * back (gcm-aes-128 must be one), NONE clears, unknown values and a short
 * optlen are EINVAL and change nothing; EISCONN on a listener and on
 * both ends of a connection (loopback), whose accepted end has the
 * listener's value.
 */
static void sockopt_transform(struct vt_ctx *c)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd, lfd, afd, v, err, ran = 0;
	short val16 = 1;

	(void)c;
	fd = socket(AF_VISOCK, SOCK_STREAM, VISOCKPROTO_TCP4);
	vt_assert(fd >= 0, "socket: %s", vt_errname(errno));
	check_u32_opt(fd, VISOCK_TRANSFORM, "VISOCK_TRANSFORM (new)", 0);
	for (v = 1; v <= VISOCK_XFORM_MAX; v++) {
		err = xform_set(fd, v);
		if (err == EOPNOTSUPP) {
			vt_diag("transform %d: EOPNOTSUPP (not on this host)", v);
			continue;
		}
		vt_assert(!err, "setsockopt(VISOCK_TRANSFORM, %d): %s", v,
			  vt_errname(err));
		check_u32_opt(fd, VISOCK_TRANSFORM, "VISOCK_TRANSFORM", v);
		ran++;
	}
	vt_diag("%d of %d transforms accepted", ran, VISOCK_XFORM_MAX);
	vt_assert(!xform_set(fd, VISOCK_XFORM_AES128_GCM),
		  "gcm-aes-128 refused");
	xform_expect_err(fd, VISOCK_XFORM_MAX + 1, EINVAL, "(unknown)");
	xform_expect_err(fd, -1, EINVAL, "(negative)");
	xform_expect_err(fd, 0x101, EINVAL, "(a byte of it valid)");
	vt_assert(setsockopt(fd, SOL_VISOCK, VISOCK_TRANSFORM, &val16,
			     sizeof(val16)) && errno == EINVAL,
		  "a 2-byte optlen: %s, expected EINVAL",
		  vt_errname(errno));
	check_u32_opt(fd, VISOCK_TRANSFORM, "VISOCK_TRANSFORM after EINVAL",
		      VISOCK_XFORM_AES128_GCM);
	vt_assert(!xform_set(fd, VISOCK_XFORM_NONE), "NONE refused");
	check_u32_opt(fd, VISOCK_TRANSFORM, "VISOCK_TRANSFORM after NONE", 0);

	/* A listener: set before listen(), EISCONN after, inherited. */
	lfd = socket(AF_VISOCK, SOCK_STREAM, VISOCKPROTO_TCP4);
	vt_assert(lfd >= 0, "socket: %s", vt_errname(errno));
	vt_assert(!xform_set(lfd, VISOCK_XFORM_AES256_GCM),
		  "gcm-aes-256 refused on a new socket");
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	vt_try(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), "bind");
	vt_try(listen(lfd, 4), "listen");
	xform_expect_err(lfd, VISOCK_XFORM_AES128_GCM, EISCONN,
			 "on a listener");
	check_u32_opt(lfd, VISOCK_TRANSFORM, "VISOCK_TRANSFORM (listener)",
		      VISOCK_XFORM_AES256_GCM);
	vt_try(getsockname(lfd, (struct sockaddr *)&sa, &len), "getsockname");
	vt_try(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), "connect");
	afd = vt_try(accept(lfd, NULL, NULL), "accept");
	check_u32_opt(afd, VISOCK_TRANSFORM, "VISOCK_TRANSFORM (accepted)",
		      VISOCK_XFORM_AES256_GCM);
	check_u32_opt(fd, VISOCK_TRANSFORM, "VISOCK_TRANSFORM (connected)", 0);
	xform_expect_err(fd, VISOCK_XFORM_AES128_GCM, EISCONN,
			 "after connect()");
	xform_expect_err(afd, VISOCK_XFORM_AES128_GCM, EISCONN,
			 "on an accepted socket");
	xform_expect_err(fd, VISOCK_XFORM_MAX + 1, EINVAL,
			 "(unknown, after connect())");
	check_u32_opt(fd, VISOCK_TRANSFORM, "VISOCK_TRANSFORM (connected)", 0);
	close(afd);
	close(fd);
	close(lfd);
}

static void proc_net_protocols(struct vt_ctx *c)
{
	FILE *f = fopen("/proc/net/protocols", "r");
	char line[512];
	bool found = false;

	(void)c;
	vt_assert(f, "/proc/net/protocols: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VISOCK", 6))
			found = true;
	fclose(f);
	vt_assert(found, "no line starting with VISOCK in /proc/net/protocols");
}

/* ---- helper modes for run_tests.sh ---- */

static int probe(void)
{
	int fd = socket(AF_VISOCK, SOCK_STREAM, VISOCKPROTO_TCP4);

	if (fd >= 0) {
		printf("ok\n");
		close(fd);
		return 0;
	}
	printf("%s\n", vt_errname(errno));
	return errno == EAFNOSUPPORT ? 1 : 2;
}

static int hold(int seconds)
{
	int fd = socket(AF_VISOCK, SOCK_STREAM, VISOCKPROTO_TCP4);

	if (fd < 0) {
		printf("%s\n", vt_errname(errno));
		return 1;
	}
	printf("holding\n");
	fflush(stdout);
	sleep((unsigned int)seconds);
	close(fd);
	return 0;
}

#define L(fn) { #fn, fn, NULL, 0, NULL }

static const struct vt_test tests[] = {
	L(sysctl_present),
	L(sysctl_write_valid),
	L(sysctl_reject_2),
	L(sysctl_reject_minus1),
	L(sysctl_reject_huge),
	L(sysctl_reject_text),
	L(sysctl_reject_empty),
	L(sysctl_empty_write),
	L(sysctl_ranges),
	L(sysctl_netns_dir),
	L(sysctl_netns_default),
	L(sysctl_netns_isolated),
	L(sysctl_netns_reject),
	L(socket_tcp4),
	L(socket_tcp6),
	L(socket_flags),
	L(socket_type_dgram),
	L(socket_type_seqpacket),
	L(socket_type_raw),
	L(socket_type_rdm),
	L(socket_bad_protocols),
	L(sockopt_mode_init),
	L(sockopt_short_optlen),
	L(sockopt_transform),
	L(proc_net_protocols),
};

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--probe"))
		return probe();
	if (argc == 3 && !strcmp(argv[1], "--hold"))
		return hold(atoi(argv[2]));
	return vt_main(argc, argv, "visock_basic", tests,
		       ARRAY_SIZE(tests));
}
