// SPDX-License-Identifier: GPL-2.0
/*
 * visock: the internal TCP socket of a visock socket.
 *
 * Every AF_VISOCK socket owns one ordinary TCP socket.  It is created as
 * a user socket (kern=0) in the namespace of the visock socket, so it
 * holds a reference on that namespace for as long as TCP keeps it alive
 * (TIME_WAIT, FIN_WAIT, retransmissions after close), is subject to the
 * same LSM and cgroup BPF policies as the application's own TCP sockets
 * would be, and shows up in ss(8) like any TCP socket.
 *
 * visock takes over four callbacks of that socket.  Each one first runs
 * the callback TCP installed (so that threads blocked inside TCP, e.g. in
 * a forwarded blocking recvmsg(), still wake up) and then tells the
 * visock socket through the operations of its mode (struct
 * visock_mode_ops, the only way this file calls the layers above it),
 * which wake the waiters of the visock socket, where poll(), epoll and
 * our own blocking calls wait.  The callbacks find the visock socket through
 * sk_user_data under the TCP socket's sk_callback_lock held for reading;
 * visock_tcp_detach() takes it for writing, so once it returns no
 * callback can still see the visock socket.
 *
 * Errors: getsockopt(SO_ERROR) always reads the visock socket, so TCP's
 * error is copied to it when TCP reports one.  A forwarded call that
 * returns the same error consumes the copy (visock_tcp_consume_err()), so
 * an error is reported once, as TCP would (visock_inner.c).
 */
#include <linux/net.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "visock.h"
#include "visock_ib.h"
#include "visock_inner.h"
#include "visock_sockopt.h"
#include "visock_tcp.h"

/* Caller holds tsk->sk_callback_lock, for reading or writing. */
static struct visock_sock *visock_tcp_owner(struct sock *tsk)
{
	void __rcu **slot = (void __rcu **)&tsk->sk_user_data;
	uintptr_t p;

	p = (uintptr_t)rcu_dereference_protected(*slot,
			lockdep_is_held(&tsk->sk_callback_lock));
	return (struct visock_sock *)(p & SK_USER_DATA_PTRMASK);
}

static void visock_tcp_data_ready(struct sock *tsk)
{
	struct visock_sock *vsk;

	read_lock_bh(&tsk->sk_callback_lock);
	vsk = visock_tcp_owner(tsk);
	if (vsk) {
		vsk->saved_data_ready(tsk);
		READ_ONCE(vsk->ops)->tcp_data_ready(vsk);
	}
	read_unlock_bh(&tsk->sk_callback_lock);
}

static void visock_tcp_write_space(struct sock *tsk)
{
	struct visock_sock *vsk;

	read_lock_bh(&tsk->sk_callback_lock);
	vsk = visock_tcp_owner(tsk);
	if (vsk) {
		vsk->saved_write_space(tsk);
		READ_ONCE(vsk->ops)->tcp_write_space(vsk);
	}
	read_unlock_bh(&tsk->sk_callback_lock);
}

static void visock_tcp_state_change(struct sock *tsk)
{
	struct visock_sock *vsk;

	read_lock_bh(&tsk->sk_callback_lock);
	vsk = visock_tcp_owner(tsk);
	if (vsk) {
		vsk->saved_state_change(tsk);
		READ_ONCE(vsk->ops)->tcp_state_change(vsk,
						      inet_sk_state_load(tsk));
		vsk->sk.sk_state_change(&vsk->sk);
	}
	read_unlock_bh(&tsk->sk_callback_lock);
}

