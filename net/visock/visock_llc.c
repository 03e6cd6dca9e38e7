// SPDX-License-Identifier: GPL-2.0
/*
 * visock: link messages - what the two ends of a QP say about the QP
 * itself.
 *
 * A link message is a cursor-message-sized SEND from one of the QP's own
 * send slots (those of token index 0), told apart from a connection's
 * cursor message by its type (VISOCK_LINK_MSG_TYPE); the receive
 * dispatch (visock_qp_rx_done()) hands the peer's to
 * visock_qp_peer_delete().  Each kind has its own slot, so that they
 * never wait for each other:
 *
 *   slot 0  delete link: we are about to destroy our end
 *           (visock_qp_send_delete()), waited for
 *   slot 1  keepalive: every net.visock.lgr_keepalive_ms while the QP
 *           has connections; one outstanding at a time
 *   slot 2  switch decline: a switch reply for a lazy connection that
 *           could not join the QP (visock_lgr_switch_decline())
 *
 * Lifetime and locking rules of a QP are at the top of visock_lgr.c.
 */
#include <linux/completion.h>
#include <linux/jiffies.h>
#include <linux/mutex.h>
#include <linux/workqueue.h>

#include "visock_ib.h"
#include "visock_lgr.h"
#include "visock_llc.h"
#include "visock_wr.h"

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

/**
 * visock_qp_peer_delete() - the peer's delete link message arrived
 * @q: the QP
 *
 * The peer's end goes: take no new connections, and destroy ours as soon
 * as its last connection is gone, without telling the peer.
 *
 * Context: softirq (the receive completion).
 */
void visock_qp_peer_delete(struct visock_qp *q)
{
	pr_debug("visock: QP %u: the peer ends it\n", q->qpn);
	WRITE_ONCE(q->peer_deleted, true);
	WRITE_ONCE(q->dying, true);
	/* Gone as soon as its last connection is. */
	visock_qp_queue_idle(q, 0);
}

/*
 * Post link message @code from QP-level send slot @slot, completing on
 * @cqe.  Under @q->lock, on a QP that is up with its slots mapped.
 * Return: 0, -ENOTCONN if the QP takes no more requests, or an error of
 * ib_post_send() (see visock_wr_post_send()).
 */
static int visock_qp_post_link_msg(struct visock_qp *q, u8 code,
				   unsigned int slot, struct ib_cqe *cqe)
{
	u32 n = visock_qp_tx_slot(q, 0, slot);

	lockdep_assert_held(&q->lock);
	visock_link_msg_encode(code, visock_qp_slot(q, n),
			       VISOCK_QP_CTRL_SLOT);
	return visock_wr_post_slot(q, NULL, n, VISOCK_CDC_LEN, cqe,
				   VISOCK_FP_NR);
}

/**
 * visock_lgr_switch_decline() - decline a lazy connection's switch
 * @net: namespace
 * @local: local address of the connection's internal TCP socket
 * @peer: peer address of that socket
 * @sw: the peer's SWITCH (its LINK TLV names the QP and the peer's end)
 * @reason: enum visock_fallback_reason, not 0
 * @server: our end of the QP is the server's
 *
 * We could not join the QP the peer named (gone, full, out of memory),
 * or do not take its switch, so we have no place on it to answer from:
 * the decline (a switch reply without VISOCK_SWREP_F_ACCEPT) goes from
 * the QP's own send slot 2, one at a time, and is waited for.  It uses one of the
 * receive requests the peer posted for its new connection.
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
			      const struct visock_hs_msg *sw, u32 reason,
			      bool server)
{
	struct visock_swrep r = {
		.token = sw->token,
		.reason = reason,
	};
	struct visock_qp *q;
	int err = -ENOLINK;
	u32 n;

	q = visock_lgr_switch_qp(net, local, peer, sw, server);
	if (!q)
		return -ENOLINK;

	mutex_lock(&q->sw_mutex);
	mutex_lock(&q->lock);
	if (q->state != VISOCK_QP_UP || q->dead || !q->ctrl_mapped ||
	    test_bit(VISOCK_QP_BROKEN, &q->broken)) {
		mutex_unlock(&q->lock);
		goto out;
	}
	n = visock_qp_tx_slot(q, 0, 2);
	err = visock_swrep_encode(&r, visock_qp_slot(q, n),
				  VISOCK_QP_CTRL_SLOT);
	if (err < 0) {
		mutex_unlock(&q->lock);
		goto out;
	}
	reinit_completion(&q->sw_done);
	err = visock_wr_post_slot(q, NULL, n, VISOCK_CDC_LEN, &q->sw_cqe,
				  VISOCK_FP_NR);
	mutex_unlock(&q->lock);
	/* A drain before the QP goes completes it in any case. */
	if (!err && !wait_for_completion_timeout(&q->sw_done,
						 VISOCK_LINK_MSG_TIMEOUT * 5))
		err = -ETIMEDOUT;
	if (!err && test_bit(VISOCK_QP_BROKEN, &q->broken))
		err = -EIO;
