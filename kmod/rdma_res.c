// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA transport, connection resources: the queue pair, completion queue,
 * FRWR MR pool, header slots and receive ring of a connection, made once
 * when it is set up and released in the canonical teardown order; plus the
 * keepalive timer and the refilling of receive buffers handed to callers.
 */
#include <linux/log2.h>
#include <linux/slab.h>
#include <rdma/mr_pool.h>

#include "rdma.h"
#include "pool.h"
#include "inject.h"

/* ---------------------------------------------------------------------- */
/* Keepalive and dead-peer detection */

static void ka_tick(struct timer_list *t)
{
	struct krpc_rdma_conn *rc = timer_container_of(rc, t, ka_timer);
	unsigned long now = jiffies;
	unsigned long ival = krpc_conn_ka_interval(rc->conn);

	krpc_conn_lock(rc->conn);
	if (!rc->live)
		goto out;
	/* Withheld receives (rdma_rx.c) silence the client: not a dead peer. */
	if (krpc_rdma_reqs_held(rc))
		rc->last_rx = now;
	if (rc->nr_await && krpc_rdma_await_expire_locked(rc, now))
		goto out;
	if (time_after(now, rc->last_rx +
		       msecs_to_jiffies(krpc_param(ka_timeout_ms)))) {
		pr_warn_ratelimited("conn %u: nothing received for %u ms, peer is dead\n",
				    rc->conn->id,
				    jiffies_to_msecs(now - rc->last_rx));
		krpc_rdma_fail_locked(rc, -ETIMEDOUT);
		goto out;
	}
	if (time_after_eq(now, rc->last_tx + ival))
		rc->want_ka = true;
	if (rc->grant_pending)
		rc->want_credit = true;
	krpc_rdma_flush_locked(rc);
	/* Half the interval: idleness is noticed within 1.5 intervals. */
	mod_timer(&rc->ka_timer, now + max(1UL, ival / 2));
out:
	krpc_conn_unlock(rc->conn);
}

void krpc_rdma_ka_start(struct krpc_rdma_conn *rc)
{
	mod_timer(&rc->ka_timer,
		  jiffies + max(1UL, krpc_conn_ka_interval(rc->conn) / 2));
}

/* ---------------------------------------------------------------------- */
/* Resources */

/* Verbs calls that can fail, as fault-injection points (inject.h). */
static KRPC_FAULT_POINT int krpc_rdma_ib_post_recv(struct ib_qp *qp,
						 const struct ib_recv_wr *wr)
{
	const struct ib_recv_wr *bad;

	return ib_post_recv(qp, wr, &bad);
}
ALLOW_ERROR_INJECTION(krpc_rdma_ib_post_recv, ERRNO);

static KRPC_FAULT_POINT int krpc_rdma_create_cq(struct krpc_rdma_conn *rc)
{
	struct ib_cq *cq;

	if (rc->conn->cq_poll)
		return krpc_rdma_poll_cq_create(rc);
	if (ib_uses_virt_dma(rc->ibdev) && !krpc_param(cq_shared))
		return krpc_rdma_ecq_create(rc);
	cq = ib_cq_pool_get(rc->ibdev, rc->cq_size, rc->conn->id,
			    IB_POLL_SOFTIRQ);
	if (IS_ERR(cq))
		return PTR_ERR(cq);
	rc->cq = cq;
	return 0;
}
ALLOW_ERROR_INJECTION(krpc_rdma_create_cq, ERRNO);

static KRPC_FAULT_POINT int krpc_rdma_create_qp(struct krpc_rdma_conn *rc,
					      struct ib_qp_init_attr *qattr)
{
	int ret;

	ret = rdma_create_qp(rc->cm_id, rc->kdev->pd, qattr);
	if (ret)
		return ret;
	rc->qp = rc->cm_id->qp;
	return 0;
}
ALLOW_ERROR_INJECTION(krpc_rdma_create_qp, ERRNO);

static KRPC_FAULT_POINT int krpc_rdma_create_mrs(struct krpc_rdma_conn *rc,
					       u32 depth)
{
	return ib_mr_pool_init(rc->qp, &rc->mrs, 2 * depth,
			       IB_MR_TYPE_MEM_REG, rc->mr_pages, 0);
}
ALLOW_ERROR_INJECTION(krpc_rdma_create_mrs, ERRNO);

