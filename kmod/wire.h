/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krpc wire format: the only definition of what crosses the network.
 * Documentation/protocol.rst describes the rules; this header the layout.
 *
 * All multi-byte fields are little endian except the magic, which is big
 * endian so that it reads "KRPC" in a packet dump.  Structures have no
 * implicit padding; their sizes are pinned by static_assert below.
 * Reserved fields are sent as zero and checked to be zero on receipt.
 */
#ifndef KRPC_WIRE_H
#define KRPC_WIRE_H

#include <linux/types.h>
#include <linux/build_bug.h>
#include <linux/bits.h>

#define KRPC_WIRE_MAGIC		0x4b525043	/* "KRPC" */
#define KRPC_WIRE_VERSION	1

/* Message types (krpc_wire_hdr.type).  0 is never valid. */
enum krpc_msg_type {
	KRPC_MSG_REQUEST	= 1,	/* client -> server, expects a reply */
	KRPC_MSG_REPLY		= 2,	/* server -> client, status 0 */
	KRPC_MSG_ERROR		= 3,	/* server -> client, status != 0, no payload */
	KRPC_MSG_ONEWAY		= 4,	/* client -> server, no reply */
	KRPC_MSG_CREDIT		= 5,	/* either way: only returns credits */
	KRPC_MSG_KEEPALIVE	= 6,	/* either way: sent when idle */
	KRPC_MSG_CANCEL		= 7,	/* client -> server: call_id was abandoned */
	KRPC_MSG_NR,
};

/*
 * Header flags (krpc_wire_hdr.flags).  Which flags a type may carry is
 * checked against the dispatch table in rdma_rx.c.
 */
#define KRPC_WF_RDV_REQ		BIT(0)	/* REQUEST: read the payload at hdr.req */
#define KRPC_WF_RDV_REPLY	BIT(1)	/* REQUEST: a reply may be written to hdr.rep */
#define KRPC_WF_WRITTEN		BIT(2)	/* REPLY: payload was written to the request's rep */
#define KRPC_WF_ALL		(KRPC_WF_RDV_REQ | KRPC_WF_RDV_REPLY | \
				 KRPC_WF_WRITTEN)

/*
 * Status values (krpc_wire_hdr.status of KRPC_MSG_ERROR).  1..4095 are
 * Linux generic errno numbers (include/uapi/asm-generic/errno*.h) as the
 * handler returned them, negated; larger values are krpc's own.
 */
#define KRPC_WS_ERRNO_MAX	4095
#define KRPC_WS_NO_METHOD	0x10000		/* no handler for the method */

/*
 * Call ids: the low 16 bits are the client's slot, below the negotiated
 * depth; a slot is not reused until the reply for it arrived.  The upper
 * 48 bits are a sequence number that makes late replies recognisable.
 */
#define KRPC_CALL_SLOT_BITS	16
#define KRPC_CALL_SLOT_MASK	((1U << KRPC_CALL_SLOT_BITS) - 1)

/**
 * struct krpc_wire_rdv - a remotely accessible region, valid for one call
 * @addr:	address to use in the RDMA READ/WRITE
 * @rkey:	remote key; invalidated by the owner when the call ends
 * @len:	bytes accessible from @addr
 */
struct krpc_wire_rdv {
	__le64 addr;
	__le32 rkey;
	__le32 len;
};

/**
 * struct krpc_wire_hdr - header at the start of every SEND
 * @type:	enum krpc_msg_type
 * @flags:	KRPC_WF_*
 * @credits:	receives the sender posted since its previous message: the
 *		receiver may send that many more messages
 * @method:	REQUEST, ONEWAY: method id
 * @call_id:	REQUEST, REPLY, ERROR, CANCEL: the call; 0 otherwise
 * @status:	ERROR: KRPC_WS_* or errno; 0 otherwise
 * @len:	payload bytes: inline after the header, at @req (RDV_REQ) or
 *		written to the request's reply region (WRITTEN)
 * @req:	RDV_REQ: where the request payload is; zero otherwise
 * @rep:	RDV_REPLY: where a large reply may be written; zero otherwise
 * @reserved:	zero
 */
struct krpc_wire_hdr {
	__u8			type;
	__u8			flags;
	__le16			credits;
	__le32			method;
	__le64			call_id;
	__le32			status;
	__le32			len;
	struct krpc_wire_rdv	req;
	struct krpc_wire_rdv	rep;
	__le64			reserved;
};

#define KRPC_HDR_SIZE		64

/*
 * Features (krpc_wire_conn.features): the connection uses the AND.  A server
 * ignores bits it does not know; a client refuses a REP with a bit it did
 * not offer.
 */
#define KRPC_WFEAT_RDV		BIT_ULL(0)	/* rendezvous by READ/WRITE */
#define KRPC_WFEAT_REMOTE_INV	BIT_ULL(1)	/* SEND_WITH_INV of rdv keys */
#define KRPC_WFEAT_CANCEL_ACK	BIT_ULL(2)	/* CANCEL of a call with keys answered at once */
#define KRPC_WFEAT_KA		BIT_ULL(3)	/* struct krpc_wire_conn_ka follows */
#define KRPC_WFEAT_ALL		(KRPC_WFEAT_RDV | KRPC_WFEAT_REMOTE_INV | \
				 KRPC_WFEAT_CANCEL_ACK | KRPC_WFEAT_KA)

