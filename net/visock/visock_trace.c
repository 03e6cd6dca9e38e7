// SPDX-License-Identifier: GPL-2.0
/*
 * visock: instantiates the tracepoints of visock_trace.h.
 */
#include <net/inet_sock.h>
#include <net/ipv6.h>

#include "visock.h"

/*
 * The namespace and TCP 4-tuple of a socket for a trace event; IPv4 as
 * IPv4-mapped IPv6.  Called from the events' fast-assign code, wherever
 * the event fires; reads the internal TCP socket's fields locklessly.
 */
static void visock_trace_fill(const struct visock_sock *vsk, u32 *netns,
			      u16 *sport, u16 *dport, u8 *saddr, u8 *daddr)
{
	const struct socket *tcp = READ_ONCE(vsk->tcp);
	const struct sock *tsk;

	*netns = sock_net(&vsk->sk)->ns.inum;
	*sport = 0;
	*dport = 0;
	memset(saddr, 0, 16);
	memset(daddr, 0, 16);
	if (!tcp)
		return;
	tsk = tcp->sk;
	*sport = ntohs(inet_sk(tsk)->inet_sport);
	*dport = ntohs(inet_sk(tsk)->inet_dport);
#if IS_ENABLED(CONFIG_IPV6)
	if (tsk->sk_family == AF_INET6) {
		memcpy(saddr, &tsk->sk_v6_rcv_saddr, 16);
		memcpy(daddr, &tsk->sk_v6_daddr, 16);
		return;
	}
#endif
	ipv6_addr_set_v4mapped(tsk->sk_rcv_saddr, (struct in6_addr *)saddr);
	ipv6_addr_set_v4mapped(tsk->sk_daddr, (struct in6_addr *)daddr);
}

#define CREATE_TRACE_POINTS
#include "visock_trace.h"
