/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RDMA transport: private types shared by rdma.c (posting, flow control),
 * rdma_sctx.c (send contexts, send completions), rdma_cancel.c (aborted
 * calls, cancelled requests), rdma_rx.c (receive path),
 * rdma_res.c (connection resources), rdma_cq.c and rdma_poll.c (CQs),
 * rdma_cm.c (connection management, teardown) and rdma_mr.c (FRWR,
 * READ/WRITE).
 *
 * Every field below conn->lock in struct krpc_rdma_conn is protected by the
 * connection's lock (krpc_conn_lock()); the rest is set up before the
 * connection goes live and torn down after its queue pair is drained.
 */
#ifndef KRPC_RDMA_H
#define KRPC_RDMA_H

#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "krpc_priv.h"
#include "wire.h"

/* Control messages (credit, keepalive, cancel) in flight at once. */
#define KRPC_NR_CTRL		4
/* Receives beyond the depth: room for the peer's control messages. */
#define KRPC_EXTRA_RECVS	KRPC_NR_CTRL
/*
 * Unsignaled SENDs not known complete at most, whatever the queue: each
 * answered one keeps its request buffer until then (rdma_sctx.c).
 */
#define KRPC_UNSIG_MAX		32
/* Credits a call, reply or one-way message leaves to control messages. */
#define KRPC_CTRL_CREDITS	2
/*
 * Credits beyond what calls and replies give back that the peer keeps for
 * control messages before an explicit update is sent (credit_update_due()).
 */
#define KRPC_CREDIT_SPARE	2
/*
 * A peer left with KRPC_CREDIT_SPARE spare credits and no update coming
 * must still be able to send its calls and replies.
 */
static_assert(KRPC_CREDIT_SPARE >= KRPC_CTRL_CREDITS);
/* SGEs per SEND, RDMA READ or RDMA WRITE work request we build. */
#define KRPC_MAX_SGE		16
struct krpc_rdma_conn;

/* A server's answer to a CANCEL (struct krpc_rdma_conn.acks). */
struct krpc_cancel_ack {
	u64 call_id;
	u32 inv_rkey;		/* if @inv: key to invalidate remotely */
	bool inv;
};

/* Tells listener and connection contexts of one cm handler apart. */
struct krpc_cm_ctx {
	bool listener;
};

struct krpc_rdma_listener {
	struct krpc_cm_ctx ctx;
	struct krpc_server *srv;
	/*
	 * @id: taken by unlisten or by a DEVICE_REMOVAL event, whichever
	 * comes first.  A spinlock, not a mutex: unlisten frees the listener
	 * right after it took the lock, and a mutex_unlock() may still touch
	 * the mutex after another task acquired it.
	 */
	spinlock_t lock;
	struct rdma_cm_id *id;
};

/* sctx->ops: work waiting for send-queue slots or credits */
#define OP_INV		BIT(0)	/* client: LOCAL_INV of remote keys */
#define OP_READ		BIT(1)	/* server: READ the request payload */
#define OP_REQ		BIT(2)	/* client: REG_MR(s) + request SEND */
#define OP_REPLY	BIT(3)	/* server: WRITE(s) + reply SEND */
#define OP_CTRL		BIT(4)	/* control SEND */

/* sctx->mr_state[] */
enum {
	MR_NONE,	/* no MR */
	MR_VALID,	/* registered (REG_MR posted): the peer may use the key */
	MR_INV,		/* LOCAL_INV posted */
	MR_DEAD,	/* invalidated: the key is useless */
};

/**
 * struct krpc_sctx - a send context: one call, one request or one control
 * message, with its DMA-mapped header slot
 * @node:	rc->free_sctx, or rc->sendq while @ops is not empty
 * @rc:		connection
 * @hdr:	header slot (rc->hdrs)
 * @hdr_dma:	its DMA address
 * @cqe:	every work request of this context completes here
 * @wr_pending:	posted, not yet completed
 * @inv_pending: LOCAL_INVs among them
 * @ops:	OP_* still to post
 * @call:	client: the call (CALL_SLOT held)
 * @mr:		client: [0] request region, [1] reply region
 * @mr_state:	MR_*
 * @replied:	client: the peer answered (or, one-way, the SEND finished)
 * @aborted:	client: the core gave up on the call (timeout, cancel)
 * @released:	client: krpc_call_xprt_done_locked() was called
 * @await_ack:	client: aborted with keys the server may still use; they
 *		stay valid until it answers the CANCEL (KRPC_WFEAT_CANCEL_ACK);
 *		unanswered at @abort_at + ka_timeout_ms, the connection is
 *		reset
 * @abort_at:	client: jiffies when the call was aborted
 * @req:	server: the request being read or replied to
 * @rbuf:	server: buffer the request payload is READ into
 * @reading:	server: READs posted or to post
 * @ctrl_type:	control message type
 * @ctrl_id:	call id of a CANCEL or a cancel's answer
 * @unode:	client: on rc->unsig while the request's unsignaled SEND is
 *		not known complete (krpc_sctx_unsig()); its buffers stay with
 *		the transport until the reply or a later completion says the
 *		SEND went out
 * @useq:	number of the unsignaled SEND (rc->unsig_posted when posted)
 */
