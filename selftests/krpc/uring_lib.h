/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the uring_* selftests and uring_peer: an echo server
 * running on a ring of its own (in a thread or a process), payload
 * patterns, debugfs counters.
 *
 * Echo server methods:
 *   M_ECHO (1)	reply with the request buffer itself (zero copy)
 *   M_HOLD (2)	keep the request, never answer (until the server closes)
 */
#ifndef URING_LIB_H
#define URING_LIB_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <liburing.h>

#include "libkrpc.h"

#define M_ECHO		1
#define M_HOLD		2
#define TEST_ADDR	"192.0.2.1"
#define BUF_SIZE	65536U

/* The mmap() offset of a handle's object: the handle in pages (chardev.c). */
static inline off_t handle_off(uint32_t handle)
{
	return (off_t)handle * sysconf(_SC_PAGESIZE);
}

/*
 * Transport the tests' servers and clients ask for: KRPC_TRANSPORT=rdma,
 * tcp or auto in the environment (the *_tcp.sh wrappers set tcp), else the
 * module's default.  -1 for a value the tests do not know.
 */
static inline int env_transport(void)
{
	const char *t = getenv("KRPC_TRANSPORT");

	if (!t || !*t)
		return KRPC_TRANSPORT_DEFAULT;
	if (!strcmp(t, "rdma"))
		return KRPC_TRANSPORT_RDMA;
	if (!strcmp(t, "tcp"))
		return KRPC_TRANSPORT_TCP;
	if (!strcmp(t, "auto"))
		return KRPC_TRANSPORT_AUTO;
	return -1;
}

static inline uint8_t pattern(uint32_t seed, uint32_t i)
{
	return (uint8_t)((seed * 2654435761u + i * 40503u) >> 13);
}

static inline void fill(void *p, uint32_t seed, uint32_t len)
{
	uint8_t *b = p;
	uint32_t i;

	for (i = 0; i < len; i++)
		b[i] = pattern(seed, i);
}

/* Index of the first wrong byte, or -1. */
static inline long check_pattern(const void *p, uint32_t seed, uint32_t len)
{
	const uint8_t *b = p;
	uint32_t i;

	for (i = 0; i < len; i++)
		if (b[i] != pattern(seed, i))
			return i;
	return -1;
}

static inline void sin_of(struct sockaddr_in *sin, const char *addr,
			  uint16_t port)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	inet_pton(AF_INET, addr, &sin->sin_addr);
}

/* Exit status of a shell command, or -1 if it did not exit. */
static inline int sh(const char *cmd)
{
	int ret = system(cmd);

	return WIFEXITED(ret) ? WEXITSTATUS(ret) : -1;
}

/*
 * Load krpc from KRPC_BUILD with @params (or "").  On a debug kernel
 * (KASAN and lockdep under emulation are tens of times slower) the default
 * call timeout, which counts from submission and so covers queueing behind
 * a full window, is stretched by RPC_SLOW (20 unless set), as rpc_lib.sh
 * does for the shell tests.
 */
static inline int krpc_insmod(const char *params)
{
	const char *slow = getenv("RPC_SLOW");
	unsigned int f = 1;
	struct utsname u;
	char cmd[512];

	if (slow)
		f = (unsigned int)atoi(slow);
	else if (!uname(&u) && strstr(u.release, "debug"))
		f = 20;
	snprintf(cmd, sizeof(cmd),
		 "insmod \"$KRPC_BUILD/kmod/krpc.ko\" call_timeout_ms=%u %s",
		 30000 * (f ? f : 1), params);
	return sh(cmd);
}

/* debugfs counter, or -1. */
static inline long long krpc_counter(const char *name)
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

/*
 * Wait up to @ms for a counter to reach @want (the last reference of a
 * ring, and so of its registered /dev/krpc file, goes away in a kernel
 * worker after io_uring_queue_exit()).  Return the last value read.
 */
static inline long long krpc_counter_wait(const char *name, long long want,
					  unsigned int ms)
{
	long long v;

	for (;;) {
		v = krpc_counter(name);
		if (v == want || !ms)
			return v;
		usleep(10000);
		ms = ms > 10 ? ms - 10 : 0;
	}
}

/*
 * Large buffers of the pools the helpers below create (servers and
 * clients alike): none while large_size is 0.  Set before the setup.
 */
static uint32_t lib_large_size, lib_large_count;

static inline int lib_pool_create(int fd, uint32_t nr_bufs,
				  struct krpc_pool *pool)
{
	if (!lib_large_size)
		return krpc_pool_create(fd, NULL, BUF_SIZE, nr_bufs, pool);
	return krpc_pool_create_large(fd, NULL, BUF_SIZE, nr_bufs,
				      lib_large_size, lib_large_count, pool);
}

