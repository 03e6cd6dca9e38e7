/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: netfilter hooks that add the capability option to the SYN and
 * SYN-ACK of visock's internal TCP sockets and read it from SYN-ACKs.
 */
#ifndef _NET_VISOCK_NF_H
#define _NET_VISOCK_NF_H

struct net;

int visock_nf_net_init(struct net *net);
void visock_nf_net_exit(struct net *net);

#endif /* _NET_VISOCK_NF_H */
