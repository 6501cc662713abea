// SPDX-License-Identifier: GPL-2.0
/*
 * rdma_peer: a raw verbs krpc client that misbehaves on purpose, for
 * rpc_rdma_peer.sh.  It speaks Documentation/protocol.rst from outside the
 * module (librdmacm, libibverbs: a user QP on the same Soft-RoCE device)
 * and does one thing per run against a krpc server at ADDR PORT:
 *
 *   good		inline echo calls of 0, 1 and inline_max bytes, a
 *			rendezvous echo of 100000 bytes (the server READs our
 *			request region and WRITEs our reply region), an
 *			unknown method (ERROR 0x10000), a CANCEL of a call
 *			never made (ignored); every reply checked byte for
 *			byte; then a clean disconnect
 *   cancel		a request with a reply region to the method that
 *			answers after 300 ms, then its CANCEL: answered at
 *			once with ERROR ECANCELED, the slot free again for an
 *			echo; the handler's late reply is dropped
 *   cancelqueued	a CANCEL of a call whose reply waits for credits (3,
 *			receives never reposted) behind another: answered at
 *			once by that reply, on the credits kept for control
 *			messages
 *   silent		a correct handshake, then nothing at all: closed by
 *			the server's keepalive timeout within MS (its
 *			keepalives are counted and printed on the way)
 *   ka (MS T KA)	a connect request offering KRPC_WFEAT_KA with a
 *			ka_timeout_ms of T: the answer must take it and
 *			announce the server's, KA; then idle for KA_WATCH
 *			times T (our keepalives every third of KA): the
 *			server must send something at least every T ms
 *			(the gaps measured and printed, idle_gaps())
 *
 *   magic, version, depth0, recvsize, maxmsg, credits0, credits2,
 *   reserved0, kalow, kahigh, kareserved
 *			connect requests that fail the handshake checks:
 *			the exact krpc reject (reason, value) comes back
 *			(credits2: 2 credits, fewer than a call or reply
 *			leaves to control messages; kalow, kahigh: a
 *			ka_timeout_ms of 100 and 700000, beyond krpc's range;
 *			kareserved: the KRPC_WFEAT_KA extension's reserved
 *			field set)
 *
 *   short, badtype, wrongside, badflags, rdvnofeat, reserved, strayregion,
 *   oversize, lenmismatch, credits, slot, busyslot, rdvinline, rdvzero,
 *   rdvwrap, rdvlen, ctrlfields, kacallid
 *			one message that fails a check of the validation
 *			order (rpc_rdma_peer.sh lists the reason each must
 *			be logged with): the server closes the connection
 *			(rdvnofeat: a reply region although the connect
 *			request offered no KRPC_WFEAT_RDV)
 *   cancelreuse	a client that reuses a slot before its CANCEL was
 *			answered (depth 1, the fewest credits krpc takes,
 *			3, and receives never reposted, so once those are
 *			spent the answers stay queued): closed as a
 *			protocol error
 *   badkey_req, badkey_rep
 *			a rendezvous request whose request (READ) or reply
 *			(WRITE) region has a key we never granted: the
 *			server's transfer fails and it closes the connection
 *
 *   serve MODE ADDR PORT [MS [KA [T]]]
 *			a raw verbs server for krpc's kernel client instead
 *			(rdma_peer_srv.c)
 *
 * MS (argv[4], default 5000) bounds every wait for an answer or a close.
 * Exit status 0 when the server behaved exactly so, 1 otherwise (with a
 * line on stderr saying what happened instead), 2 for bad usage.
 *
 * The wire layouts are peer_wire.h's, which mirror kmod/wire.h.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "rdma_peer.h"

int wait_ms = 5000;
static int failed;	/* fail() said why */

