// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA transport, completion queues of software devices (Soft-RoCE, siw).
 *
 * A hardware device calls a CQ's completion handler from its interrupt;
 * ib_core's IB_POLL_SOFTIRQ then reaps the CQ in the softirq that follows,
 * and krpc takes its CQs from the shared ib_cq_pool.  A software device
 * calls the handler from wherever it produced the completion: Soft-RoCE on
 * 6.1 from a tasklet (softirq), Soft-RoCE on 6.12 from its work queue
 * (process context, under its CQ lock, interrupts off), siw from its
 * threads.  A softirq raised in process context is not run until that
 * context enables bottom halves, and from interrupts-off code it wakes
 * ksoftirqd on the same, busy CPU: on 6.12 that is 2.7 more context
 * switches per round trip, and the completion waits behind Soft-RoCE's own
 * work on that CPU.  A work queue fixes that case and is twice as slow in
 * the other (a tasklet's raised softirq runs at once).
 *
 * So for a device that uses virtual DMA (ib_uses_virt_dma(), which is what
 * marks the software devices), a connection gets a CQ of its own
 * (ib_create_cq()) whose handler picks per event:
 *
 * - in hard or soft interrupt context it schedules the CQ's irq_poll, as
 *   IB_POLL_SOFTIRQ would;
 * - in any other context, while the connection holds fewer than
 *   KRPC_ECQ_SPREAD send contexts (a call or a reply or two in flight:
 *   someone waits for this completion), it queues an irq_work.  Its
 *   self-IPI fires on this CPU once the caller enables interrupts again
 *   (Soft-RoCE calls with them off) and schedules the irq_poll from hard
 *   interrupt, so the reap runs at that interrupt's exit, or where the
 *   caller enables bottom halves again, with no context switch (what 6.1's
 *   tasklet gives);
 * - otherwise (more contexts in use, PREEMPT_RT, where an irq_work runs in
 *   a thread, or no irq_work interrupt) it queues the CQ's work on
 *   krpc_cq_wq, unbound (any idle CPU picks it up) and high-priority, as
 *   IB_POLL_UNBOUND_WORKQUEUE would on ib_core's ib_comp_unbound_wq: under
 *   load the reaping then runs beside the device's own work rather than
 *   after it, and in bigger batches.
 *
 * In one boot of the 6.12 test bed, alternating the two, the irq_work took
 * a kernel-path round trip at one call in flight from 330 to 170-200 us;
 * the work queue alone kept 64 calls in flight about 20 % faster than the
 * irq_work alone, and the mix of the two was at least as fast as either.
 * The choice is per connection: many connections with a call each all
 * reap on the CPUs that run the device's work.
 * Hardware devices keep the shared pool; so do software devices while the
 * module parameter cq_shared is set (the tests run the pool's path on
 * Soft-RoCE that way).
 *
 * Context: completion handlers (the wr_cqe->done callbacks) run with bottom
 * halves disabled either way (softirq, or the work with local_bh_disable()),
 * as from IB_POLL_SOFTIRQ.  Locking: one reaper at a time per CQ: the
 * handler schedules (the irq_work, the irq_poll or the work) only if it sets
 * KRPC_ECQ_SCHED, which the reaper clears when it is done, just before it
 * re-arms the CQ; so the irq_poll and the work never reap the same CQ at
 * once.
 */
#include <linux/interrupt.h>
#include <linux/irq_poll.h>
#include <linux/irq_work.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "rdma.h"

#define KRPC_ECQ_BUDGET		64	/* per pass of the work */
/* Send contexts in use from which process-context events are queued */
#define KRPC_ECQ_SPREAD		4

enum {
	KRPC_ECQ_SCHED,		/* the irq_work, the irq_poll or the work is due
				 * or running
				 */
	KRPC_ECQ_DEAD,		/* being destroyed: reap nothing */
	KRPC_ECQ_IOP,		/* ecq_iop() runs (also after it let go of
				 * the irq_poll, which it still re-arms)
				 */
};

/**
 * struct krpc_ecq - a software device's CQ, reaped where its events say
 * @cq:		the CQ (ib_create_cq())
 * @flags:	KRPC_ECQ_*
 * @iop:	reaps in softirq
 * @iw:		schedules @iop on the CPU of a process-context event
 * @work:	reaps on krpc_cq_wq
 * @rc:		connection (outlives the CQ): its id for log lines, its send
 *		contexts in use
 * @wc:		completions of one ib_poll_cq() (the reaper only)
 */
struct krpc_ecq {
	struct ib_cq *cq;
	unsigned long flags;
	struct irq_poll iop;
	struct irq_work iw;
	struct work_struct work;
	struct krpc_rdma_conn *rc;
	struct ib_wc wc[KRPC_REAP_BATCH];
};

/**
 * krpc_rdma_reap_cq - reap up to @budget completions, as __ib_process_cq()
 * @cq:		the CQ
 * @wc:		room for KRPC_REAP_BATCH work completions
 * @budget:	completions at most
 * @conn_id:	connection, for log lines
 *
 * Context: bottom halves disabled, one caller per CQ at a time.
 * Return: completions reaped.
 */
int krpc_rdma_reap_cq(struct ib_cq *cq, struct ib_wc *wc, int budget,
		      u32 conn_id)
{
	int done = 0, n, i;

	while (done < budget) {
		n = ib_poll_cq(cq, min(budget - done, KRPC_REAP_BATCH), wc);
		if (n <= 0) {
			if (n < 0)
				pr_err_ratelimited("conn %u: ib_poll_cq: %d\n",
						   conn_id, n);
			break;
		}
		for (i = 0; i < n; i++) {
			if (wc[i].wr_cqe)
				wc[i].wr_cqe->done(cq, &wc[i]);
			else
				WARN_ON_ONCE(wc[i].status == IB_WC_SUCCESS);
		}
		done += n;
		if (n < KRPC_REAP_BATCH)
			break;
	}
	return done;
}

/*
 * The reaper is done: let the next event schedule, and re-arm.  True if
 * completions arrived meanwhile and nobody else took them: the caller
 * reaps again by its own means.
 */
static bool ecq_rearm(struct krpc_ecq *e)
{
	int ret;

	clear_bit(KRPC_ECQ_SCHED, &e->flags);
	/* The clear before the arm: an event after the arm schedules. */
	smp_mb__after_atomic();
	ret = ib_req_notify_cq(e->cq, IB_CQ_NEXT_COMP |
			       IB_CQ_REPORT_MISSED_EVENTS);
	if (ret < 0)
		pr_err_ratelimited("conn %u: ib_req_notify_cq: %d\n",
				   e->rc->conn->id, ret);
	return ret > 0 && !test_and_set_bit(KRPC_ECQ_SCHED, &e->flags);
}

static int ecq_iop(struct irq_poll *iop, int budget)
{
	struct krpc_ecq *e = container_of(iop, struct krpc_ecq, iop);
	int done = 0;

	/* Ordered before irq_poll_complete()'s release of the irq_poll. */
	set_bit(KRPC_ECQ_IOP, &e->flags);
	if (!test_bit(KRPC_ECQ_DEAD, &e->flags))
		done = krpc_rdma_reap_cq(e->cq, e->wc, budget,
					 e->rc->conn->id);
	if (done < budget) {
		irq_poll_complete(iop);
		if (!test_bit(KRPC_ECQ_DEAD, &e->flags) && ecq_rearm(e))
			irq_poll_sched(iop);
	}
	/* The last touch of @e: krpc_rdma_ecq_destroy() waits for it. */
	clear_bit_unlock(KRPC_ECQ_IOP, &e->flags);
	if (done)
		atomic64_add(done, &krpc_stats.cq_reaped_softirq);
	return done;
}

static void ecq_work(struct work_struct *work)
{
	struct krpc_ecq *e = container_of(work, struct krpc_ecq, work);
	int done;

	if (test_bit(KRPC_ECQ_DEAD, &e->flags))
		return;
	local_bh_disable();
	done = krpc_rdma_reap_cq(e->cq, e->wc, KRPC_ECQ_BUDGET,
				 e->rc->conn->id);
	local_bh_enable();
	if (done)
		atomic64_add(done, &krpc_stats.cq_reaped_work);
	if (done >= KRPC_ECQ_BUDGET || ecq_rearm(e))
		queue_work(krpc_cq_wq, &e->work);
}

/*
 * Hard interrupt (the self-IPI), on the CPU that queued it.  After
 * krpc_rdma_ecq_destroy()'s irq_poll_disable() the sched does nothing.
 */
static void ecq_irq_work(struct irq_work *iw)
{
	struct krpc_ecq *e = container_of(iw, struct krpc_ecq, iw);

	irq_poll_sched(&e->iop);
}

/*
 * Reap on this CPU, right after the caller: few send contexts in use, so
 * the completion is most likely what someone waits for.  The counts are
 * read without the connection's lock (set before the CQ is made, kept
 * until after it is destroyed): a hint.
 */
static bool ecq_here(struct krpc_ecq *e)
{
	struct krpc_rdma_conn *rc = e->rc;

	return !IS_ENABLED(CONFIG_PREEMPT_RT) &&
	       arch_irq_work_has_interrupt() &&
	       /* racy by design: a stale count only picks the other way */
	       data_race(rc->nr_sctx - rc->nr_free_sctx) < KRPC_ECQ_SPREAD;
}

/* Any context; the device's CQ lock may be held (Soft-RoCE on 6.12). */
static void ecq_comp_handler(struct ib_cq *cq, void *ctx)
{
	struct krpc_ecq *e = ctx;

	if (test_bit(KRPC_ECQ_DEAD, &e->flags) ||
	    test_and_set_bit(KRPC_ECQ_SCHED, &e->flags))
		return;
	if ((in_hardirq() || in_serving_softirq()) &&
	    !READ_ONCE(krpc_fault_cq_irq_work)) {
		irq_poll_sched(&e->iop);
	} else if (ecq_here(e)) {
		/* Not pending: its run clears that before the reap. */
		if (irq_work_queue(&e->iw))
			atomic64_inc(&krpc_stats.cq_irq_work);
	} else {
		queue_work(krpc_cq_wq, &e->work);
	}
}

static void ecq_event_handler(struct ib_event *ev, void *ctx)
{
	struct krpc_ecq *e = ctx;

	pr_err("conn %u: CQ event: %s\n", e->rc->conn->id,
	       ib_event_msg(ev->event));
}

/**
 * krpc_rdma_ecq_create - give @rc a CQ of its own, reaped per event
 * @rc: connection whose resources are being made (process context)
 *
 * Return: 0 with @rc->cq set, or a negative errno.
 */
int krpc_rdma_ecq_create(struct krpc_rdma_conn *rc)
{
	struct ib_cq_init_attr attr = {
		.cqe = rc->cq_size,
		.comp_vector = rc->conn->id % rc->ibdev->num_comp_vectors,
	};
	struct krpc_ecq *e;
	struct ib_cq *cq;
	int ret;

	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		return -ENOMEM;
	e->rc = rc;
	irq_poll_init(&e->iop, KRPC_ECQ_BUDGET, ecq_iop);
	init_irq_work(&e->iw, ecq_irq_work);
	INIT_WORK(&e->work, ecq_work);
	cq = ib_create_cq(rc->ibdev, ecq_comp_handler, ecq_event_handler, e,
			  &attr);
	if (IS_ERR(cq)) {
		ret = PTR_ERR(cq);
		goto out_free;
	}
	e->cq = cq;
	ret = ib_req_notify_cq(cq, IB_CQ_NEXT_COMP);
	if (ret)
		goto out_destroy_cq;
	rc->cq = cq;
	rc->ecq = e;
	return 0;

out_destroy_cq:
	ib_destroy_cq(cq);
out_free:
	kfree(e);
	return ret;
}

/**
 * krpc_rdma_ecq_destroy - destroy @rc's own CQ
 * @rc: connection whose QP is already destroyed (process context)
 */
void krpc_rdma_ecq_destroy(struct krpc_rdma_conn *rc)
{
	struct krpc_ecq *e = rc->ecq;

	set_bit(KRPC_ECQ_DEAD, &e->flags);
	irq_poll_disable(&e->iop);
	/*
	 * irq_poll_disable() waits only until the pass in progress let go of
	 * the irq_poll; that pass still re-arms the CQ (ib_core's
	 * ib_free_cq() has the same gap).  Wait for its end.
	 */
	while (test_bit_acquire(KRPC_ECQ_IOP, &e->flags))
		cpu_relax();
	cancel_work_sync(&e->work);
	ib_destroy_cq(e->cq);
	irq_work_sync(&e->iw);
	/* A handler that ran before DEAD was seen queued nothing to reap. */
	cancel_work_sync(&e->work);
	kfree(e);
	rc->ecq = NULL;
	rc->cq = NULL;
}
