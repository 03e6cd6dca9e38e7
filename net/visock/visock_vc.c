// SPDX-License-Identifier: GPL-2.0
/*
 * visock: virtual connections (vc), a connection's share of a link group's
 * queue pair.
 *
 * struct visock_vc is what the handshake and the data path use: a
 * token the peer puts in its messages, a receive ring and a send buffer
 * from the QP's pool, the peer's ring, and the receive and dead
 * callbacks.  visock_vc_create() picks (or creates) the QP,
 * visock_vc_connect() connects a new QP or checks the peer's view of a
 * shared one and registers new rings, visock_vc_destroy() waits for the
 * connection's outstanding work requests and hands its rings back (or
 * lets the connection linger until the peer is quiet).  The posting
 * functions put the connection's work requests on the shared QP; each
 * send completion handler ends with visock_vc_wc_done().
 *
 * Lifetime and locking rules are at the top of visock_lgr.c.  Ownership
 * of a vc, and the locks its functions need:
 *
 * - The owner (the socket's data path) owns its vc from
 *   visock_vc_create() until visock_vc_destroy() hands it on.  The
 *   functions that touch a QP's pool, state or connection list take the
 *   QP's lock themselves; the static helpers that need it held say so
 *   with lockdep_assert_held().
 * - visock_vc_destroy() either frees the vc itself (the peer is
 *   quiet) or publishes it as lingering.  Publishing (@lingering set
 *   under the QP's lock) hands the vc to the QP: from the moment the
 *   lock is dropped a reap (visock_qp_reap(), from the reap work, the
 *   idle work, the namespace's exit or a kill) may free it, together
 *   with the reference to the QP it held.  Whatever destroy still needs
 *   of the vc it reads before that, under the same lock, and it keeps
 *   the QP alive with a reference of its own until it is done with it.
 * - A receive ring the peer was told about (in the handshake, or in a
 *   lazy connection's SWITCH before the vc is connected) is the
 *   peer's to write until it is quiet: such a ring lingers rather than
 *   going back to the pool, however the connection ended, unless the QP
 *   is dead or broken (the peer's writes cannot arrive any more).
 * - A receive ring from the pool gets a new remote key when a connection
 *   takes it (visock_rbuf_new_rkey()), before the key goes into a REQ,
 *   REP or SWITCH; its registration invalidates the old key first.  The
 *   peer writes only after that registration (after CONFIRM, REP or the
 *   switch reply), so a WRITE with the old key that is later still is
 *   refused by the device, and one that is earlier lands in bytes the
 *   new peer overwrites before it announces them.
 */
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/log2.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/wait_bit.h>

#include "visock_debugfs.h"
#include "visock_ib.h"
#include "visock_lgr.h"
#include "visock_llc.h"
#include "visock_mem.h"
#include "visock_wr.h"
#include "visock_trace.h"
#include "visock_fault.h"

/* One request of @l less outstanding; may let its owner free it. */
static void visock_vc_put_wr(struct visock_vc *l)
{
	if (atomic_dec_and_test(&l->outstanding))
		wake_up_var(&l->outstanding);
}

/**
 * visock_vc_wc_done() - account for one send completion of a connection
 * @l: the connection the request was posted for
 * @wc: the completion
 *
 * Completion handlers of requests posted with visock_vc_post_write()
 * and visock_vc_post_ctrl() call this as their very last step: once
 * the last outstanding request of @l is accounted for, visock_vc_destroy()
 * may free the connection and its data path state.
 *
 * Context: softirq (completion handler).
 */
void visock_vc_wc_done(struct visock_vc *l, const struct ib_wc *wc)
{
	struct visock_qp *q = l->qp;

	visock_qp_count_wc(q, wc);
	if (wc->status != IB_WC_SUCCESS)
		set_bit(VISOCK_QP_BROKEN, &q->broken);
	visock_vc_put_wr(l);
}

/* Registration of a ring finished (or was flushed). */
static void visock_vc_reg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct visock_vc *l = container_of(wc->wr_cqe, struct visock_vc,
					   reg_cqe);

	visock_qp_count_wc(l->qp, wc);
	if (wc->status)
		WRITE_ONCE(l->reg_status, wc->status);
	if (atomic_dec_and_test(&l->reg_left))
		complete(&l->reg_done);
	visock_vc_put_wr(l);
}

/**
 * visock_vc_create() - a place for a new connection on a shared QP
 * @p: the connection's addresses, ring size and (server) the client's REQ
 * @out: the new connection's vc
 *
 * Client: joins the least used QP of the link group to the peer that is
 * up and has room, or creates a new QP (PD, CQ, QP in INIT) if the group
 * has fewer than net.visock.lgr_max_links.  Server: joins the QP the REQ
 * names (its LINK TLV), or creates a new one if the REQ asks for one.
 * Either way the connection gets a token and a receive ring of
 * @p->rbuf_size from the QP's pool (or a new one).
 * visock_vc_local_params() describes the result for the peer.
 *
 * The QP may be killed by a device removal as soon as this returns; an
 * owner that wants to be told uses visock_vc_set_dead_cb().
 *
 * Context: process context, may sleep.
 * Return: 0 and *@out set; -EINPROGRESS (client): every QP the group may
 * have is being set up, try again when visock_net.lgr_wq is woken;
 * -EBUSY: the group is full; -ENOLINK (server): the QP the client named
 * is gone; -ENOBUFS: the namespace's ring memory limit is reached;
 * -ENODEV if no usable RDMA device has the address; -EINVAL for a bad
 * size; -ENOMEM (also: @p->sk's memory cgroup refused the ring), or
 * another negative errno from ib_core.  On error
 * nothing is left allocated.
 */
