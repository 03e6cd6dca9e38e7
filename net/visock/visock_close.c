// SPDX-License-Identifier: GPL-2.0
/*
 * visock: RDMA data path - closing.
 *
 * shutdown(), close(), the last flag a connection sends before its link
 * goes, and what happens when the internal TCP connection closes under a
 * connection in RDMA mode.
 *
 * close() is graceful unless SO_LINGER with a zero timeout is set or
 * unread data is left (then, as TCP, the connection is reset: a cursor
 * message with the abort flag and a TCP reset).  A graceful close
 * announces done_writing and closed after the last data and returns; a
 * work item (@close_work, holding a socket reference, run again whenever a
 * completion or the peer's flags arrive, without waiting in between)
 * finishes once every posted request completed, at most
 * VISOCK_CLOSE_TIMEOUT later (then it resets the connection): it destroys
 * the vc and closes the internal TCP socket.  With SO_LINGER and a
 * timeout, close() itself waits that long.
 *
 * The rules for lifetime and locking are at the top of visock_tx.c.
 */
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/sched/signal.h>
#include <net/sock.h>

#include "visock_debugfs.h"
#include "visock_fault.h"
#include "visock_rdma.h"
#include "visock_tcp.h"

/* How long a graceful close may take in the background. */
#define VISOCK_CLOSE_TIMEOUT	(30 * HZ)
/* How long to give the abort message after a reset. */
#define VISOCK_ABORT_WAIT	(HZ / 2)

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
 * Nothing more to wait for before the vc and the internal TCP socket
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
		 * A lazy connection's initiator closed while it waited for
		 * the switch reply: nothing can go over RDMA before the
		 * switch settles, and nothing ever if it did not complete.
		 */
		if (dp->sw_pending) {
			done = !dp->sw_hold;
			break;
		}
		/*
		 * Our closed flag goes out even if the peer closed first: its
		 * receive ring lingers until it comes.  Without a credit it
		 * cannot, and no credit comes back from a closed peer.
		 */
		done = dp->sq_free == VISOCK_VC_SQ_DEPTH &&
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
	idle = dp->sq_free == VISOCK_VC_SQ_DEPTH;
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
 * @dp: data path state of a connection whose vc is about to go
 *
 * The peer keeps the ring and the token index it gave us until our
 * closed or abort flag arrives (its end of the connection lingers on the
 * QP, see visock_vc_destroy()), so every connection ends with one of
 * them while the QP works.  One that has not sent either - it failed or
 * was reset by the peer, its handshake ended after the vc was
 * connected, or its closed flag did not go out yet - sends one now:
 * closed if everything written went out (or the peer closed), else
 * abort.  Waits up to VISOCK_ABORT_WAIT for a send queue slot; without a
 * credit nothing can be sent (the peer then lingers until the QP ends).
 * Nothing is sent either once the connection failed over: its vc was
 * found broken (the QP goes once its connections have, taking the
 * peer's lingering ones with it) or the peer moved to TCP.
 *
 * Context: process context, may sleep; from visock_rdma_destroy_vc()
 * before it stops the data path.
 */
void visock_tx_last_word(struct visock_dp *dp)
{
	unsigned int wake = 0;
	bool wait;

	if (!visock_vc_peer_listens(dp->vc) ||
	    unlikely(READ_ONCE(visock_test_mute_end_flags)))
		return;
	spin_lock_bh(&dp->lock);
	/* Not after a failover: the vc was given up (see above). */
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
 * vc and closing the internal TCP socket - to visock_tx_close_work()
 * with a socket reference, so that close() never waits for the device.
 *
 * Context: process context, from visock_release(), no lock held.
 * Return: true: the close work now owns the teardown of the vc and
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
	 *
	 * References of the close work: this one sock_hold() is the only
	 * reference it ever has, and the run that clears @close_armed is
	 * the only one that drops it (the last line of
	 * visock_tx_close_work()).  From here until that run the work is
	 * always queued or running: visock_dp_wake() only moves it ahead
	 * (mod_delayed_work(), under @dp->lock and only while armed, so
	 * never a second instance), and a run that has to wait queues
	 * itself again.  Arming and the first queueing therefore happen
	 * together under @dp->lock: armed but not yet queued, a completion
	 * or a TCP callback (softirqs run at spin_unlock_bh(), and the task
	 * may be preempted there) could queue the work, which may run to
	 * its end and free @dp - and our queueing after that would queue
	 * freed memory and put the socket a second time.  Nothing here
	 * touches @dp after the unlock.
	 */
	sock_hold(sk);
	spin_lock_bh(&dp->lock);
	dp->close_armed = true;
	queue_delayed_work(visock_wq, &dp->close_work, 0);
	spin_unlock_bh(&dp->lock);
	if (visock_fault(VISOCK_FP_CLOSE_HANDOFF))
		msleep(VISOCK_FAULT_DELAY_MS);
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
 * worker.  Then it destroys the vc (freeing the data path state, which
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
	/*
	 * A switch that did not settle in time: its work must leave the vc
	 * alone from now on (it checks under lock_sock()).
	 */
	if (READ_ONCE(dp->sw_hold)) {
		lock_sock(&vsk->sk);
		vsk->sw_closing = false;
		release_sock(&vsk->sk);
	}
	if (!visock_tx_close_done(dp))
		visock_tx_reset(vsk);
	visock_rdma_destroy_vc(vsk);
	if (vsk->tcp)
		visock_tcp_sync_opts(vsk);
	visock_tcp_release(vsk);
	sock_put(&vsk->sk);
}
