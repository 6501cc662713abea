// SPDX-License-Identifier: GPL-2.0
/*
 * Client handles: one connection to one server.
 */
#include <linux/slab.h>
#include <linux/nsproxy.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <net/net_namespace.h>

#include "krpc_priv.h"
#include "transport.h"
#include "pool.h"

struct krpc_client {
	struct krpc_conn *conn;
	const struct krpc_client_ops *ops;
	void *priv;
};

struct krpc_conn *krpc_client_conn(struct krpc_client *clnt)
{
	return clnt->conn;
}

const struct krpc_client_ops *krpc_client_ops_of(struct krpc_client *clnt)
{
	return clnt->ops;
}

void *krpc_client_priv_of(struct krpc_client *clnt)
{
	return clnt->priv;
}

static int addr_check(const struct sockaddr_storage *ss)
{
	switch (ss->ss_family) {
	case AF_INET:
	case AF_INET6:
		return 0;
	default:
		return -EAFNOSUPPORT;
	}
}

int krpc_xprt_resolve(unsigned int transport, unsigned int *out)
{
	if (transport == KRPC_XPRT_DEFAULT)
		transport = krpc_param(transport);
	if (transport < KRPC_XPRT_RDMA || transport > KRPC_XPRT_AUTO)
		return -EINVAL;
	*out = transport;
	return 0;
}

/*
 * enum krpc_cq_mode to "polled or not", KRPC_CQ_DEFAULT as poll_usecs is
 * now: -EINVAL for a mode this module does not know.
 */
int krpc_cq_mode_resolve(unsigned int mode, bool *poll)
{
	switch (mode) {
	case KRPC_CQ_DEFAULT:
		*poll = krpc_param(poll_usecs) != 0;
		return 0;
	case KRPC_CQ_IRQ:
		*poll = false;
		return 0;
	case KRPC_CQ_POLL:
		*poll = true;
		return 0;
	default:
		return -EINVAL;
	}
}

/*
 * Errors of an RDMA connect after which KRPC_XPRT_AUTO tries TCP: no RDMA
 * device or route for the address, nobody answering or listening over
 * RDMA.  A krpc server that refused the handshake (version, parameters) or
 * a local failure is final.
 */
static bool may_fall_back(int err)
{
	switch (err) {
	case -ENODEV:
	case -EADDRNOTAVAIL:
	case -ENETUNREACH:
	case -EHOSTUNREACH:
	case -ECONNREFUSED:
	case -ECONNRESET:
	case -ETIMEDOUT:
	case -EXDEV:
		return true;
	default:
		return false;
	}
}

/*
 * Wait up to @tmo for @conn to come up.  Return > 0 (up or failed), 0 (time
 * is up) or -EINTR.  A fatal signal ends the wait (a process killed in a
 * CONNECT of up to KRPC_TIMEOUT_MAX_MS).  io_uring's CONNECT runs in an
 * io-wq worker, which io_uring tells to stop (IORING_OP_ASYNC_CANCEL, the
 * ring's exit) with TIF_NOTIFY_SIGNAL: that ends it too.  Workers block
 * every signal but SIGKILL and SIGSTOP; a stop is waited out in killable
 * slices, not taken for a cancel.
 */
static long conn_wait_up(struct krpc_conn *conn, unsigned long tmo)
{
	unsigned long end = jiffies + tmo;
	long left;

	if (!(current->flags & PF_IO_WORKER))
		return wait_for_completion_killable_timeout(&conn->up, tmo);
	for (;;) {
		left = (long)(end - jiffies);
		if (left <= 0)
			return try_wait_for_completion(&conn->up) ? 1 : 0;
		if (test_thread_flag(TIF_NOTIFY_SIGNAL) ||
		    fatal_signal_pending(current))
			return try_wait_for_completion(&conn->up) ? 1 : -EINTR;
		if (signal_pending(current))
			left = wait_for_completion_killable_timeout(&conn->up,
							min(left, HZ / 10L));
		else
			left = wait_for_completion_interruptible_timeout(&conn->up,
									 left);
		if (left > 0)
			return left;
	}
}

/* One connection over one transport, up or failed. */
static struct krpc_conn *conn_open(struct krpc_client *clnt,
				   const struct krpc_client_opts *opts,
				   const struct krpc_transport_ops *ops,
				   struct net *net, unsigned int depth,
				   bool cq_poll)
{
	unsigned int tmo = opts->connect_timeout_ms ?
		opts->connect_timeout_ms : krpc_param(connect_timeout_ms);
	struct krpc_conn *conn;
	long left;
	int ret;

	conn = krpc_conn_alloc(ops, net, false, depth, &opts->addr);
	if (!conn)
		return ERR_PTR(-ENOMEM);
	if (opts->pool) {
		/* The transport checks it against the device (krpc_rdma_setup). */
		krpc_pool_get(opts->pool);
		conn->pool = opts->pool;
	}
	conn->timeout_ms = opts->timeout_ms ? opts->timeout_ms :
		krpc_param(call_timeout_ms);
	conn->cq_poll = cq_poll;

	ret = conn->ops->connect(conn, opts);
	if (ret)
		goto out_put_conn;
	/*
	 * The transport bounds each step; this bounds the sum.  A fatal
	 * signal or io_uring's cancel ends the wait (conn_wait_up()); the
	 * shutdown then ends the attempt at once.
	 */
	left = conn_wait_up(conn, msecs_to_jiffies(2 * tmo + 1000));
	if (left <= 0)
		conn->ops->shutdown(conn, left ? -EINTR : -ETIMEDOUT);
	wait_for_completion(&conn->up);

	krpc_conn_lock(conn);
	if (conn->state != KRPC_CONN_UP) {
		ret = conn->connect_err ? conn->connect_err : -ECONNREFUSED;
		krpc_conn_unlock(conn);
		conn->ops->shutdown(conn, ret);
		wait_for_completion(&conn->dead);
		goto out_put_conn;
	}
	/* Under the lock that saw it up: a death from now on is told. */
	clnt->conn = conn;
	conn->clnt = clnt;
	krpc_conn_unlock(conn);
	return conn;

out_put_conn:
	krpc_conn_put(conn);
	return ERR_PTR(ret);
}

