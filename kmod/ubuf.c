// SPDX-License-Identifier: GPL-2.0
/*
 * Pools mapped into a process, and who owns each of their buffers.
 *
 * A user pool is an ordinary registered pool (pool.c) whose pages are
 * compound (__GFP_COMP: vm_insert_pages() takes a reference on each page it
 * maps, so a page stays allocated until both the pool and every mapping let
 * go of it) and charged to the memory cgroup (__GFP_ACCOUNT) and to the
 * opener's locked_vm.  The process maps it once with mmap(); the
 * transport moves payloads straight between those pages and the wire.
 *
 * Ownership of each buffer is kept here, in kernel memory only:
 *   UB_KERNEL	in the pool's free list, or taken by the transport (receive
 *		ring, RDMA READ target, reply destination)
 *   UB_USER	the process owns it (KRPC_IOC_BUF_ALLOC, or handed over by a
 *		completion)
 *   UB_TX	the process handed it to a command; the core's
 *		krpc_buf_put() at the end of its use lands in keep() below,
 *		which makes it UB_USER again instead of freeing it; or
 *		UB_KERNEL if the command ended first (krpc_ubuf_orphan())
 * The process can always write every buffer through its mapping; that only
 * corrupts its own data: the kernel never parses pool memory in place.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/sched/user.h>
#include <linux/sched/signal.h>
#include <linux/capability.h>
#include <linux/nospec.h>
#include <linux/overflow.h>
#include <linux/uaccess.h>
#include <rdma/ib_verbs.h>

#include "krpc_priv.h"
#include "pool.h"
#include "ufile.h"

/*
 * RDMA devices as the userspace path sees them, for choosing a pool's
 * device by name and for finding a device's user pools when it goes.
 * Kept by device.c's ib_client through the two hooks below, so that the
 * order is explicit: a device's user pools are unmapped only after the
 * transport has torn down every connection on the device.
 */
struct udev {
	struct list_head node;
	struct ib_device *ibdev;
	struct list_head pools;
};

static LIST_HEAD(udevs);
static DEFINE_MUTEX(udevs_lock);	/* udevs, udev.pools */

/* Context: process context (the ib_client's add callback). */
int krpc_ubuf_device_add(struct ib_device *ibdev)
{
	struct udev *d = kzalloc(sizeof(*d), GFP_KERNEL);

	if (!d)
		return -ENOMEM;
	d->ibdev = ibdev;
	INIT_LIST_HEAD(&d->pools);
	mutex_lock(&udevs_lock);
	list_add_tail(&d->node, &udevs);
	mutex_unlock(&udevs_lock);
	return 0;
}

/* upool_release() took a pool off its device's list. */
static DECLARE_WAIT_QUEUE_HEAD(udev_release_wq);

/*
 * The next user pool still on @d, with a reference, taken off the device's
 * list; NULL when only pools whose last reference is gone are left.  Those
 * stay on the list until their release has unmapped them: the release is
 * queued on krpc_wq, or is about to be (kref_put() got to zero), and takes
 * @up off the list once done (upool_release()).  @up is only read while
 * it is on the list.
 */
static struct krpc_pool *udev_next_pool(struct udev *d)
{
	struct krpc_upool *up;

	lockdep_assert_held(&udevs_lock);
	list_for_each_entry(up, &d->pools, kdev_node) {
		if (krpc_pool_tryget(up->pool)) {
			list_del_init(&up->kdev_node);
			return up->pool;
		}
	}
	return NULL;
}

/**
 * krpc_ubuf_device_remove() - unmap the user pools of a device that goes
 * @ibdev:	the device, still registered
 *
 * Called by the transport's remove callback once no connection uses the
 * device any more, so the hardware no longer touches any pool buffer.
 * Every user pool on the device is killed: its DMA mappings are torn down
 * now, while the device exists, and it hands out no buffer from now on
 * (new connections and calls on it fail).  The processes keep their
 * mappings of the pages, which stay valid memory until the pool is freed.
 * Pools already on their way out are waited for: their release unmaps.
 *
 * Context: process context, not krpc_wq; sleeps.
 */
