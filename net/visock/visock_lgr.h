/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: link groups (visock_lgr.c) and the queue pair they are made
 * of, struct visock_qp, with the structures that hang off it: a
 * connection's share (struct visock_vc, visock_vc.c).  The QP's
 * verbs are in visock_ib.h, its work requests in visock_wr.h, its link
 * messages in visock_llc.h, its rings in visock_rbuf.h.  The data path
 * only sees visock_vc.h.  Lifetime and locking rules are at the top of
 * visock_lgr.c.
 */
#ifndef _NET_VISOCK_LGR_H
#define _NET_VISOCK_LGR_H

#include <linux/completion.h>
#include <linux/dma-direction.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>

#include "visock.h"
#include "visock_ib.h"
#include "visock_vc.h"
#include "visock_rbuf.h"

#define VISOCK_QP_SEND_SGE	2
#define VISOCK_QP_RECV_SGE	1

/*
 * Receive requests beyond the connections' credits; send requests for
 * registrations and link messages.
 */
#define VISOCK_QP_RQ_SLACK	32
#define VISOCK_QP_SQ_SLACK	8

/*
 * Bytes per queue entry a device allocates, for the memory estimate of a
 * QP (visock_qp_mem_estimate()): Soft-RoCE's send request with two SGEs,
 * receive request with one and completion entry, with room for the
 * driver's bookkeeping (a QP of 512 connections: 9.3 MiB estimated,
 * 8.8 MiB of slab and vmalloc measured).
 */
#define VISOCK_QP_SWQE_BYTES	256
#define VISOCK_QP_RWQE_BYTES	96
#define VISOCK_QP_CQE_BYTES	96

/* RC transport parameters (IBTA encodings). */
#define VISOCK_QP_MIN_RNR	12	/* 0.64 ms */
/* Not 7: Soft-RoCE treats 7 as infinite, and a dead peer must show. */
#define VISOCK_QP_RETRY	6
#define VISOCK_QP_RNR_RETRY	7	/* infinite */
#define VISOCK_QP_HOP_LIMIT	64	/* if the route does not tell */

/* How long to wait for registrations, ARP/ND and the link message. */
#define VISOCK_VC_REG_TIMEOUT	(5 * HZ)
#define VISOCK_QP_RESOLVE_MS	2000
#define VISOCK_LINK_MSG_TIMEOUT	HZ
/*
 * How long a connection that ends waits for its outstanding requests
 * before the QP is declared stuck and killed (which flushes them).
 */
#define VISOCK_VC_DETACH_TIMEOUT	(10 * HZ)
/*
 * How long an idle QP waits for the peer's closed flags of connections
 * that linger on it, and how often it looks.
 */
#define VISOCK_LINGER_MAX	(30 * HZ)
#define VISOCK_LINGER_CHECK	(HZ / 4)

#define VISOCK_SLOTS_PER_PAGE	(PAGE_SIZE / VISOCK_QP_CTRL_SLOT)

#define VISOCK_VC_PEER_NEED	(VISOCK_HSF(VISOCK_TLV_GID) | \
				 VISOCK_HSF(VISOCK_TLV_QPN) | \
				 VISOCK_HSF(VISOCK_TLV_PSN) | \
				 VISOCK_HSF(VISOCK_TLV_MTU) | \
				 VISOCK_HSF(VISOCK_TLV_RBUF) | \
				 VISOCK_HSF(VISOCK_TLV_TOKEN))

enum visock_qp_state {
	VISOCK_QP_NEW,		/* being set up by its first connection */
	VISOCK_QP_INIT,		/* QP in INIT, waiting for the peer */
	VISOCK_QP_UP,		/* QP in RTS */
	VISOCK_QP_FAILED,	/* setting up failed */
};

/**
 * struct visock_peer_rbuf - the peer's receive ring, our RDMA WRITE target
 * @addr: remote address
 * @rkey: remote key
 * @size: size in bytes
 */
struct visock_peer_rbuf {
	u64 addr;
	u32 rkey;
	u32 size;
};

struct visock_qp;

/* Bits of struct visock_qp.broken. */
#define VISOCK_QP_BROKEN	0
#define VISOCK_QP_TOLD		1
#define VISOCK_QP_CAUSE_LOGGED	2

