// SPDX-License-Identifier: GPL-2.0
/*
 * visock: records of a transform pair on the RDMA data path.
 *
 * When the handshake negotiated a transform (design.rst, "Transforms"),
 * the byte stream the rings carry is a stream of records: sendmsg()
 * cuts the application's bytes into records and writes each one sealed
 * into the send buffer; recvmsg() opens each record only once all of it
 * is in the ring and delivers its payload from a private buffer.  Ring
 * cursors, credits, consumer updates and failover count the bytes of
 * the record stream, header and tag included, on both ends alike: the
 * rings do not know about records.
 *
 * A record's payload is at most VISOCK_DP_REC_PAYLOAD bytes and the
 * whole record at most a quarter of the receive ring, so a writer that
 * waits for a quarter of the ring (visock_tx_need()) always has room for
 * a record and the reader never needs more than what the ring holds.
 *
 * This version makes extra copies: sealing runs in place in a staging
 * buffer (the application's bytes are copied in, encrypted, and the
 * record copied into the send buffer), opening copies the record out of
 * the ring into a staging buffer and opens it into the plaintext buffer
 * recvmsg() copies from.  The send buffer and the ring are made of
 * chunks mapped into one virtual range, which a scatterlist can only
 * describe chunk by chunk; the staging buffers are linear.
 *
 * A compressing pair (visock_comp.c) compresses each payload into a
 * buffer of its own before sealing it, and seals the compressed bytes,
 * flagged VISOCK_REC_F_COMPRESSED, only when they are shorter; otherwise
 * the payload goes stored, as with the pair's AEAD alone.  The receiver
 * opens a flagged record and decompresses it into a second plaintext
 * buffer of the record's largest payload, which bounds what a compressed
 * record can expand to: a record that does not decompress within it is
 * a bad record like one that does not authenticate.  A flagged record on
 * a pair that does not compress is one too.
 *
 * When both ends announced key updates, each direction changes its key
 * at the pair's record limit (visock_record.c); debugfs rekey_records
 * lowers that limit for tests.  Without them, a direction that reaches
 * the limit ends the connection.
 *
 * Both directions' state is used under lock_sock() of the socket only
 * (sendmsg() and recvmsg() serialise on it); the plaintext counters that
 * poll() reads are also written under @dp->lock.
 *
 * The records' state and buffers (about three records' worth: 48 KiB
 * with 64 KiB rings; five with compression) are the connection's own:
 * charged to the socket's memory cgroup, also when the server's handshake
 * work sets them up (visock_mem.c).  The AEADs' and compressors'
 * transforms are the crypto API's, which allocates them uncharged (a
 * Zstandard compressor's workspaces are the larger part of a compressing
 * connection's memory).
 *
 * All of it, the crypto API's part included, counts in the namespace's
 * memory budget (net.visock.lgr_mem_max_mb) while the connection holds
 * it: what was allocated is measured, the compressor (whose workspaces
 * may be a megabyte or more) is estimated and charged before it is set
 * up.  When the budget has no room the connection does not get its
 * pair: the setup fails with -ENOSPC and the connection stays on TCP
 * (VISOCK_FB_XFORM_MEM), whether or not the pair was required.  The
 * charge goes back in visock_dp_rec_free(), which every end of the
 * connection goes through.
 */
#include <linux/slab.h>
#include <linux/uio.h>
#include <net/sock.h>

#include "visock_rdma.h"
#include "visock_auth.h"
#include "visock_lgr.h"
#include "visock_mem.h"
#include "visock_debugfs.h"
#include "visock_comp.h"
#include "visock_record.h"

