// SPDX-License-Identifier: GPL-2.0
/*
 * Connections as the RPC core sees them: state, slots, deferred work and
 * counters.  The transport owns everything below (queue pairs, credits).
 *
 * States only move forward: CONNECTING -> UP -> DEAD, or CONNECTING ->
 * DEAD.  A connection is never reused: reconnecting makes a new one.
 */
#include <linux/slab.h>
#include <linux/seq_file.h>
#include <linux/wait_bit.h>
#include <net/net_namespace.h>

#include "krpc_priv.h"
#include "transport.h"
#include "pool.h"
#include "inject.h"
#include "wire.h"

const char *const krpc_stat_names[KRPC_STAT_NR] = {
	[KRPC_STAT_CALLS]		= "calls",
	[KRPC_STAT_REPLIES]		= "replies",
	[KRPC_STAT_BYTES_TX]		= "bytes_tx",
	[KRPC_STAT_BYTES_RX]		= "bytes_rx",
	[KRPC_STAT_ERRORS]		= "errors",
	[KRPC_STAT_TIMEOUTS]		= "timeouts",
	[KRPC_STAT_CANCELS]		= "cancels",
	[KRPC_STAT_RETRIES]		= "retries",
	[KRPC_STAT_RNR_NAKS]		= "rnr_naks",
	[KRPC_STAT_CREDIT_STALLS]	= "credit_stalls",
	[KRPC_STAT_WINDOW_FULL]		= "window_full",
	[KRPC_STAT_STALE]		= "stale",
	[KRPC_STAT_EAGER]		= "eager",
	[KRPC_STAT_RDV]			= "rdv",
	[KRPC_STAT_MR_GRANTS]		= "mr_grants",
	[KRPC_STAT_DP_REGS]		= "dp_regs",
	[KRPC_STAT_COPIES]		= "copies",
	[KRPC_STAT_RX_PAUSES]		= "rx_pauses",
	[KRPC_STAT_CREDIT_MSGS]		= "credit_msgs",
	[KRPC_STAT_UNSIGNALED]		= "unsignaled",
	[KRPC_STAT_POOL_WAITS]		= "pool_waits",
};

static_assert(sizeof(struct krpc_conn_stats) == KRPC_STAT_NR * sizeof(u64));

static LIST_HEAD(krpc_conns);
static DEFINE_SPINLOCK(krpc_conns_lock);
static atomic_t krpc_conn_ids = ATOMIC_INIT(0);

/*
 * Handshake checks every transport makes first (rdma_cm private data, TCP
 * hello): magic and version.  On failure *reason and *value say why, in the
 * form a reject carries.
 */
int krpc_wire_check_magic(__be32 magic, __le16 version, u16 *reason,
			  u32 *value)
{
	*value = 0;
	*reason = KRPC_REJ_MAGIC;
	if (be32_to_cpu(magic) != KRPC_WIRE_MAGIC)
		return -EPROTO;
	if (le16_to_cpu(version) != KRPC_WIRE_VERSION) {
		*reason = KRPC_REJ_VERSION;
		*value = KRPC_WIRE_VERSION;
		return -EPROTONOSUPPORT;
	}
	*reason = KRPC_REJ_PARAMS;
	return 0;
}

/*
 * A ka_timeout_ms the peer announced (wire.h): within the range the module
 * parameter allows, or -EINVAL with the bound it crossed in *value.
 */
int krpc_wire_check_ka(u32 ka_timeout_ms, u32 *value)
{
	if (ka_timeout_ms < krpc_param_ka_timeout_ms.min) {
		*value = krpc_param_ka_timeout_ms.min;
		return -EINVAL;
	}
	if (ka_timeout_ms > krpc_param_ka_timeout_ms.max) {
		*value = krpc_param_ka_timeout_ms.max;
		return -EINVAL;
	}
	return 0;
}

/*
 * The longest this side stays silent, in jiffies: ka_interval_ms, or half
 * the peer's announced timeout if that is shorter (protocol.rst, Liveness).
 * Both are read afresh at each keepalive tick.
 */
unsigned long krpc_conn_ka_interval(const struct krpc_conn *conn)
{
	u32 ms = krpc_param(ka_interval_ms);

	if (conn->ka_peer_ms)
		ms = min(ms, conn->ka_peer_ms / 2);
	return max(1UL, msecs_to_jiffies(ms));
}

