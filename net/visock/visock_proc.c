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
#include "visock_diag.h"
#include "visock_ib.h"
#include "visock_stats.h"

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
	seq_printf(seq, "dgram_enable %d\n", READ_ONCE(vn->dgram_enable));
	seq_printf(seq, "dgram_sent %llu\n", t.data.dgram_sent);
	seq_printf(seq, "dgram_bytes_sent %llu\n", t.data.dgram_bytes_sent);
	seq_printf(seq, "dgram_rcvd %llu\n", t.data.dgram_rcvd);
	seq_printf(seq, "dgram_bytes_rcvd %llu\n", t.data.dgram_bytes_rcvd);
	for (i = 0; i < __VISOCK_DGRAM_PATH_MAX; i++)
		seq_printf(seq, "dgram_sent_%s %llu\n",
			   visock_dgram_path_name(i), t.data.dgram_path[i]);
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
	seq_printf(seq, "xform_bytes %llu\n", g.xform_bytes);
	seq_printf(seq, "lgr_connections %llu\n", g.lgr_conns);
	seq_printf(seq, "lgr_lingering %llu\n", g.lgr_lingering);
	seq_printf(seq, "lgr_qps_created %lld\n",
		   (long long)atomic64_read(&vn->lgr_qps_created));
	seq_printf(seq, "lgr_qps_destroyed %lld\n",
		   (long long)atomic64_read(&vn->lgr_qps_destroyed));
	seq_printf(seq, "lgr_qp_reused %lld\n",
		   (long long)atomic64_read(&vn->lgr_reused));
	seq_printf(seq, "lgr_rkey_rotations %lld\n",
		   (long long)atomic64_read(&vn->lgr_rkey_rotations));
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
	seq_printf(seq, "lazy_switch_started %lld\n",
		   (long long)atomic64_read(&vn->switch_started));
	seq_printf(seq, "lazy_switch_crossed %lld\n",
		   (long long)atomic64_read(&vn->switch_crossed));
	seq_printf(seq, "hs_auth_ok %lld\n",
		   (long long)atomic64_read(&vn->auth_ok));
	seq_printf(seq, "hs_auth_failed %lld\n",
		   (long long)atomic64_read(&vn->auth_failed));
	seq_printf(seq, "hs_auth_missing %lld\n",
		   (long long)atomic64_read(&vn->auth_missing));
	seq_printf(seq, "rec_auth_failed %lld\n",
		   (long long)atomic64_read(&vn->rec_auth_failed));
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
