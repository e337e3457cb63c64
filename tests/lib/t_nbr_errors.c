/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_nbr_errors.c - what the neighborhood calls refuse: coop_topo_create's
 * bad arguments (on the calling rank) and lists the ranks disagree on
 * (COOP_ERR_CONFIG on every rank), the collectives' bad arguments in
 * every entry point, a block to ourselves of another size, freeing a
 * topology with an active collective and a persistent collective
 * started twice; the topology works after each.
 */
#include <check.h>
#include <string.h>

#include "harness.h"
#include "nbr_test.h"

/* ------------------------------------------------------------------ */
/* bad arguments, disagreeing graphs                                    */
/* ------------------------------------------------------------------ */

/* Local refusals of coop_topo_create, on every rank (no message). */
static void bad_create(coop_context_t *ctx, int size)
{
	const int ok[1] = { 0 }, far[1] = { size }, neg[1] = { -1 },
		  pnull[1] = { COOP_PROC_NULL };
	const uint64_t w[1] = { 8 };
	coop_topo_t *t = NULL;

#define REFUSED(err, ...) do { int rc_ = coop_topo_create(__VA_ARGS__); \
	T_ASSERT(rc_ == (err), "%s -> %s", #__VA_ARGS__, \
		 coop_strerror(rc_)); } while (0)
	REFUSED(COOP_ERR_ARG, NULL, COMM_BASE, 1, ok, NULL, 1, ok, NULL, 0,
		&t);
	REFUSED(COOP_ERR_ARG, ctx, COMM_BASE, 1, ok, NULL, 1, ok, NULL, 0,
		NULL);
	REFUSED(COOP_ERR_ARG, ctx, COMM_BASE, -1, ok, NULL, 1, ok, NULL, 0,
		&t);
	REFUSED(COOP_ERR_ARG, ctx, COMM_BASE, 1, ok, NULL, -3, ok, NULL, 0,
		&t);
	REFUSED(COOP_ERR_ARG, ctx, COMM_BASE, 1, NULL, NULL, 1, ok, NULL, 0,
		&t);
	REFUSED(COOP_ERR_ARG, ctx, COMM_BASE, 1, ok, NULL, 1, NULL, NULL, 0,
		&t);
	REFUSED(COOP_ERR_RANK, ctx, COMM_BASE, 1, ok, NULL, 1, far, NULL, 0,
		&t);
	REFUSED(COOP_ERR_RANK, ctx, COMM_BASE, 1, neg, NULL, 1, ok, NULL, 0,
		&t);
	REFUSED(COOP_ERR_RANK, ctx, COMM_BASE, 1, ok, NULL, 1, pnull, NULL,
		0, &t);
	REFUSED(COOP_ERR_ARG, ctx, COMM_BASE, 1, ok, NULL, 1, ok, NULL,
		1u << 7, &t);
	REFUSED(COOP_ERR_ARG, ctx, COMM_BASE, 1, ok, NULL, 1, ok, NULL,
		COOP_TOPO_EXACT_BYTES, &t);
	REFUSED(COOP_ERR_ARG, ctx, COMM_BASE, 1, ok, w, 1, ok, NULL,
		COOP_TOPO_EXACT_BYTES, &t);
	REFUSED(COOP_ERR_COMM, ctx, COOP_COMM_MAX + 1u, 1, ok, NULL, 1, ok,
		NULL, 0, &t);
#undef REFUSED
}

/* Collective creations whose lists disagree: COOP_ERR_CONFIG on every
 * rank.  A ring r -> r + 1 on comm, broken as case says. */
enum { BREAK_SOURCE, BREAK_TWICE, BREAK_WEIGHT, BREAK_HINTS, NBREAKS };

static void disagree(coop_context_t *ctx, int rank, int size, int how)
{
	int src[2] = { (rank + size - 1) % size }, dst[2] = { (rank + 1) %
							       size };
	uint64_t sw[2] = { 8 }, dw[2] = { 8 };
	int indeg = 1, outdeg = 1, rc;
	unsigned hints = 0;
	coop_topo_t *t = NULL;

	if (how == BREAK_SOURCE && rank == 1)
		indeg = 0;		/* 0 names 1, 1 does not name 0 */
	if (how == BREAK_TWICE && rank == 0)
		dst[outdeg++] = 1;	/* 0 -> 1 twice, 1 names 0 once */
	if (how == BREAK_WEIGHT && rank == 1)
		sw[0] = 9;
	if (how == BREAK_HINTS && rank == size - 1)
		hints = COOP_TOPO_STRICT;
	rc = coop_topo_create(ctx, COMM_BASE + 10 + (uint32_t)how, indeg, src,
			      how == BREAK_WEIGHT ? sw : NULL, outdeg, dst,
			      how == BREAK_WEIGHT ? dw : NULL, hints, &t);
	T_ASSERT(rc == COOP_ERR_CONFIG, "disagreement %d: %s", how,
		 coop_strerror(rc));
}

/* Refusals of the collectives on a ring (every rank has one source and
 * one destination): NULL topology in every entry point, NULL buffers
 * with bytes, NULL requests and arrays. */
