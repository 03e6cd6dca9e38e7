/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * visock: TCP-compatible stream sockets carried over RDMA.
 *
 * Socket diagnostics (sock_diag) of the AF_VISOCK family.
 */
#ifndef _UAPI_LINUX_VISOCK_DIAG_H
#define _UAPI_LINUX_VISOCK_DIAG_H

#include <linux/types.h>

/*
 * Socket diagnostics: NETLINK_SOCK_DIAG, nlmsg_type SOCK_DIAG_BY_FAMILY,
 * NLM_F_DUMP, with a struct visock_diag_req whose sdiag_family is
 * AF_VISOCK.  The reply is one struct visock_diag_msg per socket of the
 * requester's network namespace, followed by VISOCK_DIAG_* attributes.
 */

/**
 * struct visock_diag_req - request of a visock socket dump
 * @sdiag_family: AF_VISOCK
 * @sdiag_protocol: 0
 * @vdiag_pad: 0
 * @vdiag_states: bit mask of socket states (1 << TCP_ESTABLISHED, ...);
 *	0 selects every state
 * @vdiag_modes: bit mask of modes (1 << VISOCK_MODE_RDMA, ...); 0 selects
 *	every mode
 * @vdiag_ino: only the socket with this inode number; 0 selects all
 * @vdiag_show: VISOCK_SHOW_* bits: attributes wanted in the reply
 */
struct visock_diag_req {
	__u8	sdiag_family;
	__u8	sdiag_protocol;
	__u16	vdiag_pad;
	__u32	vdiag_states;
	__u32	vdiag_modes;
	__u32	vdiag_ino;
	__u32	vdiag_show;
};

#define VISOCK_SHOW_INFO	0x1	/* VISOCK_DIAG_INFO */
#define VISOCK_SHOW_RING	0x2	/* VISOCK_DIAG_RING */
#define VISOCK_SHOW_LINK	0x4	/* VISOCK_DIAG_LINK */

/**
 * struct visock_diag_msg - one visock socket in a dump
 * @vdiag_family: AF_VISOCK
 * @vdiag_state: state of the visock socket (TCP_* values)
 * @vdiag_mode: enum visock_mode
 * @vdiag_fallback_reason: enum visock_fallback_reason
 * @vdiag_ip_family: AF_INET or AF_INET6, the family of the TCP connection
 * @vdiag_tcp_state: state of the internal TCP socket, 0 if it is gone
 * @vdiag_pad: 0
 * @vdiag_sport: local port, network byte order
 * @vdiag_dport: remote port, network byte order
 * @vdiag_src: local address (IPv4 in the first word)
 * @vdiag_dst: remote address (IPv4 in the first word)
 * @vdiag_uid: owner of the socket, in the requester's user namespace
 * @vdiag_ino: inode number of the socket, 0 if it has no file
 * @vdiag_id: visock socket number, unique while the module is loaded
 */
struct visock_diag_msg {
	__u8	vdiag_family;
	__u8	vdiag_state;
	__u8	vdiag_mode;
	__u8	vdiag_fallback_reason;
	__u8	vdiag_ip_family;
	__u8	vdiag_tcp_state;
	__u16	vdiag_pad;
	__be16	vdiag_sport;
	__be16	vdiag_dport;
	__be32	vdiag_src[4];
	__be32	vdiag_dst[4];
	__u32	vdiag_uid;
	__u32	vdiag_ino;
	__u64	vdiag_id;
};

/* Attributes after struct visock_diag_msg. */
enum {
	VISOCK_DIAG_NONE,
	VISOCK_DIAG_INFO,	/* struct visock_info, as VISOCK_INFO */
	VISOCK_DIAG_RING,	/* struct visock_diag_ring (RDMA mode) */
	VISOCK_DIAG_LINK,	/* struct visock_diag_link (with a link) */
	/*
	 * flag: another task held the socket's lock (a call in progress);
	 * only struct visock_diag_msg is filled in, no other attribute
	 */
	VISOCK_DIAG_BUSY,
	__VISOCK_DIAG_MAX,
};

