// SPDX-License-Identifier: GPL-2.0
/*
 * visock: link groups - RDMA queue pairs shared by connections.
 *
 * Objects
 * -------
 * struct visock_qp owns the verbs objects of one reliable connection to a
 * peer host: a PD, a CQ (core CQ API, polled in softirq context), an RC
 * QP, the cursor message slots (receive slots for the whole QP, send
 * slots per connection index) and a pool of registered ring buffers.
 * The QPs of a namespace with the same role (client or server), local
 * GID and peer address form a link group: a client reuses one of them
 * for a new connection to the same peer as long as it is up and has
 * room, creates a new one while the group has fewer than
 * net.visock.lgr_max_links, and otherwise waits for one being set up or
 * falls back to TCP.  A server only creates QPs when a client asks for a
 * new one and attaches connections to the QP the client names.
 *
 * Whatever the groups allow, a namespace has at most
 * net.visock.lgr_peer_qps_max QPs with one peer host and lgr_qps_max in
 * all, counting every QP until it is freed (visock_lgr_qp_allowed()),
 * and the estimated memory of their queues counts against
 * net.visock.lgr_mem_max_mb together with the rings: a peer that makes
 * us create QPs and then lets them die cannot pile them up.
 *
 * struct visock_link is one connection's share of a QP: a token (slot
 * index plus random bits) the peer puts in its messages, a receive ring
 * and a send buffer from the QP's pool, the peer's ring, and the data
 * path's receive callback and dead callback.  The data path (visock_cdc.c,
 * visock_tx.c, visock_rx.c) only sees struct visock_link.
 *
 * Receive completions are dispatched by the QP: the immediate data of a
 * WRITE WITH IMMEDIATE and the token of a cursor message name the
 * connection; unknown and stale ones are dropped and counted.  Send
 * completions go straight to the data path's handlers, which end with
 * visock_link_wc_done() so that a connection is only freed once none of
 * its work requests is outstanding.
 *
 * Lifetime
 * --------
 * - A QP is referenced by its namespace's list (until the idle work or
 *   the namespace's exit takes it off), by every connection attached to
 *   it and temporarily by a device removal.  Its verbs objects are
 *   released by a kill (device removal, a stuck peer) or when it leaves
 *   the list; the structure goes with the last reference.
 * - A QP whose last connection left gets its idle work: after
 *   net.visock.lgr_idle_ms (client) or twice that plus two seconds
 *   (server; the client normally ends it first with a link message) it
 *   is taken off the list - unless a connection attached in the meantime,
 *   which the list lock orders - and destroyed.  A dead or dying QP goes
 *   at once, a retired one after its lingering connections (bounded like
 *   an idle one's).  Either end sends the delete link message before it
 *   destroys a QP that is up, so that the other takes no new connection
 *   on it.
 * - Rings go back to the pool when their connection ends, the receive
 *   ring only if the peer said it will not write any more (closed or
 *   abort flag); otherwise it and the token index stay reserved until the
 *   QP ends (quarantine), so that a late write cannot reach another
 *   connection.
 * - When the device goes away the ib_client remove callback kills each
 *   QP of the device: posting stops, the QP is drained (every request
 *   completes, flushed), verbs objects are released and every attached
 *   connection's dead_cb is called.  Memory stays until the connection
 *   and the QP are gone, so received data can still be read.
 *
 * Locks, outermost first
 * ----------------------
 *   struct visock_net.lgr_lock   mutex; the namespace's QP list, each
 *                                QP's @nconns, @listed, @dying
 *   struct visock_qp.lock        mutex; verbs objects, state, the pool,
 *                                the connection list, dead_cb
 *   visock_ibdevs_lock           mutex in visock_ib.c; the device list
 *   struct visock_ibdev.lock     mutex; a device's list of QPs
 *   struct visock_qp.conns       xarray lock (BH); the token table; held
 *                                while a receive completion is handled
 *   struct visock_dp.lock        the data path's, inside the above
 *   struct visock_qp.post_lock   spinlock (BH); whether the QP may be
 *                                posted to; innermost
 *   struct visock_net.qp_all_lock  spinlock (BH); every QP not freed yet,
 *                                for the QP caps; innermost
 * The device removal path never holds a device lock while it takes a
 * QP's lock.
 */
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/jiffies.h>
#include <linux/log2.h>
#include <linux/netdevice.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <linux/wait_bit.h>
#include <net/ipv6.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>

#include "visock_lgr.h"
#include "visock_trace.h"
#include "visock_fault.h"

static void visock_qp_free(struct kref *ref);
static void visock_qp_reap_work(struct work_struct *work);
static void visock_qp_fail(struct visock_qp *q, int status);
static void visock_qp_ka_stop(struct visock_qp *q);

/* ------------------------------------------------------------------ */
/* Completions and events                                              */
/* ------------------------------------------------------------------ */

void visock_qp_count_wc(struct visock_qp *q, const struct ib_wc *wc)
{
	if (wc->status == IB_WC_SUCCESS) {
		atomic64_inc(&q->wc_ok);
		return;
	}
	atomic64_inc(&q->wc_err);
	/*
	 * The request that broke the QP: the connections on it only see
	 * their own completions, often just the flushes that follow.
	 */
	if (wc->status != IB_WC_WR_FLUSH_ERR &&
	    !test_and_set_bit(VISOCK_QP_CAUSE_LOGGED, &q->broken))
		net_info_ratelimited("visock: QP %u: a request failed: %s (opcode %d, vendor error %u)\n",
				     q->qpn, ib_wc_status_msg(wc->status),
				     wc->opcode, wc->vendor_err);
}

static void visock_qp_msg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct visock_qp *q = container_of(wc->wr_cqe, struct visock_qp,
					   msg_cqe);

	visock_qp_count_wc(q, wc);
	complete(&q->msg_done);
}

/* A switch decline completed (visock_lgr_switch_decline()). */
static void visock_qp_sw_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct visock_qp *q = container_of(wc->wr_cqe, struct visock_qp,
					   sw_cqe);

	visock_qp_count_wc(q, wc);
	if (wc->status != IB_WC_SUCCESS)
		set_bit(VISOCK_QP_BROKEN, &q->broken);
	complete(&q->sw_done);
}

/*
 * A keepalive completed.  Not acknowledged after the transport's retries:
 * the peer is gone, and the QP with it.  A flush is the QP ending anyway.
 */
static void visock_qp_ka_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct visock_qp *q = container_of(wc->wr_cqe, struct visock_qp,
					   ka_cqe);

	visock_qp_count_wc(q, wc);
	WRITE_ONCE(q->ka_busy, false);
	if (wc->status != IB_WC_SUCCESS && wc->status != IB_WC_WR_FLUSH_ERR) {
		net_info_ratelimited("visock: QP %u: keepalive failed: %s\n",
				     q->qpn, ib_wc_status_msg(wc->status));
		visock_qp_fail(q, wc->status);
	}
}

static void visock_qp_event(struct ib_event *ev, void *ctx)
{
	u32 qpn = ev->element.qp->qp_num;

	switch (ev->event) {
	case IB_EVENT_COMM_EST:
	case IB_EVENT_SQ_DRAINED:
	case IB_EVENT_QP_LAST_WQE_REACHED:
		pr_debug("visock: QP %u: %s\n", qpn, ib_event_msg(ev->event));
		break;
	default:
		pr_warn_ratelimited("visock: QP %u: %s\n", qpn,
				    ib_event_msg(ev->event));
		break;
	}
}

/* ------------------------------------------------------------------ */
/* Receiving: one pool of requests per QP, dispatched by token         */
/* ------------------------------------------------------------------ */

static int visock_qp_post_recv(struct visock_qp *q, struct visock_qp_rx *rx)
{
	const struct ib_recv_wr *bad;
	struct ib_recv_wr wr = {};
	struct ib_sge sge;
	int err;

	wr.wr_cqe = &rx->cqe;
	wr.sg_list = &sge;
	wr.num_sge = 1;

	spin_lock_bh(&q->post_lock);
	if (q->can_post) {
		sge.addr = visock_qp_slot_dma(q, rx->idx);
		sge.length = VISOCK_LINK_CTRL_SLOT;
		sge.lkey = q->pd->local_dma_lkey;
		ib_dma_sync_single_for_device(q->ibdev, sge.addr, sge.length,
					      DMA_BIDIRECTIONAL);
		err = visock_fault(VISOCK_FP_POST_RECV) ?:
		      ib_post_recv(q->ibqp, &wr, &bad);
		if (!err)
			q->posted = true;
	} else {
		err = READ_ONCE(q->dead) ? -ENODEV : -ENOTCONN;
	}
	spin_unlock_bh(&q->post_lock);
	return err;
}

/*
 * Post receive requests up to what @nconns connections need.  Under the
 * QP's lock, process context.
 */
int visock_qp_fill_rq(struct visock_qp *q, unsigned int nconns)
{
	u32 want = min_t(u32, q->rq_size,
			 VISOCK_QP_RQ_SLACK + nconns * VISOCK_LINK_RQ_DEPTH);
	int err;

	while (q->rq_posted < want) {
		err = visock_qp_post_recv(q, &q->rx[q->rq_posted]);
		if (err)
			return err;
		q->rq_posted++;
	}
	return 0;
}

