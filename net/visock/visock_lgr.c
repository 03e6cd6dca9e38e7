// SPDX-License-Identifier: GPL-2.0
/*
 * visock: link groups - RDMA queue pairs shared by connections.
 *
 * Objects
 * -------
 * struct visock_qp owns the verbs objects of one reliable connection to a
 * peer host: a PD, a CQ (core CQ API, polled in softirq context), an RC
 * QP, the cursor message slots (receive slots for the whole QP, send
 * slots per connection index) and a pool of registered ring buffers.
 * The QPs of a namespace with the same role (client or server), local
 * GID and peer address form a link group: a client reuses one of them
 * for a new connection to the same peer as long as it is up and has
 * room, creates a new one while the group has fewer than
 * net.visock.lgr_max_links, and otherwise waits for one being set up or
 * falls back to TCP.  A server only creates QPs when a client asks for a
 * new one and attaches connections to the QP the client names.
 *
 * Sizes
 * -----
 * A QP's work queues, completion queue and cursor slots are sized for
 * its @max_conns when it is created, and devices cannot add work
 * requests to a QP later.  So a group grows by its QPs instead: its
 * first QP takes net.visock.lgr_link_conns_min connections, each new
 * one twice the largest the group has up, up to lgr_link_conns
 * (visock_lgr_qp_size()).  Full QPs of the group smaller than the new
 * one are retired (visock_lgr_retire_outgrown()): they keep their
 * connections, take no new ones and go once idle, and they no longer
 * count against lgr_max_links, so a group that grew still gets
 * lgr_max_links QPs of the full size; the QP caps below count them until
 * they are freed.
 * A server sizes the QP a client asks for the same way from all QPs of
 * its own group, whatever their state: they include the server's end of
 * every QP the client has up, so the server's end is at least as large
 * as the client's, in whatever order the REQs arrive, as long as both
 * hosts use the same lgr_link_conns_min and lgr_link_conns.
 *
 * Whatever the groups allow, a namespace has at most
 * net.visock.lgr_peer_qps_max QPs with one peer host and lgr_qps_max in
 * all, counting every QP until it is freed (visock_lgr_qp_allowed()),
 * and the estimated memory of their queues counts against
 * net.visock.lgr_mem_max_mb together with the rings: a peer that makes
 * us create QPs and then lets them die cannot pile them up.  So does the
 * state of every connection's transform pair (visock_lgr_xform_charge()):
 * its AEADs, record buffers and compressor are allocated per connection
 * whoever asked for them, a peer included.
 *
 * struct visock_vc is one connection's share of a QP: a token (slot
 * index plus random bits) the peer puts in its messages, a receive ring
 * and a send buffer from the QP's pool, the peer's ring, and the data
 * path's receive callback and dead callback.  The data path
 * (visock_rdma.c, visock_tx.c, visock_rx.c, visock_cdc.c, visock_close.c,
 * visock_failover.c) only sees struct visock_vc.
 *
 * Receive completions are dispatched by the QP: the immediate data of a
 * WRITE WITH IMMEDIATE and the token of a cursor message name the
 * connection; unknown and stale ones are dropped and counted.  Send
 * completions go straight to the data path's handlers, which end with
 * visock_vc_wc_done() so that a connection is only freed once none of
 * its work requests is outstanding.
 *
 * Lifetime
 * --------
 * - A QP is referenced by its namespace's list (until the idle work or
 *   the namespace's exit takes it off), by every connection attached to
 *   it and temporarily by a device removal.  Its verbs objects are
 *   released by a kill (device removal, a stuck peer) or when it leaves
 *   the list; the structure goes with the last reference.
 * - A QP whose last connection left gets its idle work: after
 *   net.visock.lgr_idle_ms (client) or twice that plus two seconds
 *   (server; the client normally ends it first with a link message) it
 *   is taken off the list - unless a connection attached in the meantime,
 *   which the list lock orders - and destroyed.  A dead or dying QP goes
 *   at once, a retired one after its lingering connections (bounded like
 *   an idle one's).  Either end sends the delete link message before it
 *   destroys a QP that is up, so that the other takes no new connection
 *   on it.
 * - Rings go back to the pool when their connection ends, the receive
 *   ring only if the peer said it will not write any more (closed or
 *   abort flag); otherwise it and the token index stay reserved until the
 *   QP ends (quarantine), so that a late write cannot reach another
 *   connection.
 * - When the device goes away the ib_client remove callback kills each
 *   QP of the device: posting stops, the QP is drained (every request
 *   completes, flushed), verbs objects are released and every attached
 *   connection's dead_cb is called.  Memory stays until the connection
 *   and the QP are gone, so received data can still be read.
 *
 * Files
 * -----
 *   visock_lgr.c   link groups: pick, idle, ring pool, reap, namespaces
 *   visock_ib.c    devices; a QP's verbs objects and state changes
 *   visock_wr.c    work requests: posting, receive dispatch
 *   visock_llc.c   link messages: delete link, keepalive, switch decline
 *   visock_vc.c  a connection's share of a QP
 *   visock_rbuf.c  registered rings
 *
 * Locks, outermost first
 * ----------------------
 *   struct visock_net.lgr_lock   mutex; the namespace's QP list, each
 *                                QP's @nconns, @listed, @dying
 *   struct visock_qp.lock        mutex; verbs objects, state, the pool,
 *                                the connection list, dead_cb
 *   visock_ibdevs_lock           mutex in visock_ib.c; the device list
 *   struct visock_ibdev.lock     mutex; a device's list of QPs
 *   struct visock_qp.conns       xarray lock (BH); the token table; held
 *                                while a receive completion is handled
 *   struct visock_dp.lock        the data path's, inside the above
 *   struct visock_qp.post_lock   spinlock (BH); whether the QP may be
 *                                posted to; innermost
 *   struct visock_net.qp_all_lock  spinlock (BH); every QP not freed yet,
 *                                for the QP caps; innermost
 * The device removal path never holds a device lock while it takes a
 * QP's lock.
 */
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/jiffies.h>
#include <linux/log2.h>
#include <linux/netdevice.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <linux/wait_bit.h>
#include <net/ipv6.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>

