// SPDX-License-Identifier: GPL-2.0
/*
 * visock: lazy start, and the switch of a connection from TCP to RDMA.
 *
 * A client that has a QP up to the peer proposes a lazy start with a
 * threshold L in its SYN option; a listener that takes lazy starts echoes
 * it (visock_tcp.c, visock_nf.c).  Such a connection skips the handshake:
 * connect() and accept() return as over TCP, and the stream goes over
 * the internal TCP socket (VISOCK_MODE_TCP with VISOCK_F_LAZY).  Short
 * connections never touch the QP.
 *
 * The side whose application writes past byte L - 1 of its stream first
 * (the initiator) joins an existing QP of its link group (a token, a
 * ring, receive requests), writes a SWITCH message (a REQ's TLVs) to TCP
 * right after byte L - 1 and waits for the reply, writing nothing
 * meanwhile.  The other side (the responder) finds the message in its
 * TCP receive queue at the initiator's byte L (L is agreed, so nothing
 * else can stand there), without waiting for its application to read up
 * to it; joins the QP it names, fixes its switch position P (the bytes
 * it wrote to TCP) and answers with a switch reply on the QP
 * (visock_wire.h): its token, its ring and P.  From then on the
 * responder writes over RDMA; its application reads TCP up to L, the
 * SWITCH message is dropped, and then the ring.  The initiator, on the
 * reply, reads TCP up to P and then the ring, and writes over RDMA.
 * Both are then VISOCK_MODE_RDMA connections like any other.
 *
 * A server starts a switch only if both SYN options carried version
 * VISOCK_TCPOPT_V_LAZY_BOTH (sw_both); else only the client does, and
 * the server's TCP bytes are not bounded by L.  With sw_both, each
 * direction that reaches L on TCP carries exactly one message there: a
 * SWITCH (its writer starts the switch), or a DECLINE (its writer could
 * not start one, or the connection stays on TCP for good already), so a
 * reader always knows whether a message follows the peer's byte L - 1.
 * Both sides starting at once: the client's SWITCH wins.  A server
 * waiting for its reply that finds the client's SWITCH drops its own
 * pending connection on the QP and answers as a responder with P = L and
 * VISOCK_SWREP_F_OWN_REQ; a client that wrote a SWITCH drops the
 * server's unanswered.
 *
 * An initiator that cannot start the switch (no QP up, memory) writes a
 * DECLINE in place of the SWITCH; a responder that cannot join (QP gone
 * or full, memory) declines from the QP's own slot
 * (visock_lgr_switch_decline()): both stay on TCP for good, the message
 * dropped from the stream.  A reply that does not come within
 * net.visock.handshake_timeout_ms of TCP's acknowledgment of the SWITCH,
 * or a malformed message, resets the connection: neither side could go
 * on safely.  So does a responder that cannot decline, or whose
 * net.visock.auth refuses the SWITCH.  The reader of a reset connection
 * gets the peer's bytes before its message after byte L - 1 and then
 * the error (ECONNRESET on the responder), never the message itself
 * (visock_lazy_fail()).
 *
 * close() or shutdown(SHUT_WR) while the initiator waits for the reply
 * end the stream where it goes once the switch settles: shutdown waits
 * for it (sw_tx_shut), close() hands the data path to the close work
 * (visock_tx_close(), sw_closing and the data path's sw_hold), which
 * waits until this work settled the switch.  Accepted: done writing and
 * closed over RDMA; declined: TCP's FIN; no reply: a reset.  A side that
 * closes with the peer's message after its byte L - 1 still unhandled
 * handles it first (a SWITCH is declined: the closing side writes
 * nothing more) and drops it from the stream once everything before it
 * was read, so that TCP does not take it for unread data.
 *
 * This version leaves to later (Documentation/networking/visock/
 * lazy-switch.rst): failover while bytes from before the switch are
 * unread (a reset).
 *
 * Locking: the sw_* fields of struct visock_sock change under
 * lock_sock().  TCP is read and written with non-blocking calls under
 * lock_sock(), so the switch never waits behind a writer or reader that
 * waits for the network; those wait on the visock socket without the
 * lock, woken by TCP's callbacks (visock_tcp.c) and by the switch.
 */
#include <linux/jiffies.h>
#include <linux/sched/signal.h>
#include <linux/uio.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "visock.h"
#include "af_visock.h"
#include "visock_handshake.h"
#include "visock_lazy.h"
#include "visock_tcp.h"
#include "visock_vc.h"
#include "visock_rdma.h"
#include "visock_debugfs.h"

/* Where a lazy connection's reader stands (visock_lazy_rx_phase()). */
enum visock_lazy_rx_phase {
	VISOCK_LZ_TCP,		/* read the peer's bytes from TCP */
	VISOCK_LZ_SKIP,		/* drop the peer's SWITCH message */
	VISOCK_LZ_WAIT,		/* nothing to read until the switch settles */
	VISOCK_LZ_RING,		/* switched: read the ring */
	VISOCK_LZ_RESET,	/* the switch failed: only the error is left */
};

/**
 * visock_lazy_start() - a lazy start was agreed: settle on TCP for now
 * @vsk: socket whose TCP connection was just established
 *
 * Context: any (TCP's softirq callback on the client); does not sleep.
 */
void visock_lazy_start(struct visock_sock *vsk)
{
	bool server = vsk->listener;
	bool both = vsk->local_opt.version >= VISOCK_TCPOPT_V_LAZY_BOTH &&
		    vsk->peer_opt.version >= VISOCK_TCPOPT_V_LAZY_BOTH;

	vsk->sw_server = server;
	vsk->sw_both = both;
	WRITE_ONCE(vsk->sw_state, VISOCK_SW_NONE);
	vsk->sw_tx_pos = 0;
	vsk->sw_rx_pos = 0;
	vsk->sw_tx_msg = 0;
	vsk->sw_rx_msg = 0;
	vsk->sw_seen_at = 0;
	/* A message may follow the peer's byte L - 1 if it may start. */
	vsk->sw_rx_end = server || both ? vsk->lazy_bytes : U64_MAX;
	vsk->sw_peer_seen = !(server || both);
	vsk->sw_skip = 0;
	vsk->sw_closing = false;
	vsk->sw_tx_shut = false;
	vsk->hs_state = VISOCK_HS_DONE;
	atomic64_inc(&visock_net(sock_net(&vsk->sk))->lazy_started);
	WRITE_ONCE(vsk->fb_reason, VISOCK_FB_NONE);
	set_bit(VISOCK_F_LAZY, &vsk->flags);
	visock_set_mode(vsk, VISOCK_MODE_TCP);
	set_bit(VISOCK_F_SETTLED, &vsk->flags);
}

