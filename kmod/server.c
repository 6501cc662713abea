// SPDX-License-Identifier: GPL-2.0
/*
 * Servers: listeners, method tables and requests.  Transport independent.
 *
 * A request is owned by the transport while its payload arrives (a
 * rendezvous request is read by RDMA READ first), by the handler from
 * dispatch until krpc_req_reply(), and by the transport again until the
 * reply is sent.  conn->reqs[] only indexes requests by the client's slot
 * so that a second request on a busy slot is caught as a protocol error and
 * a cancel finds its request.
 */
#include <linux/delay.h>
#include <linux/slab.h>
#include <linux/nsproxy.h>
#include <linux/sched.h>
#include <net/net_namespace.h>

#include "krpc_priv.h"
#include "transport.h"
#include "wire.h"
#include "pool.h"
#include "inject.h"

struct krpc_method {
	krpc_handler_fn fn;
	void *priv;
	unsigned int flags;
};

static struct kmem_cache *req_cache;

int krpc_server_init(void)
{
	req_cache = KMEM_CACHE(krpc_req, 0);
	return req_cache ? 0 : -ENOMEM;
}

void krpc_server_exit(void)
{
	kmem_cache_destroy(req_cache);
}

static void server_release(struct kref *ref)
{
	struct krpc_server *srv = container_of(ref, struct krpc_server, ref);
	struct krpc_method *m;
	unsigned long id;

	xa_for_each(&srv->methods, id, m)
		kfree(m);
	xa_destroy(&srv->methods);
	put_net(srv->net);
	if (srv->pool)
		krpc_pool_put(srv->pool);
	kfree(srv);
}

void krpc_server_put(struct krpc_server *srv)
{
	kref_put(&srv->ref, server_release);
}

static void srv_req_get(struct krpc_server *srv)
{
	atomic_inc(&srv->nr_reqs);
}

/* The caller holds a connection reference, which keeps @srv alive. */
static void srv_req_put(struct krpc_server *srv)
{
	if (atomic_dec_and_test(&srv->nr_reqs))
		wake_up(&srv->wq);
}

/*
 * KRPC_XPRT_AUTO listens on both transports on the same port number; an
 * RDMA listener that cannot be made (no RDMA device for the address) is
 * then not an error as long as the TCP one works.  On failure the caller
 * undoes what was made with krpc_server_destroy().
 */
static int server_listen(struct krpc_server *srv, unsigned int transport)
{
	int ret;

	if (transport != KRPC_XPRT_TCP) {
		ret = krpc_rdma_ops.listen(srv);
		if (ret && transport == KRPC_XPRT_RDMA)
			return ret;
		if (ret)
			pr_info("server on %pISpc: no RDMA listener (%d), TCP only\n",
				&srv->addr, ret);
	}
	if (transport != KRPC_XPRT_RDMA) {
		ret = krpc_tcp_ops.listen(srv);
		if (ret)
			return ret;
	}
	return 0;
}

/**
 * krpc_server_create() - listen for clients
 * @opts:	where, and over which transport (&krpc_server_opts.transport)
 *
 * The server keeps at most &krpc_server_opts.max_conns connections at a
 * time (0: module parameter max_conns), over all its transports; one more
 * is refused (the client's connect fails with -ENOBUFS).
 *
 * Context: process context, may sleep.
 * Return: the server, or an ERR_PTR (-EAFNOSUPPORT, -EINVAL, -ENOMEM,
 * -EADDRINUSE, -EADDRNOTAVAIL, ...).
 */
struct krpc_server *krpc_server_create(const struct krpc_server_opts *opts)
{
	struct net *net = opts->net ? opts->net : current->nsproxy->net_ns;
	unsigned int depth = opts->depth ? opts->depth : krpc_param(depth);
	unsigned int transport;
	struct krpc_server *srv;
	bool cq_poll;
	int ret;

	might_sleep();
	if (opts->addr.ss_family != AF_INET && opts->addr.ss_family != AF_INET6)
		return ERR_PTR(-EAFNOSUPPORT);
	if (depth > krpc_param_depth.max)
		return ERR_PTR(-EINVAL);
	if (opts->max_conns > krpc_param_max_conns.max) {
		pr_warn_ratelimited("server: max_conns %u above %u\n",
				    opts->max_conns, krpc_param_max_conns.max);
		return ERR_PTR(-EINVAL);
	}
	ret = krpc_xprt_resolve(opts->transport, &transport);
	if (ret)
		return ERR_PTR(ret);
	if (krpc_cq_mode_resolve(opts->cq_mode, &cq_poll)) {
		pr_warn_ratelimited("server: unknown cq_mode %u\n",
				    opts->cq_mode);
		return ERR_PTR(-EINVAL);
	}

