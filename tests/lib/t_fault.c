/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_fault.c - a peer that dies: killed in the middle of rendezvous copies
 * (for each protocol), or gone without finalizing.  Requests that depend
 * on it complete with COOP_ERR_PEER_DEAD, pending ANY_SOURCE receives too
 * (a send an offload engine finished before the death may complete);
 * nobody hangs, and the survivors keep talking to each other.  The same
 * with buffers of coop_alloc_mem's heap, copied through windows: the
 * victim's pages outlive it in the survivors' mappings, never read as
 * its data after its death.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tests.h"

#define COMM 41
#define BIG (256u << 20)

static void survivors_talk(coop_context_t *ctx, int rank)
{
	size_t len = 1 << 20;
	char *buf = malloc(len);
	coop_status_t st;

	if (rank == 0) {
		t_fill(buf, len, 77);
		T_OK(coop_send(ctx, buf, len, 1, 5, COMM, 0));
		T_OK(coop_recv(ctx, buf, 8, 1, 6, COMM, 0, &st));
	} else {
		T_OK(coop_recv(ctx, buf, len, 0, 5, COMM, 0, &st));
		T_ASSERT(t_check(buf, len, 77) < 0, "survivor data");
		T_OK(coop_send(ctx, buf, 8, 0, 6, COMM, 0));
	}
	free(buf);
}

/* Has any rank a copy assigned (its pending_ops count), or an offload
 * engine one in flight (the offload counters: not CPU load)? */
static int any_copy_assigned(coop_context_t *ctx, int size)
{
	coop_load_t l;
	int i;

	if (t_offload_ops(ctx))
		return 1;
	for (i = 0; i < size; i++) {
		T_OK(coop_get_load(ctx, i, &l));
		if (l.pending_ops)
			return 1;
	}
	return 0;
}

/* arg's word 3: the buffers come from the shared heap */
#define HEAP_FLAG 3

/*
 * arg: one flag per survivor, set once its requests are posted.  The
 * victim dies only then, so every request meets the death pending (a
 * survivor that is scheduled late would else find the victim dead when
 * it posts, a different case).
 */
static int survivors_posted(const int *posted)
{
	return __atomic_load_n(&posted[0], __ATOMIC_ACQUIRE) &&
	       __atomic_load_n(&posted[1], __ATOMIC_ACQUIRE);
}

/*
 * An offload engine writes into the receiver's pinned pages with no help
 * from it; a receiver killed mid-copy loses its address space before
 * its endpoint and registrations (the kernel's exit order), so the
 * engine may finish the copy in between: the send has then completed,
 * as it would have a moment earlier, and that is not an error.
 */
static int engine_writes(void)
{
	const char *rndv = getenv("COOP_RNDV");

	return rndv && (!strcmp(rndv, "dma") || !strcmp(rndv, "stripe"));
}

/* The survivors' requests with the victim failed, and rank 0's
 * COOP_ANY_SOURCE receive (no sender left who could match it) too. */
static void assert_failed_by_death(int rank, int rc, const coop_status_t *st)
{
	T_ASSERT(rc == COOP_ERR_IN_STATUS, "waitall: %s", coop_strerror(rc));
	T_ASSERT(st[0].error == COOP_ERR_PEER_DEAD, "transfer: %s",
		 coop_strerror(st[0].error));
	if (rank == 0)
		T_ASSERT(st[1].error == COOP_ERR_PEER_DEAD, "any-source: %s",
			 coop_strerror(st[1].error));
}

/*
 * A cooperative transfer ends when all bytes are in, whoever copied them:
 * through windows (heap buffers, or any registered buffer on the driver)
 * the survivor can copy the victim's range too, from or into pages that
 * outlive it, and then the transfer is complete.
 */
static int cooperative_through_windows(coop_context_t *ctx)
{
	const char *rndv = getenv("COOP_RNDV");
	coop_stats_t s;

	return rndv && !strcmp(rndv, "coop") &&
	       coop_get_stats(ctx, &s) == COOP_SUCCESS && s.window_bytes;
}

static void all_in_through_windows(int rank, int rc, const coop_status_t *st,
				   const char *buf)
{
	fprintf(stderr, "fault: rank %d's cooperative transfer got all its "
		"bytes through windows\n", rank);
	if (rank == 1)
		return;
	T_ASSERT(rc == COOP_ERR_IN_STATUS && st[1].error == COOP_ERR_PEER_DEAD,
		 "any-source: %s", coop_strerror(st[1].error));
	for (size_t i = 0; i < BIG; i += 4096)
		T_ASSERT(buf[i] == 2, "byte %zu of the victim's message: %d",
			 i, buf[i]);
}

