/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* stage.c - see stage.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shmseg.h"
#include "stage.h"
#include "util.h"

#define STAGE_MAGIC 0x43535447U	/* "CSTG" */
#define STAGE_VERSION 1
#define PAGE 4096ULL
#define STAGE_MAX_RANKS 65536
#define STAGE_MAX_BYTES (64ULL << 30)
#define ALIGN_UP(x, a) (((x) + (a) - 1) & ~((uint64_t)(a) - 1))

struct chunk_hdr {
	uint32_t busy;		/* the reader clears it */
	uint32_t reader;	/* the rank it is for (the writer's note) */
	uint64_t len;		/* for debugging only: never trusted */
	uint64_t pad2[6];
};

_Static_assert(sizeof(struct chunk_hdr) == COOP_STAGE_CHUNK_HDR, "chunk");
_Static_assert(sizeof(struct coop_stage_hdr) <= PAGE, "header page");

static void stage_name(char *buf, size_t n, uint64_t key, int rank)
{
	snprintf(buf, n, "/coopmpi-%016llx-stage-%d", (unsigned long long)key,
		 rank);
}

static void stage_layout(struct coop_stage_hdr *h, int nranks,
			 uint64_t out_bytes, uint64_t in_bytes,
			 uint64_t notes_bytes)
{
	h->magic = STAGE_MAGIC;
	h->version = STAGE_VERSION;
	h->nranks = (uint32_t)nranks;
	h->out_bytes = out_bytes & ~63ULL;
	h->part_bytes = nranks ? (in_bytes / (uint64_t)nranks) & ~63ULL : 0;
	h->off_out = PAGE;
	h->off_in = ALIGN_UP(h->off_out + h->out_bytes, PAGE);
	h->notes_bytes = notes_bytes;
	h->off_notes = ALIGN_UP(h->off_in + h->part_bytes * (uint64_t)nranks,
				PAGE);
	h->bytes = ALIGN_UP(h->off_notes + notes_bytes, PAGE);
}

static void stage_bind(struct coop_stage *st, void *map,
		       const struct coop_stage_hdr *h)
{
	st->map = map;
	st->bytes = h->bytes;
	st->nranks = (int)h->nranks;
	st->out_bytes = h->out_bytes;
	st->part_bytes = h->part_bytes;
	st->out = (unsigned char *)map + h->off_out;
	st->in = (unsigned char *)map + h->off_in;
	st->notes = (unsigned char *)map + h->off_notes;
	st->notes_bytes = h->notes_bytes;
}

int coop_stage_create(struct coop_stage *st, uint64_t key, int rank,
		      int nranks, uint64_t out_bytes, uint64_t in_bytes,
		      uint64_t notes_bytes)
{
	struct coop_stage_hdr h;
	void *m;
	int err;

	memset(st, 0, sizeof(*st));
	memset(&h, 0, sizeof(h));
	stage_layout(&h, nranks, out_bytes, in_bytes, notes_bytes);
	stage_name(st->name, sizeof(st->name), key, rank);
	m = coop_shm_file_create(st->name, h.bytes, &err);
	if (!m)
		return err;
	h.owner_pid = (uint32_t)getpid();
	memcpy(m, &h, sizeof(h));
	stage_bind(st, m, &h);
	return 0;
}

struct stage_expect {
	int nranks;
	uint64_t notes_bytes;
};

static int stage_sane(const struct coop_stage_hdr *h, off_t bytes,
		      const struct stage_expect *x)
{
	struct coop_stage_hdr l;

	if (h->magic != STAGE_MAGIC || h->version != STAGE_VERSION ||
	    h->nranks != (uint32_t)x->nranks || x->nranks > STAGE_MAX_RANKS ||
	    h->out_bytes > STAGE_MAX_BYTES || h->part_bytes > STAGE_MAX_BYTES ||
	    h->notes_bytes != x->notes_bytes)
		return 0;
	memset(&l, 0, sizeof(l));
	stage_layout(&l, x->nranks, h->out_bytes,
		     h->part_bytes * (uint64_t)x->nranks, x->notes_bytes);
	return l.out_bytes == h->out_bytes && l.part_bytes == h->part_bytes &&
	       l.off_out == h->off_out && l.off_in == h->off_in &&
	       l.off_notes == h->off_notes && l.bytes == h->bytes &&
	       (uint64_t)bytes >= h->bytes;
}

static uint64_t stage_check(const void *hdr, uint64_t size, const void *arg)
{
	const struct coop_stage_hdr *h = hdr;

	return stage_sane(h, (off_t)size, arg) ? h->bytes : 0;
}

