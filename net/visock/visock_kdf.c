// SPDX-License-Identifier: GPL-2.0
/*
 * visock: key derivation of the transform pairs.
 *
 * HKDF (RFC 5869) with HMAC-SHA-256 of the crypto API ("hmac(sha256)").
 * Where the kernel offers HKDF itself (visock_compat.h) the extract and
 * expand steps are the kernel's; otherwise they are the few lines below,
 * which only chain HMAC computations of the crypto API.
 *
 * Key schedule of a connection (documented in design.rst, "Transforms"):
 *
 *   PRK  = HKDF-Extract(salt = client nonce || server nonce, IKM = PSK)
 *   OKM  = HKDF-Expand(PRK, info, key length + IV salt length + 32)
 *   key  = first key length bytes of OKM, then the IV salt, then the
 *          direction's update secret (32 bytes)
 *
 * with one info string per direction (visock_kdf_info()).  HKDF-Expand's
 * output does not depend on its length but as a prefix, so the key and
 * IV salt are the same whether the update secret is derived or not.
 *
 * Key update (visock_kdf_update()): the next key, IV salt and update
 * secret of a direction come from its current update secret alone:
 *
 *   OKM' = HKDF-Expand(PRK = update secret, update info, same length)
 *
 * with the update info of visock_kdf_update_info(), which names the
 * number of the key derived.  The update secret only ever keys HMAC.
 */

#include <crypto/hash.h>
#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/visock.h>

#include "visock_compat.h"
#include "visock_kdf.h"

/* The info string starts with this label (no terminating NUL). */
static const char visock_kdf_label[12] = "visock xform";
/* ... and the info string of a key update with this one. */
static const char visock_kdf_update_label[12] = "visock rekey";
#define VISOCK_KDF_VERSION	1
/* RFC 5869: at most 255 blocks of output. */
#define VISOCK_HKDF_MAX_OKM	(255 * VISOCK_KDF_HASH_LEN)

/**
 * visock_kdf_alloc() - allocate the HMAC-SHA-256 transform HKDF runs on
 *
 * Context: process context, may sleep.
 * Return: the shash, or an ERR_PTR() from the crypto API.  Free it with
 * crypto_free_shash().
 */
struct crypto_shash *visock_kdf_alloc(void)
{
	struct crypto_shash *hmac;

	hmac = crypto_alloc_shash("hmac(sha256)", 0, 0);
	if (IS_ERR(hmac))
		return hmac;
	if (crypto_shash_digestsize(hmac) != VISOCK_KDF_HASH_LEN) {
		crypto_free_shash(hmac);
		return ERR_PTR(-EINVAL);
	}
	return hmac;
}

/**
 * visock_hkdf_extract() - HKDF-Extract, and key @hmac with the result
 * @hmac: an HMAC-SHA-256 shash from visock_kdf_alloc()
 * @salt: the salt; may be NULL if @saltlen is 0 (RFC 5869: a string of
 *	zeros of the hash length)
 * @saltlen: length of @salt
 * @ikm: the input keying material
 * @ikmlen: length of @ikm
 * @prk: VISOCK_KDF_HASH_LEN bytes of output, the pseudorandom key
 *
 * On success @hmac is keyed with @prk, ready for visock_hkdf_expand().
 *
 * Context: any context that may use the shash (no sleeping).
 * Return: 0 or an error of the crypto API.
 */
int visock_hkdf_extract(struct crypto_shash *hmac, const u8 *salt,
			unsigned int saltlen, const u8 *ikm,
			unsigned int ikmlen, u8 *prk)
{
	static const u8 zeros[VISOCK_KDF_HASH_LEN];
	int err;

	if (!saltlen) {
		salt = zeros;
		saltlen = sizeof(zeros);
	}
#if VISOCK_HAVE_CRYPTO_HKDF
	err = hkdf_extract(hmac, ikm, ikmlen, salt, saltlen, prk);
#else
	err = crypto_shash_setkey(hmac, salt, saltlen);
	if (!err)
		err = crypto_shash_tfm_digest(hmac, ikm, ikmlen, prk);
#endif
	if (!err)
		err = crypto_shash_setkey(hmac, prk, VISOCK_KDF_HASH_LEN);
	return err;
}

#if !VISOCK_HAVE_CRYPTO_HKDF
/* T(n) = HMAC(PRK, T(n - 1) || info || n), output T(1) || T(2) || ... */
static int visock_hkdf_expand_hmac(struct crypto_shash *hmac, const u8 *info,
				   unsigned int infolen, u8 *okm,
				   unsigned int okmlen)
{
	SHASH_DESC_ON_STACK(desc, hmac);
	u8 t[VISOCK_KDF_HASH_LEN];
	unsigned int done = 0, n;
	u8 ctr = 0;
	int err = 0;

	desc->tfm = hmac;
	while (done < okmlen) {
		ctr++;
		err = crypto_shash_init(desc);
		if (!err && ctr > 1)
			err = crypto_shash_update(desc, t, sizeof(t));
		if (!err && infolen)
			err = crypto_shash_update(desc, info, infolen);
		if (!err)
			err = crypto_shash_update(desc, &ctr, 1);
		if (!err)
			err = crypto_shash_final(desc, t);
		if (err)
			break;
		n = min_t(unsigned int, okmlen - done, sizeof(t));
		memcpy(okm + done, t, n);
		done += n;
	}
	shash_desc_zero(desc);
	memzero_explicit(t, sizeof(t));
	return err;
}
#endif

