// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the authenticated handshake's MACs (visock_auth.c) and
 * of TLV AUTH in the handshake codec (visock_hs_codec.c).
 */

#include <kunit/test.h>
#include <linux/module.h>
#include <linux/string.h>
#include <linux/visock.h>

#include "../visock_auth.h"
#include "../visock_wire.h"

struct auth_fix {
	u8 psk[32];
	u8 key[VISOCK_KDF_HASH_LEN];
	struct visock_auth_ctx ctx;
	struct visock_hs_msg m;
	u8 buf[VISOCK_HS_MAX_LEN];
	int len;
};

/* A REP with TLV AUTH, encoded and MACed with key id 7. */
static void auth_fix_build(struct kunit *test, struct auth_fix *f)
{
	unsigned int i;

	for (i = 0; i < sizeof(f->psk); i++)
		f->psk[i] = 0x40 + i;
	KUNIT_ASSERT_EQ(test, visock_auth_mac_key(f->psk, sizeof(f->psk), 7,
						  f->key), 0);
	for (i = 0; i < VISOCK_AUTH_NONCE_LEN; i++) {
		f->ctx.client_nonce[i] = i;
		f->ctx.server_nonce[i] = 0xa0 + i;
	}
	f->ctx.client_token = 0x1001;
	f->ctx.server_token = 0x2002;

	memset(&f->m, 0, sizeof(f->m));
	f->m.type = VISOCK_HS_REP;
	f->m.version = VISOCK_HS_VERSION;
	f->m.present = VISOCK_HSF(VISOCK_TLV_FEATURES) |
		       VISOCK_HSF(VISOCK_TLV_GID) | VISOCK_HSF(VISOCK_TLV_QPN) |
		       VISOCK_HSF(VISOCK_TLV_PSN) | VISOCK_HSF(VISOCK_TLV_MTU) |
		       VISOCK_HSF(VISOCK_TLV_RBUF) |
		       VISOCK_HSF(VISOCK_TLV_TOKEN) |
		       VISOCK_HSF(VISOCK_TLV_LINK) | VISOCK_HSF(VISOCK_TLV_AUTH);
	f->m.qpn = 0x11;
	f->m.psn = 0x22;
	f->m.mtu = 3;
	f->m.rbuf_addr = 0x1000;
	f->m.rbuf_rkey = 0xabcd;
	f->m.rbuf_size = VISOCK_RBUF_MIN;
	f->m.token = f->ctx.server_token;
	f->m.lgr_id = 1;
	f->m.link_id = 2;
	f->m.auth_version = VISOCK_AUTH_VERSION;
	f->m.auth_key_id = 7;
	memcpy(f->m.auth_nonce, f->ctx.server_nonce, VISOCK_AUTH_NONCE_LEN);
	f->len = visock_hs_encode(&f->m, f->buf, sizeof(f->buf));
	KUNIT_ASSERT_GT(test, f->len, VISOCK_AUTH_MAC_LEN);
	KUNIT_ASSERT_EQ(test,
			visock_auth_mac(f->key, &f->ctx, f->buf, f->len,
					f->len - VISOCK_AUTH_MAC_LEN,
					f->buf + f->len - VISOCK_AUTH_MAC_LEN),
			0);
}

static int auth_verify(struct auth_fix *f, const u8 *key,
		       const struct visock_auth_ctx *ctx)
{
	struct visock_hs_msg d;
	int err;

	err = visock_hs_decode(f->buf, f->len, &d);
	if (err)
		return err;
	if (!(d.present & VISOCK_HSF(VISOCK_TLV_AUTH)))
		return -ENOMSG;
	return visock_auth_verify(key, ctx, f->buf, f->len, d.auth_mac_off);
}

/* The encoder puts AUTH last; the decoder finds it and its MAC. */
static void auth_tlv_codec_test(struct kunit *test)
{
	struct auth_fix *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	struct visock_hs_msg d;

	KUNIT_ASSERT_NOT_NULL(test, f);
	auth_fix_build(test, f);
	KUNIT_ASSERT_EQ(test, visock_hs_decode(f->buf, f->len, &d), 0);
	KUNIT_EXPECT_EQ(test, d.auth_version, VISOCK_AUTH_VERSION);
	KUNIT_EXPECT_EQ(test, d.auth_key_id, 7U);
	KUNIT_EXPECT_MEMEQ(test, d.auth_nonce, f->ctx.server_nonce,
			   VISOCK_AUTH_NONCE_LEN);
	KUNIT_EXPECT_EQ(test, (int)d.auth_mac_off,
			f->len - VISOCK_AUTH_MAC_LEN);
	KUNIT_EXPECT_MEMEQ(test, d.auth_mac,
			   f->buf + f->len - VISOCK_AUTH_MAC_LEN,
			   VISOCK_AUTH_MAC_LEN);

	/* Key id 0 and version 0 are not valid. */
	f->m.auth_key_id = 0;
	KUNIT_EXPECT_EQ(test, visock_hs_encode(&f->m, f->buf, sizeof(f->buf)),
			-EINVAL);
	f->m.auth_key_id = 7;
	f->m.auth_version = 0;
	KUNIT_EXPECT_EQ(test, visock_hs_encode(&f->m, f->buf, sizeof(f->buf)),
			-EINVAL);
}

