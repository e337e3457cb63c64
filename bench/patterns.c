/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * patterns - MPI collective patterns on point-to-point calls, built the
 * way MPI libraries build them, because the auto protocol decides from
 * which side blocks ([Chakraborty18] Table II: Isend+Recv -> RGET,
 * Send+Irecv -> RPUT, Send+Recv and Isend+Irecv -> COOP):
 *   scatter  root isends a distinct block to every other rank, waitall;
 *            the others coop_recv it (Isend+Recv; MVAPICH's direct
 *            scatter, [Chakraborty18]'s one-to-all).
 *   gather   the others coop_send a block; root irecvs from all, waitall
 *            (Send+Irecv; [Chakraborty18]'s all-to-one).
 *   reduce   sum of a vector of doubles at root, Rabenseifner's way (as
 *            MPICH's reduce_scatter_gather for long vectors):
 *            reduce-scatter by recursive halving, each step an isend +
 *            irecv + waitall with the partner (Isend+Irecv), then a
 *            binomial gather of the pieces with coop_send/coop_recv
 *            (Send+Recv).  Power-of-two rank counts only.
 *   scripts/cooprun -n N bench/patterns -p scatter|gather|reduce [-i iters] [sizes...]
 * Root is rank 0.  Size: scatter and gather, the block of one rank;
 * reduce, the whole vector (as osu_reduce), a multiple of 8 bytes.
 * The root's own block is not copied (MPI_IN_PLACE): only messages count.
 *
 * Output: '#' header lines, then per size:
 *   size us rget rput coop rtr dma stripe bounce c0 .. c(N-1)
 * us: median over iterations of the slowest rank's time for one operation
 * (every iteration starts at a barrier of all ranks); rget .. bounce:
 * messages per operation that took the protocol (counted at receivers);
 * cR: bytes rank R's CPU copied per operation (coop_get_stats), in units
 * of size.  The result is checked once per size (warm-up iteration).
 */
#include <unistd.h>

#include "common.h"

#define ROOT 0
#define TAG_BLOCK 20
#define TAG_HALVE 21
#define TAG_PIECE 22
#define MAX_ITERS 4096
#define MAX_RANKS 1024
#define MAX_STEPS 16

static const size_t def_sizes[] = { 262144, 1048576, 4194304 };

/* One rank's view of a measurement. */
struct job {
	coop_context_t *ctx;
	int rank, nranks;
	size_t size;
	char *all;	/* the root's nranks blocks (scatter, gather) */
	char *mine;	/* this rank's block; reduce: its input vector */
	double *work;	/* reduce: the vector being reduced */
	double *tmp;	/* reduce: the partner's half of a step */
};

typedef void (*op_fn)(struct job *j);

/* ------------------------------------------------------------ patterns */

/*
 * The linear one-to-all (to_root 0) and all-to-one (to_root 1) patterns:
 * the root posts a nonblocking operation per other rank on its block and
 * waits for all; every other rank makes the matching blocking call.
 */
static void linear(struct job *j, int to_root)
{
	coop_request_t *req[MAX_RANKS];
	int r, n = 0;

	if (j->rank != ROOT) {
		if (to_root)
			CHECK(coop_send(j->ctx, j->mine, j->size, ROOT,
					TAG_BLOCK, BENCH_COMM, 0));
		else
			CHECK(coop_recv(j->ctx, j->mine, j->size, ROOT,
					TAG_BLOCK, BENCH_COMM, 0, NULL));
		return;
	}
	for (r = 0; r < j->nranks; r++) {
		char *block = j->all + (size_t)r * j->size;

		if (r == ROOT)
			continue;
		if (to_root)
			CHECK(coop_irecv(j->ctx, block, j->size, r, TAG_BLOCK,
					 BENCH_COMM, 0, &req[n++]));
		else
			CHECK(coop_isend(j->ctx, block, j->size, r, TAG_BLOCK,
					 BENCH_COMM, 0, &req[n++]));
	}
	CHECK(coop_waitall(n, req, COOP_STATUSES_IGNORE));
}

static void scatter(struct job *j)
{
	linear(j, 0);
}

static void gather(struct job *j)
{
	linear(j, 1);
}

/*
 * One reduce-scatter step: exchange halves of [*lo, *hi) with the
 * partner rank ^ mask (the lower rank keeps the lower half), add the
 * partner's copy of the kept half into ours.  Both partners hold the
 * same range here, so they agree on the split.
 */
static void halve(struct job *j, int mask, size_t *lo, size_t *hi)
{
	size_t mid = *lo + (*hi - *lo) / 2, i;
	int peer = j->rank ^ mask, low = !(j->rank & mask);
	size_t klo = low ? *lo : mid, khi = low ? mid : *hi;
	size_t slo = low ? mid : *lo, shi = low ? *hi : mid;
	coop_request_t *req[2];

	CHECK(coop_irecv(j->ctx, j->tmp, (khi - klo) * sizeof(double), peer,
			 TAG_HALVE, BENCH_COMM, 0, &req[0]));
	CHECK(coop_isend(j->ctx, j->work + slo, (shi - slo) * sizeof(double),
			 peer, TAG_HALVE, BENCH_COMM, 0, &req[1]));
	CHECK(coop_waitall(2, req, COOP_STATUSES_IGNORE));
	for (i = klo; i < khi; i++)
		j->work[i] += j->tmp[i - klo];
	*lo = klo;
	*hi = khi;
}

/*
 * Reduce to ROOT (0): recursive halving leaves every rank the sum of one
 * piece; the binomial gather undoes the steps in reverse, so at step k a
 * rank merges its partner's part of the range it held before step k.
 */
static void reduce(struct job *j)
{
	size_t n = j->size / sizeof(double), lo = 0, hi = n;
	size_t L[MAX_STEPS], H[MAX_STEPS];
	int k = 0, mask;

	memcpy(j->work, j->mine, j->size);	/* MPI_Reduce's sendbuf stays */
	for (mask = 1; mask < j->nranks; mask <<= 1, k++) {
		L[k] = lo;
		H[k] = hi;
		halve(j, mask, &lo, &hi);
	}
	for (mask = j->nranks >> 1; mask; mask >>= 1) {
		int peer = j->rank ^ mask;
		size_t plo, phi;

		k--;
		if (j->rank & mask) {
			CHECK(coop_send(j->ctx, j->work + lo,
					(hi - lo) * sizeof(double), peer,
					TAG_PIECE, BENCH_COMM, 0));
			return;
		}
		plo = lo == L[k] ? hi : L[k];
		phi = lo == L[k] ? H[k] : lo;
		CHECK(coop_recv(j->ctx, j->work + plo,
				(phi - plo) * sizeof(double), peer, TAG_PIECE,
				BENCH_COMM, 0, NULL));
		lo = L[k];
		hi = H[k];
	}
}

/* ------------------------------------------------------------ data */

/* Element i of rank r's input vector: integers, so sums are exact. */
static double elem(int r, size_t i)
{
	return (double)(r + (int)(i % 13));
}

/* Input: block r of the root (scatter) / every block (gather) holds r+1. */
static void fill(struct job *j, op_fn op)
{
	size_t i, n = j->size / sizeof(double);
	int r;

	if (op == reduce) {
		for (i = 0; i < n; i++)
			((double *)j->mine)[i] = elem(j->rank, i);
		return;
	}
	for (r = 0; r < j->nranks; r++)
		memset(j->all + (size_t)r * j->size, op == scatter ? r + 1 : 0,
		       j->size);
	memset(j->mine, op == scatter ? 0 : j->rank + 1, j->size);
}

static int bytes_are(const char *p, size_t len, int v)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (char)v)
			return 0;
	return 1;
}

