// SPDX-License-Identifier: GPL-2.0
/*
 * visock: sealing and opening the records of a transformed stream.
 *
 * Sealing encrypts from the caller's data straight into the send buffer
 * (the record's place in it may wrap: two scatterlist entries), so the
 * AEAD pass is the copy.  Opening first copies the record out of the
 * receive ring into the caller's buffer and then decrypts it there, in
 * place: the ring stays writable by the peer's NIC while we read it, and
 * an AEAD implementation may read its input twice (once to authenticate,
 * once to decrypt), so only a private copy guarantees that the bytes
 * authenticated are the bytes delivered.  The copy and the in-place pass
 * run on data that is in the cache.
 *
 * Everything read from the ring is untrusted: the header is copied once,
 * checked, and that copy is what the AEAD authenticates.  A record that
 * fails any check delivers no byte: the destination is wiped.
 *
 * With key updates on, a direction changes its key when the current one
 * has protected the record limit: the sender derives the next key from
 * the direction's update secret (visock_kdf_update()) before it seals
 * the next record and flags that record; the receiver derives the same
 * key when it opens the flagged record.  The AEAD is keyed anew in
 * place, so the previous key's schedule is overwritten, and the secret
 * it came from is replaced by the next one.  Sequence numbers go on
 * across the change, and each key has its own IV salt: no (key, nonce)
 * pair repeats, and a record replayed from before the change has a
 * sequence number already used.
 */

#include <crypto/aead.h>
#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/scatterlist.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "visock_record.h"

/* Entries of a request's list: header, up to VISOCK_REC_MAX_SG, tag. */
#define VISOCK_REC_LIST	(VISOCK_REC_MAX_SG + 2)

/*
 * What a request points to must not live on the stack (scatterlists
 * need addresses in the linear map).
 */
struct visock_rec_scratch {
	u8 hdr[VISOCK_REC_HDR_LEN];
	u8 ad_out[VISOCK_REC_HDR_LEN];
	u8 tag[VISOCK_XFORM_TAG_LEN];
	u8 iv[VISOCK_XFORM_IV_LEN];
	struct scatterlist src[VISOCK_REC_LIST];
	struct scatterlist dst[VISOCK_REC_LIST];
};

static void visock_rec_put_be32(u32 v, u8 *p)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static u32 visock_rec_get_be32(const u8 *p)
{
	return (u32)p[0] << 24 | (u32)p[1] << 16 | (u32)p[2] << 8 | p[3];
}

/**
 * visock_rec_hdr_encode() - write a record header
 * @h: the header
 * @buf: VISOCK_REC_HDR_LEN bytes of output
 *
 * Context: any context.
 */
void visock_rec_hdr_encode(const struct visock_rec_hdr *h,
			   u8 buf[VISOCK_REC_HDR_LEN])
{
	buf[0] = VISOCK_REC_VERSION;
	buf[1] = h->xform;
	buf[2] = h->flags;
	buf[3] = 0;
	visock_rec_put_be32(h->len, buf + 4);
	visock_rec_put_be32(h->seq >> 32, buf + 8);
	visock_rec_put_be32(h->seq, buf + 12);
}

/**
 * visock_rec_hdr_decode() - read a record header without checking it
 * @buf: VISOCK_REC_HDR_LEN bytes
 * @h: the fields
 *
 * The version and reserved bytes are checked by visock_rec_open().
 *
 * Context: any context.
 */
void visock_rec_hdr_decode(const u8 buf[VISOCK_REC_HDR_LEN],
			   struct visock_rec_hdr *h)
{
	h->xform = buf[1];
	h->flags = buf[2];
	h->len = visock_rec_get_be32(buf + 4);
	h->seq = (u64)visock_rec_get_be32(buf + 8) << 32 |
		 visock_rec_get_be32(buf + 12);
}

/**
 * visock_rec_nonce() - the nonce of record number @seq
 * @iv_salt: the direction's IV salt
 * @seq: the record's sequence number
 * @iv: output
 *
 * The salt XOR the sequence number, big endian in the last 8 bytes: a
 * bijection of @seq, so no two records under one key share a nonce as
 * long as sequence numbers do not repeat, which the limit guarantees.
 *
 * Context: any context.
 */
