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

static double one_run(coop_context_t *ctx, int rank, char *buf, char *unused,
		      size_t size, int iters, int win)
{
	int peer = 1 - rank, i, warm = iters / 10 + 1;
	double t0 = 0;

	(void)unused;
	(void)win;
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
	static const struct bench_pair b = {
		"pingpong", "%zu %.3f\n", { 10000, 500, 50 }, 0, one_run
	};
	struct bench_args a = { .reps = 11, .win = 0 };

	return bench_pair_main(argc, argv, a, def_sizes,
			       (int)(sizeof(def_sizes) / sizeof(def_sizes[0])),
			       &b);
}
