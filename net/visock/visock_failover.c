// SPDX-License-Identifier: GPL-2.0
/*
 * visock: RDMA data path - failover to TCP.
 *
 * When the queue pair of a live connection fails (retries exceeded, a
 * flushed request, the device removed), the connection continues over
 * its internal TCP socket instead of being reset:
 *
 *  1. The side that notices stops using the queue pair
 *     (VISOCK_DP_FAILOVER): completions are ignored from then on, so the
 *     producer cursor of its ring is frozen.
 *  2. It sends a failover message (visock_wire.h) with the stream
 *     position it received up to.  The TCP connection carries nothing
 *     else after the handshake, so the message is the first byte the
 *     peer finds there; a peer that did not notice the failure itself
 *     starts its own failover when it does (visock_rdma_tcp_event()).
 *  3. With the peer's message in, each side knows where the peer's
 *     stream stopped and resends from there: every byte the peer has not
 *     consumed is still in our send buffer, because the peer's consumer
 *     cursor never passes what it received.  The connection is then
 *     VISOCK_DP_TCP: the send buffer and the receive ring stay what
 *     sendmsg() and recvmsg() use, and this work moves them over TCP
 *     (send buffer -> TCP, TCP -> ring), with TCP's own flow control;
 *     shutdown(SHUT_WR) becomes a TCP FIN after the last byte, and TCP's
 *     end of file the peer's done_writing.
 *
 * Everything runs in @fo_work (process context, visock_wq), kicked by the
 * internal TCP socket's callbacks and by visock_tx_push_locked().  It
 * never takes lock_sock(): like the device, it only touches the ring
 * between the producer and the consumer cursor and the send buffer
 * between what was sent and what was written, and publishes progress
 * under @dp->lock.  A peer whose failover message does not come within
 * VISOCK_FO_TIMEOUT, or is malformed, or names a position we cannot
 * resend from, loses the connection (ECONNRESET).
 */
#include <linux/jiffies.h>
#include <linux/net.h>
#include <linux/uio.h>
#include <net/sock.h>

#include "visock_rdma.h"
#include "visock_lazy.h"

/* Cursor of stream position @pos in a ring of @size bytes. */
static struct visock_cursor visock_cursor_at(u32 size, u64 pos)
{
	struct visock_cursor c = {
		.wrap = (u16)div_u64(pos, size),
		.count = (u32)(pos & (size - 1)),
	};

	return c;
}

/*
 * The peer has every byte before stream position @pos: the send buffer
 * space up to it is free, nothing before it is outstanding.  Under
 * @dp->lock.
 */
static void visock_fo_peer_has_locked(struct visock_dp *dp, u64 pos)
{
	lockdep_assert_held(&dp->lock);
	dp->tx_peer_cons = visock_cursor_at(dp->tx_size, pos);
	dp->tx_sent = dp->tx_peer_cons;
	dp->tx_acked = dp->tx_peer_cons;
}

/**
 * visock_fo_kick() - let the failover work make progress
 * @dp: data path state, failing over or failed over
 *
 * Context: any, including under @dp->lock.
 */
void visock_fo_kick(struct visock_dp *dp)
{
	mod_delayed_work(visock_wq, &dp->fo_work, 0);
}

/**
 * visock_dp_vc_failed_locked() - the vc of a connection failed
 * @dp: data path state
 * @why: what happened, for the kernel log
 * @detail: a completion status or errno, for the kernel log
 * @wake: wake-ups to deliver after dropping the lock
 *
 * A live connection of a socket in RDMA mode fails over to TCP; anything
 * else (the handshake is still running, the connection already failed or
 * is failing over) is reset or left as it is.
 *
 * Context: under @dp->lock, any context.
 */