#include "visock_ib.h"
#include "visock_lgr.h"
#include "visock_llc.h"
#include "visock_trace.h"
#include "visock_fault.h"

static void visock_qp_free(struct kref *ref);
static void visock_qp_reap_work(struct work_struct *work);

/* ------------------------------------------------------------------ */
/* Lifetime of a QP                                                    */
/* ------------------------------------------------------------------ */

/**
 * visock_qp_queue_idle() - run a QP's idle work after a delay
 * @q: the QP
 * @delay: in jiffies
 *
 * A queued work holds a reference.  Nothing may disable idle_work (no
 * cancel_delayed_work_sync()): a disabled work makes mod_delayed_work()
 * return false without queueing.
 *
 * Context: any context; the caller holds a reference.
 */
void visock_qp_queue_idle(struct visock_qp *q, unsigned long delay)
{
	kref_get(&q->ref);
	/* Already queued: that queueing holds one. */
	if (mod_delayed_work(visock_wq, &q->idle_work, delay))
		kref_put(&q->ref, visock_qp_free);
}

static void visock_qp_free_rbufs(struct visock_qp *q, struct list_head *list)
{
	struct visock_rbuf *rb, *tmp;

	list_for_each_entry_safe(rb, tmp, list, node) {
		list_del(&rb->node);
		visock_rbuf_free(rb);
	}
}

/* The last reference: everything is released but the memory. */
static void visock_qp_free(struct kref *ref)
{
	struct visock_qp *q = container_of(ref, struct visock_qp, ref);
	struct visock_net *vn = visock_net(q->net);
	unsigned int i;

	WARN_ON_ONCE(q->ibqp || q->listed || !list_empty(&q->vcs));
	spin_lock_bh(&vn->qp_all_lock);
	list_del(&q->all_node);
	spin_unlock_bh(&vn->qp_all_lock);
	visock_qp_free_rbufs(q, &q->pool);
	visock_qp_free_rbufs(q, &q->quarantine);
	atomic64_sub(q->reg_bytes + q->qp_bytes, &vn->lgr_mem);
	atomic64_sub(q->qp_bytes, &vn->lgr_qp_mem);
	/*
	 * The last use of @vn: the namespace's exit may free it as soon as
	 * the count drops.  wake_up_var() only hashes the address.
	 */
	if (atomic_dec_and_test(&vn->lgr_qps_alive))
		wake_up_var(&vn->lgr_qps_alive);
	if (q->ctrl_pages)
		for (i = 0; i < q->ctrl_npages; i++)
			if (q->ctrl_pages[i])
				__free_page(q->ctrl_pages[i]);
	kfree(q->ctrl_pages);
	kfree(q->ctrl_dma);
	kvfree(q->rx);
	xa_destroy(&q->conns);
	mutex_destroy(&q->lock);
	kfree(q);
}

/* ------------------------------------------------------------------ */
/* Link groups                                                         */
/* ------------------------------------------------------------------ */

/* The QP number of @q's server end, by which LINK TLVs name @q. */
static u32 visock_qp_server_qpn(const struct visock_qp *q)
{
	return q->server ? q->qpn : q->peer_qpn;
}

static bool visock_qp_same_group(const struct visock_qp *q, bool server,
				 const union ib_gid *gid,
				 const union ib_gid *peer_addr)
{
	return q->server == server && !memcmp(&q->gid, gid, sizeof(*gid)) &&
	       !memcmp(&q->peer_addr, peer_addr, sizeof(*peer_addr));
}

/*
 * Whether @a and @b, peer addresses as GIDs, belong to the same host as
 * far as the QP caps go: the same IPv4 address, or IPv6 addresses in the
 * same /64 (a host gets the addresses of a whole /64 for free).
 */
static bool visock_same_peer_host(const union ib_gid *a,
				  const union ib_gid *b)
{
	bool v4 = ipv6_addr_v4mapped((const struct in6_addr *)a->raw);

	if (v4 != ipv6_addr_v4mapped((const struct in6_addr *)b->raw))
		return false;
	return !memcmp(a->raw, b->raw, v4 ? sizeof(a->raw) : 8);
}

/*
 * May the namespace create one more QP with the peer at @peer_addr?
 * Every QP counts until it is freed, whatever its state: being set up,
 * up, dying, or off the list and being torn down.  The caps are
 * net.visock.lgr_peer_qps_max per peer host (visock_same_peer_host())
 * and net.visock.lgr_qps_max per namespace; 0 derives them from
 * lgr_max_links.  Context: under the namespace's lgr_lock.
 */