/* The errno a client sees for a krpc reject reason. */
int krpc_wire_reject_errno(u16 reason)
{
	switch (reason) {
	case KRPC_REJ_VERSION:
		return -EPROTONOSUPPORT;
	case KRPC_REJ_PARAMS:
		return -EINVAL;
	case KRPC_REJ_FEATURES:
		return -EOPNOTSUPP;
	case KRPC_REJ_RESOURCES:
		return -ENOBUFS;
	default:
		return -ECONNREFUSED;
	}
}

/* A krpc reject reason in words, for the log; any value from the wire. */
const char *krpc_wire_reject_name(u16 reason)
{
	static const char *const names[KRPC_REJ_NR] = {
		[KRPC_REJ_MAGIC]	= "not krpc",
		[KRPC_REJ_VERSION]	= "protocol version",
		[KRPC_REJ_PARAMS]	= "parameters",
		[KRPC_REJ_FEATURES]	= "features",
		[KRPC_REJ_RESOURCES]	= "resources",
		[KRPC_REJ_SHUTDOWN]	= "shutting down",
	};

	return reason < KRPC_REJ_NR && names[reason] ? names[reason] :
	       "unknown reason";
}

void krpc_conn_stat_add(struct krpc_conn *conn, enum krpc_stat s, u64 n)
{
	atomic64_add(n, &conn->stats[s]);
	atomic64_add(n, &krpc_stats.conn[s]);
}

/* @peer is set before the connection is listed (debugfs conns reads it). */
struct krpc_conn *krpc_conn_alloc(const struct krpc_transport_ops *ops,
				  struct net *net, bool server,
				  unsigned int max_depth,
				  const struct sockaddr_storage *peer)
{
	struct krpc_conn *conn;

	conn = kzalloc(sizeof(*conn), GFP_KERNEL);
	if (!conn)
		return NULL;
	kref_init(&conn->ref);
	spin_lock_init(&conn->lock);
	conn->state = KRPC_CONN_CONNECTING;
	conn->server = server;
	conn->ops = ops;
	conn->max_depth = max_depth;
	conn->peer = *peer;
	INIT_LIST_HEAD(&conn->backlog);
	timer_setup(&conn->call_timer, krpc_conn_call_timeout, 0);
	INIT_LIST_HEAD(&conn->srv_node);
	INIT_LIST_HEAD(&conn->done_list);
	INIT_LIST_HEAD(&conn->run_list);
	INIT_LIST_HEAD(&conn->free_list);
	init_completion(&conn->up);
	init_completion(&conn->dead);

	if (server) {
		conn->reqs = kcalloc(max_depth, sizeof(*conn->reqs), GFP_KERNEL);
		if (!conn->reqs)
			goto out_free;
	} else {
		conn->calls = kcalloc(max_depth, sizeof(*conn->calls),
				      GFP_KERNEL);
		conn->free_slots = kcalloc(max_depth, sizeof(*conn->free_slots),
					   GFP_KERNEL);
		if (!conn->calls || !conn->free_slots)
			goto out_free;
	}
	conn->net = get_net(net);
	conn->id = atomic_inc_return(&krpc_conn_ids);

	spin_lock_bh(&krpc_conns_lock);
	list_add_tail(&conn->all_node, &krpc_conns);
	spin_unlock_bh(&krpc_conns_lock);
	atomic64_inc(&krpc_stats.conns_open);
	atomic64_inc(&krpc_stats.conns_total);
	return conn;

out_free:
	kfree(conn->reqs);
	kfree(conn->calls);
	kfree(conn->free_slots);
	kfree(conn);
	return NULL;
}
ALLOW_ERROR_INJECTION(krpc_conn_alloc, NULL);

/*
 * The last reference is dropped by the owner after teardown, or by a call
 * or request that outlived it; never under conn->lock (see krpc_priv.h).
 */
static void conn_release(struct kref *ref)
{
	struct krpc_conn *conn = container_of(ref, struct krpc_conn, ref);

	spin_lock_bh(&krpc_conns_lock);
	list_del(&conn->all_node);
	spin_unlock_bh(&krpc_conns_lock);

	if (conn->ops->free)
		conn->ops->free(conn);
	if (conn->srv)
		krpc_server_put(conn->srv);
	if (conn->pool)
		krpc_pool_put(conn->pool);
	put_net(conn->net);
	kfree(conn->reqs);
	kfree(conn->calls);
	kfree(conn->free_slots);
	kfree(conn);
	atomic64_dec(&krpc_stats.conns_open);
}

