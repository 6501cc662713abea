// SPDX-License-Identifier: GPL-2.0
/*
 * rdma_peer's server modes: a raw verbs krpc server that a krpc kernel
 * client (krpc_test) connects to, for rpc_rdma_peer.sh.
 *
 *   rdma_peer serve MODE ADDR PORT [MS [KA [T]]]
 *
 * listens on ADDR:PORT, prints "listening", takes one connection (its
 * connect request checked against Documentation/protocol.rst: with KA,
 * it must offer KRPC_WFEAT_KA and announce a ka_timeout_ms of KA) and:
 *
 *   good		serves echo calls, inline and by rendezvous (READ of the
 *			client's request region, WRITE to its reply region,
 *			REPLY with WRITTEN), until the client disconnects;
 *			prints "served N"
 *   ka			answers with KRPC_WFEAT_KA and a ka_timeout_ms of T;
 *			idle for KA_WATCH times T, our keepalives every third
 *			of the client's timeout, the client must send
 *			something at least every T ms meanwhile (the gaps
 *			measured and printed, idle_gaps()); then serves as
 *			good does
 *   rep_magic, rep_depth, rep_feat, rep_ka
 *			answers the handshake with a wrong magic, with more
 *			depth than asked, with a feature not offered, or with
 *			KRPC_WFEAT_KA and a ka_timeout_ms of 100, below
 *			krpc's range: the client must close
 *   unknown_call, reply_method, reply_status, error_payload, error_status,
 *   written_noregion, written_big, inline_big, to_client, credits
 *			answers the first request wrongly (rpc_rdma_peer.sh
 *			lists the reason the client must log): the client must
 *			close the connection
 *
 * Exit status 0 when the client behaved exactly so, 1 otherwise.
 */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdma_peer.h"

#define EMSGSIZE_WIRE	90		/* generic errno EMSGSIZE */

/*
 * The kernel client's connect request (@len bytes of private data),
 * checked as krpc's server would; with @ka, it must offer KRPC_WFEAT_KA
 * and announce that ka_timeout_ms.
 */
static int check_req(const struct conn_data *req, size_t len, uint32_t ka)
{
	const struct conn_pd *c = &req->pd;
	uint32_t rs = le32toh(c->recv_size), im = le32toh(c->inline_max);
	uint32_t mm = le32toh(c->max_msg), tmo;
	uint64_t feat = le64toh(c->features);
	uint16_t depth = le16toh(c->depth);

	if (len < sizeof(*c) ||
	    be32toh(c->magic) != MAGIC || le16toh(c->version) != VERSION ||
	    !depth || depth > DEPTH_MAX || !c->credits || c->reserved0 ||
	    rs < 2 * HDR_SIZE || rs > SEG_SIZE || !im || im > rs - HDR_SIZE ||
	    mm < SEG_SIZE || mm > MAX_MSG_MAX ||
	    (feat & ~(uint64_t)(FEAT_RDV | FEAT_REMOTE_INV | FEAT_CANCEL_ACK |
				FEAT_KA)))
		return fail("bad connect request: %zu bytes, depth %u credits %u recv_size %u inline_max %u max_msg %u features %#llx",
			    len, depth, le16toh(c->credits), rs, im, mm,
			    (unsigned long long)feat);
	if (!(feat & FEAT_KA) && ka)
		return fail("%s", "the connect request offers no KRPC_WFEAT_KA");
	if (!(feat & FEAT_KA))
		return 0;
	tmo = le32toh(req->ka.ka_timeout_ms);
	if (len < sizeof(*req) || req->ka.reserved || tmo < KA_TIMEOUT_MIN ||
	    tmo > KA_TIMEOUT_MAX || (ka && tmo != ka))
		return fail("bad keepalive extension: %zu bytes, ka_timeout_ms %u (want %u), reserved %u",
			    len, tmo, ka, le32toh(req->ka.reserved));
	return 0;
}

static uint32_t min32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/*
 * Listen, take one connect request (checked against @ka, check_req()),
 * accept it with our answer; mode ka announces @t.
 */
