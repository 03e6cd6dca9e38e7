// SPDX-License-Identifier: GPL-2.0
/*
 * visock: the AF_VISOCK socket family.
 *
 * Implementation notes
 * --------------------
 *
 * Objects.  A struct visock_sock (the "visock socket") is what the
 * application's file points to.  It owns exactly one internal TCP socket
 * (visock_tcp.c) from creation to release.  A listening visock socket
 * owns a listening TCP socket; every connection TCP accepts on it becomes
 * a new visock socket (a "child") that waits on the listener's accept
 * queue until accept(2) hands it to the application.  The same socket
 * also exists as socket(AF_INET or AF_INET6, SOCK_STREAM, IPPROTO_VISOCK)
 * (visock_inet.c): inet_create() allocates it, then proto.init runs the
 * same visock_sk_init() and visock_sock_setup() as visock_create(); its
 * children are allocated from the listener's struct proto.  SOCK_DGRAM
 * sockets of the family are another object, struct visock_dgram_sock
 * (visock_dgram.c); visock_create() only hands them over.
 *
 * Lifetime.  The socket layer holds the reference taken by sk_alloc()
 * from socket(2)/accept(2) until release.  A queued child's reference is
 * held by its listener's accept queue and moves to the application's
 * socket in accept(2).  Every queued work item holds a reference of its
 * own (sock_hold() before queue_work(), dropped by the work, or by
 * whoever cancels it); the close work of a connection in RDMA mode holds
 * one reference from close() to its last run (visock_tx_close()).  The
 * module cannot be unloaded while any visock socket exists: the socket
 * layer and sk_alloc() hold module references.
 *
 * States.  sk_state uses TCP's values: TCP_CLOSE (new or closed),
 * TCP_SYN_SENT (connect in progress), TCP_ESTABLISHED and TCP_LISTEN.
 * What carries the bytes is the separate @mode (enum visock_mode).  In
 * TCP mode every data call is forwarded to the internal TCP socket, which
 * then provides all of TCP's semantics (blocking, timeouts, signals,
 * MSG_* flags, SIGPIPE); poll() reads TCP's state but waits on the visock
 * socket's wait queue, which visock_tcp.c wakes from TCP's callbacks.
 *
 * Locks, outermost first:
 *   1. lock_sock() of a listener
 *   2. lock_sock() of a visock socket (a child: only after 1, nested)
 *   3. lock_sock() of its internal TCP socket (taken inside TCP calls)
 *   4. visock_sock.accept_lock (spinlock, BH-safe) of a listener
 *   5. sk_callback_lock of the internal TCP socket
 * Data calls (sendmsg/recvmsg) in TCP mode take no visock lock at all, so
 * that a reader blocked in TCP does not stop a writer, as with TCP.
 *
 * Modes.  What a data call does depends on the connection's mode: one
 * struct visock_mode_ops per mode (TCP here, handshake, lazy start,
 * RDMA), switched with @mode by visock_set_mode().  The socket calls
 * below and the internal TCP socket's callbacks (visock_tcp.c) go
 * through @vsk->ops, read without a lock.
 *
 * RDMA mode.  Once the handshake switched a connection to
 * VISOCK_MODE_RDMA (which never changes back), sendmsg, recvmsg, poll,
 * shutdown, release and the SIOCINQ/SIOCOUTQ ioctls go to the data path
 * (visock_rdma.c, visock_tx.c, visock_rx.c, visock_close.c; rules at the
 * top of visock_tx.c and visock_rx.c).  Its calls take lock_sock() of the
 * visock socket (released while they wait) and, inside it, the data
 * path's spinlock.
 */
#include <linux/module.h>
#include <linux/net.h>
#include <linux/poll.h>
#include <linux/sockios.h>
#include <linux/sockptr.h>
#include <asm/ioctls.h>
#include <linux/uaccess.h>
#include <net/sock.h>
#include <linux/tcp.h>
#include <net/inet_sock.h>
#include <net/tcp.h>
#include <net/tcp_states.h>

#include "visock.h"
#include "af_visock.h"
#include "visock_handshake.h"
#include "visock_lazy.h"
#include "visock_tcp.h"
#include "visock_vc.h"
#include "visock_lgr.h"
#include "visock_rdma.h"
#include "visock_trace.h"
#include "visock_fault.h"
#include "visock_sockopt.h"
#include "visock_diag.h"
#include "visock_event.h"
#include "visock_policy.h"
#include "visock_inet.h"
#include "visock_mem.h"
#include "visock_dgram.h"

struct proto visock_proto = {
	.name		= "VISOCK",
	.owner		= THIS_MODULE,
	.obj_size	= sizeof(struct visock_sock),
	VISOCK_MEM_PROTO_FIELDS,
};

static void visock_count_fallback(struct visock_sock *vsk, u8 reason)
{
	struct visock_net *vn = visock_net(sock_net(&vsk->sk));

	if (reason < __VISOCK_FB_MAX)
		atomic64_inc(&vn->fallbacks[reason]);
}

/**
 * visock_set_fallback() - the connection runs over its TCP socket
 * @vsk: socket
 * @reason: enum visock_fallback_reason
 *
 * Context: any; called once per connection.
 */
void visock_set_fallback(struct visock_sock *vsk, u8 reason)
{
	WRITE_ONCE(vsk->fb_reason, reason);
	visock_set_mode(vsk, VISOCK_MODE_TCP);
	visock_count_fallback(vsk, reason);
	trace_visock_fallback(vsk, reason);
	visock_event_sock(vsk, VISOCK_EVENT_FALLBACK, reason, NULL);
}

/*
 * Wait until the connection has settled on TCP or RDMA, or has failed.
 * Data calls come here so that application bytes never mix with the
 * handshake.  Called without any lock held.
 */
static int visock_wait_settled(struct visock_sock *vsk, long timeo)
{
	DEFINE_WAIT_FUNC(wait, woken_wake_function);
	struct sock *sk = &vsk->sk;
	int err = 0;

	add_wait_queue(sk_sleep(sk), &wait);
	while (!test_bit(VISOCK_F_SETTLED, &vsk->flags) &&
	       !READ_ONCE(sk->sk_err) &&
	       READ_ONCE(sk->sk_state) != TCP_CLOSE) {
		err = visock_wait_err(timeo);
		if (err)
			break;
		timeo = wait_woken(&wait, TASK_INTERRUPTIBLE, timeo);
	}
	remove_wait_queue(sk_sleep(sk), &wait);
	return err;
}

static bool visock_settling(const struct visock_sock *vsk)
{
	int state = READ_ONCE(vsk->sk.sk_state);

	return !test_bit(VISOCK_F_SETTLED, &vsk->flags) &&
	       (state == TCP_SYN_SENT || state == TCP_ESTABLISHED);
}

