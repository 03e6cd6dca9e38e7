/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: the per-namespace store of fleet pre-shared keys (visock_psk.c).
 */
#ifndef _NET_VISOCK_PSK_H
#define _NET_VISOCK_PSK_H

#include <linux/types.h>
#include <linux/visock_genl.h>

struct net;
struct sk_buff;
struct genl_info;
struct netlink_callback;

/**
 * struct visock_psk_secret - a copy of one key, for one computation
 * @id: its key id
 * @len: length of @key in bytes
 * @key: the secret; wipe it with memzero_explicit() after use
 */
struct visock_psk_secret {
	u32 id;
	unsigned int len;
	u8 key[VISOCK_KEY_SECRET_MAX];
};

#include <net/netlink.h>

extern const struct nla_policy visock_key_nl_policy[VISOCK_KEY_A_MAX + 1];

int visock_psk_net_init(struct net *net);
void visock_psk_net_exit(struct net *net);
int visock_psk_get(struct net *net, u32 id, struct visock_psk_secret *out);

int visock_psk_nl_add(struct sk_buff *skb, struct genl_info *info);
int visock_psk_nl_del(struct sk_buff *skb, struct genl_info *info);
int visock_psk_nl_use(struct sk_buff *skb, struct genl_info *info);
int visock_psk_nl_dump(struct sk_buff *skb, struct netlink_callback *cb);

#endif /* _NET_VISOCK_PSK_H */
