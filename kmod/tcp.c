// SPDX-License-Identifier: GPL-2.0
/*
 * TCP transport: calls, replies, socket callbacks, keepalive and teardown.
 * The send queue and tx_work are in tcp_tx.c, connecting and accepting in
 * tcp_cm.c, the receive state machine in tcp_rx.c; tcp.h has the contexts
 * and the lock rules.
 *
 * The wire is the RDMA transport's message header followed by the payload
 * in the stream (wire.h, "TCP framing"), after a hello each way.  Flow
 * control is TCP's: a writer that finds the socket full waits for
 * sk_write_space; a reader that finds its pool empty stops reading (the
 * peer's window closes) until a buffer comes back to the pool, which
 * queues rx_work again (tcp_rx.c).  The depth bounds calls in flight as
 * over RDMA; a server connection also stops reading while it holds 2 x
 * depth live requests (one-way messages and replies still being written
 * included; tcp_rx.c), so memory per connection is bounded by depth
 * messages each way plus control messages.
 *
 * Copies: a payload is sent by reference (tcp_tx.c: MSG_ZEROCOPY of the
 * pool buffer's pages, counted in the tcp_zc_sends stat) and copied once
 * on receive, by rx_work out of the socket into a pool buffer, counted in
 * the "copies" counter; a payload whose pages cannot go by reference is
 * copied on send too, and counted there as well.
 */
#include <linux/slab.h>
#include <linux/tcp.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <net/tcp.h>
#include <net/inet_common.h>

#include "tcp.h"
#include "pool.h"
#include "transport.h"

/* ---------------------------------------------------------------------- */
/* Messages */

void krpc_tcp_hdr_init(struct krpc_wire_hdr *hdr, u8 type, u8 flags,
		       u32 method, u64 call_id, u32 status, u32 len)
{
	memset(hdr, 0, sizeof(*hdr));
	hdr->type = type;
	hdr->flags = flags;
	hdr->method = cpu_to_le32(method);
	hdr->call_id = cpu_to_le64(call_id);
	hdr->status = cpu_to_le32(status);
	hdr->len = cpu_to_le32(len);
}

/*
 * Our own limits: replies without a reply region arrive in a small buffer
 * (the receive reserve of the pool), like an RDMA receive.
 */
void krpc_tcp_local_limits(struct krpc_conn *conn, u32 *inline_max,
			   u32 *max_msg)
{
	struct krpc_pool *pool = conn->pool;

	*inline_max = min(krpc_params_inline_max(),
			  krpc_pool_small_size(pool));
	*max_msg = min(krpc_param(max_msg), krpc_pool_max_size(pool));
}

void krpc_tcp_fail_locked(struct krpc_tcp_conn *tc, int reason)
{
	lockdep_assert_held(&tc->conn->lock);
	krpc_conn_dead_locked(tc->conn, reason);
	tc->live = false;
	if (!tc->teardown_queued) {
		tc->teardown_queued = true;
		queue_work(krpc_wq, &tc->teardown_work);
	}
}

static void queue_ctrl_locked(struct krpc_tcp_conn *tc, u8 type, u64 call_id)
{
	struct krpc_wire_hdr hdr;

	krpc_tcp_hdr_init(&hdr, type, 0, 0, call_id, 0, 0);
	/* Best effort: a lost cancel or keepalive is harmless. */
	krpc_tcp_queue_locked(tc, &hdr, sizeof(hdr), NULL, 0, NULL, NULL);
}

/* ---------------------------------------------------------------------- */
/* Client calls */

/*
 * The transport lets go of a call's buffers once its message is no longer
 * queued, being written or, sent by reference, held by the stack (the
 * zero-copy completion, whatever the peer says: a peer may reply before
 * it has read the request, and pages still queued in the socket must not
 * go back to the pool and be refilled), no reply is being received into
 * its reply destination, and the call has a reply or was abandoned; of
 * its slot once the peer is done with the call id.  A call with its
 * outcome whose buffers are not back yet is "stuck" until they are:
 * stuck_expired_locked() bounds that.
 */
