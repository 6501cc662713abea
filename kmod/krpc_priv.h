/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krpc private declarations shared by the module's files.
 *
 * Locking, outermost first:
 *   krpc_devices_lock (mutex, device.c) - the list of RDMA devices krpc sees;
 *	taken from module init/exit, the ib_client add/remove callbacks
 *	(process context, may sleep) and debugfs readers.
 */
#ifndef KRPC_PRIV_H
#define KRPC_PRIV_H

#include <linux/types.h>
#include <linux/list.h>
#include <linux/kref.h>
#include <linux/atomic.h>
#include <linux/printk.h>

#undef pr_fmt
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

struct ib_device;
struct dentry;

/**
 * struct krpc_device - an RDMA device seen through krpc's ib_client
 * @node:	entry in the device list, under krpc_devices_lock
 * @ibdev:	the ib_core device; valid until the client's remove callback
 * @ref:	held by the device list and by every user of the device
 */
struct krpc_device {
	struct list_head node;
	struct ib_device *ibdev;
	struct kref ref;
};

/* Module-wide counters, shown in debugfs krpc/stats. */
struct krpc_global_stats {
	atomic64_t devices_added;
	atomic64_t devices_removed;
	atomic64_t files_opened;
	atomic64_t files_open;
};

extern struct krpc_global_stats krpc_stats;

int krpc_device_init(void);
void krpc_device_exit(void);
unsigned int krpc_device_count(void);
void krpc_device_put(struct krpc_device *kdev);
int krpc_device_show(struct seq_file *m, void *unused);

int krpc_chardev_init(void);
void krpc_chardev_exit(void);

int krpc_debugfs_init(void);
void krpc_debugfs_exit(void);
extern struct dentry *krpc_debugfs_root;

#endif /* KRPC_PRIV_H */
