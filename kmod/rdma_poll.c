// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA transport, polled completion queues (KRPC_CQ_POLL, poll_usecs).
 *
 * By default a connection's completions come from a shared ib_cq_pool CQ
 * in softirq (a software device's own CQ, rdma_cq.c): each completion is
 * an interrupt (on Soft-RoCE a tasklet or a work item), a softirq pass or
 * a work item, and a re-arm.  A connection made with KRPC_CQ_POLL, or with
 * KRPC_CQ_DEFAULT while poll_usecs > 0, gets a CQ of its own, served by
 * one of poll_threads kernel threads ("krpc_poll/N"), as brpc's pollers
 * (rdma_use_polling) and nvme-rdma's poll queues do.  With more than one,
 * poller N is affine to a CPU of its own (the N-th, wrapping, of the
 * online CPUs that kernel threads may use), as per-core poll queues are:
 * left unbound, a poller woken by another's completion handler is placed
 * on the waker's CPU (wake-affine), and two pollers that each spin then
 * share one CPU while the other idles (Documentation/kernel-api.rst).
 * The affinity is not locked: an administrator may move a poller
 * (taskset), and the scheduler moves it if its CPU goes offline.
 *
 * A poller reaps every CQ it serves in turn and keeps spinning for
 * poll_usecs after the last completion it found, giving the CPU up
 * whenever the scheduler asks (cond_resched(), as NAPI busy polling does);
 * then it arms every CQ and sleeps until one of them signals.  The spin
 * trades CPU time for latency: it is off unless asked for.
 *
 * While poll_usecs is 0 (connections that asked for KRPC_CQ_POLL
 * themselves), the spin adapts instead: twice the longest gap between the
 * passes that found completions, over the last 32 to 64 of them, at least
 * KRPC_POLL_USECS_DEFAULT and at most KRPC_POLL_USECS_ADAPT_MAX.  A fixed
 * spin shorter than the round trip sleeps before every reply, and the
 * wake-up that reply then pays lengthens the round trip further; a gap
 * measured across a sleep covers the wake-up too, so the next spin
 * outlasts it.  A gap longer than the cap is a pause in the traffic, not
 * a round trip: it raises nothing, and once traffic comes in pauses only,
 * the spin is back at the minimum within two windows.  One late reply (a
 * preempted peer) costs one sleep, not the estimate.
 *
 * Busy polling by processes (KRPC_IOC_CQ_POLL, ucq.c): a process waiting
 * for its completion queue reaps the polled CQs of its own connections (the
 * CQs are tagged with the owner of the connection's pool, a /dev/krpc
 * file) in its own context, as a socket's busy polling runs NAPI from
 * recvmsg().  The receive completion is then handled as soon as the device
 * posts it, on the waiter's CPU: no interrupt, no tasklet queued behind the
 * sender's work, no poller thread that needs a CPU of its own.  A process
 * never reaps another file's or a kernel client's CQs: it would spend its
 * time slice on their completion handlers.  A CQ a process reaped stays
 * deferred for KRPC_BUSY_GRACE after: its poller leaves it unarmed, does
 * not spin for it, and looks at it at least once a tick (NAPI's deferred
 * interrupts with a flush timeout do the same), as a poller woken per
 * completion would take the CPU the process spins on.  The poller serves
 * its other CQs as usual meanwhile.
 *
 * Context: completion handlers run in the poller's process context with
 * bottom halves disabled, so they see what a softirq handler sees (they
 * must not sleep; conn->lock is a _bh lock).  Locking: pollers_lock
 * (mutex) guards the set of pollers; each poller's mutex guards its CQ
 * list and is held by the poller across one pass, so a CQ taken off the
 * list is never polled again.  The completion handler only wakes the
 * poller and may run in any context.
 */
#include <linux/cpumask.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/math64.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/sched/isolation.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "pool.h"
#include "rdma.h"

#define KRPC_POLL_BUDGET	64	/* per CQ per pass */
/*
 * The adaptive spin is this many times the longest gap of the last one or
 * two windows of this many passes that found completions.
 */
#define KRPC_POLL_ADAPT_MULT	2
#define KRPC_POLL_ADAPT_WINDOW	32
/* Jiffies after a process last reaped a CQ that its poller still defers. */
#define KRPC_BUSY_GRACE		2

/**
 * struct krpc_poller - one polling thread
 * @task:	the thread
 * @lock:	@cqs; held across a pass
 * @cqs:	CQs served (struct krpc_pcq)
 * @nr_cqs:	entries on @cqs
 * @cpu:	CPU it was made affine to at start, or -1 (unbound)
 * @reaped:	completions reaped from @cqs, by the thread or by busy
 *		polling processes (under @lock; read locklessly by debugfs)
 * @gap_max:	longest gap between passes that found completions, in the
 *		current window ([0]) and the one before ([1]) (poller only)
 * @gap_n:	passes that found completions in the current window
 * @spin_ns:	the spin in use (written by the poller, read locklessly
 *		by debugfs)
 * @wc:		completions of one ib_poll_cq() (poller only)
 */
struct krpc_poller {
	struct task_struct *task;
	struct mutex lock;
	struct list_head cqs;
	unsigned int nr_cqs;
	int cpu;
	u64 reaped;
	u64 gap_max[2];
	unsigned int gap_n;
	u64 spin_ns;
	struct ib_wc wc[KRPC_REAP_BATCH];
};

/**
 * struct krpc_pcq - a polled CQ
 * @node:	entry in @poller->cqs
 * @cq:		the CQ (ib_create_cq(): not from the shared pool)
 * @poller:	the thread that serves it
 * @owner:	who may busy-poll it: krpc_pool.busy_owner of the connection's
 *		pool (NULL: nobody, a kernel client's); compared, never
 *		dereferenced
 * @busy_until:	get_jiffies_64() until which the poller defers to busy
 *		polling (written by the process under @poller->lock, read by
 *		the poller under it too)
 * @conn_id:	connection, for log lines
 */
struct krpc_pcq {
	struct list_head node;
	struct ib_cq *cq;
	struct krpc_poller *poller;
	const void *owner;
	u64 busy_until;
	u32 conn_id;
};

static DEFINE_MUTEX(pollers_lock);	/* @pollers, @nr_pollers */
static struct krpc_poller *pollers;
static unsigned int nr_pollers;
/*
 * Pollers a busy-polling process may use: published (release) once all
 * started, cleared only at module exit, when no file is open.
 */
static unsigned int nr_live;

/* A process reaped @pcq a moment ago: leave it to it.  Under its lock. */
static bool pcq_deferred(const struct krpc_pcq *pcq)
{
	return time_before64(get_jiffies_64(), pcq->busy_until);
}

/* Reap up to @budget completions of @pcq. */
static int poll_cq(struct krpc_poller *p, struct krpc_pcq *pcq, int budget)
{
	return krpc_rdma_reap_cq(pcq->cq, p->wc, budget, pcq->conn_id);
}

/*
 * Arm every CQ not deferred to busy polling; false if one reports
 * completions that arrived meanwhile, or cannot be armed (then the poller
 * must not sleep: nothing would wake it for that CQ).  *@deferred tells
 * whether a CQ was left unarmed.  Caller holds @p->lock.
 */
static bool arm_all(struct krpc_poller *p, bool *deferred)
{
	struct krpc_pcq *pcq;
	bool quiet = true;
	int ret;

	*deferred = false;
	list_for_each_entry(pcq, &p->cqs, node) {
		if (pcq_deferred(pcq)) {
			*deferred = true;
			continue;
		}
		ret = ib_req_notify_cq(pcq->cq, IB_CQ_NEXT_COMP |
				       IB_CQ_REPORT_MISSED_EVENTS);
		if (ret < 0)
			pr_err_ratelimited("conn %u: ib_req_notify_cq: %d\n",
					   pcq->conn_id, ret);
		if (ret)
			quiet = false;
	}
	return quiet;
}

/*
 * One pass over every CQ.  Completions of CQs deferred to busy polling
 * are reaped (once a tick at least, whoever's they are) but do not keep
 * the poller spinning; they count in *@reaped only.  Returns the others.
 * Bottom halves are disabled for one CQ's budget at a time, so that a
 * poller serving many connections holds other softirqs of its CPU (network
 * receive, timers; Soft-RoCE's tasklets) back for no longer than that.
 */
static int poll_pass(struct krpc_poller *p, int *reaped)
{
	struct krpc_pcq *pcq;
	int n = 0, m;

	*reaped = 0;
	list_for_each_entry(pcq, &p->cqs, node) {
		local_bh_disable();
		m = poll_cq(p, pcq, KRPC_POLL_BUDGET);
		local_bh_enable();
		*reaped += m;
		if (!pcq_deferred(pcq))
			n += m;
	}
	return n;
}

/*
 * The spin after a pass that found completions at @now, the previous one
 * having found some at @found: poll_usecs if set, else adaptive (see the
 * top of this file).
 */
static u64 poller_spin(struct krpc_poller *p, u64 now, u64 found)
{
	const u64 min = (u64)KRPC_POLL_USECS_DEFAULT * NSEC_PER_USEC;
	const u64 max = (u64)KRPC_POLL_USECS_ADAPT_MAX * NSEC_PER_USEC;
	unsigned int fixed = krpc_param(poll_usecs);
	u64 gap = now - found;

	if (fixed)
		return (u64)fixed * NSEC_PER_USEC;
	/* A pause, not a round trip: it counts, and raises nothing. */
	if (gap > max)
		gap = 0;
	if (++p->gap_n > KRPC_POLL_ADAPT_WINDOW) {
		p->gap_max[1] = p->gap_max[0];
		p->gap_max[0] = 0;
		p->gap_n = 1;
	}
	p->gap_max[0] = max(p->gap_max[0], gap);
	return clamp_t(u64, max(p->gap_max[0], p->gap_max[1]) *
		       KRPC_POLL_ADAPT_MULT, min, max);
}

static int poller_fn(void *data)
{
	struct krpc_poller *p = data;
	u64 last = local_clock(), found = last;

	WRITE_ONCE(p->spin_ns, poller_spin(p, last, last));
	while (!kthread_should_stop()) {
		bool deferred;
		u64 now;
		int n, reaped;

		mutex_lock(&p->lock);
		n = poll_pass(p, &reaped);
		if (reaped) {
			WRITE_ONCE(p->reaped, p->reaped + reaped);
			atomic64_add(reaped, &krpc_stats.cq_polled);
		}
		now = local_clock();
		if (n) {
			WRITE_ONCE(p->spin_ns, poller_spin(p, now, found));
			last = found = now;
		} else if (now - last >= READ_ONCE(p->spin_ns)) {
			/*
			 * Idle for poll_usecs: arm, then sleep; for a tick
			 * only while a CQ is deferred to a busy poller.
			 */
			set_current_state(TASK_IDLE);
			if (!kthread_should_stop() && arm_all(p, &deferred)) {
				mutex_unlock(&p->lock);
				if (deferred) {
					/* A completion on an armed CQ ends it. */
					atomic64_inc(&krpc_stats.poll_defers);
					schedule_timeout(1);
					continue;
				}
				atomic64_inc(&krpc_stats.poll_sleeps);
				schedule();
				last = local_clock();
				continue;
			}
			__set_current_state(TASK_RUNNING);
		}
		mutex_unlock(&p->lock);
		/*
		 * Under steady traffic the poller never sleeps, and a plain
		 * cond_resched() gives RCU Tasks no quiescent state: tracing
		 * and BPF detach (synchronize_rcu_tasks()) would wait for the
		 * traffic to stop.  As threaded NAPI does.
		 */
		cond_resched_tasks_rcu_qs();
	}
	return 0;
}

/* Any context (hard IRQ on hardware, a tasklet on Soft-RoCE). */
static void pcq_comp_handler(struct ib_cq *cq, void *ctx)
{
	struct krpc_pcq *pcq = ctx;

	wake_up_process(pcq->poller->task);
}

static void pcq_event_handler(struct ib_event *ev, void *ctx)
{
	struct krpc_pcq *pcq = ctx;

	pr_err("conn %u: CQ event: %s\n", pcq->conn_id,
	       ib_event_msg(ev->event));
}

static void pollers_stop_locked(void)
{
	unsigned int i;

	lockdep_assert_held(&pollers_lock);
	WRITE_ONCE(nr_live, 0);
	for (i = 0; i < nr_pollers; i++) {
		WARN_ON_ONCE(pollers[i].nr_cqs);
		kthread_stop(pollers[i].task);
	}
	kfree(pollers);
	pollers = NULL;
	nr_pollers = 0;
}

/*
 * Make poller @i of several affine to the (@i mod n)-th of the n online
 * CPUs that kernel threads may use (housekeeping: not isolated).  Not
 * bound (kthread_bind() would lock the affinity): it may be moved.  On
 * failure (a CPU going offline meanwhile) it stays unbound and says so.
 */
static void poller_place(struct krpc_poller *p, unsigned int i)
{
	const struct cpumask *hk = housekeeping_cpumask(HK_TYPE_KTHREAD);
	unsigned int n = cpumask_weight_and(cpu_online_mask, hk), cpu;
	int ret;

	if (!n)
		return;
	cpu = cpumask_nth_and(i % n, cpu_online_mask, hk);
	ret = cpu < nr_cpu_ids ? set_cpus_allowed_ptr(p->task, cpumask_of(cpu)) :
				 -ENODEV;
	if (ret) {
		pr_warn("poller %u: not placed on CPU %u: %d; unbound\n", i, cpu,
			ret);
		return;
	}
	p->cpu = cpu;
}

/* Start poll_threads pollers on first use.  Caller holds pollers_lock. */
static int pollers_start_locked(void)
{
	unsigned int i, n = krpc_param(poll_threads);
	struct krpc_poller *p;
	int ret;

	lockdep_assert_held(&pollers_lock);
	if (pollers)
		return 0;
	pollers = kcalloc(n, sizeof(*pollers), GFP_KERNEL);
	if (!pollers)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		p = &pollers[i];
		mutex_init(&p->lock);
		INIT_LIST_HEAD(&p->cqs);
		p->task = kthread_create(poller_fn, p, "krpc_poll/%u", i);
		if (IS_ERR(p->task)) {
			ret = PTR_ERR(p->task);
			pr_err("poller %u: kthread_create: %d\n", i, ret);
			goto out_stop;
		}
		nr_pollers++;
		p->cpu = -1;
		if (n > 1)
			poller_place(p, i);
		wake_up_process(p->task);
	}
	/* Pairs with krpc_rdma_busy_poll(): @pollers is complete. */
	smp_store_release(&nr_live, nr_pollers);
	return 0;

out_stop:
	pollers_stop_locked();
	return ret;
}

