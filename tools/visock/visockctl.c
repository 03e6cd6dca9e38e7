// SPDX-License-Identifier: GPL-2.0
/*
 * visockctl - inspect and control visock (AF_VISOCK) in a network namespace.
 *
 *   visockctl [--netns NAME] [--json] COMMAND ...
 *   visockctl sockets [-a|-l] [--rdma|--tcp] [--ino N] [FILTER...]
 *   visockctl stats [--reset]
 *   visockctl links | peers
 *   visockctl devices
 *   visockctl monitor
 *   visockctl enable | disable
 *   visockctl policy list | flush | default [allow|deny]
 *   visockctl policy add [index N] allow|deny [to PREFIX] [port P[-Q]]
 *   visockctl policy del index N | allow|deny [to PREFIX] [port P[-Q]]
 *
 * Sockets come from the kernel's sock_diag (NETLINK_SOCK_DIAG, family
 * AF_VISOCK); links, statistics, devices, events, the switch and the
 * destination policy from the "visock" generic netlink family.  Plain
 * netlink, no library: it runs wherever the kernel module does.  See
 * visockctl(8).
 */
#define _GNU_SOURCE	/* setns() */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/visock.h>

#define BUF_SIZE	(64 * 1024)
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* Exit codes: 0 ok, 1 error, 2 usage, 3 module not loaded. */
#define EXIT_USAGE	2
#define EXIT_NOMOD	3

static bool json;
static const char *prog = "visockctl";

static void die(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

static void die_nomod(void)
{
	if (access("/sys/module/visock", F_OK))
		die(EXIT_NOMOD, "the visock kernel module is not loaded (modprobe visock)");
	die(EXIT_NOMOD, "the visock kernel module does not offer this interface (older module?)");
}

/* ---- netlink plumbing ---- */

struct nl {
	int fd;
	int proto;
	uint32_t seq;
};

/* The kernel's message of the last error (extended ACK), or "". */
static char nl_errmsg[256];

static void nl_open(struct nl *nl, int proto)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int one = 1;

	nl->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, proto);
	if (nl->fd < 0)
		die(1, "netlink socket: %s", strerror(errno));
	if (bind(nl->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die(1, "netlink bind: %s", strerror(errno));
	/* Best effort: only the error messages depend on it. */
	setsockopt(nl->fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	nl->proto = proto;
	nl->seq = (uint32_t)getpid() ^ 0x5653;
}

static void nl_send(struct nl *nl, struct nlmsghdr *nlh)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };

	nlh->nlmsg_seq = ++nl->seq;
	if (sendto(nl->fd, nlh, nlh->nlmsg_len, 0, (struct sockaddr *)&sa,
		   sizeof(sa)) < 0)
		die(1, "netlink send: %s", strerror(errno));
}

typedef void (*nl_cb)(const struct nlmsghdr *nlh, void *arg);

static void nl_ack_msg(const struct nlmsghdr *nlh,
		       const struct nlmsgerr *e);

/*
 * Receive the answer to the last request: call @cb for every data
 * message until NLMSG_DONE or the ACK.  Returns 0 or a negative errno.
 */
static int nl_recv(struct nl *nl, nl_cb cb, void *arg)
{
	static uint64_t buf[BUF_SIZE / 8];
	struct nlmsghdr *nlh;
	ssize_t n;

	for (;;) {
		n = recv(nl->fd, buf, sizeof(buf), 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die(1, "netlink receive: %s", strerror(errno));
		}
		for (nlh = (struct nlmsghdr *)buf; NLMSG_OK(nlh, (size_t)n);
		     nlh = NLMSG_NEXT(nlh, n)) {
			if (nlh->nlmsg_seq != nl->seq)
				continue;
			if (nlh->nlmsg_type == NLMSG_DONE)
				return 0;
			if (nlh->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(nlh);

				nl_ack_msg(nlh, e);
				return e->error;
			}
			if (cb)
				cb(nlh, arg);
			if (!(nlh->nlmsg_flags & NLM_F_MULTI))
				return 0;
		}
	}
}

static struct nlattr *nla_put(struct nlmsghdr *nlh, int type, const void *data,
			      int len)
{
	struct nlattr *a = (struct nlattr *)((char *)nlh +
					     NLMSG_ALIGN(nlh->nlmsg_len));

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	if (len)
		memcpy((char *)a + NLA_HDRLEN, data, len);
	nlh->nlmsg_len = NLMSG_ALIGN(nlh->nlmsg_len) + NLA_ALIGN(a->nla_len);
	return a;
}

static bool nla_ok(const struct nlattr *a, int rem)
{
	return rem >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN &&
	       a->nla_len <= rem;
}

static const struct nlattr *nla_next(const struct nlattr *a, int *rem)
{
	*rem -= NLA_ALIGN(a->nla_len);
	return (const struct nlattr *)((const char *)a + NLA_ALIGN(a->nla_len));
}

/* Index the attributes in [@data, @data + @len) by type (last wins). */
static void nla_parse(const struct nlattr **tb, int max, const void *data,
		      int len)
{
	const struct nlattr *a = data;

	memset(tb, 0, sizeof(*tb) * (max + 1));
	for (; nla_ok(a, len); a = nla_next(a, &len)) {
		int type = a->nla_type & NLA_TYPE_MASK;

		if (type <= max)
			tb[type] = a;
	}
}

static const void *nla_data(const struct nlattr *a)
{
	return (const char *)a + NLA_HDRLEN;
}

static int nla_len(const struct nlattr *a)
{
	return a->nla_len - NLA_HDRLEN;
}

static uint64_t nla_u64(const struct nlattr *a)
{
	uint64_t v = 0;

	if (a && nla_len(a) >= 8)
		memcpy(&v, nla_data(a), 8);
	return v;
}

static uint32_t nla_u32(const struct nlattr *a)
{
	uint32_t v = 0;

	if (a && nla_len(a) >= 4)
		memcpy(&v, nla_data(a), 4);
	return v;
}

static uint8_t nla_u8(const struct nlattr *a)
{
	return a && nla_len(a) >= 1 ? *(const uint8_t *)nla_data(a) : 0;
}

/* Keep the NLMSGERR_ATTR_MSG of an error ACK in nl_errmsg. */
static void nl_ack_msg(const struct nlmsghdr *nlh, const struct nlmsgerr *e)
{
	const struct nlattr *a;
	size_t off;
	int rem;

	nl_errmsg[0] = '\0';
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS) || !e->error)
		return;
	off = sizeof(*e);
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - sizeof(e->msg);
	if (NLMSG_LENGTH(off) > nlh->nlmsg_len)
		return;
	a = (const struct nlattr *)((const char *)e + NLMSG_ALIGN(off));
	rem = nlh->nlmsg_len - NLMSG_LENGTH(NLMSG_ALIGN(off));
	for (; nla_ok(a, rem); a = nla_next(a, &rem)) {
		if ((a->nla_type & NLA_TYPE_MASK) == NLMSGERR_ATTR_MSG) {
			snprintf(nl_errmsg, sizeof(nl_errmsg), "%.*s",
				 nla_len(a), (const char *)nla_data(a));
			return;
		}
	}
}

/* ---- generic netlink ---- */

/* Index the attributes after the generic netlink header of @nlh. */
static void genl_parse(const struct nlmsghdr *nlh, const struct nlattr **tb,
		       int max)
{
	const struct genlmsghdr *g = NLMSG_DATA(nlh);

	nla_parse(tb, max, (const char *)g + GENL_HDRLEN,
		  (int)nlh->nlmsg_len - (int)NLMSG_LENGTH(GENL_HDRLEN));
}

static int genl_family_id(struct nl *nl);

struct genl_req {
	struct nlmsghdr nlh;
	struct genlmsghdr g;
	char attrs[256];
};

static void genl_init(struct genl_req *r, int family, int cmd, int flags)
{
	memset(r, 0, sizeof(*r));
	r->nlh.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	r->nlh.nlmsg_type = family;
	r->nlh.nlmsg_flags = NLM_F_REQUEST | flags;
	r->g.cmd = cmd;
	r->g.version = VISOCK_GENL_VERSION;
}

/* Id of the "events" multicast group, from the family lookup. */
static int events_group = -1;

