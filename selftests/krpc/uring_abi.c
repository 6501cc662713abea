// SPDX-License-Identifier: GPL-2.0
/*
 * ABI abuse of /dev/krpc: every malformed command, ioctl or mapping gets
 * its exact -errno, and nothing one open file (or process) does reaches
 * another's buffers or handles.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "uring_lib.h"
#include "kselftest_harness.h"

#define PORT	7102

FIXTURE(abi) {
	struct echo_srv srv;
	struct echo_clnt c;
	uint32_t mine;		/* a buffer the client owns */
};

FIXTURE_SETUP(abi)
{
	ASSERT_EQ(0, krpc_insmod(""));
	ASSERT_EQ(0, echo_start(&self->srv, PORT, 8, 128));
	ASSERT_EQ(0, clnt_start(&self->c, TEST_ADDR, PORT, 64, 0, 8));
	ASSERT_EQ(1, krpc_buf_alloc(self->c.k.fd, &self->c.pool, &self->mine, 1));
}

FIXTURE_TEARDOWN(abi)
{
	clnt_stop(&self->c);
	EXPECT_EQ(0, echo_stop(&self->srv));
	EXPECT_EQ(0, krpc_counter_wait("calls_live", 0, 5000));
	EXPECT_EQ(0, krpc_counter_wait("files_open", 0, 5000));
	EXPECT_EQ(0, sh("rmmod krpc"));
}

static int call(struct echo_clnt *c, struct krpc_cmd_call *cc)
{
	return krpc_cmd_sync(&c->k, KRPC_CMD_CALL, cc, sizeof(*cc), NULL);
}

static struct krpc_cmd_call good_call(struct echo_clnt *c, uint32_t buf)
{
	struct krpc_cmd_call cc = { .conn = c->conn, .method = M_ECHO,
				    .buf = buf, .len = 10, .reply_max = 10 };
	return cc;
}

/* Only @mine was allocated: any other buffer belongs to the kernel. */
static uint32_t not_mine(struct echo_clnt *c, uint32_t mine)
{
	return (mine + 1) % c->pool.count;
}

TEST_F(abi, good_call_works)
{
	struct krpc_cmd_call cc = good_call(&self->c, self->mine);
	struct krpc_reply r;

	fill(krpc_pool_buf(&self->c.pool, self->mine), 1, 10);
	ASSERT_EQ(10, krpc_call_sync(&self->c.k, self->c.conn, M_ECHO,
				     self->mine, 10, 10, 0, &r));
	EXPECT_EQ(0, krpc_buf_free(self->c.k.fd, &self->c.pool, &r.buf, 1));
	(void)cc;
}

TEST_F(abi, bad_buffer_index)
{
	struct krpc_cmd_call cc = good_call(&self->c, self->c.pool.count);

	EXPECT_EQ(-EINVAL, call(&self->c, &cc));
	cc.buf = 0xfffffe;
	EXPECT_EQ(-EINVAL, call(&self->c, &cc));
	cc.buf = 0xffffffff;
	EXPECT_EQ(-EINVAL, call(&self->c, &cc));
}

TEST_F(abi, offset_length_overflow)
{
	struct krpc_cmd_call cc = good_call(&self->c, self->mine);

	cc.offset = 0xffffffff;
	cc.len = 2;
	EXPECT_EQ(-EINVAL, call(&self->c, &cc));
	cc.offset = BUF_SIZE - 10;
	cc.len = 11;
	EXPECT_EQ(-EINVAL, call(&self->c, &cc));
	cc.offset = 0;
	cc.len = 0xffffffff;
	EXPECT_EQ(-EINVAL, call(&self->c, &cc));
	/* No buffer but a length. */
	cc.buf = KRPC_BUF_NONE;
	cc.len = 1;
	EXPECT_EQ(-EINVAL, call(&self->c, &cc));
	/* Still ours after all that. */
	EXPECT_EQ(0, krpc_buf_free(self->c.k.fd, &self->c.pool, &self->mine, 1));
}

TEST_F(abi, buffer_owned_by_the_kernel)
{
	struct krpc_cmd_call cc = good_call(&self->c, not_mine(&self->c, self->mine));
	struct krpc_cmd_call hold = good_call(&self->c, self->mine);
	struct krpc_cmd_bufs fb = { .pool = self->c.pool.handle, .count = 1 };
	uint32_t other = not_mine(&self->c, self->mine);
	struct io_uring_cqe *cqe;

	/* Never allocated: the kernel owns it. */
	EXPECT_EQ(-EBUSY, call(&self->c, &cc));
	EXPECT_EQ(-EBUSY, krpc_buf_free(self->c.k.fd, &self->c.pool, &other, 1));
	fb.bufs[0] = other;
	EXPECT_EQ(-EBUSY, krpc_cmd_sync(&self->c.k, KRPC_CMD_BUF_FREE, &fb,
					sizeof(fb), NULL));
	/* In flight in a held call: the kernel owns it until completion. */
	hold.method = M_HOLD;
	hold.reply_max = 0;
	hold.tag = 5;
	krpc_prep_cmd(&self->c.k, io_uring_get_sqe(self->c.k.ring),
		      KRPC_CMD_CALL, &hold, sizeof(hold), 42);
	ASSERT_EQ(1, io_uring_submit(self->c.k.ring));
	cc = good_call(&self->c, self->mine);
	EXPECT_EQ(-EBUSY, krpc_cmd_sync(&self->c.k, KRPC_CMD_CALL, &cc,
					sizeof(cc), NULL));
	EXPECT_EQ(-EBUSY, krpc_buf_free(self->c.k.fd, &self->c.pool,
					&self->mine, 1));
	/* All or nothing: a good and a busy one free nothing. */
	{
		uint32_t two[2];

		ASSERT_EQ(1, krpc_buf_alloc(self->c.k.fd, &self->c.pool, two, 1));
		two[1] = self->mine;
		EXPECT_EQ(-EBUSY, krpc_buf_free(self->c.k.fd, &self->c.pool,
						two, 2));
		EXPECT_EQ(0, krpc_buf_free(self->c.k.fd, &self->c.pool, two, 1));
		/* Twice in one request. */
		ASSERT_EQ(1, krpc_buf_alloc(self->c.k.fd, &self->c.pool, two, 1));
		two[1] = two[0];
		EXPECT_EQ(-EBUSY, krpc_buf_free(self->c.k.fd, &self->c.pool,
						two, 2));
		EXPECT_EQ(0, krpc_buf_free(self->c.k.fd, &self->c.pool, two, 1));
	}
	{
		struct krpc_cmd_cancel cn = { .conn = self->c.conn, .tag = 5 };

		EXPECT_EQ(1, krpc_cmd_sync(&self->c.k, KRPC_CMD_CANCEL, &cn,
					   sizeof(cn), NULL));
	}
	ASSERT_EQ(0, io_uring_wait_cqe(self->c.k.ring, &cqe));
	EXPECT_EQ(42, cqe->user_data);
	EXPECT_EQ(-ECANCELED, cqe->res);
	io_uring_cqe_seen(self->c.k.ring, cqe);
	EXPECT_EQ(0, krpc_buf_free(self->c.k.fd, &self->c.pool, &self->mine, 1));
}

