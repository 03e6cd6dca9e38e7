// SPDX-License-Identifier: GPL-2.0
/*
 * visock_redirect: turn selected tasks' TCP sockets into visock sockets.
 *
 * An fmod_ret program on update_socket_protocol() (net/socket.c, Linux
 * 6.6+), which __sys_socket() calls to let BPF choose the protocol of a
 * new socket.  For socket(AF_INET or AF_INET6, SOCK_STREAM, 0 or
 * IPPROTO_TCP) made by a selected task it returns the module's
 * IPPROTO_VISOCK, so the socket is created by visock's inet protosw.
 *
 * Selection, read from maps that visock_redirect(8) fills:
 *   1. an exclusion matching the task's cgroup (or an ancestor), comm or
 *      uid leaves the socket alone;
 *   2. otherwise a redirect entry matching any of them redirects it;
 *   3. otherwise nothing happens.
 * For cgroups the entry of the nearest ancestor (or the cgroup itself)
 * counts.  Only the prototype of update_socket_protocol() is needed, so
 * there is no vmlinux.h and no CO-RE relocation.
 */
#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "visock_redirect.h"

#define AF_INET		2
#define AF_INET6	10
#define SOCK_STREAM	1
#define SOCK_TYPE_MASK	0xf	/* type carries SOCK_NONBLOCK/CLOEXEC */
#define IPPROTO_TCP	6

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vr_config);
} vr_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VR_MAX_ENTRIES);
	__type(key, __u64);
	__type(value, __u8);
} vr_cgroups SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VR_MAX_ENTRIES);
	__type(key, char[VR_COMM_LEN]);
	__type(value, __u8);
} vr_comms SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VR_MAX_ENTRIES);
	__type(key, __u32);
	__type(value, __u8);
} vr_uids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, VR_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} vr_stats SEC(".maps");

static void vr_count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&vr_stats, &idx);

	if (v)
		*v += 1;
}

/* Action of the nearest listed ancestor of the current cgroup, or 0. */
static __u8 vr_cgroup_action(void)
{
	__u8 act = 0, *a;
	__u64 id;
	int level;

	for (level = 0; level < VR_CGROUP_LEVELS; level++) {
		id = bpf_get_current_ancestor_cgroup_id(level);
		if (!id)
			break;
		a = bpf_map_lookup_elem(&vr_cgroups, &id);
		if (a)
			act = *a;
	}
	return act;
}

SEC("fmod_ret/update_socket_protocol")
int BPF_PROG(visock_redirect, int family, int type, int protocol)
{
	char comm[VR_COMM_LEN] = {};
	struct vr_config *cfg;
	__u8 acts[3], *a;
	__u32 key = 0, uid;
	bool redirect = false;
	int i;

	if ((type & SOCK_TYPE_MASK) != SOCK_STREAM ||
	    (protocol != 0 && protocol != IPPROTO_TCP))
		return 0;
	cfg = bpf_map_lookup_elem(&vr_config, &key);
	if (!cfg || !cfg->protocol)
		return 0;
	if (!((family == AF_INET && (cfg->families & VR_FAMILY_INET)) ||
	      (family == AF_INET6 && (cfg->families & VR_FAMILY_INET6))))
		return 0;
	vr_count(VR_STAT_SEEN);

	acts[0] = vr_cgroup_action();
	bpf_get_current_comm(comm, sizeof(comm));
	a = bpf_map_lookup_elem(&vr_comms, comm);
	acts[1] = a ? *a : 0;
	uid = (__u32)bpf_get_current_uid_gid();
	a = bpf_map_lookup_elem(&vr_uids, &uid);
	acts[2] = a ? *a : 0;

	for (i = 0; i < 3; i++) {
		if (acts[i] == VR_ACT_EXCLUDE) {
			vr_count(VR_STAT_EXCLUDED);
			return 0;
		}
		if (acts[i] == VR_ACT_REDIRECT)
			redirect = true;
	}
	if (!redirect)
		return 0;
	vr_count(VR_STAT_REDIRECTED);
	/* Non-zero: update_socket_protocol() returns this instead. */
	return cfg->protocol;
}

char LICENSE[] SEC("license") = "GPL";