	srv = kzalloc(sizeof(*srv), GFP_KERNEL);
	if (!srv)
		return ERR_PTR(-ENOMEM);
	kref_init(&srv->ref);
	srv->net = get_net(net);
	srv->addr = opts->addr;
	srv->depth = depth;
	srv->cq_mode = opts->cq_mode;
	srv->max_conns = opts->max_conns;
	if (opts->pool) {
		krpc_pool_get(opts->pool);
		srv->pool = opts->pool;
	}
	xa_init(&srv->methods);
	mutex_init(&srv->lock);
	INIT_LIST_HEAD(&srv->conns);
	atomic_set(&srv->nr_reqs, 0);
	init_waitqueue_head(&srv->wq);

	ret = server_listen(srv, transport);
	if (ret) {
		/*
		 * The RDMA listener of a KRPC_XPRT_AUTO server whose TCP one
		 * failed may have accepted connections meanwhile.
		 */
		krpc_server_destroy(srv);
		return ERR_PTR(ret);
	}
	return srv;
}
KRPC_EXPORT(krpc_server_create);

/**
 * krpc_server_destroy() - stop listening and close every connection
 * @srv:	the server
 *
 * Accepted connections are torn down (their clients see -ECONNRESET).
 * Waits until every request is freed and every handler has returned: a
 * handler that replies later must eventually call krpc_req_reply() (on a
 * dead connection that just frees the request).
 *
 * Context: process context, sleeps.
 */
void krpc_server_destroy(struct krpc_server *srv)
{
	struct krpc_conn *conn;

	might_sleep();
	mutex_lock(&srv->lock);
	srv->stopping = true;
	mutex_unlock(&srv->lock);

	if (srv->xprt)
		krpc_rdma_ops.unlisten(srv);
	if (srv->tcp_xprt)
		krpc_tcp_ops.unlisten(srv);

	mutex_lock(&srv->lock);
	list_for_each_entry(conn, &srv->conns, srv_node)
		conn->ops->shutdown(conn, -ESHUTDOWN);
	mutex_unlock(&srv->lock);

	wait_event(srv->wq, list_empty_careful(&srv->conns) &&
		   !atomic_read(&srv->nr_reqs));
	krpc_server_put(srv);
}
KRPC_EXPORT(krpc_server_destroy);

/**
 * krpc_server_register() - add a method
 * @srv:	the server
 * @method:	method id, below KRPC_METHOD_RESERVED
 * @fn:		handler
 * @priv:	handler argument
 * @flags:	KRPC_METHOD_*
 *
 * Methods stay registered until krpc_server_destroy().  Requests for ids
 * without a method fail at the client with -EBADRQC.
 *
 * Context: process context, may sleep.
 * Return: 0, -EINVAL, -EEXIST or -ENOMEM.
 */
int krpc_server_register(struct krpc_server *srv, u32 method,
			 krpc_handler_fn fn, void *priv, unsigned int flags)
{
	struct krpc_method *m;
	int ret;

	if (!fn || method >= KRPC_METHOD_RESERVED ||
	    (flags & ~KRPC_METHOD_VALID_FLAGS))
		return -EINVAL;
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	m->fn = fn;
	m->priv = priv;
	m->flags = flags;
	ret = xa_insert(&srv->methods, method, m, GFP_KERNEL);
	if (ret) {
		kfree(m);
		return ret == -EBUSY ? -EEXIST : ret;
	}
	return 0;
}
KRPC_EXPORT(krpc_server_register);

/* The server's connection limit now.  Context: any. */
u32 krpc_server_max_conns(const struct krpc_server *srv)
{
	return srv->max_conns ? srv->max_conns : krpc_param(max_conns);
}

/*
 * List an accepted connection (before its handshake is answered).
 * Return: 0, -ESHUTDOWN once the server stops, or -EUSERS when it has
 * krpc_server_max_conns() already: the transport refuses the connection
 * (reason resources, value that limit), so that a peer opening
 * connections without end cannot take the pool and memory every
 * connection costs.
 */
