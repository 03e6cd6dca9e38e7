/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: what every visock socket does to the kernel socket it forwards
 * its calls to (visock_inner.c).
 */
#ifndef _NET_VISOCK_INNER_H
#define _NET_VISOCK_INNER_H

#include <net/sock.h>

void visock_inner_set_err(struct sock *sk, int *mirror, int err);
void visock_inner_consume_err(struct sock *sk, int *mirror, long ret);
void visock_inner_sync_opts(struct sock *sk, struct sock *isk, int *mirror,
			    bool reuse);

#endif /* _NET_VISOCK_INNER_H */