void visock_rec_nonce(const u8 iv_salt[VISOCK_XFORM_IV_LEN], u64 seq,
		      u8 iv[VISOCK_XFORM_IV_LEN])
{
	int i;

	memcpy(iv, iv_salt, VISOCK_XFORM_IV_LEN);
	for (i = 0; i < 8; i++)
		iv[VISOCK_XFORM_IV_LEN - 1 - i] ^= seq >> (8 * i);
}

/**
 * visock_rec_init() - set up one direction
 * @c: the direction, zeroed or destroyed before
 * @xform: the transform pair (enum visock_xform)
 * @key: the direction's key (visock_kdf_derive())
 * @keylen: its length
 * @iv_salt: the direction's IV salt
 * @max_payload: largest payload of a record, 1..VISOCK_REC_MAX_PAYLOAD;
 *	a record with its overhead must fit the ring
 *
 * The first record has sequence number 0; a key protects at most the
 * pair's max_records records, and key updates are off
 * (visock_rec_rekey_setup() changes both).  The direction's own buffers
 * are charged (__GFP_ACCOUNT) to the current memory cgroup: a caller
 * that sets one up for a socket does so in the socket's
 * (visock_mem_scope_enter()).
 *
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for an unknown pair or bad length; -ENOMEM; or an
 * error of the crypto API (-ENOENT: no implementation).
 */
int visock_rec_init(struct visock_rec_ctx *c, unsigned int xform,
		    const u8 *key, unsigned int keylen,
		    const u8 iv_salt[VISOCK_XFORM_IV_LEN], u32 max_payload)
{
	const struct visock_xform_info *xf = visock_xform_get(xform);
	int err;

	memset(c, 0, sizeof(*c));
	if (!xf || !max_payload || max_payload > VISOCK_REC_MAX_PAYLOAD)
		return -EINVAL;
	c->s = kzalloc(sizeof(*c->s), GFP_KERNEL_ACCOUNT);
	if (!c->s)
		return -ENOMEM;
	c->aead = visock_xform_alloc(xf, key, keylen);
	if (IS_ERR(c->aead)) {
		err = PTR_ERR(c->aead);
		c->aead = NULL;
		goto err;
	}
	c->req = aead_request_alloc(c->aead, GFP_KERNEL_ACCOUNT);
	if (!c->req) {
		err = -ENOMEM;
		goto err;
	}
	c->xf = xf;
	memcpy(c->iv_salt, iv_salt, VISOCK_XFORM_IV_LEN);
	c->limit = xf->max_records;
	c->max_payload = max_payload;
	return 0;

err:
	visock_rec_destroy(c);
	return err;
}

/**
 * visock_rec_rekey_setup() - set a direction's key limit and updates
 * @c: the direction, set up with visock_rec_init(), no record yet
 * @limit: records one key may protect; 0 or more than the pair's
 *	max_records means max_records
 * @secret: the direction's update secret (VISOCK_KDF_SECRET_LEN bytes,
 *	visock_kdf_derive()) to turn key updates on, or NULL to leave them
 *	off: the direction then ends at @limit records (-EKEYEXPIRED)
 *
 * Both ends of a direction must agree on @secret and on whether updates
 * are on; the receiver accepts an update after any record and requires
 * one once the current key protected @limit records, so a sender whose
 * limit is lower interoperates.
 *
 * Context: any context.
 */
void visock_rec_rekey_setup(struct visock_rec_ctx *c, u64 limit,
			    const u8 *secret)
{
	c->limit = limit && limit < c->xf->max_records ? limit :
		   c->xf->max_records;
	c->rekey = !!secret;
	if (secret)
		memcpy(c->secret, secret, VISOCK_KDF_SECRET_LEN);
}

/*
 * Move @c to its next key: the record numbered @c->seq is the first under
 * it.  On failure @c refuses every later record (-EKEYEXPIRED).
 */
