// SPDX-License-Identifier: GPL-2.0
/*
 * krpc: an RPC transport for RDMA hosts.
 *
 * Module init is a ladder; exit is its exact reverse.
 */
#include <linux/module.h>

#include "krpc_priv.h"

struct krpc_global_stats krpc_stats;

static int __init krpc_init(void)
{
	int ret;

	ret = krpc_debugfs_init();
	if (ret)
		return ret;

	ret = krpc_device_init();
	if (ret)
		goto out_debugfs;

	ret = krpc_chardev_init();
	if (ret)
		goto out_device;

	pr_info("krpc %s loaded\n", KRPC_VERSION_STR);
	return 0;

out_device:
	krpc_device_exit();
out_debugfs:
	krpc_debugfs_exit();
	return ret;
}

static void __exit krpc_exit(void)
{
	krpc_chardev_exit();
	krpc_device_exit();
	krpc_debugfs_exit();
	pr_info("krpc unloaded\n");
}

module_init(krpc_init);
module_exit(krpc_exit);

MODULE_AUTHOR("The krpc authors");
MODULE_DESCRIPTION("krpc: RPC transport over RDMA (and TCP) for kernel and userspace");
MODULE_LICENSE("GPL");
MODULE_VERSION(KRPC_VERSION_STR);
