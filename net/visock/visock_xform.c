// SPDX-License-Identifier: GPL-2.0
/*
 * visock: the registry of transform pairs.
 *
 * Each pair is an AEAD of the kernel crypto API, looked up by algorithm
 * name, so the crypto API picks the best implementation on this host.
 * The integrity-only pairs (GMAC) use the same "gcm(aes)" AEAD with an
 * empty plaintext: the whole record is associated data, so the tag
 * authenticates it without encrypting it.
 *
 * The compressing pairs are an AEAD preceded by a compressor of the
 * crypto API's acomp interface (LZ4 or Zstandard): the record layer
 * compresses a payload when that shrinks it and then seals it.  Most
 * encrypt (AES-GCM, ChaCha20-Poly1305); the two that compress without
 * encrypting still authenticate every record with GMAC, so that no
 * record is decompressed, or delivered, before its tag checked: they
 * count as integrity only, and never stand in for a pair that encrypts.
 * A host runs such a pair only if it has both algorithms.  Compression is only ever
 * offered or chosen for a connection that asks for a compressing pair:
 * how well a record compresses shows in its length, which an observer of
 * the encrypted stream sees, so it is not something to turn on for an
 * application that did not ask.
 *
 * The only state is which pairs this host can run (visock_xform_init());
 * a caller allocates a keyed AEAD with visock_xform_alloc() and frees it
 * with visock_xform_free().
 */

#include <crypto/aead.h>
#include <linux/bits.h>
#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/string.h>

#include "visock_comp.h"
#include "visock_xform.h"

/*
 * Records one key may protect.  AES-GCM's confidentiality bound falls
 * with the amount of data under one key; 2^24 records stays well inside
 * it for records up to the largest ring.  ChaCha20-Poly1305 has no such
 * practical bound; 2^32 keeps rekeying a rare but tested event.
 */
#define VISOCK_XFORM_GCM_RECORDS	BIT_ULL(24)
#define VISOCK_XFORM_CHACHA_RECORDS	BIT_ULL(32)

static const struct visock_xform_info visock_xforms[] = {
	{
		.id = VISOCK_XFORM_AES128_GCM,
		.name = "gcm-aes-128",
		.alg = "gcm(aes)",
		.key_size = 16,
		.tag_size = VISOCK_XFORM_TAG_LEN,
		.max_records = VISOCK_XFORM_GCM_RECORDS,
	},
	{
		.id = VISOCK_XFORM_AES256_GCM,
		.name = "gcm-aes-256",
		.alg = "gcm(aes)",
		.key_size = 32,
		.tag_size = VISOCK_XFORM_TAG_LEN,
		.max_records = VISOCK_XFORM_GCM_RECORDS,
	},
	{
		.id = VISOCK_XFORM_CHACHA20_POLY1305,
		.name = "chacha20-poly1305",
		.alg = "rfc7539(chacha20,poly1305)",
		.key_size = 32,
		.tag_size = VISOCK_XFORM_TAG_LEN,
		.max_records = VISOCK_XFORM_CHACHA_RECORDS,
	},
	{
		.id = VISOCK_XFORM_AES128_GMAC,
		.name = "gmac-aes-128",
		.alg = "gcm(aes)",
		.key_size = 16,
		.tag_size = VISOCK_XFORM_TAG_LEN,
		.integrity_only = true,
		.max_records = VISOCK_XFORM_GCM_RECORDS,
	},
	{
		.id = VISOCK_XFORM_AES256_GMAC,
		.name = "gmac-aes-256",
		.alg = "gcm(aes)",
		.key_size = 32,
		.tag_size = VISOCK_XFORM_TAG_LEN,
		.integrity_only = true,
		.max_records = VISOCK_XFORM_GCM_RECORDS,
	},
	{
		.id = VISOCK_XFORM_LZ4_AES128_GCM,
		.name = "lz4-gcm-aes-128",
		.alg = "gcm(aes)",
		.key_size = 16,
		.tag_size = VISOCK_XFORM_TAG_LEN,
		.comp = "lz4",
		.max_records = VISOCK_XFORM_GCM_RECORDS,
	},
	{
		.id = VISOCK_XFORM_ZSTD_AES128_GCM,
		.name = "zstd-gcm-aes-128",
		.alg = "gcm(aes)",
		.key_size = 16,
		.tag_size = VISOCK_XFORM_TAG_LEN,
		.comp = "zstd",
		.max_records = VISOCK_XFORM_GCM_RECORDS,
	},
	{
		.id = VISOCK_XFORM_LZ4_AES128_GMAC,
		.name = "lz4-gmac-aes-128",
		.alg = "gcm(aes)",
		.key_size = 16,
		.tag_size = VISOCK_XFORM_TAG_LEN,
		.integrity_only = true,
		.comp = "lz4",
		.max_records = VISOCK_XFORM_GCM_RECORDS,
	},
	{
		.id = VISOCK_XFORM_ZSTD_AES128_GMAC,
		.name = "zstd-gmac-aes-128",
		.alg = "gcm(aes)",
		.key_size = 16,
		.tag_size = VISOCK_XFORM_TAG_LEN,
		.integrity_only = true,
		.comp = "zstd",
		.max_records = VISOCK_XFORM_GCM_RECORDS,
	},
	{
		.id = VISOCK_XFORM_LZ4_AES256_GCM,
		.name = "lz4-gcm-aes-256",
		.alg = "gcm(aes)",
		.key_size = 32,
		.tag_size = VISOCK_XFORM_TAG_LEN,
		.comp = "lz4",
		.max_records = VISOCK_XFORM_GCM_RECORDS,
	},
	{
		.id = VISOCK_XFORM_ZSTD_AES256_GCM,
		.name = "zstd-gcm-aes-256",
		.alg = "gcm(aes)",
		.key_size = 32,
		.tag_size = VISOCK_XFORM_TAG_LEN,
		.comp = "zstd",
		.max_records = VISOCK_XFORM_GCM_RECORDS,
	},
	{
		.id = VISOCK_XFORM_LZ4_CHACHA20_POLY1305,
		.name = "lz4-chacha20-poly1305",
		.alg = "rfc7539(chacha20,poly1305)",
		.key_size = 32,
		.tag_size = VISOCK_XFORM_TAG_LEN,
		.comp = "lz4",
		.max_records = VISOCK_XFORM_CHACHA_RECORDS,
	},
	{
		.id = VISOCK_XFORM_ZSTD_CHACHA20_POLY1305,
		.name = "zstd-chacha20-poly1305",
		.alg = "rfc7539(chacha20,poly1305)",
		.key_size = 32,
		.tag_size = VISOCK_XFORM_TAG_LEN,
		.comp = "zstd",
		.max_records = VISOCK_XFORM_CHACHA_RECORDS,
	},
};

