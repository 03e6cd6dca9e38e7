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
 *                        [transform NAME [require]]
 *   visockctl policy del index N | allow|deny [to PREFIX] [port P[-Q]]
 *   visockctl key list
 *   visockctl key add ID [name NAME] [current] [secret-file FILE|-]
 *   visockctl key use ID | del ID
 *   visockctl transforms
 *
 * Sockets come from the kernel's sock_diag (NETLINK_SOCK_DIAG, family
 * AF_VISOCK); links, statistics, devices, events, the switch, the
 * destination policy, keys and transform pairs from the "visock" generic
 * netlink family.  The
 * messages are built and parsed with libmnl: this file holds what each
 * attribute is and how it is printed.  See visockctl(8).
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
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/visock.h>
#include <linux/visock_diag.h>
#include <linux/visock_genl.h>

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

/* ---- attribute tables ---- */

/*
 * What an attribute must look like: its libmnl type and, for binary
 * ones of a fixed size, the length.  An attribute that does not fit is
 * ignored, as if the kernel had not sent it.
 */
struct attr_pol {
	enum mnl_attr_data_type type;
	uint16_t len;
};

#define U8		{ MNL_TYPE_U8 }
#define U16		{ MNL_TYPE_U16 }
#define U32		{ MNL_TYPE_U32 }
#define U64		{ MNL_TYPE_U64 }
#define STR		{ MNL_TYPE_NUL_STRING }
#define NEST		{ MNL_TYPE_NESTED }
#define FLAG		{ MNL_TYPE_FLAG }
#define BIN(n)		{ MNL_TYPE_BINARY, n }
/* A structure that only grows: any length, the reader copies its part. */
#define STRUCT		{ MNL_TYPE_BINARY }

static const struct attr_pol ctrl_pol[CTRL_ATTR_MAX + 1] = {
	[CTRL_ATTR_FAMILY_ID]		= U16,
	[CTRL_ATTR_MCAST_GROUPS]	= NEST,
};

static const struct attr_pol mcgrp_pol[CTRL_ATTR_MCAST_GRP_MAX + 1] = {
	[CTRL_ATTR_MCAST_GRP_NAME]	= STR,
	[CTRL_ATTR_MCAST_GRP_ID]	= U32,
};

static const struct attr_pol ack_pol[NLMSGERR_ATTR_MAX + 1] = {
	[NLMSGERR_ATTR_MSG]		= STR,
};

static const struct attr_pol diag_pol[VISOCK_DIAG_MAX + 1] = {
	[VISOCK_DIAG_INFO]		= STRUCT,
	[VISOCK_DIAG_RING]		= STRUCT,
	[VISOCK_DIAG_LINK]		= STRUCT,
	[VISOCK_DIAG_BUSY]		= FLAG,
};

static const struct attr_pol genl_pol[VISOCK_A_MAX + 1] = {
	[VISOCK_A_ENABLE]		= U8,
	[VISOCK_A_STATS]		= NEST,
	[VISOCK_A_DEV]			= NEST,
	[VISOCK_A_LINK]			= NEST,
	[VISOCK_A_EVENT]		= NEST,
	[VISOCK_A_POLICY_DEFAULT]	= U8,
	[VISOCK_A_RULE]			= NEST,
	[VISOCK_A_KEY]			= NEST,
	[VISOCK_A_XFORM]		= NEST,
};

static const struct attr_pol key_pol[VISOCK_KEY_A_MAX + 1] = {
	[VISOCK_KEY_A_ID]		= U32,
	[VISOCK_KEY_A_NAME]		= STR,
	[VISOCK_KEY_A_SECRET]		= { MNL_TYPE_BINARY },
	[VISOCK_KEY_A_CURRENT]		= FLAG,
};

static const struct attr_pol xform_pol[VISOCK_XFORM_A_MAX + 1] = {
	[VISOCK_XFORM_A_ID]		= U8,
	[VISOCK_XFORM_A_NAME]		= STR,
	[VISOCK_XFORM_A_ALG]		= STR,
	[VISOCK_XFORM_A_DRIVER]		= STR,
	[VISOCK_XFORM_A_PRIORITY]	= U32,
	[VISOCK_XFORM_A_HW]		= FLAG,
	[VISOCK_XFORM_A_ASYNC]		= FLAG,
	[VISOCK_XFORM_A_KEY_SIZE]	= U32,
	[VISOCK_XFORM_A_TAG_SIZE]	= U32,
	[VISOCK_XFORM_A_NONCE_SIZE]	= U32,
	[VISOCK_XFORM_A_RECORD_SIZE]	= U32,
	[VISOCK_XFORM_A_INTEGRITY_ONLY]	= FLAG,
	[VISOCK_XFORM_A_MAX_RECORDS]	= U64,
	[VISOCK_XFORM_A_AVAILABLE]	= FLAG,
	[VISOCK_XFORM_A_ERROR]		= U32,
	[VISOCK_XFORM_A_COMP]		= STR,
	[VISOCK_XFORM_A_COMP_DRIVER]	= STR,
};

static const struct attr_pol stats_pol[VISOCK_STATS_A_MAX + 1] = {
	[VISOCK_STATS_A_CONNS_RDMA ... VISOCK_STATS_A_CONNS_FALLBACK] = U64,
	[VISOCK_STATS_A_FALLBACK]	= NEST,
	[VISOCK_STATS_A_HS_STARTED ... VISOCK_STATS_A_MAX] = U64,
};

/* VISOCK_STATS_A_FALLBACK: a counter per reason, the reason its type. */
static const struct attr_pol fb_pol[VISOCK_FB_MAX + 1] = {
	[1 ... VISOCK_FB_MAX]		= U64,
};

static const struct attr_pol dev_pol[VISOCK_DEV_A_MAX + 1] = {
	[VISOCK_DEV_A_NAME]		= STR,
	[VISOCK_DEV_A_LINKS]		= U32,
	[VISOCK_DEV_A_PORT]		= NEST,
};

static const struct attr_pol port_pol[VISOCK_PORT_A_MAX + 1] = {
	[VISOCK_PORT_A_NUM]		= U32,
	[VISOCK_PORT_A_STATE]		= U8,
	[VISOCK_PORT_A_GID]		= NEST,
};

static const struct attr_pol gid_pol[VISOCK_GID_A_MAX + 1] = {
	[VISOCK_GID_A_INDEX]		= U32,
	[VISOCK_GID_A_GID]		= BIN(16),
	[VISOCK_GID_A_IFINDEX]		= U32,
	[VISOCK_GID_A_IFNAME]		= STR,
};

static const struct attr_pol link_pol[VISOCK_LINK_A_MAX + 1] = {
	[VISOCK_LINK_A_DEV]		= STR,
	[VISOCK_LINK_A_PORT]		= U32,
	[VISOCK_LINK_A_GID]		= BIN(16),
	[VISOCK_LINK_A_PEER_GID]	= BIN(16),
	[VISOCK_LINK_A_QPN]		= U32,
	[VISOCK_LINK_A_PEER_QPN]	= U32,
	[VISOCK_LINK_A_STATE]		= U8,
	[VISOCK_LINK_A_REG_BYTES]	= U64,
	[VISOCK_LINK_A_WR_POSTED]	= U64,
	[VISOCK_LINK_A_WC_OK]		= U64,
	[VISOCK_LINK_A_WC_ERR]		= U64,
	[VISOCK_LINK_A_SOCK]		= NEST,
	[VISOCK_LINK_A_MAX_CONNS]	= U32,
	[VISOCK_LINK_A_CONNS]		= U32,
	[VISOCK_LINK_A_QUEUE_BYTES]	= U64,
};

