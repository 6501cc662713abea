// SPDX-License-Identifier: GPL-2.0
/*
 * krpc: an RPC transport for RDMA hosts.
 *
 * Module init is a ladder; exit is its exact reverse.
 */
#include <linux/module.h>
#include <linux/workqueue.h>

#include "krpc_priv.h"
#include "rdma.h"

struct krpc_global_stats krpc_stats;
struct workqueue_struct *krpc_wq;
struct workqueue_struct *krpc_handler_wq;
struct workqueue_struct *krpc_cq_wq;

static int __init krpc_init(void)
{
	int ret;

	ret = krpc_params_check();
	if (ret)
		return ret;
	ret = krpc_rdma_msg_table_check();
	if (ret)
		return ret;

	ret = krpc_debugfs_init();
	if (ret)
		return ret;

	ret = krpc_rpc_init();
	if (ret)
		goto out_debugfs;

	ret = krpc_server_init();
	if (ret)
		goto out_rpc;

	/* Teardown must progress under memory pressure: a rescuer thread. */
	krpc_wq = alloc_workqueue("krpc", WQ_MEM_RECLAIM, 0);
	if (!krpc_wq) {
		ret = -ENOMEM;
		goto out_server;
	}
	krpc_handler_wq = alloc_workqueue("krpc_handler",
					  WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!krpc_handler_wq) {
		ret = -ENOMEM;
		goto out_wq;
	}
	/* Software devices' CQs (rdma_cq.c), as ib_core's ib_comp_unbound_wq. */
	krpc_cq_wq = alloc_workqueue("krpc_cq",
				     WQ_UNBOUND | WQ_HIGHPRI | WQ_MEM_RECLAIM, 0);
	if (!krpc_cq_wq) {
		ret = -ENOMEM;
		goto out_handler_wq;
	}

	ret = krpc_device_init();
	if (ret)
		goto out_cq_wq;

	ret = krpc_chardev_init();
	if (ret)
		goto out_device;

	pr_info("krpc %s loaded\n", KRPC_VERSION_STR);
	return 0;

out_device:
	krpc_device_exit();
out_cq_wq:
	destroy_workqueue(krpc_cq_wq);
out_handler_wq:
	destroy_workqueue(krpc_handler_wq);
out_wq:
	destroy_workqueue(krpc_wq);
out_server:
	krpc_server_exit();
out_rpc:
	krpc_rpc_exit();
out_debugfs:
	krpc_debugfs_exit();
	return ret;
}

static void __exit krpc_exit(void)
{
	krpc_chardev_exit();
	/* Removes every device: tears down what connections remain. */
	krpc_device_exit();
	/* Kernel users are gone: drop the TCP pool. */
	krpc_tcp_exit();
	/* Every connection's CQ is gone. */
	destroy_workqueue(krpc_cq_wq);
	destroy_workqueue(krpc_handler_wq);
	/* Runs pending teardowns and pool releases, which free calls. */
	destroy_workqueue(krpc_wq);
	/* Every connection's CQ is gone: stop the pollers. */
	krpc_rdma_poll_exit();
	/* No work item is left to free into the caches. */
	krpc_server_exit();
	krpc_rpc_exit();
	krpc_debugfs_exit();
	pr_info("krpc unloaded\n");
}

module_init(krpc_init);
module_exit(krpc_exit);

MODULE_AUTHOR("The krpc authors");
MODULE_DESCRIPTION("krpc: RPC transport over RDMA (and TCP) for kernel and userspace");
MODULE_LICENSE("GPL");
MODULE_VERSION(KRPC_VERSION_STR);