int visock_vc_create(const struct visock_vc_params *p,
		     struct visock_vc **out)
{
	union ib_gid gid, peer_addr;
	struct visock_vc *l;
	struct visock_qp *q;
	bool created;
	u32 idx;
	int err;

	*out = NULL;
	if (!is_power_of_2(p->rbuf_size) || p->rbuf_size < VISOCK_RBUF_MIN ||
	    p->rbuf_size > VISOCK_RBUF_MAX)
		return -EINVAL;
	err = visock_sa_to_gid(p->local, &gid);
	if (!err)
		err = visock_sa_to_gid(p->peer, &peer_addr);
	if (err)
		return err;

	if (visock_fault(VISOCK_FP_VC_ALLOC))
		return -ENOMEM;
	l = kzalloc(sizeof(*l), GFP_KERNEL);
	if (!l)
		return -ENOMEM;
	INIT_LIST_HEAD(&l->qp_node);
	init_completion(&l->reg_done);
	l->reg_cqe.done = visock_vc_reg_done;
	atomic_set(&l->outstanding, 0);
	/* Charged before it takes the ring, returned by the destroy. */
	l->sk = p->sk;
	err = visock_mem_charge(l->sk, p->rbuf_size, &l->charged);
	if (err) {
		kfree(l);
		return err;
	}

	q = visock_lgr_pick(p, &gid, &peer_addr, &created);
	if (IS_ERR(q)) {
		visock_mem_uncharge(l->sk, &l->charged);
		kfree(l);
		return PTR_ERR(q);
	}
	l->qp = q;
	l->created_qp = created;

	mutex_lock(&q->lock);
	if (created) {
		err = visock_qp_setup(q, p->local);
		if (err)
			q->state = VISOCK_QP_FAILED;
	} else if (q->dead || q->state != VISOCK_QP_UP) {
		err = -ENOLINK;
	}
	if (!err)
		err = xa_alloc_cyclic_bh(&q->conns, &idx, l,
					 XA_LIMIT(1, q->max_conns),
					 &q->next_idx, GFP_KERNEL);
	if (err == 1)
		err = 0;	/* the allocation wrapped */
	if (err) {
		mutex_unlock(&q->lock);
		goto fail;
	}
	l->idx = idx;
	l->token = (get_random_u32() << VISOCK_TOKEN_IDX_BITS) | idx;
	list_add_tail(&l->qp_node, &q->vcs);
	err = visock_qp_get_rbuf(q, p->rbuf_size, DMA_FROM_DEVICE, &l->rbuf);
	/* A ring another connection had: the peer learns a new key. */
	if (!err && (l->rbuf->registered || l->rbuf->stale))
		visock_rbuf_new_rkey(l->rbuf);
	mutex_unlock(&q->lock);
	if (err)
		goto fail;

	if (!created) {
		/* LINK names the QP by the server's end's number. */
		l->lgr_id = p->req ? p->req->lgr_id :
			    q->server ? q->qpn : q->peer_qpn;
		atomic64_inc(&visock_net(p->net)->lgr_reused);
	}
	*out = l;
	return 0;

fail:
	if (created) {
		/* Waiters for this QP look again (and find it failed). */
		WRITE_ONCE(q->dying, true);
		wake_up_all(&visock_net(p->net)->lgr_wq);
	}
	visock_vc_destroy(l);
	return err;
}

/**
 * visock_vc_local_params() - describe our end of the connection
 * @l: the vc
 * @m: handshake message to fill in
 *
 * Sets @m's GID, QPN, PSN, MTU (of the shared QP), RBUF (this
 * connection's ring), TOKEN and LINK (the peer's QP number when joining
 * an existing QP, else 0; our QP number) fields and their present bits;
 * leaves all other fields alone.
 *
 * Context: any context.
 */
void visock_vc_local_params(const struct visock_vc *l,
			    struct visock_hs_msg *m)
{
	const struct visock_qp *q = l->qp;

	memcpy(m->gid, q->gid.raw, sizeof(m->gid));
	m->qpn = q->qpn;
	m->psn = q->psn;
	m->mtu = q->mtu;
	m->rbuf_addr = l->rbuf->iova;
	m->rbuf_rkey = l->rbuf->rkey;
	m->rbuf_size = l->rbuf->size;
	m->token = l->token;
	m->lgr_id = l->lgr_id;
	m->link_id = q->qpn;
	m->present |= VISOCK_HSF(VISOCK_TLV_GID) | VISOCK_HSF(VISOCK_TLV_QPN) |
		      VISOCK_HSF(VISOCK_TLV_PSN) | VISOCK_HSF(VISOCK_TLV_MTU) |
		      VISOCK_HSF(VISOCK_TLV_RBUF) |
		      VISOCK_HSF(VISOCK_TLV_TOKEN) |
		      VISOCK_HSF(VISOCK_TLV_LINK);
}

/**
 * visock_vc_peer_params() - describe the peer's end of a shared QP
 * @l: a vc on a QP that is up
 * @m: message to fill in
 *
 * For a lazy connection's switch (visock_lazy.c), whose reply carries
 * only the peer's ring and token: sets @m's GID, QPN, PSN, MTU and LINK
 * as the peer's REP would have, from what the QP knows of the peer, so
 * that visock_vc_connect() accepts @m once RBUF and TOKEN are added.
 *
 * Context: any context.
 */
void visock_vc_peer_params(const struct visock_vc *l,
			   struct visock_hs_msg *m)
{
	const struct visock_qp *q = l->qp;

