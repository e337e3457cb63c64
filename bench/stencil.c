/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stencil - 3-D 7-point halo exchange ([Chakraborty18] Section IV-C, Fig. 17)
 * on a NON-periodic px*py*pz process grid: boundary ranks have fewer
 * neighbours, so the ranks' copy loads differ, which is what COOP-load
 * (auto with Isend+Irecv) should even out.  Each iteration: irecv from
 * every neighbour, isend to every neighbour, waitall, then compute.
 *   scripts/cooprun -n N bench/stencil [-d PXxPYxPZ] [-m bytes] [-i iters] [-c compute_us]
 * Defaults: the grid N/q x q x 1 with q the largest divisor of N below
 * sqrt(N) (4 ranks: 4x1x1, 6: 3x2x1, 8: 4x2x1: never all-equal
 * neighbour counts), 1 MiB messages, 200 iterations (+ 10% warm-up),
 * no compute.
 *
 * Output (rank 0): a '#' line per rank: its neighbours, copies per
 * iteration (bytes its CPU copied / message size: a COOP-p2p message it
 * shared counts as its share), copy time and time per iteration; then
 * one line:
 *   N iter_us copies_max copies_min copies_ideal copy_us_max copy_us_min
 *     copy_us_ideal rget rput coop rtr dma stripe bounce
 * iter_us: the slowest rank's mean time per iteration; ideal: the mean
 * over ranks (what a perfect balance would give every rank, Fig. 17(b)
 * and (c)); rget .. bounce: messages per iteration by protocol.
 */
#include <stdio.h>
#include <unistd.h>

#include "common.h"

#define NDIR 6			/* -x +x -y +y -z +z */
#define MAX_RANKS 4096

struct grid {
	int dim[3];		/* px py pz */
	int at[3];		/* this rank's coordinates */
	int nbr[NDIR];		/* rank in each direction, -1 at a boundary */
	int nnbr;
};

/* What each rank tells rank 0 at the end (and its coop_stats_t). */
struct result {
	double iter_us;
	int nnbr;
	int at[3];
};

/* N/q x q x 1, q the largest divisor of n with q < n/q. */
static void default_dims(int n, int dim[3])
{
	int q, best = 1;

	for (q = 1; q * q < n; q++)
		if (n % q == 0)
			best = q;
	dim[0] = n / best;
	dim[1] = best;
	dim[2] = 1;
}

static void build_grid(struct grid *g, int rank)
{
	int d, axis, step, c[3];

	g->at[0] = rank % g->dim[0];
	g->at[1] = rank / g->dim[0] % g->dim[1];
	g->at[2] = rank / (g->dim[0] * g->dim[1]);
	g->nnbr = 0;
	for (d = 0; d < NDIR; d++) {
		axis = d / 2;
		step = d % 2 ? 1 : -1;
		memcpy(c, g->at, sizeof(c));
		c[axis] += step;
		g->nbr[d] = -1;
		if (c[axis] < 0 || c[axis] >= g->dim[axis])
			continue;	/* non-periodic: no wrap-around */
		g->nbr[d] = c[0] + g->dim[0] * (c[1] + g->dim[1] * c[2]);
		g->nnbr++;
	}
}

/*
 * One exchange.  A message is tagged with the direction it travels, so
 * what comes from the -x neighbour (travelling +x) is tag d ^ 1 for
 * d = -x.
 */
static void exchange(coop_context_t *ctx, const struct grid *g, char *sbuf,
		     char *rbuf, size_t size)
{
	coop_request_t *req[2 * NDIR];
	int d, n = 0;

	for (d = 0; d < NDIR; d++)
		if (g->nbr[d] >= 0)
			CHECK(coop_irecv(ctx, rbuf + d * size, size, g->nbr[d],
					 d ^ 1, BENCH_COMM, 0, &req[n++]));
	for (d = 0; d < NDIR; d++)
		if (g->nbr[d] >= 0)
			CHECK(coop_isend(ctx, sbuf + d * size, size, g->nbr[d],
					 d, BENCH_COMM, 0, &req[n++]));
	CHECK(coop_waitall(n, req, COOP_STATUSES_IGNORE));
}

/* This rank's result of warm + iters iterations (statistics: timed ones). */
static void run(coop_context_t *ctx, int rank, int nranks,
		const struct grid *g, size_t size, int iters, double compute,
		struct result *res, coop_stats_t *st)
{
	char *sbuf = bench_alloc(NDIR * size), *rbuf = bench_alloc(NDIR * size);
	int i, warm = iters / 10 + 1;
	double t0 = 0;

