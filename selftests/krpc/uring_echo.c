// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace client <-> userspace server over /dev/krpc and io_uring, on
 * rings set up in each supported way: echo of every size from 0 to the
 * buffer size, checked byte for byte; thousands of calls in flight from
 * one ring, each completed exactly once; kernel-enforced timeouts; CANCEL;
 * credits returned on calls and replies, without CREDIT messages, one call
 * at a time or a depth at once; replies the caller keeps until its pool
 * is empty make the next ones wait for a buffer, not fail.
 * The server runs in a thread on a /dev/krpc file and ring of its own.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "uring_lib.h"
#include "kselftest_harness.h"

#define PORT	7101

/* Client and server gone, every call, request and file with them. */
static void pair_stop(struct __test_metadata *_metadata,
		      struct echo_srv *srv, struct echo_clnt *c)
{
	clnt_stop(c);
	EXPECT_EQ(0, echo_stop(srv));
	EXPECT_EQ(0, krpc_counter_wait("calls_live", 0, 5000));
	EXPECT_EQ(0, krpc_counter_wait("reqs_live", 0, 5000));
	EXPECT_EQ(0, krpc_counter_wait("files_open", 0, 5000));
	EXPECT_EQ(0, sh("rmmod krpc"));
}

FIXTURE(uecho) {
	struct echo_srv srv;
	struct echo_clnt c;
};

FIXTURE_VARIANT(uecho) {
	unsigned int ring_flags;
};

FIXTURE_VARIANT_ADD(uecho, plain) { .ring_flags = 0 };
FIXTURE_VARIANT_ADD(uecho, sqpoll) { .ring_flags = KRPC_RING_SQPOLL };
FIXTURE_VARIANT_ADD(uecho, defer_taskrun) { .ring_flags = KRPC_RING_DEFER };

FIXTURE_SETUP(uecho)
{
	ASSERT_EQ(0, krpc_insmod(""));
	ASSERT_EQ(0, echo_start(&self->srv, PORT, 32, 512));
	ASSERT_EQ(0, clnt_start(&self->c, TEST_ADDR, PORT, 256,
				variant->ring_flags, 16));
}

FIXTURE_TEARDOWN(uecho)
{
	pair_stop(_metadata, &self->srv, &self->c);
}

TEST_F_TIMEOUT(uecho, all_sizes_byte_for_byte, 600)
{
	static const uint32_t sizes[] = {
		0, 1, 2, 3, 63, 64, 65, 100, 1000, 2048, 4000, 4032, 4033,
		4095, 4096, 4097, 8191, 8192, 16384, 32768, 65000, 65535,
		65536,
	};
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		ASSERT_EQ(0, echo_once(&self->c, i + 1, sizes[i]))
			TH_LOG("echo of %u bytes", sizes[i]);
	for (i = 0; i < 200; i++)
		ASSERT_EQ(0, echo_once(&self->c, i, (i * 7919) % 65537));
	EXPECT_EQ(0, self->srv.err);
}

TEST_F(uecho, too_big_is_einval)
{
	uint32_t tx;
	struct krpc_reply r;

	ASSERT_EQ(1, krpc_buf_alloc(self->c.k.fd, &self->c.pool, &tx, 1));
	EXPECT_EQ(-EINVAL, krpc_call_sync(&self->c.k, self->c.conn, M_ECHO,
					  tx, BUF_SIZE + 1, 0, 0, &r));
	/* The buffer is still ours: it can be freed, once. */
	EXPECT_EQ(0, krpc_buf_free(self->c.k.fd, &self->c.pool, &tx, 1));
	EXPECT_EQ(-EBUSY, krpc_buf_free(self->c.k.fd, &self->c.pool, &tx, 1));
}

