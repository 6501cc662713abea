// SPDX-License-Identifier: GPL-2.0
/*
 * Completion queues: the second front end of the command core.
 *
 * A queue is a ring of struct krpc_cqe in krpc_umem_alloc() memory that the
 * process maps read-write.  A CALL or slot command that names a queue is
 * submitted through io_uring as usual (uring.c hands it here), but its
 * result is written into the queue by whatever context decides it: the
 * RDMA completion handler (softirq or a poller thread), the TCP receive
 * path, or the submitter itself.  That removes io_uring's task-work hop
 * from the completion path: a process spinning on the tail sees the reply
 * as soon as the transport does, and one sleeping in poll() (any queue
 * of the file) or in KRPC_IOC_CQ_POLL with KRPC_CQ_POLL_SLEEP (this queue)
 * is woken directly.
 *
 * No overflow: every command takes an entry when it is submitted
 * (ucq_reserve(): -EBUSY when unconsumed entries plus reservations reach
 * the size) and gives it back when it posts.  head is the only field the
 * kernel reads from the mapping; a head the process lies about can only
 * make its own submissions fail or its own entries be overwritten.
 *
 * Lifetime: the handle table holds one reference; each command on the
 * queue holds one from submission to posting.  Pages stay valid for the
 * process until munmap() (remap_vmalloc_range() takes page references).
 *
 * Locking: krpc_ucq.lock (innermost; irqsave) guards the kernel's tail and
 * the reservations; krpc_file.cq_lock guards the file's list of queues.
 * ucq_post() runs in any context, possibly under krpc_userver.lock.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/vmalloc.h>
#include <linux/poll.h>
#include <linux/log2.h>
#include <linux/sched/clock.h>
#include <linux/sched/signal.h>

#include "krpc_priv.h"
#include "ufile.h"

/**
 * struct krpc_ucq - a completion queue
 * @obj:	handle
 * @lock:	@tail, @reserved
 * @mask:	entries - 1
 * @tail:	entries posted (the kernel's copy; the mapping's is output)
 * @reserved:	entries promised to commands in flight
 * @mem:	the mapping: header, then the entries
 * @len:	bytes of @mem (page aligned)
 * @node:	entry in krpc_file.cqs until closed
 * @wait:	KRPC_CQ_POLL_SLEEP waiters; woken by an entry or the close
 * @closed:	the handle is gone (no entry can come but from commands on it)
 */
struct krpc_ucq {
	struct krpc_uobj obj;
	spinlock_t lock;
	u32 mask;
	u32 tail;
	u32 reserved;
	void *mem;
	size_t len;
	struct list_head node;
	wait_queue_head_t wait;
	bool closed;
};

static u32 *ucq_head(struct krpc_ucq *cq)
{
	return cq->mem + KRPC_CQ_HEAD_OFFSET;
}

static u32 *ucq_tail(struct krpc_ucq *cq)
{
	return cq->mem + KRPC_CQ_TAIL_OFFSET;
}

static struct krpc_cqe *ucq_cqe(struct krpc_ucq *cq, u32 pos)
{
	struct krpc_cqe *cqes = cq->mem + KRPC_CQ_CQES_OFFSET;

	return &cqes[pos & cq->mask];
}

/*
 * Unconsumed entries as the process's head says; any u32 is tolerated.
 * Without cq->lock (ucq_ready()) it is a snapshot.
 */
static u32 ucq_used(struct krpc_ucq *cq)
{
	/*
	 * Acquire: the process stores head (release) after it read the
	 * entries, so no entry is rewritten before it is done with them.
	 */
	return READ_ONCE(cq->tail) - smp_load_acquire(ucq_head(cq));
}

static bool ucq_reserve(struct krpc_ucq *cq)
{
	unsigned long flags;
	bool ok;

	spin_lock_irqsave(&cq->lock, flags);
	/* 64-bit sum: a lying head must not wrap it into "room". */
	ok = (u64)ucq_used(cq) + cq->reserved < (u64)cq->mask + 1;
	if (ok)
		cq->reserved++;
	spin_unlock_irqrestore(&cq->lock, flags);
	return ok;
}

static void ucq_unreserve(struct krpc_ucq *cq)
{
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	cq->reserved--;
	spin_unlock_irqrestore(&cq->lock, flags);
}

