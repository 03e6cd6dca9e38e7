// SPDX-License-Identifier: GPL-2.0
/*
 * visock: /proc/net/visock, the per-namespace counters as text.
 *
 * One "name value" pair per line, stable names, so that scripts can grep
 * them.  The same counters are reachable over generic netlink
 * (visock_genl.c); both show the values since the last reset.
 */
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <net/net_namespace.h>

#include "visock.h"

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

/* Sum of the raw counters, since the namespace was created. */
static void visock_stats_raw(const struct visock_net *vn,
			     struct visock_totals *t)
{
	struct visock_stats *sum = &t->data;
	unsigned int i;
	int cpu;

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

static int visock_proc_show(struct seq_file *seq, void *v)
{
	struct net *net = seq_file_single_net(seq);
	struct visock_net *vn = visock_net(net);
	struct visock_gauges g;
	struct visock_totals t;
	unsigned int i;

	visock_stats_read(net, &t);
	seq_printf(seq, "enable %d\n", READ_ONCE(vn->enable));
	seq_printf(seq, "rdma_devices %u\n", visock_ib_device_count());
	seq_printf(seq, "handshakes_started %llu\n", t.hs_started);
	seq_printf(seq, "handshakes_done %llu\n", t.hs_done);
	seq_printf(seq, "handshakes_aborted %llu\n", t.hs_aborted);
	seq_printf(seq, "connections_rdma %llu\n", t.conns_rdma);
	seq_printf(seq, "rdma_bytes_sent %llu\n", t.data.rdma_bytes_sent);
	seq_printf(seq, "rdma_bytes_rcvd %llu\n", t.data.rdma_bytes_rcvd);
	seq_printf(seq, "rdma_wr_posted %llu\n", t.data.rdma_wr_posted);
	seq_printf(seq, "rdma_wc %llu\n", t.data.rdma_wc);
	seq_printf(seq, "cursor_msgs_sent %llu\n", t.data.cdc_sent);
	seq_printf(seq, "cursor_msgs_rcvd %llu\n", t.data.cdc_rcvd);
	seq_printf(seq, "tx_ring_full_waits %llu\n", t.data.tx_waits);
	seq_printf(seq, "rdma_failovers %llu\n", t.data.failovers);
	seq_printf(seq, "tcp_bytes_sent %llu\n", t.data.tcp_bytes_sent);
	seq_printf(seq, "tcp_bytes_rcvd %llu\n", t.data.tcp_bytes_rcvd);
	for (i = 1; i < __VISOCK_FB_MAX; i++)
		seq_printf(seq, "fallback_%s %llu\n", visock_fb_name(i),
			   t.fallbacks[i]);
	/* Link groups: gauges first, then counters. */
	visock_diag_gauges(net, &g);
	seq_printf(seq, "sockets %llu\n", g.sockets);
	seq_printf(seq, "sockets_closing %llu\n", g.closing);
	seq_printf(seq, "listen_queued %llu\n", g.listen_queued);
	seq_printf(seq, "listen_handshaking %llu\n", g.listen_hs);
	seq_printf(seq, "qps %llu\n", g.qps);
	seq_printf(seq, "links_up %llu\n", g.links_up);
	seq_printf(seq, "registered_bytes %llu\n", g.reg_bytes);
	seq_printf(seq, "qps_alive %llu\n", g.qps_alive);
	seq_printf(seq, "qp_queue_bytes %llu\n", g.qp_bytes);
	seq_printf(seq, "lgr_connections %llu\n", g.lgr_conns);
	seq_printf(seq, "lgr_lingering %llu\n", g.lgr_lingering);
	seq_printf(seq, "lgr_qps_created %lld\n",
		   (long long)atomic64_read(&vn->lgr_qps_created));
	seq_printf(seq, "lgr_qps_destroyed %lld\n",
		   (long long)atomic64_read(&vn->lgr_qps_destroyed));
	seq_printf(seq, "lgr_qp_reused %lld\n",
		   (long long)atomic64_read(&vn->lgr_reused));
	seq_printf(seq, "lgr_qp_waits %lld\n",
		   (long long)atomic64_read(&vn->lgr_waits));
	seq_printf(seq, "lgr_qps_retired %lld\n",
		   (long long)atomic64_read(&vn->lgr_retired));
	seq_printf(seq, "lgr_stale_dropped %llu\n", g.lgr_stale);
	seq_printf(seq, "lgr_qps_capped %lld\n",
		   (long long)atomic64_read(&vn->lgr_qps_capped));
	seq_printf(seq, "lgr_gid_mismatch %lld\n",
		   (long long)atomic64_read(&vn->lgr_gid_mismatch));
	seq_printf(seq, "lazy_started %lld\n",
		   (long long)atomic64_read(&vn->lazy_started));
	seq_printf(seq, "lazy_switches %lld\n",
		   (long long)atomic64_read(&vn->switches));
	seq_printf(seq, "lazy_switch_declined %lld\n",
		   (long long)atomic64_read(&vn->switch_declined));
	seq_printf(seq, "lazy_switch_reset %lld\n",
		   (long long)atomic64_read(&vn->switch_reset));
	seq_printf(seq, "lazy_switch_foreign %lld\n",
		   (long long)atomic64_read(&vn->switch_foreign));
	return 0;
}

/**
 * visock_proc_net_init() - create /proc/net/visock in a namespace
 * @net: the namespace
 *
 * Context: pernet init.
 * Return: 0 or -ENOMEM.
 */
int visock_proc_net_init(struct net *net)
{
	if (!proc_create_net_single("visock", 0444, net->proc_net,
				    visock_proc_show, NULL))
		return -ENOMEM;
	return 0;
}

/**
 * visock_proc_net_exit() - remove /proc/net/visock of a namespace
 * @net: the namespace
 *
 * Context: pernet exit.
 */
void visock_proc_net_exit(struct net *net)
{
	remove_proc_entry("visock", net->proc_net);
}
