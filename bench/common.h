/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* common.h - shared bits of the OSU-style benchmarks (pingpong, bw). */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coopmpi.h"

#define BENCH_COMM 7		/* context id of the benchmark traffic */
#define SYNC_COMM 8		/* context id of barriers */
#define MAX_SIZES 64

static inline double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
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

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static inline double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Sizes from the command line (k/m suffixes) or the default list. */
static inline int parse_sizes(int argc, char **argv, int first,
			      size_t *sizes, const size_t *def, int ndef)
{
	int i, n = 0;

	for (i = first; i < argc && n < MAX_SIZES; i++) {
		char *end;
		size_t v = strtoull(argv[i], &end, 0);

		if (*end == 'k' || *end == 'K')
			v <<= 10;
		else if (*end == 'm' || *end == 'M')
			v <<= 20;
		sizes[n++] = v;
	}
	if (!n)
		for (; n < ndef; n++)
			sizes[n] = def[n];
	return n;
}

static inline void *bench_alloc(size_t n)
{
	size_t sz = (n + 4095) & ~(size_t)4095;
	void *p = aligned_alloc(4096, sz ? sz : 4096);

	if (!p)
		die("alloc", COOP_ERR_NOMEM);
	memset(p, 0xa5, sz ? sz : 4096);
	return p;
}

#endif
