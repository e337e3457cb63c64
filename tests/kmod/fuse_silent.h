/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fuse_silent.h - a FUSE file system (libfuse3's low-level API) serving
 * one regular file, "data", whose READ and WRITE requests are never
 * answered: the memory an unprivileged user can mount (fusermount3,
 * unshare -Urm) that makes any fault on it sleep until the daemon dies.
 * Reads are synchronous (no FUSE_ASYNC_READ), so a fault sleeps in the
 * faulting context rather than behind a locked page.
 */
#ifndef COOPMPI_TEST_FUSE_SILENT_H
#define COOPMPI_TEST_FUSE_SILENT_H

#include <stddef.h>
#include <sys/types.h>

struct cm_fuse {
	char dir[64];		/* the mount point */
	char path[80];		/* dir/data */
	size_t size;		/* of data */
	pid_t pid;		/* the daemon */
};

/* Mounts it (root; loads the fuse module when needed); asserts. */
void cm_fuse_start(struct cm_fuse *f, size_t size);
/* Maps data: MAP_SHARED or MAP_PRIVATE, PROT_READ or read-write. */
void *cm_fuse_map(struct cm_fuse *f, int prot, int flags);
/* Kills the daemon (pending requests fail), unmounts, removes dir. */
void cm_fuse_stop(struct cm_fuse *f);

#endif
