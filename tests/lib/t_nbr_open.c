/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_nbr_open.c - open slots (topologies without hints): every message
 * has one, blocks of up to 64 KiB are written there (counted), larger
 * ones streamed through them in parts (counted; past
 * COOP_NEIGHBOR_STREAM_MAX messages), twenty calls at once whose blocks
 * change size from call to call, sizes the two ends disagree on (errors
 * as for messages, never a hang), a topology whose windows would be too
 * large, and COOP_NEIGHBOR_SLOT_OPEN=0.
 */
#include <check.h>
#include <inttypes.h>
#include <string.h>

#include "harness.h"
#include "nbr_test.h"

/* ------------------------------------------------------------------ */
/* open slots: topologies without STATIC_BUFFERS                        */
/* ------------------------------------------------------------------ */

#define OPEN_MAX 65536		/* COOP_NEIGHBOR_SLOT_OPEN's default */
#define OPEN_PAST (OPEN_MAX + 3808)	/* a block past an open slot */
#define OPEN_BIG (3 * OPEN_MAX + 5)	/* four parts of a buffer */
#define OPEN_CALLS 20		/* outstanding at once: past 16 buffers */
#define OPEN_STREAM 40		/* blocking calls of a size in a row */

/* Origin o's block for its slot j in call i: 0 B to past the slot (a
 * packed slot's entry holds up to 8 B). */
static size_t open_size(int o, int j, int i)
{
	static const size_t z[] = { 5, OPEN_MAX, 0, OPEN_PAST, 8, 64,
				    OPEN_MAX + 1, 9 };

	return z[(o * 3 + j * 5 + i) % 8];
}

/* Call i's alltoallv blocks of k's rank, sizes by open_size. */
static void open_setup(struct call *c, const struct rk *k, int i)
{
	const struct graph *g = &k->g;
	int r = k->rank, j;

	memset(c, 0, sizeof(*c));
	c->op = OP_A2AV;
	c->nsend = g->outdeg[r];
	c->nrecv = g->indeg[r];
	for (j = 0; j < c->nsend; j++)
		c->scnt[j] = open_size(r, j, i);
	for (j = 0; j < c->nrecv; j++)
		c->rcnt[j] = open_size(g->src[r][j], origin_slot(g, r, j), i);
	c->slen = layout(c->nsend, c->scnt, c->sdsp, 0);
	c->rlen = layout(c->nrecv, c->rcnt, c->rdsp, 1);
	call_alloc(c);
}

/* OPEN_CALLS alltoallv calls at once, each block's size changing from
 * call to call (through the slot, past it, empty): all data right. */
static void open_outstanding(struct rk *k)
{
	coop_request_t *req[OPEN_CALLS];
	coop_status_t st[OPEN_CALLS];
	struct call c[OPEN_CALLS];
	int i, rc;

	for (i = 0; i < OPEN_CALLS; i++) {
		open_setup(&c[i], k, i);
		call_fill(&c[i], k);
		T_OK(call_post(&c[i], k->topo, M_NONBLOCK, &req[i]));
	}
	rc = coop_waitall(OPEN_CALLS, req, st);
	for (i = 0; rc && i < OPEN_CALLS; i++)
		fprintf(stderr, "[rank %d] open call %d of %d: %s\n", k->rank,
			i, OPEN_CALLS, coop_strerror(st[i].error));
	T_ASSERT(rc == COOP_SUCCESS, "open calls: waitall: %s",
		 coop_strerror(rc));
	for (i = 0; i < OPEN_CALLS; i++) {
		snprintf(k->what, sizeof(k->what), "open call %d of %d", i,
			 OPEN_CALLS);
		call_check(&c[i], k);
		call_free(&c[i]);
	}
}

/* A blocking call of op (OP_AG or OP_A2A) of bytes: its slot_sends
 * grow by expect. */