static void bad_calls(struct rk *k)
{
	coop_request_t *req = NULL;
	unsigned char b[8];
	const size_t one[1] = { 8 }, zero[1] = { 0 };
	struct call c;
	int op, mode;

	for (op = 0; op < NOPS; op++)
		for (mode = 0; mode < NMODES; mode++) {
			call_setup(&c, k, op, 8);
			T_ASSERT(call_post(&c, NULL, mode, &req) ==
				 COOP_ERR_ARG && !req, "%s %s: NULL topology",
				 op_name[op], mode_name[mode]);
			if (mode != M_BLOCK)
				T_ASSERT(call_post(&c, k->topo, mode, NULL) ==
					 COOP_ERR_ARG, "%s %s: NULL request",
					 op_name[op], mode_name[mode]);
			call_free(&c);
		}
	T_ASSERT(coop_neighbor_alltoall(k->topo, NULL, 8, b, 8) ==
		 COOP_ERR_ARG, "NULL send buffer");
	T_ASSERT(coop_neighbor_alltoall(k->topo, b, 8, NULL, 8) ==
		 COOP_ERR_ARG, "NULL receive buffer");
	T_ASSERT(coop_neighbor_allgather(k->topo, NULL, 8, b, 8) ==
		 COOP_ERR_ARG, "allgather: NULL send buffer");
	T_ASSERT(coop_ineighbor_allgatherv(k->topo, b, 8, NULL, one, zero,
					   &req) == COOP_ERR_ARG && !req,
		 "allgatherv: NULL receive buffer");
	T_ASSERT(coop_neighbor_alltoallv(k->topo, b, one, NULL, b, one,
					 zero) == COOP_ERR_ARG,
		 "alltoallv: NULL send displacements");
	T_ASSERT(coop_neighbor_alltoallv(k->topo, b, one, zero, b, NULL,
					 zero) == COOP_ERR_ARG,
		 "alltoallv: NULL receive sizes");
	T_ASSERT(coop_neighbor_allgatherv_init(k->topo, b, 8, b, one, NULL,
					       &req) == COOP_ERR_ARG && !req,
		 "allgatherv_init: NULL displacements");
}

/* Free refused while a nonblocking collective of the topology is active
 * (blocking calls of the op before and after it: the request the
 * topology keeps for them outlives the refusal); a persistent one
 * started twice. */
static void busy_free(struct rk *k)
{
	coop_request_t *req = NULL;
	struct call c, small;
	int rc;

	snprintf(k->what, sizeof(k->what), "active at free");
	call_setup(&c, k, OP_A2A, MIB);
	call_setup(&small, k, OP_A2A, 8);
	blocking_call(&small, k);
	call_fill(&c, k);
	T_OK(call_post(&c, k->topo, M_NONBLOCK, &req));
	rc = coop_topo_free(&k->topo);
	T_ASSERT(rc == COOP_ERR_STATE && k->topo, "free while active: %s",
		 coop_strerror(rc));
	complete(k, &req, 0);
	call_check(&c, k);
	blocking_call(&small, k);
	blocking_call(&c, k);
	call_free(&small);
	call_free(&c);

	snprintf(k->what, sizeof(k->what), "persistent started twice");
	call_setup(&c, k, OP_AG, 100);
	T_OK(call_post(&c, k->topo, M_PERSIST, &req));
	call_fill(&c, k);
	T_OK(coop_start(&req));
	rc = coop_start(&req);
	T_ASSERT(rc == COOP_ERR_REQUEST, "second start: %s",
		 coop_strerror(rc));
	complete(k, &req, 1);
	call_check(&c, k);
	T_OK(coop_request_free(&req));
	call_free(&c);
}

/* A block to ourselves is copied, not sent, with a message's outcome:
 * more bytes than the receive block fill it and fail with
 * COOP_ERR_TRUNCATE, fewer fail with COOP_ERR_COUNT. */
static void self_sizes(coop_context_t *ctx, int rank)
{
	const size_t d0[1] = { 0 }, n8[1] = { 8 }, n16[1] = { 16 };
	unsigned char sb[16], rb[16];
	coop_topo_t *t = NULL;
	int rc;

	memset(sb, 0x5a, sizeof(sb));
	T_OK(coop_topo_create(ctx, COMM_BASE + 11, 1, &rank, NULL, 1, &rank,
			      NULL, 0, &t));
	memset(rb, 0, sizeof(rb));
	rc = coop_neighbor_alltoallv(t, sb, n16, d0, rb, n8, d0);
	T_ASSERT(rc == COOP_ERR_TRUNCATE && rb[7] == 0x5a && !rb[8],
		 "self: 16 B into 8: %s", coop_strerror(rc));
	rc = coop_neighbor_alltoallv(t, sb, n8, d0, rb, n16, d0);
	T_ASSERT(rc == COOP_ERR_COUNT, "self: 8 B into 16: %s",
		 coop_strerror(rc));
	T_OK(coop_topo_free(&t));
}

static int bad_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	const struct gspec ring = { .kind = G_RING, .n = size };
	coop_topo_info_t info;
	struct rk k;
	int how;

	(void)arg;
	bad_create(ctx, size);
	for (how = 0; how < NBREAKS; how++)
		disagree(ctx, rank, size, how);
	rk_init(&k, ctx, rank, &ring);
	/* the comm of the failed creations, and COMM_BASE, still work */
	T_OK(topo_make(&k, COMM_BASE + 10, 0));
	check_info(&k, NULL);
	T_ASSERT(coop_topo_get_info(NULL, &info) == COOP_ERR_ARG,
		 "get_info(NULL, info)");
	T_ASSERT(coop_topo_get_info(k.topo, NULL) == COOP_ERR_ARG,
		 "get_info(topo, NULL)");
	bad_calls(&k);
	self_sizes(ctx, rank);
	run_call(&k, OP_A2AV, M_BLOCK, 100);
	busy_free(&k);
	topo_done(&k);
	T_ASSERT(coop_topo_free(NULL) == COOP_ERR_ARG, "free(NULL)");
	return 0;
}

START_TEST(test_bad_args)
{
	ck_assert_int_eq(run_ranks(4, NULL, bad_rank, NULL, 60, NULL), 0);
}
END_TEST

/* tc_neighbor() (nbr_test.c) adds these in the case's order */
void nbr_add_bad_args(TCase *tc)
{
	tcase_add_test(tc, test_bad_args);
}
