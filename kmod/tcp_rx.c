// SPDX-License-Identifier: GPL-2.0
/*
 * TCP transport, receive side: a state machine fed by rx_work.
 *
 * The stream is read in pieces (hello, header, payload) with MSG_DONTWAIT;
 * a piece that arrives in parts is resumed where it stopped; a hello is
 * handed to tcp_cm.c.  Nothing from the peer is used before it is checked:
 * the hello's magic, version and limits (tcp_cm.c); each header's type, side, flags, reserved fields and length
 * against the negotiated maximum before any buffer is taken; call slots
 * against the depth.  A failed check closes the connection with a logged
 * (ratelimited) reason; other connections never notice.  A peer that stops
 * in the middle of a message is closed by the keepalive timeout.
 *
 * Memory: a payload lands in a pool buffer taken once its header passed the
 * checks (a reply in its call's reply destination or in a small buffer of
 * the receive reserve).  A request that finds the pool empty has its
 * payload skipped and is failed with -ENOBUFS, as over RDMA; a one-way
 * message that finds it empty, or a reply that finds the receive reserve
 * empty, pauses reading until a buffer comes back, so the peer is held
 * back by TCP's window, not by our memory, and nothing is dropped.
 *
 * Backpressure: the depth bounds the requests that hold a call slot, but a
 * one-way message holds none, and a request gives its slot back when its
 * reply is queued, not written.  So a server connection also bounds the
 * requests it holds alive (conn->nr_reqs, counted by server.c): at
 * krpc_req_bound(), 2 x depth, rx_work stops before the next header
 * and the peer is held back by TCP's window, as when the pool is empty.
 * Why 2 x depth: a client within the rules has at most depth requests in
 * handlers, and a reply queued but not yet written leaves the client free
 * to reuse the slot; the second depth covers those replies and one-way
 * messages, so a peer that reads its replies is never paused by requests
 * alone.  The request free that goes below the bound queues rx_work again
 * (krpc_tcp_req_freed()); freeing never needs rx_work (handlers reply, and
 * tx_work or the teardown frees the replies), so the pause cannot deadlock.
 * A paused connection whose peer reset it is torn down at once (an abortive
 * close: the peer discarded what it had not sent, and would take no
 * answer).  A peer that closed its side gracefully (FIN) is read to the end
 * once the pause ends: what it sent before the FIN is handled, as a one-way
 * message that landed in an RDMA receive is, and the end of the stream then
 * tears the connection down.  Holding it costs no more than holding a live
 * peer: the FIN adds no bytes, and the pause ends by our progress alone.
 *
 * Held back (a server at its request bound or with no pool buffer for a
 * one-way message; a client with no pool buffer for a reply), the peer is
 * not always stopped by a closed window alone: a receive buffer that fills
 * before the window closes (the stack only estimates the buffer memory of
 * the bytes it admits) drops segments, and
 * the peer's retransmission timer doubles at each drop while we do not
 * read.  Once we read again, its next retransmission can be up to the hold
 * plus its first RTO away (its timer stops doubling at TCP_RTO_MAX), with
 * nothing of it to read meanwhile: seen as 5 s of silence after a hold of
 * a few seconds, on a connection whose peer had 2.6 MB queued.  That
 * silence is ours, and the keepalive excuses it: silence counts from twice
 * the hold (at most TCP_RTO_MAX) plus TCP_RTO_MIN after the hold ends
 * (rx_hold_end_locked(), ka_tick()).
 */
#include <linux/slab.h>
#include <linux/overflow.h>

#include <net/tcp.h>

#include "tcp.h"
#include "pool.h"
#include "transport.h"

/* Messages handled per run before rx_work yields to other work. */
#define RX_BUDGET	64

struct rx_ctx {
	const char *why;	/* protocol error reason */
	bool retry;		/* no buffer now: try again when one comes back */
};

static int bad(struct rx_ctx *c, const char *why)
{
	c->why = why;
	return -EPROTO;
}

/* ---------------------------------------------------------------------- */
/* Messages */

/*
 * Which side may receive each type, and the header flags it may carry on
 * TCP (no rendezvous: only a REQUEST's reply room).
 */