static bool visock_lgr_qp_allowed(struct visock_net *vn,
				  const union ib_gid *peer_addr)
{
	int links = clamp_t(int, READ_ONCE(vn->lgr_max_links), 1, 64);
	int peer_max = READ_ONCE(vn->lgr_peer_qps_max) ?:
		       VISOCK_LGR_PEER_QPS_FACTOR * links;
	int net_max = READ_ONCE(vn->lgr_qps_max) ?:
		      VISOCK_LGR_NET_QPS_FACTOR * links;
	struct visock_qp *q;
	int n = 0;

	lockdep_assert_held(&vn->lgr_lock);
	if (atomic_read(&vn->lgr_qps_alive) >= net_max)
		return false;
	spin_lock_bh(&vn->qp_all_lock);
	list_for_each_entry(q, &vn->qp_all, all_node)
		if (visock_same_peer_host(&q->peer_addr, peer_addr))
			n++;
	spin_unlock_bh(&vn->qp_all_lock);
	return n < peer_max;
}

/* Token indices in use: lingering connections keep theirs. */
static unsigned int visock_qp_used(const struct visock_qp *q)
{
	return q->nconns + atomic_read(&q->nlinger);
}

/* A QP that can take one more connection.  Under lgr_lock. */
static bool visock_qp_has_room(const struct visock_qp *q)
{
	lockdep_assert_held(&visock_net(q->net)->lgr_lock);
	return q->state == VISOCK_QP_UP && !READ_ONCE(q->dying) &&
	       !READ_ONCE(q->dead) && !test_bit(VISOCK_QP_BROKEN, &q->broken) &&
	       visock_qp_used(q) < q->max_conns;
}

/* The most connections a QP takes: lgr_link_conns. */
static unsigned int visock_lgr_conns_max(struct visock_net *vn)
{
	return clamp_t(int, READ_ONCE(vn->lgr_link_conns), 1,
		       VISOCK_LGR_CONNS_MAX);
}

/*
 * Connections a new QP of a group takes, @largest being the most any QP
 * of the group takes now (0 if it has none): lgr_link_conns_min for the
 * first, then twice the largest, never more than @max (lgr_link_conns).
 */
static unsigned int visock_lgr_qp_size(struct visock_net *vn,
				       unsigned int largest, unsigned int max)
{
	unsigned int min = clamp_t(int, READ_ONCE(vn->lgr_link_conns_min), 1,
				   max);

	return clamp_t(unsigned int, 2 * largest, min, max);
}

/*
 * Does a new QP of @size connections outgrow @q, a QP of its group?  A
 * client's QP that is up (@up) and full (it keeps its connections,
 * takes no new one and goes once idle), any of a server's that is
 * smaller (it keeps taking the connections the client names, see
 * @superseded); not one on its way out or superseded already.  Neither
 * counts against lgr_max_links any more once outgrown.  Context: under
 * the namespace's lgr_lock.
 */
static bool visock_qp_outgrown(const struct visock_qp *q, bool server,
			       bool up, unsigned int size)
{
	lockdep_assert_held(&visock_net(q->net)->lgr_lock);
	if (READ_ONCE(q->dying) || READ_ONCE(q->dead) || q->superseded ||
	    q->max_conns >= size)
		return false;
	return server || (up && visock_qp_used(q) >= q->max_conns);
}

/*
 * Retire the QPs of a group that a new QP of @size connections outgrows
 * (visock_qp_outgrown()).  Context: under the namespace's lgr_lock.
 */
static void visock_lgr_retire_outgrown(struct visock_net *vn, bool server,
				       const union ib_gid *gid,
				       const union ib_gid *peer_addr,
				       unsigned int size)
{
	struct visock_qp *q;

	lockdep_assert_held(&vn->lgr_lock);
	list_for_each_entry(q, &vn->qps, net_node) {
		if (!visock_qp_same_group(q, server, gid, peer_addr) ||
		    !visock_qp_outgrown(q, server,
					q->state == VISOCK_QP_UP, size))
			continue;
		if (server) {
			q->superseded = true;
		} else {
			WRITE_ONCE(q->dying, true);
			WRITE_ONCE(q->retired, true);
		}
	}
}

/*
 * Lingering connections whose peer never sends its flag (it cannot: no
 * credit, or its end never got far enough; or it is broken) hold their
 * slots until the QP ends.  A client's QP that is full, and lingering
 * connections hold half of it, takes no new connection any more: it ends
 * after its last live one, taking them along, and a new QP serves the
 * group instead of the group staying full.  (A server's QP that is full
 * declines with LINK_GONE, which retires the client's QPs of the group.)
 * Context: under the namespace's lgr_lock.
 */
static bool visock_qp_retire_full(struct visock_qp *q)
{
	int linger = atomic_read(&q->nlinger);

	lockdep_assert_held(&visock_net(q->net)->lgr_lock);
	if (q->state != VISOCK_QP_UP || visock_qp_used(q) < q->max_conns ||
	    linger < max_t(int, q->max_conns / 2, 1))
		return false;
	WRITE_ONCE(q->dying, true);
	WRITE_ONCE(q->retired, true);
	atomic64_inc(&visock_net(q->net)->lgr_retired);
	return true;
}

static unsigned long visock_qp_idle_delay(const struct visock_qp *q)
{
	unsigned long d;

	/* Gone at once if no connection ever completed its handshake. */
	if (READ_ONCE(q->dying) || READ_ONCE(q->dead) ||
	    test_bit(VISOCK_QP_BROKEN, &q->broken) ||
	    q->state != VISOCK_QP_UP || !READ_ONCE(q->confirmed))
		return 0;
	d = msecs_to_jiffies(READ_ONCE(visock_net(q->net)->lgr_idle_ms));
	/* The client normally ends it first, with a link message. */
	return q->server ? 2 * d + 2 * HZ : d;
}