/**
 * struct visock_dp_rec - records of one connection
 * @tx: the sending direction
 * @rx: the receiving direction
 * @tx_stage: the record being sealed (header, payload, tag)
 * @rx_stage: the record being opened, as copied out of the ring
 * @rx_plain: the payload of the last record opened
 * @rx_len: bytes in @rx_plain (under @dp->lock and lock_sock())
 * @rx_off: bytes of @rx_plain already delivered (likewise)
 * @comp: the compressor of a compressing pair (both directions)
 * @tx_comp: a payload compressed, before it is sealed (compressing pair)
 * @rx_comp: an opened compressed payload swaps into @rx_plain from here:
 *	the two are one record's largest payload each (compressing pair)
 * @sealed: records sealed
 * @opened: records opened
 * @failed: a record did not open: none is opened again (lock_sock())
 * @compressed: records sealed with a compressed payload
 * @decompressed: records opened with a compressed payload
 * @mem: bytes charged to the namespace's memory budget (0: none yet)
 */
struct visock_dp_rec {
	struct visock_rec_ctx tx;
	struct visock_rec_ctx rx;
	u8 *tx_stage;
	u8 *rx_stage;
	u8 *rx_plain;
	u32 rx_len;
	u32 rx_off;
	struct visock_comp comp;
	u8 *tx_comp;
	u8 *rx_comp;
	u64 sealed;
	u64 opened;
	bool failed;
	u64 compressed;
	u64 decompressed;
	u64 mem;
};

/* Largest payload of a record in a ring of @ring bytes. */
static u32 visock_dp_rec_max(u32 ring, unsigned int overhead)
{
	return min(VISOCK_DP_REC_PAYLOAD, ring / 4 - overhead);
}

/*
 * What @r takes once its compressor (if @xf has one) is set up: its
 * objects as allocated, the compressor as estimated.
 */
static u64 visock_dp_rec_mem(const struct visock_dp_rec *r,
			     const struct visock_xform_info *xf)
{
	u64 n = ksize(r) + visock_rec_mem(&r->tx) + visock_rec_mem(&r->rx) +
		ksize(r->tx_stage) + ksize(r->rx_stage) + ksize(r->rx_plain);

	if (xf->comp)
		n += ksize(r->tx_comp) + ksize(r->rx_comp) +
		     visock_comp_mem(xf->comp);
	return n;
}

/*
 * Both directions and their buffers, in the current memory cgroup, and
 * charged to the namespace's budget.
 */
static int visock_dp_rec_alloc(struct visock_dp *dp,
			       const struct visock_auth_conn *a,
			       const struct visock_xform_info *xf, bool server)
{
	unsigned int ovh = VISOCK_REC_HDR_LEN + xf->tag_size;
	unsigned int txd, rxd;
	struct visock_dp_rec *r;
	u64 limit, mem;
	int err;

	r = kzalloc(sizeof(*r), GFP_KERNEL_ACCOUNT);
	if (!r)
		return -ENOMEM;
	txd = server ? VISOCK_KDF_S2C : VISOCK_KDF_C2S;
	rxd = server ? VISOCK_KDF_C2S : VISOCK_KDF_S2C;
	err = visock_rec_init(&r->tx, xf->id, a->key[txd], xf->key_size,
			      a->iv_salt[txd],
			      visock_dp_rec_max(dp->tx_size, ovh));
	if (!err)
		err = visock_rec_init(&r->rx, xf->id, a->key[rxd],
				      xf->key_size, a->iv_salt[rxd],
				      visock_dp_rec_max(dp->rx_size, ovh));
	if (err)
		goto err;
	/* 0 (off) keeps the pair's limit. */
	limit = READ_ONCE(visock_test_rekey_records);
	visock_rec_rekey_setup(&r->tx, limit,
			       a->rekey ? a->secret[txd] : NULL);
	visock_rec_rekey_setup(&r->rx, limit,
			       a->rekey ? a->secret[rxd] : NULL);
	err = -ENOMEM;
	r->tx_stage = kmalloc(r->tx.max_payload + ovh, GFP_KERNEL_ACCOUNT);
	r->rx_stage = kmalloc(r->rx.max_payload + ovh, GFP_KERNEL_ACCOUNT);
	r->rx_plain = kmalloc(r->rx.max_payload, GFP_KERNEL_ACCOUNT);
	if (!r->tx_stage || !r->rx_stage || !r->rx_plain)
		goto err;
	if (xf->comp) {
		r->tx_comp = kmalloc(r->tx.max_payload, GFP_KERNEL_ACCOUNT);
		r->rx_comp = kmalloc(r->rx.max_payload, GFP_KERNEL_ACCOUNT);
		if (!r->tx_comp || !r->rx_comp)
			goto err;
	}
	/* Before the compressor: its workspaces are the large part. */
	mem = visock_dp_rec_mem(r, xf);
	err = visock_lgr_xform_charge(sock_net(&dp->vsk->sk), mem);
	if (err)
		goto err;
	r->mem = mem;
	if (xf->comp) {
		err = visock_comp_init(&r->comp, xf->comp);
		if (err)
			goto err;
	}
	dp->rec = r;
	return 0;

err:
	dp->rec = r;
	visock_dp_rec_free(dp);
	return err;
}

