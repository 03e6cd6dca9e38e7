/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: which socket options reach the internal TCP socket
 * (visock_sockopt.c).
 */
#ifndef _VISOCK_SOCKOPT_H
#define _VISOCK_SOCKOPT_H

#include <linux/types.h>

bool visock_sockopt_forwarded(int level, int optname);

#endif /* _VISOCK_SOCKOPT_H */
