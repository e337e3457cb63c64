/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nbr.c - a neighborhood collective call: its arguments checked (on the
 * calling rank, before any message), then a request running the op's
 * plan.  With COOP_TOPO_EXACT_BYTES every block must have its edge's
 * weight: the plan's scratch layout and balancing rely on it.
 */
#include <stdlib.h>

#include "coll.h"

/* Blocks of the send (out) or receive (in) side: sizes and buffer
 * (allgather's one send block counts once per destination). */
static int check_side(int deg, const void *buf, size_t uniform,
		      const size_t *counts, const size_t *displs,
		      const uint64_t *weights)
{
	int i;

	if (deg && counts && !displs)
		return COOP_ERR_ARG;
	for (i = 0; i < deg; i++) {
		size_t n = counts ? counts[i] : uniform;

		if (n && !buf)
			return COOP_ERR_ARG;
		if (weights && n != weights[i])
			return COOP_ERR_COUNT;
	}
	return COOP_SUCCESS;
}

static int check_call(const struct coop_topo *t, const struct nbr_args *a)
{
	int exact = !!(t->hints & COOP_TOPO_EXACT_BYTES) && t->g.weight;
	const struct coop_graph *g = &t->g;
	int rc;

	rc = check_side(t->outdeg, a->sbuf, a->sbytes, a->scounts, a->sdispls,
			exact ? g->weight + g->out_off[t->ctx->rank] : NULL);
	return rc ? rc : check_side(t->indeg, a->rbuf, a->rbytes, a->rcounts,
				    a->rdispls, exact ? t->in_weight : NULL);
}

/* One side's sizes against the first call's (first: record them). */
static int same_sizes(size_t *kept, int first, int deg, size_t uniform,
		      const size_t *counts)
{
	int i;

	for (i = 0; i < deg; i++) {
		size_t n = counts ? counts[i] : uniform;

		if (first)
			kept[i] = n;
		else if (kept[i] != n)
			return COOP_ERR_COUNT;
	}
	return COOP_SUCCESS;
}

/* STATIC_BUFFERS: every call of an op has the first one's sizes (slots
 * are taken or not by size, and both ends must take them alike). */
static int check_static(struct coop_topo *t, const struct nbr_args *a)
{
	struct nbr_sizes *z = &t->sizes[a->op];
	int first = !z->known, rc;

	if (!(t->hints & COOP_TOPO_STATIC_BUFFERS))
		return COOP_SUCCESS;
	if (first) {
		z->out = calloc((size_t)t->outdeg + 1, sizeof(*z->out));
		z->in = calloc((size_t)t->indeg + 1, sizeof(*z->in));
		if (!z->out || !z->in) {
			free(z->out);
			free(z->in);
			z->out = z->in = NULL;
			return COOP_ERR_NOMEM;
		}
	}
	rc = same_sizes(z->out, first, t->outdeg, a->sbytes, a->scounts);
	if (!rc)
		rc = same_sizes(z->in, first, t->indeg, a->rbytes, a->rcounts);
	if (!rc)
		z->known = 1;
	return rc;
}

static int check_args(struct coop_topo *t, const struct nbr_args *a)
{
	int rc = check_call(t, a);

	return rc ? rc : check_static(t, a);
}

int coop_nbr_call(struct coop_topo *t, const struct nbr_args *a,
		  coop_request_t **req, int persistent)
{
	struct coop_request *r;
	int rc;

	if (!t || !req)
		return COOP_ERR_ARG;
	rc = check_args(t, a);
	if (!rc)
		rc = coop_coll_request(t, t->plan[a->op], a, persistent, &r);
	if (rc)
		return rc;
	*req = r;
	return persistent ? COOP_SUCCESS : coop_coll_start(r);
}

/*
 * A blocking call runs on a request t keeps per op, a persistent one
 * started over each call's buffers: no request is allocated, set up and
 * freed per call (one edge, plain calls of 8 / 64 B: 0.180 / 0.293 ->
 * 0.097 / 0.250 us per call, Open MPI 0.163 / 0.276).  When another
 * thread's blocking call runs it (waiting without the lock), a new
 * request goes instead.
 */
int coop_nbr_call_blocking(struct coop_topo *t, const struct nbr_args *a,
			   coop_request_t **req)
{
	struct coop_request **kept = &t->blocking[a->op];
	int rc;

	if (*kept && (*kept)->active)
		return coop_nbr_call(t, a, req, 0);
	rc = check_args(t, a);
	if (!rc && !*kept)
		rc = coop_coll_request(t, t->plan[a->op], a, 1, kept);
	if (rc)
		return rc;
	*req = *kept;
	return coop_coll_start_with(*kept, a);
}

int coop_nbr_blocking_free(struct coop_topo *t)
{
	unsigned kept = 0;
	int op;

	for (op = 0; op < NBR_OPS; op++) {
		if (t->blocking[op] && t->blocking[op]->active)
			return COOP_ERR_STATE;
		kept += !!t->blocking[op];
	}
	if (t->nreqs != kept)
		return COOP_ERR_STATE;	/* the user's requests come first */
	for (op = 0; op < NBR_OPS; op++) {
		if (t->blocking[op])
			coop_req_free(t->blocking[op]);
		t->blocking[op] = NULL;
	}
	return COOP_SUCCESS;
}
