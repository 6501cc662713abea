// SPDX-License-Identifier: GPL-2.0
/*
 * Command core of the userspace path: decode, validate, execute, complete.
 * Front-end independent: a front end (uring.c) gives a kernel copy of the
 * 80-byte command and gets the result back through krpc_ucmd_ops.
 *
 * Validation order for every command (io_uring/register.c style): the
 * payload is already a private copy; reserved fields must be zero, unknown
 * flags are -EINVAL, then handles (-EBADF: unknown, closed, of another file
 * or of another kind), then indexes and ranges (-EINVAL), then ownership
 * (-EBUSY).
 *
 * Completion: a command either returns its result at once or is parked
 * (krpc_ucmd_park()) and later finished exactly once by
 * krpc_ucmd_finish(): kf->parked_lock and krpc_ucmd.done decide who wins
 * between the event, a CANCEL and the teardown of a dying task.
 */
#include <linux/slab.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/ioctl.h>
#include <linux/nospec.h>

#include "krpc_priv.h"
#include "pool.h"
#include "ufile.h"

static struct kmem_cache *ucmd_cache;

int krpc_ucmd_init_cache(void)
{
	ucmd_cache = KMEM_CACHE(krpc_ucmd, 0);
	return ucmd_cache ? 0 : -ENOMEM;
}

void krpc_ucmd_exit_cache(void)
{
	kmem_cache_destroy(ucmd_cache);
}

struct krpc_ucmd *krpc_ucmd_alloc(gfp_t gfp)
{
	return kmem_cache_zalloc(ucmd_cache, gfp | __GFP_ACCOUNT);
}

void krpc_ucmd_init(struct krpc_ucmd *uc, const struct krpc_ucmd_ops *ops,
		    struct krpc_file *kf, u32 op)
{
	kref_init(&uc->ref);
	uc->ops = ops;
	uc->kf = kf;
	uc->op = op;
	INIT_LIST_HEAD(&uc->node);
}

static void ucmd_release(struct kref *ref)
{
	struct krpc_ucmd *uc = container_of(ref, struct krpc_ucmd, ref);

	switch (uc->op) {
	case KRPC_CMD_CALL:
		if (uc->call.call)
			krpc_call_put(uc->call.call);
		if (uc->call.uconn)
			krpc_uobj_put(&uc->call.uconn->obj);
		break;
	case KRPC_CMD_FETCH:
	case KRPC_CMD_REPLY:
	case KRPC_CMD_REPLY_FETCH:
		if (uc->slot.us)
			krpc_uobj_put((struct krpc_uobj *)uc->slot.us);
		break;
	}
	if (uc->task)
		put_task_struct(uc->task);
	kmem_cache_free(ucmd_cache, uc);
}

/* Context: any context. */
void krpc_ucmd_put(struct krpc_ucmd *uc)
{
	kref_put(&uc->ref, ucmd_release);
}

/**
 * krpc_ucmd_park() - the command waits for an event
 * @uc:		the command, not yet visible to anything that completes it
 * @cancel:	how to make it finish early (dying task, ring exit), or NULL
 *
 * Context: any context.
 */
void krpc_ucmd_park(struct krpc_ucmd *uc, void (*cancel)(struct krpc_ucmd *))
{
	struct krpc_file *kf = uc->kf;
	unsigned long flags;

	spin_lock_irqsave(&kf->parked_lock, flags);
	uc->cancel = cancel;
	uc->parked = true;
	list_add_tail(&uc->node, &kf->parked);
	kf->nr_parked++;
	spin_unlock_irqrestore(&kf->parked_lock, flags);
	if (uc->task)
		krpc_umonitor_arm(kf);
}

/* Decide the result; false if somebody else already did. */
static bool ucmd_claim(struct krpc_ucmd *uc)
{
	struct krpc_file *kf = uc->kf;
	unsigned long flags;
	bool won = false;

	spin_lock_irqsave(&kf->parked_lock, flags);
	if (!uc->done) {
		uc->done = true;
		won = true;
		if (uc->parked) {
			list_del_init(&uc->node);
			uc->parked = false;
			kf->nr_parked--;
		}
	}
	spin_unlock_irqrestore(&kf->parked_lock, flags);
	return won;
}

