/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: the per-namespace sysctls net.visock.* and their defaults
 * (visock_sysctl.c).
 */
#ifndef _NET_VISOCK_SYSCTL_H
#define _NET_VISOCK_SYSCTL_H

struct net;

/* Default of net.visock.handshake_timeout_ms. */
#define VISOCK_HS_TIMEOUT_MS_DEFAULT	3000
/*
 * RC local ACK timeout, IBTA encoding (4.096 us * 2^n per try): 17 is
 * 537 ms.  Soft-RoCE has no congestion control and drops under load on a
 * slow host; 14 (67 ms) made 64 busy connections exceed their retries.
 */
#define VISOCK_ACK_TIMEOUT_DEFAULT	17
#define VISOCK_ACK_TIMEOUT_MIN		12	/* 16.8 ms */
#define VISOCK_ACK_TIMEOUT_MAX		24	/* 68.7 s */
/* Receive ring size without SO_RCVBUF: net.visock.rbuf_default. */
#define VISOCK_RBUF_DEFAULT		(64 * 1024)
/* Link groups: net.visock.lgr_* defaults. */
#define VISOCK_LGR_MAX_LINKS_DEFAULT	2
#define VISOCK_LGR_LINK_CONNS_DEFAULT	512
#define VISOCK_LGR_LINK_CONNS_MIN_DEFAULT	16
#define VISOCK_LGR_IDLE_MS_DEFAULT	10000
#define VISOCK_LGR_MEM_MAX_MB_DEFAULT	256
#define VISOCK_LGR_KEEPALIVE_MS_DEFAULT	15000

int visock_sysctl_net_init(struct net *net);
void visock_sysctl_net_exit(struct net *net);

#endif /* _NET_VISOCK_SYSCTL_H */