static void visock_tcp_error_report(struct sock *tsk)
{
	const struct visock_mode_ops *ops;
	struct visock_sock *vsk;
	int err;

	read_lock_bh(&tsk->sk_callback_lock);
	vsk = visock_tcp_owner(tsk);
	if (vsk) {
		vsk->saved_error_report(tsk);
		err = READ_ONCE(tsk->sk_err);
		/*
		 * A connection that reported its end already (an RDMA one:
		 * the peer's abort flag precedes its TCP reset) must not
		 * report the reset as a second one.
		 */
		ops = READ_ONCE(vsk->ops);
		if (err && ops->tcp_ended && ops->tcp_ended(vsk))
			err = 0;
		if (err) {
			visock_inner_set_err(&vsk->sk, &vsk->err_mirror, err);
			vsk->sk.sk_error_report(&vsk->sk);
		}
	}
	read_unlock_bh(&tsk->sk_callback_lock);
}

/**
 * visock_is_internal_tcp() - is @sk the internal TCP socket of a visock one
 * @sk: a full TCP socket
 *
 * Context: any; lockless (compares a function pointer that only visock
 * installs).
 * Return: true if visock_tcp_attach() installed its callbacks on @sk or on
 * the listener @sk was cloned from.
 */
bool visock_is_internal_tcp(const struct sock *sk)
{
	return READ_ONCE(sk->sk_state_change) == visock_tcp_state_change;
}

/**
 * visock_tcp_attach() - make @tcp the internal TCP socket of @vsk
 * @vsk: visock socket, not yet visible to other threads
 * @tcp: TCP socket to take over; @vsk owns it from now on
 * @from: listener whose saved callbacks @tcp inherited when it was
 *	cloned, or NULL when @tcp was created fresh
 *
 * Context: process context.
 */
void visock_tcp_attach(struct visock_sock *vsk, struct socket *tcp,
		       const struct visock_sock *from)
{
	struct sock *tsk = tcp->sk;

	vsk->tcp = tcp;
	write_lock_bh(&tsk->sk_callback_lock);
	if (from) {
		vsk->saved_data_ready = from->saved_data_ready;
		vsk->saved_write_space = from->saved_write_space;
		vsk->saved_state_change = from->saved_state_change;
		vsk->saved_error_report = from->saved_error_report;
	} else {
		vsk->saved_data_ready = tsk->sk_data_ready;
		vsk->saved_write_space = tsk->sk_write_space;
		vsk->saved_state_change = tsk->sk_state_change;
		vsk->saved_error_report = tsk->sk_error_report;
	}
	__rcu_assign_sk_user_data_with_flags(tsk, vsk, SK_USER_DATA_NOCOPY);
	tsk->sk_data_ready = visock_tcp_data_ready;
	tsk->sk_write_space = visock_tcp_write_space;
	tsk->sk_state_change = visock_tcp_state_change;
	tsk->sk_error_report = visock_tcp_error_report;
	write_unlock_bh(&tsk->sk_callback_lock);
}

/**
 * visock_tcp_detach() - give the internal TCP socket its callbacks back
 * @vsk: visock socket
 *
 * After this returns, no callback of the TCP socket refers to @vsk.
 * Calling it again is harmless.
 *
 * Context: process context.
 */
void visock_tcp_detach(struct visock_sock *vsk)
{
	struct sock *tsk = vsk->tcp->sk;

	write_lock_bh(&tsk->sk_callback_lock);
	if (visock_tcp_owner(tsk) == vsk) {
		rcu_assign_sk_user_data(tsk, NULL);
		tsk->sk_data_ready = vsk->saved_data_ready;
		tsk->sk_write_space = vsk->saved_write_space;
		tsk->sk_state_change = vsk->saved_state_change;
		tsk->sk_error_report = vsk->saved_error_report;
	}
	write_unlock_bh(&tsk->sk_callback_lock);
}

/**
 * visock_tcp_create() - create the internal TCP socket of a new socket
 * @vsk: visock socket being created
 * @net: its network namespace
 *
 * Context: process context, the task calling socket(2).
 * Return: 0 or a negative errno from socket creation.
 */
