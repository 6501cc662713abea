// SPDX-License-Identifier: GPL-2.0
/*
 * TCP transport, send side: the queue of messages, tx_work (the only
 * writer of the socket) and the zero-copy payloads waiting for the peer's
 * acknowledgement.
 *
 * A header is copied into the socket (kernel_sendmsg(), MSG_MORE: it is
 * slab memory and no payload).  A payload goes by reference: sock_sendmsg()
 * with MSG_ZEROCOPY and a completion of krpc's own (msg_ubuf, as io_uring's
 * zero-copy send does) over the pages of its pool buffer.  Only a payload
 * with a page that could not go (sendpage_ok() fails) is copied instead,
 * counted in "copies".
 *
 * By reference, the stack keeps the pages until the peer acknowledged them
 * and retransmits from them until then; a peer on this host (loopback,
 * veth) gets a copy when the skb is delivered (skb_orphan_frags_rx()), not
 * the pages.  The completion runs when the last skb referencing them is
 * freed: only then may the buffer go back, else a retransmission could
 * carry new contents.  So a written zero-copy message moves from the txq
 * to tc->unacked, and once completed its buffer is handed back: a server's
 * reply (its request) is freed, a one-way call completes ("sent"), a call's
 * buffers are released.  A reply does not release a call sooner: an
 * honest server has read the request and acknowledged it by then, but a
 * peer may reply before it reads, with the pages still unsent in our
 * socket, and a buffer refilled for another call would then go out in
 * their place.
 *
 * Wake-up: the completion (any context) marks the message done and queues
 * tx_work, which reaps first; rx_work reaps before it takes a buffer for a
 * message.  Lifetime: each completion not yet run is counted in
 * tc->zc_inflight and runs under rcu_read_lock(); the teardown waits for
 * the count to reach 0, then for an RCU grace period, before tc can go.
 */
#include <linux/bvec.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <linux/wait_bit.h>

#include "compat/sock.h"
#include "inject.h"
#include "tcp.h"
#include "pool.h"
#include "transport.h"

/* Payload pieces (up to a segment each) per send call. */
#define TX_BVECS	16

/*
 * A page of the payload cannot be handed to the socket by reference (a
 * pool's pages always can: they are never slab memory, and each holds a
 * reference), so the payload is copied.  A fault-injection point
 * (inject.h) with an injected "true": the copy fallback, tested.
 */
static KRPC_FAULT_POINT bool
krpc_tcp_payload_must_copy(const struct krpc_buf *buf, u32 len)
{
	u32 pos = buf->off & PAGE_MASK, end = buf->off + len;

	for (; pos < end; pos += PAGE_SIZE) {
		const struct krpc_seg *seg = &buf->segs[pos >> buf->seg_shift];
		u32 in = pos & ((1U << buf->seg_shift) - 1);

		if (!sendpage_ok(seg->page + (in >> PAGE_SHIFT)))
			return true;
	}
	return false;
}
ALLOW_ERROR_INJECTION(krpc_tcp_payload_must_copy, TRUE);

/*
 * Queue a message for tx_work.  @head is copied; @buf stays owned by the
 * call or request until the message is written or, sent by reference,
 * until the stack let go of its pages.
 */
int krpc_tcp_queue_locked(struct krpc_tcp_conn *tc, const void *head,
			  u32 hlen, struct krpc_buf *buf, u32 len,
			  struct krpc_tcp_cctx *cctx, struct krpc_req *req)
{
	struct krpc_tcp_tx *tx;

