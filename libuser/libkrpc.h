/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * libkrpc: userspace access to krpc (/dev/krpc).
 *
 * A thin layer over liburing: it opens the device, sets up pools and
 * servers (ioctl + mmap), and fills the SQEs of krpc's io_uring commands.
 * It does not hide the ring: struct krpc carries an ordinary struct
 * io_uring that applications drive from their own event loop, next to
 * their other io_uring work.  A small blocking layer (krpc_connect(),
 * krpc_call_sync(), ...) covers the easy cases.
 *
 * Every function returns 0 or a non-negative value on success and -errno on
 * failure; errno is never the channel for errors.  The ABI itself is
 * <linux/krpc.h>; Documentation/userspace-api.rst describes both.
 */
#ifndef LIBKRPC_H
#define LIBKRPC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <linux/krpc.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Flags for krpc_dev_open(). */
#define KRPC_OPEN_F_ALL		0U

/**
 * krpc_dev_open() - open /dev/krpc
 * @flags: 0 (no flag is defined yet; others give -EINVAL)
 *
 * Each open file is a separate context: pools, connections and servers
 * created through it are private to it and go away when it is closed.
 *
 * Return: a file descriptor (close it with close(2)), or -errno:
 * -ENOENT when krpc is not loaded, -EACCES without permission on the node.
 */
int krpc_dev_open(unsigned int flags);

/**
 * krpc_dev_info() - query the module behind an open /dev/krpc
 * @fd:   from krpc_dev_open()
 * @info: filled in; any content on entry is ignored
 *
 * Return: 0, or -errno (-ENOTTY when @fd is not /dev/krpc).
 */
int krpc_dev_info(int fd, struct krpc_info *info);

/* ---------------------------------------------------------------------- */
/* Pools (ioctl + mmap; no ring needed) */

/**
 * struct krpc_pool - a pool mapped into this process
 * @handle:	pool handle
 * @buf_size:	bytes per buffer
 * @count:	buffers of @buf_size: indexes 0..@count - 1
 * @base:	the mapping: buffer i is at base + i * buf_size
 * @length:	bytes mapped
 * @large_size:	bytes per large buffer, 0 if the pool has none
 * @large_count: large buffers: indexes @count..@count + @large_count - 1,
 *		mapped after the others
 *
 * @large_size and @large_count came with KRPC_0.6 (krpc_pool_create_large());
 * a program built against an older libkrpc.h knows a shorter structure and
 * keeps the KRPC_0.1 krpc_pool_create(), which does not write them.
 */
struct krpc_pool {
	uint32_t handle;
	uint32_t buf_size;
	uint32_t count;
	void *base;
	size_t length;
	uint32_t large_size;
	uint32_t large_count;
};

/**
 * krpc_pool_create() - create and map a pool
 * @fd:		/dev/krpc
 * @device:	RDMA device name, or NULL / "" for the first one
 * @buf_size:	bytes per buffer (KRPC_POOL_BUF_MIN..KRPC_POOL_BUF_MAX)
 * @count:	buffers
 * @pool:	filled in
 *
 * Return: 0, or -errno (-EINVAL, -ENODEV, -ENOMEM: over RLIMIT_MEMLOCK or
 * the module's per-user bound).
 */
int krpc_pool_create(int fd, const char *device, uint32_t buf_size,
		     uint32_t count, struct krpc_pool *pool);

/**
 * krpc_pool_create_large() - create and map a pool with large buffers
 * @fd:		/dev/krpc
 * @device:	RDMA device name, or NULL / "" for the first one
 * @buf_size:	bytes per buffer (KRPC_POOL_BUF_MIN..KRPC_POOL_BUF_MAX)
 * @count:	buffers
 * @large_size:	bytes per large buffer: a multiple of KRPC_POOL_BUF_MAX
 *		above @buf_size, at most KRPC_POOL_LARGE_MAX
 * @large_count: large buffers, 1..KRPC_POOL_COUNT_MAX
 * @pool:	filled in
 *
 * Payloads above @buf_size (up to @large_size and the module's max_msg)
 * travel in large buffers: take them with krpc_buf_alloc_large().  Calls
 * whose reply may exceed @buf_size, and servers that may receive such
 * requests, need free large buffers in the pool for them.
 *
 * Return: 0, or -errno (-EINVAL, -ENODEV, -ENOMEM: over RLIMIT_MEMLOCK or
 * the module's per-user bound; -E2BIG from a module without
 * KRPC_FEAT_POOL_LARGE, which does not know the large fields).
 */
