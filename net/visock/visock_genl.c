// SPDX-License-Identifier: GPL-2.0
/*
 * visock: the "visock" generic netlink family.
 *
 * Statistics (VISOCK_CMD_GET_STATS, VISOCK_CMD_RESET_STATS), the RDMA
 * devices visock uses (VISOCK_CMD_GET_DEVICES), net.visock.enable and
 * the default policy action (VISOCK_CMD_SET), and the destination policy
 * rules (VISOCK_CMD_POLICY_*, handled in visock_policy.c).  Every
 * command acts on the network namespace of the requesting socket; the
 * family is netnsok.  Changing commands need
 * CAP_NET_ADMIN in the user namespace that owns that network namespace.
 *
 * The operations take no lock of their own and may run in parallel
 * (parallel_ops): counters are read and reset under struct
 * visock_net.base_lock (visock_proc.c), the socket list has its own locks
 * (visock_diag.c), the device walk runs under visock_ibdevs_lock and
 * policy changes take visock_net.pol_lock (visock_policy.c).
 */
#include <linux/netdevice.h>
#include <net/genetlink.h>
#include <net/netlink.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

#include "visock.h"

/* Upper bound of GID table entries looked at per port. */
#define VISOCK_GENL_GID_MAX	4096

static const struct nla_policy visock_genl_policy[VISOCK_A_MAX + 1] = {
	[VISOCK_A_ENABLE]	= NLA_POLICY_MAX(NLA_U8, 1),
	[VISOCK_A_POLICY_DEFAULT] = NLA_POLICY_MAX(NLA_U8, VISOCK_POLICY_DENY),
	[VISOCK_A_RULE]		= NLA_POLICY_NESTED(visock_rule_nl_policy),
};

static int visock_put_u64(struct sk_buff *skb, int type, u64 val, int pad)
{
	return nla_put_u64_64bit(skb, type, val, pad);
}

static int visock_genl_put_stats(struct sk_buff *skb, struct net *net)
{
	struct visock_gauges g;
	struct visock_totals t;
	struct nlattr *nest, *fb;
	u64 fallbacks = 0;
	unsigned int i;

	visock_stats_read(net, &t);
	visock_diag_gauges(net, &g);
	for (i = 1; i < __VISOCK_FB_MAX; i++)
		fallbacks += t.fallbacks[i];

	nest = nla_nest_start(skb, VISOCK_A_STATS);
	if (!nest)
		return -EMSGSIZE;
#define PUT(type, val) \
	do { \
		if (visock_put_u64(skb, VISOCK_STATS_A_##type, (val), \
				   VISOCK_STATS_A_PAD)) \
			goto cancel; \
	} while (0)
	PUT(CONNS_RDMA, t.conns_rdma);
	PUT(CONNS_FALLBACK, fallbacks);
	PUT(HS_STARTED, t.hs_started);
	PUT(HS_DONE, t.hs_done);
	PUT(HS_ABORTED, t.hs_aborted);
	PUT(RDMA_BYTES_SENT, t.data.rdma_bytes_sent);
	PUT(RDMA_BYTES_RCVD, t.data.rdma_bytes_rcvd);
	PUT(TCP_BYTES_SENT, t.data.tcp_bytes_sent);
	PUT(TCP_BYTES_RCVD, t.data.tcp_bytes_rcvd);
	PUT(WR_POSTED, t.data.rdma_wr_posted);
	PUT(WC, t.data.rdma_wc);
	PUT(CDC_SENT, t.data.cdc_sent);
	PUT(CDC_RCVD, t.data.cdc_rcvd);
	PUT(TX_WAITS, t.data.tx_waits);
	PUT(FAILOVERS, t.data.failovers);
	PUT(SOCKETS, g.sockets);
	PUT(QPS, g.qps);
	PUT(REG_BYTES, g.reg_bytes);
	PUT(RDMA_DEVICES, visock_ib_device_count());
#undef PUT
	/* One u64 per reason, the reason as type; type 0 is padding. */
	fb = nla_nest_start(skb, VISOCK_STATS_A_FALLBACK);
	if (!fb)
		goto cancel;
	for (i = 1; i < __VISOCK_FB_MAX; i++)
		if (visock_put_u64(skb, i, t.fallbacks[i], VISOCK_FB_NONE))
			goto cancel;
	nla_nest_end(skb, fb);
	nla_nest_end(skb, nest);
	return 0;

cancel:
	nla_nest_cancel(skb, nest);
	return -EMSGSIZE;
}