/**
 * krpc_client_create() - connect to a server
 * @opts:	where and how
 *
 * Resolves the address in the namespace, connects and completes the krpc
 * handshake over the transport @opts->transport chooses (enum krpc_xprt;
 * KRPC_XPRT_AUTO tries RDMA first and TCP when the address has no RDMA
 * device or the RDMA connect is refused, unreachable or times out; the
 * transport used is in krpc_conn_info.transport).  A server that rejects
 * the handshake makes this fail with the reason mapped to an errno
 * (-EPROTONOSUPPORT: protocol version; -EINVAL: parameters;
 * -ECONNREFUSED: other reasons, also logged).
 *
 * Context: process context, sleeps up to the connect timeout (twice with
 * KRPC_XPRT_AUTO); a fatal signal ends the wait (-EINTR).
 * Return: the client, or an ERR_PTR (-EAFNOSUPPORT, -EINVAL, -ENOMEM,
 * -ETIMEDOUT, -EHOSTUNREACH, -ECONNREFUSED, -EPROTONOSUPPORT, -EINTR, ...).
 */
struct krpc_client *krpc_client_create(const struct krpc_client_opts *opts)
{
	unsigned int depth = opts->depth ? opts->depth : krpc_param(depth);
	struct net *net = opts->net ? opts->net : current->nsproxy->net_ns;
	struct krpc_client *clnt;
	struct krpc_conn *conn;
	unsigned int transport;
	bool cq_poll;
	int ret;

	might_sleep();
	ret = addr_check(&opts->addr);
	if (ret)
		return ERR_PTR(ret);
	if (depth > krpc_param_depth.max)
		return ERR_PTR(-EINVAL);
	ret = krpc_xprt_resolve(opts->transport, &transport);
	if (ret)
		return ERR_PTR(ret);
	ret = krpc_cq_mode_resolve(opts->cq_mode, &cq_poll);
	if (ret) {
		pr_warn_ratelimited("client: unknown cq_mode %u\n",
				    opts->cq_mode);
		return ERR_PTR(ret);
	}

	clnt = kzalloc(sizeof(*clnt), GFP_KERNEL);
	if (!clnt)
		return ERR_PTR(-ENOMEM);
	clnt->ops = opts->ops;
	clnt->priv = opts->priv;
	conn = conn_open(clnt, opts, transport == KRPC_XPRT_TCP ?
			 &krpc_tcp_ops : &krpc_rdma_ops, net, depth, cq_poll);
	if (IS_ERR(conn) && transport == KRPC_XPRT_AUTO &&
	    may_fall_back(PTR_ERR(conn))) {
		pr_info_ratelimited("%pISpc: RDMA connect failed (%ld), trying TCP\n",
				    &opts->addr, PTR_ERR(conn));
		atomic64_inc(&krpc_stats.tcp_fallbacks);
		conn = conn_open(clnt, opts, &krpc_tcp_ops, net, depth,
				 cq_poll);
	}
	if (IS_ERR(conn)) {
		kfree(clnt);
		return ERR_CAST(conn);
	}
	return clnt;
}
KRPC_EXPORT(krpc_client_create);

/**
 * krpc_client_destroy() - disconnect and free a client
 * @clnt:	the client
 *
 * Every call still queued or in flight completes with -ESHUTDOWN before
 * this returns (in the canonical order: the queue pair is drained first).
 * The disconnected callback is not called for this teardown.
 *
 * Context: process context, sleeps.
 */
void krpc_client_destroy(struct krpc_client *clnt)
{
	struct krpc_conn *conn = clnt->conn;

	might_sleep();
	krpc_conn_lock(conn);
	conn->clnt = NULL;
	krpc_conn_unlock(conn);
	conn->ops->shutdown(conn, -ESHUTDOWN);
	wait_for_completion(&conn->dead);
	krpc_conn_put(conn);
	kfree(clnt);
}
KRPC_EXPORT(krpc_client_destroy);

/**
 * krpc_client_pool() - the registered pool of a client's connection
 * @clnt:	the client
 *
 * Request payloads and reply destinations must come from this pool.
 *
 * Context: any context.
 * Return: the pool; valid while the client exists.
 */
struct krpc_pool *krpc_client_pool(struct krpc_client *clnt)
{
	return clnt->conn->pool;
}
KRPC_EXPORT(krpc_client_pool);

/**
 * krpc_client_query() - state and counters of a client's connection
 * @clnt:	the client
 * @info:	filled in
 *
 * Context: process or softirq context, interrupts enabled (krpc's locks
 * are bottom-half locks: not from a hard interrupt handler, nor under
 * spin_lock_irqsave()).
 * Return: 0.
 */
int krpc_client_query(struct krpc_client *clnt, struct krpc_conn_info *info)
{
	struct krpc_conn *conn = clnt->conn;

	krpc_conn_lock(conn);
	krpc_conn_fill_info_locked(conn, info);
	krpc_conn_unlock(conn);
	return 0;
}
KRPC_EXPORT(krpc_client_query);