void krpc_conn_get(struct krpc_conn *conn)
{
	kref_get(&conn->ref);
}

void krpc_conn_put(struct krpc_conn *conn)
{
	kref_put(&conn->ref, conn_release);
}

void krpc_conn_lock(struct krpc_conn *conn)
	__acquires(&conn->lock)
{
	spin_lock_bh(&conn->lock);
}

/*
 * Drop conn->lock, then run what was queued under it: user completions,
 * NOSLEEP handlers, request frees (which may drop connection references).
 */
void krpc_conn_unlock(struct krpc_conn *conn)
	__releases(&conn->lock)
{
	struct krpc_call *call, *tc;
	struct krpc_req *req, *tr;
	LIST_HEAD(done);
	LIST_HEAD(run);
	LIST_HEAD(free);
	int reset = conn->reset;
	bool completing = !list_empty(&conn->done_list);

	conn->reset = 0;
	/* Counted under the lock: the teardown sees it (teardown_done). */
	if (completing)
		atomic_inc(&conn->done_running);
	list_splice_init(&conn->done_list, &done);
	list_splice_init(&conn->run_list, &run);
	list_splice_init(&conn->free_list, &free);
	spin_unlock_bh(&conn->lock);

	if (reset)
		conn->ops->shutdown(conn, reset);

	list_for_each_entry_safe(call, tc, &done, node) {
		list_del_init(&call->node);
		krpc_call_run_done(call);
	}
	/*
	 * The connection is alive here: its owner's reference goes only
	 * after @dead, which waits for this (only the address is used).
	 */
	if (completing && atomic_dec_and_test(&conn->done_running))
		wake_up_var(&conn->done_running);
	list_for_each_entry_safe(req, tr, &run, node) {
		list_del_init(&req->node);
		krpc_req_run(req);
	}
	list_for_each_entry_safe(req, tr, &free, node) {
		list_del_init(&req->node);
		krpc_req_destroy(req);
	}
}

/* The transport finished the handshake: calls may flow. */
void krpc_conn_established_locked(struct krpc_conn *conn, u32 depth,
				  u32 inline_max, u32 max_msg)
{
	unsigned int i;

	lockdep_assert_held(&conn->lock);
	conn->depth = min(depth, conn->max_depth);
	conn->inline_max = inline_max;
	conn->max_msg = max_msg;
	if (!conn->server) {
		/* Slot 0 on top: low slots get used first. */
		for (i = 0; i < conn->depth; i++)
			conn->free_slots[i] = conn->depth - 1 - i;
		conn->nr_free = conn->depth;
	}
	conn->state = KRPC_CONN_UP;
	complete_all(&conn->up);
}

void krpc_conn_connect_failed(struct krpc_conn *conn, int err)
{
	spin_lock_bh(&conn->lock);
	if (!conn->connect_err)
		conn->connect_err = err;
	spin_unlock_bh(&conn->lock);
	complete_all(&conn->up);
}

/* First step of the canonical teardown order: nothing new starts. */
void krpc_conn_dead_locked(struct krpc_conn *conn, int reason)
{
	lockdep_assert_held(&conn->lock);
	if (conn->state == KRPC_CONN_DEAD)
		return;
	if (conn->state == KRPC_CONN_CONNECTING && !conn->connect_err)
		conn->connect_err = reason;
	conn->state = KRPC_CONN_DEAD;
	conn->reason = reason;
}

/*
 * Last step of a transport's teardown: the queue pair is drained and the
 * transport failed every call it held.  Fail what never reached the
 * transport, tell the owner, and let waiters go.
 *
 * Context: process context.
 */
void krpc_conn_teardown_done(struct krpc_conn *conn)
{
	const struct krpc_client_ops *cops = NULL;
	struct krpc_client *clnt;
	struct krpc_server *srv;
	int reason;

	krpc_conn_lock(conn);
	krpc_conn_dead_locked(conn, -ECONNRESET);
	reason = conn->reason;
	krpc_conn_fail_backlog_locked(conn, reason);
	if (conn->server)
		krpc_conn_orphan_reqs_locked(conn);
	clnt = conn->clnt;
	if (clnt)
		cops = krpc_client_ops_of(clnt);
	krpc_conn_unlock(conn);
	/*
	 * Every call has its result: the call timer finds nothing to wait
	 * for and is not armed again (it holds no reference).
	 */
	timer_delete_sync(&conn->call_timer);
	complete_all(&conn->up);

	/*
	 * Completions another context took off done_list (a cancel from
	 * another thread: nothing of the transport's teardown waits for it)
	 * end before the owner hears of the end: destroy returns after the
	 * last one.
	 */
	wait_var_event(&conn->done_running, !atomic_read(&conn->done_running));

	srv = conn->srv;
	if (srv)
		krpc_server_remove_conn(srv, conn);
	if (cops && cops->disconnected)
		cops->disconnected(clnt, reason, krpc_client_priv_of(clnt));
	complete_all(&conn->dead);
}

