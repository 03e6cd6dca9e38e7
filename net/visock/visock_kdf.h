/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: key derivation of the transform pairs (visock_kdf.c).
 */
#ifndef _NET_VISOCK_KDF_H
#define _NET_VISOCK_KDF_H

#include <linux/types.h>

struct crypto_shash;

#define VISOCK_KDF_HASH_LEN	32	/* SHA-256 */
#define VISOCK_KDF_NONCE_LEN	16	/* each side's random handshake nonce */
#define VISOCK_KDF_PSK_MIN	16
#define VISOCK_KDF_PSK_MAX	64
#define VISOCK_KDF_INFO_LEN	24
/* A direction's update secret, the input of its next key. */
#define VISOCK_KDF_SECRET_LEN	VISOCK_KDF_HASH_LEN

/**
 * enum visock_kdf_dir - direction a derived key protects
 * @VISOCK_KDF_C2S: records the client (connect() side) sends
 * @VISOCK_KDF_S2C: records the server (accept() side) sends
 */
enum visock_kdf_dir {
	VISOCK_KDF_C2S = 0,
	VISOCK_KDF_S2C = 1,
};

/**
 * struct visock_kdf_params - what a connection's keys are derived from
 * @psk: the pre-shared key of the fleet
 * @psk_len: its length, VISOCK_KDF_PSK_MIN..VISOCK_KDF_PSK_MAX bytes
 * @client_nonce: the client's random handshake nonce
 * @server_nonce: the server's random handshake nonce
 * @client_token: the connection's token on the client
 * @server_token: the connection's token on the server
 * @xform: the transform pair the keys are for (enum visock_xform)
 */
struct visock_kdf_params {
	const u8 *psk;
	unsigned int psk_len;
	u8 client_nonce[VISOCK_KDF_NONCE_LEN];
	u8 server_nonce[VISOCK_KDF_NONCE_LEN];
	u32 client_token;
	u32 server_token;
	u8 xform;
};

struct crypto_shash *visock_kdf_alloc(void);
int visock_hkdf_extract(struct crypto_shash *hmac, const u8 *salt,
			unsigned int saltlen, const u8 *ikm,
			unsigned int ikmlen, u8 *prk);
int visock_hkdf_expand(struct crypto_shash *hmac, const u8 *info,
		       unsigned int infolen, u8 *okm, unsigned int okmlen);
void visock_kdf_info(const struct visock_kdf_params *p,
		     enum visock_kdf_dir dir, unsigned int keylen,
		     u8 info[VISOCK_KDF_INFO_LEN]);
int visock_kdf_derive(const struct visock_kdf_params *p,
		      enum visock_kdf_dir dir, u8 *key, unsigned int keylen,
		      u8 *iv_salt, unsigned int saltlen, u8 *secret);
void visock_kdf_update_info(u8 xform, unsigned int keylen, u64 epoch,
			    u8 info[VISOCK_KDF_INFO_LEN]);
int visock_kdf_update(u8 xform, u64 epoch,
		      u8 secret[VISOCK_KDF_SECRET_LEN], u8 *key,
		      unsigned int keylen, u8 *iv_salt, unsigned int saltlen);

#endif /* _NET_VISOCK_KDF_H */