static int visock_rec_next_key(struct visock_rec_ctx *c)
{
	u8 key[VISOCK_XFORM_MAX_KEY];
	int err;

	err = visock_kdf_update(c->xf->id, c->epoch + 1, c->secret, key,
				c->xf->key_size, c->iv_salt,
				VISOCK_XFORM_IV_LEN);
	if (!err)
		err = crypto_aead_setkey(c->aead, key, c->xf->key_size);
	memzero_explicit(key, sizeof(key));
	if (err) {
		memzero_explicit(c->secret, sizeof(c->secret));
		c->rekey = false;
		c->key_seq = c->seq;
		c->limit = 0;
		return err;
	}
	c->epoch++;
	c->key_seq = c->seq;
	return 0;
}

/**
 * visock_rec_destroy() - free what visock_rec_init() took
 * @c: the direction; may be half set up or destroyed already
 *
 * Context: process context.
 */
void visock_rec_destroy(struct visock_rec_ctx *c)
{
	if (c->req)
		aead_request_free(c->req);
	visock_xform_free(c->aead);
	kfree_sensitive(c->s);
	memzero_explicit(c, sizeof(*c));
}

/*
 * What an AEAD implementation may allocate beside its transform, which
 * the crypto API does not tell: a template's inner transforms (gcm's
 * CTR and GHASH), a SIMD wrapper's asynchronous one.
 */
#define VISOCK_REC_AEAD_INNER	SZ_2K

/**
 * visock_rec_mem() - memory a set-up direction takes
 * @c: the direction, set up with visock_rec_init(), or destroyed (0)
 *
 * Measured where it can be: the slab objects of the direction's buffers,
 * its AEAD transform (its context included: the crypto API allocates
 * both as one object) and its request; plus VISOCK_REC_AEAD_INNER for
 * what the implementation allocates beside them.
 *
 * Context: any context.
 * Return: bytes.
 */
size_t visock_rec_mem(const struct visock_rec_ctx *c)
{
	size_t n = 0;

	if (c->s)
		n += ksize(c->s);
	if (c->aead)
		n += ksize(c->aead) + VISOCK_REC_AEAD_INNER;
	if (c->req)
		n += ksize(c->req);
	return n;
}

/**
 * visock_rec_overhead() - bytes a record adds to its payload
 * @c: the direction
 *
 * Context: any context.
 * Return: header plus tag length.
 */
unsigned int visock_rec_overhead(const struct visock_rec_ctx *c)
{
	return VISOCK_REC_HDR_LEN + c->xf->tag_size;
}

/* Total length of the first @nents entries of @sg. */
static u64 visock_sg_len(struct scatterlist *sg, unsigned int nents)
{
	struct scatterlist *s;
	unsigned int i;
	u64 len = 0;

	for_each_sg(sg, s, nents, i)
		len += s->length;
	return len;
}

/*
 * Append to @out (from entry @k, at most VISOCK_REC_LIST entries in all)
 * entries covering bytes [@off, @off + @len) of @in.  Returns the new
 * entry count, or -EINVAL if @in is too short or the entries run out.
 */
static int visock_sg_slice(struct scatterlist *out, int k,
			   struct scatterlist *in, unsigned int nin,
			   unsigned int off, unsigned int len)
{
	struct scatterlist *s;
	unsigned int i, n;

	for_each_sg(in, s, nin, i) {
		if (!len)
			break;
		if (off >= s->length) {
			off -= s->length;
			continue;
		}
		if (k >= VISOCK_REC_LIST)
			return -EINVAL;
		n = min(len, s->length - off);
		sg_set_page(&out[k++], sg_page(s), n, s->offset + off);
		off = 0;
		len -= n;
	}
	return len ? -EINVAL : k;
}

/* Copy @len bytes from @src at @soff to @dst at @doff. */
static int visock_sg_copy(struct scatterlist *dst, unsigned int dnents,
			  unsigned int doff, struct scatterlist *src,
			  unsigned int snents, unsigned int soff,
			  unsigned int len)
{
	struct sg_mapping_iter m;
	unsigned int n;
	int err = 0;

	sg_miter_start(&m, src, snents, SG_MITER_ATOMIC | SG_MITER_FROM_SG);
	if (!sg_miter_skip(&m, soff)) {
		sg_miter_stop(&m);
		return len ? -EINVAL : 0;
	}
	while (len && sg_miter_next(&m)) {
		n = min_t(size_t, len, m.length);
		if (sg_pcopy_from_buffer(dst, dnents, m.addr, n, doff) != n) {
			err = -EINVAL;
			break;
		}
		doff += n;
		len -= n;
	}
	sg_miter_stop(&m);
	return len ? -EINVAL : err;
}

