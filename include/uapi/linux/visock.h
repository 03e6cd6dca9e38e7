/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * visock: TCP-compatible stream sockets carried over RDMA.
 *
 * User-visible constants of the AF_VISOCK socket family.
 */
#ifndef _UAPI_LINUX_VISOCK_H
#define _UAPI_LINUX_VISOCK_H

#include <linux/types.h>

/*
 * Address family number.
 *
 * sock_register() only accepts families below AF_MAX (46 from 6.1 to
 * current mainline), so a private family must reuse a number that the
 * kernel defines but never implements.  18 is AF_ASH: reserved since
 * Linux 2.2, and no kernel (in-tree, from 6.1 to mainline) has ever
 * registered a socket family for it.  The module checks at load time
 * that nothing else took the slot and refuses to load if it did.
 */
#define AF_VISOCK		18
#define PF_VISOCK		AF_VISOCK

/*
 * Protocol argument of socket(AF_VISOCK, SOCK_STREAM, protocol): selects
 * the address family of the underlying TCP connection, i.e. whether
 * bind()/connect() take a struct sockaddr_in or a struct sockaddr_in6.
 */
#define VISOCKPROTO_TCP4	0	/* IPv4, struct sockaddr_in */
#define VISOCKPROTO_TCP6	1	/* IPv6, struct sockaddr_in6 */
#define VISOCKPROTO_MAX		2

/*
 * Protocol argument of socket(AF_INET or AF_INET6, SOCK_STREAM, protocol)
 * that creates a visock socket in the inet family itself: the same socket
 * as AF_VISOCK with VISOCKPROTO_TCP4/6, but getsockopt(SO_DOMAIN) reports
 * AF_INET/AF_INET6 and SO_PROTOCOL reports IPPROTO_VISOCK.  This is the
 * number visock_redirect(8) rewrites TCP socket() calls to.
 *
 * inet_create() refuses protocols from IPPROTO_MAX (263 in 6.1 to 6.12)
 * on.  Numbers above 255 never appear on the wire, so only in-kernel
 * socket protocols use them: 256 is IPPROTO_SMC, 262 IPPROTO_MPTCP, and
 * 257 and 261 have been proposed upstream.  259 is the unclaimed number
 * furthest from all of them (either end of the range growing by one more
 * number reaches it last).  Not reserved: the module parameter
 * "inet_proto" picks another one (or 0: no inet sockets), and the module
 * skips the inet registration if a SOCK_STREAM protocol already uses it.
 */
#define IPPROTO_VISOCK		259

/*
 * Socket option level for getsockopt()/setsockopt().  Kernel SOL_*
 * levels are allocated sequentially from 256 (SOL_VSOCK is 287 in 6.12),
 * so a private level far from that range cannot collide with a future
 * in-tree one.
 */
#define SOL_VISOCK		0x5653

/*
 * getsockopt(SOL_VISOCK, VISOCK_MODE): __u32, one of enum visock_mode.
 * What the connection currently runs on.
 */
#define VISOCK_MODE		1
/*
 * getsockopt(SOL_VISOCK, VISOCK_FALLBACK_REASON): __u32, one of
 * enum visock_fallback_reason; VISOCK_FB_NONE while not fallen back.
 */
#define VISOCK_FALLBACK_REASON	2

/*
 * getsockopt(SOL_VISOCK, VISOCK_INFO): struct visock_info.  The kernel
 * copies min(optlen, sizeof(struct visock_info)) bytes and sets optlen;
 * fields are only ever appended.
 */
#define VISOCK_INFO		3
/*
 * setsockopt/getsockopt(SOL_VISOCK, VISOCK_REUSEPORT): int, 0 or 1.  The
 * same as SO_REUSEPORT, for kernels before 6.7, where the socket layer
 * refuses SO_REUSEPORT on sockets that are not AF_INET/AF_INET6 without
 * asking the family.  getsockopt(SOL_SOCKET, SO_REUSEPORT) reads what
 * this sets.  visock_run(8) uses it when SO_REUSEPORT fails.
 */
#define VISOCK_REUSEPORT	4

