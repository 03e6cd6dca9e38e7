/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: the mode decision and the in-band RDMA handshake
 * (visock_handshake.c).
 */
#ifndef _NET_VISOCK_HANDSHAKE_H
#define _NET_VISOCK_HANDSHAKE_H

#include "visock.h"

extern const struct visock_mode_ops visock_hs_mode_ops;
void visock_hs_init(struct visock_sock *vsk);
void visock_hs_start(struct visock_sock *vsk, u8 state);
void visock_hs_kick(struct visock_sock *vsk);
void visock_hs_cancel(struct visock_sock *vsk);
int visock_decide(struct visock_sock *vsk);
void visock_decide_child(struct visock_sock *child);
struct visock_hs_msg;
int visock_hs_make_vc(struct visock_sock *vsk, struct visock_hs_msg *m,
		      u8 type, const struct visock_hs_msg *req);
int visock_hs_send(struct visock_sock *vsk, struct visock_hs_msg *m);
void visock_hs_abort(struct visock_sock *vsk, int err);
void visock_hs_success(struct visock_sock *vsk);
void visock_hs_note_peer(struct visock_sock *vsk,
			 const struct visock_hs_msg *m);
u8 visock_hs_vc_reason(int err);
int visock_hs_switch_decline(struct visock_sock *vsk,
			     const struct visock_hs_msg *sw, u32 reason);
void visock_hs_queue_at(struct visock_sock *vsk, unsigned long when);
void visock_hs_auth_done(struct visock_sock *vsk);
int visock_hs_switch_auth(struct visock_sock *vsk, struct visock_hs_msg *m);
int visock_hs_switch_check(struct visock_sock *vsk,
			   const struct visock_hs_msg *sw, const u8 *buf,
			   int len);
struct visock_swrep;
int visock_hs_swrep_seal(struct visock_sock *vsk, struct visock_swrep *r);
int visock_hs_swrep_open(struct visock_sock *vsk, const struct visock_swrep *r,
			 const u8 *buf);

#endif /* _NET_VISOCK_HANDSHAKE_H */
