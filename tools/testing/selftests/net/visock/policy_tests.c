// SPDX-License-Identifier: GPL-2.0
/*
 * Destination policy tests, see policy_tests.h.  Rules are changed with
 * visockctl ($VISOCKCTL, exported by run_tests.sh), the way an operator
 * does it.
 *
 * xhost_policy, client (host a) and server (host b):
 *
 *   client: visockctl policy add deny port P
 *       connect P  ---- SYN without visock ---->  listener P (redirected)
 *                  => TCP, reason policy, data echoed intact
 *       connect Q  ---- SYN with visock ------->  listener Q
 *                  => RDMA
 *   client: visockctl policy del deny port P
 *       connect P  => RDMA
 *   client: visockctl policy add deny to <server's /24>
 *       connect Q  => TCP, reason policy
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/visock.h>

#include "ktap.h"
#include "policy_tests.h"
#include "sockutil.h"

#define ENABLE_PATH	"/proc/sys/net/visock/enable"
#define XFER_LEN	65536

const struct pt_ops *pt_ops;

static const char *ctl_path(void)
{
	const char *p = getenv("VISOCKCTL");

	if (!p || !*p)
		vt_skip("VISOCKCTL not set (visockctl not built?)");
	return p;
}

/*
 * Run "[@prefix ]visockctl @fmt..." through the shell; its output (both
 * streams) goes to @out.  Returns the exit status, -1 if it did not exit.
 */
static __printf(4, 5) int ctl_run(char *out, size_t size, const char *prefix,
				  const char *fmt, ...)
{
	char cmd[512], args[256];
	size_t n = 0;
	va_list ap;
	FILE *f;
	int st;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "%s %s %s 2>&1", prefix ? prefix : "",
		 ctl_path(), args);
	f = popen(cmd, "r");
	vt_assert(f, "popen(%s): %s", cmd, vt_errname(errno));
	if (out && size) {
		n = fread(out, 1, size - 1, f);
		out[n] = '\0';
	} else {
		char sink[256];

		while (fread(sink, 1, sizeof(sink), f) > 0)
			;
	}
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* visockctl @fmt... must succeed. */
#define ctl_ok(fmt, ...) do {						\
		char __o[1024];						\
		int __rc = ctl_run(__o, sizeof(__o), NULL, fmt, ##__VA_ARGS__); \
		vt_assert(__rc == 0, "visockctl " fmt ": exit %d: %s",	\
			  ##__VA_ARGS__, __rc, __o);			\
	} while (0)

void pt_cleanup(void)
{
	char cmd[512];
	const char *ctl = getenv("VISOCKCTL");

	/* Not ctl_run(): no vt_fail() here. */
	if (ctl && *ctl) {
		snprintf(cmd, sizeof(cmd), "%s policy flush >/dev/null 2>&1",
			 ctl);
		if (system(cmd))
			fprintf(stderr, "# visockctl policy flush failed\n");
	}
}

/* The rules of the current namespace, as "visockctl policy" lists them. */
static void policy_list(char *out, size_t size)
{
	int rc = ctl_run(out, size, NULL, "policy");

	vt_assert(rc == 0, "visockctl policy: exit %d: %s", rc, out);
}

/* "fallback_policy N" of visockctl stats. */
static long long fallback_policy_count(void)
{
	char out[4096], *p;

	vt_assert(ctl_run(out, sizeof(out), NULL, "stats") == 0,
		  "visockctl stats: %s", out);
	p = strstr(out, "fallback_policy");
	vt_assert(p, "no fallback_policy in visockctl stats");
	return strtoll(p + strlen("fallback_policy"), NULL, 10);
}

int pt_read_int(const char *path)
{
	FILE *f = fopen(path, "re");
	int v = -1;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static void write_int(const char *path, int v)
{
	FILE *f = fopen(path, "we");

	vt_assert(f, "cannot open %s: %s", path, vt_errname(errno));
	fprintf(f, "%d\n", v);
	vt_assert(!fclose(f), "cannot write %s: %s", path, vt_errname(errno));
}

static int new_sock(int family)
{
	if (pt_ops->prepare)
		pt_ops->prepare();
	return pt_ops->socket(family);
}

/* Both directions, @len bytes, checked byte for byte. */
static void echo_check(int fd, size_t len)
{
	static unsigned char out[XFER_LEN], in[XFER_LEN];
	size_t i;

	for (i = 0; i < len; i++)
		out[i] = (unsigned char)(i * 29 + (i >> 9));
	su_write_all(fd, out, len);
	su_read_all(fd, in, len);
	vt_assert(!memcmp(in, out, len), "echoed data differs");
}

/* The server half of every connection: echo XFER_LEN bytes, expect EOF. */
static void echo_serve(int fd)
{
	static unsigned char buf[XFER_LEN];

	su_read_all(fd, buf, sizeof(buf));
	su_write_all(fd, buf, sizeof(buf));
	su_expect_eof(fd);
	close(fd);
}

static int mode_of(int fd)
{
	return su_getint(fd, SOL_VISOCK, VISOCK_MODE);
}

static int reason_of(int fd)
{
	return su_getint(fd, SOL_VISOCK, VISOCK_FALLBACK_REASON);
}

/* Loopback connection in the current namespace; returns the client. */
static int loop_conn(int *sfd, int *lfd)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);
	int cfd;

	*lfd = new_sock(AF_INET);
	vt_try(bind(*lfd, (struct sockaddr *)&sin, len), "bind");
	vt_try(listen(*lfd, 4), "listen");
	vt_try(getsockname(*lfd, (struct sockaddr *)&sin, &len), "getsockname");
	cfd = new_sock(AF_INET);
	vt_try(connect(cfd, (struct sockaddr *)&sin, len), "connect");
	*sfd = su_accept(*lfd, SOCK_CLOEXEC);
	return cfd;
}

