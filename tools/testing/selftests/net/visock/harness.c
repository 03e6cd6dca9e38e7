// SPDX-License-Identifier: GPL-2.0
/*
 * Runner for the visock selftest tables: role handling, the client/server
 * session protocol, per-test child processes with a watchdog, and KTAP
 * output.
 *
 * Session protocol on the "meta" connection (client -> server):
 *
 *	HELLO <prog> <version> <family>		-> HELLO-OK <prog>
 *	BEGIN <seq> <test>			-> READY <seq> | NOTEST <seq>
 *	(client opens a new control connection: CTL <seq> -> CTL-OK <seq>,
 *	 both sides run their half of the test with that connection)
 *	END <seq> <pass|skip|fail> <reason>	<-> (both directions)
 *	QUIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "ktap.h"

#define VT_PROTO_VERSION	1
#define VT_REASON_MAX		512
#define VT_GRACE_MS		10000	/* after the peer half finished */
#define VT_MAX_PATTERNS		256

struct vt_shared {
	char reason[VT_REASON_MAX];
};

struct vt_outcome {
	enum ktap_res res;
	bool shown;		/* reason already printed by the test half */
	char reason[VT_REASON_MAX];
};

static struct {
	const char *prog;
	const struct vt_test *tests;
	size_t ntests;
	enum vt_role role;
	enum vt_family family;
	const char *peer_host;
	char peer4[INET_ADDRSTRLEN];
	const char *peer6;
	const char *bind_addr;
	int ctl_port;
	int wait_s;
	int connect_s;
	bool list;
	const char *pick[VT_MAX_PATTERNS];
	int npick;
	const char *skip[VT_MAX_PATTERNS];
	int nskip;
	bool quiet;		/* server instance of role "single" */
	bool loopback;
	bool have_ipv6;
	int meta_fd;
	int listen_fd;
	unsigned int nr;	/* KTAP result counter */
	unsigned int npass, nfail, nskipped;
} opt = {
	.ctl_port = CTL_PORT_DEFAULT,
	.wait_s = 300,
	.connect_s = 60,
	.meta_fd = -1,
	.listen_fd = -1,
};

static struct vt_shared *shared;
/* Streams verified by the current test half (vt_note_stream()). */
static struct vt_streams {
	unsigned long long n, bytes, sum_xor;
} *streams;
static struct vt_ctx *cur;
static void (*half_cleanup)(const struct vt_ctx *c);

void vt_set_cleanup(void (*fn)(const struct vt_ctx *c))
{
	half_cleanup = fn;
}

/* ---- helpers usable from tests ---- */

static const struct {
	int err;
	const char *name;
} errnames[] = {
	{ EPERM, "EPERM" }, { ENOENT, "ENOENT" }, { EINTR, "EINTR" },
	{ EIO, "EIO" }, { EBADF, "EBADF" }, { EAGAIN, "EAGAIN" },
	{ ENOMEM, "ENOMEM" }, { EACCES, "EACCES" }, { EFAULT, "EFAULT" },
	{ EBUSY, "EBUSY" }, { EEXIST, "EEXIST" }, { EINVAL, "EINVAL" },
	{ ENFILE, "ENFILE" }, { EMFILE, "EMFILE" }, { ENOSPC, "ENOSPC" },
	{ EPIPE, "EPIPE" }, { ERANGE, "ERANGE" },
	{ ENOTSOCK, "ENOTSOCK" }, { EDESTADDRREQ, "EDESTADDRREQ" },
	{ EMSGSIZE, "EMSGSIZE" }, { EPROTOTYPE, "EPROTOTYPE" },
	{ ENOPROTOOPT, "ENOPROTOOPT" },
	{ EPROTONOSUPPORT, "EPROTONOSUPPORT" },
	{ ESOCKTNOSUPPORT, "ESOCKTNOSUPPORT" },
	{ EOPNOTSUPP, "EOPNOTSUPP" }, { EPFNOSUPPORT, "EPFNOSUPPORT" },
	{ EAFNOSUPPORT, "EAFNOSUPPORT" }, { EADDRINUSE, "EADDRINUSE" },
	{ EADDRNOTAVAIL, "EADDRNOTAVAIL" }, { ENETDOWN, "ENETDOWN" },
	{ ENETUNREACH, "ENETUNREACH" }, { ECONNABORTED, "ECONNABORTED" },
	{ ECONNRESET, "ECONNRESET" }, { ENOBUFS, "ENOBUFS" },
	{ EISCONN, "EISCONN" }, { ENOTCONN, "ENOTCONN" },
	{ ETIMEDOUT, "ETIMEDOUT" }, { ECONNREFUSED, "ECONNREFUSED" },
	{ EHOSTUNREACH, "EHOSTUNREACH" }, { EALREADY, "EALREADY" },
	{ EINPROGRESS, "EINPROGRESS" }, { EPROTO, "EPROTO" },
	{ ENOTTY, "ENOTTY" }, { ESPIPE, "ESPIPE" }, { ENODEV, "ENODEV" },
};

