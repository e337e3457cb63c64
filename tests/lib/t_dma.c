/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_dma.c - PROTO_DMA, RPUT by the provider's offload engine: the
 * two-rank data-integrity test (t_proto's sizes up to 4 MiB, unaligned,
 * receives posted before and after the sends) with COOP_RNDV=dma, and
 * with auto mode + COOP_OFFLOAD=1 (on both ranks, or on the sender only).
 *
 * With an engine (kmod provider, coopmpi.ko not loaded with dma=off: run
 * in the VM; or COOP_ENGINE=hca over Soft-RoCE, either provider:
 * scripts/vm-hca-tests.sh) the engine must have done every rendezvous
 * copy: its work (t_engine_done: sysfs dma_completed, the RDMA device's
 * sent packets) grew by at least their number and no CPU copy shows in
 * the load counters.  Without one (shm, or dma=off) the fallback must
 * have: RPUT (the sender's CPU copied everything) for COOP_RNDV=dma,
 * COOP-p2p for auto mode.  With an engine also: the ioctl + mmap'ed CQ
 * path (io_uring_setup refused by a seccomp filter), and a receive
 * completing while its sender computes (the engine's notification needs
 * no step of the sender).  Either way: more messages at once than the
 * engine takes and than the receiver has notification slots.
 *
 * PROTO_STRIPE (COOP_RNDV=stripe): 64 KiB..16 MiB, unaligned, receives
 * posted before and after the sends, with R = 1 and no minimum, and with
 * the measured R and the 1 MiB minimum, the engine never counting as
 * busy (COOP_OFFLOAD_BUSY=0).  With an engine both sides see
 * STRIPE (RPUT below the minimum), the engine got exactly the R/(1+R)
 * share (R = 1: half, page rounded) in stats.offload_bytes, the sender's
 * load counters show the rest, the engine's work grew; without one: RPUT,
 * nothing offloaded.  The measured R timed the CPU part's copy the way
 * the sends then copied it: through a window (stats.window_bytes) or by
 * the provider's copy, as COOP_VERBOSE's line says.  COOP_OFFLOAD_BUSY=1:
 * a send posted while another one's engine part is in flight goes by
 * RPUT.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>

#include "harness.h"
#include "tests.h"

#define SYSFS "/sys/kernel/coopmpi/"
#define MAX_SIZE (((size_t)4 << 20) + 5)
#define COMM 12

struct dma_case {
	const char *name;
	const char *const *env;
	size_t rndv_above;	/* larger messages go by rendezvous */
	int rput;		/* the fallback is RPUT (else COOP-p2p) */
};

static const char *const env_dma[] = { "COOP_RNDV=dma", NULL };
static const char *const env_dma_small[] = { "COOP_RNDV=dma",
	"COOP_EAGER_MAX=0", NULL };
static const char *const env_auto[] = { "COOP_OFFLOAD=1", NULL };
static const char *const env_auto_sender[] = { "R0:COOP_OFFLOAD=1", NULL };

static const struct dma_case cases[] = {
	{ "COOP_RNDV=dma", env_dma, 65536, 1 },
	{ "COOP_RNDV=dma, COOP_EAGER_MAX=0", env_dma_small, COOP_INLINE_MAX,
	  1 },
	{ "auto, COOP_OFFLOAD=1", env_auto, 65536, 0 },
	{ "auto, COOP_OFFLOAD=1 on the sender only", env_auto_sender, 65536,
	  0 },
};
#define NCASES (int)(sizeof(cases) / sizeof(cases[0]))

/* What rank 0 saw before anyone finalized (kmod clears a closed
 * endpoint's load slot). */
struct outcome {
	char prov[8];
	coop_load_t load[2];
	uint64_t offload_bytes;	/* rank 0's stats */
};

/* Rank 0, before anyone finalized (kmod clears a closed endpoint's load
 * slot): the provider and both ranks' load counters. */
static void record_loads(coop_context_t *ctx, char *prov, size_t len,
			 coop_load_t load[2])
{
	int i;

	snprintf(prov, len, "%s", coop_provider_name(ctx));
	for (i = 0; i < 2; i++)
		T_OK(coop_get_load(ctx, i, &load[i]));
}

static int sizes_load_rank(coop_context_t *ctx, int rank, int size,
			   void *arg)
{
	static const size_t max = MAX_SIZE;
	struct outcome *o = arg;

	proto_sizes_rank(ctx, rank, size, (void *)&max);
	t_barrier(ctx, rank, size);
	if (rank == 0)
		record_loads(ctx, o->prov, sizeof(o->prov), o->load);
	t_barrier(ctx, rank, size);
	return 0;
}

static void check_engine(const struct outcome *o, uint64_t dma_done,
			 int nrndv)
{
	if (!t_engine_hca())
		ck_assert_str_eq(o->prov, "kmod");
	ck_assert_msg(dma_done >= (uint64_t)nrndv,
		      "engine's work grew by %llu, %d rendezvous messages",
		      (unsigned long long)dma_done, nrndv);
	ck_assert_msg(!o->load[0].total_bytes && !o->load[1].total_bytes,
		      "a CPU copied: total_bytes %llu, %llu",
		      (unsigned long long)o->load[0].total_bytes,
		      (unsigned long long)o->load[1].total_bytes);
}

static void check_fallback(const struct dma_case *c, const struct outcome *o,
			   uint64_t bytes)
{
	uint64_t t0 = o->load[0].total_bytes, t1 = o->load[1].total_bytes;

	ck_assert_msg(t0 + t1 == bytes, "CPUs copied %llu + %llu bytes, "
		      "rendezvous carried %llu", (unsigned long long)t0,
		      (unsigned long long)t1, (unsigned long long)bytes);
	ck_assert_msg(!c->rput || !t1, "RPUT fallback, yet the receiver "
		      "copied %llu bytes", (unsigned long long)t1);
}

static void run_case(const struct dma_case *c, int engine)
{
	struct outcome *o = shared_alloc(sizeof(*o));
	uint64_t before = engine ? t_engine_done() : 0;
	int n;
	size_t bytes = proto_sizes_sum(c->rndv_above, MAX_SIZE, &n);

	fprintf(stderr, "dma: %s, %s\n", c->name,
		engine ? "offload engine" : "no engine: fallback");
	ck_assert_int_eq(run_ranks(2, c->env, sizes_load_rank, o, 120, NULL),
			 0);
	if (engine) {	/* two phases */
		ck_assert(before != UINT64_MAX);
		check_engine(o, t_engine_done() - before, 2 * n);
	}
	else
		check_fallback(c, o, 2 * (uint64_t)bytes);
	shared_free(o, sizeof(*o));
}

START_TEST(test_dma_sizes)
{
	run_case(&cases[_i], t_engine_present());
}
END_TEST

/* The ioctl + mmap'ed CQ path: io_uring_setup refused (EPERM, as with
 * kernel.io_uring_disabled=2) in this forked test and its ranks. */
START_TEST(test_dma_ioctl_path)
{
	static const int nr[] = { SYS_io_uring_setup };

	if (!t_engine_present() || t_engine_hca()) {
		fprintf(stderr, "dma ioctl path: no DMA channel: skipped\n");
		return;
	}
	ck_assert_int_eq(t_deny_syscalls(nr, 1, EPERM), 0);
	run_case(&cases[0], 1);
}
END_TEST

/*
 * More messages than the engine takes at once (its limit, 256 by
 * default: copies wait in the library) and than the receiver has
 * notification slots (1024: the rest go by RPUT), all preposted; the
 * sender sleeps after its isends so that the receiver matches many
 * before any copy ends.  Every message arrives, by one way or the other.
 */
#define MANY 1100
#define MANY_LEN 65537

static int many_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	struct outcome *o = arg;
	coop_request_t **r = calloc(MANY, sizeof(*r));
	char *buf = malloc((size_t)MANY * MANY_LEN);
	int i;

	for (i = 0; rank == 1 && i < MANY; i++)
		T_OK(coop_irecv(ctx, buf + (size_t)i * MANY_LEN, MANY_LEN, 0,
				i, COMM, 0, &r[i]));
	t_barrier(ctx, rank, size);
	for (i = 0; rank == 0 && i < MANY; i++) {
		t_fill(buf + (size_t)i * MANY_LEN, MANY_LEN, (uint32_t)i);
		T_OK(coop_isend(ctx, buf + (size_t)i * MANY_LEN, MANY_LEN, 1,
				i, COMM, 0, &r[i]));
	}
	if (rank == 0)
		sleep(3);
	T_OK(coop_waitall(MANY, r, COOP_STATUSES_IGNORE));
	for (i = 0; rank == 1 && i < MANY; i++)
		T_ASSERT(t_check(buf + (size_t)i * MANY_LEN, MANY_LEN,
				 (uint32_t)i) < 0, "message %d", i);
	t_barrier(ctx, rank, size);
	if (rank == 0) {
		coop_stats_t st;

		T_OK(coop_get_load(ctx, 0, &o->load[0]));
		T_OK(coop_get_stats(ctx, &st));
		o->offload_bytes = st.offload_bytes;
	}
	t_barrier(ctx, rank, size);
	free(buf);
	free(r);
	return 0;
}

