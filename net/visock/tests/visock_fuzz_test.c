// SPDX-License-Identifier: GPL-2.0
/*
 * Fuzzing of every visock decoder of bytes from the network: the SYN
 * option (visock_tcpopt.c), the handshake messages (REQ, REP, CONFIRM,
 * DECLINE, SWITCH; visock_hs_codec.c), and the messages of the data path
 * (visock_cdc_codec.c): cursor messages with the immediate data and the
 * cursor checks, the dispatch of a SEND on a shared QP (link messages),
 * switch replies and failover messages.
 *
 * Each decoder family is one test case.  An iteration builds a valid
 * message with the family's encoder, mutates it (bit flips, bytes and
 * 16/32-bit fields set to boundary values, truncation and extension,
 * inserted, deleted and copied bytes, random bytes; for handshake
 * messages also reordered, duplicated, dropped and unknown TLVs, TLV
 * lengths and values at their edges), and hands it to the decoder in a
 * buffer of exactly its length, so that KASAN reports any read beyond it.
 * The result must be the one a model written from the decoder's
 * documentation (its kernel-doc and visock_wire.h) predicts, error code
 * included; an accepted message must decode to the model's fields and
 * re-encode consistently.  When a single mutation determines why a
 * message is wrong (a truncated handshake message, a duplicated TLV, an
 * unknown critical TLV, version 0), the documented error for that reason
 * is checked on its own as well.
 *
 * Every iteration seeds the kernel's prandom generator from the module
 * parameter fuzz_seed, the family and the iteration number, so that one
 * iteration can be replayed alone: a failure prints the seed, the
 * iteration, the mutations and the message, and the module parameters
 * that rerun exactly that message.  fuzz_iters iterations run per family
 * (default 1000000), split into parameters of at most FUZZ_CHUNK
 * iterations each.
 */

#include <kunit/test.h>
#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/prandom.h>
#include <linux/sched.h>
#include <linux/siphash.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/visock.h>

#include "../visock_wire.h"

static unsigned long fuzz_iters = 1000000;
module_param(fuzz_iters, ulong, 0444);
MODULE_PARM_DESC(fuzz_iters, "messages per decoder family (default 1000000)");

static unsigned long long fuzz_seed = 0x5653465a;
module_param(fuzz_seed, ullong, 0444);
MODULE_PARM_DESC(fuzz_seed, "seed of the mutations (default 0x5653465a)");

static unsigned long fuzz_first;
module_param(fuzz_first, ulong, 0444);
MODULE_PARM_DESC(fuzz_first, "number of the first iteration (default 0)");

/* Iterations per KUnit parameter, and the most parameters per family. */
#define FUZZ_CHUNK	50000UL
#define FUZZ_MAX_CHUNKS	1000UL
/* Largest message a mutation may produce. */
#define FUZZ_MAX	600

enum fuzz_family {
	FZ_TCPOPT = 1,
	FZ_HS,
	FZ_CDC,
	FZ_LINK,
	FZ_SWREP,
	FZ_FO,
};

/* Results counted per chunk: accepted, then the errors decoders return. */
static const int fuzz_codes[] = {
	0, -EBADMSG, -EPROTO, -EOPNOTSUPP, -ENOENT, -EINVAL, -EAGAIN,
};

struct fuzz {
	struct kunit *test;
	struct rnd_state rnd;
	unsigned int family;
	unsigned long iter;
	u8 buf[FUZZ_MAX];
	unsigned int len;
	unsigned int nmut;		/* byte-level mutations applied */
	bool truncated;			/* one of them a truncation */
	char how[160];			/* their description */
	unsigned int how_len;
	unsigned long count[ARRAY_SIZE(fuzz_codes)];
	bool failed;
};

static const char * const fuzz_names[] = {
	[FZ_TCPOPT]	= "tcpopt",
	[FZ_HS]		= "hs",
	[FZ_CDC]	= "cdc",
	[FZ_LINK]	= "link",
	[FZ_SWREP]	= "swrep",
	[FZ_FO]		= "fo",
};

/* ------------------------------------------------------------------ */
/* Random numbers, notes, failures                                      */
/* ------------------------------------------------------------------ */

static void fuzz_seed_iter(struct fuzz *f)
{
	siphash_key_t key = { { fuzz_seed, f->family } };
	int i;

	prandom_seed_state(&f->rnd, siphash_1u64(f->iter, &key));
	/* The four components start out equal: mix them first. */
	for (i = 0; i < 8; i++)
		prandom_u32_state(&f->rnd);
}

static u32 fz_u32(struct fuzz *f)
{
	return prandom_u32_state(&f->rnd);
}

static u64 fz_u64(struct fuzz *f)
{
	return (u64)fz_u32(f) << 32 | fz_u32(f);
}

static u32 fz_below(struct fuzz *f, u32 n)
{
	return n ? fz_u32(f) % n : 0;
}

/* True one time in @n. */
static bool fz_one_in(struct fuzz *f, u32 n)
{
	return fz_below(f, n) == 0;
}

static const u32 fz_edges[] = {
	0, 1, 2, 3, 4, 5, 6, 7, 8, 0x10, 0x3f, 0x7f, 0x80, 0xfe, 0xff,
	0x100, 0x1ff, 0x200, 0x201, 0x7fff, 0x8000, 0x8001, 0xfffe, 0xffff,
	0x10000, 0xffffff, 0x1000000, 0x7fffffff, 0x80000000, 0xfffffffe,
	0xffffffff,
};

/* A value that is likely to sit on a boundary. */
static u32 fz_edge(struct fuzz *f)
{
	u32 r = fz_u32(f);

	switch (r & 3) {
	case 0:
		return fz_edges[(r >> 2) % ARRAY_SIZE(fz_edges)];
	case 1:
		return (1U << ((r >> 2) & 31)) + ((r >> 7) % 3) - 1;
	case 2:
		return (r >> 2) & 0xff;
	default:
		return fz_u32(f);
	}
}

static __printf(2, 3) void fz_note(struct fuzz *f, const char *fmt, ...)
{
	va_list ap;

	if (f->how_len >= sizeof(f->how) - 1)
		return;
	va_start(ap, fmt);
	f->how_len += vscnprintf(f->how + f->how_len,
				 sizeof(f->how) - f->how_len, fmt, ap);
	va_end(ap);
}

/*
 * Report the first failure of a chunk with everything needed to replay
 * it; the loop stops after it.
 */
static __printf(2, 3) void fz_fail(struct fuzz *f, const char *fmt, ...)
{
	char msg[192];
	unsigned int i;
	va_list ap;

	if (f->failed)
		return;
	f->failed = true;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	KUNIT_FAIL(f->test,
		   "%s: seed %#llx iteration %lu: %s\n"
		   "mutations:%s\n"
		   "replay: visock_kunit.fuzz_seed=%#llx visock_kunit.fuzz_first=%lu visock_kunit.fuzz_iters=1",
		   fuzz_names[f->family], fuzz_seed, f->iter, msg,
		   f->how_len ? f->how : " none", fuzz_seed, f->iter);
	kunit_info(f->test, "message, %u bytes:\n", f->len);
	for (i = 0; i < f->len; i += 32)
		kunit_info(f->test, "%04x: %*ph\n", i, min(32U, f->len - i),
			   f->buf + i);
}

#define FZ_CHECK(f, cond, fmt, ...)					\
	({								\
		bool __ok = (cond);					\
									\
		if (!__ok)						\
			fz_fail(f, "%s: " fmt, #cond, ##__VA_ARGS__);	\
		__ok;							\
	})

static void fz_count(struct fuzz *f, int ret)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(fuzz_codes); i++) {
		if (fuzz_codes[i] == ret) {
			f->count[i]++;
			return;
		}
	}
}

/*
 * A copy of the message in a buffer of exactly its length: KASAN (and
 * the slab's redzone) catch a decoder that reads past it.  Freed with
 * kfree(); ZERO_SIZE_PTR for an empty message, which faults when read.
 */
static u8 *fz_copy(struct fuzz *f)
{
	u8 *p = kmalloc(f->len, GFP_KERNEL);

	if (!p) {
		fz_fail(f, "out of memory");
		return NULL;
	}
	memcpy(p, f->buf, f->len);
	return p;
}

static void fz_put(u8 *p, unsigned int n, u64 v)
{
	while (n--) {
		p[n] = v & 0xff;
		v >>= 8;
	}
}

static u64 fz_get(const u8 *p, unsigned int n)
{
	u64 v = 0;

	while (n--)
		v = v << 8 | *p++;
	return v;
}

/* ------------------------------------------------------------------ */
/* Byte-level mutations                                                  */
/* ------------------------------------------------------------------ */

