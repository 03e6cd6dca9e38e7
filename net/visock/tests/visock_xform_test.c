// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the visock transform pairs (visock_xform.c), their key
 * derivation (visock_kdf.c) and records (visock_record.c).
 */

#include <crypto/hash.h>
#include <kunit/test.h>
#include <linux/err.h>
#include <linux/limits.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/visock.h>

#include "../visock_kdf.h"
#include "../visock_record.h"
#include "../visock_xform.h"
#include "visock_kdf_fix.h"
#include "visock_rec_fix.h"

/* ---- HKDF: RFC 5869, appendix A, test cases 1 to 3 (SHA-256) ---- */

struct hkdf_vec {
	const char *name;
	u8 ikm[80];
	unsigned int ikmlen;
	u8 salt[80];
	unsigned int saltlen;
	u8 info[80];
	unsigned int infolen;
	u8 prk[32];
	u8 okm[82];
	unsigned int okmlen;
};

static struct hkdf_vec hkdf_vecs[3] = {
	{
		.name = "RFC 5869 A.1",
		.ikmlen = 22,
		.saltlen = 13,
		.infolen = 10,
		.prk = {
			0x07, 0x77, 0x09, 0x36, 0x2c, 0x2e, 0x32, 0xdf,
			0x0d, 0xdc, 0x3f, 0x0d, 0xc4, 0x7b, 0xba, 0x63,
			0x90, 0xb6, 0xc7, 0x3b, 0xb5, 0x0f, 0x9c, 0x31,
			0x22, 0xec, 0x84, 0x4a, 0xd7, 0xc2, 0xb3, 0xe5,
		},
		.okm = {
			0x3c, 0xb2, 0x5f, 0x25, 0xfa, 0xac, 0xd5, 0x7a,
			0x90, 0x43, 0x4f, 0x64, 0xd0, 0x36, 0x2f, 0x2a,
			0x2d, 0x2d, 0x0a, 0x90, 0xcf, 0x1a, 0x5a, 0x4c,
			0x5d, 0xb0, 0x2d, 0x56, 0xec, 0xc4, 0xc5, 0xbf,
			0x34, 0x00, 0x72, 0x08, 0xd5, 0xb8, 0x87, 0x18,
			0x58, 0x65,
		},
		.okmlen = 42,
	},
	{
		.name = "RFC 5869 A.2",
		.ikmlen = 80,
		.saltlen = 80,
		.infolen = 80,
		.prk = {
			0x06, 0xa6, 0xb8, 0x8c, 0x58, 0x53, 0x36, 0x1a,
			0x06, 0x10, 0x4c, 0x9c, 0xeb, 0x35, 0xb4, 0x5c,
			0xef, 0x76, 0x00, 0x14, 0x90, 0x46, 0x71, 0x01,
			0x4a, 0x19, 0x3f, 0x40, 0xc1, 0x5f, 0xc2, 0x44,
		},
		.okm = {
			0xb1, 0x1e, 0x39, 0x8d, 0xc8, 0x03, 0x27, 0xa1,
			0xc8, 0xe7, 0xf7, 0x8c, 0x59, 0x6a, 0x49, 0x34,
			0x4f, 0x01, 0x2e, 0xda, 0x2d, 0x4e, 0xfa, 0xd8,
			0xa0, 0x50, 0xcc, 0x4c, 0x19, 0xaf, 0xa9, 0x7c,
			0x59, 0x04, 0x5a, 0x99, 0xca, 0xc7, 0x82, 0x72,
			0x71, 0xcb, 0x41, 0xc6, 0x5e, 0x59, 0x0e, 0x09,
			0xda, 0x32, 0x75, 0x60, 0x0c, 0x2f, 0x09, 0xb8,
			0x36, 0x77, 0x93, 0xa9, 0xac, 0xa3, 0xdb, 0x71,
			0xcc, 0x30, 0xc5, 0x81, 0x79, 0xec, 0x3e, 0x87,
			0xc1, 0x4c, 0x01, 0xd5, 0xc1, 0xf3, 0x43, 0x4f,
			0x1d, 0x87,
		},
		.okmlen = 82,
	},
	{
		.name = "RFC 5869 A.3",
		.ikmlen = 22,
		.saltlen = 0,
		.infolen = 0,
		.prk = {
			0x19, 0xef, 0x24, 0xa3, 0x2c, 0x71, 0x7b, 0x16,
			0x7f, 0x33, 0xa9, 0x1d, 0x6f, 0x64, 0x8b, 0xdf,
			0x96, 0x59, 0x67, 0x76, 0xaf, 0xdb, 0x63, 0x77,
			0xac, 0x43, 0x4c, 0x1c, 0x29, 0x3c, 0xcb, 0x04,
		},
		.okm = {
			0x8d, 0xa4, 0xe7, 0x75, 0xa5, 0x63, 0xc1, 0x8f,
			0x71, 0x5f, 0x80, 0x2a, 0x06, 0x3c, 0x5a, 0x31,
			0xb8, 0xa1, 0x1f, 0x5c, 0x5e, 0xe1, 0x87, 0x9e,
			0xc3, 0x45, 0x4e, 0x5f, 0x3c, 0x73, 0x8d, 0x2d,
			0x9d, 0x20, 0x13, 0x95, 0xfa, 0xa4, 0xb6, 0x1a,
			0x96, 0xc8,
		},
		.okmlen = 42,
	},
};

