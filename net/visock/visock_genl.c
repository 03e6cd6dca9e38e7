// SPDX-License-Identifier: GPL-2.0
/*
 * visock: the "visock" generic netlink family.
 *
 * Statistics (VISOCK_CMD_GET_STATS, VISOCK_CMD_RESET_STATS), the RDMA
 * devices visock uses (VISOCK_CMD_GET_DEVICES), the RDMA links with their
 * owners and peers (VISOCK_CMD_GET_LINKS), net.visock.enable and the
 * default policy action (VISOCK_CMD_SET), the destination policy
 * rules (VISOCK_CMD_POLICY_*, handled in visock_policy.c) and the
 * transform pairs with the implementation the crypto API picks for each
 * (VISOCK_CMD_GET_TRANSFORMS).  Every command acts on the network
 * namespace of the requesting socket; the family is netnsok.  Changing commands need
 * CAP_NET_ADMIN in the user namespace that owns that network namespace.
 *
 * Events (VISOCK_CMD_EVENT) go to the multicast group "events" of the
 * namespace they happen in: link up and down, fallback, abort (from any
 * context, so built with GFP_ATOMIC), device added and removed (to every
 * namespace that may use the device).
 *
 * The operations take no lock of their own and may run in parallel
 * (parallel_ops): counters are read and reset under struct
 * visock_net.base_lock (visock_stats.c), the socket lists have their own
 * locks (visock_diag.c), the device walk runs under visock_ibdevs_lock
 * and policy changes take visock_net.pol_lock (visock_policy.c).
 */
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <net/net_namespace.h>
#include <net/genetlink.h>
#include <net/netlink.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

#include "visock.h"
#include "visock_diag.h"
#include "visock_event.h"
#include "visock_genl.h"
#include "visock_ib.h"
#include "visock_vc.h"
#include "visock_policy.h"
#include "visock_psk.h"
#include "visock_record.h"
#include "visock_stats.h"
#include "visock_xform.h"

/* Upper bound of GID table entries looked at per port. */
#define VISOCK_GENL_GID_MAX	4096

/* Multicast groups; the index is what genl_has_listeners() wants. */
enum {
	VISOCK_GENL_GRP_EVENTS,
};

static const struct genl_multicast_group visock_genl_mcgrps[] = {
	[VISOCK_GENL_GRP_EVENTS] = { .name = VISOCK_GENL_MCGRP_EVENTS },
};

/*
 * Whether the family is registered: RDMA devices come and go before and
 * after it is (the ib_client lives longer).  Written under
 * visock_genl_dev_lock, read with READ_ONCE() by socket events, which
 * cannot happen while no socket exists (module init and exit).
 */
static bool visock_genl_ready;
/* Serialises device events against (un)registering the family. */
static DEFINE_MUTEX(visock_genl_dev_lock);

static const struct nla_policy visock_genl_policy[VISOCK_A_MAX + 1] = {
	[VISOCK_A_ENABLE]	= NLA_POLICY_MAX(NLA_U8, 1),
	[VISOCK_A_POLICY_DEFAULT] = NLA_POLICY_MAX(NLA_U8, VISOCK_POLICY_DENY),
	[VISOCK_A_RULE]		= NLA_POLICY_NESTED(visock_rule_nl_policy),
	[VISOCK_A_KEY]		= NLA_POLICY_NESTED(visock_key_nl_policy),
};

static int visock_put_u64(struct sk_buff *skb, int type, u64 val, int pad)
{
	return nla_put_u64_64bit(skb, type, val, pad);
}

static unsigned int visock_genl_ns_devices(struct net *net);

