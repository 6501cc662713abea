/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Force-included into every krpc object (see kmod/Kbuild).  config.h holds
 * the KRPC_HAVE_* answers of the compile probes in probes/; the shims below
 * are the only place where kernel differences are handled.
 */
#ifndef KRPC_COMPAT_H
#define KRPC_COMPAT_H

#include "config.h"
#include <linux/module.h>
#include <linux/export.h>

/* Symbol namespace: a bare identifier up to 6.12, a string from 6.13. */
#ifdef KRPC_HAVE_NS_UNQUOTED
#define KRPC_EXPORT(sym)	EXPORT_SYMBOL_NS_GPL(sym, KRPC)
#define KRPC_IMPORT_NS()	MODULE_IMPORT_NS(KRPC)
#else
#define KRPC_EXPORT(sym)	EXPORT_SYMBOL_NS_GPL(sym, "KRPC")
#define KRPC_IMPORT_NS()	MODULE_IMPORT_NS("KRPC")
#endif

/* vma->vm_flags became read-only to modules in 6.3. */
#ifndef KRPC_HAVE_VM_FLAGS_SET
#include <linux/mm.h>
static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}

static inline void vm_flags_clear(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags &= ~flags;
}
#endif

/* hrtimer_setup() (6.13) replaced hrtimer_init() + ->function. */
#ifndef KRPC_HAVE_HRTIMER_SETUP
#include <linux/hrtimer.h>
static inline void hrtimer_setup(struct hrtimer *timer,
				 enum hrtimer_restart (*function)(struct hrtimer *),
				 clockid_t clock_id, enum hrtimer_mode mode)
{
	hrtimer_init(timer, clock_id, mode);
	timer->function = function;
}
#endif

/*
 * timer_delete*() (6.2; Debian's 6.1 has them by backport) replaced
 * del_timer*(), which later kernels dropped.
 */
#ifndef KRPC_HAVE_TIMER_DELETE
#include <linux/timer.h>
static inline int timer_delete(struct timer_list *timer)
{
	return del_timer(timer);
}

static inline int timer_delete_sync(struct timer_list *timer)
{
	return del_timer_sync(timer);
}
#endif

/* timer_container_of() (6.16) replaced from_timer(). */
#ifndef KRPC_HAVE_TIMER_CONTAINER_OF
#include <linux/timer.h>
#define timer_container_of(var, callback_timer, timer_fieldname) \
	from_timer(var, callback_timer, timer_fieldname)
#endif

/*
 * task_struct.in_execve (set for the whole of bprm_execve()); a racy read,
 * polled by the dying-task monitor (umonitor.c).
 */
#include <linux/sched.h>
static inline bool krpc_task_in_execve(struct task_struct *t)
{
#ifdef KRPC_HAVE_TASK_IN_EXECVE
	/* Another task's bit-field, polled: a stale answer waits 100 ms. */
	return data_race((bool)t->in_execve);
#else
	return false;
#endif
}

#endif /* KRPC_COMPAT_H */