int fail(const char *fmt, ...)
{
	va_list ap;

	failed = 1;
	fprintf(stderr, "rdma_peer: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	return 1;
}

long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

uint8_t pattern(uint32_t seed, size_t i)
{
	return (seed * 31 + i * 131 + (i >> 9)) & 0xff;
}

/* ---------------------------------------------------------------------- */
/* Connection management */

/*
 * The next CM event within @ms, which must be @want; its private data (up
 * to @len bytes) copied to @pd.  Return 0, or 1 with a line on stderr.
 * For REJECTED the status is returned in *@status.
 */
int cm_wait(struct peer *p, enum rdma_cm_event_type want, int ms,
		   void *pd, size_t len, int *status)
{
	struct pollfd f = { .fd = p->ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type got;
	int ret = 0;

	if (poll(&f, 1, ms) != 1)
		return fail("no %s within %d ms", rdma_event_str(want), ms);
	if (rdma_get_cm_event(p->ch, &ev))
		return fail("rdma_get_cm_event: %s", strerror(errno));
	got = ev->event;
	if (status)
		*status = ev->status;
	if (pd) {
		memset(pd, 0, len);
		if (ev->param.conn.private_data)
			memcpy(pd, ev->param.conn.private_data,
			       len < ev->param.conn.private_data_len ?
			       len : ev->param.conn.private_data_len);
	}
	rdma_ack_cm_event(ev);
	if (got != want)
		ret = fail("%s instead of %s", rdma_event_str(got),
			   rdma_event_str(want));
	return ret;
}

int post_recv(struct peer *p, unsigned int i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(p->mem + (size_t)i * RECV_SIZE),
		.length = RECV_SIZE,
		.lkey = p->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_recv(p->id->qp, &wr, &bad);
}

/*
 * A correct connect request, offering no KRPC_WFEAT_KA but a feature of a
 * later protocol revision, which the server must leave out of its answer.
 */
static void req_init(struct conn_data *d)
{
	struct conn_pd *c = &d->pd;

	memset(d, 0, sizeof(*d));
	c->magic = htobe32(MAGIC);
	c->version = htole16(VERSION);
	c->depth = htole16(NR_RECV - 4);
	c->features = htole64(FEAT_RDV | FEAT_CANCEL_ACK | FEAT_FUTURE);
	c->credits = htole16(NR_RECV);
	c->recv_size = htole32(RECV_SIZE);
	c->max_msg = htole32(1 << 20);
	c->inline_max = htole32(RECV_SIZE - HDR_SIZE);
}

/* Address, route, QP and memory: ready for rdma_connect(). */
static int peer_setup(struct peer *p, const char *addr, const char *port)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *ai;
	int i;

	p->ch = rdma_create_event_channel();
	if (!p->ch)
		return fail("rdma_create_event_channel: %s", strerror(errno));
	if (rdma_create_id(p->ch, &p->id, NULL, RDMA_PS_TCP))
		return fail("rdma_create_id: %s", strerror(errno));
	if (rdma_getaddrinfo(addr, port, &hints, &ai))
		return fail("rdma_getaddrinfo %s %s: %s", addr, port,
			    strerror(errno));
	i = rdma_resolve_addr(p->id, NULL, ai->ai_dst_addr, 2000);
	rdma_freeaddrinfo(ai);
	if (i)
		return fail("rdma_resolve_addr: %s", strerror(errno));
	if (cm_wait(p, RDMA_CM_EVENT_ADDR_RESOLVED, wait_ms, NULL, 0, NULL))
		return 1;
	if (rdma_resolve_route(p->id, 2000))
		return fail("rdma_resolve_route: %s", strerror(errno));
	if (cm_wait(p, RDMA_CM_EVENT_ROUTE_RESOLVED, wait_ms, NULL, 0, NULL))
		return 1;
	return peer_verbs(p);
}

/* Protection domain, CQs, QP and memory for the connection on p->id. */
int peer_verbs(struct peer *p)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 32, .max_recv_wr = NR_RECV,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
	};

	p->pd = ibv_alloc_pd(p->id->verbs);
	p->scq = ibv_create_cq(p->id->verbs, 64, NULL, NULL, 0);
	p->rcq = ibv_create_cq(p->id->verbs, 64, NULL, NULL, 0);
	if (!p->pd || !p->scq || !p->rcq)
		return fail("pd/cq: %s", strerror(errno));
	qa.send_cq = p->scq;
	qa.recv_cq = p->rcq;
	if (rdma_create_qp(p->id, p->pd, &qa))
		return fail("rdma_create_qp: %s", strerror(errno));

	p->mem = calloc(1, (size_t)NR_RECV * RECV_SIZE + SEND_SIZE);
	p->rdv[0] = calloc(1, RDV_LEN);
	p->rdv[1] = calloc(1, RDV_LEN);
	if (!p->mem || !p->rdv[0] || !p->rdv[1])
		return fail("%s", "out of memory");
	p->mr = ibv_reg_mr(p->pd, p->mem, (size_t)NR_RECV * RECV_SIZE +
			   SEND_SIZE, IBV_ACCESS_LOCAL_WRITE);
	p->rdv_mr[0] = ibv_reg_mr(p->pd, p->rdv[0], RDV_LEN,
				  IBV_ACCESS_LOCAL_WRITE |
				  IBV_ACCESS_REMOTE_READ);
	p->rdv_mr[1] = ibv_reg_mr(p->pd, p->rdv[1], RDV_LEN,
				  IBV_ACCESS_LOCAL_WRITE |
				  IBV_ACCESS_REMOTE_WRITE);
	if (!p->mr || !p->rdv_mr[0] || !p->rdv_mr[1])
		return fail("ibv_reg_mr: %s", strerror(errno));
	return 0;
}

static int peer_connect_raw(struct peer *p, const struct conn_data *req)
{
	struct rdma_conn_param cp = {
		.private_data = req,
		.private_data_len = le64toh(req->pd.features) & FEAT_KA ?
				    sizeof(*req) : sizeof(req->pd),
		.responder_resources = 1,
		.initiator_depth = 1,
		.retry_count = 7,
		.rnr_retry_count = 0,	/* as krpc: credits make RNR impossible */
	};
	unsigned int i;

	p->nr_recv = le16toh(req->pd.credits);
	if (p->nr_recv > NR_RECV)
		p->nr_recv = NR_RECV;
	for (i = 0; i < p->nr_recv; i++)
		if (post_recv(p, i))
			return fail("ibv_post_recv: %s", strerror(errno));
	if (rdma_connect(p->id, &cp))
		return fail("rdma_connect: %s", strerror(errno));
	return 0;
}

/* A correct handshake: the server's answer checked and applied. */
static int peer_connect(struct peer *p, const struct conn_data *req)
{
	struct conn_pd *a = &p->ans;
	struct conn_data rep;
	uint32_t rs, ka;

	if (peer_connect_raw(p, req) ||
	    cm_wait(p, RDMA_CM_EVENT_ESTABLISHED, wait_ms, &rep, sizeof(rep),
		    NULL))
		return 1;
	p->connected = 1;
	*a = rep.pd;
	p->ans_ka = rep.ka;
	rs = le32toh(a->recv_size);
	if (be32toh(a->magic) != MAGIC || le16toh(a->version) != VERSION ||
	    !a->depth || le16toh(a->depth) > le16toh(req->pd.depth) ||
	    !a->credits || rs < 2 * HDR_SIZE || rs > SEG_SIZE ||
	    le32toh(a->max_msg) < SEG_SIZE ||
	    (le64toh(a->features) & ~le64toh(req->pd.features)))
		return fail("%s", "bad handshake answer");
	if (le64toh(a->features) & FEAT_FUTURE)
		return fail("%s", "the answer uses a feature krpc does not know");
	if (le64toh(a->features) & FEAT_KA) {
		ka = le32toh(p->ans_ka.ka_timeout_ms);
		if (p->ans_ka.reserved || ka < KA_TIMEOUT_MIN ||
		    ka > KA_TIMEOUT_MAX)
			return fail("bad keepalive extension in the answer: ka_timeout_ms %u reserved %u",
				    ka, le32toh(p->ans_ka.reserved));
		p->ka_ms = ka / 3;
	}
	p->inline_max = le32toh(a->inline_max);
	if (p->inline_max > rs - HDR_SIZE)
		p->inline_max = rs - HDR_SIZE;
	if (p->inline_max > RECV_SIZE - HDR_SIZE)
		p->inline_max = RECV_SIZE - HDR_SIZE;
	p->send_credits = le16toh(a->credits);
	p->repost = 1;
	return 0;
}

