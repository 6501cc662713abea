// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA devices as krpc sees them: an ib_client whose add callback runs for
 * every device present at registration and every device added later
 * ("rdma link add"), and whose remove callback runs, synchronously and in
 * process context, before a device goes away ("rdma link del", driver
 * unload) or when the client is unregistered at module exit.
 */
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/seq_file.h>
#include <rdma/ib_verbs.h>

#include "krpc_priv.h"
#include "pool.h"
#include "ufile.h"

static LIST_HEAD(krpc_devices);
static DEFINE_MUTEX(krpc_devices_lock);
static unsigned int krpc_nr_devices;

static struct ib_client krpc_ib_client;

static void device_release(struct kref *ref)
{
	struct krpc_device *kdev = container_of(ref, struct krpc_device, ref);

	WARN_ON(kdev->pd || kdev->pool || !list_empty(&kdev->conns));
	kfree(kdev);
}

void krpc_device_put(struct krpc_device *kdev)
{
	kref_put(&kdev->ref, device_release);
}

static int client_add(struct ib_device *ibdev)
{
	struct krpc_device *kdev;

	kdev = kzalloc(sizeof(*kdev), GFP_KERNEL);
	if (!kdev)
		return -ENOMEM;
	if (krpc_ubuf_device_add(ibdev)) {
		kfree(kdev);
		return -ENOMEM;
	}
	kdev->ibdev = ibdev;
	kref_init(&kdev->ref);
	mutex_init(&kdev->lock);
	INIT_LIST_HEAD(&kdev->conns);
	init_waitqueue_head(&kdev->wq);

	mutex_lock(&krpc_devices_lock);
	list_add_tail(&kdev->node, &krpc_devices);
	krpc_nr_devices++;
	mutex_unlock(&krpc_devices_lock);

	ib_set_client_data(ibdev, &krpc_ib_client, kdev);
	atomic64_inc(&krpc_stats.devices_added);
	pr_info("device %s added\n", dev_name(&ibdev->dev));
	return 0;
}

/*
 * The device is going ("rdma link del", driver unload, module exit).
 * Tear down every connection on it, with calls in flight, and wait: when
 * this returns no QP, CQ, MR or cm_id of krpc refers to the device, and the
 * DMA mappings of its pools (the kernel clients' default pool and the
 * processes' pools) are gone.  Kernel clients and processes may still hold
 * pool buffers; they remain valid memory until put or unmapped.
 */
static void client_remove(struct ib_device *ibdev, void *client_data)
{
	struct krpc_device *kdev = client_data;
	struct list_head *node, *tmp;

	mutex_lock(&krpc_devices_lock);
	list_del(&kdev->node);
	krpc_nr_devices--;
	mutex_unlock(&krpc_devices_lock);

	mutex_lock(&kdev->lock);
	kdev->dying = true;
	list_for_each_safe(node, tmp, &kdev->conns)
		krpc_rdma_device_removal(node);
	mutex_unlock(&kdev->lock);
	/*
	 * Lockless check (a wait condition may not sleep): once @dying is set
	 * entries only leave, by list_del_init() followed by a wake-up.
	 */
	wait_event(kdev->wq, list_empty_careful(&kdev->conns));

	/* No QP is left to touch them: unmap the processes' pools. */
	krpc_ubuf_device_remove(ibdev);
	if (kdev->pool) {
		krpc_pool_kill(kdev->pool);
		krpc_pool_put(kdev->pool);
		kdev->pool = NULL;
	}
	if (kdev->pd) {
		ib_dealloc_pd(kdev->pd);
		kdev->pd = NULL;
	}

	atomic64_inc(&krpc_stats.devices_removed);
	pr_info("device %s removed\n", dev_name(&ibdev->dev));
	kdev->ibdev = NULL;
	krpc_device_put(kdev);
}

static struct ib_client krpc_ib_client = {
	.name	= "krpc",
	.add	= client_add,
	.remove	= client_remove,
};

/* A referenced device for a cm_id's ib_device, unless it is going away. */
struct krpc_device *krpc_device_lookup(struct ib_device *ibdev)
{
	struct krpc_device *kdev, *found = NULL;

	/*
	 * The list, not ib_get_client_data(): the remove callback takes the
	 * device off the list before it frees anything.
	 */
	mutex_lock(&krpc_devices_lock);
	list_for_each_entry(kdev, &krpc_devices, node) {
		if (kdev->ibdev == ibdev) {
			kref_get(&kdev->ref);
			found = kdev;
			break;
		}
	}
	mutex_unlock(&krpc_devices_lock);
	return found;
}

/*
 * Put a connection on the device's list (so that removal finds it) and
 * make sure the device has its PD.  With @pool, also hand out the
 * device's default pool, created on first use; on success *pool carries
 * a reference for the caller.  Connections that bring their own pool pass
 * NULL: a device used only by processes never allocates the default pool.
 *
 * Context: process context (rdma_cm callback); may sleep long the first
 * time (the pool is allocated and mapped).
 */
int krpc_device_attach(struct krpc_device *kdev, struct list_head *node,
		       struct krpc_pool **pool)
{
	struct krpc_pool_cfg cfg;
	int ret = 0;

	mutex_lock(&kdev->lock);
	if (kdev->dying) {
		ret = -ENODEV;
		goto out_unlock;
	}
	if (!kdev->pd) {
		/* Local DMA key only: never IB_PD_UNSAFE_GLOBAL_RKEY. */
		kdev->pd = ib_alloc_pd(kdev->ibdev, 0);
		if (IS_ERR(kdev->pd)) {
			ret = PTR_ERR(kdev->pd);
			kdev->pd = NULL;
			goto out_unlock;
		}
	}
	if (pool && !kdev->pool) {
		struct krpc_pool *p;

		krpc_params_pool_cfg(&cfg);
		p = krpc_pool_create(kdev->ibdev, &cfg);
		if (IS_ERR(p)) {
			ret = PTR_ERR(p);
			goto out_unlock;
		}
		kdev->pool = p;
	}
	if (pool) {
		krpc_pool_get(kdev->pool);
		*pool = kdev->pool;
	}
	list_add_tail(node, &kdev->conns);
out_unlock:
	mutex_unlock(&kdev->lock);
	return ret;
}

void krpc_device_detach(struct krpc_device *kdev, struct list_head *node)
{
	mutex_lock(&kdev->lock);
	list_del_init(node);
	mutex_unlock(&kdev->lock);
	wake_up(&kdev->wq);
}

unsigned int krpc_device_count(void)
{
	unsigned int n;

	mutex_lock(&krpc_devices_lock);
	n = krpc_nr_devices;
	mutex_unlock(&krpc_devices_lock);
	return n;
}

/* debugfs krpc/devices: one line per device. */
int krpc_device_show(struct seq_file *m, void *unused)
{
	struct krpc_device *kdev;

	mutex_lock(&krpc_devices_lock);
	list_for_each_entry(kdev, &krpc_devices, node)
		seq_printf(m, "%s\n", dev_name(&kdev->ibdev->dev));
	mutex_unlock(&krpc_devices_lock);
	return 0;
}

int krpc_device_init(void)
{
	return ib_register_client(&krpc_ib_client);
}

void krpc_device_exit(void)
{
	/* Runs remove for every device still present. */
	ib_unregister_client(&krpc_ib_client);
	WARN_ON(!list_empty(&krpc_devices));
}
