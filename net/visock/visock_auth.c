// SPDX-License-Identifier: GPL-2.0
/*
 * visock: MACs of the authenticated handshake.
 *
 * Hosts that share a fleet pre-shared key (visock_psk.c) prove it to each
 * other in the handshake: REQ, REP and CONFIRM carry TLV AUTH
 * (visock_wire.h) with a random nonce and an HMAC-SHA-256 of the whole
 * message.  Only the crypto API is used here (no sockets, no ib_core),
 * so the KUnit runner builds this file too.
 *
 *   MAC key = HKDF-Expand(HKDF-Extract(salt = "visock hs auth", PSK),
 *                         "visock hs mac" || version || key id, 32)
 *   MAC     = HMAC-SHA-256(MAC key, "visock hs" || client nonce ||
 *                          server nonce || client token ||
 *                          server token || message)
 *
 * with the 32 MAC bytes of the message taken as zeros, tokens big
 * endian, and the server's nonce and token zero in a REQ (they do not
 * exist yet).  The message covers everything the peer will act on:
 * type, QPN, PSN, GID, ring address and remote key, token, and the
 * key id and nonce of TLV AUTH itself.  Binding both nonces makes a
 * REP or CONFIRM valid for one handshake only.
 *
 * The switch of a lazy connection (visock_lazy.c) uses the same key and
 * MAC: its SWITCH carries TLV AUTH like a REQ (the initiator in the
 * client's place, the responder's nonce and token zero).  Its reply is a
 * fixed 32-byte message on the QP with room for no nonce and only
 * VISOCK_SWREP_TAG_LEN bytes of MAC: the first bytes of the MAC
 * (visock_auth_tag()) over the reply, with the initiator's nonce and
 * both tokens.
 *
 * The connection's keys for the record layer are derived from the same
 * PSK, both nonces and both tokens (visock_kdf_derive()).
 */

#include <crypto/hash.h>
#include <crypto/algapi.h>
#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/visock.h>

#include "visock_compat.h"
#include "visock_auth.h"

static const char visock_auth_salt[14] = "visock hs auth";
static const char visock_auth_info[13] = "visock hs mac";
static const char visock_auth_label[9] = "visock hs";

static void visock_auth_put_be32(u32 v, u8 *p)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

/**
 * visock_auth_mac_key() - the handshake MAC key of a pre-shared key
 * @psk: the pre-shared key
 * @psk_len: its length, VISOCK_KDF_PSK_MIN..VISOCK_KDF_PSK_MAX
 * @key_id: its id, which the MAC key depends on as well
 * @key: VISOCK_KDF_HASH_LEN bytes of output
 *
 * Context: process context, may sleep.
 * Return: 0, -EINVAL for a PSK out of range, or an error of the crypto
 * API (then @key is wiped).
 */
int visock_auth_mac_key(const u8 *psk, unsigned int psk_len, u32 key_id,
			u8 key[VISOCK_KDF_HASH_LEN])
{
	u8 info[sizeof(visock_auth_info) + 5];
	u8 prk[VISOCK_KDF_HASH_LEN];
	struct crypto_shash *hmac;
	int err;

	if (!psk || psk_len < VISOCK_KDF_PSK_MIN ||
	    psk_len > VISOCK_KDF_PSK_MAX)
		return -EINVAL;
	hmac = visock_kdf_alloc();
	if (IS_ERR(hmac))
		return PTR_ERR(hmac);
	memcpy(info, visock_auth_info, sizeof(visock_auth_info));
	info[sizeof(visock_auth_info)] = VISOCK_AUTH_VERSION;
	visock_auth_put_be32(key_id, info + sizeof(visock_auth_info) + 1);
	err = visock_hkdf_extract(hmac, visock_auth_salt,
				  sizeof(visock_auth_salt), psk, psk_len, prk);
	if (!err)
		err = visock_hkdf_expand(hmac, info, sizeof(info), key,
					 VISOCK_KDF_HASH_LEN);
	crypto_free_shash(hmac);
	memzero_explicit(prk, sizeof(prk));
	if (err)
		memzero_explicit(key, VISOCK_KDF_HASH_LEN);
	return err;
}

/*
 * HMAC-SHA-256 of @msg in the context @ctx, with the @field_len bytes at
 * @field_off (where the MAC or tag travels) taken as zeros.
 */