int krpc_pool_create_large(int fd, const char *device, uint32_t buf_size,
			   uint32_t count, uint32_t large_size,
			   uint32_t large_count, struct krpc_pool *pool);

/**
 * krpc_pool_destroy() - unmap a pool and drop its handle
 * @fd:		/dev/krpc
 * @pool:	from krpc_pool_create()
 *
 * Return: 0, or -EBUSY while a connection or server uses it (the pool
 * stays mapped then).
 */
int krpc_pool_destroy(int fd, struct krpc_pool *pool);

/*
 * Address of buffer @idx, a large one too; NULL for an index out of range
 * (KRPC_BUF_NONE among them: a call or request without a buffer).
 */
static inline void *krpc_pool_buf(const struct krpc_pool *pool, uint32_t idx)
{
	if (idx < pool->count)
		return (char *)pool->base + (size_t)idx * pool->buf_size;
	if (idx - pool->count >= pool->large_count)
		return NULL;
	return (char *)pool->base + (size_t)pool->count * pool->buf_size +
	       (size_t)(idx - pool->count) * pool->large_size;
}

/* Capacity of buffer @idx (0 for an index out of range). */
static inline uint32_t krpc_pool_buf_size(const struct krpc_pool *pool,
					  uint32_t idx)
{
	if (idx < pool->count)
		return pool->buf_size;
	return idx - pool->count < pool->large_count ? pool->large_size : 0;
}

/**
 * krpc_buf_alloc() - take buffers the kernel does not use
 * @fd:		/dev/krpc
 * @pool:	the pool
 * @bufs:	receives up to @n indexes
 * @n:		1..KRPC_BUF_IOC_MAX
 *
 * Return: how many were taken (at least 1), or -ENOBUFS.
 */
int krpc_buf_alloc(int fd, const struct krpc_pool *pool, uint32_t *bufs,
		   unsigned int n);

/**
 * krpc_buf_alloc_large() - take large buffers the kernel does not use
 * @fd:		/dev/krpc
 * @pool:	a pool from krpc_pool_create_large()
 * @bufs:	receives up to @n indexes (@pool->count and above)
 * @n:		1..KRPC_BUF_IOC_MAX
 *
 * Give them back with krpc_buf_free(), as any buffer.
 *
 * Return: how many were taken (at least 1), -ENOBUFS, or -EINVAL if the
 * pool has no large buffers.
 */
int krpc_buf_alloc_large(int fd, const struct krpc_pool *pool,
			 uint32_t *bufs, unsigned int n);

/**
 * krpc_buf_free() - give buffers back to the kernel
 * @fd:		/dev/krpc
 * @pool:	the pool
 * @bufs:	indexes, all owned by the process
 * @n:		1..KRPC_BUF_IOC_MAX
 *
 * Return: 0, or -EBUSY / -EINVAL with nothing freed.
 */
int krpc_buf_free(int fd, const struct krpc_pool *pool, const uint32_t *bufs,
		  unsigned int n);

/**
 * krpc_addr_set() - fill a struct krpc_addr from a socket address
 * @addr:	filled in
 * @sa:		struct sockaddr_in or sockaddr_in6
 * @len:	its length
 *
 * Return: 0 or -EAFNOSUPPORT / -EINVAL.
 */
int krpc_addr_set(struct krpc_addr *addr, const struct sockaddr *sa,
		  socklen_t len);

/**
 * struct krpc_srv - a server of this process
 * @handle:	server handle
 * @nr_slots:	slots
 * @desc:	read-only array of @nr_slots request descriptors
 * @desc_len:	bytes mapped
 */
struct krpc_srv {
	uint32_t handle;
	uint32_t nr_slots;
	const struct krpc_req_desc *desc;
	size_t desc_len;
};

/**
 * krpc_listen() - create a server and map its request descriptors
 * @fd:		/dev/krpc
 * @pool:	pool of its connections
 * @sa:		local address (may be the wildcard) and port
 * @salen:	its length
 * @nr_slots:	parallel FETCHes (1..KRPC_SLOTS_MAX)
 * @methods:	method ids served
 * @nr_methods:	1..KRPC_METHODS_MAX
 * @srv:	filled in
 *
 * Return: 0, or -errno (-EADDRINUSE, -EACCES for a port below 1024
 * without CAP_NET_BIND_SERVICE, ...).
 */
int krpc_listen(int fd, const struct krpc_pool *pool,
		const struct sockaddr *sa, socklen_t salen, uint32_t nr_slots,
		const uint32_t *methods, uint32_t nr_methods,
		struct krpc_srv *srv);

