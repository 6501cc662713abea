/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krpc's wire format for the raw userspace peers (tcp_peer, rdma_peer),
 * which speak it without krpc's code.  kmod/wire.h is the one definition;
 * these layouts mirror it field for field, pinned by the same sizes, so
 * that a peer checks the module against the documented format rather than
 * against itself.  All fields little endian except the magic.
 */
#ifndef KRPC_PEER_WIRE_H
#define KRPC_PEER_WIRE_H

#include <stdint.h>

#define MAGIC		0x4b525043
#define VERSION		1
#define HDR_SIZE	64

enum {
	T_REQUEST = 1, T_REPLY, T_ERROR, T_ONEWAY, T_CREDIT, T_KEEPALIVE,
	T_CANCEL,
};

#define F_RDV_REQ	0x01
#define F_RDV_REPLY	0x02
#define F_WRITTEN	0x04

/* KRPC_WFEAT_*: struct conn_pd's features */
#define FEAT_RDV	0x1
#define FEAT_REMOTE_INV	0x2
#define FEAT_CANCEL_ACK	0x4
#define FEAT_KA		0x8	/* struct conn_ka follows */
/* No krpc knows it: offered, it must be ignored; answered, refused. */
#define FEAT_FUTURE	0x4000000000000000ULL

/* The range of an announced ka_timeout_ms: krpc's ka_timeout_ms parameter's */
#define KA_TIMEOUT_MIN	200
#define KA_TIMEOUT_MAX	600000

/* struct krpc_wire_hello: first bytes of a TCP connection, each way */
struct hello {
	uint32_t magic;		/* big endian */
	uint16_t version;
	uint16_t depth;
	uint32_t max_msg;
	uint32_t inline_max;
	uint16_t reject;
	uint16_t reserved0;
	uint32_t value;
	uint32_t ka_timeout_ms;	/* 0: not announced */
	uint32_t reserved;
};

/* struct krpc_wire_conn: rdma_cm private data of REQ and REP */
struct conn_pd {
	uint32_t magic;		/* big endian */
	uint16_t version;
	uint16_t depth;
	uint64_t features;
	uint16_t credits;
	uint16_t reserved0;
	uint32_t recv_size;
	uint32_t max_msg;
	uint32_t inline_max;
};

/* struct krpc_wire_conn_ka: after struct conn_pd with FEAT_KA in features */
struct conn_ka {
	uint32_t ka_timeout_ms;
	uint32_t reserved;
};

/* struct krpc_wire_reject: rdma_cm private data of a reject */
struct reject_pd {
	uint32_t magic;		/* big endian */
	uint16_t version;
	uint16_t reason;
	uint32_t value;
	uint32_t reserved;
};

/* struct krpc_wire_rdv */
struct rdv {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

/* struct krpc_wire_hdr: the start of every message */
struct hdr {
	uint8_t type;
	uint8_t flags;
	uint16_t credits;
	uint32_t method;
	uint64_t call_id;
	uint32_t status;
	uint32_t len;
	struct rdv req;
	struct rdv rep;
	uint64_t reserved;
};

_Static_assert(sizeof(struct hello) == 32, "hello");
_Static_assert(sizeof(struct conn_pd) == 32, "conn");
_Static_assert(sizeof(struct conn_ka) == 8, "conn_ka");
_Static_assert(sizeof(struct reject_pd) == 16, "reject");
_Static_assert(sizeof(struct rdv) == 16, "rdv");
_Static_assert(sizeof(struct hdr) == HDR_SIZE, "hdr");

#endif /* KRPC_PEER_WIRE_H */
