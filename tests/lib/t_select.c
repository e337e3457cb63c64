/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_select.c - COOP-hybrid (COOP_RNDV=auto) decisions:
 *   - every cell of [Chakraborty18]'s Table II (send kind x blocking
 *     or not receive) takes its protocol, seen the same by both sides;
 *   - an assisted RGET: the sender, idle in its wait, copies the message
 *     while the receiver computes - not when the ranks share one CPU;
 *   - COOP-load: the side with the smaller pending copy load copies, and
 *     the leveling rule itself;
 *   - COOP-chunked: a small message, and a rendezvous one, get through
 *     to a rank while it is copying a large message, before it ends.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tests.h"

#define COMM 47
#define CELL_LEN (1u << 20)
#define BIG_LEN (256u << 20)	/* a copy that lasts (~30 ms natively) */

/* protocols/select.c's COOP-load rule (a hidden symbol of the library) */
uint64_t coop_select_level_share(uint64_t ls, uint64_t lr, uint64_t n);

/* Table II and the CPU load rules: no striping onto an engine (kmod in
 * the VM) */
static const char *const env_cpu[] = { "COOP_RNDV=auto",
				       "COOP_STRIPE_RATIO=0", NULL };

/* ---------------- Table II ---------------- */

struct cell {
	const char *name;
	unsigned send_flags;	/* mode | COOP_F_BLOCKING */
	unsigned recv_flags;	/* 0 (Irecv) or COOP_F_BLOCKING (Recv) */
	int expect;		/* enum coop_protocol */
	int irecv_waits;	/* Irecv completed by coop_wait, not polled */
};

#define BLK COOP_F_BLOCKING
static const struct cell cells[] = {
	{ "Send/Recv", COOP_SEND_STANDARD | BLK, BLK, COOP_PROTOCOL_COOP, 0 },
	{ "Send/Irecv", COOP_SEND_STANDARD | BLK, 0, COOP_PROTOCOL_RPUT, 0 },
	{ "Isend/Recv", COOP_SEND_STANDARD, BLK, COOP_PROTOCOL_RGET, 0 },
	/* equal (zero) loads: COOP-load splits */
	{ "Isend/Irecv", COOP_SEND_STANDARD, 0, COOP_PROTOCOL_COOP, 0 },
	{ "Bsend/Recv", COOP_SEND_BUFFERED | BLK, BLK, COOP_PROTOCOL_RGET, 0 },
	{ "Bsend/Irecv", COOP_SEND_BUFFERED | BLK, 0, COOP_PROTOCOL_RPUT, 0 },
	{ "Ssend/Recv", COOP_SEND_SYNC | BLK, BLK, COOP_PROTOCOL_COOP, 0 },
	{ "Ssend/Irecv", COOP_SEND_SYNC | BLK, 0, COOP_PROTOCOL_RPUT, 0 },
	{ "Rsend/Recv", COOP_SEND_READY | BLK, BLK, COOP_PROTOCOL_COOP, 0 },
	{ "Rsend/Irecv", COOP_SEND_READY | BLK, 0, COOP_PROTOCOL_RPUT, 0 },
	/* completing the Irecv in a wait (an idle receiver may assist the
	 * copier) does not change the protocol */
	{ "Send/Irecv+Wait", COOP_SEND_STANDARD | BLK, 0, COOP_PROTOCOL_RPUT,
	  1 },
	{ "Isend/Irecv+Wait", COOP_SEND_STANDARD, 0, COOP_PROTOCOL_COOP, 1 },
};
#define NCELLS (int)(sizeof(cells) / sizeof(cells[0]))

