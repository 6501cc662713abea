// SPDX-License-Identifier: GPL-2.0
/*
 * 10,000 random commands against /dev/krpc, from a process that is then
 * killed with whatever is still in flight.  Fields are drawn from values
 * that hit the edges (valid handles, other kinds of handles, indexes at and
 * past the pool's end, offsets that wrap, reserved bits, flags) as well as
 * plain random bits.  A third of the data-path commands name a completion
 * queue of the file (which then fills up and refuses), and random
 * KRPC_IOC_CQ_CREATE calls make more.  The pools have large buffers
 * (indexes after the small ones), so buffer indexes, lengths and
 * KRPC_BUF_F_LARGE allocations hit both classes and the edges between
 * them; random KRPC_IOC_POOL_CREATE calls of both structure versions try
 * large sizes and counts at and past their limits.  The file also serves:
 * a connection of its own to its own server carries calls whose requests
 * its fuzzed FETCH and REPLY commands meet.  Pass: no splat (run_tests checks
 * the kernel log), the process dies, every counter returns to zero (queues
 * included) and krpc unloads.
 * KRPC_FUZZ_SEED replays a run.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "uring_lib.h"
#include "kselftest_harness.h"

#define PORT	7104
#define NCMDS	10000

#define NHANDLES	14
static uint32_t handles[NHANDLES];
static unsigned int nhandles;
static uint32_t cq_handle;	/* a completion queue of the fuzzing file */
/* Pools the fuzzed KRPC_IOC_POOL_CREATE calls made, with large buffers. */
static unsigned int pools_made, pools_large;
/* The fuzzing file's queue and connection, and how often they were redone. */
static struct krpc_cq *fz_cq;
static struct echo_clnt *fz_clnt;
static int self_conn;		/* to the fuzzing file's own server */
static unsigned int revived;

/* A connection of the fuzzing file to @port; @depth calls. */
static int fz_connect(uint16_t port, uint32_t depth)
{
	return lib_connect(&fz_clnt->k, &fz_clnt->pool, TEST_ADDR, port, depth,
			   env_transport(), 0, NULL);
}

static uint32_t rnd32(void)
{
	return ((uint32_t)random() << 16) ^ (uint32_t)random();
}

/* Large buffers of the fuzzing file's pool (and the echo server's). */
#define LARGE_SIZE	(2 * KRPC_POOL_BUF_MAX)
#define LARGE_COUNT	4

/* An interesting 32-bit value; @count: the pool's small buffers. */
static uint32_t pick(uint32_t count)
{
	switch (random() % 14) {
	case 0: return 0;
	case 1: return 1;
	case 2: return 0xffffffff;
	case 3: return KRPC_BUF_NONE;
	case 4: return count;
	case 5: return count - 1;
	case 6: return random() % (count ? count : 1);
	case 7: return handles[random() % nhandles];
	case 8: return BUF_SIZE - (random() % 64);
	case 9: return 1U << (random() % 32);
	case 10: return random() % 70000;
	case 11: return count + LARGE_COUNT - 1 + random() % 2;
	case 12: return LARGE_SIZE - (random() % 64) + random() % 2;
	default: return rnd32();
	}
}

static const uint32_t ops[] = {
	KRPC_CMD_CONNECT, KRPC_CMD_CALL, KRPC_CMD_CANCEL, KRPC_CMD_FETCH,
	KRPC_CMD_REPLY, KRPC_CMD_REPLY_FETCH, KRPC_CMD_BUF_ALLOC,
	KRPC_CMD_BUF_FREE,
};

#define NOPS	(sizeof(ops) / sizeof(ops[0]))
/* Per command: its cmd_op; successes per index in ops[] (NOPS: another). */
static uint32_t cmd_of[NCMDS];
static unsigned int op_ok[NOPS + 1];

static void count_ok(uint32_t cmd_op)
{
	unsigned int i;

	for (i = 0; i < NOPS && ops[i] != cmd_op; i++)
		;
	op_ok[i]++;
}

