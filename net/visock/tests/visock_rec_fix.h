/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A sending and a receiving record context over one ring, shared by the
 * KUnit suites of the record layer.  Use rec_init() and rec_exit() as
 * the suite's init and exit.
 */
#ifndef _VISOCK_REC_FIX_H
#define _VISOCK_REC_FIX_H

#include <kunit/test.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "../visock_record.h"
#include "../visock_xform.h"

#define RING_SIZE	8192
#define MAX_PAYLOAD	4096

struct rec_fix {
	struct visock_rec_ctx tx, rx;
	u8 *ring;		/* RING_SIZE */
	u8 *in;			/* MAX_PAYLOAD */
	u8 *out;		/* MAX_PAYLOAD */
	struct scatterlist rsg[2], isg[1], osg[2];
	unsigned int rn;
};

static const u8 rec_salt[VISOCK_XFORM_IV_LEN] = {
	0x70, 0x71, 0x72, 0x73, 0x74, 0x75, 0x76, 0x77,
	0x78, 0x79, 0x7a, 0x7b,
};

static inline void rec_exit(struct kunit *test)
{
	struct rec_fix *f = test->priv;

	if (f) {
		visock_rec_destroy(&f->tx);
		visock_rec_destroy(&f->rx);
	}
}

static inline int rec_init(struct kunit *test)
{
	struct rec_fix *f;
	unsigned int i;

	f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	f->ring = kunit_kzalloc(test, RING_SIZE, GFP_KERNEL);
	f->in = kunit_kzalloc(test, MAX_PAYLOAD, GFP_KERNEL);
	f->out = kunit_kzalloc(test, MAX_PAYLOAD, GFP_KERNEL);
	if (!f->ring || !f->in || !f->out)
		return -ENOMEM;
	for (i = 0; i < MAX_PAYLOAD; i++)
		f->in[i] = i * 7 + 3;
	test->priv = f;
	return 0;
}

/* Both directions' contexts for @xform, with the same key and salt. */
static inline void rec_setup(struct kunit *test, unsigned int xform)
{
	struct rec_fix *f = test->priv;
	u8 key[VISOCK_XFORM_MAX_KEY];
	unsigned int i, klen = visock_xform_get(xform)->key_size;

	for (i = 0; i < sizeof(key); i++)
		key[i] = 0x40 + i;
	visock_rec_destroy(&f->tx);
	visock_rec_destroy(&f->rx);
	KUNIT_ASSERT_EQ(test, visock_rec_init(&f->tx, xform, key, klen,
					      rec_salt, MAX_PAYLOAD), 0);
	KUNIT_ASSERT_EQ(test, visock_rec_init(&f->rx, xform, key, klen,
					      rec_salt, MAX_PAYLOAD), 0);
}

/*
 * The record's place in the ring: @at bytes from its start, wrapping to
 * the start after RING_SIZE (two entries), @len bytes long.
 */
static inline void rec_place(struct rec_fix *f, unsigned int at,
			     unsigned int len)
{
	sg_init_table(f->rsg, 2);
	if (at + len <= RING_SIZE) {
		sg_init_one(f->rsg, f->ring + at, len);
		f->rn = 1;
		return;
	}
	sg_set_buf(&f->rsg[0], f->ring + at, RING_SIZE - at);
	sg_set_buf(&f->rsg[1], f->ring, at + len - RING_SIZE);
	f->rn = 2;
}

/* Byte @i of the record placed at @at. */
static inline u8 *rec_byte(struct rec_fix *f, unsigned int at, unsigned int i)
{
	return f->ring + (at + i) % RING_SIZE;
}

static inline int rec_seal(struct rec_fix *f, unsigned int at,
			   unsigned int len, u8 flags)
{
	unsigned int total = len + visock_rec_overhead(&f->tx);

	rec_place(f, at, total);
	sg_init_one(f->isg, f->in, len ? len : 1);
	return visock_rec_seal(&f->tx, flags, f->isg, 1, len, f->rsg, f->rn,
			       total);
}

/* Open the record at @at, of which @avail bytes have arrived. */
static inline int rec_open(struct rec_fix *f, unsigned int at,
			   unsigned int avail, unsigned int *plen, u8 *flags)
{
	rec_place(f, at, avail ? avail : 1);
	/* The destination is split too: the copy-out may cross pages. */
	sg_init_table(f->osg, 2);
	sg_set_buf(&f->osg[0], f->out, 100);
	sg_set_buf(&f->osg[1], f->out + 100, MAX_PAYLOAD - 100);
	return visock_rec_open(&f->rx, f->rsg, f->rn, avail, f->osg, 2,
			       MAX_PAYLOAD, plen, flags);
}

static inline bool all_bytes(const u8 *p, u8 v, unsigned int len)
{
	while (len--)
		if (*p++ != v)
			return false;
	return true;
}

/* Every byte is @a or @b: wiped, or never written. */
static inline bool only_bytes(const u8 *p, u8 a, u8 b,
			      unsigned int len)
{
	for (; len--; p++)
		if (*p != a && *p != b)
			return false;
	return true;
}

/*
 * Change byte @i of the sealed record at @at, check that opening it
 * fails with @err and delivers nothing, then restore it and check that
 * the failure changed no state: the genuine record still opens.
 */
static inline void rec_expect_reject(struct kunit *test, unsigned int at,
				     unsigned int total, unsigned int i,
				     u8 xor, int err, const char *what)
{
	struct rec_fix *f = test->priv;
	unsigned int plen = 12345;
	u64 seq = f->rx.seq;
	u8 flags = 0x55;

	*rec_byte(f, at, i) ^= xor;
	memset(f->out, 0xaa, MAX_PAYLOAD);
	KUNIT_EXPECT_EQ_MSG(test, rec_open(f, at, total, &plen, &flags), err,
			    "%s (xform %u)", what, f->rx.xf->id);
	KUNIT_EXPECT_EQ(test, f->rx.seq, seq);
	KUNIT_EXPECT_EQ(test, plen, 12345);
	KUNIT_EXPECT_EQ(test, flags, 0x55);
	/* Not one byte of the payload: wiped, or never written. */
	KUNIT_EXPECT_TRUE_MSG(test, only_bytes(f->out, 0, 0xaa, 300), "%s",
			      what);
	KUNIT_EXPECT_MEMNEQ(test, f->out, f->in, 300);
	*rec_byte(f, at, i) ^= xor;
}

#endif /* _VISOCK_REC_FIX_H */
