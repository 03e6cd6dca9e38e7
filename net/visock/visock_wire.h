/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock wire formats and pure protocol arithmetic.
 *
 * Everything declared here is free of ib_core and socket dependencies so
 * that it builds into a UML KUnit kernel (tools/testing/kunit) as well as
 * into visock.ko.  Callers pass plain byte buffers; every decoder treats
 * its input as untrusted and validates bounds before reading a field.
 *
 * Byte order on the wire is big-endian throughout.
 */
#ifndef _NET_VISOCK_WIRE_H
#define _NET_VISOCK_WIRE_H

#include <linux/bits.h>
#include <linux/types.h>

/* ------------------------------------------------------------------ */
/* SYN / SYN-ACK capability option (RFC 6994 experimental option)      */
/* ------------------------------------------------------------------ */

/*
 * Layout (6 bytes):  kind=253 | len=6 | ExID (16 bit, 0x5653 "VS") |
 *                    version (u8) | flags (u8)
 */
#define VISOCK_TCPOPT_KIND	253
#define VISOCK_TCPOPT_EXID	0x5653
#define VISOCK_TCPOPT_LEN	6
/* Option length rounded up to TCP's 4-byte alignment (two NOPs in front). */
#define VISOCK_TCPOPT_ALIGNED	8
/* flags: the sender has at least one usable RDMA device */
#define VISOCK_TCPOPT_F_RDMA	0x01
/*
 * flags: lazy start (visock/lazy-switch.rst): the connection starts on
 * TCP and moves to RDMA once a direction carried 2^(10 + k) bytes, k in
 * the VISOCK_TCPOPT_LAZY_MASK bits.  A server echoes both as it got them.
 */
#define VISOCK_TCPOPT_F_LAZY	0x02
#define VISOCK_TCPOPT_LAZY_SHIFT 2
#define VISOCK_TCPOPT_LAZY_MASK	0x3c
/* Lazy start thresholds the option can carry: 1 KiB .. 32 MiB. */
#define VISOCK_LAZY_MIN		BIT(10)
#define VISOCK_LAZY_MAX		BIT(25)
/*
 * Version of the option itself, in its version byte: 1 for senders in
 * which only the client of a lazy connection starts the switch, 2 for
 * senders in which either side may (visock/lazy-switch.rst).  A lazy
 * connection uses switches started by the server only if both options
 * carry at least 2.  Every release takes any version >= 1.
 */
#define VISOCK_TCPOPT_VERSION	2
#define VISOCK_TCPOPT_V_LAZY_BOTH 2
/* flags a peer may set; the others are ignored on receipt */
#define VISOCK_TCPOPT_F_PEER_MASK 0x3f

/**
 * struct visock_synopt - decoded capability option
 * @version: highest handshake protocol version the sender speaks (>= 1)
 * @flags: VISOCK_TCPOPT_F_* bits
 */
struct visock_synopt {
	u8 version;
	u8 flags;
};

u8 visock_tcpopt_lazy_flags(u32 bytes);
u32 visock_tcpopt_lazy_bytes(u8 flags);
int visock_tcpopt_offset(const u8 *opts, unsigned int len);
int visock_tcpopt_find(const u8 *opts, unsigned int len,
		       struct visock_synopt *out);
unsigned int visock_tcpopt_write(u8 *p, const struct visock_synopt *opt);

/* ------------------------------------------------------------------ */
/* Handshake messages (sent over the internal TCP connection)          */
/* ------------------------------------------------------------------ */

/*
 * Every message is a fixed 8-byte header followed by TLVs:
 *
 *   __be32 magic    VISOCK_HS_MAGIC
 *   u8     type     enum visock_hs_type
 *   u8     version  protocol version this message is written in
 *   __be16 length   total length including this header,
 *                   VISOCK_HS_HDR_LEN <= length <= VISOCK_HS_MAX_LEN
 *
 * TLV:  __be16 type | __be16 len (value bytes) | value[len]
 * Types with VISOCK_TLV_CRITICAL set must be understood by the receiver
 * (else the message is declined); unknown non-critical TLVs are skipped.
 * A TLV type may appear at most once.
 */
#define VISOCK_HS_MAGIC		0x56534b48	/* "VSKH" */
#define VISOCK_HS_HDR_LEN	8
#define VISOCK_HS_MAX_LEN	512
#define VISOCK_HS_VERSION	1	/* highest version we speak */
#define VISOCK_HS_MIN_VERSION	1	/* lowest version we accept */

