/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_neighbor.c - neighborhood collectives ([Hoefler]; coopmpi.h's
 * "Neighborhood collectives"), checked against a naive reference.
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
 *
 * Graphs: Erdos-Renyi A(s, p) (4 ranks, p 0.3, 0.7, 1), periodic
 * Cartesian stencils (2x2: every neighbour twice; 2x2x1x1: also four
 * self edges), a hot spot (8 ranks).  Calls: allgather(v), alltoall(v),
 * blocking, nonblocking (progress, then wait) and persistent (started 3
 * times, refilled in between); several outstanding at once on one and
 * on two topologies; COOP_TOPO_EXACT_BYTES (tree balancing of the hot
 * spot, sizes checked); bad arguments and graphs the ranks disagree on;
 * a neighbour killed during an alltoall.  Open slots (no hints): every
 * message has one, blocks of up to 64 KiB are written there (counted),
 * larger ones streamed through them in parts (counted; past
 * COOP_NEIGHBOR_STREAM_MAX messages), twenty calls at once whose blocks
 * change size from call to call,
 * sizes the two ends disagree on (errors as for messages, never a
 * hang), a topology whose windows would be too large, and
 * COOP_NEIGHBOR_SLOT_OPEN=0.  COOP_TOPO_STATIC_BUFFERS:
 * every op and mode through the static slots and past them (direct RTR,
 * a binary RTR tree, a chain), streamed through them in parts (exact
 * sizes, direct RTR), three calls outstanding, sizes fixed by
 * the first call; blocks ending in the canary's bytes (flag counted
 * exactly); packed slots (a sender that receives nothing, blocks of at
 * most 64 B: 1-8 calls a line, its receivers late); a rank killed
 * between calls (and a packed slot's sender); one killed while its
 * 1 MiB blocks stream through open slots.
 */
#include <check.h>
#include <inttypes.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "tests.h"

#define MAXR 8			/* ranks of a graph */
#define MAXDEG 16		/* a rank's in- or out-degree */
#define COMM_BASE 300		/* topologies' context ids: 300.. */
#define SENT 0xa5		/* the bytes no block may write */
#define AG_SLOT 500		/* allgather's one block, in the seeds */
#define ITERS 3			/* starts of a persistent request */
#define TAIL 16			/* sentinel bytes behind the last block */
#define MIB (1u << 20)

/* ------------------------------------------------------------------ */
/* graphs                                                               */
/* ------------------------------------------------------------------ */

struct graph {
	int n;
	int outdeg[MAXR], indeg[MAXR];
	int dst[MAXR][MAXDEG], src[MAXR][MAXDEG];
};

enum gkind { G_ER, G_CART, G_HOT, G_RING };

struct gspec {
	enum gkind kind;
	int n;
	double p;		/* G_ER: edge probability */
	uint32_t seed;		/* G_ER */
	int ndims, dims[4];	/* G_CART: periodic, rank-major in dim 0 */
	int back;		/* G_HOT: the others send to rank 0 */
	const char *name;
};

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* An edge o -> d, at the end of o's destinations and d's sources. */
static void g_edge(struct graph *g, int o, int d)
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
static void graph_make(struct graph *g, const struct gspec *s)
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

static int g_edges(const struct graph *g)
{
	int r, e = 0;

	for (r = 0; r < g->n; r++)
		e += g->outdeg[r];
	return e;
}

/* The slot j of o = sources[i] of r whose block lands in r's block i. */
static int origin_slot(const struct graph *g, int r, int i)
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

enum { OP_AG, OP_AGV, OP_A2A, OP_A2AV, NOPS };
enum { M_BLOCK, M_NONBLOCK, M_PERSIST, NMODES };
enum { W_NONE, W_UNIFORM, W_EDGE };	/* EXACT_BYTES weights */

static const char *const op_name[NOPS] = { "allgather", "allgatherv",
					   "alltoall", "alltoallv" };
static const char *const mode_name[NMODES] = { "blocking", "nonblocking",
					       "persistent" };

struct rk {
	coop_context_t *ctx;
	coop_topo_t *topo;
	struct graph g;
	int rank;
	int wmode;		/* the topology's weights: W_* */
	size_t wbytes;		/* ... their size (base) */
	uint32_t iter;		/* collectives so far: the data's seeds */
	char what[96];		/* the call, for messages */
};

static uint32_t bseed(int o, int j, uint32_t iter)
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
static int topo_make(struct rk *k, uint32_t comm, unsigned hints)
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

struct call {
	int op, nsend, nrecv;
	size_t bytes;			/* uniform size; v: sizes' base */
	size_t scnt[MAXDEG], sdsp[MAXDEG], rcnt[MAXDEG], rdsp[MAXDEG];
	size_t slen, rlen;
	unsigned char *sbuf, *rbuf;
	uint32_t iter;			/* of the data in it */
};

static int is_ag(int op)
{
	return op == OP_AG || op == OP_AGV;
}

static int is_v(int op)
{
	return op == OP_AGV || op == OP_A2AV;
}

/* Blocks cnt[0..n) with gaps of 0..10 bytes (odd offsets), in reverse
 * order if rev; the buffer's length. */
static size_t layout(int n, const size_t *cnt, size_t *dsp, int rev)
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
static void call_alloc(struct call *c)
{
	c->sbuf = malloc(c->slen);
	c->rbuf = malloc(c->rlen);
	T_ASSERT(c->sbuf && c->rbuf, "malloc %zu + %zu", c->slen, c->rlen);
	memset(c->sbuf, SENT, c->slen);
}

static void call_setup(struct call *c, const struct rk *k, int op,
		       size_t bytes)
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

static void call_free(struct call *c)
{
	free(c->sbuf);
	free(c->rbuf);
}

/* The next call's data: send blocks filled, receive buffer cleared. */
static void call_fill(struct call *c, struct rk *k)
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
static void call_check(struct call *c, const struct rk *k)
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
static int call_post(struct call *c, coop_topo_t *t, int mode,
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
static void check_status(const struct rk *k, const coop_status_t *st,
			 int err)
{
	T_ASSERT(st->error == err && st->count == 0 &&
		 st->source == COOP_ANY_SOURCE && st->tag == COOP_ANY_TAG,
		 "%s: status error %d count %zu source %d tag %d", k->what,
		 st->error, st->count, st->source, st->tag);
}

/* A few progress calls, then the wait. */
static void complete(struct rk *k, coop_request_t **req, int persistent)
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
static void blocking_call(struct call *c, struct rk *k)
{
	call_fill(c, k);
	T_OK(call_post(c, k->topo, M_BLOCK, NULL));
	call_check(c, k);
}

/* One collective in one mode (persistent: ITERS starts). */
static void run_call(struct rk *k, int op, int mode, size_t bytes)
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
static void run_matrix(struct rk *k, const size_t *sizes, int nsizes,
		       unsigned ops)
{
	int s, op, mode;

	for (s = 0; s < nsizes; s++)
		for (op = 0; op < NOPS; op++)
			for (mode = 0; ops >> op & 1 && mode < NMODES; mode++)
				run_call(k, op, mode, sizes[s]);
}

#define ALL_OPS ((1u << NOPS) - 1)

/* Degrees as created; each plan's colours enough for this rank's
 * messages (and its edges when nothing was balanced); unbalanced plans
 * (no EXACT_BYTES, or weights that differ) move and forward nothing.
 * *out: the info. */
static void check_info(const struct rk *k, coop_topo_info_t *out)
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

static void rk_init(struct rk *k, coop_context_t *ctx, int rank,
		    const struct gspec *s)
{
	memset(k, 0, sizeof(*k));
	k->ctx = ctx;
	k->rank = rank;
	graph_make(&k->g, s);
	T_ASSERT(k->g.n == s->n, "graph of %d ranks", k->g.n);
}

static void topo_done(struct rk *k)
{
	T_OK(coop_topo_free(&k->topo));
	T_ASSERT(!k->topo, "freed topology");
}

static uint32_t test_seed(void)
{
	const char *e = getenv("COOP_TEST_SEED");

	return e ? (uint32_t)strtoul(e, NULL, 0) : 12345u;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------ */
/* data: every op x mode x size on a graph                              */
/* ------------------------------------------------------------------ */

static const size_t sizes_std[] = { 0, 1, 8, 100, 4096, 65536 + 3 };
#define NSIZES_STD ((int)(sizeof(sizes_std) / sizeof(sizes_std[0])))

struct data_case {
	struct gspec g;
	int big;		/* also 1 MiB (+ 1 for the v sizes) */
	unsigned hints;
};

static int data_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	const struct data_case *dc = arg;
	const size_t big[] = { MIB };
	struct rk k;

	(void)size;
	rk_init(&k, ctx, rank, &dc->g);
	T_OK(topo_make(&k, COMM_BASE, dc->hints));
	check_info(&k, NULL);
	run_matrix(&k, sizes_std, NSIZES_STD, ALL_OPS);
	if (dc->big)
		run_matrix(&k, big, 1, ALL_OPS);
	topo_done(&k);
	return 0;
}

static void run_data(const struct data_case *dc, const char *const *env)
{
	struct graph g;
	double t0 = now();

	graph_make(&g, &dc->g);
	ck_assert_int_eq(run_ranks(dc->g.n, env, data_rank, (void *)dc, 60,
				   NULL), 0);
	fprintf(stderr, "neighbor: %s, %d edges: %.2f s\n", dc->g.name,
		g_edges(&g), now() - t0);
}

static const double er_p[] = { 0.3, 0.7, 1.0, 0.7 };
static const char *const env_color[] = { "COOP_NEIGHBOR_ORDER=color",
					  NULL };

/* A(4, p) for p 0.3, 0.7, 1 (1 MiB too), and 0.7 again with the sends
 * in colour rounds, each after the last (COOP_NEIGHBOR_ORDER=color). */
START_TEST(test_er)
{
	struct data_case dc = { .g = { .kind = G_ER, .n = 4, .p = er_p[_i],
				       .seed = test_seed() + (uint32_t)_i },
				.big = _i == 2, .hints = COOP_TOPO_STRICT };
	char name[64];

	snprintf(name, sizeof(name), "A(4, %.1f) seed %u%s", er_p[_i],
		 dc.g.seed, _i == 3 ? ", order color" : "");
	dc.g.name = name;
	run_data(&dc, _i == 3 ? env_color : NULL);
}
END_TEST

/* Periodic 2x2 (every neighbour twice) and 2x2x1x1 (also four self
 * edges): multigraph slots in MPI's order. */
START_TEST(test_stencil)
{
	struct data_case dc = { .g = { .kind = G_CART, .n = 4, .ndims = 2,
				       .dims = { 2, 2, 1, 1 },
				       .name = "stencil 2x2" } };

	if (_i) {
		dc.g.ndims = 4;
		dc.g.name = "stencil 2x2x1x1";
	}
	run_data(&dc, NULL);
}
END_TEST

/* ------------------------------------------------------------------ */
/* open slots: topologies without STATIC_BUFFERS                        */
/* ------------------------------------------------------------------ */

#define OPEN_MAX 65536		/* COOP_NEIGHBOR_SLOT_OPEN's default */
#define OPEN_PAST (OPEN_MAX + 3808)	/* a block past an open slot */
#define OPEN_BIG (3 * OPEN_MAX + 5)	/* four parts of a buffer */
#define OPEN_CALLS 20		/* outstanding at once: past 16 buffers */
#define OPEN_STREAM 40		/* blocking calls of a size in a row */

/* Origin o's block for its slot j in call i: 0 B to past the slot (a
 * packed slot's entry holds up to 8 B). */
static size_t open_size(int o, int j, int i)
{
	static const size_t z[] = { 5, OPEN_MAX, 0, OPEN_PAST, 8, 64,
				    OPEN_MAX + 1, 9 };

	return z[(o * 3 + j * 5 + i) % 8];
}

/* Call i's alltoallv blocks of k's rank, sizes by open_size. */
static void open_setup(struct call *c, const struct rk *k, int i)
{
	const struct graph *g = &k->g;
	int r = k->rank, j;

	memset(c, 0, sizeof(*c));
	c->op = OP_A2AV;
	c->nsend = g->outdeg[r];
	c->nrecv = g->indeg[r];
	for (j = 0; j < c->nsend; j++)
		c->scnt[j] = open_size(r, j, i);
	for (j = 0; j < c->nrecv; j++)
		c->rcnt[j] = open_size(g->src[r][j], origin_slot(g, r, j), i);
	c->slen = layout(c->nsend, c->scnt, c->sdsp, 0);
	c->rlen = layout(c->nrecv, c->rcnt, c->rdsp, 1);
	call_alloc(c);
}

/* OPEN_CALLS alltoallv calls at once, each block's size changing from
 * call to call (through the slot, past it, empty): all data right. */
static void open_outstanding(struct rk *k)
{
	coop_request_t *req[OPEN_CALLS];
	coop_status_t st[OPEN_CALLS];
	struct call c[OPEN_CALLS];
	int i, rc;

	for (i = 0; i < OPEN_CALLS; i++) {
		open_setup(&c[i], k, i);
		call_fill(&c[i], k);
		T_OK(call_post(&c[i], k->topo, M_NONBLOCK, &req[i]));
	}
	rc = coop_waitall(OPEN_CALLS, req, st);
	for (i = 0; rc && i < OPEN_CALLS; i++)
		fprintf(stderr, "[rank %d] open call %d of %d: %s\n", k->rank,
			i, OPEN_CALLS, coop_strerror(st[i].error));
	T_ASSERT(rc == COOP_SUCCESS, "open calls: waitall: %s",
		 coop_strerror(rc));
	for (i = 0; i < OPEN_CALLS; i++) {
		snprintf(k->what, sizeof(k->what), "open call %d of %d", i,
			 OPEN_CALLS);
		call_check(&c[i], k);
		call_free(&c[i]);
	}
}

/* A blocking call of op (OP_AG or OP_A2A) of bytes: its slot_sends
 * grow by expect. */
static void open_counted_op(struct rk *k, int op, size_t bytes,
			    uint64_t expect)
{
	const int i = op == OP_AG ? COOP_NBR_ALLGATHER : COOP_NBR_ALLTOALL;
	coop_topo_info_t a, b;
	struct call c;

	snprintf(k->what, sizeof(k->what), "open %s %zu B",
		 op == OP_AG ? "allgather" : "alltoall", bytes);
	T_OK(coop_topo_get_info(k->topo, &a));
	call_setup(&c, k, op, bytes);
	call_fill(&c, k);
	T_OK(call_post(&c, k->topo, M_BLOCK, NULL));
	call_check(&c, k);
	call_free(&c);
	T_OK(coop_topo_get_info(k->topo, &b));
	T_ASSERT(b.slot_sends[i] - a.slot_sends[i] == expect &&
		 !b.canary_flags[i],
		 "%s: %" PRIu64 " slot sends (%" PRIu64 " expected), %" PRIu64
		 " flags", k->what, b.slot_sends[i] - a.slot_sends[i], expect,
		 b.canary_flags[i]);
}

static void open_counted(struct rk *k, size_t bytes, uint64_t expect)
{
	open_counted_op(k, OP_A2A, bytes, expect);
}

/* The slot writes of a call of blocks of bytes with deg destinations
 * per op, open slots of OPEN_MAX: one per block that fits, a block's
 * parts when it streams (stream: COOP_NEIGHBOR_STREAM_MAX), else none. */
static uint64_t open_writes(size_t bytes, int deg, size_t stream)
{
	if (bytes <= OPEN_MAX)
		return (uint64_t)deg;
	return bytes <= stream ?
	       (uint64_t)deg * ((bytes + OPEN_MAX - 1) / OPEN_MAX) : 0;
}

/* OPEN_STREAM blocking calls of bytes each, allgathers and alltoalls
 * in turn (both ops' slots in use), the receivers late to every fifth,
 * so a sender that runs ahead waits for its buffers. */
static void open_stream(struct rk *k, size_t bytes, uint64_t expect)
{
	int n;

	for (n = 0; n < OPEN_STREAM; n++) {
		if (k->g.indeg[k->rank] && n % 5 == 2)
			usleep(2000);
		open_counted_op(k, n % 2 ? OP_A2A : OP_AG, bytes, expect);
	}
}

/* OPEN_MIXED blocking calls whose sizes take turns between an entry's
 * word (up to 8 B), a buffer and a stream of parts (whose last is 5 B:
 * an entry's), the receivers late to every seventh: a packed slot's
 * sender runs ahead on its 64 entries while a call with a buffer waits
 * for the receiver to take the one 16 turns before. */
#define OPEN_MIXED 300
static void open_mixed(struct rk *k, int deg, size_t stream)
{
	static const size_t z[] = { 8, 64, 1, 0, 9, 8, 8, 4096, 5, 8, 72,
				    OPEN_BIG, 8 };
	size_t bytes;
	int n;

	for (n = 0; n < OPEN_MIXED; n++) {
		if (k->g.indeg[k->rank] && n % 7 == 3)
			usleep(500);
		bytes = z[n % (sizeof(z) / sizeof(z[0]))];
		open_counted_op(k, n % 2 ? OP_A2A : OP_AG, bytes,
				open_writes(bytes, deg, stream));
	}
}

struct open_case {
	const char *const *env;
	int hot;		/* a hot spot without replies, not a stencil */
	int packed;		/* its sender's slots packed */
	size_t stream;		/* larger blocks stream up to this */
};

static int open_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	static const size_t stream[] = { 0, 1, 8, 9, 64, OPEN_MAX,
					 OPEN_BIG };
	const struct gspec st = { .kind = G_CART, .n = 4, .ndims = 2,
				  .dims = { 2, 2 } };
	const struct gspec hot = { .kind = G_HOT, .n = size };
	const struct open_case *oc = arg;
	coop_topo_info_t in;
	struct rk k;
	int op, deg, l;

	rk_init(&k, ctx, rank, oc->hot ? &hot : &st);
	deg = k.g.outdeg[rank];
	T_OK(topo_make(&k, COMM_BASE, 0));
	T_OK(coop_topo_get_info(k.topo, &in));
	for (op = COOP_NBR_ALLGATHER; op <= COOP_NBR_ALLTOALL; op++)
		T_ASSERT(in.slotted[op] == deg && !in.grouped[op] &&
			 in.packed[op] == (oc->packed ? deg : 0),
			 "op %d: %d slotted (%d expected), %d grouped, %d "
			 "packed", op, in.slotted[op], deg, in.grouped[op],
			 in.packed[op]);
	open_counted(&k, 8, (uint64_t)deg);
	open_counted(&k, OPEN_MAX, (uint64_t)deg);
	open_counted(&k, OPEN_MAX + 1, open_writes(OPEN_MAX + 1, deg,
						   oc->stream));
	open_outstanding(&k);
	open_counted(&k, 0, (uint64_t)deg);
	for (l = 0; l < (int)(sizeof(stream) / sizeof(stream[0])); l++)
		open_stream(&k, stream[l], open_writes(stream[l], deg,
						       oc->stream));
	open_mixed(&k, deg, oc->stream);
	topo_done(&k);
	return 0;
}

static const char *const env_open_tree[] = { "COOP_NEIGHBOR_RTR=tree",
					     "COOP_NEIGHBOR_RTR_ARITY=2",
					     NULL };

static const char *const env_open_stream[] = {
	"COOP_NEIGHBOR_STREAM_MAX=128k", NULL };

/* Plain calls go through open slots: every message of the 2x2 stencil
 * has one; blocks up to COOP_NEIGHBOR_SLOT_OPEN are written there,
 * larger ones up to COOP_NEIGHBOR_STREAM_MAX (16 MiB; and 128 KiB) stream
 * through them in parts of a buffer, larger ones still are messages;
 * calls outstanding past the slots' buffers with sizes changing between
 * calls (streamed ones among them), streams of one size and of sizes
 * that take turns; direct RTR and a binary RTR tree (no streams: its
 * counts are in calls).  A hot spot whose rank 0 receives nothing: its
 * slots packed with direct RTR (trailers and blocks of up to 8 B in
 * entries, four to a line), not with a tree. */
START_TEST(test_open_slots)
{
	const struct open_case cases[] = {
		{ NULL, 0, 0, 16 * MIB },
		{ env_open_tree, 0, 0, 0 },
		{ NULL, 1, 1, 16 * MIB },
		{ env_open_tree, 1, 0, 0 },
		{ env_open_stream, 0, 0, 128 << 10 },
		{ env_open_stream, 1, 1, 128 << 10 },
	};

	ck_assert_int_eq(run_ranks(4, cases[_i].env, open_rank,
				   (void *)&cases[_i], 60, NULL), 0);
}
END_TEST

/* Sizes the two ends disagree on (rank 0 sends, rank 1 expects), as
 * for messages: more fill the block and fail with COOP_ERR_TRUNCATE,
 * fewer fail with COOP_ERR_COUNT - through the slot (a packed one's
 * entry holds up to 8 B), streamed past it in two or four parts (the
 * receiver takes as many as the sender wrote), and a block of the
 * slot's size the receiver thinks too large for it.  The last call,
 * sizes agreed, finds both ends at the same turn. */
static const size_t open_bad[][2] = {
	{ 16, 8 }, { 8, 16 }, { 0, 8 }, { 9, 8 }, { 8, 9 }, { 8, 4 },
	{ 4, 12 }, { OPEN_PAST, 8 }, { 8, OPEN_PAST },
	{ OPEN_PAST - 2000, OPEN_PAST }, { OPEN_BIG, OPEN_PAST },
	{ OPEN_PAST, OPEN_BIG }, { OPEN_BIG, 5 }, { OPEN_BIG, OPEN_BIG },
	{ 8, 8 },
};
#define NOPEN_BAD ((int)(sizeof(open_bad) / sizeof(open_bad[0])))

/* Both ranks send (both) or only rank 0 does: only rank 1 receives. */
static void open_mismatch(coop_topo_t *t, int rank, int both, int i)
{
	const size_t s = open_bad[i][0], r = open_bad[i][1], d0[1] = { 0 };
	const size_t mine[1] = { rank ? 8 : s }, theirs[1] = { rank ? r : 8 };
	const size_t want = !rank ? (both ? 8 : 0) : s < r ? s : r;
	static unsigned char sb[OPEN_BIG], rb[OPEN_BIG + TAIL];
	int rc, expect = COOP_SUCCESS;

	t_fill(sb, sizeof(sb), (uint32_t)(rank * 100 + i));
	memset(rb, SENT, sizeof(rb));
	rc = coop_neighbor_alltoallv(t, sb, mine, d0, rb, theirs, d0);
	if (rank && s != r)
		expect = s > r ? COOP_ERR_TRUNCATE : COOP_ERR_COUNT;
	T_ASSERT(rc == expect, "rank %d, %zu B sent into %zu: %s", rank, s,
		 r, coop_strerror(rc));
	T_ASSERT(t_check(rb, want, (uint32_t)(!rank * 100 + i)) < 0 &&
		 rb[want] == SENT, "rank %d, %zu B sent into %zu: data",
		 rank, s, r);
}

static int open_bad_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	const int other = !rank, both = *(const int *)arg;
	coop_topo_info_t in;
	coop_topo_t *t;
	int i;

	(void)size;
	T_OK(coop_topo_create(ctx, COMM_BASE, both || rank, &other, NULL,
			      both || !rank, &other, NULL, 0, &t));
	T_OK(coop_topo_get_info(t, &in));
	T_ASSERT(in.packed[COOP_NBR_ALLTOALL] == (!both && !rank),
		 "rank %d: %d packed", rank, in.packed[COOP_NBR_ALLTOALL]);
	for (i = 0; i < NOPEN_BAD; i++)
		open_mismatch(t, rank, both, i);
	T_OK(coop_topo_free(&t));
	return 0;
}

