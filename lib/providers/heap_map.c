/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * heap_map.c - a peer's side of the shared heap (heap.h): its owner's
 * table mapped read-only, and its segments mapped as windows.
 *
 * The owner may lie or scribble (the domain's members share what they
 * map): every entry is read under its sequence count and checked
 * against the segment's own header and size, and what is mapped is only
 * ever a memfd of the owner of exactly the size it claims.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "atomic.h"
#include "heap.h"

#define READ_TRIES 1000	/* reads of an entry the owner keeps writing */

int coop_heap_view_open(struct coop_heap_view *v, int pid, int fd)
{
	size_t bytes = sizeof(struct coop_heap_table);
	void *m;
	int f;

	memset(v, 0, sizeof(*v));
	f = coop_peer_fd_open(pid, fd, O_RDONLY, bytes);
	if (f < 0)
		return f;
	m = mmap(NULL, bytes, PROT_READ, MAP_SHARED, f, 0);
	close(f);
	if (m == MAP_FAILED)
		return -errno;
	if (LOAD_ACQ(&((const struct coop_heap_table *)m)->magic) !=
	    COOP_HEAP_TABLE_MAGIC) {
		munmap(m, bytes);
		return -EPROTO;
	}
	v->t = m;
	v->pid = pid;
	return 0;
}

void coop_heap_view_close(struct coop_heap_view *v)
{
	if (v->t)
		munmap((void *)v->t, sizeof(*v->t));
	memset(v, 0, sizeof(*v));
}

/* One consistent read of entry e: 0, or -EAGAIN. */
static int entry_read(const struct coop_heap_entry *e,
		      struct coop_heap_entry *out)
{
	int tries;

	for (tries = 0; tries < READ_TRIES; tries++) {
		uint32_t s = coop_seq_read_begin(&e->seq);

		out->state = LOAD_RLX(&e->state);
		out->base = LOAD_RLX(&e->base);
		out->bytes = LOAD_RLX(&e->bytes);
		out->id = LOAD_RLX(&e->id);
		out->fd = LOAD_RLX(&e->fd);
		if (!coop_seq_read_retry(&e->seq, s))
			return 0;
	}
	return -EAGAIN;
}

/* The live entry whose data holds [addr, addr + len): 0 or -errno. */
static int lookup(const struct coop_heap_table *t, uint64_t addr,
		  uint64_t len, struct coop_heap_entry *out)
{
	uint32_t used = COOP_MIN(LOAD_ACQ(&t->used), COOP_HEAP_SEGS), i;

	for (i = 0; i < used; i++) {
		if (entry_read(&t->e[i], out))
			return -EAGAIN;
		if (out->state == COOP_HEAP_LIVE && addr >= out->base &&
		    addr - out->base <= out->bytes &&
		    len <= out->bytes - (addr - out->base))
			return 0;
	}
	return -EACCES;
}

static int header_matches(const struct coop_heap_seg_hdr *h,
			  const struct coop_heap_entry *e)
{
	return h->magic == COOP_HEAP_SEG_MAGIC && h->id == e->id &&
	       h->base == e->base && h->bytes == e->bytes &&
	       !(LOAD_ACQ(&h->state) & COOPMPI_WINDOW_DEAD);
}

int coop_heap_map(const struct coop_heap_view *v, uint64_t addr,
		  uint64_t len, int writable, struct coop_window_map *w)
{
	struct coop_heap_entry e;
	size_t total;
	uint8_t *m;
	int f, rc;

	if (!v->t)
		return -EACCES;
	rc = lookup(v->t, addr, len, &e);
	if (rc)
		return rc;
	total = COOP_HEAP_PAGE + e.bytes;
	f = coop_peer_fd_open(v->pid, e.fd, writable ? O_RDWR : O_RDONLY, total);
	if (f < 0)
		return f;
	m = mmap(NULL, total, PROT_READ, MAP_SHARED, f, 0);
	rc = m == MAP_FAILED ? -errno : 0;
	if (!rc && writable &&
	    mprotect(m + COOP_HEAP_PAGE, e.bytes, PROT_READ | PROT_WRITE))
		rc = -errno;
	close(f);
	if (!rc && !header_matches((const void *)m, &e))
		rc = -ESRCH;	/* released, its fd reused meanwhile */
	if (rc) {	/* -EPROTO above: the fd was reused too */
		if (m != MAP_FAILED)
			munmap(m, total);
		return rc;
	}
	w->map = m;
	w->map_bytes = total;
	w->state = (const uint64_t *)m;
	w->base = m + COOP_HEAP_PAGE + (addr - e.base);
	w->len = e.bytes - (addr - e.base);
	return 0;
}

void coop_heap_unmap(struct coop_window_map *w)
{
	munmap(w->map, w->map_bytes);
	memset(w, 0, sizeof(*w));
}
