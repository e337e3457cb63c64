/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pool.c - see pool.h. */
#include <stdlib.h>
#include <string.h>

#include "pool.h"

static int pool_grow(struct coop_pool *p)
{
	uint32_t i, base = p->nchunks * COOP_POOL_CHUNK;
	char *chunk;

	if (base + COOP_POOL_CHUNK > p->max_objs)
		return -1;
	if (p->nchunks == p->cap_chunks) {
		uint32_t ncap = p->cap_chunks ? p->cap_chunks * 2 : 16;
		char **n = realloc(p->chunks, ncap * sizeof(*n));

		if (!n)
			return -1;
		p->chunks = n;
		p->cap_chunks = ncap;
	}
	chunk = aligned_alloc(64, p->obj_size * COOP_POOL_CHUNK);
	if (!chunk)
		return -1;
	memset(chunk, 0, p->obj_size * COOP_POOL_CHUNK);
	p->chunks[p->nchunks++] = chunk;
	for (i = COOP_POOL_CHUNK; i-- > 0;) {
		struct coop_pool_obj *o =
			(struct coop_pool_obj *)(chunk + i * p->obj_size);

		o->index = base + i;
		o->next_free = p->free;
		p->free = o;
	}
	return 0;
}

int coop_pool_init(struct coop_pool *p, size_t obj_size, uint32_t prealloc,
		   uint32_t max_objs)
{
	memset(p, 0, sizeof(*p));
	p->obj_size = (obj_size + 63) & ~(size_t)63;
	p->max_objs = max_objs;
	while (p->nchunks * COOP_POOL_CHUNK < prealloc)
		if (pool_grow(p))
			return -1;
	return 0;
}

void coop_pool_destroy(struct coop_pool *p)
{
	uint32_t i;

	for (i = 0; i < p->nchunks; i++)
		free(p->chunks[i]);
	free(p->chunks);
	memset(p, 0, sizeof(*p));
}

void *coop_pool_get(struct coop_pool *p)
{
	struct coop_pool_obj *o = p->free;
	uint32_t index, gen;

	if (!o) {
		if (pool_grow(p))
			return NULL;
		o = p->free;
	}
	p->free = o->next_free;
	index = o->index;
	gen = o->gen;
	memset(o, 0, p->obj_size);
	o->index = index;
	o->gen = gen;
	o->in_use = 1;
	p->live++;
	return o;
}

void coop_pool_put(struct coop_pool *p, void *obj)
{
	struct coop_pool_obj *o = obj;

	o->in_use = 0;
	o->gen++;
	o->next_free = p->free;
	p->free = o;
	p->live--;
}

void *coop_pool_lookup(const struct coop_pool *p, uint32_t index, uint32_t gen)
{
	struct coop_pool_obj *o = coop_pool_at(p, index);

	if (!o || !o->in_use || o->gen != gen)
		return NULL;
	return o;
}