static int accept_one(struct peer *p, const char *mode, const char *addr,
		      const char *port, uint32_t ka, uint32_t t)
{
	struct rdma_addrinfo hints = {
		.ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP,
	}, *ai;
	struct conn_data rep = { 0 }, req;
	struct rdma_conn_param cp = {
		.private_data = &rep, .private_data_len = sizeof(rep.pd),
		.responder_resources = 1, .initiator_depth = 1,
		.retry_count = 7, .rnr_retry_count = 0,
	};
	struct pollfd f;
	struct rdma_cm_event *ev;
	struct conn_pd *a = &p->ans;
	uint32_t ans_ka = 0;	/* ours; 0: no FEAT_KA in the answer */
	size_t len = 0;
	unsigned int i;
	int ret;

	p->ch = rdma_create_event_channel();
	if (!p->ch || rdma_create_id(p->ch, &p->listen_id, NULL, RDMA_PS_TCP))
		return fail("rdma_create_id: %s", strerror(errno));
	if (rdma_getaddrinfo(addr, port, &hints, &ai))
		return fail("rdma_getaddrinfo: %s", strerror(errno));
	ret = rdma_bind_addr(p->listen_id, ai->ai_src_addr);
	rdma_freeaddrinfo(ai);
	if (ret || rdma_listen(p->listen_id, 1))
		return fail("listen: %s", strerror(errno));
	printf("listening\n");
	fflush(stdout);

	f.fd = p->ch->fd;
	f.events = POLLIN;
	if (poll(&f, 1, 10 * wait_ms) != 1 || rdma_get_cm_event(p->ch, &ev))
		return fail("%s", "no connect request");
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		rdma_ack_cm_event(ev);
		return fail("%s", "not a connect request");
	}
	p->id = ev->id;
	memset(&req, 0, sizeof(req));
	if (ev->param.conn.private_data) {
		len = ev->param.conn.private_data_len;
		memcpy(&req, ev->param.conn.private_data,
		       len < sizeof(req) ? len : sizeof(req));
	}
	rdma_ack_cm_event(ev);
	if (check_req(&req, len, ka) || peer_verbs(p))
		return 1;

	/* Our answer: the minimum of both sides', as krpc's server. */
	memset(a, 0, sizeof(*a));
	a->magic = htobe32(MAGIC);
	a->version = htole16(VERSION);
	a->depth = htole16(min32(le16toh(req.pd.depth), NR_RECV - 4));
	a->features = htole64(le64toh(req.pd.features) &
			      (FEAT_RDV | FEAT_CANCEL_ACK));
	a->credits = htole16(NR_RECV);
	a->recv_size = htole32(RECV_SIZE);
	/* Larger than our regions: a written reply can exceed the client's. */
	a->max_msg = htole32(min32(le32toh(req.pd.max_msg), 1 << 20));
	a->inline_max = htole32(min32(min32(le32toh(req.pd.inline_max),
					    le32toh(req.pd.recv_size) -
					    HDR_SIZE),
				      RECV_SIZE - HDR_SIZE));
	if (!strcmp(mode, "rep_magic"))
		a->magic = htobe32(0x12345678);
	else if (!strcmp(mode, "rep_depth"))
		a->depth = htole16(le16toh(req.pd.depth) + 1);
	else if (!strcmp(mode, "rep_feat"))
		a->features |= htole64(FEAT_FUTURE);
	else if (!strcmp(mode, "inline_big"))
		a->inline_max = htole32(1024);
	else if (!strcmp(mode, "ka"))
		ans_ka = t;
	else if (!strcmp(mode, "rep_ka"))
		ans_ka = 100;
	/* The other modes answer as a peer that knows no extension. */
	if (ans_ka) {
		if (!(le64toh(req.pd.features) & FEAT_KA))
			return fail("%s", "no KRPC_WFEAT_KA to answer");
		a->features |= htole64(FEAT_KA);
		rep.ka.ka_timeout_ms = htole32(ans_ka);
		cp.private_data_len = sizeof(rep);
		p->ka_ms = le32toh(req.ka.ka_timeout_ms) / 3;
	}
	rep.pd = *a;
	p->inline_max = le32toh(a->inline_max);
	p->send_credits = le16toh(req.pd.credits);
	p->nr_recv = NR_RECV;
	p->repost = 1;
	for (i = 0; i < NR_RECV; i++)
		if (post_recv(p, i))
			return fail("ibv_post_recv: %s", strerror(errno));
	if (rdma_accept(p->id, &cp))
		return fail("rdma_accept: %s", strerror(errno));
	p->connected = 1;
	/* A client that refuses our answer may disconnect before its RTU. */
	if (!strncmp(mode, "rep_", 4))
		return 0;
	if (cm_wait(p, RDMA_CM_EVENT_ESTABLISHED, wait_ms, NULL, 0, NULL))
		return 1;
	p->last_tx = now_ms();
	return 0;
}