const char *vt_errname(int err)
{
	static char buf[32];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(errnames); i++)
		if (errnames[i].err == err)
			return errnames[i].name;
	snprintf(buf, sizeof(buf), "errno %d", err);
	return buf;
}

static const char *half_tag(void)
{
	if (!cur)
		return "";
	if (cur->ctl < 0)
		return "[local] ";
	return cur->role == VT_ROLE_CLIENT ? "[client] " : "[server] ";
}

static __noreturn void
vt_finish(enum ktap_res res, const char *fmt, va_list ap)
{
	char msg[VT_REASON_MAX];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (res == KTAP_FAIL)
		ktap_diag("%s%s: FAIL: %s", half_tag(),
			  cur ? cur->test->name : "?", msg);
	if (shared)
		snprintf(shared->reason, sizeof(shared->reason), "%s", msg);
	fflush(stdout);
	_exit(res == KTAP_PASS ? 0 : res == KTAP_SKIP ? 2 : 1);
}

void vt_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vt_finish(KTAP_FAIL, fmt, ap);
}

void vt_skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vt_finish(KTAP_SKIP, fmt, ap);
}

void vt_diag(const char *fmt, ...)
{
	char msg[VT_REASON_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ktap_diag("%s%s: %s", half_tag(), cur ? cur->test->name : "?", msg);
}

void vt_note_stream(unsigned long long bytes, unsigned long long sum)
{
	if (!streams)
		return;
	__atomic_fetch_add(&streams->n, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&streams->bytes, bytes, __ATOMIC_RELAXED);
	__atomic_fetch_xor(&streams->sum_xor, sum, __ATOMIC_RELAXED);
}

void vt_expect_errno_at(const char *where, long ret, int got, int want,
			const char *what)
{
	if (ret == -1 && got == want)
		return;
	if (ret != -1)
		vt_fail("%s%s: expected %s, but it succeeded (returned %ld)",
			where, what, vt_errname(want), ret);
	vt_fail("%s%s: expected %s, got %s (%s)", where, what,
		vt_errname(want), vt_errname(got), strerror(got));
}

static __noreturn void ctl_failed(const char *what)
{
	int err = errno;

	if (err == EPROTO)
		vt_fail("control channel: %s: unexpected line \"%s\"", what,
			ctl_last_line());
	if (err == ECONNABORTED)
		vt_fail("control channel: %s: peer half ended (see its output)",
			what);
	vt_fail("control channel: %s: %s", what, strerror(err));
}

void vt_send(struct vt_ctx *c, const char *fmt, ...)
{
	char buf[CTL_LINE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (ctl_writeln(c->ctl, "%s", buf))
		ctl_failed(buf);
}

void vt_recv(struct vt_ctx *c, char *buf, size_t size)
{
	if (ctl_readln(c->ctl, buf, size, VT_CTL_TIMEOUT_MS) < 0)
		ctl_failed("receive");
}

void vt_expect(struct vt_ctx *c, const char *line)
{
	if (ctl_expectln(c->ctl, line, VT_CTL_TIMEOUT_MS))
		ctl_failed(line);
}

void vt_sync(struct vt_ctx *c, const char *tag)
{
	if (ctl_barrier(c->ctl, tag, VT_CTL_TIMEOUT_MS))
		ctl_failed(tag);
}

void vt_send_num(struct vt_ctx *c, const char *key, long long val)
{
	vt_send(c, "%s %lld", key, val);
}

long long vt_recv_num(struct vt_ctx *c, const char *key)
{
	char buf[CTL_LINE_MAX], *end;
	size_t klen = strlen(key);
	long long val;

	vt_recv(c, buf, sizeof(buf));
	if (strncmp(buf, key, klen) || buf[klen] != ' ')
		vt_fail("control channel: expected \"%s <n>\", got \"%s\"",
			key, buf);
	errno = 0;
	val = strtoll(buf + klen + 1, &end, 0);
	if (errno || *end)
		vt_fail("control channel: bad number in \"%s\"", buf);
	return val;
}

void vt_agree(struct vt_ctx *c, bool ok, const char *reason)
{
	char buf[CTL_LINE_MAX];

	if (c->ctl < 0) {
		if (!ok)
			vt_skip("%s", reason);
		return;
	}
	if (ok)
		vt_send(c, "AGREE 1");
	else
		vt_send(c, "AGREE 0 %s", reason);
	vt_recv(c, buf, sizeof(buf));
	if (strncmp(buf, "AGREE ", 6))
		vt_fail("control channel: expected AGREE, got \"%s\"", buf);
	if (!ok)
		vt_skip("%s", reason);
	if (buf[6] != '1')
		vt_skip("%s", buf[7] ? buf + 8 : "peer cannot run this test");
}

/* ---- running one test half ---- */

static const char *family_name(enum vt_family f)
{
	return f == VT_FAMILY_INET ? "inet" : "visock";
}

static void sanitize(char *s)
{
	for (; *s; s++)
		if (*s == '\n' || *s == '\r')
			*s = ' ';
}

/* Parse "END <seq> <res> <reason>" sent by the peer. */
static void parse_end(const char *line, unsigned int seq,
		      struct vt_outcome *out)
{
	char res[16] = "";
	unsigned int got;
	int n = 0;

	if (sscanf(line, "END %u %15s %n", &got, res, &n) < 2 || got != seq) {
		out->res = KTAP_FAIL;
		snprintf(out->reason, sizeof(out->reason),
			 "bad result message from peer: \"%s\"", line);
		return;
	}
	out->res = !strcmp(res, "pass") ? KTAP_PASS :
		   !strcmp(res, "skip") ? KTAP_SKIP : KTAP_FAIL;
	snprintf(out->reason, sizeof(out->reason), "%s", n ? line + n : "");
}

/*
 * Run one half of @t in a child process.  While it runs, watch @meta for
 * the peer's END line (stored in @peer_end, *got_end set): once the peer
 * half is over, ours gets VT_GRACE_MS (times the time scale) to finish.
 */
static void run_half(const struct vt_test *t, enum vt_role role, int ctl,
		     int meta, char *peer_end, size_t end_size, bool *got_end,
		     struct vt_outcome *out)
{
	unsigned int timeout = (t->timeout ? t->timeout : VT_TIMEOUT_DEFAULT) *
			       vt_time_scale;
	long long deadline, grace = -1;
	bool killed = false;
	struct vt_ctx ctx;
	int status = 0;
	siginfo_t si;
	pid_t pid;

	memset(&ctx, 0, sizeof(ctx));
	ctx.test = t;
	ctx.role = role;
	ctx.ctl = ctl;
	ctx.family = opt.family;
	ctx.loopback = opt.loopback;
	snprintf(ctx.peer, sizeof(ctx.peer), "%s", opt.peer4);
	snprintf(ctx.peer6, sizeof(ctx.peer6), "%s",
		 opt.peer6 ? opt.peer6 : "");

	shared->reason[0] = '\0';
	/* Per runner process: role "single" forks a second runner. */
	if (!streams) {
		streams = mmap(NULL, sizeof(*streams), PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (streams == MAP_FAILED)
			streams = NULL;
	}
	if (streams)
		memset(streams, 0, sizeof(*streams));
	out->res = KTAP_FAIL;
	out->shown = false;
	out->reason[0] = '\0';
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		snprintf(out->reason, sizeof(out->reason), "fork: %s",
			 strerror(errno));
		return;
	}
	if (pid == 0) {
		setpgid(0, 0);
		/* Never outlive the runner, e.g. when it is killed. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGPIPE, SIG_IGN);
		if (opt.meta_fd >= 0)
			close(opt.meta_fd);
		if (opt.listen_fd >= 0)
			close(opt.listen_fd);
		cur = &ctx;
		if (role == VT_ROLE_SERVER)
			t->run_server(&ctx);
		else
			t->run_client(&ctx);
		fflush(stdout);
		_exit(0);
	}
	setpgid(pid, pid);
	deadline = ctl_now_ms() + (long long)timeout * 1000;

	for (;;) {
		struct pollfd pfd = { .fd = meta, .events = POLLIN };
		long long now;

		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    si.si_pid == pid)
			break;
		now = ctl_now_ms();
		if (!killed && (now > deadline || (grace >= 0 && now > grace))) {
			snprintf(out->reason, sizeof(out->reason),
				 now > deadline ?
				 "timed out after %u s" :
				 "still running %u s after the peer half ended",
				 now > deadline ? timeout :
				 VT_GRACE_MS / 1000 * vt_time_scale);
			ktap_diag("%s%s: %s, killing it",
				  role == VT_ROLE_SERVER ? "[server] " :
				  ctl >= 0 ? "[client] " : "", t->name,
				  out->reason);
			kill(-pid, SIGKILL);
			killed = true;
		}
		if (meta >= 0 && !*got_end) {
			if (poll(&pfd, 1, 20) > 0) {
				if (ctl_readln(meta, peer_end, end_size,
					       5000) < 0)
					snprintf(peer_end, end_size,
						 "END 0 fail control connection lost: %s",
						 strerror(errno));
				*got_end = true;
				grace = ctl_now_ms() +
					(long long)VT_GRACE_MS * vt_time_scale;
			}
		} else {
			usleep(20000);
		}
	}
	/* Take down anything the test left behind in its process group. */
	kill(-pid, SIGKILL);
	if (waitpid(pid, &status, 0) < 0)
		status = 0;
	if (half_cleanup)
		half_cleanup(&ctx);
	if (streams && streams->n)
		ktap_diag("%s%s: checksums verified: streams %llu, bytes %llu, xor %016llx",
			  role == VT_ROLE_SERVER ? "[server] " :
			  ctl >= 0 ? "[client] " : "[local] ", t->name,
			  streams->n, streams->bytes, streams->sum_xor);
	if (killed)
		return;
	if (WIFEXITED(status)) {
		switch (WEXITSTATUS(status)) {
		case 0:
			out->res = KTAP_PASS;
			break;
		case 2:
			out->res = KTAP_SKIP;
			break;
		default:
			out->res = KTAP_FAIL;
			break;
		}
		snprintf(out->reason, sizeof(out->reason), "%s",
			 shared->reason);
		out->shown = out->res == KTAP_FAIL && out->reason[0];
		if (out->res == KTAP_FAIL && !out->reason[0])
			snprintf(out->reason, sizeof(out->reason),
				 "exit status %d", WEXITSTATUS(status));
	} else if (WIFSIGNALED(status)) {
		out->res = KTAP_FAIL;
		snprintf(out->reason, sizeof(out->reason),
			 "killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	}
	sanitize(out->reason);
}

static void combine(struct vt_outcome *mine, const struct vt_outcome *peer)
{
	char buf[VT_REASON_MAX];

	/*
	 * Worst result wins.  When both halves failed and ours only lost
	 * its control connection, the peer's reason is the interesting one.
	 */
	if (peer->res < mine->res ||
	    (peer->res == mine->res &&
	     (mine->res != KTAP_FAIL ||
	      strncmp(mine->reason, "control channel:", 16))))
		return;
	snprintf(buf, sizeof(buf), "peer: %.400s", peer->reason);
	mine->res = peer->res;
	mine->shown = false;
	snprintf(mine->reason, sizeof(mine->reason), "%s", buf);
}

static void report(const char *name, const struct vt_outcome *o)
{
	if (o->res == KTAP_PASS)
		opt.npass++;
	else if (o->res == KTAP_SKIP)
		opt.nskipped++;
	else
		opt.nfail++;
	if (opt.quiet)
		return;
	if (o->res == KTAP_FAIL && !o->shown && o->reason[0])
		ktap_diag("%s: %s", name, o->reason);
	ktap_result(++opt.nr, name, o->res, o->reason);
}

/* ---- selection ---- */

static bool is_local(const struct vt_test *t)
{
	return !t->run_server;
}

static bool selected(const struct vt_test *t)
{
	int i;

	if (opt.npick) {
		for (i = 0; i < opt.npick; i++)
			if (!fnmatch(opt.pick[i], t->name, 0))
				break;
		if (i == opt.npick)
			return false;
	}
	for (i = 0; i < opt.nskip; i++)
		if (!fnmatch(opt.skip[i], t->name, 0))
			return false;
	return true;
}

static const struct vt_test *find_test(const char *name)
{
	size_t i;

	for (i = 0; i < opt.ntests; i++)
		if (!strcmp(opt.tests[i].name, name))
			return &opt.tests[i];
	return NULL;
}

static unsigned int count_selected(bool cross_only)
{
	unsigned int n = 0;
	size_t i;

	for (i = 0; i < opt.ntests; i++)
		if (selected(&opt.tests[i]) &&
		    (!cross_only || !is_local(&opt.tests[i])))
			n++;
	return n;
}

static void run_local(const struct vt_test *t)
{
	struct vt_outcome out;
	bool dummy = false;

	run_half(t, VT_ROLE_CLIENT, -1, -1, NULL, 0, &dummy, &out);
	report(t->name, &out);
}

/* ---- client role ---- */

static int client_hello(const char *host, int port)
{
	long long deadline = ctl_now_ms() +
			     (long long)opt.connect_s * vt_time_scale * 1000;
	char want[CTL_LINE_MAX], buf[CTL_LINE_MAX];
	int fd, err = ETIMEDOUT;

	snprintf(want, sizeof(want), "HELLO-OK %s", opt.prog);
	while (ctl_now_ms() < deadline) {
		fd = ctl_connect(host, port, (int)(deadline - ctl_now_ms()));
		if (fd < 0) {
			err = errno;
			break;
		}
		if (!ctl_writeln(fd, "HELLO %s %d %s", opt.prog,
				 VT_PROTO_VERSION, family_name(opt.family)) &&
		    ctl_readln(fd, buf, sizeof(buf), 10000) >= 0) {
			if (!strcmp(buf, want))
				return fd;
			ktap_diag("server answered \"%s\", retrying", buf);
		}
		err = errno;
		close(fd);
		sleep(1);
	}
	errno = err;
	return -1;
}

static void client_cross(int meta, const char *host, int port,
			 unsigned int seq, const struct vt_test *t,
			 struct vt_outcome *out)
{
	char want[64], buf[CTL_LINE_MAX], peer_end[CTL_LINE_MAX];
	long long wait_ms;
	struct vt_outcome peer;
	bool got_end = false;
	int ctl = -1;

	out->res = KTAP_FAIL;
	out->shown = false;
	if (ctl_writeln(meta, "BEGIN %u %s", seq, t->name) ||
	    ctl_readln(meta, buf, sizeof(buf), VT_CTL_TIMEOUT_MS) < 0) {
		snprintf(out->reason, sizeof(out->reason),
			 "session with server lost: %s", strerror(errno));
		return;
	}
	snprintf(want, sizeof(want), "READY %u", seq);
	if (strcmp(buf, want)) {
		snprintf(out->reason, sizeof(out->reason),
			 "server cannot run this test (answered \"%.200s\")", buf);
		return;
	}
	ctl = ctl_connect(host, port, VT_CTL_TIMEOUT_MS);
	snprintf(want, sizeof(want), "CTL-OK %u", seq);
	if (ctl < 0 || ctl_writeln(ctl, "CTL %u", seq) ||
	    ctl_expectln(ctl, want, VT_CTL_TIMEOUT_MS)) {
		snprintf(out->reason, sizeof(out->reason),
			 "cannot open test control connection: %s",
			 strerror(errno));
		if (ctl >= 0)
			close(ctl);
		ctl = -1;
	}
	if (ctl >= 0) {
		run_half(t, VT_ROLE_CLIENT, ctl, meta, peer_end,
			 sizeof(peer_end), &got_end, out);
		close(ctl);
	}
	if (ctl_writeln(meta, "END %u %s %s", seq, ktap_res_name(out->res),
			out->reason)) {
		out->res = KTAP_FAIL;
		snprintf(out->reason, sizeof(out->reason),
			 "session with server lost: %s", strerror(errno));
		return;
	}
	wait_ms = (long long)(t->timeout ? t->timeout : VT_TIMEOUT_DEFAULT) *
		  vt_time_scale * 1000 + 60000;
	if (!got_end &&
	    ctl_readln(meta, peer_end, sizeof(peer_end), (int)wait_ms) < 0)
		snprintf(peer_end, sizeof(peer_end),
			 "END %u fail no result from server: %s", seq,
			 strerror(errno));
	parse_end(peer_end, seq, &peer);
	combine(out, &peer);
}

static int client_main(const char *host, int port)
{
	struct vt_outcome out;
	unsigned int seq = 0;
	int meta = -1, err = 0;
	size_t i;

	if (count_selected(true)) {
		meta = client_hello(host, port);
		err = errno;
		if (meta < 0)
			ktap_diag("cannot reach the %s server at %s port %d: %s",
				  opt.prog, host, port, strerror(err));
		opt.meta_fd = meta;
	}
	if (!opt.quiet)
		ktap_header(count_selected(false));
	for (i = 0; i < opt.ntests; i++) {
		const struct vt_test *t = &opt.tests[i];

		if (!selected(t))
			continue;
		if (is_local(t)) {
			run_local(t);
			continue;
		}
		if (meta < 0) {
			out.res = KTAP_FAIL;
			out.shown = false;
			snprintf(out.reason, sizeof(out.reason),
				 "no session with the server: %s",
				 strerror(err));
		} else {
			client_cross(meta, host, port, ++seq, t, &out);
		}
		report(t->name, &out);
	}
	if (meta >= 0) {
		ctl_writeln(meta, "QUIT");
		close(meta);
		opt.meta_fd = -1;
	}
	return 0;
}

/* ---- server role ---- */

static int server_hello(int lfd)
{
	long long deadline = ctl_now_ms() +
			     (long long)opt.wait_s * vt_time_scale * 1000;
	char buf[CTL_LINE_MAX], prog[64], fam[16];
	int fd, ver;

	while (ctl_now_ms() < deadline) {
		fd = ctl_accept(lfd, (int)(deadline - ctl_now_ms()));
		if (fd < 0)
			break;
		if (ctl_readln(fd, buf, sizeof(buf), 10000) >= 0 &&
		    sscanf(buf, "HELLO %63s %d %15s", prog, &ver, fam) == 3 &&
		    !strcmp(prog, opt.prog) && ver == VT_PROTO_VERSION) {
			opt.family = strcmp(fam, "inet") ? VT_FAMILY_VISOCK :
							   VT_FAMILY_INET;
			if (!ctl_writeln(fd, "HELLO-OK %s", opt.prog))
				return fd;
		} else {
			ctl_writeln(fd, "HELLO-ERR this is %s version %d",
				    opt.prog, VT_PROTO_VERSION);
		}
		close(fd);
	}
	errno = ETIMEDOUT;
	return -1;
}

/* Accept the control connection of test @seq, dropping stray ones. */
static int server_test_ctl(int lfd, unsigned int seq)
{
	long long deadline = ctl_now_ms() + VT_CTL_TIMEOUT_MS;
	char want[64], buf[CTL_LINE_MAX];
	int fd;

	snprintf(want, sizeof(want), "CTL %u", seq);
	while (ctl_now_ms() < deadline) {
		fd = ctl_accept(lfd, (int)(deadline - ctl_now_ms()));
		if (fd < 0)
			return -1;
		if (ctl_readln(fd, buf, sizeof(buf), 10000) >= 0 &&
		    !strcmp(buf, want) &&
		    !ctl_writeln(fd, "CTL-OK %u", seq))
			return fd;
		close(fd);
	}
	errno = ETIMEDOUT;
	return -1;
}

static void server_cross(int meta, int lfd, unsigned int seq,
			 const struct vt_test *t, struct vt_outcome *out)
{
	char peer_end[CTL_LINE_MAX];
	struct vt_outcome peer;
	bool got_end = false;
	long long wait_ms;
	int ctl;

	ctl = server_test_ctl(lfd, seq);
	if (ctl < 0) {
		out->res = KTAP_FAIL;
		out->shown = false;
		snprintf(out->reason, sizeof(out->reason),
			 "no test control connection from client: %s",
			 strerror(errno));
	} else {
		run_half(t, VT_ROLE_SERVER, ctl, meta, peer_end,
			 sizeof(peer_end), &got_end, out);
		close(ctl);
	}
	ctl_writeln(meta, "END %u %s %s", seq, ktap_res_name(out->res),
		    out->reason);
	wait_ms = (long long)(t->timeout ? t->timeout : VT_TIMEOUT_DEFAULT) *
		  vt_time_scale * 1000 + 60000;
	if (!got_end &&
	    ctl_readln(meta, peer_end, sizeof(peer_end), (int)wait_ms) < 0)
		snprintf(peer_end, sizeof(peer_end),
			 "END %u fail no result from client: %s", seq,
			 strerror(errno));
	parse_end(peer_end, seq, &peer);
	combine(out, &peer);
}

static int server_main(int lfd)
{
	char buf[CTL_LINE_MAX], name[256], want[64];
	bool *done = calloc(opt.ntests, sizeof(bool));
	struct vt_outcome out;
	unsigned int seq;
	int meta = -1;
	size_t i;

	if (!done)
		return 1;
	if (!opt.quiet)
		ktap_header(count_selected(false));
	/* Local tests: the client of role "single" runs them already. */
	for (i = 0; i < opt.ntests && !opt.quiet; i++) {
		if (selected(&opt.tests[i]) && is_local(&opt.tests[i])) {
			run_local(&opt.tests[i]);
			done[i] = true;
		}
	}
	if (count_selected(true)) {
		if (!opt.quiet)
			ktap_diag("%s: waiting up to %d s for the client on port %d",
				  opt.prog, opt.wait_s * (int)vt_time_scale,
				  ctl_local_port(lfd));
		meta = server_hello(lfd);
		if (meta < 0)
			ktap_diag("no client connected within %d s",
				  opt.wait_s * (int)vt_time_scale);
		else if (!opt.quiet)
			ktap_diag("client connected, family %s",
				  family_name(opt.family));
	}
	opt.meta_fd = meta;
	while (meta >= 0) {
		const struct vt_test *t;

		if (ctl_readln(meta, buf, sizeof(buf), 3600 * 1000) < 0 ||
		    !strcmp(buf, "QUIT"))
			break;
		if (sscanf(buf, "BEGIN %u %255s", &seq, name) != 2) {
			ktap_diag("unexpected line from client: \"%s\"", buf);
			break;
		}
		t = find_test(name);
		if (!t || is_local(t)) {
			ctl_writeln(meta, "NOTEST %u", seq);
			continue;
		}
		snprintf(want, sizeof(want), "READY %u", seq);
		if (ctl_writeln(meta, "%s", want))
			break;
		server_cross(meta, lfd, seq, t, &out);
		if (selected(t) && !done[t - opt.tests]) {
			done[t - opt.tests] = true;
			report(t->name, &out);
		} else if (!opt.quiet) {
			ktap_diag("client-requested test %s: %s %s", t->name,
				  ktap_res_name(out.res), out.reason);
		}
	}
	if (meta >= 0)
		close(meta);
	opt.meta_fd = -1;
	for (i = 0; i < opt.ntests; i++) {
		if (!selected(&opt.tests[i]) || done[i])
			continue;
		out.shown = false;
		if (meta < 0) {
			out.res = KTAP_FAIL;
			snprintf(out.reason, sizeof(out.reason),
				 "no client connected");
		} else {
			out.res = KTAP_SKIP;
			snprintf(out.reason, sizeof(out.reason),
				 "not requested by the client");
		}
		report(opt.tests[i].name, &out);
	}
	free(done);
	return 0;
}

/* ---- role "single": both halves on this host ---- */

static bool probe_ipv6_loopback(void)
{
	struct sockaddr_in6 sin6 = {
		.sin6_family = AF_INET6,
		.sin6_addr = IN6ADDR_LOOPBACK_INIT,
	};
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok;

	if (fd < 0)
		return false;
	ok = !bind(fd, (struct sockaddr *)&sin6, sizeof(sin6));
	close(fd);
	return ok;
}

static int single_main(void)
{
	int lfd, port, status;
	long long deadline;
	pid_t pid;

	snprintf(opt.peer4, sizeof(opt.peer4), "127.0.0.1");
	opt.peer6 = probe_ipv6_loopback() ? "::1" : NULL;
	opt.loopback = true;
	if (!count_selected(true))
		return client_main(NULL, 0);

	lfd = ctl_listen("127.0.0.1", 0);
	if (lfd < 0) {
		perror("control listener on 127.0.0.1");
		return 1;
	}
	port = ctl_local_port(lfd);
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		opt.quiet = true;
		opt.listen_fd = lfd;
		opt.wait_s = 60;
		server_main(lfd);
		fflush(stdout);
		_exit(0);
	}
	close(lfd);
	client_main("127.0.0.1", port);
	deadline = ctl_now_ms() + 30000;
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (ctl_now_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		usleep(20000);
	}
	return 0;
}

/* ---- command line ---- */

static void print_usage(FILE *f)
{
	fprintf(f,
		"usage: %s [options]\n"
		"  --role single|client|server  single: both halves on this host over\n"
		"                               loopback (default)\n"
		"  --peer ADDR        client: address of the server host (control and\n"
		"                     IPv4 data connections)\n"
		"  --peer6 ADDR       client: IPv6 address of the server host\n"
		"  --ctl-port N       control port (default %d)\n"
		"  --bind ADDR        server: address to listen on for control\n"
		"  --family visock|inet  sockets under test (inet: plain TCP, to\n"
		"                     check the tests themselves)\n"
		"  --list             list the tests and exit\n"
		"  --pick PATTERN     run only tests matching (repeatable)\n"
		"  --skip PATTERN     do not run tests matching (repeatable)\n"
		"  --wait SEC         server: wait that long for the client (300)\n"
		"  --connect-timeout SEC  client: retry connecting that long (60)\n",
		opt.prog, CTL_PORT_DEFAULT);
}

static int resolve4(const char *host, char *out, size_t size)
{
	struct addrinfo hints = { .ai_family = AF_INET,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	int ret;

	ret = getaddrinfo(host, NULL, &hints, &res);
	if (ret)
		return -1;
	inet_ntop(AF_INET, &((struct sockaddr_in *)res->ai_addr)->sin_addr,
		  out, size);
	freeaddrinfo(res);
	return 0;
}

unsigned int vt_time_scale = 1;

static void vt_read_time_scale(void)
{
	const char *env = getenv("VISOCK_TEST_TIME_SCALE");
	long v;

	if (!env || !*env)
		return;
	v = strtol(env, NULL, 10);
	if (v >= 1 && v <= 20)
		vt_time_scale = (unsigned int)v;
}

int vt_main(int argc, char **argv, const char *prog,
	    const struct vt_test *tests, size_t ntests)
{
	enum { O_ROLE = 256, O_PEER, O_PEER6, O_PORT, O_BIND, O_FAMILY,
	       O_LIST, O_PICK, O_SKIP, O_WAIT, O_CONNECT, O_HELP };
	static const struct option longopts[] = {
		{ "role", required_argument, NULL, O_ROLE },
		{ "peer", required_argument, NULL, O_PEER },
		{ "peer6", required_argument, NULL, O_PEER6 },
		{ "ctl-port", required_argument, NULL, O_PORT },
		{ "bind", required_argument, NULL, O_BIND },
		{ "family", required_argument, NULL, O_FAMILY },
		{ "list", no_argument, NULL, O_LIST },
		{ "pick", required_argument, NULL, O_PICK },
		{ "skip", required_argument, NULL, O_SKIP },
		{ "wait", required_argument, NULL, O_WAIT },
		{ "connect-timeout", required_argument, NULL, O_CONNECT },
		{ "help", no_argument, NULL, O_HELP },
		{ }
	};
	int c, lfd;
	size_t i;

	opt.prog = prog;
	opt.tests = tests;
	opt.ntests = ntests;
	setvbuf(stdout, NULL, _IOLBF, 0);
	vt_read_time_scale();

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case O_ROLE:
			if (!strcmp(optarg, "single")) {
				opt.role = VT_ROLE_SINGLE;
			} else if (!strcmp(optarg, "client")) {
				opt.role = VT_ROLE_CLIENT;
			} else if (!strcmp(optarg, "server")) {
				opt.role = VT_ROLE_SERVER;
			} else {
				print_usage(stderr);
				return 2;
			}
			break;
		case O_PEER:
			opt.peer_host = optarg;
			break;
		case O_PEER6:
			opt.peer6 = *optarg ? optarg : NULL;
			break;
		case O_PORT:
			opt.ctl_port = atoi(optarg);
			break;
		case O_BIND:
			opt.bind_addr = optarg;
			break;
		case O_FAMILY:
			if (!strcmp(optarg, "inet")) {
				opt.family = VT_FAMILY_INET;
			} else if (!strcmp(optarg, "visock")) {
				opt.family = VT_FAMILY_VISOCK;
			} else {
				print_usage(stderr);
				return 2;
			}
			break;
		case O_LIST:
			opt.list = true;
			break;
		case O_PICK:
		case O_SKIP:
			if ((c == O_PICK ? opt.npick : opt.nskip) >=
			    VT_MAX_PATTERNS) {
				fprintf(stderr, "too many patterns\n");
				return 2;
			}
			if (c == O_PICK)
				opt.pick[opt.npick++] = optarg;
			else
				opt.skip[opt.nskip++] = optarg;
			break;
		case O_WAIT:
			opt.wait_s = atoi(optarg);
			break;
		case O_CONNECT:
			opt.connect_s = atoi(optarg);
			break;
		case O_HELP:
			print_usage(stdout);
			return 0;
		default:
			print_usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		print_usage(stderr);
		return 2;
	}

	if (opt.list) {
		for (i = 0; i < ntests; i++)
			if (selected(&tests[i]))
				printf("%s\n", tests[i].name);
		return 0;
	}

	shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);

	switch (opt.role) {
	case VT_ROLE_SINGLE:
		single_main();
		break;
	case VT_ROLE_CLIENT:
		if (!opt.peer_host) {
			fprintf(stderr, "%s: --role client needs --peer\n",
				prog);
			return 2;
		}
		if (resolve4(opt.peer_host, opt.peer4, sizeof(opt.peer4)))
			ktap_diag("%s has no IPv4 address: IPv4 data tests will fail",
				  opt.peer_host);
		client_main(opt.peer_host, opt.ctl_port);
		break;
	case VT_ROLE_SERVER:
		lfd = -1;
		if (count_selected(true)) {
			lfd = ctl_listen(opt.bind_addr, opt.ctl_port);
			if (lfd < 0) {
				fprintf(stderr, "%s: control port %d: %s\n",
					prog, opt.ctl_port, strerror(errno));
				return 1;
			}
		}
		opt.listen_fd = lfd;
		server_main(lfd);
		if (lfd >= 0)
			close(lfd);
		break;
	}
	if (!opt.quiet)
		ktap_totals(prog, opt.npass, opt.nfail, opt.nskipped);
	return opt.nfail ? 1 : 0;
}
