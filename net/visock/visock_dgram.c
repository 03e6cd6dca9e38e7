// SPDX-License-Identifier: GPL-2.0
/*
 * visock: datagram sockets with the semantics of UDP.
 *
 * A visock datagram socket owns one ordinary UDP socket of its family
 * (IPv4 or IPv6), created as a user socket (kern=0) in the socket's
 * namespace: its buffers are UDP's, charged to the memory cgroup of the
 * task that created the socket, and the LSM and cgroup BPF hooks see it
 * as they would see the application's own UDP socket.  Every call is
 * forwarded to it, so datagram boundaries, MSG_TRUNC, MSG_PEEK,
 * MSG_DONTWAIT, timeouts, connect(AF_UNSPEC), SO_REUSEPORT, SO_RCVBUF,
 * drops on a full receive buffer, SO_RXQ_OVFL, ancillary data
 * (IP_PKTINFO, IPV6_RECVPKTINFO, timestamps) and the error queue are
 * exactly UDP's.
 *
 * Paths.  Each datagram sent goes through visock_dgram_path(), the one
 * place that decides whether it can travel over RDMA; the answer and its
 * reason are counted (enum visock_dgram_path, /proc/net/visock).  No RDMA
 * datagram transport exists yet, so the answer is always UDP.  On the
 * receive side the UDP socket's queue is the only queue: datagrams a
 * future RDMA path receives will be queued there too, with UDP's
 * accounting and drop rules, so that readers, poll() and the counters
 * need not know which path a datagram took.
 *
 * Waiting.  Blocking calls wait inside UDP, on the UDP socket's wait
 * queue.  poll() and epoll wait on the visock socket's queue; UDP's
 * callbacks (after running the ones UDP installed, which wake its own
 * waiters) wake it.  The callbacks find the visock socket through
 * sk_user_data under the UDP socket's sk_callback_lock held for reading;
 * visock_dgram_detach() takes it for writing, so once it returns no
 * callback can reach the visock socket.
 *
 * Errors.  getsockopt(SO_ERROR) reads the visock socket, so an error UDP
 * reports is copied there; a forwarded call that returns it, or
 * getsockopt(SO_ERROR) reading it, consumes it on both sockets, so that
 * each error is reported once, as by UDP (visock_inner.c).
 *
 * Locks: none of the visock socket's own around forwarded calls; UDP
 * takes its socket's lock itself.  visock never holds the lock of one
 * socket while taking the other's.
 */
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/poll.h>
#include <linux/sockptr.h>
#include <net/ipv6.h>
#include <net/sock.h>

#include "visock.h"
#include "visock_dgram.h"
#include "visock_inner.h"
#include "visock_mem.h"
#include "visock_stats.h"

/* Largest SOL_SOCKET option value copied once for both sockets. */
#define VISOCK_DGRAM_OPT_MAX	64

static struct proto visock_dgram_proto = {
	.name		= "VISOCK_DGRAM",
	.owner		= THIS_MODULE,
	.obj_size	= sizeof(struct visock_dgram_sock),
	VISOCK_MEM_PROTO_FIELDS,
};

/* Caller holds usk->sk_callback_lock, for reading or writing. */
static struct visock_dgram_sock *visock_dgram_owner(struct sock *usk)
{
	void __rcu **slot = (void __rcu **)&usk->sk_user_data;
	uintptr_t p;

	p = (uintptr_t)rcu_dereference_protected(*slot,
			lockdep_is_held(&usk->sk_callback_lock));
	return (struct visock_dgram_sock *)(p & SK_USER_DATA_PTRMASK);
}

static void visock_dgram_data_ready(struct sock *usk)
{
	struct visock_dgram_sock *vds;

	read_lock_bh(&usk->sk_callback_lock);
	vds = visock_dgram_owner(usk);
	if (vds) {
		vds->saved_data_ready(usk);
		vds->inet.sk.sk_data_ready(&vds->inet.sk);
	}
	read_unlock_bh(&usk->sk_callback_lock);
}

