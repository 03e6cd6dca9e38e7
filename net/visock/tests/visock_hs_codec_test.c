// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the visock handshake message codec (visock_hs_codec.c).
 *
 * Messages are built either with the codec's encoder or with a small,
 * independent builder below that does no validation, so that the decoder
 * can be fed anything and the encoder's byte layout can be cross-checked.
 */

#include <kunit/test.h>
#include <linux/module.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include <linux/visock.h>

#include "../visock_wire.h"

#define BUF_SIZE	1024
#define TLV_LAST	VISOCK_TLV_AUTH
/* TLVs of a fixed size: AUTH may grow in later versions. */
#define TLV_FIXED_LAST	VISOCK_TLV_REASON
/* Every TLV but AUTH, whose MAC visock_auth_test.c covers. */
#define HSF_ALL		(((1U << (TLV_LAST + 1)) - 1) & ~1U & \
			 ~VISOCK_HSF(VISOCK_TLV_AUTH))
#define HSF_SETUP	(HSF_ALL & ~VISOCK_HSF(VISOCK_TLV_REASON))

/* Value size of the known TLV types, written down independently here. */
static const unsigned int tlv_size[TLV_LAST + 1] = {
	0, 8, 16, 4, 4, 1, 16, 4, 8, 4, 56
};

static const u32 required[] = {
	0,
	HSF_SETUP,				/* REQ */
	HSF_SETUP,				/* REP */
	VISOCK_HSF(VISOCK_TLV_TOKEN),		/* CONFIRM */
	VISOCK_HSF(VISOCK_TLV_REASON),		/* DECLINE */
	HSF_SETUP,				/* SWITCH */
};

/* ------------------------------------------------------------------ */
/* Helpers                                                              */
/* ------------------------------------------------------------------ */

struct hsb {
	u8 b[BUF_SIZE];
	unsigned int len;
};

static void put_be(u8 *p, unsigned int n, u64 v)
{
	while (n--) {
		p[n] = v & 0xff;
		v >>= 8;
	}
}

static void hsb_start(struct hsb *h, unsigned int type, unsigned int version)
{
	memset(h->b, 0, sizeof(h->b));
	put_be(h->b, 4, VISOCK_HS_MAGIC);
	h->b[4] = type;
	h->b[5] = version;
	h->len = VISOCK_HS_HDR_LEN;
}

/* Set the header length field to the current length. */
static void hsb_fix(struct hsb *h)
{
	put_be(h->b + 6, 2, h->len);
}

/*
 * Append a TLV; @v is stored big-endian right-aligned in the last
 * min(@vlen, 8) value bytes, any bytes before that are 0.
 */
static void hsb_tlv(struct hsb *h, unsigned int type, unsigned int vlen,
		    u64 v)
{
	unsigned int n = min(vlen, 8U);

	if (h->len + 4 + vlen > sizeof(h->b))
		return;
	put_be(h->b + h->len, 2, type);
	put_be(h->b + h->len + 2, 2, vlen);
	memset(h->b + h->len + 4, 0, vlen);
	put_be(h->b + h->len + 4 + vlen - n, n, v);
	h->len += 4 + vlen;
}

/* Append the TLV @type with the value taken from @m, no checks. */
static void hsb_field(struct hsb *h, const struct visock_hs_msg *m,
		      unsigned int type, unsigned int wire_type)
{
	u8 *v = h->b + h->len + 4;

	put_be(h->b + h->len, 2, wire_type);
	put_be(h->b + h->len + 2, 2, tlv_size[type]);
	switch (type) {
	case VISOCK_TLV_FEATURES:
		put_be(v, 8, m->features);
		break;
	case VISOCK_TLV_GID:
		memcpy(v, m->gid, 16);
		break;
	case VISOCK_TLV_QPN:
		put_be(v, 4, m->qpn);
		break;
	case VISOCK_TLV_PSN:
		put_be(v, 4, m->psn);
		break;
	case VISOCK_TLV_MTU:
		v[0] = m->mtu;
		break;
	case VISOCK_TLV_RBUF:
		put_be(v, 8, m->rbuf_addr);
		put_be(v + 8, 4, m->rbuf_rkey);
		put_be(v + 12, 4, m->rbuf_size);
		break;
	case VISOCK_TLV_TOKEN:
		put_be(v, 4, m->token);
		break;
	case VISOCK_TLV_LINK:
		put_be(v, 4, m->lgr_id);
		put_be(v + 4, 4, m->link_id);
		break;
	case VISOCK_TLV_REASON:
		put_be(v, 4, m->reason);
		break;
	}
	h->len += 4 + tlv_size[type];
}

/* Independent, non-validating encoder: header + TLVs in ascending order */
static void hsb_msg(struct hsb *h, const struct visock_hs_msg *m)
{
	unsigned int t;

	hsb_start(h, m->type, m->version);
	for (t = 1; t <= TLV_LAST; t++)
		if (m->present & VISOCK_HSF(t))
			hsb_field(h, m, t, t);
	hsb_fix(h);
}

/* A valid message of @type carrying exactly the required TLVs. */
static void hs_valid(struct visock_hs_msg *m, unsigned int type)
{
	static const u8 gid[16] = {
		0xfe, 0x80, 0, 0, 0, 0, 0, 0,
		0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55
	};

	memset(m, 0, sizeof(*m));
	m->type = type;
	m->version = VISOCK_HS_VERSION;
	m->present = type < ARRAY_SIZE(required) ? required[type] : 0;
	m->features = VISOCK_FEAT_WRITE_IMM | (1ULL << 63);
	memcpy(m->gid, gid, sizeof(gid));
	m->qpn = 0x123456;
	m->psn = 0xabcdef;
	m->mtu = 5;
	m->rbuf_addr = 0x1122334455667788ULL;
	m->rbuf_rkey = 0xdeadbeef;
	m->rbuf_size = 64 * 1024;
	m->token = 0xcafef00d;
	m->lgr_id = 0x020304;
	m->link_id = 0x060708;
	m->reason = VISOCK_FB_NO_DEVICE;
}

/* Field-wise comparison (only fields of present TLVs matter). */
static bool hs_equal(const struct visock_hs_msg *a,
		     const struct visock_hs_msg *b)
{
	u32 p = a->present;

	if (a->type != b->type || a->version != b->version ||
	    a->present != b->present)
		return false;
	if ((p & VISOCK_HSF(VISOCK_TLV_FEATURES)) && a->features != b->features)
		return false;
	if ((p & VISOCK_HSF(VISOCK_TLV_GID)) &&
	    memcmp(a->gid, b->gid, sizeof(a->gid)))
		return false;
	if ((p & VISOCK_HSF(VISOCK_TLV_QPN)) && a->qpn != b->qpn)
		return false;
	if ((p & VISOCK_HSF(VISOCK_TLV_PSN)) && a->psn != b->psn)
		return false;
	if ((p & VISOCK_HSF(VISOCK_TLV_MTU)) && a->mtu != b->mtu)
		return false;
	if ((p & VISOCK_HSF(VISOCK_TLV_RBUF)) &&
	    (a->rbuf_addr != b->rbuf_addr || a->rbuf_rkey != b->rbuf_rkey ||
	     a->rbuf_size != b->rbuf_size))
		return false;
	if ((p & VISOCK_HSF(VISOCK_TLV_TOKEN)) && a->token != b->token)
		return false;
	if ((p & VISOCK_HSF(VISOCK_TLV_LINK)) &&
	    (a->lgr_id != b->lgr_id || a->link_id != b->link_id))
		return false;
	if ((p & VISOCK_HSF(VISOCK_TLV_REASON)) && a->reason != b->reason)
		return false;
	if ((p & VISOCK_HSF(VISOCK_TLV_XFORM)) &&
	    (a->xform_n != b->xform_n || memcmp(a->xform, b->xform, a->xform_n)))
		return false;
	return true;
}

static bool hs_is_zero(const struct visock_hs_msg *m)
{
	return !memchr_inv(m, 0, sizeof(*m));
}

