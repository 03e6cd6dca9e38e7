// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the visock cursor message and immediate data codec
 * (visock_cdc_codec.c).
 */

#include <kunit/test.h>
#include <linux/module.h>
#include <linux/string.h>
#include <linux/visock.h>

#include "../visock_wire.h"

static const struct visock_cdc sample = {
	.token = 0x12345679,
	.seq = 0xfffffffe,
	.prod = { .wrap = 0xfffe, .count = 0x0000fff0 },
	.cons = { .wrap = 0x0102, .count = 0x00030405 },
	.credits = 63,
	.flags = VISOCK_CDC_F_WRITE_BLOCKED | VISOCK_CDC_F_DONE_WRITING,
};

/* The exact bytes of @sample: the wire format is fixed. */
static const u8 sample_wire[VISOCK_CDC_LEN] = {
	0xc5, 0x01, 0x03, 0x00,
	0x12, 0x34, 0x56, 0x79,
	0xff, 0xff, 0xff, 0xfe,
	0xff, 0xfe, 0x01, 0x02,
	0x00, 0x00, 0xff, 0xf0,
	0x00, 0x03, 0x04, 0x05,
	0x00, 0x3f, 0, 0, 0, 0, 0, 0,
};

static void cdc_encode_layout_test(struct kunit *test)
{
	u8 buf[VISOCK_CDC_LEN + 4];

	memset(buf, 0xaa, sizeof(buf));
	KUNIT_ASSERT_EQ(test, visock_cdc_encode(&sample, buf, sizeof(buf)),
			VISOCK_CDC_LEN);
	KUNIT_EXPECT_MEMEQ(test, buf, sample_wire, VISOCK_CDC_LEN);
	/* Nothing written beyond the message. */
	KUNIT_EXPECT_EQ(test, buf[VISOCK_CDC_LEN], 0xaa);
}

static void cdc_roundtrip_test(struct kunit *test)
{
	struct visock_cdc m = { };
	u8 buf[VISOCK_CDC_LEN];
	u8 f;

	for (f = 0; f <= VISOCK_CDC_F_ALL; f++) {
		struct visock_cdc in = sample;

		in.flags = f;
		KUNIT_ASSERT_EQ(test, visock_cdc_encode(&in, buf, sizeof(buf)),
				VISOCK_CDC_LEN);
		KUNIT_ASSERT_EQ(test, visock_cdc_decode(buf, sizeof(buf), &m), 0);
		KUNIT_EXPECT_EQ(test, m.token, in.token);
		KUNIT_EXPECT_EQ(test, m.seq, in.seq);
		KUNIT_EXPECT_EQ(test, m.prod.wrap, in.prod.wrap);
		KUNIT_EXPECT_EQ(test, m.prod.count, in.prod.count);
		KUNIT_EXPECT_EQ(test, m.cons.wrap, in.cons.wrap);
		KUNIT_EXPECT_EQ(test, m.cons.count, in.cons.count);
		KUNIT_EXPECT_EQ(test, m.credits, in.credits);
		KUNIT_EXPECT_EQ(test, m.flags, f);
	}
}

static void cdc_encode_reject_test(struct kunit *test)
{
	struct visock_cdc m = sample;
	u8 buf[VISOCK_CDC_LEN];

	KUNIT_EXPECT_EQ(test, visock_cdc_encode(&m, buf, VISOCK_CDC_LEN - 1),
			-EINVAL);
	m.flags = 0x10;
	KUNIT_EXPECT_EQ(test, visock_cdc_encode(&m, buf, sizeof(buf)), -EINVAL);
	m = sample;
	m.token = 0;
	KUNIT_EXPECT_EQ(test, visock_cdc_encode(&m, buf, sizeof(buf)), -EINVAL);
}

