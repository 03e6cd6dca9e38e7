// SPDX-License-Identifier: GPL-2.0
/*
 * visock: RDMA links.
 *
 * Objects
 * -------
 * A struct visock_link owns the verbs objects of one reliable connection
 * to a peer: a PD, a CQ (core CQ API, polled in softirq context) and an RC
 * QP.  The receive ring the peer writes into is a separate object
 * (struct visock_rbuf) that the link points to, and the peer's ring is
 * described by a struct visock_peer_rbuf, so that several connections can
 * later share one link with a ring pair each.  For now every connection
 * has a link of its own.  For the data path the link also owns the send
 * buffer (the source of our RDMA WRITEs, as large as the peer's ring,
 * registered like the ring but for local access only) and one page of
 * cursor message slots (receive slots the peer SENDs into, send slots
 * our SENDs read from), used with the PD's local_dma_lkey.  Both are
 * DMA-mapped verbs resources like the ring: a kill unmaps them, their
 * memory stays until visock_link_destroy().
 *
 * Lifetime
 * --------
 * - visock_link_create() returns a link holding one reference, the
 *   owner's.  Only the owner calls visock_link_connect(),
 *   visock_link_set_dead_cb() and visock_link_destroy(), and never two of
 *   them at the same time for one link.  The accessors and
 *   visock_link_post_send() may be used until visock_link_destroy() is
 *   called.
 * - A link is on its device's list (struct visock_ibdev.links) from the
 *   moment it found its device until its verbs objects are released.
 * - When the device goes away, the ib_client remove callback calls
 *   visock_link_device_removed(), which takes every link off the device's
 *   list, holding a temporary reference to it, and kills it: under the
 *   link's lock the verbs objects are released (the QP drained first),
 *   the link is marked dead and the owner's dead_cb, if set, is called.
 *   The callback returns only when no link holds a verbs object of the
 *   device any more.
 * - A kill never frees memory: the ring stays readable and the link
 *   stays valid until the owner calls visock_link_destroy(), which then
 *   only frees memory.
 * - visock_link_destroy() releases whatever is left, clears dead_cb,
 *   frees the ring and drops the owner's reference.  The structure itself
 *   goes with the last reference, so a device removal running at the same
 *   time never touches freed memory.  Once visock_link_destroy() has
 *   returned, dead_cb is not running and will never be called.
 * - Completion handlers (struct ib_cqe.done, softirq context) only touch
 *   the link.  Every work request posted is completed or flushed before
 *   the QP is destroyed (ib_drain_qp()), and the link outlives its QP, so
 *   a late completion - e.g. of a registration visock_link_connect() gave
 *   up waiting for - still finds the link.
 * - dead_cb runs in process context with the link's lock held.  It must
 *   not call visock_link_*() functions other than visock_link_is_dead()
 *   and the accessors; it is meant to schedule work.
 *
 * Locks, outermost first
 * ----------------------
 *   struct visock_link.lock        mutex; verbs objects, state, dead flag,
 *                                  dead_cb, device attachment
 *   visock_ibdevs_lock             mutex in visock_ib.c; the device list
 *   struct visock_ibdev.lock       mutex; a device's list of links
 *   struct visock_link.post_lock   spinlock (BH); whether the QP may be
 *                                  posted to
 * The device removal path never holds a device lock while it takes a
 * link's lock.
 */
#include <linux/completion.h>
#include <linux/err.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/kref.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/netdevice.h>
#include <linux/random.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/vmalloc.h>
#include <net/ipv6.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

#include "visock_link.h"
#include "visock_trace.h"

/* Queue depths (visock_link.h) plus one slot each for ib_drain_qp(). */
#define VISOCK_LINK_SEND_SGE	2
#define VISOCK_LINK_RECV_SGE	1

/* RC transport parameters (IBTA encodings). */
#define VISOCK_LINK_MIN_RNR	12	/* 0.64 ms */
/*
 * The ACK timeout comes from net.visock.rdma_ack_timeout; with
 * VISOCK_LINK_RETRY and the default a dead peer shows in ~4 s.
 */
/* Not 7: Soft-RoCE treats 7 as infinite, and a dead peer must show. */
#define VISOCK_LINK_RETRY	6
#define VISOCK_LINK_RNR_RETRY	7	/* infinite */
#define VISOCK_LINK_HOP_LIMIT	64	/* if the route does not tell */

/* How long to wait for the ring's registration and for ARP/ND. */
#define VISOCK_LINK_REG_TIMEOUT	(5 * HZ)
#define VISOCK_LINK_RESOLVE_MS	2000

#define VISOCK_LINK_PEER_NEED	(VISOCK_HSF(VISOCK_TLV_GID) | \
				 VISOCK_HSF(VISOCK_TLV_QPN) | \
				 VISOCK_HSF(VISOCK_TLV_PSN) | \
				 VISOCK_HSF(VISOCK_TLV_MTU) | \
				 VISOCK_HSF(VISOCK_TLV_RBUF))

enum visock_link_state {
	VISOCK_LINK_NEW,	/* visock_link_create() still running */
	VISOCK_LINK_INIT,	/* QP in INIT, ring mapped, not registered */
	VISOCK_LINK_UP,		/* QP in RTS, ring registered */
	VISOCK_LINK_FAILED,	/* visock_link_connect() failed */
};

/**
 * struct visock_rbuf - a receive ring the peer RDMA-writes into
 * @kaddr: kernel mapping of the whole ring
 * @size: ring size in bytes
 * @order: allocation order of each chunk
 * @nchunks: number of chunks
 * @chunks: the chunks, PAGE_SIZE << @order bytes each
 * @sgt: one entry per chunk
 * @dma_nents: entries after DMA mapping, 0 while not mapped
 * @mr: memory region covering the ring, NULL once released
 * @iova: address the peer writes to (the MR's iova: 0, zero-based)
 * @rkey: remote key of @mr
 * @dir: DMA direction: DMA_FROM_DEVICE for the receive ring,
 *	DMA_TO_DEVICE for the send buffer (the source of our RDMA WRITEs)
 *
 * Memory (@kaddr, @chunks) lives until visock_link_destroy(); the DMA
 * mapping and @mr are verbs resources, released by a device kill too.
 * The send buffer is the same kind of object, registered for local
 * access only, so that a WRITE of any range of it needs one SGE.
 */