static void family_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct nlattr *tb[CTRL_ATTR_MAX + 1];
	const struct nlattr *gt[CTRL_ATTR_MCAST_GRP_MAX + 1];
	const struct nlattr *a;
	int rem;

	genl_parse(nlh, tb, CTRL_ATTR_MAX);
	if (tb[CTRL_ATTR_FAMILY_ID])
		*(int *)arg = *(const uint16_t *)nla_data(tb[CTRL_ATTR_FAMILY_ID]);
	if (!tb[CTRL_ATTR_MCAST_GROUPS])
		return;
	a = nla_data(tb[CTRL_ATTR_MCAST_GROUPS]);
	rem = nla_len(tb[CTRL_ATTR_MCAST_GROUPS]);
	for (; nla_ok(a, rem); a = nla_next(a, &rem)) {
		nla_parse(gt, CTRL_ATTR_MCAST_GRP_MAX, nla_data(a), nla_len(a));
		if (gt[CTRL_ATTR_MCAST_GRP_NAME] && gt[CTRL_ATTR_MCAST_GRP_ID] &&
		    nla_len(gt[CTRL_ATTR_MCAST_GRP_NAME]) ==
		    sizeof(VISOCK_GENL_MCGRP_EVENTS) &&
		    !memcmp(nla_data(gt[CTRL_ATTR_MCAST_GRP_NAME]),
			    VISOCK_GENL_MCGRP_EVENTS,
			    sizeof(VISOCK_GENL_MCGRP_EVENTS)))
			events_group = (int)nla_u32(gt[CTRL_ATTR_MCAST_GRP_ID]);
	}
}

static int genl_family_id(struct nl *nl)
{
	struct genl_req r;
	int id = -1, err;

	genl_init(&r, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 0);
	r.g.version = 1;
	nla_put(&r.nlh, CTRL_ATTR_FAMILY_NAME, VISOCK_GENL_NAME,
		sizeof(VISOCK_GENL_NAME));
	nl_send(nl, &r.nlh);
	err = nl_recv(nl, family_cb, &id);
	if (err == -ENOENT || (!err && id < 0))
		die_nomod();
	if (err)
		die(1, "looking up the genetlink family: %s", strerror(-err));
	return id;
}

static int genl_open(struct nl *nl)
{
	nl_open(nl, NETLINK_GENERIC);
	return genl_family_id(nl);
}

static void genl_simple(int cmd, const void *attr, int type, int len,
			const char *what)
{
	struct genl_req r;
	struct nl nl;
	int fam, err;

	fam = genl_open(&nl);
	genl_init(&r, fam, cmd, NLM_F_ACK);
	if (attr)
		nla_put(&r.nlh, type, attr, len);
	nl_send(&nl, &r.nlh);
	err = nl_recv(&nl, NULL, NULL);
	if (err == -EPERM)
		die(1, "%s: permission denied (needs CAP_NET_ADMIN)", what);
	if (err)
		die(1, "%s: %s", what, strerror(-err));
	close(nl.fd);
}

/* ---- names ---- */

static const char *const fb_names[] = {
	"none", "disabled", "peer_no_visock", "no_device", "peer_no_device",
	"version", "bad_msg", "timeout", "nomem", "peer_decline", "qp_setup",
	"buf_exhausted", "device_gone", "syncookie", "io", "policy",
	"link_busy", "link_gone", "qp_limit",
};

static const char *fb_name(unsigned int r)
{
	return r < ARRAY_SIZE(fb_names) ? fb_names[r] : "unknown";
}

static const char *mode_name(unsigned int m)
{
	static const char *const n[] = { "init", "handshake", "rdma", "tcp" };

	return m < ARRAY_SIZE(n) ? n[m] : "unknown";
}

static const char *state_name(unsigned int s)
{
	static const char *const n[] = {
		"UNKNOWN", "ESTAB", "SYN-SENT", "SYN-RECV", "FIN-WAIT-1",
		"FIN-WAIT-2", "TIME-WAIT", "UNCONN", "CLOSE-WAIT", "LAST-ACK",
		"LISTEN", "CLOSING",
	};

	return s < ARRAY_SIZE(n) ? n[s] : "UNKNOWN";
}

static const char *link_state_name(unsigned int s)
{
	static const char *const n[] = { "new", "init", "up", "failed", "dead" };

	return s < ARRAY_SIZE(n) ? n[s] : "unknown";
}

static const char *port_state_name(unsigned int s)
{
	static const char *const n[] = {
		"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER",
	};

	return s < ARRAY_SIZE(n) ? n[s] : "UNKNOWN";
}

static void fmt_addr(char *buf, size_t len, int family, const uint32_t *a,
		     uint16_t port_be)
{
	char ip[INET6_ADDRSTRLEN];

	if (family == AF_INET6) {
		inet_ntop(AF_INET6, a, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, ntohs(port_be));
	} else {
		inet_ntop(AF_INET, a, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, ntohs(port_be));
	}
}

/* @in as the inside of a JSON string (names come from the kernel). */
static const char *json_esc(const char *in)
{
	static char bufs[2][256];
	static int which;
	char *out = bufs[which ^= 1];
	size_t o = 0;

	for (; *in && o + 7 < sizeof(bufs[0]); in++) {
		unsigned char ch = *in;

		if (ch == '"' || ch == '\\') {
			out[o++] = '\\';
			out[o++] = ch;
		} else if (ch < 0x20) {
			o += snprintf(out + o, 7, "\\u%04x", ch);
		} else {
			out[o++] = ch;
		}
	}
	out[o] = '\0';
	return out;
}

static void fmt_gid(char *buf, size_t len, const uint8_t *gid)
{
	inet_ntop(AF_INET6, gid, buf, len);
}

/* JSON members: "key":value, with a comma before all but the first. */
static void json_key(bool *first, const char *key)
{
	printf("%s\"%s\":", *first ? "" : ",", key);
	*first = false;
}

static void json_u64(bool *first, const char *key, uint64_t val)
{
	json_key(first, key);
	printf("%" PRIu64, val);
}

static void json_int(bool *first, const char *key, int val)
{
	json_key(first, key);
	printf("%d", val);
}

static void json_string(bool *first, const char *key, const char *val)
{
	json_key(first, key);
	printf("\"%s\"", json_esc(val));
}

/* ---- sockets (sock_diag) ---- */

/* An address with a prefix length, from "src" and "dst" filters. */
struct addr_filter {
	bool set;
	int family;		/* AF_INET or AF_INET6 */
	uint8_t addr[16];
	int plen;
};

struct sock_filter_opts {
	int port;		/* local or peer port */
	int sport, dport;
	struct addr_filter src, dst;
	int reason;		/* fallback reason, -1: any */
	bool header_done;
	unsigned int count;
};

/* ADDR or ADDR/PLEN, IPv4 or IPv6. */
static void parse_addr_filter(struct addr_filter *f, const char *arg)
{
	char buf[INET6_ADDRSTRLEN + 8], *slash, *end;
	int max;

	snprintf(buf, sizeof(buf), "%s", arg);
	slash = strchr(buf, '/');
	if (slash)
		*slash++ = '\0';
	memset(f, 0, sizeof(*f));
	if (inet_pton(AF_INET, buf, f->addr) == 1)
		f->family = AF_INET;
	else if (inet_pton(AF_INET6, buf, f->addr) == 1)
		f->family = AF_INET6;
	else
		die(EXIT_USAGE, "bad address '%s'", arg);
	max = f->family == AF_INET ? 32 : 128;
	f->plen = max;
	if (slash) {
		f->plen = (int)strtol(slash, &end, 10);
		if (!*slash || *end || f->plen < 0 || f->plen > max)
			die(EXIT_USAGE, "bad prefix length in '%s'", arg);
	}
	f->set = true;
}

static bool addr_match(const struct addr_filter *f, int family,
		       const uint32_t *a)
{
	const uint8_t *b = (const uint8_t *)a;
	int full, rest;

	if (!f->set)
		return true;
	if (family != f->family)
		return false;
	full = f->plen / 8;
	rest = f->plen % 8;
	if (memcmp(f->addr, b, full))
		return false;
	return !rest ||
	       !((f->addr[full] ^ b[full]) & (0xff00 >> rest));
}

static int parse_port(const char *arg)
{
	char *end;
	long port = strtol(arg, &end, 10);

	if (!*arg || *end || port <= 0 || port > 65535)
		die(EXIT_USAGE, "bad port '%s'", arg);
	return (int)port;
}

static bool sock_match(const struct visock_diag_msg *m,
		       const struct sock_filter_opts *o)
{
	int sport = ntohs(m->vdiag_sport), dport = ntohs(m->vdiag_dport);

	if (o->port && sport != o->port && dport != o->port)
		return false;
	if ((o->sport && sport != o->sport) || (o->dport && dport != o->dport))
		return false;
	if (o->reason >= 0 && (m->vdiag_mode != VISOCK_MODE_TCP ||
			       m->vdiag_fallback_reason != o->reason))
		return false;
	return addr_match(&o->src, m->vdiag_ip_family, m->vdiag_src) &&
	       addr_match(&o->dst, m->vdiag_ip_family, m->vdiag_dst);
}

static void print_socket(const struct visock_diag_msg *m,
			 const struct visock_info *vi,
			 const struct visock_diag_ring *ring,
			 const struct visock_diag_link *link, bool busy,
			 struct sock_filter_opts *o)
{
	char local[64], peer[64];
	static const struct visock_info none;

