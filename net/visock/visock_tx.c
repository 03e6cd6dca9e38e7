// SPDX-License-Identifier: GPL-2.0
/*
 * visock: RDMA data path - sending.
 *
 * The send buffer mirrors the peer's receive ring: the byte at stream
 * position p sits at offset p % size in both.  sendmsg() copies the
 * application's bytes into the send buffer as far as the peer's last
 * consumer cursor allows (struct visock_dp.tx_written), all of a call at
 * once when it fits, and visock_tx_push_locked() posts what is not posted
 * yet (@tx_sent) as one RDMA WRITE WITH IMMEDIATE per VISOCK_IMM_LEN_MAX
 * bytes, or a WRITE plus a WRITE WITH IMMEDIATE when the range wraps,
 * whenever a send queue slot and a credit are available.  Completions,
 * returned credits and consumer updates push again, so nothing waits for
 * the application.
 *
 * A blocking writer that finds too little space waits until
 * visock_tx_need() bytes are free (all it has left, at most a quarter of
 * the ring) instead of copying and posting every few bytes the reader
 * releases, and is only woken when that much is free (@tx_need).  It
 * sends no message to say that it waits: the reader's consumer updates
 * (visock_cons_update_due()) release that much on their own, at the
 * latest once the reader consumed everything.  The immediate data
 * carries the peer's connection index on its QP, the byte count (up to
 * VISOCK_IMM_LEN_MAX per transfer) and the credits we return
 * (visock_wire.h).
 *
 * Lifetime
 * --------
 * struct visock_dp belongs to the visock socket (@vsk->dp) from
 * visock_rdma_prepare() until visock_rdma_destroy_link(), which first
 * marks it stopped and then destroys the link; destroying the link waits
 * until every request the connection posted on the shared QP completed
 * (each send completion handler ends with visock_link_wc_done()), so when
 * it returns no completion handler runs or will run, and the state can
 * be freed.  Completion handlers only take @dp->lock,
 * update the state, post (receive requests, writes, cursor messages) and
 * wake the socket's waiters; they never sleep and never take lock_sock().
 * The socket itself outlives its link: every path that drops the last
 * reference destroys the link first (visock_release(), the child destroy
 * path of a listener, visock_tx_close_work()).
 *
 * close() is graceful unless SO_LINGER with a zero timeout is set or
 * unread data is left (then, as TCP, the connection is reset: a cursor
 * message with the abort flag and a TCP reset).  A graceful close
 * announces done_writing and closed after the last data and returns; a
 * work item (@close_work, holding a socket reference, run again whenever a
 * completion or the peer's flags arrive, without waiting in between)
 * finishes once every posted request completed, at most
 * VISOCK_CLOSE_TIMEOUT later (then it resets the connection): it destroys
 * the link and closes the internal TCP socket.  With SO_LINGER and a timeout, close() itself waits that long.
 *
 * Locking
 * -------
 *   lock_sock(vsk)   serialises sendmsg(), recvmsg(), shutdown() and
 *                    getsockopt() of one socket; released while waiting
 *   struct visock_dp.lock   BH spinlock, all data path state; inside
 *                    lock_sock() and inside the link's mutex (dead_cb)
 *   struct visock_link.post_lock   inside visock_dp.lock
 * Socket callbacks (sk_data_ready, ...) are called without @dp->lock.
 */
#include <linux/jiffies.h>
#include <linux/sched/signal.h>
#include <linux/uio.h>
#include <net/sock.h>

#include "visock_rdma.h"
#include "visock_debugfs.h"
#include "visock_tcp.h"

/* How long a graceful close may take in the background. */
#define VISOCK_CLOSE_TIMEOUT	(30 * HZ)
/* How long to give the abort message after a reset. */
#define VISOCK_ABORT_WAIT	(HZ / 2)

/**
 * visock_tx_space_locked() - room left in the peer's ring
 * @dp: data path state
 *
 * Context: under @dp->lock.
 * Return: bytes the application may write now.
 */
u32 visock_tx_space_locked(const struct visock_dp *dp)
{
	return dp->tx_size - visock_ring_used(dp->tx_size, &dp->tx_written,
					      &dp->tx_peer_cons);
}

