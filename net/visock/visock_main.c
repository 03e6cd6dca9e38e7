// SPDX-License-Identifier: GPL-2.0
/*
 * visock: module init and exit, per network namespace state.
 *
 * Load order: workqueue, RDMA client, pernet state (sysctls, policy), generic
 * netlink family, sock_diag handler, struct proto, socket family, inet
 * protosw entries (visock_inet.c).  The ways to create sockets come
 * last so that no socket can be created before everything it needs
 * exists; unload runs in reverse, starting with the inet entries.  The
 * socket layer holds a module reference for every visock socket, so
 * module_exit() only runs once no socket is left.
 */
#include <linux/module.h>
#include <linux/init.h>
#include <net/net_namespace.h>

#include "visock.h"
#include "af_visock.h"
#include "visock_debugfs.h"
#include "visock_dgram.h"
#include "visock_diag.h"
#include "visock_genl.h"
#include "visock_ib.h"
#include "visock_inet.h"
#include "visock_vc.h"
#include "visock_lgr.h"
#include "visock_nf.h"
#include "visock_policy.h"
#include "visock_psk.h"
#include "visock_stats.h"
#include "visock_sysctl.h"
#include "visock_xform.h"

/* Module version; keep in sync with PACKAGE_VERSION in dkms.conf. */
#define VISOCK_VERSION	"0.1.0"

unsigned int visock_net_id __read_mostly;
struct workqueue_struct *visock_wq __read_mostly;

static int __net_init visock_net_init(struct net *net)
{
	int err;

	visock_diag_net_init(net);
	visock_lgr_net_init(net);
	err = visock_stats_net_init(net);
	if (err)
		return err;
	err = visock_sysctl_net_init(net);
	if (err)
		goto err_stats;
	err = visock_proc_net_init(net);
	if (err)
		goto err_sysctl;
	err = visock_nf_net_init(net);
	if (err)
		goto err_proc;
	err = visock_policy_net_init(net);
	if (err)
		goto err_nf;
	err = visock_psk_net_init(net);
	if (err)
		goto err_policy;
	return 0;

err_policy:
	visock_policy_net_exit(net);
err_nf:
	visock_nf_net_exit(net);
err_proc:
	visock_proc_net_exit(net);
err_sysctl:
	visock_sysctl_net_exit(net);
err_stats:
	visock_stats_net_exit(net);
	visock_lgr_net_exit(net);
	return err;
}

static void __net_exit visock_net_exit(struct net *net)
{
	/* No visock socket is left: the QPs still there are idle. */
	visock_lgr_net_exit(net);
	visock_psk_net_exit(net);
	visock_policy_net_exit(net);
	visock_nf_net_exit(net);
	visock_proc_net_exit(net);
	visock_sysctl_net_exit(net);
	visock_stats_net_exit(net);
	visock_diag_net_exit(net);
}

static struct pernet_operations visock_net_ops = {
	.init	= visock_net_init,
	.exit	= visock_net_exit,
	.id	= &visock_net_id,
	.size	= sizeof(struct visock_net),
};

static int __init visock_init(void)
{
	int err;

	visock_wq = alloc_workqueue("visock", VISOCK_WQ_PERCPU, 0);
	if (!visock_wq)
		return -ENOMEM;

	err = visock_ib_init();
	if (err)
		goto err_wq;

	err = register_pernet_subsys(&visock_net_ops);
	if (err)
		goto err_ib;

	err = visock_genl_init();
	if (err)
		goto err_pernet;

	err = visock_diag_init();
	if (err)
		goto err_genl;

	err = proto_register(&visock_proto, 1);
	if (err)
		goto err_diag;

	err = visock_dgram_init();
	if (err)
		goto err_proto_stream;

	err = sock_register(&visock_family_ops);
	if (err) {
		if (err == -EEXIST)
			pr_err("visock: address family %d (AF_VISOCK) is already registered by another module; not loading\n",
			       AF_VISOCK);
		else
			pr_err("visock: cannot register address family %d: %d\n",
			       AF_VISOCK, err);
		goto err_proto;
	}

	err = visock_inet_init();
	if (err)
		goto err_family;

	visock_debugfs_init();
	visock_xform_init();
	pr_info("visock: loaded, address family %d\n", AF_VISOCK);
	return 0;

err_family:
	sock_unregister(AF_VISOCK);
err_proto:
	visock_dgram_exit();
err_proto_stream:
	proto_unregister(&visock_proto);
err_diag:
	visock_diag_exit();
err_genl:
	visock_genl_exit();
err_pernet:
	unregister_pernet_subsys(&visock_net_ops);
err_ib:
	visock_ib_exit();
err_wq:
	destroy_workqueue(visock_wq);
	return err;
}

static void __exit visock_exit(void)
{
	visock_inet_exit();
	visock_debugfs_exit();
	sock_unregister(AF_VISOCK);
	visock_dgram_exit();
	proto_unregister(&visock_proto);
	visock_diag_exit();
	visock_genl_exit();
	/*
	 * Before the work queue goes: a namespace's exit destroys its QPs
	 * with visock_wq's works and waits until the last one is freed,
	 * also those an idle work was tearing down.
	 */
	unregister_pernet_subsys(&visock_net_ops);
	visock_ib_exit();
	/*
	 * Waits for work items that dropped the last socket or QP
	 * reference and have yet to return into this module.
	 */
	destroy_workqueue(visock_wq);
	pr_info("visock: unloaded\n");
}

module_init(visock_init);
module_exit(visock_exit);

MODULE_DESCRIPTION("visock: TCP-compatible stream sockets over RDMA");
MODULE_LICENSE("GPL");
MODULE_VERSION(VISOCK_VERSION);
MODULE_ALIAS_NETPROTO(PF_VISOCK);
