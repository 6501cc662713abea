// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA transport, connection management: rdma_cm ids, the versioned
 * handshake in the connection private data, listeners and teardown.
 *
 * rdma_cm rules followed here: event handlers run in process context,
 * serialised per id; they never destroy their own id (they queue the
 * teardown on krpc_wq), except by returning non-zero from CONNECT_REQUEST
 * when a connection is refused, after which the id is forgotten.  The
 * teardown takes the handler lock once to fence off handlers still running,
 * then follows the canonical order: dead, disconnect, drain, fence keys,
 * fail calls, destroy QP/CQ, destroy id, release the device.
 */
#include <linux/delay.h>
#include <linux/slab.h>
#include <rdma/ib_cm.h>

#include "rdma.h"
#include "pool.h"
#include "transport.h"
#include "inject.h"

static int cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev);

/* ---------------------------------------------------------------------- */
/* Handshake */

struct cp_vals {
	u16 version;
	u16 depth;
	u16 credits;
	u64 features;
	u32 recv_size;
	u32 max_msg;
	u32 inline_max;
	u32 ka_timeout_ms;	/* 0 without KRPC_WFEAT_KA */
};

/* The private data of a REQ or REP: the extension only with its feature. */
struct cp_data {
	struct krpc_wire_conn cp;
	struct krpc_wire_conn_ka ka;
};

/* Return the private data's length. */
static u8 cp_fill(struct cp_data *d, u32 depth, u64 features, u32 credits,
		  u32 recv_size, u32 max_msg, u32 inline_max)
{
	struct krpc_wire_conn *cp = &d->cp;

	memset(d, 0, sizeof(*d));
	cp->magic = cpu_to_be32(KRPC_WIRE_MAGIC);
	cp->version = cpu_to_le16(KRPC_WIRE_VERSION);
	cp->depth = cpu_to_le16(depth);
	cp->features = cpu_to_le64(features);
	cp->credits = cpu_to_le16(credits);
	cp->recv_size = cpu_to_le32(recv_size);
	cp->max_msg = cpu_to_le32(max_msg);
	cp->inline_max = cpu_to_le32(inline_max);
	if (!(features & KRPC_WFEAT_KA))
		return sizeof(*cp);
	d->ka.ka_timeout_ms = cpu_to_le32(krpc_param(ka_timeout_ms));
	return sizeof(*d);
}

/*
 * Validate private data from the peer.  On failure *reason and *value say
 * why, in the form a reject carries.
 */
static int cp_parse(const void *data, u8 len, struct cp_vals *v,
		    u16 *reason, u32 *value)
{
	struct krpc_wire_conn cp;
	struct krpc_wire_conn_ka ka;
	int ret;

	*value = 0;
	*reason = KRPC_REJ_MAGIC;
	if (!data || len < sizeof(cp))
		return -EPROTO;
	memcpy(&cp, data, sizeof(cp));
	ret = krpc_wire_check_magic(cp.magic, cp.version, reason, value);
	if (ret)
		return ret;
	v->version = le16_to_cpu(cp.version);
	v->depth = le16_to_cpu(cp.depth);
	v->credits = le16_to_cpu(cp.credits);
	v->features = le64_to_cpu(cp.features);
	v->recv_size = le32_to_cpu(cp.recv_size);
	v->max_msg = le32_to_cpu(cp.max_msg);
	v->inline_max = le32_to_cpu(cp.inline_max);
	if (cp.reserved0)
		return -EINVAL;
	if (!v->depth || v->depth > krpc_param_depth.max) {
		*value = krpc_param_depth.max;
		return -EINVAL;
	}
	/* Fewer and no call, reply or one-way message could go out. */
	if (v->credits <= KRPC_CTRL_CREDITS) {
		*value = KRPC_CTRL_CREDITS + 1;
		return -EINVAL;
	}
	if (v->recv_size < 2 * KRPC_HDR_SIZE || v->recv_size > KRPC_SEG_SIZE) {
		*value = KRPC_SEG_SIZE;
		return -EINVAL;
	}
	if (!v->inline_max || v->inline_max > v->recv_size - KRPC_HDR_SIZE)
		return -EINVAL;
	if (v->max_msg < KRPC_SEG_SIZE ||
	    v->max_msg > krpc_param_max_msg.max) {
		*value = krpc_param_max_msg.max;
		return -EINVAL;
	}
	v->ka_timeout_ms = 0;
	if (!(v->features & KRPC_WFEAT_KA))
		return 0;
	if (len < sizeof(cp) + sizeof(ka))
		return -EINVAL;
	memcpy(&ka, data + sizeof(cp), sizeof(ka));
	if (ka.reserved)
		return -EINVAL;
	v->ka_timeout_ms = le32_to_cpu(ka.ka_timeout_ms);
	return krpc_wire_check_ka(v->ka_timeout_ms, value);
}