/* Both ranks send, or rank 0 only (its slot packed). */
START_TEST(test_open_sizes)
{
	int both = !_i;

	ck_assert_int_eq(run_ranks(2, NULL, open_bad_rank, &both, 60, NULL),
			 0);
}
END_TEST

/* A topology of n edges each way between two ranks, with slotted slots
 * per op; blocks of 40000 B (written through them: big) and of 30000. */
static void open_window(coop_context_t *ctx, int rank, int n, int slotted,
			int big)
{
	coop_topo_info_t in;
	struct rk k;
	int j;

	memset(&k, 0, sizeof(k));
	k.ctx = ctx;
	k.rank = rank;
	k.g.n = 2;
	for (j = 0; j < n; j++) {
		g_edge(&k.g, 0, 1);
		g_edge(&k.g, 1, 0);
	}
	T_OK(topo_make(&k, COMM_BASE + (uint32_t)n, 0));
	T_OK(coop_topo_get_info(k.topo, &in));
	T_ASSERT(in.slotted[0] == slotted && in.slotted[1] == slotted,
		 "%d edges: %d/%d slotted, %d expected", n, in.slotted[0],
		 in.slotted[1], slotted);
	open_counted(&k, 40000, (uint64_t)(big ? n : slotted ? 2 * n : 0));
	open_counted(&k, 30000, slotted ? (uint64_t)n : 0);
	topo_done(&k);
}