/* May this side write a SWITCH (or DECLINE) after its byte L - 1? */
static bool visock_lazy_may_start(const struct visock_sock *vsk)
{
	return !vsk->sw_server || vsk->sw_both;
}

static int visock_lazy_rx_phase(const struct visock_sock *vsk, u64 *room)
{
	u8 st = READ_ONCE(vsk->sw_state);

	if (READ_ONCE(vsk->sw_rx_pos) < READ_ONCE(vsk->sw_rx_end)) {
		/* Our reply says how far the peer's TCP bytes go. */
		if (st == VISOCK_SW_WAIT)
			return VISOCK_LZ_WAIT;
		*room = vsk->sw_rx_end - vsk->sw_rx_pos;
		return VISOCK_LZ_TCP;
	}
	/* Where the peer's message stands (or may): the reset, not it. */
	if (st == VISOCK_SW_RESET)
		return VISOCK_LZ_RESET;
	if (READ_ONCE(vsk->sw_skip))
		return VISOCK_LZ_SKIP;
	if (!READ_ONCE(vsk->sw_peer_seen) || st == VISOCK_SW_NONE ||
	    st == VISOCK_SW_WAIT)
		return VISOCK_LZ_WAIT;
	if (st == VISOCK_SW_DONE)
		return VISOCK_LZ_RING;
	*room = U64_MAX;	/* declined: TCP for good */
	return VISOCK_LZ_TCP;
}

/**
 * visock_lazy_rx_pending() - are bytes from before the switch unread
 * @vsk: socket
 *
 * True for a switched lazy connection whose application has not read
 * all the peer's bytes that came over TCP (or the SWITCH message is still
 * in the stream): TCP must not be taken for a failover message yet.
 *
 * Context: any; a lockless snapshot (the answer only turns false once).
 * Return: true while such bytes (or the SWITCH message) are unread.
 */
bool visock_lazy_rx_pending(const struct visock_sock *vsk)
{
	u64 end = READ_ONCE(vsk->sw_rx_end);

	return test_bit(VISOCK_F_LAZY, &vsk->flags) &&
	       (READ_ONCE(vsk->sw_rx_pos) < end || READ_ONCE(vsk->sw_skip) ||
		(!READ_ONCE(vsk->sw_peer_seen) && end != U64_MAX));
}

/* Wake whoever waits for the connection: the switch moved on. */
static void visock_lazy_wake(struct visock_sock *vsk)
{
	struct sock *sk = &vsk->sk;

	sk->sk_state_change(sk);
	sk->sk_write_space(sk);
	sk->sk_data_ready(sk);
}

/*
 * The initiator's pending connection on the QP will never be used: the
 * peer never joins it, nobody writes to its ring.  After close() the
 * close work owns the data path (it still waits for the switch to
 * settle) and destroys it; nothing goes out on it before (sw_pending).
 */
static void visock_lazy_drop_vc(struct visock_sock *vsk)
{
	if (vsk->vc)
		visock_vc_peer_quiet(vsk->vc);
	if (!vsk->sw_closing)
		visock_rdma_destroy_vc(vsk);
}

/*
 * The stream cannot be trusted: reset, and never try again.  The reader
 * still gets the peer's bytes that stand before its message after its
 * byte L - 1 (read, or still to come there), then @err instead of the
 * message; where no message stands before the rest of TCP (declined
 * and dropped already, or none can come), every byte TCP still has,
 * then @err instead of the end of the stream.
 */
static void visock_lazy_fail(struct visock_sock *vsk, int err)
{
	bool msg_ahead;

	lockdep_assert_held(&vsk->sk.sk_lock);
	atomic64_inc(&visock_net(sock_net(&vsk->sk))->switch_reset);
	msg_ahead = vsk->sw_skip ||
		    (!vsk->sw_peer_seen && vsk->sw_rx_end != U64_MAX);
	WRITE_ONCE(vsk->sw_state, VISOCK_SW_RESET);
	WRITE_ONCE(vsk->sw_skip, 0);
	if (!msg_ahead)
		WRITE_ONCE(vsk->sw_rx_end, U64_MAX);
	WRITE_ONCE(vsk->sw_peer_seen, true);
	vsk->sw_tx_msg = VISOCK_HS_DECLINE;	/* nothing more to write */
	if (vsk->sw_closing) {
		/* The close work ends it: TCP is reset when it goes. */
		visock_lazy_drop_vc(vsk);
		sock_no_linger(&vsk->sk);
		WRITE_ONCE(vsk->sk.sk_err, err);
	} else {
		visock_hs_abort(vsk, err);
	}
	visock_lazy_wake(vsk);
}

/* No switch: TCP for good.  Counted once per connection. */
static void visock_lazy_declined(struct visock_sock *vsk)
{
	if (vsk->sw_state != VISOCK_SW_DECLINED)
		atomic64_inc(&visock_net(sock_net(&vsk->sk))->switch_declined);
	WRITE_ONCE(vsk->sw_state, VISOCK_SW_DECLINED);
	visock_lazy_wake(vsk);
}

static void visock_lazy_switched(struct visock_sock *vsk)
{
	atomic64_inc(&visock_net(sock_net(&vsk->sk))->switches);
	WRITE_ONCE(vsk->sw_state, VISOCK_SW_DONE);
	visock_hs_auth_done(vsk);
	visock_hs_success(vsk);
	visock_lazy_wake(vsk);
}

/* A DECLINE after our byte L - 1: this side stays on TCP for good. */
static int visock_lazy_send_decline(struct visock_sock *vsk, u8 reason)
{
	struct visock_hs_msg m = {};
	int err;

	m.type = VISOCK_HS_DECLINE;
	m.present = VISOCK_HSF(VISOCK_TLV_REASON);
	m.reason = reason;
	err = visock_hs_send(vsk, &m);
	if (err) {
		visock_lazy_fail(vsk, -err);
		return err;
	}
	vsk->sw_tx_msg = VISOCK_HS_DECLINE;
	return 0;
}

/*
 * Our stream reached L on TCP and a message must follow byte L - 1: a
 * SWITCH if no switch was settled yet, else (declined, sw_both only) a
 * DECLINE.  Returns -EAGAIN while TCP has no room for the message, < 0
 * if the connection was reset, else 0 (waiting for the reply, or
 * declined: both stay on TCP).
 */
