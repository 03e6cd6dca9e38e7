/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: link messages of a QP (visock_llc.c): delete link, keepalive
 * and switch decline.
 */
#ifndef _NET_VISOCK_LLC_H
#define _NET_VISOCK_LLC_H

#include <linux/types.h>

struct net;
struct sockaddr;
struct visock_hs_msg;
struct visock_qp;

void visock_llc_init(struct visock_qp *q);
void visock_qp_peer_delete(struct visock_qp *q);
void visock_qp_send_delete(struct visock_qp *q);
void visock_qp_ka_start(struct visock_qp *q);
void visock_qp_ka_stop(struct visock_qp *q);
int visock_lgr_switch_decline(struct net *net, const struct sockaddr *local,
			      const struct sockaddr *peer,
			      const struct visock_hs_msg *sw, u32 reason,
			      bool server);

#endif /* _NET_VISOCK_LLC_H */
