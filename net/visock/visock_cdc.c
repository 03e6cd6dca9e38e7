// SPDX-License-Identifier: GPL-2.0
/*
 * visock: RDMA data path - connection state and cursor messages.
 *
 * Setting up and tearing down the data path of a connection, cursor
 * messages (send, receive, validate; wire format in visock_wire.h), error
 * handling and the state queries (poll, ioctl, VISOCK_INFO).  The rules
 * for lifetime and locking are at the top of visock_tx.c and
 * visock_rx.c; in short: everything here runs under struct visock_dp.lock
 * unless a function says otherwise.
 *
 * Credits.  Every RDMA WRITE WITH IMMEDIATE and every cursor message
 * consumes one receive request of the peer's shared QP.  Each connection
 * starts with VISOCK_LINK_RQ_DEPTH credits (the peer's QP has that many
 * receive requests posted for it before REP or CONFIRM; the QP reposts
 * each at once) and gets them back as the peer's connection handles them: every message
 * we send - data or cursor message - returns all credits we owe.  Data
 * leaves VISOCK_DP_CREDIT_RESERVE credits for cursor messages, and the
 * last credit is only used by a cursor message that returns credits or
 * is the connection's last (closed or abort flag: the peer's ring
 * lingers until it comes, see visock_link_destroy()); a side owing
 * VISOCK_DP_CREDIT_RETURN or more
 * sends a cursor message for them alone.  With these rules a side that
 * waits for credits always has a peer that owes it at least
 * VISOCK_LINK_RQ_DEPTH - VISOCK_DP_CREDIT_RESERVE of them and is allowed
 * to return them, so credits never deadlock, and credit-only messages
 * cannot ping-pong (each one makes the other side owe just one).
 */
#include <linux/errno.h>
#include <linux/slab.h>
#include <linux/sockios.h>
#include <asm/ioctls.h>
#include <linux/tcp.h>
#include <linux/uaccess.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "visock_rdma.h"
#include "visock_trace.h"
#include "visock_fault.h"
#include "visock_genl.h"
#include "visock_debugfs.h"

/*
 * The shared QP died (device removed, stuck peer).  Called by
 * visock_link.c in process context under the QP's mutex; the QP was
 * drained already, so every outstanding request has completed (in error).
 */
static void visock_rdma_link_dead(void *ctx)
{
	struct visock_dp *dp = ctx;
	unsigned int wake = 0;

	spin_lock_bh(&dp->lock);
	visock_dp_link_failed_locked(dp, "link died", 0, &wake);
	spin_unlock_bh(&dp->lock);
	visock_dp_wake(dp, wake);
}

/**
 * visock_rdma_prepare() - make a connected link ready to carry the stream
 * @vsk: socket whose @link was just connected
 *
 * Allocates the data path state, has the shared QP deliver the
 * connection's receive completions (and post receive requests for its
 * credits) and asks to be told when the QP dies.  Must run before REP (server) or CONFIRM
 * (client) is sent: the peer may write as soon as it has it.
 *
 * Context: process context, under lock_sock(@vsk).
 * Return: 0, -ENOMEM, or an error from posting (the link is then useless;
 * the caller destroys it with visock_rdma_destroy_link()).
 */