void visock_dp_vc_failed_locked(struct visock_dp *dp, const char *why,
				int detail, unsigned int *wake)
{
	struct visock_sock *vsk = dp->vsk;

	lockdep_assert_held(&dp->lock);
	if (dp->state != VISOCK_DP_LIVE)
		return;
	/*
	 * A lazy connection whose application has not read the bytes that
	 * came over TCP before the switch cannot take the peer's failover
	 * message from TCP yet: reset (visock/lazy-switch.rst).
	 */
	if (READ_ONCE(vsk->mode) != VISOCK_MODE_RDMA || !vsk->tcp ||
	    visock_lazy_rx_pending(vsk)) {
		visock_dp_fail_locked(dp, ECONNRESET, false, why, detail, wake);
		return;
	}
	net_info_ratelimited("visock: QP %u: %s (%d): continuing over TCP\n",
			     visock_vc_qpn(dp->vc), why, detail);
	/* Whatever broke this connection's path, no new one joins the QP. */
	visock_vc_suspect(dp->vc);
	dp->state = VISOCK_DP_FAILOVER;
	dp->fo_deadline = jiffies + VISOCK_FO_TIMEOUT;
	dp->failovers = 1;
	/* Frozen from here on: what we tell the peer we have. */
	visock_fo_encode(dp->bytes_rcvd, dp->fo_msg);
	clear_bit(VISOCK_F_LINK_UP, &vsk->flags);
	VISOCK_STAT_ADD(&vsk->sk, failovers, 1);
	visock_fo_kick(dp);
	*wake |= VISOCK_WAKE_READ | VISOCK_WAKE_WRITE | VISOCK_WAKE_CLOSE;
}

/**
 * visock_rdma_tcp_event() - the internal TCP socket of an RDMA connection
 *	has news (data, room, a state change)
 * @vsk: socket in RDMA mode
 *
 * Bytes on the TCP connection of a live RDMA connection can only be the
 * peer's failover message: start ours.
 *
 * Context: TCP's callbacks (softirq or process context), under the TCP
 * socket's sk_callback_lock held for reading, which keeps @vsk->dp.
 */
void visock_rdma_tcp_event(struct visock_sock *vsk)
{
	struct visock_dp *dp = vsk->dp;

	if (dp && READ_ONCE(dp->state) != VISOCK_DP_DEAD &&
	    READ_ONCE(dp->state) != VISOCK_DP_STOPPED)
		visock_fo_kick(dp);
}

/* End the connection from the failover work. */
static void visock_fo_fail(struct visock_dp *dp, int err, const char *why,
			   int detail)
{
	unsigned int wake = 0;

	spin_lock_bh(&dp->lock);
	visock_dp_fail_locked(dp, err, false, why, detail, &wake);
	spin_unlock_bh(&dp->lock);
	visock_dp_wake(dp, wake);
}

/* Send what is left of our failover message.  Returns < 0 to stop. */
static int visock_fo_send_msg(struct visock_dp *dp, struct socket *tcp)
{
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL };
	u8 buf[VISOCK_FO_LEN];
	struct kvec iov;
	int ret;

	while (dp->fo_sent < VISOCK_FO_LEN) {
		spin_lock_bh(&dp->lock);
		memcpy(buf, dp->fo_msg, sizeof(buf));
		spin_unlock_bh(&dp->lock);
		iov.iov_base = buf + dp->fo_sent;
		iov.iov_len = VISOCK_FO_LEN - dp->fo_sent;
		ret = kernel_sendmsg(tcp, &msg, &iov, 1, iov.iov_len);
		if (ret == -EAGAIN)
			return -EAGAIN;
		if (ret <= 0) {
			visock_fo_fail(dp, ECONNRESET, "failover: TCP send",
				       ret);
			return -EPIPE;
		}
		dp->fo_sent += ret;
	}
	return 0;
}

/*
 * Receive the peer's failover message into @fo_msg (ours went out
 * first) and check its position.  Returns 0 once the connection is
 * VISOCK_DP_TCP, < 0 to stop.
 */