/* Write one entry and publish it.  Context: any; uses its reservation. */
static void ucq_post(struct krpc_ucq *cq, u64 tag, s32 res, u64 res2, u32 op)
{
	struct krpc_file *kf = cq->obj.kf;
	struct krpc_cqe *cqe;
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	cqe = ucq_cqe(cq, cq->tail);
	WRITE_ONCE(cqe->tag, tag);
	WRITE_ONCE(cqe->res2, res2);
	WRITE_ONCE(cqe->res, res);
	WRITE_ONCE(cqe->cmd_op, op);
	WRITE_ONCE(cqe->reserved, 0);
	cq->tail++;
	/* Entry before tail: pairs with the process's load-acquire. */
	smp_store_release(ucq_tail(cq), cq->tail);
	cq->reserved--;
	spin_unlock_irqrestore(&cq->lock, flags);
	atomic64_inc(&krpc_stats.ucq_posted);
	/*
	 * Tail before the waiters' lists: pairs with the barrier of
	 * set_current_state() in poll() and in wait_event(), between queueing
	 * the waiter and checking tail (wq_has_sleeper()'s, once for both).
	 */
	smp_mb();
	/* poll() on the file: any queue (ordered by the smp_mb() above) */
	if (waitqueue_active(&kf->cq_wait))
		wake_up_interruptible_poll(&kf->cq_wait, EPOLLIN | EPOLLRDNORM);
	/* KRPC_CQ_POLL_SLEEP on this queue (ordered by the smp_mb() above) */
	if (waitqueue_active(&cq->wait))
		wake_up_interruptible(&cq->wait);
}

/* The command's completion reference goes with the entry. */
static void ucq_complete(struct krpc_ucmd *uc, s32 res, u64 res2)
{
	struct krpc_ucq *cq = uc->fe;

	ucq_post(cq, uc->tag, res, res2, uc->op);
	krpc_uobj_put(&cq->obj);
	krpc_ucmd_put(uc);
}

static const struct krpc_ucmd_ops ucq_ops = {
	.complete = ucq_complete,
};

static struct krpc_ucq *ucq_get(struct krpc_file *kf, u32 handle)
{
	struct krpc_uobj *obj = krpc_uobj_get(kf, handle, KRPC_UOBJ_CQ);

	return obj ? container_of(obj, struct krpc_ucq, obj) : NULL;
}

/**
 * krpc_ucq_submit() - run a command whose result goes to a queue
 * @kf:		the file
 * @op:		KRPC_CMD_*
 * @payload:	private kernel copy of the command
 * @handle:	the queue named by the command (non-zero)
 * @tag:	the command's tag, for the entry
 * @nonblock:	the submitter cannot sleep
 *
 * Context: process context (io_uring issue).
 * Return: 0 if the queue took the command (its result is or will be
 * posted there), or -EBADF, -EBUSY (queue full), -EAGAIN (no memory
 * without sleeping: io_uring retries from a worker) / -ENOMEM with
 * nothing done.
 */
int krpc_ucq_submit(struct krpc_file *kf, u32 op, const void *payload,
		    u32 handle, u64 tag, bool nonblock)
{
	struct krpc_ucmd *uc;
	struct krpc_ucq *cq;
	u64 res2;
	int ret;

	cq = ucq_get(kf, handle);
	if (!cq)
		return -EBADF;
	if (!ucq_reserve(cq)) {
		ret = -EBUSY;
		goto out_put_cq;
	}
	uc = krpc_ucmd_alloc(nonblock ? GFP_NOWAIT : GFP_KERNEL);
	if (!uc) {
		ret = nonblock ? -EAGAIN : -ENOMEM;
		goto out_unreserve;
	}
	krpc_ucmd_init(uc, &ucq_ops, kf, op);
	uc->fe = cq;			/* the cq reference is the command's */
	uc->tag = tag;
	kref_get(&uc->ref);		/* ours, besides the completion's */

	/*
	 * CALL and the slot commands never wait, so @nonblock changes
	 * nothing for them: an -EAGAIN here (a full backlog) is the
	 * command's result, as through the io_uring CQ.
	 */
	ret = krpc_ucmd_exec(uc, payload, nonblock, &res2);
	if (ret != -EIOCBQUEUED)
		ucq_complete(uc, ret, res2);
	krpc_ucmd_put(uc);
	return 0;

out_unreserve:
	ucq_unreserve(cq);
out_put_cq:
	krpc_uobj_put(&cq->obj);
	return ret;
}

/* ---------------------------------------------------------------------- */
/* Set-up */

static void ucq_free(struct krpc_uobj *obj)
{
	struct krpc_ucq *cq = container_of(obj, struct krpc_ucq, obj);

	WARN_ON_ONCE(cq->reserved);
	krpc_umem_free(cq->mem, cq->len);
	kfree_rcu(cq, obj.rcu);
	atomic64_dec(&krpc_stats.ucq_live);
}