/**
 * krpc_listen_xprt() - krpc_listen() over a chosen transport
 * @fd:		/dev/krpc
 * @pool:	pool of its connections
 * @sa:		local address (may be the wildcard) and port
 * @salen:	its length
 * @nr_slots:	parallel FETCHes (1..KRPC_SLOTS_MAX)
 * @methods:	method ids served
 * @nr_methods:	1..KRPC_METHODS_MAX
 * @transport:	KRPC_TRANSPORT_* (AUTO: RDMA and TCP on the same port);
 *		krpc_listen() passes KRPC_TRANSPORT_DEFAULT
 * @srv:	filled in
 *
 * Return: 0, or -errno (-EINVAL for an unknown @transport, else as
 * krpc_listen()).
 */
int krpc_listen_xprt(int fd, const struct krpc_pool *pool,
		     const struct sockaddr *sa, socklen_t salen,
		     uint32_t nr_slots, const uint32_t *methods,
		     uint32_t nr_methods, uint32_t transport,
		     struct krpc_srv *srv);

/**
 * krpc_listen_flags() - krpc_listen_xprt() with connection flags
 * @fd:		/dev/krpc
 * @pool:	pool of its connections
 * @sa:		local address (may be the wildcard) and port
 * @salen:	its length
 * @nr_slots:	parallel FETCHes (1..KRPC_SLOTS_MAX)
 * @methods:	method ids served
 * @nr_methods:	1..KRPC_METHODS_MAX
 * @transport:	KRPC_TRANSPORT_*
 * @flags:	KRPC_CONN_F_* for every accepted connection (how its RDMA
 *		completions are reaped: KRPC_CONN_F_CQ_POLL, _IRQ, or 0 for
 *		the module parameter's choice)
 * @srv:	filled in
 *
 * Return: 0, or -errno (-EINVAL for unknown or conflicting @flags, else as
 * krpc_listen_xprt()).
 */
int krpc_listen_flags(int fd, const struct krpc_pool *pool,
		      const struct sockaddr *sa, socklen_t salen,
		      uint32_t nr_slots, const uint32_t *methods,
		      uint32_t nr_methods, uint32_t transport, uint32_t flags,
		      struct krpc_srv *srv);

/**
 * struct krpc_srv_opts - how krpc_listen_opts() sets up a server; zero
 *	means the default of each field
 * @transport:	KRPC_TRANSPORT_* (AUTO: RDMA and TCP on the same port)
 * @flags:	KRPC_CONN_F_* for every accepted connection, as in
 *		krpc_listen_flags()
 * @depth:	largest outstanding-call depth granted to a client
 *		(0: the module parameter "depth")
 * @max_conns:	connections the server keeps at a time, 1..65536; one
 *		more is refused and that client's connect fails with
 *		-ENOBUFS (0: the module parameter "max_conns", read at each
 *		accept)
 */
struct krpc_srv_opts {
	uint32_t transport;
	uint32_t flags;
	uint32_t depth;
	uint32_t max_conns;
};

/**
 * krpc_listen_opts() - create a server with the settings of @opts
 * @fd:		/dev/krpc
 * @pool:	pool of its connections
 * @sa:		local address (may be the wildcard) and port
 * @salen:	its length
 * @nr_slots:	parallel FETCHes (1..KRPC_SLOTS_MAX)
 * @methods:	method ids served
 * @nr_methods:	1..KRPC_METHODS_MAX
 * @opts:	settings, or NULL for all defaults (as krpc_listen())
 * @srv:	filled in
 *
 * Return: 0, or -errno: -EINVAL for a field out of range, -E2BIG for a
 * non-zero @max_conns on a module that predates it (without
 * KRPC_FEAT_LISTEN_MAX_CONNS), else as krpc_listen_flags().
 */
int krpc_listen_opts(int fd, const struct krpc_pool *pool,
		     const struct sockaddr *sa, socklen_t salen,
		     uint32_t nr_slots, const uint32_t *methods,
		     uint32_t nr_methods, const struct krpc_srv_opts *opts,
		     struct krpc_srv *srv);

/**
 * krpc_srv_close() - stop a server and unmap its descriptors
 * @fd:		/dev/krpc
 * @srv:	from krpc_listen()
 *
 * FETCHes still waiting complete with -ESHUTDOWN; requests the process
 * holds are answered with -ESHUTDOWN.
 *
 * Return: 0 or -errno.
 */