/**
 * krpc_ucmd_finish() - complete a parked command
 * @uc:		the command
 * @res:	result
 * @res2:	second result (krpc_res2())
 *
 * Context: any context; may be called under krpc_userver.lock.
 * Return: true if this call completed the command, false if it already was.
 */
bool krpc_ucmd_finish(struct krpc_ucmd *uc, s32 res, u64 res2)
{
	if (!ucmd_claim(uc))
		return false;
	uc->ops->complete(uc, res, res2);
	return true;
}

/**
 * krpc_ucmd_cancel() - make a parked command finish soon
 * @uc:		the command (the caller keeps it alive)
 *
 * For the io_uring cancel hook and the dying-task monitor.  A call is
 * cancelled (-ECANCELED once the transport let go of its buffers); a FETCH
 * completes with -ECANCELED; a reply completes when its buffer is back, or
 * at once with -ECONNABORTED, its buffer left to the transport
 * (userver.c).
 *
 * Context: process context, none of krpc's locks held; the io_uring cancel
 * hook calls it under the ring's uring_lock (6.7 and later).
 */
void krpc_ucmd_cancel(struct krpc_ucmd *uc)
{
	struct krpc_file *kf = uc->kf;
	void (*cancel)(struct krpc_ucmd *uc) = NULL;
	unsigned long flags;

	spin_lock_irqsave(&kf->parked_lock, flags);
	if (uc->parked && !uc->done && uc->cancel) {
		cancel = uc->cancel;
		kref_get(&uc->ref);
	}
	spin_unlock_irqrestore(&kf->parked_lock, flags);
	if (cancel) {
		cancel(uc);
		krpc_ucmd_put(uc);
	}
}

static bool reserved_zero(const u64 *r, unsigned int n)
{
	return !memchr_inv(r, 0, n * sizeof(*r));
}

/* ---------------------------------------------------------------------- */
/* Addresses */

static int addr_from_user(const struct krpc_addr *a,
			  struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	switch (a->family) {
	case AF_INET: {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		if (a->scope_id || memchr_inv(a->addr + 4, 0, 12))
			return -EINVAL;
		sin->sin_family = AF_INET;
		sin->sin_port = (__force __be16)a->port;
		memcpy(&sin->sin_addr, a->addr, 4);
		return 0;
	}
	case AF_INET6: {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = (__force __be16)a->port;
		sin6->sin6_scope_id = a->scope_id;
		memcpy(&sin6->sin6_addr, a->addr, 16);
		return 0;
	}
	default:
		return -EAFNOSUPPORT;
	}
}

/* KRPC_CONN_F_* of the uapi to enum krpc_cq_mode; -EINVAL if invalid. */
int krpc_uconn_flags_cq_mode(u32 flags, unsigned int *mode)
{
	switch (flags) {
	case 0:
		*mode = KRPC_CQ_DEFAULT;
		return 0;
	case KRPC_CONN_F_CQ_IRQ:
		*mode = KRPC_CQ_IRQ;
		return 0;
	case KRPC_CONN_F_CQ_POLL:
		*mode = KRPC_CQ_POLL;
		return 0;
	default:
		return -EINVAL;
	}
}

int krpc_uaddr_parse(const struct krpc_addr *a, struct sockaddr_storage *ss)
{
	return addr_from_user(a, ss);
}

/* ---------------------------------------------------------------------- */
/* Connections */

/* The pool's use ended at shutdown; its reference goes with the object. */
static void uconn_free(struct krpc_uobj *obj)
{
	struct krpc_uconn *uconn = container_of(obj, struct krpc_uconn, obj);

	WARN_ON_ONCE(uconn->clnt || !list_empty(&uconn->calls));
	krpc_upool_put(uconn->up);
	kfree_rcu(uconn, obj.rcu);
}

/* Drop a use of @uconn->active; shutdown waits for the last. */
static void uconn_unuse(struct krpc_uconn *uconn)
{
	if (atomic_dec_and_test(&uconn->active))
		wake_up(&uconn->wq);
}

/*
 * Close: no new call can start, every call completes (-ESHUTDOWN), the
 * connection is gone and no longer uses its pool, although commands whose
 * completion has not been posted yet still hold the object.  Runs once
 * per connection that got a handle, from uobj_close() (KRPC_IOC_CLOSE or
 * the file's release).  Context: process context, sleeps.
 */
