// SPDX-License-Identifier: GPL-2.0
/*
 * krpc_bench: the kernel path of krpc-bench.  An echo server and a load
 * generator that use krpc.ko through its exported API only (kmod/krpc.h),
 * driven by krpc-bench --path kernel through /sys/kernel/debug/krpc_bench/:
 *
 *   cmd	write one command; the write fails with its error
 *   result	the current run: counters and the latency histogram
 *
 * Commands:
 *   server_start PORT [ADDR]	listen; method 1 echoes (NOSLEEP handler)
 *   server_stop
 *   cq_mode N			enum krpc_cq_mode of the next server_start and
 *				run (0 default, 1 irq, 2 poll)
 *   server_delay USECS		the echo's think time: 0 replies from the
 *				handler, else from a timer (softirq) that
 *				long after the request arrived (at most 1 s)
 *   run KEY=VALUE...		connect and keep DEPTH calls in flight on each
 *				connection: addr, port, transport (rdma, tcp
 *				or auto), req,
 *				reply (bytes), depth, conns, calls (stop
 *				recording after that many; 0: until stop),
 *				verify (0: stamps only; 1: every byte)
 *   mark			start recording (after the warm-up)
 *   stop			stop recording, drain, disconnect
 *
 * Each call slot resubmits itself from its completion (softirq; krpc_call_
 * async() does not sleep), so a depth-1 connection measures the round trip
 * and nothing else.  A slot whose resubmission fails (no pool buffer) is
 * picked up again by the run's kthread.  Latencies go into the log-linear
 * histogram of ../hist.h; krpc-bench computes the percentiles.
 */
#include <linux/module.h>
#include <linux/debugfs.h>
#include <linux/slab.h>
#include <linux/inet.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/kthread.h>
#include <linux/delay.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>
#include <linux/ktime.h>
#include <linux/hrtimer.h>

#include "krpc.h"
#include "hist.h"

KRPC_IMPORT_NS();

#define M_ECHO		1
#define MAX_CONNS	64
#define MAX_DEPTH	1024

struct brun;

struct bslot {
	struct brun *run;
	struct krpc_client *clnt;
	atomic_t busy;
	u64 seq;
	u64 t0;
};

struct brun {
	size_t req, reply;
	unsigned int depth, nr_conns;
	u64 calls_max;
	bool verify;
	bool stopping;
	bool recording;
	bool done;
	struct krpc_client *clnt[MAX_CONNS];
	struct bslot *slots;		/* nr_conns * depth */
	atomic_t inflight;
	wait_queue_head_t wq;
	struct task_struct *feeder;
	atomic_t idle;			/* slots waiting for the feeder */
	/* what "mark" resets */
	atomic64_t calls, errors, bad, submit_fail, sum_ns, bytes;
	atomic64_t max_ns, min_ns;
	u64 t_mark, t_end;
	atomic64_t hist[KB_HIST_BUCKETS];
};

static struct dentry *dir;
static DEFINE_MUTEX(cmd_lock);
static struct krpc_server *srv;
static struct brun *run;
static unsigned int cq_mode;	/* of the next server and run */
static size_t srv_reply_len;	/* what the echo handler answers */
static unsigned int srv_delay_us;	/* server_delay */
/* Echoes waiting for their timer; server_stop waits for them. */
static atomic_t srv_delayed = ATOMIC_INIT(0);
static DECLARE_WAIT_QUEUE_HEAD(srv_delayed_wq);

static u8 pattern(u64 seed, size_t i)
{
	return (seed * 2654435761u + i * 40503u) >> 13;
}

/* Stamp the first and last 8 bytes (or every byte) with the sequence. */
static void stamp(struct brun *r, struct krpc_buf *buf, u64 seq)
{
	u8 *p = krpc_buf_data(buf);
	size_t i, len = r->req;

	if (r->verify) {
		for (i = 0; i < len; i++)
			p[i] = pattern(seq, i);
	} else if (len >= 16) {
		memcpy(p, &seq, 8);
		memcpy(p + len - 8, &seq, 8);
	}
	krpc_buf_set_len(buf, len);
}

