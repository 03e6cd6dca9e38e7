// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the visock ring size classes and cursor arithmetic
 * (visock_ring.c).
 */

#include <kunit/test.h>
#include <linux/module.h>
#include <linux/string.h>

#include "../visock_wire.h"

#define KIB	1024U
#define MIB	(1024U * 1024U)

/* ------------------------------------------------------------------ */
/* Size classes                                                         */
/* ------------------------------------------------------------------ */

struct sc_case {
	u32 bytes;
	int cls;
};

static const struct sc_case sc_cases[] = {
	{ 0, 0 },
	{ 1, 0 },
	{ 4096, 0 },
	{ 16 * KIB - 1, 0 },
	{ 16 * KIB, 0 },
	{ 16 * KIB + 1, 1 },
	{ 32 * KIB - 1, 1 },
	{ 32 * KIB, 1 },
	{ 32 * KIB + 1, 2 },
	{ 64 * KIB, 2 },
	{ 100 * KIB, 3 },
	{ 128 * KIB, 3 },
	{ 256 * KIB, 4 },
	{ 512 * KIB, 5 },
	{ MIB, 6 },
	{ 2 * MIB, 7 },
	{ 4 * MIB, 8 },
	{ 4 * MIB + 1, 9 },
	{ 8 * MIB - 1, 9 },
	{ 8 * MIB, 9 },
	{ 8 * MIB + 1, 9 },
	{ 16 * MIB, 9 },
	{ 0x80000000U, 9 },
	{ 0xffffffffU, 9 },
};

static void sc_case_desc(const struct sc_case *c, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%u_bytes", c->bytes);
}

KUNIT_ARRAY_PARAM(sc, sc_cases, sc_case_desc);

static void visock_sizeclass_for_test(struct kunit *test)
{
	const struct sc_case *c = test->param_value;

	KUNIT_EXPECT_EQ(test, visock_sizeclass_for(c->bytes), c->cls);
}

static void visock_sizeclass_bytes_test(struct kunit *test)
{
	unsigned int cls;

	KUNIT_EXPECT_EQ(test, visock_sizeclass_bytes(0), 16 * KIB);
	KUNIT_EXPECT_EQ(test, visock_sizeclass_bytes(1), 32 * KIB);
	KUNIT_EXPECT_EQ(test, visock_sizeclass_bytes(9), 8 * MIB);
	KUNIT_EXPECT_EQ(test, visock_sizeclass_bytes(VISOCK_SIZECLASS_COUNT),
			0);
	KUNIT_EXPECT_EQ(test, visock_sizeclass_bytes(31), 0);
	KUNIT_EXPECT_EQ(test, visock_sizeclass_bytes(32), 0);
	KUNIT_EXPECT_EQ(test, visock_sizeclass_bytes(~0U), 0);

	/* The classes span exactly the valid handshake ring sizes. */
	KUNIT_EXPECT_EQ(test, visock_sizeclass_bytes(0), VISOCK_RBUF_MIN);
	KUNIT_EXPECT_EQ(test,
			visock_sizeclass_bytes(VISOCK_SIZECLASS_COUNT - 1),
			VISOCK_RBUF_MAX);

	for (cls = 0; cls < VISOCK_SIZECLASS_COUNT; cls++) {
		u32 b = visock_sizeclass_bytes(cls);

		KUNIT_EXPECT_EQ(test, b, 16 * KIB << cls);
		KUNIT_EXPECT_EQ(test, visock_sizeclass_for(b), (int)cls);
		KUNIT_EXPECT_EQ(test, visock_sizeclass_for(b - 1),
				cls ? (int)cls : 0);
		KUNIT_EXPECT_EQ(test, visock_sizeclass_for(b / 2 + 1),
				(int)cls);
		if (cls + 1 < VISOCK_SIZECLASS_COUNT)
			KUNIT_EXPECT_EQ(test, visock_sizeclass_for(b + 1),
					(int)cls + 1);
	}
}

/* ------------------------------------------------------------------ */
/* Cursor advance                                                       */
/* ------------------------------------------------------------------ */

struct add_case {
	const char *name;
	u32 ring;
	u16 wrap;
	u32 count;
	u32 bytes;
	u16 exp_wrap;
	u32 exp_count;
};