static void visock_dgram_write_space(struct sock *usk)
{
	struct visock_dgram_sock *vds;

	read_lock_bh(&usk->sk_callback_lock);
	vds = visock_dgram_owner(usk);
	if (vds) {
		vds->saved_write_space(usk);
		vds->inet.sk.sk_write_space(&vds->inet.sk);
	}
	read_unlock_bh(&usk->sk_callback_lock);
}

static void visock_dgram_state_change(struct sock *usk)
{
	struct visock_dgram_sock *vds;

	read_lock_bh(&usk->sk_callback_lock);
	vds = visock_dgram_owner(usk);
	if (vds) {
		vds->saved_state_change(usk);
		vds->inet.sk.sk_state_change(&vds->inet.sk);
	}
	read_unlock_bh(&usk->sk_callback_lock);
}

static void visock_dgram_error_report(struct sock *usk)
{
	struct visock_dgram_sock *vds;
	int err;

	read_lock_bh(&usk->sk_callback_lock);
	vds = visock_dgram_owner(usk);
	if (vds) {
		vds->saved_error_report(usk);
		err = READ_ONCE(usk->sk_err);
		if (err)
			visock_inner_set_err(&vds->inet.sk, &vds->err_mirror,
					     err);
		/* Also for what only went to the error queue. */
		sk_error_report(&vds->inet.sk);
	}
	read_unlock_bh(&usk->sk_callback_lock);
}

static void visock_dgram_attach(struct visock_dgram_sock *vds,
				struct socket *udp)
{
	struct sock *usk = udp->sk;

	vds->udp = udp;
	write_lock_bh(&usk->sk_callback_lock);
	vds->saved_data_ready = usk->sk_data_ready;
	vds->saved_write_space = usk->sk_write_space;
	vds->saved_state_change = usk->sk_state_change;
	vds->saved_error_report = usk->sk_error_report;
	__rcu_assign_sk_user_data_with_flags(usk, vds, SK_USER_DATA_NOCOPY);
	usk->sk_data_ready = visock_dgram_data_ready;
	usk->sk_write_space = visock_dgram_write_space;
	usk->sk_state_change = visock_dgram_state_change;
	usk->sk_error_report = visock_dgram_error_report;
	write_unlock_bh(&usk->sk_callback_lock);
}

static void visock_dgram_detach(struct visock_dgram_sock *vds)
{
	struct sock *usk = vds->udp->sk;

	write_lock_bh(&usk->sk_callback_lock);
	if (visock_dgram_owner(usk) == vds) {
		rcu_assign_sk_user_data(usk, NULL);
		usk->sk_data_ready = vds->saved_data_ready;
		usk->sk_write_space = vds->saved_write_space;
		usk->sk_state_change = vds->saved_state_change;
		usk->sk_error_report = vds->saved_error_report;
	}
	write_unlock_bh(&usk->sk_callback_lock);
}

/*
 * Before the socket layer lets a family see setsockopt(SOL_SOCKET)
 * (VISOCK_HAVE_CUSTOM_SOCKOPT), those options land on the visock socket
 * only: copy what UDP acts on to the UDP socket before each call, those
 * of every inner socket (visock_inner_sync_opts()) and UDP's own.  Only
 * what differs is written.
 */
static void visock_dgram_sync_opts(struct visock_dgram_sock *vds)
{
	static const enum sock_flags flags[] = {
		SOCK_BROADCAST, SOCK_RCVTSTAMP, SOCK_RCVTSTAMPNS,
		SOCK_RXQ_OVFL, SOCK_TSTAMP_NEW, SOCK_RCVMARK,
	};
	struct sock *sk = &vds->inet.sk;
	struct sock *usk = vds->udp->sk;
	int i;

	/* The reuse flags only matter before bind() or connect(). */
	visock_inner_sync_opts(sk, usk, &vds->err_mirror,
			       !inet_sk(usk)->inet_num);
	if (VISOCK_HAVE_CUSTOM_SOCKOPT)
		return;

	if (READ_ONCE(usk->sk_tsflags) != READ_ONCE(sk->sk_tsflags))
		WRITE_ONCE(usk->sk_tsflags, READ_ONCE(sk->sk_tsflags));
	if (READ_ONCE(usk->sk_bound_dev_if) != READ_ONCE(sk->sk_bound_dev_if))
		WRITE_ONCE(usk->sk_bound_dev_if,
			   READ_ONCE(sk->sk_bound_dev_if));
	for (i = 0; i < ARRAY_SIZE(flags); i++)
		if (sock_flag(sk, flags[i]) != sock_flag(usk, flags[i]))
			sock_valbool_flag(usk, flags[i],
					  sock_flag(sk, flags[i]));
}