TEST_F(abi, reserved_fields_and_unknown_flags)
{
	struct krpc_cmd_call cc = good_call(&self->c, self->mine);
	struct krpc_cmd_connect cn = { .pool = self->c.pool.handle };
	struct krpc_cmd_slot sl = { .server = self->srv.srv.handle,
				    .buf = KRPC_BUF_NONE };
	struct krpc_cmd_bufs b = { .pool = self->c.pool.handle, .count = 1 };
	struct krpc_cmd_cancel ca = { .conn = self->c.conn, .tag = 1 };
	struct krpc_pool_create pc = { .size = sizeof(pc), .buf_size = BUF_SIZE,
				       .count = 1 };
	struct krpc_handle_arg ha = { .size = sizeof(ha) };

	cc.reserved = 1;
	EXPECT_EQ(-EINVAL, call(&self->c, &cc));
	cc.reserved = 0;
	cc.reserved0 = 1;
	EXPECT_EQ(-EINVAL, call(&self->c, &cc));
	cc.reserved0 = 0;
	cc.flags = 1U << 5;
	EXPECT_EQ(-EINVAL, call(&self->c, &cc));
	cc.flags = KRPC_CALL_F_ONEWAY;
	cc.reply_max = 10;	/* one-way takes no reply */
	EXPECT_EQ(-EINVAL, call(&self->c, &cc));

	cn.reserved0 = 1;
	EXPECT_EQ(-EINVAL, krpc_cmd_sync(&self->c.k, KRPC_CMD_CONNECT, &cn,
					 sizeof(cn), NULL));
	cn.reserved0 = 0;
	cn.flags = 1U << 2;		/* unknown flag */
	EXPECT_EQ(-EINVAL, krpc_cmd_sync(&self->c.k, KRPC_CMD_CONNECT, &cn,
					 sizeof(cn), NULL));
	cn.flags = KRPC_CONN_F_CQ_IRQ | KRPC_CONN_F_CQ_POLL;	/* both */
	EXPECT_EQ(-EINVAL, krpc_cmd_sync(&self->c.k, KRPC_CMD_CONNECT, &cn,
					 sizeof(cn), NULL));
	cn.flags = 0;
	cn.reserved1 = 1;
	EXPECT_EQ(-EINVAL, krpc_cmd_sync(&self->c.k, KRPC_CMD_CONNECT, &cn,
					 sizeof(cn), NULL));
	cn.reserved1 = 0;
	cn.reserved = 1;
	EXPECT_EQ(-EINVAL, krpc_cmd_sync(&self->c.k, KRPC_CMD_CONNECT, &cn,
					 sizeof(cn), NULL));
	cn.reserved = 0;
	cn.transport = KRPC_TRANSPORT_AUTO + 1;	/* unknown transport */
	EXPECT_EQ(-EINVAL, krpc_cmd_sync(&self->c.k, KRPC_CMD_CONNECT, &cn,
					 sizeof(cn), NULL));
	cn.transport = 0;
	cn.addr.family = 12345;
	EXPECT_EQ(-EAFNOSUPPORT, krpc_cmd_sync(&self->c.k, KRPC_CMD_CONNECT,
					       &cn, sizeof(cn), NULL));

	sl.reserved = 1;
	EXPECT_EQ(-EINVAL, krpc_cmd_sync(&self->c.k, KRPC_CMD_FETCH, &sl,
					 sizeof(sl), NULL));
	sl.reserved = 0;
	sl.flags = 1;
	EXPECT_EQ(-EINVAL, krpc_cmd_sync(&self->c.k, KRPC_CMD_FETCH, &sl,
					 sizeof(sl), NULL));
	sl.flags = 0;
	sl.status = 1;		/* positive status */
	EXPECT_EQ(-EINVAL, krpc_cmd_sync(&self->c.k, KRPC_CMD_REPLY, &sl,
					 sizeof(sl), NULL));

	b.reserved0 = 1;
	EXPECT_EQ(-EINVAL, krpc_cmd_sync(&self->c.k, KRPC_CMD_BUF_ALLOC, &b,
					 sizeof(b), NULL));
	b.reserved0 = 0;
	b.bufs[15] = 3;		/* beyond count */
	b.count = 1;
	EXPECT_EQ(-EINVAL, krpc_cmd_sync(&self->c.k, KRPC_CMD_BUF_FREE, &b,
					 sizeof(b), NULL));

	ca.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, krpc_cmd_sync(&self->c.k, KRPC_CMD_CANCEL, &ca,
					 sizeof(ca), NULL));

	pc.reserved = 1;
	EXPECT_EQ(-1, ioctl(self->c.k.fd, KRPC_IOC_POOL_CREATE, &pc));
	EXPECT_EQ(EINVAL, errno);
	pc.reserved = 0;
	pc.flags = 1;
	EXPECT_EQ(-1, ioctl(self->c.k.fd, KRPC_IOC_POOL_CREATE, &pc));
	EXPECT_EQ(EINVAL, errno);
	pc.flags = 0;
	pc.buf_size = 4096;
	EXPECT_EQ(-1, ioctl(self->c.k.fd, KRPC_IOC_POOL_CREATE, &pc));
	EXPECT_EQ(EINVAL, errno);
	ha.handle = self->c.conn;
	ha.reserved = 1;
	EXPECT_EQ(-1, ioctl(self->c.k.fd, KRPC_IOC_CLOSE, &ha));
	EXPECT_EQ(EINVAL, errno);
	/* A larger struct with a non-zero tail. */
	{
		struct { struct krpc_handle_arg a; uint32_t tail[2]; } big = {
			.a = { .size = sizeof(big), .handle = self->c.conn },
			.tail = { 0, 1 } };

		EXPECT_EQ(-1, ioctl(self->c.k.fd, KRPC_IOC_CLOSE, &big));
		EXPECT_EQ(E2BIG, errno);
	}
}

/*
 * The 80-byte command area past a command's structure must be zero, so
 * that a later structure may grow into it: one non-zero byte there is
 * -EINVAL, before anything else is looked at; the same command without it
 * gets its own answer.
 */