static int visock_genl_get_stats(struct sk_buff *skb, struct genl_info *info)
{
	struct net *net = genl_info_net(info);
	struct sk_buff *msg;
	void *hdr;
	int err;

	msg = genlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &visock_genl_family, 0,
				VISOCK_CMD_GET_STATS);
	if (!hdr) {
		err = -EMSGSIZE;
		goto err_free;
	}
	err = -EMSGSIZE;
	if (nla_put_u8(msg, VISOCK_A_ENABLE,
		       READ_ONCE(visock_net(net)->enable)) ||
	    nla_put_u8(msg, VISOCK_A_POLICY_DEFAULT,
		       visock_policy_get_default(net)))
		goto err_free;
	err = visock_genl_put_stats(msg, net);
	if (err)
		goto err_free;
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);

err_free:
	nlmsg_free(msg);
	return err;
}

static int visock_genl_reset_stats(struct sk_buff *skb, struct genl_info *info)
{
	visock_stats_reset(genl_info_net(info));
	return 0;
}

static int visock_genl_set(struct sk_buff *skb, struct genl_info *info)
{
	struct net *net = genl_info_net(info);
	struct nlattr *attr;
	int err;

	if (!info->attrs[VISOCK_A_ENABLE] &&
	    !info->attrs[VISOCK_A_POLICY_DEFAULT]) {
		GENL_SET_ERR_MSG(info, "nothing to set");
		return -EINVAL;
	}
	attr = info->attrs[VISOCK_A_POLICY_DEFAULT];
	if (attr) {
		err = visock_policy_set_default(net, nla_get_u8(attr));
		if (err)
			return err;
	}
	if (info->attrs[VISOCK_A_ENABLE])
		WRITE_ONCE(visock_net(net)->enable,
			   nla_get_u8(info->attrs[VISOCK_A_ENABLE]));
	return 0;
}

struct visock_genl_dev_ctx {
	struct sk_buff *skb;
	struct netlink_callback *cb;
	struct net *net;
	unsigned int msgs;
};

/* RoCEv2 GIDs of @port whose net device is in @net. */
static int visock_genl_put_gids(struct sk_buff *skb, struct net *net,
				struct ib_device *ibdev, u32 port)
{
	const struct ib_gid_attr *attr;
	struct net_device *ndev;
	char ifname[IFNAMSIZ];
	struct nlattr *nest;
	int ifindex, err;
	unsigned int i;

	for (i = 0; i < VISOCK_GENL_GID_MAX; i++) {
		attr = rdma_get_gid_attr(ibdev, port, i);
		if (IS_ERR(attr)) {
			if (PTR_ERR(attr) == -EINVAL)
				break;		/* end of the table */
			continue;		/* empty entry */
		}
		ifindex = 0;
		if (attr->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP) {
			rcu_read_lock();
			ndev = rdma_read_gid_attr_ndev_rcu(attr);
			if (!IS_ERR(ndev) && net_eq(dev_net(ndev), net)) {
				ifindex = ndev->ifindex;
				strscpy(ifname, ndev->name, sizeof(ifname));
			}
			rcu_read_unlock();
		}
		err = 0;
		if (ifindex) {
			err = -EMSGSIZE;
			nest = nla_nest_start(skb, VISOCK_PORT_A_GID);
			if (nest &&
			    !nla_put_u32(skb, VISOCK_GID_A_INDEX, i) &&
			    !nla_put(skb, VISOCK_GID_A_GID, sizeof(attr->gid),
				     &attr->gid) &&
			    !nla_put_u32(skb, VISOCK_GID_A_IFINDEX, ifindex) &&
			    !nla_put_string(skb, VISOCK_GID_A_IFNAME, ifname)) {
				nla_nest_end(skb, nest);
				err = 0;
			}
		}
		rdma_put_gid_attr(attr);
		if (err)
			return err;
	}
	return 0;
}