static const struct attr_pol sock_pol[VISOCK_SOCK_A_MAX + 1] = {
	[VISOCK_SOCK_A_ID]		= U64,
	[VISOCK_SOCK_A_INO]		= U32,
	[VISOCK_SOCK_A_IP_FAMILY]	= U8,
	[VISOCK_SOCK_A_SRC]		= BIN(16),
	[VISOCK_SOCK_A_DST]		= BIN(16),
	[VISOCK_SOCK_A_SPORT]		= U16,
	[VISOCK_SOCK_A_DPORT]		= U16,
};

static const struct attr_pol event_pol[VISOCK_EVENT_A_MAX + 1] = {
	[VISOCK_EVENT_A_TYPE]		= U8,
	[VISOCK_EVENT_A_REASON]		= U8,
	[VISOCK_EVENT_A_ERROR]		= U32,
	[VISOCK_EVENT_A_DEV]		= STR,
	[VISOCK_EVENT_A_LINK]		= NEST,
	[VISOCK_EVENT_A_SOCK]		= NEST,
};

static const struct attr_pol rule_pol[VISOCK_RULE_A_MAX + 1] = {
	[VISOCK_RULE_A_ACTION]		= U8,
	[VISOCK_RULE_A_ADDR4]		= BIN(4),
	[VISOCK_RULE_A_ADDR6]		= BIN(16),
	[VISOCK_RULE_A_PREFIXLEN]	= U8,
	[VISOCK_RULE_A_PORT_MIN]	= U16,
	[VISOCK_RULE_A_PORT_MAX]	= U16,
	[VISOCK_RULE_A_INDEX]		= U32,
	[VISOCK_RULE_A_XFORM]		= U8,
	[VISOCK_RULE_A_XFORM_REQUIRE]	= FLAG,
};

struct attr_tb {
	const struct nlattr **tb;
	const struct attr_pol *pol;
	unsigned int max;
};

static int attr_cb(const struct nlattr *a, void *data)
{
	const struct attr_tb *t = data;
	unsigned int type = mnl_attr_get_type(a);
	const struct attr_pol *p;

	if (type > t->max)
		return MNL_CB_OK;
	p = &t->pol[type];
	if (p->len ? mnl_attr_validate2(a, p->type, p->len) :
		     mnl_attr_validate(a, p->type))
		return MNL_CB_OK;
	t->tb[type] = a;	/* a repeated attribute: the last wins */
	return MNL_CB_OK;
}

/* Index the attributes of @nlh after @off bytes of its payload. */
static void parse_msg(const struct nlmsghdr *nlh, size_t off,
		      const struct nlattr **tb, const struct attr_pol *pol,
		      unsigned int max)
{
	struct attr_tb t = { tb, pol, max };

	memset(tb, 0, sizeof(*tb) * (max + 1));
	if (nlh->nlmsg_len >= mnl_nlmsg_size(off))
		mnl_attr_parse(nlh, off, attr_cb, &t);
}

/* Index the attributes inside @nest (none if NULL). */
static void parse_nest(const struct nlattr *nest, const struct nlattr **tb,
		       const struct attr_pol *pol, unsigned int max)
{
	struct attr_tb t = { tb, pol, max };

	memset(tb, 0, sizeof(*tb) * (max + 1));
	if (nest)
		mnl_attr_parse_nested(nest, attr_cb, &t);
}

/* Index into @tb, which has as many entries as its policy @pol. */
#define PARSE_MSG(nlh, off, tb, pol) do {				\
	_Static_assert(ARRAY_SIZE(tb) == ARRAY_SIZE(pol), "table size");\
	parse_msg(nlh, off, tb, pol, ARRAY_SIZE(pol) - 1);		\
} while (0)
#define PARSE_GENL(nlh, tb, pol)	PARSE_MSG(nlh, GENL_HDRLEN, tb, pol)
#define PARSE_NEST(nest, tb, pol) do {					\
	_Static_assert(ARRAY_SIZE(tb) == ARRAY_SIZE(pol), "table size");\
	parse_nest(nest, tb, pol, ARRAY_SIZE(pol) - 1);		\
} while (0)

/* Values of validated attributes; 0 for one that is absent. */
static uint8_t attr_u8(const struct nlattr *a)
{
	return a ? mnl_attr_get_u8(a) : 0;
}

static uint16_t attr_u16(const struct nlattr *a, uint16_t dflt)
{
	return a ? mnl_attr_get_u16(a) : dflt;
}

static uint32_t attr_u32(const struct nlattr *a)
{
	return a ? mnl_attr_get_u32(a) : 0;
}

static uint64_t attr_u64(const struct nlattr *a)
{
	return a ? mnl_attr_get_u64(a) : 0;
}

static void attr_bin(const struct nlattr *a, void *out, size_t len)
{
	if (a)
		memcpy(out, mnl_attr_get_payload(a), len);
}

static void attr_str(const struct nlattr *a, char *out, size_t len)
{
	snprintf(out, len, "%s", a ? mnl_attr_get_str(a) : "");
}

/* A structure that only grows: what the kernel sent, the rest zero. */
static void attr_struct(const struct nlattr *a, void *out, size_t len)
{
	size_t n = a ? mnl_attr_get_payload_len(a) : 0;

	memset(out, 0, len);
	if (a)
		memcpy(out, mnl_attr_get_payload(a), n < len ? n : len);
}

/* ---- netlink plumbing ---- */

struct nl {
	struct mnl_socket *sk;
	uint32_t portid;
	uint32_t seq;
	/* The request being built: small, a few attributes at most. */
	uint64_t req[64];
};

/* The kernel's message of the last error (extended ACK), or "". */
static char nl_errmsg[256];

static void nl_open(struct nl *nl, int proto)
{
	int one = 1;

	nl->sk = mnl_socket_open2(proto, SOCK_CLOEXEC);
	if (!nl->sk)
		die(1, "netlink socket: %s", strerror(errno));
	if (mnl_socket_bind(nl->sk, 0, MNL_SOCKET_AUTOPID) < 0)
		die(1, "netlink bind: %s", strerror(errno));
	/* Best effort: only the error messages depend on it. */
	mnl_socket_setsockopt(nl->sk, NETLINK_EXT_ACK, &one, sizeof(one));
	nl->portid = mnl_socket_get_portid(nl->sk);
	nl->seq = (uint32_t)getpid() ^ 0x5653;
}

static void nl_close(struct nl *nl)
{
	mnl_socket_close(nl->sk);
}

/* Start a request of @type in @nl; the ones that are not dumps get an ACK. */
static struct nlmsghdr *nl_req(struct nl *nl, uint16_t type, uint16_t flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(nl->req);

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	if (!(flags & NLM_F_DUMP))
		nlh->nlmsg_flags |= NLM_F_ACK;
	nlh->nlmsg_seq = ++nl->seq;
	return nlh;
}

/* An error ACK: keep its NLMSGERR_ATTR_MSG in nl_errmsg. */
static int ack_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	size_t off = sizeof(*e);

	(void)arg;
	nl_errmsg[0] = '\0';
	if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*e))) {
		errno = EBADMSG;
		return MNL_CB_ERROR;
	}
	if (!e->error)
		return MNL_CB_STOP;
	if (nlh->nlmsg_flags & NLM_F_ACK_TLVS) {
		if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
			off += e->msg.nlmsg_len - sizeof(e->msg);
		PARSE_MSG(nlh, off, tb, ack_pol);
		attr_str(tb[NLMSGERR_ATTR_MSG], nl_errmsg, sizeof(nl_errmsg));
	}
	errno = e->error < 0 ? -e->error : e->error;
	return MNL_CB_ERROR;
}

