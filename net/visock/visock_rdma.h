/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: the RDMA data path of a connection (visock_rdma.c, visock_cdc.c,
 * visock_tx.c, visock_rx.c, visock_close.c, visock_failover.c).  Lifetime
 * and locking rules are at the top of visock_tx.c and visock_rx.c.
 */
#ifndef _NET_VISOCK_RDMA_H
#define _NET_VISOCK_RDMA_H

#include <linux/poll.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>

#include "visock.h"
#include "visock_vc.h"

/* Credits data transfers leave for cursor messages (deadlock freedom). */
#define VISOCK_DP_CREDIT_RESERVE	2
/*
 * How long a TCP FIN or reset may precede the peer's closed flag: the
 * flag's completion can still be queued behind the FIN's softirq.
 */
#define VISOCK_DP_FIN_GRACE		HZ
/*
 * Return credits in a cursor message of their own from this many: three
 * quarters of the depth, so that a stream of large writes gets its
 * credits back with about every consumer update of a large ring
 * (visock_cons_update_due()) rather than in messages of their own.  At
 * most VISOCK_VC_RQ_DEPTH - VISOCK_DP_CREDIT_RESERVE (what a side that
 * waits for credits is owed) and more than 1 (credit-only messages must
 * not ping-pong).
 */
#define VISOCK_DP_CREDIT_RETURN		(VISOCK_VC_RQ_DEPTH * 3 / 4)
static_assert(VISOCK_DP_CREDIT_RETURN > 1 &&
	      VISOCK_DP_CREDIT_RETURN <=
	      VISOCK_VC_RQ_DEPTH - VISOCK_DP_CREDIT_RESERVE);

enum visock_dp_state {
	VISOCK_DP_LIVE,		/* receive requests posted, data may flow */
	VISOCK_DP_DEAD,		/* failed (@err set): no more posting */
	VISOCK_DP_STOPPED,	/* being torn down: completions are ignored */
	VISOCK_DP_FAILOVER,	/* the QP failed: positions go over TCP */
	VISOCK_DP_TCP,		/* failed over: the rings move over TCP */
};

/* How long to wait for the peer's failover message. */
#define VISOCK_FO_TIMEOUT	(5 * HZ)

/* The connection still carries data (over RDMA or, failed over, TCP). */
static inline bool visock_dp_alive(u8 state)
{
	return state == VISOCK_DP_LIVE || state == VISOCK_DP_FAILOVER ||
	       state == VISOCK_DP_TCP;
}

/* How many receive timestamps a connection keeps. */
#define VISOCK_RX_STAMPS	8

/**
 * struct visock_rx_stamp - when a range of the byte stream arrived
 * @end: stream position just after the range: struct visock_dp.rx_read
 *	plus the unread bytes when it arrived
 * @at: wall clock time the receive completion was handled, 0 if unused
 */
struct visock_rx_stamp {
	u64 end;
	ktime_t at;
};

