// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the compression of record payloads (visock_comp.c) and
 * of compressed records (visock_record.c with a compressing pair).
 */

#include <crypto/aead.h>
#include <kunit/test.h>
#include <linux/lz4.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/visock.h>
#include <linux/zstd.h>

#include "../visock_comp.h"
#include "../visock_record.h"
#include "../visock_xform.h"
#include "visock_rec_fix.h"

/* One pair of each compressor (the algorithm tests). */
static const unsigned int comp_pairs[] = {
	VISOCK_XFORM_LZ4_AES128_GCM, VISOCK_XFORM_ZSTD_AES128_GCM,
};

/* The next compressing pair after @id, 0 after the last. */
static unsigned int comp_next(unsigned int id)
{
	const struct visock_xform_info *xf;

	while (++id <= VISOCK_XFORM_MAX) {
		xf = visock_xform_get(id);
		if (xf && xf->comp)
			return id;
	}
	return 0;
}

/* Text that compresses well. */
static void comp_text(u8 *p, unsigned int n)
{
	static const char line[] = "record 0000: the quick brown fox jumps\n";
	unsigned int i;

	for (i = 0; i < n; i++)
		p[i] = line[i % (sizeof(line) - 1)];
}

/* Bytes that do not compress: xorshift32. */
static void comp_noise(u8 *p, unsigned int n)
{
	u32 v = 0x2545f491;
	unsigned int i;

	for (i = 0; i < n; i++) {
		v ^= v << 13;
		v ^= v >> 17;
		v ^= v << 5;
		p[i] = v >> 24;
	}
}

/* A compressor of pair @id, freed by the test's end. */
static struct visock_comp *comp_get(struct kunit *test, unsigned int id)
{
	const struct visock_xform_info *xf = visock_xform_get(id);
	struct visock_comp *c;

	KUNIT_ASSERT_NOT_NULL(test, xf);
	KUNIT_ASSERT_NOT_NULL(test, xf->comp);
	c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, c);
	KUNIT_ASSERT_EQ_MSG(test, visock_comp_init(c, xf->comp), 0, "%s",
			    xf->comp);
	return c;
}

static void comp_put(struct visock_comp *c)
{
	visock_comp_destroy(c);
	/* Twice is harmless, as on an error path. */
	visock_comp_destroy(c);
}

/* Text shrinks and comes back; noise does not fit in less than itself. */
static void comp_roundtrip_test(struct kunit *test)
{
	const unsigned int n = MAX_PAYLOAD;
	struct visock_comp *c;
	u8 *in, *z, *out;
	unsigned int i;
	int len, got;

	in = kunit_kmalloc(test, n, GFP_KERNEL);
	z = kunit_kmalloc(test, n, GFP_KERNEL);
	out = kunit_kmalloc(test, n, GFP_KERNEL);
	KUNIT_ASSERT_TRUE(test, in && z && out);
	for (i = 0; i < ARRAY_SIZE(comp_pairs); i++) {
		c = comp_get(test, comp_pairs[i]);
		comp_text(in, n);
		len = visock_comp_compress(c, in, n, z, n - 1);
		KUNIT_EXPECT_GT(test, len, 0);
		KUNIT_EXPECT_LT(test, len, n / 4);
		if (len > 0) {
			memset(out, 0, n);
			got = visock_comp_decompress(c, z, len, out, n);
			KUNIT_EXPECT_EQ(test, got, n);
			KUNIT_EXPECT_EQ(test, memcmp(in, out, n), 0);
		}
		comp_noise(in, n);
		KUNIT_EXPECT_LT(test, visock_comp_compress(c, in, n, z, n - 1),
				0);
		/* Nothing to compress into, or nothing to compress. */
		KUNIT_EXPECT_EQ(test, visock_comp_compress(c, in, n, z, 0),
				-EINVAL);
		KUNIT_EXPECT_EQ(test, visock_comp_decompress(c, z, 0, out, n),
				-EINVAL);
		comp_put(c);
	}
}

/*
 * A record whose payload is a compressed stream: sealed flagged, opened
 * with the flag, decompressed to the bytes that went in.
 */