static const struct {
	u8 flags;
	bool to_server;
	bool to_client;
} msg_defs[] = {
	[KRPC_MSG_REQUEST]	= { KRPC_WF_RDV_REPLY, true, false },
	[KRPC_MSG_REPLY]	= { 0, false, true },
	[KRPC_MSG_ERROR]	= { 0, false, true },
	[KRPC_MSG_ONEWAY]	= { 0, true, false },
	[KRPC_MSG_CREDIT]	= { 0, true, true },
	[KRPC_MSG_KEEPALIVE]	= { 0, true, true },
	[KRPC_MSG_CANCEL]	= { 0, true, false },
};

static_assert(ARRAY_SIZE(msg_defs) == KRPC_MSG_NR);

static int hdr_check(struct krpc_tcp_conn *tc, struct rx_ctx *c)
{
	static const struct krpc_wire_rdv zero_rdv;
	const struct krpc_wire_hdr *hdr = &tc->rx_hdr;
	struct krpc_conn *conn = tc->conn;
	u32 len = le32_to_cpu(hdr->len);

	if (!hdr->type || hdr->type >= KRPC_MSG_NR)
		return bad(c, "unknown message type");
	if (conn->server ? !msg_defs[hdr->type].to_server :
	    !msg_defs[hdr->type].to_client)
		return bad(c, "message type not for this side");
	if (hdr->flags & ~msg_defs[hdr->type].flags)
		return bad(c, "flags not allowed for the type");
	if (hdr->reserved || hdr->credits)
		return bad(c, "reserved field set");
	if (memcmp(&hdr->req, &zero_rdv, sizeof(zero_rdv)))
		return bad(c, "request region on TCP");
	if (hdr->flags & KRPC_WF_RDV_REPLY) {
		u32 room = le32_to_cpu(hdr->rep.len);

		if (hdr->rep.addr || hdr->rep.rkey || !room ||
		    room > conn->max_msg)
			return bad(c, "reply room out of range");
	} else if (memcmp(&hdr->rep, &zero_rdv, sizeof(zero_rdv))) {
		return bad(c, "reply region without its flag");
	}
	/* Before anything is allocated for it. */
	if (len > conn->max_msg)
		return bad(c, "payload longer than the negotiated maximum");

	switch (hdr->type) {
	case KRPC_MSG_ONEWAY:
		if (len > conn->inline_max)
			return bad(c, "one-way payload beyond the inline size");
		fallthrough;
	case KRPC_MSG_REQUEST:
		if (hdr->status)
			return bad(c, "request with a status");
		break;
	case KRPC_MSG_REPLY:
		if (hdr->method || hdr->status)
			return bad(c, "reply with a method or status");
		break;
	case KRPC_MSG_ERROR:
		if (hdr->method || len)
			return bad(c, "error reply with a method or payload");
		if (le32_to_cpu(hdr->status) != KRPC_WS_NO_METHOD &&
		    (!hdr->status ||
		     le32_to_cpu(hdr->status) > KRPC_WS_ERRNO_MAX))
			return bad(c, "error reply with a bad status");
		break;
	default:
		if (hdr->method || hdr->status || len)
			return bad(c, "control message with fields set");
		if (hdr->type != KRPC_MSG_CANCEL && hdr->call_id)
			return bad(c, "control message with a call id");
		break;
	}
	return 0;
}

