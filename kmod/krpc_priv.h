/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krpc private declarations shared by the module's files.
 *
 * Locking, outermost first:
 *   krpc_devices_lock (mutex, device.c) - the list of RDMA devices krpc sees;
 *	taken from module init/exit, the ib_client add/remove callbacks
 *	(process context, may sleep) and debugfs readers.
 *   krpc_device.lock (mutex) - a device's PD, default pool and connection
 *	list; taken from rdma_cm callbacks and the ib_client remove callback.
 *   krpc_server.lock (mutex) - a server's listener state and connection
 *	list; taken from krpc_server_*() callers and rdma_cm callbacks.
 *   krpc_conns_lock (spinlock, _bh) - the global connection list (debugfs
 *	readers take each krpc_conn.lock inside it).
 *   krpc_conn.lock (spinlock, _bh) - everything about one connection that
 *	moves on the data path: call slots, backlog, server request slots,
 *	and the transport's credits, send queue and per-message contexts.
 *	Taken from callers of the API (process or softirq), completion
 *	handlers (softirq: CQs are IB_POLL_SOFTIRQ; a software device's CQ
 *	work with bottom halves disabled, rdma_cq.c; or a poller thread
 *	with bottom halves disabled, rdma_poll.c), timers and workqueues.
 *	User callbacks and NOSLEEP handlers never run under it: they are
 *	queued and run by krpc_conn_unlock().
 *   krpc_pool.wait.lock (wait queue, irqsave) - krpc_buf_get() sleepers,
 *	TCP connections waiting for a buffer (tcp_rx.c) and RDMA receive
 *	rings waiting for one (rdma_res.c); a connection adds and removes
 *	its entry under krpc_conn.lock.  krpc_buf_put() wakes them after
 *	dropping krpc_pool.lock.
 *   ib_mr_pool's qp->mr_lock, then krpc_pool.lock (spinlock, _bh) - a pool's free lists; innermost.
 *
 * Contexts: rdma_cm event handlers run in process context, serialised per
 * cm_id, and never destroy their own id: teardown is queued on krpc_wq.
 * The ib_client remove callback runs in process context and waits for the
 * teardown of every connection on its device.
 */
#ifndef KRPC_PRIV_H
#define KRPC_PRIV_H

#include <linux/types.h>
#include <linux/list.h>
#include <linux/kref.h>
#include <linux/atomic.h>
#include <linux/printk.h>
#include <linux/spinlock.h>
#include <linux/mutex.h>
#include <linux/completion.h>
#include <linux/timer.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <linux/socket.h>

#include "krpc.h"

#undef pr_fmt
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

struct ib_device;
struct ib_pd;
struct dentry;
struct seq_file;
struct krpc_transport_ops;

/* ---------------------------------------------------------------------- */
/* Counters */

/* Order matches struct krpc_conn_stats field by field. */
enum krpc_stat {
	KRPC_STAT_CALLS,
	KRPC_STAT_REPLIES,
	KRPC_STAT_BYTES_TX,
	KRPC_STAT_BYTES_RX,
	KRPC_STAT_ERRORS,
	KRPC_STAT_TIMEOUTS,
	KRPC_STAT_CANCELS,
	KRPC_STAT_RETRIES,
	KRPC_STAT_RNR_NAKS,
	KRPC_STAT_CREDIT_STALLS,
	KRPC_STAT_WINDOW_FULL,
	KRPC_STAT_STALE,
	KRPC_STAT_EAGER,
	KRPC_STAT_RDV,
	KRPC_STAT_MR_GRANTS,
	KRPC_STAT_DP_REGS,
	KRPC_STAT_COPIES,
	KRPC_STAT_RX_PAUSES,
	KRPC_STAT_CREDIT_MSGS,
	KRPC_STAT_UNSIGNALED,
	KRPC_STAT_POOL_WAITS,
	KRPC_STAT_NR,
};

extern const char *const krpc_stat_names[KRPC_STAT_NR];