void krpc_tcp_cctx_progress_locked(struct krpc_tcp_cctx *cctx)
{
	struct krpc_call *call = cctx->call;

	if (!call)
		return;
	lockdep_assert_held(&call->conn->lock);
	if ((call->flags & KRPC_CALL_ONEWAY) && cctx->sent && !cctx->replied) {
		cctx->replied = true;
		krpc_call_result_locked(call, 0, 0, NULL);
		krpc_call_replied_locked(call);
	}
	if (!cctx->released && !cctx->tx && !cctx->unacked && !cctx->rx_busy &&
	    (cctx->replied || cctx->aborted)) {
		cctx->released = true;
		if (cctx->stuck) {
			cctx->stuck = false;
			to_tc(call->conn)->nr_stuck--;
		}
		krpc_call_xprt_done_locked(call);
	} else if (!cctx->released && !cctx->stuck &&
		   (cctx->replied || cctx->aborted)) {
		/* Mostly a reply ahead of our ACK, for a moment. */
		cctx->stuck = true;
		cctx->stuck_at = jiffies;
		to_tc(call->conn)->nr_stuck++;
	}
	if (cctx->replied && cctx->released) {
		/* The slot may be reused at once, from within this call. */
		cctx->call = NULL;
		krpc_call_slot_release_locked(call);
	}
}

static int ktcp_send_call(struct krpc_conn *conn, struct krpc_call *call)
{
	struct krpc_tcp_conn *tc = to_tc(conn);
	struct krpc_buf *buf = call->req.type == KRPC_PL_BUF ? call->req.buf : NULL;
	struct krpc_tcp_cctx *cctx;
	struct krpc_wire_hdr hdr;
	u32 len = krpc_call_len(call);
	u8 flags = 0;
	int ret;

	lockdep_assert_held(&conn->lock);
	if (!tc->live)
		return conn->reason ? conn->reason : -ENOTCONN;
	cctx = &tc->cctx[call->slot];
	if (WARN_ON_ONCE(cctx->call))
		return -EBUSY;
	memset(cctx, 0, sizeof(*cctx));
	if (call->reply_dst) {
		flags |= KRPC_WF_RDV_REPLY;
		cctx->room = krpc_call_reply_room(call);
	}
	krpc_tcp_hdr_init(&hdr, call->flags & KRPC_CALL_ONEWAY ?
			  KRPC_MSG_ONEWAY : KRPC_MSG_REQUEST, flags,
			  call->method, call->id, 0, len);
	if (call->reply_dst)
		hdr.rep.len = cpu_to_le32(cctx->room);
	ret = krpc_tcp_queue_locked(tc, &hdr, sizeof(hdr), buf, len, cctx,
				    NULL);
	if (ret)
		return ret;
	cctx->call = call;
	call->xprt = cctx;
	krpc_conn_stat_inc(conn, KRPC_STAT_EAGER);
	krpc_conn_stat_add(conn, KRPC_STAT_BYTES_TX, len);
	return 0;
}

static void ktcp_abort_call(struct krpc_conn *conn, struct krpc_call *call)
{
	struct krpc_tcp_conn *tc = to_tc(conn);
	struct krpc_tcp_cctx *cctx = call->xprt;

	lockdep_assert_held(&conn->lock);
	if (!cctx || !tc->live)
		return;
	cctx->aborted = true;
	if (cctx->tx && cctx->tx != tc->tx_cur) {
		/* Never written: the peer never saw the id, the slot is free. */
		list_del(&cctx->tx->node);
		tc->nr_tx--;
		krpc_tcp_tx_free_unwritten(cctx->tx);
		cctx->tx = NULL;
		cctx->replied = true;
		krpc_call_replied_locked(call);
	} else if (!(call->flags & KRPC_CALL_ONEWAY) && !cctx->replied) {
		queue_ctrl_locked(tc, KRPC_MSG_CANCEL, call->id);
	}
	krpc_tcp_cctx_progress_locked(cctx);
}

