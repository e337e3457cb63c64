/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What both programs of tests/install do once connected: rank 0 sends
 * EXCHANGE_LEN bytes (a rendezvous) to rank 1, which checks every byte.
 * Returns the bad bytes, or -1 when a call failed (printed).
 */
#ifndef EXCHANGE_H
#define EXCHANGE_H

#include <coopmpi.h>
#include <stdio.h>
#include <stdlib.h>

#define EXCHANGE_LEN (4u << 20)

static inline unsigned char exchange_byte(unsigned i)
{
	return (unsigned char)(i * 7 + 1);
}

static inline int exchange(coop_context_t *ctx, int rank)
{
	unsigned char *buf = malloc(EXCHANGE_LEN);
	int rc, bad = 0;

	if (!buf)
		return -1;
	for (unsigned i = 0; i < EXCHANGE_LEN; i++)
		buf[i] = rank ? 0 : exchange_byte(i);
	if (rank == 0)
		rc = coop_send(ctx, buf, EXCHANGE_LEN, 1, 5, 0,
			       COOP_SEND_STANDARD);
	else
		rc = coop_recv(ctx, buf, EXCHANGE_LEN, 0, 5, 0, 0, NULL);
	for (unsigned i = 0; rank && i < EXCHANGE_LEN; i++)
		bad += buf[i] != exchange_byte(i);
	free(buf);
	if (rc) {
		fprintf(stderr, "rank %d: %s\n", rank, coop_strerror(rc));
		return -1;
	}
	return bad;
}

#endif