/* Module-wide counters, shown in debugfs krpc/stats. */
struct krpc_global_stats {
	atomic64_t devices_added;
	atomic64_t devices_removed;
	atomic64_t files_opened;
	atomic64_t files_open;
	atomic64_t conns_open;
	atomic64_t conns_total;
	atomic64_t conns_rejected;
	atomic64_t protocol_errors;
	atomic64_t tcp_fallbacks;
	atomic64_t tcp_zc_sends;	/* TCP payloads sent by reference */
	/* completions of software devices' CQs (rdma_cq.c) reaped ... */
	atomic64_t cq_reaped_softirq;	/* ... in softirq (irq_poll) */
	atomic64_t cq_reaped_work;	/* ... on krpc_cq_wq */
	atomic64_t cq_irq_work;		/* events sent to softirq by irq_work */
	atomic64_t cq_polled;		/* completions reaped by pollers */
	atomic64_t poll_sleeps;		/* pollers that armed their CQs and slept */
	atomic64_t poll_defers;		/* poller ticks left to busy pollers */
	atomic64_t busy_polled;		/* completions reaped by processes */
	atomic64_t ucq_busy_polls;	/* KRPC_IOC_CQ_POLL calls */
	atomic64_t ucq_posted;		/* entries written to completion queues */
	atomic64_t ucq_live;		/* completion queues allocated */
	atomic64_t pools;
	atomic64_t pool_empty;
	atomic64_t dma_mapped;		/* pool segments mapped for DMA */
	atomic64_t calls_live;
	atomic64_t reqs_live;
	atomic64_t early_rx;		/* RDMA client receives before ESTABLISHED */
	atomic64_t cancel_acks;		/* RDMA servers' answers to CANCELs */
	atomic64_t cancel_unanswered;	/* RDMA CANCELs unanswered: resets */
	atomic64_t tcp_stuck_resets;	/* TCP calls done, buffers kept: resets */
	/* request buffers kept past their call's reply (rdma_sctx.c) ... */
	atomic64_t unsig_holds;		/* ... in all */
	atomic64_t unsig_held;		/* ... kept now */
	atomic64_t conn[KRPC_STAT_NR];	/* sums over all connections */
};

extern struct krpc_global_stats krpc_stats;

/* ---------------------------------------------------------------------- */
/* Module parameters (params.c) */

struct krpc_param {
	unsigned int val;
	unsigned int min;
	unsigned int max;
};

#define krpc_param(name)	READ_ONCE(krpc_param_##name.val)
extern struct krpc_param krpc_param_depth, krpc_param_buf_size,
	krpc_param_eager_max, krpc_param_max_msg, krpc_param_pool_small,
	krpc_param_pool_medium, krpc_param_pool_large,
	krpc_param_call_timeout_ms, krpc_param_connect_timeout_ms,
	krpc_param_ka_interval_ms, krpc_param_ka_timeout_ms,
	krpc_param_rnr_retry, krpc_param_upool_max_mb, krpc_param_transport,
	krpc_param_poll_usecs, krpc_param_poll_threads, krpc_param_cq_shared,
	krpc_param_unsignaled, krpc_param_max_conns;

int krpc_params_check(void);
struct krpc_pool_cfg;
void krpc_params_pool_cfg(struct krpc_pool_cfg *cfg);
u32 krpc_params_inline_max(void);

/* Fault knobs for tests (debugfs krpc/fault_*); 0 = off. */
extern u16 krpc_fault_proto_version;
extern u32 krpc_fault_mute;
extern u32 krpc_fault_client_delay_ms;
extern u32 krpc_fault_drop_cancel;
extern u32 krpc_fault_oneway_delay_ms;
extern u32 krpc_fault_cq_irq_work;
u16 krpc_client_wire_version(void);

/* ---------------------------------------------------------------------- */
/* Devices (device.c) */

/**
 * struct krpc_device - an RDMA device seen through krpc's ib_client
 * @node:	entry in the device list, under krpc_devices_lock
 * @ibdev:	the ib_core device; valid until the client's remove callback
 * @ref:	held by the device list and by every user of the device
 * @lock:	@pd, @pool, @conns, @dying
 * @pd:		protection domain of every krpc QP on the device (created on
 *		first use; never with IB_PD_UNSAFE_GLOBAL_RKEY)
 * @pool:	default registered pool of kernel clients (first use)
 * @conns:	transport connections using the device
 * @dying:	remove callback running: no new connection may attach
 * @wq:		remove callback waits here for @conns to empty
 */
