/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: lazy start of a connection on TCP and its switch to RDMA
 * (visock_lazy.c).
 */
#ifndef _NET_VISOCK_LAZY_H
#define _NET_VISOCK_LAZY_H

#include "visock.h"

extern const struct visock_mode_ops visock_lazy_mode_ops;
void visock_lazy_start(struct visock_sock *vsk);
void visock_lazy_work(struct visock_sock *vsk);
void visock_lazy_tcp_event(struct visock_sock *vsk);
bool visock_lazy_rx_pending(const struct visock_sock *vsk);
int visock_lazy_sendmsg(struct visock_sock *vsk, struct msghdr *msg,
			size_t len);
int visock_lazy_recvmsg(struct visock_sock *vsk, struct msghdr *msg,
			size_t len, int flags);
__poll_t visock_lazy_poll(struct visock_sock *vsk, __poll_t tcp_mask);
void visock_lazy_reply_locked(struct visock_dp *dp, const u8 *buf, u32 len);

#endif /* _NET_VISOCK_LAZY_H */
