// SPDX-License-Identifier: GPL-2.0
/*
 * libkrpc's ABI across struct krpc_pool's growth (KRPC_0.6): a program
 * built against the first libkrpc.h binds krpc_pool_create@KRPC_0.1, which
 * must write only the 32-byte structure such a program allocated; the
 * default krpc_pool_create@@KRPC_0.6 fills the whole one, its large-buffer
 * fields zero.  Linked against libkrpc.so (not the archive, where only the
 * default version exists).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "uring_lib.h"
#include "kselftest_harness.h"

/* struct krpc_pool as KRPC_0.1 knew it. */
struct krpc_pool_v01 {
	uint32_t handle;
	uint32_t buf_size;
	uint32_t count;
	void *base;
	size_t length;
};

int old_pool_create(int fd, const char *device, uint32_t buf_size,
		    uint32_t count, struct krpc_pool_v01 *pool);
__asm__(".symver old_pool_create,krpc_pool_create@KRPC_0.1");

TEST(pool_create_keeps_to_the_old_structure)
{
	struct {
		struct krpc_pool_v01 p;
		uint8_t after[16];
	} old;
	struct krpc_pool pool;
	unsigned int i;
	int fd;

	ASSERT_EQ(0, krpc_insmod(""));
	fd = krpc_dev_open(0);
	ASSERT_LE(0, fd);

	memset(&old, 0xa5, sizeof(old));
	ASSERT_EQ(0, old_pool_create(fd, NULL, BUF_SIZE, 4, &old.p));
	EXPECT_EQ(BUF_SIZE, old.p.buf_size);
	EXPECT_EQ(4, old.p.count);
	EXPECT_EQ(4ULL * BUF_SIZE, old.p.length);
	/* Nothing written past the old structure. */
	for (i = 0; i < sizeof(old.after); i++)
		EXPECT_EQ(0xa5, old.after[i]) TH_LOG("byte %u after", i);
	/* A working pool: mapped, every byte. */
	fill(old.p.base, 3, 4 * BUF_SIZE);
	EXPECT_EQ(-1, check_pattern(old.p.base, 3, 4 * BUF_SIZE));
	{
		struct krpc_pool as_new = {
			.handle = old.p.handle, .buf_size = old.p.buf_size,
			.count = old.p.count, .base = old.p.base,
			.length = old.p.length,
		};

		EXPECT_EQ(0, krpc_pool_destroy(fd, &as_new));
	}

	/* The default version fills the whole structure. */
	memset(&pool, 0xa5, sizeof(pool));
	ASSERT_EQ(0, krpc_pool_create(fd, NULL, BUF_SIZE, 2, &pool));
	EXPECT_EQ(0, pool.large_size);
	EXPECT_EQ(0, pool.large_count);
	EXPECT_EQ(2ULL * BUF_SIZE, pool.length);
	EXPECT_EQ(0, krpc_pool_destroy(fd, &pool));

	close(fd);
	EXPECT_EQ(0, krpc_counter_wait("files_open", 0, 5000));
	EXPECT_EQ(0, sh("rmmod krpc"));
}

TEST_HARNESS_MAIN
