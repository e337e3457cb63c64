/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_fault.c - a peer that dies: killed in the middle of rendezvous copies
 * (for each protocol), or gone without finalizing.  Requests that depend
 * on it complete with COOP_ERR_PEER_DEAD, pending ANY_SOURCE receives too;
 * nobody hangs, and the survivors keep talking to each other.
 */
#include <check.h>
#include <signal.h>
#include <string.h>

#include "harness.h"
#include "../../include/coopmpi_uapi.h"
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

static int midcopy_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	const volatile struct coopmpi_load_slot *slots;
	char *buf = malloc(BIG);
	coop_request_t *r[2];
	coop_status_t st[2];
	int rc;

	(void)arg;
	memset(buf, rank, BIG);
	slots = t_load_slots(size);
	t_barrier(ctx, rank, size);	/* nothing may start before this */
	if (rank == 2) {	/* the victim */
		T_OK(coop_isend(ctx, buf, BIG, 0, 1, COMM, 0, &r[0]));
		T_OK(coop_irecv(ctx, buf, BIG, 1, 2, COMM, 0, &r[1]));
		/* die as soon as any rank has a copy assigned */
		while (!slots[0].pending_ops && !slots[1].pending_ops &&
		       !slots[2].pending_ops)
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
	rc = coop_waitall(2, r, st);
	T_ASSERT(rc == COOP_ERR_IN_STATUS, "waitall: %s", coop_strerror(rc));
	T_ASSERT(st[0].error == COOP_ERR_PEER_DEAD, "transfer: %s",
		 coop_strerror(st[0].error));
	if (rank == 0)
		T_ASSERT(st[1].error == COOP_ERR_PEER_DEAD, "any-source: %s",
			 coop_strerror(st[1].error));
	T_ASSERT(coop_isend(ctx, buf, 100, 2, 3, COMM, 0, &r[0]) ==
		 COOP_ERR_PEER_DEAD, "send to the dead");
	T_ASSERT(coop_recv(ctx, buf, 100, 2, 3, COMM, 0, NULL) ==
		 COOP_ERR_PEER_DEAD, "receive from the dead");
	survivors_talk(ctx, rank);
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
static const char *const *const envs[] = { env_rget, env_rput, env_rtr,
					   env_coop, env_bounce };

START_TEST(test_killed_mid_rendezvous)
{
	struct rank_result res[3];

	run_ranks(3, envs[_i], midcopy_rank, NULL, 60, res);
	ck_assert_msg(res[0].exited && res[0].status == 0, "rank 0 failed");
	ck_assert_msg(res[1].exited && res[1].status == 0, "rank 1 failed");
	ck_assert_int_eq(res[2].signo, SIGKILL);
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
	tcase_add_loop_test(tc, test_killed_mid_rendezvous, 0, 5);
	tcase_add_test(tc, test_peer_gone);
	return tc;
}