static void visock_sk_destruct(struct sock *sk)
{
	struct visock_sock *vsk = visock_sk(sk);

	WARN_ON_ONCE(vsk->tcp);
	WARN_ON_ONCE(vsk->vc);
	WARN_ON_ONCE(vsk->dp);
	/* The rings' charge went back with the vc (visock_mem.c). */
	WARN_ON_ONCE(READ_ONCE(sk->sk_forward_alloc));
	WARN_ON_ONCE(vsk->listener);
	WARN_ON_ONCE(!list_empty(&vsk->accept_q));
	visock_diag_destruct(vsk);
	kfree_sensitive(vsk->auth);
	if (vsk->family_destruct)
		vsk->family_destruct(sk);
}

static void visock_accept_work(struct work_struct *work);
static bool visock_settling(const struct visock_sock *vsk);

/*
 * sk_state_change() and sk_write_space() of a visock socket.  While the
 * connection settles, poll() reports neither EPOLLIN nor EPOLLOUT, and
 * what TCP, the handshake and the data path report meanwhile (TCP is up,
 * TCP has room, the ring is ready) changes nothing an application sees:
 * those wake-ups are dropped.  io_uring retries an operation after any
 * wake-up, and a CONNECT retried then would complete with EALREADY where
 * TCP's only retries once the connection is up.  Whoever settles the
 * connection, ends it or closes the socket wakes everybody afterwards
 * (visock_hs_wake(), sk_error_report(), the close paths), with
 * visock_settling() false by then.
 */
static void visock_sk_state_change(struct sock *sk)
{
	struct visock_sock *vsk = visock_sk(sk);

	if (!visock_settling(vsk))
		vsk->own_state_change(sk);
}

static void visock_sk_write_space(struct sock *sk)
{
	struct visock_sock *vsk = visock_sk(sk);

	if (!visock_settling(vsk))
		vsk->own_write_space(sk);
}

/*
 * Inet visock socks (IPPROTO_VISOCK, and their accepted children) would
 * share TCP's lockdep classes, and visock takes its internal TCP
 * socket's lock inside its own: classes of their own tell lockdep that
 * this nesting is the documented lock order, not a recursion.
 */
static struct lock_class_key visock_slock_keys[2];
static struct lock_class_key visock_sk_lock_keys[2];

static void visock_sk_lock_class(struct sock *sk)
{
	switch (sk->sk_family) {
	case AF_INET:
		sock_lock_init_class_and_name(sk, "slock-AF_INET-VISOCK",
					      &visock_slock_keys[0],
					      "sk_lock-AF_INET-VISOCK",
					      &visock_sk_lock_keys[0]);
		break;
	case AF_INET6:
		sock_lock_init_class_and_name(sk, "slock-AF_INET6-VISOCK",
					      &visock_slock_keys[1],
					      "sk_lock-AF_INET6-VISOCK",
					      &visock_sk_lock_keys[1]);
		break;
	}
}

/**
 * visock_sk_init() - initialise the visock part of a new sock
 * @sk: sock just allocated from a visock struct proto, after
 *	sock_init_data(); its sk_family and sk_protocol are already set
 * @family: AF_INET or AF_INET6, the family of the internal TCP socket
 *
 * Shared by every way a visock sock comes to life: socket(AF_VISOCK),
 * socket(AF_INET or AF_INET6, SOCK_STREAM, IPPROTO_VISOCK) (through
 * visock_inet.c) and accepted children.  The destructor the sock had
 * (the inet one for inet sockets) still runs, after visock's checks.
 *
 * Context: process context, @sk not yet visible to other threads.
 */
void visock_sk_init(struct sock *sk, int family)
{
	struct visock_sock *vsk = visock_sk(sk);

	visock_sk_lock_class(sk);

	vsk->family_destruct = sk->sk_destruct;
	sk->sk_destruct = visock_sk_destruct;
	vsk->own_state_change = sk->sk_state_change;
	sk->sk_state_change = visock_sk_state_change;
	vsk->own_write_space = sk->sk_write_space;
	sk->sk_write_space = visock_sk_write_space;
	sk->sk_state = TCP_CLOSE;

	vsk->tcp = NULL;
	vsk->flags = 0;
	vsk->mode = VISOCK_MODE_INIT;
	vsk->ops = &visock_tcp_mode_ops;
	vsk->fb_reason = VISOCK_FB_NONE;
	vsk->family = family;
	spin_lock_init(&vsk->accept_lock);
	INIT_LIST_HEAD(&vsk->accept_q);
	INIT_LIST_HEAD(&vsk->accept_link);
	vsk->accept_len = 0;
	vsk->accept_hs = 0;
	INIT_WORK(&vsk->accept_work, visock_accept_work);
	visock_hs_init(vsk);
	visock_diag_link_sock(vsk);
}

/*
 * A sock for a connection accepted by listener @lsk: same family, struct
 * proto and protocol as the listener.
 */
static struct sock *visock_child_sk_alloc(const struct sock *lsk)
{
	const struct visock_sock *lvsk = visock_sk(lsk);
	struct sock *sk;

	if (visock_fault(VISOCK_FP_CHILD_ALLOC))
		return NULL;
	sk = sk_alloc(sock_net(lsk), lsk->sk_family, GFP_KERNEL, lsk->sk_prot,
		      0);
	if (!sk)
		return NULL;
	sock_init_data(NULL, sk);
	sk->sk_protocol = lsk->sk_protocol;
	/* Its rings are charged before accept(2): to the listener's cgroup. */
	visock_mem_sk_inherit(sk, lsk);
	visock_inet_child_init(sk);
	visock_sk_init(sk, lvsk->family);
	/* Not sock_def_destruct(): the listener's family destructor. */
	visock_sk(sk)->family_destruct = lvsk->family_destruct;
	return sk;
}

/* Copy what a TCP socket inherited from its listener onto its owner. */
static void visock_inherit_tcp_opts(struct sock *sk, const struct sock *tsk)
{
	WRITE_ONCE(sk->sk_rcvbuf, READ_ONCE(tsk->sk_rcvbuf));
	WRITE_ONCE(sk->sk_sndbuf, READ_ONCE(tsk->sk_sndbuf));
	WRITE_ONCE(sk->sk_rcvlowat, READ_ONCE(tsk->sk_rcvlowat));
	WRITE_ONCE(sk->sk_rcvtimeo, READ_ONCE(tsk->sk_rcvtimeo));
	WRITE_ONCE(sk->sk_sndtimeo, READ_ONCE(tsk->sk_sndtimeo));
	WRITE_ONCE(sk->sk_lingertime, READ_ONCE(tsk->sk_lingertime));
	sock_valbool_flag(sk, SOCK_LINGER, sock_flag(tsk, SOCK_LINGER));
	sock_valbool_flag(sk, SOCK_KEEPOPEN, sock_flag(tsk, SOCK_KEEPOPEN));
	sk->sk_userlocks = tsk->sk_userlocks;
	sk->sk_mark = READ_ONCE(tsk->sk_mark);
	sk->sk_priority = READ_ONCE(tsk->sk_priority);
}