int visock_rdma_prepare(struct visock_sock *vsk)
{
	struct visock_link *l = vsk->link;
	struct visock_dp *dp;
	int err;

	if (visock_fault(VISOCK_FP_DP_ALLOC))
		return -ENOMEM;
	dp = kzalloc(sizeof(*dp), GFP_KERNEL);
	if (!dp)
		return -ENOMEM;
	spin_lock_init(&dp->lock);
	init_waitqueue_head(&dp->close_wq);
	INIT_DELAYED_WORK(&dp->close_work, visock_tx_close_work);
	INIT_DELAYED_WORK(&dp->fin_work, visock_rdma_fin_work);
	INIT_DELAYED_WORK(&dp->fo_work, visock_fo_work);
	dp->vsk = vsk;
	dp->link = l;
	dp->state = VISOCK_DP_LIVE;
	dp->tx_size = visock_link_peer_rbuf_size(l);
	dp->rx_size = visock_link_rbuf_size(l);
	dp->sbuf = visock_link_sbuf(l);
	dp->rbuf = visock_link_rbuf(l);
	dp->local_token = vsk->local_token;
	dp->peer_token = vsk->peer_token;
	dp->credits = VISOCK_LINK_RQ_DEPTH;
	dp->sq_free = VISOCK_LINK_SQ_DEPTH;
	dp->tx_cqe.done = visock_tx_done;
	dp->ctrl_cqe.done = visock_tx_ctrl_done;
	/* Freed by visock_rdma_destroy_link() from now on. */
	vsk->dp = dp;

	err = visock_link_set_rx(l, visock_rx_event, dp);
	if (err) {
		spin_lock_bh(&dp->lock);
		dp->state = VISOCK_DP_STOPPED;
		spin_unlock_bh(&dp->lock);
		return err;
	}
	return visock_link_set_dead_cb(l, visock_rdma_link_dead, dp);
}

/**
 * visock_rdma_destroy_link() - destroy the link and the data path state
 * @vsk: socket; its @link and @dp may be NULL
 *
 * Completions that still arrive are ignored; once the link is destroyed
 * no completion handler of the connection runs or will run (see
 * visock_link_destroy()), and the state is freed.
 *
 * Context: process context, may sleep; no spinlock held.  Not
 * concurrently with any other data path call of @vsk.
 */
void visock_rdma_destroy_link(struct visock_sock *vsk)
{
	struct visock_dp *dp = vsk->dp;
	struct visock_diag_link d;

	if (vsk->link) {
		visock_link_diag(vsk->link, &d);
		d.vdl_peer_qpn = vsk->peer_qpn;
		/* A link that was up (or killed with its device) goes down. */
		if (d.vdl_state == VISOCK_LINK_STATE_UP ||
		    d.vdl_state == VISOCK_LINK_STATE_DEAD)
			visock_genl_notify_sock(vsk, VISOCK_EVENT_LINK_DOWN, 0,
						&d);
	}

	if (dp) {
		if (vsk->link)
			visock_tx_last_word(dp);
		spin_lock_bh(&dp->lock);
		dp->state = VISOCK_DP_STOPPED;
		spin_unlock_bh(&dp->lock);
		/* TCP's callbacks look at @dp under this lock. */
		if (vsk->tcp) {
			write_lock_bh(&vsk->tcp->sk->sk_callback_lock);
			vsk->dp = NULL;
			write_unlock_bh(&vsk->tcp->sk->sk_callback_lock);
		} else {
			vsk->dp = NULL;
		}
		/*
		 * Nothing can queue them any more (stopped, and out of the
		 * callbacks' reach); neither takes a socket lock.  The
		 * failover work uses the rings, so it goes before the link.
		 */
		cancel_delayed_work_sync(&dp->fo_work);
		cancel_delayed_work_sync(&dp->fin_work);
	}
	visock_link_destroy(vsk->link);
	vsk->link = NULL;
	kfree(dp);
}

/**
 * visock_rdma_ended() - did the RDMA data path of the connection end?
 * @vsk: socket
 *
 * Context: TCP's callbacks, under the internal socket's sk_callback_lock
 * held for reading (which keeps @vsk->dp).
 * Return: true if the connection is in RDMA mode and its data path failed
 * (its error was set for the application then).
 */
bool visock_rdma_ended(struct visock_sock *vsk)
{
	struct visock_dp *dp = vsk->dp;

	return READ_ONCE(vsk->mode) == VISOCK_MODE_RDMA && dp &&
	       READ_ONCE(dp->state) == VISOCK_DP_DEAD;
}

/**
 * visock_rdma_fin_work() - the peer closed TCP: did it close RDMA too?
 * @work: struct visock_dp.fin_work
 *
 * Context: process context (visock_wq); runs before the state is freed.
 */