/* The vectors' inputs are byte ranges: fill them in. */
static void hkdf_fill(void)
{
	unsigned int i;

	for (i = 0; i < 22; i++) {
		hkdf_vecs[0].ikm[i] = 0x0b;
		hkdf_vecs[2].ikm[i] = 0x0b;
	}
	for (i = 0; i < 13; i++)
		hkdf_vecs[0].salt[i] = i;
	for (i = 0; i < 10; i++)
		hkdf_vecs[0].info[i] = 0xf0 + i;
	for (i = 0; i < 80; i++) {
		hkdf_vecs[1].ikm[i] = i;
		hkdf_vecs[1].salt[i] = 0x60 + i;
		hkdf_vecs[1].info[i] = 0xb0 + i;
	}
}

static void hkdf_rfc5869_test(struct kunit *test)
{
	struct crypto_shash *hmac;
	u8 prk[VISOCK_KDF_HASH_LEN];
	u8 okm[82];
	unsigned int i;
	int err;

	hkdf_fill();
	hmac = visock_kdf_alloc();
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(hmac), "hmac(sha256): %d",
			       PTR_ERR_OR_ZERO(hmac));
	for (i = 0; i < ARRAY_SIZE(hkdf_vecs); i++) {
		const struct hkdf_vec *v = &hkdf_vecs[i];

		memset(okm, 0, sizeof(okm));
		err = visock_hkdf_extract(hmac, v->salt, v->saltlen, v->ikm,
					  v->ikmlen, prk);
		KUNIT_EXPECT_EQ_MSG(test, err, 0, "%s", v->name);
		KUNIT_EXPECT_MEMEQ_MSG(test, prk, v->prk, sizeof(prk), "%s",
				       v->name);
		err = visock_hkdf_expand(hmac, v->info, v->infolen, okm,
					 v->okmlen);
		KUNIT_EXPECT_EQ_MSG(test, err, 0, "%s", v->name);
		KUNIT_EXPECT_MEMEQ_MSG(test, okm, v->okm, v->okmlen, "%s",
				       v->name);
	}
	/* RFC 5869: at most 255 hash lengths of output. */
	KUNIT_EXPECT_EQ(test, visock_hkdf_expand(hmac, NULL, 0, okm, 0),
			-EINVAL);
	crypto_free_shash(hmac);
}

/*
 * The rest of design.rst's schedule for kdf_params() (visock_kdf_fix.h),
 * computed the same way.
 */
static const u8 kdf_c2s_salt[12] = {
	0x2c, 0x26, 0xfd, 0x6f, 0xfe, 0x9d, 0xce, 0x04,
	0xfa, 0xe0, 0xa3, 0xc0,
};

static const u8 kdf_s2c_key[16] = {
	0x96, 0x9a, 0x4e, 0x2d, 0x83, 0x9e, 0xb9, 0x00,
	0xa7, 0x7b, 0xb6, 0x80, 0xc4, 0x7f, 0xe9, 0x76,
};

static const u8 kdf_s2c_salt[12] = {
	0xac, 0x8d, 0x48, 0x9a, 0x3a, 0xdd, 0x82, 0x82,
	0x61, 0x7b, 0x01, 0x9f,
};