/* Apply one random mutation to f->buf[0..f->len); length <= FUZZ_MAX. */
static void fz_mutate(struct fuzz *f)
{
	static const u8 v8[] = { 0, 1, 0x7f, 0x80, 0xfe, 0xff };
	unsigned int pos = fz_below(f, f->len);
	unsigned int n, from, i;
	u32 r = fz_u32(f);
	u32 v;

	f->nmut++;
	switch (r % 10) {
	case 0:		/* bit flip */
		if (!f->len)
			break;
		f->buf[pos] ^= 1 << ((r >> 4) & 7);
		fz_note(f, " flip@%u.%u", pos, (r >> 4) & 7);
		break;
	case 1:		/* byte to a boundary value */
		if (!f->len)
			break;
		v = (r >> 4) & 1 ? v8[(r >> 5) % ARRAY_SIZE(v8)] : fz_u32(f);
		f->buf[pos] = v;
		fz_note(f, " set8@%u=%#x", pos, f->buf[pos]);
		break;
	case 2:		/* 16-bit field, or a length-like value */
	case 3:		/* 32-bit field */
		n = r % 10 == 2 ? 2 : 4;
		if (f->len < n)
			break;
		pos = fz_below(f, f->len - n + 1);
		v = (r >> 4) & 1 ? fz_edge(f) : f->len + ((r >> 5) % 5) - 2;
		fz_put(f->buf + pos, n, v);
		fz_note(f, " set%u@%u=%#x", n * 8, pos, (u32)fz_get(f->buf + pos, n));
		break;
	case 4:		/* truncation */
		if (!f->len)
			break;
		f->len = (r >> 4) & 1 ? f->len - 1 : pos;
		f->truncated = true;
		fz_note(f, " trunc=%u", f->len);
		break;
	case 5:		/* extension, zeros or random bytes */
		n = min(1 + ((r >> 4) & 15), FUZZ_MAX - f->len);
		for (i = 0; i < n; i++)
			f->buf[f->len + i] = (r >> 8) & 1 ? fz_u32(f) : 0;
		f->len += n;
		fz_note(f, " extend+%u", n);
		break;
	case 6:		/* random bytes over a span */
		n = min(1 + ((r >> 4) & 7), f->len - pos);
		for (i = 0; i < n; i++)
			f->buf[pos + i] = fz_u32(f);
		fz_note(f, " rand@%u+%u", pos, n);
		break;
	case 7:		/* insertion */
		n = min(1 + ((r >> 4) & 7), FUZZ_MAX - f->len);
		memmove(f->buf + pos + n, f->buf + pos, f->len - pos);
		for (i = 0; i < n; i++)
			f->buf[pos + i] = (r >> 8) & 1 ? fz_u32(f) : 0;
		f->len += n;
		fz_note(f, " insert@%u+%u", pos, n);
		break;
	case 8:		/* deletion */
		n = min(1 + ((r >> 4) & 7), f->len - pos);
		memmove(f->buf + pos, f->buf + pos + n, f->len - pos - n);
		f->len -= n;
		fz_note(f, " delete@%u+%u", pos, n);
		break;
	case 9:		/* a span copied over another place */
		if (!f->len)
			break;
		from = fz_below(f, f->len);
		n = min3(1 + ((r >> 4) & 15), f->len - pos, f->len - from);
		memmove(f->buf + pos, f->buf + from, n);
		fz_note(f, " copy%u->%u+%u", from, pos, n);
		break;
	}
}

/* 0..3 mutations, at least one in most iterations. */
static void fz_mutate_some(struct fuzz *f)
{
	unsigned int n = fz_below(f, 8), i;

	n = n < 4 ? 1 : n < 6 ? 2 : n < 7 ? 3 : 0;
	for (i = 0; i < n; i++)
		fz_mutate(f);
}

/* ------------------------------------------------------------------ */
/* SYN option                                                            */
/* ------------------------------------------------------------------ */

/*
 * visock_tcpopt_offset() as documented: EOL ends the walk, NOP is one
 * byte, any other option has a length byte of at least 2 that stays
 * inside the area; ours is kind 253 or 254, length 6, ExID 0x5653.
 */
static int ref_tcpopt_offset(const u8 *o, unsigned int len)
{
	unsigned int off = 0, olen;

	while (off < len) {
		if (o[off] == 0)
			return -ENOENT;
		if (o[off] == 1) {
			off++;
			continue;
		}
		if (off + 1 >= len)
			return -EBADMSG;
		olen = o[off + 1];
		if (olen < 2 || off + olen > len)
			return -EBADMSG;
		if ((o[off] == 253 || o[off] == 254) && olen == 6 &&
		    fz_get(o + off + 2, 2) == VISOCK_TCPOPT_EXID)
			return off;
		off += olen;
	}
	return -ENOENT;
}

/* Options a SYN carries, ours among them, within 40 bytes (or more). */
static void fz_build_tcpopt(struct fuzz *f, unsigned int *ours)
{
	unsigned int max = fz_one_in(f, 8) ? FUZZ_MAX : 40;
	struct visock_synopt opt;
	bool placed = false;

	*ours = ~0U;
	f->len = 0;
	while (f->len < max) {
		u32 r = fz_u32(f);
		unsigned int left = max - f->len;
		u8 *p = f->buf + f->len;

		switch (r % 9) {
		case 0:
			p[0] = 1;
			f->len++;
			continue;
		case 1:
			if (left < 4)
				break;
			p[0] = 2;
			p[1] = 4;
			fz_put(p + 2, 2, 1460);
			f->len += 4;
			continue;
		case 2:
			if (left < 3)
				break;
			p[0] = 3;
			p[1] = 3;
			p[2] = 7;
			f->len += 3;
			continue;
		case 3:
			if (left < 2)
				break;
			p[0] = 4;
			p[1] = 2;
			f->len += 2;
			continue;
		case 4:
			if (left < 10)
				break;
			p[0] = 8;
			p[1] = 10;
			fz_put(p + 2, 4, fz_u32(f));
			fz_put(p + 6, 4, fz_u32(f));
			f->len += 10;
			continue;
		case 5:		/* someone else's experimental option */
			if (left < 6)
				break;
			p[0] = (r >> 4) & 1 ? 253 : 254;
			p[1] = 4 + ((r >> 5) & 1) * 2;
			fz_put(p + 2, 2, (r >> 6) & 1 ? 0x5654 : fz_u32(f));
			if (p[1] == 6) {
				p[4] = r >> 8;
				p[5] = r >> 16;
			}
			f->len += p[1];
			continue;
		case 6:
		case 7:		/* ours, aligned by two NOPs as we send it */
			if (left < VISOCK_TCPOPT_ALIGNED || (placed && (r & 16)))
				break;
			opt.version = (r >> 5) & 3 ? 1 + ((r >> 8) & 3) :
				      (r >> 8) & 0xff;
			opt.flags = (r >> 16) & 1 ? (r >> 17) & 0xff :
				    visock_tcpopt_lazy_flags(1U << (8 + (r >> 20) % 20)) |
				    VISOCK_TCPOPT_F_RDMA;
			visock_tcpopt_write(p, &opt);
			if ((r >> 24) & 1)
				p[2] = 254;
			if (!placed)
				*ours = f->len + 2;
			placed = true;
			f->len += VISOCK_TCPOPT_ALIGNED;
			continue;
		case 8:		/* end of options, then padding or garbage */
			p[0] = 0;
			f->len++;
			while (f->len < max && (r & 32))
				f->buf[f->len++] = (r & 64) ? fz_u32(f) : 0;
			return;
		}
		/* Did not fit: usually stop, as a sender does. */
		if (r & 0x100)
			return;
	}
}

