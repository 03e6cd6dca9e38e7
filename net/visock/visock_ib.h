/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: the verbs layer (visock_ib.c): the RDMA devices visock uses,
 * and the verbs objects and state changes of a link group's queue pair
 * (struct visock_qp, in visock_lgr.h).
 */
#ifndef _NET_VISOCK_IB_H
#define _NET_VISOCK_IB_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/types.h>

struct ib_device;
struct ib_gid_attr;
struct net;
struct net_device;
struct sockaddr;
struct visock_hs_msg;
struct visock_qp;
union ib_gid;

/**
 * struct visock_ibdev - an RDMA device visock may use
 * @list: entry in the device list of visock_ib.c, under its
 *	visock_ibdevs_lock
 * @ibdev: the device; valid until the ib_client remove callback returns
 * @lock: protects @links and @dying.  Nests inside visock_ibdevs_lock and
 *	inside a QP's own lock; never held while taking either of them
 * @links: QPs using @ibdev (struct visock_qp.dev_node)
 * @dying: the device is being removed; no new QP may attach
 */
struct visock_ibdev {
	struct list_head list;
	struct ib_device *ibdev;
	/* Protects links, dying; inside a QP's lock and visock_ibdevs_lock */
	struct mutex lock;
	struct list_head links;
	bool dying;
};

/* RDMA devices */
int visock_ib_init(void);
void visock_ib_exit(void);
unsigned int visock_ib_device_count(void);
typedef int (*visock_ib_dev_fn_t)(struct ib_device *ibdev, unsigned int nlinks,
				void *arg);
int visock_ib_walk_devices(unsigned long *pos, visock_ib_dev_fn_t fn,
			   void *arg);
const struct ib_gid_attr *visock_ib_attach(struct net *net,
					   const union ib_gid *gid,
					   struct net_device *ndev,
					   struct list_head *link_node,
					   struct visock_ibdev **vdevp);

/* Queue pair verbs and state changes */
int visock_sa_to_gid(const struct sockaddr *sa, union ib_gid *gid);
int visock_qp_setup(struct visock_qp *q, const struct sockaddr *local);
int visock_qp_connect(struct visock_qp *q, const struct visock_hs_msg *peer);
void visock_qp_release_verbs(struct visock_qp *q);
void visock_qp_fail(struct visock_qp *q, int status);
void visock_qp_kill(struct visock_qp *q, const char *why);

#endif /* _NET_VISOCK_IB_H */
