// SPDX-License-Identifier: GPL-2.0
/*
 * Registered buffer pools (see pool.h).
 *
 * Every buffer is a list of segments, each one compound high-order page
 * allocation (naturally aligned, so an FRWR page size equal to the segment
 * size covers it exactly), DMA-mapped once when the pool is created.  Buffers made of
 * more than one segment also get a vmap() so that the kernel sees one
 * contiguous payload.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/vmalloc.h>
#include <linux/sched/signal.h>
#include <rdma/ib_verbs.h>

#include "krpc_priv.h"
#include "krpc.h"
#include "pool.h"
#include "inject.h"

static void buf_free(struct krpc_pool *pool, struct krpc_buf *buf)
{
	unsigned int i;

	if (buf->nsegs > 1 && buf->vaddr)
		vunmap(buf->vaddr);
	for (i = 0; i < buf->nsegs; i++) {
		if (!buf->segs[i].page)
			continue;
		__free_pages(buf->segs[i].page, buf->seg_shift - PAGE_SHIFT);
	}
	kfree(buf->sgl);
	kfree(buf);
}

static void buf_unmap(struct krpc_pool *pool, struct krpc_buf *buf)
{
	unsigned int i;

	for (i = 0; i < buf->nsegs; i++) {
		if (!buf->segs[i].dma)
			continue;
		ib_dma_unmap_page(pool->ibdev, buf->segs[i].dma,
				  1UL << buf->seg_shift, DMA_BIDIRECTIONAL);
		buf->segs[i].dma = 0;
		atomic64_dec(&krpc_stats.dma_mapped);
	}
}

static int buf_vmap(struct krpc_buf *buf)
{
	unsigned int per_seg = 1U << (buf->seg_shift - PAGE_SHIFT);
	unsigned int n = buf->nsegs * per_seg, i, j;
	struct page **pages;

	pages = kvmalloc_array(n, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return -ENOMEM;
	for (i = 0; i < buf->nsegs; i++)
		for (j = 0; j < per_seg; j++)
			pages[i * per_seg + j] = buf->segs[i].page + j;
	buf->vaddr = vmap(pages, n, VM_MAP, PAGE_KERNEL);
	kvfree(pages);
	return buf->vaddr ? 0 : -ENOMEM;
}

/* A fault-injection point (inject.h): fails a pool half-way through. */
static KRPC_FAULT_POINT struct krpc_buf *
krpc_pool_buf_alloc(struct krpc_pool *pool, unsigned int cls)
{
	struct krpc_pool_class *c = &pool->cls[cls];
	unsigned int order = c->seg_shift - PAGE_SHIFT, i;
	/* A process's pool (pool->gfp has __GFP_ACCOUNT) is all charged. */
	gfp_t meta_gfp = GFP_KERNEL | (pool->gfp & __GFP_ACCOUNT);
	struct krpc_buf *buf;

	buf = kzalloc(struct_size(buf, segs, c->nsegs), meta_gfp);
	if (!buf)
		return NULL;
	buf->pool = pool;
	buf->size = c->size;
	buf->cls = cls;
	buf->seg_shift = c->seg_shift;
	buf->nsegs = c->nsegs;
	buf->sgl = kcalloc(c->nsegs, sizeof(*buf->sgl), meta_gfp);
	if (!buf->sgl)
		goto out_free;
	sg_init_table(buf->sgl, c->nsegs);

	for (i = 0; i < c->nsegs; i++) {
		struct page *page;
		u64 dma;

		/*
		 * Zeroed: a buffer never shows a peer what the kernel had.
		 * Compound: every page has a usable refcount, so the TCP
		 * transport can hand them to the socket by reference.
		 */
		page = alloc_pages(GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN |
				   __GFP_COMP | pool->gfp, order);
		if (!page)
			goto out_free;
		buf->segs[i].page = page;
		sg_set_page(&buf->sgl[i], page, 1U << c->seg_shift, 0);
		if (!pool->ibdev)
			continue;	/* host memory: TCP only */
		dma = ib_dma_map_page(pool->ibdev, page, 0, 1UL << c->seg_shift,
				      DMA_BIDIRECTIONAL);
		if (ib_dma_mapping_error(pool->ibdev, dma))
			goto out_free;
		buf->segs[i].dma = dma;
		atomic64_inc(&krpc_stats.dma_mapped);
		sg_dma_address(&buf->sgl[i]) = dma;
		sg_dma_len(&buf->sgl[i]) = 1U << c->seg_shift;
	}
	if (c->nsegs == 1)
		buf->vaddr = page_address(buf->segs[0].page);
	else if (buf_vmap(buf))
		goto out_free;
	return buf;

out_free:
	buf_unmap(pool, buf);
	buf_free(pool, buf);
	return NULL;
}
ALLOW_ERROR_INJECTION(krpc_pool_buf_alloc, NULL);

