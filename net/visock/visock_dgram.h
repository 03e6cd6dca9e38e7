/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: datagram sockets (visock_dgram.c).
 *
 * socket(AF_VISOCK, SOCK_DGRAM, VISOCKPROTO_UDP4/6) and socket(AF_INET
 * or AF_INET6, SOCK_DGRAM, IPPROTO_VISOCK) create a struct
 * visock_dgram_sock.  The socket families' create paths (af_visock.c,
 * visock_inet.c) only allocate it and call in here.
 */
#ifndef _NET_VISOCK_DGRAM_H
#define _NET_VISOCK_DGRAM_H

#include <linux/net.h>
#include <net/inet_sock.h>

/**
 * struct visock_dgram_sock - a visock datagram socket
 * @inet: the sock; an inet_sock because inet_create() treats it as one
 *	(the AF_VISOCK form uses only its struct sock)
 * @udp: the internal UDP socket, owned from creation to release; it
 *	holds the receive queue of every path
 * @err_mirror: UDP's error copied to the sock, until consumed
 * @saved_data_ready: UDP's callbacks, run first by ours; written before
 *	the callbacks are installed, under @udp's sk_callback_lock
 * @saved_write_space: see @saved_data_ready
 * @saved_state_change: see @saved_data_ready
 * @saved_error_report: see @saved_data_ready
 */
struct visock_dgram_sock {
	struct inet_sock inet;
	struct socket *udp;
	int err_mirror;
	void (*saved_data_ready)(struct sock *sk);
	void (*saved_write_space)(struct sock *sk);
	void (*saved_state_change)(struct sock *sk);
	void (*saved_error_report)(struct sock *sk);
};

static inline struct visock_dgram_sock *visock_dgram_sk(const struct sock *sk)
{
	return (struct visock_dgram_sock *)sk;
}

extern const struct proto_ops visock_dgram_ops;

int visock_dgram_create(struct net *net, struct socket *sock, int protocol,
			int kern);
int visock_dgram_sock_setup(struct sock *sk, int family);
void visock_dgram_sock_teardown(struct sock *sk);
int visock_dgram_init(void);
void visock_dgram_exit(void);

#endif /* _NET_VISOCK_DGRAM_H */
