// SPDX-License-Identifier: GPL-2.0
/*
 * visock: receive ring arithmetic.
 *
 * Size classes of the receive rings and the cursor arithmetic both sides
 * of a connection use to track the producer (bytes written by the peer
 * with RDMA WRITE) and the consumer (bytes the local application read).
 * A cursor is an offset inside the ring plus a 16-bit count of how often
 * the offset wrapped around; the ring size need not be a power of two.
 */

#include <linux/types.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/minmax.h>
#include <linux/math64.h>

#include "visock_wire.h"

/**
 * visock_sizeclass_for() - size class that fits a requested ring size
 * @bytes: wanted ring size in bytes
 *
 * Size class i holds rings of (16 KiB << i) bytes, for i from 0 to
 * VISOCK_SIZECLASS_COUNT - 1.  The result is the smallest class whose size
 * is at least @bytes (best fit).  Requests of 0 bytes map to class 0,
 * requests larger than the largest class are clamped to the largest class.
 *
 * Return: a size class in [0, VISOCK_SIZECLASS_COUNT).
 */
int visock_sizeclass_for(u32 bytes)
{
	int cls;

	for (cls = 0; cls < VISOCK_SIZECLASS_COUNT - 1; cls++)
		if (bytes <= visock_sizeclass_bytes(cls))
			break;
	return cls;
}

/**
 * visock_sizeclass_bytes() - ring size of a size class
 * @cls: size class
 *
 * Return: 16 KiB << @cls, or 0 if @cls is not below VISOCK_SIZECLASS_COUNT.
 */
u32 visock_sizeclass_bytes(unsigned int cls)
{
	if (cls >= VISOCK_SIZECLASS_COUNT)
		return 0;
	return 1U << (VISOCK_SIZECLASS_MIN_SHIFT + cls);
}

/**
 * visock_cursor_add() - advance a cursor
 * @c: cursor to advance
 * @ring: ring size in bytes (any value but 0)
 * @bytes: number of bytes to advance by, normally at most @ring
 *
 * Moves @c->count forward by @bytes modulo @ring and increments @c->wrap
 * (modulo 2^16) once for every time the offset passes the end of the ring;
 * landing exactly on the end counts as a wrap and leaves count 0.  Larger
 * advances than @ring are handled as well (wrap then grows by more than
 * one), and an out-of-range @c->count is folded back into the ring.
 * Nothing happens if @ring is 0.
 */
void visock_cursor_add(struct visock_cursor *c, u32 ring, u32 bytes)
{
	u64 pos;
	u32 rem;

	if (!ring)
		return;
	pos = (u64)c->count + bytes;
	if (pos < ring) {
		c->count = pos;
	} else if (pos - ring < ring) {
		c->count = pos - ring;
		c->wrap++;
	} else {
		c->wrap += (u16)div_u64_rem(pos, ring, &rem);
		c->count = rem;
	}
}

/**
 * visock_cursor_diff() - distance between two cursors of one ring
 * @ring: ring size in bytes
 * @old: earlier position
 * @new: later position
 *
 * Computes how many bytes @new is ahead of @old, i.e. how often
 * visock_cursor_add() would have to have advanced @old to reach @new,
 * taking the wrap counters into account.  The distance between two
 * positions is only unambiguous within one ring size, so only results
 * from 0 to @ring inclusive are valid: equal cursors give 0, a cursor
 * exactly one ring ahead (next wrap, same offset) gives @ring.  Wrap
 * counters are compared modulo 2^16, so 65535 -> 0 is an ordinary wrap.
 *
 * Return: the distance in bytes, 0..@ring, if @new is at most one ring
 * ahead of @old.  A negative errno otherwise: -ERANGE if @new is behind
 * @old or more than @ring bytes ahead of it, -EINVAL if @ring is 0 or a
 * count of either cursor is not below @ring.  Any negative value means the
 * cursors are inconsistent, which for a cursor received from the peer is
 * a protocol violation.
 */
s64 visock_cursor_diff(u32 ring, const struct visock_cursor *old,
		       const struct visock_cursor *new)
{
	u16 dwrap;
	s64 d;

	if (!visock_cursor_valid(ring, old) || !visock_cursor_valid(ring, new))
		return -EINVAL;
	dwrap = new->wrap - old->wrap;
	if (dwrap == 0)
		d = (s64)new->count - old->count;
	else if (dwrap == 1)
		d = (s64)ring - old->count + new->count;
	else
		return -ERANGE;
	if (d < 0 || d > ring)
		return -ERANGE;
	return d;
}

/**
 * visock_cursor_valid() - check a cursor against a ring size
 * @ring: ring size in bytes
 * @c: cursor to check
 *
 * Any wrap counter is valid; the offset must lie inside the ring.
 *
 * Return: true if @c->count < @ring (so never for a ring of 0 bytes).
 */
bool visock_cursor_valid(u32 ring, const struct visock_cursor *c)
{
	return c->count < ring;
}

