// SPDX-License-Identifier: GPL-2.0
/*
 * visock: the fleet's pre-shared keys of a network namespace.
 *
 * Every namespace has its own keyring ("visock:psk") of the kernel's key
 * service.  A pre-shared key is a "logon" key linked into it: the key
 * service holds the secret and never hands it back to user space (a
 * logon key has no read operation), and the keyring is linked into no
 * process keyring.  Beside the keyring the namespace keeps a small table
 * (at most VISOCK_KEY_MAX keys) of what the handshake needs to find a
 * key: its id, which travels in TLV AUTH, an operator's name for it,
 * and which key is the current one, the one this host authenticates its
 * own messages with.  The others are accepted from peers: during a
 * rollout the new key is added everywhere first, then made current,
 * then the old one is removed (visock/security.rst).
 *
 * Keys are managed over generic netlink (VISOCK_CMD_KEY_*, visock_genl.c)
 * with CAP_NET_ADMIN in the namespace's user namespace.  The handshake
 * takes a copy of one secret for one computation (visock_psk_get()) and
 * wipes it.  All of it happens in process context under the store's
 * mutex.
 */

#include <keys/user-type.h>
#include <linux/cred.h>
#include <linux/key.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <net/genetlink.h>
#include <net/net_namespace.h>

#include "visock.h"
#include "visock_genl.h"
#include "visock_psk.h"

/**
 * struct visock_psk_entry - one key of the table
 * @id: key id, not 0
 * @name: the operator's name for it, NUL terminated
 * @key: the logon key holding the secret, linked into the keyring
 */
struct visock_psk_entry {
	u32 id;
	char name[VISOCK_KEY_NAME_LEN];
	struct key *key;
};

/**
 * struct visock_psk_store - the keys of a namespace
 * @lock: serialises every access (netlink and handshake)
 * @keyring: the namespace's keyring
 * @current_id: id of the current key, 0 for none
 * @n: keys in @e
 * @gen: changes with every change of the table (dumps)
 * @e: the keys, @n of them
 */
struct visock_psk_store {
	struct mutex lock;
	struct key *keyring;
	u32 current_id;
	unsigned int n;
	unsigned int gen;
	struct visock_psk_entry e[VISOCK_KEY_MAX];
};

const struct nla_policy visock_key_nl_policy[VISOCK_KEY_A_MAX + 1] = {
	[VISOCK_KEY_A_ID]	= NLA_POLICY_MIN(NLA_U32, 1),
	[VISOCK_KEY_A_NAME]	= { .type = NLA_NUL_STRING,
				    .len = VISOCK_KEY_NAME_LEN - 1 },
	[VISOCK_KEY_A_SECRET]	= NLA_POLICY_RANGE(NLA_BINARY,
						   VISOCK_KEY_SECRET_MIN,
						   VISOCK_KEY_SECRET_MAX),
	[VISOCK_KEY_A_CURRENT]	= { .type = NLA_FLAG },
};

static struct visock_psk_store *visock_psk_store(struct net *net)
{
	return visock_net(net)->psk;
}

/**
 * visock_psk_net_init() - empty key store of a new namespace
 * @net: the namespace
 *
 * Context: process context (pernet init).
 * Return: 0, or a negative errno of the allocation or the key service.
 */
int visock_psk_net_init(struct net *net)
{
	struct visock_psk_store *st;
	struct key *kr;

	st = kzalloc(sizeof(*st), GFP_KERNEL);
	if (!st)
		return -ENOMEM;
	kr = keyring_alloc("visock:psk", GLOBAL_ROOT_UID, GLOBAL_ROOT_GID,
			   current_cred(),
			   KEY_POS_VIEW | KEY_POS_SEARCH | KEY_POS_WRITE,
			   KEY_ALLOC_NOT_IN_QUOTA, NULL, NULL);
	if (IS_ERR(kr)) {
		kfree(st);
		return PTR_ERR(kr);
	}
	mutex_init(&st->lock);
	st->keyring = kr;
	visock_net(net)->psk = st;
	return 0;
}

/* Forget entry @i; store lock held. */
static void visock_psk_drop(struct visock_psk_store *st, unsigned int i)
{
	struct visock_psk_entry *e = &st->e[i];

	lockdep_assert_held(&st->lock);
	key_unlink(st->keyring, e->key);
	key_invalidate(e->key);
	key_put(e->key);
	if (st->current_id == e->id)
		st->current_id = 0;
	st->n--;
	memmove(e, e + 1, (st->n - i) * sizeof(*e));
	memset(&st->e[st->n], 0, sizeof(*e));
	st->gen++;
}

