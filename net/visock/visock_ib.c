// SPDX-License-Identifier: GPL-2.0
/*
 * visock: the verbs layer - RDMA devices and the verbs objects of QPs.
 *
 * visock registers as an ib_core client and keeps the list of RoCE devices
 * it may use.  Devices come and go at any time (rdma link add/delete,
 * driver unload); the remove callback runs before the device is gone and
 * kills every QP still using it (visock_lgr_device_removed()) before
 * it returns.
 *
 * The second half creates a link group QP's verbs objects (PD, CQ, RC
 * QP, cursor message slots) on the device of its local address, moves
 * the QP through INIT, RTR and RTS, and releases it all again: when the
 * QP ends, or at once when it is killed (device removal, a stuck peer).
 * Lifetime and locking rules of a QP are at the top of visock_lgr.c.
 */
#include <linux/err.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/list.h>
#include <linux/log2.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/random.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <net/ipv6.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

#include "visock_event.h"
#include "visock_fault.h"
#include "visock_ib.h"
#include "visock_lgr.h"
#include "visock_llc.h"
#include "visock_wr.h"
#include "visock_trace.h"

/*
 * Protects visock_ibdevs.  Taken inside a QP's lock (visock_qp_setup()
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

/**
 * visock_lgr_device_removed() - kill every QP of a departing device
 * @vdev: the device, already off visock_ib.c's device list
 *
 * Called by the ib_client remove callback.  Each QP is taken off
 * @vdev's list with a reference held and killed; its connections' dead_cb
 * runs.
 *
 * Context: process context, may sleep; no visock lock held.
 */
static void visock_lgr_device_removed(struct visock_ibdev *vdev)
{
	struct visock_qp *q;

	mutex_lock(&vdev->lock);
	vdev->dying = true;
	while ((q = list_first_entry_or_null(&vdev->links, struct visock_qp,
					     dev_node))) {
		list_del_init(&q->dev_node);
		kref_get(&q->ref);
		mutex_unlock(&vdev->lock);

		visock_qp_kill(q, "device removed");
		visock_qp_put(q);

		mutex_lock(&vdev->lock);
	}
	mutex_unlock(&vdev->lock);
}

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
	visock_event_dev(ibdev, VISOCK_EVENT_DEV_ADD);
	return 0;
}