static void pool_add_class(struct krpc_pool *pool, u32 size, u32 count)
{
	struct krpc_pool_class *c = &pool->cls[pool->nr_class++];
	u32 seg = min_t(u32, size, KRPC_SEG_SIZE);

	c->size = size;
	c->count = count;
	c->seg_shift = ilog2(max_t(u32, seg, PAGE_SIZE));
	c->nsegs = DIV_ROUND_UP(size, 1U << c->seg_shift);
	INIT_LIST_HEAD(&c->free);
}

static void pool_free_work(struct work_struct *work)
{
	struct krpc_pool *pool = container_of(work, struct krpc_pool, free_work);
	unsigned int i;

	for (i = 0; i < pool->nr_bufs; i++) {
		/* A no-op for a killed pool: it is unmapped already. */
		buf_unmap(pool, pool->all_bufs[i]);
		buf_free(pool, pool->all_bufs[i]);
	}
	kvfree(pool->all_bufs);
	if (pool->owner_ops)
		pool->owner_ops->release(pool);
	kfree(pool);
	atomic64_dec(&krpc_stats.pools);
}

static void pool_release(struct kref *ref)
{
	struct krpc_pool *pool = container_of(ref, struct krpc_pool, ref);

	/* The last put can come from softirq; vunmap() may not. */
	INIT_WORK(&pool->free_work, pool_free_work);
	queue_work(krpc_wq, &pool->free_work);
}

void krpc_pool_get(struct krpc_pool *pool)
{
	kref_get(&pool->ref);
}

/* A reference, unless the last one is gone already (release queued). */
bool krpc_pool_tryget(struct krpc_pool *pool)
{
	return kref_get_unless_zero(&pool->ref);
}

void krpc_pool_put(struct krpc_pool *pool)
{
	kref_put(&pool->ref, pool_release);
}

/**
 * krpc_pool_create() - allocate and DMA-map a pool for a device
 * @ibdev:	device the buffers are mapped for, or NULL for a pool of
 *		plain host memory (TCP connections only)
 * @cfg:	sizes, already validated (params.c)
 *
 * Context: process context, may sleep for a long time (the whole pool is
 * allocated and mapped here, once).
 * Return: the pool with one reference, or an ERR_PTR.
 */
