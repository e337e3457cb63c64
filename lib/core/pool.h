/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pool.h - fixed-size object pool: objects are carved from chunks that are
 * allocated only when the pool runs dry (never on the fast path once warm),
 * kept on a LIFO free list, and addressable by a 32-bit index.
 */
#ifndef COOP_POOL_H
#define COOP_POOL_H

#include <stddef.h>
#include <stdint.h>

#define COOP_POOL_CHUNK_SHIFT 8
#define COOP_POOL_CHUNK (1u << COOP_POOL_CHUNK_SHIFT)

struct coop_pool_obj {
	struct coop_pool_obj *next_free;
	uint32_t index;
	uint32_t gen;	/* bumped at every free */
	uint32_t in_use;
	uint32_t pad;
};

struct coop_pool {
	size_t obj_size;	/* including struct coop_pool_obj header */
	struct coop_pool_obj *free;
	char **chunks;
	uint32_t nchunks, cap_chunks;
	uint32_t max_objs;	/* hard limit on the index space */
	uint32_t live;
};

/* obj_size must start with a struct coop_pool_obj. */
int coop_pool_init(struct coop_pool *p, size_t obj_size, uint32_t prealloc,
		   uint32_t max_objs);
void coop_pool_destroy(struct coop_pool *p);
/* A zero-filled object (header kept) or NULL when out of memory. */
void *coop_pool_get(struct coop_pool *p);
void coop_pool_put(struct coop_pool *p, void *obj);
/* The object at index (live or not), NULL outside the pool. */
static inline void *coop_pool_at(const struct coop_pool *p, uint32_t index)
{
	uint32_t c = index >> COOP_POOL_CHUNK_SHIFT;

	if (c >= p->nchunks)
		return NULL;
	return p->chunks[c] + (index & (COOP_POOL_CHUNK - 1)) * p->obj_size;
}

/* The live object at index with generation gen, else NULL. */
void *coop_pool_lookup(const struct coop_pool *p, uint32_t index,
		       uint32_t gen);

#endif