void peer_close(struct peer *p)
{
	if (p->connected)
		rdma_disconnect(p->id);
	if (p->id && p->id->qp)
		rdma_destroy_qp(p->id);
	if (p->rdv_mr[1])
		ibv_dereg_mr(p->rdv_mr[1]);
	if (p->rdv_mr[0])
		ibv_dereg_mr(p->rdv_mr[0]);
	if (p->mr)
		ibv_dereg_mr(p->mr);
	if (p->rcq)
		ibv_destroy_cq(p->rcq);
	if (p->scq)
		ibv_destroy_cq(p->scq);
	if (p->pd)
		ibv_dealloc_pd(p->pd);
	if (p->id)
		rdma_destroy_id(p->id);
	if (p->listen_id)
		rdma_destroy_id(p->listen_id);
	if (p->ch)
		rdma_destroy_event_channel(p->ch);
	free(p->rdv[1]);
	free(p->rdv[0]);
	free(p->mem);
}

/* ---------------------------------------------------------------------- */
/* Messages */

/*
 * The completion of the one work request in flight on the send queue,
 * within wait_ms.  Return 0; -ECONNRESET if the connection is going down
 * (flushed, never acknowledged, or a CM event came meanwhile); 1 on any
 * other failure, with a line on stderr naming @what.
 *
 * A work request posted just before the other side's DREQ arrived never
 * completes on Soft-RoCE: the other queue pair is in the error state and
 * drops it, and krpc asks for retry_count 7, which rxe_comp.c takes as
 * "retry forever".  So the wait ends when the CM event is there.
 */
int wait_wr(struct peer *p, const char *what)
{
	long end = now_ms() + wait_ms;
	struct ibv_wc wc;

	do {
		if (ibv_poll_cq(p->scq, 1, &wc) > 0) {
			if (wc.status == IBV_WC_WR_FLUSH_ERR ||
			    wc.status == IBV_WC_RETRY_EXC_ERR)
				return -ECONNRESET;
			if (wc.status != IBV_WC_SUCCESS)
				return fail("%s completion: %s", what,
					    ibv_wc_status_str(wc.status));
			return 0;
		}
		if (cm_pending(p))
			return -ECONNRESET;
		usleep(100);
	} while (now_ms() < end);
	return fail("%s not completed", what);
}

/* A CM event (a disconnect, in a connected state) is waiting to be read. */
int cm_pending(struct peer *p)
{
	struct pollfd f = { .fd = p->ch->fd, .events = POLLIN };

	return poll(&f, 1, 0) == 1;
}

/*
 * Post one SEND of @len bytes starting with header @h (its payload after
 * it in @body) and wait for its completion.  The header's credits field is
 * what we owe unless @keep_credits; a send without a credit is refused.
 * Return 0; -ECONNRESET if the connection is going down (a CM event is
 * pending, or the SEND was flushed or never acknowledged); 1 on any other
 * failure, with a line on stderr.
 */
int send_raw(struct peer *p, struct hdr *h, const void *body,
		    uint32_t len, int keep_credits)
{
	char *buf = p->mem + (size_t)NR_RECV * RECV_SIZE;
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf, .length = len, .lkey = p->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad;

	if (!p->send_credits)
		return fail("no credit left to send type %u", h->type);
	/*
	 * Not into a connection the other side is closing: its queue pair
	 * is in the error state before its DREQ arrives, and Soft-RoCE drops
	 * what reaches it, so the SEND would only time out.
	 */
	if (cm_pending(p))
		return -ECONNRESET;
	if (!keep_credits) {
		h->credits = htole16(p->owed);
		p->owed = 0;
	}
	if (len > SEND_SIZE)
		return fail("send of %u bytes", len);
	memcpy(buf, h, len < HDR_SIZE ? len : HDR_SIZE);
	if (len > HDR_SIZE && body)
		memcpy(buf + HDR_SIZE, body, len - HDR_SIZE);
	if (ibv_post_send(p->id->qp, &wr, &bad))
		return fail("ibv_post_send: %s", strerror(errno));
	p->send_credits--;
	p->last_tx = now_ms();
	return wait_wr(p, "send");
}

int send_msg(struct peer *p, struct hdr *h, const void *body)
{
	uint32_t len = le32toh(h->len);

	if (h->flags & (F_RDV_REQ | F_WRITTEN))
		len = 0;	/* the payload is in a region, not inline */
	return send_raw(p, h, body, HDR_SIZE + len, 0);
}

void hdr_req(struct hdr *h, uint8_t type, uint32_t method,
		    uint16_t slot, uint64_t seq, uint32_t len)
{
	memset(h, 0, sizeof(*h));
	h->type = type;
	h->method = htole32(method);
	h->call_id = htole64(seq << 16 | slot);
	h->len = htole32(len);
}