/* ---------------------------------------------------------------------- */
/* Server replies */

static void ktcp_send_reply(struct krpc_conn *conn, struct krpc_req *req)
{
	struct krpc_tcp_conn *tc = to_tc(conn);
	struct krpc_buf *reply = req->reply;
	u32 len = reply ? reply->len : 0, wstatus = 0;
	u8 type = KRPC_MSG_REPLY;
	struct krpc_wire_hdr hdr;

	lockdep_assert_held(&conn->lock);
	if (!tc->live) {
		krpc_req_free_locked(req);
		return;
	}
	if (req->status) {
		type = KRPC_MSG_ERROR;
		wstatus = (req->flags & REQ_NOMETHOD) ? KRPC_WS_NO_METHOD :
			  -req->status;
		len = 0;
	} else if (len > conn->inline_max && len > req->xrdv[1].len) {
		type = KRPC_MSG_ERROR;
		wstatus = EMSGSIZE;
		len = 0;
	}
	krpc_tcp_hdr_init(&hdr, type, 0, 0, req->call_id, wstatus, len);
	/* The client may reuse the slot as soon as it sees the reply. */
	krpc_req_slot_release_locked(req);
	if (krpc_tcp_queue_locked(tc, &hdr, sizeof(hdr), reply, len, NULL,
				  req)) {
		krpc_req_free_locked(req);
		krpc_tcp_fail_locked(tc, -ENOMEM);
		return;
	}
	krpc_conn_stat_inc(conn, KRPC_STAT_REPLIES);
	krpc_conn_stat_add(conn, KRPC_STAT_BYTES_TX, len);
	if (len)
		krpc_conn_stat_inc(conn, KRPC_STAT_EAGER);
}

/* ---------------------------------------------------------------------- */
/* Keepalive and dead-peer detection, as over RDMA */

/*
 * Keepalive tick, client: a stuck call (its outcome in, a reply or an
 * abort: a timeout, a cancel, its waiter killed) whose buffers the peer
 * has kept for ka_timeout_ms without progress.  The peer is alive (it
 * sends) but takes nothing: its window stays shut on the call's message,
 * or the pages sent by reference stay unacknowledged (no byte of ours
 * acknowledged, @tc->tx_moved), or the reply stops half-way (nothing
 * received, @tc->last_rx).  The buffers cannot be handed back while the
 * socket may still send from them or the reply still land in them, and
 * the call must end: the connection is reset, as over RDMA when a CANCEL
 * goes unanswered.  Return true if it was.
 */
static bool stuck_expired_locked(struct krpc_tcp_conn *tc, unsigned long now)
{
	unsigned long tmo = msecs_to_jiffies(krpc_param(ka_timeout_ms));
	struct krpc_conn *conn = tc->conn;
	struct krpc_tcp_cctx *cctx;
	unsigned long since;
	unsigned int i;

	lockdep_assert_held(&conn->lock);
	for (i = 0; i < conn->max_depth; i++) {
		cctx = &tc->cctx[i];
		if (!cctx->stuck)
			continue;
		since = cctx->stuck_at;
		if ((cctx->tx || cctx->unacked) && time_after(tc->tx_moved, since))
			since = tc->tx_moved;
		if (cctx->rx_busy && time_after(READ_ONCE(tc->last_rx), since))
			since = READ_ONCE(tc->last_rx);
		if (time_before(now, since + tmo))
			continue;
		pr_warn_ratelimited("conn %u: call %#llx %s, but %s for %u ms; resetting\n",
				    conn->id, cctx->call->id,
				    cctx->aborted ? "abandoned" : "answered",
				    cctx->rx_busy ? "its reply stalled" :
				    cctx->unacked ? "its request unacknowledged" :
				    "its request not taken",
				    jiffies_to_msecs(now - since));
		atomic64_inc(&krpc_stats.tcp_stuck_resets);
		krpc_tcp_fail_locked(tc, -ETIMEDOUT);
		return true;
	}
	return false;
}