static int visock_rec_crypt(struct visock_rec_ctx *c, bool enc,
			    struct scatterlist *src, struct scatterlist *dst,
			    unsigned int assoclen, unsigned int cryptlen)
{
	DECLARE_CRYPTO_WAIT(wait);
	int err;

	aead_request_set_callback(c->req, CRYPTO_TFM_REQ_MAY_BACKLOG |
				  CRYPTO_TFM_REQ_MAY_SLEEP,
				  crypto_req_done, &wait);
	aead_request_set_crypt(c->req, src, dst, cryptlen, c->s->iv);
	aead_request_set_ad(c->req, assoclen);
	err = enc ? crypto_aead_encrypt(c->req) : crypto_aead_decrypt(c->req);
	return crypto_wait_req(err, &wait);
}

/**
 * visock_rec_seal() - write the next record
 * @c: the sending direction
 * @flags: 0 or VISOCK_REC_F_COMPRESSED (the payload is compressed data);
 *	VISOCK_REC_F_PLAIN is set by the transform pair
 * @src: the payload
 * @src_nents: entries of @src, at most VISOCK_REC_MAX_SG
 * @len: payload length, at most @c->max_payload
 * @dst: where the record goes (the send buffer; two entries when the
 *	space wraps), at most VISOCK_REC_MAX_SG entries
 * @dst_nents: entries of @dst
 * @room: bytes available at @dst
 *
 * Encrypts from @src into @dst (or, for an integrity-only pair, copies
 * and authenticates) and advances @c->seq.  A sequence number is used up
 * once the cipher ran, even if it then failed: it is never used again.
 * If sealing fails, @dst holds no usable record and nothing may be sent.
 * With key updates on, a key that protected @c->limit records is first
 * replaced by the next one, and the first record under each new key
 * carries VISOCK_REC_F_KEY_UPDATE.
 *
 * Context: process context, may sleep (the crypto API may complete
 * asynchronously).  The caller serializes calls on @c.
 * Return: the record's length (@len + visock_rec_overhead()), or
 * -EINVAL (bad flags or scatterlists), -EMSGSIZE (@len too long),
 * -ENOSPC (@room too small), -EKEYEXPIRED (the key's record limit is
 * reached and key updates are off, or a key update failed before), or
 * an error of the crypto API or of the key update.
 */