/**
 * visock_tx_push_locked() - post whatever may be posted now
 * @dp: data path state
 * @wake: wake-ups to deliver after dropping the lock
 *
 * Posts the unsent bytes of the send buffer (leaving
 * VISOCK_DP_CREDIT_RESERVE credits for cursor messages and never
 * exceeding the send queue), then a cursor message if one is pending or
 * owed: done_writing / closed after the last byte, or credits to return.
 *
 * Context: under @dp->lock, process or softirq context.
 */
void visock_tx_push_locked(struct visock_dp *dp, unsigned int *wake)
{
	u32 unsent, ret, ret2, imm, nwr;
	int n;

	if (dp->state == VISOCK_DP_FAILOVER || dp->state == VISOCK_DP_TCP) {
		/* visock_failover.c moves the rings now. */
		visock_fo_kick(dp);
		return;
	}
	/* A lazy client's data path sends nothing before the reply. */
	if (dp->state != VISOCK_DP_LIVE || dp->sw_pending)
		return;
	while ((unsent = visock_dp_unsent(dp))) {
		/* The immediate data counts up to VISOCK_IMM_LEN_MAX bytes. */
		unsent = min(unsent, VISOCK_IMM_LEN_MAX);
		nwr = dp->tx_sent.count + unsent > dp->tx_size ? 2 : 1;
		if (dp->sq_free < nwr ||
		    dp->credits <= VISOCK_DP_CREDIT_RESERVE)
			break;
		ret = min_t(u32, dp->owed, VISOCK_IMM_CREDITS_MAX);
		if (WARN_ON_ONCE(visock_imm_encode(dp->peer_token &
						   VISOCK_TOKEN_IDX_MASK,
						   unsent, ret, &imm)))
			break;
		n = visock_link_post_write(dp->link, dp->tx_sent.count, unsent,
					   cpu_to_be32(imm), &dp->tx_cqe);
		if (n < 0) {
			visock_dp_link_failed_locked(dp, "posting a write failed",
						     n, wake);
			return;
		}
		/* Byte counts of the requests, for SIOCOUTQ. */
		ret2 = min(unsent, dp->tx_size - dp->tx_sent.count);
		dp->wr_len[dp->wr_tail++ % VISOCK_LINK_SQ_DEPTH] = ret2;
		if (n > 1)
			dp->wr_len[dp->wr_tail++ % VISOCK_LINK_SQ_DEPTH] =
				unsent - ret2;
		dp->sq_free -= n;
		dp->credits--;
		dp->owed -= ret;
		dp->wr_posted += n;
		dp->bytes_sent += unsent;
		VISOCK_STAT_ADD(&dp->vsk->sk, rdma_wr_posted, n);
		VISOCK_STAT_ADD(&dp->vsk->sk, rdma_bytes_sent, unsent);
		visock_cursor_add(&dp->tx_sent, dp->tx_size, unsent);
	}
	if (!unsent && dp->tx_shut && !dp->done_sent)
		dp->ctrl_pending = true;
	if (visock_dp_closed_due(dp, unsent) && !dp->closed_sent)
		dp->ctrl_pending = true;
	if (dp->owed >= VISOCK_DP_CREDIT_RETURN)
		dp->ctrl_pending = true;
	visock_cdc_send_locked(dp, wake);
}

static void visock_tx_complete(struct visock_dp *dp, struct ib_wc *wc,
			       bool write)
{
	struct visock_link *l = dp->link;
	unsigned int wake = VISOCK_WAKE_CLOSE;

	spin_lock_bh(&dp->lock);
	dp->wc++;
	VISOCK_STAT_ADD(&dp->vsk->sk, rdma_wc, 1);
	dp->sq_free++;
	if (dp->state != VISOCK_DP_LIVE) {
		/* Failed: an abort flag may still wait for this slot. */
		if (dp->state == VISOCK_DP_DEAD)
			visock_cdc_send_locked(dp, &wake);
		goto out;	/* failed, failing over or stopped */
	}
	if (write && dp->wr_head != dp->wr_tail)
		visock_cursor_add(&dp->tx_acked, dp->tx_size,
				  dp->wr_len[dp->wr_head++ %
					     VISOCK_LINK_SQ_DEPTH]);
	if (wc->status != IB_WC_SUCCESS)
		visock_dp_link_failed_locked(dp, "send failed", wc->status,
					     &wake);
	else
		visock_tx_push_locked(dp, &wake);
out:
	spin_unlock_bh(&dp->lock);
	visock_dp_wake(dp, wake);
	/* Last: @dp may be freed as soon as nothing is outstanding. */
	visock_link_wc_done(l, wc);
}