START_TEST(test_dma_many)
{
	static const char *const env[] = { "COOP_RNDV=dma",
		"COOP_RING_SLOTS=4096", NULL };
	struct outcome *o = shared_alloc(sizeof(*o));
	int engine = t_engine_present();
	uint64_t before = t_engine_done(), done = 0, dma, rput;

	ck_assert_int_eq(run_ranks(2, env, many_rank, o, 120, NULL), 0);
	if (engine)
		done = t_engine_done() - before;
	dma = o->offload_bytes / MANY_LEN;
	rput = o->load[0].total_bytes / MANY_LEN;
	fprintf(stderr, "dma many: %llu by the engine (its work grew by "
		"%llu), %llu by RPUT\n", (unsigned long long)dma,
		(unsigned long long)done, (unsigned long long)rput);
	ck_assert_msg(o->load[0].total_bytes % MANY_LEN == 0 &&
		      o->offload_bytes % MANY_LEN == 0 && dma + rput == MANY,
		      "%llu + %llu messages", (unsigned long long)dma,
		      (unsigned long long)rput);
	/* the driver counts copies, an RDMA device packets (>= 1 a copy) */
	ck_assert_msg(t_engine_hca() ? done >= dma : done == dma,
		      "the engine's work grew by %llu for %llu messages",
		      (unsigned long long)done, (unsigned long long)dma);
	ck_assert_msg(!engine || dma > 256, "the engine did only %llu",
		      (unsigned long long)dma);
	shared_free(o, sizeof(*o));
}
END_TEST

