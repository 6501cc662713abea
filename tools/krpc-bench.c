// SPDX-License-Identifier: GPL-2.0
/*
 * krpc-bench: echo benchmark of krpc, userspace path (libkrpc over
 * io_uring) or kernel path (the exported API, driven through the
 * krpc_bench module in tools/bench/module/).
 *
 *   krpc-bench [OPTIONS]                 server (forked) and client here
 *   krpc-bench --mode server [OPTIONS]   user-path server only
 *   krpc-bench --mode client -a ADDR ... client of a remote server
 *   krpc-bench --caps                    transports and paths, as JSON
 *
 * Each client thread has its own /dev/krpc context, ring and pool, opens
 * --conns connections and keeps --depth calls in flight on each.  The
 * request buffer of a call is reused for the next call of its slot, replies
 * are given back to the kernel 16 at a time through the ring: no payload is
 * copied and no buffer registered per call, which krpc's counters confirm
 * (copies, data_path_regs in the output).
 *
 * The measurement: --warmup seconds of load, then counters, /proc/stat and
 * the latency histogram are reset and run for --duration seconds (or
 * --calls calls).  Latencies go into a log-linear histogram (hist.h);
 * percentiles are accurate to 1/32 of their value.  CPU time per call is
 * busy time of the whole machine (/proc/stat: both sides, softirq
 * included) divided by calls, and per process for the user path.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>
#include <arpa/inet.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <liburing.h>

#include "libkrpc.h"
#include "bench/hist.h"

#define M_ECHO		1
#define FREE_UD		(~0ULL)		/* user_data of BUF_FREE commands */
#define KDBG		"/sys/kernel/debug/krpc_bench/"

enum transport { T_RDMA, T_TCP, T_AUTO };
static const char *const transport_names[] = { "rdma", "tcp", "auto" };
/* --cq-mode: enum krpc_cq_mode's order; the uapi's KRPC_CONN_F_* below. */
static const char *const cq_mode_names[] = { "default", "irq", "poll" };
static const uint32_t cq_mode_flags[] = {
	0, KRPC_CONN_F_CQ_IRQ, KRPC_CONN_F_CQ_POLL,
};

static struct opts {
	enum transport transport;
	int kernel;			/* --path kernel */
	uint32_t req, reply;
	uint32_t depth, conns, threads;
	double duration, warmup, progress;
	uint64_t calls;
	int json, verify, sqpoll, busy, defer, cq, kpoll;
	unsigned int cq_mode;		/* cq_mode_names[] */
	uint32_t server_delay;		/* us, kernel path */
	uint32_t free_batch;
	const char *addr;
	uint16_t port;
	const char *mode;
	const char *module;
} o = {
	.req = 64, .reply = UINT32_MAX, .depth = 1, .conns = 1, .threads = 1,
	.duration = 3, .warmup = 1, .progress = -1, .addr = "192.0.2.1",
	.port = 18600, .mode = "both", .free_batch = KRPC_CMD_BUFS_MAX,
};

static volatile sig_atomic_t stop_flag;
static volatile int recording, stopping;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("krpc-bench: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static uint8_t pattern(uint64_t seed, uint32_t i)
{
	return (uint8_t)((seed * 2654435761u + i * 40503u) >> 13);
}

/*
 * Which transports the loaded krpc offers: RDMA always, TCP (and so auto)
 * when the module announces KRPC_FEAT_TCP.  Refused rather than silently
 * measured over RDMA.
 */
static int transport_supported(enum transport t)
{
	struct krpc_info info;
	int fd, ret;

	if (t == T_RDMA)
		return 0;
	fd = krpc_dev_open(0);
	if (fd < 0)
		return fd;
	ret = krpc_dev_info(fd, &info);
	close(fd);
	if (ret)
		return ret;
	return info.features & KRPC_FEAT_TCP ? 0 : -EOPNOTSUPP;
}

/* The uapi's KRPC_TRANSPORT_* for a client of @t. */
static uint32_t uapi_transport(enum transport t)
{
	return t == T_TCP ? KRPC_TRANSPORT_TCP :
	       t == T_AUTO ? KRPC_TRANSPORT_AUTO : KRPC_TRANSPORT_RDMA;
}

/* ---------------------------------------------------------------------- */
/* Results */

struct stats {
	uint64_t calls, errors, bad, sum_ns, min_ns, max_ns, bytes;
	uint64_t hist[KB_HIST_BUCKETS];
};

static void stats_reset(struct stats *s)
{
	memset(s, 0, sizeof(*s));
	s->min_ns = UINT64_MAX;
}

static void stats_add(struct stats *to, const struct stats *s)
{
	unsigned int i;

	to->calls += s->calls;
	to->errors += s->errors;
	to->bad += s->bad;
	to->sum_ns += s->sum_ns;
	to->bytes += s->bytes;
	if (s->min_ns < to->min_ns)
		to->min_ns = s->min_ns;
	if (s->max_ns > to->max_ns)
		to->max_ns = s->max_ns;
	for (i = 0; i < KB_HIST_BUCKETS; i++)
		to->hist[i] += s->hist[i];
}

static void stats_record(struct stats *s, uint64_t ns, uint32_t bytes)
{
	s->hist[kb_hist_index(ns)]++;
	s->calls++;
	s->sum_ns += ns;
	s->bytes += bytes;
	if (ns < s->min_ns)
		s->min_ns = ns;
	if (ns > s->max_ns)
		s->max_ns = ns;
}

/* Value at quantile q: the middle of its bucket, within [min, max]. */
static double percentile_us(const struct stats *s, double q)
{
	uint64_t want = (uint64_t)ceil(q * s->calls), seen = 0;
	unsigned int i;

	if (!s->calls)
		return NAN;
	if (!want)
		want = 1;
	for (i = 0; i < KB_HIST_BUCKETS; i++) {
		seen += s->hist[i];
		if (seen >= want) {
			double v = kb_hist_low(i) + (kb_hist_width(i) - 1) / 2.0;

			if (v < s->min_ns)
				v = s->min_ns;
			if (v > s->max_ns)
				v = s->max_ns;
			return v / 1000.0;
		}
	}
	return s->max_ns / 1000.0;
}

/* Busy time of the whole machine (every CPU), in ticks. */
static uint64_t machine_busy_ticks(void)
{
	unsigned long long v[10] = { 0 };
	FILE *f = fopen("/proc/stat", "r");
	int n;

	if (!f)
		return 0;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
		   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	if (n < 8)
		return 0;
	/* user nice system [idle] [iowait] irq softirq steal */
	return v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
}

/* utime + stime of a process (all its threads), in ticks. */
static uint64_t proc_ticks(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut = 0, st = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &ut, &st) != 2)
		return 0;
	return ut + st;
}