out:
	mutex_unlock(&q->sw_mutex);
	visock_qp_put(q);
	return err;
}

/*
 * An idle connection, or one whose sender waits for a full ring, posts
 * nothing, so a peer that died would never be noticed.  A QP with
 * connections sends a keepalive link message every lgr_keepalive_ms; if
 * the peer does not acknowledge it within the transport's retries the
 * QP fails and its connections fail over to TCP (and reset if the peer
 * does not answer there either).  One at a time, in its own slot.
 */
static void visock_qp_ka_send_locked(struct visock_qp *q)
{
	lockdep_assert_held(&q->lock);
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

	lockdep_assert_held(&q->lock);
	if (q->dead)
		return;
	kref_get(&q->ref);
	/* Off: look at the sysctl again now and then. */
	if (!queue_delayed_work(visock_wq, &q->ka_work,
				msecs_to_jiffies(ms ? max(ms, 100) : 10000)))
		visock_qp_put(q);	/* not the last */
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
	visock_qp_put(q);
}

/**
 * visock_qp_ka_start() - start the keepalive of a QP that came up
 * @q: the QP
 *
 * Context: process context, under @q->lock.
 */
void visock_qp_ka_start(struct visock_qp *q)
{
	lockdep_assert_held(&q->lock);
	visock_qp_ka_queue_locked(q);
}

/**
 * visock_qp_ka_stop() - stop the keepalive of a QP that was marked dead
 * @q: the QP
 *
 * A queued round holds a reference; a running one sees @dead and does
 * not queue again.
 *
 * Context: process context, not under @q->lock.
 */
void visock_qp_ka_stop(struct visock_qp *q)
{
	if (cancel_delayed_work(&q->ka_work))
		visock_qp_put(q);
}

/**
 * visock_qp_send_delete() - tell the peer we destroy our end of a QP
 * @q: the QP, off its namespace's list
 *
 * Best effort.  Either end says so: a server's end goes early too (a connection on it
 * failed over, or none completed its handshake), and a client that went
 * on using its end would have its next connection declined with
 * LINK_GONE.  Not on a broken QP, and not back to a peer that said so
 * first: its end is going, and waiting for an acknowledgment it will not
 * send would only delay the teardown.
 *
 * Context: process context, may sleep; not under @q->lock.
 */
void visock_qp_send_delete(struct visock_qp *q)
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

/**
 * visock_llc_init() - set up the link message state of a new QP
 * @q: the QP, not visible to anybody else yet
 *
 * Context: process context.
 */
void visock_llc_init(struct visock_qp *q)
{
	INIT_DELAYED_WORK(&q->ka_work, visock_qp_ka_work);
	q->ka_cqe.done = visock_qp_ka_done;
	init_completion(&q->msg_done);
	q->msg_cqe.done = visock_qp_msg_done;
	mutex_init(&q->sw_mutex);
	init_completion(&q->sw_done);
	q->sw_cqe.done = visock_qp_sw_done;
}