struct echo_srv {
	struct krpc k;
	struct krpc_pool pool;
	struct krpc_srv srv;
	uint32_t nr_slots;
	pthread_t thread;
	int err;		/* first unexpected result */
	unsigned long served;
	unsigned long held;
	uint32_t *last;		/* per slot: buffer of the last reply */
	int ready;		/* the thread's FETCHes are submitted */
};

/* Serve until every slot reports -ESHUTDOWN (krpc_srv_close()). */
static inline int echo_serve(struct echo_srv *e)
{
	struct io_uring *ring = e->k.ring;
	struct io_uring_cqe *cqe;
	uint32_t live = e->nr_slots, s;

	for (s = 0; s < e->nr_slots; s++) {
		e->last[s] = KRPC_BUF_NONE;
		krpc_prep_fetch(&e->k, io_uring_get_sqe(ring), e->srv.handle,
				s, s);
	}
	io_uring_submit(ring);
	__atomic_store_n(&e->ready, 1, __ATOMIC_RELEASE);
	while (live) {
		uint64_t res2;
		uint32_t buf, off, slot;
		int res, ret;

		ret = io_uring_wait_cqe(ring, &cqe);
		if (ret == -EINTR)
			continue;
		if (ret)
			return ret;
		res = cqe->res;
		res2 = krpc_cqe_res2(cqe);
		slot = (uint32_t)cqe->user_data;
		io_uring_cqe_seen(ring, cqe);
		/* The previous reply of this slot is back: free it. */
		if (e->last[slot] != KRPC_BUF_NONE) {
			krpc_buf_free(e->k.fd, &e->pool, &e->last[slot], 1);
			e->last[slot] = KRPC_BUF_NONE;
		}
		if (res < 0) {
			if (res != -ESHUTDOWN && !e->err)
				e->err = res;
			live--;
			continue;
		}
		buf = KRPC_RES2_BUF(res2);
		off = KRPC_RES2_OFFSET(res2);
		if (e->srv.desc[slot].method == M_HOLD) {
			e->held++;
			if (buf != KRPC_BUF_NONE)
				krpc_buf_free(e->k.fd, &e->pool, &buf, 1);
			live--;		/* this slot stays busy */
			continue;
		}
		e->served++;
		e->last[slot] = buf;
		krpc_prep_reply(&e->k, io_uring_get_sqe(ring), e->srv.handle,
				slot, buf, buf == KRPC_BUF_NONE ? 0 : off,
				buf == KRPC_BUF_NONE ? 0 : (uint32_t)res, 0, 1,
				slot);
		io_uring_submit(ring);
	}
	return 0;
}

static inline void *echo_thread(void *arg)
{
	struct echo_srv *e = arg;
	int ret = echo_serve(e);

	if (ret && !e->err)
		e->err = ret;
	return NULL;
}

/* Open, pool, listen.  Return 0 or -errno. */
static inline int echo_srv_setup(struct echo_srv *e, uint16_t port,
			     uint32_t nr_slots, uint32_t nr_bufs,
			     unsigned int ring_flags)
{
	static const uint32_t methods[] = { M_ECHO, M_HOLD };
	struct sockaddr_in sin;
	int ret;

	memset(e, 0, sizeof(*e));
	e->nr_slots = nr_slots;
	e->last = calloc(nr_slots, sizeof(*e->last));
	if (!e->last)
		return -ENOMEM;
	ret = krpc_open(&e->k, 2 * nr_slots + 8, ring_flags);
	if (ret)
		return ret;
	ret = lib_pool_create(e->k.fd, nr_bufs, &e->pool);
	if (ret)
		return ret;
	sin_of(&sin, "0.0.0.0", port);
	if (env_transport() < 0)
		return -EINVAL;
	return krpc_listen_xprt(e->k.fd, &e->pool, (struct sockaddr *)&sin,
				sizeof(sin), nr_slots, methods, 2,
				env_transport(), &e->srv);
}

static inline int echo_start(struct echo_srv *e, uint16_t port,
			     uint32_t nr_slots, uint32_t nr_bufs)
{
	int ret = echo_srv_setup(e, port, nr_slots, nr_bufs, 0);

	if (ret)
		return ret;
	return -pthread_create(&e->thread, NULL, echo_thread, e);
}

/* Close the server (held requests get -ESHUTDOWN), join, tear down. */
static inline int echo_stop(struct echo_srv *e)
{
	int ret;

	/* A FETCH submitted after the close would fail with -EBADF. */
	while (!__atomic_load_n(&e->ready, __ATOMIC_ACQUIRE))
		usleep(1000);
	ret = krpc_srv_close(e->k.fd, &e->srv);

	pthread_join(e->thread, NULL);
	krpc_pool_destroy(e->k.fd, &e->pool);
	krpc_close(&e->k);
	free(e->last);
	return ret ? ret : e->err;
}

