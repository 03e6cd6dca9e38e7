// SPDX-License-Identifier: GPL-2.0
/*
 * visock: encoder and decoder of the handshake messages exchanged over
 * the internal TCP connection (REQ, REP, CONFIRM, DECLINE, and SWITCH of
 * a lazy connection).
 *
 * The format is described in visock_wire.h.  The decoder is the only code
 * that looks at bytes received from the peer before the RDMA connection
 * exists, so it validates every length before it reads a field and checks
 * every value against its documented range.  The encoder applies the same
 * checks, so it never emits a message that the decoder would reject.
 */

#include <linux/bits.h>
#include <linux/types.h>
#include <linux/errno.h>
#include <linux/string.h>
#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/visock.h>

#include "visock_wire.h"

#define VISOCK_TLV_HDR_LEN	4
/* Highest TLV type this implementation understands. */
#define VISOCK_TLV_LAST		VISOCK_TLV_XFORM
/* VISOCK_HSF() bits of every TLV type we know. */
#define VISOCK_HSF_KNOWN	(((1U << (VISOCK_TLV_LAST + 1)) - 1) & ~1U)

#define VISOCK_HSF_SETUP	(VISOCK_HSF(VISOCK_TLV_FEATURES) |	\
				 VISOCK_HSF(VISOCK_TLV_GID) |		\
				 VISOCK_HSF(VISOCK_TLV_QPN) |		\
				 VISOCK_HSF(VISOCK_TLV_PSN) |		\
				 VISOCK_HSF(VISOCK_TLV_MTU) |		\
				 VISOCK_HSF(VISOCK_TLV_RBUF) |		\
				 VISOCK_HSF(VISOCK_TLV_TOKEN) |		\
				 VISOCK_HSF(VISOCK_TLV_LINK))

/* IB_MTU_256 .. IB_MTU_4096 of enum ib_mtu, without depending on ib_core */
#define VISOCK_MTU_MIN		1
#define VISOCK_MTU_MAX		5
#define VISOCK_QPN_LIMIT	BIT(24)
#define VISOCK_PSN_LIMIT	BIT(24)

/* Value length of each known TLV type, indexed by type; 0: variable. */
static const u8 visock_tlv_size[VISOCK_TLV_LAST + 1] = {
	[VISOCK_TLV_FEATURES]	= 8,
	[VISOCK_TLV_GID]	= 16,
	[VISOCK_TLV_QPN]	= 4,
	[VISOCK_TLV_PSN]	= 4,
	[VISOCK_TLV_MTU]	= 1,
	[VISOCK_TLV_RBUF]	= 16,
	[VISOCK_TLV_TOKEN]	= 4,
	[VISOCK_TLV_LINK]	= 8,
	[VISOCK_TLV_REASON]	= 4,
	[VISOCK_TLV_AUTH]	= VISOCK_AUTH_TLV_LEN,
	[VISOCK_TLV_XFORM]	= 0,
};

/* TLVs every message of a given type must carry, indexed by type. */
static const u32 visock_hs_required[] = {
	[VISOCK_HS_REQ]		= VISOCK_HSF_SETUP,
	[VISOCK_HS_REP]		= VISOCK_HSF_SETUP,
	[VISOCK_HS_CONFIRM]	= VISOCK_HSF(VISOCK_TLV_TOKEN),
	[VISOCK_HS_DECLINE]	= VISOCK_HSF(VISOCK_TLV_REASON),
	[VISOCK_HS_SWITCH]	= VISOCK_HSF_SETUP,
};

static const char * const visock_hs_names[] = {
	[VISOCK_HS_REQ]		= "REQ",
	[VISOCK_HS_REP]		= "REP",
	[VISOCK_HS_CONFIRM]	= "CONFIRM",
	[VISOCK_HS_DECLINE]	= "DECLINE",
	[VISOCK_HS_SWITCH]	= "SWITCH",
};

/* Byte-wise big-endian accessors: no alignment assumptions. */
static u16 vs_get16(const u8 *p)
{
	return ((u16)p[0] << 8) | p[1];
}

static u32 vs_get32(const u8 *p)
{
	return ((u32)vs_get16(p) << 16) | vs_get16(p + 2);
}

static u64 vs_get64(const u8 *p)
{
	return ((u64)vs_get32(p) << 32) | vs_get32(p + 4);
}