/**
 * struct visock_dp - RDMA data path state of one connection
 * @lock: protects everything below that is not marked constant or
 *	atomic.  BH-safe spinlock: completion handlers take it in softirq.
 *	Taken inside lock_sock() of the visock socket, inside a QP's mutex
 *	(dead_cb) and inside its token table's lock (receive callback); the
 *	QP's post_lock nests inside it.  Never held
 *	while sleeping or while calling a socket callback.
 * @vsk: the socket (constant)
 * @vc: the connection's vc (constant; the socket's reference)
 * @state: enum visock_dp_state
 * @err: positive errno that ended the connection, 0 while it is fine
 * @tx_size: size of the peer's ring and of our send buffer (constant)
 * @rx_size: size of our ring (constant)
 * @sbuf: our send buffer (constant)
 * @rbuf: our receive ring (constant)
 * @local_token: token the peer puts in its cursor messages (constant)
 * @peer_token: token we put in ours (constant)
 * @tx_written: end of the bytes the application wrote into @sbuf
 * @tx_sent: end of the bytes posted to the peer (<= @tx_written)
 * @tx_acked: end of the bytes whose RDMA WRITE completed, i.e. that are
 *	in the peer's ring (<= @tx_sent; SIOCOUTQ counts from here, as
 *	TCP counts from the last acknowledged byte)
 * @tx_peer_cons: end of the bytes the peer consumed (<= @tx_sent)
 * @wr_len: FIFO of the byte counts of outstanding RDMA WRITEs, in posting
 *	order (the send queue completes in that order)
 * @wr_head: next @wr_len entry to complete
 * @wr_tail: next @wr_len entry to fill
 * @rx_prod: end of the bytes the peer wrote into @rbuf
 * @rx_cons: end of the bytes the application consumed
 * @rx_cons_sent: @rx_cons as last sent to the peer
 * @credits: receive requests of the peer we may still consume
 * @owed: receive requests we reposted but not yet returned as credits
 * @sq_free: send queue slots not used by an outstanding request
 * @tx_seq: sequence number of our last cursor message
 * @rx_seq: sequence number of the peer's last accepted one
 * @tx_slot: next send slot for a cursor message (mod SQ depth)
 * @ctrl_pending: a cursor message should be sent
 * @tx_blocked: a writer waits for space in the peer's ring (the flag
 *	VISOCK_CDC_F_WRITE_BLOCKED of cursor messages sent meanwhile; no
 *	message is sent for it alone)
 * @tx_need: space a blocked writer waits for (the least of several), 0
 *	when none waits: consumer updates that leave less wake nobody
 * @peer_blocked: the peer said it waits for space in our ring
 * @tx_shut: shutdown(SHUT_WR) or close: announce done_writing
 * @done_sent: done_writing was sent
 * @closing: close(): announce closed
 * @closed_sent: closed was sent
 * @abort: announce abort (reset) in the next cursor message
 * @abort_sent: the abort flag was sent
 * @peer_done: the peer will write nothing after @rx_prod
 * @peer_closed: the peer closed its socket
 * @bytes_sent: payload bytes posted in RDMA WRITEs
 * @bytes_rcvd: payload bytes the peer wrote into @rbuf
 * @rx_stamp: when the last VISOCK_RX_STAMPS writes of the peer
 *	completed, each with @bytes_rcvd after it (receive timestamps)
 * @rx_stamp_next: the entry of @rx_stamp the next write fills
 * @rx_read: bytes recvmsg() consumed from @rbuf, over RDMA and failover
 * @wr_posted: send work requests posted (WRITEs and cursor messages)
 * @wc: completions handled (send and receive)
 * @cdc_sent: cursor messages sent
 * @cdc_rcvd: cursor messages received and accepted
 * @tx_waits: times a blocking writer went to sleep for ring space
 * @close_wq: woken on completions and errors; visock_tx_close() waits
 *	here (the socket's own wait queue is gone once it is orphaned)
 * @close_work: finishes a graceful close in the background; runs when a
 *	completion or the peer's flags may have finished it (kicked by
 *	visock_dp_wake() while @close_armed) or at @close_deadline, and
 *	never waits for the network itself, so that many closing
 *	connections do not hold many workers
 * @close_armed: @close_work may be kicked
 * @close_deadline: jiffies at which @close_work gives up and resets
 * @fin_work: runs VISOCK_DP_FIN_GRACE after the internal TCP connection
 *	closed; resets the connection if the peer's closed flag has not
 *	arrived by then (cancelled by visock_rdma_destroy_vc())
 * @fo_work: failover to TCP (visock_failover.c): exchanges the positions
 *	and then moves the rings over TCP; kicked by TCP's callbacks and by
 *	visock_tx_push_locked() (cancelled by visock_rdma_destroy_vc())
 * @fo_deadline: jiffies by which the peer's failover message must be in
 * @fo_msg: our failover message, then the peer's as it comes in
 * @fo_sent: bytes of our failover message sent
 * @fo_rcvd: bytes of the peer's failover message received
 * @fo_tx_pos: stream position of the next byte to send over TCP
 * @fo_tx_end: stream position just after the last byte written
 *	(@tx_written as a 64-bit position)
 * @fo_shut_sent: TCP's write side was shut down after the last byte
 * @failovers: 1 once the connection failed over (for VISOCK_INFO)
 * @sw_pending: a lazy connection's client waits for the switch reply:
 *	the peer's ring and token are not known yet, nothing is sent
 * @sw_reply_in: the reply arrived, in @sw_reply (visock_lazy.c)
 * @sw_reply: the reply as received
 * @sw_reply_at: jiffies when it arrived
 * @sw_hold: a close that came while the switch reply was awaited: the
 *	close work waits until the switch settled (visock_lazy.c)
 * @tx_cqe: completion handler of RDMA WRITEs (visock_tx_done())
 * @ctrl_cqe: completion handler of cursor messages (visock_tx_ctrl_done())
 * @rec: records of the negotiated transform (visock_rec_dp.c), or NULL
 *	without one; set before the connection carries data, freed with
 *	the state
 */
