// SPDX-License-Identifier: GPL-2.0
/*
 * fault_insmod [--nth N] MODULE.ko [PARAMS]: load a module with fault
 * injection armed for this task only and only around the init_module(2)
 * call itself.  The file is read and every library loaded before that, so
 * injected failures hit the module loader and the module's init, never this
 * program's own file system accesses (a failed 9p lookup would poison the
 * guest's shared root for the tests that follow).
 *
 * Without --nth the task's make-it-fail flag is set, and the fault
 * attributes (probability, ...) decide.  With --nth N exactly the N-th
 * fault-injection site the call reaches fails (/proc/thread-self/fail-nth),
 * and "fail-nth left: R" is printed: R == 0 means the fault was injected,
 * R > 0 that the call reached only N - R sites.
 *
 * Exit status: 0 loaded, 1 refused (errno printed), 2 usage or set-up error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int write_uint(int fd, unsigned int v)
{
	char b[16];
	int n = snprintf(b, sizeof(b), "%u", v);

	return pwrite(fd, b, n, 0) == n ? 0 : -1;
}

static int read_uint(int fd, unsigned int *v)
{
	char b[16];
	ssize_t n = pread(fd, b, sizeof(b) - 1, 0);

	if (n <= 0)
		return -1;
	b[n] = 0;
	*v = strtoul(b, NULL, 10);
	return 0;
}

int main(int argc, char **argv)
{
	const char *knob = "/proc/self/make-it-fail", *path, *params;
	unsigned int nth = 0, left = 0;
	bool by_nth = false;
	struct stat st;
	int fd, mif, ret, err;
	void *image;

	if (argc > 2 && !strcmp(argv[1], "--nth")) {
		by_nth = true;
		nth = strtoul(argv[2], NULL, 0);
		knob = "/proc/thread-self/fail-nth";
		argc -= 2;
		argv += 2;
	}
	if (argc < 2 || (by_nth && !nth)) {
		fprintf(stderr, "usage: fault_insmod [--nth N] MODULE.ko [PARAMS]\n");
		return 2;
	}
	path = argv[1];
	params = argc > 2 ? argv[2] : "";
	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		perror(path);
		return 2;
	}
	image = malloc(st.st_size);
	if (!image || read(fd, image, st.st_size) != st.st_size) {
		perror("read");
		return 2;
	}
	close(fd);
	mif = open(knob, O_RDWR);
	if (mif < 0) {
		perror(knob);
		return 2;
	}

	if (write_uint(mif, by_nth ? nth : 1))
		return 2;
	ret = syscall(SYS_init_module, image, (unsigned long)st.st_size, params);
	err = errno;
	if (by_nth && read_uint(mif, &left))
		return 2;
	if (write_uint(mif, 0))
		return 2;

	if (by_nth)
		printf("fail-nth left: %u\n", left);

	if (ret) {
		printf("refused: %s\n", strerror(err));
		return 1;
	}
	return 0;
}
