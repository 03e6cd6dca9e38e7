/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: work requests of a QP (visock_wr.c): receive requests and
 * their dispatch, completion accounting.
 */
#ifndef _NET_VISOCK_WR_H
#define _NET_VISOCK_WR_H

struct ib_cq;
struct ib_wc;
struct visock_qp;

void visock_qp_count_wc(struct visock_qp *q, const struct ib_wc *wc);
int visock_qp_fill_rq(struct visock_qp *q, unsigned int nconns);
void visock_qp_rx_done(struct ib_cq *cq, struct ib_wc *wc);

#endif /* _NET_VISOCK_WR_H */