static void visock_ib_remove(struct ib_device *ibdev, void *data)
{
	struct visock_ibdev *vdev = data;

	visock_event_dev(ibdev, VISOCK_EVENT_DEV_REMOVE);
	/* From here on no visock_vc_create() can find the device. */
	mutex_lock(&visock_ibdevs_lock);
	list_del(&vdev->list);
	atomic_dec(&visock_ibdevs_count);
	mutex_unlock(&visock_ibdevs_lock);

	/* Returns once no QP holds a resource of @ibdev any more. */
	visock_lgr_device_removed(vdev);

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
 * visock_ib_attach() - find the RoCEv2 GID of a local address, attach a QP
 * @net: network namespace of the connection
 * @gid: the local IP address as a GID (IPv4-mapped for IPv4)
 * @ndev: the net device in @net that holds the address, referenced by the
 *	caller
 * @link_node: the QP's entry for struct visock_ibdev.links
 * @vdevp: the device the QP was attached to
 *
 * Looks for a RoCEv2 GID equal to @gid on @ndev, which must be up and in
 * @net.  On success @link_node is on the device's QP list before the
 * device list lock is dropped, so the device's removal cannot miss the
 * QP.
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
 * @fn: called with the device and its number of QPs; a non-zero return
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

/* ------------------------------------------------------------------ */
/* Queue pair verbs and state changes                                  */
/* ------------------------------------------------------------------ */

static void visock_qp_event(struct ib_event *ev, void *ctx)
{
	u32 qpn = ev->element.qp->qp_num;

	switch (ev->event) {
	case IB_EVENT_COMM_EST:
	case IB_EVENT_SQ_DRAINED:
	case IB_EVENT_QP_LAST_WQE_REACHED:
		pr_debug("visock: QP %u: %s\n", qpn, ib_event_msg(ev->event));
		break;
	default:
		pr_warn_ratelimited("visock: QP %u: %s\n", qpn,
				    ib_event_msg(ev->event));
		break;
	}
}

/**
 * visock_qp_fail() - a request of a QP failed
 * @q: the QP, now in the error state
 * @status: work completion status of the failure
 *
 * The first call tells every connection on @q (a VISOCK_RX_ERR receive
 * event) and makes the QP take no new ones.
 *
 * Context: softirq (completion handler).
 */
void visock_qp_fail(struct visock_qp *q, int status)
{
	struct visock_rx_ev ev = { .kind = VISOCK_RX_ERR, .status = status };
	struct visock_vc *l;
	unsigned long i;

	set_bit(VISOCK_QP_BROKEN, &q->broken);
	if (test_and_set_bit(VISOCK_QP_TOLD, &q->broken))
		return;
	WRITE_ONCE(q->dying, true);
	xa_lock(&q->conns);
	xa_for_each(&q->conns, i, l)
		if (!xa_is_value(l) && l->rx_fn)
			l->rx_fn(l->rx_ctx, &ev);
	xa_unlock(&q->conns);
}

/* Room for either address family; see rdma_gid2ip(). */
union visock_ipaddr {
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
};

/* Whole-union pointer, so that fortify sees the real object size. */
static struct sockaddr *visock_sa(union visock_ipaddr *a)
{
	return (struct sockaddr *)a;
}

static int visock_qp_addr_to_gid(const struct sockaddr *sa,
				 union ib_gid *gid, int *ifindex)
{
	const struct sockaddr_in6 *sin6;
	const struct sockaddr_in *sin;

	*ifindex = 0;
	switch (sa->sa_family) {
	case AF_INET:
		sin = (const struct sockaddr_in *)sa;
		ipv6_addr_set_v4mapped(sin->sin_addr.s_addr,
				       (struct in6_addr *)gid);
		return 0;
	case AF_INET6:
		sin6 = (const struct sockaddr_in6 *)sa;
		memcpy(gid->raw, &sin6->sin6_addr, sizeof(gid->raw));
		if (ipv6_addr_type(&sin6->sin6_addr) & IPV6_ADDR_LINKLOCAL)
			*ifindex = sin6->sin6_scope_id;
		return 0;
	default:
		return -EAFNOSUPPORT;
	}
}

/*
 * The net device in @net holding the address of @gid, with a reference.
 * An IPv4-mapped IPv6 address (AF_INET6 socket talking IPv4) is looked up
 * as the IPv4 address it is.
 */
static struct net_device *visock_qp_find_ndev(struct net *net,
					      const union ib_gid *gid,
					      int ifindex)
{
	struct rdma_dev_addr dev_addr = {};
	union visock_ipaddr addr;
	struct net_device *ndev;

	rdma_gid2ip(visock_sa(&addr), gid);
	dev_addr.net = net;
	dev_addr.bound_dev_if = ifindex;
	if (rdma_translate_ip(visock_sa(&addr), &dev_addr))
		return ERR_PTR(-ENODEV);
	ndev = dev_get_by_index(net, dev_addr.bound_dev_if);
	return ndev ?: ERR_PTR(-ENODEV);
}

/* ib_modify_qp(), remembering a failure of the device (see @modify_failed). */
static int visock_qp_modify(struct visock_qp *q, struct ib_qp_attr *attr,
			    int mask)
{
	int err = ib_modify_qp(q->ibqp, attr, mask);

	if (err)
		q->modify_failed = true;
	return err;
}

/*
 * Estimated bytes of a QP's queues, charged to the namespace's memory
 * limit like rings: the device's send queue (@sq requests), receive
 * queue (@rq) and completion queue (@cqe entries), each rounded up to a
 * power of two as drivers allocate them, at VISOCK_QP_*_BYTES per entry;
 * plus our cursor message slots and receive request array.
 */
static u64 visock_qp_mem_estimate(const struct visock_qp *q, u32 sq, u32 rq,
				  u32 cqe)
{
	u32 slots = rq + (q->max_conns + 1) * VISOCK_VC_SQ_DEPTH;

	return (u64)roundup_pow_of_two(sq) * VISOCK_QP_SWQE_BYTES +
	       (u64)roundup_pow_of_two(rq) * VISOCK_QP_RWQE_BYTES +
	       (u64)roundup_pow_of_two(cqe) * VISOCK_QP_CQE_BYTES +
	       (u64)DIV_ROUND_UP(slots, VISOCK_SLOTS_PER_PAGE) * PAGE_SIZE +
	       (u64)rq * sizeof(struct visock_qp_rx);
}

/* Charge @bytes of queues to the namespace's memory limit, or -ENOBUFS. */
static int visock_qp_charge(struct visock_qp *q, u64 bytes)
{
	struct visock_net *vn = visock_net(q->net);
	u64 max = (u64)READ_ONCE(vn->lgr_mem_max_mb) << 20;

	if (atomic64_add_return(bytes, &vn->lgr_mem) > max) {
		atomic64_sub(bytes, &vn->lgr_mem);
		return -ENOBUFS;
	}
	atomic64_add(bytes, &vn->lgr_qp_mem);
	q->qp_bytes = bytes;
	return 0;
}

static int visock_qp_create_verbs(struct visock_qp *q)
{
	const struct ib_device_attr *da = &q->ibdev->attrs;
	struct ib_qp_init_attr init = {};
	struct ib_qp_attr attr = {};
	u32 sq, rq, cqe, max_wr;
	int err;

	/* One more request each for ib_drain_qp(). */
	max_wr = da->max_qp_wr > 1 ? da->max_qp_wr - 1 : 0;
	if (max_wr < VISOCK_QP_SQ_SLACK + VISOCK_VC_SQ_DEPTH ||
	    max_wr < VISOCK_QP_RQ_SLACK + VISOCK_VC_RQ_DEPTH)
		return -EOPNOTSUPP;
	q->max_conns = min3(q->max_conns,
			    (max_wr - VISOCK_QP_SQ_SLACK) / VISOCK_VC_SQ_DEPTH,
			    (max_wr - VISOCK_QP_RQ_SLACK) / VISOCK_VC_RQ_DEPTH);
	sq = VISOCK_QP_SQ_SLACK + q->max_conns * VISOCK_VC_SQ_DEPTH;
	rq = VISOCK_QP_RQ_SLACK + q->max_conns * VISOCK_VC_RQ_DEPTH;
	q->rq_size = rq;
	cqe = min_t(u32, sq + rq + 2, da->max_cqe);
	err = visock_qp_charge(q, visock_qp_mem_estimate(q, sq + 1, rq + 1,
							 cqe));
	if (err)
		return err;

	q->cq = visock_fault_ptr(VISOCK_FP_CQ_CREATE) ?:
		ib_alloc_cq_any(q->ibdev, q, cqe, IB_POLL_SOFTIRQ);
	if (IS_ERR(q->cq)) {
		err = PTR_ERR(q->cq);
		q->cq = NULL;
		return err;
	}

	init.event_handler = visock_qp_event;
	init.qp_context = q;
	init.send_cq = q->cq;
	init.recv_cq = q->cq;
	init.cap.max_send_wr = sq + 1;
	init.cap.max_recv_wr = rq + 1;
	init.cap.max_send_sge = VISOCK_QP_SEND_SGE;
	init.cap.max_recv_sge = VISOCK_QP_RECV_SGE;
	init.sq_sig_type = IB_SIGNAL_REQ_WR;
	init.qp_type = IB_QPT_RC;
	q->ibqp = visock_fault_ptr(VISOCK_FP_QP_CREATE) ?:
		  ib_create_qp(q->pd, &init);
	if (IS_ERR(q->ibqp)) {
		err = PTR_ERR(q->ibqp);
		q->ibqp = NULL;
		return err;
	}
	q->qpn = q->ibqp->qp_num;

	attr.qp_state = IB_QPS_INIT;
	attr.pkey_index = 0;
	attr.port_num = q->port;
	attr.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_LOCAL_WRITE;
	err = visock_fault(VISOCK_FP_QP_INIT);
	if (err)
		return err;
	return visock_qp_modify(q, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
				IB_QP_PORT | IB_QP_ACCESS_FLAGS);
}

/*
 * Cursor message slots, mapped for both directions: the device writes
 * received messages into the receive slots and reads the messages we
 * send from the send slots (index 0's are the QP's own, for link
 * messages).  Context: process context, under the QP's lock.
 */
static int visock_qp_ctrl_create(struct visock_qp *q)
{
	u32 slots = q->rq_size + (q->max_conns + 1) * VISOCK_VC_SQ_DEPTH;
	unsigned int i;

	lockdep_assert_held(&q->lock);
	q->ctrl_npages = DIV_ROUND_UP(slots, VISOCK_SLOTS_PER_PAGE);
	q->ctrl_pages = kcalloc(q->ctrl_npages, sizeof(*q->ctrl_pages),
				GFP_KERNEL);
	q->ctrl_dma = kcalloc(q->ctrl_npages, sizeof(*q->ctrl_dma),
			      GFP_KERNEL);
	q->rx = kvcalloc(q->rq_size, sizeof(*q->rx), GFP_KERNEL);
	if (!q->ctrl_pages || !q->ctrl_dma || !q->rx ||
	    visock_fault(VISOCK_FP_CTRL_ALLOC))
		return -ENOMEM;
	for (i = 0; i < q->rq_size; i++) {
		q->rx[i].cqe.done = visock_qp_rx_done;
		q->rx[i].qp = q;
		q->rx[i].idx = i;
	}
	for (i = 0; i < q->ctrl_npages; i++) {
		q->ctrl_pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!q->ctrl_pages[i])
			return -ENOMEM;
	}
	for (i = 0; i < q->ctrl_npages; i++) {
		q->ctrl_dma[i] = ib_dma_map_page(q->ibdev, q->ctrl_pages[i], 0,
						 PAGE_SIZE, DMA_BIDIRECTIONAL);
		if (ib_dma_mapping_error(q->ibdev, q->ctrl_dma[i])) {
			while (i--)
				ib_dma_unmap_page(q->ibdev, q->ctrl_dma[i],
						  PAGE_SIZE, DMA_BIDIRECTIONAL);
			return -ENOMEM;
		}
	}
	q->ctrl_mapped = true;
	return 0;
}