void krpc_conn_fill_info_locked(struct krpc_conn *conn,
				struct krpc_conn_info *info)
{
	u64 *out = (u64 *)&info->stats;
	unsigned int i, busy = 0;

	lockdep_assert_held(&conn->lock);
	memset(info, 0, sizeof(*info));
	info->state = conn->state;
	info->reason = conn->reason;
	info->depth = conn->depth;
	if (conn->server) {
		for (i = 0; i < conn->depth; i++)
			busy += !!conn->reqs[i];
	} else {
		busy = conn->depth - conn->nr_free;
	}
	info->inflight = busy;
	info->queued = conn->nr_backlog;
	info->inline_max = conn->inline_max;
	info->max_msg = conn->max_msg;
	info->transport = conn->ops->id;
	if (info->transport == KRPC_XPRT_RDMA)
		info->cq_mode = conn->cq_poll ? KRPC_CQ_POLL : KRPC_CQ_IRQ;
	for (i = 0; i < KRPC_STAT_NR; i++)
		out[i] = atomic64_read(&conn->stats[i]);
	if (conn->ops->query && conn->state != KRPC_CONN_CONNECTING)
		conn->ops->query(conn, info);
}

static const char *const cq_mode_names[] = {
	[KRPC_CQ_DEFAULT]	= "-",		/* TCP */
	[KRPC_CQ_IRQ]		= "irq",
	[KRPC_CQ_POLL]		= "poll",
};

static const char *const state_names[] = {
	[KRPC_CONN_CONNECTING]	= "connecting",
	[KRPC_CONN_UP]		= "up",
	[KRPC_CONN_DEAD]	= "dead",
};

/*
 * debugfs krpc/conns: one line per connection, "key=value" fields.  A
 * seq_file iterator: krpc_conns_lock is held from start to stop, one
 * read()'s worth of lines, not while the whole list is printed again into
 * a buffer twice the size, as a single_open() show would on overflow.
 */
static void *conns_seq_start(struct seq_file *m, loff_t *pos)
	__acquires(&krpc_conns_lock)
{
	spin_lock_bh(&krpc_conns_lock);
	return seq_list_start(&krpc_conns, *pos);
}

static void *conns_seq_next(struct seq_file *m, void *v, loff_t *pos)
{
	return seq_list_next(v, &krpc_conns, pos);
}

static void conns_seq_stop(struct seq_file *m, void *v)
	__releases(&krpc_conns_lock)
{
	spin_unlock_bh(&krpc_conns_lock);
}

static int conns_seq_show(struct seq_file *m, void *v)
{
	struct krpc_conn *conn = list_entry(v, struct krpc_conn, all_node);
	struct krpc_conn_info info;
	unsigned int i;

	spin_lock(&conn->lock);
	krpc_conn_fill_info_locked(conn, &info);
	spin_unlock(&conn->lock);
	seq_printf(m, "conn=%u role=%s xprt=%s state=%s reason=%d peer=%pISpc depth=%u inflight=%u queued=%u credits=%u inline_max=%u max_msg=%u cq=%s ka_peer_ms=%u",
		   conn->id, conn->server ? "server" : "client",
		   conn->ops->name, state_names[info.state],
		   info.reason, &conn->peer, info.depth,
		   info.inflight, info.queued, info.send_credits,
		   info.inline_max, info.max_msg,
		   cq_mode_names[info.cq_mode], conn->ka_peer_ms);
	for (i = 0; i < KRPC_STAT_NR; i++)
		seq_printf(m, " %s=%llu", krpc_stat_names[i],
			   ((u64 *)&info.stats)[i]);
	seq_putc(m, '\n');
	return 0;
}

const struct seq_operations krpc_conns_sops = {
	.start	= conns_seq_start,
	.next	= conns_seq_next,
	.stop	= conns_seq_stop,
	.show	= conns_seq_show,
};