	for (i = 0; i < warm + iters; i++) {
		if (i == warm) {
			barrier_all(ctx, rank, nranks);
			CHECK(coop_reset_stats(ctx));
			t0 = now_us();
		}
		exchange(ctx, g, sbuf, rbuf, size);
		if (compute > 0)
			busy_us(compute);
	}
	res->iter_us = (now_us() - t0) / iters;
	CHECK(coop_get_stats(ctx, st));
	res->nnbr = g->nnbr;
	memcpy(res->at, g->at, sizeof(res->at));
	free(sbuf);
	free(rbuf);
}

/* max, min and mean of v[0..n) */
static void spread(const double *v, int n, double out[3])
{
	int r;

	out[0] = out[1] = v[0];
	out[2] = 0;
	for (r = 0; r < n; r++) {
		out[0] = v[r] > out[0] ? v[r] : out[0];
		out[1] = v[r] < out[1] ? v[r] : out[1];
		out[2] += v[r] / n;
	}
}

/* Rank 0: the per-rank lines and the summary line. */
static void report(const struct result *res, const coop_stats_t *st, int n,
		   size_t size, int iters)
{
	double cp[MAX_RANKS], cu[MAX_RANKS], c[3], u[3], slowest = 0;
	int r;

	for (r = 0; r < n; r++) {
		cp[r] = (double)st[r].copy_bytes / size / iters;
		cu[r] = st[r].copy_ns / 1e3 / iters;
		if (res[r].iter_us > slowest)
			slowest = res[r].iter_us;
		printf("# rank %d (%d,%d,%d): neighbours %d, copies/iter %.2f, copy us/iter %.1f, us/iter %.1f\n",
		       r, res[r].at[0], res[r].at[1], res[r].at[2],
		       res[r].nnbr, cp[r], cu[r], res[r].iter_us);
	}
	spread(cp, n, c);
	spread(cu, n, u);
	printf("# copies max/min %.2f, max/ideal %.2f; copy time max/min %.2f\n",
	       c[1] > 0 ? c[0] / c[1] : 0, c[2] > 0 ? c[0] / c[2] : 0,
	       u[1] > 0 ? u[0] / u[1] : 0);
	printf("%d %.1f %.3f %.3f %.3f %.1f %.1f %.1f", n, slowest, c[0], c[1],
	       c[2], u[0], u[1], u[2]);
	print_rndv_counts(st, n, iters);
	printf("\n");
}

static int parse_dims(const char *s, int dim[3])
{
	return sscanf(s, "%dx%dx%d", &dim[0], &dim[1], &dim[2]) == 3 &&
	       dim[0] > 0 && dim[1] > 0 && dim[2] > 0;
}

int main(int argc, char **argv)
{
	struct grid g = { .dim = { 0, 0, 0 } };
	struct result mine, *all = NULL;
	coop_stats_t st, *st_all = NULL;
	size_t size = 1048576;
	int opt, iters = 200, rank, nranks;
	double compute = 0;
	coop_context_t *ctx;

	while ((opt = getopt(argc, argv, "d:m:i:c:")) != -1) {
		if (opt == 'd' && !parse_dims(optarg, g.dim))
			opt = '?';
		else if (opt == 'm')
			size = ou_parse_size(optarg);
		else if (opt == 'i')
			iters = atoi(optarg);
		else if (opt == 'c')
			compute = atof(optarg);
		if (opt == '?' || opt == ':') {
			fprintf(stderr, "usage: stencil [-d PXxPYxPZ] [-m bytes] [-i iters] [-c compute_us]\n");
			return 2;
		}
	}
	ctx = bench_init(&rank, &nranks);
	if (!g.dim[0])
		default_dims(nranks, g.dim);
	if (g.dim[0] * g.dim[1] * g.dim[2] != nranks || nranks > MAX_RANKS ||
	    !size || iters < 1) {
		fprintf(stderr, "stencil: grid %dx%dx%d does not match %d ranks (or bad -m/-i)\n",
			g.dim[0], g.dim[1], g.dim[2], nranks);
		return 2;
	}
	build_grid(&g, rank);
	run(ctx, rank, nranks, &g, size, iters, compute, &mine, &st);
	if (rank == 0) {
		all = calloc((size_t)nranks, sizeof(*all));
		st_all = calloc((size_t)nranks, sizeof(*st_all));
		if (!all || !st_all)
			die("calloc", COOP_ERR_NOMEM);
	}
	gather_to_0(ctx, rank, nranks, &mine, all, sizeof(mine));
	gather_to_0(ctx, rank, nranks, &st, st_all, sizeof(st));
	if (rank == 0) {
		printf("# stencil grid=%dx%dx%d rndv=%s provider=%s size=%zu iters=%d compute_us=%.0f\n",
		       g.dim[0], g.dim[1], g.dim[2], bench_rndv(),
		       coop_provider_name(ctx), size, iters, compute);
		report(all, st_all, nranks, size, iters);
	}
	free(all);
	free(st_all);
	barrier_all(ctx, rank, nranks);
	CHECK(coop_finalize(ctx));
	return 0;
}
