/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tests of the destination policy (visockctl policy, VISOCK_FB_POLICY),
 * shared by the programs of the two redirect paths: visock_preload_test
 * (LD_PRELOAD wrapper) and visock_redirect_test (inet protosw and BPF).
 * Each program says how it gets its visock sockets.
 */
#ifndef VISOCK_SELFTEST_POLICY_TESTS_H
#define VISOCK_SELFTEST_POLICY_TESTS_H

#include "harness.h"

/*
 * A new stream socket of @family as the program's path makes them, and
 * what to do before creating one (set the comm the BPF program looks at);
 * @prepare may be NULL.
 */
struct pt_ops {
	int (*socket)(int family);
	void (*prepare)(void);
};

extern const struct pt_ops *pt_ops;

/*
 * policy_netns: rules of one network namespace do not apply in another;
 * a connection to a denied destination is plain TCP with reason POLICY.
 */
void pt_netns(struct vt_ctx *c);
/*
 * policy_unpriv: without CAP_NET_ADMIN (dropped, or in a user namespace)
 * rules cannot be changed (EPERM), only listed.
 */
void pt_unpriv(struct vt_ctx *c);
/*
 * xhost_policy: between the hosts (net.visock.enable=1, RDMA works): a
 * connection to a denied port P is plain TCP with reason POLICY (getsockopt,
 * sock_diag, stats) and carries data intact, one to port Q uses RDMA;
 * deleting the rule gives P RDMA again; a subnet rule denies Q.
 */
void pt_xhost_client(struct vt_ctx *c);
void pt_xhost_server(struct vt_ctx *c);
/* The integer in the file @path (a sysctl), or -1. */
int pt_read_int(const char *path);
/*
 * Remove every rule of this namespace (cleanup after a failed test); not
 * a test itself, never fails.
 */
void pt_cleanup(void);

#endif /* VISOCK_SELFTEST_POLICY_TESTS_H */
