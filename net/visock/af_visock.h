/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: the socket family and its stream engine (af_visock.c).
 */
#ifndef _NET_VISOCK_AF_VISOCK_H
#define _NET_VISOCK_AF_VISOCK_H

#include "visock.h"

extern struct proto visock_proto;
extern const struct net_proto_family visock_family_ops;
extern const struct proto_ops visock_stream_ops;
void visock_sk_init(struct sock *sk, int family);
int visock_sock_setup(struct visock_sock *vsk);
void visock_listen_kick(struct visock_sock *vsk);
void visock_child_settled(struct visock_sock *child);
void visock_set_fallback(struct visock_sock *vsk, u8 reason);
void visock_set_mode(struct visock_sock *vsk, u8 mode);

/* TCP mode, also the base the other modes fall back on */
extern const struct visock_mode_ops visock_tcp_mode_ops;
int visock_tcp_mode_sendmsg(struct visock_sock *vsk, struct msghdr *msg,
			    size_t len);
int visock_tcp_mode_recvmsg(struct visock_sock *vsk, struct msghdr *msg,
			    size_t len, int flags);
__poll_t visock_tcp_mode_poll(struct visock_sock *vsk, struct file *file);
int visock_tcp_mode_shutdown(struct visock_sock *vsk, int how);

#endif /* _NET_VISOCK_AF_VISOCK_H */
