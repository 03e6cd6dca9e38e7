// SPDX-License-Identifier: GPL-2.0
/*
 * visock: work requests of a QP.
 *
 * Send requests: every one - a connection's RDMA WRITEs, cursor messages
 * and ring registrations, the QP's own link messages - is posted by
 * visock_wr_post_send(), under the QP's post_lock and only while the QP
 * may be posted to (its verbs objects exist and no drain started), and
 * counted: as posted on the QP (so that it is drained before it goes)
 * and as outstanding for its connection (visock_vc_wc_done()).
 *
 * Receive requests: a QP keeps one pool of them for all its connections
 * (as many as their credits need, visock_qp_fill_rq()); a receive
 * completion is handed to the connection that the immediate data of a
 * WRITE WITH IMMEDIATE or the token of a cursor message names, link
 * messages to visock_llc.c, and the request is posted again.  Unknown
 * and stale ones are dropped and counted.
 *
 * Lifetime and locking rules of a QP are at the top of visock_lgr.c.
 */
#include <linux/atomic.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>

#include "visock_ib.h"
#include "visock_lgr.h"
#include "visock_llc.h"
#include "visock_wr.h"
#include "visock_fault.h"

/**
 * visock_qp_count_wc() - count a work completion of a QP
 * @q: the QP
 * @wc: the completion
 *
 * Every completion handler of a QP's requests calls this first.  The
 * first failure other than a flush is logged: it is what broke the QP.
 *
 * Context: softirq (completion handler).
 */
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

/**
 * visock_wr_post_send() - post a chain of send work requests on a QP
 * @q: the QP
 * @l: the connection the requests are for, or NULL for the QP's own
 * @wr: the chain
 * @fp: fault point of the post, or VISOCK_FP_NR for none
 * @prep: called under the QP's post_lock once the QP may be posted to,
 *	to finish the requests with what only lives that long (the PD's
 *	key, DMA syncs), or NULL; a nonzero return is the error of the post
 * @arg: passed to @prep
 *
 * What the device accepted counts as posted on @q and as outstanding for
 * @l: their completion handlers must end with visock_vc_wc_done().
 *
 * Context: any context; no spinlock of @q held.
 * Return: 0, -ENODEV if the QP is dead, -ENOTCONN if it cannot be posted
 * to otherwise, or the error of @prep or of ib_post_send() (then the
 * requests before the failed one may have been posted).
 */
int visock_wr_post_send(struct visock_qp *q, struct visock_vc *l,
			const struct ib_send_wr *wr,
			enum visock_fault_point fp,
			int (*prep)(struct visock_qp *q, void *arg), void *arg)
{
	const struct ib_send_wr *bad = NULL, *w;
	unsigned int n = 0;
	int err;

	spin_lock_bh(&q->post_lock);
	if (!q->can_post) {
		err = READ_ONCE(q->dead) ? -ENODEV : -ENOTCONN;
		goto out;
	}
	err = prep ? prep(q, arg) : 0;
	if (!err && fp != VISOCK_FP_NR)
		err = visock_fault(fp);
	if (err)
		goto out;
	err = ib_post_send(q->ibqp, wr, &bad);
	/* On error, @bad is the first request that was not posted. */
	for (w = wr; w && !(err && w == bad); w = w->next)
		n++;
	if (n) {
		q->posted = true;
		atomic64_add(n, &q->wr_posted);
		if (l)
			atomic_add(n, &l->outstanding);
	}
out:
	spin_unlock_bh(&q->post_lock);
	return err;
}

struct visock_wr_slot {
	struct ib_sge sge;
	u32 n;
};

/* The slot's address, key and DMA sync: valid while it may be posted. */
static int visock_wr_prep_slot(struct visock_qp *q, void *arg)
{
	struct visock_wr_slot *s = arg;

	s->sge.addr = visock_qp_slot_dma(q, s->n);
	s->sge.lkey = q->pd->local_dma_lkey;
	ib_dma_sync_single_for_device(q->ibdev, s->sge.addr, s->sge.length,
				      DMA_BIDIRECTIONAL);
	return 0;
}

/**
 * visock_wr_post_slot() - SEND a message from a send slot of a QP
 * @q: the QP
 * @l: the connection the slot belongs to, or NULL for the QP's own
 * @slot: the slot (visock_qp_tx_slot()), already filled in
 * @len: message length, at most VISOCK_QP_CTRL_SLOT
 * @cqe: completion handler
 * @fp: fault point, as for visock_wr_post_send()
 *
 * Posts one signaled SEND; it consumes one receive request of the peer.
 *
 * Context: any context; no spinlock of @q held.
 * Return: as visock_wr_post_send().
 */
int visock_wr_post_slot(struct visock_qp *q, struct visock_vc *l, u32 slot,
			u32 len, struct ib_cqe *cqe, enum visock_fault_point fp)
{
	struct visock_wr_slot s = { .n = slot };
	struct ib_send_wr wr = {};

	wr.opcode = IB_WR_SEND;
	wr.send_flags = IB_SEND_SIGNALED;
	wr.wr_cqe = cqe;
	wr.sg_list = &s.sge;
	wr.num_sge = 1;
	s.sge.length = len;
	return visock_wr_post_send(q, l, &wr, fp, visock_wr_prep_slot, &s);
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
		sge.length = VISOCK_QP_CTRL_SLOT;
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

/**
 * visock_qp_fill_rq() - post the receive requests connections need
 * @q: the QP
 * @nconns: connections on the QP
 *
 * Context: process context, under @q->lock.
 * Return: 0, or the error of posting (-ENODEV if the QP is dead).
 */
int visock_qp_fill_rq(struct visock_qp *q, unsigned int nconns)
{
	u32 want = min_t(u32, q->rq_size,
			 VISOCK_QP_RQ_SLACK + nconns * VISOCK_VC_RQ_DEPTH);
	int err;

	lockdep_assert_held(&q->lock);
	while (q->rq_posted < want) {
		err = visock_qp_post_recv(q, &q->rx[q->rq_posted]);
		if (err)
			return err;
		q->rq_posted++;
	}
	return 0;
}

/**
 * visock_qp_rx_done() - completion handler of a QP's receive requests
 * @cq: the QP's completion queue
 * @wc: the completion
 *
 * Finds the connection the receive is for and lets it handle the data,
 * then reposts.  The token table's lock is held while the
 * connection's callback runs, so visock_vc_destroy() can make sure that
 * none runs any more.
 *
 * Context: softirq (the CQ is polled with IB_POLL_SOFTIRQ).
 */
void visock_qp_rx_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct visock_qp_rx *rx = container_of(wc->wr_cqe, struct visock_qp_rx,
					       cqe);
	struct visock_qp *q = rx->qp;
	struct visock_rx_ev ev = {};
	struct visock_vc *l;
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
						   VISOCK_QP_CTRL_SLOT,
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
