/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: events for user space (visock_event.c).
 */
#ifndef _NET_VISOCK_EVENT_H
#define _NET_VISOCK_EVENT_H

#include <linux/types.h>

struct ib_device;
struct visock_diag_link;
struct visock_sock;

/**
 * struct visock_event_ops - the consumer of visock's events
 * @sock: a socket's event (VISOCK_EVENT_LINK_UP, _LINK_DOWN, _FALLBACK,
 *	_ABORT); any context, must not sleep
 * @dev: an RDMA device came or went (VISOCK_EVENT_DEV_ADD, _DEV_REMOVE);
 *	process context, may sleep
 */
struct visock_event_ops {
	void (*sock)(struct visock_sock *vsk, u8 type, int arg,
		     const struct visock_diag_link *link);
	void (*dev)(struct ib_device *ibdev, u8 type);
};

void visock_event_set_consumer(const struct visock_event_ops *ops);
void visock_event_sock(struct visock_sock *vsk, u8 type, int arg,
		       const struct visock_diag_link *link);
void visock_event_dev(struct ib_device *ibdev, u8 type);

#endif /* _NET_VISOCK_EVENT_H */