/**
 * visock_sock_setup() - give a new visock socket its internal TCP socket
 * @vsk: socket initialised with visock_sk_init(), attached to its struct
 *	socket
 *
 * The second half of socket creation, shared by visock_create() and the
 * inet protosw's init (visock_inet.c).
 *
 * Context: process context, the task creating the socket.
 * Return: 0, or a negative errno; nothing to undo then.
 */
int visock_sock_setup(struct visock_sock *vsk)
{
	struct sock *sk = &vsk->sk;
	int err;

	err = visock_tcp_create(vsk, sock_net(sk));
	if (err)
		return err;
	/* Start from TCP's defaults, not the generic socket ones. */
	visock_inherit_tcp_opts(sk, vsk->tcp->sk);
	/* SOL_SOCKET options reach visock_setsockopt() to be mirrored. */
	if (VISOCK_HAVE_CUSTOM_SOCKOPT)
		set_bit(SOCK_CUSTOM_SOCKOPT, &sk->sk_socket->flags);
	/* io_uring's SEND_ZC, as on TCP: see visock_sendmsg(). */
	set_bit(SOCK_SUPPORT_ZC, &sk->sk_socket->flags);
	return 0;
}

static int visock_create(struct net *net, struct socket *sock, int protocol,
			 int kern)
{
	struct sock *sk;
	int family, err;

	if (sock->type == SOCK_DGRAM)
		return visock_dgram_create(net, sock, protocol, kern);
	if (sock->type != SOCK_STREAM)
		return -ESOCKTNOSUPPORT;
	switch (protocol) {
	case VISOCKPROTO_TCP4:
		family = AF_INET;
		break;
	case VISOCKPROTO_TCP6:
		family = AF_INET6;
		break;
	default:
		return -EPROTONOSUPPORT;
	}

	sock->state = SS_UNCONNECTED;
	sock->ops = &visock_stream_ops;

	sk = sk_alloc(net, PF_VISOCK, GFP_KERNEL, &visock_proto, kern);
	if (!sk)
		return -ENOMEM;
	sock_init_data(sock, sk);
	sk->sk_protocol = protocol;
	visock_sk_init(sk, family);

	err = visock_sock_setup(visock_sk(sk));
	if (err) {
		sock_orphan(sk);
		sock->sk = NULL;
		sk_free(sk);
		return err;
	}
	return 0;
}

const struct net_proto_family visock_family_ops = {
	.family	= PF_VISOCK,
	.owner	= THIS_MODULE,
	.create	= visock_create,
};

/* ------------------------------------------------------------------ */
/* Listening and accepting                                             */
/* ------------------------------------------------------------------ */

/**
 * visock_listen_kick() - pull new connections from the internal listener
 * @lvsk: listening visock socket
 *
 * Context: any, including TCP's softirq callbacks.
 */
void visock_listen_kick(struct visock_sock *lvsk)
{
	sock_hold(&lvsk->sk);
	if (!queue_work(visock_wq, &lvsk->accept_work))
		sock_put(&lvsk->sk);
}

/*
 * Free a child that never reached the application; resets its peer.
 * May run from the child's own handshake work, so it must not wait for
 * that work: a still-queued instance holds its own reference and finds
 * nothing left to do.
 */
static void visock_child_destroy(struct visock_sock *child)
{
	struct sock *sk = &child->sk;

	visock_diag_unlink_sock(child);
	if (cancel_delayed_work(&child->hs_work))
		sock_put(sk);
	lock_sock(sk);
	visock_rdma_destroy_vc(child);
	if (child->tcp)
		sock_no_linger(child->tcp->sk);
	visock_tcp_release(child);
	sk->sk_state = TCP_CLOSE;
	release_sock(sk);
	if (child->listener) {
		sock_put(&child->listener->sk);
		child->listener = NULL;
	}
	sock_orphan(sk);
	sock_put(sk);
}

/*
 * A child whose connection is settled becomes visible to accept(2).
 * Caller holds lock_sock() of the listener, which is still listening.
 */
static void visock_accept_enqueue(struct visock_sock *lvsk,
				  struct visock_sock *child)
{
	lockdep_assert_held(&lvsk->sk.sk_lock);
	spin_lock_bh(&lvsk->accept_lock);
	list_add_tail(&child->accept_link, &lvsk->accept_q);
	lvsk->accept_len++;
	spin_unlock_bh(&lvsk->accept_lock);
	lvsk->sk.sk_data_ready(&lvsk->sk);
}

static struct visock_sock *visock_accept_dequeue(struct visock_sock *lvsk)
{
	struct visock_sock *child;

	spin_lock_bh(&lvsk->accept_lock);
	child = list_first_entry_or_null(&lvsk->accept_q, struct visock_sock,
					 accept_link);
	if (child) {
		list_del_init(&child->accept_link);
		lvsk->accept_len--;
	}
	spin_unlock_bh(&lvsk->accept_lock);
	return child;
}

static struct visock_sock *visock_child_alloc(struct visock_sock *lvsk,
					      struct socket *tcp)
{
	struct sock *lsk = &lvsk->sk;
	struct sock *sk;

	sk = visock_child_sk_alloc(lsk);
	if (!sk)
		return NULL;
	sk->sk_type = SOCK_STREAM;
	sk->sk_uid = lsk->sk_uid;
	sk->sk_state = TCP_ESTABLISHED;
	visock_tcp_attach(visock_sk(sk), tcp, lvsk);
	visock_inherit_tcp_opts(sk, tcp->sk);
	sock_hold(lsk);
	visock_sk(sk)->listener = lvsk;
	/* Before the handshake, which asks for it. */
	visock_sk(sk)->xform_opt = READ_ONCE(lvsk->xform_opt);
	visock_decide_child(visock_sk(sk));
	return visock_sk(sk);
}

/**
 * visock_child_settled() - a child finished its handshake
 * @child: server-side socket, settled, with a listener reference
 *
 * Queues @child for accept(2), also when the connection was reset
 * after its handshake, or frees it if the listener is gone or the
 * handshake aborted.
 *
 * Context: process context, no lock held.
 */