/* A request's header passed: take a buffer for its payload. */
static int req_hdr_locked(struct krpc_tcp_conn *tc, struct rx_ctx *c)
{
	const struct krpc_wire_hdr *hdr = &tc->rx_hdr;
	struct krpc_conn *conn = tc->conn;
	u64 id = le64_to_cpu(hdr->call_id);
	u32 slot = id & KRPC_CALL_SLOT_MASK;
	u32 len = le32_to_cpu(hdr->len);
	struct krpc_buf *buf;

	if (hdr->type == KRPC_MSG_REQUEST &&
	    (slot >= conn->depth || conn->reqs[slot]))
		return bad(c, "call slot beyond the depth or still busy");
	tc->rx_nobufs = false;
	if (!len)
		return 0;
	if (hdr->type == KRPC_MSG_ONEWAY) {
		/*
		 * No answer can carry a failure, so nothing is dropped: a
		 * one-way message (within inline_max: a small buffer) takes
		 * a buffer of the general pool or of half the receive
		 * reserve (the other half stays for replies); with none left
		 * it waits (the header is kept and read again), holding the
		 * peer back by TCP's window, as exhausted receives withhold
		 * the credits over RDMA.  Sends never take the reserve, so
		 * a wait always ends when a received message's handler or
		 * caller frees its buffer.
		 */
		buf = krpc_pool_get_oneway(conn->pool);
		if (IS_ERR(buf)) {
			if (PTR_ERR(buf) != -ENOBUFS)
				return PTR_ERR(buf);
			c->retry = true;
			return -ENOBUFS;
		}
		tc->rx_buf = buf;
		return 0;
	}
	buf = krpc_buf_get(conn->pool, len, GFP_ATOMIC);
	if (IS_ERR(buf)) {
		/*
		 * Not waiting for one: a request is answered -ENOBUFS, as
		 * over RDMA, its payload skipped (rx_target()).
		 */
		if (PTR_ERR(buf) != -ENOBUFS)
			return PTR_ERR(buf);
		tc->rx_nobufs = true;
		return 0;
	}
	tc->rx_buf = buf;
	return 0;
}

/* A request is complete: hand it to its handler. */
static int req_done_locked(struct krpc_tcp_conn *tc, struct rx_ctx *c)
{
	const struct krpc_wire_hdr *hdr = &tc->rx_hdr;
	struct krpc_conn *conn = tc->conn;
	struct krpc_buf *buf = tc->rx_buf;
	struct krpc_req *req;

	tc->rx_buf = NULL;
	req = krpc_req_alloc_locked(conn, hdr->type == KRPC_MSG_ONEWAY,
				    le64_to_cpu(hdr->call_id),
				    le32_to_cpu(hdr->method));
	if (IS_ERR(req)) {
		krpc_buf_put(buf);
		if (PTR_ERR(req) == -ENOMEM)
			return -ENOMEM;
		return bad(c, "call slot beyond the depth or still busy");
	}
	if (tc->rx_nobufs) {	/* a request: one-way messages wait */
		tc->rx_nobufs = false;
		req->flags |= REQ_REPLIED;
		req->status = -ENOBUFS;
		conn->ops->send_reply(conn, req);
		return 0;
	}
	if (hdr->flags & KRPC_WF_RDV_REPLY) {
		req->xrdv[1].len = le32_to_cpu(hdr->rep.len);
		req->reply_max = max(req->reply_max, req->xrdv[1].len);
	}
	if (buf) {
		buf->off = 0;
		buf->len = le32_to_cpu(hdr->len);
		req->payload = buf;
		krpc_conn_stat_add(conn, KRPC_STAT_BYTES_RX, buf->len);
		krpc_conn_stat_inc(conn, KRPC_STAT_COPIES);
	}
	krpc_req_start_locked(req);
	return 0;
}

/* A reply's header passed: find the call and where its payload goes. */
static int reply_hdr_locked(struct krpc_tcp_conn *tc, struct rx_ctx *c)
{
	const struct krpc_wire_hdr *hdr = &tc->rx_hdr;
	struct krpc_conn *conn = tc->conn;
	u32 len = le32_to_cpu(hdr->len);
	struct krpc_tcp_cctx *cctx;
	struct krpc_call *call;
	struct krpc_buf *buf;

	call = krpc_call_find_locked(conn, le64_to_cpu(hdr->call_id));
	if (!call)
		return bad(c, "reply for an unknown call");
	cctx = call->xprt;
	/*
	 * tx_work writes tc->tx_cur outside conn->lock and marks it done
	 * after: its last bytes may be out, and the reply in, before that.
	 * The call's buffers wait for it all the same (cctx->tx).
	 */
	if (cctx->tx && cctx->tx != tc->tx_cur)
		return bad(c, "reply for a call not sent yet");
	if (call->flags & KRPC_CALL_ONEWAY)
		return bad(c, "reply for a one-way message");
	if (!len)
		return 0;
	/*
	 * Checked against what the request offered: a late reply's call
	 * may have given its reply_dst back already.
	 */
	if (cctx->room && len > cctx->room)
		return bad(c, "reply longer than the reply room");
	if (!cctx->room && len > conn->inline_max)
		return bad(c, "reply beyond the inline size");
	/*
	 * Late (after a timeout or cancel): read and dropped.  Its
	 * completion may have run (and cleared reply_dst, without the lock).
	 */
	if (call->state & CALL_RESULT)
		return 0;
	if (call->reply_dst) {
		/* Held: the call cannot complete while we write into it. */
		cctx->rx_busy = true;
		tc->rx_cctx = cctx;
		tc->rx_buf = call->reply_dst;
		return 0;
	}
	buf = krpc_pool_get_recv(conn->pool);
	if (IS_ERR(buf)) {
		/* Only an empty pool is waited for: a dead one never refills. */
		if (PTR_ERR(buf) != -ENOBUFS)
			return PTR_ERR(buf);
		c->retry = true;
		return -ENOBUFS;
	}
	tc->rx_buf = buf;
	return 0;
}