	memcpy(m->gid, q->peer_gid.raw, sizeof(m->gid));
	m->qpn = q->peer_qpn;
	m->psn = 0;
	m->mtu = q->mtu;
	m->lgr_id = q->peer_qpn;
	m->link_id = q->peer_qpn;
	m->present |= VISOCK_HSF(VISOCK_TLV_GID) | VISOCK_HSF(VISOCK_TLV_QPN) |
		      VISOCK_HSF(VISOCK_TLV_PSN) | VISOCK_HSF(VISOCK_TLV_MTU) |
		      VISOCK_HSF(VISOCK_TLV_LINK);
}

/**
 * visock_vc_confirmed() - the connection's handshake succeeded
 * @l: the vc
 *
 * From now on the QP is kept for lgr_idle_ms after its last connection.
 *
 * Context: any context.
 */
void visock_vc_confirmed(struct visock_vc *l)
{
	WRITE_ONCE(l->qp->confirmed, true);
}

/**
 * visock_vc_peer_listens() - may a message to the peer be posted now
 * @l: the vc
 *
 * True once the peer's QP receives: our end is connected, and either we
 * are the client (the server's QP was ready before its REP) or some
 * handshake on the QP completed.  A server whose client never took its
 * REP does not know that the client's QP is ready: a message to a QP
 * that is not would fail ours after its retries.
 *
 * Context: process context; the caller keeps @l alive.
 * Return: true if a message to the peer's QP may be posted.
 */
bool visock_vc_peer_listens(const struct visock_vc *l)
{
	return l->connected && (!l->qp->server || READ_ONCE(l->qp->confirmed));
}

/**
 * visock_vc_token() - the token the peer puts in its messages to us
 * @l: the vc
 *
 * Context: any context.
 * Return: the token, never 0.
 */
u32 visock_vc_token(const struct visock_vc *l)
{
	return l->token;
}

/**
 * visock_vc_reused() - did the connection join an existing QP?
 * @l: the vc
 *
 * Context: any context.
 * Return: true if no QP was created for it.
 */
bool visock_vc_reused(const struct visock_vc *l)
{
	return !l->created_qp;
}

/*
 * Post the registrations of the rings that are new, each preceded by the
 * invalidation of the ring's old key if it has one (all signaled, so
 * that each completion is accounted for; a failed invalidation flushes
 * the registration after it).  Under the QP's lock.
 * Return: number of requests posted, or a negative errno.
 */
static int visock_vc_post_reg(struct visock_vc *l)
{
	struct visock_rbuf *rbs[2] = { l->sbuf, l->rbuf };
	struct ib_send_wr inv[2] = {}, *first = NULL, **next = &first;
	struct ib_reg_wr reg[2] = {};
	struct visock_qp *q = l->qp;
	int i, n = 0, err;

	lockdep_assert_held(&q->lock);
	for (i = 0; i < 2; i++) {
		struct visock_rbuf *rb = rbs[i];

		if (!rb || rb->registered)
			continue;
		if (rb->stale) {
			inv[i].opcode = IB_WR_LOCAL_INV;
			inv[i].wr_cqe = &l->reg_cqe;
			inv[i].send_flags = IB_SEND_SIGNALED;
			inv[i].ex.invalidate_rkey = rb->inv_rkey;
			*next = &inv[i];
			next = &inv[i].next;
			n++;
		}
		reg[i].wr.opcode = IB_WR_REG_MR;
		reg[i].wr.wr_cqe = &l->reg_cqe;
		reg[i].wr.send_flags = IB_SEND_SIGNALED;
		reg[i].mr = rb->mr;
		if (rb->dir == DMA_FROM_DEVICE) {
			reg[i].key = rb->mr->rkey;
			reg[i].access = IB_ACCESS_LOCAL_WRITE |
					IB_ACCESS_REMOTE_WRITE;
		} else {
			reg[i].key = rb->mr->lkey;
			reg[i].access = IB_ACCESS_LOCAL_WRITE;
		}
		*next = &reg[i].wr;
		next = &reg[i].wr.next;
		n++;
	}
	if (!n)
		return 0;
	atomic_set(&l->reg_left, n);
	reinit_completion(&l->reg_done);
	l->reg_status = IB_WC_SUCCESS;
	err = visock_wr_post_send(q, l, first, VISOCK_FP_POST_REG, NULL, NULL);
	return err ? err : n;
}

/* The registrations of @l's rings succeeded.  Under the QP's lock. */
static void visock_vc_reg_ok(struct visock_vc *l)
{
	struct visock_rbuf *rbs[2] = { l->sbuf, l->rbuf };
	struct visock_qp *q = l->qp;
	int i;

	lockdep_assert_held(&q->lock);
	for (i = 0; i < 2; i++) {
		struct visock_rbuf *rb = rbs[i];

		if (!rb || rb->registered)
			continue;
		rb->registered = true;
		if (rb->stale) {
			rb->stale = false;
			atomic64_inc(&visock_net(q->net)->lgr_rkey_rotations);
		}
	}
}

/* Register the new rings of @l and wait.  Under the QP's lock. */
static int visock_vc_register(struct visock_vc *l)
{
	struct visock_qp *q = l->qp;
	int n;

	lockdep_assert_held(&q->lock);
	n = visock_vc_post_reg(l);
	if (n <= 0)
		return n;
	/*
	 * A device removal takes the QP's lock to drain the QP, which is
	 * what would complete a stuck registration: do not hold it.
	 */
	mutex_unlock(&q->lock);
	if (!wait_for_completion_timeout(&l->reg_done,
					 VISOCK_VC_REG_TIMEOUT)) {
		mutex_lock(&q->lock);
		return -ETIMEDOUT;
	}
	mutex_lock(&q->lock);
	if (q->dead)
		return -ENODEV;
	if (READ_ONCE(l->reg_status) != IB_WC_SUCCESS)
		return -EIO;
	visock_vc_reg_ok(l);
	return 0;
}

