// SPDX-License-Identifier: GPL-2.0
/*
 * visock: the SYN / SYN-ACK capability option.
 *
 * The option is an RFC 6994 experimental TCP option carrying the highest
 * handshake version and a few capability flags of the sender.  This file
 * only deals with raw bytes: it neither knows about sk_buffs nor about
 * sockets, so it can be unit tested in a UML KUnit kernel.
 */

#include <linux/types.h>
#include <linux/errno.h>
#include <linux/log2.h>
#include <linux/build_bug.h>

#include "visock_wire.h"

/* TCP option kinds that carry no length byte. */
#define VISOCK_TCPOPT_EOL	0
#define VISOCK_TCPOPT_NOP	1
/* Second experimental kind (RFC 4727); accepted when parsing only. */
#define VISOCK_TCPOPT_KIND_ALT	254

static bool visock_tcpopt_is_ours(const u8 *o)
{
	u16 exid = ((u16)o[2] << 8) | o[3];

	if (o[0] != VISOCK_TCPOPT_KIND && o[0] != VISOCK_TCPOPT_KIND_ALT)
		return false;
	return o[1] == VISOCK_TCPOPT_LEN && exid == VISOCK_TCPOPT_EXID;
}

/**
 * visock_tcpopt_offset() - locate the visock capability option
 * @opts: TCP options area, i.e. the bytes following the fixed 20-byte
 *        TCP header (doff * 4 - 20 bytes)
 * @len: number of bytes in @opts
 *
 * Walks the options area from the start.  An EOL (kind 0) ends the walk,
 * a NOP (kind 1) occupies one byte, every other option must have a length
 * byte that is at least 2 and does not reach past @len.  The visock option
 * is an experimental option of kind 253 (kind 254 is accepted as well) with
 * a length of exactly VISOCK_TCPOPT_LEN and ExID VISOCK_TCPOPT_EXID.
 * Experimental options with another ExID or another length are skipped
 * like any other option.  The walk stops at the first visock option; bytes
 * after it are not examined.
 *
 * Return: offset of the first visock option's kind byte in @opts (the
 * whole option lies inside @opts), -ENOENT if the options area does not
 * contain it, -EBADMSG if an option preceding it (or, when there is none,
 * any option) is malformed.
 */
int visock_tcpopt_offset(const u8 *opts, unsigned int len)
{
	unsigned int off = 0;

	while (off < len) {
		unsigned int kind = opts[off];
		unsigned int olen;

		if (kind == VISOCK_TCPOPT_EOL)
			break;
		if (kind == VISOCK_TCPOPT_NOP) {
			off++;
			continue;
		}
		if (len - off < 2)
			return -EBADMSG;
		olen = opts[off + 1];
		if (olen < 2 || olen > len - off)
			return -EBADMSG;
		if (olen == VISOCK_TCPOPT_LEN &&
		    visock_tcpopt_is_ours(opts + off))
			return off;
		off += olen;
	}
	return -ENOENT;
}

/**
 * visock_tcpopt_find() - look for the visock capability option
 * @opts: TCP options area, as for visock_tcpopt_offset()
 * @len: number of bytes in @opts
 * @out: filled in with the decoded option on success
 *
 * Finds the first visock option like visock_tcpopt_offset() and decodes
 * it.  @out is only written on success.
 *
 * Return: 0 if the option was found and @out was filled in, -ENOENT if the
 * options area does not contain it, -EBADMSG if an option preceding it
 * (or, when there is none, any option) is malformed, -EINVAL if the first
 * visock option carries version 0.
 */
int visock_tcpopt_find(const u8 *opts, unsigned int len,
		       struct visock_synopt *out)
{
	int off = visock_tcpopt_offset(opts, len);

	if (off < 0)
		return off;
	if (opts[off + 4] == 0)
		return -EINVAL;
	out->version = opts[off + 4];
	out->flags = opts[off + 5];
	return 0;
}

/**
 * visock_tcpopt_write() - emit the visock capability option
 * @p: destination, at least VISOCK_TCPOPT_ALIGNED bytes
 * @opt: version and flags to announce
 *
 * Writes two NOPs followed by the 6-byte option (kind, length, ExID,
 * version, flags), so that the option keeps the options area 32-bit
 * aligned.  The caller is responsible for announcing a non-zero version.
 *
 * Return: number of bytes written, always VISOCK_TCPOPT_ALIGNED.
 */
unsigned int visock_tcpopt_write(u8 *p, const struct visock_synopt *opt)
{
	p[0] = VISOCK_TCPOPT_NOP;
	p[1] = VISOCK_TCPOPT_NOP;
	p[2] = VISOCK_TCPOPT_KIND;
	p[3] = VISOCK_TCPOPT_LEN;
	p[4] = (VISOCK_TCPOPT_EXID >> 8) & 0xff;
	p[5] = VISOCK_TCPOPT_EXID & 0xff;
	p[6] = opt->version;
	p[7] = opt->flags;
	return VISOCK_TCPOPT_ALIGNED;
}

/**
 * visock_tcpopt_lazy_flags() - option flags announcing a lazy start
 * @bytes: the threshold, a power of two between VISOCK_LAZY_MIN and
 *	VISOCK_LAZY_MAX
 *
 * Return: VISOCK_TCPOPT_F_LAZY and the threshold's exponent in the
 * VISOCK_TCPOPT_LAZY_MASK bits, or 0 (no lazy start) if @bytes is not
 * such a power of two.
 */
u8 visock_tcpopt_lazy_flags(u32 bytes)
{
	/* Four bits of exponent. */
	static_assert(VISOCK_LAZY_MAX ==
		      VISOCK_LAZY_MIN << (VISOCK_TCPOPT_LAZY_MASK >>
					  VISOCK_TCPOPT_LAZY_SHIFT));

	if (bytes < VISOCK_LAZY_MIN || bytes > VISOCK_LAZY_MAX ||
	    (bytes & (bytes - 1)))
		return 0;
	return VISOCK_TCPOPT_F_LAZY |
	       ((ilog2(bytes) - 10) << VISOCK_TCPOPT_LAZY_SHIFT);
}

/**
 * visock_tcpopt_lazy_bytes() - the lazy start threshold an option carries
 * @flags: the option's flags byte
 *
 * Return: the threshold in bytes (VISOCK_LAZY_MIN .. VISOCK_LAZY_MAX), or
 * 0 if @flags announce no lazy start.
 */
u32 visock_tcpopt_lazy_bytes(u8 flags)
{
	u32 k = (flags & VISOCK_TCPOPT_LAZY_MASK) >> VISOCK_TCPOPT_LAZY_SHIFT;

	if (!(flags & VISOCK_TCPOPT_F_LAZY))
		return 0;
	return VISOCK_LAZY_MIN << k;
}