static void fz_tcpopt_one(struct fuzz *f)
{
	struct visock_synopt out, canary = { .version = 0xa5, .flags = 0x5a };
	unsigned int ours, base_len;
	int ret, ref, off;
	u32 bytes;
	u8 *p;

	fz_build_tcpopt(f, &ours);
	base_len = f->len;
	fz_mutate_some(f);

	p = fz_copy(f);
	if (!p)
		return;
	out = canary;
	ret = visock_tcpopt_find(p, f->len, &out);
	off = visock_tcpopt_offset(p, f->len);
	kfree(p);
	fz_count(f, ret);

	ref = ref_tcpopt_offset(f->buf, f->len);
	if (!FZ_CHECK(f, off == ref, "offset %d, expected %d", off, ref))
		return;
	if (ref >= 0)
		ref = f->buf[ref + 4] ? 0 : -EINVAL;
	if (!FZ_CHECK(f, ret == ref, "find %d, expected %d", ret, ref))
		return;
	/* The reason a single truncation determines. */
	if (f->nmut == 1 && f->truncated && ours < base_len &&
	    f->len > ours && f->len < ours + VISOCK_TCPOPT_LEN &&
	    ref_tcpopt_offset(f->buf, ours) == -ENOENT &&
	    !FZ_CHECK(f, ret == -EBADMSG,
		      "our option cut at %u: %d, not -EBADMSG", f->len, ret))
		return;
	if (ret) {
		FZ_CHECK(f, out.version == canary.version &&
			 out.flags == canary.flags, "output written on error");
		return;
	}
	if (!FZ_CHECK(f, out.version && out.version == f->buf[off + 4] &&
		      out.flags == f->buf[off + 5] &&
		      off + VISOCK_TCPOPT_LEN <= f->len,
		      "decoded %u/%#x at %d", out.version, out.flags, off))
		return;
	/* The lazy start threshold the flags carry, if any. */
	bytes = visock_tcpopt_lazy_bytes(out.flags);
	if (out.flags & VISOCK_TCPOPT_F_LAZY)
		FZ_CHECK(f, is_power_of_2(bytes) && bytes >= VISOCK_LAZY_MIN &&
			 bytes <= VISOCK_LAZY_MAX &&
			 visock_tcpopt_lazy_flags(bytes) ==
			 (out.flags & (VISOCK_TCPOPT_F_LAZY |
				       VISOCK_TCPOPT_LAZY_MASK)),
			 "lazy threshold %u of flags %#x", bytes, out.flags);
	else
		FZ_CHECK(f, bytes == 0, "lazy threshold %u without the flag",
			 bytes);
}

/* ------------------------------------------------------------------ */
/* Handshake messages                                                    */
/* ------------------------------------------------------------------ */

#define HS_TLV_LAST	VISOCK_TLV_AUTH
/*
 * TLV XFORM (variable length) is known to the reference decoder but not
 * generated; unknown TLVs are generated from the type after it.
 */
#define HS_UNKNOWN_FIRST	(VISOCK_TLV_XFORM + 1)
#define HS_CRIT		VISOCK_TLV_CRITICAL
#define HS_MAX_TLVS	32

static const u8 hs_size[HS_TLV_LAST + 1] = {
	[VISOCK_TLV_FEATURES] = 8, [VISOCK_TLV_GID] = 16,
	[VISOCK_TLV_QPN] = 4, [VISOCK_TLV_PSN] = 4, [VISOCK_TLV_MTU] = 1,
	[VISOCK_TLV_RBUF] = 16, [VISOCK_TLV_TOKEN] = 4, [VISOCK_TLV_LINK] = 8,
	[VISOCK_TLV_REASON] = 4, [VISOCK_TLV_AUTH] = VISOCK_AUTH_TLV_LEN,
};

#define HS_SETUP	(VISOCK_HSF(VISOCK_TLV_FEATURES) |		\
			 VISOCK_HSF(VISOCK_TLV_GID) |			\
			 VISOCK_HSF(VISOCK_TLV_QPN) |			\
			 VISOCK_HSF(VISOCK_TLV_PSN) |			\
			 VISOCK_HSF(VISOCK_TLV_MTU) |			\
			 VISOCK_HSF(VISOCK_TLV_RBUF) |			\
			 VISOCK_HSF(VISOCK_TLV_TOKEN) |			\
			 VISOCK_HSF(VISOCK_TLV_LINK))
#define HS_KNOWN	(((1U << (HS_TLV_LAST + 1)) - 1) & ~1U)
/*
 * TLVs the generator puts in valid messages: not AUTH, whose value is
 * longer than a struct hs_tlv holds; random bytes still reach it.
 */
#define HS_GEN		(HS_KNOWN & ~VISOCK_HSF(VISOCK_TLV_AUTH))

/* TLVs each message type must carry (visock_wire.h). */
static const u32 hs_required[] = {
	[VISOCK_HS_REQ] = HS_SETUP,
	[VISOCK_HS_REP] = HS_SETUP,
	[VISOCK_HS_CONFIRM] = VISOCK_HSF(VISOCK_TLV_TOKEN),
	[VISOCK_HS_DECLINE] = VISOCK_HSF(VISOCK_TLV_REASON),
	[VISOCK_HS_SWITCH] = HS_SETUP,
};

/*
 * A message as header fields and a list of TLVs, for the mutations that
 * know the format.  @dlen is the length a TLV declares, @alen the value
 * bytes that follow its header.
 */
struct hs_tlv {
	u16 type;
	u16 dlen;
	u8 alen;
	u8 v[32];
};

struct hs_build {
	u8 type;
	u8 version;
	unsigned int n;
	struct hs_tlv t[HS_MAX_TLVS];
};

/* What a single structural mutation must give (HS_ANY: not known). */
enum hs_expect { HS_ANY, HS_SAME, HS_OK, HS_BADMSG, HS_PROTO, HS_NOTSUPP };

static bool hs_same(const struct visock_hs_msg *a,
		    const struct visock_hs_msg *b)
{
	return a->type == b->type && a->version == b->version &&
	       a->present == b->present && a->features == b->features &&
	       !memcmp(a->gid, b->gid, sizeof(a->gid)) && a->qpn == b->qpn &&
	       a->psn == b->psn && a->mtu == b->mtu &&
	       a->rbuf_addr == b->rbuf_addr && a->rbuf_rkey == b->rbuf_rkey &&
	       a->rbuf_size == b->rbuf_size && a->token == b->token &&
	       a->lgr_id == b->lgr_id && a->link_id == b->link_id &&
	       a->reason == b->reason && a->xform_n == b->xform_n &&
	       !memcmp(a->xform, b->xform, sizeof(a->xform));
}

static bool hs_zero(const struct visock_hs_msg *m)
{
	return !memchr_inv(m, 0, sizeof(*m));
}

/* The value ranges of visock_hs_decode()'s kernel-doc. */
static bool ref_hs_values(const struct visock_hs_msg *m)
{
	u32 p = m->present;

	if ((p & VISOCK_HSF(VISOCK_TLV_QPN)) && (!m->qpn || m->qpn >= BIT(24)))
		return false;
	if ((p & VISOCK_HSF(VISOCK_TLV_PSN)) && m->psn >= BIT(24))
		return false;
	if ((p & VISOCK_HSF(VISOCK_TLV_MTU)) && (m->mtu < 1 || m->mtu > 5))
		return false;
	if ((p & VISOCK_HSF(VISOCK_TLV_RBUF)) &&
	    (!is_power_of_2(m->rbuf_size) || m->rbuf_size < VISOCK_RBUF_MIN ||
	     m->rbuf_size > VISOCK_RBUF_MAX))
		return false;
	if ((p & VISOCK_HSF(VISOCK_TLV_TOKEN)) && !m->token)
		return false;
	if ((p & VISOCK_HSF(VISOCK_TLV_REASON)) && m->reason > VISOCK_FB_MAX)
		return false;
	if ((p & VISOCK_HSF(VISOCK_TLV_AUTH)) &&
	    (!m->auth_version || !m->auth_key_id))
		return false;
	if (p & VISOCK_HSF(VISOCK_TLV_XFORM)) {
		unsigned int i, j;

		if (m->type != VISOCK_HS_REQ && m->xform_n != 1)
			return false;
		for (i = 0; i < m->xform_n; i++)
			for (j = 0; j <= i; j++)
				if (!m->xform[i] ||
				    (j < i && m->xform[j] == m->xform[i]))
					return false;
	}
	if (m->type == VISOCK_HS_SWITCH &&
	    (!m->lgr_id || m->lgr_id >= BIT(24) || !m->link_id ||
	     m->link_id >= BIT(24) || !(m->token & VISOCK_TOKEN_IDX_MASK)))
		return false;
	return true;
}

static void ref_hs_field(struct visock_hs_msg *m, unsigned int t, const u8 *v)
{
	switch (t) {
	case VISOCK_TLV_FEATURES:
		m->features = fz_get(v, 8);
		break;
	case VISOCK_TLV_GID:
		memcpy(m->gid, v, 16);
		break;
	case VISOCK_TLV_QPN:
		m->qpn = fz_get(v, 4);
		break;
	case VISOCK_TLV_PSN:
		m->psn = fz_get(v, 4);
		break;
	case VISOCK_TLV_MTU:
		m->mtu = v[0];
		break;
	case VISOCK_TLV_RBUF:
		m->rbuf_addr = fz_get(v, 8);
		m->rbuf_rkey = fz_get(v + 8, 4);
		m->rbuf_size = fz_get(v + 12, 4);
		break;
	case VISOCK_TLV_TOKEN:
		m->token = fz_get(v, 4);
		break;
	case VISOCK_TLV_LINK:
		m->lgr_id = fz_get(v, 4);
		m->link_id = fz_get(v + 4, 4);
		break;
	case VISOCK_TLV_REASON:
		m->reason = fz_get(v, 4);
		break;
	case VISOCK_TLV_AUTH:
		m->auth_version = v[0];
		m->auth_key_id = fz_get(v + 4, 4);
		memcpy(m->auth_nonce, v + 8, 16);
		memcpy(m->auth_mac, v + 24, 32);
		break;
	}
}