/**
 * visock_qp_setup() - create the verbs objects of a new QP
 * @q: the QP, in state VISOCK_QP_NEW
 * @local: the local address of the connection that created it
 *
 * Attaches @q to the RDMA device with the GID of @local, creates its PD,
 * CQ, RC QP (moved to INIT) and cursor message slots, and posts the
 * first receive requests.  What was created before a failure is released
 * with the QP.
 *
 * Context: process context, under the QP's lock.
 * Return: 0 with @q in state VISOCK_QP_INIT, -ENODEV if no usable device
 * has the address, -ENOBUFS at the memory limit, or another negative
 * errno.
 */
int visock_qp_setup(struct visock_qp *q, const struct sockaddr *local)
{
	const struct ib_gid_attr *attr;
	struct ib_port_attr pattr;
	struct net_device *ndev;
	union ib_gid gid;
	int ifindex, err;

	lockdep_assert_held(&q->lock);
	err = visock_qp_addr_to_gid(local, &gid, &ifindex);
	if (err)
		return err;
	ndev = visock_qp_find_ndev(q->net, &gid, ifindex);
	if (IS_ERR(ndev))
		return PTR_ERR(ndev);
	attr = visock_ib_attach(q->net, &gid, ndev, &q->dev_node, &q->vdev);
	dev_put(ndev);
	if (IS_ERR(attr))
		return PTR_ERR(attr);
	q->sgid_attr = attr;
	q->ibdev = attr->device;
	q->port = attr->port_num;
	q->gid = gid;

	err = ib_query_port(q->ibdev, q->port, &pattr);
	if (err)
		return err;
	if (pattr.state != IB_PORT_ACTIVE)
		return -ENODEV;
	q->mtu = pattr.active_mtu;

	q->pd = visock_fault_ptr(VISOCK_FP_PD_ALLOC) ?: ib_alloc_pd(q->ibdev, 0);
	if (IS_ERR(q->pd)) {
		err = PTR_ERR(q->pd);
		q->pd = NULL;
		return err;
	}
	err = visock_qp_create_verbs(q);
	if (err)
		return err;
	q->psn = get_random_u32() & 0xffffff;
	err = visock_qp_ctrl_create(q);
	if (err)
		return err;
	spin_lock_bh(&q->post_lock);
	q->can_post = true;
	spin_unlock_bh(&q->post_lock);
	err = visock_qp_fill_rq(q, 1);
	if (err)
		return err;
	q->state = VISOCK_QP_INIT;
	return 0;
}

