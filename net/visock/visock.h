/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: the core objects shared by the files of visock.ko: the state
 * of a network namespace (struct visock_net) and of a socket (struct
 * visock_sock), the constants they need and their accessors.
 *
 * Each component declares its functions in a header of its own (e.g.
 * visock_stats.h, visock_diag.h, visock_genl.h); the prototypes left
 * here are grouped under the name of the file that defines them.
 *
 * Nouns used throughout the module:
 * - link group (lgr): all queue pairs of one namespace with the same
 *   role, local GID and peer address (visock_lgr.c).
 * - qp (struct visock_qp): one RC queue pair of a link group, shared by
 *   many connections.  The uapi, visockctl and the link messages on a
 *   queue pair call it a "link" (VISOCK_LINK_*, struct visock_diag_link).
 * - vc (struct visock_vc, a virtual connection): one connection's share
 *   of a qp: a token index, a receive ring, a send buffer, the peer's
 *   ring and send slots for cursor messages (visock_vc.c).
 * - token: what the peer puts in each message to name a vc: random bits
 *   and the vc's index in its qp's token table.
 * - ring (struct visock_rbuf): a registered receive ring the peer
 *   RDMA-writes into; a send buffer is the same kind of object.
 * - dp (struct visock_dp): a connection's data path on its vc: cursors,
 *   credits, failover state (visock_rdma.h).
 */
#ifndef _NET_VISOCK_H
#define _NET_VISOCK_H

#include <linux/types.h>
#include <linux/log2.h>
#include <linux/list.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <linux/percpu.h>
#include <net/sock.h>
#include <net/inet_sock.h>
#include <net/netns/generic.h>
#include <linux/visock.h>
#include <linux/visock_diag.h>
#include <linux/visock_genl.h>

#include "visock_compat.h"
#include "visock_stats.h"
#include "visock_wire.h"

/*
 * QP caps when net.visock.lgr_peer_qps_max / lgr_qps_max are 0: these
 * times lgr_max_links.  Upper bound of both sysctls.
 */
#define VISOCK_LGR_PEER_QPS_FACTOR	8
#define VISOCK_LGR_NET_QPS_FACTOR	64
#define VISOCK_LGR_QPS_MAX		65536
/* Largest number of connections one QP can take (token index bits). */
#define VISOCK_LGR_CONNS_MAX		VISOCK_TOKEN_IDX_MASK

