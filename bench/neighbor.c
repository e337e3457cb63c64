/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * neighbor - coop_neighbor_alltoall ([Hoefler]'s neighborhood
 * collectives) on a graph of all ranks; bench/mpi_neighbor.c measures
 * MPI_Neighbor_alltoall the same way (graphs, data and output:
 * bench/nbr_graph.h).
 *
 *   scripts/cooprun -n N bench/bin/neighbor [--graph SPEC] [--hints H]
 *                   [--persistent] [--iters N] [--touch] [sizes...]
 *
 *   --graph  er:P[:SEED] | stencil2d | stencil4d | hotspot (nbr_graph.h)
 *   --hints  none:   one topology (unweighted) for every size;
 *            exact:  COOP_TOPO_EXACT_BYTES, every edge weighing the size:
 *                    a topology per size;
 *            static: COOP_TOPO_STATIC_BUFFERS | COOP_TOPO_STRICT (no
 *                    weights), a topology per size;
 *            all:    the three, weights as exact.
 *            Every size uses the same two buffers (sized for the
 *            largest), so STATIC_BUFFERS holds across the whole run.
 *   --persistent  coop_neighbor_alltoall_init once per size, then
 *            coop_start + coop_wait per call (else the blocking call).
 *   --touch  before each call, a store into every line of the send
 *            blocks (their own values: nbr_touch), as an application
 *            that computes them between calls makes.
 *
 * Per size: a warm-up sending phase-0 data (rounds whose pace sets the
 * timed calls, nbr_graph.h: nbr_pace_next), then the send blocks are
 * rewritten with phase-1 data and the receive blocks poisoned, a
 * barrier, the timed calls, and the received blocks
 * checked against what their origins sent in phase 1.  Rank 0 gathers
 * every rank's mean time per call, bad blocks and digest (coop_send/recv
 * on SYNC_COMM, not the topology's context id) and prints
 * "size us digest bad": us the max over ranks of the mean; digest the sum
 * of the ranks' hashes of their received bytes (the same for every
 * program that delivered the same data); bad the blocks that were not
 * what their origin sent.  Exit status 1 if a block was wrong.
 */
#include <stdio.h>
#include <unistd.h>

#include "common.h"
#include "nbr_graph.h"

#define NBR_COMM 32		/* topologies' context ids: NBR_COMM + size
				 * index with a topology per size */

static int usage(void)
{
	fprintf(stderr, "usage: neighbor " NBR_USAGE "\n");
	return 2;
}

static int parse_hints(const char *s, unsigned *hints)
{
	if (!strcmp(s, "none"))
		*hints = 0;
	else if (!strcmp(s, "exact"))
		*hints = COOP_TOPO_EXACT_BYTES;
	else if (!strcmp(s, "static"))
		*hints = COOP_TOPO_STATIC_BUFFERS | COOP_TOPO_STRICT;
	else if (!strcmp(s, "all"))
		*hints = COOP_TOPO_EXACT_BYTES | COOP_TOPO_STATIC_BUFFERS |
			 COOP_TOPO_STRICT;
	else
		return -1;
	return 0;
}

/* The topology of g on comm with hints; weights = size with
 * EXACT_BYTES.  Rank 0 says what the optimizations made of it. */
static coop_topo_t *topo_new(coop_context_t *ctx, int rank,
			     const struct nbr_graph *g, uint32_t comm,
			     unsigned hints, size_t size)
{
	int exact = !!(hints & COOP_TOPO_EXACT_BYTES);
	int m = g->indeg > g->outdeg ? g->indeg : g->outdeg, i;
	uint64_t *w = exact ? malloc(((size_t)m + 1) * sizeof(*w)) : NULL;
	coop_topo_info_t info;
	coop_topo_t *t;

	if (exact && !w)
		die("malloc", COOP_ERR_NOMEM);
	for (i = 0; exact && i < m; i++)
		w[i] = size;
	CHECK(coop_topo_create(ctx, comm, g->indeg, g->src, w, g->outdeg,
			       g->dst, w, hints, &t));
	free(w);
	CHECK(coop_topo_get_info(t, &info));
	if (rank == 0) {
		printf("# topology");
		if (hints)
			printf(" of size %zu", size);
		printf(": alltoall rounds %d, rank 0's sends %d (forwards %d), moved %d\n",
		       info.colors[COOP_NBR_ALLTOALL],
		       info.sends[COOP_NBR_ALLTOALL],
		       info.forwards[COOP_NBR_ALLTOALL],
		       info.moved[COOP_NBR_ALLTOALL]);
	}
	return t;
}

