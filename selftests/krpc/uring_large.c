// SPDX-License-Identifier: GPL-2.0
/*
 * Pools with large buffers (KRPC_FEAT_POOL_LARGE): payloads above one
 * 64 KiB buffer between two userspace processes' pools.  The sizes a pool
 * takes and refuses, with exact errnos; the mapping's layout; buffers
 * handed out by class only; echoes of up to 1 MiB each way, checked byte
 * for byte, the replies landing in large buffers; calls too big for the
 * pool refused; no payload copied over RDMA; every counter back to zero.
 * uring_large_tcp.sh runs the same over the TCP transport.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "uring_lib.h"
#include "kselftest_harness.h"

#define PORT		7131
#define LARGE		(1U << 20)
#define NR_LARGE	8U
#define NR_BUFS		64U

/* KRPC_IOC_POOL_CREATE with @pc as given; 0 or -errno. */
static int pool_ioctl(int fd, struct krpc_pool_create *pc)
{
	return ioctl(fd, KRPC_IOC_POOL_CREATE, pc) < 0 ? -errno : 0;
}

static void pool_close(int fd, uint32_t handle)
{
	struct krpc_handle_arg ha = { .size = sizeof(ha), .handle = handle };

	ioctl(fd, KRPC_IOC_POOL_DESTROY, &ha);
}

/* Sizes alone: no connection needed. */
TEST(pool_sizes)
{
	struct krpc_pool_create pc;
	struct krpc_pool pool;
	struct krpc_info info;
	int fd;

	ASSERT_EQ(0, krpc_insmod(""));
	fd = krpc_dev_open(0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, krpc_dev_info(fd, &info));
	EXPECT_TRUE(info.features & KRPC_FEAT_POOL_LARGE);

#define BAD(lsize, lcount) do {						\
		memset(&pc, 0, sizeof(pc));				\
		pc.size = sizeof(pc);					\
		pc.buf_size = BUF_SIZE;					\
		pc.count = 4;						\
		pc.large_size = (lsize);				\
		pc.large_count = (lcount);				\
		EXPECT_EQ(-EINVAL, pool_ioctl(fd, &pc))			\
			TH_LOG("large %u x %u", (unsigned int)(lcount),	\
			       (unsigned int)(lsize));			\
	} while (0)
	BAD(BUF_SIZE, 1);			/* not above the buffers */
	BAD(BUF_SIZE + 4096, 1);		/* not a multiple of 64 KiB */
	BAD(3 * BUF_SIZE + 1, 1);
	BAD(KRPC_POOL_LARGE_MAX + BUF_SIZE, 1);	/* above the maximum */
	BAD(2 * BUF_SIZE, 0);			/* a size without a count */
	BAD(0, 1);				/* a count without a size */
	BAD(2 * BUF_SIZE, KRPC_POOL_COUNT_MAX + 1);