static int visock_genl_put_stats(struct sk_buff *skb, struct net *net)
{
	unsigned int ns_devices = visock_genl_ns_devices(net);
	struct visock_net *vn = visock_net(net);
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
	PUT(SOCKETS_CLOSING, g.closing);
	PUT(QPS, g.qps);
	PUT(REG_BYTES, g.reg_bytes);
	PUT(RDMA_DEVICES, visock_ib_device_count());
	PUT(NS_DEVICES, ns_devices);
	PUT(LINKS_UP, g.links_up);
	PUT(LGR_CONNS, g.lgr_conns);
	PUT(LGR_LINGERING, g.lgr_lingering);
	PUT(LGR_QPS_CREATED, atomic64_read(&vn->lgr_qps_created));
	PUT(LGR_QPS_DESTROYED, atomic64_read(&vn->lgr_qps_destroyed));
	PUT(LGR_REUSED, atomic64_read(&vn->lgr_reused));
	PUT(LGR_WAITS, atomic64_read(&vn->lgr_waits));
	PUT(LGR_RETIRED, atomic64_read(&vn->lgr_retired));
	PUT(LGR_STALE, g.lgr_stale);
	PUT(REC_AUTH_FAILED, atomic64_read(&vn->rec_auth_failed));
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

static int visock_genl_put_gid(struct sk_buff *skb,
			       const struct ib_gid_attr *attr, int ifindex,
			       const char *ifname);

/*
 * The RoCEv2 GIDs of @port whose net device is in @net: into @skb as
 * VISOCK_PORT_A_GID nests, or, with @skb NULL, only whether there is one.
 * Return: 0 or -EMSGSIZE with @skb; 1 if there is one, else 0 without.
 */
static int visock_genl_gids(struct net *net, struct ib_device *ibdev,
			    u32 port, struct sk_buff *skb)
{
	const struct ib_gid_attr *attr;
	struct net_device *ndev;
	char ifname[IFNAMSIZ];
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
		if (ifindex)
			err = skb ? visock_genl_put_gid(skb, attr, ifindex,
							ifname) : 1;
		rdma_put_gid_attr(attr);
		if (err)
			return err;
	}
	return 0;
}

static int visock_genl_put_gid(struct sk_buff *skb,
			       const struct ib_gid_attr *attr, int ifindex,
			       const char *ifname)
{
	struct nlattr *nest;

	nest = nla_nest_start(skb, VISOCK_PORT_A_GID);
	if (!nest ||
	    nla_put_u32(skb, VISOCK_GID_A_INDEX, attr->index) ||
	    nla_put(skb, VISOCK_GID_A_GID, sizeof(attr->gid), &attr->gid) ||
	    nla_put_u32(skb, VISOCK_GID_A_IFINDEX, ifindex) ||
	    nla_put_string(skb, VISOCK_GID_A_IFNAME, ifname))
		return -EMSGSIZE;
	nla_nest_end(skb, nest);
	return 0;
}

/* Whether @ibdev has a RoCEv2 GID on a net device of @net. */
static bool visock_genl_dev_usable(struct net *net, struct ib_device *ibdev)
{
	u32 port;

	rdma_for_each_port(ibdev, port)
		if (rdma_protocol_roce(ibdev, port) &&
		    visock_genl_gids(net, ibdev, port, NULL))
			return true;
	return false;
}

static int visock_genl_count_dev(struct ib_device *ibdev, unsigned int nlinks,
				 void *arg)
{
	struct visock_genl_dev_ctx *ctx = arg;

	if (visock_genl_dev_usable(ctx->net, ibdev))
		ctx->msgs++;
	return 0;
}

/*
 * Start a message of a dump: the header and the nest @type, left open.
 * Return: the header, or NULL when @skb is full.
 */
static void *visock_genl_dump_put(struct sk_buff *skb,
				  struct netlink_callback *cb, u8 cmd,
				  int type, struct nlattr **nest)
{
	void *hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid,
				cb->nlh->nlmsg_seq, &visock_genl_family,
				NLM_F_MULTI, cmd);

	if (!hdr)
		return NULL;
	*nest = nla_nest_start(skb, type);
	if (!*nest) {
		genlmsg_cancel(skb, hdr);
		return NULL;
	}
	return hdr;
}

/*
 * Finish the message visock_genl_dump_put() started and count it in
 * @msgs, or, if @full, take it out of @skb again.
 * Return: 0, or -EMSGSIZE if @full.
 */
static int visock_genl_dump_end(struct sk_buff *skb, void *hdr,
				struct nlattr *nest, bool full,
				unsigned int *msgs)
{
	if (full) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	genlmsg_end(skb, hdr);
	(*msgs)++;
	return 0;
}

