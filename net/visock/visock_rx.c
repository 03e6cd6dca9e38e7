// SPDX-License-Identifier: GPL-2.0
/*
 * visock: RDMA data path - receiving.
 *
 * The peer RDMA-writes the stream into our receive ring (the vc's
 * rbuf) and tells us with the immediate data of its last WRITE how many
 * bytes it appended.  Every WRITE WITH IMMEDIATE and every cursor message
 * consumes one receive request of the shared QP, which hands the
 * completion to the connection it names (visock_rx_event()) and reposts
 * the request; the connection owes the peer one credit.
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
 * The QP calls visock_rx_event() under its token table's lock, from
 * visock_rdma_prepare() on.  visock_rdma_destroy_vc() marks the state
 * stopped (the callback then interprets nothing) and destroys the vc,
 * which takes the connection out of the token table; only then is the
 * state freed.  When the QP fails (flushes after an error or a device
 * removal), every connection on it gets a VISOCK_RX_ERR event and fails
 * over to TCP.  The ring memory stays valid until the vc is destroyed,
 * so data already received can be read after the QP died.
 *
 * What recvmsg() reports besides the bytes follows tcp_recvmsg(): with
 * TCP_INQ set on the socket a TCP_CM_INQ control message with the bytes
 * still unread (1 at end of file), and with SO_TIMESTAMP(NS)(_NEW) or
 * SO_TIMESTAMPING (software, receive) the time the last byte read
 * arrived.  TCP stamps the segment that carried the byte when the
 * network stack received it; here it is the time the receive completion
 * of the RDMA WRITE that carried the byte (or, after a failover, the
 * copy from TCP into the ring) was handled.  Only the last
 * VISOCK_RX_STAMPS arrivals are remembered: a byte that arrived before
 * them gets the oldest of them, a later time than its own.
 *
 * Locking: see visock_tx.c.  The handler takes only struct
 * visock_dp.lock (and, inside it, the QP's post_lock).  recvmsg() copies
 * to user memory without that lock: bytes between @rx_cons and @rx_prod
 * are not overwritten before we report them consumed.
 */
#include <linux/net_tstamp.h>
#include <linux/sched/signal.h>
#include <linux/tcp.h>
#include <linux/time64.h>
#include <linux/uio.h>
#include <net/sock.h>

#include "visock_rdma.h"
#include "visock_lazy.h"

/**
 * visock_rx_avail_locked() - unread bytes in our ring
 * @dp: data path state
 *
 * Context: under @dp->lock.
 * Return: bytes between the consumer and the producer cursor.
 */
u32 visock_rx_avail_locked(const struct visock_dp *dp)
{
	lockdep_assert_held(&dp->lock);
	return visock_ring_used(dp->rx_size, &dp->rx_prod, &dp->rx_cons);
}

/**
 * visock_rx_ready_locked() - bytes a reader would get now
 * @dp: data path state
 *
 * Without a transform the unread bytes of the ring; with one the opened
 * bytes not yet read, or non-zero if a whole record waits in the ring
 * (visock_rec_dp.c).
 *
 * Context: under @dp->lock.
 * Return: a byte count for poll(), SIOCINQ and waiting readers.
 */
u32 visock_rx_ready_locked(const struct visock_dp *dp)
{
	lockdep_assert_held(&dp->lock);
	if (dp->rec)
		return visock_dp_rec_ready_locked(dp);
	return visock_rx_avail_locked(dp);
}

/**
 * visock_rx_stamp_locked() - note the time new bytes reached the ring
 * @dp: data path state; @rx_prod already includes the new bytes
 *
 * Called for every RDMA WRITE of the peer and for every copy from TCP
 * into the ring after a failover; recvmsg() reports these times as
 * receive timestamps.
 *
 * Context: under @dp->lock.
 */
void visock_rx_stamp_locked(struct visock_dp *dp)
{
	struct visock_rx_stamp *st;

	lockdep_assert_held(&dp->lock);
	st = &dp->rx_stamp[dp->rx_stamp_next];
	dp->rx_stamp_next = (dp->rx_stamp_next + 1) % VISOCK_RX_STAMPS;
	st->end = dp->rx_read + visock_rx_avail_locked(dp);
	st->at = ktime_get_real();
}

/*
 * When the byte just before stream position @pos arrived: the first
 * remembered arrival that ends at or after @pos; 0 if there is none.
 */