static void set_rdv(struct peer *p, struct rdv *r, int which, uint32_t len)
{
	r->addr = htole64((uintptr_t)p->rdv[which]);
	r->rkey = htole32(p->rdv_mr[which]->rkey);
	r->len = htole32(len);
}

/* A message arrived: the wait since the one before, for idle_gaps(). */
static void rx_seen(struct peer *p)
{
	long t = now_ms();

	if (t - p->last_rx > p->max_gap)
		p->max_gap = t - p->last_rx;
	p->last_rx = t;
	p->nr_rx++;
}

/*
 * The next message from the server within @ms: its header in @h, its
 * inline payload at *@body (valid until its receive is used again: it is
 * reposted at once, so NR_RECV - 1 more messages).  KEEPALIVE and
 * CREDIT messages are checked, counted and skipped.  Return 0; -ETIMEDOUT
 * if none came; -ECONNRESET if the queue pair was flushed (the connection
 * is gone); 1 on anything malformed, with a line on stderr.
 */
int recv_msg(struct peer *p, struct hdr *h, const char **body,
		    uint32_t *inline_len, int ms)
{
	struct ibv_wc wc;
	long end = now_ms() + ms;
	const char *buf;
	int n;

	for (;;) {
		n = ibv_poll_cq(p->rcq, 1, &wc);
		if (n < 0)
			return fail("%s", "ibv_poll_cq");
		if (!n) {
			if (now_ms() >= end)
				return -ETIMEDOUT;
			usleep(100);
			continue;
		}
		if (wc.status == IBV_WC_WR_FLUSH_ERR)
			return -ECONNRESET;
		if (wc.status != IBV_WC_SUCCESS)
			return fail("receive completion: %s",
				    ibv_wc_status_str(wc.status));
		rx_seen(p);
		if (wc.byte_len < HDR_SIZE)
			return fail("a message of %u bytes", wc.byte_len);
		buf = p->mem + (size_t)wc.wr_id * RECV_SIZE;
		memcpy(h, buf, sizeof(*h));
		p->send_credits += le16toh(h->credits);
		if (p->repost) {
			if (post_recv(p, wc.wr_id))
				return fail("%s", "repost");
			p->owed++;
		}
		if (h->type == T_KEEPALIVE || h->type == T_CREDIT) {
			if (h->flags || h->method || h->call_id || h->status ||
			    h->len || wc.byte_len != HDR_SIZE)
				return fail("control message type %u with fields set",
					    h->type);
			p->keepalives += h->type == T_KEEPALIVE;
			continue;
		}
		if (body)
			*body = buf + HDR_SIZE;
		if (inline_len)
			*inline_len = wc.byte_len - HDR_SIZE;
		return 0;
	}
}

/* A CM event is pending: it must be DISCONNECTED. */
int disconnected(struct peer *p)
{
	enum rdma_cm_event_type got;
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(p->ch, &ev))
		return fail("rdma_get_cm_event: %s", strerror(errno));
	got = ev->event;
	rdma_ack_cm_event(ev);
	if (got != RDMA_CM_EVENT_DISCONNECTED)
		return fail("%s instead of DISCONNECTED", rdma_event_str(got));
	p->connected = 0;
	return 0;
}

/*
 * A KEEPALIVE when we have sent nothing for p->ka_ms, or KA_MS (unless the
 * mode is silent, or only the last credit is left and we owe none back):
 * the other side's keepalive timeout is then never why it closes.
 */
int keepalive(struct peer *p)
{
	long ival = p->ka_ms ? p->ka_ms : KA_MS;
	struct hdr h;

	if (p->silent || now_ms() - p->last_tx < ival ||
	    (p->send_credits <= 1 && !p->owed))
		return 0;
	hdr_req(&h, T_KEEPALIVE, 0, 0, 0, 0);
	return send_msg(p, &h, NULL) > 0;	/* a flush: going down */
}

/*
 * The other side must close the connection within @ms, for a reason of
 * its own (we keep sending keepalives): the DISCONNECTED event comes, and
 * nothing but keepalives and credits before it.
 */
int expect_closed(struct peer *p, int ms)
{
	struct pollfd f = { .fd = p->ch->fd, .events = POLLIN };
	long end = now_ms() + ms;
	struct hdr h;
	int ret;

	for (;;) {
		ret = recv_msg(p, &h, NULL, NULL, 0);
		if (ret > 0)
			return 1;
		if (!ret)
			return fail("message type %u instead of the close",
				    h.type);
		if (poll(&f, 1, 10) == 1)
			break;
		if (now_ms() >= end)
			return fail("connection still open after %d ms", ms);
		if (ret == -ETIMEDOUT && keepalive(p))
			return 1;
	}
	return disconnected(p);
}

/*
 * Send a message the other side must refuse, and expect the close.  It may
 * close before our SEND is acknowledged: it disconnects from the receive
 * completion, and its queue pair, in the error state, sends no ACK.
 * Soft-RoCE retries the SEND until the DREQ arrives, which send_raw()
 * reports as -ECONNRESET; the close is there to read.
 */
int send_bad(struct peer *p, struct hdr *h, const void *body, uint32_t len,
	     int keep_credits)
{
	if (send_raw(p, h, body, len, keep_credits) > 0)
		return 1;
	return expect_closed(p, wait_ms);
}

/*
 * Idle for @ms, while our keepalives go out (keepalive()): nothing may
 * come but the other side's keepalives and credit updates, each less than
 * @bound ms after the one before (the first after the start; the silence
 * at the end counts too).  Prints what came and the longest wait.  Return
 * 0, or 1 with a line on stderr.
 */