static int open_window_rank(coop_context_t *ctx, int rank, int size,
			    void *arg)
{
	const int off = *(const int *)arg;

	(void)size;
	open_window(ctx, rank, 2, off ? 0 : 2, !off);
	open_window(ctx, rank, 16, off ? 0 : 16, 0);
	return 0;
}

/* COOP_NEIGHBOR_SLOT_OPEN=64k: two edges each way take windows of
 * 2 MiB (both ops' slots, eight 64 KiB buffers each), so 40000 B go
 * through them; sixteen would take a little over 16 MiB, more than open
 * slots may, so their slots have 32 KiB buffers: 30000 B go through,
 * 40000 stream in two parts.  =0: no slots. */
START_TEST(test_open_window)
{
	static const char *const big[] = { "COOP_NEIGHBOR_SLOT_OPEN=64k",
					   NULL };
	static const char *const off[] = { "COOP_NEIGHBOR_SLOT_OPEN=0",
					   NULL };

	ck_assert_int_eq(run_ranks(2, _i ? off : big, open_window_rank, &_i,
				   60, NULL), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* several collectives outstanding                                      */
/* ------------------------------------------------------------------ */

#define MAX_TOGETHER 10

/* n (<= MAX_TOGETHER) calls (ops[i], bytes) on ks[i]'s topology started
 * at once, then one waitall; each checked. */
static void run_together(struct rk *const *ks, const int *ops, int n,
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

static int together_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	const struct gspec er = { .kind = G_ER, .n = 4, .p = 0.7,
				  .seed = test_seed() + 7 };
	const struct gspec st = { .kind = G_CART, .n = 4, .ndims = 4,
				  .dims = { 2, 2, 1, 1 } };
	static const size_t sizes[] = { 8, 4096, 65536 + 3, MIB };
	const int three[] = { OP_A2A, OP_A2A, OP_A2A };
	const int mixed[] = { OP_A2AV, OP_AG, OP_AGV, OP_A2A };
	struct rk a, b;
	struct rk *one[] = { &a, &a, &a }, *two[] = { &a, &b, &a, &b };
	int s;

	(void)size;
	(void)arg;
	rk_init(&a, ctx, rank, &er);
	rk_init(&b, ctx, rank, &st);
	b.iter = 100000;	/* other data than a's */
	T_OK(topo_make(&a, COMM_BASE, 0));
	T_OK(topo_make(&b, COMM_BASE + 1, 0));
	for (s = 0; s < (int)(sizeof(sizes) / sizeof(sizes[0])); s++) {
		run_together(one, three, 3, sizes[s]);
		run_together(two, mixed, 4, sizes[s]);
	}
	topo_done(&a);
	topo_done(&b);
	return 0;
}

/* Three alltoalls of one topology outstanding at once; and four calls
 * alternating between two topologies. */
START_TEST(test_outstanding)
{
	ck_assert_int_eq(run_ranks(4, NULL, together_rank, NULL, 60, NULL),
			 0);
}
END_TEST

/*
 * One edge, 1 -> 0, and FLOOD_CALLS blocking alltoalls while rank 0 is
 * late: rank 1's calls only send, so their packets pile up in its
 * backlog - until it holds more than 1024 for rank 0, when each call
 * waits for them to go (as coop_send does): the backlog's peak is 1025
 * (without the wait: about FLOOD_CALLS).  Every block arrives in order.
 * Rank 0 comes late: a while after rank 1's backlog neared the bound
 * (FLOOD_NEAR); with manual progress (a progress thread would take the
 * messages while it is late), and the blocks as messages
 * (COOP_NEIGHBOR_SLOT_OPEN=0: an open slot's RTR holds the sender
 * eight calls ahead).
 */
enum { FLOOD_CALLS = 4000, FLOOD_BACKLOG_WAIT = 1024, FLOOD_NEAR = 1000 };

static void flood_late(const int *near)
{
	t_flag_wait(near);
	usleep(20000 * t_time_scale());	/* rank 1 reaches the bound */
}

static int flood_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	int *near = arg, nearing = 0;
	const int other = !rank;
	coop_topo_t *topo;
	coop_stats_t st;
	int i, v;

	(void)size;
	T_OK(coop_topo_create(ctx, COMM_BASE, rank ? 0 : 1, &other, NULL,
			      rank ? 1 : 0, &other, NULL, 0, &topo));
	if (!rank)
		flood_late(near);
	for (i = 0; i < FLOOD_CALLS; i++) {
		T_OK(coop_neighbor_alltoall(topo, &i, sizeof(i), &v,
					    sizeof(v)));
		T_ASSERT(rank || v == i, "call %d got block %d", i, v);
		if (rank && !nearing) {
			T_OK(coop_get_stats(ctx, &st));
			nearing = st.backlog_peak >= FLOOD_NEAR;
			if (nearing)
				t_flag_raise(near);
		}
	}
	T_OK(coop_get_stats(ctx, &st));
	T_ASSERT(!rank || (st.backlog_peak > FLOOD_BACKLOG_WAIT &&
			   st.backlog_peak <= FLOOD_BACKLOG_WAIT + 1),
		 "backlog peak %" PRIu64, st.backlog_peak);
	T_OK(coop_topo_free(&topo));
	return 0;
}

START_TEST(test_flood_bounded)
{
	static const char *const env[] = { "COOP_PROGRESS=manual",
					   "COOP_NEIGHBOR_SLOT_OPEN=0", NULL };
	int *near = shared_alloc(4096);

	ck_assert_int_eq(run_ranks(2, env, flood_rank, near, 60, NULL), 0);
	shared_free(near, 4096);
}
END_TEST

/* ------------------------------------------------------------------ */
/* COOP_TOPO_EXACT_BYTES                                                */
/* ------------------------------------------------------------------ */

struct exact_case {
	struct gspec g;
	int wmode;
	size_t bytes;
	coop_topo_info_t *info;	/* shared: [rank] */
};

/* Wrong sizes are refused on the calling rank before any message:
 * COOP_ERR_COUNT, and the next calls still work (ranks without edges
 * have nothing to check and do not call). */
static void wrong_sizes(struct rk *k)
{
	struct call c;
	size_t keep;
	int r = k->rank, rc, i;

	if (!k->g.outdeg[r] && !k->g.indeg[r])
		return;
	if (k->wmode == W_UNIFORM) {
		call_setup(&c, k, OP_A2A, k->wbytes + 1);
		rc = call_post(&c, k->topo, M_BLOCK, NULL);
		T_ASSERT(rc == COOP_ERR_COUNT, "alltoall %zu B: %s",
			 k->wbytes + 1, coop_strerror(rc));
		call_free(&c);
		call_setup(&c, k, OP_AG, k->wbytes - 1);
		rc = call_post(&c, k->topo, M_NONBLOCK, (coop_request_t *[]){
				       NULL });
		T_ASSERT(rc == COOP_ERR_COUNT, "ineighbor_allgather %zu B: %s",
			 k->wbytes - 1, coop_strerror(rc));
		call_free(&c);
	}
	/* alltoallv: one block off by one (the last of a side with any) */
	call_setup(&c, k, OP_A2AV, k->wbytes);
	i = c.nrecv ? c.nrecv - 1 : c.nsend - 1;
	keep = c.nrecv ? c.rcnt[i] : c.scnt[i];
	*(c.nrecv ? &c.rcnt[i] : &c.scnt[i]) = keep + 1;
	rc = call_post(&c, k->topo, M_PERSIST, (coop_request_t *[]){ NULL });
	T_ASSERT(rc == COOP_ERR_COUNT, "alltoallv_init, a block %zu B: %s",
		 keep + 1, coop_strerror(rc));
	call_free(&c);
}

static int exact_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	const struct exact_case *ec = arg;
	unsigned ops = ec->wmode == W_EDGE ? 1u << OP_A2AV : ALL_OPS;
	coop_topo_info_t info;
	struct rk k;

	(void)size;
	rk_init(&k, ctx, rank, &ec->g);
	k.wmode = ec->wmode;
	k.wbytes = ec->bytes;
	T_OK(topo_make(&k, COMM_BASE, COOP_TOPO_EXACT_BYTES |
		       COOP_TOPO_STRICT));
	check_info(&k, &info);
	ec->info[rank] = info;
	wrong_sizes(&k);
	run_matrix(&k, &ec->bytes, 1, ops);
	wrong_sizes(&k);
	run_call(&k, ec->wmode == W_EDGE ? OP_A2AV : OP_A2A, M_BLOCK,
		 ec->bytes);
	topo_done(&k);
	return 0;
}

/* Run an EXACT_BYTES case; the ranks' infos, which must agree on the
 * whole graph's numbers. */
