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
		      size_t size, int iters, int warm, int win)
{
	double t0 = 0;
	int i;

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
	coop_context_t *ctx;
	struct bench_args a = { .reps = 7, .win = 64 };
	int rank, size, s, r;
	double v[64];

	if (bench_parse_args(argc, argv, &a, def_sizes,
			     (int)(sizeof(def_sizes) / sizeof(def_sizes[0]))))
		return 2;
	ctx = bench_init(&rank, &size);
	if (size != 2) {
		fprintf(stderr, "bibw: run with exactly 2 ranks\n");
		return 2;
	}
	for (s = 0; s < a.nsizes; s++) {
		char *sbuf = bench_alloc(a.sizes[s]), *rbuf = bench_alloc(a.sizes[s]);
		int it = bench_iters(&a, a.sizes[s], 100, 20, 4);

		for (r = 0; r < a.reps; r++)
			v[r] = one_run(ctx, rank, sbuf, rbuf, a.sizes[s], it, 2,
				       a.win);
		if (rank == 0)
			printf("%zu %.1f\n", a.sizes[s], median(v, a.reps));
		fflush(stdout);
		free(sbuf);
		free(rbuf);
	}
	barrier2(ctx, rank);
	CHECK(coop_finalize(ctx));
	return 0;
}
