// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA transport, receive side: validation and dispatch of every message.
 *
 * Nothing from the peer is used before it is checked: the length of what
 * arrived against the header, every length against the negotiated maximum,
 * call slots against the depth, flags and reserved fields, credits against
 * what the peer can have, invalidated keys against the keys we granted.
 * A message that fails a check closes the connection with a logged reason;
 * it never indexes or copies anything.
 */
#include "rdma.h"
#include "pool.h"


/* What arrived, validated generically, for the per-type handlers. */
struct rx_msg {
	struct krpc_rx *rx;
	const struct krpc_wire_hdr *hdr;	/* &@hcopy */
	/*
	 * The header is parsed from this copy, never in place: the receive
	 * buffer may be mapped into a process (/dev/krpc pools), which could
	 * change it between a check and a use.
	 */
	struct krpc_wire_hdr hcopy;
	u32 inline_len;		/* payload bytes after the header */
	u32 len;		/* hdr.len */
	u64 call_id;
	u32 inv_rkey;		/* key the peer invalidated, if @inv */
	bool inv;
	const char *why;	/* protocol error reason */
};

static int bad(struct rx_msg *m, const char *why)
{
	m->why = why;
	return -EPROTO;
}

/* Take the receive buffer for a call or request: zero-copy hand-off. */
static struct krpc_buf *take_inline(struct krpc_rdma_conn *rc, struct rx_msg *m)
{
	struct krpc_buf *buf = m->rx->buf;

	m->rx->buf = NULL;
	rc->starved++;
	buf->off = KRPC_HDR_SIZE;
	buf->len = m->len;
	return buf;
}

static int rdv_check(struct rx_msg *m, const struct krpc_wire_rdv *w,
		     struct krpc_xrdv *x, u32 max)
{
	u64 end;

	x->addr = le64_to_cpu(w->addr);
	x->rkey = le32_to_cpu(w->rkey);
	x->len = le32_to_cpu(w->len);
	if (!x->len || x->len > max)
		return bad(m, "rendezvous region length out of range");
	if (check_add_overflow(x->addr, (u64)x->len, &end))
		return bad(m, "rendezvous region wraps around");
	return 0;
}

static int rx_request(struct krpc_rdma_conn *rc, struct rx_msg *m)
{
	struct krpc_conn *conn = rc->conn;
	const struct krpc_wire_hdr *hdr = m->hdr;
	bool oneway = hdr->type == KRPC_MSG_ONEWAY;
	struct krpc_req *req;
	int ret;

	if (hdr->status)
		return bad(m, "request with a status");
	if ((hdr->flags & KRPC_WF_RDV_REQ) && m->len <= conn->inline_max)
		return bad(m, "rendezvous for an inline-sized payload");
	if (!(hdr->flags & KRPC_WF_RDV_REQ) && m->len > conn->inline_max)
		return bad(m, "inline payload beyond the inline size");
	req = krpc_req_alloc_locked(conn, oneway, m->call_id,
				    le32_to_cpu(hdr->method));
	if (IS_ERR(req)) {
		if (PTR_ERR(req) == -ENOMEM)
			return PTR_ERR(req);
		return bad(m, "call slot beyond the depth or still busy");
	}
	if (hdr->flags & KRPC_WF_RDV_REPLY) {
		ret = rdv_check(m, &hdr->rep, &req->xrdv[1], conn->max_msg);
		if (ret)
			goto out_free;
		req->reply_max = max(req->reply_max, req->xrdv[1].len);
	}
	if (hdr->flags & KRPC_WF_RDV_REQ) {
		ret = rdv_check(m, &hdr->req, &req->xrdv[0], conn->max_msg);
		if (ret)
			goto out_free;
		if (req->xrdv[0].len != m->len) {
			ret = bad(m, "rendezvous region length differs from the payload");
			goto out_free;
		}
		krpc_rdma_read_req_locked(rc, req);
		return 0;
	}
	if (m->len) {
		req->payload = take_inline(rc, m);
		krpc_conn_stat_add(conn, KRPC_STAT_BYTES_RX, m->len);
	}
	krpc_req_start_locked(req);
	return 0;

out_free:
	/* Never started: the connection dies with the request. */
	krpc_req_free_locked(req);
	return ret;
}