/* The first failed request: tell every connection, take no new ones. */
static void visock_qp_fail(struct visock_qp *q, int status)
{
	struct visock_rx_ev ev = { .kind = VISOCK_RX_ERR, .status = status };
	struct visock_link *l;
	unsigned long i;

	set_bit(VISOCK_QP_BROKEN, &q->broken);
	if (test_and_set_bit(VISOCK_QP_TOLD, &q->broken))
		return;
	WRITE_ONCE(q->dying, true);
	xa_lock(&q->conns);
	xa_for_each(&q->conns, i, l)
		if (!xa_is_value(l) && l->rx_fn)
			l->rx_fn(l->rx_ctx, &ev);
	xa_unlock(&q->conns);
}

/*
 * Run the idle work after @delay; a queued work holds a reference.
 * Nothing may disable idle_work (no cancel_delayed_work_sync()): a
 * disabled work makes mod_delayed_work() return false without queueing.
 * Context: any context; the caller holds a reference.
 */
static void visock_qp_queue_idle(struct visock_qp *q, unsigned long delay)
{
	kref_get(&q->ref);
	/* Already queued: that queueing holds one. */
	if (mod_delayed_work(visock_wq, &q->idle_work, delay))
		kref_put(&q->ref, visock_qp_free);
}

static void visock_qp_peer_delete(struct visock_qp *q)
{
	pr_debug("visock: QP %u: the peer ends it\n", q->qpn);
	WRITE_ONCE(q->peer_deleted, true);
	WRITE_ONCE(q->dying, true);
	/* Gone as soon as its last connection is. */
	visock_qp_queue_idle(q, 0);
}

/*
 * A receive request completed: find the connection it is for and let it
 * handle the data, then repost.  The token table's lock is held while the
 * connection's callback runs, so visock_link_destroy() can make sure that
 * none runs any more.
 *
 * Context: softirq (the CQ is polled with IB_POLL_SOFTIRQ).
 */
static void visock_qp_rx_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct visock_qp_rx *rx = container_of(wc->wr_cqe, struct visock_qp_rx,
					       cqe);
	struct visock_qp *q = rx->qp;
	struct visock_rx_ev ev = {};
	struct visock_link *l;
	u32 idx, token = 0, bytes, credits;
	bool found;
	u8 type;

	visock_qp_count_wc(q, wc);
	if (wc->status != IB_WC_SUCCESS) {
		/* Flushed or failed: the QP is in the error state. */
		visock_qp_fail(q, wc->status);
		return;
	}

	if (wc->opcode == IB_WC_RECV_RDMA_WITH_IMM &&
	    (wc->wc_flags & IB_WC_WITH_IMM)) {
		ev.kind = VISOCK_RX_DATA;
		ev.imm = be32_to_cpu(wc->ex.imm_data);
		visock_imm_decode(ev.imm, &idx, &bytes, &credits);
	} else if (wc->opcode == IB_WC_RECV &&
		   !(wc->wc_flags & IB_WC_WITH_IMM)) {
		if (q->ctrl_mapped)
			ib_dma_sync_single_for_cpu(q->ibdev,
						   visock_qp_slot_dma(q, rx->idx),
						   VISOCK_LINK_CTRL_SLOT,
						   DMA_BIDIRECTIONAL);
		ev.kind = VISOCK_RX_CTRL;
		ev.msg = visock_qp_slot(q, rx->idx);
		ev.len = wc->byte_len;
		if (visock_ctl_peek(ev.msg, ev.len, &type, &token))
			goto stale;
		if (type == VISOCK_LINK_MSG_TYPE) {
			if (token == VISOCK_LINK_MSG_DELETE)
				visock_qp_peer_delete(q);
			goto repost;
		}
		idx = token & VISOCK_TOKEN_IDX_MASK;
	} else {
		goto stale;
	}

	xa_lock(&q->conns);
	l = xa_load(&q->conns, idx);
	found = l && !xa_is_value(l) && l->rx_fn &&
		(ev.kind != VISOCK_RX_CTRL || token == l->token);
	if (found)
		l->rx_fn(l->rx_ctx, &ev);
	xa_unlock(&q->conns);
	if (found)
		goto repost;
stale:
	atomic64_inc(&q->rx_stale);
	atomic64_inc(&visock_net(q->net)->lgr_stale);
	net_dbg_ratelimited("visock: QP %u: dropped a message for no connection\n",
			    q->qpn);
repost:
	if (visock_qp_post_recv(q, rx) == -ENOMEM)
		visock_qp_fail(q, IB_WC_GENERAL_ERR);
}

/* ------------------------------------------------------------------ */
/* Setup and teardown of a QP                                          */
/* ------------------------------------------------------------------ */

/* Room for either address family; see rdma_gid2ip(). */
union visock_ipaddr {
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
};

/* Whole-union pointer, so that fortify sees the real object size. */
static struct sockaddr *visock_sa(union visock_ipaddr *a)
{
	return (struct sockaddr *)a;
}

static int visock_link_addr_to_gid(const struct sockaddr *sa,
				   union ib_gid *gid, int *ifindex)
{
	const struct sockaddr_in6 *sin6;
	const struct sockaddr_in *sin;

	*ifindex = 0;
	switch (sa->sa_family) {
	case AF_INET:
		sin = (const struct sockaddr_in *)sa;
		ipv6_addr_set_v4mapped(sin->sin_addr.s_addr,
				       (struct in6_addr *)gid);
		return 0;
	case AF_INET6:
		sin6 = (const struct sockaddr_in6 *)sa;
		memcpy(gid->raw, &sin6->sin6_addr, sizeof(gid->raw));
		if (ipv6_addr_type(&sin6->sin6_addr) & IPV6_ADDR_LINKLOCAL)
			*ifindex = sin6->sin6_scope_id;
		return 0;
	default:
		return -EAFNOSUPPORT;
	}
}

/*
 * The net device in @net holding the address of @gid, with a reference.
 * An IPv4-mapped IPv6 address (AF_INET6 socket talking IPv4) is looked up
 * as the IPv4 address it is.
 */
static struct net_device *visock_link_find_ndev(struct net *net,
						const union ib_gid *gid,
						int ifindex)
{
	struct rdma_dev_addr dev_addr = {};
	union visock_ipaddr addr;
	struct net_device *ndev;

	rdma_gid2ip(visock_sa(&addr), gid);
	dev_addr.net = net;
	dev_addr.bound_dev_if = ifindex;
	if (rdma_translate_ip(visock_sa(&addr), &dev_addr))
		return ERR_PTR(-ENODEV);
	ndev = dev_get_by_index(net, dev_addr.bound_dev_if);
	return ndev ?: ERR_PTR(-ENODEV);
}

/* ib_modify_qp(), remembering a failure of the device (see @modify_failed). */
static int visock_qp_modify(struct visock_qp *q, struct ib_qp_attr *attr,
			    int mask)
{
	int err = ib_modify_qp(q->ibqp, attr, mask);

	if (err)
		q->modify_failed = true;
	return err;
}

/*
 * Estimated bytes of a QP's queues, charged to the namespace's memory
 * limit like rings: the device's send queue (@sq requests), receive
 * queue (@rq) and completion queue (@cqe entries), each rounded up to a
 * power of two as drivers allocate them, at VISOCK_QP_*_BYTES per entry;
 * plus our cursor message slots and receive request array.
 */
static u64 visock_qp_mem_estimate(const struct visock_qp *q, u32 sq, u32 rq,
				  u32 cqe)
{
	u32 slots = rq + (q->max_conns + 1) * VISOCK_LINK_SQ_DEPTH;

	return (u64)roundup_pow_of_two(sq) * VISOCK_QP_SWQE_BYTES +
	       (u64)roundup_pow_of_two(rq) * VISOCK_QP_RWQE_BYTES +
	       (u64)roundup_pow_of_two(cqe) * VISOCK_QP_CQE_BYTES +
	       (u64)DIV_ROUND_UP(slots, VISOCK_SLOTS_PER_PAGE) * PAGE_SIZE +
	       (u64)rq * sizeof(struct visock_qp_rx);
}

/* Charge @bytes of queues to the namespace's memory limit, or -ENOBUFS. */
static int visock_qp_charge(struct visock_qp *q, u64 bytes)
{
	struct visock_net *vn = visock_net(q->net);
	u64 max = (u64)READ_ONCE(vn->lgr_mem_max_mb) << 20;

	if (atomic64_add_return(bytes, &vn->lgr_mem) > max) {
		atomic64_sub(bytes, &vn->lgr_mem);
		return -ENOBUFS;
	}
	atomic64_add(bytes, &vn->lgr_qp_mem);
	q->qp_bytes = bytes;
	return 0;
}

