// SPDX-License-Identifier: GPL-2.0
/*
 * visock: the RDMA handshake state machine.
 *
 * When a TCP connection between two visock sockets is established and
 * both SYN and SYN-ACK carried the visock option with the RDMA flag, the
 * two sides settle the RDMA connection with three messages over that TCP
 * connection (codecs in visock_hs_codec.c):
 *
 *   client                                   server
 *     | ---- REQ (QP, GID, PSN, MTU, ring) ---> |  creates its QP, RTS,
 *     |                                         |  registers its ring
 *     | <--- REP (the same, server side) ------ |
 *   RTS, registers its ring                     |
 *     | ---- CONFIRM (token) -----------------> |
 *
 * QPs are shared (visock_vc.c): if the client has a QP to the peer
 * that is up and has room, its REQ names the server's end of it (LINK
 * TLV) and only a token and a ring are agreed; no QP changes state.  A
 * client whose link group is at its QP limit with QPs still being set up
 * waits for them (on visock_net.lgr_wq, without holding a worker) up to
 * half the handshake timeout before it declines.
 *
 * With net.visock.auth on and a pre-shared key in the namespace, REQ,
 * REP and CONFIRM carry TLV AUTH: a nonce and a MAC made with the key
 * (visock_auth.c, visock/security.rst).  Each side checks the peer's MAC
 * before it acts on the message; a server checks the REQ before it
 * creates anything for it.
 *
 * Either side may answer with DECLINE (and a reason) instead; both then
 * keep using TCP.  Each side knows exactly how many messages it will
 * receive, so after any complete message the stream is in sync and a
 * fallback to TCP loses and duplicates nothing.  Two cases cannot fall
 * back safely and end the connection instead (ETIMEDOUT / EPROTO): the
 * peer stops answering after a message was sent, or its bytes start like
 * a visock message but are not correctly framed.
 *
 * The server does not trust the echo in the SYN-ACK to have arrived (a
 * middlebox may strip it): it only peeks at the first bytes; anything
 * that does not start with the visock magic, or silence until the
 * timeout, makes it a plain TCP connection with those bytes still queued.
 * So the client sends its first message within three quarters of its own
 * timeout or never (it then settles on TCP as well): a late message would
 * reach the server's application as stream bytes.  Both ends are meant
 * to have the same net.visock.handshake_timeout_ms.
 *
 * Nothing here blocks on the network.  The state machine is a delayed
 * work item (@hs_work) run on visock_wq: kicked when the handshake starts
 * and when the internal TCP socket has data, and scheduled for the
 * current deadline.  Each run reads what is there without waiting and
 * returns.  It runs under lock_sock() of the visock socket and holds a
 * socket reference while queued.
 */
#include <linux/jiffies.h>
#include <linux/random.h>
#include <linux/uio.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "visock.h"
#include "af_visock.h"
#include "visock_handshake.h"
#include "visock_lazy.h"
#include "visock_tcp.h"
#include "visock_vc.h"
#include "visock_llc.h"
#include "visock_rdma.h"
#include "visock_trace.h"
#include "visock_event.h"
#include "visock_debugfs.h"
#include "visock_nf.h"
#include "visock_auth.h"
#include "visock_psk.h"
#include "visock_mem.h"

/**
 * visock_hs_ring_size() - size of the receive ring of a new connection
 * @vsk: socket starting its handshake
 *
 * The best-fitting size class (visock_sizeclass_for()) for what the
 * application asked for with SO_RCVBUF (the value it passed, half of what
 * the kernel stores; bounded by net.core.rmem_max unless it used
 * SO_RCVBUFFORCE), or for net.visock.rbuf_default otherwise.  Read from
 * the internal TCP socket, which carries the application's value (and
 * the listener's, for an accepted connection).
 *
 * Context: process context, under lock_sock(@vsk).
 * Return: ring size in bytes, a power of two.
 */
static u32 visock_hs_ring_size(struct visock_sock *vsk)
{
	struct sock *tsk = vsk->tcp->sk;
	u32 want;

	lockdep_assert_held(&vsk->sk.sk_lock);
	/* A bit field on older kernels: no READ_ONCE(). */
	if (tsk->sk_userlocks & SOCK_RCVBUF_LOCK)
		want = READ_ONCE(tsk->sk_rcvbuf) / 2;
	else
		want = READ_ONCE(visock_net(sock_net(&vsk->sk))->rbuf_default);
	return visock_sizeclass_bytes(visock_sizeclass_for(want));
}

static const u8 visock_hs_magic[4] = {
	(VISOCK_HS_MAGIC >> 24) & 0xff, (VISOCK_HS_MAGIC >> 16) & 0xff,
	(VISOCK_HS_MAGIC >> 8) & 0xff, VISOCK_HS_MAGIC & 0xff,
};

static void visock_hs_work(struct work_struct *work);
static void visock_hs_lgr_unwait(struct visock_sock *vsk);

/**
 * visock_hs_init() - initialise the handshake part of a new socket
 * @vsk: socket being allocated
 *
 * Context: process context, before @vsk is visible.
 */
void visock_hs_init(struct visock_sock *vsk)
{
	vsk->hs_state = VISOCK_HS_NONE;
	vsk->hs_version = 0;
	vsk->listener = NULL;
	vsk->vc = NULL;
	vsk->dp = NULL;
	vsk->local_token = 0;
	vsk->peer_token = 0;
	vsk->peer_qpn = 0;
	vsk->peer_rbuf_size = 0;
	vsk->auth = NULL;
	INIT_DELAYED_WORK(&vsk->hs_work, visock_hs_work);
}

/*
 * Queue the state machine; every queued instance holds a reference.
 * @now: run immediately even if it is already queued for later.
 * Nothing may disable hs_work (no cancel_delayed_work_sync()): a
 * disabled work makes mod_delayed_work() return false without queueing.
 */
static void visock_hs_queue(struct visock_sock *vsk, unsigned long delay,
			    bool now)
{
	sock_hold(&vsk->sk);
	if (now) {
		/* Was already queued: that queueing holds a reference. */
		if (mod_delayed_work(visock_wq, &vsk->hs_work, 0))
			sock_put(&vsk->sk);
	} else if (!queue_delayed_work(visock_wq, &vsk->hs_work, delay)) {
		sock_put(&vsk->sk);
	}
}

/**
 * visock_hs_queue_at() - run the state machine at a given time at the latest
 * @vsk: socket
 * @when: jiffies; now if that has passed
 *
 * A work already queued for later is brought forward to @when; one
 * queued for earlier stays.  Running early is harmless: every run looks
 * at what is there and queues itself again for what it still waits for.
 *
 * Context: any.
 */
void visock_hs_queue_at(struct visock_sock *vsk, unsigned long when)
{
	struct delayed_work *dw = &vsk->hs_work;
	long left = (long)(when - jiffies);
	unsigned long delay = left > 0 ? left : 0;

	sock_hold(&vsk->sk);
	if (queue_delayed_work(visock_wq, dw, delay))
		return;
	/*
	 * Queued already.  A timer that fires meanwhile, or a work that
	 * runs meanwhile, only makes it run once more.
	 */
	if (timer_pending(&dw->timer) &&
	    time_after(READ_ONCE(dw->timer.expires), when)) {
		/* Was queued: that queueing holds a reference. */
		if (mod_delayed_work(visock_wq, dw, delay))
			sock_put(&vsk->sk);
		return;
	}
	sock_put(&vsk->sk);
}

/**
 * visock_hs_kick() - run the handshake state machine soon
 * @vsk: socket in handshake
 *
 * Context: any, including TCP's callbacks.
 */
void visock_hs_kick(struct visock_sock *vsk)
{
	visock_hs_queue(vsk, 0, true);
}

/**
 * visock_hs_cancel() - stop the handshake work of a socket being closed
 * @vsk: socket, VISOCK_F_RELEASED already set
 *
 * Drops a queued instance and its reference.  An instance that runs
 * now, or that a TCP callback queues later, finds VISOCK_F_RELEASED and
 * only drops its reference.
 *
 * Not cancel_delayed_work_sync(): since Linux 6.10 it disables the work
 * while it waits, and mod_delayed_work() in visock_hs_queue() then
 * neither queues it nor says so (it returns false, as for a work it did
 * queue), which left a reference - and the module - behind whenever a
 * TCP callback kicked the handshake of a socket closed in that instant.
 *
 * Context: process context, without lock_sock(@vsk) held.
 */