static void visock_qp_rbufs_release_dma(struct visock_qp *q,
					struct list_head *list)
{
	struct visock_rbuf *rb;

	list_for_each_entry(rb, list, node)
		visock_rbuf_release_dma(q, rb);
}

/**
 * visock_qp_release_verbs() - release a QP's verbs objects
 * @q: the QP
 *
 * Stops posting, drains the QP (every request completes, flushed),
 * releases every verbs object and the rings' DMA mappings and detaches
 * from the device.  Idempotent.
 *
 * Context: process context, under the QP's lock.
 */
void visock_qp_release_verbs(struct visock_qp *q)
{
	struct visock_ibdev *vdev = q->vdev;
	struct visock_vc *l;
	unsigned int i;
	bool drain;

	lockdep_assert_held(&q->lock);
	spin_lock_bh(&q->post_lock);
	q->can_post = false;
	drain = q->posted;
	spin_unlock_bh(&q->post_lock);

	if (q->ibqp) {
		/*
		 * Every posted request completes before the QP goes, unless
		 * the device failed a state change: it may then never flush
		 * (Soft-RoCE keeps its responder stopped when it cannot
		 * allocate for IB_QP_MAX_DEST_RD_ATOMIC), and the drain
		 * would wait for ever.  Such a QP never got to RTS: nothing
		 * but receives was posted, and they go with the QP.
		 */
		if (drain && !q->modify_failed)
			ib_drain_qp(q->ibqp);
		ib_destroy_qp(q->ibqp);
		q->ibqp = NULL;
	}
	if (q->ibdev) {
		list_for_each_entry(l, &q->vcs, qp_node) {
			if (l->rbuf)
				visock_rbuf_release_dma(q, l->rbuf);
			if (l->sbuf)
				visock_rbuf_release_dma(q, l->sbuf);
		}
		visock_qp_rbufs_release_dma(q, &q->pool);
		visock_qp_rbufs_release_dma(q, &q->quarantine);
	}
	if (q->ctrl_mapped) {
		for (i = 0; i < q->ctrl_npages; i++)
			ib_dma_unmap_page(q->ibdev, q->ctrl_dma[i], PAGE_SIZE,
					  DMA_BIDIRECTIONAL);
		q->ctrl_mapped = false;
	}
	if (q->cq) {
		ib_free_cq(q->cq);
		q->cq = NULL;
	}
	if (q->pd) {
		ib_dealloc_pd(q->pd);
		q->pd = NULL;
	}
	if (q->sgid_attr) {
		rdma_put_gid_attr(q->sgid_attr);
		q->sgid_attr = NULL;
	}
	q->ibdev = NULL;

	/* Last: the device's removal waits for us to leave its list. */
	if (vdev) {
		mutex_lock(&vdev->lock);
		list_del_init(&q->dev_node);
		mutex_unlock(&vdev->lock);
		q->vdev = NULL;
	}
}

