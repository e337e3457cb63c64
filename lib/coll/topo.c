/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * topo.c - topologies: checks, the creation's exchange (rank 0 gathers
 * every rank's lists, checks that both ends of each edge agree, and
 * sends the whole graph back), the graph every rank then holds, and
 * each op's plan.
 *
 * A rank's description on the wire (uint64_t words): hints, indegree,
 * outdegree, weighted, whether it shares CPUs (more ranks than CPUs:
 * plans depend on it, so every rank must go by the same answer), then
 * destinations, their weights (if weighted), sources, their weights (if
 * weighted).
 */
#include <stdlib.h>
#include <string.h>

#include "coll.h"

/* tags of the creation's messages (data tags stay below them) */
#define TAG_DESC_LEN	(COOP_TAG_UB - 1)
#define TAG_DESC	(COOP_TAG_UB - 2)
#define TAG_GRAPH_LEN	(COOP_TAG_UB - 3)
#define TAG_GRAPH	(COOP_TAG_UB - 4)
#define HDR		5u
#define KNOWN_HINTS	(COOP_TOPO_STRICT | COOP_TOPO_EXACT_BYTES | \
			 COOP_TOPO_STATIC_BUFFERS)

struct desc {			/* a rank's lists, pointing into words */
	uint64_t hints, indeg, outdeg, weighted, shared_cpus;
	const uint64_t *dst, *dw, *src, *sw;
};

static int check_list(const struct coop_context *ctx, int deg,
		      const int *ranks, const uint64_t *w, int need_w)
{
	int i;

	if (deg < 0 || (deg && !ranks) || (need_w && deg && !w))
		return COOP_ERR_ARG;
	for (i = 0; i < deg; i++)
		if (ranks[i] < 0 || ranks[i] >= ctx->size)
			return COOP_ERR_RANK;
	return COOP_SUCCESS;
}

static int check_args(const struct coop_context *ctx, uint32_t comm,
		      int indeg, const int *src, const uint64_t *sw,
		      int outdeg, const int *dst, const uint64_t *dw,
		      unsigned hints, struct coop_topo **out)
{
	int exact = !!(hints & COOP_TOPO_EXACT_BYTES), rc;

	if (!ctx || !out || (hints & ~KNOWN_HINTS))
		return COOP_ERR_ARG;
	if (!ctx->connected || ctx->dynamic)
		return COOP_ERR_STATE;
	if (comm > COOP_COMM_MAX)
		return COOP_ERR_COMM;
	if (!!sw != !!dw && indeg && outdeg)
		return COOP_ERR_ARG;	/* weighted at one end only */
	rc = check_list(ctx, indeg, src, sw, exact);
	return rc ? rc : check_list(ctx, outdeg, dst, dw, exact);
}

static uint64_t *pack_desc(const struct coop_context *ctx, int indeg,
			   const int *src, const uint64_t *sw, int outdeg,
			   const int *dst, const uint64_t *dw, unsigned hints,
			   size_t *nwords)
{
	int weighted = (sw || !indeg) && (dw || !outdeg) && (sw || dw);
	size_t n = HDR + (size_t)(indeg + outdeg) * (weighted ? 2u : 1u);
	uint64_t *w = malloc(n * sizeof(*w)), *p;
	int i;

	if (!w)
		return NULL;
	w[0] = hints;
	w[1] = (uint64_t)indeg;
	w[2] = (uint64_t)outdeg;
	w[3] = (uint64_t)weighted;
	w[4] = !ctx->undersubscribed;
	p = w + HDR;
	for (i = 0; i < outdeg; i++)
		*p++ = (uint64_t)dst[i];
	for (i = 0; weighted && i < outdeg; i++)
		*p++ = dw[i];
	for (i = 0; i < indeg; i++)
		*p++ = (uint64_t)src[i];
	for (i = 0; weighted && i < indeg; i++)
		*p++ = sw[i];
	*nwords = n;
	return w;
}

