// SPDX-License-Identifier: GPL-2.0
/* timer_container_of() (6.16) replaced from_timer(). */
#include <linux/module.h>
#include <linux/timer.h>

struct krpc_probe_obj {
	int x;
	struct timer_list timer;
};

int krpc_probe(struct timer_list *t);
int krpc_probe(struct timer_list *t)
{
	struct krpc_probe_obj *o = timer_container_of(o, t, timer);

	return o->x;
}
MODULE_LICENSE("GPL");