static void comp_record_test(struct kunit *test)
{
	struct rec_fix *f = test->priv;
	unsigned int id, plen, pairs = 0;
	struct visock_comp *c;
	u8 *text, *plain;
	int len, ret;
	u8 flags;

	text = kunit_kmalloc(test, MAX_PAYLOAD, GFP_KERNEL);
	plain = kunit_kmalloc(test, MAX_PAYLOAD, GFP_KERNEL);
	KUNIT_ASSERT_TRUE(test, text && plain);
	comp_text(text, MAX_PAYLOAD);
	for (id = comp_next(0); id; id = comp_next(id)) {
		rec_setup(test, id);
		c = comp_get(test, id);
		len = visock_comp_compress(c, text, MAX_PAYLOAD, f->in,
					   MAX_PAYLOAD - 1);
		KUNIT_ASSERT_GT(test, len, 0);
		ret = rec_seal(f, RING_SIZE - 20, len,
			       VISOCK_REC_F_COMPRESSED);
		KUNIT_ASSERT_EQ(test, ret, len + visock_rec_overhead(&f->tx));
		KUNIT_ASSERT_EQ(test, rec_open(f, RING_SIZE - 20, ret, &plen,
					       &flags), ret);
		KUNIT_EXPECT_EQ(test, plen, len);
		KUNIT_EXPECT_TRUE(test, flags & VISOCK_REC_F_COMPRESSED);
		KUNIT_EXPECT_EQ(test, visock_comp_decompress(c, f->out, plen,
							     plain,
							     MAX_PAYLOAD),
				MAX_PAYLOAD);
		KUNIT_EXPECT_EQ(test, memcmp(plain, text, MAX_PAYLOAD), 0);
		comp_put(c);
		pairs++;
	}
	/* lz4 and zstd, each with gcm-aes-128/256, chacha20, gmac-aes-128 */
	KUNIT_EXPECT_EQ(test, pairs, 8);
}

/*
 * A peer's authentic record that expands beyond the largest payload: the
 * decompressor refuses it within the bound, and the same stream with
 * room for all of it decompresses.
 */
static void comp_bomb_test(struct kunit *test)
{
	const unsigned int big = 4 * MAX_PAYLOAD;
	struct rec_fix *f = test->priv;
	unsigned int id, plen;
	struct visock_comp *c;
	u8 *zeros, *plain;
	int len, ret;
	u8 flags;

	zeros = kunit_kzalloc(test, big, GFP_KERNEL);
	plain = kunit_kmalloc(test, big, GFP_KERNEL);
	KUNIT_ASSERT_TRUE(test, zeros && plain);
	for (id = comp_next(0); id; id = comp_next(id)) {
		rec_setup(test, id);
		c = comp_get(test, id);
		len = visock_comp_compress(c, zeros, big, f->in,
					   MAX_PAYLOAD - 1);
		KUNIT_ASSERT_GT(test, len, 0);
		ret = rec_seal(f, 0, len, VISOCK_REC_F_COMPRESSED);
		KUNIT_ASSERT_GT(test, ret, 0);
		KUNIT_ASSERT_EQ(test, rec_open(f, 0, ret, &plen, &flags), ret);
		memset(plain, 0x5a, big);
		KUNIT_EXPECT_LT(test, visock_comp_decompress(c, f->out, plen,
							     plain,
							     MAX_PAYLOAD),
				0);
		/* Nothing was written past the bound. */
		KUNIT_EXPECT_TRUE(test, all_bytes(plain + MAX_PAYLOAD, 0x5a,
						  big - MAX_PAYLOAD));
		KUNIT_EXPECT_EQ(test, visock_comp_decompress(c, f->out, plen,
							     plain, big),
				big);
		KUNIT_EXPECT_TRUE(test, all_bytes(plain, 0, big));
		comp_put(c);
	}
}

/* Cut short, garbage, or a stream of the other algorithm: refused. */
static void comp_corrupt_test(struct kunit *test)
{
	const unsigned int n = MAX_PAYLOAD;
	struct visock_comp *c, *other;
	u8 *in, *z, *out;
	unsigned int i;
	int len;

	in = kunit_kmalloc(test, n, GFP_KERNEL);
	z = kunit_kmalloc(test, n, GFP_KERNEL);
	out = kunit_kmalloc(test, n, GFP_KERNEL);
	KUNIT_ASSERT_TRUE(test, in && z && out);
	comp_text(in, n);
	for (i = 0; i < ARRAY_SIZE(comp_pairs); i++) {
		c = comp_get(test, comp_pairs[i]);
		other = comp_get(test, comp_pairs[1 - i]);
		len = visock_comp_compress(c, in, n, z, n - 1);
		KUNIT_ASSERT_GT(test, len, 8);
		KUNIT_EXPECT_LT(test, visock_comp_decompress(c, z, len / 2,
							     out, n), 0);
		KUNIT_EXPECT_LT(test, visock_comp_decompress(c, z, len - 1,
							     out, n), 0);
		memset(z, 0xff, 64);
		KUNIT_EXPECT_LT(test, visock_comp_decompress(c, z, 64, out, n),
				0);
		len = visock_comp_compress(other, in, n, z, n - 1);
		KUNIT_ASSERT_GT(test, len, 0);
		if (comp_pairs[i] == VISOCK_XFORM_ZSTD_AES128_GCM)
			KUNIT_EXPECT_LT(test, visock_comp_decompress(c, z, len,
								     out, n),
					0);
		comp_put(other);
		comp_put(c);
	}
}