void krpc_ubuf_device_remove(struct ib_device *ibdev)
{
	struct krpc_pool *pool;
	struct udev *d, *found = NULL;

	mutex_lock(&udevs_lock);
	list_for_each_entry(d, &udevs, node) {
		if (d->ibdev == ibdev) {
			found = d;
			list_del(&d->node);
			break;
		}
	}
	while (found && (pool = udev_next_pool(found))) {
		mutex_unlock(&udevs_lock);
		krpc_pool_kill(pool);
		krpc_pool_put(pool);
		mutex_lock(&udevs_lock);
	}
	mutex_unlock(&udevs_lock);
	if (!found)
		return;
	wait_event(udev_release_wq, list_empty_careful(&found->pools));
	/* The last release left the list under the lock: let it finish. */
	mutex_lock(&udevs_lock);
	mutex_unlock(&udevs_lock);
	kfree(found);
}

/* ---------------------------------------------------------------------- */
/* Accounting, as io_uring does for its fixed buffers */

static int account(struct krpc_file *kf, struct user_struct *user,
		   unsigned long nr_pages)
{
	unsigned long limit = (unsigned long)krpc_param(upool_max_mb) << (20 - PAGE_SHIFT);
	unsigned long cur, new;

	if (!file_ns_capable(kf->file, &init_user_ns, CAP_IPC_LOCK))
		limit = min(limit, rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT);
	cur = atomic_long_read(&user->locked_vm);
	do {
		if (check_add_overflow(cur, nr_pages, &new) || new > limit)
			return -ENOMEM;
	} while (!atomic_long_try_cmpxchg(&user->locked_vm, &cur, new));
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Ownership */

static struct krpc_upool *to_upool(struct krpc_pool *pool)
{
	return pool->owner;
}

/* krpc_buf_put() of a user pool's buffer.  Any context. */
static bool upool_keep(struct krpc_buf *buf)
{
	struct krpc_upool *up = to_upool(buf->pool);
	struct krpc_uslot *waiter = NULL;
	unsigned long flags;
	bool kept = false;

	spin_lock_irqsave(&up->lock, flags);
	if (up->state[buf->idx] == UB_TX) {
		up->state[buf->idx] = UB_USER;
		waiter = up->waiter[buf->idx];
		up->waiter[buf->idx] = NULL;
		kept = true;
	}
	spin_unlock_irqrestore(&up->lock, flags);
	if (waiter)
		krpc_userver_tx_done(waiter);
	return kept;
}

/* The pool's memory is being freed: nothing refers to @up any more. */
static void upool_release(struct krpc_pool *pool)
{
	struct krpc_upool *up = to_upool(pool);

	/* Unmapped already (pool_free_work()): the device may go now. */
	if (!list_empty_careful(&up->kdev_node)) {
		mutex_lock(&udevs_lock);
		list_del_init(&up->kdev_node);
		mutex_unlock(&udevs_lock);
		wake_up_all(&udev_release_wq);
	}
	atomic_long_sub(up->charged, &up->user->locked_vm);
	free_uid(up->user);
	kvfree(up->pages);
	kvfree(up->waiter);
	kvfree(up->state);
	kfree_rcu(up, obj.rcu);
}

static const struct krpc_pool_owner_ops upool_owner_ops = {
	.keep		= upool_keep,
	.release	= upool_release,
};

/* Bounds of a payload in a buffer; the index is checked by the caller. */
static int range_check(struct krpc_upool *up, u32 idx, u32 off, u32 len)
{
	u32 end;

	if (check_add_overflow(off, len, &end) ||
	    end > up->pool->all_bufs[array_index_nospec(idx, up->count)]->size)
		return -EINVAL;
	return 0;
}

int krpc_ubuf_check(struct krpc_upool *up, u32 idx, u32 off, u32 len)
{
	if (idx >= up->count)
		return -EINVAL;
	return range_check(up, idx, off, len);
}

/**
 * krpc_ubuf_hand_over() - a command takes a buffer the process owns
 * @up:		pool
 * @idx:	buffer index from userspace, unchecked
 * @off:	payload offset, unchecked
 * @len:	payload length, unchecked
 * @waiter:	slot to tell when the buffer comes back, or NULL
 * @err:	-EINVAL (index or range), -EBUSY (the kernel owns it)
 *
 * Context: any context.
 * Return: the buffer, payload set, now UB_TX; or NULL and *@err.
 */
struct krpc_buf *krpc_ubuf_hand_over(struct krpc_upool *up, u32 idx,
				     u32 off, u32 len,
				     struct krpc_uslot *waiter, int *err)
{
	struct krpc_buf *buf;
	unsigned long flags;

	if (idx >= up->count || range_check(up, idx, off, len)) {
		*err = -EINVAL;
		return NULL;
	}
	idx = array_index_nospec(idx, up->count);
	spin_lock_irqsave(&up->lock, flags);
	if (up->state[idx] != UB_USER) {
		spin_unlock_irqrestore(&up->lock, flags);
		*err = -EBUSY;
		return NULL;
	}
	up->state[idx] = UB_TX;
	up->waiter[idx] = waiter;
	spin_unlock_irqrestore(&up->lock, flags);
	buf = up->pool->all_bufs[idx];
	buf->off = off;
	buf->len = len;
	return buf;
}

/* The command failed before the core took the buffer: the process owns it. */
void krpc_ubuf_take_back(struct krpc_upool *up, struct krpc_buf *buf)
{
	unsigned long flags;

	spin_lock_irqsave(&up->lock, flags);
	WARN_ON_ONCE(up->state[buf->idx] != UB_TX);
	up->state[buf->idx] = UB_USER;
	up->waiter[buf->idx] = NULL;
	spin_unlock_irqrestore(&up->lock, flags);
}

/*
 * The command that handed over @idx (a reply still with the transport,
 * @waiter's) ends without it: once the transport puts it, the buffer goes
 * back to the pool's free list instead of to the process.  Context: any.
 * Return: true if so; false if it came back already (UB_USER, @waiter
 * about to be told) or is not @waiter's.
 */
bool krpc_ubuf_orphan(struct krpc_upool *up, u32 idx,
		      const struct krpc_uslot *waiter)
{
	unsigned long flags;
	bool orphaned = false;

	if (idx >= up->count)
		return false;
	spin_lock_irqsave(&up->lock, flags);
	if (up->state[idx] == UB_TX && up->waiter[idx] == waiter) {
		up->state[idx] = UB_KERNEL;
		up->waiter[idx] = NULL;
		orphaned = true;
	}
	spin_unlock_irqrestore(&up->lock, flags);
	return orphaned;
}

/* A buffer the core handed over (reply, request) goes to the process. */
u32 krpc_ubuf_give_user(struct krpc_upool *up, struct krpc_buf *buf)
{
	unsigned long flags;

	if (WARN_ON_ONCE(buf->pool != up->pool)) {
		krpc_buf_put(buf);
		return KRPC_BUF_NONE;
	}
	spin_lock_irqsave(&up->lock, flags);
	up->state[buf->idx] = UB_USER;
	spin_unlock_irqrestore(&up->lock, flags);
	return buf->idx;
}

/*
 * A buffer of @up->buf_size, or of @up->large_size if @large.
 * Context: any context.  Return: a buffer index, -EINVAL (@large and the
 * pool has no large buffers), -ENOBUFS or -ENODEV.
 */
int krpc_ubuf_alloc(struct krpc_upool *up, bool large)
{
	struct krpc_buf *buf;
	unsigned long flags;

	if (large && !up->large_size)
		return -EINVAL;
	buf = krpc_pool_get_exact(up->pool, large ? up->large_size :
						    up->buf_size);
	if (IS_ERR(buf))
		return PTR_ERR(buf) == -ENODEV ? -ENODEV : -ENOBUFS;
	spin_lock_irqsave(&up->lock, flags);
	up->state[buf->idx] = UB_USER;
	spin_unlock_irqrestore(&up->lock, flags);
	return buf->idx;
}

/**
 * krpc_ubuf_free() - the process gives buffers back
 * @up:		pool
 * @idx:	indexes, unchecked
 * @n:		entries of @idx
 *
 * All or nothing.  Context: any context.
 * Return: 0, -EINVAL (index out of range) or -EBUSY (not the process's,
 * or named twice).
 */
int krpc_ubuf_free(struct krpc_upool *up, const u32 *idx, unsigned int n)
{
	unsigned long flags;
	unsigned int i;

	for (i = 0; i < n; i++)
		if (idx[i] >= up->count)
			return -EINVAL;
	spin_lock_irqsave(&up->lock, flags);
	for (i = 0; i < n; i++) {
		u32 k = array_index_nospec(idx[i], up->count);

		if (up->state[k] != UB_USER)
			break;
		up->state[k] = UB_KERNEL;
	}
	if (i < n) {
		while (i--)
			up->state[array_index_nospec(idx[i], up->count)] = UB_USER;
		spin_unlock_irqrestore(&up->lock, flags);
		return -EBUSY;
	}
	spin_unlock_irqrestore(&up->lock, flags);
	for (i = 0; i < n; i++)
		krpc_buf_put(up->pool->all_bufs[array_index_nospec(idx[i],
								   up->count)]);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Objects */

/* Last handle reference: give the process's buffers back, drop the pool. */
static void upool_free(struct krpc_uobj *obj)
{
	struct krpc_upool *up = container_of(obj, struct krpc_upool, obj);
	struct krpc_pool *pool = up->pool;
	unsigned long flags;
	u32 i;

	for (i = 0; i < up->count; i++) {
		bool user;

		spin_lock_irqsave(&up->lock, flags);
		user = up->state[i] == UB_USER;
		WARN_ON_ONCE(up->state[i] == UB_TX);
		if (user)
			up->state[i] = UB_KERNEL;
		spin_unlock_irqrestore(&up->lock, flags);
		if (user)
			krpc_buf_put(pool->all_bufs[i]);
	}
	/* @up lives on until the pool's last reference (upool_release). */
	krpc_pool_put(pool);
}

struct krpc_upool *krpc_upool_get(struct krpc_file *kf, u32 handle)
{
	struct krpc_uobj *obj = krpc_uobj_get(kf, handle, KRPC_UOBJ_POOL);

	return obj ? container_of(obj, struct krpc_upool, obj) : NULL;
}

void krpc_upool_put(struct krpc_upool *up)
{
	krpc_uobj_put(&up->obj);
}

/**
 * krpc_upool_use() - a connection or server being created takes its pool
 * @kf:		the file
 * @handle:	pool handle from userspace, unchecked
 *
 * The user is counted under up->lock, where KRPC_IOC_POOL_DESTROY checks
 * the count and marks the pool dead: a pool is either destroyed or used,
 * never both.
 *
 * Context: any context.
 * Return: the pool, referenced (krpc_upool_put() when the user is freed)
 * and counted (krpc_upool_unuse() when it is shut down), or NULL: no pool
 * of @kf has @handle, or it is being destroyed.
 */
struct krpc_upool *krpc_upool_use(struct krpc_file *kf, u32 handle)
{
	struct krpc_upool *up = krpc_upool_get(kf, handle);
	unsigned long flags;
	bool dead;

	if (!up)
		return NULL;
	spin_lock_irqsave(&up->lock, flags);
	dead = up->dead;
	if (!dead)
		atomic_inc(&up->users);
	spin_unlock_irqrestore(&up->lock, flags);
	if (dead) {
		krpc_upool_put(up);
		return NULL;
	}
	return up;
}

/*
 * The user is shut down: it no longer holds the pool's destruction back,
 * although commands still referencing it keep @up allocated.  Exactly once
 * per krpc_upool_use().  Context: any context.
 */
void krpc_upool_unuse(struct krpc_upool *up)
{
	WARN_ON_ONCE(atomic_dec_return(&up->users) < 0);
}

static struct udev *udev_find(const char *name)
{
	struct udev *d;

	lockdep_assert_held(&udevs_lock);
	list_for_each_entry(d, &udevs, node)
		if (!name[0] || !strcmp(dev_name(&d->ibdev->dev), name))
			return d;
	return NULL;
}

static int upool_fill_pages(struct krpc_upool *up)
{
	struct krpc_pool *pool = up->pool;
	unsigned long n = 0;
	u32 i, s, j;

	up->pages = kvmalloc_array(up->nr_pages, sizeof(*up->pages),
				   GFP_KERNEL_ACCOUNT);
	if (!up->pages)
		return -ENOMEM;
	for (i = 0; i < pool->nr_bufs; i++) {
		struct krpc_buf *buf = pool->all_bufs[i];
		u32 per_seg = 1U << (buf->seg_shift - PAGE_SHIFT);

		for (s = 0; s < buf->nsegs; s++)
			for (j = 0; j < per_seg; j++) {
				if (WARN_ON_ONCE(n >= up->nr_pages))
					return -EINVAL;
				up->pages[n++] = buf->segs[s].page + j;
			}
	}
	return n == up->nr_pages ? 0 : -EINVAL;
}

/* Bytes of the mapping: the buffers, then the large buffers. */
static u64 upool_length(const struct krpc_pool_create *pc)
{
	return (u64)pc->buf_size * pc->count +
	       (u64)pc->large_size * pc->large_count;
}

/* The sizes of a pool to create: 0 or -EINVAL, with a line in the log. */
static int upool_check(const struct krpc_pool_create *pc)
{
	if (pc->buf_size < KRPC_POOL_BUF_MIN ||
	    pc->buf_size > KRPC_POOL_BUF_MAX ||
	    !is_power_of_2(pc->buf_size) || !pc->count ||
	    pc->count > KRPC_POOL_COUNT_MAX) {
		pr_debug("pool create: %u buffers of %u bytes\n", pc->count,
			 pc->buf_size);
		return -EINVAL;
	}
	if (!pc->large_size && !pc->large_count)
		return 0;
	if (pc->large_size <= pc->buf_size ||
	    pc->large_size > KRPC_POOL_LARGE_MAX ||
	    pc->large_size % KRPC_POOL_BUF_MAX || !pc->large_count ||
	    pc->large_count > KRPC_POOL_COUNT_MAX) {
		pr_debug("pool create: %u large buffers of %u bytes (a multiple of %u above %u, at most %u; 1..%u of them)\n",
			 pc->large_count, pc->large_size, KRPC_POOL_BUF_MAX,
			 pc->buf_size, KRPC_POOL_LARGE_MAX,
			 KRPC_POOL_COUNT_MAX);
		return -EINVAL;
	}
	return 0;
}

static struct krpc_upool *upool_create(struct krpc_file *kf,
				       const struct krpc_pool_create *pc)
{
	struct krpc_pool_cfg cfg = {
		.small_size = pc->buf_size,
		.nr_small = pc->count,
		.large_size = pc->large_size,
		.nr_large = pc->large_count,
		.gfp = __GFP_COMP | __GFP_ACCOUNT,
	};
	unsigned long nr_pages = upool_length(pc) >> PAGE_SHIFT;
	struct user_struct *user = get_uid(kf->cred->user);
	struct krpc_pool *pool;
	struct krpc_upool *up;
	struct udev *d;
	int ret;

	ret = account(kf, user, nr_pages);
	if (ret) {
		free_uid(user);
		return ERR_PTR(ret);
	}
	up = kzalloc(sizeof(*up), GFP_KERNEL_ACCOUNT);
	if (!up) {
		ret = -ENOMEM;
		goto out_unaccount;
	}
	up->user = user;
	up->charged = nr_pages;
	up->buf_size = pc->buf_size;
	up->large_size = pc->large_size;
	up->count = pc->count + pc->large_count;
	up->nr_pages = nr_pages;
	spin_lock_init(&up->lock);
	atomic_set(&up->users, 0);
	INIT_LIST_HEAD(&up->kdev_node);
	up->state = kvcalloc(up->count, sizeof(*up->state), GFP_KERNEL_ACCOUNT);
	up->waiter = kvcalloc(up->count, sizeof(*up->waiter),
			      GFP_KERNEL_ACCOUNT);
	if (!up->state || !up->waiter) {
		ret = -ENOMEM;
		goto out_free;
	}

	/* Held across creation: the device cannot go half-way. */
	mutex_lock(&udevs_lock);
	d = udev_find(pc->device);
	if (!d && pc->device[0]) {
		mutex_unlock(&udevs_lock);
		ret = -ENODEV;
		goto out_free;
	}
	/* No RDMA device at all: host memory, for TCP connections. */
	pool = krpc_pool_create(d ? d->ibdev : NULL, &cfg);
	if (IS_ERR(pool)) {
		mutex_unlock(&udevs_lock);
		ret = PTR_ERR(pool);
		goto out_free;
	}
	/* Nobody else knows the pool yet. */
	pool->owner = up;
	pool->owner_ops = &upool_owner_ops;
	pool->busy_owner = kf;
	up->pool = pool;
	if (d)
		list_add_tail(&up->kdev_node, &d->pools);
	mutex_unlock(&udevs_lock);

	ret = upool_fill_pages(up);
	if (ret) {
		/* upool_release() frees @up and uncharges. */
		krpc_pool_put(pool);
		return ERR_PTR(ret);
	}
	return up;

out_free:
	kvfree(up->waiter);
	kvfree(up->state);
	kfree(up);			/* never had a handle */
out_unaccount:
	atomic_long_sub(nr_pages, &user->locked_vm);
	free_uid(user);
	return ERR_PTR(ret);
}

/* Context: process context (ioctl). */
long krpc_upool_create_ioctl(struct krpc_file *kf, void __user *arg)
{
	struct krpc_pool_create pc;
	struct krpc_upool *up;
	u32 usize;
	int ret;

	ret = krpc_ioc_copy_in(&pc, sizeof(pc), arg, KRPC_POOL_CREATE_SIZE_VER0,
			       &usize);
	if (ret)
		return ret;
	if (pc.flags || pc.reserved || pc.handle || pc.mmap_offset ||
	    pc.mmap_length)
		return -EINVAL;
	ret = upool_check(&pc);
	if (ret)
		return ret;
	if (strnlen(pc.device, sizeof(pc.device)) == sizeof(pc.device))
		return -EINVAL;

	up = upool_create(kf, &pc);
	if (IS_ERR(up))
		return PTR_ERR(up);
	/* @up may be destroyed and freed as soon as it has a handle. */
	ret = krpc_uobj_add(kf, &up->obj, KRPC_UOBJ_POOL, upool_free,
			    &pc.handle);
	if (ret) {
		krpc_pool_put(up->pool);
		return ret;
	}
	pc.size = min_t(u32, usize, sizeof(pc));
	pc.mmap_offset = krpc_uobj_mmap_offset(pc.handle);
	pc.mmap_length = upool_length(&pc);
	if (copy_to_user(arg, &pc, pc.size)) {
		/* The handle exists; the caller cannot know it: undo. */
		struct krpc_uobj *obj = krpc_uobj_remove(kf, pc.handle,
							 KRPC_UOBJ_POOL);

		if (obj)
			krpc_uobj_put(obj);
		return -EFAULT;
	}
	return 0;
}

/*
 * KRPC_IOC_POOL_DESTROY.  The check for users and the mark that keeps new
 * ones away are one step under up->lock (krpc_upool_use()); only the
 * caller that marked the pool removes its handle.  Context: process
 * context (ioctl).
 */
long krpc_upool_destroy_ioctl(struct krpc_file *kf, void __user *arg)
{
	struct krpc_handle_arg ha;
	struct krpc_upool *up;
	struct krpc_uobj *obj;
	unsigned long flags;
	u32 usize;
	int ret;

	ret = krpc_ioc_copy_in(&ha, sizeof(ha), arg, KRPC_HANDLE_ARG_SIZE_VER0,
			       &usize);
	if (ret)
		return ret;
	if (ha.flags || ha.reserved)
		return -EINVAL;
	up = krpc_upool_get(kf, ha.handle);
	if (!up)
		return -EBADF;
	spin_lock_irqsave(&up->lock, flags);
	if (up->dead)
		ret = -EBADF;		/* another DESTROY is removing it */
	else if (atomic_read(&up->users))
		ret = -EBUSY;
	else
		up->dead = true;
	spin_unlock_irqrestore(&up->lock, flags);
	krpc_upool_put(up);
	if (ret)
		return ret;
	obj = krpc_uobj_remove(kf, ha.handle, KRPC_UOBJ_POOL);
	if (!obj)
		return -EBADF;
	krpc_uobj_put(obj);
	return 0;
}

/* KRPC_IOC_BUF_ALLOC / KRPC_IOC_BUF_FREE.  Context: process context. */
long krpc_ubuf_alloc_ioctl(struct krpc_file *kf, void __user *arg, bool free)
{
	struct krpc_buf_arg ba;
	struct krpc_upool *up;
	u32 usize, i;
	u32 *idx;
	int ret;

	ret = krpc_ioc_copy_in(&ba, sizeof(ba), arg, KRPC_BUF_ARG_SIZE_VER0,
			       &usize);
	if (ret)
		return ret;
	if ((ba.flags & ~(free ? 0 : KRPC_BUF_F_LARGE)) || !ba.count ||
	    ba.count > KRPC_BUF_IOC_MAX)
		return -EINVAL;
	idx = kvmalloc_array(ba.count, sizeof(*idx), GFP_KERNEL);
	if (!idx)
		return -ENOMEM;
	up = krpc_upool_get(kf, ba.pool);
	if (!up) {
		ret = -EBADF;
		goto out_free;
	}
	if (free) {
		if (copy_from_user(idx, u64_to_user_ptr(ba.bufs),
				   ba.count * sizeof(*idx)))
			ret = -EFAULT;
		else
			ret = krpc_ubuf_free(up, idx, ba.count);
		goto out_put;
	}
	for (i = 0; i < ba.count; i++) {
		ret = krpc_ubuf_alloc(up, ba.flags & KRPC_BUF_F_LARGE);
		if (ret < 0)
			break;
		idx[i] = ret;
	}
	if (!i)
		goto out_put;
	ba.count = i;
	if (copy_to_user(u64_to_user_ptr(ba.bufs), idx, i * sizeof(*idx)) ||
	    put_user(i, &((struct krpc_buf_arg __user *)arg)->count)) {
		krpc_ubuf_free(up, idx, i);
		ret = -EFAULT;
		goto out_put;
	}
	ret = i;
out_put:
	krpc_upool_put(up);
out_free:
	kvfree(idx);
	return ret;
}

/*
 * A mapping holds the pool: its pages stay allocated while mapped (each
 * mapped page holds a reference of its own), and so must the locked_vm
 * charge for them, which the pool's release gives back.  A pool destroyed
 * while mapped is released at the last munmap.  open() runs for every
 * copy of the vma (split, MADV_DOFORK then fork), close() for every one
 * that goes.  Context: process context, mmap_lock held.
 */
static void upool_vm_open(struct vm_area_struct *vma)
{
	struct krpc_upool *up = vma->vm_private_data;

	krpc_pool_get(up->pool);
}

static void upool_vm_close(struct vm_area_struct *vma)
{
	struct krpc_upool *up = vma->vm_private_data;

	krpc_pool_put(up->pool);
}

static const struct vm_operations_struct upool_vm_ops = {
	.open	= upool_vm_open,
	.close	= upool_vm_close,
};

/*
 * Map the whole pool, shared, at its exact offset (checked by the
 * caller) and length.  Context: mmap(), mmap_lock held for writing.
 */
int krpc_upool_mmap(struct krpc_upool *up, struct vm_area_struct *vma)
{
	unsigned long nr = up->nr_pages;
	int ret;

	if (vma_pages(vma) != up->nr_pages || !(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;
	vm_flags_clear(vma, VM_MAYEXEC);
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTCOPY | VM_DONTDUMP);
	ret = vm_insert_pages(vma, vma->vm_start, up->pages, &nr);
	if (ret)
		return ret;
	/* Only a mapping that exists gets close(): the reference last. */
	vma->vm_private_data = up;
	vma->vm_ops = &upool_vm_ops;
	krpc_pool_get(up->pool);
	return 0;
}