static void cell_send(coop_context_t *ctx, const struct cell *c, char *buf)
{
	size_t blen = CELL_LEN + COOP_BSEND_OVERHEAD;
	char *bbuf = NULL;
	coop_request_t *r;
	void *old;
	size_t osz;

	if (c->send_flags & COOP_SEND_BUFFERED) {
		bbuf = malloc(blen);
		T_OK(coop_buffer_attach(ctx, bbuf, blen));
	}
	/* the receive is posted first (Rsend's rule) */
	usleep(20000 * t_time_scale());
	T_OK(coop_isend(ctx, buf, CELL_LEN, 1, 0, COMM, c->send_flags, &r));
	T_OK(coop_wait(&r, COOP_STATUS_IGNORE));
	if (bbuf) {		/* waits until the buffered message left */
		T_OK(coop_buffer_detach(ctx, &old, &osz));
		free(bbuf);
	}
}

/* Recv: wait.  Irecv: poll with coop_test, as a rank that computes in
 * between does (the match happens outside any wait), or wait. */
static void complete_recv(coop_request_t **r, const struct cell *c,
			  coop_status_t *status)
{
	int done = 0;

	if (c->recv_flags & COOP_F_BLOCKING || c->irecv_waits) {
		T_OK(coop_wait(r, status));
		return;
	}
	while (!done)
		T_OK(coop_test(r, &done, status));
}

static int cell_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	const struct cell *c = arg;
	char *buf = malloc(CELL_LEN);
	coop_stats_t st;
	coop_status_t status;
	coop_request_t *r;

	T_ASSERT(size == 2, "size %d", size);
	t_fill(buf, CELL_LEN, 7);
	t_barrier(ctx, rank, size);
	T_OK(coop_reset_stats(ctx));
	if (rank == 0) {
		cell_send(ctx, c, buf);
	} else {
		memset(buf, 0, CELL_LEN);
		T_OK(coop_irecv(ctx, buf, CELL_LEN, 0, 0, COMM, c->recv_flags,
				&r));
		complete_recv(&r, c, &status);
		T_ASSERT(t_check(buf, CELL_LEN, 7) < 0, "%s: data", c->name);
		T_ASSERT(status.protocol == c->expect,
			 "%s: receive took protocol %d, want %d", c->name,
			 status.protocol, c->expect);
	}
	T_OK(coop_get_stats(ctx, &st));
	if (rank == 0)
		T_ASSERT(st.sent[c->expect] == 1, "%s: sender used another "
			 "protocol", c->name);
	else
		T_ASSERT(st.received[c->expect] == 1, "%s: stats", c->name);
	t_barrier(ctx, rank, size);
	free(buf);
	return 0;
}

START_TEST(test_table2)
{
	const char *const *env = env_cpu;	/* the table itself */

	fprintf(stderr, "table II: %s\n", cells[_i].name);
	ck_assert_int_eq(run_ranks(2, env, cell_rank, (void *)&cells[_i], 60,
				   NULL), 0);
}
END_TEST

/* COOP-hybrid: an RPUT cell whose sender has an idle engine is striped
 * (kmod with a DMA engine), else stays RPUT. */
START_TEST(test_hybrid_stripes)
{
	static const char *const env[] = { "COOP_RNDV=auto",
					   "COOP_STRIPE_RATIO=1",
					   "COOP_STRIPE_MIN=65536", NULL };
	struct cell c = cells[1];	/* Send/Irecv */

	if (t_engine_present())
		c.expect = COOP_PROTOCOL_STRIPE;
	fprintf(stderr, "hybrid: Send/Irecv %s\n", t_engine_present() ?
		"with an offload engine: STRIPE" : "without engine: RPUT");
	ck_assert_int_eq(run_ranks(2, env, cell_rank, &c, 60, NULL), 0);
}
END_TEST

/*
 * Isend/Recv is RGET, run assisted: the receiver matches (the RTS is
 * there already) and then computes without calling the library; the
 * sender, blocked in its wait with nothing else to copy, takes the
 * receiver's chunks and completes before the receiver is back.  With
 * fewer CPUs than ranks there is no assisting: the sender copies nothing
 * and (no progress thread) waits for the receiver.
 */
struct assist {
	int back;	/* the receiver's computing ended */
	int cpus;	/* the ranks share */
};

