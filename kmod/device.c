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

static LIST_HEAD(krpc_devices);
static DEFINE_MUTEX(krpc_devices_lock);
static unsigned int krpc_nr_devices;

static struct ib_client krpc_ib_client;

static void device_release(struct kref *ref)
{
	kfree(container_of(ref, struct krpc_device, ref));
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
	kdev->ibdev = ibdev;
	kref_init(&kdev->ref);

	mutex_lock(&krpc_devices_lock);
	list_add_tail(&kdev->node, &krpc_devices);
	krpc_nr_devices++;
	mutex_unlock(&krpc_devices_lock);

	ib_set_client_data(ibdev, &krpc_ib_client, kdev);
	atomic64_inc(&krpc_stats.devices_added);
	pr_info("device %s added\n", dev_name(&ibdev->dev));
	return 0;
}

static void client_remove(struct ib_device *ibdev, void *client_data)
{
	struct krpc_device *kdev = client_data;

	mutex_lock(&krpc_devices_lock);
	list_del(&kdev->node);
	krpc_nr_devices--;
	mutex_unlock(&krpc_devices_lock);

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