int krpc_server_add_conn(struct krpc_server *srv, struct krpc_conn *conn)
{
	int ret = 0;

	mutex_lock(&srv->lock);
	if (srv->stopping) {
		ret = -ESHUTDOWN;
	} else if (srv->nr_conns >= krpc_server_max_conns(srv)) {
		ret = -EUSERS;
	} else {
		srv->nr_conns++;
		kref_get(&srv->ref);
		conn->srv = srv;
		if (srv->pool && !conn->pool) {
			krpc_pool_get(srv->pool);
			conn->pool = srv->pool;
		}
		list_add_tail(&conn->srv_node, &srv->conns);
	}
	mutex_unlock(&srv->lock);
	return ret;
}

void krpc_server_remove_conn(struct krpc_server *srv, struct krpc_conn *conn)
{
	mutex_lock(&srv->lock);
	if (!list_empty(&conn->srv_node)) {
		list_del_init(&conn->srv_node);
		srv->nr_conns--;
	}
	mutex_unlock(&srv->lock);
	wake_up(&srv->wq);
}

/*
 * A request arrived.  Its slot (the low bits of the call id) must be below
 * the negotiated depth and free: the client may not have more calls out
 * than the depth, nor reuse a slot before its reply.
 */
struct krpc_req *krpc_req_alloc_locked(struct krpc_conn *conn, bool oneway,
				       u64 call_id, u32 method)
{
	u32 slot = call_id & KRPC_CALL_SLOT_MASK;
	struct krpc_method *m;
	struct krpc_req *req;

	lockdep_assert_held(&conn->lock);
	if (!oneway && (slot >= conn->depth || conn->reqs[slot]))
		return ERR_PTR(-EPROTO);
	req = kmem_cache_zalloc(req_cache, GFP_ATOMIC);
	if (!req)
		return ERR_PTR(-ENOMEM);
	atomic64_inc(&krpc_stats.reqs_live);
	/* tcp_rx.c reads it without the lock (only it increments it) */
	WRITE_ONCE(conn->nr_reqs, conn->nr_reqs + 1);
	krpc_conn_get(conn);
	req->conn = conn;
	INIT_LIST_HEAD(&req->node);
	req->call_id = call_id;
	req->method = method;
	req->reply_max = conn->inline_max;
	if (oneway) {
		req->flags |= REQ_ONEWAY;
	} else {
		req->slot = slot;
		req->flags |= REQ_SLOT;
		conn->reqs[slot] = req;
		conn->nr_owed++;
	}
	m = xa_load(&conn->srv->methods, method);
	if (m) {
		req->fn = m->fn;
		req->priv = m->priv;
		req->nosleep = m->flags & KRPC_METHOD_NOSLEEP;
	}
	srv_req_get(conn->srv);
	krpc_conn_stat_inc(conn, KRPC_STAT_CALLS);
	return req;
}
ALLOW_ERROR_INJECTION(krpc_req_alloc_locked, ERRNO);

static void req_work(struct work_struct *work)
{
	krpc_req_run(container_of(work, struct krpc_req, work));
}

/* The payload is in place: hand the request to its handler. */
void krpc_req_start_locked(struct krpc_req *req)
{
	struct krpc_conn *conn = req->conn;

	lockdep_assert_held(&conn->lock);
	req->flags |= REQ_STARTED;
	/* The client gave up while the payload was read: no handler. */
	if (req->flags & REQ_CANCELLED) {
		req->flags |= REQ_REPLIED;
		req->status = -ECANCELED;
		conn->ops->send_reply(conn, req);
		return;
	}
	if (!req->fn) {
		req->flags |= REQ_NOMETHOD | REQ_REPLIED;
		req->status = -EBADRQC;
		if (req->flags & REQ_ONEWAY)
			krpc_req_free_locked(req);
		else
			conn->ops->send_reply(conn, req);
		return;
	}
	if (req->nosleep) {
		list_add_tail(&req->node, &conn->run_list);
	} else {
		INIT_WORK(&req->work, req_work);
		queue_work(krpc_handler_wq, &req->work);
	}
}

