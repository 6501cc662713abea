// SPDX-License-Identifier: GPL-2.0
/*
 * Commands that io-wq workers issue: CALLs submitted with IOSQE_ASYNC, a
 * FETCH whose worker exits (idle io-wq workers do, after 5 s, while the
 * process lives) before a request comes, and a CONNECT (always issued by
 * a worker) that waits for a peer that never answers while its process is
 * killed, io_uring cancels it (IORING_OP_ASYNC_CANCEL) or its ring is
 * closed.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "uring_lib.h"
#include "kselftest_harness.h"

#define PORT		7104
/* On krpc0's subnet, and nobody's: packets to it go nowhere. */
#define SILENT_ADDR	"192.0.2.77"

/* A CONNECT command to @addr:@port on @pool, timeout @tmo_ms. */
static struct krpc_cmd_connect connect_cmd(const struct krpc_pool *pool,
					   const char *addr, uint16_t port,
					   uint32_t tmo_ms)
{
	struct krpc_cmd_connect cc = {
		.pool = pool->handle, .depth = 4,
		.connect_timeout_ms = tmo_ms,
		.transport = (uint32_t)env_transport(),
	};
	struct sockaddr_in sin;

	sin_of(&sin, addr, port);
	krpc_addr_set(&cc.addr, (struct sockaddr *)&sin, sizeof(sin));
	return cc;
}

FIXTURE(iowq) {
	int dummy;
};

FIXTURE_SETUP(iowq)
{
	ASSERT_EQ(0, krpc_insmod(""));
	ASSERT_LE(0, env_transport());
}

FIXTURE_TEARDOWN(iowq)
{
	EXPECT_EQ(0, krpc_counter_wait("calls_live", 0, 5000));
	EXPECT_EQ(0, krpc_counter_wait("reqs_live", 0, 5000));
	EXPECT_EQ(0, krpc_counter_wait("conns_open", 0, 10000));
	EXPECT_EQ(0, krpc_counter_wait("files_open", 0, 5000));
	EXPECT_EQ(0, sh("rmmod krpc"));
}

/*
 * Each CALL issued by a worker: the reply may complete the command (its
 * task work runs in the submitter) while the worker is still in the
 * command's issue.  Every echo comes back once, byte for byte.
 */
TEST_F_TIMEOUT(iowq, calls_issued_by_workers_echo, 120)
{
	enum { N = 48, ROUNDS = 4 };
	struct echo_srv e;
	struct echo_clnt c;
	uint32_t tx[N];
	unsigned int r, i, got;
	static unsigned char seen[N];

	ASSERT_EQ(0, echo_start(&e, PORT, 16, 256));
	ASSERT_EQ(0, clnt_start(&c, TEST_ADDR, PORT, 256, 0, 16));
	for (r = 0; r < ROUNDS; r++) {
		memset(seen, 0, sizeof(seen));
		for (i = 0; i < N; i++) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(c.k.ring);
			uint32_t len = 100 + 37 * i;

			ASSERT_NE(NULL, sqe);
			ASSERT_EQ(1, krpc_buf_alloc(c.k.fd, &c.pool, &tx[i], 1));
			fill(krpc_pool_buf(&c.pool, tx[i]), r * N + i, len);
			krpc_prep_call(&c.k, sqe, c.conn, M_ECHO, tx[i], len,
				       len, i, i);
			sqe->flags |= IOSQE_ASYNC;
		}
		ASSERT_EQ(N, io_uring_submit(c.k.ring));
		for (got = 0; got < N; got++) {
			struct io_uring_cqe *cqe;
			uint64_t res2;
			uint32_t rb, len;

			ASSERT_EQ(0, io_uring_wait_cqe(c.k.ring, &cqe));
			i = (unsigned int)cqe->user_data;
			ASSERT_GT(N, i);
			EXPECT_EQ(0, seen[i]);
			seen[i] = 1;
			len = 100 + 37 * i;
			res2 = krpc_cqe_res2(cqe);
			rb = KRPC_RES2_BUF(res2);
			EXPECT_EQ((int)len, cqe->res);
			ASSERT_NE(KRPC_BUF_NONE, rb);
			EXPECT_GT(0, check_pattern((char *)krpc_pool_buf(&c.pool, rb) +
						   KRPC_RES2_OFFSET(res2),
						   r * N + i, len));
			EXPECT_EQ(0, krpc_buf_free(c.k.fd, &c.pool, &rb, 1));
			EXPECT_EQ(0, krpc_buf_free(c.k.fd, &c.pool, &tx[i], 1));
			io_uring_cqe_seen(c.k.ring, cqe);
		}
	}
	clnt_stop(&c);
	EXPECT_EQ(0, echo_stop(&e));
}

/*
 * A FETCH issued by a second io-wq worker (the first one is busy in a
 * CONNECT that goes nowhere) stays parked after that worker left for
 * idleness, and completes with the request that comes later: the worker
 * was never the command's owner, the process is.
 */
