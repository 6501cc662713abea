// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA transport, send side: posting, flow control and the transport
 * operations (send contexts and send completions: rdma_sctx.c; aborted
 * calls and cancelled requests: rdma_cancel.c).
 *
 * Flow control.  Each side posts nr_recv receives and tells the peer in the
 * handshake; the peer may send that many messages.  Every message carries
 * in hdr.credits the receives its sender reposted since its previous
 * message.  A sender never has more messages in flight than the receiver
 * has posted receives, so a receiver-not-ready NAK cannot happen (the QP's
 * rnr_retry is 0 by default, which makes one fatal and visible).  The last
 * credit is only spent by a message that returns credits (RDS's rule): two
 * sides that both hold credits to return can never both be stuck at zero.
 * A call, reply or one-way message also leaves KRPC_CTRL_CREDITS to control
 * messages (data_credit_ok(); a reply that answers a CANCEL is one:
 * krpc_rdma_answers_cancel()), so that a side whose pool cannot refill its
 * receives still takes the peer's keepalives and credit updates, and both
 * keep hearing from each other while the data waits.
 *
 * Send-queue slots.  A chain is posted only when all its slots are free;
 * one slot stays reserved for ib_drain_qp().  Work that cannot go out
 * waits on rc->sendq, in order.  Each completion, successful or flushed,
 * returns its slot.
 *
 * Unsignaled SENDs (as brpc and xprtrdma batch them; module parameter
 * unsignaled).  A client's eager request SEND (no rendezvous, not one-way)
 * is posted without IB_SEND_SIGNALED: no completion, no handler run, no
 * lock round for it.  Its reply says the SEND reached the peer, so the
 * call completes and its context is free when the reply is in, as before.
 * A send queue completes in posting order, so the completion of any later
 * signaled work request says the SEND is done too: rc->marks records, per
 * signaled request, how many unsignaled SENDs preceded it, and its
 * completion returns their slots (rdma_sctx.c).  Until such a completion
 * the device may still read the request (it sends it again if the ACK is
 * lost, or withheld), so its buffer stays with the transport: a call
 * cancelled before its reply waits for the completion; an answered call
 * completes and leaves its buffer in rc->unsig_bufs until then.  A
 * request whose buffer goes back to its owner with the call (a process's
 * pool, ubuf.c) is signaled, as are one-way and rendezvous requests.
 * At most rc->unsig_max (KRPC_UNSIG_MAX, or a quarter of the queue if
 * less) unsignaled SENDs are outstanding; the request that finds no room
 * is signaled.  That leaves the longest chain room once every signaled
 * request completed, so the queue never fills with slots nothing will
 * return (krpc_rdma_setup()).
 *
 * A server's reply stays signaled: its buffer and context go back to the
 * pool on its completion, and no later post is certain to come.
 */

#include "rdma.h"
#include "pool.h"
#include "transport.h"
#include "inject.h"

/* ---------------------------------------------------------------------- */
/* Posting */

/*
 * May a control message go out on the credits the peer granted?  The last
 * credit only with credits to return, so that both sides cannot end up
 * unable to send.
 */
static bool credit_ok(struct krpc_rdma_conn *rc)
{
	return rc->send_credits >= 2 ||
	       (rc->send_credits == 1 && rc->grant_pending);
}

/*
 * A call, reply or one-way message also leaves KRPC_CTRL_CREDITS to the
 * control messages.  A peer whose pool cannot refill its receives (a
 * caller keeping its replies) grants no more; data stops while the two
 * sides can still exchange keepalives and credit updates, so that neither
 * takes the other for dead until its pool refills.
 */
static bool data_credit_ok(struct krpc_rdma_conn *rc)
{
	return rc->send_credits > KRPC_CTRL_CREDITS;
}

void krpc_rdma_fail_locked(struct krpc_rdma_conn *rc, int reason)
{
	lockdep_assert_held(&rc->conn->lock);
	krpc_conn_dead_locked(rc->conn, reason);
	rc->live = false;
	if (!rc->teardown_queued) {
		rc->teardown_queued = true;
		queue_work(krpc_wq, &rc->teardown_work);
	}
}

/*
 * A work request completed in error.  Before the connection is up, a
 * flush comes from rdma_cm moving the QP to error ahead of the event that
 * says why (REJECTED, CONNECT_ERROR, ...): that event decides the connect
 * error, not this completion.
 */
void krpc_rdma_wc_failed_locked(struct krpc_rdma_conn *rc, struct ib_wc *wc,
				const char *what)
{
	struct krpc_conn *conn = rc->conn;

	lockdep_assert_held(&conn->lock);
	if (rc->live)
		pr_err_ratelimited("conn %u: %s completion: %s (vendor %#x)\n",
				   conn->id, what,
				   ib_wc_status_msg(wc->status),
				   wc->vendor_err);
	if (rc->live || conn->state != KRPC_CONN_CONNECTING)
		krpc_rdma_fail_locked(rc, -ECONNRESET);
}

void krpc_rdma_shutdown_rc(struct krpc_rdma_conn *rc, int reason)
{
	krpc_conn_lock(rc->conn);
	krpc_rdma_fail_locked(rc, reason);
	krpc_conn_unlock(rc->conn);
}

/* The send verb, as a fault-injection point (inject.h). */
static KRPC_FAULT_POINT int krpc_rdma_ib_post_send(struct ib_qp *qp,
						 const struct ib_send_wr *wr,
						 const struct ib_send_wr **bad)
{
	return ib_post_send(qp, wr, bad);
}
ALLOW_ERROR_INJECTION(krpc_rdma_ib_post_send, ERRNO);

/* Account one posted work request of @sctx (see "Unsignaled SENDs"). */
static void account_wr(struct krpc_rdma_conn *rc, struct krpc_sctx *sctx,
		       const struct ib_send_wr *wr)
{
	rc->sq_avail--;
	if (wr->send_flags & IB_SEND_SIGNALED) {
		rc->marks[rc->mark_tail] = rc->unsig_posted;
		if (++rc->mark_tail == rc->sq_size)
			rc->mark_tail = 0;
		sctx->wr_pending++;
		return;
	}
	sctx->useq = rc->unsig_posted++;
	list_add_tail(&sctx->unode, &rc->unsig);
	krpc_conn_stat_inc(rc->conn, KRPC_STAT_UNSIGNALED);
}

/*
 * Post a chain on behalf of @sctx.  @msg: the chain ends in a SEND that
 * takes a credit.  On failure the connection dies; requests posted before
 * the failing one still complete (flushed) and are accounted.
 */
static int post_chain(struct krpc_rdma_conn *rc, struct krpc_sctx *sctx,
		      struct ib_send_wr *first, bool msg)
{
	const struct ib_send_wr *bad = first, *wr;
	int ret;

	/* A failure that did not say where it stopped posted nothing. */
	ret = krpc_rdma_ib_post_send(rc->qp, first, &bad);
	for (wr = first; wr && (!ret || wr != bad); wr = wr->next)
		account_wr(rc, sctx, wr);
	if (ret) {
		pr_err("conn %u: ib_post_send: %d\n", rc->conn->id, ret);
		krpc_rdma_fail_locked(rc, -EIO);
		return ret;
	}
	if (msg) {
		rc->send_credits--;
		rc->last_tx = jiffies;
	}
	return 0;
}

static void hdr_init(struct krpc_rdma_conn *rc, struct krpc_sctx *sctx,
		     u8 type, u8 flags, u32 method, u64 call_id, u32 status,
		     u32 len)
{
	struct krpc_wire_hdr *hdr = sctx->hdr;
	u32 grant = min_t(u32, rc->grant_pending, U16_MAX);

	memset(hdr, 0, sizeof(*hdr));
	hdr->type = type;
	hdr->flags = flags;
	hdr->credits = cpu_to_le16(grant);
	hdr->method = cpu_to_le32(method);
	hdr->call_id = cpu_to_le64(call_id);
	hdr->status = cpu_to_le32(status);
	hdr->len = cpu_to_le32(len);
	rc->grant_pending -= grant;
	/* The keepalive tick's request is met: a later grant waits its turn. */
	if (!rc->grant_pending)
		rc->want_credit = false;
}

static void send_wr_init(struct krpc_rdma_conn *rc, struct krpc_sctx *sctx,
			 struct ib_send_wr *wr, struct ib_sge *sge,
			 unsigned int nsge)
{
	ib_dma_sync_single_for_device(rc->ibdev, sctx->hdr_dma, KRPC_HDR_SIZE,
				      DMA_TO_DEVICE);
	sge[0].addr = sctx->hdr_dma;
	sge[0].length = KRPC_HDR_SIZE;
	sge[0].lkey = rc->kdev->pd->local_dma_lkey;
	memset(wr, 0, sizeof(*wr));
	wr->opcode = IB_WR_SEND;
	wr->wr_cqe = &sctx->cqe;
	wr->send_flags = IB_SEND_SIGNALED;
	wr->sg_list = sge;
	wr->num_sge = nsge;
}

/* Post @wr unsignaled if there is room for one more (rc->unsig_max). */
static void try_unsignaled(struct krpc_rdma_conn *rc, struct ib_send_wr *wr)
{
	if (rc->unsig_posted - rc->unsig_done >= rc->unsig_max)
		return;
	wr->send_flags &= ~IB_SEND_SIGNALED;
	wr->wr_cqe = &rc->unsig_cqe;
}

/*
 * A control message: CREDIT, KEEPALIVE, CANCEL (@call_id), or a server's
 * answer to a CANCEL (ERROR, @call_id, @ack: the key to invalidate).
 */
static int post_ctrl_locked(struct krpc_rdma_conn *rc, u8 type, u64 call_id,
			    const struct krpc_cancel_ack *ack)
{
	struct krpc_sctx *sctx;
	struct ib_send_wr wr;
	struct ib_sge sge;

	/* A failed post before us in this flush killed the connection. */
	if (!rc->live)
		return -ENOTCONN;
	/* Control messages never take a call's or a reply's context. */
	if (!rc->sq_avail || !credit_ok(rc) || rc->nr_ctrl >= KRPC_NR_CTRL)
		return -EAGAIN;
	sctx = krpc_sctx_get_locked(rc);
	if (!sctx)
		return -EAGAIN;
	rc->nr_ctrl++;
	sctx->ctrl_type = type;
	sctx->ctrl_id = call_id;
	hdr_init(rc, sctx, type, 0, 0, call_id, ack ? ECANCELED : 0, 0);
	send_wr_init(rc, sctx, &wr, &sge, 1);
	if (ack && ack->inv) {
		wr.opcode = IB_WR_SEND_WITH_INV;
		wr.ex.invalidate_rkey = ack->inv_rkey;
	}
	return post_chain(rc, sctx, &wr, true);
}

static int post_inv_locked(struct krpc_rdma_conn *rc, struct krpc_sctx *sctx)
{
	struct ib_send_wr inv[2], *prev = NULL, *first = NULL;
	unsigned int i, n = 0;
	int ret;

	for (i = 0; i < ARRAY_SIZE(sctx->mr); i++) {
		if (sctx->mr_state[i] != MR_VALID)
			continue;
		memset(&inv[n], 0, sizeof(inv[n]));
		inv[n].opcode = IB_WR_LOCAL_INV;
		inv[n].wr_cqe = &sctx->cqe;
		inv[n].send_flags = IB_SEND_SIGNALED;
		inv[n].ex.invalidate_rkey = sctx->mr[i]->rkey;
		if (prev)
			prev->next = &inv[n];
		else
			first = &inv[n];
		prev = &inv[n++];
	}
	if (!n)
		return 0;
	if (rc->sq_avail < n)
		return -EAGAIN;
	ret = post_chain(rc, sctx, first, false);
	if (ret)
		return ret;
	for (i = 0; i < ARRAY_SIZE(sctx->mr); i++)
		if (sctx->mr_state[i] == MR_VALID)
			sctx->mr_state[i] = MR_INV;
	sctx->inv_pending += n;
	return 0;
}

/* Client: register the rendezvous regions and send the request. */
static int post_req_locked(struct krpc_rdma_conn *rc, struct krpc_sctx *sctx)
{
	struct krpc_call *call = sctx->call;
	struct krpc_conn *conn = rc->conn;
	struct krpc_buf *buf = call->req.type == KRPC_PL_BUF ? call->req.buf : NULL;
	struct krpc_buf *rdst = call->reply_dst;
	u32 len = krpc_call_len(call);
	u32 rlen = krpc_call_reply_room(call);
	bool rdv = len > conn->inline_max;
	unsigned int nreg = rdv + !!rdst, nsge = 1, r = 0;
	struct ib_reg_wr reg[2];
	struct ib_send_wr send, *first;
	struct ib_sge sge[3];
	u8 flags = 0;
	int ret;

	if (rc->sq_avail < nreg + 1)
		return -EAGAIN;
	if (!data_credit_ok(rc)) {
		krpc_conn_stat_inc(conn, KRPC_STAT_CREDIT_STALLS);
		return -EAGAIN;
	}
	if (rdv) {
		ret = krpc_mr_map(rc, sctx, 0, buf, buf->off, len,
				  IB_ACCESS_REMOTE_READ, &reg[r++]);
		if (ret)
			goto out_fail;
		flags |= KRPC_WF_RDV_REQ;
	}
	if (rdst) {
		ret = krpc_mr_map(rc, sctx, 1, rdst, 0, rlen,
				  IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE,
				  &reg[r++]);
		if (ret)
			goto out_fail;
		flags |= KRPC_WF_RDV_REPLY;
	}
	hdr_init(rc, sctx, call->flags & KRPC_CALL_ONEWAY ? KRPC_MSG_ONEWAY :
		 KRPC_MSG_REQUEST, flags, call->method, call->id, 0, len);
	if (rdv) {
		sctx->hdr->req.addr = cpu_to_le64(sctx->mr[0]->iova);
		sctx->hdr->req.rkey = cpu_to_le32(sctx->mr[0]->rkey);
		sctx->hdr->req.len = cpu_to_le32(len);
	}
	if (rdst) {
		sctx->hdr->rep.addr = cpu_to_le64(sctx->mr[1]->iova);
		sctx->hdr->rep.rkey = cpu_to_le32(sctx->mr[1]->rkey);
		sctx->hdr->rep.len = cpu_to_le32(rlen);
	}
	if (!rdv && len) {
		krpc_buf_sync(buf, buf->off, len, true);
		nsge += krpc_buf_sges(rc, buf, buf->off, len, &sge[1], 2);
	}
	send_wr_init(rc, sctx, &send, sge, nsge);
	/*
	 * Nothing waits for the completion of an eager request's SEND,
	 * unless its buffer goes back to a process with the call's.
	 */
	if (!r && !(call->flags & KRPC_CALL_ONEWAY) &&
	    !(buf && buf->pool->owner_ops))
		try_unsignaled(rc, &send);

	first = &send;
	if (r == 2) {
		reg[0].wr.next = &reg[1].wr;
		reg[1].wr.next = &send;
		first = &reg[0].wr;
	} else if (r == 1) {
		reg[0].wr.next = &send;
		first = &reg[0].wr;
	}
	ret = post_chain(rc, sctx, first, true);
	if (ret)
		return ret;
	krpc_conn_stat_inc(conn, rdv ? KRPC_STAT_RDV : KRPC_STAT_EAGER);
	krpc_conn_stat_add(conn, KRPC_STAT_BYTES_TX, len);
	return 0;

out_fail:
	pr_err_ratelimited("conn %u: cannot map a rendezvous region: %d\n",
			   conn->id, ret);
	krpc_rdma_fail_locked(rc, -EIO);
	return ret;
}

/* Server: fetch a rendezvous request payload into sctx->rbuf. */
static int post_read_locked(struct krpc_rdma_conn *rc, struct krpc_sctx *sctx)
{
	struct krpc_req *req = sctx->req;
	u32 len = req->xrdv[0].len;
	unsigned int nwr;

	nwr = krpc_rw_nr_wr(rc, sctx->rbuf, 0, len, rc->max_sge_rd);
	if (rc->sq_avail < nwr)
		return -EAGAIN;
	sctx->rbuf->off = 0;
	krpc_buf_sync(sctx->rbuf, 0, len, true);
	nwr = krpc_rw_build(rc, sctx, IB_WR_RDMA_READ, sctx->rbuf, len,
			    req->xrdv[0].addr, req->xrdv[0].rkey,
			    rc->max_sge_rd);
	if (!nwr) {
		krpc_rdma_fail_locked(rc, -EIO);
		return -EIO;
	}
	return post_chain(rc, sctx, &rc->wr[0].wr, false);
}

/* Server: the reply, inline or written into the client's region. */
static int post_reply_locked(struct krpc_rdma_conn *rc, struct krpc_sctx *sctx)
{
	struct krpc_req *req = sctx->req;
	struct krpc_conn *conn = rc->conn;
	struct krpc_buf *reply = req->reply;
	u32 len = reply ? reply->len : 0, wstatus = 0, inv_rkey = 0;
	u8 type = KRPC_MSG_REPLY, flags = 0;
	unsigned int nwr = 0, nsge = 1;
	struct ib_send_wr send;
	struct ib_sge sge[3];
	int ret;

	if (req->status) {
		type = KRPC_MSG_ERROR;
		wstatus = (req->flags & REQ_NOMETHOD) ? KRPC_WS_NO_METHOD :
			  -req->status;
		len = 0;
	} else if (len > conn->inline_max) {
		/*
		 * A client that gave up on the call (its CANCEL came first)
		 * drops whatever comes: nothing is written.  One without
		 * KRPC_WFEAT_CANCEL_ACK also fenced the reply room's key, and
		 * a WRITE there would fail the queue pair.
		 */
		bool cancelled = READ_ONCE(req->flags) & REQ_CANCELLED;

		if (!cancelled && len <= req->xrdv[1].len &&
		    (rc->features & KRPC_WFEAT_RDV)) {
			flags = KRPC_WF_WRITTEN;
			nwr = krpc_rw_nr_wr(rc, reply, reply->off, len,
					    rc->max_sge);
		} else {
			type = KRPC_MSG_ERROR;
			wstatus = cancelled ? ECANCELED : EMSGSIZE;
			len = 0;
		}
	}
	if (rc->sq_avail < nwr + 1)
		return -EAGAIN;
	if (!(krpc_rdma_answers_cancel(rc, req) ? credit_ok(rc) :
	      data_credit_ok(rc))) {
		krpc_conn_stat_inc(conn, KRPC_STAT_CREDIT_STALLS);
		return -EAGAIN;
	}

	if (nwr) {
		krpc_buf_sync(reply, reply->off, len, true);
		nwr = krpc_rw_build(rc, sctx, IB_WR_RDMA_WRITE, reply, len,
				    req->xrdv[1].addr, req->xrdv[1].rkey,
				    rc->max_sge);
		if (!nwr) {
			krpc_rdma_fail_locked(rc, -EIO);
			return -EIO;
		}
	}
	hdr_init(rc, sctx, type, flags, 0, req->call_id, wstatus, len);
	if (type == KRPC_MSG_REPLY && !flags && len) {
		krpc_buf_sync(reply, reply->off, len, true);
		nsge += krpc_buf_sges(rc, reply, reply->off, len, &sge[1], 2);
	}
	send_wr_init(rc, sctx, &send, sge, nsge);
	/* One of the client's keys dies with the reply; it fences the other. */
	if (krpc_rdma_req_inv_rkey(rc, req, &inv_rkey)) {
		send.opcode = IB_WR_SEND_WITH_INV;
		send.ex.invalidate_rkey = inv_rkey;
	}
	if (nwr)
		rc->wr[nwr - 1].wr.next = &send;

	/* The client may reuse the slot as soon as it sees the reply. */
	krpc_req_slot_release_locked(req);
	ret = post_chain(rc, sctx, nwr ? &rc->wr[0].wr : &send, true);
	if (ret)
		return ret;
	krpc_conn_stat_inc(conn, KRPC_STAT_REPLIES);
	krpc_conn_stat_add(conn, KRPC_STAT_BYTES_TX, len);
	if (len)
		krpc_conn_stat_inc(conn, nwr ? KRPC_STAT_RDV : KRPC_STAT_EAGER);
	return 0;
}

static int sctx_post_locked(struct krpc_rdma_conn *rc, struct krpc_sctx *sctx)
{
	static const struct {
		unsigned int op;
		int (*post)(struct krpc_rdma_conn *rc, struct krpc_sctx *sctx);
	} order[] = {
		{ OP_INV,	post_inv_locked },
		{ OP_READ,	post_read_locked },
		{ OP_REQ,	post_req_locked },
		{ OP_REPLY,	post_reply_locked },
	};
	unsigned int i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(order); i++) {
		if (!(sctx->ops & order[i].op))
			continue;
		ret = order[i].post(rc, sctx);
		if (ret)
			return ret;
		sctx->ops &= ~order[i].op;
	}
	return 0;
}

