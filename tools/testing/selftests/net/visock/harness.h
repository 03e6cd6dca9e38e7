/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Test table runner shared by the visock selftest programs.
 *
 * A program describes its tests in a table of struct vt_test.  A test
 * with only ->run_client is a local test and runs on whichever host the
 * program runs on.  A test with ->run_server as well has two halves:
 * the client role runs ->run_client and the server role ->run_server,
 * on two hosts or (role "single") in two processes of one host, both
 * halves talking over a per-test control connection (struct vt_ctx.ctl).
 *
 * Every test half runs in its own child process (and process group)
 * under a watchdog, so a crashing or hanging test cannot take the rest
 * of the run with it and descriptors/handlers never leak between tests.
 */
#ifndef VISOCK_SELFTEST_HARNESS_H
#define VISOCK_SELFTEST_HARNESS_H

#include <stdbool.h>
#include <stddef.h>

#include "ctl.h"

#define VT_TIMEOUT_DEFAULT	60	/* seconds per test half */

/*
 * Factor on the test timeouts and on su_xfer() deadlines, from
 * VISOCK_TEST_TIME_SCALE (1..20, default 1): a kernel with KASAN and
 * lockdep under emulation moves data several times slower
 * (run_tests.sh sets it there).
 */
extern unsigned int vt_time_scale;
#define VT_CTL_TIMEOUT_MS	30000	/* one control message */

enum vt_role {
	VT_ROLE_SINGLE,
	VT_ROLE_CLIENT,
	VT_ROLE_SERVER,
};

enum vt_family {
	VT_FAMILY_VISOCK,	/* AF_VISOCK sockets (the default) */
	VT_FAMILY_INET,		/* plain AF_INET/AF_INET6 TCP: checks the tests */
};

struct vt_ctx;

struct vt_test {
	const char *name;
	void (*run_client)(struct vt_ctx *c);
	void (*run_server)(struct vt_ctx *c);	/* NULL: local test */
	unsigned int timeout;			/* seconds, 0: default */
	const char *desc;
};

struct vt_ctx {
	const struct vt_test *test;
	enum vt_role role;		/* VT_ROLE_CLIENT or VT_ROLE_SERVER */
	int ctl;			/* per-test control socket, or -1 */
	enum vt_family family;
	bool loopback;			/* both halves on this host */
	char peer[128];			/* client: server's IPv4 address */
	char peer6[128];		/* client: server's IPv6 address or "" */
};

/* Run the program: parse the command line, run tests, print KTAP. */
int vt_main(int argc, char **argv, const char *prog,
	    const struct vt_test *tests, size_t ntests);

/*
 * @fn runs in the runner process after every test half on this host,
 * however the half ended (also when the watchdog killed it), before the
 * result is exchanged with the peer: the place to undo host settings a
 * test changed.  It must not call vt_fail() or the other test helpers.
 */
void vt_set_cleanup(void (*fn)(const struct vt_ctx *c));

/* Test result helpers; only valid inside a test half. */
__printf(1, 2) __noreturn void vt_fail(const char *fmt, ...);
__printf(1, 2) __noreturn void vt_skip(const char *fmt, ...);
__printf(1, 2) void vt_diag(const char *fmt, ...);

#define VT_STR2(x) #x
#define VT_STR(x) VT_STR2(x)
#define VT_WHERE __FILE__ ":" VT_STR(__LINE__) ": "

/* Fail the test with a message when @cond is false. */
#define vt_assert(cond, fmt, ...)					\
	do {								\
		if (!(cond))						\
			vt_fail(VT_WHERE fmt, ##__VA_ARGS__);		\
	} while (0)

/* Fail when a call returned -1; the message gets strerror(errno). */
#define vt_try(expr, what)						\
	({								\
		long __ret = (long)(expr);				\
		if (__ret == -1)					\
			vt_fail(VT_WHERE "%s: %s (%s)", what,		\
				vt_errname(errno), strerror(errno));	\
		__ret;							\
	})

/* Fail unless @expr evaluates to -1 with errno @err. */
#define vt_expect_errno(expr, err, what)				\
	do {								\
		long __ret = (long)(expr);				\
		int __err = errno;					\
									\
		vt_expect_errno_at(VT_WHERE, __ret, __err, err, what);	\
	} while (0)
void vt_expect_errno_at(const char *where, long ret, int got, int want,
			const char *what);

/*
 * A checksummed stream arrived whole and intact: @bytes payload bytes with
 * FNV-1a sum @sum.  The runner prints, per test half, how many did and the
 * XOR of their sums (also from processes the test forked).
 */
void vt_note_stream(unsigned long long bytes, unsigned long long sum);

/* Symbolic name of an errno value ("EAGAIN"), or "errno N". */
const char *vt_errname(int err);

/* Control channel helpers; any failure fails the test. */
__printf(2, 3) void vt_send(struct vt_ctx *c, const char *fmt, ...);
void vt_recv(struct vt_ctx *c, char *buf, size_t size);
void vt_expect(struct vt_ctx *c, const char *line);
void vt_sync(struct vt_ctx *c, const char *tag);
void vt_send_num(struct vt_ctx *c, const char *key, long long val);
long long vt_recv_num(struct vt_ctx *c, const char *key);

/*
 * Both halves state whether they can run the rest of the test; unless
 * both can, both skip with the reason given by the side that cannot.
 */
void vt_agree(struct vt_ctx *c, bool ok, const char *reason);

/* True when the client half runs (for code shared by both halves). */
static inline bool vt_is_client(const struct vt_ctx *c)
{
	return c->role == VT_ROLE_CLIENT;
}

#endif /* VISOCK_SELFTEST_HARNESS_H */
