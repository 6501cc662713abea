/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * libkrpc: userspace access to krpc (/dev/krpc).
 *
 * Every function returns 0 or a non-negative value on success and -errno on
 * failure; errno is never the channel for errors.
 */
#ifndef LIBKRPC_H
#define LIBKRPC_H

#include <linux/krpc.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Flags for krpc_dev_open(). */
#define KRPC_OPEN_F_ALL		0U

/**
 * krpc_dev_open() - open /dev/krpc
 * @flags: 0 (no flag is defined yet; others give -EINVAL)
 *
 * Each open file is a separate context: pools, connections and servers
 * created through it are private to it and go away when it is closed.
 *
 * Return: a file descriptor (close it with close(2)), or -errno:
 * -ENOENT when krpc is not loaded, -EACCES without permission on the node.
 */
int krpc_dev_open(unsigned int flags);

/**
 * krpc_dev_info() - query the module behind an open /dev/krpc
 * @fd:   from krpc_dev_open()
 * @info: filled in; any content on entry is ignored
 *
 * Return: 0, or -errno (-ENOTTY when @fd is not /dev/krpc).
 */
int krpc_dev_info(int fd, struct krpc_info *info);

#ifdef __cplusplus
}
#endif

#endif /* LIBKRPC_H */