static bool reply_ok(struct brun *r, const struct krpc_buf *buf, u64 seq)
{
	const u8 *p;
	size_t i, len = buf ? krpc_buf_len(buf) : 0;

	if (len != r->reply)
		return false;
	if (r->reply != r->req || len < 16)
		return true;
	p = krpc_buf_data(buf);
	if (r->verify) {
		for (i = 0; i < len; i++)
			if (p[i] != pattern(seq, i))
				return false;
		return true;
	}
	return !memcmp(p, &seq, 8) && !memcmp(p + len - 8, &seq, 8);
}

static void slot_done(struct krpc_call *call, const struct krpc_result *res,
		      void *priv);

/*
 * Any context.  On failure the slot is idle and the feeder retries it.
 * @t0 starts the call's latency: the clock read at the slot's previous
 * completion when this call follows it, so a slot's latencies are its
 * loop period, measured as perftest's ib_send_lat measures its
 * iterations (from one post to the next), at one clock read per call.
 */
static int slot_submit(struct bslot *s, u64 t0)
{
	struct brun *r = s->run;
	struct krpc_call_args a = {
		.method = M_ECHO, .reply_max = r->reply,
		.done = slot_done, .priv = s,
	};
	int ret;

	if (r->req) {
		a.req.type = KRPC_PL_BUF;
		a.req.buf = krpc_buf_get(krpc_client_pool(s->clnt), r->req,
					 GFP_ATOMIC);
		if (IS_ERR(a.req.buf))
			return PTR_ERR(a.req.buf);
		stamp(r, a.req.buf, s->seq + 1);
	}
	s->seq++;
	s->t0 = t0;
	ret = krpc_call_async(s->clnt, &a, NULL);
	if (ret && r->req)
		krpc_buf_put(a.req.buf);
	return ret;
}

static void slot_idle(struct bslot *s)
{
	struct brun *r = s->run;

	atomic_set(&s->busy, 0);
	atomic_inc(&r->idle);
	if (atomic_dec_and_test(&r->inflight) || !READ_ONCE(r->stopping))
		wake_up(&r->wq);
}

static void record(struct brun *r, u64 ns)
{
	s64 old;

	atomic64_inc(&r->hist[kb_hist_index(ns)]);
	atomic64_add(ns, &r->sum_ns);
	atomic64_add(r->req, &r->bytes);
	old = atomic64_read(&r->max_ns);
	while ((s64)ns > old && !atomic64_try_cmpxchg(&r->max_ns, &old, ns))
		;
	old = atomic64_read(&r->min_ns);
	while ((s64)ns < old && !atomic64_try_cmpxchg(&r->min_ns, &old, ns))
		;
	if (atomic64_inc_return(&r->calls) == r->calls_max) {
		r->t_end = ktime_get_ns();
		WRITE_ONCE(r->recording, false);
		WRITE_ONCE(r->done, true);
		wake_up(&r->wq);
	}
}

static void slot_done(struct krpc_call *call, const struct krpc_result *res,
		      void *priv)
{
	struct bslot *s = priv;
	struct brun *r = s->run;
	u64 now = ktime_get_ns(), ns = now - s->t0;

	if (res->status)
		atomic64_inc(&r->errors);
	else if (!reply_ok(r, res->reply, s->seq))
		atomic64_inc(&r->bad);
	else if (READ_ONCE(r->recording))
		record(r, ns);
	krpc_buf_put(res->reply);
	/* A failed call stops its slot: the run's result shows errors. */
	if (res->status || READ_ONCE(r->stopping)) {
		atomic_set(&s->busy, 0);
		if (atomic_dec_and_test(&r->inflight))
			wake_up(&r->wq);
		return;
	}
	if (slot_submit(s, now)) {
		atomic64_inc(&r->submit_fail);
		slot_idle(s);
	}
}