void visock_child_settled(struct visock_sock *child)
{
	struct visock_sock *lvsk = child->listener;
	struct sock *lsk = &lvsk->sk;
	bool queued = false;

	lock_sock(lsk);
	/* It moves to the accept queue, or frees its place. */
	WRITE_ONCE(lvsk->accept_hs, lvsk->accept_hs - 1);
	/*
	 * As TCP, accept() also returns a connection that was reset after
	 * it was set up (by the peer, or because its QP died): reading
	 * from it reports the error.  A connection whose handshake aborted
	 * was never set up - the client's connect() failed - and is
	 * dropped.
	 */
	if (lsk->sk_state == TCP_LISTEN &&
	    !test_bit(VISOCK_F_HS_ABORTED, &child->flags)) {
		child->listener = NULL;
		visock_accept_enqueue(lvsk, child);
		queued = true;
	} else if (lsk->sk_state == TCP_LISTEN) {
		/* Room for one more of the connections TCP holds. */
		visock_listen_kick(lvsk);
	}
	release_sock(lsk);
	if (queued)
		sock_put(lsk);
	else
		visock_child_destroy(child);
}

/*
 * May the listener take one more connection from TCP?  Children in their
 * handshake count as if queued: together at most sk_max_ack_backlog + 1,
 * what TCP's own accept queue holds.  The others wait in TCP's queue,
 * and beyond it TCP drops or answers with SYN cookies as for any
 * listener; a visock client's handshake then times out.
 */
static bool visock_accept_room(const struct visock_sock *lvsk)
{
	lockdep_assert_held(&lvsk->sk.sk_lock);
	return READ_ONCE(lvsk->accept_len) + lvsk->accept_hs <=
	       READ_ONCE(lvsk->sk.sk_max_ack_backlog);
}

/*
 * Move connections from the internal listener's accept queue to ours.
 * Runs on visock_wq with a reference on the listener.  It never waits for
 * the network: each child settles its own connection.
 */
static void visock_accept_work(struct work_struct *work)
{
	struct visock_sock *lvsk = container_of(work, struct visock_sock,
						accept_work);
	struct sock *lsk = &lvsk->sk;
	struct visock_sock *child;
	struct socket *tcp;
	int err;

	lock_sock(lsk);
	while (lsk->sk_state == TCP_LISTEN && visock_accept_room(lvsk)) {
		err = kernel_accept(lvsk->tcp, &tcp, O_NONBLOCK);
		if (err)
			break;
		child = visock_child_alloc(lvsk, tcp);
		if (!child) {
			sock_no_linger(tcp->sk);
			sock_release(tcp);
			continue;
		}
		/* Settled at once, or later by its handshake work. */
		if (!visock_decide(child)) {
			child->listener = NULL;
			sock_put(lsk);	/* still held by our caller */
			visock_accept_enqueue(lvsk, child);
		} else {
			/* Until visock_child_settled(), under our lock. */
			WRITE_ONCE(lvsk->accept_hs, lvsk->accept_hs + 1);
		}
	}
	release_sock(lsk);
	sock_put(lsk);
}

/*
 * Whether @vsk asks for a transform of its records.  A lazy switch
 * negotiates none (its SWITCH carries no offer): such a socket runs the
 * full handshake, which does.  One line per source of the request.
 */
static bool visock_wants_xform(const struct visock_sock *vsk)
{
	const struct visock_net *vn = visock_net(sock_net(&vsk->sk));

	return READ_ONCE(vsk->xform_opt) != VISOCK_XFORM_NONE ||
	       vsk->pol_xform != VISOCK_XFORM_NONE ||
	       READ_ONCE(vn->xform) != VISOCK_XFORM_NONE;
}

/*
 * The lazy start threshold @vsk proposes (connect(), before the SYN) or
 * takes (listen()), or 0: none for a socket that asks for a transform,
 * or the namespace's net.visock.lazy_bytes.
 */
static u32 visock_lazy_bytes_for(const struct visock_sock *vsk)
{
	if (visock_wants_xform(vsk))
		return 0;
	return visock_lazy_threshold(sock_net(&vsk->sk));
}

static int visock_listen(struct socket *sock, int backlog)
{
	struct sock *sk = sock->sk;
	struct visock_sock *vsk = visock_sk(sk);
	int one = 1;
	int err;

	lock_sock(sk);
	if (sk->sk_state != TCP_CLOSE && sk->sk_state != TCP_LISTEN) {
		err = -EINVAL;
		goto out;
	}
	visock_tcp_sync_opts(vsk);
	/*
	 * Whether this listener takes lazy starts is fixed here, so that
	 * every SYN-ACK of a connection (retransmissions too) answers the
	 * same (visock_tcp_synack_opt()).
	 */
	if (sk->sk_state != TCP_LISTEN)
		WRITE_ONCE(vsk->lazy_bytes, visock_lazy_bytes_for(vsk));
	/* The SYN-ACK hook and accepted children read the client's SYN. */
	err = vsk->tcp->ops->setsockopt(vsk->tcp, SOL_TCP, TCP_SAVE_SYN,
					KERNEL_SOCKPTR(&one), sizeof(one));
	if (err)
		goto out;
	err = kernel_listen(vsk->tcp, backlog);
	if (err)
		goto out;
	WRITE_ONCE(sk->sk_max_ack_backlog,
		   READ_ONCE(vsk->tcp->sk->sk_max_ack_backlog));
	if (sk->sk_state != TCP_LISTEN) {
		set_bit(VISOCK_F_LISTENER, &vsk->flags);
		sk->sk_state = TCP_LISTEN;
		/* Connections may have completed before we set TCP_LISTEN. */
		visock_listen_kick(vsk);
	}
out:
	release_sock(sk);
	return err;
}

static int visock_accept(VISOCK_ACCEPT_ARGS)
{
	struct sock *sk = sock->sk;
	struct visock_sock *lvsk = visock_sk(sk);
	DEFINE_WAIT_FUNC(wait, woken_wake_function);
	struct visock_sock *child = NULL;
	struct sock *nsk;
	long timeo;
	int err = 0;

	lock_sock(sk);
	if (sk->sk_state != TCP_LISTEN) {
		err = -EINVAL;
		goto out;
	}

	timeo = sock_rcvtimeo(sk, VISOCK_ACCEPT_FLAGS() & O_NONBLOCK);
	add_wait_queue(sk_sleep(sk), &wait);
	for (;;) {
		child = visock_accept_dequeue(lvsk);
		if (child)
			break;
		if (sk->sk_state != TCP_LISTEN) {
			err = -EINVAL;
			break;
		}
		err = visock_wait_err(timeo);
		if (err)
			break;
		release_sock(sk);
		if (list_empty_careful(&lvsk->accept_q))
			timeo = wait_woken(&wait, TASK_INTERRUPTIBLE, timeo);
		lock_sock(sk);
	}
	remove_wait_queue(sk_sleep(sk), &wait);
	if (!child)
		goto out;

	/* Room in our queue again: take more from TCP's. */
	visock_listen_kick(lvsk);

	nsk = &child->sk;
	lock_sock_nested(nsk, SINGLE_DEPTH_NESTING);
	sock_graft(nsk, newsock);
	newsock->state = SS_CONNECTED;
	if (VISOCK_HAVE_CUSTOM_SOCKOPT)
		set_bit(SOCK_CUSTOM_SOCKOPT, &newsock->flags);
	set_bit(SOCK_SUPPORT_ZC, &newsock->flags);
	release_sock(nsk);
out:
	release_sock(sk);
	return err;
}