int idle_gaps(struct peer *p, int ms, long bound)
{
	unsigned int ka0 = p->keepalives;
	long start = now_ms(), t;
	struct hdr h;
	int ret;

	p->nr_rx = 0;
	p->max_gap = 0;
	p->last_rx = start;
	do {
		ret = recv_msg(p, &h, NULL, NULL, 10);
		if (ret > 0)
			return 1;
		if (!ret)
			return fail("message type %u while idle", h.type);
		if (ret == -ECONNRESET || cm_pending(p))
			return fail("%s", "the connection went down while idle");
		t = now_ms();
		if (t - p->last_rx > p->max_gap)
			p->max_gap = t - p->last_rx;
		if (keepalive(p))
			return 1;
	} while (t - start < ms && p->max_gap < bound);
	printf("idle: %u messages (%u keepalives) in %ld ms, max gap %ld ms, bound %ld ms\n",
	       p->nr_rx, p->keepalives - ka0, t - start, p->max_gap, bound);
	fflush(stdout);
	if (p->max_gap >= bound)
		return fail("nothing received for %ld ms", p->max_gap);
	return 0;
}

/* The reply to call @call_id: @len bytes of pattern @seed, inline or written. */
static int expect_reply(struct peer *p, uint64_t call_id, uint32_t seed,
			uint32_t len, int written)
{
	const char *body;
	uint32_t il, i;
	struct hdr r;
	int ret;

	ret = recv_msg(p, &r, &body, &il, wait_ms);
	if (ret)
		return ret > 0 ? 1 : fail("no reply to call %#llx: %s",
					  (unsigned long long)call_id,
					  strerror(-ret));
	if (r.type != T_REPLY || le64toh(r.call_id) != call_id || r.status ||
	    r.method || le32toh(r.len) != len ||
	    !!(r.flags & F_WRITTEN) != written || (r.flags & ~F_WRITTEN) ||
	    il != (written ? 0 : len))
		return fail("wrong reply header: type %u flags %#x call %#llx len %u inline %u",
			    r.type, r.flags,
			    (unsigned long long)le64toh(r.call_id),
			    le32toh(r.len), il);
	if (written)
		body = p->rdv[1];
	for (i = 0; i < len; i++)
		if ((uint8_t)body[i] != pattern(seed, i))
			return fail("reply byte %u is %#x, want %#x", i,
				    (uint8_t)body[i], pattern(seed, i));
	return 0;
}

static int expect_error(struct peer *p, uint64_t call_id, uint32_t status)
{
	struct hdr r;
	uint32_t il;
	int ret;

	ret = recv_msg(p, &r, NULL, &il, wait_ms);
	if (ret)
		return ret > 0 ? 1 : fail("no answer: %s", strerror(-ret));
	if (r.type != T_ERROR || le64toh(r.call_id) != call_id ||
	    le32toh(r.status) != status || r.len || il || r.flags)
		return fail("want ERROR %#x for call %#llx, got type %u status %#x call %#llx",
			    status, (unsigned long long)call_id, r.type,
			    le32toh(r.status),
			    (unsigned long long)le64toh(r.call_id));
	return 0;
}

/* @len bytes of pattern @seed at @buf. */
static void fill_pattern(char *buf, uint32_t seed, uint32_t len)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		buf[i] = pattern(seed, i);
}

/* An inline echo call on @slot, @len bytes of pattern @seed, checked. */
static int echo_inline(struct peer *p, uint16_t slot, uint64_t seq,
		       uint32_t len)
{
	char body[RECV_SIZE];
	struct hdr h;

	fill_pattern(body, seq, len);
	hdr_req(&h, T_REQUEST, M_ECHO, slot, seq, len);
	if (send_msg(p, &h, body))
		return 1;
	return expect_reply(p, le64toh(h.call_id), seq, len, 0);
}

/* ---------------------------------------------------------------------- */
/* Modes */

static int do_good(struct peer *p)
{
	struct hdr h;

	if (echo_inline(p, 0, 1, 0) || echo_inline(p, 1, 2, 1) ||
	    echo_inline(p, 0, 3, p->inline_max))
		return 1;
	if (le32toh(p->ans.max_msg) < RDV_LEN ||
	    !(le64toh(p->ans.features) & FEAT_RDV))
		return fail("%s", "no room for the rendezvous echo");

	/* Rendezvous both ways: READ of our request, WRITE of the reply. */
	fill_pattern(p->rdv[0], 4, RDV_LEN);
	memset(p->rdv[1], 0, RDV_LEN);
	hdr_req(&h, T_REQUEST, M_ECHO, 2, 4, RDV_LEN);
	h.flags = F_RDV_REQ | F_RDV_REPLY;
	set_rdv(p, &h.req, 0, RDV_LEN);
	set_rdv(p, &h.rep, 1, RDV_LEN);
	if (send_msg(p, &h, NULL) ||
	    expect_reply(p, le64toh(h.call_id), 4, RDV_LEN, 1))
		return 1;

	hdr_req(&h, T_REQUEST, M_NONE, 3, 5, 0);
	if (send_msg(p, &h, NULL) ||
	    expect_error(p, le64toh(h.call_id), WS_NO_METHOD))
		return 1;

	hdr_req(&h, T_CANCEL, 0, 5, 77, 0);	/* no such call: ignored */
	if (send_msg(p, &h, NULL) || echo_inline(p, 5, 6, 100))
		return 1;
	return 0;
}