/* Parse one description at w (nwords left): its length, 0 if bad. */
static size_t parse_desc(const uint64_t *w, size_t nwords, struct desc *d)
{
	size_t len;

	if (nwords < HDR || w[1] > (uint64_t)INT32_MAX ||
	    w[2] > (uint64_t)INT32_MAX || w[3] > 1 || w[4] > 1)
		return 0;
	d->hints = w[0];
	d->indeg = w[1];
	d->outdeg = w[2];
	d->weighted = w[3];
	d->shared_cpus = w[4];
	len = HDR + (size_t)(d->indeg + d->outdeg) * (d->weighted ? 2u : 1u);
	if (len > nwords)
		return 0;
	d->dst = w + HDR;
	d->dw = d->weighted ? d->dst + d->outdeg : NULL;
	d->src = d->dst + d->outdeg * (d->weighted ? 2u : 1u);
	d->sw = d->weighted ? d->src + d->indeg : NULL;
	return len;
}

/* ---------------- the graph ---------------- */

static void graph_free(struct coop_graph *g)
{
	free(g->out_off);
	free(g->to);
	free(g->weight);
	free(g->from);
	free(g->slot);
	free(g->rslot);
	free(g->in_deg);
	memset(g, 0, sizeof(*g));
}

static int graph_alloc(struct coop_graph *g, int n, uint32_t e, int weighted)
{
	size_t ne = e ? e : 1;

	g->n = n;
	g->nedges = e;
	g->out_off = calloc((size_t)n + 1, sizeof(*g->out_off));
	g->to = calloc(ne, sizeof(*g->to));
	g->from = calloc(ne, sizeof(*g->from));
	g->slot = calloc(ne, sizeof(*g->slot));
	g->rslot = calloc(ne, sizeof(*g->rslot));
	g->in_deg = calloc((size_t)n, sizeof(*g->in_deg));
	g->weight = weighted ? calloc(ne, sizeof(*g->weight)) : NULL;
	if (g->out_off && g->to && g->from && g->slot && g->rslot &&
	    g->in_deg && (!weighted || g->weight))
		return 0;
	graph_free(g);
	return -1;
}

/* The k-th occurrence of o among d's sources: its index, or -1. */
static long nth_source(const struct desc *d, uint64_t o, uint32_t k)
{
	uint64_t i;

	for (i = 0; i < d->indeg; i++)
		if (d->src[i] == o && k-- == 0)
			return (long)i;
	return -1;
}

/* Edge e = o's slot j: where it lands at d, checked against d's lists.
 * COOP_ERR_CONFIG when d does not name it (or weighs it otherwise). */
static int place_edge(struct coop_graph *g, const struct desc *ds, int o,
		      uint32_t j, uint32_t e)
{
	const struct desc *od = &ds[o];
	int d = (int)od->dst[j];
	uint32_t k = 0, i;
	long r;

	for (i = 0; i < j; i++)
		k += od->dst[i] == (uint64_t)d;
	r = nth_source(&ds[d], (uint64_t)o, k);
	if (r < 0 || (od->weighted && od->dw[j] != ds[d].sw[r]))
		return COOP_ERR_CONFIG;
	g->to[e] = d;
	g->from[e] = o;
	g->slot[e] = j;
	g->rslot[e] = (uint32_t)r;
	if (g->weight)
		g->weight[e] = od->dw[j];
	g->in_deg[d]++;
	return COOP_SUCCESS;
}

/* Are the edges weighted?  Ranks without edges have none to weigh; the
 * others must agree: 0, 1, or -1. */
static int weighted(const struct desc *ds, int n)
{
	int o, w = -2;

	for (o = 0; o < n; o++) {
		if (!ds[o].indeg && !ds[o].outdeg)
			continue;
		if (w != -2 && w != (int)ds[o].weighted)
			return -1;
		w = (int)ds[o].weighted;
	}
	return w < 0 ? 0 : w;
}