/**
 * visock_lgr_switch_qp() - the QP a lazy connection's SWITCH names
 * @net: namespace
 * @local: local address of the connection's internal TCP socket
 * @peer: peer address of that socket
 * @sw: the peer's SWITCH (its LINK TLV names the QP by its server end)
 * @server: our end of the QP is the server's
 *
 * Only a QP of the connection's own link group that is not dead
 * qualifies (see visock_lgr_switch_decline()).  A SWITCH naming a
 * QP of another group is counted (switch_foreign).
 *
 * Context: process context, may sleep (takes the namespace's lgr_lock).
 * Return: the QP with a reference (visock_qp_put()), or NULL.
 */
struct visock_qp *visock_lgr_switch_qp(struct net *net,
				       const struct sockaddr *local,
				       const struct sockaddr *peer,
				       const struct visock_hs_msg *sw,
				       bool server)
{
	struct visock_net *vn = visock_net(net);
	struct visock_qp *q, *found = NULL;
	union ib_gid gid, peer_addr;
	bool foreign = false;

	if (visock_sa_to_gid(local, &gid) || visock_sa_to_gid(peer, &peer_addr))
		return NULL;
	mutex_lock(&vn->lgr_lock);
	list_for_each_entry(q, &vn->qps, net_node) {
		if (!visock_qp_same_group(q, server, &gid, &peer_addr)) {
			foreign |= visock_qp_server_qpn(q) == sw->lgr_id;
			continue;
		}
		if (visock_qp_server_qpn(q) == sw->lgr_id &&
		    q->peer_qpn == sw->qpn && !READ_ONCE(q->dead)) {
			kref_get(&q->ref);
			found = q;
			break;
		}
	}
	mutex_unlock(&vn->lgr_lock);
	if (!found && foreign)
		atomic64_inc(&vn->switch_foreign);
	return found;
}

/*
 * Take down a QP that is off the namespace's list: tell the peer, release
 * the verbs objects, and reap its connections.  The caller still holds
 * the list's reference.  Context: process context, may sleep (up to the
 * delete message's timeout and the QP's drain).
 */
static void visock_qp_teardown(struct visock_qp *q)
{
	visock_qp_send_delete(q);
	mutex_lock(&q->lock);
	trace_visock_link_down(q->qpn, q->state == VISOCK_QP_UP, false);
	visock_qp_release_verbs(q);
	WRITE_ONCE(q->dead, true);
	mutex_unlock(&q->lock);
	visock_qp_ka_stop(q);
	visock_qp_reap(q, true);
	flush_work(&q->reap_work);
}

/*
 * Destroy a QP nobody uses any more, unless a connection attached in the
 * meantime.  Context: process context (visock_wq).
 */
static void visock_qp_idle_work(struct work_struct *work)
{
	struct visock_qp *q = container_of(to_delayed_work(work),
					   struct visock_qp, idle_work);
	struct visock_net *vn = visock_net(q->net);

	mutex_lock(&vn->lgr_lock);
	if (q->nconns || !q->listed) {
		mutex_unlock(&vn->lgr_lock);
		goto out;
	}
	/*
	 * Connections that ended before the peer closed its side linger:
	 * the peer still sends on the QP (its closed flag, which reaps
	 * them, and waits for that to complete).  Destroying the QP now
	 * would leave those requests to the transport's retries; wait for
	 * them a while, unless the QP is of no use anyway.  A retired QP is
	 * healthy: its last connections' peers are still sending.
	 */
	if (atomic_read(&q->nlinger) && READ_ONCE(q->confirmed) &&
	    (!READ_ONCE(q->dying) || READ_ONCE(q->retired)) &&
	    !READ_ONCE(q->peer_deleted) && !READ_ONCE(q->dead) &&
	    !test_bit(VISOCK_QP_BROKEN, &q->broken) &&
	    time_before(jiffies, READ_ONCE(q->linger_last) +
				 VISOCK_LINGER_MAX)) {
		mutex_unlock(&vn->lgr_lock);
		visock_qp_queue_idle(q, VISOCK_LINGER_CHECK);
		goto out;
	}
	list_del_init(&q->net_node);
	q->listed = false;
	WRITE_ONCE(q->dying, true);
	/* Counted as it leaves the "qps" gauge. */
	atomic64_inc(&vn->lgr_qps_destroyed);
	mutex_unlock(&vn->lgr_lock);

	if (visock_fault(VISOCK_FP_QP_TEARDOWN))
		msleep(VISOCK_FAULT_DELAY_MS);
	visock_qp_teardown(q);
	kref_put(&q->ref, visock_qp_free);	/* the list's */
out:
	kref_put(&q->ref, visock_qp_free);	/* the queueing's */
}