/*
 * Destination of a datagram about to be sent: msg_name, else the
 * connected peer.  @msg comes from the application: only its length is
 * trusted, as far as it was checked here.  False if none is known (UDP
 * then fails the send).
 */
static bool visock_dgram_dest(const struct visock_dgram_sock *vds,
			      const struct msghdr *msg, struct in6_addr *dst)
{
	const struct sock *usk = vds->udp->sk;
	const struct sockaddr_in6 *sin6;
	const struct sockaddr_in *sin;

	if (msg->msg_name && msg->msg_namelen >= (int)sizeof(*sin)) {
		sin = msg->msg_name;
		if (sin->sin_family == AF_INET) {
			ipv6_addr_set_v4mapped(sin->sin_addr.s_addr, dst);
			return true;
		}
		sin6 = msg->msg_name;
		if (sin6->sin6_family == AF_INET6 &&
		    msg->msg_namelen >= SIN6_LEN_RFC2133) {
			*dst = sin6->sin6_addr;
			return true;
		}
		return false;
	}
	if (READ_ONCE(usk->sk_state) != TCP_ESTABLISHED)
		return false;
#if IS_ENABLED(CONFIG_IPV6)
	if (usk->sk_family == AF_INET6) {
		*dst = usk->sk_v6_daddr;
		return true;
	}
#endif
	ipv6_addr_set_v4mapped(READ_ONCE(inet_sk(usk)->inet_daddr), dst);
	return true;
}

/**
 * visock_dgram_path() - which path a datagram takes
 * @vds: the sending socket
 * @msg: the datagram, as given to sendmsg()
 *
 * The decision point of the send side: a datagram goes over RDMA only
 * when this says so.  There is no RDMA datagram transport yet, so every
 * datagram goes as UDP; the reason names the first check that ruled RDMA
 * out.
 *
 * Context: process context.
 * Return: enum visock_dgram_path.
 */
static enum visock_dgram_path
visock_dgram_path(const struct visock_dgram_sock *vds,
		  const struct msghdr *msg)
{
	const struct sock *sk = &vds->inet.sk;
	struct in6_addr dst;

	if (!READ_ONCE(visock_net(sock_net(sk))->enable))
		return VISOCK_DGRAM_UDP_DISABLED;
	if (visock_dgram_dest(vds, msg, &dst)) {
		if (ipv6_addr_v4mapped(&dst)) {
			__be32 a = dst.s6_addr32[3];

			if (ipv4_is_multicast(a))
				return VISOCK_DGRAM_UDP_MULTICAST;
			if (ipv4_is_lbcast(a))
				return VISOCK_DGRAM_UDP_BROADCAST;
		} else if (ipv6_addr_is_multicast(&dst)) {
			return VISOCK_DGRAM_UDP_MULTICAST;
		}
	}
	return VISOCK_DGRAM_UDP_NO_TRANSPORT;
}

static int visock_dgram_release(struct socket *sock)
{
	struct sock *sk = sock->sk;

	if (!sk)
		return 0;
	visock_dgram_sock_teardown(sk);
	sock_orphan(sk);
	sock->sk = NULL;
	sock_put(sk);
	return 0;
}

static int visock_dgram_bind(struct socket *sock,
			     struct visock_sockaddr_arg *addr, int len)
{
	struct visock_dgram_sock *vds = visock_dgram_sk(sock->sk);

	visock_dgram_sync_opts(vds);
	return vds->udp->ops->bind(vds->udp, addr, len);
}

static int visock_dgram_connect(struct socket *sock,
				struct visock_sockaddr_arg *addr, int len,
				int flags)
{
	struct visock_dgram_sock *vds = visock_dgram_sk(sock->sk);

	visock_dgram_sync_opts(vds);
	return vds->udp->ops->connect(vds->udp, addr, len, flags);
}

