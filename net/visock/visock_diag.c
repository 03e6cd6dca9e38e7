// SPDX-License-Identifier: GPL-2.0
/*
 * visock: socket diagnostics (sock_diag) and the list of all sockets.
 *
 * Every visock socket is on visock_diag_list from its allocation until
 * its teardown starts (visock_diag_unlink_sock() from visock_release()
 * and visock_child_destroy()), or, if it never gets that far, until its
 * destructor runs.  The list is global; readers filter by namespace.
 *
 * A reader (a NETLINK_SOCK_DIAG dump for AF_VISOCK, or the gauges of
 * VISOCK_CMD_GET_STATS) holds visock_diag_mutex while it looks at
 * sockets, takes a reference on each socket before it drops
 * visock_diag_list_lock and reads the socket under lock_sock().  The
 * teardown takes visock_diag_mutex to unlink a socket, before it releases
 * anything the reader looks at (internal TCP socket, link, data path), so
 * a reader never sees them being freed.
 *
 * Locks, outermost first:
 *   visock_diag_mutex       readers vs. the start of a teardown
 *   lock_sock() of a visock socket
 *   struct visock_link.lock (visock_link_diag())
 *   visock_diag_list_lock   the list; BH-safe, since the destructor can
 *                           run wherever the last reference goes
 * The teardown takes visock_diag_mutex without any socket lock held.
 */
#include <linux/mutex.h>
#include <linux/sock_diag.h>
#include <linux/spinlock.h>
#include <net/inet_sock.h>
#include <net/ipv6.h>
#include <net/netlink.h>
#include <net/sock.h>
#include <net/tcp_states.h>

#include "visock.h"
#include "visock_link.h"
#include "visock_rdma.h"

/* Readers hold it while they look at sockets; a teardown to unlink. */
static DEFINE_MUTEX(visock_diag_mutex);
/* Protects visock_diag_list and visock_diag_next_id; BH-safe. */
static DEFINE_SPINLOCK(visock_diag_list_lock);
static LIST_HEAD(visock_diag_list);
static u64 visock_diag_next_id;

/**
 * visock_diag_link_sock() - put a new socket on the socket list
 * @vsk: the socket, being allocated
 *
 * Context: any; takes visock_diag_list_lock.
 */
void visock_diag_link_sock(struct visock_sock *vsk)
{
	spin_lock_bh(&visock_diag_list_lock);
	vsk->diag_id = ++visock_diag_next_id;
	list_add_tail(&vsk->diag_node, &visock_diag_list);
	spin_unlock_bh(&visock_diag_list_lock);
}

/**
 * visock_diag_unlink_sock() - take a socket off the list before teardown
 * @vsk: the socket
 *
 * Waits for a reader looking at @vsk.  Afterwards no reader finds it.
 *
 * Context: process context; no socket lock held.
 */
void visock_diag_unlink_sock(struct visock_sock *vsk)
{
	mutex_lock(&visock_diag_mutex);
	spin_lock_bh(&visock_diag_list_lock);
	list_del_init(&vsk->diag_node);
	spin_unlock_bh(&visock_diag_list_lock);
	mutex_unlock(&visock_diag_mutex);
}

/**
 * visock_diag_destruct() - the socket's memory is about to be freed
 * @vsk: the socket, without references
 *
 * Context: any (wherever the last reference was dropped).
 */
void visock_diag_destruct(struct visock_sock *vsk)
{
	spin_lock_bh(&visock_diag_list_lock);
	list_del_init(&vsk->diag_node);
	spin_unlock_bh(&visock_diag_list_lock);
}

/*
 * The next socket of @net after @prev (or from the start), whose number
 * is above @after, with a reference.  Caller holds visock_diag_mutex and
 * a reference on @prev, which keep @prev on the list.
 */
static struct visock_sock *visock_diag_next(const struct net *net,
					    struct visock_sock *prev,
					    u64 after)
{
	struct visock_sock *vsk, *found = NULL;
	struct list_head *pos;

	spin_lock_bh(&visock_diag_list_lock);
	pos = prev ? prev->diag_node.next : visock_diag_list.next;
	for (; pos != &visock_diag_list; pos = pos->next) {
		vsk = list_entry(pos, struct visock_sock, diag_node);
		if (vsk->diag_id <= after ||
		    !net_eq(sock_net(&vsk->sk), net) ||
		    !refcount_inc_not_zero(&vsk->sk.sk_refcnt))
			continue;
		found = vsk;
		break;
	}
	spin_unlock_bh(&visock_diag_list_lock);
	return found;
}

/*
 * Keep in sync with visock_getsockopt_info() in af_visock.c, which fills
 * the same structure for getsockopt(VISOCK_INFO).  Under lock_sock().
 */
