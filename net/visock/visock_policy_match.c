// SPDX-License-Identifier: GPL-2.0
/*
 * visock: matching destinations against the rules of the destination
 * policy (see visock_policy.h).  Pure logic, no locking: the caller
 * provides a stable array of rules.
 */
#include <linux/errno.h>
#include <linux/socket.h>
#include <linux/string.h>
#include <linux/visock.h>
#include <linux/visock_genl.h>
#include <asm/byteorder.h>

#include "visock_policy.h"

/* Mask of the first @bits bits (capped at 32) of a word, network order. */
static __be32 visock_policy_mask(unsigned int bits)
{
	if (!bits)
		return 0;
	return bits >= 32 ? htonl(~0u) : htonl(~0u << (32 - bits));
}

/* Mask of word @i of an address with prefix length @plen. */
static __be32 visock_policy_word_mask(unsigned int plen, unsigned int i)
{
	return plen > i * 32 ? visock_policy_mask(plen - i * 32) : 0;
}

/* Do @a and @b agree in their first @plen bits? */
static bool visock_policy_prefix_eq(const __be32 *a, const __be32 *b,
				    unsigned int plen)
{
	unsigned int i;

	for (i = 0; i < 4; i++)
		if ((a[i] ^ b[i]) & visock_policy_word_mask(plen, i))
			return false;
	return true;
}

/**
 * visock_policy_rule_check() - is a rule well formed
 * @r: the rule, as parsed from netlink
 * @why: set to a message for the user when it is not
 *
 * The address family is 0 (any, then without address and prefix),
 * AF_INET or AF_INET6, the prefix length fits the family, no address bit
 * beyond the prefix is set, the port range is not reversed, the
 * action is one of VISOCK_POLICY_*, a transform pair is named only by an
 * allow rule and is a known one, and only a named pair is required.
 *
 * Context: any.
 * Return: 0 or -EINVAL.
 */
int visock_policy_rule_check(const struct visock_policy_rule *r,
			     const char **why)
{
	unsigned int max, i;

	switch (r->family) {
	case 0:
		max = 0;
		break;
	case AF_INET:
		max = 32;
		break;
	case AF_INET6:
		max = 128;
		break;
	default:
		*why = "unknown address family";
		return -EINVAL;
	}
	if (r->plen > max) {
		*why = "prefix length too long for the address";
		return -EINVAL;
	}
	for (i = 0; i < 4; i++) {
		if (r->addr[i] & ~visock_policy_word_mask(r->plen, i)) {
			*why = "address has bits set beyond the prefix length";
			return -EINVAL;
		}
	}
	if (r->port_min > r->port_max) {
		*why = "port range ends before it starts";
		return -EINVAL;
	}
	if (r->action != VISOCK_POLICY_ALLOW &&
	    r->action != VISOCK_POLICY_DENY) {
		*why = "unknown action";
		return -EINVAL;
	}
	if (r->xform > VISOCK_XFORM_MAX) {
		*why = "unknown transform";
		return -EINVAL;
	}
	if (r->xform && r->action != VISOCK_POLICY_ALLOW) {
		*why = "a transform needs an allow rule";
		return -EINVAL;
	}
	if (r->xform_require && !r->xform) {
		*why = "require needs a transform";
		return -EINVAL;
	}
	return 0;
}

/**
 * visock_policy_rule_equal() - do two checked rules say the same
 * @a: one rule
 * @b: the other
 *
 * Context: any.
 * Return: true if they match the same destinations with the same action
 * and transform.
 */
bool visock_policy_rule_equal(const struct visock_policy_rule *a,
			      const struct visock_policy_rule *b)
{
	return a->family == b->family && a->plen == b->plen &&
	       a->action == b->action && a->port_min == b->port_min &&
	       a->port_max == b->port_max && a->xform == b->xform &&
	       a->xform_require == b->xform_require &&
	       !memcmp(a->addr, b->addr, sizeof(a->addr));
}

/**
 * visock_policy_rule_match() - does a rule apply to a destination
 * @r: a checked rule
 * @dst: the destination, from visock_policy_dst_init()
 *
 * Context: any.
 * Return: true if @dst's port is in @r's range and, unless @r is for any
 * family, @dst has @r's family and its first @r->plen bits.
 */
bool visock_policy_rule_match(const struct visock_policy_rule *r,
			      const struct visock_policy_dst *dst)
{
	if (dst->port < r->port_min || dst->port > r->port_max)
		return false;
	if (!r->family)
		return true;
	return r->family == dst->family &&
	       visock_policy_prefix_eq(r->addr, dst->addr, r->plen);
}

/**
 * visock_policy_lookup() - the action for a destination
 * @rules: checked rules, in the order they are tried
 * @n: number of @rules
 * @dflt: action when no rule matches
 * @dst: the destination, from visock_policy_dst_init()
 *
 * The first matching rule wins.
 *
 * Context: any; the caller keeps @rules stable (RCU in visock_policy.c).
 * Return: VISOCK_POLICY_ALLOW or VISOCK_POLICY_DENY.
 */
u8 visock_policy_lookup(const struct visock_policy_rule *rules, unsigned int n,
			u8 dflt, const struct visock_policy_dst *dst)
{
	struct visock_policy_verdict v;

	visock_policy_decide(rules, n, dflt, dst, &v);
	return v.action;
}

/**
 * visock_policy_decide() - the verdict for a destination
 * @rules: checked rules, in the order they are tried
 * @n: number of @rules
 * @dflt: action when no rule matches
 * @dst: the destination, from visock_policy_dst_init()
 * @v: filled in: the first matching rule's action and transform, or
 *	@dflt without a transform
 *
 * Context: any; the caller keeps @rules stable (RCU in visock_policy.c).
 */
void visock_policy_decide(const struct visock_policy_rule *rules,
			  unsigned int n, u8 dflt,
			  const struct visock_policy_dst *dst,
			  struct visock_policy_verdict *v)
{
	unsigned int i;

	memset(v, 0, sizeof(*v));
	v->action = dflt;
	for (i = 0; i < n; i++) {
		if (visock_policy_rule_match(&rules[i], dst)) {
			v->action = rules[i].action;
			v->xform = rules[i].xform;
			v->xform_require = rules[i].xform_require;
			return;
		}
	}
}

/**
 * visock_policy_dst_init() - a destination for visock_policy_lookup()
 * @dst: filled in
 * @family: AF_INET or AF_INET6
 * @addr: 4 (AF_INET) or 16 (AF_INET6) bytes, network order
 * @port: destination port, host order
 *
 * An IPv4-mapped IPv6 address (::ffff:a.b.c.d, what a dual-stack IPv6
 * socket connects to for an IPv4 peer) becomes the IPv4 address, so that
 * IPv4 rules cover it.
 *
 * Context: any.
 */
void visock_policy_dst_init(struct visock_policy_dst *dst, int family,
			    const __be32 *addr, u16 port)
{
	memset(dst, 0, sizeof(*dst));
	dst->port = port;
	if (family == AF_INET6 && !addr[0] && !addr[1] &&
	    addr[2] == htonl(0xffff)) {
		family = AF_INET;
		addr += 3;
	}
	dst->family = family;
	memcpy(dst->addr, addr, family == AF_INET6 ? 16 : 4);
}
