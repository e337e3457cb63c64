/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* common.h - shared bits of the OSU-style benchmarks (pingpong, bw). */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include "coopmpi.h"
#include "osu_util.h"

#define BENCH_COMM 7		/* context id of the benchmark traffic */
#define SYNC_COMM 8		/* context id of barriers */
#define MAX_SIZES OU_MAX_SIZES

/* The libcoopmpi programs' names for the helpers of osu_util.h. */
static inline double now_us(void)
{
	return ou_now_us();
}

static inline void die(const char *what, int rc)
{
	fprintf(stderr, "bench: %s: %s\n", what, coop_strerror(rc));
	exit(1);
}

#define CHECK(call) do { int rc_ = (call); if (rc_) die(#call, rc_); } while (0)

/* Barrier of ranks 0 and 1. */
static inline void barrier2(coop_context_t *ctx, int rank)
{
	int peer = 1 - rank;

	if (rank == 0) {
		CHECK(coop_send(ctx, NULL, 0, peer, 0, SYNC_COMM, 0));
		CHECK(coop_recv(ctx, NULL, 0, peer, 0, SYNC_COMM, 0, NULL));
	} else {
		CHECK(coop_recv(ctx, NULL, 0, peer, 0, SYNC_COMM, 0, NULL));
		CHECK(coop_send(ctx, NULL, 0, peer, 0, SYNC_COMM, 0));
	}
}

static inline double median(double *v, int n)
{
	return ou_median(v, n);
}

static inline int parse_sizes(int argc, char **argv, int first,
			      size_t *sizes, const size_t *def, int ndef)
{
	return ou_parse_sizes(argc, argv, first, sizes, def, ndef);
}

static inline void *bench_alloc(size_t n)
{
	return ou_alloc(n);
}

#endif
