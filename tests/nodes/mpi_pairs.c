/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mpi_pairs.c - an unmodified MPI program for jobs across nodes: every
 * rank sends to every other rank and receives from it, messages of 8 B to
 * 16 MiB (eager and rendezvous, unaligned), every byte checked.  In step
 * k each rank sends to rank + k and receives from rank - k at once, so
 * that intra-node and inter-node pairs run side by side.
 *
 * Rank 0 then prints, for each node (its host name), the bytes of its
 * intra-node messages of at least RNDV_MIN bytes (what coop should carry)
 * and of its inter-node ones (what the network carries):
 *   mpi_pairs: node NAME: R ranks, intra-node rendezvous B bytes,
 *     inter-node I bytes
 * and "mpi_pairs: ok N ranks on M nodes" when all arrived intact.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Both MPIs through coop send these by rendezvous, the smaller eagerly. */
#define RNDV_MIN (64 << 10)

static const size_t sizes[] = {
	8, 4096, 65536 + 13, 1 << 20, (4 << 20) + 7, 16 << 20,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define MAX_LEN (16 << 20)

static unsigned char pattern(size_t i, int from, int to, size_t n)
{
	return (unsigned char)(i * 131 + (size_t)from * 7 + (size_t)to * 3 + n);
}

static int exchange(int rank, int nranks, int k, size_t n,
		    unsigned char *sb, unsigned char *rb)
{
	int to = (rank + k) % nranks, from = (rank - k + nranks) % nranks;
	MPI_Request r[2];
	MPI_Status st[2];
	size_t i;

	for (i = 0; i < n; i++)
		sb[i] = pattern(i, rank, to, n);
	memset(rb, 0, n);
	MPI_Irecv(rb, (int)n, MPI_BYTE, from, k, MPI_COMM_WORLD, &r[0]);
	MPI_Isend(sb, (int)n, MPI_BYTE, to, k, MPI_COMM_WORLD, &r[1]);
	MPI_Waitall(2, r, st);
	for (i = 0; i < n; i++)
		if (rb[i] != pattern(i, from, rank, n)) {
			fprintf(stderr, "mpi_pairs: %zu B from rank %d to %d: "
				"byte %zu wrong\n", n, from, rank, i);
			return 1;
		}
	return 0;
}

/* What each node's pairs moved, by rank 0 from every rank's host name. */
static void report(int nranks, const char *hosts)
{
	size_t rndv = 0, all = 0, s;
	int a, b, node, nodes = 0, ranks;

	for (s = 0; s < NSIZES; s++) {
		all += sizes[s];
		if (sizes[s] >= RNDV_MIN)
			rndv += sizes[s];
	}
	for (node = 0; node < nranks; node++) {
		const char *name = hosts + node * MPI_MAX_PROCESSOR_NAME;
		unsigned long long intra = 0, inter = 0;

		for (a = 0; a < node; a++)
			if (!strcmp(name, hosts + a * MPI_MAX_PROCESSOR_NAME))
				break;
		if (a < node)
			continue;	/* named by an earlier rank */
		nodes++;
		ranks = 0;
		for (a = 0; a < nranks; a++) {
			if (strcmp(name, hosts + a * MPI_MAX_PROCESSOR_NAME))
				continue;
			ranks++;
			for (b = 0; b < nranks; b++) {
				if (b == a)
					continue;
				if (!strcmp(name, hosts + b * MPI_MAX_PROCESSOR_NAME))
					intra += rndv;
				else
					inter += 2 * all;	/* both ways */
			}
		}
		printf("mpi_pairs: node %s: %d ranks, intra-node rendezvous "
		       "%llu bytes, inter-node %llu bytes\n", name, ranks,
		       intra, inter);
	}
	printf("mpi_pairs: ok %d ranks on %d nodes\n", nranks, nodes);
}

int main(int argc, char **argv)
{
	char host[MPI_MAX_PROCESSOR_NAME] = "", *hosts = NULL;
	unsigned char *sb = malloc(MAX_LEN), *rb = malloc(MAX_LEN);
	int rank, nranks, len, k, bad = 0, anybad;
	size_t s;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (!sb || !rb)
		MPI_Abort(MPI_COMM_WORLD, 2);
	MPI_Get_processor_name(host, &len);
	if (!rank)
		hosts = calloc((size_t)nranks, MPI_MAX_PROCESSOR_NAME);
	MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts,
		   MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
	for (k = 1; k < nranks; k++)
		for (s = 0; s < NSIZES; s++)
			bad |= exchange(rank, nranks, k, sizes[s], sb, rb);
	MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (!rank && !anybad)
		report(nranks, hosts);
	free(hosts);
	free(sb);
	free(rb);
	MPI_Finalize();
	return anybad;
}
