// SPDX-License-Identifier: GPL-2.0
/*
 * visock: the socket options that reach the internal TCP socket.
 *
 * The internal TCP socket carries more than the application's bytes:
 * visock's handshake, and on an RDMA connection its failover and switch
 * messages.  So an option is passed on only if it is listed below, for
 * both setsockopt() and getsockopt(); every other option of SOL_TCP,
 * SOL_IP, SOL_IPV6 or any other level (SOL_VISOCK aside) fails with
 * EOPNOTSUPP without reaching TCP.  Documentation/networking/visock.rst
 * ("Socket options") has the table with the reason for each option.
 *
 * Passed on: options that tune how TCP sends, retransmits, keeps alive,
 * routes or reports the connection.  They act on the internal TCP
 * connection only; on an RDMA connection that means on visock's own
 * messages, never on the application's bytes.
 *
 * Refused, among others:
 *  - options that hand the byte stream to other code or read or write
 *    it behind visock's back: TCP_ULP, TCP_REPAIR and its companions
 *    (TCP_REPAIR_QUEUE, TCP_QUEUE_SEQ, TCP_REPAIR_OPTIONS,
 *    TCP_REPAIR_WINDOW, TCP_TIMESTAMP), TCP_ZEROCOPY_RECEIVE (maps
 *    received pages, through any mapping of a TCP socket), IPV6_ADDRFORM
 *    (turns the socket into an IPv4 one under visock);
 *  - options that put application bytes in the SYN, before both ends
 *    know whether the other speaks visock: the TCP_FASTOPEN family;
 *  - protections of TCP segments that an RDMA connection's bytes never
 *    get, so that accepting them would promise what is not kept:
 *    TCP_MD5SIG, TCP-AO, IP(V6)_IPSEC_POLICY/XFRM_POLICY, IP_MINTTL,
 *    IPV6_MINHOPCOUNT;
 *  - TCP_SAVE_SYN and TCP_SAVED_SYN, which visock uses itself to read
 *    the peer's SYN option.
 *
 * SOL_SOCKET is different: every option is applied to the visock socket
 * (the socket layer reads them back from there); the listed ones are
 * also applied to the internal socket, because TCP acts on them.  A
 * socket filter (SO_ATTACH_FILTER, SO_ATTACH_BPF) is never passed on:
 * it could drop or trim the segments of visock's own messages.  Of
 * SO_TIMESTAMPING the internal socket gets the receive flags only
 * (visock_sockopt_tcp_tstamp()).
 *
 * SOL_VISOCK, VISOCK_TRANSFORM: the transform pair the socket's
 * connections ask for in the handshake (visock_hs_xform_pref() weighs it
 * against the destination policy and net.visock.transform).  It can
 * only be set while nothing was negotiated yet.
 */
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/ipv6.h>
#include <linux/net_tstamp.h>
#include <linux/socket.h>
#include <linux/tcp.h>
#include <net/sock.h>

#include "visock.h"
#include "visock_sockopt.h"
#include "visock_xform.h"

static bool visock_sockopt_socket(int optname)
{
	switch (optname) {
	case SO_REUSEADDR:
	case SO_REUSEPORT:
	case SO_KEEPALIVE:
	case SO_LINGER:
	case SO_RCVBUF:
	case SO_SNDBUF:
	case SO_RCVBUFFORCE:
	case SO_SNDBUFFORCE:
	case SO_RCVLOWAT:
	case SO_RCVTIMEO_OLD:
	case SO_RCVTIMEO_NEW:
	case SO_SNDTIMEO_OLD:
	case SO_SNDTIMEO_NEW:
	case SO_PRIORITY:
	case SO_MARK:
	case SO_BINDTODEVICE:
	case SO_BINDTOIFINDEX:
	case SO_DONTROUTE:
	case SO_OOBINLINE:
	case SO_INCOMING_CPU:
	case SO_MAX_PACING_RATE:
	case SO_TIMESTAMP_OLD:
	case SO_TIMESTAMP_NEW:
	case SO_TIMESTAMPNS_OLD:
	case SO_TIMESTAMPNS_NEW:
	case SO_TIMESTAMPING_OLD:
	case SO_TIMESTAMPING_NEW:
		return true;
	default:
		return false;
	}
}