static int visock_qp_create_verbs(struct visock_qp *q)
{
	const struct ib_device_attr *da = &q->ibdev->attrs;
	struct ib_qp_init_attr init = {};
	struct ib_qp_attr attr = {};
	u32 sq, rq, cqe, max_wr;
	int err;

	/* One more request each for ib_drain_qp(). */
	max_wr = da->max_qp_wr > 1 ? da->max_qp_wr - 1 : 0;
	if (max_wr < VISOCK_QP_SQ_SLACK + VISOCK_LINK_SQ_DEPTH ||
	    max_wr < VISOCK_QP_RQ_SLACK + VISOCK_LINK_RQ_DEPTH)
		return -EOPNOTSUPP;
	q->max_conns = min3(q->max_conns,
			    (max_wr - VISOCK_QP_SQ_SLACK) / VISOCK_LINK_SQ_DEPTH,
			    (max_wr - VISOCK_QP_RQ_SLACK) / VISOCK_LINK_RQ_DEPTH);
	sq = VISOCK_QP_SQ_SLACK + q->max_conns * VISOCK_LINK_SQ_DEPTH;
	rq = VISOCK_QP_RQ_SLACK + q->max_conns * VISOCK_LINK_RQ_DEPTH;
	q->rq_size = rq;
	cqe = min_t(u32, sq + rq + 2, da->max_cqe);
	err = visock_qp_charge(q, visock_qp_mem_estimate(q, sq + 1, rq + 1,
							 cqe));
	if (err)
		return err;

	q->cq = visock_fault_ptr(VISOCK_FP_CQ_CREATE) ?:
		ib_alloc_cq_any(q->ibdev, q, cqe, IB_POLL_SOFTIRQ);
	if (IS_ERR(q->cq)) {
		err = PTR_ERR(q->cq);
		q->cq = NULL;
		return err;
	}

	init.event_handler = visock_qp_event;
	init.qp_context = q;
	init.send_cq = q->cq;
	init.recv_cq = q->cq;
	init.cap.max_send_wr = sq + 1;
	init.cap.max_recv_wr = rq + 1;
	init.cap.max_send_sge = VISOCK_LINK_SEND_SGE;
	init.cap.max_recv_sge = VISOCK_LINK_RECV_SGE;
	init.sq_sig_type = IB_SIGNAL_REQ_WR;
	init.qp_type = IB_QPT_RC;
	q->ibqp = visock_fault_ptr(VISOCK_FP_QP_CREATE) ?:
		  ib_create_qp(q->pd, &init);
	if (IS_ERR(q->ibqp)) {
		err = PTR_ERR(q->ibqp);
		q->ibqp = NULL;
		return err;
	}
	q->qpn = q->ibqp->qp_num;

	attr.qp_state = IB_QPS_INIT;
	attr.pkey_index = 0;
	attr.port_num = q->port;
	attr.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_LOCAL_WRITE;
	err = visock_fault(VISOCK_FP_QP_INIT);
	if (err)
		return err;
	return visock_qp_modify(q, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
				IB_QP_PORT | IB_QP_ACCESS_FLAGS);
}

/*
 * Cursor message slots, mapped for both directions: the device writes
 * received messages into the receive slots and reads the messages we
 * send from the send slots (index 0's are the QP's own, for link
 * messages).  Context: process context, under the QP's lock.
 */
static int visock_qp_ctrl_create(struct visock_qp *q)
{
	u32 slots = q->rq_size + (q->max_conns + 1) * VISOCK_LINK_SQ_DEPTH;
	unsigned int i;

	q->ctrl_npages = DIV_ROUND_UP(slots, VISOCK_SLOTS_PER_PAGE);
	q->ctrl_pages = kcalloc(q->ctrl_npages, sizeof(*q->ctrl_pages),
				GFP_KERNEL);
	q->ctrl_dma = kcalloc(q->ctrl_npages, sizeof(*q->ctrl_dma),
			      GFP_KERNEL);
	q->rx = kvcalloc(q->rq_size, sizeof(*q->rx), GFP_KERNEL);
	if (!q->ctrl_pages || !q->ctrl_dma || !q->rx ||
	    visock_fault(VISOCK_FP_CTRL_ALLOC))
		return -ENOMEM;
	for (i = 0; i < q->rq_size; i++) {
		q->rx[i].cqe.done = visock_qp_rx_done;
		q->rx[i].qp = q;
		q->rx[i].idx = i;
	}
	for (i = 0; i < q->ctrl_npages; i++) {
		q->ctrl_pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!q->ctrl_pages[i])
			return -ENOMEM;
	}
	for (i = 0; i < q->ctrl_npages; i++) {
		q->ctrl_dma[i] = ib_dma_map_page(q->ibdev, q->ctrl_pages[i], 0,
						 PAGE_SIZE, DMA_BIDIRECTIONAL);
		if (ib_dma_mapping_error(q->ibdev, q->ctrl_dma[i])) {
			while (i--)
				ib_dma_unmap_page(q->ibdev, q->ctrl_dma[i],
						  PAGE_SIZE, DMA_BIDIRECTIONAL);
			return -ENOMEM;
		}
	}
	q->ctrl_mapped = true;
	return 0;
}

/* Context: process context, under the QP's lock. */
int visock_qp_setup(struct visock_qp *q, const struct sockaddr *local)
{
	const struct ib_gid_attr *attr;
	struct ib_port_attr pattr;
	struct net_device *ndev;
	union ib_gid gid;
	int ifindex, err;

	err = visock_link_addr_to_gid(local, &gid, &ifindex);
	if (err)
		return err;
	ndev = visock_link_find_ndev(q->net, &gid, ifindex);
	if (IS_ERR(ndev))
		return PTR_ERR(ndev);
	attr = visock_ib_attach(q->net, &gid, ndev, &q->dev_node, &q->vdev);
	dev_put(ndev);
	if (IS_ERR(attr))
		return PTR_ERR(attr);
	q->sgid_attr = attr;
	q->ibdev = attr->device;
	q->port = attr->port_num;
	q->gid = gid;

	err = ib_query_port(q->ibdev, q->port, &pattr);
	if (err)
		return err;
	if (pattr.state != IB_PORT_ACTIVE)
		return -ENODEV;
	q->mtu = pattr.active_mtu;

	q->pd = visock_fault_ptr(VISOCK_FP_PD_ALLOC) ?: ib_alloc_pd(q->ibdev, 0);
	if (IS_ERR(q->pd)) {
		err = PTR_ERR(q->pd);
		q->pd = NULL;
		return err;
	}
	err = visock_qp_create_verbs(q);
	if (err)
		return err;
	q->psn = get_random_u32() & 0xffffff;
	err = visock_qp_ctrl_create(q);
	if (err)
		return err;
	spin_lock_bh(&q->post_lock);
	q->can_post = true;
	spin_unlock_bh(&q->post_lock);
	err = visock_qp_fill_rq(q, 1);
	if (err)
		return err;
	q->state = VISOCK_QP_INIT;
	return 0;
}

static void visock_qp_rbufs_release_dma(struct visock_qp *q,
					struct list_head *list)
{
	struct visock_rbuf *rb;

	list_for_each_entry(rb, list, node)
		visock_rbuf_release_dma(q, rb);
}

/*
 * Release every verbs object and detach from the device.  Idempotent.
 * Context: process context, under the QP's lock.
 */
static void visock_qp_release_verbs(struct visock_qp *q)
{
	struct visock_ibdev *vdev = q->vdev;
	struct visock_link *l;
	unsigned int i;
	bool drain;

	spin_lock_bh(&q->post_lock);
	q->can_post = false;
	drain = q->posted;
	spin_unlock_bh(&q->post_lock);

	if (q->ibqp) {
		/*
		 * Every posted request completes before the QP goes, unless
		 * the device failed a state change: it may then never flush
		 * (Soft-RoCE keeps its responder stopped when it cannot
		 * allocate for IB_QP_MAX_DEST_RD_ATOMIC), and the drain
		 * would wait for ever.  Such a QP never got to RTS: nothing
		 * but receives was posted, and they go with the QP.
		 */
		if (drain && !q->modify_failed)
			ib_drain_qp(q->ibqp);
		ib_destroy_qp(q->ibqp);
		q->ibqp = NULL;
	}
	if (q->ibdev) {
		list_for_each_entry(l, &q->links, qp_node) {
			if (l->rbuf)
				visock_rbuf_release_dma(q, l->rbuf);
			if (l->sbuf)
				visock_rbuf_release_dma(q, l->sbuf);
		}
		visock_qp_rbufs_release_dma(q, &q->pool);
		visock_qp_rbufs_release_dma(q, &q->quarantine);
	}
	if (q->ctrl_mapped) {
		for (i = 0; i < q->ctrl_npages; i++)
			ib_dma_unmap_page(q->ibdev, q->ctrl_dma[i], PAGE_SIZE,
					  DMA_BIDIRECTIONAL);
		q->ctrl_mapped = false;
	}
	if (q->cq) {
		ib_free_cq(q->cq);
		q->cq = NULL;
	}
	if (q->pd) {
		ib_dealloc_pd(q->pd);
		q->pd = NULL;
	}
	if (q->sgid_attr) {
		rdma_put_gid_attr(q->sgid_attr);
		q->sgid_attr = NULL;
	}
	q->ibdev = NULL;

	/* Last: the device's removal waits for us to leave its list. */
	if (vdev) {
		mutex_lock(&vdev->lock);
		list_del_init(&q->dev_node);
		mutex_unlock(&vdev->lock);
		q->vdev = NULL;
	}
}