struct krpc_sctx {
	struct list_head node;
	struct krpc_rdma_conn *rc;
	struct krpc_wire_hdr *hdr;
	u64 hdr_dma;
	struct ib_cqe cqe;
	unsigned int wr_pending;
	unsigned int inv_pending;
	unsigned int ops;

	struct krpc_call *call;
	struct ib_mr *mr[2];
	u8 mr_state[2];
	bool replied;
	bool aborted;
	bool released;
	bool await_ack;
	unsigned long abort_at;

	struct krpc_req *req;
	struct krpc_buf *rbuf;
	bool reading;

	u8 ctrl_type;
	u64 ctrl_id;

	struct list_head unode;
	u32 useq;
};

/* Is a key of @sctx still valid: may the peer still use one? */
static inline bool krpc_sctx_key_valid(const struct krpc_sctx *sctx)
{
	return sctx->mr_state[0] == MR_VALID || sctx->mr_state[1] == MR_VALID;
}

/* Does @sctx wait for an unsignaled SEND (rdma.c)? */
static inline bool krpc_sctx_unsig(const struct krpc_sctx *sctx)
{
	return !list_empty(&sctx->unode);
}

/**
 * struct krpc_rx - a posted receive
 * @cqe:	receive completion
 * @rc:		connection
 * @buf:	pool buffer posted (NULL while the pool had none)
 * @early:	entry in rc->early_rx while it waits for the connection to go
 *		live (client), with what its completion said:
 * @early_len:	the completion's byte_len
 * @early_flags: the completion's wc_flags
 * @early_rkey:	the completion's ex.invalidate_rkey
 */
struct krpc_rx {
	struct ib_cqe cqe;
	struct krpc_rdma_conn *rc;
	struct krpc_buf *buf;
	struct list_head early;
	u32 early_len;
	int early_flags;
	u32 early_rkey;
};