void krpc_uconn_shutdown(struct krpc_uconn *uconn)
{
	uconn_unuse(uconn);
	wait_event(uconn->wq, !atomic_read(&uconn->active));
	if (uconn->clnt)
		krpc_client_destroy(uconn->clnt);
	uconn->clnt = NULL;
	krpc_upool_unuse(uconn->up);
}

static int cmd_connect(struct krpc_ucmd *uc, const void *p, bool nonblock,
		       u64 *res2)
{
	const struct krpc_cmd_connect *c = p;
	struct krpc_client_opts opts = {};
	struct krpc_file *kf = uc->kf;
	struct krpc_uconn *uconn;
	struct krpc_client *clnt;
	struct krpc_upool *up;
	u32 handle;
	int ret;

	if (c->reserved0 || c->reserved1 || c->reserved)
		return -EINVAL;
	if (krpc_uconn_flags_cq_mode(c->flags, &opts.cq_mode))
		return -EINVAL;
	if (c->transport > KRPC_TRANSPORT_AUTO)
		return -EINVAL;
	if (c->connect_timeout_ms > KRPC_TIMEOUT_MAX_MS ||
	    c->call_timeout_ms > KRPC_TIMEOUT_MAX_MS ||
	    c->depth > krpc_param_depth.max)
		return -EINVAL;
	ret = addr_from_user(&c->addr, &opts.addr);
	if (ret)
		return ret;
	if (nonblock)
		return -EAGAIN;

	up = krpc_upool_use(kf, c->pool);
	if (!up)
		return -EBADF;
	uconn = kzalloc(sizeof(*uconn), GFP_KERNEL_ACCOUNT);
	if (!uconn) {
		ret = -ENOMEM;
		goto out_unuse;
	}
	uconn->up = up;
	spin_lock_init(&uconn->lock);
	INIT_LIST_HEAD(&uconn->calls);
	atomic_set(&uconn->active, 1);
	init_waitqueue_head(&uconn->wq);

	opts.net = kf->net;
	opts.depth = c->depth;
	opts.timeout_ms = c->call_timeout_ms;
	opts.connect_timeout_ms = c->connect_timeout_ms;
	opts.pool = up->pool;
	opts.transport = c->transport;
	clnt = krpc_client_create(&opts);
	if (IS_ERR(clnt)) {
		ret = PTR_ERR(clnt);
		goto out_free;
	}
	{
		struct krpc_conn_info info;

		krpc_client_query(clnt, &info);
		*res2 = info.transport;
	}
	uconn->clnt = clnt;
	ret = krpc_uobj_add(kf, &uconn->obj, KRPC_UOBJ_CONN, uconn_free,
			    &handle);
	if (ret) {
		krpc_client_destroy(clnt);
		uconn->clnt = NULL;
		goto out_free;
	}
	return handle;

out_free:
	kfree(uconn);
out_unuse:
	krpc_upool_unuse(up);
	krpc_upool_put(up);
	return ret;
}

static struct krpc_uconn *uconn_get(struct krpc_file *kf, u32 handle)
{
	struct krpc_uobj *obj = krpc_uobj_get(kf, handle, KRPC_UOBJ_CONN);

	return obj ? container_of(obj, struct krpc_uconn, obj) : NULL;
}

/* Any context: the core calls it once, after it let go of the buffers. */
static void ucall_done(struct krpc_call *call, const struct krpc_result *res,
		       void *priv)
{
	struct krpc_ucmd *uc = priv;
	struct krpc_uconn *uconn = uc->call.uconn;
	u32 idx = KRPC_BUF_NONE, off = 0, len = 0, flags = 0;
	unsigned long irqflags;

	if (res->reply) {
		off = res->reply->off;
		len = res->reply->len;
		idx = krpc_ubuf_give_user(uconn->up, res->reply);
	}
	if (res->flags & KRPC_RES_REMOTE)
		flags |= KRPC_RES2_F_REMOTE;
	spin_lock_irqsave(&uconn->lock, irqflags);
	if (uc->call.listed) {
		list_del_init(&uc->call.node);
		uc->call.listed = false;
		uconn->nr_calls--;
	}
	spin_unlock_irqrestore(&uconn->lock, irqflags);
	krpc_ucmd_finish(uc, res->status ? res->status : len,
			 krpc_res2(idx, flags, off));
}