/**
 * struct visock_info - state of one visock connection
 * @vi_mode: enum visock_mode
 * @vi_fallback_reason: enum visock_fallback_reason
 * @vi_version: negotiated handshake protocol version, 0 if none
 * @vi_local_qpn: number of the local RDMA queue pair, 0 if none
 * @vi_peer_qpn: number of the peer's queue pair, 0 if none
 * @vi_local_token: connection token chosen locally
 * @vi_peer_token: connection token chosen by the peer
 * @vi_rbuf_size: size of the local receive ring, bytes
 * @vi_peer_rbuf_size: size of the peer's receive ring, bytes
 * @vi_flags: VISOCK_INFO_F_* bits
 *
 * Data path counters (RDMA mode; appended in the data path version):
 * @vi_rdma_bytes_sent: payload bytes written to the peer with RDMA WRITE
 * @vi_rdma_bytes_rcvd: payload bytes the peer wrote into our ring
 * @vi_rdma_wr_posted: send work requests posted (WRITEs, cursor messages)
 * @vi_rdma_wc: work completions handled (send and receive)
 * @vi_cdc_sent: cursor messages sent
 * @vi_cdc_rcvd: cursor messages received
 * @vi_tx_waits: times a sender found the peer's ring full
 * @vi_tcp_bytes_sent: payload bytes sent on the internal TCP connection
 *	(the handshake only, once in RDMA mode)
 * @vi_tcp_bytes_rcvd: payload bytes received on it
 * @vi_rdma_credits: receive requests of the peer we may still consume
 * @vi_rdma_state: 0 live, 1 failed, 2 stopped, 3 failing over to TCP,
 *	4 failed over: the stream continues over TCP (while in RDMA mode)
 */
struct visock_info {
	__u32 vi_mode;
	__u32 vi_fallback_reason;
	__u32 vi_version;
	__u32 vi_local_qpn;
	__u32 vi_peer_qpn;
	__u32 vi_local_token;
	__u32 vi_peer_token;
	__u32 vi_rbuf_size;
	__u32 vi_peer_rbuf_size;
	__u32 vi_flags;
	__u64 vi_rdma_bytes_sent;
	__u64 vi_rdma_bytes_rcvd;
	__u64 vi_rdma_wr_posted;
	__u64 vi_rdma_wc;
	__u64 vi_cdc_sent;
	__u64 vi_cdc_rcvd;
	__u64 vi_tx_waits;
	__u64 vi_tcp_bytes_sent;
	__u64 vi_tcp_bytes_rcvd;
	__u32 vi_rdma_credits;
	__u32 vi_rdma_state;
};

#define VISOCK_INFO_F_SYN_OPT	0x1	/* our SYN / SYN-ACK announced visock */
#define VISOCK_INFO_F_PEER_OPT	0x2	/* the peer's announced visock */
#define VISOCK_INFO_F_LINK_UP	0x4	/* RDMA queue pair is connected (RTS) */
#define VISOCK_INFO_F_FAILOVER	0x8	/* the RDMA link failed: now over TCP */
#define VISOCK_INFO_F_LAZY	0x10	/* both ends agreed on a lazy start */

/**
 * enum visock_mode - transport a visock connection is using
 * @VISOCK_MODE_INIT: not connected yet
 * @VISOCK_MODE_HANDSHAKE: TCP connected, RDMA negotiation running
 * @VISOCK_MODE_RDMA: byte stream carried over RDMA
 * @VISOCK_MODE_TCP: fell back to the internal TCP connection
 */
enum visock_mode {
	VISOCK_MODE_INIT = 0,
	VISOCK_MODE_HANDSHAKE = 1,
	VISOCK_MODE_RDMA = 2,
	VISOCK_MODE_TCP = 3,
};