/* A loopback connection; returns its client's fallback reason. */
static int loop_reason(void)
{
	unsigned char buf[4096];
	int lfd, sfd, cfd, r;

	cfd = loop_conn(&sfd, &lfd);
	memset(buf, 0x5a, sizeof(buf));
	su_write_all(cfd, buf, sizeof(buf));
	su_read_all(sfd, buf, sizeof(buf));
	r = reason_of(cfd);
	close(cfd);
	close(sfd);
	close(lfd);
	return r;
}

void pt_netns(struct vt_ctx *c)
{
	char out[1024];
	int orig, parent_ns, r;

	(void)c;
	orig = pt_read_int(ENABLE_PATH);
	vt_assert(orig >= 0, "cannot read %s", ENABLE_PATH);
	ctl_ok("policy flush");
	ctl_ok("policy add deny to 127.0.0.0/8");
	/* This test's process is thrown away afterwards. */
	parent_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	vt_assert(parent_ns >= 0, "open /proc/self/ns/net: %s",
		  vt_errname(errno));
	if (unshare(CLONE_NEWNET))
		vt_skip("unshare(CLONE_NEWNET): %s", vt_errname(errno));
	vt_assert(system("ip link set lo up") == 0, "ip link set lo up");
	write_int(ENABLE_PATH, 1);

	/* A new namespace has no rules: the parent's rule is not here. */
	policy_list(out, sizeof(out));
	vt_assert(!strstr(out, "deny"), "new namespace has rules: %s", out);
	vt_assert(strstr(out, "default allow"), "default not allow: %s", out);
	r = loop_reason();
	vt_diag("new namespace: fallback reason %d", r);
	vt_assert(r != VISOCK_FB_POLICY,
		  "the parent's rule denied a connection in another namespace");

	/* Its own rule applies to it. */
	ctl_ok("policy add deny to 127.0.0.1/32 port 1-65535");
	r = loop_reason();
	vt_assert(r == VISOCK_FB_POLICY,
		  "own rule: fallback reason %d, want POLICY (%d)", r,
		  VISOCK_FB_POLICY);

	/* Back in the parent: its one rule, nothing of the child's. */
	vt_try(setns(parent_ns, CLONE_NEWNET), "setns(parent)");
	close(parent_ns);
	policy_list(out, sizeof(out));
	vt_assert(strstr(out, "0: deny to 127.0.0.0/8") &&
		  !strstr(out, "1:") && !strstr(out, "127.0.0.1/32"),
		  "parent's rules changed: %s", out);
	write_int(ENABLE_PATH, 1);
	r = loop_reason();
	write_int(ENABLE_PATH, orig);
	vt_assert(r == VISOCK_FB_POLICY,
		  "parent: fallback reason %d, want POLICY", r);
	ctl_ok("policy flush");
}

void pt_unpriv(struct vt_ctx *c)
{
	static const char *const how[] = {
		"setpriv --inh-caps=-net_admin --bounding-set=-net_admin",
		"unshare --user --map-root-user",
	};
	static const char *const changes[] = {
		"policy add deny port 1", "policy del index 0",
		"policy flush", "policy default deny",
	};
	char out[1024];
	size_t i, j;
	int rc;

	(void)c;
	ctl_ok("policy flush");
	ctl_ok("policy add deny port 4321");
	for (i = 0; i < ARRAY_SIZE(how); i++) {
		rc = ctl_run(out, sizeof(out), how[i], "policy list");
		if (rc == 127 || strstr(out, "not found"))
			vt_skip("%s: not available", how[i]);
		vt_assert(rc == 0 && strstr(out, "deny port 4321"),
			  "%s visockctl policy list: exit %d: %s", how[i], rc,
			  out);
		for (j = 0; j < ARRAY_SIZE(changes); j++) {
			rc = ctl_run(out, sizeof(out), how[i], "%s", changes[j]);
			vt_assert(rc == 1 && strstr(out, "permission denied"),
				  "%s visockctl %s: exit %d: %s", how[i],
				  changes[j], rc, out);
		}
		vt_diag("%s: EPERM for every change", how[i]);
	}
	policy_list(out, sizeof(out));
	vt_assert(strstr(out, "0: deny port 4321") && !strstr(out, "1:") &&
		  strstr(out, "default allow"), "rules changed: %s", out);
	ctl_ok("policy flush");
}

