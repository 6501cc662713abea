/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krpc: message RPC over RDMA for kernel clients.
 *
 * This is the one header a kernel client of krpc.ko includes.  Every type
 * behind a pointer here is opaque; the exported functions live in the symbol
 * namespace KRPC (use KRPC_IMPORT_NS() or MODULE_IMPORT_NS(KRPC)).
 * Documentation/kernel-api.rst renders the kernel-doc below.
 *
 * Transports: RDMA (rdma_cm, the default) or TCP (in-kernel sockets), chosen
 * per client and per server (enum krpc_xprt); a server may listen on both.
 * Over TCP every payload is copied once on receive (counted in
 * krpc_conn_stats.copies) and sent by reference; the API and the RPC
 * semantics are the same.
 *
 * Model: a server listens on an address and port and registers handlers for
 * u32 method ids; a client connects to one server.  A call carries a request
 * payload and returns a status and a reply payload.  Payloads live in
 * buffers from a registered pool (krpc_buf_get()), so the transport moves
 * them without copying: small payloads inline in a SEND, large ones by RDMA
 * READ/WRITE straight between the two sides' pool buffers.
 *
 * Ownership: a buffer handed to krpc (as a request, reply or reply
 * destination) belongs to krpc until the call or request completes; a buffer
 * krpc hands back (a reply, a request payload taken with
 * krpc_req_take_payload()) belongs to the receiver, who must give it back
 * with krpc_buf_put().
 */
#ifndef KRPC_H
#define KRPC_H

#include <linux/types.h>
#include <linux/socket.h>
#include <linux/gfp.h>
#include <linux/bits.h>

struct net;
struct krpc_client;
struct krpc_server;
struct krpc_pool;
struct krpc_buf;
struct krpc_call;
struct krpc_req;

/* Method ids at or above this value are reserved for krpc itself. */
#define KRPC_METHOD_RESERVED	0xffff0000u

/* ---------------------------------------------------------------------- */
/* Buffers */

struct krpc_buf *krpc_buf_get(struct krpc_pool *pool, size_t len, gfp_t gfp);
void krpc_buf_put(struct krpc_buf *buf);
void *krpc_buf_data(const struct krpc_buf *buf);
size_t krpc_buf_len(const struct krpc_buf *buf);
size_t krpc_buf_room(const struct krpc_buf *buf);
int krpc_buf_set_len(struct krpc_buf *buf, size_t len);

/* ---------------------------------------------------------------------- */
/* Payload descriptors */

/**
 * enum krpc_payload_type - what a &struct krpc_payload points at
 * @KRPC_PL_NONE:	no payload (zero length)
 * @KRPC_PL_BUF:	a pool buffer; the payload is krpc_buf_data(),
 *			krpc_buf_len() bytes
 *
 * Values up to 15 are reserved for caller-owned memory (a bio_vec array, a
 * scatterlist), which will be DMA-mapped per call and, when the peer must
 * access it, registered per call with FRWR.
 */
enum krpc_payload_type {
	KRPC_PL_NONE	= 0,
	KRPC_PL_BUF	= 1,
};

/**
 * struct krpc_payload - where a request or reply payload lives
 * @type:	enum krpc_payload_type
 * @buf:	KRPC_PL_BUF: the pool buffer
 * @__reserved:	room for other payload types (bio_vec array and count,
 *		scatterlist, offset, length); must not be used
 *
 * The union leaves room for other memory types without changing the size
 * or the meaning of existing fields.
 */
struct krpc_payload {
	unsigned int type;
	union {
		struct krpc_buf *buf;
		unsigned long __reserved[4];
	};
};

/* ---------------------------------------------------------------------- */
/* Transports */

/**
 * enum krpc_xprt - transport of a client or server
 * @KRPC_XPRT_DEFAULT:	module parameter "transport"
 * @KRPC_XPRT_RDMA:	RDMA only
 * @KRPC_XPRT_TCP:	TCP only
 * @KRPC_XPRT_AUTO:	client: RDMA, falling back to TCP when the address
 *			has no RDMA device or the RDMA connect is refused or
 *			unreachable; server: listen on both
 */
enum krpc_xprt {
	KRPC_XPRT_DEFAULT	= 0,
	KRPC_XPRT_RDMA		= 1,
	KRPC_XPRT_TCP		= 2,
	KRPC_XPRT_AUTO		= 3,
};