int krpc_rdma_post_recv_locked(struct krpc_rdma_conn *rc, struct krpc_rx *rx)
{
	/*
	 * The receive size the handshake announced, also in a buffer of a
	 * bigger class (krpc_pool_get_recv() falls back to one): only the
	 * first segment of a buffer is contiguous, and a small buffer fits
	 * in any class's first segment.  A longer SEND from the peer fails
	 * the receive (a length error) instead of writing past it.
	 */
	u32 len = krpc_pool_small_size(rx->buf->pool);
	struct ib_recv_wr wr = {};
	struct ib_sge sge;
	int ret;

	sge.addr = rx->buf->segs[0].dma;
	sge.length = len;
	sge.lkey = rc->kdev->pd->local_dma_lkey;
	krpc_buf_sync(rx->buf, 0, len, true);
	wr.wr_cqe = &rx->cqe;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	ret = krpc_rdma_ib_post_recv(rc->qp, &wr);
	if (ret) {
		pr_err("conn %u: ib_post_recv: %d\n", rc->conn->id, ret);
		krpc_rdma_fail_locked(rc, -EIO);
		return ret;
	}
	rc->recv_posted++;
	rc->grant_pending++;
	return 0;
}

/*
 * A buffer came back to the pool a starved ring waits on: refill now.
 * Called under the wait queue's lock, in any context.
 */
static int refill_wake(struct wait_queue_entry *wait, unsigned int mode,
		       int sync, void *key)
{
	struct krpc_rdma_conn *rc = container_of(wait, struct krpc_rdma_conn,
						 pool_wait);

	/* Nothing if already queued: every free of a busy pool lands here. */
	queue_delayed_work(krpc_wq, &rc->refill_work, 0);
	return 0;
}

/* Every entry has its buffer again, or the connection is torn down. */
void krpc_rdma_refill_wait_end_locked(struct krpc_rdma_conn *rc)
{
	lockdep_assert_held(&rc->conn->lock);
	if (!rc->pool_waiting)
		return;
	rc->pool_waiting = false;
	remove_wait_queue(&rc->conn->pool->wait, &rc->pool_wait);
}

/*
 * Give ring entries whose buffer was handed to a call or request a new one;
 * none while the server holds its bound of requests (rdma_rx.c).  When the
 * pool has none, the connection waits on the pool's wait queue: the next
 * buffer given back queues refill_work (no timer polls the pool).  It
 * tries once more right after it starts waiting, for a buffer given back
 * before it was on the queue.
 */
void krpc_rdma_refill_locked(struct krpc_rdma_conn *rc)
{
	u32 i;

	lockdep_assert_held(&rc->conn->lock);
	if (krpc_rdma_reqs_held(rc))
		return;
again:
	for (i = 0; i < rc->nr_recv && rc->starved && rc->live; i++) {
		struct krpc_rx *rx = &rc->rx[i];
		struct krpc_buf *buf;

		if (rx->buf)
			continue;
		buf = krpc_pool_get_recv(rc->conn->pool);
		if (IS_ERR(buf))
			break;
		rx->buf = buf;
		rc->starved--;
		krpc_rdma_post_recv_locked(rc, rx);
	}
	if (!rc->starved || !rc->live) {
		krpc_rdma_refill_wait_end_locked(rc);
		return;
	}
	if (!rc->pool_waiting) {
		rc->pool_waiting = true;
		krpc_conn_stat_inc(rc->conn, KRPC_STAT_POOL_WAITS);
		add_wait_queue(&rc->conn->pool->wait, &rc->pool_wait);
		goto again;
	}
}

/**
 * krpc_rdma_req_freed() - a request of a server connection was freed
 * @conn:	the connection
 *
 * Below the request bound again: the receives withheld at it are refilled
 * (by refill_work: this may run inside the receive path).
 *
 * Context: conn->lock held (krpc_req_free_locked()).
 */
void krpc_rdma_req_freed(struct krpc_conn *conn)
{
	struct krpc_rdma_conn *rc = to_rc(conn);

	lockdep_assert_held(&conn->lock);
	if (rc->live && rc->starved && !krpc_rdma_reqs_held(rc))
		mod_delayed_work(krpc_wq, &rc->refill_work, 0);
}

