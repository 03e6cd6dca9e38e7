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
 * visock_rdma_prepare() until visock_rdma_destroy_vc(), which first
 * marks it stopped and then destroys the vc; destroying the vc waits
 * until every request the connection posted on the shared QP completed
 * (each send completion handler ends with visock_vc_wc_done()), so when
 * it returns no completion handler runs or will run, and the state can
 * be freed.  Completion handlers only take @dp->lock,
 * update the state, post (receive requests, writes, cursor messages) and
 * wake the socket's waiters; they never sleep and never take lock_sock().
 * The socket itself outlives its vc: every path that drops the last
 * reference destroys the vc first (visock_release(), the child destroy
 * path of a listener, visock_tx_close_work()).
 *
 * shutdown() and close() are in visock_close.c.
 *
 * Locking
 * -------
 *   lock_sock(vsk)   serialises sendmsg(), recvmsg(), shutdown() and
 *                    getsockopt() of one socket; released while waiting
 *   struct visock_dp.lock   BH spinlock, all data path state; inside
 *                    lock_sock() and inside the QP's mutex (dead_cb)
 *   struct visock_qp.post_lock   inside visock_dp.lock
 * Socket callbacks (sk_data_ready, ...) are called without @dp->lock.
 */
#include <linux/jiffies.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <net/sock.h>

#include "visock_debugfs.h"
#include "visock_rdma.h"


/**
 * visock_tx_space_locked() - room left in the peer's ring
 * @dp: data path state
 *
 * Context: under @dp->lock.
 * Return: bytes the application may write now.
 */
u32 visock_tx_space_locked(const struct visock_dp *dp)
{
	lockdep_assert_held(&dp->lock);
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

	lockdep_assert_held(&dp->lock);
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
		n = visock_vc_post_write(dp->vc, dp->tx_sent.count, unsent,
					 cpu_to_be32(imm), &dp->tx_cqe);
		if (n < 0) {
			visock_dp_vc_failed_locked(dp, "posting a write failed",
						   n, wake);
			return;
		}
		/* Byte counts of the requests, for SIOCOUTQ. */
		ret2 = min(unsent, dp->tx_size - dp->tx_sent.count);
		dp->wr_len[dp->wr_tail++ % VISOCK_VC_SQ_DEPTH] = ret2;
		if (n > 1)
			dp->wr_len[dp->wr_tail++ % VISOCK_VC_SQ_DEPTH] =
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
	struct visock_vc *l = dp->vc;
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
					     VISOCK_VC_SQ_DEPTH]);
	if (wc->status != IB_WC_SUCCESS)
		visock_dp_vc_failed_locked(dp, "send failed", wc->status,
					   &wake);
	else
		visock_tx_push_locked(dp, &wake);
out:
	spin_unlock_bh(&dp->lock);
	visock_dp_wake(dp, wake);
	/* Last: @dp may be freed as soon as nothing is outstanding. */
	visock_vc_wc_done(l, wc);
}

/**
 * visock_tx_done() - completion of an RDMA WRITE
 * @cq: the QP's completion queue
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
 * @cq: the QP's completion queue
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

	lockdep_assert_held(&dp->lock);
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

/*
 * Test hook forge_write (visock_debugfs.c): once everything this
 * connection wrote is posted, one forged WRITE of the marker (a record
 * of it with a transform) to where the next byte would land.  Neither
 * the cursors nor the credits move: the peer is not told by us.  Under
 * lock_sock(), so no sendmsg() copies into the free part of the send
 * buffer that the forged bytes go through.
 */
