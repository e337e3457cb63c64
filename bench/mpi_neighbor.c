/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mpi_neighbor - bench/neighbor.c's measurement in plain MPI:
 * MPI_Neighbor_alltoall (MPI_BYTE counts) on a communicator of
 * MPI_Dist_graph_create_adjacent (unweighted, no reordering, no info)
 * over the same graphs, with the same data, checks and output
 * (bench/nbr_graph.h).  Built once per MPI (bench/Makefile.suite:
 * mpi_neighbor.openmpi with mpicc.openmpi, mpi_neighbor.mpich with
 * mpicc.mpich):
 *
 *   mpirun -np N bench/bin/mpi_neighbor.X [--graph SPEC] [--persistent]
 *                                         [--iters N] [--touch] [sizes...]
 *
 *   --persistent  MPI_Neighbor_alltoall_init (MPI 4; Open MPI 4.1: its
 *                 extension MPIX_Neighbor_alltoall_init) once per size,
 *                 then MPI_Start + MPI_Wait per call.
 *   --hints       only "none": the hints are libcoopmpi's.
 *   --touch       as bench/neighbor's: a store into every line of the
 *                 send blocks before each call.
 *
 * The graph communicator is created once for all sizes; rank 0 gathers
 * the results with MPI_Gather on MPI_COMM_WORLD.
 */
#include <mpi.h>
#if MPI_VERSION < 4 && defined(OPEN_MPI)
#include <mpi-ext.h>
#endif

#include "nbr_graph.h"

#if MPI_VERSION >= 4
#define HAVE_PERSISTENT 1
#define NEIGHBOR_ALLTOALL_INIT MPI_Neighbor_alltoall_init
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define HAVE_PERSISTENT 1
#define NEIGHBOR_ALLTOALL_INIT MPIX_Neighbor_alltoall_init
#else
#define HAVE_PERSISTENT 0
#endif

static void check(int rc, const char *what)
{
	if (rc != MPI_SUCCESS) {
		fprintf(stderr, "mpi_neighbor: %s failed (%d)\n", what, rc);
		MPI_Abort(MPI_COMM_WORLD, 1);
		exit(1);	/* MPI_Abort is not declared noreturn */
	}
}

/*
 * GCC 12 takes MPI_UNWEIGHTED ((int *)2 in Open MPI) for a zero-sized
 * array (-Wstringop-overread false positive, as MPI_STATUSES_IGNORE in
 * mpi_peer.c): silence it here.
 */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overread"
#endif
static MPI_Comm graph_comm(const struct nbr_graph *g)
{
	MPI_Comm gc;

	check(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, g->indeg, g->src,
					     MPI_UNWEIGHTED, g->outdeg, g->dst,
					     MPI_UNWEIGHTED, MPI_INFO_NULL, 0,
					     &gc),
	      "MPI_Dist_graph_create_adjacent");
	return gc;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

/* One call: blocking, or start + wait of the persistent request, after
 * --touch's stores into the first touch bytes of the send blocks. */
static void call(MPI_Comm gc, MPI_Request *req, unsigned char *sbuf,
		 unsigned char *rbuf, int size, size_t touch)
{
	nbr_touch(sbuf, touch);
	if (*req != MPI_REQUEST_NULL) {
		check(MPI_Start(req), "MPI_Start");
		check(MPI_Wait(req, MPI_STATUS_IGNORE), "MPI_Wait");
	} else {
		check(MPI_Neighbor_alltoall(sbuf, size, MPI_BYTE, rbuf, size,
					    MPI_BYTE, gc),
		      "MPI_Neighbor_alltoall");
	}
}

