/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: MACs of the authenticated handshake and the connection keys
 * derived with it (visock_auth.c).
 */
#ifndef _NET_VISOCK_AUTH_H
#define _NET_VISOCK_AUTH_H

#include <linux/types.h>

#include "visock_kdf.h"
#include "visock_wire.h"
#include "visock_xform.h"

/**
 * struct visock_auth_ctx - what a handshake MAC binds beside the message
 * @client_nonce: the client's nonce (TLV AUTH of REQ), or the initiator's
 *	of a lazy switch (TLV AUTH of SWITCH)
 * @server_nonce: the server's nonce (TLV AUTH of REP); zero in REQ and
 *	in a lazy switch, whose reply has no room for one
 * @client_token: the client's (initiator's) token; its REQ (SWITCH)
 *	carries it
 * @server_token: the server's (responder's) token; zero in REQ and SWITCH
 */
struct visock_auth_ctx {
	u8 client_nonce[VISOCK_AUTH_NONCE_LEN];
	u8 server_nonce[VISOCK_AUTH_NONCE_LEN];
	u32 client_token;
	u32 server_token;
};

/*
 * The transform the connection keys are derived for when none was
 * negotiated: the strongest AEAD.  Keys are at most this long.
 */
#define VISOCK_AUTH_CONN_XFORM	VISOCK_XFORM_AES256_GCM
#define VISOCK_AUTH_CONN_KEYLEN	VISOCK_XFORM_MAX_KEY

/**
 * struct visock_auth_conn - an authenticated connection's key material
 * @key_id: the pre-shared key the handshake is authenticated with
 * @mac_key: the handshake MAC key of that key (visock_auth_mac_key())
 * @ctx: nonces and tokens of the handshake
 * @xform: the negotiated transform (enum visock_xform), set before the
 *	keys are derived; VISOCK_XFORM_NONE derives them for
 *	VISOCK_AUTH_CONN_XFORM
 * @offer_n: client: entries of @offer
 * @offer: client: the transforms its REQ offered (TLV XFORM)
 * @rekey: both ends announced key updates (VISOCK_FEAT_REKEY in REQ and
 *	REP) and a transform was negotiated: the record layer changes keys
 *	at the pair's record limit instead of ending the connection
 * @key: one key per enum visock_kdf_dir, for @xform (its key size; the
 *	rest is zero)
 * @iv_salt: the IV salt of each direction
 * @secret: the update secret of each direction (visock_kdf_update())
 *
 * The record layer of the data path is keyed from it, and then @key,
 * @iv_salt and @secret are wiped (visock_auth_conn_wipe()).
 */
struct visock_auth_conn {
	u32 key_id;
	u8 mac_key[VISOCK_KDF_HASH_LEN];
	struct visock_auth_ctx ctx;
	u8 xform;
	u8 offer_n;
	u8 offer[VISOCK_XFORM_OFFER_MAX];
	bool rekey;
	u8 key[2][VISOCK_AUTH_CONN_KEYLEN];
	u8 iv_salt[2][VISOCK_XFORM_IV_LEN];
	u8 secret[2][VISOCK_KDF_SECRET_LEN];
};

int visock_auth_mac_key(const u8 *psk, unsigned int psk_len, u32 key_id,
			u8 key[VISOCK_KDF_HASH_LEN]);
int visock_auth_mac(const u8 key[VISOCK_KDF_HASH_LEN],
		    const struct visock_auth_ctx *ctx, const u8 *msg,
		    unsigned int len, unsigned int mac_off,
		    u8 mac[VISOCK_AUTH_MAC_LEN]);
int visock_auth_verify(const u8 key[VISOCK_KDF_HASH_LEN],
		       const struct visock_auth_ctx *ctx, const u8 *msg,
		       unsigned int len, unsigned int mac_off);
int visock_auth_tag(const u8 key[VISOCK_KDF_HASH_LEN],
		    const struct visock_auth_ctx *ctx, const u8 *msg,
		    unsigned int len, unsigned int tag_off,
		    unsigned int tag_len, u8 *tag);
int visock_auth_tag_verify(const u8 key[VISOCK_KDF_HASH_LEN],
			   const struct visock_auth_ctx *ctx, const u8 *msg,
			   unsigned int len, unsigned int tag_off,
			   unsigned int tag_len);
int visock_auth_conn_derive(const u8 *psk, unsigned int psk_len,
			    struct visock_auth_conn *c);
void visock_auth_conn_wipe(struct visock_auth_conn *c);

#endif /* _NET_VISOCK_AUTH_H */