struct visock_rbuf {
	void *kaddr;
	u32 size;
	unsigned int order;
	unsigned int nchunks;
	struct page **chunks;
	struct sg_table sgt;
	int dma_nents;
	struct ib_mr *mr;
	u64 iova;
	u32 rkey;
	enum dma_data_direction dir;
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

/**
 * struct visock_link - one RC connection to a peer
 * @ref: the owner's reference plus one per device removal looking at it
 * @lock: protects everything below up to @post_lock, except where noted;
 *	the outermost visock lock (see the top of this file)
 * @state: enum visock_link_state
 * @dead: the device went away; written under @lock, read locklessly
 * @owner_gone: visock_link_destroy() was called
 * @dead_cb: called once when the link dies (may be NULL)
 * @dead_ctx: argument of @dead_cb
 * @vdev: device the link is attached to, NULL once detached
 * @dev_node: entry in @vdev's link list, under the device's lock
 * @ibdev: @vdev's RDMA device, NULL once the verbs objects are released
 * @sgid_attr: our GID table entry, with a reference
 * @net: namespace of the connection; only used while the owner (whose
 *	socket pins it) is inside visock_link_connect()
 * @port: port of @ibdev
 * @gid: our GID
 * @peer_gid: the peer's GID, set by visock_link_connect()
 * @ack_timeout: RC local ACK timeout (IBTA encoding)
 * @mtu: active MTU of @port (enum ib_mtu)
 * @pd: protection domain
 * @cq: completion queue for both work queues
 * @qp: the RC queue pair; pointer also read under @post_lock
 * @qpn: number of @qp, kept after @qp is gone
 * @psn: our initial packet sequence number
 * @rbuf: our receive ring
 * @sbuf: our send buffer, as large as the peer's ring; created by
 *	visock_link_connect()
 * @ctrl_page: one page of cursor message slots: VISOCK_LINK_RQ_DEPTH
 *	receive slots, then VISOCK_LINK_SQ_DEPTH send slots, each
 *	VISOCK_LINK_CTRL_SLOT bytes; memory lives until visock_link_destroy()
 * @ctrl_dma: DMA address of @ctrl_page, valid while @ctrl_mapped
 * @ctrl_mapped: @ctrl_page is DMA-mapped (a verbs resource: unmapped by a
 *	device kill too)
 * @peer: the peer's receive ring, valid once connected
 * @post_lock: protects @can_post and @posted; innermost lock, BH-safe
 * @can_post: the data path may post to @qp
 * @posted: something was posted to @qp, so it must be drained
 * @reg_cqe: completion handler of the ring's registration
 * @reg_done: completed by @reg_cqe's handler
 * @reg_status: work completion status of the registration
 * @wr_posted: work requests posted
 * @wc_ok: successful completions
 * @wc_err: failed or flushed completions
 */
struct visock_link {
	struct kref ref;
	/* Protects the fields up to post_lock; outermost visock lock. */
	struct mutex lock;
	enum visock_link_state state;
	bool dead;
	bool owner_gone;
	void (*dead_cb)(void *ctx);
	void *dead_ctx;

	struct visock_ibdev *vdev;
	struct list_head dev_node;
	struct ib_device *ibdev;
	const struct ib_gid_attr *sgid_attr;
	struct net *net;
	u8 ack_timeout;
	u32 port;
	union ib_gid gid;
	union ib_gid peer_gid;
	enum ib_mtu mtu;

	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;
	u32 qpn;
	u32 psn;

	struct visock_rbuf *rbuf;
	struct visock_rbuf *sbuf;
	struct page *ctrl_page;
	u64 ctrl_dma;
	bool ctrl_mapped;
	struct visock_peer_rbuf peer;

	/* Protects can_post, posted; innermost, inside lock. BH-safe. */
	spinlock_t post_lock;
	bool can_post;
	bool posted;

	struct ib_cqe reg_cqe;
	struct completion reg_done;
	int reg_status;