/*
 * Each test gets a vmalloc'ed page in test->priv.  vmalloc leaves an
 * unmapped guard page behind every area, so input copied to the very end
 * of that page makes any read past the input fault, even without KASAN.
 */
static int visock_hs_test_init(struct kunit *test)
{
	test->priv = vmalloc(PAGE_SIZE);
	return test->priv ? 0 : -ENOMEM;
}

static void visock_hs_test_exit(struct kunit *test)
{
	vfree(test->priv);
}

static u8 *hs_guarded(struct kunit *test, const u8 *buf, unsigned int len)
{
	u8 *p = (u8 *)test->priv + PAGE_SIZE - len;

	memcpy(p, buf, len);
	return p;
}

/*
 * Decode @len bytes of @buf, checking that @m is all zero on failure,
 * that fields of absent TLVs are zero on success, and that the bytes after
 * @len do not matter.
 */
static int hs_decode_checked(struct kunit *test, const u8 *buf,
			     unsigned int len, struct visock_hs_msg *m)
{
	static u8 a[BUF_SIZE + 8], b[BUF_SIZE + 8];
	struct visock_hs_msg mb;
	int ret, retb;

	if (len > BUF_SIZE) {
		KUNIT_FAIL(test, "test bug: len %u", len);
		return -EINVAL;
	}
	memset(a, 0, sizeof(a));
	memset(b, 0xff, sizeof(b));
	memcpy(a, buf, len);
	memcpy(b, buf, len);
	memset(m, 0x5a, sizeof(*m));
	memset(&mb, 0xa5, sizeof(mb));
	ret = visock_hs_decode(a, len, m);
	retb = visock_hs_decode(b, len, &mb);
	KUNIT_EXPECT_EQ_MSG(test, ret, retb, "result depends on bytes after len");
	KUNIT_EXPECT_EQ(test, visock_hs_decode(hs_guarded(test, buf, len), len,
					       &mb), ret);
	KUNIT_EXPECT_EQ(test, visock_hs_msg_len(hs_guarded(test, buf, len),
						len),
			visock_hs_msg_len(a, len));
	if (ret) {
		KUNIT_EXPECT_TRUE_MSG(test, hs_is_zero(m),
				      "message not zeroed on error %d", ret);
		KUNIT_EXPECT_TRUE(test, hs_is_zero(&mb));
	} else {
		KUNIT_EXPECT_TRUE(test, hs_equal(m, &mb));
		if (!(m->present & VISOCK_HSF(VISOCK_TLV_TOKEN)))
			KUNIT_EXPECT_EQ(test, m->token, 0);
		if (!(m->present & VISOCK_HSF(VISOCK_TLV_QPN)))
			KUNIT_EXPECT_EQ(test, m->qpn, 0);
		if (!(m->present & VISOCK_HSF(VISOCK_TLV_REASON)))
			KUNIT_EXPECT_EQ(test, m->reason, 0);
	}
	return ret;
}

/* ------------------------------------------------------------------ */
/* Round trips                                                          */
/* ------------------------------------------------------------------ */

struct rt_case {
	const char *name;
	unsigned int type;
	unsigned int version;
	u32 extra;		/* optional TLVs on top of the required ones */
	unsigned int len;	/* expected encoded length */
};

static const struct rt_case rt_cases[] = {
	{ "REQ", VISOCK_HS_REQ, 1, 0, 101 },
	{ "REP", VISOCK_HS_REP, 1, 0, 101 },
	{ "CONFIRM", VISOCK_HS_CONFIRM, 1, 0, 16 },
	{ "DECLINE", VISOCK_HS_DECLINE, 1, 0, 16 },
	{ "SWITCH", VISOCK_HS_SWITCH, 1, 0, 101 },
	{ "REQ_all_tlvs", VISOCK_HS_REQ, 1, HSF_ALL, 109 },
	{ "REP_version_255", VISOCK_HS_REP, 255, 0, 101 },
	{ "CONFIRM_with_link", VISOCK_HS_CONFIRM, 1,
	  VISOCK_HSF(VISOCK_TLV_LINK), 28 },
	{ "DECLINE_all_tlvs", VISOCK_HS_DECLINE, 2, HSF_ALL, 109 },
	{ "DECLINE_with_token", VISOCK_HS_DECLINE, 1,
	  VISOCK_HSF(VISOCK_TLV_TOKEN), 24 },
};