static void run_exact(struct exact_case *ec, const char *const *env)
{
	size_t len = MAXR * sizeof(*ec->info);
	int r;

	ec->info = shared_alloc(len);
	ck_assert_int_eq(run_ranks(ec->g.n, env, exact_rank, ec, 60, NULL),
			 0);
	for (r = 1; r < ec->g.n; r++) {
		ck_assert_int_eq(ec->info[r].colors[0], ec->info[0].colors[0]);
		ck_assert_int_eq(ec->info[r].colors[1], ec->info[0].colors[1]);
		ck_assert_int_eq(ec->info[r].moved[0], ec->info[0].moved[0]);
		ck_assert_int_eq(ec->info[r].moved[1], ec->info[0].moved[1]);
	}
}

/* 8 ranks on few CPUs: waiters yield early; balancing of blocks up to
 * 256 B whatever the environment and the CPUs say */
static const char *const env_8[] = { "COOP_SPIN=100",
				     "COOP_NEIGHBOR_TREE_MAX=256",
				     "COOP_NEIGHBOR_TREE_SHARED=256", NULL };

/* 8 ranks, rank 0 sends to all others (they send back, or nothing):
 * alltoall's tree balancing moves messages off rank 0, whose blocks
 * others forward; data right in every op and mode; wrong sizes refused. */
START_TEST(test_exact_hotspot)
{
	struct exact_case ec = { .g = { .kind = G_HOT, .n = 8,
					.back = _i & 1 },
				 .wmode = W_UNIFORM,
				 .bytes = _i & 2 ? 64 : 8 };
	int r, fw = 0, outdeg = ec.g.n - 1, a2a = COOP_NBR_ALLTOALL;

	run_exact(&ec, env_8);
	for (r = 0; r < ec.g.n; r++)
		fw += ec.info[r].forwards[a2a];
	fprintf(stderr, "neighbor: hot spot%s %zu B: colours %d/%d, moved "
		"%d/%d, rank 0 sends %d/%d, forwards %d\n",
		ec.g.back ? " (both ways)" : "", ec.bytes,
		ec.info[0].colors[0], ec.info[0].colors[1],
		ec.info[0].moved[0], ec.info[0].moved[1],
		ec.info[0].sends[0], ec.info[0].sends[1], fw);
	ck_assert_int_gt(ec.info[0].moved[a2a], 0);
	ck_assert_int_lt(ec.info[0].sends[a2a], outdeg);
	ck_assert_int_gt(fw, 0);
	shared_free(ec.info, MAXR * sizeof(*ec.info));
}
END_TEST

/* The ranks on one CPU, default TREE_SHARED (0) */
static const char *const env_one_cpu[] = { "COOP_SPIN=100",
					   "COOP_NEIGHBOR_TREE_MAX=256",
					   NULL };

/* The same hot spot (both ways, 8 B) with its 8 ranks on one CPU: by
 * default nothing is balanced there (each forward would be one more
 * rank to schedule before its message arrives) - rank 0 sends all its
 * blocks itself, nobody forwards; with COOP_NEIGHBOR_TREE_SHARED=256
 * the tree balancing is back.  Data right in every op and mode. */
START_TEST(test_exact_hotspot_shared)
{
	struct exact_case ec = { .g = { .kind = G_HOT, .n = 8, .back = 1 },
				 .wmode = W_UNIFORM, .bytes = 8 };
	int r, op, fw = 0, outdeg = ec.g.n - 1, a2a = COOP_NBR_ALLTOALL;
	cpu_set_t set;

	ck_assert_int_eq(t_pin_first_cpu(&set), 0);
	run_exact(&ec, _i ? env_8 : env_one_cpu);
	ck_assert_int_eq(sched_setaffinity(0, sizeof(set), &set), 0);
	for (r = 0; r < ec.g.n; r++)
		fw += ec.info[r].forwards[a2a];
	fprintf(stderr, "neighbor: hot spot on one CPU%s: moved %d/%d, "
		"rank 0 sends %d, forwards %d\n", _i ? ", TREE_SHARED" : "",
		ec.info[0].moved[0], ec.info[0].moved[1],
		ec.info[0].sends[a2a], fw);
	if (_i) {
		ck_assert_int_gt(ec.info[0].moved[a2a], 0);
		ck_assert_int_lt(ec.info[0].sends[a2a], outdeg);
		ck_assert_int_gt(fw, 0);
	} else {
		for (op = 0; op < 2; op++)
			ck_assert_int_eq(ec.info[0].moved[op], 0);
		ck_assert_int_eq(ec.info[0].sends[a2a], outdeg);
		ck_assert_int_eq(fw, 0);
	}
	shared_free(ec.info, MAXR * sizeof(*ec.info));
}
END_TEST

/*
 * Who copies a collective's large block when ranks share CPUs: its
 * sender (RPUT), unless the sender takes part in more than twice as many
 * transfers as the receiver (RGET).  The ranks on one CPU, COPIER_CALLS
 * alltoalls of 256 KiB blocks, the blocks each rank copied counted by
 * coop_stats_t.copy_bytes: on a ring of 4 one each; on a hot spot of 3
 * one way (its centre in 2 transfers, the others in 1) the centre both;
 * on a hot spot of 4 both ways (6 against 2) the centre none and the
 * others both of theirs.  The blocks are messages
 * (COOP_NEIGHBOR_STREAM_MAX=0: not streamed through open slots).
 */
enum { COPIER_CALLS = 3, COPIER_BYTES = 256 << 10 };

struct copier_case {
	struct gspec g;
	int centre, others;	/* blocks each copies per call */
};

static const struct copier_case copier_cases[] = {
	{ { .kind = G_RING, .n = 4 }, 1, 1 },
	{ { .kind = G_HOT, .n = 3 }, 2, 0 },
	{ { .kind = G_HOT, .n = 4, .back = 1 }, 0, 2 },
};

static const char *const env_copier[] = { "COOP_RNDV=auto",
					  "COOP_STRIPE_RATIO=0",
					  "COOP_NEIGHBOR_STREAM_MAX=0", NULL };

static int copier_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	const struct copier_case *cc = arg;
	uint64_t want = (uint64_t)(rank ? cc->others : cc->centre) *
			COPIER_CALLS * COPIER_BYTES;
	coop_stats_t st;
	struct call c;
	struct rk k;
	int i;

	(void)size;
	rk_init(&k, ctx, rank, &cc->g);
	T_OK(topo_make(&k, COMM_BASE, 0));
	call_setup(&c, &k, OP_A2A, COPIER_BYTES);
	T_OK(coop_reset_stats(ctx));
	for (i = 0; i < COPIER_CALLS; i++) {
		snprintf(k.what, sizeof(k.what), "copier call %d", i);
		blocking_call(&c, &k);
	}
	T_OK(coop_get_stats(ctx, &st));
	T_ASSERT(st.copy_bytes == want, "case %td, rank %d copied %" PRIu64
		 " bytes, not %" PRIu64, cc - copier_cases, rank,
		 st.copy_bytes, want);
	call_free(&c);
	topo_done(&k);
	return 0;
}

START_TEST(test_copier)
{
	const struct copier_case *cc = &copier_cases[_i];
	cpu_set_t set;

	ck_assert_int_eq(t_pin_first_cpu(&set), 0);
	ck_assert_int_eq(run_ranks(cc->g.n, env_copier, copier_rank,
				   (void *)cc, 60, NULL), 0);
	ck_assert_int_eq(sched_setaffinity(0, sizeof(set), &set), 0);
}
END_TEST

/* A(4, 0.7) with EXACT_BYTES: uniform weights of 8 and 64 B (every op),
 * and a weight per edge (alltoallv, zero-byte edges among them). */
START_TEST(test_exact_er)
{
	struct exact_case ec = { .g = { .kind = G_ER, .n = 4, .p = 0.7,
					.seed = test_seed() + 3 },
				 .wmode = _i == 2 ? W_EDGE : W_UNIFORM,
				 .bytes = _i ? 64 : 8 };

	run_exact(&ec, NULL);
	shared_free(ec.info, MAXR * sizeof(*ec.info));
}
END_TEST

/* ------------------------------------------------------------------ */
/* bad arguments, disagreeing graphs                                    */
/* ------------------------------------------------------------------ */

/* Local refusals of coop_topo_create, on every rank (no message). */
static void bad_create(coop_context_t *ctx, int size)
{
	const int ok[1] = { 0 }, far[1] = { size }, neg[1] = { -1 },
		  pnull[1] = { COOP_PROC_NULL };
	const uint64_t w[1] = { 8 };
	coop_topo_t *t = NULL;

#define REFUSED(err, ...) do { int rc_ = coop_topo_create(__VA_ARGS__); \
	T_ASSERT(rc_ == (err), "%s -> %s", #__VA_ARGS__, \
		 coop_strerror(rc_)); } while (0)
	REFUSED(COOP_ERR_ARG, NULL, COMM_BASE, 1, ok, NULL, 1, ok, NULL, 0,
		&t);
	REFUSED(COOP_ERR_ARG, ctx, COMM_BASE, 1, ok, NULL, 1, ok, NULL, 0,
		NULL);
	REFUSED(COOP_ERR_ARG, ctx, COMM_BASE, -1, ok, NULL, 1, ok, NULL, 0,
		&t);
	REFUSED(COOP_ERR_ARG, ctx, COMM_BASE, 1, ok, NULL, -3, ok, NULL, 0,
		&t);
	REFUSED(COOP_ERR_ARG, ctx, COMM_BASE, 1, NULL, NULL, 1, ok, NULL, 0,
		&t);
	REFUSED(COOP_ERR_ARG, ctx, COMM_BASE, 1, ok, NULL, 1, NULL, NULL, 0,
		&t);
	REFUSED(COOP_ERR_RANK, ctx, COMM_BASE, 1, ok, NULL, 1, far, NULL, 0,
		&t);
	REFUSED(COOP_ERR_RANK, ctx, COMM_BASE, 1, neg, NULL, 1, ok, NULL, 0,
		&t);
	REFUSED(COOP_ERR_RANK, ctx, COMM_BASE, 1, ok, NULL, 1, pnull, NULL,
		0, &t);
	REFUSED(COOP_ERR_ARG, ctx, COMM_BASE, 1, ok, NULL, 1, ok, NULL,
		1u << 7, &t);
	REFUSED(COOP_ERR_ARG, ctx, COMM_BASE, 1, ok, NULL, 1, ok, NULL,
		COOP_TOPO_EXACT_BYTES, &t);
	REFUSED(COOP_ERR_ARG, ctx, COMM_BASE, 1, ok, w, 1, ok, NULL,
		COOP_TOPO_EXACT_BYTES, &t);
	REFUSED(COOP_ERR_COMM, ctx, COOP_COMM_MAX + 1u, 1, ok, NULL, 1, ok,
		NULL, 0, &t);
#undef REFUSED
}

/* Collective creations whose lists disagree: COOP_ERR_CONFIG on every
 * rank.  A ring r -> r + 1 on comm, broken as case says. */
enum { BREAK_SOURCE, BREAK_TWICE, BREAK_WEIGHT, BREAK_HINTS, NBREAKS };