/**
 * enum krpc_cq_mode - how an RDMA connection's completions are reaped
 * @KRPC_CQ_DEFAULT:	as module parameter "poll_usecs" says when the
 *			connection is made: polled when it is non-zero
 * @KRPC_CQ_IRQ:	per completion event (interrupt, softirq): a CQ from
 *			ib_core's shared pool, or a software device's own
 *			CQ (module parameter "cq_shared")
 * @KRPC_CQ_POLL:	a CQ of its own reaped by a poller thread
 *			(krpc_poll/N), which spins "poll_usecs" after the last
 *			completion it found; while the parameter is 0, twice
 *			the longest recent gap between completions, from
 *			KRPC_POLL_USECS_DEFAULT to KRPC_POLL_USECS_ADAPT_MAX
 *
 * Over TCP the mode is accepted and has no effect.
 */
enum krpc_cq_mode {
	KRPC_CQ_DEFAULT	= 0,
	KRPC_CQ_IRQ	= 1,
	KRPC_CQ_POLL	= 2,
};

/*
 * A poller's spin for connections that ask for KRPC_CQ_POLL themselves
 * (while "poll_usecs" is 0) adapts to the gaps between completions, within
 * these bounds (microseconds).
 */
#define KRPC_POLL_USECS_DEFAULT		50
#define KRPC_POLL_USECS_ADAPT_MAX	1000

/* ---------------------------------------------------------------------- */
/* Client */

/**
 * struct krpc_client_ops - connection events of a client
 * @disconnected: the connection died (peer gone, error, device removal,
 *	keepalive timeout); @reason is a negative errno.  Called once, in
 *	process context, after every call of the client completed; for a
 *	death right after the connect, possibly before krpc_client_create()
 *	returned.  May be NULL.  The client still needs
 *	krpc_client_destroy(), which must not be called from here (it
 *	waits for this callback to return).
 */
struct krpc_client_ops {
	void (*disconnected)(struct krpc_client *clnt, int reason, void *priv);
};

/**
 * struct krpc_client_opts - parameters of krpc_client_create()
 * @net:	network namespace to connect in; NULL means the caller's
 * @addr:	server address (AF_INET or AF_INET6) and port
 * @depth:	outstanding calls wanted; 0 means the module parameter "depth".
 *		The server may lower it (see krpc_client_query()).
 * @timeout_ms:	default per-call timeout; 0 means module parameter
 *		"call_timeout_ms"
 * @connect_timeout_ms: bound on address/route resolution and connection
 *		setup; 0 means module parameter "connect_timeout_ms"
 * @ops:	optional event callbacks
 * @priv:	passed to @ops
 * @pool:	optional registered pool for the connection (receives,
 *		payloads) instead of the device's default pool; it must be
 *		mapped for the device the address resolves to, else the
 *		connection fails with -EXDEV (over TCP any pool will do).
 *		Referenced by the client.
 * @transport:	enum krpc_xprt
 * @cq_mode:	enum krpc_cq_mode
 */
struct krpc_client_opts {
	struct net *net;
	struct sockaddr_storage addr;
	unsigned int depth;
	unsigned int timeout_ms;
	unsigned int connect_timeout_ms;
	const struct krpc_client_ops *ops;
	void *priv;
	struct krpc_pool *pool;
	unsigned int transport;
	unsigned int cq_mode;
};

struct krpc_client *krpc_client_create(const struct krpc_client_opts *opts);
void krpc_client_destroy(struct krpc_client *clnt);
struct krpc_pool *krpc_client_pool(struct krpc_client *clnt);

/* ---------------------------------------------------------------------- */
/* Calls */

/* krpc_call_args.flags */
/* KRPC_CALL_NOWAIT: -EAGAIN instead of queueing when all slots are busy */
#define KRPC_CALL_NOWAIT	BIT(0)
#define KRPC_CALL_ONEWAY	BIT(1)	/* no reply; completes once sent */
#define KRPC_CALL_VALID_FLAGS		(KRPC_CALL_NOWAIT | KRPC_CALL_ONEWAY)

/* krpc_result.flags */
#define KRPC_RES_REMOTE		BIT(0)	/* status was set by the peer */

struct krpc_result;

/**
 * typedef krpc_done_fn - completion of an asynchronous call
 * @call:	the call; valid until this function returns, or longer if the
 *		submitter kept a reference (see krpc_call_async())
 * @res:	outcome; the callee owns @res->reply and must put it
 * @priv:	krpc_call_args.priv
 *
 * Context: any context, including softirq (completion queue polling, timer)
 * and process context (teardown); must not sleep.  Called exactly once.
 */
typedef void (*krpc_done_fn)(struct krpc_call *call,
			     const struct krpc_result *res, void *priv);

