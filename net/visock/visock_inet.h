/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: visock sockets in the AF_INET and AF_INET6 families
 * (visock_inet.c).
 */
#ifndef _NET_VISOCK_INET_H
#define _NET_VISOCK_INET_H

struct sock;

int visock_inet_init(void);
void visock_inet_exit(void);
void visock_inet_child_init(struct sock *sk);

#endif /* _NET_VISOCK_INET_H */