static void disagree(coop_context_t *ctx, int rank, int size, int how)
{
	int src[2] = { (rank + size - 1) % size }, dst[2] = { (rank + 1) %
							       size };
	uint64_t sw[2] = { 8 }, dw[2] = { 8 };
	int indeg = 1, outdeg = 1, rc;
	unsigned hints = 0;
	coop_topo_t *t = NULL;

	if (how == BREAK_SOURCE && rank == 1)
		indeg = 0;		/* 0 names 1, 1 does not name 0 */
	if (how == BREAK_TWICE && rank == 0)
		dst[outdeg++] = 1;	/* 0 -> 1 twice, 1 names 0 once */
	if (how == BREAK_WEIGHT && rank == 1)
		sw[0] = 9;
	if (how == BREAK_HINTS && rank == size - 1)
		hints = COOP_TOPO_STRICT;
	rc = coop_topo_create(ctx, COMM_BASE + 10 + (uint32_t)how, indeg, src,
			      how == BREAK_WEIGHT ? sw : NULL, outdeg, dst,
			      how == BREAK_WEIGHT ? dw : NULL, hints, &t);
	T_ASSERT(rc == COOP_ERR_CONFIG, "disagreement %d: %s", how,
		 coop_strerror(rc));
}

/* Refusals of the collectives on a ring (every rank has one source and
 * one destination): NULL topology in every entry point, NULL buffers
 * with bytes, NULL requests and arrays. */
static void bad_calls(struct rk *k)
{
	coop_request_t *req = NULL;
	unsigned char b[8];
	const size_t one[1] = { 8 }, zero[1] = { 0 };
	struct call c;
	int op, mode;

	for (op = 0; op < NOPS; op++)
		for (mode = 0; mode < NMODES; mode++) {
			call_setup(&c, k, op, 8);
			T_ASSERT(call_post(&c, NULL, mode, &req) ==
				 COOP_ERR_ARG && !req, "%s %s: NULL topology",
				 op_name[op], mode_name[mode]);
			if (mode != M_BLOCK)
				T_ASSERT(call_post(&c, k->topo, mode, NULL) ==
					 COOP_ERR_ARG, "%s %s: NULL request",
					 op_name[op], mode_name[mode]);
			call_free(&c);
		}
	T_ASSERT(coop_neighbor_alltoall(k->topo, NULL, 8, b, 8) ==
		 COOP_ERR_ARG, "NULL send buffer");
	T_ASSERT(coop_neighbor_alltoall(k->topo, b, 8, NULL, 8) ==
		 COOP_ERR_ARG, "NULL receive buffer");
	T_ASSERT(coop_neighbor_allgather(k->topo, NULL, 8, b, 8) ==
		 COOP_ERR_ARG, "allgather: NULL send buffer");
	T_ASSERT(coop_ineighbor_allgatherv(k->topo, b, 8, NULL, one, zero,
					   &req) == COOP_ERR_ARG && !req,
		 "allgatherv: NULL receive buffer");
	T_ASSERT(coop_neighbor_alltoallv(k->topo, b, one, NULL, b, one,
					 zero) == COOP_ERR_ARG,
		 "alltoallv: NULL send displacements");
	T_ASSERT(coop_neighbor_alltoallv(k->topo, b, one, zero, b, NULL,
					 zero) == COOP_ERR_ARG,
		 "alltoallv: NULL receive sizes");
	T_ASSERT(coop_neighbor_allgatherv_init(k->topo, b, 8, b, one, NULL,
					       &req) == COOP_ERR_ARG && !req,
		 "allgatherv_init: NULL displacements");
}

/* Free refused while a nonblocking collective of the topology is active
 * (blocking calls of the op before and after it: the request the
 * topology keeps for them outlives the refusal); a persistent one
 * started twice. */
static void busy_free(struct rk *k)
{
	coop_request_t *req = NULL;
	struct call c, small;
	int rc;

	snprintf(k->what, sizeof(k->what), "active at free");
	call_setup(&c, k, OP_A2A, MIB);
	call_setup(&small, k, OP_A2A, 8);
	blocking_call(&small, k);
	call_fill(&c, k);
	T_OK(call_post(&c, k->topo, M_NONBLOCK, &req));
	rc = coop_topo_free(&k->topo);
	T_ASSERT(rc == COOP_ERR_STATE && k->topo, "free while active: %s",
		 coop_strerror(rc));
	complete(k, &req, 0);
	call_check(&c, k);
	blocking_call(&small, k);
	blocking_call(&c, k);
	call_free(&small);
	call_free(&c);

	snprintf(k->what, sizeof(k->what), "persistent started twice");
	call_setup(&c, k, OP_AG, 100);
	T_OK(call_post(&c, k->topo, M_PERSIST, &req));
	call_fill(&c, k);
	T_OK(coop_start(&req));
	rc = coop_start(&req);
	T_ASSERT(rc == COOP_ERR_REQUEST, "second start: %s",
		 coop_strerror(rc));
	complete(k, &req, 1);
	call_check(&c, k);
	T_OK(coop_request_free(&req));
	call_free(&c);
}

/* A block to ourselves is copied, not sent, with a message's outcome:
 * more bytes than the receive block fill it and fail with
 * COOP_ERR_TRUNCATE, fewer fail with COOP_ERR_COUNT. */
static void self_sizes(coop_context_t *ctx, int rank)
{
	const size_t d0[1] = { 0 }, n8[1] = { 8 }, n16[1] = { 16 };
	unsigned char sb[16], rb[16];
	coop_topo_t *t = NULL;
	int rc;

	memset(sb, 0x5a, sizeof(sb));
	T_OK(coop_topo_create(ctx, COMM_BASE + 11, 1, &rank, NULL, 1, &rank,
			      NULL, 0, &t));
	memset(rb, 0, sizeof(rb));
	rc = coop_neighbor_alltoallv(t, sb, n16, d0, rb, n8, d0);
	T_ASSERT(rc == COOP_ERR_TRUNCATE && rb[7] == 0x5a && !rb[8],
		 "self: 16 B into 8: %s", coop_strerror(rc));
	rc = coop_neighbor_alltoallv(t, sb, n8, d0, rb, n16, d0);
	T_ASSERT(rc == COOP_ERR_COUNT, "self: 8 B into 16: %s",
		 coop_strerror(rc));
	T_OK(coop_topo_free(&t));
}

static int bad_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	const struct gspec ring = { .kind = G_RING, .n = size };
	coop_topo_info_t info;
	struct rk k;
	int how;

	(void)arg;
	bad_create(ctx, size);
	for (how = 0; how < NBREAKS; how++)
		disagree(ctx, rank, size, how);
	rk_init(&k, ctx, rank, &ring);
	/* the comm of the failed creations, and COMM_BASE, still work */
	T_OK(topo_make(&k, COMM_BASE + 10, 0));
	check_info(&k, NULL);
	T_ASSERT(coop_topo_get_info(NULL, &info) == COOP_ERR_ARG,
		 "get_info(NULL, info)");
	T_ASSERT(coop_topo_get_info(k.topo, NULL) == COOP_ERR_ARG,
		 "get_info(topo, NULL)");
	bad_calls(&k);
	self_sizes(ctx, rank);
	run_call(&k, OP_A2AV, M_BLOCK, 100);
	busy_free(&k);
	topo_done(&k);
	T_ASSERT(coop_topo_free(NULL) == COOP_ERR_ARG, "free(NULL)");
	return 0;
}

START_TEST(test_bad_args)
{
	ck_assert_int_eq(run_ranks(4, NULL, bad_rank, NULL, 60, NULL), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* a neighbour dies                                                     */
/* ------------------------------------------------------------------ */

#define VICTIM 3

static void wait_flags(const int *flags, int from, int to)
{
	int r;

	for (r = from; r < to; r++)
		while (!__atomic_load_n(&flags[r], __ATOMIC_ACQUIRE))
			usleep(200);
}

/*
 * A(4, 1), 1 MiB alltoalls, messages by RGET (a receiver copies) or
 * streamed through open slots: one goes right;
 * in the second the victim starts its part, then the others theirs,
 * then it is killed without another library call, so none of the
 * others' sends to it can complete.  Their collective completes with
 * COOP_ERR_PEER_DEAD, and so does the next call.
 */
static int death_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	const struct gspec full = { .kind = G_ER, .n = size, .p = 1.0 };
	int *flags = arg, rc;
	coop_request_t *req = NULL;
	coop_status_t st;
	struct call c;
	struct rk k;

	if (rank == VICTIM)	/* nothing moves unless it calls */
		T_OK(coop_set_progress(ctx, COOP_PROGRESS_MANUAL, -1));
	rk_init(&k, ctx, rank, &full);
	T_OK(topo_make(&k, COMM_BASE, 0));
	run_call(&k, OP_A2A, M_BLOCK, MIB);
	snprintf(k.what, sizeof(k.what), "alltoall, victim killed");
	call_setup(&c, &k, OP_A2A, MIB);
	call_fill(&c, &k);
	if (rank == VICTIM) {
		T_OK(call_post(&c, k.topo, M_NONBLOCK, &req));
		__atomic_store_n(&flags[rank], 1, __ATOMIC_RELEASE);
		wait_flags(flags, 0, VICTIM);
		usleep(20000);	/* let them reach their wait */
		raise(SIGKILL);
		T_FAIL("alive after SIGKILL");
	}
	wait_flags(flags, VICTIM, VICTIM + 1);
	T_OK(call_post(&c, k.topo, M_NONBLOCK, &req));
	__atomic_store_n(&flags[rank], 1, __ATOMIC_RELEASE);
	rc = coop_wait(&req, &st);
	T_ASSERT(rc == COOP_ERR_PEER_DEAD, "wait: %s", coop_strerror(rc));
	check_status(&k, &st, COOP_ERR_PEER_DEAD);
	rc = coop_neighbor_alltoall(k.topo, c.sbuf, MIB, c.rbuf, MIB);
	T_ASSERT(rc == COOP_ERR_PEER_DEAD, "next call: %s", coop_strerror(rc));
	call_free(&c);
	topo_done(&k);
	return 0;
}

static const char *const env_death[] = { "COOP_RNDV=rget", "COOP_SPIN=100",
					 "COOP_NEIGHBOR_STREAM_MAX=0", NULL };
static const char *const env_death_stream[] = { "COOP_SPIN=100", NULL };

/* 4 ranks of fn with env: the victim killed, the others pass. */
static void run_death(const char *const *env, rank_fn fn)
{
	struct rank_result res[4];
	int *flags = shared_alloc(4096), r;

	run_ranks(4, env, fn, flags, 60, res);
	shared_free(flags, 4096);
	for (r = 0; r < 4; r++)
		if (r != VICTIM)
			ck_assert_msg(res[r].exited && res[r].status == 0,
				      "rank %d failed", r);
	ck_assert_int_eq(res[VICTIM].signo, SIGKILL);
}

START_TEST(test_peer_death)
{
	run_death(_i ? env_death_stream : env_death, death_rank);
}
END_TEST

/* ------------------------------------------------------------------ */
/* COOP_TOPO_STATIC_BUFFERS: static slots, canary, RTR trees            */
/* ------------------------------------------------------------------ */
/* a collective's messages: single copy above COOP_NEIGHBOR_EAGER_MAX   */
/* ------------------------------------------------------------------ */

/* Do size ranks have a CPU each here (the CPUs this process may run
 * on, as the library counts them)? */
static int cpu_per_rank(int size)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return sysconf(_SC_NPROCESSORS_ONLN) >= size;
	return CPU_COUNT(&set) >= size;
}