/**
 * visock_dp_rec_init() - put records on a connection's data path
 * @dp: data path state, sizes set, not yet carrying data
 * @a: the handshake's keys; @a->xform is the negotiated transform,
 *	@a->rekey says whether key updates are on.  Its keys, IV salts and
 *	update secrets are wiped: the record layer keeps the only copies.
 * @server: this end is the server (it seals with the server's key)
 *
 * The records' state and buffers are charged to the memory cgroup of
 * @dp's socket, whichever task sets them up; all of the pair's state,
 * the crypto API's included, to the namespace's memory budget.
 *
 * Context: process context, under lock_sock(); may sleep.
 * Return: 0 (also when no transform was negotiated: nothing to do),
 * -ENOMEM, -ENOSPC if the pair's state does not fit the namespace's
 * memory budget, or an error of the crypto API.
 */
int visock_dp_rec_init(struct visock_dp *dp, struct visock_auth_conn *a,
		       bool server)
{
	const struct visock_xform_info *xf;
	struct mem_cgroup *old;
	int err;

	if (!a)
		return 0;
	xf = visock_xform_get(a->xform);
	if (!a->xform || !xf) {
		visock_auth_conn_wipe(a);
		return a->xform ? -EINVAL : 0;
	}
	lockdep_assert_held(&dp->vsk->sk.sk_lock);
	old = visock_mem_scope_enter(&dp->vsk->sk);
	err = visock_dp_rec_alloc(dp, a, xf, server);
	visock_mem_scope_leave(old);
	visock_auth_conn_wipe(a);
	return err;
}

/**
 * visock_dp_rec_free() - free what visock_dp_rec_init() took
 * @dp: data path state that no longer carries data
 *
 * Context: process context.
 */
void visock_dp_rec_free(struct visock_dp *dp)
{
	struct visock_dp_rec *r = dp->rec;

	if (!r)
		return;
	dp->rec = NULL;
	if (r->mem)
		visock_lgr_xform_uncharge(sock_net(&dp->vsk->sk), r->mem);
	visock_rec_destroy(&r->tx);
	visock_rec_destroy(&r->rx);
	visock_comp_destroy(&r->comp);
	kfree_sensitive(r->tx_comp);
	kfree_sensitive(r->rx_comp);
	kfree_sensitive(r->tx_stage);
	kfree_sensitive(r->rx_stage);
	kfree_sensitive(r->rx_plain);
	kfree(r);
}

/**
 * visock_dp_rec_overhead() - bytes a record adds to its payload
 * @dp: data path state with records
 *
 * Context: any.
 * Return: header and tag length.
 */
u32 visock_dp_rec_overhead(const struct visock_dp *dp)
{
	return visock_rec_overhead(&dp->rec->tx);
}

/**
 * visock_dp_rec_need() - send buffer space a writer waits for
 * @dp: data path state with records
 * @left: bytes the writer still has
 *
 * Context: any.
 * Return: room for the next record: up to a whole one.
 */
u32 visock_dp_rec_need(const struct visock_dp *dp, size_t left)
{
	struct visock_dp_rec *r = dp->rec;

	return min_t(size_t, left, r->tx.max_payload) +
	       visock_rec_overhead(&r->tx);
}