static int visock_dgram_getname(struct socket *sock, struct sockaddr *addr,
				int peer)
{
	struct visock_dgram_sock *vds = visock_dgram_sk(sock->sk);

	return vds->udp->ops->getname(vds->udp, addr, peer);
}

static __poll_t visock_dgram_poll(struct file *file, struct socket *sock,
				  poll_table *wait)
{
	struct visock_dgram_sock *vds = visock_dgram_sk(sock->sk);

	sock_poll_wait(file, sock, wait);
	visock_dgram_sync_opts(vds);
	/* Reads UDP's state; our own queue is the one waited on. */
	return vds->udp->ops->poll(file, vds->udp, NULL);
}

static int visock_dgram_ioctl(struct socket *sock, unsigned int cmd,
			      unsigned long arg)
{
	struct visock_dgram_sock *vds = visock_dgram_sk(sock->sk);

	return vds->udp->ops->ioctl(vds->udp, cmd, arg);
}

static int visock_dgram_gettstamp(struct socket *sock, void __user *stamp,
				  bool timeval, bool time32)
{
	struct visock_dgram_sock *vds = visock_dgram_sk(sock->sk);

	return vds->udp->ops->gettstamp(vds->udp, stamp, timeval, time32);
}

static int visock_dgram_shutdown(struct socket *sock, int how)
{
	struct visock_dgram_sock *vds = visock_dgram_sk(sock->sk);
	int err;

	err = vds->udp->ops->shutdown(vds->udp, how);
	if (!err)
		WRITE_ONCE(sock->sk->sk_shutdown,
			   READ_ONCE(vds->udp->sk->sk_shutdown));
	return err;
}

static int visock_dgram_setsockopt_socket(struct socket *sock, int optname,
					  sockptr_t optval,
					  unsigned int optlen)
{
	struct visock_dgram_sock *vds = visock_dgram_sk(sock->sk);
	struct socket *udp = vds->udp;
	u8 buf[VISOCK_DGRAM_OPT_MAX];
	int err;

	switch (optname) {
	case SO_ATTACH_FILTER:
	case SO_ATTACH_BPF:
	case SO_DETACH_FILTER:
	case SO_LOCK_FILTER:
	case SO_ATTACH_REUSEPORT_CBPF:
	case SO_ATTACH_REUSEPORT_EBPF:
	case SO_DETACH_REUSEPORT_BPF:
	case SO_PEEK_OFF:
		/* Only UDP's receive path uses these. */
		return sock_setsockopt(udp, SOL_SOCKET, optname, optval,
				       optlen);
	}
	if (optlen > sizeof(buf))
		return sock_setsockopt(udp, SOL_SOCKET, optname, optval,
				       optlen);

	/* One copy for both sockets: they must see the same value. */
	if (copy_from_sockptr(buf, optval, optlen))
		return -EFAULT;
	err = sock_setsockopt(udp, SOL_SOCKET, optname, KERNEL_SOCKPTR(buf),
			      optlen);
	if (err)
		return err;
	/*
	 * UDP decided; the visock socket keeps a copy for
	 * getsockopt(SOL_SOCKET), which the socket layer answers from it.
	 * Options that only an inet socket takes fail there: copy the bit
	 * that getsockopt() reads instead.
	 */
	if (optname == SO_REUSEPORT) {
		lock_sock(sock->sk);
		sock->sk->sk_reuseport = udp->sk->sk_reuseport;
		release_sock(sock->sk);
		return 0;
	}
	sock_setsockopt(sock, SOL_SOCKET, optname, KERNEL_SOCKPTR(buf),
			optlen);
	return 0;
}

