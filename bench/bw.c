/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bw - osu_bw-style unidirectional bandwidth from rank 0 to rank 1: a
 * window of 64 nonblocking sends/receives, then a 4-byte ack.
 *   scripts/cooprun -n 2 bench/bw [-i iters] [-r repeats] [-w window] [sizes...]
 * Prints "size MB/s" per size (MB = 1e6 bytes): the median over repeats,
 * warm-up windows excluded.
 */
#include <unistd.h>

#include "common.h"


static const size_t def_sizes[] = { 8, 1024, 16384, 65536, 262144,
				    1048576, 4194304, 16777216 };

static void window(coop_context_t *ctx, int rank, char *buf, size_t size,
		   int win)
{
	coop_request_t *req[BENCH_MAX_WINDOW];
	int i, ack = 0;

	for (i = 0; i < win; i++) {
		if (rank == 0)
			CHECK(coop_isend(ctx, buf, size, 1, 2, BENCH_COMM, 0,
					 &req[i]));
		else
			CHECK(coop_irecv(ctx, buf, size, 0, 2, BENCH_COMM, 0,
					 &req[i]));
	}
	CHECK(coop_waitall(win, req, COOP_STATUSES_IGNORE));
	if (rank == 0)
		CHECK(coop_recv(ctx, &ack, sizeof(ack), 1, 3, BENCH_COMM, 0,
				NULL));
	else
		CHECK(coop_send(ctx, &ack, sizeof(ack), 0, 3, BENCH_COMM, 0));
}

static double one_run(coop_context_t *ctx, int rank, char *buf, char *unused,
		      size_t size, int iters, int win)
{
	double t0 = 0;
	int i, warm = 2;

	(void)unused;
	barrier2(ctx, rank);
	for (i = 0; i < warm + iters; i++) {
		if (i == warm)
			t0 = now_us();
		window(ctx, rank, buf, size, win);
	}
	return (double)size * win * iters / (now_us() - t0);	/* MB/s */
}

int main(int argc, char **argv)
{
	static const struct bench_pair b = {
		"bw", "%zu %.1f\n", { 100, 20, 4 }, 0, one_run
	};
	struct bench_args a = { .reps = 7, .win = 64 };

	return bench_pair_main(argc, argv, a, def_sizes,
			       (int)(sizeof(def_sizes) / sizeof(def_sizes[0])),
			       &b);
}
