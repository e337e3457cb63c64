/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_nbr_death.c - a neighbour SIGKILLed: during a 1 MiB alltoall (RGET
 * messages, or streamed through open slots), and between calls on
 * static slots and as a packed slot's sender (static and open): the
 * others' collective, and their next calls, end with
 * COOP_ERR_PEER_DEAD; none hangs.
 */
#include <check.h>
#include <signal.h>
#include <string.h>

#include "harness.h"
#include "nbr_test.h"

/* ------------------------------------------------------------------ */
/* a neighbour dies                                                     */
/* ------------------------------------------------------------------ */

#define VICTIM 3		/* the rank killed */

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
/* killed between calls: static and packed slots                        */
/* ------------------------------------------------------------------ */

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

/* tc_neighbor() (nbr_test.c) adds these in the case's order */
void nbr_add_peer_death(TCase *tc)
{
	tcase_add_loop_test(tc, test_peer_death, 0, 2);
}

void nbr_add_static_death(TCase *tc)
{
	tcase_add_loop_test(tc, test_static_death, 0, 2);
}

void nbr_add_packed_death(TCase *tc)
{
	tcase_add_loop_test(tc, test_packed_death, 0, 2);
}