/**
 * visock_dp_rec_send() - seal the next record into the send buffer
 * @dp: data path state with records
 * @off: send buffer offset of the record (the written cursor)
 * @space: free bytes of the send buffer from @off, more than the overhead
 * @left: bytes the application still has to send
 * @msg: where they are
 * @wire: the record's length, to add to the written cursor
 * @want: the payload bytes it asked @msg for
 *
 * Context: process context, under lock_sock(), without @dp->lock; may
 * sleep.
 * Return: payload bytes taken from @msg (fewer than asked when its
 * memory faulted; then nothing is written if none were taken), or an
 * error of visock_rec_seal(): the connection cannot go on.
 */
int visock_dp_rec_send(struct visock_dp *dp, u32 off, u32 space,
		       size_t left, struct msghdr *msg, u32 *wire, u32 *want)
{
	struct visock_dp_rec *r = dp->rec;
	u32 ovh = visock_rec_overhead(&r->tx);
	u8 *payload = r->tx_stage + VISOCK_REC_HDR_LEN;
	struct scatterlist src, dst;
	u32 got, first, plen;
	u8 flags = 0;
	int len;

	*wire = 0;
	*want = min_t(size_t, left, min(space - ovh, r->tx.max_payload));
	got = copy_from_iter(payload, *want, &msg->msg_iter);
	if (!got)
		return 0;
	plen = got;
	/* Only what comes out shorter goes compressed. */
	len = got > 1 && r->tx_comp ?
	      visock_comp_compress(&r->comp, payload, got, r->tx_comp,
				   got - 1) : -EINVAL;
	if (len > 0) {
		payload = r->tx_comp;
		plen = len;
		flags = VISOCK_REC_F_COMPRESSED;
	}
	/* In place for a stored payload: encrypted where it is. */
	sg_init_one(&src, payload, plen);
	sg_init_one(&dst, r->tx_stage, plen + ovh);
	len = visock_rec_seal(&r->tx, flags, &src, 1, plen, &dst, 1,
			      plen + ovh);
	if (len < 0)
		return len;
	if (flags)
		r->compressed++;
	first = min_t(u32, len, dp->tx_size - off);
	memcpy(dp->sbuf + off, r->tx_stage, first);
	if (first < len)
		memcpy(dp->sbuf, r->tx_stage + first, len - first);
	r->sealed++;
	*wire = len;
	return got;
}

/**
 * visock_dp_rec_forge() - a record as an attacker would write it
 * @dp: data path state with records
 * @payload: the record's payload
 * @len: its length, at most the sending direction's largest payload
 * @out: visock_dp_rec_overhead() + @len bytes: the record
 *
 * Test hook forge_write (visock_debugfs.c): what an attacker who saw
 * the connection's records on the wire writes next: a well-formed header
 * (this direction's transform, flags and next sequence number), the
 * payload in the clear and an all-zero tag, since it has no key.
 *
 * Context: under lock_sock().
 */
void visock_dp_rec_forge(const struct visock_dp *dp, const u8 *payload,
			 u32 len, u8 *out)
{
	const struct visock_rec_ctx *c = &dp->rec->tx;
	struct visock_rec_hdr h = {
		.xform = c->xf->id,
		.flags = c->xf->integrity_only ? VISOCK_REC_F_PLAIN : 0,
		.len = len,
		.seq = c->seq,
	};

	visock_rec_hdr_encode(&h, out);
	memcpy(out + VISOCK_REC_HDR_LEN, payload, len);
	memset(out + VISOCK_REC_HDR_LEN + len, 0, c->xf->tag_size);
}

/*
 * Length of the record that starts at the consumer cursor if all of it
 * is in the ring (its header's length, unchecked but bounded), or 0.
 * Under @dp->lock.
 */