struct krpc_device {
	struct list_head node;
	struct ib_device *ibdev;
	struct kref ref;
	struct mutex lock;	/* @pd, @pool, @conns, @dying */
	struct ib_pd *pd;
	struct krpc_pool *pool;
	struct list_head conns;
	bool dying;
	wait_queue_head_t wq;
};

int krpc_device_init(void);
void krpc_device_exit(void);
unsigned int krpc_device_count(void);
struct krpc_device *krpc_device_lookup(struct ib_device *ibdev);
void krpc_device_put(struct krpc_device *kdev);
int krpc_device_attach(struct krpc_device *kdev, struct list_head *node,
		       struct krpc_pool **pool);
void krpc_device_detach(struct krpc_device *kdev, struct list_head *node);
int krpc_device_show(struct seq_file *m, void *unused);

/* Transport hook: shut down a connection found on a device's list. */
void krpc_rdma_device_removal(struct list_head *node);
/* Stop the poller threads (rdma_poll.c), once every connection is gone. */
void krpc_rdma_poll_exit(void);
/* Busy polling of the polled CQs by a process (rdma_poll.c). */
int krpc_rdma_busy_poll(const void *owner, bool (*stop)(void *arg), void *arg);
/* debugfs krpc/pollers (rdma_poll.c). */
int krpc_pollers_show(struct seq_file *m, void *unused);

/* ---------------------------------------------------------------------- */
/* Connections (conn.c) */

/**
 * struct krpc_conn - one connection, client or server side
 * @ref:	held by the owner (client or server), the transport until its
 *		teardown is done, each call and each request
 * @lock:	see the lock order above
 * @state:	enum krpc_conn_state
 * @reason:	negative errno the connection died with
 * @server:	accepted by a server (else created by a client)
 * @ops:	transport
 * @xprt:	transport's private state
 * @net:	network namespace (referenced)
 * @pool:	registered pool the connection draws buffers from (set by the
 *		transport once the device is known; referenced)
 * @peer:	peer address
 * @depth:	negotiated outstanding-call limit (slots)
 * @max_depth:	size of @calls / @reqs
 * @inline_max:	largest payload sent inline to the peer
 * @max_msg:	largest payload either side accepts
 * @timeout_ms:	default call timeout (client)
 * @ka_peer_ms:	the peer's ka_timeout_ms from the handshake, 0 if it
 *		announced none; set before the connection is up
 * @cq_poll:	RDMA: completions reaped by a poller thread (rdma_poll.c),
 *		decided when the connection is made (krpc_cq_mode_resolve())
 * @calls:	client: slot -> call holding it
 * @free_slots:	client: stack of free slot numbers below @depth
 * @nr_free:	entries on @free_slots
 * @seq:	client: sequence part of the next call id
 * @backlog:	client: calls waiting for a slot
 * @nr_backlog:	entries on @backlog
 * @backlog_unsorted: a call on @backlog is due before one queued ahead of
 *		it (set until @backlog empties; rpc.c's timer scan)
 * @zombies:	slots held by abandoned calls whose reply has not come
 * @nr_unreplied: client: calls holding a slot whose reply has not come
 *		(RDMA credit updates, rdma.c)
 * @call_timer:	client: fires at the earliest deadline of the calls without
 *		a result (rpc.c); stopped by krpc_conn_teardown_done()
 * @reset:	reason to shut the connection down at the next
 *		krpc_conn_unlock() (the transport's shutdown takes the lock)
 * @srv:	server side: the server
 * @srv_node:	entry in srv->conns
 * @reqs:	server side: client slot -> request in progress
 * @nr_reqs:	server side: requests alive, from krpc_req_alloc_locked() to
 *		krpc_req_free_locked(), one-way ones and replies not yet
 *		written included (krpc_req_bound())
 * @nr_owed:	server side: requests holding a slot in @reqs, each owing
 *		its client a reply (RDMA credit updates, rdma.c)
 * @done_list:	calls whose completion runs at the next krpc_conn_unlock()
 * @done_running: krpc_conn_unlock()s running completions they took off
 *		@done_list; the teardown waits for none before @dead
 * @run_list:	NOSLEEP requests to run at the next krpc_conn_unlock()
 * @free_list:	requests to free at the next krpc_conn_unlock() (their
 *		connection reference must not drop under the lock)
 * @up:		connect outcome is known (client)
 * @connect_err: that outcome
 * @dead:	transport teardown finished: every call completed
 * @clnt:	client side: the client handle
 * @all_node:	entry in the global list (debugfs)
 * @id:		number for logs and debugfs
 * @stats:	counters (enum krpc_stat)
 */