/* The end of a dump. */
static int done_cb(const struct nlmsghdr *nlh, void *arg)
{
	(void)nlh;
	(void)arg;
	return MNL_CB_STOP;
}

/*
 * Send the request in @nl and call @cb for every message of the answer,
 * until NLMSG_DONE or the ACK.  Returns 0 or a negative errno.
 */
static int nl_talk(struct nl *nl, mnl_cb_t cb, void *arg)
{
	/* With a table, libmnl leaves the types without an entry alone. */
	static mnl_cb_t ctl[NLMSG_MIN_TYPE] = {
		[NLMSG_ERROR] = ack_cb,
		[NLMSG_DONE] = done_cb,
	};
	static uint64_t buf[BUF_SIZE / 8];
	const struct nlmsghdr *req = (const void *)nl->req;
	ssize_t n;
	int ret = 0;

	if (mnl_socket_sendto(nl->sk, req, req->nlmsg_len) < 0)
		die(1, "netlink send: %s", strerror(errno));
	do {
		n = mnl_socket_recvfrom(nl->sk, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die(1, "netlink receive: %s", strerror(errno));
		}
		ret = mnl_cb_run2(buf, n, nl->seq, nl->portid, cb, arg, ctl,
				  ARRAY_SIZE(ctl));
	} while (n < 0 || ret > 0);
	return ret < 0 ? -errno : 0;
}

/* ---- generic netlink ---- */

/* Start a generic netlink request @cmd of @family in @nl. */
static struct nlmsghdr *genl_req(struct nl *nl, int family, int cmd,
				 int version, uint16_t flags)
{
	struct nlmsghdr *nlh = nl_req(nl, family, flags);
	struct genlmsghdr *g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));

	g->cmd = cmd;
	g->version = version;
	return nlh;
}

/* Id of the "events" multicast group, from the family lookup. */
static int events_group = -1;

static int family_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct nlattr *tb[CTRL_ATTR_MAX + 1];
	const struct nlattr *gt[CTRL_ATTR_MCAST_GRP_MAX + 1];
	const struct nlattr *a;

	PARSE_GENL(nlh, tb, ctrl_pol);
	if (tb[CTRL_ATTR_FAMILY_ID])
		*(int *)arg = mnl_attr_get_u16(tb[CTRL_ATTR_FAMILY_ID]);
	if (!tb[CTRL_ATTR_MCAST_GROUPS])
		return MNL_CB_OK;
	mnl_attr_for_each_nested(a, tb[CTRL_ATTR_MCAST_GROUPS]) {
		PARSE_NEST(a, gt, mcgrp_pol);
		if (gt[CTRL_ATTR_MCAST_GRP_NAME] && gt[CTRL_ATTR_MCAST_GRP_ID] &&
		    !strcmp(mnl_attr_get_str(gt[CTRL_ATTR_MCAST_GRP_NAME]),
			    VISOCK_GENL_MCGRP_EVENTS))
			events_group = (int)attr_u32(gt[CTRL_ATTR_MCAST_GRP_ID]);
	}
	return MNL_CB_OK;
}

/* Open a generic netlink socket in @nl; returns the family's id. */
static int genl_open(struct nl *nl)
{
	struct nlmsghdr *nlh;
	int id = -1, err;

	nl_open(nl, NETLINK_GENERIC);
	nlh = genl_req(nl, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1, 0);
	mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, VISOCK_GENL_NAME);
	err = nl_talk(nl, family_cb, &id);
	if (err == -ENOENT || (!err && id < 0))
		die_nomod();
	if (err)
		die(1, "looking up the genetlink family: %s", strerror(-err));
	return id;
}

/* Start request @cmd of the visock family on a new socket @nl. */
static struct nlmsghdr *visock_req(struct nl *nl, int cmd, uint16_t flags)
{
	int fam = genl_open(nl);

	return genl_req(nl, fam, cmd, VISOCK_GENL_VERSION, flags);
}

/*
 * Dump @cmd through @cb, which counts the objects it prints in the
 * count it is given; in JSON, @open starts the list first.  An error
 * ends the program with a message that starts with @what.
 */
static unsigned int dump_list(int cmd, mnl_cb_t cb, const char *what,
			      const char *open)
{
	unsigned int count = 0;
	struct nl nl;
	int err;

	visock_req(&nl, cmd, NLM_F_DUMP);
	if (json)
		fputs(open, stdout);
	err = nl_talk(&nl, cb, &count);
	nl_close(&nl);
	/* libmnl stops at a part of the dump marked NLM_F_DUMP_INTR. */
	if (err == -EINTR)
		die(1, "%s: the list changed while being read; try again",
		    what);
	if (err == -EPERM)
		die(1, "%s: permission denied (needs CAP_NET_ADMIN)", what);
	if (err == -EOPNOTSUPP)
		die(1, "%s: the loaded visock module does not list them", what);
	if (err)
		die(1, "%s: %s", what, strerror(-err));
	return count;
}

/* A change: @cmd with a u8 attribute (@type, unless 0); dies on error. */
static void genl_simple(int cmd, int type, uint8_t val, const char *what)
{
	struct nlmsghdr *nlh;
	struct nl nl;
	int err;

	nlh = visock_req(&nl, cmd, 0);
	if (type)
		mnl_attr_put_u8(nlh, type, val);
	err = nl_talk(&nl, NULL, NULL);
	if (err == -EPERM)
		die(1, "%s: permission denied (needs CAP_NET_ADMIN)", what);
	if (err)
		die(1, "%s: %s", what, strerror(-err));
	nl_close(&nl);
}

/* ---- names ---- */

static const char *const fb_names[] = {
	"none", "disabled", "peer_no_visock", "no_device", "peer_no_device",
	"version", "bad_msg", "timeout", "nomem", "peer_decline", "qp_setup",
	"buf_exhausted", "device_gone", "syncookie", "io", "policy",
	"link_busy", "link_gone", "qp_limit", "auth", "auth_missing",
	"xform_required", "xform_mem",
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

/* enum visock_xform, as net.visock.transform documents them */
static const char *xform_name(unsigned int x)
{
	static const char *const n[] = {
		"none", "gcm-aes-128", "gcm-aes-256", "chacha20-poly1305",
		"gmac-aes-128", "gmac-aes-256", "lz4-gcm-aes-128",
		"zstd-gcm-aes-128", "lz4-gmac-aes-128", "zstd-gmac-aes-128",
		"lz4-gcm-aes-256", "zstd-gcm-aes-256", "lz4-chacha20-poly1305",
		"zstd-chacha20-poly1305",
	};

	return x < ARRAY_SIZE(n) ? n[x] : "unknown";
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

static void json_bool(bool *first, const char *key, bool val)
{
	json_key(first, key);
	printf("%s", val ? "true" : "false");
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
		printf(",\"auth\":%s,\"transform\":\"%s\","
		       "\"records_sealed\":%" PRIu64 ","
		       "\"records_opened\":%" PRIu64,
		       vi->vi_flags & VISOCK_INFO_F_AUTH ? "true" : "false",
		       xform_name(vi->vi_xform),
		       (uint64_t)vi->vi_rec_sealed,
		       (uint64_t)vi->vi_rec_opened);
		printf(",\"tx_rekeys\":%" PRIu64 ",\"rx_rekeys\":%" PRIu64,
		       (uint64_t)vi->vi_rec_tx_rekeys,
		       (uint64_t)vi->vi_rec_rx_rekeys);
		printf(",\"records_compressed\":%" PRIu64
		       ",\"records_decompressed\":%" PRIu64,
		       (uint64_t)vi->vi_rec_compressed,
		       (uint64_t)vi->vi_rec_decompressed);
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
			snprintf(mode, sizeof(mode), "%s%s%s%s",
				 mode_name(m->vdiag_mode),
				 vi->vi_flags & VISOCK_INFO_F_AUTH ?
				 "+auth" : "", vi->vi_xform ? "+" : "",
				 vi->vi_xform ? xform_name(vi->vi_xform) : "");
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

static int diag_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct visock_diag_msg *m = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *tb[VISOCK_DIAG_MAX + 1];
	struct visock_diag_link link;
	struct visock_diag_ring ring;
	struct visock_info vi;

	if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*m)))
		return MNL_CB_OK;
	PARSE_MSG(nlh, sizeof(*m), tb, diag_pol);
	attr_struct(tb[VISOCK_DIAG_INFO], &vi, sizeof(vi));
	attr_struct(tb[VISOCK_DIAG_RING], &ring, sizeof(ring));
	attr_struct(tb[VISOCK_DIAG_LINK], &link, sizeof(link));
	link.vdl_dev[sizeof(link.vdl_dev) - 1] = 0;
	print_socket(m, tb[VISOCK_DIAG_INFO] ? &vi : NULL,
		     tb[VISOCK_DIAG_RING] ? &ring : NULL,
		     tb[VISOCK_DIAG_LINK] ? &link : NULL,
		     !!tb[VISOCK_DIAG_BUSY], arg);
	return MNL_CB_OK;
}

