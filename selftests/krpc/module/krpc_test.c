// SPDX-License-Identifier: GPL-2.0
/*
 * krpc_test: exercises krpc.ko through its exported API only.
 *
 * Built twice, as krpc_test.ko and krpc_peer.ko (peer.c includes this
 * file), so that a server can live in a module of its own and be removed
 * while calls are in flight.  Each instance has /sys/kernel/debug/<name>/:
 *   cmd	write one command; the write fails with the test's error
 *   log	what the last commands found, for the shell driver
 *   info	the client connection as krpc_client_query() reports it, and
 *		when the last disconnect callback ran (CLOCK_BOOTTIME ms, the
 *		clock of /proc/uptime)
 *
 * Commands (addresses are IPv4 or IPv6 literals):
 *   server_start PORT [ADDR]	listen (ADDR defaults to the wildcard)
 *   server_stop		answer held requests, destroy the server
 *   connect ADDR PORT [DEPTH]	create the client
 *   connect_fail ADDR PORT ERR	client creation must fail with -ERR
 *   transport N		transport of the next server_start / connect
 *				(enum krpc_xprt: 0 default, 1 rdma, 2 tcp,
 *				3 auto); the module parameter sets the first
 *   cq_mode N			enum krpc_cq_mode of the next server_start /
 *				connect (0 default, 1 irq, 2 poll)
 *   max_conns N		krpc_server_opts.max_conns of the next
 *				server_start (0: the module parameter's)
 *   disconnect			destroy the client
 *   echo SIZE [COUNT]		synchronous echo, payload checked byte by byte
 *   nosleep_echo SIZE		echo through a KRPC_METHOD_NOSLEEP handler
 *   async N SIZE		N concurrent calls, replies delayed at random
 *   window			slots full: NOWAIT fails with -EAGAIN, a waiting
 *				call queues and completes after release
 *   timeout [SIZE]		a slow handler: -ETIMEDOUT, late reply dropped;
 *				with SIZE, a request of SIZE bytes whose echo
 *				comes back into the reply room it offered,
 *				after the call gave that room back
 *   cancel SIZE		cancel a held call: -ECANCELED
 *   samebuf SIZE		one buffer as request and reply destination
 *				(-EINVAL), then echoes answered with the
 *				request's payload itself (method 11)
 *   destroy_in_done		a call times out and its completion spins;
 *				krpc_client_destroy() must wait for it
 *   early_reply SIZE		two calls of SIZE bytes to tcp_peer's
 *				early_reply server, one second apart, every
 *				free buffer of SIZE overwritten until both
 *				complete
 *   inv_hold ROOM		a held call with a reply room of ROOM bytes
 *   inv_cancel			cancel it, and the server answers it
 *   inv_finish			one echo, then the cancelled call must have
 *				completed once with -ECANCELED
 *   nomethod			-EBADRQC from the peer
 *   handler_error		the handler's -EPROTO reaches the caller
 *   oneway N			N one-way messages, counted by the server
 *   oneway_close		a one-way message to the gate (M_GATE), a NOSLEEP
 *				echo answered at once, then disconnect: with
 *				krpc's fault_oneway_delay_ms the gate's handler
 *				starts after the connection closed
 *   toobig			a reply larger than allowed: -EMSGSIZE
 *   zombies			half the slots time out unanswered: the client
 *				resets the connection (-ETIMEDOUT)
 *   counters			no RNR NAK, no data-path registration; over RDMA
 *				no copy, over TCP copies and no key
 *   storm_start SIZE [hold|gate] keep calls in flight until storm_stop;
 *				with "hold" they go to the method that holds
 *				its requests (no reply comes until
 *				server_stop), with "gate" they are one-way
 *				messages to M_GATE
 *   storm_stop			every storm call completed exactly once
 *   gate_close			method 10 (M_GATE) holds its requests from now
 *   gate_open			answer the held ones; M_GATE answers at once
 *   gate_stat [N]		log how many M_GATE requests were answered and
 *				are held; fail unless N were answered
 */
#include <linux/module.h>
#include <linux/debugfs.h>
#include <linux/slab.h>
#include <linux/inet.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/kthread.h>
#include <linux/delay.h>
#include <linux/random.h>
#include <linux/seq_file.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include "krpc.h"

KRPC_IMPORT_NS();

/* Timing stretch for slow (debug, emulated) kernels; see rpc_lib.sh. */
static unsigned int slow = 1;
module_param(slow, uint, 0444);
MODULE_PARM_DESC(slow, "multiply the test's delays and bounds");

static unsigned int transport;
module_param(transport, uint, 0444);
MODULE_PARM_DESC(transport, "first transport (enum krpc_xprt)");

static unsigned int cq_mode;
static unsigned int max_conns;

enum {
	M_ECHO = 1,
	M_SHUFFLE,
	M_HOLD,
	M_SLEEP,
	M_ERR,
	M_COUNT,
	M_GETCOUNT,
	M_NOSLEEP_ECHO,
	M_BIG,
	M_GATE,
	M_ECHO_UNTAKEN,
};

#define LOG_SIZE	8192

static struct dentry *dir;
static DEFINE_MUTEX(cmd_lock);		/* one command at a time */
static char log_buf[LOG_SIZE];
static size_t log_len;
static DEFINE_SPINLOCK(log_lock);

static struct krpc_server *srv;
static struct krpc_client *clnt;
static atomic_t disconnects = ATOMIC_INIT(0);
static int disconnect_reason;
static u64 disconnect_ms;

/* Server state */
static LIST_HEAD(held);
static DEFINE_SPINLOCK(held_lock);
static unsigned int nr_held;
static atomic64_t oneway_count = ATOMIC64_INIT(0);
static bool stopping;		/* server_stop: answer at once, defer nothing */
static atomic_t deferred = ATOMIC_INIT(0);
static DECLARE_WAIT_QUEUE_HEAD(deferred_wq);

static __printf(1, 2) void tlog(const char *fmt, ...)
{
	va_list ap;

	spin_lock(&log_lock);
	va_start(ap, fmt);
	if (log_len < LOG_SIZE)
		log_len += vscnprintf(log_buf + log_len, LOG_SIZE - log_len,
				      fmt, ap);
	va_end(ap);
	spin_unlock(&log_lock);
}