static int reply_done_locked(struct krpc_tcp_conn *tc, struct rx_ctx *c)
{
	const struct krpc_wire_hdr *hdr = &tc->rx_hdr;
	struct krpc_conn *conn = tc->conn;
	u32 len = le32_to_cpu(hdr->len), ws = le32_to_cpu(hdr->status);
	struct krpc_buf *buf = tc->rx_buf;
	struct krpc_tcp_cctx *cctx;
	struct krpc_call *call;
	int status = 0;

	tc->rx_buf = NULL;
	if (tc->rx_cctx) {
		cctx = tc->rx_cctx;
		tc->rx_cctx = NULL;
		cctx->rx_busy = false;
		call = cctx->call;
	} else {
		/* Neither the slot nor the call can change while unreplied. */
		call = krpc_call_find_locked(conn, le64_to_cpu(hdr->call_id));
		if (WARN_ON_ONCE(!call)) {
			krpc_buf_put(buf);
			return -EIO;
		}
		cctx = call->xprt;
	}
	if (hdr->type == KRPC_MSG_ERROR)
		status = ws == KRPC_WS_NO_METHOD ? -EBADRQC : -(int)ws;
	if (buf) {
		buf->off = 0;
		buf->len = len;
		krpc_conn_stat_inc(conn, KRPC_STAT_COPIES);
	}
	krpc_conn_stat_add(conn, KRPC_STAT_BYTES_RX, len);
	krpc_conn_stat_inc(conn, KRPC_STAT_REPLIES);
	if (call->state & CALL_RESULT) {
		krpc_conn_stat_inc(conn, KRPC_STAT_STALE);
		/* A reply destination goes with the call, not here. */
		if (buf != call->reply_dst)
			krpc_buf_put(buf);
	} else {
		krpc_call_result_locked(call, status,
					status ? KRPC_RES_REMOTE : 0, buf);
	}
	cctx->replied = true;
	krpc_call_replied_locked(call);
	krpc_tcp_cctx_progress_locked(cctx);
	return 0;
}

/*
 * A header arrived whole.  Returns 0 with tc->rx_phase set to what comes
 * next, or an error (c->why: protocol error; c->retry: pool empty).
 */
static int hdr_rx_locked(struct krpc_tcp_conn *tc, struct rx_ctx *c)
{
	struct krpc_wire_hdr *hdr = &tc->rx_hdr;
	int ret;

	memcpy(hdr, tc->rx_head, sizeof(*hdr));
	ret = hdr_check(tc, c);
	if (ret)
		return ret;
	switch (hdr->type) {
	case KRPC_MSG_REQUEST:
	case KRPC_MSG_ONEWAY:
		ret = req_hdr_locked(tc, c);
		break;
	case KRPC_MSG_REPLY:
	case KRPC_MSG_ERROR:
		ret = reply_hdr_locked(tc, c);
		break;
	case KRPC_MSG_CANCEL:
		krpc_req_cancel_locked(tc->conn, le64_to_cpu(hdr->call_id));
		fallthrough;
	default:
		tc->rx_got = 0;
		return 0;
	}
	if (ret)
		return ret;
	tc->rx_got = 0;
	if (hdr->len) {
		tc->rx_phase = RX_PAYLOAD;
		return 0;
	}
	return hdr->type == KRPC_MSG_REPLY || hdr->type == KRPC_MSG_ERROR ?
		reply_done_locked(tc, c) : req_done_locked(tc, c);
}