/**
 * visock_hkdf_expand() - HKDF-Expand with the key @hmac holds
 * @hmac: an HMAC-SHA-256 shash keyed with the pseudorandom key (as
 *	visock_hkdf_extract() leaves it)
 * @info: the context string; may be NULL if @infolen is 0
 * @infolen: length of @info
 * @okm: output keying material
 * @okmlen: bytes of output, 1..255 * VISOCK_KDF_HASH_LEN
 *
 * Context: any context that may use the shash (no sleeping).
 * Return: 0, -EINVAL for a bad @okmlen (@okm untouched), or an error of
 * the crypto API (then @okm is wiped).
 */
int visock_hkdf_expand(struct crypto_shash *hmac, const u8 *info,
		       unsigned int infolen, u8 *okm, unsigned int okmlen)
{
	int err;

	if (!okmlen || okmlen > VISOCK_HKDF_MAX_OKM)
		return -EINVAL;
#if VISOCK_HAVE_CRYPTO_HKDF
	err = hkdf_expand(hmac, info, infolen, okm, okmlen);
#else
	err = visock_hkdf_expand_hmac(hmac, info, infolen, okm, okmlen);
#endif
	if (err)
		memzero_explicit(okm, okmlen);
	return err;
}

static void visock_kdf_put_be32(u32 v, u8 *p)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

/**
 * visock_kdf_info() - the HKDF info string of one direction's keys
 * @p: the connection's parameters
 * @dir: the direction
 * @keylen: length of the key derived with it
 * @info: VISOCK_KDF_INFO_LEN bytes of output
 *
 * Layout (multi-byte fields big endian)::
 *
 *   0  12  "visock xform" (ASCII, no NUL)
 *   12  1  version of the key schedule (1)
 *   13  1  transform (enum visock_xform)
 *   14  1  direction (enum visock_kdf_dir)
 *   15  1  key length in bytes
 *   16  4  client token
 *   20  4  server token
 *
 * Context: any context.
 */
void visock_kdf_info(const struct visock_kdf_params *p,
		     enum visock_kdf_dir dir, unsigned int keylen,
		     u8 info[VISOCK_KDF_INFO_LEN])
{
	memcpy(info, visock_kdf_label, sizeof(visock_kdf_label));
	info[12] = VISOCK_KDF_VERSION;
	info[13] = p->xform;
	info[14] = dir;
	info[15] = keylen;
	visock_kdf_put_be32(p->client_token, info + 16);
	visock_kdf_put_be32(p->server_token, info + 20);
}

/**
 * visock_kdf_derive() - derive one direction's key and IV salt
 * @p: the connection's parameters
 * @dir: the direction
 * @key: output, @keylen bytes
 * @keylen: key length of the transform, 1..VISOCK_KDF_HASH_LEN
 * @iv_salt: output, @saltlen bytes
 * @saltlen: IV salt length, 1..VISOCK_KDF_HASH_LEN
 * @secret: output, VISOCK_KDF_SECRET_LEN bytes: the direction's update
 *	secret (visock_kdf_update()); NULL if not wanted
 *
 * Both ends derive the same key for a direction: the client seals with
 * the VISOCK_KDF_C2S key and the server opens with it, and the other way
 * round for VISOCK_KDF_S2C.  Nothing secret is left on the stack.
 *
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for a PSK or output length out of range; or an error
 * of the crypto API.  On error @key, @iv_salt and @secret are wiped.
 */
int visock_kdf_derive(const struct visock_kdf_params *p,
		      enum visock_kdf_dir dir, u8 *key, unsigned int keylen,
		      u8 *iv_salt, unsigned int saltlen, u8 *secret)
{
	unsigned int slen = secret ? VISOCK_KDF_SECRET_LEN : 0;
	u8 salt[2 * VISOCK_KDF_NONCE_LEN];
	u8 okm[3 * VISOCK_KDF_HASH_LEN];
	u8 prk[VISOCK_KDF_HASH_LEN];
	u8 info[VISOCK_KDF_INFO_LEN];
	struct crypto_shash *hmac;
	int err;

	if (!p->psk || p->psk_len < VISOCK_KDF_PSK_MIN ||
	    p->psk_len > VISOCK_KDF_PSK_MAX || !keylen ||
	    keylen > VISOCK_KDF_HASH_LEN || !saltlen ||
	    saltlen > VISOCK_KDF_HASH_LEN ||
	    (dir != VISOCK_KDF_C2S && dir != VISOCK_KDF_S2C))
		return -EINVAL;
	hmac = visock_kdf_alloc();
	if (IS_ERR(hmac))
		return PTR_ERR(hmac);
	memcpy(salt, p->client_nonce, VISOCK_KDF_NONCE_LEN);
	memcpy(salt + VISOCK_KDF_NONCE_LEN, p->server_nonce,
	       VISOCK_KDF_NONCE_LEN);
	visock_kdf_info(p, dir, keylen, info);
	err = visock_hkdf_extract(hmac, salt, sizeof(salt), p->psk,
				  p->psk_len, prk);
	if (!err)
		err = visock_hkdf_expand(hmac, info, sizeof(info), okm,
					 keylen + saltlen + slen);
	crypto_free_shash(hmac);
	if (!err) {
		memcpy(key, okm, keylen);
		memcpy(iv_salt, okm + keylen, saltlen);
		if (secret)
			memcpy(secret, okm + keylen + saltlen, slen);
	} else {
		memzero_explicit(key, keylen);
		memzero_explicit(iv_salt, saltlen);
		if (secret)
			memzero_explicit(secret, slen);
	}
	memzero_explicit(okm, sizeof(okm));
	memzero_explicit(prk, sizeof(prk));
	return err;
}

