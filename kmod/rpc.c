// SPDX-License-Identifier: GPL-2.0
/*
 * Client calls: slots, the backlog of calls waiting for one, matching of
 * replies by call id, timeouts and cancellation.  Transport independent.
 *
 * A call completes (its done callback runs) exactly once, when two things
 * hold: it has a result (reply, error reply, timeout, cancel, connection
 * death) and the transport no longer references its buffers
 * (CALL_XPRT clear).  Its slot is freed separately, when the transport
 * knows the peer is done with the call id: a slot whose call timed out
 * stays busy until the late reply arrives or the connection dies, so a
 * late reply can never be taken for the answer to a newer call.
 */
#include <linux/delay.h>
#include <linux/slab.h>
#include <linux/sched/signal.h>

#include "krpc_priv.h"
#include "transport.h"
#include "wire.h"
#include "pool.h"
#include "inject.h"

static struct kmem_cache *call_cache;

int krpc_rpc_init(void)
{
	call_cache = KMEM_CACHE(krpc_call, 0);
	return call_cache ? 0 : -ENOMEM;
}

/*
 * A completion can drop a call's last reference after the owner's
 * krpc_client_destroy() returned: the completion is what the destroy
 * waits for, not the put after it.  Wait for that put, then for the
 * context it ran in to return (softirq, which synchronize_rcu() waits
 * for), before the cache and the module's text go away.
 */
void krpc_rpc_exit(void)
{
	unsigned int i;

	for (i = 0; atomic64_read(&krpc_stats.calls_live) && i < 1500; i++)
		msleep(20);
	if (atomic64_read(&krpc_stats.calls_live))
		pr_err("%lld calls still live at exit\n",
		       (long long)atomic64_read(&krpc_stats.calls_live));
	synchronize_rcu();
	kmem_cache_destroy(call_cache);
}

/*
 * The last call reference never drops under conn->lock while it would also
 * be the last connection reference: slot references are dropped under the
 * lock, but then the completion reference, the transport's or
 * the owner's connection reference is still held.
 */
static void call_release(struct kref *ref)
{
	struct krpc_call *call = container_of(ref, struct krpc_call, ref);

	krpc_conn_put(call->conn);
	kmem_cache_free(call_cache, call);
	atomic64_dec(&krpc_stats.calls_live);
}

/**
 * krpc_call_put() - drop the handle krpc_call_async() returned
 * @call:	the call
 *
 * Context: process or softirq context, interrupts enabled (krpc's locks
 * are bottom-half locks: not from a hard interrupt handler, nor under
 * spin_lock_irqsave()).
 */
void krpc_call_put(struct krpc_call *call)
{
	kref_put(&call->ref, call_release);
}
KRPC_EXPORT(krpc_call_put);

u32 krpc_call_len(const struct krpc_call *call)
{
	return call->req.type == KRPC_PL_BUF ? call->req.buf->len : 0;
}

/*
 * The room a call offers its reply (0: none, the reply is inline): its
 * destination buffer up to the connection's max_msg, which the peer
 * enforces on the offer.  Context: under conn->lock.
 */
u32 krpc_call_reply_room(const struct krpc_call *call)
{
	if (!call->reply_dst)
		return 0;
	return min(call->reply_dst->size, call->conn->max_msg);
}

static void call_maybe_done_locked(struct krpc_call *call)
{
	struct krpc_conn *conn = call->conn;

	lockdep_assert_held(&conn->lock);
	if ((call->state & (CALL_RESULT | CALL_XPRT | CALL_DONE | CALL_QUEUED))
	    != CALL_RESULT)
		return;
	call->state |= CALL_DONE;
	list_add_tail(&call->node, &conn->done_list);
}

/*
 * Set the outcome of a call; the first outcome wins.  Return false (and
 * drop @reply) if the call already had one.
 */
bool krpc_call_result_locked(struct krpc_call *call, int status,
			     unsigned int flags, struct krpc_buf *reply)
{
	struct krpc_conn *conn = call->conn;

	lockdep_assert_held(&conn->lock);
	if (call->state & CALL_RESULT) {
		krpc_buf_put(reply);
		return false;
	}
	call->state |= CALL_RESULT;
	call->res.status = status;
	call->res.flags = flags;
	call->res.reply = reply;
	if (status)
		krpc_conn_stat_inc(conn, KRPC_STAT_ERRORS);
	call_maybe_done_locked(call);
	return true;
}

void krpc_call_replied_locked(struct krpc_call *call)
{
	lockdep_assert_held(&call->conn->lock);
	if (!(call->state & CALL_REPLIED) && (call->state & CALL_SLOT))
		call->conn->nr_unreplied--;
	call->state |= CALL_REPLIED;
}

