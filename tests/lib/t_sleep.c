/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_sleep.c - blocked waits sleep instead of spinning: a receive that
 * waits long for its message leaves the CPU idle (eager and rendezvous;
 * COOP_SLEEP_US=0 still never sleeps), the sender's doorbell wakes a
 * sleeping receiver at once (not at the end of its sleep), and four ranks
 * sharing one CPU exchange a ring of messages in reasonable time.
 */
#include <check.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "tests.h"

#define COMM 43
#define WAIT_MS 300		/* the receiver's wait, times t_time_scale() */
#define MAX_CPU_RATIO 0.3
#define WAKE_REPS 21
#define WAKE_COMPUTE_MS 30	/* long enough for the receiver to sleep */
#define WAKE_MAX_MEDIAN_US 2000	/* lost doorbells: ~COOP_SLEEP_US / 2 */
#define RING_ROUNDS 50
#define RING_BIG (1u << 20)
#define RING_LIMIT_S 20		/* times t_time_scale() */

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct wait_case {
	size_t len;
	int wait_ms;
	int sleeps;		/* 1: the wait must sleep, 0: must not */
};

/* Rank 0 "computes" for the wait, then sends; rank 1 is blocked in
 * coop_recv all along and measures what that wait cost its CPU. */
static int long_wait_rank(coop_context_t *ctx, int rank, int size,
			  void *arg)
{
	const struct wait_case *c = arg;
	char *buf = malloc(c->len);
	double wall, cpu;
	coop_stats_t st;
	int mode;

	t_barrier(ctx, rank, size);
	if (rank == 0) {
		usleep((useconds_t)c->wait_ms * 1000 * t_time_scale());
		t_fill(buf, c->len, 11);
		T_OK(coop_send(ctx, buf, c->len, 1, 3, COMM, 0));
		free(buf);
		return 0;
	}
	T_OK(coop_reset_stats(ctx));
	wall = clock_s(CLOCK_MONOTONIC);
	cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	T_OK(coop_recv(ctx, buf, c->len, 0, 3, COMM, 0, NULL));
	cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu;
	wall = clock_s(CLOCK_MONOTONIC) - wall;
	T_OK(coop_get_stats(ctx, &st));
	T_ASSERT(t_check(buf, c->len, 11) < 0, "data");
	fprintf(stderr, "sleep: %zu B after %.0f ms: cpu %.1f ms, %llu sleeps\n",
		c->len, wall * 1e3, cpu * 1e3, (unsigned long long)st.sleeps);
	T_ASSERT(wall * 1e3 >= c->wait_ms * 0.8, "the wait was %.3f s", wall);
	if (!c->sleeps) {
		T_ASSERT(st.sleeps == 0, "COOP_SLEEP_US=0 slept");
	} else {
		T_ASSERT(st.sleeps > 0, "never slept");
		T_OK(coop_get_progress(ctx, &mode));
		/* a polling progress thread takes a core: it is what it is
		 * for (COOP_PROGRESS=thread-sleep sleeps) */
		T_ASSERT(cpu < MAX_CPU_RATIO * wall ||
			 mode == COOP_PROGRESS_THREAD,
			 "waiting %.3f s used %.3f s of CPU", wall, cpu);
	}
	free(buf);
	return 0;
}

static const struct wait_case wait_cases[] = {
	{ 1024, WAIT_MS, 1 },		/* bounce eager */
	{ 4u << 20, WAIT_MS, 1 },	/* rendezvous (auto: COOP-p2p) */
	{ 1024, WAIT_MS / 4, 0 },	/* COOP_SLEEP_US=0 */
};
/*
 * The spin phase yields the CPU now and then; on a loaded machine those
 * yields alone can last a whole wait (cheap, but then nothing sleeps):
 * a short spin makes sure the waits reach the sleeping phase.
 */
static const char *const env_sleep[] = { "COOP_SPIN=2000", NULL };
static const char *const env_nosleep[] = { "COOP_SPIN=2000",
					   "COOP_SLEEP_US=0", NULL };

START_TEST(test_long_wait_sleeps)
{
	const struct wait_case *c = &wait_cases[_i];

	ck_assert_int_eq(run_ranks(2, c->sleeps ? env_sleep : env_nosleep,
				   long_wait_rank, (void *)c, 30, NULL), 0);
}
END_TEST

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The sender stamps each message with CLOCK_MONOTONIC (one clock for the
 * node) when it sends; the receiver, asleep by then, takes the median
 * delay to its wake-up.  The sends are spread over a 10 ms sleep, so a
 * receiver that only woke at the end of its sleeps would show ~5 ms. */