/**
 * visock_tx_done() - completion of an RDMA WRITE
 * @cq: the link's completion queue
 * @wc: the completion
 *
 * Frees a send queue slot and pushes again; an error (including a flush
 * while the connection is live) resets the connection.
 *
 * Context: softirq (the CQ is polled with IB_POLL_SOFTIRQ).
 */
void visock_tx_done(struct ib_cq *cq, struct ib_wc *wc)
{
	visock_tx_complete(container_of(wc->wr_cqe, struct visock_dp, tx_cqe),
			   wc, true);
}

/**
 * visock_tx_ctrl_done() - completion of a cursor message
 * @cq: the link's completion queue
 * @wc: the completion
 *
 * As visock_tx_done().
 *
 * Context: softirq (the CQ is polled with IB_POLL_SOFTIRQ).
 */
void visock_tx_ctrl_done(struct ib_cq *cq, struct ib_wc *wc)
{
	visock_tx_complete(container_of(wc->wr_cqe, struct visock_dp,
					ctrl_cqe), wc, false);
}

/**
 * visock_tx_wake_min_locked() - space that wakes writers
 * @dp: data path state
 *
 * A consumer update that leaves less space than this wakes nobody: a
 * blocked writer waits for @dp->tx_need bytes, a poller for
 * visock_tx_wake_space() (EPOLLOUT).
 *
 * Context: under @dp->lock.
 * Return: bytes of free space from which sk_write_space() is called.
 */
u32 visock_tx_wake_min_locked(const struct visock_dp *dp)
{
	u32 min = visock_tx_wake_space(dp->tx_size);

	return dp->tx_need ? min_t(u32, dp->tx_need, min) : min;
}

/* Wait condition of a writer that needs @need bytes; takes @dp->lock. */
static bool visock_tx_writable(struct visock_dp *dp, u32 need)
{
	struct sock *sk = &dp->vsk->sk;
	bool ret;

	spin_lock_bh(&dp->lock);
	ret = visock_tx_space_locked(dp) >= need ||
	      !visock_dp_alive(dp->state) || dp->peer_closed;
	spin_unlock_bh(&dp->lock);
	return ret || READ_ONCE(sk->sk_err) ||
	       (READ_ONCE(sk->sk_shutdown) & SEND_SHUTDOWN);
}

/*
 * Why a write cannot go on, or 0.  A pending error is only consumed (to
 * be returned) when nothing was copied yet.  Under @dp->lock and
 * lock_sock().
 */
static int visock_tx_check(struct visock_dp *dp, size_t copied)
{
	struct sock *sk = &dp->vsk->sk;

	if (READ_ONCE(sk->sk_err))
		return copied ? -EPIPE : sock_error(sk);
	if (!visock_dp_alive(dp->state) || dp->peer_closed ||
	    (sk->sk_shutdown & SEND_SHUTDOWN))
		return -EPIPE;
	return 0;
}

/* Copy @n bytes of @msg to the send buffer at @off, wrapping. */
static size_t visock_tx_copy(struct visock_dp *dp, u32 off, u32 n,
			     struct msghdr *msg)
{
	u32 first = min(n, dp->tx_size - off);
	size_t got;

	got = copy_from_iter(dp->sbuf + off, first, &msg->msg_iter);
	if (got == first && n > first)
		got += copy_from_iter(dp->sbuf, n - first, &msg->msg_iter);
	return got;
}

/**
 * visock_tx_sendmsg() - sendmsg() of a connection in RDMA mode
 * @vsk: socket
 * @msg: message; MSG_DONTWAIT and MSG_NOSIGNAL are honoured, everything
 *	else (MSG_MORE, MSG_SPLICE_PAGES, ...) is a plain copy
 * @len: bytes to send
 *
 * Like TCP: blocks while the peer's ring is full (SO_SNDTIMEO, signals),
 * returns a partial count when interrupted after some bytes, EPIPE (and
 * SIGPIPE unless MSG_NOSIGNAL) after shutdown or the peer's close, and a
 * pending error (ECONNRESET) once.
 *
 * Context: process context, no lock held.
 * Return: bytes sent or a negative errno.
 */