TEST_F_TIMEOUT(iowq, fetch_outlives_the_worker_that_issued_it, 120)
{
	struct krpc_cmd_connect cc;
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct echo_srv e;
	struct echo_clnt c;
	struct krpc_pool cpool;
	bool fetched = false, connected = false;
	double t0;
	int ret;

	ASSERT_EQ(0, echo_srv_setup(&e, PORT, 1, 16, 0));
	ASSERT_EQ(0, krpc_pool_create(e.k.fd, NULL, BUF_SIZE, 16, &cpool));
	/* Worker one: a CONNECT to nobody, for up to 2 x 1 s + 1 s. */
	cc = connect_cmd(&cpool, SILENT_ADDR, PORT, 1000);
	sqe = io_uring_get_sqe(e.k.ring);
	ASSERT_NE(NULL, sqe);
	krpc_prep_cmd(&e.k, sqe, KRPC_CMD_CONNECT, &cc, sizeof(cc), 1);
	ASSERT_EQ(1, io_uring_submit(e.k.ring));
	usleep(300000);
	/* Worker two: the FETCH. */
	sqe = io_uring_get_sqe(e.k.ring);
	ASSERT_NE(NULL, sqe);
	krpc_prep_fetch(&e.k, sqe, e.srv.handle, 0, 2);
	sqe->flags |= IOSQE_ASYNC;
	ASSERT_EQ(1, io_uring_submit(e.k.ring));

	/* Idle workers leave after 5 s; the monitor looks every 100 ms. */
	t0 = lib_now();
	while (lib_now() < t0 + 9) {
		struct __kernel_timespec ts = { .tv_nsec = 200000000 };

		ret = io_uring_wait_cqe_timeout(e.k.ring, &cqe, &ts);
		if (ret == -ETIME || ret == -EINTR)
			continue;
		ASSERT_EQ(0, ret);
		if (cqe->user_data == 1) {
			/* Nobody answers: refused for its time, or unreachable. */
			EXPECT_GT(0, cqe->res);
			TH_LOG("CONNECT to nobody: %d after %.1f s", cqe->res,
			       lib_now() - t0);
			connected = true;
		} else {
			fetched = true;
			TH_LOG("FETCH completed early: %d after %.1f s",
			       cqe->res, lib_now() - t0);
		}
		io_uring_cqe_seen(e.k.ring, cqe);
	}
	EXPECT_TRUE(connected);
	ASSERT_FALSE(fetched);

	/* A request: the FETCH gets it. */
	ASSERT_EQ(0, clnt_start(&c, TEST_ADDR, PORT, 64, 0, 4));
	sqe = io_uring_get_sqe(c.k.ring);
	ASSERT_NE(NULL, sqe);
	krpc_prep_call(&c.k, sqe, c.conn, M_ECHO, KRPC_BUF_NONE, 0, 0, 0, 3);
	ASSERT_EQ(1, io_uring_submit(c.k.ring));
	ASSERT_EQ(0, io_uring_wait_cqe(e.k.ring, &cqe));
	EXPECT_EQ(2, cqe->user_data);
	EXPECT_EQ(0, cqe->res);
	io_uring_cqe_seen(e.k.ring, cqe);
	krpc_prep_reply(&e.k, io_uring_get_sqe(e.k.ring), e.srv.handle, 0,
			KRPC_BUF_NONE, 0, 0, 0, 0, 4);
	ASSERT_EQ(1, io_uring_submit(e.k.ring));
	ASSERT_EQ(0, io_uring_wait_cqe(e.k.ring, &cqe));
	EXPECT_EQ(4, cqe->user_data);
	EXPECT_EQ(0, cqe->res);
	io_uring_cqe_seen(e.k.ring, cqe);
	ASSERT_EQ(0, io_uring_wait_cqe(c.k.ring, &cqe));
	EXPECT_EQ(3, cqe->user_data);
	EXPECT_EQ(0, cqe->res);
	io_uring_cqe_seen(c.k.ring, cqe);

	clnt_stop(&c);
	EXPECT_EQ(0, krpc_srv_close(e.k.fd, &e.srv));
	EXPECT_EQ(0, krpc_pool_destroy(e.k.fd, &cpool));
	EXPECT_EQ(0, krpc_pool_destroy(e.k.fd, &e.pool));
	krpc_close(&e.k);
	free(e.last);
}

/*
 * A process killed in a CONNECT that may wait an hour for a peer that
 * never answers exits at once, and the attempt leaves nothing behind.
 */