/**
 * enum visock_fallback_reason - why a connection runs over plain TCP
 * @VISOCK_FB_NONE: not fallen back
 * @VISOCK_FB_DISABLED: net.visock.enable=0 locally
 * @VISOCK_FB_PEER_NO_VISOCK: the peer's SYN/SYN-ACK had no option
 * @VISOCK_FB_NO_DEVICE: no RDMA device for the route
 * @VISOCK_FB_PEER_NO_DEVICE: the peer declined: no RDMA device
 * @VISOCK_FB_VERSION: no common protocol version
 * @VISOCK_FB_BAD_MSG: malformed handshake message
 * @VISOCK_FB_TIMEOUT: handshake timed out
 * @VISOCK_FB_NOMEM: out of memory locally
 * @VISOCK_FB_PEER_DECLINE: the peer declined, no specific reason
 * @VISOCK_FB_QP_SETUP: creating or connecting the QP failed
 * @VISOCK_FB_BUF_EXHAUSTED: no receive ring available
 * @VISOCK_FB_DEVICE_GONE: RDMA device removed
 * @VISOCK_FB_SYNCOOKIE: SYN cookies: option not echoed
 * @VISOCK_FB_IO: TCP error during the handshake
 * @VISOCK_FB_POLICY: the destination policy said plain TCP
 * @VISOCK_FB_LINK_BUSY: link group full, or its QPs not up within half
 *	the handshake timeout
 * @VISOCK_FB_LINK_GONE: the peer no longer had the shared QP the client
 *	named
 * @VISOCK_FB_QP_LIMIT: the peer host's or the namespace's queue pair cap
 *	is reached
 * @__VISOCK_FB_MAX: one above the highest reason (VISOCK_FB_MAX)
 *
 * Values are stable ABI: they appear in getsockopt(), statistics and
 * handshake DECLINE messages.  New reasons are only ever appended.
 */
enum visock_fallback_reason {
	VISOCK_FB_NONE = 0,
	VISOCK_FB_DISABLED = 1,
	VISOCK_FB_PEER_NO_VISOCK = 2,
	VISOCK_FB_NO_DEVICE = 3,
	VISOCK_FB_PEER_NO_DEVICE = 4,
	VISOCK_FB_VERSION = 5,
	VISOCK_FB_BAD_MSG = 6,
	VISOCK_FB_TIMEOUT = 7,
	VISOCK_FB_NOMEM = 8,
	VISOCK_FB_PEER_DECLINE = 9,
	VISOCK_FB_QP_SETUP = 10,
	VISOCK_FB_BUF_EXHAUSTED = 11,
	VISOCK_FB_DEVICE_GONE = 12,
	VISOCK_FB_SYNCOOKIE = 13,
	VISOCK_FB_IO = 14,
	VISOCK_FB_POLICY = 15,
	VISOCK_FB_LINK_BUSY = 16,
	VISOCK_FB_LINK_GONE = 17,
	VISOCK_FB_QP_LIMIT = 18,
	__VISOCK_FB_MAX,
};

#define VISOCK_FB_MAX	(__VISOCK_FB_MAX - 1)

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
 * @vdr_state: 0 live, 1 failed, 2 stopped
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
 * @vdl_state: VISOCK_LINK_STATE_*
 * @vdl_gid: local GID
 * @vdl_reg_bytes: memory registered for the link (rings, buffers), bytes
 * @vdl_wr_posted: work requests posted on the link
 * @vdl_wc_ok: successful work completions
 * @vdl_wc_err: failed or flushed work completions
 * @vdl_peer_gid: the peer's GID, zero until the link is connected
 *	(appended; older modules send the structure without it)
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
};

#define VISOCK_LINK_STATE_NEW		0	/* being created */
#define VISOCK_LINK_STATE_INIT		1	/* QP created, not connected */
#define VISOCK_LINK_STATE_UP		2	/* QP connected (RTS) */
#define VISOCK_LINK_STATE_FAILED	3	/* connecting failed */
#define VISOCK_LINK_STATE_DEAD		4	/* its device went away */

/*
 * Generic netlink family VISOCK_GENL_NAME: statistics, devices, the
 * per-namespace switch and the destination policy.  Every command acts on
 * the requester's network namespace.  RESET_STATS, SET, POLICY_ADD,
 * POLICY_DEL and POLICY_FLUSH need CAP_NET_ADMIN in the user namespace
 * owning the network namespace.
 */
#define VISOCK_GENL_NAME	"visock"
#define VISOCK_GENL_VERSION	1

enum {
	VISOCK_CMD_UNSPEC,
	VISOCK_CMD_GET_STATS,	/* doit: VISOCK_A_STATS and VISOCK_A_ENABLE */
	VISOCK_CMD_RESET_STATS,	/* doit: counters start again from 0 */
	VISOCK_CMD_GET_DEVICES,	/* dumpit: one VISOCK_A_DEV per message */
	VISOCK_CMD_SET,		/* doit: VISOCK_A_ENABLE, VISOCK_A_POLICY_DEFAULT */
	VISOCK_CMD_GET_LINKS,	/* dumpit: one VISOCK_A_LINK per message */
	/* notification: VISOCK_A_EVENT, to VISOCK_GENL_MCGRP_EVENTS */
	VISOCK_CMD_EVENT,
	VISOCK_CMD_POLICY_ADD,	/* doit: VISOCK_A_RULE */
	VISOCK_CMD_POLICY_DEL,	/* doit: VISOCK_A_RULE (its INDEX, or equal) */
	VISOCK_CMD_POLICY_GET,	/* dumpit: one VISOCK_A_RULE per message */
	VISOCK_CMD_POLICY_FLUSH, /* doit: remove every rule */
	__VISOCK_CMD_MAX,
};