enum visock_hs_type {
	VISOCK_HS_REQ = 1,	/* client -> server: proposal */
	VISOCK_HS_REP = 2,	/* server -> client: acceptance */
	VISOCK_HS_CONFIRM = 3,	/* client -> server: ready to switch */
	VISOCK_HS_DECLINE = 4,	/* either way, at any step */
	/*
	 * Lazy connections: the client's move to RDMA, in its stream
	 * right after byte L - 1 (visock/lazy-switch.rst), with the TLVs
	 * of a REQ that joins an existing QP; answered by a switch reply
	 * on that QP
	 */
	VISOCK_HS_SWITCH = 5,
};

#define VISOCK_TLV_CRITICAL	0x8000

enum visock_tlv_type {
	VISOCK_TLV_FEATURES = 1,	/* __be64 feature bits */
	VISOCK_TLV_GID = 2,		/* 16-byte RoCE GID */
	VISOCK_TLV_QPN = 3,		/* __be32, < 2^24, != 0 */
	VISOCK_TLV_PSN = 4,		/* __be32, < 2^24 */
	VISOCK_TLV_MTU = 5,		/* u8, IB_MTU_256(1)..IB_MTU_4096(5) */
	VISOCK_TLV_RBUF = 6,		/* __be64 addr, __be32 rkey, __be32 size */
	VISOCK_TLV_TOKEN = 7,		/* __be32, != 0 */
	VISOCK_TLV_LINK = 8,		/* __be32 link group id, __be32 link id */
	VISOCK_TLV_REASON = 9,		/* __be32 enum visock_fallback_reason */
	VISOCK_TLV_AUTH = 10,		/* authentication, layout below */
	VISOCK_TLV_XFORM = 11,		/* transform pairs, layout below */
};

/*
 * TLV AUTH (visock/security.rst, "Authenticated handshake"): the sender
 * proves it holds the fleet key named by key id.  Not critical, so a
 * receiver without it skips it and answers without one.  Value:
 *
 *    0  u8     version    highest authentication version the sender
 *                         speaks (>= 1); a reply is written in the
 *                         lower of both
 *    1  u8     flags      0 (reserved)
 *    2  __be16 reserved   0
 *    4  __be32 key id     the pre-shared key the MAC is made with, != 0
 *    8  16 bytes nonce    the sender's random nonce of this handshake
 *   24  32 bytes MAC      HMAC-SHA-256, visock_auth.c
 *
 * Later versions may append fields: a receiver reads the first
 * VISOCK_AUTH_TLV_LEN bytes and ignores the rest.  The encoder writes
 * AUTH last, so its MAC ends the message.
 */
#define VISOCK_AUTH_VERSION	1
#define VISOCK_AUTH_NONCE_LEN	16
#define VISOCK_AUTH_MAC_LEN	32
#define VISOCK_AUTH_TLV_LEN	56
#define VISOCK_AUTH_MAC_OFF	24	/* of the MAC, in the value */

/*
 * TLV XFORM (design.rst, "Negotiation"): the transform pairs of the
 * record layer, one u8 enum visock_xform each.  In a REQ the pairs the
 * client accepts, most preferred first (1..VISOCK_XFORM_OFFER_MAX
 * entries); in a REP the one the server chose (exactly one entry).  No
 * entry is 0 (none: the TLV is left out instead) and none repeats; ids
 * the receiver does not know are allowed in an offer and never chosen.
 * Not critical: a receiver without records skips it, and a server that
 * sends none back leaves the connection without a transform.  Only sent
 * in a message with TLV AUTH, whose MAC covers it; AUTH is still
 * written last.
 */
#define VISOCK_XFORM_OFFER_MAX	8

/* Bits of struct visock_hs_msg.present, one per TLV type. */
#define VISOCK_HSF(t)		(1U << (t))

/* Feature bits (TLV FEATURES). */
#define VISOCK_FEAT_WRITE_IMM	BIT_ULL(0)	/* RDMA WRITE with immediate */
/*
 * Key updates of the record layer (design.rst, "Key updates"): in a REQ
 * that offers transforms, the client can change keys; in the REP that
 * chose one, the server can too and both will.  Covered by the MAC of
 * TLV AUTH like every TLV of those messages.
 */
#define VISOCK_FEAT_REKEY	BIT_ULL(1)

/* Receive ring sizes: powers of two between these bounds. */
#define VISOCK_RBUF_MIN		(16U * 1024)
#define VISOCK_RBUF_MAX		(8U * 1024 * 1024)

