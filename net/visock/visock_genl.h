/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: the "visock" generic netlink family (visock_genl.c); it is the
 * consumer of visock_event.c's reports.
 */
#ifndef _NET_VISOCK_GENL_H
#define _NET_VISOCK_GENL_H

#include <linux/types.h>

struct genl_family;

extern struct genl_family visock_genl_family;
int visock_genl_init(void);
void visock_genl_exit(void);

#endif /* _NET_VISOCK_GENL_H */