/**
 * visock_vc_register_rx() - register the receive ring of a new vc now
 * @l: a vc fresh from visock_vc_create() on a QP that is up
 *
 * A lazy connection's client (visock_lazy.c) names its ring in the
 * SWITCH, and the server writes into it as soon as it answers, before
 * visock_vc_connect() would register it: register it first.  From now
 * on the ring counts as announced: visock_vc_destroy() does not give
 * it back before the peer is quiet, also if the vc never connects.
 * An owner that did not send the SWITCH after all, or whose switch the
 * peer declined, says so with visock_vc_peer_quiet() first.
 *
 * Context: process context, may sleep.
 * Return: 0, -ENODEV if the QP is dead, -ETIMEDOUT or -EIO as
 * visock_vc_connect().
 */
int visock_vc_register_rx(struct visock_vc *l)
{
	struct visock_qp *q = l->qp;
	int err;

	mutex_lock(&q->lock);
	err = q->dead ? -ENODEV : visock_vc_register(l);
	/* Only a registered ring can be written to. */
	if (!err)
		l->announced = true;
	mutex_unlock(&q->lock);
	return err;
}

/*
 * Is @token what the peer gave for another connection of ours on @q that
 * is connected (or connecting) and not lingering?  The peer draws new
 * random bits for every token it hands out (random <<
 * VISOCK_TOKEN_IDX_BITS | index), so a legitimate REQ or REP never
 * repeats the token of a live connection: this one is replayed.  Only
 * the whole token counts: the peer may reuse an index while our end of
 * its old connection is still closing.  Under the QP's lock.
 */
static bool visock_qp_peer_token_live(struct visock_qp *q,
				      const struct visock_vc *l, u32 token)
{
	const struct visock_vc *o;

	lockdep_assert_held(&q->lock);
	list_for_each_entry(o, &q->vcs, qp_node)
		if (o != l && o->peer_token == token && !o->lingering)
			return true;
	return false;
}

/**
 * visock_vc_connect() - finish the connection's part of the QP
 * @l: the vc, fresh from visock_vc_create()
 * @peer: the peer's REQ or REP, validated by the codec
 *
 * If the connection created its QP, moves it to RTR and RTS towards the
 * peer's GID, QPN and PSN with the smaller of both MTUs.  A connection
 * that joined an existing QP checks that the peer speaks of the same QP
 * and does not give the token of another live connection on it (a
 * replayed REQ or REP).
 * Then takes a send buffer as large as the peer's ring from the pool,
 * registers whatever ring is new (waiting up to 5 s) and remembers the
 * peer's ring for the data path.  Can be called once per vc; after a
 * failure the owner can only destroy the vc.  The peer's token must
 * have a nonzero index (its low VISOCK_TOKEN_IDX_BITS).
 *
 * Context: process context, may sleep.  Not concurrently with
 * visock_vc_destroy() for the same vc.
 * Return: 0 once the vc is usable, -ENODEV if the device went away,
 * -ETIMEDOUT if the registration did not complete in time, -EIO if it
 * failed, -EPROTO if the peer's message does not match the QP or repeats
 * the token of another connection on it, -EINVAL if
 * @l is not fresh or @peer lacks a field, -ENOBUFS at the memory limit,
 * -ENOMEM if the socket's memory cgroup refused the send buffer, or
 * another negative errno from ib_core.
 */
int visock_vc_connect(struct visock_vc *l,
		      const struct visock_hs_msg *peer)
{
	struct visock_qp *q = l->qp;
	bool was_new = false;
	u32 size = peer->rbuf_size;
	int err;

	if ((peer->present & VISOCK_VC_PEER_NEED) != VISOCK_VC_PEER_NEED ||
	    l->connected)
		return -EINVAL;
	/* Our immediate data names the peer's connection by its index. */
	if (!is_power_of_2(size) || size < VISOCK_RBUF_MIN ||
	    size > VISOCK_RBUF_MAX || !(peer->token & VISOCK_TOKEN_IDX_MASK))
		return -EPROTO;
	/* The send buffer; a failure here leaves the vc to be destroyed. */
	err = visock_mem_charge(l->sk, size, &l->charged);
	if (err)
		return err;

	mutex_lock(&q->lock);
	if (q->dead) {
		err = -ENODEV;
		goto out;
	}
	if (l->created_qp) {
		/* The peer must not think it joined an old QP. */
		err = peer->lgr_id ? -EPROTO : visock_qp_connect(q, peer);
		was_new = true;
	} else {
		/* It must name the same QPs, and know that it joined. */
		err = 0;
		if (peer->qpn != q->peer_qpn ||
		    memcmp(peer->gid, q->peer_gid.raw, sizeof(peer->gid)) ||
		    (!q->server && peer->lgr_id != q->peer_qpn))
			err = -EPROTO;
		/* A replay would make us write into another one's ring. */
		else if (visock_qp_peer_token_live(q, l, peer->token))
			err = -EPROTO;
	}
	if (!err) {
		/*
		 * Taken from here on, also while the registration below
		 * drops the lock: a replay cannot slip in meanwhile.
		 */
		l->peer_token = peer->token;
		err = visock_qp_get_rbuf(q, size, DMA_TO_DEVICE, &l->sbuf);
	}
	if (!err)
		err = visock_vc_register(l);
	if (err)
		goto out;
	l->peer.addr = peer->rbuf_addr;
	l->peer.rkey = peer->rbuf_rkey;
	l->peer.size = size;
	l->connected = true;
	if (was_new) {
		q->state = VISOCK_QP_UP;
		visock_qp_ka_start(q);
	}
	trace_visock_link_up(dev_name(&q->ibdev->dev), q->port, q->qpn);
out:
	if (err && was_new)
		q->state = VISOCK_QP_FAILED;
	mutex_unlock(&q->lock);
	if (was_new) {
		if (err)
			WRITE_ONCE(q->dying, true);
		/* Connections waiting for a QP to the peer look again. */
		wake_up_all(&visock_net(q->net)->lgr_wq);
	}
	return err;
}