/* A later version may append fields to AUTH; a short one is refused. */
static void auth_tlv_length_test(struct kunit *test)
{
	struct auth_fix *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	struct visock_hs_msg d;
	int off;

	KUNIT_ASSERT_NOT_NULL(test, f);
	auth_fix_build(test, f);
	off = f->len - VISOCK_AUTH_TLV_LEN - 4;
	/* 4 more value bytes after the MAC */
	f->buf[off + 3] += 4;
	memset(f->buf + f->len, 0x5a, 4);
	f->len += 4;
	f->buf[6] = f->len >> 8;
	f->buf[7] = f->len & 0xff;
	KUNIT_ASSERT_EQ(test, visock_hs_decode(f->buf, f->len, &d), 0);
	KUNIT_EXPECT_EQ(test, (int)d.auth_mac_off, off + 4 + 24);
	KUNIT_EXPECT_EQ(test, d.auth_key_id, 7U);

	/* one value byte short */
	auth_fix_build(test, f);
	f->buf[off + 3] -= 1;
	f->len -= 1;
	f->buf[6] = f->len >> 8;
	f->buf[7] = f->len & 0xff;
	KUNIT_EXPECT_EQ(test, visock_hs_decode(f->buf, f->len, &d), -EBADMSG);
}

/* The MAC verifies as made, and not after any one byte changed. */
static void auth_mac_byte_test(struct kunit *test)
{
	struct auth_fix *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	int i, bad = 0, undecodable = 0;

	KUNIT_ASSERT_NOT_NULL(test, f);
	auth_fix_build(test, f);
	KUNIT_ASSERT_EQ(test, auth_verify(f, f->key, &f->ctx), 0);
	for (i = 0; i < f->len; i++) {
		int err;

		f->buf[i] ^= 0x01;
		err = auth_verify(f, f->key, &f->ctx);
		f->buf[i] ^= 0x01;
		/* A change the decoder refuses never reaches the MAC. */
		if (err == -EBADMSG)
			bad++;
		else if (err)
			undecodable++;
		else
			KUNIT_FAIL(test, "byte %d changed, MAC still verifies",
				   i);
	}
	KUNIT_EXPECT_EQ(test, bad + undecodable, f->len);
	KUNIT_EXPECT_GT(test, bad, f->len / 2);
	KUNIT_EXPECT_EQ(test, auth_verify(f, f->key, &f->ctx), 0);
}

/* Another nonce, token, key id or PSK: the MAC does not verify. */
static void auth_mac_context_test(struct kunit *test)
{
	struct auth_fix *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	u8 other[VISOCK_KDF_HASH_LEN];
	struct visock_auth_ctx ctx;

	KUNIT_ASSERT_NOT_NULL(test, f);
	auth_fix_build(test, f);

	ctx = f->ctx;
	ctx.client_nonce[5] ^= 0x80;
	KUNIT_EXPECT_EQ(test, auth_verify(f, f->key, &ctx), -EBADMSG);
	ctx = f->ctx;
	ctx.server_nonce[15] ^= 0x01;
	KUNIT_EXPECT_EQ(test, auth_verify(f, f->key, &ctx), -EBADMSG);
	ctx = f->ctx;
	ctx.client_token++;
	KUNIT_EXPECT_EQ(test, auth_verify(f, f->key, &ctx), -EBADMSG);
	ctx = f->ctx;
	ctx.server_token ^= 0x100;
	KUNIT_EXPECT_EQ(test, auth_verify(f, f->key, &ctx), -EBADMSG);

	/* The same PSK under another key id gives another MAC key. */
	KUNIT_ASSERT_EQ(test, visock_auth_mac_key(f->psk, sizeof(f->psk), 8,
						  other), 0);
	KUNIT_EXPECT_MEMNEQ(test, other, f->key, sizeof(other));
	KUNIT_EXPECT_EQ(test, auth_verify(f, other, &f->ctx), -EBADMSG);

	/* Another PSK under the same key id. */
	f->psk[0] ^= 1;
	KUNIT_ASSERT_EQ(test, visock_auth_mac_key(f->psk, sizeof(f->psk), 7,
						  other), 0);
	KUNIT_EXPECT_EQ(test, auth_verify(f, other, &f->ctx), -EBADMSG);

	/* A PSK out of range, a MAC field outside the message. */
	KUNIT_EXPECT_EQ(test, visock_auth_mac_key(f->psk, 15, 7, other),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, visock_auth_verify(f->key, &f->ctx, f->buf,
						 f->len, f->len - 31),
			-EINVAL);
}

