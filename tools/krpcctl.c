// SPDX-License-Identifier: GPL-2.0
/*
 * krpcctl: look at a running krpc.
 *
 *   krpcctl info     module version, ABI version, features, RDMA devices
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "libkrpc.h"

static int cmd_info(void)
{
	struct krpc_info info;
	int fd, ret;

	fd = krpc_dev_open(0);
	if (fd < 0) {
		fprintf(stderr, "krpcctl: /dev/krpc: %s\n", strerror(-fd));
		return 1;
	}
	ret = krpc_dev_info(fd, &info);
	close(fd);
	if (ret) {
		fprintf(stderr, "krpcctl: info: %s\n", strerror(-ret));
		return 1;
	}
	printf("version %s\nabi %u\nfeatures %#llx\ndevices %u\n", info.version,
	       info.abi_version, (unsigned long long)info.features,
	       info.nr_devices);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "info"))
		return cmd_info();
	fprintf(stderr, "usage: krpcctl info\n");
	return 2;
}