/* Our own limits for a connection whose pool is known. */
static void local_limits(struct krpc_rdma_conn *rc, u32 *inline_max,
			 u32 *max_msg, u32 *recv_size)
{
	struct krpc_pool *pool = rc->conn->pool;

	*recv_size = krpc_pool_small_size(pool);
	*inline_max = min(krpc_params_inline_max(),
			  *recv_size - KRPC_HDR_SIZE);
	*max_msg = min(krpc_param(max_msg), krpc_pool_max_size(pool));
}

/*
 * Refuse a connect request, saying why in the log (rate-limited: a peer
 * can send requests as fast as it likes) and on the wire.  @err is the
 * errno the refusal comes from; @value qualifies @reason (wire.h).
 */
static void reject(struct rdma_cm_id *id, u16 reason, u32 value, int err)
{
	struct krpc_wire_reject rej = {
		.magic = cpu_to_be32(KRPC_WIRE_MAGIC),
		.version = cpu_to_le16(KRPC_WIRE_VERSION),
		.reason = cpu_to_le16(reason),
		.value = cpu_to_le32(value),
	};

	pr_info_ratelimited("rejecting %pISpc: %s (%d), value %u\n",
			    &id->route.addr.dst_addr,
			    krpc_wire_reject_name(reason), err, value);
	atomic64_inc(&krpc_stats.conns_rejected);
	rdma_reject(id, &rej, sizeof(rej), IB_CM_REJ_CONSUMER_DEFINED);
}

static int rejected(struct krpc_rdma_conn *rc, struct rdma_cm_event *ev)
{
	struct krpc_conn *conn = rc->conn;
	struct krpc_wire_reject rej;
	const void *data;
	u16 reason;
	u8 len = 0;

	data = rdma_consumer_reject_data(rc->cm_id, ev, &len);
	if (data && len >= sizeof(rej))
		memcpy(&rej, data, sizeof(rej));
	/* Not krpc's reject (another service, or a failed rdma_accept()). */
	if (!data || len < sizeof(rej) ||
	    be32_to_cpu(rej.magic) != KRPC_WIRE_MAGIC) {
		pr_info_ratelimited("conn %u: %pISpc refused the connection: %s\n",
				    conn->id, &conn->peer,
				    rdma_reject_msg(rc->cm_id, ev->status));
		return -ECONNREFUSED;
	}
	reason = le16_to_cpu(rej.reason);
	pr_info_ratelimited("conn %u: %pISpc rejected the handshake: %s (value %u, peer speaks version %u)\n",
			    conn->id, &conn->peer,
			    krpc_wire_reject_name(reason),
			    le32_to_cpu(rej.value), le16_to_cpu(rej.version));
	return krpc_wire_reject_errno(reason);
}

static void conn_param_init(struct rdma_conn_param *p, struct ib_device *dev,
			    const void *pdata, u8 len)
{
	memset(p, 0, sizeof(*p));
	p->private_data = pdata;
	p->private_data_len = len;
	p->responder_resources = min_t(int, dev->attrs.max_qp_rd_atom, 255);
	p->initiator_depth = min_t(int, dev->attrs.max_qp_init_rd_atom, 255);
	p->flow_control = 1;
	p->retry_count = 7;
	p->rnr_retry_count = krpc_param(rnr_retry);
}

/* ---------------------------------------------------------------------- */
/* Teardown */

/*
 * A failed disconnect (the connection never got that far, or the CM could
 * not send the DREQ) changes nothing: the drain moves the QP to the error
 * state and destroying the id tells the peer.  A fault-injection point.
 */
static KRPC_FAULT_POINT int krpc_rdma_disconnect(struct rdma_cm_id *id)
{
	return rdma_disconnect(id);
}
ALLOW_ERROR_INJECTION(krpc_rdma_disconnect, ERRNO);

