/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What an MPI implementation does with libcoopmpi, in an MPI program
 * built against an installed tree with mpicc and `pkg-config coopmpi`
 * only: one context per process, connected through the MPI's own
 * all-gather of address blobs (include/coopmpi.h), then a 4 MiB
 * rendezvous from rank 0 to rank 1 through coop, checked.
 */
#include <mpi.h>
#include <stdint.h>

#include "exchange.h"

static coop_context_t *connect_ranks(int rank, int size)
{
	coop_init_params_t p = { .size = sizeof(p), .rank = rank,
				 .nranks = size };
	char blob[COOP_ADDR_MAX_LEN] = { 0 }, *all = malloc(
		(size_t)size * sizeof(blob));
	size_t len = sizeof(blob);
	coop_context_t *ctx = NULL;
	uint64_t key = (uint64_t)rand() << 32 | (uint64_t)rand();

	MPI_Bcast(&key, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
	p.job_key = key;
	if (!all || coop_init(&p, &ctx) || coop_address(ctx, blob, &len))
		MPI_Abort(MPI_COMM_WORLD, 1);
	MPI_Allgather(blob, sizeof(blob), MPI_BYTE, all, sizeof(blob),
		      MPI_BYTE, MPI_COMM_WORLD);
	if (coop_connect(ctx, all, sizeof(blob)))
		MPI_Abort(MPI_COMM_WORLD, 1);
	free(all);
	return ctx;
}

int main(int argc, char **argv)
{
	coop_context_t *ctx;
	int rank, size, bad, all_bad;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	srand((unsigned)MPI_Wtime() ^ 0x5eed);
	if (size != 2)
		MPI_Abort(MPI_COMM_WORLD, 2);
	ctx = connect_ranks(rank, size);
	bad = exchange(ctx, rank) != 0;
	MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi_coop: %s\n", all_bad ? "FAILED" : "4 MiB intact");
	coop_finalize(ctx);
	MPI_Finalize();
	return all_bad != 0;
}
