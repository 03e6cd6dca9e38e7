/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: work requests of a QP (visock_wr.c): the one posting path of
 * send requests, receive requests and their dispatch, completion
 * accounting.
 */
#ifndef _NET_VISOCK_WR_H
#define _NET_VISOCK_WR_H

#include <linux/types.h>

#include "visock_fault.h"

struct ib_cq;
struct ib_cqe;
struct ib_send_wr;
struct ib_wc;
struct visock_vc;
struct visock_qp;

int visock_wr_post_send(struct visock_qp *q, struct visock_vc *l,
			const struct ib_send_wr *wr,
			enum visock_fault_point fp,
			int (*prep)(struct visock_qp *q, void *arg), void *arg);
int visock_wr_post_slot(struct visock_qp *q, struct visock_vc *l, u32 slot,
			u32 len, struct ib_cqe *cqe, enum visock_fault_point fp);

void visock_qp_count_wc(struct visock_qp *q, const struct ib_wc *wc);
int visock_qp_fill_rq(struct visock_qp *q, unsigned int nconns);
void visock_qp_rx_done(struct ib_cq *cq, struct ib_wc *wc);

#endif /* _NET_VISOCK_WR_H */