static long proc_rss_kb(pid_t pid)
{
	char path[64], line[128];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* A counter of /sys/kernel/debug/krpc/stats, or -1. */
static long long krpc_stat(const char *name)
{
	char line[128], key[64];
	long long v, found = -1;
	FILE *f = fopen("/sys/kernel/debug/krpc/stats", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lld", key, &v) == 2 && !strcmp(key, name))
			found = v;
	fclose(f);
	return found;
}

static const char *const counters[] = {
	"conn_copies", "conn_dp_regs", "conn_eager", "conn_rdv",
	"conn_mr_grants", "conn_rnr_naks", "conn_credit_stalls",
	"conn_retries", "conn_credit_msgs", "conn_unsignaled", "pool_empty",
	"poll_sleeps",
};
#define NR_COUNTERS (sizeof(counters) / sizeof(counters[0]))

struct sample {
	uint64_t t_ns, busy, client, server;
	long long cnt[NR_COUNTERS];
};

static void sample(struct sample *s, pid_t server)
{
	unsigned int i;

	s->busy = machine_busy_ticks();
	s->client = proc_ticks(getpid());
	s->server = server > 0 ? proc_ticks(server) : 0;
	for (i = 0; i < NR_COUNTERS; i++)
		s->cnt[i] = krpc_stat(counters[i]);
	s->t_ns = now_ns();
}

static void jnum(const char *key, double v)
{
	if (isfinite(v))
		printf(",\"%s\":%.3f", key, v);
	else
		printf(",\"%s\":null", key);
}

/* Calls that failed outside the measurement (user path): not in stats. */
static uint64_t unmeasured_errors;

static void report(const struct stats *s, const struct sample *a,
		   const struct sample *b, double elapsed, long client_rss,
		   long server_rss, uint64_t pool_bytes)
{
	double tick_us = 1e6 / sysconf(_SC_CLK_TCK);
	double calls = s->calls ? (double)s->calls : NAN;
	double rate = s->calls / elapsed;
	unsigned int i;

	if (!o.json) {
		printf("krpc-bench: %s path, %s, %u B -> %u B, depth %u x %u conns x %u threads\n",
		       o.kernel ? "kernel" : "user", transport_names[o.transport],
		       o.req, o.reply, o.depth, o.conns, o.threads);
		printf("  %" PRIu64 " calls in %.2f s: %.0f calls/s, %.2f MB/s\n",
		       s->calls, elapsed, rate, s->bytes / elapsed / 1048576);
		printf("  latency us: mean %.1f p50 %.1f p99 %.1f p99.9 %.1f max %.1f\n",
		       s->calls ? s->sum_ns / 1000.0 / s->calls : NAN,
		       percentile_us(s, 0.5), percentile_us(s, 0.99),
		       percentile_us(s, 0.999), s->max_ns / 1000.0);
		printf("  cpu us/call: machine %.1f", (b->busy - a->busy) * tick_us / calls);
		if (!o.kernel)
			printf(", client %.1f, server %.1f",
			       (b->client - a->client) * tick_us / calls,
			       (b->server - a->server) * tick_us / calls);
		printf("\n  memory: pools %" PRIu64 " KiB", pool_bytes / 1024);
		if (client_rss >= 0)
			printf(", rss client %ld KiB, server %ld KiB",
			       client_rss, server_rss);
		printf("\n  errors %" PRIu64 " (%" PRIu64 " more outside the measurement), bad replies %" PRIu64 ", copies %lld, data-path registrations %lld\n",
		       s->errors, unmeasured_errors, s->bad,
		       b->cnt[0] - a->cnt[0], b->cnt[1] - a->cnt[1]);
		return;
	}
	printf("{\"tool\":\"krpc-bench\",\"transport\":\"%s\",\"path_kind\":\"%s\"",
	       transport_names[o.transport], o.kernel ? "kernel" : "user");
	printf(",\"req_size\":%u,\"reply_size\":%u,\"conns\":%u,\"threads\":%u",
	       o.req, o.reply, o.conns, o.threads);
	printf(",\"sqpoll\":%d,\"busy_poll\":%d,\"kernel_poll\":%d,\"defer\":%d,\"cq\":%d,\"verify\":%d",
	       o.sqpoll, o.busy, o.kpoll, o.defer, o.cq, o.verify);
	printf(",\"cq_mode\":\"%s\",\"server_delay_us\":%u",
	       cq_mode_names[o.cq_mode], o.server_delay);
	printf(",\"calls\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"unmeasured_errors\":%" PRIu64 ",\"bad\":%" PRIu64,
	       s->calls, s->errors, unmeasured_errors, s->bad);
	jnum("elapsed_s", elapsed);
	jnum("calls_per_s", rate);
	jnum("mb_per_s", s->bytes / elapsed / 1048576);
	jnum("lat_avg_us", s->calls ? s->sum_ns / 1000.0 / s->calls : NAN);
	jnum("lat_min_us", s->calls ? s->min_ns / 1000.0 : NAN);
	jnum("lat_p50_us", percentile_us(s, 0.5));
	jnum("lat_p99_us", percentile_us(s, 0.99));
	jnum("lat_p999_us", percentile_us(s, 0.999));
	jnum("lat_max_us", s->calls ? s->max_ns / 1000.0 : NAN);
	jnum("cpu_us_per_call", (b->busy - a->busy) * tick_us / calls);
	if (!o.kernel) {
		jnum("client_cpu_us_per_call", (b->client - a->client) * tick_us / calls);
		jnum("server_cpu_us_per_call", (b->server - a->server) * tick_us / calls);
		printf(",\"client_rss_kb\":%ld,\"server_rss_kb\":%ld",
		       client_rss, server_rss);
	}
	printf(",\"pool_kb\":%" PRIu64, pool_bytes / 1024);
	printf(",\"copies\":%lld,\"data_path_regs\":%lld", b->cnt[0] - a->cnt[0],
	       b->cnt[1] - a->cnt[1]);
	for (i = 2; i < NR_COUNTERS; i++)
		printf(",\"%s\":%lld", counters[i] + (strncmp(counters[i], "conn_", 5) ? 0 : 5),
		       b->cnt[i] - a->cnt[i]);
	printf("}\n");
}

/* ---------------------------------------------------------------------- */
/* User path: the ring */

static unsigned int ring_flags(void)
{
	if (o.sqpoll)
		return KRPC_RING_SQPOLL;
	/* One task submits and reaps: the ring is set up by that task. */
	return o.defer ? KRPC_RING_DEFER : 0;
}

static struct io_uring_sqe *get_sqe(struct krpc *k)
{
	struct io_uring_sqe *sqe;

	while (!(sqe = io_uring_get_sqe(k->ring))) {
		io_uring_submit(k->ring);
		if (o.sqpoll)
			io_uring_sqring_wait(k->ring);
	}
	return sqe;
}

/* One completion, from the io_uring CQ or from a krpc completion queue. */
struct compl {
	uint64_t ud;		/* user_data, or the queue entry's tag */
	uint64_t res2;
	int res;
};

#define COMPL_BATCH	64

/* Take what completed, without waiting. */
static unsigned int collect(struct krpc *k, struct krpc_cq *cq,
			    struct compl *out)
{
	struct io_uring_cqe *cqe;
	unsigned int head, n = 0, seen = 0;
	const struct krpc_cqe *e;

	io_uring_for_each_cqe(k->ring, head, cqe) {
		if (n == COMPL_BATCH)
			break;
		out[n].ud = cqe->user_data;
		out[n].res = cqe->res;
		out[n++].res2 = krpc_cqe_res2(cqe);
		seen++;
	}
	io_uring_cq_advance(k->ring, seen);
	if (!cq)
		return n;
	seen = 0;
	while (n < COMPL_BATCH && krpc_cq_ready(cq) > seen) {
		e = &cq->cqes[(cq->head + seen++) & cq->mask];
		out[n].ud = e->tag;
		out[n].res = e->res;
		out[n++].res2 = e->res2;
	}
	if (seen)
		krpc_cq_advance(cq, seen);
	return n;
}

/*
 * Submit what is queued and wait for completions: spin with --busy-poll
 * until there is one (in the kernel, reaping the polled CQs, with
 * --kernel-poll), else sleep once in the kernel (io_uring_enter(), or
 * poll() on /dev/krpc and the ring with --cq).  Return how many (0 after
 * a wait cut short by a signal), or -errno.
 */
static int reap(struct krpc *k, struct krpc_cq *cq, struct compl *out)
{
	struct pollfd p[2] = {
		{ .fd = k->fd, .events = POLLIN },
		{ .fd = k->ring->ring_fd, .events = POLLIN },
	};
	unsigned int n;
	int ret;

	if (o.busy || cq) {
		ret = io_uring_submit(k->ring);
		if (ret < 0 && ret != -EINTR && ret != -EBUSY)
			return ret;
	}
	n = collect(k, cq, out);
	if (n)
		return n;
	if (o.busy) {
		while (!(n = collect(k, cq, out))) {
			if (stop_flag || stopping)
				return -EAGAIN;
			if (!o.kpoll)
				continue;
			ret = krpc_cq_busy_poll(k->fd, cq, 1000);
			if (ret < 0 && ret != -EINTR)
				return ret;
		}
		return n;
	}
	if (cq) {
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return -errno;
	} else {
		ret = io_uring_submit_and_wait(k->ring, 1);
		if (ret < 0 && ret != -EINTR && ret != -EBUSY)
			return ret;
	}
	return collect(k, cq, out);
}

/* With --cq, a prepared data-path command completes into @cq. */
static void use_cq(struct io_uring_sqe *sqe, struct krpc_cq *cq, uint64_t tag)
{
	if (cq && krpc_sqe_set_cq(sqe, cq, tag))
		die("krpc_sqe_set_cq: not a data-path command");
}

/* Buffers handed back to the kernel in batches through the ring. */
struct freeq {
	struct krpc *k;
	uint32_t pool;
	uint32_t n;
	uint32_t bufs[KRPC_CMD_BUFS_MAX];
};

static void freeq_flush(struct freeq *q)
{
	struct krpc_cmd_bufs c;

	if (!q->n)
		return;
	memset(&c, 0, sizeof(c));
	c.pool = q->pool;
	c.count = q->n;
	memcpy(c.bufs, q->bufs, q->n * sizeof(q->bufs[0]));
	krpc_prep_cmd(q->k, get_sqe(q->k), KRPC_CMD_BUF_FREE, &c, sizeof(c),
		      FREE_UD);
	q->n = 0;
}

static void freeq_add(struct freeq *q, uint32_t buf)
{
	if (buf == KRPC_BUF_NONE)
		return;
	q->bufs[q->n++] = buf;
	if (q->n >= o.free_batch)
		freeq_flush(q);
}

/*
 * Pool buffers for @slots calls in flight over @conns connections (@slots
 * is the sum of their depths).  Per call: the request, the reply held
 * until a free batch goes out, and the READ target or reply destination
 * of the next call; per connection depth + 4 posted receives; two free
 * batches; and the eighth the kernel keeps for receives.
 */
/*
 * User path: payloads above one pool buffer travel in the pool's large
 * buffers, of this size (0: none needed).
 */
static uint32_t large_size(void)
{
	uint32_t n = o.req > o.reply ? o.req : o.reply;

	if (n <= KRPC_POOL_BUF_MAX)
		return 0;
	return (n + KRPC_POOL_BUF_MAX - 1) / KRPC_POOL_BUF_MAX * KRPC_POOL_BUF_MAX;
}

/*
 * Large buffers per pool: a request and a reply per slot (the server's
 * request buffer is its reply buffer), those waiting in a free batch
 * (freeq), and a few more.
 */
static uint32_t large_count(uint32_t slots)
{
	uint64_t n = 2ULL * slots + 2ULL * o.free_batch + 4;

	return n > KRPC_POOL_COUNT_MAX ? KRPC_POOL_COUNT_MAX : (uint32_t)n;
}

/* A pool of @count buffers, and of large buffers when the sizes ask. */
static int bench_pool_create(int fd, uint32_t count, uint32_t slots,
			     struct krpc_pool *pool)
{
	if (!large_size())
		return krpc_pool_create(fd, NULL, KRPC_POOL_BUF_MAX, count, pool);
	return krpc_pool_create_large(fd, NULL, KRPC_POOL_BUF_MAX, count,
				      large_size(), large_count(slots), pool);
}

/* One buffer for a payload of @len bytes: a large one above a buffer. */
static int bench_buf_alloc(int fd, const struct krpc_pool *pool,
			   uint32_t len, uint32_t *bufs, unsigned int n)
{
	if (len > pool->buf_size)
		return krpc_buf_alloc_large(fd, pool, bufs, n);
	return krpc_buf_alloc(fd, pool, bufs, n);
}

static uint32_t pool_count(uint32_t slots, uint32_t conns)
{
	uint64_t n = 4ULL * slots + 4ULL * conns + 2 * KRPC_CMD_BUFS_MAX + 16;

	n = n * 8 / 7 + 1;
	return n > KRPC_POOL_COUNT_MAX ? KRPC_POOL_COUNT_MAX : (uint32_t)n;
}

/* A ring or queue size: a power of two from 8, @want or more, @max at most. */
static unsigned int pow2_entries(uint32_t want, unsigned int max)
{
	unsigned int n = 8;

	while (n < want && n < max)
		n <<= 1;
	return n;
}

/* SQ entries for @slots commands in flight plus two free batches. */
#define ring_entries(slots)	pow2_entries((slots) + 2 * KRPC_CMD_BUFS_MAX, 4096)

/* ---------------------------------------------------------------------- */
/* User path: server */

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

struct server {
	struct krpc k;
	struct krpc_pool pool;
	struct krpc_srv srv;
	struct krpc_cq cq;
	uint32_t *last;
};

static int server_setup(struct server *s, uint32_t nr_slots)
{
	uint32_t method = M_ECHO;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int ret;

	sin.sin_port = htons(o.port);
	s->last = calloc(nr_slots, sizeof(*s->last));
	if (!s->last)
		return -ENOMEM;
	ret = krpc_open(&s->k, ring_entries(nr_slots), ring_flags());
	if (ret)
		return ret;
	ret = bench_pool_create(s->k.fd, pool_count(nr_slots, nr_slots),
				nr_slots, &s->pool);
	if (ret)
		return ret;
	if (o.cq) {
		ret = krpc_cq_create(s->k.fd,
				     pow2_entries(nr_slots, KRPC_CQ_ENTRIES_MAX),
				     &s->cq);
		if (ret)
			return ret;
	}
	/* Clients over tcp or auto find a listener on both transports. */
	return krpc_listen_flags(s->k.fd, &s->pool, (struct sockaddr *)&sin,
				 sizeof(sin), nr_slots, &method, 1,
				 o.transport == T_RDMA ? KRPC_TRANSPORT_RDMA :
							 KRPC_TRANSPORT_AUTO,
				 cq_mode_flags[o.cq_mode], &s->srv);
}

/* Answer every request with its own buffer (resized) until a signal. */
static int serve(struct server *s)
{
	struct freeq q = { .k = &s->k, .pool = s->pool.handle };
	struct krpc_cq *cq = o.cq ? &s->cq : NULL;
	uint32_t slot, n = s->srv.nr_slots;
	struct compl done[COMPL_BATCH];
	struct io_uring_sqe *sqe;

	for (slot = 0; slot < n; slot++) {
		s->last[slot] = KRPC_BUF_NONE;
		sqe = get_sqe(&s->k);
		krpc_prep_fetch(&s->k, sqe, s->srv.handle, slot, slot);
		use_cq(sqe, cq, slot);
	}
	while (!stop_flag) {
		int i, nr = reap(&s->k, cq, done);

		for (i = 0; i < nr; i++) {
			uint64_t res2 = done[i].res2;
			uint32_t buf, off, len;
			int res = done[i].res;

			if (done[i].ud == FREE_UD) {
				if (res < 0)
					fprintf(stderr, "krpc-bench: server: buffer free: %s\n",
						strerror(-res));
				continue;
			}
			slot = (uint32_t)done[i].ud;
			freeq_add(&q, s->last[slot]);
			s->last[slot] = KRPC_BUF_NONE;
			if (res < 0) {
				if (res != -ESHUTDOWN)
					fprintf(stderr, "krpc-bench: server: fetch: %s\n",
						strerror(-res));
				continue;
			}
			buf = KRPC_RES2_BUF(res2);
			off = KRPC_RES2_OFFSET(res2);
			len = o.reply;
			if (!len || buf == KRPC_BUF_NONE) {
				freeq_add(&q, buf);
				buf = KRPC_BUF_NONE;
				off = 0;
			}
			if (len && buf != KRPC_BUF_NONE &&
			    len > krpc_pool_buf_size(&s->pool, buf)) {
				/* a reply bigger than the request's buffer */
				freeq_add(&q, buf);
				buf = KRPC_BUF_NONE;
				off = 0;
			}
			if (len && buf == KRPC_BUF_NONE &&
			    bench_buf_alloc(s->k.fd, &s->pool, len, &buf, 1) != 1) {
				buf = KRPC_BUF_NONE;
				len = 0;
			}
			if (buf != KRPC_BUF_NONE &&
			    off + len > krpc_pool_buf_size(&s->pool, buf))
				off = 0;	/* a sized reply: content is not checked */
			s->last[slot] = buf;
			sqe = get_sqe(&s->k);
			krpc_prep_reply(&s->k, sqe, s->srv.handle,
					slot, buf, off, buf == KRPC_BUF_NONE ? 0 : len,
					buf == KRPC_BUF_NONE && len ? -ENOBUFS : 0,
					1, slot);
			use_cq(sqe, cq, slot);
		}
	}
	return 0;
}

static uint32_t total_slots(void)
{
	uint64_t n = (uint64_t)o.threads * o.conns * o.depth;

	return n > KRPC_SLOTS_MAX ? KRPC_SLOTS_MAX : (uint32_t)n;
}

/* Fork the server; return its pid once it listens. */
static pid_t server_fork(void)
{
	struct server s;
	int pfd[2], err = 0;
	pid_t pid;

	if (pipe(pfd))
		die("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		close(pfd[0]);
		memset(&s, 0, sizeof(s));
		err = server_setup(&s, total_slots());
		if (write(pfd[1], &err, sizeof(err)) != sizeof(err) || err)
			_exit(1);
		close(pfd[1]);
		serve(&s);
		krpc_srv_close(s.k.fd, &s.srv);
		_exit(0);
	}
	close(pfd[1]);
	if (read(pfd[0], &err, sizeof(err)) != sizeof(err))
		err = -EPIPE;
	close(pfd[0]);
	if (err) {
		waitpid(pid, NULL, 0);
		die("server: %s", strerror(-err));
	}
	return pid;
}

/* ---------------------------------------------------------------------- */
/* User path: client */

struct slot {
	uint32_t conn;
	uint32_t buf;
	uint64_t seq;
	uint64_t t0;
};

struct client {
	pthread_t thread;
	unsigned int id;
	struct krpc k;
	struct krpc_pool pool;
	struct krpc_cq cq;
	int conn[64];
	struct slot *slots;
	uint32_t nr_slots;
	struct stats st;
	volatile uint64_t progress;	/* calls recorded, read by main */
	volatile int finished;		/* every slot stopped (errors) */
	uint64_t unmeasured_errors;	/* failed calls in warm-up or wind-down */
	int call_err;			/* first failed call */
	int err;
};

/*
 * @t0 starts the call's latency: the clock read at the slot's previous
 * completion when this call follows it (the kernel path's slot_submit()
 * says why).
 */
static void slot_prep(struct client *c, struct slot *sl, uint32_t idx,
		      uint64_t t0)
{
	uint8_t *p = krpc_pool_buf(&c->pool, sl->buf);
	struct io_uring_sqe *sqe;
	uint32_t i;

	sl->seq++;
	if (o.verify) {
		for (i = 0; i < o.req; i++)
			p[i] = pattern(sl->seq, i);
	} else if (o.req >= 16) {
		memcpy(p, &sl->seq, 8);
		memcpy(p + o.req - 8, &sl->seq, 8);
	}
	sqe = get_sqe(&c->k);
	krpc_prep_call(&c->k, sqe, sl->conn, M_ECHO,
		       o.req ? sl->buf : KRPC_BUF_NONE, o.req, o.reply,
		       idx, idx);
	use_cq(sqe, o.cq ? &c->cq : NULL, idx);
	sl->t0 = t0;
}

static int reply_ok(struct client *c, const struct slot *sl, int res,
		    uint64_t res2)
{
	const uint8_t *p;
	uint32_t i;

	if (res != (int)o.reply)
		return 0;
	if (o.reply != o.req || o.reply < 16)
		return 1;
	p = (uint8_t *)krpc_pool_buf(&c->pool, KRPC_RES2_BUF(res2)) +
	    KRPC_RES2_OFFSET(res2);
	if (o.verify) {
		for (i = 0; i < o.reply; i++)
			if (p[i] != pattern(sl->seq, i))
				return 0;
		return 1;
	}
	return !memcmp(p, &sl->seq, 8) && !memcmp(p + o.reply - 8, &sl->seq, 8);
}

static int client_setup(struct client *c)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	uint32_t i, got;
	int ret;

	sin.sin_port = htons(o.port);
	if (inet_pton(AF_INET, o.addr, &sin.sin_addr) != 1)
		return -EINVAL;
	c->nr_slots = o.conns * o.depth;
	c->slots = calloc(c->nr_slots, sizeof(*c->slots));
	if (!c->slots)
		return -ENOMEM;
	ret = krpc_open(&c->k, ring_entries(c->nr_slots), ring_flags());
	if (ret)
		return ret;
	ret = bench_pool_create(c->k.fd, pool_count(c->nr_slots, o.conns),
				c->nr_slots, &c->pool);
	if (ret)
		return ret;
	if (o.cq) {
		ret = krpc_cq_create(c->k.fd,
				     pow2_entries(c->nr_slots, KRPC_CQ_ENTRIES_MAX),
				     &c->cq);
		if (ret)
			return ret;
	}
	for (i = 0; i < o.conns; i++) {
		c->conn[i] = krpc_connect_flags(&c->k, &c->pool,
						(struct sockaddr *)&sin,
						sizeof(sin), o.depth,
						uapi_transport(o.transport),
						cq_mode_flags[o.cq_mode], NULL);
		if (c->conn[i] < 0)
			return c->conn[i];
	}
	for (i = 0; i < c->nr_slots; i += got) {
		uint32_t bufs[1024], j, want = c->nr_slots - i;

		if (want > 1024)
			want = 1024;
		ret = bench_buf_alloc(c->k.fd, &c->pool, o.req, bufs, want);
		if (ret < 0)
			return ret;
		got = ret;
		for (j = 0; j < got; j++) {
			c->slots[i + j].buf = bufs[j];
			c->slots[i + j].conn = c->conn[(i + j) / o.depth];
		}
	}
	return 0;
}

static pthread_barrier_t setup_done;

/*
 * Each client thread sets up its own ring: with --defer the ring takes
 * submissions from the task that created it only (SINGLE_ISSUER).
 */
static void *client_fn(void *arg)
{
	struct client *c = arg;
	struct freeq q = { .k = &c->k };
	struct compl done[COMPL_BATCH];
	uint32_t i, inflight = 0;

	c->err = client_setup(c);
	pthread_barrier_wait(&setup_done);
	if (c->err) {
		c->finished = 1;
		return NULL;
	}
	q.pool = c->pool.handle;
	for (i = 0; i < c->nr_slots; i++)
		slot_prep(c, &c->slots[i], i, now_ns());
	inflight = c->nr_slots;
	while (inflight) {
		int n = reap(&c->k, o.cq ? &c->cq : NULL, done), j;

		if (n == -EAGAIN || n == -EINTR)
			continue;
		if (n < 0) {
			c->err = n;
			break;
		}
		for (j = 0; j < n; j++) {
			uint64_t res2 = done[j].res2, t = now_ns();
			int res = done[j].res;
			struct slot *sl;

			if (done[j].ud == FREE_UD) {
				if (res < 0 && !c->err)
					c->err = res;
				continue;
			}
			sl = &c->slots[done[j].ud];
			if (res < 0 && !c->call_err)
				c->call_err = res;
			if (res < 0) {
				c->st.errors++;
				if (!recording)
					c->unmeasured_errors++;
			}
			else if (!reply_ok(c, sl, res, res2))
				c->st.bad++;
			else if (recording) {
				stats_record(&c->st, t - sl->t0, o.req);
				c->progress = c->st.calls;
			}
			if (res >= 0)
				freeq_add(&q, KRPC_RES2_BUF(res2));
			if (res < 0 || stopping || stop_flag)
				inflight--;
			else
				slot_prep(c, sl, (uint32_t)done[j].ud, t);
		}
		if (stopping || stop_flag)
			freeq_flush(&q);
	}
	freeq_flush(&q);
	io_uring_submit(c->k.ring);
	c->finished = 1;
	return NULL;
}

static void client_teardown(struct client *c)
{
	uint32_t i;

	for (i = 0; i < o.conns; i++)
		if (c->conn[i] > 0)
			krpc_close_handle(c->k.fd, c->conn[i]);
	if (c->cq.base)
		krpc_cq_destroy(c->k.fd, &c->cq);
	if (c->pool.base)
		krpc_pool_destroy(c->k.fd, &c->pool);
	if (c->k.ring)
		krpc_close(&c->k);
	free(c->slots);
}

/* ---------------------------------------------------------------------- */
/* The measurement, common to both paths */

struct path_ops {
	void (*mark)(void);		/* start recording */
	uint64_t (*progress)(void);	/* calls recorded so far */
	int (*done)(void);		/* --calls reached */
	void (*end)(void);		/* stop recording */
};

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) && errno == EINTR && !stop_flag)
		;
}