/**
 * krpc_rdma_poll_cq_create - give @rc a CQ of its own, served by a poller
 * @rc: connection whose resources are being made (process context)
 *
 * Return: 0 with @rc->cq set, or a negative errno.
 */
int krpc_rdma_poll_cq_create(struct krpc_rdma_conn *rc)
{
	struct ib_cq_init_attr attr = {
		.cqe = rc->cq_size,
		.comp_vector = rc->conn->id % rc->ibdev->num_comp_vectors,
	};
	struct krpc_poller *p;
	struct krpc_pcq *pcq;
	struct ib_cq *cq;
	unsigned int i;
	int ret;

	pcq = kzalloc(sizeof(*pcq), GFP_KERNEL);
	if (!pcq)
		return -ENOMEM;
	pcq->conn_id = rc->conn->id;
	/* The pool is known by now (krpc_rdma_setup()) and outlives @rc. */
	pcq->owner = rc->conn->pool->busy_owner;

	mutex_lock(&pollers_lock);
	ret = pollers_start_locked();
	if (ret)
		goto out_unlock;
	/* The least loaded poller; nr_cqs changes under pollers_lock only. */
	p = &pollers[0];
	for (i = 1; i < nr_pollers; i++)
		if (pollers[i].nr_cqs < p->nr_cqs)
			p = &pollers[i];
	pcq->poller = p;

	cq = ib_create_cq(rc->ibdev, pcq_comp_handler, pcq_event_handler, pcq,
			  &attr);
	if (IS_ERR(cq)) {
		ret = PTR_ERR(cq);
		goto out_unlock;
	}
	pcq->cq = cq;
	mutex_lock(&p->lock);
	list_add_tail(&pcq->node, &p->cqs);
	p->nr_cqs++;
	mutex_unlock(&p->lock);
	mutex_unlock(&pollers_lock);
	/* Not armed yet: the poller's next pass finds it. */
	wake_up_process(p->task);
	rc->cq = cq;
	rc->pcq = pcq;
	return 0;

out_unlock:
	mutex_unlock(&pollers_lock);
	kfree(pcq);
	return ret;
}