long krpc_ucq_create_ioctl(struct krpc_file *kf, void __user *arg)
{
	struct krpc_cq_create cc;
	struct krpc_ucq *cq;
	unsigned long flags;
	u32 usize;
	int ret;

	ret = krpc_ioc_copy_in(&cc, sizeof(cc), arg, KRPC_CQ_CREATE_SIZE_VER0,
			       &usize);
	if (ret)
		return ret;
	if (cc.flags || cc.handle || cc.mmap_offset || cc.mmap_length)
		return -EINVAL;
	if (!cc.entries || cc.entries > KRPC_CQ_ENTRIES_MAX ||
	    !is_power_of_2(cc.entries)) {
		pr_debug("cq: %u entries is not a power of two up to %u\n",
			 cc.entries, KRPC_CQ_ENTRIES_MAX);
		return -EINVAL;
	}

	cq = kzalloc(sizeof(*cq), GFP_KERNEL_ACCOUNT);
	if (!cq)
		return -ENOMEM;
	spin_lock_init(&cq->lock);
	INIT_LIST_HEAD(&cq->node);
	init_waitqueue_head(&cq->wait);
	cq->mask = cc.entries - 1;
	cq->len = PAGE_ALIGN(KRPC_CQ_CQES_OFFSET +
			     (size_t)cc.entries * sizeof(struct krpc_cqe));
	cq->mem = krpc_umem_alloc(cq->len);
	if (!cq->mem) {
		kfree(cq);
		return -ENOMEM;
	}
	*(u32 *)(cq->mem + KRPC_CQ_MASK_OFFSET) = cq->mask;
	atomic64_inc(&krpc_stats.ucq_live);

	/* On the list before it has a handle: poll() may look, no harm. */
	spin_lock_irqsave(&kf->cq_lock, flags);
	if (kf->nr_cqs < KRPC_CQS_MAX) {
		kf->nr_cqs++;
		list_add_tail(&cq->node, &kf->cqs);
	} else {
		ret = -EMFILE;
	}
	spin_unlock_irqrestore(&kf->cq_lock, flags);
	if (ret)
		goto out_free;
	cq->obj.kf = kf;
	/* @cq may be closed and freed as soon as it has a handle. */
	cc.mmap_length = cq->len;
	ret = krpc_uobj_add(kf, &cq->obj, KRPC_UOBJ_CQ, ucq_free, &cc.handle);
	if (ret)
		goto out_close;

	cc.size = min_t(u32, usize, sizeof(cc));
	cc.mmap_offset = krpc_uobj_mmap_offset(cc.handle);
	if (copy_to_user(arg, &cc, cc.size)) {
		/* The handle exists; the caller cannot know it: undo. */
		struct krpc_uobj *obj = krpc_uobj_remove(kf, cc.handle,
							 KRPC_UOBJ_CQ);

		if (obj) {
			krpc_ucq_close(obj);
			krpc_uobj_put(obj);
		}
		return -EFAULT;
	}
	return 0;

out_close:
	krpc_ucq_close(&cq->obj);
out_free:
	ucq_free(&cq->obj);
	return ret;
}

/*
 * CLOSE (or release, or a create that failed): off the file's list; the
 * handle is gone, and commands still on the queue post into it and hold
 * it until they do.  Context: process context.
 */
void krpc_ucq_close(struct krpc_uobj *obj)
{
	struct krpc_ucq *cq = container_of(obj, struct krpc_ucq, obj);
	struct krpc_file *kf = obj->kf;
	unsigned long flags;

	spin_lock_irqsave(&kf->cq_lock, flags);
	list_del_init(&cq->node);
	kf->nr_cqs--;
	spin_unlock_irqrestore(&kf->cq_lock, flags);
	/* Sleepers on it return (-EBADF unless entries are left). */
	WRITE_ONCE(cq->closed, true);
	wake_up_interruptible(&cq->wait);
}