static const struct add_case add_cases[] = {
	{ "zero", 16 * KIB, 3, 100, 0, 3, 100 },
	{ "inside", 16 * KIB, 0, 0, 100, 0, 100 },
	{ "to_last_byte", 16 * KIB, 0, 0, 16 * KIB - 1, 0, 16 * KIB - 1 },
	{ "exactly_to_end", 16 * KIB, 0, 100, 16 * KIB - 100, 1, 0 },
	{ "across_end", 16 * KIB, 7, 16 * KIB - 10, 30, 8, 20 },
	{ "full_lap_from_0", 16 * KIB, 0, 0, 16 * KIB, 1, 0 },
	{ "full_lap_from_mid", 16 * KIB, 5, 1234, 16 * KIB, 6, 1234 },
	{ "full_lap_from_last", 16 * KIB, 5, 16 * KIB - 1, 16 * KIB,
	  6, 16 * KIB - 1 },
	{ "wrap_overflow", 16 * KIB, 65535, 16 * KIB - 1, 1, 0, 0 },
	{ "wrap_overflow_lap", 16 * KIB, 65535, 5, 16 * KIB, 0, 5 },
	{ "wrap_65534", 64 * KIB, 65534, 60000, 10000, 65535, 4464 },
	{ "npot_inside", 1000, 0, 10, 989, 0, 999 },
	{ "npot_to_end", 1000, 0, 10, 990, 1, 0 },
	{ "npot_across", 1000, 9, 999, 2, 10, 1 },
	{ "npot_lap", 1000, 9, 999, 1000, 10, 999 },
	{ "npot_odd_ring", 12345, 1, 12000, 12345, 2, 12000 },
	{ "ring_1", 1, 0, 0, 1, 1, 0 },
	{ "ring_1_zero", 1, 4, 0, 0, 4, 0 },
	{ "ring_3", 3, 65535, 2, 2, 0, 1 },
	{ "max_ring_no_overflow", 0xffffffffU, 0, 0xfffffffeU, 0xffffffffU,
	  1, 0xfffffffeU },
	{ "max_ring_exact", 0xffffffffU, 2, 0xfffffffeU, 1, 3, 0 },
	{ "max_ring_inside", 0xffffffffU, 2, 0x80000000U, 0x7ffffffeU, 2,
	  0xfffffffeU },
	{ "big_ring_8m", 8 * MIB, 100, 8 * MIB - 4096, 8192, 101, 4096 },
	{ "more_than_ring", 1000, 0, 500, 2500, 3, 0 },
	{ "many_laps", 10, 65530, 3, 0xffffffffU, 39315, 8 },
	{ "ring_0_noop", 0, 9, 5, 100, 9, 5 },
};

