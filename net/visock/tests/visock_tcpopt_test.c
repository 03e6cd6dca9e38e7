// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the visock SYN capability option (visock_tcpopt.c).
 */

#include <kunit/test.h>
#include <linux/module.h>
#include <linux/string.h>
#include <linux/vmalloc.h>

#include "../visock_wire.h"

/* Maximum size of the TCP options area (doff 15). */
#define OPTS_MAX	40

/*
 * Options as string literals (no terminating NUL is stored when a case
 * fills all OPTS_MAX bytes).  VS_HDR is kind 253, length 6, ExID "VS" and
 * must be followed by the version and flags bytes.
 */
#define VS_HDR		"\xfd\x06\x56\x53"
#define VS254_HDR	"\xfe\x06\x56\x53"
#define NOP		"\x01"
#define NOP4		"\x01\x01\x01\x01"
#define EOL		"\x00"
#define MSS		"\x02\x04\x05\xb4"
#define SACKPERM	"\x04\x02"
#define TS		"\x08\x0a\x01\x02\x03\x04\x05\x06\x07\x08"
#define WSCALE		"\x03\x03\x07"

struct tcpopt_case {
	const char *name;
	u8 opts[OPTS_MAX];
	unsigned int len;
	int ret;
	u8 version;
	u8 flags;
};

static const struct tcpopt_case tcpopt_cases[] = {
	{ "empty", "", 0, -ENOENT },
	{ "only_eol", EOL, 1, -ENOENT },
	{ "bare_option", VS_HDR "\x01\x01", 6, 0, 1, 1 },
	{ "nop_nop_option", NOP NOP VS_HDR "\x01\x00", 8, 0, 1, 0 },
	{ "kind_254", NOP NOP VS254_HDR "\x03\x01", 8, 0, 3, 1 },
	{ "version_255_flags_ff", VS_HDR "\xff\xff", 6, 0, 255, 0xff },
	{ "version_0", NOP NOP VS_HDR "\x00\x01", 8, -EINVAL },
	{ "syn_mix_linux_order",
	  MSS SACKPERM TS NOP WSCALE NOP NOP VS_HDR "\x01\x01",
	  28, 0, 1, 1 },
	{ "syn_mix_option_first",
	  NOP NOP VS_HDR "\x02\x01" MSS NOP WSCALE SACKPERM TS,
	  28, 0, 2, 1 },
	{ "syn_mix_without_option",
	  MSS SACKPERM TS NOP WSCALE, 20, -ENOENT },
	{ "sack_blocks_then_option",
	  NOP NOP "\x05\x12\x01\x02\x03\x04\x05\x06\x07\x08"
	  "\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10" VS_HDR "\x01\x00",
	  26, 0, 1, 0 },
	{ "eol_before_option", MSS EOL NOP VS_HDR "\x01\x01", 12, -ENOENT },
	{ "eol_then_garbage", EOL "\x02\x00\xff", 4, -ENOENT },
	{ "only_nops",
	  NOP4 NOP4 NOP4 NOP4 NOP4 NOP4 NOP4 NOP4 NOP4 NOP4, 40, -ENOENT },
	{ "option_at_very_end",
	  MSS SACKPERM TS NOP WSCALE NOP4 NOP4 NOP4 NOP NOP
	  VS_HDR "\x04\x01",
	  40, 0, 4, 1 },
	{ "option_cut_by_area_end", NOP NOP VS_HDR "\x01\x01", 7, -EBADMSG },
	{ "option_len_byte_missing", NOP NOP "\xfd", 3, -EBADMSG },
	{ "mss_len_byte_missing", NOP "\x02", 2, -EBADMSG },
	{ "len_0", "\x02\x00" NOP NOP VS_HDR "\x01\x01", 10, -EBADMSG },
	{ "len_1", "\x02\x01" NOP NOP VS_HDR "\x01\x01", 10, -EBADMSG },
	{ "len_overflows_area", "\x02\x05\x00\x00", 4, -EBADMSG },
	{ "len_255", NOP "\x08\xff\x01\x02", 5, -EBADMSG },
	{ "ts_truncated", NOP NOP "\x08\x0a\x01\x02\x03\x04", 8, -EBADMSG },
	{ "malformed_before_option", "\x1e\x01" VS_HDR "\x01\x01", 8,
	  -EBADMSG },
	{ "malformed_after_option", VS_HDR "\x01\x01\x1e\x28", 8, 0, 1, 1 },
	{ "other_exid", NOP NOP "\xfd\x06\x12\x34\x01\x01", 8, -ENOENT },
	{ "exid_off_by_one", NOP NOP "\xfd\x06\x56\x54\x01\x01", 8,
	  -ENOENT },
	{ "exid_byteswapped", NOP NOP "\xfd\x06\x53\x56\x01\x01", 8,
	  -ENOENT },
	{ "other_exid_then_ours",
	  "\xfd\x06\x12\x34\x09\x09" NOP NOP VS_HDR "\x02\x00",
	  14, 0, 2, 0 },
	{ "our_exid_len_8_skipped",
	  "\xfd\x08\x56\x53\x09\x09\x09\x09" VS_HDR "\x01\x01",
	  14, 0, 1, 1 },
	{ "our_exid_len_4_skipped", "\xfd\x04\x56\x53", 4, -ENOENT },
	{ "our_exid_len_5_skipped", "\xfd\x05\x56\x53\x01" NOP, 6,
	  -ENOENT },
	{ "empty_experimental", "\xfd\x02\xfe\x02" VS_HDR "\x01\x01",
	  10, 0, 1, 1 },
	{ "other_kind_with_our_bytes", "\xfc\x06\x56\x53\x01\x01", 6,
	  -ENOENT },
	{ "first_of_two_wins", VS_HDR "\x01\x00" VS_HDR "\x02\x01",
	  12, 0, 1, 0 },
	{ "first_version_0_wins", VS_HDR "\x00\x00" VS_HDR "\x02\x01",
	  12, -EINVAL },
	{ "unknown_kinds_skipped",
	  "\x63\x03\x00\xc8\x02\x4d\x04\x00\x00" VS_HDR "\x07\x00",
	  15, 0, 7, 0 },
};