/* Every rank's descriptions ds[n]: the graph, or COOP_ERR_CONFIG. */
static int graph_build(struct coop_graph *g, const struct desc *ds, int n)
{
	int o, rc, w = weighted(ds, n);
	uint32_t e = 0, j;

	if (w < 0)
		return COOP_ERR_CONFIG;
	for (o = 0; o < n; o++) {
		if (ds[o].hints != ds[0].hints)
			return COOP_ERR_CONFIG;
		for (j = 0; j < ds[o].outdeg; j++)
			if (ds[o].dst[j] >= (uint64_t)n)
				return COOP_ERR_CONFIG;
		for (j = 0; j < ds[o].indeg; j++)
			if (ds[o].src[j] >= (uint64_t)n)
				return COOP_ERR_CONFIG;
		e += (uint32_t)ds[o].outdeg;
		g->shared_cpus |= !!ds[o].shared_cpus;
	}
	if (graph_alloc(g, n, e, w))
		return COOP_ERR_NOMEM;
	for (e = 0, o = 0; o < n; o++) {
		g->out_off[o] = e;
		for (j = 0; j < ds[o].outdeg; j++, e++) {
			rc = place_edge(g, ds, o, j, e);
			if (rc)
				return rc;
		}
	}
	g->out_off[n] = e;
	/* every source named is an edge: the counts agree */
	for (o = 0; o < n; o++)
		if (g->in_deg[o] != ds[o].indeg)
			return COOP_ERR_CONFIG;
	return COOP_SUCCESS;
}

/* ---------------- the exchange ---------------- */

/* Rank 0: gather everyone's description into one buffer. */
static int gather(struct coop_context *ctx, uint16_t comm, uint64_t *mine,
		  size_t nmine, uint64_t **all, size_t *nall)
{
	size_t n = nmine, got;
	uint64_t *w = malloc(nmine * sizeof(*w)), len, *nw;
	int i, rc;

	if (!w)
		return COOP_ERR_NOMEM;
	memcpy(w, mine, nmine * sizeof(*w));
	for (i = 1; i < ctx->size; i++) {
		rc = coop_coll_recv(ctx, &len, sizeof(len), i, TAG_DESC_LEN,
				    comm, &got);
		if (!rc && (got != sizeof(len) || len > (1u << 26)))
			rc = COOP_ERR_CONFIG;
		nw = rc ? NULL : realloc(w, (n + len) * sizeof(*w));
		if (!rc && !nw)
			rc = COOP_ERR_NOMEM;
		if (rc) {
			free(w);
			return rc;
		}
		w = nw;
		rc = coop_coll_recv(ctx, w + n, len * sizeof(*w), i, TAG_DESC,
				    comm, NULL);
		if (rc) {
			free(w);
			return rc;
		}
		n += len;
	}
	*all = w;
	*nall = n;
	return COOP_SUCCESS;
}

/* Split the gathered words into ds[n]: 0, or COOP_ERR_CONFIG. */
static int split(const uint64_t *w, size_t nw, struct desc *ds, int n)
{
	size_t len;
	int i;

	for (i = 0; i < n; i++) {
		len = parse_desc(w, nw, &ds[i]);
		if (!len)
			return COOP_ERR_CONFIG;
		w += len;
		nw -= len;
	}
	return nw ? COOP_ERR_CONFIG : COOP_SUCCESS;
}

/* Rank 0 to all: the status, then (if fine) the gathered words. */
static int spread(struct coop_context *ctx, uint16_t comm, int status,
		  const uint64_t *w, size_t nw)
{
	uint64_t hdr[2] = { (uint64_t)status, nw };
	int i, rc, first = COOP_SUCCESS;

	for (i = 1; i < ctx->size; i++) {
		rc = coop_coll_send(ctx, hdr, sizeof(hdr), i, TAG_GRAPH_LEN,
				    comm);
		if (!rc && !status)
			rc = coop_coll_send(ctx, w, nw * sizeof(*w), i,
					    TAG_GRAPH, comm);
		if (rc && !first)
			first = rc;
	}
	return first;
}