/* Thousands of calls in flight from one ring, each completed once. */
TEST_F_TIMEOUT(uecho, thousands_in_flight, 600)
{
	enum { N = 3000, NDATA = 64 };
	struct io_uring *ring = self->c.k.ring;
	static unsigned char seen[N];
	uint32_t tx[NDATA];
	unsigned int i, done = 0, submitted = 0;

	memset(seen, 0, sizeof(seen));
	ASSERT_EQ(NDATA, krpc_buf_alloc(self->c.k.fd, &self->c.pool, tx, NDATA));
	for (i = 0; i < NDATA; i++)
		fill(krpc_pool_buf(&self->c.pool, tx[i]), i, 1000 + i);

	while (done < N) {
		struct io_uring_cqe *cqe;

		while (submitted < N) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

			if (!sqe)
				break;
			if (submitted < NDATA)
				krpc_prep_call(&self->c.k, sqe, self->c.conn,
					       M_ECHO, tx[submitted],
					       1000 + submitted, 2000,
					       submitted, submitted);
			else
				krpc_prep_call(&self->c.k, sqe, self->c.conn,
					       M_ECHO, KRPC_BUF_NONE, 0, 0,
					       submitted, submitted);
			submitted++;
		}
		ASSERT_LE(0, io_uring_submit_and_wait(ring, 1));
		while (!io_uring_peek_cqe(ring, &cqe)) {
			uint64_t ud = cqe->user_data, res2 = krpc_cqe_res2(cqe);
			int res = cqe->res;

			io_uring_cqe_seen(ring, cqe);
			ASSERT_GT(N, ud);
			ASSERT_EQ(0, seen[ud]);
			seen[ud] = 1;
			done++;
			if (ud < NDATA) {
				uint32_t rb = KRPC_RES2_BUF(res2);

				ASSERT_EQ(1000 + ud, res);
				ASSERT_NE(KRPC_BUF_NONE, rb);
				ASSERT_EQ(-1, check_pattern((char *)krpc_pool_buf(
					&self->c.pool, rb) + KRPC_RES2_OFFSET(res2),
					ud, 1000 + ud));
				ASSERT_EQ(0, krpc_buf_free(self->c.k.fd,
							   &self->c.pool, &rb, 1));
			} else {
				ASSERT_EQ(0, res);
				ASSERT_EQ(KRPC_BUF_NONE, KRPC_RES2_BUF(res2));
			}
		}
	}
	/* Every request buffer came back with its completion. */
	EXPECT_EQ(0, krpc_buf_free(self->c.k.fd, &self->c.pool, tx, NDATA));
	EXPECT_EQ(N, self->srv.served);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/*
 * Credits ride on calls and replies: one echo at a time needs no CREDIT
 * message but those of the keepalive timer, at most one per side per tick
 * (half of ka_interval_ms, here 50 ms).  A server's reply leaves after its
 * next receive; when updates were due at 2 credits owed, a tick's update
 * made the peer owe 2 (the update's receive and the next call's) and each
 * side then sent a CREDIT after every call or reply.
 */
TEST_F_TIMEOUT(uecho, credits_ride_on_calls_and_replies, 300)
{
	long long before, after, t0, ms, allowed;
	unsigned int i;

	if (self->c.transport != KRPC_TRANSPORT_RDMA)
		SKIP(return, "credits are RDMA's (TCP has the socket's window)");
	ASSERT_EQ(0, sh("echo 50 > /sys/module/krpc/parameters/ka_interval_ms"));
	/* The connection's timer, armed for 500 ms, re-reads the interval. */
	usleep(600 * 1000);
	before = krpc_counter("conn_credit_msgs");
	ASSERT_LE(0, before);
	t0 = now_ms();
	for (i = 0; i < 1000; i++)
		ASSERT_EQ(0, echo_once(&self->c, i, 64));
	ms = now_ms() - t0;
	after = krpc_counter("conn_credit_msgs");
	allowed = 2 * (ms / 25 + 2);
	TH_LOG("1000 echoes in %lld ms: %lld CREDIT messages (at most %lld)",
	       ms, after - before, allowed);
	EXPECT_LE(after - before, allowed);
	EXPECT_EQ(0, self->srv.err);
}

