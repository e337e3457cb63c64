/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* common.h - shared bits of the libcoopmpi benchmark programs. */
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

/* Barrier of all ranks: everybody reports to rank 0, which releases. */
static inline void barrier_all(coop_context_t *ctx, int rank, int nranks)
{
	int i;

	if (rank == 0) {
		for (i = 1; i < nranks; i++)
			CHECK(coop_recv(ctx, NULL, 0, COOP_ANY_SOURCE, 9,
					SYNC_COMM, 0, NULL));
		for (i = 1; i < nranks; i++)
			CHECK(coop_send(ctx, NULL, 0, i, 10, SYNC_COMM, 0));
	} else {
		CHECK(coop_send(ctx, NULL, 0, 0, 9, SYNC_COMM, 0));
		CHECK(coop_recv(ctx, NULL, 0, 0, 10, SYNC_COMM, 0, NULL));
	}
}

/*
 * Rank 0 collects len bytes from every rank into all (rank r's at
 * r * len, its own included); the other ranks only send (all unused).
 * On SYNC_COMM, so that it never matches measured traffic.
 */
static inline void gather_to_0(coop_context_t *ctx, int rank, int nranks,
			       const void *mine, void *all, size_t len)
{
	int r;

	if (rank) {
		CHECK(coop_send(ctx, mine, len, 0, 11, SYNC_COMM, 0));
		return;
	}
	memcpy(all, mine, len);
	for (r = 1; r < nranks; r++)
		CHECK(coop_recv(ctx, (char *)all + (size_t)r * len, len, r, 11,
				SYNC_COMM, 0, NULL));
}

/* Rank 0's len bytes at buf to every rank (on SYNC_COMM, as
 * gather_to_0). */
static inline void bcast_from_0(coop_context_t *ctx, int rank, int nranks,
				void *buf, size_t len)
{
	int r;

	if (rank) {
		CHECK(coop_recv(ctx, buf, len, 0, 12, SYNC_COMM, 0, NULL));
		return;
	}
	for (r = 1; r < nranks; r++)
		CHECK(coop_send(ctx, buf, len, r, 12, SYNC_COMM, 0));
}

/* The rendezvous protocol the job asked for (COOP_RNDV), for headers. */
static inline const char *bench_rndv(void)
{
	const char *s = getenv("COOP_RNDV");

	return s && *s ? s : "auto";
}

/* Compute for us microseconds: a loop that makes no library call. */
static inline void busy_us(double us)
{
	double t0 = now_us();

	while (now_us() - t0 < us)
		;
}

/*
 * The rendezvous protocols, in the order the multi-rank programs print
 * their message counts (eager ones are left out: barriers use them).
 */
#define RNDV_COLUMNS "rget rput coop rtr dma stripe bounce"
static const int rndv_protos[] = {
	COOP_PROTOCOL_RGET, COOP_PROTOCOL_RPUT, COOP_PROTOCOL_COOP,
	COOP_PROTOCOL_RTR, COOP_PROTOCOL_DMA, COOP_PROTOCOL_STRIPE,
	COOP_PROTOCOL_BOUNCE,
};

/*
 * Print " n" per protocol of RNDV_COLUMNS: the messages all n ranks
 * received with it (each message counted once, at its receiver) / per.
 */
static inline void print_rndv_counts(const coop_stats_t *st, int n,
				     double per)
{
	size_t k;
	int r;

	for (k = 0; k < sizeof(rndv_protos) / sizeof(rndv_protos[0]); k++) {
		double m = 0;

		for (r = 0; r < n; r++)
			m += (double)st[r].received[rndv_protos[k]];
		printf(" %.2f", m / per);
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
 *   [-i iterations] [-r repeats] [-w window] [-H] [sizes...]
 * -H: buffers from coop_alloc_mem (the shared heap: peers copy them
 * through windows, also without the driver).
 * Set reps and win to the program's defaults before bench_parse_args();
 * win == 0 means the program has no window and refuses -w.
 */
struct bench_args {
	int iters;		/* 0: by size, see bench_iters() */
	int reps;
	int win;
	int heap;		/* -H */
	int nsizes;
	size_t sizes[MAX_SIZES];
};

/* Returns 0, or 2 (the exit status) on an unknown option. */
static inline int bench_parse_args(int argc, char **argv,
				   struct bench_args *a, const size_t *def,
				   int ndef)
{
	int opt, reps = a->reps, win = a->win;

	while ((opt = getopt(argc, argv, win ? "i:r:w:H" : "i:r:H")) != -1) {
		if (opt == 'H')
			a->heap = 1;
		else if (opt == 'i')
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

/* A buffer as -H says, filled (first touch here, not in the timing). */
static inline char *bench_buffer(const struct bench_args *a, size_t n)
{
	void *p;

	if (!a->heap)
		return bench_alloc(n);
	CHECK(coop_alloc_mem(n, &p));
	memset(p, 0xa5, n);
	return p;
}

static inline void bench_buffer_free(const struct bench_args *a, char *p)
{
	if (a->heap)
		CHECK(coop_free_mem(p));
	else
		free(p);
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

/*
 * A two-rank benchmark: run() measures one repeat of size bytes (iters
 * timed iterations after its own warm-up) and returns its value; the
 * driver prints "size value" with fmt, the median over the repeats.
 */
struct bench_pair {
	const char *name;
	const char *fmt;		/* e.g. "%zu %.1f\n" */
	int iters[3];			/* bench_iters(): small, medium, large */
	int two_buffers;		/* run() needs rbuf too */
	double (*run)(coop_context_t *ctx, int rank, char *sbuf, char *rbuf,
		      size_t size, int iters, int win);
};

static inline int bench_pair_main(int argc, char **argv,
				  struct bench_args a, const size_t *def,
				  int ndef, const struct bench_pair *b)
{
	coop_context_t *ctx;
	int rank, size, s, r;
	double v[64];

	if (bench_parse_args(argc, argv, &a, def, ndef))
		return 2;
	ctx = bench_init(&rank, &size);
	if (size != 2) {
		fprintf(stderr, "%s: run with exactly 2 ranks\n", b->name);
		return 2;
	}
	for (s = 0; s < a.nsizes; s++) {
		size_t n = a.sizes[s];
		char *sbuf = bench_buffer(&a, n);
		char *rbuf = b->two_buffers ? bench_buffer(&a, n) : NULL;
		int it = bench_iters(&a, n, b->iters[0], b->iters[1],
				     b->iters[2]);

		for (r = 0; r < a.reps; r++)
			v[r] = b->run(ctx, rank, sbuf, rbuf, n, it, a.win);
		if (rank == 0)
			printf(b->fmt, n, median(v, a.reps));
		fflush(stdout);
		bench_buffer_free(&a, sbuf);
		if (rbuf)
			bench_buffer_free(&a, rbuf);
	}
	barrier2(ctx, rank);
	CHECK(coop_finalize(ctx));
	return 0;
}

#endif