/**
 * struct visock_qp_rx - one receive request of a QP
 * @cqe: completion handler (visock_qp_rx_done())
 * @qp: the QP
 * @idx: receive slot number
 */
struct visock_qp_rx {
	struct ib_cqe cqe;
	struct visock_qp *qp;
	u32 idx;
};

/**
 * struct visock_qp - an RC queue pair shared by connections to one peer
 * @ref: see "Lifetime" above
 * @lock: protects the fields up to @post_lock not marked otherwise
 * @state: enum visock_qp_state
 * @dead: killed (device removed, stuck): verbs objects released; read
 *	locklessly
 * @broken: VISOCK_QP_BROKEN: a work request failed, the QP is in the
 *	error state; VISOCK_QP_TOLD: the connections were told;
 *	VISOCK_QP_CAUSE_LOGGED: the first failure other than a flush was
 *	logged
 * @server: created for a client's REQ (else by our connect())
 * @confirmed: a connection on it completed its handshake (until then a
 *	QP without connections goes at once: a peer that set it up and
 *	left, or a fake one, leaves nothing behind)
 * @net: namespace; the QP is destroyed by the namespace's exit at the
 *	latest
 * @net_node: entry in visock_net.qps, under its lgr_lock
 * @all_node: entry in visock_net.qp_all from creation until freed, under
 *	its qp_all_lock
 * @listed: on that list (under lgr_lock)
 * @dying: takes no new connections (under lgr_lock; read locklessly)
 * @retired: dying only because lingering connections filled it (see
 *	visock_qp_retire_full()): the QP itself is healthy, so it still
 *	waits for its lingering connections' flags before it goes; cleared
 *	when it turns out not to be healthy (read locklessly)
 * @superseded: a server's QP smaller than a newer QP of its group: it
 *	still takes the connections the client names, but no longer counts
 *	against the group's lgr_max_links (under lgr_lock)
 * @peer_deleted: the peer's delete link message arrived: its end goes,
 *	ours need not tell it (written in softirq, read locklessly)
 * @nconns: connections attached or being attached (under lgr_lock)
 * @max_conns: connections it may take, chosen by its group when it is
 *	created (visock_lgr_qp_size()), lowered to what the device allows
 *	when its verbs objects are created; fixed from then on
 * @vcs: attached connections (struct visock_vc.qp_node)
 * @idle_work: destroys the QP once idle (see "Lifetime")
 * @nlinger: connections lingering on the QP (see visock_vc_destroy())
 * @linger_last: jiffies when the last of them started to linger
 * @reap_work: frees lingering connections whose peer went quiet
 * @peer_addr: the peer's TCP address as a GID (IPv4-mapped)
 * @vdev: device the QP is attached to, NULL once detached
 * @dev_node: entry in @vdev's list, under the device's lock
 * @ibdev: @vdev's RDMA device, NULL once the verbs objects are released
 * @sgid_attr: our GID table entry, with a reference
 * @ack_timeout: RC local ACK timeout (IBTA encoding)
 * @port: port of @ibdev
 * @gid: our GID
 * @peer_gid: the peer's GID, set when connecting
 * @mtu: active MTU of @port (enum ib_mtu)
 * @pd: protection domain
 * @cq: completion queue for both work queues
 * @ibqp: the RC queue pair; pointer also read under @post_lock
 * @qpn: number of @ibqp, kept after it is gone
 * @peer_qpn: the peer's QP number once connecting
 * @psn: our initial packet sequence number
 * @rq_size: receive slots (and receive requests at most)
 * @rq_posted: receive requests handed to the QP so far
 * @ctrl_npages: pages of cursor message slots: @rq_size receive slots,
 *	then VISOCK_VC_SQ_DEPTH send slots per token index
 * @ctrl_pages: those pages
 * @ctrl_dma: their DMA addresses
 * @ctrl_mapped: mapped (a verbs resource: a kill unmaps them)
 * @rx: the receive requests
 * @pool: registered rings of ended connections, ready for reuse
 * @quarantine: rings a peer may still write to, kept until the QP ends
 * @last_peer: the peer's ring of the connection that ended last (for the
 *	stale_write test hook, visock_debugfs.c)
 * @reg_bytes: bytes of all rings of this QP (for the memory limit)
 * @qp_bytes: estimated bytes of its queues, charged to the memory limit
 *	from the creation of its verbs objects until it is freed
 * @msg_cqe: completion handler of our link message
 * @msg_done: completed by it
 * @ka_work: sends a keepalive link message every
 *	net.visock.lgr_keepalive_ms while the QP has connections; queued
 *	while the QP is up and not dead, holding a reference
 * @ka_cqe: completion handler of the keepalive; a failure breaks the QP
 * @ka_busy: a keepalive is outstanding (slot 1 of index 0 is in use)
 * @sw_mutex: one switch decline at a time (slot 2 of index 0); taken
 *	outside @lock
 * @sw_cqe: completion handler of a switch decline
 * @sw_done: completed by it
 * @conns: token index -> struct visock_vc, or a value entry for a
 *	reserved index; its lock is held while a receive is dispatched
 * @next_idx: cyclic allocation hint for @conns
 * @post_lock: protects @can_post and @posted; innermost, BH-safe
 * @can_post: the QP may be posted to
 * @posted: something was posted, so it must be drained
 * @modify_failed: the device failed a state change of the QP, which it
 *	may no longer be able to flush: it is destroyed without a drain
 * @wr_posted: work requests posted
 * @wc_ok: successful completions
 * @wc_err: failed or flushed completions
 * @rx_stale: receives for unknown or stale tokens, dropped
 */