/*
 * A depth of calls at once, then all their replies, then the next depth:
 * the client takes a depth of replies before it sends again, and the
 * server takes calls faster than its replies leave.  Neither peer ever
 * needs more credits than the next call or reply returns (peer_spare() in
 * rdma.c), so no CREDIT is due but the keepalive timer's, at most one per
 * side per tick (half of ka_interval_ms, 500 ms).  With updates due at
 * half the receives whatever the peer held, the client sent one in every
 * batch.
 */
TEST_F_TIMEOUT(uecho, credits_ride_on_batches_of_a_depth, 300)
{
	enum { DEPTH = 16, BATCHES = 100 };
	struct io_uring *ring = self->c.k.ring;
	long long before, after, t0, ms, allowed;
	unsigned int b, i;

	if (self->c.transport != KRPC_TRANSPORT_RDMA)
		SKIP(return, "credits are RDMA's (TCP has the socket's window)");
	before = krpc_counter("conn_credit_msgs");
	ASSERT_LE(0, before);
	t0 = now_ms();
	for (b = 0; b < BATCHES; b++) {
		for (i = 0; i < DEPTH; i++) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

			ASSERT_NE(NULL, sqe);
			krpc_prep_call(&self->c.k, sqe, self->c.conn, M_ECHO,
				       KRPC_BUF_NONE, 0, 0, i, b * DEPTH + i);
		}
		ASSERT_EQ(DEPTH, io_uring_submit(ring));
		for (i = 0; i < DEPTH; i++) {
			struct io_uring_cqe *cqe;

			ASSERT_EQ(0, io_uring_wait_cqe(ring, &cqe));
			EXPECT_EQ(0, cqe->res);
			EXPECT_EQ(b, cqe->user_data / DEPTH);
			io_uring_cqe_seen(ring, cqe);
		}
	}
	ms = now_ms() - t0;
	after = krpc_counter("conn_credit_msgs");
	allowed = 2 * (ms / 500 + 2);
	TH_LOG("%d batches of %d calls in %lld ms: %lld CREDIT messages (at most %lld)",
	       BATCHES, DEPTH, ms, after - before, allowed);
	EXPECT_LE(after - before, allowed);
	EXPECT_EQ(0, self->srv.err);
}

TEST_F(uecho, timeout_is_enforced_by_the_kernel)
{
	struct krpc_cmd_call c = { .conn = self->c.conn, .method = M_HOLD,
				   .buf = KRPC_BUF_NONE, .timeout_ms = 300 };
	uint64_t res2;

	EXPECT_EQ(-ETIMEDOUT, krpc_cmd_sync(&self->c.k, KRPC_CMD_CALL, &c,
					    sizeof(c), &res2));
	EXPECT_EQ(KRPC_BUF_NONE, KRPC_RES2_BUF(res2));
	/* The connection still works. */
	EXPECT_EQ(0, echo_once(&self->c, 9, 100));
}

TEST_F(uecho, cancel)
{
	struct krpc_cmd_call call = { .conn = self->c.conn, .method = M_HOLD,
				      .tag = 77, .timeout_ms = 60000 };
	struct krpc_cmd_cancel cc = { .conn = self->c.conn, .tag = 77 };
	struct io_uring *ring = self->c.k.ring;
	struct io_uring_cqe *cqe;
	uint32_t tx;
	int i, got_call = 0, got_cancel = 0;

	ASSERT_EQ(1, krpc_buf_alloc(self->c.k.fd, &self->c.pool, &tx, 1));
	call.buf = tx;
	call.len = 5000;
	krpc_prep_cmd(&self->c.k, io_uring_get_sqe(ring), KRPC_CMD_CALL,
		      &call, sizeof(call), 1);
	ASSERT_EQ(1, io_uring_submit(ring));
	/* The request is held at the server: give it time to get there. */
	usleep(200000);
	EXPECT_EQ(-EBUSY, krpc_buf_free(self->c.k.fd, &self->c.pool, &tx, 1));
	krpc_prep_cmd(&self->c.k, io_uring_get_sqe(ring), KRPC_CMD_CANCEL,
		      &cc, sizeof(cc), 2);
	ASSERT_EQ(1, io_uring_submit(ring));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, io_uring_wait_cqe(ring, &cqe));
		if (cqe->user_data == 1) {
			EXPECT_EQ(-ECANCELED, cqe->res);
			got_call++;
		} else {
			EXPECT_EQ(1, cqe->res);
			got_cancel++;
		}
		io_uring_cqe_seen(ring, cqe);
	}
	EXPECT_EQ(1, got_call);
	EXPECT_EQ(1, got_cancel);
	/* Cancelled calls return their buffer too. */
	EXPECT_EQ(0, krpc_buf_free(self->c.k.fd, &self->c.pool, &tx, 1));
	EXPECT_EQ(-ENOENT, krpc_cmd_sync(&self->c.k, KRPC_CMD_CANCEL, &cc,
					 sizeof(cc), NULL));
}