static ktime_t visock_rx_stamp_of_locked(const struct visock_dp *dp, u64 pos)
{
	const struct visock_rx_stamp *best = NULL;
	int i;

	lockdep_assert_held(&dp->lock);
	for (i = 0; i < VISOCK_RX_STAMPS; i++) {
		const struct visock_rx_stamp *st = &dp->rx_stamp[i];

		if (!st->at || st->end < pos)
			continue;
		if (!best || st->end < best->end)
			best = st;
	}
	return best ? best->at : 0;
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

	lockdep_assert_held(&dp->lock);
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
	u32 idx, bytes, credits;

	lockdep_assert_held(&dp->lock);
	visock_imm_decode(imm, &idx, &bytes, &credits);
	if (!bytes || bytes > dp->rx_size)
		goto bad;
	visock_cursor_add(&next, dp->rx_size, bytes);
	/* Within one ring of what we last told the peer we consumed. */
	if (visock_cursor_diff(dp->rx_size, &dp->rx_cons_sent, &next) < 0)
		goto bad;
	if (dp->credits + credits > VISOCK_VC_RQ_DEPTH)
		goto bad;
	visock_vc_rbuf_sync_for_cpu(dp->vc, dp->rx_prod.count, bytes);
	dp->rx_prod = next;
	visock_rx_stamp_locked(dp);
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
 * visock_rx_event() - a receive completion for this connection
 * @ctx: the connection's struct visock_dp
 * @ev: what arrived
 *
 * A WRITE WITH IMMEDIATE advances the producer cursor, a SEND is a cursor
 * message; the QP reposts the request, so the peer is owed a credit; then
 * whatever became possible is pushed.  A failed QP fails the connection
 * over to TCP; once the connection is stopped events are only counted.
 *
 * Context: softirq, under the QP's token table lock.
 */
void visock_rx_event(void *ctx, const struct visock_rx_ev *ev)
{
	struct visock_dp *dp = ctx;
	unsigned int wake = 0;

	spin_lock_bh(&dp->lock);
	dp->wc++;
	VISOCK_STAT_ADD(&dp->vsk->sk, rdma_wc, 1);
	if (dp->state != VISOCK_DP_LIVE) {
		/* Still note that the peer is done with our ring. */
		if (ev->kind == VISOCK_RX_CTRL)
			visock_cdc_note_quiet(dp, ev->msg, ev->len);
		goto out;
	}
	switch (ev->kind) {
	case VISOCK_RX_DATA:
		visock_rx_data_locked(dp, ev->imm, &wake);
		break;
	case VISOCK_RX_CTRL:
		if (ev->len && ev->msg[0] == VISOCK_SWREP_TYPE)
			visock_lazy_reply_locked(dp, ev->msg, ev->len);
		else
			visock_cdc_recv_locked(dp, ev->msg, ev->len, &wake);
		break;
	default:
		visock_dp_vc_failed_locked(dp, "receive failed", ev->status,
					   &wake);
		goto out;
	}
	if (dp->state != VISOCK_DP_LIVE)
		goto out;
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
	ret = visock_rx_ready_locked(dp) > peeked || dp->peer_done ||
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

/* The receive timestamp control messages, as tcp_recvmsg() sends them. */
static void visock_rx_put_stamp(struct sock *sk, struct msghdr *msg,
				ktime_t at)
{
	u32 tsflags = READ_ONCE(sk->sk_tsflags);
	bool new = sock_flag(sk, SOCK_TSTAMP_NEW);
	struct timespec64 ts = ktime_to_timespec64(at);

	if (sock_flag(sk, SOCK_RCVTSTAMP)) {
		bool ns = sock_flag(sk, SOCK_RCVTSTAMPNS);

		if (ns && new) {
			struct __kernel_timespec v = {
				.tv_sec = ts.tv_sec, .tv_nsec = ts.tv_nsec,
			};

			put_cmsg(msg, SOL_SOCKET, SO_TIMESTAMPNS_NEW,
				 sizeof(v), &v);
		} else if (ns) {
			struct __kernel_old_timespec v = {
				.tv_sec = ts.tv_sec, .tv_nsec = ts.tv_nsec,
			};

			put_cmsg(msg, SOL_SOCKET, SO_TIMESTAMPNS_OLD,
				 sizeof(v), &v);
		} else if (new) {
			struct __kernel_sock_timeval v = {
				.tv_sec = ts.tv_sec,
				.tv_usec = ts.tv_nsec / NSEC_PER_USEC,
			};

			put_cmsg(msg, SOL_SOCKET, SO_TIMESTAMP_NEW,
				 sizeof(v), &v);
		} else {
			struct __kernel_old_timeval v = {
				.tv_sec = ts.tv_sec,
				.tv_usec = ts.tv_nsec / NSEC_PER_USEC,
			};

			put_cmsg(msg, SOL_SOCKET, SO_TIMESTAMP_OLD,
				 sizeof(v), &v);
		}
	}
	if ((tsflags & SOF_TIMESTAMPING_SOFTWARE) &&
	    ((tsflags & SOF_TIMESTAMPING_RX_SOFTWARE) ||
	     !(tsflags & VISOCK_TS_OPT_RX_FILTER))) {
		struct scm_timestamping_internal tss = {};

		visock_tss_set_sw(&tss, at);
		if (new)
			put_cmsg_scm_timestamping64(msg, &tss);
		else
			put_cmsg_scm_timestamping(msg, &tss);
	}
}

/*
 * Unread bytes for TCP_INQ, as TCP counts them: 1 instead of 0 at end of
 * file, so that the application reads on and sees it.
 */
static int visock_rx_inq(struct visock_dp *dp)
{
	int inq;

	spin_lock_bh(&dp->lock);
	inq = visock_rx_ready_locked(dp);
	if (!inq && (dp->peer_done || !visock_dp_alive(dp->state)))
		inq = 1;
	spin_unlock_bh(&dp->lock);
	return inq;
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
 * Then, also like TCP, adds the control messages the socket asked for:
 * TCP_CM_INQ (TCP_INQ set on the internal TCP socket, where
 * setsockopt() puts it) and receive timestamps of the last byte read.
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
	bool eof, dead, inq;
	u64 start, end = 0;
	u32 avail, n;
	long timeo;
	int target;
	int err = 0;

	if (flags & MSG_ERRQUEUE)
		return -EAGAIN;
	len = min_t(size_t, len, INT_MAX);
	inq = tcp_sk(vsk->tcp->sk)->recvmsg_inq;
	if (inq)
		msg->msg_get_inq = 1;
	timeo = sock_rcvtimeo(sk, flags & MSG_DONTWAIT);
	target = sock_rcvlowat(sk, flags & MSG_WAITALL, len);

	lock_sock(sk);
	add_wait_queue(sk_sleep(sk), &wait);
	while (copied < len) {
		/* Records: open the next one before a byte of it is read. */
		if (dp->rec && visock_dp_rec_fill(dp) < 0) {
			if (!copied)
				err = sock_error(sk) ?: -ECONNRESET;
			break;
		}
		spin_lock_bh(&dp->lock);
		avail = dp->rec ? visock_dp_rec_pending_locked(dp) :
				  visock_rx_avail_locked(dp);
		pos = dp->rx_cons;
		start = dp->rx_read;
		if (peek) {
			/* Only this reader moves @rx_cons: it is stable. */
			avail -= min_t(size_t, avail, copied);
			visock_cursor_add(&pos, dp->rx_size, copied);
		}
		eof = dp->peer_done;
		dead = !visock_dp_alive(dp->state);
		spin_unlock_bh(&dp->lock);

		if (avail && dp->rec) {
			u32 want = min_t(size_t, avail, len - copied);

			n = visock_dp_rec_copy(dp, peek ? copied : 0, want,
					       flags & MSG_TRUNC ? NULL : msg,
					       !peek);
			/* The arrival of the record's last byte. */
			if (n)
				end = start;
			copied += n;
			if (n < want) {
				err = -EFAULT;
				break;
			}
			continue;
		}
		if (avail) {
			u32 want = min_t(size_t, avail, len - copied);

			n = want;
			if (!(flags & MSG_TRUNC))
				n = visock_rx_copy(dp, pos.count, want, msg);
			if (n)
				end = start + (peek ? copied : 0) + n;
			if (n && !peek) {
				spin_lock_bh(&dp->lock);
				visock_cursor_add(&dp->rx_cons, dp->rx_size, n);
				dp->rx_read += n;
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
	if (copied)
		err = copied;
	if (err < 0)
		return err;
	if (end && (sock_flag(sk, SOCK_RCVTSTAMP) ||
		    (READ_ONCE(sk->sk_tsflags) & SOF_TIMESTAMPING_SOFTWARE))) {
		ktime_t at;

		spin_lock_bh(&dp->lock);
		at = visock_rx_stamp_of_locked(dp, end);
		spin_unlock_bh(&dp->lock);
		if (at)
			visock_rx_put_stamp(sk, msg, at);
	}
	if (msg->msg_get_inq) {
		msg->msg_inq = visock_rx_inq(dp);
		if (inq)
			put_cmsg(msg, SOL_TCP, TCP_CM_INQ, sizeof(msg->msg_inq),
				 &msg->msg_inq);
	}
	return err;
}