/* Warm up, then measure; return the elapsed seconds of the measurement. */
static double measure(const struct path_ops *ops, struct sample *a,
		      struct sample *b, pid_t server)
{
	double elapsed, next;
	uint64_t t0;

	sleep_s(o.warmup);
	sample(a, server);
	ops->mark();
	t0 = now_ns();
	next = o.progress > 0 ? o.progress : INFINITY;
	for (;;) {
		elapsed = (now_ns() - t0) / 1e9;
		if (stop_flag)
			break;
		if (o.calls ? ops->done() : elapsed >= o.duration)
			break;
		if (elapsed >= next) {
			uint64_t n = ops->progress();

			fprintf(stderr, "krpc-bench: %.0f s: %" PRIu64 " calls, %.0f calls/s\n",
				elapsed, n, n / elapsed);
			next += o.progress;
		}
		if (o.calls)
			usleep(10000);
		else
			sleep_s(fmin(o.duration - elapsed,
				     fmin(next - elapsed, 1.0)) + 1e-4);
	}
	ops->end();
	sample(b, server);
	return (b->t_ns - a->t_ns) / 1e9;
}

/* User path */

static struct client *clients;

static void user_mark(void)
{
	unsigned int i;

	recording = 0;
	__sync_synchronize();
	/* Client threads update their stats without locks: a few calls
	 * completing right now may straddle the reset, nothing worse. */
	for (i = 0; i < o.threads; i++) {
		stats_reset(&clients[i].st);
		clients[i].progress = 0;
	}
	__sync_synchronize();
	recording = 1;
}

