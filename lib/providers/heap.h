/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * heap.h - the shared heap: memory a process allocates with
 * coop_alloc_mem() (heap.c) that the peers of its domain map once and
 * copy with loads and stores (heap_map.c: the shm provider's windows),
 * with no kernel module.
 *
 * Each allocation of COOP_HEAP_MIN_BYTES or more is a segment: a sealed
 * memfd (it can neither shrink nor grow, so no mapping of it ever faults
 * past its end) holding one header page and then the data.  The owner
 * publishes its segments in a table (a memfd too) that peers map
 * read-only through /proc/<pid>/fd/<fd>, as the HCA engine's table
 * (hca_table.h): the same permission as process_vm_readv.  A peer finds
 * the segment of an address there, opens the segment's memfd the same
 * way and maps it.
 *
 * The pages are the owner's own, so a mapping is never stale while the
 * owner keeps the segment at that address.  It does until it releases
 * the segment: then it sets COOPMPI_WINDOW_DEAD in the header's state
 * word before it unmaps, and a copy that read the word good before and
 * after got what the owner had there (provider.h's window rule).  A freed
 * segment is first kept for reuse (same address, same pages: peers'
 * mappings stay right).
 */
#ifndef COOP_HEAP_H
#define COOP_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "provider.h"

#define COOP_HEAP_MIN_BYTES	(64u << 10)	/* smaller: malloc's */
#define COOP_HEAP_SEGS		1024		/* segments of a process */
#define COOP_HEAP_TABLE_MAGIC	0x50414548U	/* "HEAP" */
#define COOP_HEAP_SEG_MAGIC	0x4745535041454843ULL
#define COOP_HEAP_PAGE		4096u

/* A segment's first page, written by its owner only. */
struct coop_heap_seg_hdr {
	uint64_t state;		/* the window state word: 0, or DEAD */
	uint64_t magic;
	uint64_t id;		/* the owner's serial number of the segment */
	uint64_t base;		/* the owner's address of the data */
	uint64_t bytes;		/* of data, after this page */
};

enum { COOP_HEAP_EMPTY, COOP_HEAP_LIVE };

/* A published segment, under its sequence count (atomic.h). */
struct coop_heap_entry {
	uint32_t seq;
	uint32_t state;		/* COOP_HEAP_EMPTY or _LIVE */
	uint64_t base;
	uint64_t bytes;
	uint64_t id;
	int32_t fd;		/* the owner's fd of the segment's memfd */
	uint32_t pad;
};

struct coop_heap_table {
	uint32_t magic;
	uint32_t used;		/* entries [0, used) may be LIVE */
	struct coop_heap_entry e[COOP_HEAP_SEGS];
};

/* The owner (heap.c). */
int coop_heap_alloc(size_t size, void **ptr);
/* ptr: what coop_heap_alloc gave (a small one is malloc's), or NULL */
void coop_heap_free(void *ptr);
/* The table's fd for this process's address blob (made on first use):
 * the fd, or -errno. */
int coop_heap_table_fd(void);

/* A peer's heap as seen from here (heap_map.c). */
struct coop_heap_view {
	const struct coop_heap_table *t;	/* NULL: not mapped */
	int pid;
};

/* Map the table of process pid whose fd is fd: 0 or -errno. */
int coop_heap_view_open(struct coop_heap_view *v, int pid, int fd);
void coop_heap_view_close(struct coop_heap_view *v);
/*
 * Map the peer's segment holding [addr, addr + len), writable or not,
 * as a window: 0, -EACCES (no segment of the heap holds it), -ESRCH (the
 * owner released it or died), or another -errno.
 */
int coop_heap_map(const struct coop_heap_view *v, uint64_t addr,
		  uint64_t len, int writable, struct coop_window_map *w);
void coop_heap_unmap(struct coop_window_map *w);

#endif