static void fuzz_one(struct krpc *k, struct io_uring_sqe *sqe, uint32_t count,
		     uint64_t ud)
{
	uint32_t w[20];
	unsigned int i, op_i = random() % (NOPS + 1);
	uint32_t op = op_i < NOPS ? ops[op_i] :
		      (random() & 1 ? rnd32() :
		       _IOWR(KRPC_IOC_MAGIC, random() % 256, struct krpc_cmd_call));

	for (i = 0; i < 20; i++)
		w[i] = random() % 3 ? 0 : pick(count);
	/*
	 * Mostly well-formed: zero reserved words and area past the
	 * structure (-EINVAL otherwise, before anything else), sane kinds.
	 */
	if (random() % 4) {
		if (op_i < NOPS && _IOC_SIZE(op) < sizeof(w))
			memset((char *)w + _IOC_SIZE(op), 0,
			       sizeof(w) - _IOC_SIZE(op));
		w[0] = handles[random() % nhandles];
		if (op == KRPC_CMD_CONNECT) {
			struct krpc_cmd_connect *c = (void *)w;

			memset(&c->reserved, 0, sizeof(c->reserved));
			c->reserved0 = 0;
			c->reserved1 = 0;
			/* Half the time the file's pool and a sane depth. */
			if (random() % 2) {
				c->pool = fz_clnt->pool.handle;
				c->depth = 1 + random() % 8;
			}
			c->flags = random() % 8 ? 0 : 1;
			c->connect_timeout_ms = random() % 2000;
			c->call_timeout_ms = random() % 2000;
			c->addr.family = random() % 8 ? AF_INET : pick(count);
			c->addr.port = htons(random() % 2 ? PORT : random());
			inet_pton(AF_INET, TEST_ADDR, c->addr.addr);
			if (random() % 8 == 0)
				c->addr.addr[random() % 16] ^= 1;
		} else if (op == KRPC_CMD_CALL) {
			struct krpc_cmd_call *c = (void *)w;

			c->method = random() % 2 ? M_ECHO : pick(count);
			c->timeout_ms = random() % 2 ? 100 + random() % 500 :
				pick(count);
			c->reserved0 = 0;
			c->reserved = 0;
			c->cq = random() % 3 ? 0 : (random() % 4 ? cq_handle :
							     pick(count));
			if (random() % 3)
				c->flags &= KRPC_CALL_F_ALL;
		} else if (op == KRPC_CMD_FETCH || op == KRPC_CMD_REPLY ||
			   op == KRPC_CMD_REPLY_FETCH) {
			struct krpc_cmd_slot *c = (void *)w;

			c->flags = 0;
			c->reserved = 0;
			c->cq = random() % 3 ? 0 : cq_handle;
			c->tag = rnd32();
		} else if (op == KRPC_CMD_BUF_FREE || op == KRPC_CMD_BUF_ALLOC) {
			w[1] = random() % 17;
			w[2] = random() % 4 ? 0 : (random() % 2 ?
					KRPC_BUF_F_LARGE : pick(count));
			w[3] = 0;
		}
	}
	cmd_of[ud] = op;
	krpc_prep_cmd(k, sqe, op, w, sizeof(w), ud);
}

/*
 * A pool of either structure version, mostly well formed: small and large
 * sizes and counts at, inside and past their limits (upool_max_mb refuses
 * the big ones).
 */
static void fuzz_pool_create(struct krpc_pool_create *pc, uint32_t count)
{
	static const uint32_t lsizes[] = {
		0, 2 * KRPC_POOL_BUF_MAX, 3 * KRPC_POOL_BUF_MAX,
		KRPC_POOL_BUF_MAX, KRPC_POOL_LARGE_MAX,
		KRPC_POOL_LARGE_MAX + KRPC_POOL_BUF_MAX,
		2 * KRPC_POOL_BUF_MAX + 4096,
	};
	static const uint32_t lcounts[] = {
		0, 1, 2, 8, KRPC_POOL_COUNT_MAX, KRPC_POOL_COUNT_MAX + 1,
	};

	/* Output and reserved fields zero, the first device, 7 times in 8. */
	if (random() % 8) {
		pc->reserved = pc->handle = 0;
		pc->mmap_offset = pc->mmap_length = 0;
		memset(pc->device, 0, sizeof(pc->device));
		if (random() % 4 == 0)
			strcpy(pc->device, random() % 2 ? "rxe0" : "nodev0");
	}
	pc->size = random() % 2 ? KRPC_POOL_CREATE_SIZE_VER1 :
				  KRPC_POOL_CREATE_SIZE_VER0;
	pc->flags = random() % 8 ? 0 : pick(count);
	pc->buf_size = random() % 4 ? KRPC_POOL_BUF_MAX : pick(count);
	pc->count = random() % 4 ? 1 + random() % 16 : pick(count);
	pc->large_size = random() % 8 ?
		lsizes[random() % (sizeof(lsizes) / sizeof(lsizes[0]))] :
		pick(count);
	pc->large_count = random() % 8 ?
		lcounts[random() % (sizeof(lcounts) / sizeof(lcounts[0]))] :
		pick(count);
}

/*
 * Most data-path commands name the fuzzing file's completion queue and
 * connections.  A fuzzed KRPC_IOC_CLOSE that ends one is followed by a new
 * one in its place, so that one early close does not leave the rest of
 * the run refused at the handle lookup (seed 1796464038 closed the queue
 * with its first ioctl, and no entry was ever posted).  The new one may be
 * refused too (the file's 64 queues made, a pool or a server's pool
 * emptied by fuzzed allocations and connections: -ENOBUFS, the file's own
 * server closed: -ECONNREFUSED); the run goes on without.
 */
