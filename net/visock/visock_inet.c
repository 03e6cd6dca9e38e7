// SPDX-License-Identifier: GPL-2.0
/*
 * visock: visock sockets in the AF_INET and AF_INET6 families.
 *
 * socket(AF_INET or AF_INET6, SOCK_STREAM, IPPROTO_VISOCK) creates the
 * same socket as socket(AF_VISOCK, SOCK_STREAM, VISOCKPROTO_TCP4/6): the
 * proto_ops are visock's, only sk_family (SO_DOMAIN) and sk_protocol
 * (SO_PROTOCOL) differ.  That is what lets a BPF program on
 * update_socket_protocol() (tools/visock/visock_redirect.c) turn an
 * unmodified program's TCP sockets into visock sockets: it only changes
 * the protocol number, which reaches us through an inet protosw entry.
 *
 * inet_create() allocates the sock from our struct proto (hence the
 * inet_sock at the start of struct visock_sock and, for IPv6, the
 * ipv6_pinfo at the end of struct visock6_sock), initialises its inet
 * part, and calls proto.init, where visock takes over with the steps that
 * visock_create() runs for AF_VISOCK.  From then on only our proto_ops
 * are used: release() never reaches proto.close.  If inet_create() fails
 * after proto.init (a cgroup sock_create BPF program said no), it tears
 * the sock down with sk_common_release(), which calls proto.destroy and
 * proto.unhash.
 *
 * The protocol number is the module parameter inet_proto (default
 * IPPROTO_VISOCK).  inet_register_protosw() lets a new entry shadow an
 * existing non-permanent one of the same number without a word, so
 * visock_inet_register() checks the SOCK_STREAM list after adding ours
 * and backs out if another protocol module got there first.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/rculist.h>
#include <net/protocol.h>
#include <net/inet_common.h>
#include <net/ipv6.h>
#include <net/tcp_states.h>

#include "visock.h"
#include "af_visock.h"
#include "visock_inet.h"
#include "visock_tcp.h"
#include "visock_mem.h"
#include "visock_dgram.h"

static int inet_proto = IPPROTO_VISOCK;
module_param(inet_proto, int, 0444);
MODULE_PARM_DESC(inet_proto,
		 "protocol number of socket(AF_INET[6], SOCK_STREAM, N) visock sockets (256-262; 0: none; default "
		 __stringify(IPPROTO_VISOCK) ")");

/*
 * socket() loads the module for the default number (SOCK_STREAM is 1).
 * Not for SOCK_DGRAM: datagram sockets are off until a sysctl of the
 * loaded module turns them on.
 */
MODULE_ALIAS_NET_PF_PROTO_TYPE(PF_INET, IPPROTO_VISOCK, 1);
MODULE_ALIAS_NET_PF_PROTO_TYPE(PF_INET6, IPPROTO_VISOCK, 1);

/*
 * An AF_INET6 visock sock.  inet6_create() finds @inet6 through
 * proto.ipv6_pinfo_offset (6.6+) or as the last bytes of the object
 * (older kernels); it must stay the last member.
 */
struct visock6_sock {
	struct visock_sock vsk;
	struct ipv6_pinfo inet6;
};

/* proto.init: inet_create() has set up the sock, attached to its socket. */
static int visock_inet_init_sock(struct sock *sk)
{
	visock_sk_init(sk, sk->sk_family);
	return visock_sock_setup(visock_sk(sk));
}

/*
 * proto.destroy: only sk_common_release() calls it, when inet_create()
 * fails after visock_inet_init_sock() succeeded; visock_release() never
 * does.  The socket never got further than its creation.
 */
static void visock_inet_destroy_sock(struct sock *sk)
{
	visock_tcp_release(visock_sk(sk));
}

/* proto.unhash: sk_common_release() calls it; we are in no hash table. */
static void visock_inet_unhash(struct sock *sk)
{
}

static struct proto visock_inet_proto = {
	.name		= "VISOCK_INET",
	.owner		= THIS_MODULE,
	.init		= visock_inet_init_sock,
	.destroy	= visock_inet_destroy_sock,
	.unhash		= visock_inet_unhash,
	.obj_size	= sizeof(struct visock_sock),
	VISOCK_MEM_PROTO_FIELDS,
};

