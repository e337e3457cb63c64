/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* common.h - shared bits of the OSU-style benchmarks (pingpong, bw). */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <unistd.h>

#include "coopmpi.h"
#include "osu_util.h"

#define BENCH_COMM 7		/* context id of the benchmark traffic */
#define SYNC_COMM 8		/* context id of barriers */
#define MAX_SIZES OU_MAX_SIZES

/* The libcoopmpi programs' names for the helpers of osu_util.h. */
static inline double now_us(void)
{
	return ou_now_us();
}

static inline void die(const char *what, int rc)
{
	fprintf(stderr, "bench: %s: %s\n", what, coop_strerror(rc));
	exit(1);
}

#define CHECK(call) do { int rc_ = (call); if (rc_) die(#call, rc_); } while (0)

/* Barrier of ranks 0 and 1. */
static inline void barrier2(coop_context_t *ctx, int rank)
{
	int peer = 1 - rank;

	if (rank == 0) {
		CHECK(coop_send(ctx, NULL, 0, peer, 0, SYNC_COMM, 0));
		CHECK(coop_recv(ctx, NULL, 0, peer, 0, SYNC_COMM, 0, NULL));
	} else {
		CHECK(coop_recv(ctx, NULL, 0, peer, 0, SYNC_COMM, 0, NULL));
		CHECK(coop_send(ctx, NULL, 0, peer, 0, SYNC_COMM, 0));
	}
}

static inline double median(double *v, int n)
{
	return ou_median(v, n);
}

static inline int parse_sizes(int argc, char **argv, int first,
			      size_t *sizes, const size_t *def, int ndef)
{
	return ou_parse_sizes(argc, argv, first, sizes, def, ndef);
}

static inline void *bench_alloc(size_t n)
{
	return ou_alloc(n);
}

#define BENCH_MAX_WINDOW 256

/*
 * The command line every OSU-style program takes:
 *   [-i iterations] [-r repeats] [-w window] [sizes...]
 * Set reps and win to the program's defaults before bench_parse_args();
 * win == 0 means the program has no window and refuses -w.
 */
struct bench_args {
	int iters;		/* 0: by size, see bench_iters() */
	int reps;
	int win;
	int nsizes;
	size_t sizes[MAX_SIZES];
};

/* Returns 0, or 2 (the exit status) on an unknown option. */
static inline int bench_parse_args(int argc, char **argv,
				   struct bench_args *a, const size_t *def,
				   int ndef)
{
	int opt, reps = a->reps, win = a->win;

	while ((opt = getopt(argc, argv, win ? "i:r:w:" : "i:r:")) != -1) {
		if (opt == 'i')
			a->iters = atoi(optarg);
		else if (opt == 'r')
			a->reps = atoi(optarg);
		else if (opt == 'w')
			a->win = atoi(optarg);
		else
			return 2;
	}
	if (a->reps < 1 || a->reps > 64)
		a->reps = reps;
	if (win && (a->win < 1 || a->win > BENCH_MAX_WINDOW))
		a->win = win;
	a->nsizes = parse_sizes(argc, argv, optind, a->sizes, def, ndef);
	return 0;
}

/* Iterations per repeat: -i, or fewer as messages grow (as OSU does). */
static inline int bench_iters(const struct bench_args *a, size_t size,
			      int small, int medium, int large)
{
	if (a->iters)
		return a->iters;
	return size <= 65536 ? small : size <= 1048576 ? medium : large;
}

/* A connected context from scripts/cooprun's environment. */
static inline coop_context_t *bench_init(int *rank, int *size)
{
	coop_context_t *ctx;

	CHECK(coop_init_from_env(&ctx));
	CHECK(coop_rank(ctx, rank));
	CHECK(coop_size(ctx, size));
	return ctx;
}

#endif