struct krpc_pool *krpc_pool_create(struct ib_device *ibdev,
				   const struct krpc_pool_cfg *cfg)
{
	struct krpc_pool *pool;
	unsigned int c, i, total = 0;

	pool = kzalloc(sizeof(*pool), GFP_KERNEL);
	if (!pool)
		return ERR_PTR(-ENOMEM);
	kref_init(&pool->ref);
	spin_lock_init(&pool->lock);
	init_waitqueue_head(&pool->wait);
	pool->ibdev = ibdev;
	pool->gfp = cfg->gfp;

	pool_add_class(pool, cfg->small_size, cfg->nr_small);
	pool->reserve = cfg->nr_small / 8;
	if (cfg->small_size < KRPC_SEG_SIZE && cfg->nr_medium)
		pool_add_class(pool, KRPC_SEG_SIZE, cfg->nr_medium);
	if (cfg->large_size > KRPC_SEG_SIZE && cfg->nr_large)
		pool_add_class(pool, cfg->large_size, cfg->nr_large);
	for (c = 0; c < pool->nr_class; c++)
		total += pool->cls[c].count;

	pool->all_bufs = kvcalloc(total, sizeof(*pool->all_bufs), GFP_KERNEL);
	if (!pool->all_bufs)
		goto out_free_pool;

	for (c = 0; c < pool->nr_class; c++) {
		struct krpc_pool_class *cl = &pool->cls[c];

		for (i = 0; i < cl->count; i++) {
			struct krpc_buf *buf = krpc_pool_buf_alloc(pool, c);

			if (!buf)
				goto out_free_bufs;
			buf->idx = pool->nr_bufs;
			pool->all_bufs[pool->nr_bufs++] = buf;
			list_add_tail(&buf->node, &cl->free);
			cl->nfree++;
		}
		cond_resched();
	}
	atomic64_inc(&krpc_stats.pools);
	/* Processes create pools too (/dev/krpc): rate-limited. */
	pr_info_ratelimited("pool for %s: %u x %u B, %u x %u B, %u x %u B\n",
			    ibdev ? dev_name(&ibdev->dev) : "TCP",
			    pool->cls[0].count, pool->cls[0].size,
			    pool->nr_class > 1 ? pool->cls[1].count : 0,
			    pool->nr_class > 1 ? pool->cls[1].size : 0,
			    pool->nr_class > 2 ? pool->cls[2].count : 0,
			    pool->nr_class > 2 ? pool->cls[2].size : 0);
	return pool;

out_free_bufs:
	for (i = 0; i < pool->nr_bufs; i++) {
		buf_unmap(pool, pool->all_bufs[i]);
		buf_free(pool, pool->all_bufs[i]);
	}
	kvfree(pool->all_bufs);
out_free_pool:
	kfree(pool);
	pr_err_ratelimited("cannot allocate the buffer pool for %s\n",
			   ibdev ? dev_name(&ibdev->dev) : "TCP");
	return ERR_PTR(-ENOMEM);
}
ALLOW_ERROR_INJECTION(krpc_pool_create, ERRNO);

/**
 * krpc_pool_kill() - tear down the DMA mappings before the device goes
 * @pool:	the pool
 *
 * The hardware no longer touches any buffer (every queue pair on the device
 * is destroyed), but kernel clients may still hold buffers: those stay valid
 * memory until they are put; only new gets fail.
 *
 * Context: process context.
 */
void krpc_pool_kill(struct krpc_pool *pool)
{
	unsigned int i;

	spin_lock_bh(&pool->lock);
	WRITE_ONCE(pool->dead, true);
	spin_unlock_bh(&pool->lock);
	wake_up_all(&pool->wait);
	for (i = 0; i < pool->nr_bufs; i++)
		buf_unmap(pool, pool->all_bufs[i]);
}

u32 krpc_pool_small_size(const struct krpc_pool *pool)
{
	return pool->cls[0].size;
}

u32 krpc_pool_max_size(const struct krpc_pool *pool)
{
	return pool->cls[pool->nr_class - 1].size;
}

u32 krpc_pool_max_segs(const struct krpc_pool *pool)
{
	unsigned int c, n = 1;

	for (c = 0; c < pool->nr_class; c++)
		n = max_t(unsigned int, n, pool->cls[c].nsegs);
	return n;
}

/*
 * The first free buffer of the smallest class of at least @len bytes
 * (of exactly @len bytes if @exact), else of a bigger class; the small
 * class serves only while it has more than @floor free (pool->reserve
 * for anyone, less for receives).
 */
static struct krpc_buf *pool_take(struct krpc_pool *pool, size_t len,
				  u32 floor, bool exact, int *err)
{
	struct krpc_buf *buf = NULL;
	unsigned int c;

	spin_lock_bh(&pool->lock);
	if (pool->dead) {
		*err = -ENODEV;
		goto out;
	}
	*err = -EMSGSIZE;
	for (c = 0; c < pool->nr_class; c++) {
		struct krpc_pool_class *cl = &pool->cls[c];

		if (cl->size < len || (exact && cl->size != len))
			continue;
		*err = -ENOBUFS;
		/* A bigger class serves when the fitting one is empty. */
		if (!cl->nfree || (!c && cl->nfree <= floor))
			continue;
		buf = list_first_entry(&cl->free, struct krpc_buf, node);
		list_del(&buf->node);
		WRITE_ONCE(cl->nfree, cl->nfree - 1);
		buf->busy = true;
		buf->off = 0;
		buf->len = 0;
		break;
	}
out:
	spin_unlock_bh(&pool->lock);
	return buf;
}