/**
 * struct krpc_wire_conn - connection private data (rdma_cm REQ and REP)
 * @magic:	KRPC_WIRE_MAGIC, big endian
 * @version:	KRPC_WIRE_VERSION of the sender
 * @depth:	REQ: outstanding calls the client wants; REP: granted
 * @features:	KRPC_WFEAT_* the sender supports (REQ) or uses (REP)
 * @credits:	receives the sender has posted: the peer's initial credits
 * @reserved0:	zero
 * @recv_size:	bytes of each posted receive: header plus inline payload
 * @max_msg:	largest payload the sender sends or accepts
 * @inline_max:	largest payload the sender sends inline or accepts inline
 *
 * REQ carries the client's values; REP carries the negotiated ones (depth,
 * features, max_msg, inline_max), each the minimum of both sides', and the
 * server's credits and recv_size.  Both sides then use the minimum of their
 * own and the peer's inline_max and recv_size - KRPC_HDR_SIZE, so both
 * agree on which payloads go inline.
 *
 * 32 bytes: fits the 56 bytes of private data rdma_cm allows in an IB or
 * RoCE connect request.  With KRPC_WFEAT_KA in @features a struct
 * krpc_wire_conn_ka follows (40 bytes in all); a receiver reads it only
 * then, so a peer that knows no extension is not affected.
 */
struct krpc_wire_conn {
	__be32	magic;
	__le16	version;
	__le16	depth;
	__le64	features;
	__le16	credits;
	__le16	reserved0;
	__le32	recv_size;
	__le32	max_msg;
	__le32	inline_max;
};

/**
 * struct krpc_wire_conn_ka - private data after struct krpc_wire_conn
 * @ka_timeout_ms:	the sender closes the connection after this long
 *			without receiving anything; the receiver sends a
 *			message at least every half of it
 * @reserved:		zero
 *
 * Sent in a REQ whose features offer KRPC_WFEAT_KA, and in a REP whose
 * features use it.
 */
struct krpc_wire_conn_ka {
	__le32	ka_timeout_ms;
	__le32	reserved;
};

/* Reject reasons (krpc_wire_reject.reason). */
enum krpc_reject_reason {
	KRPC_REJ_MAGIC		= 1,	/* not krpc (or truncated private data) */
	KRPC_REJ_VERSION	= 2,	/* @value: the version the rejecter speaks */
	KRPC_REJ_PARAMS		= 3,	/* depth/sizes out of range; @value: limit */
	KRPC_REJ_FEATURES	= 4,	/* a required feature is missing */
	KRPC_REJ_RESOURCES	= 5,	/* no memory or device resources */
	KRPC_REJ_SHUTDOWN	= 6,	/* server is going away */
	KRPC_REJ_NR,
};

/**
 * struct krpc_wire_reject - private data of rdma_reject()
 * @magic:	KRPC_WIRE_MAGIC
 * @version:	KRPC_WIRE_VERSION of the rejecting side
 * @reason:	enum krpc_reject_reason
 * @value:	reason-specific detail (see enum krpc_reject_reason)
 * @reserved:	zero
 */
struct krpc_wire_reject {
	__be32	magic;
	__le16	version;
	__le16	reason;
	__le32	value;
	__le32	reserved;
};

/*
 * TCP framing.  A TCP connection starts with one struct krpc_wire_hello
 * each way (client first; the server answers with its own, which either
 * accepts with the negotiated values or rejects with @reject).  Then the
 * stream is a sequence of messages, each a struct krpc_wire_hdr followed by
 * exactly hdr.len payload bytes.  On TCP: hdr.credits is 0 (the socket
 * buffers are the flow control; the depth bounds calls in flight), the only
 * header flag is KRPC_WF_RDV_REPLY on a REQUEST, whose rep.len (rep.addr and
 * rep.rkey 0) tells the server the largest reply beyond the inline size the
 * client has room for, and hdr.req is zero.  A receiver checks hdr.len
 * against the negotiated limits before it allocates anything.
 */

/**
 * struct krpc_wire_hello - first bytes of a TCP connection, each way
 * @magic:	KRPC_WIRE_MAGIC, big endian
 * @version:	KRPC_WIRE_VERSION of the sender
 * @depth:	client: outstanding calls wanted; server: granted
 * @max_msg:	largest payload the sender sends or accepts (server: the
 *		negotiated minimum)
 * @inline_max:	largest reply payload the sender accepts without a reply
 *		region (server: the negotiated minimum)
 * @reject:	server: 0 to accept, else enum krpc_reject_reason; client: 0
 * @reserved0:	zero
 * @value:	reject detail (as krpc_wire_reject.value)
 * @ka_timeout_ms: as krpc_wire_conn_ka.ka_timeout_ms; 0: not announced
 * @reserved:	zero
 */
struct krpc_wire_hello {
	__be32	magic;
	__le16	version;
	__le16	depth;
	__le32	max_msg;
	__le32	inline_max;
	__le16	reject;
	__le16	reserved0;
	__le32	value;
	__le32	ka_timeout_ms;
	__le32	reserved;
};

static_assert(sizeof(struct krpc_wire_rdv) == 16);
static_assert(sizeof(struct krpc_wire_hdr) == KRPC_HDR_SIZE);
static_assert(sizeof(struct krpc_wire_conn) == 32);
static_assert(sizeof(struct krpc_wire_conn_ka) == 8);
static_assert(sizeof(struct krpc_wire_reject) == 16);
static_assert(sizeof(struct krpc_wire_hello) == 32);

#endif /* KRPC_WIRE_H */