	atomic64_t wr_posted;
	atomic64_t wc_ok;
	atomic64_t wc_err;
};

/* ------------------------------------------------------------------ */
/* Receive ring                                                        */
/* ------------------------------------------------------------------ */

/*
 * Memory registration lists pages of one size; a device has a limit on
 * their number.  Use PAGE_SIZE pages if the ring fits, else the smallest
 * power-of-two chunk that does (Soft-RoCE takes 512 pages: 2 MiB).
 */
static int visock_rbuf_order(struct ib_device *dev, u32 size,
			     unsigned int *order)
{
	u32 max_sg = dev->attrs.max_fast_reg_page_list_len;
	unsigned long npages = DIV_ROUND_UP(size, PAGE_SIZE);
	unsigned int o = 0;

	if (!max_sg)
		return -EOPNOTSUPP;
	while (DIV_ROUND_UP(npages, 1UL << o) > max_sg)
		o++;
	if (!(dev->attrs.page_size_cap & (PAGE_SIZE << o)))
		return -EOPNOTSUPP;
	*order = o;
	return 0;
}

/* Free the ring's memory; its DMA mapping and MR must be gone already. */
static void visock_rbuf_free(struct visock_rbuf *rb)
{
	unsigned int i;

	if (!rb)
		return;
	WARN_ON_ONCE(rb->mr || rb->dma_nents);
	sg_free_table(&rb->sgt);
	if (rb->kaddr)
		vunmap(rb->kaddr);
	if (rb->chunks) {
		for (i = 0; i < rb->nchunks; i++)
			if (rb->chunks[i])
				__free_pages(rb->chunks[i], rb->order);
		kfree(rb->chunks);
	}
	kfree(rb);
}

/* Allocate the chunks and map them into one virtually contiguous range. */
static int visock_rbuf_alloc_mem(struct visock_rbuf *rb)
{
	unsigned int per_chunk = 1U << rb->order;
	unsigned int i, j, npages = rb->nchunks * per_chunk;
	gfp_t gfp = GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN;
	struct page **pages;

	if (rb->order > PAGE_ALLOC_COSTLY_ORDER)
		gfp |= __GFP_NORETRY;

	rb->chunks = kcalloc(rb->nchunks, sizeof(*rb->chunks), GFP_KERNEL);
	if (!rb->chunks)
		return -ENOMEM;
	pages = kvmalloc_array(npages, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return -ENOMEM;

	for (i = 0; i < rb->nchunks; i++) {
		rb->chunks[i] = alloc_pages(gfp, rb->order);
		if (!rb->chunks[i])
			goto nomem;
		for (j = 0; j < per_chunk; j++)
			pages[i * per_chunk + j] = rb->chunks[i] + j;
	}

	rb->kaddr = vmap(pages, npages, VM_MAP, PAGE_KERNEL);
	kvfree(pages);
	return rb->kaddr ? 0 : -ENOMEM;

nomem:
	kvfree(pages);
	return -ENOMEM;
}

/*
 * Allocate a ring of @size bytes, map it for DMA in direction @dir and
 * prepare its MR.  *@slot owns the ring as soon as it exists.  The
 * registration itself is a work request, posted by visock_link_connect().
 * Context: process context, under the link's lock.
 */
static int visock_rbuf_create(struct visock_link *l, u32 size,
			      enum dma_data_direction dir,
			      struct visock_rbuf **slot)
{
	struct ib_device *dev = l->ibdev;
	struct visock_rbuf *rb;
	struct scatterlist *sg;
	unsigned int i, order;
	u32 chunk, left;
	int n, err;

	err = visock_rbuf_order(dev, size, &order);
	if (err)
		return err;

	rb = kzalloc(sizeof(*rb), GFP_KERNEL);
	if (!rb)
		return -ENOMEM;
	*slot = rb;	/* released by visock_link_destroy() from now on */
	rb->size = size;
	rb->dir = dir;
	rb->order = order;
	chunk = PAGE_SIZE << order;
	rb->nchunks = DIV_ROUND_UP(size, chunk);

	err = visock_rbuf_alloc_mem(rb);
	if (err)
		return err;

	err = sg_alloc_table(&rb->sgt, rb->nchunks, GFP_KERNEL);
	if (err)
		return err;
	left = size;
	for_each_sg(rb->sgt.sgl, sg, rb->nchunks, i) {
		sg_set_page(sg, rb->chunks[i], min(left, chunk), 0);
		left -= sg->length;
	}

	n = ib_dma_map_sg(dev, rb->sgt.sgl, rb->nchunks, dir);
	if (n <= 0)
		return -ENOMEM;
	rb->dma_nents = n;

	rb->mr = ib_alloc_mr(l->pd, IB_MR_TYPE_MEM_REG, rb->nchunks);
	if (IS_ERR(rb->mr)) {
		err = PTR_ERR(rb->mr);
		rb->mr = NULL;
		return err;
	}
	/*
	 * Zero-based: the peer addresses the ring by offset, and no DMA or
	 * kernel virtual address (Soft-RoCE uses the latter) goes on the
	 * wire in the handshake.
	 */
	n = ib_map_mr_sg_zbva(rb->mr, rb->sgt.sgl, rb->dma_nents, NULL, chunk);
	if (n != rb->dma_nents)
		return n < 0 ? n : -EINVAL;
	if (rb->mr->length != size)
		return -EINVAL;

	rb->iova = rb->mr->iova;
	rb->rkey = rb->mr->rkey;
	return 0;
}

/*
 * Hand @len bytes at ring offset @off (not wrapping) to the CPU or to the
 * device.  The mapped segments cover the ring in order.  A no-op on
 * coherent devices and on software ones (Soft-RoCE); it matters with
 * bounce buffers (swiotlb) and on non-coherent platforms.
 */
static void visock_rbuf_sync(struct ib_device *dev, struct visock_rbuf *rb,
			     u32 off, u32 len, bool for_cpu)
{
	struct scatterlist *sg;
	u32 start = 0, end = off + len, a, b;
	unsigned int i;

	for_each_sg(rb->sgt.sgl, sg, rb->dma_nents, i) {
		u32 slen = sg_dma_len(sg);

		if (off < start + slen && end > start) {
			a = max(off, start);
			b = min(end, start + slen);
			if (for_cpu)
				ib_dma_sync_single_for_cpu(dev,
							   sg_dma_address(sg) + (a - start),
							   b - a, rb->dir);
			else
				ib_dma_sync_single_for_device(dev,
							      sg_dma_address(sg) + (a - start),
							      b - a, rb->dir);
		}
		start += slen;
		if (start >= end)
			break;
	}
}

/* As visock_rbuf_sync(), for a range that may wrap at the end. */
static void visock_rbuf_sync_wrap(struct ib_device *dev,
				  struct visock_rbuf *rb, u32 off, u32 len,
				  bool for_cpu)
{
	u32 part = min(len, rb->size - off);

	visock_rbuf_sync(dev, rb, off, part, for_cpu);
	if (part < len)
		visock_rbuf_sync(dev, rb, 0, len - part, for_cpu);
}

/* Release the ring's verbs resources; the memory stays. */
static void visock_rbuf_release_dma(struct visock_link *l,
				    struct visock_rbuf *rb)
{
	if (rb->mr) {
		ib_dereg_mr(rb->mr);
		rb->mr = NULL;
	}
	if (rb->dma_nents) {
		ib_dma_unmap_sg(l->ibdev, rb->sgt.sgl, rb->nchunks, rb->dir);
		rb->dma_nents = 0;
	}
}

/* ------------------------------------------------------------------ */
/* Completions and events                                              */
/* ------------------------------------------------------------------ */

/**
 * visock_link_count_wc() - account for one work completion
 * @l: the link the completion belongs to
 * @wc: the completion
 *
 * Completion handlers of work requests posted with visock_link_post_send()
 * call this so that the link's counters stay complete.
 *
 * Context: any context.
 */
void visock_link_count_wc(struct visock_link *l, const struct ib_wc *wc)
{
	if (wc->status == IB_WC_SUCCESS)
		atomic64_inc(&l->wc_ok);
	else
		atomic64_inc(&l->wc_err);
}

/* Registration of the receive ring finished (or was flushed). */
static void visock_link_reg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct visock_link *l = container_of(wc->wr_cqe, struct visock_link,
					     reg_cqe);

	visock_link_count_wc(l, wc);
	WRITE_ONCE(l->reg_status, wc->status);
	complete(&l->reg_done);
}

static void visock_link_qp_event(struct ib_event *ev, void *ctx)
{
	u32 qpn = ev->element.qp->qp_num;

	switch (ev->event) {
	case IB_EVENT_COMM_EST:
	case IB_EVENT_SQ_DRAINED:
	case IB_EVENT_QP_LAST_WQE_REACHED:
		pr_debug("visock: QP %u: %s\n", qpn, ib_event_msg(ev->event));
		break;
	default:
		pr_warn_ratelimited("visock: QP %u: %s\n", qpn,
				    ib_event_msg(ev->event));
		break;
	}
}

/* ------------------------------------------------------------------ */
/* Setup and teardown                                                  */
/* ------------------------------------------------------------------ */

/* Room for either address family; see rdma_gid2ip(). */
union visock_ipaddr {
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
};

/* Whole-union pointer, so that fortify sees the real object size. */
static struct sockaddr *visock_sa(union visock_ipaddr *a)
{
	return (struct sockaddr *)a;
}

static int visock_link_addr_to_gid(const struct sockaddr *sa,
				   union ib_gid *gid, int *ifindex)
{
	const struct sockaddr_in6 *sin6;
	const struct sockaddr_in *sin;