static int visock_fo_recv_msg(struct visock_dp *dp, struct socket *tcp)
{
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT };
	u8 buf[VISOCK_FO_LEN];
	unsigned int wake = 0;
	u64 peer_pos, cons_pos;
	struct kvec iov;
	s64 unsent;
	u32 used;
	int ret;

	while (dp->fo_rcvd < VISOCK_FO_LEN) {
		iov.iov_base = buf;
		iov.iov_len = VISOCK_FO_LEN - dp->fo_rcvd;
		ret = kernel_recvmsg(tcp, &msg, &iov, 1, iov.iov_len,
				     MSG_DONTWAIT);
		if (ret == -EAGAIN) {
			if (time_after(jiffies, dp->fo_deadline)) {
				visock_fo_fail(dp, ECONNRESET,
					       "failover: no message from the peer",
					       0);
				return -ETIMEDOUT;
			}
			/* Come back at the deadline if nothing arrives. */
			queue_delayed_work(visock_wq, &dp->fo_work,
					   dp->fo_deadline - jiffies + 1);
			return -EAGAIN;
		}
		if (ret <= 0) {
			visock_fo_fail(dp, ECONNRESET, "failover: TCP receive",
				       ret);
			return -EPIPE;
		}
		spin_lock_bh(&dp->lock);
		memcpy(dp->fo_msg + dp->fo_rcvd, buf, ret);
		spin_unlock_bh(&dp->lock);
		dp->fo_rcvd += ret;
	}

	spin_lock_bh(&dp->lock);
	if (dp->state != VISOCK_DP_FAILOVER) {
		spin_unlock_bh(&dp->lock);
		return -EPIPE;
	}
	/* The peer's position: between what it consumed and what we posted. */
	used = visock_ring_used(dp->tx_size, &dp->tx_written,
				&dp->tx_peer_cons);
	cons_pos = dp->fo_tx_end - used;
	unsent = visock_cursor_diff(dp->tx_size, &dp->tx_sent,
				    &dp->tx_written);
	if (visock_fo_decode(dp->fo_msg, VISOCK_FO_LEN, &peer_pos) ||
	    peer_pos < cons_pos || unsent < 0 ||
	    peer_pos > dp->fo_tx_end - unsent) {
		visock_dp_fail_locked(dp, ECONNRESET, false,
				      "failover: bad message", 0, &wake);
		spin_unlock_bh(&dp->lock);
		visock_dp_wake(dp, wake);
		return -EPROTO;
	}
	dp->fo_tx_pos = peer_pos;
	visock_fo_peer_has_locked(dp, peer_pos);
	dp->wr_head = dp->wr_tail;
	dp->state = VISOCK_DP_TCP;
	spin_unlock_bh(&dp->lock);
	visock_dp_wake(dp, VISOCK_WAKE_READ | VISOCK_WAKE_WRITE);
	return 0;
}

/* Send buffer -> TCP, then a FIN after the last byte if shut down. */
static void visock_fo_tx(struct visock_dp *dp, struct socket *tcp)
{
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL };
	struct kvec iov;
	u64 pos, end;
	bool shut;
	u32 off;
	int ret;

	for (;;) {
		spin_lock_bh(&dp->lock);
		pos = dp->fo_tx_pos;
		end = dp->fo_tx_end;
		shut = dp->tx_shut && !dp->fo_shut_sent;
		spin_unlock_bh(&dp->lock);
		if (pos == end)
			break;
		off = (u32)(pos & (dp->tx_size - 1));
		iov.iov_base = dp->sbuf + off;
		iov.iov_len = min_t(u64, end - pos, dp->tx_size - off);
		ret = kernel_sendmsg(tcp, &msg, &iov, 1, iov.iov_len);
		if (ret == -EAGAIN)
			return;
		if (ret <= 0) {
			visock_fo_fail(dp, ret == -EPIPE ? EPIPE : ECONNRESET,
				       "failover: TCP send", ret);
			return;
		}
		spin_lock_bh(&dp->lock);
		dp->fo_tx_pos += ret;
		visock_fo_peer_has_locked(dp, dp->fo_tx_pos);
		spin_unlock_bh(&dp->lock);
		VISOCK_STAT_ADD(&dp->vsk->sk, tcp_bytes_sent, ret);
		visock_dp_wake(dp, VISOCK_WAKE_WRITE | VISOCK_WAKE_CLOSE);
	}
	if (shut) {
		kernel_sock_shutdown(tcp, SHUT_WR);
		spin_lock_bh(&dp->lock);
		dp->fo_shut_sent = true;
		dp->done_sent = true;
		spin_unlock_bh(&dp->lock);
		visock_dp_wake(dp, VISOCK_WAKE_CLOSE);
	}
}

