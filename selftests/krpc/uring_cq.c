// SPDX-License-Identifier: GPL-2.0
/*
 * Completion queues (KRPC_IOC_CQ_CREATE): calls and slot commands whose
 * results the kernel writes into a mapped ring instead of the io_uring CQ.
 *
 * Checked: the create and mmap validation (exact errnos); echoes through a
 * queue byte for byte, with no io_uring CQE at all; immediate errors land
 * in the queue, refusals (-EBADF, -EBUSY) in the io_uring CQ; a full queue
 * refuses until the process consumes; a lying head only hurts the liar;
 * poll(); a queue closed, or a process killed, with commands in flight;
 * a server whose FETCHes and REPLY_FETCHes complete into a queue; busy
 * polling in the kernel (KRPC_IOC_CQ_POLL): its validation, its timeout
 * and signal returns, echoes whose completions the waiting process reaps
 * itself, and another file's spin that reaps none of them; sleeping for one queue (KRPC_CQ_POLL_SLEEP): another
 * queue's entries do not end it, its own and a close do.  After each test
 * every counter is back to zero (ucq_live included).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "uring_lib.h"
#include "kselftest_harness.h"

#define PORT		7111
#define PORT_CQSRV	7112
#define UD		0x5a5a5a5aULL	/* user_data of queue commands */

FIXTURE(ucq) {
	struct echo_srv srv;
	struct echo_clnt c;
	struct krpc_cq cq;
};

FIXTURE_VARIANT(ucq) {
	unsigned int ring_flags;
};

FIXTURE_VARIANT_ADD(ucq, plain) { .ring_flags = 0 };
FIXTURE_VARIANT_ADD(ucq, sqpoll) { .ring_flags = KRPC_RING_SQPOLL };

FIXTURE_SETUP(ucq)
{
	ASSERT_EQ(0, krpc_insmod(""));
	ASSERT_EQ(0, echo_start(&self->srv, PORT, 8, 64));
	ASSERT_EQ(0, clnt_start(&self->c, TEST_ADDR, PORT, 64,
				variant->ring_flags, 16));
	ASSERT_EQ(0, krpc_cq_create(self->c.k.fd, 8, &self->cq));
}

FIXTURE_TEARDOWN(ucq)
{
	if (self->cq.base)
		EXPECT_EQ(0, krpc_cq_destroy(self->c.k.fd, &self->cq));
	clnt_stop(&self->c);
	EXPECT_EQ(0, echo_stop(&self->srv));
	EXPECT_EQ(0, krpc_counter_wait("calls_live", 0, 5000));
	EXPECT_EQ(0, krpc_counter_wait("reqs_live", 0, 5000));
	EXPECT_EQ(0, krpc_counter_wait("files_open", 0, 5000));
	EXPECT_EQ(0, krpc_counter_wait("ucq_live", 0, 5000));
	EXPECT_EQ(0, sh("rmmod krpc"));
}

/*
 * Submit a prepared command.  With SQPOLL, io_uring_submit() counts every
 * entry the thread has not picked up yet, earlier ones included.
 */
static int submit(struct krpc *k)
{
	int ret = io_uring_submit(k->ring);

	return ret >= 1 ? 0 : (ret < 0 ? ret : -EIO);
}

/* A CALL on @cq with @tag; @method M_HOLD is never answered. */
static int call_cq(struct echo_clnt *c, struct krpc_cq *cq, uint32_t cq_handle,
		   uint32_t method, uint32_t buf, uint32_t len, uint64_t tag)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(c->k.ring);
	struct krpc_cmd_call *cc;

	krpc_prep_call(&c->k, sqe, c->conn, method, buf, len,
		       method == M_HOLD ? 0 : BUF_SIZE, 0, UD);
	if (krpc_sqe_set_cq(sqe, cq, tag))
		return -EINVAL;
	cc = (struct krpc_cmd_call *)sqe->cmd;
	cc->cq = cq_handle;
	return submit(&c->k);
}

/* Wait up to @ms for one entry of @cq; copy and consume it. */
static int cq_get(int fd, struct krpc_cq *cq, struct krpc_cqe *out, int ms)
{
	const struct krpc_cqe *e;
	int ret = krpc_cq_wait(fd, cq, ms);

	if (ret <= 0)
		return ret ? ret : -ETIME;
	e = krpc_cq_peek(cq);
	if (!e)
		return -EIO;
	*out = *e;
	krpc_cq_advance(cq, 1);
	return 0;
}

/* The next io_uring CQE within @ms: its res, user_data in @ud; -ETIME. */
static int uring_get(struct krpc *k, uint64_t *ud, int ms)
{
	struct __kernel_timespec ts = { .tv_sec = ms / 1000,
					.tv_nsec = (ms % 1000) * 1000000L };
	struct io_uring_cqe *cqe;
	int ret = io_uring_wait_cqe_timeout(k->ring, &cqe, &ts);

	if (ret)
		return ret == -ETIME ? -ETIME : -EIO;
	ret = cqe->res;
	*ud = cqe->user_data;
	io_uring_cqe_seen(k->ring, cqe);
	return ret;
}

static int cq_ioctl(int fd, struct krpc_cq_create *cc)
{
	return ioctl(fd, KRPC_IOC_CQ_CREATE, cc) < 0 ? -errno : 0;
}

