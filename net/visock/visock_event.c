// SPDX-License-Identifier: GPL-2.0
/*
 * visock: events for user space.
 *
 * Where something user space may watch happens (a connection moves to
 * RDMA or falls back, its link goes down, it is aborted, a device comes
 * or goes), the code reports it here and goes on.  One consumer, the
 * generic netlink family (visock_genl.c), turns the reports into
 * multicast messages.  The code that reports events thus does not depend
 * on the layer that sends them: the handshake, the data path and the
 * device code name this file, never visock_genl.c.
 *
 * The consumer is set once at module load, before any socket or device
 * callback can run, and cleared at unload; its functions stay valid for
 * as long as the module is loaded, so a report that races with the
 * clearing still calls valid code (the consumer drops what arrives after
 * it shut down).
 */
#include <linux/compiler.h>

#include "visock_event.h"

static const struct visock_event_ops *visock_event_consumer;

/**
 * visock_event_set_consumer() - set or clear the consumer of events
 * @ops: the consumer, or NULL to drop events from now on
 *
 * Context: module init or exit.
 */
void visock_event_set_consumer(const struct visock_event_ops *ops)
{
	WRITE_ONCE(visock_event_consumer, ops);
}

/**
 * visock_event_sock() - report an event of a socket
 * @vsk: the socket; its internal TCP socket must stay meanwhile
 * @type: VISOCK_EVENT_LINK_UP, _LINK_DOWN, _FALLBACK or _ABORT
 * @arg: the fallback reason (FALLBACK) or the negative errno (ABORT)
 * @link: the link (LINK_UP, LINK_DOWN), or NULL
 *
 * Context: any; no socket callback lock of @vsk held.
 */
void visock_event_sock(struct visock_sock *vsk, u8 type, int arg,
		       const struct visock_diag_link *link)
{
	const struct visock_event_ops *ops = READ_ONCE(visock_event_consumer);

	if (ops)
		ops->sock(vsk, type, arg, link);
}

/**
 * visock_event_dev() - report that an RDMA device came or went
 * @ibdev: the device
 * @type: VISOCK_EVENT_DEV_ADD or VISOCK_EVENT_DEV_REMOVE
 *
 * Context: process context.
 */
void visock_event_dev(struct ib_device *ibdev, u8 type)
{
	const struct visock_event_ops *ops = READ_ONCE(visock_event_consumer);

	if (ops)
		ops->dev(ibdev, type);
}