/* visock_hs_decode() as its kernel-doc describes it, check by check. */
static int ref_hs_decode(const u8 *b, unsigned int len,
			 struct visock_hs_msg *m)
{
	u16 seen[(VISOCK_HS_MAX_LEN - VISOCK_HS_HDR_LEN) / 4];
	unsigned int off, nseen = 0, i;

	memset(m, 0, sizeof(*m));
	if (len < VISOCK_HS_HDR_LEN || fz_get(b, 4) != VISOCK_HS_MAGIC ||
	    len > VISOCK_HS_MAX_LEN || fz_get(b + 6, 2) != len)
		return -EBADMSG;
	if (b[5] < VISOCK_HS_MIN_VERSION)
		return -EPROTO;
	if (b[4] < VISOCK_HS_REQ || b[4] > VISOCK_HS_SWITCH)
		return -EBADMSG;
	m->type = b[4];
	m->version = b[5];
	for (off = VISOCK_HS_HDR_LEN; off < len; ) {
		unsigned int type, base, vlen;

		if (len - off < 4)
			return -EBADMSG;
		type = fz_get(b + off, 2);
		vlen = fz_get(b + off + 2, 2);
		if (off + 4 + vlen > len)
			return -EBADMSG;
		base = type & ~HS_CRIT;
		for (i = 0; i < nseen; i++)
			if (seen[i] == base)
				return -EBADMSG;
		seen[nseen++] = base;
		if (base == VISOCK_TLV_XFORM) {
			if (!vlen || vlen > VISOCK_XFORM_OFFER_MAX)
				return -EBADMSG;
			m->xform_n = vlen;
			memcpy(m->xform, b + off + 4, vlen);
			m->present |= VISOCK_HSF(base);
		} else if (base >= 1 && base <= HS_TLV_LAST) {
			if (base == VISOCK_TLV_AUTH ? vlen < hs_size[base] :
			    vlen != hs_size[base])
				return -EBADMSG;
			if (base == VISOCK_TLV_AUTH)
				m->auth_mac_off = off + 4 + 24;
			ref_hs_field(m, base, b + off + 4);
			m->present |= VISOCK_HSF(base);
		} else if (type & HS_CRIT) {
			return -EOPNOTSUPP;
		}
		off += 4 + vlen;
	}
	if ((m->present & hs_required[m->type]) != hs_required[m->type])
		return -EBADMSG;
	if (!ref_hs_values(m))
		return -EBADMSG;
	return 0;
}

/* Fields of TLVs that are not present are 0, as the decoder leaves them. */
static void hs_clear_absent(struct visock_hs_msg *m)
{
	u32 p = m->present;

	if (!(p & VISOCK_HSF(VISOCK_TLV_FEATURES)))
		m->features = 0;
	if (!(p & VISOCK_HSF(VISOCK_TLV_GID)))
		memset(m->gid, 0, sizeof(m->gid));
	if (!(p & VISOCK_HSF(VISOCK_TLV_QPN)))
		m->qpn = 0;
	if (!(p & VISOCK_HSF(VISOCK_TLV_PSN)))
		m->psn = 0;
	if (!(p & VISOCK_HSF(VISOCK_TLV_MTU)))
		m->mtu = 0;
	if (!(p & VISOCK_HSF(VISOCK_TLV_RBUF))) {
		m->rbuf_addr = 0;
		m->rbuf_rkey = 0;
		m->rbuf_size = 0;
	}
	if (!(p & VISOCK_HSF(VISOCK_TLV_TOKEN)))
		m->token = 0;
	if (!(p & VISOCK_HSF(VISOCK_TLV_LINK))) {
		m->lgr_id = 0;
		m->link_id = 0;
	}
	if (!(p & VISOCK_HSF(VISOCK_TLV_REASON)))
		m->reason = 0;
	if (!(p & VISOCK_HSF(VISOCK_TLV_AUTH))) {
		m->auth_version = 0;
		m->auth_key_id = 0;
		memset(m->auth_nonce, 0, sizeof(m->auth_nonce));
		memset(m->auth_mac, 0, sizeof(m->auth_mac));
		m->auth_mac_off = 0;
	}
}

/* A random valid message: required TLVs, some optional ones, in range. */
static void fz_hs_msg(struct fuzz *f, struct visock_hs_msg *m)
{
	u32 r = fz_u32(f);
	unsigned int i;

	memset(m, 0, sizeof(*m));
	m->type = VISOCK_HS_REQ + r % 5;
	m->version = (r >> 3) & 3 ? VISOCK_HS_VERSION : 1 + fz_below(f, 255);
	m->present = hs_required[m->type] | (fz_u32(f) & HS_GEN);
	m->features = (r >> 5) & 1 ? VISOCK_FEAT_WRITE_IMM : fz_u64(f);
	for (i = 0; i < sizeof(m->gid); i++)
		m->gid[i] = fz_u32(f);
	m->qpn = (r >> 6) & 1 ? 1 + fz_below(f, BIT(24) - 1) :
		 (r >> 7) & 1 ? 1 : BIT(24) - 1;
	m->psn = (r >> 8) & 1 ? fz_below(f, BIT(24)) : (r >> 9) & 1 ? 0 :
		 BIT(24) - 1;
	m->mtu = 1 + fz_below(f, 5);
	m->rbuf_addr = fz_u64(f);
	m->rbuf_rkey = fz_u32(f);
	m->rbuf_size = VISOCK_RBUF_MIN << fz_below(f, 10);
	m->token = fz_u32(f) | 1;
	if ((r >> 10) & 1)
		m->token = (r >> 11) & 1 ? 1 : 0xffffffff;
	m->lgr_id = 1 + fz_below(f, BIT(24) - 1);
	m->link_id = (r >> 12) & 1 ? 1 : BIT(24) - 1;
	m->reason = fz_below(f, VISOCK_FB_MAX + 1);
	hs_clear_absent(m);
}

static void hs_parse(struct hs_build *h, const u8 *b, unsigned int len)
{
	unsigned int off;

	h->type = b[4];
	h->version = b[5];
	h->n = 0;
	for (off = VISOCK_HS_HDR_LEN; off < len && h->n < HS_MAX_TLVS; h->n++) {
		struct hs_tlv *t = &h->t[h->n];

		t->type = fz_get(b + off, 2);
		t->dlen = fz_get(b + off + 2, 2);
		t->alen = t->dlen;
		memcpy(t->v, b + off + 4, t->alen);
		off += 4 + t->alen;
	}
}

static void hs_serialise(struct fuzz *f, const struct hs_build *h)
{
	unsigned int i, off = VISOCK_HS_HDR_LEN;

	for (i = 0; i < h->n && off + 4 + h->t[i].alen <= FUZZ_MAX; i++) {
		fz_put(f->buf + off, 2, h->t[i].type);
		fz_put(f->buf + off + 2, 2, h->t[i].dlen);
		memcpy(f->buf + off + 4, h->t[i].v, h->t[i].alen);
		off += 4 + h->t[i].alen;
	}
	fz_put(f->buf, 4, VISOCK_HS_MAGIC);
	f->buf[4] = h->type;
	f->buf[5] = h->version;
	fz_put(f->buf + 6, 2, off);
	f->len = off;
}

static void hs_insert(struct hs_build *h, unsigned int at,
		      const struct hs_tlv *t)
{
	if (h->n >= HS_MAX_TLVS)
		return;
	memmove(&h->t[at + 1], &h->t[at], (h->n - at) * sizeof(*t));
	h->t[at] = *t;
	h->n++;
}