static void cdc_decode_reject_test(struct kunit *test)
{
	struct visock_cdc m;
	u8 buf[VISOCK_CDC_LEN + 1];
	unsigned int i;

	memcpy(buf, sample_wire, VISOCK_CDC_LEN);
	KUNIT_EXPECT_EQ(test, visock_cdc_decode(buf, VISOCK_CDC_LEN, &m), 0);
	/* Wrong lengths. */
	KUNIT_EXPECT_EQ(test, visock_cdc_decode(buf, 0, &m), -EBADMSG);
	KUNIT_EXPECT_EQ(test, visock_cdc_decode(buf, VISOCK_CDC_LEN - 1, &m),
			-EBADMSG);
	buf[VISOCK_CDC_LEN] = 0;
	KUNIT_EXPECT_EQ(test, visock_cdc_decode(buf, VISOCK_CDC_LEN + 1, &m),
			-EBADMSG);

	/* Every byte of the header and of the reserved tail matters. */
	for (i = 0; i < VISOCK_CDC_LEN; i++) {
		bool must_fail = i <= 1 || i == 3 || i >= 26;

		if (!must_fail)
			continue;
		memcpy(buf, sample_wire, VISOCK_CDC_LEN);
		buf[i] ^= 0x40;
		KUNIT_EXPECT_EQ_MSG(test,
				    visock_cdc_decode(buf, VISOCK_CDC_LEN, &m),
				    -EBADMSG, "byte %u", i);
	}
	/* Unknown flag. */
	memcpy(buf, sample_wire, VISOCK_CDC_LEN);
	buf[2] |= 0x80;
	KUNIT_EXPECT_EQ(test, visock_cdc_decode(buf, VISOCK_CDC_LEN, &m),
			-EBADMSG);
	/* Zero token. */
	memcpy(buf, sample_wire, VISOCK_CDC_LEN);
	memset(buf + 4, 0, 4);
	KUNIT_EXPECT_EQ(test, visock_cdc_decode(buf, VISOCK_CDC_LEN, &m),
			-EBADMSG);
}

static void cdc_seq_test(struct kunit *test)
{
	KUNIT_EXPECT_TRUE(test, visock_cdc_seq_after(1, 0));
	KUNIT_EXPECT_FALSE(test, visock_cdc_seq_after(0, 0));
	KUNIT_EXPECT_FALSE(test, visock_cdc_seq_after(5, 6));
	KUNIT_EXPECT_TRUE(test, visock_cdc_seq_after(0, 0xffffffff));
	KUNIT_EXPECT_TRUE(test, visock_cdc_seq_after(0x7fffffff, 0));
	KUNIT_EXPECT_FALSE(test, visock_cdc_seq_after(0x80000000, 0));
}

static void imm_test(struct kunit *test)
{
	u32 imm, idx, bytes, credits;

	KUNIT_ASSERT_EQ(test, visock_imm_encode(3, 65536, 5, &imm), 0);
	KUNIT_EXPECT_EQ(test, imm, 0x0035ffffU);
	visock_imm_decode(imm, &idx, &bytes, &credits);
	KUNIT_EXPECT_EQ(test, idx, 3U);
	KUNIT_EXPECT_EQ(test, bytes, 65536U);
	KUNIT_EXPECT_EQ(test, credits, 5U);

	KUNIT_ASSERT_EQ(test, visock_imm_encode(VISOCK_TOKEN_IDX_MASK, 1,
						VISOCK_IMM_CREDITS_MAX, &imm),
			0);
	KUNIT_EXPECT_EQ(test, imm, 0xffff0000U);
	visock_imm_decode(imm, &idx, &bytes, &credits);
	KUNIT_EXPECT_EQ(test, idx, VISOCK_TOKEN_IDX_MASK);
	KUNIT_EXPECT_EQ(test, bytes, 1U);
	KUNIT_EXPECT_EQ(test, credits, VISOCK_IMM_CREDITS_MAX);

	/* Every field bound. */
	KUNIT_EXPECT_EQ(test, visock_imm_encode(0, 1, 0, &imm), -EINVAL);
	KUNIT_EXPECT_EQ(test, visock_imm_encode(VISOCK_TOKEN_IDX_MASK + 1, 1,
						0, &imm), -EINVAL);
	KUNIT_EXPECT_EQ(test, visock_imm_encode(1, 0, 1, &imm), -EINVAL);
	KUNIT_EXPECT_EQ(test, visock_imm_encode(1, VISOCK_IMM_LEN_MAX + 1, 0,
						&imm), -EINVAL);
	KUNIT_EXPECT_EQ(test, visock_imm_encode(1, 1,
						VISOCK_IMM_CREDITS_MAX + 1,
						&imm), -EINVAL);

	/* Any 32 bits decode to in-range values; index 0 names nobody. */
	visock_imm_decode(0, &idx, &bytes, &credits);
	KUNIT_EXPECT_EQ(test, idx, 0U);
	KUNIT_EXPECT_EQ(test, bytes, 1U);
	KUNIT_EXPECT_EQ(test, credits, 0U);
}

