// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libkrpc: device access.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "libkrpc.h"

/* The ABI is pinned by offsets, not only by size. */
_Static_assert(sizeof(struct krpc_info) == KRPC_INFO_SIZE_VER0, "krpc_info size");
_Static_assert(offsetof(struct krpc_info, features) == 8, "krpc_info.features");
_Static_assert(offsetof(struct krpc_info, nr_devices) == 16, "krpc_info.nr_devices");
_Static_assert(offsetof(struct krpc_info, version) == 24, "krpc_info.version");

int krpc_dev_open(unsigned int flags)
{
	int fd;

	if (flags & ~KRPC_OPEN_F_ALL)
		return -EINVAL;
	fd = open("/dev/" KRPC_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int krpc_dev_info(int fd, struct krpc_info *info)
{
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	if (ioctl(fd, KRPC_IOC_GET_INFO, info) < 0)
		return -errno;
	return 0;
}