/*
 * A caller that keeps its replies fills its own pool.  The next reply then
 * waits for a buffer to land in, counted once in the connection's
 * pool_waits (over TCP it stops reading; over RDMA its receives go
 * unrefilled and the server is held by the credits), and no call fails,
 * for longer than
 * the keepalive timeout: the two sides still hear from each other.  Once
 * the kept replies are freed, the waiting ones land, byte for byte.
 */
#define HELD_PORT	(PORT + 1)
#define HELD_BUFS	32U
#define HELD_DEPTH	4U
#define HELD_LEN	64U
/* Credits a call, reply or one-way message leaves (protocol.rst). */
#define HELD_CTRL	2U

FIXTURE(held) {
	struct echo_srv srv;
	struct echo_clnt c;
};

FIXTURE_SETUP(held)
{
	ASSERT_EQ(0, krpc_insmod(""));
	ASSERT_EQ(0, echo_start(&self->srv, HELD_PORT, 32, 512));
	ASSERT_EQ(0, clnt_start(&self->c, TEST_ADDR, HELD_PORT, HELD_BUFS, 0,
				HELD_DEPTH));
}

FIXTURE_TEARDOWN(held)
{
	pair_stop(_metadata, &self->srv, &self->c);
}

/*
 * Numeric field @key of the (one) connection of @role ("client" or
 * "server") in debugfs krpc/conns, or -1.
 */
static long long conn_field(const char *role, const char *key)
{
	char line[1024], pat[64], rpat[32], *p;
	long long v = -1;
	FILE *f = fopen("/sys/kernel/debug/krpc/conns", "r");

	if (!f)
		return -1;
	snprintf(pat, sizeof(pat), " %s=", key);
	snprintf(rpat, sizeof(rpat), " role=%s ", role);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, rpat) && (p = strstr(line, pat))) {
			v = atoll(p + strlen(pat));
			break;
		}
	fclose(f);
	return v;
}