TEST_F(ucq, create_and_mmap_are_validated)
{
	struct krpc_cq_create cc = { .size = sizeof(cc), .entries = 8 };
	int fd = self->c.k.fd, i, n;
	struct krpc_info info;
	struct krpc_cq many[KRPC_CQS_MAX];
	void *p, *ro;

	ASSERT_EQ(0, krpc_dev_info(fd, &info));
	EXPECT_TRUE(info.features & KRPC_FEAT_CQ);

	cc.entries = 0;
	EXPECT_EQ(-EINVAL, cq_ioctl(fd, &cc));
	cc.entries = 3;
	EXPECT_EQ(-EINVAL, cq_ioctl(fd, &cc));
	cc.entries = KRPC_CQ_ENTRIES_MAX * 2;
	EXPECT_EQ(-EINVAL, cq_ioctl(fd, &cc));
	cc.entries = 8;
	cc.flags = 1;
	EXPECT_EQ(-EINVAL, cq_ioctl(fd, &cc));
	cc.flags = 0;
	cc.handle = 7;
	EXPECT_EQ(-EINVAL, cq_ioctl(fd, &cc));
	cc.handle = 0;
	cc.size = 16;
	EXPECT_EQ(-EINVAL, cq_ioctl(fd, &cc));
	cc.size = sizeof(cc);

	/* Largest queue: header + 4096 entries. */
	cc.entries = KRPC_CQ_ENTRIES_MAX;
	ASSERT_EQ(0, cq_ioctl(fd, &cc));
	EXPECT_EQ((uint64_t)handle_off(cc.handle), cc.mmap_offset);
	EXPECT_EQ(KRPC_CQ_CQES_OFFSET + KRPC_CQ_ENTRIES_MAX * 32 + 4096 - 128,
		  cc.mmap_length);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, cc.mmap_length - 4096,
				   PROT_READ | PROT_WRITE, MAP_SHARED, fd,
				   cc.mmap_offset));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, cc.mmap_length, PROT_READ,
				   MAP_PRIVATE, fd, cc.mmap_offset));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, cc.mmap_length,
				   PROT_READ | PROT_EXEC, MAP_SHARED, fd,
				   cc.mmap_offset));
	EXPECT_EQ(EPERM, errno);
	p = mmap(NULL, cc.mmap_length, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 cc.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(KRPC_CQ_ENTRIES_MAX - 1,
		  *(uint32_t *)((char *)p + KRPC_CQ_MASK_OFFSET));
	EXPECT_EQ(0, *(uint32_t *)((char *)p + KRPC_CQ_TAIL_OFFSET));
	/* Closing the handle leaves the mapping valid; the handle is gone. */
	EXPECT_EQ(0, krpc_close_handle(fd, cc.handle));
	EXPECT_EQ(-EBADF, krpc_close_handle(fd, cc.handle));
	EXPECT_EQ(KRPC_CQ_ENTRIES_MAX - 1,
		  *(uint32_t *)((char *)p + KRPC_CQ_MASK_OFFSET));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, cc.mmap_length,
				   PROT_READ | PROT_WRITE, MAP_SHARED, fd,
				   cc.mmap_offset));
	EXPECT_EQ(0, munmap(p, cc.mmap_length));
	/* A connection has nothing to map. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd,
				   handle_off(self->c.conn)));
	EXPECT_EQ(EINVAL, errno);

	/*
	 * An answer that cannot be written back leaves no queue behind: the
	 * caller never learnt its handle, so nothing could close it.
	 */
	ro = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	memset(&cc, 0, sizeof(cc));
	cc.size = sizeof(cc);
	cc.entries = 8;
	memcpy(ro, &cc, sizeof(cc));
	ASSERT_EQ(0, mprotect(ro, 4096, PROT_READ));
	EXPECT_EQ(-EFAULT, cq_ioctl(fd, ro));
	EXPECT_EQ(1, krpc_counter_wait("ucq_live", 1, 5000));
	EXPECT_EQ(0, munmap(ro, 4096));

	/* At most KRPC_CQS_MAX per file (the fixture holds one). */
	for (n = 0; n < (int)KRPC_CQS_MAX - 1; n++)
		ASSERT_EQ(0, krpc_cq_create(fd, 1, &many[n])) TH_LOG("queue %d", n);
	EXPECT_EQ(-EMFILE, krpc_cq_create(fd, 1, &many[n]));
	EXPECT_EQ(0, krpc_cq_destroy(fd, &many[0]));
	EXPECT_EQ(0, krpc_cq_create(fd, 1, &many[0]));
	for (i = 0; i < n; i++)
		EXPECT_EQ(0, krpc_cq_destroy(fd, &many[i]));
	EXPECT_EQ(1, krpc_counter("ucq_live"));
}

TEST_F(ucq, echo_byte_for_byte_without_io_uring_cqes)
{
	long long posted = krpc_counter("ucq_posted");
	struct krpc_cqe e;
	uint64_t ud;
	uint32_t i, tx, len;

	ASSERT_EQ(1, krpc_buf_alloc(self->c.k.fd, &self->c.pool, &tx, 1));
	for (i = 0; i < 200; i++) {
		len = (i * 7919) % (BUF_SIZE + 1);
		fill(krpc_pool_buf(&self->c.pool, tx), i, len);
		ASSERT_EQ(0, call_cq(&self->c, &self->cq, self->cq.handle,
				     M_ECHO, len ? tx : KRPC_BUF_NONE, len,
				     1000 + i));
		ASSERT_EQ(0, cq_get(self->c.k.fd, &self->cq, &e, 10000));
		EXPECT_EQ(1000 + i, e.tag);
		EXPECT_EQ(KRPC_CMD_CALL, e.cmd_op);
		EXPECT_EQ(0, e.reserved);
		ASSERT_EQ((int)len, e.res) TH_LOG("echo %u of %u bytes", i, len);
		if (len) {
			uint32_t rb = KRPC_RES2_BUF(e.res2);

			ASSERT_NE(KRPC_BUF_NONE, rb);
			EXPECT_EQ(-1, check_pattern((char *)krpc_pool_buf(&self->c.pool, rb) +
						    KRPC_RES2_OFFSET(e.res2), i, len));
			EXPECT_EQ(0, krpc_buf_free(self->c.k.fd, &self->c.pool, &rb, 1));
		} else {
			EXPECT_EQ(KRPC_BUF_NONE, KRPC_RES2_BUF(e.res2));
		}
	}
	/* IOSQE_CQE_SKIP_SUCCESS: the io_uring CQ saw nothing. */
	EXPECT_EQ(-ETIME, uring_get(&self->c.k, &ud, 100));
	EXPECT_EQ(0, krpc_cq_ready(&self->cq));
	EXPECT_GE(krpc_counter("ucq_posted"), posted + 200);
	/* The request buffer is ours again: freed once, then not ours. */
	EXPECT_EQ(0, krpc_buf_free(self->c.k.fd, &self->c.pool, &tx, 1));
	EXPECT_EQ(-EBUSY, krpc_buf_free(self->c.k.fd, &self->c.pool, &tx, 1));
}