int coop_stage_map(struct coop_stage *st, uint64_t key, int rank,
		   int nranks, uint64_t notes_bytes)
{
	struct stage_expect x = { nranks, notes_bytes };
	struct coop_stage_hdr h;
	void *m;
	int err;

	memset(st, 0, sizeof(*st));
	stage_name(st->name, sizeof(st->name), key, rank);
	m = coop_shm_file_map(st->name, &h, sizeof(h), stage_check, &x, &err);
	if (!m)
		return err;
	stage_bind(st, m, &h);
	return 0;
}

void coop_stage_unmap(struct coop_stage *st)
{
	if (st->map)
		munmap(st->map, st->bytes);
	memset(st, 0, sizeof(*st));
}

void coop_stage_destroy(struct coop_stage *st)
{
	if (st->name[0])
		shm_unlink(st->name);
	coop_stage_unmap(st);
}

/* ---------------- rings ---------------- */

static void ring_init(struct coop_stage_ring *r, unsigned char *base,
		      uint64_t size)
{
	memset(r, 0, sizeof(*r));
	r->base = base;
	r->size = size;
}

void coop_stage_inbox_ring(struct coop_stage_ring *r,
			   const struct coop_stage *st, int from)
{
	ring_init(r, st->in + (uint64_t)from * st->part_bytes, st->part_bytes);
}

void coop_stage_outbox_ring(struct coop_stage_ring *r,
			    const struct coop_stage *st)
{
	ring_init(r, st->out, st->out_bytes);
}

static struct chunk_hdr *chunk_at(const struct coop_stage_ring *r,
				  uint64_t pos)
{
	return (struct chunk_hdr *)(r->base + pos % r->size);
}

/* Take back the chunks at the tail that their readers freed. */
static void reclaim(struct coop_stage_ring *r)
{
	while (r->count &&
	       !__atomic_load_n(&chunk_at(r, r->tail)->busy, __ATOMIC_ACQUIRE)) {
		r->tail += r->sizes[r->first];
		r->first = (r->first + 1) % COOP_STAGE_MAX_CHUNKS;
		r->count--;
	}
}

int coop_stage_ring_idle(struct coop_stage_ring *r)
{
	reclaim(r);
	return !r->count;
}

int coop_stage_ring_awaited(struct coop_stage_ring *r,
			    int (*gone)(const void *arg, int rank),
			    const void *arg)
{
	uint64_t pos;
	uint32_t k;

	reclaim(r);
	for (k = 0, pos = r->tail; k < r->count; k++) {
		const struct chunk_hdr *c = chunk_at(r, pos);

		if (__atomic_load_n(&c->busy, __ATOMIC_ACQUIRE) &&
		    !gone(arg, (int)c->reader))
			return 1;
		pos += r->sizes[(r->first + k) % COOP_STAGE_MAX_CHUNKS];
	}
	return 0;
}

/* A chunk of total bytes at the head, busy or not. */
static void push_chunk(struct coop_stage_ring *r, uint64_t total,
		       uint64_t len, uint32_t busy, int reader)
{
	struct chunk_hdr *c = chunk_at(r, r->head);

	c->len = len;
	c->reader = (uint32_t)reader;
	__atomic_store_n(&c->busy, busy, __ATOMIC_RELAXED);
	r->sizes[(r->first + r->count) % COOP_STAGE_MAX_CHUNKS] = total;
	r->count++;
	r->head += total;
}

int64_t coop_stage_alloc(struct coop_stage_ring *r, uint64_t len, int reader)
{
	uint64_t need = COOP_STAGE_CHUNK_HDR + ALIGN_UP(len, 64), at, pad = 0;

	if (!r->size || need > r->size)
		return -1;
	reclaim(r);
	at = r->head % r->size;
	if (at + need > r->size)
		pad = r->size - at;	/* a chunk never wraps */
	if (r->head + pad + need - r->tail > r->size ||
	    r->count + (pad ? 2 : 1) > COOP_STAGE_MAX_CHUNKS)
		return -1;
	if (pad)
		push_chunk(r, pad, pad - COOP_STAGE_CHUNK_HDR, 0, reader);
	at = r->head % r->size;
	push_chunk(r, need, len, 1, reader);
	return (int64_t)(at + COOP_STAGE_CHUNK_HDR);
}

const void *coop_stage_chunk(const unsigned char *base, uint64_t size,
			     uint64_t off, uint64_t len)
{
	if (!base || off % 64 || off < COOP_STAGE_CHUNK_HDR || off > size ||
	    len > size - off)
		return NULL;
	return base + off;
}

void coop_stage_release(unsigned char *base, uint64_t off)
{
	struct chunk_hdr *c = (struct chunk_hdr *)(base + off -
						   COOP_STAGE_CHUNK_HDR);

	__atomic_store_n(&c->busy, 0, __ATOMIC_RELEASE);
}