static void rc_teardown(struct krpc_rdma_conn *rc, bool in_handler)
{
	struct krpc_conn *conn = rc->conn;

	krpc_conn_lock(conn);
	krpc_conn_dead_locked(conn, -ECONNRESET);
	rc->live = false;
	/* No wake-up queues refill_work from now; the cancel below runs it out. */
	krpc_rdma_refill_wait_end_locked(rc);
	krpc_conn_unlock(conn);

	/* Handlers that already started finish; later ones see @dying. */
	if (rc->cm_id && !in_handler) {
		rdma_lock_handler(rc->cm_id);
		WRITE_ONCE(rc->dying, true);
		rdma_unlock_handler(rc->cm_id);
	}
	WRITE_ONCE(rc->dying, true);
	timer_delete_sync(&rc->ka_timer);
	cancel_delayed_work_sync(&rc->refill_work);

	if (rc->qp) {
		/*
		 * A message from the client says it is established, even if
		 * its RTU has not reached our CM yet (Soft-RoCE raises no
		 * IB_EVENT_COMM_EST).  Until the CM knows, rdma_disconnect()
		 * sends no DREQ, and the CM's REJ on destroy is all a client
		 * would see of a close (by a protocol error in its first
		 * message, say).  Told here, in process context: ib_cm's
		 * cm_id lock may not be taken from the receive's softirq
		 * (lockdep: it nests ib_cm's xarray lock, which is not
		 * softirq-safe).  Once established, the CM ignores it.
		 *
		 * The CM stops resending the REP only in a work item of its
		 * own, and only while the connection is still established: a
		 * DREQ sent before that work ran leaves the REP resent until
		 * it times out, holding the cm_id, and rdma_destroy_id()
		 * waits as long (ib_cm: "cm_destroy_id_wait_timeout", tens
		 * of seconds).  So wait, bounded, for the ESTABLISHED event,
		 * which comes after that work.
		 */
		if (rc->conn->server && READ_ONCE(rc->rx_seen) && !in_handler &&
		    !completion_done(&rc->cm_established)) {
			rdma_notify(rc->cm_id, IB_EVENT_COMM_EST);
			if (!wait_for_completion_timeout(&rc->cm_established,
							 HZ))
				pr_debug("conn %u: no ESTABLISHED from the CM\n",
					 conn->id);
		}
		krpc_rdma_disconnect(rc->cm_id);
		ib_drain_qp(rc->qp);
	}
	krpc_rdma_release_all(rc);
	krpc_rdma_destroy_resources(rc);
	/* No QP, no more QP events: a queued one can go. */
	cancel_work_sync(&rc->qp_err_work);
	cancel_work_sync(&rc->comm_est_work);
	if (rc->cm_id && !rc->id_owned_by_core)
		rdma_destroy_id(rc->cm_id);
	rc->cm_id = NULL;
	if (rc->kdev) {
		if (!list_empty(&rc->kdev_node))
			krpc_device_detach(rc->kdev, &rc->kdev_node);
		krpc_device_put(rc->kdev);
		rc->kdev = NULL;
	}
	krpc_conn_teardown_done(conn);
	krpc_conn_put(conn);	/* the transport's; may free @rc */
}

void krpc_rdma_teardown_work(struct work_struct *work)
{
	rc_teardown(container_of(work, struct krpc_rdma_conn, teardown_work),
		    false);
}

void krpc_rdma_shutdown(struct krpc_conn *conn, int reason)
{
	krpc_rdma_shutdown_rc(to_rc(conn), reason);
}

/* Device removal (device.c, under kdev->lock): start the teardown. */
void krpc_rdma_device_removal(struct list_head *node)
{
	krpc_rdma_shutdown_rc(container_of(node, struct krpc_rdma_conn,
					   kdev_node), -ENODEV);
}

/* ---------------------------------------------------------------------- */
/* Client side */