/* Receives of an alltoall of bytes by protocol, counted by the
 * context's statistics. */
static void a2a_received(struct rk *k, size_t bytes, coop_stats_t *got)
{
	coop_stats_t before;
	int p;

	T_OK(coop_get_stats(k->ctx, &before));
	run_call(k, OP_A2A, M_BLOCK, bytes);
	T_OK(coop_get_stats(k->ctx, got));
	for (p = 0; p < COOP_PROTOCOL_COUNT; p++)
		got->received[p] -= before.received[p];
}

/*
 * Rank 0 sends 64 KiB to each other rank, which send nothing back: its
 * CPU would only wait, so with a CPU per rank each receiver splits the
 * copy with it (COOP-p2p); sharing CPUs, one side copies.
 */
static void idle_sender_received(coop_context_t *ctx, int rank, int size,
				 int idle_cpus)
{
	const struct gspec hot = { .kind = G_HOT, .n = size };
	coop_stats_t st;
	struct rk k;

	rk_init(&k, ctx, rank, &hot);
	T_OK(topo_make(&k, COMM_BASE + 1, 0));
	a2a_received(&k, 65536, &st);
	if (rank) {
		T_ASSERT(idle_cpus ? st.received[COOP_PROTOCOL_COOP] == 1 :
			 !st.received[COOP_PROTOCOL_COOP],
			 "from an idle sender: %llu RGET %llu RPUT %llu "
			 "COOP", (unsigned long long)
			 st.received[COOP_PROTOCOL_RGET],
			 (unsigned long long)st.received[COOP_PROTOCOL_RPUT],
			 (unsigned long long)st.received[COOP_PROTOCOL_COOP]);
	}
	topo_done(&k);
}

/* COOP_NEIGHBOR_EAGER_MAX, COOP_NEIGHBOR_EAGER_SHARED */
struct eager_limits {
	size_t own_cpus, shared_cpus;
};

static int single_copy_rank(coop_context_t *ctx, int rank, int size,
			    void *arg)
{
	const struct gspec ring = { .kind = G_RING, .n = size };
	const struct eager_limits *lim = arg;
	uint64_t msgs, idle_cpus;
	size_t bytes, eager_max;
	coop_stats_t st;
	struct rk k;

	rk_init(&k, ctx, rank, &ring);
	T_OK(topo_make(&k, COMM_BASE, 0));
	msgs = (uint64_t)k.g.indeg[rank];
	idle_cpus = (uint64_t)cpu_per_rank(size);
	eager_max = idle_cpus ? lim->own_cpus : lim->shared_cpus;
	for (bytes = 4096; bytes <= 65536; bytes *= 4) {
		a2a_received(&k, bytes, &st);
		if (bytes <= eager_max) {
			T_ASSERT(st.received[COOP_PROTOCOL_EAGER] == msgs,
				 "%zu B: %llu of %llu eager", bytes,
				 (unsigned long long)
				 st.received[COOP_PROTOCOL_EAGER],
				 (unsigned long long)msgs);
			continue;
		}
		/* one copier: the receiver with a CPU per rank, else the
		 * side COOP-load picks (or an offload engine) */
		T_ASSERT(idle_cpus ? st.received[COOP_PROTOCOL_RGET] == msgs :
			 !st.received[COOP_PROTOCOL_COOP] &&
			 !st.received[COOP_PROTOCOL_EAGER],
			 "%zu B: %llu RGET %llu RPUT %llu COOP %llu eager "
			 "of %llu", bytes,
			 (unsigned long long)st.received[COOP_PROTOCOL_RGET],
			 (unsigned long long)st.received[COOP_PROTOCOL_RPUT],
			 (unsigned long long)st.received[COOP_PROTOCOL_COOP],
			 (unsigned long long)st.received[COOP_PROTOCOL_EAGER],
			 (unsigned long long)msgs);
	}
	topo_done(&k);
	idle_sender_received(ctx, rank, size, (int)idle_cpus);
	return 0;
}

/* Ring alltoalls of 4, 16, 64 KiB on 2 and 4 ranks: up to
 * COOP_NEIGHBOR_EAGER_MAX (default 8 KiB; and 32 KiB) eagerly, or
 * COOP_NEIGHBOR_EAGER_SHARED (default 16 KiB; and 4 KiB) with more ranks
 * than CPUs, beyond it by one copy of one side (RGET when every rank has
 * a CPU), never through bounce buffers or split between two copiers -
 * whatever COOP_EAGER_MAX (64 KiB) and COOP_COOP_MIN (64 KiB) say -
 * except from a sender with nothing to receive (idle_sender_received).
 * The blocks are messages (COOP_NEIGHBOR_SLOT_OPEN=0: no open slots). */
START_TEST(test_single_copy)
{
	static const char *const env[][4] = {
		{ "COOP_NEIGHBOR_SLOT_OPEN=0", NULL },
		{ "COOP_NEIGHBOR_SLOT_OPEN=0", "COOP_NEIGHBOR_EAGER_MAX=32k",
		  "COOP_NEIGHBOR_EAGER_SHARED=4k", NULL },
	};
	static const struct eager_limits limit[] = { { 8192, 16384 },
						     { 32768, 4096 } };
	int ranks = _i & 1 ? 4 : 2, e = _i >> 1;

	ck_assert_int_eq(run_ranks(ranks, env[e], single_copy_rank,
				   (void *)&limit[e], 60, NULL), 0);
}
END_TEST

/* ------------------------------------------------------------------ */

#define SLOT_MAX 4096		/* COOP_NEIGHBOR_SLOT_MAX in these cases */

struct static_case {
	struct gspec g;
	unsigned hints;
	int wmode;		/* with EXACT_BYTES: W_UNIFORM or W_EDGE */
	size_t bytes;		/* ... their size (base) */
	const char *const *env;
	int grouped;		/* this rank's messages sharing a slot with
				 * others to the same rank; -1: any */
	int parts;		/* slot writes per block (streamed slots);
				 * 0: blocks past COOP_NEIGHBOR_SLOT_MAX go
				 * as messages; -1: some stream */
};

/* After a static topology's calls: this rank's messages with a slot
 * went through it (and, uniform sizes, no others did; a streamed one in
 * sc->parts writes each), none flagged (the pattern's last bytes are
 * not the canary). */
static void check_slot_info(const struct rk *k, int op, size_t bytes, int v,
			    const struct static_case *sc)
{
	const int grouped = sc->grouped, parts = sc->parts;
	coop_topo_info_t in;

	T_OK(coop_topo_get_info(k->topo, &in));
	T_ASSERT(in.slotted[op] >= 0 && in.slotted[op] <= in.sends[op],
		 "%s: slotted %d of %d", k->what, in.slotted[op],
		 in.sends[op]);
	if (parts)
		T_ASSERT(in.slot_sends[op] > 0 &&
			 (parts < 0 || in.slot_sends[op] % (unsigned)parts ==
			  0), "%s: %llu slot sends, %d parts a block",
			 k->what, (unsigned long long)in.slot_sends[op],
			 parts);
	else if (!v && (bytes > SLOT_MAX || !bytes))
		T_ASSERT(!in.slot_sends[op], "%s: %llu slot sends of %zu B",
			 k->what, (unsigned long long)in.slot_sends[op],
			 bytes);
	else if (!v && in.slotted[op] && k->wmode == W_NONE)
		T_ASSERT(in.slot_sends[op] > 0, "%s: no slot sends", k->what);
	T_ASSERT(!in.canary_flags[op], "%s: %llu canary flags", k->what,
		 (unsigned long long)in.canary_flags[op]);
	T_ASSERT(grouped < 0 || in.grouped[op] == grouped,
		 "%s: %d grouped, want %d", k->what, in.grouped[op], grouped);
}

/* The first call fixes an op's sizes: another size is refused
 * (COOP_ERR_COUNT) before any message. */
static void static_wrong_size(struct rk *k, int op, size_t bytes)
{
	struct call c;
	size_t *n;
	int rc;

	if (!k->g.outdeg[k->rank] && !k->g.indeg[k->rank])
		return;
	call_setup(&c, k, op, is_v(op) ? bytes : bytes + 1);
	n = c.nrecv ? &c.rcnt[c.nrecv - 1] : &c.scnt[c.nsend - 1];
	if (is_v(op))
		++*n;	/* one block (the last of a side with any) */
	rc = call_post(&c, k->topo, M_BLOCK, NULL);
	T_ASSERT(rc == COOP_ERR_COUNT, "static %s: a block of %zu B after "
		 "%zu B: %s", op_name[op], *n, bytes, coop_strerror(rc));
	call_free(&c);
}

/* On a fresh topology per (size, v or not): the ops of that kind in
 * every mode, MAX_TOGETHER (10) alltoalls outstanding at once (more than
 * a slot has buffers), a wrong size. */
static void static_group(struct rk *k, const struct static_case *sc,
			 size_t bytes, int v)
{
	const int ops[2][2] = { { OP_AG, OP_A2A }, { OP_AGV, OP_A2AV } };
	int same[MAX_TOGETHER];
	struct rk *one[MAX_TOGETHER];
	int i, mode;

	for (i = 0; i < MAX_TOGETHER; i++) {
		same[i] = ops[v][1];
		one[i] = k;
	}
	T_OK(topo_make(k, COMM_BASE, sc->hints));
	for (i = 0; i < 2; i++) {
		if (k->wmode == W_EDGE && ops[v][i] != OP_A2AV)
			continue;	/* the weights are alltoallv's */
		for (mode = 0; mode < NMODES; mode++)
			run_call(k, ops[v][i], mode, bytes);
		check_slot_info(k, ops[v][i] < OP_A2A ? COOP_NBR_ALLGATHER :
				COOP_NBR_ALLTOALL, bytes, v, sc);
	}
	run_together(one, same, MAX_TOGETHER, bytes);
	static_wrong_size(k, ops[v][1], bytes);
	topo_done(k);
}

static int static_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	const struct static_case *sc = arg;
	static const size_t sizes[] = { 1, 8, 100, SLOT_MAX, SLOT_MAX + 1,
					65536 + 3 };
	struct rk k;
	int s, v;

	(void)size;
	rk_init(&k, ctx, rank, &sc->g);
	k.wmode = sc->wmode;
	k.wbytes = sc->bytes;
	if (sc->wmode) {	/* the weights' size (alltoallv's only) */
		for (v = sc->wmode == W_EDGE; v < 2; v++)
			static_group(&k, sc, sc->bytes, v);
		return 0;
	}
	for (s = 0; s < (int)(sizeof(sizes) / sizeof(sizes[0])); s++)
		for (v = 0; v < 2; v++)
			static_group(&k, sc, sizes[s], v);
	return 0;
}

static const char *const env_direct[] = { "COOP_NEIGHBOR_SLOT_MAX=4096",
					  "COOP_NEIGHBOR_RTR=direct",
					  "COOP_SPIN=100", NULL };
static const char *const env_tree2[] = { "COOP_NEIGHBOR_SLOT_MAX=4096",
					 "COOP_NEIGHBOR_RTR=tree",
					 "COOP_NEIGHBOR_RTR_ARITY=2",
					 "COOP_SPIN=100", NULL };