/* 1 if this rank holds what the operation should have left it. */
static int check(struct job *j, op_fn op)
{
	size_t i, n = j->size / sizeof(double);
	int r, p = j->nranks, ok = 1;

	if (op == scatter)
		return j->rank == ROOT || bytes_are(j->mine, j->size, j->rank + 1);
	if (j->rank != ROOT)
		return 1;
	if (op == gather) {
		for (r = 0; r < p; r++)
			if (r != ROOT)
				ok &= bytes_are(j->all + (size_t)r * j->size,
						j->size, r + 1);
		return ok;
	}
	for (i = 0; i < n; i++)
		if (j->work[i] != p * (p - 1) / 2 + p * elem(0, i))
			return 0;
	return 1;
}

/* ------------------------------------------------------------ measuring */

/*
 * warm + iters operations, each after a barrier; t[i]: this rank's time
 * of timed operation i.  Statistics cover the timed operations only.
 */
static void measure(struct job *j, op_fn op, int warm, int iters, double *t,
		    coop_stats_t *st)
{
	int i;

	fill(j, op);
	for (i = 0; i < warm + iters; i++) {
		double t0;

		if (i == warm)
			CHECK(coop_reset_stats(j->ctx));
		barrier_all(j->ctx, j->rank, j->nranks);
		t0 = now_us();
		op(j);
		if (i >= warm)
			t[i - warm] = now_us() - t0;
		if (i == 0 && !check(j, op)) {
			fprintf(stderr, "patterns: rank %d: wrong result at size %zu\n",
				j->rank, j->size);
			exit(1);
		}
	}
	CHECK(coop_get_stats(j->ctx, st));
}