TEST_F(abi, command_area_tail_must_be_zero)
{
	struct krpc_cmd_call cc = good_call(&self->c, self->mine);
	struct krpc_cmd_connect cn = { .pool = self->c.pool.handle };
	struct krpc_cmd_slot sl = { .server = self->srv.srv.handle,
				    .buf = KRPC_BUF_NONE };
	struct krpc_cmd_cancel ca = { .conn = self->c.conn, .tag = 1 };
	const struct {
		uint32_t op;
		const void *cmd;
		size_t len;
		int res;	/* without the stray byte */
	} t[] = {
		{ KRPC_CMD_CALL, &cc, sizeof(cc), 10 },
		{ KRPC_CMD_CANCEL, &ca, sizeof(ca), -ENOENT },
		/* The server is the echo thread's file's: not a handle here. */
		{ KRPC_CMD_FETCH, &sl, sizeof(sl), -EBADF },
		{ KRPC_CMD_REPLY, &sl, sizeof(sl), -EBADF },
		{ KRPC_CMD_REPLY_FETCH, &sl, sizeof(sl), -EBADF },
		{ KRPC_CMD_CONNECT, &cn, sizeof(cn), -EAFNOSUPPORT },
	};
	uint8_t area[80];	/* an SQE128's command area */
	unsigned int i;
	uint64_t res2;
	uint32_t rb;
	size_t at;

	fill(krpc_pool_buf(&self->c.pool, self->mine), 1, 10);
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		for (at = t[i].len; at < sizeof(area); at += 7) {
			memset(area, 0, sizeof(area));
			memcpy(area, t[i].cmd, t[i].len);
			area[at] = 0x80;
			EXPECT_EQ(-EINVAL, krpc_cmd_sync(&self->c.k, t[i].op,
							 area, sizeof(area),
							 NULL))
				TH_LOG("command %#x, byte %zu", t[i].op, at);
		}
		EXPECT_EQ(t[i].res, krpc_cmd_sync(&self->c.k, t[i].op,
						  t[i].cmd, t[i].len, &res2))
			TH_LOG("command %#x", t[i].op);
		/* The CALL's reply buffer. */
		rb = KRPC_RES2_BUF(res2);
		if (rb != KRPC_BUF_NONE)
			EXPECT_EQ(0, krpc_buf_free(self->c.k.fd, &self->c.pool,
						   &rb, 1));
	}
}

TEST_F(abi, unknown_commands)
{
	struct krpc_cmd_call cc = good_call(&self->c, self->mine);
	int dummy = 0;

	EXPECT_EQ(-ENOTTY, krpc_cmd_sync(&self->c.k,
					 _IOWR(KRPC_IOC_MAGIC, 0x50, struct krpc_cmd_call),
					 &cc, sizeof(cc), NULL));
	/* The right number with the wrong size or direction. */
	EXPECT_EQ(-ENOTTY, krpc_cmd_sync(&self->c.k,
					 _IOWR(KRPC_IOC_MAGIC, 0x41, uint64_t),
					 &cc, sizeof(cc), NULL));
	EXPECT_EQ(-ENOTTY, krpc_cmd_sync(&self->c.k,
					 _IOR(KRPC_IOC_MAGIC, 0x41, struct krpc_cmd_call),
					 &cc, sizeof(cc), NULL));
	EXPECT_EQ(-ENOTTY, krpc_cmd_sync(&self->c.k, 0, &cc, sizeof(cc), NULL));
	EXPECT_EQ(-ENOTTY, krpc_cmd_sync(&self->c.k, KRPC_IOC_GET_INFO, &cc,
					 sizeof(cc), NULL));
	EXPECT_EQ(-1, ioctl(self->c.k.fd, _IO(KRPC_IOC_MAGIC, 0x3f), &dummy));
	EXPECT_EQ(ENOTTY, errno);
}

/* A ring without 128-byte SQEs (or 32-byte CQEs) is refused. */
TEST_F(abi, small_sqe_ring)
{
	static const unsigned int setups[] = { 0, IORING_SETUP_SQE128,
					       IORING_SETUP_CQE32 };
	unsigned int i;

	for (i = 0; i < 3; i++) {
		struct io_uring_params p = { .flags = setups[i] };
		struct io_uring ring;
		struct io_uring_sqe *sqe;
		struct io_uring_cqe *cqe;

		ASSERT_EQ(0, io_uring_queue_init_params(8, &ring, &p));
		sqe = io_uring_get_sqe(&ring);
		memset(sqe, 0, sizeof(*sqe));
		sqe->opcode = IORING_OP_URING_CMD;
		sqe->fd = self->c.k.fd;
		sqe->cmd_op = KRPC_CMD_BUF_ALLOC;
		sqe->user_data = 9;
		ASSERT_EQ(1, io_uring_submit(&ring));
		ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
		EXPECT_EQ(-EOPNOTSUPP, cqe->res);
		io_uring_cqe_seen(&ring, cqe);
		io_uring_queue_exit(&ring);
	}
}

TEST_F(abi, bad_handles)
{
	struct krpc_cmd_call cc = good_call(&self->c, self->mine);
	struct krpc_cmd_bufs b = { .pool = self->c.conn, .count = 1 };
	struct krpc_cmd_slot sl = { .server = self->c.pool.handle,
				    .buf = KRPC_BUF_NONE };

	cc.conn = 0;
	EXPECT_EQ(-EBADF, call(&self->c, &cc));
	cc.conn = 0xffffffff;
	EXPECT_EQ(-EBADF, call(&self->c, &cc));
	cc.conn = self->c.pool.handle;		/* a pool, not a connection */
	EXPECT_EQ(-EBADF, call(&self->c, &cc));
	EXPECT_EQ(-EBADF, krpc_cmd_sync(&self->c.k, KRPC_CMD_BUF_ALLOC, &b,
					sizeof(b), NULL));
	EXPECT_EQ(-EBADF, krpc_cmd_sync(&self->c.k, KRPC_CMD_FETCH, &sl,
					sizeof(sl), NULL));
	/* Closed connection. */
	ASSERT_EQ(0, krpc_close_handle(self->c.k.fd, self->c.conn));
	cc = good_call(&self->c, self->mine);
	EXPECT_EQ(-EBADF, call(&self->c, &cc));
	EXPECT_EQ(-EBADF, krpc_close_handle(self->c.k.fd, self->c.conn));
	self->c.conn = 0;
	/* The pool is free again and can go. */
	EXPECT_EQ(0, krpc_buf_free(self->c.k.fd, &self->c.pool, &self->mine, 1));
}

struct sync_arg {
	struct krpc *k;
	struct krpc_cmd_bufs b;
	int ret;
};

