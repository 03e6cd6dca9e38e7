/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: ring memory charged to the connection's socket (visock_mem.c).
 */
#ifndef _NET_VISOCK_MEM_H
#define _NET_VISOCK_MEM_H

#include <linux/atomic.h>
#include <linux/percpu.h>
#include <linux/types.h>

struct mem_cgroup;
struct sock;

extern atomic_long_t visock_memory_allocated;
DECLARE_PER_CPU(int, visock_memory_per_cpu_fw_alloc);
extern long visock_sysctl_mem[3];

/*
 * The memory accounting fields of every visock struct proto: rings a
 * connection holds count in the socket layer's per-protocol total
 * (/proc/net/protocols) and in the socket's memory cgroup.
 */
#define VISOCK_MEM_PROTO_FIELDS						\
	.memory_allocated	= &visock_memory_allocated,		\
	.per_cpu_fw_alloc	= &visock_memory_per_cpu_fw_alloc,	\
	.sysctl_mem		= visock_sysctl_mem

int visock_mem_charge(struct sock *sk, u32 size, u32 *charged);
void visock_mem_uncharge(struct sock *sk, u32 *charged);
void visock_mem_sk_inherit(struct sock *sk, const struct sock *lsk);
void *visock_mem_kzalloc(struct sock *sk, size_t size);
struct mem_cgroup *visock_mem_scope_enter(const struct sock *sk);
void visock_mem_scope_leave(struct mem_cgroup *old);

#endif /* _NET_VISOCK_MEM_H */