static uint64_t user_progress(void)
{
	uint64_t n = 0;
	unsigned int i;

	for (i = 0; i < o.threads; i++)
		n += clients[i].progress;
	return n;
}

/* --calls reached, or no call left running (they failed). */
static int user_done(void)
{
	unsigned int i;

	for (i = 0; i < o.threads; i++)
		if (!clients[i].finished)
			return user_progress() >= o.calls;
	return 1;
}

static void user_end(void)
{
	recording = 0;
	__sync_synchronize();
}

static const struct path_ops user_ops = {
	user_mark, user_progress, user_done, user_end,
};

static int run_user(void)
{
	struct sample a, b;
	struct stats *total = malloc(sizeof(*total));
	pid_t server = 0;
	unsigned int i;
	double elapsed;
	long crss, srss = 0;
	int ret = 0;

	if (!total)
		die("out of memory");
	if (!strcmp(o.mode, "both"))
		server = server_fork();
	clients = calloc(o.threads, sizeof(*clients));
	if (!clients)
		die("out of memory");
	pthread_barrier_init(&setup_done, NULL, o.threads + 1);
	for (i = 0; i < o.threads; i++) {
		clients[i].id = i;
		stats_reset(&clients[i].st);
		pthread_create(&clients[i].thread, NULL, client_fn, &clients[i]);
	}
	pthread_barrier_wait(&setup_done);
	for (i = 0; i < o.threads && !ret; i++) {
		ret = clients[i].err;
		if (ret)
			fprintf(stderr, "krpc-bench: client %u: %s\n", i, strerror(-ret));
	}
	if (ret) {
		stopping = 1;
		for (i = 0; i < o.threads; i++)
			pthread_join(clients[i].thread, NULL);
		goto out;
	}
	elapsed = measure(&user_ops, &a, &b, server);
	crss = proc_rss_kb(getpid());
	if (server > 0)
		srss = proc_rss_kb(server);
	stopping = 1;
	stats_reset(total);
	for (i = 0; i < o.threads; i++) {
		pthread_join(clients[i].thread, NULL);
		stats_add(total, &clients[i].st);
		unmeasured_errors += clients[i].unmeasured_errors;
		if (clients[i].call_err)
			fprintf(stderr, "krpc-bench: client %u: a call failed: %s\n",
				i, strerror(-clients[i].call_err));
		if (clients[i].err && !ret)
			ret = clients[i].err;
	}
	report(total, &a, &b, elapsed, crss, srss,
	       (uint64_t)o.threads * clients[0].pool.length +
	       (server > 0 ? (uint64_t)pool_count(total_slots(), total_slots()) *
			     KRPC_POOL_BUF_MAX + (large_size() ? (uint64_t)
			     large_count(total_slots()) * large_size() : 0) : 0));
	if (ret)
		fprintf(stderr, "krpc-bench: %s\n", strerror(-ret));
	/* A failure in the warm-up is a failure too, if not measured. */
	if (total->errors || unmeasured_errors || total->bad || !total->calls)
		ret = ret ? ret : -EIO;
out:
	for (i = 0; i < o.threads; i++)
		client_teardown(&clients[i]);
	if (server > 0) {
		kill(server, SIGTERM);
		waitpid(server, NULL, 0);
	}
	free(total);
	return ret;
}

