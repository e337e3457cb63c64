/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * An MPI-free libcoopmpi program, built against an installed tree with
 * `pkg-config coopmpi` only and started by the installed cooprun: rank 0
 * sends 4 MiB (a rendezvous) to rank 1, which checks every byte.
 */
#include "exchange.h"

int main(void)
{
	coop_context_t *ctx;
	int rank, rc, bad;

	rc = coop_init_from_env(&ctx);
	if (rc != COOP_SUCCESS) {
		fprintf(stderr, "hello: init: %s\n", coop_strerror(rc));
		return 1;
	}
	coop_rank(ctx, &rank);
	bad = exchange(ctx, rank);
	if (bad)
		fprintf(stderr, "hello: rank %d: %d bad bytes\n", rank, bad);
	else if (rank)
		printf("hello: 4 MiB from rank 0 arrived intact\n");
	coop_finalize(ctx);
	return bad != 0;
}