static void *sync_alloc(void *p)
{
	struct sync_arg *a = p;

	a->ret = krpc_cmd_sync(a->k, KRPC_CMD_BUF_ALLOC, &a->b, sizeof(a->b),
			       NULL);
	return NULL;
}

/*
 * A DEFER_TASKRUN ring refuses another thread's submission (-EEXIST).
 * The refused command was flushed to the ring: it must not run with the
 * opener's next submit, nor its completion pass for the opener's.
 */
TEST_F(abi, sync_refused_by_the_ring_never_runs)
{
	struct sync_arg a = { .b = { .count = 1 } };
	struct krpc_pool pool;
	uint32_t bufs[8];
	struct krpc k2;
	pthread_t t;
	int n, b1, b2;

	ASSERT_EQ(0, krpc_open(&k2, 8, KRPC_RING_DEFER));
	ASSERT_EQ(0, krpc_pool_create(k2.fd, NULL, BUF_SIZE, 8, &pool));
	/* What a process may take of this pool. */
	n = krpc_buf_alloc(k2.fd, &pool, bufs, 8);
	ASSERT_LE(3, n);
	ASSERT_EQ(0, krpc_buf_free(k2.fd, &pool, bufs, n));
	a.k = &k2;
	a.b.pool = pool.handle;
	b1 = krpc_cmd_sync(&k2, KRPC_CMD_BUF_ALLOC, &a.b, sizeof(a.b), NULL);
	ASSERT_LE(0, b1);
	ASSERT_EQ(0, pthread_create(&t, NULL, sync_alloc, &a));
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(-EEXIST, a.ret);
	b2 = krpc_cmd_sync(&k2, KRPC_CMD_BUF_ALLOC, &a.b, sizeof(a.b), NULL);
	EXPECT_LE(0, b2);
	EXPECT_NE(b1, b2);
	/* Two taken by commands, the rest left: nothing else ran. */
	EXPECT_EQ(n - 2, krpc_buf_alloc(k2.fd, &pool, bufs, 8));
	EXPECT_EQ(0, krpc_buf_free(k2.fd, &pool, bufs, n - 2));
	bufs[0] = b1;
	bufs[1] = b2;
	EXPECT_EQ(0, krpc_buf_free(k2.fd, &pool, bufs, 2));
	EXPECT_EQ(0, krpc_pool_destroy(k2.fd, &pool));
	krpc_close(&k2);
}

struct sync_call_arg {
	struct krpc *k;
	struct krpc_reply reply;
	int ret;
};

static void *sync_call(void *p)
{
	struct sync_call_arg *a = p;

	a->ret = krpc_call_sync(a->k, 1, 1, KRPC_BUF_NONE, 0, 0, 0, &a->reply);
	return NULL;
}

/*
 * A call that fails before the kernel answers (here the ring refuses the
 * submission) hands no buffer: its reply says KRPC_BUF_NONE, not buffer
 * 0, which a caller freeing error replies would take for one of its own.
 */
TEST_F(abi, sync_call_refused_hands_no_buffer)
{
	struct sync_call_arg a;
	struct krpc k2;
	pthread_t t;

	memset(&a, 0, sizeof(a));
	ASSERT_EQ(0, krpc_open(&k2, 8, KRPC_RING_DEFER));
	a.k = &k2;
	ASSERT_EQ(0, pthread_create(&t, NULL, sync_call, &a));
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(-EEXIST, a.ret);
	EXPECT_EQ(KRPC_BUF_NONE, a.reply.buf);
	EXPECT_EQ(0, a.reply.len);
	EXPECT_EQ(0, a.reply.flags);
	krpc_close(&k2);
}

/*
 * A pool's pages are charged to its user's locked memory for as long as
 * they exist: a pool destroyed while still mapped keeps its charge until
 * the munmap, so destroy-without-munmap cannot get past upool_max_mb.
 */
TEST_F(abi, destroyed_pool_stays_charged_while_mapped)
{
	struct krpc_handle_arg ha = { .size = sizeof(ha) };
	struct krpc_pool pools[16], extra;
	unsigned int n = 0, i;
	long long live;
	int ret;

	/* 20 MiB for root's pools: the fixture's 12, then 1 MiB ones */
	ASSERT_EQ(0, sh("echo 20 > /sys/module/krpc/parameters/upool_max_mb"));
	while (n < 16) {
		ret = krpc_pool_create(self->c.k.fd, NULL, BUF_SIZE, 16,
				       &pools[n]);
		if (ret)
			break;
		n++;
	}
	ASSERT_EQ(-ENOMEM, ret);
	ASSERT_LE(1, n);
	/*
	 * Destroyed, still mapped: not released (its release, queued on a
	 * work queue, had half a second to run), still charged.
	 */
	live = krpc_counter("pools");
	ha.handle = pools[n - 1].handle;
	ASSERT_EQ(0, ioctl(self->c.k.fd, KRPC_IOC_POOL_DESTROY, &ha));
	EXPECT_EQ(live, krpc_counter_wait("pools", live - 1, 500));
	EXPECT_EQ(-ENOMEM, krpc_pool_create(self->c.k.fd, NULL, BUF_SIZE, 16,
					    &extra));
	/* Its pages are still there and still ours. */
	memset(pools[n - 1].base, 0x5a, pools[n - 1].length);
	/* Unmapped: released, and the charge is back. */
	ASSERT_EQ(0, munmap(pools[n - 1].base, pools[n - 1].length));
	EXPECT_EQ(live - 1, krpc_counter_wait("pools", live - 1, 5000));
	ret = krpc_pool_create(self->c.k.fd, NULL, BUF_SIZE, 16, &extra);
	EXPECT_EQ(0, ret);
	if (!ret)
		EXPECT_EQ(0, krpc_pool_destroy(self->c.k.fd, &extra));
	for (i = 0; i + 1 < n; i++)
		EXPECT_EQ(0, krpc_pool_destroy(self->c.k.fd, &pools[i]));
}

TEST_F(abi, pool_in_use_cannot_be_destroyed)
{
	struct krpc_handle_arg ha = { .size = sizeof(ha),
				      .handle = self->c.pool.handle };

	EXPECT_EQ(-1, ioctl(self->c.k.fd, KRPC_IOC_POOL_DESTROY, &ha));
	EXPECT_EQ(EBUSY, errno);
}

/* Calls of one tag: more than one batch of 16. */
#define TAGGED		40
#define TAGGED_UD	100	/* user_data of the first */
#define WINDOW		8	/* the fixture's depth */

