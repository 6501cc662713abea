// SPDX-License-Identifier: GPL-2.0
/*
 * fault_write FILE TEXT [NTH]: write TEXT to FILE (a test module's debugfs
 * cmd file) with fault injection aimed at this task only and only around
 * the write(2) itself.  The file is opened first, so that injected
 * failures hit what the command does in the kernel, never this program's
 * own file system accesses (a failed 9p lookup would poison the guest's
 * shared root for the tests that follow).
 *
 * Without NTH the task is marked with /proc/self/make-it-fail: failslab or
 * fail_function armed with task-filter fail here and nowhere else.  With
 * NTH, /proc/thread-self/fail-nth makes the NTH fault-injection check of
 * the task fail (every slab allocation is one when failslab's
 * ignore-gfp-wait is N), whatever the probabilities say.
 *
 * Prints "ok" or "error -ERRNO (text)", then with NTH "injected" or "not
 * reached" (the command made fewer than NTH checks).
 * Exit status: 0 the write succeeded, 1 it failed, 2 usage or set-up error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *ctl = argc > 3 ? "/proc/thread-self/fail-nth" :
				     "/proc/self/make-it-fail";
	char arm[32], left[32];
	ssize_t ret, n;
	int fd, cfd, err;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: %s FILE TEXT [NTH]\n", argv[0]);
		return 2;
	}
	snprintf(arm, sizeof(arm), "%s", argc > 3 ? argv[3] : "1");
	fd = open(argv[1], O_WRONLY);
	if (fd < 0) {
		perror(argv[1]);
		return 2;
	}
	cfd = open(ctl, O_RDWR);
	if (cfd < 0) {
		perror(ctl);
		return 2;
	}

	if (pwrite(cfd, arm, strlen(arm), 0) != (ssize_t)strlen(arm)) {
		perror(ctl);
		return 2;
	}
	ret = write(fd, argv[2], strlen(argv[2]));
	err = errno;
	if (argc > 3) {
		/* 0 once the failure was injected, what is left otherwise. */
		n = pread(cfd, left, sizeof(left) - 1, 0);
		left[n > 0 ? n : 0] = 0;
		if (pwrite(cfd, "0", 1, 0) != 1) {
			perror(ctl);
			return 2;
		}
	} else if (pwrite(cfd, "0", 1, 0) != 1) {
		perror(ctl);
		return 2;
	}

	if (ret < 0)
		printf("error %d (%s)\n", -err, strerror(err));
	else
		printf("ok\n");
	if (argc > 3)
		printf("%s\n", n > 0 && atoi(left) == 0 ? "injected" : "not reached");
	return ret < 0 ? 1 : 0;
}