/**
 * struct krpc_call_args - one call
 * @method:	method id at the server (below KRPC_METHOD_RESERVED)
 * @flags:	KRPC_CALL_*
 * @timeout_ms:	0 means the client's default
 * @req:	request payload; a KRPC_PL_BUF buffer passes to krpc
 * @reply:	optional destination for a reply larger than the inline
 *		size; a KRPC_PL_BUF buffer passes to krpc and comes back as
 *		krpc_result.reply.  Not the @req buffer (-EINVAL).
 * @reply_max:	largest reply accepted when @reply is empty: if it exceeds
 *		the inline size, krpc takes a pool buffer of that size as the
 *		destination.  0 means the inline size.
 * @done:	asynchronous completion (krpc_call_async() only)
 * @priv:	passed to @done
 */
struct krpc_call_args {
	u32 method;
	u32 flags;
	unsigned int timeout_ms;
	struct krpc_payload req;
	struct krpc_payload reply;
	size_t reply_max;
	krpc_done_fn done;
	void *priv;
};

/**
 * struct krpc_result - outcome of a call
 * @status:	0, or a negative errno: local (-ETIMEDOUT, -ECANCELED,
 *		-ECONNRESET, -ENODEV, -EMSGSIZE, ...) or, with KRPC_RES_REMOTE,
 *		the handler's error; -EBADRQC with KRPC_RES_REMOTE means the
 *		server has no such method
 * @flags:	KRPC_RES_*
 * @reply:	reply payload or NULL (empty reply, error); owned by the caller
 */
struct krpc_result {
	int status;
	unsigned int flags;
	struct krpc_buf *reply;
};

int krpc_call_sync(struct krpc_client *clnt, struct krpc_call_args *args,
		   struct krpc_result *res);
int krpc_call_async(struct krpc_client *clnt, struct krpc_call_args *args,
		    struct krpc_call **callp);
int krpc_call_cancel(struct krpc_call *call);
void krpc_call_put(struct krpc_call *call);

/* ---------------------------------------------------------------------- */
/* Queries */

/**
 * enum krpc_conn_state - connection state as reported by krpc_client_query()
 * @KRPC_CONN_CONNECTING:	handshake in progress
 * @KRPC_CONN_UP:		calls flow
 * @KRPC_CONN_DEAD:		disconnected; calls fail with the reason
 */
enum krpc_conn_state {
	KRPC_CONN_CONNECTING,
	KRPC_CONN_UP,
	KRPC_CONN_DEAD,
};

/**
 * struct krpc_conn_stats - counters of one connection (also in debugfs)
 * @calls:	calls (client) or requests (server) started
 * @replies:	replies received (client) or sent (server)
 * @bytes_tx:	payload bytes sent
 * @bytes_rx:	payload bytes received
 * @errors:	calls or requests that ended with an error status
 * @timeouts:	calls that timed out
 * @cancels:	calls cancelled
 * @retries:	sends delayed for lack of credits or send-queue slots and
 *		posted later (krpc never retransmits on a live connection)
 * @rnr_naks:	receiver-not-ready retry errors seen; stays 0 when the
 *		credit scheme is right
 * @credit_stalls: times a message waited for a credit
 * @window_full: calls queued or refused because all slots were busy
 * @stale:	replies for calls that already completed (late after a
 *		timeout or cancel), dropped
 * @eager:	messages sent inline in a SEND
 * @rdv:	messages moved by RDMA READ/WRITE
 * @mr_grants:	per-call remote keys granted (FRWR REG_MR of pool memory
 *		that was mapped once at pool creation; not a registration
 *		of new memory)
 * @dp_regs:	memory registrations or DMA mappings done on the data path;
 *		0 for pool buffers
 * @copies:	payload copies; 0 for pool buffers over RDMA; over TCP one
 *		per payload received (socket to pool buffer), and one per
 *		payload sent only if its pages could not go to the socket
 *		by reference
 * @rx_pauses: TCP server: times the connection stopped reading because
 *		it held its bound of live requests (2 x depth), holding the
 *		peer back by TCP's window until a request is freed; 0 over
 *		RDMA, where posted receives bound the requests
 * @credit_msgs: RDMA: CREDIT messages sent, each returning credits that
 *		could not wait for a call or reply (the peer ran low, or the
 *		connection was idle); 0 over TCP
 * @unsignaled: RDMA client: requests sent in unsignaled SENDs, whose
 *		completions were never generated nor reaped (module
 *		parameter unsignaled); 0 over TCP
 * @pool_waits: times the connection waited for a pool buffer to come
 *		back: over TCP it stopped reading, for the message at hand (a
 *		server's one-way message, a client's reply); over RDMA its
 *		receive ring had entries without a buffer (the peer's
 *		credits hold it back meanwhile)
 */
struct krpc_conn_stats {
	u64 calls;
	u64 replies;
	u64 bytes_tx;
	u64 bytes_rx;
	u64 errors;
	u64 timeouts;
	u64 cancels;
	u64 retries;
	u64 rnr_naks;
	u64 credit_stalls;
	u64 window_full;
	u64 stale;
	u64 eager;
	u64 rdv;
	u64 mr_grants;
	u64 dp_regs;
	u64 copies;
	u64 rx_pauses;
	u64 credit_msgs;
	u64 unsignaled;
	u64 pool_waits;
};