static int visock_lazy_switch(struct visock_sock *vsk)
{
	struct visock_hs_msg m;
	int err;

	lockdep_assert_held(&vsk->sk.sk_lock);
	if (sk_stream_wspace(vsk->tcp->sk) < VISOCK_HS_MAX_LEN)
		return -EAGAIN;
	if (vsk->sw_state != VISOCK_SW_NONE)
		return visock_lazy_send_decline(vsk, VISOCK_FB_PEER_DECLINE);
	err = visock_hs_make_vc(vsk, &m, VISOCK_HS_SWITCH, NULL);
	/* Only onto a QP that is up: a new one would need the handshake. */
	if (!err && !visock_vc_reused(vsk->vc))
		err = -ENOLINK;
	/* TLV AUTH where net.visock.auth asks for it. */
	if (!err)
		err = visock_hs_switch_auth(vsk, &m);
	/* The server writes as soon as it answers. */
	if (!err)
		err = visock_vc_register_rx(vsk->vc);
	if (!err)
		err = visock_rdma_prepare(vsk);
	if (err) {
		/* The SWITCH was not sent: nobody writes to the ring. */
		if (vsk->vc)
			visock_vc_peer_quiet(vsk->vc);
		visock_rdma_destroy_vc(vsk);
		if (err == -ECONNREFUSED) {
			/* No key, and net.visock.auth resets then. */
			visock_lazy_fail(vsk, ECONNREFUSED);
			return err;
		}
		/*
		 * The peer expects a message at byte L: a DECLINE in place
		 * of the SWITCH keeps both ends on TCP.
		 */
		err = visock_lazy_send_decline(vsk, visock_hs_vc_reason(err));
		if (!err)
			visock_lazy_declined(vsk);
		return err;
	}
	spin_lock_bh(&vsk->dp->lock);
	vsk->dp->sw_pending = true;
	spin_unlock_bh(&vsk->dp->lock);
	err = visock_hs_send(vsk, &m);
	if (err) {
		visock_lazy_fail(vsk, -err);
		return err;
	}
	vsk->sw_tx_msg = VISOCK_HS_SWITCH;
	atomic64_inc(&visock_net(sock_net(&vsk->sk))->switch_started);
	WRITE_ONCE(vsk->sw_state, VISOCK_SW_WAIT);
	vsk->sw_seq = READ_ONCE(tcp_sk(vsk->tcp->sk)->write_seq);
	vsk->sw_acked = false;
	vsk->sw_started = jiffies;
	vsk->sw_deadline = jiffies +
		msecs_to_jiffies(READ_ONCE(visock_net(sock_net(&vsk->sk))->hs_timeout_ms));
	visock_hs_queue_at(vsk, jiffies + 1);
	return 0;
}

/**
 * visock_lazy_reply_locked() - a switch reply arrived on the QP
 * @dp: the initiator's data path state, waiting for it
 * @buf: the message
 * @len: its length
 *
 * Kept for visock_lazy_work(); a reply nobody waits for ends the
 * connection.
 *
 * Context: softirq, under @dp->lock (visock_rx_event()).
 */
void visock_lazy_reply_locked(struct visock_dp *dp, const u8 *buf, u32 len)
{
	unsigned int wake = 0;

	lockdep_assert_held(&dp->lock);
	if (!dp->sw_pending || dp->sw_reply_in || len != VISOCK_CDC_LEN) {
		visock_dp_fail_locked(dp, ECONNRESET, true,
				      "unexpected switch reply", 0, &wake);
		return;
	}
	memcpy(dp->sw_reply, buf, VISOCK_CDC_LEN);
	dp->sw_reply_in = true;
	dp->sw_reply_at = jiffies;
	if (unlikely(READ_ONCE(visock_test_swrep_delay_ms)))
		visock_hs_queue_at(dp->vsk, jiffies +
				   msecs_to_jiffies(visock_test_swrep_delay_ms));
	else
		visock_hs_kick(dp->vsk);
}

/* Initiator: the reply is in (or the time is up).  Under lock_sock(). */
static void visock_lazy_init_reply(struct visock_sock *vsk)
{
	struct visock_dp *dp = vsk->dp;
	struct visock_hs_msg m = {};
	u8 buf[VISOCK_CDC_LEN];
	unsigned int wake = 0;
	struct visock_swrep r;
	unsigned long at;
	bool in, own, bad;
	u64 pos;

	lockdep_assert_held(&vsk->sk.sk_lock);
	spin_lock_bh(&dp->lock);
	in = dp->sw_reply_in;
	memcpy(buf, dp->sw_reply, sizeof(buf));
	at = dp->sw_reply_at;
	spin_unlock_bh(&dp->lock);
	if (in && unlikely(READ_ONCE(visock_test_swrep_delay_ms))) {
		at += msecs_to_jiffies(READ_ONCE(visock_test_swrep_delay_ms));
		if (time_before(jiffies, at)) {
			visock_hs_queue_at(vsk, at);
			return;
		}
	}
	if (!in) {
		struct visock_net *vn = visock_net(sock_net(&vsk->sk));
		unsigned long timeout;

		timeout = msecs_to_jiffies(READ_ONCE(vn->hs_timeout_ms));

		/*
		 * Until TCP saw the SWITCH acknowledged, the peer is a
		 * TCP receiver that does not read: wait as TCP would.  The
		 * reply's clock starts when we first see the
		 * acknowledgment, which is never before it came; looking
		 * a few times per timeout keeps that close to it.
		 */
		if (!vsk->sw_acked &&
		    !before(READ_ONCE(tcp_sk(vsk->tcp->sk)->snd_una),
			    vsk->sw_seq)) {
			vsk->sw_acked = true;
			vsk->sw_started = jiffies;
			vsk->sw_deadline = jiffies + timeout;
		}
		if (!vsk->sw_acked) {
			visock_hs_queue_at(vsk, jiffies + max(timeout / 4, 1UL));
			return;
		}
		if (time_after_eq(jiffies, vsk->sw_deadline))
			visock_lazy_fail(vsk, ETIMEDOUT);
		else
			visock_hs_queue_at(vsk, vsk->sw_deadline);
		return;
	}
	if (visock_swrep_decode(buf, sizeof(buf), &r) ||
	    r.token != vsk->local_token) {
		visock_lazy_fail(vsk, EPROTO);
		return;
	}
	if (!(r.flags & VISOCK_SWREP_F_ACCEPT)) {
		/* The responder could not authenticate our SWITCH. */
		if (r.reason == VISOCK_FB_AUTH ||
		    r.reason == VISOCK_FB_AUTH_MISSING)
			WRITE_ONCE(vsk->fb_reason, r.reason);
		/* Nothing of ours is on the peer's QP end: drop ours. */
		visock_lazy_drop_vc(vsk);
		visock_lazy_declined(vsk);
		return;
	}
	/* The peer's TCP bytes end at or after what we read of them. */
	pos = visock_switch_pos(vsk->sw_rx_pos, r.pos);
	own = r.flags & VISOCK_SWREP_F_OWN_REQ;
	if (pos - vsk->sw_rx_pos >= BIT_ULL(31) ||
	    (r.flags & VISOCK_SWREP_F_DONE) ||
	    (vsk->sw_both && pos > vsk->lazy_bytes)) {
		visock_lazy_fail(vsk, EPROTO);
		return;
	}
	/*
	 * The server's own SWITCH stands after its byte L - 1 exactly when
	 * it says so (both started at once); else nothing may stand there.
	 */
	if (own)
		bad = !vsk->sw_both || vsk->sw_server ||
		      pos != vsk->lazy_bytes ||
		      (vsk->sw_rx_msg && vsk->sw_rx_msg != VISOCK_HS_SWITCH);
	else
		bad = vsk->sw_rx_msg;
	if (bad) {
		visock_lazy_fail(vsk, EPROTO);
		return;
	}
	/*
	 * The responder writes over RDMA already: a reply that is not
	 * authenticated as net.visock.auth asks cannot be declined.
	 */
	if (visock_hs_swrep_open(vsk, &r, buf)) {
		visock_lazy_fail(vsk, ECONNRESET);
		return;
	}
	m.type = VISOCK_HS_REP;
	m.version = VISOCK_HS_VERSION;
	visock_vc_peer_params(vsk->vc, &m);
	m.rbuf_addr = r.rbuf_addr;
	m.rbuf_rkey = r.rbuf_rkey;
	m.rbuf_size = visock_sizeclass_bytes(r.rbuf_class);
	m.token = r.rtoken;
	m.present |= VISOCK_HSF(VISOCK_TLV_RBUF) | VISOCK_HSF(VISOCK_TLV_TOKEN);
	visock_hs_note_peer(vsk, &m);
	if (visock_vc_connect(vsk->vc, &m)) {
		/* The server writes already: we cannot take it. */
		visock_lazy_fail(vsk, ECONNRESET);
		return;
	}
	spin_lock_bh(&dp->lock);
	dp->tx_size = visock_vc_peer_rbuf_size(vsk->vc);
	dp->sbuf = visock_vc_sbuf(vsk->vc);
	dp->peer_token = vsk->peer_token;
	dp->sw_pending = false;
	visock_tx_push_locked(dp, &wake);
	spin_unlock_bh(&dp->lock);
	visock_dp_wake(dp, wake);
	WRITE_ONCE(vsk->sw_rx_end, pos);
	if (!own)
		WRITE_ONCE(vsk->sw_peer_seen, true);
	visock_lazy_switched(vsk);
}