/**
 * struct krpc_rdma_conn - RDMA state of one connection
 * @ctx:	cm handler context
 * @conn:	core connection (referenced until teardown is done)
 * @kdev:	device (referenced), once address resolution found it
 * @kdev_node:	entry in kdev->conns while attached
 * @cm_id:	rdma_cm id
 * @id_owned_by_core: rdma_cm destroys @cm_id (CONNECT_REQUEST failure)
 * @ibdev:	@kdev's ib_device
 * @qp:		queue pair
 * @cq:		completion queue: shared (ib_cq_pool_get(), hardware), or the
 *		connection's own when @pcq or @ecq is set
 * @pcq:	polled CQ (rdma_poll.c), made while poll_usecs was non-zero
 * @ecq:	a software device's CQ (rdma_cq.c), reaped per event
 * @cq_size:	entries taken from it
 * @mrs:	FRWR MRs (client side, ib_mr_pool)
 * @mr_pages:	pages per MR
 * @max_sge:	SGEs per SEND/WRITE
 * @max_sge_rd:	SGEs per READ
 * @features:	negotiated KRPC_WFEAT_*
 * @depth:	negotiated depth
 * @nr_recv:	receives in the ring
 * @rx:		the ring
 * @nr_sctx:	send contexts
 * @sctx:	the send contexts
 * @hdrs:	header slots of the send contexts
 * @hdrs_dma:	their DMA mapping (made once per connection)
 * @wr:		scratch work requests for one post (under conn->lock)
 * @sge:	scratch SGEs for one post
 * @nr_wr:	entries of @wr
 * @nr_sge:	entries of @sge
 * @teardown_work: the teardown
 * @refill_work: refills the receives the pool could not give a buffer, when
 *		one comes back (@pool_wait) or a request is freed below the
 *		bound (krpc_rdma_req_freed())
 * @pool_wait:	on the pool's wait queue while @pool_waiting: queues
 *		@refill_work when a buffer comes back
 * @qp_err_work: shuts the connection down after a fatal QP event (the
 *		event may arrive in atomic context)
 * @comm_est_work: tells the CM of an IB_EVENT_COMM_EST (rdma_notify()),
 *		in process context
 * @ka_timer:	keepalive and dead-peer detection
 * @sq_size:	send-queue slots, the drain slot excluded
 * @sq_avail:	send-queue slots free
 * @send_credits: messages the peer can receive now
 * @peer_credits: receives the peer has (largest @send_credits can be)
 * @recv_posted: receives posted
 * @grant_pending: receives posted but not yet announced to the peer
 * @credit_thresh: @grant_pending + @starved that makes a credit update due
 * @starved:	ring entries without a buffer
 * @pool_waiting: @pool_wait is on the pool's wait queue (counted in
 *		pool_waits): the pool had no buffer for a starved entry
 * @free_sctx:	idle send contexts
 * @nr_free_sctx: entries on @free_sctx
 * @nr_ctrl:	send contexts held by control messages (at most KRPC_NR_CTRL,
 *		so that calls and replies, at most @depth each, always find
 *		one of the 2 * @depth + KRPC_NR_CTRL)
 * @sendq:	send contexts with work waiting for slots or credits
 * @early_rx:	client: receives completed before ESTABLISHED was handled
 *		(struct krpc_rx.early, in completion order), processed once
 *		the connection is live
 * @wait_sctx:	server: requests waiting for a send context
 * @want_credit: send a credit update when nothing else goes out
 * @want_ka:	send a keepalive
 * @cancel_ids:	client: call ids to announce as cancelled (@depth
 *		entries: a call is aborted once and keeps its slot until it
 *		is answered, which takes back its CANCEL if still here)
 * @nr_cancel:	entries of @cancel_ids
 * @nr_await:	client: contexts with @await_ack set
 * @acks:	server: answers (ERROR ECANCELED) owed to CANCELs of calls
 *		with keys, whose handlers still run (@depth entries: each
 *		frees its slot, which the client reuses only after the answer)
 * @nr_acks:	entries of @acks
 * @unsig_cqe:	where a flushed unsignaled SEND completes (its context may
 *		already serve another call)
 * @unsig_max:	unsignaled SENDs not known complete at most (0: none)
 * @unsig_posted: unsignaled SENDs posted (wraps)
 * @unsig_done:	unsignaled SENDs known complete (wraps)
 * @marks:	@unsig_posted when each outstanding signaled work request was
 *		posted, in posting order (@sq_size entries): its completion
 *		says every unsignaled SEND before it completed too
 * @mark_head:	oldest entry of @marks (index modulo @sq_size; wraps)
 * @mark_tail:	next free entry of @marks
 * @unsig:	contexts with an unsignaled SEND not known complete, by @useq
 * @unsig_bufs:	request buffers of calls answered before their unsignaled
 *		SEND was known complete, at [useq & @unsig_mask] until it is
 *		(rdma_sctx.c); @unsig_max or more entries, a power of two
 * @unsig_mask:	entries of @unsig_bufs less one
 * @last_rx:	jiffies of the last receive
 * @last_tx:	jiffies of the last send
 * @teardown_queued: teardown was queued
 * @rx_seen:	server: a message came from the client (rdma_rx.c)
 * @cm_established: server: rdma_cm reported ESTABLISHED (the RTU came, or
 *		the teardown's rdma_notify() was handled), so ib_cm stopped
 *		resending the REP
 * @live:	resources exist and the connection is not dead
 * @dying:	teardown started: cm events are ignored (read under the cm
 *		handler lock)
 * @connect_tmo: ms allowed for address and route resolution
 */