/*
 * KRPC_CMD_CANCEL cancels every call in flight with its tag and answers
 * how many: 40 calls, all -ECANCELED.  A second CANCEL right after finds
 * none left (-ENOENT: the cancelled ones still on their way out do not
 * count).  The calls wait behind a window that held calls
 * of another tag fill: a cancelled call that was sent holds its slot until
 * the server answers, and half the window held so resets the connection
 * (rpc.c), which would end the calls with another error.  The other tag's
 * calls are untouched: they end with -ESHUTDOWN at the CLOSE.
 */
TEST_F(abi, cancel_reaches_every_call_with_the_tag)
{
	struct krpc_cmd_call call = { .conn = self->c.conn, .method = M_HOLD,
				      .buf = KRPC_BUF_NONE, .tag = 10 };
	struct krpc_cmd_cancel cn = { .conn = self->c.conn, .tag = 9 };
	struct __kernel_timespec ts = { .tv_sec = 5 };
	struct io_uring *ring = self->c.k.ring;
	struct io_uring_cqe *cqe;
	int i, cancelled = 0, cancels = 0;

	for (i = 0; i < WINDOW; i++)
		krpc_prep_cmd(&self->c.k, io_uring_get_sqe(ring), KRPC_CMD_CALL,
			      &call, sizeof(call), 10 + i);
	call.tag = 9;
	for (i = 0; i < TAGGED; i++)
		krpc_prep_cmd(&self->c.k, io_uring_get_sqe(ring), KRPC_CMD_CALL,
			      &call, sizeof(call), TAGGED_UD + i);
	ASSERT_EQ(WINDOW + TAGGED, io_uring_submit(ring));
	krpc_prep_cmd(&self->c.k, io_uring_get_sqe(ring), KRPC_CMD_CANCEL,
		      &cn, sizeof(cn), 1);
	ASSERT_EQ(1, io_uring_submit(ring));
	krpc_prep_cmd(&self->c.k, io_uring_get_sqe(ring), KRPC_CMD_CANCEL,
		      &cn, sizeof(cn), 2);
	ASSERT_EQ(1, io_uring_submit(ring));
	for (i = 0; i < TAGGED + 2; i++) {
		ASSERT_EQ(0, io_uring_wait_cqe_timeout(ring, &cqe, &ts))
			TH_LOG("%d of %d completions", i, TAGGED + 2);
		if (cqe->user_data == 1) {
			EXPECT_EQ(TAGGED, cqe->res);
			cancels++;
		} else if (cqe->user_data == 2) {
			EXPECT_EQ(-ENOENT, cqe->res);
			cancels++;
		} else {
			EXPECT_LE(TAGGED_UD, cqe->user_data);
			EXPECT_GT(TAGGED_UD + TAGGED, cqe->user_data);
			EXPECT_EQ(-ECANCELED, cqe->res);
			cancelled++;
		}
		io_uring_cqe_seen(ring, cqe);
	}
	EXPECT_EQ(2, cancels);
	EXPECT_EQ(TAGGED, cancelled);

	ASSERT_EQ(0, krpc_close_handle(self->c.k.fd, self->c.conn));
	self->c.conn = 0;
	for (i = 0; i < WINDOW; i++) {
		ASSERT_EQ(0, io_uring_wait_cqe_timeout(ring, &cqe, &ts));
		EXPECT_LE(10, cqe->user_data);
		EXPECT_GT(10 + WINDOW, cqe->user_data);
		EXPECT_EQ(-ESHUTDOWN, cqe->res);
		io_uring_cqe_seen(ring, cqe);
	}
}

/*
 * A process may have KRPC_CONN_CALLS_MAX calls in flight on a connection,
 * the ones beyond its depth waiting in the kernel: the next is -EBUSY
 * (and so is one more after it, the count exact), and once the
 * connection is closed every held call ends with -ESHUTDOWN, each once.
 */
TEST_F(abi, calls_in_flight_are_bounded)
{
	struct krpc_cmd_call call = { .conn = self->c.conn, .method = M_HOLD,
				      .buf = KRPC_BUF_NONE,
				      .timeout_ms = 600000 };
	struct __kernel_timespec ts = { .tv_sec = 10 };
	struct io_uring *ring = self->c.k.ring;
	struct io_uring_cqe *cqe;
	unsigned int i, sent = 0, busy = 0, shut = 0;

	while (sent < KRPC_CONN_CALLS_MAX) {
		for (i = 0; i < 512 && sent < KRPC_CONN_CALLS_MAX; i++, sent++)
			krpc_prep_cmd(&self->c.k, io_uring_get_sqe(ring),
				      KRPC_CMD_CALL, &call, sizeof(call), sent);
		ASSERT_EQ((int)i, io_uring_submit(ring));
	}
	/* All taken: none has completed. */
	EXPECT_EQ(-EAGAIN, io_uring_peek_cqe(ring, &cqe));
	for (i = 0; i < 2; i++) {
		krpc_prep_cmd(&self->c.k, io_uring_get_sqe(ring), KRPC_CMD_CALL,
			      &call, sizeof(call), 100000 + i);
		ASSERT_EQ(1, io_uring_submit(ring));
		ASSERT_EQ(0, io_uring_wait_cqe_timeout(ring, &cqe, &ts));
		EXPECT_EQ(100000 + i, cqe->user_data);
		EXPECT_EQ(-EBUSY, cqe->res);
		busy += cqe->res == -EBUSY;
		io_uring_cqe_seen(ring, cqe);
	}
	EXPECT_EQ(2, busy);
	ASSERT_EQ(0, krpc_close_handle(self->c.k.fd, self->c.conn));
	self->c.conn = 0;
	for (i = 0; i < KRPC_CONN_CALLS_MAX; i++) {
		ASSERT_EQ(0, io_uring_wait_cqe_timeout(ring, &cqe, &ts))
			TH_LOG("%u of %u calls ended", i, KRPC_CONN_CALLS_MAX);
		EXPECT_GT(KRPC_CONN_CALLS_MAX, cqe->user_data);
		shut += cqe->res == -ESHUTDOWN;
		io_uring_cqe_seen(ring, cqe);
	}
	EXPECT_EQ(KRPC_CONN_CALLS_MAX, shut);
	EXPECT_EQ(0, krpc_counter_wait("calls_live", 0, 5000));
}

/*
 * A pool is in use from its connection's CONNECT (its server's LISTEN)
 * to that object's CLOSE, not until the commands on it have posted their
 * completions: on a DEFER_TASKRUN ring those wait for the next
 * io_uring_enter(GETEVENTS), and an ioctl runs none.  With two held calls
 * and two FETCHes parked, POOL_DESTROY is -EBUSY while the connection or
 * the server is open, and 0 right after both CLOSEs, before any
 * completion is reaped.  The commands then
 * complete with -ESHUTDOWN, each once.
 */
