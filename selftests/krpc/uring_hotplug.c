// SPDX-License-Identifier: GPL-2.0
/*
 * The RDMA device goes away ("rdma link del") while processes hold pools
 * mapped from it, with a call in flight: the call fails with -ENODEV, every
 * DMA mapping of every pool on the device is gone by the time the removal
 * returns (the dma_mapped counter is back to zero while the pools still
 * exist), the pages stay readable through the processes' mappings, the dead
 * pools hand out no buffer and cannot be used for a new connection, and a
 * new device with the same name works again.  A device used by processes
 * only never allocates the kernel clients' default pool.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "uring_lib.h"
#include "kselftest_harness.h"

#define PORT	7107

FIXTURE(hotplug) {
	int dummy;
};

FIXTURE_SETUP(hotplug)
{
	ASSERT_EQ(0, krpc_insmod(""));
}

FIXTURE_TEARDOWN(hotplug)
{
	/* The rest of the suite expects the test bed's device back. */
	sh("rdma link show \"$KRPC_RXE/1\" >/dev/null 2>&1 || "
	   "rdma link add \"$KRPC_RXE\" type rxe netdev \"$KRPC_NETDEV\"");
	EXPECT_EQ(0, krpc_counter_wait("calls_live", 0, 5000));
	EXPECT_EQ(0, krpc_counter_wait("files_open", 0, 5000));
	EXPECT_EQ(0, krpc_counter_wait("pools", 0, 5000));
	EXPECT_EQ(0, krpc_counter_wait("dma_mapped", 0, 5000));
	EXPECT_EQ(0, sh("rmmod krpc"));
}

TEST_F_TIMEOUT(hotplug, device_removed_under_user_pools, 180)
{
	struct io_uring_cqe *cqe;
	struct echo_clnt c, c2;
	struct krpc_pool p2;
	struct sockaddr_in sin;
	struct echo_srv e;
	uint32_t kept, tx;

	ASSERT_EQ(0, echo_start(&e, PORT, 8, 64));
	ASSERT_EQ(0, clnt_start(&c, TEST_ADDR, PORT, 64, 0, 16));
	ASSERT_EQ(0, echo_once(&c, 1, 4096));
	ASSERT_LT(0, krpc_counter("dma_mapped"));
	/* Processes bring their own pools: no device default pool. */
	EXPECT_EQ(2, krpc_counter("pools"));

	/* A buffer the process keeps across the removal. */
	ASSERT_EQ(1, krpc_buf_alloc(c.k.fd, &c.pool, &kept, 1));
	fill(krpc_pool_buf(&c.pool, kept), 7, BUF_SIZE);

	/* A call parked in the server when the device goes. */
	ASSERT_EQ(1, krpc_buf_alloc(c.k.fd, &c.pool, &tx, 1));
	fill(krpc_pool_buf(&c.pool, tx), 8, 3000);
	krpc_prep_call(&c.k, io_uring_get_sqe(c.k.ring), c.conn, M_HOLD, tx,
		       3000, 0, 0, 42);
	ASSERT_EQ(1, io_uring_submit(c.k.ring));
	ASSERT_EQ(1, krpc_counter_wait("reqs_live", 1, 10000));

	ASSERT_EQ(0, sh("rdma link del \"$KRPC_RXE\""));
	/* Synchronous: every pool on the device is unmapped already. */
	EXPECT_EQ(0, krpc_counter("dma_mapped"));
	EXPECT_EQ(2, krpc_counter("pools"));

	ASSERT_EQ(0, io_uring_wait_cqe(c.k.ring, &cqe));
	EXPECT_EQ(42, cqe->user_data);
	EXPECT_EQ(-ENODEV, cqe->res);
	/* The request buffer is the process's again. */
	EXPECT_EQ(KRPC_BUF_NONE, KRPC_RES2_BUF(krpc_cqe_res2(cqe)));
	io_uring_cqe_seen(c.k.ring, cqe);
	EXPECT_EQ(-1, check_pattern(krpc_pool_buf(&c.pool, tx), 8, 3000));
	EXPECT_EQ(0, krpc_buf_free(c.k.fd, &c.pool, &tx, 1));

	/* The pages outlive their DMA mappings. */
	EXPECT_EQ(-1, check_pattern(krpc_pool_buf(&c.pool, kept), 7,
				    BUF_SIZE));
	EXPECT_EQ(0, krpc_buf_free(c.k.fd, &c.pool, &kept, 1));
	/* A dead pool hands out nothing. */
	EXPECT_EQ(-ENODEV, krpc_buf_alloc(c.k.fd, &c.pool, &tx, 1));
	/* The connection is gone. */
	EXPECT_EQ(-ENODEV, echo_once(&c, 2, 100));
	/* No device of that name any more. */
	EXPECT_EQ(-ENODEV, krpc_pool_create(c.k.fd, "rxe0", BUF_SIZE, 4, &p2));

	/* A new device under the same name: a dead pool cannot use it. */
	ASSERT_EQ(0, sh("rdma link add \"$KRPC_RXE\" type rxe netdev "
			"\"$KRPC_NETDEV\""));
	ASSERT_EQ(0, krpc_close_handle(c.k.fd, c.conn));
	sin_of(&sin, TEST_ADDR, PORT);
	c.conn = krpc_connect(&c.k, &c.pool, (struct sockaddr *)&sin,
			      sizeof(sin), 16);
	EXPECT_EQ(-ENODEV, c.conn);

	/* A fresh server and client on the new device work. */
	EXPECT_EQ(0, echo_stop(&e));
	clnt_stop(&c);
	ASSERT_EQ(0, krpc_counter_wait("pools", 0, 5000));
	ASSERT_EQ(0, echo_start(&e, PORT, 8, 64));
	ASSERT_EQ(0, clnt_start(&c2, TEST_ADDR, PORT, 64, 0, 16));
	EXPECT_EQ(0, echo_once(&c2, 3, 65536));
	clnt_stop(&c2);
	EXPECT_EQ(0, echo_stop(&e));
}

TEST_HARNESS_MAIN