static void visock_qp_free_rbufs(struct visock_qp *q, struct list_head *list)
{
	struct visock_rbuf *rb, *tmp;

	list_for_each_entry_safe(rb, tmp, list, node) {
		list_del(&rb->node);
		visock_rbuf_free(rb);
	}
}

/* The last reference: everything is released but the memory. */
static void visock_qp_free(struct kref *ref)
{
	struct visock_qp *q = container_of(ref, struct visock_qp, ref);
	struct visock_net *vn = visock_net(q->net);
	unsigned int i;

	WARN_ON_ONCE(q->ibqp || q->listed || !list_empty(&q->links));
	spin_lock_bh(&vn->qp_all_lock);
	list_del(&q->all_node);
	spin_unlock_bh(&vn->qp_all_lock);
	atomic_dec(&vn->lgr_qps_alive);
	visock_qp_free_rbufs(q, &q->pool);
	visock_qp_free_rbufs(q, &q->quarantine);
	atomic64_sub(q->reg_bytes + q->qp_bytes, &vn->lgr_mem);
	atomic64_sub(q->qp_bytes, &vn->lgr_qp_mem);
	/*
	 * The last use of @vn: the namespace's exit may free it as soon as
	 * the count drops.  wake_up_var() only hashes the address.
	 */
	if (atomic_dec_and_test(&vn->lgr_qps_alloc))
		wake_up_var(&vn->lgr_qps_alloc);
	if (q->ctrl_pages)
		for (i = 0; i < q->ctrl_npages; i++)
			if (q->ctrl_pages[i])
				__free_page(q->ctrl_pages[i]);
	kfree(q->ctrl_pages);
	kfree(q->ctrl_dma);
	kvfree(q->rx);
	xa_destroy(&q->conns);
	mutex_destroy(&q->lock);
	kfree(q);
}

/*
 * Kill a QP: release its verbs objects (draining it first) and tell its
 * connections.  Context: process context, no visock lock held.
 */
void visock_qp_kill(struct visock_qp *q, const char *why)
{
	struct visock_link *l;

	mutex_lock(&q->lock);
	visock_qp_release_verbs(q);
	if (!q->dead) {
		WRITE_ONCE(q->dead, true);
		WRITE_ONCE(q->dying, true);
		trace_visock_link_down(q->qpn, q->state == VISOCK_QP_UP, true);
		net_info_ratelimited("visock: QP %u killed: %s\n", q->qpn, why);
		list_for_each_entry(l, &q->links, qp_node)
			if (l->dead_cb)
				l->dead_cb(l->dead_ctx);
	}
	mutex_unlock(&q->lock);
	visock_qp_ka_stop(q);
	/* Connections waiting for it to come up look again. */
	wake_up_all(&visock_net(q->net)->lgr_wq);
	visock_qp_queue_idle(q, 0);
}

/* ------------------------------------------------------------------ */
/* Link groups                                                         */
/* ------------------------------------------------------------------ */

static bool visock_qp_same_group(const struct visock_qp *q, bool server,
				 const union ib_gid *gid,
				 const union ib_gid *peer_addr)
{
	return q->server == server && !memcmp(&q->gid, gid, sizeof(*gid)) &&
	       !memcmp(&q->peer_addr, peer_addr, sizeof(*peer_addr));
}

/*
 * Whether @a and @b, peer addresses as GIDs, belong to the same host as
 * far as the QP caps go: the same IPv4 address, or IPv6 addresses in the
 * same /64 (a host gets the addresses of a whole /64 for free).
 */
static bool visock_same_peer_host(const union ib_gid *a,
				  const union ib_gid *b)
{
	bool v4 = ipv6_addr_v4mapped((const struct in6_addr *)a->raw);

	if (v4 != ipv6_addr_v4mapped((const struct in6_addr *)b->raw))
		return false;
	return !memcmp(a->raw, b->raw, v4 ? sizeof(a->raw) : 8);
}

/*
 * May the namespace create one more QP with the peer at @peer_addr?
 * Every QP counts until it is freed, whatever its state: being set up,
 * up, dying, or off the list and being torn down.  The caps are
 * net.visock.lgr_peer_qps_max per peer host (visock_same_peer_host())
 * and net.visock.lgr_qps_max per namespace; 0 derives them from
 * lgr_max_links.  Context: under the namespace's lgr_lock.
 */
static bool visock_lgr_qp_allowed(struct visock_net *vn,
				  const union ib_gid *peer_addr)
{
	int links = clamp_t(int, READ_ONCE(vn->lgr_max_links), 1, 64);
	int peer_max = READ_ONCE(vn->lgr_peer_qps_max) ?:
		       VISOCK_LGR_PEER_QPS_FACTOR * links;
	int net_max = READ_ONCE(vn->lgr_qps_max) ?:
		      VISOCK_LGR_NET_QPS_FACTOR * links;
	struct visock_qp *q;
	int n = 0;

	lockdep_assert_held(&vn->lgr_lock);
	if (atomic_read(&vn->lgr_qps_alive) >= net_max)
		return false;
	spin_lock_bh(&vn->qp_all_lock);
	list_for_each_entry(q, &vn->qp_all, all_node)
		if (visock_same_peer_host(&q->peer_addr, peer_addr))
			n++;
	spin_unlock_bh(&vn->qp_all_lock);
	return n < peer_max;
}

/* A QP that can take one more connection.  Under lgr_lock. */
static bool visock_qp_has_room(const struct visock_qp *q)
{
	/* Lingering connections keep their token index. */
	return q->state == VISOCK_QP_UP && !READ_ONCE(q->dying) &&
	       !READ_ONCE(q->dead) && !test_bit(VISOCK_QP_BROKEN, &q->broken) &&
	       q->nconns + atomic_read(&q->nlinger) < q->max_conns;
}

/*
 * Lingering connections whose peer never sends its flag (it cannot: no
 * credit, or its end never got far enough; or it is broken) hold their
 * slots until the QP ends.  A client's QP that is full, and lingering
 * connections hold half of it, takes no new connection any more: it ends
 * after its last live one, taking them along, and a new QP serves the
 * group instead of the group staying full.  (A server's QP that is full
 * declines with LINK_GONE, which retires the client's QPs of the group.)
 * Context: under the namespace's lgr_lock.
 */
static bool visock_qp_retire_full(struct visock_qp *q)
{
	int linger = atomic_read(&q->nlinger);

	if (q->state != VISOCK_QP_UP || q->nconns + linger < q->max_conns ||
	    linger < max_t(int, q->max_conns / 2, 1))
		return false;
	WRITE_ONCE(q->dying, true);
	WRITE_ONCE(q->retired, true);
	atomic64_inc(&visock_net(q->net)->lgr_retired);
	return true;
}

static unsigned long visock_qp_idle_delay(const struct visock_qp *q)
{
	unsigned long d;

	/* Gone at once if no connection ever completed its handshake. */
	if (READ_ONCE(q->dying) || READ_ONCE(q->dead) ||
	    test_bit(VISOCK_QP_BROKEN, &q->broken) ||
	    q->state != VISOCK_QP_UP || !READ_ONCE(q->confirmed))
		return 0;
	d = msecs_to_jiffies(READ_ONCE(visock_net(q->net)->lgr_idle_ms));
	/* The client normally ends it first, with a link message. */
	return q->server ? 2 * d + 2 * HZ : d;
}

/* ------------------------------------------------------------------ */
/* Keepalive                                                           */
/* ------------------------------------------------------------------ */

/*
 * An idle connection, or one whose sender waits for a full ring, posts
 * nothing, so a peer that died would never be noticed.  A QP with
 * connections sends a keepalive link message every lgr_keepalive_ms; if
 * the peer does not acknowledge it within the transport's retries the
 * QP fails and its connections fail over to TCP (and reset if the peer
 * does not answer there either).  One at a time, in its own slot.
 */
/*
 * Post link message @code from QP-level send slot @slot, completing on
 * @cqe.  Under @q->lock, on a QP that is up with its slots mapped.
 * Return: 0, -ENOTCONN if the QP takes no more requests, or an error of
 * ib_post_send().
 */
static int visock_qp_post_link_msg(struct visock_qp *q, u8 code,
				   unsigned int slot, struct ib_cqe *cqe)
{
	u32 n = visock_qp_tx_slot(q, 0, slot);
	struct ib_send_wr wr = {};
	const struct ib_send_wr *bad;
	struct ib_sge sge;
	int err = -ENOTCONN;

	visock_link_msg_encode(code, visock_qp_slot(q, n),
			       VISOCK_LINK_CTRL_SLOT);
	wr.opcode = IB_WR_SEND;
	wr.send_flags = IB_SEND_SIGNALED;
	wr.wr_cqe = cqe;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	sge.addr = visock_qp_slot_dma(q, n);
	sge.length = VISOCK_CDC_LEN;
	sge.lkey = q->pd->local_dma_lkey;
	spin_lock_bh(&q->post_lock);
	if (q->can_post) {
		ib_dma_sync_single_for_device(q->ibdev, sge.addr, sge.length,
					      DMA_BIDIRECTIONAL);
		err = ib_post_send(q->ibqp, &wr, &bad);
		if (!err) {
			q->posted = true;
			atomic64_inc(&q->wr_posted);
		}
	}
	spin_unlock_bh(&q->post_lock);
	return err;
}