void visock_hs_cancel(struct visock_sock *vsk)
{
	visock_hs_lgr_unwait(vsk);
	if (cancel_delayed_work(&vsk->hs_work))
		sock_put(&vsk->sk);
}

static unsigned long visock_hs_timeout(const struct visock_sock *vsk)
{
	const struct visock_net *vn = visock_net(sock_net(&vsk->sk));

	return msecs_to_jiffies(READ_ONCE(vn->hs_timeout_ms));
}

/**
 * visock_hs_start() - begin the in-band handshake
 * @vsk: socket whose TCP connection just got established
 * @state: VISOCK_HS_CLI_START or VISOCK_HS_SRV_WAIT_REQ
 *
 * Context: any (may be TCP's softirq callback); only queues work.
 */
void visock_hs_start(struct visock_sock *vsk, u8 state)
{
	struct visock_net *vn = visock_net(sock_net(&vsk->sk));
	u32 delay = READ_ONCE(visock_test_hs_delay_ms);

	atomic64_inc(&vn->hs_started);
	trace_visock_hs_start(vsk, state == VISOCK_HS_SRV_WAIT_REQ);
	vsk->hs_state = state;
	vsk->hs_deadline = jiffies + visock_hs_timeout(vsk);
	visock_set_mode(vsk, VISOCK_MODE_HANDSHAKE);
	if (unlikely(delay) && state == VISOCK_HS_CLI_START)
		visock_hs_queue(vsk, msecs_to_jiffies(delay), false);
	else
		visock_hs_kick(vsk);
}

/* Wake everybody who waits for the connection to settle. */
static void visock_hs_wake(struct visock_sock *vsk)
{
	struct sock *sk = &vsk->sk;

	sk->sk_state_change(sk);
	sk->sk_write_space(sk);
	sk->sk_data_ready(sk);
}

static void visock_hs_drop_vc(struct visock_sock *vsk)
{
	visock_rdma_destroy_vc(vsk);
	clear_bit(VISOCK_F_LINK_UP, &vsk->flags);
}

/* Settle on TCP: the stream is in sync, nothing was lost. */
static void visock_hs_fallback(struct visock_sock *vsk, u8 reason)
{
	trace_visock_hs_result(vsk, reason);
	visock_hs_drop_vc(vsk);
	vsk->hs_state = VISOCK_HS_DONE;
	/*
	 * Our handshake messages are in TCP's sequence space before the
	 * application's bytes; SIOCOUTQ must not count them.
	 */
	vsk->tcp_app_seq = READ_ONCE(tcp_sk(vsk->tcp->sk)->write_seq);
	set_bit(VISOCK_F_APP_SEQ, &vsk->flags);
	visock_set_fallback(vsk, reason);
	set_bit(VISOCK_F_SETTLED, &vsk->flags);
}

/*
 * The vc is up and its receive side ready (visock_rdma_prepare()):
 * from now on the stream travels over RDMA; the internal TCP connection
 * stays open, idle, until the socket is closed.
 */
void visock_hs_success(struct visock_sock *vsk)
{
	struct visock_net *vn = visock_net(sock_net(&vsk->sk));
	struct visock_diag_link d;

	atomic64_inc(&vn->hs_done);
	trace_visock_hs_result(vsk, 0);
	atomic64_inc(&vn->conns_rdma);
	set_bit(VISOCK_F_LINK_UP, &vsk->flags);
	vsk->hs_state = VISOCK_HS_DONE;
	WRITE_ONCE(vsk->fb_reason, VISOCK_FB_NONE);
	visock_set_mode(vsk, VISOCK_MODE_RDMA);
	set_bit(VISOCK_F_SETTLED, &vsk->flags);
	visock_vc_confirmed(vsk->vc);
	visock_vc_diag(vsk->vc, &d);
	d.vdl_peer_qpn = vsk->peer_qpn;
	visock_event_sock(vsk, VISOCK_EVENT_LINK_UP, 0, &d);
}

/* The stream cannot be trusted any more: end the connection. */
void visock_hs_abort(struct visock_sock *vsk, int err)
{
	struct visock_net *vn = visock_net(sock_net(&vsk->sk));

	atomic64_inc(&vn->hs_aborted);
	trace_visock_hs_result(vsk, -err);
	set_bit(VISOCK_F_HS_ABORTED, &vsk->flags);
	visock_hs_drop_vc(vsk);
	vsk->hs_state = VISOCK_HS_DONE;
	WRITE_ONCE(vsk->fb_reason, VISOCK_FB_NONE);
	visock_set_mode(vsk, VISOCK_MODE_TCP);
	set_bit(VISOCK_F_SETTLED, &vsk->flags);
	WRITE_ONCE(vsk->sk.sk_err, err);
	/* Reset the TCP connection: the peer must not read on. */
	sock_no_linger(vsk->tcp->sk);
	kernel_sock_shutdown(vsk->tcp, SHUT_RDWR);
	vsk->sk.sk_error_report(&vsk->sk);
}

int visock_hs_send(struct visock_sock *vsk, struct visock_hs_msg *m)
{
	u8 buf[VISOCK_HS_MAX_LEN];
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL };
	struct kvec iov;
	int len, ret;

	m->version = VISOCK_HS_VERSION;
	len = visock_hs_encode(m, buf, sizeof(buf));
	if (WARN_ON_ONCE(len < 0))
		return len;
	if (m->present & VISOCK_HSF(VISOCK_TLV_AUTH)) {
		/* TLV AUTH comes last: its MAC ends the message. */
		ret = -EINVAL;
		if (!WARN_ON_ONCE(!vsk->auth))
			ret = visock_auth_mac(vsk->auth->mac_key,
					      &vsk->auth->ctx, buf, len,
					      len - VISOCK_AUTH_MAC_LEN,
					      buf + len - VISOCK_AUTH_MAC_LEN);
		if (ret)
			return ret;
	}
	iov.iov_base = buf;
	iov.iov_len = len;
	/* A fresh connection's send buffer always has room for this. */
	ret = kernel_sendmsg(vsk->tcp, &msg, &iov, 1, len);
	if (ret == len)
		return 0;
	/*
	 * TCP says EPIPE once the peer reset the connection (its RST is in
	 * the TCP socket's error); connect() reports that as ECONNRESET.
	 */
	if (ret == -EPIPE)
		return -ECONNRESET;
	return ret < 0 ? ret : -EIO;
}

static int visock_hs_decline(struct visock_sock *vsk, u8 reason)
{
	struct visock_hs_msg m = {
		.type = VISOCK_HS_DECLINE,
		.present = VISOCK_HSF(VISOCK_TLV_REASON),
		.reason = reason,
	};

	return visock_hs_send(vsk, &m);
}

/*
 * We owe the peer a message and give up on RDMA: send DECLINE and stay on
 * TCP, or end the connection if even that cannot be sent.
 */
static void visock_hs_decline_fallback(struct visock_sock *vsk, u8 reason)
{
	if (visock_hs_decline(vsk, reason))
		visock_hs_abort(vsk, EPROTO);
	else
		visock_hs_fallback(vsk, reason);
}

/*
 * Read one handshake message without blocking into @buf
 * (VISOCK_HS_MAX_LEN bytes).
 * Return: 1 and @m filled, its bytes in @buf and their number in @lenp: a
 *	whole message was consumed and decoded;
 *	0: not complete yet, nothing consumed;
 *	-ENOMSG: the bytes are not a visock message, nothing consumed;
 *	-EBADMSG: one whole message was consumed but is invalid;
 *	-EPROTONOSUPPORT: one whole message was consumed, written in a
 *	 version we do not speak (header version below
 *	 VISOCK_HS_MIN_VERSION, or a critical TLV we do not know);
 *	-EPROTO: visock magic but broken framing;
 *	-ECONNRESET: the peer closed; other negative: TCP error.
 */