TEST_F_TIMEOUT(iowq, killed_in_a_long_connect, 120)
{
	int ready[2], status;
	double t0;
	char b;
	pid_t pid;

	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct krpc_cmd_connect cc;
		struct krpc_pool pool;
		struct krpc k;
		int r;

		if (krpc_open(&k, 8, 0) ||
		    krpc_pool_create(k.fd, NULL, BUF_SIZE, 16, &pool))
			_exit(1);
		cc = connect_cmd(&pool, SILENT_ADDR, PORT, KRPC_TIMEOUT_MAX_MS);
		if (write(ready[1], "r", 1) != 1)
			_exit(2);
		r = krpc_cmd_sync(&k, KRPC_CMD_CONNECT, &cc, sizeof(cc), NULL);
		fprintf(stderr, "child: CONNECT to nobody returned %d\n", r);
		_exit(3);
	}
	close(ready[1]);
	ASSERT_EQ(1, read(ready[0], &b, 1));
	/* The connection exists: the CONNECT waits. */
	ASSERT_EQ(1, krpc_counter_wait("conns_open", 1, 10000));
	usleep(500000);
	t0 = lib_now();
	ASSERT_EQ(0, kill(pid, SIGKILL));
	status = lib_reap(pid, 20);
	ASSERT_NE(-1, status) TH_LOG("killed process did not exit");
	EXPECT_TRUE(WIFSIGNALED(status));
	TH_LOG("gone after %.2f s", lib_now() - t0);
	EXPECT_EQ(0, krpc_counter_wait("conns_open", 0, 10000));
}

/*
 * A ring on a new file, a pool, and a CONNECT (user_data 1) to nobody that
 * may wait an hour, waiting.  Return 0, or where it failed.
 */
static int long_connect_start(struct krpc *k, struct krpc_pool *pool)
{
	struct krpc_cmd_connect cc;
	struct io_uring_sqe *sqe;

	if (krpc_open(k, 8, 0))
		return 1;
	if (krpc_pool_create(k->fd, NULL, BUF_SIZE, 16, pool))
		return 2;
	cc = connect_cmd(pool, SILENT_ADDR, PORT, KRPC_TIMEOUT_MAX_MS);
	sqe = io_uring_get_sqe(k->ring);
	krpc_prep_cmd(k, sqe, KRPC_CMD_CONNECT, &cc, sizeof(cc), 1);
	if (io_uring_submit(k->ring) != 1)
		return 3;
	/* The connection exists: the CONNECT waits. */
	if (krpc_counter_wait("conns_open", 1, 10000) != 1)
		return 4;
	usleep(500000);
	return 0;
}

/*
 * io_uring's cancellation reaches a CONNECT that waits in an io-wq worker
 * for a peer that never answers: IORING_OP_ASYNC_CANCEL ends it with
 * -EINTR at once, and the attempt leaves nothing behind.  The cancel's own
 * result is io_uring's: -EALREADY (found running, signalled), or -ENOENT
 * when the CONNECT has already ended by io_uring's second look (after
 * -EALREADY, io_try_cancel() goes on to other request types, finds none,
 * and __io_async_cancel() searches the io-wq again).
 */
TEST_F_TIMEOUT(iowq, long_connect_cancelled, 120)
{
	struct __kernel_timespec ts = { .tv_sec = 20 };
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	int res[2] = { 1, 1 };
	struct krpc_pool pool;
	struct krpc k;
	double t0;
	int i;

	ASSERT_EQ(0, long_connect_start(&k, &pool));
	t0 = lib_now();
	sqe = io_uring_get_sqe(k.ring);
	io_uring_prep_cancel64(sqe, 1, 0);
	sqe->user_data = 2;
	ASSERT_EQ(1, io_uring_submit(k.ring));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, io_uring_wait_cqe_timeout(k.ring, &cqe, &ts))
			TH_LOG("no completion %d s after the cancel",
			       (int)ts.tv_sec);
		ASSERT_TRUE(cqe->user_data == 1 || cqe->user_data == 2);
		res[cqe->user_data - 1] = cqe->res;
		io_uring_cqe_seen(k.ring, cqe);
	}
	TH_LOG("CONNECT ended %.2f s after the cancel", lib_now() - t0);
	EXPECT_EQ(-EINTR, res[0]);
	EXPECT_TRUE(res[1] == -EALREADY || res[1] == -ENOENT)
		TH_LOG("ASYNC_CANCEL: %d", res[1]);
	EXPECT_EQ(0, krpc_counter_wait("conns_open", 0, 10000));
	EXPECT_EQ(0, krpc_pool_destroy(k.fd, &pool));
	krpc_close(&k);
}

/*
 * The ring closed while a CONNECT waits (the process lives on): io_uring's
 * exit cancels the worker's command, and the attempt, the file and the
 * pool go.
 */
TEST_F_TIMEOUT(iowq, ring_closed_in_a_long_connect, 120)
{
	struct krpc_pool pool;
	struct krpc k;
	double t0;

	ASSERT_EQ(0, long_connect_start(&k, &pool));
	t0 = lib_now();
	/* The pool's mapping keeps the file; the CONNECT keeps the pool. */
	krpc_close(&k);
	EXPECT_EQ(0, krpc_counter_wait("conns_open", 0, 20000));
	EXPECT_EQ(0, munmap(pool.base, pool.length));
	EXPECT_EQ(0, krpc_counter_wait("files_open", 0, 10000));
	TH_LOG("attempt and file gone %.2f s after the ring's exit",
	       lib_now() - t0);
}

TEST_HARNESS_MAIN