	*ifindex = 0;
	switch (sa->sa_family) {
	case AF_INET:
		sin = (const struct sockaddr_in *)sa;
		ipv6_addr_set_v4mapped(sin->sin_addr.s_addr,
				       (struct in6_addr *)gid);
		return 0;
	case AF_INET6:
		sin6 = (const struct sockaddr_in6 *)sa;
		memcpy(gid->raw, &sin6->sin6_addr, sizeof(gid->raw));
		if (ipv6_addr_type(&sin6->sin6_addr) & IPV6_ADDR_LINKLOCAL)
			*ifindex = sin6->sin6_scope_id;
		return 0;
	default:
		return -EAFNOSUPPORT;
	}
}

/*
 * The net device in @net holding the address of @gid, with a reference.
 * An IPv4-mapped IPv6 address (AF_INET6 socket talking IPv4) is looked up
 * as the IPv4 address it is.
 */
static struct net_device *visock_link_find_ndev(struct net *net,
						const union ib_gid *gid,
						int ifindex)
{
	struct rdma_dev_addr dev_addr = {};
	union visock_ipaddr addr;
	struct net_device *ndev;

	rdma_gid2ip(visock_sa(&addr), gid);
	dev_addr.net = net;
	dev_addr.bound_dev_if = ifindex;
	if (rdma_translate_ip(visock_sa(&addr), &dev_addr))
		return ERR_PTR(-ENODEV);
	ndev = dev_get_by_index(net, dev_addr.bound_dev_if);
	return ndev ?: ERR_PTR(-ENODEV);
}

static int visock_link_create_qp(struct visock_link *l)
{
	const struct ib_device_attr *da = &l->ibdev->attrs;
	u32 sq = min_t(u32, VISOCK_LINK_SQ_DEPTH + 1, da->max_qp_wr);
	u32 rq = min_t(u32, VISOCK_LINK_RQ_DEPTH + 1, da->max_qp_wr);
	struct ib_qp_init_attr init = {};
	struct ib_qp_attr attr = {};
	int err;

	l->cq = ib_alloc_cq_any(l->ibdev, l, min_t(u32, sq + rq, da->max_cqe),
				IB_POLL_SOFTIRQ);
	if (IS_ERR(l->cq)) {
		err = PTR_ERR(l->cq);
		l->cq = NULL;
		return err;
	}

	init.event_handler = visock_link_qp_event;
	init.qp_context = l;
	init.send_cq = l->cq;
	init.recv_cq = l->cq;
	init.cap.max_send_wr = sq;
	init.cap.max_recv_wr = rq;
	init.cap.max_send_sge = VISOCK_LINK_SEND_SGE;
	init.cap.max_recv_sge = VISOCK_LINK_RECV_SGE;
	init.sq_sig_type = IB_SIGNAL_REQ_WR;
	init.qp_type = IB_QPT_RC;
	l->qp = ib_create_qp(l->pd, &init);
	if (IS_ERR(l->qp)) {
		err = PTR_ERR(l->qp);
		l->qp = NULL;
		return err;
	}
	l->qpn = l->qp->qp_num;

	attr.qp_state = IB_QPS_INIT;
	attr.pkey_index = 0;
	attr.port_num = l->port;
	attr.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_LOCAL_WRITE;
	return ib_modify_qp(l->qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			    IB_QP_PORT | IB_QP_ACCESS_FLAGS);
}

/*
 * The page of cursor message slots, mapped for both directions: the
 * device writes received messages into the first half and reads the
 * messages we send from the second half.
 * Context: process context, under the link's lock.
 */
static int visock_link_ctrl_create(struct visock_link *l)
{
	BUILD_BUG_ON((VISOCK_LINK_RQ_DEPTH + VISOCK_LINK_SQ_DEPTH) *
		     VISOCK_LINK_CTRL_SLOT > PAGE_SIZE);

	l->ctrl_page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!l->ctrl_page)
		return -ENOMEM;
	l->ctrl_dma = ib_dma_map_page(l->ibdev, l->ctrl_page, 0, PAGE_SIZE,
				      DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(l->ibdev, l->ctrl_dma))
		return -ENOMEM;
	l->ctrl_mapped = true;
	return 0;
}

/* Context: process context, under the link's lock. */
static int visock_link_setup(struct visock_link *l, struct net *net,
			     const struct sockaddr *local, u32 size)
{
	const struct ib_gid_attr *attr;
	struct ib_port_attr pattr;
	struct net_device *ndev;
	union ib_gid gid;
	int ifindex, err;

	err = visock_link_addr_to_gid(local, &gid, &ifindex);
	if (err)
		return err;
	ndev = visock_link_find_ndev(net, &gid, ifindex);
	if (IS_ERR(ndev))
		return PTR_ERR(ndev);
	attr = visock_ib_attach(net, &gid, ndev, &l->dev_node, &l->vdev);
	dev_put(ndev);
	if (IS_ERR(attr))
		return PTR_ERR(attr);
	l->sgid_attr = attr;
	l->ibdev = attr->device;
	l->port = attr->port_num;
	l->gid = gid;

	err = ib_query_port(l->ibdev, l->port, &pattr);
	if (err)
		return err;
	if (pattr.state != IB_PORT_ACTIVE)
		return -ENODEV;
	l->mtu = pattr.active_mtu;

	l->pd = ib_alloc_pd(l->ibdev, 0);
	if (IS_ERR(l->pd)) {
		err = PTR_ERR(l->pd);
		l->pd = NULL;
		return err;
	}

	err = visock_link_create_qp(l);
	if (err)
		return err;
	l->psn = get_random_u32() & 0xffffff;

	err = visock_rbuf_create(l, size, DMA_FROM_DEVICE, &l->rbuf);
	if (err)
		return err;

	err = visock_link_ctrl_create(l);
	if (err)
		return err;

	l->state = VISOCK_LINK_INIT;
	return 0;
}

/*
 * Release every verbs object and detach from the device.  Idempotent.
 * Context: process context, under the link's lock.
 */
static void visock_link_release_verbs(struct visock_link *l)
{
	struct visock_ibdev *vdev = l->vdev;
	bool drain;

	spin_lock_bh(&l->post_lock);
	l->can_post = false;
	drain = l->posted;
	spin_unlock_bh(&l->post_lock);

	if (l->qp) {
		/* Every posted request completes before the QP goes. */
		if (drain)
			ib_drain_qp(l->qp);
		ib_destroy_qp(l->qp);
		l->qp = NULL;
	}
	if (l->rbuf)
		visock_rbuf_release_dma(l, l->rbuf);
	if (l->sbuf)
		visock_rbuf_release_dma(l, l->sbuf);
	if (l->ctrl_mapped) {
		ib_dma_unmap_page(l->ibdev, l->ctrl_dma, PAGE_SIZE,
				  DMA_BIDIRECTIONAL);
		l->ctrl_mapped = false;
	}
	if (l->cq) {
		ib_free_cq(l->cq);
		l->cq = NULL;
	}
	if (l->pd) {
		ib_dealloc_pd(l->pd);
		l->pd = NULL;
	}
	if (l->sgid_attr) {
		rdma_put_gid_attr(l->sgid_attr);
		l->sgid_attr = NULL;
	}
	l->ibdev = NULL;

	/* Last: the device's removal waits for us to leave its list. */
	if (vdev) {
		mutex_lock(&vdev->lock);
		list_del_init(&l->dev_node);
		mutex_unlock(&vdev->lock);
		l->vdev = NULL;
	}
}

static void visock_link_free(struct kref *ref)
{
	struct visock_link *l = container_of(ref, struct visock_link, ref);

	mutex_destroy(&l->lock);
	kfree(l);
}

/**
 * visock_link_create() - set up our end of an RDMA link
 * @net: network namespace of the TCP connection
 * @local: local address of the TCP connection (sockaddr_in or sockaddr_in6)
 * @rbuf_size: receive ring size, a power of two from VISOCK_RBUF_MIN to
 *	VISOCK_RBUF_MAX
 * @ack_timeout: RC local ACK timeout of the QP, IBTA encoding
 * @out: the new link
 *
 * Finds the RoCEv2 GID of @local on a device whose net device is in @net,
 * allocates PD, CQ and QP (moved to INIT), picks a random PSN and prepares
 * the receive ring and its memory region.  visock_link_local_params()
 * describes the result for the peer.
 *
 * The link may be killed by a device removal as soon as this returns; an
 * owner that wants to be told uses visock_link_set_dead_cb().
 *
 * Context: process context, may sleep.
 * Return: 0 and *@out set, -ENODEV if no usable RDMA device has the
 * address, -EINVAL for a bad @rbuf_size, -ENOMEM, or another negative
 * errno from ib_core.  On error nothing is left allocated.
 */
int visock_link_create(struct net *net, const struct sockaddr *local,
		       u32 rbuf_size, u8 ack_timeout,
		       struct visock_link **out)
{
	struct visock_link *l;
	int err;

	*out = NULL;
	if (!is_power_of_2(rbuf_size) || rbuf_size < VISOCK_RBUF_MIN ||
	    rbuf_size > VISOCK_RBUF_MAX)
		return -EINVAL;