static int visock_hs_recv(struct visock_sock *vsk, struct visock_hs_msg *m,
			  u8 *buf, int *lenp)
{
	struct msghdr msg = { };
	struct kvec iov = { .iov_base = buf, .iov_len = VISOCK_HS_MAX_LEN };
	int got, len;

	got = kernel_recvmsg(vsk->tcp, &msg, &iov, 1, VISOCK_HS_MAX_LEN,
			     MSG_PEEK | MSG_DONTWAIT);
	if (got == -EAGAIN)
		return 0;
	if (got < 0)
		return got;
	if (got == 0)
		return -ECONNRESET;
	if (memcmp(buf, visock_hs_magic, min_t(int, got, 4)))
		return -ENOMSG;
	len = got < VISOCK_HS_HDR_LEN ? 0 : visock_hs_msg_len(buf, got);
	if (len < 0)
		return -EPROTO;
	if (!len || got < len) {
		/* The rest will never come if the peer already sent FIN. */
		if (READ_ONCE(vsk->tcp->sk->sk_shutdown) & RCV_SHUTDOWN)
			return -EPROTO;
		return 0;
	}

	memset(&msg, 0, sizeof(msg));
	iov.iov_base = buf;
	iov.iov_len = len;
	got = kernel_recvmsg(vsk->tcp, &msg, &iov, 1, len, MSG_DONTWAIT);
	if (got != len)
		return got < 0 ? got : -EPROTO;
	*lenp = len;
	switch (visock_hs_decode(buf, len, m)) {
	case 0:
		return 1;
	case -EPROTO:
	case -EOPNOTSUPP:
		return -EPROTONOSUPPORT;
	default:
		return -EBADMSG;
	}
}

/* Map a peer's DECLINE reason to ours. */
static u8 visock_hs_peer_reason(u32 reason)
{
	switch (reason) {
	case VISOCK_FB_NO_DEVICE:
		return VISOCK_FB_PEER_NO_DEVICE;
	case VISOCK_FB_VERSION:
		return VISOCK_FB_VERSION;
	case VISOCK_FB_LINK_GONE:
		return VISOCK_FB_LINK_GONE;
	case VISOCK_FB_QP_LIMIT:
		return VISOCK_FB_QP_LIMIT;
	case VISOCK_FB_AUTH:
		return VISOCK_FB_AUTH;
	case VISOCK_FB_AUTH_MISSING:
		return VISOCK_FB_AUTH_MISSING;
	case VISOCK_FB_XFORM_REQUIRED:
		return VISOCK_FB_XFORM_REQUIRED;
	case VISOCK_FB_XFORM_MEM:
		return VISOCK_FB_XFORM_MEM;
	default:
		return VISOCK_FB_PEER_DECLINE;
	}
}

u8 visock_hs_vc_reason(int err)
{
	switch (err) {
	case -ENODEV:
		return VISOCK_FB_NO_DEVICE;
	case -ENOMEM:
		return VISOCK_FB_NOMEM;
	case -ENOBUFS:
		return VISOCK_FB_BUF_EXHAUSTED;
	case -ENOSPC:
		return VISOCK_FB_XFORM_MEM;
	case -EBUSY:
	case -EINPROGRESS:
		return VISOCK_FB_LINK_BUSY;
	case -ENOLINK:
		return VISOCK_FB_LINK_GONE;
	case -EDQUOT:
		return VISOCK_FB_QP_LIMIT;
	case -EBADMSG:
		return VISOCK_FB_BAD_MSG;
	case -EACCES:
		return VISOCK_FB_AUTH_MISSING;
	default:
		return VISOCK_FB_QP_SETUP;
	}
}

/*
 * The addresses of the internal TCP connection, which name the link
 * group.  Returns 0 or a negative errno.
 */
static int visock_hs_addrs(struct visock_sock *vsk,
			   struct sockaddr_storage *local,
			   struct sockaddr_storage *peer)
{
	int len;

	len = kernel_getsockname(vsk->tcp, (struct sockaddr *)local);
	if (len < 0)
		return len;
	len = kernel_getpeername(vsk->tcp, (struct sockaddr *)peer);
	return len < 0 ? len : 0;
}

/* Woken when a QP of the namespace finished setting up: look again. */
static int visock_hs_lgr_woken(struct wait_queue_entry *wait,
			       unsigned int mode, int flags, void *key)
{
	struct visock_sock *vsk = container_of(wait, struct visock_sock,
					       lgr_wait);

	list_del_init(&wait->entry);
	if (test_and_clear_bit(VISOCK_F_LGR_WAIT, &vsk->flags)) {
		visock_hs_kick(vsk);
		/* The kick holds its own reference. */
		sock_put(&vsk->sk);
	}
	return 0;
}

static void visock_hs_lgr_wait(struct visock_sock *vsk)
{
	struct visock_net *vn = visock_net(sock_net(&vsk->sk));

	init_waitqueue_func_entry(&vsk->lgr_wait, visock_hs_lgr_woken);
	sock_hold(&vsk->sk);
	set_bit(VISOCK_F_LGR_WAIT, &vsk->flags);
	add_wait_queue(&vn->lgr_wq, &vsk->lgr_wait);
}

/* Stop waiting for a QP, if we still do. */
static void visock_hs_lgr_unwait(struct visock_sock *vsk)
{
	struct visock_net *vn = visock_net(sock_net(&vsk->sk));
	unsigned long fl;
	bool put;

	spin_lock_irqsave(&vn->lgr_wq.lock, fl);
	put = test_and_clear_bit(VISOCK_F_LGR_WAIT, &vsk->flags);
	if (put)
		list_del_init(&vsk->lgr_wait.entry);
	spin_unlock_irqrestore(&vn->lgr_wq.lock, fl);
	if (put)
		sock_put(&vsk->sk);
}

static int visock_hs_auth_policy(const struct visock_sock *vsk)
{
	return READ_ONCE(visock_net(sock_net(&vsk->sk))->auth);
}

/* Forget the handshake's authentication state. */
static void visock_hs_auth_drop(struct visock_sock *vsk)
{
	kfree_sensitive(vsk->auth);
	vsk->auth = NULL;
}

/*
 * Authenticate this handshake with the key @id of the namespace (0: the
 * current key): set up @vsk->auth with its MAC key.  Returns 0, -ENOKEY
 * if there is no such key, or another negative errno.
 */
static int visock_hs_auth_begin(struct visock_sock *vsk, u32 id)
{
	struct visock_psk_secret *sec;
	struct visock_auth_conn *a;
	int err;

	sec = kmalloc(sizeof(*sec), GFP_KERNEL);
	/* The connection's keys live as long as it: its cgroup's. */
	a = visock_mem_kzalloc(&vsk->sk, sizeof(*a));
	err = -ENOMEM;
	if (!sec || !a)
		goto out;
	err = visock_psk_get(sock_net(&vsk->sk), id, sec);
	if (!err)
		err = visock_auth_mac_key(sec->key, sec->len, sec->id,
					  a->mac_key);
	if (!err) {
		a->key_id = sec->id;
		visock_hs_auth_drop(vsk);
		vsk->auth = a;
		a = NULL;
	}
out:
	kfree_sensitive(sec);
	kfree_sensitive(a);
	return err;
}

/* Both nonces and tokens are known: derive the connection's keys. */
static int visock_hs_auth_derive(struct visock_sock *vsk)
{
	struct visock_psk_secret *sec;
	int err;

	sec = kmalloc(sizeof(*sec), GFP_KERNEL);
	if (!sec)
		return -ENOMEM;
	err = visock_psk_get(sock_net(&vsk->sk), vsk->auth->key_id, sec);
	if (!err)
		err = visock_auth_conn_derive(sec->key, sec->len, vsk->auth);
	kfree_sensitive(sec);
	return err;
}

/**
 * visock_hs_xform_pref() - the transform pair a connection asks for
 * @vsk: the socket, client or server
 * @required: set if a destination policy rule requires the pair
 *
 * From strongest to weakest: a policy rule that requires a pair,
 * net.visock.transform where net.visock.transform_require is 1, the
 * socket's VISOCK_TRANSFORM, a rule that names a pair without requiring
 * it, net.visock.transform (visock_xform_pref()).  A server has no rule:
 * the policy is only asked on connect().
 *
 * Context: process context, under lock_sock(@vsk).
 * Return: enum visock_xform, VISOCK_XFORM_NONE for none.
 */
static unsigned int visock_hs_xform_pref(const struct visock_sock *vsk,
					 bool *required)
{
	struct visock_net *vn = visock_net(sock_net(&vsk->sk));
	unsigned int ns = READ_ONCE(vn->xform);

	lockdep_assert_held(&vsk->sk.sk_lock);
	*required = vsk->pol_xform && vsk->pol_xform_req;
	if (!*required && ns && READ_ONCE(vn->xform_require)) {
		*required = true;
		return ns;
	}
	return visock_xform_pref(ns, READ_ONCE(vsk->xform_opt),
				 vsk->pol_xform, vsk->pol_xform_req);
}