TEST_F(abi, pool_free_once_its_users_are_closed)
{
	struct krpc_cmd_call hold = { .method = M_HOLD, .buf = KRPC_BUF_NONE };
	struct __kernel_timespec ts = { .tv_sec = 5 };
	struct io_uring_cqe *cqe;
	struct krpc_pool pool;
	struct sockaddr_in sin;
	struct krpc_srv srv;
	uint32_t m = M_ECHO;
	int i, conn, calls = 0, fetches = 0;
	struct krpc k2;

	ASSERT_EQ(0, krpc_open(&k2, 16, KRPC_RING_DEFER));
	ASSERT_EQ(0, lib_pool_create(k2.fd, 32, &pool));
	conn = lib_connect(&k2, &pool, TEST_ADDR, PORT, 4, env_transport(),
			   0, NULL);
	ASSERT_LT(0, conn);
	sin_of(&sin, "0.0.0.0", PORT + 52);
	ASSERT_EQ(0, krpc_listen(k2.fd, &pool, (struct sockaddr *)&sin,
				 sizeof(sin), 2, &m, 1, &srv));
	hold.conn = conn;
	for (i = 0; i < 2; i++) {
		krpc_prep_cmd(&k2, io_uring_get_sqe(k2.ring), KRPC_CMD_CALL,
			      &hold, sizeof(hold), 10 + i);
		krpc_prep_fetch(&k2, io_uring_get_sqe(k2.ring), srv.handle, i,
				20 + i);
	}
	ASSERT_EQ(4, io_uring_submit(k2.ring));

	EXPECT_EQ(-EBUSY, krpc_pool_destroy(k2.fd, &pool));
	ASSERT_EQ(0, krpc_close_handle(k2.fd, conn));
	EXPECT_EQ(-EBUSY, krpc_pool_destroy(k2.fd, &pool));	/* the server */
	ASSERT_EQ(0, krpc_srv_close(k2.fd, &srv));
	EXPECT_EQ(0, krpc_pool_destroy(k2.fd, &pool));

	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, io_uring_wait_cqe_timeout(k2.ring, &cqe, &ts))
			TH_LOG("%d of 4 completions", i);
		EXPECT_EQ(-ESHUTDOWN, cqe->res);
		if (cqe->user_data == 10 || cqe->user_data == 11)
			calls++;
		else if (cqe->user_data == 20 || cqe->user_data == 21)
			fetches++;
		io_uring_cqe_seen(k2.ring, cqe);
	}
	EXPECT_EQ(2, calls);
	EXPECT_EQ(2, fetches);
	if (pool.base)		/* the destroy failed: still mapped */
		munmap(pool.base, pool.length);
	krpc_close(&k2);
}

static int connect_rdma(struct echo_clnt *c, struct krpc_pool *pool,
			uint16_t port, uint32_t depth)
{
	return lib_connect(&c->k, pool, TEST_ADDR, port, depth,
			   KRPC_TRANSPORT_RDMA, 0, NULL);
}

/*
 * A pool with fewer free buffers than a connection's receive ring (depth
 * + 4) refuses the connection with -ENOBUFS and a log line, on either
 * side: the client's own pool, or the server's, whose reject names
 * "resources".  A smaller depth fits.
 */
TEST_F(abi, pool_too_small_for_the_receive_ring)
{
	const char *client_re = "conn [0-9]+: no pool buffer for receive 9 of 12";
	const char *server_re = "rejecting .*: resources \\(-105\\)";
	struct krpc_pool pool;
	struct echo_srv small;
	int before, conn;

	/* The fixture's connection and its server side are open. */
	ASSERT_EQ(2, krpc_counter("conns_open"));

	/* The client's pool: 8 buffers, 12 receives at depth 8. */
	ASSERT_EQ(0, lib_pool_create(self->c.k.fd, 8, &pool));
	before = klog_count(client_re);
	EXPECT_EQ(-ENOBUFS, connect_rdma(&self->c, &pool, PORT, 8));
	EXPECT_EQ(before + 1, klog_count(client_re));
	/* The refused connection's receives return as it goes. */
	EXPECT_EQ(2, krpc_counter_wait("conns_open", 2, 5000));
	conn = connect_rdma(&self->c, &pool, PORT, 4);
	EXPECT_LT(0, conn);
	if (conn > 0)
		EXPECT_EQ(0, krpc_close_handle(self->c.k.fd, conn));
	/* Its mapping would keep the file open. */
	EXPECT_EQ(2, krpc_counter_wait("conns_open", 2, 5000));
	EXPECT_EQ(0, krpc_pool_destroy(self->c.k.fd, &pool));

	/* The server's pool: 4 buffers. */
	ASSERT_EQ(0, echo_start(&small, PORT + 1, 8, 4));
	before = klog_count(server_re);
	EXPECT_EQ(-ENOBUFS, connect_rdma(&self->c, &self->c.pool, PORT + 1, 8));
	EXPECT_EQ(before + 1, klog_count(server_re));
	EXPECT_EQ(0, echo_stop(&small));
	EXPECT_EQ(2, krpc_counter_wait("conns_open", 2, 5000));
}

/*
 * A server's own connection limit (krpc_listen.max_conns, through
 * krpc_listen_opts()), here 1 against the module's 1024: one more
 * connection is refused with -ENOBUFS and the server logs the limit; the
 * place is taken again once freed.  A limit above 65536 and a non-zero
 * reserved field are -EINVAL, and the first size of the structure still
 * listens (under the module's limit).
 */