TEST_F(ucq, errors_go_to_the_queue_refusals_to_io_uring)
{
	struct io_uring_sqe *sqe;
	struct krpc_cqe e;
	uint64_t ud = 0;

	/* Taken by the queue: the command's own errors are entries. */
	ASSERT_EQ(0, call_cq(&self->c, &self->cq, self->cq.handle,
			     0xffff0000U, KRPC_BUF_NONE, 0, 1));
	ASSERT_EQ(0, cq_get(self->c.k.fd, &self->cq, &e, 5000));
	EXPECT_EQ(1, e.tag);
	EXPECT_EQ(-EINVAL, e.res);
	EXPECT_EQ(KRPC_BUF_NONE, KRPC_RES2_BUF(e.res2));
	ASSERT_EQ(0, call_cq(&self->c, &self->cq, self->cq.handle, M_ECHO,
			     5 /* not ours */, 10, 2));
	ASSERT_EQ(0, cq_get(self->c.k.fd, &self->cq, &e, 5000));
	EXPECT_EQ(2, e.tag);
	EXPECT_EQ(-EBUSY, e.res);
	sqe = io_uring_get_sqe(self->c.k.ring);
	krpc_prep_fetch(&self->c.k, sqe, 12345, 0, UD);
	ASSERT_EQ(0, krpc_sqe_set_cq(sqe, &self->cq, 3));
	ASSERT_EQ(0, submit(&self->c.k));
	ASSERT_EQ(0, cq_get(self->c.k.fd, &self->cq, &e, 5000));
	EXPECT_EQ(3, e.tag);
	EXPECT_EQ(KRPC_CMD_FETCH, e.cmd_op);
	EXPECT_EQ(-EBADF, e.res);
	EXPECT_EQ(-ETIME, uring_get(&self->c.k, &ud, 100));

	/* Not taken: no such queue; a pool's handle; a closed queue. */
	ASSERT_EQ(0, call_cq(&self->c, &self->cq, 12345, M_ECHO,
			     KRPC_BUF_NONE, 0, 4));
	EXPECT_EQ(-EBADF, uring_get(&self->c.k, &ud, 5000));
	EXPECT_EQ(UD, ud);
	ASSERT_EQ(0, call_cq(&self->c, &self->cq, self->c.pool.handle, M_ECHO,
			     KRPC_BUF_NONE, 0, 5));
	EXPECT_EQ(-EBADF, uring_get(&self->c.k, &ud, 5000));
	{
		struct krpc_cq gone;

		ASSERT_EQ(0, krpc_cq_create(self->c.k.fd, 2, &gone));
		ASSERT_EQ(0, krpc_close_handle(self->c.k.fd, gone.handle));
		ASSERT_EQ(0, call_cq(&self->c, &self->cq, gone.handle,
				     M_ECHO, KRPC_BUF_NONE, 0, 6));
		EXPECT_EQ(-EBADF, uring_get(&self->c.k, &ud, 5000));
		munmap(gone.base, gone.length);
	}
	/* A queue field on a command that has none is a reserved field. */
	{
		struct krpc_cmd_cancel ca = { .conn = self->c.conn, .tag = 1 };

		ca.reserved[0] = self->cq.handle;
		EXPECT_EQ(-EINVAL, krpc_cmd_sync(&self->c.k, KRPC_CMD_CANCEL,
						 &ca, sizeof(ca), NULL));
	}
	EXPECT_EQ(0, krpc_cq_ready(&self->cq));
}

TEST_F(ucq, a_full_queue_refuses_until_consumed)
{
	struct krpc_cmd_cancel ca = { .conn = self->c.conn };
	struct krpc_cq small;
	struct krpc_cqe e;
	uint64_t ud;
	int i;

	ASSERT_EQ(0, krpc_cq_create(self->c.k.fd, 4, &small));
	/* Four calls the server holds: four entries promised. */
	for (i = 1; i <= 4; i++)
		ASSERT_EQ(0, call_cq(&self->c, &small, small.handle, M_HOLD,
				     KRPC_BUF_NONE, 0, i));
	ASSERT_EQ(0, call_cq(&self->c, &small, small.handle, M_ECHO,
			     KRPC_BUF_NONE, 0, 5));
	EXPECT_EQ(-EBUSY, uring_get(&self->c.k, &ud, 5000));
	EXPECT_EQ(UD, ud);

	/* One completes but is not consumed: still full. */
	ca.tag = 1;
	EXPECT_EQ(1, krpc_cmd_sync(&self->c.k, KRPC_CMD_CANCEL, &ca,
				   sizeof(ca), NULL));
	ASSERT_EQ(1, krpc_cq_wait(self->c.k.fd, &small, 5000));
	ASSERT_EQ(0, call_cq(&self->c, &small, small.handle, M_ECHO,
			     KRPC_BUF_NONE, 0, 6));
	EXPECT_EQ(-EBUSY, uring_get(&self->c.k, &ud, 5000));

	/* Consumed: room for one more. */
	ASSERT_EQ(0, cq_get(self->c.k.fd, &small, &e, 0));
	EXPECT_EQ(1, e.tag);
	EXPECT_EQ(-ECANCELED, e.res);
	ASSERT_EQ(0, call_cq(&self->c, &small, small.handle, M_ECHO,
			     KRPC_BUF_NONE, 0, 7));
	ASSERT_EQ(0, cq_get(self->c.k.fd, &small, &e, 5000));
	EXPECT_EQ(7, e.tag);
	EXPECT_EQ(0, e.res);
	EXPECT_EQ(-ETIME, uring_get(&self->c.k, &ud, 100));

	/* Each of the held calls completes exactly once. */
	for (i = 2; i <= 4; i++) {
		ca.tag = i;
		EXPECT_EQ(1, krpc_cmd_sync(&self->c.k, KRPC_CMD_CANCEL, &ca,
					   sizeof(ca), NULL));
		ASSERT_EQ(0, cq_get(self->c.k.fd, &small, &e, 5000));
		EXPECT_EQ(i, e.tag);
		EXPECT_EQ(-ECANCELED, e.res);
	}
	EXPECT_EQ(-ETIME, cq_get(self->c.k.fd, &small, &e, 100));
	EXPECT_EQ(0, krpc_cq_destroy(self->c.k.fd, &small));
}

