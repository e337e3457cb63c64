/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * overlap - how much of a nonblocking transfer each side can spend
 * computing, per rendezvous protocol (COOP_RNDV) and progress mode
 * (COOP_PROGRESS: seed 002 sec. 4, manual progress vs. progress threads).
 *
 *   scripts/cooprun -n 2 bench/bin/overlap [-t osu|origin-target]
 *       [-p manual|thread|thread-sleep] [-c CPU|peer|none] [-T us] [-v]
 *       [-i iters] [-r repeats] [sizes...]
 *
 *   -p  coop_set_progress() after init: who advances the transfers while
 *       a rank computes (default: COOP_PROGRESS, else manual).
 *   -c  the progress thread's CPU (default: COOP_PROGRESS_CPU, else not
 *       bound: it inherits the CPU scripts/cooprun bound its rank to, so
 *       on 2 CPUs 2 ranks x 2 threads oversubscribe them and the thread
 *       competes with its own rank's computing thread).  peer: the other
 *       rank's CPU, (rank + 1) mod #CPUs (free while that rank waits).
 *   -v  (-t osu) per side, comment lines: bytes and time each rank's CPU
 *       copied per transfer (coop_get_stats), its sleeps; how much of it
 *       the measured rank had copied when its compute loop ended (read
 *       right after the loop: a call that takes the state lock); the share
 *       of the loop's time the computing thread was on a CPU (below 100 %:
 *       a progress thread on the same CPU took the rest - the wall-clock
 *       loop hides that from the overlap figure); t_total - t_cpu per
 *       transfer (median, mean, max: one slow transfer in ten, e.g. a
 *       progress thread that slept through the transfer, costs a tenth of
 *       the overlap) and the post's own time.
 * The first line is a comment: "# overlap: test T progress MODE cpu C
 * rndv P" (comment lines start with "#"); then one line per size.
 *
 * -t osu (default): OSU-style overlap ([Chakraborty18] Fig. 2, 5, 6).
 * Rank 0 sends, rank 1 receives.  Each side is measured in turn while the
 * other one has already posted its matching operation and waits in
 * coop_wait() (it is ready and progresses):
 *   t_pure   post (coop_isend / coop_irecv) + coop_wait, nothing else;
 *   t_total  post, compute (a busy loop that makes no library call) for
 *            t_pure, then coop_wait; t_cpu is the compute time.
 *   overlap = 100 * (1 - (t_total - t_cpu) / t_pure), clamped to 0..100:
 *            the share of the transfer the side could spend computing; the
 *            rest it spent copying or polling.
 * Prints "size send_overlap_% recv_overlap_% send_pure_us recv_pure_us"
 * per size: means over iters transfers, medians over repeats.
 *
 * -t origin-target: seed 002's overlap test (its Code 2 / Code 3: the
 * origin MPI_Puts, sleeps 2 s and flushes, comm_time = put .. flush;
 * the target sleeps 1 s, looks at the data, then sleeps 2 s more,
 * comp_time), adapted to point to point.  Both ranks post their operation
 * right after a barrier; then
 *   origin  computes W (a fixed amount of work that takes T us on an idle
 *           CPU: a loop calibrated before init, no library call), then
 *           coop_wait; comm_time = post .. completion;
 *   target  computes W/2, then W more (comp_time: that second part's
 *           time), then coop_wait (target_wait).
 * Neither side calls the library while it computes, and the target
 * computes until well after the origin is done computing.  What it shows:
 *   comm_time ~ T             the transfer moved while both computed:
 *                             independent progress (seed 002: "comm_time
 *                             and comp_time approximately the same");
 *   comm_time ~ 1.5 T + copy  it waited for the target's coop_wait: the
 *                             weak progress rule - with manual progress
 *                             the target's library calls copy (RGET), or
 *                             answer the RTS (RPUT, COOP);
 *   comm_time ~ T + copy      the origin copied alone in its own wait
 *                             (it needed nothing from the target: RGET
 *                             with the receiver as origin, RTR with the
 *                             sender as origin);
 *   origin_comp, comp_time > T  a progress thread on the computing
 *                             thread's CPU took CPU time from it: the
 *                             price of thread progress without a spare
 *                             core (unlike the OSU test's wall-clock
 *                             loop, fixed work shows it).
 * landed_% is the share of the message (64 probes spread over it) that was
 * in the receiver's buffer when the receiver stopped computing, before any
 * library call since its post.  Both roles are measured: the sender as
 * origin (its coop_isend is the put) and the receiver as origin.  W: T =
 * -T us, else 4 x t_pure (the post + coop_wait time of the size, measured
 * first; at least 100 us).  Prints per size (means over iters, medians
 * over repeats, times in us):
 *   size T  s_comm s_origin_comp s_target_comp s_target_wait s_landed_%
 *           r_comm r_origin_comp r_target_comp r_target_wait r_landed_%
 * s_: the sender is the origin (rank 0), r_: the receiver is (rank 1).
 * On 2 CPUs, 4 MiB, RGET: manual 1.75 T (sender origin) and 0 % landed;
 * thread-sleep about 1.05 T and 100 % (the RTS wakes the target's thread,
 * which copies); thread (polling, on its rank's CPU) about 1.6 T: the
 * computing thread keeps the CPU for its whole time slice.
 */
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

static const size_t def_sizes[] = { 16384, 65536, 262144, 1048576, 4194304,
				    16777216 };

static const char *const mode_names[] = { "manual", "thread", "thread-sleep" };

/* -v: what the measured side's compute loops saw (see xfer) */
static int verbose;
static double busy_wall, busy_cpu, busy_copied;
#define MAX_GAPS 4096
static double gaps[MAX_GAPS];	/* -v: post + wait: t_total - t_cpu */
static double posts[MAX_GAPS];	/* -v: the post's time */
static int ngaps;

/* -v: bytes this rank's CPU copied so far (coop_get_stats) */
static double copied(coop_context_t *ctx)
{
	coop_stats_t st;

	if (!verbose)
		return 0;
	CHECK(coop_get_stats(ctx, &st));
	return (double)st.copy_bytes;
}

static double thread_cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

/* Both ranks: v[0..n-1] of rank 1 into v[n..2n-1] of rank 0. */
static void gather_doubles(coop_context_t *ctx, int rank, double *v, int n,
			   int tag)
{
	if (rank == 1)
		CHECK(coop_send(ctx, v, (size_t)n * sizeof(*v), 0, tag,
				SYNC_COMM, 0));
	else
		CHECK(coop_recv(ctx, v + n, (size_t)n * sizeof(*v), 1, tag,
				SYNC_COMM, 0, NULL));
}

static void post(coop_context_t *ctx, int rank, char *buf, size_t size,
		 coop_request_t **req)
{
	if (rank == 0)
		CHECK(coop_isend(ctx, buf, size, 1, 5, BENCH_COMM, 0, req));
	else
		CHECK(coop_irecv(ctx, buf, size, 0, 5, BENCH_COMM, 0, req));
}

/* ------------------------------------------------------------ -t osu */

/*
 * One transfer.  The side that is not measured posts, syncs, waits and
 * returns 0; the measured side syncs, posts, computes compute_us, waits
 * and returns the time from post to completion (adds the compute time to
 * *cpu_us).
 */
static double xfer(coop_context_t *ctx, int rank, int measured, char *buf,
		   size_t size, double compute_us, double *cpu_us)
{
	coop_request_t *req;
	double t0, c0, u0, b0, busy = 0;

	if (rank != measured) {
		post(ctx, rank, buf, size, &req);
		barrier2(ctx, rank);
		CHECK(coop_wait(&req, COOP_STATUS_IGNORE));
		return 0;
	}
	barrier2(ctx, rank);
	b0 = copied(ctx);
	t0 = now_us();
	post(ctx, rank, buf, size, &req);
	if (compute_us > 0 && verbose && ngaps < MAX_GAPS)
		posts[ngaps] = now_us() - t0;
	if (compute_us > 0) {
		u0 = verbose ? thread_cpu_us() : 0;
		c0 = now_us();
		busy_us(compute_us);
		busy = now_us() - c0;
		*cpu_us += busy;
		if (verbose) {	/* calls that cost time of their own */
			busy_wall += busy;
			busy_cpu += thread_cpu_us() - u0;
			busy_copied += copied(ctx) - b0;
		}
	}
	CHECK(coop_wait(&req, COOP_STATUS_IGNORE));
	if (compute_us > 0 && verbose && ngaps < MAX_GAPS)
		gaps[ngaps++] = now_us() - t0 - busy;
	return now_us() - t0;
}

/* Mean time per transfer of iters transfers (after warm ones). */
static double series(coop_context_t *ctx, int rank, int measured, char *buf,
		     size_t size, int iters, int warm, double compute_us,
		     double *cpu_mean)
{
	double sum = 0, cpu = 0, dummy = 0;
	int i;

	for (i = 0; i < warm; i++)
		xfer(ctx, rank, measured, buf, size, compute_us, &dummy);
	for (i = 0; i < iters; i++)
		sum += xfer(ctx, rank, measured, buf, size, compute_us, &cpu);
	if (cpu_mean)
		*cpu_mean = cpu / iters;
	return sum / iters;
}

/* Rank 1 passes *v to rank 0 when it was measured there (tag: which). */
static void share_measured(coop_context_t *ctx, int rank, int measured,
			   double *v, int tag)
{
	if (measured != 1)
		return;
	if (rank == 1)
		CHECK(coop_send(ctx, v, sizeof(*v), 0, tag, SYNC_COMM, 0));
	else
		CHECK(coop_recv(ctx, v, sizeof(*v), 1, tag, SYNC_COMM, 0,
				NULL));
}

/*
 * -v: each rank's copy work per transfer during the compute series (the
 * statistics were reset before them; n transfers), and the measured
 * side's CPU share of its compute loops.  Rank 0 prints.
 */
static void print_side_stats(coop_context_t *ctx, int rank, int measured,
			     size_t size, int n)
{
	coop_stats_t st;
	double v[18], mean = 0, max = 0;
	int r;

	CHECK(coop_get_stats(ctx, &st));
	v[0] = (double)st.copy_bytes / n;
	v[1] = (double)st.copy_ns / 1e3 / n;
	v[2] = (double)st.sleeps / n;
	v[3] = rank == measured && busy_wall > 0 ?
	       100.0 * busy_cpu / busy_wall : -1;
	v[4] = busy_copied / n;
	for (r = 0; r < ngaps; r++) {
		mean += gaps[r] / ngaps;
		if (gaps[r] > max)
			max = gaps[r];
	}
	v[5] = ngaps ? median(gaps, ngaps) : 0;
	v[6] = mean;
	v[7] = max;
	v[8] = ngaps ? median(posts, ngaps) : 0;
	gather_doubles(ctx, rank, v, 9, 8);
	if (rank)
		return;
	printf("# %s side, %zu B:", measured ? "recv" : "send", size);
	for (r = 0; r < 2; r++)
		printf(" rank %d copied %.0f B in %.1f us, %.1f sleeps per "
		       "transfer;", r, v[9 * r], v[9 * r + 1], v[9 * r + 2]);
	printf(" rank %d copied %.0f B of them while it computed, its "
	       "computing thread on a CPU %.0f %% of the loop; t_total - "
	       "t_cpu (post, wait): median %.1f us, mean %.1f us, "
	       "max %.1f us; the post alone: median %.1f us\n", measured,
	       v[9 * measured + 4], v[9 * measured + 3], v[9 * measured + 5],
	       v[9 * measured + 6], v[9 * measured + 7], v[9 * measured + 8]);
}

/*
 * Overlap of side `measured` (0 sender, 1 receiver), computed on that
 * rank and sent to rank 0 (which prints).  *pure_out: t_pure.
 */
static double side(coop_context_t *ctx, int rank, int measured, char *buf,
		   size_t size, int iters, int reps, double *pure_out)
{
	double pure[64], ovl[64], res[2] = { 0, 0 };
	int r;

	for (r = 0; r < reps; r++)
		pure[r] = series(ctx, rank, measured, buf, size, iters,
				 iters / 10 + 1, 0, NULL);
	/* both ranks must agree on the compute time: the measured rank's */
	if (rank == measured)
		res[1] = median(pure, reps);
	share_measured(ctx, rank, measured, &res[1], 6);
	barrier2(ctx, rank);
	CHECK(coop_reset_stats(ctx));
	busy_wall = busy_cpu = busy_copied = 0;
	ngaps = 0;
	for (r = 0; r < reps; r++) {
		double cpu = 0, total;

		total = series(ctx, rank, measured, buf, size, iters, 1,
			       res[1], &cpu);
		if (rank != measured || res[1] <= 0) {
			ovl[r] = 0;
			continue;
		}
		ovl[r] = 100.0 * (1.0 - (total - cpu) / res[1]);
		if (ovl[r] < 0)
			ovl[r] = 0;
		if (ovl[r] > 100)
			ovl[r] = 100;
	}
	if (verbose)
		print_side_stats(ctx, rank, measured, size, reps * (iters + 1));
	if (rank == measured)
		res[0] = median(ovl, reps);
	share_measured(ctx, rank, measured, &res[0], 7);
	*pure_out = res[1];
	return res[0];
}

static void run_osu(coop_context_t *ctx, int rank, const struct bench_args *a)
{
	int s;

	for (s = 0; s < a->nsizes; s++) {
		char *buf = bench_alloc(a->sizes[s]);
		int it = bench_iters(a, a->sizes[s], 200, 50, 10);
		double ps, pr, os, orv;

		os = side(ctx, rank, 0, buf, a->sizes[s], it, a->reps, &ps);
		orv = side(ctx, rank, 1, buf, a->sizes[s], it, a->reps, &pr);
		if (rank == 0)
			printf("%zu %.1f %.1f %.3f %.3f\n", a->sizes[s], os, orv,
			       ps, pr);
		fflush(stdout);
		free(buf);
	}
}

/* ---------------------------------------------------- -t origin-target */

/* Compute: n steps of a dependent chain no compiler removes, no memory
 * traffic, no library call. */
static volatile uint64_t work_sink;
static double work_ns;		/* ns per step on an idle CPU */

static void work(uint64_t n)
{
	uint64_t x = work_sink | 1, i;

	for (i = 0; i < n; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	work_sink = x;
}

/* Before init (no progress thread yet): the fastest of a few timings. */
static void calibrate_work(void)
{
	const uint64_t n = 2000000;
	double best = 0;
	int k;

	work(n);
	for (k = 0; k < 5; k++) {
		double t0 = now_us(), t;

		work(n);
		t = (now_us() - t0) * 1e3 / (double)n;
		if (!k || t < best)
			best = t;
	}
	work_ns = best > 0 ? best : 1;
}

static uint64_t work_steps(double us)
{
	return (uint64_t)(us * 1e3 / work_ns);
}

#define PROBES 64

/* Probe offsets: PROBES bytes spread over the message. */
static size_t probe_at(size_t size, int k)
{
	return size <= PROBES ? (size_t)k % (size ? size : 1) :
	       (size / PROBES) * (size_t)k + size / PROBES - 1;
}

/* Share (%) of the probes that hold this transfer's value v. */
static double landed(const char *buf, size_t size, unsigned char v)
{
	int k, n = 0;

	if (!size)
		return 100;
	for (k = 0; k < PROBES; k++)
		n += ((const volatile unsigned char *)buf)[probe_at(size, k)] == v;
	return 100.0 * n / PROBES;
}

/* Sender: the value of transfer seq at the probes; receiver: clear them. */
static void mark(char *buf, size_t size, int rank, unsigned seq)
{
	unsigned char v = (unsigned char)(seq % 254 + 1);
	int k;

	if (!size)
		return;
	for (k = 0; k < PROBES; k++)
		buf[probe_at(size, k)] = rank == 0 ? (char)v : 0;
}

enum { OT_COMM, OT_OCOMP, OT_TCOMP, OT_TWAIT, OT_LANDED, OT_N };

/* Computes w steps and adds their time to *t; then the receiver looks how
 * much of the message landed meanwhile (acc[OT_LANDED]). */
static void ot_compute(int rank, uint64_t w, double *t, const char *buf,
		       size_t size, unsigned seq, double *acc)
{
	double c0 = now_us();

	work(w);
	*t += now_us() - c0;
	if (rank == 1)
		acc[OT_LANDED] += landed(buf, size,
					 (unsigned char)(seq % 254 + 1));
}

/*
 * One origin/target transfer; origin: 0 (the sender) or 1 (the receiver).
 * Adds this rank's part of OT_* to acc.
 */
static void ot_xfer(coop_context_t *ctx, int rank, int origin, char *buf,
		    size_t size, double t_us, unsigned seq, double *acc)
{
	coop_request_t *req;
	uint64_t w = work_steps(t_us);
	double s, c0;

	mark(buf, size, rank, seq);
	barrier2(ctx, rank);
	s = now_us();
	post(ctx, rank, buf, size, &req);
	if (rank == origin) {
		ot_compute(rank, w, &acc[OT_OCOMP], buf, size, seq, acc);
		CHECK(coop_wait(&req, COOP_STATUS_IGNORE));
		acc[OT_COMM] += now_us() - s;
		return;
	}
	work(w / 2);
	ot_compute(rank, w, &acc[OT_TCOMP], buf, size, seq, acc);
	c0 = now_us();
	CHECK(coop_wait(&req, COOP_STATUS_IGNORE));
	acc[OT_TWAIT] += now_us() - c0;
}

/* Medians over reps of the means over iters, of both ranks, at rank 0:
 * out[OT_*]. */
static void ot_role(coop_context_t *ctx, int rank, int origin, char *buf,
		    size_t size, double t_us, int iters, int reps,
		    unsigned *seq, double *out)
{
	double per[OT_N][64], mine[OT_N], both[2 * OT_N];
	int r, i, k;

	for (r = 0; r < reps; r++) {
		double acc[OT_N] = { 0 };

		ot_xfer(ctx, rank, origin, buf, size, t_us, (*seq)++, acc);
		for (k = 0; k < OT_N; k++)
			acc[k] = 0;	/* the first one warms up */
		for (i = 0; i < iters; i++)
			ot_xfer(ctx, rank, origin, buf, size, t_us, (*seq)++,
				acc);
		for (k = 0; k < OT_N; k++)
			per[k][r] = acc[k] / iters;
	}
	for (k = 0; k < OT_N; k++)
		mine[k] = median(per[k], reps);
	memcpy(both, mine, sizeof(mine));
	gather_doubles(ctx, rank, both, OT_N, 9);
	if (rank)
		return;
	/* each value from the rank that measured it */
	for (k = 0; k < OT_N; k++) {
		int from = k == OT_COMM || k == OT_OCOMP ? origin :
			   k == OT_LANDED ? 1 : 1 - origin;

		out[k] = both[from * OT_N + k];
	}
}

static void run_origin_target(coop_context_t *ctx, int rank,
			      const struct bench_args *a, double fixed_t)
{
	unsigned seq = 0;
	int s;

	if (rank == 0)
		printf("# size T_us s_comm_us s_origin_comp_us "
		       "s_target_comp_us s_target_wait_us s_landed_pct "
		       "r_comm_us r_origin_comp_us r_target_comp_us "
		       "r_target_wait_us r_landed_pct\n");
	for (s = 0; s < a->nsizes; s++) {
		size_t size = a->sizes[s];
		char *buf = bench_alloc(size);
		int it = bench_iters(a, size, 100, 20, 10), r;
		double t = fixed_t, pure[64], sv[OT_N], rv[OT_N];

		if (t <= 0) {
			for (r = 0; r < a->reps; r++)
				pure[r] = series(ctx, rank, 0, buf, size, it,
						 it / 10 + 1, 0, NULL);
			/* rank 0 measured: its T for both */
			t = 4 * median(pure, a->reps);
			if (t < 100)
				t = 100;
			if (rank == 0)
				CHECK(coop_send(ctx, &t, sizeof(t), 1, 6,
						SYNC_COMM, 0));
			else
				CHECK(coop_recv(ctx, &t, sizeof(t), 0, 6,
						SYNC_COMM, 0, NULL));
		}
		ot_role(ctx, rank, 0, buf, size, t, it, a->reps, &seq, sv);
		ot_role(ctx, rank, 1, buf, size, t, it, a->reps, &seq, rv);
		if (rank == 0)
			printf("%zu %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.1f "
			       "%.1f %.1f %.1f\n", size, t, sv[OT_COMM],
			       sv[OT_OCOMP], sv[OT_TCOMP], sv[OT_TWAIT],
			       sv[OT_LANDED], rv[OT_COMM], rv[OT_OCOMP],
			       rv[OT_TCOMP], rv[OT_TWAIT], rv[OT_LANDED]);
		fflush(stdout);
		free(buf);
	}
}

/* ------------------------------------------------------------ main */

struct opts {
	int origin_target;	/* -t */
	int mode;		/* -p, -1: the library's (COOP_PROGRESS) */
	const char *cpu;	/* -c, NULL: the library's */
	double t_us;		/* -T */
};

static int usage(void)
{
	fprintf(stderr, "usage: overlap [-t osu|origin-target] "
		"[-p manual|thread|thread-sleep] [-c CPU|peer|none] [-T us] "
		"[-v] [-i iters] [-r repeats] [sizes...]\n");
	return 2;
}

static int parse(int argc, char **argv, struct bench_args *a, struct opts *o)
{
	int opt, k;

	while ((opt = getopt(argc, argv, "i:r:t:p:c:T:v")) != -1) {
		switch (opt) {
		case 'i':
			a->iters = atoi(optarg);
			break;
		case 'r':
			a->reps = atoi(optarg);
			break;
		case 't':
			if (!strcmp(optarg, "origin-target"))
				o->origin_target = 1;
			else if (strcmp(optarg, "osu"))
				return usage();
			break;
		case 'p':
			for (k = 0; k < 3 && strcmp(optarg, mode_names[k]); k++)
				;
			if (k == 3)
				return usage();
			o->mode = k;
			break;
		case 'c':
			o->cpu = optarg;
			break;
		case 'T':
			o->t_us = atof(optarg);
			break;
		case 'v':
			verbose = 1;
			break;
		default:
			return usage();
		}
	}
	if (a->reps < 1 || a->reps > 64)
		a->reps = 5;
	a->nsizes = parse_sizes(argc, argv, optind, a->sizes, def_sizes,
				(int)(sizeof(def_sizes) / sizeof(def_sizes[0])));
	return 0;
}

/* -p / -c: the progress mode and its thread's CPU; the header line. */
static void set_progress(coop_context_t *ctx, int rank, const struct opts *o)
{
	const char *env = getenv("COOP_PROGRESS_CPU");
	char cpu_s[16] = "none";
	int mode, cpu = -1;

	CHECK(coop_get_progress(ctx, &mode));
	if (o->cpu) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		if (!strcmp(o->cpu, "peer"))
			cpu = (int)((rank + 1) % (n > 0 ? n : 1));
		else if (strcmp(o->cpu, "none"))
			cpu = atoi(o->cpu);
	} else if (env && *env && strcmp(env, "none")) {
		cpu = atoi(env);
	}
	if (o->mode >= 0 || o->cpu)
		CHECK(coop_set_progress(ctx, o->mode >= 0 ? o->mode : mode,
					cpu));
	CHECK(coop_get_progress(ctx, &mode));
	if (mode != COOP_PROGRESS_MANUAL && cpu >= 0)
		snprintf(cpu_s, sizeof(cpu_s), "%d", cpu);
	if (rank == 0)
		printf("# overlap: test %s progress %s cpu %s%s rndv %s\n",
		       o->origin_target ? "origin-target" : "osu",
		       mode >= 0 && mode < 3 ? mode_names[mode] : "?", cpu_s,
		       o->cpu && !strcmp(o->cpu, "peer") ? " (peer)" : "",
		       bench_rndv());
}

int main(int argc, char **argv)
{
	coop_context_t *ctx;
	struct bench_args a = { .reps = 5, .win = 0 };
	struct opts o = { .mode = -1 };
	int rank, size;

	if (parse(argc, argv, &a, &o))
		return 2;
	if (o.origin_target)
		calibrate_work();
	ctx = bench_init(&rank, &size);
	if (size != 2) {
		fprintf(stderr, "overlap: run with exactly 2 ranks\n");
		return 2;
	}
	set_progress(ctx, rank, &o);
	fflush(stdout);
	if (o.origin_target)
		run_origin_target(ctx, rank, &a, o.t_us);
	else
		run_osu(ctx, rank, &a);
	barrier2(ctx, rank);
	CHECK(coop_finalize(ctx));
	return 0;
}