/**
 * visock_ring_used() - bytes written into a ring but not yet consumed
 * @ring: ring size in bytes
 * @prod: producer cursor (end of the data written)
 * @cons: consumer cursor (end of the data consumed)
 *
 * This is visock_cursor_diff(@ring, @cons, @prod) with errors saturated:
 * if the cursors are inconsistent (@prod behind @cons, more than a ring
 * ahead of it, or an invalid offset), the ring is reported full.  That is
 * the safe answer for a sender, which then does not write over data the
 * receiver has not consumed; it does not make inconsistent cursors
 * harmless for a receiver, so cursors taken from the peer must be checked
 * with visock_cursor_diff() when they are received.
 *
 * Return: number of used bytes, 0..@ring.
 */
u32 visock_ring_used(u32 ring, const struct visock_cursor *prod,
		     const struct visock_cursor *cons)
{
	s64 d = visock_cursor_diff(ring, cons, prod);

	return d < 0 ? ring : (u32)d;
}

/**
 * visock_tx_wake_space() - ring space worth waking a writer for
 * @ring: size of the peer's receive ring in bytes
 *
 * As sk_stream_write_space() does for TCP, a writer waiting for space in
 * the peer's ring is not woken for every few bytes the reader released:
 * it waits until a quarter of the ring is free (or what it still has to
 * write, see visock_tx_need()), so that it copies and posts large pieces
 * and sleeps less often.  poll() reports EPOLLOUT from the same amount.
 * visock_cons_update_due() releases at least that much with the first
 * consumer update that is due after the writer blocked, and one becomes
 * due at the latest once the reader consumed everything.
 *
 * Return: max(@ring / 4, 1).
 */
u32 visock_tx_wake_space(u32 ring)
{
	return max(ring / 4, 1U);
}

/**
 * visock_tx_need() - space a blocking writer waits for
 * @ring: size of the peer's receive ring in bytes
 * @left: bytes the writer still has to copy (not 0)
 *
 * A blocking sendmsg() copies into the peer's ring once this much is
 * free, not before: all that is left when it fits, else
 * visock_tx_wake_space().  It is never more than visock_tx_wake_space(),
 * so visock_cons_update_due() always frees enough with one update once
 * the reader consumed it.
 *
 * Return: min(@left, visock_tx_wake_space(@ring)), at least 1.
 */
u32 visock_tx_need(u32 ring, u64 left)
{
	return (u32)clamp_t(u64, left, 1, visock_tx_wake_space(ring));
}

/**
 * visock_cons_update_due() - should the receiver report its consumer cursor
 * @ring: size of the receive ring in bytes
 * @unconfirmed: bytes consumed locally since the consumer cursor was last
 *               sent to the peer (the peer still counts them as used)
 * @used: bytes in the ring not yet consumed locally (producer - consumer)
 * @peer_blocked: the peer said it is waiting for ring space
 *
 * Coalesces consumer cursor updates, as TCP coalesces window updates, so
 * that the receiver neither sends one per read nor lets the sender stall.
 * With
 *
 *	half  = max(ring / 2, 1)
 *	small = min(max(ring / 4, 4096), half)
 *	free  = ring - min(used + unconfirmed, ring)
 *
 * where free is the space the peer currently believes is available, an
 * update is due, in a ring smaller than VISOCK_CONS_BATCH_RING, when
 *
 *	unconfirmed >= half, or
 *	unconfirmed >= small and (peer_blocked or free <= ring / 2),
 *
 * and in a ring of VISOCK_CONS_BATCH_RING or more (a large ring: its last
 * quarter, at least 128 KiB, covers the bandwidth-delay product of the
 * link while an update is on its way) when
 *
 *	unconfirmed >= ring - ring / 4, or
 *	unconfirmed >= small and peer_blocked.
 *
 * So nothing is ever due while @unconfirmed is 0, at least 4 KiB (or a
 * quarter of the ring, whichever is larger, but never more than half of
 * it) are released per update unless half (large ring: three quarters)
 * of the ring is waiting to be released, and an application that
 * consumes everything always triggers an update at the latest once that
 * much has been consumed unconfirmed.  A large ring thus costs the
 * writer one update per three quarters of a ring on a stream, whether
 * the reader keeps up or the writer keeps the ring full.
 *
 * A writer that waits for space needs at most visock_tx_wake_space() =
 * ring / 4 bytes and sees free < ring / 4.  In a small ring the update
 * that releases small bytes is then due without being asked for; in a
 * large ring, once the reader consumed everything, more than three
 * quarters are unconfirmed, and the update is due.  Either way the
 * writer does not have to announce that it is blocked.
 * Call it after local consumption and after new data arrived.
 *
 * Return: true if the consumer cursor should be sent now.
 */
bool visock_cons_update_due(u32 ring, u32 unconfirmed, u32 used,
			    bool peer_blocked)
{
	u32 half = max(ring / 2, 1U);
	u32 small = min(max(ring / 4, 4096U), half);
	u64 busy = min_t(u64, (u64)used + unconfirmed, ring);
	u32 free = ring - (u32)busy;

	if (ring >= VISOCK_CONS_BATCH_RING) {
		if (unconfirmed >= ring - ring / 4)
			return true;
		return unconfirmed >= small && peer_blocked;
	}
	if (unconfirmed >= half)
		return true;
	if (unconfirmed < small)
		return false;
	return peer_blocked || free <= ring / 2;
}
