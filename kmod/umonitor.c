// SPDX-License-Identifier: GPL-2.0
/*
 * Dying-task monitor, for kernels without the uring_cmd cancel hook
 * (IO_URING_F_CANCEL, 6.7).  There, a task that exits with commands parked
 * in a driver waits in io_uring's exit path until they complete, and a
 * FETCH may never complete by itself.  As ublk did before 6.7, a delayed
 * work looks at the issuer of every parked command while any is parked and
 * cancels the commands of a task that is exiting (PF_EXITING) or whose
 * thread group is (SIGNAL_GROUP_EXIT: covers the SQPOLL thread and io-wq
 * workers, which belong to the submitter's group), or that is in execve()
 * or whose group is (which waits for them the same way).
 *
 * A ring closed while its task lives on cannot be noticed this way: its
 * FETCHes stay parked until KRPC_IOC_CLOSE of their server or exit.
 *
 * The work belongs to the file; release stops it, and no command is parked
 * by then (each holds a file reference).
 */
#include <linux/sched.h>
#include <linux/sched/signal.h>

#include "krpc_priv.h"
#include "ufile.h"

#define MONITOR_PERIOD		(HZ / 10)
#define MONITOR_BATCH		32

bool krpc_umonitor_needed(void)
{
#ifdef KRPC_HAVE_IOU_CMD_MARK_CANCELABLE
	return false;
#else
	return true;
#endif
}

/*
 * An exec counts too.  6.1's execve() waits in io_uring_task_cancel() for
 * every request of the task, a parked FETCH included (in_execve); before
 * that, de_thread() kills the group's other threads (group_exec_task),
 * and an SQPOLL thread that issued commands waits for them before it
 * exits, which de_thread() waits for.
 */
static bool task_dying(struct task_struct *t)
{
	return (READ_ONCE(t->flags) & PF_EXITING) ||
	       (READ_ONCE(t->signal->flags) & SIGNAL_GROUP_EXIT) ||
	       READ_ONCE(t->signal->group_exec_task) ||
	       krpc_task_in_execve(t);
}

static void monitor_work(struct work_struct *work)
{
	struct krpc_file *kf = container_of(to_delayed_work(work),
					    struct krpc_file, monitor);
	struct krpc_ucmd *batch[MONITOR_BATCH], *uc;
	unsigned int n = 0, i;
	unsigned long flags;
	bool more = false;

	/* Commands of completion queues have no issuer: not watched. */
	spin_lock_irqsave(&kf->parked_lock, flags);
	list_for_each_entry(uc, &kf->parked, node) {
		if (!uc->task)
			continue;
		more = true;
		if (n == MONITOR_BATCH || !task_dying(uc->task))
			continue;
		kref_get(&uc->ref);
		batch[n++] = uc;
	}
	spin_unlock_irqrestore(&kf->parked_lock, flags);

	for (i = 0; i < n; i++) {
		krpc_ucmd_cancel(batch[i]);
		krpc_ucmd_put(batch[i]);
	}
	if (more)
		queue_delayed_work(krpc_wq, &kf->monitor, MONITOR_PERIOD);
}

void krpc_umonitor_init(struct krpc_file *kf)
{
	INIT_DELAYED_WORK(&kf->monitor, monitor_work);
}

/* A command with an issuer task was parked.  Any context. */
void krpc_umonitor_arm(struct krpc_file *kf)
{
	queue_delayed_work(krpc_wq, &kf->monitor, MONITOR_PERIOD);
}

void krpc_umonitor_stop(struct krpc_file *kf)
{
	cancel_delayed_work_sync(&kf->monitor);
}