static void ka_tick(struct timer_list *t)
{
	struct krpc_tcp_conn *tc = timer_container_of(tc, t, ka_timer);
	struct krpc_conn *conn = tc->conn;
	unsigned long now = jiffies;
	unsigned long ival = krpc_conn_ka_interval(conn);
	unsigned long last_rx;
	u32 una;

	krpc_conn_lock(conn);
	if (!tc->live)
		goto out;
	/*
	 * Bytes waiting for rx_work came from a live peer: a late worker is
	 * not a silent peer.  The socket exists while live.
	 */
	if (!skb_queue_empty_lockless(&tc->sock->sk->sk_receive_queue))
		WRITE_ONCE(tc->last_rx, now);
	last_rx = READ_ONCE(tc->last_rx);
	/*
	 * A peer we held back retransmits on a timer that backed off while
	 * we did not read (tcp_rx.c): its silence counts from the end of the
	 * excuse, until we hear from it.
	 */
	if (tc->rx_excused) {
		if (time_after(tc->rx_excused_until, last_rx))
			last_rx = tc->rx_excused_until;
		else
			tc->rx_excused = false;
	}
	if (time_after(now, last_rx + msecs_to_jiffies(krpc_param(ka_timeout_ms)))) {
		pr_warn_ratelimited("conn %u: nothing received from %pISpc for %u ms%s; closing\n",
				    conn->id, &conn->peer,
				    jiffies_to_msecs(now - READ_ONCE(tc->last_rx)),
				    tc->rx_phase == RX_PAYLOAD || tc->rx_got ?
				    " in the middle of a message" : "");
		krpc_tcp_fail_locked(tc, -ETIMEDOUT);
		goto out;
	}
	/* The peer acknowledged bytes of ours: what it holds moves. */
	una = READ_ONCE(tcp_sk(tc->sock->sk)->snd_una);
	if (una != tc->ka_una) {
		tc->ka_una = una;
		tc->tx_moved = now;
	}
	if (tc->nr_stuck && stuck_expired_locked(tc, now))
		goto out;
	/*
	 * tx_work stops at a muted connection's queue (debugfs fault_mute):
	 * once the mute is lifted, this tick starts it again.
	 */
	if (READ_ONCE(krpc_fault_mute) != conn->id) {
		if (conn->state == KRPC_CONN_UP && !tc->nr_tx &&
		    time_after_eq(now, tc->last_tx + ival))
			queue_ctrl_locked(tc, KRPC_MSG_KEEPALIVE, 0);
		else if (!list_empty(&tc->txq))
			queue_work(krpc_wq, &tc->tx_work);
	}
	mod_timer(&tc->ka_timer, now + max(1UL, ival / 2));
out:
	krpc_conn_unlock(conn);
}

/* Armed under conn->lock while live: the teardown cannot miss it. */
void krpc_tcp_ka_start(struct krpc_tcp_conn *tc)
{
	lockdep_assert_held(&tc->conn->lock);
	if (tc->live)
		mod_timer(&tc->ka_timer, jiffies +
			  max(1UL, krpc_conn_ka_interval(tc->conn) / 2));
}

/* ---------------------------------------------------------------------- */
/* Socket callbacks: softirq or process context, the socket locked */

/* Data, or a closed or reset socket (rx_work reads the end, tears down). */
static void ktcp_data_ready(struct sock *sk)
{
	struct krpc_tcp_conn *tc;

	read_lock_bh(&sk->sk_callback_lock);
	tc = sk->sk_user_data;
	if (tc)
		mod_delayed_work(krpc_wq, &tc->rx_work, 0);
	read_unlock_bh(&sk->sk_callback_lock);
}

static void ktcp_write_space(struct sock *sk)
{
	struct krpc_tcp_conn *tc;

	read_lock_bh(&sk->sk_callback_lock);
	tc = sk->sk_user_data;
	if (tc && sk_stream_is_writeable(sk)) {
		clear_bit(SOCK_NOSPACE, &sk->sk_socket->flags);
		queue_work(krpc_wq, &tc->tx_work);
	}
	read_unlock_bh(&sk->sk_callback_lock);
}

