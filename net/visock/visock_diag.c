// SPDX-License-Identifier: GPL-2.0
/*
 * visock: socket diagnostics (sock_diag) and the socket lists.
 *
 * Every visock socket is on the socket list of its network namespace
 * (struct visock_net.sk_list) from its allocation until its destructor
 * runs, in the order of its number (struct visock_sock.diag_id).  A socket
 * whose teardown started (visock_diag_unlink_sock() from visock_release()
 * and visock_child_destroy()) stays on the list but is marked
 * VISOCK_F_DIAG_GONE under its lock_sock(), before the teardown releases
 * anything a reader looks at (internal TCP socket, vc, data path).
 *
 * A reader (visock_diag_walk(): the NETLINK_SOCK_DIAG dump for AF_VISOCK
 * and the link dump of the generic netlink family) takes a reference on
 * a socket under the list lock, drops the lock, and looks at the socket
 * under its lock_sock(), skipping it if it is marked.  The reference
 * keeps the socket, and with it its list entry, alive, so the walk
 * continues from there.  No lock is shared by sockets of different
 * namespaces, and a close takes no lock other than its own socket's and,
 * in the destructor, its namespace's list lock for an instant.
 *
 * A reader never waits for lock_sock(): its owner may be stalled for as
 * long as a user likes (a sendmsg() copying from a page that a
 * userfaultfd never provides), and a dump must not hang with it.  A
 * socket that someone else owns is "busy": the reader looks at it under
 * the socket's spinlock instead, which keeps the owner from releasing
 * the socket and so, if it is not marked, keeps its teardown from
 * starting to free anything, and reads only what does not change under
 * the owner's feet: the state, mode, addresses and owner, not the vc
 * or the data path.
 *
 * Locks, outermost first:
 *   lock_sock() of a visock socket
 *   struct visock_qp.lock (visock_vc_diag())
 *   struct visock_net.sk_lock   the namespace's list; BH-safe, since the
 *                               destructor can run wherever the last
 *                               reference goes
 */
#include <linux/atomic.h>
#include <linux/sock_diag.h>
#include <linux/spinlock.h>
#include <net/inet_sock.h>
#include <net/ipv6.h>
#include <net/netlink.h>
#include <net/sock.h>
#include <net/tcp_states.h>

#include "visock.h"
#include "visock_diag.h"
#include "visock_vc.h"
#include "visock_lgr.h"
#include "visock_rdma.h"
#include "visock_stats.h"
#include "visock_auth.h"

/* Last socket number given out; numbers are unique while loaded. */
static atomic64_t visock_diag_last_id = ATOMIC64_INIT(0);

/**
 * visock_diag_net_init() - set up the socket list of a namespace
 * @net: the new namespace
 */
void visock_diag_net_init(struct net *net)
{
	struct visock_net *vn = visock_net(net);

	spin_lock_init(&vn->sk_lock);
	INIT_LIST_HEAD(&vn->sk_list);
}

/**
 * visock_diag_net_exit() - the namespace is going away
 * @net: the namespace
 *
 * Every socket holds a reference on its namespace (sk_alloc() with kern
 * 0) or, for kernel sockets, must be closed by its creator before the
 * namespace goes, so the list is empty here.
 */
void visock_diag_net_exit(struct net *net)
{
	WARN_ON_ONCE(!list_empty(&visock_net(net)->sk_list));
}

/**
 * visock_diag_link_sock() - put a new socket on its namespace's list
 * @vsk: the socket, being allocated; sock_net() is set
 *
 * Context: any; takes the namespace's sk_lock.
 */
void visock_diag_link_sock(struct visock_sock *vsk)
{
	struct visock_net *vn = visock_net(sock_net(&vsk->sk));

	/* The number under the lock: the list stays in number order. */
	spin_lock_bh(&vn->sk_lock);
	vsk->diag_id = atomic64_inc_return(&visock_diag_last_id);
	list_add_tail(&vsk->diag_node, &vn->sk_list);
	spin_unlock_bh(&vn->sk_lock);
}

/**
 * visock_diag_unlink_sock() - hide a socket from readers before teardown
 * @vsk: the socket
 *
 * Waits for a reader looking at @vsk (it holds lock_sock()).  Afterwards
 * no reader looks at it.  The socket leaves the list in its destructor.
 *
 * Context: process context; no socket lock held.
 */