static int reply_status(struct rx_msg *m, int *status)
{
	u32 ws = le32_to_cpu(m->hdr->status);

	if (m->hdr->type == KRPC_MSG_REPLY) {
		if (ws)
			return bad(m, "reply with a status");
		*status = 0;
		return 0;
	}
	if (ws == KRPC_WS_NO_METHOD)
		*status = -EBADRQC;
	else if (ws && ws <= KRPC_WS_ERRNO_MAX)
		*status = -(int)ws;
	else
		return bad(m, "error reply with a bad status");
	if (m->len)
		return bad(m, "error reply with a payload");
	return 0;
}

static int rx_reply(struct krpc_rdma_conn *rc, struct rx_msg *m)
{
	struct krpc_conn *conn = rc->conn;
	struct krpc_buf *reply = NULL;
	struct krpc_sctx *sctx;
	struct krpc_call *call;
	int status, ret;
	unsigned int i;
	bool stale;

	if (m->hdr->method)
		return bad(m, "reply with a method");
	ret = reply_status(m, &status);
	if (ret)
		return ret;
	/* Timed-out and cancelled calls keep their slot: still found. */
	call = krpc_call_find_locked(conn, m->call_id);
	if (!call)
		return bad(m, "reply for an unknown call");
	sctx = call->xprt;
	if (sctx->ops & OP_REQ)
		return bad(m, "reply for a call not sent yet");
	if (call->flags & KRPC_CALL_ONEWAY)
		return bad(m, "reply for a one-way message");
	if (m->inv) {
		for (i = 0; i < ARRAY_SIZE(sctx->mr); i++) {
			if (sctx->mr[i] && sctx->mr_state[i] != MR_NONE &&
			    sctx->mr[i]->rkey == m->inv_rkey)
				break;
		}
		if (i == ARRAY_SIZE(sctx->mr))
			return bad(m, "remote invalidation of a key not granted");
		sctx->mr_state[i] = MR_DEAD;
		krpc_sctx_inv_moot_locked(sctx);
	}
	/* Late (after a timeout or cancel): checked, then dropped. */
	stale = call->state & CALL_RESULT;
	if (m->hdr->flags & KRPC_WF_WRITTEN) {
		/*
		 * A stale call's region is still held for this answer, or
		 * fenced (no KRPC_WFEAT_CANCEL_ACK): what was written is
		 * ignored.
		 */
		if (stale) {
			if (sctx->mr_state[1] == MR_NONE)
				return bad(m, "written reply without a region");
		} else {
			if (!call->reply_dst || sctx->mr_state[1] == MR_NONE ||
			    m->len > call->reply_dst->size)
				return bad(m, "written reply without a fitting region");
			reply = call->reply_dst;
			krpc_buf_sync(reply, 0, m->len, false);
			reply->off = 0;
			reply->len = m->len;
		}
	} else {
		if (m->len > conn->inline_max)
			return bad(m, "inline reply beyond the inline size");
		if (m->len)
			reply = take_inline(rc, m);
	}
	krpc_conn_stat_add(conn, KRPC_STAT_BYTES_RX, m->len);
	krpc_conn_stat_inc(conn, KRPC_STAT_REPLIES);
	/* The answer to a CANCEL: the server is done with the keys. */
	krpc_sctx_await_end_locked(sctx);
	if (stale) {
		krpc_conn_stat_inc(conn, KRPC_STAT_STALE);
		krpc_rdma_cancel_forget_locked(rc, call->id);
		krpc_buf_put(reply);
	} else {
		krpc_call_result_locked(call, status,
					status ? KRPC_RES_REMOTE : 0, reply);
	}
	sctx->replied = true;
	krpc_call_replied_locked(call);
	krpc_rdma_sctx_progress_locked(sctx);
	return 0;
}

static int rx_control(struct krpc_rdma_conn *rc, struct rx_msg *m)
{
	struct krpc_req *req;

	if (m->hdr->method || m->hdr->status || m->len)
		return bad(m, "control message with fields set");
	if (m->hdr->type != KRPC_MSG_CANCEL) {
		if (m->call_id)
			return bad(m, "control message with a call id");
		return 0;
	}
	/* Test knob: as if the CANCEL came after the reply was posted. */
	if (READ_ONCE(krpc_fault_drop_cancel))
		return 0;
	req = krpc_req_cancel_locked(rc->conn, m->call_id);
	if (req && krpc_rdma_cancel_ack_locked(rc, req))
		return bad(m, "cancels of slots reused before their answer");
	return 0;
}

/*
 * One entry per message type: the handler, the header flags the type may
 * carry, and which side may receive it.
 */