/* Client: connect to the server's @port, check the mode, echo, close. */
static void xhost_conn(struct vt_ctx *c, int port, bool want_rdma,
		       const char *what)
{
	struct sockaddr_storage ss;
	socklen_t len = su_peer_addr(c, false, port, &ss);
	struct visock_info vi;
	socklen_t vlen = sizeof(vi);
	char out[4096];
	int fd, mode, reason;

	fd = new_sock(AF_INET);
	vt_assert(!getsockopt(fd, SOL_VISOCK, VISOCK_MODE, &mode,
			      &(socklen_t){ sizeof(mode) }),
		  "%s: not a visock socket (redirect not active?)", what);
	vt_try(connect(fd, (struct sockaddr *)&ss, len), "connect");
	mode = mode_of(fd);
	reason = reason_of(fd);
	vt_diag("%s: port %d, mode %d, fallback reason %d", what, port, mode,
		reason);
	if (want_rdma) {
		vt_assert(mode == VISOCK_MODE_RDMA,
			  "%s: mode %d (reason %d), want RDMA", what, mode,
			  reason);
	} else {
		vt_assert(mode == VISOCK_MODE_TCP && reason == VISOCK_FB_POLICY,
			  "%s: mode %d reason %d, want TCP with POLICY (%d)",
			  what, mode, reason, VISOCK_FB_POLICY);
		vt_try(getsockopt(fd, SOL_VISOCK, VISOCK_INFO, &vi, &vlen),
		       "getsockopt(VISOCK_INFO)");
		vt_assert(!(vi.vi_flags & VISOCK_INFO_F_SYN_OPT),
			  "%s: the SYN announced visock", what);
		/* sock_diag, through visockctl sockets. */
		vt_assert(ctl_run(out, sizeof(out), NULL, "sockets --port %d",
				  port) == 0, "visockctl sockets: %s", out);
		vt_assert(strstr(out, "tcp(policy)"),
			  "%s: visockctl sockets shows no tcp(policy): %s",
			  what, out);
	}
	echo_check(fd, XFER_LEN);
	close(fd);
}

void pt_xhost_client(struct vt_ctx *c)
{
	struct sockaddr_storage ss;
	char net[INET_ADDRSTRLEN];
	long long fb0, fb1;
	struct in_addr a;
	int p, q;

	p = su_recv_port(c);
	q = su_recv_port(c);
	ctl_ok("policy flush");
	fb0 = fallback_policy_count();
	ctl_ok("policy add deny port %d", p);
	xhost_conn(c, p, false, "denied port P");
	fb1 = fallback_policy_count();
	vt_assert(fb1 == fb0 + 1, "fallback_policy counter %lld -> %lld",
		  fb0, fb1);
	xhost_conn(c, q, true, "other port Q");

	ctl_ok("policy del deny port %d", p);
	xhost_conn(c, p, true, "port P after deleting the rule");

	/* The server's /24 (a subnet rule) denies Q. */
	su_peer_addr(c, false, q, &ss);
	a = ((struct sockaddr_in *)&ss)->sin_addr;
	a.s_addr &= htonl(0xffffff00);
	inet_ntop(AF_INET, &a, net, sizeof(net));
	ctl_ok("policy add deny to %s/24", net);
	xhost_conn(c, q, false, "port Q in a denied subnet");
	ctl_ok("policy flush");
}

void pt_xhost_server(struct vt_ctx *c)
{
	int lp, lq, i;

	if (pt_ops->prepare)
		pt_ops->prepare();
	lp = su_listen(VT_FAMILY_INET, false, 4, SOCK_CLOEXEC);
	lq = su_listen(VT_FAMILY_INET, false, 4, SOCK_CLOEXEC);
	su_send_port(c, lp);
	su_send_port(c, lq);
	/* The client connects to P, Q, P, Q, one after the other. */
	for (i = 0; i < 4; i++)
		echo_serve(su_accept(i % 2 ? lq : lp, SOCK_CLOEXEC));
	close(lp);
	close(lq);
}
