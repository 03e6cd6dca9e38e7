// SPDX-License-Identifier: GPL-2.0
/*
 * visock: RDMA device discovery.
 *
 * visock registers as an ib_core client and keeps the list of RoCE devices
 * it may use.  Devices come and go at any time (rdma link add/delete,
 * driver unload); the remove callback runs before the device is gone and
 * kills every link still using it (visock_link_device_removed()) before
 * it returns.
 */
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

#include "visock.h"
#include "visock_link.h"
#include "visock_genl.h"

/*
 * Protects visock_ibdevs.  Taken inside a link's lock (visock_link_create()
 * attaches under it) and outside struct visock_ibdev.lock.  Never held
 * across a network round trip.
 */
static DEFINE_MUTEX(visock_ibdevs_lock);
static LIST_HEAD(visock_ibdevs);
/*
 * Length of visock_ibdevs, changed under visock_ibdevs_lock and read
 * without it: the SYN option is decided in netfilter hooks, in atomic
 * context, where the mutex must not be taken.
 */
static atomic_t visock_ibdevs_count = ATOMIC_INIT(0);

static bool visock_ib_is_roce(struct ib_device *ibdev)
{
	u32 port;

	rdma_for_each_port(ibdev, port)
		if (rdma_protocol_roce(ibdev, port))
			return true;
	return false;
}

static int visock_ib_add(struct ib_device *ibdev);
static void visock_ib_remove(struct ib_device *ibdev, void *data);

static struct ib_client visock_ib_client = {
	.name	= "visock",
	.add	= visock_ib_add,
	.remove	= visock_ib_remove,
};

static int visock_ib_add(struct ib_device *ibdev)
{
	struct visock_ibdev *vdev;

	if (!visock_ib_is_roce(ibdev))
		return -EOPNOTSUPP;

	vdev = kzalloc(sizeof(*vdev), GFP_KERNEL);
	if (!vdev)
		return -ENOMEM;
	vdev->ibdev = ibdev;
	mutex_init(&vdev->lock);
	INIT_LIST_HEAD(&vdev->links);

	mutex_lock(&visock_ibdevs_lock);
	list_add_tail(&vdev->list, &visock_ibdevs);
	atomic_inc(&visock_ibdevs_count);
	mutex_unlock(&visock_ibdevs_lock);

	ib_set_client_data(ibdev, &visock_ib_client, vdev);
	pr_info("visock: using RDMA device %s\n", dev_name(&ibdev->dev));
	visock_genl_notify_dev(ibdev, VISOCK_EVENT_DEV_ADD);
	return 0;
}

static void visock_ib_remove(struct ib_device *ibdev, void *data)
{
	struct visock_ibdev *vdev = data;

	visock_genl_notify_dev(ibdev, VISOCK_EVENT_DEV_REMOVE);
	/* From here on no visock_link_create() can find the device. */
	mutex_lock(&visock_ibdevs_lock);
	list_del(&vdev->list);
	atomic_dec(&visock_ibdevs_count);
	mutex_unlock(&visock_ibdevs_lock);

	/* Returns once no link holds a resource of @ibdev any more. */
	visock_link_device_removed(vdev);

	pr_info("visock: stopped using RDMA device %s\n",
		dev_name(&ibdev->dev));
	mutex_destroy(&vdev->lock);
	kfree(vdev);
}

/* Recheck a GID found by ndev now that we hold a reference to it. */
static bool visock_ib_gid_usable(const struct ib_gid_attr *attr,
				 struct net *net, struct net_device *ndev)
{
	struct net_device *gid_ndev;
	bool ok;

	rcu_read_lock();
	gid_ndev = rdma_read_gid_attr_ndev_rcu(attr);
	ok = !IS_ERR(gid_ndev) && gid_ndev == ndev && netif_running(ndev) &&
	     net_eq(dev_net(gid_ndev), net);
	rcu_read_unlock();
	return ok;
}