TEST_F(ucq, a_lying_head_hurts_only_the_liar)
{
	uint32_t tail = *self->cq.ktail;
	struct krpc_cqe e;
	uint64_t ud;

	*self->cq.khead = tail + 1000;	/* "consumed" entries never posted */
	ASSERT_EQ(0, call_cq(&self->c, &self->cq, self->cq.handle, M_ECHO,
			     KRPC_BUF_NONE, 0, 1));
	EXPECT_EQ(-EBUSY, uring_get(&self->c.k, &ud, 5000));
	*self->cq.khead = tail - 100000;	/* far behind */
	ASSERT_EQ(0, call_cq(&self->c, &self->cq, self->cq.handle, M_ECHO,
			     KRPC_BUF_NONE, 0, 2));
	EXPECT_EQ(-EBUSY, uring_get(&self->c.k, &ud, 5000));
	/* Scribbled tail and mask are never read back. */
	*(uint32_t *)((char *)self->cq.base + KRPC_CQ_TAIL_OFFSET) = 77;
	*(uint32_t *)((char *)self->cq.base + KRPC_CQ_MASK_OFFSET) = ~0U;
	*self->cq.khead = tail;
	self->cq.head = tail;
	ASSERT_EQ(0, call_cq(&self->c, &self->cq, self->cq.handle, M_ECHO,
			     KRPC_BUF_NONE, 0, 3));
	/* The kernel's tail is tail + 1 again once the entry lands. */
	while (*self->cq.ktail != tail + 1)
		usleep(1000);
	e = self->cq.cqes[tail & self->cq.mask];
	krpc_cq_advance(&self->cq, 1);
	EXPECT_EQ(3, e.tag);
	EXPECT_EQ(0, e.res);
	EXPECT_EQ(-ETIME, uring_get(&self->c.k, &ud, 100));
}

TEST_F(ucq, poll_reports_entries)
{
	struct pollfd p = { .fd = self->c.k.fd, .events = POLLIN };
	struct krpc_cqe e;

	EXPECT_EQ(0, poll(&p, 1, 0));
	ASSERT_EQ(0, call_cq(&self->c, &self->cq, self->cq.handle, M_ECHO,
			     KRPC_BUF_NONE, 0, 9));
	ASSERT_EQ(1, poll(&p, 1, 10000));
	EXPECT_EQ(POLLIN, p.revents & (POLLIN | POLLERR | POLLHUP));
	EXPECT_EQ(1, poll(&p, 1, 0));	/* level-triggered */
	ASSERT_EQ(0, cq_get(self->c.k.fd, &self->cq, &e, 0));
	EXPECT_EQ(9, e.tag);
	EXPECT_EQ(0, poll(&p, 1, 0));
}

static int cq_poll_ioctl(int fd, uint32_t size, uint32_t flags,
			 uint32_t handle, uint32_t usecs)
{
	struct krpc_cq_poll cp = { .size = size, .flags = flags,
				   .handle = handle, .usecs = usecs };
	int ret = ioctl(fd, KRPC_IOC_CQ_POLL, &cp);

	return ret < 0 ? -errno : ret;
}

static void on_alarm(int sig)
{
	(void)sig;
}

TEST_F(ucq, busy_poll_is_validated)
{
	const uint32_t sz = sizeof(struct krpc_cq_poll);
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	/* Every 20 ms, until the ioctl is in: the first may come before. */
	struct itimerval it = { .it_value = { .tv_usec = 20000 },
				.it_interval = { .tv_usec = 20000 } }, off = { 0 };
	int fd = self->c.k.fd;
	struct krpc_cqe e;

	EXPECT_EQ(-EINVAL, cq_poll_ioctl(fd, KRPC_CQ_POLL_SIZE_VER0 - 1, 0,
					 self->cq.handle, 1000));
	EXPECT_EQ(-EINVAL, cq_poll_ioctl(fd, sz, ~KRPC_CQ_POLL_FLAGS,
					 self->cq.handle, 1000));
	EXPECT_EQ(-EINVAL, cq_poll_ioctl(fd, sz, 0, self->cq.handle, 0));
	EXPECT_EQ(-EINVAL, cq_poll_ioctl(fd, sz, 0, self->cq.handle,
					 KRPC_CQ_POLL_USECS_MAX + 1));
	EXPECT_EQ(-EBADF, cq_poll_ioctl(fd, sz, 0, 0, 1000));
	EXPECT_EQ(-EBADF, cq_poll_ioctl(fd, sz, 0, self->cq.handle + 1000, 1000));
	/* A pool's handle is not a queue's. */
	EXPECT_EQ(-EBADF, cq_poll_ioctl(fd, sz, 0, self->c.pool.handle, 1000));

	/* Nothing comes: the time runs out. */
	EXPECT_EQ(0, cq_poll_ioctl(fd, sz, 0, self->cq.handle, 2000));
	EXPECT_EQ(0, krpc_cq_busy_poll(fd, &self->cq, 2000));

	/* A signal ends the spin (no SA_RESTART). */
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, &old));
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &it, NULL));
	EXPECT_EQ(-EINTR, krpc_cq_busy_poll(fd, &self->cq,
					    KRPC_CQ_POLL_USECS_MAX));
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &off, NULL));
	EXPECT_EQ(0, sigaction(SIGALRM, &old, NULL));

	/* An entry: counted, left for the process to consume. */
	ASSERT_EQ(0, call_cq(&self->c, &self->cq, self->cq.handle, M_ECHO,
			     KRPC_BUF_NONE, 0, 11));
	ASSERT_EQ(1, krpc_cq_wait(fd, &self->cq, 10000));
	EXPECT_EQ(1, cq_poll_ioctl(fd, sz, 0, self->cq.handle, 1000));
	EXPECT_EQ(1, krpc_cq_busy_poll(fd, &self->cq, 1000));
	ASSERT_EQ(0, cq_get(fd, &self->cq, &e, 0));
	EXPECT_EQ(11, e.tag);
	EXPECT_EQ(0, e.res);
}