void krpc_call_xprt_done_locked(struct krpc_call *call)
{
	lockdep_assert_held(&call->conn->lock);
	call->state &= ~CALL_XPRT;
	call_maybe_done_locked(call);
}

static int call_start_locked(struct krpc_call *call)
{
	struct krpc_conn *conn = call->conn;
	u16 slot;
	int ret;

	lockdep_assert_held(&conn->lock);
	slot = conn->free_slots[--conn->nr_free];
	call->slot = slot;
	call->id = (++conn->seq << KRPC_CALL_SLOT_BITS) | slot;
	conn->calls[slot] = call;
	call->state |= CALL_SLOT | CALL_XPRT;
	conn->nr_unreplied++;
	kref_get(&call->ref);

	ret = conn->ops->send_call(conn, call);
	if (ret) {
		conn->calls[slot] = NULL;
		conn->free_slots[conn->nr_free++] = slot;
		if (!(call->state & CALL_REPLIED))
			conn->nr_unreplied--;
		call->state &= ~(CALL_SLOT | CALL_XPRT);
		krpc_call_put(call);
	}
	return ret;
}

/* Give free slots to queued calls, oldest first. */
static void conn_kick_locked(struct krpc_conn *conn)
{
	struct krpc_call *call;
	int ret;

	lockdep_assert_held(&conn->lock);
	while (conn->state == KRPC_CONN_UP && conn->nr_free &&
	       !list_empty(&conn->backlog)) {
		call = list_first_entry(&conn->backlog, struct krpc_call, node);
		list_del_init(&call->node);
		conn->nr_backlog--;
		call->state &= ~CALL_QUEUED;
		ret = call_start_locked(call);
		if (ret)
			krpc_call_result_locked(call, ret, 0, NULL);
	}
}

/* The transport is done with the slot: the peer will not use the id again. */
void krpc_call_slot_release_locked(struct krpc_call *call)
{
	struct krpc_conn *conn = call->conn;

	lockdep_assert_held(&conn->lock);
	if (WARN_ON_ONCE(!(call->state & CALL_SLOT)))
		return;
	conn->calls[call->slot] = NULL;
	conn->free_slots[conn->nr_free++] = call->slot;
	if (!(call->state & CALL_REPLIED))
		conn->nr_unreplied--;
	if (call->state & CALL_ZOMBIE)
		conn->zombies--;
	call->state &= ~(CALL_SLOT | CALL_ZOMBIE);
	call->xprt = NULL;
	conn_kick_locked(conn);
	krpc_call_put(call);
}

/*
 * Match a reply to its call.  The slot number is validated against the
 * negotiated depth before it indexes anything.
 */
struct krpc_call *krpc_call_find_locked(struct krpc_conn *conn, u64 id)
{
	u32 slot = id & KRPC_CALL_SLOT_MASK;
	struct krpc_call *call;

	lockdep_assert_held(&conn->lock);
	if (conn->server || slot >= conn->depth)
		return NULL;
	call = conn->calls[slot];
	if (!call || call->id != id || (call->state & CALL_REPLIED))
		return NULL;
	return call;
}

static void call_abort_locked(struct krpc_call *call, int err)
{
	struct krpc_conn *conn = call->conn;
	bool queued = call->state & CALL_QUEUED;

	lockdep_assert_held(&conn->lock);
	if (queued) {
		list_del_init(&call->node);
		conn->nr_backlog--;
		call->state &= ~CALL_QUEUED;
	}
	krpc_call_result_locked(call, err, 0, NULL);
	/*
	 * A connection being reset (conn->reset, acted on at the unlock)
	 * goes down with the call: no CANCEL, no zombie, and no second reset
	 * for the other calls one timer pass aborts with it.
	 */
	if (queued || !(call->state & CALL_XPRT) ||
	    conn->state != KRPC_CONN_UP || conn->reset)
		return;
	if (!(call->state & CALL_REPLIED)) {
		call->state |= CALL_ZOMBIE;
		conn->zombies++;
	}
	conn->ops->abort_call(conn, call);
	/*
	 * A peer that leaves half the slots unanswered is stuck or broken:
	 * reset the connection rather than let every later call time out.
	 */
	if (conn->zombies >= DIV_ROUND_UP(conn->depth, 2)) {
		pr_warn_ratelimited("conn %u: %u calls abandoned without reply, resetting\n",
				    conn->id, conn->zombies);
		conn->reset = -ETIMEDOUT;
	}
}