/* Called with the listener's state already set to TCP_CLOSE. */
static void visock_listen_stop(struct visock_sock *lvsk)
{
	struct visock_sock *child;

	/* No more callbacks: nothing can queue the accept work again. */
	visock_tcp_detach(lvsk);
	if (cancel_work_sync(&lvsk->accept_work))
		sock_put(&lvsk->sk);
	while ((child = visock_accept_dequeue(lvsk)))
		visock_child_destroy(child);
}

/* ------------------------------------------------------------------ */
/* Connection setup and teardown                                       */
/* ------------------------------------------------------------------ */

/*
 * The internal TCP socket changed state (struct visock_mode_ops of TCP
 * mode).  Completes a non-blocking connect: the connection settles as
 * soon as TCP is established, before the application sees POLLOUT.
 */
static void visock_tcp_state_changed(struct visock_sock *vsk, int tcp_state)
{
	struct sock *sk = &vsk->sk;

	if (tcp_state == TCP_ESTABLISHED &&
	    READ_ONCE(sk->sk_state) == TCP_SYN_SENT) {
		WRITE_ONCE(sk->sk_state, TCP_ESTABLISHED);
		visock_decide(vsk);
	} else if (tcp_state == TCP_CLOSE &&
		 READ_ONCE(sk->sk_state) == TCP_SYN_SENT)
		WRITE_ONCE(sk->sk_state, TCP_CLOSE);
}

/*
 * TCP raises SIGURG for the owner of its own socket's file, which the
 * internal socket has not: raise it for the visock socket's owner, once
 * per urgent mark, before the readers are woken (as TCP does).
 */
static void visock_tcp_mode_urg(struct visock_sock *vsk)
{
	const struct tcp_sock *tp = tcp_sk(vsk->tcp->sk);
	u32 seq;

	if (!READ_ONCE(tp->urg_data))
		return;
	seq = READ_ONCE(tp->urg_seq);
	if (vsk->urg_signalled && vsk->urg_seq == seq)
		return;
	vsk->urg_seq = seq;
	vsk->urg_signalled = true;
	sk_send_sigurg(&vsk->sk);
}

/* TCP has bytes for a listener (new connections) or a TCP connection. */
static void visock_tcp_mode_data_ready(struct visock_sock *vsk)
{
	if (vsk->sk.sk_state == TCP_LISTEN) {
		visock_listen_kick(vsk);
		return;
	}
	visock_tcp_mode_urg(vsk);
	vsk->sk.sk_data_ready(&vsk->sk);
}

static void visock_tcp_mode_write_space(struct visock_sock *vsk)
{
	vsk->sk.sk_write_space(&vsk->sk);
}

static int visock_bind(struct socket *sock, struct visock_sockaddr_arg *addr,
		       int len)
{
	struct visock_sock *vsk = visock_sk(sock->sk);

	visock_tcp_sync_opts(vsk);
	return kernel_bind(vsk->tcp, addr, len);
}

/*
 * A reset that reached TCP after the peer's FIN (CLOSE_WAIT) is EPIPE
 * there; during the handshake it is the peer resetting the connection
 * being set up, which connect() reports as ECONNRESET.
 */
static int visock_connect_err(int err)
{
	return err == -EPIPE ? -ECONNRESET : err;
}

static int visock_connect(struct socket *sock,
			  struct visock_sockaddr_arg *addr, int len, int flags)
{
	struct sock *sk = sock->sk;
	struct visock_sock *vsk = visock_sk(sk);
	struct visock_policy_verdict pv;
	long timeo;
	u32 lazy;
	int err;

	lock_sock(sk);
	if (sk->sk_state == TCP_LISTEN) {
		release_sock(sk);
		return -EISCONN;
	}
	if (visock_settling(vsk) && sk->sk_state == TCP_ESTABLISHED) {
		/* TCP is up, the handshake still runs. */
		release_sock(sk);
		return -EALREADY;
	}
	if (sk->sk_state == TCP_CLOSE && vsk->mode == VISOCK_MODE_INIT) {
		sk->sk_state = TCP_SYN_SENT;
		/*
		 * Before the SYN: a denied destination gets no option
		 * (visock_tcp_syn_opt()) and settles on plain TCP.  The
		 * transform a rule names is for the handshake.
		 */
		visock_policy_get(sock_net(sk), visock_sockaddr(addr), len,
				  &pv);
		assign_bit(VISOCK_F_POLICY_TCP, &vsk->flags,
			   READ_ONCE(visock_net(sock_net(sk))->enable) &&
			   pv.action == VISOCK_POLICY_DENY);
		vsk->pol_xform = pv.xform;
		vsk->pol_xform_req = pv.xform_require;
		/*
		 * Propose a lazy start (visock_tcp_syn_opt()) only where a
		 * QP to the peer is up: the first connection to a peer sets
		 * one up with the handshake.  Never where a transform is
		 * asked for (visock_lazy_bytes_for()).
		 */
		vsk->lazy_bytes = 0;
		lazy = visock_lazy_bytes_for(vsk);
		if (READ_ONCE(visock_net(sock_net(sk))->enable) &&
		    !test_bit(VISOCK_F_POLICY_TCP, &vsk->flags) && lazy &&
		    visock_lgr_peer_up(sock_net(sk),
				       visock_sockaddr(addr), len))
			WRITE_ONCE(vsk->lazy_bytes, lazy);
	}
	release_sock(sk);

	visock_tcp_sync_opts(vsk);
	/* TCP blocks here for a blocking connect, without our lock held. */
	err = vsk->tcp->ops->connect(vsk->tcp, addr, len, flags);
	visock_tcp_consume_err(vsk, err);

	lock_sock(sk);
	if (!err) {
		if (sk->sk_state == TCP_SYN_SENT)
			WRITE_ONCE(sk->sk_state, TCP_ESTABLISHED);
		visock_decide(vsk);
	} else if (err && err != -EINPROGRESS && err != -EALREADY &&
		 inet_sk_state_load(vsk->tcp->sk) == TCP_CLOSE &&
		 sk->sk_state == TCP_SYN_SENT)
		sk->sk_state = TCP_CLOSE;
	if (!err)
		sock->state = SS_CONNECTED;
	release_sock(sk);