/* Rank 0: the line of one size from every rank's times and statistics. */
static void report(const struct job *j, int iters, const double *t_all,
		   const coop_stats_t *st)
{
	double slowest[MAX_ITERS];
	int i, r;

	for (i = 0; i < iters; i++) {
		slowest[i] = 0;
		for (r = 0; r < j->nranks; r++)
			if (t_all[r * iters + i] > slowest[i])
				slowest[i] = t_all[r * iters + i];
	}
	printf("%zu %.1f", j->size, median(slowest, iters));
	print_rndv_counts(st, j->nranks, iters);
	for (r = 0; r < j->nranks; r++)
		printf(" %.2f", (double)st[r].copy_bytes / iters / j->size);
	printf("\n");
	fflush(stdout);
}

static void run_size(struct job *j, op_fn op, int iters)
{
	double t[MAX_ITERS], *t_all = NULL;
	coop_stats_t st, *st_all = NULL;
	int p = j->nranks;

	j->all = bench_alloc((size_t)p * j->size);
	j->mine = bench_alloc(j->size);
	j->work = bench_alloc(j->size);
	j->tmp = bench_alloc(j->size / 2 + sizeof(double));
	measure(j, op, 2, iters, t, &st);
	if (j->rank == 0) {
		t_all = calloc((size_t)p * iters, sizeof(*t_all));
		st_all = calloc((size_t)p, sizeof(*st_all));
		if (!t_all || !st_all)
			die("calloc", COOP_ERR_NOMEM);
	}
	gather_to_0(j->ctx, j->rank, p, t, t_all, iters * sizeof(*t));
	gather_to_0(j->ctx, j->rank, p, &st, st_all, sizeof(st));
	if (j->rank == 0)
		report(j, iters, t_all, st_all);
	free(t_all);
	free(st_all);
	free(j->all);
	free(j->mine);
	free(j->work);
	free(j->tmp);
}

/* ------------------------------------------------------------ main */

static op_fn pattern(const char *name)
{
	if (!strcmp(name, "scatter"))
		return scatter;
	if (!strcmp(name, "gather"))
		return gather;
	if (!strcmp(name, "reduce"))
		return reduce;
	return NULL;
}

static int usage(void)
{
	fprintf(stderr, "usage: patterns -p scatter|gather|reduce [-i iters] [sizes...]\n");
	return 2;
}

/* The sizes the pattern can take (reduce: 8-byte multiples, >= a double per rank). */
static int sizes_ok(op_fn op, const size_t *sizes, int n, int nranks)
{
	int s;

	for (s = 0; s < n; s++)
		if (!sizes[s] || (op == reduce && (sizes[s] % sizeof(double) ||
				  sizes[s] < nranks * sizeof(double))))
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	struct job j = { 0 };
	size_t sizes[MAX_SIZES];
	const char *name = "scatter";
	op_fn op;
	int opt, iters = 0, n, s;

	while ((opt = getopt(argc, argv, "p:i:")) != -1) {
		if (opt == 'p')
			name = optarg;
		else if (opt == 'i')
			iters = atoi(optarg);
		else
			return usage();
	}
	op = pattern(name);
	if (!op || iters < 0 || iters > MAX_ITERS)
		return usage();
	n = parse_sizes(argc, argv, optind, sizes, def_sizes,
			(int)(sizeof(def_sizes) / sizeof(def_sizes[0])));
	j.ctx = bench_init(&j.rank, &j.nranks);
	if (j.nranks < 2 || j.nranks > MAX_RANKS ||
	    (op == reduce && (j.nranks & (j.nranks - 1)))) {
		fprintf(stderr, "patterns: %s needs 2..1024 ranks%s\n", name,
			op == reduce ? ", a power of two" : "");
		return 2;
	}
	if (!sizes_ok(op, sizes, n, j.nranks)) {
		fprintf(stderr, "patterns: bad size (reduce: multiples of 8 bytes, >= 8 per rank)\n");
		return 2;
	}
	if (j.rank == 0) {
		printf("# pattern=%s rndv=%s ranks=%d provider=%s root=%d\n",
		       name, bench_rndv(), j.nranks,
		       coop_provider_name(j.ctx), ROOT);
		printf("# size us " RNDV_COLUMNS " copies_r0..r%d\n",
		       j.nranks - 1);
	}
	for (s = 0; s < n; s++) {
		j.size = sizes[s];
		/* fewer as the operation grows, so each size takes ~ as long */
		run_size(&j, op, iters ? iters :
			 j.size <= 262144 ? 400 : j.size <= 1048576 ? 150 : 40);
	}
	barrier_all(j.ctx, j.rank, j.nranks);
	CHECK(coop_finalize(j.ctx));
	return 0;
}