static int receive_graph(struct coop_context *ctx, uint16_t comm,
			 uint64_t **all, size_t *nall)
{
	uint64_t hdr[2];
	size_t got;
	int rc;

	rc = coop_coll_recv(ctx, hdr, sizeof(hdr), 0, TAG_GRAPH_LEN, comm,
			    &got);
	if (rc)
		return rc;
	if (got != sizeof(hdr) || hdr[1] > (1u << 28))
		return COOP_ERR_CONFIG;
	if (hdr[0])
		return (int)hdr[0];
	*all = malloc((hdr[1] ? hdr[1] : 1) * sizeof(**all));
	if (!*all)
		return COOP_ERR_NOMEM;
	*nall = hdr[1];
	rc = coop_coll_recv(ctx, *all, hdr[1] * sizeof(**all), 0, TAG_GRAPH,
			    comm, &got);
	if (!rc && got != hdr[1] * sizeof(**all))
		rc = COOP_ERR_CONFIG;
	if (rc) {
		free(*all);
		*all = NULL;
	}
	return rc;
}

/* Everyone's words, checked at rank 0 and the same on every rank. */
static int exchange(struct coop_context *ctx, uint16_t comm, uint64_t *mine,
		    size_t nmine, struct coop_graph *g)
{
	struct desc *ds = calloc((size_t)ctx->size, sizeof(*ds));
	uint64_t *all = NULL;
	size_t nall = 0;
	int rc;

	if (!ds)
		return COOP_ERR_NOMEM;
	if (ctx->rank == 0) {
		rc = gather(ctx, comm, mine, nmine, &all, &nall);
		if (!rc)
			rc = split(all, nall, ds, ctx->size);
		if (!rc)
			rc = graph_build(g, ds, ctx->size);
		if (spread(ctx, comm, rc, all, nall) && !rc)
			rc = COOP_ERR_PEER_DEAD;
	} else {
		uint64_t len = nmine;

		rc = coop_coll_send(ctx, &len, sizeof(len), 0, TAG_DESC_LEN,
				    comm);
		if (!rc)
			rc = coop_coll_send(ctx, mine, nmine * sizeof(*mine),
					    0, TAG_DESC, comm);
		if (!rc)
			rc = receive_graph(ctx, comm, &all, &nall);
		if (!rc)
			rc = split(all, nall, ds, ctx->size);
		if (!rc)
			rc = graph_build(g, ds, ctx->size);
	}
	if (rc)
		graph_free(g);
	free(all);
	free(ds);
	return rc;
}

/* ---------------- topologies ---------------- */

/* Each op's plan: with EXACT_BYTES and one weight on every edge, for
 * blocks of that size (balanced if small), else for any sizes. */
static int plans_build(struct coop_topo *t)
{
	const struct coop_graph *g = &t->g;
	uint64_t block = UINT64_MAX;
	uint32_t e;
	int op;

	if ((t->hints & COOP_TOPO_EXACT_BYTES) && g->weight && g->nedges) {
		block = g->weight[0];
		for (e = 1; e < g->nedges; e++)
			if (g->weight[e] != block)
				block = UINT64_MAX;
	}
	for (op = 0; op < NBR_OPS; op++) {
		t->plan[op] = coop_nbr_plan_build(t, (enum coop_nbr_op)op,
						  block);
		if (!t->plan[op])
			return COOP_ERR_NOMEM;
		if (t->plan[op]->nxf >= MAX_XFERS)
			return COOP_ERR_UNSUPPORTED;	/* tags run out */
	}
	return COOP_SUCCESS;
}