struct krpc_conn {
	struct kref ref;
	spinlock_t lock;	/* see the lock order at the top */
	unsigned int state;
	int reason;
	bool server;
	const struct krpc_transport_ops *ops;
	void *xprt;
	struct net *net;
	struct krpc_pool *pool;
	struct sockaddr_storage peer;
	u32 depth;
	u32 max_depth;
	u32 inline_max;
	u32 max_msg;
	unsigned int timeout_ms;
	u32 ka_peer_ms;
	bool cq_poll;

	struct krpc_call **calls;
	u16 *free_slots;
	unsigned int nr_free;
	u64 seq;
	struct list_head backlog;
	unsigned int nr_backlog;
	bool backlog_unsorted;
	unsigned int zombies;
	unsigned int nr_unreplied;
	struct timer_list call_timer;
	int reset;

	struct krpc_server *srv;
	struct list_head srv_node;
	struct krpc_req **reqs;
	unsigned int nr_reqs;
	unsigned int nr_owed;

	struct list_head done_list;
	atomic_t done_running;
	struct list_head run_list;
	struct list_head free_list;
	struct completion up;
	int connect_err;
	struct completion dead;
	struct krpc_client *clnt;
	struct list_head all_node;
	unsigned int id;
	atomic64_t stats[KRPC_STAT_NR];
};

struct krpc_conn *krpc_conn_alloc(const struct krpc_transport_ops *ops,
				  struct net *net, bool server,
				  unsigned int max_depth,
				  const struct sockaddr_storage *peer);
void krpc_conn_put(struct krpc_conn *conn);
void krpc_conn_get(struct krpc_conn *conn);
void krpc_conn_lock(struct krpc_conn *conn);
void krpc_conn_unlock(struct krpc_conn *conn);
void krpc_conn_stat_add(struct krpc_conn *conn, enum krpc_stat s, u64 n);
static inline void krpc_conn_stat_inc(struct krpc_conn *conn, enum krpc_stat s)
{
	krpc_conn_stat_add(conn, s, 1);
}

void krpc_conn_established_locked(struct krpc_conn *conn, u32 depth,
				  u32 inline_max, u32 max_msg);
void krpc_conn_connect_failed(struct krpc_conn *conn, int err);
void krpc_conn_dead_locked(struct krpc_conn *conn, int reason);
void krpc_conn_teardown_done(struct krpc_conn *conn);
extern const struct seq_operations krpc_conns_sops;
int krpc_wire_check_magic(__be32 magic, __le16 version, u16 *reason,
			  u32 *value);
int krpc_wire_check_ka(u32 ka_timeout_ms, u32 *value);
unsigned long krpc_conn_ka_interval(const struct krpc_conn *conn);
int krpc_wire_reject_errno(u16 reason);
const char *krpc_wire_reject_name(u16 reason);
void krpc_conn_fill_info_locked(struct krpc_conn *conn,
				struct krpc_conn_info *info);

/* ---------------------------------------------------------------------- */
/* Calls (rpc.c) */

/* krpc_call.state bits, under conn->lock */
#define CALL_QUEUED	BIT(0)	/* on conn->backlog */
#define CALL_SLOT	BIT(1)	/* holds conn->calls[slot] */
#define CALL_XPRT	BIT(2)	/* transport references the buffers */
#define CALL_RESULT	BIT(3)	/* res is final */
#define CALL_DONE	BIT(4)	/* completion queued or run */
#define CALL_REPLIED	BIT(5)	/* the peer is done with the call id */
#define CALL_ZOMBIE	BIT(6)	/* abandoned while the peer may still answer */