	if (!vi)
		vi = &none;
	if (!sock_match(m, o))
		return;
	fmt_addr(local, sizeof(local), m->vdiag_ip_family, m->vdiag_src,
		 m->vdiag_sport);
	fmt_addr(peer, sizeof(peer), m->vdiag_ip_family, m->vdiag_dst,
		 m->vdiag_dport);

	if (json) {
		printf("%s\n  {\"id\":%" PRIu64 ",\"state\":\"%s\","
		       "\"mode\":\"%s\",\"fallback\":\"%s\","
		       "\"family\":\"%s\",\"local\":\"%s\",\"peer\":\"%s\","
		       "\"uid\":%u,\"inode\":%u,\"tcp_state\":\"%s\","
		       "\"version\":%u,\"local_qpn\":%u,\"peer_qpn\":%u,"
		       "\"rbuf_size\":%u,\"peer_rbuf_size\":%u,"
		       "\"link_up\":%s,\"busy\":%s,"
		       "\"rdma_bytes_sent\":%" PRIu64 ","
		       "\"rdma_bytes_rcvd\":%" PRIu64 ","
		       "\"tcp_bytes_sent\":%" PRIu64 ","
		       "\"tcp_bytes_rcvd\":%" PRIu64 ","
		       "\"wr_posted\":%" PRIu64 ",\"wc\":%" PRIu64 ","
		       "\"cursor_msgs_sent\":%" PRIu64 ","
		       "\"cursor_msgs_rcvd\":%" PRIu64 ","
		       "\"tx_ring_full_waits\":%" PRIu64,
		       o->count ? "," : "", (uint64_t)m->vdiag_id,
		       state_name(m->vdiag_state), mode_name(m->vdiag_mode),
		       fb_name(m->vdiag_fallback_reason),
		       m->vdiag_ip_family == AF_INET6 ? "inet6" : "inet",
		       local, peer, m->vdiag_uid, m->vdiag_ino,
		       state_name(m->vdiag_tcp_state), vi->vi_version,
		       vi->vi_local_qpn, vi->vi_peer_qpn, vi->vi_rbuf_size,
		       vi->vi_peer_rbuf_size,
		       vi->vi_flags & VISOCK_INFO_F_LINK_UP ? "true" : "false",
		       busy ? "true" : "false",
		       (uint64_t)vi->vi_rdma_bytes_sent,
		       (uint64_t)vi->vi_rdma_bytes_rcvd,
		       (uint64_t)vi->vi_tcp_bytes_sent,
		       (uint64_t)vi->vi_tcp_bytes_rcvd,
		       (uint64_t)vi->vi_rdma_wr_posted,
		       (uint64_t)vi->vi_rdma_wc, (uint64_t)vi->vi_cdc_sent,
		       (uint64_t)vi->vi_cdc_rcvd, (uint64_t)vi->vi_tx_waits);
		if (ring)
			printf(",\"rx_ring_size\":%u,\"rx_ring_used\":%u,"
			       "\"tx_ring_size\":%u,\"tx_ring_used\":%u,"
			       "\"tx_unsent\":%u,\"credits\":%u",
			       ring->vdr_rx_size, ring->vdr_rx_used,
			       ring->vdr_tx_size, ring->vdr_tx_used,
			       ring->vdr_tx_unsent, ring->vdr_credits);
		if (link)
			printf(",\"device\":\"%s\",\"link_state\":\"%s\"",
			       json_esc(link->vdl_dev),
			       link_state_name(link->vdl_state));
		printf("}");
	} else {
		char rx[32] = "-", tx[32] = "-", mode[32];
		uint64_t sent, rcvd;

		if (!o->header_done)
			printf("%-10s %-20s %-24s %-24s %-6s %-8s %-11s %-11s %-13s %-13s %s\n",
			       "State", "Mode", "Local", "Peer", "Uid",
			       "Inode", "Sent", "Rcvd", "RxRing", "TxRing",
			       "Dev/QPN");
		o->header_done = true;
		if (m->vdiag_mode == VISOCK_MODE_TCP)
			snprintf(mode, sizeof(mode), "tcp(%s)",
				 fb_name(m->vdiag_fallback_reason));
		else
			snprintf(mode, sizeof(mode), "%s",
				 mode_name(m->vdiag_mode));
		if (m->vdiag_mode == VISOCK_MODE_RDMA) {
			sent = vi->vi_rdma_bytes_sent;
			rcvd = vi->vi_rdma_bytes_rcvd;
		} else {
			sent = vi->vi_tcp_bytes_sent;
			rcvd = vi->vi_tcp_bytes_rcvd;
		}
		if (ring) {
			snprintf(rx, sizeof(rx), "%u/%u", ring->vdr_rx_used,
				 ring->vdr_rx_size);
			snprintf(tx, sizeof(tx), "%u/%u", ring->vdr_tx_used,
				 ring->vdr_tx_size);
		}
		printf("%-10s %-20s %-24s %-24s %-6u %-8u %-11" PRIu64
		       " %-11" PRIu64 " %-13s %-13s ",
		       state_name(m->vdiag_state), mode, local, peer,
		       m->vdiag_uid, m->vdiag_ino, sent, rcvd, rx, tx);
		if (link)
			printf("%s/%u\n", link->vdl_dev[0] ? link->vdl_dev : "-",
			       link->vdl_qpn);
		else
			/* Busy: a call held the socket, no details read. */
			printf("%s\n", busy ? "busy" : "-");
	}
	o->count++;
}

static void diag_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct visock_diag_msg *m = NLMSG_DATA(nlh);
	const struct nlattr *tb[VISOCK_DIAG_MAX + 1];
	struct visock_diag_link link;
	struct visock_diag_ring ring;
	struct visock_info vi;
	bool have_vi = false, have_ring = false, have_link = false;

	if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
		return;
	nla_parse(tb, VISOCK_DIAG_MAX, (const char *)m + NLMSG_ALIGN(sizeof(*m)),
		  nlh->nlmsg_len - NLMSG_LENGTH(NLMSG_ALIGN(sizeof(*m))));
	/* Structures only grow: copy what the kernel sent, zero the rest. */
	memset(&vi, 0, sizeof(vi));
	memset(&ring, 0, sizeof(ring));
	memset(&link, 0, sizeof(link));
	if (tb[VISOCK_DIAG_INFO]) {
		memcpy(&vi, nla_data(tb[VISOCK_DIAG_INFO]),
		       (size_t)nla_len(tb[VISOCK_DIAG_INFO]) < sizeof(vi) ?
		       (size_t)nla_len(tb[VISOCK_DIAG_INFO]) : sizeof(vi));
		have_vi = true;
	}
	if (tb[VISOCK_DIAG_RING]) {
		memcpy(&ring, nla_data(tb[VISOCK_DIAG_RING]),
		       (size_t)nla_len(tb[VISOCK_DIAG_RING]) < sizeof(ring) ?
		       (size_t)nla_len(tb[VISOCK_DIAG_RING]) : sizeof(ring));
		have_ring = true;
	}
	if (tb[VISOCK_DIAG_LINK]) {
		memcpy(&link, nla_data(tb[VISOCK_DIAG_LINK]),
		       (size_t)nla_len(tb[VISOCK_DIAG_LINK]) < sizeof(link) ?
		       (size_t)nla_len(tb[VISOCK_DIAG_LINK]) : sizeof(link));
		link.vdl_dev[sizeof(link.vdl_dev) - 1] = 0;
		have_link = true;
	}
	print_socket(m, have_vi ? &vi : NULL, have_ring ? &ring : NULL,
		     have_link ? &link : NULL, !!tb[VISOCK_DIAG_BUSY], arg);
}

static void diag_dump(uint32_t states, uint32_t modes, uint32_t ino,
		      struct sock_filter_opts *o)
{
	struct {
		struct nlmsghdr nlh;
		struct visock_diag_req req;
	} r;
	struct nl nl;
	int err;

	nl_open(&nl, NETLINK_SOCK_DIAG);
	memset(&r, 0, sizeof(r));
	r.nlh.nlmsg_len = sizeof(r);
	r.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	r.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	r.req.sdiag_family = AF_VISOCK;
	r.req.vdiag_states = states;
	r.req.vdiag_modes = modes;
	r.req.vdiag_ino = ino;
	r.req.vdiag_show = VISOCK_SHOW_INFO | VISOCK_SHOW_RING |
			   VISOCK_SHOW_LINK;
	nl_send(&nl, &r.nlh);
	if (json)
		printf("[");
	err = nl_recv(&nl, diag_cb, o);
	if (err == -ENOENT)
		die_nomod();
	if (err)
		die(1, "socket dump: %s", strerror(-err));
	if (json)
		printf("%s]\n", o->count ? "\n" : "");
	else if (!o->count)
		printf("no sockets\n");
	close(nl.fd);
}

/* ---- links and peers (generic netlink) ---- */