#define VISOCK_CMD_MAX	(__VISOCK_CMD_MAX - 1)

enum {
	VISOCK_A_UNSPEC,
	VISOCK_A_ENABLE,	/* u8: net.visock.enable */
	VISOCK_A_STATS,		/* nest: VISOCK_STATS_A_* */
	VISOCK_A_DEV,		/* nest: VISOCK_DEV_A_* */
	VISOCK_A_LINK,		/* nest: VISOCK_LINK_A_* */
	VISOCK_A_EVENT,		/* nest: VISOCK_EVENT_A_* */
	VISOCK_A_POLICY_DEFAULT, /* u8: VISOCK_POLICY_*, when no rule matches */
	VISOCK_A_RULE,		/* nest: VISOCK_RULE_A_* */
	__VISOCK_A_MAX,
};

#define VISOCK_A_MAX	(__VISOCK_A_MAX - 1)

/*
 * Counters (u64) count events since the namespace was created or
 * VISOCK_CMD_RESET_STATS; gauges (marked) are current values.
 */
enum {
	VISOCK_STATS_A_UNSPEC,
	VISOCK_STATS_A_PAD,
	VISOCK_STATS_A_CONNS_RDMA,	/* connections that switched to RDMA */
	VISOCK_STATS_A_CONNS_FALLBACK,	/* connections that fell back, total */
	VISOCK_STATS_A_FALLBACK,	/* nest: u64 per reason, type = reason */
	VISOCK_STATS_A_HS_STARTED,	/* handshakes started */
	VISOCK_STATS_A_HS_DONE,		/* handshakes that set up RDMA */
	VISOCK_STATS_A_HS_ABORTED,	/* handshakes that ended the connection */
	VISOCK_STATS_A_RDMA_BYTES_SENT,
	VISOCK_STATS_A_RDMA_BYTES_RCVD,
	VISOCK_STATS_A_TCP_BYTES_SENT,	/* payload of connections in TCP mode */
	VISOCK_STATS_A_TCP_BYTES_RCVD,
	VISOCK_STATS_A_WR_POSTED,	/* send work requests posted */
	VISOCK_STATS_A_WC,		/* work completions handled */
	VISOCK_STATS_A_CDC_SENT,	/* cursor messages sent */
	VISOCK_STATS_A_CDC_RCVD,	/* cursor messages received */
	VISOCK_STATS_A_TX_WAITS,	/* writer found the peer's ring full */
	VISOCK_STATS_A_SOCKETS,		/* gauge: visock sockets */
	VISOCK_STATS_A_QPS,		/* gauge: queue pairs (links) */
	VISOCK_STATS_A_REG_BYTES,	/* gauge: registered memory, bytes */
	VISOCK_STATS_A_RDMA_DEVICES,	/* gauge: RDMA devices visock uses */
	VISOCK_STATS_A_FAILOVERS,	/* connections whose link failed: TCP */
	/* gauge: RDMA devices with a RoCEv2 GID on a net device here */
	VISOCK_STATS_A_NS_DEVICES,
	VISOCK_STATS_A_LINKS_UP,	/* gauge: links in state up */
	VISOCK_STATS_A_LGR_CONNS,	/* gauge: connections on shared QPs */
	VISOCK_STATS_A_LGR_QPS_CREATED,	/* QPs created */
	VISOCK_STATS_A_LGR_QPS_DESTROYED, /* QPs destroyed */
	VISOCK_STATS_A_LGR_REUSED,	/* connections that joined a QP */
	VISOCK_STATS_A_LGR_WAITS,	/* waits for a QP being set up */
	VISOCK_STATS_A_LGR_STALE,	/* receives for unknown or stale
					 * tokens, dropped (existing QPs) */
	/* gauge: closed sockets whose teardown is not over */
	VISOCK_STATS_A_SOCKETS_CLOSING,
	/* gauge: closed connections waiting for the peer's last flag */
	VISOCK_STATS_A_LGR_LINGERING,
	VISOCK_STATS_A_LGR_RETIRED,	/* QPs retired, half lingering */
	__VISOCK_STATS_A_MAX,
};

