/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_window.c - copies through windows (the driver's mapped regions) and
 * the registration cache that keeps them: for every rendezvous protocol,
 * four messages from and into the same addresses, the last two after
 * both ranks freed their buffers and got new memory there: every byte is
 * the new data; the same with one window kept for two buffers in turn.  On the driver with windows (kmod provider, max_windows > 0,
 * COOP_WINDOWS not 0) the copies must go through windows; elsewhere
 * (shm provider, COOP_WINDOWS=0, an HCA engine's pinned keys) none may.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "tests.h"

#define COMM 71
#define LEN ((1u << 20) + 123)	/* rendezvous, unaligned */
#define ROUNDS 4

/* Do the ranks' copies go through windows? */
static int windows_expected(void)
{
	const char *w = getenv("COOP_WINDOWS");

	if (w && !strcmp(w, "0"))
		return 0;
	return t_kmod_provider() && !t_engine_hca() &&
	       access("/sys/module/coopmpi/parameters/max_windows", R_OK) == 0;
}

/* Fresh memory at buf (MAP_FIXED): what was there is gone. */
static void remap(uint8_t *buf)
{
	T_ASSERT(munmap(buf, LEN) == 0, "munmap");
	T_ASSERT(mmap(buf, LEN, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == buf,
		 "mmap at the same address");
}

/*
 * ROUNDS messages, round r from and into buffer r % nbufs of each rank
 * (*arg: nbufs, 1 or 2), both ranks' buffers freed and mapped again
 * before the last two rounds.
 */
static int remap_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	int nbufs = *(const int *)arg, peer = !rank;
	uint8_t *bufs[2], *buf;
	uint64_t mine, theirs;
	coop_stats_t st;

	(void)size;
	for (int b = 0; b < nbufs; b++) {
		bufs[b] = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		T_ASSERT(bufs[b] != MAP_FAILED, "mmap");
	}
	for (uint32_t round = 1; round <= ROUNDS; round++) {
		buf = bufs[round % nbufs];
		if (round > ROUNDS - 2)
			remap(buf);
		if (rank == 0) {
			t_fill(buf, LEN, round);
			T_OK(coop_send(ctx, buf, LEN, peer, 1, COMM, 0));
		} else {
			memset(buf, 0, LEN);
			T_OK(coop_recv(ctx, buf, LEN, peer, 1, COMM, 0, NULL));
			T_ASSERT(t_check(buf, LEN, round) < 0,
				 "round %u: byte %ld differs", round,
				 t_check(buf, LEN, round));
		}
	}
	T_OK(coop_get_stats(ctx, &st));
	mine = st.window_bytes;
	T_OK(coop_send(ctx, &mine, sizeof(mine), peer, 2, COMM, 0));
	T_OK(coop_recv(ctx, &theirs, sizeof(theirs), peer, 2, COMM, 0, NULL));
	if (windows_expected())
		T_ASSERT(mine + theirs >= (uint64_t)ROUNDS * LEN,
			 "%llu + %llu bytes through windows, want >= %u",
			 (unsigned long long)mine,
			 (unsigned long long)theirs, ROUNDS * LEN);
	else
		T_ASSERT(mine == 0, "%llu bytes through windows without any",
			 (unsigned long long)mine);
	return 0;
}

static const char *const protos[] = { "rget", "rput", "coop", "rtr",
				      "auto" };
static const int one_buf = 1, two_bufs = 2;

START_TEST(test_window_remap)
{
	char var[32];
	const char *env[] = { var, NULL };

	snprintf(var, sizeof(var), "COOP_RNDV=%s", protos[_i]);
	ck_assert_int_eq(run_ranks(2, env, remap_rank, (void *)&one_buf, 60,
				   NULL), 0);
}
END_TEST

/*
 * Two buffers in turn: with one window kept, every message evicts the
 * other buffer's window and maps its own again; without windows
 * (COOP_WINDOWS=0) and without the registration cache (COOP_REG_CACHE=0)
 * the same messages arrive the same.
 */
static const char *const evict_env[] = { "COOP_WINDOWS=1",
	"COOP_REG_CACHE=1", "COOP_RNDV=coop", NULL };
static const char *const off_env[] = { "COOP_WINDOWS=0", "COOP_REG_CACHE=0",
	"COOP_RNDV=coop", NULL };
static const char *const *const two_buf_envs[] = { evict_env, off_env };

START_TEST(test_window_two_buffers)
{
	ck_assert_int_eq(run_ranks(2, two_buf_envs[_i], remap_rank,
				   (void *)&two_bufs, 60, NULL), 0);
}
END_TEST

TCase *tc_window(void)
{
	TCase *tc = tcase_create("window");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_window_remap, 0,
			    (int)(sizeof(protos) / sizeof(protos[0])));
	tcase_add_loop_test(tc, test_window_two_buffers, 0, 2);
	return tc;
}