/*
 * Responder: send the accepting reply, the first message of the new
 * connection.  If it cannot go, nothing of ours reached the initiator
 * and nothing may (no closed or abort flag either, it does not know our
 * token): the caller declines from the QP's own slot instead.  @own: our
 * own SWITCH stands after our byte L - 1 (both started at once), so our
 * switch position is L and the initiator drops that message.
 */
static int visock_lazy_send_reply(struct visock_sock *vsk,
				  const struct visock_hs_msg *sw,
				  const struct visock_hs_msg *m, bool own)
{
	struct visock_dp *dp = vsk->dp;
	struct visock_swrep r = {};
	int err;

	r.token = sw->token;
	r.flags = VISOCK_SWREP_F_ACCEPT | (own ? VISOCK_SWREP_F_OWN_REQ : 0);
	r.rbuf_class = visock_sizeclass_for(m->rbuf_size);
	r.rtoken = vsk->local_token;
	r.rbuf_addr = m->rbuf_addr;
	r.rbuf_rkey = m->rbuf_rkey;
	/* Our TCP bytes end here: every later one goes over RDMA. */
	r.pos = (u32)vsk->sw_tx_pos;
	err = visock_hs_swrep_seal(vsk, &r);
	if (err)
		return err;
	spin_lock_bh(&dp->lock);
	err = visock_cdc_send_swrep_locked(dp, &r);
	if (err)
		dp->state = VISOCK_DP_STOPPED;
	spin_unlock_bh(&dp->lock);
	return err;
}

/*
 * Responder: answer the peer's SWITCH @sw (@len bytes in @buf).  Under
 * lock_sock().
 */
static void visock_lazy_respond(struct visock_sock *vsk,
				const struct visock_hs_msg *sw, const u8 *buf,
				int len, bool own)
{
	struct visock_hs_msg m;
	u32 reason = 0;
	int err;

	visock_hs_note_peer(vsk, sw);
	/* A side that shut its sending side has nothing to switch. */
	err = (vsk->sk.sk_shutdown | vsk->tcp->sk->sk_shutdown) &
	      SEND_SHUTDOWN ? -ESHUTDOWN : 0;
	/* Before anything is set up for it, as a server checks a REQ. */
	if (!err)
		err = visock_hs_switch_check(vsk, sw, buf, len);
	if (err == -ECONNREFUSED) {
		/* net.visock.auth resets: the stream is established already. */
		visock_lazy_fail(vsk, ECONNRESET);
		return;
	}
	if (err > 0) {
		reason = err;
		err = -EACCES;
	}
	if (!err)
		err = visock_hs_make_vc(vsk, &m, VISOCK_HS_REP, sw);
	if (!err)
		err = visock_vc_connect(vsk->vc, sw);
	if (!err)
		err = visock_rdma_prepare(vsk);
	if (!err)
		err = visock_lazy_send_reply(vsk, sw, &m, own);
	if (err) {
		visock_rdma_destroy_vc(vsk);
		if (!reason)
			reason = err == -ESHUTDOWN ? VISOCK_FB_PEER_DECLINE :
				 visock_hs_vc_reason(err);
		if (visock_hs_switch_decline(vsk, sw, reason)) {
			/* The initiator cannot learn it: it times out too. */
			visock_lazy_fail(vsk, ECONNRESET);
			return;
		}
		visock_lazy_declined(vsk);
		return;
	}
	visock_lazy_switched(vsk);
}

/*
 * Is the peer's message after its byte L - 1 in?  Read it where it
 * stands in TCP's receive queue, behind the bytes the application has
 * not read yet, and act on it.  Under lock_sock().
 */
