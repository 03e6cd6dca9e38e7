/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: the socket list of each namespace and the sock_diag handler
 * of AF_VISOCK (visock_diag.c).
 */
#ifndef _NET_VISOCK_DIAG_H
#define _NET_VISOCK_DIAG_H

#include <linux/types.h>

struct net;
struct seq_file;
struct visock_diag_msg;
struct visock_gauges;
struct visock_info;
struct visock_sock;

typedef int (*visock_diag_fn_t)(struct visock_sock *vsk, void *arg);
void visock_diag_net_init(struct net *net);
void visock_diag_net_exit(struct net *net);
int visock_diag_walk(struct net *net, u64 *after, visock_diag_fn_t fn,
		     visock_diag_fn_t busy, void *arg);
void visock_diag_addrs(const struct visock_sock *vsk,
		       struct visock_diag_msg *m);
void visock_diag_info(struct visock_sock *vsk, struct visock_info *info);
void visock_diag_link_sock(struct visock_sock *vsk);
void visock_diag_unlink_sock(struct visock_sock *vsk);
void visock_diag_destruct(struct visock_sock *vsk);
void visock_diag_gauges(struct net *net, struct visock_gauges *g);
void visock_diag_show_all(struct seq_file *seq);
int visock_diag_init(void);
void visock_diag_exit(void);

#endif /* _NET_VISOCK_DIAG_H */
