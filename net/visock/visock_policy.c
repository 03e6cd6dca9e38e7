// SPDX-License-Identifier: GPL-2.0
/*
 * visock: the destination policy of a network namespace.
 *
 * A redirected program's socket() says nothing about where it will
 * connect, so the choice "visock or plain TCP by destination" waits until
 * connect(): visock_connect() asks visock_policy_get() before the
 * internal TCP socket sends its SYN.  A denied connection does not
 * announce visock in the SYN (visock_tcp_syn_opt() sees
 * VISOCK_F_POLICY_TCP) and settles on TCP with VISOCK_FB_POLICY, exactly
 * like a connection to a peer without visock; the peer needs nothing.
 * Accepted connections are never looked up: the policy is about where
 * this host connects to, and a server cannot refuse an announcement
 * without also hiding itself from allowed clients.
 *
 * The rules live in one array per namespace (struct visock_policy_table),
 * replaced as a whole on every change (copy, modify, publish with RCU,
 * free the old one after a grace period).  Lookups on connect() take no
 * lock but rcu_read_lock(); changes are rare and go through netlink
 * (visock_genl.c), serialised by struct visock_net.pol_lock.  A table
 * holds at most VISOCK_POLICY_MAX_RULES rules (uapi), which bounds both
 * the memory and the length of a lookup.
 */
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <net/genetlink.h>
#include <net/netlink.h>

#include "visock.h"
#include "visock_genl.h"
#include "visock_policy.h"

/**
 * struct visock_policy_table - the rules of a namespace, read under RCU
 * @rcu: frees the table after the grace period following its replacement
 * @gen: incremented by every change; lets a dump notice one
 * @n: number of @rules
 * @dflt: action when no rule matches
 * @rules: the rules, tried in order
 */
struct visock_policy_table {
	struct rcu_head rcu;
	unsigned int gen;
	unsigned int n;
	u8 dflt;
	struct visock_policy_rule rules[];
};

static struct visock_policy_table *visock_policy_alloc(unsigned int n)
{
	struct visock_policy_table *t;

	return kzalloc(struct_size(t, rules, n), GFP_KERNEL);
}

/**
 * visock_policy_net_init() - empty policy of a new namespace
 * @net: the namespace being created
 *
 * No rule, default action VISOCK_POLICY_ALLOW.
 *
 * Context: process context, pernet init.
 * Return: 0 or -ENOMEM.
 */
int visock_policy_net_init(struct net *net)
{
	struct visock_net *vn = visock_net(net);
	struct visock_policy_table *t = visock_policy_alloc(0);

	if (!t)
		return -ENOMEM;
	t->dflt = VISOCK_POLICY_ALLOW;
	mutex_init(&vn->pol_lock);
	RCU_INIT_POINTER(vn->policy, t);
	return 0;
}

/**
 * visock_policy_net_exit() - free the rules of a namespace
 * @net: the namespace going away
 *
 * No socket of @net is left to look them up, but freeing after a grace
 * period costs nothing and keeps the rule simple.
 *
 * Context: process context, pernet exit (also at module unload).
 */
void visock_policy_net_exit(struct net *net)
{
	struct visock_net *vn = visock_net(net);
	struct visock_policy_table *t;

	t = rcu_replace_pointer(vn->policy, NULL, true);
	kfree_rcu(t, rcu);
	mutex_destroy(&vn->pol_lock);
}

/**
 * visock_policy_get() - what the policy says about a connection to @addr
 * @net: namespace of the connecting socket
 * @addr: the address given to connect()
 * @len: its length
 * @v: filled in: the first matching rule's (or the default) action, and
 *	the transform pair that rule names
 *
 * An address TCP would refuse (too short, unknown family, AF_UNSPEC)
 * is allowed, without a transform: TCP reports the error.
 *
 * Context: process context or softirq; takes no lock, only
 * rcu_read_lock().
 */