/* One call: blocking, or start + wait of the persistent request, after
 * --touch's stores into the first touch bytes of the send blocks. */
static void call(coop_topo_t *t, coop_request_t **req, unsigned char *sbuf,
		 unsigned char *rbuf, size_t size, size_t touch)
{
	nbr_touch(sbuf, touch);
	if (*req) {
		CHECK(coop_start(req));
		CHECK(coop_wait(req, COOP_STATUS_IGNORE));
	} else {
		CHECK(coop_neighbor_alltoall(t, sbuf, size, rbuf, size));
	}
}

int main(int argc, char **argv)
{
	struct nbr_opts o;
	struct nbr_spec sp;
	struct nbr_graph g;
	struct nbr_result mine, *all = NULL;
	coop_topo_t *topo = NULL;
	unsigned char *sbuf, *rbuf;
	unsigned hints;
	size_t maxsize = 0;
	uint64_t bad = 0;
	int rank, n, s, i;
	char lib[128];
	coop_context_t *ctx;

	if (nbr_parse_opts(argc, argv, &o) || parse_hints(o.hints, &hints))
		return usage();
	ctx = bench_init(&rank, &n);
	if (nbr_spec_parse(o.graph, n, &sp)) {
		fprintf(stderr, "neighbor: bad graph '%s'\n", o.graph);
		return usage();
	}
	if (nbr_graph_build(&sp, rank, &g))
		die("nbr_graph_build", COOP_ERR_NOMEM);
	for (s = 0; s < o.nsizes; s++)
		maxsize = o.sizes[s] > maxsize ? o.sizes[s] : maxsize;
	sbuf = bench_alloc((size_t)g.outdeg * maxsize);
	rbuf = bench_alloc((size_t)g.indeg * maxsize);
	if (rank == 0) {
		all = calloc((size_t)n, sizeof(*all));
		if (!all)
			die("calloc", COOP_ERR_NOMEM);
		snprintf(lib, sizeof(lib), "libcoopmpi provider %s rndv %s",
			 coop_provider_name(ctx), bench_rndv());
		nbr_header("neighbor", lib, &sp, &g, &o);
	}
	if (!hints)
		topo = topo_new(ctx, rank, &g, NBR_COMM, 0, 0);
	for (s = 0; s < o.nsizes; s++) {
		size_t size = o.sizes[s];
		size_t touch = o.touch ? (size_t)g.outdeg * size : 0;
		struct nbr_pace pc = nbr_pace_first(&o, size);
		coop_request_t *req = NULL;
		double t0;

		if (hints)
			topo = topo_new(ctx, rank, &g,
					NBR_COMM + (uint32_t)s, hints, size);
		if (o.persistent)
			CHECK(coop_neighbor_alltoall_init(topo, sbuf, size,
							  rbuf, size, &req));
		nbr_fill_send(&g, rank, sbuf, size, 0);
		while (pc.more) {
			t0 = now_us();
			for (i = 0; i < pc.calls; i++)
				call(topo, &req, sbuf, rbuf, size, touch);
			if (rank == 0)
				nbr_pace_next(&o, now_us() - t0, &pc);
			bcast_from_0(ctx, rank, n, &pc, sizeof(pc));
		}
		nbr_fill_send(&g, rank, sbuf, size, 1);
		memset(rbuf, 0x5a, (size_t)g.indeg * size);
		barrier_all(ctx, rank, n);
		t0 = now_us();
		for (i = 0; i < pc.iters; i++)
			call(topo, &req, sbuf, rbuf, size, touch);
		mine.us = (now_us() - t0) / pc.iters;
		mine.bad = nbr_check_recv(&g, rbuf, size, 1);
		mine.digest = nbr_digest(rank, rbuf, (size_t)g.indeg * size);
		if (req)
			CHECK(coop_request_free(&req));
		if (hints)
			CHECK(coop_topo_free(&topo));
		gather_to_0(ctx, rank, n, &mine, all, sizeof(mine));
		if (rank == 0)
			bad += nbr_report("neighbor", size, &pc, all, n);
	}
	if (topo)
		CHECK(coop_topo_free(&topo));
	barrier_all(ctx, rank, n);
	CHECK(coop_finalize(ctx));
	nbr_graph_free(&g);
	free(sbuf);
	free(rbuf);
	free(all);
	return bad ? 1 : 0;
}