static int client_route_resolved(struct krpc_rdma_conn *rc)
{
	struct krpc_conn *conn = rc->conn;
	struct rdma_conn_param param;
	u32 inline_max, max_msg, recv_size;
	struct cp_data d;
	u8 len;
	int ret;

	rc->kdev = krpc_device_lookup(rc->cm_id->device);
	if (!rc->kdev)
		return -ENODEV;
	rc->ibdev = rc->cm_id->device;
	ret = krpc_rdma_setup(rc, conn->max_depth);
	if (ret)
		return ret;
	local_limits(rc, &inline_max, &max_msg, &recv_size);
	len = cp_fill(&d, conn->max_depth, rc->features, rc->nr_recv,
		      recv_size, max_msg, inline_max);
	d.cp.version = cpu_to_le16(krpc_client_wire_version());
	conn_param_init(&param, rc->ibdev, &d, len);
	return rdma_connect_locked(rc->cm_id, &param);
}

static int client_established(struct krpc_rdma_conn *rc,
			      struct rdma_cm_event *ev)
{
	struct krpc_conn *conn = rc->conn;
	u32 inline_max, max_msg, recv_size, value, delay;
	struct cp_vals v;
	u16 reason;
	int ret;

	delay = READ_ONCE(krpc_fault_client_delay_ms);
	if (delay)
		msleep(min(delay, 10000U));
	ret = cp_parse(ev->param.conn.private_data,
		       ev->param.conn.private_data_len, &v, &reason, &value);
	/* An answer grants no more depth, and uses no feature, than asked. */
	if (!ret && (v.depth > conn->max_depth || (v.features & ~rc->features)))
		ret = -EINVAL;
	if (ret) {
		pr_err_ratelimited("conn %u: bad handshake answer from %pISpc (%d)\n",
				   conn->id, &conn->peer, ret);
		return -EPROTO;
	}
	local_limits(rc, &inline_max, &max_msg, &recv_size);
	inline_max = min3(inline_max, v.inline_max, v.recv_size - KRPC_HDR_SIZE);
	max_msg = min(max_msg, v.max_msg);

	krpc_conn_lock(conn);
	if (conn->state != KRPC_CONN_CONNECTING) {
		krpc_conn_unlock(conn);
		return -ECONNABORTED;
	}
	rc->features &= v.features;
	if (rc->features & KRPC_WFEAT_KA)
		conn->ka_peer_ms = v.ka_timeout_ms;
	krpc_rdma_go_live_locked(rc, v.credits);
	krpc_conn_established_locked(conn, v.depth, inline_max, max_msg);
	krpc_rdma_early_rx_locked(rc);
	krpc_conn_unlock(conn);
	krpc_rdma_ka_start(rc);
	pr_debug("conn %u: up to %pISpc depth %u inline %u max %u\n",
		 conn->id, &conn->peer, v.depth, inline_max, max_msg);
	return 0;
}

int krpc_rdma_connect(struct krpc_conn *conn,
		      const struct krpc_client_opts *opts)
{
	struct krpc_rdma_conn *rc;
	struct rdma_cm_id *id;
	int ret;

	rc = kzalloc(sizeof(*rc), GFP_KERNEL);
	if (!rc)
		return -ENOMEM;
	krpc_rdma_init_rc(rc);
	rc->conn = conn;
	rc->connect_tmo = opts->connect_timeout_ms ?
		opts->connect_timeout_ms : krpc_param(connect_timeout_ms);
	conn->xprt = rc;

	id = rdma_create_id(conn->net, cm_handler, &rc->ctx, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id)) {
		ret = PTR_ERR(id);
		goto out_free;
	}
	rc->cm_id = id;
	krpc_conn_get(conn);	/* the transport's, until teardown */
	ret = rdma_resolve_addr(id, NULL, (struct sockaddr *)&opts->addr,
				rc->connect_tmo);
	if (ret) {
		rdma_destroy_id(id);
		krpc_conn_put(conn);
		goto out_free;
	}
	return 0;

out_free:
	conn->xprt = NULL;
	kfree(rc);
	return ret;
}
ALLOW_ERROR_INJECTION(krpc_rdma_connect, ERRNO);

static int conn_event(struct krpc_rdma_conn *rc, struct rdma_cm_id *id,
		      struct rdma_cm_event *ev)
{
	struct krpc_conn *conn = rc->conn;
	int ret = 0;