static void diag_dump(uint32_t states, uint32_t modes, uint32_t ino,
		      struct sock_filter_opts *o)
{
	struct visock_diag_req *req;
	struct nl nl;
	int err;

	nl_open(&nl, NETLINK_SOCK_DIAG);
	req = mnl_nlmsg_put_extra_header(nl_req(&nl, SOCK_DIAG_BY_FAMILY,
						NLM_F_DUMP), sizeof(*req));
	req->sdiag_family = AF_VISOCK;
	req->vdiag_states = states;
	req->vdiag_modes = modes;
	req->vdiag_ino = ino;
	req->vdiag_show = VISOCK_SHOW_INFO | VISOCK_SHOW_RING |
			  VISOCK_SHOW_LINK;
	if (json)
		printf("[");
	err = nl_talk(&nl, diag_cb, o);
	if (err == -ENOENT)
		die_nomod();
	if (err)
		die(1, "socket dump: %s", strerror(-err));
	if (json)
		printf("%s]\n", o->count ? "\n" : "");
	else if (!o->count)
		printf("no sockets\n");
	nl_close(&nl);
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
	uint32_t max_conns, conns;
	uint64_t queue_bytes;
	struct sock_rec sock;
};

static void parse_sock(const struct nlattr *nest, struct sock_rec *r)
{
	const struct nlattr *t[VISOCK_SOCK_A_MAX + 1];

	memset(r, 0, sizeof(*r));
	if (!nest)
		return;
	PARSE_NEST(nest, t, sock_pol);
	r->id = attr_u64(t[VISOCK_SOCK_A_ID]);
	r->ino = attr_u32(t[VISOCK_SOCK_A_INO]);
	r->family = attr_u8(t[VISOCK_SOCK_A_IP_FAMILY]);
	attr_bin(t[VISOCK_SOCK_A_SRC], r->src, sizeof(r->src));
	attr_bin(t[VISOCK_SOCK_A_DST], r->dst, sizeof(r->dst));
	r->sport = attr_u16(t[VISOCK_SOCK_A_SPORT], 0);
	r->dport = attr_u16(t[VISOCK_SOCK_A_DPORT], 0);
	fmt_addr(r->local, sizeof(r->local), r->family, r->src,
		 htons(r->sport));
	fmt_addr(r->peer, sizeof(r->peer), r->family, r->dst,
		 htons(r->dport));
}

/* The VISOCK_LINK_A_* attributes in @nest (zeros if NULL). */
static void parse_link(const struct nlattr *nest, struct link_rec *r)
{
	const struct nlattr *t[VISOCK_LINK_A_MAX + 1];

	memset(r, 0, sizeof(*r));
	PARSE_NEST(nest, t, link_pol);
	attr_str(t[VISOCK_LINK_A_DEV], r->dev, sizeof(r->dev));
	r->port = attr_u32(t[VISOCK_LINK_A_PORT]);
	r->qpn = attr_u32(t[VISOCK_LINK_A_QPN]);
	r->peer_qpn = attr_u32(t[VISOCK_LINK_A_PEER_QPN]);
	r->state = attr_u8(t[VISOCK_LINK_A_STATE]);
	attr_bin(t[VISOCK_LINK_A_GID], r->gid, sizeof(r->gid));
	attr_bin(t[VISOCK_LINK_A_PEER_GID], r->peer_gid, sizeof(r->peer_gid));
	r->reg_bytes = attr_u64(t[VISOCK_LINK_A_REG_BYTES]);
	r->wr_posted = attr_u64(t[VISOCK_LINK_A_WR_POSTED]);
	r->wc_ok = attr_u64(t[VISOCK_LINK_A_WC_OK]);
	r->wc_err = attr_u64(t[VISOCK_LINK_A_WC_ERR]);
	r->max_conns = attr_u32(t[VISOCK_LINK_A_MAX_CONNS]);
	r->conns = attr_u32(t[VISOCK_LINK_A_CONNS]);
	r->queue_bytes = attr_u64(t[VISOCK_LINK_A_QUEUE_BYTES]);
	parse_sock(t[VISOCK_LINK_A_SOCK], &r->sock);
}

struct link_list {
	struct link_rec *v;
	size_t n, cap;
};

static int links_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct nlattr *tb[VISOCK_A_MAX + 1];
	struct link_list *l = arg;

	PARSE_GENL(nlh, tb, genl_pol);
	if (!tb[VISOCK_A_LINK])
		return MNL_CB_OK;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		if (!l->v)
			die(1, "out of memory");
	}
	parse_link(tb[VISOCK_A_LINK], &l->v[l->n++]);
	return MNL_CB_OK;
}

static void links_get(struct link_list *l)
{
	struct nl nl;
	int err;

	memset(l, 0, sizeof(*l));
	visock_req(&nl, VISOCK_CMD_GET_LINKS, NLM_F_DUMP);
	err = nl_talk(&nl, links_cb, l);
	if (err == -EOPNOTSUPP || err == -EINVAL)
		die_nomod();
	if (err)
		die(1, "link dump: %s", strerror(-err));
	nl_close(&nl);
}

static void cmd_links(void)
{
	char gid[INET6_ADDRSTRLEN], pgid[INET6_ADDRSTRLEN], wrwc[48];
	char conns[24];
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
			json_u64(&f, "max_conns", k->max_conns);
			json_u64(&f, "conns", k->conns);
			json_u64(&f, "queue_bytes", k->queue_bytes);
			printf("}");
			continue;
		}
		if (!i)
			printf("%-8s %-4s %-7s %-8s %-7s %-24s %-24s %-10s %-9s %-10s %-12s %s\n",
			       "Device", "Port", "QPN", "PeerQPN", "State",
			       "Local", "Peer", "RegBytes", "Conns",
			       "QueueBytes", "WR/WC", "PeerGID");
		snprintf(wrwc, sizeof(wrwc), "%" PRIu64 "/%" PRIu64,
			 k->wr_posted, k->wc_ok + k->wc_err);
		snprintf(conns, sizeof(conns), "%u/%u", k->conns,
			 k->max_conns);
		printf("%-8s %-4u %-7u %-8u %-7s %-24s %-24s %-10" PRIu64
		       " %-9s %-10" PRIu64 " %-12s %s\n",
		       k->dev[0] ? k->dev : "-", k->port, k->qpn, k->peer_qpn,
		       link_state_name(k->state), k->sock.local, k->sock.peer,
		       k->reg_bytes, conns, k->queue_bytes, wrwc, pgid);
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