	lockdep_assert_held(&tc->conn->lock);
	tx = kzalloc(sizeof(*tx), GFP_ATOMIC);
	if (!tx)
		return -ENOMEM;
	memcpy(tx->head, head, hlen);
	tx->hlen = hlen;
	tx->buf = len ? buf : NULL;
	tx->len = len;
	tx->cctx = cctx;
	tx->req = req;
	tx->tc = tc;
	if (len) {
		tx->zc = !krpc_tcp_payload_must_copy(buf, len);
		if (tx->zc) {
			krpc_compat_ubuf_init(&tx->ubuf);
			atomic_inc(&tc->zc_inflight);
			atomic64_inc(&krpc_stats.tcp_zc_sends);
		} else {
			krpc_conn_stat_inc(tc->conn, KRPC_STAT_COPIES);
		}
	}
	if (cctx)
		cctx->tx = tx;
	list_add_tail(&tx->node, &tc->txq);
	tc->nr_tx++;
	tc->last_tx = jiffies;
	queue_work(krpc_wq, &tc->tx_work);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Messages sent by reference, until the stack let go of their pages */

/**
 * krpc_tcp_zc_complete() - a reference on a zero-copy completion is dropped
 * @skb:	the skb that referenced the pages, or NULL (krpc's own)
 * @uarg:	the completion, in a struct krpc_tcp_tx
 * @success:	false if the stack copied the pages after all
 *
 * The last one means the stack is done with the pages: the message may be
 * reaped.  tc outlives this (see the teardown).
 *
 * Context: any context.
 */
void krpc_tcp_zc_complete(struct sk_buff *skb, struct ubuf_info *uarg,
			  bool success)
{
	struct krpc_tcp_tx *tx = container_of(uarg, struct krpc_tcp_tx, ubuf);
	struct krpc_tcp_conn *tc = tx->tc;

	if (!refcount_dec_and_test(&uarg->refcnt))
		return;
	rcu_read_lock();
	/* @tx may be freed from here on; pairs with the reap's acquire */
	smp_store_release(&tx->zc_done, true);
	queue_work(krpc_wq, &tc->tx_work);
	if (atomic_dec_and_test(&tc->zc_inflight))
		wake_up_var(&tc->zc_inflight);
	rcu_read_unlock();
}

/* Drop krpc's own reference: the message is written, or never will be. */
static void zc_put(struct krpc_tcp_tx *tx)
{
	krpc_tcp_zc_complete(NULL, &tx->ubuf, true);
}

static void unacked_del_locked(struct krpc_tcp_conn *tc,
			       struct krpc_tcp_tx *tx)
{
	list_del(&tx->node);
	/* Read by rx_work without the lock, as a hint. */
	WRITE_ONCE(tc->nr_unacked, tc->nr_unacked - 1);
}

/* @tx is done with its buffer: its call may complete, its request goes. */
static void tx_release_locked(struct krpc_tcp_tx *tx)
{
	if (tx->cctx) {
		tx->cctx->sent = true;
		krpc_tcp_cctx_progress_locked(tx->cctx);
	}
	if (tx->req)
		krpc_req_free_locked(tx->req);
	kfree(tx);
}

static void unacked_done_locked(struct krpc_tcp_conn *tc,
				struct krpc_tcp_tx *tx)
{
	unacked_del_locked(tc, tx);
	if (tx->cctx)
		tx->cctx->unacked = NULL;
	tx_release_locked(tx);
}

/* Hand back what the stack is done with. */
void krpc_tcp_unacked_reap_locked(struct krpc_tcp_conn *tc)
{
	struct krpc_tcp_tx *tx, *tmp;

	lockdep_assert_held(&tc->conn->lock);
	list_for_each_entry_safe(tx, tmp, &tc->unacked, node) {
		/* Pairs with the completion's release of zc_done */
		if (smp_load_acquire(&tx->zc_done))
			unacked_done_locked(tc, tx);
	}
}

/* A message never written is dropped (an aborted call). */
void krpc_tcp_tx_free_unwritten(struct krpc_tcp_tx *tx)
{
	/* Only our reference: the completion runs here. */
	if (tx->zc)
		zc_put(tx);
	kfree(tx);
}

/*
 * Teardown, no work running: does the socket still hold pages of a buffer,
 * unacknowledged or of a payload written in part?
 */
bool krpc_tcp_tx_in_flight_locked(struct krpc_tcp_conn *tc)
{
	struct krpc_tcp_tx *tx;

	lockdep_assert_held(&tc->conn->lock);
	krpc_tcp_unacked_reap_locked(tc);
	if (tc->nr_unacked)
		return true;
	/* Only the first message can have been written in part. */
	tx = list_first_entry_or_null(&tc->txq, struct krpc_tcp_tx, node);
	return tx && tx->zc && tx->sent > tx->hlen;
}

/*
 * Teardown, the socket released: wait until the stack let go of every
 * page krpc gave it, and until no completion runs any more.
 *
 * Context: process context, no work of @tc running; sleeps.
 */
void krpc_tcp_tx_wait(struct krpc_tcp_conn *tc)
{
	struct krpc_tcp_tx *tx;

	krpc_conn_lock(tc->conn);
	list_for_each_entry(tx, &tc->txq, node) {
		if (tx->zc) {
			tx->zc = false;
			zc_put(tx);
		}
	}
	krpc_conn_unlock(tc->conn);
	/* The queues are purged: only skbs on their way out are left. */
	wait_var_event(&tc->zc_inflight, !atomic_read(&tc->zc_inflight));
	/* No completion touches @tc after this ... */
	synchronize_rcu();
	/* ... nor does the tx_work one may have queued. */
	cancel_work_sync(&tc->tx_work);
}

/*
 * Teardown, after krpc_tcp_tx_wait(): nothing is sent or retransmitted from
 * any buffer any more.
 */
static void tx_drop_locked(struct krpc_tcp_tx *tx)
{
	/* A call's message is on one list: txq (tx) or unacked. */
	if (tx->cctx && tx->cctx->tx == tx)
		tx->cctx->tx = NULL;
	if (tx->cctx && tx->cctx->unacked == tx)
		tx->cctx->unacked = NULL;
	if (tx->req)
		krpc_req_free_locked(tx->req);
	kfree(tx);
}

void krpc_tcp_tx_purge_locked(struct krpc_tcp_conn *tc)
{
	struct krpc_tcp_tx *tx, *tmp;

	lockdep_assert_held(&tc->conn->lock);
	tc->tx_cur = NULL;
	list_for_each_entry_safe(tx, tmp, &tc->txq, node) {
		list_del(&tx->node);
		tx_drop_locked(tx);
	}
	tc->nr_tx = 0;
	list_for_each_entry_safe(tx, tmp, &tc->unacked, node) {
		unacked_del_locked(tc, tx);
		tx_drop_locked(tx);
	}
}

/* ---------------------------------------------------------------------- */
/* tx_work: the only writer of the socket */

/* @tx is written entirely: release it, or keep it until acknowledged. */
static void tx_done_locked(struct krpc_tcp_conn *tc, struct krpc_tcp_tx *tx)
{
	list_del(&tx->node);
	tc->nr_tx--;
	tc->tx_cur = NULL;
	if (tx->zc) {
		list_add_tail(&tx->node, &tc->unacked);
		WRITE_ONCE(tc->nr_unacked, tc->nr_unacked + 1);
		if (tx->cctx) {
			tx->cctx->tx = NULL;
			tx->cctx->unacked = tx;
			krpc_tcp_cctx_progress_locked(tx->cctx);
		}
		/* The skbs hold the rest; the reap follows the completion. */
		zc_put(tx);
		return;
	}
	if (tx->cctx)
		tx->cctx->tx = NULL;
	tx_release_locked(tx);
}

/* Header and payload copied into the socket in one call. */
static int tx_write_copy(struct krpc_tcp_conn *tc, struct krpc_tcp_tx *tx,
			 bool more)
{
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL };
	struct kvec kv[2];
	unsigned int n = 0;
	size_t total = 0;
	int ret;