/* Does a policy rule or the namespace require a transform pair? */
static bool visock_hs_xform_required(const struct visock_sock *vsk)
{
	bool required;

	visock_hs_xform_pref(vsk, &required);
	return required;
}

/*
 * Server, before anything is set up for the REQ @req: choose the pair
 * from the client's offer into *@chosen (none without an authenticated
 * handshake or without an offer); visock_xform_choose() picks only one
 * that protects at least as much as the one asked for.  False where a
 * pair is required and none was chosen.
 */
static bool visock_hs_srv_xform_ok(struct visock_sock *vsk,
				   const struct visock_hs_msg *req, u8 *chosen)
{
	unsigned int pref;
	bool required;

	pref = visock_hs_xform_pref(vsk, &required);
	*chosen = VISOCK_XFORM_NONE;
	if (vsk->auth && (req->present & VISOCK_HSF(VISOCK_TLV_XFORM)))
		*chosen = visock_xform_choose(pref, req->xform, req->xform_n);
	return !required || *chosen != VISOCK_XFORM_NONE;
}

/*
 * Client of an authenticated handshake: offer the transforms the
 * connection asks for (TLV XFORM of @m, the REQ), a required one alone,
 * and key updates with them.
 * False if a required pair cannot be offered (this host cannot run it).
 */
static bool visock_hs_xform_offer(struct visock_sock *vsk,
				  struct visock_hs_msg *m)
{
	struct visock_auth_conn *a = vsk->auth;
	unsigned int pref;
	bool required;

	pref = visock_hs_xform_pref(vsk, &required);
	a->offer_n = visock_xform_offer(pref, a->offer, required ? 1 :
					VISOCK_XFORM_OFFER_MAX);
	if (!a->offer_n)
		return !required;
	m->present |= VISOCK_HSF(VISOCK_TLV_XFORM);
	m->xform_n = a->offer_n;
	memcpy(m->xform, a->offer, a->offer_n);
	m->features |= VISOCK_FEAT_REKEY;
	return true;
}

/*
 * Client, before CONFIRM: a handshake that did not agree on a required
 * pair (none chosen, or not authenticated at all) must not reach RDMA.
 */
static bool visock_hs_xform_refused(struct visock_sock *vsk)
{
	unsigned int pref;
	bool required;

	pref = visock_hs_xform_pref(vsk, &required);
	return required && (!vsk->auth || vsk->auth->xform != pref);
}

/*
 * Client: the transform the server chose in @rep, if any, must be one we
 * offered (an unauthenticated REP can choose none).  Sets it in
 * @vsk->auth, with key updates if the REP announces them too; false if
 * the choice is not valid.
 */
static bool visock_hs_xform_chosen(struct visock_sock *vsk,
				   const struct visock_hs_msg *rep)
{
	if (!(rep->present & VISOCK_HSF(VISOCK_TLV_XFORM)))
		return true;
	if (!vsk->auth || !(rep->present & VISOCK_HSF(VISOCK_TLV_AUTH)) ||
	    rep->xform_n != 1 ||
	    !memchr(vsk->auth->offer, rep->xform[0], vsk->auth->offer_n))
		return false;
	vsk->auth->xform = rep->xform[0];
	/* Our REQ announced key updates with its offer. */
	vsk->auth->rekey = !!(rep->features & VISOCK_FEAT_REKEY);
	return true;
}

/*
 * Server of an authenticated handshake: take @x, the pair
 * visock_hs_srv_xform_ok() chose from the client's offer in @req
 * (VISOCK_XFORM_NONE for none), and tell the client in @m, the REP; key
 * updates if the client announced them.
 */
static void visock_hs_xform_choose(struct visock_sock *vsk,
				   const struct visock_hs_msg *req,
				   struct visock_hs_msg *m, u8 x)
{
	vsk->auth->xform = x;
	if (!x)
		return;
	m->present |= VISOCK_HSF(VISOCK_TLV_XFORM);
	m->xform_n = 1;
	m->xform[0] = x;
	vsk->auth->rekey = !!(req->features & VISOCK_FEAT_REKEY);
	if (vsk->auth->rekey)
		m->features |= VISOCK_FEAT_REKEY;
}

/* Add TLV AUTH with our @nonce to @m; visock_hs_send() adds the MAC. */
static void visock_hs_auth_put(struct visock_sock *vsk,
			       struct visock_hs_msg *m, const u8 *nonce)
{
	m->present |= VISOCK_HSF(VISOCK_TLV_AUTH);
	m->auth_version = VISOCK_AUTH_VERSION;
	m->auth_key_id = vsk->auth->key_id;
	memcpy(m->auth_nonce, nonce, VISOCK_AUTH_NONCE_LEN);
}

/*
 * Check the MAC of the peer's message @m (@len bytes in @buf) against
 * @vsk->auth, whose context the caller completed.  Returns 0, -EBADMSG
 * if it does not verify (or names another key), or another errno.
 */
static int visock_hs_auth_check(struct visock_sock *vsk,
				const struct visock_hs_msg *m, const u8 *buf,
				int len)
{
	if (!(m->present & VISOCK_HSF(VISOCK_TLV_AUTH)) ||
	    m->auth_key_id != vsk->auth->key_id)
		return -EBADMSG;
	return visock_auth_verify(vsk->auth->mac_key, &vsk->auth->ctx, buf,
				  len, m->auth_mac_off);
}

/*
 * A handshake or a SWITCH cannot be authenticated (@reason AUTH: a MAC
 * did not verify, AUTH_MISSING: not offered where required): count it
 * and drop the connection's keys.  True where net.visock.auth says to
 * reset rather than stay on TCP.
 */
static bool visock_hs_auth_refused(struct visock_sock *vsk, u8 reason)
{
	struct visock_net *vn = visock_net(sock_net(&vsk->sk));

	if (reason == VISOCK_FB_AUTH)
		atomic64_inc(&vn->auth_failed);
	else
		atomic64_inc(&vn->auth_missing);
	visock_hs_auth_drop(vsk);
	return visock_hs_auth_policy(vsk) == VISOCK_AUTH_REFUSE;
}

/*
 * The handshake cannot be authenticated: settle on TCP, and tell the
 * peer first if we owe it a message (@owe), or reset the connection
 * where net.visock.auth says so.
 */
static void visock_hs_auth_fail(struct visock_sock *vsk, u8 reason,
				bool owe)
{
	if (visock_hs_auth_refused(vsk, reason))
		visock_hs_abort(vsk, ECONNREFUSED);
	else if (owe)
		visock_hs_decline_fallback(vsk, reason);
	else
		visock_hs_fallback(vsk, reason);
}

/* The peer's MAC was checked: settle on TCP for anything but success. */
static bool visock_hs_auth_bad(struct visock_sock *vsk, int err)
{
	if (!err)
		return false;
	if (err == -EBADMSG)
		visock_hs_auth_fail(vsk, VISOCK_FB_AUTH, true);
	else
		visock_hs_decline_fallback(vsk, visock_hs_vc_reason(err));
	return true;
}

/*
 * Join or create our vc (and its QP) and describe it in @m.
 * Return: 0, -EINPROGRESS (client: wait for a QP being set up, see
 * visock_vc_create()) or a negative errno.
 */
int visock_hs_make_vc(struct visock_sock *vsk, struct visock_hs_msg *m,
		      u8 type, const struct visock_hs_msg *req)
{
	struct sockaddr_storage local, peer;
	struct visock_vc_params p = {};
	int err;

	err = visock_hs_addrs(vsk, &local, &peer);
	if (err)
		return err;
	p.net = sock_net(&vsk->sk);
	p.local = (struct sockaddr *)&local;
	p.peer = (struct sockaddr *)&peer;
	p.rbuf_size = visock_hs_ring_size(vsk);
	p.ack_timeout = READ_ONCE(visock_net(p.net)->ack_timeout);
	p.req = req;
	p.sk = &vsk->sk;
	/* A lazy connection's server may start the switch itself. */
	p.server = test_bit(VISOCK_F_LAZY, &vsk->flags) ? vsk->sw_server :
		   !!req;
	err = visock_vc_create(&p, &vsk->vc);
	if (err)
		return err;

	vsk->local_token = visock_vc_token(vsk->vc);
	memset(m, 0, sizeof(*m));
	m->type = type;
	m->present = VISOCK_HSF(VISOCK_TLV_FEATURES);
	m->features = 0;
	visock_vc_local_params(vsk->vc, m);
	return 0;
}