static void add_case_desc(const struct add_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(add, add_cases, add_case_desc);

static void visock_cursor_add_test(struct kunit *test)
{
	const struct add_case *c = test->param_value;
	struct visock_cursor cur = { .wrap = c->wrap, .count = c->count };

	visock_cursor_add(&cur, c->ring, c->bytes);
	KUNIT_EXPECT_EQ(test, cur.wrap, c->exp_wrap);
	KUNIT_EXPECT_EQ(test, cur.count, c->exp_count);
}

/* ------------------------------------------------------------------ */
/* Cursor distance                                                      */
/* ------------------------------------------------------------------ */

struct diff_case {
	const char *name;
	u32 ring;
	struct visock_cursor old;
	struct visock_cursor new;
	s64 ret;
};

#define C(w, c)	{ .wrap = (w), .count = (c) }

static const struct diff_case diff_cases[] = {
	{ "equal", 16 * KIB, C(0, 0), C(0, 0), 0 },
	{ "equal_mid", 16 * KIB, C(77, 5000), C(77, 5000), 0 },
	{ "ahead_1", 16 * KIB, C(0, 0), C(0, 1), 1 },
	{ "ahead_same_wrap", 16 * KIB, C(3, 100), C(3, 16000), 15900 },
	{ "ahead_to_last", 16 * KIB, C(3, 0), C(3, 16 * KIB - 1),
	  16 * KIB - 1 },
	{ "ahead_across_wrap", 16 * KIB, C(3, 16000), C(4, 100), 484 },
	{ "ahead_to_wrap_0", 16 * KIB, C(3, 16 * KIB - 1), C(4, 0), 1 },
	{ "full_ring", 16 * KIB, C(3, 100), C(4, 100), 16 * KIB },
	{ "full_ring_from_0", 16 * KIB, C(0, 0), C(1, 0), 16 * KIB },
	{ "ring_plus_1", 16 * KIB, C(3, 100), C(4, 101), -ERANGE },
	{ "next_wrap_far", 16 * KIB, C(3, 0), C(4, 16 * KIB - 1), -ERANGE },
	{ "two_wraps", 16 * KIB, C(3, 16 * KIB - 1), C(5, 0), -ERANGE },
	{ "far_wraps", 16 * KIB, C(3, 0), C(30000, 0), -ERANGE },
	{ "behind_1", 16 * KIB, C(3, 100), C(3, 99), -ERANGE },
	{ "behind_same_wrap", 16 * KIB, C(3, 16000), C(3, 0), -ERANGE },
	{ "behind_prev_wrap", 16 * KIB, C(4, 10), C(3, 16 * KIB - 1),
	  -ERANGE },
	{ "behind_prev_wrap_same_count", 16 * KIB, C(4, 10), C(3, 10),
	  -ERANGE },
	{ "wrap_overflow_ahead", 16 * KIB, C(65535, 16000), C(0, 100), 484 },
	{ "wrap_overflow_full", 16 * KIB, C(65535, 7), C(0, 7), 16 * KIB },
	{ "wrap_overflow_far", 16 * KIB, C(65535, 7), C(0, 8), -ERANGE },
	{ "wrap_overflow_behind", 16 * KIB, C(0, 100), C(65535, 16000),
	  -ERANGE },
	{ "wrap_overflow_same", 16 * KIB, C(65535, 9), C(65535, 10), 1 },
	{ "npot_across", 1000, C(9, 990), C(10, 5), 15 },
	{ "npot_full", 1000, C(9, 990), C(10, 990), 1000 },
	{ "npot_too_far", 1000, C(9, 990), C(10, 991), -ERANGE },
	{ "ring_1_full", 1, C(0, 0), C(1, 0), 1 },
	{ "ring_1_equal", 1, C(8, 0), C(8, 0), 0 },
	{ "max_ring_full", 0xffffffffU, C(0, 0xfffffffeU), C(1, 0xfffffffeU),
	  0xffffffffLL },
	{ "max_ring_across", 0xffffffffU, C(0, 0xfffffffeU), C(1, 0), 1 },
	{ "new_count_invalid", 16 * KIB, C(0, 0), C(0, 16 * KIB), -EINVAL },
	{ "old_count_invalid", 16 * KIB, C(0, 16 * KIB), C(1, 0), -EINVAL },
	{ "count_u32_max", 16 * KIB, C(0, 0), C(0, 0xffffffffU), -EINVAL },
	{ "npot_count_invalid", 1000, C(0, 999), C(1, 1000), -EINVAL },
	{ "ring_0", 0, C(0, 0), C(0, 0), -EINVAL },
};

static void diff_case_desc(const struct diff_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(diff, diff_cases, diff_case_desc);

static void visock_cursor_diff_test(struct kunit *test)
{
	const struct diff_case *c = test->param_value;
	s64 d = visock_cursor_diff(c->ring, &c->old, &c->new);

	KUNIT_EXPECT_EQ(test, d, c->ret);
	/* visock_ring_used() is diff(cons, prod), saturated at ring. */
	KUNIT_EXPECT_EQ(test, visock_ring_used(c->ring, &c->new, &c->old),
			c->ret < 0 ? c->ring : (u32)c->ret);
}

static void visock_cursor_valid_test(struct kunit *test)
{
	struct visock_cursor c = { .wrap = 65535, .count = 0 };

	KUNIT_EXPECT_TRUE(test, visock_cursor_valid(1, &c));
	KUNIT_EXPECT_FALSE(test, visock_cursor_valid(0, &c));
	c.count = 16 * KIB - 1;
	KUNIT_EXPECT_TRUE(test, visock_cursor_valid(16 * KIB, &c));
	c.count = 16 * KIB;
	KUNIT_EXPECT_FALSE(test, visock_cursor_valid(16 * KIB, &c));
	KUNIT_EXPECT_TRUE(test, visock_cursor_valid(16 * KIB + 1, &c));
	c.count = 0xffffffffU;
	KUNIT_EXPECT_FALSE(test, visock_cursor_valid(0xffffffffU, &c));
	c.count = 0xfffffffeU;
	KUNIT_EXPECT_TRUE(test, visock_cursor_valid(0xffffffffU, &c));
}

static void visock_ring_used_test(struct kunit *test)
{
	struct visock_cursor prod = C(10, 500), cons = C(10, 500);
	const u32 ring = 1000;

	KUNIT_EXPECT_EQ(test, visock_ring_used(ring, &prod, &cons), 0);
	visock_cursor_add(&prod, ring, 499);
	KUNIT_EXPECT_EQ(test, visock_ring_used(ring, &prod, &cons), 499);
	visock_cursor_add(&prod, ring, 1);
	KUNIT_EXPECT_EQ(test, visock_ring_used(ring, &prod, &cons), 500);
	visock_cursor_add(&prod, ring, 500);
	KUNIT_EXPECT_EQ(test, visock_ring_used(ring, &prod, &cons), ring);
	visock_cursor_add(&cons, ring, 700);
	KUNIT_EXPECT_EQ(test, visock_ring_used(ring, &prod, &cons), 300);
	visock_cursor_add(&cons, ring, 300);
	KUNIT_EXPECT_EQ(test, visock_ring_used(ring, &prod, &cons), 0);
	/* Inconsistent: consumer ahead of producer -> reported full. */
	visock_cursor_add(&cons, ring, 1);
	KUNIT_EXPECT_EQ(test, visock_ring_used(ring, &prod, &cons), ring);
	/* Inconsistent: producer more than a ring ahead -> full. */
	prod = (struct visock_cursor)C(12, 600);
	cons = (struct visock_cursor)C(11, 599);
	KUNIT_EXPECT_EQ(test, visock_ring_used(ring, &prod, &cons), ring);
}

static u32 ring_rand(u32 *state)
{
	u32 x = *state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*state = x;
	return x;
}

/*
 * Random producer/consumer walks against a 64-bit shadow position:
 * diff and used must always match the true distance, and a cursor moved
 * further than a ring ahead or behind must always be rejected.
 */
static void visock_cursor_walk_test(struct kunit *test)
{
	static const u32 rings[] = {
		1, 2, 3, 1000, 4097, 16 * KIB, 65537, 8 * MIB, 0xfffffffbU,
	};
	u32 seed = 0x52494e47;
	unsigned int iter;

	for (iter = 0; iter < 10000; iter++) {
		u32 ring = rings[ring_rand(&seed) % ARRAY_SIZE(rings)];
		/* start anywhere, often just before the wrap overflow */
		u16 w0 = (ring_rand(&seed) & 1) ? 65535 - ring_rand(&seed) % 3 :
			 ring_rand(&seed);
		u32 c0 = ring_rand(&seed) % ring;
		struct visock_cursor prod = C(w0, c0), cons = C(w0, c0), x;
		u64 pabs = 0, cabs = 0;
		unsigned int step;

		for (step = 0; step < 8; step++) {
			u32 space = ring - (u32)(pabs - cabs);
			u32 n;

			/* producer writes up to the free space */
			n = space ? ring_rand(&seed) % ((u64)space + 1) : 0;
			visock_cursor_add(&prod, ring, n);
			pabs += n;
			KUNIT_ASSERT_EQ(test, prod.count,
					(u32)((c0 + pabs) % ring));
			KUNIT_ASSERT_EQ(test,
					visock_cursor_diff(ring, &cons, &prod),
					(s64)(pabs - cabs));
			KUNIT_ASSERT_EQ(test,
					visock_ring_used(ring, &prod, &cons),
					(u32)(pabs - cabs));
			if (pabs != cabs)
				KUNIT_ASSERT_LT(test,
						visock_cursor_diff(ring, &prod,
								   &cons),
						0);

			/* a producer one byte beyond a full ring is bogus */
			x = cons;
			visock_cursor_add(&x, ring, ring);
			visock_cursor_add(&x, ring, 1);
			KUNIT_ASSERT_LT(test, visock_cursor_diff(ring, &cons, &x),
					0);

			/* consumer reads part of it */
			n = ring_rand(&seed) % ((pabs - cabs) + 1);
			visock_cursor_add(&cons, ring, n);
			cabs += n;
			KUNIT_ASSERT_EQ(test,
					visock_cursor_diff(ring, &cons, &prod),
					(s64)(pabs - cabs));
		}
		KUNIT_ASSERT_EQ(test, prod.wrap,
				(u16)(w0 + (u16)((c0 + pabs) / ring)));
	}
}

/* ------------------------------------------------------------------ */
/* Consumer cursor update coalescing                                    */
/* ------------------------------------------------------------------ */

struct due_case {
	const char *name;
	u32 ring;
	u32 unconfirmed;
	u32 used;
	bool blocked;
	bool due;
};

/*
 * ring 16 KiB: half 8192, small 4096
 * ring 256 KiB: half 128 KiB, small 64 KiB (the largest small ring)
 * ring 1 MiB:  small 256 KiB, batch 768 KiB (large ring)
 * ring 8 MiB:  small 2 MiB, batch 6 MiB (large ring)
 * ring 4096:   half 2048, small 2048
 * ring 1000:   half 500, small 500
 * ring 1:      half 1, small 1
 */
static const struct due_case due_cases[] = {
	{ "16k_nothing", 16 * KIB, 0, 0, false, false },
	{ "16k_nothing_blocked", 16 * KIB, 0, 16 * KIB, true, false },
	{ "16k_below_small_blocked", 16 * KIB, 4095, 12289, true, false },
	{ "16k_small_blocked", 16 * KIB, 4096, 0, true, true },
	{ "16k_small_free_large", 16 * KIB, 4096, 0, false, false },
	{ "16k_small_free_half", 16 * KIB, 4096, 4096, false, true },
	{ "16k_small_free_half_plus_1", 16 * KIB, 4096, 4095, false, false },
	{ "16k_small_ring_full", 16 * KIB, 4096, 12288, false, true },
	{ "16k_below_half", 16 * KIB, 8191, 0, false, false },
	{ "16k_half", 16 * KIB, 8192, 0, false, true },
	{ "16k_all", 16 * KIB, 16 * KIB, 0, false, true },
	{ "16k_bogus_used", 16 * KIB, 4096, 0xffffffffU, false, true },
	{ "256k_small_free_half", 256 * KIB, 64 * KIB, 64 * KIB, false, true },
	{ "256k_small_free_large", 256 * KIB, 64 * KIB, 63 * KIB, false, false },
	{ "256k_half", 256 * KIB, 128 * KIB, 0, false, true },
	{ "512k_half", 512 * KIB, 256 * KIB, 0, false, false },
	{ "512k_batch", 512 * KIB, 384 * KIB, 0, false, true },
	{ "1m_below_small", MIB, 256 * KIB - 1, 768 * KIB, true, false },
	{ "1m_old_small_ring_full", MIB, 128 * KIB, 896 * KIB, false, false },
	{ "1m_small_blocked", MIB, 256 * KIB, 0, true, true },
	{ "1m_small_free_large", MIB, 256 * KIB, 100 * KIB, false, false },
	{ "1m_small_free_half", MIB, 256 * KIB, 256 * KIB, false, false },
	{ "1m_small_ring_full", MIB, 256 * KIB, 768 * KIB, false, false },
	{ "1m_half", MIB, 512 * KIB, 0, false, false },
	{ "1m_half_ring_full", MIB, 512 * KIB, 512 * KIB, false, false },
	{ "1m_below_batch", MIB, 768 * KIB - 1, 0, false, false },
	{ "1m_below_batch_ring_full", MIB, 768 * KIB - 1, 256 * KIB + 1,
	  false, false },
	{ "1m_batch", MIB, 768 * KIB, 0, false, true },
	{ "1m_batch_ring_full", MIB, 768 * KIB, 256 * KIB, false, true },
	{ "1m_all", MIB, MIB, 0, false, true },
	{ "1m_bogus_used", MIB, 256 * KIB, 0xffffffffU, false, false },
	{ "8m_small_blocked", 8 * MIB, 2 * MIB, 0, true, true },
	{ "8m_below_small_blocked", 8 * MIB, 2 * MIB - 1, 6 * MIB, true, false },
	{ "8m_half", 8 * MIB, 4 * MIB, 0, false, false },
	{ "8m_batch", 8 * MIB, 6 * MIB, 0, false, true },
	{ "8m_4k_blocked", 8 * MIB, 4096, 0, true, false },
	{ "4k_below_small_blocked", 4096, 2047, 2049, true, false },
	{ "4k_half", 4096, 2048, 0, false, true },
	{ "1000_below_half", 1000, 499, 501, true, false },
	{ "1000_half", 1000, 500, 0, false, true },
	{ "ring_1_nothing", 1, 0, 1, true, false },
	{ "ring_1_one", 1, 1, 0, false, true },
};

static void due_case_desc(const struct due_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(due, due_cases, due_case_desc);

static void visock_cons_update_due_test(struct kunit *test)
{
	const struct due_case *c = test->param_value;

	KUNIT_EXPECT_EQ(test,
			visock_cons_update_due(c->ring, c->unconfirmed, c->used,
					       c->blocked),
			c->due);
}

/*
 * Exhaustive check of the documented rule on a few rings, plus the
 * liveness property: an update is never due with nothing to report and
 * always due once half the ring waits to be confirmed.
 */
static void visock_cons_update_rule_test(struct kunit *test)
{
	static const u32 rings[] = { 1, 2, 7, 4096, 5000, 16 * KIB, 40000,
				     256 * KIB, 512 * KIB - 1, 512 * KIB,
				     MIB, 8 * MIB };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(rings); i++) {
		u32 ring = rings[i];
		u32 half = max(ring / 2, 1U);
		u32 small = min(max(ring / 4, 4096U), half);
		bool large = ring >= 512 * KIB;
		u32 step = max(ring / 97, 1U);
		u32 unc, used;

		for (unc = 0; unc <= ring; unc += step) {
			for (used = 0; used <= ring - unc; used += step) {
				u32 free = ring - used - unc;
				bool want_b, want_nb, got_b, got_nb;

				if (large) {
					want_nb = unc >= ring - ring / 4;
					want_b = want_nb || unc >= small;
				} else {
					want_b = unc >= half || unc >= small;
					want_nb = unc >= half ||
						  (unc >= small &&
						   free <= ring / 2);
				}
				got_b = visock_cons_update_due(ring, unc, used,
							       true);
				got_nb = visock_cons_update_due(ring, unc, used,
								false);
				KUNIT_ASSERT_EQ_MSG(test, got_b, want_b,
						    "ring %u unc %u used %u",
						    ring, unc, used);
				KUNIT_ASSERT_EQ_MSG(test, got_nb, want_nb,
						    "ring %u unc %u used %u",
						    ring, unc, used);
				if (!unc)
					KUNIT_ASSERT_FALSE(test, want_b);
				if (unc >= ring / 2 && unc && !large)
					KUNIT_ASSERT_TRUE(test, want_nb);
				if (unc >= ring - ring / 4 && unc)
					KUNIT_ASSERT_TRUE(test, want_nb);
			}
		}
	}
}

/* ------------------------------------------------------------------ */
/* Writer wake-up threshold                                             */
/* ------------------------------------------------------------------ */

static void visock_tx_wake_space_test(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, visock_tx_wake_space(0), 1U);
	KUNIT_EXPECT_EQ(test, visock_tx_wake_space(1), 1U);
	KUNIT_EXPECT_EQ(test, visock_tx_wake_space(7), 1U);
	KUNIT_EXPECT_EQ(test, visock_tx_wake_space(8), 2U);
	KUNIT_EXPECT_EQ(test, visock_tx_wake_space(16 * KIB), 4 * KIB);
	KUNIT_EXPECT_EQ(test, visock_tx_wake_space(64 * KIB), 16 * KIB);
	KUNIT_EXPECT_EQ(test, visock_tx_wake_space(MIB), 256 * KIB);
	KUNIT_EXPECT_EQ(test, visock_tx_wake_space(1U << 31), 1U << 29);
}

static void visock_tx_need_test(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, visock_tx_need(MIB, 0), 1U);
	KUNIT_EXPECT_EQ(test, visock_tx_need(MIB, 1), 1U);
	KUNIT_EXPECT_EQ(test, visock_tx_need(MIB, 64 * KIB), 64 * KIB);
	KUNIT_EXPECT_EQ(test, visock_tx_need(MIB, 256 * KIB), 256 * KIB);
	KUNIT_EXPECT_EQ(test, visock_tx_need(MIB, 256 * KIB + 1), 256 * KIB);
	KUNIT_EXPECT_EQ(test, visock_tx_need(MIB, 1ULL << 40), 256 * KIB);
	KUNIT_EXPECT_EQ(test, visock_tx_need(64 * KIB, 64 * KIB), 16 * KIB);
	KUNIT_EXPECT_EQ(test, visock_tx_need(64 * KIB, 100), 100U);
	KUNIT_EXPECT_EQ(test, visock_tx_need(1, 5), 1U);
}

