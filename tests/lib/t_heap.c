/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_heap.c - coop_alloc_mem's shared heap: its calls; messages between
 * heap buffers in every rendezvous protocol go through windows on either
 * provider (the shm provider maps the peer's heap, the driver any
 * region), and stay right when a buffer is freed and its address gets
 * other memory (the peer's window over the released segment is dead: its
 * copy is redone, then the new segment mapped); a forked child that frees
 * the parent's blocks takes nothing from the parent's peers.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "tests.h"

#define COMM 73
#define LEN ((1u << 20) + 123)	/* rendezvous, unaligned end */
#define ROUNDS 4
#define SMALL_SEG (64u << 10)
#define KEEPERS 8		/* freed blocks the heap keeps for reuse */

static int windows_expected(void)
{
	const char *w = getenv("COOP_WINDOWS");

	if ((w && !strcmp(w, "0")) || t_engine_hca())
		return 0;
	return !t_kmod_provider() ||
	       access("/sys/module/coopmpi/parameters/max_windows", R_OK) == 0;
}

START_TEST(test_heap_calls)
{
	void *p, *q, *small;

	ck_assert_int_eq(coop_alloc_mem(LEN, NULL), COOP_ERR_ARG);
	ck_assert_int_eq(coop_alloc_mem(100, &small), COOP_SUCCESS);
	memset(small, 1, 100);
	ck_assert_int_eq(coop_alloc_mem(LEN, &p), COOP_SUCCESS);
	ck_assert_uint_eq((uintptr_t)p % 4096, 0);
	memset(p, 2, LEN);
	ck_assert_int_eq(coop_free_mem(p), COOP_SUCCESS);
	/* a freed block is kept: the same size gets it again */
	ck_assert_int_eq(coop_alloc_mem(LEN, &q), COOP_SUCCESS);
	ck_assert_ptr_eq(p, q);
	ck_assert_int_eq(coop_free_mem(q), COOP_SUCCESS);
	ck_assert_int_eq(coop_free_mem(small), COOP_SUCCESS);
	ck_assert_int_eq(coop_free_mem(NULL), COOP_SUCCESS);
	ck_assert_int_eq(coop_alloc_mem((size_t)-1, &p), COOP_ERR_NOMEM);
	ck_assert_ptr_null(p);
}
END_TEST

/* Free buf for good (the kept blocks are full of others) and get new
 * memory of its size, most likely at its address. */
static uint8_t *release_and_realloc(uint8_t *buf)
{
	void *keep[KEEPERS], *fresh;
	int i;

	for (i = 0; i < KEEPERS; i++)
		T_OK(coop_alloc_mem(SMALL_SEG, &keep[i]));
	for (i = 0; i < KEEPERS; i++)
		T_OK(coop_free_mem(keep[i]));
	T_OK(coop_free_mem(buf));
	T_OK(coop_alloc_mem(LEN, &fresh));
	return fresh;
}

static void one_round(coop_context_t *ctx, int rank, uint8_t *buf,
		      uint32_t round)
{
	if (rank == 0) {
		t_fill(buf, LEN, round);
		T_OK(coop_send(ctx, buf, LEN, 1, 1, COMM, 0));
	} else {
		memset(buf, 0, LEN);
		T_OK(coop_recv(ctx, buf, LEN, 0, 1, COMM, 0, NULL));
		T_ASSERT(t_check(buf, LEN, round) < 0,
			 "round %u: byte %ld differs", round,
			 t_check(buf, LEN, round));
	}
}

/* Both ranks' bytes through windows, summed. */
static uint64_t window_bytes(coop_context_t *ctx, int rank)
{
	uint64_t mine, theirs;
	coop_stats_t st;

	T_OK(coop_get_stats(ctx, &st));
	mine = st.window_bytes;
	T_OK(coop_send(ctx, &mine, sizeof(mine), !rank, 2, COMM, 0));
	T_OK(coop_recv(ctx, &theirs, sizeof(theirs), !rank, 2, COMM, 0,
		       NULL));
	return mine + theirs;
}

static void assert_windows(uint64_t got, uint64_t want)
{
	if (windows_expected())
		T_ASSERT(got >= want, "%llu bytes through windows, want >= "
			 "%llu", (unsigned long long)got,
			 (unsigned long long)want);
	else
		T_ASSERT(got == 0, "%llu bytes through windows without any",
			 (unsigned long long)got);
}

/* Round 3 after a release (its first chunk's window is dead: copied
 * again), round 4 after a free that the heap keeps. */
static int realloc_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	uint8_t *buf;
	void *p;

	(void)size;
	(void)arg;
	T_OK(coop_alloc_mem(LEN, &p));
	buf = p;
	for (uint32_t round = 1; round <= ROUNDS; round++) {
		if (round == 3)
			buf = release_and_realloc(buf);
		if (round == 4) {
			T_OK(coop_free_mem(buf));
			T_OK(coop_alloc_mem(LEN, &p));
			buf = p;
		}
		one_round(ctx, rank, buf, round);
	}
	assert_windows(window_bytes(ctx, rank), (uint64_t)(ROUNDS - 1) * LEN);
	T_OK(coop_free_mem(buf));
	return 0;
}

static const char *const protos[] = { "rget", "rput", "coop", "rtr",
				      "auto" };

START_TEST(test_heap_realloc)
{
	char var[32];
	const char *env[] = { var, NULL };

	snprintf(var, sizeof(var), "COOP_RNDV=%s", protos[_i]);
	ck_assert_int_eq(run_ranks(2, env, realloc_rank, NULL, 60, NULL), 0);
}
END_TEST

/* A child shares the blocks; freeing them there leaves the parent's. */
static void child_frees(uint8_t *buf)
{
	pid_t pid = fork();
	int status;

	T_ASSERT(pid >= 0, "fork");
	if (pid == 0) {
		buf[0] = 0xa5;
		coop_free_mem(buf);
		(void)release_and_realloc(NULL);
		_exit(0);
	}
	T_ASSERT(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		 WEXITSTATUS(status) == 0, "child");
	T_ASSERT(buf[0] == 0xa5, "the child's store is not seen: %#x",
		 buf[0]);
}

static int fork_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	void *p;

	(void)size;
	(void)arg;
	T_OK(coop_alloc_mem(LEN, &p));
	one_round(ctx, rank, p, 1);
	if (rank == 0)
		child_frees(p);
	one_round(ctx, rank, p, 2);
	assert_windows(window_bytes(ctx, rank), 2ull * LEN);
	T_OK(coop_free_mem(p));
	return 0;
}

START_TEST(test_heap_fork)
{
	const char *env[] = { "COOP_RNDV=rget", NULL };

	ck_assert_int_eq(run_ranks(2, env, fork_rank, NULL, 60, NULL), 0);
}
END_TEST

TCase *tc_heap(void)
{
	TCase *tc = tcase_create("heap");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_heap_calls);
	tcase_add_loop_test(tc, test_heap_realloc, 0,
			    (int)(sizeof(protos) / sizeof(protos[0])));
	tcase_add_test(tc, test_heap_fork);
	return tc;
}