/* Called without locks, from the handler workqueue or krpc_conn_unlock(). */
void krpc_req_run(struct krpc_req *req)
{
	struct krpc_conn *conn = req->conn;
	struct krpc_server *srv = conn->srv;
	int ret;

	/*
	 * The request may be freed inside the handler (inline reply); the
	 * connection reference keeps @srv alive and the count keeps
	 * krpc_server_destroy() waiting until the handler returned.
	 */
	krpc_conn_get(conn);
	srv_req_get(srv);
	/* Test knob (debugfs): a one-way handler that starts late. */
	if (unlikely(READ_ONCE(krpc_fault_oneway_delay_ms)) && !req->nosleep &&
	    (req->flags & REQ_ONEWAY))
		msleep(min(READ_ONCE(krpc_fault_oneway_delay_ms), 10000U));
	/*
	 * A call's handler is skipped once the connection is gone: its caller
	 * has its error and may call again.  A one-way message received whole
	 * is handled all the same, as if the handler had started before the
	 * peer left: nothing would tell its sender that it was dropped, and
	 * sleeping handlers start in any order (krpc_handler_wq), so a reply
	 * to a later call can reach the peer, which then closes, first.
	 */
	if (READ_ONCE(conn->state) != KRPC_CONN_UP && !(req->flags & REQ_ONEWAY))
		ret = -ENOTCONN;
	else
		ret = req->fn(req, req->priv);
	if (WARN_ONCE(ret > 0, "krpc: handler of method %u returned %d\n",
		      req->method, ret))
		ret = -EIO;
	if (ret < 0)
		krpc_req_reply(req, ret, NULL);
	srv_req_put(srv);
	krpc_conn_put(conn);
}

/*
 * A CANCEL for @call_id: mark its request, if it still holds its slot (a
 * reply posted freed it), and return it for the transport to answer.
 */
struct krpc_req *krpc_req_cancel_locked(struct krpc_conn *conn, u64 call_id)
{
	u32 slot = call_id & KRPC_CALL_SLOT_MASK;
	struct krpc_req *req;

	lockdep_assert_held(&conn->lock);
	if (slot >= conn->depth)
		return NULL;
	req = conn->reqs[slot];
	if (!req || req->call_id != call_id)
		return NULL;
	WRITE_ONCE(req->flags, req->flags | REQ_CANCELLED);
	return req;
}

void krpc_req_slot_release_locked(struct krpc_req *req)
{
	struct krpc_conn *conn = req->conn;

	lockdep_assert_held(&conn->lock);
	if (!(req->flags & REQ_SLOT))
		return;
	conn->reqs[req->slot] = NULL;
	conn->nr_owed--;
	req->flags &= ~REQ_SLOT;
}

/*
 * Freed at the next krpc_conn_unlock(), outside the lock; it stops counting
 * against the connection's bound now.
 */
void krpc_req_free_locked(struct krpc_req *req)
{
	struct krpc_conn *conn = req->conn;

	lockdep_assert_held(&conn->lock);
	krpc_req_slot_release_locked(req);
	list_add_tail(&req->node, &conn->free_list);
	WRITE_ONCE(conn->nr_reqs, conn->nr_reqs - 1);
	if (conn->ops->req_freed)
		conn->ops->req_freed(conn);
}

void krpc_req_destroy(struct krpc_req *req)
{
	struct krpc_conn *conn = req->conn;

	krpc_buf_put(req->payload);
	krpc_buf_put(req->reply);
	srv_req_put(conn->srv);
	kmem_cache_free(req_cache, req);
	atomic64_dec(&krpc_stats.reqs_live);
	krpc_conn_put(conn);
}

/* Teardown: handlers still holding requests will find the connection dead. */
void krpc_conn_orphan_reqs_locked(struct krpc_conn *conn)
{
	unsigned int i;

	lockdep_assert_held(&conn->lock);
	for (i = 0; i < conn->max_depth; i++) {
		struct krpc_req *req = conn->reqs[i];

		if (req)
			krpc_req_slot_release_locked(req);
	}
}

/**
 * krpc_req_reply() - answer a request
 * @req:	the request; freed by this call (do not touch it afterwards)
 * @status:	0, or a negative errno (-4095..-1) that the client receives as
 *		its call's status; -EBADRQC is reserved and sent as -EIO
 * @reply:	reply payload from krpc_req_pool(), or NULL; ownership passes
 *		to krpc (dropped if @status is an error).  It may be the
 *		request's payload (krpc_req_payload()), taken or not.
 *
 * Must be called exactly once for each request whose handler returned 0,
 * also for one-way requests (then nothing is sent).  A reply larger than
 * krpc_req_reply_max() fails the call at the client with -EMSGSIZE.
 * A second call for the same request is a bug that cannot be caught
 * reliably: the request may be freed by the time it returns.  While its
 * reply is still queued, the second call warns and returns -EALREADY.
 *
 * Context: process or softirq context, interrupts enabled (krpc's locks
 * are bottom-half locks: not from a hard interrupt handler, nor under
 * spin_lock_irqsave()); does not sleep.
 * Return: 0, -EINVAL (foreign buffer; the client receives -EIO) or
 * -ENOTCONN (connection gone; the reply was dropped).
 */