/**
 * krpc_rdma_poll_cq_destroy - stop polling @rc's CQ and destroy it
 * @rc: connection whose QP is already destroyed (process context)
 */
void krpc_rdma_poll_cq_destroy(struct krpc_rdma_conn *rc)
{
	struct krpc_pcq *pcq = rc->pcq;
	struct krpc_poller *p = pcq->poller;

	mutex_lock(&pollers_lock);
	mutex_lock(&p->lock);
	list_del(&pcq->node);
	p->nr_cqs--;
	mutex_unlock(&p->lock);
	mutex_unlock(&pollers_lock);
	/* No handler runs once this returns: pcq can go. */
	ib_destroy_cq(pcq->cq);
	kfree(pcq);
	rc->pcq = NULL;
	rc->cq = NULL;
}

/**
 * krpc_rdma_busy_poll - reap the caller's polled CQs once, in its context
 * @owner:	whose connections: the krpc_pool.busy_owner of their pools
 *		(not NULL)
 * @stop:	true ends the pass (checked after each batch)
 * @arg:	for @stop
 *
 * Only CQs of connections whose pool @owner owns are reaped; each one is
 * deferred to busy polling for KRPC_BUSY_GRACE from now (its poller leaves
 * it unarmed and looks at least once a tick).  @stop is checked after each
 * batch of at most KRPC_REAP_BATCH, so that the pass ends as soon as the
 * caller's wait is over: what it leaves (other CQs, the rest of this one)
 * is reaped by the next pass, off the path of the reply.  Batches, not single
 * completions: a deep queue still takes many completions per pass.  A
 * poller whose lock is taken (by its thread or another process) is
 * skipped: its CQs are being reaped already, or are not ours.
 *
 * Context: process context; completion handlers run with bottom halves
 * disabled, as in a poller thread.
 * Return: completions reaped.
 */
