// SPDX-License-Identifier: GPL-2.0
/*
 * visock: RDMA data path - the connection's data path as a whole.
 *
 * Setting up and tearing down the data path of a connection, ending it
 * with an error, delivering the wake-ups collected under its lock, and
 * the state queries (poll, ioctl, VISOCK_INFO).  Cursor messages are in
 * visock_cdc.c, sending in visock_tx.c, receiving in visock_rx.c,
 * closing in visock_close.c, failover to TCP in visock_failover.c.  The
 * rules for lifetime and locking are at the top of visock_tx.c and
 * visock_rx.c.
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
#include "visock_event.h"
#include "visock_mem.h"

/*
 * The shared QP died (device removed, stuck peer).  Called by
 * visock_vc.c in process context under the QP's mutex; the QP was
 * drained already, so every outstanding request has completed (in error).
 */
static void visock_rdma_vc_dead(void *ctx)
{
	struct visock_dp *dp = ctx;
	unsigned int wake = 0;

	spin_lock_bh(&dp->lock);
	visock_dp_vc_failed_locked(dp, "link died", 0, &wake);
	spin_unlock_bh(&dp->lock);
	visock_dp_wake(dp, wake);
}

/**
 * visock_rdma_prepare() - make a connected vc ready to carry the stream
 * @vsk: socket whose @vc was just connected
 *
 * Allocates the data path state, has the shared QP deliver the
 * connection's receive completions (and post receive requests for its
 * credits) and asks to be told when the QP dies.  Must run before REP (server) or CONFIRM
 * (client) is sent: the peer may write as soon as it has it.
 *
 * Context: process context, under lock_sock(@vsk).
 * Return: 0, -ENOMEM, or an error from posting (the vc is then useless;
 * the caller destroys it with visock_rdma_destroy_vc()).
 */
int visock_rdma_prepare(struct visock_sock *vsk)
{
	struct visock_vc *l = vsk->vc;
	struct visock_dp *dp;
	int err;

	lockdep_assert_held(&vsk->sk.sk_lock);
	if (visock_fault(VISOCK_FP_DP_ALLOC))
		return -ENOMEM;
	dp = visock_mem_kzalloc(&vsk->sk, sizeof(*dp));
	if (!dp)
		return -ENOMEM;
	spin_lock_init(&dp->lock);
	init_waitqueue_head(&dp->close_wq);
	INIT_DELAYED_WORK(&dp->close_work, visock_tx_close_work);
	INIT_DELAYED_WORK(&dp->fin_work, visock_rdma_fin_work);
	INIT_DELAYED_WORK(&dp->fo_work, visock_fo_work);
	dp->vsk = vsk;
	dp->vc = l;
	dp->state = VISOCK_DP_LIVE;
	dp->tx_size = visock_vc_peer_rbuf_size(l);
	dp->rx_size = visock_vc_rbuf_size(l);
	dp->sbuf = visock_vc_sbuf(l);
	dp->rbuf = visock_vc_rbuf(l);
	dp->local_token = vsk->local_token;
	dp->peer_token = vsk->peer_token;
	dp->credits = VISOCK_VC_RQ_DEPTH;
	dp->sq_free = VISOCK_VC_SQ_DEPTH;
	dp->tx_cqe.done = visock_tx_done;
	dp->ctrl_cqe.done = visock_tx_ctrl_done;
	/* Freed by visock_rdma_destroy_vc() from now on. */
	vsk->dp = dp;

	err = visock_dp_rec_init(dp, vsk->auth, !!vsk->listener);
	if (!err)
		err = visock_vc_set_rx(l, visock_rx_event, dp);

	if (err) {
		spin_lock_bh(&dp->lock);
		dp->state = VISOCK_DP_STOPPED;
		spin_unlock_bh(&dp->lock);
		return err;
	}
	return visock_vc_set_dead_cb(l, visock_rdma_vc_dead, dp);
}

/**
 * visock_rdma_destroy_vc() - destroy the vc and the data path state
 * @vsk: socket; its @vc and @dp may be NULL
 *
 * Completions that still arrive are ignored; once the vc is destroyed
 * no completion handler of the connection runs or will run (see
 * visock_vc_destroy()), and the state is freed.
 *
 * Context: process context, may sleep; no spinlock held.  Not
 * concurrently with any other data path call of @vsk.
 */