	if (err && err != -EINPROGRESS && err != -EALREADY && err != -EISCONN &&
	    test_bit(VISOCK_F_DECIDED, &vsk->flags)) {
		/*
		 * TCP got connected, then failed while visock set up the
		 * connection: the handshake knows best what happened (TCP
		 * may only say ECONNABORTED once the handshake consumed its
		 * error).
		 */
		timeo = sock_sndtimeo(sk, flags & O_NONBLOCK);
		visock_wait_settled(vsk, timeo);
		return visock_connect_err(sock_error(sk) ? : err);
	}
	if (!err && !test_bit(VISOCK_F_SETTLED, &vsk->flags)) {
		/* Like TCP's connect(): wait for the whole setup. */
		timeo = sock_sndtimeo(sk, flags & O_NONBLOCK);
		err = visock_wait_settled(vsk, timeo);
		if (err == -EAGAIN)
			err = -EINPROGRESS;
	}
	if (!err)
		err = sock_error(sk);
	return visock_connect_err(err);
}

static int visock_release(struct socket *sock)
{
	const struct visock_mode_ops *ops;
	struct sock *sk = sock->sk;
	struct visock_sock *vsk;
	bool listening;

	if (!sk)
		return 0;
	vsk = visock_sk(sk);
	visock_diag_unlink_sock(vsk);

	lock_sock(sk);
	set_bit(VISOCK_F_RELEASED, &vsk->flags);
	listening = test_bit(VISOCK_F_LISTENER, &vsk->flags);
	sk->sk_state = TCP_CLOSE;
	sk->sk_shutdown = SHUTDOWN_MASK;
	release_sock(sk);

	if (listening)
		visock_listen_stop(vsk);
	visock_hs_cancel(vsk);
	/* RDMA mode: deliver what was written, maybe in the background. */
	ops = READ_ONCE(vsk->ops);
	if (ops->close && ops->close(vsk)) {
		/* The mode's close work releases the vc and TCP socket. */
		lock_sock(sk);
		sock_orphan(sk);
		sock->sk = NULL;
		release_sock(sk);
		sock_put(sk);
		return 0;
	}
	visock_rdma_destroy_vc(vsk);

	/* TCP closes the connection, lingering if SO_LINGER says so. */
	if (vsk->tcp)
		visock_tcp_sync_opts(vsk);
	visock_tcp_release(vsk);

	lock_sock(sk);
	sock_orphan(sk);
	sock->sk = NULL;
	release_sock(sk);
	sock_put(sk);
	return 0;
}

static int visock_shutdown(struct socket *sock, int how)
{
	struct sock *sk = sock->sk;
	struct visock_sock *vsk = visock_sk(sk);
	int err;

	if (sk->sk_state == TCP_LISTEN) {
		/* Like TCP: shutting down reading stops a listener. */
		if (how != SHUT_RD && how != SHUT_RDWR)
			return how == SHUT_WR ? 0 : -EINVAL;
		lock_sock(sk);
		sk->sk_state = TCP_CLOSE;
		release_sock(sk);
		err = kernel_sock_shutdown(vsk->tcp, how);
		sk->sk_state_change(sk);
		return err;
	}
	return READ_ONCE(vsk->ops)->shutdown(vsk, how);
}

/**
 * visock_tcp_mode_shutdown() - shutdown() of a connection on TCP
 * @vsk: socket
 * @how: SHUT_RD, SHUT_WR or SHUT_RDWR
 *
 * Context: process context, no lock held.
 * Return: what TCP's shutdown() returns.
 */
int visock_tcp_mode_shutdown(struct visock_sock *vsk, int how)
{
	int err;

	err = kernel_sock_shutdown(vsk->tcp, how);
	visock_tcp_consume_err(vsk, err);
	return err;
}

/* ------------------------------------------------------------------ */
/* Data and control                                                    */
/* ------------------------------------------------------------------ */

static __poll_t visock_poll(struct file *file, struct socket *sock,
			    poll_table *wait)
{
	struct sock *sk = sock->sk;
	struct visock_sock *vsk = visock_sk(sk);

	sock_poll_wait(file, sock, wait);

	if (READ_ONCE(sk->sk_state) == TCP_LISTEN)
		return list_empty_careful(&vsk->accept_q) ? 0 :
		       EPOLLIN | EPOLLRDNORM;
	return READ_ONCE(vsk->ops)->poll(vsk, file);
}

/**
 * visock_tcp_mode_poll() - poll() of a connection on TCP
 * @vsk: socket, not listening
 * @file: the file polled
 *
 * TCP's view, without registering on TCP's wait queue (the caller
 * registered on the visock socket's, which TCP's callbacks wake).
 *
 * Context: process context, lockless.
 * Return: the events.
 */
__poll_t visock_tcp_mode_poll(struct visock_sock *vsk, struct file *file)
{
	struct sock *sk = &vsk->sk;
	struct sock *tsk = vsk->tcp->sk;
	__poll_t mask;

	/*
	 * SO_RCVLOWAT and SO_OOBINLINE decide POLLIN; 6.1 never shows us
	 * setting them.
	 */
	if (!VISOCK_HAVE_CUSTOM_SOCKOPT &&
	    READ_ONCE(tsk->sk_rcvlowat) != READ_ONCE(sk->sk_rcvlowat))
		WRITE_ONCE(tsk->sk_rcvlowat, READ_ONCE(sk->sk_rcvlowat));
	if (!VISOCK_HAVE_CUSTOM_SOCKOPT &&
	    sock_flag(tsk, SOCK_URGINLINE) != sock_flag(sk, SOCK_URGINLINE))
		sock_valbool_flag(tsk, SOCK_URGINLINE,
				  sock_flag(sk, SOCK_URGINLINE));
	/* TCP's view, without registering on TCP's wait queue. */
	mask = vsk->tcp->ops->poll(file, vsk->tcp, NULL) & ~EPOLLERR;
	/* No data events before the connection has settled. */
	if (visock_settling(vsk) && inet_sk_state_load(tsk) != TCP_CLOSE)
		mask &= ~(EPOLLIN | EPOLLRDNORM | EPOLLOUT | EPOLLWRNORM |
			  EPOLLWRBAND);
	if (READ_ONCE(sk->sk_err) ||
	    !skb_queue_empty_lockless(&tsk->sk_error_queue))
		mask |= EPOLLERR;
	return mask;
}

static int visock_getname(struct socket *sock, struct sockaddr *addr,
			  int peer)
{
	struct visock_sock *vsk = visock_sk(sock->sk);

	return vsk->tcp->ops->getname(vsk->tcp, addr, peer);
}

