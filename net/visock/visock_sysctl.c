// SPDX-License-Identifier: GPL-2.0
/*
 * visock: per network namespace sysctls, net.visock.*
 *
 * Every namespace gets its own copy of the table, pointing at the fields
 * of its struct visock_net.  Defaults are set in visock_sysctl_net_init()
 * and are the same in every namespace: a new namespace does not inherit
 * the values of the namespace that created it.
 */
#include <linux/slab.h>
#include <linux/sysctl.h>

#include "visock.h"
#include "visock_sysctl.h"

static const int visock_hs_timeout_min = 100;
static const int visock_hs_timeout_max = 60000;
static const int visock_ack_timeout_min = VISOCK_ACK_TIMEOUT_MIN;
static const int visock_ack_timeout_max = VISOCK_ACK_TIMEOUT_MAX;
static const int visock_rbuf_min = VISOCK_RBUF_MIN;
static const int visock_rbuf_max = VISOCK_RBUF_MAX;
static const int visock_lgr_links_max = 64;
static const int visock_lgr_conns_max = VISOCK_LGR_CONNS_MAX;
static const int visock_lgr_idle_max = 3600000;
static const int visock_lgr_mem_max = 1 << 20;	/* MiB: 1 TiB */
static const int visock_lazy_max = VISOCK_LAZY_MAX;
static const int visock_lgr_qps_max = VISOCK_LGR_QPS_MAX;
static const int visock_auth_max = VISOCK_AUTH_REFUSE;
static const int visock_xform_max = VISOCK_XFORM_MAX;

static struct ctl_table visock_sysctl_template[] = {
	{
		/* 0: every visock socket is plain TCP; 1: try RDMA */
		.procname	= "enable",
		.data		= NULL,	/* set per namespace */
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_ONE,
	},
	{
		/* how long to wait for each handshake message */
		.procname	= "handshake_timeout_ms",
		.data		= NULL,	/* set per namespace */
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= (void *)&visock_hs_timeout_min,
		.extra2		= (void *)&visock_hs_timeout_max,
	},
	{
		/* RC ACK timeout exponent of new QPs (4.096 us * 2^n) */
		.procname	= "rdma_ack_timeout",
		.data		= NULL,	/* set per namespace */
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= (void *)&visock_ack_timeout_min,
		.extra2		= (void *)&visock_ack_timeout_max,
	},
	{
		/* receive ring of sockets without SO_RCVBUF, bytes */
		.procname	= "rbuf_default",
		.data		= NULL,	/* set per namespace */
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= (void *)&visock_rbuf_min,
		.extra2		= (void *)&visock_rbuf_max,
	},
	{
		/* QPs a link group (one peer) may have */
		.procname	= "lgr_max_links",
		.data		= NULL,	/* set per namespace */
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ONE,
		.extra2		= (void *)&visock_lgr_links_max,
	},
	{
		/* connections one QP takes at most */
		.procname	= "lgr_link_conns",
		.data		= NULL,	/* set per namespace */
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ONE,
		.extra2		= (void *)&visock_lgr_conns_max,
	},
	{
		/* how long a QP without connections is kept, ms */
		.procname	= "lgr_idle_ms",
		.data		= NULL,	/* set per namespace */
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= (void *)&visock_lgr_idle_max,
	},
	{
		/* ring buffer memory of all QPs of the namespace, MiB */
		.procname	= "lgr_mem_max_mb",
		.data		= NULL,	/* set per namespace */
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ONE,
		.extra2		= (void *)&visock_lgr_mem_max,
	},
	{
		/* keepalive interval of a QP with connections, ms (0: off) */
		.procname	= "lgr_keepalive_ms",
		.data		= NULL,	/* set per namespace */
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= (void *)&visock_lgr_idle_max,
	},
	{
		/*
		 * lazy start: new connections to a peer with a link group
		 * start on TCP and move to RDMA after this many bytes one
		 * way (rounded down to a power of two; below 1024: off)
		 */
		.procname	= "lazy_bytes",
		.data		= NULL,	/* set per namespace */
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= (void *)&visock_lazy_max,
	},
	{
		/*
		 * QPs with one peer host, in any state until freed (0:
		 * 8 * lgr_max_links); see visock_lgr_peer_qps_max()
		 */
		.procname	= "lgr_peer_qps_max",
		.data		= NULL,	/* set per namespace */
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= (void *)&visock_lgr_qps_max,
	},
	{
		/* QPs of the namespace, any state (0: 64 * lgr_max_links) */
		.procname	= "lgr_qps_max",
		.data		= NULL,	/* set per namespace */
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= (void *)&visock_lgr_qps_max,
	},
	{
		/* 0: no visock datagram sockets; 1: allowed */
		.procname	= "dgram_enable",
		.data		= NULL,	/* set per namespace */
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_ONE,
	},
	{
		/*
		 * authenticated handshake with the namespace's pre-shared
		 * key: 0 off, 1 prefer, 2 require (else TCP), 3 require
		 * (else reset); enum visock_auth_policy
		 */
		.procname	= "auth",
		.data		= NULL,	/* set per namespace */
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= (void *)&visock_auth_max,
	},
	{
		/*
		 * connections the first QP of a link group takes; each new
		 * QP of a full group takes twice the largest, up to
		 * lgr_link_conns
		 */
		.procname	= "lgr_link_conns_min",
		.data		= NULL,	/* set per namespace */
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ONE,
		.extra2		= (void *)&visock_lgr_conns_max,
	},
	{
		/*
		 * transform pair of the record layer (enum visock_xform)
		 * an authenticated handshake offers or accepts; 0 none
		 */
		.procname	= "transform",
		.data		= NULL,	/* set per namespace */
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= (void *)&visock_xform_max,
	},
	{
		/*
		 * 1: every connection must agree on the pair "transform"
		 * names (or a stronger one) or stay on TCP
		 */
		.procname	= "transform_require",
		.data		= NULL,	/* set per namespace */
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_ONE,
	},
	{ }	/* sentinel, needed before 6.11 */
};