static int event_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct genlmsghdr *g = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *tb[VISOCK_A_MAX + 1];
	const struct nlattr *et[VISOCK_EVENT_A_MAX + 1];
	struct link_rec link;
	struct sock_rec sock;
	char dev[64];
	unsigned int type;
	int32_t error;

	(void)arg;
	if (nlh->nlmsg_len < mnl_nlmsg_size(GENL_HDRLEN) ||
	    g->cmd != VISOCK_CMD_EVENT)
		return MNL_CB_OK;
	PARSE_GENL(nlh, tb, genl_pol);
	if (!tb[VISOCK_A_EVENT])
		return MNL_CB_OK;
	PARSE_NEST(tb[VISOCK_A_EVENT], et, event_pol);
	type = attr_u8(et[VISOCK_EVENT_A_TYPE]);
	attr_str(et[VISOCK_EVENT_A_DEV], dev, sizeof(dev));
	error = (int32_t)attr_u32(et[VISOCK_EVENT_A_ERROR]);
	parse_link(et[VISOCK_EVENT_A_LINK], &link);
	parse_sock(et[VISOCK_EVENT_A_SOCK], &sock);

	if (json) {
		bool f = true;

		printf("{");
		json_string(&f, "event", event_name(type));
		if (dev[0])
			json_string(&f, "device", dev);
		if (et[VISOCK_EVENT_A_REASON])
			json_string(&f, "reason",
				    fb_name(attr_u8(et[VISOCK_EVENT_A_REASON])));
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
		return MNL_CB_OK;
	}
	printf("%s", event_name(type));
	if (dev[0])
		printf(" dev %s", dev);
	if (et[VISOCK_EVENT_A_LINK])
		printf(" port %u qpn %u peer_qpn %u", link.port, link.qpn,
		       link.peer_qpn);
	if (et[VISOCK_EVENT_A_REASON])
		printf(" reason %s", fb_name(attr_u8(et[VISOCK_EVENT_A_REASON])));
	if (et[VISOCK_EVENT_A_ERROR])
		printf(" error %d (%s)", error, strerror(-error));
	if (et[VISOCK_EVENT_A_SOCK])
		printf(" %s -> %s id %" PRIu64, sock.local, sock.peer, sock.id);
	printf("\n");
	return MNL_CB_OK;
}

/* Print events as they come, one per line, until killed. */
static void cmd_monitor(void)
{
	static uint64_t buf[BUF_SIZE / 8];
	struct nl nl;
	ssize_t n;

	genl_open(&nl);
	if (events_group < 0)
		die_nomod();
	if (mnl_socket_setsockopt(nl.sk, NETLINK_ADD_MEMBERSHIP, &events_group,
				  sizeof(events_group)) < 0)
		die(1, "joining the events group: %s", strerror(errno));
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (;;) {
		n = mnl_socket_recvfrom(nl.sk, buf, sizeof(buf));
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
		/* Events have sequence number 0 and come from the kernel. */
		mnl_cb_run(buf, n, 0, 0, event_cb, NULL);
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
	{ VISOCK_STATS_A_REC_AUTH_FAILED, "rec_auth_failed" },
};

static int stats_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct nlattr *tb[VISOCK_A_MAX + 1];
	const struct nlattr *st[VISOCK_STATS_A_MAX + 1];
	const struct nlattr *fb[VISOCK_FB_MAX + 1];
	unsigned int i;
	bool first = true;

	(void)arg;
	PARSE_GENL(nlh, tb, genl_pol);
	if (!tb[VISOCK_A_STATS])
		die(1, "statistics: no statistics in the answer");
	PARSE_NEST(tb[VISOCK_A_STATS], st, stats_pol);
	PARSE_NEST(st[VISOCK_STATS_A_FALLBACK], fb, fb_pol);

	if (json) {
		printf("{\"enable\":%u", attr_u8(tb[VISOCK_A_ENABLE]));
		first = false;
	} else {
		printf("%-24s %u\n", "enable", attr_u8(tb[VISOCK_A_ENABLE]));
	}
	for (i = 0; i < ARRAY_SIZE(stat_names); i++) {
		uint64_t v = attr_u64(st[stat_names[i].type]);

		if (json)
			printf("%s\"%s\":%" PRIu64, first ? "{" : ",",
			       stat_names[i].name, v);
		else
			printf("%-24s %" PRIu64 "\n", stat_names[i].name, v);
		first = false;
	}
	for (i = 1; i <= VISOCK_FB_MAX; i++) {
		uint64_t v = attr_u64(fb[i]);

		if (json)
			printf(",\"fallback_%s\":%" PRIu64, fb_name(i), v);
		else
			printf("fallback_%-15s %" PRIu64 "\n", fb_name(i), v);
	}
	if (json)
		printf("}\n");
	return MNL_CB_OK;
}

static void cmd_stats(bool reset)
{
	struct nl nl;
	int err;

	if (reset)
		genl_simple(VISOCK_CMD_RESET_STATS, 0, 0,
			    "resetting the statistics");
	visock_req(&nl, VISOCK_CMD_GET_STATS, 0);
	err = nl_talk(&nl, stats_cb, NULL);
	if (err)
		die(1, "statistics: %s", strerror(-err));
	nl_close(&nl);
}

/* ---- devices ---- */

/* One GID of a port (VISOCK_PORT_A_GID); returns whether it printed. */
static bool print_gid(const struct nlattr *nest, unsigned int ngids)
{
	const struct nlattr *gt[VISOCK_GID_A_MAX + 1];
	char gid[INET6_ADDRSTRLEN];
	const char *name;

	PARSE_NEST(nest, gt, gid_pol);
	if (!gt[VISOCK_GID_A_GID])
		return false;
	fmt_gid(gid, sizeof(gid), mnl_attr_get_payload(gt[VISOCK_GID_A_GID]));
	name = gt[VISOCK_GID_A_IFNAME] ?
	       mnl_attr_get_str(gt[VISOCK_GID_A_IFNAME]) : "";
	if (json)
		printf("%s{\"index\":%u,\"gid\":\"%s\","
		       "\"netdev\":\"%s\",\"ifindex\":%u}",
		       ngids ? "," : "", attr_u32(gt[VISOCK_GID_A_INDEX]), gid,
		       json_esc(name), attr_u32(gt[VISOCK_GID_A_IFINDEX]));
	else
		printf("    gid %-3u %-40s netdev %s\n",
		       attr_u32(gt[VISOCK_GID_A_INDEX]), gid, name);
	return true;
}

/* One port of a device (VISOCK_DEV_A_PORT) and its GIDs. */
static void print_port(const struct nlattr *nest, unsigned int nports)
{
	const struct nlattr *pt[VISOCK_PORT_A_MAX + 1];
	const struct nlattr *a;
	unsigned int ngids = 0;

	PARSE_NEST(nest, pt, port_pol);
	if (json)
		printf("%s{\"port\":%u,\"state\":\"%s\",\"gids\":[",
		       nports ? "," : "", attr_u32(pt[VISOCK_PORT_A_NUM]),
		       port_state_name(attr_u8(pt[VISOCK_PORT_A_STATE])));
	else
		printf("  port %u state %s\n", attr_u32(pt[VISOCK_PORT_A_NUM]),
		       port_state_name(attr_u8(pt[VISOCK_PORT_A_STATE])));
	/* GIDs are repeated attributes: walk the nest. */
	mnl_attr_for_each_nested(a, nest)
		if (mnl_attr_get_type(a) == VISOCK_PORT_A_GID &&
		    !mnl_attr_validate(a, MNL_TYPE_NESTED))
			ngids += print_gid(a, ngids);
	if (json)
		printf("]}");
}