/*
 * SIOCOUTQ and SIOCOUTQNSD of a connection that fell back after sending
 * handshake messages: as TCP computes them, without those messages.
 */
static int visock_tcp_outq(struct visock_sock *vsk, unsigned int cmd,
			   unsigned long arg)
{
	const struct sock *tsk = vsk->tcp->sk;
	const struct tcp_sock *tp = tcp_sk(tsk);
	u32 start = vsk->tcp_app_seq, from;
	int answ = 0;

	if ((1 << inet_sk_state_load(tsk)) & (TCPF_SYN_SENT | TCPF_SYN_RECV))
		return put_user(0, (int __user *)arg);
	from = cmd == SIOCOUTQ ? READ_ONCE(tp->snd_una) :
				 READ_ONCE(tp->snd_nxt);
	if (before(from, start))
		from = start;
	if (after(READ_ONCE(tp->write_seq), from))
		answ = READ_ONCE(tp->write_seq) - from;
	return put_user(answ, (int __user *)arg);
}

static int visock_ioctl(struct socket *sock, unsigned int cmd,
			unsigned long arg)
{
	struct visock_sock *vsk = visock_sk(sock->sk);
	const struct visock_mode_ops *ops = READ_ONCE(vsk->ops);
	int err;

	if (ops->ioctl) {
		err = ops->ioctl(vsk, cmd, arg);
		if (err != -ENOIOCTLCMD)
			return err;
	}
	if ((cmd == SIOCOUTQ || cmd == SIOCOUTQNSD) &&
	    test_bit(VISOCK_F_APP_SEQ, &vsk->flags))
		return visock_tcp_outq(vsk, cmd, arg);
	return vsk->tcp->ops->ioctl(vsk->tcp, cmd, arg);
}

/*
 * A zerocopy send (MSG_ZEROCOPY with @msg->msg_ubuf, io_uring's SEND_ZC
 * and SENDMSG_ZC; the socket has SOCK_SUPPORT_ZC) reaches the mode's
 * sendmsg() unchanged.  On TCP (and while a lazy connection is still on
 * TCP) the internal TCP socket sends it as TCP does, pinning the pages
 * and completing the notification when TCP lets go of them.  In RDMA
 * mode the bytes are copied into the ring and @msg->msg_ubuf is left
 * alone: its owner's reference completes the notification once this
 * returns, when the caller's buffer is no longer read.
 */
static int visock_sendmsg(struct socket *sock, struct msghdr *msg,
			  size_t len)
{
	struct visock_sock *vsk = visock_sk(sock->sk);
	const struct visock_mode_ops *ops;
	int ret;

	if (visock_settling(vsk)) {
		long timeo = sock_sndtimeo(sock->sk,
					   msg->msg_flags & MSG_DONTWAIT);

		ret = visock_wait_settled(vsk, timeo);
		if (ret)
			return ret;
	}
	ops = READ_ONCE(vsk->ops);
	if ((msg->msg_flags & MSG_OOB) && !ops->urgent)
		return -EOPNOTSUPP;
	return ops->sendmsg(vsk, msg, len);
}

/**
 * visock_tcp_mode_sendmsg() - sendmsg() of a connection on TCP
 * @vsk: socket
 * @msg: the bytes
 * @len: their number
 *
 * Context: process context, no lock held.
 * Return: what TCP's sendmsg() returns.
 */
int visock_tcp_mode_sendmsg(struct visock_sock *vsk, struct msghdr *msg,
			    size_t len)
{
	int ret;

	visock_tcp_sync_opts(vsk);
	ret = vsk->tcp->ops->sendmsg(vsk->tcp, msg, len);
	visock_tcp_consume_err(vsk, ret);
	if (ret > 0)
		VISOCK_STAT_ADD(&vsk->sk, tcp_bytes_sent, ret);
	return ret;
}

static int visock_recvmsg(struct socket *sock, struct msghdr *msg,
			  size_t len, int flags)
{
	struct visock_sock *vsk = visock_sk(sock->sk);
	const struct visock_mode_ops *ops;
	int ret;

	if (visock_settling(vsk)) {
		long timeo = sock_rcvtimeo(sock->sk, flags & MSG_DONTWAIT);

		ret = visock_wait_settled(vsk, timeo);
		if (ret)
			return ret;
	}
	ops = READ_ONCE(vsk->ops);
	if ((flags & MSG_OOB) && !ops->urgent)
		return -EOPNOTSUPP;
	return ops->recvmsg(vsk, msg, len, flags);
}

/**
 * visock_tcp_mode_recvmsg() - recvmsg() of a connection on TCP
 * @vsk: socket
 * @msg: where the bytes go
 * @len: room there
 * @flags: MSG_* flags
 *
 * Context: process context, no lock held.
 * Return: what TCP's recvmsg() returns.
 */
int visock_tcp_mode_recvmsg(struct visock_sock *vsk, struct msghdr *msg,
			    size_t len, int flags)
{
	int ret;

	visock_tcp_sync_opts(vsk);
	ret = vsk->tcp->ops->recvmsg(vsk->tcp, msg, len, flags);
	visock_tcp_consume_err(vsk, ret);
	if (ret > 0 && !(flags & MSG_PEEK))
		VISOCK_STAT_ADD(&vsk->sk, tcp_bytes_rcvd, ret);
	return ret;
}

/*
 * TCP mode: every call goes to the internal TCP socket, urgent data
 * included.  Also the mode of a connection not decided yet and of a
 * listener.
 */
const struct visock_mode_ops visock_tcp_mode_ops = {
	.sendmsg		= visock_tcp_mode_sendmsg,
	.recvmsg		= visock_tcp_mode_recvmsg,
	.poll			= visock_tcp_mode_poll,
	.shutdown		= visock_tcp_mode_shutdown,
	.tcp_data_ready		= visock_tcp_mode_data_ready,
	.tcp_write_space	= visock_tcp_mode_write_space,
	.tcp_state_change	= visock_tcp_state_changed,
	.urgent			= true,
};

/**
 * visock_set_mode() - move a connection to another mode
 * @vsk: socket
 * @mode: enum visock_mode
 *
 * Sets @vsk->mode and @vsk->ops: the operations of a lazy connection
 * (VISOCK_F_LAZY, set before) whatever @mode, else those of @mode.
 *
 * Context: any; see struct visock_sock.mode for who may call it when.
 */
