// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA transport, send contexts: taken for a call, a reply, a READ or a
 * control message, queued on rc->sendq while their work waits (rdma.c posts
 * it), moved on by their send completions, and given back when the call,
 * the request or the message is done with them.  Server requests that need
 * one while none is free wait on rc->wait_sctx and are served as contexts
 * come back.
 *
 * Context: everything here runs under conn->lock (_bh): from the transport
 * operations, the completion handlers (softirq, or process context with
 * bottom halves disabled) and teardown.
 */
#include "rdma.h"
#include "pool.h"
#include "transport.h"

/* ---------------------------------------------------------------------- */
/* Send contexts */

static void serve_waiters_locked(struct krpc_rdma_conn *rc);

struct krpc_sctx *krpc_sctx_get_locked(struct krpc_rdma_conn *rc)
{
	struct krpc_sctx *sctx;

	lockdep_assert_held(&rc->conn->lock);
	sctx = list_first_entry_or_null(&rc->free_sctx, struct krpc_sctx, node);
	if (!sctx)
		return NULL;
	list_del_init(&sctx->node);
	rc->nr_free_sctx--;
	return sctx;
}

void krpc_sctx_put_locked(struct krpc_sctx *sctx)
{
	struct krpc_rdma_conn *rc = sctx->rc;

	lockdep_assert_held(&rc->conn->lock);
	WARN_ON_ONCE(sctx->wr_pending || sctx->ops || sctx->call || sctx->req ||
		     sctx->rbuf || sctx->mr[0] || sctx->mr[1] ||
		     krpc_sctx_unsig(sctx) || sctx->await_ack);
	if (sctx->ctrl_type) {
		sctx->ctrl_type = 0;
		rc->nr_ctrl--;
	}
	sctx->replied = false;
	sctx->aborted = false;
	sctx->released = false;
	sctx->reading = false;
	sctx->inv_pending = 0;
	list_add(&sctx->node, &rc->free_sctx);
	rc->nr_free_sctx++;
	serve_waiters_locked(rc);
}

/*
 * Work waits in order, but the answer to a CANCEL goes first: it may go
 * out on the credits data leaves (krpc_rdma_answers_cancel()).
 */
void krpc_sctx_queue_locked(struct krpc_sctx *sctx, unsigned int op)
{
	struct krpc_rdma_conn *rc = sctx->rc;

	lockdep_assert_held(&rc->conn->lock);
	sctx->ops |= op;
	if (!list_empty(&sctx->node))
		return;
	if ((op & OP_REPLY) && sctx->req &&
	    krpc_rdma_answers_cancel(rc, sctx->req))
		list_add(&sctx->node, &rc->sendq);
	else
		list_add_tail(&sctx->node, &rc->sendq);
}

/*
 * The peer's remote invalidation killed a key of @sctx (rx_reply()): a
 * local invalidation queued for its keys (a cancelled call's) is moot
 * once none of them is valid.  Taken back here, where progress follows,
 * not dropped by the flush, after which nothing would move @sctx on.
 */
void krpc_sctx_inv_moot_locked(struct krpc_sctx *sctx)
{
	lockdep_assert_held(&sctx->rc->conn->lock);
	if (!(sctx->ops & OP_INV) || krpc_sctx_key_valid(sctx))
		return;
	sctx->ops &= ~OP_INV;
	if (!sctx->ops)
		list_del_init(&sctx->node);
}

/*
 * Client: an aborted call's keys no longer wait for the server: it
 * answered the CANCEL (rx_reply()), or did not in time.
 */
void krpc_sctx_await_end_locked(struct krpc_sctx *sctx)
{
	lockdep_assert_held(&sctx->rc->conn->lock);
	if (!sctx->await_ack)
		return;
	sctx->await_ack = false;
	sctx->rc->nr_await--;
}

/*
 * Keepalive tick, client: a CANCEL not answered within ka_timeout_ms of
 * the abort (not sent for lack of credits, or a server that does not
 * answer).  The keys cannot be fenced while the server may still write to
 * them, and the call must end: the connection is reset, as when calls are
 * abandoned on half the slots.  Return true if it was.
 */
bool krpc_rdma_await_expire_locked(struct krpc_rdma_conn *rc,
				   unsigned long now)
{
	unsigned long tmo = msecs_to_jiffies(krpc_param(ka_timeout_ms));
	struct krpc_sctx *sctx;
	unsigned int i;

	lockdep_assert_held(&rc->conn->lock);
	for (i = 0; i < rc->nr_sctx; i++) {
		sctx = &rc->sctx[i];
		if (!sctx->await_ack || time_before(now, sctx->abort_at + tmo))
			continue;
		pr_warn_ratelimited("conn %u: cancel of call %#llx not answered in %u ms, resetting\n",
				    rc->conn->id, sctx->call->id,
				    jiffies_to_msecs(now - sctx->abort_at));
		atomic64_inc(&krpc_stats.cancel_unanswered);
		krpc_rdma_fail_locked(rc, -ETIMEDOUT);
		return true;
	}
	return false;
}

