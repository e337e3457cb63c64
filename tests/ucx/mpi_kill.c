/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mpi_kill.c - rank 1 dies (SIGKILL) in the middle of a 64 MiB
 * rendezvous to rank 0.  The job must end (an error, not a hang) and
 * leave nothing in /dev/shm: tests/ucx/run.sh checks both.
 */
#include <mpi.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LEN (64 << 20)

int main(int argc, char **argv)
{
	char *buf = malloc(LEN);
	MPI_Request r;
	int rank;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	memset(buf, rank, LEN);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 1) {
		MPI_Isend(buf, LEN, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &r);
		usleep(2000);	/* the receiver is reading by now */
		MPI_Test(&r, &rank, MPI_STATUS_IGNORE);
		raise(SIGKILL);
	}
	MPI_Recv(buf, LEN, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Finalize();
	return 0;
}