/* A thread asleep in KRPC_IOC_CQ_POLL with KRPC_CQ_POLL_SLEEP. */
struct sleeper {
	int fd;
	uint32_t handle;
	uint32_t usecs;
	int ret;
	pthread_t thread;
};

static void *sleeper_fn(void *arg)
{
	struct sleeper *s = arg;

	s->ret = cq_poll_ioctl(s->fd, sizeof(struct krpc_cq_poll),
			       KRPC_CQ_POLL_SLEEP, s->handle, s->usecs);
	return NULL;
}

static int sleeper_start(struct sleeper *s, int fd, uint32_t handle,
			 uint32_t usecs)
{
	s->fd = fd;
	s->handle = handle;
	s->usecs = usecs;
	s->ret = -ENOSYS;
	return -pthread_create(&s->thread, NULL, sleeper_fn, s);
}

/*
 * KRPC_CQ_POLL_SLEEP waits for one queue: poll() on the file wakes for
 * any queue, so threads that each own a queue could not sleep on their
 * own without it.  Entries of another queue leave the sleeper asleep
 * until its time runs out; its own queue's entry, or closing that queue,
 * wakes it.
 */
TEST_F(ucq, sleeping_wait_is_per_queue)
{
	const uint32_t sz = sizeof(struct krpc_cq_poll);
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	/* Every 20 ms, until the ioctl is in: the first may come before. */
	struct itimerval it = { .it_value = { .tv_usec = 20000 },
				.it_interval = { .tv_usec = 20000 } }, off = { 0 };
	struct pollfd p = { .fd = self->c.k.fd, .events = POLLIN };
	uint32_t h = self->cq.handle;
	int fd = self->c.k.fd;
	struct krpc_cq other, gone;
	struct krpc_info info;
	struct sleeper s;
	struct krpc_cqe e;

	ASSERT_EQ(0, krpc_dev_info(fd, &info));
	EXPECT_TRUE(info.features & KRPC_FEAT_CQ_WAIT);
	EXPECT_EQ(-EINVAL, cq_poll_ioctl(fd, sz, KRPC_CQ_POLL_SLEEP << 1, h,
					 1000));
	EXPECT_EQ(-EINVAL, cq_poll_ioctl(fd, KRPC_CQ_POLL_SIZE_VER0 - 1,
					 KRPC_CQ_POLL_SLEEP, h, 1000));
	EXPECT_EQ(-EBADF, cq_poll_ioctl(fd, sz, KRPC_CQ_POLL_SLEEP, 0, 1000));
	EXPECT_EQ(-EBADF, cq_poll_ioctl(fd, sz, KRPC_CQ_POLL_SLEEP,
					self->c.pool.handle, 1000));

	/* Longer than a spin may be: the time runs out. */
	EXPECT_EQ(0, cq_poll_ioctl(fd, sz, KRPC_CQ_POLL_SLEEP, h,
				   KRPC_CQ_POLL_USECS_MAX + 1));
	/* No limit (0): a signal ends it. */
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, &old));
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &it, NULL));
	EXPECT_EQ(-EINTR, cq_poll_ioctl(fd, sz, KRPC_CQ_POLL_SLEEP, h, 0));
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &off, NULL));
	EXPECT_EQ(0, sigaction(SIGALRM, &old, NULL));

	/* An entry in another queue of the file: poll() says so ... */
	ASSERT_EQ(0, krpc_cq_create(fd, 8, &other));
	ASSERT_EQ(0, call_cq(&self->c, &other, other.handle, M_ECHO,
			     KRPC_BUF_NONE, 0, 21));
	ASSERT_EQ(1, krpc_cq_wait(fd, &other, 10000));
	EXPECT_EQ(1, poll(&p, 1, 0));
	/* ... the wait for this queue sleeps its time out, twice over. */
	EXPECT_EQ(0, cq_poll_ioctl(fd, sz, KRPC_CQ_POLL_SLEEP, h, 20000));
	EXPECT_EQ(0, krpc_cq_wait(fd, &self->cq, 20));

	/* This queue's entry wakes its sleeper and is left to consume. */
	ASSERT_EQ(0, sleeper_start(&s, fd, h, 10000000));
	usleep(20000);
	ASSERT_EQ(0, call_cq(&self->c, &self->cq, h, M_ECHO, KRPC_BUF_NONE, 0,
			     22));
	ASSERT_EQ(0, pthread_join(s.thread, NULL));
	EXPECT_EQ(1, s.ret);
	ASSERT_EQ(0, cq_get(fd, &self->cq, &e, 0));
	EXPECT_EQ(22, e.tag);
	EXPECT_EQ(0, e.res);
	ASSERT_EQ(0, cq_get(fd, &other, &e, 0));
	EXPECT_EQ(21, e.tag);
	EXPECT_EQ(0, e.res);

	/* Closing an empty queue wakes its sleeper: -EBADF. */
	ASSERT_EQ(0, krpc_cq_create(fd, 8, &gone));
	ASSERT_EQ(0, sleeper_start(&s, fd, gone.handle, 0));
	usleep(20000);
	EXPECT_EQ(0, krpc_cq_destroy(fd, &gone));
	ASSERT_EQ(0, pthread_join(s.thread, NULL));
	EXPECT_EQ(-EBADF, s.ret);
	EXPECT_EQ(0, krpc_cq_destroy(fd, &other));
}

/* Steps of echo_via_cq(), for the log. */
static const char *const echo_step[] = {
	"none", "call", "busy poll", "entry", "tag", "length",
	"reply buffer", "payload", "buffer free",
};

/*
 * Echo number @i (a length of its own, 0 included) from buffer @tx
 * through @cq, waited for by busy polling (@busy) or by sleeping; check
 * the entry and the reply byte for byte and free the reply buffer.
 * Return 0, or the step that failed (echo_step[]).
 */
