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

#define MAX_WINDOW 256

static const size_t def_sizes[] = { 8, 1024, 16384, 65536, 262144,
				    1048576, 4194304, 16777216 };

static void window(coop_context_t *ctx, int rank, char *sbuf, char *rbuf,
		   size_t size, int win)
{
	coop_request_t *req[2 * MAX_WINDOW];
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
	size_t sizes[MAX_SIZES];
	int rank, size, n, s, r, opt, iters = 0, reps = 7, win = 64;
	double v[64];

	while ((opt = getopt(argc, argv, "i:r:w:")) != -1) {
		if (opt == 'i')
			iters = atoi(optarg);
		else if (opt == 'r')
			reps = atoi(optarg);
		else if (opt == 'w')
			win = atoi(optarg);
		else
			return 2;
	}
	if (reps < 1 || reps > 64)
		reps = 7;
	if (win < 1 || win > MAX_WINDOW)
		win = 64;
	n = parse_sizes(argc, argv, optind, sizes, def_sizes,
			(int)(sizeof(def_sizes) / sizeof(def_sizes[0])));
	CHECK(coop_init_from_env(&ctx));
	CHECK(coop_rank(ctx, &rank));
	CHECK(coop_size(ctx, &size));
	if (size != 2) {
		fprintf(stderr, "bibw: run with exactly 2 ranks\n");
		return 2;
	}
	for (s = 0; s < n; s++) {
		char *sbuf = bench_alloc(sizes[s]), *rbuf = bench_alloc(sizes[s]);
		int it = iters ? iters : sizes[s] <= 65536 ? 100 :
				 sizes[s] <= 1048576 ? 20 : 4;

		for (r = 0; r < reps; r++)
			v[r] = one_run(ctx, rank, sbuf, rbuf, sizes[s], it, 2,
				       win);
		if (rank == 0)
			printf("%zu %.1f\n", sizes[s], median(v, reps));
		fflush(stdout);
		free(sbuf);
		free(rbuf);
	}
	barrier2(ctx, rank);
	CHECK(coop_finalize(ctx));
	return 0;
}
