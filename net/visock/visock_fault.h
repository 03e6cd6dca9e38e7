/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: fault injection points (test only, see visock_fault.c).
 */
#ifndef _VISOCK_FAULT_H
#define _VISOCK_FAULT_H

#include <linux/err.h>
#include <linux/jump_label.h>

struct dentry;

/*
 * The points, in the order a new connection passes them.  The names
 * (debugfs, selftests) are in visock_fault.c; append only.
 */
enum visock_fault_point {
	VISOCK_FP_CHILD_ALLOC,	/* sock of an accepted connection */
	VISOCK_FP_VC_ALLOC,	/* struct visock_vc */
	VISOCK_FP_QP_ALLOC,	/* struct visock_qp of a new link group QP */
	VISOCK_FP_PD_ALLOC,	/* ib_alloc_pd() */
	VISOCK_FP_CQ_CREATE,	/* ib_alloc_cq_any() */
	VISOCK_FP_QP_CREATE,	/* ib_create_qp() */
	VISOCK_FP_QP_INIT,	/* ib_modify_qp() to INIT */
	VISOCK_FP_CTRL_ALLOC,	/* cursor message slots of a QP */
	VISOCK_FP_POST_RECV,	/* ib_post_recv() */
	VISOCK_FP_RBUF_ALLOC,	/* ring memory */
	VISOCK_FP_RBUF_MAP,	/* ib_dma_map_sg() of a ring */
	VISOCK_FP_MR_ALLOC,	/* ib_alloc_mr() of a ring */
	VISOCK_FP_QP_RTR,	/* ib_modify_qp() to RTR */
	VISOCK_FP_QP_RTS,	/* ib_modify_qp() to RTS */
	VISOCK_FP_POST_REG,	/* ib_post_send() of ring registrations */
	VISOCK_FP_DP_ALLOC,	/* data path state */
	VISOCK_FP_POST_WRITE,	/* ib_post_send() of RDMA WRITEs */
	VISOCK_FP_POST_CTRL,	/* ib_post_send() of cursor messages */
	VISOCK_FP_VC_LINGER,	/* delay: a lingering vc was handed on */
	VISOCK_FP_QP_TEARDOWN,	/* delay: an idle QP left its namespace's list */
	VISOCK_FP_CLOSE_HANDOFF, /* delay: close() handed over to its work */
	VISOCK_FP_NR
};

/* How long a delay point (one whose step cannot fail) waits, in ms. */
#define VISOCK_FAULT_DELAY_MS	1000

DECLARE_STATIC_KEY_FALSE(visock_fault_key);

int __visock_fault(enum visock_fault_point fp);

/**
 * visock_fault() - should this step fail?
 * @fp: the fault point
 *
 * A single patched-out branch unless a point is armed through
 * /sys/kernel/debug/visock/fault/.
 *
 * Context: any context.
 * Return: 0 to go on, or the negative errno the step is to fail with.
 */
static __always_inline int visock_fault(enum visock_fault_point fp)
{
	if (static_branch_unlikely(&visock_fault_key))
		return __visock_fault(fp);
	return 0;
}

/**
 * visock_fault_ptr() - visock_fault() for steps that return a pointer
 * @fp: the fault point
 *
 * Context: any context.
 * Return: NULL to go on, or an ERR_PTR() to fail with.
 */
static __always_inline void *visock_fault_ptr(enum visock_fault_point fp)
{
	int err = visock_fault(fp);

	return err ? ERR_PTR(err) : NULL;
}

void visock_fault_debugfs_init(struct dentry *parent);
void visock_fault_exit(void);

#endif /* _VISOCK_FAULT_H */