/**
 * struct visock_net - per network namespace state
 * @enable: net.visock.enable; read locklessly with READ_ONCE()
 * @hs_timeout_ms: net.visock.handshake_timeout_ms
 * @ack_timeout: net.visock.rdma_ack_timeout, local ACK timeout of new QPs
 *	(IBTA encoding)
 * @rbuf_default: net.visock.rbuf_default, ring size without SO_RCVBUF
 * @sysctl_hdr: registered net.visock.* table of this namespace
 * @fallbacks: connections that fell back, per enum visock_fallback_reason
 * @conns_rdma: connections that switched to RDMA
 * @hs_started: in-band handshakes started (client and server side)
 * @hs_done: handshakes that set up a vc
 * @hs_aborted: handshakes that ended the connection (timeout, framing)
 * @stats: data counters, per CPU
 * @base_lock: protects @base
 * @base: counter values at the last reset (visock_stats_reset()); what
 *	userspace sees is the difference to them
 * @sk_lock: protects @sk_list (visock_diag.c); BH-safe, innermost
 * @sk_list: visock sockets of this namespace, in the order of their
 *	numbers (struct visock_sock.diag_node)
 * @psk: the pre-shared keys of the namespace (visock_psk.c)
 * @auth: net.visock.auth, enum visock_auth_policy
 * @auth_ok: handshakes authenticated with a pre-shared key
 * @auth_failed: handshake messages whose MAC did not verify or that
 *	named a key this side does not hold
 * @rec_auth_failed: records of the data path that did not open (tag,
 *	header, length or sequence number); also counted in @auth_failed
 * @auth_missing: handshakes not authenticated where net.visock.auth
 *	required it (no key here, none offered by the peer, a lazy switch)
 * @xform: net.visock.transform, enum visock_xform new connections offer
 *	(client) or accept (server) in an authenticated handshake
 * @xform_require: net.visock.transform_require: 1 if @xform is required
 *	of every connection, in both roles
 * @pol_lock: serialises changes of @policy (visock_policy.c)
 * @policy: destination policy rules; read under RCU, replaced under
 *	@pol_lock
 * @lgr_max_links: net.visock.lgr_max_links, QPs per link group
 * @lgr_link_conns: net.visock.lgr_link_conns, connections per QP at most
 * @lgr_link_conns_min: net.visock.lgr_link_conns_min, connections the
 *	first QP of a link group takes (visock_lgr_qp_size())
 * @lgr_idle_ms: net.visock.lgr_idle_ms, idle time before a QP goes
 * @lgr_mem_max_mb: net.visock.lgr_mem_max_mb, ring memory limit
 * @lgr_keepalive_ms: net.visock.lgr_keepalive_ms, keepalive interval of
 *	a QP with connections (0: none)
 * @lazy_bytes: net.visock.lazy_bytes, threshold of a lazy start (below
 *	VISOCK_LAZY_MIN: no lazy start; see visock_lazy_threshold())
 * @lgr_peer_qps_max: net.visock.lgr_peer_qps_max, QPs with one peer host
 *	(0: derived from @lgr_max_links)
 * @lgr_qps_max: net.visock.lgr_qps_max, QPs of the namespace (0: derived)
 * @dgram_enable: net.visock.dgram_enable, visock datagram sockets allowed
 * @lgr_lock: the QP list and each QP's attachment count (visock_vc.c)
 * @qps: QPs of this namespace (struct visock_qp.net_node)
 * @qp_all_lock: protects @qp_all; BH-safe, innermost
 * @qp_all: every QP of this namespace from its creation until it is
 *	freed, listed or not (struct visock_qp.all_node): what the QP caps
 *	count
 * @lgr_qps_alive: QPs not freed yet, from their allocation on, listed or
 *	not (one in its idle teardown is off the list): what
 *	@lgr_qps_max caps; visock_lgr_net_exit() waits for 0
 * @lgr_qps_capped: QPs not created because a QP cap was reached
 * @lgr_gid_mismatch: REQs or REPs whose GID was not the address of the
 *	TCP peer, declined
 * @lgr_wq: woken when a QP finished setting up (or failed)
 * @lgr_mem: bytes of rings and of the queues of all QPs, against
 *	@lgr_mem_max_mb
 * @lgr_qp_mem: the queues' part of @lgr_mem
 * @lgr_xform_mem: the part of @lgr_mem the connections' transform pairs
 *	take (visock_lgr_xform_charge())
 * @lgr_qps_created: QPs created
 * @lgr_qps_destroyed: QPs destroyed
 * @lgr_reused: connections that joined an existing QP
 * @lgr_rkey_rotations: receive rings registered with a new remote key for
 *	their next connection (the old key invalidated first)
 * @lgr_waits: connections that waited for a QP being set up
 * @lgr_retired: QPs that took no new connection any more because
 *	lingering connections held half of them (visock_qp_retire_full())
 * @lgr_stale: receives dropped for an unknown or stale token, on any QP
 *	(also after the QP is gone)
 * @lazy_started: connections that started lazily on TCP
 * @switches: lazy connections that switched to RDMA
 * @switch_declined: lazy connections whose switch was declined (either
 *	side), which stay on TCP
 * @switch_reset: lazy connections reset during their switch
 * @switch_foreign: SWITCH messages that named a QP of another link group
 *	(another peer address), refused without posting on that QP
 * @switch_started: SWITCH messages this side wrote (it started a switch)
 * @switch_crossed: switches both sides started at once (the client's
 *	won), counted on each side
 */
