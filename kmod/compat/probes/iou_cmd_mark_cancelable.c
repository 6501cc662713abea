// SPDX-License-Identifier: GPL-2.0
/* io_uring_cmd_mark_cancelable() and IO_URING_F_CANCEL (6.7). */
#include <linux/module.h>
#if __has_include(<linux/io_uring/cmd.h>)
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif
void krpc_probe(struct io_uring_cmd *cmd, unsigned int flags);
void krpc_probe(struct io_uring_cmd *cmd, unsigned int flags)
{
	if (!(flags & IO_URING_F_CANCEL))
		io_uring_cmd_mark_cancelable(cmd, flags);
}
MODULE_LICENSE("GPL");