/* One RDMA READ or WRITE between rdv[0] and the client's region. */
static int post_rdma(struct peer *p, enum ibv_wr_opcode op,
		     const struct rdv *r, uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)p->rdv[0], .length = len,
		.lkey = p->rdv_mr[0]->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 2, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad;

	wr.wr.rdma.remote_addr = le64toh(r->addr);
	wr.wr.rdma.rkey = le32toh(r->rkey);
	if (ibv_post_send(p->id->qp, &wr, &bad))
		return fail("ibv_post_send: %s", strerror(errno));
	return wait_wr(p, op == IBV_WR_RDMA_READ ? "READ" : "WRITE");
}

static void hdr_answer(struct hdr *r, uint8_t type, const struct hdr *h,
		       uint32_t len)
{
	memset(r, 0, sizeof(*r));
	r->type = type;
	r->call_id = h->call_id;
	r->len = htole32(len);
}

static int answer_error(struct peer *p, const struct hdr *h, uint32_t status)
{
	struct hdr r;

	hdr_answer(&r, T_ERROR, h, 0);
	r.status = htole32(status);
	return send_msg(p, &r, NULL);
}

/*
 * A correct answer to an echo request: inline, or written to its region.
 * Return 0; -ECONNRESET if the connection is going down; 1 on any other
 * failure, with a line on stderr.
 */
static int answer_echo(struct peer *p, const struct hdr *h, const char *body,
		       uint32_t inline_len)
{
	uint32_t len = le32toh(h->len);
	struct hdr r;
	int ret;

	/* The kernel client's request, checked as krpc's server would. */
	if ((h->flags & ~(F_RDV_REQ | F_RDV_REPLY)) || h->status ||
	    h->reserved || ((h->flags & F_RDV_REQ) ?
			    inline_len || len <= p->inline_max :
			    inline_len != len || len > p->inline_max))
		return fail("bad request: flags %#x len %u inline %u",
			    h->flags, len, inline_len);

	if (le32toh(h->method) != M_ECHO)
		return answer_error(p, h, WS_NO_METHOD);
	if (len > RDV_LEN)
		return fail("a request of %u bytes, more than this peer holds",
			    len);
	if (h->flags & F_RDV_REQ) {
		if (le32toh(h->req.len) != len)
			return fail("request region of %u bytes for %u",
				    le32toh(h->req.len), len);
		ret = post_rdma(p, IBV_WR_RDMA_READ, &h->req, len);
		if (ret)
			return ret;
	} else {
		memcpy(p->rdv[0], body, len);
	}
	if (len <= p->inline_max) {
		hdr_answer(&r, T_REPLY, h, len);
		return send_msg(p, &r, p->rdv[0]);
	}
	if (!(h->flags & F_RDV_REPLY) || le32toh(h->rep.len) < len)
		return answer_error(p, h, EMSGSIZE_WIRE);
	ret = post_rdma(p, IBV_WR_RDMA_WRITE, &h->rep, len);
	if (ret)
		return ret;
	hdr_answer(&r, T_REPLY, h, len);
	r.flags = F_WRITTEN;
	return send_msg(p, &r, NULL);
}