struct visock_dp {
	/* Protects the fields below; BH-safe; inside lock_sock() */
	spinlock_t lock;
	struct visock_sock *vsk;
	struct visock_vc *vc;
	u8 state;
	int err;

	u32 tx_size;
	u32 rx_size;
	u8 *sbuf;
	const u8 *rbuf;
	u32 local_token;
	u32 peer_token;

	struct visock_cursor tx_written;
	struct visock_cursor tx_sent;
	struct visock_cursor tx_acked;
	struct visock_cursor tx_peer_cons;
	u32 wr_len[VISOCK_VC_SQ_DEPTH];
	u32 wr_head;
	u32 wr_tail;
	struct visock_cursor rx_prod;
	struct visock_cursor rx_cons;
	struct visock_cursor rx_cons_sent;

	u32 credits;
	u32 owed;
	u32 sq_free;
	u32 tx_seq;
	u32 rx_seq;
	u32 tx_slot;

	u32 tx_need;
	bool ctrl_pending;
	bool tx_blocked;
	bool peer_blocked;
	bool tx_shut;
	bool done_sent;
	bool closing;
	bool closed_sent;
	bool abort;
	bool abort_sent;
	bool peer_done;
	bool peer_closed;

	u64 bytes_sent;
	u64 bytes_rcvd;
	struct visock_rx_stamp rx_stamp[VISOCK_RX_STAMPS];
	u32 rx_stamp_next;
	u64 rx_read;
	u64 wr_posted;
	u64 wc;
	u64 cdc_sent;
	u64 cdc_rcvd;
	u64 tx_waits;

	wait_queue_head_t close_wq;
	struct delayed_work close_work;
	bool close_armed;
	unsigned long close_deadline;
	struct delayed_work fin_work;

	struct delayed_work fo_work;
	unsigned long fo_deadline;
	u8 fo_msg[VISOCK_FO_LEN];
	u8 fo_sent;
	u8 fo_rcvd;
	u64 fo_tx_pos;
	u64 fo_tx_end;
	bool fo_shut_sent;
	u8 failovers;

	bool sw_pending;
	bool sw_reply_in;
	u8 sw_reply[VISOCK_CDC_LEN];
	unsigned long sw_reply_at;
	bool sw_hold;

	struct ib_cqe tx_cqe;
	struct ib_cqe ctrl_cqe;

	struct visock_dp_rec *rec;
};

/* Bytes written by the application and not posted yet.  Under @dp->lock. */
static inline u32 visock_dp_unsent(const struct visock_dp *dp)
{
	s64 d = visock_cursor_diff(dp->tx_size, &dp->tx_sent, &dp->tx_written);

	return d < 0 ? 0 : (u32)d;
}

/*
 * After close(), the closed flag goes with the last byte (@unsent 0), or
 * at once if the peer closed: it reads nothing more.  Under @dp->lock.
 */
static inline bool visock_dp_closed_due(const struct visock_dp *dp,
					u32 unsent)
{
	return dp->closing && (!unsent || dp->peer_closed);
}

/* Wake-ups collected under @lock and delivered after it is dropped. */
#define VISOCK_WAKE_READ	0x1
#define VISOCK_WAKE_WRITE	0x2
#define VISOCK_WAKE_ERR		0x4
#define VISOCK_WAKE_CLOSE	0x8
/* sk_state_change: wakes pollers of any event (EPOLLRDHUP, EPOLLHUP) */
#define VISOCK_WAKE_STATE	0x10