void visock_rdma_fin_work(struct work_struct *work)
{
	struct visock_dp *dp = container_of(to_delayed_work(work),
					    struct visock_dp, fin_work);
	unsigned int wake = 0;

	spin_lock_bh(&dp->lock);
	/* Failed over, TCP's end is the end of the peer's stream. */
	if (!dp->peer_closed && dp->state == VISOCK_DP_LIVE)
		visock_dp_fail_locked(dp, ECONNRESET, false,
				      "peer closed TCP without closing", 0,
				      &wake);
	spin_unlock_bh(&dp->lock);
	visock_dp_wake(dp, wake);
}

/**
 * visock_rdma_tcp_closed() - the internal TCP connection is closing
 * @vsk: socket in RDMA mode
 *
 * A peer closes its TCP socket only after its data path is finished, and
 * a graceful one sends the closed flag first: its completion (and so our
 * receive completion) precedes the FIN, but our completion handler may
 * run a little after TCP's.  A FIN or reset still without the flag
 * VISOCK_DP_FIN_GRACE later means the peer's data path died (device
 * removed, reset): ours ends too, so that nobody waits forever for a peer
 * that will neither write nor read any more.
 *
 * Context: TCP's state change callback (softirq or process context),
 * under the TCP socket's sk_callback_lock held for reading.
 */
void visock_rdma_tcp_closed(struct visock_sock *vsk)
{
	struct visock_dp *dp = vsk->dp;

	if (dp && !READ_ONCE(dp->peer_closed) &&
	    READ_ONCE(dp->state) == VISOCK_DP_LIVE)
		queue_delayed_work(visock_wq, &dp->fin_work,
				   VISOCK_DP_FIN_GRACE);
}

/**
 * visock_dp_fail_locked() - end the connection with an error
 * @dp: data path state
 * @err: positive errno for the application (ECONNRESET)
 * @tell_peer: try to send a cursor message with the abort flag first
 * @why: reason, logged (rate limited)
 * @detail: a number logged with @why (status, errno)
 * @wake: wake-ups to deliver after dropping the lock
 *
 * Nothing is posted any more afterwards.  Readers get the data already
 * received, then @err once (like TCP after a reset), then end of file.
 *
 * Context: under @dp->lock, any context.
 */
void visock_dp_fail_locked(struct visock_dp *dp, int err, bool tell_peer,
			   const char *why, int detail, unsigned int *wake)
{
	if (!visock_dp_alive(dp->state))
		return;
	net_info_ratelimited("visock: QP %u: connection reset: %s (%d)\n",
			     visock_link_qpn(dp->link), why, detail);
	trace_visock_abort(dp->vsk, err);
	visock_genl_notify_sock(dp->vsk, VISOCK_EVENT_ABORT, -err, NULL);
	if (tell_peer && dp->state == VISOCK_DP_LIVE) {
		dp->abort = true;
		dp->ctrl_pending = true;
		visock_cdc_send_locked(dp, wake);
	}
	dp->state = VISOCK_DP_DEAD;
	dp->err = err;
	/* VISOCK_INFO_F_LINK_UP: the queue pair is of no use any more. */
	clear_bit(VISOCK_F_LINK_UP, &dp->vsk->flags);
	WRITE_ONCE(dp->vsk->sk.sk_err, err);
	*wake |= VISOCK_WAKE_READ | VISOCK_WAKE_WRITE | VISOCK_WAKE_ERR |
		 VISOCK_WAKE_CLOSE | VISOCK_WAKE_STATE;
}

/**
 * visock_dp_wake() - deliver wake-ups collected under the lock
 * @dp: data path state
 * @wake: VISOCK_WAKE_* bits
 *
 * Context: any context, without @dp->lock.
 */
