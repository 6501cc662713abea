// SPDX-License-Identifier: GPL-2.0
/* uring_cmd declarations moved to <linux/io_uring/cmd.h> (6.8). */
#include <linux/io_uring/cmd.h>
MODULE_LICENSE("GPL");