static int do_cancel(struct peer *p)
{
	struct hdr h, r;
	uint64_t id;
	int ret;

	hdr_req(&h, T_REQUEST, M_SLEEP, 0, 1, 16);
	h.flags = F_RDV_REPLY;
	set_rdv(p, &h.rep, 1, RDV_LEN);
	if (send_msg(p, &h, "slow, cancelled"))
		return 1;
	id = le64toh(h.call_id);
	hdr_req(&h, T_CANCEL, 0, 0, 1, 0);
	if (send_msg(p, &h, NULL) || expect_error(p, id, ECANCELED_WIRE))
		return 1;
	/* The answer freed the slot on both sides. */
	if (echo_inline(p, 0, 2, 64))
		return 1;
	/* The handler's own reply (after 300 ms) is dropped. */
	ret = recv_msg(p, &r, NULL, NULL, wait_ms / 5);
	if (ret != -ETIMEDOUT)
		return ret > 0 ? 1 : fail("type %u after the cancel's answer",
					  r.type);
	return 0;
}

/*
 * A CANCEL of a call whose reply waits for credits: 3 of them, whose
 * receives are never reposted.  The first reply leaves the server 2, which
 * it keeps for control messages, so the next calls' replies wait: one of a
 * call without keys, then one of a call with a reply region.  The answer
 * to the second one's CANCEL is its reply, a control message: it goes out
 * on those credits, ahead of the other reply.  (A client awaiting it with
 * its keys held would otherwise reset the connection after ka_timeout_ms.)
 */
static int do_cancelqueued(struct peer *p)
{
	char body[16];
	struct hdr h, r;
	uint64_t id;
	int ret;

	if (echo_inline(p, 0, 1, sizeof(body)))
		return 1;
	fill_pattern(body, 2, sizeof(body));
	hdr_req(&h, T_REQUEST, M_ECHO, 1, 2, sizeof(body));
	if (send_msg(p, &h, body))
		return 1;
	fill_pattern(body, 3, sizeof(body));
	hdr_req(&h, T_REQUEST, M_ECHO, 2, 3, sizeof(body));
	h.flags = F_RDV_REPLY;
	set_rdv(p, &h.rep, 1, RDV_LEN);
	if (send_msg(p, &h, body))
		return 1;
	id = le64toh(h.call_id);
	ret = recv_msg(p, &r, NULL, NULL, wait_ms / 50);
	if (ret != -ETIMEDOUT)
		return ret > 0 ? 1 : fail("type %u call %#llx before the CANCEL: the replies did not wait",
					  r.type,
					  (unsigned long long)le64toh(r.call_id));
	hdr_req(&h, T_CANCEL, 0, 2, 3, 0);
	if (send_msg(p, &h, NULL))
		return 1;
	return expect_reply(p, id, 3, sizeof(body), 0);
}

/*
 * The answer took our KRPC_WFEAT_KA and announced the server's timeout,
 * @ka; the server then sends at least every @t ms, the timeout we
 * announced, while the connection is idle.
 */
static int do_ka(struct peer *p, uint32_t t, uint32_t ka)
{
	if (!(le64toh(p->ans.features) & FEAT_KA))
		return fail("%s", "KRPC_WFEAT_KA offered, not in the answer");
	if (le32toh(p->ans_ka.ka_timeout_ms) != ka)
		return fail("the answer announces ka_timeout_ms %u, want %u",
			    le32toh(p->ans_ka.ka_timeout_ms), ka);
	return idle_gaps(p, KA_WATCH * t, t);
}

static int do_silent(struct peer *p, int ms)
{
	p->silent = 1;
	if (expect_closed(p, ms))
		return 1;
	if (!p->keepalives)
		return fail("%s", "closed without a keepalive first");
	printf("keepalives %u\n", p->keepalives);
	return 0;
}

static int do_reject(struct peer *p, const char *mode)
{
	struct reject_pd rej;
	struct conn_data d;
	struct conn_pd *c = &d.pd;
	uint16_t reason = 3;
	uint32_t value = 0;
	int status;

	req_init(&d);
	if (!strcmp(mode, "magic")) {
		c->magic = htobe32(0x12345678);
		reason = 1;
	} else if (!strcmp(mode, "version")) {
		c->version = htole16(99);
		reason = 2;
		value = VERSION;
	} else if (!strcmp(mode, "depth0")) {
		c->depth = 0;
		value = DEPTH_MAX;
	} else if (!strcmp(mode, "recvsize")) {
		c->recv_size = htole32(HDR_SIZE);
		value = SEG_SIZE;
	} else if (!strcmp(mode, "maxmsg")) {
		c->max_msg = htole32(MAX_MSG_MAX * 2);
		value = MAX_MSG_MAX;
	} else if (!strcmp(mode, "credits0")) {
		c->credits = 0;
		value = CREDITS_MIN;
	} else if (!strcmp(mode, "credits2")) {
		c->credits = htole16(2);
		value = CREDITS_MIN;
	} else if (!strcmp(mode, "kalow")) {
		d.ka.ka_timeout_ms = htole32(100);
		value = KA_TIMEOUT_MIN;
	} else if (!strcmp(mode, "kahigh")) {
		d.ka.ka_timeout_ms = htole32(700000);
		value = KA_TIMEOUT_MAX;
	} else if (!strcmp(mode, "kareserved")) {
		d.ka.ka_timeout_ms = htole32(KA_TIMEOUT_MIN);
		d.ka.reserved = htole32(1);
	} else {
		c->reserved0 = htole16(1);
	}
	if (!strncmp(mode, "ka", 2))
		c->features |= htole64(FEAT_KA);
	/* credits0 posts no receive: the connect must not get that far. */
	if (peer_connect_raw(p, &d))
		return 1;
	if (cm_wait(p, RDMA_CM_EVENT_REJECTED, wait_ms, &rej, sizeof(rej),
		    &status))
		return 1;
	if (be32toh(rej.magic) != MAGIC || le16toh(rej.version) != VERSION ||
	    le16toh(rej.reason) != reason || le32toh(rej.value) != value ||
	    rej.reserved)
		return fail("reject reason %u value %u (status %d), want %u %u",
			    le16toh(rej.reason), le32toh(rej.value), status,
			    reason, value);
	return 0;
}