/**
 * visock_psk_net_exit() - destroy the keys of a namespace
 * @net: the namespace, without visock sockets left
 *
 * Context: process context (pernet exit).
 */
void visock_psk_net_exit(struct net *net)
{
	struct visock_psk_store *st = visock_psk_store(net);

	if (!st)
		return;
	mutex_lock(&st->lock);
	while (st->n)
		visock_psk_drop(st, st->n - 1);
	mutex_unlock(&st->lock);
	key_invalidate(st->keyring);
	key_put(st->keyring);
	mutex_destroy(&st->lock);
	kfree(st);
	visock_net(net)->psk = NULL;
}

static struct visock_psk_entry *visock_psk_find(struct visock_psk_store *st,
						u32 id)
{
	unsigned int i;

	lockdep_assert_held(&st->lock);
	for (i = 0; i < st->n; i++)
		if (st->e[i].id == id)
			return &st->e[i];
	return NULL;
}

/**
 * visock_psk_get() - copy one pre-shared key of a namespace
 * @net: the namespace
 * @id: the key id, or 0 for the current key
 * @out: receives the id and the secret
 *
 * Context: process context, may sleep.
 * Return: 0, or -ENOKEY if the namespace has no such key (or no current
 * key), or -EKEYREVOKED if it is being removed.
 */
int visock_psk_get(struct net *net, u32 id, struct visock_psk_secret *out)
{
	struct visock_psk_store *st = visock_psk_store(net);
	const struct user_key_payload *upk;
	struct visock_psk_entry *e;
	int err = -ENOKEY;

	mutex_lock(&st->lock);
	if (!id)
		id = st->current_id;
	e = id ? visock_psk_find(st, id) : NULL;
	if (e) {
		down_read(&e->key->sem);
		upk = user_key_payload_locked(e->key);
		if (upk && upk->datalen <= sizeof(out->key)) {
			out->id = e->id;
			out->len = upk->datalen;
			memcpy(out->key, upk->data, upk->datalen);
			err = 0;
		} else {
			err = -EKEYREVOKED;
		}
		up_read(&e->key->sem);
	}
	mutex_unlock(&st->lock);
	return err;
}

static int visock_psk_nl_attrs(struct genl_info *info, struct nlattr **tb)
{
	int err;

	if (!info->attrs[VISOCK_A_KEY]) {
		GENL_SET_ERR_MSG(info, "no key given");
		return -EINVAL;
	}
	err = nla_parse_nested(tb, VISOCK_KEY_A_MAX, info->attrs[VISOCK_A_KEY],
			       visock_key_nl_policy, info->extack);
	if (err)
		return err;
	if (!tb[VISOCK_KEY_A_ID]) {
		GENL_SET_ERR_MSG(info, "no key id given");
		return -EINVAL;
	}
	return 0;
}

/**
 * visock_psk_nl_add() - VISOCK_CMD_KEY_ADD
 * @skb: the request
 * @info: its attributes: VISOCK_A_KEY with an id and a secret, maybe a
 *	name and the current flag
 *
 * A namespace's first key becomes its current key without the flag.
 *
 * Context: process context (genetlink), CAP_NET_ADMIN checked by genl.
 * Return: 0 or a negative errno.
 */
int visock_psk_nl_add(struct sk_buff *skb, struct genl_info *info)
{
	struct visock_psk_store *st = visock_psk_store(genl_info_net(info));
	struct nlattr *tb[VISOCK_KEY_A_MAX + 1];
	struct visock_psk_entry *e;
	char desc[40];
	key_ref_t kref;
	u32 id;
	int err;

	err = visock_psk_nl_attrs(info, tb);
	if (err)
		return err;
	if (!tb[VISOCK_KEY_A_SECRET]) {
		GENL_SET_ERR_MSG(info, "no secret given");
		return -EINVAL;
	}
	id = nla_get_u32(tb[VISOCK_KEY_A_ID]);
	snprintf(desc, sizeof(desc), "visock:%u:%u",
		 genl_info_net(info)->ns.inum, id);

	mutex_lock(&st->lock);
	err = -EEXIST;
	if (visock_psk_find(st, id)) {
		GENL_SET_ERR_MSG(info, "a key with this id exists");
		goto out;
	}
	err = -ENOSPC;
	if (st->n >= VISOCK_KEY_MAX) {
		GENL_SET_ERR_MSG(info, "too many keys");
		goto out;
	}
	kref = key_create_or_update(make_key_ref(st->keyring, true), "logon",
				    desc, nla_data(tb[VISOCK_KEY_A_SECRET]),
				    nla_len(tb[VISOCK_KEY_A_SECRET]),
				    KEY_POS_VIEW | KEY_POS_SEARCH,
				    KEY_ALLOC_NOT_IN_QUOTA);
	if (IS_ERR(kref)) {
		err = PTR_ERR(kref);
		goto out;
	}
	e = &st->e[st->n++];
	e->id = id;
	e->key = key_ref_to_ptr(kref);
	if (tb[VISOCK_KEY_A_NAME])
		nla_strscpy(e->name, tb[VISOCK_KEY_A_NAME], sizeof(e->name));
	if (tb[VISOCK_KEY_A_CURRENT] || !st->current_id)
		st->current_id = id;
	st->gen++;
	err = 0;
out:
	mutex_unlock(&st->lock);
	return err;
}