static void refill_work(struct work_struct *work)
{
	struct krpc_rdma_conn *rc = container_of(to_delayed_work(work),
						 struct krpc_rdma_conn,
						 refill_work);

	krpc_conn_lock(rc->conn);
	if (rc->live) {
		krpc_rdma_refill_locked(rc);
		krpc_rdma_flush_locked(rc);
	}
	krpc_conn_unlock(rc->conn);
}

static void qp_event(struct ib_event *ev, void *ctx)
{
	struct krpc_rdma_conn *rc = ctx;

	switch (ev->event) {
	case IB_EVENT_COMM_EST:
		/*
		 * Data arrived before the RTU: let the CM know, from process
		 * context (comm_est_work).  Devices raise this in atomic
		 * context, mlx4 from its hard interrupt, and ib_cm's cm_id
		 * lock nests a lock that is not interrupt-safe (rdma_cm.c).
		 */
		queue_work(krpc_wq, &rc->comm_est_work);
		break;
	case IB_EVENT_QP_LAST_WQE_REACHED:
	case IB_EVENT_SQ_DRAINED:
		break;
	default:
		pr_err_ratelimited("conn %u: QP event %s\n", rc->conn->id,
				   ib_event_msg(ev->event));
		queue_work(krpc_wq, &rc->qp_err_work);
		break;
	}
}

static void comm_est_work(struct work_struct *work)
{
	struct krpc_rdma_conn *rc = container_of(work, struct krpc_rdma_conn,
						 comm_est_work);

	rdma_notify(rc->cm_id, IB_EVENT_COMM_EST);
}

static void qp_err_work(struct work_struct *work)
{
	krpc_rdma_shutdown_rc(container_of(work, struct krpc_rdma_conn,
					   qp_err_work), -EIO);
}

void krpc_rdma_init_rc(struct krpc_rdma_conn *rc)
{
	INIT_LIST_HEAD(&rc->kdev_node);
	INIT_LIST_HEAD(&rc->mrs);
	INIT_LIST_HEAD(&rc->free_sctx);
	INIT_LIST_HEAD(&rc->sendq);
	INIT_LIST_HEAD(&rc->early_rx);
	INIT_LIST_HEAD(&rc->wait_sctx);
	INIT_LIST_HEAD(&rc->unsig);
	rc->unsig_cqe.done = krpc_rdma_unsig_done;
	INIT_WORK(&rc->teardown_work, krpc_rdma_teardown_work);
	INIT_DELAYED_WORK(&rc->refill_work, refill_work);
	init_waitqueue_func_entry(&rc->pool_wait, refill_wake);
	INIT_WORK(&rc->qp_err_work, qp_err_work);
	INIT_WORK(&rc->comm_est_work, comm_est_work);
	init_completion(&rc->cm_established);
	timer_setup(&rc->ka_timer, ka_tick, 0);
}

/*
 * Create the queue pair and everything around it for a connection whose
 * device is known (rc->kdev, rc->cm_id->device), and post the receives.
 * On failure the caller runs krpc_rdma_destroy_resources(), which undoes
 * whatever part was made.
 *
 * Context: process context (rdma_cm callback).
 */