/**
 * visock_ib_attach() - find the RoCEv2 GID of a local address, attach a link
 * @net: network namespace of the connection
 * @gid: the local IP address as a GID (IPv4-mapped for IPv4)
 * @ndev: the net device in @net that holds the address, referenced by the
 *	caller
 * @link_node: the link's entry for struct visock_ibdev.links
 * @vdevp: the device the link was attached to
 *
 * Looks for a RoCEv2 GID equal to @gid on @ndev, which must be up and in
 * @net.  On success @link_node is on the device's link list before the
 * device list lock is dropped, so the device's removal cannot miss the
 * link.
 *
 * Context: process context; takes visock_ibdevs_lock and the device's lock.
 * Return: the GID attribute with a reference the caller must drop with
 * rdma_put_gid_attr(), or ERR_PTR(-ENODEV) if no device has the GID.
 */
const struct ib_gid_attr *visock_ib_attach(struct net *net,
					   const union ib_gid *gid,
					   struct net_device *ndev,
					   struct list_head *link_node,
					   struct visock_ibdev **vdevp)
{
	const struct ib_gid_attr *attr;
	struct visock_ibdev *vdev;

	mutex_lock(&visock_ibdevs_lock);
	list_for_each_entry(vdev, &visock_ibdevs, list) {
		attr = rdma_find_gid(vdev->ibdev, gid,
				     IB_GID_TYPE_ROCE_UDP_ENCAP, ndev);
		if (IS_ERR(attr))
			continue;
		if (!rdma_protocol_roce(vdev->ibdev, attr->port_num) ||
		    !visock_ib_gid_usable(attr, net, ndev)) {
			rdma_put_gid_attr(attr);
			continue;
		}

		mutex_lock(&vdev->lock);
		if (vdev->dying) {
			mutex_unlock(&vdev->lock);
			rdma_put_gid_attr(attr);
			continue;
		}
		list_add_tail(link_node, &vdev->links);
		mutex_unlock(&vdev->lock);

		*vdevp = vdev;
		mutex_unlock(&visock_ibdevs_lock);
		return attr;
	}
	mutex_unlock(&visock_ibdevs_lock);
	return ERR_PTR(-ENODEV);
}

/**
 * visock_ib_device_count() - number of usable RDMA devices
 *
 * Context: any, including atomic context (the netfilter hooks deciding
 * the SYN option): lockless.
 * Return: how many RoCE devices visock currently knows.
 */
unsigned int visock_ib_device_count(void)
{
	return atomic_read(&visock_ibdevs_count);
}

/**
 * visock_ib_walk_devices() - call a function for the devices visock uses
 * @pos: number of devices to skip; advanced past every device @fn
 *	accepted
 * @fn: called with the device and its number of links; a non-zero return
 *	stops the walk (the device is not counted in @pos)
 * @arg: passed to @fn
 *
 * @fn runs under visock_ibdevs_lock, so the device stays registered; it
 * may sleep but must not take visock_ibdevs_lock.
 *
 * Context: process context.
 * Return: the value @fn stopped with, or 0.
 */
int visock_ib_walk_devices(unsigned long *pos, visock_ib_dev_fn_t fn,
			   void *arg)
{
	struct visock_ibdev *vdev;
	unsigned long i = 0;
	unsigned int nlinks;
	struct list_head *l;
	int ret = 0;

	mutex_lock(&visock_ibdevs_lock);
	list_for_each_entry(vdev, &visock_ibdevs, list) {
		if (i++ < *pos)
			continue;
		nlinks = 0;
		mutex_lock(&vdev->lock);
		list_for_each(l, &vdev->links)
			nlinks++;
		mutex_unlock(&vdev->lock);
		ret = fn(vdev->ibdev, nlinks, arg);
		if (ret)
			break;
		(*pos)++;
	}
	mutex_unlock(&visock_ibdevs_lock);
	return ret;
}

/**
 * visock_ib_init() - start tracking RDMA devices
 *
 * Context: module init.
 * Return: 0 or a negative errno from ib_register_client().
 */
int visock_ib_init(void)
{
	return ib_register_client(&visock_ib_client);
}

/**
 * visock_ib_exit() - stop tracking RDMA devices
 *
 * Calls visock_ib_remove() for every device still known.
 *
 * Context: module exit or failed init.
 */
void visock_ib_exit(void)
{
	ib_unregister_client(&visock_ib_client);
}
