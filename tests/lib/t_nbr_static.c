/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_nbr_static.c - COOP_TOPO_STATIC_BUFFERS: every op and mode through
 * the static slots and past them (direct RTR, a binary RTR tree, a
 * chain; duplicate and self edges; a balanced hot spot, a weight per
 * edge), groups of a neighbour's blocks sharing a slot, blocks streamed
 * through them in parts (exact sizes, direct RTR), ten calls
 * outstanding (more than a slot's buffers), sizes fixed by the first
 * call.
 */
#include <check.h>

#include "harness.h"
#include "nbr_test.h"

/* ------------------------------------------------------------------ */
/* COOP_TOPO_STATIC_BUFFERS: static slots, RTR trees                    */
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

/* as env_tree2 (nbr_test.c), balanced even when the ranks share CPUs
 * (forwards through slots) */
static const char *const env_tree2_bal[] = { "COOP_NEIGHBOR_SLOT_MAX=4096",
					     "COOP_NEIGHBOR_RTR=tree",
					     "COOP_NEIGHBOR_RTR_ARITY=2",
					     "COOP_NEIGHBOR_TREE_SHARED=256",
					     "COOP_SPIN=100", NULL };
/* as env_direct (nbr_test.c), and blocks of up to 2 slots' bytes
 * stream, larger ones are messages */
static const char *const env_stream2[] = { "COOP_NEIGHBOR_SLOT_MAX=4096",
					   "COOP_NEIGHBOR_RTR=direct",
					   "COOP_NEIGHBOR_STREAM_MAX=8192",
					   "COOP_SPIN=100", NULL };
/* a chain: an RTR tree of arity 1 */
static const char *const env_chain[] = { "COOP_NEIGHBOR_SLOT_MAX=4096",
					 "COOP_NEIGHBOR_RTR=tree",
					 "COOP_NEIGHBOR_RTR_ARITY=1",
					 "COOP_SPIN=100", NULL };
#define ST COOP_TOPO_STATIC_BUFFERS

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

/* tc_neighbor() (nbr_test.c) adds these in the case's order */
void nbr_add_static(TCase *tc)
{
	tcase_add_loop_test(tc, test_static, 0,
			    (int)(sizeof(static_cases) /
				  sizeof(static_cases[0])));
}

void nbr_add_group_line(TCase *tc)
{
	tcase_add_test(tc, test_group_line);
}