/**
 * struct visock_hs_msg - decoded handshake message
 * @type: enum visock_hs_type
 * @version: version field of the header
 * @present: VISOCK_HSF() bits of the TLVs that were present
 * @features: VISOCK_FEAT_* bits
 * @gid: RoCE GID of the sender's port
 * @qpn: sender's QP number
 * @psn: sender's initial packet sequence number
 * @mtu: path MTU as enum ib_mtu value
 * @rbuf_addr: address of the sender's receive ring (RDMA WRITE target)
 * @rbuf_rkey: remote key of that ring
 * @rbuf_size: ring size in bytes
 * @token: connection token chosen by the sender for its receive side
 * @lgr_id: link group identity
 * @link_id: link identity inside the link group
 * @reason: enum visock_fallback_reason (DECLINE only)
 * @auth_version: TLV AUTH: the sender's authentication version
 * @auth_key_id: TLV AUTH: the key id
 * @auth_nonce: TLV AUTH: the sender's nonce
 * @auth_mac: TLV AUTH: the MAC
 * @auth_mac_off: decoder only: offset of the MAC in the message
 * @xform_n: TLV XFORM: entries of @xform
 * @xform: TLV XFORM: the offered pairs (REQ) or the chosen one (REP)
 */
struct visock_hs_msg {
	u8 type;
	u8 version;
	u32 present;
	u64 features;
	u8 gid[16];
	u32 qpn;
	u32 psn;
	u8 mtu;
	u64 rbuf_addr;
	u32 rbuf_rkey;
	u32 rbuf_size;
	u32 token;
	u32 lgr_id;
	u32 link_id;
	u32 reason;
	u8 auth_version;
	u32 auth_key_id;
	u8 auth_nonce[VISOCK_AUTH_NONCE_LEN];
	u8 auth_mac[VISOCK_AUTH_MAC_LEN];
	u16 auth_mac_off;
	u8 xform_n;
	u8 xform[VISOCK_XFORM_OFFER_MAX];
};

int visock_hs_encode(const struct visock_hs_msg *m, u8 *buf,
		     unsigned int buflen);
int visock_hs_msg_len(const u8 *buf, unsigned int len);
int visock_hs_decode(const u8 *buf, unsigned int len,
		     struct visock_hs_msg *m);
const char *visock_hs_type_name(unsigned int type);

/* ------------------------------------------------------------------ */
/* Receive ring size classes                                           */
/* ------------------------------------------------------------------ */

#define VISOCK_SIZECLASS_MIN_SHIFT	14	/* 16 KiB */
#define VISOCK_SIZECLASS_COUNT		10	/* 16 KiB .. 8 MiB */

int visock_sizeclass_for(u32 bytes);
u32 visock_sizeclass_bytes(unsigned int cls);

/* ------------------------------------------------------------------ */
/* Ring cursors                                                        */
/* ------------------------------------------------------------------ */

/**
 * struct visock_cursor - position in a ring buffer
 * @wrap: number of times the position wrapped around the ring (mod 2^16)
 * @count: offset inside the ring, 0 <= count < ring size
 */
struct visock_cursor {
	u16 wrap;
	u32 count;
};

void visock_cursor_add(struct visock_cursor *c, u32 ring, u32 bytes);
s64 visock_cursor_diff(u32 ring, const struct visock_cursor *old,
		       const struct visock_cursor *new);
bool visock_cursor_valid(u32 ring, const struct visock_cursor *c);
u32 visock_ring_used(u32 ring, const struct visock_cursor *prod,
		     const struct visock_cursor *cons);
/*
 * Receive rings of at least this size release ring space in batches of
 * three quarters of the ring (visock_cons_update_due()).  A local
 * policy, not part of the wire format.
 */
#define VISOCK_CONS_BATCH_RING	(512U * 1024)

bool visock_cons_update_due(u32 ring, u32 unconfirmed, u32 used,
			    bool peer_blocked);
u32 visock_tx_wake_space(u32 ring);
u32 visock_tx_need(u32 ring, u64 left);

/* ------------------------------------------------------------------ */
/* Data path: cursor messages (CDC) and immediate data                */
/* ------------------------------------------------------------------ */

