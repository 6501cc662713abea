// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/krpc basics through libkrpc: open, KRPC_IOC_GET_INFO and its
 * extensible-struct rules, unknown ioctls, per-open contexts.
 * Needs krpc loaded (the "load" fixture does it from KRPC_BUILD).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "uring_lib.h"
#include "kselftest_harness.h"

FIXTURE(dev) {
	int fd;
};

FIXTURE_SETUP(dev)
{
	ASSERT_EQ(0, krpc_insmod(""));
	self->fd = krpc_dev_open(0);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(dev)
{
	if (self->fd >= 0)
		close(self->fd);
	EXPECT_EQ(0, sh("rmmod krpc"));
}

TEST_F(dev, node_is_root_only_char_device)
{
	struct stat st;

	ASSERT_EQ(0, stat("/dev/krpc", &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(0600, st.st_mode & 07777);
	EXPECT_EQ(10, (int)major(st.st_rdev));	/* misc */
}

TEST_F(dev, info_reports_module)
{
	struct krpc_info info;

	ASSERT_EQ(0, krpc_dev_info(self->fd, &info));
	EXPECT_EQ(sizeof(info), info.size);
	EXPECT_EQ(KRPC_ABI_VERSION, info.abi_version);
	EXPECT_EQ(0, info.features & ~KRPC_FEAT_ALL);
	EXPECT_EQ(1, info.nr_devices);		/* rxe0 of the test bed */
	EXPECT_STREQ("0.1.0", info.version);
	EXPECT_EQ(0, info.reserved);
}

TEST_F(dev, info_rejects_short_size)
{
	struct krpc_info info = { .size = KRPC_INFO_SIZE_VER0 - 1 };

	EXPECT_EQ(-1, ioctl(self->fd, KRPC_IOC_GET_INFO, &info));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(dev, info_rejects_nonzero_input_fields)
{
	struct krpc_info info = { .size = sizeof(info), .reserved = 1 };

	EXPECT_EQ(-1, ioctl(self->fd, KRPC_IOC_GET_INFO, &info));
	EXPECT_EQ(EINVAL, errno);
	memset(&info, 0, sizeof(info));
	info.size = sizeof(info);
	info.version[31] = 'x';
	EXPECT_EQ(-1, ioctl(self->fd, KRPC_IOC_GET_INFO, &info));
	EXPECT_EQ(EINVAL, errno);
}

/* A newer caller's larger struct is fine if its unknown tail is zero. */
TEST_F(dev, info_extensible_struct)
{
	struct {
		struct krpc_info info;
		__u64 future[4];
	} big;

	memset(&big, 0, sizeof(big));
	big.info.size = sizeof(big);
	ASSERT_EQ(0, ioctl(self->fd, KRPC_IOC_GET_INFO, &big));
	EXPECT_EQ(sizeof(struct krpc_info), big.info.size);
	EXPECT_EQ(KRPC_ABI_VERSION, big.info.abi_version);
	EXPECT_EQ(0, big.future[0]);

	memset(&big, 0, sizeof(big));
	big.info.size = sizeof(big);
	big.future[3] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, KRPC_IOC_GET_INFO, &big));
	EXPECT_EQ(E2BIG, errno);
}

/* A zero tail up to a page is taken; any size above a page is not. */
TEST_F(dev, info_size_at_most_a_page)
{
	long page = sysconf(_SC_PAGESIZE);
	struct krpc_info *info;

	info = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, info);
	info->size = page;
	ASSERT_EQ(0, ioctl(self->fd, KRPC_IOC_GET_INFO, info));
	EXPECT_EQ(sizeof(struct krpc_info), info->size);
	memset(info, 0, sizeof(*info));
	info->size = page + 1;
	EXPECT_EQ(-1, ioctl(self->fd, KRPC_IOC_GET_INFO, info));
	EXPECT_EQ(E2BIG, errno);
	memset(info, 0, sizeof(*info));
	info->size = 0xffffffff;
	EXPECT_EQ(-1, ioctl(self->fd, KRPC_IOC_GET_INFO, info));
	EXPECT_EQ(E2BIG, errno);
	munmap(info, 2 * page);
}

TEST_F(dev, info_bad_pointer)
{
	EXPECT_EQ(-1, ioctl(self->fd, KRPC_IOC_GET_INFO, (void *)8));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(dev, unknown_ioctl)
{
	EXPECT_EQ(-1, ioctl(self->fd, _IOWR(KRPC_IOC_MAGIC, 0x7f, struct krpc_info), NULL));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, ioctl(self->fd, 0, NULL));
	EXPECT_EQ(ENOTTY, errno);
}

TEST_F(dev, open_flags_and_wrong_fd)
{
	struct krpc_info info;
	int fd;

	EXPECT_EQ(-EINVAL, krpc_dev_open(1));
	fd = open("/dev/null", O_RDWR);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-ENOTTY, krpc_dev_info(fd, &info));
	close(fd);
}

/* An open file pins the module: rmmod must be refused, not crash. */
TEST_F(dev, open_file_pins_module)
{
	EXPECT_NE(0, sh("rmmod krpc 2>/dev/null"));
	EXPECT_EQ(0, access("/sys/module/krpc", F_OK));
}

TEST_HARNESS_MAIN