/* An out-of-range value for known TLV @t, or false if it has none. */
static bool hs_bad_value(struct fuzz *f, struct hs_tlv *t, u8 msg_type)
{
	static const u32 bad_size[] = {
		0, 1, VISOCK_RBUF_MIN / 2, VISOCK_RBUF_MIN + 1,
		VISOCK_RBUF_MAX * 2, VISOCK_RBUF_MAX - 1, 0xffffffff,
	};
	u32 r = fz_u32(f);

	switch (t->type & ~HS_CRIT) {
	case VISOCK_TLV_QPN:
		fz_put(t->v, 4, r & 1 ? 0 : r & 2 ? BIT(24) : BIT(24) | fz_u32(f));
		return true;
	case VISOCK_TLV_PSN:
		fz_put(t->v, 4, r & 1 ? BIT(24) : BIT(24) | fz_u32(f));
		return true;
	case VISOCK_TLV_MTU:
		t->v[0] = r & 1 ? 0 : r & 2 ? 6 : 6 + fz_below(f, 250);
		return true;
	case VISOCK_TLV_RBUF:
		fz_put(t->v + 12, 4, bad_size[r % ARRAY_SIZE(bad_size)]);
		return true;
	case VISOCK_TLV_TOKEN:
		if (msg_type == VISOCK_HS_SWITCH && (r & 1))
			fz_put(t->v, 4, fz_u32(f) & ~VISOCK_TOKEN_IDX_MASK);
		else
			memset(t->v, 0, 4);
		return true;
	case VISOCK_TLV_REASON:
		fz_put(t->v, 4, r & 1 ? VISOCK_FB_MAX + 1 : fz_u32(f) | BIT(31));
		return true;
	case VISOCK_TLV_LINK:
		if (msg_type != VISOCK_HS_SWITCH)
			return false;
		fz_put(t->v + (r & 4), 4, r & 1 ? 0 : r & 2 ? BIT(24) :
		       BIT(24) + (r >> 8));
		return true;
	}
	return false;
}

/* One mutation that knows the TLV format; returns what it must give. */
static enum hs_expect hs_mutate(struct fuzz *f, struct hs_build *h,
				bool *fix_len)
{
	unsigned int i = fz_below(f, h->n), j = fz_below(f, h->n + 1);
	u32 r = fz_u32(f);
	struct hs_tlv t = {};
	unsigned int base;

	switch (r % 12) {
	case 0:		/* reorder */
		if (h->n < 2)
			return HS_SAME;
		j = fz_below(f, h->n);
		swap(h->t[i], h->t[j]);
		fz_note(f, " swap%u,%u", i, j);
		return HS_SAME;
	case 1:		/* a known TLV marked critical: still understood */
		if (!h->n)
			return HS_SAME;
		h->t[i].type |= HS_CRIT;
		fz_note(f, " crit%u", i);
		return HS_SAME;
	case 2:		/* unknown TLV, skipped */
	case 3:		/* unknown critical TLV */
		t.type = HS_UNKNOWN_FIRST +
			 fz_below(f, 0x8000 - HS_UNKNOWN_FIRST);
		if ((r >> 4) & 1)
			t.type = (r >> 5) & 1 ? 0 : HS_UNKNOWN_FIRST;
		if (r % 12 == 3)
			t.type |= HS_CRIT;
		t.alen = fz_below(f, sizeof(t.v) + 1);
		t.dlen = t.alen;
		prandom_bytes_state(&f->rnd, t.v, t.alen);
		hs_insert(h, j, &t);
		fz_note(f, " unknown%#x+%u@%u", t.type, t.alen, j);
		return r % 12 == 3 ? HS_NOTSUPP : HS_SAME;
	case 4:		/* duplicate, maybe differing in the critical bit */
		if (!h->n)
			return HS_ANY;
		t = h->t[i];
		if ((r >> 4) & 1)
			t.type ^= HS_CRIT;
		if ((r >> 5) & 1)
			prandom_bytes_state(&f->rnd, t.v, t.alen);
		hs_insert(h, j, &t);
		fz_note(f, " dup%u@%u", i, j);
		/* An earlier unknown critical one fails first. */
		base = t.type & ~HS_CRIT;
		return base >= 1 && base <= HS_TLV_LAST ? HS_BADMSG : HS_ANY;
	case 5:		/* drop one */
		if (!h->n)
			return HS_ANY;
		base = h->t[i].type & ~HS_CRIT;
		fz_note(f, " drop%u(%#x)", i, h->t[i].type);
		memmove(&h->t[i], &h->t[i + 1], (h->n - i - 1) * sizeof(t));
		h->n--;
		if (h->type < VISOCK_HS_REQ || h->type > VISOCK_HS_SWITCH)
			return HS_ANY;
		if (base < 32 && (hs_required[h->type] & BIT(base)))
			return HS_BADMSG;
		return HS_OK;
	case 6:		/* TLV length at an edge */
		if (!h->n)
			return HS_ANY;
		base = h->t[i].type & ~HS_CRIT;
		switch ((r >> 4) & 7) {
		case 0:
			h->t[i].dlen = 0;
			break;
		case 1:
			h->t[i].dlen++;
			break;
		case 2:
			h->t[i].dlen--;
			break;
		case 3:
			h->t[i].dlen = 0xffff;
			break;
		case 4:
			h->t[i].dlen = 0x8000 | h->t[i].dlen;
			break;
		default:
			h->t[i].dlen = fz_edge(f);
			break;
		}
		fz_note(f, " tlvlen%u=%#x", i, h->t[i].dlen);
		if (h->t[i].dlen == h->t[i].alen)
			return HS_SAME;
		return base >= 1 && base <= HS_TLV_LAST ? HS_BADMSG : HS_ANY;
	case 7:		/* value out of range */
		if (!h->n || !hs_bad_value(f, &h->t[i], h->type))
			return HS_ANY;
		fz_note(f, " badvalue%u(%#x)", i, h->t[i].type);
		return HS_BADMSG;
	case 8:		/* version */
		h->version = (r >> 4) & 1 ? 0 : fz_u32(f);
		fz_note(f, " version=%u", h->version);
		return h->version ? HS_OK : HS_PROTO;
	case 9:		/* message type */
		h->type = (r >> 4) & 1 ? 0 : 6 + fz_below(f, 250);
		fz_note(f, " type=%u", h->type);
		return HS_BADMSG;
	case 10:	/* header length off, or truncated without fixing it */
		*fix_len = false;
		fz_note(f, " nofix");
		return HS_ANY;
	default:	/* value bytes, in range or not */
		if (!h->n || !h->t[i].alen)
			return HS_ANY;
		h->t[i].v[fz_below(f, h->t[i].alen)] ^= 1 << (r >> 28);
		fz_note(f, " vflip%u", i);
		return HS_ANY;
	}
}