/* ---------------------------------------------------------------------- */
/* Send completions */

/* @sctx no longer waits for its unsignaled SEND (rdma.c). */
void krpc_rdma_unsig_forget_locked(struct krpc_sctx *sctx)
{
	lockdep_assert_held(&sctx->rc->conn->lock);
	list_del_init(&sctx->unode);
}

/*
 * The reply to @sctx's call came before a completion said that its
 * unsignaled SEND is done.  The reply says that the peer has the request,
 * not that the device is done with it: a peer that withholds its ACK (or
 * NAKs) makes the device send the request again, reading the payload
 * buffer once more.  Refilled for another call, perhaps to another peer,
 * the buffer would go to this one.  So the call completes, but its
 * request buffer stays here until unsig_retire_locked() passes the SEND
 * (as xprtrdma keeps a Send's pages until a completion covers it).  A
 * buffer its owner takes back at the completion (a process's, ubuf.c)
 * never goes unsignaled (rdma.c).
 */
static void unsig_hold_locked(struct krpc_sctx *sctx)
{
	struct krpc_rdma_conn *rc = sctx->rc;
	struct krpc_call *call = sctx->call;
	u32 i = sctx->useq & rc->unsig_mask;

	if (call->req.type != KRPC_PL_BUF)
		return;
	if (WARN_ON_ONCE(rc->unsig_bufs[i]))
		krpc_rdma_unsig_unhold_locked(rc, sctx->useq);
	rc->unsig_bufs[i] = call->req.buf;
	call->req.buf = NULL;
	call->req.type = KRPC_PL_NONE;
	atomic64_inc(&krpc_stats.unsig_holds);
	atomic64_inc(&krpc_stats.unsig_held);
}

/* The unsignaled SEND numbered @useq is done: its buffer may go. */
void krpc_rdma_unsig_unhold_locked(struct krpc_rdma_conn *rc, u32 useq)
{
	struct krpc_buf **slot = &rc->unsig_bufs[useq & rc->unsig_mask];

	lockdep_assert_held(&rc->conn->lock);
	if (!*slot)
		return;
	krpc_buf_put(*slot);
	*slot = NULL;
	atomic64_dec(&krpc_stats.unsig_held);
}

static void client_progress_locked(struct krpc_sctx *sctx)
{
	struct krpc_call *call = sctx->call;

	if ((call->flags & KRPC_CALL_ONEWAY) && !sctx->replied) {
		sctx->replied = true;
		krpc_call_result_locked(call, 0, 0, NULL);
		krpc_call_replied_locked(call);
	}
	/* Answered: the call need not wait for its SEND, its buffer may. */
	if (sctx->replied && krpc_sctx_unsig(sctx)) {
		unsig_hold_locked(sctx);
		krpc_rdma_unsig_forget_locked(sctx);
	}
	if (!sctx->released) {
		if (!sctx->replied && !sctx->aborted)
			return;
		/* Cancelled: the device may still read the request. */
		if (krpc_sctx_unsig(sctx))
			return;
		/* ... or the server still use the keys, until it answers. */
		if (!sctx->replied && sctx->await_ack)
			return;
		if (krpc_sctx_key_valid(sctx)) {
			krpc_sctx_queue_locked(sctx, OP_INV);
			return;
		}
		sctx->released = true;
		krpc_call_xprt_done_locked(call);
	}
	if (sctx->replied) {
		/* The keys are dead and the peer is done with the call id. */
		krpc_mr_put_all_locked(sctx);
		sctx->call = NULL;
		krpc_call_slot_release_locked(call);
		krpc_sctx_put_locked(sctx);
	}
}

static void server_progress_locked(struct krpc_sctx *sctx)
{
	struct krpc_req *req = sctx->req;

	sctx->req = NULL;
	if (sctx->reading) {
		struct krpc_buf *buf = sctx->rbuf;

		sctx->reading = false;
		sctx->rbuf = NULL;
		krpc_buf_sync(buf, 0, req->xrdv[0].len, false);
		buf->len = req->xrdv[0].len;
		req->payload = buf;
		krpc_conn_stat_add(req->conn, KRPC_STAT_BYTES_RX, buf->len);
		krpc_sctx_put_locked(sctx);
		krpc_req_start_locked(req);
	} else {
		krpc_req_free_locked(req);
		krpc_sctx_put_locked(sctx);
	}
}

/*
 * Everything posted for @sctx completed and nothing waits: next step.  A
 * call's unsignaled SEND (rdma.c) is for client_progress_locked() to weigh.
 */
void krpc_rdma_sctx_progress_locked(struct krpc_sctx *sctx)
{
	if (sctx->wr_pending || sctx->ops)
		return;
	if (sctx->call)
		client_progress_locked(sctx);
	else if (sctx->req)
		server_progress_locked(sctx);
	else
		krpc_sctx_put_locked(sctx);
}

/*
 * Every unsignaled SEND numbered below @upto completed: their slots come
 * back, answered calls' request buffers go back to their pools, and calls
 * cancelled before their reply give back their buffers.
 */