int krpc_srv_close(int fd, struct krpc_srv *srv);

/**
 * krpc_close_handle() - close a connection (or a server, without unmapping)
 * @fd:		/dev/krpc
 * @handle:	connection or server handle
 *
 * Calls still in flight on a connection complete with -ESHUTDOWN.
 *
 * Return: 0, or -EBADF for an unknown handle.
 */
int krpc_close_handle(int fd, uint32_t handle);

/* ---------------------------------------------------------------------- */
/* Completion queues (ioctl + mmap) */

/**
 * struct krpc_cq - a completion queue mapped into this process
 * @handle:	queue handle (the cq field of a command)
 * @mask:	entries - 1
 * @head:	entries consumed (local copy of the shared head)
 * @khead:	shared head, written by the process
 * @ktail:	shared tail, written by the kernel
 * @cqes:	the entries
 * @base:	the mapping
 * @length:	bytes mapped
 *
 * One thread consumes a queue.  Commands from any ring on the same
 * /dev/krpc file may name it; libkrpc does no locking, so threads that
 * submit share a ring only under a lock of their own (a KRPC_RING_DEFER
 * ring takes submissions from its opener alone).
 */
struct krpc_cq {
	uint32_t handle;
	uint32_t mask;
	uint32_t head;
	uint32_t *khead;
	const uint32_t *ktail;
	const struct krpc_cqe *cqes;
	void *base;
	size_t length;
};

/**
 * krpc_cq_create() - create and map a completion queue
 * @fd:		/dev/krpc
 * @entries:	a power of two, 1..KRPC_CQ_ENTRIES_MAX; at least the
 *		commands that will be in flight on it at once
 * @cq:		filled in
 *
 * Return: 0, or -errno (-EINVAL, -EMFILE past KRPC_CQS_MAX queues).
 */
int krpc_cq_create(int fd, uint32_t entries, struct krpc_cq *cq);

/**
 * krpc_cq_destroy() - close a completion queue and unmap it
 * @fd:		/dev/krpc
 * @cq:		from krpc_cq_create()
 *
 * The mapping goes at once, but commands still on the queue keep
 * completing into it: what they hand over (a reply, a request) would be
 * lost, its buffer the process's until the pool goes, and a request's
 * client would wait for its timeout.  Finish them first (their
 * connections or servers closed, or their entries consumed).
 *
 * Return: 0 or -errno.
 */
int krpc_cq_destroy(int fd, struct krpc_cq *cq);

/* Entries posted and not consumed yet. */
static inline uint32_t krpc_cq_ready(const struct krpc_cq *cq)
{
	return __atomic_load_n(cq->ktail, __ATOMIC_ACQUIRE) - cq->head;
}

/* The oldest unconsumed entry, or NULL. */
static inline const struct krpc_cqe *krpc_cq_peek(const struct krpc_cq *cq)
{
	if (!krpc_cq_ready(cq))
		return NULL;
	return &cq->cqes[cq->head & cq->mask];
}

/* Consume @n entries: the kernel may reuse their space. */
static inline void krpc_cq_advance(struct krpc_cq *cq, uint32_t n)
{
	cq->head += n;
	__atomic_store_n(cq->khead, cq->head, __ATOMIC_RELEASE);
}

/**
 * krpc_cq_wait() - sleep until a completion queue has entries
 * @fd:		/dev/krpc
 * @cq:		the queue to wait for; NULL: any queue of @fd
 * @timeout_ms:	-1 for no limit
 *
 * With @cq: returns at once, without a system call, when @cq has entries;
 * else sleeps in KRPC_IOC_CQ_POLL (KRPC_CQ_POLL_SLEEP), woken by @cq's
 * entries only, so threads that each own a queue of one file wait
 * independently.  (A module without KRPC_FEAT_CQ_WAIT: poll() on @fd,
 * called again while other queues have entries, until @timeout_ms.)
 * Without @cq: poll(2) on @fd, which wakes when any queue gets an entry.
 *
 * Return: 1 when @cq (or, without @cq, a queue) has entries, 0 on
 * timeout, -EINTR, -EBADF (@cq closed while waiting) or another -errno.
 */
int krpc_cq_wait(int fd, const struct krpc_cq *cq, int timeout_ms);