static void fz_hs_one(struct fuzz *f)
{
	struct visock_hs_msg in, m, ref, again;
	enum hs_expect expect = HS_SAME;
	struct hs_build *h;
	bool fix_len = true;
	unsigned int n, i, hdr_len;
	int ret, ref_ret, ml, ref_ml, len;
	u8 *p;

	h = kmalloc(sizeof(*h), GFP_KERNEL);
	if (!h) {
		fz_fail(f, "out of memory");
		return;
	}
	fz_hs_msg(f, &in);
	len = visock_hs_encode(&in, f->buf, FUZZ_MAX);
	f->len = len > 0 ? len : 0;
	if (!FZ_CHECK(f, len >= VISOCK_HS_HDR_LEN,
		      "encoder refused a valid message: %d", len))
		goto out;
	hs_parse(h, f->buf, f->len);

	/* Structural mutations: none, one (whose result is known), more. */
	n = fz_below(f, 8);
	n = n < 1 ? 0 : n < 5 ? 1 : n < 7 ? 2 : 3;
	for (i = 0; i < n; i++) {
		enum hs_expect e = hs_mutate(f, h, &fix_len);

		expect = i ? HS_ANY : e;
	}
	hs_serialise(f, h);
	hdr_len = f->len;
	/* Then bytes, for a third of the messages. */
	if (fz_one_in(f, 3)) {
		fz_mutate_some(f);
		expect = HS_ANY;
		if (fix_len && f->len >= VISOCK_HS_HDR_LEN && fz_below(f, 4))
			fz_put(f->buf + 6, 2, f->len);
	} else if (!fix_len) {
		/* The header keeps the old length: truncate or extend. */
		if (f->len && fz_one_in(f, 2))
			f->len = fz_below(f, f->len);
		else
			f->len = min(FUZZ_MAX, f->len + 1 + fz_below(f, 8));
		fz_note(f, " len=%u", f->len);
		/* Shorter or longer than the header says: first check. */
		expect = hdr_len != f->len ? HS_BADMSG : HS_ANY;
	}
	if (f->len > VISOCK_HS_MAX_LEN && expect != HS_ANY)
		expect = HS_BADMSG;

	p = fz_copy(f);
	if (!p)
		goto out;
	memset(&m, 0x5a, sizeof(m));
	ret = visock_hs_decode(p, f->len, &m);
	ml = visock_hs_msg_len(p, f->len);
	kfree(p);
	fz_count(f, ret);

	/* The framing helper: magic and length field only. */
	if (f->len < VISOCK_HS_HDR_LEN)
		ref_ml = -EAGAIN;
	else if (fz_get(f->buf, 4) != VISOCK_HS_MAGIC ||
		 fz_get(f->buf + 6, 2) < VISOCK_HS_HDR_LEN ||
		 fz_get(f->buf + 6, 2) > VISOCK_HS_MAX_LEN)
		ref_ml = -EBADMSG;
	else
		ref_ml = fz_get(f->buf + 6, 2);
	if (!FZ_CHECK(f, ml == ref_ml, "msg_len %d, expected %d", ml, ref_ml))
		goto out;

	ref_ret = ref_hs_decode(f->buf, f->len, &ref);
	if (!FZ_CHECK(f, ret == ref_ret, "decode %d, expected %d", ret,
		      ref_ret))
		goto out;
	switch (expect) {
	case HS_ANY:
		break;
	case HS_SAME:
		if (FZ_CHECK(f, ret == 0, "%d, not accepted", ret))
			FZ_CHECK(f, hs_same(&m, &in), "decoded fields differ");
		break;
	case HS_OK:
		FZ_CHECK(f, ret == 0, "%d, not accepted", ret);
		break;
	case HS_BADMSG:
		FZ_CHECK(f, ret == -EBADMSG, "%d, not -EBADMSG", ret);
		break;
	case HS_PROTO:
		FZ_CHECK(f, ret == -EPROTO, "%d, not -EPROTO", ret);
		break;
	case HS_NOTSUPP:
		FZ_CHECK(f, ret == -EOPNOTSUPP, "%d, not -EOPNOTSUPP", ret);
		break;
	}
	if (f->failed)
		goto out;
	if (ret) {
		FZ_CHECK(f, hs_zero(&m), "message not zeroed on error %d", ret);
		goto out;
	}
	if (!FZ_CHECK(f, hs_same(&m, &ref), "fields differ from the model") ||
	    !FZ_CHECK(f, ml == f->len, "msg_len %d of an accepted message",
		      ml))
		goto out;
	/* What was accepted re-encodes to the same message. */
	len = visock_hs_encode(&m, h->t[0].v, 0);
	FZ_CHECK(f, len == -EMSGSIZE, "encode into 0 bytes: %d", len);
	p = kmalloc(VISOCK_HS_MAX_LEN, GFP_KERNEL);
	if (!p)
		goto out;
	len = visock_hs_encode(&m, p, VISOCK_HS_MAX_LEN);
	if (FZ_CHECK(f, len >= VISOCK_HS_HDR_LEN && len <= (int)f->len,
		     "re-encode: %d", len)) {
		ret = visock_hs_decode(p, len, &again);
		FZ_CHECK(f, ret == 0 && hs_same(&again, &m),
			 "re-encoded message decodes to %d/other fields", ret);
	}
	kfree(p);
out:
	kfree(h);
}

/* ------------------------------------------------------------------ */
/* Cursor messages, immediate data, cursors                             */
/* ------------------------------------------------------------------ */

static void fz_cdc_msg(struct fuzz *f, struct visock_cdc *m)
{
	u32 r = fz_u32(f);

	m->token = r & 1 ? fz_u32(f) | 1 : fz_edge(f) | 1;
	m->seq = r & 2 ? fz_u32(f) : fz_edge(f);
	m->prod.wrap = fz_edge(f);
	m->cons.wrap = fz_edge(f);
	m->prod.count = r & 4 ? fz_below(f, VISOCK_RBUF_MAX) : fz_edge(f);
	m->cons.count = r & 8 ? fz_below(f, VISOCK_RBUF_MAX) : fz_edge(f);
	m->credits = r & 16 ? fz_below(f, 64) : fz_edge(f);
	m->flags = (r >> 8) & VISOCK_CDC_F_ALL;
}

/* visock_cdc_decode()'s kernel-doc and the layout in visock_wire.h. */
static int ref_cdc(const u8 *b, unsigned int len, struct visock_cdc *m)
{
	memset(m, 0, sizeof(*m));
	if (len != VISOCK_CDC_LEN || b[0] != VISOCK_CDC_TYPE ||
	    b[1] != VISOCK_CDC_VERSION || (b[2] & ~VISOCK_CDC_F_ALL) || b[3] ||
	    memchr_inv(b + 26, 0, 6))
		return -EBADMSG;
	m->flags = b[2];
	m->token = fz_get(b + 4, 4);
	m->seq = fz_get(b + 8, 4);
	m->prod.wrap = fz_get(b + 12, 2);
	m->cons.wrap = fz_get(b + 14, 2);
	m->prod.count = fz_get(b + 16, 4);
	m->cons.count = fz_get(b + 20, 4);
	m->credits = fz_get(b + 24, 2);
	return m->token ? 0 : -EBADMSG;
}

static bool cdc_same(const struct visock_cdc *a, const struct visock_cdc *b)
{
	return a->token == b->token && a->seq == b->seq &&
	       a->prod.wrap == b->prod.wrap && a->prod.count == b->prod.count &&
	       a->cons.wrap == b->cons.wrap && a->cons.count == b->cons.count &&
	       a->credits == b->credits && a->flags == b->flags;
}

static bool cursor_eq(const struct visock_cursor *a,
		      const struct visock_cursor *b)
{
	return a->wrap == b->wrap && a->count == b->count;
}

/*
 * A cursor from the peer checked against one of ours the way the data
 * path does (visock_cursor_diff()): a distance d in 0..@ring exactly when
 * advancing @old by d bytes gives @new, -EINVAL for a zero ring or an
 * offset outside it, -ERANGE otherwise.
 */
static void fz_cursor(struct fuzz *f, const struct visock_cursor *peer)
{
	struct visock_cursor old, c;
	u32 r = fz_u32(f), ring, back;
	bool reach;
	s64 d;

	ring = r & 3 ? visock_sizeclass_bytes(fz_below(f, 10)) : fz_edge(f);
	/* Ours: at, shortly before, or anywhere relative to the peer's. */
	old = *peer;
	if ((r >> 2) & 1 && ring) {
		back = (r >> 3) & 1 ? fz_below(f, ring + 2) : fz_edge(f);
		old.count = ring ? old.count % ring : 0;
		old.wrap -= back / ring + 1;
		visock_cursor_add(&old, ring, ring - back % ring);
	} else if ((r >> 4) & 1) {
		old.wrap = fz_edge(f);
		old.count = fz_edge(f);
	}
	d = visock_cursor_diff(ring, &old, peer);
	if (!ring || old.count >= ring || peer->count >= ring) {
		FZ_CHECK(f, d == -EINVAL, "ring %u: %lld, not -EINVAL", ring, d);
		FZ_CHECK(f, !ring || !visock_cursor_valid(ring, &old) ||
			 !visock_cursor_valid(ring, peer), "cursor valid");
		return;
	}
	FZ_CHECK(f, visock_cursor_valid(ring, &old) &&
		 visock_cursor_valid(ring, peer), "cursor not valid");
	/* Candidates: (peer - old) mod ring, and a whole ring. */
	c = old;
	back = ((u64)peer->count + ring - old.count) % ring;
	visock_cursor_add(&c, ring, back);
	reach = cursor_eq(&c, peer);
	if (!reach && !back) {
		c = old;
		visock_cursor_add(&c, ring, ring);
		reach = cursor_eq(&c, peer);
		back = ring;
	}
	if (reach)
		FZ_CHECK(f, d == back, "ring %u: distance %lld, expected %u",
			 ring, d, back);
	else
		FZ_CHECK(f, d == -ERANGE, "ring %u: %lld, not -ERANGE", ring, d);
}

/* Immediate data: any 32 bits decode into the documented ranges. */
static void fz_imm(struct fuzz *f, u32 imm)
{
	u32 idx, bytes, credits, again;
	int ret;

	visock_imm_decode(imm, &idx, &bytes, &credits);
	if (!FZ_CHECK(f, idx <= VISOCK_TOKEN_IDX_MASK && bytes >= 1 &&
		      bytes <= VISOCK_IMM_LEN_MAX &&
		      credits <= VISOCK_IMM_CREDITS_MAX,
		      "imm %#x: idx %u bytes %u credits %u", imm, idx, bytes,
		      credits))
		return;
	ret = visock_imm_encode(idx, bytes, credits, &again);
	if (idx)
		FZ_CHECK(f, !ret && again == imm, "imm %#x re-encodes to %d/%#x",
			 imm, ret, again);
	else
		FZ_CHECK(f, ret == -EINVAL, "index 0 encodes: %d", ret);
}