/* Module parameter @name of krpc, or -1. */
static int krpc_param(const char *name)
{
	char path[128];
	int v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/krpc/parameters/%s", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%d", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/*
 * Wait up to @ms for a completion of a call of @c: 1 with its user data
 * (a slot), result and buffer, 0 if none came in time, -errno.
 */
static int held_reap(struct echo_clnt *c, int ms, uint32_t *slot, int *res,
		     uint32_t *buf)
{
	struct __kernel_timespec ts = { .tv_sec = ms / 1000,
					.tv_nsec = (ms % 1000) * 1000000L };
	struct io_uring_cqe *cqe;
	int ret;

	ret = io_uring_wait_cqe_timeout(c->k.ring, &cqe, &ts);
	if (ret == -ETIME)
		return 0;
	if (ret)
		return ret;
	*slot = (uint32_t)cqe->user_data;
	*res = cqe->res;
	*buf = KRPC_RES2_BUF(krpc_cqe_res2(cqe));
	if (*buf != KRPC_BUF_NONE && *res == (int)HELD_LEN &&
	    check_pattern((char *)krpc_pool_buf(&c->pool, *buf) +
			  KRPC_RES2_OFFSET(krpc_cqe_res2(cqe)), *slot,
			  HELD_LEN) >= 0)
		*res = -EBADMSG;
	io_uring_cqe_seen(c->k.ring, cqe);
	return 1;
}

TEST_F_TIMEOUT(held, kept_replies_make_the_next_wait, 300)
{
	struct echo_clnt *c = &self->c;
	uint32_t tx[HELD_DEPTH], kept[HELD_BUFS], nkept = 0, waiting = 0;
	uint32_t slot, buf, i, n = HELD_DEPTH, round;
	bool tcp = c->transport == KRPC_TRANSPORT_TCP;
	int res, ret, ka_ms;

	ASSERT_EQ(HELD_DEPTH, krpc_buf_alloc(c->k.fd, &c->pool, tx, HELD_DEPTH));
	for (i = 0; i < HELD_DEPTH; i++)
		fill(krpc_pool_buf(&c->pool, tx[i]), i, HELD_LEN);
	ASSERT_EQ(0, conn_field("client", "pool_waits"));
	/* Rounds of a depth of echoes, every reply kept, until one stalls. */
	for (round = 0; n == HELD_DEPTH; round++) {
		ASSERT_GE(HELD_BUFS / HELD_DEPTH + 1, round)
			TH_LOG("%u replies kept and none waits", nkept);
		for (i = 0; i < HELD_DEPTH; i++)
			krpc_prep_call(&c->k, io_uring_get_sqe(c->k.ring), c->conn,
				       M_ECHO, tx[i], HELD_LEN, HELD_LEN, 0, i);
		ASSERT_EQ((int)HELD_DEPTH, io_uring_submit(c->k.ring));
		for (n = 0; n < HELD_DEPTH; n++) {
			ret = held_reap(c, 2000, &slot, &res, &buf);
			ASSERT_LE(0, ret);
			if (!ret)
				break;
			ASSERT_EQ((int)HELD_LEN, res) TH_LOG("slot %u", slot);
			ASSERT_GT(HELD_BUFS, nkept);
			kept[nkept++] = buf;
		}
	}
	waiting = HELD_DEPTH - n;
	TH_LOG("%u replies kept, %u calls wait for a buffer", nkept, waiting);
	/*
	 * All of the pool but the request buffers holds replies; over RDMA
	 * but the receives the server's data leaves to control messages.
	 */
	EXPECT_EQ(HELD_BUFS - HELD_DEPTH - (tcp ? 0 : HELD_CTRL), nkept);
	/*
	 * Still waiting, none failed, both sides up, past ka_timeout_ms:
	 * the waiting side is the slow one, not a dead peer, and the other
	 * side still hears from it.
	 */
	ka_ms = krpc_param("ka_timeout_ms");
	ASSERT_LT(0, ka_ms);
	ASSERT_EQ(0, held_reap(c, ka_ms + 1000, &slot, &res, &buf));
	EXPECT_EQ(0, conn_field("client", "reason"));
	EXPECT_EQ(0, conn_field("server", "reason"));
	EXPECT_EQ(1, conn_field("client", "pool_waits"));
	EXPECT_EQ(0, krpc_buf_free(c->k.fd, &c->pool, kept, nkept));
	for (i = 0; i < waiting; i++) {
		ASSERT_EQ(1, held_reap(c, 10000, &slot, &res, &buf))
			TH_LOG("%u of %u waiting calls completed", i, waiting);
		EXPECT_EQ((int)HELD_LEN, res) TH_LOG("slot %u", slot);
		if (buf != KRPC_BUF_NONE)
			EXPECT_EQ(0, krpc_buf_free(c->k.fd, &c->pool, &buf, 1));
	}
	EXPECT_EQ(0, krpc_buf_free(c->k.fd, &c->pool, tx, HELD_DEPTH));
	/* The connection goes on: one wait in all, echoes work. */
	EXPECT_EQ(0, echo_once(c, 9, 1000));
	EXPECT_EQ(1, conn_field("client", "pool_waits"));
	EXPECT_EQ(0, self->srv.err);
}

TEST_HARNESS_MAIN