/**
 * visock_qp_kill() - kill a QP
 * @q: the QP
 * @why: logged
 *
 * Releases its verbs objects (draining it first), marks it dead and
 * calls the dead_cb of every connection on it; the QP goes once idle.
 *
 * Context: process context, no visock lock held.
 */
void visock_qp_kill(struct visock_qp *q, const char *why)
{
	struct visock_vc *l;

	mutex_lock(&q->lock);
	visock_qp_release_verbs(q);
	if (!q->dead) {
		WRITE_ONCE(q->dead, true);
		WRITE_ONCE(q->dying, true);
		trace_visock_link_down(q->qpn, q->state == VISOCK_QP_UP, true);
		net_info_ratelimited("visock: QP %u killed: %s\n", q->qpn, why);
		list_for_each_entry(l, &q->vcs, qp_node)
			if (l->dead_cb)
				l->dead_cb(l->dead_ctx);
	}
	mutex_unlock(&q->lock);
	visock_qp_ka_stop(q);
	/* Connections waiting for it to come up look again. */
	wake_up_all(&visock_net(q->net)->lgr_wq);
	visock_qp_queue_idle(q, 0);
}

/**
 * visock_sa_to_gid() - an IP address as a RoCE GID
 * @sa: sockaddr_in or sockaddr_in6
 * @gid: set to the address, IPv4-mapped for IPv4
 *
 * Context: any context.
 * Return: 0, or -EAFNOSUPPORT for another family.
 */