static int echo_via_cq(struct echo_clnt *c, struct krpc_cq *cq, uint32_t tx,
		       uint32_t i, uint64_t tag, bool busy)
{
	uint32_t len = (i * 7919) % (BUF_SIZE + 1), rb;
	struct krpc_cqe e;
	int n = 0, spins;

	fill(krpc_pool_buf(&c->pool, tx), i, len);
	if (call_cq(c, cq, cq->handle, M_ECHO, len ? tx : KRPC_BUF_NONE, len,
		    tag))
		return 1;
	if (busy) {
		for (spins = 0; !(n = krpc_cq_busy_poll(c->k.fd, cq, 100000)) &&
		     spins < 100; spins++)
			;
		if (n != 1)
			return 2;
	}
	if (cq_get(c->k.fd, cq, &e, busy ? 0 : 5000))
		return 3;
	if (e.tag != tag)
		return 4;
	if (e.res != (int)len)
		return 5;
	if (!len)
		return 0;
	rb = KRPC_RES2_BUF(e.res2);
	if (rb == KRPC_BUF_NONE)
		return 6;
	if (check_pattern((char *)krpc_pool_buf(&c->pool, rb) +
			  KRPC_RES2_OFFSET(e.res2), i, len) != -1)
		return 7;
	if (krpc_buf_free(c->k.fd, &c->pool, &rb, 1))
		return 8;
	return 0;
}

/*
 * Echoes 0..@n - 1 through @cq as echo_via_cq() does, tagged @tag0 + i;
 * stops at the first that fails.  Return 0, or the step that failed, with
 * *@at the echo it failed in.
 */
static int echoes_via_cq(struct echo_clnt *c, struct krpc_cq *cq, uint32_t tx,
			 uint32_t n, uint64_t tag0, bool busy, uint32_t *at)
{
	int step = 0;

	for (*at = 0; *at < n && !step; (*at)++)
		step = echo_via_cq(c, cq, tx, *at, tag0 + *at, busy);
	if (step)
		(*at)--;
	return step;
}

/*
 * A client of its own with a polled connection (made while poll_usecs is
 * set, as the server's end of it) and a queue of 8 entries.
 */
static int polled_clnt_start(struct echo_clnt *c, unsigned int ring_flags,
			     struct krpc_cq *cq)
{
	int ret;

	if (sh("echo 1 > /sys/module/krpc/parameters/poll_usecs"))
		return -EIO;
	ret = clnt_start(c, TEST_ADDR, PORT, 64, ring_flags, 16);
	if (sh("echo 0 > /sys/module/krpc/parameters/poll_usecs") && !ret)
		ret = -EIO;
	if (!ret) {
		ret = krpc_cq_create(c->k.fd, 8, cq);
		if (ret)
			clnt_stop(c);
	}
	return ret;
}

/*
 * Connections made while poll_usecs is set have polled CQs; a process
 * spinning in KRPC_IOC_CQ_POLL reaps them itself (busy_polled counts the
 * completions it handled), and the echoes stay byte for byte.
 */
TEST_F(ucq, busy_poll_reaps_completions_in_the_waiter)
{
	long long reaped = krpc_counter("busy_polled");
	struct echo_clnt c2;
	struct krpc_cq cq;
	uint32_t i, tx;
	int step;

	ASSERT_EQ(0, polled_clnt_start(&c2, variant->ring_flags, &cq));
	ASSERT_EQ(1, krpc_buf_alloc(c2.k.fd, &c2.pool, &tx, 1));
	step = echoes_via_cq(&c2, &cq, tx, 200, 2000, true, &i);
	ASSERT_EQ(0, step) TH_LOG("echo %u: %s", i, echo_step[step]);
	/*
	 * Two completions a call on the client's CQ; the spinning client
	 * reaps most, its poller's once-a-tick look the rest.  The
	 * server's CQ is another file's: never this one's.  TCP has no
	 * CQ: the spin only watches the queue.
	 */
	if (c2.transport == KRPC_TRANSPORT_TCP) {
		EXPECT_EQ(reaped, krpc_counter("busy_polled"));
	} else {
		EXPECT_GE(krpc_counter("busy_polled"), reaped + 200);
	}
	EXPECT_EQ(0, krpc_buf_free(c2.k.fd, &c2.pool, &tx, 1));
	EXPECT_EQ(0, krpc_cq_destroy(c2.k.fd, &cq));
	clnt_stop(&c2);
}

/*
 * Polling asked for by the connection (KRPC_CONN_F_CQ_POLL) while
 * poll_usecs is 0: its CQ is polled all the same, and the waiter reaps it.
 * KRPC_CONN_F_CQ_IRQ while poll_usecs is set: not polled, so the spin has
 * nothing of this connection's to reap and only watches the queue.
 */
TEST_F(ucq, the_connection_chooses_its_completions)
{
	long long reaped = krpc_counter("busy_polled");
	struct echo_clnt c2;
	struct krpc_cq cq;
	uint32_t i, tx;
	int step, ret;

	ASSERT_EQ(0, sh("echo 0 > /sys/module/krpc/parameters/poll_usecs"));
	ASSERT_EQ(0, clnt_start_flags(&c2, TEST_ADDR, PORT, 64,
				      variant->ring_flags, 16,
				      KRPC_CONN_F_CQ_POLL));
	ASSERT_EQ(0, krpc_cq_create(c2.k.fd, 8, &cq));
	ASSERT_EQ(1, krpc_buf_alloc(c2.k.fd, &c2.pool, &tx, 1));
	step = echoes_via_cq(&c2, &cq, tx, 200, 4000, true, &i);
	ASSERT_EQ(0, step) TH_LOG("echo %u: %s", i, echo_step[step]);
	if (c2.transport == KRPC_TRANSPORT_TCP) {
		EXPECT_EQ(reaped, krpc_counter("busy_polled"));
	} else {
		EXPECT_GE(krpc_counter("busy_polled"), reaped + 200);
	}
	EXPECT_EQ(0, krpc_buf_free(c2.k.fd, &c2.pool, &tx, 1));
	EXPECT_EQ(0, krpc_cq_destroy(c2.k.fd, &cq));
	clnt_stop(&c2);

	ASSERT_EQ(0, sh("echo 1 > /sys/module/krpc/parameters/poll_usecs"));
	ret = clnt_start_flags(&c2, TEST_ADDR, PORT, 64, variant->ring_flags,
			       16, KRPC_CONN_F_CQ_IRQ);
	EXPECT_EQ(0, sh("echo 0 > /sys/module/krpc/parameters/poll_usecs"));
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, krpc_cq_create(c2.k.fd, 8, &cq));
	ASSERT_EQ(1, krpc_buf_alloc(c2.k.fd, &c2.pool, &tx, 1));
	reaped = krpc_counter("busy_polled");
	step = echoes_via_cq(&c2, &cq, tx, 50, 5000, true, &i);
	ASSERT_EQ(0, step) TH_LOG("echo %u: %s", i, echo_step[step]);
	EXPECT_EQ(reaped, krpc_counter("busy_polled"));
	EXPECT_EQ(0, krpc_buf_free(c2.k.fd, &c2.pool, &tx, 1));
	EXPECT_EQ(0, krpc_cq_destroy(c2.k.fd, &cq));
	clnt_stop(&c2);
}

