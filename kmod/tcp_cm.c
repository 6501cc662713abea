// SPDX-License-Identifier: GPL-2.0
/*
 * TCP transport, connection management: the hello each way, the
 * host-memory pool, connecting, listening and accepting.  A connected socket is handed to
 * krpc_tcp_go_live() (tcp.c), after which the teardown owns it.
 */
#include <linux/slab.h>
#include <linux/tcp.h>
#include <net/sock.h>

#include "tcp.h"
#include "pool.h"
#include "transport.h"

/* ---------------------------------------------------------------------- */
/* Hello: the handshake, both sides (wire.h, "TCP framing") */

void krpc_tcp_hello_fill(struct krpc_wire_hello *h, u32 depth, u32 max_msg,
			 u32 inline_max, u16 reject, u32 value)
{
	memset(h, 0, sizeof(*h));
	h->magic = cpu_to_be32(KRPC_WIRE_MAGIC);
	h->version = cpu_to_le16(KRPC_WIRE_VERSION);
	h->depth = cpu_to_le16(depth);
	h->max_msg = cpu_to_le32(max_msg);
	h->inline_max = cpu_to_le32(inline_max);
	h->reject = cpu_to_le16(reject);
	h->value = cpu_to_le32(value);
	if (!reject)
		h->ka_timeout_ms = cpu_to_le32(krpc_param(ka_timeout_ms));
}

struct hello_vals {
	u16 version;
	u16 depth;
	u16 reject;
	u32 max_msg;
	u32 inline_max;
	u32 value;
	u32 ka_timeout_ms;	/* 0: not announced */
};

/* Checks shared by both sides; *reason says why in reject terms. */
static int hello_parse(const u8 *raw, struct hello_vals *v, u16 *reason,
		       u32 *value)
{
	struct krpc_wire_hello h;
	int ret;

	memcpy(&h, raw, sizeof(h));
	ret = krpc_wire_check_magic(h.magic, h.version, reason, value);
	if (ret)
		return ret;
	v->version = le16_to_cpu(h.version);
	v->depth = le16_to_cpu(h.depth);
	v->max_msg = le32_to_cpu(h.max_msg);
	v->inline_max = le32_to_cpu(h.inline_max);
	v->reject = le16_to_cpu(h.reject);
	v->value = le32_to_cpu(h.value);
	v->ka_timeout_ms = le32_to_cpu(h.ka_timeout_ms);
	if (h.reserved0 || h.reserved)
		return -EINVAL;
	if (v->reject)
		return 0;	/* the rest is the caller's business */
	if (!v->depth || v->depth > krpc_param_depth.max) {
		*value = krpc_param_depth.max;
		return -EINVAL;
	}
	if (v->max_msg < KRPC_SEG_SIZE || v->max_msg > krpc_param_max_msg.max) {
		*value = krpc_param_max_msg.max;
		return -EINVAL;
	}
	if (!v->inline_max || v->inline_max > v->max_msg)
		return -EINVAL;
	if (v->ka_timeout_ms)
		return krpc_wire_check_ka(v->ka_timeout_ms, value);
	return 0;
}

/*
 * Server: a refusal of a client, counted.  It names the version we really
 * speak (as over RDMA), whichever the client's hello asked for.
 */
static void hello_reject_fill(struct krpc_wire_hello *h, u16 reason,
			      u32 value)
{
	atomic64_inc(&krpc_stats.conns_rejected);
	krpc_tcp_hello_fill(h, 0, 0, 0, reason, value);
}