#define VISOCK_STATS_A_MAX	(__VISOCK_STATS_A_MAX - 1)

enum {
	VISOCK_DEV_A_UNSPEC,
	VISOCK_DEV_A_NAME,	/* string: RDMA device name */
	VISOCK_DEV_A_LINKS,	/* u32: links on the device, all namespaces */
	VISOCK_DEV_A_PORT,	/* nest, repeated: VISOCK_PORT_A_* */
	__VISOCK_DEV_A_MAX,
};

#define VISOCK_DEV_A_MAX	(__VISOCK_DEV_A_MAX - 1)

enum {
	VISOCK_PORT_A_UNSPEC,
	VISOCK_PORT_A_NUM,	/* u32 */
	VISOCK_PORT_A_STATE,	/* u8: enum ib_port_state (4: ACTIVE) */
	VISOCK_PORT_A_GID,	/* nest, repeated: VISOCK_GID_A_* */
	__VISOCK_PORT_A_MAX,
};

#define VISOCK_PORT_A_MAX	(__VISOCK_PORT_A_MAX - 1)

/* Only RoCEv2 GIDs whose net device is in the requester's namespace. */
enum {
	VISOCK_GID_A_UNSPEC,
	VISOCK_GID_A_INDEX,	/* u32: GID table index */
	VISOCK_GID_A_GID,	/* binary, 16 bytes */
	VISOCK_GID_A_IFINDEX,	/* u32: net device */
	VISOCK_GID_A_IFNAME,	/* string: net device */
	__VISOCK_GID_A_MAX,
};

#define VISOCK_GID_A_MAX	(__VISOCK_GID_A_MAX - 1)

/*
 * One connection's RDMA link (the shared queue pair it uses) in the
 * requester's namespace, and the socket.  Connections of a link group
 * share QPs: several entries may name the same QP; the counters are the
 * QP's.
 */
enum {
	VISOCK_LINK_A_UNSPEC,
	VISOCK_LINK_A_PAD,
	VISOCK_LINK_A_DEV,		/* string: RDMA device, absent once gone */
	VISOCK_LINK_A_PORT,		/* u32 */
	VISOCK_LINK_A_GID,		/* binary, 16 bytes: local GID */
	VISOCK_LINK_A_PEER_GID,		/* binary, 16 bytes: the peer's GID */
	VISOCK_LINK_A_QPN,		/* u32: local QP number */
	VISOCK_LINK_A_PEER_QPN,		/* u32: the peer's QP number */
	VISOCK_LINK_A_STATE,		/* u8: VISOCK_LINK_STATE_* */
	VISOCK_LINK_A_REG_BYTES,	/* u64: registered memory, bytes */
	VISOCK_LINK_A_WR_POSTED,	/* u64 */
	VISOCK_LINK_A_WC_OK,		/* u64 */
	VISOCK_LINK_A_WC_ERR,		/* u64 */
	VISOCK_LINK_A_SOCK,		/* nest: VISOCK_SOCK_A_*, the owner */
	__VISOCK_LINK_A_MAX,
};

#define VISOCK_LINK_A_MAX	(__VISOCK_LINK_A_MAX - 1)

/* A socket, in link dumps and events. */
enum {
	VISOCK_SOCK_A_UNSPEC,
	VISOCK_SOCK_A_PAD,
	VISOCK_SOCK_A_ID,		/* u64: vdiag_id of struct visock_diag_msg */
	VISOCK_SOCK_A_INO,		/* u32: inode number, 0 without a file */
	VISOCK_SOCK_A_IP_FAMILY,	/* u8: AF_INET or AF_INET6 */
	VISOCK_SOCK_A_SRC,		/* binary, 16 bytes (IPv4: first 4) */
	VISOCK_SOCK_A_DST,		/* binary, 16 bytes (IPv4: first 4) */
	VISOCK_SOCK_A_SPORT,		/* u16, host byte order */
	VISOCK_SOCK_A_DPORT,		/* u16, host byte order */
	__VISOCK_SOCK_A_MAX,
};

