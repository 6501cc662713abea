// SPDX-License-Identifier: GPL-2.0
/*
 * Pools of plain host memory: with no RDMA device at all ("rdma link del"
 * of the test bed's rxe), a user pool created with the device name "" is
 * host memory that only TCP connections can use.  Such pools are created
 * (counted in debugfs stats, none DMA-mapped; the ABI has no per-pool
 * query) and mapped, a user client echoes 0 bytes to 64 KiB over TCP,
 * asked for by name and by AUTO (which falls back), to a user server on
 * such a pool, byte for byte; an RDMA-only connect fails with -ENODEV
 * (rdma_cm finds no device for the address: RDMA_CM_EVENT_ADDR_ERROR);
 * nothing is ever DMA-mapped; and every pool, connection and call is gone
 * after the close.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "uring_lib.h"
#include "kselftest_harness.h"

#define PORT	7109

static const uint32_t sizes[] = {
	0, 1, 2, 63, 64, 100, 1000, 4095, 4096, 4097, 8192, 32768, 65535, 65536,
};

/*
 * Wait for every object of krpc to be gone; return the name of a counter
 * that is not back to zero, or NULL.
 */
static const char *left_over(void)
{
	static const char *const names[] = {
		"calls_live", "reqs_live", "conns_open", "files_open", "pools",
		"dma_mapped",
	};
	unsigned int i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (krpc_counter_wait(names[i], 0, 5000))
			return names[i];
	return NULL;
}

FIXTURE(hostmem) {
	int dummy;
};

FIXTURE_SETUP(hostmem)
{
	ASSERT_EQ(0, krpc_insmod(""));
	ASSERT_EQ(0, sh("rdma link del \"$KRPC_RXE\""));
	/* Servers and clients of this test: TCP, unless asked otherwise. */
	ASSERT_EQ(0, setenv("KRPC_TRANSPORT", "tcp", 1));
}

FIXTURE_TEARDOWN(hostmem)
{
	const char *left;

	/* The rest of the suite expects the test bed's device back. */
	EXPECT_EQ(0, sh("rdma link show \"$KRPC_RXE/1\" >/dev/null 2>&1 || "
			"rdma link add \"$KRPC_RXE\" type rxe netdev "
			"\"$KRPC_NETDEV\""));
	left = left_over();
	EXPECT_EQ(NULL, left) {
		TH_LOG("%s is not back to zero", left);
	}
	EXPECT_EQ(0, sh("rmmod krpc"));
}

TEST_F_TIMEOUT(hostmem, tcp_only_pool_without_rdma_device, 180)
{
	struct sockaddr_in sin;
	struct krpc_info info;
	struct krpc_pool p2;
	struct echo_clnt c;
	struct echo_srv e;
	long long fallbacks;
	uint32_t used, b, i;
	const char *left;

	memset(&c, 0, sizeof(c));
	ASSERT_EQ(0, krpc_open(&c.k, 64, 0));
	memset(&info, 0, sizeof(info));
	ASSERT_EQ(0, krpc_dev_info(c.k.fd, &info));
	ASSERT_EQ(0, info.nr_devices);
	ASSERT_TRUE(info.features & KRPC_FEAT_TCP);

	/* A user server on a host-memory pool, TCP only. */
	EXPECT_EQ(0, krpc_counter("pools"));
	ASSERT_EQ(0, echo_start(&e, PORT, 8, 64));
	EXPECT_EQ(1, krpc_counter("pools"));
	EXPECT_EQ(0, krpc_counter("dma_mapped"));

	/* The client's pool: "", host memory, mapped. */
	ASSERT_EQ(0, krpc_pool_create(c.k.fd, "", BUF_SIZE, 64, &c.pool));
	EXPECT_EQ(2, krpc_counter("pools"));
	EXPECT_EQ(0, krpc_counter("dma_mapped"));
	ASSERT_NE(NULL, c.pool.base);
	EXPECT_EQ((size_t)64 * BUF_SIZE, c.pool.length);
	/* A name that is no device is still -ENODEV. */
	EXPECT_EQ(-ENODEV, krpc_pool_create(c.k.fd, "rxe0", BUF_SIZE, 4, &p2));
	/* The mapping is the pool: a buffer written through it, read back. */
	ASSERT_EQ(1, krpc_buf_alloc(c.k.fd, &c.pool, &b, 1));
	fill(krpc_pool_buf(&c.pool, b), 5, BUF_SIZE);
	EXPECT_EQ(-1, check_pattern(krpc_pool_buf(&c.pool, b), 5, BUF_SIZE));
	EXPECT_EQ(0, krpc_buf_free(c.k.fd, &c.pool, &b, 1));

	sin_of(&sin, TEST_ADDR, PORT);
	/* RDMA only: rdma_cm finds no device for the address. */
	fallbacks = krpc_counter("tcp_fallbacks");
	EXPECT_EQ(-ENODEV, krpc_connect_xprt(&c.k, &c.pool,
					     (struct sockaddr *)&sin,
					     sizeof(sin), 16,
					     KRPC_TRANSPORT_RDMA, &used));
	EXPECT_EQ(fallbacks, krpc_counter("tcp_fallbacks"));
	EXPECT_EQ(0, krpc_counter_wait("conns_open", 0, 5000));

	/* AUTO: the same failure, then TCP. */
	used = 0;
	c.conn = krpc_connect_xprt(&c.k, &c.pool, (struct sockaddr *)&sin,
				   sizeof(sin), 16, KRPC_TRANSPORT_AUTO, &used);
	ASSERT_LT(0, c.conn);
	EXPECT_EQ(KRPC_TRANSPORT_TCP, used);
	EXPECT_EQ(fallbacks + 1, krpc_counter("tcp_fallbacks"));
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		EXPECT_EQ(0, echo_once(&c, 100 + i, sizes[i])) {
			TH_LOG("auto (TCP): echo of %u bytes", sizes[i]);
		}
	EXPECT_EQ(0, krpc_counter("dma_mapped"));
	EXPECT_EQ(0, krpc_close_handle(c.k.fd, c.conn));

	/* TCP by name. */
	used = 0;
	c.conn = krpc_connect_xprt(&c.k, &c.pool, (struct sockaddr *)&sin,
				   sizeof(sin), 16, KRPC_TRANSPORT_TCP, &used);
	ASSERT_LT(0, c.conn);
	EXPECT_EQ(KRPC_TRANSPORT_TCP, used);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		EXPECT_EQ(0, echo_once(&c, 200 + i, sizes[i])) {
			TH_LOG("TCP: echo of %u bytes", sizes[i]);
		}
	EXPECT_EQ(fallbacks + 1, krpc_counter("tcp_fallbacks"));
	EXPECT_EQ(0, krpc_counter("dma_mapped"));
	/*
	 * The client's and the server's side (the AUTO connection's server
	 * side goes when its FIN arrives).
	 */
	EXPECT_EQ(2, krpc_counter_wait("conns_open", 2, 5000));

	/* Close: nothing left, and never anything DMA-mapped. */
	clnt_stop(&c);
	EXPECT_EQ(0, echo_stop(&e));
	left = left_over();
	EXPECT_EQ(NULL, left) {
		TH_LOG("%s is not back to zero", left);
	}
}

TEST_HARNESS_MAIN