/**
 * visock_vc_destroy() - end a connection's part of its QP
 * @l: the vc, or NULL
 *
 * Stops the data path's receive callback, waits for the connection's
 * outstanding work requests (at most VISOCK_VC_DETACH_TIMEOUT, then
 * the QP is killed as stuck, which flushes them) and gives the send
 * buffer back to the pool.  The receive ring and the token index go back
 * too if the peer is quiet (visock_vc_peer_quiet()) or cannot write to
 * the ring (it never learnt of it, or the QP is dead or broken);
 * otherwise the connection lingers on the QP, without its owner, until
 * the peer's closed or abort flag arrives or the QP ends, so that a late
 * write cannot reach another connection.  The QP is destroyed once idle.
 * Once this returns neither the receive callback nor dead_cb runs or
 * will run, and no send completion of the connection is pending.
 *
 * Context: process context, may sleep; no spinlock held.
 */
void visock_vc_destroy(struct visock_vc *l)
{
	struct visock_qp *q;
	bool quiet, reap = false, dead = false;

	if (!l)
		return;
	q = l->qp;

	mutex_lock(&q->lock);
	l->dead_cb = NULL;
	l->dead_ctx = NULL;
	if (l->connected)
		q->last_peer = l->peer;
	mutex_unlock(&q->lock);

	/* A ring the peer learnt of is its to write until it is quiet. */
	quiet = READ_ONCE(l->peer_quiet) || (!l->connected && !l->announced) ||
		READ_ONCE(q->dead) || test_bit(VISOCK_QP_BROKEN, &q->broken);
	if (l->idx) {
		xa_lock_bh(&q->conns);
		if (quiet) {
			__xa_erase(&q->conns, l->idx);
		} else {
			l->rx_fn = visock_vc_linger_rx;
			l->rx_ctx = l;
		}
		xa_unlock_bh(&q->conns);
	}

	if (!wait_var_event_timeout(&l->outstanding,
				    !atomic_read(&l->outstanding),
				    VISOCK_VC_DETACH_TIMEOUT)) {
		/* The peer does not take what we send: give the QP up. */
		visock_qp_kill(q, "requests did not complete");
		wait_var_event(&l->outstanding, !atomic_read(&l->outstanding));
	}

	/* The rings are the QP's again (a lingering one too). */
	visock_mem_uncharge(l->sk, &l->charged);
	l->sk = NULL;
	mutex_lock(&q->lock);
	visock_qp_put_rbuf(q, l->sbuf, true);
	l->sbuf = NULL;
	if (quiet) {
		visock_qp_put_rbuf(q, l->rbuf, true);
		list_del_init(&l->qp_node);
	} else {
		/*
		 * Hand the vc to the QP (see the top of this file): a reap
		 * may free it, and drop its reference to the QP, as soon as
		 * the lock goes.  A flag that arrived while the receive
		 * callback was switched, or a kill meanwhile, is seen here;
		 * a later flag queues the reap work itself.
		 */
		kref_get(&q->ref);
		l->lingering = true;
		atomic_inc(&q->nlinger);
		WRITE_ONCE(q->linger_last, jiffies);
		dead = q->dead;
		reap = READ_ONCE(l->peer_quiet) || dead;
		l = NULL;
	}
	mutex_unlock(&q->lock);

	if (!quiet && visock_fault(VISOCK_FP_VC_LINGER))
		msleep(VISOCK_FAULT_DELAY_MS);
	visock_lgr_unpick(q, quiet);
	if (quiet) {
		kfree(l);
		return;
	}
	if (reap)
		visock_qp_reap(q, dead);
	visock_qp_put(q);
}

/* ------------------------------------------------------------------ */
/* Callbacks                                                           */
/* ------------------------------------------------------------------ */

/**
 * visock_vc_set_rx() - start delivering receive completions
 * @l: a connected vc
 * @fn: called for every receive meant for this connection (softirq, with
 *	the QP's token table lock held: it must not call back into
 *	visock_link_*() other than the posting functions and accessors)
 * @ctx: argument of @fn
 *
 * Also posts the receive requests the connection's credits need.  Must run
 * before the peer may send (before REP or CONFIRM).
 *
 * Context: process context, may sleep.
 * Return: 0, -ENODEV if the QP is dead or failed, or an error from
 * posting.
 */
int visock_vc_set_rx(struct visock_vc *l, visock_vc_rx_fn fn, void *ctx)
{
	struct visock_qp *q = l->qp;
	unsigned int n;
	int err;

	mutex_lock(&q->lock);
	err = -ENODEV;
	if (!q->dead && !test_bit(VISOCK_QP_BROKEN, &q->broken)) {
		n = READ_ONCE(q->nconns);
		err = visock_qp_fill_rq(q, n);
	}
	mutex_unlock(&q->lock);
	if (err)
		return err;
	xa_lock_bh(&q->conns);
	l->rx_ctx = ctx;
	l->rx_fn = fn;
	xa_unlock_bh(&q->conns);
	return 0;
}