void visock_dp_wake(struct visock_dp *dp, unsigned int wake)
{
	struct sock *sk = &dp->vsk->sk;

	if (wake & VISOCK_WAKE_ERR)
		sk_error_report(sk);
	if (wake & VISOCK_WAKE_READ)
		sk->sk_data_ready(sk);
	if (wake & VISOCK_WAKE_WRITE)
		sk->sk_write_space(sk);
	/* The others wake pollers of their own events only. */
	if (wake & VISOCK_WAKE_STATE)
		sk->sk_state_change(sk);
	if (wq_has_sleeper(&dp->close_wq))
		wake_up(&dp->close_wq);
	/* A background close looks again at anything that changed. */
	if (READ_ONCE(dp->close_armed)) {
		spin_lock_bh(&dp->lock);
		if (dp->close_armed)
			mod_delayed_work(visock_wq, &dp->close_work, 0);
		spin_unlock_bh(&dp->lock);
	}
}

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
		m->credits = VISOCK_LINK_RQ_DEPTH + 1;
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
	    visock_cdc_encode(&m, visock_link_ctrl_slot(dp->link, slot),
			      VISOCK_LINK_CTRL_SLOT) < 0 ||
	    visock_link_post_ctrl(dp->link, slot, VISOCK_CDC_LEN,
				  &dp->ctrl_cqe))
		return;
	dp->tx_slot = (slot + 1) % VISOCK_LINK_SQ_DEPTH;
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

	if (dp->state != VISOCK_DP_LIVE || !dp->sq_free || !dp->credits)
		return -ENOBUFS;
	err = visock_swrep_encode(m, visock_link_ctrl_slot(dp->link, slot),
				  VISOCK_LINK_CTRL_SLOT);
	if (err < 0)
		return err;
	err = visock_link_post_ctrl(dp->link, slot, VISOCK_CDC_LEN,
				    &dp->ctrl_cqe);
	if (err)
		return err;
	dp->tx_slot = (slot + 1) % VISOCK_LINK_SQ_DEPTH;
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
	if (WARN_ON_ONCE(visock_cdc_encode(&m, visock_link_ctrl_slot(dp->link,
								     slot),
					   VISOCK_LINK_CTRL_SLOT) < 0))
		return;
	err = visock_link_post_ctrl(dp->link, slot, VISOCK_CDC_LEN,
				    &dp->ctrl_cqe);
	if (err) {
		dp->ctrl_pending = false;
		if (!dp->abort)
			visock_dp_link_failed_locked(dp,
						     "posting a cursor message failed",
						     err, wake);
		return;
	}
	dp->tx_slot = (slot + 1) % VISOCK_LINK_SQ_DEPTH;
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
	if (dp->credits + m.credits > VISOCK_LINK_RQ_DEPTH)
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
		visock_link_peer_quiet(dp->link);
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
 * let its ring be reused (visock_link_peer_quiet()).
 *
 * Context: completion handler (softirq), under @dp->lock.
 */
void visock_cdc_note_quiet(struct visock_dp *dp, const u8 *buf, u32 len)
{
	struct visock_cdc m;

	if (!visock_cdc_decode(buf, len, &m) && m.token == dp->local_token &&
	    (m.flags & (VISOCK_CDC_F_CLOSED | VISOCK_CDC_F_ABORT)))
		visock_link_peer_quiet(dp->link);
}

static u32 visock_dp_unacked(const struct visock_dp *dp)
{
	s64 d = visock_cursor_diff(dp->tx_size, &dp->tx_acked,
				   &dp->tx_written);

	return d < 0 ? 0 : (u32)d;
}

/**
 * visock_rdma_poll() - poll mask of a connection in RDMA mode
 * @vsk: socket
 *
 * Like TCP: readable with at least SO_RCVLOWAT bytes or at end of file,
 * writable with visock_tx_wake_space() (a quarter of the peer's ring)
 * free (consumer updates release at least that much when the ring is
 * more than half full, and wake pollers from it on), EPOLLRDHUP once
 * the peer finished writing or we shut down reading, EPOLLHUP when both
 * directions are done, EPOLLERR on error.
 *
 * Context: process context, the caller's poll().
 * Return: the event mask.
 */
