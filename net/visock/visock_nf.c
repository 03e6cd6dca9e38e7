// SPDX-License-Identifier: GPL-2.0
/*
 * visock: the capability option on the wire.
 *
 * A visock connection announces itself in the SYN and answers in the
 * SYN-ACK with an experimental TCP option (visock_wire.h).  TCP itself
 * knows nothing about that option, so this file adds it to, and reads it
 * from, the segments of visock's internal TCP sockets with netfilter
 * hooks, registered in every network namespace:
 *
 * NF_INET_LOCAL_OUT, IPv4 and IPv6, priority NF_IP_PRI_LAST /
 * NF_IP6_PRI_LAST:
 *   A SYN sent by an internal socket, or a SYN-ACK sent for a request
 *   socket of an internal listener whose client announced visock, gets the
 *   option appended to its TCP options.  LOCAL_OUT is the one hook every
 *   locally generated segment passes with skb->sk still telling which
 *   socket (or request socket) sent it.  Running last there means that
 *   conntrack, mangle (including TCPMSS clamping), NAT and the filter and
 *   security tables all see the segment exactly as TCP built it, and that
 *   we only spend an allocation on segments that policy let through.
 *   Nothing at LOCAL_OUT depends on the TCP option length (conntrack
 *   tracks sequence numbers and window scaling, which we leave alone), and
 *   we change neither addresses nor marks, so no rerouting is needed.
 *
 * NF_INET_LOCAL_IN, IPv4 and IPv6, priority NF_IP_PRI_LAST /
 * NF_IP6_PRI_LAST:
 *   A SYN-ACK carrying the option and addressed to an internal socket in
 *   SYN_SENT is reported to visock_tcp_peer_opt() just before TCP
 *   processes it.  LOCAL_IN rather than PRE_ROUTING because only segments
 *   for local sockets get there (forwarded traffic never pays for this
 *   hook), IPv4 fragments have been reassembled, NAT has already restored
 *   the addresses the socket is hashed under, and segments the INPUT
 *   policy drops are not recorded.  The segment is never changed.
 *
 * The option is appended only where it fits (TCP header at most 60 bytes)
 * and memory allows; otherwise the segment leaves without it, which the
 * peer sees as "no visock" and both sides fall back to TCP (for a SYN-ACK
 * the saved SYN is blanked so that the server concludes the same).  SYN-ACKs sent
 * as SYN cookies have no socket attached and therefore never carry the
 * option either; SYNs carrying data (TCP Fast Open) and SYN-ACKs of Fast
 * Open children are left alone.
 *
 * Whatever comes from the network is parsed through skb_header_pointer()
 * with explicit bounds.
 */
#include <linux/atomic.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/netfilter.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6.h>
#include <linux/skbuff.h>
#include <linux/tcp.h>
#include <net/checksum.h>
#include <net/inet_hashtables.h>
#include <net/inet6_hashtables.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/request_sock.h>
#include <net/route.h>
#include <net/tcp.h>

#include "visock.h"
#include "visock_handshake.h"
#include "visock_tcp.h"
#include "visock_nf.h"

/* Largest TCP header: data offset 15 words. */
#define VISOCK_NF_TH_MAX	60
#define VISOCK_NF_OPTS_MAX	(VISOCK_NF_TH_MAX - sizeof(struct tcphdr))

/*
 * SYNs and SYN-ACKs of internal sockets that left without the option:
 * the TCP header had no room left (counted whether or not the option
 * would have been sent), or the head of the skb could not be reallocated.
 * Not exported yet; a statistics interface can read them.
 */
static atomic_long_t visock_nf_skipped_nospace = ATOMIC_LONG_INIT(0);
static atomic_long_t visock_nf_skipped_nomem = ATOMIC_LONG_INIT(0);

/* A TCP header with room for the largest options area. */
struct visock_nf_thbuf {
	struct tcphdr th;
	u8 opts[VISOCK_NF_OPTS_MAX];
};

/* ------------------------------------------------------------------ */
/* Outgoing SYN and SYN-ACK                                             */
/* ------------------------------------------------------------------ */

/*
 * Cheapest possible test, done before looking at any header: is @sk, the
 * owner of an outgoing skb, an internal TCP socket or a request socket of
 * an internal listener?  Everything else leaves after two or three loads.
 */