/* Lockless hint for sleepers: pool_take() decides under the lock. */
static bool pool_may_serve(struct krpc_pool *pool, size_t len)
{
	unsigned int c;

	if (READ_ONCE(pool->dead))
		return true;
	for (c = 0; c < pool->nr_class; c++)
		if (pool->cls[c].size >= len &&
		    READ_ONCE(pool->cls[c].nfree) > (c ? 0 : pool->reserve))
			return true;
	return false;
}

/* A small buffer (else a bigger one), leaving @floor small ones free. */
static struct krpc_buf *pool_get_small(struct krpc_pool *pool, u32 floor)
{
	struct krpc_buf *buf;
	int err;

	buf = pool_take(pool, pool->cls[0].size, floor, false, &err);
	if (!buf) {
		atomic64_inc(&krpc_stats.pool_empty);
		return ERR_PTR(err);
	}
	krpc_pool_get(pool);
	return buf;
}

/* A small buffer for a receive ring, from the reserve if need be. */
struct krpc_buf *krpc_pool_get_recv(struct krpc_pool *pool)
{
	return pool_get_small(pool, 0);
}

/*
 * A small buffer for a received message that waits rather than fail (a TCP
 * server's one-way message): the general pool and half of the receive
 * reserve, the other half kept for replies, so that such messages held by
 * their handlers never keep a reply from landing.
 */
struct krpc_buf *krpc_pool_get_oneway(struct krpc_pool *pool)
{
	return pool_get_small(pool, pool->reserve / 2);
}

/**
 * krpc_buf_get() - take a buffer from a registered pool
 * @pool:	from krpc_client_pool() or krpc_req_pool()
 * @len:	bytes needed (the buffer may be larger: krpc_buf_room())
 * @gfp:	if it allows blocking (GFP_KERNEL), wait for a buffer when
 *		the pool is empty; otherwise fail at once
 *
 * The buffer starts with an empty payload at offset 0.
 *
 * Context: process or softirq context with interrupts enabled for a
 * non-blocking @gfp (not from a hard interrupt handler, nor under
 * spin_lock_irqsave()); process context otherwise.
 * Return: the buffer, or an ERR_PTR: -EMSGSIZE if @len exceeds the largest
 * class, -ENOBUFS if the pool is empty and @gfp does not block, -EINTR if
 * a fatal signal interrupted the wait, -ENODEV if the device went away.
 */
struct krpc_buf *krpc_buf_get(struct krpc_pool *pool, size_t len, gfp_t gfp)
{
	struct krpc_buf *buf;
	int err;

	for (;;) {
		buf = pool_take(pool, len, pool->reserve, false, &err);
		if (buf)
			break;
		if (err != -ENOBUFS || !gfpflags_allow_blocking(gfp)) {
			atomic64_inc(&krpc_stats.pool_empty);
			return ERR_PTR(err);
		}
		if (wait_event_killable(pool->wait, pool_may_serve(pool, len)))
			return ERR_PTR(-EINTR);
	}
	krpc_pool_get(pool);
	return buf;
}
KRPC_EXPORT(krpc_buf_get);

/**
 * krpc_pool_get_exact() - take a buffer of one class, without waiting
 * @pool:	the pool
 * @size:	the class's buffer size
 *
 * For owners that hand buffers of a chosen class out (ubuf.c): unlike
 * krpc_buf_get(), a bigger class never serves.
 *
 * Context: process or softirq context, interrupts enabled (krpc's locks
 * are bottom-half locks: not from a hard interrupt handler, nor under
 * spin_lock_irqsave()).
 * Return: the buffer, or an ERR_PTR: -EMSGSIZE (no class of @size),
 * -ENOBUFS, -ENODEV.
 */
struct krpc_buf *krpc_pool_get_exact(struct krpc_pool *pool, size_t size)
{
	struct krpc_buf *buf;
	int err;