int krpc_rdma_setup(struct krpc_rdma_conn *rc, u32 depth)
{
	struct krpc_conn *conn = rc->conn;
	const struct ib_device_attr *a = &rc->ibdev->attrs;
	struct ib_qp_init_attr qattr = {};
	struct krpc_pool *pool;
	u32 i, max_segs, hdrs_size, chain;
	int ret;

	/* The owner may have chosen the pool (krpc_client_opts.pool). */
	ret = krpc_device_attach(rc->kdev, &rc->kdev_node,
				 conn->pool ? NULL : &pool);
	if (ret)
		return ret;
	if (conn->pool) {
		pool = conn->pool;
		/* Its device went away (krpc_ubuf_device_remove()). */
		if (READ_ONCE(pool->dead))
			return -ENODEV;
		if (pool->ibdev != rc->ibdev)
			return -EXDEV;
	}
	conn->pool = pool;
	rc->depth = depth;
	rc->nr_recv = depth + KRPC_EXTRA_RECVS;
	rc->nr_sctx = 2 * depth + KRPC_NR_CTRL;
	if (a->max_qp_wr < 16 || a->max_send_sge < 3)
		return -EOPNOTSUPP;
	if (rc->nr_recv + 1 > a->max_qp_wr)
		return -EINVAL;
	rc->max_sge = min_t(u32, a->max_send_sge, KRPC_MAX_SGE);
	rc->max_sge_rd = clamp_t(u32, a->max_sge_rd, 1, KRPC_MAX_SGE);
	max_segs = krpc_pool_max_segs(pool);
	/*
	 * Send-queue slots: four per call (a call's REG_MRs and SEND, or a
	 * request's READ and its reply), and the longest chain, which is
	 * posted whole (a whole message's READs, or a reply's WRITEs and
	 * its SEND: a 16 MiB message is 16 of either at 16 SGEs), beside the
	 * quarter of the queue unsignaled SENDs may hold (rdma.c).  Without
	 * the chain's room a small depth could never move the largest
	 * message.
	 */
	chain = max3(3U, DIV_ROUND_UP(max_segs, rc->max_sge_rd),
		     DIV_ROUND_UP(max_segs, rc->max_sge) + 1);
	rc->sq_size = min_t(u32, 4 * depth + 2 * KRPC_NR_CTRL,
			    a->max_qp_wr - 1);
	rc->sq_size = max(rc->sq_size, DIV_ROUND_UP(4 * chain, 3) + 1);
	if (rc->sq_size > a->max_qp_wr - 1) {
		pr_err("conn %u: %s: %u send-queue entries needed, %d allowed: lower depth or max_msg\n",
		       conn->id, dev_name(&rc->ibdev->dev), rc->sq_size,
		       a->max_qp_wr - 1);
		return -EINVAL;
	}
	/*
	 * One spare page: rxe before the 6.4 rework walks one map entry past
	 * the end of an MR whose page count is an exact multiple of 256
	 * (KASAN: slab-out-of-bounds in rxe_mr_copy on a 16 MiB reply).
	 */
	rc->mr_pages = max_segs + 1;
	rc->features = KRPC_WFEAT_KA;
	if ((a->device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS) &&
	    rc->mr_pages <= a->max_fast_reg_page_list_len)
		rc->features = KRPC_WFEAT_ALL;
	else
		pr_warn("conn %u: %s cannot register %u pages: no rendezvous\n",
			conn->id, dev_name(&rc->ibdev->dev), rc->mr_pages);

	rc->nr_sge = max_segs + 4;
	rc->nr_wr = max_segs + 4;
	/*
	 * Unsignaled SENDs (rdma.c) may hold a quarter of the queue, slots
	 * that only a later signaled request returns: the sizing above
	 * leaves the longest chain room beside them.  At most
	 * KRPC_UNSIG_MAX: each may keep a pool buffer meanwhile.
	 */
	rc->unsig_max = krpc_param(unsignaled) ?
			min_t(u32, rc->sq_size / 4, KRPC_UNSIG_MAX) : 0;
	rc->sge = kcalloc(rc->nr_sge, sizeof(*rc->sge), GFP_KERNEL);
	rc->wr = kcalloc(rc->nr_wr, sizeof(*rc->wr), GFP_KERNEL);
	rc->rx = kcalloc(rc->nr_recv, sizeof(*rc->rx), GFP_KERNEL);
	rc->marks = kcalloc(rc->sq_size, sizeof(*rc->marks), GFP_KERNEL);
	if (rc->unsig_max) {
		rc->unsig_mask = roundup_pow_of_two(rc->unsig_max) - 1;
		rc->unsig_bufs = kcalloc(rc->unsig_mask + 1,
					 sizeof(*rc->unsig_bufs), GFP_KERNEL);
		if (!rc->unsig_bufs)
			return -ENOMEM;
	}
	if (conn->server)
		rc->acks = kcalloc(depth, sizeof(*rc->acks), GFP_KERNEL);
	else
		rc->cancel_ids = kcalloc(depth, sizeof(*rc->cancel_ids),
					 GFP_KERNEL);
	hdrs_size = rc->nr_sctx * KRPC_HDR_SIZE;
	rc->hdrs = kzalloc(hdrs_size, GFP_KERNEL);
	if (!rc->sge || !rc->wr || !rc->rx || !rc->marks || !rc->hdrs ||
	    (!rc->acks && !rc->cancel_ids))
		return -ENOMEM;
	rc->hdrs_dma = ib_dma_map_single(rc->ibdev, rc->hdrs, hdrs_size,
					 DMA_TO_DEVICE);
	if (ib_dma_mapping_error(rc->ibdev, rc->hdrs_dma)) {
		rc->hdrs_dma = 0;
		return -ENOMEM;
	}

	/*
	 * The teardown walks every send context as soon as rc->sctx is set,
	 * whatever failed later: they are made whole at once.
	 */
	rc->sctx = kcalloc(rc->nr_sctx, sizeof(*rc->sctx), GFP_KERNEL);
	if (!rc->sctx)
		return -ENOMEM;
	for (i = 0; i < rc->nr_sctx; i++) {
		struct krpc_sctx *sctx = &rc->sctx[i];

		sctx->rc = rc;
		sctx->hdr = (void *)rc->hdrs + i * KRPC_HDR_SIZE;
		sctx->hdr_dma = rc->hdrs_dma + i * KRPC_HDR_SIZE;
		sctx->cqe.done = krpc_rdma_send_done;
		INIT_LIST_HEAD(&sctx->unode);
		list_add_tail(&sctx->node, &rc->free_sctx);
	}
	rc->nr_free_sctx = rc->nr_sctx;

	rc->cq_size = rc->sq_size + 1 + rc->nr_recv + 1;
	ret = krpc_rdma_create_cq(rc);
	if (ret)
		return ret;

	qattr.event_handler = qp_event;
	qattr.qp_context = rc;
	qattr.send_cq = rc->cq;
	qattr.recv_cq = rc->cq;
	qattr.sq_sig_type = IB_SIGNAL_REQ_WR;
	qattr.qp_type = IB_QPT_RC;
	qattr.cap.max_send_wr = rc->sq_size + 1;	/* + drain */
	qattr.cap.max_recv_wr = rc->nr_recv + 1;	/* + drain */
	qattr.cap.max_send_sge = rc->max_sge;
	qattr.cap.max_recv_sge = 1;
	ret = krpc_rdma_create_qp(rc, &qattr);
	if (ret)
		return ret;

	/* Only clients expose memory; servers READ and WRITE. */
	if (!conn->server && (rc->features & KRPC_WFEAT_RDV)) {
		ret = krpc_rdma_create_mrs(rc, depth);
		if (ret)
			return ret;
	}

	krpc_conn_lock(conn);
	rc->sq_avail = rc->sq_size;
	rc->unsig_posted = 0;
	rc->unsig_done = 0;
	rc->mark_head = 0;
	rc->mark_tail = 0;
	/*
	 * Half the receives (see credit_update_due()), and at least 3: with
	 * 2, a depth-1 connection whose replies leave after the next receive
	 * (the user path) answers every CREDIT with one.  At most nr_recv - 2
	 * (nr_recv is at least 5), so below the threshold the peer holds at
	 * least 3 credits, what a call or reply needs (data_credit_ok(),
	 * KRPC_CTRL_CREDITS + 1); the keepalive timer returns what stays
	 * below the threshold.
	 */
	rc->credit_thresh = max_t(u32, 3, DIV_ROUND_UP(rc->nr_recv, 2));
	for (i = 0; i < rc->nr_recv; i++) {
		struct krpc_rx *rx = &rc->rx[i];

		rx->rc = rc;
		rx->cqe.done = krpc_rdma_recv_done;
		rx->buf = krpc_pool_get_recv(pool);
		if (IS_ERR(rx->buf)) {
			ret = PTR_ERR(rx->buf);
			rx->buf = NULL;
			pr_warn_ratelimited("conn %u: no pool buffer for receive %u of %u: lower depth or free buffers (%d)\n",
					    conn->id, i + 1, rc->nr_recv, ret);
			break;
		}
		ret = krpc_rdma_post_recv_locked(rc, rx);
		if (ret)
			break;
	}
	/* The handshake announces these receives as the initial credits. */
	rc->grant_pending = 0;
	krpc_conn_unlock(conn);
	return ret;
}