#undef BAD
	EXPECT_EQ(-EINVAL, krpc_pool_create_large(fd, NULL, BUF_SIZE, 4, 0, 4,
						  &pool));

	/* The layout: the buffers, then the large ones. */
	memset(&pc, 0, sizeof(pc));
	pc.size = sizeof(pc);
	pc.buf_size = BUF_SIZE;
	pc.count = 3;
	pc.large_size = 5 * BUF_SIZE;
	pc.large_count = 2;
	ASSERT_EQ(0, pool_ioctl(fd, &pc));
	EXPECT_EQ(3ULL * BUF_SIZE + 2ULL * 5 * BUF_SIZE, pc.mmap_length);
	EXPECT_EQ(5 * BUF_SIZE, pc.large_size);
	EXPECT_EQ(2, pc.large_count);
	pool_close(fd, pc.handle);

	/* A caller that knows only the first version gets no large buffers. */
	memset(&pc, 0, sizeof(pc));
	pc.size = KRPC_POOL_CREATE_SIZE_VER0;
	pc.buf_size = BUF_SIZE;
	pc.count = 3;
	pc.large_size = 5 * BUF_SIZE;	/* beyond its size: not read */
	pc.large_count = 2;
	ASSERT_EQ(0, pool_ioctl(fd, &pc));
	EXPECT_EQ(3ULL * BUF_SIZE, pc.mmap_length);
	pool_close(fd, pc.handle);

	/* Through libkrpc, mapped: every byte of a large buffer is there. */
	ASSERT_EQ(0, krpc_pool_create_large(fd, NULL, BUF_SIZE, 2,
					    4 * BUF_SIZE, 3, &pool));
	EXPECT_EQ(2 * BUF_SIZE + 3 * 4 * BUF_SIZE, pool.length);
	EXPECT_EQ(4 * BUF_SIZE, krpc_pool_buf_size(&pool, 4));
	EXPECT_EQ(0, krpc_pool_buf_size(&pool, 5));
	/* Past the last large buffer, or no buffer at all: no address. */
	EXPECT_EQ(NULL, krpc_pool_buf(&pool, 5));
	EXPECT_EQ(NULL, krpc_pool_buf(&pool, KRPC_BUF_NONE));
	EXPECT_NE(NULL, krpc_pool_buf(&pool, 4));
	EXPECT_EQ((char *)pool.base + 2 * BUF_SIZE + 2 * 4 * BUF_SIZE,
		  (char *)krpc_pool_buf(&pool, 4));
	fill(krpc_pool_buf(&pool, 4), 9, 4 * BUF_SIZE);
	EXPECT_EQ(-1, check_pattern(krpc_pool_buf(&pool, 4), 9, 4 * BUF_SIZE));
	EXPECT_EQ(0, krpc_pool_destroy(fd, &pool));

	close(fd);
	EXPECT_EQ(0, krpc_counter_wait("files_open", 0, 5000));
	EXPECT_EQ(0, sh("rmmod krpc"));
}

/* KRPC_BUF_F_LARGE hands out large buffers, and only they. */
TEST(alloc_by_class)
{
	struct krpc_cmd_bufs b = { .count = 1 };
	struct krpc_pool small, pool;
	uint32_t idx[16], n = 0, i;
	struct krpc k;
	int ret;

	ASSERT_EQ(0, krpc_insmod(""));
	ASSERT_EQ(0, krpc_open(&k, 64, 0));
	ASSERT_EQ(0, krpc_pool_create(k.fd, NULL, BUF_SIZE, 16, &small));
	EXPECT_EQ(-EINVAL, krpc_buf_alloc_large(k.fd, &small, idx, 1));
	b.pool = small.handle;
	b.flags = KRPC_BUF_F_LARGE;
	EXPECT_EQ(-EINVAL, krpc_cmd_sync(&k, KRPC_CMD_BUF_ALLOC, &b,
					 sizeof(b), NULL));

	ASSERT_EQ(0, krpc_pool_create_large(k.fd, NULL, BUF_SIZE, 16,
					    2 * BUF_SIZE, 4, &pool));
	/* Every large buffer, by the ioctl and by the io_uring command. */
	ASSERT_EQ(3, krpc_buf_alloc_large(k.fd, &pool, idx, 3));
	b.pool = pool.handle;
	ret = krpc_cmd_sync(&k, KRPC_CMD_BUF_ALLOC, &b, sizeof(b), NULL);
	ASSERT_LE(0, ret);
	idx[3] = (uint32_t)ret;
	for (i = 0; i < 4; i++) {
		EXPECT_LE(pool.count, idx[i]);
		EXPECT_GT(pool.count + pool.large_count, idx[i]);
	}
	EXPECT_EQ(-ENOBUFS, krpc_buf_alloc_large(k.fd, &pool, idx + 4, 1));
	EXPECT_EQ(-ENOBUFS, krpc_cmd_sync(&k, KRPC_CMD_BUF_ALLOC, &b,
					  sizeof(b), NULL));
	/* FREE takes no flag. */
	b.count = 1;
	b.bufs[0] = idx[0];
	EXPECT_EQ(-EINVAL, krpc_cmd_sync(&k, KRPC_CMD_BUF_FREE, &b, sizeof(b),
					 NULL));
	EXPECT_EQ(0, krpc_buf_free(k.fd, &pool, idx, 4));

	/*
	 * The small ones: never a large one, even when they run out (a
	 * pool keeps an eighth of its buffers for receives).
	 */
	while (n < 16) {
		ret = krpc_buf_alloc(k.fd, &pool, idx + n, 16 - n);
		if (ret < 0)
			break;
		n += (uint32_t)ret;
	}
	EXPECT_EQ(-ENOBUFS, ret);
	EXPECT_EQ(14, n);
	for (i = 0; i < n; i++)
		EXPECT_GT(pool.count, idx[i]);
	EXPECT_EQ(0, krpc_buf_free(k.fd, &pool, idx, n));
	/* ...while the large ones are all free still. */
	EXPECT_EQ(4, krpc_buf_alloc_large(k.fd, &pool, idx, 16));
	EXPECT_EQ(0, krpc_buf_free(k.fd, &pool, idx, 4));

	EXPECT_EQ(0, krpc_pool_destroy(k.fd, &pool));
	EXPECT_EQ(0, krpc_pool_destroy(k.fd, &small));
	krpc_close(&k);
	EXPECT_EQ(0, krpc_counter_wait("files_open", 0, 5000));
	EXPECT_EQ(0, sh("rmmod krpc"));
}