static struct proto visock_inet6_proto = {
	.name		= "VISOCK_INET6",
	.owner		= THIS_MODULE,
	.init		= visock_inet_init_sock,
	.destroy	= visock_inet_destroy_sock,
	.unhash		= visock_inet_unhash,
	.obj_size	= sizeof(struct visock6_sock),
	VISOCK_MEM_PROTO_FIELDS,
	VISOCK_IPV6_PINFO_OFFSET(struct visock6_sock, inet6)
};

/* An AF_INET6 visock datagram sock; @inet6 last, as in visock6_sock. */
struct visock_dgram6_sock {
	struct visock_dgram_sock vds;
	struct ipv6_pinfo inet6;
};

/*
 * proto.init of a datagram sock: refused while the namespace has
 * datagrams off, with the errno of a kernel without them (no protosw
 * entry for the number).
 */
static int visock_inet_dgram_init_sock(struct sock *sk)
{
	if (!READ_ONCE(visock_net(sock_net(sk))->dgram_enable))
		return -EPROTONOSUPPORT;
	return visock_dgram_sock_setup(sk, sk->sk_family);
}

/* proto.destroy: see visock_inet_destroy_sock(). */
static void visock_inet_dgram_destroy_sock(struct sock *sk)
{
	visock_dgram_sock_teardown(sk);
}

static struct proto visock_inet_dgram_proto = {
	.name		= "VISOCK_UDP",
	.owner		= THIS_MODULE,
	.init		= visock_inet_dgram_init_sock,
	.destroy	= visock_inet_dgram_destroy_sock,
	.unhash		= visock_inet_unhash,
	.obj_size	= sizeof(struct visock_dgram_sock),
	VISOCK_MEM_PROTO_FIELDS,
};

static struct proto visock_inet6_dgram_proto = {
	.name		= "VISOCK_UDP6",
	.owner		= THIS_MODULE,
	.init		= visock_inet_dgram_init_sock,
	.destroy	= visock_inet_dgram_destroy_sock,
	.unhash		= visock_inet_unhash,
	.obj_size	= sizeof(struct visock_dgram6_sock),
	VISOCK_MEM_PROTO_FIELDS,
	VISOCK_IPV6_PINFO_OFFSET(struct visock_dgram6_sock, inet6)
};

/*
 * The proto_ops are visock_stream_ops for all three families: nothing
 * reads proto_ops.family after sock_register().  Not INET_PROTOSW_ICSK:
 * a visock sock is no inet_connection_sock (its TCP socket is).  Not
 * INET_PROTOSW_PERMANENT: the module can go away.
 */
static struct inet_protosw visock_inet_protosw = {
	.type		= SOCK_STREAM,
	.prot		= &visock_inet_proto,
	.ops		= &visock_stream_ops,
};

static struct inet_protosw visock_inet6_protosw = {
	.type		= SOCK_STREAM,
	.prot		= &visock_inet6_proto,
	.ops		= &visock_stream_ops,
};

static struct inet_protosw visock_inet_dgram_protosw = {
	.type		= SOCK_DGRAM,
	.prot		= &visock_inet_dgram_proto,
	.ops		= &visock_dgram_ops,
};

static struct inet_protosw visock_inet6_dgram_protosw = {
	.type		= SOCK_DGRAM,
	.prot		= &visock_inet6_dgram_proto,
	.ops		= &visock_dgram_ops,
};

static bool visock_inet4_registered;
static bool visock_inet6_registered;
static bool visock_inet4_dgram_registered;
static bool visock_inet6_dgram_registered;

/**
 * visock_inet_child_init() - inet part of an accepted child's sock
 * @sk: sock allocated from its listener's struct proto, after
 *	sock_init_data()
 *
 * inet_create() does not run for accepted children.  visock uses none of
 * the inet fields, but the inet destructors need the ipv6_pinfo pointer
 * of an AF_INET6 sock.
 *
 * Context: process context.
 */
