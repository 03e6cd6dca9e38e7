// SPDX-License-Identifier: GPL-2.0
/*
 * visock: the counters of a network namespace.
 *
 * Writers never take a lock: data counters are per CPU, the others are
 * atomics.  A reset does not write them either; it records their current
 * sums as a base under struct visock_net.base_lock, and a reader
 * subtracts that base under the same lock.
 */
#include <linux/percpu.h>
#include <linux/spinlock.h>
#include <net/net_namespace.h>

#include "visock.h"
#include "visock_stats.h"

static const char * const visock_fb_names[__VISOCK_FB_MAX] = {
	[VISOCK_FB_NONE]		= "none",
	[VISOCK_FB_DISABLED]		= "disabled",
	[VISOCK_FB_PEER_NO_VISOCK]	= "peer_no_visock",
	[VISOCK_FB_NO_DEVICE]		= "no_device",
	[VISOCK_FB_PEER_NO_DEVICE]	= "peer_no_device",
	[VISOCK_FB_VERSION]		= "version",
	[VISOCK_FB_BAD_MSG]		= "bad_msg",
	[VISOCK_FB_TIMEOUT]		= "timeout",
	[VISOCK_FB_NOMEM]		= "nomem",
	[VISOCK_FB_PEER_DECLINE]	= "peer_decline",
	[VISOCK_FB_QP_SETUP]		= "qp_setup",
	[VISOCK_FB_BUF_EXHAUSTED]	= "buf_exhausted",
	[VISOCK_FB_DEVICE_GONE]		= "device_gone",
	[VISOCK_FB_SYNCOOKIE]		= "syncookie",
	[VISOCK_FB_IO]			= "io",
	[VISOCK_FB_POLICY]		= "policy",
	[VISOCK_FB_LINK_BUSY]		= "link_busy",
	[VISOCK_FB_LINK_GONE]		= "link_gone",
	[VISOCK_FB_QP_LIMIT]		= "qp_limit",
	[VISOCK_FB_AUTH]		= "auth",
	[VISOCK_FB_AUTH_MISSING]	= "auth_missing",
	[VISOCK_FB_XFORM_REQUIRED]	= "xform_required",
	[VISOCK_FB_XFORM_MEM]		= "xform_mem",
};

/**
 * visock_fb_name() - short stable name of a fallback reason
 * @reason: enum visock_fallback_reason
 *
 * Context: any.
 * Return: the name, or "unknown".
 */
const char *visock_fb_name(unsigned int reason)
{
	if (reason < __VISOCK_FB_MAX && visock_fb_names[reason])
		return visock_fb_names[reason];
	return "unknown";
}

static const char * const visock_dgram_path_names[__VISOCK_DGRAM_PATH_MAX] = {
	[VISOCK_DGRAM_RDMA]		= "rdma",
	[VISOCK_DGRAM_UDP_DISABLED]	= "udp_disabled",
	[VISOCK_DGRAM_UDP_MULTICAST]	= "udp_multicast",
	[VISOCK_DGRAM_UDP_BROADCAST]	= "udp_broadcast",
	[VISOCK_DGRAM_UDP_NO_TRANSPORT]	= "udp_no_transport",
};

/**
 * visock_dgram_path_name() - short stable name of a datagram's path
 * @path: enum visock_dgram_path
 *
 * Context: any.
 * Return: the name, or "unknown".
 */
const char *visock_dgram_path_name(unsigned int path)
{
	if (path < __VISOCK_DGRAM_PATH_MAX && visock_dgram_path_names[path])
		return visock_dgram_path_names[path];
	return "unknown";
}

/*
 * Sum of the raw counters, since the namespace was created.  Under
 * vn->base_lock, which makes the sum and the use of it one step.
 */
static void visock_stats_raw(const struct visock_net *vn,
			     struct visock_totals *t)
{
	struct visock_stats *sum = &t->data;
	unsigned int i;
	int cpu;