/**
 * visock_lgr_switch_decline() - decline a lazy connection's switch
 * @net: namespace
 * @local: local address of the connection's internal TCP socket
 * @peer: peer address of that socket
 * @sw: the client's SWITCH (its LINK TLV names our QP and its own)
 * @reason: enum visock_fallback_reason, not 0
 *
 * The server could not join the QP the client named (gone, full, out of
 * memory), so it has no place on it to answer from: the decline (a
 * switch reply without VISOCK_SWREP_F_ACCEPT) goes from the QP's own
 * send slot 2, one at a time, and is waited for.  It uses one of the
 * receive requests the client posted for its new connection.
 *
 * Only a QP of the connection's own link group qualifies (same local
 * address and peer address, as for visock_lgr_pick()): QP numbers are
 * easy to guess, and a SWITCH naming another host's QP must not make us
 * post on it.  Such a SWITCH is counted (lazy_switch_foreign).
 *
 * Context: process context, may sleep.
 * Return: 0 once the client's end acknowledged it, -ENOLINK if there is
 * no such QP that is up, or another negative errno.
 */
int visock_lgr_switch_decline(struct net *net, const struct sockaddr *local,
			      const struct sockaddr *peer,
			      const struct visock_hs_msg *sw, u32 reason)
{
	struct visock_net *vn = visock_net(net);
	struct visock_swrep r = {
		.token = sw->token,
		.reason = reason,
	};
	struct visock_qp *q, *found = NULL;
	union ib_gid gid, peer_addr;
	struct ib_send_wr wr = {};
	const struct ib_send_wr *bad;
	bool foreign = false;
	struct ib_sge sge;
	int err = -ENOLINK;
	u32 n;

	if (visock_sa_to_gid(local, &gid) || visock_sa_to_gid(peer, &peer_addr))
		return -ENOLINK;
	mutex_lock(&vn->lgr_lock);
	list_for_each_entry(q, &vn->qps, net_node) {
		if (!visock_qp_same_group(q, true, &gid, &peer_addr)) {
			foreign |= q->server && q->qpn == sw->lgr_id;
			continue;
		}
		if (q->qpn == sw->lgr_id &&
		    q->peer_qpn == sw->qpn && !READ_ONCE(q->dead)) {
			kref_get(&q->ref);
			found = q;
			break;
		}
	}
	mutex_unlock(&vn->lgr_lock);
	if (!found) {
		if (foreign)
			atomic64_inc(&vn->switch_foreign);
		return -ENOLINK;
	}
	q = found;

	mutex_lock(&q->sw_mutex);
	mutex_lock(&q->lock);
	if (q->state != VISOCK_QP_UP || q->dead || !q->ctrl_mapped ||
	    test_bit(VISOCK_QP_BROKEN, &q->broken)) {
		mutex_unlock(&q->lock);
		goto out;
	}
	n = visock_qp_tx_slot(q, 0, 2);
	err = visock_swrep_encode(&r, visock_qp_slot(q, n),
				  VISOCK_LINK_CTRL_SLOT);
	if (err < 0) {
		mutex_unlock(&q->lock);
		goto out;
	}
	reinit_completion(&q->sw_done);
	wr.opcode = IB_WR_SEND;
	wr.send_flags = IB_SEND_SIGNALED;
	wr.wr_cqe = &q->sw_cqe;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	sge.addr = visock_qp_slot_dma(q, n);
	sge.length = VISOCK_CDC_LEN;
	sge.lkey = q->pd->local_dma_lkey;
	err = -ENOTCONN;
	spin_lock_bh(&q->post_lock);
	if (q->can_post) {
		ib_dma_sync_single_for_device(q->ibdev, sge.addr, sge.length,
					      DMA_BIDIRECTIONAL);
		err = ib_post_send(q->ibqp, &wr, &bad);
		if (!err) {
			q->posted = true;
			atomic64_inc(&q->wr_posted);
		}
	}
	spin_unlock_bh(&q->post_lock);
	mutex_unlock(&q->lock);
	/* A drain before the QP goes completes it in any case. */
	if (!err && !wait_for_completion_timeout(&q->sw_done,
						 VISOCK_LINK_MSG_TIMEOUT * 5))
		err = -ETIMEDOUT;
	if (!err && test_bit(VISOCK_QP_BROKEN, &q->broken))
		err = -EIO;
out:
	mutex_unlock(&q->sw_mutex);
	kref_put(&q->ref, visock_qp_free);
	return err;
}

static void visock_qp_ka_send_locked(struct visock_qp *q)
{
	if (q->state != VISOCK_QP_UP || !q->ctrl_mapped ||
	    READ_ONCE(q->ka_busy) || test_bit(VISOCK_QP_BROKEN, &q->broken))
		return;
	/* Before posting: the completion may run at once and clear it. */
	WRITE_ONCE(q->ka_busy, true);
	if (visock_qp_post_link_msg(q, VISOCK_LINK_MSG_KEEPALIVE, 1,
				    &q->ka_cqe))
		WRITE_ONCE(q->ka_busy, false);
}

/* Under @q->lock: queue the next round unless the QP is dead. */
static void visock_qp_ka_queue_locked(struct visock_qp *q)
{
	int ms = READ_ONCE(visock_net(q->net)->lgr_keepalive_ms);

	if (q->dead)
		return;
	kref_get(&q->ref);
	/* Off: look at the sysctl again now and then. */
	if (!queue_delayed_work(visock_wq, &q->ka_work,
				msecs_to_jiffies(ms ? max(ms, 100) : 10000)))
		kref_put(&q->ref, visock_qp_free);	/* not the last */
}

static void visock_qp_ka_work(struct work_struct *work)
{
	struct visock_qp *q = container_of(to_delayed_work(work),
					   struct visock_qp, ka_work);

	mutex_lock(&q->lock);
	if (!q->dead && READ_ONCE(visock_net(q->net)->lgr_keepalive_ms) &&
	    (READ_ONCE(q->nconns) || atomic_read(&q->nlinger)))
		visock_qp_ka_send_locked(q);
	visock_qp_ka_queue_locked(q);
	mutex_unlock(&q->lock);
	kref_put(&q->ref, visock_qp_free);
}

/**
 * visock_qp_ka_start() - start the keepalive of a QP that came up
 * @q: the QP
 *
 * Context: process context, under @q->lock.
 */
void visock_qp_ka_start(struct visock_qp *q)
{
	visock_qp_ka_queue_locked(q);
}

/*
 * After @q was marked dead, outside @q->lock: a queued round holds a
 * reference; a running one sees @dead and does not queue again.
 */
static void visock_qp_ka_stop(struct visock_qp *q)
{
	if (cancel_delayed_work(&q->ka_work))
		kref_put(&q->ref, visock_qp_free);
}

/*
 * Tell the peer we are about to destroy our end of a QP; best effort.
 * Either end says so: a server's end goes early too (a connection on it
 * failed over, or none completed its handshake), and a client that went
 * on using its end would have its next connection declined with
 * LINK_GONE.  Not on a broken QP, and not back to a peer that said so
 * first: its end is going, and waiting for an acknowledgment it will not
 * send would only delay the teardown.
 */
static void visock_qp_send_delete(struct visock_qp *q)
{
	int err;

	if (test_bit(VISOCK_QP_BROKEN, &q->broken) ||
	    READ_ONCE(q->peer_deleted))
		return;
	mutex_lock(&q->lock);
	if (q->state != VISOCK_QP_UP || q->dead || !q->ctrl_mapped) {
		mutex_unlock(&q->lock);
		return;
	}
	init_completion(&q->msg_done);
	err = visock_qp_post_link_msg(q, VISOCK_LINK_MSG_DELETE, 0,
				      &q->msg_cqe);
	mutex_unlock(&q->lock);
	/* The drain before the QP is destroyed completes it in any case. */
	if (!err)
		wait_for_completion_timeout(&q->msg_done,
					    VISOCK_LINK_MSG_TIMEOUT);
}

/*
 * Destroy a QP nobody uses any more, unless a connection attached in the
 * meantime.  Context: process context (visock_wq).
 */