/* Link messages and the dispatch peek. */
static void ctl_peek_test(struct kunit *test)
{
	struct visock_cdc m = { .token = 0x12345001, .seq = 1 };
	u8 buf[VISOCK_CDC_LEN + 4];
	u8 type;
	u32 val;

	KUNIT_ASSERT_EQ(test, visock_cdc_encode(&m, buf, sizeof(buf)),
			VISOCK_CDC_LEN);
	KUNIT_ASSERT_EQ(test, visock_ctl_peek(buf, VISOCK_CDC_LEN, &type, &val),
			0);
	KUNIT_EXPECT_EQ(test, type, VISOCK_CDC_TYPE);
	KUNIT_EXPECT_EQ(test, val, 0x12345001U);
	KUNIT_EXPECT_EQ(test, visock_ctl_peek(buf, VISOCK_CDC_LEN - 1, &type,
					      &val), -EBADMSG);

	/* A switch reply goes to the connection its token names. */
	{
		struct visock_swrep r = { .token = 0x12346002, .reason = 9 };

		KUNIT_ASSERT_EQ(test, visock_swrep_encode(&r, buf, sizeof(buf)),
				VISOCK_CDC_LEN);
		KUNIT_ASSERT_EQ(test, visock_ctl_peek(buf, VISOCK_CDC_LEN,
						      &type, &val), 0);
		KUNIT_EXPECT_EQ(test, type, VISOCK_SWREP_TYPE);
		KUNIT_EXPECT_EQ(test, val, 0x12346002U);
	}

	KUNIT_EXPECT_EQ(test, visock_link_msg_encode(VISOCK_LINK_MSG_DELETE,
						     buf, VISOCK_CDC_LEN - 1),
			-ENOSPC);
	KUNIT_ASSERT_EQ(test, visock_link_msg_encode(VISOCK_LINK_MSG_DELETE,
						     buf, sizeof(buf)),
			VISOCK_CDC_LEN);
	KUNIT_ASSERT_EQ(test, visock_ctl_peek(buf, VISOCK_CDC_LEN, &type, &val),
			0);
	KUNIT_EXPECT_EQ(test, type, VISOCK_LINK_MSG_TYPE);
	KUNIT_EXPECT_EQ(test, val, (u32)VISOCK_LINK_MSG_DELETE);
	/* The keepalive, and a code from a later version: passed on as is. */
	KUNIT_ASSERT_EQ(test, visock_link_msg_encode(VISOCK_LINK_MSG_KEEPALIVE,
						     buf, sizeof(buf)),
			VISOCK_CDC_LEN);
	KUNIT_ASSERT_EQ(test, visock_ctl_peek(buf, VISOCK_CDC_LEN, &type, &val),
			0);
	KUNIT_EXPECT_EQ(test, type, VISOCK_LINK_MSG_TYPE);
	KUNIT_EXPECT_EQ(test, val, (u32)VISOCK_LINK_MSG_KEEPALIVE);
	buf[2] = 0xff;
	KUNIT_ASSERT_EQ(test, visock_ctl_peek(buf, VISOCK_CDC_LEN, &type, &val),
			0);
	KUNIT_EXPECT_EQ(test, val, 0xffU);
	KUNIT_ASSERT_EQ(test, visock_link_msg_encode(VISOCK_LINK_MSG_DELETE,
						     buf, sizeof(buf)),
			VISOCK_CDC_LEN);
	/* Reserved bytes, a zero code, another version, another type. */
	buf[9] = 1;
	KUNIT_EXPECT_EQ(test, visock_ctl_peek(buf, VISOCK_CDC_LEN, &type, &val),
			-EBADMSG);
	buf[9] = 0;
	buf[2] = 0;
	KUNIT_EXPECT_EQ(test, visock_ctl_peek(buf, VISOCK_CDC_LEN, &type, &val),
			-EBADMSG);
	buf[2] = VISOCK_LINK_MSG_DELETE;
	buf[1] = VISOCK_CDC_VERSION + 1;
	KUNIT_EXPECT_EQ(test, visock_ctl_peek(buf, VISOCK_CDC_LEN, &type, &val),
			-EBADMSG);
	buf[1] = VISOCK_CDC_VERSION;
	buf[0] = 0x77;
	KUNIT_EXPECT_EQ(test, visock_ctl_peek(buf, VISOCK_CDC_LEN, &type, &val),
			-EBADMSG);
}