static bool visock_nf_out_sock(const struct sock *sk)
{
	if (!sk)
		return false;
	if (sk_fullsock(sk))
		return visock_is_internal_tcp(sk);
	if (sk->sk_state == TCP_NEW_SYN_RECV)
		return visock_is_internal_tcp(inet_reqsk(sk)->rsk_listener);
	return false;
}

/*
 * The options area of the client's SYN that a request socket answers, or
 * NULL.  TCP keeps a copy of the SYN's headers because visock sets
 * TCP_SAVE_SYN on internal listeners.  The copy belongs to the request
 * socket, which the skb holds a reference on, until the handshake
 * completes and TCP moves it to the child (tcp_move_syn()).  Only a
 * SYN-ACK retransmitted from the request timer can overlap that move; the
 * child frees the copy when visock_decide_child() consumes it, in process
 * context after accept, far later than the short access here in BH
 * context.
 */
static u8 *visock_nf_saved_opts(const struct request_sock *req,
				unsigned int *len)
{
	struct saved_syn *saved = READ_ONCE(req->saved_syn);
	struct tcphdr *th;
	u32 thlen;

	if (!saved)
		return NULL;
	/* Both come from one skb's geometry; refuse anything odd. */
	if (saved->mac_hdrlen > U16_MAX || saved->network_hdrlen > U16_MAX)
		return NULL;
	thlen = saved->tcp_hdrlen;
	if (thlen < sizeof(*th) || thlen > VISOCK_NF_TH_MAX)
		return NULL;
	th = (struct tcphdr *)(saved->data + saved->mac_hdrlen +
			       saved->network_hdrlen);
	if (th->doff * 4 != thlen)
		return NULL;
	*len = thlen - sizeof(*th);
	return (u8 *)(th + 1);
}

/* The option the client put in the SYN a request socket answers. */
static bool visock_nf_saved_syn_opt(const struct request_sock *req,
				    struct visock_synopt *peer)
{
	unsigned int len;
	const u8 *opts;

	opts = visock_nf_saved_opts(req, &len);
	return opts && !visock_tcpopt_find(opts, len, peer);
}

/*
 * A SYN-ACK answering @req should have echoed the option but leaves
 * without it.  The server side decides from the saved SYN whether both
 * ends announced visock (visock_decide_child()); blank the saved options
 * so that it concludes "client did not announce", as the client, which
 * sees no option in the SYN-ACK, does.  Retransmitted SYN-ACKs then stay
 * without the option too.  Nobody else reads the saved SYN of an internal
 * listener's connection.
 */
static void visock_nf_forget_syn(const struct request_sock *req)
{
	unsigned int len;
	u8 *opts;

	opts = visock_nf_saved_opts(req, &len);
	if (opts)
		memset(opts, TCPOPT_NOP, len);
}

/*
 * Remember in the saved SYN what the SYN-ACK answering @req carried, so
 * that the server side decides from what the client really received
 * (visock_decide_child()) instead of recomputing it later, when
 * net.visock.enable or the device list may have changed.  The bits are
 * ones a peer never sets (outside VISOCK_TCPOPT_F_PEER_MASK); whatever a
 * client put there is overwritten on every SYN-ACK.
 */
static void visock_nf_mark_syn(const struct request_sock *req, bool echoed,
			       const struct visock_synopt *opt)
{
	unsigned int len;
	u8 *opts, *flags;
	int off;

	opts = visock_nf_saved_opts(req, &len);
	if (!opts)
		return;
	off = visock_tcpopt_offset(opts, len);
	if (off < 0)
		return;
	flags = &opts[off + 5];
	*flags &= VISOCK_TCPOPT_F_PEER_MASK;
	/* The client's lazy bits stay only if the SYN-ACK echoed them. */
	if (!echoed || !(opt->flags & VISOCK_TCPOPT_F_LAZY))
		*flags &= ~(VISOCK_TCPOPT_F_LAZY | VISOCK_TCPOPT_LAZY_MASK);
	if (echoed) {
		*flags |= VISOCK_SAVED_F_ECHOED;
		if (opt->flags & VISOCK_TCPOPT_F_RDMA)
			*flags |= VISOCK_SAVED_F_ECHO_RDMA;
	}
}

