/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * color.c - the send schedule's colouring [Hoefler, II-A3]: Welsh and
 * Powell's greedy heuristic on the conflict graph of the transfers (two
 * conflict when they share a sender or a receiver).  Transfers are taken
 * most conflicting first; each colour class is filled in that order with
 * every transfer whose sender and receiver are still free in it.  A
 * colour is a round: in it every rank sends at most one message and
 * receives at most one, so no receiver is a hot spot (the paper's
 * alltoall example: everyone sending to 0 first, then to 1...).
 */
#include <stdlib.h>

#include "coll.h"

struct wp {
	const struct nbr_xfer *xf;
	const uint32_t *deg;	/* [2 * nranks]: sends, then receives */
	int n;
};

static uint32_t conflicts(const struct wp *w, uint32_t i)
{
	return w->deg[w->xf[i].from] + w->deg[w->n + w->xf[i].to];
}

static int by_conflicts(const void *a, const void *b, void *arg)
{
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	uint32_t ci = conflicts(arg, i), cj = conflicts(arg, j);

	if (ci != cj)
		return ci > cj ? -1 : 1;
	return i < j ? -1 : i > j;
}

/* Fill colour c in order[0..n); the number coloured. */
static uint32_t fill_class(struct nbr_xfer *xf, const uint32_t *order,
			   uint32_t n, uint8_t *busy, int nranks, uint32_t c)
{
	uint32_t k, done = 0;

	for (k = 0; k < (uint32_t)nranks * 2u; k++)
		busy[k] = 0;
	for (k = 0; k < n; k++) {
		struct nbr_xfer *x = &xf[order[k]];

		if (x->color != UINT32_MAX || busy[x->from] ||
		    busy[nranks + x->to])
			continue;
		x->color = c;
		busy[x->from] = busy[nranks + x->to] = 1;
		done++;
	}
	return done;
}

uint32_t coop_nbr_color(struct nbr_xfer *xf, uint32_t n, int nranks)
{
	uint32_t *order = malloc(n * sizeof(*order));
	uint32_t *deg = calloc((size_t)nranks * 2u, sizeof(*deg));
	uint8_t *busy = malloc((size_t)nranks * 2u);
	uint32_t i, c = 0, left = n;
	struct wp w = { xf, deg, nranks };

	if (!order || !deg || !busy) {
		free(order);
		free(deg);
		free(busy);
		return 0;
	}
	for (i = 0; i < n; i++) {
		order[i] = i;
		xf[i].color = UINT32_MAX;
		deg[xf[i].from]++;
		deg[nranks + xf[i].to]++;
	}
	qsort_r(order, n, sizeof(*order), by_conflicts, &w);
	while (left)
		left -= fill_class(xf, order, n, busy, nranks, c++);
	free(order);
	free(deg);
	free(busy);
	return c;
}