/* Rank 0 stops calling the library once the engine has the copy: the
 * receive completes all the same.  1 MiB: one copy whatever the module's
 * dma_max_bytes (>= 1 MiB); a longer message in pieces would need a step
 * of the sender before its last, notifying piece. */
static int overlap_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	volatile int *woke = arg;
	size_t len = 1 << 20;
	char *buf = malloc(len + 1) + 1;
	coop_request_t *r;
	uint64_t seen;
	int flag = 0;

	if (rank == 1)
		T_OK(coop_irecv(ctx, buf, len, 0, 1, COMM, 0, &r));
	t_barrier(ctx, rank, size);
	if (rank == 0) {
		t_fill(buf, len, 5);
		seen = t_engine_activity();
		T_OK(coop_isend(ctx, buf, len, 1, 1, COMM, 0, &r));
		while (!flag && t_engine_activity() == seen)
			T_OK(coop_test(&r, &flag, NULL));
		sleep(3);	/* "compute" */
		*woke = 1;
		__sync_synchronize();
		T_OK(coop_wait(&r, NULL));
	} else {
		T_OK(coop_wait(&r, NULL));
		T_ASSERT(!*woke, "the receive waited for the sender");
		T_ASSERT(t_check(buf, len, 5) < 0, "data");
	}
	free(buf - 1);
	return 0;
}

START_TEST(test_dma_overlap)
{
	int *woke;

	if (!t_engine_present()) {
		fprintf(stderr, "dma overlap: no offload engine: skipped\n");
		return;
	}
	woke = shared_alloc(4096);
	ck_assert_int_eq(run_ranks(2, env_dma, overlap_rank, woke, 60, NULL),
			 0);
	shared_free(woke, 4096);
}
END_TEST

/* ---------------- PROTO_STRIPE: the CPU and the engine ---------------- */

static const size_t stripe_sizes[] = {
	65537, (1 << 20) + 3, (4 << 20) + 5, (16 << 20) + 1,
};
#define NSTRIPE (int)(sizeof(stripe_sizes) / sizeof(stripe_sizes[0]))

struct stripe_case {
	const char *name;
	const char *const *env;
	size_t min;		/* COOP_STRIPE_MIN in env */
	int half;		/* COOP_STRIPE_RATIO=1 in env */
};

/* Which sizes stripe, not when the engine is busy (test_stripe_busy):
 * the four sends are in flight at once, and the engine parts of the
 * earlier ones can pass COOP_OFFLOAD_BUSY's 4 MiB while a soft engine
 * lags (the 16 MiB send went by RPUT once, in the VM with a progress
 * thread). */