/*
 * Should the SYN or SYN-ACK @th, sent on behalf of @sk (see
 * visock_nf_out_sock()), carry the option; fills @opt if so.
 */
static bool visock_nf_out_opt(struct sock *sk, const struct tcphdr *th,
			      struct visock_synopt *opt)
{
	struct visock_synopt peer;
	struct request_sock *req;

	if (sk_fullsock(sk)) {
		/* A full socket sends a SYN-ACK only for Fast Open. */
		if (th->ack)
			return false;
		return visock_tcp_syn_opt(sk, opt);
	}

	/* Request socket: only ever sends SYN-ACKs. */
	if (!th->ack)
		return false;
	req = inet_reqsk(sk);
	if (!visock_nf_saved_syn_opt(req, &peer))
		return false;
	return visock_tcp_synack_opt(req->rsk_listener, &peer, opt);
}

/*
 * Append the option to the options of the TCP header at @thoff, which
 * ends the packet, and fix up the TCP checksum and the IP length.  On
 * failure (false) the packet is left exactly as it was.
 */
static bool visock_nf_append(struct sk_buff *skb, unsigned int thoff,
			     bool ipv6, const struct visock_synopt *opt)
{
	u8 buf[VISOCK_TCPOPT_ALIGNED];
	__be32 words[VISOCK_TCPOPT_ALIGNED / 4];
	unsigned int seglen, i;
	__be32 old_flags;
	struct tcphdr *th;
	int grow;

	BUILD_BUG_ON(VISOCK_TCPOPT_ALIGNED % 4);

	/*
	 * TCP transmits clones of the skbs on its queues: the head is
	 * shared with the copy kept for retransmission.  TCP's own headers
	 * live in the clone's private headroom, but the tail we are about
	 * to write does not, so a cloned head is copied.  That copy and a
	 * short tailroom are dealt with by one reallocation.
	 */
	grow = VISOCK_TCPOPT_ALIGNED - (int)skb_tailroom(skb);
	if (grow > 0 || skb_cloned(skb)) {
		if (pskb_expand_head(skb, 0, max(grow, 0), GFP_ATOMIC)) {
			atomic_long_inc(&visock_nf_skipped_nomem);
			return false;
		}
	}

	/* The head may have moved. */
	th = (struct tcphdr *)(skb->data + thoff);
	seglen = skb->len - thoff;

	visock_tcpopt_write(buf, opt);
	skb_put_data(skb, buf, sizeof(buf));
	memcpy(words, buf, sizeof(buf));

	/*
	 * With CHECKSUM_PARTIAL (the usual case here) th->check holds the
	 * pseudo-header sum and the device or software fallback sums the
	 * segment itself, new bytes included: only the length in the
	 * pseudo-header matters.  With a complete checksum every changed or
	 * added word counts; the helpers tell the cases apart, and keep
	 * skb->csum right for CHECKSUM_COMPLETE.  The option words are
	 * accounted for as words that changed from zero.
	 */
	old_flags = tcp_flag_word(th);
	th->doff += VISOCK_TCPOPT_ALIGNED / 4;
	inet_proto_csum_replace4(&th->check, skb, old_flags,
				 tcp_flag_word(th), false);
	for (i = 0; i < ARRAY_SIZE(words); i++)
		inet_proto_csum_replace4(&th->check, skb, 0, words[i], false);
	inet_proto_csum_replace2(&th->check, skb, htons(seglen),
				 htons(seglen + VISOCK_TCPOPT_ALIGNED), true);

	if (ipv6) {
		struct ipv6hdr *ip6h = ipv6_hdr(skb);

		ip6h->payload_len = htons(ntohs(ip6h->payload_len) +
					  VISOCK_TCPOPT_ALIGNED);
	} else {
		struct iphdr *iph = ip_hdr(skb);
		__be16 old_len = iph->tot_len;

		iph->tot_len = htons(ntohs(old_len) + VISOCK_TCPOPT_ALIGNED);
		csum_replace2(&iph->check, old_len, iph->tot_len);
	}
	return true;
}

/*
 * Common part of both LOCAL_OUT hooks: the TCP header starts at @thoff and
 * @iplen is the packet length the IP header claims, counted from the
 * network header.
 */
