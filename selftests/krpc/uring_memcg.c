// SPDX-License-Identifier: GPL-2.0
/*
 * What a process makes through /dev/krpc is charged to its memory cgroup:
 * completion queues (KRPC_IOC_CQ_CREATE, pages the kernel writes and the
 * process maps) and pools (registered buffers).  Without the charge a
 * process could pin gigabytes of kernel memory behind any cgroup limit
 * (64 queues of 132 KiB per open file, as many files as RLIMIT_NOFILE).
 *
 * The test moves itself into a cgroup of its own (cgroup2, mounted if
 * the test bed has not) and reads memory.current around each step: it
 * must grow by at least the memory made, less what the kernel's per-CPU
 * charge stocks can hide (SLACK), and shrink as much when the objects are
 * closed.  Skipped without the memory controller.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "uring_lib.h"
#include "kselftest_harness.h"

#define CGROOT		"/sys/fs/cgroup"
#define CG		CGROOT "/krpc-memcg"
#define NR_QUEUES	32
#define NR_BUFS		64
/*
 * Charges the kernel keeps in per-CPU stocks (MEMCG_CHARGE_BATCH, 64 pages
 * a CPU): a stock charged before the first reading can pay for pages made
 * after it, and pages freed can refill a stock instead of the counter.
 * Twice that, for both at once, plus slab's byte stocks; still far below
 * the megabytes the objects make.
 */
#define SLACK		((long long)sysconf(_SC_NPROCESSORS_ONLN) * 2 * 64 * 4096 + 65536)

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		ret = -errno;
	close(fd);
	return ret;
}

static long long memcg_current(void)
{
	long long v = -1;
	FILE *f = fopen(CG "/memory.current", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* 0 in the cgroup CG, 1 if the kernel has no memory controller, -errno. */
static int memcg_enter(void)
{
	char pid[32];
	int ret;

	if (access(CGROOT "/cgroup.controllers", F_OK) &&
	    sh("mount -t cgroup2 none " CGROOT))
		return 1;
	if (sh("grep -qw memory " CGROOT "/cgroup.controllers"))
		return 1;
	ret = write_str(CGROOT "/cgroup.subtree_control", "+memory");
	if (ret)
		return ret;
	if (mkdir(CG, 0755) && errno != EEXIST)
		return -errno;
	snprintf(pid, sizeof(pid), "%d", getpid());
	return write_str(CG "/cgroup.procs", pid);
}

static void memcg_leave(void)
{
	char pid[32];

	snprintf(pid, sizeof(pid), "%d", getpid());
	write_str(CGROOT "/cgroup.procs", pid);
	rmdir(CG);
}

FIXTURE(memcg) {
	int fd;
	bool skip;	/* no memory controller (the harness runs the body anyway) */
};

FIXTURE_SETUP(memcg)
{
	int ret;

	self->fd = -1;
	ret = memcg_enter();
	if (ret == 1) {
		self->skip = true;
		return;
	}
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, krpc_insmod(""));
	self->fd = krpc_dev_open(0);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(memcg)
{
	if (self->skip)
		return;
	if (self->fd >= 0)
		close(self->fd);
	memcg_leave();
	EXPECT_EQ(0, krpc_counter_wait("ucq_live", 0, 5000));
	EXPECT_EQ(0, krpc_counter_wait("files_open", 0, 5000));
	EXPECT_EQ(0, krpc_counter_wait("pools", 0, 5000));
	EXPECT_EQ(0, sh("rmmod krpc"));
}

TEST_F(memcg, queues_are_charged)
{
	struct krpc_cq cq[NR_QUEUES];
	long long before, made, after, want;
	size_t len = 0;
	int i;

	if (self->skip)
		SKIP(return, "no cgroup2 memory controller");
	before = memcg_current();
	ASSERT_LT(0, before);
	for (i = 0; i < NR_QUEUES; i++) {
		ASSERT_EQ(0, krpc_cq_create(self->fd, KRPC_CQ_ENTRIES_MAX, &cq[i]));
		len = cq[i].length;
	}
	made = memcg_current();
	want = (long long)len * NR_QUEUES;
	TH_LOG("%d queues of %zu bytes: memory.current %lld -> %lld (+%lld, want %lld)",
	       NR_QUEUES, len, before, made, made - before, want);
	EXPECT_LE(want - SLACK, made - before);

	for (i = 0; i < NR_QUEUES; i++)
		ASSERT_EQ(0, krpc_cq_destroy(self->fd, &cq[i]));
	EXPECT_EQ(0, krpc_counter_wait("ucq_live", 0, 5000));
	after = memcg_current();
	TH_LOG("closed: memory.current %lld (-%lld)", after, made - after);
	EXPECT_LE(want - SLACK, made - after);
}

TEST_F(memcg, pools_are_charged)
{
	long long before, made, after, want;
	struct krpc_pool pool;

	if (self->skip)
		SKIP(return, "no cgroup2 memory controller");
	before = memcg_current();
	ASSERT_LT(0, before);
	ASSERT_EQ(0, krpc_pool_create(self->fd, NULL, KRPC_POOL_BUF_MAX,
				      NR_BUFS, &pool));
	made = memcg_current();
	want = (long long)KRPC_POOL_BUF_MAX * NR_BUFS;
	TH_LOG("pool of %u x %u: memory.current %lld -> %lld (+%lld, want %lld)",
	       NR_BUFS, KRPC_POOL_BUF_MAX, before, made, made - before, want);
	EXPECT_LE(want - SLACK, made - before);

	ASSERT_EQ(0, krpc_pool_destroy(self->fd, &pool));
	EXPECT_EQ(0, krpc_counter_wait("pools", 0, 5000));
	after = memcg_current();
	TH_LOG("destroyed: memory.current %lld (-%lld)", after, made - after);
	EXPECT_LE(want - SLACK, made - after);
}

TEST_HARNESS_MAIN
