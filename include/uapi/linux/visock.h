/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * visock: TCP-compatible stream sockets carried over RDMA.
 *
 * User-visible constants of the AF_VISOCK socket family: the address
 * family, socket protocols, SOL_VISOCK options and struct visock_info.
 * The sock_diag interface is in <linux/visock_diag.h>, the generic
 * netlink family in <linux/visock_genl.h> (generated from
 * Documentation/netlink/specs/visock.yaml); both are included here as
 * well, for programs written when this header held them.
 */
#ifndef _UAPI_LINUX_VISOCK_H
#define _UAPI_LINUX_VISOCK_H

#include <linux/types.h>
#include <linux/visock_diag.h>
#include <linux/visock_genl.h>

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
 * Protocol argument of socket(AF_VISOCK, SOCK_DGRAM, protocol): a
 * datagram socket with the semantics of UDP over IPv4 (struct
 * sockaddr_in) or IPv6 (struct sockaddr_in6).  The same socket exists as
 * socket(AF_INET or AF_INET6, SOCK_DGRAM, IPPROTO_VISOCK).  Only while
 * the namespace's sysctl net.visock.dgram_enable is 1: otherwise
 * socket() fails as on a kernel without visock datagrams (ESOCKTNOSUPPORT
 * for AF_VISOCK, EPROTONOSUPPORT for AF_INET/AF_INET6).
 */
#define VISOCKPROTO_UDP4	2	/* IPv4, struct sockaddr_in */
#define VISOCKPROTO_UDP6	3	/* IPv6, struct sockaddr_in6 */

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
/*
 * setsockopt/getsockopt(SOL_VISOCK, VISOCK_TRANSFORM): int, one of
 * enum visock_xform.  The transform pair this socket's connections ask
 * for in an authenticated handshake, in place of the namespace's
 * net.visock.transform (a destination policy rule that requires a
 * transform still wins).  Only before connect() or listen(): EISCONN
 * after; a listener's value is inherited by the connections it accepts.
 * VISOCK_XFORM_NONE clears it (the policy rule or net.visock.transform
 * applies again); it never turns a transform off.  EINVAL for an
 * unknown value, EOPNOTSUPP for a pair the crypto API of this host
 * cannot run.  getsockopt() returns what was set (0 if nothing);
 * struct visock_info (vi_xform) says what the connection got.
 */
#define VISOCK_TRANSFORM	5

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
 * @vi_rdma_state: enum visock_rdma_state (while in RDMA mode)
 * @vi_xform: enum visock_xform the handshake negotiated for the
 *	connection's records (net.visock.transform), VISOCK_XFORM_NONE if
 *	none
 * @vi_reserved: zero
 * @vi_rec_sealed: records sent (a transform is in use)
 * @vi_rec_opened: records received and authenticated
 * @vi_rec_tx_rekeys: key changes of the sending direction (key updates)
 * @vi_rec_rx_rekeys: key changes of the receiving direction
 * @vi_rec_compressed: records sent with a compressed payload (a
 *	compressing transform; the others of @vi_rec_sealed went stored)
 * @vi_rec_decompressed: records received with a compressed payload
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
	__u32 vi_xform;
	__u32 vi_reserved;
	__u64 vi_rec_sealed;
	__u64 vi_rec_opened;
	__u64 vi_rec_tx_rekeys;
	__u64 vi_rec_rx_rekeys;
	__u64 vi_rec_compressed;
	__u64 vi_rec_decompressed;
};

#define VISOCK_INFO_F_SYN_OPT	0x1	/* our SYN / SYN-ACK announced visock */
#define VISOCK_INFO_F_PEER_OPT	0x2	/* the peer's announced visock */
#define VISOCK_INFO_F_LINK_UP	0x4	/* RDMA queue pair is connected (RTS) */
#define VISOCK_INFO_F_FAILOVER	0x8	/* the RDMA link failed: now over TCP */
#define VISOCK_INFO_F_LAZY	0x10	/* both ends agreed on a lazy start */
/* both ends proved a shared pre-shared key in the handshake */
#define VISOCK_INFO_F_AUTH	0x20

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
 * enum visock_rdma_state - state of a connection's RDMA data path
 * @VISOCK_RDMA_STATE_LIVE: data flows over RDMA
 * @VISOCK_RDMA_STATE_FAILED: the data path failed: no more RDMA transfers
 * @VISOCK_RDMA_STATE_STOPPED: the data path is being torn down
 * @VISOCK_RDMA_STATE_FAILING_OVER: the link failed, the connection is
 *	moving to TCP
 * @VISOCK_RDMA_STATE_FAILED_OVER: the stream continues over TCP
 *
 * Reported in struct visock_info (vi_rdma_state) and struct
 * visock_diag_ring (vdr_state).
 */
