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


static const size_t def_sizes[] = { 1, 8, 64, 1024, 16384, 65536, 1048576,
				    4194304 };

static void window(coop_context_t *ctx, int rank, int pairs, char *buf,
		   size_t size, int win)
{
	coop_request_t *req[BENCH_MAX_WINDOW];
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
	struct bench_args a = { .reps = 5, .win = 64 };
	int rank, nranks, pairs, s, r, i;
	double bw[64], mr[64];

	if (bench_parse_args(argc, argv, &a, def_sizes,
			     (int)(sizeof(def_sizes) / sizeof(def_sizes[0]))))
		return 2;
	ctx = bench_init(&rank, &nranks);
	if (nranks < 2 || nranks % 2) {
		fprintf(stderr, "mbw_mr: run with an even number of ranks\n");
		return 2;
	}
	pairs = nranks / 2;
	for (s = 0; s < a.nsizes; s++) {
		char *buf = bench_alloc(a.sizes[s]);
		int it = bench_iters(&a, a.sizes[s], 100, 20, 4);

		for (r = 0; r < a.reps; r++) {
			double t0, t;

			barrier_all(ctx, rank, nranks);
			for (i = 0; i < 2; i++)		/* warm-up */
				window(ctx, rank, pairs, buf, a.sizes[s], a.win);
			barrier_all(ctx, rank, nranks);
			t0 = now_us();
			for (i = 0; i < it; i++)
				window(ctx, rank, pairs, buf, a.sizes[s], a.win);
			barrier_all(ctx, rank, nranks);
			t = now_us() - t0;
			bw[r] = (double)a.sizes[s] * a.win * it * pairs / t;
			mr[r] = 1e6 * (double)a.win * it * pairs / t;
		}
		if (rank == 0)
			printf("%zu %.1f %.0f\n", a.sizes[s], median(bw, a.reps),
			       median(mr, a.reps));
		fflush(stdout);
		free(buf);
	}
	barrier_all(ctx, rank, nranks);
	CHECK(coop_finalize(ctx));
	return 0;
}