/*
 * What the writer's rule relies on: a writer that waits (free space
 * below visock_tx_need(), which is at most visock_tx_wake_space()) gets
 * a consumer update without asking for it as soon as the reader consumed
 * enough, and that one update frees what it waits for.
 */
static void visock_tx_wait_released_test(struct kunit *test)
{
	static const u32 rings[] = { 1, 2, 7, 4096, 5000, 16 * KIB, 40000,
				     64 * KIB, 256 * KIB, 512 * KIB, MIB,
				     8 * MIB };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(rings); i++) {
		u32 ring = rings[i];
		u32 step = max(ring / 61, 1U);
		u32 need = visock_tx_wake_space(ring);
		u32 unc, used;

		KUNIT_ASSERT_GE(test, need, 1U);
		for (unc = 0; unc <= ring; unc += step) {
			for (used = 0; used <= ring - unc; used += step) {
				u32 free = ring - used - unc;
				bool due = visock_cons_update_due(ring, unc,
								  used, false);

				if (free >= need)
					continue;
				/* Waiting: released with free + unc. */
				if (due)
					KUNIT_ASSERT_GE_MSG(test, free + unc,
							    need,
							    "ring %u unc %u used %u",
							    ring, unc, used);
				/* Everything read: an update is due. */
				if (!used)
					KUNIT_ASSERT_TRUE_MSG(test, due,
							      "ring %u unc %u",
							      ring, unc);
			}
		}
	}
}

