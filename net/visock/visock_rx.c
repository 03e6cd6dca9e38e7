// SPDX-License-Identifier: GPL-2.0
/*
 * visock: RDMA data path - receiving.
 *
 * The peer RDMA-writes the stream into our receive ring (the link's
 * rbuf) and tells us with the immediate data of its last WRITE how many
 * bytes it appended.  Every WRITE WITH IMMEDIATE and every cursor message
 * consumes one of the VISOCK_LINK_RQ_DEPTH receive requests posted by
 * visock_rdma_prepare(); visock_rx_done() handles the completion and
 * reposts the request at once, owing the peer one credit.
 *
 * recvmsg() copies from the ring at the consumer cursor (@rx_cons),
 * wrapping at the end, and then, when visock_cons_update_due() says so,
 * reports the new consumer cursor in a cursor message so that the peer
 * may reuse the space.  The peer never writes beyond the last consumer
 * cursor we sent (@rx_cons_sent) plus the ring size; a transfer that
 * would is a protocol violation and resets the connection.
 *
 * Lifetime
 * --------
 * The receive requests point at struct visock_rx_slot entries of the
 * connection's struct visock_dp.  The handler may run until the link's
 * QP is drained: visock_rdma_destroy_link() marks the state stopped (the
 * handler then neither reposts nor interprets anything, also not the
 * flushed requests of the drain), destroys the link, which drains the
 * QP, and only then frees the state.  A device removal drains the QP
 * too (every request completes as flushed: the connection fails with
 * ECONNRESET) before it calls our dead_cb, which does the same.  The
 * ring memory stays valid until the link is destroyed, so data already
 * received can be read after the link died.
 *
 * Locking: see visock_tx.c.  The handler takes only struct
 * visock_dp.lock (and, inside it, the link's post_lock).  recvmsg() copies
 * to user memory without that lock: bytes between @rx_cons and @rx_prod
 * are not overwritten before we report them consumed.
 */
#include <linux/sched/signal.h>
#include <linux/uio.h>
#include <net/sock.h>

#include "visock_rdma.h"

/**
 * visock_rx_avail_locked() - unread bytes in our ring
 * @dp: data path state
 *
 * Context: under @dp->lock.
 * Return: bytes between the consumer and the producer cursor.
 */
u32 visock_rx_avail_locked(const struct visock_dp *dp)
{
	return visock_ring_used(dp->rx_size, &dp->rx_prod, &dp->rx_cons);
}

/**
 * visock_rx_check_update_locked() - mark a consumer update as pending
 * @dp: data path state
 *
 * Uses visock_cons_update_due() to coalesce updates; the caller then
 * pushes (visock_tx_push_locked()).
 *
 * Context: under @dp->lock.
 */
void visock_rx_check_update_locked(struct visock_dp *dp)
{
	s64 unconfirmed = visock_cursor_diff(dp->rx_size, &dp->rx_cons_sent,
					     &dp->rx_cons);

	if (unconfirmed > 0 &&
	    visock_cons_update_due(dp->rx_size, (u32)unconfirmed,
				   visock_rx_avail_locked(dp),
				   dp->peer_blocked))
		dp->ctrl_pending = true;
}

/* The peer appended data (immediate data of a WRITE WITH IMMEDIATE). */
static void visock_rx_data_locked(struct visock_dp *dp, u32 imm,
				  unsigned int *wake)
{
	struct visock_cursor next = dp->rx_prod;
	u32 bytes, credits;

	visock_imm_decode(imm, &bytes, &credits);
	if (!bytes || bytes > dp->rx_size)
		goto bad;
	visock_cursor_add(&next, dp->rx_size, bytes);
	/* Within one ring of what we last told the peer we consumed. */
	if (visock_cursor_diff(dp->rx_size, &dp->rx_cons_sent, &next) < 0)
		goto bad;
	if (dp->credits + credits > VISOCK_LINK_RQ_DEPTH)
		goto bad;
	visock_link_rbuf_sync_for_cpu(dp->link, dp->rx_prod.count, bytes);
	dp->rx_prod = next;
	dp->credits += credits;
	dp->bytes_rcvd += bytes;
	VISOCK_STAT_ADD(&dp->vsk->sk, rdma_bytes_rcvd, bytes);
	*wake |= VISOCK_WAKE_READ;
	visock_rx_check_update_locked(dp);
	return;

bad:
	visock_dp_fail_locked(dp, ECONNRESET, true, "bad RDMA write", imm, wake);
}

/**
 * visock_rx_done() - completion of a receive request
 * @cq: the link's completion queue
 * @wc: the completion
 *
 * A WRITE WITH IMMEDIATE advances the producer cursor, a SEND is a cursor
 * message.  The request is reposted and the peer owed a credit; then
 * whatever became possible is pushed.  An error completion while the
 * connection is live (QP error, flush after a device removal) resets it;
 * once the connection is stopped completions are only counted.
 *
 * Context: softirq (the CQ is polled with IB_POLL_SOFTIRQ).
 */