/* ---------------------------------------------------------------------- */
/* Kernel path: tools/bench/module/krpc_bench.ko through debugfs */

static int kcmd(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int fd, ret = 0;
	size_t len;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fd = open(KDBG "cmd", O_WRONLY);
	if (fd < 0)
		return -errno;
	len = strlen(line);
	if (write(fd, line, len) != (ssize_t)len)
		ret = -errno;
	close(fd);
	return ret;
}

/* Parse the module's result into @s; return "done". */
static int kresult(struct stats *s, uint64_t *inflight)
{
	char line[128], key[32];
	unsigned long long a, b;
	int done = 0;
	FILE *f = fopen(KDBG "result", "r");

	stats_reset(s);
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "hist %llu %llu", &a, &b) == 2) {
			if (a < KB_HIST_BUCKETS)
				s->hist[a] = b;
			continue;
		}
		if (sscanf(line, "%31s %llu", key, &a) != 2)
			continue;
		if (!strcmp(key, "calls"))
			s->calls = a;
		else if (!strcmp(key, "errors"))
			s->errors = a;
		else if (!strcmp(key, "bad"))
			s->bad = a;
		else if (!strcmp(key, "sum_ns"))
			s->sum_ns = a;
		else if (!strcmp(key, "bytes"))
			s->bytes = a;
		else if (!strcmp(key, "min_ns"))
			s->min_ns = a;
		else if (!strcmp(key, "max_ns"))
			s->max_ns = a;
		else if (!strcmp(key, "done"))
			done = a;
		else if (!strcmp(key, "inflight") && inflight)
			*inflight = a;
	}
	fclose(f);
	return done;
}