static const char *const env_stripe_half[] = { "COOP_RNDV=stripe",
	"COOP_STRIPE_RATIO=1", "COOP_STRIPE_MIN=0", "COOP_OFFLOAD_BUSY=0",
	NULL };
static const char *const env_stripe_def[] = { "COOP_RNDV=stripe",
	"COOP_OFFLOAD_BUSY=0", "R0:COOP_VERBOSE=1", NULL };

static const struct stripe_case stripe_cases[] = {
	{ "COOP_RNDV=stripe, ratio 1, no minimum", env_stripe_half, 0, 1 },
	{ "COOP_RNDV=stripe, measured ratio, 1 MiB minimum", env_stripe_def,
	  1 << 20, 0 },
};
#define NSTRIPE_CASES (int)(sizeof(stripe_cases) / sizeof(stripe_cases[0]))

struct stripe_outcome {
	char prov[8];
	coop_load_t load[2];
	coop_stats_t stats[2];
	int proto[2][2][NSTRIPE];	/* [rank][phase][size] */
	int timed_window, timed_provider;	/* rank 0's R lines */
};

static void stripe_phase(coop_context_t *ctx, int rank, int size,
			 char **p, int phase, int *proto)
{
	coop_request_t *r[NSTRIPE];
	coop_status_t st[NSTRIPE];
	int i;

	for (i = 0; i < NSTRIPE; i++) {
		if (rank == 0)
			t_fill(p[i], stripe_sizes[i], (uint32_t)(i + 10 * phase));
		else
			memset(p[i], 0, stripe_sizes[i]);
	}
	for (i = 0; rank == 1 && phase == 0 && i < NSTRIPE; i++)
		T_OK(coop_irecv(ctx, p[i], stripe_sizes[i], 0, i, COMM, 0,
				&r[i]));
	t_barrier(ctx, rank, size);
	for (i = 0; rank == 0 && i < NSTRIPE; i++)
		T_OK(coop_isend(ctx, p[i], stripe_sizes[i], 1, i, COMM, 0,
				&r[i]));
	t_barrier(ctx, rank, size);	/* phase 1: the RTSs are out */
	for (i = NSTRIPE - 1; rank == 1 && phase == 1 && i >= 0; i--)
		T_OK(coop_irecv(ctx, p[i], stripe_sizes[i], 0, i, COMM, 0,
				&r[i]));
	T_OK(coop_waitall(NSTRIPE, r, st));
	for (i = 0; i < NSTRIPE; i++) {
		T_ASSERT(!st[i].error, "size %zu: %s", stripe_sizes[i],
			 coop_strerror(st[i].error));
		T_ASSERT(rank == 0 || t_check(p[i], stripe_sizes[i],
					      (uint32_t)(i + 10 * phase)) < 0,
			 "size %zu: data", stripe_sizes[i]);
		proto[i] = st[i].protocol;
	}
}

static void echo_log(FILE *log)
{
	char line[512];

	rewind(log);
	while (fgets(line, sizeof(line), log))
		fputs(line, stderr);
}

/* Phase 0: receives posted first, phase 1: sends first; unaligned. */
static int stripe_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	struct stripe_outcome *o = arg;
	char *base[NSTRIPE], *p[NSTRIPE];
	FILE *log = NULL;
	int i, phase, saved = -1;

	for (i = 0; i < NSTRIPE; i++) {
		base[i] = malloc(stripe_sizes[i] + 8);
		p[i] = base[i] + 1 + rank + i % 3;
	}
	T_OK(coop_reset_stats(ctx));
	if (rank == 0)
		log = t_stderr_begin(&saved);
	for (phase = 0; phase < 2; phase++)
		stripe_phase(ctx, rank, size, p, phase, o->proto[rank][phase]);
	if (log) {
		t_stderr_end(saved);
		o->timed_window = t_count_lines(log, "stripe: CPU copy",
						"through a window");
		o->timed_provider = t_count_lines(log, "stripe: CPU copy",
						  "by the provider's copy");
		echo_log(log);
		fclose(log);
	}
	t_barrier(ctx, rank, size);
	T_OK(coop_get_stats(ctx, &o->stats[rank]));
	if (rank == 0)
		record_loads(ctx, o->prov, sizeof(o->prov), o->load);
	t_barrier(ctx, rank, size);
	for (i = 0; i < NSTRIPE; i++)
		free(base[i]);
	return 0;
}

