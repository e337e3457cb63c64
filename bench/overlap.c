/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * overlap - how much of a nonblocking transfer each side can spend
 * computing ([Chakraborty18] Fig. 2, 5, 6), OSU-style overlap
 * measurement.
 *   scripts/cooprun -n 2 bench/overlap [-i iters] [-r repeats] [sizes...]
 *
 * Rank 0 sends, rank 1 receives.  Each side is measured in turn while the
 * other one has already posted its matching operation and waits in
 * coop_wait() (it is ready and progresses):
 *   t_pure   post (coop_isend / coop_irecv) + coop_wait, nothing else;
 *   t_total  post, compute (a busy loop that makes no library call) for
 *            t_pure, then coop_wait; t_cpu is the compute time.
 *   overlap = 100 * (1 - (t_total - t_cpu) / t_pure), clamped to 0..100:
 *            the share of the transfer the side could spend computing; the
 *            rest it spent copying or polling.
 * Prints "size send_overlap_% recv_overlap_% send_pure_us recv_pure_us"
 * per size: means over iters transfers, medians over repeats.
 */
#include <unistd.h>

#include "common.h"

static const size_t def_sizes[] = { 16384, 65536, 262144, 1048576, 4194304,
				    16777216 };

/*
 * One transfer.  The side that is not measured posts, syncs, waits and
 * returns 0; the measured side syncs, posts, computes compute_us, waits
 * and returns the time from post to completion (adds the compute time to
 * *cpu_us).
 */
static double xfer(coop_context_t *ctx, int rank, int measured, char *buf,
		   size_t size, double compute_us, double *cpu_us)
{
	coop_request_t *req;
	double t0, c0;

	if (rank != measured) {
		if (rank == 0)
			CHECK(coop_isend(ctx, buf, size, 1, 5, BENCH_COMM, 0, &req));
		else
			CHECK(coop_irecv(ctx, buf, size, 0, 5, BENCH_COMM, 0, &req));
		barrier2(ctx, rank);
		CHECK(coop_wait(&req, COOP_STATUS_IGNORE));
		return 0;
	}
	barrier2(ctx, rank);
	t0 = now_us();
	if (rank == 0)
		CHECK(coop_isend(ctx, buf, size, 1, 5, BENCH_COMM, 0, &req));
	else
		CHECK(coop_irecv(ctx, buf, size, 0, 5, BENCH_COMM, 0, &req));
	if (compute_us > 0) {
		c0 = now_us();
		busy_us(compute_us);
		*cpu_us += now_us() - c0;
	}
	CHECK(coop_wait(&req, COOP_STATUS_IGNORE));
	return now_us() - t0;
}

/* Mean time per transfer of iters transfers (after warm ones). */
static double series(coop_context_t *ctx, int rank, int measured, char *buf,
		     size_t size, int iters, int warm, double compute_us,
		     double *cpu_mean)
{
	double sum = 0, cpu = 0, dummy = 0;
	int i;

	for (i = 0; i < warm; i++)
		xfer(ctx, rank, measured, buf, size, compute_us, &dummy);
	for (i = 0; i < iters; i++)
		sum += xfer(ctx, rank, measured, buf, size, compute_us, &cpu);
	if (cpu_mean)
		*cpu_mean = cpu / iters;
	return sum / iters;
}

/* Rank 1 passes *v to rank 0 when it was measured there (tag: which). */
static void share_measured(coop_context_t *ctx, int rank, int measured,
			   double *v, int tag)
{
	if (measured != 1)
		return;
	if (rank == 1)
		CHECK(coop_send(ctx, v, sizeof(*v), 0, tag, SYNC_COMM, 0));
	else
		CHECK(coop_recv(ctx, v, sizeof(*v), 1, tag, SYNC_COMM, 0,
				NULL));
}

/*
 * Overlap of side `measured` (0 sender, 1 receiver), computed on that
 * rank and sent to rank 0 (which prints).  *pure_out: t_pure.
 */
static double side(coop_context_t *ctx, int rank, int measured, char *buf,
		   size_t size, int iters, int reps, double *pure_out)
{
	double pure[64], ovl[64], res[2] = { 0, 0 };
	int r;

	for (r = 0; r < reps; r++)
		pure[r] = series(ctx, rank, measured, buf, size, iters,
				 iters / 10 + 1, 0, NULL);
	/* both ranks must agree on the compute time: the measured rank's */
	if (rank == measured)
		res[1] = median(pure, reps);
	share_measured(ctx, rank, measured, &res[1], 6);
	for (r = 0; r < reps; r++) {
		double cpu = 0, total;

		total = series(ctx, rank, measured, buf, size, iters, 1,
			       res[1], &cpu);
		if (rank != measured || res[1] <= 0) {
			ovl[r] = 0;
			continue;
		}
		ovl[r] = 100.0 * (1.0 - (total - cpu) / res[1]);
		if (ovl[r] < 0)
			ovl[r] = 0;
		if (ovl[r] > 100)
			ovl[r] = 100;
	}
	if (rank == measured)
		res[0] = median(ovl, reps);
	share_measured(ctx, rank, measured, &res[0], 7);
	*pure_out = res[1];
	return res[0];
}

int main(int argc, char **argv)
{
	coop_context_t *ctx;
	struct bench_args a = { .reps = 5, .win = 0 };
	int rank, size, s;

	if (bench_parse_args(argc, argv, &a, def_sizes,
			     (int)(sizeof(def_sizes) / sizeof(def_sizes[0]))))
		return 2;
	ctx = bench_init(&rank, &size);
	if (size != 2) {
		fprintf(stderr, "overlap: run with exactly 2 ranks\n");
		return 2;
	}
	for (s = 0; s < a.nsizes; s++) {
		char *buf = bench_alloc(a.sizes[s]);
		int it = bench_iters(&a, a.sizes[s], 200, 50, 10);
		double ps, pr, os, orv;

		os = side(ctx, rank, 0, buf, a.sizes[s], it, a.reps, &ps);
		orv = side(ctx, rank, 1, buf, a.sizes[s], it, a.reps, &pr);
		if (rank == 0)
			printf("%zu %.1f %.1f %.3f %.3f\n", a.sizes[s], os, orv,
			       ps, pr);
		fflush(stdout);
		free(buf);
	}
	barrier2(ctx, rank);
	CHECK(coop_finalize(ctx));
	return 0;
}