int visock_tx_sendmsg(struct visock_sock *vsk, struct msghdr *msg,
		      size_t len)
{
	DEFINE_WAIT_FUNC(wait, woken_wake_function);
	struct visock_dp *dp = vsk->dp;
	struct sock *sk = &vsk->sk;
	unsigned int wake = 0;
	size_t copied = 0;
	u32 space, off, n, want, need;
	bool wait_space;
	long timeo;
	int err = 0;

	len = min_t(size_t, len, INT_MAX);
	timeo = sock_sndtimeo(sk, msg->msg_flags & MSG_DONTWAIT);
	lock_sock(sk);
	add_wait_queue(sk_sleep(sk), &wait);
	while (copied < len) {
		need = visock_tx_need(dp->tx_size, len - copied);
		spin_lock_bh(&dp->lock);
		err = visock_tx_check(dp, copied);
		space = visock_tx_space_locked(dp);
		off = dp->tx_written.count;
		/*
		 * Wait for a useful amount of space; without time to wait
		 * (non-blocking, or SO_SNDTIMEO ran out) take what there is.
		 */
		wait_space = !err && space < need && (!space || timeo);
		if (wait_space)
			err = visock_wait_err(timeo);
		if (wait_space && !err) {
			dp->tx_waits++;
			VISOCK_STAT_ADD(&dp->vsk->sk, tx_waits, 1);
			/* Several writers (lock_sock() is released): the least. */
			if (!dp->tx_need || need < dp->tx_need)
				dp->tx_need = need;
		}
		/* Told the peer with any cursor message we send meanwhile. */
		dp->tx_blocked = wait_space;
		spin_unlock_bh(&dp->lock);
		if (err)
			break;
		if (wait_space) {
			sk_wait_event(sk, &timeo, visock_tx_writable(dp, need),
				      &wait);
			continue;
		}

		want = min_t(size_t, space, len - copied);
		n = visock_tx_copy(dp, off, want, msg);
		if (n) {
			spin_lock_bh(&dp->lock);
			visock_cursor_add(&dp->tx_written, dp->tx_size, n);
			dp->fo_tx_end += n;
			visock_tx_push_locked(dp, &wake);
			spin_unlock_bh(&dp->lock);
			visock_dp_wake(dp, wake);
			wake = 0;
			copied += n;
		}
		if (n < want) {
			err = -EFAULT;
			break;
		}
	}
	remove_wait_queue(sk_sleep(sk), &wait);
	spin_lock_bh(&dp->lock);
	dp->tx_blocked = false;
	spin_unlock_bh(&dp->lock);
	release_sock(sk);

	if (copied)
		return copied;
	if (err == -EPIPE && !(msg->msg_flags & MSG_NOSIGNAL))
		send_sig(SIGPIPE, current, 0);
	return err;
}

/**
 * visock_tx_shutdown() - shutdown() of a connection in RDMA mode
 * @vsk: socket
 * @how: SHUT_RD, SHUT_WR or SHUT_RDWR
 *
 * SHUT_WR announces done_writing after the last byte written (the cursor
 * message follows the data on the same QP, so RC ordering delivers it
 * after the data).  SHUT_RD makes reads return end of file.
 *
 * Context: process context, no lock held.
 * Return: 0, or -EINVAL for a bad @how.
 */
int visock_tx_shutdown(struct visock_sock *vsk, int how)
{
	struct visock_dp *dp = vsk->dp;
	struct sock *sk = &vsk->sk;
	unsigned int wake = VISOCK_WAKE_READ | VISOCK_WAKE_WRITE;

	how++;
	if ((how & ~SHUTDOWN_MASK) || !how)
		return -EINVAL;
	lock_sock(sk);
	WRITE_ONCE(sk->sk_shutdown, sk->sk_shutdown | how);
	if (how & SEND_SHUTDOWN) {
		spin_lock_bh(&dp->lock);
		dp->tx_shut = true;
		visock_tx_push_locked(dp, &wake);
		spin_unlock_bh(&dp->lock);
	}
	release_sock(sk);
	visock_dp_wake(dp, wake);
	sk->sk_state_change(sk);
	return 0;
}

/*
 * Nothing more to wait for before the link and the internal TCP socket
 * may go.  While failing over, the send queue is empty as soon as the
 * QP flushed it, but flushed writes and a flushed closed flag never
 * reached the peer, which still waits for our failover message and then
 * for the rest of the stream over TCP: only a peer that closed itself
 * needs nothing more.
 */
