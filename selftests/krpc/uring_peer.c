// SPDX-License-Identifier: GPL-2.0
/*
 * uring_peer: the userspace end of the interoperability tests
 * (uring_interop.sh), built with the selftests but not a test itself.
 *
 *   uring_peer server PORT	echo server (M_ECHO, M_HOLD) until SIGTERM or
 *				SIGINT; prints "ready" once listening and
 *				"served N" at the end; exit 0 if no error
 *   uring_peer client ADDR PORT
 *				echo of every size from 0 to 65536, checked
 *				byte for byte; exit 0 if all matched
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "uring_lib.h"

static int run_server(uint16_t port)
{
	struct echo_srv e;
	sigset_t set;
	int sig, ret;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	ret = echo_start(&e, port, 32, 512);
	if (ret) {
		fprintf(stderr, "uring_peer: server: %s\n", strerror(-ret));
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	sigwait(&set, &sig);
	ret = echo_stop(&e);
	printf("served %lu\n", e.served);
	if (ret)
		fprintf(stderr, "uring_peer: server: %s\n", strerror(-ret));
	return ret ? 1 : 0;
}

static int run_client(const char *addr, uint16_t port)
{
	static const uint32_t sizes[] = {
		0, 1, 63, 64, 100, 1000, 4000, 4032, 4033, 4096, 8192, 32768,
		65535, 65536,
	};
	struct echo_clnt c;
	unsigned int i;
	int ret, bad = 0;

	ret = clnt_start(&c, addr, port, 128, 0, 16);
	if (ret) {
		fprintf(stderr, "uring_peer: connect: %s\n", strerror(-ret));
		return 1;
	}
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		ret = echo_once(&c, i + 7, sizes[i]);
		printf("echo %u: %s\n", sizes[i], ret ? strerror(-ret) : "ok");
		bad |= !!ret;
	}
	clnt_stop(&c);
	return bad;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "server"))
		return run_server(atoi(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "client"))
		return run_client(argv[2], atoi(argv[3]));
	fprintf(stderr, "usage: uring_peer server PORT | client ADDR PORT\n");
	return 2;
}
