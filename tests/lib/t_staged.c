/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_staged.c - the decoupled protocols of [Marathe], pre-copy
 * (COOP_RNDV=precopy) and post-copy (COOP_RNDV=postcopy); t_proto.c runs
 * its sizes, truncation and ordering tests on them too.
 *
 * - decoupled: a 1 MiB + 3 send completes while its receiver is away
 *   (it posts 300 ms later), both statuses say the protocol, the data
 *   arrives, both sides' statistics count it;
 * - the staging ring: 64 messages of 200000 B to a receiver that takes
 *   them in reverse tag order (chunks freed out of order), through a
 *   4 MiB area, all sent before any is received: the 20 that fit (19
 *   where the ring wraps) staged, the rest RGET; every byte right; a
 *   second round stages as many again (every chunk came back);
 * - synchronous sends go by RGET (they wait for the match anyway);
 * - a sender that finalizes right after its sends completed (pre-copy:
 *   the data is still in its outbox) waits in coop_finalize until the
 *   receiver, rounds behind, has taken every message (40 rounds of
 *   truncated receives): every byte arrives.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "tests.h"

#define COMM 61
#define RING_MSGS 64
#define RING_LEN 200000

static const char *const env_pre[] = { "COOP_RNDV=precopy",
	"COOP_PRECOPY_BYTES=4m", NULL };
static const char *const env_post[] = { "COOP_RNDV=postcopy",
	"COOP_POSTCOPY_BYTES=8m", NULL };	/* 4 MiB per sender */
static const char *const *const envs[] = { env_pre, env_post };
static const int staged_proto[] = { COOP_PROTOCOL_PRECOPY,
				    COOP_PROTOCOL_POSTCOPY };
static const char *const names[] = { "precopy", "postcopy" };

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int decoupled_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	int want = *(const int *)arg, away = 300 * t_time_scale();
	size_t len = (1 << 20) + 3;
	char *buf = malloc(len);
	coop_request_t *r;
	coop_status_t st;
	coop_stats_t stats;
	double t0;

	t_barrier(ctx, rank, size);
	if (rank == 0) {
		t_fill(buf, len, 21);
		t0 = now_ms();
		T_OK(coop_isend(ctx, buf, len, 1, 4, COMM, 0, &r));
		T_OK(coop_wait(&r, &st));
		T_ASSERT(now_ms() - t0 < away / 2, "the send took %.0f ms",
			 now_ms() - t0);
		memset(buf, 0, len);	/* the receiver gets the staged copy */
	} else {
		usleep((useconds_t)away * 1000);
		T_OK(coop_recv(ctx, buf, len, 0, 4, COMM, 0, &st));
		T_ASSERT(t_check(buf, len, 21) < 0, "data");
	}
	T_ASSERT(st.protocol == want, "rank %d: protocol %d", rank,
		 st.protocol);
	T_OK(coop_get_stats(ctx, &stats));
	T_ASSERT((rank ? stats.received[want] : stats.sent[want]) == 1,
		 "rank %d: statistics", rank);
	t_barrier(ctx, rank, size);
	free(buf);
	return 0;
}

START_TEST(test_staged_decoupled)
{
	fprintf(stderr, "staged: %s, receiver away\n", names[_i]);
	ck_assert_int_eq(run_ranks(2, envs[_i], decoupled_rank,
				   (void *)&staged_proto[_i], 60, NULL), 0);
}
END_TEST

/* One round: rank 0 sends RING_MSGS at once, rank 1 receives them in
 * reverse tag order; the number rank 0 staged. */
static int ring_round(coop_context_t *ctx, int rank, int size, int want,
		      char *buf)
{
	coop_request_t *r[RING_MSGS];
	coop_status_t st[RING_MSGS];
	int i, staged = 0, rget = 0;

	for (i = 0; rank == 0 && i < RING_MSGS; i++) {
		t_fill(buf + (size_t)i * RING_LEN, RING_LEN, (uint32_t)i);
		T_OK(coop_isend(ctx, buf + (size_t)i * RING_LEN, RING_LEN, 1,
				i, COMM, 0, &r[i]));
	}
	t_barrier(ctx, rank, size);	/* all sent before any receive */
	for (i = RING_MSGS - 1; rank == 1 && i >= 0; i--)
		T_OK(coop_irecv(ctx, buf + (size_t)i * RING_LEN, RING_LEN, 0,
				i, COMM, 0, &r[i]));
	T_OK(coop_waitall(RING_MSGS, r, st));
	for (i = 0; i < RING_MSGS; i++) {
		staged += st[i].protocol == want;
		rget += st[i].protocol == COOP_PROTOCOL_RGET;
		if (rank == 1)
			T_ASSERT(t_check(buf + (size_t)i * RING_LEN, RING_LEN,
					 (uint32_t)i) < 0, "message %d", i);
	}
	T_ASSERT(staged + rget == RING_MSGS, "rank %d: %d staged, %d RGET",
		 rank, staged, rget);
	return staged;
}