/* A new QP, listed and reserved for its first connection. */
static struct visock_qp *visock_qp_new(struct visock_net *vn, struct net *net,
				       bool server, const union ib_gid *gid,
				       const union ib_gid *peer_addr,
				       u8 ack_timeout, unsigned int max_conns)
{
	struct visock_qp *q;

	if (visock_fault(VISOCK_FP_QP_ALLOC))
		return NULL;
	q = kzalloc(sizeof(*q), GFP_KERNEL);
	if (!q)
		return NULL;
	/* Counts against the QP caps from now until it is freed. */
	atomic_inc(&vn->lgr_qps_alive);
	kref_init(&q->ref);		/* the list's */
	mutex_init(&q->lock);
	spin_lock_init(&q->post_lock);
	INIT_LIST_HEAD(&q->dev_node);
	INIT_LIST_HEAD(&q->net_node);
	INIT_LIST_HEAD(&q->all_node);
	INIT_LIST_HEAD(&q->vcs);
	INIT_LIST_HEAD(&q->pool);
	INIT_LIST_HEAD(&q->quarantine);
	INIT_DELAYED_WORK(&q->idle_work, visock_qp_idle_work);
	INIT_WORK(&q->reap_work, visock_qp_reap_work);
	visock_llc_init(q);
	xa_init_flags(&q->conns, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_BH);
	q->net = net;
	q->server = server;
	q->gid = *gid;
	q->peer_addr = *peer_addr;
	q->ack_timeout = ack_timeout;
	q->max_conns = max_conns;
	q->state = VISOCK_QP_NEW;
	atomic64_set(&q->wr_posted, 0);
	atomic64_set(&q->wc_ok, 0);
	atomic64_set(&q->wc_err, 0);
	atomic64_set(&q->rx_stale, 0);
	return q;
}

/**
 * visock_lgr_peer_up() - could a new connection to @peer join a QP now
 * @net: namespace of the connection
 * @peer: the peer's address (sockaddr_in or sockaddr_in6)
 * @len: its length
 *
 * For the lazy start (visock/lazy-switch.rst): true if one of our QPs to
 * @peer, set up by our side (client role), is up, confirmed and has room,
 * so that a connection started on TCP can move to it later without
 * creating one.  A hint: the QP may be gone by the time the connection
 * switches, which then declines and stays on TCP.
 *
 * Context: process context, may sleep (takes the namespace's lgr_lock).
 * Return: true if such a QP exists now.
 */
bool visock_lgr_peer_up(struct net *net, const struct sockaddr *peer,
			int len)
{
	struct visock_net *vn = visock_net(net);
	union ib_gid peer_addr;
	struct visock_qp *q;
	bool up = false;

	if (len < (int)sizeof(struct sockaddr_in) ||
	    (peer->sa_family == AF_INET6 &&
	     len < (int)sizeof(struct sockaddr_in6)) ||
	    visock_sa_to_gid(peer, &peer_addr))
		return false;
	mutex_lock(&vn->lgr_lock);
	list_for_each_entry(q, &vn->qps, net_node) {
		if (q->server || !READ_ONCE(q->confirmed) ||
		    memcmp(&q->peer_addr, &peer_addr, sizeof(peer_addr)))
			continue;
		if (visock_qp_has_room(q) && !visock_qp_retire_full(q)) {
			up = true;
			break;
		}
	}
	mutex_unlock(&vn->lgr_lock);
	return up;
}

/*
 * Choose the QP for a new connection and reserve a place on it (@nconns),
 * with a reference.  Sets *@created if the QP is new: the caller sets it
 * up.  Context: process context.
 * Return: the QP, or ERR_PTR(-EINPROGRESS) (client: wait for a QP being
 * set up), -EBUSY (the group is full), -EDQUOT (a QP cap is reached, see
 * visock_lgr_qp_allowed()), -ENOLINK (server: the QP the client named is
 * gone), -EBADMSG (server: the GID in the client's message is not the
 * address of its TCP connection) or -ENOMEM.
 */
