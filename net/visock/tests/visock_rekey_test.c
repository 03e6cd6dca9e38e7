// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of key updates: the key schedule of an update
 * (visock_kdf_update()) and records across a key change
 * (visock_record.c).
 */

#include <kunit/test.h>
#include <linux/module.h>
#include <linux/string.h>
#include <linux/visock.h>

#include "../visock_kdf.h"
#include "../visock_record.h"
#include "../visock_xform.h"
#include "visock_kdf_fix.h"
#include "visock_rec_fix.h"

/* ---- the key schedule ---- */

/*
 * Computed independently (Python's hmac and hashlib) from design.rst for
 * kdf_params() (visock_kdf_fix.h), client to server: the update secret
 * that follows the IV salt of kdf_c2s_key in the same output, and the
 * first two updates.
 */
static const u8 rk_secret0[VISOCK_KDF_SECRET_LEN] = {
	0x1c, 0x06, 0x43, 0xd5, 0x45, 0x45, 0xc6, 0xdf,
	0x78, 0x3d, 0xe1, 0xf1, 0x25, 0x5d, 0x64, 0xce,
	0x4f, 0x69, 0x51, 0x66, 0xd1, 0xa6, 0x31, 0x13,
	0xa0, 0x34, 0x64, 0x52, 0xf0, 0x76, 0x5d, 0x9a,
};

static const u8 rk_key1[16] = {
	0x86, 0x6b, 0x60, 0x0b, 0x8a, 0x2d, 0x5b, 0x63,
	0x1b, 0x16, 0x88, 0x82, 0xeb, 0x2e, 0x28, 0xe2,
};

static const u8 rk_salt1[12] = {
	0x4d, 0xf4, 0xb4, 0x2d, 0xa3, 0x39, 0xd2, 0x74,
	0xe4, 0xc0, 0x17, 0x5d,
};

static const u8 rk_key2[16] = {
	0x5e, 0xfc, 0x71, 0xac, 0x1c, 0xe8, 0x13, 0xa9,
	0xbf, 0x46, 0x57, 0x93, 0x1d, 0x6a, 0x11, 0xfd,
};

static const u8 rk_salt2[12] = {
	0x08, 0xaa, 0xdf, 0x99, 0x43, 0x72, 0x92, 0xd9,
	0x40, 0xc7, 0xc9, 0x62,
};