static void open_counted_op(struct rk *k, int op, size_t bytes,
			    uint64_t expect)
{
	const int i = op == OP_AG ? COOP_NBR_ALLGATHER : COOP_NBR_ALLTOALL;
	coop_topo_info_t a, b;
	struct call c;

	snprintf(k->what, sizeof(k->what), "open %s %zu B",
		 op == OP_AG ? "allgather" : "alltoall", bytes);
	T_OK(coop_topo_get_info(k->topo, &a));
	call_setup(&c, k, op, bytes);
	call_fill(&c, k);
	T_OK(call_post(&c, k->topo, M_BLOCK, NULL));
	call_check(&c, k);
	call_free(&c);
	T_OK(coop_topo_get_info(k->topo, &b));
	T_ASSERT(b.slot_sends[i] - a.slot_sends[i] == expect &&
		 !b.canary_flags[i],
		 "%s: %" PRIu64 " slot sends (%" PRIu64 " expected), %" PRIu64
		 " flags", k->what, b.slot_sends[i] - a.slot_sends[i], expect,
		 b.canary_flags[i]);
}

static void open_counted(struct rk *k, size_t bytes, uint64_t expect)
{
	open_counted_op(k, OP_A2A, bytes, expect);
}

/* The slot writes of a call of blocks of bytes with deg destinations
 * per op, open slots of OPEN_MAX: one per block that fits, a block's
 * parts when it streams (stream: COOP_NEIGHBOR_STREAM_MAX), else none. */
static uint64_t open_writes(size_t bytes, int deg, size_t stream)
{
	if (bytes <= OPEN_MAX)
		return (uint64_t)deg;
	return bytes <= stream ?
	       (uint64_t)deg * ((bytes + OPEN_MAX - 1) / OPEN_MAX) : 0;
}

/* OPEN_STREAM blocking calls of bytes each, allgathers and alltoalls
 * in turn (both ops' slots in use), the receivers late to every fifth,
 * so a sender that runs ahead waits for its buffers. */
static void open_stream(struct rk *k, size_t bytes, uint64_t expect)
{
	int n;

	for (n = 0; n < OPEN_STREAM; n++) {
		if (k->g.indeg[k->rank] && n % 5 == 2)
			usleep(2000);
		open_counted_op(k, n % 2 ? OP_A2A : OP_AG, bytes, expect);
	}
}

/* OPEN_MIXED blocking calls whose sizes take turns between an entry's
 * word (up to 8 B), a buffer and a stream of parts (whose last is 5 B:
 * an entry's), the receivers late to every seventh: a packed slot's
 * sender runs ahead on its 64 entries while a call with a buffer waits
 * for the receiver to take the one 16 turns before. */
#define OPEN_MIXED 300
static void open_mixed(struct rk *k, int deg, size_t stream)
{
	static const size_t z[] = { 8, 64, 1, 0, 9, 8, 8, 4096, 5, 8, 72,
				    OPEN_BIG, 8 };
	size_t bytes;
	int n;

	for (n = 0; n < OPEN_MIXED; n++) {
		if (k->g.indeg[k->rank] && n % 7 == 3)
			usleep(500);
		bytes = z[n % (sizeof(z) / sizeof(z[0]))];
		open_counted_op(k, n % 2 ? OP_A2A : OP_AG, bytes,
				open_writes(bytes, deg, stream));
	}
}

struct open_case {
	const char *const *env;
	int hot;		/* a hot spot without replies, not a stencil */
	int packed;		/* its sender's slots packed */
	size_t stream;		/* larger blocks stream up to this */
};

static int open_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	static const size_t stream[] = { 0, 1, 8, 9, 64, OPEN_MAX,
					 OPEN_BIG };
	const struct gspec st = { .kind = G_CART, .n = 4, .ndims = 2,
				  .dims = { 2, 2 } };
	const struct gspec hot = { .kind = G_HOT, .n = size };
	const struct open_case *oc = arg;
	coop_topo_info_t in;
	struct rk k;
	int op, deg, l;

	rk_init(&k, ctx, rank, oc->hot ? &hot : &st);
	deg = k.g.outdeg[rank];
	T_OK(topo_make(&k, COMM_BASE, 0));
	T_OK(coop_topo_get_info(k.topo, &in));
	for (op = COOP_NBR_ALLGATHER; op <= COOP_NBR_ALLTOALL; op++)
		T_ASSERT(in.slotted[op] == deg && !in.grouped[op] &&
			 in.packed[op] == (oc->packed ? deg : 0),
			 "op %d: %d slotted (%d expected), %d grouped, %d "
			 "packed", op, in.slotted[op], deg, in.grouped[op],
			 in.packed[op]);
	open_counted(&k, 8, (uint64_t)deg);
	open_counted(&k, OPEN_MAX, (uint64_t)deg);
	open_counted(&k, OPEN_MAX + 1, open_writes(OPEN_MAX + 1, deg,
						   oc->stream));
	open_outstanding(&k);
	open_counted(&k, 0, (uint64_t)deg);
	for (l = 0; l < (int)(sizeof(stream) / sizeof(stream[0])); l++)
		open_stream(&k, stream[l], open_writes(stream[l], deg,
						       oc->stream));
	open_mixed(&k, deg, oc->stream);
	topo_done(&k);
	return 0;
}