static void comp_unknown_test(struct kunit *test)
{
	struct visock_comp c;
	char drv[CRYPTO_MAX_ALG_NAME];

	KUNIT_EXPECT_FALSE(test, visock_comp_has("visock-no-such-alg"));
	KUNIT_EXPECT_LT(test, visock_comp_init(&c, "visock-no-such-alg"), 0);
	KUNIT_EXPECT_NULL(test, c.tfm);
	KUNIT_EXPECT_NULL(test, c.req);
	visock_comp_destroy(&c);
	KUNIT_EXPECT_TRUE(test, visock_comp_has("lz4"));
	KUNIT_EXPECT_EQ(test, visock_comp_driver("zstd", drv, sizeof(drv)),
			0);
	KUNIT_EXPECT_GT(test, strlen(drv), 0);
}

/*
 * What the namespace's budget is charged for a compressor and for one
 * direction of records: at least what the compression libraries bound
 * their workspaces by (zstd at the crypto API's default level, 3, also
 * the fixed estimate used where zstd is a module), and
 * at least the AEAD transform, its context, its request and the
 * direction's buffers; nothing for a direction destroyed.
 */
static void comp_mem_test(struct kunit *test)
{
	zstd_parameters p = zstd_get_params(3, 0);
	struct rec_fix *f = test->priv;
	struct crypto_aead *aead;
	size_t zws, least;
	unsigned int x;

	zws = zstd_cctx_workspace_bound(&p.cParams) +
	      zstd_dctx_workspace_bound();
	kunit_info(test, "zstd workspaces %zu, charged %zu; lz4 charged %zu",
		   zws, visock_comp_mem("zstd"), visock_comp_mem("lz4"));
	KUNIT_EXPECT_GE(test, visock_comp_mem("lz4"),
			(size_t)LZ4_MEM_COMPRESS);
	KUNIT_EXPECT_GE(test, visock_comp_mem("zstd"), zws);
	/* What is charged where the library is a module, not asked. */
	KUNIT_EXPECT_GE(test, (size_t)VISOCK_COMP_ZSTD_WS, zws);
	/* What makes a compressing pair expensive: about a megabyte. */
	KUNIT_EXPECT_GE(test, visock_comp_mem("zstd"), (size_t)SZ_512K);
	KUNIT_EXPECT_GE(test, visock_comp_mem("visock-no-such-alg"), zws);
	for (x = 1; x <= VISOCK_XFORM_MAX; x++) {
		rec_setup(test, x);
		aead = f->tx.aead;
		least = sizeof(*aead) + crypto_aead_alg(aead)->base.cra_ctxsize +
			sizeof(struct aead_request) + crypto_aead_reqsize(aead);
		kunit_info(test, "%s: one direction charged %zu, at least %zu",
			   visock_xform_name(x), visock_rec_mem(&f->tx), least);
		KUNIT_EXPECT_GE(test, visock_rec_mem(&f->tx), least);
		KUNIT_EXPECT_EQ(test, visock_rec_mem(&f->tx),
				visock_rec_mem(&f->rx));
	}
	visock_rec_destroy(&f->tx);
	KUNIT_EXPECT_EQ(test, visock_rec_mem(&f->tx), (size_t)0);
}

static struct kunit_case visock_comp_test_cases[] = {
	KUNIT_CASE(comp_roundtrip_test),
	KUNIT_CASE(comp_record_test),
	KUNIT_CASE(comp_bomb_test),
	KUNIT_CASE(comp_corrupt_test),
	KUNIT_CASE(comp_unknown_test),
	KUNIT_CASE(comp_mem_test),
	{}
};

static struct kunit_suite visock_comp_test_suite = {
	.name = "visock_comp",
	.init = rec_init,
	.exit = rec_exit,
	.test_cases = visock_comp_test_cases,
};

kunit_test_suite(visock_comp_test_suite);

MODULE_LICENSE("GPL");