static u32 visock_dp_rec_whole_locked(const struct visock_dp *dp)
{
	struct visock_dp_rec *r = dp->rec;
	u32 avail = visock_rx_avail_locked(dp);
	u32 off = dp->rx_cons.count, len = 0;
	u8 hdr[VISOCK_REC_HDR_LEN];
	unsigned int i;
	u64 whole;

	lockdep_assert_held(&dp->lock);
	if (avail < VISOCK_REC_HDR_LEN)
		return 0;
	for (i = 0; i < VISOCK_REC_HDR_LEN; i++)
		hdr[i] = READ_ONCE(dp->rbuf[(off + i) & (dp->rx_size - 1)]);
	for (i = 4; i < 8; i++)
		len = len << 8 | hdr[i];
	/* A bad length is what visock_rec_open() reports: let it. */
	if (len > r->rx.max_payload)
		return VISOCK_REC_HDR_LEN;
	whole = (u64)len + visock_rec_overhead(&r->rx);
	return avail >= whole ? whole : 0;
}

/**
 * visock_dp_rec_ready_locked() - bytes a reader would get now
 * @dp: data path state with records
 *
 * Context: under @dp->lock.
 * Return: plaintext not yet delivered, or, if there is none, non-zero
 * when a whole record waits in the ring.
 */
u32 visock_dp_rec_ready_locked(const struct visock_dp *dp)
{
	struct visock_dp_rec *r = dp->rec;

	lockdep_assert_held(&dp->lock);
	if (r->rx_len > r->rx_off)
		return r->rx_len - r->rx_off;
	return visock_dp_rec_whole_locked(dp);
}

/**
 * visock_dp_rec_pending_locked() - opened bytes not yet delivered
 * @dp: data path state with records
 *
 * Context: under @dp->lock.
 * Return: bytes left in the plaintext buffer.
 */
u32 visock_dp_rec_pending_locked(const struct visock_dp *dp)
{
	lockdep_assert_held(&dp->lock);
	return dp->rec->rx_len - dp->rec->rx_off;
}

/*
 * The record at the consumer cursor did not open: count it, reset the
 * connection.  No byte of it was delivered.  It stays where it is, so
 * later reads must not open it again (@failed): counted once.
 */
static void visock_dp_rec_bad(struct visock_dp *dp, const char *why,
			      int err)
{
	struct visock_sock *vsk = dp->vsk;
	unsigned int wake = 0;

	dp->rec->failed = true;
	atomic64_inc(&visock_net(sock_net(&vsk->sk))->auth_failed);
	atomic64_inc(&visock_net(sock_net(&vsk->sk))->rec_auth_failed);
	spin_lock_bh(&dp->lock);
	visock_dp_fail_locked(dp, ECONNRESET, true, why, err, &wake);
	spin_unlock_bh(&dp->lock);
	visock_dp_wake(dp, wake);
}

/*
 * Decompress the @clen bytes opened into @r->rx_plain; on success the
 * payload is in @r->rx_plain (the buffers swap), on failure the opened
 * bytes and whatever the decompressor wrote are wiped.  Returns the
 * payload's length or an error.  Under lock_sock(), with nothing of
 * @r->rx_plain pending.
 */
static int visock_dp_rec_inflate(struct visock_dp_rec *r, u32 clen)
{
	u8 *plain = r->rx_comp;
	int ret;

	ret = visock_comp_decompress(&r->comp, r->rx_plain, clen, plain,
				     r->rx.max_payload);
	memzero_explicit(r->rx_plain, clen);
	if (ret < 0) {
		memzero_explicit(plain, r->rx.max_payload);
		return ret;
	}
	r->rx_comp = r->rx_plain;
	r->rx_plain = plain;
	return ret;
}

/**
 * visock_dp_rec_fill() - open the next record if none is pending
 * @dp: data path state with records
 *
 * Copies the record at the consumer cursor out of the ring, opens it
 * into the plaintext buffer and only then consumes it from the ring
 * (which may let the peer write there again).  A record that does not
 * open resets the connection; every later call fails at once.
 *
 * Context: process context, under lock_sock(), without @dp->lock; may
 * sleep.
 * Return: plaintext bytes pending (0: no whole record yet), or
 * -ECONNRESET.
 */