void visock_policy_get(struct net *net, const struct sockaddr *addr, int len,
		       struct visock_policy_verdict *v)
{
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)addr;
	const struct sockaddr_in *sin = (const struct sockaddr_in *)addr;
	const struct visock_policy_table *t;
	struct visock_policy_dst dst;

	memset(v, 0, sizeof(*v));
	v->action = VISOCK_POLICY_ALLOW;
	if (len < (int)sizeof(sa_family_t))
		return;
	if (addr->sa_family == AF_INET && len >= (int)sizeof(*sin))
		visock_policy_dst_init(&dst, AF_INET, &sin->sin_addr.s_addr,
				       ntohs(sin->sin_port));
	else if (addr->sa_family == AF_INET6 &&
		 len >= (int)offsetofend(struct sockaddr_in6, sin6_addr))
		visock_policy_dst_init(&dst, AF_INET6,
				       sin6->sin6_addr.s6_addr32,
				       ntohs(sin6->sin6_port));
	else
		return;

	rcu_read_lock();
	t = rcu_dereference(visock_net(net)->policy);
	if (t)
		visock_policy_decide(t->rules, t->n, t->dflt, &dst, v);
	rcu_read_unlock();
}

/* The current table; only with pol_lock held. */
static struct visock_policy_table *visock_policy_locked(struct visock_net *vn)
{
	lockdep_assert_held(&vn->pol_lock);
	return rcu_dereference_protected(vn->policy,
					 lockdep_is_held(&vn->pol_lock));
}

/**
 * visock_policy_replace() - publish a modified copy of the current table
 * @vn: the namespace, pol_lock held
 * @pos: where the copy differs: @ins goes there, @skip rules go away
 * @ins: rule to insert at @pos, or NULL
 * @skip: how many rules of the current table to leave out from @pos on
 * @dflt: default action of the copy
 *
 * Readers see the old table or the new one, never a mix; the old one is
 * freed after a grace period.
 *
 * Context: process context, pol_lock held.
 * Return: 0 or -ENOMEM (nothing changed).
 */
static int visock_policy_replace(struct visock_net *vn, unsigned int pos,
				 const struct visock_policy_rule *ins,
				 unsigned int skip, u8 dflt)
{
	struct visock_policy_table *old, *t;
	size_t sz = sizeof(old->rules[0]);

	lockdep_assert_held(&vn->pol_lock);
	old = visock_policy_locked(vn);
	t = visock_policy_alloc(old->n + !!ins - skip);
	if (!t)
		return -ENOMEM;
	t->n = old->n + !!ins - skip;
	t->dflt = dflt;
	t->gen = old->gen + 1;
	memcpy(t->rules, old->rules, pos * sz);
	if (ins)
		t->rules[pos] = *ins;
	memcpy(&t->rules[pos + !!ins], &old->rules[pos + skip],
	       (old->n - pos - skip) * sz);
	rcu_assign_pointer(vn->policy, t);
	kfree_rcu(old, rcu);
	return 0;
}

/**
 * visock_policy_get_default() - the action when no rule matches
 * @net: the namespace
 *
 * Context: any.
 * Return: VISOCK_POLICY_ALLOW or VISOCK_POLICY_DENY.
 */
u8 visock_policy_get_default(struct net *net)
{
	const struct visock_policy_table *t;
	u8 dflt;

	rcu_read_lock();
	t = rcu_dereference(visock_net(net)->policy);
	dflt = t ? t->dflt : VISOCK_POLICY_ALLOW;
	rcu_read_unlock();
	return dflt;
}

/**
 * visock_policy_set_default() - set the action when no rule matches
 * @net: the namespace
 * @dflt: VISOCK_POLICY_ALLOW or VISOCK_POLICY_DENY (netlink checked it)
 *
 * Context: process context; takes pol_lock.
 * Return: 0 or -ENOMEM.
 */
int visock_policy_set_default(struct net *net, u8 dflt)
{
	struct visock_net *vn = visock_net(net);
	struct visock_policy_table *old;
	int err = 0;

	/* pol_lock: one change of the table at a time. */
	mutex_lock(&vn->pol_lock);
	old = visock_policy_locked(vn);
	if (old->dflt != dflt)
		err = visock_policy_replace(vn, old->n, NULL, 0, dflt);
	mutex_unlock(&vn->pol_lock);
	return err;
}

