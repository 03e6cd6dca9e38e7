// SPDX-License-Identifier: GPL-2.0
/*
 * visock: RDMA data path - cursor messages.
 *
 * Sending, receiving and validating cursor messages (wire format in
 * visock_wire.h).  The rules for lifetime and locking are at the top of
 * visock_tx.c and visock_rx.c; in short: everything here runs under
 * struct visock_dp.lock.
 *
 * Credits.  Every RDMA WRITE WITH IMMEDIATE and every cursor message
 * consumes one receive request of the peer's shared QP.  Each connection
 * starts with VISOCK_VC_RQ_DEPTH credits (the peer's QP has that many
 * receive requests posted for it before REP or CONFIRM; the QP reposts
 * each at once) and gets them back as the peer's connection handles them: every message
 * we send - data or cursor message - returns all credits we owe.  Data
 * leaves VISOCK_DP_CREDIT_RESERVE credits for cursor messages, and the
 * last credit is only used by a cursor message that returns credits or
 * is the connection's last (closed or abort flag: the peer's ring
 * lingers until it comes, see visock_vc_destroy()); a side owing
 * VISOCK_DP_CREDIT_RETURN or more
 * sends a cursor message for them alone.  With these rules a side that
 * waits for credits always has a peer that owes it at least
 * VISOCK_VC_RQ_DEPTH - VISOCK_DP_CREDIT_RESERVE of them and is allowed
 * to return them, so credits never deadlock, and credit-only messages
 * cannot ping-pong (each one makes the other side owe just one).
 */
#include <linux/errno.h>
#include <net/sock.h>

#include "visock_debugfs.h"
#include "visock_rdma.h"

/*
 * Test hook (debugfs cdc_inject): returns the token for an extra copy of
 * @m to send after it, or 0; or makes @m itself invalid.  One-shot: the
 * mode is cleared by the connection that takes it.
 */
static u32 visock_cdc_test_inject(const struct visock_dp *dp,
				  struct visock_cdc *m)
{
	u32 mode = READ_ONCE(visock_test_cdc_inject);

	if (!mode || mode > VISOCK_TEST_CDC_MAX ||
	    dp->local_token != READ_ONCE(visock_test_cdc_token) ||
	    cmpxchg(&visock_test_cdc_inject, mode, VISOCK_TEST_CDC_OFF) != mode)
		return 0;
	switch (mode) {
	case VISOCK_TEST_CDC_STALE:
		return m->token ^ ~VISOCK_TOKEN_IDX_MASK;
	case VISOCK_TEST_CDC_UNKNOWN:
		return m->token | VISOCK_TOKEN_IDX_MASK;
	}
	/* Counted here; a copy when it was posted. */
	WRITE_ONCE(visock_test_cdc_injected,
		   READ_ONCE(visock_test_cdc_injected) + 1);
	switch (mode) {
	case VISOCK_TEST_CDC_BAD_PROD:
		m->prod.count = dp->tx_size;
		break;
	case VISOCK_TEST_CDC_BAD_CONS:
		m->cons.wrap++;
		break;
	case VISOCK_TEST_CDC_BAD_CREDITS:
		m->credits = VISOCK_VC_RQ_DEPTH + 1;
		break;
	}
	return 0;
}

/*
 * The extra copy of the test hook, for a token the peer must drop.  It
 * takes a send queue slot but no credit: the peer's QP reposts the
 * receive request at once and has spare ones (VISOCK_QP_RQ_SLACK).
 */
static void visock_cdc_test_send_copy(struct visock_dp *dp,
				      const struct visock_cdc *orig, u32 token)
{
	unsigned int slot = dp->tx_slot;
	struct visock_cdc m = *orig;

	m.token = token;
	if (!dp->sq_free ||
	    visock_cdc_encode(&m, visock_vc_ctrl_slot(dp->vc, slot),
			      VISOCK_QP_CTRL_SLOT) < 0 ||
	    visock_vc_post_ctrl(dp->vc, slot, VISOCK_CDC_LEN,
				&dp->ctrl_cqe))
		return;
	dp->tx_slot = (slot + 1) % VISOCK_VC_SQ_DEPTH;
	dp->sq_free--;
	dp->wr_posted++;
	VISOCK_STAT_ADD(&dp->vsk->sk, rdma_wr_posted, 1);
	WRITE_ONCE(visock_test_cdc_injected,
		   READ_ONCE(visock_test_cdc_injected) + 1);
}

/**
 * visock_cdc_send_swrep_locked() - send a lazy connection's switch reply
 * @dp: the server's new data path state, live, nothing sent yet
 * @m: the accepted reply (visock_swrep_encode() rules)
 *
 * Goes before anything else of the connection, in one of its cursor
 * message slots and with the first of the credits the client's receive
 * requests gave it (visock_lazy.c).
 *
 * Context: under @dp->lock.
 * Return: 0, -EINVAL for a bad @m, -ENOBUFS without a slot or credit, or
 * an error from posting.
 */
