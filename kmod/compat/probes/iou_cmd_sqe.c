// SPDX-License-Identifier: GPL-2.0
/* struct io_uring_cmd carries ->sqe and io_uring_sqe_cmd() (6.4), not ->cmd. */
#include <linux/module.h>
#if __has_include(<linux/io_uring/cmd.h>)
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif
const void *krpc_probe(struct io_uring_cmd *cmd);
const void *krpc_probe(struct io_uring_cmd *cmd)
{
	return io_uring_sqe_cmd(cmd->sqe);
}
MODULE_LICENSE("GPL");