void krpc_conn_fail_backlog_locked(struct krpc_conn *conn, int reason)
{
	struct krpc_call *call;

	lockdep_assert_held(&conn->lock);
	while (!list_empty(&conn->backlog)) {
		call = list_first_entry(&conn->backlog, struct krpc_call, node);
		call_abort_locked(call, reason);
	}
}

/*
 * Call timeouts: one timer per connection, as blk-mq keeps one per queue
 * (blk_add_timer()).  A call records its deadline; the timer is armed for
 * the earliest one and moved only when a new call's deadline comes before
 * it, so a call answered in time costs no timer operation.  When it fires,
 * every call past its deadline is aborted and the timer is armed again for
 * the earliest deadline left.  A call without a result is in a slot or on
 * the backlog: both are scanned, under steady traffic about once per call
 * timeout.
 */
static void call_timer_arm_locked(struct krpc_conn *conn, unsigned long at)
{
	lockdep_assert_held(&conn->lock);
	if (!timer_pending(&conn->call_timer) ||
	    time_before(at, conn->call_timer.expires))
		mod_timer(&conn->call_timer, at);
}

/*
 * Queue @call for a slot.  Calls that share a timeout queue in deadline
 * order, and the timer's scan of the backlog then stops at the first call
 * not yet due: a backlog that a stuck peer lets grow costs each pass the
 * calls it aborts, not the whole queue.  A call due before the last one
 * marks the backlog unsorted until it empties.
 */
static void backlog_add_locked(struct krpc_conn *conn, struct krpc_call *call)
{
	struct krpc_call *last;

	lockdep_assert_held(&conn->lock);
	if (list_empty(&conn->backlog)) {
		conn->backlog_unsorted = false;
	} else {
		last = list_last_entry(&conn->backlog, struct krpc_call, node);
		if (time_before(call->deadline, last->deadline))
			conn->backlog_unsorted = true;
	}
	list_add_tail(&call->node, &conn->backlog);
	conn->nr_backlog++;
}

/*
 * Abort @call if it is past its deadline, or make *@next the earliest
 * deadline not yet due.  Returns whether it was aborted.
 */
static bool call_expire_locked(struct krpc_call *call, unsigned long now,
			       unsigned long *next, bool *pending)
{
	if (time_after_eq(now, call->deadline)) {
		krpc_conn_stat_inc(call->conn, KRPC_STAT_TIMEOUTS);
		call_abort_locked(call, -ETIMEDOUT);
		return true;
	}
	if (!*pending || time_before(call->deadline, *next)) {
		*next = call->deadline;
		*pending = true;
	}
	return false;
}

/*
 * Abort the calls of @conn past their deadline; *@next gets the earliest
 * deadline of those left.  Returns whether one was aborted: an abort can
 * release a slot and start a backlog call in it (conn_kick_locked()),
 * behind the scan, so the caller scans again.
 */
static bool calls_expire_locked(struct krpc_conn *conn, unsigned long now,
				unsigned long *next, bool *pending)
{
	struct krpc_call *call, *tmp;
	bool expired = false;
	unsigned int i;

	lockdep_assert_held(&conn->lock);
	for (i = 0; i < conn->depth; i++) {
		call = conn->calls[i];
		if (call && !(call->state & CALL_RESULT))
			expired |= call_expire_locked(call, now, next, pending);
	}
	list_for_each_entry_safe(call, tmp, &conn->backlog, node) {
		if (call_expire_locked(call, now, next, pending))
			expired = true;
		else if (!conn->backlog_unsorted)
			break;	/* in deadline order, the rest expire later */
	}
	return expired;
}

/* conn->call_timer (softirq).  Stopped before the connection can go. */
void krpc_conn_call_timeout(struct timer_list *t)
{
	struct krpc_conn *conn = timer_container_of(conn, t, call_timer);
	unsigned long next = 0;
	bool pending;

	krpc_conn_lock(conn);
	do {
		pending = false;
	} while (calls_expire_locked(conn, jiffies, &next, &pending));
	if (pending)
		call_timer_arm_locked(conn, next);
	krpc_conn_unlock(conn);
}

/* Runs from krpc_conn_unlock(), without the lock. */
void krpc_call_run_done(struct krpc_call *call)
{
	if (call->req.type == KRPC_PL_BUF)
		krpc_buf_put(call->req.buf);
	call->req.type = KRPC_PL_NONE;
	if (call->reply_dst && call->reply_dst != call->res.reply)
		krpc_buf_put(call->reply_dst);
	call->reply_dst = NULL;
	call->done(call, &call->res, call->priv);
	krpc_call_put(call);
}