	l = kzalloc(sizeof(*l), GFP_KERNEL);
	if (!l)
		return -ENOMEM;
	kref_init(&l->ref);
	mutex_init(&l->lock);
	spin_lock_init(&l->post_lock);
	INIT_LIST_HEAD(&l->dev_node);
	init_completion(&l->reg_done);
	l->reg_cqe.done = visock_link_reg_done;
	l->net = net;
	l->ack_timeout = ack_timeout;
	l->state = VISOCK_LINK_NEW;
	atomic64_set(&l->wr_posted, 0);
	atomic64_set(&l->wc_ok, 0);
	atomic64_set(&l->wc_err, 0);

	/* Held until set up, so that a device removal waits for us. */
	mutex_lock(&l->lock);
	err = visock_link_setup(l, net, local, rbuf_size);
	mutex_unlock(&l->lock);
	if (err) {
		visock_link_destroy(l);
		return err;
	}

	*out = l;
	return 0;
}

/**
 * visock_link_local_params() - describe our end of the link for the peer
 * @l: the link
 * @m: handshake message to fill in
 *
 * Sets @m's GID, QPN, PSN, MTU and RBUF fields and their present bits;
 * leaves all other fields alone.
 *
 * Context: any context.
 */
void visock_link_local_params(const struct visock_link *l,
			      struct visock_hs_msg *m)
{
	memcpy(m->gid, l->gid.raw, sizeof(m->gid));
	m->qpn = l->qpn;
	m->psn = l->psn;
	m->mtu = l->mtu;
	m->rbuf_addr = l->rbuf->iova;
	m->rbuf_rkey = l->rbuf->rkey;
	m->rbuf_size = l->rbuf->size;
	m->present |= VISOCK_HSF(VISOCK_TLV_GID) | VISOCK_HSF(VISOCK_TLV_QPN) |
		      VISOCK_HSF(VISOCK_TLV_PSN) | VISOCK_HSF(VISOCK_TLV_MTU) |
		      VISOCK_HSF(VISOCK_TLV_RBUF);
}

/* ------------------------------------------------------------------ */
/* Connecting                                                          */
/* ------------------------------------------------------------------ */

struct visock_resolve {
	struct completion done;
	int status;
};

static void visock_link_resolved(int status, struct sockaddr *src,
				 struct rdma_dev_addr *addr, void *ctx)
{
	struct visock_resolve *r = ctx;

	r->status = status;
	complete(&r->done);
}

/*
 * Kernel users of ib_modify_qp() pass a resolved RoCE address: find the
 * peer's MAC address (and the route's hop limit) through ib_core's
 * address resolution, in the namespace of our GID's net device.
 */
static int visock_link_resolve(struct visock_link *l, const union ib_gid *dgid,
			       u8 *dmac, u8 *hop_limit)
{
	union visock_ipaddr src, dst;
	struct rdma_dev_addr dev_addr = {};
	struct visock_resolve r;
	int err;

	rdma_gid2ip(visock_sa(&src), &l->gid);
	rdma_gid2ip(visock_sa(&dst), dgid);
	if (src.in.sin_family != dst.in.sin_family)
		return -EAFNOSUPPORT;

	dev_addr.net = l->net;
	dev_addr.sgid_attr = l->sgid_attr;
	init_completion(&r.done);
	r.status = 0;
	err = rdma_resolve_ip(visock_sa(&src), visock_sa(&dst), &dev_addr,
			      VISOCK_LINK_RESOLVE_MS, visock_link_resolved,
			      true, &r);
	if (err)
		return err;
	/* ib_core calls back within VISOCK_LINK_RESOLVE_MS in any case. */
	wait_for_completion(&r.done);
	if (r.status)
		return r.status;

	memcpy(dmac, dev_addr.dst_dev_addr, ETH_ALEN);
	if (dev_addr.hoplimit > 0 && dev_addr.hoplimit <= 255)
		*hop_limit = dev_addr.hoplimit;
	else
		*hop_limit = VISOCK_LINK_HOP_LIMIT;
	return 0;
}

static int visock_link_to_rtr(struct visock_link *l,
			      const struct visock_hs_msg *peer)
{
	struct ib_qp_attr attr = {};
	union ib_gid dgid;
	u8 dmac[ETH_ALEN];
	u8 hop_limit;
	int err;

	memcpy(dgid.raw, peer->gid, sizeof(dgid.raw));
	l->peer_gid = dgid;
	err = visock_link_resolve(l, &dgid, dmac, &hop_limit);
	if (err)
		return err;

	attr.qp_state = IB_QPS_RTR;
	attr.path_mtu = min_t(enum ib_mtu, l->mtu, peer->mtu);
	attr.dest_qp_num = peer->qpn;
	attr.rq_psn = peer->psn;
	attr.max_dest_rd_atomic = 1;
	attr.min_rnr_timer = VISOCK_LINK_MIN_RNR;

	attr.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&attr.ah_attr, l->port);
	rdma_ah_set_grh(&attr.ah_attr, &dgid, 0, l->sgid_attr->index,
			hop_limit, 0);
	/* Pin the exact GID entry we looked up; ib_core takes its own ref. */
	attr.ah_attr.grh.sgid_attr = l->sgid_attr;
	memcpy(attr.ah_attr.roce.dmac, dmac, ETH_ALEN);

	return ib_modify_qp(l->qp, &attr, IB_QP_STATE | IB_QP_AV |
			    IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			    IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
}

static int visock_link_to_rts(struct visock_link *l)
{
	struct ib_qp_attr attr = {};

	attr.qp_state = IB_QPS_RTS;
	attr.sq_psn = l->psn;
	attr.timeout = l->ack_timeout;
	attr.retry_cnt = VISOCK_LINK_RETRY;
	attr.rnr_retry = VISOCK_LINK_RNR_RETRY;
	attr.max_rd_atomic = 1;
	return ib_modify_qp(l->qp, &attr, IB_QP_STATE | IB_QP_TIMEOUT |
			    IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
			    IB_QP_MAX_QP_RD_ATOMIC);
}

/* Post a chain; caller holds post_lock.  Counts what was accepted. */
static int visock_link_post_locked(struct visock_link *l,
				   const struct ib_send_wr *wr)
{
	const struct ib_send_wr *bad = NULL, *w;
	unsigned int n = 0;
	int err;

	lockdep_assert_held(&l->post_lock);
	err = ib_post_send(l->qp, wr, &bad);
	/* On error, @bad is the first request that was not posted. */
	for (w = wr; w && !(err && w == bad); w = w->next)
		n++;
	if (n) {
		l->posted = true;
		atomic64_add(n, &l->wr_posted);
	}
	return err;
}

/*
 * Post the registrations of the send buffer (unsignaled) and of our
 * receive ring (signaled).  The send queue executes them in order, so the
 * second one completing successfully means both are done; if the first
 * fails, it completes in error and the second is flushed.  Both use
 * @reg_cqe.  Under the link's lock.
 */