/* Read-write map of the whole queue.  Context: mmap(). */
int krpc_ucq_mmap(struct krpc_uobj *obj, struct vm_area_struct *vma)
{
	struct krpc_ucq *cq = container_of(obj, struct krpc_ucq, obj);

	if (vma->vm_end - vma->vm_start != cq->len ||
	    !(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;
	vm_flags_clear(vma, VM_MAYEXEC);
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTCOPY);
	return remap_vmalloc_range(vma, cq->mem, 0);
}

/* Unconsumed entries, at most the size; no lock (a snapshot). */
static u32 ucq_ready(struct krpc_ucq *cq)
{
	return min(ucq_used(cq), cq->mask + 1);
}

/* krpc_rdma_busy_poll()'s stop condition. */
static bool ucq_has_entries(void *arg)
{
	return ucq_ready(arg);
}

/* Entries, or the close that ends a wait for them. */
static bool ucq_wait_over(struct krpc_ucq *cq)
{
	return ucq_ready(cq) || READ_ONCE(cq->closed);
}

/* The result of a wait that is over (or timed out: 0). */
static long ucq_wait_result(struct krpc_ucq *cq)
{
	u32 ready = ucq_ready(cq);

	if (ready)
		return ready;
	return READ_ONCE(cq->closed) ? -EBADF : 0;
}

/*
 * Spin for @usecs at most, reaping the polled CQs of this file's
 * connections (rdma_poll.c) so that the completion that posts the entry
 * runs here, on this CPU; no other connection can post to @cq.  Gives the
 * CPU up when the scheduler asks, as the pollers do.
 */
static long ucq_spin(struct krpc_ucq *cq, u32 usecs)
{
	u64 end = local_clock() + (u64)usecs * NSEC_PER_USEC;
	long ret = 0;

	for (;;) {
		if (ucq_wait_over(cq))
			break;
		if (krpc_rdma_busy_poll(cq->obj.kf, ucq_has_entries, cq) &&
		    ucq_wait_over(cq))
			break;
		if (signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		if (local_clock() >= end)
			break;
		if (need_resched())
			cond_resched();
		else
			cpu_relax();
	}
	atomic64_inc(&krpc_stats.ucq_busy_polls);
	return ret ? ret : ucq_wait_result(cq);
}

/*
 * Sleep until the queue has entries or is closed, for @usecs at most
 * (0: no limit).  Woken by ucq_post() and krpc_ucq_close().
 */
static long ucq_sleep(struct krpc_ucq *cq, u32 usecs)
{
	long ret;

	if (usecs)
		ret = wait_event_interruptible_hrtimeout(cq->wait,
				ucq_wait_over(cq),
				ns_to_ktime((u64)usecs * NSEC_PER_USEC));
	else
		ret = wait_event_interruptible(cq->wait, ucq_wait_over(cq));
	if (ret == -ERESTARTSYS)
		return -EINTR;	/* as the spin: a restart would rewind @usecs */
	return ucq_wait_result(cq);
}

/**
 * krpc_ucq_poll_ioctl() - KRPC_IOC_CQ_POLL: wait until a queue has entries
 * @kf:		the file
 * @arg:	struct krpc_cq_poll
 *
 * Spins (busy polling), or sleeps with KRPC_CQ_POLL_SLEEP.
 *
 * Context: process context (ioctl); no locks held.
 * Return: the queue's unconsumed entries, 0 when the time ran out first,
 * -EINTR, -EBADF (also: closed while the caller waited, and empty),
 * -EINVAL, -EFAULT or -E2BIG.
 */
long krpc_ucq_poll_ioctl(struct krpc_file *kf, void __user *arg)
{
	struct krpc_cq_poll cp;
	struct krpc_ucq *cq;
	u32 usize;
	long ret;

	ret = krpc_ioc_copy_in(&cp, sizeof(cp), arg, KRPC_CQ_POLL_SIZE_VER0,
			       &usize);
	if (ret)
		return ret;
	if (cp.flags & ~KRPC_CQ_POLL_FLAGS)
		return -EINVAL;
	if (!(cp.flags & KRPC_CQ_POLL_SLEEP) &&
	    (!cp.usecs || cp.usecs > KRPC_CQ_POLL_USECS_MAX)) {
		pr_debug("cq poll: %u us is not in 1..%u\n", cp.usecs,
			 KRPC_CQ_POLL_USECS_MAX);
		return -EINVAL;
	}
	cq = ucq_get(kf, cp.handle);
	if (!cq)
		return -EBADF;
	if (cp.flags & KRPC_CQ_POLL_SLEEP)
		ret = ucq_sleep(cq, cp.usecs);
	else
		ret = ucq_spin(cq, cp.usecs);
	krpc_uobj_put(&cq->obj);
	return ret;
}

/* poll(): EPOLLIN while a queue of the file holds entries. */
__poll_t krpc_ucq_poll(struct krpc_file *kf)
{
	struct krpc_ucq *cq;
	unsigned long flags;
	__poll_t mask = 0;

	spin_lock_irqsave(&kf->cq_lock, flags);
	list_for_each_entry(cq, &kf->cqs, node) {
		spin_lock(&cq->lock);
		if (ucq_used(cq))
			mask = EPOLLIN | EPOLLRDNORM;
		spin_unlock(&cq->lock);
		if (mask)
			break;
	}
	spin_unlock_irqrestore(&kf->cq_lock, flags);
	return mask;
}
