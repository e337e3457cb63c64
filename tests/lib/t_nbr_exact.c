/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_nbr_exact.c - COOP_TOPO_EXACT_BYTES: alltoall's tree balancing of a
 * hot spot on 8 ranks (moved messages, forwards; on ranks sharing one
 * CPU none by default, some with COOP_NEIGHBOR_TREE_SHARED=256) and
 * A(4, 0.7) with uniform weights and a weight per edge: every op and
 * mode right, the ranks agreeing on the graph's numbers, wrong sizes
 * refused with COOP_ERR_COUNT on the calling rank.
 */
#include <check.h>

#include "harness.h"
#include "nbr_test.h"

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

/* tc_neighbor() (nbr_test.c) adds these in the case's order */
void nbr_add_exact_hotspot(TCase *tc)
{
	tcase_add_loop_test(tc, test_exact_hotspot, 0, 4);
}

void nbr_add_exact_hotspot_shared(TCase *tc)
{
	tcase_add_loop_test(tc, test_exact_hotspot_shared, 0, 2);
}

void nbr_add_exact_er(TCase *tc)
{
	tcase_add_loop_test(tc, test_exact_er, 0, 3);
}