static void rekey_schedule_test(struct kunit *test)
{
	u8 key[16], salt[12], secret[VISOCK_KDF_SECRET_LEN];
	u8 key_b[16], salt_b[12], secret_b[VISOCK_KDF_SECRET_LEN];
	u8 info[VISOCK_KDF_INFO_LEN];
	struct visock_kdf_params p;

	/* The update secret does not change the handshake's key. */
	kdf_params(&p);
	KUNIT_ASSERT_EQ(test, visock_kdf_derive(&p, VISOCK_KDF_C2S, key, 16,
						salt, 12, secret), 0);
	KUNIT_EXPECT_MEMEQ(test, key, kdf_c2s_key, 16);
	KUNIT_EXPECT_MEMEQ(test, secret, rk_secret0, sizeof(secret));
	KUNIT_ASSERT_EQ(test, visock_kdf_derive(&p, VISOCK_KDF_S2C, key_b, 16,
						salt_b, 12, secret_b), 0);
	KUNIT_EXPECT_MEMNEQ(test, secret_b, secret, sizeof(secret));

	visock_kdf_update_info(VISOCK_XFORM_AES128_GCM, 16, 0x0102030405ULL,
			       info);
	KUNIT_EXPECT_MEMEQ(test, info, "visock rekey", 12);
	KUNIT_EXPECT_EQ(test, info[12], 1);
	KUNIT_EXPECT_EQ(test, info[13], VISOCK_XFORM_AES128_GCM);
	KUNIT_EXPECT_EQ(test, info[14], 0);
	KUNIT_EXPECT_EQ(test, info[15], 16);
	KUNIT_EXPECT_EQ(test, info[18], 0);
	KUNIT_EXPECT_EQ(test, info[19], 0x01);
	KUNIT_EXPECT_EQ(test, info[23], 0x05);

	/* Key 1 from the handshake's secret, then key 2 from the next. */
	memcpy(secret, rk_secret0, sizeof(secret));
	KUNIT_ASSERT_EQ(test, visock_kdf_update(VISOCK_XFORM_AES128_GCM, 1,
						secret, key, 16, salt, 12), 0);
	KUNIT_EXPECT_MEMEQ(test, key, rk_key1, 16);
	KUNIT_EXPECT_MEMEQ(test, salt, rk_salt1, 12);
	KUNIT_EXPECT_MEMNEQ(test, key, kdf_c2s_key, 16);
	KUNIT_EXPECT_MEMNEQ(test, secret, rk_secret0, sizeof(secret));
	KUNIT_ASSERT_EQ(test, visock_kdf_update(VISOCK_XFORM_AES128_GCM, 2,
						secret, key, 16, salt, 12), 0);
	KUNIT_EXPECT_MEMEQ(test, key, rk_key2, 16);
	KUNIT_EXPECT_MEMEQ(test, salt, rk_salt2, 12);

	/* Deterministic: the same secret and number give the same key. */
	memcpy(secret, rk_secret0, sizeof(secret));
	memcpy(secret_b, rk_secret0, sizeof(secret_b));
	KUNIT_ASSERT_EQ(test, visock_kdf_update(VISOCK_XFORM_AES128_GCM, 1,
						secret, key, 16, salt, 12), 0);
	KUNIT_ASSERT_EQ(test, visock_kdf_update(VISOCK_XFORM_AES128_GCM, 1,
						secret_b, key_b, 16, salt_b,
						12), 0);
	KUNIT_EXPECT_MEMEQ(test, key, key_b, 16);
	KUNIT_EXPECT_MEMEQ(test, salt, salt_b, 12);
	KUNIT_EXPECT_MEMEQ(test, secret, secret_b, sizeof(secret));

	/* The number of the key and the pair are inputs. */
	memcpy(secret_b, rk_secret0, sizeof(secret_b));
	KUNIT_ASSERT_EQ(test, visock_kdf_update(VISOCK_XFORM_AES128_GCM, 2,
						secret_b, key_b, 16, salt_b,
						12), 0);
	KUNIT_EXPECT_MEMNEQ(test, key_b, rk_key1, 16);
	memcpy(secret_b, rk_secret0, sizeof(secret_b));
	KUNIT_ASSERT_EQ(test, visock_kdf_update(VISOCK_XFORM_AES128_GMAC, 1,
						secret_b, key_b, 16, salt_b,
						12), 0);
	KUNIT_EXPECT_MEMNEQ(test, key_b, rk_key1, 16);

	/* Bad parameters: refused, and nothing secret is left. */
	memcpy(secret, rk_secret0, sizeof(secret));
	KUNIT_EXPECT_EQ(test, visock_kdf_update(VISOCK_XFORM_AES128_GCM, 0,
						secret, key, 16, salt, 12),
			-EINVAL);
	KUNIT_EXPECT_TRUE(test, all_bytes(secret, 0, sizeof(secret)));
	KUNIT_EXPECT_TRUE(test, all_bytes(key, 0, sizeof(key)));
	memcpy(secret, rk_secret0, sizeof(secret));
	KUNIT_EXPECT_EQ(test, visock_kdf_update(VISOCK_XFORM_AES128_GCM, 1,
						secret, key, 33, salt, 12),
			-EINVAL);
	KUNIT_EXPECT_TRUE(test, all_bytes(secret, 0, sizeof(secret)));
}

/* ---- records across key changes ---- */

/* Update secrets of the fixture's directions (the same key for both). */
static const u8 rk_secret_a[VISOCK_KDF_SECRET_LEN] = { 0xa1, 0xa2, 0xa3 };
static const u8 rk_secret_b[VISOCK_KDF_SECRET_LEN] = { 0xb1, 0xb2, 0xb3 };

/*
 * The fixture for @xform with key updates: the sender changes keys
 * every @tx_limit records, the receiver requires a change after
 * @rx_limit; a NULL secret leaves updates off on that side.
 */
static void rk_setup(struct kunit *test, unsigned int xform, u64 tx_limit,
		     const u8 *tx_secret, u64 rx_limit, const u8 *rx_secret)
{
	struct rec_fix *f = test->priv;

	rec_setup(test, xform);
	visock_rec_rekey_setup(&f->tx, tx_limit, tx_secret);
	visock_rec_rekey_setup(&f->rx, rx_limit, rx_secret);
}

/* Where record @n goes in the ring: records of 300 bytes, wrapping. */
static unsigned int rk_at(unsigned int n)
{
	return (n * 1000) % RING_SIZE;
}

/* Seal record @n (payload 300 bytes) at its place; its wire length. */
static int rk_seal(struct kunit *test, unsigned int n)
{
	struct rec_fix *f = test->priv;

	f->in[0] = n;
	return rec_seal(f, rk_at(n), 300, 0);
}

/* Open record @n (@total bytes) and check its payload. */
static void rk_open_ok(struct kunit *test, unsigned int n, int total)
{
	struct rec_fix *f = test->priv;
	unsigned int plen;
	u8 flags;

	memset(f->out, 0xaa, MAX_PAYLOAD);
	KUNIT_EXPECT_EQ_MSG(test, rec_open(f, rk_at(n), total, &plen, &flags),
			    total, "record %u (xform %u)", n, f->rx.xf->id);
	KUNIT_EXPECT_EQ(test, plen, 300);
	KUNIT_EXPECT_MEMEQ(test, f->out, f->in, 300);
}

