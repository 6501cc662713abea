/* SPDX-License-Identifier: GPL-2.0 */
/*
 * TCP transport: private types shared by tcp.c (calls, replies, socket
 * callbacks, keepalive, teardown), tcp_tx.c (send queue, tx_work, zero-copy
 * payloads until acknowledged), tcp_cm.c (pool, connect, listen, accept)
 * and tcp_rx.c (receive state machine).
 *
 * Contexts.  The socket callbacks (sk_data_ready, sk_write_space,
 * sk_state_change) run in softirq or process context with the socket
 * locked; they only queue work, under read_lock_bh(&sk->sk_callback_lock),
 * through sk->sk_user_data.  All socket I/O happens in that work (krpc_wq,
 * process context) with MSG_DONTWAIT: rx_work is the only reader of the
 * socket and owns the receive state below "rx"; tx_work is the only writer
 * and sends tc->tx_cur outside conn->lock.  The "locked" transport
 * operations only queue and kick tx_work: they never touch the socket.
 *
 * Payloads go by reference (tcp_tx.c): the stack may retransmit from a
 * buffer until the peer acknowledged it, so a written zero-copy message
 * waits on tc->unacked and its buffer is handed back once the stack's
 * completion says it let go of the pages (a call that got its reply: at
 * once).  Completions run in any context and only mark and queue tx_work.
 * A receive that waits for a pool buffer puts tc->pool_wait on the pool's
 * wait queue; krpc_buf_put() calls it, in any context, and it only queues
 * rx_work (lock order: conn->lock, then the wait queue's lock).
 *
 * Teardown (teardown_work): dead under conn->lock (rx_work taken off the
 * pool's wait queue), callbacks restored under
 * sk_callback_lock, timer and works cancelled, what the peer acknowledged
 * reaped.  If no buffer is left in the socket (nothing unacknowledged, no
 * payload written in part by reference) the close is graceful: socket
 * shut down (what is queued, a refusal hello too, still reaches the peer)
 * and released.  Otherwise it is abortive: SO_LINGER 0 before the release
 * purges the socket's queues and sends a reset, so that no buffer is sent
 * again once it is handed back and the completions run.  Then the
 * teardown waits for every completion (krpc_tcp_tx_wait()), and every
 * call and request the transport held is failed.
 */
#ifndef KRPC_TCP_H
#define KRPC_TCP_H

#include <linux/net.h>
#include <linux/skbuff.h>
#include <linux/wait.h>
#include <net/sock.h>

#include "krpc_priv.h"
#include "wire.h"

/**
 * struct krpc_tcp_tx - one message (or the hello) waiting to be written
 * @node:	entry in tc->txq
 * @head:	header (or hello) bytes
 * @hlen:	bytes of @head
 * @buf:	payload (the call's request or the request's reply), or NULL
 * @len:	payload bytes from @buf->off
 * @sent:	bytes of @head and payload written so far
 * @zc:		the payload goes by reference (pages queued on the socket)
 * @zc_done:	@zc: the stack let go of the pages (set by the completion)
 * @ubuf:	@zc: the completion, one reference per skb holding pages
 * @tc:		the connection (for the completion)
 * @cctx:	client: the call this message carries
 * @req:	server: the request this reply answers
 */
struct krpc_tcp_tx {
	struct list_head node;
	u8 head[KRPC_HDR_SIZE];
	u32 hlen;
	struct krpc_buf *buf;
	u32 len;
	u32 sent;
	bool zc;
	bool zc_done;
	struct ubuf_info ubuf;
	struct krpc_tcp_conn *tc;
	struct krpc_tcp_cctx *cctx;
	struct krpc_req *req;
};

/**
 * struct krpc_tcp_cctx - transport state of one client call (per slot)
 * @call:	the call, while it holds the slot
 * @tx:		its message while queued or being written
 * @unacked:	its message once written by reference, until the stack let
 *		go of the pages: holds the buffers back, reply or not
 * @sent:	the message is entirely in the socket (by reference: and
 *		the stack let go of the pages)
 * @replied:	the peer answered (one-way: sent)
 * @aborted:	the core gave up on the call (timeout, cancel)
 * @rx_busy:	rx_work is receiving the reply into call->reply_dst
 * @released:	krpc_call_xprt_done_locked() was called
 * @stuck:	the call has its outcome (@replied or @aborted) while the
 *		transport still holds its buffers (being written,
 *		unacknowledged or receiving the reply), since @stuck_at:
 *		counted in tc->nr_stuck until @released.  The keepalive tick
 *		resets a connection whose peer made no progress on one for
 *		ka_timeout_ms (tcp.c, stuck_expired_locked())
 * @stuck_at:	jiffies when @stuck was set
 * @room:	reply room the request offered (0: the reply is inline); a
 *		late reply is checked against it once call->reply_dst is gone
 */