struct krpc_rdma_conn {
	struct krpc_cm_ctx ctx;
	struct krpc_conn *conn;
	struct krpc_device *kdev;
	struct list_head kdev_node;
	struct rdma_cm_id *cm_id;
	bool id_owned_by_core;
	struct ib_device *ibdev;
	struct ib_qp *qp;
	struct ib_cq *cq;
	struct krpc_pcq *pcq;
	struct krpc_ecq *ecq;
	unsigned int cq_size;
	struct list_head mrs;
	u32 mr_pages;
	u32 max_sge;
	u32 max_sge_rd;
	u64 features;
	u32 depth;
	u32 nr_recv;
	struct krpc_rx *rx;
	u32 nr_sctx;
	struct krpc_sctx *sctx;
	struct krpc_wire_hdr *hdrs;
	u64 hdrs_dma;
	struct ib_rdma_wr *wr;
	struct ib_sge *sge;
	u32 nr_wr;
	u32 nr_sge;
	struct work_struct teardown_work;
	struct delayed_work refill_work;
	struct wait_queue_entry pool_wait;
	struct work_struct qp_err_work;
	struct work_struct comm_est_work;
	struct timer_list ka_timer;

	/* conn->lock */
	u32 sq_size;
	u32 sq_avail;
	u32 send_credits;
	u32 peer_credits;
	u32 recv_posted;
	u32 grant_pending;
	u32 credit_thresh;
	u32 starved;
	bool pool_waiting;
	struct list_head free_sctx;
	u32 nr_free_sctx;
	u32 nr_ctrl;
	struct list_head sendq;
	struct list_head early_rx;
	struct list_head wait_sctx;
	bool want_credit;
	bool want_ka;
	u64 *cancel_ids;
	u32 nr_cancel;
	u32 nr_await;
	struct krpc_cancel_ack *acks;
	u32 nr_acks;
	struct ib_cqe unsig_cqe;
	u32 unsig_max;
	u32 unsig_posted;
	u32 unsig_done;
	u32 *marks;
	u32 mark_head;
	u32 mark_tail;
	struct list_head unsig;
	struct krpc_buf **unsig_bufs;
	u32 unsig_mask;
	unsigned long last_rx;
	unsigned long last_tx;
	bool teardown_queued;
	bool rx_seen;
	struct completion cm_established;
	bool live;
	bool dying;
	unsigned int connect_tmo;
};

/*
 * Server: the client key that a reply or a cancel answer to @req
 * invalidates remotely (SEND_WITH_INV): the reply room's, else the
 * request's.  False if there is none, or no REMOTE_INV.
 */
static inline bool krpc_rdma_req_inv_rkey(const struct krpc_rdma_conn *rc,
					  const struct krpc_req *req,
					  u32 *rkey)
{
	if (!(rc->features & KRPC_WFEAT_REMOTE_INV))
		return false;
	if (req->xrdv[1].len)
		*rkey = req->xrdv[1].rkey;
	else if (req->xrdv[0].len)
		*rkey = req->xrdv[0].rkey;
	else
		return false;
	return true;
}

/* rdma.c: posting, flow control, transport operations */
void krpc_rdma_flush_locked(struct krpc_rdma_conn *rc);
void krpc_rdma_fail_locked(struct krpc_rdma_conn *rc, int reason);
void krpc_rdma_wc_failed_locked(struct krpc_rdma_conn *rc, struct ib_wc *wc,
				const char *what);
void krpc_rdma_shutdown_rc(struct krpc_rdma_conn *rc, int reason);

/* rdma_cancel.c: aborted calls, cancelled requests */
void krpc_rdma_abort_call(struct krpc_conn *conn, struct krpc_call *call);
void krpc_rdma_cancel_forget_locked(struct krpc_rdma_conn *rc, u64 call_id);
int krpc_rdma_cancel_ack_locked(struct krpc_rdma_conn *rc,
				struct krpc_req *req);

/* rdma_sctx.c: send contexts and send completions */
struct krpc_sctx *krpc_sctx_get_locked(struct krpc_rdma_conn *rc);
void krpc_sctx_put_locked(struct krpc_sctx *sctx);
void krpc_sctx_queue_locked(struct krpc_sctx *sctx, unsigned int op);
void krpc_sctx_inv_moot_locked(struct krpc_sctx *sctx);
void krpc_rdma_sctx_progress_locked(struct krpc_sctx *sctx);
void krpc_rdma_send_done(struct ib_cq *cq, struct ib_wc *wc);
void krpc_rdma_unsig_done(struct ib_cq *cq, struct ib_wc *wc);
void krpc_rdma_unsig_forget_locked(struct krpc_sctx *sctx);
void krpc_rdma_unsig_unhold_locked(struct krpc_rdma_conn *rc, u32 useq);
void krpc_rdma_read_req_locked(struct krpc_rdma_conn *rc, struct krpc_req *req);
void krpc_sctx_await_end_locked(struct krpc_sctx *sctx);
bool krpc_rdma_await_expire_locked(struct krpc_rdma_conn *rc,
				   unsigned long now);