/*
 * Opening record @n (@total bytes) fails with @err, and no byte of a
 * plaintext reaches the reader: its buffer is wiped or untouched.
 */
static void rk_open_bad(struct kunit *test, unsigned int n, int total,
			int err)
{
	struct rec_fix *f = test->priv;
	unsigned int plen;
	u8 flags;

	memset(f->out, 0xaa, MAX_PAYLOAD);
	KUNIT_EXPECT_EQ_MSG(test, rec_open(f, rk_at(n), total, &plen, &flags),
			    err, "record %u (xform %u)", n, f->rx.xf->id);
	KUNIT_EXPECT_TRUE(test, only_bytes(f->out, 0, 0xaa, 300));
}

/* Sequence number in the header of the sealed record @n. */
static u64 rk_hdr_seq(struct rec_fix *f, unsigned int n)
{
	u8 hdr[VISOCK_REC_HDR_LEN];
	struct visock_rec_hdr h;
	unsigned int i;

	for (i = 0; i < VISOCK_REC_HDR_LEN; i++)
		hdr[i] = *rec_byte(f, rk_at(n), i);
	visock_rec_hdr_decode(hdr, &h);
	return h.seq;
}

/*
 * Every pair, a key change every 4 records: records 4, 8 and 12 carry
 * the flag, sequence numbers run on 0..12, each record opens with the
 * key the receiver derived itself, and the sender's new key is another
 * one (the same plaintext at another key gives other bytes).
 */
static void rekey_boundary_test(struct kunit *test)
{
	struct rec_fix *f = test->priv;
	unsigned int id, n;
	bool flag;
	int total;

	for (id = 1; id <= VISOCK_XFORM_MAX; id++) {
		rk_setup(test, id, 4, rk_secret_a, 4, rk_secret_a);
		KUNIT_EXPECT_EQ(test, f->tx.limit, 4);
		for (n = 0; n < 13; n++) {
			total = rk_seal(test, n);
			KUNIT_ASSERT_EQ_MSG(test, total, 300 + 32,
					    "record %u (xform %u)", n, id);
			flag = *rec_byte(f, rk_at(n), 2) &
			       VISOCK_REC_F_KEY_UPDATE;
			KUNIT_EXPECT_EQ_MSG(test, flag, n && n % 4 == 0,
					    "record %u (xform %u)", n, id);
			KUNIT_EXPECT_EQ(test, rk_hdr_seq(f, n), n);
			KUNIT_EXPECT_EQ(test, f->tx.epoch, n / 4);
			rk_open_ok(test, n, total);
			KUNIT_EXPECT_EQ(test, f->rx.epoch, n / 4);
		}
		KUNIT_EXPECT_EQ(test, f->tx.seq, 13);
		KUNIT_EXPECT_EQ(test, f->rx.seq, 13);
		KUNIT_EXPECT_EQ(test, f->tx.key_seq, 12);
		KUNIT_EXPECT_EQ(test, f->rx.key_seq, 12);
	}

	/* A limit of 0 or over the pair's is the pair's. */
	rk_setup(test, VISOCK_XFORM_AES128_GCM, 0, rk_secret_a, U64_MAX,
		 rk_secret_a);
	KUNIT_EXPECT_EQ(test, f->tx.limit,
			visock_xform_get(VISOCK_XFORM_AES128_GCM)->max_records);
	KUNIT_EXPECT_EQ(test, f->rx.limit, f->tx.limit);
}

/*
 * A sender that changes keys earlier than the receiver requires is
 * accepted; one that does not change it by then is refused.
 */
static void rekey_limits_test(struct kunit *test)
{
	struct rec_fix *f = test->priv;
	unsigned int n;
	int total;

	rk_setup(test, VISOCK_XFORM_CHACHA20_POLY1305, 2, rk_secret_a, 5,
		 rk_secret_a);
	for (n = 0; n < 7; n++)
		rk_open_ok(test, n, rk_seal(test, n));
	KUNIT_EXPECT_EQ(test, f->rx.epoch, 3);

	/* The receiver's limit is 3: record 3 must carry the change. */
	rk_setup(test, VISOCK_XFORM_CHACHA20_POLY1305, 4, rk_secret_a, 3,
		 rk_secret_a);
	for (n = 0; n < 3; n++)
		rk_open_ok(test, n, rk_seal(test, n));
	total = rk_seal(test, 3);
	rk_open_bad(test, 3, total, -EKEYEXPIRED);
	KUNIT_EXPECT_EQ(test, f->rx.seq, 3);
	KUNIT_EXPECT_EQ(test, f->rx.epoch, 0);
}