int visock_tcp_create(struct visock_sock *vsk, struct net *net)
{
	struct socket *tcp;
	int err;

	err = __sock_create(net, vsk->family, SOCK_STREAM, IPPROTO_TCP,
			    &tcp, 0);
	if (err)
		return err;
	visock_tcp_attach(vsk, tcp, NULL);
	return 0;
}

/**
 * visock_tcp_release() - detach and release the internal TCP socket
 * @vsk: visock socket being closed
 *
 * TCP then closes the connection the way the options set on it say:
 * gracefully, or with a reset for SO_LINGER with a zero timeout.
 *
 * Context: process context; may sleep for SO_LINGER.
 */
void visock_tcp_release(struct visock_sock *vsk)
{
	struct socket *tcp = vsk->tcp;

	if (!tcp)
		return;
	visock_tcp_detach(vsk);
	vsk->tcp = NULL;
	sock_release(tcp);
}

/*
 * The receive timestamp options of @sk on the internal socket @tsock, as
 * visock_setsockopt() passes them on where it sees them: SO_TIMESTAMP and
 * SO_TIMESTAMPNS (old or new form), and SO_TIMESTAMPING's receive flags.
 * Set through the socket layer, which turns the stack's stamping on and
 * off with them.
 */
static void visock_tcp_sync_tstamp(struct sock *sk, struct socket *tsock)
{
	bool want = sock_flag(sk, SOCK_RCVTSTAMP);
	bool ns = sock_flag(sk, SOCK_RCVTSTAMPNS);
	bool new = sock_flag(sk, SOCK_TSTAMP_NEW);
	struct sock *tsk = tsock->sk;
	u32 flags = READ_ONCE(sk->sk_tsflags);
	int opt, val;

	visock_sockopt_tcp_tstamp((u8 *)&flags, sizeof(flags));
	if (READ_ONCE(tsk->sk_tsflags) != flags ||
	    (flags && sock_flag(tsk, SOCK_TSTAMP_NEW) != new)) {
		opt = new ? SO_TIMESTAMPING_NEW : SO_TIMESTAMPING_OLD;
		val = flags;
		sock_setsockopt(tsock, SOL_SOCKET, opt, KERNEL_SOCKPTR(&val),
				sizeof(val));
	}
	if (sock_flag(tsk, SOCK_RCVTSTAMP) != want ||
	    (want && (sock_flag(tsk, SOCK_RCVTSTAMPNS) != ns ||
		      sock_flag(tsk, SOCK_TSTAMP_NEW) != new))) {
		if (ns)
			opt = new ? SO_TIMESTAMPNS_NEW : SO_TIMESTAMPNS_OLD;
		else
			opt = new ? SO_TIMESTAMP_NEW : SO_TIMESTAMP_OLD;
		val = want;
		sock_setsockopt(tsock, SOL_SOCKET, opt, KERNEL_SOCKPTR(&val),
				sizeof(val));
	}
}

/**
 * visock_tcp_sync_opts() - bring the internal TCP socket up to date
 * @vsk: visock socket
 *
 * setsockopt(SOL_SOCKET, ...) lands on the visock socket.  Where the
 * kernel lets visock see those calls (VISOCK_HAVE_CUSTOM_SOCKOPT) they are
 * mirrored at once and only a consumed error is synced here; on older
 * kernels this function makes sure that the TCP socket uses the visock
 * socket's values before any call that depends on them: those of every
 * inner socket (visock_inner_sync_opts()), then the linger time and
 * flag, SO_OOBINLINE, keepalive, the receive timestamp options and,
 * before bind()/connect()/listen(), the bound device.  It only writes
 * what differs.
 *
 * Context: process context; takes the TCP socket's lock when keepalive
 * or a timestamp option changes.
 */