struct visock_qp {
	struct kref ref;
	/* Protects state, verbs objects, pool, vcs; see the top. */
	struct mutex lock;
	enum visock_qp_state state;
	bool dead;
	unsigned long broken;
	bool server;
	bool confirmed;
	struct net *net;
	struct list_head net_node;
	struct list_head all_node;
	bool listed;
	bool dying;
	bool retired;
	bool superseded;
	bool peer_deleted;
	unsigned int nconns;
	unsigned int max_conns;
	struct list_head vcs;
	struct delayed_work idle_work;
	atomic_t nlinger;
	unsigned long linger_last;
	struct work_struct reap_work;
	union ib_gid peer_addr;

	struct visock_ibdev *vdev;
	struct list_head dev_node;
	struct ib_device *ibdev;
	const struct ib_gid_attr *sgid_attr;
	u8 ack_timeout;
	u32 port;
	union ib_gid gid;
	union ib_gid peer_gid;
	enum ib_mtu mtu;

	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *ibqp;
	u32 qpn;
	u32 peer_qpn;
	u32 psn;

	u32 rq_size;
	u32 rq_posted;
	unsigned int ctrl_npages;
	struct page **ctrl_pages;
	u64 *ctrl_dma;
	bool ctrl_mapped;
	struct visock_qp_rx *rx;

	struct list_head pool;
	struct list_head quarantine;
	struct visock_peer_rbuf last_peer;
	u64 reg_bytes;
	u64 qp_bytes;

	struct ib_cqe msg_cqe;
	struct completion msg_done;
	struct delayed_work ka_work;
	struct ib_cqe ka_cqe;
	bool ka_busy;
	/* One switch decline at a time; outside @lock */
	struct mutex sw_mutex;
	struct ib_cqe sw_cqe;
	struct completion sw_done;

	struct xarray conns;
	u32 next_idx;

	/* Protects can_post, posted; innermost, BH-safe. */
	spinlock_t post_lock;
	bool can_post;
	bool posted;
	bool modify_failed;

	atomic64_t wr_posted;
	atomic64_t wc_ok;
	atomic64_t wc_err;
	atomic64_t rx_stale;
};

/**
 * struct visock_vc - one connection's share of a QP
 * @qp: the QP, referenced
 * @qp_node: entry in @qp's connection list, under the QP's lock
 * @idx: token index (slot in @qp's token table)
 * @token: the token the peer puts in its messages
 * @peer_token: the token the peer gave for this connection (in its REQ
 *	or REP), 0 until visock_vc_connect() accepted it; under the QP's
 *	lock
 * @created_qp: this connection created @qp and connects it
 * @connected: visock_vc_connect() succeeded
 * @peer_quiet: the peer will not write to our ring any more
 * @lingering: the owner is gone, the peer not quiet yet: the receive ring
 *	and the token index stay reserved (see visock_vc_destroy())
 * @announced: the receive ring was registered for the peer before the
 *	vc connected (visock_vc_register_rx()): the peer may write to
 *	it even if the vc never connects; under the QP's lock
 * @lgr_id: LINK TLV value to send: the peer's QP number when joining an
 *	existing QP, 0 for a new one
 * @dead_cb: called once when the QP dies (under the QP's lock)
 * @dead_ctx: argument of @dead_cb
 * @rx_fn: receive callback (under the token table's lock)
 * @rx_ctx: argument of @rx_fn
 * @rbuf: our receive ring
 * @sbuf: our send buffer, as large as the peer's ring
 * @peer: the peer's receive ring, valid once connected
 * @outstanding: work requests posted and not yet completed
 * @reg_cqe: completion handler of ring registrations
 * @reg_done: completed by @reg_cqe's handler
 * @reg_status: work completion status of a failed registration
 * @reg_left: registrations not completed yet
 * @sk: the owner's socket the rings are charged to, NULL once
 *	visock_vc_destroy() returned the charge
 * @charged: bytes charged to @sk (visock_mem.c)
 */
