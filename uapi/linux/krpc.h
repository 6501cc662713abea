/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * krpc userspace ABI: the ioctls and io_uring commands of /dev/krpc.
 *
 * Rules for every structure here: fixed-width types only, __u64 for
 * pointers, explicit padding, reserved fields must be zero (the kernel
 * answers -EINVAL otherwise).  Structures that carry a leading "size" field
 * are extensible: the kernel accepts any size it knows or a larger one whose
 * tail is zero (copy_struct_from_user()), and writes back at most the size
 * the caller gave.  This header compiles alone with -std=c90.
 *
 * Model (Documentation/userspace-api.rst):
 *  - Each open file of /dev/krpc is a context: pools, connections and
 *    servers are named by handles that mean nothing in another file.
 *  - A pool is count buffers of buf_size bytes, allocated, zeroed and
 *    DMA-mapped by the kernel once and mmap()ed by the process (at the
 *    offset the kernel returns: fewer than 2^24 pages, within reach of
 *    a 32-bit process's mmap()).  A buffer is
 *    named by its index.  Every buffer is owned either by the process or by
 *    the kernel; the kernel tracks which, and naming a buffer the process
 *    does not own fails with -EBUSY.  Buffers the kernel owns and does not
 *    use are where requests and replies land.
 *  - Set-up is done with ioctls; everything that waits is an io_uring
 *    IORING_OP_URING_CMD (rings need IORING_SETUP_SQE128 and
 *    IORING_SETUP_CQE32) whose cmd_op is one of KRPC_CMD_* and whose 80-byte
 *    command area holds the matching struct krpc_cmd_*.
 *  - Every completion gives back every buffer its command handed over, on
 *    success and on error, and may hand one more buffer (a reply, a
 *    request) to the process: see KRPC_RES2_*.
 */
#ifndef _UAPI_LINUX_KRPC_H
#define _UAPI_LINUX_KRPC_H

#include <linux/types.h>
#include <linux/ioctl.h>

/* Bumped on incompatible changes only; features are announced by bits. */
#define KRPC_ABI_VERSION	1

/* Name of the misc device node: /dev/krpc. */
#define KRPC_DEVICE_NAME	"krpc"

/* ioctl type byte of /dev/krpc (see Documentation/userspace-api.rst). */
#define KRPC_IOC_MAGIC		0xb7

/*
 * Feature bits reported by KRPC_IOC_GET_INFO.
 * KRPC_FEAT_POOL:	KRPC_IOC_POOL_*, KRPC_IOC_BUF_*, mmap of pools
 * KRPC_FEAT_CLIENT:	KRPC_CMD_CONNECT, _CALL (and one-way), _CANCEL
 * KRPC_FEAT_SERVER:	KRPC_IOC_LISTEN, KRPC_CMD_FETCH, _REPLY,
 *			_REPLY_FETCH
 * KRPC_FEAT_TCP:	the TCP transport: krpc_cmd_connect.transport,
 *			krpc_listen.transport, pools without an RDMA device
 * KRPC_FEAT_CQ:	completion queues: KRPC_IOC_CQ_CREATE, mmap of a queue,
 *			krpc_cmd_call.cq and krpc_cmd_slot.cq, poll()
 * KRPC_FEAT_CQ_POLL:	KRPC_IOC_CQ_POLL: busy polling in the kernel
 * KRPC_FEAT_CQ_WAIT:	KRPC_IOC_CQ_POLL with KRPC_CQ_POLL_SLEEP: sleep until
 *			one queue has entries
 * KRPC_FEAT_POOL_LARGE: pools with large buffers (krpc_pool_create's
 *			@large_size, KRPC_BUF_F_LARGE): payloads above
 *			KRPC_POOL_BUF_MAX
 * KRPC_FEAT_LISTEN_MAX_CONNS: a server's own connection limit
 *			(krpc_listen.max_conns, KRPC_LISTEN_SIZE_VER1)
 */
#define KRPC_FEAT_POOL		(1ULL << 0)
#define KRPC_FEAT_CLIENT	(1ULL << 1)
#define KRPC_FEAT_SERVER	(1ULL << 2)
#define KRPC_FEAT_TCP		(1ULL << 3)
#define KRPC_FEAT_CQ		(1ULL << 4)
#define KRPC_FEAT_CQ_POLL	(1ULL << 5)
#define KRPC_FEAT_CQ_WAIT	(1ULL << 6)
#define KRPC_FEAT_POOL_LARGE	(1ULL << 7)
#define KRPC_FEAT_LISTEN_MAX_CONNS (1ULL << 8)
#define KRPC_FEAT_ALL		(KRPC_FEAT_POOL | KRPC_FEAT_CLIENT | \
				 KRPC_FEAT_SERVER | KRPC_FEAT_TCP | \
				 KRPC_FEAT_CQ | KRPC_FEAT_CQ_POLL | \
				 KRPC_FEAT_CQ_WAIT | KRPC_FEAT_POOL_LARGE | \
				 KRPC_FEAT_LISTEN_MAX_CONNS)