/**
 * visock_xform_get() - look up a transform pair
 * @id: enum visock_xform value, e.g. from a record header (untrusted)
 *
 * Context: any context.
 * Return: the pair's description, or NULL for VISOCK_XFORM_NONE and
 * unknown values.
 */
const struct visock_xform_info *visock_xform_get(unsigned int id)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(visock_xforms); i++)
		if (visock_xforms[i].id == id)
			return &visock_xforms[i];
	return NULL;
}

/**
 * visock_xform_alloc() - allocate a keyed AEAD for a transform pair
 * @xf: the pair
 * @key: its key
 * @keylen: length of @key; must be @xf->key_size
 *
 * Context: process context, may sleep (may load a crypto module).
 * Return: the AEAD, with the key and the pair's tag size set, or an
 * ERR_PTR(): -EINVAL for a wrong key length, -ENOENT when the crypto API
 * has no implementation of the algorithm, or another error of the crypto
 * API.
 */
struct crypto_aead *visock_xform_alloc(const struct visock_xform_info *xf,
				       const u8 *key, unsigned int keylen)
{
	struct crypto_aead *tfm;
	int err;

	if (!xf || keylen != xf->key_size)
		return ERR_PTR(-EINVAL);
	tfm = crypto_alloc_aead(xf->alg, 0, 0);
	if (IS_ERR(tfm))
		return tfm;
	if (crypto_aead_ivsize(tfm) != VISOCK_XFORM_IV_LEN) {
		err = -EINVAL;
		goto err_free;
	}
	err = crypto_aead_setauthsize(tfm, xf->tag_size);
	if (err)
		goto err_free;
	err = crypto_aead_setkey(tfm, key, keylen);
	if (err)
		goto err_free;
	return tfm;

err_free:
	crypto_free_aead(tfm);
	return ERR_PTR(err);
}

/**
 * visock_xform_free() - free an AEAD from visock_xform_alloc()
 * @tfm: the AEAD; NULL and error pointers are ignored
 *
 * The crypto API wipes the key schedule when it frees the transform.
 *
 * Context: process context.
 */
void visock_xform_free(struct crypto_aead *tfm)
{
	if (!IS_ERR_OR_NULL(tfm))
		crypto_free_aead(tfm);
}