static void visock_lazy_peer_msg(struct visock_sock *vsk)
{
	struct visock_hs_msg sw;
	u8 buf[VISOCK_HS_MAX_LEN];
	u32 off;
	int n, len;

	lockdep_assert_held(&vsk->sk.sk_lock);
	off = vsk->lazy_bytes - vsk->sw_rx_pos;
	n = visock_tcp_peek_at(vsk->tcp, off, buf, VISOCK_HS_HDR_LEN);
	if (n < VISOCK_HS_HDR_LEN)
		return;
	len = visock_hs_msg_len(buf, n);
	if (len < 0) {
		visock_lazy_fail(vsk, ECONNRESET);
		return;
	}
	if (visock_tcp_peek_at(vsk->tcp, off, buf, len) < len)
		return;
	if (visock_hs_decode(buf, len, &sw) ||
	    (sw.type != VISOCK_HS_SWITCH && sw.type != VISOCK_HS_DECLINE)) {
		visock_lazy_fail(vsk, ECONNRESET);
		return;
	}
	if (unlikely(READ_ONCE(visock_test_sw_delay_ms)) &&
	    !test_bit(VISOCK_F_RELEASED, &vsk->flags)) {
		unsigned long at;

		if (!vsk->sw_seen_at)
			vsk->sw_seen_at = jiffies ? jiffies : 1;
		at = vsk->sw_seen_at +
		     msecs_to_jiffies(READ_ONCE(visock_test_sw_delay_ms));
		if (time_before(jiffies, at)) {
			visock_hs_queue_at(vsk, at);
			return;
		}
	}
	vsk->sw_rx_msg = sw.type;
	WRITE_ONCE(vsk->sw_skip, len);
	WRITE_ONCE(vsk->sw_peer_seen, true);
	if (sw.type == VISOCK_HS_DECLINE) {
		/*
		 * The peer could not start a switch, or stays on TCP for
		 * good already.  A SWITCH of ours it answers on the QP.
		 */
		if (vsk->sw_state == VISOCK_SW_NONE)
			visock_lazy_declined(vsk);
		else
			visock_lazy_wake(vsk);
		return;
	}
	/*
	 * The client's SWITCH wins: a client that wrote one drops the
	 * server's, which the server gave up when it found the client's.
	 */
	if (!vsk->sw_server && vsk->sw_tx_msg == VISOCK_HS_SWITCH) {
		atomic64_inc(&visock_net(sock_net(&vsk->sk))->switch_crossed);
		visock_lazy_wake(vsk);
		return;
	}
	switch (vsk->sw_state) {
	case VISOCK_SW_NONE:
		visock_lazy_respond(vsk, &sw, buf, len, false);
		break;
	case VISOCK_SW_WAIT:
		/*
		 * Server, both started at once: the client never joins
		 * our pending connection, nobody writes to its ring.  A
		 * server that closed writes nothing more: it declines, and
		 * both stay on TCP.
		 */
		atomic64_inc(&visock_net(sock_net(&vsk->sk))->switch_crossed);
		visock_lazy_drop_vc(vsk);
		if (test_bit(VISOCK_F_RELEASED, &vsk->flags)) {
			visock_lazy_declined(vsk);
			if (visock_hs_switch_decline(vsk, &sw,
						     VISOCK_FB_PEER_DECLINE))
				visock_lazy_fail(vsk, ECONNRESET);
			break;
		}
		WRITE_ONCE(vsk->sw_state, VISOCK_SW_NONE);
		visock_lazy_respond(vsk, &sw, buf, len, true);
		break;
	case VISOCK_SW_DECLINED:
		/* We stay on TCP; the peer waits for an answer. */
		if (visock_hs_switch_decline(vsk, &sw, VISOCK_FB_PEER_DECLINE))
			visock_lazy_fail(vsk, ECONNRESET);
		else
			visock_lazy_wake(vsk);
		break;
	default:
		/* A SWITCH can only follow the switch it started. */
		visock_lazy_fail(vsk, ECONNRESET);
		break;
	}
}

/*
 * The switch settled (switched, declined or failed) after shutdown() or
 * close() came while the initiator waited for the reply.  Under
 * lock_sock().
 */
static void visock_lazy_settled(struct visock_sock *vsk)
{
	struct visock_dp *dp = vsk->dp;
	unsigned int wake = 0;

	if (vsk->sw_tx_shut) {
		vsk->sw_tx_shut = false;
		if (READ_ONCE(vsk->mode) == VISOCK_MODE_RDMA && dp) {
			/* Done writing follows our last byte over RDMA. */
			spin_lock_bh(&dp->lock);
			dp->tx_shut = true;
			visock_tx_push_locked(dp, &wake);
			spin_unlock_bh(&dp->lock);
			visock_dp_wake(dp, wake);
		} else if (!vsk->sk.sk_err) {
			/* Declined: TCP's FIN follows our SWITCH. */
			kernel_sock_shutdown(vsk->tcp, SHUT_WR);
		}
	}
	if (vsk->sw_closing && dp) {
		vsk->sw_closing = false;
		/*
		 * The close work may go on (and free @dp) once it sees
		 * @sw_hold cleared: nothing touches @dp after the unlock.
		 */
		spin_lock_bh(&dp->lock);
		dp->sw_hold = false;
		if (dp->close_armed)
			mod_delayed_work(visock_wq, &dp->close_work, 0);
		spin_unlock_bh(&dp->lock);
	}
}

/**
 * visock_lazy_work() - the switch's part of the handshake work
 * @vsk: a lazy connection
 *
 * Context: process context (visock_wq), under lock_sock(@vsk).
 */
void visock_lazy_work(struct visock_sock *vsk)
{
	lockdep_assert_held(&vsk->sk.sk_lock);
	if (!vsk->sw_peer_seen && vsk->sw_rx_end == vsk->lazy_bytes)
		visock_lazy_peer_msg(vsk);
	if (vsk->sw_state == VISOCK_SW_WAIT)
		visock_lazy_init_reply(vsk);
	if (vsk->sw_state != VISOCK_SW_WAIT &&
	    (vsk->sw_tx_shut || vsk->sw_closing))
		visock_lazy_settled(vsk);
}

/*
 * Have bytes beyond the peer's byte L - 1 come in while a message may
 * stand there?  Then look at it.  Unread bytes are counted from what the
 * reader took from TCP (copied_seq) and where it stands in the stream
 * (sw_rx_pos); the reader moves the first before the second, so it looks
 * again after moving the second (visock_lazy_rx_advance()): a message
 * that arrives while it reads is seen by one of the two.
 *
 * Context: any (TCP's callbacks, or the reader under lock_sock()).
 */
static void visock_lazy_look(struct visock_sock *vsk)
{
	struct tcp_sock *tp = tcp_sk(vsk->tcp->sk);
	u64 pos = READ_ONCE(vsk->sw_rx_pos);

	if (!READ_ONCE(vsk->sw_peer_seen) &&
	    READ_ONCE(vsk->sw_rx_end) == vsk->lazy_bytes &&
	    pos <= vsk->lazy_bytes &&
	    (u32)(READ_ONCE(tp->rcv_nxt) - READ_ONCE(tp->copied_seq)) >
	    vsk->lazy_bytes - pos)
		visock_hs_kick(vsk);
}

