// SPDX-License-Identifier: GPL-2.0
/*
 * visock: work requests of a QP.
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

/**
 * visock_qp_rx_done() - completion handler of a QP's receive requests
 * @cq: the QP's completion queue
 * @wc: the completion
 *
 * Finds the connection the receive is for and lets it handle the data,
 * then reposts.  The token table's lock is held while the
 * connection's callback runs, so visock_link_destroy() can make sure that
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