/* Server: answer the client's hello; the connection goes up or is refused. */
static void hello_server_locked(struct krpc_tcp_conn *tc)
{
	struct krpc_conn *conn = tc->conn;
	u32 inline_max, max_msg, value, depth;
	struct krpc_wire_hello h;
	struct hello_vals v;
	u16 reason;
	int ret;

	ret = hello_parse(tc->rx_head, &v, &reason, &value);
	if (!ret && v.reject)
		ret = -EINVAL;
	krpc_tcp_local_limits(conn, &inline_max, &max_msg);
	if (ret) {
		pr_info_ratelimited("conn %u: rejecting %pISpc over TCP: %s (%d), value %u\n",
				    conn->id, &conn->peer,
				    krpc_wire_reject_name(reason), ret, value);
		hello_reject_fill(&h, reason, value);
		tc->rx_phase = RX_CLOSED;
		tc->drain_reason = ret;
		if (krpc_tcp_queue_locked(tc, &h, sizeof(h), NULL, 0, NULL,
					  NULL))
			krpc_tcp_fail_locked(tc, ret);
		return;
	}
	depth = min_t(u32, v.depth, conn->max_depth);
	inline_max = min(inline_max, v.inline_max);
	max_msg = min(max_msg, v.max_msg);
	krpc_tcp_hello_fill(&h, depth, max_msg, inline_max, 0, 0);
	if (krpc_tcp_queue_locked(tc, &h, sizeof(h), NULL, 0, NULL, NULL)) {
		krpc_tcp_fail_locked(tc, -ENOMEM);
		return;
	}
	tc->hello_done = true;
	conn->ka_peer_ms = v.ka_timeout_ms;
	krpc_conn_established_locked(conn, depth, inline_max, max_msg);
}

/* Client: the server's answer. */
static void hello_client_locked(struct krpc_tcp_conn *tc)
{
	struct krpc_conn *conn = tc->conn;
	u32 inline_max, max_msg, value;
	struct hello_vals v;
	u16 reason;
	int ret;

	ret = hello_parse(tc->rx_head, &v, &reason, &value);
	if (!ret && v.reject) {
		/* Counted by the side that refused, as over RDMA. */
		pr_info_ratelimited("conn %u: %pISpc rejected the handshake: %s (value %u)\n",
				    conn->id, &conn->peer,
				    krpc_wire_reject_name(v.reject), v.value);
		krpc_tcp_fail_locked(tc, krpc_wire_reject_errno(v.reject));
		return;
	}
	krpc_tcp_local_limits(conn, &inline_max, &max_msg);
	if (!ret && (v.depth > conn->max_depth || v.max_msg > max_msg ||
		     v.inline_max > inline_max))
		ret = -EINVAL;
	if (ret) {
		pr_err_ratelimited("conn %u: bad handshake answer from %pISpc (%d)\n",
				   conn->id, &conn->peer, ret);
		krpc_tcp_fail_locked(tc, ret == -EPROTONOSUPPORT ? ret :
				     -EPROTO);
		return;
	}
	tc->hello_done = true;
	conn->ka_peer_ms = v.ka_timeout_ms;
	krpc_conn_established_locked(conn, v.depth, v.inline_max, v.max_msg);
	pr_debug("conn %u: up to %pISpc over TCP, depth %u inline %u max %u\n",
		 conn->id, &conn->peer, v.depth, v.inline_max, v.max_msg);
}

/* The peer's hello is in tc->rx_head (tcp_rx.c).  Context: conn->lock. */
void krpc_tcp_hello_rx_locked(struct krpc_tcp_conn *tc)
{
	if (tc->conn->server)
		hello_server_locked(tc);
	else
		hello_client_locked(tc);
}

/* ---------------------------------------------------------------------- */
/* The pool of kernel clients and servers that brought none: host memory */

static DEFINE_MUTEX(tcp_pool_lock);
static struct krpc_pool *tcp_pool;

struct krpc_pool *krpc_tcp_pool_get(void)
{
	struct krpc_pool_cfg cfg = {};
	struct krpc_pool *pool;

	mutex_lock(&tcp_pool_lock);
	if (!tcp_pool) {
		krpc_params_pool_cfg(&cfg);
		pool = krpc_pool_create(NULL, &cfg);
		if (IS_ERR(pool)) {
			mutex_unlock(&tcp_pool_lock);
			return pool;
		}
		tcp_pool = pool;
	}
	krpc_pool_get(tcp_pool);
	pool = tcp_pool;
	mutex_unlock(&tcp_pool_lock);
	return pool;
}

/* Module exit: every connection is gone; buffers may still be out. */
void krpc_tcp_exit(void)
{
	if (tcp_pool)
		krpc_pool_put(tcp_pool);
	tcp_pool = NULL;
}

