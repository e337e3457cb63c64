/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * balance.c - the tree balancing of small messages [Hoefler, II-B1]:
 * each message costs its sender an overhead o, so the rank with the
 * most sends (m of them) hands some to the rank with the fewest (s),
 * which forwards them, until the two differ by at most t:
 *
 *   alltoall:  (m + s) / 2 - s - ceil(L/o) messages go, packed into one
 *              message to the helper (their blocks differ);
 *   allgather: (m - s) / 2 - ceil(L/o) go to a helper that gets the
 *              sender's block anyway (one of its destinations): no
 *              extra message, no extra bytes.
 *
 * The subtracted term: the helper starts forwarding one latency later,
 * in which the sender sends ceil(L/o) messages itself.  Each round moves
 * messages off the busiest rank, so trees of several levels form
 * (Figure 4's hot spot becomes a scatter tree).  Only blocks of at most
 * COOP_NEIGHBOR_TREE_MAX bytes are moved (forwarding costs bandwidth);
 * t and ceil(L/o) are COOP_NEIGHBOR_TREE_SLACK and _HOP_SENDS.
 * Every rank computes the same moves from the same graph.
 */
#include <stdlib.h>
#include <string.h>

#include "coll.h"

struct bal {
	const struct coop_graph *g;
	enum coop_nbr_op op;
	struct nbr_balance *b;
	uint32_t *sends;	/* [n] transfers each rank sends */
	uint32_t t, lo;
};

int coop_coll_grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
	uint32_t c = *cap ? *cap : 16;
	void *q;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	q = realloc(*p, (size_t)c * elem);
	if (!q)
		return -1;
	*p = q;
	*cap = c;
	return 0;
}

/* Does rank r hold block e's data (its origin, or a transfer to r
 * carries it)? */
static int has_block(const struct bal *s, uint32_t e, int r)
{
	const struct nbr_balance *b = s->b;
	uint32_t x, k;

	if (s->g->from[e] == r)
		return 1;
	for (x = 0; x < b->nxf; x++)
		for (k = 0; b->xf[x].to == r && k < b->xf[x].nblk; k++)
			if (b->blk[b->xf[x].blk0 + k] == e)
				return 1;
	return 0;
}

/* May transfer x leave its sender for helper h? */
static int movable(const struct bal *s, const struct nbr_xfer *x, int h)
{
	uint32_t k;

	if (x->to == h || x->from == h)
		return 0;
	for (k = 0; k < x->nblk; k++) {
		uint32_t e = s->b->blk[x->blk0 + k];

		if (s->op == NBR_ALLGATHER ?
		    s->g->from[e] != x->from : has_block(s, e, h))
			return 0;
	}
	return 1;
}

/* The ranks with the most and (other than it) the fewest sends; for
 * allgather the helper must be one of m's destinations. */
static void extremes(const struct bal *s, int *m, int *h)
{
	const struct nbr_balance *b = s->b;
	int r, n = s->g->n;
	uint32_t x;

	*m = 0;
	for (r = 1; r < n; r++)
		if (s->sends[r] > s->sends[*m])
			*m = r;
	*h = -1;
	for (r = 0; r < n; r++) {
		int ok = r != *m;

		for (x = 0; ok && s->op == NBR_ALLGATHER && x < b->nxf; x++)
			if (b->xf[x].from == *m && b->xf[x].to == r)
				break;
		if (s->op == NBR_ALLGATHER && x == b->nxf)
			ok = 0;
		if (ok && (*h < 0 || s->sends[r] < s->sends[*h]))
			*h = r;
	}
}

/* How many to move from m to h (<= 0: stop). */
static long how_many(const struct bal *s, int m, int h)
{
	long sm = s->sends[m], sh = s->sends[h];

	if (sm - sh <= (long)s->t)
		return 0;
	if (s->op == NBR_ALLTOALL)
		return (sm + sh) / 2 - sh - (long)s->lo;
	return (sm - sh) / 2 - (long)s->lo;
}

/* alltoall: one new transfer m -> h with the blocks of the moved ones. */
static int add_pack(struct bal *s, int m, int h, const uint32_t *moved,
		    uint32_t nmoved)
{
	struct nbr_balance *b = s->b;
	uint32_t k, j, nblk = 0;

	for (k = 0; k < nmoved; k++)
		nblk += b->xf[moved[k]].nblk;
	if (coop_coll_grow((void **)&b->xf, &b->capxf, b->nxf + 1, sizeof(*b->xf)) ||
	    coop_coll_grow((void **)&b->blk, &b->capblk, b->nblk + nblk,
		 sizeof(*b->blk)))
		return -1;
	b->xf[b->nxf] = (struct nbr_xfer){ m, h, b->nblk, nblk, 0, 0, 0 };
	for (k = 0; k < nmoved; k++)
		for (j = 0; j < b->xf[moved[k]].nblk; j++)
			b->blk[b->nblk++] = b->blk[b->xf[moved[k]].blk0 + j];
	b->nxf++;
	s->sends[m]++;
	return 0;
}

/* One round: the number moved, 0 when balanced, -1 out of memory. */
static long round_once(struct bal *s, uint32_t *moved)
{
	struct nbr_balance *b = s->b;
	uint32_t nmoved = 0, x;
	long want;
	int m, h;

	extremes(s, &m, &h);
	if (h < 0)
		return 0;
	want = how_many(s, m, h);
	if (want < 2)		/* moving one message saves nothing */
		return 0;
	for (x = b->nxf; x-- > 0 && nmoved < (uint32_t)want;)
		if (b->xf[x].from == m && movable(s, &b->xf[x], h))
			moved[nmoved++] = x;
	if (nmoved < 2)
		return 0;
	if (s->op == NBR_ALLTOALL && add_pack(s, m, h, moved, nmoved))
		return -1;
	for (x = 0; x < nmoved; x++)
		b->xf[moved[x]].from = h;
	s->sends[m] -= nmoved;
	s->sends[h] += nmoved;
	return (long)nmoved;
}

int coop_nbr_balance(const struct coop_graph *g, enum coop_nbr_op op,
		     uint64_t block, struct nbr_balance *b,
		     const struct coop_config *cfg)
{
	struct bal s = { g, op, b, NULL, cfg->nbr_tree_slack, cfg->nbr_tree_hop_sends };
	uint32_t x, *moved, rounds;
	long n, total = 0;

	if (block > (g->shared_cpus ? cfg->nbr_tree_shared :
		     cfg->nbr_tree_max) || !g->nedges)
		return 0;
	s.sends = calloc((size_t)g->n, sizeof(*s.sends));
	moved = malloc(((size_t)b->nxf + (size_t)g->n * 4u + 1) *
		       sizeof(*moved));
	if (!s.sends || !moved) {
		free(s.sends);
		free(moved);
		return -1;
	}
	for (x = 0; x < b->nxf; x++)
		s.sends[b->xf[x].from]++;
	for (rounds = 0; rounds < (uint32_t)g->n * 4u; rounds++) {
		n = round_once(&s, moved);
		if (n <= 0) {
			total = n < 0 ? -1 : total;
			break;
		}
		total += n;
	}
	free(s.sends);
	free(moved);
	return (int)total;
}
