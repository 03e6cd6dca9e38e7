// SPDX-License-Identifier: GPL-2.0
/*
 * Hand-written visock handshake messages; see hsmsg.h.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <sys/random.h>
#include <sys/socket.h>

#include "harness.h"
#include "hsmsg.h"

void hm_start(struct hmsg *m, uint8_t type, uint8_t version)
{
	memset(m, 0, sizeof(*m));
	put32(m->b, HS_MAGIC);
	m->b[4] = type;
	m->b[5] = version;
	m->len = HS_HDR_LEN;
}

void hm_tlv_raw(struct hmsg *m, uint16_t type, uint16_t hlen,
		const void *val, uint16_t vlen)
{
	put16(m->b + m->len, type);
	put16(m->b + m->len + 2, hlen);
	memcpy(m->b + m->len + 4, val, vlen);
	m->len += 4 + vlen;
}

void hm_tlv(struct hmsg *m, uint16_t type, const void *val, uint16_t vlen)
{
	hm_tlv_raw(m, type, vlen, val, vlen);
}

void hm_tlv32(struct hmsg *m, uint16_t type, uint32_t v)
{
	uint8_t b[4];

	put32(b, v);
	hm_tlv(m, type, b, 4);
}

void hm_end(struct hmsg *m)
{
	put16(m->b + 6, (uint16_t)m->len);
}

void hm_setup_valid(struct hmsg *m, uint8_t type, const struct hparams *p)
{
	uint8_t v[16];

	hm_start(m, type, HS_VERSION);
	put64(v, p->features);
	hm_tlv(m, TLV_FEATURES, v, 8);
	hm_tlv(m, TLV_GID, p->gid, 16);
	hm_tlv32(m, TLV_QPN, p->qpn);
	hm_tlv32(m, TLV_PSN, p->psn);
	hm_tlv(m, TLV_MTU, &p->mtu, 1);
	put64(v, p->rbuf_addr);
	put32(v + 8, p->rbuf_rkey);
	put32(v + 12, p->rbuf_size);
	hm_tlv(m, TLV_RBUF, v, 16);
	hm_tlv32(m, TLV_TOKEN, p->token);
	put32(v, p->lgr_id);
	put32(v + 4, p->link_id);
	hm_tlv(m, TLV_LINK, v, 8);
	hm_end(m);
}

void hm_confirm(struct hmsg *m, uint32_t token)
{
	hm_start(m, HS_CONFIRM, HS_VERSION);
	hm_tlv32(m, TLV_TOKEN, token);
	hm_end(m);
}

void hm_gid_of(const struct in_addr *ip, uint8_t *gid)
{
	memset(gid, 0, 16);
	gid[10] = 0xff;
	gid[11] = 0xff;
	memcpy(gid + 12, ip, 4);
}

void hm_local_gid(int fd, uint8_t *gid)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);

	vt_try(getsockname(fd, (struct sockaddr *)&sin, &len), "getsockname");
	vt_assert(sin.sin_family == AF_INET, "family %d, not IPv4",
		  sin.sin_family);
	hm_gid_of(&sin.sin_addr, gid);
}

uint32_t hm_rand32(void)
{
	uint32_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint32_t)getpid() * 2654435761u;
	return v;
}
