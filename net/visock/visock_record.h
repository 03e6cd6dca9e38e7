/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: records of a transformed stream (visock_record.c).
 *
 * Wire format of one record (multi-byte fields big endian):
 *
 *   0   1  version (VISOCK_REC_VERSION)
 *   1   1  transform (enum visock_xform)
 *   2   1  flags (VISOCK_REC_F_*)
 *   3   1  reserved, zero
 *   4   4  payload length on the wire (without header and tag)
 *   8   8  sequence number
 *   16  -  payload (encrypted, or in the clear with VISOCK_REC_F_PLAIN)
 *   -  16  authentication tag
 *
 * The header is the associated data of the AEAD; the nonce is the
 * direction's IV salt XOR the sequence number (visock_rec_nonce()).
 */
#ifndef _NET_VISOCK_RECORD_H
#define _NET_VISOCK_RECORD_H

#include <linux/bits.h>
#include <linux/scatterlist.h>
#include <linux/types.h>

#include "visock_xform.h"

struct aead_request;

#define VISOCK_REC_HDR_LEN	16
#define VISOCK_REC_VERSION	1
/* The payload is in the clear, only authenticated (integrity-only pair). */
#define VISOCK_REC_F_PLAIN	0x01
/* The payload was compressed before it was sealed. */
#define VISOCK_REC_F_COMPRESSED	0x02
#define VISOCK_REC_F_ALL	(VISOCK_REC_F_PLAIN | VISOCK_REC_F_COMPRESSED)
/* Upper bound of any record's payload, whatever the ring size. */
#define VISOCK_REC_MAX_PAYLOAD	BIT(24)
/*
 * Largest payload of one record the data path seals, whatever the ring
 * size (a quarter of a small ring holds less: visock_rec_dp.c).
 */
#define VISOCK_DP_REC_PAYLOAD	(16U * 1024)
/* Entries of a scatterlist passed to seal or open (a ring wrap takes 2). */
#define VISOCK_REC_MAX_SG	4

/**
 * struct visock_rec_hdr - decoded record header
 * @xform: transform (enum visock_xform)
 * @flags: VISOCK_REC_F_*
 * @len: payload length on the wire
 * @seq: sequence number
 */
struct visock_rec_hdr {
	u8 xform;
	u8 flags;
	u32 len;
	u64 seq;
};

struct visock_rec_scratch;

/**
 * struct visock_rec_ctx - one direction of a transformed connection
 * @xf: the transform pair
 * @aead: its keyed AEAD
 * @req: the request seal or open runs (one at a time per direction)
 * @s: buffers and scatterlists a request points to (heap, not stack)
 * @iv_salt: the direction's IV salt
 * @seq: sequence number of the next record sealed or expected
 * @limit: records this key may protect: seal and open refuse record
 *	number @limit and later with -EKEYEXPIRED (rekey needed)
 * @max_payload: largest payload accepted (fits the ring)
 *
 * The caller serializes seal and open of one direction (the socket lock).
 */
struct visock_rec_ctx {
	const struct visock_xform_info *xf;
	struct crypto_aead *aead;
	struct aead_request *req;
	struct visock_rec_scratch *s;
	u8 iv_salt[VISOCK_XFORM_IV_LEN];
	u64 seq;
	u64 limit;
	u32 max_payload;
};

void visock_rec_hdr_encode(const struct visock_rec_hdr *h,
			   u8 buf[VISOCK_REC_HDR_LEN]);
void visock_rec_hdr_decode(const u8 buf[VISOCK_REC_HDR_LEN],
			   struct visock_rec_hdr *h);
void visock_rec_nonce(const u8 iv_salt[VISOCK_XFORM_IV_LEN], u64 seq,
		      u8 iv[VISOCK_XFORM_IV_LEN]);
int visock_rec_init(struct visock_rec_ctx *c, unsigned int xform,
		    const u8 *key, unsigned int keylen,
		    const u8 iv_salt[VISOCK_XFORM_IV_LEN], u32 max_payload);
void visock_rec_destroy(struct visock_rec_ctx *c);
unsigned int visock_rec_overhead(const struct visock_rec_ctx *c);
int visock_rec_seal(struct visock_rec_ctx *c, u8 flags,
		    struct scatterlist *src, unsigned int src_nents,
		    unsigned int len, struct scatterlist *dst,
		    unsigned int dst_nents, unsigned int room);
int visock_rec_open(struct visock_rec_ctx *c, struct scatterlist *src,
		    unsigned int src_nents, unsigned int avail,
		    struct scatterlist *dst, unsigned int dst_nents,
		    unsigned int room, unsigned int *plen, u8 *flags);

#endif /* _NET_VISOCK_RECORD_H */