/* One device into one message.  Under visock_ibdevs_lock. */
static int visock_genl_dev_fill(struct ib_device *ibdev, unsigned int nlinks,
				void *arg)
{
	struct visock_genl_dev_ctx *ctx = arg;
	struct sk_buff *skb = ctx->skb;
	struct nlattr *dev, *pnest;
	enum ib_port_state state;
	void *hdr;
	u32 port;

	hdr = genlmsg_put(skb, NETLINK_CB(ctx->cb->skb).portid,
			  ctx->cb->nlh->nlmsg_seq, &visock_genl_family,
			  NLM_F_MULTI, VISOCK_CMD_GET_DEVICES);
	if (!hdr)
		return -EMSGSIZE;
	dev = nla_nest_start(skb, VISOCK_A_DEV);
	if (!dev ||
	    nla_put_string(skb, VISOCK_DEV_A_NAME, dev_name(&ibdev->dev)) ||
	    nla_put_u32(skb, VISOCK_DEV_A_LINKS, nlinks))
		goto cancel;
	rdma_for_each_port(ibdev, port) {
		if (!rdma_protocol_roce(ibdev, port))
			continue;
		if (ib_get_cached_port_state(ibdev, port, &state))
			state = IB_PORT_NOP;
		pnest = nla_nest_start(skb, VISOCK_DEV_A_PORT);
		if (!pnest ||
		    nla_put_u32(skb, VISOCK_PORT_A_NUM, port) ||
		    nla_put_u8(skb, VISOCK_PORT_A_STATE, state) ||
		    visock_genl_put_gids(skb, ctx->net, ibdev, port))
			goto cancel;
		nla_nest_end(skb, pnest);
	}
	nla_nest_end(skb, dev);
	genlmsg_end(skb, hdr);
	ctx->msgs++;
	return 0;

cancel:
	genlmsg_cancel(skb, hdr);
	return -EMSGSIZE;
}

/* cb->args[0]: number of devices already dumped. */
static int visock_genl_get_devices(struct sk_buff *skb,
				   struct netlink_callback *cb)
{
	struct visock_genl_dev_ctx ctx = {
		.skb	= skb,
		.cb	= cb,
		.net	= sock_net(skb->sk),
	};
	unsigned long pos = cb->args[0];
	int err;

	err = visock_ib_walk_devices(&pos, visock_genl_dev_fill, &ctx);
	cb->args[0] = pos;
	/* A device that does not fit into an empty message never will. */
	if (err && !ctx.msgs)
		return err;
	return skb->len;
}

static const struct genl_small_ops visock_genl_ops[] = {
	{
		.cmd	= VISOCK_CMD_GET_STATS,
		.doit	= visock_genl_get_stats,
	},
	{
		.cmd	= VISOCK_CMD_RESET_STATS,
		.doit	= visock_genl_reset_stats,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= VISOCK_CMD_GET_DEVICES,
		.dumpit	= visock_genl_get_devices,
	},
	{
		.cmd	= VISOCK_CMD_SET,
		.doit	= visock_genl_set,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= VISOCK_CMD_POLICY_ADD,
		.doit	= visock_policy_nl_add,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= VISOCK_CMD_POLICY_DEL,
		.doit	= visock_policy_nl_del,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= VISOCK_CMD_POLICY_GET,
		.dumpit	= visock_policy_nl_dump,
	},
	{
		.cmd	= VISOCK_CMD_POLICY_FLUSH,
		.doit	= visock_policy_nl_flush,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
};

struct genl_family visock_genl_family __ro_after_init = {
	.name		= VISOCK_GENL_NAME,
	.version	= VISOCK_GENL_VERSION,
	.maxattr	= VISOCK_A_MAX,
	.policy		= visock_genl_policy,
	.netnsok	= true,
	.parallel_ops	= true,
	.module		= THIS_MODULE,
	.small_ops	= visock_genl_ops,
	.n_small_ops	= ARRAY_SIZE(visock_genl_ops),
	.resv_start_op	= VISOCK_CMD_SET + 1,
};

/**
 * visock_genl_init() - register the "visock" generic netlink family
 *
 * Context: module init, after the pernet state exists.
 * Return: 0 or a negative errno from genl_register_family().
 */
int visock_genl_init(void)
{
	return genl_register_family(&visock_genl_family);
}

/**
 * visock_genl_exit() - unregister the family
 *
 * Context: module exit or failed init.
 */
void visock_genl_exit(void)
{
	genl_unregister_family(&visock_genl_family);
}