/*
 * Transports (krpc_cmd_connect.transport, krpc_listen.transport), like
 * brpc's use_rdma:
 * KRPC_TRANSPORT_DEFAULT:	the module parameter "transport"
 * KRPC_TRANSPORT_RDMA:		RDMA only
 * KRPC_TRANSPORT_TCP:		TCP only
 * KRPC_TRANSPORT_AUTO:		connect: RDMA, else TCP when the address has
 *				no RDMA device or the RDMA connect is
 *				refused, unreachable or times out; listen:
 *				both, on the same port number
 * Other values are -EINVAL.
 */
#define KRPC_TRANSPORT_DEFAULT	0
#define KRPC_TRANSPORT_RDMA	1
#define KRPC_TRANSPORT_TCP	2
#define KRPC_TRANSPORT_AUTO	3

/*
 * Completion flags (krpc_cmd_connect.flags, krpc_listen.flags: every
 * connection the server accepts): how an RDMA connection's completions
 * are reaped, at most one of them.
 * KRPC_CONN_F_CQ_IRQ:	per completion event (interrupts)
 * KRPC_CONN_F_CQ_POLL:	by krpc's poller threads, which spin the module
 *			parameter poll_usecs after the last completion (50 us
 *			while it is 0); a process in KRPC_IOC_CQ_POLL reaps
 *			the polled CQs of its own connections itself
 * Neither: polled when poll_usecs is non-zero as the connection is made.
 * Over TCP the flags are accepted and have no effect.  Both, or any other
 * bit: -EINVAL.
 */
#define KRPC_CONN_F_CQ_IRQ	(1U << 0)
#define KRPC_CONN_F_CQ_POLL	(1U << 1)
#define KRPC_CONN_F_VALID	(KRPC_CONN_F_CQ_IRQ | KRPC_CONN_F_CQ_POLL)

/**
 * struct krpc_info - answer of KRPC_IOC_GET_INFO
 * @size:	in: sizeof(struct krpc_info) as the caller knows it (at least
 *		KRPC_INFO_SIZE_VER0); out: the number of bytes the kernel wrote
 * @abi_version: KRPC_ABI_VERSION of the running module
 * @features:	KRPC_FEAT_* bits the module supports
 * @nr_devices:	RDMA devices krpc currently sees (ib_client)
 * @reserved:	zero on output
 * @version:	NUL-terminated module version string
 *
 * On input every field but @size must be zero (-EINVAL otherwise).
 */
struct krpc_info {
	__u32 size;
	__u32 abi_version;
	__u64 features;
	__u32 nr_devices;
	__u32 reserved;
	char version[32];
};

#define KRPC_INFO_SIZE_VER0	56

/* ---------------------------------------------------------------------- */
/* Limits */

/* Handles are never 0. */
#define KRPC_HANDLE_NONE	0U
/* Buffer index meaning "no buffer" (24 bits, see KRPC_RES2_BUF). */
#define KRPC_BUF_NONE		0xffffffU
/*
 * Pool buffers: a power of two in [KRPC_POOL_BUF_MIN, KRPC_POOL_BUF_MAX]
 * (one 64 KiB size for now: the transport receives into one contiguous
 * segment and negotiates at least 64 KiB messages).  Large buffers, for
 * payloads above that: a multiple of KRPC_POOL_BUF_MAX, larger than the
 * pool's buffers and at most KRPC_POOL_LARGE_MAX.  At most
 * KRPC_POOL_COUNT_MAX of each.
 */