/* Starts every slot, then restarts those whose resubmission failed. */
static int feeder_fn(void *arg)
{
	struct brun *r = arg;
	unsigned int i, n = r->nr_conns * r->depth;

	while (!kthread_should_stop()) {
		wait_event_interruptible_timeout(r->wq,
			atomic_read(&r->idle) || kthread_should_stop(),
			HZ / 10);
		if (READ_ONCE(r->stopping))
			continue;
		if (!atomic_read(&r->idle))
			continue;
		atomic_set(&r->idle, 0);
		for (i = 0; i < n; i++) {
			struct bslot *s = &r->slots[i];

			if (READ_ONCE(r->stopping))
				break;
			if (atomic_cmpxchg(&s->busy, 0, 1))
				continue;
			atomic_inc(&r->inflight);
			if (slot_submit(s, ktime_get_ns())) {
				atomic64_inc(&r->submit_fail);
				slot_idle(s);
				usleep_range(500, 1000);
			}
		}
	}
	return 0;
}

static int parse_addr(const char *s, u16 port, struct sockaddr_storage *ss)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (in4_pton(s, -1, (u8 *)&sin->sin_addr, -1, NULL)) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		return 0;
	}
	if (in6_pton(s, -1, (u8 *)&sin6->sin6_addr, -1, NULL)) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		return 0;
	}
	return -EINVAL;
}

/* ---------------------------------------------------------------------- */
/* Server */

/* An echo answered server_delay after its request: a server's work. */
struct delayed_echo {
	struct hrtimer timer;
	struct krpc_req *req;
	struct krpc_buf *reply;
};

/* Softirq (HRTIMER_MODE_REL_SOFT), as the handler itself. */
static enum hrtimer_restart delayed_echo_fire(struct hrtimer *t)
{
	struct delayed_echo *d = container_of(t, struct delayed_echo, timer);

	/* Only a gone connection fails it; krpc dropped the reply then. */
	krpc_req_reply(d->req, 0, d->reply);
	kfree(d);
	if (atomic_dec_and_test(&srv_delayed))
		wake_up(&srv_delayed_wq);
	return HRTIMER_NORESTART;
}

static int echo_reply(struct krpc_req *req, struct krpc_buf *b)
{
	unsigned int us = READ_ONCE(srv_delay_us);
	struct delayed_echo *d;

	if (!us)
		return krpc_req_reply(req, 0, b);
	d = kmalloc(sizeof(*d), GFP_ATOMIC);
	if (!d) {
		if (b)
			krpc_buf_put(b);
		return -ENOMEM;
	}
	d->req = req;
	d->reply = b;
	atomic_inc(&srv_delayed);
	hrtimer_setup(&d->timer, delayed_echo_fire, CLOCK_MONOTONIC,
		      HRTIMER_MODE_REL_SOFT);
	hrtimer_start(&d->timer, ns_to_ktime((u64)us * NSEC_PER_USEC), HRTIMER_MODE_REL_SOFT);
	return 0;
}

/* NOSLEEP: runs in softirq.  The request buffer goes back as the reply. */
static int h_echo(struct krpc_req *req, void *priv)
{
	size_t want = READ_ONCE(srv_reply_len);
	struct krpc_buf *b = krpc_req_take_payload(req);

	if (b && krpc_buf_room(b) < want) {
		krpc_buf_put(b);
		b = NULL;
	}
	if (!b && want) {
		b = krpc_buf_get(krpc_req_pool(req), want, GFP_ATOMIC);
		if (IS_ERR(b))
			return PTR_ERR(b);
	}
	if (b && !want) {
		krpc_buf_put(b);
		b = NULL;
	}
	if (b)
		krpc_buf_set_len(b, want);
	return echo_reply(req, b);
}

static int cmd_server_start(char **argv, int argc)
{
	struct krpc_server_opts o = {};
	struct krpc_server *s;
	u16 port;
	int ret;

	if (srv)
		return -EBUSY;
	if (argc < 2 || kstrtou16(argv[1], 0, &port))
		return -EINVAL;
	ret = parse_addr(argc > 2 ? argv[2] : "0.0.0.0", port, &o.addr);
	if (ret)
		return ret;
	o.depth = MAX_DEPTH;
	/* Both transports on the port: clients choose theirs. */
	o.transport = KRPC_XPRT_AUTO;
	o.cq_mode = cq_mode;
	s = krpc_server_create(&o);
	if (IS_ERR(s))
		return PTR_ERR(s);
	ret = krpc_server_register(s, M_ECHO, h_echo, NULL, KRPC_METHOD_NOSLEEP);
	if (ret) {
		krpc_server_destroy(s);
		return ret;
	}
	srv = s;
	return 0;
}

