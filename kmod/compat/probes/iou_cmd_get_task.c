// SPDX-License-Identifier: GPL-2.0
/* io_uring_cmd_get_task(): the task a command belongs to (6.12). */
#include <linux/module.h>
#if __has_include(<linux/io_uring/cmd.h>)
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif
struct task_struct *krpc_probe(struct io_uring_cmd *cmd);
struct task_struct *krpc_probe(struct io_uring_cmd *cmd)
{
	return io_uring_cmd_get_task(cmd);
}
MODULE_LICENSE("GPL");