/* The first request answered as @mode says; the client must close. */
static int answer_bad(struct peer *p, const char *mode, const struct hdr *h)
{
	char body[RECV_SIZE] = { 0 };
	uint32_t total = HDR_SIZE;
	struct hdr r;

	hdr_answer(&r, T_REPLY, h, 0);
	if (!strcmp(mode, "unknown_call")) {
		r.call_id = htole64(le64toh(h->call_id) + (1ULL << 16));
	} else if (!strcmp(mode, "reply_method")) {
		r.method = htole32(M_ECHO);
	} else if (!strcmp(mode, "reply_status")) {
		r.status = htole32(5);
	} else if (!strcmp(mode, "error_payload")) {
		r.type = T_ERROR;
		r.status = htole32(5);
		r.len = htole32(4);
		total += 4;
	} else if (!strcmp(mode, "error_status")) {
		r.type = T_ERROR;
		r.status = htole32(0x20000);
	} else if (!strcmp(mode, "written_noregion")) {
		if (h->flags & F_RDV_REPLY)
			return fail("%s", "the request offered a region");
		r.flags = F_WRITTEN;
		r.len = htole32(16);
	} else if (!strcmp(mode, "written_big")) {
		if (!(h->flags & F_RDV_REPLY))
			return fail("%s", "the request offered no region");
		r.flags = F_WRITTEN;
		r.len = htole32(le32toh(h->rep.len) + 1);
	} else if (!strcmp(mode, "inline_big")) {
		r.len = htole32(p->inline_max + 1);
		total += p->inline_max + 1;
	} else if (!strcmp(mode, "to_client")) {
		hdr_req(&r, T_REQUEST, M_ECHO, 0, 1, 0);
	} else if (!strcmp(mode, "credits")) {
		/* One beyond: the client holds our receives less what we owe. */
		r.credits = htole16(p->owed + 1);
		return send_bad(p, &r, body, total, 1);
	} else {
		return fail("unknown mode %s", mode);
	}
	return send_bad(p, &r, body, total, 0);
}

/* Until the client disconnects (0) or something goes wrong (1). */
static int serve_loop(struct peer *p, const char *mode, unsigned long *served)
{
	struct pollfd f = { .fd = p->ch->fd, .events = POLLIN };
	const char *body;
	uint32_t il;
	struct hdr h;
	int ret;

	for (;;) {
		ret = recv_msg(p, &h, &body, &il, 20);
		if (ret > 0)
			return 1;
		if (ret < 0) {
			if (poll(&f, 1, ret == -ECONNRESET ? wait_ms : 0) == 1)
				break;
			if (ret == -ECONNRESET)
				return fail("%s", "flushed, no disconnect");
			if (keepalive(p))
				return 1;
			continue;
		}
		if (h.type == T_CANCEL)
			continue;	/* every call is answered at once */
		if (h.type == T_ONEWAY) {
			++*served;
			continue;
		}
		if (h.type != T_REQUEST)
			return fail("type %u from the client", h.type);
		if (strcmp(mode, "good") && strcmp(mode, "ka"))
			return answer_bad(p, mode, &h);
		ret = answer_echo(p, &h, body, il);
		if (ret)
			return ret;	/* < 0: serve() says it went down */
		++*served;
	}
	return disconnected(p);
}

/* The client refused our answer: DISCONNECTED, after ESTABLISHED or not. */
static int refused(struct peer *p)
{
	struct pollfd f = { .fd = p->ch->fd, .events = POLLIN };
	enum rdma_cm_event_type got;
	struct rdma_cm_event *ev;
	long end = now_ms() + wait_ms;

	do {
		if (poll(&f, 1, wait_ms) != 1 || rdma_get_cm_event(p->ch, &ev))
			break;
		got = ev->event;
		rdma_ack_cm_event(ev);
		if (got == RDMA_CM_EVENT_DISCONNECTED) {
			p->connected = 0;
			return 0;
		}
		if (got != RDMA_CM_EVENT_ESTABLISHED)
			return fail("%s instead of DISCONNECTED",
				    rdma_event_str(got));
	} while (now_ms() < end);
	return fail("the client did not close within %d ms", wait_ms);
}

int serve(const char *mode, const char *addr, const char *port, uint32_t ka,
	  uint32_t t)
{
	unsigned long served = 0;
	struct peer p = { 0 };
	int ret;

	if (!strcmp(mode, "ka") && !t)
		return fail("%s", "serve ka: no T");
	ret = accept_one(&p, mode, addr, port, ka, t);
	if (!ret && !strcmp(mode, "ka"))
		ret = idle_gaps(&p, KA_WATCH * t, t);
	if (!ret) {
		if (!strncmp(mode, "rep_", 4))
			ret = refused(&p);
		else
			ret = serve_loop(&p, mode, &served);
	}
	if (!strcmp(mode, "good"))
		printf("served %lu\n", served);
	peer_close(&p);
	if (ret < 0)
		ret = fail("the connection went down (%s)", strerror(-ret));
	return ret;
}