/* A fault-injection point (inject.h). */
static KRPC_FAULT_POINT struct krpc_call *krpc_call_alloc(gfp_t gfp)
{
	return kmem_cache_zalloc(call_cache, gfp);
}
ALLOW_ERROR_INJECTION(krpc_call_alloc, NULL);

static int payload_check(struct krpc_conn *conn, const struct krpc_payload *pl)
{
	switch (pl->type) {
	case KRPC_PL_NONE:
		return 0;
	case KRPC_PL_BUF:
		/* Only memory mapped for this connection's device will do. */
		if (!pl->buf || pl->buf->pool != conn->pool || !pl->buf->busy)
			return -EINVAL;
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

static int call_submit(struct krpc_conn *conn, struct krpc_call_args *args,
		       struct krpc_call **callp, gfp_t gfp)
{
	struct krpc_buf *reply_dst = NULL;
	bool own_reply_dst = false;
	struct krpc_call *call;
	unsigned int timeout;
	u32 len;
	int ret;

	if (!args->done || (args->flags & ~KRPC_CALL_VALID_FLAGS) ||
	    args->method >= KRPC_METHOD_RESERVED)
		return -EINVAL;
	ret = payload_check(conn, &args->req);
	if (!ret)
		ret = payload_check(conn, &args->reply);
	if (ret)
		return ret;
	/* Both pass to krpc, and each comes back on its own. */
	if (args->req.type == KRPC_PL_BUF && args->reply.type == KRPC_PL_BUF &&
	    args->req.buf == args->reply.buf)
		return -EINVAL;
	len = args->req.type == KRPC_PL_BUF ? args->req.buf->len : 0;
	if (len > conn->max_msg)
		return -EMSGSIZE;
	if (args->flags & KRPC_CALL_ONEWAY) {
		/* No reply carries the invalidation of a rendezvous key. */
		if (len > conn->inline_max)
			return -EMSGSIZE;
		if (args->reply.type != KRPC_PL_NONE)
			return -EINVAL;
	} else if (args->reply.type == KRPC_PL_BUF) {
		reply_dst = args->reply.buf;
	} else if (args->reply_max > conn->inline_max) {
		if (args->reply_max > conn->max_msg)
			return -EMSGSIZE;
		reply_dst = krpc_buf_get(conn->pool, args->reply_max, gfp);
		if (IS_ERR(reply_dst))
			return PTR_ERR(reply_dst);
		own_reply_dst = true;
	}

	call = krpc_call_alloc(gfp);
	if (!call) {
		ret = -ENOMEM;
		goto out_put_reply;
	}
	atomic64_inc(&krpc_stats.calls_live);
	kref_init(&call->ref);
	krpc_conn_get(conn);
	call->conn = conn;
	INIT_LIST_HEAD(&call->node);
	call->method = args->method;
	call->flags = args->flags;
	call->req = args->req;
	call->reply_dst = reply_dst;
	call->done = args->done;
	call->priv = args->priv;
	timeout = args->timeout_ms ? args->timeout_ms : conn->timeout_ms;
	call->deadline = jiffies + msecs_to_jiffies(timeout);

	krpc_conn_lock(conn);
	if (conn->state != KRPC_CONN_UP) {
		ret = conn->reason ? conn->reason : -ENOTCONN;
		goto out_unlock;
	}
	if (conn->nr_free && list_empty(&conn->backlog)) {
		ret = call_start_locked(call);
		if (ret)
			goto out_unlock;
	} else if (args->flags & KRPC_CALL_NOWAIT) {
		krpc_conn_stat_inc(conn, KRPC_STAT_WINDOW_FULL);
		ret = -EAGAIN;
		goto out_unlock;
	} else {
		krpc_conn_stat_inc(conn, KRPC_STAT_WINDOW_FULL);
		call->state |= CALL_QUEUED;
		backlog_add_locked(conn, call);
	}
	krpc_conn_stat_inc(conn, KRPC_STAT_CALLS);
	call_timer_arm_locked(conn, call->deadline);
	if (callp) {
		kref_get(&call->ref);
		*callp = call;
	}
	krpc_conn_unlock(conn);
	return 0;

out_unlock:
	krpc_conn_unlock(conn);
	/* Nothing was sent: the caller keeps its buffers. */
	call->req.type = KRPC_PL_NONE;
	krpc_call_put(call);
out_put_reply:
	if (own_reply_dst)
		krpc_buf_put(reply_dst);
	return ret;
}

/**
 * krpc_call_async() - start a call
 * @clnt:	client
 * @args:	the call; @args->done is required
 * @callp:	if not NULL, receives a handle for krpc_call_cancel(), to be
 *		dropped with krpc_call_put()
 *
 * When no slot is free the call waits in a queue (counted in
 * krpc_conn_stats.window_full), or fails with -EAGAIN if
 * KRPC_CALL_NOWAIT is set.  The timeout counts from submission, queueing
 * included.
 *
 * On success krpc owns the buffers in @args and @args->done runs exactly
 * once; it may run before this function returns.  On failure nothing was
 * sent, @args->done never runs and the caller keeps its buffers.
 *
 * Context: process or softirq context, interrupts enabled (krpc's locks
 * are bottom-half locks: not from a hard interrupt handler, nor under
 * spin_lock_irqsave()); does not sleep.  A reply buffer that krpc must take
 * for @args->reply_max is taken without waiting.
 * Return: 0, -EINVAL (bad arguments, buffer not from this client's pool),
 * -EMSGSIZE (payload larger than the negotiated maximum, or a one-way
 * payload larger than the inline size), -EAGAIN, -ENOBUFS, -ENOMEM,
 * -ENOTCONN or the connection's error once it died.
 */
int krpc_call_async(struct krpc_client *clnt, struct krpc_call_args *args,
		    struct krpc_call **callp)
{
	return call_submit(krpc_client_conn(clnt), args, callp, GFP_ATOMIC);
}
KRPC_EXPORT(krpc_call_async);

struct sync_wait {
	struct completion done;
	struct krpc_result res;
};

static void sync_done(struct krpc_call *call, const struct krpc_result *res,
		      void *priv)
{
	struct sync_wait *w = priv;

	w->res = *res;
	complete(&w->done);
}

/**
 * krpc_call_sync() - make a call and wait for its outcome
 * @clnt:	client
 * @args:	the call; @args->done must be NULL
 * @res:	outcome; the caller owns @res->reply
 *
 * Like krpc_call_async() but waits, including for a free slot unless
 * KRPC_CALL_NOWAIT is set, and for a pool buffer for @args->reply_max.
 * A fatal signal cancels the call (the wait then lasts until krpc no
 * longer touches the buffers: as for krpc_call_cancel(), at most about
 * ka_timeout_ms unless the peer keeps taking the call's bytes).
 *
 * Context: process context, may sleep.
 * Return: @res->status, or a submission error as for krpc_call_async()
 * (then @res is untouched and the caller keeps its buffers).
 */
int krpc_call_sync(struct krpc_client *clnt, struct krpc_call_args *args,
		   struct krpc_result *res)
{
	struct krpc_call_args a = *args;
	struct krpc_call *call;
	struct sync_wait w;
	int ret;

	might_sleep();
	if (args->done)
		return -EINVAL;
	init_completion(&w.done);
	a.done = sync_done;
	a.priv = &w;
	ret = call_submit(krpc_client_conn(clnt), &a, &call, GFP_KERNEL);
	if (ret)
		return ret;
	if (wait_for_completion_killable(&w.done)) {
		krpc_call_cancel(call);
		wait_for_completion(&w.done);
	}
	krpc_call_put(call);
	*res = w.res;
	return res->status;
}
KRPC_EXPORT(krpc_call_sync);

/**
 * krpc_call_cancel() - abandon a call
 * @call:	handle from krpc_call_async()
 *
 * The call completes with -ECANCELED as soon as krpc no longer needs its
 * buffers: at once for a queued call; for a sent call once its send
 * finished and any remote key it exposed is invalidated, which over RDMA
 * waits for the server's answer to the cancel (about a round trip), and
 * over TCP until the socket let go of the request and no reply is still
 * arriving into the reply buffer.  If the server does not answer (RDMA),
 * or makes no progress on the call's bytes (TCP), for ka_timeout_ms, the
 * connection is reset, which ends the wait.  The server
 * is told (krpc_req_cancelled()); a reply that still comes is dropped.  A
 * timeout ends a call the same way.
 *
 * Context: process or softirq context, interrupts enabled (krpc's locks
 * are bottom-half locks: not from a hard interrupt handler, nor under
 * spin_lock_irqsave()); does not sleep.
 * Return: 0, or -EALREADY if the call already had an outcome.
 */
int krpc_call_cancel(struct krpc_call *call)
{
	struct krpc_conn *conn = call->conn;
	int ret = 0;

	krpc_conn_lock(conn);
	if (call->state & CALL_RESULT) {
		ret = -EALREADY;
	} else {
		krpc_conn_stat_inc(conn, KRPC_STAT_CANCELS);
		call_abort_locked(call, -ECANCELED);
	}
	krpc_conn_unlock(conn);
	return ret;
}
KRPC_EXPORT(krpc_call_cancel);