static const struct krpc_msg_def {
	int (*rx)(struct krpc_rdma_conn *rc, struct rx_msg *m);
	u8 flags;
	bool to_server;
	bool to_client;
} msg_defs[] = {
	[KRPC_MSG_REQUEST]	= { rx_request,
				    KRPC_WF_RDV_REQ | KRPC_WF_RDV_REPLY,
				    true, false },
	[KRPC_MSG_REPLY]	= { rx_reply, KRPC_WF_WRITTEN, false, true },
	[KRPC_MSG_ERROR]	= { rx_reply, 0, false, true },
	[KRPC_MSG_ONEWAY]	= { rx_request, 0, true, false },
	[KRPC_MSG_CREDIT]	= { rx_control, 0, true, true },
	[KRPC_MSG_KEEPALIVE]	= { rx_control, 0, true, true },
	[KRPC_MSG_CANCEL]	= { rx_control, 0, true, false },
};

static_assert(ARRAY_SIZE(msg_defs) == KRPC_MSG_NR);

int krpc_rdma_msg_table_check(void)
{
	unsigned int t;

	for (t = 1; t < KRPC_MSG_NR; t++)
		if (WARN_ON(!msg_defs[t].rx))
			return -EINVAL;
	return 0;
}

static int rx_process(struct krpc_rdma_conn *rc, struct rx_msg *m,
		      struct ib_wc *wc)
{
	static const struct krpc_wire_rdv zero_rdv;
	struct krpc_conn *conn = rc->conn;
	const struct krpc_msg_def *d;
	const struct krpc_wire_hdr *hdr;
	u32 grant;

	if (wc->byte_len < KRPC_HDR_SIZE)
		return bad(m, "message shorter than the header");
	krpc_buf_sync(m->rx->buf, 0, wc->byte_len, false);
	memcpy(&m->hcopy, m->rx->buf->vaddr, sizeof(m->hcopy));
	hdr = &m->hcopy;
	m->hdr = hdr;
	m->inline_len = wc->byte_len - KRPC_HDR_SIZE;
	m->len = le32_to_cpu(hdr->len);
	m->call_id = le64_to_cpu(hdr->call_id);

	if (!hdr->type || hdr->type >= KRPC_MSG_NR)
		return bad(m, "unknown message type");
	d = &msg_defs[hdr->type];
	if (conn->server ? !d->to_server : !d->to_client)
		return bad(m, "message type not for this side");
	if (hdr->flags & ~d->flags)
		return bad(m, "flags not allowed for the type");
	if ((hdr->flags & (KRPC_WF_RDV_REQ | KRPC_WF_RDV_REPLY |
			   KRPC_WF_WRITTEN)) &&
	    !(rc->features & KRPC_WFEAT_RDV))
		return bad(m, "rendezvous without the feature");
	if (hdr->reserved)
		return bad(m, "reserved field set");
	if (!(hdr->flags & KRPC_WF_RDV_REQ) &&
	    memcmp(&hdr->req, &zero_rdv, sizeof(zero_rdv)))
		return bad(m, "request region without its flag");
	if (!(hdr->flags & KRPC_WF_RDV_REPLY) &&
	    memcmp(&hdr->rep, &zero_rdv, sizeof(zero_rdv)))
		return bad(m, "reply region without its flag");
	if (m->len > conn->max_msg)
		return bad(m, "payload longer than the negotiated maximum");
	if (hdr->flags & (KRPC_WF_RDV_REQ | KRPC_WF_WRITTEN)) {
		if (m->inline_len)
			return bad(m, "inline bytes with a rendezvous payload");
	} else if (m->inline_len != m->len) {
		return bad(m, "payload length differs from what arrived");
	}

	grant = le16_to_cpu(hdr->credits);
	if (rc->send_credits + grant > rc->peer_credits)
		return bad(m, "credits beyond the peer's receives");
	rc->send_credits += grant;

	m->inv = wc->wc_flags & IB_WC_WITH_INVALIDATE;
	if (m->inv) {
		if (hdr->type != KRPC_MSG_REPLY && hdr->type != KRPC_MSG_ERROR)
			return bad(m, "invalidation on a message that cannot carry it");
		m->inv_rkey = wc->ex.invalidate_rkey;
	}
	return d->rx(rc, m);
}