/* A socket as the kernel describes it in links and events. */
struct sock_rec {
	uint64_t id;
	uint32_t ino;
	int family;
	uint32_t src[4], dst[4];
	uint16_t sport, dport;	/* host byte order */
	char local[64], peer[64];
};

struct link_rec {
	char dev[64];
	uint32_t port, qpn, peer_qpn;
	unsigned int state;
	uint8_t gid[16], peer_gid[16];
	uint64_t reg_bytes, wr_posted, wc_ok, wc_err;
	struct sock_rec sock;
};

static void nla_bin(const struct nlattr *a, void *out, size_t len)
{
	if (a && (size_t)nla_len(a) == len)
		memcpy(out, nla_data(a), len);
}

static void nla_str(const struct nlattr *a, char *out, size_t len)
{
	size_t n;

	out[0] = '\0';
	if (!a || nla_len(a) < 1)
		return;
	n = (size_t)nla_len(a) < len ? (size_t)nla_len(a) : len;
	memcpy(out, nla_data(a), n);
	out[n - 1] = '\0';
}

static void parse_sock(const struct nlattr *nest, struct sock_rec *r)
{
	const struct nlattr *t[VISOCK_SOCK_A_MAX + 1];

	memset(r, 0, sizeof(*r));
	if (!nest)
		return;
	nla_parse(t, VISOCK_SOCK_A_MAX, nla_data(nest), nla_len(nest));
	r->id = nla_u64(t[VISOCK_SOCK_A_ID]);
	r->ino = nla_u32(t[VISOCK_SOCK_A_INO]);
	r->family = nla_u8(t[VISOCK_SOCK_A_IP_FAMILY]);
	nla_bin(t[VISOCK_SOCK_A_SRC], r->src, sizeof(r->src));
	nla_bin(t[VISOCK_SOCK_A_DST], r->dst, sizeof(r->dst));
	if (t[VISOCK_SOCK_A_SPORT] && nla_len(t[VISOCK_SOCK_A_SPORT]) >= 2)
		memcpy(&r->sport, nla_data(t[VISOCK_SOCK_A_SPORT]), 2);
	if (t[VISOCK_SOCK_A_DPORT] && nla_len(t[VISOCK_SOCK_A_DPORT]) >= 2)
		memcpy(&r->dport, nla_data(t[VISOCK_SOCK_A_DPORT]), 2);
	fmt_addr(r->local, sizeof(r->local), r->family, r->src,
		 htons(r->sport));
	fmt_addr(r->peer, sizeof(r->peer), r->family, r->dst,
		 htons(r->dport));
}

/* VISOCK_LINK_A_* attributes in [@data, @data + @len) */
static void parse_link(const void *data, int len, struct link_rec *r)
{
	const struct nlattr *t[VISOCK_LINK_A_MAX + 1];

	memset(r, 0, sizeof(*r));
	nla_parse(t, VISOCK_LINK_A_MAX, data, len);
	nla_str(t[VISOCK_LINK_A_DEV], r->dev, sizeof(r->dev));
	r->port = nla_u32(t[VISOCK_LINK_A_PORT]);
	r->qpn = nla_u32(t[VISOCK_LINK_A_QPN]);
	r->peer_qpn = nla_u32(t[VISOCK_LINK_A_PEER_QPN]);
	r->state = nla_u8(t[VISOCK_LINK_A_STATE]);
	nla_bin(t[VISOCK_LINK_A_GID], r->gid, sizeof(r->gid));
	nla_bin(t[VISOCK_LINK_A_PEER_GID], r->peer_gid, sizeof(r->peer_gid));
	r->reg_bytes = nla_u64(t[VISOCK_LINK_A_REG_BYTES]);
	r->wr_posted = nla_u64(t[VISOCK_LINK_A_WR_POSTED]);
	r->wc_ok = nla_u64(t[VISOCK_LINK_A_WC_OK]);
	r->wc_err = nla_u64(t[VISOCK_LINK_A_WC_ERR]);
	parse_sock(t[VISOCK_LINK_A_SOCK], &r->sock);
}

struct link_list {
	struct link_rec *v;
	size_t n, cap;
};

static void links_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct nlattr *tb[VISOCK_A_MAX + 1];
	struct link_list *l = arg;

	genl_parse(nlh, tb, VISOCK_A_MAX);
	if (!tb[VISOCK_A_LINK])
		return;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		if (!l->v)
			die(1, "out of memory");
	}
	parse_link(nla_data(tb[VISOCK_A_LINK]), nla_len(tb[VISOCK_A_LINK]),
		   &l->v[l->n++]);
}

static void links_get(struct link_list *l)
{
	struct genl_req r;
	struct nl nl;
	int fam, err;

	memset(l, 0, sizeof(*l));
	fam = genl_open(&nl);
	genl_init(&r, fam, VISOCK_CMD_GET_LINKS, NLM_F_DUMP);
	nl_send(&nl, &r.nlh);
	err = nl_recv(&nl, links_cb, l);
	if (err == -EOPNOTSUPP || err == -EINVAL)
		die_nomod();
	if (err)
		die(1, "link dump: %s", strerror(-err));
	close(nl.fd);
}

static void cmd_links(void)
{
	char gid[INET6_ADDRSTRLEN], pgid[INET6_ADDRSTRLEN], wrwc[48];
	struct link_list l;
	size_t i;

	links_get(&l);
	if (json)
		printf("[");
	for (i = 0; i < l.n; i++) {
		const struct link_rec *k = &l.v[i];

		fmt_gid(gid, sizeof(gid), k->gid);
		fmt_gid(pgid, sizeof(pgid), k->peer_gid);
		if (json) {
			bool f = true;

			printf("%s\n  {", i ? "," : "");
			json_u64(&f, "socket_id", k->sock.id);
			json_u64(&f, "inode", k->sock.ino);
			json_string(&f, "device", k->dev);
			json_u64(&f, "port", k->port);
			json_u64(&f, "qpn", k->qpn);
			json_u64(&f, "peer_qpn", k->peer_qpn);
			json_string(&f, "state", link_state_name(k->state));
			json_string(&f, "gid", gid);
			json_string(&f, "peer_gid", pgid);
			json_string(&f, "local", k->sock.local);
			json_string(&f, "peer", k->sock.peer);
			json_u64(&f, "registered_bytes", k->reg_bytes);
			json_u64(&f, "wr_posted", k->wr_posted);
			json_u64(&f, "wc_ok", k->wc_ok);
			json_u64(&f, "wc_err", k->wc_err);
			printf("}");
			continue;
		}
		if (!i)
			printf("%-8s %-4s %-7s %-8s %-7s %-24s %-24s %-10s %-12s %s\n",
			       "Device", "Port", "QPN", "PeerQPN", "State",
			       "Local", "Peer", "RegBytes", "WR/WC",
			       "PeerGID");
		snprintf(wrwc, sizeof(wrwc), "%" PRIu64 "/%" PRIu64,
			 k->wr_posted, k->wc_ok + k->wc_err);
		printf("%-8s %-4u %-7u %-8u %-7s %-24s %-24s %-10" PRIu64
		       " %-12s %s\n",
		       k->dev[0] ? k->dev : "-", k->port, k->qpn, k->peer_qpn,
		       link_state_name(k->state), k->sock.local, k->sock.peer,
		       k->reg_bytes, wrwc, pgid);
	}
	if (json)
		printf("%s]\n", l.n ? "\n" : "");
	else if (!l.n)
		printf("no links\n");
	free(l.v);
}

static int cmp_peer(const void *a, const void *b)
{
	const struct link_rec *x = a, *y = b;
	int c = memcmp(x->peer_gid, y->peer_gid, sizeof(x->peer_gid));

	return c ? c : (x->qpn > y->qpn) - (x->qpn < y->qpn);
}