void visock_tcp_sync_opts(struct visock_sock *vsk)
{
	struct sock *sk = &vsk->sk;
	struct sock *tsk = vsk->tcp->sk;
	bool closed = inet_sk_state_load(tsk) == TCP_CLOSE;
	bool keep;

	/* The reuse flags only matter before bind()/connect()/listen(). */
	visock_inner_sync_opts(sk, tsk, &vsk->err_mirror, closed);
	/* Mirrored by visock_setsockopt() as they are set. */
	if (VISOCK_HAVE_CUSTOM_SOCKOPT)
		return;

	if (READ_ONCE(tsk->sk_lingertime) != READ_ONCE(sk->sk_lingertime))
		WRITE_ONCE(tsk->sk_lingertime, READ_ONCE(sk->sk_lingertime));
	if (closed && READ_ONCE(sk->sk_bound_dev_if) &&
	    !READ_ONCE(tsk->sk_bound_dev_if))
		WRITE_ONCE(tsk->sk_bound_dev_if,
			   READ_ONCE(sk->sk_bound_dev_if));
	if (sock_flag(sk, SOCK_LINGER) != sock_flag(tsk, SOCK_LINGER))
		sock_valbool_flag(tsk, SOCK_LINGER,
				  sock_flag(sk, SOCK_LINGER));
	if (sock_flag(sk, SOCK_URGINLINE) != sock_flag(tsk, SOCK_URGINLINE))
		sock_valbool_flag(tsk, SOCK_URGINLINE,
				  sock_flag(sk, SOCK_URGINLINE));

	keep = sock_flag(sk, SOCK_KEEPOPEN);
	if (keep != sock_flag(tsk, SOCK_KEEPOPEN)) {
		lock_sock(tsk);
		if (tsk->sk_prot->keepalive)
			tsk->sk_prot->keepalive(tsk, keep);
		sock_valbool_flag(tsk, SOCK_KEEPOPEN, keep);
		release_sock(tsk);
	}
	visock_tcp_sync_tstamp(sk, vsk->tcp);
}

/* What we announce in a SYN or SYN-ACK sent from namespace @net. */
static bool visock_local_synopt(const struct net *net,
				struct visock_synopt *opt)
{
	if (!READ_ONCE(visock_net(net)->enable))
		return false;
	opt->version = VISOCK_TCPOPT_VERSION;
	opt->flags = visock_ib_device_count() ? VISOCK_TCPOPT_F_RDMA : 0;
	return true;
}

/**
 * visock_tcp_syn_opt() - should this SYN carry the visock option
 * @tsk: full TCP socket sending a SYN
 * @opt: filled with the option to add
 *
 * Only internal sockets of visock sockets in a namespace with
 * net.visock.enable=1 announce visock, unless the destination policy
 * denied the destination (VISOCK_F_POLICY_TCP, set by connect() before
 * the SYN).  Records what was announced.
 *
 * Context: netfilter LOCAL_OUT hook, BH disabled or process context.
 * Return: true if the option should be added.
 */
bool visock_tcp_syn_opt(struct sock *tsk, struct visock_synopt *opt)
{
	struct visock_sock *vsk;
	bool ret = false;

	if (!visock_is_internal_tcp(tsk))
		return false;
	read_lock_bh(&tsk->sk_callback_lock);
	vsk = visock_tcp_owner(tsk);
	if (vsk && !test_bit(VISOCK_F_POLICY_TCP, &vsk->flags) &&
	    visock_local_synopt(sock_net(tsk), opt)) {
		if (opt->flags & VISOCK_TCPOPT_F_RDMA)
			opt->flags |= visock_tcpopt_lazy_flags(READ_ONCE(vsk->lazy_bytes));
		vsk->local_opt = *opt;
		set_bit(VISOCK_F_SYN_OPT, &vsk->flags);
		ret = true;
	}
	read_unlock_bh(&tsk->sk_callback_lock);
	return ret;
}