__poll_t visock_rdma_poll(struct visock_sock *vsk)
{
	struct visock_dp *dp = vsk->dp;
	struct sock *sk = &vsk->sk;
	u32 avail, space, min_space;
	bool peer_done, peer_closed, dead;
	__poll_t mask = 0;
	u8 shutdown;

	spin_lock_bh(&dp->lock);
	avail = visock_rx_avail_locked(dp);
	space = visock_tx_space_locked(dp);
	peer_done = dp->peer_done;
	peer_closed = dp->peer_closed;
	dead = !visock_dp_alive(dp->state);
	min_space = visock_tx_wake_space(dp->tx_size);
	spin_unlock_bh(&dp->lock);

	shutdown = READ_ONCE(sk->sk_shutdown);
	if (READ_ONCE(sk->sk_err))
		mask |= EPOLLERR;
	if (shutdown == SHUTDOWN_MASK || dead ||
	    (peer_done && (shutdown & SEND_SHUTDOWN)))
		mask |= EPOLLHUP;
	if ((shutdown & RCV_SHUTDOWN) || peer_done || dead)
		mask |= EPOLLIN | EPOLLRDNORM | EPOLLRDHUP;
	if (avail && avail >= (u32)sock_rcvlowat(sk, 0, INT_MAX))
		mask |= EPOLLIN | EPOLLRDNORM;
	if ((shutdown & SEND_SHUTDOWN) || dead || peer_closed ||
	    space >= min_space)
		mask |= EPOLLOUT | EPOLLWRNORM;
	return mask;
}

/**
 * visock_rdma_ioctl() - socket ioctls answered by the data path
 * @vsk: socket in RDMA mode
 * @cmd: SIOCINQ (unread bytes in our ring), SIOCOUTQ (bytes written but
 *	not yet in the peer's ring: their RDMA WRITE has not completed, as
 *	TCP counts bytes not yet acknowledged) or SIOCOUTQNSD (bytes written
 *	but not yet posted)
 * @arg: user pointer to an int
 *
 * Context: process context.
 * Return: 0, -EFAULT, or -ENOIOCTLCMD for any other @cmd.
 */
int visock_rdma_ioctl(struct visock_sock *vsk, unsigned int cmd,
		      unsigned long arg)
{
	struct visock_dp *dp = vsk->dp;
	int val;

	spin_lock_bh(&dp->lock);
	switch (cmd) {
	case SIOCINQ:
		val = visock_rx_avail_locked(dp);
		break;
	case SIOCOUTQ:
		val = visock_dp_unacked(dp);
		break;
	case SIOCOUTQNSD:
		val = visock_dp_unsent(dp);
		break;
	default:
		val = -1;
		break;
	}
	spin_unlock_bh(&dp->lock);
	if (val < 0)
		return -ENOIOCTLCMD;
	return put_user(val, (int __user *)arg);
}

/**
 * visock_rdma_info() - data path part of VISOCK_INFO
 * @vsk: socket, in RDMA mode or with a link
 * @info: filled in
 *
 * Also reports the payload bytes of the internal TCP connection, which
 * stay constant once the handshake is done.
 *
 * Context: process context, under lock_sock(@vsk).
 */
void visock_rdma_info(struct visock_sock *vsk, struct visock_info *info)
{
	struct visock_dp *dp = vsk->dp;

	if (vsk->tcp) {
		const struct tcp_sock *tp = tcp_sk(vsk->tcp->sk);

		info->vi_tcp_bytes_sent = READ_ONCE(tp->bytes_sent);
		info->vi_tcp_bytes_rcvd = READ_ONCE(tp->bytes_received);
	}
	if (!dp)
		return;
	spin_lock_bh(&dp->lock);
	info->vi_rdma_bytes_sent = dp->bytes_sent;
	info->vi_rdma_bytes_rcvd = dp->bytes_rcvd;
	info->vi_rdma_wr_posted = dp->wr_posted;
	info->vi_rdma_wc = dp->wc;
	info->vi_cdc_sent = dp->cdc_sent;
	info->vi_cdc_rcvd = dp->cdc_rcvd;
	info->vi_tx_waits = dp->tx_waits;
	info->vi_rdma_credits = dp->credits;
	info->vi_rdma_state = dp->state;
	if (dp->failovers)
		info->vi_flags |= VISOCK_INFO_F_FAILOVER;
	spin_unlock_bh(&dp->lock);
}