/* The links grouped by the peer's GID. */
static void cmd_peers(void)
{
	char pgid[INET6_ADDRSTRLEN], devs[128];
	unsigned int npeers = 0;
	struct link_list l;
	size_t i, j, k;

	links_get(&l);
	if (l.n)
		qsort(l.v, l.n, sizeof(*l.v), cmp_peer);
	if (json)
		printf("[");
	else if (l.n)
		printf("%-40s %-6s %-4s %-12s %-16s %s\n", "PeerGID", "Links",
		       "Up", "RegBytes", "Devices", "QPN/PeerQPN");
	for (i = 0; i < l.n; i = j) {
		uint64_t reg = 0;
		unsigned int up = 0;
		size_t dlen = 0;

		for (j = i; j < l.n && !memcmp(l.v[j].peer_gid, l.v[i].peer_gid,
					       sizeof(l.v[i].peer_gid)); j++) {
			reg += l.v[j].reg_bytes;
			up += l.v[j].state == VISOCK_LINK_STATE_UP;
		}
		devs[0] = '\0';
		for (k = i; k < j; k++) {
			const char *d = l.v[k].dev[0] ? l.v[k].dev : "-";
			char pat[72];

			snprintf(pat, sizeof(pat), ",%s,", d);
			if (dlen && strstr(devs, pat))
				continue;
			dlen += snprintf(devs + dlen, sizeof(devs) - dlen, "%s%s,",
					 dlen ? "" : ",", d);
			if (dlen >= sizeof(devs))
				dlen = sizeof(devs) - 1;
		}
		/* devs is ",a,b,": strip the commas at both ends */
		if (dlen > 1)
			devs[dlen - 1] = '\0';
		fmt_gid(pgid, sizeof(pgid), l.v[i].peer_gid);
		if (json) {
			bool f = true;

			printf("%s\n  {", npeers ? "," : "");
			json_string(&f, "peer_gid", pgid);
			json_u64(&f, "links", j - i);
			json_u64(&f, "links_up", up);
			json_u64(&f, "registered_bytes", reg);
			json_string(&f, "devices", devs[0] ? devs + 1 : "");
			json_key(&f, "qpns");
			printf("[");
			for (k = i; k < j; k++) {
				f = true;
				printf("%s{", k > i ? "," : "");
				json_u64(&f, "qpn", l.v[k].qpn);
				json_u64(&f, "peer_qpn", l.v[k].peer_qpn);
				json_u64(&f, "socket_id", l.v[k].sock.id);
				printf("}");
			}
			printf("]}");
		} else {
			printf("%-40s %-6zu %-4u %-12" PRIu64 " %-16s ", pgid,
			       j - i, up, reg, devs[0] ? devs + 1 : "-");
			for (k = i; k < j; k++)
				printf("%s%u/%u", k > i ? "," : "", l.v[k].qpn,
				       l.v[k].peer_qpn);
			printf("\n");
		}
		npeers++;
	}
	if (json)
		printf("%s]\n", npeers ? "\n" : "");
	else if (!npeers)
		printf("no peers\n");
	free(l.v);
}

/* ---- events ---- */

static const char *event_name(unsigned int t)
{
	static const char *const n[] = {
		"none", "link_up", "link_down", "fallback", "abort",
		"device_add", "device_remove",
	};

	return t < ARRAY_SIZE(n) ? n[t] : "unknown";
}

static void event_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct genlmsghdr *g = NLMSG_DATA(nlh);
	const struct nlattr *tb[VISOCK_A_MAX + 1];
	const struct nlattr *et[VISOCK_EVENT_A_MAX + 1];
	struct link_rec link;
	struct sock_rec sock;
	char dev[64];
	unsigned int type;
	int32_t error = 0;

	(void)arg;
	if (nlh->nlmsg_len < NLMSG_LENGTH(GENL_HDRLEN) ||
	    g->cmd != VISOCK_CMD_EVENT)
		return;
	genl_parse(nlh, tb, VISOCK_A_MAX);
	if (!tb[VISOCK_A_EVENT])
		return;
	nla_parse(et, VISOCK_EVENT_A_MAX, nla_data(tb[VISOCK_A_EVENT]),
		  nla_len(tb[VISOCK_A_EVENT]));
	type = nla_u8(et[VISOCK_EVENT_A_TYPE]);
	nla_str(et[VISOCK_EVENT_A_DEV], dev, sizeof(dev));
	if (et[VISOCK_EVENT_A_ERROR])
		error = (int32_t)nla_u32(et[VISOCK_EVENT_A_ERROR]);
	memset(&link, 0, sizeof(link));
	if (et[VISOCK_EVENT_A_LINK])
		parse_link(nla_data(et[VISOCK_EVENT_A_LINK]),
			   nla_len(et[VISOCK_EVENT_A_LINK]), &link);
	parse_sock(et[VISOCK_EVENT_A_SOCK], &sock);

	if (json) {
		bool f = true;

		printf("{");
		json_string(&f, "event", event_name(type));
		if (dev[0])
			json_string(&f, "device", dev);
		if (et[VISOCK_EVENT_A_REASON])
			json_string(&f, "reason",
				    fb_name(nla_u8(et[VISOCK_EVENT_A_REASON])));
		if (et[VISOCK_EVENT_A_ERROR])
			json_int(&f, "error", error);
		if (et[VISOCK_EVENT_A_LINK]) {
			char gid[INET6_ADDRSTRLEN], pgid[INET6_ADDRSTRLEN];

			fmt_gid(gid, sizeof(gid), link.gid);
			fmt_gid(pgid, sizeof(pgid), link.peer_gid);
			json_u64(&f, "port", link.port);
			json_u64(&f, "qpn", link.qpn);
			json_u64(&f, "peer_qpn", link.peer_qpn);
			json_string(&f, "link_state",
				    link_state_name(link.state));
			json_string(&f, "gid", gid);
			json_string(&f, "peer_gid", pgid);
		}
		if (et[VISOCK_EVENT_A_SOCK]) {
			json_u64(&f, "socket_id", sock.id);
			json_string(&f, "local", sock.local);
			json_string(&f, "peer", sock.peer);
		}
		printf("}\n");
		return;
	}
	printf("%s", event_name(type));
	if (dev[0])
		printf(" dev %s", dev);
	if (et[VISOCK_EVENT_A_LINK])
		printf(" port %u qpn %u peer_qpn %u", link.port, link.qpn,
		       link.peer_qpn);
	if (et[VISOCK_EVENT_A_REASON])
		printf(" reason %s", fb_name(nla_u8(et[VISOCK_EVENT_A_REASON])));
	if (et[VISOCK_EVENT_A_ERROR])
		printf(" error %d (%s)", error, strerror(-error));
	if (et[VISOCK_EVENT_A_SOCK])
		printf(" %s -> %s id %" PRIu64, sock.local, sock.peer, sock.id);
	printf("\n");
}

/* Print events as they come, one per line, until killed. */
static void cmd_monitor(void)
{
	static uint64_t buf[BUF_SIZE / 8];
	struct nlmsghdr *nlh;
	struct nl nl;
	ssize_t n;

	genl_open(&nl);
	if (events_group < 0)
		die_nomod();
	if (setsockopt(nl.fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP,
		       &events_group, sizeof(events_group)) < 0)
		die(1, "joining the events group: %s", strerror(errno));
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (;;) {
		n = recv(nl.fd, buf, sizeof(buf), 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				/* Like ip monitor: say so and go on. */
				fprintf(stderr, "%s: events lost (receive buffer full)\n",
					prog);
				continue;
			}
			die(1, "netlink receive: %s", strerror(errno));
		}
		for (nlh = (struct nlmsghdr *)buf; NLMSG_OK(nlh, (size_t)n);
		     nlh = NLMSG_NEXT(nlh, n))
			event_cb(nlh, NULL);
	}
}

/* ---- namespaces ---- */

/* Run in the named network namespace (ip netns): /run/netns/NAME. */
static void enter_netns(const char *name)
{
	char path[4096];
	int fd;

	if (!*name || strchr(name, '/'))
		snprintf(path, sizeof(path), "%s", name);
	else
		snprintf(path, sizeof(path), "/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die(1, "network namespace '%s': %s: %s", name, path,
		    strerror(errno));
	if (setns(fd, CLONE_NEWNET) < 0)
		die(1, "entering network namespace '%s': %s", name,
		    strerror(errno));
	close(fd);
}

/* ---- statistics ---- */

static const struct {
	int type;
	const char *name;
} stat_names[] = {
	{ VISOCK_STATS_A_SOCKETS, "sockets" },
	{ VISOCK_STATS_A_SOCKETS_CLOSING, "sockets_closing" },
	{ VISOCK_STATS_A_CONNS_RDMA, "connections_rdma" },
	{ VISOCK_STATS_A_CONNS_FALLBACK, "connections_fallback" },
	{ VISOCK_STATS_A_HS_STARTED, "handshakes_started" },
	{ VISOCK_STATS_A_HS_DONE, "handshakes_done" },
	{ VISOCK_STATS_A_HS_ABORTED, "handshakes_aborted" },
	{ VISOCK_STATS_A_RDMA_BYTES_SENT, "rdma_bytes_sent" },
	{ VISOCK_STATS_A_RDMA_BYTES_RCVD, "rdma_bytes_rcvd" },
	{ VISOCK_STATS_A_TCP_BYTES_SENT, "tcp_bytes_sent" },
	{ VISOCK_STATS_A_TCP_BYTES_RCVD, "tcp_bytes_rcvd" },
	{ VISOCK_STATS_A_WR_POSTED, "rdma_wr_posted" },
	{ VISOCK_STATS_A_WC, "rdma_wc" },
	{ VISOCK_STATS_A_CDC_SENT, "cursor_msgs_sent" },
	{ VISOCK_STATS_A_CDC_RCVD, "cursor_msgs_rcvd" },
	{ VISOCK_STATS_A_TX_WAITS, "tx_ring_full_waits" },
	{ VISOCK_STATS_A_FAILOVERS, "rdma_failovers" },
	{ VISOCK_STATS_A_QPS, "qps" },
	{ VISOCK_STATS_A_REG_BYTES, "registered_bytes" },
	{ VISOCK_STATS_A_RDMA_DEVICES, "rdma_devices" },
	{ VISOCK_STATS_A_NS_DEVICES, "netns_rdma_devices" },
	{ VISOCK_STATS_A_LINKS_UP, "links_up" },
	{ VISOCK_STATS_A_LGR_CONNS, "lgr_connections" },
	{ VISOCK_STATS_A_LGR_LINGERING, "lgr_lingering" },
	{ VISOCK_STATS_A_LGR_QPS_CREATED, "lgr_qps_created" },
	{ VISOCK_STATS_A_LGR_QPS_DESTROYED, "lgr_qps_destroyed" },
	{ VISOCK_STATS_A_LGR_REUSED, "lgr_qp_reused" },
	{ VISOCK_STATS_A_LGR_WAITS, "lgr_qp_waits" },
	{ VISOCK_STATS_A_LGR_RETIRED, "lgr_qps_retired" },
	{ VISOCK_STATS_A_LGR_STALE, "lgr_stale_dropped" },
};

