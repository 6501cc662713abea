// SPDX-License-Identifier: GPL-2.0
/* hrtimer_setup() (6.13): hrtimer_init() and ->function in one call. */
#include <linux/module.h>
#include <linux/hrtimer.h>
static enum hrtimer_restart krpc_probe_fn(struct hrtimer *t)
{
	return HRTIMER_NORESTART;
}

void krpc_probe(struct hrtimer *t);
void krpc_probe(struct hrtimer *t)
{
	hrtimer_setup(t, krpc_probe_fn, CLOCK_MONOTONIC, HRTIMER_MODE_REL_SOFT);
}
MODULE_LICENSE("GPL");