/*
 * krpc loaded, an echo server and a client at depth 4, their pools with
 * @nr_bufs buffers and @nr_large large ones of @large bytes.  0 or -errno.
 */
static int pair_start(struct echo_srv *srv, struct echo_clnt *c,
		      uint32_t nr_bufs, uint32_t large, uint32_t nr_large)
{
	int ret = krpc_insmod("");

	if (ret)
		return ret;
	lib_large_size = large;
	lib_large_count = nr_large;
	ret = echo_start(srv, PORT, 4, nr_bufs);
	return ret ? ret : clnt_start(c, TEST_ADDR, PORT, nr_bufs, 0, 4);
}

/* Client and server gone, every call and file with them, krpc unloaded. */
static void pair_stop(struct __test_metadata *_metadata,
		      struct echo_srv *srv, struct echo_clnt *c)
{
	clnt_stop(c);
	EXPECT_EQ(0, echo_stop(srv));
	lib_large_size = 0;
	lib_large_count = 0;
	EXPECT_EQ(0, krpc_counter_wait("calls_live", 0, 5000));
	EXPECT_EQ(0, krpc_counter_wait("reqs_live", 0, 5000));
	EXPECT_EQ(0, krpc_counter_wait("files_open", 0, 5000));
	EXPECT_EQ(0, sh("rmmod krpc"));
}

FIXTURE(large) {
	struct echo_srv srv;
	struct echo_clnt c;
	long long copies;
};

FIXTURE_SETUP(large)
{
	ASSERT_EQ(0, pair_start(&self->srv, &self->c, NR_BUFS, LARGE,
				NR_LARGE));
	self->copies = krpc_counter("conn_copies");
}

FIXTURE_TEARDOWN(large)
{
	pair_stop(_metadata, &self->srv, &self->c);
}

TEST_F_TIMEOUT(large, echo_byte_for_byte, 600)
{
	static const uint32_t sizes[] = {
		BUF_SIZE - 1, BUF_SIZE, BUF_SIZE + 1, 2 * BUF_SIZE, 200000,
		LARGE - 4097, LARGE - 1, LARGE,
	};
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		ASSERT_EQ(0, echo_once(&self->c, i + 1, sizes[i]))
			TH_LOG("echo of %u bytes", sizes[i]);
	for (i = 0; i < 20; i++)
		ASSERT_EQ(0, echo_once(&self->c, i, (i * 104729) % (LARGE + 1)));
	EXPECT_EQ(0, self->srv.err);
	/* RDMA moves every payload between the pools; TCP copies on receive. */
	if (self->c.transport == KRPC_TRANSPORT_RDMA)
		EXPECT_EQ(self->copies, krpc_counter("conn_copies"));
}