/*
 * krpc_server_destroy() waits for every request to be answered, delayed
 * ones included; then wait for their timers to return, and for the RCU
 * grace period that ends the softirq they ran in (the module may go next).
 */
static void server_stop(void)
{
	if (srv)
		krpc_server_destroy(srv);
	srv = NULL;
	wait_event(srv_delayed_wq, !atomic_read(&srv_delayed));
	synchronize_rcu();
}

/* ---------------------------------------------------------------------- */
/* Load generator */

static void run_free(struct brun *r)
{
	unsigned int i;

	if (r->feeder)
		kthread_stop(r->feeder);
	for (i = 0; i < r->nr_conns; i++)
		if (r->clnt[i])
			krpc_client_destroy(r->clnt[i]);
	kvfree(r->slots);
	kvfree(r);
}

static void snapshot(struct brun *r);

static void run_stop(void)
{
	struct brun *r = run;

	if (!r)
		return;
	if (READ_ONCE(r->recording)) {
		r->t_end = ktime_get_ns();
		WRITE_ONCE(r->recording, false);
	}
	WRITE_ONCE(r->stopping, true);
	if (r->feeder) {
		kthread_stop(r->feeder);
		r->feeder = NULL;
	}
	if (!wait_event_timeout(r->wq, !atomic_read(&r->inflight), 60 * HZ))
		pr_warn("krpc_bench: %d calls still in flight\n",
			atomic_read(&r->inflight));
	snapshot(r);
	/* Destroying the clients completes whatever is left. */
	run_free(r);
	run = NULL;
}

struct run_opts {
	char addr[48];
	u16 port;
	unsigned int transport;
	unsigned int depth, conns;
	size_t req, reply;
	u64 calls;
	bool verify;
};

/* rdma, tcp or auto: enum krpc_xprt. */
static int parse_transport(const char *v, unsigned int *t)
{
	if (!strcmp(v, "rdma"))
		*t = KRPC_XPRT_RDMA;
	else if (!strcmp(v, "tcp"))
		*t = KRPC_XPRT_TCP;
	else if (!strcmp(v, "auto"))
		*t = KRPC_XPRT_AUTO;
	else
		return -EINVAL;
	return 0;
}

static int parse_run(char **argv, int argc, struct run_opts *o)
{
	int i;

	for (i = 1; i < argc; i++) {
		char *v = strchr(argv[i], '=');
		int ret = 0;

		if (!v)
			return -EINVAL;
		*v++ = 0;
		if (!strcmp(argv[i], "addr"))
			ret = strscpy(o->addr, v, sizeof(o->addr)) < 0 ? -EINVAL : 0;
		else if (!strcmp(argv[i], "port"))
			ret = kstrtou16(v, 0, &o->port);
		else if (!strcmp(argv[i], "transport"))
			ret = parse_transport(v, &o->transport);
		else if (!strcmp(argv[i], "req"))
			ret = kstrtoul(v, 0, &o->req);
		else if (!strcmp(argv[i], "reply"))
			ret = kstrtoul(v, 0, &o->reply);
		else if (!strcmp(argv[i], "depth"))
			ret = kstrtouint(v, 0, &o->depth);
		else if (!strcmp(argv[i], "conns"))
			ret = kstrtouint(v, 0, &o->conns);
		else if (!strcmp(argv[i], "calls"))
			ret = kstrtou64(v, 0, &o->calls);
		else if (!strcmp(argv[i], "verify"))
			ret = kstrtobool(v, &o->verify);
		else
			ret = -EINVAL;
		if (ret)
			return ret;
	}
	if (!o->depth || o->depth > MAX_DEPTH || !o->conns ||
	    o->conns > MAX_CONNS || !o->port || !o->addr[0])
		return -EINVAL;
	return 0;
}