int krpc_rdma_busy_poll(const void *owner, bool (*stop)(void *arg), void *arg)
{
	struct krpc_pcq *pcq;
	struct krpc_poller *p;
	unsigned int i, n, k;
	bool over = false;
	int m, before, done = 0;

	/* Acquire: pairs with pollers_start_locked(); @pollers is whole. */
	n = smp_load_acquire(&nr_live);
	for (i = 0; i < n && !over; i++) {
		p = &pollers[i];
		if (!mutex_trylock(&p->lock))
			continue;
		before = done;
		local_bh_disable();
		list_for_each_entry(pcq, &p->cqs, node) {
			if (pcq->owner != owner)
				continue;
			pcq->busy_until = get_jiffies_64() + KRPC_BUSY_GRACE;
			for (k = 0; k < KRPC_POLL_BUDGET; k += m) {
				m = poll_cq(p, pcq, KRPC_REAP_BATCH);
				done += m;
				over = m && stop(arg);
				if (over || m < KRPC_REAP_BATCH)
					break;
			}
			if (over)
				break;
		}
		local_bh_enable();
		WRITE_ONCE(p->reaped, p->reaped + (done - before));
		mutex_unlock(&p->lock);
	}
	if (done)
		atomic64_add(done, &krpc_stats.busy_polled);
	return done;
}