/*
 * A model of one stream: a blocking writer of @wsize-byte writes (as
 * sendmsg() does: waits for visock_tx_need(), then copies all that fits
 * and posts it as one transfer, two when it crosses the ring end) and a
 * reader that reads up to @rsize bytes whenever data is there, sending a
 * consumer update when visock_cons_update_due() says so; the writer
 * never announces that it waits.  Returns the transfers; counts the
 * consumer updates and writer waits.  Fails the test if the stream
 * stops before @total bytes (a deadlock).
 */
struct stream_model {
	u32 ring;
	u32 wsize;
	u32 rsize;
	u64 total;
	bool reader_first;	/* reads whenever it can, else only when full */
	u64 xfers;
	u64 updates;
	u64 waits;
};

static void stream_model_run(struct kunit *test, struct stream_model *m)
{
	u64 written = 0, prod = 0, cons = 0, cons_sent = 0, left = 0;
	u64 steps = 0;
	bool waiting = false;

	while (cons < m->total) {
		u64 space = m->ring - (written - cons_sent);
		bool moved = false;
		u32 n;

		KUNIT_ASSERT_LT_MSG(test, steps++, 100ULL * m->total,
				    "ring %u: no progress", m->ring);
		if (!left && written < m->total)
			left = min_t(u64, m->wsize, m->total - written);
		/* Writer. */
		if (left && space >= visock_tx_need(m->ring, left)) {
			n = min_t(u64, space, left);
			m->xfers += (written % m->ring) + n > m->ring ? 2 : 1;
			written += n;
			left -= n;
			prod = written;
			waiting = false;
			moved = true;
		} else if (left && !waiting) {
			waiting = true;
			m->waits++;
		}
		/* Reader: when asked to read eagerly, or the writer is stuck. */
		if (prod > cons && (m->reader_first || !moved)) {
			n = min_t(u64, m->rsize, prod - cons);
			cons += n;
			moved = true;
		}
		if (cons > cons_sent &&
		    visock_cons_update_due(m->ring, cons - cons_sent,
					   prod - cons, false)) {
			cons_sent = cons;
			m->updates++;
			moved = true;
		}
		KUNIT_ASSERT_TRUE_MSG(test, moved,
				      "ring %u wsize %u rsize %u: stuck at %llu of %llu (written %llu, confirmed %llu)",
				      m->ring, m->wsize, m->rsize, cons,
				      m->total, written, cons_sent);
	}
}

