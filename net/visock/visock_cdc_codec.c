// SPDX-License-Identifier: GPL-2.0
/*
 * visock: codec of the data path's cursor messages and immediate data.
 *
 * Pure functions (no ib_core, no sockets): also built by the KUnit
 * runner.  The layout is described in visock_wire.h.  The decoder checks
 * the message's shape only (length, type, version, reserved bytes, known
 * flags, non-zero token); the cursors inside are checked against the
 * connection's state by the data path (visock_cdc.c).
 */

#include <linux/errno.h>
#include <linux/string.h>
#include <linux/types.h>
#include <linux/visock.h>

#include "visock_wire.h"

/* Byte order helpers without <asm/unaligned.h> (moved in 6.12). */
static void visock_put_be16(u16 v, u8 *p)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void visock_put_be32(u32 v, u8 *p)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static u16 visock_get_be16(const u8 *p)
{
	return (u16)p[0] << 8 | p[1];
}

static u32 visock_get_be32(const u8 *p)
{
	return (u32)p[0] << 24 | (u32)p[1] << 16 | (u32)p[2] << 8 | p[3];
}

/**
 * visock_cdc_encode() - write a cursor message
 * @m: message; @m->flags must only have VISOCK_CDC_F_* bits
 * @buf: output buffer
 * @buflen: size of @buf
 *
 * Return: VISOCK_CDC_LEN, or -EINVAL if @buflen is too small or @m has
 * unknown flags or a zero token.
 */
int visock_cdc_encode(const struct visock_cdc *m, u8 *buf,
		      unsigned int buflen)
{
	if (buflen < VISOCK_CDC_LEN || (m->flags & ~VISOCK_CDC_F_ALL) ||
	    !m->token)
		return -EINVAL;
	memset(buf, 0, VISOCK_CDC_LEN);
	buf[0] = VISOCK_CDC_TYPE;
	buf[1] = VISOCK_CDC_VERSION;
	buf[2] = m->flags;
	visock_put_be32(m->token, buf + 4);
	visock_put_be32(m->seq, buf + 8);
	visock_put_be16(m->prod.wrap, buf + 12);
	visock_put_be16(m->cons.wrap, buf + 14);
	visock_put_be32(m->prod.count, buf + 16);
	visock_put_be32(m->cons.count, buf + 20);
	visock_put_be16(m->credits, buf + 24);
	return VISOCK_CDC_LEN;
}

/**
 * visock_cdc_decode() - parse a received cursor message
 * @buf: received bytes (untrusted)
 * @len: number of bytes received
 * @m: decoded message
 *
 * Return: 0, or -EBADMSG if @len is not VISOCK_CDC_LEN, the type or
 * version is unknown, a reserved byte is not zero, an unknown flag is set
 * or the token is zero.
 */
int visock_cdc_decode(const u8 *buf, unsigned int len, struct visock_cdc *m)
{
	unsigned int i;

	if (len != VISOCK_CDC_LEN || buf[0] != VISOCK_CDC_TYPE ||
	    buf[1] != VISOCK_CDC_VERSION || (buf[2] & ~VISOCK_CDC_F_ALL) ||
	    buf[3])
		return -EBADMSG;
	for (i = 26; i < VISOCK_CDC_LEN; i++)
		if (buf[i])
			return -EBADMSG;
	m->flags = buf[2];
	m->token = visock_get_be32(buf + 4);
	m->seq = visock_get_be32(buf + 8);
	m->prod.wrap = visock_get_be16(buf + 12);
	m->cons.wrap = visock_get_be16(buf + 14);
	m->prod.count = visock_get_be32(buf + 16);
	m->cons.count = visock_get_be32(buf + 20);
	m->credits = visock_get_be16(buf + 24);
	return m->token ? 0 : -EBADMSG;
}

/**
 * visock_cdc_seq_after() - is a sequence number newer than another
 * @seq: received sequence number
 * @last: last one accepted
 *
 * Serial number arithmetic modulo 2^32: @seq is newer if it is at most
 * 2^31 - 1 ahead of @last.
 *
 * Return: true if @seq comes after @last.
 */
bool visock_cdc_seq_after(u32 seq, u32 last)
{
	return (s32)(seq - last) > 0;
}

/**
 * visock_imm_encode() - immediate data of a data transfer
 * @idx: connection index on the receiver's QP, 1 .. VISOCK_TOKEN_IDX_MASK
 * @bytes: bytes the transfer appends, 1 .. VISOCK_IMM_LEN_MAX
 * @credits: credits returned, 0 .. VISOCK_IMM_CREDITS_MAX
 * @imm: the immediate data, host order
 *
 * Return: 0, or -EINVAL if a value does not fit.
 */