struct visock_net {
	int enable;
	int hs_timeout_ms;
	int ack_timeout;
	int rbuf_default;
	struct ctl_table_header *sysctl_hdr;
	atomic64_t fallbacks[__VISOCK_FB_MAX];
	atomic64_t conns_rdma;
	atomic64_t hs_started;
	atomic64_t hs_done;
	atomic64_t hs_aborted;
	struct visock_stats __percpu *stats;
	/* Protects base; any context (BH-safe) */
	spinlock_t base_lock;
	struct visock_totals base;
	/* Protects sk_list; any context (BH-safe), innermost */
	spinlock_t sk_lock;
	struct list_head sk_list;
	/* Pre-shared keys (visock_psk.c), under their own mutex */
	struct visock_psk_store *psk;
	int auth;
	atomic64_t auth_ok;
	atomic64_t auth_failed;
	atomic64_t rec_auth_failed;
	atomic64_t auth_missing;
	int xform;
	int xform_require;
	/* Serialises changes of policy; process context (netlink) only */
	struct mutex pol_lock;
	struct visock_policy_table __rcu *policy;
	int lgr_max_links;
	int lgr_link_conns;
	int lgr_link_conns_min;
	int lgr_idle_ms;
	int lgr_mem_max_mb;
	int lgr_keepalive_ms;
	int lazy_bytes;
	int lgr_peer_qps_max;
	int lgr_qps_max;
	int dgram_enable;
	/* Protects qps and the QPs' attachment counts; process context */
	struct mutex lgr_lock;
	struct list_head qps;
	/* Protects qp_all; any context (BH-safe), innermost */
	spinlock_t qp_all_lock;
	struct list_head qp_all;
	atomic_t lgr_qps_alive;
	atomic64_t lgr_qps_capped;
	atomic64_t lgr_gid_mismatch;
	wait_queue_head_t lgr_wq;
	atomic64_t lgr_mem;
	atomic64_t lgr_qp_mem;
	atomic64_t lgr_xform_mem;
	atomic64_t lgr_qps_created;
	atomic64_t lgr_qps_destroyed;
	atomic64_t lgr_reused;
	atomic64_t lgr_rkey_rotations;
	atomic64_t lgr_waits;
	atomic64_t lgr_retired;
	atomic64_t lgr_stale;
	atomic64_t lazy_started;
	atomic64_t switches;
	atomic64_t switch_declined;
	atomic64_t switch_reset;
	atomic64_t switch_foreign;
	atomic64_t switch_started;
	atomic64_t switch_crossed;
};

struct visock_sock;

/**
 * struct visock_mode_ops - what a connection does in its current mode
 * @sendmsg: sendmsg() once the connection has settled (process context,
 *	no lock held)
 * @recvmsg: recvmsg() once the connection has settled (process context,
 *	no lock held)
 * @poll: poll() of a connected socket, after the caller registered on
 *	the socket's wait queue (process context, lockless)
 * @shutdown: shutdown() of a socket that is not listening (process
 *	context, no lock held)
 * @ioctl: the ioctls this mode answers itself; -ENOIOCTLCMD hands @cmd
 *	on to the internal TCP socket.  NULL: none
 * @close: close() of the connection; true if the mode took over the
 *	teardown of the link and of the internal TCP socket (process
 *	context, no lock held).  NULL: nothing to do
 * @tcp_data_ready: the internal TCP socket has bytes to read
 * @tcp_write_space: the internal TCP socket has room to write
 * @tcp_state_change: the internal TCP socket moved to TCP state
 *	@tcp_state
 * @tcp_ended: does an error TCP reports come after the connection
 *	reported its end already (it must not be reported twice)?  NULL:
 *	never
 * @urgent: true if @sendmsg and @recvmsg take MSG_OOB (urgent data, as
 *	TCP has it); false: MSG_OOB fails with EOPNOTSUPP before reaching them
 *
 * The @tcp_* operations are called from the internal TCP socket's
 * callbacks (visock_tcp.c), in softirq or process context, under its
 * sk_callback_lock held for reading, after TCP's own callback ran; they
 * do not sleep.  There is one instance per mode: plain TCP (also before
 * a connection is decided, and for listeners; af_visock.c), handshake
 * (visock_handshake.c), lazy start (a lazy connection keeps it once
 * switched to RDMA; visock_lazy.c) and RDMA (visock_rdma.c; a failover
 * to TCP is a state of the data path, struct visock_dp, not a mode).
 * Every operation of an instance copes with a connection that moves on
 * to its next mode while it runs: the calls read @ops without a lock.
 */