static void revive(uint32_t closed)
{
	const char *what;
	unsigned int i;
	int h;

	if (closed == cq_handle) {
		what = "queue";
		munmap(fz_cq->base, fz_cq->length);
		memset(fz_cq, 0, sizeof(*fz_cq));
		h = krpc_cq_create(fz_clnt->k.fd, 16, fz_cq);
		if (!h)
			h = cq_handle = fz_cq->handle;
	} else if (closed == (uint32_t)fz_clnt->conn) {
		what = "connection";
		/* Other completions arriving meanwhile are dropped. */
		h = fz_clnt->conn = fz_connect(PORT, 8);
	} else if (closed == (uint32_t)self_conn) {
		what = "connection to the file's server";
		h = self_conn = fz_connect(PORT + 1, 4);
	} else {
		return;
	}
	if (h < 0) {
		fprintf(stderr, "fuzz: no new %s: %s\n", what, strerror(-h));
		return;
	}
	for (i = 0; i < nhandles; i++)
		if (handles[i] == closed)
			handles[i] = h;
	revived++;
}

static void fuzz_ioctl(struct krpc *k, uint32_t count)
{
	union {
		struct krpc_buf_arg b;
		struct krpc_handle_arg h;
		struct krpc_pool_create pc;
		uint32_t w[32];
	} u;
	uint32_t bufs[16];
	unsigned long req;
	static const unsigned long reqs[] = {
		KRPC_IOC_BUF_ALLOC, KRPC_IOC_BUF_FREE, KRPC_IOC_CLOSE,
		KRPC_IOC_POOL_DESTROY, KRPC_IOC_POOL_CREATE, KRPC_IOC_GET_INFO,
		KRPC_IOC_CQ_CREATE, KRPC_IOC_CQ_POLL,
	};
	unsigned int i;

	memset(&u, 0, sizeof(u));
	for (i = 0; i < 16; i++)
		bufs[i] = pick(count);
	for (i = 0; i < 32; i++)
		u.w[i] = random() % 4 ? 0 : pick(count);
	req = reqs[random() % (sizeof(reqs) / sizeof(reqs[0]))];
	/* Mostly the size the request's number names. */
	u.w[0] = random() % 4 ? _IOC_SIZE(req) : pick(count);
	u.w[1] = handles[random() % nhandles];
	if (random() % 2) {
		u.b.count = random() % 17;
		u.b.bufs = (uintptr_t)bufs;
		if (req == KRPC_IOC_BUF_ALLOC && random() % 2)
			u.b.flags = KRPC_BUF_F_LARGE;
	}
	if (req == KRPC_IOC_POOL_CREATE && random() % 2)
		fuzz_pool_create(&u.pc, count);
	/* A sleeping KRPC_IOC_CQ_POLL (0: no limit) sleeps 2 ms at most. */
	if (req == KRPC_IOC_CQ_POLL && (u.w[1] & KRPC_CQ_POLL_SLEEP))
		u.w[3] = 1 + u.w[3] % 2000;
	if (ioctl(k->fd, req, &u))
		return;
	if (req == KRPC_IOC_CLOSE && k == &fz_clnt->k)
		revive(u.h.handle);
	if (req != KRPC_IOC_POOL_CREATE)
		return;
	pools_made++;
	if (u.pc.size >= KRPC_POOL_CREATE_SIZE_VER1 && u.pc.large_count)
		pools_large++;
	/* A pool it made becomes a target too. */
	if (nhandles < NHANDLES)
		handles[nhandles++] = u.pc.handle;
}