static void kdf_derive_test(struct kunit *test)
{
	struct visock_kdf_params p;
	u8 info[VISOCK_KDF_INFO_LEN];
	u8 key[16], salt[12];

	kdf_params(&p);
	visock_kdf_info(&p, VISOCK_KDF_S2C, 16, info);
	KUNIT_EXPECT_MEMEQ(test, info, "visock xform", 12);
	KUNIT_EXPECT_EQ(test, info[12], 1);
	KUNIT_EXPECT_EQ(test, info[13], VISOCK_XFORM_AES128_GCM);
	KUNIT_EXPECT_EQ(test, info[14], VISOCK_KDF_S2C);
	KUNIT_EXPECT_EQ(test, info[15], 16);
	KUNIT_EXPECT_EQ(test, info[16], 0x01);
	KUNIT_EXPECT_EQ(test, info[23], 0xd0);

	KUNIT_ASSERT_EQ(test, visock_kdf_derive(&p, VISOCK_KDF_C2S, key, 16,
						salt, 12, NULL), 0);
	KUNIT_EXPECT_MEMEQ(test, key, kdf_c2s_key, 16);
	KUNIT_EXPECT_MEMEQ(test, salt, kdf_c2s_salt, 12);
	KUNIT_ASSERT_EQ(test, visock_kdf_derive(&p, VISOCK_KDF_S2C, key, 16,
						salt, 12, NULL), 0);
	KUNIT_EXPECT_MEMEQ(test, key, kdf_s2c_key, 16);
	KUNIT_EXPECT_MEMEQ(test, salt, kdf_s2c_salt, 12);

	/* Any input changes the keys. */
	p.server_token++;
	KUNIT_ASSERT_EQ(test, visock_kdf_derive(&p, VISOCK_KDF_S2C, key, 16,
						salt, 12, NULL), 0);
	KUNIT_EXPECT_MEMNEQ(test, key, kdf_s2c_key, 16);

	/* Bad parameters. */
	p.psk_len = VISOCK_KDF_PSK_MIN - 1;
	KUNIT_EXPECT_EQ(test, visock_kdf_derive(&p, VISOCK_KDF_C2S, key, 16,
						salt, 12, NULL), -EINVAL);
	p.psk_len = VISOCK_KDF_PSK_MAX + 1;
	KUNIT_EXPECT_EQ(test, visock_kdf_derive(&p, VISOCK_KDF_C2S, key, 16,
						salt, 12, NULL), -EINVAL);
	p.psk_len = sizeof(kdf_psk);
	KUNIT_EXPECT_EQ(test, visock_kdf_derive(&p, 2, key, 16, salt, 12,
						NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, visock_kdf_derive(&p, VISOCK_KDF_C2S, key, 33,
						salt, 12, NULL), -EINVAL);
}

/* ---- transform registry ---- */

static void xform_registry_test(struct kunit *test)
{
	const unsigned int nd = __VISOCK_XFORM_MAX;
	const struct visock_xform_info *xf;
	struct visock_xform_desc *d;
	u8 key[VISOCK_XFORM_MAX_KEY] = { };
	struct crypto_aead *tfm;
	unsigned int id;
	int n, i;

	d = kunit_kcalloc(test, nd, sizeof(*d), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, d);
	KUNIT_EXPECT_NULL(test, visock_xform_get(VISOCK_XFORM_NONE));
	KUNIT_EXPECT_NULL(test, visock_xform_get(__VISOCK_XFORM_MAX));
	KUNIT_EXPECT_NULL(test, visock_xform_get(0xff));
	for (id = 1; id <= VISOCK_XFORM_MAX; id++) {
		xf = visock_xform_get(id);
		KUNIT_ASSERT_NOT_NULL(test, xf);
		KUNIT_EXPECT_EQ(test, xf->id, id);
		KUNIT_EXPECT_LE(test, xf->key_size, VISOCK_XFORM_MAX_KEY);
		KUNIT_EXPECT_EQ(test, xf->tag_size, VISOCK_XFORM_TAG_LEN);
		tfm = visock_xform_alloc(xf, key, xf->key_size - 1);
		KUNIT_EXPECT_EQ(test, PTR_ERR(tfm), -EINVAL);
		tfm = visock_xform_alloc(xf, key, xf->key_size);
		KUNIT_EXPECT_FALSE_MSG(test, IS_ERR(tfm), "%s: %d", xf->name,
				       PTR_ERR_OR_ZERO(tfm));
		visock_xform_free(tfm);
	}
	KUNIT_EXPECT_EQ(test, visock_xform_probe(VISOCK_XFORM_NONE, &d[0]),
			-EINVAL);
	/* The test kernel has every algorithm built in. */
	n = visock_xform_list(d, nd);
	KUNIT_ASSERT_EQ(test, n, VISOCK_XFORM_MAX);
	for (i = 0; i < n; i++) {
		KUNIT_EXPECT_NOT_NULL(test, d[i].info);
		KUNIT_EXPECT_GT(test, strlen(d[i].driver), 0);
		kunit_info(test, "%s: %s (priority %d%s%s)", d[i].info->name,
			   d[i].driver, d[i].priority, d[i].hw ? ", hw" : "",
			   d[i].async ? ", async" : "");
	}
	KUNIT_EXPECT_EQ(test, visock_xform_list(d, 2), 2);
}

/* What a client offers and what a server picks from an offer. */
/* setsockopt(VISOCK_TRANSFORM) values: NONE clears, unknown is EINVAL. */
static void xform_opt_check_test(struct kunit *test)
{
	int v;

	KUNIT_EXPECT_EQ(test, visock_xform_opt_check(VISOCK_XFORM_NONE), 0);
	for (v = 1; v <= VISOCK_XFORM_MAX; v++)
		KUNIT_EXPECT_EQ_MSG(test, visock_xform_opt_check(v), 0,
				    "pair %d (the UML kernel has them all)", v);
	KUNIT_EXPECT_EQ(test, visock_xform_opt_check(VISOCK_XFORM_MAX + 1),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, visock_xform_opt_check(-1), -EINVAL);
	KUNIT_EXPECT_EQ(test, visock_xform_opt_check(255), -EINVAL);
	KUNIT_EXPECT_EQ(test, visock_xform_opt_check(0x101), -EINVAL);
	KUNIT_EXPECT_EQ(test, visock_xform_opt_check(INT_MIN), -EINVAL);
}

/* require rule > socket option > plain rule > namespace default. */
static void xform_pref_test(struct kunit *test)
{
	static const struct {
		u8 dflt, opt, rule;
		bool require;
		u8 want;
	} c[] = {
		{ 0, 0, 0, false, 0 },
		{ 1, 0, 0, false, 1 },
		{ 1, 0, 2, false, 2 },
		{ 1, 3, 2, false, 3 },
		{ 1, 3, 0, false, 3 },
		{ 0, 3, 0, false, 3 },
		{ 1, 3, 2, true, 2 },
		{ 0, 0, 4, true, 4 },
		{ 5, 0, 4, true, 4 },
		{ 0, 5, 4, true, 4 },
		/* require without a pair requires nothing */
		{ 1, 3, 0, true, 3 },
		{ 1, 0, 0, true, 1 },
	};
	unsigned int i;
	u8 offer[8];

	for (i = 0; i < ARRAY_SIZE(c); i++)
		KUNIT_EXPECT_EQ_MSG(test, visock_xform_pref(c[i].dflt, c[i].opt,
							    c[i].rule,
							    c[i].require),
				    c[i].want, "case %u", i);
	/* A required pair is offered alone: the offer cut to one entry. */
	KUNIT_EXPECT_EQ(test, visock_xform_offer(VISOCK_XFORM_AES256_GCM, offer,
						 1), 1);
	KUNIT_EXPECT_EQ(test, offer[0], VISOCK_XFORM_AES256_GCM);
}

static void xform_negotiate_test(struct kunit *test)
{
	static const struct {
		u8 pref, n;
		u8 offer[4];
		u8 want;
	} c[] = {
		{ VISOCK_XFORM_AES128_GCM, 2, { 1, 3 }, 1 },
		{ VISOCK_XFORM_CHACHA20_POLY1305, 2, { 1, 3 }, 3 },
		{ VISOCK_XFORM_AES256_GCM, 3, { 200, 3, 1 }, 3 },
		{ VISOCK_XFORM_AES128_GCM, 1, { 4 }, 0 },
		{ VISOCK_XFORM_AES128_GMAC, 1, { 4 }, 4 },
		{ VISOCK_XFORM_AES128_GMAC, 2, { 5, 1 }, 5 },
		{ VISOCK_XFORM_NONE, 1, { 1 }, 0 },
		{ VISOCK_XFORM_AES128_GCM, 2, { 0, 255 }, 0 },
		{ VISOCK_XFORM_AES128_GCM, 0, { 1 }, 0 },
		{ 77, 1, { 1 }, 0 },
		/* Compression only for a connection that asks for it. */
		{ VISOCK_XFORM_AES128_GCM, 2, { 6, 7 }, 0 },
		{ VISOCK_XFORM_AES128_GMAC, 2, { 7, 4 }, 4 },
		{ VISOCK_XFORM_LZ4_AES128_GCM, 3, { 7, 1, 6 }, 6 },
		{ VISOCK_XFORM_ZSTD_AES128_GCM, 2, { 6, 1 }, 6 },
		{ VISOCK_XFORM_LZ4_AES128_GCM, 2, { 4, 2 }, 2 },
		/* Compression without encryption is integrity only. */
		{ VISOCK_XFORM_AES128_GCM, 1, { 8 }, 0 },
		{ VISOCK_XFORM_LZ4_AES128_GCM, 2, { 8, 9 }, 0 },
		{ VISOCK_XFORM_AES128_GMAC, 1, { 8 }, 0 },
		{ VISOCK_XFORM_LZ4_AES128_GMAC, 1, { 8 }, 8 },
		{ VISOCK_XFORM_ZSTD_AES128_GMAC, 2, { 8, 4 }, 8 },
		{ VISOCK_XFORM_LZ4_AES128_GMAC, 2, { 4, 6 }, 4 },
		{ VISOCK_XFORM_LZ4_AES128_GMAC, 2, { 12, 8 }, 8 },
		/* Compression with the other AEADs. */
		{ VISOCK_XFORM_LZ4_AES256_GCM, 2, { 13, 10 }, 10 },
		{ VISOCK_XFORM_ZSTD_CHACHA20_POLY1305, 2, { 12, 1 }, 12 },
		{ VISOCK_XFORM_CHACHA20_POLY1305, 2, { 12, 13 }, 0 },
		{ VISOCK_XFORM_LZ4_CHACHA20_POLY1305, 2, { 9, 7 }, 7 },
	};
	u8 offer[8];
	unsigned int i, n;

	for (i = 0; i < ARRAY_SIZE(c); i++)
		KUNIT_EXPECT_EQ_MSG(test, visock_xform_choose(c[i].pref,
							      c[i].offer,
							      c[i].n),
				    c[i].want, "case %u", i);

	/* An AEAD first, then the other AEADs, never integrity only. */
	n = visock_xform_offer(VISOCK_XFORM_CHACHA20_POLY1305, offer,
			       sizeof(offer));
	KUNIT_ASSERT_EQ(test, n, 3);
	KUNIT_EXPECT_EQ(test, offer[0], VISOCK_XFORM_CHACHA20_POLY1305);
	KUNIT_EXPECT_EQ(test, offer[1], VISOCK_XFORM_AES128_GCM);
	KUNIT_EXPECT_EQ(test, offer[2], VISOCK_XFORM_AES256_GCM);
	/* Integrity only: everything but compression, itself first. */
	n = visock_xform_offer(VISOCK_XFORM_AES256_GMAC, offer, sizeof(offer));
	KUNIT_ASSERT_EQ(test, n, VISOCK_XFORM_AES256_GMAC);
	KUNIT_EXPECT_EQ(test, offer[0], VISOCK_XFORM_AES256_GMAC);
	for (i = 0; i < n; i++)
		KUNIT_EXPECT_NULL(test, visock_xform_get(offer[i])->comp);
	/*
	 * Compressing: itself, the encrypting AEADs, the other encrypting
	 * compressing ones, as many as fit; never integrity only.
	 */
	n = visock_xform_offer(VISOCK_XFORM_ZSTD_AES128_GCM, offer,
			       sizeof(offer));
	KUNIT_ASSERT_EQ(test, n, 8);
	KUNIT_EXPECT_EQ(test, offer[0], VISOCK_XFORM_ZSTD_AES128_GCM);
	KUNIT_EXPECT_EQ(test, offer[1], VISOCK_XFORM_AES128_GCM);
	KUNIT_EXPECT_EQ(test, offer[4], VISOCK_XFORM_LZ4_AES128_GCM);
	KUNIT_EXPECT_EQ(test, offer[5], VISOCK_XFORM_LZ4_AES256_GCM);
	KUNIT_EXPECT_EQ(test, offer[7], VISOCK_XFORM_LZ4_CHACHA20_POLY1305);
	for (i = 0; i < n; i++)
		KUNIT_EXPECT_FALSE(test,
				   visock_xform_get(offer[i])->integrity_only);
	/* Compressing, integrity only: itself, then every pair. */
	n = visock_xform_offer(VISOCK_XFORM_LZ4_AES128_GMAC, offer,
			       sizeof(offer));
	KUNIT_ASSERT_EQ(test, n, 8);
	KUNIT_EXPECT_EQ(test, offer[0], VISOCK_XFORM_LZ4_AES128_GMAC);
	for (i = 1; i < n; i++)
		KUNIT_EXPECT_EQ(test, offer[i], i);
	KUNIT_EXPECT_EQ(test, visock_xform_offer(VISOCK_XFORM_AES128_GCM,
						 offer, 1), 1);
	KUNIT_EXPECT_EQ(test, offer[0], VISOCK_XFORM_AES128_GCM);
	KUNIT_EXPECT_EQ(test, visock_xform_offer(VISOCK_XFORM_NONE, offer,
						 sizeof(offer)), 0);
	KUNIT_EXPECT_EQ(test, visock_xform_offer(0xff, offer, sizeof(offer)),
			0);
	KUNIT_EXPECT_STREQ(test, visock_xform_name(VISOCK_XFORM_AES128_GCM),
			   "gcm-aes-128");
	KUNIT_EXPECT_STREQ(test, visock_xform_name(0), "none");
	KUNIT_EXPECT_STREQ(test, visock_xform_name(0xff), "none");
}

/* ---- records ---- */

static void rec_header_test(struct kunit *test)
{
	static const u8 wire[VISOCK_REC_HDR_LEN] = {
		0x01, 0x03, 0x02, 0x00, 0x00, 0x01, 0x02, 0x03,
		0x81, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
	};
	struct visock_rec_hdr h = {
		.xform = 3, .flags = 2, .len = 0x10203,
		.seq = 0x8102030405060708ULL,
	}, g;
	u8 buf[VISOCK_REC_HDR_LEN];

	visock_rec_hdr_encode(&h, buf);
	KUNIT_EXPECT_MEMEQ(test, buf, wire, sizeof(wire));
	visock_rec_hdr_decode(wire, &g);
	KUNIT_EXPECT_EQ(test, g.xform, h.xform);
	KUNIT_EXPECT_EQ(test, g.flags, h.flags);
	KUNIT_EXPECT_EQ(test, g.len, h.len);
	KUNIT_EXPECT_EQ(test, g.seq, h.seq);
}

/*
 * A gcm-aes-128 record computed independently (Python's cryptography
 * package): key 0x40..0x4f, IV salt 0x70..0x7b, sequence number 5,
 * payload "visock record".
 */
static const u8 rec_kat[45] = {
	0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0d,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05,
	0xb4, 0xce, 0x05, 0xbf, 0xbe, 0x9a, 0x5d, 0x77,
	0x84, 0x7b, 0xfc, 0x5d, 0x8d, 0x5f, 0xd9, 0xbd,
	0x40, 0xc2, 0x69, 0x8e, 0xa6, 0xba, 0xcf, 0xd8,
	0xcc, 0xeb, 0x5e, 0x8c, 0xf6,
};

static void rec_kat_test(struct kunit *test)
{
	struct rec_fix *f = test->priv;
	unsigned int plen;
	u8 flags;

	rec_setup(test, VISOCK_XFORM_AES128_GCM);
	memcpy(f->in, "visock record", 13);
	f->tx.seq = 5;
	KUNIT_ASSERT_EQ(test, rec_seal(f, 0, 13, 0), 45);
	KUNIT_EXPECT_MEMEQ(test, f->ring, rec_kat, sizeof(rec_kat));
	f->rx.seq = 5;
	KUNIT_ASSERT_EQ(test, rec_open(f, 0, 45, &plen, &flags), 45);
	KUNIT_EXPECT_EQ(test, plen, 13);
	KUNIT_EXPECT_MEMEQ(test, f->out, "visock record", 13);
}

static const unsigned int rec_lens[] = { 0, 1, 15, 100, 1500, MAX_PAYLOAD };

/* Every pair, contiguous and wrapped, several records in a row. */
static void rec_roundtrip_test(struct kunit *test)
{
	struct rec_fix *f = test->priv;
	unsigned int id, i, w, at, len, tag, plen;
	bool clear;
	u8 flags;
	int ret;

	for (id = 1; id <= VISOCK_XFORM_MAX; id++) {
		bool plain = visock_xform_get(id)->integrity_only;

		rec_setup(test, id);
		tag = visock_rec_overhead(&f->tx) - VISOCK_REC_HDR_LEN;
		for (w = 0; w < 2; w++) {
			for (i = 0; i < ARRAY_SIZE(rec_lens); i++) {
				len = rec_lens[i];
				/* Wrapped: split inside header, payload, tag. */
				at = w ? RING_SIZE - 1 - (i * 37) % (len + 16) :
					 i * 8;
				ret = rec_seal(f, at, len,
					       i & 1 ? VISOCK_REC_F_COMPRESSED : 0);
				KUNIT_ASSERT_EQ_MSG(test, ret, len + 16 + tag,
						    "xform %u len %u wrap %u",
						    id, len, w);
				KUNIT_EXPECT_EQ(test, *rec_byte(f, at, 2),
						(plain ? VISOCK_REC_F_PLAIN : 0) |
						(i & 1 ? VISOCK_REC_F_COMPRESSED : 0));
				/* Encrypted on the wire, or in the clear. */
				clear = *rec_byte(f, at, 16) == f->in[0] &&
					*rec_byte(f, at, 30) == f->in[14];
				if (len >= 15)
					KUNIT_EXPECT_EQ_MSG(test, plain, clear,
							    "xform %u", id);
				memset(f->out, 0xaa, MAX_PAYLOAD);
				ret = rec_open(f, at, ret, &plen, &flags);
				KUNIT_ASSERT_EQ_MSG(test, ret, len + 16 + tag,
						    "xform %u len %u wrap %u",
						    id, len, w);
				KUNIT_EXPECT_EQ(test, plen, len);
				KUNIT_EXPECT_EQ(test, flags & VISOCK_REC_F_COMPRESSED,
						i & 1 ? VISOCK_REC_F_COMPRESSED : 0);
				KUNIT_EXPECT_MEMEQ(test, f->out, f->in, len);
				if (len < MAX_PAYLOAD)
					KUNIT_EXPECT_EQ(test, f->out[len], 0xaa);
			}
		}
		KUNIT_EXPECT_EQ(test, f->tx.seq, 2 * ARRAY_SIZE(rec_lens));
		KUNIT_EXPECT_EQ(test, f->rx.seq, 2 * ARRAY_SIZE(rec_lens));
	}
}

static void rec_tamper_test(struct kunit *test)
{
	struct rec_fix *f = test->priv;
	unsigned int id, w, at, total, plen;
	u8 flags;

	for (id = 1; id <= VISOCK_XFORM_MAX; id++) {
		rec_setup(test, id);
		for (w = 0; w < 2; w++) {
			at = w ? RING_SIZE - 200 : 64;
			total = rec_seal(f, at, 300, 0);
			KUNIT_ASSERT_EQ(test, total, 300 + 32);
			/* Authenticated header fields. */
			rec_expect_reject(test, at, total, 2,
					  VISOCK_REC_F_COMPRESSED, -EBADMSG,
					  "header flag");
			rec_expect_reject(test, at, total, 7, 4, -EBADMSG,
					  "header length");
			/* Payload, first and last byte; tag. */
			rec_expect_reject(test, at, total, 16, 0x80, -EBADMSG,
					  "payload");
			rec_expect_reject(test, at, total, 16 + 299, 1,
					  -EBADMSG, "payload end");
			rec_expect_reject(test, at, total, total - 1, 1,
					  -EBADMSG, "tag");
			rec_expect_reject(test, at, total, total - 16, 0x10,
					  -EBADMSG, "tag start");
			/* Malformed headers. */
			rec_expect_reject(test, at, total, 0, 3, -EPROTO,
					  "version");
			rec_expect_reject(test, at, total, 1, 7, -EPROTO,
					  "transform");
			rec_expect_reject(test, at, total, 2, 0x80, -EPROTO,
					  "unknown flag");
			rec_expect_reject(test, at, total, 2,
					  VISOCK_REC_F_PLAIN, -EPROTO,
					  "plain flag flipped");
			rec_expect_reject(test, at, total, 3, 1, -EPROTO,
					  "reserved");
			/* Over-long lengths. */
			rec_expect_reject(test, at, total, 5, 0x10, -EMSGSIZE,
					  "length over the maximum");
			rec_expect_reject(test, at, total, 4, 0xff, -EMSGSIZE,
					  "length 0xff...");
			/* Sequence number of another record. */
			rec_expect_reject(test, at, total, 15, 1, -EILSEQ,
					  "sequence");
			rec_expect_reject(test, at, total, 8, 0x80, -EILSEQ,
					  "sequence high bit");
			/* Truncated: not all bytes there yet. */
			memset(f->out, 0xaa, MAX_PAYLOAD);
			KUNIT_EXPECT_EQ(test, rec_open(f, at, total - 1, &plen,
						       &flags), -EAGAIN);
			KUNIT_EXPECT_EQ(test, rec_open(f, at, 15, &plen,
						       &flags), -EAGAIN);
			KUNIT_EXPECT_EQ(test, rec_open(f, at, 0, &plen,
						       &flags), -EAGAIN);
			KUNIT_EXPECT_TRUE(test, all_bytes(f->out, 0xaa, 300));
			/* Unchanged, it opens. */
			KUNIT_EXPECT_EQ(test, rec_open(f, at, total, &plen,
						       &flags), total);
			KUNIT_EXPECT_MEMEQ(test, f->out, f->in, 300);
		}
	}
}

/* A record opened out of order, or again, is refused. */
static void rec_sequence_test(struct kunit *test)
{
	struct rec_fix *f = test->priv;
	unsigned int plen, t0, t1;
	u8 flags;

	rec_setup(test, VISOCK_XFORM_CHACHA20_POLY1305);
	t0 = rec_seal(f, 0, 100, 0);
	t1 = rec_seal(f, 1024, 200, 0);
	KUNIT_ASSERT_EQ(test, t0, 132);
	KUNIT_ASSERT_EQ(test, t1, 232);
	/* Reordered: record 1 first. */
	KUNIT_EXPECT_EQ(test, rec_open(f, 1024, t1, &plen, &flags), -EILSEQ);
	KUNIT_EXPECT_EQ(test, rec_open(f, 0, t0, &plen, &flags), t0);
	/* Replayed: record 0 again. */
	KUNIT_EXPECT_EQ(test, rec_open(f, 0, t0, &plen, &flags), -EILSEQ);
	KUNIT_EXPECT_EQ(test, rec_open(f, 1024, t1, &plen, &flags), t1);
	KUNIT_EXPECT_EQ(test, f->rx.seq, 2);

	/*
	 * A replay that carries the expected sequence number in a forged
	 * header: record 0's body under record 2's header fails the tag.
	 */
	t0 = rec_seal(f, 0, 100, 0);	/* record 2 */
	f->tx.seq = 0;
	KUNIT_ASSERT_EQ(test, rec_seal(f, 2048, 100, 0), t0);
	memcpy(f->ring + 2048, f->ring, VISOCK_REC_HDR_LEN);
	KUNIT_EXPECT_EQ(test, rec_open(f, 2048, t0, &plen, &flags), -EBADMSG);
	KUNIT_EXPECT_EQ(test, rec_open(f, 0, t0, &plen, &flags), t0);
}

/* The nonce is the salt XOR the sequence number: never the same twice. */
static void rec_nonce_test(struct kunit *test)
{
	static const u64 seqs[] = {
		1024, 65535, 65536, 1ULL << 32, (1ULL << 32) + 1,
		1ULL << 63, 0xff00000000000000ULL, ~0ULL,
	};
	u8 (*iv)[VISOCK_XFORM_IV_LEN];
	unsigned int i, j, n = 1024 + ARRAY_SIZE(seqs);
	u64 seq, back;

	iv = kunit_kmalloc_array(test, n, VISOCK_XFORM_IV_LEN, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, iv);
	for (i = 0; i < n; i++) {
		seq = i < 1024 ? i : seqs[i - 1024];
		visock_rec_nonce(rec_salt, seq, iv[i]);
		/* The salt's first 4 bytes are kept, the rest give @seq. */
		KUNIT_EXPECT_MEMEQ(test, iv[i], rec_salt, 4);
		back = 0;
		for (j = 4; j < VISOCK_XFORM_IV_LEN; j++)
			back = back << 8 | (u8)(iv[i][j] ^ rec_salt[j]);
		KUNIT_EXPECT_EQ(test, back, seq);
	}
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (!memcmp(iv[i], iv[j], VISOCK_XFORM_IV_LEN))
				KUNIT_FAIL(test, "nonce %u == nonce %u", i, j);
}

/* The same plaintext sealed twice gives different bytes on the wire. */
static void rec_nonce_use_test(struct kunit *test)
{
	struct rec_fix *f = test->priv;
	u8 first[64];

	rec_setup(test, VISOCK_XFORM_AES256_GCM);
	KUNIT_ASSERT_EQ(test, rec_seal(f, 0, 32, 0), 64);
	memcpy(first, f->ring, sizeof(first));
	KUNIT_ASSERT_EQ(test, rec_seal(f, 0, 32, 0), 64);
	KUNIT_EXPECT_MEMNEQ(test, first + 16, f->ring + 16, 48);
}

static void rec_limit_test(struct kunit *test)
{
	struct rec_fix *f = test->priv;
	unsigned int plen, i, t[3];
	u8 flags;

	rec_setup(test, VISOCK_XFORM_AES128_GCM);
	KUNIT_EXPECT_EQ(test, f->tx.limit,
			visock_xform_get(VISOCK_XFORM_AES128_GCM)->max_records);
	f->tx.limit = 3;
	f->rx.limit = 2;
	for (i = 0; i < 3; i++) {
		t[i] = rec_seal(f, i * 512, 100, 0);
		KUNIT_EXPECT_EQ(test, t[i], 132);
	}
	KUNIT_EXPECT_EQ(test, rec_seal(f, 2048, 100, 0), -EKEYEXPIRED);
	KUNIT_EXPECT_EQ(test, f->tx.seq, 3);
	KUNIT_EXPECT_EQ(test, rec_open(f, 0, t[0], &plen, &flags), t[0]);
	KUNIT_EXPECT_EQ(test, rec_open(f, 512, t[1], &plen, &flags), t[1]);
	memset(f->out, 0xaa, MAX_PAYLOAD);
	KUNIT_EXPECT_EQ(test, rec_open(f, 1024, t[2], &plen, &flags),
			-EKEYEXPIRED);
	KUNIT_EXPECT_TRUE(test, all_bytes(f->out, 0xaa, 100));
}

static void rec_seal_reject_test(struct kunit *test)
{
	struct rec_fix *f = test->priv;
	unsigned int seq;

	rec_setup(test, VISOCK_XFORM_AES128_GMAC);
	seq = f->tx.seq;
	rec_place(f, 0, 200);
	sg_init_one(f->isg, f->in, MAX_PAYLOAD);
	KUNIT_EXPECT_EQ(test, visock_rec_seal(&f->tx, 0, f->isg, 1,
					      MAX_PAYLOAD + 1, f->rsg, 1, 200),
			-EMSGSIZE);
	KUNIT_EXPECT_EQ(test, visock_rec_seal(&f->tx, 0, f->isg, 1, 169,
					      f->rsg, 1, 200), -ENOSPC);
	KUNIT_EXPECT_EQ(test, visock_rec_seal(&f->tx, 0, f->isg, 1, 100,
					      f->rsg, 1, 300), -ENOSPC);
	KUNIT_EXPECT_EQ(test, visock_rec_seal(&f->tx, VISOCK_REC_F_PLAIN,
					      f->isg, 1, 100, f->rsg, 1, 200),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, f->tx.seq, seq);
	KUNIT_EXPECT_EQ(test, visock_rec_seal(&f->tx, 0, f->isg, 1, 168,
					      f->rsg, 1, 200), 200);
	/* Contexts: bad parameters. */
	visock_rec_destroy(&f->rx);
	KUNIT_EXPECT_EQ(test, visock_rec_init(&f->rx, VISOCK_XFORM_NONE,
					      f->in, 16, rec_salt, 100),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, visock_rec_init(&f->rx,
					      VISOCK_XFORM_AES128_GCM, f->in,
					      16, rec_salt, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, visock_rec_init(&f->rx,
					      VISOCK_XFORM_AES128_GCM, f->in,
					      15, rec_salt, 100), -EINVAL);
}

static struct kunit_case visock_xform_test_cases[] = {
	KUNIT_CASE(hkdf_rfc5869_test),
	KUNIT_CASE(kdf_derive_test),
	KUNIT_CASE(xform_registry_test),
	KUNIT_CASE(xform_negotiate_test),
	KUNIT_CASE(xform_opt_check_test),
	KUNIT_CASE(xform_pref_test),
	KUNIT_CASE(rec_header_test),
	KUNIT_CASE(rec_kat_test),
	KUNIT_CASE(rec_roundtrip_test),
	KUNIT_CASE(rec_tamper_test),
	KUNIT_CASE(rec_sequence_test),
	KUNIT_CASE(rec_nonce_test),
	KUNIT_CASE(rec_nonce_use_test),
	KUNIT_CASE(rec_limit_test),
	KUNIT_CASE(rec_seal_reject_test),
	{}
};

static struct kunit_suite visock_xform_test_suite = {
	.name = "visock_xform",
	.init = rec_init,
	.exit = rec_exit,
	.test_cases = visock_xform_test_cases,
};

kunit_test_suite(visock_xform_test_suite);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit tests of the visock transform pairs and records");