static void visock_stream_model_test(struct kunit *test)
{
	static const u32 rings[] = { 4096, 16 * KIB, 64 * KIB, 512 * KIB, MIB };
	static const u32 sizes[] = { 1, 100, 4096, 64 * KIB, 300 * KIB };
	unsigned int r, w, q;

	for (r = 0; r < ARRAY_SIZE(rings); r++)
		for (w = 0; w < ARRAY_SIZE(sizes); w++)
			for (q = 0; q < ARRAY_SIZE(sizes); q++) {
				struct stream_model m = {
					.ring = rings[r],
					.wsize = sizes[w],
					.rsize = sizes[q],
					.total = 4ULL * rings[r] + 12345,
					.reader_first = (w + q) & 1,
				};

				/* Byte by byte: a shorter stream. */
				if (sizes[w] == 1 || sizes[q] == 1)
					m.total = min_t(u64, m.total,
							128 * KIB + 123);
				stream_model_run(test, &m);
			}
}

/*
 * 64 KiB writes into a 1 MiB ring: one transfer per write, and a reader
 * that reads 64 KiB at a time sends a consumer update per three quarters
 * of the ring (4 per 3 MiB), not per read, whether it reads only after
 * the writer filled the ring or whenever there is data: with the
 * writer's one transfer per write, 1 + 1/12 work requests per write
 * (credit returns, not modelled here, come on top).
 */