/* The connection keys: one per direction, bound to nonces and tokens. */
static void auth_conn_keys_test(struct kunit *test)
{
	struct visock_auth_conn *a, *b;
	u8 psk[16];

	a = kunit_kzalloc(test, sizeof(*a), GFP_KERNEL);
	b = kunit_kzalloc(test, sizeof(*b), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_ASSERT_NOT_NULL(test, b);
	memset(psk, 0x33, sizeof(psk));
	memset(a->ctx.client_nonce, 1, VISOCK_AUTH_NONCE_LEN);
	memset(a->ctx.server_nonce, 2, VISOCK_AUTH_NONCE_LEN);
	a->ctx.client_token = 3;
	a->ctx.server_token = 4;
	b->ctx = a->ctx;
	KUNIT_ASSERT_EQ(test, visock_auth_conn_derive(psk, sizeof(psk), a), 0);
	KUNIT_ASSERT_EQ(test, visock_auth_conn_derive(psk, sizeof(psk), b), 0);
	KUNIT_EXPECT_MEMEQ(test, a->key, b->key, sizeof(a->key));
	KUNIT_EXPECT_MEMEQ(test, a->iv_salt, b->iv_salt, sizeof(a->iv_salt));
	KUNIT_EXPECT_MEMNEQ(test, a->key[VISOCK_KDF_C2S],
			    a->key[VISOCK_KDF_S2C], VISOCK_AUTH_CONN_KEYLEN);
	/* Update secrets: shared by both ends, one per direction. */
	KUNIT_EXPECT_MEMEQ(test, a->secret, b->secret, sizeof(a->secret));
	KUNIT_EXPECT_MEMNEQ(test, a->secret[VISOCK_KDF_C2S],
			    a->secret[VISOCK_KDF_S2C], VISOCK_KDF_SECRET_LEN);
	KUNIT_EXPECT_MEMNEQ(test, a->secret[VISOCK_KDF_C2S],
			    a->key[VISOCK_KDF_C2S], VISOCK_AUTH_CONN_KEYLEN);

	b->ctx.server_nonce[0] ^= 1;
	KUNIT_ASSERT_EQ(test, visock_auth_conn_derive(psk, sizeof(psk), b), 0);
	KUNIT_EXPECT_MEMNEQ(test, a->key, b->key, sizeof(a->key));
	b->ctx = a->ctx;
	b->ctx.client_token = 5;
	KUNIT_ASSERT_EQ(test, visock_auth_conn_derive(psk, sizeof(psk), b), 0);
	KUNIT_EXPECT_MEMNEQ(test, a->key, b->key, sizeof(a->key));
	KUNIT_EXPECT_MEMNEQ(test, a->secret, b->secret, sizeof(a->secret));

	/* Once the record layer holds them, nothing is left. */
	visock_auth_conn_wipe(b);
	memset(a, 0, sizeof(*a));
	KUNIT_EXPECT_MEMEQ(test, b->key, a->key, sizeof(a->key));
	KUNIT_EXPECT_MEMEQ(test, b->iv_salt, a->iv_salt, sizeof(a->iv_salt));
	KUNIT_EXPECT_MEMEQ(test, b->secret, a->secret, sizeof(a->secret));
}

static struct kunit_case visock_auth_test_cases[] = {
	KUNIT_CASE(auth_tlv_codec_test),
	KUNIT_CASE(auth_tlv_length_test),
	KUNIT_CASE(auth_mac_byte_test),
	KUNIT_CASE(auth_mac_context_test),
	KUNIT_CASE(auth_conn_keys_test),
	{}
};

static struct kunit_suite visock_auth_test_suite = {
	.name = "visock_auth",
	.test_cases = visock_auth_test_cases,
};

kunit_test_suite(visock_auth_test_suite);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit tests of the visock handshake authentication");