struct visock_mode_ops {
	int (*sendmsg)(struct visock_sock *vsk, struct msghdr *msg,
		       size_t len);
	int (*recvmsg)(struct visock_sock *vsk, struct msghdr *msg,
		       size_t len, int flags);
	__poll_t (*poll)(struct visock_sock *vsk, struct file *file);
	int (*shutdown)(struct visock_sock *vsk, int how);
	int (*ioctl)(struct visock_sock *vsk, unsigned int cmd,
		     unsigned long arg);
	bool (*close)(struct visock_sock *vsk);
	void (*tcp_data_ready)(struct visock_sock *vsk);
	void (*tcp_write_space)(struct visock_sock *vsk);
	void (*tcp_state_change)(struct visock_sock *vsk, int tcp_state);
	bool (*tcp_ended)(struct visock_sock *vsk);
	bool urgent;
};

/**
 * struct visock_sock - a visock socket
 * @sk: the socket seen by the socket layer; must stay first
 * @inet: the same memory seen as an inet_sock.  A visock socket created
 *	as socket(AF_INET or AF_INET6, SOCK_STREAM, IPPROTO_VISOCK) is
 *	allocated and initialised by inet_create()/inet6_create(), which
 *	treat it as a struct inet_sock (visock_inet.c); visock itself never
 *	uses the inet fields (addresses and options live on @tcp).
 * @tcp: internal kernel TCP socket carrying the connection (and the
 *	byte stream itself while in TCP mode).  Set at creation (or by the
 *	listener for accepted sockets) and released in visock_release();
 *	constant in between.
 * @flags: VISOCK_F_* bits, atomic bitops
 * @err_mirror: TCP error last copied to sk_err (visock_inner.c), or 0
 * @mode: enum visock_mode; written with @ops by visock_set_mode() only,
 *	under lock_sock(@sk) or, before the connection settled, by the one
 *	caller that set VISOCK_F_DECIDED (TCP's callback or connect());
 *	read locklessly with READ_ONCE()
 * @ops: the operations of @mode (struct visock_mode_ops); never NULL,
 *	written as @mode, read locklessly with READ_ONCE()
 * @fb_reason: enum visock_fallback_reason once @mode is VISOCK_MODE_TCP
 * @xform_opt: setsockopt(SOL_VISOCK, VISOCK_TRANSFORM), enum visock_xform
 *	or VISOCK_XFORM_NONE; written under lock_sock() before the
 *	connection is decided (a child copies its listener's), read with
 *	READ_ONCE()
 * @pol_xform: the transform the destination policy rule named, set by
 *	connect() before the SYN; VISOCK_XFORM_NONE if none
 * @pol_xform_req: that rule requires @pol_xform (set with it)
 * @tcp_app_seq: sequence number of the internal TCP connection where our
 *	application bytes start, after our handshake messages (valid with
 *	VISOCK_F_APP_SEQ)
 * @urg_seq: in TCP mode, the internal TCP connection's urgent mark that
 *	SIGURG was last raised for (valid with @urg_signalled); written by
 *	the internal socket's data-ready callback only
 * @urg_signalled: SIGURG was raised for an urgent mark of this connection
 * @family: AF_INET or AF_INET6, the family of @tcp
 * @lazy_bytes: lazy start threshold: a client's proposal (set by
 *	connect() before the SYN), a listener's offer (taken at listen()),
 *	and once the connection is decided the agreed one, or 0
 * @sw_server: the lazy connection's server side (constant once lazy)
 * @sw_both: both options announced VISOCK_TCPOPT_V_LAZY_BOTH: either
 *	side may start the switch (constant once lazy)
 * @sw_tx_msg: type of our message after our byte L - 1
 *	(VISOCK_HS_SWITCH or VISOCK_HS_DECLINE), 0 while none
 * @sw_rx_msg: type of the peer's message after its byte L - 1 once
 *	read, else 0
 * @sw_peer_seen: nothing (more) to look for after the peer's byte
 *	L - 1: its message there was read, or none can come
 * @sw_state: enum visock_sw_state of a lazy connection (VISOCK_F_LAZY),
 *	written under lock_sock(), read locklessly
 * @sw_tx_pos: application bytes written to TCP so far (lazy connection)
 * @sw_rx_pos: application bytes read from TCP so far (lazy connection)
 * @sw_rx_end: stream position up to which the peer's bytes come over
 *	TCP: L where the peer may write a message after its byte L - 1
 *	(before and after a switch the peer started), the responder's
 *	switch position on the initiator after it, U64_MAX where unbounded
 * @sw_skip: bytes of the peer's SWITCH or DECLINE message still to drop
 *	from the TCP stream at @sw_rx_end
 * @sw_deadline: jiffies by which the initiator needs the switch reply
 * @sw_started: jiffies when the initiator sent its SWITCH, then when it
 *	saw TCP acknowledge it
 * @sw_seq: TCP sequence number just after our SWITCH
 * @sw_seen_at: jiffies when the peer's message after its byte L - 1 was
 *	first seen complete (for the sw_delay_ms test hook), or 0
 * @sw_acked: the initiator saw TCP acknowledge its SWITCH (the reply's
 *	clock runs from then on)
 * @sw_closing: close() came while the initiator waited for the reply:
 *	the close work (visock_tx_close()) owns the data path and waits
 *	until the switch settles; the switch's work goes on until then
 * @sw_tx_shut: shutdown(SHUT_WR) came while the initiator waited for
 *	the reply: the end of our stream goes where the stream goes once
 *	the switch settles (RDMA's done writing, or TCP's FIN)
 * (all sw_* but @sw_state under lock_sock())
 * @local_opt: option we sent (valid with VISOCK_F_SYN_OPT)
 * @peer_opt: option the peer sent (valid with VISOCK_F_PEER_OPT)
 * @accept_lock: protects @accept_q and @accept_len (listener only);
 *	taken inside lock_sock(@sk) or on its own, never the other way
 * @accept_q: accepted children whose handshake has settled, FIFO
 * @accept_len: length of @accept_q
 * @accept_hs: children whose handshake still runs (listener only); with
 *	@accept_len at most sk_max_ack_backlog + 1, as TCP's accept queue.
 *	Written under lock_sock(@sk), read locklessly for the gauges
 * @accept_work: pulls new connections from @tcp into @accept_q
 * @accept_link: entry in the parent listener's @accept_q
 * @hs_state: enum visock_hs_state, under lock_sock(@sk)
 * @hs_version: negotiated protocol version
 * @hs_deadline: jiffies by which the peer's next message must be complete
 * @hs_work: runs the handshake state machine (visock_handshake.c)
 * @listener: for a child still in its handshake, the listener it goes
 *	to (referenced); NULL otherwise
 * @vc: this connection's share of a QP, or NULL
 * @dp: RDMA data path state (visock_rdma.h), or NULL.  Set under
 *	lock_sock() by the handshake once @vc is connected, before the
 *	peer may write; freed with @vc by visock_rdma_destroy_vc().
 *	Constant while the connection is in VISOCK_MODE_RDMA.
 * @lgr_wait: entry in visock_net.lgr_wq while the client waits for a
 *	QP of its link group to come up (VISOCK_F_LGR_WAIT; holds a
 *	socket reference)
 * @local_token: token we chose
 * @peer_token: token the peer chose
 * @peer_qpn: the peer's QP number
 * @peer_rbuf_size: the peer's receive ring size
 * @auth: nonces, tokens and derived keys of a handshake that carries
 *	TLV AUTH (visock_handshake.c), or NULL; under lock_sock(@sk) until
 *	the connection settled, then constant; freed with the socket
 * @saved_data_ready: @tcp's callbacks before visock took them over,
 *	restored before @tcp is released (under @tcp's sk_callback_lock)
 * @saved_write_space: see @saved_data_ready
 * @saved_state_change: see @saved_data_ready
 * @saved_error_report: see @saved_data_ready
 * @own_state_change: @sk's sk_state_change() as sock_init_data() set
 *	it, called by visock_sk_state_change() unless the connection is
 *	settling
 * @own_write_space: the same for sk_write_space()
 * @diag_node: entry in the socket list of the namespace (struct
 *	visock_net.sk_list), under its sk_lock
 * @diag_id: number of the socket in that list (constant)
 * @family_destruct: sk_destruct the sock had before visock_sk_init()
 *	(inet_sock_destruct() and friends for inet sockets), run after
 *	visock's own checks
 */
