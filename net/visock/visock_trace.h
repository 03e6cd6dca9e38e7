/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock tracepoints (events/visock/): handshake start and result,
 * fallback with its reason, link up and down, connection abort.
 *
 *   echo 1 > /sys/kernel/tracing/events/visock/enable
 *
 * Socket events carry the socket's address (hashed), its network
 * namespace's inode number and the TCP 4-tuple, IPv4 as IPv4-mapped IPv6.
 * The fields are filled in visock_trace.c, the only file that defines
 * CREATE_TRACE_POINTS; other files include this header for the trace_*()
 * calls only and need no definition of struct visock_sock.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM visock

#if !defined(_NET_VISOCK_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _NET_VISOCK_TRACE_H

#include <linux/tracepoint.h>
#include <linux/types.h>

#include "visock_compat.h"

struct visock_sock;

DECLARE_EVENT_CLASS(visock_sock_class,
	TP_PROTO(const struct visock_sock *vsk, int arg),
	TP_ARGS(vsk, arg),
	TP_STRUCT__entry(
		__field(const void *, skaddr)
		__field(u32, netns)
		__field(u16, sport)
		__field(u16, dport)
		__array(u8, saddr, 16)
		__array(u8, daddr, 16)
		__field(int, arg)
	),
	TP_fast_assign(
		__entry->skaddr = vsk;
		__entry->arg = arg;
		visock_trace_fill(vsk, &__entry->netns, &__entry->sport,
				  &__entry->dport, __entry->saddr,
				  __entry->daddr);
	),
	TP_printk("sk=%p netns=%u %pI6c:%u -> %pI6c:%u arg=%d",
		  __entry->skaddr, __entry->netns, __entry->saddr,
		  __entry->sport, __entry->daddr, __entry->dport,
		  __entry->arg)
);

/* arg: 1 for the server side, 0 for the client side */
DEFINE_EVENT(visock_sock_class, visock_hs_start,
	TP_PROTO(const struct visock_sock *vsk, int arg),
	TP_ARGS(vsk, arg)
);

/*
 * arg: 0 when the connection switched to RDMA; > 0 when it fell back to
 * TCP, the enum visock_fallback_reason; < 0 when the handshake ended the
 * connection, the negative errno
 */
DEFINE_EVENT(visock_sock_class, visock_hs_result,
	TP_PROTO(const struct visock_sock *vsk, int arg),
	TP_ARGS(vsk, arg)
);

/* arg: positive errno that ended the connection */
DEFINE_EVENT(visock_sock_class, visock_abort,
	TP_PROTO(const struct visock_sock *vsk, int arg),
	TP_ARGS(vsk, arg)
);

TRACE_EVENT(visock_fallback,
	TP_PROTO(const struct visock_sock *vsk, unsigned int reason),
	TP_ARGS(vsk, reason),
	TP_STRUCT__entry(
		__field(const void *, skaddr)
		__field(u32, netns)
		__field(u16, sport)
		__field(u16, dport)
		__array(u8, saddr, 16)
		__array(u8, daddr, 16)
		__field(unsigned int, reason)
	),
	TP_fast_assign(
		__entry->skaddr = vsk;
		__entry->reason = reason;
		visock_trace_fill(vsk, &__entry->netns, &__entry->sport,
				  &__entry->dport, __entry->saddr,
				  __entry->daddr);
	),
	TP_printk("sk=%p netns=%u %pI6c:%u -> %pI6c:%u reason=%s",
		  __entry->skaddr, __entry->netns, __entry->saddr,
		  __entry->sport, __entry->daddr, __entry->dport,
		  __print_symbolic(__entry->reason,
			{ 0, "none" }, { 1, "disabled" },
			{ 2, "peer_no_visock" }, { 3, "no_device" },
			{ 4, "peer_no_device" }, { 5, "version" },
			{ 6, "bad_msg" }, { 7, "timeout" }, { 8, "nomem" },
			{ 9, "peer_decline" }, { 10, "qp_setup" },
			{ 11, "buf_exhausted" }, { 12, "device_gone" },
			{ 13, "syncookie" }, { 14, "io" },
			{ 15, "policy" }, { 16, "link_busy" },
			{ 17, "link_gone" }))
);

TRACE_EVENT(visock_link_up,
	TP_PROTO(const char *dev, u32 port, u32 qpn),
	TP_ARGS(dev, port, qpn),
	TP_STRUCT__entry(
		__string(dev, dev)
		__field(u32, port)
		__field(u32, qpn)
	),
	TP_fast_assign(
		visock_trace_assign_str(dev, dev);
		__entry->port = port;
		__entry->qpn = qpn;
	),
	TP_printk("dev=%s port=%u qpn=%u", __get_str(dev), __entry->port,
		  __entry->qpn)
);

/* @was_up: the link had been connected; @removed: its device went away */
TRACE_EVENT(visock_link_down,
	TP_PROTO(u32 qpn, bool was_up, bool removed),
	TP_ARGS(qpn, was_up, removed),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(bool, was_up)
		__field(bool, removed)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->was_up = was_up;
		__entry->removed = removed;
	),
	TP_printk("qpn=%u was_up=%d cause=%s", __entry->qpn,
		  __entry->was_up, __entry->removed ? "device_removed" :
		  "destroyed")
);

#endif /* _NET_VISOCK_TRACE_H */

/* Out of tree: define_trace.h finds this file through -I net/visock. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE visock_trace
#include <trace/define_trace.h>