static void visock_nf_out(struct sk_buff *skb, unsigned int thoff,
			  unsigned int iplen, bool ipv6)
{
	struct visock_synopt opt, found;
	const struct request_sock *req;
	const struct tcphdr *th;
	unsigned int thlen;

	/* TCP builds SYNs and SYN-ACKs as one linear, non-GSO buffer. */
	if (skb_is_gso(skb) || skb_is_nonlinear(skb) || skb_shared(skb))
		return;
	if (skb->len < thoff + sizeof(*th) ||
	    skb_network_offset(skb) + iplen != skb->len)
		return;
	th = (const struct tcphdr *)(skb->data + thoff);
	if (!th->syn || th->rst || th->fin)
		return;
	thlen = th->doff * 4;
	/* No payload: leaves Fast Open SYNs and every data segment alone. */
	if (thlen < sizeof(*th) || thoff + thlen != skb->len)
		return;
	/*
	 * Already there: LOCAL_OUT can be traversed twice (e.g. once more
	 * through a VRF device).  Malformed options are none of our
	 * business either.
	 */
	if (visock_tcpopt_find((const u8 *)(th + 1), thlen - sizeof(*th),
			       &found) != -ENOENT)
		return;

	/* The SYN-ACKs we may echo the option in come from request socks. */
	req = th->ack && !sk_fullsock(skb->sk) ? inet_reqsk(skb->sk) : NULL;

	/*
	 * Checked before asking visock_tcp.c, which records what it
	 * decides to announce: a SYN we cannot extend must not count as
	 * announced.  Counts every such SYN or SYN-ACK of an internal
	 * socket, whether or not it would have carried the option.
	 */
	if (thlen + VISOCK_TCPOPT_ALIGNED > VISOCK_NF_TH_MAX ||
	    iplen + VISOCK_TCPOPT_ALIGNED > U16_MAX) {
		atomic_long_inc(&visock_nf_skipped_nospace);
		if (req)
			visock_nf_forget_syn(req);
		return;
	}
	if (!visock_nf_out_opt(skb->sk, th, &opt)) {
		if (req)
			visock_nf_mark_syn(req, false, NULL);
		return;
	}
	/*
	 * On failure a SYN leaves without the option although visock_tcp.c
	 * recorded it as announced: harmless, the SYN-ACK then cannot echo
	 * it and the client falls back.
	 */
	if (!visock_nf_append(skb, thoff, ipv6, &opt)) {
		if (req)
			visock_nf_forget_syn(req);
	} else if (req) {
		visock_nf_mark_syn(req, true, &opt);
	}
}

static unsigned int visock_nf_out4(void *priv, struct sk_buff *skb,
				   const struct nf_hook_state *state)
{
	const struct iphdr *iph;
	unsigned int ihl;

	if (!visock_nf_out_sock(skb->sk))
		return NF_ACCEPT;
	if (skb_network_offset(skb) < 0 ||
	    skb_headlen(skb) < skb_network_offset(skb) + sizeof(*iph))
		return NF_ACCEPT;
	iph = ip_hdr(skb);
	if (iph->protocol != IPPROTO_TCP || ip_is_fragment(iph))
		return NF_ACCEPT;
	ihl = iph->ihl * 4;
	if (ihl < sizeof(*iph))
		return NF_ACCEPT;
	visock_nf_out(skb, skb_network_offset(skb) + ihl,
		      ntohs(iph->tot_len), false);
	return NF_ACCEPT;
}

#if IS_ENABLED(CONFIG_IPV6)
/*
 * Offset of the TCP header of the IPv6 packet @skb, or -1 when it has none
 * or is a fragment.
 */
static int visock_nf_tcp6_off(const struct sk_buff *skb)
{
	const struct ipv6hdr *ip6h = ipv6_hdr(skb);
	unsigned int off = 0;
	int flags = 0;

	if (ip6h->nexthdr == IPPROTO_TCP)
		return skb_network_offset(skb) + sizeof(*ip6h);
	if (!ipv6_ext_hdr(ip6h->nexthdr))
		return -1;
	if (ipv6_find_hdr(skb, &off, IPPROTO_TCP, NULL, &flags) < 0 ||
	    (flags & IP6_FH_F_FRAG) || off > INT_MAX)
		return -1;
	return off;
}