static int visock_dgram_setsockopt(struct socket *sock, int level,
				   int optname, sockptr_t optval,
				   unsigned int optlen)
{
	struct visock_dgram_sock *vds = visock_dgram_sk(sock->sk);
	int val;

	if (level == SOL_SOCKET)
		return visock_dgram_setsockopt_socket(sock, optname, optval,
						      optlen);
	if (level == SOL_VISOCK) {
		if (optname != VISOCK_REUSEPORT)
			return -ENOPROTOOPT;
		if (optlen < sizeof(val))
			return -EINVAL;
		if (copy_from_sockptr(&val, optval, sizeof(val)))
			return -EFAULT;
		return visock_dgram_setsockopt_socket(sock, SO_REUSEPORT,
						      KERNEL_SOCKPTR(&val),
						      sizeof(val));
	}
	visock_dgram_sync_opts(vds);
	return vds->udp->ops->setsockopt(vds->udp, level, optname, optval,
					 optlen);
}

static int visock_dgram_getsockopt(struct socket *sock, int level,
				   int optname, char __user *optval,
				   int __user *optlen)
{
	struct visock_dgram_sock *vds = visock_dgram_sk(sock->sk);
	int len, val;

	if (level != SOL_VISOCK) {
		visock_dgram_sync_opts(vds);
		return vds->udp->ops->getsockopt(vds->udp, level, optname,
						 optval, optlen);
	}
	if (optname != VISOCK_REUSEPORT)
		return -ENOPROTOOPT;
	if (get_user(len, optlen))
		return -EFAULT;
	if (len < (int)sizeof(val))
		return -EINVAL;
	val = vds->udp->sk->sk_reuseport;	/* a bit field */
	len = sizeof(val);
	if (put_user(len, optlen) || copy_to_user(optval, &val, len))
		return -EFAULT;
	return 0;
}

static int visock_dgram_sendmsg(struct socket *sock, struct msghdr *msg,
				size_t len)
{
	struct visock_dgram_sock *vds = visock_dgram_sk(sock->sk);
	struct sock *sk = sock->sk;
	enum visock_dgram_path path;
	int ret;

	visock_dgram_sync_opts(vds);
	path = visock_dgram_path(vds, msg);
	ret = vds->udp->ops->sendmsg(vds->udp, msg, len);
	if (ret < 0) {
		visock_inner_consume_err(sk, &vds->err_mirror, ret);
		return ret;
	}
	VISOCK_STAT_ADD(sk, dgram_sent, 1);
	VISOCK_STAT_ADD(sk, dgram_bytes_sent, ret);
	VISOCK_STAT_ADD(sk, dgram_path[path], 1);
	return ret;
}

static int visock_dgram_recvmsg(struct socket *sock, struct msghdr *msg,
				size_t len, int flags)
{
	struct visock_dgram_sock *vds = visock_dgram_sk(sock->sk);
	struct sock *sk = sock->sk;
	int ret;

	visock_dgram_sync_opts(vds);
	ret = vds->udp->ops->recvmsg(vds->udp, msg, len, flags);
	if (ret < 0) {
		visock_inner_consume_err(sk, &vds->err_mirror, ret);
		return ret;
	}
	if (!(flags & (MSG_PEEK | MSG_ERRQUEUE))) {
		VISOCK_STAT_ADD(sk, dgram_rcvd, 1);
		VISOCK_STAT_ADD(sk, dgram_bytes_rcvd, ret);
	}
	return ret;
}

const struct proto_ops visock_dgram_ops = {
	.family		= PF_VISOCK,
	.owner		= THIS_MODULE,
	.release	= visock_dgram_release,
	.bind		= visock_dgram_bind,
	.connect	= visock_dgram_connect,
	.socketpair	= sock_no_socketpair,
	.accept		= sock_no_accept,
	.getname	= visock_dgram_getname,
	.poll		= visock_dgram_poll,
	.ioctl		= visock_dgram_ioctl,
	.gettstamp	= visock_dgram_gettstamp,
	.listen		= sock_no_listen,
	.shutdown	= visock_dgram_shutdown,
	.setsockopt	= visock_dgram_setsockopt,
	.getsockopt	= visock_dgram_getsockopt,
	.sendmsg	= visock_dgram_sendmsg,
	.recvmsg	= visock_dgram_recvmsg,
	.mmap		= sock_no_mmap,
};