/* Failover message: layout, round trip, every malformed shape refused. */
static void fo_test(struct kunit *test)
{
	static const u8 want[VISOCK_FO_LEN] = {
		0xf0, 0x01, 0x00, 0x00, 0x56, 0x53, 0x4b, 0x46,
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
	};
	u8 buf[VISOCK_FO_LEN + 1];
	u64 pos = 0;
	unsigned int i;

	visock_fo_encode(0x0102030405060708ULL, buf);
	KUNIT_EXPECT_EQ(test, memcmp(buf, want, VISOCK_FO_LEN), 0);
	KUNIT_EXPECT_EQ(test, visock_fo_decode(buf, VISOCK_FO_LEN, &pos), 0);
	KUNIT_EXPECT_EQ(test, pos, 0x0102030405060708ULL);

	visock_fo_encode(0, buf);
	KUNIT_EXPECT_EQ(test, visock_fo_decode(buf, VISOCK_FO_LEN, &pos), 0);
	KUNIT_EXPECT_EQ(test, pos, 0ULL);

	/* Short, long. */
	KUNIT_EXPECT_EQ(test, visock_fo_decode(buf, VISOCK_FO_LEN - 1, &pos),
			-EBADMSG);
	buf[VISOCK_FO_LEN] = 0;
	KUNIT_EXPECT_EQ(test, visock_fo_decode(buf, VISOCK_FO_LEN + 1, &pos),
			-EBADMSG);
	/* Any changed byte of the header is refused; rx_pos is free. */
	for (i = 0; i < 8; i++) {
		visock_fo_encode(7, buf);
		buf[i] ^= 0x01;
		KUNIT_EXPECT_EQ_MSG(test,
				    visock_fo_decode(buf, VISOCK_FO_LEN, &pos),
				    -EBADMSG, "byte %u", i);
	}
}

static void swrep_accept(struct visock_swrep *m)
{
	memset(m, 0, sizeof(*m));
	m->token = 0x11223344;
	m->flags = VISOCK_SWREP_F_ACCEPT | VISOCK_SWREP_F_OWN_REQ;
	m->rbuf_class = 9;
	m->rtoken = 0x55667001;
	m->rbuf_addr = 0x0102030405060708ULL;
	m->rbuf_rkey = 0x8899aabb;
	m->pos = 0xccddeeff;
}