/* A client: device, ring, pool, connection. */
struct echo_clnt {
	struct krpc k;
	struct krpc_pool pool;
	int conn;
	uint32_t transport;	/* KRPC_TRANSPORT_RDMA or _TCP */
};

/* krpc_connect_flags() to @addr:@port (IPv4). */
static inline int lib_connect(struct krpc *k, const struct krpc_pool *pool,
			      const char *addr, uint16_t port, uint32_t depth,
			      uint32_t transport, uint32_t flags, uint32_t *used)
{
	struct sockaddr_in sin;

	sin_of(&sin, addr, port);
	return krpc_connect_flags(k, pool, (struct sockaddr *)&sin,
				  sizeof(sin), depth, transport, flags, used);
}

/* CLOCK_MONOTONIC in seconds. */
static inline double lib_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* waitpid() with a bound: the status, or -1 if @pid did not die in time. */
static inline int lib_reap(pid_t pid, double limit)
{
	double end = lib_now() + limit;
	int status;

	while (lib_now() < end) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		usleep(20000);
	}
	return -1;
}

/* Lines of the kernel log matching the extended regex @re (at most 255). */
static inline int klog_count(const char *re)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd),
		 "n=$(dmesg | grep -cE '%s'); exit $((n > 255 ? 255 : n))", re);
	return sh(cmd);
}

/* A client whose connection has KRPC_CONN_F_* @conn_flags. */
static inline int clnt_start_flags(struct echo_clnt *c, const char *addr,
				   uint16_t port, uint32_t nr_bufs,
				   unsigned int ring_flags, uint32_t depth,
				   uint32_t conn_flags)
{
	int ret;

	memset(c, 0, sizeof(*c));
	ret = krpc_open(&c->k, 4096, ring_flags);
	if (ret)
		return ret;
	ret = lib_pool_create(c->k.fd, nr_bufs, &c->pool);
	if (ret)
		return ret;
	if (env_transport() < 0)
		return -EINVAL;
	c->conn = lib_connect(&c->k, &c->pool, addr, port, depth,
			      env_transport(), conn_flags, &c->transport);
	if (c->conn < 0)
		return c->conn;
	/* A transport asked for by name is the one used. */
	if ((env_transport() == KRPC_TRANSPORT_RDMA ||
	     env_transport() == KRPC_TRANSPORT_TCP) &&
	    c->transport != (uint32_t)env_transport())
		return -EPROTO;
	return 0;
}

static inline int clnt_start(struct echo_clnt *c, const char *addr,
			     uint16_t port, uint32_t nr_bufs,
			     unsigned int ring_flags, uint32_t depth)
{
	return clnt_start_flags(c, addr, port, nr_bufs, ring_flags, depth, 0);
}

static inline void clnt_stop(struct echo_clnt *c)
{
	if (c->conn > 0)
		krpc_close_handle(c->k.fd, c->conn);
	if (c->pool.base)
		krpc_pool_destroy(c->k.fd, &c->pool);
	if (c->k.ring)
		krpc_close(&c->k);
}

/*
 * One echo of @len bytes through @c, checked byte for byte.  Return 0,
 * -errno of the call, or -EBADMSG for a wrong reply.
 */
static inline int echo_once(struct echo_clnt *c, uint32_t seed, uint32_t len)
{
	struct krpc_reply r;
	uint32_t tx = KRPC_BUF_NONE;
	int ret;

	if (len) {
		/* above one buffer: a large one (lib_large_size) */
		ret = len > c->pool.buf_size ?
		      krpc_buf_alloc_large(c->k.fd, &c->pool, &tx, 1) :
		      krpc_buf_alloc(c->k.fd, &c->pool, &tx, 1);
		if (ret != 1)
			return ret < 0 ? ret : -ENOBUFS;
		fill(krpc_pool_buf(&c->pool, tx), seed, len);
	}
	ret = krpc_call_sync(&c->k, c->conn, M_ECHO, tx, len, len, 0, &r);
	if (tx != KRPC_BUF_NONE)
		krpc_buf_free(c->k.fd, &c->pool, &tx, 1);
	if (ret < 0)
		goto out;
	if ((uint32_t)ret != len)
		ret = -EBADMSG;
	else if (len && (r.buf == KRPC_BUF_NONE ||
			 check_pattern((char *)krpc_pool_buf(&c->pool, r.buf) +
				       r.offset, seed, len) >= 0))
		ret = -EBADMSG;
	else
		ret = 0;
out:
	if (r.buf != KRPC_BUF_NONE)
		krpc_buf_free(c->k.fd, &c->pool, &r.buf, 1);
	return ret;
}

#endif /* URING_LIB_H */