/**
 * visock_dgram_sock_setup() - give a new datagram socket its UDP socket
 * @sk: sock allocated for a visock datagram socket, attached to its
 *	struct socket; sk_family and sk_protocol set
 * @family: AF_INET or AF_INET6, the family of the UDP socket
 *
 * Shared by socket(AF_VISOCK) (visock_dgram_create()) and the inet
 * protosw's init (visock_inet.c).
 *
 * Context: process context, the task creating the socket.
 * Return: 0, or a negative errno; nothing to undo then.
 */
int visock_dgram_sock_setup(struct sock *sk, int family)
{
	struct visock_dgram_sock *vds = visock_dgram_sk(sk);
	struct socket *udp;
	int err;

	vds->udp = NULL;
	vds->err_mirror = 0;
	sk->sk_state = TCP_CLOSE;
	err = __sock_create(sock_net(sk), family, SOCK_DGRAM, IPPROTO_UDP,
			    &udp, 0);
	if (err)
		return err;
	visock_dgram_attach(vds, udp);
	/* Start from UDP's values, for getsockopt(SOL_SOCKET). */
	WRITE_ONCE(sk->sk_rcvbuf, READ_ONCE(udp->sk->sk_rcvbuf));
	WRITE_ONCE(sk->sk_sndbuf, READ_ONCE(udp->sk->sk_sndbuf));
	/* SOL_SOCKET options reach visock_dgram_setsockopt(). */
	if (VISOCK_HAVE_CUSTOM_SOCKOPT)
		set_bit(SOCK_CUSTOM_SOCKOPT, &sk->sk_socket->flags);
	return 0;
}

/**
 * visock_dgram_sock_teardown() - release the UDP socket of a datagram one
 * @sk: the visock datagram sock
 *
 * Calling it again, or on a sock that has no UDP socket, is harmless.
 *
 * Context: process context.
 */
void visock_dgram_sock_teardown(struct sock *sk)
{
	struct visock_dgram_sock *vds = visock_dgram_sk(sk);
	struct socket *udp = vds->udp;

	if (!udp)
		return;
	visock_dgram_detach(vds);
	vds->udp = NULL;
	sock_release(udp);
}

/**
 * visock_dgram_create() - socket(AF_VISOCK, SOCK_DGRAM, protocol)
 * @net: namespace of the new socket
 * @sock: the socket being created
 * @protocol: VISOCKPROTO_UDP4 or VISOCKPROTO_UDP6
 * @kern: created by the kernel
 *
 * Context: process context, from the family's create (af_visock.c).
 * Return: 0; -ESOCKTNOSUPPORT while net.visock.dgram_enable is 0 (as
 * before datagrams existed); -EPROTONOSUPPORT for another protocol; or
 * an errno of socket creation.
 */
int visock_dgram_create(struct net *net, struct socket *sock, int protocol,
			int kern)
{
	struct sock *sk;
	int family, err;

	if (!READ_ONCE(visock_net(net)->dgram_enable))
		return -ESOCKTNOSUPPORT;
	switch (protocol) {
	case VISOCKPROTO_UDP4:
		family = AF_INET;
		break;
	case VISOCKPROTO_UDP6:
		family = AF_INET6;
		break;
	default:
		return -EPROTONOSUPPORT;
	}

	sock->state = SS_UNCONNECTED;
	sock->ops = &visock_dgram_ops;
	sk = sk_alloc(net, PF_VISOCK, GFP_KERNEL, &visock_dgram_proto, kern);
	if (!sk)
		return -ENOMEM;
	sock_init_data(sock, sk);
	sk->sk_protocol = protocol;

	err = visock_dgram_sock_setup(sk, family);
	if (err) {
		sock_orphan(sk);
		sock->sk = NULL;
		sk_free(sk);
		return err;
	}
	return 0;
}

/**
 * visock_dgram_init() - register the struct proto of AF_VISOCK datagrams
 *
 * Context: module init, before the family is registered.
 * Return: 0 or a negative errno.
 */
int visock_dgram_init(void)
{
	return proto_register(&visock_dgram_proto, 1);
}

/**
 * visock_dgram_exit() - undo visock_dgram_init()
 *
 * Context: module exit, after the family is unregistered.
 */
void visock_dgram_exit(void)
{
	proto_unregister(&visock_dgram_proto);
}