static int visock_link_post_reg(struct visock_link *l)
{
	struct visock_rbuf *rb = l->rbuf, *sb = l->sbuf;
	struct ib_reg_wr reg = {}, sreg = {};
	int err;

	sreg.wr.opcode = IB_WR_REG_MR;
	sreg.wr.wr_cqe = &l->reg_cqe;
	sreg.wr.next = &reg.wr;
	sreg.mr = sb->mr;
	sreg.key = sb->mr->lkey;
	sreg.access = IB_ACCESS_LOCAL_WRITE;

	reg.wr.opcode = IB_WR_REG_MR;
	reg.wr.wr_cqe = &l->reg_cqe;
	reg.wr.send_flags = IB_SEND_SIGNALED;
	reg.mr = rb->mr;
	reg.key = rb->mr->rkey;
	reg.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE;

	spin_lock_bh(&l->post_lock);
	err = visock_link_post_locked(l, &sreg.wr);
	spin_unlock_bh(&l->post_lock);
	return err;
}

/**
 * visock_link_connect() - connect the link to the peer's end
 * @l: the link, fresh from visock_link_create()
 * @peer: the peer's REQ or REP, validated by the codec
 *
 * Moves the QP to RTR and RTS towards the peer's GID, QPN and PSN, with
 * the smaller of both MTUs, creates the send buffer (as large as the
 * peer's ring), registers it and our receive ring (waiting up to 5 s for
 * the registrations to complete) and remembers the peer's ring for the
 * data path.  Can be called once per link; after a failure the owner can
 * only destroy the link.
 *
 * Context: process context, may sleep.  Not concurrently with
 * visock_link_destroy() for the same link.
 * Return: 0 once the link is usable, -ENODEV if the device went away,
 * -ETIMEDOUT if the registration did not complete in time, -EIO if it
 * failed, -EINVAL if @l is not fresh or @peer lacks a field, or another
 * negative errno from address resolution or ib_core.
 */
int visock_link_connect(struct visock_link *l,
			const struct visock_hs_msg *peer)
{
	unsigned long left;
	int err;

	if ((peer->present & VISOCK_LINK_PEER_NEED) != VISOCK_LINK_PEER_NEED)
		return -EINVAL;

	mutex_lock(&l->lock);
	if (l->dead) {
		err = -ENODEV;
		goto out;
	}
	if (l->state != VISOCK_LINK_INIT) {
		err = -EINVAL;
		goto out;
	}
	l->state = VISOCK_LINK_FAILED;	/* until we know better */

	err = visock_link_to_rtr(l, peer);
	if (err)
		goto out;
	err = visock_link_to_rts(l);
	if (err)
		goto out;

	l->peer.addr = peer->rbuf_addr;
	l->peer.rkey = peer->rbuf_rkey;
	l->peer.size = peer->rbuf_size;

	/* Mirrors the peer's ring: byte p of the stream sits at p % size. */
	err = visock_rbuf_create(l, l->peer.size, DMA_TO_DEVICE, &l->sbuf);
	if (err)
		goto out;

	err = visock_link_post_reg(l);
	if (err)
		goto out;

	/*
	 * Wait without the lock so that a device removal does not wait for
	 * us: it flushes the request, which completes reg_done.  The
	 * handler only touches the link, which outlives the QP, so giving
	 * up after the timeout is safe too.
	 */
	mutex_unlock(&l->lock);
	left = wait_for_completion_timeout(&l->reg_done,
					   VISOCK_LINK_REG_TIMEOUT);
	mutex_lock(&l->lock);

	if (l->dead)
		err = -ENODEV;
	else if (!left)
		err = -ETIMEDOUT;
	else if (READ_ONCE(l->reg_status) != IB_WC_SUCCESS)
		err = -EIO;
	if (err)
		goto out;

	l->state = VISOCK_LINK_UP;
	trace_visock_link_up(dev_name(&l->ibdev->dev), l->port, l->qpn);
	spin_lock_bh(&l->post_lock);
	l->can_post = true;
	spin_unlock_bh(&l->post_lock);
out:
	mutex_unlock(&l->lock);
	return err;
}

/**
 * visock_link_destroy() - release a link
 * @l: the link, or NULL
 *
 * Drains the QP if anything was ever posted (all completion handlers have
 * run when this returns), destroys the verbs objects and frees the
 * receive ring.  After a device removal killed the link, only memory is
 * left to free.  Safe at any stage of the link's life.
 *
 * Context: process context, may sleep.  Not concurrently with the other
 * owner calls for the same link.
 */
void visock_link_destroy(struct visock_link *l)
{
	if (!l)
		return;

	mutex_lock(&l->lock);
	trace_visock_link_down(l->qpn, l->state == VISOCK_LINK_UP, false);
	l->owner_gone = true;
	l->dead_cb = NULL;
	l->dead_ctx = NULL;
	visock_link_release_verbs(l);
	visock_rbuf_free(l->rbuf);
	l->rbuf = NULL;
	visock_rbuf_free(l->sbuf);
	l->sbuf = NULL;
	if (l->ctrl_page) {
		__free_page(l->ctrl_page);
		l->ctrl_page = NULL;
	}
	mutex_unlock(&l->lock);

	kref_put(&l->ref, visock_link_free);
}

/* ------------------------------------------------------------------ */
/* Device removal                                                      */
/* ------------------------------------------------------------------ */

static void visock_link_kill(struct visock_link *l)
{
	mutex_lock(&l->lock);
	visock_link_release_verbs(l);
	if (!l->owner_gone && !l->dead) {
		WRITE_ONCE(l->dead, true);
		trace_visock_link_down(l->qpn, l->state == VISOCK_LINK_UP, true);
		pr_debug("visock: link QP %u killed: device removed\n", l->qpn);
		if (l->dead_cb)
			l->dead_cb(l->dead_ctx);
	}
	mutex_unlock(&l->lock);
}

/**
 * visock_link_device_removed() - kill every link of a departing device
 * @vdev: the device, already off visock_ib.c's device list
 *
 * Called by the ib_client remove callback.  Each link is taken off
 * @vdev's list with a reference held and killed.  A link whose owner is
 * destroying it at the same time is waited for.
 *
 * Context: process context, may sleep; no visock lock held.
 */
void visock_link_device_removed(struct visock_ibdev *vdev)
{
	struct visock_link *l;

	mutex_lock(&vdev->lock);
	vdev->dying = true;
	while ((l = list_first_entry_or_null(&vdev->links, struct visock_link,
					     dev_node))) {
		list_del_init(&l->dev_node);
		kref_get(&l->ref);
		mutex_unlock(&vdev->lock);

		visock_link_kill(l);
		kref_put(&l->ref, visock_link_free);

		mutex_lock(&vdev->lock);
	}
	mutex_unlock(&vdev->lock);
}

/**
 * visock_link_set_dead_cb() - ask to be told when the link dies
 * @l: the link
 * @dead_cb: called once if the link's device goes away, or NULL
 * @ctx: argument for @dead_cb
 *
 * @dead_cb is called in process context with the link's lock held (see
 * the lifetime rules at the top of visock_link.c): it should only
 * schedule work.
 *
 * Context: process context, may sleep.
 * Return: 0, or -ENODEV if the link is dead already (@dead_cb is then
 * not installed and will not be called).
 */
int visock_link_set_dead_cb(struct visock_link *l,
			    void (*dead_cb)(void *ctx), void *ctx)
{
	int err = 0;

	mutex_lock(&l->lock);
	if (l->dead) {
		err = -ENODEV;
	} else {
		l->dead_cb = dead_cb;
		l->dead_ctx = ctx;
	}
	mutex_unlock(&l->lock);
	return err;
}

