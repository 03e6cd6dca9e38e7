/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: ring buffers registered with an RDMA device (visock_rbuf.c),
 * from a QP's pool.
 */
#ifndef _NET_VISOCK_RBUF_H
#define _NET_VISOCK_RBUF_H

#include <linux/dma-direction.h>
#include <linux/list.h>
#include <linux/scatterlist.h>
#include <linux/types.h>

struct ib_device;
struct ib_mr;
struct visock_qp;

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
 * @registered: the registration work request completed successfully,
 *	with @rkey
 * @stale: the device still holds an older registration of @mr, with
 *	@inv_rkey, that must be invalidated before @mr is registered again
 *	(visock_rbuf_new_rkey())
 * @inv_rkey: the key of that older registration
 * @node: entry in a QP's pool or quarantine, under the QP's lock
 *
 * Memory (@kaddr, @chunks) lives until the ring is freed (with its
 * connection, or from the pool with its QP); the DMA mapping and @mr are
 * verbs resources, released by a kill of the QP too.
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
	bool registered;
	bool stale;
	u32 inv_rkey;
	struct list_head node;
};

void visock_rbuf_free(struct visock_rbuf *rb);
void visock_rbuf_release_dma(struct visock_qp *q, struct visock_rbuf *rb);
void visock_rbuf_new_rkey(struct visock_rbuf *rb);
void visock_rbuf_sync_wrap(struct ib_device *dev, struct visock_rbuf *rb,
			   u32 off, u32 len, bool for_cpu);
int visock_rbuf_create(struct visock_qp *q, u32 size,
		       enum dma_data_direction dir, struct visock_rbuf **slot);

#endif /* _NET_VISOCK_RBUF_H */
