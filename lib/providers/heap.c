/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * heap.c - the owner's side of the shared heap (heap.h): segments made,
 * published, kept for reuse and released.
 *
 * State is process-wide (coop_alloc_mem needs no context), under one
 * mutex.  What the process knows of a segment is kept privately
 * (struct seg); the table only tells the peers.  After fork the child
 * shares the parent's segments (MAP_SHARED) and its table: it forgets
 * the table, and releases inherited segments without marking them DEAD
 * (the parent still has them) and never reuses them.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "atomic.h"
#include "heap.h"

#define KEPT_SEGS 8	/* freed segments kept for reuse */

struct seg {
	uint8_t *map;		/* header page, then data; NULL: free */
	uint64_t bytes;		/* of data */
	int fd;
	uint8_t kept;		/* freed, waiting for reuse */
	uint8_t inherited;	/* made by the parent before a fork */
};

static struct {
	pthread_mutex_t lock;
	struct coop_heap_table *table;
	int table_fd;
	uint64_t next_id;
	unsigned kept;
	struct seg seg[COOP_HEAP_SEGS];
} heap = { .lock = PTHREAD_MUTEX_INITIALIZER, .table_fd = -1 };

static pthread_once_t heap_once = PTHREAD_ONCE_INIT;

static struct coop_heap_seg_hdr *seg_hdr(const struct seg *s)
{
	return (struct coop_heap_seg_hdr *)s->map;
}

static void *seg_data(const struct seg *s)
{
	return s->map + COOP_HEAP_PAGE;
}

static void publish(unsigned i)
{
	struct coop_heap_entry *e;
	const struct seg *s = &heap.seg[i];

	if (!heap.table || s->inherited)
		return;
	e = &heap.table->e[i];
	coop_seq_write_begin(&e->seq);
	STORE_RLX(&e->state, s->map ? COOP_HEAP_LIVE : COOP_HEAP_EMPTY);
	STORE_RLX(&e->base, s->map ? (uint64_t)(uintptr_t)seg_data(s) : 0);
	STORE_RLX(&e->bytes, s->bytes);
	STORE_RLX(&e->id, s->map ? seg_hdr(s)->id : 0);
	STORE_RLX(&e->fd, s->fd);
	coop_seq_write_end(&e->seq);
	if (i >= heap.table->used)
		STORE_REL(&heap.table->used, i + 1);
}

static void lock_before_fork(void)
{
	pthread_mutex_lock(&heap.lock);
}

static void unlock_after_fork(void)
{
	pthread_mutex_unlock(&heap.lock);
}

static void child_after_fork(void)
{
	unsigned i;

	if (heap.table)
		munmap(heap.table, sizeof(*heap.table));
	if (heap.table_fd >= 0)
		close(heap.table_fd);
	heap.table = NULL;
	heap.table_fd = -1;
	for (i = 0; i < COOP_HEAP_SEGS; i++) {
		struct seg *s = &heap.seg[i];

		if (s->map && s->kept) {
			munmap(s->map, COOP_HEAP_PAGE + s->bytes);
			close(s->fd);
			memset(s, 0, sizeof(*s));
		} else if (s->map) {
			s->inherited = 1;
		}
	}
	heap.kept = 0;
	pthread_mutex_unlock(&heap.lock);
}

static void heap_setup(void)
{
	pthread_atfork(lock_before_fork, unlock_after_fork, child_after_fork);
}

static int table_create(void)
{
	void *m;
	int fd;
	unsigned i;

	if (heap.table)
		return 0;
	fd = memfd_create("coopmpi-heap-table", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, sizeof(*heap.table)))
		goto fail;
	m = mmap(NULL, sizeof(*heap.table), PROT_READ | PROT_WRITE,
		 MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		goto fail;
	heap.table = m;
	heap.table_fd = fd;
	for (i = 0; i < COOP_HEAP_SEGS; i++)
		if (heap.seg[i].map)
			publish(i);
	STORE_REL(&heap.table->magic, COOP_HEAP_TABLE_MAGIC);
	return 0;
fail:
	i = (unsigned)errno;
	close(fd);
	return -(int)i;
}