static bool visock_sockopt_tcp(int optname)
{
	switch (optname) {
	case TCP_NODELAY:
	case TCP_MAXSEG:
	case TCP_CORK:
	case TCP_KEEPIDLE:
	case TCP_KEEPINTVL:
	case TCP_KEEPCNT:
	case TCP_SYNCNT:
	case TCP_LINGER2:
	case TCP_DEFER_ACCEPT:
	case TCP_WINDOW_CLAMP:
	case TCP_INFO:
	case TCP_QUICKACK:
	case TCP_CONGESTION:
	case TCP_THIN_LINEAR_TIMEOUTS:
	case TCP_THIN_DUPACK:
	case TCP_USER_TIMEOUT:
	case TCP_NOTSENT_LOWAT:
	case TCP_CC_INFO:
	case TCP_INQ:
	case TCP_TX_DELAY:
#ifdef TCP_IS_MPTCP
	case TCP_IS_MPTCP:
#endif
		return true;
	default:
		return false;
	}
}

static bool visock_sockopt_ip(int optname)
{
	switch (optname) {
	case IP_TOS:
	case IP_TTL:
	case IP_OPTIONS:
	case IP_RECVOPTS:
	case IP_RETOPTS:
	case IP_PKTINFO:
	case IP_PKTOPTIONS:
	case IP_MTU_DISCOVER:
	case IP_RECVERR:
	case IP_RECVTTL:
	case IP_RECVTOS:
	case IP_MTU:
	case IP_FREEBIND:
	case IP_PASSSEC:
	case IP_TRANSPARENT:
	case IP_RECVORIGDSTADDR:
	case IP_CHECKSUM:
	case IP_BIND_ADDRESS_NO_PORT:
	case IP_RECVFRAGSIZE:
	case IP_RECVERR_RFC4884:
	case IP_UNICAST_IF:
#ifdef IP_LOCAL_PORT_RANGE
	case IP_LOCAL_PORT_RANGE:
#endif
#ifdef IP_PROTOCOL
	case IP_PROTOCOL:
#endif
		return true;
	default:
		return false;
	}
}

static bool visock_sockopt_ipv6(int optname)
{
	switch (optname) {
	case IPV6_2292PKTINFO:
	case IPV6_2292HOPOPTS:
	case IPV6_2292DSTOPTS:
	case IPV6_2292RTHDR:
	case IPV6_2292PKTOPTIONS:
	case IPV6_2292HOPLIMIT:
	case IPV6_NEXTHOP:
	case IPV6_FLOWINFO:
	case IPV6_UNICAST_HOPS:
	case IPV6_MTU_DISCOVER:
	case IPV6_MTU:
	case IPV6_RECVERR:
	case IPV6_V6ONLY:
	case IPV6_RECVERR_RFC4884:
	case IPV6_FLOWLABEL_MGR:
	case IPV6_FLOWINFO_SEND:
	case IPV6_RECVPKTINFO:
	case IPV6_PKTINFO:
	case IPV6_RECVHOPLIMIT:
	case IPV6_HOPLIMIT:
	case IPV6_RECVHOPOPTS:
	case IPV6_HOPOPTS:
	case IPV6_RTHDRDSTOPTS:
	case IPV6_RECVRTHDR:
	case IPV6_RTHDR:
	case IPV6_RECVDSTOPTS:
	case IPV6_DSTOPTS:
	case IPV6_RECVPATHMTU:
	case IPV6_PATHMTU:
	case IPV6_DONTFRAG:
	case IPV6_RECVTCLASS:
	case IPV6_TCLASS:
	case IPV6_AUTOFLOWLABEL:
	case IPV6_ADDR_PREFERENCES:
	case IPV6_RECVORIGDSTADDR:
	case IPV6_TRANSPARENT:
	case IPV6_UNICAST_IF:
	case IPV6_RECVFRAGSIZE:
	case IPV6_FREEBIND:
		return true;
	default:
		return false;
	}
}