void visock_diag_unlink_sock(struct visock_sock *vsk)
{
	lock_sock(&vsk->sk);
	set_bit(VISOCK_F_DIAG_GONE, &vsk->flags);
	release_sock(&vsk->sk);
}

/**
 * visock_diag_destruct() - the socket's memory is about to be freed
 * @vsk: the socket, without references
 *
 * Context: any (wherever the last reference was dropped).
 */
void visock_diag_destruct(struct visock_sock *vsk)
{
	struct visock_net *vn = visock_net(sock_net(&vsk->sk));

	spin_lock_bh(&vn->sk_lock);
	list_del_init(&vsk->diag_node);
	spin_unlock_bh(&vn->sk_lock);
}

/*
 * The next socket of @vn after @prev (or from the start), whose number
 * is above @after, with a reference.  The reference the caller holds on
 * @prev keeps @prev on the list.
 */
static struct visock_sock *visock_diag_next(struct visock_net *vn,
					    struct visock_sock *prev,
					    u64 after)
{
	struct visock_sock *vsk, *found = NULL;
	struct list_head *pos;

	spin_lock_bh(&vn->sk_lock);
	pos = prev ? prev->diag_node.next : vn->sk_list.next;
	for (; pos != &vn->sk_list; pos = pos->next) {
		vsk = list_entry(pos, struct visock_sock, diag_node);
		if (vsk->diag_id <= after ||
		    !refcount_inc_not_zero(&vsk->sk.sk_refcnt))
			continue;
		found = vsk;
		break;
	}
	spin_unlock_bh(&vn->sk_lock);
	return found;
}

/*
 * Look at @vsk: under its lock_sock() with @fn if nobody owns it, else
 * ("busy") under its spinlock with @busy, if given.  Never waits for an
 * owner.
 */
static int visock_diag_visit(struct visock_sock *vsk, visock_diag_fn_t fn,
			     visock_diag_fn_t busy, void *arg)
{
	struct sock *sk = &vsk->sk;
	int err = 0;

	spin_lock_bh(&sk->sk_lock.slock);
	if (sock_owned_by_user_nocheck(sk)) {
		if (busy && !test_bit(VISOCK_F_DIAG_GONE, &vsk->flags))
			err = busy(vsk, arg);
		spin_unlock_bh(&sk->sk_lock.slock);
		return err;
	}
	/* What lock_sock() does when the socket is free, without waiting. */
	mutex_acquire(&sk->sk_lock.dep_map, 0, 1, _RET_IP_);
	sk->sk_lock.owned = 1;
	spin_unlock_bh(&sk->sk_lock.slock);

	if (!test_bit(VISOCK_F_DIAG_GONE, &vsk->flags))
		err = fn(vsk, arg);
	release_sock(sk);
	return err;
}

/**
 * visock_diag_walk() - look at every live socket of a namespace
 * @net: the namespace
 * @after: in: number of the last socket already looked at, 0 to start at
 *	the beginning; out: number of the last socket @fn accepted
 * @fn: called for each socket numbered above *@after that is not being
 *	torn down, under the socket's lock_sock(); returns 0 to go on
 * @busy: called instead of @fn, in atomic context under the socket's
 *	spinlock, for such a socket whose lock_sock() another task holds;
 *	it must not look at the vc or the data path.  NULL: such sockets
 *	are left out
 * @arg: passed to @fn and @busy
 *
 * Never waits for another task's lock_sock().
 *
 * Context: process context, no socket lock held; may sleep.
 * Return: 0 after the last socket, or the first nonzero value of @fn or
 *	@busy (*@after then names the socket before the one refused).
 */
int visock_diag_walk(struct net *net, u64 *after, visock_diag_fn_t fn,
		     visock_diag_fn_t busy, void *arg)
{
	struct visock_net *vn = visock_net(net);
	struct visock_sock *vsk, *next;
	int err = 0;

	vsk = visock_diag_next(vn, NULL, *after);
	while (vsk) {
		err = visock_diag_visit(vsk, fn, busy, arg);
		if (err) {
			sock_put(&vsk->sk);
			break;
		}
		*after = vsk->diag_id;
		next = visock_diag_next(vn, vsk, *after);
		sock_put(&vsk->sk);
		vsk = next;
	}
	return err;
}

