// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libkrpc: the io_uring side.  The SQE is written in full by hand:
 * liburing 2.3 has no io_uring_prep_uring_cmd(), and its prep helpers do
 * not clear the second 64 bytes of a 128-byte SQE.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <liburing.h>

#include "libkrpc.h"

/*
 * A sync command's user_data: "krs" in the top 24 bits and a sequence
 * number below, so that the late completion of one given up on (the ring
 * failed while it waited) is never taken for a later one's.
 */
#define SYNC_UD_TAG	0x6b72730000000000ULL
#define SYNC_UD_SEQ	0x000000ffffffffffULL
static uint64_t sync_seq;
/* The command area of a 128-byte SQE. */
#define KRPC_UCMD_AREA	80

_Static_assert(offsetof(struct io_uring_sqe, cmd) == 48, "sqe cmd area");

int krpc_open(struct krpc *k, unsigned int entries, unsigned int flags)
{
	struct io_uring_params p;
	int fd, ret;

	k->fd = -1;
	k->ring = NULL;
	if (flags & ~KRPC_RING_F_ALL)
		return -EINVAL;
	k->ring = calloc(1, sizeof(*k->ring));
	if (!k->ring)
		return -ENOMEM;
	fd = krpc_dev_open(0);
	if (fd < 0) {
		ret = fd;
		goto out_free;
	}
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_SQE128 | IORING_SETUP_CQE32;
	if (flags & KRPC_RING_SQPOLL) {
		p.flags |= IORING_SETUP_SQPOLL;
		p.sq_thread_idle = 1000;
	}
	if (flags & KRPC_RING_DEFER)
		p.flags |= IORING_SETUP_SINGLE_ISSUER |
			   IORING_SETUP_DEFER_TASKRUN;
	ret = io_uring_queue_init_params(entries, k->ring, &p);
	if (ret)
		goto out_close;
	ret = io_uring_register_files(k->ring, &fd, 1);
	if (ret)
		goto out_exit;
	k->fd = fd;
	return 0;

out_exit:
	io_uring_queue_exit(k->ring);
out_close:
	close(fd);
out_free:
	free(k->ring);
	k->ring = NULL;
	return ret;
}

void krpc_close(struct krpc *k)
{
	if (k->ring) {
		io_uring_queue_exit(k->ring);
		free(k->ring);
		k->ring = NULL;
	}
	if (k->fd >= 0)
		close(k->fd);
	k->fd = -1;
}

void krpc_prep_cmd(struct krpc *k, struct io_uring_sqe *sqe, uint32_t cmd_op,
		   const void *cmd, size_t len, uint64_t user_data)
{
	(void)k;
	memset(sqe, 0, 128);
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = 0;			/* fixed file 0: /dev/krpc */
	sqe->flags = IOSQE_FIXED_FILE;
	sqe->cmd_op = cmd_op;
	if (len > KRPC_UCMD_AREA)
		len = KRPC_UCMD_AREA;
	memcpy(sqe->cmd, cmd, len);
	sqe->user_data = user_data;
}

void krpc_prep_call(struct krpc *k, struct io_uring_sqe *sqe, uint32_t conn,
		    uint32_t method, uint32_t buf, uint32_t len,
		    uint32_t reply_max, uint64_t tag, uint64_t user_data)
{
	struct krpc_cmd_call c;

	memset(&c, 0, sizeof(c));
	c.conn = conn;
	c.method = method;
	c.buf = buf;
	c.len = len;
	c.reply_max = reply_max;
	c.tag = tag;
	krpc_prep_cmd(k, sqe, KRPC_CMD_CALL, &c, sizeof(c), user_data);
}

void krpc_prep_fetch(struct krpc *k, struct io_uring_sqe *sqe,
		     uint32_t server, uint32_t slot, uint64_t user_data)
{
	struct krpc_cmd_slot c;

	memset(&c, 0, sizeof(c));
	c.server = server;
	c.slot = slot;
	c.buf = KRPC_BUF_NONE;
	krpc_prep_cmd(k, sqe, KRPC_CMD_FETCH, &c, sizeof(c), user_data);
}

void krpc_prep_reply(struct krpc *k, struct io_uring_sqe *sqe,
		     uint32_t server, uint32_t slot, uint32_t buf,
		     uint32_t offset, uint32_t len, int32_t status, int fetch,
		     uint64_t user_data)
{
	struct krpc_cmd_slot c;

	memset(&c, 0, sizeof(c));
	c.server = server;
	c.slot = slot;
	c.buf = buf;
	c.offset = offset;
	c.len = len;
	c.status = status;
	krpc_prep_cmd(k, sqe, fetch ? KRPC_CMD_REPLY_FETCH : KRPC_CMD_REPLY,
		      &c, sizeof(c), user_data);
}

uint64_t krpc_cqe_res2(const struct io_uring_cqe *cqe)
{
	return cqe->big_cqe[0];
}

/*
 * io_uring_enter() refused our submission (-EEXIST from a thread other
 * than a SINGLE_ISSUER ring's, -EBUSY, -EAGAIN, -EINTR): the SQE was
 * flushed to the kernel's tail but not consumed, and the next submit of
 * the ring would run it, its completion then taken for another sync
 * command's.  Without SQPOLL the kernel reads SQEs only inside
 * io_uring_enter(), so it can still be made a NOP that posts nothing.
 * With SQPOLL the enter only wakes the poller, and fails only when the
 * poller is gone (-EOWNERDEAD): then nothing runs it either.
 */