static bool visock_tx_close_done(struct visock_dp *dp)
{
	bool done;

	spin_lock_bh(&dp->lock);
	switch (dp->state) {
	case VISOCK_DP_TCP:
		/* Everything handed to TCP, and its FIN. */
		done = dp->fo_shut_sent && dp->fo_tx_pos == dp->fo_tx_end;
		break;
	case VISOCK_DP_FAILOVER:
		done = dp->peer_closed;
		break;
	case VISOCK_DP_LIVE:
		/*
		 * Our closed flag goes out even if the peer closed first: its
		 * receive ring lingers until it comes.  Without a credit it
		 * cannot, and no credit comes back from a closed peer.
		 */
		done = dp->sq_free == VISOCK_LINK_SQ_DEPTH &&
		       (dp->closed_sent || (dp->peer_closed && !dp->credits));
		break;
	default:
		done = true;
		break;
	}
	spin_unlock_bh(&dp->lock);
	return done;
}

static bool visock_tx_sq_idle(struct visock_dp *dp)
{
	bool idle;

	spin_lock_bh(&dp->lock);
	idle = dp->sq_free == VISOCK_LINK_SQ_DEPTH;
	spin_unlock_bh(&dp->lock);
	return idle;
}

/*
 * Reset the connection: abort flag to the peer if a credit allows, a
 * short wait for it to go out, and a TCP reset when the internal socket
 * is released.
 */
static void visock_tx_reset(struct visock_sock *vsk)
{
	struct visock_dp *dp = vsk->dp;
	unsigned int wake = 0;

	spin_lock_bh(&dp->lock);
	visock_dp_fail_locked(dp, ECONNRESET, true, "reset by close", 0,
			      &wake);
	spin_unlock_bh(&dp->lock);
	visock_dp_wake(dp, wake);
	wait_event_timeout(dp->close_wq, visock_tx_sq_idle(dp),
			   VISOCK_ABORT_WAIT);
	/* visock_tcp_sync_opts() hands this to the TCP socket. */
	sock_no_linger(&vsk->sk);
}

/* The last word went out, or cannot go: see visock_tx_last_word(). */
static bool visock_tx_last_word_done(struct visock_dp *dp)
{
	bool done;

	spin_lock_bh(&dp->lock);
	done = dp->closed_sent || dp->abort_sent || !dp->ctrl_pending ||
	       !dp->credits ||
	       (dp->state != VISOCK_DP_LIVE && dp->state != VISOCK_DP_DEAD);
	spin_unlock_bh(&dp->lock);
	return done;
}

/**
 * visock_tx_last_word() - tell the peer that we write nothing more
 * @dp: data path state of a connection whose link is about to go
 *
 * The peer keeps the ring and the token index it gave us until our
 * closed or abort flag arrives (its end of the connection lingers on the
 * QP, see visock_link_destroy()), so every connection ends with one of
 * them while the QP works.  One that has not sent either - it failed or
 * was reset by the peer, its handshake ended after the link was
 * connected, or its closed flag did not go out yet - sends one now:
 * closed if everything written went out (or the peer closed), else
 * abort.  Waits up to VISOCK_ABORT_WAIT for a send queue slot; without a
 * credit nothing can be sent (the peer then lingers until the QP ends).
 * Nothing is sent either once the connection failed over: its link was
 * found broken (the QP goes once its connections have, taking the
 * peer's lingering ones with it) or the peer moved to TCP.
 *
 * Context: process context, may sleep; from visock_rdma_destroy_link()
 * before it stops the data path.
 */
void visock_tx_last_word(struct visock_dp *dp)
{
	unsigned int wake = 0;
	bool wait;

	if (!visock_link_peer_listens(dp->link) ||
	    unlikely(READ_ONCE(visock_test_mute_end_flags)))
		return;
	spin_lock_bh(&dp->lock);
	/* Not after a failover: the link was given up (see above). */
	wait = (dp->state == VISOCK_DP_LIVE || dp->state == VISOCK_DP_DEAD) &&
	       !dp->failovers && !dp->closed_sent && !dp->abort_sent &&
	       dp->credits;
	if (wait) {
		if (dp->state == VISOCK_DP_DEAD ||
		    !visock_dp_closed_due(dp, visock_dp_unsent(dp)))
			dp->abort = true;
		dp->ctrl_pending = true;
		visock_cdc_send_locked(dp, &wake);
	}
	spin_unlock_bh(&dp->lock);
	visock_dp_wake(dp, wake);
	if (wait)
		wait_event_timeout(dp->close_wq, visock_tx_last_word_done(dp),
				   VISOCK_ABORT_WAIT);
}

