/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* shmlock.c - see coop_shm_lock() in provider.h. */
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "provider.h"

int coop_shm_lock(const char *name)
{
	struct stat st;
	int fd, e;

	for (;;) {
		fd = shm_open(name, O_RDWR | O_CREAT, 0600);
		if (fd < 0)
			return -errno;
		if (flock(fd, LOCK_EX) || fstat(fd, &st)) {
			e = -errno;
			close(fd);
			return e;
		}
		/* removed while we waited: the name is another file now */
		if (st.st_nlink)
			return fd;
		close(fd);
	}
}