/*
 * Records at the wrong point or under the wrong key: refused with their
 * error, no byte delivered.
 */
static void rekey_reject_test(struct kunit *test)
{
	struct rec_fix *f = test->priv;
	u8 hdr4[VISOCK_REC_HDR_LEN];
	int total, t3 = 0;
	unsigned int n;

	rk_setup(test, VISOCK_XFORM_AES256_GCM, 4, rk_secret_a, 4,
		 rk_secret_a);
	/* A key change claimed by the connection's first record. */
	total = rk_seal(test, 0);
	rec_expect_reject(test, rk_at(0), total, 2, VISOCK_REC_F_KEY_UPDATE,
			  -EPROTO, "update on record 0");
	KUNIT_EXPECT_EQ(test, f->rx.epoch, 0);
	rk_open_ok(test, 0, total);
	for (n = 1; n < 4; n++)
		t3 = rk_seal(test, n);
	/* Records 1 to 3 are in the ring; open them in turn. */
	for (n = 1; n < 4; n++) {
		f->in[0] = n;
		rk_open_ok(test, n, t3);
	}

	/* Record 4 is the first under key 1: without its flag, refused. */
	total = rk_seal(test, 4);
	memcpy(hdr4, f->ring + rk_at(4), VISOCK_REC_HDR_LEN);
	rec_expect_reject(test, rk_at(4), total, 2, VISOCK_REC_F_KEY_UPDATE,
			  -EKEYEXPIRED, "update missing at the limit");
	KUNIT_EXPECT_EQ(test, f->rx.epoch, 0);
	/* Record 3 again, at record 4's place: a replay. */
	memcpy(f->ring + rk_at(4), f->ring + rk_at(3), t3);
	rk_open_bad(test, 4, t3, -EILSEQ);
	KUNIT_EXPECT_EQ(test, f->rx.epoch, 0);

	/*
	 * Record 3's bytes under record 4's header (sequence number and
	 * flag): the receiver takes key 1, the bytes were sealed with key
	 * 0, the tag fails.
	 */
	memcpy(f->ring + rk_at(4), hdr4, VISOCK_REC_HDR_LEN);
	rk_open_bad(test, 4, t3, -EBADMSG);

	/* A receiver whose secret differs derives another key 1. */
	rk_setup(test, VISOCK_XFORM_AES256_GCM, 1, rk_secret_a, 4,
		 rk_secret_b);
	rk_open_ok(test, 0, rk_seal(test, 0));
	total = rk_seal(test, 1);
	KUNIT_EXPECT_TRUE(test, *rec_byte(f, rk_at(1), 2) &
			  VISOCK_REC_F_KEY_UPDATE);
	rk_open_bad(test, 1, total, -EBADMSG);

	/* The flag set on a record sealed under the current key. */
	rk_setup(test, VISOCK_XFORM_AES128_GMAC, 4, rk_secret_a, 4,
		 rk_secret_a);
	rk_open_ok(test, 0, rk_seal(test, 0));
	total = rk_seal(test, 1);
	*rec_byte(f, rk_at(1), 2) |= VISOCK_REC_F_KEY_UPDATE;
	rk_open_bad(test, 1, total, -EBADMSG);

	/* A receiver without key updates does not know the flag. */
	rk_setup(test, VISOCK_XFORM_AES128_GCM, 1, rk_secret_a, 4, NULL);
	rk_open_ok(test, 0, rk_seal(test, 0));
	total = rk_seal(test, 1);
	rec_expect_reject(test, rk_at(1), total, 0, 0, -EPROTO,
			  "update to a receiver without updates");

	/* A sender without key updates stops at its limit. */
	rk_setup(test, VISOCK_XFORM_AES128_GCM, 2, NULL, 2, NULL);
	rk_open_ok(test, 0, rk_seal(test, 0));
	rk_open_ok(test, 1, rk_seal(test, 1));
	KUNIT_EXPECT_EQ(test, rk_seal(test, 2), -EKEYEXPIRED);
	KUNIT_EXPECT_EQ(test, f->tx.epoch, 0);
}

static struct kunit_case visock_rekey_test_cases[] = {
	KUNIT_CASE(rekey_schedule_test),
	KUNIT_CASE(rekey_boundary_test),
	KUNIT_CASE(rekey_limits_test),
	KUNIT_CASE(rekey_reject_test),
	{}
};

static struct kunit_suite visock_rekey_test_suite = {
	.name = "visock_rekey",
	.init = rec_init,
	.exit = rec_exit,
	.test_cases = visock_rekey_test_cases,
};

kunit_test_suite(visock_rekey_test_suite);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit tests of visock key updates");