	/* Before @dying: the teardown waits for it (rc_teardown()). */
	if (ev->event == RDMA_CM_EVENT_ESTABLISHED)
		complete_all(&rc->cm_established);
	if (READ_ONCE(rc->dying))
		return 0;
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = rdma_resolve_route(id, rc->connect_tmo);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		ret = client_route_resolved(rc);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		/* A server connection went live when it accepted. */
		if (!conn->server)
			ret = client_established(rc, ev);
		break;
	case RDMA_CM_EVENT_REJECTED:
		ret = rejected(rc, ev);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
		ret = ev->status < 0 ? ev->status : -EHOSTUNREACH;
		break;
	case RDMA_CM_EVENT_ROUTE_ERROR:
		ret = ev->status < 0 ? ev->status : -ENETUNREACH;
		break;
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		ret = ev->status < 0 ? ev->status : -EHOSTUNREACH;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		krpc_rdma_shutdown_rc(rc, -ECONNRESET);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		krpc_rdma_shutdown_rc(rc, -ENODEV);
		break;
	case RDMA_CM_EVENT_ADDR_CHANGE:
		krpc_rdma_shutdown_rc(rc, -ENETRESET);
		break;
	default:
		break;
	}
	if (ret) {
		krpc_conn_connect_failed(conn, ret);
		krpc_rdma_shutdown_rc(rc, ret);
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Server side */

/* The accept verb, as a fault-injection point (inject.h). */
static KRPC_FAULT_POINT int krpc_rdma_accept(struct rdma_cm_id *id,
					   struct rdma_conn_param *param)
{
	return rdma_accept(id, param);
}
ALLOW_ERROR_INJECTION(krpc_rdma_accept, ERRNO);

static int listener_connect(struct krpc_rdma_listener *l,
			    struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct krpc_server *srv = l->srv;
	u32 inline_max, max_msg, recv_size, value, depth;
	struct krpc_rdma_conn *rc;
	struct rdma_conn_param param;
	struct krpc_device *kdev;
	struct krpc_conn *conn;
	struct cp_data d;
	struct cp_vals v;
	u16 reason;
	u8 len;
	int ret;

	ret = cp_parse(ev->param.conn.private_data,
		       ev->param.conn.private_data_len, &v, &reason, &value);
	if (ret) {
		reject(id, reason, value, ret);
		return ret;
	}
	kdev = krpc_device_lookup(id->device);
	if (!kdev) {
		reject(id, KRPC_REJ_RESOURCES, 0, -ENODEV);
		return -ENODEV;
	}
	conn = krpc_conn_alloc(&krpc_rdma_ops, srv->net, true, srv->depth,
			       &id->route.addr.dst_addr);
	rc = kzalloc(sizeof(*rc), GFP_KERNEL);
	if (conn)	/* srv->cq_mode was checked by krpc_server_create() */
		krpc_cq_mode_resolve(srv->cq_mode, &conn->cq_poll);
	if (!conn || !rc) {
		kfree(rc);
		if (conn)
			krpc_conn_put(conn);
		krpc_device_put(kdev);
		reject(id, KRPC_REJ_RESOURCES, 0, -ENOMEM);
		return -ENOMEM;
	}
	/* From here the teardown undoes everything, the conn included. */
	krpc_rdma_init_rc(rc);
	rc->conn = conn;
	rc->cm_id = id;
	rc->kdev = kdev;
	rc->ibdev = id->device;
	conn->xprt = rc;
	krpc_conn_lock(conn);
	rc->teardown_queued = true;	/* nobody queues one before accept */
	krpc_conn_unlock(conn);

	reason = KRPC_REJ_SHUTDOWN;
	value = 0;
	ret = krpc_server_add_conn(srv, conn);
	if (ret == -EUSERS) {
		reason = KRPC_REJ_RESOURCES;
		value = krpc_server_max_conns(srv);
	}
	if (ret)
		goto out_teardown;
	depth = min_t(u32, v.depth, srv->depth);
	reason = KRPC_REJ_RESOURCES;
	ret = krpc_rdma_setup(rc, depth);
	if (ret)
		goto out_teardown;

	local_limits(rc, &inline_max, &max_msg, &recv_size);
	inline_max = min3(inline_max, v.inline_max, v.recv_size - KRPC_HDR_SIZE);
	max_msg = min(max_msg, v.max_msg);
	krpc_conn_lock(conn);
	if (conn->state != KRPC_CONN_CONNECTING) {
		/*
		 * The device went away or the QP failed during the set-up
		 * (the connection is on the device's list from
		 * krpc_rdma_setup()); no teardown was queued for it.
		 */
		ret = conn->reason ? conn->reason : -ECONNABORTED;
		krpc_conn_unlock(conn);
		reason = KRPC_REJ_SHUTDOWN;
		goto out_teardown;
	}
	rc->features &= v.features;
	if (rc->features & KRPC_WFEAT_KA)
		conn->ka_peer_ms = v.ka_timeout_ms;
	krpc_rdma_go_live_locked(rc, v.credits);
	/* Receives may complete before ESTABLISHED: live before accept. */
	krpc_conn_established_locked(conn, depth, inline_max, max_msg);
	krpc_conn_unlock(conn);

	len = cp_fill(&d, depth, rc->features, rc->nr_recv, recv_size,
		      max_msg, inline_max);
	conn_param_init(&param, rc->ibdev, &d, len);
	param.responder_resources = min_t(u8, param.responder_resources,
					  ev->param.conn.initiator_depth);
	param.initiator_depth = min_t(u8, param.initiator_depth,
				      ev->param.conn.responder_resources);
	id->context = &rc->ctx;
	ret = krpc_rdma_accept(id, &param);
	if (ret)
		goto out_teardown;

	krpc_conn_lock(conn);
	rc->teardown_queued = false;
	if (conn->state == KRPC_CONN_DEAD)
		krpc_rdma_fail_locked(rc, conn->reason);
	krpc_conn_unlock(conn);
	krpc_rdma_ka_start(rc);
	return 0;

out_teardown:
	reject(id, reason, value, ret);
	/* Returning non-zero makes rdma_cm destroy the id: do not touch it. */
	rc->id_owned_by_core = true;
	krpc_conn_lock(conn);
	krpc_conn_dead_locked(conn, ret);
	krpc_conn_unlock(conn);
	rc_teardown(rc, true);
	return ret;
}

static int listener_event(struct krpc_rdma_listener *l, struct rdma_cm_id *id,
			  struct rdma_cm_event *ev)
{
	int ret = 0;

	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		return listener_connect(l, id, ev);
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/*
		 * Our device is going: let rdma_cm destroy the listener.  The
		 * address is logged first: once @l->id is NULL, an unlisten
		 * that takes the lock next frees @l without waiting for us.
		 */
		pr_info("listener on %pISpc lost its device\n", &l->srv->addr);
		spin_lock(&l->lock);
		if (l->id == id) {
			l->id = NULL;
			ret = 1;
		}
		spin_unlock(&l->lock);
		return ret;
	default:
		return 0;
	}
}

