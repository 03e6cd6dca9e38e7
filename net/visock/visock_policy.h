/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: destination policy rules and their matching.
 *
 * The matching (visock_policy_match.c) is pure logic, without sockets or
 * netlink, so that the KUnit runner can build it on its own.  The
 * per-namespace table, its locking and the netlink side are in
 * visock_policy.c.
 */
#ifndef _NET_VISOCK_POLICY_H
#define _NET_VISOCK_POLICY_H

#include <linux/types.h>
#include <linux/visock.h>
#include <net/netlink.h>

struct genl_info;
struct net;
struct netlink_callback;
struct sk_buff;
struct sockaddr;

/**
 * struct visock_policy_rule - one destination policy rule
 * @addr: address prefix, network order; IPv4 in @addr[0]
 * @port_min: first destination port, host order
 * @port_max: last destination port, host order (>= @port_min)
 * @family: 0 (any address of both families), AF_INET or AF_INET6
 * @plen: prefix length: bits of @addr that count (0 with @family 0)
 * @action: VISOCK_POLICY_ALLOW or VISOCK_POLICY_DENY
 * @xform: transform pair (enum visock_xform) connections to the
 *	destination ask for, VISOCK_XFORM_NONE for no choice (allow only)
 * @xform_require: @xform is required: offered alone, and without it the
 *	connection stays on TCP (VISOCK_FB_XFORM_REQUIRED)
 */
struct visock_policy_rule {
	__be32 addr[4];
	u16 port_min;
	u16 port_max;
	u8 family;
	u8 plen;
	u8 action;
	u8 xform;
	bool xform_require;
};

/**
 * struct visock_policy_verdict - what the policy says about a destination
 * @action: VISOCK_POLICY_ALLOW or VISOCK_POLICY_DENY
 * @xform: the transform pair the deciding rule names, or
 *	VISOCK_XFORM_NONE
 * @xform_require: that rule requires @xform
 */
struct visock_policy_verdict {
	u8 action;
	u8 xform;
	bool xform_require;
};

/**
 * struct visock_policy_dst - a destination being looked up
 * @addr: network order; IPv4 in @addr[0]
 * @port: host order
 * @family: AF_INET or AF_INET6 (IPv4-mapped IPv6 turned into AF_INET)
 */
struct visock_policy_dst {
	__be32 addr[4];
	u16 port;
	u8 family;
};

/* visock_policy_match.c */
int visock_policy_rule_check(const struct visock_policy_rule *r,
			     const char **why);
bool visock_policy_rule_equal(const struct visock_policy_rule *a,
			      const struct visock_policy_rule *b);
bool visock_policy_rule_match(const struct visock_policy_rule *r,
			      const struct visock_policy_dst *dst);
u8 visock_policy_lookup(const struct visock_policy_rule *rules, unsigned int n,
			u8 dflt, const struct visock_policy_dst *dst);
void visock_policy_decide(const struct visock_policy_rule *rules,
			  unsigned int n, u8 dflt,
			  const struct visock_policy_dst *dst,
			  struct visock_policy_verdict *v);
void visock_policy_dst_init(struct visock_policy_dst *dst, int family,
			    const __be32 *addr, u16 port);

/* visock_policy.c */
extern const struct nla_policy visock_rule_nl_policy[VISOCK_RULE_A_MAX + 1];
int visock_policy_net_init(struct net *net);
void visock_policy_net_exit(struct net *net);
void visock_policy_get(struct net *net, const struct sockaddr *addr, int len,
		       struct visock_policy_verdict *v);
u8 visock_policy_get_default(struct net *net);
int visock_policy_set_default(struct net *net, u8 dflt);
int visock_policy_nl_add(struct sk_buff *skb, struct genl_info *info);
int visock_policy_nl_del(struct sk_buff *skb, struct genl_info *info);
int visock_policy_nl_flush(struct sk_buff *skb, struct genl_info *info);
int visock_policy_nl_dump(struct sk_buff *skb, struct netlink_callback *cb);

#endif /* _NET_VISOCK_POLICY_H */
