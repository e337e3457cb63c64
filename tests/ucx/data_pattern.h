/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * data_pattern.h - the bytes the MPI programs of tests/ucx send and
 * check: byte i of a message with pattern seed is i * 31 + seed (mod
 * 256), so a byte in the wrong place or from another message shows.
 */
#ifndef COOP_TESTS_DATA_PATTERN_H
#define COOP_TESTS_DATA_PATTERN_H

#include <stddef.h>
#include <stdio.h>

static inline void pattern_fill(unsigned char *b, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = (unsigned char)(i * 31 + seed);
}

/* 0 if b holds the pattern, else 1 and a line on stderr naming prog. */
static inline int pattern_check(const char *prog, const unsigned char *b,
				size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i] != (unsigned char)(i * 31 + seed)) {
			fprintf(stderr, "%s: %zu bytes, pattern %u: byte %zu "
				"is %u\n", prog, n, seed, i, b[i]);
			return 1;
		}
	return 0;
}

#endif