struct visock_qp *visock_lgr_pick(const struct visock_vc_params *p,
				  const union ib_gid *gid,
				  const union ib_gid *peer_addr, bool *created)
{
	struct visock_net *vn = visock_net(p->net);
	const struct visock_hs_msg *req = p->req;
	bool server = p->server;
	unsigned int in_group = 0, max_links, largest = 0, size, room = 0;
	unsigned int conns_max, outgrown = 0;
	struct visock_qp *q, *best = NULL;
	bool pending = false, up;

	*created = false;
	/*
	 * The QP would connect to the GID the client names: it must be the
	 * client's own address, or any host could point our QPs at a
	 * third one.
	 */
	if (req && memcmp(req->gid, peer_addr->raw, sizeof(req->gid))) {
		atomic64_inc(&vn->lgr_gid_mismatch);
		return ERR_PTR(-EBADMSG);
	}
	max_links = clamp_t(int, READ_ONCE(vn->lgr_max_links), 1, 64);
	conns_max = visock_lgr_conns_max(vn);
	mutex_lock(&vn->lgr_lock);
	list_for_each_entry(q, &vn->qps, net_node) {
		if (!visock_qp_same_group(q, server, gid, peer_addr))
			continue;
		if (req && req->lgr_id) {
			if (visock_qp_server_qpn(q) == req->lgr_id &&
			    q->peer_qpn == req->qpn && visock_qp_has_room(q))
				best = q;
			continue;
		}
		/* QPs on their way out do not count against the limit. */
		if (READ_ONCE(q->dying) || READ_ONCE(q->dead))
			continue;
		if (!server && visock_qp_retire_full(q))
			continue;
		/*
		 * A client sizes from QPs that are up: the server set up
		 * its end of each already, so its own group (any state)
		 * yields at least this size however REQs cross.
		 */
		up = q->state == VISOCK_QP_UP;
		if (server || up)
			largest = max(largest, q->max_conns);
		/*
		 * What a new QP would outgrow, if one is added.  Its size
		 * is not known yet, but every QP that may count here adds
		 * to @largest, and the new one takes twice @largest unless
		 * lgr_link_conns caps it: it outgrows those that a QP of
		 * lgr_link_conns would.
		 */
		if (!q->superseded) {
			in_group++;
			outgrown += visock_qp_outgrown(q, server, up,
						       conns_max);
		}
		if (req)
			continue;
		/* A server joins a lazy connection's QP only if it is up. */
		if (server && q->state != VISOCK_QP_UP)
			continue;
		if (q->state == VISOCK_QP_NEW || q->state == VISOCK_QP_INIT)
			pending |= !READ_ONCE(q->dying);
		/* The most room first: smaller QPs empty and go. */
		if (visock_qp_has_room(q) &&
		    q->max_conns - visock_qp_used(q) > room) {
			room = q->max_conns - visock_qp_used(q);
			best = q;
		}
	}
	if (!best && ((req && req->lgr_id) || (server && !req))) {
		/* A server sets up no QP without the client's REQ. */
		best = ERR_PTR(-ENOLINK);
	} else if (!best) {
		size = visock_lgr_qp_size(vn, largest, conns_max);
		/*
		 * A server keeps a few more than the client may want: QPs
		 * the client gave up without telling us end by idling.  A
		 * full group that can still grow does, retiring QPs the
		 * new one outgrows.
		 */
		max_links = server ? 2 * max_links : max_links;
		if (in_group >= max_links &&
		    (pending || in_group - outgrown >= max_links)) {
			best = ERR_PTR(pending ? -EINPROGRESS : -EBUSY);
		} else if (!visock_lgr_qp_allowed(vn, peer_addr)) {
			atomic64_inc(&vn->lgr_qps_capped);
			best = ERR_PTR(-EDQUOT);
		} else {
			best = visock_qp_new(vn, p->net, server, gid, peer_addr,
					     p->ack_timeout, size);
			if (!best)
				best = ERR_PTR(-ENOMEM);
		}
		if (!IS_ERR(best)) {
			visock_lgr_retire_outgrown(vn, server, gid, peer_addr,
						   size);
			*created = true;
			best->listed = true;
			list_add_tail(&best->net_node, &vn->qps);
			spin_lock_bh(&vn->qp_all_lock);
			list_add_tail(&best->all_node, &vn->qp_all);
			spin_unlock_bh(&vn->qp_all_lock);
			atomic64_inc(&vn->lgr_qps_created);
		}
	}
	if (!IS_ERR(best)) {
		best->nconns++;
		kref_get(&best->ref);
		/* Not idle any more; the list's reference stays. */
		if (cancel_delayed_work(&best->idle_work))
			kref_put(&best->ref, visock_qp_free);
	}
	mutex_unlock(&vn->lgr_lock);
	return best;
}

/*
 * Give back the place visock_lgr_pick() reserved, and the reference if
 * @put (a lingering connection keeps it).
 */
void visock_lgr_unpick(struct visock_qp *q, bool put)
{
	struct visock_net *vn = visock_net(q->net);

	mutex_lock(&vn->lgr_lock);
	if (!--q->nconns && q->listed)
		visock_qp_queue_idle(q, visock_qp_idle_delay(q));
	mutex_unlock(&vn->lgr_lock);
	if (put)
		kref_put(&q->ref, visock_qp_free);
}

/* ------------------------------------------------------------------ */
/* Rings from the pool                                                 */
/* ------------------------------------------------------------------ */

/*
 * A ring of @size bytes for direction @dir: a registered one from the
 * pool (a receive ring gets a new key before its next registration,
 * visock_rbuf_new_rkey()), else a new one (registered later by
 * visock_vc_connect()).
 * Context: process context, under the QP's lock.
 */
int visock_qp_get_rbuf(struct visock_qp *q, u32 size,
		       enum dma_data_direction dir, struct visock_rbuf **out)
{
	struct visock_net *vn = visock_net(q->net);
	struct visock_rbuf *rb;
	u64 max;
	int err;

	lockdep_assert_held(&q->lock);
	*out = NULL;
	list_for_each_entry(rb, &q->pool, node) {
		if (rb->size == size && rb->dir == dir &&
		    (rb->registered || rb->stale)) {
			list_del_init(&rb->node);
			*out = rb;
			return 0;
		}
	}
	max = (u64)READ_ONCE(vn->lgr_mem_max_mb) << 20;
	if (atomic64_add_return(size, &vn->lgr_mem) > max) {
		atomic64_sub(size, &vn->lgr_mem);
		/* Make room: pooled rings nobody asked for go first. */
		rb = list_first_entry_or_null(&q->pool, struct visock_rbuf,
					      node);
		if (!rb)
			return -ENOBUFS;
		list_del(&rb->node);
		q->reg_bytes -= rb->size;
		atomic64_sub(rb->size, &vn->lgr_mem);
		visock_rbuf_release_dma(q, rb);
		visock_rbuf_free(rb);
		if (atomic64_add_return(size, &vn->lgr_mem) > max) {
			atomic64_sub(size, &vn->lgr_mem);
			return -ENOBUFS;
		}
	}
	q->reg_bytes += size;
	err = visock_rbuf_create(q, size, dir, out);
	if (err && *out) {
		visock_rbuf_release_dma(q, *out);
		visock_rbuf_free(*out);
		*out = NULL;
	}
	if (err) {
		q->reg_bytes -= size;
		atomic64_sub(size, &vn->lgr_mem);
	}
	return err;
}

