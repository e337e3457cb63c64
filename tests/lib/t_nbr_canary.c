/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_nbr_canary.c - the canary word that ends a slot's buffer: blocks
 * ending in its bytes (static, grouped and open slots: a flag for
 * exactly the blocks whose last 8 bytes are the canary), and packed
 * slots, several blocks to a line, from a sender that receives nothing
 * (blocks of up to 64 B, its receivers late; not with an RTR tree).
 */
#include <check.h>
#include <string.h>

#include "harness.h"
#include "nbr_test.h"

/* ------------------------------------------------------------------ */
/* canary collisions and packed slots                                   */
/* ------------------------------------------------------------------ */

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

/* tc_neighbor() (nbr_test.c) adds these in the case's order */
void nbr_add_canary(TCase *tc)
{
	tcase_add_loop_test(tc, test_canary, 0, 6);
}

void nbr_add_packed(TCase *tc)
{
	tcase_add_loop_test(tc, test_packed, 0, 2);
}
