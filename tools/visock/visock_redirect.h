/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the BPF program (visock_redirect.bpf.c) and its loader
 * (visock_redirect.c): map layouts and values.
 */
#ifndef VISOCK_REDIRECT_H
#define VISOCK_REDIRECT_H

#define VR_COMM_LEN		16	/* TASK_COMM_LEN */
#define VR_MAX_ENTRIES		1024	/* per selector map */
#define VR_CGROUP_LEVELS	32	/* cgroup depth searched */

/* Values of the selector maps (cgroup id, comm, uid -> action). */
#define VR_ACT_REDIRECT		1
#define VR_ACT_EXCLUDE		2

/* vr_config.families */
#define VR_FAMILY_INET		0x1
#define VR_FAMILY_INET6		0x2

/* The one entry of the config map. */
struct vr_config {
	__u32 protocol;		/* IPPROTO_VISOCK of the loaded module */
	__u32 families;		/* VR_FAMILY_*: protosw registered for */
};

/* Indices of the per-CPU stats map. */
enum {
	VR_STAT_SEEN,		/* TCP stream socket() calls looked at */
	VR_STAT_REDIRECTED,	/* ... turned into visock */
	VR_STAT_EXCLUDED,	/* ... left alone because of an exclusion */
	VR_STAT_MAX,
};

#endif /* VISOCK_REDIRECT_H */
