// SPDX-License-Identifier: GPL-2.0
/*
 * SIGKILL of a userspace client and of a userspace server with commands in
 * flight: the process dies without hanging (on 6.1 through the dying-task
 * monitor, on 6.12 through the uring_cmd cancel hook), nothing is left
 * behind (counters back to zero, krpc unloads), and the peer's calls fail
 * cleanly, each exactly once; also a server whose replies its client holds
 * back.  And a server that execs with FETCHes parked: the exec completes.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "uring_lib.h"
#include "kselftest_harness.h"

#define PORT	7103

FIXTURE(kill) {
	int dummy;
};

FIXTURE_VARIANT(kill) {
	unsigned int ring_flags;
};

FIXTURE_VARIANT_ADD(kill, plain) { .ring_flags = 0 };
FIXTURE_VARIANT_ADD(kill, sqpoll) { .ring_flags = KRPC_RING_SQPOLL };

FIXTURE_SETUP(kill)
{
	ASSERT_EQ(0, krpc_insmod(""));
}

FIXTURE_TEARDOWN(kill)
{
	EXPECT_EQ(0, krpc_counter_wait("calls_live", 0, 5000));
	EXPECT_EQ(0, krpc_counter_wait("reqs_live", 0, 5000));
	EXPECT_EQ(0, krpc_counter_wait("files_open", 0, 5000));
	EXPECT_EQ(0, sh("rmmod krpc"));
}

/* Submit @n calls of @method; request buffers for the first @ndata. */
static int submit_calls(struct echo_clnt *c, uint32_t method, unsigned int n,
			unsigned int ndata, uint64_t ud_base)
{
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(c->k.ring);
		uint32_t tx = KRPC_BUF_NONE, len = 0;

		if (!sqe)
			return -EBUSY;
		if (i < ndata) {
			if (krpc_buf_alloc(c->k.fd, &c->pool, &tx, 1) != 1)
				return -ENOBUFS;
			len = 3000 + i;
			fill(krpc_pool_buf(&c->pool, tx), i, len);
		}
		krpc_prep_call(&c->k, sqe, c->conn, method, tx, len,
			       method == M_HOLD ? 0 : len, i, ud_base + i);
	}
	/* With SQPOLL the count includes SQEs the kernel has yet to take. */
	ret = io_uring_submit(c->k.ring);
	return ret < 0 ? ret : (int)n;
}