static void visock_tx_test_forge(struct visock_dp *dp)
{
	static const char marker[] = VISOCK_TEST_FORGE_MARKER;
	u32 n = READ_ONCE(visock_test_forge_write), wire, off, imm, i;
	u8 *payload, *buf;
	int err;

	if (!n || n > VISOCK_TEST_FORGE_MAX ||
	    dp->local_token != READ_ONCE(visock_test_forge_token))
		return;
	lockdep_assert_held(&dp->vsk->sk.sk_lock);
	wire = n + (dp->rec ? visock_dp_rec_overhead(dp) : 0);
	payload = kmalloc(n, GFP_KERNEL);
	buf = kmalloc(wire, GFP_KERNEL);
	if (!payload || !buf)
		goto out;
	for (i = 0; i < n; i++)
		payload[i] = marker[i % (sizeof(marker) - 1)];
	if (dp->rec)
		visock_dp_rec_forge(dp, payload, n, buf);
	else
		memcpy(buf, payload, n);
	if (visock_imm_encode(dp->peer_token & VISOCK_TOKEN_IDX_MASK, wire, 0,
			      &imm))
		goto out;

	spin_lock_bh(&dp->lock);
	off = dp->tx_written.count;
	/* Else it stays armed for a later sendmsg(). */
	if (dp->state != VISOCK_DP_LIVE || dp->sw_pending ||
	    visock_dp_unsent(dp) || visock_tx_space_locked(dp) < wire ||
	    wire > dp->tx_size - off ||
	    cmpxchg(&visock_test_forge_write, n, 0) != n) {
		spin_unlock_bh(&dp->lock);
		goto out;
	}
	memcpy(dp->sbuf + off, buf, wire);
	err = visock_vc_test_forge(dp->vc, off, wire, cpu_to_be32(imm));
	if (err)
		WRITE_ONCE(visock_test_forge_write, n);
	else
		WRITE_ONCE(visock_test_forge_posted,
			   READ_ONCE(visock_test_forge_posted) + 1);
	spin_unlock_bh(&dp->lock);
out:
	kfree(payload);
	kfree(buf);
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
	u32 space, off, n, want, need, ovh, wire;
	bool wait_space;
	long timeo;
	int err = 0;

	len = min_t(size_t, len, INT_MAX);
	timeo = sock_sndtimeo(sk, msg->msg_flags & MSG_DONTWAIT);
	lock_sock(sk);
	add_wait_queue(sk_sleep(sk), &wait);
	while (copied < len) {
		/* Records: room for a record's header and tag as well. */
		ovh = dp->rec ? visock_dp_rec_overhead(dp) : 0;
		need = dp->rec ? visock_dp_rec_need(dp, len - copied) :
				 visock_tx_need(dp->tx_size, len - copied);
		spin_lock_bh(&dp->lock);
		err = visock_tx_check(dp, copied);
		space = visock_tx_space_locked(dp);
		off = dp->tx_written.count;
		/*
		 * Wait for a useful amount of space; without time to wait
		 * (non-blocking, or SO_SNDTIMEO ran out) take what there is.
		 */
		wait_space = !err && space < need && (space <= ovh || timeo);
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

		if (dp->rec) {
			/* One sealed record: @n payload bytes, @wire in all. */
			int ret = visock_dp_rec_send(dp, off, space,
						     len - copied, msg, &wire,
						     &want);

			if (ret < 0) {
				spin_lock_bh(&dp->lock);
				visock_dp_fail_locked(dp, ECONNRESET, true,
						      "sealing a record failed",
						      ret, &wake);
				spin_unlock_bh(&dp->lock);
				visock_dp_wake(dp, wake);
				wake = 0;
				err = -ECONNRESET;
				break;
			}
			n = ret;
		} else {
			want = min_t(size_t, space, len - copied);
			n = visock_tx_copy(dp, off, want, msg);
			wire = n;
		}
		if (n) {
			spin_lock_bh(&dp->lock);
			visock_cursor_add(&dp->tx_written, dp->tx_size, wire);
			dp->fo_tx_end += wire;
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
	if (unlikely(READ_ONCE(visock_test_forge_write)))
		visock_tx_test_forge(dp);
	release_sock(sk);

	if (copied)
		return copied;
	if (err == -EPIPE && !(msg->msg_flags & MSG_NOSIGNAL))
		send_sig(SIGPIPE, current, 0);
	return err;
}