static int pool_attach(struct krpc_conn *conn)
{
	struct krpc_pool *pool;

	if (conn->pool)
		return 0;
	pool = krpc_tcp_pool_get();
	if (IS_ERR(pool))
		return PTR_ERR(pool);
	conn->pool = pool;
	return 0;
}

static int addr_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
		sizeof(struct sockaddr_in);
}

/* ---------------------------------------------------------------------- */
/* Client side */

int krpc_tcp_connect(struct krpc_conn *conn,
		       const struct krpc_client_opts *opts)
{
	unsigned int tmo = opts->connect_timeout_ms ?
		opts->connect_timeout_ms : krpc_param(connect_timeout_ms);
	struct krpc_tcp_conn *tc;
	struct socket *sock;
	int ret;

	tc = krpc_tcp_conn_alloc(conn);
	if (!tc)
		return -ENOMEM;
	ret = pool_attach(conn);
	if (ret)
		return ret;
	ret = sock_create_kern(conn->net, opts->addr.ss_family, SOCK_STREAM,
			       IPPROTO_TCP, &sock);
	if (ret)
		return ret;
	sock->sk->sk_sndtimeo = msecs_to_jiffies(tmo);
	ret = kernel_connect(sock, (struct sockaddr *)&opts->addr,
			     addr_len(&opts->addr), 0);
	if (ret) {
		sock_release(sock);
		/* The blocking connect ran out of time. */
		return ret == -EINPROGRESS ? -ETIMEDOUT : ret;
	}
	sock->sk->sk_sndtimeo = MAX_SCHEDULE_TIMEOUT;
	krpc_conn_get(conn);	/* the transport's, until teardown */
	krpc_tcp_go_live(tc, sock);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Server side */

/**
 * struct krpc_tcp_listener - a listening socket of a server
 * @srv:	the server
 * @sock:	the socket
 * @accept_work: accepts what the backlog holds
 * @saved_data_ready: the socket's callback before ours
 */
struct krpc_tcp_listener {
	struct krpc_server *srv;
	struct socket *sock;
	struct work_struct accept_work;
	void (*saved_data_ready)(struct sock *sk);
};

/*
 * The server has its max_conns connections: answer the client's hello
 * before it is read (the stream keeps the order) with a refusal, reason
 * resources, value that limit, and close.  Best effort: the answer fits a
 * new socket's buffer.  The hello, if it is in, is read first, so that the
 * close is a FIN, not a reset; one that comes after the close is answered
 * with a reset, behind the refusal.  Not a connection: no id in the log.
 */
static void refuse_full(const struct krpc_server *srv, struct socket *sock,
			const struct sockaddr_storage *peer)
{
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL };
	u32 max = krpc_server_max_conns(srv);
	struct krpc_wire_hello h;
	struct kvec kv = { .iov_base = &h, .iov_len = sizeof(h) };
	int i;

	pr_info_ratelimited("rejecting %pISpc over TCP: %s (%d), value %u\n",
			    peer, krpc_wire_reject_name(KRPC_REJ_RESOURCES),
			    -EUSERS, max);
	hello_reject_fill(&h, KRPC_REJ_RESOURCES, max);
	kernel_sendmsg(sock, &msg, &kv, 1, sizeof(h));
	kernel_sock_shutdown(sock, SHUT_WR);
	/* A hello's worth or two; @h is sent (copied into the socket). */
	for (i = 0; i < 2; i++) {
		kv.iov_base = &h;
		kv.iov_len = sizeof(h);
		if (kernel_recvmsg(sock, &msg, &kv, 1, sizeof(h),
				   MSG_DONTWAIT) <= 0)
			break;
	}
	sock_release(sock);
}