static void tcpopt_case_desc(const struct tcpopt_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(tcpopt, tcpopt_cases, tcpopt_case_desc);

/*
 * Each test gets a vmalloc'ed page in test->priv.  vmalloc leaves an
 * unmapped guard page behind every area, so input copied to the very end
 * of that page makes any read past the input fault, even without KASAN.
 */
static int visock_tcpopt_test_init(struct kunit *test)
{
	test->priv = vmalloc(PAGE_SIZE);
	return test->priv ? 0 : -ENOMEM;
}

static void visock_tcpopt_test_exit(struct kunit *test)
{
	vfree(test->priv);
}

static int tcpopt_find_guarded(struct kunit *test, const u8 *opts,
			       unsigned int len, struct visock_synopt *out)
{
	u8 *p = (u8 *)test->priv + PAGE_SIZE - len;

	memcpy(p, opts, len);
	return visock_tcpopt_find(p, len, out);
}

/*
 * Parse @c with the bytes after the options area set to @fill, so that a
 * read past the end would be likely to change the outcome.
 */
static int tcpopt_find_filled(const struct tcpopt_case *c, u8 fill,
			      struct visock_synopt *out)
{
	u8 buf[OPTS_MAX + 16];

	memset(buf, fill, sizeof(buf));
	memcpy(buf, c->opts, c->len);
	return visock_tcpopt_find(buf, c->len, out);
}

static void visock_tcpopt_find_test(struct kunit *test)
{
	const struct tcpopt_case *c = test->param_value;
	static const u8 fills[] = { 0x00, 0x01, 0x02, 0xfd, 0xff };
	struct visock_synopt out = { .version = 0xaa, .flags = 0xbb };
	unsigned int i;
	int ret;

	ret = tcpopt_find_filled(c, 0x00, &out);
	KUNIT_EXPECT_EQ(test, ret, c->ret);
	if (c->ret == 0) {
		KUNIT_EXPECT_EQ(test, out.version, c->version);
		KUNIT_EXPECT_EQ(test, out.flags, c->flags);
	} else {
		/* @out is left alone on failure. */
		KUNIT_EXPECT_EQ(test, out.version, 0xaa);
		KUNIT_EXPECT_EQ(test, out.flags, 0xbb);
	}

	/* Nothing beyond @len may influence the result. */
	for (i = 0; i < ARRAY_SIZE(fills); i++) {
		ret = tcpopt_find_filled(c, fills[i], &out);
		KUNIT_EXPECT_EQ_MSG(test, ret, c->ret, "fill 0x%02x", fills[i]);
	}
	KUNIT_EXPECT_EQ(test, tcpopt_find_guarded(test, c->opts, c->len, &out),
			c->ret);
}

/* The offset agrees with find() and points at a whole option. */
static void visock_tcpopt_offset_test(struct kunit *test)
{
	const struct tcpopt_case *c = test->param_value;
	int off = visock_tcpopt_offset(c->opts, c->len);

	if (c->ret == 0 || c->ret == -EINVAL) {
		/* version 0 is found; only decoding rejects it */
		KUNIT_ASSERT_GE(test, off, 0);
		KUNIT_EXPECT_LE(test, off + VISOCK_TCPOPT_LEN, c->len);
		KUNIT_EXPECT_TRUE(test, c->opts[off] == 253 ||
					c->opts[off] == 254);
		KUNIT_EXPECT_EQ(test, c->opts[off + 1], VISOCK_TCPOPT_LEN);
		if (c->ret == 0) {
			KUNIT_EXPECT_EQ(test, c->opts[off + 4], c->version);
			KUNIT_EXPECT_EQ(test, c->opts[off + 5], c->flags);
		}
	} else {
		KUNIT_EXPECT_EQ(test, off, c->ret);
	}
}

static void visock_tcpopt_write_test(struct kunit *test)
{
	static const u8 expect[VISOCK_TCPOPT_ALIGNED] = {
		1, 1, 253, 6, 0x56, 0x53, 1, VISOCK_TCPOPT_F_RDMA
	};
	struct visock_synopt opt = { .version = 1,
				     .flags = VISOCK_TCPOPT_F_RDMA };
	u8 buf[VISOCK_TCPOPT_ALIGNED + 4];

	memset(buf, 0xee, sizeof(buf));
	KUNIT_EXPECT_EQ(test, visock_tcpopt_write(buf, &opt),
			VISOCK_TCPOPT_ALIGNED);
	KUNIT_EXPECT_EQ(test, memcmp(buf, expect, sizeof(expect)), 0);
	/* Nothing written past the option. */
	KUNIT_EXPECT_EQ(test, buf[VISOCK_TCPOPT_ALIGNED], 0xee);
	KUNIT_EXPECT_EQ(test, buf[sizeof(buf) - 1], 0xee);
	KUNIT_EXPECT_EQ(test, VISOCK_TCPOPT_ALIGNED % 4, 0);
}

/* Everything visock_tcpopt_write() emits parses back, at any offset. */
static void visock_tcpopt_roundtrip_test(struct kunit *test)
{
	struct visock_synopt in, out;
	unsigned int v, f, pad;
	u8 buf[OPTS_MAX];
	int ret;

	for (v = 1; v <= 255; v++) {
		for (f = 0; f <= 255; f += 17) {
			for (pad = 0; pad <= OPTS_MAX - VISOCK_TCPOPT_ALIGNED;
			     pad += 4) {
				memset(buf, 1, sizeof(buf));	/* NOPs */
				in.version = v;
				in.flags = f;
				visock_tcpopt_write(buf + pad, &in);
				ret = visock_tcpopt_find(buf, pad +
						VISOCK_TCPOPT_ALIGNED, &out);
				if (ret || out.version != v || out.flags != f) {
					KUNIT_FAIL(test,
						   "v %u f %u pad %u: ret %d",
						   v, f, pad, ret);
					return;
				}
			}
		}
	}
}

static u32 tcpopt_rand(u32 *state)
{
	u32 x = *state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*state = x;
	return x;
}

/*
 * Random options areas (biased towards plausible kinds and lengths): the
 * parser must return one of its documented values, must fill @out with a
 * non-zero version on success, and must not look past the area.
 */
static void visock_tcpopt_fuzz_test(struct kunit *test)
{
	static const u8 kinds[] = { 0, 1, 2, 3, 4, 5, 8, 253, 254, 0x56 };
	u32 seed = 0x5653a001;
	u8 a[OPTS_MAX + 8], b[OPTS_MAX + 8];
	struct visock_synopt oa, ob;
	unsigned int iter, i, len;
	int ra, rb;

	for (iter = 0; iter < 10000; iter++) {
		len = tcpopt_rand(&seed) % (OPTS_MAX + 1);
		for (i = 0; i < sizeof(a); i++) {
			u32 r = tcpopt_rand(&seed);

			if (r & 1)
				a[i] = kinds[(r >> 8) % ARRAY_SIZE(kinds)];
			else if (r & 2)
				a[i] = (r >> 8) % 12;
			else
				a[i] = r >> 8;
		}
		/* Sometimes plant a real option somewhere. */
		if ((iter & 3) == 0 && len >= VISOCK_TCPOPT_LEN) {
			i = tcpopt_rand(&seed) % (len - VISOCK_TCPOPT_LEN + 1);
			a[i] = 253;
			a[i + 1] = 6;
			a[i + 2] = 0x56;
			a[i + 3] = 0x53;
		}
		memcpy(b, a, len);
		memset(b + len, 0xfd, sizeof(b) - len);
		memset(a + len, 0x00, sizeof(a) - len);

		ra = visock_tcpopt_find(a, len, &oa);
		rb = visock_tcpopt_find(b, len, &ob);
		KUNIT_ASSERT_EQ_MSG(test, ra, rb, "iteration %u", iter);
		rb = tcpopt_find_guarded(test, a, len, &ob);
		KUNIT_ASSERT_EQ_MSG(test, ra, rb, "iteration %u", iter);
		KUNIT_ASSERT_TRUE_MSG(test, ra == 0 || ra == -ENOENT ||
				      ra == -EBADMSG || ra == -EINVAL,
				      "iteration %u: ret %d", iter, ra);
		if (ra == 0) {
			KUNIT_ASSERT_NE(test, oa.version, 0);
			KUNIT_ASSERT_EQ(test, oa.version, ob.version);
			KUNIT_ASSERT_EQ(test, oa.flags, ob.flags);
		}
	}
}

/* The lazy start threshold in the flags byte, both ways. */
static void visock_tcpopt_lazy_test(struct kunit *test)
{
	static const u32 bad[] = {
		0, 1, 512, 1023, 1025, 3 << 10, (1U << 25) + 1, 1U << 26,
		1U << 31, 0xffffffff,
	};
	unsigned int k, i;

	for (k = 0; k < 16; k++) {
		u32 bytes = 1024U << k;
		u8 f = visock_tcpopt_lazy_flags(bytes);

		KUNIT_EXPECT_EQ(test, f, (u8)(0x02 | k << 2));
		KUNIT_EXPECT_EQ(test, f & ~VISOCK_TCPOPT_F_PEER_MASK, 0);
		KUNIT_EXPECT_EQ(test, visock_tcpopt_lazy_bytes(f), bytes);
		/* The RDMA flag and foreign bits do not matter. */
		KUNIT_EXPECT_EQ(test, visock_tcpopt_lazy_bytes(f | 0xc1), bytes);
	}
	KUNIT_EXPECT_EQ(test, visock_tcpopt_lazy_bytes(0x02), 1024U);
	KUNIT_EXPECT_EQ(test, visock_tcpopt_lazy_bytes(0x3e), 32U << 20);
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		KUNIT_EXPECT_EQ_MSG(test, visock_tcpopt_lazy_flags(bad[i]), 0,
				    "bytes %u", bad[i]);
	/* Without the lazy flag the exponent bits mean nothing. */
	for (i = 0; i < 256; i++)
		if (!(i & VISOCK_TCPOPT_F_LAZY))
			KUNIT_EXPECT_EQ_MSG(test, visock_tcpopt_lazy_bytes(i),
					    0U, "flags %#x", i);
}

static struct kunit_case visock_tcpopt_test_cases[] = {
	KUNIT_CASE_PARAM(visock_tcpopt_find_test, tcpopt_gen_params),
	KUNIT_CASE_PARAM(visock_tcpopt_offset_test, tcpopt_gen_params),
	KUNIT_CASE(visock_tcpopt_write_test),
	KUNIT_CASE(visock_tcpopt_roundtrip_test),
	KUNIT_CASE(visock_tcpopt_fuzz_test),
	KUNIT_CASE(visock_tcpopt_lazy_test),
	{}
};

static struct kunit_suite visock_tcpopt_test_suite = {
	.name = "visock_tcpopt",
	.init = visock_tcpopt_test_init,
	.exit = visock_tcpopt_test_exit,
	.test_cases = visock_tcpopt_test_cases,
};

kunit_test_suite(visock_tcpopt_test_suite);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit tests of the visock TCP option parser");
