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
 *
 * Key updates (visock_rec_rekey_setup()): the first record under a
 * direction's next key carries VISOCK_REC_F_KEY_UPDATE; sequence numbers
 * go on counting across the change.  The flag is only sent to a peer
 * that announced key updates in the handshake (VISOCK_FEAT_REKEY): an
 * older peer refuses a record with a flag it does not know.
 */
#ifndef _NET_VISOCK_RECORD_H
#define _NET_VISOCK_RECORD_H

#include <linux/bits.h>
#include <linux/scatterlist.h>
#include <linux/types.h>

#include "visock_kdf.h"
#include "visock_xform.h"

struct aead_request;

#define VISOCK_REC_HDR_LEN	16
#define VISOCK_REC_VERSION	1
/* The payload is in the clear, only authenticated (integrity-only pair). */
#define VISOCK_REC_F_PLAIN	0x01
/* The payload was compressed before it was sealed. */
#define VISOCK_REC_F_COMPRESSED	0x02
/* The first record under the direction's next key (key updates only). */
#define VISOCK_REC_F_KEY_UPDATE	0x04
/* The flags a record may carry without key updates. */
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
 * @iv_salt: the IV salt of the current key
 * @secret: the update secret the next key is derived from
 * @seq: sequence number of the next record sealed or expected
 * @key_seq: sequence number of the first record under the current key
 * @limit: records one key may protect: without key updates, seal and
 *	open refuse the @limit-th record after @key_seq and later ones with
 *	-EKEYEXPIRED; with them, seal changes the key first and open
 *	requires the record to carry VISOCK_REC_F_KEY_UPDATE
 * @epoch: keys changed so far (the current key's number)
 * @rekey: key updates are on (visock_rec_rekey_setup())
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
	u8 secret[VISOCK_KDF_SECRET_LEN];
	u64 seq;
	u64 key_seq;
	u64 limit;
	u64 epoch;
	bool rekey;
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
void visock_rec_rekey_setup(struct visock_rec_ctx *c, u64 limit,
			    const u8 *secret);
void visock_rec_destroy(struct visock_rec_ctx *c);
size_t visock_rec_mem(const struct visock_rec_ctx *c);
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