/* The engine's share with R = 1: n - n / 2 rounded to a page. */
static uint64_t half_share(uint64_t n)
{
	return n - ((n / 2 + 2048) & ~(uint64_t)4095);
}

/* R measured (once) on the path the CPU parts took */
static void check_stripe_timing(const struct stripe_case *c,
				const struct stripe_outcome *o, int engine)
{
	int measured = engine && !c->half;
	int window = o->stats[0].window_bytes > 0;

	fprintf(stderr, "stripe: R timed through a window %d, by the "
		"provider's copy %d; CPU parts' bytes through windows %llu\n",
		o->timed_window, o->timed_provider,
		(unsigned long long)o->stats[0].window_bytes);
	ck_assert_int_eq(o->timed_window, measured && window);
	ck_assert_int_eq(o->timed_provider, measured && !window);
}

static void check_stripe(const struct stripe_case *c,
			 const struct stripe_outcome *o, int engine)
{
	uint64_t all = 0, share = 0, striped = 0, cpu;
	int i, ph, want;

	for (ph = 0; ph < 2; ph++) {
		for (i = 0; i < NSTRIPE; i++) {
			want = engine && stripe_sizes[i] >= c->min ?
			       COOP_PROTOCOL_STRIPE : COOP_PROTOCOL_RPUT;
			ck_assert_msg(o->proto[0][ph][i] == want &&
				      o->proto[1][ph][i] == want,
				      "size %zu: protocols %d/%d, want %d",
				      stripe_sizes[i], o->proto[0][ph][i],
				      o->proto[1][ph][i], want);
			all += stripe_sizes[i];
			if (want == COOP_PROTOCOL_STRIPE) {
				share += half_share(stripe_sizes[i]);
				striped += stripe_sizes[i];
			}
		}
	}
	/* the library's own count: the load counters' totals also hold the
	 * copies that measured R */
	cpu = o->stats[0].copy_bytes;
	fprintf(stderr, "stripe: %llu bytes, engine %llu (%.0f%% of the "
		"striped ones), sender's CPU %llu\n", (unsigned long long)all,
		(unsigned long long)o->stats[0].offload_bytes, striped ?
		100.0 * (double)o->stats[0].offload_bytes / (double)striped :
		0, (unsigned long long)cpu);
	ck_assert_msg(!o->load[1].total_bytes && !o->stats[1].offload_bytes,
		      "the receiver copied");
	ck_assert_msg(cpu + o->stats[0].offload_bytes == all,
		      "CPU %llu + engine %llu != %llu", (unsigned long long)cpu,
		      (unsigned long long)o->stats[0].offload_bytes,
		      (unsigned long long)all);
	if (engine && c->half)
		ck_assert_msg(o->stats[0].offload_bytes == share,
			      "engine %llu, want %llu",
			      (unsigned long long)o->stats[0].offload_bytes,
			      (unsigned long long)share);
	if (!engine)
		ck_assert(!o->stats[0].offload_bytes);
	check_stripe_timing(c, o, engine);
}

START_TEST(test_stripe_sizes)
{
	const struct stripe_case *c = &stripe_cases[_i];
	struct stripe_outcome *o = shared_alloc(sizeof(*o));
	int engine = t_engine_present();
	uint64_t before = engine ? t_engine_done() : 0;

	fprintf(stderr, "stripe: %s, %s\n", c->name,
		engine ? "offload engine" : "no engine: RPUT");
	ck_assert_int_eq(run_ranks(2, c->env, stripe_rank, o, 120, NULL), 0);
	check_stripe(c, o, engine);
	if (engine) {
		if (!t_engine_hca())
			ck_assert_str_eq(o->prov, "kmod");
		ck_assert_msg(t_engine_done() - before >=
			      (uint64_t)(c->min ? 2 * (NSTRIPE - 1) :
					 2 * NSTRIPE), "engine's work");
	}
	shared_free(o, sizeof(*o));
}
END_TEST

/*
 * Adaptive offload: with COOP_OFFLOAD_BUSY=1 any engine byte in flight
 * node-wide makes the engine busy.  A send posted while the first one's
 * engine part is in flight goes by RPUT.
 *
 * That part is not always seen in flight: Soft-RoCE runs a user queue
 * pair's requester inside ibv_post_send, so the HCA engine's part may be
 * copied, and its completion polled, within the progress call that
 * posted it.  So an attempt counts only when the engine's bytes were in
 * flight both before and after the second send was posted: the first
 * one's part (8 MiB) is given to either engine whole, so the count only
 * falls in between, and it was above 0 when the second send chose.  Up
 * to BUSY_TRIES attempts; with an engine, the test fails if none counts.
 */