/* A large reply lands in a large buffer of the caller's pool. */
TEST_F(large, reply_in_a_large_buffer)
{
	struct krpc_reply r;
	uint32_t tx;
	int ret;

	ASSERT_EQ(1, krpc_buf_alloc_large(self->c.k.fd, &self->c.pool, &tx, 1));
	fill(krpc_pool_buf(&self->c.pool, tx), 77, LARGE);
	ret = krpc_call_sync(&self->c.k, self->c.conn, M_ECHO, tx, LARGE,
			     LARGE, 0, &r);
	ASSERT_EQ((int)LARGE, ret);
	EXPECT_LE(self->c.pool.count, r.buf);
	EXPECT_NE(tx, r.buf);
	EXPECT_EQ(-1, check_pattern((char *)krpc_pool_buf(&self->c.pool, r.buf) +
				    r.offset, 77, LARGE));
	EXPECT_EQ(0, krpc_buf_free(self->c.k.fd, &self->c.pool, &r.buf, 1));
	EXPECT_EQ(0, krpc_buf_free(self->c.k.fd, &self->c.pool, &tx, 1));
}

TEST_F(large, too_big_is_einval)
{
	struct krpc_reply r;
	uint32_t tx, big;

	ASSERT_EQ(1, krpc_buf_alloc(self->c.k.fd, &self->c.pool, &tx, 1));
	ASSERT_EQ(1, krpc_buf_alloc_large(self->c.k.fd, &self->c.pool, &big, 1));
	/* A payload beyond its buffer, small or large. */
	EXPECT_EQ(-EINVAL, krpc_call_sync(&self->c.k, self->c.conn, M_ECHO,
					  tx, BUF_SIZE + 1, 0, 0, &r));
	EXPECT_EQ(-EINVAL, krpc_call_sync(&self->c.k, self->c.conn, M_ECHO,
					  big, LARGE + 1, 0, 0, &r));
	/* A reply larger than the pool's largest buffer. */
	EXPECT_EQ(-EINVAL, krpc_call_sync(&self->c.k, self->c.conn, M_ECHO,
					  tx, 64, LARGE + 1, 0, &r));
	/* The buffers are still ours: they can be freed, once. */
	EXPECT_EQ(0, krpc_buf_free(self->c.k.fd, &self->c.pool, &tx, 1));
	EXPECT_EQ(0, krpc_buf_free(self->c.k.fd, &self->c.pool, &big, 1));
	EXPECT_EQ(-EBUSY, krpc_buf_free(self->c.k.fd, &self->c.pool, &big, 1));
}

/*
 * Large buffers beyond the connection's max_msg (the module's 1 MiB): a
 * reply that needs more than one buffer gets a 2 MiB one for its room,
 * and the room the peer is offered stops at max_msg, which the peer
 * checks.  The echoes work, nothing is a protocol error.
 */
FIXTURE(room) {
	struct echo_srv srv;
	struct echo_clnt c;
};

FIXTURE_SETUP(room)
{
	ASSERT_EQ(0, pair_start(&self->srv, &self->c, 16, 2 * LARGE, 4));
}

FIXTURE_TEARDOWN(room)
{
	pair_stop(_metadata, &self->srv, &self->c);
}

TEST_F(room, reply_room_beyond_max_msg)
{
	struct echo_clnt *c = &self->c;
	struct krpc_reply r;
	uint32_t tx;
	int ret;

	ASSERT_EQ(1, krpc_buf_alloc_large(c->k.fd, &c->pool, &tx, 1));
	fill(krpc_pool_buf(&c->pool, tx), 5, 200000);
	ret = krpc_call_sync(&c->k, c->conn, M_ECHO, tx, 200000, 200000, 0,
			     &r);
	ASSERT_EQ(200000, ret);
	EXPECT_LE(c->pool.count, r.buf);
	EXPECT_EQ(-1, check_pattern((char *)krpc_pool_buf(&c->pool, r.buf) +
				    r.offset, 5, 200000));
	EXPECT_EQ(0, krpc_buf_free(c->k.fd, &c->pool, &r.buf, 1));
	/* A reply above max_msg cannot be asked for. */
	EXPECT_EQ(-EMSGSIZE, krpc_call_sync(&c->k, c->conn, M_ECHO, tx, 64,
					    LARGE + 1, 0, &r));
	EXPECT_EQ(0, krpc_buf_free(c->k.fd, &c->pool, &tx, 1));
	EXPECT_EQ(0, echo_once(c, 6, LARGE));
	EXPECT_EQ(0, krpc_counter("protocol_errors"));
	EXPECT_EQ(0, self->srv.err);
}

TEST_HARNESS_MAIN