int visock_sa_to_gid(const struct sockaddr *sa, union ib_gid *gid)
{
	int ifindex;

	return visock_qp_addr_to_gid(sa, gid, &ifindex);
}

struct visock_resolve {
	struct completion done;
	int status;
};

static void visock_qp_resolved(int status, struct sockaddr *src,
			       struct rdma_dev_addr *addr, void *ctx)
{
	struct visock_resolve *r = ctx;

	r->status = status;
	complete(&r->done);
}

/*
 * Kernel users of ib_modify_qp() pass a resolved RoCE address: find the
 * peer's MAC address (and the route's hop limit) through ib_core's
 * address resolution, in the namespace of our GID's net device.
 */
static int visock_qp_resolve(struct visock_qp *q, const union ib_gid *dgid,
			     u8 *dmac, u8 *hop_limit)
{
	union visock_ipaddr src, dst;
	struct rdma_dev_addr dev_addr = {};
	struct visock_resolve r;
	int err;

	rdma_gid2ip(visock_sa(&src), &q->gid);
	rdma_gid2ip(visock_sa(&dst), dgid);
	if (src.in.sin_family != dst.in.sin_family)
		return -EAFNOSUPPORT;

	dev_addr.net = q->net;
	dev_addr.sgid_attr = q->sgid_attr;
	init_completion(&r.done);
	r.status = 0;
	err = rdma_resolve_ip(visock_sa(&src), visock_sa(&dst), &dev_addr,
			      VISOCK_QP_RESOLVE_MS, visock_qp_resolved,
			      true, &r);
	if (err)
		return err;
	/* ib_core calls back within VISOCK_QP_RESOLVE_MS in any case. */
	wait_for_completion(&r.done);
	if (r.status)
		return r.status;

	memcpy(dmac, dev_addr.dst_dev_addr, ETH_ALEN);
	if (dev_addr.hoplimit > 0 && dev_addr.hoplimit <= 255)
		*hop_limit = dev_addr.hoplimit;
	else
		*hop_limit = VISOCK_QP_HOP_LIMIT;
	return 0;
}

