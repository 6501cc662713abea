// SPDX-License-Identifier: GPL-2.0
/* task_struct.in_execve: set for the whole of bprm_execve(), gone in 6.8. */
#include <linux/module.h>
#include <linux/sched.h>

int krpc_probe(struct task_struct *t);
int krpc_probe(struct task_struct *t)
{
	return t->in_execve;
}
MODULE_LICENSE("GPL");
