// SPDX-License-Identifier: GPL-2.0
/*
 * visock: fault injection points, /sys/kernel/debug/visock/fault/.
 *
 * Test only, root only, off by default.  Each verbs and resource step of
 * connection setup and the data path has a named point (enum
 * visock_fault_point); its call site asks visock_fault() and, when told
 * to fail, takes the same error path as if the step itself had failed,
 * with the errno the table below gives.
 *
 * point	(rw) name of the armed point, or "none" (the default).
 *		Writing a name arms it; "none" disarms.  While no point is
 *		armed, visock_fault() is a static branch that is never
 *		taken.
 * times	(rw) how many more faults to inject; each injected fault
 *		decrements it, at 0 the point passes again.
 * skip		(rw) hits of the armed point to let pass before the first
 *		fault (to reach the Nth work request, say).
 * injected	(r) one line per point, "<name> <faults injected>", counted
 *		since the module was loaded.
 *
 * A point whose step cannot fail delays it instead: its call site sleeps
 * VISOCK_FAULT_DELAY_MS when told to fail, to widen a race window
 * ("link_linger": visock_vc_destroy() right after it handed a lingering
 * connection to its QP; "qp_teardown": the idle work right after it took
 * its QP off the namespace's list; "close_handoff": close() of a
 * connection in RDMA mode right after it handed the rest to its close
 * work, which may then run to its end first).
 *
 * Faults hit whichever connection of any namespace reaches the point
 * first; the selftests arm a point just before the connection they mean
 * and check the count afterwards.
 */
#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/mutex.h>
#include <linux/seq_file.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "visock_fault.h"

DEFINE_STATIC_KEY_FALSE(visock_fault_key);

struct visock_fault_desc {
	const char *name;
	int err;
};

static const struct visock_fault_desc visock_fault_points[VISOCK_FP_NR] = {
	[VISOCK_FP_CHILD_ALLOC]	= { "child_alloc",	-ENOMEM },
	[VISOCK_FP_VC_ALLOC]	= { "link_alloc",	-ENOMEM },
	[VISOCK_FP_QP_ALLOC]	= { "qp_alloc",		-ENOMEM },
	[VISOCK_FP_PD_ALLOC]	= { "pd_alloc",		-ENOMEM },
	[VISOCK_FP_CQ_CREATE]	= { "cq_create",	-ENOMEM },
	[VISOCK_FP_QP_CREATE]	= { "qp_create",	-ENOMEM },
	[VISOCK_FP_QP_INIT]	= { "qp_init",		-EINVAL },
	[VISOCK_FP_CTRL_ALLOC]	= { "ctrl_alloc",	-ENOMEM },
	[VISOCK_FP_POST_RECV]	= { "post_recv",	-ENOMEM },
	[VISOCK_FP_RBUF_ALLOC]	= { "rbuf_alloc",	-ENOMEM },
	[VISOCK_FP_RBUF_MAP]	= { "rbuf_map",		-ENOMEM },
	[VISOCK_FP_MR_ALLOC]	= { "mr_alloc",		-ENOMEM },
	[VISOCK_FP_QP_RTR]	= { "qp_rtr",		-EINVAL },
	[VISOCK_FP_QP_RTS]	= { "qp_rts",		-EINVAL },
	[VISOCK_FP_POST_REG]	= { "post_reg",		-ENOMEM },
	[VISOCK_FP_DP_ALLOC]	= { "dp_alloc",		-ENOMEM },
	[VISOCK_FP_POST_WRITE]	= { "post_write",	-ENOMEM },
	[VISOCK_FP_POST_CTRL]	= { "post_ctrl",	-ENOMEM },
	[VISOCK_FP_VC_LINGER]	= { "link_linger",	-EAGAIN },
	[VISOCK_FP_QP_TEARDOWN]	= { "qp_teardown",	-EAGAIN },
	[VISOCK_FP_CLOSE_HANDOFF] = { "close_handoff",	-EAGAIN },
};

/* Serialises writers of "point" (and the static key). */
static DEFINE_MUTEX(visock_fault_lock);
static int visock_fault_armed __read_mostly = -1;
static atomic_t visock_fault_times;
static atomic_t visock_fault_skip;
static atomic64_t visock_fault_hits[VISOCK_FP_NR];

/**
 * __visock_fault() - slow path of visock_fault(), a point is armed
 * @fp: the fault point reached
 *
 * Context: any context.
 * Return: 0, or the errno of @fp if a fault is injected.
 */
int __visock_fault(enum visock_fault_point fp)
{
	if (READ_ONCE(visock_fault_armed) != fp)
		return 0;
	if (atomic_add_unless(&visock_fault_skip, -1, 0))
		return 0;
	if (!atomic_add_unless(&visock_fault_times, -1, 0))
		return 0;
	atomic64_inc(&visock_fault_hits[fp]);
	return visock_fault_points[fp].err;
}

static int visock_fault_point_show(struct seq_file *m, void *v)
{
	int fp = READ_ONCE(visock_fault_armed);

	seq_printf(m, "%s\n", fp < 0 ? "none" : visock_fault_points[fp].name);
	return 0;
}

static int visock_fault_point_open(struct inode *inode, struct file *file)
{
	return single_open(file, visock_fault_point_show, NULL);
}

static ssize_t visock_fault_point_write(struct file *file,
					const char __user *ubuf, size_t len,
					loff_t *ppos)
{
	char buf[32];
	int fp;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	strim(buf);
	if (!strcmp(buf, "none")) {
		fp = -1;
	} else {
		for (fp = 0; fp < VISOCK_FP_NR; fp++)
			if (!strcmp(buf, visock_fault_points[fp].name))
				break;
		if (fp == VISOCK_FP_NR)
			return -EINVAL;
	}

	mutex_lock(&visock_fault_lock);
	WRITE_ONCE(visock_fault_armed, fp);
	if (fp >= 0)
		static_branch_enable(&visock_fault_key);
	else
		static_branch_disable(&visock_fault_key);
	mutex_unlock(&visock_fault_lock);
	return len;
}

static const struct file_operations visock_fault_point_fops = {
	.owner		= THIS_MODULE,
	.open		= visock_fault_point_open,
	.read		= seq_read,
	.write		= visock_fault_point_write,
	.llseek		= seq_lseek,
	.release	= single_release,
};

static int visock_fault_injected_show(struct seq_file *m, void *v)
{
	int fp;

	for (fp = 0; fp < VISOCK_FP_NR; fp++)
		seq_printf(m, "%s %lld\n", visock_fault_points[fp].name,
			   (long long)atomic64_read(&visock_fault_hits[fp]));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(visock_fault_injected);

/**
 * visock_fault_debugfs_init() - create the fault/ directory
 * @parent: /sys/kernel/debug/visock (an error pointer is tolerated)
 *
 * Context: module init.
 */
void visock_fault_debugfs_init(struct dentry *parent)
{
	struct dentry *dir = debugfs_create_dir("fault", parent);

	debugfs_create_file("point", 0600, dir, NULL,
			    &visock_fault_point_fops);
	debugfs_create_atomic_t("times", 0600, dir, &visock_fault_times);
	debugfs_create_atomic_t("skip", 0600, dir, &visock_fault_skip);
	debugfs_create_file("injected", 0400, dir, NULL,
			    &visock_fault_injected_fops);
}

/**
 * visock_fault_exit() - disarm; after the debugfs files are gone
 *
 * Context: module exit.
 */
void visock_fault_exit(void)
{
	WRITE_ONCE(visock_fault_armed, -1);
	static_branch_disable(&visock_fault_key);
}