int visock_rec_seal(struct visock_rec_ctx *c, u8 flags,
		    struct scatterlist *src, unsigned int src_nents,
		    unsigned int len, struct scatterlist *dst,
		    unsigned int dst_nents, unsigned int room)
{
	struct visock_rec_scratch *s = c->s;
	unsigned int tag = c->xf->tag_size;
	struct visock_rec_hdr h;
	int ns, nd, err;

	if ((flags & ~VISOCK_REC_F_COMPRESSED) ||
	    src_nents > VISOCK_REC_MAX_SG || dst_nents > VISOCK_REC_MAX_SG)
		return -EINVAL;
	if (len > c->max_payload)
		return -EMSGSIZE;
	if (room < len + VISOCK_REC_HDR_LEN + tag ||
	    visock_sg_len(dst, dst_nents) < room)
		return -ENOSPC;
	if (visock_sg_len(src, src_nents) < len)
		return -EINVAL;
	if (c->seq - c->key_seq >= c->limit) {
		if (!c->rekey)
			return -EKEYEXPIRED;
		err = visock_rec_next_key(c);
		if (err)
			return err;
	}

	h.xform = c->xf->id;
	h.flags = flags | (c->xf->integrity_only ? VISOCK_REC_F_PLAIN : 0);
	if (c->epoch && c->seq == c->key_seq)
		h.flags |= VISOCK_REC_F_KEY_UPDATE;
	h.len = len;
	h.seq = c->seq;
	visock_rec_hdr_encode(&h, s->hdr);
	if (sg_pcopy_from_buffer(dst, dst_nents, s->hdr, VISOCK_REC_HDR_LEN,
				 0) != VISOCK_REC_HDR_LEN)
		return -EINVAL;

	sg_init_table(s->src, VISOCK_REC_LIST);
	sg_init_table(s->dst, VISOCK_REC_LIST);
	sg_set_buf(&s->src[0], s->hdr, VISOCK_REC_HDR_LEN);
	if (c->xf->integrity_only) {
		/* In place on the copy: the header and payload are the AD. */
		err = visock_sg_copy(dst, dst_nents, VISOCK_REC_HDR_LEN,
				     src, src_nents, 0, len);
		if (err)
			return err;
		ns = visock_sg_slice(s->src, 1, dst, dst_nents,
				     VISOCK_REC_HDR_LEN, len + tag);
		if (ns < 0)
			return ns;
		sg_mark_end(&s->src[ns - 1]);
		visock_rec_nonce(c->iv_salt, c->seq++, s->iv);
		err = visock_rec_crypt(c, true, s->src, s->src,
				       VISOCK_REC_HDR_LEN + len, 0);
		return err ? err : len + VISOCK_REC_HDR_LEN + tag;
	}

	ns = visock_sg_slice(s->src, 1, src, src_nents, 0, len);
	sg_set_buf(&s->dst[0], s->ad_out, VISOCK_REC_HDR_LEN);
	nd = visock_sg_slice(s->dst, 1, dst, dst_nents, VISOCK_REC_HDR_LEN,
			     len + tag);
	if (ns < 0 || nd < 0)
		return -EINVAL;
	sg_mark_end(&s->src[ns - 1]);
	sg_mark_end(&s->dst[nd - 1]);
	visock_rec_nonce(c->iv_salt, c->seq++, s->iv);
	err = visock_rec_crypt(c, true, s->src, s->dst, VISOCK_REC_HDR_LEN,
			       len);
	return err ? err : len + VISOCK_REC_HDR_LEN + tag;
}

/**
 * visock_rec_open() - check and read the next record
 * @c: the receiving direction; @c->seq is the sequence number expected
 * @src: the received bytes, starting at the record (the receive ring;
 *	two entries when they wrap), at most VISOCK_REC_MAX_SG entries
 * @src_nents: entries of @src
 * @avail: bytes available at @src (all of them untrusted)
 * @dst: where the payload goes, at most VISOCK_REC_MAX_SG entries
 * @dst_nents: entries of @dst
 * @room: bytes available at @dst
 * @plen: on success, the payload length
 * @flags: on success, the record's VISOCK_REC_F_* flags
 *
 * Checks the header (version, transform, flags, reserved byte, length,
 * sequence number, key update), copies the payload to @dst and decrypts
 * and authenticates it there.  Only a record that passes every check
 * advances @c->seq; after any error but -EAGAIN and -ENOSPC the
 * connection must be reset, and no byte of @dst may be delivered (the
 * payload bytes written to @dst are wiped).
 *
 * With key updates on, a record flagged VISOCK_REC_F_KEY_UPDATE is
 * opened with the direction's next key, which then stays: the flag is
 * refused on the first record under a key (-EPROTO) and required once
 * the current key protected @c->limit records (-EKEYEXPIRED).  A flagged
 * record that then fails leaves @c on the next key; the connection is
 * reset anyway.
 *
 * Context: process context, may sleep.  The caller serializes calls on
 * @c.
 * Return: the record's length on the wire (to consume from @src), or
 * -EAGAIN (not a whole record yet: nothing read), -ENOSPC (@room too
 * small for the payload: nothing read), -EPROTO (malformed header, or a
 * key update where none may be), -EMSGSIZE (length over
 * @c->max_payload), -EILSEQ (sequence number not the expected one:
 * replay, reordering or loss), -EKEYEXPIRED (the key's record limit is
 * reached without a key update), -EBADMSG (authentication failed),
 * -EINVAL (bad scatterlists), or an error of the crypto API or of the
 * key update.
 */