TEST_F(abi, server_max_conns)
{
	const char *re = "rejecting [0-9.]+:[0-9]+: resources \\(-87\\), value 1$";
	struct krpc_srv_opts o = { .transport = KRPC_TRANSPORT_RDMA };
	int fd = self->c.k.fd, before, conn;
	struct sockaddr_in sin;
	struct krpc_listen l;
	struct krpc_srv srv;
	uint32_t m = M_ECHO;

	{
		struct krpc_info info;

		ASSERT_EQ(0, krpc_dev_info(fd, &info));
		EXPECT_TRUE(info.features & KRPC_FEAT_LISTEN_MAX_CONNS);
	}
	sin_of(&sin, "0.0.0.0", PORT + 53);
	o.max_conns = 65537;
	EXPECT_EQ(-EINVAL, krpc_listen_opts(fd, &self->c.pool,
					    (struct sockaddr *)&sin,
					    sizeof(sin), 1, &m, 1, &o, &srv));
	memset(&l, 0, sizeof(l));
	l.size = KRPC_LISTEN_SIZE_VER1;
	l.pool = self->c.pool.handle;
	l.nr_slots = 1;
	l.nr_methods = 1;
	l.methods = (uintptr_t)&m;
	l.transport = KRPC_TRANSPORT_RDMA;
	l.max_conns = 1;
	l.reserved = 1;
	ASSERT_EQ(0, krpc_addr_set(&l.addr, (struct sockaddr *)&sin,
				   sizeof(sin)));
	EXPECT_EQ(-1, ioctl(fd, KRPC_IOC_LISTEN, &l));
	EXPECT_EQ(EINVAL, errno);
	/* The first size: max_conns and reserved are not read. */
	l.size = KRPC_LISTEN_SIZE_VER0;
	ASSERT_EQ(0, ioctl(fd, KRPC_IOC_LISTEN, &l));
	EXPECT_EQ(0, krpc_close_handle(fd, l.handle));

	o.max_conns = 1;
	ASSERT_EQ(0, krpc_listen_opts(fd, &self->c.pool,
				      (struct sockaddr *)&sin, sizeof(sin), 1,
				      &m, 1, &o, &srv));
	conn = connect_rdma(&self->c, &self->c.pool, PORT + 53, 4);
	ASSERT_LT(0, conn);
	EXPECT_EQ(4, krpc_counter("conns_open"));
	before = klog_count(re);
	EXPECT_EQ(-ENOBUFS, connect_rdma(&self->c, &self->c.pool,
					 PORT + 53, 4));
	EXPECT_EQ(before + 1, klog_count(re));
	EXPECT_EQ(0, krpc_close_handle(fd, conn));
	EXPECT_EQ(2, krpc_counter_wait("conns_open", 2, 5000));
	conn = connect_rdma(&self->c, &self->c.pool, PORT + 53, 4);
	EXPECT_LT(0, conn);
	if (conn > 0)
		EXPECT_EQ(0, krpc_close_handle(fd, conn));
	EXPECT_EQ(0, krpc_srv_close(fd, &srv));
	EXPECT_EQ(2, krpc_counter_wait("conns_open", 2, 5000));
}

/*
 * Read debugfs krpc/conns @chunk bytes at a time (seq_file restarts its
 * iterator at the position reached for each read() once the first page is
 * out): the number of lines, each connection id seen once, @bytes read.
 */
static int conns_lines(size_t chunk, size_t *bytes, int *dup)
{
	static char all[65536];
	char *l, *end, seen[4096] = { 0 };
	size_t n = 0;
	unsigned int id;
	ssize_t r;
	int fd, lines = 0;

	*dup = 0;
	fd = open("/sys/kernel/debug/krpc/conns", O_RDONLY);
	if (fd < 0)
		return -errno;
	while (n < sizeof(all) - 1 &&
	       (r = read(fd, all + n, chunk < sizeof(all) - 1 - n ?
			 chunk : sizeof(all) - 1 - n)) > 0)
		n += r;
	close(fd);
	all[n] = 0;
	*bytes = n;
	for (l = all; l < all + n; l = end + 1) {
		end = strchr(l, '\n');
		if (!end || sscanf(l, "conn=%u ", &id) != 1)
			return -EPROTO;
		lines++;
		if (seen[id % sizeof(seen)]++)
			(*dup)++;
	}
	return lines;
}

/*
 * debugfs krpc/conns lists each connection once, also when its lines take
 * more than a page: 10 more connections (22 lines of about 400 bytes), read
 * 100 bytes at a time and in one go.
 */
TEST_F(abi, debugfs_conns_lists_each_connection_once)
{
	enum { N = 10 };
	struct krpc_pool pool;
	int conn[N], i, dup;
	size_t bytes;

	ASSERT_EQ(2, conns_lines(100, &bytes, &dup));
	/* At depth 4 a connection holds 8 receive buffers on each side. */
	ASSERT_EQ(0, lib_pool_create(self->c.k.fd, 8 * N + 8, &pool));
	for (i = 0; i < N; i++) {
		conn[i] = connect_rdma(&self->c, &pool, PORT, 4);
		ASSERT_LT(0, conn[i]);
	}
	ASSERT_EQ(2 + 2 * N, krpc_counter("conns_open"));
	EXPECT_EQ(2 + 2 * N, conns_lines(100, &bytes, &dup));
	EXPECT_EQ(0, dup);
	EXPECT_LT(4096, bytes);
	EXPECT_EQ(2 + 2 * N, conns_lines(65536, &bytes, &dup));
	EXPECT_EQ(0, dup);
	for (i = 0; i < N; i++)
		EXPECT_EQ(0, krpc_close_handle(self->c.k.fd, conn[i]));
	EXPECT_EQ(2, krpc_counter_wait("conns_open", 2, 5000));
	EXPECT_EQ(2, conns_lines(100, &bytes, &dup));
	EXPECT_EQ(0, dup);
	EXPECT_EQ(0, krpc_pool_destroy(self->c.k.fd, &pool));
}