static void stats_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct nlattr *tb[VISOCK_A_MAX + 1];
	const struct nlattr *st[VISOCK_STATS_A_MAX + 1];
	const struct nlattr *fb[VISOCK_FB_MAX + 1];
	unsigned int i;
	bool first = true;

	(void)arg;
	genl_parse(nlh, tb, VISOCK_A_MAX);
	if (!tb[VISOCK_A_STATS])
		die(1, "statistics: no statistics in the answer");
	nla_parse(st, VISOCK_STATS_A_MAX, nla_data(tb[VISOCK_A_STATS]),
		  nla_len(tb[VISOCK_A_STATS]));
	memset(fb, 0, sizeof(fb));
	if (st[VISOCK_STATS_A_FALLBACK])
		nla_parse(fb, VISOCK_FB_MAX, nla_data(st[VISOCK_STATS_A_FALLBACK]),
			  nla_len(st[VISOCK_STATS_A_FALLBACK]));

	if (json) {
		printf("{\"enable\":%u", nla_u8(tb[VISOCK_A_ENABLE]));
		first = false;
	} else {
		printf("%-24s %u\n", "enable", nla_u8(tb[VISOCK_A_ENABLE]));
	}
	for (i = 0; i < ARRAY_SIZE(stat_names); i++) {
		uint64_t v = nla_u64(st[stat_names[i].type]);

		if (json)
			printf("%s\"%s\":%" PRIu64, first ? "{" : ",",
			       stat_names[i].name, v);
		else
			printf("%-24s %" PRIu64 "\n", stat_names[i].name, v);
		first = false;
	}
	for (i = 1; i <= VISOCK_FB_MAX; i++) {
		uint64_t v = nla_u64(fb[i]);

		if (json)
			printf(",\"fallback_%s\":%" PRIu64, fb_name(i), v);
		else
			printf("fallback_%-15s %" PRIu64 "\n", fb_name(i), v);
	}
	if (json)
		printf("}\n");
}

static void cmd_stats(bool reset)
{
	struct genl_req r;
	struct nl nl;
	int fam, err;

	if (reset)
		genl_simple(VISOCK_CMD_RESET_STATS, NULL, 0, 0,
			    "resetting the statistics");
	fam = genl_open(&nl);
	genl_init(&r, fam, VISOCK_CMD_GET_STATS, 0);
	nl_send(&nl, &r.nlh);
	err = nl_recv(&nl, stats_cb, NULL);
	if (err)
		die(1, "statistics: %s", strerror(-err));
	close(nl.fd);
}

/* ---- devices ---- */

static void dev_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct nlattr *tb[VISOCK_A_MAX + 1];
	const struct nlattr *dt[VISOCK_DEV_A_MAX + 1];
	const struct nlattr *pt[VISOCK_PORT_A_MAX + 1];
	const struct nlattr *gt[VISOCK_GID_A_MAX + 1];
	const struct nlattr *a, *ga;
	unsigned int *count = arg, nports = 0, ngids;
	char gid[INET6_ADDRSTRLEN];
	const char *name;
	int rem, grem;

	genl_parse(nlh, tb, VISOCK_A_MAX);
	if (!tb[VISOCK_A_DEV])
		return;
	nla_parse(dt, VISOCK_DEV_A_MAX, nla_data(tb[VISOCK_A_DEV]),
		  nla_len(tb[VISOCK_A_DEV]));
	name = dt[VISOCK_DEV_A_NAME] ? nla_data(dt[VISOCK_DEV_A_NAME]) : "?";
	if (json)
		printf("%s\n  {\"name\":\"%s\",\"links\":%u,\"ports\":[",
		       *count ? "," : "", json_esc(name),
		       nla_u32(dt[VISOCK_DEV_A_LINKS]));
	else
		printf("%s: links %u\n", name, nla_u32(dt[VISOCK_DEV_A_LINKS]));
	(*count)++;

	/* Ports are repeated attributes: walk the nest by hand. */
	a = nla_data(tb[VISOCK_A_DEV]);
	rem = nla_len(tb[VISOCK_A_DEV]);
	for (; nla_ok(a, rem); a = nla_next(a, &rem)) {
		if ((a->nla_type & NLA_TYPE_MASK) != VISOCK_DEV_A_PORT)
			continue;
		nla_parse(pt, VISOCK_PORT_A_MAX, nla_data(a), nla_len(a));
		if (json)
			printf("%s{\"port\":%u,\"state\":\"%s\",\"gids\":[",
			       nports ? "," : "", nla_u32(pt[VISOCK_PORT_A_NUM]),
			       port_state_name(nla_u8(pt[VISOCK_PORT_A_STATE])));
		else
			printf("  port %u state %s\n",
			       nla_u32(pt[VISOCK_PORT_A_NUM]),
			       port_state_name(nla_u8(pt[VISOCK_PORT_A_STATE])));
		nports++;
		ngids = 0;
		ga = nla_data(a);
		grem = nla_len(a);
		for (; nla_ok(ga, grem); ga = nla_next(ga, &grem)) {
			if ((ga->nla_type & NLA_TYPE_MASK) != VISOCK_PORT_A_GID)
				continue;
			nla_parse(gt, VISOCK_GID_A_MAX, nla_data(ga),
				  nla_len(ga));
			if (!gt[VISOCK_GID_A_GID] ||
			    nla_len(gt[VISOCK_GID_A_GID]) != 16)
				continue;
			fmt_gid(gid, sizeof(gid), nla_data(gt[VISOCK_GID_A_GID]));
			name = gt[VISOCK_GID_A_IFNAME] ?
			       nla_data(gt[VISOCK_GID_A_IFNAME]) : "";
			if (json)
				printf("%s{\"index\":%u,\"gid\":\"%s\","
				       "\"netdev\":\"%s\",\"ifindex\":%u}",
				       ngids ? "," : "",
				       nla_u32(gt[VISOCK_GID_A_INDEX]), gid,
				       json_esc(name),
				       nla_u32(gt[VISOCK_GID_A_IFINDEX]));
			else
				printf("    gid %-3u %-40s netdev %s\n",
				       nla_u32(gt[VISOCK_GID_A_INDEX]), gid,
				       name);
			ngids++;
		}
		if (json)
			printf("]}");
	}
	if (json)
		printf("]}");
}

static void cmd_devices(void)
{
	struct genl_req r;
	unsigned int count = 0;
	struct nl nl;
	int fam, err;

	fam = genl_open(&nl);
	genl_init(&r, fam, VISOCK_CMD_GET_DEVICES, NLM_F_DUMP);
	nl_send(&nl, &r.nlh);
	if (json)
		printf("[");
	err = nl_recv(&nl, dev_cb, &count);
	if (err)
		die(1, "devices: %s", strerror(-err));
	if (json)
		printf("%s]\n", count ? "\n" : "");
	else if (!count)
		printf("no RDMA devices\n");
	close(nl.fd);
}

/* ---- destination policy ---- */

static const char *action_name(unsigned int a)
{
	return a == VISOCK_POLICY_DENY ? "deny" : "allow";
}

static void default_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct genlmsghdr *g = NLMSG_DATA(nlh);
	const struct nlattr *tb[VISOCK_A_MAX + 1];

	nla_parse(tb, VISOCK_A_MAX, (const char *)g + GENL_HDRLEN,
		  nlh->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN));
	*(int *)arg = tb[VISOCK_A_POLICY_DEFAULT] ?
		      nla_u8(tb[VISOCK_A_POLICY_DEFAULT]) : -1;
}