enum visock_rdma_state {
	VISOCK_RDMA_STATE_LIVE = 0,
	VISOCK_RDMA_STATE_FAILED = 1,
	VISOCK_RDMA_STATE_STOPPED = 2,
	VISOCK_RDMA_STATE_FAILING_OVER = 3,
	VISOCK_RDMA_STATE_FAILED_OVER = 4,
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
 * @VISOCK_FB_NOMEM: out of memory locally, or the socket's memory cgroup
 *	refused its rings
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
 * @VISOCK_FB_AUTH: a handshake message failed authentication (wrong
 *	MAC, or a key id this side does not hold), here or at the peer
 * @VISOCK_FB_AUTH_MISSING: one side requires an authenticated handshake
 *	(net.visock.auth) and the other offered none, or it has no key
 * @VISOCK_FB_XFORM_REQUIRED: a destination policy rule requires a
 *	transform pair and the handshake could not agree on it (no key,
 *	no authentication, or the server chose another pair or none)
 * @VISOCK_FB_XFORM_MEM: the negotiated transform pair's state did not fit
 *	the namespace's memory budget (net.visock.lgr_mem_max_mb), here or
 *	at the peer
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
	VISOCK_FB_AUTH = 19,
	VISOCK_FB_AUTH_MISSING = 20,
	VISOCK_FB_XFORM_REQUIRED = 21,
	VISOCK_FB_XFORM_MEM = 22,
	__VISOCK_FB_MAX,
};

#define VISOCK_FB_MAX	(__VISOCK_FB_MAX - 1)

/**
 * enum visock_xform - transform pairs applied to a connection's records
 * @VISOCK_XFORM_NONE: no transform: the stream is not cut into records
 * @VISOCK_XFORM_AES128_GCM: AES-GCM, 128-bit key (encryption and
 *	integrity)
 * @VISOCK_XFORM_AES256_GCM: AES-GCM, 256-bit key
 * @VISOCK_XFORM_CHACHA20_POLY1305: ChaCha20-Poly1305 (RFC 8439)
 * @VISOCK_XFORM_AES128_GMAC: integrity only: the payload is sent in the
 *	clear and authenticated with GMAC (AES-GCM without encryption),
 *	128-bit key
 * @VISOCK_XFORM_AES256_GMAC: integrity only, GMAC with a 256-bit key
 * @VISOCK_XFORM_LZ4_AES128_GCM: each record's payload is compressed with
 *	LZ4 when that shrinks it, then sealed with AES-GCM, 128-bit key
 * @VISOCK_XFORM_ZSTD_AES128_GCM: the same with Zstandard
 * @VISOCK_XFORM_LZ4_AES128_GMAC: compression without encryption: each
 *	record's payload is compressed with LZ4 when that shrinks it, then
 *	sent in the clear and authenticated with GMAC, 128-bit key
 * @VISOCK_XFORM_ZSTD_AES128_GMAC: the same with Zstandard
 * @VISOCK_XFORM_LZ4_AES256_GCM: LZ4, then AES-GCM with a 256-bit key
 * @VISOCK_XFORM_ZSTD_AES256_GCM: Zstandard, then AES-GCM with a 256-bit
 *	key
 * @VISOCK_XFORM_LZ4_CHACHA20_POLY1305: LZ4, then ChaCha20-Poly1305
 * @VISOCK_XFORM_ZSTD_CHACHA20_POLY1305: Zstandard, then
 *	ChaCha20-Poly1305
 * @__VISOCK_XFORM_MAX: one above the highest transform (VISOCK_XFORM_MAX)
 *
 * Values are stable ABI: they name a transform on the wire (the record
 * header) and in the management interfaces.  New transforms are only
 * ever appended.
 */
enum visock_xform {
	VISOCK_XFORM_NONE = 0,
	VISOCK_XFORM_AES128_GCM = 1,
	VISOCK_XFORM_AES256_GCM = 2,
	VISOCK_XFORM_CHACHA20_POLY1305 = 3,
	VISOCK_XFORM_AES128_GMAC = 4,
	VISOCK_XFORM_AES256_GMAC = 5,
	VISOCK_XFORM_LZ4_AES128_GCM = 6,
	VISOCK_XFORM_ZSTD_AES128_GCM = 7,
	VISOCK_XFORM_LZ4_AES128_GMAC = 8,
	VISOCK_XFORM_ZSTD_AES128_GMAC = 9,
	VISOCK_XFORM_LZ4_AES256_GCM = 10,
	VISOCK_XFORM_ZSTD_AES256_GCM = 11,
	VISOCK_XFORM_LZ4_CHACHA20_POLY1305 = 12,
	VISOCK_XFORM_ZSTD_CHACHA20_POLY1305 = 13,
	__VISOCK_XFORM_MAX,
};

#define VISOCK_XFORM_MAX	(__VISOCK_XFORM_MAX - 1)

/**
 * enum visock_dgram_path - which way a visock datagram went, and why
 * @VISOCK_DGRAM_RDMA: over RDMA
 * @VISOCK_DGRAM_UDP_DISABLED: as UDP: net.visock.enable is 0
 * @VISOCK_DGRAM_UDP_MULTICAST: as UDP: multicast destination
 * @VISOCK_DGRAM_UDP_BROADCAST: as UDP: limited broadcast destination
 *	(255.255.255.255)
 * @VISOCK_DGRAM_UDP_NO_TRANSPORT: as UDP: no RDMA datagram transport
 *	for the destination
 * @__VISOCK_DGRAM_PATH_MAX: one above the highest value
 *
 * Values are stable ABI (statistics); new ones are only ever appended.
 */
enum visock_dgram_path {
	VISOCK_DGRAM_RDMA = 0,
	VISOCK_DGRAM_UDP_DISABLED = 1,
	VISOCK_DGRAM_UDP_MULTICAST = 2,
	VISOCK_DGRAM_UDP_BROADCAST = 3,
	VISOCK_DGRAM_UDP_NO_TRANSPORT = 4,
	__VISOCK_DGRAM_PATH_MAX,
};

#endif /* _UAPI_LINUX_VISOCK_H */
