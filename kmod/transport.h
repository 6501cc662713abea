/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The boundary between the RPC core (rpc.c, conn.c, server.c: calls,
 * slots, timeouts, methods) and a transport (rdma*.c, tcp*.c).
 * The core never calls verbs; a transport never decides RPC semantics.
 *
 * Calls from the core into a transport marked "locked" run with
 * conn->lock held (spin_lock_bh) and must not sleep; the transport calls
 * back into the core's *_locked() functions under the same lock.  Work that
 * must run without the lock (user completions, NOSLEEP handlers) is queued
 * on the connection and run by krpc_conn_unlock().
 */
#ifndef KRPC_TRANSPORT_H
#define KRPC_TRANSPORT_H

struct krpc_conn;
struct krpc_call;
struct krpc_req;
struct krpc_server;
struct krpc_client_opts;
struct krpc_conn_info;

/**
 * struct krpc_transport_ops - what a transport provides
 * @name:	"rdma", "tcp"
 * @id:		KRPC_XPRT_RDMA, KRPC_XPRT_TCP (krpc_conn_info.transport)
 * @connect:	start connecting @conn to @opts->addr; report the outcome with
 *		krpc_conn_established() or krpc_conn_connect_failed().
 *		Process context.
 * @listen:	start accepting connections for @srv (srv->addr); accepted
 *		connections are added with krpc_server_add_conn().  Process
 *		context.
 * @unlisten:	stop accepting; no new connection appears after return.
 *		Process context.
 * @shutdown:	start tearing @conn down with @reason; idempotent.  The
 *		transport fails every call and request it holds (locked
 *		core hooks) and then calls krpc_conn_teardown_done().  Any
 *		context.
 * @send_call:	locked.  Send @call (request or one-way) on its slot.  From
 *		then on the transport owns the call's buffers until it calls
 *		krpc_call_xprt_done_locked(), and its slot until it calls
 *		krpc_call_slot_release_locked().  An error return means
 *		nothing was sent.
 * @abort_call:	locked.  The core gave @call a result (timeout, cancel):
 *		stop the peer from touching its buffers, tell the peer if
 *		useful, then krpc_call_xprt_done_locked() as soon as safe.
 * @send_reply:	locked.  Send the reply of @req (req->status, req->reply);
 *		release the request's slot with krpc_req_slot_release_locked()
 *		before the reply can reach the peer, and free @req with
 *		krpc_req_free_locked() when the transport is done with it.
 * @req_freed:	locked, optional.  A request of server connection @conn
 *		was freed (conn->nr_reqs dropped by one): a transport that
 *		stopped reading because of its request bound may resume.
 *		Must not free anything of @conn.
 * @query:	locked.  Fill the transport's part of @info.
 * @free:	free the transport's memory of @conn at its last reference.
 *		Any context.
 */
struct krpc_transport_ops {
	const char *name;
	unsigned int id;
	int (*connect)(struct krpc_conn *conn,
		       const struct krpc_client_opts *opts);
	int (*listen)(struct krpc_server *srv);
	void (*unlisten)(struct krpc_server *srv);
	void (*shutdown)(struct krpc_conn *conn, int reason);
	int (*send_call)(struct krpc_conn *conn, struct krpc_call *call);
	void (*abort_call)(struct krpc_conn *conn, struct krpc_call *call);
	void (*send_reply)(struct krpc_conn *conn, struct krpc_req *req);
	void (*req_freed)(struct krpc_conn *conn);
	void (*query)(struct krpc_conn *conn, struct krpc_conn_info *info);
	void (*free)(struct krpc_conn *conn);
};

extern const struct krpc_transport_ops krpc_rdma_ops;
extern const struct krpc_transport_ops krpc_tcp_ops;

#endif /* KRPC_TRANSPORT_H */