/*
 * A cursor message is an RDMA SEND of exactly VISOCK_CDC_LEN bytes:
 *
 *    0  u8     type       VISOCK_CDC_TYPE
 *    1  u8     version    VISOCK_CDC_VERSION
 *    2  u8     flags      VISOCK_CDC_F_*
 *    3  u8     reserved   0
 *    4  __be32 token      the receiver's connection token
 *    8  __be32 seq        sequence number, +1 per message, from 1
 *   12  __be16 prod wrap  sender's producer cursor: bytes written to the
 *   14  __be16 cons wrap  receiver's ring; consumer cursor: bytes the
 *   16  __be32 prod count sender consumed of its own ring
 *   20  __be32 cons count
 *   24  __be16 credits    receive requests the sender reposted since its
 *                         last message (the receiver may post as many
 *                         more SENDs / WRITEs with immediate)
 *   26  6 bytes reserved  0
 *
 * Data moves with RDMA WRITE WITH IMMEDIATE; the 32-bit immediate is
 *
 *   bits 31..20  index     low VISOCK_TOKEN_IDX_BITS of the receiver's
 *                          token: names the connection on the shared QP
 *   bits 19..16  credits   returned as in a cursor message
 *   bits 15..0   bytes - 1 bytes this transfer appended to the ring
 *                          (1 .. VISOCK_IMM_LEN_MAX)
 *
 * A larger transfer is split into several work requests.
 *
 * Tokens.  Connections of a link group share its queue pairs; a token
 * (TLV TOKEN of the handshake) names one connection on the receiver's
 * QP: the low VISOCK_TOKEN_IDX_BITS are a slot index unique on that QP,
 * the rest random, so that a cursor message for a connection that ended
 * (stale token) is recognised and dropped.  An index is reused only
 * after the peer said it will write nothing more for the old connection
 * (closed or abort flag), or never if it did not.
 *
 * A link message is a SEND of VISOCK_CDC_LEN bytes with type
 * VISOCK_LINK_MSG_TYPE, version VISOCK_CDC_VERSION, token 0 and a
 * VISOCK_LINK_MSG_* code in the flags byte; it concerns the QP itself:
 *
 *   VISOCK_LINK_MSG_DELETE  the sender is about to destroy its end of
 *                           this QP (idle); the receiver takes no new
 *                           connections on it and destroys its end
 *   VISOCK_LINK_MSG_KEEPALIVE  nothing: the sender learns from the
 *                           transport's acknowledgment (or its absence)
 *                           whether the peer is still there
 *
 * Receivers ignore link messages with codes they do not know.
 */
#define VISOCK_CDC_LEN		32
#define VISOCK_CDC_TYPE		0xc5
#define VISOCK_CDC_VERSION	1
#define VISOCK_LINK_MSG_TYPE	0xc6
#define VISOCK_LINK_MSG_DELETE	0x01
#define VISOCK_LINK_MSG_KEEPALIVE	0x02

#define VISOCK_CDC_F_WRITE_BLOCKED	0x01	/* sender waits for space */
#define VISOCK_CDC_F_DONE_WRITING	0x02	/* no data after prod */
#define VISOCK_CDC_F_CLOSED		0x04	/* sender closed the socket */
#define VISOCK_CDC_F_ABORT		0x08	/* connection reset */
#define VISOCK_CDC_F_ALL		0x0f

#define VISOCK_TOKEN_IDX_BITS	12
#define VISOCK_TOKEN_IDX_MASK	((1U << VISOCK_TOKEN_IDX_BITS) - 1)
#define VISOCK_IMM_LEN_MAX	(64U * 1024)
#define VISOCK_IMM_CREDITS_MAX	0xfU

/**
 * struct visock_cdc - decoded cursor message
 * @token: connection token of the receiver
 * @seq: sequence number
 * @prod: producer cursor of the sender (its writes into our ring)
 * @cons: consumer cursor of the sender (its reads from its own ring)
 * @credits: receive requests returned
 * @flags: VISOCK_CDC_F_* bits
 */
struct visock_cdc {
	u32 token;
	u32 seq;
	struct visock_cursor prod;
	struct visock_cursor cons;
	u16 credits;
	u8 flags;
};

int visock_cdc_encode(const struct visock_cdc *m, u8 *buf,
		      unsigned int buflen);
int visock_cdc_decode(const u8 *buf, unsigned int len, struct visock_cdc *m);
bool visock_cdc_seq_after(u32 seq, u32 last);
int visock_imm_encode(u32 idx, u32 bytes, u32 credits, u32 *imm);
void visock_imm_decode(u32 imm, u32 *idx, u32 *bytes, u32 *credits);
int visock_link_msg_encode(u8 code, u8 *buf, unsigned int buflen);
int visock_ctl_peek(const u8 *buf, unsigned int len, u8 *type, u32 *val);

