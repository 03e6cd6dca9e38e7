/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: the registry of transform pairs (visock_xform.c).
 *
 * A transform pair is what the sender applies to a record and what the
 * receiver applies to undo and check it.  Every pair is an AEAD of the
 * kernel crypto API, some preceded by a compressor of its acomp
 * interface; the crypto API picks the implementations (generic C, CPU
 * instructions or an offload driver).
 */
#ifndef _NET_VISOCK_XFORM_H
#define _NET_VISOCK_XFORM_H

#include <linux/crypto.h>
#include <linux/types.h>
#include <linux/visock.h>

struct crypto_aead;

/* Every pair's nonce: 96 bits, the IV salt XOR the sequence number. */
#define VISOCK_XFORM_IV_LEN	12
#define VISOCK_XFORM_MAX_KEY	32
#define VISOCK_XFORM_TAG_LEN	16

/**
 * struct visock_xform_info - static description of a transform pair
 * @id: its number on the wire and in the uapi (enum visock_xform)
 * @name: its name in the management interfaces, e.g. "gcm-aes-128"
 * @alg: the crypto API algorithm it is built on
 * @key_size: key length in bytes
 * @tag_size: authentication tag length in bytes (after the payload)
 * @integrity_only: the payload is sent in the clear, only authenticated
 * @comp: the acomp algorithm that compresses each payload before it is
 *	sealed (visock_comp.c), or NULL
 * @max_records: records one key may protect; the connection must rekey
 *	before
 */
struct visock_xform_info {
	enum visock_xform id;
	const char *name;
	const char *alg;
	u8 key_size;
	u8 tag_size;
	bool integrity_only;
	const char *comp;
	u64 max_records;
};

/**
 * struct visock_xform_desc - a transform pair as this host runs it
 * @info: the static description
 * @driver: the AEAD implementation the crypto API picked (its driver
 *	name)
 * @comp_driver: the compressor's implementation, "" for a pair without
 *	compression
 * @priority: that implementation's priority in the crypto API
 * @hw: the implementation is an offload driver (see visock_xform_probe())
 * @async: the implementation may complete asynchronously
 */
struct visock_xform_desc {
	const struct visock_xform_info *info;
	char driver[CRYPTO_MAX_ALG_NAME];
	char comp_driver[CRYPTO_MAX_ALG_NAME];
	int priority;
	bool hw;
	bool async;
};

const struct visock_xform_info *visock_xform_get(unsigned int id);
int visock_xform_probe(unsigned int id, struct visock_xform_desc *d);
int visock_xform_list(struct visock_xform_desc *d, unsigned int n);
struct crypto_aead *visock_xform_alloc(const struct visock_xform_info *xf,
				       const u8 *key, unsigned int keylen);
void visock_xform_free(struct crypto_aead *tfm);
void visock_xform_init(void);
unsigned int visock_xform_offer(unsigned int pref, u8 *offer,
				unsigned int n);
unsigned int visock_xform_choose(unsigned int pref, const u8 *offer,
				 unsigned int n);
const char *visock_xform_name(unsigned int id);
int visock_xform_opt_check(int val);
unsigned int visock_xform_pref(unsigned int dflt, unsigned int opt,
			       unsigned int rule, bool require);

#endif /* _NET_VISOCK_XFORM_H */