/**
 * visock_kdf_update_info() - the HKDF info string of a key update
 * @xform: the connection's transform pair (enum visock_xform)
 * @keylen: its key length
 * @epoch: the number of the key derived (1: the first key after the
 *	one the handshake derived)
 * @info: VISOCK_KDF_INFO_LEN bytes of output
 *
 * Layout (multi-byte fields big endian)::
 *
 *   0  12  "visock rekey" (ASCII, no NUL)
 *   12  1  version of the key schedule (1)
 *   13  1  transform (enum visock_xform)
 *   14  1  zero
 *   15  1  key length in bytes
 *   16  8  number of the key derived
 *
 * The direction and the connection are not named: the update secret
 * already differs between them.
 *
 * Context: any context.
 */
void visock_kdf_update_info(u8 xform, unsigned int keylen, u64 epoch,
			    u8 info[VISOCK_KDF_INFO_LEN])
{
	memcpy(info, visock_kdf_update_label, sizeof(visock_kdf_update_label));
	info[12] = VISOCK_KDF_VERSION;
	info[13] = xform;
	info[14] = 0;
	info[15] = keylen;
	visock_kdf_put_be32(epoch >> 32, info + 16);
	visock_kdf_put_be32(epoch, info + 20);
}

/**
 * visock_kdf_update() - derive a direction's next key from its secret
 * @xform: the connection's transform pair (enum visock_xform)
 * @epoch: the number of the key derived, >= 1
 * @secret: VISOCK_KDF_SECRET_LEN bytes: in, the direction's current
 *	update secret; out, the next one (the current one is overwritten)
 * @key: output, @keylen bytes: the next key
 * @keylen: key length of the pair, 1..VISOCK_KDF_HASH_LEN
 * @iv_salt: output, @saltlen bytes: the next IV salt
 * @saltlen: IV salt length, 1..VISOCK_KDF_HASH_LEN
 *
 * HKDF-Expand with the current update secret as its pseudorandom key and
 * visock_kdf_update_info() as its info.  Both ends of a direction hold
 * the same secret and so derive the same next key; the previous keys
 * cannot be computed from the new one or from the new secret.  Nothing
 * secret is left on the stack.
 *
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for an output length out of range or @epoch 0; or
 * an error of the crypto API.  On error @secret, @key and @iv_salt are
 * wiped.
 */
int visock_kdf_update(u8 xform, u64 epoch,
		      u8 secret[VISOCK_KDF_SECRET_LEN], u8 *key,
		      unsigned int keylen, u8 *iv_salt, unsigned int saltlen)
{
	u8 okm[3 * VISOCK_KDF_HASH_LEN];
	u8 info[VISOCK_KDF_INFO_LEN];
	struct crypto_shash *hmac;
	int err;

	if (!epoch || !keylen || keylen > VISOCK_KDF_HASH_LEN || !saltlen ||
	    saltlen > VISOCK_KDF_HASH_LEN) {
		err = -EINVAL;
		goto out;
	}
	hmac = visock_kdf_alloc();
	if (IS_ERR(hmac)) {
		err = PTR_ERR(hmac);
		goto out;
	}
	visock_kdf_update_info(xform, keylen, epoch, info);
	err = crypto_shash_setkey(hmac, secret, VISOCK_KDF_SECRET_LEN);
	if (!err)
		err = visock_hkdf_expand(hmac, info, sizeof(info), okm,
					 keylen + saltlen +
					 VISOCK_KDF_SECRET_LEN);
	crypto_free_shash(hmac);
	if (!err) {
		memcpy(key, okm, keylen);
		memcpy(iv_salt, okm + keylen, saltlen);
		memcpy(secret, okm + keylen + saltlen, VISOCK_KDF_SECRET_LEN);
	}
	memzero_explicit(okm, sizeof(okm));
out:
	if (err) {
		memzero_explicit(secret, VISOCK_KDF_SECRET_LEN);
		if (keylen <= VISOCK_KDF_HASH_LEN)
			memzero_explicit(key, keylen);
		if (saltlen <= VISOCK_KDF_HASH_LEN)
			memzero_explicit(iv_salt, saltlen);
	}
	return err;
}