#define BUSY_TRIES 6

struct busy_outcome {
	int tries;
	int seen[BUSY_TRIES];		/* rank 0: in flight around b's post */
	int proto[BUSY_TRIES][2];	/* rank 1: a's and b's protocols */
};

static void busy_try(coop_context_t *ctx, int rank, char *a, char *b,
		     size_t len, int k, struct busy_outcome *o)
{
	coop_request_t *r[2];
	coop_status_t st[2];
	int flag = 0, tag = 2 * k + 1;

	if (rank == 1) {
		T_OK(coop_irecv(ctx, a, len, 0, tag, COMM, 0, &r[0]));
		T_OK(coop_irecv(ctx, b, len, 0, tag + 1, COMM, 0, &r[1]));
	}
	t_barrier(ctx, rank, 2);
	if (rank == 0) {
		t_fill(a, len, (uint32_t)tag);
		t_fill(b, len, (uint32_t)tag + 1);
		T_OK(coop_isend(ctx, a, len, 1, tag, COMM, 0, &r[0]));
		/* until the engine has a's part (no engine: a completes) */
		while (!flag && !t_offload_bytes(ctx))
			T_OK(coop_test(&r[0], &flag, &st[0]));
		T_OK(coop_isend(ctx, b, len, 1, tag + 1, COMM, 0, &r[1]));
		o->seen[k] = !flag && t_offload_bytes(ctx);
		if (flag)
			r[0] = NULL;
	}
	T_OK(coop_waitall(2, r, st));
	if (rank == 1) {
		T_ASSERT(t_check(a, len, (uint32_t)tag) < 0 &&
			 t_check(b, len, (uint32_t)tag + 1) < 0, "data");
		o->proto[k][0] = st[0].protocol;
		o->proto[k][1] = st[1].protocol;
	}
	t_barrier(ctx, rank, 2);	/* o->seen[k] is written */
}

/* Without an engine one attempt: b goes by RPUT as a does. */
static int busy_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	struct busy_outcome *o = arg;
	size_t len = 16 << 20;
	char *a = malloc(len), *b = malloc(len);
	int tries = t_engine_present() ? BUSY_TRIES : 1, k = 0;

	(void)size;
	do
		busy_try(ctx, rank, a, b, len, k, o);
	while (!o->seen[k++] && k < tries);
	if (rank == 0)
		o->tries = k;
	free(a);
	free(b);
	return 0;
}

START_TEST(test_stripe_busy)
{
	static const char *const env[] = { "COOP_RNDV=stripe",
		"COOP_OFFLOAD_BUSY=1", "COOP_STRIPE_RATIO=1", NULL };
	struct busy_outcome *o = shared_alloc(sizeof(*o));
	int engine = t_engine_present();
	int k;

	ck_assert_int_eq(run_ranks(2, env, busy_rank, o, 120, NULL), 0);
	for (k = 0; k < o->tries; k++) {
		fprintf(stderr, "stripe busy: try %d, protocols %d, %d, "
			"engine part %sseen in flight\n", k, o->proto[k][0],
			o->proto[k][1], o->seen[k] ? "" : "not ");
		ck_assert_int_eq(o->proto[k][0], engine ?
				 COOP_PROTOCOL_STRIPE : COOP_PROTOCOL_RPUT);
	}
	k = o->tries - 1;
	ck_assert_msg(!engine || o->seen[k], "the engine's part was never "
		      "seen in flight in %d tries", o->tries);
	ck_assert_int_eq(o->proto[k][1], COOP_PROTOCOL_RPUT);
	shared_free(o, sizeof(*o));
}
END_TEST

TCase *tc_dma(void)
{
	TCase *tc = tcase_create("dma");

	tcase_set_timeout(tc, 150);
	tcase_add_loop_test(tc, test_dma_sizes, 0, NCASES);
	tcase_add_test(tc, test_dma_ioctl_path);
	tcase_add_test(tc, test_dma_many);
	tcase_add_test(tc, test_dma_overlap);
	tcase_add_loop_test(tc, test_stripe_sizes, 0, NSTRIPE_CASES);
	tcase_add_test(tc, test_stripe_busy);
	return tc;
}