/* The reader took @n bytes of the peer's stream from TCP. */
static void visock_lazy_rx_advance(struct visock_sock *vsk, int n)
{
	WRITE_ONCE(vsk->sw_rx_pos, vsk->sw_rx_pos + n);
	/* Pairs with the barrier in visock_lazy_tcp_event(). */
	smp_mb();
	visock_lazy_look(vsk);
}

/**
 * visock_lazy_tcp_event() - TCP has news for a lazy connection
 * @vsk: a lazy connection in TCP mode, or switched with bytes from
 *	before the switch unread
 *
 * Wakes readers; looks for the peer's SWITCH or DECLINE once bytes
 * beyond its byte L - 1 are in.
 *
 * Context: TCP's data_ready callback (softirq or process context).
 */
void visock_lazy_tcp_event(struct visock_sock *vsk)
{
	/* Pairs with the barrier in visock_lazy_rx_advance(). */
	smp_mb();
	visock_lazy_look(vsk);
	vsk->sk.sk_data_ready(&vsk->sk);
}

/* Run @op on TCP with @msg's iterator cut to @len bytes. */
static int visock_lazy_tcp_io(struct visock_sock *vsk, struct msghdr *msg,
			      size_t len, int flags, bool tx)
{
	size_t left = iov_iter_count(&msg->msg_iter);
	unsigned int saved = msg->msg_flags;
	int ret;

	len = min(len, left);
	iov_iter_truncate(&msg->msg_iter, len);
	visock_tcp_sync_opts(vsk);
	if (tx) {
		msg->msg_flags |= MSG_DONTWAIT;
		ret = vsk->tcp->ops->sendmsg(vsk->tcp, msg, len);
		msg->msg_flags = saved;
	} else {
		ret = vsk->tcp->ops->recvmsg(vsk->tcp, msg, len,
					     (flags & ~MSG_WAITALL) |
					     MSG_DONTWAIT);
	}
	iov_iter_reexpand(&msg->msg_iter, left - (ret > 0 ? ret : 0));
	visock_tcp_consume_err(vsk, ret);
	return ret;
}

/* Drop what is left of the peer's SWITCH message from TCP. */
static int visock_lazy_skip(struct visock_sock *vsk)
{
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT };
	u8 buf[VISOCK_HS_MAX_LEN];
	struct kvec iov = { .iov_base = buf, .iov_len = vsk->sw_skip };
	int ret;

	ret = kernel_recvmsg(vsk->tcp, &msg, &iov, 1, vsk->sw_skip,
			     MSG_DONTWAIT);
	if (ret > 0)
		WRITE_ONCE(vsk->sw_skip, vsk->sw_skip - ret);
	return ret;
}

/*
 * A reader waiting at the peer's byte L for a message that cannot come
 * any more: the peer ended its stream at exactly L bytes.
 */
static bool visock_lazy_rx_eof(struct visock_sock *vsk)
{
	struct sock *tsk = vsk->tcp->sk;
	struct tcp_sock *tp = tcp_sk(tsk);

	/* Nothing but the FIN (one sequence number) left unread. */
	return !vsk->sw_peer_seen && vsk->sw_rx_pos >= vsk->sw_rx_end &&
	       vsk->sw_state != VISOCK_SW_WAIT &&
	       (READ_ONCE(tsk->sk_shutdown) & RCV_SHUTDOWN) &&
	       (u32)(READ_ONCE(tp->rcv_nxt) - READ_ONCE(tp->copied_seq)) <= 1;
}

/* The error that ends a wait, consumed, or 0. */
static int visock_lazy_err(struct visock_sock *vsk)
{
	int err = sock_error(&vsk->sk);

	return err ? err : -READ_ONCE(vsk->tcp->sk->sk_err);
}

/* Can a reader go on?  Under lock_sock() (sk_wait_event() drops it). */
static bool visock_lazy_rx_ready(struct visock_sock *vsk)
{
	struct sock *tsk = vsk->tcp->sk;
	u64 room;

	if (READ_ONCE(vsk->sk.sk_err) || READ_ONCE(tsk->sk_err))
		return true;
	switch (visock_lazy_rx_phase(vsk, &room)) {
	case VISOCK_LZ_WAIT:
		return visock_lazy_rx_eof(vsk);
	case VISOCK_LZ_RING:
	case VISOCK_LZ_RESET:
		return true;
	default:
		return !skb_queue_empty_lockless(&tsk->sk_receive_queue) ||
		       (READ_ONCE(tsk->sk_shutdown) & RCV_SHUTDOWN);
	}
}

/**
 * visock_lazy_recvmsg() - recvmsg() of a lazy connection
 * @vsk: socket with VISOCK_F_LAZY
 * @msg: destination
 * @len: bytes wanted
 * @flags: recvmsg() flags
 *
 * Reads the peer's bytes that come over TCP (never past where its TCP
 * bytes end), drops its SWITCH message, and then reads the ring.
 *
 * Context: process context.
 * Return: bytes read, 0 at the end of the stream, or a negative errno.
 */
int visock_lazy_recvmsg(struct visock_sock *vsk, struct msghdr *msg,
			size_t len, int flags)
{
	DEFINE_WAIT_FUNC(wait, woken_wake_function);
	struct sock *sk = &vsk->sk;
	long timeo = sock_rcvtimeo(sk, flags & MSG_DONTWAIT);
	size_t target = flags & MSG_WAITALL ? len : 1;
	size_t copied = 0;
	bool ring = false;
	int ret = 0, ph;
	u64 room = 0;

	lock_sock(sk);
	while (copied < len) {
		ph = visock_lazy_rx_phase(vsk, &room);
		if (ph == VISOCK_LZ_RING) {
			ring = true;
			/* Bytes on TCP now can only be a failover message. */
			if (!skb_queue_empty_lockless(&vsk->tcp->sk->sk_receive_queue) &&
			    vsk->dp)
				visock_fo_kick(vsk->dp);
			break;
		}
		if (ph == VISOCK_LZ_SKIP) {
			ret = visock_lazy_skip(vsk);
			if (ret > 0)
				continue;
		} else if (ph == VISOCK_LZ_TCP) {
			ret = visock_lazy_tcp_io(vsk, msg,
						 min_t(u64, len - copied, room),
						 flags, false);
			if (ret > 0) {
				copied += ret;
				if (flags & MSG_PEEK)
					break;
				visock_lazy_rx_advance(vsk, ret);
				VISOCK_STAT_ADD(sk, tcp_bytes_rcvd, ret);
				continue;
			}
			/* TCP's end after a failed switch: the reset. */
			if (!ret && READ_ONCE(vsk->sw_state) == VISOCK_SW_RESET)
				ph = VISOCK_LZ_RESET;
		} else if (ph == VISOCK_LZ_WAIT) {
			if (visock_lazy_rx_eof(vsk)) {
				ret = 0;
			} else {
				ret = visock_lazy_err(vsk);
				if (!ret)
					ret = -EAGAIN;
			}
		}
		if (ph == VISOCK_LZ_RESET) {
			/* The bytes before it first; reported once, as TCP. */
			if (!copied)
				ret = visock_lazy_err(vsk);
			break;
		}
		if (ret == 0 || (ret < 0 && ret != -EAGAIN))
			break;		/* end of the stream, or an error */
		if (copied >= target)
			break;
		if (!timeo) {
			ret = -EAGAIN;
			break;
		}
		if (signal_pending(current)) {
			ret = sock_intr_errno(timeo);
			break;
		}
		add_wait_queue(sk_sleep(sk), &wait);
		sk_wait_event(sk, &timeo, visock_lazy_rx_ready(vsk), &wait);
		remove_wait_queue(sk_sleep(sk), &wait);
		ret = 0;
	}
	release_sock(sk);
	if (ring && copied < target) {
		ret = visock_rx_recvmsg(vsk, msg, len - copied, flags);
		if (ret > 0)
			copied += ret;
	}
	return copied ? copied : ret;
}