static int assist_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	volatile struct assist *a = arg;
	int idle_cpu = a->cpus >= size;
	char *buf = malloc(CELL_LEN);
	coop_request_t *r;
	coop_status_t st;
	coop_stats_t stats;
	int mode;

	t_fill(buf, CELL_LEN, 9);
	t_barrier(ctx, rank, size);
	if (rank == 0) {
		T_OK(coop_isend(ctx, buf, CELL_LEN, 1, 0, COMM, 0, &r));
		T_OK(coop_wait(&r, &st));
		T_OK(coop_get_stats(ctx, &stats));
		T_OK(coop_get_progress(ctx, &mode));
		/* a progress thread of the receiver copies its share */
		if (idle_cpu) {
			T_ASSERT(!a->back, "the sender waited for the receiver");
			T_ASSERT(stats.copy_bytes == CELL_LEN ||
				 (mode != COOP_PROGRESS_MANUAL &&
				  stats.copy_bytes < CELL_LEN), "sender copied "
				 "%llu bytes", (unsigned long long)
				 stats.copy_bytes);
		} else {
			T_ASSERT(a->back || mode != COOP_PROGRESS_MANUAL,
				 "the sender did not wait for the receiver");
			T_ASSERT(!stats.copy_bytes, "sender copied %llu bytes "
				 "on %d CPUs", (unsigned long long)
				 stats.copy_bytes, a->cpus);
		}
	} else {
		memset(buf, 0, CELL_LEN);
		/* the RTS is in: the receive matches as it is posted */
		T_OK(coop_probe(ctx, 0, 0, COMM, &st));
		T_OK(coop_irecv(ctx, buf, CELL_LEN, 0, 0, COMM,
				COOP_F_BLOCKING, &r));
		usleep(500000 * t_time_scale());	/* "compute" */
		a->back = 1;
		T_OK(coop_wait(&r, &st));
		T_ASSERT(st.protocol == COOP_PROTOCOL_RGET, "took %d",
			 st.protocol);
		T_ASSERT(t_check(buf, CELL_LEN, 9) < 0, "data");
	}
	t_barrier(ctx, rank, size);
	free(buf);
	return 0;
}

static void run_assist(int cpus)
{
	struct assist *a = shared_alloc(sizeof(*a));

	a->back = 0;
	a->cpus = cpus;
	ck_assert_int_eq(run_ranks(2, env_cpu, assist_rank, a, 60, NULL), 0);
	shared_free(a, sizeof(*a));
}

START_TEST(test_idle_sender_assists)
{
	run_assist((int)sysconf(_SC_NPROCESSORS_ONLN));
}
END_TEST

/* Both ranks confined to one CPU before they start (as a cpuset or
 * taskset does): the library counts the CPUs they may run on, not the
 * node's, so the blocked sender does not assist. */
START_TEST(test_confined_sender_waits)
{
	cpu_set_t set;

	ck_assert_int_eq(t_pin_first_cpu(&set), 0);
	run_assist(1);
	ck_assert_int_eq(sched_setaffinity(0, sizeof(set), &set), 0);
}
END_TEST

/*
 * More Send/Irecv rendezvous in flight than a rank has work slots (256):
 * the ones that find none are plain RPUT, not another protocol.
 */
#define MANY 320
#define MANY_LEN (128u << 10)

static int many_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	char *buf = malloc((size_t)MANY * MANY_LEN);
	coop_request_t **r = calloc(MANY, sizeof(*r));
	coop_status_t *st = calloc(MANY, sizeof(*st));
	int i, done = 0;

	(void)arg;
	T_ASSERT(size == 2 && buf && r && st, "setup");
	t_barrier(ctx, rank, size);
	for (i = 0; i < MANY; i++) {
		char *b = buf + (size_t)i * MANY_LEN;

		if (rank == 0) {
			t_fill(b, MANY_LEN, 100 + i);
			T_OK(coop_isend(ctx, b, MANY_LEN, 1, i, COMM,
					COOP_F_BLOCKING, &r[i]));
		} else {
			T_OK(coop_irecv(ctx, b, MANY_LEN, 0, i, COMM, 0, &r[i]));
		}
	}
	while (!done)		/* polled: the receives stay Irecv */
		T_OK(coop_testall(MANY, r, &done, st));
	for (i = 0; rank == 1 && i < MANY; i++) {
		T_ASSERT(st[i].protocol == COOP_PROTOCOL_RPUT,
			 "message %d took %d", i, st[i].protocol);
		T_ASSERT(t_check(buf + (size_t)i * MANY_LEN, MANY_LEN,
				 100 + i) < 0, "message %d data", i);
	}
	t_barrier(ctx, rank, size);
	free(buf);
	free(r);
	free(st);
	return 0;
}