struct visock_sock {
	union {
		struct sock sk;
		struct inet_sock inet;
	};
	struct socket *tcp;
	unsigned long flags;
	int err_mirror;
	const struct visock_mode_ops *ops;
	u8 mode;
	u8 fb_reason;
	u8 xform_opt;
	u8 pol_xform;
	bool pol_xform_req;
	/* TCP sequence number of the first application byte we send */
	u32 tcp_app_seq;
	u32 urg_seq;
	bool urg_signalled;
	u32 lazy_bytes;
	bool sw_server;
	bool sw_both;
	u8 sw_tx_msg;
	u8 sw_rx_msg;
	bool sw_peer_seen;
	u8 sw_state;
	u16 sw_skip;
	u64 sw_tx_pos;
	u64 sw_rx_pos;
	u64 sw_rx_end;
	unsigned long sw_deadline;
	unsigned long sw_started;
	unsigned long sw_seen_at;
	u32 sw_seq;
	bool sw_acked;
	bool sw_closing;
	bool sw_tx_shut;
	u16 family;
	struct visock_synopt local_opt;
	struct visock_synopt peer_opt;

	/* Protects accept_q and accept_len; see the kernel-doc above. */
	spinlock_t accept_lock;
	struct list_head accept_q;
	unsigned int accept_len;
	unsigned int accept_hs;
	struct work_struct accept_work;
	struct list_head accept_link;