static int dev_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct nlattr *tb[VISOCK_A_MAX + 1];
	const struct nlattr *dt[VISOCK_DEV_A_MAX + 1];
	const struct nlattr *a;
	unsigned int *count = arg, nports = 0;
	const char *name;

	PARSE_GENL(nlh, tb, genl_pol);
	if (!tb[VISOCK_A_DEV])
		return MNL_CB_OK;
	PARSE_NEST(tb[VISOCK_A_DEV], dt, dev_pol);
	name = dt[VISOCK_DEV_A_NAME] ?
	       mnl_attr_get_str(dt[VISOCK_DEV_A_NAME]) : "?";
	if (json)
		printf("%s\n  {\"name\":\"%s\",\"links\":%u,\"ports\":[",
		       *count ? "," : "", json_esc(name),
		       attr_u32(dt[VISOCK_DEV_A_LINKS]));
	else
		printf("%s: links %u\n", name, attr_u32(dt[VISOCK_DEV_A_LINKS]));
	(*count)++;

	/* Ports are repeated attributes: walk the nest. */
	mnl_attr_for_each_nested(a, tb[VISOCK_A_DEV])
		if (mnl_attr_get_type(a) == VISOCK_DEV_A_PORT &&
		    !mnl_attr_validate(a, MNL_TYPE_NESTED))
			print_port(a, nports++);
	if (json)
		printf("]}");
	return MNL_CB_OK;
}

static void cmd_devices(void)
{
	unsigned int count;

	count = dump_list(VISOCK_CMD_GET_DEVICES, dev_cb, "devices", "[");
	if (json)
		printf("%s]\n", count ? "\n" : "");
	else if (!count)
		printf("no RDMA devices\n");
}

/* ---- destination policy ---- */

static const char *action_name(unsigned int a)
{
	return a == VISOCK_POLICY_DENY ? "deny" : "allow";
}

static int default_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct nlattr *tb[VISOCK_A_MAX + 1];

	PARSE_GENL(nlh, tb, genl_pol);
	*(int *)arg = tb[VISOCK_A_POLICY_DEFAULT] ?
		      attr_u8(tb[VISOCK_A_POLICY_DEFAULT]) : -1;
	return MNL_CB_OK;
}

static int policy_default(void)
{
	struct nl nl;
	int err, dflt = -1;

	visock_req(&nl, VISOCK_CMD_GET_STATS, 0);
	err = nl_talk(&nl, default_cb, &dflt);
	if (err)
		die(1, "policy: %s", strerror(-err));
	if (dflt < 0)
		die_nomod();
	nl_close(&nl);
	return dflt;
}

static int rule_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct nlattr *tb[VISOCK_A_MAX + 1];
	const struct nlattr *rt[VISOCK_RULE_A_MAX + 1];
	char addr[INET6_ADDRSTRLEN + 8] = "", ports[16] = "";
	unsigned int *count = arg, lo, hi, xf;
	bool req;

	PARSE_GENL(nlh, tb, genl_pol);
	if (!tb[VISOCK_A_RULE])
		return MNL_CB_OK;
	PARSE_NEST(tb[VISOCK_A_RULE], rt, rule_pol);
	if (rt[VISOCK_RULE_A_ADDR4] || rt[VISOCK_RULE_A_ADDR6]) {
		int fam = rt[VISOCK_RULE_A_ADDR4] ? AF_INET : AF_INET6;
		const struct nlattr *a = fam == AF_INET ?
			rt[VISOCK_RULE_A_ADDR4] : rt[VISOCK_RULE_A_ADDR6];
		size_t n;

		inet_ntop(fam, mnl_attr_get_payload(a), addr, INET6_ADDRSTRLEN);
		n = strlen(addr);
		snprintf(addr + n, sizeof(addr) - n, "/%u",
			 attr_u8(rt[VISOCK_RULE_A_PREFIXLEN]));
	}
	lo = attr_u16(rt[VISOCK_RULE_A_PORT_MIN], 0);
	hi = attr_u16(rt[VISOCK_RULE_A_PORT_MAX], 65535);
	if (lo == hi)
		snprintf(ports, sizeof(ports), "%u", lo);
	else if (lo != 0 || hi != 65535)
		snprintf(ports, sizeof(ports), "%u-%u", lo, hi);
	xf = attr_u8(rt[VISOCK_RULE_A_XFORM]);
	req = !!rt[VISOCK_RULE_A_XFORM_REQUIRE];
	if (json) {
		printf("%s{\"index\":%u,\"action\":\"%s\",\"to\":\"%s\",",
		       *count ? "," : "", attr_u32(rt[VISOCK_RULE_A_INDEX]),
		       action_name(attr_u8(rt[VISOCK_RULE_A_ACTION])),
		       addr[0] ? addr : "any");
		printf("\"port_min\":%u,\"port_max\":%u,", lo, hi);
		printf("\"transform\":\"%s\",\"require\":%s}",
		       xform_name(xf), req ? "true" : "false");
	} else {
		printf("%u: %s%s%s%s%s%s%s%s\n",
		       attr_u32(rt[VISOCK_RULE_A_INDEX]),
		       action_name(attr_u8(rt[VISOCK_RULE_A_ACTION])),
		       addr[0] ? " to " : "", addr, ports[0] ? " port " : "",
		       ports, xf ? " transform " : "", xf ? xform_name(xf) : "",
		       req ? " require" : "");
	}
	(*count)++;
	return MNL_CB_OK;
}