static void visock_qp_idle_work(struct work_struct *work)
{
	struct visock_qp *q = container_of(to_delayed_work(work),
					   struct visock_qp, idle_work);
	struct visock_net *vn = visock_net(q->net);

	mutex_lock(&vn->lgr_lock);
	if (q->nconns || !q->listed) {
		mutex_unlock(&vn->lgr_lock);
		goto out;
	}
	/*
	 * Connections that ended before the peer closed its side linger:
	 * the peer still sends on the QP (its closed flag, which reaps
	 * them, and waits for that to complete).  Destroying the QP now
	 * would leave those requests to the transport's retries; wait for
	 * them a while, unless the QP is of no use anyway.  A retired QP is
	 * healthy: its last connections' peers are still sending.
	 */
	if (atomic_read(&q->nlinger) && READ_ONCE(q->confirmed) &&
	    (!READ_ONCE(q->dying) || READ_ONCE(q->retired)) &&
	    !READ_ONCE(q->peer_deleted) && !READ_ONCE(q->dead) &&
	    !test_bit(VISOCK_QP_BROKEN, &q->broken) &&
	    time_before(jiffies, READ_ONCE(q->linger_last) +
				 VISOCK_LINGER_MAX)) {
		mutex_unlock(&vn->lgr_lock);
		visock_qp_queue_idle(q, VISOCK_LINGER_CHECK);
		goto out;
	}
	list_del_init(&q->net_node);
	q->listed = false;
	WRITE_ONCE(q->dying, true);
	/* Counted as it leaves the "qps" gauge. */
	atomic64_inc(&vn->lgr_qps_destroyed);
	mutex_unlock(&vn->lgr_lock);

	if (visock_fault(VISOCK_FP_QP_TEARDOWN))
		msleep(VISOCK_FAULT_DELAY_MS);
	visock_qp_send_delete(q);
	mutex_lock(&q->lock);
	trace_visock_link_down(q->qpn, q->state == VISOCK_QP_UP, false);
	visock_qp_release_verbs(q);
	WRITE_ONCE(q->dead, true);
	mutex_unlock(&q->lock);
	visock_qp_ka_stop(q);
	visock_qp_reap(q, true);
	flush_work(&q->reap_work);
	kref_put(&q->ref, visock_qp_free);	/* the list's */
out:
	kref_put(&q->ref, visock_qp_free);	/* the queueing's */
}

/* A new QP, listed and reserved for its first connection. */
static struct visock_qp *visock_qp_new(struct visock_net *vn, struct net *net,
				       bool server, const union ib_gid *gid,
				       const union ib_gid *peer_addr,
				       u8 ack_timeout)
{
	struct visock_qp *q;

	if (visock_fault(VISOCK_FP_QP_ALLOC))
		return NULL;
	q = kzalloc(sizeof(*q), GFP_KERNEL);
	if (!q)
		return NULL;
	atomic_inc(&vn->lgr_qps_alloc);
	kref_init(&q->ref);		/* the list's */
	mutex_init(&q->lock);
	spin_lock_init(&q->post_lock);
	INIT_LIST_HEAD(&q->dev_node);
	INIT_LIST_HEAD(&q->net_node);
	INIT_LIST_HEAD(&q->all_node);
	INIT_LIST_HEAD(&q->links);
	INIT_LIST_HEAD(&q->pool);
	INIT_LIST_HEAD(&q->quarantine);
	INIT_DELAYED_WORK(&q->idle_work, visock_qp_idle_work);
	INIT_DELAYED_WORK(&q->ka_work, visock_qp_ka_work);
	q->ka_cqe.done = visock_qp_ka_done;
	INIT_WORK(&q->reap_work, visock_qp_reap_work);
	init_completion(&q->msg_done);
	q->msg_cqe.done = visock_qp_msg_done;
	mutex_init(&q->sw_mutex);
	init_completion(&q->sw_done);
	q->sw_cqe.done = visock_qp_sw_done;
	xa_init_flags(&q->conns, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_BH);
	q->net = net;
	q->server = server;
	q->gid = *gid;
	q->peer_addr = *peer_addr;
	q->ack_timeout = ack_timeout;
	q->max_conns = clamp_t(int, READ_ONCE(vn->lgr_link_conns), 1,
			       VISOCK_LGR_CONNS_MAX);
	q->state = VISOCK_QP_NEW;
	atomic64_set(&q->wr_posted, 0);
	atomic64_set(&q->wc_ok, 0);
	atomic64_set(&q->wc_err, 0);
	atomic64_set(&q->rx_stale, 0);
	return q;
}

/**
 * visock_lgr_peer_up() - could a new connection to @peer join a QP now
 * @net: namespace of the connection
 * @peer: the peer's address (sockaddr_in or sockaddr_in6)
 * @len: its length
 *
 * For the lazy start (visock/lazy-switch.rst): true if one of our QPs to
 * @peer, set up by our side (client role), is up, confirmed and has room,
 * so that a connection started on TCP can move to it later without
 * creating one.  A hint: the QP may be gone by the time the connection
 * switches, which then declines and stays on TCP.
 *
 * Context: process context, may sleep (takes the namespace's lgr_lock).
 * Return: true if such a QP exists now.
 */
bool visock_lgr_peer_up(struct net *net, const struct sockaddr *peer,
			int len)
{
	struct visock_net *vn = visock_net(net);
	union ib_gid peer_addr;
	struct visock_qp *q;
	bool up = false;

	if (len < (int)sizeof(struct sockaddr_in) ||
	    (peer->sa_family == AF_INET6 &&
	     len < (int)sizeof(struct sockaddr_in6)) ||
	    visock_sa_to_gid(peer, &peer_addr))
		return false;
	mutex_lock(&vn->lgr_lock);
	list_for_each_entry(q, &vn->qps, net_node) {
		if (q->server || !READ_ONCE(q->confirmed) ||
		    memcmp(&q->peer_addr, &peer_addr, sizeof(peer_addr)))
			continue;
		if (visock_qp_has_room(q) && !visock_qp_retire_full(q)) {
			up = true;
			break;
		}
	}
	mutex_unlock(&vn->lgr_lock);
	return up;
}

/*
 * Choose the QP for a new connection and reserve a place on it (@nconns),
 * with a reference.  Sets *@created if the QP is new: the caller sets it
 * up.  Context: process context.
 * Return: the QP, or ERR_PTR(-EINPROGRESS) (client: wait for a QP being
 * set up), -EBUSY (the group is full), -EDQUOT (a QP cap is reached, see
 * visock_lgr_qp_allowed()), -ENOLINK (server: the QP the client named is
 * gone), -EBADMSG (server: the GID in the client's message is not the
 * address of its TCP connection) or -ENOMEM.
 */
struct visock_qp *visock_lgr_pick(const struct visock_link_params *p,
				  const union ib_gid *gid,
				  const union ib_gid *peer_addr, bool *created)
{
	struct visock_net *vn = visock_net(p->net);
	const struct visock_hs_msg *req = p->req;
	bool server = req;
	struct visock_qp *q, *best = NULL;
	unsigned int in_group = 0, max_links;
	bool pending = false;

	*created = false;
	/*
	 * The QP would connect to the GID the client names: it must be the
	 * client's own address, or any host could point our QPs at a
	 * third one.
	 */
	if (server && memcmp(req->gid, peer_addr->raw, sizeof(req->gid))) {
		atomic64_inc(&vn->lgr_gid_mismatch);
		return ERR_PTR(-EBADMSG);
	}
	max_links = clamp_t(int, READ_ONCE(vn->lgr_max_links), 1, 64);
	mutex_lock(&vn->lgr_lock);
	list_for_each_entry(q, &vn->qps, net_node) {
		if (!visock_qp_same_group(q, server, gid, peer_addr))
			continue;
		if (server && req->lgr_id) {
			if (q->qpn == req->lgr_id && q->peer_qpn == req->qpn &&
			    visock_qp_has_room(q))
				best = q;
			continue;
		}
		/* QPs on their way out do not count against the limit. */
		if (READ_ONCE(q->dying) || READ_ONCE(q->dead))
			continue;
		if (!server && visock_qp_retire_full(q))
			continue;
		in_group++;
		if (server)
			continue;
		if (q->state == VISOCK_QP_NEW || q->state == VISOCK_QP_INIT)
			pending |= !READ_ONCE(q->dying);
		if (visock_qp_has_room(q) &&
		    (!best || q->nconns < best->nconns))
			best = q;
	}
	if (!best && server && req->lgr_id) {
		best = ERR_PTR(-ENOLINK);
	} else if (!best) {
		/*
		 * A server keeps a few more than the client may want: QPs
		 * the client gave up without telling us end by idling.
		 */
		if (in_group >= (server ? 2 * max_links : max_links)) {
			best = ERR_PTR(pending ? -EINPROGRESS : -EBUSY);
		} else if (!visock_lgr_qp_allowed(vn, peer_addr)) {
			atomic64_inc(&vn->lgr_qps_capped);
			best = ERR_PTR(-EDQUOT);
		} else {
			best = visock_qp_new(vn, p->net, server, gid, peer_addr,
					     p->ack_timeout);
			if (!best)
				best = ERR_PTR(-ENOMEM);
		}
		if (!IS_ERR(best)) {
			*created = true;
			best->listed = true;
			list_add_tail(&best->net_node, &vn->qps);
			spin_lock_bh(&vn->qp_all_lock);
			list_add_tail(&best->all_node, &vn->qp_all);
			spin_unlock_bh(&vn->qp_all_lock);
			atomic_inc(&vn->lgr_qps_alive);
			atomic64_inc(&vn->lgr_qps_created);
		}
	}
	if (!IS_ERR(best)) {
		best->nconns++;
		kref_get(&best->ref);
		/* Not idle any more; the list's reference stays. */
		if (cancel_delayed_work(&best->idle_work))
			kref_put(&best->ref, visock_qp_free);
	}
	mutex_unlock(&vn->lgr_lock);
	return best;
}

