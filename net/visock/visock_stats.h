/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: the counters of a network namespace.
 *
 * Data counters are per CPU (struct visock_stats, VISOCK_STAT_ADD());
 * connection and handshake counters are atomics of struct visock_net.
 * visock_stats.c sums them and keeps the base of the last reset, so that
 * readers (/proc/net/visock in visock_proc.c, generic netlink in
 * visock_genl.c) see the values since then.  Gauges (struct visock_gauges)
 * are current resource use, counted when asked (visock_diag_gauges()).
 */
#ifndef _NET_VISOCK_STATS_H
#define _NET_VISOCK_STATS_H

#include <linux/percpu.h>
#include <linux/types.h>
#include <linux/visock.h>

struct net;

/**
 * struct visock_stats - per-CPU counters of a namespace
 * @rdma_bytes_sent: payload bytes written to peers with RDMA WRITE
 * @rdma_bytes_rcvd: payload bytes peers wrote into our rings
 * @rdma_wr_posted: send work requests posted (data and cursor messages)
 * @rdma_wc: work completions handled
 * @cdc_sent: cursor messages sent
 * @cdc_rcvd: cursor messages received
 * @tx_waits: times a blocking writer went to sleep for ring space
 * @tcp_bytes_sent: payload bytes sent by connections in TCP mode
 * @tcp_bytes_rcvd: payload bytes received by connections in TCP mode
 * @failovers: RDMA connections that moved to their TCP socket (failover)
 * @dgram_sent: datagrams visock datagram sockets sent
 * @dgram_bytes_sent: their payload bytes
 * @dgram_rcvd: datagrams visock datagram sockets received (read, not
 *	peeked)
 * @dgram_bytes_rcvd: their payload bytes
 * @dgram_path: datagrams sent, by enum visock_dgram_path
 *
 * Updated with this_cpu_add() from any context; summed when read.
 */
struct visock_stats {
	u64 rdma_bytes_sent;
	u64 rdma_bytes_rcvd;
	u64 rdma_wr_posted;
	u64 rdma_wc;
	u64 cdc_sent;
	u64 cdc_rcvd;
	u64 tx_waits;
	u64 tcp_bytes_sent;
	u64 tcp_bytes_rcvd;
	u64 failovers;
	u64 dgram_sent;
	u64 dgram_bytes_sent;
	u64 dgram_rcvd;
	u64 dgram_bytes_rcvd;
	u64 dgram_path[__VISOCK_DGRAM_PATH_MAX];
};

/**
 * struct visock_totals - every counter of a namespace, summed
 * @data: the per-CPU counters, summed
 * @conns_rdma: see struct visock_net
 * @hs_started: see struct visock_net
 * @hs_done: see struct visock_net
 * @hs_aborted: see struct visock_net
 * @fallbacks: see struct visock_net
 */
struct visock_totals {
	struct visock_stats data;
	u64 conns_rdma;
	u64 hs_started;
	u64 hs_done;
	u64 hs_aborted;
	u64 fallbacks[__VISOCK_FB_MAX];
};

/**
 * struct visock_gauges - current resource use of a namespace
 * @sockets: visock sockets
 * @closing: visock sockets closed by their owner whose teardown is not
 *	over (background close of an RDMA connection, or references still
 *	held); they keep the module loaded
 * @qps: queue pairs (links)
 * @links_up: links in state up
 * @reg_bytes: memory registered for those links (rings)
 * @qps_alive: queue pairs not freed yet, listed or not (what the QP
 *	caps count)
 * @qp_bytes: estimated memory of their queues (visock_qp_mem_estimate())
 * @xform_bytes: memory of the connections' transform pairs, charged to
 *	the same budget (visock_lgr_xform_charge())
 * @lgr_conns: connections attached to them
 * @lgr_lingering: closed connections still holding a place on them (the
 *	peer's closed or abort flag has not arrived)
 * @lgr_stale: receives dropped for unknown or stale tokens (a counter,
 *	summed over the QPs that exist)
 * @listen_queued: settled connections waiting for accept(), all listeners
 * @listen_hs: connections of listeners whose handshake still runs
 */
struct visock_gauges {
	u64 sockets;
	u64 closing;
	u64 listen_queued;
	u64 listen_hs;
	u64 qps;
	u64 links_up;
	u64 reg_bytes;
	u64 qps_alive;
	u64 qp_bytes;
	u64 xform_bytes;
	u64 lgr_conns;
	u64 lgr_lingering;
	u64 lgr_stale;
};

/*
 * Count @n in field @f of the namespace counters of socket @sk (uses
 * visock_net() of visock.h).
 */
#define VISOCK_STAT_ADD(sk, f, n) \
	this_cpu_add(visock_net(sock_net(sk))->stats->f, (n))

/* visock_stats.c */
int visock_stats_net_init(struct net *net);
void visock_stats_net_exit(struct net *net);
const char *visock_fb_name(unsigned int reason);
const char *visock_dgram_path_name(unsigned int path);
void visock_stats_read(struct net *net, struct visock_totals *t);
void visock_stats_reset(struct net *net);

/* visock_proc.c */
int visock_proc_net_init(struct net *net);
void visock_proc_net_exit(struct net *net);

#endif /* _NET_VISOCK_STATS_H */