void visock_inet_child_init(struct sock *sk)
{
	if (sk->sk_family == AF_INET6)
		inet_sk(sk)->pinet6 = &container_of(visock_sk(sk),
						    struct visock6_sock,
						    vsk)->inet6;
}

/*
 * Does an entry other than @ours in @ours' list (of its socket type) use
 * its protocol number?  @ours was just registered.  The list head itself
 * is not exported, but its layout is known: permanent entries first, the
 * first of them registered at boot (TCP for SOCK_STREAM, UDP for
 * SOCK_DGRAM; UDP-Lite may follow UDP), then the others, newest first.
 * inet_register_protosw() put @ours right after the last permanent
 * entry, so walking back from @ours over permanent entries reaches @first
 * and the entry before it is the head: the others follow @ours until the
 * walk is back there.  Returns -EBUSY if the number is taken, -EUCLEAN if
 * the list does not look like that (then nothing can be said), 0 if the
 * number is free.
 */
static int visock_inet_check_unique(struct inet_protosw *ours, int first)
{
	const struct inet_protosw *perm, *p;
	struct list_head *head, *pos;
	int err = 0, i;

	rcu_read_lock();
	perm = ours;
	for (i = 0; i < 3; i++) {
		perm = list_entry(READ_ONCE(perm->list.prev),
				  struct inet_protosw, list);
		if (!(perm->flags & INET_PROTOSW_PERMANENT) ||
		    perm->protocol == ours->protocol) {
			err = -EUCLEAN;
			goto out;
		}
		if (perm->protocol == first)
			break;
	}
	if (perm->protocol != first) {
		err = -EUCLEAN;
		goto out;
	}
	head = READ_ONCE(perm->list.prev);
	for (pos = rcu_dereference(list_next_rcu(&ours->list)); pos != head;
	     pos = rcu_dereference(list_next_rcu(pos))) {
		p = list_entry(pos, struct inet_protosw, list);
		if (p->protocol == ours->protocol) {
			err = -EBUSY;
			break;
		}
	}
out:
	rcu_read_unlock();
	return err;
}

/* Register @sw for @family; false (logged) if it had to back out. */
static bool visock_inet_register(struct inet_protosw *sw, int family)
{
	const char *type = sw->type == SOCK_DGRAM ? "datagram" : "stream";
	const char *ctype = sw->type == SOCK_DGRAM ? "SOCK_DGRAM" :
						     "SOCK_STREAM";
	int err;

	sw->protocol = inet_proto;
	if (family == AF_INET)
		inet_register_protosw(sw);
	else
		inet6_register_protosw(sw);

	err = visock_inet_check_unique(sw, sw->type == SOCK_DGRAM ?
					   IPPROTO_UDP : IPPROTO_TCP);
	if (!err)
		return true;

	if (family == AF_INET)
		inet_unregister_protosw(sw);
	else
		inet6_unregister_protosw(sw);
	synchronize_net();
	if (err == -EBUSY)
		pr_warn("visock: protocol %d of %s %s sockets is already used by another module; no socket(%s, %s, %d) visock sockets (load visock with another inet_proto=)\n",
			inet_proto, family == AF_INET ? "AF_INET" : "AF_INET6",
			type, family == AF_INET ? "AF_INET" : "AF_INET6",
			ctype, inet_proto);
	else
		pr_warn("visock: cannot check who uses protocol %d of %s %s sockets; not registering it\n",
			inet_proto, family == AF_INET ? "AF_INET" : "AF_INET6",
			type);
	return false;
}

/**
 * visock_inet_init() - make socket(AF_INET[6], SOCK_STREAM, inet_proto)
 *	create visock sockets
 *
 * A protocol number that is taken, IPv6 being disabled, or inet_proto=0
 * only leave the inet families out (logged); AF_VISOCK works regardless.
 * Call it last at module load: sockets can be created once it returns.
 *
 * Context: module init.
 * Return: 0, or a negative errno when a struct proto cannot be
 * registered (nothing left registered then).
 */