#define KRPC_POOL_BUF_MIN	65536U
#define KRPC_POOL_BUF_MAX	65536U
#define KRPC_POOL_LARGE_MAX	67108864U
#define KRPC_POOL_COUNT_MAX	65536U
/* Server slots (parallel FETCHes) and methods per server. */
#define KRPC_SLOTS_MAX		4096U
#define KRPC_METHODS_MAX	64U
/* Largest per-call and connect timeout, ms. */
#define KRPC_TIMEOUT_MAX_MS	3600000U
/* Entries of a completion queue, and queues per open file. */
#define KRPC_CQ_ENTRIES_MAX	4096U
#define KRPC_CQS_MAX		64U
/* CALLs in flight on one connection of a process (-EBUSY beyond). */
#define KRPC_CONN_CALLS_MAX	4096U
/* Buffers in one KRPC_CMD_BUF_FREE, and in one KRPC_IOC_BUF_ALLOC/FREE. */
#define KRPC_CMD_BUFS_MAX	16U
#define KRPC_BUF_IOC_MAX	1024U

/* ---------------------------------------------------------------------- */
/* Set-up ioctls */

/**
 * struct krpc_pool_create - KRPC_IOC_POOL_CREATE
 * @size:	sizeof(struct krpc_pool_create) as the caller knows it
 * @flags:	must be 0
 * @buf_size:	bytes per buffer, a power of two within
 *		[KRPC_POOL_BUF_MIN, KRPC_POOL_BUF_MAX]; also the largest
 *		payload a connection of the pool carries
 * @count:	buffers, 1..KRPC_POOL_COUNT_MAX.  Every connection keeps
 *		depth + 4 of them posted for receives.
 * @device:	NUL-terminated RDMA device name the pool is mapped for
 *		(RDMA connections of the pool must use it), or "" for the
 *		first device krpc sees or, when it sees none, plain host
 *		memory (TCP connections only).  TCP connections can use any
 *		pool.
 * @handle:	out: the pool's handle (0 on input, as every out field)
 * @reserved:	must be 0
 * @mmap_offset: out: offset to mmap() the pool at (MAP_SHARED, exactly
 *		@mmap_length bytes); buffer i is at byte i * buf_size
 * @mmap_length: out: count * buf_size + large_count * large_size
 * @large_size:	bytes per large buffer (KRPC_FEAT_POOL_LARGE): 0 for none,
 *		else a multiple of KRPC_POOL_BUF_MAX above @buf_size, at most
 *		KRPC_POOL_LARGE_MAX.  The largest payload a connection of
 *		the pool carries is then @large_size (and at most the
 *		module's max_msg, negotiated with the peer).
 * @large_count: large buffers, 1..KRPC_POOL_COUNT_MAX, or 0 with
 *		@large_size 0.  Large buffer j has index count + j and is at
 *		byte count * buf_size + j * large_size of the mapping.
 *		Messages above @buf_size arrive in them (RDMA READ targets,
 *		replies above the inline size): each call or request that
 *		big needs a free one.
 *
 * The memory is charged to the caller's memory cgroup and, unless the
 * opener has CAP_IPC_LOCK, to RLIMIT_MEMLOCK.  All buffers start owned by
 * the kernel; take some with KRPC_IOC_BUF_ALLOC.  A caller that knows only
 * KRPC_POOL_CREATE_SIZE_VER0 gets a pool without large buffers.
 */
struct krpc_pool_create {
	__u32 size;
	__u32 flags;
	__u32 buf_size;
	__u32 count;
	char device[32];
	__u32 handle;
	__u32 reserved;
	__u64 mmap_offset;
	__u64 mmap_length;
	__u32 large_size;
	__u32 large_count;
};

#define KRPC_POOL_CREATE_SIZE_VER0	72
#define KRPC_POOL_CREATE_SIZE_VER1	80	/* + large_size, large_count */

/**
 * struct krpc_handle_arg - KRPC_IOC_POOL_DESTROY, KRPC_IOC_CLOSE
 * @size:	sizeof(struct krpc_handle_arg) as the caller knows it
 * @handle:	pool (POOL_DESTROY), or connection, server or completion queue
 *		(CLOSE)
 * @flags:	must be 0
 * @reserved:	must be 0
 *
 * POOL_DESTROY fails with -EBUSY while a connection or server uses the
 * pool; the buffers the process owns go back with it, and the mapping stays
 * valid memory until munmap().  CLOSE of a connection fails its calls with
 * -ESHUTDOWN; CLOSE of a server fails its pending FETCHes with -ESHUTDOWN
 * and answers the requests it holds with -ESHUTDOWN.
 */