static void vs_put16(u8 *p, u16 v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static void vs_put32(u8 *p, u32 v)
{
	vs_put16(p, v >> 16);
	vs_put16(p + 2, v & 0xffff);
}

static void vs_put64(u8 *p, u64 v)
{
	vs_put32(p, v >> 32);
	vs_put32(p + 4, v & 0xffffffff);
}

/*
 * TLV XFORM: 1..VISOCK_XFORM_OFFER_MAX entries in a REQ, one elsewhere;
 * no entry 0, none twice.
 */
static bool visock_hs_xform_valid(const struct visock_hs_msg *m)
{
	unsigned int i, j;

	if (!m->xform_n || m->xform_n > VISOCK_XFORM_OFFER_MAX ||
	    (m->type != VISOCK_HS_REQ && m->xform_n != 1))
		return false;
	for (i = 0; i < m->xform_n; i++) {
		if (!m->xform[i])
			return false;
		for (j = 0; j < i; j++)
			if (m->xform[j] == m->xform[i])
				return false;
	}
	return true;
}

/* Value length of TLV @type of @m as the encoder writes it. */
static unsigned int visock_hs_tlv_len(const struct visock_hs_msg *m,
				      unsigned int type)
{
	return type == VISOCK_TLV_XFORM ? m->xform_n : visock_tlv_size[type];
}

static bool visock_hs_type_valid(unsigned int type)
{
	return type >= VISOCK_HS_REQ && type <= VISOCK_HS_SWITCH;
}

/*
 * Range checks shared by the encoder and the decoder.  Only fields whose
 * TLV is in @present are looked at.
 */
static bool visock_hs_values_valid(const struct visock_hs_msg *m,
				   u32 present)
{
	if ((present & VISOCK_HSF(VISOCK_TLV_QPN)) &&
	    (m->qpn == 0 || m->qpn >= VISOCK_QPN_LIMIT))
		return false;
	if ((present & VISOCK_HSF(VISOCK_TLV_PSN)) &&
	    m->psn >= VISOCK_PSN_LIMIT)
		return false;
	if ((present & VISOCK_HSF(VISOCK_TLV_MTU)) &&
	    (m->mtu < VISOCK_MTU_MIN || m->mtu > VISOCK_MTU_MAX))
		return false;
	if ((present & VISOCK_HSF(VISOCK_TLV_RBUF)) &&
	    (!is_power_of_2(m->rbuf_size) ||
	     m->rbuf_size < VISOCK_RBUF_MIN || m->rbuf_size > VISOCK_RBUF_MAX))
		return false;
	if ((present & VISOCK_HSF(VISOCK_TLV_TOKEN)) && m->token == 0)
		return false;
	if ((present & VISOCK_HSF(VISOCK_TLV_REASON)) &&
	    m->reason > VISOCK_FB_MAX)
		return false;
	if ((present & VISOCK_HSF(VISOCK_TLV_AUTH)) &&
	    (!m->auth_version || !m->auth_key_id))
		return false;
	if ((present & VISOCK_HSF(VISOCK_TLV_XFORM)) &&
	    !visock_hs_xform_valid(m))
		return false;
	/*
	 * A SWITCH joins a queue pair that exists: it names both ends, and
	 * its token has an index the data path can put in immediate data.
	 */
	if (m->type == VISOCK_HS_SWITCH &&
	    (!m->lgr_id || m->lgr_id >= VISOCK_QPN_LIMIT || !m->link_id ||
	     m->link_id >= VISOCK_QPN_LIMIT ||
	     !(m->token & VISOCK_TOKEN_IDX_MASK)))
		return false;
	return true;
}

/* Store the value of a known TLV @type (of the right size) into @m. */
static void visock_hs_get_tlv(struct visock_hs_msg *m, unsigned int type,
			      const u8 *v)
{
	switch (type) {
	case VISOCK_TLV_FEATURES:
		m->features = vs_get64(v);
		break;
	case VISOCK_TLV_GID:
		memcpy(m->gid, v, sizeof(m->gid));
		break;
	case VISOCK_TLV_QPN:
		m->qpn = vs_get32(v);
		break;
	case VISOCK_TLV_PSN:
		m->psn = vs_get32(v);
		break;
	case VISOCK_TLV_MTU:
		m->mtu = v[0];
		break;
	case VISOCK_TLV_RBUF:
		m->rbuf_addr = vs_get64(v);
		m->rbuf_rkey = vs_get32(v + 8);
		m->rbuf_size = vs_get32(v + 12);
		break;
	case VISOCK_TLV_TOKEN:
		m->token = vs_get32(v);
		break;
	case VISOCK_TLV_LINK:
		m->lgr_id = vs_get32(v);
		m->link_id = vs_get32(v + 4);
		break;
	case VISOCK_TLV_REASON:
		m->reason = vs_get32(v);
		break;
	case VISOCK_TLV_AUTH:
		/* v[1..3]: flags and reserved, none defined */
		m->auth_version = v[0];
		m->auth_key_id = vs_get32(v + 4);
		memcpy(m->auth_nonce, v + 8, VISOCK_AUTH_NONCE_LEN);
		memcpy(m->auth_mac, v + VISOCK_AUTH_MAC_OFF, VISOCK_AUTH_MAC_LEN);
		break;
	}
}

/* Write the value of a known TLV @type from @m; sizes per visock_tlv_size */
static void visock_hs_put_tlv(const struct visock_hs_msg *m,
			      unsigned int type, u8 *v)
{
	switch (type) {
	case VISOCK_TLV_FEATURES:
		vs_put64(v, m->features);
		break;
	case VISOCK_TLV_GID:
		memcpy(v, m->gid, sizeof(m->gid));
		break;
	case VISOCK_TLV_QPN:
		vs_put32(v, m->qpn);
		break;
	case VISOCK_TLV_PSN:
		vs_put32(v, m->psn);
		break;
	case VISOCK_TLV_MTU:
		v[0] = m->mtu;
		break;
	case VISOCK_TLV_RBUF:
		vs_put64(v, m->rbuf_addr);
		vs_put32(v + 8, m->rbuf_rkey);
		vs_put32(v + 12, m->rbuf_size);
		break;
	case VISOCK_TLV_TOKEN:
		vs_put32(v, m->token);
		break;
	case VISOCK_TLV_LINK:
		vs_put32(v, m->lgr_id);
		vs_put32(v + 4, m->link_id);
		break;
	case VISOCK_TLV_REASON:
		vs_put32(v, m->reason);
		break;
	case VISOCK_TLV_AUTH:
		v[0] = m->auth_version;
		v[1] = 0;
		vs_put16(v + 2, 0);
		vs_put32(v + 4, m->auth_key_id);
		memcpy(v + 8, m->auth_nonce, VISOCK_AUTH_NONCE_LEN);
		memcpy(v + VISOCK_AUTH_MAC_OFF, m->auth_mac, VISOCK_AUTH_MAC_LEN);
		break;
	case VISOCK_TLV_XFORM:
		memcpy(v, m->xform, m->xform_n);
		break;
	}
}

/*
 * Append TLV @type of @m at @off of @buf; the caller made room.  Returns
 * the offset after it.
 */
static unsigned int visock_hs_put(const struct visock_hs_msg *m,
				  unsigned int type, u8 *buf,
				  unsigned int off)
{
	unsigned int vlen = visock_hs_tlv_len(m, type);

	vs_put16(buf + off, type);
	vs_put16(buf + off + 2, vlen);
	visock_hs_put_tlv(m, type, buf + off + VISOCK_TLV_HDR_LEN);
	return off + VISOCK_TLV_HDR_LEN + vlen;
}

/**
 * visock_hs_encode() - serialise a handshake message
 * @m: message to encode; @m->type, @m->version and @m->present select what
 *     is written, the fields of the TLVs set in @m->present supply values
 * @buf: output buffer
 * @buflen: size of @buf in bytes
 *
 * Writes the 8-byte header (with @m->version as header version) followed by
 * one TLV for every VISOCK_HSF() bit set in @m->present, in ascending TLV
 * type order except for TLV AUTH, which, if present, comes last, so that
 * its MAC ends the message.  No TLV is marked VISOCK_TLV_CRITICAL: every TLV of
 * version 1 is either known to all version 1 receivers or optional.
 *
 * The message is checked with the same rules as visock_hs_decode() applies
 * before anything is written, so the encoder never produces a message the
 * decoder rejects: @m->type must be a valid enum visock_hs_type,
 * @m->version at least VISOCK_HS_MIN_VERSION, @m->present may only contain
 * bits of known TLV types and must contain the TLVs required for the
 * message type, and the values of the present fields must be in range.
 * @buf is not modified on error.
 *
 * Return: total length of the message in bytes on success, -EINVAL if @m
 * is not a valid message, -EMSGSIZE if it does not fit into @buflen bytes.
 */
int visock_hs_encode(const struct visock_hs_msg *m, u8 *buf,
		     unsigned int buflen)
{
	unsigned int type, off, total = VISOCK_HS_HDR_LEN;

	if (!visock_hs_type_valid(m->type) ||
	    m->version < VISOCK_HS_MIN_VERSION)
		return -EINVAL;
	if (m->present & ~VISOCK_HSF_KNOWN)
		return -EINVAL;
	if ((m->present & visock_hs_required[m->type]) !=
	    visock_hs_required[m->type])
		return -EINVAL;
	if (!visock_hs_values_valid(m, m->present))
		return -EINVAL;

	for (type = 1; type <= VISOCK_TLV_LAST; type++)
		if (m->present & VISOCK_HSF(type))
			total += VISOCK_TLV_HDR_LEN + visock_hs_tlv_len(m, type);
	/* Cannot happen with the TLVs we know, but keep the promise. */
	if (total > VISOCK_HS_MAX_LEN)
		return -EINVAL;
	if (total > buflen)
		return -EMSGSIZE;

	vs_put32(buf, VISOCK_HS_MAGIC);
	buf[4] = m->type;
	buf[5] = m->version;
	vs_put16(buf + 6, total);
	off = VISOCK_HS_HDR_LEN;
	for (type = 1; type <= VISOCK_TLV_LAST; type++)
		if (type != VISOCK_TLV_AUTH && (m->present & VISOCK_HSF(type)))
			off = visock_hs_put(m, type, buf, off);
	if (m->present & VISOCK_HSF(VISOCK_TLV_AUTH))
		off = visock_hs_put(m, VISOCK_TLV_AUTH, buf, off);
	return total;
}

/**
 * visock_hs_msg_len() - length of the handshake message starting at @buf
 * @buf: start of a handshake message as received from the stream
 * @len: number of bytes available at @buf
 *
 * Lets a reader of the TCP stream find out how many bytes make up the
 * next message once it has its header.  Only the magic and the length
 * field are checked; everything else is left to visock_hs_decode().
 *
 * Return: total message length (VISOCK_HS_HDR_LEN..VISOCK_HS_MAX_LEN) on
 * success, -EAGAIN if @len is smaller than VISOCK_HS_HDR_LEN, -EBADMSG if
 * the magic is wrong or the length field is out of range.
 */
int visock_hs_msg_len(const u8 *buf, unsigned int len)
{
	unsigned int total;

	if (len < VISOCK_HS_HDR_LEN)
		return -EAGAIN;
	if (vs_get32(buf) != VISOCK_HS_MAGIC)
		return -EBADMSG;
	total = vs_get16(buf + 6);
	if (total < VISOCK_HS_HDR_LEN || total > VISOCK_HS_MAX_LEN)
		return -EBADMSG;
	return total;
}

/*
 * Was a TLV whose type has the same value as @base (ignoring the critical
 * bit) already seen in buf[VISOCK_HS_HDR_LEN..end)?  That area has been
 * validated by the caller already.
 */
static bool visock_hs_seen(const u8 *buf, unsigned int end, unsigned int base)
{
	unsigned int off = VISOCK_HS_HDR_LEN;

	while (off < end) {
		if ((vs_get16(buf + off) & ~VISOCK_TLV_CRITICAL) == base)
			return true;
		off += VISOCK_TLV_HDR_LEN + vs_get16(buf + off + 2);
	}
	return false;
}

static int __visock_hs_decode(const u8 *buf, unsigned int len,
			      struct visock_hs_msg *m)
{
	unsigned int off;

	if (len < VISOCK_HS_HDR_LEN || len > VISOCK_HS_MAX_LEN)
		return -EBADMSG;
	if (vs_get32(buf) != VISOCK_HS_MAGIC || vs_get16(buf + 6) != len)
		return -EBADMSG;
	if (buf[5] < VISOCK_HS_MIN_VERSION)
		return -EPROTO;
	if (!visock_hs_type_valid(buf[4]))
		return -EBADMSG;
	m->type = buf[4];
	m->version = buf[5];

	off = VISOCK_HS_HDR_LEN;
	while (off < len) {
		unsigned int type, base, vlen;

		if (len - off < VISOCK_TLV_HDR_LEN)
			return -EBADMSG;
		type = vs_get16(buf + off);
		vlen = vs_get16(buf + off + 2);
		if (vlen > len - off - VISOCK_TLV_HDR_LEN)
			return -EBADMSG;
		base = type & ~VISOCK_TLV_CRITICAL;
		if (visock_hs_seen(buf, off, base))
			return -EBADMSG;
		if (base >= 1 && base <= VISOCK_TLV_LAST) {
			/* Later versions of AUTH may append fields. */
			if (base == VISOCK_TLV_AUTH ?
			    vlen < VISOCK_AUTH_TLV_LEN :
			    base == VISOCK_TLV_XFORM ?
			    !vlen || vlen > VISOCK_XFORM_OFFER_MAX :
			    vlen != visock_tlv_size[base])
				return -EBADMSG;
			if (base == VISOCK_TLV_XFORM) {
				m->xform_n = vlen;
				memcpy(m->xform, buf + off + VISOCK_TLV_HDR_LEN,
				       vlen);
			} else {
				visock_hs_get_tlv(m, base, buf + off +
						  VISOCK_TLV_HDR_LEN);
			}
			if (base == VISOCK_TLV_AUTH)
				m->auth_mac_off = off + VISOCK_TLV_HDR_LEN +
						  VISOCK_AUTH_MAC_OFF;
			m->present |= VISOCK_HSF(base);
		} else if (type & VISOCK_TLV_CRITICAL) {
			return -EOPNOTSUPP;
		}
		off += VISOCK_TLV_HDR_LEN + vlen;
	}

	if ((m->present & visock_hs_required[m->type]) !=
	    visock_hs_required[m->type])
		return -EBADMSG;
	if (!visock_hs_values_valid(m, m->present))
		return -EBADMSG;
	return 0;
}

/**
 * visock_hs_decode() - parse and validate a handshake message
 * @buf: the complete message
 * @len: length of @buf; must equal the length field of the header
 * @m: decoded message; zeroed first, so fields of absent TLVs are 0, and
 *     left all zero when an error is returned
 *
 * Checks, in this order: that @len covers a header, the magic, that the
 * header length field lies within VISOCK_HS_HDR_LEN..VISOCK_HS_MAX_LEN and
 * equals @len, the version (any version >= VISOCK_HS_MIN_VERSION is
 * accepted, including versions above VISOCK_HS_VERSION; negotiating the
 * common version is the caller's job), the message type, and then each TLV
 * in order: its header and value must lie within the message, its type
 * must not repeat an earlier one, a known type must have exactly the value
 * size of that type, and an unknown type is skipped unless it has
 * VISOCK_TLV_CRITICAL set.  The critical bit is a flag: a known type with
 * the bit set is understood and decoded like the type without it, and two
 * TLVs differing only in that bit count as duplicates.  Finally the TLVs
 * required by the message type must all be present and the values must be
 * in range: QPN non-zero and below 2^24, PSN below 2^24, MTU 1..5, ring
 * size a power of two within VISOCK_RBUF_MIN..VISOCK_RBUF_MAX, token
 * non-zero, reason at most VISOCK_FB_MAX, AUTH with a version and a key id
 * (and at least VISOCK_AUTH_TLV_LEN value bytes; later bytes are
 * skipped, @m->auth_mac_off says where its MAC is), XFORM with
 * 1..VISOCK_XFORM_OFFER_MAX entries in a REQ and exactly one in any other
 * message, none of them 0 and none twice (ids themselves are the
 * caller's to judge); a SWITCH must name both QPs
 * (LINK: non-zero, below 2^24) and have a token with a non-zero index
 * (VISOCK_TOKEN_IDX_MASK bits).  Known TLVs that the message type
 * does not require are accepted and decoded.  The first failing check
 * determines the error.
 *
 * Return: 0 on success, -EPROTO if the header version is below
 * VISOCK_HS_MIN_VERSION, -EOPNOTSUPP on an unknown critical TLV, -EBADMSG
 * on any other violation.
 */
int visock_hs_decode(const u8 *buf, unsigned int len,
		     struct visock_hs_msg *m)
{
	int err;

	memset(m, 0, sizeof(*m));
	err = __visock_hs_decode(buf, len, m);
	if (err)
		memset(m, 0, sizeof(*m));
	return err;
}

/**
 * visock_hs_type_name() - printable name of a handshake message type
 * @type: enum visock_hs_type value, or anything else
 *
 * Return: "REQ", "REP", "CONFIRM" or "DECLINE", or "?" for a value that is
 * not a valid message type.  Never NULL.
 */
const char *visock_hs_type_name(unsigned int type)
{
	if (!visock_hs_type_valid(type))
		return "?";
	return visock_hs_names[type];
}