	u8 hs_state;
	u8 hs_version;
	unsigned long hs_deadline;
	struct delayed_work hs_work;
	struct visock_sock *listener;
	struct visock_vc *vc;
	struct visock_dp *dp;
	struct wait_queue_entry lgr_wait;
	u32 local_token;
	u32 peer_token;
	u32 peer_qpn;
	u32 peer_rbuf_size;
	struct visock_auth_conn *auth;

	void (*saved_data_ready)(struct sock *sk);
	void (*saved_write_space)(struct sock *sk);
	void (*saved_state_change)(struct sock *sk);
	void (*saved_error_report)(struct sock *sk);
	void (*own_state_change)(struct sock *sk);
	void (*own_write_space)(struct sock *sk);

	struct list_head diag_node;
	u64 diag_id;
	void (*family_destruct)(struct sock *sk);
};

/* visock_sock.flags */
enum {
	VISOCK_F_DECIDED,	/* visock_decide() ran for this connection */
	VISOCK_F_SETTLED,	/* mode decided for this connection */
	VISOCK_F_LISTENER,	/* listen() succeeded once: has accept state */
	VISOCK_F_SYN_OPT,	/* our SYN / SYN-ACK carried the option */
	VISOCK_F_PEER_OPT,	/* the peer's SYN / SYN-ACK carried it */
	VISOCK_F_LINK_UP,	/* @vc reached RTS, peer confirmed */
	VISOCK_F_HS_ABORTED,	/* the handshake ended the connection */
	/* Teardown started: hidden from readers; set under lock_sock() */
	VISOCK_F_DIAG_GONE,
	VISOCK_F_POLICY_TCP,	/* destination policy: no option, plain TCP */
	/* Fell back after handshake messages: tcp_app_seq is valid */
	VISOCK_F_APP_SEQ,
	VISOCK_F_LGR_WAIT,	/* on the namespace's lgr_wq (@lgr_wait) */
	/*
	 * close(): the handshake work does nothing any more, even if a TCP
	 * callback queues it again after visock_hs_cancel(); set under
	 * lock_sock()
	 */
	VISOCK_F_RELEASED,
	/*
	 * Lazy start agreed (visock_lazy.c): the connection started on TCP
	 * without the handshake and may switch to RDMA
	 */
	VISOCK_F_LAZY,
	/* The handshake was authenticated with a pre-shared key */
	VISOCK_F_AUTH,
};