/* ... balanced even when the ranks share CPUs (forwards through slots) */
static const char *const env_tree2_bal[] = { "COOP_NEIGHBOR_SLOT_MAX=4096",
					     "COOP_NEIGHBOR_RTR=tree",
					     "COOP_NEIGHBOR_RTR_ARITY=2",
					     "COOP_NEIGHBOR_TREE_SHARED=256",
					     "COOP_SPIN=100", NULL };
/* ... blocks of up to 2 slots' bytes stream, larger ones are messages */
static const char *const env_stream2[] = { "COOP_NEIGHBOR_SLOT_MAX=4096",
					   "COOP_NEIGHBOR_RTR=direct",
					   "COOP_NEIGHBOR_STREAM_MAX=8192",
					   "COOP_SPIN=100", NULL };
static const char *const env_chain[] = { "COOP_NEIGHBOR_SLOT_MAX=4096",
					 "COOP_NEIGHBOR_RTR=tree",
					 "COOP_NEIGHBOR_RTR_ARITY=1",
					 "COOP_SPIN=100", NULL };
#define ST COOP_TOPO_STATIC_BUFFERS
#define EX (COOP_TOPO_STATIC_BUFFERS | COOP_TOPO_EXACT_BYTES)

/* Groups: on a 2x2 stencil each rank sends each of its two neighbours
 * two blocks (self edges are never grouped); with sizes per edge
 * (W_EDGE) the empty ones ((o + j) % 4 == 3) have no slot, so some
 * blocks are alone.  Groups with RTR trees: the tree's nodes are the
 * groups (found by a test: members publishing into one shared word let
 * a sender overwrite a buffer not all had taken). */
static const struct static_case static_cases[] = {
	{ { G_ER, 4, 0.7, 11, 0, { 0 }, 0, "A(4, 0.7)" }, ST, W_NONE, 0,
	  env_direct, 0, 0 },
	{ { G_ER, 4, 1.0, 0, 0, { 0 }, 0, "A(4, 1)" }, ST, W_NONE, 0,
	  env_tree2, 0, 0 },
	{ { G_CART, 4, 0, 0, 4, { 2, 2, 1, 1 }, 0, "stencil 2x2x1x1" }, ST,
	  W_NONE, 0, env_chain, 0, 0 },
	{ { G_HOT, 8, 0, 0, 0, { 0 }, 1, "hot spot 8" }, EX, W_UNIFORM, 8,
	  env_tree2_bal, -1, 0 },
	{ { G_ER, 4, 0.7, 13, 0, { 0 }, 0, "A(4, 0.7) weights" }, EX,
	  W_EDGE, 100, env_direct, 0, 0 },
	{ { G_CART, 4, 0, 0, 2, { 2, 2, 1, 1 }, 0, "stencil 2x2" }, ST,
	  W_NONE, 0, env_direct, 0, 0 },
	{ { G_CART, 4, 0, 0, 2, { 2, 2, 1, 1 }, 0, "stencil 2x2 grouped" },
	  EX, W_UNIFORM, 8, env_direct, 4, 0 },
	{ { G_CART, 4, 0, 0, 4, { 2, 2, 1, 1 }, 0,
	    "stencil 2x2x1x1 grouped" }, EX, W_EDGE, 100, env_tree2, -1, 0 },
	{ { G_CART, 4, 0, 0, 2, { 2, 2, 1, 1 }, 0, "stencil 2x2 4 KiB" },
	  EX, W_UNIFORM, SLOT_MAX / 2, env_chain, 0, 0 },
	{ { G_CART, 4, 0, 0, 4, { 2, 2, 1, 1 }, 0,
	    "stencil 2x2x1x1 grouped" }, EX, W_EDGE, 100, env_direct, -1, 0 },
	{ { G_CART, 4, 0, 0, 2, { 2, 2, 1, 1 }, 0, "stencil 2x2 grouped" },
	  EX, W_EDGE, 100, env_tree2, -1, 0 },
	{ { G_CART, 4, 0, 0, 2, { 2, 2, 1, 1 }, 0, "stencil 2x2 streamed" },
	  EX, W_UNIFORM, 3 * SLOT_MAX + 100, env_direct, 0, 4 },
	{ { G_ER, 4, 0.7, 13, 0, { 0 }, 0, "A(4, 0.7) weights streamed" },
	  EX, W_EDGE, 3 * SLOT_MAX, env_direct, 0, -1 },
	{ { G_CART, 4, 0, 0, 2, { 2, 2, 1, 1 }, 0, "stencil 2x2 2 parts" },
	  EX, W_UNIFORM, 2 * SLOT_MAX, env_stream2, 0, 2 },
	{ { G_CART, 4, 0, 0, 2, { 2, 2, 1, 1 }, 0, "stencil 2x2 past stream" },
	  EX, W_UNIFORM, 3 * SLOT_MAX + 100, env_stream2, 0, 0 },
	{ { G_CART, 4, 0, 0, 2, { 2, 2, 1, 1 }, 0, "stencil 2x2 tree, past" },
	  EX, W_UNIFORM, 3 * SLOT_MAX + 100, env_tree2, 0, 0 },
};

/*
 * A 2x1 stencil on 2 ranks: each sends the other two blocks of exact
 * size, which share a slot - when the ranks share CPUs, or when both fit
 * a line (8 and 32 B, not 33 or 64); data right in every mode.
 */
static int group_line_rank(coop_context_t *ctx, int rank, int size,
			   void *arg)
{
	const struct gspec g = { .kind = G_CART, .n = 2, .ndims = 2,
				 .dims = { 2, 1 }, .name = "stencil 2x1" };
	static const size_t lens[] = { 8, 32, 33, 64 };
	int shared = !cpu_per_rank(size), l, mode, want;
	coop_topo_info_t in;
	struct rk k;

	(void)arg;
	for (l = 0; l < (int)(sizeof(lens) / sizeof(lens[0])); l++) {
		rk_init(&k, ctx, rank, &g);
		k.wmode = W_UNIFORM;
		k.wbytes = lens[l];
		T_OK(topo_make(&k, COMM_BASE, EX));
		T_OK(coop_topo_get_info(k.topo, &in));
		want = shared || 2 * lens[l] <= 64 ? 2 : 0;
		T_ASSERT(in.grouped[COOP_NBR_ALLTOALL] == want,
			 "%zu B: %d grouped, want %d", lens[l],
			 in.grouped[COOP_NBR_ALLTOALL], want);
		for (mode = 0; mode < NMODES; mode++)
			run_call(&k, OP_A2A, mode, lens[l]);
		topo_done(&k);
	}
	return 0;
}

START_TEST(test_group_line)
{
	ck_assert_int_eq(run_ranks(2, env_direct, group_line_rank, NULL, 60,
				   NULL), 0);
}
END_TEST

/* Every op and mode through the slots (1 B .. COOP_NEIGHBOR_SLOT_MAX)
 * and past them, with direct RTR, a binary tree and a chain, with
 * duplicate and self edges, balanced (EXACT_BYTES hot spot) and with a
 * weight per edge: data right, sizes fixed by the first call. */
START_TEST(test_static)
{
	const struct static_case *sc = &static_cases[_i];
	double t0 = now();

	ck_assert_int_eq(run_ranks(sc->g.n, sc->env, static_rank,
				   (void *)sc, 90, NULL), 0);
	fprintf(stderr, "neighbor: static %s (%s): %.2f s\n", sc->g.name,
		sc->env[1] + 18, now() - t0);
}
END_TEST

/* Canary collisions: the block's last bytes as the canary's.  Calls
 * per size: each of a slot's eight buffers used twice or more. */
#define CANARY_CALLS 17u
/* stencil 2x2x1x1 grouped: a group per neighbour (two blocks each); the
 * four self edges have no slot (a block to ourselves is copied) */
#define GROUPED_LEADERS 2
static const uint64_t canary = COOP_NBR_CANARY;

struct canary_case {
	const struct gspec *g;
	int grouped;		/* exact sizes: neighbours' blocks grouped */
	int open;		/* no hints: open slots */
};

/* With groups a call's blocks all collide or none does: which block
 * leads a group (the only one whose collision counts) is the plan's
 * business. */
static int collides(int o, int j, uint32_t iter, int grouped)
{
	if (grouped)
		return iter % 3 != 1;
	return (o + j + (int)iter) % 3 != 1;
}

/* The canary's last min(len, 8) bytes at the end of the block (so a
 * block of 5 bytes ends like the canary, but never equals its word). */
static void canary_tail(unsigned char *b, size_t len, int o, int j,
			uint32_t iter, int grouped)
{
	size_t n = len < 8 ? len : 8;

	t_fill(b, len, bseed(o, j, iter));
	if (collides(o, j, iter, grouped))
		memcpy(b + len - n, (const unsigned char *)&canary + 8 - n, n);
}

/* r's edges to other ranks: its messages with a slot */
static int out_others(const struct graph *g, int r)
{
	int i, n = 0;

	for (i = 0; i < g->outdeg[r]; i++)
		n += g->dst[r][i] != r;
	return n;
}

/* One call; flags counts the canary flags it should raise (grouped:
 * one per group, whose members are this rank's blocks to the same
 * neighbour). */
static void canary_call(struct rk *k, int op, size_t len, int grouped,
			uint64_t *flags)
{
	const struct graph *g = &k->g;
	int r = k->rank, i, nsend = op == OP_AG ? 1 : g->outdeg[r];
	unsigned char *sb = malloc(len * MAXDEG), *rb = malloc(len * MAXDEG);
	unsigned char want[80];
	uint32_t it = k->iter++;

	T_ASSERT(sb && rb && len <= sizeof(want), "malloc");
	for (i = 0; i < nsend; i++) {
		int j = op == OP_AG ? AG_SLOT : i;

		canary_tail(sb + i * len, len, r, j, it, grouped);
		if (len >= 8 && collides(r, j, it, grouped) && !grouped)
			*flags += op == OP_AG ? (uint64_t)out_others(g, r) :
						(uint64_t)(g->dst[r][i] != r);
	}
	if (len >= 8 && collides(r, 0, it, grouped) && grouped)
		*flags += GROUPED_LEADERS;
	T_OK(op == OP_AG ?
	     coop_neighbor_allgather(k->topo, sb, len, rb, len) :
	     coop_neighbor_alltoall(k->topo, sb, len, rb, len));
	for (i = 0; i < g->indeg[r]; i++) {
		int o = g->src[r][i];
		int j = op == OP_AG ? AG_SLOT : origin_slot(g, r, i);

		canary_tail(want, len, o, j, it, grouped);
		T_ASSERT(!memcmp(rb + i * len, want, len), "canary %s %zu B: "
			 "block %d from %d wrong", op_name[op], len, i, o);
	}
	free(sb);
	free(rb);
}