/**
 * visock_diag_info() - what a socket reports about its connection
 * @vsk: the socket
 * @info: filled in (zeroed first)
 *
 * The one filler of struct visock_info: sock_diag and
 * getsockopt(VISOCK_INFO) both report what it writes.
 *
 * Context: process context, under lock_sock(@vsk).
 */
void visock_diag_info(struct visock_sock *vsk, struct visock_info *info)
{
	memset(info, 0, sizeof(*info));
	info->vi_mode = READ_ONCE(vsk->mode);
	info->vi_fallback_reason = READ_ONCE(vsk->fb_reason);
	info->vi_version = vsk->hs_version;
	info->vi_local_qpn = vsk->vc ? visock_vc_qpn(vsk->vc) : 0;
	info->vi_peer_qpn = vsk->peer_qpn;
	info->vi_local_token = vsk->local_token;
	info->vi_peer_token = vsk->peer_token;
	info->vi_rbuf_size = vsk->vc ? visock_vc_rbuf_size(vsk->vc) : 0;
	info->vi_peer_rbuf_size = vsk->peer_rbuf_size;
	if (test_bit(VISOCK_F_SYN_OPT, &vsk->flags))
		info->vi_flags |= VISOCK_INFO_F_SYN_OPT;
	if (test_bit(VISOCK_F_PEER_OPT, &vsk->flags))
		info->vi_flags |= VISOCK_INFO_F_PEER_OPT;
	if (test_bit(VISOCK_F_LINK_UP, &vsk->flags))
		info->vi_flags |= VISOCK_INFO_F_LINK_UP;
	if (test_bit(VISOCK_F_AUTH, &vsk->flags))
		info->vi_flags |= VISOCK_INFO_F_AUTH;
	if (test_bit(VISOCK_F_AUTH, &vsk->flags) && vsk->auth)
		info->vi_xform = vsk->auth->xform;
	visock_dp_query(vsk, info, NULL);
}

/**
 * visock_diag_addrs() - the TCP 4-tuple and state of a socket
 * @vsk: the socket; its internal TCP socket must not go away meanwhile
 *	(lock_sock(), or a caller inside the connection's own processing)
 * @m: vdiag_tcp_state, the ports and the addresses filled in; the rest is
 *	left alone
 *
 * Context: any.
 */
void visock_diag_addrs(const struct visock_sock *vsk, struct visock_diag_msg *m)
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

/*
 * One socket into @skb.  Under lock_sock(), or @busy: under the socket's
 * spinlock, without the vc and the data path.
 */