int visock_rec_open(struct visock_rec_ctx *c, struct scatterlist *src,
		    unsigned int src_nents, unsigned int avail,
		    struct scatterlist *dst, unsigned int dst_nents,
		    unsigned int room, unsigned int *plen, u8 *flags)
{
	struct visock_rec_scratch *s = c->s;
	unsigned int tag = c->xf->tag_size;
	struct visock_rec_hdr h;
	bool update;
	u8 want, known;
	int n, err;

	if (src_nents > VISOCK_REC_MAX_SG || dst_nents > VISOCK_REC_MAX_SG ||
	    visock_sg_len(src, src_nents) < avail ||
	    visock_sg_len(dst, dst_nents) < room)
		return -EINVAL;
	if (!c->rekey && c->seq - c->key_seq >= c->limit)
		return -EKEYEXPIRED;
	if (avail < VISOCK_REC_HDR_LEN)
		return -EAGAIN;
	/* One copy of the header: what is checked is what is authenticated. */
	if (sg_pcopy_to_buffer(src, src_nents, s->hdr, VISOCK_REC_HDR_LEN,
			       0) != VISOCK_REC_HDR_LEN)
		return -EINVAL;
	visock_rec_hdr_decode(s->hdr, &h);
	want = c->xf->integrity_only ? VISOCK_REC_F_PLAIN : 0;
	known = VISOCK_REC_F_ALL | (c->rekey ? VISOCK_REC_F_KEY_UPDATE : 0);
	if (s->hdr[0] != VISOCK_REC_VERSION || s->hdr[3] ||
	    h.xform != c->xf->id || (h.flags & ~known) ||
	    (h.flags & VISOCK_REC_F_PLAIN) != want)
		return -EPROTO;
	if (h.len > c->max_payload)
		return -EMSGSIZE;
	if (h.seq != c->seq)
		return -EILSEQ;
	update = h.flags & VISOCK_REC_F_KEY_UPDATE;
	/* An update needs a record under the current key before it. */
	if (update && c->seq == c->key_seq)
		return -EPROTO;
	if (!update && c->seq - c->key_seq >= c->limit)
		return -EKEYEXPIRED;
	if (avail - VISOCK_REC_HDR_LEN < (u64)h.len + tag)
		return -EAGAIN;
	if (room < h.len)
		return -ENOSPC;

	if (update) {
		err = visock_rec_next_key(c);
		if (err)
			goto wipe;
	}

	err = visock_sg_copy(dst, dst_nents, 0, src, src_nents,
			     VISOCK_REC_HDR_LEN, h.len);
	if (err)
		goto wipe;
	if (sg_pcopy_to_buffer(src, src_nents, s->tag, tag,
			       VISOCK_REC_HDR_LEN + h.len) != tag) {
		err = -EINVAL;
		goto wipe;
	}
	sg_init_table(s->src, VISOCK_REC_LIST);
	sg_set_buf(&s->src[0], s->hdr, VISOCK_REC_HDR_LEN);
	n = visock_sg_slice(s->src, 1, dst, dst_nents, 0, h.len);
	if (n < 0 || n >= VISOCK_REC_LIST) {
		err = -EINVAL;
		goto wipe;
	}
	sg_set_buf(&s->src[n], s->tag, tag);
	sg_mark_end(&s->src[n]);
	visock_rec_nonce(c->iv_salt, h.seq, s->iv);
	if (c->xf->integrity_only)
		err = visock_rec_crypt(c, false, s->src, s->src,
				       VISOCK_REC_HDR_LEN + h.len, tag);
	else
		err = visock_rec_crypt(c, false, s->src, s->src,
				       VISOCK_REC_HDR_LEN, h.len + tag);
	if (err)
		goto wipe;
	c->seq++;
	*plen = h.len;
	*flags = h.flags;
	return VISOCK_REC_HDR_LEN + h.len + tag;

wipe:
	sg_zero_buffer(dst, dst_nents, h.len, 0);
	return err;
}