static int policy_default(void)
{
	struct genl_req r;
	struct nl nl;
	int fam, err, dflt = -1;

	fam = genl_open(&nl);
	genl_init(&r, fam, VISOCK_CMD_GET_STATS, 0);
	nl_send(&nl, &r.nlh);
	err = nl_recv(&nl, default_cb, &dflt);
	if (err)
		die(1, "policy: %s", strerror(-err));
	if (dflt < 0)
		die_nomod();
	close(nl.fd);
	return dflt;
}

static void rule_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct genlmsghdr *g = NLMSG_DATA(nlh);
	const struct nlattr *tb[VISOCK_A_MAX + 1];
	const struct nlattr *rt[VISOCK_RULE_A_MAX + 1];
	char addr[INET6_ADDRSTRLEN + 8] = "", ports[16] = "";
	unsigned int *count = arg, lo, hi;

	if (nlh->nlmsg_flags & NLM_F_DUMP_INTR)
		die(1, "policy: the rules changed while being listed; try again");
	nla_parse(tb, VISOCK_A_MAX, (const char *)g + GENL_HDRLEN,
		  nlh->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN));
	if (!tb[VISOCK_A_RULE])
		return;
	nla_parse(rt, VISOCK_RULE_A_MAX, nla_data(tb[VISOCK_A_RULE]),
		  nla_len(tb[VISOCK_A_RULE]));
	if (rt[VISOCK_RULE_A_ADDR4] || rt[VISOCK_RULE_A_ADDR6]) {
		int fam = rt[VISOCK_RULE_A_ADDR4] ? AF_INET : AF_INET6;
		const struct nlattr *a = fam == AF_INET ?
			rt[VISOCK_RULE_A_ADDR4] : rt[VISOCK_RULE_A_ADDR6];
		size_t n;

		inet_ntop(fam, nla_data(a), addr, INET6_ADDRSTRLEN);
		n = strlen(addr);
		snprintf(addr + n, sizeof(addr) - n, "/%u",
			 nla_u8(rt[VISOCK_RULE_A_PREFIXLEN]));
	}
	lo = rt[VISOCK_RULE_A_PORT_MIN] ?
	     *(const uint16_t *)nla_data(rt[VISOCK_RULE_A_PORT_MIN]) : 0;
	hi = rt[VISOCK_RULE_A_PORT_MAX] ?
	     *(const uint16_t *)nla_data(rt[VISOCK_RULE_A_PORT_MAX]) : 65535;
	if (lo == hi)
		snprintf(ports, sizeof(ports), "%u", lo);
	else if (lo != 0 || hi != 65535)
		snprintf(ports, sizeof(ports), "%u-%u", lo, hi);
	if (json) {
		printf("%s{\"index\":%u,\"action\":\"%s\",\"to\":\"%s\",",
		       *count ? "," : "", nla_u32(rt[VISOCK_RULE_A_INDEX]),
		       action_name(nla_u8(rt[VISOCK_RULE_A_ACTION])),
		       addr[0] ? addr : "any");
		printf("\"port_min\":%u,\"port_max\":%u}", lo, hi);
	} else {
		printf("%u: %s%s%s%s%s\n", nla_u32(rt[VISOCK_RULE_A_INDEX]),
		       action_name(nla_u8(rt[VISOCK_RULE_A_ACTION])),
		       addr[0] ? " to " : "", addr, ports[0] ? " port " : "",
		       ports);
	}
	(*count)++;
}

static void policy_list(void)
{
	unsigned int count = 0;
	struct genl_req r;
	struct nl nl;
	int fam, err, dflt;

	dflt = policy_default();
	fam = genl_open(&nl);
	genl_init(&r, fam, VISOCK_CMD_POLICY_GET, NLM_F_DUMP);
	nl_send(&nl, &r.nlh);
	if (json)
		printf("{\"default\":\"%s\",\"rules\":[", action_name(dflt));
	err = nl_recv(&nl, rule_cb, &count);
	if (err)
		die(1, "policy: %s", strerror(-err));
	if (json)
		printf("]}\n");
	else
		printf("default %s\n", action_name(dflt));
	close(nl.fd);
}

static uint32_t parse_num(const char *s, uint32_t max, const char *what)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > max)
		die(EXIT_USAGE, "bad %s '%s'", what, s);
	return v;
}

static bool parse_action(const char *s, uint8_t *a)
{
	if (!strcmp(s, "allow"))
		*a = VISOCK_POLICY_ALLOW;
	else if (!strcmp(s, "deny"))
		*a = VISOCK_POLICY_DENY;
	else
		return false;
	return true;
}

/*
 * Build VISOCK_A_RULE from "[index N] [allow|deny] [to PREFIX]
 * [port P[-Q]]" into @r; returns the nest.
 */
static void policy_rule(struct genl_req *r, int argc, char **argv)
{
	struct nlattr *nest = nla_put(&r->nlh, VISOCK_A_RULE | NLA_F_NESTED,
				      NULL, 0);
	bool have_action = false, have_index = false;
	uint8_t action, addr[16], plen;
	uint16_t lo, hi;
	uint32_t index;
	int i;

	for (i = 0; i < argc; i++) {
		const char *next = i + 1 < argc ? argv[i + 1] : NULL;

		if (parse_action(argv[i], &action)) {
			nla_put(&r->nlh, VISOCK_RULE_A_ACTION, &action, 1);
			have_action = true;
			continue;
		}
		if (!next)
			die(EXIT_USAGE, "'%s' needs a value", argv[i]);
		i++;
		if (!strcmp(argv[i - 1], "index")) {
			index = parse_num(next, VISOCK_POLICY_MAX_RULES, "index");
			nla_put(&r->nlh, VISOCK_RULE_A_INDEX, &index, 4);
			have_index = true;
		} else if (!strcmp(argv[i - 1], "to")) {
			char buf[INET6_ADDRSTRLEN], *slash;
			bool v6 = strchr(next, ':');

			snprintf(buf, sizeof(buf), "%s", next);
			slash = strchr(buf, '/');
			if (slash)
				*slash++ = '\0';
			if (inet_pton(v6 ? AF_INET6 : AF_INET, buf, addr) != 1)
				die(EXIT_USAGE, "bad address '%s'", next);
			nla_put(&r->nlh, v6 ? VISOCK_RULE_A_ADDR6 :
				VISOCK_RULE_A_ADDR4, addr, v6 ? 16 : 4);
			if (slash) {
				plen = parse_num(slash, v6 ? 128 : 32,
						 "prefix length");
				nla_put(&r->nlh, VISOCK_RULE_A_PREFIXLEN,
					&plen, 1);
			}
		} else if (!strcmp(argv[i - 1], "port")) {
			char buf[16], *dash;

			snprintf(buf, sizeof(buf), "%s", next);
			dash = strchr(buf, '-');
			if (dash)
				*dash++ = '\0';
			lo = parse_num(buf, 65535, "port");
			hi = dash ? parse_num(dash, 65535, "port") : lo;
			nla_put(&r->nlh, VISOCK_RULE_A_PORT_MIN, &lo, 2);
			nla_put(&r->nlh, VISOCK_RULE_A_PORT_MAX, &hi, 2);
		} else {
			die(EXIT_USAGE, "policy: unknown word '%s'",
			    argv[i - 1]);
		}
	}
	if (!have_action && !have_index)
		die(EXIT_USAGE, "policy: a rule needs allow or deny");
	nest->nla_len = (char *)&r->nlh + r->nlh.nlmsg_len - (char *)nest;
}

static void policy_change(int cmd, int argc, char **argv, const char *what)
{
	struct genl_req r;
	struct nl nl;
	int fam, err;

	fam = genl_open(&nl);
	genl_init(&r, fam, cmd, NLM_F_ACK);
	if (cmd != VISOCK_CMD_POLICY_FLUSH)
		policy_rule(&r, argc, argv);
	nl_send(&nl, &r.nlh);
	err = nl_recv(&nl, NULL, NULL);
	if (err == -EPERM)
		die(1, "%s: permission denied (needs CAP_NET_ADMIN)", what);
	if (err == -EEXIST)
		die(1, "%s: the same rule exists", what);
	if (err == -ENOENT)
		die(1, "%s: no such rule", what);
	if (err == -ENOSPC)
		die(1, "%s: too many rules (at most %d)", what,
		    VISOCK_POLICY_MAX_RULES);
	if (err)
		die(1, "%s: %s%s%s", what, strerror(-err),
		    nl_errmsg[0] ? ": " : "", nl_errmsg);
	close(nl.fd);
}

