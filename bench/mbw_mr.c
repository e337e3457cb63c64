/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mbw_mr - osu_mbw_mr-style multi-pair bandwidth and message rate:
 * with N ranks (N even), rank i < N/2 streams to rank i + N/2, each pair
 * with a window of 64 nonblocking sends/receives and a 4-byte ack, all
 * pairs at once.
 *   scripts/cooprun -n N bench/mbw_mr [-i iters] [-r repeats] [-w window] [sizes...]
 * Prints "size MB/s messages/s" per size: aggregate over all pairs (MB =
 * 1e6 bytes), timed by rank 0 between two barriers of all ranks, the
 * median over repeats, warm-up windows excluded.
 */
#include <unistd.h>

#include "common.h"

#define MAX_WINDOW 256

static const size_t def_sizes[] = { 1, 8, 64, 1024, 16384, 65536, 1048576,
				    4194304 };

/* Barrier of all ranks: everybody reports to rank 0, which releases. */
static void barrier_all(coop_context_t *ctx, int rank, int nranks)
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

static void window(coop_context_t *ctx, int rank, int pairs, char *buf,
		   size_t size, int win)
{
	coop_request_t *req[MAX_WINDOW];
	int i, ack = 0, sender = rank < pairs;
	int peer = sender ? rank + pairs : rank - pairs;

	for (i = 0; i < win; i++) {
		if (sender)
			CHECK(coop_isend(ctx, buf, size, peer, 2, BENCH_COMM, 0,
					 &req[i]));
		else
			CHECK(coop_irecv(ctx, buf, size, peer, 2, BENCH_COMM, 0,
					 &req[i]));
	}
	CHECK(coop_waitall(win, req, COOP_STATUSES_IGNORE));
	if (sender)
		CHECK(coop_recv(ctx, &ack, sizeof(ack), peer, 3, BENCH_COMM, 0,
				NULL));
	else
		CHECK(coop_send(ctx, &ack, sizeof(ack), peer, 3, BENCH_COMM, 0));
}

int main(int argc, char **argv)
{
	coop_context_t *ctx;
	size_t sizes[MAX_SIZES];
	int rank, nranks, pairs, n, s, r, i, opt, iters = 0, reps = 5, win = 64;
	double bw[64], mr[64];

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
		reps = 5;
	if (win < 1 || win > MAX_WINDOW)
		win = 64;
	n = parse_sizes(argc, argv, optind, sizes, def_sizes,
			(int)(sizeof(def_sizes) / sizeof(def_sizes[0])));
	CHECK(coop_init_from_env(&ctx));
	CHECK(coop_rank(ctx, &rank));
	CHECK(coop_size(ctx, &nranks));
	if (nranks < 2 || nranks % 2) {
		fprintf(stderr, "mbw_mr: run with an even number of ranks\n");
		return 2;
	}
	pairs = nranks / 2;
	for (s = 0; s < n; s++) {
		char *buf = bench_alloc(sizes[s]);
		int it = iters ? iters : sizes[s] <= 65536 ? 100 :
				 sizes[s] <= 1048576 ? 20 : 4;

		for (r = 0; r < reps; r++) {
			double t0, t;

			barrier_all(ctx, rank, nranks);
			for (i = 0; i < 2; i++)		/* warm-up */
				window(ctx, rank, pairs, buf, sizes[s], win);
			barrier_all(ctx, rank, nranks);
			t0 = now_us();
			for (i = 0; i < it; i++)
				window(ctx, rank, pairs, buf, sizes[s], win);
			barrier_all(ctx, rank, nranks);
			t = now_us() - t0;
			bw[r] = (double)sizes[s] * win * it * pairs / t;
			mr[r] = 1e6 * (double)win * it * pairs / t;
		}
		if (rank == 0)
			printf("%zu %.1f %.0f\n", sizes[s], median(bw, reps),
			       median(mr, reps));
		fflush(stdout);
		free(buf);
	}
	barrier_all(ctx, rank, nranks);
	CHECK(coop_finalize(ctx));
	return 0;
}