/* visock_rdma.c */
extern const struct visock_mode_ops visock_rdma_mode_ops;
int visock_rdma_prepare(struct visock_sock *vsk);
void visock_rdma_destroy_vc(struct visock_sock *vsk);
bool visock_rdma_ended(struct visock_sock *vsk);
void visock_dp_fail_locked(struct visock_dp *dp, int err, bool tell_peer,
			   const char *why, int detail, unsigned int *wake);
void visock_dp_wake(struct visock_dp *dp, unsigned int wake);
__poll_t visock_rdma_poll(struct visock_sock *vsk);
int visock_rdma_ioctl(struct visock_sock *vsk, unsigned int cmd,
		      unsigned long arg);
bool visock_dp_query(struct visock_sock *vsk, struct visock_info *info,
		     struct visock_diag_ring *ring);

/* visock_cdc.c */
void visock_cdc_send_locked(struct visock_dp *dp, unsigned int *wake);
void visock_cdc_recv_locked(struct visock_dp *dp, const u8 *buf, u32 len,
			    unsigned int *wake);
void visock_cdc_note_quiet(struct visock_dp *dp, const u8 *buf, u32 len);
int visock_cdc_send_swrep_locked(struct visock_dp *dp,
				 const struct visock_swrep *m);

/* visock_close.c */
void visock_rdma_tcp_closed(struct visock_sock *vsk);
void visock_rdma_fin_work(struct work_struct *work);
int visock_tx_shutdown(struct visock_sock *vsk, int how);
bool visock_tx_close(struct visock_sock *vsk);
void visock_tx_last_word(struct visock_dp *dp);
void visock_tx_close_work(struct work_struct *work);

/* visock_tx.c */
void visock_tx_push_locked(struct visock_dp *dp, unsigned int *wake);
void visock_tx_done(struct ib_cq *cq, struct ib_wc *wc);
void visock_tx_ctrl_done(struct ib_cq *cq, struct ib_wc *wc);
int visock_tx_sendmsg(struct visock_sock *vsk, struct msghdr *msg,
		      size_t len);
u32 visock_tx_space_locked(const struct visock_dp *dp);
u32 visock_tx_wake_min_locked(const struct visock_dp *dp);

/* visock_failover.c */
void visock_dp_vc_failed_locked(struct visock_dp *dp, const char *why,
				int detail, unsigned int *wake);
void visock_fo_kick(struct visock_dp *dp);
void visock_fo_work(struct work_struct *work);
void visock_rdma_tcp_event(struct visock_sock *vsk);

/* visock_rx.c */
void visock_rx_event(void *ctx, const struct visock_rx_ev *ev);
int visock_rx_recvmsg(struct visock_sock *vsk, struct msghdr *msg,
		      size_t len, int flags);
u32 visock_rx_avail_locked(const struct visock_dp *dp);
u32 visock_rx_ready_locked(const struct visock_dp *dp);

/* visock_rec_dp.c */
struct visock_auth_conn;
int visock_dp_rec_init(struct visock_dp *dp, struct visock_auth_conn *a,
		       bool server);
void visock_dp_rec_free(struct visock_dp *dp);
u32 visock_dp_rec_overhead(const struct visock_dp *dp);
u32 visock_dp_rec_need(const struct visock_dp *dp, size_t left);
void visock_dp_rec_forge(const struct visock_dp *dp, const u8 *payload,
			 u32 len, u8 *out);
int visock_dp_rec_send(struct visock_dp *dp, u32 off, u32 space,
		       size_t left, struct msghdr *msg, u32 *wire, u32 *want);
u32 visock_dp_rec_ready_locked(const struct visock_dp *dp);
u32 visock_dp_rec_pending_locked(const struct visock_dp *dp);
int visock_dp_rec_fill(struct visock_dp *dp);
u32 visock_dp_rec_copy(struct visock_dp *dp, u32 skip, u32 n,
		       struct msghdr *msg, bool consume);
void visock_dp_rec_query(const struct visock_dp *dp,
			 struct visock_info *info);
void visock_rx_stamp_locked(struct visock_dp *dp);
void visock_rx_check_update_locked(struct visock_dp *dp);

#endif /* _NET_VISOCK_RDMA_H */
