// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/debug/krpc/: read-only views for tests and operators.
 *   devices	RDMA devices krpc sees, one per line
 *   stats	module-wide counters, "name value" per line
 * debugfs may be disabled or absent; krpc works without it.
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "krpc_priv.h"

struct dentry *krpc_debugfs_root;

static int devices_show(struct seq_file *m, void *unused)
{
	return krpc_device_show(m, unused);
}
DEFINE_SHOW_ATTRIBUTE(devices);

static int stats_show(struct seq_file *m, void *unused)
{
#define STAT(name) seq_printf(m, "%s %lld\n", #name, \
			      (long long)atomic64_read(&krpc_stats.name))
	STAT(devices_added);
	STAT(devices_removed);
	STAT(files_opened);
	STAT(files_open);
#undef STAT
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(stats);

int krpc_debugfs_init(void)
{
	krpc_debugfs_root = debugfs_create_dir("krpc", NULL);
	debugfs_create_file("devices", 0400, krpc_debugfs_root, NULL,
			    &devices_fops);
	debugfs_create_file("stats", 0400, krpc_debugfs_root, NULL,
			    &stats_fops);
	return 0;
}

void krpc_debugfs_exit(void)
{
	debugfs_remove_recursive(krpc_debugfs_root);
	krpc_debugfs_root = NULL;
}