struct visock_vc {
	struct visock_qp *qp;
	struct list_head qp_node;
	u32 idx;
	u32 token;
	u32 peer_token;
	bool created_qp;
	bool connected;
	bool peer_quiet;
	bool lingering;
	bool announced;
	u32 lgr_id;
	void (*dead_cb)(void *ctx);
	void *dead_ctx;
	visock_vc_rx_fn rx_fn;
	void *rx_ctx;
	struct visock_rbuf *rbuf;
	struct visock_rbuf *sbuf;
	struct visock_peer_rbuf peer;
	atomic_t outstanding;
	struct ib_cqe reg_cqe;
	struct completion reg_done;
	int reg_status;
	atomic_t reg_left;
	struct sock *sk;
	u32 charged;
};

/* ------------------------------------------------------------------ */
/* Cursor message slots                                                */
/* ------------------------------------------------------------------ */

/* Slot @n: receive slots first, then VISOCK_VC_SQ_DEPTH per index. */
static inline void *visock_qp_slot(const struct visock_qp *q, u32 n)
{
	return page_address(q->ctrl_pages[n / VISOCK_SLOTS_PER_PAGE]) +
	       (n % VISOCK_SLOTS_PER_PAGE) * VISOCK_QP_CTRL_SLOT;
}

static inline u64 visock_qp_slot_dma(const struct visock_qp *q, u32 n)
{
	return q->ctrl_dma[n / VISOCK_SLOTS_PER_PAGE] +
	       (n % VISOCK_SLOTS_PER_PAGE) * VISOCK_QP_CTRL_SLOT;
}

static inline u32 visock_qp_tx_slot(const struct visock_qp *q, u32 idx,
				    unsigned int n)
{
	return q->rq_size + idx * VISOCK_VC_SQ_DEPTH + n;
}

/* ------------------------------------------------------------------ */
/* Link groups (visock_lgr.c)                                          */
/* ------------------------------------------------------------------ */

struct visock_gauges;

void visock_lgr_net_init(struct net *net);
void visock_lgr_net_exit(struct net *net);
void visock_lgr_gauges(struct net *net, struct visock_gauges *g);
int visock_lgr_xform_charge(struct net *net, u64 bytes);
void visock_lgr_xform_uncharge(struct net *net, u64 bytes);
bool visock_lgr_peer_up(struct net *net, const struct sockaddr *peer,
			int len);
void visock_lgr_unpick(struct visock_qp *q, bool put);
void visock_qp_reap(struct visock_qp *q, bool all);
void visock_qp_put(struct visock_qp *q);
struct visock_qp *visock_lgr_switch_qp(struct net *net,
				       const struct sockaddr *local,
				       const struct sockaddr *peer,
				       const struct visock_hs_msg *sw,
				       bool server);
void visock_qp_queue_idle(struct visock_qp *q, unsigned long delay);
int visock_qp_get_rbuf(struct visock_qp *q, u32 size,
		       enum dma_data_direction dir, struct visock_rbuf **out);
struct visock_qp *visock_lgr_pick(const struct visock_vc_params *p,
				  const union ib_gid *gid,
				  const union ib_gid *peer_addr, bool *created);
void visock_vc_linger_rx(void *ctx, const struct visock_rx_ev *ev);
void visock_qp_put_rbuf(struct visock_qp *q, struct visock_rbuf *rb,
			bool reusable);

#endif /* _NET_VISOCK_LGR_H */
