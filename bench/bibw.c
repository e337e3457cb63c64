/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bibw - osu_bibw-style bidirectional bandwidth between ranks 0 and 1:
 * both post a window of 64 nonblocking receives and 64 nonblocking sends
 * at once, then wait for all of them.
 *   scripts/cooprun -n 2 bench/bibw [-i iters] [-r repeats] [-w window] [sizes...]
 * Prints "size MB/s" per size (MB = 1e6 bytes; bytes of both directions
 * counted): the median over repeats, warm-up windows excluded.
 */
#include <unistd.h>

#include "common.h"


static const size_t def_sizes[] = { 8, 1024, 16384, 65536, 262144,
				    1048576, 4194304, 16777216 };

static void window(coop_context_t *ctx, int rank, char *sbuf, char *rbuf,
		   size_t size, int win)
{
	coop_request_t *req[2 * BENCH_MAX_WINDOW];
	int peer = 1 - rank, i;

	for (i = 0; i < win; i++)
		CHECK(coop_irecv(ctx, rbuf, size, peer, 4, BENCH_COMM, 0,
				 &req[i]));
	for (i = 0; i < win; i++)
		CHECK(coop_isend(ctx, sbuf, size, peer, 4, BENCH_COMM, 0,
				 &req[win + i]));
	CHECK(coop_waitall(2 * win, req, COOP_STATUSES_IGNORE));
}

static double one_run(coop_context_t *ctx, int rank, char *sbuf, char *rbuf,
		      size_t size, int iters, int win)
{
	double t0 = 0;
	int i, warm = 2;

	barrier2(ctx, rank);
	for (i = 0; i < warm + iters; i++) {
		if (i == warm)
			t0 = now_us();
		window(ctx, rank, sbuf, rbuf, size, win);
	}
	return 2.0 * (double)size * win * iters / (now_us() - t0);
}

int main(int argc, char **argv)
{
	static const struct bench_pair b = {
		"bibw", "%zu %.1f\n", { 100, 20, 4 }, 1, one_run
	};
	struct bench_args a = { .reps = 7, .win = 64 };

	return bench_pair_main(argc, argv, a, def_sizes,
			       (int)(sizeof(def_sizes) / sizeof(def_sizes[0])),
			       &b);
}
