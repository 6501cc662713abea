// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/debug/krpc/: read-only views for tests and operators, plus
 * fault knobs for tests.
 *   devices	RDMA devices krpc sees, one per line
 *   stats	module-wide counters, "name value" per line; conn_* are sums
 *		over all connections (struct krpc_conn_stats)
 *   conns	one line per connection, "key=value" fields
 *   pollers	one line per poller thread (rdma_poll.c), "key=value" fields
 *   fault_proto_version	if not 0, clients announce this protocol version
 *		(u16, as on the wire; handshake rejection tests); servers
 *		always announce their own
 *   fault_mute	connection id that stops sending anything (dead-peer tests)
 *   fault_client_delay_ms	RDMA clients wait this long (at most 10 s)
 *		before they handle ESTABLISHED (early-message tests)
 *   fault_drop_cancel	if not 0, RDMA servers ignore the CANCELs they
 *		receive (cancel-race tests)
 *   fault_oneway_delay_ms	one-way requests' sleeping handlers start this
 *		much later (at most 10 s; late-handler tests)
 *   fault_cq_irq_work	if not 0, software devices' CQ events in interrupt
 *		context also go through the irq_work that process-context
 *		ones take (rdma_cq.c; where Soft-RoCE completes in softirq,
 *		as on 6.1 and the debug kernel)
 * debugfs may be disabled or absent; krpc works without it.
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "krpc_priv.h"
#include "wire.h"

struct dentry *krpc_debugfs_root;
u16 krpc_fault_proto_version;
u32 krpc_fault_mute;
u32 krpc_fault_client_delay_ms;
u32 krpc_fault_drop_cancel;
u32 krpc_fault_oneway_delay_ms;
u32 krpc_fault_cq_irq_work;

/* The protocol version a client announces (fault_proto_version or ours). */
u16 krpc_client_wire_version(void)
{
	u16 ver = READ_ONCE(krpc_fault_proto_version);

	return ver ? ver : KRPC_WIRE_VERSION;
}

static int devices_show(struct seq_file *m, void *unused)
{
	return krpc_device_show(m, unused);
}
DEFINE_SHOW_ATTRIBUTE(devices);

static int stats_show(struct seq_file *m, void *unused)
{
	unsigned int i;

#define STAT(name) seq_printf(m, "%s %lld\n", #name, \
			      (long long)atomic64_read(&krpc_stats.name))
	STAT(devices_added);
	STAT(devices_removed);
	STAT(files_opened);
	STAT(files_open);
	STAT(conns_open);
	STAT(conns_total);
	STAT(conns_rejected);
	STAT(protocol_errors);
	STAT(tcp_fallbacks);
	STAT(tcp_zc_sends);
	STAT(cq_reaped_softirq);
	STAT(cq_reaped_work);
	STAT(cq_irq_work);
	STAT(cq_polled);
	STAT(poll_sleeps);
	STAT(poll_defers);
	STAT(busy_polled);
	STAT(ucq_busy_polls);
	STAT(ucq_posted);
	STAT(ucq_live);
	STAT(pools);
	STAT(pool_empty);
	STAT(dma_mapped);
	STAT(calls_live);
	STAT(reqs_live);
	STAT(early_rx);
	STAT(cancel_acks);
	STAT(cancel_unanswered);
	STAT(tcp_stuck_resets);
	STAT(unsig_holds);
	STAT(unsig_held);
#undef STAT
	for (i = 0; i < KRPC_STAT_NR; i++)
		seq_printf(m, "conn_%s %lld\n", krpc_stat_names[i],
			   (long long)atomic64_read(&krpc_stats.conn[i]));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(stats);

DEFINE_SEQ_ATTRIBUTE(krpc_conns);	/* conn.c */

static int pollers_show(struct seq_file *m, void *unused)
{
	return krpc_pollers_show(m, unused);
}
DEFINE_SHOW_ATTRIBUTE(pollers);

int krpc_debugfs_init(void)
{
	krpc_debugfs_root = debugfs_create_dir("krpc", NULL);
	debugfs_create_file("devices", 0400, krpc_debugfs_root, NULL,
			    &devices_fops);
	debugfs_create_file("stats", 0400, krpc_debugfs_root, NULL,
			    &stats_fops);
	debugfs_create_file("conns", 0400, krpc_debugfs_root, NULL,
			    &krpc_conns_fops);
	debugfs_create_file("pollers", 0400, krpc_debugfs_root, NULL,
			    &pollers_fops);
	debugfs_create_u16("fault_proto_version", 0600, krpc_debugfs_root,
			   &krpc_fault_proto_version);
	debugfs_create_u32("fault_mute", 0600, krpc_debugfs_root,
			   &krpc_fault_mute);
	debugfs_create_u32("fault_client_delay_ms", 0600, krpc_debugfs_root,
			   &krpc_fault_client_delay_ms);
	debugfs_create_u32("fault_drop_cancel", 0600, krpc_debugfs_root,
			   &krpc_fault_drop_cancel);
	debugfs_create_u32("fault_oneway_delay_ms", 0600, krpc_debugfs_root,
			   &krpc_fault_oneway_delay_ms);
	debugfs_create_u32("fault_cq_irq_work", 0600, krpc_debugfs_root,
			   &krpc_fault_cq_irq_work);
	return 0;
}

void krpc_debugfs_exit(void)
{
	debugfs_remove_recursive(krpc_debugfs_root);
	krpc_debugfs_root = NULL;
}