	buf = pool_take(pool, size, pool->reserve, true, &err);
	if (!buf) {
		atomic64_inc(&krpc_stats.pool_empty);
		return ERR_PTR(err);
	}
	krpc_pool_get(pool);
	return buf;
}

/**
 * krpc_buf_put() - give a buffer back to its pool
 * @buf:	the buffer, or NULL
 *
 * Context: process or softirq context, interrupts enabled (krpc's locks
 * are bottom-half locks: not from a hard interrupt handler, nor under
 * spin_lock_irqsave()).
 */
void krpc_buf_put(struct krpc_buf *buf)
{
	struct krpc_pool *pool;

	if (!buf)
		return;
	pool = buf->pool;
	if (pool->owner_ops && pool->owner_ops->keep(buf))
		return;
	spin_lock_bh(&pool->lock);
	if (WARN_ON_ONCE(!buf->busy)) {
		spin_unlock_bh(&pool->lock);
		return;
	}
	buf->busy = false;
	list_add(&buf->node, &pool->cls[buf->cls].free);
	WRITE_ONCE(pool->cls[buf->cls].nfree,
		   pool->cls[buf->cls].nfree + 1);
	spin_unlock_bh(&pool->lock);
	if (wq_has_sleeper(&pool->wait))
		wake_up(&pool->wait);
	krpc_pool_put(pool);
}
KRPC_EXPORT(krpc_buf_put);

/**
 * krpc_buf_data() - the payload of a buffer
 * @buf:	the buffer
 *
 * Context: any context.
 * Return: kernel address of the first payload byte; krpc_buf_room() bytes
 * may be written there.
 */
void *krpc_buf_data(const struct krpc_buf *buf)
{
	return buf->vaddr + buf->off;
}
KRPC_EXPORT(krpc_buf_data);

/**
 * krpc_buf_len() - payload length of a buffer
 * @buf:	the buffer
 *
 * Context: any context.
 * Return: payload bytes.
 */
size_t krpc_buf_len(const struct krpc_buf *buf)
{
	return buf->len;
}
KRPC_EXPORT(krpc_buf_len);

/**
 * krpc_buf_room() - payload capacity of a buffer
 * @buf:	the buffer
 *
 * Context: any context.
 * Return: largest payload length krpc_buf_set_len() accepts.
 */
size_t krpc_buf_room(const struct krpc_buf *buf)
{
	return buf->size - buf->off;
}
KRPC_EXPORT(krpc_buf_room);

/**
 * krpc_buf_set_len() - set the payload length of a buffer
 * @buf:	the buffer
 * @len:	payload bytes, at most krpc_buf_room()
 *
 * Context: any context.
 * Return: 0, or -EMSGSIZE if @len does not fit.
 */
int krpc_buf_set_len(struct krpc_buf *buf, size_t len)
{
	if (len > krpc_buf_room(buf))
		return -EMSGSIZE;
	buf->len = len;
	return 0;
}
KRPC_EXPORT(krpc_buf_set_len);

/*
 * Ownership of bytes [off, off + len) of the buffer (relative to its start,
 * not to the payload) passes to the device or back to the CPU.
 */
void krpc_buf_sync(struct krpc_buf *buf, u32 off, u32 len, bool for_device)
{
	struct ib_device *ibdev = buf->pool->ibdev;
	u32 seg_size = 1U << buf->seg_shift;

	if (!ibdev)
		return;
	while (len) {
		unsigned int i = off >> buf->seg_shift;
		u32 in = off & (seg_size - 1);
		u32 n = min(len, seg_size - in);

		if (WARN_ON_ONCE(i >= buf->nsegs))
			return;
		/* Unmapped (device removed): no device will touch it. */
		if (!buf->segs[i].dma)
			;
		else if (for_device)
			ib_dma_sync_single_for_device(ibdev, buf->segs[i].dma + in,
						      n, DMA_BIDIRECTIONAL);
		else
			ib_dma_sync_single_for_cpu(ibdev, buf->segs[i].dma + in,
						   n, DMA_BIDIRECTIONAL);
		off += n;
		len -= n;
	}
}