int visock_cdc_send_swrep_locked(struct visock_dp *dp,
				 const struct visock_swrep *m)
{
	unsigned int slot = dp->tx_slot;
	int err;

	lockdep_assert_held(&dp->lock);
	if (dp->state != VISOCK_DP_LIVE || !dp->sq_free || !dp->credits)
		return -ENOBUFS;
	err = visock_swrep_encode(m, visock_vc_ctrl_slot(dp->vc, slot),
				  VISOCK_QP_CTRL_SLOT);
	if (err < 0)
		return err;
	err = visock_vc_post_ctrl(dp->vc, slot, VISOCK_CDC_LEN,
				  &dp->ctrl_cqe);
	if (err)
		return err;
	dp->tx_slot = (slot + 1) % VISOCK_VC_SQ_DEPTH;
	dp->sq_free--;
	dp->credits--;
	dp->wr_posted++;
	VISOCK_STAT_ADD(&dp->vsk->sk, rdma_wr_posted, 1);
	return 0;
}

/**
 * visock_cdc_send_locked() - send a cursor message if one is pending
 * @dp: data path state
 * @wake: wake-ups to deliver after dropping the lock
 *
 * Sends the current cursors, flags and owed credits if a message is
 * pending and a send queue slot and a credit allow it (see the credit
 * rules above); otherwise it stays pending until a completion or a
 * returned credit calls visock_tx_push_locked() again.
 *
 * Context: under @dp->lock, any context.
 */
void visock_cdc_send_locked(struct visock_dp *dp, unsigned int *wake)
{
	unsigned int slot = dp->tx_slot;
	struct visock_cdc m = { };
	u32 unsent, copy = 0;
	bool closed;
	u8 flags;
	int err;

	lockdep_assert_held(&dp->lock);
	/*
	 * A lazy client before the switch reply does not know the peer's
	 * token: nothing can be addressed to it yet.
	 */
	if (!dp->ctrl_pending || dp->sw_pending)
		return;
	/* A failed connection still owes the peer its abort flag. */
	if (dp->state != VISOCK_DP_LIVE &&
	    !(dp->state == VISOCK_DP_DEAD && dp->abort && !dp->abort_sent))
		return;
	if (!dp->sq_free || !dp->credits)
		return;
	unsent = visock_dp_unsent(dp);
	closed = visock_dp_closed_due(dp, unsent);
	if (dp->credits == 1 && !dp->owed && !dp->abort && !closed)
		return;

	m.token = dp->peer_token;
	m.seq = dp->tx_seq + 1;
	m.prod = dp->tx_sent;
	m.cons = dp->rx_cons;
	m.credits = dp->owed;
	if (dp->tx_blocked)
		m.flags |= VISOCK_CDC_F_WRITE_BLOCKED;
	if (dp->tx_shut && !unsent)
		m.flags |= VISOCK_CDC_F_DONE_WRITING;
	if (closed)
		m.flags |= VISOCK_CDC_F_CLOSED;
	if (dp->abort)
		m.flags |= VISOCK_CDC_F_ABORT;
	if (unlikely(READ_ONCE(visock_test_cdc_inject)))
		copy = visock_cdc_test_inject(dp, &m);
	flags = m.flags;
	if (unlikely(READ_ONCE(visock_test_mute_end_flags)))
		m.flags &= ~(VISOCK_CDC_F_CLOSED | VISOCK_CDC_F_ABORT);
	if (WARN_ON_ONCE(visock_cdc_encode(&m, visock_vc_ctrl_slot(dp->vc,
								   slot),
					   VISOCK_QP_CTRL_SLOT) < 0))
		return;
	err = visock_vc_post_ctrl(dp->vc, slot, VISOCK_CDC_LEN,
				  &dp->ctrl_cqe);
	if (err) {
		dp->ctrl_pending = false;
		if (!dp->abort)
			visock_dp_vc_failed_locked(dp,
						   "posting a cursor message failed",
						   err, wake);
		return;
	}
	dp->tx_slot = (slot + 1) % VISOCK_VC_SQ_DEPTH;
	dp->tx_seq = m.seq;
	dp->sq_free--;
	dp->credits--;
	dp->owed = 0;
	dp->rx_cons_sent = dp->rx_cons;
	dp->peer_blocked = false;
	dp->ctrl_pending = false;
	if (flags & VISOCK_CDC_F_DONE_WRITING)
		dp->done_sent = true;
	if (flags & VISOCK_CDC_F_CLOSED)
		dp->closed_sent = true;
	if (flags & VISOCK_CDC_F_ABORT)
		dp->abort_sent = true;
	dp->cdc_sent++;
	dp->wr_posted++;
	VISOCK_STAT_ADD(&dp->vsk->sk, cdc_sent, 1);
	VISOCK_STAT_ADD(&dp->vsk->sk, rdma_wr_posted, 1);
	if (unlikely(copy))
		visock_cdc_test_send_copy(dp, &m, copy);
}