/* One message that fails a validation check; the server must close. */
static int do_bad(struct peer *p, const char *mode)
{
	char body[RECV_SIZE] = "0123456789abcdef";
	uint32_t max = le32toh(p->ans.max_msg);
	uint32_t total = HDR_SIZE + 16;
	struct hdr h;

	hdr_req(&h, T_REQUEST, M_ECHO, 0, 1, 16);
	if (!strcmp(mode, "short")) {
		total = 32;
	} else if (!strcmp(mode, "badtype")) {
		h.type = 99;
	} else if (!strcmp(mode, "wrongside")) {
		h.type = T_REPLY;
		h.method = 0;
	} else if (!strcmp(mode, "badflags")) {
		h.type = T_ONEWAY;
		h.flags = F_RDV_REPLY;
		set_rdv(p, &h.rep, 1, RDV_LEN);
	} else if (!strcmp(mode, "rdvnofeat")) {
		if (le64toh(p->ans.features) & FEAT_RDV)
			return fail("%s", "rendezvous granted, not asked for");
		h.flags = F_RDV_REPLY;
		set_rdv(p, &h.rep, 1, RDV_LEN);
	} else if (!strcmp(mode, "reserved")) {
		h.reserved = htole64(1);
	} else if (!strcmp(mode, "strayregion")) {
		set_rdv(p, &h.rep, 1, RDV_LEN);
	} else if (!strcmp(mode, "oversize")) {
		h.flags = F_RDV_REQ;
		h.len = htole32(max + 1);
		set_rdv(p, &h.req, 0, RDV_LEN);
		total = HDR_SIZE;
	} else if (!strcmp(mode, "lenmismatch")) {
		total = HDR_SIZE + 8;
	} else if (!strcmp(mode, "credits")) {
		/*
		 * The server holds our receives less what it sent (what we
		 * owe): one more than the rest is one beyond our receives.
		 */
		h.credits = htole16(p->owed + 1);
		return send_bad(p, &h, body, total, 1);
	} else if (!strcmp(mode, "slot")) {
		h.call_id = htole64(1ULL << 16 | le16toh(p->ans.depth));
	} else if (!strcmp(mode, "busyslot")) {
		h.method = htole32(M_SLEEP);
		if (send_msg(p, &h, body))
			return 1;
		h.call_id = htole64(2ULL << 16);
	} else if (!strcmp(mode, "rdvinline")) {
		h.flags = F_RDV_REQ;
		set_rdv(p, &h.req, 0, 16);
		total = HDR_SIZE;
	} else if (!strcmp(mode, "rdvzero")) {
		h.flags = F_RDV_REPLY;
		set_rdv(p, &h.rep, 1, 0);
	} else if (!strcmp(mode, "rdvwrap")) {
		h.flags = F_RDV_REPLY;
		set_rdv(p, &h.rep, 1, RDV_LEN);
		h.rep.addr = htole64(~0ULL - 100);
	} else if (!strcmp(mode, "rdvlen")) {
		h.flags = F_RDV_REQ;
		h.len = htole32(RDV_LEN);
		set_rdv(p, &h.req, 0, RDV_LEN - 1);
		total = HDR_SIZE;
	} else if (!strcmp(mode, "ctrlfields")) {
		hdr_req(&h, T_CANCEL, 7, 0, 1, 0);
		total = HDR_SIZE;
	} else if (!strcmp(mode, "kacallid")) {
		hdr_req(&h, T_KEEPALIVE, 0, 0, 1, 0);
		total = HDR_SIZE;
	} else {
		fprintf(stderr, "rdma_peer: unknown mode %s\n", mode);
		exit(2);
	}
	return send_bad(p, &h, body, total, 0);
}

/*
 * Reuse slot 0 before the answer to its CANCEL came: depth 1, 3 credits
 * (krpc's minimum) whose receives are never reposted, so once the server
 * has spent them its answers stay queued.  An honest client cannot get a
 * second answer queued for one slot; the CANCEL that would need a
 * (depth + 1)th is refused.
 *
 * After an answer, wait for its request to go (M_SLEEP holds it 300 ms,
 * scaled as wait_ms is): below its request bound (2 at depth 1) the server
 * refills every receive and returns it with the next answer, so a round
 * answered costs us no credit.  At the bound it would withhold the
 * REQUEST's receive, and an answer sent on its last credit (the CANCEL's
 * receive, reposted, gives it one to return) would leave us short.
 */
static int do_cancelreuse(struct peer *p)
{
	struct hdr h, r;
	uint64_t seq;
	int ret;

	/* An answer per credit, one queued, then the one refused. */
	for (seq = 1; seq <= CREDITS_MIN + 2; seq++) {
		hdr_req(&h, T_REQUEST, M_SLEEP, 0, seq, 16);
		h.flags = F_RDV_REPLY;
		set_rdv(p, &h.rep, 1, RDV_LEN);
		ret = send_msg(p, &h, "reused too early");
		if (ret)
			break;
		hdr_req(&h, T_CANCEL, 0, 0, seq, 0);
		ret = send_msg(p, &h, NULL);
		if (ret)
			break;
		/*
		 * The first answers come on the server's credits (unless a
		 * keepalive or CREDIT message took one: then an answer stays
		 * queued a round earlier and the next round's CANCEL is the
		 * one refused); the others stay queued.
		 */
		ret = recv_msg(p, &r, NULL, NULL,
			       seq <= CREDITS_MIN ? wait_ms / 5 : 100);
		if (ret == -ECONNRESET)
			break;
		if (ret > 0)
			return 1;
		if (!ret && (r.type != T_ERROR ||
			     le32toh(r.status) != ECANCELED_WIRE))
			return fail("type %u status %u", r.type,
				    le32toh(r.status));
		if (!ret)
			usleep(wait_ms / 5 * 1000);
	}
	if (ret > 0)
		return 1;
	return expect_closed(p, wait_ms);
}