/* KEEPALIVE, CREDIT or CANCEL (msg_defs): a message that brings no request. */
static bool ctrl_msg(const struct krpc_wire_hdr *hdr)
{
	return msg_defs[hdr->type].rx == rx_control;
}

/* A successful receive on a live connection; called under conn->lock. */
static void recv_one_locked(struct krpc_rdma_conn *rc, struct krpc_rx *rx,
			    struct ib_wc *wc)
{
	struct krpc_conn *conn = rc->conn;
	struct rx_msg m = { .rx = rx };
	int ret;

	rc->last_rx = jiffies;
	/* The teardown tells the CM the client is established (rdma_cm.c). */
	if (conn->server)
		WRITE_ONCE(rc->rx_seen, true);
	ret = rx_process(rc, &m, wc);
	if (ret) {
		if (m.why) {
			atomic64_inc(&krpc_stats.protocol_errors);
			pr_err_ratelimited("conn %u: protocol error from %pISpc: %s (type %u, call %#llx); closing\n",
					   conn->id, &conn->peer, m.why,
					   m.hdr ? m.hdr->type : 0, m.call_id);
		} else {
			pr_err_ratelimited("conn %u: cannot process a message: %d; closing\n",
					   conn->id, ret);
		}
		krpc_rdma_fail_locked(rc, ret);
		return;
	}
	if (krpc_rdma_reqs_held(rc) && !ctrl_msg(m.hdr)) {
		/*
		 * At the request bound (one-way messages held by slow
		 * handlers): the receive of a request is withheld, and with
		 * it the credit, which holds the client back as TCP's paused
		 * reader does.  krpc_rdma_req_freed() refills it.  A control
		 * message's receive is reposted: it returns only the credit
		 * it cost, which a client keeps for its control messages
		 * (rdma.c), so keepalives and credit updates still flow both
		 * ways and neither side takes the other for dead.
		 */
		if (rx->buf) {
			krpc_buf_put(rx->buf);
			rx->buf = NULL;
			rc->starved++;
		}
	} else if (rx->buf) {
		krpc_rdma_post_recv_locked(rc, rx);
	} else {
		krpc_rdma_refill_locked(rc);
	}
	krpc_rdma_flush_locked(rc);
}

void krpc_rdma_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct krpc_rx *rx = container_of(wc->wr_cqe, struct krpc_rx, cqe);
	struct krpc_rdma_conn *rc = rx->rc;
	struct krpc_conn *conn = rc->conn;

	krpc_conn_lock(conn);
	rc->recv_posted--;
	if (unlikely(wc->status != IB_WC_SUCCESS)) {
		krpc_rdma_wc_failed_locked(rc, wc, "receive");
	} else if (rc->live) {
		recv_one_locked(rc, rx, wc);
	} else if (conn->state == KRPC_CONN_CONNECTING) {
		/*
		 * A client's queue pair is ready to receive when the REP
		 * arrives, before its ESTABLISHED event is handled, and the
		 * server is live from its accept: its keepalive can come
		 * first.  Dropping it would lose the receive and the credit
		 * it stands for, so it waits for krpc_rdma_early_rx_locked().
		 */
		rx->early_len = wc->byte_len;
		rx->early_flags = wc->wc_flags;
		rx->early_rkey = wc->ex.invalidate_rkey;
		list_add_tail(&rx->early, &rc->early_rx);
		atomic64_inc(&krpc_stats.early_rx);
	}
	krpc_conn_unlock(conn);
}

/*
 * The client went live: process the receives that completed before, in
 * the order they completed.  A message that fails stops the rest: the
 * connection is failing and its teardown releases their buffers.
 */
void krpc_rdma_early_rx_locked(struct krpc_rdma_conn *rc)
{
	struct krpc_rx *rx;
	struct ib_wc wc;

	lockdep_assert_held(&rc->conn->lock);
	while (rc->live && !list_empty(&rc->early_rx)) {
		rx = list_first_entry(&rc->early_rx, struct krpc_rx, early);
		list_del(&rx->early);
		memset(&wc, 0, sizeof(wc));
		wc.wr_cqe = &rx->cqe;
		wc.status = IB_WC_SUCCESS;
		wc.opcode = IB_WC_RECV;
		wc.byte_len = rx->early_len;
		wc.wc_flags = rx->early_flags;
		wc.ex.invalidate_rkey = rx->early_rkey;
		recv_one_locked(rc, rx, &wc);
	}
	INIT_LIST_HEAD(&rc->early_rx);
}
