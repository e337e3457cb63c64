/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mpi_peer - the coopmpi benchmarks' methodology in plain MPI, to measure
 * the MPI libraries users already run on the same machine in the same run.
 * Built once per MPI (bench/Makefile.suite: mpi_peer.openmpi with
 * mpicc.openmpi, mpi_peer.mpich with mpicc.mpich):
 *
 *   mpirun -np N bench/bin/mpi_peer.X -t lat|bw|bibw|ring|isring|alltoall
 *                  [-i iters | -b bytes] [-r repeats] [-w window] [-V]
 *                  [sizes...]
 *
 *   lat   osu_latency: ping-pong with MPI_Send/MPI_Recv, one-way latency
 *         (round trip / 2) in us          (= bench/pingpong)
 *   bw    osu_bw: window of 64 MPI_Isend/MPI_Irecv, then a 4-byte ack,
 *         MB/s                            (= bench/bw)
 *   bibw  osu_bibw: both ranks post 64 MPI_Irecv and 64 MPI_Isend, MB/s of
 *         both directions                 (= bench/bibw)
 *   ring  every rank sends to the next rank and receives from the
 *         previous one at once (MPI_Sendrecv), MB/s of all ranks
 *   isring  the same with the send posted first: MPI_Isend, MPI_Irecv,
 *         MPI_Waitall
 *   alltoall  MPI_Alltoall with SIZE bytes for every other rank, MB/s of
 *         the bytes that leave their rank
 *
 * lat, bw and bibw take exactly 2 ranks; the others 2 or more,
 * their MB/s over the time of the slowest rank (every rank must have
 * received all its data).
 * Same iteration counts, warm-up and repeats as the libcoopmpi programs;
 * prints "size value" per size (the median over repeats).  -b BYTES (64k,
 * 256m, ...) sets the iterations of each size instead, so that a rank
 * sends about BYTES a repeat: a small message's repeat then lasts as long
 * as a large one's, and is as far above the clock's and the scheduler's
 * noise.  -V first
 * prints "# " and the first line of MPI_Get_library_version().
 */
#include <limits.h>
#include <mpi.h>
#include <unistd.h>

#include "osu_util.h"

#define MAX_WINDOW 256

enum test { T_LAT, T_BW, T_BIBW, T_RING, T_ALLTOALL, T_ISRING };

static const size_t def_sizes[] = { 1, 8, 1024, 65536, 1048576, 4194304 };