static void sock_install(struct krpc_tcp_conn *tc)
{
	struct sock *sk = tc->sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = tc;
	tc->saved_data_ready = sk->sk_data_ready;
	tc->saved_write_space = sk->sk_write_space;
	tc->saved_state_change = sk->sk_state_change;
	sk->sk_data_ready = ktcp_data_ready;
	sk->sk_write_space = ktcp_write_space;
	sk->sk_state_change = ktcp_data_ready;
	write_unlock_bh(&sk->sk_callback_lock);
}

static void sock_restore(struct krpc_tcp_conn *tc)
{
	struct sock *sk = tc->sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	if (sk->sk_user_data == tc) {
		sk->sk_user_data = NULL;
		sk->sk_data_ready = tc->saved_data_ready;
		sk->sk_write_space = tc->saved_write_space;
		sk->sk_state_change = tc->saved_state_change;
	}
	write_unlock_bh(&sk->sk_callback_lock);
}

/* ---------------------------------------------------------------------- */
/* Teardown */

static void release_all(struct krpc_tcp_conn *tc)
{
	struct krpc_conn *conn = tc->conn;
	unsigned int i;

	krpc_conn_lock(conn);
	krpc_tcp_tx_purge_locked(tc);
	tc->nr_stuck = 0;
	tc->rx_nobufs = false;
	if (tc->rx_cctx)
		tc->rx_cctx->rx_busy = false;
	else
		krpc_buf_put(tc->rx_buf);
	tc->rx_buf = NULL;
	tc->rx_cctx = NULL;
	for (i = 0; tc->cctx && i < conn->max_depth; i++) {
		struct krpc_tcp_cctx *cctx = &tc->cctx[i];
		struct krpc_call *call = cctx->call;

		if (!call)
			continue;
		krpc_call_result_locked(call, conn->reason, 0, NULL);
		if (!cctx->released)
			krpc_call_xprt_done_locked(call);
		krpc_call_replied_locked(call);
		cctx->call = NULL;
		krpc_call_slot_release_locked(call);
	}
	krpc_conn_unlock(conn);
}

static void ktcp_teardown_work(struct work_struct *work)
{
	struct krpc_tcp_conn *tc = container_of(work, struct krpc_tcp_conn,
						teardown_work);
	struct krpc_conn *conn = tc->conn;
	bool abort;

	krpc_conn_lock(conn);
	krpc_conn_dead_locked(conn, -ECONNRESET);
	tc->live = false;
	/* rx_work waits on the pool only while live: off its queue for good. */
	krpc_tcp_rx_wait_end_locked(tc);
	krpc_conn_unlock(conn);

	/* No callback queues work after this; then no work runs. */
	sock_restore(tc);
	timer_delete_sync(&tc->ka_timer);
	cancel_delayed_work_sync(&tc->rx_work);
	cancel_work_sync(&tc->tx_work);

	krpc_conn_lock(conn);
	abort = krpc_tcp_tx_in_flight_locked(tc);
	krpc_conn_unlock(conn);
	if (abort) {
		/* Reset, queues purged: nothing goes out of a buffer again. */
		sock_no_linger(tc->sock->sk);
	} else {
		kernel_sock_shutdown(tc->sock, SHUT_RDWR);
	}
	sock_release(tc->sock);
	tc->sock = NULL;
	krpc_tcp_tx_wait(tc);

	release_all(tc);
	krpc_conn_teardown_done(conn);
	krpc_conn_put(conn);	/* the transport's; may free @tc */
}

static void ktcp_shutdown(struct krpc_conn *conn, int reason)
{
	struct krpc_tcp_conn *tc = to_tc(conn);

	krpc_conn_lock(conn);
	krpc_tcp_fail_locked(tc, reason);
	krpc_conn_unlock(conn);
}