static void rt_case_desc(const struct rt_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(rt, rt_cases, rt_case_desc);

static void visock_hs_roundtrip_test(struct kunit *test)
{
	const struct rt_case *c = test->param_value;
	struct visock_hs_msg in, out;
	static u8 buf[BUF_SIZE], buf2[BUF_SIZE];
	struct hsb *h;
	int len;

	h = kunit_kzalloc(test, sizeof(*h), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, h);

	hs_valid(&in, c->type);
	in.version = c->version;
	in.present |= c->extra;

	memset(buf, 0xa5, sizeof(buf));
	len = visock_hs_encode(&in, buf, sizeof(buf));
	KUNIT_ASSERT_EQ(test, len, (int)c->len);
	KUNIT_EXPECT_EQ(test, buf[len], 0xa5);

	/* The independent builder produces the very same bytes. */
	hsb_msg(h, &in);
	KUNIT_ASSERT_EQ(test, h->len, c->len);
	KUNIT_EXPECT_EQ(test, memcmp(buf, h->b, len), 0);

	/* No TLV is marked critical. */
	{
		unsigned int off = VISOCK_HS_HDR_LEN;

		while (off + 4 <= (unsigned int)len) {
			KUNIT_EXPECT_EQ(test, buf[off] & 0x80, 0);
			off += 4 + ((buf[off + 2] << 8) | buf[off + 3]);
		}
		KUNIT_EXPECT_EQ(test, off, (unsigned int)len);
	}

	KUNIT_EXPECT_EQ(test, visock_hs_msg_len(buf, len), len);
	KUNIT_EXPECT_EQ(test, visock_hs_msg_len(buf, VISOCK_HS_HDR_LEN), len);

	KUNIT_ASSERT_EQ(test, hs_decode_checked(test, buf, len, &out), 0);
	KUNIT_EXPECT_TRUE(test, hs_equal(&in, &out));
	KUNIT_EXPECT_EQ(test, out.version, c->version);

	/* Re-encoding the decoded message is byte-identical. */
	KUNIT_EXPECT_EQ(test, visock_hs_encode(&out, buf2, sizeof(buf2)), len);
	KUNIT_EXPECT_EQ(test, memcmp(buf, buf2, len), 0);

	/* An exactly sized buffer is enough. */
	KUNIT_EXPECT_EQ(test, visock_hs_encode(&in, buf2, len), len);
}

/* Pin the byte layout of two small messages. */
static void visock_hs_golden_test(struct kunit *test)
{
	static const u8 confirm[] = {
		0x56, 0x53, 0x4b, 0x48, 3, 1, 0, 16,
		0, 7, 0, 4, 0x01, 0x02, 0x03, 0x04,
	};
	static const u8 decline[] = {
		0x56, 0x53, 0x4b, 0x48, 4, 1, 0, 24,
		0, 7, 0, 4, 0xff, 0xff, 0xff, 0xff,
		0, 9, 0, 4, 0, 0, 0, VISOCK_FB_TIMEOUT,
	};
	struct visock_hs_msg m;
	u8 buf[64];

	hs_valid(&m, VISOCK_HS_CONFIRM);
	m.token = 0x01020304;
	KUNIT_ASSERT_EQ(test, visock_hs_encode(&m, buf, sizeof(buf)),
			(int)sizeof(confirm));
	KUNIT_EXPECT_EQ(test, memcmp(buf, confirm, sizeof(confirm)), 0);

	hs_valid(&m, VISOCK_HS_DECLINE);
	m.present |= VISOCK_HSF(VISOCK_TLV_TOKEN);
	m.token = 0xffffffff;
	m.reason = VISOCK_FB_TIMEOUT;
	KUNIT_ASSERT_EQ(test, visock_hs_encode(&m, buf, sizeof(buf)),
			(int)sizeof(decline));
	KUNIT_EXPECT_EQ(test, memcmp(buf, decline, sizeof(decline)), 0);

	KUNIT_ASSERT_EQ(test, hs_decode_checked(test, decline, sizeof(decline),
						&m), 0);
	KUNIT_EXPECT_EQ(test, m.type, VISOCK_HS_DECLINE);
	KUNIT_EXPECT_EQ(test, m.token, 0xffffffff);
	KUNIT_EXPECT_EQ(test, m.reason, VISOCK_FB_TIMEOUT);
	KUNIT_EXPECT_EQ(test, m.present, VISOCK_HSF(VISOCK_TLV_TOKEN) |
					 VISOCK_HSF(VISOCK_TLV_REASON));
}

/* ------------------------------------------------------------------ */
/* Encoder argument checks                                              */
/* ------------------------------------------------------------------ */

static void visock_hs_encode_invalid_test(struct kunit *test)
{
	struct visock_hs_msg m;
	unsigned int type, t;
	u8 buf[256];

	hs_valid(&m, VISOCK_HS_CONFIRM);
	m.type = 0;
	KUNIT_EXPECT_EQ(test, visock_hs_encode(&m, buf, sizeof(buf)), -EINVAL);
	m.type = 6;
	KUNIT_EXPECT_EQ(test, visock_hs_encode(&m, buf, sizeof(buf)), -EINVAL);
	m.type = 255;
	KUNIT_EXPECT_EQ(test, visock_hs_encode(&m, buf, sizeof(buf)), -EINVAL);

	hs_valid(&m, VISOCK_HS_CONFIRM);
	m.version = 0;
	KUNIT_EXPECT_EQ(test, visock_hs_encode(&m, buf, sizeof(buf)), -EINVAL);

	hs_valid(&m, VISOCK_HS_CONFIRM);
	m.present |= VISOCK_HSF(0);
	KUNIT_EXPECT_EQ(test, visock_hs_encode(&m, buf, sizeof(buf)), -EINVAL);
	hs_valid(&m, VISOCK_HS_CONFIRM);
	m.present |= VISOCK_HSF(TLV_LAST + 1);
	KUNIT_EXPECT_EQ(test, visock_hs_encode(&m, buf, sizeof(buf)), -EINVAL);
	hs_valid(&m, VISOCK_HS_CONFIRM);
	m.present |= VISOCK_HSF(31);
	KUNIT_EXPECT_EQ(test, visock_hs_encode(&m, buf, sizeof(buf)), -EINVAL);

	/* Every required TLV, left out in turn. */
	for (type = VISOCK_HS_REQ; type <= VISOCK_HS_SWITCH; type++) {
		for (t = 1; t <= TLV_LAST; t++) {
			struct hsb *h;

			if (!(required[type] & VISOCK_HSF(t)))
				continue;
			hs_valid(&m, type);
			m.present &= ~VISOCK_HSF(t);
			KUNIT_EXPECT_EQ_MSG(test,
					    visock_hs_encode(&m, buf,
							     sizeof(buf)),
					    -EINVAL, "type %u tlv %u",
					    type, t);
			h = kunit_kzalloc(test, sizeof(*h), GFP_KERNEL);
			KUNIT_ASSERT_NOT_NULL(test, h);
			hsb_msg(h, &m);
			KUNIT_EXPECT_EQ_MSG(test,
					    hs_decode_checked(test, h->b,
							      h->len, &m),
					    -EBADMSG, "type %u tlv %u",
					    type, t);
		}
	}
}

static void visock_hs_encode_small_buffer_test(struct kunit *test)
{
	struct visock_hs_msg m;
	unsigned int type, n;
	u8 buf[256];
	int total;

	for (type = VISOCK_HS_REQ; type <= VISOCK_HS_SWITCH; type++) {
		hs_valid(&m, type);
		total = visock_hs_encode(&m, buf, sizeof(buf));
		KUNIT_ASSERT_GT(test, total, 0);
		for (n = 0; n < (unsigned int)total; n++) {
			memset(buf, 0xa5, sizeof(buf));
			KUNIT_EXPECT_EQ(test, visock_hs_encode(&m, buf, n),
					-EMSGSIZE);
			KUNIT_EXPECT_NULL(test, memchr_inv(buf, 0xa5,
							   sizeof(buf)));
		}
	}
}

/* ------------------------------------------------------------------ */
/* Value ranges                                                         */
/* ------------------------------------------------------------------ */

enum vfield { F_QPN, F_PSN, F_MTU, F_RBUF_SIZE, F_RKEY, F_ADDR, F_TOKEN,
	      F_REASON, F_FEATURES, F_LINK };

struct value_case {
	const char *name;
	unsigned int type;
	enum vfield field;
	u64 value;
	bool valid;
};

static const struct value_case value_cases[] = {
	{ "qpn_0", VISOCK_HS_REQ, F_QPN, 0, false },
	{ "qpn_1", VISOCK_HS_REQ, F_QPN, 1, true },
	{ "qpn_max", VISOCK_HS_REP, F_QPN, 0xffffff, true },
	{ "qpn_2^24", VISOCK_HS_REP, F_QPN, 0x1000000, false },
	{ "qpn_u32_max", VISOCK_HS_REQ, F_QPN, 0xffffffff, false },
	{ "psn_0", VISOCK_HS_REQ, F_PSN, 0, true },
	{ "psn_max", VISOCK_HS_REQ, F_PSN, 0xffffff, true },
	{ "psn_2^24", VISOCK_HS_REP, F_PSN, 0x1000000, false },
	{ "psn_u32_max", VISOCK_HS_REP, F_PSN, 0xffffffff, false },
	{ "mtu_0", VISOCK_HS_REQ, F_MTU, 0, false },
	{ "mtu_1", VISOCK_HS_REQ, F_MTU, 1, true },
	{ "mtu_3", VISOCK_HS_REP, F_MTU, 3, true },
	{ "mtu_5", VISOCK_HS_REQ, F_MTU, 5, true },
	{ "mtu_6", VISOCK_HS_REP, F_MTU, 6, false },
	{ "mtu_255", VISOCK_HS_REQ, F_MTU, 255, false },
	{ "rbuf_0", VISOCK_HS_REQ, F_RBUF_SIZE, 0, false },
	{ "rbuf_8k", VISOCK_HS_REQ, F_RBUF_SIZE, 8192, false },
	{ "rbuf_16k_minus_1", VISOCK_HS_REQ, F_RBUF_SIZE, 16383, false },
	{ "rbuf_16k", VISOCK_HS_REQ, F_RBUF_SIZE, 16384, true },
	{ "rbuf_16k_plus_1", VISOCK_HS_REP, F_RBUF_SIZE, 16385, false },
	{ "rbuf_48k", VISOCK_HS_REP, F_RBUF_SIZE, 49152, false },
	{ "rbuf_1m", VISOCK_HS_REP, F_RBUF_SIZE, 1 << 20, true },
	{ "rbuf_8m", VISOCK_HS_REP, F_RBUF_SIZE, 8 << 20, true },
	{ "rbuf_8m_minus_1", VISOCK_HS_REQ, F_RBUF_SIZE, (8 << 20) - 1, false },
	{ "rbuf_16m", VISOCK_HS_REQ, F_RBUF_SIZE, 16 << 20, false },
	{ "rbuf_2^31", VISOCK_HS_REQ, F_RBUF_SIZE, 1U << 31, false },
	{ "rkey_0", VISOCK_HS_REQ, F_RKEY, 0, true },
	{ "rkey_max", VISOCK_HS_REQ, F_RKEY, 0xffffffff, true },
	{ "addr_0", VISOCK_HS_REP, F_ADDR, 0, true },
	{ "addr_max", VISOCK_HS_REP, F_ADDR, ~0ULL, true },
	{ "token_0_req", VISOCK_HS_REQ, F_TOKEN, 0, false },
	{ "token_0_confirm", VISOCK_HS_CONFIRM, F_TOKEN, 0, false },
	{ "token_1", VISOCK_HS_CONFIRM, F_TOKEN, 1, true },
	{ "token_max", VISOCK_HS_CONFIRM, F_TOKEN, 0xffffffff, true },
	{ "reason_none", VISOCK_HS_DECLINE, F_REASON, VISOCK_FB_NONE, true },
	{ "reason_max", VISOCK_HS_DECLINE, F_REASON, VISOCK_FB_MAX, true },
	{ "reason_max_plus_1", VISOCK_HS_DECLINE, F_REASON, VISOCK_FB_MAX + 1,
	  false },
	{ "reason_u32_max", VISOCK_HS_DECLINE, F_REASON, 0xffffffff, false },
	{ "features_0", VISOCK_HS_REQ, F_FEATURES, 0, true },
	{ "features_all", VISOCK_HS_REP, F_FEATURES, ~0ULL, true },
	{ "link_0", VISOCK_HS_REQ, F_LINK, 0, true },
	{ "link_max", VISOCK_HS_REP, F_LINK, ~0ULL, true },
};

static void value_case_desc(const struct value_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(value, value_cases, value_case_desc);

static void value_apply(struct visock_hs_msg *m, enum vfield f, u64 v)
{
	switch (f) {
	case F_QPN:
		m->qpn = v;
		break;
	case F_PSN:
		m->psn = v;
		break;
	case F_MTU:
		m->mtu = v;
		break;
	case F_RBUF_SIZE:
		m->rbuf_size = v;
		break;
	case F_RKEY:
		m->rbuf_rkey = v;
		break;
	case F_ADDR:
		m->rbuf_addr = v;
		break;
	case F_TOKEN:
		m->token = v;
		break;
	case F_REASON:
		m->reason = v;
		break;
	case F_FEATURES:
		m->features = v;
		break;
	case F_LINK:
		m->lgr_id = v >> 32;
		m->link_id = v;
		break;
	}
}

static void visock_hs_value_test(struct kunit *test)
{
	const struct value_case *c = test->param_value;
	struct visock_hs_msg m, out;
	u8 buf[256];
	struct hsb *h;
	int ret;

	h = kunit_kzalloc(test, sizeof(*h), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, h);

	hs_valid(&m, c->type);
	value_apply(&m, c->field, c->value);

	ret = visock_hs_encode(&m, buf, sizeof(buf));
	if (c->valid)
		KUNIT_EXPECT_GT(test, ret, 0);
	else
		KUNIT_EXPECT_EQ(test, ret, -EINVAL);

	hsb_msg(h, &m);
	ret = hs_decode_checked(test, h->b, h->len, &out);
	KUNIT_EXPECT_EQ(test, ret, c->valid ? 0 : -EBADMSG);
	if (!ret)
		KUNIT_EXPECT_TRUE(test, hs_equal(&m, &out));

	/* A field that is checked is checked in optional TLVs too. */
	if (c->type != VISOCK_HS_DECLINE) {
		hs_valid(&m, VISOCK_HS_DECLINE);
		m.present |= HSF_SETUP;
		value_apply(&m, c->field, c->value);
		hsb_msg(h, &m);
		ret = hs_decode_checked(test, h->b, h->len, &out);
		KUNIT_EXPECT_EQ(test, ret, c->valid ? 0 : -EBADMSG);
	}
}

/* ------------------------------------------------------------------ */
/* Header checks                                                        */
/* ------------------------------------------------------------------ */

static void visock_hs_header_test(struct kunit *test)
{
	struct visock_hs_msg m;
	struct hsb *h;
	unsigned int i, len;
	u8 buf[256];

	h = kunit_kzalloc(test, sizeof(*h), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, h);

	hs_valid(&m, VISOCK_HS_CONFIRM);
	len = visock_hs_encode(&m, buf, sizeof(buf));
	KUNIT_ASSERT_EQ(test, len, 16U);

	/* Wrong magic: every bit of it matters. */
	for (i = 0; i < 32; i++) {
		memcpy(h->b, buf, len);
		h->b[i / 8] ^= 1 << (i % 8);
		KUNIT_EXPECT_EQ(test, hs_decode_checked(test, h->b, len, &m),
				-EBADMSG);
		KUNIT_EXPECT_EQ(test, visock_hs_msg_len(h->b, len), -EBADMSG);
	}

	/* Versions: 0 is a protocol error, anything higher is fine. */
	for (i = 0; i <= 255; i++) {
		memcpy(h->b, buf, len);
		h->b[5] = i;
		KUNIT_EXPECT_EQ_MSG(test,
				    hs_decode_checked(test, h->b, len, &m),
				    i < VISOCK_HS_MIN_VERSION ? -EPROTO : 0,
				    "version %u", i);
		if (i >= VISOCK_HS_MIN_VERSION)
			KUNIT_EXPECT_EQ(test, m.version, i);
	}

	/* Types. */
	for (i = 0; i <= 255; i++) {
		int want;

		hs_valid(&m, VISOCK_HS_REQ);
		m.present = HSF_ALL;
		m.type = i;
		hsb_msg(h, &m);
		want = (i >= VISOCK_HS_REQ && i <= VISOCK_HS_SWITCH) ?
			0 : -EBADMSG;
		KUNIT_EXPECT_EQ_MSG(test,
				    hs_decode_checked(test, h->b, h->len, &m),
				    want, "type %u", i);
		if (!want)
			KUNIT_EXPECT_EQ(test, m.type, i);
	}

	/* Version 0 is reported before a bad type. */
	memcpy(h->b, buf, len);
	h->b[4] = 0;
	h->b[5] = 0;
	KUNIT_EXPECT_EQ(test, hs_decode_checked(test, h->b, len, &m), -EPROTO);

	/* Length field disagreeing with the buffer length. */
	memcpy(h->b, buf, len);
	h->b[7] = len + 1;
	KUNIT_EXPECT_EQ(test, hs_decode_checked(test, h->b, len, &m), -EBADMSG);
	KUNIT_EXPECT_EQ(test, hs_decode_checked(test, h->b, len + 1, &m),
			-EBADMSG);
	h->b[7] = len - 1;
	KUNIT_EXPECT_EQ(test, hs_decode_checked(test, h->b, len, &m), -EBADMSG);
	/* A trailing byte the header does not account for. */
	memcpy(h->b, buf, len);
	KUNIT_EXPECT_EQ(test, hs_decode_checked(test, h->b, len + 1, &m),
			-EBADMSG);
	/* Length fields below the header size. */
	for (i = 0; i < VISOCK_HS_HDR_LEN; i++) {
		memcpy(h->b, buf, VISOCK_HS_HDR_LEN);
		h->b[6] = 0;
		h->b[7] = i;
		KUNIT_EXPECT_EQ(test, hs_decode_checked(test, h->b, i, &m),
				-EBADMSG);
		KUNIT_EXPECT_EQ(test, visock_hs_msg_len(h->b, 8), -EBADMSG);
	}
	/* A bare header is structurally fine but misses required TLVs. */
	hsb_start(h, VISOCK_HS_CONFIRM, 1);
	hsb_fix(h);
	KUNIT_EXPECT_EQ(test, visock_hs_msg_len(h->b, h->len), 8);
	KUNIT_EXPECT_EQ(test, hs_decode_checked(test, h->b, h->len, &m),
			-EBADMSG);
}

/* Every proper prefix of a valid message is rejected. */
static void visock_hs_truncated_test(struct kunit *test)
{
	struct visock_hs_msg m;
	unsigned int type, n, len;
	struct hsb *h;
	u8 buf[256];

	h = kunit_kzalloc(test, sizeof(*h), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, h);

	for (type = VISOCK_HS_REQ; type <= VISOCK_HS_SWITCH; type++) {
		/*
		 * Only the required TLVs, so that no prefix is a complete
		 * message.
		 */
		hs_valid(&m, type);
		len = visock_hs_encode(&m, buf, sizeof(buf));
		KUNIT_ASSERT_GT(test, len, 0U);
		for (n = 0; n < len; n++) {
			/* As received: header still says len. */
			KUNIT_EXPECT_EQ_MSG(test,
					    hs_decode_checked(test, buf, n, &m),
					    -EBADMSG, "type %u n %u", type, n);
			KUNIT_EXPECT_EQ(test, visock_hs_msg_len(buf, n),
					n < VISOCK_HS_HDR_LEN ? -EAGAIN :
					(int)len);
			if (n < VISOCK_HS_HDR_LEN)
				continue;
			/* Header patched to the shorter length. */
			memcpy(h->b, buf, n);
			h->len = n;
			hsb_fix(h);
			KUNIT_EXPECT_EQ_MSG(test,
					    hs_decode_checked(test, h->b, n,
							      &m),
					    -EBADMSG, "patched type %u n %u",
					    type, n);
		}
	}
}

static void visock_hs_msg_len_test(struct kunit *test)
{
	static const struct {
		u16 field;
		int ret;
	} lens[] = {
		{ 0, -EBADMSG }, { 7, -EBADMSG }, { 8, 8 }, { 9, 9 },
		{ 105, 105 }, { 511, 511 }, { 512, 512 }, { 513, -EBADMSG },
		{ 0x100, 0x100 }, { 0x1000, -EBADMSG }, { 0xffff, -EBADMSG },
	};
	u8 hdr[VISOCK_HS_HDR_LEN] = { 0x56, 0x53, 0x4b, 0x48, 0, 0, 0, 0 };
	unsigned int i;

	for (i = 0; i < VISOCK_HS_HDR_LEN; i++)
		KUNIT_EXPECT_EQ(test, visock_hs_msg_len(hdr, i), -EAGAIN);
	/* Type and version are not looked at. */
	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		hdr[6] = lens[i].field >> 8;
		hdr[7] = lens[i].field & 0xff;
		KUNIT_EXPECT_EQ_MSG(test, visock_hs_msg_len(hdr, sizeof(hdr)),
				    lens[i].ret, "length %u", lens[i].field);
	}
	hdr[0] = 0;
	hdr[7] = 16;
	KUNIT_EXPECT_EQ(test, visock_hs_msg_len(hdr, sizeof(hdr)), -EBADMSG);
}

/* Messages of exactly VISOCK_HS_MAX_LEN bytes and one byte more. */
static void visock_hs_oversize_test(struct kunit *test)
{
	struct visock_hs_msg m;
	struct hsb *h;
	unsigned int pad;

	h = kunit_kzalloc(test, sizeof(*h), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, h);

	/* CONFIRM (16 bytes) padded with an unknown non-critical TLV. */
	pad = VISOCK_HS_MAX_LEN - 16 - 4;
	hsb_start(h, VISOCK_HS_CONFIRM, 1);
	hsb_tlv(h, VISOCK_TLV_TOKEN, 4, 42);
	hsb_tlv(h, 0x1234, pad, 0x77);
	hsb_fix(h);
	KUNIT_ASSERT_EQ(test, h->len, VISOCK_HS_MAX_LEN);
	KUNIT_EXPECT_EQ(test, visock_hs_msg_len(h->b, h->len),
			VISOCK_HS_MAX_LEN);
	KUNIT_EXPECT_EQ(test, hs_decode_checked(test, h->b, h->len, &m), 0);
	KUNIT_EXPECT_EQ(test, m.token, 42);
	KUNIT_EXPECT_EQ(test, m.present, VISOCK_HSF(VISOCK_TLV_TOKEN));

	hsb_start(h, VISOCK_HS_CONFIRM, 1);
	hsb_tlv(h, VISOCK_TLV_TOKEN, 4, 42);
	hsb_tlv(h, 0x1234, pad + 1, 0x77);
	hsb_fix(h);
	KUNIT_ASSERT_EQ(test, h->len, VISOCK_HS_MAX_LEN + 1);
	KUNIT_EXPECT_EQ(test, visock_hs_msg_len(h->b, h->len), -EBADMSG);
	KUNIT_EXPECT_EQ(test, hs_decode_checked(test, h->b, h->len, &m),
			-EBADMSG);

	/* Large buffers whose header claims a valid length. */
	h->b[6] = 0;
	h->b[7] = 16;
	KUNIT_EXPECT_EQ(test, hs_decode_checked(test, h->b, BUF_SIZE, &m),
			-EBADMSG);
	KUNIT_EXPECT_EQ(test, visock_hs_decode(h->b, 0xffffffff, &m),
			-EBADMSG);
}

/* ------------------------------------------------------------------ */
/* TLV structure                                                        */
/* ------------------------------------------------------------------ */

#define MAX_SPEC	6
#define AUTO		0xffff	/* value size of the known type */

struct tlv_spec {
	u16 type;
	u16 len;
	u64 value;
};

struct tlv_case {
	const char *name;
	unsigned int msg_type;
	struct tlv_spec tlvs[MAX_SPEC];
	unsigned int trailing;	/* extra zero bytes after the TLVs */
	int ret;
	u32 present;		/* expected on success */
};

#define TOK(v)		{ VISOCK_TLV_TOKEN, AUTO, (v) }
#define REASON(v)	{ VISOCK_TLV_REASON, AUTO, (v) }
#define CRIT		VISOCK_TLV_CRITICAL
#define P(t)		VISOCK_HSF(VISOCK_TLV_##t)

static const struct tlv_case tlv_cases[] = {
	{ "plain_confirm", VISOCK_HS_CONFIRM, { TOK(1) }, 0, 0, P(TOKEN) },
	{ "unknown_noncrit_before", VISOCK_HS_CONFIRM,
	  { { 100, 3, 7 }, TOK(1) }, 0, 0, P(TOKEN) },
	{ "unknown_noncrit_after", VISOCK_HS_CONFIRM,
	  { TOK(1), { 100, 3, 7 } }, 0, 0, P(TOKEN) },
	{ "unknown_noncrit_empty", VISOCK_HS_CONFIRM,
	  { TOK(1), { 0x7fff, 0, 0 } }, 0, 0, P(TOKEN) },
	{ "unknown_type_0", VISOCK_HS_CONFIRM,
	  { { 0, 4, 0 }, TOK(1) }, 0, 0, P(TOKEN) },
	{ "unknown_type_12", VISOCK_HS_DECLINE,
	  { { VISOCK_TLV_XFORM + 1, 1, 0 }, REASON(1) }, 0, 0, P(REASON) },
	{ "several_unknown_noncrit", VISOCK_HS_CONFIRM,
	  { { 13, 8, 1 }, { 14, 0, 0 }, TOK(5), { 0x4000, 40, 1 },
	    { 12, 1, 1 } }, 0, 0, P(TOKEN) },
	{ "unknown_critical", VISOCK_HS_CONFIRM,
	  { TOK(1), { CRIT | 100, 3, 7 } }, 0, -EOPNOTSUPP },
	{ "unknown_critical_first", VISOCK_HS_CONFIRM,
	  { { CRIT | 12, 0, 0 }, TOK(1) }, 0, -EOPNOTSUPP },
	{ "critical_type_0", VISOCK_HS_CONFIRM,
	  { TOK(1), { CRIT, 0, 0 } }, 0, -EOPNOTSUPP },
	{ "critical_ffff", VISOCK_HS_CONFIRM,
	  { TOK(1), { 0xffff, 2, 0 } }, 0, -EOPNOTSUPP },
	{ "known_with_critical_bit", VISOCK_HS_CONFIRM,
	  { { CRIT | VISOCK_TLV_TOKEN, 4, 9 } }, 0, 0, P(TOKEN) },
	{ "optional_known_tlv", VISOCK_HS_CONFIRM,
	  { TOK(1), REASON(2) }, 0, 0, P(TOKEN) | P(REASON) },
	{ "any_order", VISOCK_HS_DECLINE,
	  { REASON(3), { VISOCK_TLV_LINK, AUTO, 5 }, TOK(1),
	    { VISOCK_TLV_MTU, AUTO, 1 } },
	  0, 0, P(TOKEN) | P(REASON) | P(LINK) | P(MTU) },
	{ "duplicate_known", VISOCK_HS_CONFIRM,
	  { TOK(1), TOK(1) }, 0, -EBADMSG },
	{ "duplicate_known_apart", VISOCK_HS_DECLINE,
	  { REASON(1), TOK(1), { 100, 0, 0 }, REASON(1) }, 0, -EBADMSG },
	{ "duplicate_known_critical_bit", VISOCK_HS_CONFIRM,
	  { TOK(1), { CRIT | VISOCK_TLV_TOKEN, 4, 1 } }, 0, -EBADMSG },
	{ "duplicate_unknown", VISOCK_HS_CONFIRM,
	  { { 100, 1, 0 }, TOK(1), { 100, 1, 0 } }, 0, -EBADMSG },
	{ "duplicate_unknown_critical_bit", VISOCK_HS_CONFIRM,
	  { { 100, 1, 0 }, TOK(1), { CRIT | 100, 1, 0 } }, 0, -EBADMSG },
	{ "duplicate_type_0", VISOCK_HS_CONFIRM,
	  { { 0, AUTO, 0 }, TOK(1), { 0, AUTO, 0 } }, 0, -EBADMSG },
	{ "trailing_1", VISOCK_HS_CONFIRM, { TOK(1) }, 1, -EBADMSG },
	{ "trailing_2", VISOCK_HS_CONFIRM, { TOK(1) }, 2, -EBADMSG },
	{ "trailing_3", VISOCK_HS_CONFIRM, { TOK(1) }, 3, -EBADMSG },
	{ "trailing_4_is_empty_tlv_0", VISOCK_HS_CONFIRM, { TOK(1) }, 4, 0,
	  P(TOKEN) },
	{ "token_len_0", VISOCK_HS_CONFIRM,
	  { { VISOCK_TLV_TOKEN, 0, 0 } }, 0, -EBADMSG },
	{ "reason_len_8", VISOCK_HS_DECLINE,
	  { { VISOCK_TLV_REASON, 8, 1 } }, 0, -EBADMSG },
	{ "unknown_critical_then_bad_len", VISOCK_HS_CONFIRM,
	  { { CRIT | 100, 0, 0 }, { VISOCK_TLV_TOKEN, 3, 1 } }, 0,
	  -EOPNOTSUPP },
	{ "bad_len_then_unknown_critical", VISOCK_HS_CONFIRM,
	  { { VISOCK_TLV_TOKEN, 3, 1 }, { CRIT | 100, 0, 0 } }, 0, -EBADMSG },
	{ "missing_required", VISOCK_HS_DECLINE, { TOK(1) }, 0, -EBADMSG },
};

static void tlv_case_desc(const struct tlv_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(tlv, tlv_cases, tlv_case_desc);

static void tlv_build(struct hsb *h, const struct tlv_case *c)
{
	unsigned int i;

	hsb_start(h, c->msg_type, 1);
	for (i = 0; i < MAX_SPEC; i++) {
		const struct tlv_spec *s = &c->tlvs[i];
		unsigned int base = s->type & ~VISOCK_TLV_CRITICAL;
		unsigned int len = s->len;

		/* All-zero entries end the list; {0, AUTO, 0} is a TLV. */
		if (!s->type && !s->len && !s->value)
			break;
		if (len == AUTO)
			len = base <= TLV_LAST ? tlv_size[base] : 0;
		hsb_tlv(h, s->type, len, s->value);
	}
	h->len += c->trailing;
	hsb_fix(h);
}

static void visock_hs_tlv_test(struct kunit *test)
{
	const struct tlv_case *c = test->param_value;
	struct visock_hs_msg m;
	struct hsb *h;
	int ret;

	h = kunit_kzalloc(test, sizeof(*h), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, h);
	tlv_build(h, c);
	ret = hs_decode_checked(test, h->b, h->len, &m);
	KUNIT_EXPECT_EQ(test, ret, c->ret);
	if (!ret)
		KUNIT_EXPECT_EQ(test, m.present, c->present);
}

/* Every known TLV with a value one byte short, one byte long, or empty. */
static void visock_hs_tlv_size_test(struct kunit *test)
{
	static const int delta[] = { -1, 1, -100 };
	struct visock_hs_msg m, out;
	unsigned int t, d, i;
	struct hsb *h;

	h = kunit_kzalloc(test, sizeof(*h), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, h);

	for (t = 1; t <= TLV_FIXED_LAST; t++) {
		for (d = 0; d < ARRAY_SIZE(delta); d++) {
			int vlen = max((int)tlv_size[t] + delta[d], 0);

			hs_valid(&m, VISOCK_HS_REQ);
			m.present = HSF_ALL;
			hsb_start(h, VISOCK_HS_REQ, 1);
			for (i = 1; i <= TLV_FIXED_LAST; i++) {
				if (i == t)
					hsb_tlv(h, i, vlen, 0x0001);
				else
					hsb_field(h, &m, i, i);
			}
			hsb_fix(h);
			KUNIT_EXPECT_EQ_MSG(test,
					    hs_decode_checked(test, h->b,
							      h->len, &out),
					    -EBADMSG, "tlv %u len %d", t, vlen);
		}
		/* A TLV whose length runs past the end of the message. */
		hs_valid(&m, VISOCK_HS_REQ);
		m.present = HSF_ALL;
		hsb_start(h, VISOCK_HS_REQ, 1);
		for (i = 1; i <= TLV_FIXED_LAST; i++)
			if (i != t)
				hsb_field(h, &m, i, i);
		hsb_field(h, &m, t, t);
		/* claim one byte more than there is */
		h->b[h->len - tlv_size[t] - 1] += 1;
		hsb_fix(h);
		KUNIT_EXPECT_EQ_MSG(test,
				    hs_decode_checked(test, h->b, h->len, &out),
				    -EBADMSG, "overflowing tlv %u", t);
		h->b[h->len - tlv_size[t] - 2] = 0xff;
		h->b[h->len - tlv_size[t] - 1] = 0xff;
		KUNIT_EXPECT_EQ(test,
				hs_decode_checked(test, h->b, h->len, &out),
				-EBADMSG);
	}
}

/* ------------------------------------------------------------------ */
/* Random input                                                         */
/* ------------------------------------------------------------------ */

static u32 hs_rand(u32 *state)
{
	u32 x = *state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*state = x;
	return x;
}

/*
 * Check the decoder's contract on one input: a documented result, nothing
 * read beyond @len, and a successfully decoded message re-encodes to
 * something that decodes to the same message.
 */
static void hs_fuzz_one(struct kunit *test, const u8 *buf, unsigned int len,
			unsigned int iter, unsigned int *accepted)
{
	struct visock_hs_msg m, again;
	static u8 out[BUF_SIZE];
	int ret, ml;

	ret = hs_decode_checked(test, buf, len, &m);
	KUNIT_ASSERT_TRUE_MSG(test, ret == 0 || ret == -EBADMSG ||
			      ret == -EPROTO || ret == -EOPNOTSUPP,
			      "iteration %u: ret %d", iter, ret);
	ml = visock_hs_msg_len(buf, len);
	KUNIT_ASSERT_TRUE_MSG(test, ml == -EAGAIN || ml == -EBADMSG ||
			      (ml >= VISOCK_HS_HDR_LEN &&
			       ml <= VISOCK_HS_MAX_LEN),
			      "iteration %u: msg_len %d", iter, ml);
	if (ret)
		return;
	(*accepted)++;
	KUNIT_ASSERT_EQ(test, ml, (int)len);
	ret = visock_hs_encode(&m, out, sizeof(out));
	KUNIT_ASSERT_GE_MSG(test, ret, VISOCK_HS_HDR_LEN,
			    "iteration %u: re-encode", iter);
	KUNIT_ASSERT_LE(test, ret, (int)len);
	KUNIT_ASSERT_EQ(test, hs_decode_checked(test, out, ret, &again), 0);
	KUNIT_ASSERT_TRUE_MSG(test, hs_equal(&m, &again),
			      "iteration %u: round trip differs", iter);
}

/* Structured random messages: plausible headers, random TLV sequences. */
static void visock_hs_fuzz_random_test(struct kunit *test)
{
	static const u16 types[] = {
		0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 100, 0x7fff,
		0x8000, 0x8001, 0x8007, 0x8009, 0x800a, 0xffff,
	};
	unsigned int iter, accepted = 0, i, n;
	u32 seed = 0x48530001;
	struct hsb *h;

	h = kunit_kzalloc(test, sizeof(*h), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, h);

	for (iter = 0; iter < 10000; iter++) {
		u32 r = hs_rand(&seed);

		if ((r & 7) == 0) {
			/* Pure garbage. */
			h->len = hs_rand(&seed) % (VISOCK_HS_MAX_LEN + 40);
			for (i = 0; i < h->len; i++)
				h->b[i] = hs_rand(&seed);
			if (r & 8)
				put_be(h->b, 4, VISOCK_HS_MAGIC);
			if (r & 16)
				hsb_fix(h);
			hs_fuzz_one(test, h->b, h->len, iter, &accepted);
			continue;
		}
		hsb_start(h, (r >> 4) % 6, (r >> 8) % 4);
		n = hs_rand(&seed) % 14;
		for (i = 0; i < n; i++) {
			u32 q = hs_rand(&seed);
			unsigned int t = types[q % ARRAY_SIZE(types)];
			unsigned int base = t & ~VISOCK_TLV_CRITICAL;
			unsigned int len;
			u64 v;

			if (base <= TLV_LAST && base && (q & 0x300))
				len = tlv_size[base];
			else
				len = (q >> 10) % 20;
			/* Small values are more likely to be in range. */
			v = (q & 0x8000) ? hs_rand(&seed) % 8 :
				((u64)hs_rand(&seed) << 32) | hs_rand(&seed);
			if (base == VISOCK_TLV_RBUF && (q & 0x10000))
				v = 1ULL << (14 + hs_rand(&seed) % 11);
			if (base == VISOCK_TLV_QPN || base == VISOCK_TLV_PSN)
				v &= (q & 0x20000) ? 0xffffff : ~0ULL;
			hsb_tlv(h, t, len, v);
		}
		if ((r & 0x3000) == 0)
			h->len += (r >> 16) % 4;
		if (h->len > BUF_SIZE)
			h->len = BUF_SIZE;
		if (r & 0xc000)
			hsb_fix(h);
		hs_fuzz_one(test, h->b, h->len, iter, &accepted);
	}
	kunit_info(test, "%u of 10000 random messages accepted\n", accepted);
	KUNIT_EXPECT_GT(test, accepted, 0U);
}

/* Random mutations of valid messages. */
static void visock_hs_fuzz_mutate_test(struct kunit *test)
{
	unsigned int iter, accepted = 0, k, nmut;
	u32 seed = 0x48530002;
	struct visock_hs_msg m;
	struct hsb *h;

	h = kunit_kzalloc(test, sizeof(*h), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, h);

	for (iter = 0; iter < 10000; iter++) {
		u32 r = hs_rand(&seed);
		unsigned int t;

		hs_valid(&m, VISOCK_HS_REQ + r % 4);
		m.present |= hs_rand(&seed) & HSF_ALL;
		m.version = 1 + ((r >> 2) & 1) * ((r >> 24) % 255);
		hsb_start(h, m.type, m.version);
		/* Known TLVs in random rotation, some unknown ones. */
		k = hs_rand(&seed) % TLV_LAST;
		for (t = 0; t < TLV_LAST; t++) {
			unsigned int tt = 1 + (t + k) % TLV_LAST;

			if (m.present & VISOCK_HSF(tt))
				hsb_field(h, &m, tt,
					  tt | ((r & 0x100) ? CRIT : 0));
			if ((hs_rand(&seed) & 15) == 0)
				hsb_tlv(h, 20 + t, hs_rand(&seed) % 9, t);
		}
		hsb_fix(h);
		/* The unmutated message must be accepted. */
		KUNIT_ASSERT_EQ_MSG(test,
				    hs_decode_checked(test, h->b, h->len, &m),
				    0, "iteration %u: base rejected", iter);

		nmut = hs_rand(&seed) % 5;
		for (k = 0; k < nmut; k++) {
			u32 q = hs_rand(&seed);
			unsigned int pos = (q >> 8) % h->len;

			switch (q & 7) {
			case 0:
			case 1:
			case 2:
				h->b[pos] ^= 1 << ((q >> 4) & 7);
				break;
			case 3:
			case 4:
				h->b[pos] = q >> 24;
				break;
			case 5:
				h->len = pos;
				break;
			case 6:
				if (h->len < BUF_SIZE - 4)
					h->len += 1 + ((q >> 4) & 3);
				break;
			case 7:
				h->b[pos] = (q >> 4) & 1 ? 0 : 0xff;
				break;
			}
			if (!h->len)
				break;
		}
		if (r & 0x200)
			hsb_fix(h);
		hs_fuzz_one(test, h->b, h->len, iter, &accepted);
	}
	kunit_info(test, "%u of 10000 mutated messages accepted\n", accepted);
	KUNIT_EXPECT_GT(test, accepted, 0U);
}

static void visock_hs_type_name_test(struct kunit *test)
{
	KUNIT_EXPECT_STREQ(test, visock_hs_type_name(VISOCK_HS_REQ), "REQ");
	KUNIT_EXPECT_STREQ(test, visock_hs_type_name(VISOCK_HS_REP), "REP");
	KUNIT_EXPECT_STREQ(test, visock_hs_type_name(VISOCK_HS_CONFIRM),
			   "CONFIRM");
	KUNIT_EXPECT_STREQ(test, visock_hs_type_name(VISOCK_HS_DECLINE),
			   "DECLINE");
	KUNIT_EXPECT_STREQ(test, visock_hs_type_name(0), "?");
	KUNIT_EXPECT_STREQ(test, visock_hs_type_name(VISOCK_HS_SWITCH),
			   "SWITCH");
	KUNIT_EXPECT_STREQ(test, visock_hs_type_name(6), "?");
	KUNIT_EXPECT_STREQ(test, visock_hs_type_name(255), "?");
	KUNIT_EXPECT_STREQ(test, visock_hs_type_name(0x101), "?");
	KUNIT_EXPECT_STREQ(test, visock_hs_type_name(~0U), "?");
}

/* A SWITCH names an existing QP at both ends and a usable token index. */
static void visock_hs_switch_test(struct kunit *test)
{
	static const struct {
		u32 lgr_id, link_id, token;
		bool ok;
	} c[] = {
		{ 0x020304, 0x060708, 0xcafef00d, true },
		{ 1, 1, 1, true },
		{ 0xffffff, 0xffffff, 0xfffff001, true },
		{ 0, 0x060708, 0xcafef00d, false },
		{ 0x1000000, 0x060708, 0xcafef00d, false },
		{ 0x020304, 0, 0xcafef00d, false },
		{ 0x020304, 0x1000000, 0xcafef00d, false },
		{ 0x020304, 0x060708, 0xcafef000, false },
		{ 0x020304, 0x060708, 0x1000, false },
	};
	struct visock_hs_msg m, out;
	unsigned int i;
	struct hsb *h;
	u8 buf[256];

	h = kunit_kzalloc(test, sizeof(*h), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, h);
	for (i = 0; i < ARRAY_SIZE(c); i++) {
		hs_valid(&m, VISOCK_HS_SWITCH);
		m.lgr_id = c[i].lgr_id;
		m.link_id = c[i].link_id;
		m.token = c[i].token;
		KUNIT_EXPECT_EQ_MSG(test, visock_hs_encode(&m, buf, sizeof(buf)),
				    c[i].ok ? 101 : -EINVAL, "case %u", i);
		hsb_msg(h, &m);
		KUNIT_EXPECT_EQ_MSG(test,
				    hs_decode_checked(test, h->b, h->len, &out),
				    c[i].ok ? 0 : -EBADMSG, "case %u", i);
		/* The same values are fine in a REQ (0 asks for a new QP). */
		m.type = VISOCK_HS_REQ;
		m.present = required[VISOCK_HS_REQ];
		KUNIT_EXPECT_GT_MSG(test,
				    visock_hs_encode(&m, buf, sizeof(buf)), 0,
				    "case %u", i);
	}
}

/* TLV XFORM: an offer in a REQ, one choice elsewhere, AUTH still last. */
static void visock_hs_xform_test(struct kunit *test)
{
	static const struct {
		u8 type, n;
		u8 v[VISOCK_XFORM_OFFER_MAX + 1];
		bool ok;
	} c[] = {
		{ VISOCK_HS_REQ, 1, { 1 }, true },
		{ VISOCK_HS_REQ, 3, { 3, 1, 2 }, true },
		{ VISOCK_HS_REQ, 8, { 1, 2, 3, 4, 5, 6, 200, 255 }, true },
		{ VISOCK_HS_REP, 1, { 2 }, true },
		{ VISOCK_HS_REP, 1, { 77 }, true },	/* the caller judges */
		{ VISOCK_HS_REQ, 0, { }, false },
		{ VISOCK_HS_REQ, 9, { 1, 2, 3, 4, 5, 6, 7, 8, 9 }, false },
		{ VISOCK_HS_REQ, 2, { 0, 1 }, false },
		{ VISOCK_HS_REQ, 2, { 1, 0 }, false },
		{ VISOCK_HS_REQ, 3, { 1, 2, 1 }, false },
		{ VISOCK_HS_REP, 2, { 1, 2 }, false },
		{ VISOCK_HS_REP, 1, { 0 }, false },
		{ VISOCK_HS_SWITCH, 2, { 1, 2 }, false },
	};
	struct visock_hs_msg m, out;
	unsigned int i, off;
	struct hsb *h;
	u8 buf[512];
	int len;

	h = kunit_kzalloc(test, sizeof(*h), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, h);
	for (i = 0; i < ARRAY_SIZE(c); i++) {
		hs_valid(&m, c[i].type);
		/* A valid message plus the raw TLV, unchecked. */
		len = visock_hs_encode(&m, h->b, sizeof(h->b));
		KUNIT_ASSERT_GT(test, len, 0);
		h->len = len;
		put_be(h->b + h->len, 2, VISOCK_TLV_XFORM);
		put_be(h->b + h->len + 2, 2, c[i].n);
		memcpy(h->b + h->len + 4, c[i].v, c[i].n);
		h->len += 4 + c[i].n;
		hsb_fix(h);
		KUNIT_EXPECT_EQ_MSG(test,
				    hs_decode_checked(test, h->b, h->len, &out),
				    c[i].ok ? 0 : -EBADMSG, "case %u", i);
		if (c[i].ok) {
			KUNIT_EXPECT_EQ(test, out.xform_n, c[i].n);
			KUNIT_EXPECT_MEMEQ(test, out.xform, c[i].v, c[i].n);
			KUNIT_EXPECT_TRUE(test, out.present &
					  VISOCK_HSF(VISOCK_TLV_XFORM));
		}
		/* The encoder refuses what the decoder refuses. */
		m.present |= VISOCK_HSF(VISOCK_TLV_XFORM);
		m.xform_n = min_t(u8, c[i].n, VISOCK_XFORM_OFFER_MAX);
		memcpy(m.xform, c[i].v, m.xform_n);
		if (c[i].n > VISOCK_XFORM_OFFER_MAX)
			m.xform_n = c[i].n;
		len = visock_hs_encode(&m, buf, sizeof(buf));
		if (!c[i].ok) {
			KUNIT_EXPECT_EQ_MSG(test, len, -EINVAL, "case %u", i);
			continue;
		}
		KUNIT_ASSERT_GT_MSG(test, len, 0, "case %u", i);
		KUNIT_ASSERT_EQ(test, hs_decode_checked(test, buf, len, &out),
				0);
		KUNIT_EXPECT_TRUE(test, hs_equal(&m, &out));
	}

	/* With TLV AUTH the offer comes before it: the MAC ends the message. */
	hs_valid(&m, VISOCK_HS_REQ);
	m.present |= VISOCK_HSF(VISOCK_TLV_XFORM) | VISOCK_HSF(VISOCK_TLV_AUTH);
	m.xform_n = 2;
	m.xform[0] = VISOCK_XFORM_CHACHA20_POLY1305;
	m.xform[1] = VISOCK_XFORM_AES128_GCM;
	m.auth_version = VISOCK_AUTH_VERSION;
	m.auth_key_id = 7;
	memset(m.auth_mac, 0xa5, sizeof(m.auth_mac));
	len = visock_hs_encode(&m, buf, sizeof(buf));
	KUNIT_ASSERT_GT(test, len, 0);
	off = len - VISOCK_AUTH_TLV_LEN - 4;
	KUNIT_EXPECT_EQ(test, buf[off] << 8 | buf[off + 1], VISOCK_TLV_AUTH);
	KUNIT_EXPECT_EQ(test, buf[len - 1], 0xa5);
	off -= 4 + 2;
	KUNIT_EXPECT_EQ(test, buf[off] << 8 | buf[off + 1], VISOCK_TLV_XFORM);
	KUNIT_EXPECT_EQ(test, buf[off + 3], 2);
	KUNIT_EXPECT_EQ(test, buf[off + 4], VISOCK_XFORM_CHACHA20_POLY1305);
	KUNIT_EXPECT_EQ(test, buf[off + 5], VISOCK_XFORM_AES128_GCM);
	KUNIT_ASSERT_EQ(test, hs_decode_checked(test, buf, len, &out), 0);
	KUNIT_EXPECT_TRUE(test, hs_equal(&m, &out));
	KUNIT_EXPECT_EQ(test, out.auth_mac_off, len - VISOCK_AUTH_MAC_LEN);

	/* Critical bit: understood; twice (with and without it): duplicate. */
	hs_valid(&m, VISOCK_HS_REQ);
	len = visock_hs_encode(&m, h->b, sizeof(h->b));
	KUNIT_ASSERT_GT(test, len, 0);
	h->len = len;
	hsb_tlv(h, VISOCK_TLV_CRITICAL | VISOCK_TLV_XFORM, 1, 3);
	hsb_fix(h);
	KUNIT_EXPECT_EQ(test, hs_decode_checked(test, h->b, h->len, &out), 0);
	KUNIT_EXPECT_EQ(test, out.xform_n, 1);
	KUNIT_EXPECT_EQ(test, out.xform[0], 3);
	hsb_tlv(h, VISOCK_TLV_XFORM, 1, 1);
	hsb_fix(h);
	KUNIT_EXPECT_EQ(test, hs_decode_checked(test, h->b, h->len, &out),
			-EBADMSG);
}

static struct kunit_case visock_hs_codec_test_cases[] = {
	KUNIT_CASE_PARAM(visock_hs_roundtrip_test, rt_gen_params),
	KUNIT_CASE(visock_hs_golden_test),
	KUNIT_CASE(visock_hs_encode_invalid_test),
	KUNIT_CASE(visock_hs_encode_small_buffer_test),
	KUNIT_CASE_PARAM(visock_hs_value_test, value_gen_params),
	KUNIT_CASE(visock_hs_header_test),
	KUNIT_CASE(visock_hs_truncated_test),
	KUNIT_CASE(visock_hs_msg_len_test),
	KUNIT_CASE(visock_hs_oversize_test),
	KUNIT_CASE_PARAM(visock_hs_tlv_test, tlv_gen_params),
	KUNIT_CASE(visock_hs_tlv_size_test),
	KUNIT_CASE(visock_hs_fuzz_random_test),
	KUNIT_CASE(visock_hs_fuzz_mutate_test),
	KUNIT_CASE(visock_hs_type_name_test),
	KUNIT_CASE(visock_hs_switch_test),
	KUNIT_CASE(visock_hs_xform_test),
	{}
};

static struct kunit_suite visock_hs_codec_test_suite = {
	.name = "visock_hs_codec",
	.init = visock_hs_test_init,
	.exit = visock_hs_test_exit,
	.test_cases = visock_hs_codec_test_cases,
};

kunit_test_suite(visock_hs_codec_test_suite);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit tests of the visock handshake message codec");