/* RDMA devices with a RoCEv2 GID on a net device of @net. */
static unsigned int visock_genl_ns_devices(struct net *net)
{
	struct visock_genl_dev_ctx ctx = { .net = net };
	unsigned long pos = 0;

	visock_ib_walk_devices(&pos, visock_genl_count_dev, &ctx);
	return ctx.msgs;
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
	bool full;
	u32 port;

	hdr = visock_genl_dump_put(skb, ctx->cb, VISOCK_CMD_GET_DEVICES,
				   VISOCK_A_DEV, &dev);
	if (!hdr)
		return -EMSGSIZE;
	full = nla_put_string(skb, VISOCK_DEV_A_NAME, dev_name(&ibdev->dev)) ||
	       nla_put_u32(skb, VISOCK_DEV_A_LINKS, nlinks);
	rdma_for_each_port(ibdev, port) {
		if (full)
			break;
		if (!rdma_protocol_roce(ibdev, port))
			continue;
		if (ib_get_cached_port_state(ibdev, port, &state))
			state = IB_PORT_NOP;
		pnest = nla_nest_start(skb, VISOCK_DEV_A_PORT);
		full = !pnest ||
		       nla_put_u32(skb, VISOCK_PORT_A_NUM, port) ||
		       nla_put_u8(skb, VISOCK_PORT_A_STATE, state) ||
		       visock_genl_gids(ctx->net, ibdev, port, skb);
		if (!full)
			nla_nest_end(skb, pnest);
	}
	return visock_genl_dump_end(skb, hdr, dev, full, &ctx->msgs);
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

/*
 * A socket as VISOCK_SOCK_A_* in a nest of type @type.  @ino: whether
 * to include the inode number, which needs the socket's callback lock
 * (not from the socket's own callbacks).
 */
static int visock_genl_put_sock(struct sk_buff *skb, int type,
				const struct visock_sock *vsk, bool ino)
{
	struct visock_diag_msg m = {};
	struct nlattr *nest;

	visock_diag_addrs(vsk, &m);
	nest = nla_nest_start(skb, type);
	if (!nest ||
	    nla_put_u64_64bit(skb, VISOCK_SOCK_A_ID, vsk->diag_id,
			      VISOCK_SOCK_A_PAD) ||
	    (ino && nla_put_u32(skb, VISOCK_SOCK_A_INO,
				(u32)sock_i_ino((struct sock *)&vsk->sk))) ||
	    nla_put_u8(skb, VISOCK_SOCK_A_IP_FAMILY, vsk->family) ||
	    nla_put(skb, VISOCK_SOCK_A_SRC, sizeof(m.vdiag_src), m.vdiag_src) ||
	    nla_put(skb, VISOCK_SOCK_A_DST, sizeof(m.vdiag_dst), m.vdiag_dst) ||
	    nla_put_u16(skb, VISOCK_SOCK_A_SPORT, ntohs(m.vdiag_sport)) ||
	    nla_put_u16(skb, VISOCK_SOCK_A_DPORT, ntohs(m.vdiag_dport)))
		return -EMSGSIZE;
	nla_nest_end(skb, nest);
	return 0;
}

/* A link as VISOCK_LINK_A_* attributes (the nest is the caller's). */
static int visock_genl_put_link(struct sk_buff *skb,
				const struct visock_diag_link *d)
{
	if ((d->vdl_dev[0] &&
	     nla_put_string(skb, VISOCK_LINK_A_DEV, d->vdl_dev)) ||
	    nla_put_u32(skb, VISOCK_LINK_A_PORT, d->vdl_port) ||
	    nla_put(skb, VISOCK_LINK_A_GID, sizeof(d->vdl_gid), d->vdl_gid) ||
	    nla_put(skb, VISOCK_LINK_A_PEER_GID, sizeof(d->vdl_peer_gid),
		    d->vdl_peer_gid) ||
	    nla_put_u32(skb, VISOCK_LINK_A_QPN, d->vdl_qpn) ||
	    nla_put_u32(skb, VISOCK_LINK_A_PEER_QPN, d->vdl_peer_qpn) ||
	    nla_put_u8(skb, VISOCK_LINK_A_STATE, d->vdl_state) ||
	    visock_put_u64(skb, VISOCK_LINK_A_REG_BYTES, d->vdl_reg_bytes,
			   VISOCK_LINK_A_PAD) ||
	    visock_put_u64(skb, VISOCK_LINK_A_WR_POSTED, d->vdl_wr_posted,
			   VISOCK_LINK_A_PAD) ||
	    visock_put_u64(skb, VISOCK_LINK_A_WC_OK, d->vdl_wc_ok,
			   VISOCK_LINK_A_PAD) ||
	    visock_put_u64(skb, VISOCK_LINK_A_WC_ERR, d->vdl_wc_err,
			   VISOCK_LINK_A_PAD) ||
	    nla_put_u32(skb, VISOCK_LINK_A_MAX_CONNS, d->vdl_max_conns) ||
	    nla_put_u32(skb, VISOCK_LINK_A_CONNS, d->vdl_conns) ||
	    visock_put_u64(skb, VISOCK_LINK_A_QUEUE_BYTES, d->vdl_queue_bytes,
			   VISOCK_LINK_A_PAD))
		return -EMSGSIZE;
	return 0;
}

struct visock_genl_link_ctx {
	struct sk_buff *skb;
	struct netlink_callback *cb;
	unsigned int msgs;
};

/* The link of one socket into one message.  Under lock_sock(). */
static int visock_genl_link_fill(struct visock_sock *vsk, void *arg)
{
	struct visock_genl_link_ctx *ctx = arg;
	struct sk_buff *skb = ctx->skb;
	struct visock_diag_link d;
	struct nlattr *nest;
	void *hdr;
	bool full;

	lockdep_assert_held(&vsk->sk.sk_lock);
	if (!vsk->vc)
		return 0;
	visock_vc_diag(vsk->vc, &d);
	d.vdl_peer_qpn = vsk->peer_qpn;
	hdr = visock_genl_dump_put(skb, ctx->cb, VISOCK_CMD_GET_LINKS,
				   VISOCK_A_LINK, &nest);
	if (!hdr)
		return -EMSGSIZE;
	full = visock_genl_put_link(skb, &d) ||
	       visock_genl_put_sock(skb, VISOCK_LINK_A_SOCK, vsk, true);
	return visock_genl_dump_end(skb, hdr, nest, full, &ctx->msgs);
}

/* cb->args[0]: number of the last socket whose link was dumped. */
static int visock_genl_get_links(struct sk_buff *skb,
				 struct netlink_callback *cb)
{
	struct visock_genl_link_ctx ctx = { .skb = skb, .cb = cb };
	u64 after = cb->args[0];
	int err;

	/* A socket busy in another task's call keeps its link to itself. */
	err = visock_diag_walk(sock_net(skb->sk), &after,
			       visock_genl_link_fill, NULL, &ctx);
	cb->args[0] = after;
	/* A link that does not fit into an empty message never will. */
	if (err && !ctx.msgs)
		return err;
	return skb->len;
}

/*
 * A transform pair as VISOCK_XFORM_A_* attributes (the nest is the
 * caller's): its description @xf and either the implementation @d the
 * crypto API picked or, when @err is set, why it could not pick one.
 */
static int visock_genl_put_xform(struct sk_buff *skb,
				 const struct visock_xform_info *xf,
				 const struct visock_xform_desc *d, int err)
{
	if (nla_put_u8(skb, VISOCK_XFORM_A_ID, xf->id) ||
	    nla_put_string(skb, VISOCK_XFORM_A_NAME, xf->name) ||
	    nla_put_string(skb, VISOCK_XFORM_A_ALG, xf->alg) ||
	    nla_put_u32(skb, VISOCK_XFORM_A_KEY_SIZE, xf->key_size) ||
	    nla_put_u32(skb, VISOCK_XFORM_A_TAG_SIZE, xf->tag_size) ||
	    nla_put_u32(skb, VISOCK_XFORM_A_NONCE_SIZE, VISOCK_XFORM_IV_LEN) ||
	    nla_put_u32(skb, VISOCK_XFORM_A_RECORD_SIZE,
			VISOCK_DP_REC_PAYLOAD) ||
	    (xf->integrity_only &&
	     nla_put_flag(skb, VISOCK_XFORM_A_INTEGRITY_ONLY)) ||
	    visock_put_u64(skb, VISOCK_XFORM_A_MAX_RECORDS, xf->max_records,
			   VISOCK_XFORM_A_PAD) ||
	    (xf->comp && nla_put_string(skb, VISOCK_XFORM_A_COMP, xf->comp)))
		return -EMSGSIZE;
	if (err)
		return nla_put_s32(skb, VISOCK_XFORM_A_ERROR, err) ? -EMSGSIZE : 0;
	if (nla_put_flag(skb, VISOCK_XFORM_A_AVAILABLE) ||
	    nla_put_string(skb, VISOCK_XFORM_A_DRIVER, d->driver) ||
	    (xf->comp && nla_put_string(skb, VISOCK_XFORM_A_COMP_DRIVER,
					d->comp_driver)) ||
	    nla_put_u32(skb, VISOCK_XFORM_A_PRIORITY, d->priority) ||
	    (d->hw && nla_put_flag(skb, VISOCK_XFORM_A_HW)) ||
	    (d->async && nla_put_flag(skb, VISOCK_XFORM_A_ASYNC)))
		return -EMSGSIZE;
	return 0;
}

/*
 * One pair per message, unavailable ones too.  Each pair's algorithm is
 * allocated and freed again (visock_xform_probe()), which may load a
 * crypto module: process context, no lock held.
 * cb->args[0]: the id of the next pair to dump (0 before the first).
 */
static int visock_genl_get_xforms(struct sk_buff *skb,
				  struct netlink_callback *cb)
{
	const struct visock_xform_info *xf;
	struct visock_xform_desc d;
	unsigned int id, msgs = 0;
	struct nlattr *nest;
	void *hdr;
	bool full;
	int err;

	id = max_t(unsigned long, cb->args[0], VISOCK_XFORM_NONE + 1);
	for (; id <= VISOCK_XFORM_MAX; id++) {
		xf = visock_xform_get(id);
		if (!xf)
			continue;
		err = visock_xform_probe(id, &d);
		hdr = visock_genl_dump_put(skb, cb, VISOCK_CMD_GET_TRANSFORMS,
					   VISOCK_A_XFORM, &nest);
		if (!hdr)
			break;
		full = visock_genl_put_xform(skb, xf, &d, err);
		if (visock_genl_dump_end(skb, hdr, nest, full, &msgs))
			break;
	}
	cb->args[0] = id;
	/* A pair that does not fit into an empty message never will. */
	if (id <= VISOCK_XFORM_MAX && !msgs)
		return -EMSGSIZE;
	return skb->len;
}

/* A new event message: header and the open VISOCK_A_EVENT nest. */
static struct sk_buff *visock_genl_event_new(u8 type, gfp_t gfp,
					     struct nlattr **nest, void **hdr)
{
	struct sk_buff *skb = genlmsg_new(NLMSG_GOODSIZE, gfp);

	if (!skb)
		return NULL;
	*hdr = genlmsg_put(skb, 0, 0, &visock_genl_family, 0,
			   VISOCK_CMD_EVENT);
	if (!*hdr)
		goto err;
	*nest = nla_nest_start(skb, VISOCK_A_EVENT);
	if (!*nest || nla_put_u8(skb, VISOCK_EVENT_A_TYPE, type))
		goto err;
	return skb;
err:
	nlmsg_free(skb);
	return NULL;
}

static void visock_genl_event_send(struct sk_buff *skb, struct net *net,
				   struct nlattr *nest, void *hdr, gfp_t gfp)
{
	nla_nest_end(skb, nest);
	genlmsg_end(skb, hdr);
	genlmsg_multicast_netns(&visock_genl_family, net, skb, 0,
				VISOCK_GENL_GRP_EVENTS, gfp);
}

/**
 * visock_genl_notify_sock() - tell the namespace's listeners about a socket
 * @vsk: the socket; its internal TCP socket must stay meanwhile
 * @type: VISOCK_EVENT_LINK_UP, _LINK_DOWN, _FALLBACK or _ABORT
 * @arg: the fallback reason (FALLBACK) or the negative errno (ABORT)
 * @link: the link (LINK_UP, LINK_DOWN), or NULL
 *
 * Does nothing unless someone listens to the "events" group of the
 * socket's namespace.  A message that cannot be allocated is not sent.
 *
 * Context: any (GFP_ATOMIC); no socket callback lock of @vsk held.
 */
static void visock_genl_notify_sock(struct visock_sock *vsk, u8 type,
				    int arg,
				    const struct visock_diag_link *link)
{
	struct net *net = sock_net(&vsk->sk);
	struct nlattr *nest, *lnest;
	struct sk_buff *skb;
	void *hdr;

	if (!READ_ONCE(visock_genl_ready) ||
	    !genl_has_listeners(&visock_genl_family, net,
				VISOCK_GENL_GRP_EVENTS))
		return;
	skb = visock_genl_event_new(type, GFP_ATOMIC, &nest, &hdr);
	if (!skb)
		return;
	if (type == VISOCK_EVENT_FALLBACK &&
	    nla_put_u8(skb, VISOCK_EVENT_A_REASON, arg))
		goto err;
	if (type == VISOCK_EVENT_ABORT &&
	    nla_put_s32(skb, VISOCK_EVENT_A_ERROR, arg))
		goto err;
	if (link) {
		if (link->vdl_dev[0] &&
		    nla_put_string(skb, VISOCK_EVENT_A_DEV, link->vdl_dev))
			goto err;
		lnest = nla_nest_start(skb, VISOCK_EVENT_A_LINK);
		if (!lnest || visock_genl_put_link(skb, link))
			goto err;
		nla_nest_end(skb, lnest);
	}
	if (visock_genl_put_sock(skb, VISOCK_EVENT_A_SOCK, vsk, false))
		goto err;
	visock_genl_event_send(skb, net, nest, hdr, GFP_ATOMIC);
	return;
err:
	nlmsg_free(skb);
}

/**
 * visock_genl_notify_dev() - tell every namespace about an RDMA device
 * @ibdev: the device
 * @type: VISOCK_EVENT_DEV_ADD or VISOCK_EVENT_DEV_REMOVE
 *
 * Goes to the listeners of every namespace that may use @ibdev.
 *
 * Context: process context (the ib_client callbacks); takes net_rwsem.
 */
static void visock_genl_notify_dev(struct ib_device *ibdev, u8 type)
{
	struct nlattr *nest;
	struct sk_buff *skb;
	struct net *net;
	void *hdr;

	mutex_lock(&visock_genl_dev_lock);
	if (!visock_genl_ready)
		goto out;
	down_read(&net_rwsem);
	for_each_net(net) {
		if (!rdma_dev_access_netns(ibdev, net) ||
		    !genl_has_listeners(&visock_genl_family, net,
					VISOCK_GENL_GRP_EVENTS))
			continue;
		skb = visock_genl_event_new(type, GFP_KERNEL, &nest, &hdr);
		if (!skb)
			break;
		if (nla_put_string(skb, VISOCK_EVENT_A_DEV,
				   dev_name(&ibdev->dev))) {
			nlmsg_free(skb);
			continue;
		}
		visock_genl_event_send(skb, net, nest, hdr, GFP_KERNEL);
	}
	up_read(&net_rwsem);
out:
	mutex_unlock(&visock_genl_dev_lock);
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
		.cmd	= VISOCK_CMD_GET_LINKS,
		.dumpit	= visock_genl_get_links,
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
	{
		.cmd	= VISOCK_CMD_KEY_ADD,
		.doit	= visock_psk_nl_add,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= VISOCK_CMD_KEY_DEL,
		.doit	= visock_psk_nl_del,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= VISOCK_CMD_KEY_GET,
		.dumpit	= visock_psk_nl_dump,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= VISOCK_CMD_KEY_USE,
		.doit	= visock_psk_nl_use,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= VISOCK_CMD_GET_TRANSFORMS,
		.dumpit	= visock_genl_get_xforms,
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
	.mcgrps		= visock_genl_mcgrps,
	.n_mcgrps	= ARRAY_SIZE(visock_genl_mcgrps),
};

/* The consumer of visock_event.c's reports: multicast to "events". */
static const struct visock_event_ops visock_genl_event_ops = {
	.sock	= visock_genl_notify_sock,
	.dev	= visock_genl_notify_dev,
};

/**
 * visock_genl_init() - register the "visock" generic netlink family
 *
 * Context: module init, after the pernet state exists.
 * Return: 0 or a negative errno from genl_register_family().
 */
int visock_genl_init(void)
{
	int err = genl_register_family(&visock_genl_family);

	if (err)
		return err;
	mutex_lock(&visock_genl_dev_lock);
	WRITE_ONCE(visock_genl_ready, true);
	mutex_unlock(&visock_genl_dev_lock);
	visock_event_set_consumer(&visock_genl_event_ops);
	return 0;
}

/**
 * visock_genl_exit() - unregister the family
 *
 * Context: module exit or failed init.
 */
void visock_genl_exit(void)
{
	visock_event_set_consumer(NULL);
	mutex_lock(&visock_genl_dev_lock);
	WRITE_ONCE(visock_genl_ready, false);
	mutex_unlock(&visock_genl_dev_lock);
	genl_unregister_family(&visock_genl_family);
}