/*
 * Credits the peer holds beyond all that the request/reply flow can still
 * ask of it, for its control messages (an upper bound: what it sent that
 * has not arrived is not counted).  It holds nr_recv - withheld credits,
 * less those in flight; withheld is grant_pending + starved.
 *  - Our peer is a server: it needs one credit per reply still to come
 *    (conn->nr_unreplied; a call whose reply came may hold its slot a
 *    little longer, until its send completes).
 *  - Our peer is a client: it may fill its depth, one credit per call;
 *    but a call we owe a reply (one holding a slot) is already counted
 *    against it, and its credits come back with that reply.
 * With nr_recv = depth + KRPC_EXTRA_RECVS this never drops below
 * KRPC_EXTRA_RECVS - starved in a pure request/reply flow: the calls and
 * replies carry the credits.  What uses it up is the rest: one-way calls,
 * cancel notices, keepalives, receives without a buffer.
 */
static u32 peer_spare(struct krpc_rdma_conn *rc)
{
	struct krpc_conn *conn = rc->conn;
	u32 used = rc->grant_pending + rc->starved;

	if (conn->server)
		used += conn->depth - min(conn->nr_owed, conn->depth);
	else
		used += conn->nr_unreplied;
	return used < rc->nr_recv ? rc->nr_recv - used : 0;
}