struct krpc_handle_arg {
	__u32 size;
	__u32 handle;
	__u32 flags;
	__u32 reserved;
};

#define KRPC_HANDLE_ARG_SIZE_VER0	16

/**
 * struct krpc_buf_arg - KRPC_IOC_BUF_ALLOC, KRPC_IOC_BUF_FREE
 * @size:	sizeof(struct krpc_buf_arg) as the caller knows it
 * @pool:	pool handle
 * @count:	in: entries of @bufs, 1..KRPC_BUF_IOC_MAX; out (ALLOC):
 *		entries filled
 * @flags:	ALLOC: 0 or KRPC_BUF_F_LARGE (the pool's large buffers,
 *		-EINVAL if it has none); FREE: must be 0
 * @bufs:	pointer to a __u32 array of buffer indexes
 *
 * ALLOC takes up to @count buffers the kernel does not use and returns how
 * many (at least one, else -ENOBUFS; a pool keeps an eighth of its buffers
 * for receives).  It hands out only the class asked for.  FREE gives buffers back and returns 0; it fails with
 * -EBUSY, changing nothing, if one of them is not owned by the process (or
 * is named twice), and with -EINVAL for an index out of range.
 */
struct krpc_buf_arg {
	__u32 size;
	__u32 pool;
	__u32 count;
	__u32 flags;
	__u64 bufs;
};

#define KRPC_BUF_ARG_SIZE_VER0		24

/* krpc_buf_arg.flags */
#define KRPC_BUF_F_LARGE	(1U << 0)

/**
 * struct krpc_addr - an IPv4 or IPv6 address and port
 * @family:	AF_INET (2) or AF_INET6 (10)
 * @port:	port, network byte order
 * @scope_id:	IPv6 scope id, else 0
 * @addr:	IPv4: the first 4 bytes (rest 0); IPv6: 16 bytes
 */
struct krpc_addr {
	__u16 family;
	__u16 port;
	__u32 scope_id;
	__u8 addr[16];
};

/**
 * struct krpc_listen - KRPC_IOC_LISTEN: create a server
 * @size:	sizeof(struct krpc_listen) as the caller knows it
 * @flags:	KRPC_CONN_F_* for every accepted connection
 * @pool:	pool every accepted connection uses
 * @depth:	largest depth granted to a client; 0: module default
 * @nr_slots:	FETCH slots, 1..KRPC_SLOTS_MAX
 * @nr_methods:	entries of @methods, 1..KRPC_METHODS_MAX
 * @addr:	local address (may be the wildcard) and port; ports below
 *		1024 need CAP_NET_BIND_SERVICE in the opener's namespace
 * @methods:	pointer to a __u32 array of method ids the server answers
 *		(requests for others fail at the client with -EBADRQC)
 * @handle:	out: the server's handle
 * @transport:	KRPC_TRANSPORT_* (AUTO: RDMA and TCP at once)
 * @desc_offset: out: mmap() offset (read-only, MAP_SHARED) of the array
 *		of nr_slots struct krpc_req_desc
 * @desc_length: out: its length in bytes (a multiple of the page size)
 * @max_conns:	connections the server keeps at a time, 1..65536; one
 *		more is refused (the client's connect fails with -ENOBUFS);
 *		0: the module parameter "max_conns", read at each accept
 *		(KRPC_LISTEN_SIZE_VER1, KRPC_FEAT_LISTEN_MAX_CONNS)
 * @reserved:	0
 *
 * KRPC_LISTEN_SIZE_VER0 gets a server under the module's max_conns.
 */
struct krpc_listen {
	__u32 size;
	__u32 flags;
	__u32 pool;
	__u32 depth;
	__u32 nr_slots;
	__u32 nr_methods;
	struct krpc_addr addr;
	__u64 methods;
	__u32 handle;
	__u32 transport;
	__u64 desc_offset;
	__u64 desc_length;
	__u32 max_conns;
	__u32 reserved;
};