#define VISOCK_DIAG_MAX	(__VISOCK_DIAG_MAX - 1)

/**
 * struct visock_diag_ring - fill levels of a connection's rings
 * @vdr_rx_size: size of our receive ring, bytes
 * @vdr_rx_used: bytes the peer wrote that the application has not read
 * @vdr_tx_size: size of the peer's ring (and of our send buffer)
 * @vdr_tx_used: bytes written by the application that the peer has not
 *	consumed yet (in flight, in the peer's ring or still in our buffer)
 * @vdr_tx_unsent: part of @vdr_tx_used not posted to the peer yet
 * @vdr_credits: receive requests of the peer we may still consume
 * @vdr_sq_free: free send queue slots
 * @vdr_state: enum visock_rdma_state
 */
struct visock_diag_ring {
	__u32	vdr_rx_size;
	__u32	vdr_rx_used;
	__u32	vdr_tx_size;
	__u32	vdr_tx_used;
	__u32	vdr_tx_unsent;
	__u32	vdr_credits;
	__u32	vdr_sq_free;
	__u32	vdr_state;
};

#define VISOCK_DIAG_DEVNAME_LEN	64

/**
 * struct visock_diag_link - the RDMA link (queue pair) of a connection
 * @vdl_dev: RDMA device name, empty once the device is gone
 * @vdl_port: port of the device
 * @vdl_qpn: local queue pair number
 * @vdl_peer_qpn: the peer's queue pair number
 * @vdl_state: enum visock_link_state
 * @vdl_gid: local GID
 * @vdl_reg_bytes: memory registered for the link (rings, buffers), bytes
 * @vdl_wr_posted: work requests posted on the link
 * @vdl_wc_ok: successful work completions
 * @vdl_wc_err: failed or flushed work completions
 * @vdl_peer_gid: the peer's GID, zero until the link is connected
 *	(appended; older modules send the structure without it)
 * @vdl_queue_bytes: estimated bytes of the queue pair's work and
 *	completion queues and cursor slots, charged to the namespace's
 *	memory limit (appended, like the next two)
 * @vdl_max_conns: connections the queue pair takes, fixed when it was
 *	created
 * @vdl_conns: connections attached to it, lingering ones included
 */
struct visock_diag_link {
	char	vdl_dev[VISOCK_DIAG_DEVNAME_LEN];
	__u32	vdl_port;
	__u32	vdl_qpn;
	__u32	vdl_peer_qpn;
	__u32	vdl_state;
	__u8	vdl_gid[16];
	__u64	vdl_reg_bytes;
	__u64	vdl_wr_posted;
	__u64	vdl_wc_ok;
	__u64	vdl_wc_err;
	__u8	vdl_peer_gid[16];
	__u64	vdl_queue_bytes;
	__u32	vdl_max_conns;
	__u32	vdl_conns;
};

/**
 * enum visock_link_state - state of an RDMA link (queue pair)
 * @VISOCK_LINK_STATE_NEW: being created
 * @VISOCK_LINK_STATE_INIT: QP created, not connected
 * @VISOCK_LINK_STATE_UP: QP connected (RTS)
 * @VISOCK_LINK_STATE_FAILED: connecting failed
 * @VISOCK_LINK_STATE_DEAD: its device went away
 *
 * Also the value of the generic netlink attribute VISOCK_LINK_A_STATE.
 */
enum visock_link_state {
	VISOCK_LINK_STATE_NEW = 0,
	VISOCK_LINK_STATE_INIT = 1,
	VISOCK_LINK_STATE_UP = 2,
	VISOCK_LINK_STATE_FAILED = 3,
	VISOCK_LINK_STATE_DEAD = 4,
};

#endif /* _UAPI_LINUX_VISOCK_DIAG_H */
