/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdma_peer: a raw verbs krpc peer (rdma_peer.c, the client modes and the
 * verbs plumbing; rdma_peer_srv.c, the server modes).
 */
#ifndef KRPC_RDMA_PEER_H
#define KRPC_RDMA_PEER_H

#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "peer_wire.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define DEPTH_MAX	1024		/* krpc's depth parameter limit */
#define SEG_SIZE	65536		/* largest recv_size krpc accepts */
#define MAX_MSG_MAX	(64 << 20)	/* krpc's max_msg parameter limit */
#define CREDITS_MIN	3		/* fewest credits krpc takes */

#define M_ECHO		1
#define M_SLEEP		4
#define M_NONE		999		/* no handler */

#define WS_NO_METHOD	0x10000
#define ECANCELED_WIRE	125		/* generic errno ECANCELED */

#define RECV_SIZE	4096
#define NR_RECV		20		/* depth 16 + 4, as krpc posts */
#define SEND_SIZE	SEG_SIZE
#define RDV_LEN		100000
#define KA_MS		300		/* our default keepalive interval */
#define KA_WATCH	8		/* idle_gaps(): bounds watched */

/* How long the other side may take to answer or close (MS): 5 s by default. */
extern int wait_ms;

/* Private data of a REQ or REP: the extension only with FEAT_KA. */
struct conn_data {
	struct conn_pd pd;
	struct conn_ka ka;
};

struct peer {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	char *mem;		/* NR_RECV receives, then the send buffer */
	struct ibv_mr *mr;
	char *rdv[2];		/* request and reply regions */
	struct ibv_mr *rdv_mr[2];
	unsigned int nr_recv;	/* receives posted at connect */
	int repost;		/* repost each receive once it is consumed */
	/* Client: the server's answer; server: what it answered. */
	struct conn_pd ans;
	struct conn_ka ans_ka;		/* client: with FEAT_KA in ans */
	uint32_t inline_max;
	/* Flow control (protocol.rst): what we may send, what we owe. */
	unsigned int send_credits;
	unsigned int owed;
	unsigned int keepalives;	/* KEEPALIVEs seen */
	long last_tx;			/* now_ms() of our last message */
	int silent;			/* never send a keepalive */
	/*
	 * Our keepalive interval, KA_MS if 0.  With FEAT_KA, a third of the
	 * other side's timeout, no more often: each keepalive of ours draws
	 * a credit update, which must not stand in for the other side's own
	 * keepalives that idle_gaps() measures.
	 */
	unsigned int ka_ms;
	unsigned int nr_rx;		/* messages since idle_gaps() began */
	long last_rx;			/* now_ms() of the last one */
	long max_gap;			/* the longest wait for one */
	int connected;
	struct rdma_cm_id *listen_id;	/* server */
};

/* A line on stderr, "rdma_peer: ..."; return 1. */
int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
long now_ms(void);
uint8_t pattern(uint32_t seed, size_t i);
int cm_wait(struct peer *p, enum rdma_cm_event_type want, int ms,
	    void *pd, size_t len, int *status);
int post_recv(struct peer *p, unsigned int i);
int peer_verbs(struct peer *p);
void peer_close(struct peer *p);
int send_raw(struct peer *p, struct hdr *h, const void *body, uint32_t len,
	     int keep_credits);
int send_msg(struct peer *p, struct hdr *h, const void *body);
void hdr_req(struct hdr *h, uint8_t type, uint32_t method, uint16_t slot,
	     uint64_t seq, uint32_t len);
int recv_msg(struct peer *p, struct hdr *h, const char **body,
	     uint32_t *inline_len, int ms);
int wait_wr(struct peer *p, const char *what);
int cm_pending(struct peer *p);
int disconnected(struct peer *p);
int keepalive(struct peer *p);
int expect_closed(struct peer *p, int ms);
int send_bad(struct peer *p, struct hdr *h, const void *body, uint32_t len,
	     int keep_credits);
int idle_gaps(struct peer *p, int ms, long bound);

int serve(const char *mode, const char *addr, const char *port, uint32_t ka,
	  uint32_t t);

#endif /* KRPC_RDMA_PEER_H */
