// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * node.c - the scope in which endpoints can reach each other.  A dynamic
 * endpoint's short address (rank and instance) means something only to a
 * process that sees the same domain files and the same processes: a
 * transport that learns addresses from everywhere - UCX gets every
 * rank's, across nodes - compares scopes before it connects.  UCX's own
 * test of "same machine" is the boot id alone, which containers on one
 * host share.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "node.h"

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;	/* FNV-1a */
	return h;
}

static uint64_t mix_file_id(uint64_t h, const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return mix(h, path, strlen(path));	/* unknown: as named */
	h = mix(h, &st.st_dev, sizeof(st.st_dev));
	return mix(h, &st.st_ino, sizeof(st.st_ino));
}

uint64_t coop_node_scope(void)
{
	char boot[64] = "";
	uint64_t h = 0xcbf29ce484222325ULL;
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

	if (f) {
		if (!fgets(boot, sizeof(boot), f))
			boot[0] = 0;
		fclose(f);
	}
	h = mix(h, boot, strlen(boot));
	h = mix_file_id(h, "/dev/shm");
	return mix_file_id(h, "/proc/self/ns/pid");
}