void visock_rx_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct visock_rx_slot *slot = container_of(wc->wr_cqe,
						   struct visock_rx_slot, cqe);
	struct visock_dp *dp = slot->dp;
	unsigned int wake = 0;
	int err;

	visock_link_count_wc(dp->link, wc);
	spin_lock_bh(&dp->lock);
	dp->wc++;
	VISOCK_STAT_ADD(&dp->vsk->sk, rdma_wc, 1);
	if (dp->state != VISOCK_DP_LIVE)
		goto out;
	if (wc->status != IB_WC_SUCCESS) {
		visock_dp_link_failed_locked(dp, "receive failed", wc->status,
					     &wake);
		goto out;
	}
	if (wc->opcode == IB_WC_RECV_RDMA_WITH_IMM &&
	    (wc->wc_flags & IB_WC_WITH_IMM))
		visock_rx_data_locked(dp, be32_to_cpu(wc->ex.imm_data), &wake);
	else if (wc->opcode == IB_WC_RECV && !(wc->wc_flags & IB_WC_WITH_IMM))
		visock_cdc_recv_locked(dp, slot->idx, wc->byte_len, &wake);
	else
		visock_dp_fail_locked(dp, ECONNRESET, true, "unexpected opcode",
				      wc->opcode, &wake);
	if (dp->state != VISOCK_DP_LIVE)
		goto out;
	err = visock_link_post_recv(dp->link, slot->idx, &slot->cqe);
	if (err) {
		visock_dp_link_failed_locked(dp, "repost failed", err, &wake);
		goto out;
	}
	dp->owed++;
	visock_tx_push_locked(dp, &wake);
out:
	spin_unlock_bh(&dp->lock);
	visock_dp_wake(dp, wake);
}

/* Wait condition of a reader that already peeked @peeked bytes. */
static bool visock_rx_readable(struct visock_dp *dp, size_t peeked)
{
	struct sock *sk = &dp->vsk->sk;
	bool ret;

	spin_lock_bh(&dp->lock);
	ret = visock_rx_avail_locked(dp) > peeked || dp->peer_done ||
	      !visock_dp_alive(dp->state);
	spin_unlock_bh(&dp->lock);
	return ret || READ_ONCE(sk->sk_err) ||
	       (READ_ONCE(sk->sk_shutdown) & RCV_SHUTDOWN);
}

/* Copy @n bytes at ring offset @off to @msg, wrapping; bytes copied. */
static size_t visock_rx_copy(struct visock_dp *dp, u32 off, u32 n,
			     struct msghdr *msg)
{
	u32 first = min(n, dp->rx_size - off);
	size_t got;

	got = copy_to_iter(dp->rbuf + off, first, &msg->msg_iter);
	if (got == first && n > first)
		got += copy_to_iter(dp->rbuf, n - first, &msg->msg_iter);
	return got;
}

/**
 * visock_rx_recvmsg() - recvmsg() of a connection in RDMA mode
 * @vsk: socket
 * @msg: where to copy to
 * @len: bytes wanted
 * @flags: MSG_PEEK (also across the end of the ring), MSG_WAITALL,
 *	MSG_DONTWAIT and MSG_TRUNC (discard) are honoured
 *
 * Like TCP: waits (SO_RCVTIMEO, signals) until SO_RCVLOWAT bytes (all of
 * @len with MSG_WAITALL) are there, end of file or an error; returns what
 * was copied, 0 at end of file (the peer's done_writing was received and
 * everything before it read, or shutdown(SHUT_RD)), or a pending error
 * (ECONNRESET) once.
 *
 * Context: process context, no lock held.
 * Return: bytes received or a negative errno.
 */
int visock_rx_recvmsg(struct visock_sock *vsk, struct msghdr *msg,
		      size_t len, int flags)
{
	DEFINE_WAIT_FUNC(wait, woken_wake_function);
	struct visock_dp *dp = vsk->dp;
	struct sock *sk = &vsk->sk;
	bool peek = flags & MSG_PEEK;
	struct visock_cursor pos;
	unsigned int wake = 0;
	size_t copied = 0;
	bool eof, dead;
	u32 avail, n;
	long timeo;
	int target;
	int err = 0;

	if (flags & MSG_ERRQUEUE)
		return -EAGAIN;
	len = min_t(size_t, len, INT_MAX);
	timeo = sock_rcvtimeo(sk, flags & MSG_DONTWAIT);
	target = sock_rcvlowat(sk, flags & MSG_WAITALL, len);

	lock_sock(sk);
	add_wait_queue(sk_sleep(sk), &wait);
	while (copied < len) {
		spin_lock_bh(&dp->lock);
		avail = visock_rx_avail_locked(dp);
		pos = dp->rx_cons;
		if (peek) {
			/* Only this reader moves @rx_cons: it is stable. */
			avail -= min_t(size_t, avail, copied);
			visock_cursor_add(&pos, dp->rx_size, copied);
		}
		eof = dp->peer_done;
		dead = !visock_dp_alive(dp->state);
		spin_unlock_bh(&dp->lock);

		if (avail) {
			u32 want = min_t(size_t, avail, len - copied);

			n = want;
			if (!(flags & MSG_TRUNC))
				n = visock_rx_copy(dp, pos.count, want, msg);
			if (n && !peek) {
				spin_lock_bh(&dp->lock);
				visock_cursor_add(&dp->rx_cons, dp->rx_size, n);
				visock_rx_check_update_locked(dp);
				visock_tx_push_locked(dp, &wake);
				spin_unlock_bh(&dp->lock);
				visock_dp_wake(dp, wake);
				wake = 0;
			}
			copied += n;
			if (n < want) {
				err = -EFAULT;
				break;
			}
			continue;
		}
		if (copied >= target)
			break;
		if (READ_ONCE(sk->sk_err)) {
			/* Reported by the next call if we return data. */
			if (!copied)
				err = sock_error(sk);
			break;
		}
		if (eof || dead || (sk->sk_shutdown & RCV_SHUTDOWN))
			break;
		err = visock_wait_err(timeo);
		if (err)
			break;
		sk_wait_event(sk, &timeo, visock_rx_readable(dp, peek ? copied : 0),
			      &wait);
	}
	remove_wait_queue(sk_sleep(sk), &wait);
	release_sock(sk);
	return copied ? copied : err;
}
