/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nbr_test.c - the neighbor case's reference ([Hoefler]; coopmpi.h's
 * "Neighborhood collectives"), shared by its t_nbr_*.c files, and
 * tc_neighbor(), which adds their tests.
 *
 * Every rank builds the same global graph (struct graph: each rank's
 * destinations and sources, in order) and creates the topology from its
 * own lists.  A block's bytes are a pattern of (origin, slot, call): the
 * origin's block for its destination slot j (allgather: its one block,
 * slot AG_SLOT) in the call-th collective.  So each rank knows what every
 * block it receives must hold: block i of rank r comes from o =
 * sources[i], and is o's slot j where r is the k-th occurrence of r in
 * o's destinations when o is the k-th occurrence of o in r's sources
 * (MPI's rule for multigraphs).  After each call every received block is
 * compared, the bytes around the blocks (gaps of the v variants, the
 * tail) must still hold the sentinel, and the send blocks are unchanged.
 */
#include <check.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "nbr_test.h"
#include "tests.h"

#define ITERS 3			/* starts of a persistent request */

/* ------------------------------------------------------------------ */
/* graphs                                                               */
/* ------------------------------------------------------------------ */

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* An edge o -> d, at the end of o's destinations and d's sources. */
void g_edge(struct graph *g, int o, int d)
{
	T_ASSERT(g->outdeg[o] < MAXDEG && g->indeg[d] < MAXDEG, "degree");
	g->dst[o][g->outdeg[o]++] = d;
	g->src[d][g->indeg[d]++] = o;
}

/* A periodic neighbour of r: coordinate k moved by dir. */
static int cart_shift(const struct gspec *s, int r, int k, int dir)
{
	int stride = 1, m, c;

	for (m = 0; m < k; m++)
		stride *= s->dims[m];
	c = r / stride % s->dims[k];
	return r + ((c + dir + s->dims[k]) % s->dims[k] - c) * stride;
}

/* Both lists of every rank: -x, +x, -y, +y, ... (MPI_Cart's order). */
static void g_cart(struct graph *g, const struct gspec *s)
{
	int r, k, d;

	for (r = 0; r < g->n; r++)
		for (k = 0; k < s->ndims; k++)
			for (d = -1; d <= 1; d += 2) {
				int nb = cart_shift(s, r, k, d);

				g->dst[r][g->outdeg[r]++] = nb;
				g->src[r][g->indeg[r]++] = nb;
			}
}

/* The same graph on every rank (the seed is part of the spec); sources
 * in increasing origin order except for the stencils. */
void graph_make(struct graph *g, const struct gspec *s)
{
	uint32_t st = s->seed | 1;
	int o, d;

	memset(g, 0, sizeof(*g));
	g->n = s->n;
	switch (s->kind) {
	case G_ER:
		for (o = 0; o < s->n; o++)
			for (d = 0; d < s->n; d++)
				if (o != d && rnd(&st) <= s->p * UINT32_MAX)
					g_edge(g, o, d);
		break;
	case G_CART:
		g_cart(g, s);
		break;
	case G_HOT:
		for (o = 0; o < s->n; o++)
			for (d = 0; d < s->n; d++)
				if (o != d && (!o || (s->back && !d)))
					g_edge(g, o, d);
		break;
	case G_RING:
		for (o = 0; o < s->n; o++)
			g_edge(g, o, (o + 1) % s->n);
		break;
	}
}

/* The slot j of o = sources[i] of r whose block lands in r's block i. */
int origin_slot(const struct graph *g, int r, int i)
{
	int o = g->src[r][i], k = 0, j;

	for (j = 0; j < i; j++)
		k += g->src[r][j] == o;
	for (j = 0; j < g->outdeg[o]; j++)
		if (g->dst[o][j] == r && k-- == 0)
			return j;
	T_FAIL("graph: source %d of rank %d names no edge", i, r);
	return -1;
}

/* ------------------------------------------------------------------ */
/* a rank's view                                                        */
/* ------------------------------------------------------------------ */

const char *const op_name[NOPS] = { "allgather", "allgatherv",
				    "alltoall", "alltoallv" };
const char *const mode_name[NMODES] = { "blocking", "nonblocking",
					"persistent" };

uint32_t bseed(int o, int j, uint32_t iter)
{
	return (uint32_t)(o * 1000 + j) + iter * 7919u;
}

/* v variants: the bytes of origin o's block for slot j (AG_SLOT: its
 * allgather block); 0 for some, and sizes around base. */
static size_t vsize(size_t base, int o, int j)
{
	if (!base || (o + j) % 4 == 3)
		return 0;
	return base / 2 + (size_t)((o * 31 + j * 17) % 5) * (base / 4 + 1);
}

/* Create k's topology from its graph on comm with hints (weights per
 * k->wmode). */
int topo_make(struct rk *k, uint32_t comm, unsigned hints)
{
	const struct graph *g = &k->g;
	uint64_t sw[MAXDEG], dw[MAXDEG];
	int r = k->rank, i;

	for (i = 0; i < g->outdeg[r]; i++)
		dw[i] = k->wmode == W_EDGE ? vsize(k->wbytes, r, i) :
					     k->wbytes;
	for (i = 0; i < g->indeg[r]; i++)
		sw[i] = k->wmode == W_EDGE ?
			vsize(k->wbytes, g->src[r][i], origin_slot(g, r, i)) :
			k->wbytes;
	return coop_topo_create(k->ctx, comm, g->indeg[r], g->src[r],
				k->wmode ? sw : NULL, g->outdeg[r], g->dst[r],
				k->wmode ? dw : NULL, hints, &k->topo);
}

/* ------------------------------------------------------------------ */
/* one call's buffers and the reference                                 */
/* ------------------------------------------------------------------ */

static int is_ag(int op)
{
	return op == OP_AG || op == OP_AGV;
}

int is_v(int op)
{
	return op == OP_AGV || op == OP_A2AV;
}

/* Blocks cnt[0..n) with gaps of 0..10 bytes (odd offsets), in reverse
 * order if rev; the buffer's length. */
size_t layout(int n, const size_t *cnt, size_t *dsp, int rev)
{
	size_t off = 0;
	int m;

	for (m = 0; m < n; m++) {
		int i = rev ? n - 1 - m : m;

		off += (size_t)(i * 7 + 3) % 11;
		dsp[i] = off;
		off += cnt[i];
	}
	return off + TAIL;
}

static size_t contiguous(int n, size_t bytes, size_t *cnt, size_t *dsp)
{
	int i;

	for (i = 0; i < n; i++) {
		cnt[i] = bytes;
		dsp[i] = (size_t)i * bytes;
	}
	return (size_t)n * bytes + TAIL;
}

/* The size of origin o's block for slot j in a v call of k. */
static size_t block_size(const struct rk *k, size_t base, int o, int j)
{
	return k->wmode == W_UNIFORM ? base : vsize(base, o, j);
}

/* c's buffers of c->slen and c->rlen bytes, the send one all SENT. */
void call_alloc(struct call *c)
{
	c->sbuf = malloc(c->slen);
	c->rbuf = malloc(c->rlen);
	T_ASSERT(c->sbuf && c->rbuf, "malloc %zu + %zu", c->slen, c->rlen);
	memset(c->sbuf, SENT, c->slen);
}

void call_setup(struct call *c, const struct rk *k, int op, size_t bytes)
{
	const struct graph *g = &k->g;
	int r = k->rank, i;

	memset(c, 0, sizeof(*c));
	c->op = op;
	c->bytes = bytes;
	c->nsend = is_ag(op) ? 1 : g->outdeg[r];
	c->nrecv = g->indeg[r];
	if (!is_v(op)) {
		c->slen = contiguous(c->nsend, bytes, c->scnt, c->sdsp);
		c->rlen = contiguous(c->nrecv, bytes, c->rcnt, c->rdsp);
	} else {
		for (i = 0; i < c->nsend; i++)
			c->scnt[i] = block_size(k, bytes, r,
						is_ag(op) ? AG_SLOT : i);
		for (i = 0; i < c->nrecv; i++)
			c->rcnt[i] = block_size(k, bytes, g->src[r][i],
						is_ag(op) ? AG_SLOT :
						origin_slot(g, r, i));
		c->slen = layout(c->nsend, c->scnt, c->sdsp, 0);
		c->rlen = layout(c->nrecv, c->rcnt, c->rdsp, 1);
	}
	call_alloc(c);
}

void call_free(struct call *c)
{
	free(c->sbuf);
	free(c->rbuf);
}

/* The next call's data: send blocks filled, receive buffer cleared. */
void call_fill(struct call *c, struct rk *k)
{
	int i;

	c->iter = k->iter++;
	for (i = 0; i < c->nsend; i++)
		t_fill(c->sbuf + c->sdsp[i], c->scnt[i],
		       bseed(k->rank, is_ag(c->op) ? AG_SLOT : i, c->iter));
	memset(c->rbuf, SENT, c->rlen);
}

/* Compare every received block with the reference, then the bytes
 * around them, and the send blocks. */
void call_check(struct call *c, const struct rk *k)
{
	const struct graph *g = &k->g;
	int r = k->rank, i;
	size_t b;
	long bad;

	for (i = 0; i < c->nrecv; i++) {
		int o = g->src[r][i];
		int j = is_ag(c->op) ? AG_SLOT : origin_slot(g, r, i);

		bad = t_check(c->rbuf + c->rdsp[i], c->rcnt[i],
			      bseed(o, j, c->iter));
		T_ASSERT(bad < 0, "%s: block %d (%zu B from %d, its slot %d): "
			 "byte %ld wrong", k->what, i, c->rcnt[i], o, j, bad);
		memset(c->rbuf + c->rdsp[i], SENT, c->rcnt[i]);
	}
	for (b = 0; b < c->rlen; b++)
		T_ASSERT(c->rbuf[b] == SENT, "%s: byte %zu of %zu written "
			 "outside the blocks", k->what, b, c->rlen);
	for (i = 0; i < c->nsend; i++)
		T_ASSERT(t_check(c->sbuf + c->sdsp[i], c->scnt[i],
				 bseed(r, is_ag(c->op) ? AG_SLOT : i,
				       c->iter)) < 0,
			 "%s: send block %d changed", k->what, i);
}

/* Post c's collective on t in mode (blocking: run it; *req = NULL if
 * req is not). */
int call_post(struct call *c, coop_topo_t *t, int mode,
	      coop_request_t **req)
{
	const unsigned char *s = c->sbuf + c->sdsp[0];
	size_t sb = c->scnt[0], n = c->bytes;
	unsigned char *rb = c->rbuf;

	if (mode == M_BLOCK && req)
		*req = NULL;
	switch (c->op) {
	case OP_AG:
		return mode == M_BLOCK ?
		       coop_neighbor_allgather(t, s, sb, rb, n) :
		       mode == M_NONBLOCK ?
		       coop_ineighbor_allgather(t, s, sb, rb, n, req) :
		       coop_neighbor_allgather_init(t, s, sb, rb, n, req);
	case OP_AGV:
		return mode == M_BLOCK ?
		       coop_neighbor_allgatherv(t, s, sb, rb, c->rcnt,
						c->rdsp) :
		       mode == M_NONBLOCK ?
		       coop_ineighbor_allgatherv(t, s, sb, rb, c->rcnt,
						 c->rdsp, req) :
		       coop_neighbor_allgatherv_init(t, s, sb, rb, c->rcnt,
						     c->rdsp, req);
	case OP_A2A:
		return mode == M_BLOCK ?
		       coop_neighbor_alltoall(t, c->sbuf, n, rb, n) :
		       mode == M_NONBLOCK ?
		       coop_ineighbor_alltoall(t, c->sbuf, n, rb, n, req) :
		       coop_neighbor_alltoall_init(t, c->sbuf, n, rb, n, req);
	default:
		return mode == M_BLOCK ?
		       coop_neighbor_alltoallv(t, c->sbuf, c->scnt, c->sdsp,
					       rb, c->rcnt, c->rdsp) :
		       mode == M_NONBLOCK ?
		       coop_ineighbor_alltoallv(t, c->sbuf, c->scnt, c->sdsp,
						rb, c->rcnt, c->rdsp, req) :
		       coop_neighbor_alltoallv_init(t, c->sbuf, c->scnt,
						    c->sdsp, rb, c->rcnt,
						    c->rdsp, req);
	}
}

/* A collective's request has an empty status with its error. */
void check_status(const struct rk *k, const coop_status_t *st, int err)
{
	T_ASSERT(st->error == err && st->count == 0 &&
		 st->source == COOP_ANY_SOURCE && st->tag == COOP_ANY_TAG,
		 "%s: status error %d count %zu source %d tag %d", k->what,
		 st->error, st->count, st->source, st->tag);
}

/* A few progress calls, then the wait. */
void complete(struct rk *k, coop_request_t **req, int persistent)
{
	coop_status_t st;
	int i, rc;

	T_ASSERT(*req, "%s: no request", k->what);
	for (i = 0; i < 5; i++)
		T_OK(coop_progress(k->ctx));
	rc = coop_wait(req, &st);
	T_ASSERT(rc == COOP_SUCCESS, "%s: wait: %s", k->what,
		 coop_strerror(rc));
	check_status(k, &st, COOP_SUCCESS);
	T_ASSERT(persistent ? *req != NULL : *req == NULL,
		 "%s: request after the wait", k->what);
}

/* A blocking call of c's, checked. */
void blocking_call(struct call *c, struct rk *k)
{
	call_fill(c, k);
	T_OK(call_post(c, k->topo, M_BLOCK, NULL));
	call_check(c, k);
}

/* One collective in one mode (persistent: ITERS starts). */
void run_call(struct rk *k, int op, int mode, size_t bytes)
{
	coop_request_t *req = NULL;
	struct call c;
	int it, n = mode == M_PERSIST ? ITERS : 1;

	snprintf(k->what, sizeof(k->what), "%s %s %zu B", op_name[op],
		 mode_name[mode], bytes);
	call_setup(&c, k, op, bytes);
	if (mode == M_PERSIST)
		T_OK(call_post(&c, k->topo, mode, &req));
	for (it = 0; it < n; it++) {
		call_fill(&c, k);
		if (mode == M_PERSIST)
			T_OK(coop_start(&req));
		else
			T_OK(call_post(&c, k->topo, mode, &req));
		if (mode != M_BLOCK)
			complete(k, &req, mode == M_PERSIST);
		call_check(&c, k);
	}
	if (mode == M_PERSIST) {
		T_OK(coop_request_free(&req));
		T_ASSERT(!req, "%s: freed request", k->what);
	}
	call_free(&c);
}

/* Every op (of the mask) in every mode at every size. */
void run_matrix(struct rk *k, const size_t *sizes, int nsizes,
		unsigned ops)
{
	int s, op, mode;

	for (s = 0; s < nsizes; s++)
		for (op = 0; op < NOPS; op++)
			for (mode = 0; ops >> op & 1 && mode < NMODES; mode++)
				run_call(k, op, mode, sizes[s]);
}

/* Degrees as created; each plan's colours enough for this rank's
 * messages (and its edges when nothing was balanced); unbalanced plans
 * (no EXACT_BYTES, or weights that differ) move and forward nothing.
 * *out: the info. */
void check_info(const struct rk *k, coop_topo_info_t *out)
{
	coop_topo_info_t in;
	int indeg = -1, outdeg = -1, op;

	T_OK(coop_topo_degrees(k->topo, &indeg, &outdeg));
	T_ASSERT(indeg == k->g.indeg[k->rank] &&
		 outdeg == k->g.outdeg[k->rank], "degrees %d %d", indeg,
		 outdeg);
	T_OK(coop_topo_degrees(k->topo, NULL, NULL));
	T_OK(coop_topo_get_info(k->topo, &in));
	for (op = COOP_NBR_ALLGATHER; op <= COOP_NBR_ALLTOALL; op++) {
		T_ASSERT(in.sends[op] >= 0 && in.forwards[op] >= 0 &&
			 in.forwards[op] <= in.sends[op] && in.moved[op] >= 0 &&
			 in.colors[op] >= in.sends[op],
			 "info of op %d: colours %d sends %d forwards %d "
			 "moved %d", op, in.colors[op], in.sends[op],
			 in.forwards[op], in.moved[op]);
		if (!in.moved[op])
			T_ASSERT(in.colors[op] >= outdeg &&
				 in.colors[op] >= indeg, "op %d: %d colours "
				 "for degrees %d/%d", op, in.colors[op],
				 indeg, outdeg);
		if (k->wmode != W_UNIFORM)
			T_ASSERT(!in.moved[op] && !in.forwards[op] &&
				 in.sends[op] <= outdeg,
				 "unbalanced op %d: sends %d forwards %d "
				 "moved %d", op, in.sends[op],
				 in.forwards[op], in.moved[op]);
	}
	if (out)
		*out = in;
}

void rk_init(struct rk *k, coop_context_t *ctx, int rank,
	     const struct gspec *s)
{
	memset(k, 0, sizeof(*k));
	k->ctx = ctx;
	k->rank = rank;
	graph_make(&k->g, s);
	T_ASSERT(k->g.n == s->n, "graph of %d ranks", k->g.n);
}

void topo_done(struct rk *k)
{
	T_OK(coop_topo_free(&k->topo));
	T_ASSERT(!k->topo, "freed topology");
}

uint32_t test_seed(void)
{
	const char *e = getenv("COOP_TEST_SEED");

	return e ? (uint32_t)strtoul(e, NULL, 0) : 12345u;
}

double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Do size ranks have a CPU each here (the CPUs this process may run
 * on, as the library counts them)? */
int cpu_per_rank(int size)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return sysconf(_SC_NPROCESSORS_ONLN) >= size;
	return CPU_COUNT(&set) >= size;
}