/*
 * Does a message of ours still have to follow our byte L - 1?  A side
 * that may start a switch writes one there unless its direction moved
 * to RDMA before (only a client, or either side with sw_both, which
 * also writes a DECLINE there once the switch was declined).
 */
static bool visock_lazy_tx_msg_due(const struct visock_sock *vsk)
{
	if (!visock_lazy_may_start(vsk) || vsk->sw_tx_msg)
		return false;
	return vsk->sw_state == VISOCK_SW_NONE ||
	       (vsk->sw_both && vsk->sw_state == VISOCK_SW_DECLINED);
}

/* Can a writer go on?  Under lock_sock() (sk_wait_event() drops it). */
static bool visock_lazy_tx_ready(struct visock_sock *vsk)
{
	struct sock *tsk = vsk->tcp->sk;

	if (READ_ONCE(vsk->sk.sk_err) || READ_ONCE(tsk->sk_err) ||
	    (READ_ONCE(tsk->sk_shutdown) & SEND_SHUTDOWN) ||
	    READ_ONCE(vsk->mode) == VISOCK_MODE_RDMA)
		return true;
	if (vsk->sw_state == VISOCK_SW_WAIT)
		return false;
	return sk_stream_wspace(tsk) >= (int)VISOCK_HS_MAX_LEN;
}

/**
 * visock_lazy_sendmsg() - sendmsg() of a lazy connection
 * @vsk: socket with VISOCK_F_LAZY
 * @msg: the bytes
 * @len: their number
 *
 * Writes to TCP; starts the switch when its bytes go past L - 1 (the
 * client, or either side with sw_both) and goes on over RDMA once
 * switched.
 *
 * Context: process context.
 * Return: bytes written, or a negative errno.
 */
int visock_lazy_sendmsg(struct visock_sock *vsk, struct msghdr *msg,
			size_t len)
{
	DEFINE_WAIT_FUNC(wait, woken_wake_function);
	struct sock *sk = &vsk->sk;
	long timeo = sock_sndtimeo(sk, msg->msg_flags & MSG_DONTWAIT);
	size_t sent = 0, chunk;
	int ret = 0;

	lock_sock(sk);
	while (sent < len) {
		if (READ_ONCE(vsk->mode) == VISOCK_MODE_RDMA) {
			release_sock(sk);
			ret = visock_tx_sendmsg(vsk, msg, len - sent);
			if (ret > 0)
				sent += ret;
			return sent ? sent : ret;
		}
		ret = 0;
		if (vsk->sw_state == VISOCK_SW_WAIT) {
			ret = visock_lazy_err(vsk);
			if (!ret && ((READ_ONCE(vsk->tcp->sk->sk_shutdown) |
				      READ_ONCE(sk->sk_shutdown)) &
				     SEND_SHUTDOWN))
				ret = -EPIPE;
			if (ret)
				break;
			ret = -EAGAIN;
		} else if (visock_lazy_tx_msg_due(vsk) &&
			   vsk->sw_tx_pos >= vsk->lazy_bytes) {
			ret = visock_lazy_switch(vsk);
			if (!ret)
				continue;
		} else {
			chunk = len - sent;
			if (visock_lazy_tx_msg_due(vsk))
				chunk = min_t(u64, chunk,
					      vsk->lazy_bytes - vsk->sw_tx_pos);
			ret = visock_lazy_tcp_io(vsk, msg, chunk, 0, true);
			if (ret > 0) {
				sent += ret;
				vsk->sw_tx_pos += ret;
				VISOCK_STAT_ADD(sk, tcp_bytes_sent, ret);
				continue;
			}
		}
		if (ret != -EAGAIN || !timeo)
			break;
		if (signal_pending(current)) {
			ret = sock_intr_errno(timeo);
			break;
		}
		add_wait_queue(sk_sleep(sk), &wait);
		sk_wait_event(sk, &timeo, visock_lazy_tx_ready(vsk), &wait);
		remove_wait_queue(sk_sleep(sk), &wait);
	}
	release_sock(sk);
	return sent ? sent : ret;
}

/**
 * visock_lazy_poll() - poll() of a lazy connection
 * @vsk: socket with VISOCK_F_LAZY
 * @tcp_mask: what the internal TCP socket reports
 *
 * Context: any; lockless.
 * Return: the events.
 */
__poll_t visock_lazy_poll(struct visock_sock *vsk, __poll_t tcp_mask)
{
	bool rdma = READ_ONCE(vsk->mode) == VISOCK_MODE_RDMA;
	__poll_t mask = rdma ? visock_rdma_poll(vsk) : tcp_mask;
	u64 room;
	int ph;

	ph = visock_lazy_rx_phase(vsk, &room);
	if (ph == VISOCK_LZ_WAIT)
		mask &= ~(EPOLLIN | EPOLLRDNORM);
	else if (ph == VISOCK_LZ_RESET)
		mask |= EPOLLIN | EPOLLRDNORM;	/* the error is there */
	else if (ph != VISOCK_LZ_RING)
		mask = (mask & ~(EPOLLIN | EPOLLRDNORM)) |
		       (tcp_mask & (EPOLLIN | EPOLLRDNORM));
	if (!rdma && READ_ONCE(vsk->sw_state) == VISOCK_SW_WAIT)
		mask &= ~(EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND);
	return mask;
}