/* The handshake is done: @peer_credits receives wait at the peer. */
void krpc_rdma_go_live_locked(struct krpc_rdma_conn *rc, u32 peer_credits)
{
	lockdep_assert_held(&rc->conn->lock);
	rc->send_credits = peer_credits;
	rc->peer_credits = peer_credits;
	rc->last_rx = jiffies;
	rc->last_tx = jiffies;
	rc->live = true;
}

/*
 * After ib_drain_qp(): no work request is outstanding, no completion
 * handler runs.  Destroy the MRs first (that fences every key the peer
 * still knows), then fail what the transport held, releasing buffers.
 */
void krpc_rdma_release_all(struct krpc_rdma_conn *rc)
{
	struct krpc_conn *conn = rc->conn;
	struct krpc_req *req, *tmp;
	unsigned int i;

	krpc_conn_lock(conn);
	rc->live = false;
	if (rc->sctx) {
		for (i = 0; i < rc->nr_sctx; i++)
			krpc_mr_put_all_locked(&rc->sctx[i]);
	}
	krpc_conn_unlock(conn);
	if (rc->qp && !list_empty(&rc->mrs))
		ib_mr_pool_destroy(rc->qp, &rc->mrs);

	krpc_conn_lock(conn);
	while (!list_empty(&rc->sendq))
		list_del_init(rc->sendq.next);
	rc->nr_cancel = 0;
	rc->nr_await = 0;
	rc->nr_acks = 0;
	for (i = 0; rc->sctx && i < rc->nr_sctx; i++) {
		struct krpc_sctx *sctx = &rc->sctx[i];

		krpc_rdma_unsig_forget_locked(sctx);
		sctx->ops = 0;
		sctx->wr_pending = 0;
		sctx->await_ack = false;
		if (sctx->call) {
			struct krpc_call *call = sctx->call;

			krpc_call_result_locked(call, conn->reason, 0, NULL);
			if (!sctx->released)
				krpc_call_xprt_done_locked(call);
			krpc_call_replied_locked(call);
			sctx->call = NULL;
			krpc_call_slot_release_locked(call);
		}
		if (sctx->req) {
			krpc_req_free_locked(sctx->req);
			sctx->req = NULL;
		}
		krpc_buf_put(sctx->rbuf);
		sctx->rbuf = NULL;
	}
	list_for_each_entry_safe(req, tmp, &rc->wait_sctx, node) {
		list_del_init(&req->node);
		krpc_req_free_locked(req);
	}
	for (i = 0; rc->unsig_bufs && i <= rc->unsig_mask; i++)
		krpc_rdma_unsig_unhold_locked(rc, i);
	krpc_conn_unlock(conn);
}