static int ring_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	int want = *(const int *)arg, first, second;
	char *buf = malloc((size_t)RING_MSGS * RING_LEN);

	t_barrier(ctx, rank, size);
	first = ring_round(ctx, rank, size, want, buf);
	t_barrier(ctx, rank, size);
	second = ring_round(ctx, rank, size, want, buf);
	if (rank == 0)
		fprintf(stderr, "staged ring: %d then %d of %d staged\n",
			first, second, RING_MSGS);
	/* 4 MiB holds 20 of them (19 where the ring wraps); the rest went
	 * by RGET */
	T_ASSERT(first >= 19 && first <= 20 && second >= 19 && second <= 20,
		 "staged %d, then %d", first, second);
	t_barrier(ctx, rank, size);
	free(buf);
	return 0;
}

START_TEST(test_staged_ring)
{
	ck_assert_int_eq(run_ranks(2, envs[_i], ring_rank,
				   (void *)&staged_proto[_i], 60, NULL), 0);
}
END_TEST

static int sync_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	size_t len = 1 << 20;
	char *buf = malloc(len);
	coop_status_t st;

	(void)arg;
	t_barrier(ctx, rank, size);
	if (rank == 0) {
		t_fill(buf, len, 5);
		T_OK(coop_send(ctx, buf, len, 1, 9, COMM, COOP_SEND_SYNC));
	} else {
		T_OK(coop_recv(ctx, buf, len, 0, 9, COMM, 0, &st));
		T_ASSERT(st.protocol == COOP_PROTOCOL_RGET, "protocol %d",
			 st.protocol);
		T_ASSERT(t_check(buf, len, 5) < 0, "data");
	}
	free(buf);
	return 0;
}

START_TEST(test_staged_sync)
{
	ck_assert_int_eq(run_ranks(2, envs[_i], sync_rank, NULL, 60, NULL), 0);
}
END_TEST

/* Truncated receives of staged messages, 40 rounds: the sender is done
 * (every send completed at once) rounds before the receiver. */
static int leave_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	static const size_t len[] = { 100000, 3 << 20 };
	static const size_t cap[] = { 50001, 1 << 20 };
	char *buf = malloc(len[1]);
	coop_status_t st;
	int i, it, rc;

	(void)arg;
	t_barrier(ctx, rank, size);
	for (it = 0; it < 40; it++) {
		for (i = 0; i < 2; i++) {
			uint32_t seed = (uint32_t)(it * 2 + i);

			if (rank == 0) {
				t_fill(buf, len[i], seed);
				T_OK(coop_send(ctx, buf, len[i], 1, i, COMM, 0));
				continue;
			}
			memset(buf, 0, len[1]);
			rc = coop_recv(ctx, buf, cap[i], 0, i, COMM, 0, &st);
			T_ASSERT(rc == COOP_ERR_TRUNCATE, "round %d: %s", it,
				 coop_strerror(rc));
			T_ASSERT(t_check(buf, cap[i], seed) < 0 && !buf[cap[i]],
				 "round %d message %d", it, i);
		}
	}
	free(buf);
	return 0;	/* rank 0 finalizes at once */
}

START_TEST(test_staged_sender_leaves)
{
	ck_assert_int_eq(run_ranks(2, envs[_i], leave_rank, NULL, 60, NULL),
			 0);
}
END_TEST

TCase *tc_staged(void)
{
	TCase *tc = tcase_create("staged");

	tcase_set_timeout(tc, 90);
	tcase_add_loop_test(tc, test_staged_decoupled, 0, 2);
	tcase_add_loop_test(tc, test_staged_ring, 0, 2);
	tcase_add_loop_test(tc, test_staged_sync, 0, 2);
	tcase_add_loop_test(tc, test_staged_sender_leaves, 0, 2);
	return tc;
}