int visock_imm_encode(u32 idx, u32 bytes, u32 credits, u32 *imm)
{
	if (!idx || idx > VISOCK_TOKEN_IDX_MASK || !bytes ||
	    bytes > VISOCK_IMM_LEN_MAX || credits > VISOCK_IMM_CREDITS_MAX)
		return -EINVAL;
	*imm = idx << 20 | credits << 16 | (bytes - 1);
	return 0;
}

/**
 * visock_imm_decode() - split received immediate data
 * @imm: immediate data, host order
 * @idx: connection index on our QP
 * @bytes: bytes appended, 1 .. VISOCK_IMM_LEN_MAX
 * @credits: credits returned
 */
void visock_imm_decode(u32 imm, u32 *idx, u32 *bytes, u32 *credits)
{
	*idx = imm >> 20;
	*credits = (imm >> 16) & VISOCK_IMM_CREDITS_MAX;
	*bytes = (imm & 0xffff) + 1;
}

/**
 * visock_link_msg_encode() - build a link message
 * @code: VISOCK_LINK_MSG_* code
 * @buf: at least VISOCK_CDC_LEN bytes
 * @buflen: size of @buf
 *
 * Return: VISOCK_CDC_LEN, or -ENOSPC if @buf is too small.
 */
int visock_link_msg_encode(u8 code, u8 *buf, unsigned int buflen)
{
	if (buflen < VISOCK_CDC_LEN)
		return -ENOSPC;
	memset(buf, 0, VISOCK_CDC_LEN);
	buf[0] = VISOCK_LINK_MSG_TYPE;
	buf[1] = VISOCK_CDC_VERSION;
	buf[2] = code;
	return VISOCK_CDC_LEN;
}

/**
 * visock_ctl_peek() - classify a SEND received on a shared QP
 * @buf: the received bytes
 * @len: their number
 * @type: VISOCK_CDC_TYPE, VISOCK_SWREP_TYPE or VISOCK_LINK_MSG_TYPE
 * @val: the token of a cursor message or switch reply, the code of a
 *	link message
 *
 * Only looks at what the dispatch needs; a cursor message is validated
 * in full by visock_cdc_decode() afterwards.
 *
 * Return: 0, or -EBADMSG for anything else (wrong length, type, version,
 * a link message with a token or reserved bytes set).
 */
int visock_ctl_peek(const u8 *buf, unsigned int len, u8 *type, u32 *val)
{
	unsigned int i;

	if (len != VISOCK_CDC_LEN || buf[1] != VISOCK_CDC_VERSION)
		return -EBADMSG;
	*type = buf[0];
	/* A switch reply is addressed like a cursor message. */
	if (buf[0] == VISOCK_CDC_TYPE || buf[0] == VISOCK_SWREP_TYPE) {
		*val = visock_get_be32(buf + 4);
		return 0;
	}
	if (buf[0] != VISOCK_LINK_MSG_TYPE || !buf[2])
		return -EBADMSG;
	for (i = 3; i < VISOCK_CDC_LEN; i++)
		if (buf[i])
			return -EBADMSG;
	*val = buf[2];
	return 0;
}

/**
 * visock_fo_encode() - build a failover message
 * @rx_pos: stream bytes received over RDMA
 * @buf: VISOCK_FO_LEN bytes
 */
void visock_fo_encode(u64 rx_pos, u8 *buf)
{
	memset(buf, 0, VISOCK_FO_LEN);
	buf[0] = VISOCK_FO_TYPE;
	buf[1] = VISOCK_FO_VERSION;
	visock_put_be32(VISOCK_FO_MAGIC, buf + 4);
	visock_put_be32(rx_pos >> 32, buf + 8);
	visock_put_be32((u32)rx_pos, buf + 12);
}

/**
 * visock_fo_decode() - parse a failover message
 * @buf: received bytes
 * @len: their number
 * @rx_pos: stream bytes the peer received over RDMA
 *
 * Return: 0, or -EBADMSG if @buf is not exactly one well-formed message.
 */
int visock_fo_decode(const u8 *buf, unsigned int len, u64 *rx_pos)
{
	if (len != VISOCK_FO_LEN || buf[0] != VISOCK_FO_TYPE ||
	    buf[1] != VISOCK_FO_VERSION || buf[2] || buf[3] ||
	    visock_get_be32(buf + 4) != VISOCK_FO_MAGIC)
		return -EBADMSG;
	*rx_pos = (u64)visock_get_be32(buf + 8) << 32 |
		  visock_get_be32(buf + 12);
	return 0;
}