static void kernel_mark(void)
{
	int ret = kcmd("mark");

	if (ret)
		die("kernel path: mark: %s", strerror(-ret));
}

static uint64_t kernel_progress(void)
{
	static struct stats s;

	kresult(&s, NULL);
	return s.calls;
}

/* --calls reached, or every slot stopped on an error. */
static int kernel_done(void)
{
	static struct stats s;
	uint64_t inflight = 1;

	return kresult(&s, &inflight) || (!inflight && s.errors);
}

static void kernel_end(void)
{
}

static const struct path_ops kernel_ops = {
	kernel_mark, kernel_progress, kernel_done, kernel_end,
};

/* build/<release>/tools/bench/module/krpc_bench.ko next to build/user/tools. */
static int module_load(void)
{
	char exe[PATH_MAX], path[PATH_MAX + 128], *p;
	struct utsname u;
	ssize_t n;
	int fd, ret;

	if (!access(KDBG "cmd", W_OK))
		return 0;
	if (o.module) {
		snprintf(path, sizeof(path), "%s", o.module);
	} else {
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n < 0)
			return -errno;
		exe[n] = 0;
		p = strrchr(exe, '/');
		if (p)
			*p = 0;
		uname(&u);
		snprintf(path, sizeof(path),
			 "%s/../../%s/tools/bench/module/krpc_bench.ko", exe,
			 u.release);
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "krpc-bench: %s: %s (build it with make modules, or pass --module)\n",
			path, strerror(errno));
		return -errno;
	}
	ret = syscall(SYS_finit_module, fd, "", 0) ? -errno : 1;
	close(fd);
	return ret;
}