static int visock_auth_hmac(const u8 key[VISOCK_KDF_HASH_LEN],
			    const struct visock_auth_ctx *ctx, const u8 *msg,
			    unsigned int len, unsigned int field_off,
			    unsigned int field_len, u8 out[VISOCK_AUTH_MAC_LEN])
{
	static const u8 zeros[VISOCK_AUTH_MAC_LEN];
	struct crypto_shash *hmac;
	u8 tokens[8];
	int err;

	if (field_len > sizeof(zeros) || field_off > len ||
	    len - field_off < field_len)
		return -EINVAL;
	hmac = visock_kdf_alloc();
	if (IS_ERR(hmac))
		return PTR_ERR(hmac);
	visock_auth_put_be32(ctx->client_token, tokens);
	visock_auth_put_be32(ctx->server_token, tokens + 4);
	err = crypto_shash_setkey(hmac, key, VISOCK_KDF_HASH_LEN);
	if (!err) {
		SHASH_DESC_ON_STACK(desc, hmac);

		desc->tfm = hmac;
		err = crypto_shash_init(desc);
		if (!err)
			err = crypto_shash_update(desc, visock_auth_label,
						  sizeof(visock_auth_label));
		if (!err)
			err = crypto_shash_update(desc, ctx->client_nonce,
						  VISOCK_AUTH_NONCE_LEN);
		if (!err)
			err = crypto_shash_update(desc, ctx->server_nonce,
						  VISOCK_AUTH_NONCE_LEN);
		if (!err)
			err = crypto_shash_update(desc, tokens, sizeof(tokens));
		if (!err)
			err = crypto_shash_update(desc, msg, field_off);
		if (!err)
			err = crypto_shash_update(desc, zeros, field_len);
		if (!err)
			err = crypto_shash_update(desc,
						  msg + field_off + field_len,
						  len - field_off - field_len);
		if (!err)
			err = crypto_shash_final(desc, out);
		shash_desc_zero(desc);
	}
	crypto_free_shash(hmac);
	return err;
}

/**
 * visock_auth_mac() - MAC of one handshake message
 * @key: the MAC key (visock_auth_mac_key())
 * @ctx: the handshake's nonces and tokens
 * @msg: the encoded message
 * @len: its length
 * @mac_off: offset of the MAC field in @msg, whose bytes count as zeros
 * @mac: VISOCK_AUTH_MAC_LEN bytes of output
 *
 * Context: process context, may sleep.
 * Return: 0, -EINVAL if the MAC field is not inside @msg, or an error of
 * the crypto API.
 */
int visock_auth_mac(const u8 key[VISOCK_KDF_HASH_LEN],
		    const struct visock_auth_ctx *ctx, const u8 *msg,
		    unsigned int len, unsigned int mac_off,
		    u8 mac[VISOCK_AUTH_MAC_LEN])
{
	return visock_auth_hmac(key, ctx, msg, len, mac_off,
				VISOCK_AUTH_MAC_LEN, mac);
}

/**
 * visock_auth_verify() - check the MAC a handshake message carries
 * @key: the MAC key of the key id the message names
 * @ctx: the handshake's nonces and tokens
 * @msg: the message as received
 * @len: its length
 * @mac_off: offset of its MAC (visock_hs_msg.auth_mac_off)
 *
 * Context: process context, may sleep.
 * Return: 0 if the MAC is right, -EBADMSG if not, -EINVAL or an error of
 * the crypto API if it could not be computed.
 */
int visock_auth_verify(const u8 key[VISOCK_KDF_HASH_LEN],
		       const struct visock_auth_ctx *ctx, const u8 *msg,
		       unsigned int len, unsigned int mac_off)
{
	return visock_auth_tag_verify(key, ctx, msg, len, mac_off,
				      VISOCK_AUTH_MAC_LEN);
}

/**
 * visock_auth_tag() - a MAC truncated to the room a message has for it
 * @key: the MAC key (visock_auth_mac_key())
 * @ctx: the exchange's nonces and tokens
 * @msg: the encoded message
 * @len: its length
 * @tag_off: offset of the tag field in @msg, whose bytes count as zeros
 * @tag_len: its length, 1..VISOCK_AUTH_MAC_LEN
 * @tag: @tag_len bytes of output: the first bytes of the MAC
 *
 * For messages of a fixed size that cannot carry a whole MAC (the switch
 * reply of a lazy connection, VISOCK_SWREP_TAG_LEN bytes).
 *
 * Context: process context, may sleep.
 * Return: 0, -EINVAL if the tag field is not inside @msg, or an error of
 * the crypto API.
 */
