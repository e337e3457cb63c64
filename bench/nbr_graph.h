/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nbr_graph.h - what bench/neighbor.c (libcoopmpi) and bench/mpi_neighbor.c
 * (Open MPI, MPICH) share, so that the three measure the same graphs the
 * same way: the command line, the graph generators, the data pattern and
 * its check, the digest and the output lines.  Header-only, no library
 * calls (every function static inline).
 *
 * Graphs over n ranks, each rank's lists as MPI_Dist_graph_create_adjacent
 * takes them (destinations: where block j goes; sources: whose blocks
 * arrive, in that order); every rank can compute every other rank's lists:
 *
 *   er:P[:SEED]  Erdos-Renyi A(n, P): edge i -> j (i != j) with
 *                probability P, decided by a hash of (SEED, i, j) (SEED
 *                default 1), so every rank and program draws the same
 *                graph; lists in increasing rank order
 *   stencil2d    periodic 2-D Cartesian grid, dims as MPI_Dims_create
 *                (n, 2) would make them (as even as possible, non-
 *                increasing), ranks row-major as MPI_Cart_create; lists
 *                -x, +x, -y, +y (dimension order, -1 then +1, as
 *                MPI_Cart_shift); a dimension of 2 names the same rank
 *                twice, one of 1 names the rank itself
 *   stencil4d    the same in 4-D (8 neighbours)
 *   hotspot      rank 0 -> every other rank, every other rank -> 0
 *
 * Several edges between two ranks match as MPI matches them: the k-th
 * o -> d edge of o's destinations is the k-th o among d's sources.
 */
#ifndef BENCH_NBR_GRAPH_H
#define BENCH_NBR_GRAPH_H

#include <getopt.h>
#include <stdint.h>

#include "osu_util.h"

/* ------------------------------------------------------------ options */

struct nbr_opts {
	const char *graph;	/* spec, default stencil2d */
	const char *hints;	/* none exact static all (coop only) */
	int persistent;		/* start/wait of a persistent request */
	int iters;		/* 0: by size, nbr_iters() */
	int touch;		/* store into the send blocks before each call */
	int nsizes;
	size_t sizes[OU_MAX_SIZES];
};

#define NBR_USAGE "[--graph er:P[:SEED]|stencil2d|stencil4d|hotspot] " \
	"[--hints none|exact|static|all] [--persistent] [--iters N] [--touch] " \
	"[sizes...]"

