/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: the "visock" generic netlink family and its events
 * (visock_genl.c).
 */
#ifndef _NET_VISOCK_GENL_H
#define _NET_VISOCK_GENL_H

#include <linux/types.h>

struct genl_family;
struct ib_device;
struct visock_diag_link;
struct visock_sock;

extern struct genl_family visock_genl_family;
int visock_genl_init(void);
void visock_genl_exit(void);
void visock_genl_notify_sock(struct visock_sock *vsk, u8 type, int arg,
			     const struct visock_diag_link *link);
void visock_genl_notify_dev(struct ib_device *ibdev, u8 type);

#endif /* _NET_VISOCK_GENL_H */