int visock_inet_init(void)
{
	int err;

	if (!inet_proto)
		return 0;
	if (inet_proto < 256 || inet_proto >= IPPROTO_MAX) {
		pr_warn("visock: inet_proto=%d is not in 256..%d; no inet visock sockets\n",
			inet_proto, IPPROTO_MAX - 1);
		return 0;
	}
	/* inet6_create() relies on this before 6.6. */
	BUILD_BUG_ON(sizeof(struct visock6_sock) !=
		     offsetof(struct visock6_sock, inet6) +
		     sizeof(struct ipv6_pinfo));
	BUILD_BUG_ON(sizeof(struct visock_dgram6_sock) !=
		     offsetof(struct visock_dgram6_sock, inet6) +
		     sizeof(struct ipv6_pinfo));

	err = proto_register(&visock_inet_proto, 1);
	if (err)
		return err;
	err = proto_register(&visock_inet6_proto, 1);
	if (err)
		goto err_inet;
	err = proto_register(&visock_inet_dgram_proto, 1);
	if (err)
		goto err_inet6;
	err = proto_register(&visock_inet6_dgram_proto, 1);
	if (err)
		goto err_inet_dgram;

	visock_inet4_registered = visock_inet_register(&visock_inet_protosw,
						       AF_INET);
	/* With ipv6.disable=1 the protosw lists are not even initialised. */
	visock_inet4_dgram_registered =
		visock_inet_register(&visock_inet_dgram_protosw, AF_INET);
	if (ipv6_mod_enabled()) {
		visock_inet6_registered =
			visock_inet_register(&visock_inet6_protosw, AF_INET6);
		visock_inet6_dgram_registered =
			visock_inet_register(&visock_inet6_dgram_protosw,
					     AF_INET6);
	}
	if (visock_inet4_registered || visock_inet6_registered)
		pr_info("visock: socket(%s%s%s, SOCK_STREAM, %d) creates visock sockets\n",
			visock_inet4_registered ? "AF_INET" : "",
			visock_inet4_registered && visock_inet6_registered ?
			" or " : "",
			visock_inet6_registered ? "AF_INET6" : "", inet_proto);
	if (visock_inet4_dgram_registered || visock_inet6_dgram_registered)
		pr_info("visock: socket(%s%s%s, SOCK_DGRAM, %d) creates visock datagram sockets where net.visock.dgram_enable=1\n",
			visock_inet4_dgram_registered ? "AF_INET" : "",
			visock_inet4_dgram_registered &&
			visock_inet6_dgram_registered ? " or " : "",
			visock_inet6_dgram_registered ? "AF_INET6" : "",
			inet_proto);
	return 0;

err_inet_dgram:
	proto_unregister(&visock_inet_dgram_proto);
err_inet6:
	proto_unregister(&visock_inet6_proto);
err_inet:
	proto_unregister(&visock_inet_proto);
	return err;
}

/**
 * visock_inet_exit() - undo visock_inet_init()
 *
 * Once it returns no inet_create() can reach visock any more; sockets
 * created before hold module references, so at module unload there are
 * none left.
 *
 * Context: module exit, or module init unwinding; may sleep.
 */
void visock_inet_exit(void)
{
	if (!inet_proto || inet_proto < 256 || inet_proto >= IPPROTO_MAX)
		return;
	if (visock_inet6_dgram_registered)
		inet6_unregister_protosw(&visock_inet6_dgram_protosw);
	if (visock_inet4_dgram_registered)
		inet_unregister_protosw(&visock_inet_dgram_protosw);
	if (visock_inet6_registered)
		inet6_unregister_protosw(&visock_inet6_protosw);
	if (visock_inet4_registered)
		inet_unregister_protosw(&visock_inet_protosw);
	/* Lookups that still see the entries finish before we go on. */
	synchronize_net();
	visock_inet4_registered = false;
	visock_inet6_registered = false;
	visock_inet4_dgram_registered = false;
	visock_inet6_dgram_registered = false;
	proto_unregister(&visock_inet6_dgram_proto);
	proto_unregister(&visock_inet_dgram_proto);
	proto_unregister(&visock_inet6_proto);
	proto_unregister(&visock_inet_proto);
}