static int payload_rx_locked(struct krpc_tcp_conn *tc, struct rx_ctx *c)
{
	u8 type = tc->rx_hdr.type;

	tc->rx_phase = RX_HDR;
	tc->rx_got = 0;
	return type == KRPC_MSG_REPLY || type == KRPC_MSG_ERROR ?
		reply_done_locked(tc, c) : req_done_locked(tc, c);
}

/* ---------------------------------------------------------------------- */
/* rx_work */

/*
 * Where the next bytes go and how many the current piece still needs.
 * NULL: a payload nobody takes (a stale reply's, a request's without a
 * buffer), skipped.
 */
static u32 rx_target(struct krpc_tcp_conn *tc, void **dst)
{
	u32 len;

	switch (tc->rx_phase) {
	case RX_HELLO:
		*dst = tc->rx_head + tc->rx_got;
		return sizeof(struct krpc_wire_hello) - tc->rx_got;
	case RX_HDR:
		*dst = tc->rx_head + tc->rx_got;
		return KRPC_HDR_SIZE - tc->rx_got;
	case RX_PAYLOAD:
		len = le32_to_cpu(tc->rx_hdr.len) - tc->rx_got;
		*dst = tc->rx_buf ? tc->rx_buf->vaddr + tc->rx_got : NULL;
		return len;
	default:
		return 0;
	}
}

/* A piece is complete: act on it under the lock. */
static int rx_piece_locked(struct krpc_tcp_conn *tc, struct rx_ctx *c)
{
	switch (tc->rx_phase) {
	case RX_HELLO:
		tc->rx_phase = RX_HDR;
		tc->rx_got = 0;
		krpc_tcp_hello_rx_locked(tc);
		return 0;
	case RX_HDR:
		return hdr_rx_locked(tc, c);
	case RX_PAYLOAD:
		/* Whole: rx_work comes here only once rx_target() is met. */
		return payload_rx_locked(tc, c);
	default:
		return 0;
	}
}

static void rx_error_locked(struct krpc_tcp_conn *tc, struct rx_ctx *c,
			    int ret)
{
	struct krpc_conn *conn = tc->conn;

	if (c->why) {
		atomic64_inc(&krpc_stats.protocol_errors);
		pr_err_ratelimited("conn %u: protocol error from %pISpc: %s (type %u, call %#llx); closing\n",
				   conn->id, &conn->peer, c->why,
				   tc->rx_hdr.type,
				   le64_to_cpu(tc->rx_hdr.call_id));
	} else {
		pr_err_ratelimited("conn %u: cannot process a message: %d; closing\n",
				   conn->id, ret);
	}
	krpc_tcp_fail_locked(tc, ret);
}

/*
 * The peer reset a connection we hold back: tear it down now, with the
 * requests it already has (conn->lock).  Found by rx_peer_reset_locked(),
 * or by tx_work when a keepalive's send met the reset first: that send
 * takes the socket's error, and rx_work would never see it.
 */
void krpc_tcp_held_reset_locked(struct krpc_tcp_conn *tc)
{
	struct krpc_conn *conn = tc->conn;

	lockdep_assert_held(&conn->lock);
	pr_info_ratelimited("conn %u: %pISpc reset the connection while held back\n",
			    conn->id, &conn->peer);
	krpc_tcp_fail_locked(tc, -ECONNRESET);
}

/*
 * True (and the connection torn down) if the peer reset a connection we
 * hold back: its unread bytes would make the keepalive think it alive.  A
 * graceful close (FIN, no error) is not: rx_work reads what came before it
 * once the hold ends, then meets the end of the stream (conn->lock).
 */
static bool rx_peer_reset_locked(struct krpc_tcp_conn *tc)
{
	if (!READ_ONCE(tc->sock->sk->sk_err))
		return false;
	krpc_tcp_held_reset_locked(tc);
	return true;
}