/**
 * visock_link_is_dead() - did the link's device go away?
 * @l: the link
 *
 * Context: any context.
 * Return: true once a device removal killed the link.
 */
bool visock_link_is_dead(const struct visock_link *l)
{
	return READ_ONCE(l->dead);
}

/* ------------------------------------------------------------------ */
/* Data path helpers and accessors                                     */
/* ------------------------------------------------------------------ */

/**
 * visock_link_post_send() - post work requests to the link's send queue
 * @l: a connected link
 * @wr: chain of work requests; each needs a wr_cqe whose handler calls
 *	visock_link_count_wc() and stays valid until it ran
 *
 * Posting is refused once the link is being destroyed or killed, so a
 * request accepted here is always completed or flushed before the QP is
 * destroyed.
 *
 * Context: process or softirq context.
 * Return: 0, -ENOTCONN if the link is not connected, -ENODEV if it is
 * dead, or the error of ib_post_send() (requests before the failing one
 * were posted).
 */
int visock_link_post_send(struct visock_link *l, const struct ib_send_wr *wr)
{
	int err;

	spin_lock_bh(&l->post_lock);
	if (l->can_post)
		err = visock_link_post_locked(l, wr);
	else
		err = READ_ONCE(l->dead) ? -ENODEV : -ENOTCONN;
	spin_unlock_bh(&l->post_lock);
	return err;
}

/**
 * visock_link_get_stats() - read the link's counters
 * @l: the link
 * @st: where to put them
 *
 * Context: any context.
 */
void visock_link_get_stats(const struct visock_link *l,
			   struct visock_link_stats *st)
{
	st->wr_posted = atomic64_read(&l->wr_posted);
	st->wc_ok = atomic64_read(&l->wc_ok);
	st->wc_err = atomic64_read(&l->wc_err);
}

/**
 * visock_link_qpn() - our QP number
 * @l: the link
 *
 * Context: any context.
 * Return: the local QP number (kept after the QP itself is gone).
 */
u32 visock_link_qpn(const struct visock_link *l)
{
	return l->qpn;
}

/**
 * visock_link_rbuf() - kernel address of our receive ring
 * @l: the link
 *
 * The memory stays valid until visock_link_destroy(), also after a kill.
 *
 * Context: any context.
 * Return: start of the ring, visock_link_rbuf_size() bytes long.
 */
void *visock_link_rbuf(const struct visock_link *l)
{
	return l->rbuf->kaddr;
}

/**
 * visock_link_rbuf_sync_for_cpu() - make received bytes visible to the CPU
 * @l: the link
 * @off: ring offset of the bytes the peer just wrote
 * @len: their number (the range may wrap at the end of the ring)
 *
 * Call from the receive completion that announced the bytes, before they
 * are read.
 *
 * Context: the link's completion handler (softirq): the ring is mapped
 * until the QP is drained, which waits for the handler.
 */
void visock_link_rbuf_sync_for_cpu(struct visock_link *l, u32 off, u32 len)
{
	if (l->rbuf && l->rbuf->dma_nents && off < l->rbuf->size &&
	    len <= l->rbuf->size)
		visock_rbuf_sync_wrap(l->ibdev, l->rbuf, off, len, true);
}

/**
 * visock_link_rbuf_size() - size of our receive ring
 * @l: the link
 *
 * Context: any context.
 * Return: ring size in bytes.
 */
u32 visock_link_rbuf_size(const struct visock_link *l)
{
	return l->rbuf->size;
}

/**
 * visock_link_peer_rbuf_addr() - remote address of the peer's ring
 * @l: a connected link
 *
 * Context: any context.
 * Return: the address to use in RDMA WRITEs (0 before connecting).
 */
u64 visock_link_peer_rbuf_addr(const struct visock_link *l)
{
	return l->peer.addr;
}

/**
 * visock_link_peer_rbuf_rkey() - remote key of the peer's ring
 * @l: a connected link
 *
 * Context: any context.
 * Return: the rkey to use in RDMA WRITEs.
 */
u32 visock_link_peer_rbuf_rkey(const struct visock_link *l)
{
	return l->peer.rkey;
}

/**
 * visock_link_peer_rbuf_size() - size of the peer's ring
 * @l: a connected link
 *
 * Context: any context.
 * Return: ring size in bytes (0 before connecting).
 */
u32 visock_link_peer_rbuf_size(const struct visock_link *l)
{
	return l->peer.size;
}

/**
 * visock_link_sbuf() - kernel address of our send buffer
 * @l: a connected link
 *
 * The send buffer mirrors the peer's ring: visock_link_post_write() copies
 * the bytes at offset o of it to offset o of the peer's ring.  The memory
 * stays valid until visock_link_destroy(), also after a kill.
 *
 * Context: any context.
 * Return: start of the buffer, visock_link_peer_rbuf_size() bytes long.
 */
void *visock_link_sbuf(const struct visock_link *l)
{
	return l->sbuf->kaddr;
}

/**
 * visock_link_ctrl_slot() - a cursor message slot
 * @l: the link
 * @tx: a send slot (else a receive slot)
 * @idx: slot number, below VISOCK_LINK_SQ_DEPTH (send) or
 *	VISOCK_LINK_RQ_DEPTH (receive)
 *
 * A receive slot holds what the message received into it by the receive
 * work request posted with visock_link_post_recv(@idx) contains; read it
 * only from that request's completion handler.  A send slot is what
 * visock_link_post_ctrl(@idx) sends; write it only while no send of that
 * slot is outstanding.  Memory stays valid until visock_link_destroy().
 *
 * Context: any context.
 * Return: the slot, VISOCK_LINK_CTRL_SLOT bytes.
 */
void *visock_link_ctrl_slot(const struct visock_link *l, bool tx,
			    unsigned int idx)
{
	unsigned int n = tx ? VISOCK_LINK_RQ_DEPTH + idx : idx;

	return page_address(l->ctrl_page) + n * VISOCK_LINK_CTRL_SLOT;
}

static u64 visock_link_ctrl_addr(const struct visock_link *l, bool tx,
				 unsigned int idx)
{
	unsigned int n = tx ? VISOCK_LINK_RQ_DEPTH + idx : idx;

	return l->ctrl_dma + n * VISOCK_LINK_CTRL_SLOT;
}

/**
 * visock_link_ctrl_sync_rx() - make a received cursor message readable
 * @l: the link
 * @idx: receive slot
 *
 * Called from the completion handler of the slot's receive request, which
 * runs before the QP is drained and so before the mapping can go away.
 *
 * Context: any context.
 */
void visock_link_ctrl_sync_rx(struct visock_link *l, unsigned int idx)
{
	if (l->ctrl_mapped)
		ib_dma_sync_single_for_cpu(l->ibdev,
					   visock_link_ctrl_addr(l, false, idx),
					   VISOCK_LINK_CTRL_SLOT,
					   DMA_BIDIRECTIONAL);
}