void visock_rdma_destroy_vc(struct visock_sock *vsk)
{
	struct visock_dp *dp = vsk->dp;
	struct visock_diag_link d;

	if (vsk->vc) {
		visock_vc_diag(vsk->vc, &d);
		d.vdl_peer_qpn = vsk->peer_qpn;
		/* A vc that was up (or killed with its device) goes down. */
		if (d.vdl_state == VISOCK_LINK_STATE_UP ||
		    d.vdl_state == VISOCK_LINK_STATE_DEAD)
			visock_event_sock(vsk, VISOCK_EVENT_LINK_DOWN, 0, &d);
	}

	if (dp) {
		if (vsk->vc)
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
		 * failover work uses the rings, so it goes before the vc.
		 */
		cancel_delayed_work_sync(&dp->fo_work);
		cancel_delayed_work_sync(&dp->fin_work);
	}
	visock_vc_destroy(vsk->vc);
	vsk->vc = NULL;
	if (dp)
		visock_dp_rec_free(dp);
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
	lockdep_assert_held(&dp->lock);
	if (!visock_dp_alive(dp->state))
		return;
	net_info_ratelimited("visock: QP %u: connection reset: %s (%d)\n",
			     visock_vc_qpn(dp->vc), why, detail);
	trace_visock_abort(dp->vsk, err);
	visock_event_sock(dp->vsk, VISOCK_EVENT_ABORT, -err, NULL);
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
	avail = visock_rx_ready_locked(dp);
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
		val = visock_rx_ready_locked(dp);
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

/*
 * The data path part of VISOCK_INFO.  Also reports the payload bytes of
 * the internal TCP connection, which stay constant once the handshake is
 * done.  Under lock_sock(@vsk).
 */
static void visock_rdma_info(struct visock_sock *vsk, struct visock_info *info)
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
	visock_dp_rec_query(dp, info);
	if (dp->failovers)
		info->vi_flags |= VISOCK_INFO_F_FAILOVER;
	spin_unlock_bh(&dp->lock);
}

/* Fill levels of the rings.  Under lock_sock(), with @dp set. */
static void visock_rdma_ring(struct visock_dp *dp, struct visock_diag_ring *r)
{
	memset(r, 0, sizeof(*r));
	spin_lock_bh(&dp->lock);
	r->vdr_rx_size = dp->rx_size;
	r->vdr_rx_used = visock_rx_avail_locked(dp);
	r->vdr_tx_size = dp->tx_size;
	r->vdr_tx_used = dp->tx_size - visock_tx_space_locked(dp);
	r->vdr_tx_unsent = visock_ring_used(dp->tx_size, &dp->tx_written,
					    &dp->tx_sent);
	r->vdr_credits = dp->credits;
	r->vdr_sq_free = dp->sq_free;
	r->vdr_state = dp->state;
	spin_unlock_bh(&dp->lock);
}

/**
 * visock_dp_query() - what the data path of a connection reports
 * @vsk: socket
 * @info: if not NULL, its data path part is filled in (counters, credits,
 *	state, VISOCK_INFO_F_FAILOVER, and the payload bytes of the internal
 *	TCP connection); the caller filled in the rest
 * @ring: if not NULL and @vsk has a data path, the fill levels of its
 *	rings are filled in
 *
 * The one way the socket's reports (VISOCK_INFO, sock_diag) read the data
 * path.
 *
 * Context: process context, under lock_sock(@vsk).
 * Return: true if @vsk has a data path.
 */
bool visock_dp_query(struct visock_sock *vsk, struct visock_info *info,
		     struct visock_diag_ring *ring)
{
	lockdep_assert_held(&vsk->sk.sk_lock);
	if (info)
		visock_rdma_info(vsk, info);
	if (!vsk->dp)
		return false;
	if (ring)
		visock_rdma_ring(vsk->dp, ring);
	return true;
}

static __poll_t visock_rdma_mode_poll(struct visock_sock *vsk,
				      struct file *file)
{
	return visock_rdma_poll(vsk);
}

/* Deliver what was written, maybe in the background. */
static bool visock_rdma_mode_close(struct visock_sock *vsk)
{
	return vsk->dp && visock_tx_close(vsk);
}

static void visock_rdma_tcp_state_change(struct visock_sock *vsk,
					 int tcp_state)
{
	if (tcp_state == TCP_CLOSE_WAIT || tcp_state == TCP_CLOSE)
		visock_rdma_tcp_closed(vsk);
	visock_rdma_tcp_event(vsk);
}

/* RDMA mode: the stream goes over the data path. */
const struct visock_mode_ops visock_rdma_mode_ops = {
	.sendmsg		= visock_tx_sendmsg,
	.recvmsg		= visock_rx_recvmsg,
	.poll			= visock_rdma_mode_poll,
	.shutdown		= visock_tx_shutdown,
	.ioctl			= visock_rdma_ioctl,
	.close			= visock_rdma_mode_close,
	.tcp_data_ready		= visock_rdma_tcp_event,
	.tcp_write_space	= visock_rdma_tcp_event,
	.tcp_state_change	= visock_rdma_tcp_state_change,
	.tcp_ended		= visock_rdma_ended,
};