/*
 * An explicit credit update is due when the peer runs low: when
 * grant_pending + starved reaches half the receives, as brpc's pure ACK
 * does, unless the peer still holds KRPC_CREDIT_SPARE credits beyond what
 * our calls and replies will give back anyway (peer_spare()): a server
 * that has received a depth of calls and answers them later, or a client
 * whose replies all came in before it made its next calls, would
 * otherwise send an update that the next reply or call carries.
 * Otherwise credits ride on the next call or reply.  The update must
 * return at least 2: its own receive costs the peer one, so updates
 * answering updates die out (the threshold: krpc_rdma_setup()).
 */
static bool credit_update_due(struct krpc_rdma_conn *rc)
{
	if (!rc->grant_pending)
		return false;
	if (rc->want_credit)
		return true;
	return rc->grant_pending >= 2 &&
	       rc->grant_pending + rc->starved >= rc->credit_thresh &&
	       peer_spare(rc) < KRPC_CREDIT_SPARE;
}

/*
 * Push out whatever resources allow: control messages first (they are
 * small and return credits or keep the connection alive), then queued
 * work in order, then an explicit credit update if credits piled up.
 */
void krpc_rdma_flush_locked(struct krpc_rdma_conn *rc)
{
	struct krpc_sctx *sctx;
	int ret;

	lockdep_assert_held(&rc->conn->lock);
	if (!rc->live || READ_ONCE(krpc_fault_mute) == rc->conn->id)
		return;
	while (rc->nr_cancel) {
		if (post_ctrl_locked(rc, KRPC_MSG_CANCEL,
				     rc->cancel_ids[rc->nr_cancel - 1], NULL))
			break;
		rc->nr_cancel--;
	}
	while (rc->nr_acks) {
		struct krpc_cancel_ack *ack = &rc->acks[rc->nr_acks - 1];

		if (post_ctrl_locked(rc, KRPC_MSG_ERROR, ack->call_id, ack))
			break;
		rc->nr_acks--;
		atomic64_inc(&krpc_stats.cancel_acks);
	}
	if (rc->want_ka && !post_ctrl_locked(rc, KRPC_MSG_KEEPALIVE, 0, NULL))
		rc->want_ka = false;
	while ((sctx = list_first_entry_or_null(&rc->sendq, struct krpc_sctx,
						node))) {
		ret = sctx_post_locked(rc, sctx);
		if (!rc->live)
			return;
		if (ret) {
			krpc_conn_stat_inc(rc->conn, KRPC_STAT_RETRIES);
			break;
		}
		list_del_init(&sctx->node);
	}
	if (credit_update_due(rc) &&
	    !post_ctrl_locked(rc, KRPC_MSG_CREDIT, 0, NULL)) {
		krpc_conn_stat_inc(rc->conn, KRPC_STAT_CREDIT_MSGS);
		rc->want_credit = false;
	}
}

