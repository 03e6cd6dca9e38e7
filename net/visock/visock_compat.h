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
#include <net/inet_hashtables.h>
#include <net/inet6_hashtables.h>
#include <net/net_namespace.h>
#include <net/sock.h>

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
 * only, and visock_inner_sync_opts() and its callers copy them to the
 * internal TCP or UDP socket at the next call that needs them.  The flag was a #define at first and
 * is an enum constant in newer kernels (7.x), so #ifdef cannot see it.
 */
/*
 * SOF_TIMESTAMPING_OPT_RX_FILTER (6.5+, an enum constant): with it, a
 * software receive timestamp is reported only to sockets that asked for
 * SOF_TIMESTAMPING_RX_SOFTWARE themselves.  Older kernels report it to
 * every socket with SOF_TIMESTAMPING_SOFTWARE.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 5, 0)
#define VISOCK_TS_OPT_RX_FILTER	SOF_TIMESTAMPING_OPT_RX_FILTER
#else
#define VISOCK_TS_OPT_RX_FILTER	0
#endif

/*
 * struct scm_timestamping_internal holds struct timespec64 stamps on
 * older kernels and ktime_t ones on newer (7.x) kernels.
 * visock_tss_set_sw() stores the software stamp @kt in either form,
 * chosen by the type of the field.
 */
#define visock_tss_set_sw(tss, kt)					\
	((tss)->ts[0] = _Generic((tss)->ts[0], ktime_t : (kt),		\
				 struct timespec64 : ktime_to_timespec64(kt)))

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 7, 0)
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

/*
 * proto_ops.bind() and .connect(), kernel_bind() and kernel_connect() take
 * a struct sockaddr_unsized since 6.19 (the length argument says how much
 * of it is there).  struct visock_sockaddr_arg names the type of that
 * argument on the kernel at hand; visock_sockaddr() gives the struct
 * sockaddr view that the rest of the code takes, with the same length.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 19, 0)
#define visock_sockaddr_arg	sockaddr_unsized
#else
#define visock_sockaddr_arg	sockaddr
#endif

static inline struct sockaddr *
visock_sockaddr(struct visock_sockaddr_arg *addr)
{
	return (struct sockaddr *)addr;
}

/*
 * The established-hash lookups of TCP lost their inet_hashinfo argument in
 * 6.18 (the table is found from the netns).  Both return a referenced sock
 * or NULL, and must be called under rcu_read_lock().
 */
static inline struct sock *
visock_lookup_established(struct net *net, __be32 saddr, __be16 sport,
			  __be32 daddr, u16 hnum, int dif, int sdif)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 18, 0)
	return __inet_lookup_established(net, saddr, sport, daddr, hnum,
					 dif, sdif);
#else
	return __inet_lookup_established(net,
					 net->ipv4.tcp_death_row.hashinfo,
					 saddr, sport, daddr, hnum, dif, sdif);
#endif
}

#if IS_ENABLED(CONFIG_IPV6)
static inline struct sock *
visock_lookup_established6(struct net *net, const struct in6_addr *saddr,
			   __be16 sport, const struct in6_addr *daddr,
			   u16 hnum, int dif, int sdif)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 18, 0)
	return __inet6_lookup_established(net, saddr, sport, daddr, hnum,
					  dif, sdif);
#else
	return __inet6_lookup_established(net,
					  net->ipv4.tcp_death_row.hashinfo,
					  saddr, sport, daddr, hnum, dif, sdif);
#endif
}
#endif

/*
 * The owner uid of a socket.  sock_i_uid() took sk_callback_lock around
 * the read; it was removed in 6.17 (and in 6.16.y) once sk_uid became a
 * READ_ONCE()/WRITE_ONCE() field, so a version check cannot tell whether
 * it exists.  A single 32-bit read needs no lock on any kernel: a reader
 * racing with a change of owner sees the old or the new uid either way.
 */
static inline kuid_t visock_sk_uid(const struct sock *sk)
{
	return READ_ONCE(sk->sk_uid);
}

/*
 * Since 6.17 a workqueue says whether it is per-CPU (WQ_PERCPU) or
 * unbound, and 7.x warns at alloc_workqueue() about one that says
 * neither.  Before, per-CPU was what no flag meant.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 17, 0)
#define VISOCK_WQ_PERCPU	WQ_PERCPU
#else
#define VISOCK_WQ_PERCPU	0
#endif

/*
 * HKDF (RFC 5869) over an HMAC shash is part of the crypto API from 6.14
 * on (<crypto/hkdf.h>, CONFIG_CRYPTO_HKDF, selected by its users): there
 * visock_kdf.c calls it.  Kernels without it (6.1, 6.12, and kernels
 * built without a user of it, such as Debian's 7.x) get visock_kdf.c's
 * own extract and expand steps over the same "hmac(sha256)" shash.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 14, 0) && \
	IS_REACHABLE(CONFIG_CRYPTO_HKDF)
#include <crypto/hkdf.h>
#define VISOCK_HAVE_CRYPTO_HKDF	1
#else
#define VISOCK_HAVE_CRYPTO_HKDF	0
#endif

#endif /* _NET_VISOCK_COMPAT_H */