	if (tx->sent < tx->hlen) {
		kv[n].iov_base = tx->head + tx->sent;
		kv[n].iov_len = tx->hlen - tx->sent;
		total += kv[n++].iov_len;
	}
	if (tx->len) {
		u32 done = tx->sent > tx->hlen ? tx->sent - tx->hlen : 0;

		kv[n].iov_base = tx->buf->vaddr + tx->buf->off + done;
		kv[n].iov_len = tx->len - done;
		total += kv[n++].iov_len;
	}
	if (more)
		msg.msg_flags |= MSG_MORE;
	ret = kernel_sendmsg(tc->sock, &msg, kv, n, total);
	if (ret > 0)
		tx->sent += ret;
	return ret;
}

/*
 * The rest of the header copied, then the payload's pages by reference
 * (each skb that takes some holds a reference on tx->ubuf).
 */
static int tx_write_zc(struct krpc_tcp_conn *tc, struct krpc_tcp_tx *tx,
		       bool more)
{
	struct krpc_buf *buf = tx->buf;
	u32 seg_size = 1U << buf->seg_shift;
	struct msghdr msg = {};
	struct bio_vec bv[TX_BVECS];
	unsigned int n = 0;
	size_t total = 0;
	u32 pos, left;
	int flags = MSG_DONTWAIT | MSG_NOSIGNAL;
	int ret;

	if (tx->sent < tx->hlen) {
		struct kvec kv = {
			.iov_base = tx->head + tx->sent,
			.iov_len = tx->hlen - tx->sent,
		};

		msg.msg_flags = flags | MSG_MORE;
		ret = kernel_sendmsg(tc->sock, &msg, &kv, 1, kv.iov_len);
		if (ret <= 0)
			return ret;
		tx->sent += ret;
		if (tx->sent < tx->hlen)
			return ret;
	}
	pos = buf->off + tx->sent - tx->hlen;
	left = tx->len - (tx->sent - tx->hlen);
	while (left && n < TX_BVECS) {
		const struct krpc_seg *seg = &buf->segs[pos >> buf->seg_shift];
		u32 in = pos & (seg_size - 1);
		u32 piece = min(left, seg_size - in);

		/* A multi-page entry within one compound segment. */
		bvec_set_page(&bv[n++], seg->page + (in >> PAGE_SHIFT), piece,
			      offset_in_page(in));
		pos += piece;
		left -= piece;
		total += piece;
	}
	if (left || more)
		flags |= MSG_MORE;
	msg.msg_flags = flags | MSG_ZEROCOPY;
	msg.msg_ubuf = &tx->ubuf;
	iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, bv, n, total);
	ret = sock_sendmsg(tc->sock, &msg);
	if (ret > 0)
		tx->sent += ret;
	return ret;
}