/* Attributes of VISOCK_A_RULE; the family's policy refers to it. */
const struct nla_policy visock_rule_nl_policy[VISOCK_RULE_A_MAX + 1] = {
	[VISOCK_RULE_A_ACTION]		= NLA_POLICY_MAX(NLA_U8,
							 VISOCK_POLICY_DENY),
	[VISOCK_RULE_A_ADDR4]		= NLA_POLICY_EXACT_LEN(4),
	[VISOCK_RULE_A_ADDR6]		= NLA_POLICY_EXACT_LEN(16),
	[VISOCK_RULE_A_PREFIXLEN]	= NLA_POLICY_MAX(NLA_U8, 128),
	[VISOCK_RULE_A_PORT_MIN]	= { .type = NLA_U16 },
	[VISOCK_RULE_A_PORT_MAX]	= { .type = NLA_U16 },
	[VISOCK_RULE_A_INDEX]		= NLA_POLICY_MAX(NLA_U32,
							 VISOCK_POLICY_MAX_RULES),
	[VISOCK_RULE_A_XFORM]		= NLA_POLICY_RANGE(NLA_U8, 1,
							   VISOCK_XFORM_MAX),
	[VISOCK_RULE_A_XFORM_REQUIRE]	= { .type = NLA_FLAG },
};

/*
 * Parse the VISOCK_A_RULE of @info into @tb (validated by the family
 * policy already, again here for the nested attributes).
 */
static int visock_policy_nl_attrs(struct genl_info *info, struct nlattr **tb)
{
	if (!info->attrs[VISOCK_A_RULE]) {
		GENL_SET_ERR_MSG(info, "no rule given");
		return -EINVAL;
	}
	return nla_parse_nested(tb, VISOCK_RULE_A_MAX,
				info->attrs[VISOCK_A_RULE],
				visock_rule_nl_policy, info->extack);
}

/* A rule from its attributes; -EINVAL with an extack message if bad. */
static int visock_policy_nl_rule(struct genl_info *info, struct nlattr **tb,
				 struct visock_policy_rule *r)
{
	const char *why = NULL;
	unsigned int max = 0;

	memset(r, 0, sizeof(*r));
	if (!tb[VISOCK_RULE_A_ACTION]) {
		GENL_SET_ERR_MSG(info, "rule without action");
		return -EINVAL;
	}
	r->action = nla_get_u8(tb[VISOCK_RULE_A_ACTION]);
	if (tb[VISOCK_RULE_A_ADDR4] && tb[VISOCK_RULE_A_ADDR6]) {
		GENL_SET_ERR_MSG(info, "both an IPv4 and an IPv6 address");
		return -EINVAL;
	}
	if (tb[VISOCK_RULE_A_ADDR4]) {
		r->family = AF_INET;
		max = 32;
		nla_memcpy(r->addr, tb[VISOCK_RULE_A_ADDR4], 4);
	} else if (tb[VISOCK_RULE_A_ADDR6]) {
		r->family = AF_INET6;
		max = 128;
		nla_memcpy(r->addr, tb[VISOCK_RULE_A_ADDR6], 16);
	}
	r->plen = max;
	if (tb[VISOCK_RULE_A_PREFIXLEN]) {
		if (!r->family) {
			GENL_SET_ERR_MSG(info, "prefix length without address");
			return -EINVAL;
		}
		r->plen = nla_get_u8(tb[VISOCK_RULE_A_PREFIXLEN]);
	}
	r->port_max = U16_MAX;
	if (tb[VISOCK_RULE_A_PORT_MIN]) {
		r->port_min = nla_get_u16(tb[VISOCK_RULE_A_PORT_MIN]);
		r->port_max = r->port_min;
	}
	if (tb[VISOCK_RULE_A_PORT_MAX])
		r->port_max = nla_get_u16(tb[VISOCK_RULE_A_PORT_MAX]);
	if (tb[VISOCK_RULE_A_XFORM])
		r->xform = nla_get_u8(tb[VISOCK_RULE_A_XFORM]);
	r->xform_require = nla_get_flag(tb[VISOCK_RULE_A_XFORM_REQUIRE]);
	if (visock_policy_rule_check(r, &why)) {
		/* A string literal of visock_policy_match.c. */
		if (info->extack)
			info->extack->_msg = why;
		return -EINVAL;
	}
	return 0;
}