static int cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct krpc_cm_ctx *ctx = id->context;

	if (ctx->listener)
		return listener_event(container_of(ctx, struct krpc_rdma_listener,
						   ctx), id, ev);
	return conn_event(container_of(ctx, struct krpc_rdma_conn, ctx), id,
			  ev);
}

int krpc_rdma_listen(struct krpc_server *srv)
{
	struct krpc_rdma_listener *l;
	struct rdma_cm_id *id;
	int ret;

	l = kzalloc(sizeof(*l), GFP_KERNEL);
	if (!l)
		return -ENOMEM;
	l->ctx.listener = true;
	l->srv = srv;
	spin_lock_init(&l->lock);
	id = rdma_create_id(srv->net, cm_handler, &l->ctx, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id)) {
		ret = PTR_ERR(id);
		goto out_free;
	}
	ret = rdma_bind_addr(id, (struct sockaddr *)&srv->addr);
	if (ret)
		goto out_destroy_id;
	ret = rdma_listen(id, 128);
	if (ret)
		goto out_destroy_id;
	l->id = id;
	srv->xprt = l;
	return 0;

out_destroy_id:
	rdma_destroy_id(id);
out_free:
	kfree(l);
	return ret;
}
ALLOW_ERROR_INJECTION(krpc_rdma_listen, ERRNO);

void krpc_rdma_unlisten(struct krpc_server *srv)
{
	struct krpc_rdma_listener *l = srv->xprt;
	struct rdma_cm_id *id;

	spin_lock(&l->lock);
	id = l->id;
	l->id = NULL;
	spin_unlock(&l->lock);
	/* Waits for running handlers, CONNECT_REQUESTs included. */
	if (id)
		rdma_destroy_id(id);
	srv->xprt = NULL;
	kfree(l);
}
