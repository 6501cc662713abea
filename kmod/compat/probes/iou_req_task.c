// SPDX-License-Identifier: GPL-2.0
/*
 * The request behind a command names its task (io_kiocb->task in
 * <linux/io_uring_types.h>, 6.1), as io_uring_cmd_get_task() reads it.
 */
#include <linux/module.h>
#include <linux/io_uring_types.h>
struct task_struct *krpc_probe(struct io_uring_cmd *cmd);
struct task_struct *krpc_probe(struct io_uring_cmd *cmd)
{
	return cmd_to_io_kiocb(cmd)->task;
}
MODULE_LICENSE("GPL");