/**
 * visock_vc_set_dead_cb() - ask to be told when the QP dies
 * @l: the vc
 * @dead_cb: called once if the QP is killed (device removed, stuck), or
 *	NULL
 * @ctx: argument for @dead_cb
 *
 * @dead_cb is called in process context with the QP's lock held: it
 * should only schedule work.
 *
 * Context: process context, may sleep.
 * Return: 0, or -ENODEV if the QP is dead already (@dead_cb is then
 * not installed and will not be called).
 */
int visock_vc_set_dead_cb(struct visock_vc *l,
			  void (*dead_cb)(void *ctx), void *ctx)
{
	struct visock_qp *q = l->qp;
	int err = 0;

	mutex_lock(&q->lock);
	if (q->dead) {
		err = -ENODEV;
	} else {
		l->dead_cb = dead_cb;
		l->dead_ctx = ctx;
	}
	mutex_unlock(&q->lock);
	return err;
}

/**
 * visock_vc_is_dead() - is the connection's QP of no use any more?
 * @l: the vc
 *
 * Context: any context.
 * Return: true once the QP was killed or a request on it failed.
 */
bool visock_vc_is_dead(const struct visock_vc *l)
{
	return READ_ONCE(l->qp->dead) ||
	       test_bit(VISOCK_QP_BROKEN, &l->qp->broken);
}

/**
 * visock_vc_suspect() - a connection on the QP failed over to TCP
 * @l: the vc
 *
 * The QP takes no new connections (they get a new one) and goes once its
 * connections have: its peer may have lost its end (device removed), or
 * requests may be stuck in retries.
 *
 * Context: any context.
 */
void visock_vc_suspect(struct visock_vc *l)
{
	WRITE_ONCE(l->qp->dying, true);
	/* Not healthy after all: no wait for lingering connections. */
	WRITE_ONCE(l->qp->retired, false);
}

/**
 * visock_vc_peer_quiet() - the peer will not write to our ring any more
 * @l: the vc
 *
 * Called when the peer's closed or abort flag arrives: the ring and the
 * token index may then be reused once the connection ends.
 *
 * Context: any context.
 */
void visock_vc_peer_quiet(struct visock_vc *l)
{
	WRITE_ONCE(l->peer_quiet, true);
}

/* ------------------------------------------------------------------ */
/* Data path helpers and accessors                                     */
/* ------------------------------------------------------------------ */

/**
 * visock_vc_qpn() - our QP number
 * @l: the vc
 *
 * Context: any context.
 * Return: the local number of the shared QP (kept after it is gone).
 */
u32 visock_vc_qpn(const struct visock_vc *l)
{
	return l->qp->qpn;
}

/**
 * visock_vc_rbuf() - kernel address of our receive ring
 * @l: the vc
 *
 * The memory stays valid until visock_vc_destroy(), also after a kill.
 *
 * Context: any context.
 * Return: start of the ring, visock_vc_rbuf_size() bytes long.
 */
void *visock_vc_rbuf(const struct visock_vc *l)
{
	return l->rbuf->kaddr;
}

/**
 * visock_vc_rbuf_sync_for_cpu() - make received bytes visible to the CPU
 * @l: the vc
 * @off: ring offset of the bytes the peer just wrote
 * @len: their number (the range may wrap at the end of the ring)
 *
 * Call from the receive callback that announced the bytes, before they
 * are read.
 *
 * Context: the receive callback (softirq): the ring is mapped until the
 * QP is drained, which waits for the callback.
 */
void visock_vc_rbuf_sync_for_cpu(struct visock_vc *l, u32 off, u32 len)
{
	struct visock_rbuf *rb = l->rbuf;

	if (rb && rb->dma_nents && off < rb->size && len <= rb->size)
		visock_rbuf_sync_wrap(l->qp->ibdev, rb, off, len, true);
}

/**
 * visock_vc_rbuf_size() - size of our receive ring
 * @l: the vc
 *
 * Context: any context.
 * Return: ring size in bytes.
 */
u32 visock_vc_rbuf_size(const struct visock_vc *l)
{
	return l->rbuf->size;
}

/**
 * visock_vc_peer_rbuf_size() - size of the peer's ring
 * @l: a connected vc
 *
 * Context: any context.
 * Return: ring size in bytes (0 before connecting).
 */
u32 visock_vc_peer_rbuf_size(const struct visock_vc *l)
{
	return l->peer.size;
}

/**
 * visock_vc_sbuf() - kernel address of our send buffer
 * @l: a connected vc
 *
 * The send buffer mirrors the peer's ring: visock_vc_post_write() copies
 * the bytes at offset o of it to offset o of the peer's ring.  The memory
 * stays valid until visock_vc_destroy(), also after a kill.
 *
 * Context: any context.
 * Return: start of the buffer, visock_vc_peer_rbuf_size() bytes long.
 */
void *visock_vc_sbuf(const struct visock_vc *l)
{
	/* A lazy client's vc has none until the switch reply. */
	return l->sbuf ? l->sbuf->kaddr : NULL;
}

/**
 * visock_vc_ctrl_slot() - a send slot for the connection's cursor messages
 * @l: the vc
 * @idx: slot number, below VISOCK_VC_SQ_DEPTH
 *
 * What visock_vc_post_ctrl(@idx) sends; write it only while no send of
 * that slot is outstanding.  Memory stays valid while the vc exists.
 *
 * Context: any context.
 * Return: the slot, VISOCK_QP_CTRL_SLOT bytes.
 */
void *visock_vc_ctrl_slot(const struct visock_vc *l, unsigned int idx)
{
	return visock_qp_slot(l->qp, visock_qp_tx_slot(l->qp, l->idx, idx));
}