/*
 * Give back the place visock_lgr_pick() reserved, and the reference if
 * @put (a lingering connection keeps it).
 */
void visock_lgr_unpick(struct visock_qp *q, bool put)
{
	struct visock_net *vn = visock_net(q->net);

	mutex_lock(&vn->lgr_lock);
	if (!--q->nconns && q->listed)
		visock_qp_queue_idle(q, visock_qp_idle_delay(q));
	mutex_unlock(&vn->lgr_lock);
	if (put)
		kref_put(&q->ref, visock_qp_free);
}

/* ------------------------------------------------------------------ */
/* Rings from the pool                                                 */
/* ------------------------------------------------------------------ */

/*
 * A ring of @size bytes for direction @dir: a registered one from the
 * pool, else a new one (registered later by visock_link_connect()).
 * Context: process context, under the QP's lock.
 */
int visock_qp_get_rbuf(struct visock_qp *q, u32 size,
		       enum dma_data_direction dir, struct visock_rbuf **out)
{
	struct visock_net *vn = visock_net(q->net);
	struct visock_rbuf *rb;
	u64 max;
	int err;

	lockdep_assert_held(&q->lock);
	*out = NULL;
	list_for_each_entry(rb, &q->pool, node) {
		if (rb->size == size && rb->dir == dir && rb->registered) {
			list_del_init(&rb->node);
			*out = rb;
			return 0;
		}
	}
	max = (u64)READ_ONCE(vn->lgr_mem_max_mb) << 20;
	if (atomic64_add_return(size, &vn->lgr_mem) > max) {
		atomic64_sub(size, &vn->lgr_mem);
		/* Make room: pooled rings nobody asked for go first. */
		rb = list_first_entry_or_null(&q->pool, struct visock_rbuf,
					      node);
		if (!rb)
			return -ENOBUFS;
		list_del(&rb->node);
		q->reg_bytes -= rb->size;
		atomic64_sub(rb->size, &vn->lgr_mem);
		visock_rbuf_release_dma(q, rb);
		visock_rbuf_free(rb);
		if (atomic64_add_return(size, &vn->lgr_mem) > max) {
			atomic64_sub(size, &vn->lgr_mem);
			return -ENOBUFS;
		}
	}
	q->reg_bytes += size;
	err = visock_rbuf_create(q, size, dir, out);
	if (err && *out) {
		visock_rbuf_release_dma(q, *out);
		visock_rbuf_free(*out);
		*out = NULL;
	}
	if (err) {
		q->reg_bytes -= size;
		atomic64_sub(size, &vn->lgr_mem);
	}
	return err;
}

/*
 * Give a ring back: to the pool if it is registered and may be reused,
 * to the quarantine if the peer may still write to it, else free it.
 * Context: process context, under the QP's lock.
 */
void visock_qp_put_rbuf(struct visock_qp *q, struct visock_rbuf *rb,
			bool reusable)
{
	struct visock_net *vn = visock_net(q->net);

	lockdep_assert_held(&q->lock);
	if (!rb)
		return;
	if (q->dead || !rb->registered || !rb->mr) {
		visock_rbuf_release_dma(q, rb);
		q->reg_bytes -= rb->size;
		atomic64_sub(rb->size, &vn->lgr_mem);
		visock_rbuf_free(rb);
	} else {
		list_add(&rb->node, reusable ? &q->pool : &q->quarantine);
	}
}

/* ------------------------------------------------------------------ */
/* Connections                                                         */
/* ------------------------------------------------------------------ */

int visock_sa_to_gid(const struct sockaddr *sa, union ib_gid *gid)
{
	int ifindex;

	return visock_link_addr_to_gid(sa, gid, &ifindex);
}

/**
 * visock_link_peer_forgot() - the peer does not know the QP we named
 * @l: the client's link that joined an existing QP
 *
 * The server declined with VISOCK_FB_LINK_GONE: it restarted, lost its
 * device or ended the QP.  It has most likely lost every QP of the
 * group, so none of them takes new connections any more; each goes once
 * its connections have.
 *
 * Context: process context.
 */
void visock_link_peer_forgot(struct visock_link *l)
{
	struct visock_qp *q = l->qp, *o;
	struct visock_net *vn = visock_net(q->net);

	mutex_lock(&vn->lgr_lock);
	list_for_each_entry(o, &vn->qps, net_node)
		if (visock_qp_same_group(o, q->server, &q->gid,
					 &q->peer_addr)) {
			WRITE_ONCE(o->dying, true);
			WRITE_ONCE(o->retired, false);
		}
	mutex_unlock(&vn->lgr_lock);
}

struct visock_resolve {
	struct completion done;
	int status;
};

static void visock_qp_resolved(int status, struct sockaddr *src,
			       struct rdma_dev_addr *addr, void *ctx)
{
	struct visock_resolve *r = ctx;

	r->status = status;
	complete(&r->done);
}

/*
 * Kernel users of ib_modify_qp() pass a resolved RoCE address: find the
 * peer's MAC address (and the route's hop limit) through ib_core's
 * address resolution, in the namespace of our GID's net device.
 */
static int visock_qp_resolve(struct visock_qp *q, const union ib_gid *dgid,
			     u8 *dmac, u8 *hop_limit)
{
	union visock_ipaddr src, dst;
	struct rdma_dev_addr dev_addr = {};
	struct visock_resolve r;
	int err;

	rdma_gid2ip(visock_sa(&src), &q->gid);
	rdma_gid2ip(visock_sa(&dst), dgid);
	if (src.in.sin_family != dst.in.sin_family)
		return -EAFNOSUPPORT;

	dev_addr.net = q->net;
	dev_addr.sgid_attr = q->sgid_attr;
	init_completion(&r.done);
	r.status = 0;
	err = rdma_resolve_ip(visock_sa(&src), visock_sa(&dst), &dev_addr,
			      VISOCK_LINK_RESOLVE_MS, visock_qp_resolved,
			      true, &r);
	if (err)
		return err;
	/* ib_core calls back within VISOCK_LINK_RESOLVE_MS in any case. */
	wait_for_completion(&r.done);
	if (r.status)
		return r.status;

	memcpy(dmac, dev_addr.dst_dev_addr, ETH_ALEN);
	if (dev_addr.hoplimit > 0 && dev_addr.hoplimit <= 255)
		*hop_limit = dev_addr.hoplimit;
	else
		*hop_limit = VISOCK_LINK_HOP_LIMIT;
	return 0;
}

static int visock_qp_to_rtr(struct visock_qp *q,
			    const struct visock_hs_msg *peer)
{
	struct ib_qp_attr attr = {};
	union ib_gid dgid;
	u8 dmac[ETH_ALEN];
	u8 hop_limit;
	int err;

	memcpy(dgid.raw, peer->gid, sizeof(dgid.raw));
	q->peer_gid = dgid;
	err = visock_qp_resolve(q, &dgid, dmac, &hop_limit);
	if (err)
		return err;

	attr.qp_state = IB_QPS_RTR;
	attr.path_mtu = min_t(enum ib_mtu, q->mtu, peer->mtu);
	attr.dest_qp_num = peer->qpn;
	attr.rq_psn = peer->psn;
	attr.max_dest_rd_atomic = 1;
	attr.min_rnr_timer = VISOCK_LINK_MIN_RNR;

	attr.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&attr.ah_attr, q->port);
	rdma_ah_set_grh(&attr.ah_attr, &dgid, 0, q->sgid_attr->index,
			hop_limit, 0);
	/* Pin the exact GID entry we looked up; ib_core takes its own ref. */
	attr.ah_attr.grh.sgid_attr = q->sgid_attr;
	memcpy(attr.ah_attr.roce.dmac, dmac, ETH_ALEN);

	err = visock_fault(VISOCK_FP_QP_RTR);
	if (err)
		return err;
	return visock_qp_modify(q, &attr, IB_QP_STATE | IB_QP_AV |
				IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN |
				IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
}

static int visock_qp_to_rts(struct visock_qp *q)
{
	struct ib_qp_attr attr = {};
	int err;

	attr.qp_state = IB_QPS_RTS;
	attr.sq_psn = q->psn;
	attr.timeout = q->ack_timeout;
	attr.retry_cnt = VISOCK_LINK_RETRY;
	attr.rnr_retry = VISOCK_LINK_RNR_RETRY;
	attr.max_rd_atomic = 1;
	err = visock_fault(VISOCK_FP_QP_RTS);
	if (err)
		return err;
	return visock_qp_modify(q, &attr, IB_QP_STATE | IB_QP_TIMEOUT |
				IB_QP_RETRY_CNT | IB_QP_RNR_RETRY |
				IB_QP_SQ_PSN | IB_QP_MAX_QP_RD_ATOMIC);
}