/**
 * visock_sockopt_forwarded() - is an option passed on to the internal
 *	TCP socket
 * @level: SOL_SOCKET, SOL_TCP, SOL_IP, SOL_IPV6 or any other level
 * @optname: the option
 *
 * For SOL_SOCKET: whether the option is applied to the internal socket
 * as well as to the visock socket.  For every other level (SOL_VISOCK is
 * visock's own and never asked about): whether setsockopt() and
 * getsockopt() may pass it on; if not, the caller fails with EOPNOTSUPP.
 *
 * Context: any.
 * Return: true if the option is passed on.
 */
bool visock_sockopt_forwarded(int level, int optname)
{
	switch (level) {
	case SOL_SOCKET:
		return visock_sockopt_socket(optname);
	case SOL_TCP:
		return visock_sockopt_tcp(optname);
	case SOL_IP:
		return visock_sockopt_ip(optname);
	case SOL_IPV6:
		return visock_sockopt_ipv6(optname);
	default:
		return false;
	}
}

/**
 * visock_sockopt_tcp_tstamp() - SO_TIMESTAMPING as the internal socket
 *	gets it
 * @buf: the value the application passed (an int, or a struct
 *	so_timestamping: its flags come first either way), changed in place
 * @len: its length
 *
 * Keeps the receive flags, which give a connection on TCP the receive
 * stamps the application asked for.  Transmit stamps would be queued on
 * the error queue of the internal socket, which the application never
 * reads, and a stamp counter (SOF_TIMESTAMPING_OPT_ID) would count
 * visock's own messages too: those flags stay on the visock socket.
 *
 * Context: any.
 */
void visock_sockopt_tcp_tstamp(u8 *buf, unsigned int len)
{
	u32 flags;

	if (len < sizeof(flags))
		return;
	memcpy(&flags, buf, sizeof(flags));
	flags &= SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_RX_HARDWARE |
		 SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_RAW_HARDWARE;
	memcpy(buf, &flags, sizeof(flags));
}

/**
 * visock_sockopt_set_xform() - setsockopt(SOL_VISOCK, VISOCK_TRANSFORM)
 * @vsk: the socket
 * @optval: an int, enum visock_xform (VISOCK_XFORM_NONE clears it)
 * @optlen: its length
 *
 * Context: process context, takes lock_sock(@vsk); may sleep.
 * Return: 0, -EINVAL (short @optlen, unknown pair), -EFAULT,
 * -EOPNOTSUPP (the crypto API here cannot run the pair) or -EISCONN
 * (connect() or listen() was called, or the connection was decided).
 */
int visock_sockopt_set_xform(struct visock_sock *vsk, sockptr_t optval,
			     unsigned int optlen)
{
	struct sock *sk = &vsk->sk;
	int val, err;

	if (optlen < sizeof(val))
		return -EINVAL;
	if (copy_from_sockptr(&val, optval, sizeof(val)))
		return -EFAULT;
	/* Before the lock: may load a crypto module. */
	err = visock_xform_opt_check(val);
	if (err)
		return err;
	lock_sock(sk);
	if (sk->sk_state != TCP_CLOSE || vsk->mode != VISOCK_MODE_INIT ||
	    test_bit(VISOCK_F_DECIDED, &vsk->flags) ||
	    test_bit(VISOCK_F_LISTENER, &vsk->flags))
		err = -EISCONN;
	else
		WRITE_ONCE(vsk->xform_opt, val);
	release_sock(sk);
	return err;
}

/**
 * visock_sockopt_get_xform() - getsockopt(SOL_VISOCK, VISOCK_TRANSFORM)
 * @vsk: the socket
 *
 * Context: any.
 * Return: the pair the socket asked for, VISOCK_XFORM_NONE if none.
 */
u32 visock_sockopt_get_xform(const struct visock_sock *vsk)
{
	return READ_ONCE(vsk->xform_opt);
}