int visock_auth_tag(const u8 key[VISOCK_KDF_HASH_LEN],
		    const struct visock_auth_ctx *ctx, const u8 *msg,
		    unsigned int len, unsigned int tag_off,
		    unsigned int tag_len, u8 *tag)
{
	u8 mac[VISOCK_AUTH_MAC_LEN];
	int err;

	if (!tag_len)
		return -EINVAL;
	err = visock_auth_hmac(key, ctx, msg, len, tag_off, tag_len, mac);
	if (!err)
		memcpy(tag, mac, tag_len);
	memzero_explicit(mac, sizeof(mac));
	return err;
}

/**
 * visock_auth_tag_verify() - check a MAC or truncated MAC a message carries
 * @key: the MAC key
 * @ctx: the exchange's nonces and tokens
 * @msg: the message as received
 * @len: its length
 * @tag_off: offset of its tag
 * @tag_len: length of the tag, 1..VISOCK_AUTH_MAC_LEN
 *
 * Context: process context, may sleep.
 * Return: 0 if the tag is right, -EBADMSG if not, -EINVAL or an error of
 * the crypto API if it could not be computed.
 */
int visock_auth_tag_verify(const u8 key[VISOCK_KDF_HASH_LEN],
			   const struct visock_auth_ctx *ctx, const u8 *msg,
			   unsigned int len, unsigned int tag_off,
			   unsigned int tag_len)
{
	u8 mac[VISOCK_AUTH_MAC_LEN];
	int err;

	if (!tag_len)
		return -EINVAL;
	err = visock_auth_hmac(key, ctx, msg, len, tag_off, tag_len, mac);
	if (!err && crypto_memneq(mac, msg + tag_off, tag_len))
		err = -EBADMSG;
	memzero_explicit(mac, sizeof(mac));
	return err;
}

/**
 * visock_auth_conn_wipe() - forget an authenticated connection's keys
 * @c: the connection's key material
 *
 * Wipes the keys, IV salts and update secrets of both directions, once
 * the record layer holds its own copies or when the derivation failed.
 *
 * Context: any context.
 */
void visock_auth_conn_wipe(struct visock_auth_conn *c)
{
	memzero_explicit(c->key, sizeof(c->key));
	memzero_explicit(c->iv_salt, sizeof(c->iv_salt));
	memzero_explicit(c->secret, sizeof(c->secret));
}

/**
 * visock_auth_conn_derive() - derive an authenticated connection's keys
 * @psk: the pre-shared key the handshake was authenticated with
 * @psk_len: its length
 * @c: @c->ctx and @c->xform filled in; receives one key, IV salt and
 *	update secret per direction
 *
 * Context: process context, may sleep.
 * Return: 0, -EINVAL for an unknown @c->xform, or an error of
 * visock_kdf_derive() (then the keys are wiped).
 */
int visock_auth_conn_derive(const u8 *psk, unsigned int psk_len,
			    struct visock_auth_conn *c)
{
	const struct visock_xform_info *xf;
	struct visock_kdf_params p = {
		.psk = psk,
		.psk_len = psk_len,
		.client_token = c->ctx.client_token,
		.server_token = c->ctx.server_token,
		.xform = c->xform ? c->xform : VISOCK_AUTH_CONN_XFORM,
	};
	int dir, err = 0;

	xf = visock_xform_get(p.xform);
	if (!xf)
		return -EINVAL;
	memzero_explicit(c->key, sizeof(c->key));

	BUILD_BUG_ON(VISOCK_AUTH_NONCE_LEN != VISOCK_KDF_NONCE_LEN);
	memcpy(p.client_nonce, c->ctx.client_nonce, VISOCK_KDF_NONCE_LEN);
	memcpy(p.server_nonce, c->ctx.server_nonce, VISOCK_KDF_NONCE_LEN);
	for (dir = VISOCK_KDF_C2S; dir <= VISOCK_KDF_S2C && !err; dir++)
		err = visock_kdf_derive(&p, dir, c->key[dir], xf->key_size,
					c->iv_salt[dir], VISOCK_XFORM_IV_LEN,
					c->secret[dir]);
	if (err)
		visock_auth_conn_wipe(c);
	return err;
}
