/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tickets.c - the table of (comm, peer, tag) triples of RTR mode: per
 * triple the sends and receives numbered so far (tickets: the n-th send
 * matches the n-th receive), the RTRs a sender holds for sends not
 * posted yet, and the wildcard suspension counts of the matching layer.
 * Open addressing, grown at half load; entries live until finalize.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi.h"

static uint64_t triple_key(uint16_t comm, int peer, int tag)
{
	return ((uint64_t)comm << 48) |
	       ((uint64_t)(uint16_t)(peer + 2) << 32) | (uint32_t)tag;
}

static uint32_t triple_hash(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return (uint32_t)k;
}

static int tk_grow(struct coop_tickets *tk)
{
	uint32_t n = tk->mask ? (tk->mask + 1) * 2 : 256, i;
	struct coop_triple **tab = calloc(n, sizeof(*tab));

	if (!tab)
		return -1;
	for (i = 0; tk->tab && i <= tk->mask; i++) {
		struct coop_triple *t = tk->tab[i];
		uint32_t h;

		if (!t)
			continue;
		for (h = triple_hash(t->key) & (n - 1); tab[h];
		     h = (h + 1) & (n - 1))
			;
		tab[h] = t;
	}
	free(tk->tab);
	tk->tab = tab;
	tk->mask = n - 1;
	return 0;
}

/* The slot holding key k, or the empty slot where it belongs. */
static uint32_t triple_slot(const struct coop_tickets *tk, uint64_t k)
{
	uint32_t h;

	for (h = triple_hash(k) & tk->mask; tk->tab[h] && tk->tab[h]->key != k;
	     h = (h + 1) & tk->mask)
		;
	return h;
}

struct coop_triple *coop_triple_find(struct coop_context *ctx, uint16_t comm,
				     int peer, int tag)
{
	struct coop_tickets *tk = &ctx->mpi->tk;

	return tk->tab[triple_slot(tk, triple_key(comm, peer, tag))];
}

struct coop_triple *coop_triple_get(struct coop_context *ctx, uint16_t comm,
				    int peer, int tag)
{
	struct coop_tickets *tk = &ctx->mpi->tk;
	uint64_t k = triple_key(comm, peer, tag);
	uint32_t h = triple_slot(tk, k);
	struct coop_triple *t = tk->tab[h];

	if (t)
		return t;
	if (2 * (tk->used + 1) > tk->mask + 1) {
		if (tk_grow(tk))
			return NULL;
		return coop_triple_get(ctx, comm, peer, tag);
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->key = k;
	dlist_init(&t->rtrq);
	tk->tab[h] = t;
	tk->used++;
	return t;
}

int coop_tickets_init(struct coop_context *ctx)
{
	return tk_grow(&ctx->mpi->tk);
}

void coop_tickets_fini(struct coop_context *ctx)
{
	struct coop_tickets *tk = &ctx->mpi->tk;
	uint32_t i;

	for (i = 0; tk->tab && i <= tk->mask; i++)
		free(tk->tab[i]);
	free(tk->tab);
	memset(tk, 0, sizeof(*tk));
}