/* Connect a new QP to the peer's end.  Under the QP's lock. */
int visock_qp_connect(struct visock_qp *q, const struct visock_hs_msg *peer)
{
	int err;

	if (q->state != VISOCK_QP_INIT)
		return -EINVAL;
	/* The peer's GID must be the address we reach it at over TCP. */
	if (memcmp(peer->gid, q->peer_addr.raw, sizeof(peer->gid))) {
		atomic64_inc(&visock_net(q->net)->lgr_gid_mismatch);
		return -EBADMSG;
	}
	q->peer_qpn = peer->qpn;
	err = visock_qp_to_rtr(q, peer);
	if (!err)
		err = visock_qp_to_rts(q);
	return err;
}

/*
 * Receive callback of a connection that ended before the peer said it
 * would not write any more: wait for its closed or abort flag, then let
 * the reap work give the ring and the token index back.  Softirq, under
 * the token table's lock.
 */
void visock_link_linger_rx(void *ctx, const struct visock_rx_ev *ev)
{
	struct visock_link *l = ctx;
	struct visock_qp *q = l->qp;
	struct visock_cdc m;

	if (ev->kind != VISOCK_RX_CTRL || visock_cdc_decode(ev->msg, ev->len, &m))
		return;
	if (!(m.flags & (VISOCK_CDC_F_CLOSED | VISOCK_CDC_F_ABORT)) ||
	    READ_ONCE(l->peer_quiet))
		return;
	WRITE_ONCE(l->peer_quiet, true);
	kref_get(&q->ref);
	if (!queue_work(visock_wq, &q->reap_work))
		kref_put(&q->ref, visock_qp_free);
}

/*
 * Free lingering connections: those whose peer went quiet, or all of
 * them (@all: the QP is dead).  Context: process context, no QP lock.
 */
void visock_qp_reap(struct visock_qp *q, bool all)
{
	struct visock_net *vn = visock_net(q->net);
	struct visock_link *l, *tmp;
	unsigned int n = 0;
	LIST_HEAD(gone);

	mutex_lock(&q->lock);
	list_for_each_entry_safe(l, tmp, &q->links, qp_node) {
		if (!l->lingering || !(all || READ_ONCE(l->peer_quiet)))
			continue;
		/* No receive callback runs once it is out of the table. */
		xa_erase_bh(&q->conns, l->idx);
		visock_qp_put_rbuf(q, l->rbuf, READ_ONCE(l->peer_quiet));
		l->rbuf = NULL;
		list_move(&l->qp_node, &gone);
	}
	mutex_unlock(&q->lock);
	list_for_each_entry_safe(l, tmp, &gone, qp_node) {
		kfree(l);
		n++;
	}
	if (!n)
		return;
	atomic_sub(n, &q->nlinger);
	/* The idle work may have been waiting for these. */
	if (!all) {
		mutex_lock(&vn->lgr_lock);
		if (!q->nconns && q->listed)
			visock_qp_queue_idle(q, visock_qp_idle_delay(q));
		mutex_unlock(&vn->lgr_lock);
	}
	while (n--)
		kref_put(&q->ref, visock_qp_free);
}

/**
 * visock_qp_put() - drop a reference to a QP
 * @q: the QP
 *
 * Context: process context (the last reference frees the QP's memory).
 */
void visock_qp_put(struct visock_qp *q)
{
	kref_put(&q->ref, visock_qp_free);
}

static void visock_qp_reap_work(struct work_struct *work)
{
	struct visock_qp *q = container_of(work, struct visock_qp, reap_work);

	visock_qp_reap(q, false);
	kref_put(&q->ref, visock_qp_free);	/* the queueing's */
}

/* ------------------------------------------------------------------ */
/* Device removal, namespaces                                          */
/* ------------------------------------------------------------------ */

/**
 * visock_link_device_removed() - kill every QP of a departing device
 * @vdev: the device, already off visock_ib.c's device list
 *
 * Called by the ib_client remove callback.  Each QP is taken off
 * @vdev's list with a reference held and killed; its connections' dead_cb
 * runs.
 *
 * Context: process context, may sleep; no visock lock held.
 */
void visock_link_device_removed(struct visock_ibdev *vdev)
{
	struct visock_qp *q;

	mutex_lock(&vdev->lock);
	vdev->dying = true;
	while ((q = list_first_entry_or_null(&vdev->links, struct visock_qp,
					     dev_node))) {
		list_del_init(&q->dev_node);
		kref_get(&q->ref);
		mutex_unlock(&vdev->lock);

		visock_qp_kill(q, "device removed");
		kref_put(&q->ref, visock_qp_free);

		mutex_lock(&vdev->lock);
	}
	mutex_unlock(&vdev->lock);
}

/**
 * visock_lgr_net_init() - link group state of a new namespace
 * @net: the namespace
 *
 * Context: process context, pernet init.
 */
void visock_lgr_net_init(struct net *net)
{
	struct visock_net *vn = visock_net(net);

	mutex_init(&vn->lgr_lock);
	INIT_LIST_HEAD(&vn->qps);
	spin_lock_init(&vn->qp_all_lock);
	INIT_LIST_HEAD(&vn->qp_all);
	atomic_set(&vn->lgr_qps_alive, 0);
	init_waitqueue_head(&vn->lgr_wq);
	atomic64_set(&vn->lgr_mem, 0);
	atomic64_set(&vn->lgr_qp_mem, 0);
	atomic_set(&vn->lgr_qps_alloc, 0);
}

/**
 * visock_lgr_net_exit() - destroy the QPs left in a namespace
 * @net: the namespace going away; it has no visock socket any more, so
 *	every QP left is idle
 *
 * Destroys the QPs still listed, then waits until every QP of the
 * namespace is freed: one whose idle work took it off the list already
 * may still be telling the peer (up to VISOCK_LINK_MSG_TIMEOUT) or
 * draining, and its last reference writes the namespace's counters.
 *
 * Context: process context, pernet exit (also at module unload).
 */
void visock_lgr_net_exit(struct net *net)
{
	struct visock_net *vn = visock_net(net);
	struct visock_qp *q, *tmp;
	LIST_HEAD(gone);

	mutex_lock(&vn->lgr_lock);
	list_for_each_entry_safe(q, tmp, &vn->qps, net_node) {
		WARN_ON_ONCE(q->nconns);
		q->listed = false;
		list_move(&q->net_node, &gone);
	}
	mutex_unlock(&vn->lgr_lock);

	list_for_each_entry_safe(q, tmp, &gone, net_node) {
		list_del_init(&q->net_node);
		/*
		 * Sees @listed false if it runs.  Not
		 * cancel_delayed_work_sync(): since 6.10 it disables the work
		 * while it waits, and a visock_qp_queue_idle() meanwhile would
		 * neither queue it nor drop its reference.  The flush runs and
		 * waits for whatever was queued since.
		 */
		if (cancel_delayed_work(&q->idle_work))
			kref_put(&q->ref, visock_qp_free);
		flush_delayed_work(&q->idle_work);
		visock_qp_send_delete(q);
		mutex_lock(&q->lock);
		visock_qp_release_verbs(q);
		WRITE_ONCE(q->dead, true);
		mutex_unlock(&q->lock);
		visock_qp_ka_stop(q);
		visock_qp_reap(q, true);
		flush_work(&q->reap_work);
		atomic64_inc(&vn->lgr_qps_destroyed);
		kref_put(&q->ref, visock_qp_free);
	}
	/* QPs in teardown, and works that still hold a reference. */
	wait_var_event(&vn->lgr_qps_alloc, !atomic_read(&vn->lgr_qps_alloc));
	mutex_destroy(&vn->lgr_lock);
}

/**
 * visock_lgr_gauges() - the link group part of a namespace's gauges
 * @net: the namespace
 * @g: its QPs, those up, registered ring bytes, attached and lingering
 *	connections are added; the messages dropped for stale tokens, the
 *	QPs not freed yet and the bytes of their queues are set
 *
 * Context: process context.
 */
void visock_lgr_gauges(struct net *net, struct visock_gauges *g)
{
	struct visock_net *vn = visock_net(net);
	struct visock_qp *q;

	mutex_lock(&vn->lgr_lock);
	list_for_each_entry(q, &vn->qps, net_node) {
		g->qps++;
		if (q->state == VISOCK_QP_UP && !READ_ONCE(q->dead))
			g->links_up++;
		g->lgr_conns += q->nconns;
		g->lgr_lingering += atomic_read(&q->nlinger);
	}
	mutex_unlock(&vn->lgr_lock);
	g->lgr_stale = atomic64_read(&vn->lgr_stale);
	g->qps_alive = atomic_read(&vn->lgr_qps_alive);
	g->qp_bytes = atomic64_read(&vn->lgr_qp_mem);
	g->reg_bytes = atomic64_read(&vn->lgr_mem);
	g->reg_bytes -= min(g->reg_bytes, g->qp_bytes);
}