static void ktcp_free(struct krpc_conn *conn)
{
	struct krpc_tcp_conn *tc = to_tc(conn);

	if (!tc)
		return;
	kfree(tc->cctx);
	kfree(tc);
	conn->xprt = NULL;
}

static void ktcp_query(struct krpc_conn *conn, struct krpc_conn_info *info)
{
	u32 bound = krpc_req_bound(conn);

	lockdep_assert_held(&conn->lock);
	/* No message credits on the wire: what we accept or may send now. */
	if (conn->server)
		info->send_credits = bound - min(conn->nr_reqs, bound);
	else
		info->send_credits = conn->nr_free;
}

/* ---------------------------------------------------------------------- */
/* Set-up shared by both sides */

struct krpc_tcp_conn *krpc_tcp_conn_alloc(struct krpc_conn *conn)
{
	struct krpc_tcp_conn *tc;

	tc = kzalloc(sizeof(*tc), GFP_KERNEL);
	if (!tc)
		return NULL;
	if (!conn->server) {
		tc->cctx = kcalloc(conn->max_depth, sizeof(*tc->cctx),
				   GFP_KERNEL);
		if (!tc->cctx) {
			kfree(tc);
			return NULL;
		}
	}
	tc->conn = conn;
	INIT_DELAYED_WORK(&tc->rx_work, krpc_tcp_rx_work);
	init_waitqueue_func_entry(&tc->pool_wait, krpc_tcp_pool_wake);
	INIT_WORK(&tc->tx_work, krpc_tcp_tx_work);
	INIT_WORK(&tc->teardown_work, ktcp_teardown_work);
	timer_setup(&tc->ka_timer, ka_tick, 0);
	INIT_LIST_HEAD(&tc->txq);
	INIT_LIST_HEAD(&tc->unacked);
	tc->rx_phase = RX_HELLO;
	conn->xprt = tc;
	return tc;
}

/*
 * The socket is connected: from here the teardown undoes everything.
 * The transport's connection reference is already held.
 */
void krpc_tcp_go_live(struct krpc_tcp_conn *tc, struct socket *sock)
{
	struct krpc_conn *conn = tc->conn;
	u32 inline_max, max_msg;

	tcp_sock_set_nodelay(sock->sk);
	tc->sock = sock;
	tc->last_rx = jiffies;
	tc->tx_moved = tc->last_rx;
	tc->ka_una = READ_ONCE(tcp_sk(sock->sk)->snd_una);
	sock_install(tc);
	krpc_conn_lock(conn);
	tc->live = true;
	if (!conn->server) {
		struct krpc_wire_hello h;

		krpc_tcp_local_limits(conn, &inline_max, &max_msg);
		krpc_tcp_hello_fill(&h, conn->max_depth, max_msg, inline_max,
				    0, 0);
		h.version = cpu_to_le16(krpc_client_wire_version());
		if (krpc_tcp_queue_locked(tc, &h, sizeof(h), NULL, 0, NULL,
					  NULL))
			krpc_tcp_fail_locked(tc, -ENOMEM);
	}
	/* Bounds the handshake too: nothing received for ka_timeout_ms. */
	krpc_tcp_ka_start(tc);
	/*
	 * Bytes may have arrived before the callbacks were in place.  Queued
	 * under the lock while live: once unlocked, a teardown may run and
	 * free @tc, and its cancel must see this work.
	 */
	if (tc->live)
		mod_delayed_work(krpc_wq, &tc->rx_work, 0);
	krpc_conn_unlock(conn);
}

const struct krpc_transport_ops krpc_tcp_ops = {
	.name		= "tcp",
	.id		= KRPC_XPRT_TCP,
	.connect	= krpc_tcp_connect,
	.listen		= krpc_tcp_listen,
	.unlisten	= krpc_tcp_unlisten,
	.shutdown	= ktcp_shutdown,
	.send_call	= ktcp_send_call,
	.abort_call	= ktcp_abort_call,
	.send_reply	= ktcp_send_reply,
	.req_freed	= krpc_tcp_req_freed,
	.query		= ktcp_query,
	.free		= ktcp_free,
};