int coop_heap_table_fd(void)
{
	int rc;

	pthread_once(&heap_once, heap_setup);
	pthread_mutex_lock(&heap.lock);
	rc = table_create();
	pthread_mutex_unlock(&heap.lock);
	return rc ? rc : heap.table_fd;
}

/* A kept segment of bytes..2*bytes, the smallest: its index or -1. */
static int reuse_kept(uint64_t bytes)
{
	int i, best = -1;

	for (i = 0; heap.kept && i < COOP_HEAP_SEGS; i++) {
		const struct seg *s = &heap.seg[i];

		if (s->kept && s->bytes >= bytes && s->bytes / 2 <= bytes &&
		    (best < 0 || s->bytes < heap.seg[best].bytes))
			best = i;
	}
	if (best >= 0) {
		heap.seg[best].kept = 0;
		heap.kept--;
	}
	return best;
}

static int free_slot(void)
{
	int i;

	for (i = 0; i < COOP_HEAP_SEGS; i++)
		if (!heap.seg[i].map)
			return i;
	return -1;
}

/* A new sealed memfd segment of bytes at slot i: 0 or -errno. */
static int seg_make(int i, uint64_t bytes)
{
	struct seg *s = &heap.seg[i];
	size_t total = COOP_HEAP_PAGE + bytes;
	struct coop_heap_seg_hdr *h;
	int fd, err;
	void *m;

	fd = memfd_create("coopmpi-heap", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)total) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL))
		goto fail;
	m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		goto fail;
	s->map = m;
	s->bytes = bytes;
	s->fd = fd;
	h = seg_hdr(s);
	h->magic = COOP_HEAP_SEG_MAGIC;
	h->id = ++heap.next_id;
	h->base = (uint64_t)(uintptr_t)seg_data(s);
	h->bytes = bytes;
	return 0;
fail:
	err = errno;
	close(fd);
	return -err;
}

static void seg_release(int i)
{
	struct seg *s = &heap.seg[i];

	/* peers' copies through it from now on are not good */
	if (!s->inherited)
		__atomic_fetch_or(&seg_hdr(s)->state, COOPMPI_WINDOW_DEAD,
				  __ATOMIC_SEQ_CST);
	munmap(s->map, COOP_HEAP_PAGE + s->bytes);
	close(s->fd);
	memset(s, 0, sizeof(*s));
	publish((unsigned)i);
}

int coop_heap_alloc(size_t size, void **ptr)
{
	uint64_t bytes = ((uint64_t)size + COOP_HEAP_PAGE - 1) &
			 ~(uint64_t)(COOP_HEAP_PAGE - 1);
	int i, rc = 0;

	if (size < COOP_HEAP_MIN_BYTES)
		return -posix_memalign(ptr, COOP_CACHELINE, size ? size : 1);
	if (bytes < size)
		return -ENOMEM;
	pthread_once(&heap_once, heap_setup);
	pthread_mutex_lock(&heap.lock);
	i = reuse_kept(bytes);
	if (i < 0) {
		i = free_slot();
		rc = i < 0 ? -ENOMEM : seg_make(i, bytes);
		if (!rc)
			publish((unsigned)i);
	}
	if (!rc)
		*ptr = seg_data(&heap.seg[i]);
	pthread_mutex_unlock(&heap.lock);
	return rc;
}

static int find(const void *ptr)
{
	int i;

	for (i = 0; i < COOP_HEAP_SEGS; i++)
		if (heap.seg[i].map && !heap.seg[i].kept &&
		    seg_data(&heap.seg[i]) == ptr)
			return i;
	return -1;
}

void coop_heap_free(void *ptr)
{
	int i;

	pthread_mutex_lock(&heap.lock);
	i = find(ptr);
	if (i >= 0 && !heap.seg[i].inherited && heap.kept < KEPT_SEGS) {
		heap.seg[i].kept = 1;
		heap.kept++;
	} else if (i >= 0) {
		seg_release(i);
	}
	pthread_mutex_unlock(&heap.lock);
	if (i < 0)
		free(ptr);
}