/* This rank's weight of each of its sources (EXACT_BYTES checks). */
static int in_weights(struct coop_topo *t)
{
	const struct coop_graph *g = &t->g;
	uint32_t e;

	if (!g->weight)
		return COOP_SUCCESS;
	t->in_weight = calloc((size_t)t->indeg + 1, sizeof(*t->in_weight));
	if (!t->in_weight)
		return COOP_ERR_NOMEM;
	for (e = 0; e < g->nedges; e++)
		if (g->to[e] == t->ctx->rank)
			t->in_weight[g->rslot[e]] = g->weight[e];
	return COOP_SUCCESS;
}

int coop_topo_free_locked(struct coop_topo *t)
{
	int op;

	if (coop_nbr_blocking_free(t))
		return COOP_ERR_STATE;	/* a request still runs or may */
	coop_nbr_slots_fini(t);
	coop_coll_spares_free(t);
	for (op = 0; op < NBR_OPS; op++) {
		coop_nbr_plan_free(t->plan[op]);
		free(t->sizes[op].out);
		free(t->sizes[op].in);
	}
	graph_free(&t->g);
	free(t->in_weight);
	free(t);
	return COOP_SUCCESS;
}

int coop_topo_create_locked(struct coop_context *ctx, uint32_t comm,
			    int indeg, const int *src, const uint64_t *sw,
			    int outdeg, const int *dst, const uint64_t *dw,
			    unsigned hints, struct coop_topo **out)
{
	struct coop_topo *t;
	uint64_t *mine;
	size_t nmine;
	int rc = check_args(ctx, comm, indeg, src, sw, outdeg, dst, dw, hints,
			    out);

	if (rc)
		return rc;
	t = calloc(1, sizeof(*t));
	mine = pack_desc(ctx, indeg, src, sw, outdeg, dst, dw, hints, &nmine);
	rc = t && mine ? exchange(ctx, (uint16_t)comm, mine, nmine, &t->g) :
			 COOP_ERR_NOMEM;
	free(mine);
	if (rc) {
		free(t);
		return rc;
	}
	t->ctx = ctx;
	t->comm = (uint16_t)comm;
	t->hints = hints;
	t->indeg = indeg;
	t->outdeg = outdeg;
	t->id = ++ctx->coll->topos;
	rc = in_weights(t);
	if (!rc)
		rc = plans_build(t);
	if (!rc)
		rc = coop_nbr_slots_init(t);
	if (rc) {
		coop_topo_free_locked(t);
		return rc;
	}
	*out = t;
	return COOP_SUCCESS;
}

enum slot_kind { SLOT_ANY, SLOT_SHARED, SLOT_PACKED };

/* rank's transfers with a slot: any, sharing it, or packed (more
 * buffers, their lines re-armed whole) */
static int slotted(const struct nbr_plan *p, int rank, enum slot_kind k)
{
	const struct nbr_slots *s = p->slots;
	uint32_t x;
	int n = 0;

	for (x = 0; x < p->nxf; x++)
		n += p->xf[x].from == rank && s->cap[x] &&
		     (k == SLOT_ANY ||
		      (k == SLOT_SHARED ? s->grp[s->grp[x].lead].members > 1 :
		       s->grp[x].bufs > SLOT_BUFS));
	return n;
}

void coop_topo_info_fill(const struct coop_topo *t, coop_topo_info_t *info)
{
	int op;

	memset(info, 0, sizeof(*info));
	for (op = 0; op < NBR_OPS; op++) {
		const struct nbr_plan *p = t->plan[op];

		info->colors[op] = (int)p->ncolors;
		info->sends[op] = (int)p->sends;
		info->forwards[op] = (int)p->forwards;
		info->moved[op] = (int)p->moved;
		if (!p->slots)
			continue;
		info->slotted[op] = slotted(p, t->ctx->rank, SLOT_ANY);
		info->slot_sends[op] = p->slots->sends;
		info->canary_flags[op] = p->slots->flagged;
		info->grouped[op] = slotted(p, t->ctx->rank, SLOT_SHARED);
		info->packed[op] = slotted(p, t->ctx->rank, SLOT_PACKED);
	}
}