/**
 * visock_cdc_recv_locked() - handle a received cursor message
 * @dp: data path state
 * @buf: the message
 * @len: its length
 * @wake: wake-ups to deliver after dropping the lock
 *
 * Validates the message against the connection: token, sequence number
 * (older ones are dropped), producer cursor (RC ordering means every
 * write before the message has been seen, so it must equal ours),
 * consumer cursor (between the last one and what we sent), credits (no
 * more than the peer can have).  Anything wrong resets the connection.
 *
 * Context: completion handler (softirq), under @dp->lock.
 */
void visock_cdc_recv_locked(struct visock_dp *dp, const u8 *buf, u32 len,
			    unsigned int *wake)
{
	struct visock_cdc m;
	s64 adv;

	lockdep_assert_held(&dp->lock);
	if (visock_cdc_decode(buf, len, &m) || m.token != dp->local_token)
		goto bad;
	if (!visock_cdc_seq_after(m.seq, dp->rx_seq))
		return;
	if (!visock_cursor_valid(dp->rx_size, &m.prod) ||
	    m.prod.wrap != dp->rx_prod.wrap ||
	    m.prod.count != dp->rx_prod.count)
		goto bad;
	if (dp->sw_pending) {
		/*
		 * A lazy client before the switch reply is handled: the
		 * peer's ring is not known yet (tx_size is 0) and nothing
		 * was sent, so the peer cannot have consumed anything.
		 */
		if (m.cons.wrap || m.cons.count)
			goto bad;
		adv = 0;
	} else {
		adv = visock_cursor_diff(dp->tx_size, &dp->tx_peer_cons,
					 &m.cons);
		if (adv < 0 ||
		    visock_cursor_diff(dp->tx_size, &m.cons, &dp->tx_sent) < 0)
			goto bad;
	}
	if (dp->credits + m.credits > VISOCK_VC_RQ_DEPTH)
		goto bad;

	dp->rx_seq = m.seq;
	dp->cdc_rcvd++;
	VISOCK_STAT_ADD(&dp->vsk->sk, cdc_rcvd, 1);
	dp->credits += m.credits;
	if (adv > 0) {
		dp->tx_peer_cons = m.cons;
		/* As sk_stream_write_space(): only for a useful amount. */
		if (visock_tx_space_locked(dp) >= visock_tx_wake_min_locked(dp)) {
			dp->tx_need = 0;
			*wake |= VISOCK_WAKE_WRITE;
		}
	}
	if (m.flags & VISOCK_CDC_F_WRITE_BLOCKED)
		dp->peer_blocked = true;
	if (m.flags & (VISOCK_CDC_F_DONE_WRITING | VISOCK_CDC_F_CLOSED)) {
		dp->peer_done = true;
		*wake |= VISOCK_WAKE_READ | VISOCK_WAKE_STATE;
	}
	/* The peer writes nothing more: our ring may be reused later. */
	if (m.flags & (VISOCK_CDC_F_CLOSED | VISOCK_CDC_F_ABORT))
		visock_vc_peer_quiet(dp->vc);
	if (m.flags & VISOCK_CDC_F_CLOSED) {
		WRITE_ONCE(dp->peer_closed, true);
		*wake |= VISOCK_WAKE_WRITE | VISOCK_WAKE_CLOSE;
	}
	if (m.flags & VISOCK_CDC_F_ABORT) {
		visock_dp_fail_locked(dp, ECONNRESET, false, "peer reset", 0,
				      wake);
		return;
	}
	visock_rx_check_update_locked(dp);
	return;

bad:
	visock_dp_fail_locked(dp, ECONNRESET, true, "bad cursor message", 0,
			      wake);
}

/**
 * visock_cdc_note_quiet() - look for the peer's closed or abort flag only
 * @dp: data path state of a connection that is no longer live
 * @buf: a cursor message for it
 * @len: its length
 *
 * A connection being torn down does not interpret cursor messages any
 * more, but the flags that tell that the peer writes nothing more still
 * let its ring be reused (visock_vc_peer_quiet()).
 *
 * Context: completion handler (softirq), under @dp->lock.
 */
void visock_cdc_note_quiet(struct visock_dp *dp, const u8 *buf, u32 len)
{
	struct visock_cdc m;

	if (!visock_cdc_decode(buf, len, &m) && m.token == dp->local_token &&
	    (m.flags & (VISOCK_CDC_F_CLOSED | VISOCK_CDC_F_ABORT)))
		visock_vc_peer_quiet(dp->vc);
}