int krpc_req_reply(struct krpc_req *req, int status, struct krpc_buf *reply)
{
	struct krpc_conn *conn = req->conn;
	int ret = 0;

	if (status > 0 || status < -KRPC_WS_ERRNO_MAX || status == -EBADRQC)
		status = -EIO;
	/* The request's own payload sent back: the reply owns it now. */
	if (reply && reply == req->payload)
		req->payload = NULL;
	if (reply && (reply->pool != conn->pool || !reply->busy)) {
		WARN_ONCE(1, "krpc: reply buffer is not from the request's pool\n");
		reply = NULL;
		status = -EIO;
		ret = -EINVAL;
	}
	if (status && reply) {
		krpc_buf_put(reply);
		reply = NULL;
	}

	krpc_conn_lock(conn);
	if (WARN_ON_ONCE(req->flags & REQ_REPLIED)) {
		krpc_conn_unlock(conn);
		krpc_buf_put(reply);
		return -EALREADY;
	}
	req->flags |= REQ_REPLIED;
	req->status = status;
	req->reply = reply;
	/* One-way, or the cancel was answered already: nothing to send. */
	if (req->flags & (REQ_ONEWAY | REQ_ANSWERED)) {
		krpc_req_free_locked(req);
	} else if (conn->state != KRPC_CONN_UP) {
		krpc_req_free_locked(req);
		ret = -ENOTCONN;
	} else {
		conn->ops->send_reply(conn, req);
	}
	krpc_conn_unlock(conn);
	return ret;
}
KRPC_EXPORT(krpc_req_reply);

/**
 * krpc_req_method() - method id of a request
 * @req:	the request
 *
 * Context: any context.
 * Return: the method id.
 */
u32 krpc_req_method(const struct krpc_req *req)
{
	return req->method;
}
KRPC_EXPORT(krpc_req_method);

/**
 * krpc_req_is_oneway() - whether the client expects no reply
 * @req:	the request
 *
 * Context: any context.
 * Return: true for a one-way request.
 */
bool krpc_req_is_oneway(const struct krpc_req *req)
{
	return req->flags & REQ_ONEWAY;
}
KRPC_EXPORT(krpc_req_is_oneway);

/**
 * krpc_req_cancelled() - whether the client abandoned the call
 * @req:	the request
 *
 * A handler that works long may poll this and stop early; it must still
 * call krpc_req_reply().
 *
 * Context: any context.
 * Return: true once the client's cancel arrived.
 */
bool krpc_req_cancelled(const struct krpc_req *req)
{
	return READ_ONCE(req->flags) & REQ_CANCELLED;
}
KRPC_EXPORT(krpc_req_cancelled);

/**
 * krpc_req_reply_max() - largest reply the client accepts
 * @req:	the request
 *
 * Context: any context.
 * Return: bytes: the inline size, or the client's reply destination if it
 * offered a larger one.
 */
size_t krpc_req_reply_max(const struct krpc_req *req)
{
	return req->reply_max;
}
KRPC_EXPORT(krpc_req_reply_max);

/**
 * krpc_req_payload() - request payload
 * @req:	the request
 *
 * The buffer stays owned by the request (freed with it) unless taken with
 * krpc_req_take_payload().
 *
 * Context: the handler's, until krpc_req_reply().
 * Return: the payload buffer, or NULL for an empty request.
 */
struct krpc_buf *krpc_req_payload(const struct krpc_req *req)
{
	return req->payload;
}
KRPC_EXPORT(krpc_req_payload);

/**
 * krpc_req_take_payload() - take ownership of the request payload
 * @req:	the request
 *
 * Lets a handler keep the data past the reply, or send the same buffer
 * back as the reply without copying.
 *
 * Context: the handler's, until krpc_req_reply().
 * Return: the payload buffer (now the caller's), or NULL.
 */
struct krpc_buf *krpc_req_take_payload(struct krpc_req *req)
{
	struct krpc_buf *buf = req->payload;

	req->payload = NULL;
	return buf;
}
KRPC_EXPORT(krpc_req_take_payload);

/**
 * krpc_req_pool() - pool for the reply of a request
 * @req:	the request
 *
 * Context: any context, until krpc_req_reply().
 * Return: the pool of the request's connection.
 */
struct krpc_pool *krpc_req_pool(const struct krpc_req *req)
{
	return req->conn->pool;
}
KRPC_EXPORT(krpc_req_pool);