/**
 * struct krpc_call - one client call
 * @ref:	held by krpc until the completion ran, by the slot and by a
 *		submitter that asked for the handle
 * @conn:	connection (referenced)
 * @node:	entry in conn->backlog or conn->done_list
 * @id:		call id on the wire
 * @method:	method id
 * @flags:	KRPC_CALL_*
 * @slot:	slot while CALL_SLOT
 * @state:	CALL_* bits
 * @req:	request payload (krpc owns a KRPC_PL_BUF buffer)
 * @reply_dst:	destination of a large reply, or NULL
 * @res:	outcome
 * @deadline:	jiffies of the timeout (conn->call_timer enforces it)
 * @done:	completion callback
 * @priv:	its argument
 * @xprt:	transport context while CALL_XPRT or CALL_SLOT
 */
struct krpc_call {
	struct kref ref;
	struct krpc_conn *conn;
	struct list_head node;
	u64 id;
	u32 method;
	u32 flags;
	u16 slot;
	unsigned int state;
	struct krpc_payload req;
	struct krpc_buf *reply_dst;
	struct krpc_result res;
	unsigned long deadline;
	krpc_done_fn done;
	void *priv;
	void *xprt;
};

int krpc_rpc_init(void);
void krpc_rpc_exit(void);
u32 krpc_call_len(const struct krpc_call *call);
u32 krpc_call_reply_room(const struct krpc_call *call);
bool krpc_call_result_locked(struct krpc_call *call, int status,
			     unsigned int flags, struct krpc_buf *reply);
void krpc_call_replied_locked(struct krpc_call *call);
void krpc_call_xprt_done_locked(struct krpc_call *call);
void krpc_call_slot_release_locked(struct krpc_call *call);
struct krpc_call *krpc_call_find_locked(struct krpc_conn *conn, u64 id);
void krpc_conn_fail_backlog_locked(struct krpc_conn *conn, int reason);
void krpc_call_run_done(struct krpc_call *call);
void krpc_conn_call_timeout(struct timer_list *t);

/* Clients (client.c) */
struct krpc_conn *krpc_client_conn(struct krpc_client *clnt);
const struct krpc_client_ops *krpc_client_ops_of(struct krpc_client *clnt);
void *krpc_client_priv_of(struct krpc_client *clnt);

/* ---------------------------------------------------------------------- */
/* Server side (server.c) */

/**
 * struct krpc_server - a listener and the connections it accepted
 * @ref:	held by the creator until krpc_server_destroy() returns and by
 *		each accepted connection
 * @net:	namespace to listen in (referenced)
 * @addr:	listen address
 * @depth:	largest depth granted
 * @xprt:	RDMA listener state, or NULL
 * @tcp_xprt:	TCP listener state, or NULL
 * @methods:	method id -> struct krpc_method
 * @lock:	@conns, @nr_conns, @stopping
 * @conns:	accepted connections alive
 * @nr_conns:	entries on @conns: at most krpc_server_max_conns()
 * @max_conns:	krpc_server_opts.max_conns (0: module parameter max_conns)
 * @stopping:	krpc_server_destroy() started: no new connection
 * @nr_reqs:	requests alive (krpc_server_destroy() waits for 0)
 * @wq:		waiters for @conns to empty and @nr_reqs to reach 0
 * @pool:	krpc_server_opts.pool (referenced) or NULL
 * @cq_mode:	krpc_server_opts.cq_mode, resolved at each accept
 */
struct krpc_server {
	struct kref ref;
	struct net *net;
	struct sockaddr_storage addr;
	u32 depth;
	void *xprt;
	void *tcp_xprt;
	struct xarray methods;
	struct mutex lock;
	struct list_head conns;
	unsigned int nr_conns;
	unsigned int max_conns;
	bool stopping;
	atomic_t nr_reqs;
	wait_queue_head_t wq;
	struct krpc_pool *pool;
	unsigned int cq_mode;
};

/* A region the peer exposed for one call (transport data of a request). */
struct krpc_xrdv {
	u64 addr;
	u32 rkey;
	u32 len;
};