#define fail(fmt, ...) ({ tlog("FAIL " fmt "\n", ##__VA_ARGS__); \
			  pr_err(KBUILD_MODNAME ": " fmt "\n", ##__VA_ARGS__); })

static u8 pattern(u32 seed, size_t i)
{
	return (seed * 31 + i * 131 + (i >> 9)) & 0xff;
}

static void fill(struct krpc_buf *buf, u32 seed, size_t len)
{
	u8 *p = krpc_buf_data(buf);
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = pattern(seed, i);
	krpc_buf_set_len(buf, len);
}

static int check(const struct krpc_buf *buf, u32 seed, size_t len)
{
	const u8 *p;
	size_t i;

	if (!len)
		return buf && krpc_buf_len(buf) ? -EBADMSG : 0;
	if (!buf || krpc_buf_len(buf) != len) {
		fail("reply length %zu, want %zu", buf ? krpc_buf_len(buf) : 0,
		     len);
		return -EBADMSG;
	}
	p = krpc_buf_data(buf);
	for (i = 0; i < len; i++) {
		if (p[i] != pattern(seed, i)) {
			fail("byte %zu is %#x, want %#x", i, p[i],
			     pattern(seed, i));
			return -EBADMSG;
		}
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Server side */

static int h_echo(struct krpc_req *req, void *priv)
{
	/* The request buffer goes back as the reply: zero copy. */
	krpc_req_reply(req, 0, krpc_req_take_payload(req));
	return 0;
}

struct deferred_reply {
	struct delayed_work work;
	struct krpc_req *req;
	int status;
};

static void deferred_fn(struct work_struct *w)
{
	struct deferred_reply *d = container_of(to_delayed_work(w),
						struct deferred_reply, work);
	struct krpc_req *req = d->req;

	krpc_req_reply(req, d->status, d->status ? NULL :
		       krpc_req_take_payload(req));
	kfree(d);
	if (atomic_dec_and_test(&deferred))
		wake_up(&deferred_wq);
}

static int defer(struct krpc_req *req, unsigned int ms, int status)
{
	struct deferred_reply *d;

	if (READ_ONCE(stopping))
		return -ESHUTDOWN;
	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	d->req = req;
	d->status = status;
	atomic_inc(&deferred);
	INIT_DELAYED_WORK(&d->work, deferred_fn);
	schedule_delayed_work(&d->work, msecs_to_jiffies(ms));
	return 0;
}

/* Replies come back out of order: each waits 0..4 ms. */
static int h_shuffle(struct krpc_req *req, void *priv)
{
	return defer(req, get_random_u32() % 5, 0);
}

static int h_sleep(struct krpc_req *req, void *priv)
{
	return defer(req, 300 * slow, 0);
}

struct held_req {
	struct list_head node;
	struct krpc_req *req;
};

/*
 * The gate (M_GATE): like M_HOLD, but opened and closed by command, so a
 * raw peer can be held back by requests that stay alive, then let through.
 */
static LIST_HEAD(gated);
static unsigned int nr_gated;
static bool gate_closed;
static u64 gate_passed;

/* M_HOLD holds @req until server_stop; M_GATE while the gate is closed. */
static int hold(struct krpc_req *req, bool gate)
{
	struct held_req *h;
	bool now = false;

	if (READ_ONCE(stopping))
		return -ESHUTDOWN;
	h = kzalloc(sizeof(*h), GFP_KERNEL);
	if (!h)
		return -ENOMEM;
	h->req = req;
	spin_lock(&held_lock);
	if (!gate) {
		list_add_tail(&h->node, &held);
		nr_held++;
	} else if (gate_closed) {
		list_add_tail(&h->node, &gated);
		nr_gated++;
	} else {
		gate_passed++;
		now = true;
	}
	spin_unlock(&held_lock);
	if (now) {
		krpc_req_reply(req, 0, NULL);
		kfree(h);
	}
	return 0;
}

static int h_hold(struct krpc_req *req, void *priv)
{
	return hold(req, false);
}

static int h_gate(struct krpc_req *req, void *priv)
{
	return hold(req, true);
}

static void reply_all(struct list_head *list, int status)
{
	struct held_req *h, *t;

	list_for_each_entry_safe(h, t, list, node) {
		krpc_req_reply(h->req, status, NULL);
		kfree(h);
	}
}

static void release_held(int status)
{
	LIST_HEAD(list);

	spin_lock(&held_lock);
	list_splice_init(&held, &list);
	nr_held = 0;
	spin_unlock(&held_lock);
	reply_all(&list, status);
}

static void gate_set(bool closed)
{
	LIST_HEAD(list);

	spin_lock(&held_lock);
	gate_closed = closed;
	list_splice_init(&gated, &list);
	gate_passed += nr_gated;
	nr_gated = 0;
	spin_unlock(&held_lock);
	reply_all(&list, 0);
}

static int cmd_gate_stat(char **argv, int argc)
{
	unsigned int held;
	u64 passed, want;
	bool closed;

	spin_lock(&held_lock);
	passed = gate_passed;
	held = nr_gated;
	closed = gate_closed;
	spin_unlock(&held_lock);
	tlog("gate %s: passed %llu held %u\n", closed ? "closed" : "open",
	     passed, held);
	if (argc > 1) {
		if (kstrtou64(argv[1], 0, &want))
			return -EINVAL;
		if (passed != want) {
			fail("gate passed %llu requests, want %llu", passed,
			     want);
			return -EIO;
		}
	}
	return 0;
}

static unsigned int held_count(void)
{
	unsigned int n;

	spin_lock(&held_lock);
	n = nr_held;
	spin_unlock(&held_lock);
	return n;
}

static int h_err(struct krpc_req *req, void *priv)
{
	return -EPROTO;
}

static int h_count(struct krpc_req *req, void *priv)
{
	atomic64_inc(&oneway_count);
	return krpc_req_reply(req, 0, NULL);
}

static int h_getcount(struct krpc_req *req, void *priv)
{
	struct krpc_buf *buf = krpc_buf_get(krpc_req_pool(req), 8, GFP_ATOMIC);
	u64 v = atomic64_read(&oneway_count);

	if (IS_ERR(buf))
		return PTR_ERR(buf);
	memcpy(krpc_buf_data(buf), &v, sizeof(v));
	krpc_buf_set_len(buf, sizeof(v));
	krpc_req_reply(req, 0, buf);
	return 0;
}

/* Echo with the request's payload itself, not taken first. */
static int h_echo_untaken(struct krpc_req *req, void *priv)
{
	krpc_req_reply(req, 0, krpc_req_payload(req));
	return 0;
}

/* A reply of the size the request asks for (u32 in the payload). */
static int h_big(struct krpc_req *req, void *priv)
{
	struct krpc_buf *in = krpc_req_payload(req), *out;
	u32 want;

	if (!in || krpc_buf_len(in) != sizeof(want))
		return -EINVAL;
	memcpy(&want, krpc_buf_data(in), sizeof(want));
	out = krpc_buf_get(krpc_req_pool(req), want, GFP_KERNEL);
	if (IS_ERR(out))
		return PTR_ERR(out);
	krpc_buf_set_len(out, want);
	krpc_req_reply(req, 0, out);
	return 0;
}

static const struct {
	u32 id;
	krpc_handler_fn fn;
	unsigned int flags;
} methods[] = {
	{ M_ECHO, h_echo, 0 },
	{ M_SHUFFLE, h_shuffle, 0 },
	{ M_HOLD, h_hold, 0 },
	{ M_SLEEP, h_sleep, 0 },
	{ M_ERR, h_err, 0 },
	{ M_COUNT, h_count, KRPC_METHOD_NOSLEEP },
	{ M_GETCOUNT, h_getcount, KRPC_METHOD_NOSLEEP },
	{ M_NOSLEEP_ECHO, h_echo, KRPC_METHOD_NOSLEEP },
	{ M_BIG, h_big, 0 },
	{ M_GATE, h_gate, 0 },
	{ M_ECHO_UNTAKEN, h_echo_untaken, 0 },
};

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

static void server_stop(void)
{
	if (!srv)
		return;
	/* Handlers that reply later must reply before the server goes. */
	WRITE_ONCE(stopping, true);
	release_held(-ESHUTDOWN);
	gate_set(false);
	wait_event(deferred_wq, !atomic_read(&deferred));
	krpc_server_destroy(srv);
	srv = NULL;
	spin_lock(&held_lock);
	gate_passed = 0;
	spin_unlock(&held_lock);
	WRITE_ONCE(stopping, false);
}

static int cmd_server_start(char **argv, int argc)
{
	struct krpc_server_opts o = {};
	struct krpc_server *s;
	unsigned int i;
	u16 port;
	int ret;

	if (srv)
		return -EBUSY;
	if (argc < 2 || kstrtou16(argv[1], 0, &port))
		return -EINVAL;
	ret = parse_addr(argc > 2 ? argv[2] : "0.0.0.0", port, &o.addr);
	if (ret)
		return ret;
	o.transport = transport;
	o.cq_mode = cq_mode;
	o.max_conns = max_conns;
	s = krpc_server_create(&o);
	if (IS_ERR(s))
		return PTR_ERR(s);
	for (i = 0; i < ARRAY_SIZE(methods); i++) {
		ret = krpc_server_register(s, methods[i].id, methods[i].fn,
					   NULL, methods[i].flags);
		if (ret) {
			krpc_server_destroy(s);
			return ret;
		}
	}
	if (krpc_server_register(s, M_ECHO, h_echo, NULL, 0) != -EEXIST) {
		fail("duplicate method registration was accepted");
		krpc_server_destroy(s);
		return -EINVAL;
	}
	srv = s;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Client side */

static void on_disconnect(struct krpc_client *c, int reason, void *priv)
{
	disconnect_reason = reason;
	WRITE_ONCE(disconnect_ms, ktime_to_ms(ktime_get_boottime()));
	atomic_inc(&disconnects);
}

static const struct krpc_client_ops client_ops = {
	.disconnected = on_disconnect,
};

static int do_connect(char **argv, int argc, struct krpc_client **out)
{
	struct krpc_client_opts o = { .ops = &client_ops };
	struct krpc_client *c;
	u16 port;
	int ret;

	if (argc < 3 || kstrtou16(argv[2], 0, &port))
		return -EINVAL;
	ret = parse_addr(argv[1], port, &o.addr);
	if (ret)
		return ret;
	o.transport = transport;
	o.cq_mode = cq_mode;
	if (argc > 3 && kstrtouint(argv[3], 0, &o.depth))
		return -EINVAL;
	c = krpc_client_create(&o);
	if (IS_ERR(c))
		return PTR_ERR(c);
	*out = c;
	return 0;
}

static int cmd_connect(char **argv, int argc)
{
	if (clnt)
		return -EBUSY;
	return do_connect(argv, argc, &clnt);
}

static int cmd_connect_fail(char **argv, int argc)
{
	struct krpc_client *c = NULL;
	int want, ret;

	if (argc < 4 || kstrtoint(argv[3], 0, &want))
		return -EINVAL;
	ret = do_connect(argv, argc - 1, &c);
	if (!ret) {
		krpc_client_destroy(c);
		fail("connection was accepted");
		return -EINVAL;
	}
	if (ret != -want) {
		fail("connect failed with %d, want %d", ret, -want);
		return -EINVAL;
	}
	tlog("connect refused with %d as expected\n", ret);
	return 0;
}

static void client_stop(void);

static int cmd_disconnect(char **argv, int argc)
{
	if (!clnt)
		return -ENOTCONN;
	client_stop();
	return 0;
}

static struct krpc_buf *new_payload(u32 seed, size_t len)
{
	struct krpc_buf *buf = krpc_buf_get(krpc_client_pool(clnt), len,
					    GFP_KERNEL);

	if (!IS_ERR(buf))
		fill(buf, seed, len);
	return buf;
}

static int echo_once(u32 method, u32 seed, size_t len)
{
	struct krpc_call_args a = { .method = method, .reply_max = len };
	struct krpc_result res = { .status = INT_MIN };
	int ret;

	if (len) {
		a.req.type = KRPC_PL_BUF;
		a.req.buf = new_payload(seed, len);
		if (IS_ERR(a.req.buf))
			return PTR_ERR(a.req.buf);
	}
	ret = krpc_call_sync(clnt, &a, &res);
	if (res.status == INT_MIN) {
		/* Never submitted: the buffer is still ours. */
		if (len)
			krpc_buf_put(a.req.buf);
		res.reply = NULL;
	}
	if (ret) {
		krpc_buf_put(res.reply);
		fail("echo of %zu bytes: %d", len, ret);
		return ret;
	}
	ret = check(res.reply, seed, len);
	krpc_buf_put(res.reply);
	return ret;
}

/*
 * One buffer as request payload and reply destination: refused, and the
 * buffer is still the caller's.  Then echoes that the server answers with
 * the request's own payload, not taken first: each buffer goes back once.
 */
static int cmd_samebuf(char **argv, int argc)
{
	struct krpc_result res = { .status = INT_MIN };
	struct krpc_call_args a = { .method = M_ECHO };
	struct krpc_buf *buf;
	unsigned int i;
	size_t len;
	int ret;

	if (!clnt || !srv)
		return -ENOTCONN;
	if (argc < 2 || kstrtoul(argv[1], 0, &len) || !len)
		return -EINVAL;
	buf = new_payload(1, len);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	a.req.type = KRPC_PL_BUF;
	a.req.buf = buf;
	a.reply.type = KRPC_PL_BUF;
	a.reply.buf = buf;
	a.reply_max = len;
	ret = krpc_call_sync(clnt, &a, &res);
	if (ret != -EINVAL || res.status != INT_MIN) {
		fail("same buffer both ways: %d, want -EINVAL", ret);
		return -EINVAL;
	}
	krpc_buf_put(buf);	/* still ours */
	for (i = 0; i < 20; i++) {
		ret = echo_once(M_ECHO_UNTAKEN, i, len);
		if (ret)
			return ret;
	}
	tlog("same buffer refused; 20 untaken-payload echoes of %zu ok\n",
	     len);
	return 0;
}

static int cmd_echo(char **argv, int argc, u32 method)
{
	unsigned int count = 1, i;
	size_t len;
	int ret;

	if (!clnt)
		return -ENOTCONN;
	if (argc < 2 || kstrtoul(argv[1], 0, &len))
		return -EINVAL;
	if (argc > 2 && kstrtouint(argv[2], 0, &count))
		return -EINVAL;
	for (i = 0; i < count; i++) {
		ret = echo_once(method, i + len, len);
		if (ret)
			return ret;
	}
	tlog("echo %zu x %u ok\n", len, count);
	return 0;
}

/* Bookkeeping of asynchronous calls: each must complete exactly once. */
struct async_ctx {
	atomic_t pending;
	atomic_t bad;
	atomic_t doubles;
	wait_queue_head_t wq;
	size_t len;		/* request payload */
	size_t reply_len;	/* expected reply payload */
};

struct async_call {
	struct async_ctx *ctx;
	atomic_t done;
	int status;
	u32 seed;
	int expect;
};

static void async_done(struct krpc_call *call, const struct krpc_result *res,
		       void *priv)
{
	struct async_call *ac = priv;
	struct async_ctx *ctx = ac->ctx;

	if (atomic_inc_return(&ac->done) != 1) {
		atomic_inc(&ctx->doubles);
		return;
	}
	ac->status = res->status;
	if (res->status != ac->expect)
		atomic_inc(&ctx->bad);
	else if (!res->status && check(res->reply, ac->seed, ctx->reply_len))
		atomic_inc(&ctx->bad);
	krpc_buf_put(res->reply);
	if (atomic_dec_and_test(&ctx->pending))
		wake_up(&ctx->wq);
}

static void async_ctx_init(struct async_ctx *ctx, size_t len)
{
	atomic_set(&ctx->pending, 1);	/* the submitter's */
	atomic_set(&ctx->bad, 0);
	atomic_set(&ctx->doubles, 0);
	init_waitqueue_head(&ctx->wq);
	ctx->len = len;
	ctx->reply_len = len;
}

/* async_submit() with a call timeout (0: the connection's). */
static int async_submit_tmo(struct async_ctx *ctx, struct async_call *ac,
			    u32 method, u32 flags, unsigned int timeout_ms,
			    struct krpc_call **callp)
{
	struct krpc_call_args a = {
		.method = method, .flags = flags, .reply_max = ctx->len,
		.done = async_done, .priv = ac, .timeout_ms = timeout_ms,
	};
	int ret;

	ac->ctx = ctx;
	if (ctx->len) {
		a.req.type = KRPC_PL_BUF;
		a.req.buf = new_payload(ac->seed, ctx->len);
		if (IS_ERR(a.req.buf))
			return PTR_ERR(a.req.buf);
	}
	atomic_inc(&ctx->pending);
	ret = krpc_call_async(clnt, &a, callp);
	if (ret) {
		atomic_dec(&ctx->pending);
		if (ctx->len)
			krpc_buf_put(a.req.buf);
	}
	return ret;
}

static int async_submit(struct async_ctx *ctx, struct async_call *ac,
			u32 method, u32 flags, struct krpc_call **callp)
{
	return async_submit_tmo(ctx, ac, method, flags, 0, callp);
}

static int async_wait(struct async_ctx *ctx, unsigned int secs)
{
	if (atomic_dec_and_test(&ctx->pending))
		wake_up(&ctx->wq);
	if (!wait_event_timeout(ctx->wq, !atomic_read(&ctx->pending),
				secs * slow * HZ)) {
		fail("%d calls did not complete", atomic_read(&ctx->pending));
		return -ETIMEDOUT;
	}
	if (atomic_read(&ctx->doubles)) {
		fail("%d calls completed twice", atomic_read(&ctx->doubles));
		return -EINVAL;
	}
	if (atomic_read(&ctx->bad)) {
		fail("%d calls ended wrong", atomic_read(&ctx->bad));
		return -EINVAL;
	}
	return 0;
}

static int cmd_async(char **argv, int argc)
{
	struct async_call *acs;
	struct async_ctx ctx;
	unsigned int n, i;
	size_t len;
	int ret = 0;

	if (!clnt)
		return -ENOTCONN;
	if (argc < 3 || kstrtouint(argv[1], 0, &n) || kstrtoul(argv[2], 0, &len))
		return -EINVAL;
	acs = kvcalloc(n, sizeof(*acs), GFP_KERNEL);
	if (!acs)
		return -ENOMEM;
	async_ctx_init(&ctx, len);
	for (i = 0; i < n; i++) {
		acs[i].seed = i;
		ret = async_submit(&ctx, &acs[i], M_SHUFFLE, 0, NULL);
		if (ret) {
			fail("async call %u: %d", i, ret);
			break;
		}
	}
	ret = async_wait(&ctx, 120) ?: ret;
	if (!ret)
		tlog("async %u x %zu ok\n", n, len);
	kvfree(acs);
	return ret;
}

static int wait_held(unsigned int n)
{
	unsigned int i;

	for (i = 0; i < 500 * slow && held_count() < n; i++)
		msleep(20);
	if (held_count() < n) {
		fail("server holds %u requests, want %u", held_count(), n);
		return -ETIMEDOUT;
	}
	return 0;
}

static int cmd_window(char **argv, int argc)
{
	struct krpc_conn_info info;
	struct async_call *acs, extra = { .seed = 7 }, nowait = {}, tmo[3] = {};
	struct async_ctx ctx, ectx, tctx;
	unsigned int i, depth, ms;
	unsigned long t0;
	int ret, tret;

	if (!clnt || !srv)
		return -ENOTCONN;
	krpc_client_query(clnt, &info);
	depth = info.depth;
	acs = kcalloc(depth, sizeof(*acs), GFP_KERNEL);
	if (!acs)
		return -ENOMEM;
	async_ctx_init(&ctx, 0);
	for (i = 0; i < depth; i++) {
		ret = async_submit(&ctx, &acs[i], M_HOLD, KRPC_CALL_NOWAIT,
				   NULL);
		if (ret) {
			fail("slot %u of %u: %d", i, depth, ret);
			goto out_release;
		}
	}
	ret = wait_held(depth);
	if (ret)
		goto out_release;
	ret = async_submit(&ctx, &nowait, M_ECHO, KRPC_CALL_NOWAIT, NULL);
	if (ret != -EAGAIN) {
		fail("call beyond the window with NOWAIT: %d, want -EAGAIN", ret);
		ret = -EINVAL;
		goto out_release;
	}
	async_ctx_init(&ectx, 64);
	ret = async_submit(&ectx, &extra, M_ECHO, 0, NULL);
	if (ret) {
		fail("waiting call beyond the window: %d", ret);
		goto out_release;
	}
	krpc_client_query(clnt, &info);
	if (info.queued != 1 || info.inflight != depth) {
		fail("queued %u inflight %u, want 1 and %u", info.queued,
		     info.inflight, depth);
		ret = -EINVAL;
	}
	/*
	 * Calls waiting for a slot time out there, each at its own deadline:
	 * one due in 100 ms queued behind the 30 s one above (the call timer
	 * must not stop its scan of the backlog at a call not yet due), and
	 * one queued ahead of a later one.
	 */
	async_ctx_init(&tctx, 0);
	for (i = 0; i < ARRAY_SIZE(tmo) && !ret; i++) {
		tmo[i].expect = i == 1 ? 0 : -ETIMEDOUT;
		ret = async_submit_tmo(i == 1 ? &ectx : &tctx, &tmo[i], M_ECHO,
				       0, i == 1 ? 30000 : 100 * slow, NULL);
		if (ret)
			fail("waiting call %u with a timeout: %d", i, ret);
	}
	/* Always: what was submitted completes into tctx. */
	t0 = jiffies;
	tret = async_wait(&tctx, 5);
	ms = jiffies_to_msecs(jiffies - t0);
	ret = ret ?: tret;
	if (!ret) {
		krpc_client_query(clnt, &info);
		if (info.queued != 2) {
			fail("queued %u after the timeouts, want 2", info.queued);
			ret = -EINVAL;
		} else {
			tlog("2 waiting calls timed out in %u ms\n", ms);
		}
	}
	release_held(0);
	ret = async_wait(&ectx, 30) ?: ret;
	ret = async_wait(&ctx, 30) ?: ret;
	if (!ret)
		tlog("window of %u ok\n", depth);
	kfree(acs);
	return ret;

out_release:
	release_held(0);
	async_wait(&ctx, 30);
	kfree(acs);
	return ret ? ret : -EINVAL;
}

static int cmd_timeout(char **argv, int argc)
{
	struct krpc_call_args a = { .method = M_SLEEP, .timeout_ms = 50 * slow };
	struct krpc_conn_info before, after;
	struct krpc_result res = { .status = INT_MIN };
	unsigned long t0 = jiffies;
	unsigned int ms, i;
	bool late;
	size_t len = 0;
	int ret;

	if (!clnt)
		return -ENOTCONN;
	if (argc > 1 && kstrtoul(argv[1], 0, &len))
		return -EINVAL;
	/*
	 * "late": the server ignores the CANCEL (fault_drop_cancel, set by
	 * the shell), as if it came after the reply was posted.  Over RDMA
	 * the call keeps its keys until that reply, which is written into
	 * the room: it completes only then, and the connection stays.
	 */
	late = argc > 2 && !strcmp(argv[2], "late");
	/*
	 * With a payload, the late reply echoes it into the reply room the
	 * call offered, which the call gave back when it timed out.
	 */
	if (len) {
		a.req.type = KRPC_PL_BUF;
		a.req.buf = new_payload(11, len);
		if (IS_ERR(a.req.buf))
			return PTR_ERR(a.req.buf);
		a.reply_max = len;
	}
	krpc_client_query(clnt, &before);
	ret = krpc_call_sync(clnt, &a, &res);
	if (res.status == INT_MIN && len) {
		krpc_buf_put(a.req.buf);	/* never submitted: still ours */
		res.reply = NULL;
	}
	if (ret != -ETIMEDOUT || res.flags & KRPC_RES_REMOTE) {
		fail("slow call: %d, want -ETIMEDOUT", ret);
		krpc_buf_put(res.reply);
		return -EINVAL;
	}
	ms = jiffies_to_msecs(jiffies - t0);
	if (late ? ms < 300 * slow : ms >= 300 * slow) {
		fail("timeout took %u ms, want %s %u", ms,
		     late ? "at least" : "below", 300 * slow);
		return -EINVAL;
	}
	/* The late reply arrives and is dropped: wait for it, 5 s at most. */
	for (i = 0; i < 100 * slow; i++) {
		krpc_client_query(clnt, &after);
		if (after.stats.stale != before.stats.stale)
			break;
		msleep(50);
	}
	msleep(50 * slow);	/* a second one would show */
	krpc_client_query(clnt, &after);
	if (after.stats.timeouts != before.stats.timeouts + 1 ||
	    after.stats.stale != before.stats.stale + 1) {
		fail("timeouts %llu stale %llu after, %llu %llu before",
		     after.stats.timeouts, after.stats.stale,
		     before.stats.timeouts, before.stats.stale);
		return -EINVAL;
	}
	ret = echo_once(M_ECHO, 3, 100);
	if (!ret)
		tlog("timeout ok\n");
	return ret;
}

/*
 * A call ended by the client's reset of its connection: @ms after it was
 * made, no sooner than ka_timeout_ms (@ka), the connection dead with
 * -ETIMEDOUT.  Return @ret, or -EINVAL (with a line in the log).
 */
static int expect_ka_reset(int ret, unsigned int ms, unsigned long ka)
{
	struct krpc_conn_info info;

	if (!ret && ms < ka) {
		fail("completed after %u ms, before ka_timeout_ms (%lu)", ms,
		     ka);
		ret = -EINVAL;
	}
	krpc_client_query(clnt, &info);
	if (!ret && (info.state != KRPC_CONN_DEAD || info.reason != -ETIMEDOUT)) {
		fail("connection state %u reason %d, want dead, -ETIMEDOUT",
		     info.state, info.reason);
		ret = -EINVAL;
	}
	return ret;
}

/*
 * A call with a reply room times out while the server ignores CANCELs
 * (fault_drop_cancel, set by the shell) and holds the request (RDMA): the
 * client keeps the room's key for ka_timeout_ms, then resets the
 * connection, and the call completes.  argv: room bytes, ka_timeout_ms.
 */
static int cmd_cancel_unanswered(char **argv, int argc)
{
	struct async_call ac = { .expect = -ETIMEDOUT };
	struct krpc_call_args a = {
		.method = M_HOLD, .timeout_ms = 50 * slow,
		.done = async_done, .priv = &ac,
	};
	unsigned long room, ka, t0 = jiffies;
	struct krpc_call *call;
	struct async_ctx ctx;
	unsigned int ms;
	int ret;

	if (!clnt || !srv)
		return -ENOTCONN;
	if (argc < 3 || kstrtoul(argv[1], 0, &room) ||
	    kstrtoul(argv[2], 0, &ka) || ka > 600000)
		return -EINVAL;
	a.reply_max = room;
	async_ctx_init(&ctx, 0);
	ac.ctx = &ctx;
	atomic_inc(&ctx.pending);
	ret = krpc_call_async(clnt, &a, &call);
	if (ret) {
		atomic_dec(&ctx.pending);
		return ret;
	}
	ret = wait_held(1);
	ret = async_wait(&ctx, 10 + 3 * ka / 1000) ?: ret;
	ms = jiffies_to_msecs(jiffies - t0);
	krpc_call_put(call);
	ret = expect_ka_reset(ret, ms, ka);
	release_held(0);
	if (!ret)
		tlog("unanswered cancel: reset after %u ms\n", ms);
	return ret;
}

/*
 * A call whose request the server never takes (TCP, tcp_peer serve_stuck:
 * its window shut, its keepalives still coming) times out with its
 * buffers still in the socket: it completes when the client resets the
 * connection, ka_timeout_ms after the timeout.  "answered": the server
 * answers (an empty reply) without taking the request, and the call,
 * without a timeout of its own, completes with that answer when the
 * client resets the connection ka_timeout_ms later.  argv: request bytes
 * (a room as large for the reply), ka_timeout_ms, optionally "answered".
 */
static int cmd_abandon(char **argv, int argc)
{
	struct async_call ac = { .seed = 5, .expect = -ETIMEDOUT };
	unsigned long len, ka, t0;
	struct krpc_call *call;
	struct async_ctx ctx;
	unsigned int ms, tmo = 50 * slow;
	int ret;

	if (!clnt)
		return -ENOTCONN;
	if (argc < 3 || kstrtoul(argv[1], 0, &len) || !len ||
	    kstrtoul(argv[2], 0, &ka) || ka > 600000)
		return -EINVAL;
	async_ctx_init(&ctx, len);
	if (argc > 3 && !strcmp(argv[3], "answered")) {
		ac.expect = 0;
		ctx.reply_len = 0;
		tmo = 0;	/* the connection's: 30 s */
	}
	t0 = jiffies;
	ret = async_submit_tmo(&ctx, &ac, M_ECHO, 0, tmo, &call);
	if (ret)
		return ret;
	ret = async_wait(&ctx, 10 + 3 * ka / 1000);
	ms = jiffies_to_msecs(jiffies - t0);
	if (ret == -ETIMEDOUT) {
		/* Still held: the client's end completes it (@ctx is ours). */
		client_stop();
		wait_event(ctx.wq, !atomic_read(&ctx.pending));
		krpc_call_put(call);
		return ret;
	}
	krpc_call_put(call);
	ret = expect_ka_reset(ret, ms, ka);
	if (!ret)
		tlog("%s call: reset after %u ms\n",
		     ac.expect ? "abandoned" : "answered", ms);
	return ret;
}

static int cmd_cancel(char **argv, int argc)
{
	struct async_call ac = { .seed = 9, .expect = -ECANCELED };
	struct krpc_call *call;
	struct async_ctx ctx;
	size_t len = 0;
	int ret;

	if (!clnt || !srv)
		return -ENOTCONN;
	if (argc > 1 && kstrtoul(argv[1], 0, &len))
		return -EINVAL;
	async_ctx_init(&ctx, len);
	ret = async_submit(&ctx, &ac, M_HOLD, 0, &call);
	if (ret)
		return ret;
	ret = wait_held(1);
	if (!ret) {
		ret = krpc_call_cancel(call);
		if (ret)
			fail("cancel: %d", ret);
	}
	ret = async_wait(&ctx, 10) ?: ret;
	if (!ret && krpc_call_cancel(call) != -EALREADY) {
		fail("second cancel did not say -EALREADY");
		ret = -EINVAL;
	}
	krpc_call_put(call);
	release_held(0);
	msleep(50);
	ret = ret ?: echo_once(M_ECHO, 5, len);
	if (!ret)
		tlog("cancel of %zu bytes ok\n", len);
	return ret;
}

/*
 * RDMA: a rendezvous request whose call times out while the server has not
 * read its payload yet (the shell mutes the server's connection around
 * rcancel_start, so its READ waits).  The client keeps the request's key;
 * once the READ is done the server answers without running the handler
 * (M_HOLD would hold it).  argv: payload bytes.
 */
static struct async_ctx rc_ctx;
static struct async_call rc_ac;

static int cmd_rcancel_start(char **argv, int argc)
{
	struct krpc_call_args a = {
		.method = M_HOLD, .timeout_ms = 100 * slow,
		.done = async_done, .priv = &rc_ac,
	};
	size_t len;
	int ret;

	if (!clnt || !srv)
		return -ENOTCONN;
	if (argc < 2 || kstrtoul(argv[1], 0, &len) || !len)
		return -EINVAL;
	async_ctx_init(&rc_ctx, len);
	memset(&rc_ac, 0, sizeof(rc_ac));
	rc_ac.seed = 12;
	rc_ac.ctx = &rc_ctx;
	rc_ac.expect = -ETIMEDOUT;
	a.req.type = KRPC_PL_BUF;
	a.req.buf = new_payload(rc_ac.seed, len);
	if (IS_ERR(a.req.buf))
		return PTR_ERR(a.req.buf);
	atomic_inc(&rc_ctx.pending);
	ret = krpc_call_async(clnt, &a, NULL);
	if (ret) {
		atomic_dec(&rc_ctx.pending);
		krpc_buf_put(a.req.buf);
		return ret;
	}
	msleep(500 * slow);	/* timed out, CANCEL sent and seen */
	if (atomic_read(&rc_ac.done)) {
		fail("the call completed before the server read its payload");
		return -EINVAL;
	}
	return 0;
}

static int cmd_rcancel_finish(char **argv, int argc)
{
	int ret = async_wait(&rc_ctx, 10);

	if (!ret && held_count()) {
		fail("the handler ran (%u held)", held_count());
		release_held(0);
		ret = -EINVAL;
	}
	ret = ret ?: echo_once(M_ECHO, 5, 100000);
	if (!ret)
		tlog("answered after the READ, without the handler\n");
	return ret;
}

/*
 * A cancelled call whose local invalidation is still queued when the
 * peer's reply kills its key by remote invalidation (RDMA): the shell
 * mutes the client between inv_hold and inv_cancel, so the invalidation
 * cannot go out, and unmutes before inv_finish.
 */
static struct async_ctx inv_ctx;
static struct async_call inv_ac;
static struct krpc_call *inv_call;

static int cmd_inv_hold(char **argv, int argc)
{
	/* No request payload; a reply room that needs a registered key. */
	struct krpc_call_args a = {
		.method = M_HOLD, .done = async_done, .priv = &inv_ac,
	};
	size_t room;
	int ret;

	if (!clnt || !srv || inv_call)
		return -EINVAL;
	if (argc < 2 || kstrtoul(argv[1], 0, &room))
		return -EINVAL;
	a.reply_max = room;
	async_ctx_init(&inv_ctx, 0);
	memset(&inv_ac, 0, sizeof(inv_ac));
	inv_ac.ctx = &inv_ctx;
	inv_ac.expect = -ECANCELED;
	atomic_inc(&inv_ctx.pending);
	ret = krpc_call_async(clnt, &a, &inv_call);
	if (ret) {
		atomic_dec(&inv_ctx.pending);
		inv_call = NULL;
		return ret;
	}
	return wait_held(1);
}

static int cmd_inv_cancel(char **argv, int argc)
{
	int ret;

	if (!inv_call)
		return -EINVAL;
	ret = krpc_call_cancel(inv_call);
	if (ret)
		fail("cancel: %d", ret);
	/* The server answers; its reply invalidates the room's key. */
	release_held(0);
	return ret;
}

static int cmd_inv_finish(char **argv, int argc)
{
	int ret;

	if (!inv_call)
		return -EINVAL;
	/* Something for the client to send: it flushes its queue. */
	ret = echo_once(M_ECHO, 3, 10);
	ret = async_wait(&inv_ctx, 10) ?: ret;
	krpc_call_put(inv_call);
	inv_call = NULL;
	if (!ret)
		tlog("cancelled call completed once with -ECANCELED\n");
	return ret;
}

/*
 * Against tcp_peer's early_reply server: call 1 (pattern seed 1) gets its
 * empty reply before the server read it; a second later call 2 (seed 2)
 * takes a buffer of the same size.  Until both complete, every few
 * milliseconds every free buffer the pool has for that size is taken and
 * overwritten: a request buffer that went back early is overwritten while
 * its tail still waits in the socket.  The server reads call 1's bytes,
 * the tail slowly, and checks them.
 */
#define EARLY_HELD	64

static int cmd_early_reply(char **argv, int argc)
{
	struct async_call acs[2] = { { .seed = 1 }, { .seed = 2 } };
	struct krpc_buf **held;
	unsigned long deadline;
	unsigned int i, n, refills = 0;
	struct async_ctx ctx;
	size_t len;
	int ret = 0;

	if (!clnt)
		return -ENOTCONN;
	if (argc < 2 || kstrtoul(argv[1], 0, &len) || !len)
		return -EINVAL;
	held = kcalloc(EARLY_HELD, sizeof(*held), GFP_KERNEL);
	if (!held)
		return -ENOMEM;
	async_ctx_init(&ctx, len);
	ctx.reply_len = 0;
	for (i = 0; i < 2 && !ret; i++) {
		if (i)
			msleep(1000);
		ret = async_submit(&ctx, &acs[i], M_ECHO, 0, NULL);
	}
	deadline = jiffies + 20 * slow * HZ;
	/* pending stays 1 (the submitter's) once both calls completed */
	while (!ret && atomic_read(&ctx.pending) > 1 &&
	       time_before(jiffies, deadline)) {
		for (n = 0; n < EARLY_HELD; n++) {
			held[n] = krpc_buf_get(krpc_client_pool(clnt), len,
					       GFP_NOWAIT);
			if (IS_ERR(held[n]))
				break;
			memset(krpc_buf_data(held[n]), 0xa5, len);
		}
		while (n)
			krpc_buf_put(held[--n]);
		refills++;
		usleep_range(5000, 10000);
	}
	kfree(held);
	ret = async_wait(&ctx, 20) ?: ret;
	if (!ret)
		tlog("early reply: both calls completed, %u refills\n",
		     refills);
	return ret;
}

static int expect_status(u32 method, int want)
{
	struct krpc_call_args a = { .method = method };
	struct krpc_result res = {};
	int ret;

	if (!clnt)
		return -ENOTCONN;
	ret = krpc_call_sync(clnt, &a, &res);
	krpc_buf_put(res.reply);
	if (ret != want || !(res.flags & KRPC_RES_REMOTE)) {
		fail("method %u: %d flags %#x, want %d from the peer", method,
		     ret, res.flags, want);
		return -EINVAL;
	}
	return echo_once(M_ECHO, 1, 10);
}

static int cmd_oneway(char **argv, int argc)
{
	struct krpc_call_args g = { .method = M_GETCOUNT, .reply_max = 8 };
	struct krpc_result res = {};
	unsigned int n, i;
	struct async_ctx ctx;
	struct async_call *acs;
	u64 before, after;
	int ret;

	if (!clnt)
		return -ENOTCONN;
	if (argc < 2 || kstrtouint(argv[1], 0, &n))
		return -EINVAL;
	acs = kvcalloc(n, sizeof(*acs), GFP_KERNEL);
	if (!acs)
		return -ENOMEM;
	ret = krpc_call_sync(clnt, &g, &res);
	if (ret || !res.reply || krpc_buf_len(res.reply) != 8) {
		fail("get count: %d", ret);
		krpc_buf_put(res.reply);
		kvfree(acs);
		return -EINVAL;
	}
	memcpy(&before, krpc_buf_data(res.reply), 8);
	krpc_buf_put(res.reply);
	async_ctx_init(&ctx, 16);
	ctx.reply_len = 0;
	for (i = 0; i < n && !ret; i++)
		ret = async_submit(&ctx, &acs[i], M_COUNT, KRPC_CALL_ONEWAY,
				   NULL);
	ret = async_wait(&ctx, 30) ?: ret;
	/* NOSLEEP handlers run in arrival order: the count is final. */
	if (!ret)
		ret = krpc_call_sync(clnt, &g, &res);
	if (!ret) {
		memcpy(&after, krpc_buf_data(res.reply), 8);
		krpc_buf_put(res.reply);
		if (after - before != n) {
			fail("server counted %llu one-way messages, want %u",
			     after - before, n);
			ret = -EINVAL;
		}
	}
	kvfree(acs);
	if (!ret)
		tlog("oneway %u ok\n", n);
	return ret;
}

static int cmd_oneway_close(char **argv, int argc)
{
	struct async_call ac = { .seed = 5 };
	struct async_ctx ctx;
	int ret;

	if (!clnt)
		return -ENOTCONN;
	async_ctx_init(&ctx, 16);
	ctx.reply_len = 0;
	ret = async_submit(&ctx, &ac, M_GATE, KRPC_CALL_ONEWAY, NULL);
	ret = async_wait(&ctx, 30) ?: ret;
	/* Sent; its handler waits.  This one is answered from the rx path. */
	if (!ret)
		ret = echo_once(M_NOSLEEP_ECHO, 3, 64);
	client_stop();
	if (!ret)
		tlog("%s", "one-way sent, echo answered, disconnected\n");
	return ret;
}

/* The server's reply exceeds what the client offered: -EMSGSIZE. */
static int cmd_toobig(char **argv, int argc)
{
	struct krpc_call_args a = { .method = M_BIG, .reply_max = 0 };
	struct krpc_conn_info info;
	struct krpc_result res = { .status = INT_MIN };
	u32 want;
	int ret;

	if (!clnt)
		return -ENOTCONN;
	krpc_client_query(clnt, &info);
	want = info.inline_max + 1;
	a.req.type = KRPC_PL_BUF;
	a.req.buf = krpc_buf_get(krpc_client_pool(clnt), 4, GFP_KERNEL);
	if (IS_ERR(a.req.buf))
		return PTR_ERR(a.req.buf);
	memcpy(krpc_buf_data(a.req.buf), &want, 4);
	krpc_buf_set_len(a.req.buf, 4);
	ret = krpc_call_sync(clnt, &a, &res);
	if (res.status == INT_MIN) {
		krpc_buf_put(a.req.buf);
		res.reply = NULL;
	}
	krpc_buf_put(res.reply);
	if (ret != -EMSGSIZE) {
		fail("oversized reply: %d, want -EMSGSIZE", ret);
		return -EINVAL;
	}
	tlog("toobig ok\n");
	return 0;
}

static int cmd_zombies(char **argv, int argc)
{
	struct async_ctx ctx[2];
	struct krpc_conn_info info;
	struct async_call *acs;
	bool waited = false;
	unsigned int i, n;
	int ret = 0;

	if (!clnt || !srv)
		return -ENOTCONN;
	krpc_client_query(clnt, &info);
	n = DIV_ROUND_UP(info.depth, 2);
	acs = kcalloc(n, sizeof(*acs), GFP_KERNEL);
	if (!acs)
		return -ENOMEM;
	async_ctx_init(&ctx[0], 0);
	async_ctx_init(&ctx[1], 0);
	for (i = 0; i < n && !ret; i++) {
		struct krpc_call_args a = {
			.method = M_HOLD, .timeout_ms = 50 * slow,
			.done = async_done, .priv = &acs[i],
		};

		/* One short of half the slots: the connection stays up. */
		if (i == n - 1) {
			ret = async_wait(&ctx[0], 10);
			waited = true;
			krpc_client_query(clnt, &info);
			if (!ret && info.state != KRPC_CONN_UP) {
				fail("reset after %u of %u timeouts: state %u",
				     i, n, info.state);
				ret = -EINVAL;
			}
			if (ret)
				break;
		}
		acs[i].ctx = &ctx[i == n - 1];
		acs[i].expect = -ETIMEDOUT;
		atomic_inc(&acs[i].ctx->pending);
		ret = krpc_call_async(clnt, &a, NULL);
		if (ret)
			atomic_dec(&acs[i].ctx->pending);
	}
	if (!waited)
		ret = async_wait(&ctx[0], 10) ?: ret;
	ret = async_wait(&ctx[1], 10) ?: ret;
	for (i = 0; i < 100 * slow; i++) {
		krpc_client_query(clnt, &info);
		if (info.state == KRPC_CONN_DEAD)
			break;
		msleep(20);
	}
	release_held(0);
	kfree(acs);
	if (!ret && (info.state != KRPC_CONN_DEAD || info.reason != -ETIMEDOUT)) {
		fail("after %u unanswered timeouts: state %u reason %d", n,
		     info.state, info.reason);
		ret = -EINVAL;
	}
	if (!ret)
		tlog("%u unanswered timeouts of %u slots reset the connection, %u did not\n",
		     n, info.depth, n - 1);
	return ret;
}

/*
 * The call timer runs a timed-out call's completion (softirq, from
 * krpc_conn_call_timeout()); a krpc_client_destroy() that starts meanwhile
 * must not return before that completion has: its owner may free what the
 * callback uses right after.
 * The callback starts the destroy on another CPU (this one is held by the
 * callback's softirq) and spins until it started, and a second more.
 */
static struct {
	struct work_struct work;
	struct completion done;
	atomic_t state;		/* 1: in the callback, 2: returned */
	atomic_t destroying;
	int state_at_return;
	unsigned int ms;
} tdone;

static void tdone_destroy(struct work_struct *work)
{
	unsigned long t0 = jiffies;

	atomic_set(&tdone.destroying, 1);
	krpc_client_destroy(clnt);
	tdone.state_at_return = atomic_read(&tdone.state);
	tdone.ms = jiffies_to_msecs(jiffies - t0);
	complete(&tdone.done);
}

static void tdone_cb(struct krpc_call *call, const struct krpc_result *res,
		     void *priv)
{
	unsigned int ms, cpu;

	if (res->status != -ETIMEDOUT) {	/* the test failed already */
		atomic_set(&tdone.state, 2);
		return;
	}
	atomic_set(&tdone.state, 1);
	cpu = cpumask_any_but(cpu_online_mask, raw_smp_processor_id());
	if (cpu < nr_cpu_ids)
		queue_work_on(cpu, system_wq, &tdone.work);
	for (ms = 0; ms < 5000 && !atomic_read(&tdone.destroying); ms++)
		mdelay(1);
	mdelay(1000);
	atomic_set(&tdone.state, 2);
}

static int cmd_destroy_in_done(char **argv, int argc)
{
	struct krpc_call_args a = {
		.method = M_HOLD, .timeout_ms = 50 * slow, .done = tdone_cb,
	};
	int ret;

	if (!clnt || !srv)
		return -ENOTCONN;
	if (num_online_cpus() < 2) {
		fail("%s", "needs two CPUs");
		return -EOPNOTSUPP;
	}
	INIT_WORK(&tdone.work, tdone_destroy);
	init_completion(&tdone.done);
	atomic_set(&tdone.state, 0);
	atomic_set(&tdone.destroying, 0);
	ret = krpc_call_async(clnt, &a, NULL);
	if (ret)
		return ret;
	if (!wait_for_completion_timeout(&tdone.done, 20 * slow * HZ)) {
		fail("%s", "the call timer never started the destroy");
		flush_work(&tdone.work);
		if (completion_done(&tdone.done))
			clnt = NULL;
		client_stop();
		release_held(0);
		return -ETIMEDOUT;
	}
	clnt = NULL;
	release_held(0);
	if (tdone.state_at_return != 2) {
		fail("destroy returned after %u ms, the timer's completion still running",
		     tdone.ms);
		return -EINVAL;
	}
	tlog("destroy returned after %u ms, after the completion\n",
	     tdone.ms);
	return 0;
}

static int cmd_counters(char **argv, int argc)
{
	struct krpc_conn_info info;

	if (!clnt)
		return -ENOTCONN;
	krpc_client_query(clnt, &info);
	if (info.transport == KRPC_XPRT_TCP) {
		/* Payloads are copied (counted); no key exists. */
		if (info.stats.rnr_naks || info.stats.dp_regs ||
		    info.stats.mr_grants || info.stats.rdv ||
		    !info.stats.copies) {
			fail("tcp: rnr_naks %llu dp_regs %llu mr_grants %llu rdv %llu copies %llu",
			     info.stats.rnr_naks, info.stats.dp_regs,
			     info.stats.mr_grants, info.stats.rdv,
			     info.stats.copies);
			return -EINVAL;
		}
	} else if (info.stats.rnr_naks || info.stats.dp_regs ||
		   info.stats.copies) {
		fail("rnr_naks %llu dp_regs %llu copies %llu, want 0",
		     info.stats.rnr_naks, info.stats.dp_regs,
		     info.stats.copies);
		return -EINVAL;
	}
	tlog("counters ok: calls %llu eager %llu rdv %llu mr_grants %llu credit_stalls %llu\n",
	     info.stats.calls, info.stats.eager, info.stats.rdv,
	     info.stats.mr_grants, info.stats.credit_stalls);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Storm: calls in flight while the peer or the device goes away */

struct storm_call {
	atomic_t done;
};

static struct task_struct *storm_task;
static atomic_t storm_inflight = ATOMIC_INIT(0);
static atomic64_t storm_submitted, storm_completed, storm_errors;
static atomic_t storm_doubles = ATOMIC_INIT(0);
static DECLARE_WAIT_QUEUE_HEAD(storm_wq);
static size_t storm_len;
static u32 storm_method, storm_flags;

static void storm_done(struct krpc_call *call, const struct krpc_result *res,
		       void *priv)
{
	struct storm_call *sc = priv;

	if (atomic_inc_return(&sc->done) != 1) {
		atomic_inc(&storm_doubles);
		return;
	}
	if (res->status)
		atomic64_inc(&storm_errors);
	krpc_buf_put(res->reply);
	atomic64_inc(&storm_completed);
	/* Leaked on purpose if completed twice: the double shows up. */
	kfree(sc);
	atomic_dec(&storm_inflight);
	wake_up(&storm_wq);
}

static int storm_fn(void *unused)
{
	u32 seed = 0;

	while (!kthread_should_stop()) {
		struct krpc_call_args a = {
			.method = storm_method, .flags = storm_flags,
			.reply_max = storm_flags ? 0 : storm_len,
			.done = storm_done,
		};
		struct storm_call *sc;
		int ret;

		wait_event_interruptible_timeout(storm_wq,
			atomic_read(&storm_inflight) < 256 ||
			kthread_should_stop(), HZ / 10);
		if (atomic_read(&storm_inflight) >= 256)
			continue;
		sc = kzalloc(sizeof(*sc), GFP_KERNEL);
		if (!sc)
			continue;
		a.priv = sc;
		if (storm_len) {
			a.req.type = KRPC_PL_BUF;
			a.req.buf = krpc_buf_get(krpc_client_pool(clnt),
						 storm_len, GFP_NOWAIT);
			if (IS_ERR(a.req.buf)) {
				kfree(sc);
				msleep(20);
				continue;
			}
			fill(a.req.buf, seed++, storm_len);
		}
		atomic_inc(&storm_inflight);
		ret = krpc_call_async(clnt, &a, NULL);
		if (ret) {
			atomic_dec(&storm_inflight);
			kfree(sc);
			if (storm_len)
				krpc_buf_put(a.req.buf);
			msleep(20);	/* connection gone: idle until stopped */
			continue;
		}
		atomic64_inc(&storm_submitted);
	}
	return 0;
}

static int cmd_storm_start(char **argv, int argc)
{
	if (!clnt || storm_task)
		return -EINVAL;
	if (argc < 2 || kstrtoul(argv[1], 0, &storm_len))
		return -EINVAL;
	storm_method = M_SHUFFLE;
	storm_flags = 0;
	if (argc > 2 && !strcmp(argv[2], "hold")) {
		storm_method = M_HOLD;
	} else if (argc > 2 && !strcmp(argv[2], "gate")) {
		storm_method = M_GATE;
		storm_flags = KRPC_CALL_ONEWAY;
	} else if (argc > 2) {
		return -EINVAL;
	}
	atomic64_set(&storm_submitted, 0);
	atomic64_set(&storm_completed, 0);
	atomic64_set(&storm_errors, 0);
	atomic_set(&storm_doubles, 0);
	storm_task = kthread_run(storm_fn, NULL, "krpc_storm");
	if (IS_ERR(storm_task)) {
		int ret = PTR_ERR(storm_task);

		storm_task = NULL;
		return ret;
	}
	return 0;
}

static int storm_stop(void)
{
	int ret = 0;

	if (!storm_task)
		return -EINVAL;
	kthread_stop(storm_task);
	storm_task = NULL;
	if (!wait_event_timeout(storm_wq, !atomic_read(&storm_inflight),
				60 * slow * HZ)) {
		fail("%d storm calls never completed",
		     atomic_read(&storm_inflight));
		ret = -ETIMEDOUT;
	}
	if (atomic_read(&storm_doubles)) {
		fail("%d storm calls completed twice",
		     atomic_read(&storm_doubles));
		ret = -EINVAL;
	}
	if (atomic64_read(&storm_submitted) != atomic64_read(&storm_completed)) {
		fail("storm: %lld submitted, %lld completed",
		     atomic64_read(&storm_submitted),
		     atomic64_read(&storm_completed));
		ret = -EINVAL;
	}
	tlog("storm: %lld calls, %lld failed, disconnects %d (reason %d)\n",
	     atomic64_read(&storm_submitted), atomic64_read(&storm_errors),
	     atomic_read(&disconnects), disconnect_reason);
	return ret;
}

static int cmd_storm_stop(char **argv, int argc)
{
	return storm_stop();
}

static void client_stop(void)
{
	if (storm_task)
		storm_stop();
	if (clnt)
		krpc_client_destroy(clnt);	/* fails the calls in flight */
	clnt = NULL;
	if (inv_call) {
		krpc_call_put(inv_call);
		inv_call = NULL;
	}
}

/* ---------------------------------------------------------------------- */
/* debugfs */

static int run_cmd(char *line)
{
	char *argv[8], *p = line, *tok;
	int argc = 0;

	while ((tok = strsep(&p, " \t")) && argc < ARRAY_SIZE(argv))
		if (*tok)
			argv[argc++] = tok;
	if (!argc)
		return -EINVAL;
	/* The log shows the last command only. */
	spin_lock(&log_lock);
	log_len = 0;
	spin_unlock(&log_lock);
	tlog("> %s%s%s%s%s\n", argv[0], argc > 1 ? " " : "",
	     argc > 1 ? argv[1] : "", argc > 2 ? " " : "",
	     argc > 2 ? argv[2] : "");
	if (!strcmp(argv[0], "server_start"))
		return cmd_server_start(argv, argc);
	if (!strcmp(argv[0], "server_stop")) {
		server_stop();
		return 0;
	}
	if (!strcmp(argv[0], "connect"))
		return cmd_connect(argv, argc);
	if (!strcmp(argv[0], "connect_fail"))
		return cmd_connect_fail(argv, argc);
	if (!strcmp(argv[0], "transport"))
		return argc == 2 ? kstrtouint(argv[1], 0, &transport) : -EINVAL;
	if (!strcmp(argv[0], "cq_mode"))
		return argc == 2 ? kstrtouint(argv[1], 0, &cq_mode) : -EINVAL;
	if (!strcmp(argv[0], "max_conns"))
		return argc == 2 ? kstrtouint(argv[1], 0, &max_conns) : -EINVAL;
	if (!strcmp(argv[0], "disconnect"))
		return cmd_disconnect(argv, argc);
	if (!strcmp(argv[0], "echo"))
		return cmd_echo(argv, argc, M_ECHO);
	if (!strcmp(argv[0], "nosleep_echo"))
		return cmd_echo(argv, argc, M_NOSLEEP_ECHO);
	if (!strcmp(argv[0], "async"))
		return cmd_async(argv, argc);
	if (!strcmp(argv[0], "window"))
		return cmd_window(argv, argc);
	if (!strcmp(argv[0], "timeout"))
		return cmd_timeout(argv, argc);
	if (!strcmp(argv[0], "cancel"))
		return cmd_cancel(argv, argc);
	if (!strcmp(argv[0], "rcancel_start"))
		return cmd_rcancel_start(argv, argc);
	if (!strcmp(argv[0], "rcancel_finish"))
		return cmd_rcancel_finish(argv, argc);
	if (!strcmp(argv[0], "cancel_unanswered"))
		return cmd_cancel_unanswered(argv, argc);
	if (!strcmp(argv[0], "abandon"))
		return cmd_abandon(argv, argc);
	if (!strcmp(argv[0], "samebuf"))
		return cmd_samebuf(argv, argc);
	if (!strcmp(argv[0], "early_reply"))
		return cmd_early_reply(argv, argc);
	if (!strcmp(argv[0], "inv_hold"))
		return cmd_inv_hold(argv, argc);
	if (!strcmp(argv[0], "inv_cancel"))
		return cmd_inv_cancel(argv, argc);
	if (!strcmp(argv[0], "inv_finish"))
		return cmd_inv_finish(argv, argc);
	if (!strcmp(argv[0], "nomethod"))
		return expect_status(999, -EBADRQC);
	if (!strcmp(argv[0], "handler_error"))
		return expect_status(M_ERR, -EPROTO);
	if (!strcmp(argv[0], "oneway"))
		return cmd_oneway(argv, argc);
	if (!strcmp(argv[0], "oneway_close"))
		return cmd_oneway_close(argv, argc);
	if (!strcmp(argv[0], "toobig"))
		return cmd_toobig(argv, argc);
	if (!strcmp(argv[0], "zombies"))
		return cmd_zombies(argv, argc);
	if (!strcmp(argv[0], "destroy_in_done"))
		return cmd_destroy_in_done(argv, argc);
	if (!strcmp(argv[0], "counters"))
		return cmd_counters(argv, argc);
	if (!strcmp(argv[0], "storm_start"))
		return cmd_storm_start(argv, argc);
	if (!strcmp(argv[0], "storm_stop"))
		return cmd_storm_stop(argv, argc);
	if (!strcmp(argv[0], "gate_close") || !strcmp(argv[0], "gate_open")) {
		gate_set(!strcmp(argv[0], "gate_close"));
		return 0;
	}
	if (!strcmp(argv[0], "gate_stat"))
		return cmd_gate_stat(argv, argc);
	return -EOPNOTSUPP;
}

static ssize_t cmd_write(struct file *f, const char __user *ubuf, size_t len,
			 loff_t *ppos)
{
	char line[128];
	int ret;

	if (len >= sizeof(line))
		return -EINVAL;
	if (copy_from_user(line, ubuf, len))
		return -EFAULT;
	line[len] = 0;
	mutex_lock(&cmd_lock);
	ret = run_cmd(strim(line));
	if (ret)
		tlog("error %d\n", ret);
	mutex_unlock(&cmd_lock);
	return ret ? ret : len;
}

static const struct file_operations cmd_fops = {
	.owner = THIS_MODULE,
	.write = cmd_write,
	.llseek = noop_llseek,
};

static int log_show(struct seq_file *m, void *unused)
{
	spin_lock(&log_lock);
	seq_write(m, log_buf, log_len);
	spin_unlock(&log_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(log);

static int info_show(struct seq_file *m, void *unused)
{
	struct krpc_conn_info info;

	mutex_lock(&cmd_lock);
	if (clnt) {
		krpc_client_query(clnt, &info);
		seq_printf(m, "state %u\nreason %d\ndepth %u\ninflight %u\nqueued %u\ncredits %u\ninline_max %u\nmax_msg %u\ncalls %llu\nrnr_naks %llu\ndp_regs %llu\ncopies %llu\nmr_grants %llu\ntransport %u\ncq_mode %u\n",
			   info.state, info.reason, info.depth, info.inflight,
			   info.queued, info.send_credits, info.inline_max,
			   info.max_msg, info.stats.calls, info.stats.rnr_naks,
			   info.stats.dp_regs, info.stats.copies,
			   info.stats.mr_grants, info.transport, info.cq_mode);
	}
	seq_printf(m, "disconnects %d\ndisconnect_ms %llu\n",
		   atomic_read(&disconnects), READ_ONCE(disconnect_ms));
	mutex_unlock(&cmd_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(info);

static int __init krpc_test_init(void)
{
	dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	if (IS_ERR(dir))
		return PTR_ERR(dir);
	debugfs_create_file("cmd", 0200, dir, NULL, &cmd_fops);
	debugfs_create_file("log", 0400, dir, NULL, &log_fops);
	debugfs_create_file("info", 0400, dir, NULL, &info_fops);
	return 0;
}

static void __exit krpc_test_exit(void)
{
	debugfs_remove_recursive(dir);
	mutex_lock(&cmd_lock);
	client_stop();
	server_stop();
	mutex_unlock(&cmd_lock);
}

module_init(krpc_test_init);
module_exit(krpc_test_exit);
MODULE_DESCRIPTION("krpc self-test through the exported kernel API");
MODULE_LICENSE("GPL");