struct krpc_tcp_cctx {
	struct krpc_call *call;
	struct krpc_tcp_tx *tx;
	struct krpc_tcp_tx *unacked;
	u32 room;
	unsigned long stuck_at;
	bool sent;
	bool replied;
	bool aborted;
	bool rx_busy;
	bool released;
	bool stuck;
};

/* Receive phases */
enum {
	RX_HELLO,	/* reading the peer's hello */
	RX_HDR,		/* reading a message header */
	RX_PAYLOAD,	/* reading hdr.len payload bytes */
	RX_CLOSED,	/* handshake refused: read nothing more */
};

/**
 * struct krpc_tcp_conn - TCP state of one connection
 * @conn:	core connection (referenced until teardown is done)
 * @sock:	the socket
 * @saved_data_ready: the socket's callbacks before ours
 * @saved_write_space: ...
 * @saved_state_change: ...
 * @rx_work:	reads and dispatches (queued by the socket callbacks, by a
 *		request free below the bound and by @pool_wait)
 * @tx_work:	writes @txq
 * @teardown_work: the teardown
 * @ka_timer:	keepalive and dead-peer detection
 * @cctx:	client: per-slot call state (conn->max_depth entries)
 * @rx_phase:	RX_*; rx_work only, like every rx_ field
 * @rx_head:	header (or hello) bytes being read
 * @rx_got:	bytes of the current piece read so far
 * @rx_hdr:	the validated header of the payload being read
 * @rx_buf:	where the payload goes (NULL: discard)
 * @rx_cctx:	client: the call whose reply_dst is @rx_buf, or NULL
 * @rx_nobufs:	server: no buffer for this request: its payload is
 *		skipped and the call fails with -ENOBUFS, as over RDMA
 * @rx_paused:	server: rx_work stopped before a header because the
 *		connection holds krpc_req_bound() requests; cleared (and
 *		rx_work queued) by the request free that goes below it
 * @rx_waiting: the header read last waits for a pool buffer (a server's
 *		one-way message, a client's reply): counted once in
 *		pool_waits, @pool_wait on the pool's wait queue meanwhile;
 *		cleared when the buffer came or by the teardown
 * @pool_wait:	queues rx_work when a buffer comes back to the pool
 *		(krpc_tcp_pool_wake())
 * @rx_held:	we hold the peer back (server: @rx_paused or @rx_waiting;
 *		client: @rx_waiting), since @rx_held_since (conn->lock)
 * @rx_excused:	the peer's silence counts from @rx_excused_until, not from
 *		@last_rx, until @last_rx passes it: it retransmits what our
 *		full receive buffer dropped while it was held back, on a
 *		timer that backed off meanwhile (tcp_rx.c,
 *		rx_hold_end_locked(); conn->lock)
 * @rx_held_since: jiffies when @rx_held was set (conn->lock)
 * @rx_excused_until: jiffies the peer's silence counts from while
 *		@rx_excused (conn->lock)
 * @txq:	messages to write, in order (conn->lock)
 * @tx_cur:	the message tx_work is writing (conn->lock), still on @txq
 * @nr_tx:	entries on @txq
 * @unacked:	written zero-copy messages whose pages the stack may still
 *		hold (conn->lock)
 * @nr_unacked:	entries on @unacked (also read without the lock)
 * @zc_inflight: zero-copy completions not run yet (the teardown waits)
 * @nr_stuck:	client: calls stuck (cctx->stuck)
 * @ka_una:	the peer's acknowledgement point (snd_una) at the last
 *		keepalive tick
 * @tx_moved:	jiffies of the tick that saw @ka_una move
 * @want_ka:	queue a keepalive when nothing else goes out
 * @last_rx:	jiffies of the last bytes received
 * @last_tx:	jiffies of the last message queued
 * @live:	established (server: hello answered) and not dead
 * @hello_done:	the peer's hello was accepted
 * @teardown_queued: teardown was queued
 * @drain_reason: close with this reason once @txq is written (a refusal)
 */