/* rx_work stops reading: the peer is held back from now (conn->lock). */
static void rx_hold_start_locked(struct krpc_tcp_conn *tc)
{
	lockdep_assert_held(&tc->conn->lock);
	if (!tc->rx_held) {
		tc->rx_held = true;
		tc->rx_held_since = jiffies;
	}
}

/*
 * rx_work reads again: excuse the peer's silence for twice the hold, at
 * most TCP_RTO_MAX (the peer's timer backs off no further), plus
 * TCP_RTO_MIN (above); ka_tick() counts silence from then (conn->lock).
 */
static void rx_hold_end_locked(struct krpc_tcp_conn *tc)
{
	unsigned long now = jiffies, until, held;

	lockdep_assert_held(&tc->conn->lock);
	if (!tc->rx_held)
		return;
	tc->rx_held = false;
	held = now - tc->rx_held_since;
	until = now + min_t(unsigned long, 2 * held, TCP_RTO_MAX) + TCP_RTO_MIN;
	if (!tc->rx_excused || time_after(until, tc->rx_excused_until))
		tc->rx_excused_until = until;
	tc->rx_excused = true;
}

/*
 * Before a new header on a server connection: true if the connection holds
 * its bound of requests and rx_work must stop (or it died meanwhile).
 */
static bool rx_pause(struct krpc_tcp_conn *tc)
{
	struct krpc_conn *conn = tc->conn;
	bool pause;

	/* Only rx_work raises the count: a stale value is too high, not low. */
	if (READ_ONCE(conn->nr_reqs) < krpc_req_bound(conn))
		return false;
	krpc_conn_lock(conn);
	pause = conn->nr_reqs >= krpc_req_bound(conn);
	if (!tc->live) {
		pause = true;
	} else if (pause && !rx_peer_reset_locked(tc) && !tc->rx_paused) {
		tc->rx_paused = true;
		rx_hold_start_locked(tc);
		krpc_conn_stat_inc(conn, KRPC_STAT_RX_PAUSES);
	}
	krpc_conn_unlock(conn);
	return pause;
}

/**
 * krpc_tcp_req_freed() - a request of a server connection was freed
 * @conn:	the connection
 *
 * Resumes a receiver paused at the request bound once below it again.
 *
 * Context: conn->lock held (krpc_req_free_locked()).
 */
void krpc_tcp_req_freed(struct krpc_conn *conn)
{
	struct krpc_tcp_conn *tc = to_tc(conn);

	lockdep_assert_held(&conn->lock);
	/* Not live: the teardown cancelled rx_work for good. */
	if (tc->rx_paused && tc->live &&
	    conn->nr_reqs < krpc_req_bound(conn)) {
		tc->rx_paused = false;
		rx_hold_end_locked(tc);
		mod_delayed_work(krpc_wq, &tc->rx_work, 0);
	}
}

/*
 * A buffer came back to the pool rx_work waits on (tc->pool_wait, on the
 * pool's wait queue while tc->rx_waiting): try again now.  Called under
 * the wait queue's lock from krpc_buf_put(), in any context; takes no lock
 * of ours.
 */
int krpc_tcp_pool_wake(struct wait_queue_entry *wait, unsigned int mode,
		       int sync, void *key)
{
	struct krpc_tcp_conn *tc = container_of(wait, struct krpc_tcp_conn,
						pool_wait);

	/* Nothing if already queued: every free of a busy pool lands here. */
	queue_delayed_work(krpc_wq, &tc->rx_work, 0);
	return 0;
}

/*
 * rx_work found no buffer: the header is kept whole and resumed from
 * "piece" later.  The first time, the connection starts waiting on the
 * pool's wait queue and tries once more (true: a buffer given back between
 * the failed try and the wait would wake nobody); after that every buffer
 * given back to the pool queues rx_work again (krpc_tcp_pool_wake()), and
 * nothing else needs to (false).  We are the slow side: the peer is not
 * silent (its unread bytes satisfy the keepalive as well).  Context:
 * conn->lock held, the connection live.
 */
static bool rx_wait_buf_locked(struct krpc_tcp_conn *tc)
{
	struct krpc_conn *conn = tc->conn;

	WRITE_ONCE(tc->last_rx, jiffies);
	if (tc->rx_waiting)
		return false;
	tc->rx_waiting = true;
	krpc_conn_stat_inc(conn, KRPC_STAT_POOL_WAITS);
	rx_hold_start_locked(tc);
	add_wait_queue(&conn->pool->wait, &tc->pool_wait);
	return true;
}