/*
 * Give a ring back: to the pool if it is (or was) registered and may be
 * reused, to the quarantine if the peer may still write to it, else
 * free it.
 * Context: process context, under the QP's lock.
 */
void visock_qp_put_rbuf(struct visock_qp *q, struct visock_rbuf *rb,
			bool reusable)
{
	struct visock_net *vn = visock_net(q->net);

	lockdep_assert_held(&q->lock);
	if (!rb)
		return;
	if (q->dead || !(rb->registered || rb->stale) || !rb->mr) {
		visock_rbuf_release_dma(q, rb);
		q->reg_bytes -= rb->size;
		atomic64_sub(rb->size, &vn->lgr_mem);
		visock_rbuf_free(rb);
	} else {
		list_add(&rb->node, reusable ? &q->pool : &q->quarantine);
	}
}

/* ------------------------------------------------------------------ */
/* Connections                                                         */
/* ------------------------------------------------------------------ */

/**
 * visock_vc_peer_forgot() - the peer does not know the QP we named
 * @l: the client's vc that joined an existing QP
 *
 * The server declined with VISOCK_FB_LINK_GONE: it restarted, lost its
 * device or ended the QP.  It has most likely lost every QP of the
 * group, so none of them takes new connections any more; each goes once
 * its connections have.
 *
 * Context: process context.
 */
void visock_vc_peer_forgot(struct visock_vc *l)
{
	struct visock_qp *q = l->qp, *o;
	struct visock_net *vn = visock_net(q->net);

	mutex_lock(&vn->lgr_lock);
	list_for_each_entry(o, &vn->qps, net_node)
		if (visock_qp_same_group(o, q->server, &q->gid,
					 &q->peer_addr)) {
			WRITE_ONCE(o->dying, true);
			WRITE_ONCE(o->retired, false);
		}
	mutex_unlock(&vn->lgr_lock);
}

/*
 * Receive callback of a connection that ended before the peer said it
 * would not write any more: wait for its closed or abort flag, then let
 * the reap work give the ring and the token index back.  Softirq, under
 * the token table's lock.
 */
void visock_vc_linger_rx(void *ctx, const struct visock_rx_ev *ev)
{
	struct visock_vc *l = ctx;
	struct visock_qp *q = l->qp;
	struct visock_cdc m;

	lockdep_assert_held(&q->conns.xa_lock);
	if (ev->kind != VISOCK_RX_CTRL || visock_cdc_decode(ev->msg, ev->len, &m))
		return;
	if (!(m.flags & (VISOCK_CDC_F_CLOSED | VISOCK_CDC_F_ABORT)) ||
	    READ_ONCE(l->peer_quiet))
		return;
	WRITE_ONCE(l->peer_quiet, true);
	kref_get(&q->ref);
	if (!queue_work(visock_wq, &q->reap_work))
		kref_put(&q->ref, visock_qp_free);
}

/*
 * Free lingering connections: those whose peer went quiet, or all of
 * them (@all: the QP is dead).  Context: process context, no QP lock.
 */
void visock_qp_reap(struct visock_qp *q, bool all)
{
	struct visock_net *vn = visock_net(q->net);
	struct visock_vc *l, *tmp;
	unsigned int n = 0;
	LIST_HEAD(gone);

	mutex_lock(&q->lock);
	list_for_each_entry_safe(l, tmp, &q->vcs, qp_node) {
		if (!l->lingering || !(all || READ_ONCE(l->peer_quiet)))
			continue;
		/* No receive callback runs once it is out of the table. */
		xa_erase_bh(&q->conns, l->idx);
		visock_qp_put_rbuf(q, l->rbuf, READ_ONCE(l->peer_quiet));
		l->rbuf = NULL;
		list_move(&l->qp_node, &gone);
	}
	mutex_unlock(&q->lock);
	list_for_each_entry_safe(l, tmp, &gone, qp_node) {
		kfree(l);
		n++;
	}
	if (!n)
		return;
	atomic_sub(n, &q->nlinger);
	/* The idle work may have been waiting for these. */
	if (!all) {
		mutex_lock(&vn->lgr_lock);
		if (!q->nconns && q->listed)
			visock_qp_queue_idle(q, visock_qp_idle_delay(q));
		mutex_unlock(&vn->lgr_lock);
	}
	while (n--)
		kref_put(&q->ref, visock_qp_free);
}

/**
 * visock_qp_put() - drop a reference to a QP
 * @q: the QP
 *
 * Context: process context (the last reference frees the QP's memory).
 */
void visock_qp_put(struct visock_qp *q)
{
	kref_put(&q->ref, visock_qp_free);
}

static void visock_qp_reap_work(struct work_struct *work)
{
	struct visock_qp *q = container_of(work, struct visock_qp, reap_work);

	visock_qp_reap(q, false);
	kref_put(&q->ref, visock_qp_free);	/* the queueing's */
}

/* ------------------------------------------------------------------ */
/* Namespaces                                                          */
/* ------------------------------------------------------------------ */

/**
 * visock_lgr_net_init() - link group state of a new namespace
 * @net: the namespace
 *
 * Context: process context, pernet init.
 */