struct krpc_tcp_conn {
	struct krpc_conn *conn;
	struct socket *sock;
	void (*saved_data_ready)(struct sock *sk);
	void (*saved_write_space)(struct sock *sk);
	void (*saved_state_change)(struct sock *sk);
	struct delayed_work rx_work;
	struct work_struct tx_work;
	struct work_struct teardown_work;
	struct timer_list ka_timer;
	struct krpc_tcp_cctx *cctx;

	/* rx_work only */
	unsigned int rx_phase;
	u8 rx_head[KRPC_HDR_SIZE];
	u32 rx_got;
	struct krpc_wire_hdr rx_hdr;
	struct krpc_buf *rx_buf;
	struct krpc_tcp_cctx *rx_cctx;
	bool rx_nobufs;

	/* conn->lock */
	struct list_head txq;
	struct krpc_tcp_tx *tx_cur;
	unsigned int nr_tx;
	struct list_head unacked;
	unsigned int nr_unacked;
	atomic_t zc_inflight;
	unsigned int nr_stuck;
	u32 ka_una;
	unsigned long tx_moved;
	bool want_ka;
	unsigned long last_rx;
	unsigned long last_tx;
	bool live;
	bool hello_done;
	bool rx_paused;
	bool rx_waiting;
	struct wait_queue_entry pool_wait;
	bool rx_held;
	bool rx_excused;
	unsigned long rx_held_since;
	unsigned long rx_excused_until;
	bool teardown_queued;
	int drain_reason;
};

static inline struct krpc_tcp_conn *to_tc(struct krpc_conn *conn)
{
	return conn->xprt;
}

/* tcp.c */
struct krpc_tcp_conn *krpc_tcp_conn_alloc(struct krpc_conn *conn);
void krpc_tcp_go_live(struct krpc_tcp_conn *tc, struct socket *sock);
void krpc_tcp_fail_locked(struct krpc_tcp_conn *tc, int reason);
void krpc_tcp_hdr_init(struct krpc_wire_hdr *hdr, u8 type, u8 flags,
		       u32 method, u64 call_id, u32 status, u32 len);
void krpc_tcp_local_limits(struct krpc_conn *conn, u32 *inline_max,
			   u32 *max_msg);
void krpc_tcp_ka_start(struct krpc_tcp_conn *tc);
void krpc_tcp_cctx_progress_locked(struct krpc_tcp_cctx *cctx);

/* tcp_tx.c */
int krpc_tcp_queue_locked(struct krpc_tcp_conn *tc, const void *head,
			  u32 hlen, struct krpc_buf *buf, u32 len,
			  struct krpc_tcp_cctx *cctx, struct krpc_req *req);
void krpc_tcp_unacked_reap_locked(struct krpc_tcp_conn *tc);
bool krpc_tcp_tx_in_flight_locked(struct krpc_tcp_conn *tc);
void krpc_tcp_tx_wait(struct krpc_tcp_conn *tc);
void krpc_tcp_tx_free_unwritten(struct krpc_tcp_tx *tx);
void krpc_tcp_tx_purge_locked(struct krpc_tcp_conn *tc);
void krpc_tcp_tx_work(struct work_struct *work);

/* tcp_cm.c */
void krpc_tcp_hello_fill(struct krpc_wire_hello *h, u32 depth, u32 max_msg,
			 u32 inline_max, u16 reject, u32 value);
void krpc_tcp_hello_rx_locked(struct krpc_tcp_conn *tc);
struct krpc_pool *krpc_tcp_pool_get(void);
int krpc_tcp_connect(struct krpc_conn *conn,
		     const struct krpc_client_opts *opts);
int krpc_tcp_listen(struct krpc_server *srv);
void krpc_tcp_unlisten(struct krpc_server *srv);

/* tcp_rx.c */
void krpc_tcp_rx_work(struct work_struct *work);
void krpc_tcp_req_freed(struct krpc_conn *conn);
int krpc_tcp_pool_wake(struct wait_queue_entry *wait, unsigned int mode,
		       int sync, void *key);
void krpc_tcp_rx_wait_end_locked(struct krpc_tcp_conn *tc);
void krpc_tcp_held_reset_locked(struct krpc_tcp_conn *tc);

#endif /* KRPC_TCP_H */