/*
 * The operations a lazy connection has in its current mode once the
 * bytes from before a switch are read: RDMA's once switched, else TCP's.
 */
static const struct visock_mode_ops *visock_lazy_base(struct visock_sock *vsk)
{
	return READ_ONCE(vsk->mode) == VISOCK_MODE_RDMA ?
	       &visock_rdma_mode_ops : &visock_tcp_mode_ops;
}

static int visock_lazy_mode_sendmsg(struct visock_sock *vsk,
				    struct msghdr *msg, size_t len)
{
	if (READ_ONCE(vsk->mode) == VISOCK_MODE_RDMA)
		return visock_rdma_mode_ops.sendmsg(vsk, msg, len);
	return visock_lazy_sendmsg(vsk, msg, len);
}

static int visock_lazy_mode_recvmsg(struct visock_sock *vsk,
				    struct msghdr *msg, size_t len, int flags)
{
	if (READ_ONCE(vsk->mode) == VISOCK_MODE_RDMA &&
	    !visock_lazy_rx_pending(vsk))
		return visock_rdma_mode_ops.recvmsg(vsk, msg, len, flags);
	/* TCP's error queue is no part of the stream. */
	if (flags & MSG_ERRQUEUE)
		return visock_tcp_mode_recvmsg(vsk, msg, len, flags);
	return visock_lazy_recvmsg(vsk, msg, len, flags);
}

static __poll_t visock_lazy_mode_poll(struct visock_sock *vsk,
				      struct file *file)
{
	if (READ_ONCE(vsk->mode) == VISOCK_MODE_RDMA &&
	    !visock_lazy_rx_pending(vsk))
		return visock_rdma_mode_ops.poll(vsk, file);
	return visock_lazy_poll(vsk, visock_tcp_mode_poll(vsk, file));
}

/*
 * shutdown(): while the initiator waits for the reply, TCP's FIN would
 * stand after the SWITCH, where a peer that switched reads nothing any
 * more: the end of our stream waits for the switch to settle
 * (visock_lazy_settled()).
 */
static int visock_lazy_mode_shutdown(struct visock_sock *vsk, int how)
{
	struct sock *sk = &vsk->sk;
	bool later = false;

	if (how == SHUT_WR || how == SHUT_RDWR) {
		lock_sock(sk);
		later = READ_ONCE(vsk->mode) != VISOCK_MODE_RDMA &&
			vsk->sw_state == VISOCK_SW_WAIT;
		if (later) {
			WRITE_ONCE(sk->sk_shutdown,
				   sk->sk_shutdown | SEND_SHUTDOWN);
			vsk->sw_tx_shut = true;
		}
		release_sock(sk);
	}
	if (later) {
		sk->sk_state_change(sk);
		sk->sk_write_space(sk);
		if (how == SHUT_WR)
			return 0;
		how = SHUT_RD;
	}
	return visock_lazy_base(vsk)->shutdown(vsk, how);
}

static int visock_lazy_mode_ioctl(struct visock_sock *vsk, unsigned int cmd,
				  unsigned long arg)
{
	const struct visock_mode_ops *ops = visock_lazy_base(vsk);

	return ops->ioctl ? ops->ioctl(vsk, cmd, arg) : -ENOIOCTLCMD;
}

/*
 * close(): the peer's message after its byte L - 1 is handled now if it
 * is in (a SWITCH is declined: we write nothing more) and dropped from
 * TCP if everything before it was read.  An initiator waiting for the
 * reply hands its data path to the close work, which finishes once the
 * switch settled: over RDMA if it completed, else over TCP.
 */
static bool visock_lazy_mode_close(struct visock_sock *vsk)
{
	const struct visock_mode_ops *ops;
	struct sock *sk = &vsk->sk;
	bool later;

	lock_sock(sk);
	if (!vsk->sw_peer_seen && vsk->sw_rx_end == vsk->lazy_bytes &&
	    vsk->sw_state != VISOCK_SW_WAIT)
		visock_lazy_peer_msg(vsk);
	if (vsk->sw_skip && vsk->sw_rx_pos >= vsk->sw_rx_end)
		visock_lazy_skip(vsk);
	later = READ_ONCE(vsk->mode) != VISOCK_MODE_RDMA &&
		vsk->sw_state == VISOCK_SW_WAIT && vsk->dp;
	if (later) {
		vsk->sw_closing = true;
		spin_lock_bh(&vsk->dp->lock);
		vsk->dp->sw_hold = true;
		spin_unlock_bh(&vsk->dp->lock);
		/* visock_release() cancelled the work: the reply's clock. */
		visock_hs_kick(vsk);
	}
	release_sock(sk);
	if (later)
		return visock_tx_close(vsk);
	ops = visock_lazy_base(vsk);
	return ops->close && ops->close(vsk);
}

/* Until the bytes from before a switch are read, TCP's are ours. */
static void visock_lazy_tcp_data_ready(struct visock_sock *vsk)
{
	if (READ_ONCE(vsk->mode) != VISOCK_MODE_RDMA ||
	    visock_lazy_rx_pending(vsk))
		visock_lazy_tcp_event(vsk);
	else
		visock_rdma_mode_ops.tcp_data_ready(vsk);
}

static void visock_lazy_tcp_write_space(struct visock_sock *vsk)
{
	visock_lazy_base(vsk)->tcp_write_space(vsk);
}

static void visock_lazy_tcp_state_change(struct visock_sock *vsk,
					 int tcp_state)
{
	visock_lazy_base(vsk)->tcp_state_change(vsk, tcp_state);
}

static bool visock_lazy_tcp_ended(struct visock_sock *vsk)
{
	const struct visock_mode_ops *ops = visock_lazy_base(vsk);

	return ops->tcp_ended && ops->tcp_ended(vsk);
}

/*
 * Lazy start: a connection with VISOCK_F_LAZY keeps these in every mode
 * (TCP, then RDMA once switched, or TCP for good).
 */
const struct visock_mode_ops visock_lazy_mode_ops = {
	.sendmsg		= visock_lazy_mode_sendmsg,
	.recvmsg		= visock_lazy_mode_recvmsg,
	.poll			= visock_lazy_mode_poll,
	.shutdown		= visock_lazy_mode_shutdown,
	.ioctl			= visock_lazy_mode_ioctl,
	.close			= visock_lazy_mode_close,
	.tcp_data_ready		= visock_lazy_tcp_data_ready,
	.tcp_write_space	= visock_lazy_tcp_write_space,
	.tcp_state_change	= visock_lazy_tcp_state_change,
	.tcp_ended		= visock_lazy_tcp_ended,
};