void krpc_rdma_destroy_resources(struct krpc_rdma_conn *rc)
{
	unsigned int i;

	if (rc->qp) {
		rdma_destroy_qp(rc->cm_id);
		rc->qp = NULL;
	}
	if (rc->pcq) {
		krpc_rdma_poll_cq_destroy(rc);
	} else if (rc->ecq) {
		krpc_rdma_ecq_destroy(rc);
	} else if (rc->cq) {
		ib_cq_pool_put(rc->cq, rc->cq_size);
		rc->cq = NULL;
	}
	for (i = 0; rc->rx && i < rc->nr_recv; i++) {
		krpc_buf_put(rc->rx[i].buf);
		rc->rx[i].buf = NULL;
	}
	if (rc->hdrs_dma)
		ib_dma_unmap_single(rc->ibdev, rc->hdrs_dma,
				    rc->nr_sctx * KRPC_HDR_SIZE, DMA_TO_DEVICE);
	rc->hdrs_dma = 0;
	kfree(rc->hdrs);
	rc->hdrs = NULL;
	kfree(rc->rx);
	rc->rx = NULL;
	kfree(rc->marks);
	rc->marks = NULL;
	kfree(rc->unsig_bufs);
	rc->unsig_bufs = NULL;
	kfree(rc->cancel_ids);
	rc->cancel_ids = NULL;
	kfree(rc->acks);
	rc->acks = NULL;
	kfree(rc->sctx);
	rc->sctx = NULL;
	kfree(rc->wr);
	rc->wr = NULL;
	kfree(rc->sge);
	rc->sge = NULL;
}

void krpc_rdma_free(struct krpc_conn *conn)
{
	kfree(conn->xprt);
	conn->xprt = NULL;
}
