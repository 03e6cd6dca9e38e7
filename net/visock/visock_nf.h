/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: netfilter hooks that add the capability option to the SYN and
 * SYN-ACK of visock's internal TCP sockets and read it from SYN-ACKs.
 */
#ifndef _NET_VISOCK_NF_H
#define _NET_VISOCK_NF_H

struct net;

/*
 * Flags byte of the visock option in the copy of a client's SYN that TCP
 * saves for an internal listener: visock_nf.c records there what the
 * SYN-ACK echoed (bits outside VISOCK_TCPOPT_F_PEER_MASK).
 */
#define VISOCK_SAVED_F_ECHOED		0x80	/* the SYN-ACK echoed it */
#define VISOCK_SAVED_F_ECHO_RDMA	0x40	/* ... with F_RDMA */

int visock_nf_net_init(struct net *net);
void visock_nf_net_exit(struct net *net);

#endif /* _NET_VISOCK_NF_H */