/* ------------------------------------------------------------------ */
/* several collectives outstanding                                      */
/* ------------------------------------------------------------------ */

/* n (<= MAX_TOGETHER) calls (ops[i], bytes) on ks[i]'s topology started
 * at once, then one waitall; each checked. */
void run_together(struct rk *const *ks, const int *ops, int n,
		  size_t bytes)
{
	coop_request_t *req[MAX_TOGETHER];
	coop_status_t st[MAX_TOGETHER];
	struct call c[MAX_TOGETHER];
	int i, rc;

	T_ASSERT(n <= MAX_TOGETHER, "%d calls together", n);
	for (i = 0; i < n; i++) {
		call_setup(&c[i], ks[i], ops[i], bytes);
		call_fill(&c[i], ks[i]);
		T_OK(call_post(&c[i], ks[i]->topo, M_NONBLOCK, &req[i]));
	}
	for (i = 0; i < 3; i++)
		T_OK(coop_progress(ks[0]->ctx));
	rc = coop_waitall(n, req, st);
	for (i = 0; rc && i < n; i++)
		fprintf(stderr, "[rank %d] outstanding %d of %d: %s\n",
			ks[i]->rank, i, n, coop_strerror(st[i].error));
	T_ASSERT(rc == COOP_SUCCESS, "waitall of %d: %s", n, coop_strerror(rc));
	for (i = 0; i < n; i++) {
		snprintf(ks[i]->what, sizeof(ks[i]->what),
			 "outstanding %d of %d: %s %zu B", i, n,
			 op_name[ops[i]], bytes);
		T_ASSERT(!req[i], "%s: request left", ks[i]->what);
		check_status(ks[i], &st[i], COOP_SUCCESS);
		call_check(&c[i], ks[i]);
		call_free(&c[i]);
	}
}

