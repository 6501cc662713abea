// SPDX-License-Identifier: GPL-2.0
/*
 * fault_user ADDR PORT STEP ERRNO: the userspace path of fault_rpc.sh.
 * Opens /dev/krpc with a ring, creates a pool of 64 buffers of 64 KiB
 * (STEP "pool"), connects to the echo server at ADDR:PORT with depth 16
 * (STEP "connect") and makes one echo call of
 * 64 KiB, checked byte for byte (STEP "call").  The step named must fail
 * with exactly -ERRNO, every step before it must succeed; with STEP "none"
 * every step must succeed.  Everything is closed before exiting.
 *
 * Prints one line per step.  Exit status: 0 as expected, 1 otherwise.
 */
#include "uring_lib.h"

static int expect(const char *step, int ret, const char *fail_step, int want)
{
	int failing = !strcmp(step, fail_step);

	printf("%s: %d (%s)\n", step, ret < 0 ? ret : 0,
	       ret < 0 ? strerror(-ret) : "ok");
	if (failing && ret != -want) {
		printf("%s: want %d\n", step, -want);
		return -1;
	}
	if (!failing && ret < 0) {
		printf("%s: want success\n", step);
		return -1;
	}
	return failing ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct echo_clnt c;
	struct sockaddr_in sin;
	const char *step;
	int want, ret, st;

	if (argc != 5) {
		fprintf(stderr, "usage: %s ADDR PORT pool|connect|call|none ERRNO\n",
			argv[0]);
		return 1;
	}
	step = argv[3];
	want = atoi(argv[4]);
	memset(&c, 0, sizeof(c));
	ret = krpc_open(&c.k, 64, 0);
	if (ret) {
		printf("open: %s\n", strerror(-ret));
		return 1;
	}
	ret = krpc_pool_create(c.k.fd, NULL, BUF_SIZE, 64, &c.pool);
	st = expect("pool", ret, step, want);
	if (st)
		goto out;
	sin_of(&sin, argv[1], (uint16_t)atoi(argv[2]));
	c.conn = krpc_connect(&c.k, &c.pool, (struct sockaddr *)&sin,
			      sizeof(sin), 16);
	st = expect("connect", c.conn, step, want);
	if (st)
		goto out;
	ret = echo_once(&c, 7, BUF_SIZE);
	st = expect("call", ret, step, want);
	if (!st && strcmp(step, "none")) {
		printf("%s: never reached\n", step);
		st = -1;
	}
out:
	if (c.conn < 0)
		c.conn = 0;
	clnt_stop(&c);
	return st < 0 ? 1 : 0;
}
