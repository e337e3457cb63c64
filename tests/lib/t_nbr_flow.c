/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_nbr_flow.c - several collectives in flight: three alltoalls of one
 * topology outstanding at once, and four calls alternating between two
 * topologies (one waitall); and a rank whose calls only send, whose
 * backlog stays bounded as coop_send's does.
 */
#include <check.h>
#include <inttypes.h>

#include "harness.h"
#include "nbr_test.h"

/* ------------------------------------------------------------------ */
/* several collectives outstanding                                      */
/* ------------------------------------------------------------------ */

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

/* ------------------------------------------------------------------ */
/* a sender's backlog                                                   */
/* ------------------------------------------------------------------ */

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

/* tc_neighbor() (nbr_test.c) adds these in the case's order */
void nbr_add_outstanding(TCase *tc)
{
	tcase_add_test(tc, test_outstanding);
}

void nbr_add_flood_bounded(TCase *tc)
{
	tcase_add_test(tc, test_flood_bounded);
}
