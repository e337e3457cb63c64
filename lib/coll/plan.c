/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * plan.c - a collective's plan: the whole graph's transfers (one per
 * edge, then balanced and coloured) and this rank's DAG [Hoefler,
 * III-C]: a receive vertex per transfer to us (into the user's block
 * when it delivers one, else into scratch), a send vertex per transfer
 * from us (from the user's block, a block we received, or a pack of
 * several), a pack vertex where a transfer carries several blocks.  A
 * send depends on the receive that brought its data; sends start in
 * colour order, and with COOP_NEIGHBOR_ORDER=color each also waits for
 * the previous one (a round starts when our message of the last one is
 * delivered).  Not by default: in shared memory a receiver copies its
 * messages one after the other anyway, and a round that waits for its
 * slowest receiver only leaves CPUs idle.
 */
#include <stdlib.h>
#include <string.h>

#include "coll.h"

struct builder {
	const struct coop_topo *t;
	struct nbr_plan *p;
	int rank;
	uint64_t k;		/* uniform block bytes (scratch layout) */
	uint32_t *recv_v;	/* [nxf] our receive vertex of it, or ~0 */
	uint64_t *temp_off;	/* [nxf] its scratch area */
	uint32_t (*dep)[2];	/* (pred, succ) pairs */
	uint32_t ndep, capdep;
	uint32_t capv, capseg;
};

#define NONE UINT32_MAX

static uint32_t add_vertex(struct builder *b, uint8_t kind, int peer,
			   uint32_t xfer, struct nbr_ref ref)
{
	struct nbr_plan *p = b->p;

	if (coop_coll_grow((void **)&p->v, &b->capv, p->nv + 1, sizeof(*p->v)))
		return NONE;
	p->v[p->nv] = (struct nbr_vertex){ .kind = kind, .peer = peer,
					   .xfer = xfer, .ref = ref,
					   .mate = NONE };
	return p->nv++;
}

static int add_dep(struct builder *b, uint32_t pred, uint32_t succ)
{
	if (pred == NONE)
		return 0;
	if (coop_coll_grow((void **)&b->dep, &b->capdep, b->ndep + 1, sizeof(*b->dep)))
		return -1;
	b->dep[b->ndep][0] = pred;
	b->dep[b->ndep][1] = succ;
	b->ndep++;
	return 0;
}

static int delivers(const struct nbr_plan *p, const struct coop_graph *g,
		    const struct nbr_xfer *x)
{
	return x->nblk == 1 && g->to[p->blk[x->blk0]] == x->to;
}

/* The transfer to rank r carrying block e, or NONE. */
static uint32_t xfer_to_with(const struct nbr_plan *p, int r, uint32_t e)
{
	uint32_t x, k;

	for (x = 0; x < p->nxf; x++)
		for (k = 0; p->xf[x].to == r && k < p->xf[x].nblk; k++)
			if (p->blk[p->xf[x].blk0 + k] == e)
				return x;
	return NONE;
}

/* Where block e's bytes are at our rank, and the vertex bringing them. */
static int locate(const struct builder *b, uint32_t e, struct nbr_ref *ref,
		  uint32_t *pred)
{
	const struct coop_graph *g = &b->t->g;
	const struct nbr_plan *p = b->p;
	int o = g->from[e];
	uint32_t x, k, f;

	*pred = NONE;
	if (o == b->rank) {
		*ref = (struct nbr_ref){ SP_SEND, g->slot[e], 0, 0 };
		return 0;
	}
	if (p->op == NBR_ALLGATHER) {	/* o's block, as it came to us */
		for (f = g->out_off[o]; f < g->out_off[o + 1]; f++)
			if (g->to[f] == b->rank)
				break;
		x = f < g->out_off[o + 1] ? xfer_to_with(p, b->rank, f) : NONE;
		if (x == NONE)
			return -1;
		*ref = (struct nbr_ref){ SP_RECV, g->rslot[f], 0, 0 };
		*pred = b->recv_v[x];
		return 0;
	}
	x = xfer_to_with(p, b->rank, e);
	if (x == NONE)
		return -1;
	for (k = 0; p->blk[p->xf[x].blk0 + k] != e; k++)
		;
	*ref = (struct nbr_ref){ SP_TEMP, 0, b->temp_off[x] + k * b->k, b->k };
	*pred = b->recv_v[x];
	return 0;
}