#define KRPC_LISTEN_SIZE_VER0		80
#define KRPC_LISTEN_SIZE_VER1		88	/* + max_conns, reserved */

/**
 * struct krpc_req_desc - the request a slot holds, written by the kernel
 * before the completion of the FETCH (or REPLY_FETCH) of that slot
 * @method:	method id
 * @len:	payload bytes
 * @buf:	buffer holding the payload (now owned by the process) or
 *		KRPC_BUF_NONE
 * @offset:	payload offset in @buf
 * @flags:	KRPC_REQ_F_*
 * @reserved:	0
 * @seq:	requests delivered by the server so far, this one included
 */
struct krpc_req_desc {
	__u32 method;
	__u32 len;
	__u32 buf;
	__u32 offset;
	__u32 flags;
	__u32 reserved;
	__u64 seq;
};

/* The client expects no reply (a REPLY is still needed to free the slot). */
#define KRPC_REQ_F_ONEWAY	(1U << 0)

/**
 * struct krpc_cq_create - KRPC_IOC_CQ_CREATE: a completion queue
 * @size:	sizeof(struct krpc_cq_create) as the caller knows it
 * @flags:	must be 0
 * @entries:	a power of two, 1..KRPC_CQ_ENTRIES_MAX
 * @handle:	out: the queue's handle (must be 0 on input)
 * @mmap_offset: out: offset to mmap() the queue at (read-write,
 *		MAP_SHARED, exactly @mmap_length bytes)
 * @mmap_length: out: KRPC_CQ_CQES_OFFSET + entries * sizeof(struct
 *		krpc_cqe), rounded up to the page size
 *
 * A completion queue is the io_uring CQ's shortcut for the data path: a
 * CALL, FETCH, REPLY or REPLY_FETCH that names a queue in its cq field has
 * its result written into the queue straight from the context that decides
 * it (the RDMA completion handler, mostly), with no task work and no
 * system call; a process that spins on the queue's tail sees it at once.
 * Its io_uring completion only says whether the queue took the command
 * (see krpc_cmd_call.cq).  Close it with KRPC_IOC_CLOSE: commands already
 * on it still post into the mapping.  poll() on /dev/krpc reports EPOLLIN
 * while any queue of the file holds entries; to wait for one queue (a
 * thread's own, say), use KRPC_IOC_CQ_POLL with KRPC_CQ_POLL_SLEEP.
 */
struct krpc_cq_create {
	__u32 size;
	__u32 flags;
	__u32 entries;
	__u32 handle;
	__u64 mmap_offset;
	__u64 mmap_length;
};

#define KRPC_CQ_CREATE_SIZE_VER0	32

/* Longest spin of one KRPC_IOC_CQ_POLL (without KRPC_CQ_POLL_SLEEP). */
#define KRPC_CQ_POLL_USECS_MAX	100000U

/* krpc_cq_poll.flags: sleep instead of spinning (KRPC_FEAT_CQ_WAIT). */
#define KRPC_CQ_POLL_SLEEP	(1U << 0)
#define KRPC_CQ_POLL_FLAGS	KRPC_CQ_POLL_SLEEP

/**
 * struct krpc_cq_poll - KRPC_IOC_CQ_POLL: wait for a queue's entries
 * @size:	sizeof(struct krpc_cq_poll) as the caller knows it
 * @flags:	0 (spin) or KRPC_CQ_POLL_SLEEP
 * @handle:	a completion queue of this file
 * @usecs:	longest wait in microseconds: 1..KRPC_CQ_POLL_USECS_MAX for
 *		a spin; any value with KRPC_CQ_POLL_SLEEP, 0 for no limit
 *
 * Spins in the kernel until the queue holds an unconsumed entry, reaping
 * the completions of polled connections (module parameter poll_usecs) in
 * the caller's context meanwhile, as a socket's busy polling runs NAPI:
 * the receive completion that decides a call is handled the moment the
 * device posts it, on the caller's CPU, instead of after the interrupt
 * or a poller thread gets a CPU.  While processes busy-poll, poller
 * threads stop spinning and leave their CQs unarmed, looking once a tick
 * (see Documentation/userspace-api.rst).
 *
 * With KRPC_CQ_POLL_SLEEP the caller sleeps instead, until this queue
 * (not any queue of the file, as poll() on /dev/krpc) gets an entry: the
 * way for threads that each own a queue to wait on their own.
 *
 * Return: the queue's unconsumed entries (at most its size); 0 when
 * @usecs passed without one; -EINTR when a signal is pending; -EBADF
 * (also when the queue is closed, empty, while the caller waits),
 * -EINVAL.
 */