static int canary_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	static const size_t lens[] = { 5, 8, 16, 61, 64 };
	const struct canary_case *cc = arg;
	coop_topo_info_t in;
	uint64_t flags[2];
	struct rk k;
	int l, op, n, a2a;

	rk_init(&k, ctx, rank, cc->g);
	k.wmode = cc->grouped ? W_UNIFORM : W_NONE;
	for (l = 0; l < (int)(sizeof(lens) / sizeof(lens[0])); l++) {
		/* a neighbour's two blocks share a slot: with a CPU per rank
		 * only when both fit a line */
		int grouped = cc->grouped &&
			      (!cpu_per_rank(size) ||
			       2 * lens[l] <= 64);

		k.wbytes = lens[l];
		T_OK(topo_make(&k, COMM_BASE, cc->open ? 0 :
			       COOP_TOPO_STATIC_BUFFERS |
			       (cc->grouped ? COOP_TOPO_EXACT_BYTES : 0)));
		T_OK(coop_topo_get_info(k.topo, &in));
		T_ASSERT(in.grouped[0] == (grouped ? 4 : 0) &&
			 in.grouped[1] == in.grouped[0],
			 "%zu B: grouped %d %d", lens[l], in.grouped[0],
			 in.grouped[1]);
		flags[0] = flags[1] = 0;
		for (n = 0; n < (int)CANARY_CALLS; n++)
			for (op = OP_AG; op <= OP_A2A; op += OP_A2A)
				canary_call(&k, op, lens[l], grouped,
					    &flags[op == OP_A2A]);
		T_OK(coop_topo_get_info(k.topo, &in));
		for (a2a = 0; a2a < 2; a2a++) {
			T_ASSERT(in.canary_flags[a2a] == flags[a2a],
				 "%zu B op %d: %llu canary flags, want %llu",
				 lens[l], a2a,
				 (unsigned long long)in.canary_flags[a2a],
				 (unsigned long long)flags[a2a]);
			T_ASSERT(in.slot_sends[a2a] ==
				 CANARY_CALLS * (uint64_t)out_others(&k.g, rank),
				 "%zu B op %d: %llu slot sends", lens[l], a2a,
				 (unsigned long long)in.slot_sends[a2a]);
		}
		topo_done(&k);
	}
	return 0;
}

/* Blocks ending in the canary's bytes (5, 8, 16, 61, 64 B; allgather
 * and alltoall, 17 calls each so every buffer of a slot is used twice or
 * more, colliding and not): data right, a flag for exactly the blocks
 * of 8 B or more whose last 8 bytes are the canary, every message
 * through its slot.  Direct RTR and a binary tree; a stencil (every
 * neighbour twice, self edges), direct; the stencil again with exact
 * sizes, so each neighbour's two blocks share a slot (with a CPU per
 * rank only while both fit a line): one flag per group (its leader's),
 * none for the block before it, which ends in the canary's bytes too.
 * Plain calls (open slots, whose data ends at the canary word too),
 * direct and a binary tree. */
START_TEST(test_canary)
{
	const struct gspec er = { .kind = G_ER, .n = 4, .p = 1.0,
				  .name = "A(4, 1)" };
	const struct gspec st = { .kind = G_CART, .n = 4, .ndims = 4,
				  .dims = { 2, 2, 1, 1 },
				  .name = "stencil 2x2x1x1" };
	const struct canary_case cases[] = { { &er, 0, 0 }, { &er, 0, 0 },
					     { &st, 0, 0 }, { &st, 1, 0 },
					     { &er, 0, 1 }, { &er, 0, 1 } };

	ck_assert_int_eq(run_ranks(4, _i % 4 == 1 ? env_tree2 : env_direct,
				   canary_rank, (void *)&cases[_i], 60, NULL),
			 0);
}
END_TEST

/* Packed slots: rank 0 of a hot spot without replies sends each other
 * rank one block and receives nothing, so with exact sizes of at most
 * 64 B and direct RTR its slots' 32-128 buffers take 8-64 B each (up
 * to 8 calls a line) and a line is re-armed after its last call.  Calls
 * per size: each of the 128 buffers used five times or more; the
 * receivers come late to every fifth call, so the sender waits for
 * buffers whose lines are taken in part (a count stored before its line
 * is armed again let it write a buffer the re-arm then wiped: a hang). */
#define PACKED_CALLS 643u

struct packed_case {
	const char *const *env;
	int tree;		/* RTR tree: never packed */
};

static int packed_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	static const size_t lens[] = { 1, 8, 9, 16, 17, 24, 32, 33, 64, 65,
					72 };
	const struct gspec hot = { .kind = G_HOT, .n = size };
	const struct packed_case *pc = arg;
	coop_topo_info_t in;
	uint64_t flags[2];
	struct rk k;
	int l, n, op, a2a, want;

	rk_init(&k, ctx, rank, &hot);
	k.wmode = W_UNIFORM;
	for (l = 0; l < (int)(sizeof(lens) / sizeof(lens[0])); l++) {
		k.wbytes = lens[l];
		T_OK(topo_make(&k, COMM_BASE, EX));
		T_OK(coop_topo_get_info(k.topo, &in));
		want = !pc->tree && lens[l] <= 64 ? out_others(&k.g, rank) : 0;
		T_ASSERT(in.packed[0] == want && in.packed[1] == want,
			 "%zu B: packed %d %d, want %d", lens[l], in.packed[0],
			 in.packed[1], want);
		flags[0] = flags[1] = 0;
		for (n = 0; n < (int)PACKED_CALLS; n++)
			for (op = OP_AG; op <= OP_A2A; op += OP_A2A) {
				if (rank && n % 5 == 2)
					usleep(2000);
				canary_call(&k, op, lens[l], 0,
					    &flags[op == OP_A2A]);
			}
		T_OK(coop_topo_get_info(k.topo, &in));
		for (a2a = 0; a2a < 2; a2a++)
			T_ASSERT(in.canary_flags[a2a] == flags[a2a] &&
				 in.slot_sends[a2a] == PACKED_CALLS *
				 (uint64_t)out_others(&k.g, rank),
				 "%zu B op %d: %llu flags (want %llu), %llu "
				 "slot sends", lens[l], a2a,
				 (unsigned long long)in.canary_flags[a2a],
				 (unsigned long long)flags[a2a],
				 (unsigned long long)in.slot_sends[a2a]);
		topo_done(&k);
	}
	return 0;
}

static const char *const env_packed[] = { "COOP_NEIGHBOR_RTR=direct",
					  "COOP_NEIGHBOR_TREE_MAX=0",
					  "COOP_SPIN=100", NULL };
static const char *const env_packed_tree[] = { "COOP_NEIGHBOR_RTR=tree",
					       "COOP_NEIGHBOR_RTR_ARITY=2",
					       "COOP_NEIGHBOR_TREE_MAX=0",
					       "COOP_SPIN=100", NULL };

/* Blocks of 1-64 B (colliding with the canary and not) from a sender
 * that receives nothing: packed up to 64 B with direct RTR (info), not
 * with an RTR tree; data right, flags and slot sends exact. */
START_TEST(test_packed)
{
	const struct packed_case cases[] = { { env_packed, 0 },
					     { env_packed_tree, 1 } };

	ck_assert_int_eq(run_ranks(4, cases[_i].env, packed_rank,
				   (void *)&cases[_i], 60, NULL), 0);
}
END_TEST

/* On k's static topology, 8 B alltoalls: the victim makes one call and
 * is killed; the others' next two calls end with COOP_ERR_PEER_DEAD,
 * none hangs. */
static void death_calls(struct rk *k, int *flags)
{
	struct call c;
	int rc, i;

	run_call(k, OP_A2A, M_BLOCK, 8);
	if (k->rank == VICTIM) {
		__atomic_store_n(&flags[k->rank], 1, __ATOMIC_RELEASE);
		raise(SIGKILL);
		T_FAIL("alive after SIGKILL");
	}
	wait_flags(flags, VICTIM, VICTIM + 1);
	call_setup(&c, k, OP_A2A, 8);
	for (i = 0; i < 2; i++) {
		call_fill(&c, k);
		rc = coop_neighbor_alltoall(k->topo, c.sbuf, 8, c.rbuf, 8);
		T_ASSERT(rc == COOP_ERR_PEER_DEAD, "call %d after the death: "
			 "%s", i, coop_strerror(rc));
	}
	call_free(&c);
	topo_done(k);
}

/* A(4, 1) (the first call after the death: the victim's block never
 * comes; the second: it never frees the buffer for ours). */
static int static_death_rank(coop_context_t *ctx, int rank, int size,
			     void *arg)
{
	const struct gspec full = { .kind = G_ER, .n = size, .p = 1.0 };
	struct rk k;

	rk_init(&k, ctx, rank, &full);
	T_OK(topo_make(&k, COMM_BASE, COOP_TOPO_STATIC_BUFFERS));
	death_calls(&k, arg);
	return 0;
}

/* The packed death test's topology hints (the ranks are forked after
 * it is set): static slots, or none (open slots). */
static unsigned packed_death_hints;

/* The victim sends each other rank an 8 B block through a packed slot
 * (static, or open: the block in the trailer's entry) and receives
 * nothing; its receivers wait on canaries whose lines are re-armed
 * only at their ends. */
static int packed_death_rank(coop_context_t *ctx, int rank, int size,
			     void *arg)
{
	const struct gspec ring = { .kind = G_RING, .n = size };
	coop_topo_info_t in;
	struct rk k;
	int r;

	rk_init(&k, ctx, rank, &ring);
	memset(&k.g, 0, sizeof(k.g));
	k.g.n = size;
	for (r = 0; r < size; r++)
		if (r != VICTIM)
			g_edge(&k.g, VICTIM, r);
	k.wmode = W_UNIFORM;
	k.wbytes = 8;
	T_OK(topo_make(&k, COMM_BASE, packed_death_hints));
	T_OK(coop_topo_get_info(k.topo, &in));
	T_ASSERT(in.packed[1] == (rank == VICTIM ? size - 1 : 0),
		 "packed %d", in.packed[1]);
	death_calls(&k, arg);
	return 0;
}

START_TEST(test_static_death)
{
	run_death(_i ? env_tree2 : env_direct, static_death_rank);
}
END_TEST

START_TEST(test_packed_death)
{
	packed_death_hints = _i ? 0 : EX;
	run_death(env_packed, packed_death_rank);
}
END_TEST

TCase *tc_neighbor(void)
{
	TCase *tc = tcase_create("neighbor");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_er, 0,
			    (int)(sizeof(er_p) / sizeof(er_p[0])));
	tcase_add_loop_test(tc, test_stencil, 0, 2);
	tcase_add_test(tc, test_outstanding);
	tcase_add_loop_test(tc, test_open_slots, 0, 6);
	tcase_add_loop_test(tc, test_open_sizes, 0, 2);
	tcase_add_loop_test(tc, test_open_window, 0, 2);
	tcase_add_test(tc, test_flood_bounded);
	tcase_add_loop_test(tc, test_exact_hotspot, 0, 4);
	tcase_add_loop_test(tc, test_exact_hotspot_shared, 0, 2);
	tcase_add_test(tc, test_group_line);
	tcase_add_loop_test(tc, test_copier, 0,
			    (int)(sizeof(copier_cases) /
				  sizeof(copier_cases[0])));
	tcase_add_loop_test(tc, test_exact_er, 0, 3);
	tcase_add_test(tc, test_bad_args);
	tcase_add_loop_test(tc, test_peer_death, 0, 2);
	tcase_add_loop_test(tc, test_static, 0,
			    (int)(sizeof(static_cases) /
				  sizeof(static_cases[0])));
	tcase_add_loop_test(tc, test_canary, 0, 6);
	tcase_add_loop_test(tc, test_packed, 0, 2);
	tcase_add_loop_test(tc, test_single_copy, 0, 4);
	tcase_add_loop_test(tc, test_static_death, 0, 2);
	tcase_add_loop_test(tc, test_packed_death, 0, 2);
	return tc;
}