static int add_receives(struct builder *b)
{
	const struct coop_graph *g = &b->t->g;
	struct nbr_plan *p = b->p;
	uint32_t x;

	for (x = 0; x < p->nxf; x++) {
		const struct nbr_xfer *xf = &p->xf[x];
		struct nbr_ref ref = { SP_RECV, 0, 0, 0 };

		b->recv_v[x] = NONE;
		if (xf->to != b->rank)
			continue;
		if (delivers(p, g, xf)) {
			ref.slot = g->rslot[p->blk[xf->blk0]];
		} else {
			ref = (struct nbr_ref){ SP_TEMP, 0, p->temp,
						xf->nblk * b->k };
			b->temp_off[x] = p->temp;
			p->temp += ref.len;
		}
		b->recv_v[x] = add_vertex(b, V_RECV, xf->from, x, ref);
		if (b->recv_v[x] == NONE)
			return -1;
	}
	return 0;
}

/* A pack of transfer x's blocks into fresh scratch: its vertex. */
static uint32_t add_pack(struct builder *b, const struct nbr_xfer *xf,
			 uint32_t x, struct nbr_ref *out)
{
	struct nbr_plan *p = b->p;
	uint32_t v, k, pred;

	*out = (struct nbr_ref){ SP_TEMP, 0, p->temp, xf->nblk * b->k };
	p->temp += out->len;
	v = add_vertex(b, V_PACK, -1, x, *out);
	if (v == NONE || coop_coll_grow((void **)&p->seg, &b->capseg,
			      p->nsegs + xf->nblk, sizeof(*p->seg)))
		return NONE;
	p->v[v].seg0 = p->nsegs;
	p->v[v].nsegs = xf->nblk;
	for (k = 0; k < xf->nblk; k++) {
		struct nbr_seg *s = &p->seg[p->nsegs++];

		if (locate(b, p->blk[xf->blk0 + k], &s->src, &pred) ||
		    add_dep(b, pred, v))
			return NONE;
		s->dst = (struct nbr_ref){ SP_TEMP, 0, out->off + k * b->k,
					   b->k };
	}
	return v;
}

static int add_send(struct builder *b, uint32_t x, uint32_t *prev)
{
	const struct nbr_xfer *xf = &b->p->xf[x];
	const struct coop_graph *g = &b->t->g;
	struct nbr_ref ref;
	uint32_t pred, v;
	int own = 1;
	uint32_t k;

	for (k = 0; k < xf->nblk; k++)
		own &= g->from[b->p->blk[xf->blk0 + k]] == b->rank;
	if (xf->nblk == 1) {
		if (locate(b, b->p->blk[xf->blk0], &ref, &pred))
			return -1;
	} else {
		pred = add_pack(b, xf, x, &ref);
		if (pred == NONE)
			return -1;
	}
	v = add_vertex(b, V_SEND, xf->to, x, ref);
	if (v == NONE || add_dep(b, pred, v) ||
	    (b->t->ctx->cfg.nbr_order && add_dep(b, *prev, v)))
		return -1;
	if (xf->to == b->rank) {	/* to ourselves: a copy, no message */
		b->p->v[v].mate = b->recv_v[x];
		b->p->v[b->recv_v[x]].mate = v;
	}
	*prev = v;
	b->p->sends++;
	b->p->forwards += !own;
	return 0;
}

static int by_color(const void *a, const void *c, void *arg)
{
	const struct nbr_xfer *xf = arg;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)c;

	if (xf[i].color != xf[j].color)
		return xf[i].color < xf[j].color ? -1 : 1;
	return i < j ? -1 : i > j;
}

static int add_sends(struct builder *b)
{
	struct nbr_plan *p = b->p;
	uint32_t *mine = malloc((p->nxf + 1) * sizeof(*mine));
	uint32_t x, n = 0, prev = NONE;
	int rc = 0;

	if (!mine)
		return -1;
	for (x = 0; x < p->nxf; x++)
		if (p->xf[x].from == b->rank)
			mine[n++] = x;
	qsort_r(mine, n, sizeof(*mine), by_color, p->xf);
	for (x = 0; x < n && !rc; x++)
		rc = add_send(b, mine[x], &prev);
	free(mine);
	return rc;
}