static const char *const env_open_tree[] = { "COOP_NEIGHBOR_RTR=tree",
					     "COOP_NEIGHBOR_RTR_ARITY=2",
					     NULL };

static const char *const env_open_stream[] = {
	"COOP_NEIGHBOR_STREAM_MAX=128k", NULL };

/* Plain calls go through open slots: every message of the 2x2 stencil
 * has one; blocks up to COOP_NEIGHBOR_SLOT_OPEN are written there,
 * larger ones up to COOP_NEIGHBOR_STREAM_MAX (16 MiB; and 128 KiB) stream
 * through them in parts of a buffer, larger ones still are messages;
 * calls outstanding past the slots' buffers with sizes changing between
 * calls (streamed ones among them), streams of one size and of sizes
 * that take turns; direct RTR and a binary RTR tree (no streams: its
 * counts are in calls).  A hot spot whose rank 0 receives nothing: its
 * slots packed with direct RTR (trailers and blocks of up to 8 B in
 * entries, four to a line), not with a tree. */
START_TEST(test_open_slots)
{
	const struct open_case cases[] = {
		{ NULL, 0, 0, 16 * MIB },
		{ env_open_tree, 0, 0, 0 },
		{ NULL, 1, 1, 16 * MIB },
		{ env_open_tree, 1, 0, 0 },
		{ env_open_stream, 0, 0, 128 << 10 },
		{ env_open_stream, 1, 1, 128 << 10 },
	};

	ck_assert_int_eq(run_ranks(4, cases[_i].env, open_rank,
				   (void *)&cases[_i], 60, NULL), 0);
}
END_TEST

/* Sizes the two ends disagree on (rank 0 sends, rank 1 expects), as
 * for messages: more fill the block and fail with COOP_ERR_TRUNCATE,
 * fewer fail with COOP_ERR_COUNT - through the slot (a packed one's
 * entry holds up to 8 B), streamed past it in two or four parts (the
 * receiver takes as many as the sender wrote), and a block of the
 * slot's size the receiver thinks too large for it.  The last call,
 * sizes agreed, finds both ends at the same turn. */
static const size_t open_bad[][2] = {
	{ 16, 8 }, { 8, 16 }, { 0, 8 }, { 9, 8 }, { 8, 9 }, { 8, 4 },
	{ 4, 12 }, { OPEN_PAST, 8 }, { 8, OPEN_PAST },
	{ OPEN_PAST - 2000, OPEN_PAST }, { OPEN_BIG, OPEN_PAST },
	{ OPEN_PAST, OPEN_BIG }, { OPEN_BIG, 5 }, { OPEN_BIG, OPEN_BIG },
	{ 8, 8 },
};
#define NOPEN_BAD ((int)(sizeof(open_bad) / sizeof(open_bad[0])))

/* Both ranks send (both) or only rank 0 does: only rank 1 receives. */
static void open_mismatch(coop_topo_t *t, int rank, int both, int i)
{
	const size_t s = open_bad[i][0], r = open_bad[i][1], d0[1] = { 0 };
	const size_t mine[1] = { rank ? 8 : s }, theirs[1] = { rank ? r : 8 };
	const size_t want = !rank ? (both ? 8 : 0) : s < r ? s : r;
	static unsigned char sb[OPEN_BIG], rb[OPEN_BIG + TAIL];
	int rc, expect = COOP_SUCCESS;

	t_fill(sb, sizeof(sb), (uint32_t)(rank * 100 + i));
	memset(rb, SENT, sizeof(rb));
	rc = coop_neighbor_alltoallv(t, sb, mine, d0, rb, theirs, d0);
	if (rank && s != r)
		expect = s > r ? COOP_ERR_TRUNCATE : COOP_ERR_COUNT;
	T_ASSERT(rc == expect, "rank %d, %zu B sent into %zu: %s", rank, s,
		 r, coop_strerror(rc));
	T_ASSERT(t_check(rb, want, (uint32_t)(!rank * 100 + i)) < 0 &&
		 rb[want] == SENT, "rank %d, %zu B sent into %zu: data",
		 rank, s, r);
}

