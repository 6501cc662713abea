// SPDX-License-Identifier: GPL-2.0
/* io_uring_cmd_done(cmd, ret, res2, issue_flags) (6.3, backported to 6.1.y). */
#include <linux/module.h>
#if __has_include(<linux/io_uring/cmd.h>)
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif
void krpc_probe(struct io_uring_cmd *cmd);
void krpc_probe(struct io_uring_cmd *cmd)
{
	io_uring_cmd_done(cmd, 0, 0, 0);
}
MODULE_LICENSE("GPL");