static void visock_stream_model_1m_test(struct kunit *test)
{
	struct stream_model m = {
		.ring = MIB, .wsize = 64 * KIB, .rsize = 64 * KIB,
		.total = 48ULL * MIB,
	};

	stream_model_run(test, &m);
	KUNIT_EXPECT_EQ(test, m.xfers, m.total / m.wsize);
	KUNIT_EXPECT_LE(test, m.updates, 4 * 16ULL + 1);
	KUNIT_EXPECT_LE(test, m.waits, 4 * 16ULL + 1);
	KUNIT_EXPECT_LE(test, (m.xfers + m.updates) * 10,
			m.total / m.wsize * 11);

	m = (struct stream_model){
		.ring = MIB, .wsize = 64 * KIB, .rsize = 64 * KIB,
		.total = 48ULL * MIB, .reader_first = true,
	};
	stream_model_run(test, &m);
	KUNIT_EXPECT_EQ(test, m.xfers, m.total / m.wsize);
	KUNIT_EXPECT_LE(test, m.updates, 4 * 16ULL + 1);
	KUNIT_EXPECT_LE(test, (m.xfers + m.updates) * 10,
			m.total / m.wsize * 11);
}

static struct kunit_case visock_ring_test_cases[] = {
	KUNIT_CASE_PARAM(visock_sizeclass_for_test, sc_gen_params),
	KUNIT_CASE(visock_sizeclass_bytes_test),
	KUNIT_CASE_PARAM(visock_cursor_add_test, add_gen_params),
	KUNIT_CASE_PARAM(visock_cursor_diff_test, diff_gen_params),
	KUNIT_CASE(visock_cursor_valid_test),
	KUNIT_CASE(visock_ring_used_test),
	KUNIT_CASE(visock_cursor_walk_test),
	KUNIT_CASE_PARAM(visock_cons_update_due_test, due_gen_params),
	KUNIT_CASE(visock_cons_update_rule_test),
	KUNIT_CASE(visock_tx_wake_space_test),
	KUNIT_CASE(visock_tx_need_test),
	KUNIT_CASE(visock_tx_wait_released_test),
	KUNIT_CASE(visock_stream_model_test),
	KUNIT_CASE(visock_stream_model_1m_test),
	{}
};

static struct kunit_suite visock_ring_test_suite = {
	.name = "visock_ring",
	.test_cases = visock_ring_test_cases,
};

kunit_test_suite(visock_ring_test_suite);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit tests of the visock ring arithmetic");