void krpc_tcp_tx_work(struct work_struct *work)
{
	struct krpc_tcp_conn *tc = container_of(work, struct krpc_tcp_conn,
						tx_work);
	struct krpc_conn *conn = tc->conn;
	struct krpc_tcp_tx *tx;
	unsigned int budget = 64;
	bool more;
	int ret;

	krpc_conn_lock(conn);
	if (tc->live)
		krpc_tcp_unacked_reap_locked(tc);
	krpc_conn_unlock(conn);

	while (budget--) {
		krpc_conn_lock(conn);
		tx = list_first_entry_or_null(&tc->txq, struct krpc_tcp_tx,
					      node);
		if (!tc->live || !tx ||
		    READ_ONCE(krpc_fault_mute) == conn->id) {
			if (tc->live && !tx && tc->drain_reason)
				krpc_tcp_fail_locked(tc, tc->drain_reason);
			krpc_conn_unlock(conn);
			return;
		}
		tc->tx_cur = tx;
		more = !list_is_last(&tx->node, &tc->txq);
		krpc_conn_unlock(conn);

		ret = tx->zc ? tx_write_zc(tc, tx, more) :
			       tx_write_copy(tc, tx, more);
		if (ret == -EAGAIN)
			return;		/* sk_write_space requeues us */
		krpc_conn_lock(conn);
		if (ret < 0 && tc->live && tc->rx_held &&
		    (ret == -ECONNRESET || ret == -EPIPE)) {
			krpc_tcp_held_reset_locked(tc);
		} else if (ret < 0) {
			if (tc->live)
				pr_warn_ratelimited("conn %u: send to %pISpc failed: %d; closing\n",
						    conn->id, &conn->peer, ret);
			krpc_tcp_fail_locked(tc, -ECONNRESET);
		} else if (tx->sent == tx->hlen + tx->len) {
			tx_done_locked(tc, tx);
		}
		krpc_conn_unlock(conn);
		if (ret < 0)
			return;
		cond_resched();
	}
	queue_work(krpc_wq, &tc->tx_work);
}