/**
 * visock_tx_close() - start closing a connection in RDMA mode
 * @vsk: socket being released, in RDMA mode
 *
 * Resets the connection (SO_LINGER with timeout 0, unread data, or the
 * data path failed: the TCP reset tells a peer that waits for us), or
 * announces done_writing and closed after the last byte.  With SO_LINGER
 * and a timeout, waits up to that long for everything to complete and
 * resets the connection if it did not.  Then hands the rest - waiting for
 * outstanding requests (graceful close without SO_LINGER), destroying the
 * link and closing the internal TCP socket - to visock_tx_close_work()
 * with a socket reference, so that close() never waits for the device.
 *
 * Context: process context, from visock_release(), no lock held.
 * Return: true: the close work now owns the teardown of the link and
 * the internal TCP socket.
 */
bool visock_tx_close(struct visock_sock *vsk)
{
	struct visock_dp *dp = vsk->dp;
	struct sock *sk = &vsk->sk;
	unsigned int wake = 0;
	bool reset;

	reset = sock_flag(sk, SOCK_LINGER) && !READ_ONCE(sk->sk_lingertime);
	spin_lock_bh(&dp->lock);
	/* As TCP: unread data resets; so does a failed data path. */
	if (visock_rx_avail_locked(dp) || !visock_dp_alive(dp->state))
		reset = true;
	if (!reset) {
		dp->tx_shut = true;
		dp->closing = true;
		visock_tx_push_locked(dp, &wake);
	}
	spin_unlock_bh(&dp->lock);
	visock_dp_wake(dp, wake);

	dp->close_deadline = jiffies + VISOCK_CLOSE_TIMEOUT;
	if (reset) {
		visock_tx_reset(vsk);
		dp->close_deadline = jiffies;
	} else if (sock_flag(sk, SOCK_LINGER)) {
		wait_event_timeout(dp->close_wq, visock_tx_close_done(dp),
				   READ_ONCE(sk->sk_lingertime));
		if (!visock_tx_close_done(dp))
			visock_tx_reset(vsk);
		dp->close_deadline = jiffies;
	}
	/*
	 * Draining and destroying the queue pair waits for the device; a
	 * stuck one must not keep close() from returning.
	 */
	sock_hold(sk);
	spin_lock_bh(&dp->lock);
	dp->close_armed = true;
	spin_unlock_bh(&dp->lock);
	queue_delayed_work(visock_wq, &dp->close_work, 0);
	return true;
}

/**
 * visock_tx_close_work() - finish a graceful close in the background
 * @work: struct visock_dp.close_work
 *
 * Runs when something may have finished the close (kicked by
 * visock_dp_wake()) and at the deadline; until everything posted has
 * completed (or the deadline passed: then it resets the connection) it
 * only queues itself again, so a closing connection does not hold a
 * worker.  Then it destroys the link (freeing the data path state, which
 * includes @work: nothing touches it afterwards), closes the internal TCP
 * socket and drops the reference visock_tx_close() took.
 *
 * Context: process context (visock_wq).
 */
void visock_tx_close_work(struct work_struct *work)
{
	struct visock_dp *dp = container_of(to_delayed_work(work),
					    struct visock_dp, close_work);
	struct visock_sock *vsk = dp->vsk;
	long left = (long)(dp->close_deadline - jiffies);

	if (left > 0 && !visock_tx_close_done(dp)) {
		/* Kicked earlier if a completion or the peer's flag comes. */
		queue_delayed_work(visock_wq, &dp->close_work, left);
		return;
	}
	/* No more kicks: what is queued now is this run's only. */
	spin_lock_bh(&dp->lock);
	dp->close_armed = false;
	spin_unlock_bh(&dp->lock);
	cancel_delayed_work(&dp->close_work);
	if (!visock_tx_close_done(dp))
		visock_tx_reset(vsk);
	visock_rdma_destroy_link(vsk);
	if (vsk->tcp)
		visock_tcp_sync_opts(vsk);
	visock_tcp_release(vsk);
	sock_put(&vsk->sk);
}
