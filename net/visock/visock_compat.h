/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock compatibility with the kernels we build against.
 *
 * Every kernel-version check of the project lives in this file, so that
 * the rest of the code reads like it was written for one kernel.  The
 * oldest supported kernel is 6.1 (Debian 12); newer APIs are mapped onto
 * what 6.1 offers, or the other way round where that is simpler.
 */
#ifndef _NET_VISOCK_COMPAT_H
#define _NET_VISOCK_COMPAT_H

#include <linux/version.h>
#include <linux/net.h>
#include <net/net_namespace.h>

/*
 * proto_ops.accept() takes a struct proto_accept_arg since 6.10.
 * VISOCK_ACCEPT_ARGS declares the parameters, VISOCK_ACCEPT_FLAGS() and
 * VISOCK_ACCEPT_KERN() read them back in either form.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
#define VISOCK_ACCEPT_ARGS \
	struct socket *sock, struct socket *newsock, struct proto_accept_arg *arg
#define VISOCK_ACCEPT_FLAGS()	(arg->flags)
#define VISOCK_ACCEPT_KERN()	(arg->kern)
#else
#define VISOCK_ACCEPT_ARGS \
	struct socket *sock, struct socket *newsock, int flags, bool kern
#define VISOCK_ACCEPT_FLAGS()	(flags)
#define VISOCK_ACCEPT_KERN()	(kern)
#endif

/*
 * Since 6.6 sysctl tables are registered with their size and (since 6.11)
 * without an empty sentinel entry.  Our templates keep the sentinel for
 * 6.1; @n is the number of real entries.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 6, 0)
#define visock_register_net_sysctl(net, path, table, n) \
	register_net_sysctl_sz(net, path, table, n)
#else
#define visock_register_net_sysctl(net, path, table, n) \
	register_net_sysctl(net, path, table)
#endif

/*
 * SOCK_CUSTOM_SOCKOPT (6.7+) lets a family see setsockopt(SOL_SOCKET, ...)
 * calls.  Without it the socket layer applies them to the visock socket
 * only, and visock_tcp_sync_opts() copies them to the internal TCP socket
 * at the next call that needs them.
 */
#ifdef SOCK_CUSTOM_SOCKOPT
#define VISOCK_HAVE_CUSTOM_SOCKOPT	1
#else
#define VISOCK_HAVE_CUSTOM_SOCKOPT	0
#define SOCK_CUSTOM_SOCKOPT		(-1)
#endif

/*
 * How inet6_create() finds the struct ipv6_pinfo of a sock: since 6.6
 * through proto.ipv6_pinfo_offset, before that by assuming it is the last
 * obj_size bytes of the sock.  visock_inet.c keeps it the last member so
 * that both work; VISOCK_IPV6_PINFO_OFFSET() fills in the field where it
 * exists.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 6, 0)
#define VISOCK_IPV6_PINFO_OFFSET(type, member) \
	.ipv6_pinfo_offset = offsetof(type, member),
#else
#define VISOCK_IPV6_PINFO_OFFSET(type, member)
#endif

/*
 * proto_ops.sendpage() disappeared in 6.5 (MSG_SPLICE_PAGES replaced it);
 * before that, leaving it NULL makes sendfile() use sock_no_sendpage(),
 * which ends up in our sendmsg().  Nothing to map.
 */

/*
 * __assign_str() of TRACE_EVENT() lost its source argument in 6.10 (the
 * source is the one given to __string()).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
#define visock_trace_assign_str(dst, src)	__assign_str(dst)
#else
#define visock_trace_assign_str(dst, src)	__assign_str(dst, src)
#endif

#endif /* _NET_VISOCK_COMPAT_H */
