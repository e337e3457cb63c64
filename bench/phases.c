/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * phases.c - [Marathe]'s synthetic program: three communication phases,
 * each best served by another rendezvous protocol, repeated; how long
 * each phase takes under the protocol the job runs with (COOP_RNDV:
 * a static one, or profile, where coop_pcontrol() marks the phases).
 *
 *   scripts/cooprun -n 2 bench/bin/phases [-i ITERS] [-w WARMUP]
 *                   [-m BYTES] [-c COMPUTE_US]
 *
 *   phase 1: rank 0 sends (blocking) and computes; rank 1 computes, then
 *            receives (a rendezvous holds rank 0: pre-/post-copy win)
 *   phase 2: rank 1 receives at once; rank 0 isends, computes, waits
 *            (RGET: rank 1 copies while rank 0 computes)
 *   phase 3: rank 0 sends at once; rank 1 computes a tenth of C, irecvs,
 *            computes, waits (RPUT: rank 0 copies while rank 1 computes)
 *
 * A phase's time is the later of the two ranks' (each from the barrier
 * that starts the phase to its own end); per phase the median over the
 * iterations after the warm-up ones.  Output: "# ..." comments, then one
 * line per phase "P us" and "0 us" for the three together (the sum of
 * the medians).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define PHASES 3
#define MAX_ITERS 1000

struct opts {
	int iters, warmup;
	size_t len;
	double compute_us;
};

static void run_phase(coop_context_t *ctx, int rank, int ph, char *buf,
		      const struct opts *o)
{
	coop_request_t *r;
	int tag = ph;

	switch (ph * 2 + rank) {
	case 2:
		CHECK(coop_send(ctx, buf, o->len, 1, tag, BENCH_COMM, 0));
		busy_us(o->compute_us);
		break;
	case 3:
		busy_us(o->compute_us);
		/* fall through */
	case 5:
		CHECK(coop_recv(ctx, buf, o->len, 0, tag, BENCH_COMM, 0, NULL));
		break;
	case 4:
		CHECK(coop_isend(ctx, buf, o->len, 1, tag, BENCH_COMM, 0, &r));
		busy_us(o->compute_us);
		CHECK(coop_wait(&r, NULL));
		break;
	case 6:
		CHECK(coop_send(ctx, buf, o->len, 1, tag, BENCH_COMM, 0));
		break;
	case 7:
		busy_us(o->compute_us / 10);
		CHECK(coop_irecv(ctx, buf, o->len, 0, tag, BENCH_COMM, 0, &r));
		busy_us(o->compute_us);
		CHECK(coop_wait(&r, NULL));
		break;
	}
}

/* One phase, timed: the later of both ranks' times (at rank 0). */
static double timed_phase(coop_context_t *ctx, int rank, int ph, char *buf,
			  const struct opts *o)
{
	double t0, mine, theirs = 0;

	barrier2(ctx, rank);
	t0 = now_us();
	CHECK(coop_pcontrol(ctx, ph));
	run_phase(ctx, rank, ph, buf, o);
	CHECK(coop_pcontrol(ctx, 0));
	mine = now_us() - t0;
	if (rank)
		CHECK(coop_send(ctx, &mine, sizeof(mine), 0, 12, SYNC_COMM, 0));
	else
		CHECK(coop_recv(ctx, &theirs, sizeof(theirs), 1, 12,
				SYNC_COMM, 0, NULL));
	return mine > theirs ? mine : theirs;
}

static void parse(int argc, char **argv, struct opts *o)
{
	int c;

	*o = (struct opts){ 20, 2, (size_t)8 << 20, 20000 };
	while ((c = getopt(argc, argv, "i:w:m:c:")) != -1) {
		switch (c) {
		case 'i': o->iters = atoi(optarg); break;
		case 'w': o->warmup = atoi(optarg); break;
		case 'm': o->len = ou_parse_size(optarg); break;
		case 'c': o->compute_us = atof(optarg); break;
		default:
			fprintf(stderr, "usage: phases [-i iters] [-w warmup] "
				"[-m bytes] [-c compute_us]\n");
			exit(2);
		}
	}
	if (o->iters < 1 || o->iters > MAX_ITERS || o->warmup < 0 ||
	    o->warmup >= o->iters || !o->len || o->compute_us < 0) {
		fprintf(stderr, "phases: bad -i/-w/-m/-c\n");
		exit(2);
	}
}

int main(int argc, char **argv)
{
	static double t[PHASES][MAX_ITERS];
	coop_context_t *ctx;
	struct opts o;
	double total = 0, m;
	char *buf;
	int rank, size, it, ph;

	parse(argc, argv, &o);
	ctx = bench_init(&rank, &size);
	if (size != 2) {
		fprintf(stderr, "phases: run with exactly 2 ranks\n");
		return 2;
	}
	buf = malloc(o.len);
	memset(buf, 1, o.len);
	for (it = 0; it < o.iters; it++)
		for (ph = 1; ph <= PHASES; ph++)
			t[ph - 1][it] = timed_phase(ctx, rank, ph, buf, &o);
	if (rank == 0) {
		printf("# phases: rndv %s, %zu B messages, compute %.0f us, "
		       "median of iterations %d..%d\n", bench_rndv(), o.len,
		       o.compute_us, o.warmup + 1, o.iters);
		for (ph = 0; ph < PHASES; ph++) {
			m = median(&t[ph][o.warmup], o.iters - o.warmup);
			total += m;
			printf("%d %.1f\n", ph + 1, m);
		}
		printf("0 %.1f\n", total);
	}
	free(buf);
	CHECK(coop_finalize(ctx));
	return 0;
}