/**
 * visock_policy_nl_add() - VISOCK_CMD_POLICY_ADD
 * @skb: the request
 * @info: its attributes: VISOCK_A_RULE
 *
 * Inserts the rule before VISOCK_RULE_A_INDEX, or appends it.
 *
 * Context: process context, generic netlink; CAP_NET_ADMIN checked.
 * Return: 0, -EINVAL (bad rule or index), -EEXIST (the same rule is
 * there), -ENOSPC (VISOCK_POLICY_MAX_RULES reached) or -ENOMEM.
 */
int visock_policy_nl_add(struct sk_buff *skb, struct genl_info *info)
{
	struct visock_net *vn = visock_net(genl_info_net(info));
	struct nlattr *tb[VISOCK_RULE_A_MAX + 1];
	struct visock_policy_table *old;
	struct visock_policy_rule r;
	unsigned int i, pos;
	int err;

	err = visock_policy_nl_attrs(info, tb);
	if (!err)
		err = visock_policy_nl_rule(info, tb, &r);
	if (err)
		return err;

	/* pol_lock: one change of the table at a time. */
	mutex_lock(&vn->pol_lock);
	old = visock_policy_locked(vn);
	pos = tb[VISOCK_RULE_A_INDEX] ?
	      nla_get_u32(tb[VISOCK_RULE_A_INDEX]) : old->n;
	err = -EINVAL;
	if (pos > old->n) {
		GENL_SET_ERR_MSG(info, "index beyond the last rule");
		goto out;
	}
	err = -ENOSPC;
	if (old->n >= VISOCK_POLICY_MAX_RULES) {
		GENL_SET_ERR_MSG(info, "too many rules");
		goto out;
	}
	err = -EEXIST;
	for (i = 0; i < old->n; i++) {
		if (visock_policy_rule_equal(&old->rules[i], &r)) {
			GENL_SET_ERR_MSG(info, "the same rule exists");
			goto out;
		}
	}
	err = visock_policy_replace(vn, pos, &r, 0, old->dflt);
out:
	mutex_unlock(&vn->pol_lock);
	return err;
}

/**
 * visock_policy_nl_del() - VISOCK_CMD_POLICY_DEL
 * @skb: the request
 * @info: its attributes: VISOCK_A_RULE with only VISOCK_RULE_A_INDEX, or
 *	the same attributes as the rule was added with
 *
 * Context: process context, generic netlink; CAP_NET_ADMIN checked.
 * Return: 0, -EINVAL, -ENOENT (no such rule) or -ENOMEM.
 */
int visock_policy_nl_del(struct sk_buff *skb, struct genl_info *info)
{
	struct visock_net *vn = visock_net(genl_info_net(info));
	struct nlattr *tb[VISOCK_RULE_A_MAX + 1];
	struct visock_policy_table *old;
	struct visock_policy_rule r;
	bool by_index;
	unsigned int pos;
	int err;

	err = visock_policy_nl_attrs(info, tb);
	if (err)
		return err;
	by_index = tb[VISOCK_RULE_A_INDEX] && !tb[VISOCK_RULE_A_ACTION];
	if (!by_index) {
		err = visock_policy_nl_rule(info, tb, &r);
		if (err)
			return err;
	}

	/* pol_lock: one change of the table at a time. */
	mutex_lock(&vn->pol_lock);
	old = visock_policy_locked(vn);
	if (by_index) {
		pos = nla_get_u32(tb[VISOCK_RULE_A_INDEX]);
	} else {
		for (pos = 0; pos < old->n; pos++)
			if (visock_policy_rule_equal(&old->rules[pos], &r))
				break;
	}
	err = -ENOENT;
	if (pos >= old->n) {
		GENL_SET_ERR_MSG(info, "no such rule");
		goto out;
	}
	err = visock_policy_replace(vn, pos, NULL, 1, old->dflt);
out:
	mutex_unlock(&vn->pol_lock);
	return err;
}