/* Shape rules of a switch reply, shared by the encoder and the decoder. */
static bool visock_swrep_valid(const struct visock_swrep *m)
{
	if (!m->token || (m->flags & ~VISOCK_SWREP_F_ALL))
		return false;
	if (!(m->flags & VISOCK_SWREP_F_ACCEPT))
		return !m->flags && m->reason && m->reason <= VISOCK_FB_MAX &&
		       !m->rbuf_class && !m->rtoken && !m->rbuf_addr &&
		       !m->rbuf_rkey && !m->pos && !m->tag;
	if (!(m->flags & VISOCK_SWREP_F_AUTH) && m->tag)
		return false;
	return !m->reason && m->rbuf_class < VISOCK_SIZECLASS_COUNT &&
	       (m->rtoken & VISOCK_TOKEN_IDX_MASK);
}

/**
 * visock_swrep_encode() - write a switch reply
 * @m: the reply: accepted (VISOCK_SWREP_F_ACCEPT, reason 0, a size class
 *	below VISOCK_SIZECLASS_COUNT, a responder token with a non-zero
 *	index) or declined (no flag, a reason 1..VISOCK_FB_MAX, all other
 *	fields but @token 0); @token never 0
 * @buf: output buffer
 * @buflen: size of @buf
 *
 * Return: VISOCK_CDC_LEN, or -EINVAL if @m breaks those rules or @buflen
 * is below VISOCK_CDC_LEN (@buf is then not written).
 */
int visock_swrep_encode(const struct visock_swrep *m, u8 *buf,
			unsigned int buflen)
{
	if (buflen < VISOCK_CDC_LEN || !visock_swrep_valid(m))
		return -EINVAL;
	memset(buf, 0, VISOCK_CDC_LEN);
	buf[0] = VISOCK_SWREP_TYPE;
	buf[1] = VISOCK_CDC_VERSION;
	buf[2] = m->flags;
	buf[3] = m->rbuf_class;
	visock_put_be32(m->token, buf + 4);
	visock_put_be32(m->rtoken, buf + 8);
	visock_put_be32(m->rbuf_addr >> 32, buf + 12);
	visock_put_be32((u32)m->rbuf_addr, buf + 16);
	visock_put_be32(m->rbuf_rkey, buf + 20);
	visock_put_be32(m->pos, buf + 24);
	BUILD_BUG_ON(VISOCK_SWREP_TAG_OFF != 28 || VISOCK_SWREP_TAG_LEN != 4);
	visock_put_be32(m->reason | m->tag, buf + VISOCK_SWREP_TAG_OFF);
	return VISOCK_CDC_LEN;
}

/**
 * visock_swrep_decode() - parse a switch reply
 * @buf: received bytes (untrusted)
 * @len: their number
 * @m: the reply; all zero on error
 *
 * Checks the length, type and version and the rules visock_swrep_encode()
 * writes by.  Whether the position and the ring fit the connection is the
 * caller's business.
 *
 * Return: 0, or -EBADMSG.
 */
int visock_swrep_decode(const u8 *buf, unsigned int len,
			struct visock_swrep *m)
{
	memset(m, 0, sizeof(*m));
	if (len != VISOCK_CDC_LEN || buf[0] != VISOCK_SWREP_TYPE ||
	    buf[1] != VISOCK_CDC_VERSION)
		return -EBADMSG;
	m->flags = buf[2];
	m->rbuf_class = buf[3];
	m->token = visock_get_be32(buf + 4);
	m->rtoken = visock_get_be32(buf + 8);
	m->rbuf_addr = (u64)visock_get_be32(buf + 12) << 32 |
		       visock_get_be32(buf + 16);
	m->rbuf_rkey = visock_get_be32(buf + 20);
	m->pos = visock_get_be32(buf + 24);
	if (m->flags & VISOCK_SWREP_F_ACCEPT)
		m->tag = visock_get_be32(buf + VISOCK_SWREP_TAG_OFF);
	else
		m->reason = visock_get_be32(buf + VISOCK_SWREP_TAG_OFF);
	if (!visock_swrep_valid(m)) {
		memset(m, 0, sizeof(*m));
		return -EBADMSG;
	}
	return 0;
}

/**
 * visock_switch_pos() - a 64-bit stream position from its low 32 bits
 * @near: a position known to be at or before the one meant (what was
 *	received so far), and less than 2^31 before it
 * @low: the low 32 bits of the position meant
 *
 * Return: the position at or after @near whose low 32 bits are @low; the
 * caller rejects one 2^31 or more after @near (visock_switch_pos() -
 * @near >= 2^31): the peer names a position behind what it sent.
 */
u64 visock_switch_pos(u64 near, u32 low)
{
	return near + (u32)(low - (u32)near);
}