static void sync_withdraw(struct krpc *k, struct io_uring_sqe *sqe)
{
	if (k->ring->flags & IORING_SETUP_SQPOLL)
		return;
	io_uring_prep_nop(sqe);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	sqe->user_data = 0;
}

int krpc_cmd_sync(struct krpc *k, uint32_t cmd_op, const void *cmd,
		  size_t len, uint64_t *res2)
{
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	uint64_t ud;
	int ret;

	if (res2)
		*res2 = KRPC_BUF_NONE;
	sqe = io_uring_get_sqe(k->ring);
	if (!sqe) {
		io_uring_submit(k->ring);
		sqe = io_uring_get_sqe(k->ring);
		if (!sqe)
			return -EBUSY;
	}
	ud = SYNC_UD_TAG |
	     (__atomic_add_fetch(&sync_seq, 1, __ATOMIC_RELAXED) & SYNC_UD_SEQ);
	krpc_prep_cmd(k, sqe, cmd_op, cmd, len, ud);
	ret = io_uring_submit(k->ring);
	if (ret < 0) {
		sync_withdraw(k, sqe);
		return ret;
	}
	for (;;) {
		ret = io_uring_wait_cqe(k->ring, &cqe);
		/* -EBADR: completions were dropped (CQ overflow), reported once */
		if (ret == -EINTR || ret == -EBADR)
			continue;
		if (ret)
			return ret;
		if (cqe->user_data == ud)
			break;
		io_uring_cqe_seen(k->ring, cqe);
	}
	ret = cqe->res;
	if (res2)
		*res2 = cqe->big_cqe[0];
	io_uring_cqe_seen(k->ring, cqe);
	return ret;
}

int krpc_connect(struct krpc *k, const struct krpc_pool *pool,
		 const struct sockaddr *sa, socklen_t salen, uint32_t depth)
{
	return krpc_connect_xprt(k, pool, sa, salen, depth,
				 KRPC_TRANSPORT_DEFAULT, NULL);
}

int krpc_connect_xprt(struct krpc *k, const struct krpc_pool *pool,
		      const struct sockaddr *sa, socklen_t salen,
		      uint32_t depth, uint32_t transport, uint32_t *used)
{
	return krpc_connect_flags(k, pool, sa, salen, depth, transport, 0,
				  used);
}

int krpc_connect_flags(struct krpc *k, const struct krpc_pool *pool,
		       const struct sockaddr *sa, socklen_t salen,
		       uint32_t depth, uint32_t transport, uint32_t flags,
		       uint32_t *used)
{
	struct krpc_cmd_connect c;
	uint64_t res2 = 0;
	int ret;

	memset(&c, 0, sizeof(c));
	c.pool = pool->handle;
	c.flags = flags;
	c.depth = depth;
	c.transport = transport;
	ret = krpc_addr_set(&c.addr, sa, salen);
	if (ret)
		return ret;
	ret = krpc_cmd_sync(k, KRPC_CMD_CONNECT, &c, sizeof(c), &res2);
	if (ret >= 0 && used)
		*used = (uint32_t)res2;
	return ret;
}

int krpc_call_sync(struct krpc *k, uint32_t conn, uint32_t method,
		   uint32_t buf, uint32_t len, uint32_t reply_max,
		   uint32_t timeout_ms, struct krpc_reply *reply)
{
	struct krpc_cmd_call c;
	uint64_t res2 = 0;
	int ret;

	memset(&c, 0, sizeof(c));
	c.conn = conn;
	c.method = method;
	c.buf = buf;
	c.len = len;
	c.reply_max = reply_max;
	c.timeout_ms = timeout_ms;
	ret = krpc_cmd_sync(k, KRPC_CMD_CALL, &c, sizeof(c), &res2);
	if (reply) {
		/*
		 * An error hands no buffer unless the server's handler set
		 * it: io_uring completes some failures itself, with res2 0.
		 */
		if (ret < 0 && !(KRPC_RES2_FLAGS(res2) & KRPC_RES2_F_REMOTE))
			res2 = KRPC_BUF_NONE;
		reply->flags = KRPC_RES2_FLAGS(res2);
		reply->buf = KRPC_RES2_BUF(res2);
		reply->offset = KRPC_RES2_OFFSET(res2);
		reply->len = ret > 0 ? (uint32_t)ret : 0;
	}
	return ret;
}

int krpc_sqe_set_cq(struct io_uring_sqe *sqe, const struct krpc_cq *cq,
		    uint64_t tag)
{
	if (!cq || sqe->opcode != IORING_OP_URING_CMD)
		return -EINVAL;
	switch (sqe->cmd_op) {
	case KRPC_CMD_CALL: {
		struct krpc_cmd_call *c = (struct krpc_cmd_call *)sqe->cmd;

		c->cq = cq->handle;
		c->tag = tag;
		break;
	}
	case KRPC_CMD_FETCH:
	case KRPC_CMD_REPLY:
	case KRPC_CMD_REPLY_FETCH: {
		struct krpc_cmd_slot *c = (struct krpc_cmd_slot *)sqe->cmd;

		c->cq = cq->handle;
		c->tag = tag;
		break;
	}
	default:
		return -EINVAL;
	}
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	return 0;
}
