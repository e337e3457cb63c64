/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_nbr_copy.c - who copies a collective's blocks: up to
 * COOP_NEIGHBOR_EAGER_MAX (COOP_NEIGHBOR_EAGER_SHARED with more ranks
 * than CPUs) eagerly, beyond it one copy by one side (RGET when every
 * rank has a CPU; split between both only from a sender with nothing
 * to receive); with the ranks on one CPU the sender, unless it takes
 * part in more than twice as many transfers as the receiver.
 */
#include <check.h>
#include <inttypes.h>

#include "harness.h"
#include "nbr_test.h"

/* ------------------------------------------------------------------ */
/* a collective's messages: single copy above COOP_NEIGHBOR_EAGER_MAX   */
/* ------------------------------------------------------------------ */

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
 * whatever COOP_EAGER_MAX (64 KiB) and COOP_HYBRID_MIN (64 KiB) say -
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
/* who copies when ranks share CPUs                                     */
/* ------------------------------------------------------------------ */

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

/* tc_neighbor() (nbr_test.c) adds these in the case's order */
void nbr_add_copier(TCase *tc)
{
	tcase_add_loop_test(tc, test_copier, 0,
			    (int)(sizeof(copier_cases) /
				  sizeof(copier_cases[0])));
}

void nbr_add_single_copy(TCase *tc)
{
	tcase_add_loop_test(tc, test_single_copy, 0, 4);
}