/**
 * visock_vc_post_ctrl() - send a cursor message from a send slot
 * @l: a connected vc
 * @idx: send slot, below VISOCK_VC_SQ_DEPTH, already filled in
 * @len: message length, at most VISOCK_QP_CTRL_SLOT
 * @cqe: completion handler; it must end with visock_vc_wc_done()
 *
 * Posts one signaled SEND.  It consumes one receive request of the peer.
 *
 * Context: process or softirq context.
 * Return: 0, -ENOTCONN if the QP cannot be posted to, -ENODEV if it is
 * dead, or the error of ib_post_send().
 */
int visock_vc_post_ctrl(struct visock_vc *l, unsigned int idx, u32 len,
			struct ib_cqe *cqe)
{
	struct visock_qp *q = l->qp;

	if (WARN_ON_ONCE(idx >= VISOCK_VC_SQ_DEPTH ||
			 len > VISOCK_QP_CTRL_SLOT))
		return -EINVAL;
	return visock_wr_post_slot(q, l, visock_qp_tx_slot(q, l->idx, idx),
				   len, cqe, VISOCK_FP_POST_CTRL);
}

/* A WRITE of the send buffer, finished under the QP's post_lock. */
struct visock_vc_write {
	struct visock_vc *l;
	struct ib_sge *sge;
	int n;
	u32 off;
	u32 len;
};

/* The send buffer's key and DMA sync: valid while it may be posted. */
static int visock_vc_prep_write(struct visock_qp *q, void *arg)
{
	struct visock_vc_write *pw = arg;
	struct visock_rbuf *sbuf = pw->l->sbuf;
	int i;

	if (!sbuf->mr)
		return READ_ONCE(q->dead) ? -ENODEV : -ENOTCONN;
	/* The CPU wrote these bytes; the device reads them. */
	visock_rbuf_sync_wrap(q->ibdev, sbuf, pw->off, pw->len, false);
	for (i = 0; i < pw->n; i++) {
		pw->sge[i].addr += sbuf->iova;
		pw->sge[i].lkey = sbuf->mr->lkey;
	}
	return 0;
}

static struct visock_vc_stale {
	struct ib_cqe cqe;
	struct visock_vc *l;
} visock_vc_stale;

static void visock_vc_stale_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct visock_vc *l = visock_vc_stale.l;

	WRITE_ONCE(visock_test_stale_status, wc->status);
	WRITE_ONCE(visock_test_stale_done, visock_test_stale_done + 1);
	visock_vc_wc_done(l, wc);
}

/*
 * Test hook stale_write (visock_debugfs.c): one 8-byte WRITE to the ring
 * of the connection that ended last on the QP, with the key it knew.
 */
static void visock_vc_test_stale_write(struct visock_vc *l)
{
	struct visock_qp *q = l->qp;
	struct visock_peer_rbuf old = q->last_peer;
	struct visock_vc_write pw = { .l = l, .n = 1, .len = 8 };
	struct ib_rdma_wr wr = {};
	struct ib_sge sge = { .length = 8 };

	if (!old.rkey || old.size != l->peer.size ||
	    cmpxchg(&visock_test_stale_write, 1, 0) != 1)
		return;
	visock_vc_stale.cqe.done = visock_vc_stale_done;
	visock_vc_stale.l = l;
	WRITE_ONCE(visock_test_stale_old_rkey, old.rkey);
	WRITE_ONCE(visock_test_stale_new_rkey, l->peer.rkey);
	wr.wr.wr_cqe = &visock_vc_stale.cqe;
	wr.wr.sg_list = &sge;
	wr.wr.num_sge = 1;
	wr.wr.opcode = IB_WR_RDMA_WRITE;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.remote_addr = old.addr;
	wr.rkey = old.rkey;
	pw.sge = &sge;
	if (visock_wr_post_send(q, l, &wr.wr, VISOCK_FP_NR,
				visock_vc_prep_write, &pw))
		WRITE_ONCE(visock_test_stale_write, 1);
}

/* The forged WRITE of debugfs forge_write; one at a time. */
static struct visock_vc_forge {
	struct ib_cqe cqe;
	struct visock_vc *l;
	unsigned long busy;
} visock_vc_forge;

static void visock_vc_forge_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct visock_vc *l = visock_vc_forge.l;

	WRITE_ONCE(visock_test_forge_status, wc->status);
	WRITE_ONCE(visock_test_forge_done, visock_test_forge_done + 1);
	clear_bit_unlock(0, &visock_vc_forge.busy);
	/* Last: @l may go as soon as nothing is outstanding. */
	visock_vc_wc_done(l, wc);
}

/**
 * visock_vc_test_forge() - post a forged WRITE into the peer's ring
 * @l: a connected vc
 * @off: offset in the send buffer and in the peer's ring; the range
 *	must not wrap
 * @len: bytes, already in the send buffer at @off
 * @imm: immediate data for the peer's receive completion
 *
 * Test hook forge_write (visock_debugfs.c): one RDMA WRITE WITH
 * IMMEDIATE with the peer's ring key, as an attacker on the path would
 * post it; its completion only updates the hook's counters.  One forged
 * WRITE is in flight at a time.
 *
 * Context: process or softirq context.
 * Return: 0, -EBUSY while the last one is in flight, -EINVAL for a
 * range that wraps, or an error of visock_vc_post_write().
 */