static int open_bad_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	const int other = !rank, both = *(const int *)arg;
	coop_topo_info_t in;
	coop_topo_t *t;
	int i;

	(void)size;
	T_OK(coop_topo_create(ctx, COMM_BASE, both || rank, &other, NULL,
			      both || !rank, &other, NULL, 0, &t));
	T_OK(coop_topo_get_info(t, &in));
	T_ASSERT(in.packed[COOP_NBR_ALLTOALL] == (!both && !rank),
		 "rank %d: %d packed", rank, in.packed[COOP_NBR_ALLTOALL]);
	for (i = 0; i < NOPEN_BAD; i++)
		open_mismatch(t, rank, both, i);
	T_OK(coop_topo_free(&t));
	return 0;
}

/* Both ranks send, or rank 0 only (its slot packed). */
START_TEST(test_open_sizes)
{
	int both = !_i;

	ck_assert_int_eq(run_ranks(2, NULL, open_bad_rank, &both, 60, NULL),
			 0);
}
END_TEST

/* A topology of n edges each way between two ranks, with slotted slots
 * per op; blocks of 40000 B (written through them: big) and of 30000. */
static void open_window(coop_context_t *ctx, int rank, int n, int slotted,
			int big)
{
	coop_topo_info_t in;
	struct rk k;
	int j;

	memset(&k, 0, sizeof(k));
	k.ctx = ctx;
	k.rank = rank;
	k.g.n = 2;
	for (j = 0; j < n; j++) {
		g_edge(&k.g, 0, 1);
		g_edge(&k.g, 1, 0);
	}
	T_OK(topo_make(&k, COMM_BASE + (uint32_t)n, 0));
	T_OK(coop_topo_get_info(k.topo, &in));
	T_ASSERT(in.slotted[0] == slotted && in.slotted[1] == slotted,
		 "%d edges: %d/%d slotted, %d expected", n, in.slotted[0],
		 in.slotted[1], slotted);
	open_counted(&k, 40000, (uint64_t)(big ? n : slotted ? 2 * n : 0));
	open_counted(&k, 30000, slotted ? (uint64_t)n : 0);
	topo_done(&k);
}

static int open_window_rank(coop_context_t *ctx, int rank, int size,
			    void *arg)
{
	const int off = *(const int *)arg;

	(void)size;
	open_window(ctx, rank, 2, off ? 0 : 2, !off);
	open_window(ctx, rank, 16, off ? 0 : 16, 0);
	return 0;
}

/* COOP_NEIGHBOR_SLOT_OPEN=64k: two edges each way take windows of
 * 2 MiB (both ops' slots, eight 64 KiB buffers each), so 40000 B go
 * through them; sixteen would take a little over 16 MiB, more than open
 * slots may, so their slots have 32 KiB buffers: 30000 B go through,
 * 40000 stream in two parts.  =0: no slots. */
START_TEST(test_open_window)
{
	static const char *const big[] = { "COOP_NEIGHBOR_SLOT_OPEN=64k",
					   NULL };
	static const char *const off[] = { "COOP_NEIGHBOR_SLOT_OPEN=0",
					   NULL };

	ck_assert_int_eq(run_ranks(2, _i ? off : big, open_window_rank, &_i,
				   60, NULL), 0);
}
END_TEST

/* tc_neighbor() (nbr_test.c) adds these in the case's order */
void nbr_add_open_slots(TCase *tc)
{
	tcase_add_loop_test(tc, test_open_slots, 0, 6);
}

void nbr_add_open_sizes(TCase *tc)
{
	tcase_add_loop_test(tc, test_open_sizes, 0, 2);
}

void nbr_add_open_window(TCase *tc)
{
	tcase_add_loop_test(tc, test_open_window, 0, 2);
}