/* The (pred, succ) pairs as counts and successor lists. */
static int link_deps(struct builder *b)
{
	struct nbr_plan *p = b->p;
	uint32_t i, *fill;

	p->succ = malloc((b->ndep + 1) * sizeof(*p->succ));
	fill = calloc(p->nv + 1, sizeof(*fill));
	if (!p->succ || !fill) {
		free(fill);
		return -1;
	}
	for (i = 0; i < b->ndep; i++) {
		p->v[b->dep[i][0]].nsucc++;
		p->v[b->dep[i][1]].ndeps++;
	}
	for (i = 1; i < p->nv; i++)
		p->v[i].succ0 = p->v[i - 1].succ0 + p->v[i - 1].nsucc;
	for (i = 0; i < b->ndep; i++) {
		uint32_t pr = b->dep[i][0];

		p->succ[p->v[pr].succ0 + fill[pr]++] = b->dep[i][1];
	}
	free(fill);
	return 0;
}

static int build_dag(const struct coop_topo *t, struct nbr_plan *p)
{
	struct builder b = { .t = t, .p = p, .rank = t->ctx->rank,
			     .k = p->block == UINT64_MAX ? 0 : p->block };
	int rc;

	b.recv_v = calloc(p->nxf + 1, sizeof(*b.recv_v));
	b.temp_off = calloc(p->nxf + 1, sizeof(*b.temp_off));
	rc = b.recv_v && b.temp_off ? add_receives(&b) : -1;
	if (!rc)
		rc = add_sends(&b);
	if (!rc)
		rc = link_deps(&b);
	free(b.recv_v);
	free(b.temp_off);
	free(b.dep);
	return rc;
}

/* Each transfer's roles by what its ranks do in the call: does its
 * sender receive nothing from another rank (sender_idle), and does it
 * take part in more than twice as many transfers as its receiver (a hot
 * spot's centre: receiver_copies)?  -1 when out of memory. */
static int mark_roles(struct nbr_xfer *xf, uint32_t n, int nranks)
{
	uint32_t *recvs = calloc((size_t)nranks, sizeof(*recvs));
	uint32_t *part = calloc((size_t)nranks, sizeof(*part)), i;

	if (!recvs || !part) {
		free(recvs);
		free(part);
		return -1;
	}
	for (i = 0; i < n; i++) {
		int other = xf[i].from != xf[i].to;

		recvs[xf[i].to] += other;
		part[xf[i].to] += other;
		part[xf[i].from] += other;
	}
	for (i = 0; i < n; i++) {
		xf[i].sender_idle = !recvs[xf[i].from];
		xf[i].receiver_copies = part[xf[i].from] > 2 * part[xf[i].to];
	}
	free(recvs);
	free(part);
	return 0;
}

/* One transfer per edge, then the balancing; the colouring. */
static int build_xfers(const struct coop_topo *t, struct nbr_plan *p)
{
	const struct coop_graph *g = &t->g;
	struct nbr_balance bal = { 0 };
	uint32_t e, n = g->nedges ? g->nedges : 1;
	int moved = 0;

	bal.xf = malloc(n * sizeof(*bal.xf));
	bal.blk = malloc(n * sizeof(*bal.blk));
	bal.capxf = bal.capblk = n;
	if (!bal.xf || !bal.blk)
		goto fail;
	for (e = 0; e < g->nedges; e++) {
		bal.xf[e] = (struct nbr_xfer){ g->from[e], g->to[e], e, 1, 0,
						0, 0 };
		bal.blk[e] = e;
	}
	bal.nxf = bal.nblk = g->nedges;
	if (p->block != UINT64_MAX &&
	    (t->hints & COOP_TOPO_EXACT_BYTES))
		moved = coop_nbr_balance(g, p->op, p->block, &bal,
					 &t->ctx->cfg);
	if (moved < 0)
		goto fail;
	p->ncolors = bal.nxf ? coop_nbr_color(bal.xf, bal.nxf, g->n) : 0;
	if ((bal.nxf && !p->ncolors) ||
	    mark_roles(bal.xf, bal.nxf, g->n))
		goto fail;
	p->xf = bal.xf;
	p->nxf = bal.nxf;
	p->blk = bal.blk;
	p->nblk = bal.nblk;
	p->moved = (uint32_t)moved;
	return 0;
fail:
	free(bal.xf);
	free(bal.blk);
	return -1;
}

struct nbr_plan *coop_nbr_plan_build(const struct coop_topo *t,
				     enum coop_nbr_op op, uint64_t block)
{
	struct nbr_plan *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->op = op;
	p->block = block;
	if (build_xfers(t, p) || build_dag(t, p)) {
		coop_nbr_plan_free(p);
		return NULL;
	}
	return p;
}

void coop_nbr_plan_free(struct nbr_plan *p)
{
	if (!p)
		return;
	free(p->xf);
	free(p->blk);
	free(p->v);
	free(p->succ);
	free(p->seg);
	coop_nbr_slots_free(p->slots);
	free(p);
}