/**
 * visock_tcp_synack_opt() - should this SYN-ACK echo the visock option
 * @listener: the TCP listener the SYN-ACK answers for
 * @peer: option found in the client's SYN
 * @opt: filled with the option to add
 *
 * A lazy start the client proposed is echoed as proposed if both sides
 * have a device and the visock listener took lazy starts when it started
 * listening.
 *
 * Context: netfilter LOCAL_OUT hook.
 * Return: true if @listener is the internal socket of a visock listener
 * in a namespace with visock enabled and @peer speaks a version we can
 * negotiate with.
 */
bool visock_tcp_synack_opt(struct sock *listener,
			   const struct visock_synopt *peer,
			   struct visock_synopt *opt)
{
	struct visock_sock *lvsk;

	if (!visock_is_internal_tcp(listener) || !peer->version)
		return false;
	if (!visock_local_synopt(sock_net(listener), opt))
		return false;
	if (!(opt->flags & VISOCK_TCPOPT_F_RDMA) ||
	    !(peer->flags & VISOCK_TCPOPT_F_RDMA) ||
	    !visock_tcpopt_lazy_bytes(peer->flags))
		return true;
	read_lock_bh(&listener->sk_callback_lock);
	lvsk = visock_tcp_owner(listener);
	if (lvsk && READ_ONCE(lvsk->lazy_bytes))
		opt->flags |= peer->flags & (VISOCK_TCPOPT_F_LAZY |
					     VISOCK_TCPOPT_LAZY_MASK);
	read_unlock_bh(&listener->sk_callback_lock);
	return true;
}

/**
 * visock_tcp_peer_opt() - the peer's SYN-ACK carried the visock option
 * @tsk: the connecting internal TCP socket it was addressed to
 * @opt: the decoded option
 *
 * Called before TCP processes the SYN-ACK, so the state change to
 * ESTABLISHED that follows sees it.
 *
 * Context: netfilter hook on the receive path, BH disabled.
 */
void visock_tcp_peer_opt(struct sock *tsk, const struct visock_synopt *opt)
{
	struct visock_sock *vsk;

	if (!visock_is_internal_tcp(tsk))
		return;
	read_lock_bh(&tsk->sk_callback_lock);
	vsk = visock_tcp_owner(tsk);
	if (vsk && test_bit(VISOCK_F_SYN_OPT, &vsk->flags) &&
	    !test_bit(VISOCK_F_PEER_OPT, &vsk->flags)) {
		vsk->peer_opt = *opt;
		/* Pairs with test_bit() + smp_rmb() in the handshake. */
		smp_wmb();
		set_bit(VISOCK_F_PEER_OPT, &vsk->flags);
	}
	read_unlock_bh(&tsk->sk_callback_lock);
}

/**
 * visock_tcp_peek_at() - copy received bytes from inside TCP's queue
 * @tcp: the internal TCP socket
 * @off: offset of the first byte to copy from the next byte the
 *	application would read
 * @buf: destination
 * @len: bytes wanted
 *
 * Reads what the peer sent beyond bytes the application has not read
 * yet, leaving the queue as it is (a lazy connection's SWITCH message,
 * visock_lazy.c).  Only the in-order receive queue is looked at.
 *
 * Context: process context, may sleep (takes the TCP socket's lock).
 * Return: bytes copied, from 0 (nothing at @off yet) to @len.
 */
int visock_tcp_peek_at(struct socket *tcp, u32 off, u8 *buf, u32 len)
{
	struct sock *tsk = tcp->sk;
	struct sk_buff *skb;
	u32 seq, got = 0;

	lock_sock(tsk);
	seq = tcp_sk(tsk)->copied_seq + off;
	skb_queue_walk(&tsk->sk_receive_queue, skb) {
		u32 start = TCP_SKB_CB(skb)->seq;
		u32 end = start + skb->len;
		u32 at = seq + got, n;

		if (got == len)
			break;
		if (before(at, start) || !before(at, end))
			continue;
		n = min(len - got, end - at);
		if (skb_copy_bits(skb, at - start, buf + got, n))
			break;
		got += n;
	}
	release_sock(tsk);
	return got;
}