/* A process spinning in KRPC_IOC_CQ_POLL on a file of its own. */
struct spinner {
	pthread_t thread;
	int fd;
	struct krpc_cq cq;
	volatile int stop;
	int ret;
	long polls;
};

static void *spinner_fn(void *arg)
{
	struct spinner *s = arg;

	while (!s->stop) {
		s->ret = krpc_cq_busy_poll(s->fd, &s->cq, 20000);
		if (s->ret)
			break;
		s->polls++;
	}
	return NULL;
}

/*
 * A process reaps its own connections' CQs only.  Another file spins in
 * KRPC_IOC_CQ_POLL the whole time this one's polled connection (and the
 * server's, a third file) echo; the spinner reaps none of their
 * completions (busy_polled stays put) and its queue stays empty, the
 * poller threads reap them all (cq_polled), and every echo is byte for
 * byte.
 */
TEST_F(ucq, busy_poll_reaps_only_its_own_connections)
{
	long long reaped = krpc_counter("busy_polled");
	long long polled = krpc_counter("cq_polled");
	struct spinner sp = {};
	struct echo_clnt c2;
	struct krpc_cq cq;
	uint32_t i, tx;
	int step;

	ASSERT_EQ(0, polled_clnt_start(&c2, variant->ring_flags, &cq));
	sp.fd = krpc_dev_open(0);
	ASSERT_LE(0, sp.fd);
	ASSERT_EQ(0, krpc_cq_create(sp.fd, 8, &sp.cq));
	ASSERT_EQ(0, pthread_create(&sp.thread, NULL, spinner_fn, &sp));
	ASSERT_EQ(1, krpc_buf_alloc(c2.k.fd, &c2.pool, &tx, 1));
	step = echoes_via_cq(&c2, &cq, tx, 200, 3000, false, &i);
	ASSERT_EQ(0, step) TH_LOG("echo %u: %s", i, echo_step[step]);
	sp.stop = 1;
	ASSERT_EQ(0, pthread_join(sp.thread, NULL));
	EXPECT_EQ(0, sp.ret);
	EXPECT_LT(0, sp.polls);
	EXPECT_EQ(reaped, krpc_counter("busy_polled"));
	if (c2.transport != KRPC_TRANSPORT_TCP) {
		/* Four completions a call, two on each side's CQ. */
		EXPECT_LE(polled + 4 * 200, krpc_counter("cq_polled"));
	}
	EXPECT_EQ(0, krpc_cq_destroy(sp.fd, &sp.cq));
	EXPECT_EQ(0, close(sp.fd));
	EXPECT_EQ(0, krpc_buf_free(c2.k.fd, &c2.pool, &tx, 1));
	EXPECT_EQ(0, krpc_cq_destroy(c2.k.fd, &cq));
	clnt_stop(&c2);
}

TEST_F(ucq, closing_with_calls_in_flight)
{
	struct krpc_cq cq2 = self->cq;
	const struct krpc_cqe *e;
	int i;

	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, call_cq(&self->c, &cq2, cq2.handle, M_HOLD,
				     KRPC_BUF_NONE, 0, 10 + i));
	/* Issued (SQPOLL: by the thread, some time after the submit). */
	ASSERT_EQ(3, krpc_counter_wait("calls_live", 3, 5000));
	/* The queue's handle goes; its calls still post into the mapping. */
	ASSERT_EQ(0, krpc_close_handle(self->c.k.fd, cq2.handle));
	self->cq.base = NULL;
	EXPECT_EQ(1, krpc_counter("ucq_live"));
	ASSERT_EQ(0, krpc_close_handle(self->c.k.fd, self->c.conn));
	self->c.conn = 0;
	for (i = 0; i < 500 && krpc_cq_ready(&cq2) < 3; i++)
		usleep(10000);
	EXPECT_EQ(3, krpc_cq_ready(&cq2));
	for (i = 0; i < 3; i++) {
		e = krpc_cq_peek(&cq2);
		ASSERT_NE(NULL, e);
		EXPECT_EQ(10 + i, e->tag);
		EXPECT_EQ(-ESHUTDOWN, e->res);
		krpc_cq_advance(&cq2, 1);
	}
	EXPECT_EQ(NULL, krpc_cq_peek(&cq2));
	EXPECT_EQ(0, krpc_counter_wait("ucq_live", 0, 5000));
	EXPECT_EQ(0, munmap(cq2.base, cq2.length));
}