/*
 * A switch reply answers the SWITCH message of a lazy connection
 * (visock/lazy-switch.rst).  It is a SEND of VISOCK_CDC_LEN bytes on the
 * queue pair the SWITCH named, addressed like a cursor message with the
 * initiator's token, and uses the first of the receive requests the
 * initiator posted for that token:
 *
 *    0  u8     type       VISOCK_SWREP_TYPE
 *    1  u8     version    VISOCK_CDC_VERSION
 *    2  u8     flags      VISOCK_SWREP_F_*
 *    3  u8     class      size class of the responder's ring (accepted)
 *    4  __be32 token      the initiator's token (the receiver's)
 *    8  __be32 rtoken     the responder's token (accepted), index != 0
 *   12  __be64 addr       the responder's ring (accepted)
 *   20  __be32 rkey       its remote key (accepted)
 *   24  __be32 pos        low 32 bits of the responder's switch position:
 *                         the stream bytes it sent over TCP (accepted)
 *   28  __be32 reason     enum visock_fallback_reason (declined); tag
 *                         (accepted with VISOCK_SWREP_F_AUTH), else 0
 *
 * Accepted: VISOCK_SWREP_F_ACCEPT, reason 0.  Declined: neither
 * VISOCK_SWREP_F_ACCEPT nor another flag, a nonzero reason, every other
 * field 0.  An accepted reply to a SWITCH whose MAC the responder
 * verified has VISOCK_SWREP_F_AUTH and, in place of the reason, the
 * first VISOCK_SWREP_TAG_LEN bytes of the MAC of the reply
 * (visock_auth.c); only a SWITCH with TLV AUTH gets such a reply.
 */
#define VISOCK_SWREP_TYPE	0xc7
#define VISOCK_SWREP_F_ACCEPT	0x01	/* switched: the fields are valid */
#define VISOCK_SWREP_F_OWN_REQ	0x02	/* our SWITCH follows our byte L - 1 */
#define VISOCK_SWREP_F_DONE	0x04	/* we shut our sending side at pos */
#define VISOCK_SWREP_F_AUTH	0x08	/* the SWITCH's MAC verified: tag */
#define VISOCK_SWREP_F_ALL	0x0f
#define VISOCK_SWREP_TAG_OFF	28
#define VISOCK_SWREP_TAG_LEN	4

/**
 * struct visock_swrep - decoded switch reply
 * @token: the initiator's token
 * @flags: VISOCK_SWREP_F_* bits
 * @rbuf_class: size class of the responder's ring (visock_sizeclass_bytes())
 * @rtoken: the responder's token
 * @rbuf_addr: address of the responder's ring
 * @rbuf_rkey: its remote key
 * @pos: low 32 bits of the responder's switch position
 * @reason: enum visock_fallback_reason of a decline
 * @tag: the truncated MAC of an authenticated reply (VISOCK_SWREP_F_AUTH),
 *	the bytes at VISOCK_SWREP_TAG_OFF as a big-endian number
 */
struct visock_swrep {
	u32 token;
	u8 flags;
	u8 rbuf_class;
	u32 rtoken;
	u64 rbuf_addr;
	u32 rbuf_rkey;
	u32 pos;
	u32 reason;
	u32 tag;
};

int visock_swrep_encode(const struct visock_swrep *m, u8 *buf,
			unsigned int buflen);
int visock_swrep_decode(const u8 *buf, unsigned int len,
			struct visock_swrep *m);
u64 visock_switch_pos(u64 near, u32 low);

/* ------------------------------------------------------------------ */
/* Failover to TCP                                                     */
/* ------------------------------------------------------------------ */

/*
 * When the queue pair of a connection fails, each side sends one failover
 * message on the internal TCP connection (which carries nothing else
 * after the handshake) and the stream continues over TCP:
 *
 *    0  u8     type       VISOCK_FO_TYPE
 *    1  u8     version    VISOCK_FO_VERSION
 *    2  2 bytes reserved  0
 *    4  __be32 magic      VISOCK_FO_MAGIC
 *    8  __be64 rx_pos     stream bytes the sender received over RDMA
 *
 * The receiver resends over TCP everything from rx_pos on.
 */
#define VISOCK_FO_LEN		16
#define VISOCK_FO_TYPE		0xf0
#define VISOCK_FO_VERSION	1
#define VISOCK_FO_MAGIC		0x56534b46	/* "VSKF" */

void visock_fo_encode(u64 rx_pos, u8 *buf);
int visock_fo_decode(const u8 *buf, unsigned int len, u64 *rx_pos);

#endif /* _NET_VISOCK_WIRE_H */
