/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Registered buffer pools: memory allocated and DMA-mapped for one RDMA
 * device once, at pool creation, and recycled.  Nothing on the data path
 * maps or registers memory; the transport builds SGEs from the segment
 * addresses kept here and hands remote access out per call through FRWR.
 *
 * A pool is a refcounted object, not a singleton: the kernel clients of a
 * device share that device's default pool, and any other owner (an open
 * /dev/krpc file, later) can create one of its own.
 */
#ifndef KRPC_POOL_H
#define KRPC_POOL_H

#include <linux/types.h>
#include <linux/list.h>
#include <linux/kref.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/scatterlist.h>

struct ib_device;

#define KRPC_SEG_SHIFT		16	/* segments of large buffers: 64 KiB */
#define KRPC_SEG_SIZE		(1U << KRPC_SEG_SHIFT)
#define KRPC_POOL_NR_CLASS	3

/* One physically contiguous, naturally aligned, DMA-mapped piece. */
struct krpc_seg {
	struct page *page;
	u64 dma;
};

/**
 * struct krpc_buf - one pool buffer
 * @node:	free list entry while free
 * @pool:	owner; a buffer out of the pool holds a pool reference
 * @vaddr:	contiguous kernel view (page_address() or vmap())
 * @size:	capacity in bytes
 * @off:	start of the payload within the buffer
 * @len:	payload bytes
 * @cls:	size class
 * @seg_shift:	log2 of the segment size
 * @nsegs:	number of segments
 * @busy:	out of the pool (catches double puts)
 * @idx:	position in the pool (pool->all_bufs[@idx]), stable
 * @sgl:	one entry per segment, DMA fields filled, for ib_map_mr_sg();
 *		only the owner of the buffer may touch it
 * @segs:	the segments
 */
struct krpc_buf {
	struct list_head node;
	struct krpc_pool *pool;
	void *vaddr;
	u32 size;
	u32 off;
	u32 len;
	u8 cls;
	u8 seg_shift;
	u16 nsegs;
	bool busy;
	u32 idx;
	struct scatterlist *sgl;
	struct krpc_seg segs[];
};

struct krpc_pool_class {
	u32 size;
	u32 count;
	u32 nfree;
	u8 seg_shift;
	u16 nsegs;
	struct list_head free;
};

/**
 * struct krpc_pool_cfg - sizes of a pool (validated by the caller)
 * @small_size:	bytes per small buffer, a power of two <= KRPC_SEG_SIZE;
 *		receive buffers are small buffers
 * @nr_small:	number of small buffers
 * @nr_medium:	number of KRPC_SEG_SIZE buffers (skipped if small_size is
 *		already that large)
 * @large_size:	bytes per large buffer, a multiple of KRPC_SEG_SIZE
 * @nr_large:	number of large buffers (skipped if large_size is not
 *		larger than KRPC_SEG_SIZE)
 * @gfp:	extra allocation flags for the buffer pages, 0 for kernel
 *		pools; a pool mapped into a process (ubuf.c) passes
 *		__GFP_COMP (vm_insert_pages() of high-order pages; every
 *		pool's pages are compound now, for TCP's zero-copy send) and
 *		__GFP_ACCOUNT (memcg)
 */
struct krpc_pool_cfg {
	u32 small_size;
	u32 nr_small;
	u32 nr_medium;
	u32 large_size;
	u32 nr_large;
	gfp_t gfp;
};

struct krpc_pool;

/**
 * struct krpc_pool_owner_ops - hooks of a pool owned by something other
 * than a device (an open /dev/krpc, ubuf.c)
 * @keep:	called first by krpc_buf_put(); return true if the owner takes
 *		the buffer back itself (it stays busy and keeps its pool
 *		reference).  Any context, must not sleep.
 * @release:	called once, in process context, just before the pool's
 *		memory is freed (after every buffer came back)
 */
struct krpc_pool_owner_ops {
	bool (*keep)(struct krpc_buf *buf);
	void (*release)(struct krpc_pool *pool);
};

/**
 * struct krpc_pool - a set of registered buffers
 * @ref:	held by the creator, each user (connection) and each buffer
 *		out of the pool
 * @ibdev:	device the memory is mapped for
 * @lock:	free lists, @dead; innermost lock (taken under conn->lock)
 * @dead:	DMA mappings torn down (device removed); gets fail
 * @wait:	sleeping krpc_buf_get() callers
 * @nr_class:	number of classes in use
 * @cls:	classes, by increasing size
 * @all_bufs:	every buffer (for teardown)
 * @nr_bufs:	entries of @all_bufs
 * @reserve:	small buffers only receive rings may take: kernel clients
 *		holding buffers can never starve the receives that bring the
 *		replies which would free them (a TCP server's one-way
 *		messages may take half of them: krpc_pool_get_oneway())
 * @free_work:	final release, in process context (vunmap may sleep)
 * @gfp:	krpc_pool_cfg.gfp
 * @owner_ops:	optional owner hooks, set before the pool is shared
 * @owner:	the owner's data for @owner_ops
 * @busy_owner:	whose busy polling may reap the polled CQs of connections
 *		on this pool (rdma_poll.c): the /dev/krpc file of a process's
 *		pool, NULL for a kernel pool; set before the pool is shared
 */
struct krpc_pool {
	struct kref ref;
	struct ib_device *ibdev;
	spinlock_t lock;	/* free lists, @dead */
	bool dead;
	wait_queue_head_t wait;
	unsigned int nr_class;
	struct krpc_pool_class cls[KRPC_POOL_NR_CLASS];
	struct krpc_buf **all_bufs;
	unsigned int nr_bufs;
	u32 reserve;
	struct work_struct free_work;
	gfp_t gfp;
	const struct krpc_pool_owner_ops *owner_ops;
	void *owner;
	const void *busy_owner;
};

struct krpc_pool *krpc_pool_create(struct ib_device *ibdev,
				   const struct krpc_pool_cfg *cfg);
void krpc_pool_kill(struct krpc_pool *pool);
void krpc_pool_get(struct krpc_pool *pool);
bool krpc_pool_tryget(struct krpc_pool *pool);
void krpc_pool_put(struct krpc_pool *pool);
u32 krpc_pool_small_size(const struct krpc_pool *pool);
u32 krpc_pool_max_size(const struct krpc_pool *pool);
u32 krpc_pool_max_segs(const struct krpc_pool *pool);
struct krpc_buf *krpc_pool_get_recv(struct krpc_pool *pool);
struct krpc_buf *krpc_pool_get_oneway(struct krpc_pool *pool);
struct krpc_buf *krpc_pool_get_exact(struct krpc_pool *pool, size_t size);
void krpc_buf_sync(struct krpc_buf *buf, u32 off, u32 len, bool for_device);

#endif /* KRPC_POOL_H */