void visock_set_mode(struct visock_sock *vsk, u8 mode)
{
	const struct visock_mode_ops *ops;

	if (test_bit(VISOCK_F_LAZY, &vsk->flags))
		ops = &visock_lazy_mode_ops;
	else if (mode == VISOCK_MODE_HANDSHAKE)
		ops = &visock_hs_mode_ops;
	else if (mode == VISOCK_MODE_RDMA)
		ops = &visock_rdma_mode_ops;
	else
		ops = &visock_tcp_mode_ops;
	WRITE_ONCE(vsk->ops, ops);
	WRITE_ONCE(vsk->mode, mode);
}

#define VISOCK_SOCKOPT_MAX	64

/*
 * SO_REUSEPORT, and VISOCK_REUSEPORT for kernels whose socket layer
 * refuses SO_REUSEPORT on non-inet sockets: TCP acts on it, the visock
 * socket records it for getsockopt().  @buf is a kernel copy of the int.
 */
static int visock_set_reuseport(struct visock_sock *vsk, void *buf,
				unsigned int len)
{
	struct sock *sk = &vsk->sk;
	int err;

	err = sock_setsockopt(vsk->tcp, SOL_SOCKET, SO_REUSEPORT,
			      KERNEL_SOCKPTR(buf), len);
	if (err)
		return err;
	lock_sock(sk);
	sk->sk_reuseport = vsk->tcp->sk->sk_reuseport;
	release_sock(sk);
	return 0;
}

static int visock_setsockopt_socket(struct socket *sock, int optname,
				    sockptr_t optval, unsigned int optlen)
{
	struct visock_sock *vsk = visock_sk(sock->sk);
	u8 buf[VISOCK_SOCKOPT_MAX];
	unsigned int len;
	int err;

	/* Those TCP acts on go to both sockets, the others to ours only. */
	if (!visock_sockopt_forwarded(SOL_SOCKET, optname))
		return sock_setsockopt(sock, SOL_SOCKET, optname, optval,
				       optlen);

	/*
	 * One copy for both sockets, so that they see the same value (of
	 * SO_TIMESTAMPING, the internal socket gets the receive flags).
	 */
	len = min_t(unsigned int, optlen, sizeof(buf));
	if (copy_from_sockptr(buf, optval, len))
		return -EFAULT;
	if (optname == SO_REUSEPORT)
		return visock_set_reuseport(vsk, buf, len);
	err = sock_setsockopt(sock, SOL_SOCKET, optname, KERNEL_SOCKPTR(buf),
			      len);
	if (err)
		return err;
	if (optname == SO_TIMESTAMPING_OLD || optname == SO_TIMESTAMPING_NEW)
		visock_sockopt_tcp_tstamp(buf, len);
	return sock_setsockopt(vsk->tcp, SOL_SOCKET, optname,
			       KERNEL_SOCKPTR(buf), len);
}

static int visock_setsockopt_visock(struct visock_sock *vsk, int optname,
				    sockptr_t optval, unsigned int optlen)
{
	int val;

	switch (optname) {
	case VISOCK_REUSEPORT:
		if (optlen < sizeof(val))
			return -EINVAL;
		if (copy_from_sockptr(&val, optval, sizeof(val)))
			return -EFAULT;
		return visock_set_reuseport(vsk, &val, sizeof(val));
	case VISOCK_TRANSFORM:
		return visock_sockopt_set_xform(vsk, optval, optlen);
	default:
		return -ENOPROTOOPT;
	}
}

static int visock_setsockopt(struct socket *sock, int level, int optname,
			     sockptr_t optval, unsigned int optlen)
{
	struct visock_sock *vsk = visock_sk(sock->sk);

	if (level == SOL_SOCKET)
		return visock_setsockopt_socket(sock, optname, optval, optlen);
	if (level == SOL_VISOCK)
		return visock_setsockopt_visock(vsk, optname, optval, optlen);
	/* The internal socket carries visock's messages too. */
	if (!visock_sockopt_forwarded(level, optname))
		return -EOPNOTSUPP;
	visock_tcp_sync_opts(vsk);
	return vsk->tcp->ops->setsockopt(vsk->tcp, level, optname, optval,
					 optlen);
}

static int visock_getsockopt_info(struct visock_sock *vsk,
				  char __user *optval, int __user *optlen,
				  int len)
{
	struct visock_info info;

	if (len < 0)
		return -EINVAL;
	lock_sock(&vsk->sk);
	visock_diag_info(vsk, &info);
	if (READ_ONCE(vsk->lazy_bytes) && test_bit(VISOCK_F_DECIDED, &vsk->flags))
		info.vi_flags |= VISOCK_INFO_F_LAZY;
	release_sock(&vsk->sk);

	len = min_t(int, len, sizeof(info));
	if (put_user(len, optlen) || copy_to_user(optval, &info, len))
		return -EFAULT;
	return 0;
}

static int visock_getsockopt(struct socket *sock, int level, int optname,
			     char __user *optval, int __user *optlen)
{
	struct visock_sock *vsk = visock_sk(sock->sk);
	u32 val;
	int len;

	if (level != SOL_VISOCK) {
		if (!visock_sockopt_forwarded(level, optname))
			return -EOPNOTSUPP;
		visock_tcp_sync_opts(vsk);
		return vsk->tcp->ops->getsockopt(vsk->tcp, level, optname,
						 optval, optlen);
	}

	if (get_user(len, optlen))
		return -EFAULT;
	if (optname == VISOCK_INFO)
		return visock_getsockopt_info(vsk, optval, optlen, len);
	if (len < (int)sizeof(val))
		return -EINVAL;
	switch (optname) {
	case VISOCK_MODE:
		val = READ_ONCE(vsk->mode);
		break;
	case VISOCK_FALLBACK_REASON:
		val = READ_ONCE(vsk->fb_reason);
		break;
	case VISOCK_REUSEPORT:
		val = vsk->sk.sk_reuseport;	/* a bit field */
		break;
	case VISOCK_TRANSFORM:
		val = visock_sockopt_get_xform(vsk);
		break;
	default:
		return -ENOPROTOOPT;
	}
	len = sizeof(val);
	if (put_user(len, optlen) || copy_to_user(optval, &val, len))
		return -EFAULT;
	return 0;
}

const struct proto_ops visock_stream_ops = {
	.family		= PF_VISOCK,
	.owner		= THIS_MODULE,
	.release	= visock_release,
	.bind		= visock_bind,
	.connect	= visock_connect,
	.socketpair	= sock_no_socketpair,
	.accept		= visock_accept,
	.getname	= visock_getname,
	.poll		= visock_poll,
	.ioctl		= visock_ioctl,
	.listen		= visock_listen,
	.shutdown	= visock_shutdown,
	.setsockopt	= visock_setsockopt,
	.getsockopt	= visock_getsockopt,
	.sendmsg	= visock_sendmsg,
	.recvmsg	= visock_recvmsg,
	.mmap		= sock_no_mmap,
};