static void unsig_retire_locked(struct krpc_rdma_conn *rc, u32 upto)
{
	struct krpc_sctx *sctx;
	u32 u;

	for (u = rc->unsig_done; u != upto; u++)
		krpc_rdma_unsig_unhold_locked(rc, u);
	rc->sq_avail += upto - rc->unsig_done;
	rc->unsig_done = upto;
	while ((sctx = list_first_entry_or_null(&rc->unsig, struct krpc_sctx,
						unode)) &&
	       (s32)(sctx->useq - upto) < 0) {
		krpc_rdma_unsig_forget_locked(sctx);
		/* A dead connection's contexts: krpc_rdma_release_all(). */
		if (rc->live)
			krpc_rdma_sctx_progress_locked(sctx);
	}
}

void krpc_rdma_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct krpc_sctx *sctx = container_of(wc->wr_cqe, struct krpc_sctx, cqe);
	struct krpc_rdma_conn *rc = sctx->rc;
	struct krpc_conn *conn = rc->conn;
	unsigned int i;

	krpc_conn_lock(conn);
	/* Completions come in posting order: this one is rc->marks' head. */
	unsig_retire_locked(rc, rc->marks[rc->mark_head]);
	if (++rc->mark_head == rc->sq_size)
		rc->mark_head = 0;
	rc->sq_avail++;
	sctx->wr_pending--;
	if (unlikely(wc->status != IB_WC_SUCCESS)) {
		if (wc->status == IB_WC_RNR_RETRY_EXC_ERR)
			krpc_conn_stat_inc(conn, KRPC_STAT_RNR_NAKS);
		krpc_rdma_wc_failed_locked(rc, wc, "send");
		goto out;
	}
	if (!rc->live)
		goto out;
	if (wc->opcode == IB_WC_LOCAL_INV && sctx->inv_pending &&
	    !--sctx->inv_pending) {
		for (i = 0; i < ARRAY_SIZE(sctx->mr); i++)
			if (sctx->mr_state[i] == MR_INV)
				sctx->mr_state[i] = MR_DEAD;
	}
	krpc_rdma_sctx_progress_locked(sctx);
	krpc_rdma_flush_locked(rc);
out:
	krpc_conn_unlock(conn);
}

/*
 * An unsignaled SEND completes only when the queue pair fails and flushes
 * it: the connection is going down, and krpc_rdma_release_all() frees what
 * its call held once the queue pair is drained.  A device that reported a
 * successful one anyway (one that signals every request) is counted as if
 * it had not: a later completion reclaims the slot.
 */
void krpc_rdma_unsig_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct krpc_rdma_conn *rc = container_of(wc->wr_cqe,
						 struct krpc_rdma_conn,
						 unsig_cqe);

	if (wc->status == IB_WC_SUCCESS)
		return;
	krpc_conn_lock(rc->conn);
	krpc_rdma_wc_failed_locked(rc, wc, "send");
	krpc_conn_unlock(rc->conn);
}

/* ---------------------------------------------------------------------- */
/* Server requests waiting for a send context */

static void start_read_locked(struct krpc_rdma_conn *rc, struct krpc_sctx *sctx,
			      struct krpc_req *req)
{
	struct krpc_buf *buf;

	sctx->req = req;
	buf = krpc_buf_get(rc->conn->pool, req->xrdv[0].len, GFP_ATOMIC);
	if (IS_ERR(buf)) {
		/* No room: fail the call; the reply invalidates its key. */
		req->flags |= REQ_REPLIED;
		req->status = -ENOBUFS;
		krpc_sctx_queue_locked(sctx, OP_REPLY);
		return;
	}
	sctx->rbuf = buf;
	sctx->reading = true;
	krpc_sctx_queue_locked(sctx, OP_READ);
}

/* A request's payload must be READ: take a context or wait for one. */
void krpc_rdma_read_req_locked(struct krpc_rdma_conn *rc, struct krpc_req *req)
{
	struct krpc_sctx *sctx = krpc_sctx_get_locked(rc);

	if (!sctx) {
		list_add_tail(&req->node, &rc->wait_sctx);
		return;
	}
	start_read_locked(rc, sctx, req);
}

static void serve_waiters_locked(struct krpc_rdma_conn *rc)
{
	struct krpc_sctx *sctx;
	struct krpc_req *req;

	while (rc->live && !list_empty(&rc->wait_sctx) && rc->nr_free_sctx) {
		req = list_first_entry(&rc->wait_sctx, struct krpc_req, node);
		list_del_init(&req->node);
		sctx = krpc_sctx_get_locked(rc);
		/* Cancelled before its payload was read: answer, no READ. */
		if ((req->flags & (REQ_CANCELLED | REQ_REPLIED)) ==
		    REQ_CANCELLED) {
			req->flags |= REQ_REPLIED;
			req->status = -ECANCELED;
		}
		if (req->flags & REQ_REPLIED) {
			sctx->req = req;
			krpc_sctx_queue_locked(sctx, OP_REPLY);
		} else {
			start_read_locked(rc, sctx, req);
		}
	}
}