/**
 * visock_xform_probe() - describe a transform pair as this host runs it
 * @id: enum visock_xform value
 * @d: filled in on success
 *
 * Allocates the pair's AEAD once to learn which implementation the crypto
 * API picks.  @d->hw is set when that implementation carries
 * CRYPTO_ALG_KERN_DRIVER_ONLY, the flag offload drivers (QAT, CCP, CAAM
 * and the like) set because their algorithm is only reachable through
 * the kernel.  It is a hint, not a guarantee: a driver may leave the flag
 * off, and implementations that use CPU instructions (AES-NI, VAES, ARM
 * CE) count as software, as they run on the CPU.  @d->driver names the
 * implementation, which is the reliable answer for an operator.
 *
 * A compressing pair also allocates its compressor once:
 * @d->comp_driver names that implementation.
 *
 * Context: process context, may sleep.
 * Return: 0, -EINVAL for an unknown @id, or the error of
 * crypto_alloc_aead() or crypto_alloc_acomp() (-ENOENT: no
 * implementation on this host).
 */
int visock_xform_probe(unsigned int id, struct visock_xform_desc *d)
{
	const struct visock_xform_info *xf = visock_xform_get(id);
	char comp[CRYPTO_MAX_ALG_NAME] = "";
	struct crypto_aead *tfm;
	struct crypto_alg *alg;
	int err;

	if (!xf)
		return -EINVAL;
	if (xf->comp) {
		err = visock_comp_driver(xf->comp, comp, sizeof(comp));
		if (err)
			return err;
	}
	tfm = crypto_alloc_aead(xf->alg, 0, 0);
	if (IS_ERR(tfm))
		return PTR_ERR(tfm);
	alg = crypto_aead_tfm(tfm)->__crt_alg;
	memset(d, 0, sizeof(*d));
	d->info = xf;
	strscpy(d->driver, crypto_aead_driver_name(tfm), sizeof(d->driver));
	strscpy(d->comp_driver, comp, sizeof(d->comp_driver));
	d->priority = alg->cra_priority;
	d->hw = !!(alg->cra_flags & CRYPTO_ALG_KERN_DRIVER_ONLY);
	d->async = !!(alg->cra_flags & CRYPTO_ALG_ASYNC);
	crypto_free_aead(tfm);
	return 0;
}

/**
 * visock_xform_list() - list the transform pairs this host can run
 * @d: array of @n descriptions, filled in from the start
 * @n: size of @d
 *
 * Pairs whose algorithm the crypto API cannot provide are left out.
 *
 * Context: process context, may sleep.
 * Return: the number of pairs written to @d, or a negative error other
 * than "not available" (e.g. -ENOMEM).
 */
int visock_xform_list(struct visock_xform_desc *d, unsigned int n)
{
	unsigned int i, cnt = 0;
	int err;

	for (i = 0; i < ARRAY_SIZE(visock_xforms) && cnt < n; i++) {
		err = visock_xform_probe(visock_xforms[i].id, &d[cnt]);
		if (err == -ENOENT)
			continue;
		if (err)
			return err;
		cnt++;
	}
	return cnt;
}

/* Bit per pair this host can run, once visock_xform_init() ran. */
static unsigned long visock_xform_ok;
static bool visock_xform_probed;

/**
 * visock_xform_init() - learn which pairs this host can run
 *
 * Asks the crypto API for each pair's algorithm, which may load crypto
 * modules and instantiate templates: that can take long, so it happens
 * once, when visock is loaded, and not in a handshake.  A pair whose
 * implementation only appears later is not offered or chosen until
 * visock is loaded again.
 *
 * Context: process context, may sleep.
 */
void visock_xform_init(void)
{
	unsigned long ok = 0;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(visock_xforms); i++)
		if (crypto_has_alg(visock_xforms[i].alg, CRYPTO_ALG_TYPE_AEAD,
				   CRYPTO_ALG_TYPE_MASK) &&
		    (!visock_xforms[i].comp ||
		     visock_comp_has(visock_xforms[i].comp)))
			ok |= BIT(visock_xforms[i].id);
	WRITE_ONCE(visock_xform_ok, ok);
	/* Pairs with the READ_ONCE() in visock_xform_usable(). */
	smp_wmb();
	WRITE_ONCE(visock_xform_probed, true);
}

/* Does this host have an implementation of @xf's algorithm? */
static bool visock_xform_usable(const struct visock_xform_info *xf)
{
	if (!READ_ONCE(visock_xform_probed))
		visock_xform_init();
	/* Pairs with the smp_wmb() in visock_xform_init(). */
	smp_rmb();
	return READ_ONCE(visock_xform_ok) & BIT(xf->id);
}

/*
 * May a connection configured for @p use @xf instead: it protects at
 * least as much (an integrity-only pair only instead of one), and it
 * compresses only if @p does.
 */
static bool visock_xform_acceptable(const struct visock_xform_info *p,
				    const struct visock_xform_info *xf)
{
	return (!xf->integrity_only || p->integrity_only) &&
	       (!xf->comp || p->comp);
}

