// SPDX-License-Identifier: GPL-2.0
/*
 * visock: ring buffers registered with an RDMA device.
 *
 * A ring (struct visock_rbuf) is a receive ring the peer RDMA-writes into
 * or a send buffer our RDMA WRITEs read from: power-of-two chunks mapped
 * into one virtually contiguous range, DMA-mapped, with a zero-based
 * memory region so that any range of it needs one SGE and no address
 * goes on the wire.  Rings are created for a QP's pool (visock_lgr.c);
 * the registration itself is a work request posted by
 * visock_vc_connect().  A ring's memory outlives its DMA mapping and MR,
 * which a kill of the QP releases.
 *
 * A receive ring that goes from one connection to the next gets a new
 * remote key each time (visock_rbuf_new_rkey()): the old registration is
 * invalidated and the new one posted before the new connection's peer
 * may write, so that a late WRITE with the old key is refused by the
 * device instead of landing in the new connection's ring.
 */
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "visock_lgr.h"
#include "visock_rbuf.h"
#include "visock_fault.h"

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
void visock_rbuf_free(struct visock_rbuf *rb)
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
	if (!rb->chunks || visock_fault(VISOCK_FP_RBUF_ALLOC))
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
 * registration itself is a work request, posted by visock_vc_connect().
 * Context: process context, under the QP's lock.
 */
int visock_rbuf_create(struct visock_qp *q, u32 size,
		       enum dma_data_direction dir, struct visock_rbuf **slot)
{
	struct ib_device *dev = q->ibdev;
	struct visock_rbuf *rb;
	struct scatterlist *sg;
	unsigned int i, order;
	u32 chunk, left;
	int n, err;

	lockdep_assert_held(&q->lock);
	err = visock_rbuf_order(dev, size, &order);
	if (err)
		return err;

	rb = kzalloc(sizeof(*rb), GFP_KERNEL);
	if (!rb)
		return -ENOMEM;
	*slot = rb;	/* the caller frees it from now on */
	INIT_LIST_HEAD(&rb->node);
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

	n = visock_fault(VISOCK_FP_RBUF_MAP) ? 0 :
	    ib_dma_map_sg(dev, rb->sgt.sgl, rb->nchunks, dir);
	if (n <= 0)
		return -ENOMEM;
	rb->dma_nents = n;

	rb->mr = visock_fault_ptr(VISOCK_FP_MR_ALLOC) ?:
		 ib_alloc_mr(q->pd, IB_MR_TYPE_MEM_REG, rb->nchunks);
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
void visock_rbuf_sync_wrap(struct ib_device *dev, struct visock_rbuf *rb,
			   u32 off, u32 len, bool for_cpu)
{
	u32 part = min(len, rb->size - off);

	visock_rbuf_sync(dev, rb, off, part, for_cpu);
	if (part < len)
		visock_rbuf_sync(dev, rb, 0, len - part, for_cpu);
}

/**
 * visock_rbuf_new_rkey() - give a receive ring a new remote key
 * @rb: a ring from the pool, about to be handed to another connection
 *
 * Changes the key part (the low 8 bits) of the MR's keys; the next
 * registration of the ring (visock_vc_connect() or visock_vc_register_rx())
 * first invalidates the registration the device holds with the old key,
 * then registers the MR with the new one.  Call it before the ring's key
 * is put in a handshake message.  The key part wraps after 256 reuses:
 * a WRITE that late still finds a key of another generation, unless it
 * waited for exactly that many.
 *
 * Context: process context, under the QP's lock.
 */
void visock_rbuf_new_rkey(struct visock_rbuf *rb)
{
	if (rb->registered) {
		rb->inv_rkey = rb->mr->rkey;
		rb->stale = true;
		rb->registered = false;
	}
	ib_update_fast_reg_key(rb->mr, ib_inc_rkey(rb->mr->rkey));
	rb->rkey = rb->mr->rkey;
}

/* Release the ring's verbs resources; the memory stays. */
void visock_rbuf_release_dma(struct visock_qp *q, struct visock_rbuf *rb)
{
	if (rb->mr) {
		ib_dereg_mr(rb->mr);
		rb->mr = NULL;
	}
	rb->registered = false;
	rb->stale = false;
	if (rb->dma_nents) {
		ib_dma_unmap_sg(q->ibdev, rb->sgt.sgl, rb->nchunks, rb->dir);
		rb->dma_nents = 0;
	}
}
