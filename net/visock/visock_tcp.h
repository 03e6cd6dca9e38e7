/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: the internal TCP socket of a visock socket (visock_tcp.c).
 */
#ifndef _NET_VISOCK_TCP_H
#define _NET_VISOCK_TCP_H

#include "visock.h"
#include "visock_inner.h"

int visock_tcp_create(struct visock_sock *vsk, struct net *net);
void visock_tcp_attach(struct visock_sock *vsk, struct socket *tcp,
		       const struct visock_sock *from);
void visock_tcp_detach(struct visock_sock *vsk);
void visock_tcp_release(struct visock_sock *vsk);
void visock_tcp_sync_opts(struct visock_sock *vsk);
bool visock_is_internal_tcp(const struct sock *sk);
bool visock_tcp_syn_opt(struct sock *tsk, struct visock_synopt *opt);
int visock_tcp_peek_at(struct socket *tcp, u32 off, u8 *buf, u32 len);
bool visock_tcp_synack_opt(struct sock *listener,
			   const struct visock_synopt *peer,
			   struct visock_synopt *opt);
void visock_tcp_peer_opt(struct sock *tsk, const struct visock_synopt *opt);

/* A forwarded call returned @ret: it reported the copied error, if any. */
static inline void visock_tcp_consume_err(struct visock_sock *vsk, long ret)
{
	visock_inner_consume_err(&vsk->sk, &vsk->err_mirror, ret);
}

#endif /* _NET_VISOCK_TCP_H */
