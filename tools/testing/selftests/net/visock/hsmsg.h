/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock's handshake messages as the tests write them by hand (with the
 * debugfs raw_handshake hook, the application speaks the handshake):
 * the wire format, an encoder, and the values a made-up peer puts in.
 */
#ifndef VISOCK_SELFTEST_HSMSG_H
#define VISOCK_SELFTEST_HSMSG_H

#include <stddef.h>
#include <stdint.h>

#include <netinet/in.h>

/* ---- the wire format, as documented ---- */

#define HS_MAGIC	0x56534b48u	/* "VSKH" */
#define HS_HDR_LEN	8
#define HS_MAX_LEN	512
#define HS_VERSION	1

enum {
	HS_REQ = 1,
	HS_REP = 2,
	HS_CONFIRM = 3,
	HS_DECLINE = 4,
	HS_SWITCH = 5,		/* lazy start: the move to RDMA */
};

enum {
	TLV_FEATURES = 1,
	TLV_GID = 2,
	TLV_QPN = 3,
	TLV_PSN = 4,
	TLV_MTU = 5,
	TLV_RBUF = 6,
	TLV_TOKEN = 7,
	TLV_LINK = 8,
	TLV_REASON = 9,
};

/* Big-endian fields. */
static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static inline void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

static inline void put64(uint8_t *p, uint64_t v)
{
	put32(p, v >> 32);
	put32(p + 4, v & 0xffffffff);
}

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static inline uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

/* ---- encoder ---- */

/* A message being written; room for more than HS_MAX_LEN on purpose. */
struct hmsg {
	uint8_t b[1024];
	size_t len;
};

/* Start a message: header with @type and @version, length still 0. */
void hm_start(struct hmsg *m, uint8_t type, uint8_t version);
/* Append a TLV whose header says @hlen but that carries @vlen bytes. */
void hm_tlv_raw(struct hmsg *m, uint16_t type, uint16_t hlen,
		const void *val, uint16_t vlen);
void hm_tlv(struct hmsg *m, uint16_t type, const void *val, uint16_t vlen);
void hm_tlv32(struct hmsg *m, uint16_t type, uint32_t v);
/* Set the length field to the bytes written so far. */
void hm_end(struct hmsg *m);

/* What a REQ, REP or SWITCH describes. */
struct hparams {
	uint8_t gid[16];
	uint64_t features;
	uint32_t qpn;
	uint32_t psn;
	uint8_t mtu;
	uint64_t rbuf_addr;
	uint32_t rbuf_rkey;
	uint32_t rbuf_size;
	uint32_t token;
	uint32_t lgr_id;
	uint32_t link_id;
};

/* A REQ, REP or SWITCH with every TLV a setup message needs, in order. */
void hm_setup_valid(struct hmsg *m, uint8_t type, const struct hparams *p);
/* A CONFIRM of @token. */
void hm_confirm(struct hmsg *m, uint32_t token);

/* ---- a made-up peer ---- */

/* The RoCEv2 GID of IPv4 address @ip (::ffff:a.b.c.d). */
void hm_gid_of(const struct in_addr *ip, uint8_t *gid);
/* The GID of IPv4 socket @fd's local address; fails the test otherwise. */
void hm_local_gid(int fd, uint8_t *gid);
/* Random 32 bits, for QP numbers, PSNs, keys and tokens. */
uint32_t hm_rand32(void);

#endif /* VISOCK_SELFTEST_HSMSG_H */