/* The buffer came, or the connection is torn down (conn->lock). */
void krpc_tcp_rx_wait_end_locked(struct krpc_tcp_conn *tc)
{
	lockdep_assert_held(&tc->conn->lock);
	if (!tc->rx_waiting)
		return;
	tc->rx_waiting = false;
	remove_wait_queue(&tc->conn->pool->wait, &tc->pool_wait);
	rx_hold_end_locked(tc);
}

void krpc_tcp_rx_work(struct work_struct *work)
{
	struct krpc_tcp_conn *tc = container_of(to_delayed_work(work),
						struct krpc_tcp_conn, rx_work);
	struct krpc_conn *conn = tc->conn;
	unsigned int budget = RX_BUDGET;
	struct msghdr msg;
	struct kvec kv;
	void *dst;
	u32 want;
	int ret;

	while (budget) {
		struct rx_ctx c = {};

		if (!READ_ONCE(tc->live) || tc->rx_phase == RX_CLOSED)
			return;
		if (conn->server && tc->rx_phase == RX_HDR && !tc->rx_got &&
		    rx_pause(tc))
			return;		/* krpc_tcp_req_freed() requeues us */
		want = rx_target(tc, &dst);
		/* A header whose buffer was not there last time. */
		if (tc->rx_phase == RX_HDR && !want)
			goto piece;
		memset(&msg, 0, sizeof(msg));
		if (dst) {
			kv.iov_base = dst;
			kv.iov_len = want;
			ret = kernel_recvmsg(tc->sock, &msg, &kv, 1, want,
					     MSG_DONTWAIT | MSG_NOSIGNAL);
		} else {
			/* Skipped in one go: TCP drops it, copied nowhere. */
			iov_iter_discard(&msg.msg_iter, ITER_DEST, want);
			ret = sock_recvmsg(tc->sock, &msg, MSG_DONTWAIT |
					   MSG_NOSIGNAL | MSG_TRUNC);
		}
		if (ret == -EAGAIN)
			return;		/* sk_data_ready requeues us */
		if (ret <= 0) {
			krpc_conn_lock(conn);
			if (tc->live && (ret || conn->state != KRPC_CONN_UP ||
					 tc->rx_got || tc->rx_phase != RX_HDR))
				pr_info_ratelimited("conn %u: %pISpc closed the connection%s (%d)\n",
						    conn->id, &conn->peer,
						    tc->rx_got || tc->rx_phase == RX_PAYLOAD ?
						    " in the middle of a message" : "",
						    ret);
			krpc_tcp_fail_locked(tc, -ECONNRESET);
			krpc_conn_unlock(conn);
			return;
		}
		WRITE_ONCE(tc->last_rx, jiffies);
		tc->rx_got += ret;
		if ((u32)ret < want)
			continue;
piece:
		if (tc->rx_phase == RX_HDR && READ_ONCE(tc->nr_unacked)) {
			/*
			 * The ACK that came with these bytes may free buffers
			 * sent by reference that this message needs; they go
			 * back to the pool when the lock is dropped.
			 */
			krpc_conn_lock(conn);
			krpc_tcp_unacked_reap_locked(tc);
			krpc_conn_unlock(conn);
		}
		krpc_conn_lock(conn);
		if (!tc->live) {
			krpc_conn_unlock(conn);
			return;
		}
		ret = rx_piece_locked(tc, &c);
		if (ret && c.retry) {
			bool again;

			/* pool_empty: counted by the getter that failed */
			again = !rx_peer_reset_locked(tc) &&
				rx_wait_buf_locked(tc);
			krpc_conn_unlock(conn);
			if (again)
				goto piece;
			return;
		}
		if (ret)
			rx_error_locked(tc, &c, ret);
		else if (unlikely(tc->rx_waiting))	/* the buffer came */
			krpc_tcp_rx_wait_end_locked(tc);
		krpc_conn_unlock(conn);
		if (ret)
			return;
		budget--;
	}
	mod_delayed_work(krpc_wq, &tc->rx_work, 0);
}
