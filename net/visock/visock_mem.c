// SPDX-License-Identifier: GPL-2.0
/*
 * visock: ring memory charged to the connection's socket.
 *
 * A connection's receive ring and send buffer come from its QP's pool
 * (visock_lgr.c) and go back to it: one ring serves many connections,
 * of different users, one after the other, and the pool and the QP's
 * queues count only against the namespace's net.visock.lgr_mem_max_mb.
 * Memory is therefore charged per use, not per allocation: when a
 * connection takes a ring (new or from the pool) its page-rounded size
 * is charged to the connection's visock socket through the socket
 * layer's memory accounting (__sk_mem_schedule()): to the socket's
 * memory cgroup (sk->sk_memcg, "sock" in memory.stat), as TCP's buffers
 * are, and to the per-protocol total of /proc/net/protocols.  The
 * socket's cgroup, not the current task's: a server's rings are taken
 * by its handshake work on visock_wq.  When the connection gives its
 * rings back (visock_vc_destroy(), on every path: close, failover,
 * reset, fallback, device removal, namespace exit) the whole charge is
 * returned, once.  A receive ring that lingers after its connection
 * until the peer is quiet is the QP's from then on, like a pooled one.
 *
 * The charge is the socket's forward allocation (sk_forward_alloc),
 * which nothing else touches on a visock socket: its bytes are in its
 * rings or in its internal TCP socket, which has accounting of its own.
 * Its owner's rules serialise the calls here (one vc per socket, created,
 * connected and destroyed by the socket's owner).
 *
 * Per-connection objects that are neither pooled nor outlive the
 * connection (its data path state, its keys, the records and staging
 * buffers of a transform) are allocated with __GFP_ACCOUNT in the same
 * cgroup: between visock_mem_scope_enter() and visock_mem_scope_leave(),
 * or with visock_mem_kzalloc() for a single object.  They count as
 * kernel memory of the cgroup ("kernel" and "slab" in memory.stat).
 *
 * The protocol total has no limit (visock_sysctl_mem): the namespace's
 * budget and the memory cgroup are the limits.  A charge the cgroup
 * refuses (it is at memory.max and reclaim did not make room) fails the
 * connection's RDMA setup with -ENOMEM: it falls back to TCP with
 * VISOCK_FB_NOMEM.
 */
#include <linux/cgroup.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <net/sock.h>

#include "visock_mem.h"

atomic_long_t visock_memory_allocated;
DEFINE_PER_CPU(int, visock_memory_per_cpu_fw_alloc);
/* In pages: no pressure, no hard limit of the protocol's own. */
long visock_sysctl_mem[3] = { LONG_MAX, LONG_MAX, LONG_MAX };

/**
 * visock_mem_charge() - charge a ring a connection takes to its socket
 * @sk: the connection's visock socket, or NULL (nothing is charged)
 * @size: ring size in bytes
 * @charged: the connection's charge so far; @size rounded up to pages
 *	is added on success
 *
 * Charged to @sk's memory cgroup (if it has one) whatever the current
 * task is.  The charge may reclaim in that cgroup (process context, as
 * TCP's own charges from a socket call).  As SK_MEM_RECV: a refused
 * charge is never forced.
 *
 * Context: process context, may sleep; by the owner of @sk's vc.
 * Return: 0, or -ENOMEM if the memory cgroup refused the charge.
 */
int visock_mem_charge(struct sock *sk, u32 size, u32 *charged)
{
	int amt = PAGE_ALIGN(size);

	might_sleep();
	if (!sk)
		return 0;
	if (!__sk_mem_schedule(sk, amt, SK_MEM_RECV))
		return -ENOMEM;
	*charged += amt;
	return 0;
}

/**
 * visock_mem_uncharge() - return a connection's whole charge
 * @sk: the socket the charge was made to, or NULL
 * @charged: what visock_mem_charge() added up; set to 0
 *
 * Context: process context; by the owner of @sk's vc.
 */
void visock_mem_uncharge(struct sock *sk, u32 *charged)
{
	if (sk && *charged)
		__sk_mem_reclaim(sk, *charged);
	*charged = 0;
}

/**
 * visock_mem_sk_inherit() - an accepted child's memory cgroup
 * @sk: the child, fresh from sk_alloc()
 * @lsk: its listener
 *
 * A child is allocated and takes its rings in visock_wq's workers,
 * before accept(2): it is charged to the memory cgroup of its listener
 * (the one the listening socket was created in), not to the worker's.
 * The reference is dropped with the socket, by the socket layer.
 *
 * Context: process context; @lsk is held.
 */
void visock_mem_sk_inherit(struct sock *sk, const struct sock *lsk)
{
#ifdef CONFIG_MEMCG
	struct mem_cgroup *memcg = lsk->sk_memcg;

	if (sk->sk_memcg == memcg)
		return;
	/* The listener holds a reference: a plain get is enough. */
	if (memcg)
		css_get(&memcg->css);
	if (sk->sk_memcg)
		css_put(&sk->sk_memcg->css);
	sk->sk_memcg = memcg;
#endif
}

/**
 * visock_mem_kzalloc() - a zeroed object charged to a socket's cgroup
 * @sk: the socket the object belongs to
 * @size: its size in bytes
 *
 * For a connection's own objects, neither pooled nor outliving it:
 * charged (__GFP_ACCOUNT) to @sk's memory cgroup, not to the current
 * task's (a worker's, on the server), or to the current task's if @sk
 * has none.
 *
 * Context: process context, may sleep.
 * Return: the object (kfree() it), or NULL.
 */
void *visock_mem_kzalloc(struct sock *sk, size_t size)
{
	struct mem_cgroup *old;
	void *p;

	old = visock_mem_scope_enter(sk);
	p = kzalloc(size, GFP_KERNEL_ACCOUNT);
	visock_mem_scope_leave(old);
	return p;
}

/**
 * visock_mem_scope_enter() - charge allocations to a socket's cgroup
 * @sk: the socket the memory is for
 *
 * Until visock_mem_scope_leave(), allocations of the current task with
 * __GFP_ACCOUNT (GFP_KERNEL_ACCOUNT) are charged to @sk's memory cgroup,
 * not to the task's: on the server the task is a worker of visock_wq.
 * If @sk has no cgroup (none but the root one, or socket accounting
 * off) they are charged as without the scope.  Allocations without
 * __GFP_ACCOUNT are not charged either way.  Scopes nest.
 *
 * Context: process context; the same task leaves the scope before it
 * returns to user space or to its worker's loop.
 * Return: the scope to restore; pass it to visock_mem_scope_leave().
 */
struct mem_cgroup *visock_mem_scope_enter(const struct sock *sk)
{
#ifdef CONFIG_MEMCG
	return set_active_memcg(sk->sk_memcg);
#else
	return NULL;
#endif
}

/**
 * visock_mem_scope_leave() - end a scope of visock_mem_scope_enter()
 * @old: what visock_mem_scope_enter() returned
 *
 * Context: process context, the task that entered the scope.
 */
void visock_mem_scope_leave(struct mem_cgroup *old)
{
	set_active_memcg(old);
}