struct krpc_cq_poll {
	__u32 size;
	__u32 flags;
	__u32 handle;
	__u32 usecs;
};

#define KRPC_CQ_POLL_SIZE_VER0		16

/*
 * Layout of a mapped completion queue: the ring header at offset 0, the
 * entries from KRPC_CQ_CQES_OFFSET.  The kernel writes entry
 * (tail & mask), then advances tail (store-release); the process reads
 * tail (load-acquire), consumes entries up to it, then advances head
 * (store-release).  Both counters wrap at 2^32.  The kernel never reads
 * the entries, tail or mask back: it keeps its own copies and reads only
 * head, so a process that scribbles on its mapping corrupts only its own
 * view.
 */
#define KRPC_CQ_HEAD_OFFSET	0	/* __u32, written by the process */
#define KRPC_CQ_TAIL_OFFSET	64	/* __u32, written by the kernel */
#define KRPC_CQ_MASK_OFFSET	68	/* __u32, entries - 1 */
#define KRPC_CQ_CQES_OFFSET	128

/**
 * struct krpc_cqe - one entry of a completion queue
 * @tag:	the command's tag (krpc_cmd_call.tag, krpc_cmd_slot.tag)
 * @res2:	second result (KRPC_RES2_*), as the io_uring CQE's big_cqe[0]
 * @res:	result, as the io_uring CQE's res
 * @cmd_op:	the command (KRPC_CMD_*)
 * @reserved:	0
 */
struct krpc_cqe {
	__u64 tag;
	__u64 res2;
	__s32 res;
	__u32 cmd_op;
	__u64 reserved;
};

/*
 * The structures carry their own @size, so a structure that grows keeps its
 * ioctl number: the number encodes the first version's size.
 */
#define KRPC_IOC_RW(nr, size)	_IOC(_IOC_READ | _IOC_WRITE, KRPC_IOC_MAGIC, \
				     nr, size)
#define KRPC_IOC_W(nr, size)	_IOC(_IOC_WRITE, KRPC_IOC_MAGIC, nr, size)
#define KRPC_IOC_GET_INFO	KRPC_IOC_RW(0x00, KRPC_INFO_SIZE_VER0)
#define KRPC_IOC_POOL_CREATE	KRPC_IOC_RW(0x01, KRPC_POOL_CREATE_SIZE_VER0)
#define KRPC_IOC_POOL_DESTROY	KRPC_IOC_W(0x02, KRPC_HANDLE_ARG_SIZE_VER0)
#define KRPC_IOC_BUF_ALLOC	KRPC_IOC_RW(0x03, KRPC_BUF_ARG_SIZE_VER0)
#define KRPC_IOC_BUF_FREE	KRPC_IOC_W(0x04, KRPC_BUF_ARG_SIZE_VER0)
#define KRPC_IOC_LISTEN		KRPC_IOC_RW(0x05, KRPC_LISTEN_SIZE_VER0)
#define KRPC_IOC_CLOSE		KRPC_IOC_W(0x06, KRPC_HANDLE_ARG_SIZE_VER0)
#define KRPC_IOC_CQ_CREATE	KRPC_IOC_RW(0x07, KRPC_CQ_CREATE_SIZE_VER0)
#define KRPC_IOC_CQ_POLL	KRPC_IOC_W(0x08, KRPC_CQ_POLL_SIZE_VER0)

/* ---------------------------------------------------------------------- */
/* io_uring commands (IORING_OP_URING_CMD, SQE128 + CQE32 rings only) */

