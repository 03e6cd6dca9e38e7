/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: a connection's share of a link group's queue pair
 * (visock_vc.c): its token, receive ring, send buffer, the peer's ring
 * and the posting functions of the data path.  The structure is opaque
 * here; ownership rules are at the top of visock_vc.c, those of the
 * QP at the top of visock_lgr.c.
 */
#ifndef _NET_VISOCK_VC_H
#define _NET_VISOCK_VC_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/socket.h>
#include <linux/types.h>
#include <rdma/ib_verbs.h>
#include <linux/visock.h>
#include <linux/visock_diag.h>

#include "visock_wire.h"

struct net;
struct visock_vc;

/*
 * Per connection: send work requests it may have outstanding on the
 * shared QP, receive credits it may use of the peer's QP, the size of one
 * cursor message slot.  A QP is sized for VISOCK_VC_SQ_DEPTH and
 * VISOCK_VC_RQ_DEPTH times the connections it takes, plus a few.
 */
#define VISOCK_VC_SQ_DEPTH	16
#define VISOCK_VC_RQ_DEPTH	16
#define VISOCK_QP_CTRL_SLOT	32

/**
 * struct visock_vc_params - what a connection wants from a link group
 * @net: namespace of the connection
 * @local: local address of the internal TCP connection
 * @peer: peer address of the internal TCP connection
 * @rbuf_size: receive ring size, a power of two, VISOCK_RBUF_MIN ..
 *	VISOCK_RBUF_MAX
 * @ack_timeout: RC local ACK timeout of a new QP, IBTA encoding
 * @req: the peer's REQ or SWITCH naming the QP to join, or NULL
 * @sk: the connection's socket: the rings it takes are charged to it
 *	(visock_mem.c) until visock_vc_destroy(); NULL: not charged
 * @server: our end of the QP is the server's (the peer set the QP up)
 */
struct visock_vc_params {
	struct net *net;
	const struct sockaddr *local;
	const struct sockaddr *peer;
	u32 rbuf_size;
	u8 ack_timeout;
	const struct visock_hs_msg *req;
	struct sock *sk;
	bool server;
};

/* What a data path connection learns from a receive completion. */
enum visock_rx_kind {
	VISOCK_RX_DATA,		/* WRITE WITH IMMEDIATE: @imm */
	VISOCK_RX_CTRL,		/* cursor message: @msg, @len */
	VISOCK_RX_ERR,		/* the QP failed: @status */
};

/**
 * struct visock_rx_ev - a receive completion for one connection
 * @kind: enum visock_rx_kind
 * @imm: immediate data, host order
 * @msg: the cursor message, valid during the callback only
 * @len: its length
 * @status: work completion status of a failure
 */
struct visock_rx_ev {
	u8 kind;
	u32 imm;
	const u8 *msg;
	u32 len;
	int status;
};

typedef void (*visock_vc_rx_fn)(void *ctx, const struct visock_rx_ev *ev);

int visock_vc_create(const struct visock_vc_params *p,
		     struct visock_vc **out);
void visock_vc_local_params(const struct visock_vc *l,
			    struct visock_hs_msg *m);
int visock_vc_connect(struct visock_vc *l,
		      const struct visock_hs_msg *peer);
void visock_vc_destroy(struct visock_vc *l);
u32 visock_vc_token(const struct visock_vc *l);
void visock_vc_peer_forgot(struct visock_vc *l);
void visock_vc_confirmed(struct visock_vc *l);
bool visock_vc_reused(const struct visock_vc *l);
bool visock_vc_peer_listens(const struct visock_vc *l);

int visock_vc_set_rx(struct visock_vc *l, visock_vc_rx_fn fn,
		     void *ctx);
int visock_vc_set_dead_cb(struct visock_vc *l,
			  void (*dead_cb)(void *ctx), void *ctx);
bool visock_vc_is_dead(const struct visock_vc *l);
void visock_vc_peer_quiet(struct visock_vc *l);
void visock_vc_suspect(struct visock_vc *l);

void visock_vc_wc_done(struct visock_vc *l, const struct ib_wc *wc);

u32 visock_vc_qpn(const struct visock_vc *l);
void *visock_vc_rbuf(const struct visock_vc *l);
void visock_vc_rbuf_sync_for_cpu(struct visock_vc *l, u32 off, u32 len);
u32 visock_vc_rbuf_size(const struct visock_vc *l);
u32 visock_vc_peer_rbuf_size(const struct visock_vc *l);

void *visock_vc_sbuf(const struct visock_vc *l);
void *visock_vc_ctrl_slot(const struct visock_vc *l, unsigned int idx);
int visock_vc_post_ctrl(struct visock_vc *l, unsigned int idx, u32 len,
			struct ib_cqe *cqe);
int visock_vc_post_write(struct visock_vc *l, u32 off, u32 len,
			 __be32 imm, struct ib_cqe *cqe);
int visock_vc_test_forge(struct visock_vc *l, u32 off, u32 len, __be32 imm);

struct visock_diag_link;
void visock_vc_diag(struct visock_vc *l, struct visock_diag_link *d);
void visock_vc_peer_params(const struct visock_vc *l,
			   struct visock_hs_msg *m);
int visock_vc_register_rx(struct visock_vc *l);

#endif /* _NET_VISOCK_VC_H */