static void fz_cdc_one(struct fuzz *f)
{
	struct visock_cdc in = {}, m, ref;
	u8 again[VISOCK_CDC_LEN];
	int ret, ref_ret;
	u8 *p;

	fz_cdc_msg(f, &in);
	ret = visock_cdc_encode(&in, f->buf, FUZZ_MAX);
	f->len = VISOCK_CDC_LEN;
	if (!FZ_CHECK(f, ret == VISOCK_CDC_LEN, "encode: %d", ret))
		return;
	fz_mutate_some(f);

	p = fz_copy(f);
	if (!p)
		return;
	memset(&m, 0, sizeof(m));
	ret = visock_cdc_decode(p, f->len, &m);
	kfree(p);
	fz_count(f, ret);

	ref_ret = ref_cdc(f->buf, f->len, &ref);
	if (!FZ_CHECK(f, ret == ref_ret, "decode %d, expected %d", ret,
		      ref_ret))
		return;
	if (f->len != VISOCK_CDC_LEN &&
	    !FZ_CHECK(f, ret == -EBADMSG, "length %u: %d", f->len, ret))
		return;
	if (!f->nmut && !FZ_CHECK(f, !ret && cdc_same(&m, &in),
				  "unmutated message: %d", ret))
		return;
	if (ret) {
		fz_imm(f, fz_get(f->buf, min(4U, f->len)) ^ fz_edge(f));
		return;
	}
	if (!FZ_CHECK(f, cdc_same(&m, &ref), "fields differ from the model"))
		return;
	/* Every accepted message has exactly one encoding. */
	ret = visock_cdc_encode(&m, again, sizeof(again));
	if (!FZ_CHECK(f, ret == VISOCK_CDC_LEN &&
		      !memcmp(again, f->buf, VISOCK_CDC_LEN),
		      "re-encode: %d or other bytes", ret))
		return;
	fz_cursor(f, fz_u32(f) & 1 ? &m.prod : &m.cons);
	fz_imm(f, m.seq);
}

/* ------------------------------------------------------------------ */
/* Dispatch of a SEND on a shared QP: link messages                     */
/* ------------------------------------------------------------------ */

/* visock_ctl_peek()'s kernel-doc and the link message in visock_wire.h */
static int ref_peek(const u8 *b, unsigned int len, u8 *type, u32 *val)
{
	if (len != VISOCK_CDC_LEN || b[1] != VISOCK_CDC_VERSION)
		return -EBADMSG;
	*type = b[0];
	if (b[0] == VISOCK_CDC_TYPE || b[0] == VISOCK_SWREP_TYPE) {
		*val = fz_get(b + 4, 4);
		return 0;
	}
	if (b[0] != VISOCK_LINK_MSG_TYPE || !b[2] || memchr_inv(b + 3, 0, 29))
		return -EBADMSG;
	*val = b[2];
	return 0;
}

static void fz_swrep_msg(struct fuzz *f, struct visock_swrep *m);

static void fz_link_one(struct fuzz *f)
{
	struct visock_swrep sw;
	struct visock_cdc cdc;
	struct visock_cdc cm;
	struct visock_swrep sm;
	u8 type = 0, ref_type = 0, code;
	u32 val = 0, ref_val = 0, r = fz_u32(f);
	u8 again[VISOCK_CDC_LEN];
	int ret, ref_ret, cret, sret;
	u8 *p;

	/* Mostly link messages; cursor messages and switch replies too. */
	switch (r % 6) {
	case 0:
		fz_cdc_msg(f, &cdc);
		ret = visock_cdc_encode(&cdc, f->buf, FUZZ_MAX);
		break;
	case 1:
		fz_swrep_msg(f, &sw);
		ret = visock_swrep_encode(&sw, f->buf, FUZZ_MAX);
		break;
	default:
		code = (r >> 4) & 1 ? VISOCK_LINK_MSG_DELETE + ((r >> 5) & 1) :
		       fz_u32(f);
		ret = visock_link_msg_encode(code, f->buf, FUZZ_MAX);
		break;
	}
	f->len = VISOCK_CDC_LEN;
	if (!FZ_CHECK(f, ret == VISOCK_CDC_LEN, "encode: %d", ret))
		return;
	fz_mutate_some(f);

	p = fz_copy(f);
	if (!p)
		return;
	ret = visock_ctl_peek(p, f->len, &type, &val);
	cret = visock_cdc_decode(p, f->len, &cm);
	sret = visock_swrep_decode(p, f->len, &sm);
	kfree(p);
	fz_count(f, ret);

	ref_ret = ref_peek(f->buf, f->len, &ref_type, &ref_val);
	if (!FZ_CHECK(f, ret == ref_ret, "peek %d, expected %d", ret, ref_ret))
		return;
	if (f->len != VISOCK_CDC_LEN &&
	    !FZ_CHECK(f, ret == -EBADMSG, "length %u: %d", f->len, ret))
		return;
	/* What the dispatch lets through is what the decoders accept. */
	if (!cret && !FZ_CHECK(f, !ret && type == VISOCK_CDC_TYPE &&
			       val == cm.token, "cursor message not dispatched"))
		return;
	if (!sret && !FZ_CHECK(f, !ret && type == VISOCK_SWREP_TYPE &&
			       val == sm.token, "switch reply not dispatched"))
		return;
	if (ret)
		return;
	if (!FZ_CHECK(f, type == ref_type && val == ref_val,
		      "type %#x val %#x, expected %#x %#x", type, val,
		      ref_type, ref_val))
		return;
	if (type == VISOCK_LINK_MSG_TYPE) {
		ret = visock_link_msg_encode(val, again, sizeof(again));
		FZ_CHECK(f, ret == VISOCK_CDC_LEN && val <= 0xff &&
			 !memcmp(again, f->buf, VISOCK_CDC_LEN),
			 "link message %#x re-encodes differently", val);
	}
}

/* ------------------------------------------------------------------ */
/* Switch replies                                                        */
/* ------------------------------------------------------------------ */

static void fz_swrep_msg(struct fuzz *f, struct visock_swrep *m)
{
	u32 r = fz_u32(f);

	memset(m, 0, sizeof(*m));
	m->token = r & 1 ? fz_u32(f) | 1 : fz_edge(f) | 1;
	if ((r >> 1) & 1) {
		m->flags = VISOCK_SWREP_F_ACCEPT | (((r >> 2) & 7) << 1);
		m->rbuf_class = fz_below(f, VISOCK_SIZECLASS_COUNT);
		m->rtoken = fz_u32(f) | (1 + fz_below(f, VISOCK_TOKEN_IDX_MASK));
		m->rbuf_addr = fz_u64(f);
		m->rbuf_rkey = fz_u32(f);
		m->pos = (r >> 5) & 1 ? fz_u32(f) : fz_edge(f);
		if (m->flags & VISOCK_SWREP_F_AUTH)
			m->tag = fz_u32(f);
	} else {
		m->reason = 1 + fz_below(f, VISOCK_FB_MAX);
	}
}

/* visock_swrep_decode()'s rules as visock_wire.h states them. */
static int ref_swrep(const u8 *b, unsigned int len, struct visock_swrep *m)
{
	memset(m, 0, sizeof(*m));
	if (len != VISOCK_CDC_LEN || b[0] != VISOCK_SWREP_TYPE ||
	    b[1] != VISOCK_CDC_VERSION)
		return -EBADMSG;
	m->flags = b[2];
	m->rbuf_class = b[3];
	m->token = fz_get(b + 4, 4);
	m->rtoken = fz_get(b + 8, 4);
	m->rbuf_addr = fz_get(b + 12, 8);
	m->rbuf_rkey = fz_get(b + 20, 4);
	m->pos = fz_get(b + 24, 4);
	/* Bytes 28..31: the tag of an accepted reply, else the reason. */
	if (m->flags & VISOCK_SWREP_F_ACCEPT)
		m->tag = fz_get(b + 28, 4);
	else
		m->reason = fz_get(b + 28, 4);
	if (!m->token || (m->flags & ~VISOCK_SWREP_F_ALL))
		goto bad;
	if (m->flags & VISOCK_SWREP_F_ACCEPT) {
		if (m->rbuf_class >= VISOCK_SIZECLASS_COUNT ||
		    !(m->rtoken & VISOCK_TOKEN_IDX_MASK) ||
		    (m->tag && !(m->flags & VISOCK_SWREP_F_AUTH)))
			goto bad;
	} else if (m->flags || !m->reason || m->reason > VISOCK_FB_MAX ||
		   m->rbuf_class || m->rtoken || m->rbuf_addr ||
		   m->rbuf_rkey || m->pos) {
		goto bad;
	}
	return 0;
bad:
	memset(m, 0, sizeof(*m));
	return -EBADMSG;
}