/**
 * struct krpc_cmd_connect - KRPC_CMD_CONNECT
 * @pool:	pool of the connection (receives, payloads)
 * @flags:	KRPC_CONN_F_*
 * @depth:	calls in flight on the wire (more wait in a queue); 0: module
 *		default
 * @connect_timeout_ms: 0: module default
 * @call_timeout_ms: default timeout of the connection's calls; 0: module
 *		default
 * @reserved0:	must be 0
 * @addr:	server address
 * @transport:	KRPC_TRANSPORT_*
 * @reserved1:	must be 0
 * @reserved:	must be 0
 *
 * Completion: res = connection handle, or -errno; res2 = the transport the
 * connection uses (KRPC_TRANSPORT_RDMA or KRPC_TRANSPORT_TCP).
 */
struct krpc_cmd_connect {
	__u32 pool;
	__u32 flags;
	__u32 depth;
	__u32 connect_timeout_ms;
	__u32 call_timeout_ms;
	__u32 reserved0;
	struct krpc_addr addr;
	__u32 transport;
	__u32 reserved1;
	__u64 reserved;
};

/**
 * struct krpc_cmd_call - KRPC_CMD_CALL: one call, or a one-way message
 * @conn:	connection handle
 * @method:	method id (below 0xffff0000)
 * @buf:	request buffer (owned by the process; the kernel owns it until
 *		this command's completion) or KRPC_BUF_NONE with @len 0
 * @offset:	payload offset in @buf
 * @len:	payload bytes
 * @flags:	KRPC_CALL_F_*
 * @timeout_ms:	0: the connection's default; at most KRPC_TIMEOUT_MAX_MS.
 *		Enforced by the kernel: the call completes with -ETIMEDOUT.
 * @reply_max:	largest reply accepted; at most the pool's buf_size
 * @tag:	any value; KRPC_CMD_CANCEL finds the call by it, and a
 *		completion queue entry carries it
 * @cq:		0, or a completion queue of this file (KRPC_IOC_CQ_CREATE)
 *		that receives the result as a struct krpc_cqe
 * @reserved0:	must be 0
 * @reserved:	must be 0
 *
 * Completion: res = reply length or -errno (KRPC_RES2_F_REMOTE: the status
 * came from the server); res2: the reply buffer, now owned by the process,
 * and the reply's offset in it (KRPC_RES2_*).  @buf is owned by the process
 * again, whatever the outcome.
 *
 * With @cq, that result (even an immediate error such as -EINVAL) goes to
 * the queue, and the io_uring completion is 0 at once (submit with
 * IOSQE_CQE_SKIP_SUCCESS to have none), unless the queue did not take the
 * command: -EBADF (no such queue) or -EBUSY (the queue's unconsumed
 * entries plus the commands in flight on it reach its size), and then the
 * command did nothing.  Commands on a queue are not tied to the ring or
 * task that submitted them: a dying task does not cancel them; closing
 * their connection or server, or the file, completes them.
 */
struct krpc_cmd_call {
	__u32 conn;
	__u32 method;
	__u32 buf;
	__u32 offset;
	__u32 len;
	__u32 flags;
	__u32 timeout_ms;
	__u32 reply_max;
	__u64 tag;
	__u32 cq;
	__u32 reserved0;
	__u64 reserved;
};

/* No reply: completes (res 0) once the message is sent. */
#define KRPC_CALL_F_ONEWAY	(1U << 0)
#define KRPC_CALL_F_ALL		KRPC_CALL_F_ONEWAY

/**
 * struct krpc_cmd_cancel - KRPC_CMD_CANCEL
 * @conn:	connection handle
 * @flags:	must be 0
 * @tag:	krpc_cmd_call.tag of the calls to cancel
 * @reserved:	must be 0
 *
 * Completion: res = number of calls cancelled (they complete with
 * -ECANCELED), or -ENOENT if no call in flight has @tag.
 */
struct krpc_cmd_cancel {
	__u32 conn;
	__u32 flags;
	__u64 tag;
	__u64 reserved[2];
};

