/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * peer_fd.c - a memfd another process of the domain publishes, opened
 * through /proc/<pid>/fd/<fd>: the same permission as process_vm_readv
 * (ptrace's), and no file name to clean up after a crash.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "provider.h"

int coop_peer_fd_open(int pid, int fd, int flags, size_t bytes)
{
	char path[64];
	struct stat st;
	int f;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
	f = open(path, flags | O_CLOEXEC);
	if (f < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	if (fstat(f, &st) || !S_ISREG(st.st_mode) ||
	    (size_t)st.st_size != bytes) {
		close(f);
		return -EPROTO;
	}
	return f;
}