/**
 * krpc_cq_busy_poll() - spin in the kernel until @cq has entries
 * @fd:		/dev/krpc
 * @cq:		the queue
 * @usecs:	longest spin, 1..KRPC_CQ_POLL_USECS_MAX
 *
 * KRPC_IOC_CQ_POLL: the kernel reaps polled connections' completions in
 * the caller's context while it waits (module parameter poll_usecs makes
 * connections polled), so a reply is handled on this CPU the moment the
 * device posts it.  Returns at once, without a system call, when @cq has
 * entries already.
 *
 * Return: unconsumed entries of @cq, 0 when @usecs passed without one,
 * -EINTR, or another -errno (-ENOTTY: a module without
 * KRPC_FEAT_CQ_POLL).
 */
int krpc_cq_busy_poll(int fd, const struct krpc_cq *cq, unsigned int usecs);

/* ---------------------------------------------------------------------- */
/* The ring */

struct io_uring;
struct io_uring_sqe;
struct io_uring_cqe;

/* krpc_open() flags */
#define KRPC_RING_SQPOLL	(1U << 0)	/* kernel thread polls the SQ */
#define KRPC_RING_DEFER		(1U << 1)	/* SINGLE_ISSUER | DEFER_TASKRUN */
#define KRPC_RING_F_ALL		(KRPC_RING_SQPOLL | KRPC_RING_DEFER)

/**
 * struct krpc - /dev/krpc plus an io_uring set up for it
 * @fd:		/dev/krpc
 * @ring:	SQE128/CQE32 ring; fixed file 0 is @fd.  Applications may use
 *		it for anything else as well.
 */
struct krpc {
	int fd;
	struct io_uring *ring;
};

/**
 * krpc_open() - open /dev/krpc and set up a ring for it
 * @k:		filled in
 * @entries:	SQ entries (the CQ gets twice as many)
 * @flags:	KRPC_RING_*
 *
 * On failure @k holds no ring and no file, and krpc_close() of it does
 * nothing.
 *
 * Return: 0 or -errno.
 */
int krpc_open(struct krpc *k, unsigned int entries, unsigned int flags);

/* Tear the ring down and close the device (every handle goes with it). */
void krpc_close(struct krpc *k);

/**
 * krpc_prep_cmd() - fill an SQE with a krpc command
 * @k:		the device
 * @sqe:	from io_uring_get_sqe(k->ring); all 128 bytes are written
 * @cmd_op:	KRPC_CMD_*
 * @cmd:	the matching struct krpc_cmd_*
 * @len:	its size (at most 80)
 * @user_data:	returned in the CQE
 */
void krpc_prep_cmd(struct krpc *k, struct io_uring_sqe *sqe, uint32_t cmd_op,
		   const void *cmd, size_t len, uint64_t user_data);

/* KRPC_CMD_CALL with the common fields; offset 0, default timeout. */
void krpc_prep_call(struct krpc *k, struct io_uring_sqe *sqe, uint32_t conn,
		    uint32_t method, uint32_t buf, uint32_t len,
		    uint32_t reply_max, uint64_t tag, uint64_t user_data);

/* KRPC_CMD_FETCH on @slot. */
void krpc_prep_fetch(struct krpc *k, struct io_uring_sqe *sqe,
		     uint32_t server, uint32_t slot, uint64_t user_data);

/* KRPC_CMD_REPLY_FETCH (@fetch) or KRPC_CMD_REPLY on @slot. */
void krpc_prep_reply(struct krpc *k, struct io_uring_sqe *sqe,
		     uint32_t server, uint32_t slot, uint32_t buf,
		     uint32_t offset, uint32_t len, int32_t status, int fetch,
		     uint64_t user_data);

/* The second result of a krpc CQE (see KRPC_RES2_*). */
uint64_t krpc_cqe_res2(const struct io_uring_cqe *cqe);

/**
 * krpc_sqe_set_cq() - send a prepared command's result to a queue
 * @sqe:	a CALL, FETCH, REPLY or REPLY_FETCH from krpc_prep_*()
 * @cq:		the completion queue
 * @tag:	tag of the queue entry (for CALL also the cancel tag)
 *
 * Also sets IOSQE_CQE_SKIP_SUCCESS: the io_uring CQ then only sees the
 * commands the queue refused (-EBADF, -EBUSY), with the SQE's user_data.
 *
 * Return: 0, or -EINVAL for another command, an SQE that is not an
 * IORING_OP_URING_CMD, or a NULL @cq.
 */
int krpc_sqe_set_cq(struct io_uring_sqe *sqe, const struct krpc_cq *cq,
		    uint64_t tag);