/**
 * visock_psk_nl_del() - VISOCK_CMD_KEY_DEL
 * @skb: the request
 * @info: its attributes: VISOCK_A_KEY with the id
 *
 * Removing the current key leaves the namespace without one: it then
 * authenticates nothing itself (visock/security.rst).
 *
 * Context: process context (genetlink), CAP_NET_ADMIN checked by genl.
 * Return: 0 or a negative errno.
 */
int visock_psk_nl_del(struct sk_buff *skb, struct genl_info *info)
{
	struct visock_psk_store *st = visock_psk_store(genl_info_net(info));
	struct nlattr *tb[VISOCK_KEY_A_MAX + 1];
	struct visock_psk_entry *e;
	int err;

	err = visock_psk_nl_attrs(info, tb);
	if (err)
		return err;
	mutex_lock(&st->lock);
	e = visock_psk_find(st, nla_get_u32(tb[VISOCK_KEY_A_ID]));
	if (e) {
		visock_psk_drop(st, e - st->e);
	} else {
		GENL_SET_ERR_MSG(info, "no such key");
		err = -ENOENT;
	}
	mutex_unlock(&st->lock);
	return err;
}

/**
 * visock_psk_nl_use() - VISOCK_CMD_KEY_USE
 * @skb: the request
 * @info: its attributes: VISOCK_A_KEY with the id
 *
 * Context: process context (genetlink), CAP_NET_ADMIN checked by genl.
 * Return: 0 or a negative errno.
 */
int visock_psk_nl_use(struct sk_buff *skb, struct genl_info *info)
{
	struct visock_psk_store *st = visock_psk_store(genl_info_net(info));
	struct nlattr *tb[VISOCK_KEY_A_MAX + 1];
	u32 id;
	int err;

	err = visock_psk_nl_attrs(info, tb);
	if (err)
		return err;
	id = nla_get_u32(tb[VISOCK_KEY_A_ID]);
	mutex_lock(&st->lock);
	if (visock_psk_find(st, id)) {
		st->current_id = id;
		st->gen++;
	} else {
		GENL_SET_ERR_MSG(info, "no such key");
		err = -ENOENT;
	}
	mutex_unlock(&st->lock);
	return err;
}

static int visock_psk_nl_put(struct sk_buff *skb,
			     const struct visock_psk_entry *e, bool cur)
{
	struct nlattr *nest;

	nest = nla_nest_start(skb, VISOCK_A_KEY);
	if (!nest)
		return -EMSGSIZE;
	if (nla_put_u32(skb, VISOCK_KEY_A_ID, e->id) ||
	    nla_put_string(skb, VISOCK_KEY_A_NAME, e->name) ||
	    (cur && nla_put_flag(skb, VISOCK_KEY_A_CURRENT))) {
		nla_nest_cancel(skb, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	return 0;
}

/**
 * visock_psk_nl_dump() - VISOCK_CMD_KEY_GET: the keys, never a secret
 * @skb: the reply
 * @cb: dump state; args[0] is the next key to report
 *
 * Context: process context (genetlink), CAP_NET_ADMIN checked by genl.
 * Return: bytes written, 0 at the end.
 */
int visock_psk_nl_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct visock_psk_store *st = visock_psk_store(sock_net(skb->sk));
	unsigned int i = cb->args[0];
	void *hdr;

	mutex_lock(&st->lock);
	cb->seq = st->gen + 1;
	for (; i < st->n; i++) {
		hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid,
				  cb->nlh->nlmsg_seq, &visock_genl_family,
				  NLM_F_MULTI, VISOCK_CMD_KEY_GET);
		if (!hdr)
			break;
		genl_dump_check_consistent(cb, hdr);
		if (visock_psk_nl_put(skb, &st->e[i],
				      st->e[i].id == st->current_id)) {
			genlmsg_cancel(skb, hdr);
			break;
		}
		genlmsg_end(skb, hdr);
	}
	mutex_unlock(&st->lock);
	cb->args[0] = i;
	return skb->len;
}
