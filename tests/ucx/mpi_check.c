/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mpi_check.c - an unmodified MPI program (no libcoopmpi call): two ranks
 * exchange messages of every protocol size - eager to 16 MiB rendezvous,
 * unaligned - blocking each way, then nonblocking both ways at once, with
 * a computing sender and with the sends posted before the receives (an
 * Open MPI receiver then reads while its own message is being read:
 * through vader, pml_ob1_rget_busy_reader.patch), then contiguous sends
 * received into a strided
 * datatype (a receiver that cannot take the data in place: Open MPI's ob1
 * declines the RGET), and check every byte.  Exit 0 and "mpi_check: ok"
 * when all arrived intact.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data_pattern.h"

static const size_t sizes[] = {
	0, 1, 48, 4096, 65536 + 13, 1 << 20, (4 << 20) + 7, 16 << 20,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* rank 0 -> 1, then 1 -> 0, blocking */
static int one_way(int rank, unsigned char *sb, unsigned char *rb, size_t n,
		   unsigned seed)
{
	int from = seed & 1, to = !from;

	if (rank == from) {
		pattern_fill(sb, n, seed);
		MPI_Send(sb, (int)n, MPI_BYTE, to, (int)seed, MPI_COMM_WORLD);
		return 0;
	}
	memset(rb, 0, n);
	MPI_Recv(rb, (int)n, MPI_BYTE, from, (int)seed, MPI_COMM_WORLD,
		 MPI_STATUS_IGNORE);
	return pattern_check("mpi_check", rb, n, seed);
}

/* both ways at once: receives posted first, the sender computing (busy)
 * before it waits; or each rank's send posted before its receive */
static int both_ways(int rank, unsigned char *sb, unsigned char *rb,
		     size_t n, unsigned seed, int sends_first)
{
	MPI_Request r[2];
	MPI_Status st[2];
	volatile double x = 1;
	int i, tag = 7 + sends_first;

	pattern_fill(sb, n, seed + (unsigned)rank);
	memset(rb, 0, n);
	if (sends_first)
		MPI_Isend(sb, (int)n, MPI_BYTE, !rank, tag, MPI_COMM_WORLD,
			  &r[1]);
	MPI_Irecv(rb, (int)n, MPI_BYTE, !rank, tag, MPI_COMM_WORLD, &r[0]);
	if (!sends_first) {
		MPI_Isend(sb, (int)n, MPI_BYTE, !rank, tag, MPI_COMM_WORLD,
			  &r[1]);
		for (i = 0; i < 200000; i++)
			x = x * 1.0000001 + 1e-9;
	}
	MPI_Waitall(2, r, st);
	return pattern_check("mpi_check", rb, n, seed + (unsigned)!rank);
}

/* N contiguous doubles from rank "from" into every other double of the
 * receiver's buffer (MPI_Type_vector), the gaps left alone */
static int strided(int rank, double *sb, double *rb, int n, int from)
{
	MPI_Datatype vec;
	int i, bad = 0;

	if (rank == from) {
		for (i = 0; i < n; i++)
			sb[i] = i + 0.5 * from;
		MPI_Send(sb, n, MPI_DOUBLE, !from, 9, MPI_COMM_WORLD);
		return 0;
	}
	for (i = 0; i < 2 * n; i++)
		rb[i] = -1;
	MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &vec);
	MPI_Type_commit(&vec);
	MPI_Recv(rb, 1, vec, from, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Type_free(&vec);
	for (i = 0; i < n && !bad; i++)
		bad = rb[2 * i] != i + 0.5 * from || rb[2 * i + 1] != -1;
	if (bad)
		fprintf(stderr, "mpi_check: strided receive of %d doubles wrong at %d\n",
			n, i - 1);
	return bad;
}

int main(int argc, char **argv)
{
	unsigned char *sb = malloc((16 << 20) + 64);
	unsigned char *rb = malloc((16 << 20) + 64);
	int rank, size, bad = 0, all;
	unsigned k, round;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2 || !sb || !rb) {
		fprintf(stderr, "mpi_check: needs 2 ranks and memory\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	for (round = 0; round < 3; round++)
		for (k = 0; k < NSIZES; k++) {
			bad |= one_way(rank, sb + 1, rb + 3, sizes[k], 2 * k);
			bad |= one_way(rank, sb + 1, rb + 3, sizes[k],
				       2 * k + 1);
			bad |= both_ways(rank, sb + 5, rb + 1, sizes[k], k, 0);
			bad |= both_ways(rank, sb + 3, rb + 7, sizes[k], k + 64,
					 1);
		}
	/* 64 KiB and 1 MiB of doubles, each way (the buffers hold 16 MiB) */
	for (k = 0; k < 4; k++)
		bad |= strided(rank, (double *)(void *)sb, (double *)(void *)rb,
			       k < 2 ? 8192 : 131072, (int)(k & 1));
	MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
	if (!rank)
		printf("mpi_check: %s\n", all ? "DATA ERRORS" : "ok");
	free(sb);
	free(rb);
	MPI_Finalize();
	return all;
}