/**
 * struct krpc_cmd_slot - KRPC_CMD_FETCH, KRPC_CMD_REPLY, KRPC_CMD_REPLY_FETCH
 * @server:	server handle
 * @slot:	slot, below krpc_listen.nr_slots
 * @buf:	REPLY*: reply buffer or KRPC_BUF_NONE; FETCH: KRPC_BUF_NONE
 * @offset:	REPLY*: payload offset in @buf; FETCH: 0
 * @len:	REPLY*: payload bytes; FETCH: 0
 * @status:	REPLY*: 0, or a -errno (-4095..-1) the caller receives;
 *		FETCH: 0
 * @flags:	must be 0
 * @cq:		0, or a completion queue of this file, as krpc_cmd_call.cq
 * @tag:	any value; with @cq, the tag of the queue entry
 * @reserved:	must be 0
 *
 * FETCH waits on an idle slot for a request.  Completion: res = request
 * length or -errno; res2: the request's buffer (now the process's) and
 * offset; the slot's struct krpc_req_desc describes the request.  The slot
 * then holds the request until REPLY (completes, res 0, once the reply
 * buffer is back) or REPLY_FETCH (answers and waits for the next request on
 * the slot; its completion is that of a FETCH, delayed until the reply
 * buffer is back).
 */
struct krpc_cmd_slot {
	__u32 server;
	__u32 slot;
	__u32 buf;
	__u32 offset;
	__u32 len;
	__s32 status;
	__u32 flags;
	__u32 cq;
	__u64 tag;
	__u64 reserved;
};

/**
 * struct krpc_cmd_bufs - KRPC_CMD_BUF_ALLOC, KRPC_CMD_BUF_FREE
 * @pool:	pool handle
 * @count:	ALLOC: 1; FREE: entries of @bufs, 1..KRPC_CMD_BUFS_MAX
 * @flags:	ALLOC: 0 or KRPC_BUF_F_LARGE (-EINVAL if the pool has no
 *		large buffers); FREE: must be 0
 * @reserved0:	must be 0
 * @bufs:	FREE: buffer indexes; ALLOC: must be 0; unused entries 0
 *
 * Completion: ALLOC: res = buffer index (now the process's) or -ENOBUFS;
 * FREE: res = count, or -EBUSY / -EINVAL with nothing freed.
 */
struct krpc_cmd_bufs {
	__u32 pool;
	__u32 count;
	__u32 flags;
	__u32 reserved0;
	__u32 bufs[16];
};

/*
 * Command numbers encode each command's size in this first version, as
 * the ioctls do: a command that grows (within the 80-byte area, its new
 * fields zero from older callers) keeps its number.  The area past a
 * command's structure must be zero (-EINVAL otherwise).
 */
#define KRPC_CMD_CONNECT	KRPC_IOC_RW(0x40, 64)	/* krpc_cmd_connect */
#define KRPC_CMD_CALL		KRPC_IOC_RW(0x41, 56)	/* krpc_cmd_call */
#define KRPC_CMD_CANCEL		KRPC_IOC_RW(0x42, 32)	/* krpc_cmd_cancel */
#define KRPC_CMD_FETCH		KRPC_IOC_RW(0x43, 48)	/* krpc_cmd_slot */
#define KRPC_CMD_REPLY		KRPC_IOC_RW(0x44, 48)	/* krpc_cmd_slot */
#define KRPC_CMD_REPLY_FETCH	KRPC_IOC_RW(0x45, 48)	/* krpc_cmd_slot */
#define KRPC_CMD_BUF_ALLOC	KRPC_IOC_RW(0x46, 80)	/* krpc_cmd_bufs */
#define KRPC_CMD_BUF_FREE	KRPC_IOC_RW(0x47, 80)	/* krpc_cmd_bufs */

/*
 * The second result of a completion (big_cqe[0] of the 32-byte CQE):
 * bits 0..23 a buffer handed to the process (KRPC_BUF_NONE if none),
 * bits 24..31 KRPC_RES2_F_* flags, bits 32..63 the payload offset in
 * that buffer.  A failed command (res < 0) hands a buffer only with
 * KRPC_RES2_F_REMOTE set: io_uring completes some failures itself (a
 * broken link, a command refused before krpc saw it) with res2 0, which
 * then names no buffer.
 */
#define KRPC_RES2_BUF(r)	((__u32)((r) & 0xffffffU))
#define KRPC_RES2_FLAGS(r)	((__u32)(((r) >> 24) & 0xffU))
#define KRPC_RES2_OFFSET(r)	((__u32)((__u64)(r) >> 32))

/* CALL: the (error) status was set by the server's handler. */
#define KRPC_RES2_F_REMOTE	(1U << 0)
/* FETCH: one-way request. */
#define KRPC_RES2_F_ONEWAY	(1U << 1)

#endif /* _UAPI_LINUX_KRPC_H */