/*
 * A SWITCH (ours or the peer's) cannot be authenticated (@reason AUTH or
 * AUTH_MISSING): count it; the reason to decline with, or -ECONNREFUSED
 * where the policy resets instead.
 */
static int visock_hs_switch_auth_fail(struct visock_sock *vsk, u8 reason)
{
	if (visock_hs_auth_refused(vsk, reason))
		return -ECONNREFUSED;
	WRITE_ONCE(vsk->fb_reason, reason);
	return reason;
}

/**
 * visock_hs_switch_auth() - authenticate the SWITCH an initiator sends
 * @vsk: a lazy connection starting its switch
 * @m: its SWITCH, as visock_hs_make_vc() described it
 *
 * Where net.visock.auth is on and the namespace has a current key, adds
 * TLV AUTH with a fresh nonce; visock_hs_send() adds the MAC.  The
 * reply is checked with visock_hs_swrep_open().
 *
 * Context: process context, under lock_sock(@vsk); may sleep.
 * Return: 0 (authenticated, or plain where that is allowed), -EACCES if
 * authentication is required and there is no key (decline the switch,
 * reason AUTH_MISSING), -ECONNREFUSED if the policy then resets the
 * connection, or another negative errno.
 */
int visock_hs_switch_auth(struct visock_sock *vsk, struct visock_hs_msg *m)
{
	int policy = visock_hs_auth_policy(vsk);
	int err;

	lockdep_assert_held(&vsk->sk.sk_lock);
	visock_hs_auth_drop(vsk);
	if (policy == VISOCK_AUTH_OFF)
		return 0;
	err = visock_hs_auth_begin(vsk, 0);
	if (err == -ENOKEY) {
		if (policy < VISOCK_AUTH_REQUIRE)
			return 0;
		err = visock_hs_switch_auth_fail(vsk, VISOCK_FB_AUTH_MISSING);
		return err < 0 ? err : -EACCES;
	}
	if (err)
		return err;
	get_random_bytes(vsk->auth->ctx.client_nonce, VISOCK_AUTH_NONCE_LEN);
	vsk->auth->ctx.client_token = m->token;
	visock_hs_auth_put(vsk, m, vsk->auth->ctx.client_nonce);
	return 0;
}

/**
 * visock_hs_switch_check() - check the authentication of a peer's SWITCH
 * @vsk: a lazy connection about to respond to it
 * @sw: the SWITCH, decoded
 * @buf: the SWITCH as received
 * @len: its length
 *
 * Before the responder acts on the SWITCH, as a server checks a REQ:
 * with net.visock.auth off TLV AUTH is ignored; else a SWITCH that
 * carries it must name a key this namespace holds and its MAC must
 * verify, and one without it is taken only where authentication is
 * preferred, not required.  On success with TLV AUTH, @vsk->auth holds
 * what visock_hs_swrep_seal() needs.
 *
 * Context: process context, under lock_sock(@vsk); may sleep.
 * Return: 0 to go on, a positive enum visock_fallback_reason to decline
 * the switch with (then the socket's fallback reason), -ECONNREFUSED to
 * reset the connection (net.visock.auth 3), or another negative errno.
 */
int visock_hs_switch_check(struct visock_sock *vsk,
			   const struct visock_hs_msg *sw, const u8 *buf,
			   int len)
{
	int policy = visock_hs_auth_policy(vsk);
	int err;

	lockdep_assert_held(&vsk->sk.sk_lock);
	visock_hs_auth_drop(vsk);
	/* A switch negotiates no pair: none where one is required. */
	if (visock_hs_xform_required(vsk)) {
		WRITE_ONCE(vsk->fb_reason, VISOCK_FB_XFORM_REQUIRED);
		return VISOCK_FB_XFORM_REQUIRED;
	}
	if (policy == VISOCK_AUTH_OFF)
		return 0;
	if (!(sw->present & VISOCK_HSF(VISOCK_TLV_AUTH))) {
		if (policy < VISOCK_AUTH_REQUIRE)
			return 0;
		return visock_hs_switch_auth_fail(vsk, VISOCK_FB_AUTH_MISSING);
	}
	err = visock_hs_auth_begin(vsk, sw->auth_key_id);
	if (err == -ENOKEY)
		return visock_hs_switch_auth_fail(vsk, VISOCK_FB_AUTH);
	if (err)
		return err;
	memcpy(vsk->auth->ctx.client_nonce, sw->auth_nonce,
	       VISOCK_AUTH_NONCE_LEN);
	vsk->auth->ctx.client_token = sw->token;
	err = visock_hs_auth_check(vsk, sw, buf, len);
	if (err == -EBADMSG)
		return visock_hs_switch_auth_fail(vsk, VISOCK_FB_AUTH);
	if (err)
		visock_hs_auth_drop(vsk);
	return err;
}

/**
 * visock_hs_swrep_seal() - authenticate a responder's accepting reply
 * @vsk: the responder, after visock_hs_switch_check()
 * @r: the accepted reply, complete but for the tag
 *
 * If the SWITCH was authenticated, sets VISOCK_SWREP_F_AUTH and the tag:
 * the first VISOCK_SWREP_TAG_LEN bytes of the MAC of the encoded reply,
 * bound to the initiator's nonce and both tokens.
 *
 * Context: process context, under lock_sock(@vsk); may sleep.
 * Return: 0, or a negative errno (nothing may be sent then).
 */
int visock_hs_swrep_seal(struct visock_sock *vsk, struct visock_swrep *r)
{
	u8 buf[VISOCK_CDC_LEN];
	u8 tag[VISOCK_SWREP_TAG_LEN];
	int err;

	lockdep_assert_held(&vsk->sk.sk_lock);
	if (!vsk->auth)
		return 0;
	r->flags |= VISOCK_SWREP_F_AUTH;
	r->tag = 0;
	vsk->auth->ctx.server_token = r->rtoken;
	err = visock_swrep_encode(r, buf, sizeof(buf));
	if (err < 0)
		return err;
	err = visock_auth_tag(vsk->auth->mac_key, &vsk->auth->ctx, buf,
			      sizeof(buf), VISOCK_SWREP_TAG_OFF, sizeof(tag),
			      tag);
	if (!err)
		r->tag = (u32)tag[0] << 24 | (u32)tag[1] << 16 |
			 (u32)tag[2] << 8 | tag[3];
	return err;
}

/**
 * visock_hs_swrep_open() - check the authentication of a switch reply
 * @vsk: the initiator, whose SWITCH visock_hs_switch_auth() made
 * @r: the accepted reply, decoded
 * @buf: the reply as received, VISOCK_CDC_LEN bytes
 *
 * Context: process context, under lock_sock(@vsk); may sleep.
 * Return: 0 (authenticated, or plain where that is allowed), -EBADMSG if
 * the tag does not verify or was not asked for, -EACCES if the reply is
 * plain where authentication is required, or another negative errno.
 * The responder writes over RDMA already: on any error the caller resets
 * the connection.
 */
int visock_hs_swrep_open(struct visock_sock *vsk, const struct visock_swrep *r,
			 const u8 *buf)
{
	struct visock_net *vn = visock_net(sock_net(&vsk->sk));
	int err;

	lockdep_assert_held(&vsk->sk.sk_lock);
	if (!vsk->auth) {
		if (!(r->flags & VISOCK_SWREP_F_AUTH))
			return 0;
		atomic64_inc(&vn->auth_failed);
		return -EBADMSG;
	}
	if (!(r->flags & VISOCK_SWREP_F_AUTH)) {
		/* A responder that does not authenticate (or an older one). */
		visock_hs_auth_drop(vsk);
		if (visock_hs_auth_policy(vsk) < VISOCK_AUTH_REQUIRE)
			return 0;
		atomic64_inc(&vn->auth_missing);
		return -EACCES;
	}
	vsk->auth->ctx.server_token = r->rtoken;
	err = visock_auth_tag_verify(vsk->auth->mac_key, &vsk->auth->ctx, buf,
				     VISOCK_CDC_LEN, VISOCK_SWREP_TAG_OFF,
				     VISOCK_SWREP_TAG_LEN);
	if (err) {
		if (err == -EBADMSG)
			atomic64_inc(&vn->auth_failed);
		visock_hs_auth_drop(vsk);
	}
	return err;
}