START_TEST(test_out_of_work_slots)
{
	ck_assert_int_eq(run_ranks(2, env_cpu, many_rank, NULL, 90, NULL), 0);
}
END_TEST

/* ---------------- COOP-load ---------------- */

START_TEST(test_level_rule)
{
	const uint64_t n = 1 << 20;

	ck_assert_uint_eq(coop_select_level_share(0, 0, n), n / 2);
	ck_assert_uint_eq(coop_select_level_share(n / 2, 0, n), 3 * n / 4);
	ck_assert_uint_eq(coop_select_level_share(0, n / 2, n), n / 4);
	ck_assert_uint_eq(coop_select_level_share(5 * n, 0, n), n);	/* RGET */
	ck_assert_uint_eq(coop_select_level_share(0, 5 * n, n), 0);	/* RPUT */
	ck_assert_uint_eq(coop_select_level_share(7 * n, 7 * n, n), n / 2);
}
END_TEST

static void wait_pending(coop_context_t *ctx, int rank, uint64_t min)
{
	coop_load_t l;

	do {
		T_OK(coop_progress(ctx));
		T_OK(coop_get_load(ctx, rank, &l));
	} while (l.pending_bytes < min);
}

/*
 * Rank 0 is busy: it writes BIG_LEN to rank 2 (Send/Irecv: RPUT).  While
 * it does, it exchanges CELL_LEN both ways with rank 1, nonblocking on
 * both sides (COOP-load): rank 1, the idle side, must do both copies -
 * RPUT when it sends, RGET when it receives.
 */
static int load_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	char *big = rank != 1 ? malloc(BIG_LEN) : NULL;
	char *out = malloc(CELL_LEN), *in = malloc(CELL_LEN);
	coop_request_t *r[3];
	coop_status_t st[3];
	int peer = 1 - rank;

	(void)arg;
	T_ASSERT(size == 3, "size %d", size);
	t_fill(out, CELL_LEN, 30 + rank);
	if (big)
		memset(big, rank, BIG_LEN);
	if (rank == 2) {	/* polls (no wait): Send+Irecv is RPUT */
		int done = 0;

		T_OK(coop_irecv(ctx, big, BIG_LEN, 0, 1, COMM, 0, &r[0]));
		while (!done)
			T_OK(coop_test(&r[0], &done, COOP_STATUS_IGNORE));
		T_ASSERT(big[BIG_LEN - 1] == 0, "big data");
		goto out;
	}
	if (rank == 0)
		T_OK(coop_isend(ctx, big, BIG_LEN, 2, 1, COMM,
				COOP_F_BLOCKING, &r[2]));
	/* both wait until rank 2 charged rank 0 with the copy (its history
	 * keeps it loaded after the copy, for COOP_LOAD_HISTORY_MS) */
	wait_pending(ctx, 0, BIG_LEN / 16);
	T_OK(coop_irecv(ctx, in, CELL_LEN, peer, 0, COMM, 0, &r[0]));
	T_OK(coop_isend(ctx, out, CELL_LEN, peer, 0, COMM, 0, &r[1]));
	T_OK(coop_waitall(rank == 0 ? 3 : 2, r, st));
	T_ASSERT(t_check(in, CELL_LEN, 30 + peer) < 0, "data");
	if (rank == 1) {
		T_ASSERT(st[0].protocol == COOP_PROTOCOL_RGET,
			 "busy rank 0 sent: rank 1 should read (RGET), "
			 "took %d", st[0].protocol);
		T_ASSERT(st[1].protocol == COOP_PROTOCOL_RPUT,
			 "busy rank 0 received: rank 1 should write (RPUT), "
			 "took %d", st[1].protocol);
	}