/* krpc_req.flags */
#define REQ_ONEWAY	BIT(0)
#define REQ_CANCELLED	BIT(1)
#define REQ_REPLIED	BIT(2)	/* krpc_req_reply() was called */
#define REQ_SLOT	BIT(3)	/* holds conn->reqs[slot] */
#define REQ_NOMETHOD	BIT(4)
#define REQ_STARTED	BIT(5)	/* payload in, given to its handler */
/* The transport answered a CANCEL for it: the handler's reply is dropped. */
#define REQ_ANSWERED	BIT(6)

/**
 * struct krpc_req - one request at the server
 * @conn:	connection (referenced)
 * @node:	entry in conn->run_list
 * @work:	handler dispatch
 * @call_id:	the client's call id
 * @method:	method id
 * @slot:	client slot (not for one-way)
 * @flags:	REQ_* (REQ_CANCELLED is set under conn->lock, read anywhere)
 * @payload:	request payload, or NULL
 * @reply_max:	largest reply the client accepts
 * @status:	reply status (0 or negative errno)
 * @reply:	reply payload, or NULL
 * @fn:		handler (NULL: no such method)
 * @priv:	handler argument
 * @nosleep:	run the handler from krpc_conn_unlock()
 * @xrdv:	transport: [0] where the request payload is, [1] where a large
 *		reply may be written (len 0: none)
 */
struct krpc_req {
	struct krpc_conn *conn;
	struct list_head node;
	struct work_struct work;
	u64 call_id;
	u32 method;
	u16 slot;
	unsigned long flags;
	struct krpc_buf *payload;
	u32 reply_max;
	int status;
	struct krpc_buf *reply;
	krpc_handler_fn fn;
	void *priv;
	bool nosleep;
	struct krpc_xrdv xrdv[2];
};

int krpc_server_init(void);
void krpc_server_exit(void);
u32 krpc_server_max_conns(const struct krpc_server *srv);
int krpc_server_add_conn(struct krpc_server *srv, struct krpc_conn *conn);
void krpc_server_remove_conn(struct krpc_server *srv, struct krpc_conn *conn);
void krpc_server_put(struct krpc_server *srv);
void krpc_req_destroy(struct krpc_req *req);
struct krpc_req *krpc_req_alloc_locked(struct krpc_conn *conn, bool oneway,
				       u64 call_id, u32 method);
void krpc_req_start_locked(struct krpc_req *req);
struct krpc_req *krpc_req_cancel_locked(struct krpc_conn *conn, u64 call_id);
void krpc_req_slot_release_locked(struct krpc_req *req);
void krpc_req_free_locked(struct krpc_req *req);
void krpc_req_run(struct krpc_req *req);

/*
 * Requests a server connection holds alive before it takes no more from
 * the peer: depth in handlers plus depth whose replies are queued but not
 * yet written.  Only one-way messages (no slot) go past the depth.  The
 * TCP receiver stops reading there (tcp_rx.c); RDMA withholds the receives
 * and their credits (rdma_rx.c).
 */
static inline u32 krpc_req_bound(const struct krpc_conn *conn)
{
	return 2 * conn->depth;
}
void krpc_conn_orphan_reqs_locked(struct krpc_conn *conn);

/* ---------------------------------------------------------------------- */
/* Module plumbing */

extern struct workqueue_struct *krpc_wq;	 /* teardown, pool release */
extern struct workqueue_struct *krpc_handler_wq; /* request handlers */
extern struct workqueue_struct *krpc_cq_wq;	 /* software devices' CQs */

int krpc_chardev_init(void);
int krpc_ioc_copy_in(void *dst, size_t ksize, const void __user *arg, u32 min,
		     u32 *usize);
void krpc_chardev_exit(void);

int krpc_debugfs_init(void);
void krpc_debugfs_exit(void);
extern struct dentry *krpc_debugfs_root;

void krpc_tcp_exit(void);

/* Transport choice (client.c): enum krpc_xprt, DEFAULT resolved. */
int krpc_xprt_resolve(unsigned int transport, unsigned int *out);
int krpc_cq_mode_resolve(unsigned int mode, bool *poll);

#endif /* KRPC_PRIV_H */