static void visock_diag_info(struct visock_sock *vsk, struct visock_info *info)
{
	memset(info, 0, sizeof(*info));
	info->vi_mode = READ_ONCE(vsk->mode);
	info->vi_fallback_reason = READ_ONCE(vsk->fb_reason);
	info->vi_version = vsk->hs_version;
	info->vi_local_qpn = vsk->link ? visock_link_qpn(vsk->link) : 0;
	info->vi_peer_qpn = vsk->peer_qpn;
	info->vi_local_token = vsk->local_token;
	info->vi_peer_token = vsk->peer_token;
	info->vi_rbuf_size = vsk->link ? visock_link_rbuf_size(vsk->link) : 0;
	info->vi_peer_rbuf_size = vsk->peer_rbuf_size;
	if (test_bit(VISOCK_F_SYN_OPT, &vsk->flags))
		info->vi_flags |= VISOCK_INFO_F_SYN_OPT;
	if (test_bit(VISOCK_F_PEER_OPT, &vsk->flags))
		info->vi_flags |= VISOCK_INFO_F_PEER_OPT;
	if (test_bit(VISOCK_F_LINK_UP, &vsk->flags))
		info->vi_flags |= VISOCK_INFO_F_LINK_UP;
	visock_rdma_info(vsk, info);
}

/* Fill levels of the rings.  Under lock_sock(), with @vsk->dp set. */
static void visock_diag_ring(struct visock_dp *dp, struct visock_diag_ring *r)
{
	memset(r, 0, sizeof(*r));
	spin_lock_bh(&dp->lock);
	r->vdr_rx_size = dp->rx_size;
	r->vdr_rx_used = visock_rx_avail_locked(dp);
	r->vdr_tx_size = dp->tx_size;
	r->vdr_tx_used = dp->tx_size - visock_tx_space_locked(dp);
	r->vdr_tx_unsent = visock_ring_used(dp->tx_size, &dp->tx_written,
					    &dp->tx_sent);
	r->vdr_credits = dp->credits;
	r->vdr_sq_free = dp->sq_free;
	r->vdr_state = dp->state;
	spin_unlock_bh(&dp->lock);
}

static void visock_diag_addrs(const struct visock_sock *vsk,
			      struct visock_diag_msg *m)
{
	const struct sock *tsk;

	if (!vsk->tcp)
		return;
	tsk = vsk->tcp->sk;
	m->vdiag_tcp_state = inet_sk_state_load(tsk);
	m->vdiag_sport = inet_sk(tsk)->inet_sport;
	m->vdiag_dport = inet_sk(tsk)->inet_dport;
#if IS_ENABLED(CONFIG_IPV6)
	if (tsk->sk_family == AF_INET6) {
		memcpy(m->vdiag_src, &tsk->sk_v6_rcv_saddr,
		       sizeof(m->vdiag_src));
		memcpy(m->vdiag_dst, &tsk->sk_v6_daddr, sizeof(m->vdiag_dst));
		return;
	}
#endif
	m->vdiag_src[0] = tsk->sk_rcv_saddr;
	m->vdiag_dst[0] = tsk->sk_daddr;
}

static bool visock_diag_match(struct visock_sock *vsk,
			      const struct visock_diag_req *req)
{
	const struct sock *sk = &vsk->sk;

	if (req->vdiag_states &&
	    !(req->vdiag_states & BIT(READ_ONCE(sk->sk_state))))
		return false;
	if (req->vdiag_modes && !(req->vdiag_modes & BIT(READ_ONCE(vsk->mode))))
		return false;
	if (req->vdiag_ino && req->vdiag_ino != (u32)sock_i_ino(&vsk->sk))
		return false;
	return true;
}

/* One socket into @skb.  Under lock_sock(). */
static int visock_diag_fill(struct sk_buff *skb, struct netlink_callback *cb,
			    struct visock_sock *vsk,
			    const struct visock_diag_req *req)
{
	struct user_namespace *user_ns = sk_user_ns(NETLINK_CB(cb->skb).sk);
	struct sock *sk = &vsk->sk;
	struct visock_diag_link link;
	struct visock_diag_ring ring;
	struct visock_diag_msg *m;
	struct visock_info info;
	struct nlmsghdr *nlh;

	nlh = nlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			SOCK_DIAG_BY_FAMILY, sizeof(*m), NLM_F_MULTI);
	if (!nlh)
		return -EMSGSIZE;
	m = nlmsg_data(nlh);
	memset(m, 0, sizeof(*m));
	m->vdiag_family = AF_VISOCK;
	m->vdiag_state = sk->sk_state;
	m->vdiag_mode = READ_ONCE(vsk->mode);
	m->vdiag_fallback_reason = READ_ONCE(vsk->fb_reason);
	m->vdiag_ip_family = vsk->family;
	visock_diag_addrs(vsk, m);
	m->vdiag_uid = from_kuid_munged(user_ns, sock_i_uid(sk));
	m->vdiag_ino = sock_i_ino(sk);
	m->vdiag_id = vsk->diag_id;

	if (req->vdiag_show & VISOCK_SHOW_INFO) {
		visock_diag_info(vsk, &info);
		if (nla_put(skb, VISOCK_DIAG_INFO, sizeof(info), &info))
			goto cancel;
	}
	if ((req->vdiag_show & VISOCK_SHOW_RING) && vsk->dp) {
		visock_diag_ring(vsk->dp, &ring);
		if (nla_put(skb, VISOCK_DIAG_RING, sizeof(ring), &ring))
			goto cancel;
	}
	if ((req->vdiag_show & VISOCK_SHOW_LINK) && vsk->link) {
		visock_link_diag(vsk->link, &link);
		link.vdl_peer_qpn = vsk->peer_qpn;
		if (nla_put(skb, VISOCK_DIAG_LINK, sizeof(link), &link))
			goto cancel;
	}
	nlmsg_end(skb, nlh);
	return 0;