static void ucall_cancel(struct krpc_ucmd *uc)
{
	struct krpc_uconn *uconn = uc->call.uconn;
	struct krpc_call *call = NULL;
	unsigned long flags;

	spin_lock_irqsave(&uconn->lock, flags);
	if (uc->call.listed)
		call = uc->call.call;
	spin_unlock_irqrestore(&uconn->lock, flags);
	/* The uc's reference keeps @call valid. */
	if (call)
		krpc_call_cancel(call);
}

static int cmd_call(struct krpc_ucmd *uc, const void *p, bool nonblock,
		    u64 *res2)
{
	const struct krpc_cmd_call *c = p;
	struct krpc_call_args args = {};
	struct krpc_buf *buf = NULL;
	struct krpc_uconn *uconn;
	struct krpc_call *call = NULL;
	unsigned long flags;
	int ret;

	if ((c->flags & ~KRPC_CALL_F_ALL) || c->reserved0 || c->reserved)
		return -EINVAL;
	if (c->timeout_ms > KRPC_TIMEOUT_MAX_MS ||
	    c->method >= KRPC_METHOD_RESERVED)
		return -EINVAL;
	if (c->buf == KRPC_BUF_NONE && (c->offset || c->len))
		return -EINVAL;
	if ((c->flags & KRPC_CALL_F_ONEWAY) && c->reply_max)
		return -EINVAL;
	uconn = uconn_get(uc->kf, c->conn);
	if (!uconn)
		return -EBADF;
	uc->call.uconn = uconn;		/* reference dropped with uc */
	uc->call.tag = c->tag;
	if (c->reply_max > krpc_pool_max_size(uconn->up->pool))
		return -EINVAL;
	if (c->buf != KRPC_BUF_NONE) {
		buf = krpc_ubuf_hand_over(uconn->up, c->buf, c->offset, c->len,
					  NULL, &ret);
		if (!buf)
			return ret;
		args.req.type = KRPC_PL_BUF;
		args.req.buf = buf;
	}
	args.method = c->method;
	args.flags = (c->flags & KRPC_CALL_F_ONEWAY) ? KRPC_CALL_ONEWAY : 0;
	args.timeout_ms = c->timeout_ms;
	args.reply_max = c->reply_max;
	args.done = ucall_done;
	args.priv = uc;

	if (!atomic_inc_not_zero(&uconn->active)) {
		ret = -EBADF;
		goto out_take_back;
	}
	/* Visible to CANCEL and the completion before the core sees it. */
	spin_lock_irqsave(&uconn->lock, flags);
	if (uconn->nr_calls >= KRPC_CONN_CALLS_MAX) {
		spin_unlock_irqrestore(&uconn->lock, flags);
		uconn_unuse(uconn);
		ret = -EBUSY;
		goto out_take_back;
	}
	uconn->nr_calls++;
	list_add_tail(&uc->call.node, &uconn->calls);
	uc->call.listed = true;
	spin_unlock_irqrestore(&uconn->lock, flags);
	krpc_ucmd_park(uc, ucall_cancel);

	ret = krpc_call_async(uconn->clnt, &args, &call);
	uconn_unuse(uconn);
	spin_lock_irqsave(&uconn->lock, flags);
	if (!ret) {
		uc->call.call = call;
	} else if (uc->call.listed) {
		list_del_init(&uc->call.node);
		uc->call.listed = false;
		uconn->nr_calls--;
	}
	spin_unlock_irqrestore(&uconn->lock, flags);
	if (!ret)
		return -EIOCBQUEUED;
	/*
	 * Nothing was sent, the done callback never runs: ours again.  Only
	 * that callback finishes a call, so this claim cannot lose; it takes
	 * the command off the parked list before the caller completes it.
	 */
	ucmd_claim(uc);
out_take_back:
	if (buf)
		krpc_ubuf_take_back(uconn->up, buf);
	return ret;
}

/*
 * Every call in flight with the tag.  The matching calls move to a list of
 * our own in one pass under uconn->lock; then each goes back to
 * uconn->calls, referenced, and is cancelled without the lock (its done
 * callback may run right inside krpc_call_cancel() and take it).  Either
 * list is under uconn->lock, so ucall_done() unlinks a call that completes
 * meanwhile from whichever holds it, and each call is tried once: a
 * cancelled one stays listed until its done callback runs, and a rescan
 * would find it again (-EALREADY) instead of the calls after it.
 */
