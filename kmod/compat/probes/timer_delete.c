// SPDX-License-Identifier: GPL-2.0
/*
 * timer_delete() and timer_delete_sync() (6.2, and Debian's 6.1 by
 * backport) replaced del_timer() and del_timer_sync(), which later
 * kernels dropped.
 */
#include <linux/module.h>
#include <linux/timer.h>

int krpc_probe(struct timer_list *t);
int krpc_probe(struct timer_list *t)
{
	return timer_delete(t) + timer_delete_sync(t);
}
MODULE_LICENSE("GPL");