static void cmd_policy(int argc, char **argv)
{
	const char *sub = argc ? argv[0] : "list";
	uint8_t a;

	if (!strcmp(sub, "list") || !strcmp(sub, "show")) {
		policy_list();
	} else if (!strcmp(sub, "add")) {
		policy_change(VISOCK_CMD_POLICY_ADD, argc - 1, argv + 1,
			      "adding the rule");
	} else if (!strcmp(sub, "del") || !strcmp(sub, "delete")) {
		policy_change(VISOCK_CMD_POLICY_DEL, argc - 1, argv + 1,
			      "deleting the rule");
	} else if (!strcmp(sub, "flush")) {
		policy_change(VISOCK_CMD_POLICY_FLUSH, 0, NULL,
			      "removing the rules");
	} else if (!strcmp(sub, "default")) {
		if (argc < 2) {
			printf("%s\n", action_name(policy_default()));
			return;
		}
		if (argc > 2 || !parse_action(argv[1], &a))
			die(EXIT_USAGE, "policy default: allow or deny");
		genl_simple(VISOCK_CMD_SET, &a, VISOCK_A_POLICY_DEFAULT, 1,
			    "setting the default policy");
	} else {
		die(EXIT_USAGE, "policy: unknown command '%s'", sub);
	}
}

/* ---- main ---- */

static void print_usage(FILE *f, int code)
{
	fprintf(f,
		"usage: %s [--json] [--netns NAME] COMMAND [OPTIONS]\n"
		"  sockets [-a|--all] [-l|--listening] [--rdma] [--tcp] [--ino N]\n"
		"          [--port N] [src ADDR[/LEN]] [dst ADDR[/LEN]] [sport N]\n"
		"          [dport N] [mode rdma|tcp|fallback|handshake|init]\n"
		"          [reason NAME]\n"
		"                      visock sockets of this network namespace\n"
		"  stats [--reset]     counters and gauges of this namespace\n"
		"  links               RDMA links (queue pairs) and their peers\n"
		"  peers               links grouped by the peer's GID\n"
		"  devices             RDMA devices, ports and GIDs visock uses\n"
		"  monitor             print events as they happen\n"
		"  enable | disable    set net.visock.enable of this namespace\n"
		"  policy [list]       destination policy of this namespace\n"
		"  policy add [index N] allow|deny [to PREFIX] [port P[-Q]]\n"
		"  policy del index N | allow|deny [to PREFIX] [port P[-Q]]\n"
		"  policy flush | default [allow|deny]\n"
		"  redirect ARGS...    visock_redirect(8) ARGS (as the first word)\n"
		"Options: -j/--json machine-readable output; -n/--netns NAME runs\n"
		"in /run/netns/NAME (or the namespace file NAME, with a '/').\n"
		"Exit status: 0 ok, 1 error, 2 usage, 3 visock module not loaded.\n",
		prog);
	exit(code);
}

static uint32_t mode_bit(const char *name)
{
	if (!strcmp(name, "rdma"))
		return 1u << VISOCK_MODE_RDMA;
	/* Every connection in TCP mode fell back, with a reason. */
	if (!strcmp(name, "tcp") || !strcmp(name, "fallback"))
		return 1u << VISOCK_MODE_TCP;
	if (!strcmp(name, "handshake"))
		return 1u << VISOCK_MODE_HANDSHAKE;
	if (!strcmp(name, "init"))
		return 1u << VISOCK_MODE_INIT;
	die(EXIT_USAGE, "unknown mode '%s' (rdma, tcp, fallback, handshake, init)",
	    name);
	return 0;
}

static int reason_num(const char *name)
{
	unsigned int i;

	for (i = 1; i < ARRAY_SIZE(fb_names); i++)
		if (!strcmp(name, fb_names[i]))
			return (int)i;
	die(EXIT_USAGE, "unknown fallback reason '%s'", name);
	return -1;
}

/* The ss-style filter words after "sockets": KEY VALUE pairs. */
static void parse_sock_filter(int argc, char **argv, struct sock_filter_opts *o,
			      uint32_t *modes)
{
	int i;

	for (i = 0; i < argc; i += 2) {
		const char *key = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!val)
			die(EXIT_USAGE, "'%s' needs a value", key);
		if (!strcmp(key, "src"))
			parse_addr_filter(&o->src, val);
		else if (!strcmp(key, "dst"))
			parse_addr_filter(&o->dst, val);
		else if (!strcmp(key, "sport"))
			o->sport = parse_port(val);
		else if (!strcmp(key, "dport"))
			o->dport = parse_port(val);
		else if (!strcmp(key, "port"))
			o->port = parse_port(val);
		else if (!strcmp(key, "mode"))
			*modes |= mode_bit(val);
		else if (!strcmp(key, "reason"))
			o->reason = reason_num(val);
		else
			die(EXIT_USAGE, "unknown filter '%s'", key);
	}
}

/*
 * "visockctl redirect ARGS" is visock_redirect(8): run the one next to
 * this binary (as installed and as built), else the one on PATH.
 */
static void cmd_redirect(char **argv)
{
	char self[4096], path[4096 + sizeof("/visock_redirect")];
	ssize_t n;
	char *slash;

	argv[0] = "visock_redirect";
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(path, sizeof(path), "%s/visock_redirect", self);
			if (!access(path, X_OK))
				execv(path, argv);
		}
	}
	execvp("visock_redirect", argv);
	die(1, "cannot run visock_redirect: %s", strerror(errno));
}

int main(int argc, char **argv)
{
	enum { OPT_RDMA = 256, OPT_TCP, OPT_INO, OPT_PORT, OPT_RESET };
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "netns", required_argument, NULL, 'n' },
		{ "all", no_argument, NULL, 'a' },
		{ "listening", no_argument, NULL, 'l' },
		{ "rdma", no_argument, NULL, OPT_RDMA },
		{ "tcp", no_argument, NULL, OPT_TCP },
		{ "ino", required_argument, NULL, OPT_INO },
		{ "port", required_argument, NULL, OPT_PORT },
		{ "reset", no_argument, NULL, OPT_RESET },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	struct sock_filter_opts o = { .reason = -1 };
	bool all = false, listening = false, reset = false;
	uint32_t modes = 0, ino = 0, states;
	const char *cmd = NULL, *netns = NULL;
	char **words;
	int nwords = 0;
	int c;

	/* Its options are visock_redirect's, not ours. */
	if (argc > 1 && !strcmp(argv[1], "redirect"))
		cmd_redirect(argv + 1);

	words = calloc((size_t)argc + 1, sizeof(*words));
	if (!words)
		die(1, "out of memory");
	/* Options may come before or after the command and its words. */
	while ((c = getopt_long(argc, argv, "-jn:alh", opts, NULL)) != -1) {
		switch (c) {
		case 1:
			if (!cmd)
				cmd = optarg;
			else
				words[nwords++] = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'n':
			netns = optarg;
			break;
		case 'a':
			all = true;
			break;
		case 'l':
			listening = true;
			break;
		case OPT_RDMA:
			modes |= 1u << VISOCK_MODE_RDMA;
			break;
		case OPT_TCP:
			modes |= 1u << VISOCK_MODE_TCP;
			break;
		case OPT_INO:
			ino = strtoul(optarg, NULL, 0);
			break;
		case OPT_PORT:
			o.port = parse_port(optarg);
			break;
		case OPT_RESET:
			reset = true;
			break;
		case 'h':
			print_usage(stdout, 0);
			break;
		default:
			print_usage(stderr, EXIT_USAGE);
		}
	}
	if (!cmd)
		print_usage(stderr, EXIT_USAGE);
	if (nwords && strcmp(cmd, "sockets") && strcmp(cmd, "ss") &&
	    strcmp(cmd, "policy"))
		die(EXIT_USAGE, "%s: unexpected '%s'", cmd, words[0]);
	/* Before any netlink socket exists: they belong to a namespace. */
	if (netns)
		enter_netns(netns);

	if (!strcmp(cmd, "sockets") || !strcmp(cmd, "ss")) {
		parse_sock_filter(nwords, words, &o, &modes);
		/* Like ss: connections by default, -l listeners, -a all. */
		states = listening ? 1u << 10 : ~(1u << 10);
		if (all)
			states = 0;
		diag_dump(states, modes, ino, &o);
	} else if (!strcmp(cmd, "links")) {
		cmd_links();
	} else if (!strcmp(cmd, "peers")) {
		cmd_peers();
	} else if (!strcmp(cmd, "monitor")) {
		cmd_monitor();
	} else if (!strcmp(cmd, "stats")) {
		cmd_stats(reset);
	} else if (!strcmp(cmd, "devices")) {
		cmd_devices();
	} else if (!strcmp(cmd, "policy")) {
		cmd_policy(nwords, words);
	} else if (!strcmp(cmd, "enable") || !strcmp(cmd, "disable")) {
		uint8_t v = !strcmp(cmd, "enable");

		genl_simple(VISOCK_CMD_SET, &v, VISOCK_A_ENABLE, 1,
			    "setting net.visock.enable");
	} else {
		fprintf(stderr, "%s: unknown command '%s'\n", prog, cmd);
		print_usage(stderr, EXIT_USAGE);
	}
	free(words);
	return 0;
}