#define VISOCK_SYSCTL_ENTRIES	(ARRAY_SIZE(visock_sysctl_template) - 1)

/**
 * visock_sysctl_net_init() - register net.visock.* for a namespace
 * @net: the namespace being created
 *
 * Context: process context, from the pernet init of visock_main.c.
 * Return: 0 or -ENOMEM.
 */
int visock_sysctl_net_init(struct net *net)
{
	struct visock_net *vn = visock_net(net);
	struct ctl_table *table;

	vn->enable = 0;
	vn->hs_timeout_ms = VISOCK_HS_TIMEOUT_MS_DEFAULT;
	vn->ack_timeout = VISOCK_ACK_TIMEOUT_DEFAULT;
	vn->rbuf_default = VISOCK_RBUF_DEFAULT;
	vn->lgr_max_links = VISOCK_LGR_MAX_LINKS_DEFAULT;
	vn->lgr_link_conns = VISOCK_LGR_LINK_CONNS_DEFAULT;
	vn->lgr_idle_ms = VISOCK_LGR_IDLE_MS_DEFAULT;
	vn->lgr_mem_max_mb = VISOCK_LGR_MEM_MAX_MB_DEFAULT;
	vn->lgr_keepalive_ms = VISOCK_LGR_KEEPALIVE_MS_DEFAULT;
	vn->lazy_bytes = 0;
	vn->lgr_peer_qps_max = 0;
	vn->lgr_qps_max = 0;
	vn->dgram_enable = 0;
	vn->auth = VISOCK_AUTH_OFF;
	vn->lgr_link_conns_min = VISOCK_LGR_LINK_CONNS_MIN_DEFAULT;
	vn->xform = VISOCK_XFORM_NONE;
	vn->xform_require = 0;

	table = kmemdup(visock_sysctl_template,
			sizeof(visock_sysctl_template), GFP_KERNEL);
	if (!table)
		return -ENOMEM;
	table[0].data = &vn->enable;
	table[1].data = &vn->hs_timeout_ms;
	table[2].data = &vn->ack_timeout;
	table[3].data = &vn->rbuf_default;
	table[4].data = &vn->lgr_max_links;
	table[5].data = &vn->lgr_link_conns;
	table[6].data = &vn->lgr_idle_ms;
	table[7].data = &vn->lgr_mem_max_mb;
	table[8].data = &vn->lgr_keepalive_ms;
	table[9].data = &vn->lazy_bytes;
	table[10].data = &vn->lgr_peer_qps_max;
	table[11].data = &vn->lgr_qps_max;
	table[12].data = &vn->dgram_enable;
	table[13].data = &vn->auth;
	table[14].data = &vn->lgr_link_conns_min;
	table[15].data = &vn->xform;
	table[16].data = &vn->xform_require;

	vn->sysctl_hdr = visock_register_net_sysctl(net, "net/visock", table,
						    VISOCK_SYSCTL_ENTRIES);
	if (!vn->sysctl_hdr) {
		kfree(table);
		return -ENOMEM;
	}
	return 0;
}

/**
 * visock_sysctl_net_exit() - unregister net.visock.* of a namespace
 * @net: the namespace going away
 *
 * Context: process context, from the pernet exit of visock_main.c.
 */
void visock_sysctl_net_exit(struct net *net)
{
	struct visock_net *vn = visock_net(net);
	const struct ctl_table *table;

	table = vn->sysctl_hdr->ctl_table_arg;
	unregister_net_sysctl_table(vn->sysctl_hdr);
	kfree(table);
}