TEST_F(ucq, a_killed_process_leaves_nothing)
{
	int pfd[2], st;
	pid_t pid;
	char ok;

	ASSERT_EQ(0, pipe(pfd));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		struct echo_clnt c;
		struct krpc_cq cq;
		int i;

		if (clnt_start(&c, TEST_ADDR, PORT, 16, 0, 8) ||
		    krpc_cq_create(c.k.fd, 8, &cq))
			_exit(1);
		for (i = 0; i < 4; i++)
			if (call_cq(&c, &cq, cq.handle, M_HOLD, KRPC_BUF_NONE,
				    0, i))
				_exit(2);
		/* A FETCH on a queue of a server of its own. */
		{
			struct echo_srv s;
			struct krpc_cq scq;
			struct io_uring_sqe *sqe;

			if (echo_srv_setup(&s, PORT + 20, 2, 8, 0) ||
			    krpc_cq_create(s.k.fd, 2, &scq))
				_exit(3);
			sqe = io_uring_get_sqe(s.k.ring);
			krpc_prep_fetch(&s.k, sqe, s.srv.handle, 0, UD);
			krpc_sqe_set_cq(sqe, &scq, 0);
			if (submit(&s.k))
				_exit(3);
		}
		if (write(pfd[1], "k", 1) != 1)
			_exit(4);
		pause();
		_exit(0);
	}
	close(pfd[1]);
	ASSERT_EQ(1, read(pfd[0], &ok, 1));
	close(pfd[0]);
	/* Ours and the child's two: its calls are held by the server, its
	 * FETCH waits, both parked on queues. */
	EXPECT_EQ(3, krpc_counter("ucq_live"));
	EXPECT_EQ(4, krpc_counter("files_open"));
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFSIGNALED(st));
	/* Its files went: the commands completed, its queues are freed. */
	EXPECT_EQ(1, krpc_counter_wait("ucq_live", 1, 5000));
	EXPECT_EQ(2, krpc_counter_wait("files_open", 2, 5000));
}

/* ---------------------------------------------------------------------- */
/* A server whose slot commands complete into a queue */

struct cq_srv {
	struct echo_srv e;
	struct krpc_cq cq;
	unsigned long served;
	int shut;		/* slots that reported -ESHUTDOWN */
	int err;
	pthread_t thread;
};

static void *cq_srv_fn(void *arg)
{
	struct cq_srv *s = arg;
	struct io_uring_sqe *sqe;
	const struct krpc_cqe *e;
	uint32_t slot;

	for (slot = 0; slot < s->e.nr_slots; slot++) {
		sqe = io_uring_get_sqe(s->e.k.ring);
		krpc_prep_fetch(&s->e.k, sqe, s->e.srv.handle, slot, UD);
		krpc_sqe_set_cq(sqe, &s->cq, slot);
	}
	io_uring_submit(s->e.k.ring);
	__atomic_store_n(&s->e.ready, 1, __ATOMIC_RELEASE);
	while (s->shut < (int)s->e.nr_slots) {
		if (krpc_cq_wait(s->e.k.fd, &s->cq, 10000) != 1) {
			s->err = -ETIME;
			break;
		}
		while ((e = krpc_cq_peek(&s->cq))) {
			uint32_t buf = KRPC_RES2_BUF(e->res2);
			int res = e->res;

			slot = (uint32_t)e->tag;
			if (e->cmd_op != KRPC_CMD_FETCH &&
			    e->cmd_op != KRPC_CMD_REPLY_FETCH && !s->err)
				s->err = -EPROTO;
			if (s->e.last[slot] != KRPC_BUF_NONE)
				krpc_buf_free(s->e.k.fd, &s->e.pool,
					      &s->e.last[slot], 1);
			s->e.last[slot] = KRPC_BUF_NONE;
			if (res < 0) {
				if (res == -ESHUTDOWN)
					s->shut++;
				else if (!s->err)
					s->err = res;
				krpc_cq_advance(&s->cq, 1);
				continue;
			}
			s->served++;
			s->e.last[slot] = buf;
			sqe = io_uring_get_sqe(s->e.k.ring);
			krpc_prep_reply(&s->e.k, sqe, s->e.srv.handle, slot,
					buf, KRPC_RES2_OFFSET(e->res2),
					buf == KRPC_BUF_NONE ? 0 : (uint32_t)res,
					0, 1, UD);
			krpc_sqe_set_cq(sqe, &s->cq, slot);
			krpc_cq_advance(&s->cq, 1);
			io_uring_submit(s->e.k.ring);
		}
	}
	return NULL;
}

TEST_F(ucq, server_slots_complete_into_a_queue)
{
	struct cq_srv s;
	struct echo_clnt c2;
	struct io_uring_cqe *cqe;
	uint32_t i;

	ASSERT_EQ(0, echo_srv_setup(&s.e, PORT_CQSRV, 4, 64,
				    variant->ring_flags));
	ASSERT_EQ(0, krpc_cq_create(s.e.k.fd, 8, &s.cq));
	s.served = 0;
	s.shut = 0;
	s.err = 0;
	for (i = 0; i < 4; i++)
		s.e.last[i] = KRPC_BUF_NONE;
	ASSERT_EQ(0, pthread_create(&s.thread, NULL, cq_srv_fn, &s));
	ASSERT_EQ(0, clnt_start(&c2, TEST_ADDR, PORT_CQSRV, 64, 0, 4));
	for (i = 0; i < 100; i++)
		ASSERT_EQ(0, echo_once(&c2, i, (i * 4099) % (BUF_SIZE + 1)))
			TH_LOG("echo %u", i);
	clnt_stop(&c2);
	while (!__atomic_load_n(&s.e.ready, __ATOMIC_ACQUIRE))
		usleep(1000);
	/* Every slot's REPLY_FETCH now reports -ESHUTDOWN into the queue. */
	EXPECT_EQ(0, krpc_srv_close(s.e.k.fd, &s.e.srv));
	pthread_join(s.thread, NULL);
	EXPECT_EQ(0, s.err);
	EXPECT_EQ(100, s.served);
	EXPECT_EQ(4, s.shut);
	/* Nothing reached the io_uring CQ. */
	EXPECT_NE(0, io_uring_peek_cqe(s.e.k.ring, &cqe));
	EXPECT_EQ(0, krpc_cq_destroy(s.e.k.fd, &s.cq));
	krpc_pool_destroy(s.e.k.fd, &s.e.pool);
	krpc_close(&s.e.k);
	free(s.e.last);
}

TEST_HARNESS_MAIN