static uint64_t kernel_pool_bytes(void)
{
	static const char *const p[] = { "buf_size", "pool_small", "pool_medium",
					 "max_msg", "pool_large" };
	unsigned long long v[5] = { 0 };
	char path[96];
	unsigned int i;

	for (i = 0; i < 5; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "/sys/module/krpc/parameters/%s", p[i]);
		f = fopen(path, "r");
		if (!f)
			return 0;
		if (fscanf(f, "%llu", &v[i]) != 1)
			v[i] = 0;
		fclose(f);
	}
	/* the device pool the kernel path uses, client and server alike */
	return v[0] * v[1] + 65536ULL * v[2] + v[3] * v[4];
}

/* The kernel path's options for the next server_start and run. */
static int kserver_opts(void)
{
	int ret = kcmd("cq_mode %u", o.cq_mode);

	return ret ? ret : kcmd("server_delay %u", o.server_delay);
}

static int run_kernel(void)
{
	struct stats *s = malloc(sizeof(*s));
	struct sample a, b;
	double elapsed;
	int loaded, ret;

	if (!s)
		die("out of memory");
	if (o.threads != 1)
		fprintf(stderr, "krpc-bench: kernel path: --threads ignored (calls are resubmitted from their completions)\n");
	loaded = module_load();
	if (loaded < 0)
		return loaded;
	ret = kserver_opts();
	if (ret) {
		fprintf(stderr, "krpc-bench: kernel path: cq_mode, server_delay: %s\n",
			strerror(-ret));
		goto out_unload;
	}
	if (!strcmp(o.mode, "both")) {
		ret = kcmd("server_start %u", o.port);
		if (ret) {
			fprintf(stderr, "krpc-bench: kernel server: %s\n", strerror(-ret));
			goto out_unload;
		}
	}
	ret = kcmd("run addr=%s port=%u transport=%s req=%u reply=%u depth=%u conns=%u calls=%" PRIu64 " verify=%d",
		   o.addr, o.port, transport_names[o.transport], o.req, o.reply,
		   o.depth, o.conns, o.calls, o.verify);
	if (ret) {
		fprintf(stderr, "krpc-bench: kernel run: %s\n", strerror(-ret));
		goto out_server;
	}
	elapsed = measure(&kernel_ops, &a, &b, 0);
	ret = kcmd("stop");
	kresult(s, NULL);
	report(s, &a, &b, elapsed, -1, -1, kernel_pool_bytes());
	if (!ret && (s->errors || s->bad || !s->calls))
		ret = -EIO;
out_server:
	if (!strcmp(o.mode, "both"))
		kcmd("server_stop");
out_unload:
	if (loaded == 1)
		syscall(SYS_delete_module, "krpc_bench", O_NONBLOCK);
	free(s);
	return ret;
}

/* ---------------------------------------------------------------------- */

static __attribute__((noreturn)) void usage(int status)
{
	fprintf(status ? stderr : stdout,
"usage: krpc-bench [OPTIONS]\n"
"  -t, --transport T   rdma | tcp | auto                      [rdma]\n"
"  -p, --path P        user (libkrpc, io_uring) | kernel       [user]\n"
"  -s, --size N        request payload bytes                  [64]\n"
"  -r, --reply-size N  reply payload bytes                    [= size]\n"
"  -d, --depth N       outstanding calls per connection       [1]\n"
"  -c, --conns N       connections per thread (at most 64)    [1]\n"
"  -T, --threads N     client threads (user path)             [1]\n"
"  -D, --duration S    seconds measured                       [3]\n"
"  -n, --calls N       measure N calls instead of a duration\n"
"  -w, --warmup S      seconds of load before measuring       [1]\n"
"      --sqpoll        SQPOLL rings (user path, both sides)\n"
"      --busy-poll     spin on the completion queue (user path, both sides)\n"
"      --kernel-poll   spin in the kernel (KRPC_IOC_CQ_POLL), reaping polled\n"
"                      connections' completions; implies --busy-poll, needs --cq\n"
"      --defer         DEFER_TASKRUN + SINGLE_ISSUER rings (user path, both sides)\n"
"      --cq            calls and fetches complete into krpc completion queues,\n"
"                      not the io_uring CQ (user path, both sides)\n"
"      --cq-mode M     default | poll | irq: how each connection's RDMA\n"
"                      completions are reaped, both sides (default: as the\n"
"                      module parameter poll_usecs says)       [default]\n"
"      --server-delay US  the server answers each call US microseconds after\n"
"                      it arrives, from a timer (kernel path; at most 1 s) [0]\n"
"      --verify        fill and check every payload byte (else 16 stamped bytes)\n"
"      --json          one JSON object on stdout\n"
"      --progress S    progress line every S seconds on stderr [1 if the run is 5 s or longer]\n"
"  -a, --addr A        server IPv4 address                    [192.0.2.1]\n"
"  -P, --port N        port                                   [18600]\n"
"  -m, --mode M        both | server | client                 [both]\n"
"      --free-batch N  give reply buffers back N at a time (1..16) [16]\n"
"      --module PATH   krpc_bench.ko for --path kernel\n"
"      --caps          print the transports and paths of this build (JSON)\n");
	exit(status);
}