static int cmd_run(char **argv, int argc)
{
	struct run_opts o = { .depth = 1, .conns = 1,
			      .transport = KRPC_XPRT_RDMA };
	struct krpc_client_opts co = {};
	unsigned int i;
	struct brun *r;
	int ret;

	if (run)
		return -EBUSY;
	ret = parse_run(argv, argc, &o);
	if (ret)
		return ret;
	ret = parse_addr(o.addr, o.port, &co.addr);
	if (ret)
		return ret;
	r = kvzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	r->slots = kvcalloc(o.conns * o.depth, sizeof(*r->slots), GFP_KERNEL);
	if (!r->slots) {
		kvfree(r);
		return -ENOMEM;
	}
	r->req = o.req;
	r->reply = o.reply;
	r->depth = o.depth;
	r->calls_max = o.calls;
	r->verify = o.verify;
	init_waitqueue_head(&r->wq);
	atomic64_set(&r->min_ns, S64_MAX);
	WRITE_ONCE(srv_reply_len, o.reply);
	co.depth = o.depth;
	co.transport = o.transport;
	co.cq_mode = cq_mode;
	for (i = 0; i < o.conns; i++) {
		r->clnt[i] = krpc_client_create(&co);
		if (IS_ERR(r->clnt[i])) {
			ret = PTR_ERR(r->clnt[i]);
			r->clnt[i] = NULL;
			goto out_free;
		}
		r->nr_conns = i + 1;
	}
	for (i = 0; i < o.conns * o.depth; i++) {
		r->slots[i].run = r;
		r->slots[i].clnt = r->clnt[i / o.depth];
	}
	atomic_set(&r->idle, 1);	/* the feeder starts every slot */
	r->feeder = kthread_run(feeder_fn, r, "krpc_bench");
	if (IS_ERR(r->feeder)) {
		ret = PTR_ERR(r->feeder);
		r->feeder = NULL;
		goto out_free;
	}
	run = r;
	return 0;

out_free:
	run_free(r);
	return ret;
}