static void fz_swrep_one(struct fuzz *f)
{
	struct visock_swrep in, m, ref;
	u8 again[VISOCK_CDC_LEN];
	int ret, ref_ret;
	u64 near, pos;
	u8 *p;

	fz_swrep_msg(f, &in);
	ret = visock_swrep_encode(&in, f->buf, FUZZ_MAX);
	f->len = VISOCK_CDC_LEN;
	if (!FZ_CHECK(f, ret == VISOCK_CDC_LEN, "encode: %d", ret))
		return;
	fz_mutate_some(f);

	p = fz_copy(f);
	if (!p)
		return;
	memset(&m, 0x5a, sizeof(m));
	ret = visock_swrep_decode(p, f->len, &m);
	kfree(p);
	fz_count(f, ret);

	ref_ret = ref_swrep(f->buf, f->len, &ref);
	if (!FZ_CHECK(f, ret == ref_ret, "decode %d, expected %d", ret,
		      ref_ret))
		return;
	if (f->len != VISOCK_CDC_LEN &&
	    !FZ_CHECK(f, ret == -EBADMSG, "length %u: %d", f->len, ret))
		return;
	if (!FZ_CHECK(f, !memcmp(&m, &ref, sizeof(m)),
		      "%s", ret ? "not zeroed on error" : "fields differ"))
		return;
	if (ret)
		return;
	ret = visock_swrep_encode(&m, again, sizeof(again));
	if (!FZ_CHECK(f, ret == VISOCK_CDC_LEN &&
		      !memcmp(again, f->buf, VISOCK_CDC_LEN),
		      "re-encode: %d or other bytes", ret))
		return;
	if (!(m.flags & VISOCK_SWREP_F_ACCEPT))
		return;
	/* What the receiver makes of an accepted reply's fields. */
	FZ_CHECK(f, is_power_of_2(visock_sizeclass_bytes(m.rbuf_class)) &&
		 visock_sizeclass_bytes(m.rbuf_class) >= VISOCK_RBUF_MIN &&
		 visock_sizeclass_bytes(m.rbuf_class) <= VISOCK_RBUF_MAX,
		 "size class %u", m.rbuf_class);
	near = fz_u64(f);
	pos = visock_switch_pos(near, m.pos);
	FZ_CHECK(f, (u32)pos == m.pos && pos - near < BIT_ULL(32),
		 "switch position %llu from %llu and %#x", pos, near, m.pos);
}

/* ------------------------------------------------------------------ */
/* Failover messages                                                     */
/* ------------------------------------------------------------------ */

static void fz_fo_one(struct fuzz *f)
{
	u64 in, pos = 0x5a5a5a5a5a5a5a5aULL;
	u8 again[VISOCK_FO_LEN];
	int ret, ref;
	u8 *p;

	in = fz_one_in(f, 2) ? fz_u64(f) : fz_edge(f);
	visock_fo_encode(in, f->buf);
	f->len = VISOCK_FO_LEN;
	fz_mutate_some(f);

	p = fz_copy(f);
	if (!p)
		return;
	ret = visock_fo_decode(p, f->len, &pos);
	kfree(p);
	fz_count(f, ret);

	/* visock_wire.h: type, version, two zero bytes, magic, position. */
	ref = f->len == VISOCK_FO_LEN && f->buf[0] == VISOCK_FO_TYPE &&
	      f->buf[1] == VISOCK_FO_VERSION && !f->buf[2] && !f->buf[3] &&
	      fz_get(f->buf + 4, 4) == VISOCK_FO_MAGIC ? 0 : -EBADMSG;
	if (!FZ_CHECK(f, ret == ref, "decode %d, expected %d", ret, ref))
		return;
	if (!f->nmut && !FZ_CHECK(f, !ret && pos == in,
				  "unmutated message: %d, %llu", ret, pos))
		return;
	if (ret)
		return;
	if (!FZ_CHECK(f, pos == fz_get(f->buf + 8, 8), "position %#llx", pos))
		return;
	visock_fo_encode(pos, again);
	FZ_CHECK(f, !memcmp(again, f->buf, VISOCK_FO_LEN),
		 "re-encodes differently");
}

/* ------------------------------------------------------------------ */
/* The test cases                                                        */
/* ------------------------------------------------------------------ */

static unsigned long fuzz_chunk_size(void)
{
	return max(FUZZ_CHUNK, DIV_ROUND_UP(fuzz_iters, FUZZ_MAX_CHUNKS));
}

static unsigned long fuzz_chunk_ids[FUZZ_MAX_CHUNKS];

static const void *fuzz_gen_params(const void *prev, char *desc)
{
	unsigned long k = prev ? *(const unsigned long *)prev + 1 : 0;
	unsigned long size = fuzz_chunk_size(), first;

	if (k * size >= fuzz_iters || k >= FUZZ_MAX_CHUNKS)
		return NULL;
	fuzz_chunk_ids[k] = k;
	first = fuzz_first + k * size;
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "seed %#llx iterations %lu-%lu",
		 fuzz_seed, first,
		 first + min(size, fuzz_iters - k * size) - 1);
	return &fuzz_chunk_ids[k];
}

static void fuzz_run(struct kunit *test, unsigned int family,
		     void (*one)(struct fuzz *f))
{
	unsigned long k = *(const unsigned long *)test->param_value;
	unsigned long size = fuzz_chunk_size(), first, end, rejected;
	struct fuzz *f;
	unsigned int i;

	f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, f);
	f->test = test;
	f->family = family;
	first = fuzz_first + k * size;
	end = first + min(size, fuzz_iters - k * size);
	for (f->iter = first; f->iter < end && !f->failed; f->iter++) {
		fuzz_seed_iter(f);
		f->len = 0;
		f->nmut = 0;
		f->truncated = false;
		f->how_len = 0;
		f->how[0] = '\0';
		one(f);
		if (!(f->iter & 1023))
			cond_resched();
	}
	if (f->failed)
		return;
	rejected = end - first - f->count[0];
	kunit_info(test,
		   "%s: %lu messages: %lu accepted, %lu rejected (-EBADMSG %lu, -EPROTO %lu, -EOPNOTSUPP %lu, -ENOENT %lu, -EINVAL %lu)\n",
		   fuzz_names[family], end - first, f->count[0], rejected,
		   f->count[1], f->count[2], f->count[3], f->count[4],
		   f->count[5]);
	/* Enough messages reach both outcomes, else the mutations are off. */
	if (end - first >= 1000) {
		KUNIT_EXPECT_GT(test, f->count[0], (end - first) / 100);
		KUNIT_EXPECT_GT(test, rejected, (end - first) / 100);
	}
	for (i = 0; i < ARRAY_SIZE(f->count); i++)
		rejected -= i ? f->count[i] : 0;
	KUNIT_EXPECT_EQ_MSG(test, rejected, 0UL, "undocumented results");
}

static void visock_fuzz_tcpopt_test(struct kunit *test)
{
	fuzz_run(test, FZ_TCPOPT, fz_tcpopt_one);
}

static void visock_fuzz_hs_test(struct kunit *test)
{
	fuzz_run(test, FZ_HS, fz_hs_one);
}

static void visock_fuzz_cdc_test(struct kunit *test)
{
	fuzz_run(test, FZ_CDC, fz_cdc_one);
}

static void visock_fuzz_link_test(struct kunit *test)
{
	fuzz_run(test, FZ_LINK, fz_link_one);
}

static void visock_fuzz_swrep_test(struct kunit *test)
{
	fuzz_run(test, FZ_SWREP, fz_swrep_one);
}

static void visock_fuzz_fo_test(struct kunit *test)
{
	fuzz_run(test, FZ_FO, fz_fo_one);
}

static struct kunit_case visock_fuzz_test_cases[] = {
	KUNIT_CASE_PARAM(visock_fuzz_tcpopt_test, fuzz_gen_params),
	KUNIT_CASE_PARAM(visock_fuzz_hs_test, fuzz_gen_params),
	KUNIT_CASE_PARAM(visock_fuzz_cdc_test, fuzz_gen_params),
	KUNIT_CASE_PARAM(visock_fuzz_link_test, fuzz_gen_params),
	KUNIT_CASE_PARAM(visock_fuzz_swrep_test, fuzz_gen_params),
	KUNIT_CASE_PARAM(visock_fuzz_fo_test, fuzz_gen_params),
	{}
};

static struct kunit_suite visock_fuzz_test_suite = {
	.name = "visock_fuzz",
	.test_cases = visock_fuzz_test_cases,
};

kunit_test_suite(visock_fuzz_test_suite);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Fuzzing of the visock decoders of network input");
