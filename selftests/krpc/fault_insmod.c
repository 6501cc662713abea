// SPDX-License-Identifier: GPL-2.0
/*
 * fault_insmod MODULE.ko [PARAMS]: load a module with fault injection
 * armed for this task only (/proc/self/make-it-fail) and only around the
 * init_module(2) call itself.  The file is read and every library loaded
 * before that, so injected failures hit the module loader and the module's
 * init, never this program's own file system accesses (a failed 9p lookup
 * would poison the guest's shared root for the tests that follow).
 *
 * Exit status: 0 loaded, 1 refused (errno printed), 2 usage or set-up error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int make_it_fail(int fd, int on)
{
	return pwrite(fd, on ? "1" : "0", 1, 0) == 1 ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *params = argc > 2 ? argv[2] : "";
	struct stat st;
	int fd, mif, ret, err;
	void *image;

	if (argc < 2) {
		fprintf(stderr, "usage: %s MODULE.ko [PARAMS]\n", argv[0]);
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		perror(argv[1]);
		return 2;
	}
	image = malloc(st.st_size);
	if (!image || read(fd, image, st.st_size) != st.st_size) {
		perror("read");
		return 2;
	}
	close(fd);
	mif = open("/proc/self/make-it-fail", O_WRONLY);
	if (mif < 0) {
		perror("/proc/self/make-it-fail");
		return 2;
	}

	if (make_it_fail(mif, 1))
		return 2;
	ret = syscall(SYS_init_module, image, (unsigned long)st.st_size, params);
	err = errno;
	make_it_fail(mif, 0);

	if (ret) {
		printf("refused: %s\n", strerror(err));
		return 1;
	}
	return 0;
}