int visock_vc_test_forge(struct visock_vc *l, u32 off, u32 len, __be32 imm)
{
	int n;

	if (!len || off >= l->peer.size || len > l->peer.size - off)
		return -EINVAL;
	if (test_and_set_bit_lock(0, &visock_vc_forge.busy))
		return -EBUSY;
	visock_vc_forge.cqe.done = visock_vc_forge_done;
	visock_vc_forge.l = l;
	n = visock_vc_post_write(l, off, len, imm, &visock_vc_forge.cqe);
	if (n < 0) {
		clear_bit_unlock(0, &visock_vc_forge.busy);
		return n;
	}
	return 0;
}

/**
 * visock_vc_post_write() - RDMA WRITE a range of the send buffer
 * @l: a connected vc
 * @off: offset of the range in the send buffer and in the peer's ring
 * @len: length, 1 .. min(visock_vc_peer_rbuf_size(), VISOCK_IMM_LEN_MAX)
 * @imm: immediate data for the peer's receive completion
 * @cqe: completion handler; it must end with visock_vc_wc_done()
 *
 * Writes the bytes at @off (wrapping at the end of the buffer) to the
 * same offsets of the peer's ring.  Without a wrap this is one RDMA WRITE
 * WITH IMMEDIATE; with a wrap a plain WRITE of the tail followed by a
 * WRITE WITH IMMEDIATE of the rest, posted as one chain.  Every request is
 * signaled.  Exactly one receive request of the peer is consumed.
 *
 * Context: process or softirq context.
 * Return: the number of work requests posted (1 or 2), -EINVAL for a bad
 * range, or an error as visock_vc_post_ctrl() (then nothing may be
 * assumed about the first request of a chain).
 */
int visock_vc_post_write(struct visock_vc *l, u32 off, u32 len,
			 __be32 imm, struct ib_cqe *cqe)
{
	struct visock_qp *q = l->qp;
	struct visock_vc_write pw;
	struct ib_rdma_wr wr[2] = {};
	struct ib_sge sge[2];
	u32 size = l->peer.size, part;
	int i, n, err;

	if (!len || len > size || off >= size || len > VISOCK_IMM_LEN_MAX)
		return -EINVAL;
	if (unlikely(READ_ONCE(visock_test_stale_write)))
		visock_vc_test_stale_write(l);
	part = min(len, size - off);
	n = part < len ? 2 : 1;
	for (i = 0; i < n; i++) {
		u32 o = i ? 0 : off;
		u32 ln = i ? len - part : part;

		sge[i].length = ln;
		wr[i].wr.wr_cqe = cqe;
		wr[i].wr.sg_list = &sge[i];
		wr[i].wr.num_sge = 1;
		wr[i].wr.opcode = IB_WR_RDMA_WRITE;
		wr[i].wr.send_flags = IB_SEND_SIGNALED;
		wr[i].remote_addr = l->peer.addr + o;
		wr[i].rkey = l->peer.rkey;
		/* The MR's iova is where offset 0 of the buffer is. */
		sge[i].addr = o;
	}
	wr[0].wr.next = n > 1 ? &wr[1].wr : NULL;
	wr[n - 1].wr.opcode = IB_WR_RDMA_WRITE_WITH_IMM;
	wr[n - 1].wr.ex.imm_data = imm;

	pw.l = l;
	pw.sge = sge;
	pw.n = n;
	pw.off = off;
	pw.len = len;
	err = visock_wr_post_send(q, l, &wr[0].wr, VISOCK_FP_POST_WRITE,
				  visock_vc_prep_write, &pw);
	return err ? err : n;
}

/**
 * visock_vc_diag() - describe a connection's QP for socket diagnostics
 * @l: the vc
 * @d: filled in (device name, port, QP, state, GIDs, this connection's
 *	registered bytes, the QP's size, queue bytes, connections and
 *	counters); the peer's QP number is the
 *	owner's to fill in
 *
 * Context: process context; takes the QP's lock, so the caller may hold
 * lock_sock() of the owner but no spinlock.
 */
void visock_vc_diag(struct visock_vc *l, struct visock_diag_link *d)
{
	struct visock_qp *q = l->qp;
	struct visock_vc *o;

	memset(d, 0, sizeof(*d));
	mutex_lock(&q->lock);
	if (q->ibdev)
		strscpy(d->vdl_dev, dev_name(&q->ibdev->dev),
			sizeof(d->vdl_dev));
	d->vdl_port = q->port;
	d->vdl_qpn = q->qpn;
	if (q->dead)
		d->vdl_state = VISOCK_LINK_STATE_DEAD;
	else if (q->state == VISOCK_QP_UP)
		d->vdl_state = VISOCK_LINK_STATE_UP;
	else if (q->state == VISOCK_QP_INIT)
		d->vdl_state = VISOCK_LINK_STATE_INIT;
	else if (q->state == VISOCK_QP_FAILED)
		d->vdl_state = VISOCK_LINK_STATE_FAILED;
	else
		d->vdl_state = VISOCK_LINK_STATE_NEW;
	memcpy(d->vdl_gid, q->gid.raw, sizeof(d->vdl_gid));
	memcpy(d->vdl_peer_gid, q->peer_gid.raw, sizeof(d->vdl_peer_gid));
	if (l->rbuf && l->rbuf->mr)
		d->vdl_reg_bytes += l->rbuf->size;
	if (l->sbuf && l->sbuf->mr)
		d->vdl_reg_bytes += l->sbuf->size;
	d->vdl_queue_bytes = q->qp_bytes;
	d->vdl_max_conns = q->max_conns;
	list_for_each_entry(o, &q->vcs, qp_node)
		d->vdl_conns++;
	mutex_unlock(&q->lock);
	d->vdl_wr_posted = atomic64_read(&q->wr_posted);
	d->vdl_wc_ok = atomic64_read(&q->wc_ok);
	d->vdl_wc_err = atomic64_read(&q->wc_err);
}
