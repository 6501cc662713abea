// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA transport: cancellation.  A client's aborted call (timed out or
 * cancelled: its CANCEL, and the keys and buffers it keeps until the
 * server answers) and a server's answer to a CANCEL.  All under
 * conn->lock; the wire side is in Documentation/protocol.rst ("Calls" and
 * "Key invalidation").
 */

#include "rdma.h"

/* Transport operation: @call timed out or was cancelled, under conn->lock. */
void krpc_rdma_abort_call(struct krpc_conn *conn, struct krpc_call *call)
{
	struct krpc_rdma_conn *rc = to_rc(conn);
	struct krpc_sctx *sctx = call->xprt;

	lockdep_assert_held(&conn->lock);
	if (!sctx || !rc->live)
		return;
	sctx->aborted = true;
	if (sctx->ops & OP_REQ) {
		/* Never sent: the peer never saw the id, the slot is free. */
		sctx->ops &= ~OP_REQ;
		if (!sctx->ops)
			list_del_init(&sctx->node);
		sctx->replied = true;
		krpc_call_replied_locked(call);
	} else if (!(call->flags & KRPC_CALL_ONEWAY)) {
		/*
		 * Once per call; the call holds its slot until it is
		 * answered, which also takes back a CANCEL not yet sent
		 * (rx_reply()): at most depth wait.
		 */
		if (rc->nr_cancel < rc->depth)
			rc->cancel_ids[rc->nr_cancel++] = call->id;
		/*
		 * The server may have posted a WRITE to the reply room or a
		 * READ of the request before the CANCEL reaches it: keep the
		 * keys, and the buffers, until it answers.  It answers at
		 * once (KRPC_WFEAT_CANCEL_ACK), not when the handler is done.
		 */
		if ((rc->features & KRPC_WFEAT_CANCEL_ACK) &&
		    krpc_sctx_key_valid(sctx)) {
			sctx->await_ack = true;
			sctx->abort_at = jiffies;
			rc->nr_await++;
		}
	} else if (krpc_sctx_unsig(sctx)) {
		/*
		 * No CANCEL follows the unsignaled request: a KEEPALIVE's
		 * completion says it went out, and the call can complete.
		 */
		rc->want_ka = true;
	}
	krpc_rdma_sctx_progress_locked(sctx);
	krpc_rdma_flush_locked(rc);
}

/* Client: @call_id was answered; a CANCEL for it still queued is moot. */
void krpc_rdma_cancel_forget_locked(struct krpc_rdma_conn *rc, u64 call_id)
{
	u32 i;

	lockdep_assert_held(&rc->conn->lock);
	for (i = 0; i < rc->nr_cancel; i++) {
		if (rc->cancel_ids[i] == call_id) {
			rc->cancel_ids[i] = rc->cancel_ids[--rc->nr_cancel];
			return;
		}
	}
}

/*
 * A cancelled request's reply (queued, or waiting for a send context) or
 * READ (the reply follows it) goes first; the receive path's flush sends
 * it.  A READ in flight queues its reply when it completes.
 */
static void answer_first_locked(struct krpc_rdma_conn *rc,
				struct krpc_req *req)
{
	struct krpc_sctx *sctx;
	struct krpc_req *r;

	list_for_each_entry(sctx, &rc->sendq, node) {
		if (sctx->req == req) {
			list_move(&sctx->node, &rc->sendq);
			return;
		}
	}
	list_for_each_entry(r, &rc->wait_sctx, node) {
		if (r == req) {
			list_move(&req->node, &rc->wait_sctx);
			return;
		}
	}
}

/*
 * Server, CANCEL received for @req (found by its slot; REQ_CANCELLED set).
 * A request that granted keys holds the client's buffers until it is
 * answered.  While its handler runs, answer now (ERROR ECANCELED,
 * invalidating a key as its reply would) and free the slot; the handler's
 * reply is dropped when it comes (REQ_ANSWERED, krpc_req_reply()).  One
 * still being read is answered once its payload is in, without its handler
 * (krpc_req_start_locked()); one whose reply is queued is answered by it.
 * Those answers are control messages (krpc_rdma_answers_cancel()) and go
 * to the head of the send queue (krpc_sctx_queue_locked()), so they go out
 * while data waits for credits: answer_first_locked() moves one already
 * queued, or waiting for a send context, to the head of its queue.
 *
 * Return: 0, or -EPROTO for a client that reused slots before their
 * answers went out (each queued answer freed a slot that an honest client
 * reuses only once it has the answer: at most depth are queued).
 */
int krpc_rdma_cancel_ack_locked(struct krpc_rdma_conn *rc,
				struct krpc_req *req)
{
	struct krpc_cancel_ack *ack;

	lockdep_assert_held(&rc->conn->lock);
	if (!rc->live || !krpc_rdma_answers_cancel(rc, req) ||
	    (req->flags & REQ_ANSWERED))
		return 0;
	if ((req->flags & REQ_REPLIED) || !(req->flags & REQ_STARTED)) {
		answer_first_locked(rc, req);
		return 0;
	}
	if (rc->nr_acks >= rc->depth)
		return -EPROTO;
	ack = &rc->acks[rc->nr_acks++];
	ack->call_id = req->call_id;
	ack->inv = krpc_rdma_req_inv_rkey(rc, req, &ack->inv_rkey);
	req->flags |= REQ_ANSWERED;
	krpc_req_slot_release_locked(req);
	krpc_rdma_flush_locked(rc);
	return 0;
}