static void policy_list(void)
{
	char open[64];
	int dflt;

	dflt = policy_default();
	snprintf(open, sizeof(open), "{\"default\":\"%s\",\"rules\":[",
		 action_name(dflt));
	dump_list(VISOCK_CMD_POLICY_GET, rule_cb, "policy", open);
	if (json)
		printf("]}\n");
	else
		printf("default %s\n", action_name(dflt));
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

/* Add an attribute to the rule in @nl; dies if the request is full. */
static void rule_put(struct nl *nl, struct nlmsghdr *nlh, uint16_t type,
		     size_t len, const void *data)
{
	if (!mnl_attr_put_check(nlh, sizeof(nl->req), type, len, data))
		die(EXIT_USAGE, "policy: too many words");
}

/* enum visock_xform from its name (not "none"); -1 if unknown. */
static int parse_xform(const char *s)
{
	unsigned int x;

	for (x = 1; x <= VISOCK_XFORM_MAX; x++)
		if (!strcmp(s, xform_name(x)))
			return x;
	return -1;
}

/*
 * Build VISOCK_A_RULE from "[index N] [allow|deny] [to PREFIX]
 * [port P[-Q]] [transform NAME [require]]" into the request @nlh of @nl.
 */
static void policy_rule(struct nl *nl, struct nlmsghdr *nlh, int argc,
			char **argv)
{
	struct nlattr *nest = mnl_attr_nest_start(nlh, VISOCK_A_RULE);
	bool have_action = false, have_index = false, have_xform = false;
	uint8_t action, addr[16], plen, xf;
	uint16_t lo, hi;
	uint32_t index;
	int i;

	for (i = 0; i < argc; i++) {
		const char *next = i + 1 < argc ? argv[i + 1] : NULL;

		if (parse_action(argv[i], &action)) {
			rule_put(nl, nlh, VISOCK_RULE_A_ACTION, 1, &action);
			have_action = true;
			continue;
		}
		if (!strcmp(argv[i], "require")) {
			if (!have_xform)
				die(EXIT_USAGE, "policy: require needs a transform before it");
			rule_put(nl, nlh, VISOCK_RULE_A_XFORM_REQUIRE, 0, NULL);
			continue;
		}
		if (!next)
			die(EXIT_USAGE, "'%s' needs a value", argv[i]);
		i++;
		if (!strcmp(argv[i - 1], "index")) {
			index = parse_num(next, VISOCK_POLICY_MAX_RULES, "index");
			rule_put(nl, nlh, VISOCK_RULE_A_INDEX, 4, &index);
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
			rule_put(nl, nlh, v6 ? VISOCK_RULE_A_ADDR6 :
				 VISOCK_RULE_A_ADDR4, v6 ? 16 : 4, addr);
			if (slash) {
				plen = parse_num(slash, v6 ? 128 : 32,
						 "prefix length");
				rule_put(nl, nlh, VISOCK_RULE_A_PREFIXLEN, 1,
					 &plen);
			}
		} else if (!strcmp(argv[i - 1], "port")) {
			char buf[16], *dash;

			snprintf(buf, sizeof(buf), "%s", next);
			dash = strchr(buf, '-');
			if (dash)
				*dash++ = '\0';
			lo = parse_num(buf, 65535, "port");
			hi = dash ? parse_num(dash, 65535, "port") : lo;
			rule_put(nl, nlh, VISOCK_RULE_A_PORT_MIN, 2, &lo);
			rule_put(nl, nlh, VISOCK_RULE_A_PORT_MAX, 2, &hi);
		} else if (!strcmp(argv[i - 1], "transform")) {
			int x = parse_xform(next);

			if (x < 0)
				die(EXIT_USAGE, "policy: unknown transform '%s'",
				    next);
			xf = x;
			rule_put(nl, nlh, VISOCK_RULE_A_XFORM, 1, &xf);
			have_xform = true;
		} else {
			die(EXIT_USAGE, "policy: unknown word '%s'",
			    argv[i - 1]);
		}
	}
	if (!have_action && !have_index)
		die(EXIT_USAGE, "policy: a rule needs allow or deny");
	mnl_attr_nest_end(nlh, nest);
}

static void policy_change(int cmd, int argc, char **argv, const char *what)
{
	struct nlmsghdr *nlh;
	struct nl nl;
	int err;

	nlh = visock_req(&nl, cmd, 0);
	if (cmd != VISOCK_CMD_POLICY_FLUSH)
		policy_rule(&nl, nlh, argc, argv);
	err = nl_talk(&nl, NULL, NULL);
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
	nl_close(&nl);
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
		genl_simple(VISOCK_CMD_SET, VISOCK_A_POLICY_DEFAULT, a,
			    "setting the default policy");
	} else {
		die(EXIT_USAGE, "policy: unknown command '%s'", sub);
	}
}

/* ---- pre-shared keys ---- */

static int key_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct nlattr *tb[VISOCK_A_MAX + 1];
	const struct nlattr *kt[VISOCK_KEY_A_MAX + 1];
	char name[VISOCK_KEY_NAME_LEN];
	unsigned int *count = arg;
	bool cur;

	PARSE_GENL(nlh, tb, genl_pol);
	if (!tb[VISOCK_A_KEY])
		return MNL_CB_OK;
	PARSE_NEST(tb[VISOCK_A_KEY], kt, key_pol);
	attr_str(kt[VISOCK_KEY_A_NAME], name, sizeof(name));
	cur = kt[VISOCK_KEY_A_CURRENT];
	if (json) {
		printf("%s{\"id\":%u,\"name\":\"%s\",\"state\":\"%s\"}",
		       *count ? "," : "", attr_u32(kt[VISOCK_KEY_A_ID]),
		       json_esc(name), cur ? "current" : "accept");
	} else {
		printf("%u\t%s\t%s\n", attr_u32(kt[VISOCK_KEY_A_ID]),
		       cur ? "current" : "accept", name);
	}
	(*count)++;
	return MNL_CB_OK;
}

/* The id and state of each key; the kernel never sends a secret. */
static void key_list(void)
{
	dump_list(VISOCK_CMD_KEY_GET, key_cb, "key", "[");
	if (json)
		printf("]\n");
}

/*
 * The secret, as hexadecimal text in @path ("-": standard input), so
 * that it never appears on a command line.
 */