static int visock_diag_fill(struct sk_buff *skb, struct netlink_callback *cb,
			    struct visock_sock *vsk,
			    const struct visock_diag_req *req, bool busy)
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
	m->vdiag_uid = from_kuid_munged(user_ns, visock_sk_uid(sk));
	m->vdiag_ino = sock_i_ino(sk);
	m->vdiag_id = vsk->diag_id;

	if (busy) {
		lockdep_assert_held(&sk->sk_lock.slock);
		if (nla_put_flag(skb, VISOCK_DIAG_BUSY))
			goto cancel;
		nlmsg_end(skb, nlh);
		return 0;
	}
	lockdep_assert_held(&sk->sk_lock);
	if (req->vdiag_show & VISOCK_SHOW_INFO) {
		visock_diag_info(vsk, &info);
		if (nla_put(skb, VISOCK_DIAG_INFO, sizeof(info), &info))
			goto cancel;
	}
	if ((req->vdiag_show & VISOCK_SHOW_RING) &&
	    visock_dp_query(vsk, NULL, &ring)) {
		if (nla_put(skb, VISOCK_DIAG_RING, sizeof(ring), &ring))
			goto cancel;
	}
	if ((req->vdiag_show & VISOCK_SHOW_LINK) && vsk->vc) {
		visock_vc_diag(vsk->vc, &link);
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

struct visock_diag_dump_ctx {
	struct sk_buff *skb;
	struct netlink_callback *cb;
	const struct visock_diag_req *req;
};

static int visock_diag_dump_one(struct visock_sock *vsk, void *arg)
{
	struct visock_diag_dump_ctx *ctx = arg;

	if (!visock_diag_match(vsk, ctx->req))
		return 0;
	return visock_diag_fill(ctx->skb, ctx->cb, vsk, ctx->req, false);
}

static int visock_diag_dump_busy(struct visock_sock *vsk, void *arg)
{
	struct visock_diag_dump_ctx *ctx = arg;

	if (!visock_diag_match(vsk, ctx->req))
		return 0;
	return visock_diag_fill(ctx->skb, ctx->cb, vsk, ctx->req, true);
}

/*
 * Dump the sockets of the requester's namespace; cb->args[0] is the
 * number of the last socket already dumped.
 */
static int visock_diag_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct visock_diag_dump_ctx ctx = {
		.skb	= skb,
		.cb	= cb,
		.req	= nlmsg_data(cb->nlh),
	};
	u64 after = cb->args[0];

	visock_diag_walk(sock_net(skb->sk), &after, visock_diag_dump_one,
			 visock_diag_dump_busy, &ctx);
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
 * Counts the sockets of @net in one pass over its list: those in use
 * (as visock_diag_walk() would visit them: not torn down, referenced)
 * and those whose teardown started but is not over, and the connections
 * that listeners hold for accept().  A snapshot taken
 * under the list lock, without the sockets' locks.  Then adds the link
 * groups' QPs, connections and registered memory.
 *
 * Context: process context, no socket lock held.
 */
void visock_diag_gauges(struct net *net, struct visock_gauges *g)
{
	struct visock_net *vn = visock_net(net);
	struct visock_sock *vsk;

	memset(g, 0, sizeof(*g));
	spin_lock_bh(&vn->sk_lock);
	list_for_each_entry(vsk, &vn->sk_list, diag_node) {
		if (test_bit(VISOCK_F_DIAG_GONE, &vsk->flags))
			g->closing++;
		else if (refcount_read(&vsk->sk.sk_refcnt))
			g->sockets++;
		/* Children of listeners, also of one that is closing. */
		g->listen_queued += READ_ONCE(vsk->accept_len);
		g->listen_hs += READ_ONCE(vsk->accept_hs);
	}
	spin_unlock_bh(&vn->sk_lock);
	visock_lgr_gauges(net, g);
}

/**
 * visock_diag_show_all() - one line per visock sock of every namespace
 * @seq: where to print
 *
 * For debugging (debugfs "socks"): every sock that still exists, closed
 * or not, with its namespace, number, reference count, state, mode,
 * flags and which of its parts (internal TCP socket, vc, data path,
 * listener) it still holds.  The fields are read without the socket's
 * lock: a snapshot, not a consistent state.  A sock stays on its list,
 * and its memory valid, until its destructor takes the list lock.
 *
 * Context: process context; takes RCU and each namespace's sk_lock.
 */
void visock_diag_show_all(struct seq_file *seq)
{
	struct visock_sock *vsk;
	struct visock_net *vn;
	struct net *net;

	rcu_read_lock();
	for_each_net_rcu(net) {
		if (!maybe_get_net(net))
			continue;
		vn = visock_net(net);
		spin_lock_bh(&vn->sk_lock);
		list_for_each_entry(vsk, &vn->sk_list, diag_node)
			seq_printf(seq,
				   "net %u id %llu ref %u state %u mode %u fb %u flags %#lx tcp %d link %d dp %d listener %d orphan %d\n",
				   net->ns.inum, vsk->diag_id,
				   refcount_read(&vsk->sk.sk_refcnt),
				   READ_ONCE(vsk->sk.sk_state),
				   READ_ONCE(vsk->mode),
				   READ_ONCE(vsk->fb_reason),
				   READ_ONCE(vsk->flags),
				   !!READ_ONCE(vsk->tcp),
				   !!READ_ONCE(vsk->vc),
				   !!READ_ONCE(vsk->dp),
				   !!READ_ONCE(vsk->listener),
				   sock_flag(&vsk->sk, SOCK_DEAD));
		spin_unlock_bh(&vn->sk_lock);
		put_net(net);
	}
	rcu_read_unlock();
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
