/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mpi_realloc.c - an unmodified MPI program: buffers freed and allocated
 * again at the same address between messages, as an application's
 * free() and malloc() may do.  For each rendezvous size, three rounds:
 * each rank maps its send and receive buffers (at the previous round's
 * addresses after the first: MAP_FIXED_NOREPLACE, so new pages under the
 * same addresses), rank 0 sends to rank 1 and rank 1 back, and each
 * checks every byte it received against this round's pattern.  A kept
 * registration or window that still showed the old pages would deliver
 * the previous round's bytes, or leave the new pages empty.  Exit 0 and
 * "mpi_realloc: ok" when all arrived intact.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "data_pattern.h"

static const size_t sizes[] = { 65536 + 13, 1 << 20, (4 << 20) + 7 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define ROUNDS 3

/* n bytes in new pages at addr (NULL: anywhere); the job ends if the
 * address cannot be had again. */
static unsigned char *fresh(unsigned char *addr, size_t n)
{
	void *p;

	if (addr && munmap(addr, n))
		MPI_Abort(MPI_COMM_WORLD, 3);
	p = mmap(addr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
		 (addr ? MAP_FIXED_NOREPLACE : 0), -1, 0);
	if (p == MAP_FAILED || (addr && p != addr)) {
		perror("mpi_realloc: mmap at the same address");
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
	return p;
}

/* One round: rank 0 -> 1 with seed, then 1 -> 0 with seed + 1. */
static int round_trip(int rank, unsigned char *sb, unsigned char *rb,
		      size_t n, unsigned seed)
{
	int peer = !rank, bad = 0;

	pattern_fill(sb, n, seed + (unsigned)rank);
	if (rank == 0)
		MPI_Send(sb, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
	MPI_Recv(rb, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
		 MPI_STATUS_IGNORE);
	bad = pattern_check("mpi_realloc", rb, n, seed + (unsigned)peer);
	if (rank == 1)
		MPI_Send(sb, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
	return bad;
}

static int one_size(int rank, size_t n)
{
	unsigned char *sb = NULL, *rb = NULL;
	int bad = 0, r;

	for (r = 0; r < ROUNDS; r++) {
		sb = fresh(sb, n);
		rb = fresh(rb, n);
		bad |= round_trip(rank, sb, rb, n, (unsigned)(r * 2 + 1));
		MPI_Barrier(MPI_COMM_WORLD);
	}
	munmap(sb, n);
	munmap(rb, n);
	return bad;
}

int main(int argc, char **argv)
{
	int rank, size, bad = 0, all = 0;
	size_t i;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		if (rank == 0)
			fprintf(stderr, "mpi_realloc: needs 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	for (i = 0; i < NSIZES; i++)
		bad |= one_size(rank, sizes[i]);
	MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (rank == 0 && !all)
		printf("mpi_realloc: ok\n");
	MPI_Finalize();
	return all;
}