/* Returns 0, or 2 (usage: print it). */
static inline int nbr_parse_opts(int argc, char **argv, struct nbr_opts *o)
{
	static const struct option lopts[] = {
		{ "graph", required_argument, NULL, 'g' },
		{ "hints", required_argument, NULL, 'H' },
		{ "persistent", no_argument, NULL, 'p' },
		{ "iters", required_argument, NULL, 'i' },
		{ "touch", no_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	static const size_t def[] = { 8, 64, 1024, 65536, 1048576 };
	int opt, i;

	o->graph = "stencil2d";
	o->hints = "none";
	o->persistent = 0;
	o->iters = 0;
	o->touch = 0;
	while ((opt = getopt_long(argc, argv, "g:H:pi:t", lopts, NULL)) != -1) {
		if (opt == 'g')
			o->graph = optarg;
		else if (opt == 'H')
			o->hints = optarg;
		else if (opt == 'p')
			o->persistent = 1;
		else if (opt == 'i' && atoi(optarg) > 0)
			o->iters = atoi(optarg);
		else if (opt == 't')
			o->touch = 1;
		else
			return 2;
	}
	o->nsizes = ou_parse_sizes(argc, argv, optind, o->sizes, def,
				   (int)(sizeof(def) / sizeof(def[0])));
	for (i = 0; i < o->nsizes; i++)
		if (o->sizes[i] > (size_t)1 << 30)
			return 2;	/* MPI counts are ints */
	return 0;
}

/* Timed iterations per size (--iters, or fewer as blocks grow): the
 * count itself with --iters, else the least (nbr_pace_next). */
static inline int nbr_iters(const struct nbr_opts *o, size_t size)
{
	if (o->iters)
		return o->iters;
	return size <= 4096 ? 500 : size <= 65536 ? 200 :
	       size <= 1048576 ? 50 : 20;
}

/*
 * Pacing: the warm-up runs rounds of calls; after each, rank 0 decides
 * (nbr_pace_next) and every rank gets its decision.  With --iters one
 * round of iters / 10 + 1 calls, then iters timed calls.  Without, the
 * rounds double until one takes NBR_WARM_US, and the timed calls last
 * about NBR_TIMED_US at that round's pace (at least nbr_iters(), at most
 * NBR_MAX_ITERS): 500 calls of a fraction of a microsecond were some
 * 100 us, whose mean moved by 2x from run to run.
 */
#define NBR_WARM_US	2000.0
#define NBR_TIMED_US	50000.0
#define NBR_MAX_ITERS	(1 << 21)

struct nbr_pace {
	int32_t calls;		/* the next warm-up round's */
	int32_t more;		/* another round (else time iters calls) */
	int32_t iters;
	int32_t warm;		/* warm-up calls so far */
};

static inline struct nbr_pace nbr_pace_first(const struct nbr_opts *o,
					     size_t size)
{
	int iters = nbr_iters(o, size);

	return (struct nbr_pace){ .calls = iters / 10 + 1, .more = 1,
				  .iters = iters };
}

/* Rank 0, after a round of pc->calls calls that took us. */
static inline void nbr_pace_next(const struct nbr_opts *o, double us,
				 struct nbr_pace *pc)
{
	double want;

	pc->warm += pc->calls;
	if (!o->iters && us < NBR_WARM_US && pc->calls < NBR_MAX_ITERS / 2) {
		pc->calls *= 2;
		return;
	}
	pc->more = 0;
	if (o->iters)
		return;
	want = NBR_TIMED_US * pc->calls / (us > 0 ? us : 1);
	if (want > pc->iters)
		pc->iters = want < NBR_MAX_ITERS ? (int32_t)want :
			    NBR_MAX_ITERS;
}

/* ------------------------------------------------------------ graphs */

enum nbr_kind { NBR_ER, NBR_STENCIL2D, NBR_STENCIL4D, NBR_HOTSPOT };

#define NBR_MAX_DIMS 4

struct nbr_spec {
	enum nbr_kind kind;
	double p;		/* er */
	uint64_t seed;		/* er */
	int n;			/* ranks */
	int ndims;		/* stencils */
	int dims[NBR_MAX_DIMS];
};

static inline uint64_t nbr_mix(uint64_t x)	/* splitmix64's finaliser */
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/*
 * MPI_Dims_create(n, nd) with no dimension fixed: the factorisation of n
 * into nd factors whose largest and smallest differ least (then: whose
 * largest is least), in non-increasing order.  An exhaustive search over
 * divisors: n is a rank count.
 */
static inline void nbr_dims_search(int n, int nd, int k, int maxf, int *cur,
				   int *best, int *bestspread)
{
	int f;

	if (k == nd - 1) {
		int spread;

		if (n > maxf)
			return;
		cur[k] = n;
		spread = cur[0] - cur[k];
		if (*bestspread < 0 || spread < *bestspread ||
		    (spread == *bestspread && cur[0] < best[0])) {
			*bestspread = spread;
			memcpy(best, cur, (size_t)nd * sizeof(*cur));
		}
		return;
	}
	for (f = maxf < n ? maxf : n; f >= 1; f--)
		if (n % f == 0) {
			cur[k] = f;
			nbr_dims_search(n / f, nd, k + 1, f, cur, best,
					bestspread);
		}
}

static inline void nbr_dims_create(int n, int nd, int *dims)
{
	int cur[NBR_MAX_DIMS], spread = -1;

	nbr_dims_search(n, nd, 0, n, cur, dims, &spread);
}

/* Parse spec for n ranks: 0, or -1 if it is not a graph. */
static inline int nbr_spec_parse(const char *s, int n, struct nbr_spec *sp)
{
	memset(sp, 0, sizeof(*sp));
	sp->n = n;
	if (!strncmp(s, "er:", 3)) {
		char *end;
		unsigned long long seed = 1;

		sp->kind = NBR_ER;
		sp->p = strtod(s + 3, &end);
		if (end == s + 3 || sp->p < 0 || sp->p > 1)
			return -1;
		if (*end == ':') {
			const char *q = end + 1;

			seed = strtoull(q, &end, 0);
			if (end == q)
				return -1;
		}
		if (*end)
			return -1;
		sp->seed = seed;
		return 0;
	}
	if (!strcmp(s, "stencil2d") || !strcmp(s, "stencil4d")) {
		sp->kind = s[7] == '2' ? NBR_STENCIL2D : NBR_STENCIL4D;
		sp->ndims = s[7] == '2' ? 2 : 4;
		nbr_dims_create(n, sp->ndims, sp->dims);
		return 0;
	}
	if (!strcmp(s, "hotspot")) {
		sp->kind = NBR_HOTSPOT;
		return 0;
	}
	return -1;
}

/* The graph's name for output lines: er:0.5:1, stencil2d:4x2, ... */
static inline void nbr_spec_name(const struct nbr_spec *sp, char *buf,
				 size_t len)
{
	int d, k;

	switch (sp->kind) {
	case NBR_ER:
		snprintf(buf, len, "er:%g:%llu", sp->p,
			 (unsigned long long)sp->seed);
		break;
	case NBR_STENCIL2D:
	case NBR_STENCIL4D:
		k = snprintf(buf, len, "stencil%dd:", sp->ndims);
		for (d = 0; d < sp->ndims && k > 0 && (size_t)k < len; d++)
			k += snprintf(buf + k, len - (size_t)k, d ? "x%d" : "%d",
				      sp->dims[d]);
		break;
	default:
		snprintf(buf, len, "hotspot");
	}
}

/* Is i -> j an edge of the Erdos-Renyi graph? */
static inline int nbr_er_edge(const struct nbr_spec *sp, int i, int j)
{
	uint64_t h;

	if (i == j)
		return 0;
	h = nbr_mix(nbr_mix(sp->seed) ^ ((uint64_t)(uint32_t)i << 32 |
					 (uint32_t)j));
	return (double)(h >> 11) * 0x1p-53 < sp->p;
}

/* The most neighbours a rank can have on either side. */
static inline int nbr_maxdeg(const struct nbr_spec *sp)
{
	if (sp->kind == NBR_STENCIL2D || sp->kind == NBR_STENCIL4D)
		return 2 * sp->ndims;
	return sp->n > 1 ? sp->n - 1 : 1;
}

/* Stencil: the rank one step (dir -1/+1) along dimension d from r. */
static inline int nbr_cart_shift(const struct nbr_spec *sp, int r, int d,
				 int dir)
{
	int c[NBR_MAX_DIMS], k, out = 0;

	for (k = sp->ndims - 1; k >= 0; k--) {	/* row-major: last fastest */
		c[k] = r % sp->dims[k];
		r /= sp->dims[k];
	}
	c[d] = (c[d] + dir + sp->dims[d]) % sp->dims[d];
	for (k = 0; k < sp->ndims; k++)
		out = out * sp->dims[k] + c[k];
	return out;
}

/* Rank r's destinations (out: nbr_maxdeg entries, or NULL): the count. */
static inline int nbr_dests(const struct nbr_spec *sp, int r, int *out)
{
	int j, d, k = 0;

	switch (sp->kind) {
	case NBR_ER:
		for (j = 0; j < sp->n; j++)
			if (nbr_er_edge(sp, r, j)) {
				if (out)
					out[k] = j;
				k++;
			}
		return k;
	case NBR_HOTSPOT:
		for (j = r ? 0 : 1; j < (r ? 1 : sp->n); j++) {
			if (out)
				out[k] = j;
			k++;
		}
		return k;
	default:
		for (d = 0; d < sp->ndims; d++) {
			if (out) {
				out[k] = nbr_cart_shift(sp, r, d, -1);
				out[k + 1] = nbr_cart_shift(sp, r, d, +1);
			}
			k += 2;
		}
		return k;
	}
}

/* Rank r's sources (out: nbr_maxdeg entries, or NULL): the count. */
static inline int nbr_sources(const struct nbr_spec *sp, int r, int *out)
{
	int i, k = 0;

	switch (sp->kind) {
	case NBR_ER:
		for (i = 0; i < sp->n; i++)
			if (nbr_er_edge(sp, i, r)) {
				if (out)
					out[k] = i;
				k++;
			}
		return k;
	case NBR_HOTSPOT:	/* symmetric */
	default:		/* a stencil's -x neighbour sends +x to us */
		return nbr_dests(sp, r, out);
	}
}

/* One rank's part of a graph. */
struct nbr_graph {
	int indeg, outdeg;
	int *src, *dst;		/* [indeg], [outdeg] (never NULL) */
	int *src_slot;		/* [indeg]: source i's block is its origin's
				 * block src_slot[i] (its destination slot) */
	long nedges;		/* of the whole graph */
};

static inline void nbr_graph_free(struct nbr_graph *g)
{
	free(g->src);
	free(g->dst);
	free(g->src_slot);
}

/* Rank's lists; 0, or -1 when out of memory. */
static inline int nbr_graph_build(const struct nbr_spec *sp, int rank,
				  struct nbr_graph *g)
{
	int m = nbr_maxdeg(sp), *odst = malloc((size_t)m * sizeof(int));
	int i, j, k, r;

	memset(g, 0, sizeof(*g));
	g->src = malloc((size_t)m * sizeof(int));
	g->dst = malloc((size_t)m * sizeof(int));
	g->src_slot = malloc((size_t)m * sizeof(int));
	if (!odst || !g->src || !g->dst || !g->src_slot) {
		free(odst);
		nbr_graph_free(g);
		return -1;
	}
	g->outdeg = nbr_dests(sp, rank, g->dst);
	g->indeg = nbr_sources(sp, rank, g->src);
	for (i = 0; i < g->indeg; i++) {
		int o = g->src[i], nd = nbr_dests(sp, o, odst);

		/* the k-th o among our sources is o's k-th edge to us */
		for (k = 0, j = 0; j < i; j++)
			k += g->src[j] == o;
		g->src_slot[i] = -1;
		for (j = 0; j < nd; j++)
			if (odst[j] == rank && k-- == 0) {
				g->src_slot[i] = j;
				break;
			}
	}
	g->nedges = 0;
	for (r = 0; r < sp->n; r++)
		g->nedges += nbr_dests(sp, r, NULL);
	free(odst);
	return 0;
}

/* ------------------------------------------------------------ data */

/*
 * Block slot of rank origin in phase stamp (0: warm-up, 1: the timed
 * iterations): 8-byte words of a hash of (origin, slot, stamp, size,
 * word index), the last word cut short.
 */
static inline uint64_t nbr_block_key(int origin, int slot, int stamp,
				     size_t size)
{
	return nbr_mix(((uint64_t)(uint32_t)origin << 32 | (uint32_t)slot) ^
		       nbr_mix((uint64_t)stamp << 48 ^ size));
}

static inline void nbr_fill(unsigned char *p, size_t len, uint64_t key)
{
	size_t i;

	for (i = 0; i < len; i += 8) {
		uint64_t w = nbr_mix(key + i);

		memcpy(p + i, &w, len - i < 8 ? len - i : 8);
	}
}

static inline int nbr_block_ok(const unsigned char *p, size_t len,
			       uint64_t key)
{
	size_t i;

	for (i = 0; i < len; i += 8) {
		uint64_t w = nbr_mix(key + i);

		if (memcmp(p + i, &w, len - i < 8 ? len - i : 8))
			return 0;
	}
	return 1;
}

/* This rank's send blocks of size bytes for phase stamp. */
static inline void nbr_fill_send(const struct nbr_graph *g, int rank,
				 unsigned char *sbuf, size_t size, int stamp)
{
	int j;

	for (j = 0; j < g->outdeg; j++)
		nbr_fill(sbuf + (size_t)j * size, size,
			 nbr_block_key(rank, j, stamp, size));
}

/*
 * --touch: a store into every line of this rank's send blocks before a
 * call, of the values they hold (the data check still holds), as an
 * application that computes its blocks between calls makes: a line a
 * reader copied straight from this buffer in the call before (CMA) is
 * then taken back from the reader's cache.  The call's time includes it.
 */
static inline void nbr_touch(unsigned char *sbuf, size_t bytes)
{
	volatile unsigned char *p = sbuf;
	size_t i;

	for (i = 0; i < bytes; i += 64)
		p[i] = p[i];
}

/* Received blocks that are not what their origin sent in phase stamp. */
static inline uint64_t nbr_check_recv(const struct nbr_graph *g,
				      const unsigned char *rbuf, size_t size,
				      int stamp)
{
	uint64_t bad = 0;
	int i;

	for (i = 0; i < g->indeg; i++)
		bad += g->src_slot[i] < 0 ||
		       !nbr_block_ok(rbuf + (size_t)i * size, size,
				     nbr_block_key(g->src[i], g->src_slot[i],
						   stamp, size));
	return bad;
}

/* FNV-1a over the rank's received bytes, its rank mixed in: summed over
 * ranks, the same in every program that delivered the same data. */
static inline uint64_t nbr_digest(int rank, const unsigned char *p,
				  size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)rank;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return nbr_mix(h);
}

/* ------------------------------------------------------------ results */

/* What each rank sends rank 0 per size. */
struct nbr_result {
	double us;		/* mean time per call */
	uint64_t bad;		/* blocks that failed the check */
	uint64_t digest;
};

/* Rank 0: the output line of one size from every rank's result,
 * "size us digest bad"; the number of bad blocks (a message on stderr
 * when there are any). */
static inline uint64_t nbr_report(const char *prog, size_t size,
				  const struct nbr_pace *pc,
				  const struct nbr_result *res, int n)
{
	double us = 0;
	uint64_t bad = 0, digest = 0;
	int r;

	printf("# size %zu: %d warm-up calls, %d timed\n", size, pc->warm,
	       pc->iters);
	for (r = 0; r < n; r++) {
		us = res[r].us > us ? res[r].us : us;
		bad += res[r].bad;
		digest += res[r].digest;
	}
	printf("%zu %.3f %016llx %llu\n", size, us,
	       (unsigned long long)digest, (unsigned long long)bad);
	fflush(stdout);
	if (bad)
		fprintf(stderr, "%s: size %zu: %llu received blocks wrong\n",
			prog, size, (unsigned long long)bad);
	return bad;
}

/* Rank 0's first lines: the graph and the run. */
static inline void nbr_header(const char *prog, const char *lib,
			      const struct nbr_spec *sp,
			      const struct nbr_graph *g,
			      const struct nbr_opts *o)
{
	char name[96];

	nbr_spec_name(sp, name, sizeof(name));
	printf("# %s: %s\n", prog, lib);
	printf("# graph %s ranks %d edges %ld hints %s persistent %d iters %s touch %d\n",
	       name, sp->n, g->nedges, o->hints, o->persistent,
	       o->iters ? "fixed" : "paced", o->touch);
	printf("# size us digest bad   (us: max over ranks of the mean per call; bad: received blocks wrong)\n");
}

#endif