TEST(fuzz_10000_commands)
{
	unsigned int seed = getenv("KRPC_FUZZ_SEED") ?
		strtoul(getenv("KRPC_FUZZ_SEED"), NULL, 0) : (unsigned int)time(NULL);
	int ready[2], status;
	char b;
	pid_t pid;

	/* Random pool sizes must not exhaust the guest: 64 MiB per user. */
	ASSERT_EQ(0, krpc_insmod("upool_max_mb=64"));
	TH_LOG("seed %u", seed);
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct echo_srv e;
		struct echo_clnt c;
		struct krpc other;
		unsigned int sent = 0, done = 0;
		uint32_t m = M_ECHO;
		struct krpc_srv s2;
		struct krpc_cq cq;
		struct sockaddr_in sin;

		srandom(seed);
		lib_large_size = LARGE_SIZE;
		lib_large_count = LARGE_COUNT;
		if (echo_start(&e, PORT, 8, 256))
			_exit(1);
		if (clnt_start(&c, TEST_ADDR, PORT, 96, 0, 8))
			_exit(2);
		if (krpc_open(&other, 8, 0))
			_exit(3);
		/* A server of the fuzzing file itself, for FETCH / REPLY. */
		sin_of(&sin, "0.0.0.0", PORT + 1);
		if (krpc_listen(c.k.fd, &c.pool, (struct sockaddr *)&sin,
				sizeof(sin), 4, &m, 1, &s2))
			_exit(4);
		if (krpc_cq_create(c.k.fd, 16, &cq))
			_exit(4);
		cq_handle = cq.handle;
		fz_cq = &cq;
		fz_clnt = &c;
		/* Its calls are requests that FETCH and REPLY then meet. */
		self_conn = fz_connect(PORT + 1, 4);
		if (self_conn < 0)
			_exit(4);
		handles[nhandles++] = cq.handle;
		handles[nhandles++] = c.conn;
		handles[nhandles++] = self_conn;
		handles[nhandles++] = c.pool.handle;
		handles[nhandles++] = s2.handle;
		handles[nhandles++] = e.srv.handle;	/* another file's */
		handles[nhandles++] = e.pool.handle;	/* another file's */
		handles[nhandles++] = 0;
		handles[nhandles++] = 1000;
		handles[nhandles++] = 0xffffff;

		while (sent < NCMDS) {
			struct io_uring_cqe *cqe;
			struct __kernel_timespec ts = { .tv_nsec = 1000000 };
			unsigned int n = 0;

			while (n < 32 && sent < NCMDS) {
				struct io_uring_sqe *sqe = io_uring_get_sqe(c.k.ring);

				if (!sqe)
					break;
				fuzz_one(&c.k, sqe, c.pool.count, sent);
				sent++;
				n++;
				if (random() % 16 == 0)
					fuzz_ioctl(random() % 2 ? &c.k : &other,
						   c.pool.count);
			}
			io_uring_submit(c.k.ring);
			while (!io_uring_wait_cqe_timeout(c.k.ring, &cqe, &ts)) {
				uint32_t rb = KRPC_RES2_BUF(krpc_cqe_res2(cqe));

				if (cqe->res >= 0 && cqe->user_data < NCMDS)
					count_ok(cmd_of[cqe->user_data]);
				/* Handles the fuzzer made become targets too. */
				if (cqe->res > 0 && nhandles < NHANDLES)
					handles[nhandles++] = cqe->res;
				if (rb != KRPC_BUF_NONE && random() % 2)
					krpc_buf_free(c.k.fd, &c.pool, &rb, 1);
				io_uring_cqe_seen(c.k.ring, cqe);
				done++;
			}
			if (!cq.base)	/* closed, and no new one */
				continue;
			/* The queue's entries, consumed most of the time. */
			while (krpc_cq_ready(&cq) && random() % 8) {
				const struct krpc_cqe *e = krpc_cq_peek(&cq);
				uint32_t rb = KRPC_RES2_BUF(e->res2);

				if (e->res >= 0)
					count_ok(e->cmd_op);
				if (rb != KRPC_BUF_NONE && random() % 2)
					krpc_buf_free(c.k.fd, &c.pool, &rb, 1);
				krpc_cq_advance(&cq, 1);
				done++;
			}
			/* Now and then a head that lies. */
			if (random() % 64 == 0)
				*cq.khead = rnd32();
			else if (random() % 64 == 0)
				*cq.khead = cq.head;
		}
		fprintf(stderr, "fuzz: %u commands, %u completions, %u pools made (%u with large buffers), queue or connection closed and redone %u times\n",
			sent, done, pools_made, pools_large, revived);
		fprintf(stderr, "fuzz: succeeded: CONNECT %u CALL %u CANCEL %u FETCH %u REPLY %u REPLY_FETCH %u BUF_ALLOC %u BUF_FREE %u other %u\n",
			op_ok[0], op_ok[1], op_ok[2], op_ok[3], op_ok[4],
			op_ok[5], op_ok[6], op_ok[7], op_ok[8]);
		if (write(ready[1], &done, 1) != 1)
			_exit(5);
		pause();
		_exit(6);
	}
	close(ready[1]);
	ASSERT_EQ(1, read(ready[0], &b, 1));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(0, krpc_counter_wait("calls_live", 0, 10000));
	EXPECT_EQ(0, krpc_counter_wait("reqs_live", 0, 10000));
	EXPECT_EQ(0, krpc_counter_wait("files_open", 0, 10000));
	EXPECT_EQ(0, krpc_counter_wait("ucq_live", 0, 10000));
	EXPECT_LT(0, krpc_counter("ucq_posted"));
	EXPECT_EQ(0, sh("rmmod krpc"));
}

TEST_HARNESS_MAIN