/* ------------------------------------------------------------------ */
/* settings of static and packed slots                                  */
/* ------------------------------------------------------------------ */

/* Static slots of COOP_NEIGHBOR_SLOT_MAX (4 KiB) bytes, direct RTR or a
 * binary RTR tree (t_nbr_static.c, t_nbr_canary.c, t_nbr_death.c) */
const char *const env_direct[] = { "COOP_NEIGHBOR_SLOT_MAX=4096",
				    "COOP_NEIGHBOR_RTR=direct",
				    "COOP_SPIN=100", NULL };
const char *const env_tree2[] = { "COOP_NEIGHBOR_SLOT_MAX=4096",
				   "COOP_NEIGHBOR_RTR=tree",
				   "COOP_NEIGHBOR_RTR_ARITY=2",
				   "COOP_SPIN=100", NULL };

/* Packed slots: direct RTR, no tree balancing (t_nbr_canary.c,
 * t_nbr_death.c) */
const char *const env_packed[] = { "COOP_NEIGHBOR_RTR=direct",
				    "COOP_NEIGHBOR_TREE_MAX=0",
				    "COOP_SPIN=100", NULL };

/* ------------------------------------------------------------------ */
/* the case                                                             */
/* ------------------------------------------------------------------ */

/* The tests of every t_nbr_*.c file, in the order the case has always
 * run them (and its loop ranges: each nbr_add_*() adds one test). */
TCase *tc_neighbor(void)
{
	TCase *tc = tcase_create("neighbor");

	tcase_set_timeout(tc, 120);
	nbr_add_er(tc);
	nbr_add_stencil(tc);
	nbr_add_outstanding(tc);
	nbr_add_open_slots(tc);
	nbr_add_open_sizes(tc);
	nbr_add_open_window(tc);
	nbr_add_flood_bounded(tc);
	nbr_add_exact_hotspot(tc);
	nbr_add_exact_hotspot_shared(tc);
	nbr_add_group_line(tc);
	nbr_add_copier(tc);
	nbr_add_exact_er(tc);
	nbr_add_bad_args(tc);
	nbr_add_peer_death(tc);
	nbr_add_static(tc);
	nbr_add_canary(tc);
	nbr_add_packed(tc);
	nbr_add_single_copy(tc);
	nbr_add_static_death(tc);
	nbr_add_packed_death(tc);
	return tc;
}