void visock_lgr_net_init(struct net *net)
{
	struct visock_net *vn = visock_net(net);

	mutex_init(&vn->lgr_lock);
	INIT_LIST_HEAD(&vn->qps);
	spin_lock_init(&vn->qp_all_lock);
	INIT_LIST_HEAD(&vn->qp_all);
	atomic_set(&vn->lgr_qps_alive, 0);
	init_waitqueue_head(&vn->lgr_wq);
	atomic64_set(&vn->lgr_mem, 0);
	atomic64_set(&vn->lgr_qp_mem, 0);
	atomic64_set(&vn->lgr_xform_mem, 0);
}

/**
 * visock_lgr_net_exit() - destroy the QPs left in a namespace
 * @net: the namespace going away; it has no visock socket any more, so
 *	every QP left is idle
 *
 * Destroys the QPs still listed, then waits until every QP of the
 * namespace is freed: one whose idle work took it off the list already
 * may still be telling the peer (up to VISOCK_LINK_MSG_TIMEOUT) or
 * draining, and its last reference writes the namespace's counters.
 *
 * Context: process context, pernet exit (also at module unload).
 */
void visock_lgr_net_exit(struct net *net)
{
	struct visock_net *vn = visock_net(net);
	struct visock_qp *q, *tmp;
	LIST_HEAD(gone);

	mutex_lock(&vn->lgr_lock);
	list_for_each_entry_safe(q, tmp, &vn->qps, net_node) {
		WARN_ON_ONCE(q->nconns);
		q->listed = false;
		list_move(&q->net_node, &gone);
	}
	mutex_unlock(&vn->lgr_lock);

	list_for_each_entry_safe(q, tmp, &gone, net_node) {
		list_del_init(&q->net_node);
		/*
		 * Sees @listed false if it runs.  Not
		 * cancel_delayed_work_sync(): since 6.10 it disables the work
		 * while it waits, and a visock_qp_queue_idle() meanwhile would
		 * neither queue it nor drop its reference.  The flush runs and
		 * waits for whatever was queued since.
		 */
		if (cancel_delayed_work(&q->idle_work))
			kref_put(&q->ref, visock_qp_free);
		flush_delayed_work(&q->idle_work);
		visock_qp_teardown(q);
		atomic64_inc(&vn->lgr_qps_destroyed);
		kref_put(&q->ref, visock_qp_free);
	}
	/* QPs in teardown, and works that still hold a reference. */
	wait_var_event(&vn->lgr_qps_alive, !atomic_read(&vn->lgr_qps_alive));
	mutex_destroy(&vn->lgr_lock);
}

/**
 * visock_lgr_gauges() - the link group part of a namespace's gauges
 * @net: the namespace
 * @g: its QPs, those up, registered ring bytes, attached and lingering
 *	connections are added; the messages dropped for stale tokens, the
 *	QPs not freed yet and the bytes of their queues are set
 *
 * Context: process context.
 */
void visock_lgr_gauges(struct net *net, struct visock_gauges *g)
{
	struct visock_net *vn = visock_net(net);
	struct visock_qp *q;

	mutex_lock(&vn->lgr_lock);
	list_for_each_entry(q, &vn->qps, net_node) {
		g->qps++;
		if (q->state == VISOCK_QP_UP && !READ_ONCE(q->dead))
			g->links_up++;
		g->lgr_conns += q->nconns;
		g->lgr_lingering += atomic_read(&q->nlinger);
	}
	mutex_unlock(&vn->lgr_lock);
	g->lgr_stale = atomic64_read(&vn->lgr_stale);
	g->qps_alive = atomic_read(&vn->lgr_qps_alive);
	g->qp_bytes = atomic64_read(&vn->lgr_qp_mem);
	g->xform_bytes = atomic64_read(&vn->lgr_xform_mem);
	g->reg_bytes = atomic64_read(&vn->lgr_mem);
	g->reg_bytes -= min(g->reg_bytes, g->qp_bytes);
	g->reg_bytes -= min(g->reg_bytes, g->xform_bytes);
}

/**
 * visock_lgr_xform_charge() - charge a connection's transform state
 * @net: the connection's namespace
 * @bytes: what its transform pair's state takes
 *	(visock_dp_rec_init())
 *
 * Counted in the namespace's memory budget (net.visock.lgr_mem_max_mb)
 * with the rings and the QPs' queues, and shown on its own
 * (/proc/net/visock xform_bytes).  Never forced: a charge that does not
 * fit is refused, and nothing is given up to make room for it (pooled
 * rings are only given up for rings).
 *
 * Context: any context.
 * Return: 0, or -ENOSPC if @bytes do not fit the budget.
 */
int visock_lgr_xform_charge(struct net *net, u64 bytes)
{
	struct visock_net *vn = visock_net(net);
	u64 max = (u64)READ_ONCE(vn->lgr_mem_max_mb) << 20;

	if (atomic64_add_return(bytes, &vn->lgr_mem) > max) {
		atomic64_sub(bytes, &vn->lgr_mem);
		return -ENOSPC;
	}
	atomic64_add(bytes, &vn->lgr_xform_mem);
	return 0;
}

/**
 * visock_lgr_xform_uncharge() - return what visock_lgr_xform_charge() took
 * @net: the namespace it was charged to
 * @bytes: the same bytes
 *
 * Context: any context.
 */
void visock_lgr_xform_uncharge(struct net *net, u64 bytes)
{
	struct visock_net *vn = visock_net(net);

	atomic64_sub(bytes, &vn->lgr_xform_mem);
	atomic64_sub(bytes, &vn->lgr_mem);
}