/* ---------------------------------------------------------------------- */
/* Transport operations called by the core, under conn->lock */

static int rdma_send_call(struct krpc_conn *conn, struct krpc_call *call)
{
	struct krpc_rdma_conn *rc = to_rc(conn);
	struct krpc_sctx *sctx;

	lockdep_assert_held(&conn->lock);
	if (!rc->live)
		return conn->reason ? conn->reason : -ENOTCONN;
	if ((krpc_call_len(call) > conn->inline_max || call->reply_dst) &&
	    !(rc->features & KRPC_WFEAT_RDV))
		return -EMSGSIZE;
	sctx = krpc_sctx_get_locked(rc);
	if (WARN_ON_ONCE(!sctx))
		return -EBUSY;
	sctx->call = call;
	call->xprt = sctx;
	krpc_sctx_queue_locked(sctx, OP_REQ);
	krpc_rdma_flush_locked(rc);
	return 0;
}

static void rdma_send_reply(struct krpc_conn *conn, struct krpc_req *req)
{
	struct krpc_rdma_conn *rc = to_rc(conn);
	struct krpc_sctx *sctx;

	lockdep_assert_held(&conn->lock);
	if (!rc->live) {
		krpc_req_free_locked(req);
		return;
	}
	sctx = krpc_sctx_get_locked(rc);
	if (!sctx) {
		list_add_tail(&req->node, &rc->wait_sctx);
		return;
	}
	sctx->req = req;
	krpc_sctx_queue_locked(sctx, OP_REPLY);
	krpc_rdma_flush_locked(rc);
}

static void rdma_query(struct krpc_conn *conn, struct krpc_conn_info *info)
{
	struct krpc_rdma_conn *rc = to_rc(conn);

	lockdep_assert_held(&conn->lock);
	info->send_credits = rc->send_credits;
}

const struct krpc_transport_ops krpc_rdma_ops = {
	.name		= "rdma",
	.id		= KRPC_XPRT_RDMA,
	.connect	= krpc_rdma_connect,
	.listen		= krpc_rdma_listen,
	.unlisten	= krpc_rdma_unlisten,
	.shutdown	= krpc_rdma_shutdown,
	.send_call	= rdma_send_call,
	.abort_call	= krpc_rdma_abort_call,
	.send_reply	= rdma_send_reply,
	.query		= rdma_query,
	.req_freed	= krpc_rdma_req_freed,
	.free		= krpc_rdma_free,
};
