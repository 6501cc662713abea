/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * krpc userspace ABI: the ioctls and io_uring commands of /dev/krpc.
 *
 * Rules for every structure here: fixed-width types only, __u64 for
 * pointers, explicit padding, reserved fields must be zero (the kernel
 * answers -EINVAL otherwise).  Structures that carry a leading "size" field
 * are extensible: the kernel accepts any size it knows or a larger one whose
 * tail is zero (copy_struct_from_user()), and writes back at most the size
 * the caller gave.  This header compiles alone with -std=c90.
 */
#ifndef _UAPI_LINUX_KRPC_H
#define _UAPI_LINUX_KRPC_H

#include <linux/types.h>
#include <linux/ioctl.h>

/* Bumped on incompatible changes only; features are announced by bits. */
#define KRPC_ABI_VERSION	1

/* Name of the misc device node: /dev/krpc. */
#define KRPC_DEVICE_NAME	"krpc"

/* ioctl type byte of /dev/krpc (see Documentation/userspace-api.rst). */
#define KRPC_IOC_MAGIC		0xb7

/*
 * Feature bits reported by KRPC_IOC_GET_INFO.  No bit is defined yet: every
 * bit the kernel sets is one that this header (or a newer one) documents.
 */
#define KRPC_FEAT_ALL		0ULL

/**
 * struct krpc_info - answer of KRPC_IOC_GET_INFO
 * @size:	in: sizeof(struct krpc_info) as the caller knows it (at least
 *		KRPC_INFO_SIZE_VER0); out: the number of bytes the kernel wrote
 * @abi_version: KRPC_ABI_VERSION of the running module
 * @features:	KRPC_FEAT_* bits the module supports
 * @nr_devices:	RDMA devices krpc currently sees (ib_client)
 * @reserved:	must be zero on input; zero on output
 * @version:	NUL-terminated module version string
 */
struct krpc_info {
	__u32 size;
	__u32 abi_version;
	__u64 features;
	__u32 nr_devices;
	__u32 reserved;
	char version[32];
};

#define KRPC_INFO_SIZE_VER0	56

#define KRPC_IOC_GET_INFO	_IOWR(KRPC_IOC_MAGIC, 0x00, struct krpc_info)

#endif /* _UAPI_LINUX_KRPC_H */