/* Case @i of the replies nobody may send. */
#define SWREP_BAD_CASES 9
static void swrep_bad(struct visock_swrep *b, unsigned int i)
{
	swrep_accept(b);
	switch (i) {
	case 0:
		b->token = 0;
		break;
	case 1:
		b->flags |= 0x10;
		break;
	case 2:
		b->rbuf_class = VISOCK_SIZECLASS_COUNT;
		break;
	case 3:
		b->rtoken = 0x55667000;
		break;
	case 4:
		b->reason = 1;
		break;
	case 8:
		/* A tag without the flag that says it is one. */
		b->tag = 1;
		break;
	default:
		/* Declined ones: no reason, too large a one, a flag. */
		memset(b, 0, sizeof(*b));
		b->token = 1;
		b->reason = i == 5 ? 0 : i == 6 ? VISOCK_FB_MAX + 1 : 9;
		if (i == 7)
			b->flags = VISOCK_SWREP_F_DONE;
		break;
	}
}

/* Switch replies: layout, both kinds, and what is refused. */
static void swrep_test(struct kunit *test)
{
	static const u8 want[VISOCK_CDC_LEN] = {
		0xc7, 1, 0x03, 9, 0x11, 0x22, 0x33, 0x44,
		0x55, 0x66, 0x70, 0x01, 1, 2, 3, 4,
		5, 6, 7, 8, 0x88, 0x99, 0xaa, 0xbb,
		0xcc, 0xdd, 0xee, 0xff, 0, 0, 0, 0,
	};
	struct visock_swrep m, out;
	u8 buf[VISOCK_CDC_LEN + 1];
	unsigned int i, bit;

	swrep_accept(&m);
	memset(buf, 0xa5, sizeof(buf));
	KUNIT_ASSERT_EQ(test, visock_swrep_encode(&m, buf, sizeof(buf)),
			VISOCK_CDC_LEN);
	KUNIT_EXPECT_EQ(test, memcmp(buf, want, VISOCK_CDC_LEN), 0);
	KUNIT_EXPECT_EQ(test, buf[VISOCK_CDC_LEN], 0xa5);
	KUNIT_ASSERT_EQ(test, visock_swrep_decode(buf, VISOCK_CDC_LEN, &out), 0);
	KUNIT_EXPECT_EQ(test, memcmp(&m, &out, sizeof(m)), 0);
	KUNIT_EXPECT_EQ(test, visock_swrep_decode(buf, VISOCK_CDC_LEN - 1,
						  &out), -EBADMSG);
	KUNIT_EXPECT_EQ(test, visock_swrep_decode(buf, VISOCK_CDC_LEN + 1,
						  &out), -EBADMSG);
	KUNIT_EXPECT_EQ(test, visock_swrep_encode(&m, buf, VISOCK_CDC_LEN - 1),
			-EINVAL);

	/* Authenticated: the tag where a decline has its reason. */
	m.flags |= VISOCK_SWREP_F_AUTH;
	m.tag = 0xdeadbeef;
	KUNIT_ASSERT_EQ(test, visock_swrep_encode(&m, buf, sizeof(buf)),
			VISOCK_CDC_LEN);
	KUNIT_EXPECT_EQ(test, buf[2], 0x0b);
	KUNIT_EXPECT_EQ(test, memcmp(buf + VISOCK_SWREP_TAG_OFF,
				     "\xde\xad\xbe\xef", 4), 0);
	KUNIT_ASSERT_EQ(test, visock_swrep_decode(buf, VISOCK_CDC_LEN, &out), 0);
	KUNIT_EXPECT_EQ(test, memcmp(&m, &out, sizeof(m)), 0);

	/* Declined: a reason and the token, nothing else. */
	memset(&m, 0, sizeof(m));
	m.token = 0x11223344;
	m.reason = VISOCK_FB_BUF_EXHAUSTED;
	KUNIT_ASSERT_EQ(test, visock_swrep_encode(&m, buf, sizeof(buf)),
			VISOCK_CDC_LEN);
	KUNIT_ASSERT_EQ(test, visock_swrep_decode(buf, VISOCK_CDC_LEN, &out), 0);
	KUNIT_EXPECT_EQ(test, memcmp(&m, &out, sizeof(m)), 0);
	for (i = 2; i < VISOCK_CDC_LEN; i++) {
		if (i >= 4 && i < 8)
			continue;	/* the token */
		for (bit = 0; bit < 8; bit++) {
			u8 b[VISOCK_CDC_LEN];
			int ret;

			visock_swrep_encode(&m, b, sizeof(b));
			b[i] ^= 1 << bit;
			ret = visock_swrep_decode(b, sizeof(b), &out);
			/* Only other valid reasons pass. */
			if (i >= 28 && ret == 0) {
				KUNIT_EXPECT_NE(test, out.reason, 0U);
				KUNIT_EXPECT_LE(test, out.reason,
						(u32)VISOCK_FB_MAX);
				continue;
			}
			KUNIT_EXPECT_EQ_MSG(test, ret, -EBADMSG,
					    "byte %u bit %u", i, bit);
			KUNIT_EXPECT_EQ(test, out.token, 0U);
		}
	}

	/* Refused either way. */
	for (i = 0; i < SWREP_BAD_CASES; i++) {
		struct visock_swrep b;

		swrep_bad(&b, i);
		KUNIT_EXPECT_EQ_MSG(test, visock_swrep_encode(&b, buf,
							      sizeof(buf)),
				    -EINVAL, "case %u", i);
	}
	/* Other types and versions. */
	swrep_accept(&m);
	visock_swrep_encode(&m, buf, sizeof(buf));
	buf[0] = VISOCK_CDC_TYPE;
	KUNIT_EXPECT_EQ(test, visock_swrep_decode(buf, VISOCK_CDC_LEN, &out),
			-EBADMSG);
	buf[0] = VISOCK_SWREP_TYPE;
	buf[1] = 2;
	KUNIT_EXPECT_EQ(test, visock_swrep_decode(buf, VISOCK_CDC_LEN, &out),
			-EBADMSG);
}