/**
 * krpc_pollers_show - debugfs krpc/pollers: a line per poller thread
 * @m: the seq_file
 * @unused: unused
 *
 * "poller=N pid=P cpu=C|- cqs=K reaped=R spin_us=S": its thread, the CPU
 * it was placed on at start ("-": unbound, the only poller), the polled
 * CQs it serves, the completions reaped from them (by it or by busy
 * polling) and its spin after the last pass that found some.
 *
 * Return: 0.
 */
int krpc_pollers_show(struct seq_file *m, void *unused)
{
	struct krpc_poller *p;
	unsigned int i;

	mutex_lock(&pollers_lock);
	for (i = 0; i < nr_pollers; i++) {
		p = &pollers[i];
		seq_printf(m, "poller=%u pid=%d cpu=", i, task_pid_nr(p->task));
		if (p->cpu < 0)
			seq_puts(m, "-");
		else
			seq_printf(m, "%d", p->cpu);
		/* nr_cqs changes under pollers_lock only */
		seq_printf(m, " cqs=%u reaped=%llu spin_us=%llu\n", p->nr_cqs,
			   (unsigned long long)READ_ONCE(p->reaped),
			   (unsigned long long)div_u64(READ_ONCE(p->spin_ns),
						       NSEC_PER_USEC));
	}
	mutex_unlock(&pollers_lock);
	return 0;
}

/* Module exit, after every connection is gone: stop the pollers. */
void krpc_rdma_poll_exit(void)
{
	mutex_lock(&pollers_lock);
	if (pollers)
		pollers_stop_locked();
	mutex_unlock(&pollers_lock);
}