static unsigned long num_arg(const char *s, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || *end || v > max)
		die("bad number '%s'", s);
	return v;
}

/* The index of @arg in @names (three of them), or usage(2). */
static unsigned int name_arg(const char *const names[3], const char *arg)
{
	unsigned int i;

	for (i = 0; i < 3; i++)
		if (!strcmp(arg, names[i]))
			return i;
	usage(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "transport", 1, 0, 't' }, { "path", 1, 0, 'p' },
		{ "size", 1, 0, 's' }, { "reply-size", 1, 0, 'r' },
		{ "depth", 1, 0, 'd' }, { "conns", 1, 0, 'c' },
		{ "threads", 1, 0, 'T' }, { "duration", 1, 0, 'D' },
		{ "calls", 1, 0, 'n' }, { "warmup", 1, 0, 'w' },
		{ "sqpoll", 0, 0, 1 }, { "busy-poll", 0, 0, 2 },
		{ "verify", 0, 0, 3 }, { "json", 0, 0, 4 },
		{ "progress", 1, 0, 5 }, { "module", 1, 0, 6 },
		{ "caps", 0, 0, 7 }, { "free-batch", 1, 0, 8 },
		{ "defer", 0, 0, 9 }, { "cq", 0, 0, 10 },
		{ "kernel-poll", 0, 0, 11 }, { "cq-mode", 1, 0, 12 },
		{ "server-delay", 1, 0, 13 },
		{ "addr", 1, 0, 'a' },
		{ "port", 1, 0, 'P' }, { "mode", 1, 0, 'm' },
		{ "help", 0, 0, 'h' }, { 0 },
	};
	struct sigaction sa = { .sa_handler = on_signal };
	unsigned int i;
	int c, ret;

	while ((c = getopt_long(argc, argv, "t:p:s:r:d:c:T:D:n:w:a:P:m:h", lo, NULL)) != -1) {
		switch (c) {
		case 't':
			o.transport = name_arg(transport_names, optarg);
			break;
		case 'p':
			if (strcmp(optarg, "user") && strcmp(optarg, "kernel"))
				usage(2);
			o.kernel = !strcmp(optarg, "kernel");
			break;
		case 's': o.req = num_arg(optarg, 1U << 30); break;
		case 'r': o.reply = num_arg(optarg, 1U << 30); break;
		case 'd': o.depth = num_arg(optarg, 4096); break;
		case 'c': o.conns = num_arg(optarg, 64); break;
		case 'T': o.threads = num_arg(optarg, 256); break;
		case 'D': o.duration = atof(optarg); break;
		case 'n': o.calls = num_arg(optarg, ULONG_MAX); break;
		case 'w': o.warmup = atof(optarg); break;
		case 'a': o.addr = optarg; break;
		case 'P': o.port = num_arg(optarg, 65535); break;
		case 'm':
			if (strcmp(optarg, "both") && strcmp(optarg, "server") &&
			    strcmp(optarg, "client"))
				usage(2);
			o.mode = optarg;
			break;
		case 1: o.sqpoll = 1; break;
		case 2: o.busy = 1; break;
		case 9: o.defer = 1; break;
		case 10: o.cq = 1; break;
		case 11: o.kpoll = o.busy = 1; break;
		case 12: o.cq_mode = name_arg(cq_mode_names, optarg); break;
		case 13: o.server_delay = num_arg(optarg, 1000000); break;
		case 3: o.verify = 1; break;
		case 4: o.json = 1; break;
		case 5: o.progress = atof(optarg); break;
		case 6: o.module = optarg; break;
		case 8:
			o.free_batch = num_arg(optarg, KRPC_CMD_BUFS_MAX);
			if (!o.free_batch)
				usage(2);
			break;
		case 7:
			printf("{\"transports\":[");
			for (i = 0, c = 0; i < 2; i++)
				if (!transport_supported(i))
					printf("%s\"%s\"", c++ ? "," : "", transport_names[i]);
			printf("],\"paths\":[\"user\",\"kernel\"]}\n");
			return 0;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (optind != argc || !o.depth || !o.conns || !o.threads ||
	    o.duration <= 0 || o.warmup < 0 ||
	    (o.defer && (o.sqpoll || o.busy || o.cq)) || /* defer reaps in enter() */
	    (o.kpoll && !o.cq) || (o.server_delay && !o.kernel) ||
	    (o.cq && o.conns * o.depth > KRPC_CQ_ENTRIES_MAX))
		usage(2);
	if (o.reply == UINT32_MAX)
		o.reply = o.req;
	if (o.progress < 0)
		o.progress = o.duration >= 5 && !o.calls ? 1 : 0;
	ret = transport_supported(o.transport);
	if (ret) {
		fprintf(stderr, "krpc-bench: transport %s: not supported by this krpc (%s)\n",
			transport_names[o.transport], strerror(-ret));
		return 3;
	}
	if (!o.kernel && (o.req > KRPC_POOL_LARGE_MAX || o.reply > KRPC_POOL_LARGE_MAX)) {
		fprintf(stderr, "krpc-bench: user path: payloads are at most one %u-byte large pool buffer\n",
			KRPC_POOL_LARGE_MAX);
		return 3;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (!strcmp(o.mode, "server")) {
		struct server s;

		if (o.kernel) {
			int loaded = module_load();

			if (loaded < 0)
				return 1;
			ret = kserver_opts();
			if (!ret)
				ret = kcmd("server_start %u", o.port);
			if (ret)
				die("kernel server: %s", strerror(-ret));
			while (!stop_flag)
				pause();
			kcmd("server_stop");
			if (loaded == 1)
				syscall(SYS_delete_module, "krpc_bench", O_NONBLOCK);
			return 0;
		}
		memset(&s, 0, sizeof(s));
		ret = server_setup(&s, total_slots());
		if (ret)
			die("server: %s", strerror(-ret));
		serve(&s);
		krpc_srv_close(s.k.fd, &s.srv);
		return 0;
	}
	ret = o.kernel ? run_kernel() : run_user();
	if (ret == -EOPNOTSUPP)
		return 3;
	return ret ? 1 : 0;
}