/* TCP -> receive ring, as far as the ring has room. */
static void visock_fo_rx(struct visock_dp *dp, struct socket *tcp)
{
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT };
	struct visock_cursor prod;
	struct kvec iov;
	u32 space, off;
	int ret;

	for (;;) {
		spin_lock_bh(&dp->lock);
		prod = dp->rx_prod;
		space = dp->rx_size - visock_rx_avail_locked(dp);
		if (dp->peer_done)
			space = 0;
		spin_unlock_bh(&dp->lock);
		if (!space)
			return;
		off = prod.count;
		/* The ring is ours to fill from @rx_prod on. */
		iov.iov_base = (u8 *)dp->rbuf + off;
		iov.iov_len = min(space, dp->rx_size - off);
		ret = kernel_recvmsg(tcp, &msg, &iov, 1, iov.iov_len,
				     MSG_DONTWAIT);
		if (ret == -EAGAIN)
			return;
		if (ret < 0) {
			visock_fo_fail(dp, -ret, "failover: TCP receive", ret);
			return;
		}
		spin_lock_bh(&dp->lock);
		if (!ret) {
			dp->peer_done = true;
		} else {
			visock_cursor_add(&dp->rx_prod, dp->rx_size, ret);
			visock_rx_stamp_locked(dp);
		}
		spin_unlock_bh(&dp->lock);
		if (ret)
			VISOCK_STAT_ADD(&dp->vsk->sk, tcp_bytes_rcvd, ret);
		visock_dp_wake(dp, ret ? VISOCK_WAKE_READ :
			       VISOCK_WAKE_READ | VISOCK_WAKE_STATE);
		if (!ret)
			return;
	}
}

/**
 * visock_fo_work() - failover to TCP and the TCP transport afterwards
 * @work: struct visock_dp.fo_work
 *
 * Context: process context (visock_wq); cancelled by
 * visock_rdma_destroy_vc() before the rings go.
 */
void visock_fo_work(struct work_struct *work)
{
	struct visock_dp *dp = container_of(to_delayed_work(work),
					    struct visock_dp, fo_work);
	struct socket *tcp = dp->vsk->tcp;
	struct msghdr peek = { .msg_flags = MSG_DONTWAIT };
	unsigned int wake = 0;
	struct kvec iov;
	u8 state, b;

	state = READ_ONCE(dp->state);
	if (state == VISOCK_DP_LIVE) {
		/* Bytes from before a lazy connection's switch: not yet. */
		if (visock_lazy_rx_pending(dp->vsk))
			return;
		/* Anything on TCP now is the peer's failover message. */
		iov.iov_base = &b;
		iov.iov_len = 1;
		if (kernel_recvmsg(tcp, &peek, &iov, 1, 1,
				   MSG_DONTWAIT | MSG_PEEK) != 1)
			return;
		spin_lock_bh(&dp->lock);
		visock_dp_vc_failed_locked(dp, "peer failed over", 0, &wake);
		state = dp->state;
		spin_unlock_bh(&dp->lock);
		visock_dp_wake(dp, wake);
	}
	if (state == VISOCK_DP_FAILOVER) {
		if (visock_fo_send_msg(dp, tcp) ||
		    visock_fo_recv_msg(dp, tcp))
			return;
		state = VISOCK_DP_TCP;
	}
	if (state != VISOCK_DP_TCP)
		return;
	visock_fo_tx(dp, tcp);
	if (READ_ONCE(dp->state) == VISOCK_DP_TCP)
		visock_fo_rx(dp, tcp);
}