/**
 * struct krpc_conn_info - answer of krpc_client_query()
 * @state:	enum krpc_conn_state
 * @reason:	negative errno the connection died with, else 0
 * @depth:	negotiated outstanding-call limit
 * @inflight:	calls holding a slot now
 * @queued:	calls waiting for a slot
 * @send_credits: messages we can send now without waiting: over RDMA the
 *		peer's credits; over TCP a client's free call slots and a
 *		server's requests the connection still accepts before it
 *		stops reading (2 x depth minus the requests alive)
 * @inline_max:	largest payload sent inline; larger ones go by RDMA
 * @max_msg:	largest payload either side accepts
 * @transport:	KRPC_XPRT_RDMA or KRPC_XPRT_TCP
 * @cq_mode:	over RDMA KRPC_CQ_IRQ or KRPC_CQ_POLL, how the connection's
 *		completions are reaped; over TCP KRPC_CQ_DEFAULT
 * @stats:	counters
 */
struct krpc_conn_info {
	unsigned int state;
	int reason;
	unsigned int depth;
	unsigned int inflight;
	unsigned int queued;
	unsigned int send_credits;
	unsigned int inline_max;
	unsigned int max_msg;
	unsigned int transport;
	unsigned int cq_mode;
	struct krpc_conn_stats stats;
};

int krpc_client_query(struct krpc_client *clnt, struct krpc_conn_info *info);

/* ---------------------------------------------------------------------- */
/* Server */

/**
 * struct krpc_server_opts - parameters of krpc_server_create()
 * @net:	network namespace to listen in; NULL means the caller's
 * @addr:	local address (AF_INET or AF_INET6, may be the wildcard) and
 *		port
 * @depth:	largest outstanding-call depth granted to a client; 0 means
 *		module parameter "depth"
 * @pool:	optional registered pool for every accepted connection, as
 *		krpc_client_opts.pool; referenced by the server
 * @transport:	enum krpc_xprt; KRPC_XPRT_AUTO listens on RDMA and TCP
 *		on the same port number
 * @cq_mode:	enum krpc_cq_mode of every accepted connection (KRPC_CQ_DEFAULT:
 *		as "poll_usecs" says at each accept)
 * @max_conns:	connections the server keeps at a time, over all its
 *		transports, up to 65536 (the upper bound of module parameter
 *		"max_conns"); 0 means that module parameter, read at each
 *		accept
 */
struct krpc_server_opts {
	struct net *net;
	struct sockaddr_storage addr;
	unsigned int depth;
	struct krpc_pool *pool;
	unsigned int transport;
	unsigned int cq_mode;
	unsigned int max_conns;
};

/**
 * typedef krpc_handler_fn - a method's handler
 * @req:	the request
 * @priv:	the pointer given to krpc_server_register()
 *
 * Return 0 to take responsibility for calling krpc_req_reply() exactly once,
 * now or later from any context; or a negative errno, which krpc sends back
 * as the call's status (the handler must then not call krpc_req_reply()).
 *
 * A request whose connection closed before its handler started is not
 * handed to it (the caller has its error), except a one-way message: one
 * received whole is always handled.
 *
 * Context: process context from a workqueue (may sleep), unless the method
 * was registered with KRPC_METHOD_NOSLEEP: then softirq, must not sleep.
 */
typedef int (*krpc_handler_fn)(struct krpc_req *req, void *priv);

/* krpc_server_register() flags */
#define KRPC_METHOD_NOSLEEP	BIT(0)
#define KRPC_METHOD_VALID_FLAGS	KRPC_METHOD_NOSLEEP

struct krpc_server *krpc_server_create(const struct krpc_server_opts *opts);
void krpc_server_destroy(struct krpc_server *srv);
int krpc_server_register(struct krpc_server *srv, u32 method,
			 krpc_handler_fn fn, void *priv, unsigned int flags);

u32 krpc_req_method(const struct krpc_req *req);
bool krpc_req_is_oneway(const struct krpc_req *req);
bool krpc_req_cancelled(const struct krpc_req *req);
size_t krpc_req_reply_max(const struct krpc_req *req);
struct krpc_buf *krpc_req_payload(const struct krpc_req *req);
struct krpc_buf *krpc_req_take_payload(struct krpc_req *req);
struct krpc_pool *krpc_req_pool(const struct krpc_req *req);
int krpc_req_reply(struct krpc_req *req, int status, struct krpc_buf *reply);

#endif /* KRPC_H */
