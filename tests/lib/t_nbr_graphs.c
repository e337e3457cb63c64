/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_nbr_graphs.c - neighborhood collectives on whole graphs, checked
 * against nbr_test.c's reference: allgather(v) and alltoall(v),
 * blocking, nonblocking (progress, then wait) and persistent (started 3
 * times, refilled in between), 0 B .. 64 KiB + 3, on Erdos-Renyi
 * A(4, p) (p 0.3, 0.7, 1: also 1 MiB; 0.7 also with colour rounds) and
 * periodic Cartesian stencils (2x2: every neighbour twice; 2x2x1x1:
 * also four self edges).
 */
#include <check.h>

#include "harness.h"
#include "nbr_test.h"

/* ------------------------------------------------------------------ */
/* data: every op x mode x size on a graph                              */
/* ------------------------------------------------------------------ */

/* The edges of g (the timing line says them). */
static int g_edges(const struct graph *g)
{
	int r, e = 0;

	for (r = 0; r < g->n; r++)
		e += g->outdeg[r];
	return e;
}

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

/* tc_neighbor() (nbr_test.c) adds these in the case's order */
void nbr_add_er(TCase *tc)
{
	tcase_add_loop_test(tc, test_er, 0,
			    (int)(sizeof(er_p) / sizeof(er_p[0])));
}

void nbr_add_stencil(TCase *tc)
{
	tcase_add_loop_test(tc, test_stencil, 0, 2);
}