cancel:
	nlmsg_cancel(skb, nlh);
	return -EMSGSIZE;
}

/*
 * Dump the sockets of the requester's namespace; cb->args[0] is the
 * number of the last socket already dumped.
 */
static int visock_diag_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	const struct visock_diag_req *req = nlmsg_data(cb->nlh);
	struct net *net = sock_net(skb->sk);
	struct visock_sock *vsk, *next;
	u64 after = cb->args[0];
	int err = 0;

	mutex_lock(&visock_diag_mutex);
	vsk = visock_diag_next(net, NULL, after);
	while (vsk) {
		lock_sock(&vsk->sk);
		if (visock_diag_match(vsk, req))
			err = visock_diag_fill(skb, cb, vsk, req);
		release_sock(&vsk->sk);
		if (err) {
			sock_put(&vsk->sk);
			break;
		}
		after = vsk->diag_id;
		next = visock_diag_next(net, vsk, after);
		sock_put(&vsk->sk);
		vsk = next;
	}
	mutex_unlock(&visock_diag_mutex);
	cb->args[0] = after;
	return skb->len;
}

#define VISOCK_SHOW_ALL	(VISOCK_SHOW_INFO | VISOCK_SHOW_RING | VISOCK_SHOW_LINK)

/* sock_diag entry point: a SOCK_DIAG_BY_FAMILY request for AF_VISOCK. */
static int visock_diag_handler_dump(struct sk_buff *skb, struct nlmsghdr *nlh)
{
	struct net *net = sock_net(skb->sk);
	const struct visock_diag_req *req;
	struct netlink_dump_control c = {
		.dump	= visock_diag_dump,
		.module	= THIS_MODULE,
	};

	if (nlmsg_len(nlh) < (int)sizeof(*req))
		return -EINVAL;
	req = nlmsg_data(nlh);
	if (req->sdiag_protocol || req->vdiag_pad ||
	    (req->vdiag_show & ~VISOCK_SHOW_ALL))
		return -EINVAL;
	if (!(nlh->nlmsg_flags & NLM_F_DUMP))
		return -EOPNOTSUPP;
	return netlink_dump_start(net->diag_nlsk, skb, nlh, &c);
}

static const struct sock_diag_handler visock_diag_handler = {
	.owner	= THIS_MODULE,
	.family	= AF_VISOCK,
	.dump	= visock_diag_handler_dump,
};

/**
 * visock_diag_gauges() - current resource use of a namespace
 * @net: the namespace
 * @g: filled in
 *
 * Looks at every socket of @net under its lock_sock().
 *
 * Context: process context, no socket lock held.
 */
void visock_diag_gauges(struct net *net, struct visock_gauges *g)
{
	struct visock_sock *vsk, *next;
	struct visock_diag_link d;

	memset(g, 0, sizeof(*g));
	mutex_lock(&visock_diag_mutex);
	vsk = visock_diag_next(net, NULL, 0);
	while (vsk) {
		g->sockets++;
		lock_sock(&vsk->sk);
		if (vsk->link) {
			visock_link_diag(vsk->link, &d);
			if (d.vdl_state == VISOCK_LINK_STATE_INIT ||
			    d.vdl_state == VISOCK_LINK_STATE_UP)
				g->qps++;
			g->reg_bytes += d.vdl_reg_bytes;
		}
		release_sock(&vsk->sk);
		next = visock_diag_next(net, vsk, vsk->diag_id);
		sock_put(&vsk->sk);
		vsk = next;
	}
	mutex_unlock(&visock_diag_mutex);
}

/**
 * visock_diag_init() - register the sock_diag handler for AF_VISOCK
 *
 * Context: module init.
 * Return: 0 or a negative errno from sock_diag_register().
 */
int visock_diag_init(void)
{
	int err = sock_diag_register(&visock_diag_handler);

	if (err)
		pr_err("visock: cannot register sock_diag for family %d: %d\n",
		       AF_VISOCK, err);
	return err;
}

/**
 * visock_diag_exit() - unregister the sock_diag handler
 *
 * Context: module exit or failed init; no visock socket is left.
 */
void visock_diag_exit(void)
{
	sock_diag_unregister(&visock_diag_handler);
}