/**
 * visock_hs_switch_decline() - decline a lazy connection's SWITCH
 * @vsk: a lazy connection
 * @sw: the peer's SWITCH
 * @reason: enum visock_fallback_reason, not 0
 *
 * Sends the decline on the QP the SWITCH names, if that QP belongs to
 * this connection's link group (visock_lgr_switch_decline()).
 *
 * Context: process context, under lock_sock(@vsk); may sleep.
 * Return: 0 once the client's end acknowledged it, or a negative errno.
 */
int visock_hs_switch_decline(struct visock_sock *vsk,
			     const struct visock_hs_msg *sw, u32 reason)
{
	struct sockaddr_storage local, peer;
	int err;

	lockdep_assert_held(&vsk->sk.sk_lock);
	err = visock_hs_addrs(vsk, &local, &peer);
	if (err)
		return err;
	return visock_lgr_switch_decline(sock_net(&vsk->sk),
					 (struct sockaddr *)&local,
					 (struct sockaddr *)&peer, sw, reason,
					 vsk->sw_server);
}

void visock_hs_note_peer(struct visock_sock *vsk,
			 const struct visock_hs_msg *m)
{
	vsk->hs_version = min_t(u8, m->version, VISOCK_HS_VERSION);
	vsk->peer_token = m->token;
	vsk->peer_qpn = m->qpn;
	vsk->peer_rbuf_size = m->rbuf_size;
}

/* Client: create the QP and send REQ. */
static void visock_hs_cli_start(struct visock_sock *vsk)
{
	struct visock_hs_msg m;
	int err;

	err = visock_hs_make_vc(vsk, &m, VISOCK_HS_REQ, NULL);
	if (err == -EINPROGRESS &&
	    time_before(jiffies, vsk->hs_deadline - visock_hs_timeout(vsk) / 2)) {
		/* Every QP we may have is being set up: wait for one. */
		if (!test_bit(VISOCK_F_LGR_WAIT, &vsk->flags)) {
			atomic64_inc(&visock_net(sock_net(&vsk->sk))->lgr_waits);
			visock_hs_lgr_wait(vsk);
			/* Look once more: one may have come up meanwhile. */
			err = visock_hs_make_vc(vsk, &m, VISOCK_HS_REQ, NULL);
			if (err == -EINPROGRESS)
				return;
		} else {
			return;
		}
	}
	visock_hs_lgr_unwait(vsk);
	/*
	 * The server takes silence for a peer that does not speak visock
	 * (a middlebox kept our option from reaching it, or its echo from
	 * reaching us) and settles on TCP after its handshake timeout; a
	 * message arriving after that would be read by its application as
	 * stream bytes.  So a message that would go out later than three
	 * quarters of the timeout (the QP took that long, or this work ran
	 * that late) is not sent at all: both ends then settle on TCP, the
	 * server at its timeout or at our application's first bytes.
	 */
	if (time_after_eq(jiffies, vsk->hs_deadline -
				   visock_hs_timeout(vsk) / 4)) {
		visock_hs_fallback(vsk, VISOCK_FB_TIMEOUT);
		return;
	}
	if (err) {
		/* The server waits for our first message: tell it. */
		visock_hs_decline_fallback(vsk, visock_hs_vc_reason(err));
		return;
	}
	if (visock_hs_auth_policy(vsk) != VISOCK_AUTH_OFF) {
		err = visock_hs_auth_begin(vsk, 0);
		if (err == -ENOKEY &&
		    visock_hs_auth_policy(vsk) >= VISOCK_AUTH_REQUIRE) {
			visock_hs_auth_fail(vsk, VISOCK_FB_AUTH_MISSING, true);
			return;
		}
		if (err && err != -ENOKEY) {
			visock_hs_decline_fallback(vsk, visock_hs_vc_reason(err));
			return;
		}
		if (!err) {
			get_random_bytes(vsk->auth->ctx.client_nonce,
					 VISOCK_AUTH_NONCE_LEN);
			vsk->auth->ctx.client_token = vsk->local_token;
			visock_hs_auth_put(vsk, &m, vsk->auth->ctx.client_nonce);
			if (!visock_hs_xform_offer(vsk, &m))
				visock_hs_auth_drop(vsk);
		}
	}
	if (!vsk->auth && visock_hs_xform_required(vsk)) {
		/* No key, or no pair to offer: RDMA would be in the clear. */
		visock_hs_decline_fallback(vsk, VISOCK_FB_XFORM_REQUIRED);
		return;
	}
	err = visock_hs_send(vsk, &m);
	if (err) {
		visock_hs_abort(vsk, -err);
		return;
	}
	vsk->hs_state = VISOCK_HS_CLI_WAIT_REP;
	vsk->hs_deadline = jiffies + visock_hs_timeout(vsk);
}

/**
 * visock_hs_auth_done() - the handshake or switch was authenticated
 * @vsk: socket about to use RDMA
 *
 * Counts it and marks the socket, if it was (@vsk->auth is set).
 *
 * Context: process context, under lock_sock(@vsk).
 */
void visock_hs_auth_done(struct visock_sock *vsk)
{
	if (!vsk->auth)
		return;
	atomic64_inc(&visock_net(sock_net(&vsk->sk))->auth_ok);
	set_bit(VISOCK_F_AUTH, &vsk->flags);
}

/* Client: REP or DECLINE arrived (@len bytes in @buf). */
static void visock_hs_cli_rep(struct visock_sock *vsk,
			      const struct visock_hs_msg *rep, const u8 *buf,
			      int len)
{
	struct visock_hs_msg m;
	int err;

	if (rep->type == VISOCK_HS_DECLINE) {
		/* The server no longer has the QP we named: none of ours. */
		if (rep->reason == VISOCK_FB_LINK_GONE && vsk->vc &&
		    visock_vc_reused(vsk->vc))
			visock_vc_peer_forgot(vsk->vc);
		visock_hs_fallback(vsk, visock_hs_peer_reason(rep->reason));
		return;
	}
	if (rep->type != VISOCK_HS_REP) {
		/* The server waits for CONFIRM or DECLINE: decline. */
		visock_hs_decline_fallback(vsk, VISOCK_FB_BAD_MSG);
		return;
	}
	if (vsk->auth && (rep->present & VISOCK_HSF(VISOCK_TLV_AUTH))) {
		memcpy(vsk->auth->ctx.server_nonce, rep->auth_nonce,
		       VISOCK_AUTH_NONCE_LEN);
		vsk->auth->ctx.server_token = rep->token;
		err = visock_hs_auth_check(vsk, rep, buf, len);
		if (!err && !visock_hs_xform_chosen(vsk, rep)) {
			visock_hs_decline_fallback(vsk, VISOCK_FB_BAD_MSG);
			return;
		}
		if (!err)
			err = visock_hs_auth_derive(vsk);
		if (visock_hs_auth_bad(vsk, err))
			return;
	} else if (vsk->auth) {
		/* A server that does not authenticate (or an older one). */
		if (visock_hs_auth_policy(vsk) >= VISOCK_AUTH_REQUIRE) {
			visock_hs_auth_fail(vsk, VISOCK_FB_AUTH_MISSING, true);
			return;
		}
		visock_hs_auth_drop(vsk);
	}
	if (!vsk->auth && !visock_hs_xform_chosen(vsk, rep)) {
		/* A transform chosen without authentication. */
		visock_hs_decline_fallback(vsk, VISOCK_FB_BAD_MSG);
		return;
	}
	if (visock_hs_xform_refused(vsk)) {
		visock_hs_auth_drop(vsk);
		visock_hs_decline_fallback(vsk, VISOCK_FB_XFORM_REQUIRED);
		return;
	}
	visock_hs_note_peer(vsk, rep);
	err = visock_vc_connect(vsk->vc, rep);
	/* The server may write as soon as it has CONFIRM. */
	if (!err)
		err = visock_rdma_prepare(vsk);
	if (err) {
		visock_hs_decline_fallback(vsk, visock_hs_vc_reason(err));
		return;
	}
	memset(&m, 0, sizeof(m));
	m.type = VISOCK_HS_CONFIRM;
	m.present = VISOCK_HSF(VISOCK_TLV_TOKEN);
	m.token = vsk->peer_token;
	if (vsk->auth)
		visock_hs_auth_put(vsk, &m, vsk->auth->ctx.client_nonce);
	err = visock_hs_send(vsk, &m);
	if (err) {
		visock_hs_abort(vsk, -err);
		return;
	}
	visock_hs_auth_done(vsk);
	visock_hs_success(vsk);
}