out:
	t_barrier(ctx, rank, size);
	free(big);
	free(out);
	free(in);
	return 0;
}

START_TEST(test_lower_load_copies)
{
	const char *const *env = env_cpu;

	ck_assert_int_eq(run_ranks(3, env, load_rank, NULL, 90, NULL), 0);
}
END_TEST

/* ---------------- COOP-chunked ---------------- */

/*
 * Rank 0 reads BIG_LEN from rank 1 (Isend/Recv: RGET, rank 0 copies all
 * of it).  Once rank 0 has started, rank 2 sends it a small message, or
 * a rendezvous one (Send/Irecv: RPUT, as 3 ranks oversubscribe 2 CPUs;
 * on more CPUs, matched in rank 0's wait, COOP-p2p, whose share rank 2
 * takes over while rank 0's copy jobs take turns).  Between
 * chunks rank 0 answers it, so it completes first: waitany returns it
 * before the large receive.
 */
static int chunked_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	size_t small = *(const size_t *)arg;
	char *buf = malloc(rank == 2 ? small : BIG_LEN);
	char *sbuf = malloc(small);	/* rank 0's small receive: its own */
	coop_request_t *r[2];
	coop_status_t st;
	int idx;

	T_ASSERT(size == 3, "size %d", size);
	memset(buf, rank, rank == 2 ? small : BIG_LEN);
	t_barrier(ctx, rank, size);
	if (rank == 1) {
		T_OK(coop_isend(ctx, buf, BIG_LEN, 0, 1, COMM, 0, &r[0]));
		T_OK(coop_wait(&r[0], COOP_STATUS_IGNORE));
	} else if (rank == 2) {
		wait_pending(ctx, 0, BIG_LEN / 2);	/* rank 0 copies */
		T_OK(coop_send(ctx, buf, small, 0, 2, COMM, 0));
	} else {
		T_OK(coop_irecv(ctx, buf, BIG_LEN, 1, 1, COMM, COOP_F_BLOCKING,
				&r[0]));
		T_OK(coop_irecv(ctx, sbuf, small, 2, 2, COMM, 0, &r[1]));
		T_OK(coop_waitany(2, r, &idx, &st));
		T_ASSERT(idx == 1, "the %zu-byte message waited for the "
			 "large copy to end", small);
		T_ASSERT(r[0] != NULL, "large receive still pending");
		T_OK(coop_wait(&r[0], &st));
		T_ASSERT(st.protocol == COOP_PROTOCOL_RGET, "large took %d",
			 st.protocol);
		T_ASSERT(buf[BIG_LEN - 1] == 1, "large data");
		T_ASSERT(sbuf[small - 1] == 2, "small data");
	}
	t_barrier(ctx, rank, size);
	free(sbuf);
	free(buf);
	return 0;
}

static const size_t chunked_small[] = { 8, 1u << 20 };

START_TEST(test_chunked_lets_through)
{
	const char *const *env = env_cpu;

	fprintf(stderr, "chunked: %zu-byte message during a %u MiB copy\n",
		chunked_small[_i], BIG_LEN >> 20);
	ck_assert_int_eq(run_ranks(3, env, chunked_rank,
				   (void *)&chunked_small[_i], 90, NULL), 0);
}
END_TEST

TCase *tc_select(void)
{
	TCase *tc = tcase_create("select");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_table2, 0, NCELLS);
	tcase_add_test(tc, test_idle_sender_assists);
	tcase_add_test(tc, test_confined_sender_waits);
	tcase_add_test(tc, test_out_of_work_slots);
	tcase_add_test(tc, test_hybrid_stripes);
	tcase_add_test(tc, test_level_rule);
	tcase_add_test(tc, test_lower_load_copies);
	tcase_add_loop_test(tc, test_chunked_lets_through, 0, 2);
	return tc;
}