/**
 * visock_policy_nl_flush() - VISOCK_CMD_POLICY_FLUSH: remove every rule
 * @skb: the request
 * @info: no attributes; the default action stays
 *
 * Context: process context, generic netlink; CAP_NET_ADMIN checked.
 * Return: 0 or -ENOMEM.
 */
int visock_policy_nl_flush(struct sk_buff *skb, struct genl_info *info)
{
	struct visock_net *vn = visock_net(genl_info_net(info));
	struct visock_policy_table *old;
	int err = 0;

	/* pol_lock: one change of the table at a time. */
	mutex_lock(&vn->pol_lock);
	old = visock_policy_locked(vn);
	if (old->n)
		err = visock_policy_replace(vn, 0, NULL, old->n, old->dflt);
	mutex_unlock(&vn->pol_lock);
	return err;
}

static int visock_policy_nl_put_rule(struct sk_buff *skb,
				     const struct visock_policy_rule *r,
				     unsigned int index)
{
	struct nlattr *nest = nla_nest_start(skb, VISOCK_A_RULE);

	if (!nest ||
	    nla_put_u32(skb, VISOCK_RULE_A_INDEX, index) ||
	    nla_put_u8(skb, VISOCK_RULE_A_ACTION, r->action) ||
	    nla_put_u16(skb, VISOCK_RULE_A_PORT_MIN, r->port_min) ||
	    nla_put_u16(skb, VISOCK_RULE_A_PORT_MAX, r->port_max))
		return -EMSGSIZE;
	if (r->family == AF_INET &&
	    nla_put(skb, VISOCK_RULE_A_ADDR4, 4, r->addr))
		return -EMSGSIZE;
	if (r->family == AF_INET6 &&
	    nla_put(skb, VISOCK_RULE_A_ADDR6, 16, r->addr))
		return -EMSGSIZE;
	if (r->family && nla_put_u8(skb, VISOCK_RULE_A_PREFIXLEN, r->plen))
		return -EMSGSIZE;
	if (r->xform && nla_put_u8(skb, VISOCK_RULE_A_XFORM, r->xform))
		return -EMSGSIZE;
	if (r->xform_require && nla_put_flag(skb, VISOCK_RULE_A_XFORM_REQUIRE))
		return -EMSGSIZE;
	nla_nest_end(skb, nest);
	return 0;
}

/**
 * visock_policy_nl_dump() - VISOCK_CMD_POLICY_GET: one rule per message
 * @skb: the message buffer to fill
 * @cb: cb->args[0]: rules already dumped
 *
 * A change between two parts of the dump sets NLM_F_DUMP_INTR.
 *
 * Context: process context, generic netlink; takes rcu_read_lock().
 * Return: bytes in @skb (0 at the end) or a negative errno.
 */
int visock_policy_nl_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct visock_net *vn = visock_net(sock_net(skb->sk));
	const struct visock_policy_table *t;
	unsigned int i = cb->args[0];
	void *hdr;

	rcu_read_lock();
	t = rcu_dereference(vn->policy);
	cb->seq = t->gen;
	for (; i < t->n; i++) {
		hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid,
				  cb->nlh->nlmsg_seq, &visock_genl_family,
				  NLM_F_MULTI,
				  VISOCK_CMD_POLICY_GET);
		if (!hdr)
			break;
		genl_dump_check_consistent(cb, hdr);
		if (visock_policy_nl_put_rule(skb, &t->rules[i], i)) {
			genlmsg_cancel(skb, hdr);
			break;
		}
		genlmsg_end(skb, hdr);
	}
	rcu_read_unlock();
	cb->args[0] = i;
	return skb->len;
}