/* Switch of a lazy connection (visock_lazy.c) */
enum visock_sw_state {
	VISOCK_SW_NONE,		/* on TCP, no switch yet */
	VISOCK_SW_WAIT,		/* our SWITCH sent, waiting for the reply */
	VISOCK_SW_DONE,		/* switched: data moves over RDMA */
	VISOCK_SW_DECLINED,	/* stays on TCP for good */
	/*
	 * The switch failed, the connection is reset: the peer's bytes
	 * before @sw_rx_end can still be read, then the error
	 */
	VISOCK_SW_RESET,
};

/* Handshake states (visock_handshake.c) */
enum visock_hs_state {
	VISOCK_HS_NONE,		/* no in-band handshake (yet) */
	VISOCK_HS_CLI_START,	/* client: send REQ */
	VISOCK_HS_CLI_WAIT_REP,	/* client: REQ sent, waiting for REP */
	VISOCK_HS_SRV_WAIT_REQ,	/* server: waiting for REQ */
	VISOCK_HS_SRV_WAIT_CONFIRM, /* server: REP sent */
	VISOCK_HS_DONE,		/* settled, one way or the other */
};

struct visock_vc;
struct visock_dp;
struct visock_policy_table;
struct visock_psk_store;
struct visock_auth_conn;

/**
 * enum visock_auth_policy - net.visock.auth of a namespace
 * @VISOCK_AUTH_OFF: no TLV AUTH is sent, a peer's is ignored
 * @VISOCK_AUTH_PREFER: authenticate when both hosts hold a key; a peer
 *	that offers no authentication still gets RDMA
 * @VISOCK_AUTH_REQUIRE: a handshake that is not authenticated falls back
 *	to TCP (AUTH_MISSING); lazy connections do not switch
 * @VISOCK_AUTH_REFUSE: as @VISOCK_AUTH_REQUIRE, but such a connection is
 *	reset instead of falling back
 */
enum visock_auth_policy {
	VISOCK_AUTH_OFF = 0,
	VISOCK_AUTH_PREFER = 1,
	VISOCK_AUTH_REQUIRE = 2,
	VISOCK_AUTH_REFUSE = 3,
};
struct ib_device;

/*
 * Why a blocking socket call must stop waiting now: -EAGAIN when its
 * timeout is used up (0 for non-blocking), the signal errno when a signal
 * is pending, else 0.
 */
static inline int visock_wait_err(long timeo)
{
	if (!timeo)
		return -EAGAIN;
	if (signal_pending(current))
		return sock_intr_errno(timeo);
	return 0;
}

static inline struct visock_sock *visock_sk(const struct sock *sk)
{
	return (struct visock_sock *)sk;
}

/* visock_main.c */
extern unsigned int visock_net_id;
extern struct workqueue_struct *visock_wq;

static inline struct visock_net *visock_net(const struct net *net)
{
	return net_generic(net, visock_net_id);
}

/*
 * The lazy start threshold of namespace @net: net.visock.lazy_bytes
 * rounded down to a power of two, or 0 if it is off.
 */
static inline u32 visock_lazy_threshold(const struct net *net)
{
	int v = READ_ONCE(visock_net(net)->lazy_bytes);

	return v < (int)VISOCK_LAZY_MIN ? 0 : rounddown_pow_of_two(v);
}


#endif /* _NET_VISOCK_H */