static unsigned int visock_nf_out6(void *priv, struct sk_buff *skb,
				   const struct nf_hook_state *state)
{
	const struct ipv6hdr *ip6h;
	int thoff;

	if (!visock_nf_out_sock(skb->sk))
		return NF_ACCEPT;
	if (skb_network_offset(skb) < 0 ||
	    skb_headlen(skb) < skb_network_offset(skb) + sizeof(*ip6h))
		return NF_ACCEPT;
	ip6h = ipv6_hdr(skb);
	/* payload_len 0 would be a jumbogram: not a SYN. */
	if (!ip6h->payload_len)
		return NF_ACCEPT;
	thoff = visock_nf_tcp6_off(skb);
	if (thoff < 0)
		return NF_ACCEPT;
	visock_nf_out(skb, thoff,
		      sizeof(*ip6h) + ntohs(ip6h->payload_len), true);
	return NF_ACCEPT;
}
#endif

/* ------------------------------------------------------------------ */
/* Incoming SYN-ACK                                                     */
/* ------------------------------------------------------------------ */

/*
 * Is the segment at @thoff a SYN-ACK carrying a valid visock option?
 * Returns its TCP header (in @buf or in @skb) and fills @opt if so.
 */
static const struct tcphdr *
visock_nf_in_synack(const struct sk_buff *skb, unsigned int thoff,
		    struct visock_nf_thbuf *buf, struct visock_synopt *opt)
{
	const struct tcphdr *th;
	unsigned int thlen;
	const u8 *opts;

	th = skb_header_pointer(skb, thoff, sizeof(*th), &buf->th);
	if (!th)
		return NULL;
	if (!th->syn || !th->ack || th->rst || th->fin)
		return NULL;
	thlen = th->doff * 4;
	if (thlen < sizeof(*th) + VISOCK_TCPOPT_LEN)
		return NULL;
	opts = skb_header_pointer(skb, thoff + sizeof(*th),
				  thlen - sizeof(*th), buf->opts);
	if (!opts)
		return NULL;
	if (visock_tcpopt_find(opts, thlen - sizeof(*th), opt))
		return NULL;
	return th;
}

/*
 * @sk is what the established-socket hash holds for the SYN-ACK @th:
 * report the option if @sk is an internal socket waiting for exactly this
 * SYN-ACK.  The acknowledgment number must cover our SYN and the checksum
 * must be right, so neither a corrupted segment nor one forged without
 * knowing our initial sequence number (both of which TCP is about to
 * discard) can mark the connection.
 */
static void visock_nf_in_sock(struct sock *sk, struct sk_buff *skb,
			      const struct nf_hook_state *state,
			      unsigned int thoff, const struct tcphdr *th,
			      const struct visock_synopt *opt)
{
	const struct tcp_sock *tp;
	u32 ack, last;

	if (!sk_fullsock(sk) || inet_sk_state_load(sk) != TCP_SYN_SENT ||
	    !visock_is_internal_tcp(sk))
		return;
	tp = tcp_sk(sk);
	/*
	 * tcp_connect() advances snd_nxt only after the SYN went out; over
	 * loopback the SYN-ACK can get here before that (TCP then backlogs
	 * it, the socket being owned by the connecting task).  write_seq
	 * already counts the SYN.
	 */
	last = READ_ONCE(tp->snd_nxt);
	if (after(READ_ONCE(tp->write_seq), last))
		last = READ_ONCE(tp->write_seq);
	ack = ntohl(th->ack_seq);
	if (!after(ack, READ_ONCE(tp->snd_una)) || after(ack, last))
		return;
	if (nf_checksum(skb, state->hook, thoff, IPPROTO_TCP, state->pf))
		return;
	visock_tcp_peer_opt(sk, opt);
}

