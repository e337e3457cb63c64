/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * osu_util.h - helpers of every benchmark program: clock, median, size
 * list, buffers.  The ones that do not link libcoopmpi (limits, mpi_peer,
 * dma_bw) include it alone; the others get it through common.h.
 */
#ifndef BENCH_OSU_UTIL_H
#define BENCH_OSU_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OU_MAX_SIZES 64
#define OU_MAX_REPS 64

static inline double ou_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static inline int ou_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static inline double ou_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), ou_cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* A size in bytes, with an optional k/m suffix (KiB, MiB). */
static inline size_t ou_parse_size(const char *s)
{
	char *end;
	size_t v = strtoull(s, &end, 0);

	if (*end == 'k' || *end == 'K')
		v <<= 10;
	else if (*end == 'm' || *end == 'M')
		v <<= 20;
	return v;
}

/* Sizes from argv[first..] (k/m suffixes); 0 sizes -> the default list. */
static inline int ou_parse_sizes(int argc, char **argv, int first,
				 size_t *sizes, const size_t *def, int ndef)
{
	int i, n = 0;

	for (i = first; i < argc && n < OU_MAX_SIZES; i++)
		sizes[n++] = ou_parse_size(argv[i]);
	if (!n)
		for (; n < ndef; n++)
			sizes[n] = def[n];
	return n;
}

/* Page-aligned, touched buffer of at least n bytes (at least one page). */
static inline void *ou_alloc(size_t n)
{
	size_t sz = (n + 4095) & ~(size_t)4095;
	void *p;

	if (!sz)
		sz = 4096;
	p = aligned_alloc(4096, sz);
	if (!p) {
		fprintf(stderr, "bench: out of memory (%zu bytes)\n", sz);
		exit(1);
	}
	memset(p, 0xa5, sz);
	return p;
}

#endif