static int visock_qp_to_rtr(struct visock_qp *q,
			    const struct visock_hs_msg *peer)
{
	struct ib_qp_attr attr = {};
	union ib_gid dgid;
	u8 dmac[ETH_ALEN];
	u8 hop_limit;
	int err;

	memcpy(dgid.raw, peer->gid, sizeof(dgid.raw));
	q->peer_gid = dgid;
	err = visock_qp_resolve(q, &dgid, dmac, &hop_limit);
	if (err)
		return err;

	attr.qp_state = IB_QPS_RTR;
	attr.path_mtu = min_t(enum ib_mtu, q->mtu, peer->mtu);
	attr.dest_qp_num = peer->qpn;
	attr.rq_psn = peer->psn;
	attr.max_dest_rd_atomic = 1;
	attr.min_rnr_timer = VISOCK_QP_MIN_RNR;

	attr.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&attr.ah_attr, q->port);
	rdma_ah_set_grh(&attr.ah_attr, &dgid, 0, q->sgid_attr->index,
			hop_limit, 0);
	/* Pin the exact GID entry we looked up; ib_core takes its own ref. */
	attr.ah_attr.grh.sgid_attr = q->sgid_attr;
	memcpy(attr.ah_attr.roce.dmac, dmac, ETH_ALEN);

	err = visock_fault(VISOCK_FP_QP_RTR);
	if (err)
		return err;
	return visock_qp_modify(q, &attr, IB_QP_STATE | IB_QP_AV |
				IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN |
				IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
}

static int visock_qp_to_rts(struct visock_qp *q)
{
	struct ib_qp_attr attr = {};
	int err;

	attr.qp_state = IB_QPS_RTS;
	attr.sq_psn = q->psn;
	attr.timeout = q->ack_timeout;
	attr.retry_cnt = VISOCK_QP_RETRY;
	attr.rnr_retry = VISOCK_QP_RNR_RETRY;
	attr.max_rd_atomic = 1;
	err = visock_fault(VISOCK_FP_QP_RTS);
	if (err)
		return err;
	return visock_qp_modify(q, &attr, IB_QP_STATE | IB_QP_TIMEOUT |
				IB_QP_RETRY_CNT | IB_QP_RNR_RETRY |
				IB_QP_SQ_PSN | IB_QP_MAX_QP_RD_ATOMIC);
}

/**
 * visock_qp_connect() - connect a new QP to the peer's end
 * @q: the QP, in state VISOCK_QP_INIT
 * @peer: the peer's REQ or REP
 *
 * Moves @q to RTR and RTS towards the peer's GID, QPN and PSN, with the
 * smaller of both MTUs.
 *
 * Context: process context, may sleep (address resolution), under the
 * QP's lock.
 * Return: 0, -EINVAL if @q is not in INIT, -EBADMSG if the peer's GID is
 * not the address of its TCP connection, or another negative errno.
 */
int visock_qp_connect(struct visock_qp *q, const struct visock_hs_msg *peer)
{
	int err;

	lockdep_assert_held(&q->lock);
	if (q->state != VISOCK_QP_INIT)
		return -EINVAL;
	/* The peer's GID must be the address we reach it at over TCP. */
	if (memcmp(peer->gid, q->peer_addr.raw, sizeof(peer->gid))) {
		atomic64_inc(&visock_net(q->net)->lgr_gid_mismatch);
		return -EBADMSG;
	}
	q->peer_qpn = peer->qpn;
	err = visock_qp_to_rtr(q, peer);
	if (!err)
		err = visock_qp_to_rts(q);
	return err;
}