/* A process serving echoes on @port; returns once it listens, or -1. */
static pid_t server_fork(uint16_t port, unsigned int ring_flags)
{
	int ready[2];
	pid_t pid;
	char b;

	if (pipe(ready))
		return -1;
	pid = fork();
	if (!pid) {
		struct echo_srv e;

		if (echo_srv_setup(&e, port, 16, 256, ring_flags))
			_exit(1);
		if (write(ready[1], "r", 1) != 1)
			_exit(2);
		echo_serve(&e);
		_exit(3);
	}
	close(ready[1]);
	if (pid > 0 && read(ready[0], &b, 1) != 1) {
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(ready[0]);
	return pid;
}

TEST_F_TIMEOUT(kill, server_killed_with_requests_held, 120)
{
	enum { NHOLD = 12, NECHO = 20 };
	struct echo_clnt c;
	unsigned int got = 0, held_fail = 0;
	static unsigned char seen[NHOLD + NECHO];
	int status;
	pid_t pid;

	memset(seen, 0, sizeof(seen));
	pid = server_fork(PORT, variant->ring_flags);
	ASSERT_LT(0, pid);
	ASSERT_EQ(0, clnt_start(&c, TEST_ADDR, PORT, 128, 0, 32));
	ASSERT_EQ(NHOLD, submit_calls(&c, M_HOLD, NHOLD, NHOLD, 0));
	ASSERT_EQ(NECHO, submit_calls(&c, M_ECHO, NECHO, 4, NHOLD));
	/* The echoes complete; the holds are parked in the server. */
	while (got < NECHO) {
		struct io_uring_cqe *cqe;

		ASSERT_EQ(0, io_uring_wait_cqe(c.k.ring, &cqe));
		ASSERT_LE(NHOLD, cqe->user_data);
		EXPECT_LE(0, cqe->res);
		if (KRPC_RES2_BUF(krpc_cqe_res2(cqe)) != KRPC_BUF_NONE) {
			uint32_t rb = KRPC_RES2_BUF(krpc_cqe_res2(cqe));

			EXPECT_EQ(0, krpc_buf_free(c.k.fd, &c.pool, &rb, 1));
		}
		seen[cqe->user_data] = 1;
		io_uring_cqe_seen(c.k.ring, cqe);
		got++;
	}
	usleep(300000);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	status = lib_reap(pid, 20);
	ASSERT_NE(-1, status) TH_LOG("killed server did not exit");
	EXPECT_TRUE(WIFSIGNALED(status));

	/* Each held call fails once, cleanly. */
	got = 0;
	while (got < NHOLD) {
		struct io_uring_cqe *cqe;

		ASSERT_EQ(0, io_uring_wait_cqe(c.k.ring, &cqe));
		ASSERT_GT(NHOLD, cqe->user_data);
		EXPECT_EQ(0, seen[cqe->user_data]);
		seen[cqe->user_data] = 1;
		if (cqe->res == -ESHUTDOWN || cqe->res == -ECONNRESET)
			held_fail++;
		else
			TH_LOG("held call %llu: %d",
			       (unsigned long long)cqe->user_data, cqe->res);
		EXPECT_EQ(KRPC_BUF_NONE, KRPC_RES2_BUF(krpc_cqe_res2(cqe)));
		io_uring_cqe_seen(c.k.ring, cqe);
		got++;
	}
	EXPECT_EQ(NHOLD, held_fail);
	/* Every request buffer is ours again. */
	{
		uint32_t n = 0, bufs[128];
		int r = krpc_buf_alloc(c.k.fd, &c.pool, bufs, 128);

		ASSERT_LT(0, r);
		n = r;
		EXPECT_EQ(0, krpc_buf_free(c.k.fd, &c.pool, bufs, n));
	}
	EXPECT_EQ(0, krpc_counter_wait("reqs_live", 0, 5000));
	clnt_stop(&c);
}

/*
 * A server killed while its client holds the replies back.  The client
 * keeps every reply until its pool is spent: over RDMA its receives go
 * unrefilled, so the server's next replies wait for credits, their REPLY
 * commands parked while the transport holds their buffers.  The kill must
 * not leave the server behind: those REPLYs are cancelled, their buffers
 * left to the transport, and the file's release resets the connection, so
 * the calls still waiting fail, each once, without a buffer.  Before, the
 * process died but its ring's exit waited for the REPLYs (6.12: in a
 * kworker), holding the file, its server and the connection for as long
 * as the client kept its buffers; then it answered the waiting calls.
 */
TEST_F_TIMEOUT(kill, server_killed_with_replies_held_back, 120)
{
	enum { BUFS = 32, DEPTH = 4, LEN = 64 };
	uint32_t tx[DEPTH], kept[BUFS], nkept = 0;
	unsigned int i, n = DEPTH, round, waiting;
	struct __kernel_timespec ts = { .tv_sec = 2 };
	struct io_uring_cqe *cqe;
	struct echo_clnt c;
	int status;
	pid_t pid;

	pid = server_fork(PORT + 1, variant->ring_flags);
	ASSERT_LT(0, pid);
	ASSERT_EQ(0, clnt_start(&c, TEST_ADDR, PORT + 1, BUFS, 0, DEPTH));
	ASSERT_EQ(DEPTH, krpc_buf_alloc(c.k.fd, &c.pool, tx, DEPTH));
	for (i = 0; i < DEPTH; i++)
		fill(krpc_pool_buf(&c.pool, tx[i]), i, LEN);
	/* Rounds of a depth of echoes, every reply kept, until one waits. */
	for (round = 0; n == DEPTH; round++) {
		ASSERT_GE(BUFS / DEPTH + 1, round)
			TH_LOG("%u replies kept and none waits", nkept);
		for (i = 0; i < DEPTH; i++)
			krpc_prep_call(&c.k, io_uring_get_sqe(c.k.ring), c.conn,
				       M_ECHO, tx[i], LEN, LEN, 0, i);
		ASSERT_EQ(DEPTH, io_uring_submit(c.k.ring));
		for (n = 0; n < DEPTH; n++) {
			int ret = io_uring_wait_cqe_timeout(c.k.ring, &cqe, &ts);

			if (ret == -ETIME)
				break;
			ASSERT_EQ(0, ret);
			ASSERT_EQ(LEN, cqe->res);
			ASSERT_GT(BUFS, nkept);
			kept[nkept++] = KRPC_RES2_BUF(krpc_cqe_res2(cqe));
			io_uring_cqe_seen(c.k.ring, cqe);
		}
	}
	waiting = DEPTH - n;
	TH_LOG("%u replies kept, %u calls wait", nkept, waiting);

	ASSERT_EQ(0, kill(pid, SIGKILL));
	status = lib_reap(pid, 20);
	ASSERT_NE(-1, status) TH_LOG("killed server did not exit");
	EXPECT_TRUE(WIFSIGNALED(status));

	/*
	 * Its file goes with it, and its connection: the waiting calls
	 * fail, each once, while the client still keeps its replies.
	 */
	for (i = 0; i < waiting; i++) {
		int ret;

		ts.tv_sec = 10;
		ret = io_uring_wait_cqe_timeout(c.k.ring, &cqe, &ts);
		EXPECT_NE(-ETIME, ret)
			TH_LOG("%u of %u waiting calls ended: the server's file outlived it",
			       i, waiting);
		if (ret == -ETIME && nkept) {
			/* Let the leftover server answer, to clean up. */
			EXPECT_EQ(0, krpc_buf_free(c.k.fd, &c.pool, kept, nkept));
			nkept = 0;
			i--;
			continue;
		}
		ASSERT_EQ(0, ret);
		EXPECT_TRUE(cqe->res == -ESHUTDOWN || cqe->res == -ECONNRESET)
			TH_LOG("call %llu: %d",
			       (unsigned long long)cqe->user_data, cqe->res);
		EXPECT_EQ(KRPC_BUF_NONE, KRPC_RES2_BUF(krpc_cqe_res2(cqe)));
		io_uring_cqe_seen(c.k.ring, cqe);
	}
	if (nkept)
		EXPECT_EQ(0, krpc_buf_free(c.k.fd, &c.pool, kept, nkept));
	EXPECT_EQ(0, krpc_buf_free(c.k.fd, &c.pool, tx, DEPTH));
	EXPECT_EQ(0, krpc_counter_wait("reqs_live", 0, 5000));
	clnt_stop(&c);
}

TEST_F_TIMEOUT(kill, client_killed_with_calls_in_flight, 120)
{
	enum { NHOLD = 16, NECHO = 200 };
	struct echo_srv e;
	struct echo_clnt c2;
	int ready[2], status;
	double t0;
	char b;
	pid_t pid;

	ASSERT_EQ(0, echo_start(&e, PORT, 64, 512));
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct echo_clnt c;

		int r;

		r = clnt_start(&c, TEST_ADDR, PORT, 128, variant->ring_flags, 8);
		if (r) {
			fprintf(stderr, "child: connect: %d\n", r);
			_exit(1);
		}
		r = submit_calls(&c, M_HOLD, NHOLD, 8, 0);
		if (r != NHOLD) {
			fprintf(stderr, "child: hold calls: %d\n", r);
			_exit(2);
		}
		r = submit_calls(&c, M_ECHO, NECHO, 64, NHOLD);
		if (r != NECHO) {
			fprintf(stderr, "child: echo calls: %d\n", r);
			_exit(3);
		}
		if (write(ready[1], "r", 1) != 1)
			_exit(4);
		pause();
		_exit(5);
	}
	close(ready[1]);
	ASSERT_EQ(1, read(ready[0], &b, 1));
	TH_LOG("client ready");
	usleep(50000);
	t0 = lib_now();
	ASSERT_EQ(0, kill(pid, SIGKILL));
	status = lib_reap(pid, 20);
	ASSERT_NE(-1, status) TH_LOG("killed client did not exit");
	EXPECT_TRUE(WIFSIGNALED(status));
	TH_LOG("client gone after %.2f s", lib_now() - t0);
	EXPECT_EQ(0, krpc_counter_wait("calls_live", 0, 10000));
	EXPECT_EQ(1, krpc_counter_wait("files_open", 1, 10000));
	TH_LOG("calls_live %lld files_open %lld after %.2f s",
	       krpc_counter("calls_live"), krpc_counter("files_open"),
	       lib_now() - t0);

	/* The server still serves a new client. */
	ASSERT_EQ(0, clnt_start(&c2, TEST_ADDR, PORT, 64, 0, 8));
	EXPECT_EQ(0, echo_once(&c2, 3, 5000));
	clnt_stop(&c2);
	EXPECT_EQ(0, echo_stop(&e));
}

/*
 * A server that execs with FETCHes parked.  6.1's execve() waits, in
 * io_uring_task_cancel(), for every request of the task, and nothing but
 * krpc ends a FETCH: the dying-task monitor treats a task in execve() as
 * dying (6.12's exec cancels them through the uring_cmd hook).  The exec
 * completes, the new image runs and exits, nothing is left.
 */
TEST_F_TIMEOUT(kill, server_execs_with_fetches_parked, 60)
{
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct echo_srv e;
		uint32_t s;

		if (echo_srv_setup(&e, PORT, 4, 16, variant->ring_flags))
			_exit(1);
		for (s = 0; s < e.nr_slots; s++)
			krpc_prep_fetch(&e.k, io_uring_get_sqe(e.k.ring),
					e.srv.handle, s, s);
		if (io_uring_submit(e.k.ring) != (int)e.nr_slots)
			_exit(2);
		usleep(200000);		/* parked: no client */
		execl("/bin/true", "true", (char *)NULL);
		_exit(3);
	}
	status = lib_reap(pid, 10);
	if (status == -1) {
		kill(pid, SIGKILL);
		lib_reap(pid, 20);
	}
	ASSERT_NE(-1, status) TH_LOG("execve() with parked FETCHes hung");
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