static void switch_pos_test(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, visock_switch_pos(0, 0), 0ULL);
	KUNIT_EXPECT_EQ(test, visock_switch_pos(100, 100), 100ULL);
	KUNIT_EXPECT_EQ(test, visock_switch_pos(100, 4196), 4196ULL);
	KUNIT_EXPECT_EQ(test, visock_switch_pos(0xfffffff0ULL, 0x10),
			0x100000010ULL);
	KUNIT_EXPECT_EQ(test, visock_switch_pos(0x3fffffff0ULL, 0xfffffff8),
			0x3fffffff8ULL);
	/* Behind @near: far ahead, which the caller refuses. */
	KUNIT_EXPECT_EQ(test, visock_switch_pos(100, 99), 0x100000063ULL);
}

static struct kunit_case visock_cdc_codec_test_cases[] = {
	KUNIT_CASE(cdc_encode_layout_test),
	KUNIT_CASE(cdc_roundtrip_test),
	KUNIT_CASE(cdc_encode_reject_test),
	KUNIT_CASE(cdc_decode_reject_test),
	KUNIT_CASE(cdc_seq_test),
	KUNIT_CASE(imm_test),
	KUNIT_CASE(ctl_peek_test),
	KUNIT_CASE(fo_test),
	KUNIT_CASE(swrep_test),
	KUNIT_CASE(switch_pos_test),
	{}
};

static struct kunit_suite visock_cdc_codec_test_suite = {
	.name = "visock_cdc_codec",
	.test_cases = visock_cdc_codec_test_cases,
};

kunit_test_suite(visock_cdc_codec_test_suite);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit tests of the visock cursor message codec");