int main(int argc, char **argv)
{
	struct nbr_opts o;
	struct nbr_spec sp;
	struct nbr_graph g;
	struct nbr_result mine, *all = NULL;
	unsigned char *sbuf, *rbuf;
	char lib[MPI_MAX_LIBRARY_VERSION_STRING];
	size_t maxsize = 0;
	uint64_t bad = 0;
	int rank, n, s, i, len;
	MPI_Comm gc;

	check(MPI_Init(&argc, &argv), "MPI_Init");
	check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
	check(MPI_Comm_size(MPI_COMM_WORLD, &n), "MPI_Comm_size");
	if (nbr_parse_opts(argc, argv, &o) || strcmp(o.hints, "none") ||
	    (o.persistent && !HAVE_PERSISTENT) ||
	    nbr_spec_parse(o.graph, n, &sp)) {
		if (rank == 0)
			fprintf(stderr, "usage: mpi_neighbor " NBR_USAGE "\n"
				"  (--hints none only; --persistent needs MPI 4 or Open MPI's pcollreq)\n");
		MPI_Finalize();
		return 2;
	}
	if (nbr_graph_build(&sp, rank, &g))
		check(MPI_ERR_NO_MEM, "nbr_graph_build");
	gc = graph_comm(&g);
	for (s = 0; s < o.nsizes; s++)
		maxsize = o.sizes[s] > maxsize ? o.sizes[s] : maxsize;
	sbuf = ou_alloc((size_t)g.outdeg * maxsize);
	rbuf = ou_alloc((size_t)g.indeg * maxsize);
	if (rank == 0) {
		all = calloc((size_t)n, sizeof(*all));
		if (!all)
			check(MPI_ERR_NO_MEM, "calloc");
		check(MPI_Get_library_version(lib, &len), "version");
		lib[strcspn(lib, "\n")] = 0;
		nbr_header("mpi_neighbor", lib, &sp, &g, &o);
	}
	for (s = 0; s < o.nsizes; s++) {
		size_t size = o.sizes[s];
		size_t touch = o.touch ? (size_t)g.outdeg * size : 0;
		struct nbr_pace pc = nbr_pace_first(&o, size);
		MPI_Request req = MPI_REQUEST_NULL;
		double t0;

#if HAVE_PERSISTENT
		if (o.persistent)
			check(NEIGHBOR_ALLTOALL_INIT(sbuf, (int)size, MPI_BYTE,
						     rbuf, (int)size, MPI_BYTE,
						     gc, MPI_INFO_NULL, &req),
			      "MPI_Neighbor_alltoall_init");
#endif
		nbr_fill_send(&g, rank, sbuf, size, 0);
		while (pc.more) {
			t0 = ou_now_us();
			for (i = 0; i < pc.calls; i++)
				call(gc, &req, sbuf, rbuf, (int)size, touch);
			if (rank == 0)
				nbr_pace_next(&o, ou_now_us() - t0, &pc);
			check(MPI_Bcast(&pc, (int)sizeof(pc), MPI_BYTE, 0,
					MPI_COMM_WORLD), "MPI_Bcast");
		}
		nbr_fill_send(&g, rank, sbuf, size, 1);
		memset(rbuf, 0x5a, (size_t)g.indeg * size);
		check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
		t0 = ou_now_us();
		for (i = 0; i < pc.iters; i++)
			call(gc, &req, sbuf, rbuf, (int)size, touch);
		mine.us = (ou_now_us() - t0) / pc.iters;
		mine.bad = nbr_check_recv(&g, rbuf, size, 1);
		mine.digest = nbr_digest(rank, rbuf, (size_t)g.indeg * size);
		if (req != MPI_REQUEST_NULL)
			check(MPI_Request_free(&req), "MPI_Request_free");
		check(MPI_Gather(&mine, (int)sizeof(mine), MPI_BYTE, all,
				 (int)sizeof(mine), MPI_BYTE, 0,
				 MPI_COMM_WORLD), "MPI_Gather");
		if (rank == 0)
			bad += nbr_report("mpi_neighbor", size, &pc, all, n);
	}
	check(MPI_Comm_free(&gc), "MPI_Comm_free");
	nbr_graph_free(&g);
	free(sbuf);
	free(rbuf);
	free(all);
	MPI_Finalize();
	return bad ? 1 : 0;
}
