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
 * @type: VISOCK_CDC_TYPE or VISOCK_LINK_MSG_TYPE
 * @val: the token of a cursor message, the code of a link message
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
	if (buf[0] == VISOCK_CDC_TYPE) {
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