/**
 * visock_link_post_recv() - post the receive request of a slot
 * @l: a link with its verbs objects
 * @idx: receive slot, below VISOCK_LINK_RQ_DEPTH
 * @cqe: completion handler; it must call visock_link_count_wc() and stay
 *	valid until it ran (the QP is drained before it is destroyed)
 *
 * The request receives a cursor message into slot @idx, or is consumed by
 * an RDMA WRITE with immediate data (then the slot is left alone).
 *
 * Context: process or softirq context.
 * Return: 0, -ENOTCONN if the link is not connected, -ENODEV if it is
 * dead, or the error of ib_post_recv().
 */
int visock_link_post_recv(struct visock_link *l, unsigned int idx,
			  struct ib_cqe *cqe)
{
	const struct ib_recv_wr *bad;
	struct ib_recv_wr wr = {};
	struct ib_sge sge;
	int err;

	if (WARN_ON_ONCE(idx >= VISOCK_LINK_RQ_DEPTH))
		return -EINVAL;
	wr.wr_cqe = cqe;
	wr.sg_list = &sge;
	wr.num_sge = 1;

	spin_lock_bh(&l->post_lock);
	if (l->can_post) {
		sge.addr = visock_link_ctrl_addr(l, false, idx);
		sge.length = VISOCK_LINK_CTRL_SLOT;
		sge.lkey = l->pd->local_dma_lkey;
		ib_dma_sync_single_for_device(l->ibdev, sge.addr, sge.length,
					      DMA_BIDIRECTIONAL);
		err = ib_post_recv(l->qp, &wr, &bad);
		if (!err)
			l->posted = true;
	} else {
		err = READ_ONCE(l->dead) ? -ENODEV : -ENOTCONN;
	}
	spin_unlock_bh(&l->post_lock);
	return err;
}

/**
 * visock_link_post_ctrl() - send a cursor message from a send slot
 * @l: a connected link
 * @idx: send slot, below VISOCK_LINK_SQ_DEPTH, already filled in
 * @len: message length, at most VISOCK_LINK_CTRL_SLOT
 * @cqe: completion handler, see visock_link_post_send()
 *
 * Posts one signaled SEND.  It consumes one receive request of the peer.
 *
 * Context: process or softirq context.
 * Return: as visock_link_post_send().
 */
int visock_link_post_ctrl(struct visock_link *l, unsigned int idx, u32 len,
			  struct ib_cqe *cqe)
{
	struct ib_send_wr wr = {};
	struct ib_sge sge;
	int err;

	if (WARN_ON_ONCE(idx >= VISOCK_LINK_SQ_DEPTH ||
			 len > VISOCK_LINK_CTRL_SLOT))
		return -EINVAL;
	wr.opcode = IB_WR_SEND;
	wr.send_flags = IB_SEND_SIGNALED;
	wr.wr_cqe = cqe;
	wr.sg_list = &sge;
	wr.num_sge = 1;

	spin_lock_bh(&l->post_lock);
	if (l->can_post) {
		sge.addr = visock_link_ctrl_addr(l, true, idx);
		sge.length = len;
		sge.lkey = l->pd->local_dma_lkey;
		ib_dma_sync_single_for_device(l->ibdev, sge.addr, len,
					      DMA_BIDIRECTIONAL);
		err = visock_link_post_locked(l, &wr);
	} else {
		err = READ_ONCE(l->dead) ? -ENODEV : -ENOTCONN;
	}
	spin_unlock_bh(&l->post_lock);
	return err;
}

/**
 * visock_link_post_write() - RDMA WRITE a range of the send buffer
 * @l: a connected link
 * @off: offset of the range in the send buffer and in the peer's ring
 * @len: length, 1 .. visock_link_peer_rbuf_size()
 * @imm: immediate data for the peer's receive completion
 * @cqe: completion handler, see visock_link_post_send()
 *
 * Writes the bytes at @off (wrapping at the end of the buffer) to the
 * same offsets of the peer's ring.  Without a wrap this is one RDMA WRITE
 * WITH IMMEDIATE; with a wrap a plain WRITE of the tail followed by a
 * WRITE WITH IMMEDIATE of the rest, posted as one chain.  Every request is
 * signaled.  Exactly one receive request of the peer is consumed.
 *
 * Context: process or softirq context.
 * Return: the number of work requests posted (1 or 2), -EINVAL for a bad
 * range, or an error as visock_link_post_send() (then nothing may be
 * assumed about the first request of a chain).
 */
int visock_link_post_write(struct visock_link *l, u32 off, u32 len,
			   __be32 imm, struct ib_cqe *cqe)
{
	struct ib_rdma_wr wr[2] = {};
	struct ib_sge sge[2];
	u32 size = l->peer.size, part;
	int i, n, err;

	if (!len || len > size || off >= size)
		return -EINVAL;
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

	spin_lock_bh(&l->post_lock);
	if (l->can_post) {
		/* The CPU wrote these bytes; the device reads them. */
		visock_rbuf_sync_wrap(l->ibdev, l->sbuf, off, len, false);
		for (i = 0; i < n; i++) {
			sge[i].addr += l->sbuf->iova;
			sge[i].lkey = l->sbuf->mr->lkey;
		}
		err = visock_link_post_locked(l, &wr[0].wr);
	} else {
		err = READ_ONCE(l->dead) ? -ENODEV : -ENOTCONN;
	}
	spin_unlock_bh(&l->post_lock);
	return err ? err : n;
}

/**
 * visock_link_diag() - describe a link for socket diagnostics
 * @l: the link
 * @d: filled in (device name, port, QP, state, GIDs, counters); the
 *	peer's QP number is the owner's to fill in
 *
 * Context: process context; takes the link's lock, so the caller may
 * hold lock_sock() of the owner but no spinlock.
 */
void visock_link_diag(struct visock_link *l, struct visock_diag_link *d)
{
	memset(d, 0, sizeof(*d));
	mutex_lock(&l->lock);
	if (l->ibdev)
		strscpy(d->vdl_dev, dev_name(&l->ibdev->dev),
			sizeof(d->vdl_dev));
	d->vdl_port = l->port;
	d->vdl_qpn = l->qpn;
	if (l->dead)
		d->vdl_state = VISOCK_LINK_STATE_DEAD;
	else if (l->state == VISOCK_LINK_UP)
		d->vdl_state = VISOCK_LINK_STATE_UP;
	else if (l->state == VISOCK_LINK_INIT)
		d->vdl_state = VISOCK_LINK_STATE_INIT;
	else if (l->state == VISOCK_LINK_FAILED)
		d->vdl_state = VISOCK_LINK_STATE_FAILED;
	else
		d->vdl_state = VISOCK_LINK_STATE_NEW;
	memcpy(d->vdl_gid, l->gid.raw, sizeof(d->vdl_gid));
	memcpy(d->vdl_peer_gid, l->peer_gid.raw, sizeof(d->vdl_peer_gid));
	if (l->rbuf && l->rbuf->mr)
		d->vdl_reg_bytes += l->rbuf->size;
	if (l->sbuf && l->sbuf->mr)
		d->vdl_reg_bytes += l->sbuf->size;
	if (l->ctrl_mapped)
		d->vdl_reg_bytes += PAGE_SIZE;
	mutex_unlock(&l->lock);
	d->vdl_wr_posted = atomic64_read(&l->wr_posted);
	d->vdl_wc_ok = atomic64_read(&l->wc_ok);
	d->vdl_wc_err = atomic64_read(&l->wc_err);
}