static int cmd_cancel(struct krpc_ucmd *uc, const void *p, bool nonblock,
		      u64 *res2)
{
	const struct krpc_cmd_cancel *c = p;
	struct krpc_ucmd *t, *tmp;
	struct krpc_uconn *uconn;
	unsigned long flags;
	int cancelled = 0;
	LIST_HEAD(picked);

	if (c->flags || !reserved_zero(c->reserved, 2))
		return -EINVAL;
	uconn = uconn_get(uc->kf, c->conn);
	if (!uconn)
		return -EBADF;
	spin_lock_irqsave(&uconn->lock, flags);
	list_for_each_entry_safe(t, tmp, &uconn->calls, call.node)
		if (t->call.tag == c->tag && t->call.call)
			list_move_tail(&t->call.node, &picked);
	spin_unlock_irqrestore(&uconn->lock, flags);
	for (;;) {
		spin_lock_irqsave(&uconn->lock, flags);
		t = list_first_entry_or_null(&picked, struct krpc_ucmd,
					     call.node);
		if (t) {
			list_move_tail(&t->call.node, &uconn->calls);
			kref_get(&t->ref);
		}
		spin_unlock_irqrestore(&uconn->lock, flags);
		if (!t)
			break;
		if (!krpc_call_cancel(t->call.call))
			cancelled++;
		krpc_ucmd_put(t);
	}
	krpc_uobj_put(&uconn->obj);
	return cancelled ? cancelled : -ENOENT;
}

/* ---------------------------------------------------------------------- */
/* Buffers */

static int cmd_bufs(struct krpc_ucmd *uc, const void *p, bool nonblock,
		    u64 *res2)
{
	const struct krpc_cmd_bufs *c = p;
	bool free = uc->op == KRPC_CMD_BUF_FREE;
	struct krpc_upool *up;
	int ret;

	if ((c->flags & ~(free ? 0 : KRPC_BUF_F_LARGE)) || c->reserved0)
		return -EINVAL;
	if (free ? (!c->count || c->count > KRPC_CMD_BUFS_MAX) : c->count != 1)
		return -EINVAL;
	if (memchr_inv(c->bufs + (free ? c->count : 0), 0,
		       sizeof(c->bufs) - (free ? c->count : 0) * sizeof(u32)))
		return -EINVAL;
	up = krpc_upool_get(uc->kf, c->pool);
	if (!up)
		return -EBADF;
	if (free) {
		ret = krpc_ubuf_free(up, c->bufs, c->count);
		if (!ret)
			ret = c->count;
	} else {
		ret = krpc_ubuf_alloc(up, c->flags & KRPC_BUF_F_LARGE);
	}
	krpc_upool_put(up);
	return ret;
}

static int cmd_slot(struct krpc_ucmd *uc, const void *p, bool nonblock,
		    u64 *res2)
{
	return krpc_userver_slot_cmd(uc, p);
}

/* ---------------------------------------------------------------------- */
/* Dispatch */

typedef int (*ucmd_exec_fn)(struct krpc_ucmd *uc, const void *payload,
			    bool nonblock, u64 *res2);

/* @size: of the command's structure now (it may outgrow _IOC_SIZE(@op)) */
struct ucmd_def {
	u32 op;
	u32 size;
	ucmd_exec_fn exec;
};

#define UCMD_NR(op)	(_IOC_NR(op) - _IOC_NR(KRPC_CMD_CONNECT))
#define UCMD(op, type, fn) \
	[UCMD_NR(op)] = { op, sizeof(struct type), fn }

static const struct ucmd_def ucmd_defs[] = {
	UCMD(KRPC_CMD_CONNECT, krpc_cmd_connect, cmd_connect),
	UCMD(KRPC_CMD_CALL, krpc_cmd_call, cmd_call),
	UCMD(KRPC_CMD_CANCEL, krpc_cmd_cancel, cmd_cancel),
	UCMD(KRPC_CMD_FETCH, krpc_cmd_slot, cmd_slot),
	UCMD(KRPC_CMD_REPLY, krpc_cmd_slot, cmd_slot),
	UCMD(KRPC_CMD_REPLY_FETCH, krpc_cmd_slot, cmd_slot),
	UCMD(KRPC_CMD_BUF_ALLOC, krpc_cmd_bufs, cmd_bufs),
	UCMD(KRPC_CMD_BUF_FREE, krpc_cmd_bufs, cmd_bufs),
};