/* A rendezvous whose request or reply key was never granted. */
static int do_badkey(struct peer *p, int which)
{
	struct hdr h;

	memset(p->rdv[0], 'k', RDV_LEN);
	hdr_req(&h, T_REQUEST, M_ECHO, 0, 1, RDV_LEN);
	h.flags = F_RDV_REQ | F_RDV_REPLY;
	set_rdv(p, &h.req, 0, RDV_LEN);
	set_rdv(p, &h.rep, 1, RDV_LEN);
	if (which)
		h.rep.rkey = htole32(p->rdv_mr[1]->rkey ^ 0x5a5a00);
	else
		h.req.rkey = htole32(p->rdv_mr[0]->rkey ^ 0x5a5a00);
	/*
	 * The server's READ of a bad key moves our queue pair to the error
	 * state too (a responder's access error), which may flush the SEND
	 * before its acknowledgement is seen.
	 */
	if (send_msg(p, &h, NULL) > 0)
		return 1;
	return expect_closed(p, wait_ms);
}

/*
 * Connect at @depth with krpc's fewest credits, CREDITS_MIN, whose
 * receives are never reposted: once the server has spent them, what it
 * sends next waits.
 */
static int connect_unreposted(struct peer *p, struct conn_data *d,
			      uint16_t depth)
{
	int ret;

	d->pd.depth = htole16(depth);
	d->pd.credits = htole16(CREDITS_MIN);
	ret = peer_connect(p, d);
	p->repost = 0;
	return ret;
}

static const char *const reject_modes[] = {
	"magic", "version", "depth0", "recvsize", "maxmsg", "credits0",
	"credits2", "reserved0", "kalow", "kahigh", "kareserved",
};

int main(int argc, char **argv)
{
	struct peer p = { 0 };
	uint32_t t = 0, ka = 0;
	struct conn_data req;
	const char *mode;
	unsigned int i;
	int ret;

	if (argc > 4 && !strcmp(argv[1], "serve")) {
		if (argc > 5 && atoi(argv[5]) > 0)
			wait_ms = atoi(argv[5]);
		if (argc > 6)
			ka = strtoul(argv[6], NULL, 0);
		if (argc > 7)
			t = strtoul(argv[7], NULL, 0);
		ret = serve(argv[2], argv[3], argv[4], ka, t);
		if (!ret)
			printf("rdma_peer serve %s: as expected\n", argv[2]);
		else if (!failed)
			fail("serve %s failed, reason not given", argv[2]);
		return ret;
	}
	if (argc < 4 || (!strcmp(argv[1], "ka") && argc < 7)) {
		fprintf(stderr, "usage: rdma_peer MODE ADDR PORT [MS]\n"
			"       rdma_peer ka ADDR PORT MS T KA\n"
			"       rdma_peer serve MODE ADDR PORT [MS [KA [T]]]\n");
		return 2;
	}
	mode = argv[1];
	if (argc > 4 && atoi(argv[4]) > 0)
		wait_ms = atoi(argv[4]);
	if (peer_setup(&p, argv[2], argv[3])) {
		peer_close(&p);
		return 1;
	}
	for (i = 0; i < ARRAY_SIZE(reject_modes); i++)
		if (!strcmp(mode, reject_modes[i]))
			break;
	req_init(&req);
	if (!strcmp(mode, "rdvnofeat"))
		req.pd.features = htole64(FEAT_CANCEL_ACK | FEAT_FUTURE);
	if (!strcmp(mode, "ka")) {
		t = strtoul(argv[5], NULL, 0);
		ka = strtoul(argv[6], NULL, 0);
		req.pd.features |= htole64(FEAT_KA);
		req.ka.ka_timeout_ms = htole32(t);
	}
	if (i < ARRAY_SIZE(reject_modes)) {
		ret = do_reject(&p, mode);
	} else if (!strcmp(mode, "cancelreuse")) {
		ret = connect_unreposted(&p, &req, 1);
		if (!ret)
			ret = do_cancelreuse(&p);
	} else if (!strcmp(mode, "cancelqueued")) {
		ret = connect_unreposted(&p, &req, 3);
		if (!ret)
			ret = do_cancelqueued(&p);
	} else if (peer_connect(&p, &req)) {
		ret = 1;
	} else if (!strcmp(mode, "good")) {
		ret = do_good(&p);
	} else if (!strcmp(mode, "cancel")) {
		ret = do_cancel(&p);
	} else if (!strcmp(mode, "silent")) {
		ret = do_silent(&p, wait_ms);
	} else if (!strcmp(mode, "ka")) {
		ret = do_ka(&p, t, ka);
	} else if (!strcmp(mode, "badkey_req")) {
		ret = do_badkey(&p, 0);
	} else if (!strcmp(mode, "badkey_rep")) {
		ret = do_badkey(&p, 1);
	} else {
		ret = do_bad(&p, mode);
	}
	peer_close(&p);
	if (ret < 0)
		ret = fail("the connection went down (%s)", strerror(-ret));
	if (!ret)
		printf("rdma_peer %s: as expected\n", mode);
	else if (!failed)
		fail("%s failed, reason not given", mode);
	return ret;
}