static int cmd_mark(void)
{
	struct brun *r = run;
	unsigned int i;

	if (!r)
		return -EINVAL;
	WRITE_ONCE(r->recording, false);
	/* Completions racing with the reset are lost, not miscounted much. */
	atomic64_set(&r->calls, 0);
	atomic64_set(&r->errors, 0);
	atomic64_set(&r->bad, 0);
	atomic64_set(&r->submit_fail, 0);
	atomic64_set(&r->sum_ns, 0);
	atomic64_set(&r->bytes, 0);
	atomic64_set(&r->max_ns, 0);
	atomic64_set(&r->min_ns, S64_MAX);
	for (i = 0; i < KB_HIST_BUCKETS; i++)
		atomic64_set(&r->hist[i], 0);
	r->done = false;
	r->t_end = 0;
	r->t_mark = ktime_get_ns();
	WRITE_ONCE(r->recording, true);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* debugfs */

static int cmd_server_delay(char **argv, int argc)
{
	unsigned int us;

	if (argc != 2 || kstrtouint(argv[1], 0, &us) || us > USEC_PER_SEC)
		return -EINVAL;
	WRITE_ONCE(srv_delay_us, us);
	return 0;
}

static int run_cmd(char *line)
{
	char *argv[16], *p = line, *tok;
	int argc = 0;

	while ((tok = strsep(&p, " \t")) && argc < ARRAY_SIZE(argv))
		if (*tok)
			argv[argc++] = tok;
	if (!argc)
		return -EINVAL;
	if (!strcmp(argv[0], "server_start"))
		return cmd_server_start(argv, argc);
	if (!strcmp(argv[0], "server_stop")) {
		server_stop();
		return 0;
	}
	if (!strcmp(argv[0], "cq_mode"))
		return argc == 2 ? kstrtouint(argv[1], 0, &cq_mode) : -EINVAL;
	if (!strcmp(argv[0], "server_delay"))
		return cmd_server_delay(argv, argc);
	if (!strcmp(argv[0], "run"))
		return cmd_run(argv, argc);
	if (!strcmp(argv[0], "mark"))
		return cmd_mark();
	if (!strcmp(argv[0], "stop")) {
		if (!run)
			return -EINVAL;
		run_stop();
		return 0;
	}
	return -EOPNOTSUPP;
}

static ssize_t cmd_write(struct file *f, const char __user *ubuf, size_t len,
			 loff_t *ppos)
{
	char line[256];
	int ret;

	if (len >= sizeof(line))
		return -EINVAL;
	if (copy_from_user(line, ubuf, len))
		return -EFAULT;
	line[len] = 0;
	mutex_lock(&cmd_lock);
	ret = run_cmd(strim(line));
	mutex_unlock(&cmd_lock);
	return ret ? ret : len;
}

static const struct file_operations cmd_fops = {
	.owner = THIS_MODULE,
	.write = cmd_write,
	.llseek = noop_llseek,
};

/*
 * The result of the last run stays readable after "stop" until the next
 * "run": keep a copy.
 */
static struct {
	bool valid;
	u64 calls, errors, bad, submit_fail, sum_ns, bytes, max_ns, min_ns;
	u64 elapsed_ns;
	bool recording, done;
	unsigned int inflight;
	u64 hist[KB_HIST_BUCKETS];
} snap;

static void snapshot(struct brun *r)
{
	unsigned int i;
	u64 end;

	snap.calls = atomic64_read(&r->calls);
	snap.errors = atomic64_read(&r->errors);
	snap.bad = atomic64_read(&r->bad);
	snap.submit_fail = atomic64_read(&r->submit_fail);
	snap.sum_ns = atomic64_read(&r->sum_ns);
	snap.bytes = atomic64_read(&r->bytes);
	snap.max_ns = atomic64_read(&r->max_ns);
	snap.min_ns = atomic64_read(&r->min_ns);
	snap.recording = READ_ONCE(r->recording);
	snap.done = READ_ONCE(r->done);
	snap.inflight = atomic_read(&r->inflight);
	end = r->t_end ? r->t_end : ktime_get_ns();
	snap.elapsed_ns = r->t_mark ? end - r->t_mark : 0;
	for (i = 0; i < KB_HIST_BUCKETS; i++)
		snap.hist[i] = atomic64_read(&r->hist[i]);
	snap.valid = true;
}

static int result_show(struct seq_file *m, void *unused)
{
	unsigned int i;

	mutex_lock(&cmd_lock);
	if (run)
		snapshot(run);
	if (snap.valid) {
		seq_printf(m, "running %d\nrecording %d\ndone %d\ninflight %u\n",
			   !!run, snap.recording, snap.done, snap.inflight);
		seq_printf(m, "calls %llu\nerrors %llu\nbad %llu\nsubmit_fail %llu\n",
			   snap.calls, snap.errors, snap.bad, snap.submit_fail);
		seq_printf(m, "elapsed_ns %llu\nsum_ns %llu\nbytes %llu\nmin_ns %llu\nmax_ns %llu\n",
			   snap.elapsed_ns, snap.sum_ns, snap.bytes,
			   snap.calls ? snap.min_ns : 0, snap.max_ns);
		for (i = 0; i < KB_HIST_BUCKETS; i++)
			if (snap.hist[i])
				seq_printf(m, "hist %u %llu\n", i, snap.hist[i]);
	} else {
		seq_puts(m, "running 0\n");
	}
	mutex_unlock(&cmd_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(result);

static int __init krpc_bench_init(void)
{
	dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	if (IS_ERR(dir))
		return PTR_ERR(dir);
	debugfs_create_file("cmd", 0200, dir, NULL, &cmd_fops);
	debugfs_create_file("result", 0400, dir, NULL, &result_fops);
	return 0;
}

static void __exit krpc_bench_exit(void)
{
	debugfs_remove_recursive(dir);
	mutex_lock(&cmd_lock);
	run_stop();
	server_stop();
	mutex_unlock(&cmd_lock);
}

module_init(krpc_bench_init);
module_exit(krpc_bench_exit);
MODULE_DESCRIPTION("krpc echo benchmark through the exported kernel API");
MODULE_LICENSE("GPL");
