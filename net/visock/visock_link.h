/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: RDMA links.
 *
 * A link is one reliable-connected queue pair to a peer, together with the
 * protection domain, completion queue and the receive ring the peer writes
 * into.  See the comment at the top of visock_link.c for the lifetime and
 * locking rules.
 */
#ifndef _NET_VISOCK_LINK_H
#define _NET_VISOCK_LINK_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/socket.h>
#include <linux/types.h>
#include <rdma/ib_verbs.h>
#include <linux/visock.h>

#include "visock_wire.h"

struct net;
struct net_device;
struct visock_link;

/*
 * Work requests the data path may have outstanding per queue (the QP has
 * one more slot in each for ib_drain_qp()), and the size of one cursor
 * message slot.
 */
#define VISOCK_LINK_SQ_DEPTH	64
#define VISOCK_LINK_RQ_DEPTH	64
#define VISOCK_LINK_CTRL_SLOT	32

/**
 * struct visock_ibdev - an RDMA device visock may use
 * @list: entry in the device list of visock_ib.c, under its
 *	visock_ibdevs_lock
 * @ibdev: the device; valid until the ib_client remove callback returns
 * @lock: protects @links and @dying.  Nests inside visock_ibdevs_lock and
 *	inside a link's own lock; never held while taking either of them
 * @links: links using @ibdev (struct visock_link.dev_node)
 * @dying: the device is being removed; no new link may attach
 *
 * Shared by visock_ib.c (discovery, owns the structure) and
 * visock_link.c (attaches links to it and kills them on removal).
 */
struct visock_ibdev {
	struct list_head list;
	struct ib_device *ibdev;
	/* Protects links, dying; inside a link's lock and visock_ibdevs_lock */
	struct mutex lock;
	struct list_head links;
	bool dying;
};

/**
 * struct visock_link_stats - snapshot of a link's counters
 * @wr_posted: work requests posted to the send queue
 * @wc_ok: completions with IB_WC_SUCCESS
 * @wc_err: completions with any other status (including flushes)
 */
struct visock_link_stats {
	u64 wr_posted;
	u64 wc_ok;
	u64 wc_err;
};

int visock_link_create(struct net *net, const struct sockaddr *local,
		       u32 rbuf_size, u8 ack_timeout,
		       struct visock_link **out);
void visock_link_local_params(const struct visock_link *l,
			      struct visock_hs_msg *m);
int visock_link_connect(struct visock_link *l,
			const struct visock_hs_msg *peer);
void visock_link_destroy(struct visock_link *l);

int visock_link_set_dead_cb(struct visock_link *l,
			    void (*dead_cb)(void *ctx), void *ctx);
bool visock_link_is_dead(const struct visock_link *l);

int visock_link_post_send(struct visock_link *l, const struct ib_send_wr *wr);
void visock_link_count_wc(struct visock_link *l, const struct ib_wc *wc);
void visock_link_get_stats(const struct visock_link *l,
			   struct visock_link_stats *st);

u32 visock_link_qpn(const struct visock_link *l);
void *visock_link_rbuf(const struct visock_link *l);
void visock_link_rbuf_sync_for_cpu(struct visock_link *l, u32 off, u32 len);
u32 visock_link_rbuf_size(const struct visock_link *l);
u64 visock_link_peer_rbuf_addr(const struct visock_link *l);
u32 visock_link_peer_rbuf_rkey(const struct visock_link *l);
u32 visock_link_peer_rbuf_size(const struct visock_link *l);

void *visock_link_sbuf(const struct visock_link *l);
void *visock_link_ctrl_slot(const struct visock_link *l, bool tx,
			    unsigned int idx);
void visock_link_ctrl_sync_rx(struct visock_link *l, unsigned int idx);
int visock_link_post_recv(struct visock_link *l, unsigned int idx,
			  struct ib_cqe *cqe);
int visock_link_post_ctrl(struct visock_link *l, unsigned int idx, u32 len,
			  struct ib_cqe *cqe);
int visock_link_post_write(struct visock_link *l, u32 off, u32 len,
			   __be32 imm, struct ib_cqe *cqe);

struct visock_diag_link;
void visock_link_diag(struct visock_link *l, struct visock_diag_link *d);

/* visock_link.c, for visock_ib.c */
void visock_link_device_removed(struct visock_ibdev *vdev);

/* visock_ib.c, for visock_link.c */
const struct ib_gid_attr *visock_ib_attach(struct net *net,
					   const union ib_gid *gid,
					   struct net_device *ndev,
					   struct list_head *link_node,
					   struct visock_ibdev **vdevp);

#endif /* _NET_VISOCK_LINK_H */