TEST_F(abi, slots)
{
	struct krpc k;
	struct krpc_pool pool;
	struct krpc_srv srv;
	struct sockaddr_in sin;
	uint32_t m = 9;
	struct krpc_cmd_slot sl = { .buf = KRPC_BUF_NONE };
	struct io_uring_cqe *cqe;

	ASSERT_EQ(0, krpc_open(&k, 16, 0));
	ASSERT_EQ(0, krpc_pool_create(k.fd, NULL, BUF_SIZE, 16, &pool));
	sin_of(&sin, "0.0.0.0", PORT + 50);
	ASSERT_EQ(0, krpc_listen(k.fd, &pool, (struct sockaddr *)&sin,
				 sizeof(sin), 2, &m, 1, &srv));
	sl.server = srv.handle;
	sl.slot = 2;
	EXPECT_EQ(-EINVAL, krpc_cmd_sync(&k, KRPC_CMD_FETCH, &sl, sizeof(sl), NULL));
	sl.slot = 1;
	EXPECT_EQ(-ENOENT, krpc_cmd_sync(&k, KRPC_CMD_REPLY, &sl, sizeof(sl), NULL));
	krpc_prep_fetch(&k, io_uring_get_sqe(k.ring), srv.handle, 1, 1);
	ASSERT_EQ(1, io_uring_submit(k.ring));
	EXPECT_EQ(-EBUSY, krpc_cmd_sync(&k, KRPC_CMD_FETCH, &sl, sizeof(sl), NULL));
	/* Listening twice on one port: rdma_cm's answer. */
	{
		struct krpc_srv srv2;

		EXPECT_EQ(-EADDRNOTAVAIL, krpc_listen(k.fd, &pool,
						   (struct sockaddr *)&sin,
						   sizeof(sin), 2, &m, 1, &srv2));
		/* An unknown transport. */
		EXPECT_EQ(-EINVAL, krpc_listen_xprt(k.fd, &pool,
						    (struct sockaddr *)&sin,
						    sizeof(sin), 2, &m, 1,
						    KRPC_TRANSPORT_AUTO + 1,
						    &srv2));
		/* Unknown and conflicting connection flags. */
		EXPECT_EQ(-EINVAL, krpc_listen_flags(k.fd, &pool,
						     (struct sockaddr *)&sin,
						     sizeof(sin), 2, &m, 1,
						     KRPC_TRANSPORT_TCP, 1U << 2,
						     &srv2));
		EXPECT_EQ(-EINVAL, krpc_listen_flags(k.fd, &pool,
						     (struct sockaddr *)&sin,
						     sizeof(sin), 2, &m, 1,
						     KRPC_TRANSPORT_TCP,
						     KRPC_CONN_F_VALID, &srv2));
		/* TCP on the same port number: its own port space. */
		ASSERT_EQ(0, krpc_listen_xprt(k.fd, &pool,
					      (struct sockaddr *)&sin,
					      sizeof(sin), 2, &m, 1,
					      KRPC_TRANSPORT_TCP, &srv2));
		/* And twice on TCP: the socket layer's answer. */
		{
			struct krpc_srv srv3;

			EXPECT_EQ(-EADDRINUSE,
				  krpc_listen_xprt(k.fd, &pool,
						   (struct sockaddr *)&sin,
						   sizeof(sin), 2, &m, 1,
						   KRPC_TRANSPORT_TCP, &srv3));
		}
		EXPECT_EQ(0, krpc_srv_close(k.fd, &srv2));
	}
	/* Closing the server ends the parked FETCH with -ESHUTDOWN. */
	ASSERT_EQ(0, krpc_srv_close(k.fd, &srv));
	ASSERT_EQ(0, io_uring_wait_cqe(k.ring, &cqe));
	EXPECT_EQ(1, cqe->user_data);
	EXPECT_EQ(-ESHUTDOWN, cqe->res);
	io_uring_cqe_seen(k.ring, cqe);
	EXPECT_EQ(0, krpc_pool_destroy(k.fd, &pool));
	krpc_close(&k);
}

/* Handles and mappings of one open file mean nothing in another. */
TEST_F(abi, handle_from_another_file)
{
	struct krpc_cmd_call cc = good_call(&self->c, self->mine);
	struct krpc k2;
	void *p;

	ASSERT_EQ(0, krpc_open(&k2, 8, 0));
	EXPECT_EQ(-EBADF, krpc_cmd_sync(&k2, KRPC_CMD_CALL, &cc, sizeof(cc), NULL));
	{
		uint32_t b;

		EXPECT_EQ(-EBADF, krpc_buf_alloc(k2.fd, &self->c.pool, &b, 1));
		EXPECT_EQ(-EBADF, krpc_buf_free(k2.fd, &self->c.pool,
						&self->mine, 1));
	}
	p = mmap(NULL, self->c.pool.length, PROT_READ | PROT_WRITE, MAP_SHARED,
		 k2.fd, handle_off(self->c.pool.handle));
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-EBADF, krpc_close_handle(k2.fd, self->c.conn));
	krpc_close(&k2);
	/* Untouched here. */
	EXPECT_EQ(0, krpc_buf_free(self->c.k.fd, &self->c.pool, &self->mine, 1));
}

TEST_F(abi, mappings)
{
	off_t off = handle_off(self->c.pool.handle);
	void *p;

	p = mmap(NULL, self->c.pool.length - 4096, PROT_READ, MAP_SHARED,
		 self->c.k.fd, off);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, self->c.pool.length, PROT_READ | PROT_WRITE, MAP_PRIVATE,
		 self->c.k.fd, off);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, self->c.pool.length, PROT_READ | PROT_EXEC, MAP_SHARED,
		 self->c.k.fd, off);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	/* The offset is the handle in pages: none is 0, none above 2^24 - 1. */
	p = mmap(NULL, self->c.pool.length, PROT_READ, MAP_SHARED,
		 self->c.k.fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, self->c.pool.length, PROT_READ, MAP_SHARED,
		 self->c.k.fd, handle_off(1U << 24));
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	/* Request descriptors are read-only, for good. */
	p = mmap(NULL, self->srv.srv.desc_len, PROT_READ | PROT_WRITE,
		 MAP_SHARED, self->srv.k.fd, handle_off(self->srv.srv.handle));
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(-1, mprotect((void *)self->srv.srv.desc,
			       self->srv.srv.desc_len, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	/* A second mapping of the pool sees the same bytes. */
	p = mmap(NULL, self->c.pool.length, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->c.k.fd, off);
	ASSERT_NE(MAP_FAILED, p);
	fill(krpc_pool_buf(&self->c.pool, self->mine), 3, 4096);
	EXPECT_EQ(-1, check_pattern((char *)p + (size_t)self->mine * BUF_SIZE,
				    3, 4096));
	munmap(p, self->c.pool.length);
}

static sigjmp_buf segv_jmp;

static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(segv_jmp, 1);
}

/* Another process: no mapping inherited, no handle valid, no buffer. */
TEST_F(abi, two_processes)
{
	volatile char *base = self->c.pool.base;
	int status;
	pid_t pid;

	fill(krpc_pool_buf(&self->c.pool, self->mine), 4, 64);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct krpc_cmd_call cc = good_call(&self->c, self->mine);
		struct krpc k2;
		uint32_t b;
		int bad = 0;

		signal(SIGSEGV, on_segv);
		if (!sigsetjmp(segv_jmp, 1)) {
			base[0] = 1;	/* VM_DONTCOPY: not mapped here */
			bad |= 1;
		}
		if (krpc_open(&k2, 8, 0))
			_exit(100);
		if (krpc_cmd_sync(&k2, KRPC_CMD_CALL, &cc, sizeof(cc), NULL) != -EBADF)
			bad |= 2;
		if (krpc_buf_alloc(k2.fd, &self->c.pool, &b, 1) != -EBADF)
			bad |= 4;
		if (mmap(NULL, self->c.pool.length, PROT_READ, MAP_SHARED,
			 k2.fd, handle_off(self->c.pool.handle)) != MAP_FAILED)
			bad |= 8;
		/* The inherited fd is the parent's context: same rules. */
		if (krpc_buf_free(self->c.k.fd, &self->c.pool, &b, 1) != -EBUSY &&
		    krpc_buf_free(self->c.k.fd, &self->c.pool, &b, 1) != -EINVAL)
			bad |= 16;
		krpc_close(&k2);
		_exit(bad);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(-1, check_pattern(krpc_pool_buf(&self->c.pool, self->mine),
				    4, 64));
}

TEST_HARNESS_MAIN