/* rdma_res.c: connection resources, receives, keepalive */
int krpc_rdma_setup(struct krpc_rdma_conn *rc, u32 depth);
void krpc_rdma_go_live_locked(struct krpc_rdma_conn *rc, u32 peer_credits);
void krpc_rdma_req_freed(struct krpc_conn *conn);
void krpc_rdma_release_all(struct krpc_rdma_conn *rc);
void krpc_rdma_destroy_resources(struct krpc_rdma_conn *rc);
void krpc_rdma_ka_start(struct krpc_rdma_conn *rc);
void krpc_rdma_free(struct krpc_conn *conn);
void krpc_rdma_init_rc(struct krpc_rdma_conn *rc);
int krpc_rdma_post_recv_locked(struct krpc_rdma_conn *rc, struct krpc_rx *rx);
void krpc_rdma_refill_locked(struct krpc_rdma_conn *rc);
void krpc_rdma_refill_wait_end_locked(struct krpc_rdma_conn *rc);

/*
 * The reply of a request whose client cancelled the call after it granted
 * keys is the answer the client awaits before it lets them go: a control
 * message (rdma.c), never written into the region (an ERROR or an inline
 * reply, post_reply_locked()).
 */
static inline bool krpc_rdma_answers_cancel(const struct krpc_rdma_conn *rc,
					    const struct krpc_req *req)
{
	return (READ_ONCE(req->flags) & REQ_CANCELLED) &&
	       (rc->features & KRPC_WFEAT_CANCEL_ACK) &&
	       (req->xrdv[0].len || req->xrdv[1].len);
}

/* The server holds krpc_req_bound() requests: it takes no more receives. */
static inline bool krpc_rdma_reqs_held(const struct krpc_rdma_conn *rc)
{
	return rc->conn->server &&
	       rc->conn->nr_reqs >= krpc_req_bound(rc->conn);
}

/* rdma_cq.c: software devices' CQs */
#define KRPC_REAP_BATCH		16	/* work completions per ib_poll_cq() */
int krpc_rdma_reap_cq(struct ib_cq *cq, struct ib_wc *wc, int budget,
		      u32 conn_id);
int krpc_rdma_ecq_create(struct krpc_rdma_conn *rc);
void krpc_rdma_ecq_destroy(struct krpc_rdma_conn *rc);

/* rdma_poll.c: polled CQs */
int krpc_rdma_poll_cq_create(struct krpc_rdma_conn *rc);
void krpc_rdma_poll_cq_destroy(struct krpc_rdma_conn *rc);

/* rdma_rx.c: receive path */
void krpc_rdma_recv_done(struct ib_cq *cq, struct ib_wc *wc);
void krpc_rdma_early_rx_locked(struct krpc_rdma_conn *rc);
int krpc_rdma_msg_table_check(void);

/* rdma_mr.c: FRWR registration and READ/WRITE chains */
int krpc_mr_map(struct krpc_rdma_conn *rc, struct krpc_sctx *sctx,
		unsigned int i, struct krpc_buf *buf, u32 off, u32 len,
		int access, struct ib_reg_wr *reg);
void krpc_mr_put_all_locked(struct krpc_sctx *sctx);
unsigned int krpc_buf_sges(struct krpc_rdma_conn *rc, struct krpc_buf *buf,
			   u32 off, u32 len, struct ib_sge *sge,
			   unsigned int max);
unsigned int krpc_rw_nr_wr(struct krpc_rdma_conn *rc, struct krpc_buf *buf,
			   u32 off, u32 len, u32 per_wr);
unsigned int krpc_rw_build(struct krpc_rdma_conn *rc, struct krpc_sctx *sctx,
			   enum ib_wr_opcode op, struct krpc_buf *buf,
			   u32 len, u64 raddr, u32 rkey, u32 per_wr);

/* rdma_cm.c: connection management */
int krpc_rdma_connect(struct krpc_conn *conn,
		      const struct krpc_client_opts *opts);
int krpc_rdma_listen(struct krpc_server *srv);
void krpc_rdma_unlisten(struct krpc_server *srv);
void krpc_rdma_shutdown(struct krpc_conn *conn, int reason);
void krpc_rdma_teardown_work(struct work_struct *work);

static inline struct krpc_rdma_conn *to_rc(struct krpc_conn *conn)
{
	return conn->xprt;
}

#endif /* KRPC_RDMA_H */