/*
 * Server: check the authentication of the client's REQ (@len bytes in
 * @buf) before anything is set up for it.  Returns false if the
 * connection settled.
 */
static bool visock_hs_srv_req_auth(struct visock_sock *vsk,
				   const struct visock_hs_msg *req,
				   const u8 *buf, int len)
{
	int policy = visock_hs_auth_policy(vsk);
	int err;

	if (policy == VISOCK_AUTH_OFF)
		return true;
	if (!(req->present & VISOCK_HSF(VISOCK_TLV_AUTH))) {
		if (policy < VISOCK_AUTH_REQUIRE)
			return true;
		visock_hs_auth_fail(vsk, VISOCK_FB_AUTH_MISSING, true);
		return false;
	}
	err = visock_hs_auth_begin(vsk, req->auth_key_id);
	if (err == -ENOKEY) {
		/* A key id we do not hold: another fleet, or a rollout. */
		visock_hs_auth_fail(vsk, VISOCK_FB_AUTH, true);
		return false;
	}
	if (!err) {
		memcpy(vsk->auth->ctx.client_nonce, req->auth_nonce,
		       VISOCK_AUTH_NONCE_LEN);
		vsk->auth->ctx.client_token = req->token;
		err = visock_hs_auth_check(vsk, req, buf, len);
	}
	return !visock_hs_auth_bad(vsk, err);
}

/* Server: REQ (or the client's DECLINE) arrived (@len bytes in @buf). */
static void visock_hs_srv_req(struct visock_sock *vsk,
			      const struct visock_hs_msg *req, const u8 *buf,
			      int len)
{
	struct visock_hs_msg m;
	u8 xform;
	int err;

	if (req->type == VISOCK_HS_DECLINE) {
		visock_hs_fallback(vsk, visock_hs_peer_reason(req->reason));
		return;
	}
	if (req->type != VISOCK_HS_REQ) {
		visock_hs_decline_fallback(vsk, VISOCK_FB_BAD_MSG);
		return;
	}
	if (!visock_hs_srv_req_auth(vsk, req, buf, len))
		return;
	if (!visock_hs_srv_xform_ok(vsk, req, &xform)) {
		/* RDMA would be in the clear, or under a weaker pair. */
		visock_hs_auth_drop(vsk);
		visock_hs_decline_fallback(vsk, VISOCK_FB_XFORM_REQUIRED);
		return;
	}
	visock_hs_note_peer(vsk, req);
	err = visock_hs_make_vc(vsk, &m, VISOCK_HS_REP, req);
	if (!err)
		err = visock_vc_connect(vsk->vc, req);
	if (!err && vsk->auth) {
		get_random_bytes(vsk->auth->ctx.server_nonce,
				 VISOCK_AUTH_NONCE_LEN);
		vsk->auth->ctx.server_token = vsk->local_token;
		visock_hs_xform_choose(vsk, req, &m, xform);
		err = visock_hs_auth_derive(vsk);
		if (!err)
			visock_hs_auth_put(vsk, &m,
					   vsk->auth->ctx.server_nonce);
	}
	/* The client may write as soon as it has REP. */
	if (!err)
		err = visock_rdma_prepare(vsk);
	if (err) {
		visock_hs_decline_fallback(vsk, visock_hs_vc_reason(err));
		return;
	}
	err = visock_hs_send(vsk, &m);
	if (err) {
		visock_hs_abort(vsk, -err);
		return;
	}
	vsk->hs_state = VISOCK_HS_SRV_WAIT_CONFIRM;
	vsk->hs_deadline = jiffies + visock_hs_timeout(vsk);
}

/*
 * Server: CONFIRM or DECLINE arrived (@len bytes in @buf); nothing more
 * is owed either way.  A CONFIRM whose MAC does not verify was changed
 * on the way, after the client moved to RDMA: the connection cannot go
 * on safely on either transport and is reset.
 */
static void visock_hs_srv_confirm(struct visock_sock *vsk,
				  const struct visock_hs_msg *m,
				  const u8 *buf, int len)
{
	if (m->type == VISOCK_HS_DECLINE) {
		visock_hs_fallback(vsk, visock_hs_peer_reason(m->reason));
	} else if (m->type != VISOCK_HS_CONFIRM ||
		   m->token != vsk->local_token) {
		visock_hs_fallback(vsk, VISOCK_FB_BAD_MSG);
	} else if (vsk->auth && visock_hs_auth_check(vsk, m, buf, len)) {
		atomic64_inc(&visock_net(sock_net(&vsk->sk))->auth_failed);
		visock_hs_auth_drop(vsk);
		visock_hs_abort(vsk, ECONNABORTED);
	} else {
		visock_hs_auth_done(vsk);
		visock_hs_success(vsk);
	}
}

/* One step of the state machine.  Caller holds lock_sock(). */
static void visock_hs_step(struct visock_sock *vsk)
{
	u8 buf[VISOCK_HS_MAX_LEN];
	struct visock_hs_msg m;
	int ret, len = 0;

	lockdep_assert_held(&vsk->sk.sk_lock);
	if (vsk->hs_state == VISOCK_HS_CLI_START) {
		visock_hs_cli_start(vsk);
		/* Still in CLI_START: waiting for a QP to come up. */
		if (vsk->hs_state == VISOCK_HS_DONE ||
		    vsk->hs_state == VISOCK_HS_CLI_START)
			return;
	}

	ret = visock_hs_recv(vsk, &m, buf, &len);
	if (ret < 0 && ret != -EBADMSG && ret != -EPROTONOSUPPORT &&
	    ret != -EPROTO && vsk->hs_state == VISOCK_HS_SRV_WAIT_REQ) {
		/*
		 * Nothing was sent or consumed yet: whatever the client did
		 * (plain TCP bytes, EOF, reset), the application sees it on a
		 * plain TCP connection.
		 */
		visock_hs_fallback(vsk, ret == -ENOMSG ?
					VISOCK_FB_PEER_NO_VISOCK :
					VISOCK_FB_IO);
		return;
	}
	if (ret == 0) {
		if (time_after_eq(jiffies, vsk->hs_deadline)) {
			/* Nothing sent yet on the server: TCP is safe. */
			if (vsk->hs_state == VISOCK_HS_SRV_WAIT_REQ)
				visock_hs_fallback(vsk, VISOCK_FB_TIMEOUT);
			else
				visock_hs_abort(vsk, ETIMEDOUT);
		}
		return;
	}
	if (ret == -EBADMSG || ret == -EPROTONOSUPPORT) {
		/*
		 * One whole message consumed: still in sync.  A message the
		 * peer wrote for a version we do not speak is declined as
		 * VERSION (design.rst, "Versions").
		 */
		u8 reason = ret == -EBADMSG ? VISOCK_FB_BAD_MSG :
					      VISOCK_FB_VERSION;

		if (vsk->hs_state == VISOCK_HS_SRV_WAIT_CONFIRM)
			visock_hs_fallback(vsk, reason);
		else
			visock_hs_decline_fallback(vsk, reason);
		return;
	}
	if (ret < 0) {
		visock_hs_abort(vsk, ret == -ENOMSG ? EPROTO : -ret);
		return;
	}

	switch (vsk->hs_state) {
	case VISOCK_HS_CLI_WAIT_REP:
		visock_hs_cli_rep(vsk, &m, buf, len);
		break;
	case VISOCK_HS_SRV_WAIT_REQ:
		visock_hs_srv_req(vsk, &m, buf, len);
		break;
	case VISOCK_HS_SRV_WAIT_CONFIRM:
		visock_hs_srv_confirm(vsk, &m, buf, len);
		break;
	default:
		break;
	}
}