static void accept_one(struct krpc_server *srv, struct socket *sock)
{
	struct sockaddr_storage peer = {};
	struct krpc_tcp_conn *tc;
	struct krpc_conn *conn;
	int ret;

	ret = kernel_getpeername(sock, (struct sockaddr *)&peer);
	if (ret < 0) {
		pr_warn_ratelimited("cannot accept a TCP connection: %d\n", ret);
		sock_release(sock);
		return;
	}
	conn = krpc_conn_alloc(&krpc_tcp_ops, srv->net, true, srv->depth,
			       &peer);
	if (!conn) {
		sock_release(sock);
		return;
	}
	/* The connection's first reference is the transport's. */
	tc = krpc_tcp_conn_alloc(conn);
	ret = tc ? 0 : -ENOMEM;
	/* Nothing may fail once the server lists it (and may shut it down). */
	if (!ret && !srv->pool)
		ret = pool_attach(conn);
	if (!ret)
		ret = krpc_server_add_conn(srv, conn);
	if (ret == -EUSERS) {
		refuse_full(srv, sock, &peer);
	} else if (ret) {
		if (ret != -ESHUTDOWN)
			pr_warn_ratelimited("cannot accept a TCP connection: %d\n",
					    ret);
		sock_release(sock);
	}
	if (ret) {
		krpc_conn_lock(conn);
		krpc_conn_dead_locked(conn, ret);
		krpc_conn_unlock(conn);
		/* Not live: nothing to tear down but the core's part. */
		krpc_conn_teardown_done(conn);
		krpc_conn_put(conn);
		return;
	}
	krpc_tcp_go_live(tc, sock);
}

static void ktcp_accept_work(struct work_struct *work)
{
	struct krpc_tcp_listener *l = container_of(work, struct krpc_tcp_listener,
						   accept_work);
	struct socket *sock;

	while (!kernel_accept(l->sock, &sock, O_NONBLOCK)) {
		accept_one(l->srv, sock);
		cond_resched();
	}
}

static void listen_data_ready(struct sock *sk)
{
	struct krpc_tcp_listener *l;

	/*
	 * A connection not accepted yet inherited this callback and
	 * sk_user_data from the listener (sk_clone_lock()): its data must
	 * not queue the accept work, which krpc_tcp_unlisten() may already
	 * have cancelled for good.  Accepting it reads that data.
	 */
	if (sk->sk_state != TCP_LISTEN)
		return;
	read_lock_bh(&sk->sk_callback_lock);
	l = sk->sk_user_data;
	if (l)
		queue_work(krpc_wq, &l->accept_work);
	read_unlock_bh(&sk->sk_callback_lock);
}

int krpc_tcp_listen(struct krpc_server *srv)
{
	struct krpc_tcp_listener *l;
	struct socket *sock;
	struct sock *sk;
	int ret;

	l = kzalloc(sizeof(*l), GFP_KERNEL);
	if (!l)
		return -ENOMEM;
	l->srv = srv;
	INIT_WORK(&l->accept_work, ktcp_accept_work);
	ret = sock_create_kern(srv->net, srv->addr.ss_family, SOCK_STREAM,
			       IPPROTO_TCP, &sock);
	if (ret)
		goto out_free;
	sk = sock->sk;
	sock_set_reuseaddr(sk);
	ret = kernel_bind(sock, (struct sockaddr *)&srv->addr,
			  addr_len(&srv->addr));
	if (ret)
		goto out_release;
	ret = kernel_listen(sock, 128);
	if (ret)
		goto out_release;
	l->sock = sock;
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = l;
	l->saved_data_ready = sk->sk_data_ready;
	sk->sk_data_ready = listen_data_ready;
	write_unlock_bh(&sk->sk_callback_lock);
	srv->tcp_xprt = l;
	/* Connections may have queued before the callback was in place. */
	queue_work(krpc_wq, &l->accept_work);
	return 0;

out_release:
	sock_release(sock);
out_free:
	kfree(l);
	return ret;
}

void krpc_tcp_unlisten(struct krpc_server *srv)
{
	struct krpc_tcp_listener *l = srv->tcp_xprt;
	struct sock *sk = l->sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	sk->sk_data_ready = l->saved_data_ready;
	write_unlock_bh(&sk->sk_callback_lock);
	/* Accepts already running finish (srv->stopping refuses them). */
	cancel_work_sync(&l->accept_work);
	sock_release(l->sock);
	srv->tcp_xprt = NULL;
	kfree(l);
}