static unsigned int visock_nf_in4(void *priv, struct sk_buff *skb,
				  const struct nf_hook_state *state)
{
	struct net *net = state->net;
	struct visock_nf_thbuf buf;
	const struct tcphdr *th;
	const struct iphdr *iph;
	struct visock_synopt opt;
	unsigned int thoff;
	struct sock *sk;

	/* ip_rcv() validated and pulled the IP header. */
	iph = ip_hdr(skb);
	if (iph->protocol != IPPROTO_TCP || skb->pkt_type != PACKET_HOST ||
	    ip_is_fragment(iph))
		return NF_ACCEPT;
	thoff = skb_network_offset(skb) + iph->ihl * 4;
	th = visock_nf_in_synack(skb, thoff, &buf, &opt);
	if (!th)
		return NF_ACCEPT;

	/* Hook functions run under rcu_read_lock(), as the lookup needs. */
	sk = visock_lookup_established(net, iph->saddr, th->source,
				       iph->daddr, ntohs(th->dest),
				       inet_iif(skb), inet_sdif(skb));
	if (!sk)
		return NF_ACCEPT;
	visock_nf_in_sock(sk, skb, state, thoff, th, &opt);
	sock_gen_put(sk);
	return NF_ACCEPT;
}

#if IS_ENABLED(CONFIG_IPV6)
static unsigned int visock_nf_in6(void *priv, struct sk_buff *skb,
				  const struct nf_hook_state *state)
{
	struct net *net = state->net;
	const struct ipv6hdr *ip6h;
	struct visock_nf_thbuf buf;
	const struct tcphdr *th;
	struct visock_synopt opt;
	struct sock *sk;
	int thoff;

	if (skb->pkt_type != PACKET_HOST)
		return NF_ACCEPT;
	/* ipv6_rcv() validated and pulled the fixed IPv6 header. */
	thoff = visock_nf_tcp6_off(skb);
	if (thoff < 0)
		return NF_ACCEPT;
	th = visock_nf_in_synack(skb, thoff, &buf, &opt);
	if (!th)
		return NF_ACCEPT;

	ip6h = ipv6_hdr(skb);
	sk = visock_lookup_established6(net, &ip6h->saddr, th->source,
					&ip6h->daddr, ntohs(th->dest),
					inet6_iif(skb), inet6_sdif(skb));
	if (!sk)
		return NF_ACCEPT;
	visock_nf_in_sock(sk, skb, state, thoff, th, &opt);
	sock_gen_put(sk);
	return NF_ACCEPT;
}
#endif

/* ------------------------------------------------------------------ */
/* Registration                                                        */
/* ------------------------------------------------------------------ */

static const struct nf_hook_ops visock_nf_ops[] = {
	{
		.hook		= visock_nf_out4,
		.pf		= NFPROTO_IPV4,
		.hooknum	= NF_INET_LOCAL_OUT,
		.priority	= NF_IP_PRI_LAST,
	},
	{
		.hook		= visock_nf_in4,
		.pf		= NFPROTO_IPV4,
		.hooknum	= NF_INET_LOCAL_IN,
		.priority	= NF_IP_PRI_LAST,
	},
#if IS_ENABLED(CONFIG_IPV6)
	{
		.hook		= visock_nf_out6,
		.pf		= NFPROTO_IPV6,
		.hooknum	= NF_INET_LOCAL_OUT,
		.priority	= NF_IP6_PRI_LAST,
	},
	{
		.hook		= visock_nf_in6,
		.pf		= NFPROTO_IPV6,
		.hooknum	= NF_INET_LOCAL_IN,
		.priority	= NF_IP6_PRI_LAST,
	},
#endif
};

/**
 * visock_nf_net_init() - register visock's netfilter hooks in a namespace
 * @net: the namespace being created
 *
 * Context: process context, from the pernet init of visock_main.c.
 * Return: 0 or a negative errno from nf_register_net_hooks().
 */
int visock_nf_net_init(struct net *net)
{
	return nf_register_net_hooks(net, visock_nf_ops,
				     ARRAY_SIZE(visock_nf_ops));
}

/**
 * visock_nf_net_exit() - unregister visock's netfilter hooks of a namespace
 * @net: the namespace going away
 *
 * Once this returns, no hook of this file runs in @net any more.
 *
 * Context: process context, from the pernet exit of visock_main.c; may
 * sleep (waits for an RCU grace period).
 */
void visock_nf_net_exit(struct net *net)
{
	nf_unregister_net_hooks(net, visock_nf_ops, ARRAY_SIZE(visock_nf_ops));
}