/* ---------------------------------------------------------------------- */
/* Blocking layer.  Each call submits one command and waits for its own
 * completion; completions of other commands that arrive meanwhile are
 * consumed and lost, so use it on a struct krpc of its own, or when
 * nothing else is in flight. */

/**
 * krpc_cmd_sync() - submit one command and wait for it
 * @k:		the device
 * @cmd_op:	KRPC_CMD_*
 * @cmd:	the struct krpc_cmd_*
 * @len:	its size
 * @res2:	if not NULL, the second result (KRPC_BUF_NONE when the
 *		command did not complete)
 *
 * A submission the ring refuses (io_uring_enter() fails: -EEXIST from a
 * thread other than a KRPC_RING_DEFER ring's opener, -EBUSY, -EAGAIN)
 * is withdrawn: the command never runs, also not with a later submit.
 *
 * Return: the command's result (>= 0) or -errno.
 */
int krpc_cmd_sync(struct krpc *k, uint32_t cmd_op, const void *cmd,
		  size_t len, uint64_t *res2);

/**
 * krpc_connect() - connect to a server
 * @k:		the device
 * @pool:	pool of the connection
 * @sa:		server address
 * @salen:	its length
 * @depth:	calls in flight on the wire, 0 for the default
 *
 * Return: a connection handle, or -errno.
 */
int krpc_connect(struct krpc *k, const struct krpc_pool *pool,
		 const struct sockaddr *sa, socklen_t salen, uint32_t depth);

/**
 * krpc_connect_xprt() - krpc_connect() over a chosen transport
 * @k:		the device
 * @pool:	pool of the connection
 * @sa:		server address
 * @salen:	its length
 * @depth:	calls in flight on the wire, 0 for the default
 * @transport:	KRPC_TRANSPORT_* (AUTO: RDMA, falling back to TCP);
 *		krpc_connect() passes KRPC_TRANSPORT_DEFAULT
 * @used:	if not NULL, receives the transport the connection uses
 *		(KRPC_TRANSPORT_RDMA or KRPC_TRANSPORT_TCP)
 *
 * Return: a connection handle, or -errno (-EINVAL for an unknown
 * @transport).
 */
int krpc_connect_xprt(struct krpc *k, const struct krpc_pool *pool,
		      const struct sockaddr *sa, socklen_t salen,
		      uint32_t depth, uint32_t transport, uint32_t *used);

/**
 * krpc_connect_flags() - krpc_connect_xprt() with connection flags
 * @k:		the device
 * @pool:	pool of the connection
 * @sa:		server address
 * @salen:	its length
 * @depth:	calls in flight on the wire, 0 for the default
 * @transport:	KRPC_TRANSPORT_*
 * @flags:	KRPC_CONN_F_* (how the connection's RDMA completions are
 *		reaped: KRPC_CONN_F_CQ_POLL, _IRQ, or 0 for the module
 *		parameter's choice)
 * @used:	if not NULL, receives the transport the connection uses
 *
 * Return: a connection handle, or -errno (-EINVAL for unknown or
 * conflicting @flags, else as krpc_connect_xprt()).
 */
int krpc_connect_flags(struct krpc *k, const struct krpc_pool *pool,
		       const struct sockaddr *sa, socklen_t salen,
		       uint32_t depth, uint32_t transport, uint32_t flags,
		       uint32_t *used);

/**
 * struct krpc_reply - where a reply landed
 * @buf:	buffer (now the process's) or KRPC_BUF_NONE
 * @offset:	payload offset in @buf
 * @len:	payload bytes
 * @flags:	KRPC_RES2_F_*
 */
struct krpc_reply {
	uint32_t buf;
	uint32_t offset;
	uint32_t len;
	uint32_t flags;
};

/**
 * krpc_call_sync() - make a call and wait for the reply
 * @k:		the device
 * @conn:	connection handle
 * @method:	method id
 * @buf:	request buffer (the process's) or KRPC_BUF_NONE
 * @len:	request bytes at offset 0 of @buf
 * @reply_max:	largest reply accepted
 * @timeout_ms:	0 for the connection's default
 * @reply:	filled in when a reply (or error reply) arrived
 *
 * @buf is the process's again when this returns, whatever the outcome.
 *
 * Return: the reply length, or -errno (the call's status).
 */
int krpc_call_sync(struct krpc *k, uint32_t conn, uint32_t method,
		   uint32_t buf, uint32_t len, uint32_t reply_max,
		   uint32_t timeout_ms, struct krpc_reply *reply);

#ifdef __cplusplus
}
#endif

#endif /* LIBKRPC_H */