#define VISOCK_SOCK_A_MAX	(__VISOCK_SOCK_A_MAX - 1)

/*
 * Notifications: VISOCK_CMD_EVENT messages to the multicast group
 * VISOCK_GENL_MCGRP_EVENTS, sent to the listeners of the namespace the
 * event happened in (device events: of every namespace that may use the
 * device).  Sent with GFP_ATOMIC; a listener whose socket overflows gets
 * ENOBUFS, as with any netlink multicast.
 */
#define VISOCK_GENL_MCGRP_EVENTS	"events"

enum {
	VISOCK_EVENT_NONE,
	VISOCK_EVENT_LINK_UP = 1,	/* a connection switched to RDMA */
	VISOCK_EVENT_LINK_DOWN = 2,	/* a link that was up is released */
	VISOCK_EVENT_FALLBACK = 3,	/* a connection runs over TCP: REASON */
	VISOCK_EVENT_ABORT = 4,		/* RDMA connection reset: ERROR */
	VISOCK_EVENT_DEV_ADD = 5,	/* visock found an RDMA device */
	VISOCK_EVENT_DEV_REMOVE = 6,	/* an RDMA device goes away */
	__VISOCK_EVENT_MAX,
};

enum {
	VISOCK_EVENT_A_UNSPEC,
	VISOCK_EVENT_A_TYPE,		/* u8: VISOCK_EVENT_* */
	VISOCK_EVENT_A_REASON,		/* u8: enum visock_fallback_reason */
	VISOCK_EVENT_A_ERROR,		/* s32: negative errno (ABORT) */
	VISOCK_EVENT_A_DEV,		/* string: RDMA device name */
	/* nest: VISOCK_LINK_A_* without the socket (LINK_UP, LINK_DOWN) */
	VISOCK_EVENT_A_LINK,
	VISOCK_EVENT_A_SOCK,		/* nest: VISOCK_SOCK_A_* */
	__VISOCK_EVENT_A_MAX,
};

#define VISOCK_EVENT_A_MAX	(__VISOCK_EVENT_A_MAX - 1)

/*
 * Destination policy: per network namespace, an ordered list of rules
 * checked when a visock socket connects (connect(2)); the first rule
 * whose address prefix and port range contain the destination decides,
 * VISOCK_A_POLICY_DEFAULT (initially ALLOW) decides when none does.
 * DENY: the connection does not announce visock in its SYN and is plain
 * TCP from the start, fallback reason VISOCK_FB_POLICY.  Accepted
 * connections are never affected.  An IPv4-mapped IPv6 destination
 * (::ffff:a.b.c.d) is matched as the IPv4 address.
 */
#define VISOCK_POLICY_ALLOW	0	/* try visock (the default) */
#define VISOCK_POLICY_DENY	1	/* plain TCP */

/* Most rules a namespace can hold. */
#define VISOCK_POLICY_MAX_RULES	256

/*
 * Attributes of VISOCK_A_RULE.  A rule without address matches every
 * destination of both families; without ports, every port.  Host bits
 * beyond the prefix length must be 0.  VISOCK_RULE_A_INDEX: POLICY_ADD
 * inserts the rule before that position (default: appends it),
 * POLICY_DEL removes the rule there (when the request has no ACTION),
 * POLICY_GET says where each rule is.
 */
enum {
	VISOCK_RULE_A_UNSPEC,
	VISOCK_RULE_A_ACTION,	/* u8: VISOCK_POLICY_*; required to add */
	VISOCK_RULE_A_ADDR4,	/* binary, 4 bytes, network order */
	VISOCK_RULE_A_ADDR6,	/* binary, 16 bytes, network order */
	VISOCK_RULE_A_PREFIXLEN, /* u8: prefix length; default 32 or 128 */
	VISOCK_RULE_A_PORT_MIN,	/* u16: first destination port, host order */
	VISOCK_RULE_A_PORT_MAX,	/* u16: last one; default: PORT_MIN */
	VISOCK_RULE_A_INDEX,	/* u32: position, 0 is tried first */
	__VISOCK_RULE_A_MAX,
};

#define VISOCK_RULE_A_MAX	(__VISOCK_RULE_A_MAX - 1)

#endif /* _UAPI_LINUX_VISOCK_H */
