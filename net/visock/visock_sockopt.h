/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: which socket options reach the internal TCP socket, and
 * visock's own options that are more than a field (visock_sockopt.c).
 */
#ifndef _VISOCK_SOCKOPT_H
#define _VISOCK_SOCKOPT_H

#include <linux/sockptr.h>
#include <linux/types.h>

struct visock_sock;

bool visock_sockopt_forwarded(int level, int optname);
void visock_sockopt_tcp_tstamp(u8 *buf, unsigned int len);
int visock_sockopt_set_xform(struct visock_sock *vsk, sockptr_t optval,
			     unsigned int optlen);
u32 visock_sockopt_get_xform(const struct visock_sock *vsk);

#endif /* _VISOCK_SOCKOPT_H */