/**
 * krpc_ucmd_cq() - the completion queue a command names
 * @op:		KRPC_CMD_* (unchecked)
 * @payload:	KRPC_UCMD_PAYLOAD bytes, a private kernel copy
 * @tag:	out: the tag of the queue entry
 *
 * Only the data-path commands (CALL, FETCH, REPLY, REPLY_FETCH) have a cq
 * field; the rest of the command is validated by krpc_ucmd_exec().
 *
 * Context: any context.
 * Return: the queue handle, or 0 if the result goes to the front end.
 */
u32 krpc_ucmd_cq(u32 op, const void *payload, u64 *tag)
{
	const struct krpc_cmd_call *call = payload;
	const struct krpc_cmd_slot *slot = payload;

	switch (op) {
	case KRPC_CMD_CALL:
		*tag = call->tag;
		return call->cq;
	case KRPC_CMD_FETCH:
	case KRPC_CMD_REPLY:
	case KRPC_CMD_REPLY_FETCH:
		*tag = slot->tag;
		return slot->cq;
	default:
		return 0;
	}
}

/**
 * krpc_ucmd_exec() - run one command
 * @uc:		the command (op set by krpc_ucmd_init())
 * @payload:	KRPC_UCMD_PAYLOAD bytes, a private kernel copy
 * @nonblock:	the caller cannot sleep: commands that would return -EAGAIN
 * @res2:	second result of an immediate completion
 *
 * Context: process context (submitter, SQPOLL thread or io-wq worker).
 * Return: -EIOCBQUEUED if the command was parked (uc->ops->complete() will
 * run exactly once), else the immediate result: -ENOTTY for an unknown
 * command, -EINVAL for a non-zero byte of @payload past the command's
 * structure, -EAGAIN (only with @nonblock), a negative errno, or >= 0.
 */
int krpc_ucmd_exec(struct krpc_ucmd *uc, const void *payload, bool nonblock,
		   u64 *res2)
{
	const struct ucmd_def *d;
	u32 nr;

	BUILD_BUG_ON(ARRAY_SIZE(ucmd_defs) !=
		     UCMD_NR(KRPC_CMD_BUF_FREE) + 1);
	BUILD_BUG_ON(sizeof(struct krpc_cmd_connect) > KRPC_UCMD_PAYLOAD);
	/* The ABI's transport numbers are the kernel API's. */
	BUILD_BUG_ON(KRPC_TRANSPORT_DEFAULT != KRPC_XPRT_DEFAULT ||
		     KRPC_TRANSPORT_RDMA != KRPC_XPRT_RDMA ||
		     KRPC_TRANSPORT_TCP != KRPC_XPRT_TCP ||
		     KRPC_TRANSPORT_AUTO != KRPC_XPRT_AUTO);
	BUILD_BUG_ON(sizeof(struct krpc_cmd_call) > KRPC_UCMD_PAYLOAD);
	BUILD_BUG_ON(sizeof(struct krpc_cmd_cancel) > KRPC_UCMD_PAYLOAD);
	BUILD_BUG_ON(sizeof(struct krpc_cmd_slot) > KRPC_UCMD_PAYLOAD);
	BUILD_BUG_ON(sizeof(struct krpc_cmd_bufs) != KRPC_UCMD_PAYLOAD);

	*res2 = krpc_res2(KRPC_BUF_NONE, 0, 0);
	if (_IOC_TYPE(uc->op) != KRPC_IOC_MAGIC ||
	    _IOC_NR(uc->op) < _IOC_NR(KRPC_CMD_CONNECT))
		return -ENOTTY;
	nr = UCMD_NR(uc->op);
	if (nr >= ARRAY_SIZE(ucmd_defs))
		return -ENOTTY;
	d = &ucmd_defs[array_index_nospec(nr, ARRAY_SIZE(ucmd_defs))];
	if (d->op != uc->op)
		return -ENOTTY;
	/* Zero past the structure, so that a later one may grow into it. */
	if (memchr_inv((const u8 *)payload + d->size, 0,
		       KRPC_UCMD_PAYLOAD - d->size))
		return -EINVAL;
	return d->exec(uc, payload, nonblock, res2);
}