static void check(int rc, const char *what)
{
	if (rc != MPI_SUCCESS) {
		fprintf(stderr, "mpi_peer: %s failed (%d)\n", what, rc);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
}

static double run_lat(int rank, char *buf, int size, int iters, int warm)
{
	int peer = 1 - rank, i;
	double t0 = 0;

	check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
	for (i = 0; i < warm + iters; i++) {
		if (i == warm)
			t0 = ou_now_us();
		if (rank == 0) {
			check(MPI_Send(buf, size, MPI_CHAR, peer, 1,
				       MPI_COMM_WORLD), "MPI_Send");
			check(MPI_Recv(buf, size, MPI_CHAR, peer, 1,
				       MPI_COMM_WORLD, MPI_STATUS_IGNORE),
			      "MPI_Recv");
		} else {
			check(MPI_Recv(buf, size, MPI_CHAR, peer, 1,
				       MPI_COMM_WORLD, MPI_STATUS_IGNORE),
			      "MPI_Recv");
			check(MPI_Send(buf, size, MPI_CHAR, peer, 1,
				       MPI_COMM_WORLD), "MPI_Send");
		}
	}
	return (ou_now_us() - t0) / (2.0 * iters);
}

/*
 * GCC 12 takes MPICH's MPI_STATUSES_IGNORE ((MPI_Status *)1) for a
 * zero-sized array (-Wstringop-overflow false positive): silence it here.
 */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
static void waitall(int n, MPI_Request *req)
{
	check(MPI_Waitall(n, req, MPI_STATUSES_IGNORE), "MPI_Waitall");
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

static void bw_window(int rank, char *sbuf, char *rbuf, int size, int win,
		      enum test t)
{
	MPI_Request req[2 * MAX_WINDOW];
	int peer = 1 - rank, i, n = 0, ack = 0;

	if (t == T_BIBW) {
		for (i = 0; i < win; i++)
			check(MPI_Irecv(rbuf, size, MPI_CHAR, peer, 4,
					MPI_COMM_WORLD, &req[n++]), "MPI_Irecv");
		for (i = 0; i < win; i++)
			check(MPI_Isend(sbuf, size, MPI_CHAR, peer, 4,
					MPI_COMM_WORLD, &req[n++]), "MPI_Isend");
		waitall(n, req);
		return;
	}
	for (i = 0; i < win; i++) {
		if (rank == 0)
			check(MPI_Isend(sbuf, size, MPI_CHAR, 1, 2,
					MPI_COMM_WORLD, &req[n++]), "MPI_Isend");
		else
			check(MPI_Irecv(rbuf, size, MPI_CHAR, 0, 2,
					MPI_COMM_WORLD, &req[n++]), "MPI_Irecv");
	}
	waitall(n, req);
	if (rank == 0)
		check(MPI_Recv(&ack, 1, MPI_INT, 1, 3, MPI_COMM_WORLD,
			       MPI_STATUS_IGNORE), "MPI_Recv");
	else
		check(MPI_Send(&ack, 1, MPI_INT, 0, 3, MPI_COMM_WORLD),
		      "MPI_Send");
}

static double run_bw(int rank, char *sbuf, char *rbuf, int size, int iters,
		     int warm, int win, enum test t)
{
	double t0 = 0;
	int i;

	check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
	for (i = 0; i < warm + iters; i++) {
		if (i == warm)
			t0 = ou_now_us();
		bw_window(rank, sbuf, rbuf, size, win, t);
	}
	return (t == T_BIBW ? 2.0 : 1.0) * size * win * iters /
	       (ou_now_us() - t0);
}

/* isring's step: the send posted before the receive */
static void isend_irecv(char *sbuf, char *rbuf, int size, int next, int prev)
{
	MPI_Request r[2];
	MPI_Status st[2];	/* MPICH's MPI_STATUSES_IGNORE upsets GCC */

	check(MPI_Isend(sbuf, size, MPI_CHAR, next, 5, MPI_COMM_WORLD, &r[0]),
	      "MPI_Isend");
	check(MPI_Irecv(rbuf, size, MPI_CHAR, prev, 5, MPI_COMM_WORLD, &r[1]),
	      "MPI_Irecv");
	check(MPI_Waitall(2, r, st), "MPI_Waitall");
}

/*
 * run_exchange: ring, isring or alltoall, ITERS times after WARM; the MB/s of the
 * bytes every rank sent to others, over the slowest rank's time
 */
static double run_exchange(int rank, int nranks, char *sbuf, char *rbuf,
			   int size, int iters, int warm, enum test t)
{
	int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
	double t0 = 0, mine, slowest, bytes;
	int i;

	check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
	for (i = 0; i < warm + iters; i++) {
		if (i == warm)
			t0 = ou_now_us();
		if (t == T_RING)
			check(MPI_Sendrecv(sbuf, size, MPI_CHAR, next, 5,
					   rbuf, size, MPI_CHAR, prev, 5,
					   MPI_COMM_WORLD, MPI_STATUS_IGNORE),
			      "MPI_Sendrecv");
		else if (t == T_ISRING)
			isend_irecv(sbuf, rbuf, size, next, prev);
		else
			check(MPI_Alltoall(sbuf, size, MPI_CHAR, rbuf, size,
					   MPI_CHAR, MPI_COMM_WORLD),
			      "MPI_Alltoall");
	}
	mine = ou_now_us() - t0;
	check(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX,
			    MPI_COMM_WORLD), "MPI_Allreduce");
	bytes = (double)size * nranks * (t == T_ALLTOALL ? nranks - 1 : 1);
	return bytes * iters / slowest;
}

static void usage(void)
{
	fprintf(stderr, "usage: mpi_peer -t lat|bw|bibw|ring|isring|alltoall [-i iters | -b bytes] [-r repeats] [-w window] [-V] [sizes...]\n");
	MPI_Abort(MPI_COMM_WORLD, 2);
}

static size_t checked_size(size_t size)
{
	if (size > (size_t)1 << 30) {
		fprintf(stderr, "mpi_peer: size %zu too large\n", size);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	return size;
}

static int parse_test(const char *name, enum test *t)
{
	static const char *const names[] = { "lat", "bw", "bibw", "ring",
					     "alltoall", "isring" };
	int i;

	for (i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++)
		if (!strcmp(name, names[i])) {
			*t = (enum test)i;
			return 1;
		}
	return 0;
}

/* iterations per repeat: as the libcoopmpi programs for lat, bw, bibw */
static int default_iters(enum test t, int size)
{
	static const int per_range[][3] = {
		[T_LAT] = { 10000, 500, 50 },
		[T_BW] = { 100, 20, 4 },
		[T_BIBW] = { 100, 20, 4 },
		[T_RING] = { 1000, 200, 40 },
		[T_ALLTOALL] = { 1000, 200, 40 },
		[T_ISRING] = { 1000, 200, 40 },
	};

	return per_range[t][size <= 65536 ? 0 : size <= 1048576 ? 1 : 2];
}

/* iterations for a rank to send about budget bytes, at least one */
static int budget_iters(enum test t, size_t size, int win, int nranks,
			size_t budget)
{
	size_t per_iter = size * (t == T_ALLTOALL ? (size_t)nranks - 1 :
				  t == T_BW || t == T_BIBW ? (size_t)win : 1);
	size_t it = budget / (per_iter ? per_iter : 1);

	return it < 1 ? 1 : it > INT_MAX ? INT_MAX : (int)it;
}

static int pair_only(enum test t)
{
	return t == T_LAT || t == T_BW || t == T_BIBW;
}

static double run_one(enum test t, int rank, int nranks, char *sbuf,
		      char *rbuf, int size, int it, int win)
{
	if (t == T_LAT)
		return run_lat(rank, sbuf, size, it, it / 10 + 1);
	if (t == T_RING || t == T_ISRING || t == T_ALLTOALL)
		return run_exchange(rank, nranks, sbuf, rbuf, size, it,
				    it / 10 + 1, t);
	return run_bw(rank, sbuf, rbuf, size, it, 2, win, t);
}

int main(int argc, char **argv)
{
	size_t sizes[OU_MAX_SIZES];
	int rank, nranks, n, s, r, opt, iters = 0, reps = 0, win = 64;
	int version = 0;
	size_t budget = 0;
	enum test t = T_LAT;
	double v[OU_MAX_REPS];

	check(MPI_Init(&argc, &argv), "MPI_Init");
	while ((opt = getopt(argc, argv, "t:i:b:r:w:V")) != -1) {
		switch (opt) {
		case 't':
			if (!parse_test(optarg, &t))
				usage();
			break;
		case 'i':
			iters = atoi(optarg);
			break;
		case 'b':
			budget = ou_parse_size(optarg);
			if (!budget)
				usage();
			break;
		case 'r':
			reps = atoi(optarg);
			break;
		case 'w':
			win = atoi(optarg);
			break;
		case 'V':
			version = 1;
			break;
		default:
			usage();
		}
	}
	if (reps < 1 || reps > OU_MAX_REPS)
		reps = t == T_LAT ? 11 : 7;
	if (win < 1 || win > MAX_WINDOW)
		win = 64;
	n = ou_parse_sizes(argc, argv, optind, sizes, def_sizes,
			   (int)(sizeof(def_sizes) / sizeof(def_sizes[0])));
	check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
	check(MPI_Comm_size(MPI_COMM_WORLD, &nranks), "MPI_Comm_size");
	if (nranks < 2 || (nranks != 2 && pair_only(t))) {
		if (rank == 0)
			fprintf(stderr, "mpi_peer: run with %s ranks\n",
				!pair_only(t) ?
				"2 or more" : "exactly 2");
		MPI_Finalize();
		return 2;
	}
	if (version && rank == 0) {
		char lib[MPI_MAX_LIBRARY_VERSION_STRING];
		int len;

		check(MPI_Get_library_version(lib, &len), "version");
		lib[strcspn(lib, "\n")] = 0;
		printf("# %s\n", lib);
	}
	for (s = 0; s < n; s++) {
		int size = (int)checked_size(sizes[s]);
		size_t len = sizes[s] * (t == T_ALLTOALL ? (size_t)nranks : 1);
		char *sbuf = ou_alloc(len), *rbuf = ou_alloc(len);
		int it = iters ? iters :
			 budget ? budget_iters(t, sizes[s], win, nranks,
						 budget) :
			 default_iters(t, size);

		for (r = 0; r < reps; r++)
			v[r] = run_one(t, rank, nranks, sbuf, rbuf, size, it,
				       win);
		if (rank == 0)
			printf(t == T_LAT ? "%zu %.3f\n" : "%zu %.1f\n",
			       sizes[s], ou_median(v, reps));
		fflush(stdout);
		free(sbuf);
		free(rbuf);
	}
	MPI_Finalize();
	return 0;
}