static int midcopy_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	/* the victim receives into a buffer of its own, behind its send's */
	size_t bytes = rank == 2 ? 2 * (size_t)BIG : BIG;
	int *posted = arg;
	coop_request_t *r[2];
	coop_status_t st[2];
	void *buf;
	int rc;

	if (posted[HEAP_FLAG])
		T_OK(coop_alloc_mem(bytes, &buf));
	else
		buf = malloc(bytes);

	memset(buf, rank, BIG);
	/* the victim's transfers move only in its own calls, so it dies in
	 * the middle of them (a progress thread could finish its receive
	 * before it sees the condition below) */
	if (rank == 2)
		T_OK(coop_set_progress(ctx, COOP_PROGRESS_MANUAL, -1));
	t_barrier(ctx, rank, size);	/* nothing may start before this */
	if (rank == 2) {	/* the victim */
		T_OK(coop_isend(ctx, buf, BIG, 0, 1, COMM, 0, &r[0]));
		T_OK(coop_irecv(ctx, (char *)buf + BIG, BIG, 1, 2, COMM, 0,
				&r[1]));
		/* die as soon as all is posted and a copy is assigned */
		while (!survivors_posted(posted) ||
		       !any_copy_assigned(ctx, size))
			coop_progress(ctx);
		raise(SIGKILL);
	}
	if (rank == 0) {
		T_OK(coop_irecv(ctx, buf, BIG, 2, 1, COMM, 0, &r[0]));
		T_OK(coop_irecv(ctx, buf, 8, COOP_ANY_SOURCE, 99, COMM, 0,
				&r[1]));
	} else {
		T_OK(coop_isend(ctx, buf, BIG, 2, 2, COMM, 0, &r[0]));
		r[1] = NULL;
	}
	__atomic_store_n(&posted[rank], 1, __ATOMIC_RELEASE);
	rc = coop_waitall(2, r, st);
	if (!st[0].error && cooperative_through_windows(ctx))
		all_in_through_windows(rank, rc, st, buf);
	else if (rank == 1 && rc == COOP_SUCCESS && engine_writes())
		fprintf(stderr, "fault: the engine finished rank 1's send "
			"before the victim was gone\n");
	else
		assert_failed_by_death(rank, rc, st);
	/* blocks until the death is seen (it may not be yet, above) */
	T_ASSERT(coop_recv(ctx, buf, 100, 2, 3, COMM, 0, NULL) ==
		 COOP_ERR_PEER_DEAD, "receive from the dead");
	T_ASSERT(coop_isend(ctx, buf, 100, 2, 3, COMM, 0, &r[0]) ==
		 COOP_ERR_PEER_DEAD, "send to the dead");
	survivors_talk(ctx, rank);
	if (posted[HEAP_FLAG])
		T_OK(coop_free_mem(buf));
	else
		free(buf);
	return 0;
}

/* 3 ranks on 2 CPUs: waiters yield early so the victim gets to run */
static const char *const env_rget[] = { "COOP_RNDV=rget", "COOP_SPIN=100",
					NULL };
static const char *const env_rput[] = { "COOP_RNDV=rput", "COOP_SPIN=100",
					NULL };
static const char *const env_rtr[] = { "COOP_RNDV=rtr", "COOP_SPIN=100",
				       NULL };
static const char *const env_coop[] = { "COOP_RNDV=coop", "COOP_SPIN=100",
					 NULL };
static const char *const env_bounce[] = { "COOP_CMA=off", "COOP_SPIN=100",
					  NULL };
static const char *const env_dma[] = { "COOP_RNDV=dma", "COOP_SPIN=100",
				       NULL };
static const char *const env_stripe[] = { "COOP_RNDV=stripe",
	"COOP_STRIPE_RATIO=1", "COOP_STRIPE_MIN=0", "COOP_SPIN=100", NULL };
static const char *const *const envs[] = { env_rget, env_rput, env_rtr,
					   env_coop, env_bounce, env_dma,
					   env_stripe };

static void killed_mid_rendezvous(const char *const *env, int heap)
{
	struct rank_result res[3];
	int *posted = shared_alloc(4096);

	posted[HEAP_FLAG] = heap;
	run_ranks(3, env, midcopy_rank, posted, 60, res);
	shared_free(posted, 4096);
	ck_assert_msg(res[0].exited && res[0].status == 0, "rank 0 failed");
	ck_assert_msg(res[1].exited && res[1].status == 0, "rank 1 failed");
	ck_assert_int_eq(res[2].signo, SIGKILL);
}

START_TEST(test_killed_mid_rendezvous)
{
	killed_mid_rendezvous(envs[_i], 0);
}
END_TEST

/* the protocols whose CPU copies go through windows */
START_TEST(test_killed_mid_window)
{
	killed_mid_rendezvous(envs[_i], 1);
}
END_TEST

/* A rank that exits without finalize; one that finalizes early. */
static int gone_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	char buf[64];
	coop_status_t st;
	int rc;

	(void)arg;
	(void)size;
	if (rank == 1)
		_exit(0);
	if (rank == 2)
		return 0;	/* finalized by the harness */
	rc = coop_recv(ctx, buf, sizeof(buf), 1, 0, COMM, 0, &st);
	T_ASSERT(rc == COOP_ERR_PEER_DEAD, "from exited: %s", coop_strerror(rc));
	rc = coop_recv(ctx, buf, sizeof(buf), 2, 0, COMM, 0, &st);
	T_ASSERT(rc == COOP_ERR_PEER_DEAD, "from finalized: %s",
		 coop_strerror(rc));
	rc = coop_probe(ctx, 2, 0, COMM, &st);
	T_ASSERT(rc == COOP_ERR_PEER_DEAD, "probe: %s", coop_strerror(rc));
	return 0;
}

START_TEST(test_peer_gone)
{
	ck_assert_int_eq(run_ranks(3, NULL, gone_rank, NULL, 60, NULL), 0);
}
END_TEST

TCase *tc_fault(void)
{
	TCase *tc = tcase_create("fault");

	tcase_set_timeout(tc, 90);
	tcase_add_loop_test(tc, test_killed_mid_rendezvous, 0,
			    (int)(sizeof(envs) / sizeof(envs[0])));
	tcase_add_loop_test(tc, test_killed_mid_window, 0, 4);
	tcase_add_test(tc, test_peer_gone);
	return tc;
}