/**
 * visock_xform_offer() - the pairs a client offers
 * @pref: the pair it is configured for (enum visock_xform); NONE offers
 *	nothing
 * @offer: output, @n entries at most
 * @n: room in @offer
 *
 * @pref first, then every other pair this host can run that protects at
 * least as much: with an AEAD that encrypts, only such AEADs; with an
 * integrity-only pair, all of them.  Compressing pairs are only offered
 * with a compressing @pref (visock_xform_acceptable()).
 *
 * Context: process context, may sleep (may load a crypto module).
 * Return: entries written to @offer, 0 if there is nothing to offer
 * (@pref is NONE, unknown, or cannot run here).
 */
unsigned int visock_xform_offer(unsigned int pref, u8 *offer,
				unsigned int n)
{
	const struct visock_xform_info *p = visock_xform_get(pref);
	unsigned int i, cnt = 0;

	if (!p || !n || !visock_xform_usable(p))
		return 0;
	offer[cnt++] = p->id;
	for (i = 0; i < ARRAY_SIZE(visock_xforms) && cnt < n; i++) {
		const struct visock_xform_info *xf = &visock_xforms[i];

		if (xf == p || !visock_xform_acceptable(p, xf) ||
		    !visock_xform_usable(xf))
			continue;
		offer[cnt++] = xf->id;
	}
	return cnt;
}

/**
 * visock_xform_choose() - the pair a server picks from an offer
 * @pref: the pair the server is configured for; NONE picks nothing
 * @offer: the client's offer, most preferred first (untrusted: ids may
 *	be unknown here)
 * @n: entries of @offer
 *
 * @pref if the client offered it, else the client's first offered pair
 * that this host knows, can run and that protects at least as much as
 * @pref (an integrity-only pair only if @pref is one; a compressing pair
 * only if @pref compresses).
 *
 * Context: process context, may sleep (may load a crypto module).
 * Return: the chosen pair (enum visock_xform), or VISOCK_XFORM_NONE.
 */
unsigned int visock_xform_choose(unsigned int pref, const u8 *offer,
				 unsigned int n)
{
	const struct visock_xform_info *p = visock_xform_get(pref);
	const struct visock_xform_info *xf;
	unsigned int i;

	if (!p)
		return VISOCK_XFORM_NONE;
	for (i = 0; i < n; i++)
		if (offer[i] == p->id && visock_xform_usable(p))
			return p->id;
	for (i = 0; i < n; i++) {
		xf = visock_xform_get(offer[i]);
		if (xf && visock_xform_acceptable(p, xf) &&
		    visock_xform_usable(xf))
			return xf->id;
	}
	return VISOCK_XFORM_NONE;
}

/**
 * visock_xform_name() - the name of a pair in the management interfaces
 * @id: enum visock_xform value
 *
 * Context: any context.
 * Return: e.g. "gcm-aes-128"; "none" for VISOCK_XFORM_NONE and unknown
 * values.
 */
const char *visock_xform_name(unsigned int id)
{
	const struct visock_xform_info *xf = visock_xform_get(id);

	return xf ? xf->name : "none";
}

/**
 * visock_xform_opt_check() - may a socket ask for a transform pair
 * @val: the value of setsockopt(SOL_VISOCK, VISOCK_TRANSFORM) (untrusted)
 *
 * VISOCK_XFORM_NONE is accepted: it clears the socket's choice.
 *
 * Context: process context, may sleep (may load a crypto module).
 * Return: 0, -EINVAL for a value that names no pair, -EOPNOTSUPP for a
 * pair whose algorithm the crypto API of this host cannot provide.
 */
int visock_xform_opt_check(int val)
{
	const struct visock_xform_info *xf;

	if (val == VISOCK_XFORM_NONE)
		return 0;
	xf = val > 0 ? visock_xform_get(val) : NULL;
	if (!xf)
		return -EINVAL;
	return visock_xform_usable(xf) ? 0 : -EOPNOTSUPP;
}

/**
 * visock_xform_pref() - the pair a connection asks for
 * @dflt: net.visock.transform of the namespace
 * @opt: the socket's VISOCK_TRANSFORM, VISOCK_XFORM_NONE if not set
 * @rule: the pair the matching destination policy rule names, or
 *	VISOCK_XFORM_NONE (no rule, or one without a transform)
 * @require: that rule requires @rule
 *
 * The order, strongest first: a rule that requires its pair, the
 * socket option, a rule that only names one, the namespace default.
 *
 * Context: any context.
 * Return: the pair (enum visock_xform), VISOCK_XFORM_NONE for none.
 */
unsigned int visock_xform_pref(unsigned int dflt, unsigned int opt,
			       unsigned int rule, bool require)
{
	if (rule && require)
		return rule;
	if (opt)
		return opt;
	if (rule)
		return rule;
	return dflt;
}