static int wakeup_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	uint64_t stamp, lat[WAKE_REPS];
	coop_stats_t st;
	int i;

	(void)arg;
	t_barrier(ctx, rank, size);
	T_OK(coop_reset_stats(ctx));
	for (i = 0; i < WAKE_REPS; i++) {
		if (rank == 0) {
			usleep((WAKE_COMPUTE_MS * 1000 + i * 3700 % 10000) *
			       t_time_scale());
			stamp = (uint64_t)(clock_s(CLOCK_MONOTONIC) * 1e9);
			T_OK(coop_send(ctx, &stamp, sizeof(stamp), 1, 4, COMM,
				       0));
			T_OK(coop_recv(ctx, NULL, 0, 1, 5, COMM, 0, NULL));
			continue;
		}
		T_OK(coop_recv(ctx, &stamp, sizeof(stamp), 0, 4, COMM, 0,
			       NULL));
		lat[i] = (uint64_t)(clock_s(CLOCK_MONOTONIC) * 1e9) - stamp;
		T_OK(coop_send(ctx, NULL, 0, 0, 5, COMM, 0));
	}
	if (rank == 0)
		return 0;
	T_OK(coop_get_stats(ctx, &st));
	qsort(lat, WAKE_REPS, sizeof(lat[0]), cmp_u64);
	fprintf(stderr, "sleep: wake-up after a send: median %.0f us, max "
		"%.0f us, %llu sleeps\n", lat[WAKE_REPS / 2] / 1e3,
		lat[WAKE_REPS - 1] / 1e3, (unsigned long long)st.sleeps);
	T_ASSERT(st.sleeps >= WAKE_REPS, "the receiver did not sleep");
	T_ASSERT(lat[WAKE_REPS / 2] < WAKE_MAX_MEDIAN_US * 1000ULL *
				      (uint64_t)t_time_scale(),
		 "median wake-up %.0f us", lat[WAKE_REPS / 2] / 1e3);
	return 0;
}

START_TEST(test_doorbell_wakes)
{
	ck_assert_int_eq(run_ranks(2, env_sleep, wakeup_rank, NULL, 30, NULL),
			 0);
}
END_TEST

/* One round: a big and a small message to the right, from the left. */
static void ring_round(coop_context_t *ctx, int rank, int size, int round,
		       const char *out, char *in)
{
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	uint64_t tok = (uint64_t)rank << 32 | (uint64_t)round, got = 0;
	coop_request_t *r[4];
	long bad;

	memset(in, 0, RING_BIG);
	T_OK(coop_irecv(ctx, in, RING_BIG, left, 1, COMM, 0, &r[0]));
	T_OK(coop_irecv(ctx, &got, sizeof(got), left, 2, COMM, 0, &r[1]));
	T_OK(coop_isend(ctx, out, RING_BIG, right, 1, COMM, 0, &r[2]));
	T_OK(coop_isend(ctx, &tok, sizeof(tok), right, 2, COMM, 0, &r[3]));
	T_OK(coop_waitall(4, r, NULL));
	bad = t_check(in, RING_BIG, (uint32_t)left);
	T_ASSERT(bad < 0, "round %d: byte %ld from rank %d", round, bad, left);
	T_ASSERT(got == ((uint64_t)left << 32 | (uint64_t)round),
		 "round %d: token %llx", round, (unsigned long long)got);
}

static int oversub_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	char *out = malloc(RING_BIG), *in = malloc(RING_BIG);
	double t, limit = RING_LIMIT_S * t_time_scale();
	int i;

	(void)arg;
	T_ASSERT(!t_pin_first_cpu(NULL), "pin to one CPU");
	t_fill(out, RING_BIG, (uint32_t)rank);
	t_barrier(ctx, rank, size);
	t = clock_s(CLOCK_MONOTONIC);
	for (i = 0; i < RING_ROUNDS; i++)
		ring_round(ctx, rank, size, i, out, in);
	t = clock_s(CLOCK_MONOTONIC) - t;
	if (rank == 0)
		fprintf(stderr, "sleep: %d ranks on one CPU, %d rounds: "
			"%.2f s\n", size, RING_ROUNDS, t);
	T_ASSERT(t < limit, "%d rounds took %.1f s", RING_ROUNDS, t);
	free(out);
	free(in);
	return 0;
}

START_TEST(test_oversubscribed_ring)
{
	ck_assert_int_eq(run_ranks(4, NULL, oversub_rank, NULL,
				   2 * RING_LIMIT_S, NULL), 0);
}
END_TEST

TCase *tc_sleep(void)
{
	TCase *tc = tcase_create("sleep");

	tcase_set_timeout(tc, 90);
	tcase_add_loop_test(tc, test_long_wait_sleeps, 0,
			    (int)(sizeof(wait_cases) / sizeof(wait_cases[0])));
	tcase_add_test(tc, test_doorbell_wakes);
	tcase_add_test(tc, test_oversubscribed_ring);
	return tc;
}
