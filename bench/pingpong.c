/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pingpong - osu_latency-style one-way latency between ranks 0 and 1.
 *   scripts/cooprun -n 2 bench/pingpong [-i iters] [-r repeats] [sizes...]
 * Prints "size latency_us" per size: the median over repeats of
 * (round-trip time / 2), warm-up iterations excluded.
 */
#include <unistd.h>

#include "common.h"

static const size_t def_sizes[] = { 0, 1, 8, 64, 512, 4096, 16384, 65536,
				    262144, 1048576, 4194304 };

static double one_run(coop_context_t *ctx, int rank, char *buf, size_t size,
		      int iters, int warm)
{
	int peer = 1 - rank, i;
	double t0 = 0;

	barrier2(ctx, rank);
	for (i = 0; i < warm + iters; i++) {
		if (i == warm)
			t0 = now_us();
		if (rank == 0) {
			CHECK(coop_send(ctx, buf, size, peer, 1, BENCH_COMM, 0));
			CHECK(coop_recv(ctx, buf, size, peer, 1, BENCH_COMM, 0,
					NULL));
		} else {
			CHECK(coop_recv(ctx, buf, size, peer, 1, BENCH_COMM, 0,
					NULL));
			CHECK(coop_send(ctx, buf, size, peer, 1, BENCH_COMM, 0));
		}
	}
	return (now_us() - t0) / (2.0 * iters);
}

int main(int argc, char **argv)
{
	coop_context_t *ctx;
	size_t sizes[MAX_SIZES];
	int rank, size, n, s, r, opt, iters = 0, reps = 11;
	double v[64];

	while ((opt = getopt(argc, argv, "i:r:")) != -1) {
		if (opt == 'i')
			iters = atoi(optarg);
		else if (opt == 'r')
			reps = atoi(optarg);
		else
			return 2;
	}
	if (reps < 1 || reps > 64)
		reps = 11;
	n = parse_sizes(argc, argv, optind, sizes, def_sizes,
			(int)(sizeof(def_sizes) / sizeof(def_sizes[0])));
	CHECK(coop_init_from_env(&ctx));
	CHECK(coop_rank(ctx, &rank));
	CHECK(coop_size(ctx, &size));
	if (size != 2) {
		fprintf(stderr, "pingpong: run with exactly 2 ranks\n");
		return 2;
	}
	for (s = 0; s < n; s++) {
		char *buf = bench_alloc(sizes[s]);
		int it = iters ? iters : sizes[s] <= 65536 ? 10000 :
				 sizes[s] <= 1048576 ? 500 : 50;

		for (r = 0; r < reps; r++)
			v[r] = one_run(ctx, rank, buf, sizes[s], it, it / 10 + 1);
		if (rank == 0)
			printf("%zu %.3f\n", sizes[s], median(v, reps));
		fflush(stdout);
		free(buf);
	}
	barrier2(ctx, rank);
	CHECK(coop_finalize(ctx));
	return 0;
}