int visock_dp_rec_fill(struct visock_dp *dp)
{
	struct visock_dp_rec *r = dp->rec;
	struct scatterlist src, dst;
	unsigned int wake = 0;
	u32 whole, off, first;
	u8 flags;
	u32 plen;
	int ret;

	spin_lock_bh(&dp->lock);
	if (r->rx_len > r->rx_off) {
		ret = r->rx_len - r->rx_off;
		spin_unlock_bh(&dp->lock);
		return ret;
	}
	if (r->failed) {
		spin_unlock_bh(&dp->lock);
		return -ECONNRESET;
	}
	whole = visock_dp_rec_whole_locked(dp);
	off = dp->rx_cons.count;
	spin_unlock_bh(&dp->lock);
	if (!whole)
		return 0;

	/* The bytes between the cursors stay put until we consume them. */
	first = min(whole, dp->rx_size - off);
	memcpy(r->rx_stage, dp->rbuf + off, first);
	if (first < whole)
		memcpy(r->rx_stage + first, dp->rbuf, whole - first);
	sg_init_one(&src, r->rx_stage, whole);
	sg_init_one(&dst, r->rx_plain, r->rx.max_payload);
	ret = visock_rec_open(&r->rx, &src, 1, whole, &dst, 1,
			      r->rx.max_payload, &plen, &flags);
	if (ret >= 0 && (ret != whole ||
			 ((flags & VISOCK_REC_F_COMPRESSED) && !r->rx_comp)))
		ret = -EPROTO;
	if (ret < 0) {
		visock_dp_rec_bad(dp, "record not authentic", ret);
		return -ECONNRESET;
	}
	if (flags & VISOCK_REC_F_COMPRESSED) {
		ret = visock_dp_rec_inflate(r, plen);
		if (ret < 0) {
			visock_dp_rec_bad(dp, "record does not decompress",
					  ret);
			return -ECONNRESET;
		}
		plen = ret;
		r->decompressed++;
	}
	r->opened++;
	spin_lock_bh(&dp->lock);
	r->rx_len = plen;
	r->rx_off = 0;
	visock_cursor_add(&dp->rx_cons, dp->rx_size, whole);
	dp->rx_read += whole;
	visock_rx_check_update_locked(dp);
	visock_tx_push_locked(dp, &wake);
	spin_unlock_bh(&dp->lock);
	visock_dp_wake(dp, wake);
	return plen;
}

/**
 * visock_dp_rec_copy() - deliver opened bytes
 * @dp: data path state with records
 * @skip: bytes after the first undelivered one to start at (MSG_PEEK)
 * @n: bytes to deliver, at most what is pending after @skip
 * @msg: where to, or NULL to discard (MSG_TRUNC)
 * @consume: mark them delivered
 *
 * Context: process context, under lock_sock(), without @dp->lock.
 * Return: bytes delivered.
 */
u32 visock_dp_rec_copy(struct visock_dp *dp, u32 skip, u32 n,
		       struct msghdr *msg, bool consume)
{
	struct visock_dp_rec *r = dp->rec;

	if (msg)
		n = copy_to_iter(r->rx_plain + r->rx_off + skip, n,
				 &msg->msg_iter);
	if (consume && n) {
		spin_lock_bh(&dp->lock);
		r->rx_off += n;
		spin_unlock_bh(&dp->lock);
	}
	return n;
}

/**
 * visock_dp_rec_query() - record counters of a connection
 * @dp: data path state
 * @info: its vi_rec_* fields are set (records sealed and opened, key
 *	changes of each direction, records compressed and decompressed);
 *	left alone without records
 *
 * Context: under @dp->lock or lock_sock().
 */
void visock_dp_rec_query(const struct visock_dp *dp,
			 struct visock_info *info)
{
	const struct visock_dp_rec *r = dp->rec;

	if (!r)
		return;
	info->vi_rec_sealed = r->sealed;
	info->vi_rec_opened = r->opened;
	info->vi_rec_tx_rekeys = r->tx.epoch;
	info->vi_rec_rx_rekeys = r->rx.epoch;
	info->vi_rec_compressed = r->compressed;
	info->vi_rec_decompressed = r->decompressed;
}