	lockdep_assert_held(&vn->base_lock);
	memset(t, 0, sizeof(*t));
	for_each_possible_cpu(cpu) {
		const struct visock_stats *s = per_cpu_ptr(vn->stats, cpu);

		sum->rdma_bytes_sent += READ_ONCE(s->rdma_bytes_sent);
		sum->rdma_bytes_rcvd += READ_ONCE(s->rdma_bytes_rcvd);
		sum->rdma_wr_posted += READ_ONCE(s->rdma_wr_posted);
		sum->rdma_wc += READ_ONCE(s->rdma_wc);
		sum->cdc_sent += READ_ONCE(s->cdc_sent);
		sum->cdc_rcvd += READ_ONCE(s->cdc_rcvd);
		sum->tx_waits += READ_ONCE(s->tx_waits);
		sum->failovers += READ_ONCE(s->failovers);
		sum->tcp_bytes_sent += READ_ONCE(s->tcp_bytes_sent);
		sum->tcp_bytes_rcvd += READ_ONCE(s->tcp_bytes_rcvd);
		sum->dgram_sent += READ_ONCE(s->dgram_sent);
		sum->dgram_bytes_sent += READ_ONCE(s->dgram_bytes_sent);
		sum->dgram_rcvd += READ_ONCE(s->dgram_rcvd);
		sum->dgram_bytes_rcvd += READ_ONCE(s->dgram_bytes_rcvd);
		for (i = 0; i < __VISOCK_DGRAM_PATH_MAX; i++)
			sum->dgram_path[i] += READ_ONCE(s->dgram_path[i]);
	}
	t->conns_rdma = atomic64_read(&vn->conns_rdma);
	t->hs_started = atomic64_read(&vn->hs_started);
	t->hs_done = atomic64_read(&vn->hs_done);
	t->hs_aborted = atomic64_read(&vn->hs_aborted);
	for (i = 0; i < __VISOCK_FB_MAX; i++)
		t->fallbacks[i] = atomic64_read(&vn->fallbacks[i]);
}

/* Every field is a u64: subtract field by field. */
#define VISOCK_TOTALS_WORDS	(sizeof(struct visock_totals) / sizeof(u64))

/**
 * visock_stats_read() - the counters of a namespace since the last reset
 * @net: the namespace
 * @t: filled in
 *
 * Context: any.
 */
void visock_stats_read(struct net *net, struct visock_totals *t)
{
	struct visock_net *vn = visock_net(net);
	u64 *cur = (u64 *)t;
	const u64 *base;
	unsigned int i;

	BUILD_BUG_ON(sizeof(struct visock_totals) % sizeof(u64));
	/*
	 * Sum under the lock: a reset between summing and subtracting
	 * would leave a base above our sums.  Counters only grow, so the
	 * difference is never negative; clamp in case a sum was torn.
	 */
	spin_lock_bh(&vn->base_lock);
	visock_stats_raw(vn, t);
	base = (const u64 *)&vn->base;
	for (i = 0; i < VISOCK_TOTALS_WORDS; i++)
		cur[i] = cur[i] > base[i] ? cur[i] - base[i] : 0;
	spin_unlock_bh(&vn->base_lock);
}

/**
 * visock_stats_reset() - start the counters of a namespace again from 0
 * @net: the namespace
 *
 * Records the current values as the new base; the per-CPU counters
 * themselves are never written from another CPU.
 *
 * Context: any.
 */
void visock_stats_reset(struct net *net)
{
	struct visock_net *vn = visock_net(net);

	spin_lock_bh(&vn->base_lock);
	visock_stats_raw(vn, &vn->base);
	spin_unlock_bh(&vn->base_lock);
}

/**
 * visock_stats_net_init() - set up the counters of a new namespace
 * @net: the namespace
 *
 * Context: process context, pernet init.
 * Return: 0 or -ENOMEM.
 */
int visock_stats_net_init(struct net *net)
{
	struct visock_net *vn = visock_net(net);

	spin_lock_init(&vn->base_lock);
	vn->stats = alloc_percpu(struct visock_stats);
	if (!vn->stats)
		return -ENOMEM;
	return 0;
}

/**
 * visock_stats_net_exit() - free the counters of a namespace
 * @net: the namespace
 *
 * Context: process context, pernet exit or failed pernet init; no reader
 * of the counters is left.
 */
void visock_stats_net_exit(struct net *net)
{
	free_percpu(visock_net(net)->stats);
}