static void visock_hs_work(struct work_struct *work)
{
	struct visock_sock *vsk = container_of(to_delayed_work(work),
					       struct visock_sock, hs_work);
	struct sock *sk = &vsk->sk;
	bool settled = false;

	lock_sock(sk);
	/*
	 * Once close() started, its visock_rdma_destroy_vc() may free the
	 * vc at any time: a TCP callback can queue us again after
	 * visock_hs_cancel() returned.  Not so while a lazy connection's
	 * close waits for its switch to settle (sw_closing).
	 */
	if (vsk->tcp && test_bit(VISOCK_F_LAZY, &vsk->flags) &&
	    (!test_bit(VISOCK_F_RELEASED, &vsk->flags) || vsk->sw_closing)) {
		/* A lazy connection's switch (visock_lazy.c). */
		visock_lazy_work(vsk);
	} else if (vsk->tcp && vsk->hs_state != VISOCK_HS_NONE &&
		   vsk->hs_state != VISOCK_HS_DONE &&
		   !test_bit(VISOCK_F_RELEASED, &vsk->flags)) {
		visock_hs_step(vsk);
		if (vsk->hs_state == VISOCK_HS_DONE) {
			settled = true;
		} else {
			unsigned long dl = vsk->hs_deadline;
			long left;

			/* A client waiting for a QP stops halfway. */
			if (vsk->hs_state == VISOCK_HS_CLI_START)
				dl -= visock_hs_timeout(vsk) / 2;
			left = (long)(dl - jiffies);

			/* Run again at the deadline, or earlier on data. */
			visock_hs_queue(vsk, left > 0 ? left : 0, false);
		}
	}
	release_sock(sk);

	if (settled) {
		if (vsk->listener)
			visock_child_settled(vsk);
		else
			visock_hs_wake(vsk);
	}
	sock_put(sk);
}

/* Did @syn (a saved SYN: network + TCP header) carry our option? */
static bool visock_saved_syn_opt(const struct saved_syn *syn,
				 struct visock_synopt *opt)
{
	const u8 *th = syn->data + syn->mac_hdrlen + syn->network_hdrlen;
	unsigned int thlen = syn->tcp_hdrlen;

	if (thlen <= sizeof(struct tcphdr))
		return false;
	return !visock_tcpopt_find(th + sizeof(struct tcphdr),
				   thlen - sizeof(struct tcphdr), opt);
}

/**
 * visock_decide_child() - learn what the SYN and SYN-ACK announced
 * @child: new server-side socket, not yet visible
 *
 * Reads the SYN that TCP saved for the internal listener (TCP_SAVE_SYN),
 * in which the SYN-ACK hook of visock_nf.c recorded what it echoed, and
 * frees it.
 *
 * Context: process context.
 */
void visock_decide_child(struct visock_sock *child)
{
	struct sock *tsk = child->tcp->sk;
	struct tcp_sock *tp = tcp_sk(tsk);
	struct visock_synopt opt;
	struct saved_syn *syn;

	lock_sock(tsk);
	syn = tp->saved_syn;
	tp->saved_syn = NULL;
	release_sock(tsk);

	if (!syn)
		return;	/* SYN cookies: nothing was echoed */
	if (visock_saved_syn_opt(syn, &opt) &&
	    (opt.flags & VISOCK_SAVED_F_ECHOED)) {
		child->peer_opt.version = opt.version;
		child->peer_opt.flags = opt.flags & VISOCK_TCPOPT_F_PEER_MASK;
		child->local_opt.version = VISOCK_TCPOPT_VERSION;
		child->local_opt.flags = opt.flags & VISOCK_SAVED_F_ECHO_RDMA ?
					 VISOCK_TCPOPT_F_RDMA : 0;
		/* visock_nf_mark_syn() kept them only if they were echoed. */
		child->local_opt.flags |= opt.flags &
					  (VISOCK_TCPOPT_F_LAZY |
					   VISOCK_TCPOPT_LAZY_MASK);
		set_bit(VISOCK_F_PEER_OPT, &child->flags);
		set_bit(VISOCK_F_SYN_OPT, &child->flags);
	}
	kfree(syn);
}

/**
 * visock_decide() - choose TCP or the RDMA handshake for a new connection
 * @vsk: socket whose TCP connection was just established
 *
 * Runs once per connection.  Both ends reach the same decision from the
 * options exchanged in SYN and SYN-ACK.
 *
 * Context: any (TCP's softirq callback on the client); does not sleep.
 * Return: 1 if a handshake started, 0 if the connection settled on TCP.
 */
int visock_decide(struct visock_sock *vsk)
{
	bool server = vsk->listener;
	u8 reason;

	if (test_and_set_bit(VISOCK_F_DECIDED, &vsk->flags))
		return READ_ONCE(vsk->mode) == VISOCK_MODE_HANDSHAKE;

	if (!test_bit(VISOCK_F_SYN_OPT, &vsk->flags) ||
	    !test_bit(VISOCK_F_PEER_OPT, &vsk->flags)) {
		/* Not both announced: say whose side stopped it. */
		if (test_bit(VISOCK_F_POLICY_TCP, &vsk->flags))
			reason = VISOCK_FB_POLICY;
		else if (READ_ONCE(visock_net(sock_net(&vsk->sk))->enable))
			reason = VISOCK_FB_PEER_NO_VISOCK;
		else
			reason = VISOCK_FB_DISABLED;
	} else {
		/* Pairs with smp_wmb() in visock_tcp_peer_opt(). */
		smp_rmb();
		if (!(vsk->local_opt.flags & VISOCK_TCPOPT_F_RDMA))
			reason = VISOCK_FB_NO_DEVICE;
		else if (!(vsk->peer_opt.flags & VISOCK_TCPOPT_F_RDMA))
			reason = VISOCK_FB_PEER_NO_DEVICE;
		else
			reason = VISOCK_FB_NONE;
	}

	if (reason != VISOCK_FB_NONE) {
		WRITE_ONCE(vsk->lazy_bytes, 0);
		vsk->hs_state = VISOCK_HS_DONE;
		visock_set_fallback(vsk, reason);
		set_bit(VISOCK_F_SETTLED, &vsk->flags);
		return 0;
	}
	/*
	 * A lazy start is agreed when the SYN-ACK echoed the client's
	 * proposal: no handshake, TCP until a switch (visock_lazy.c).
	 */
	if (visock_tcpopt_lazy_bytes(vsk->local_opt.flags) &&
	    visock_tcpopt_lazy_bytes(vsk->local_opt.flags) ==
	    visock_tcpopt_lazy_bytes(vsk->peer_opt.flags) &&
	    !READ_ONCE(visock_test_raw_handshake)) {
		WRITE_ONCE(vsk->lazy_bytes,
			   visock_tcpopt_lazy_bytes(vsk->local_opt.flags));
		visock_lazy_start(vsk);
		return 0;
	}
	WRITE_ONCE(vsk->lazy_bytes, 0);
	if (READ_ONCE(visock_test_raw_handshake)) {
		/* Test hook: the application speaks the handshake itself. */
		vsk->hs_state = VISOCK_HS_DONE;
		visock_set_mode(vsk, VISOCK_MODE_TCP);
		set_bit(VISOCK_F_SETTLED, &vsk->flags);
		return 0;
	}
	visock_hs_start(vsk, server ? VISOCK_HS_SRV_WAIT_REQ :
				      VISOCK_HS_CLI_START);
	return 1;
}

/* TCP has room: data calls wait for the handshake, as on TCP. */
static void visock_hs_tcp_write_space(struct visock_sock *vsk)
{
	vsk->sk.sk_write_space(&vsk->sk);
}

/* Let the handshake see the FIN or reset. */
static void visock_hs_tcp_state_change(struct visock_sock *vsk,
				       int tcp_state)
{
	visock_hs_kick(vsk);
}

/*
 * Handshake mode: TCP's bytes are handshake messages.  Data calls only
 * get here once they stopped waiting for the connection to settle
 * without it settling (error, close): they go to TCP.
 */
const struct visock_mode_ops visock_hs_mode_ops = {
	.sendmsg		= visock_tcp_mode_sendmsg,
	.recvmsg		= visock_tcp_mode_recvmsg,
	.poll			= visock_tcp_mode_poll,
	.shutdown		= visock_tcp_mode_shutdown,
	.tcp_data_ready		= visock_hs_kick,
	.tcp_write_space	= visock_hs_tcp_write_space,
	.tcp_state_change	= visock_hs_tcp_state_change,
};
