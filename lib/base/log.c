/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* log.c - single-line diagnostics on stderr. */
#include <stdarg.h>
#include <stdio.h>

#include "util.h"

void coop_log(int rank, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "coopmpi[%d]: ", rank);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", line);
}
