/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One set of key schedule inputs and the client-to-server key
 * design.rst's schedule gives for them, shared by the KUnit suites that
 * check derivation and key updates.
 */
#ifndef _VISOCK_KDF_FIX_H
#define _VISOCK_KDF_FIX_H

#include <linux/string.h>
#include <linux/visock.h>

#include "../visock_kdf.h"

static const u8 kdf_psk[32] = {
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
	0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
	0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,
	0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
};

static inline void kdf_params(struct visock_kdf_params *p)
{
	unsigned int i;

	memset(p, 0, sizeof(*p));
	p->psk = kdf_psk;
	p->psk_len = sizeof(kdf_psk);
	for (i = 0; i < VISOCK_KDF_NONCE_LEN; i++) {
		p->client_nonce[i] = 0x10 + i;
		p->server_nonce[i] = 0x20 + i;
	}
	p->client_token = 0x01020304;
	p->server_token = 0xa0b0c0d0;
	p->xform = VISOCK_XFORM_AES128_GCM;
}

/*
 * The key schedule of design.rst for kdf_params(), client to server,
 * computed independently (Python's hmac and hashlib).
 */
static const u8 kdf_c2s_key[16] = {
	0x9f, 0xf8, 0xd3, 0x0e, 0x5b, 0x70, 0x98, 0x70,
	0xba, 0x81, 0x68, 0xee, 0xb3, 0xff, 0x41, 0x7f,
};

#endif /* _VISOCK_KDF_FIX_H */