static size_t key_read_secret(const char *path, uint8_t *out)
{
	char text[4 * VISOCK_KEY_SECRET_MAX + 2];
	size_t n = 0, len;
	FILE *f;
	char *p;

	f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	if (!f)
		die(1, "key: %s: %s", path, strerror(errno));
	len = fread(text, 1, sizeof(text) - 1, f);
	if (f != stdin)
		fclose(f);
	text[len] = '\0';
	for (p = text; *p; p++) {
		unsigned int v;

		if (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
			continue;
		if (!p[1] || sscanf(p, "%2x", &v) != 1 ||
		    !strchr("0123456789abcdefABCDEF", p[0]) ||
		    !strchr("0123456789abcdefABCDEF", p[1]))
			die(EXIT_USAGE, "key: the secret must be hex digits");
		if (n == VISOCK_KEY_SECRET_MAX)
			die(EXIT_USAGE, "key: secret longer than %d bytes",
			    VISOCK_KEY_SECRET_MAX);
		out[n++] = v;
		p++;
	}
	memset(text, 0, sizeof(text));
	if (n < VISOCK_KEY_SECRET_MIN)
		die(EXIT_USAGE, "key: secret shorter than %d bytes",
		    VISOCK_KEY_SECRET_MIN);
	return n;
}

static void key_change(int cmd, int argc, char **argv, const char *what)
{
	uint8_t secret[VISOCK_KEY_SECRET_MAX];
	const char *file = "-", *name = NULL;
	bool current = false;
	struct nlmsghdr *nlh;
	struct nlattr *nest;
	uint32_t id;
	struct nl nl;
	size_t n = 0;
	int i, err;

	if (argc < 1)
		die(EXIT_USAGE, "key: which key id?");
	id = parse_num(argv[0], UINT32_MAX, "key id");
	if (!id)
		die(EXIT_USAGE, "key: ids start at 1");
	for (i = 1; i < argc; i++) {
		if (cmd == VISOCK_CMD_KEY_ADD && !strcmp(argv[i], "current")) {
			current = true;
		} else if (cmd == VISOCK_CMD_KEY_ADD && i + 1 < argc &&
			   !strcmp(argv[i], "name")) {
			name = argv[++i];
			if (strlen(name) >= VISOCK_KEY_NAME_LEN)
				die(EXIT_USAGE, "key: name longer than %d",
				    VISOCK_KEY_NAME_LEN - 1);
		} else if (cmd == VISOCK_CMD_KEY_ADD && i + 1 < argc &&
			   !strcmp(argv[i], "secret-file")) {
			file = argv[++i];
		} else {
			die(EXIT_USAGE, "key: unknown word '%s'", argv[i]);
		}
	}
	if (cmd == VISOCK_CMD_KEY_ADD)
		n = key_read_secret(file, secret);

	nlh = visock_req(&nl, cmd, 0);
	nest = mnl_attr_nest_start(nlh, VISOCK_A_KEY);
	mnl_attr_put_u32(nlh, VISOCK_KEY_A_ID, id);
	if (name)
		mnl_attr_put_strz(nlh, VISOCK_KEY_A_NAME, name);
	if (n)
		mnl_attr_put(nlh, VISOCK_KEY_A_SECRET, n, secret);
	if (current)
		mnl_attr_put(nlh, VISOCK_KEY_A_CURRENT, 0, NULL);
	mnl_attr_nest_end(nlh, nest);
	memset(secret, 0, sizeof(secret));
	err = nl_talk(&nl, NULL, NULL);
	memset(nl.req, 0, sizeof(nl.req));
	if (err == -EPERM)
		die(1, "%s: permission denied (needs CAP_NET_ADMIN)", what);
	if (err == -EEXIST)
		die(1, "%s: a key with id %u exists", what, id);
	if (err == -ENOENT)
		die(1, "%s: no key with id %u", what, id);
	if (err == -ENOSPC)
		die(1, "%s: too many keys (at most %d)", what, VISOCK_KEY_MAX);
	if (err)
		die(1, "%s: %s%s%s", what, strerror(-err),
		    nl_errmsg[0] ? ": " : "", nl_errmsg);
	nl_close(&nl);
}

static void cmd_key(int argc, char **argv)
{
	const char *sub = argc ? argv[0] : "list";

	if (!strcmp(sub, "list") || !strcmp(sub, "show"))
		key_list();
	else if (!strcmp(sub, "add"))
		key_change(VISOCK_CMD_KEY_ADD, argc - 1, argv + 1,
			   "adding the key");
	else if (!strcmp(sub, "del") || !strcmp(sub, "delete"))
		key_change(VISOCK_CMD_KEY_DEL, argc - 1, argv + 1,
			   "removing the key");
	else if (!strcmp(sub, "use"))
		key_change(VISOCK_CMD_KEY_USE, argc - 1, argv + 1,
			   "making the key current");
	else
		die(EXIT_USAGE, "key: unknown command '%s'", sub);
}

/* ---- transform pairs ---- */

/* One pair (VISOCK_A_XFORM) as a table row or a JSON object. */
static int xform_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct nlattr *tb[VISOCK_A_MAX + 1];
	const struct nlattr *xt[VISOCK_XFORM_A_MAX + 1];
	char name[32], alg[128], driver[128], flags[64] = "";
	char comp[64] = "", cdriver[128] = "";
	unsigned int *count = arg;
	bool avail, hw, async, integ;
	int32_t error;
	bool f = true;

	PARSE_GENL(nlh, tb, genl_pol);
	if (!tb[VISOCK_A_XFORM])
		return MNL_CB_OK;
	PARSE_NEST(tb[VISOCK_A_XFORM], xt, xform_pol);
	attr_str(xt[VISOCK_XFORM_A_NAME], name, sizeof(name));
	attr_str(xt[VISOCK_XFORM_A_ALG], alg, sizeof(alg));
	attr_str(xt[VISOCK_XFORM_A_DRIVER], driver, sizeof(driver));
	if (xt[VISOCK_XFORM_A_COMP])
		attr_str(xt[VISOCK_XFORM_A_COMP], comp, sizeof(comp));
	if (xt[VISOCK_XFORM_A_COMP_DRIVER])
		attr_str(xt[VISOCK_XFORM_A_COMP_DRIVER], cdriver,
			 sizeof(cdriver));
	avail = xt[VISOCK_XFORM_A_AVAILABLE];
	hw = xt[VISOCK_XFORM_A_HW];
	async = xt[VISOCK_XFORM_A_ASYNC];
	integ = xt[VISOCK_XFORM_A_INTEGRITY_ONLY];
	error = (int32_t)attr_u32(xt[VISOCK_XFORM_A_ERROR]);

	if (json) {
		printf("%s\n  {", *count ? "," : "");
		json_u64(&f, "id", attr_u8(xt[VISOCK_XFORM_A_ID]));
		json_string(&f, "name", name);
		json_string(&f, "alg", alg);
		json_bool(&f, "available", avail);
		if (!avail)
			json_int(&f, "error", error);
		json_string(&f, "driver", driver);
		json_u64(&f, "priority", attr_u32(xt[VISOCK_XFORM_A_PRIORITY]));
		json_bool(&f, "hw", hw);
		json_bool(&f, "async", async);
		json_u64(&f, "key_size", attr_u32(xt[VISOCK_XFORM_A_KEY_SIZE]));
		json_u64(&f, "tag_size", attr_u32(xt[VISOCK_XFORM_A_TAG_SIZE]));
		json_u64(&f, "nonce_size",
			 attr_u32(xt[VISOCK_XFORM_A_NONCE_SIZE]));
		json_u64(&f, "record_size",
			 attr_u32(xt[VISOCK_XFORM_A_RECORD_SIZE]));
		json_bool(&f, "integrity_only", integ);
		json_u64(&f, "max_records",
			 attr_u64(xt[VISOCK_XFORM_A_MAX_RECORDS]));
		if (comp[0]) {
			json_string(&f, "comp", comp);
			json_string(&f, "comp_driver", cdriver);
		}
		printf("}");
	} else {
		if (!*count)
			printf("%-18s %2s %-28s %-24s %5s %3s %3s %5s %6s %s\n",
			       "NAME", "ID", "ALGORITHM", "DRIVER", "PRIO",
			       "KEY", "TAG", "NONCE", "RECORD", "FLAGS");
		if (!avail)
			snprintf(flags, sizeof(flags), "unavailable (%s)",
				 strerror(-error));
		else
			snprintf(flags, sizeof(flags), "%s%s%s%s",
				 hw ? "hw," : "", async ? "async," : "",
				 integ ? "integrity-only," : "",
				 hw || async || integ ? "" : "-");
		if (flags[strlen(flags) - 1] == ',')
			flags[strlen(flags) - 1] = '\0';
		printf("%-18s %2u %-28s %-24s %5u %3u %3u %5u %6u %s\n", name,
		       attr_u8(xt[VISOCK_XFORM_A_ID]), alg,
		       avail ? driver : "-",
		       attr_u32(xt[VISOCK_XFORM_A_PRIORITY]),
		       attr_u32(xt[VISOCK_XFORM_A_KEY_SIZE]),
		       attr_u32(xt[VISOCK_XFORM_A_TAG_SIZE]),
		       attr_u32(xt[VISOCK_XFORM_A_NONCE_SIZE]),
		       attr_u32(xt[VISOCK_XFORM_A_RECORD_SIZE]), flags);
		if (comp[0])
			printf("%-18s %2s %-28s %-24s\n", "", "",
			       comp, avail ? cdriver : "-");
	}
	(*count)++;
	return MNL_CB_OK;
}

/* The transform pairs and the implementation the crypto API picks. */
static void cmd_transforms(void)
{
	unsigned int count;

	count = dump_list(VISOCK_CMD_GET_TRANSFORMS, xform_cb, "transforms",
			  "[");
	if (json)
		printf("%s]\n", count ? "\n" : "");
	else if (!count)
		printf("no transform pairs\n");
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
		"             [transform NAME [require]]\n"
		"  policy del index N | allow|deny [to PREFIX] [port P[-Q]]\n"
		"             [transform NAME [require]]\n"
		"  policy flush | default [allow|deny]\n"
		"  key [list]          pre-shared keys: id, state, name\n"
		"  key add ID [name NAME] [current] [secret-file FILE|-]\n"
		"                      secret: hex text, standard input by default\n"
		"  key use ID | del ID\n"
		"  transforms          transform pairs, the crypto driver picked\n"
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
	    strcmp(cmd, "policy") && strcmp(cmd, "key"))
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
	} else if (!strcmp(cmd, "key")) {
		cmd_key(nwords, words);
	} else if (!strcmp(cmd, "transforms")) {
		cmd_transforms();
	} else if (!strcmp(cmd, "enable") || !strcmp(cmd, "disable")) {
		uint8_t v = !strcmp(cmd, "enable");

		genl_simple(VISOCK_CMD_SET, VISOCK_A_ENABLE, v,
			    "setting net.visock.enable");
	} else {
		fprintf(stderr, "%s: unknown command '%s'\n", prog, cmd);
		print_usage(stderr, EXIT_USAGE);
	}
	free(words);
	return 0;
}
