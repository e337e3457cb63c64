/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * select.c - COOP-hybrid (COOP_RNDV=auto): which rendezvous
 * protocol a message takes, decided by its receiver when the RTS meets
 * the receive ([Chakraborty18] sec. II-B..II-D).  The sender cannot
 * decide: it does not know whether a blocking or a nonblocking receive
 * will match.  It says in its RTS how it waits (PF_BLOCKING,
 * PF_BUFFERED) and whether it has an offload engine (PF_ENGINE); the
 * receiver's answer rides on the CTS it sends anyway (RGET: no CTS, the
 * receiver just reads), so the choice costs no extra control message and
 * both sides always agree.
 *
 * 1. COOP-coll, Table II: a side that blocks has a CPU with nothing
 *    better to do, a side that returned wants it for computation:
 *
 *                         Recv (blocks)   Irecv
 *      Send/Ssend/Rsend   COOP            RPUT
 *      Isend              RGET            COOP-load
 *      Bsend              RGET            RPUT
 *
 *    (Bsend returned after copying to the attached buffer; Rsend's row
 *    is Send's: its receive is posted, RPUT writes at once.)  The table
 *    guesses from the calls who will be idle; RGET and RPUT are run
 *    "assisted" (a COOP-p2p work slot whose split gives the copier
 *    everything), so the other side helps if it turns out idle after
 *    all - blocked in a wait with no copy of its own, as a scatter's or
 *    a gather's root is.  Only on a node with no more ranks than CPUs:
 *    else a waiting rank's CPU serves another rank (the paper's hybrid
 *    also cooperates more only when the system is under-subscribed).
 * 2. COOP-load, when neither blocks: each side's load is its pending
 *    copy bytes (per-node counters) plus its decayed copy history
 *    (below).  The receiver takes the share x of the n bytes that levels
 *    both: Lr + x = Ls + n - x.  x near n: RGET, near 0: RPUT, else
 *    COOP-p2p split at x (each side copies its range first, then helps
 *    with the other's).  Both shares enter the pending counters at once,
 *    the sender's by the receiver (precharge), so decisions taken
 *    meanwhile elsewhere on the node see them.  When both block the
 *    table's COOP is split the same way.  On a node with more ranks than
 *    CPUs a second copier adds no CPU, only its overhead: the message
 *    goes whole to the side that x favours.
 * 3. Offload striping: where the table leaves one CPU copying while the
 *    sender's offload engine is idle (RPUT), the engine takes a share
 *    (stripe.c decides whether it may).
 * Below COOP_HYBRID_MIN a message is RGET: one copier, no handshake.  So
 * is a collective's (REQ_F_SINGLE_COPY) on a node with a CPU per rank:
 * every rank receives its own at the same time, and a second copier or a
 * choice by load only added handshakes and uneven shares (measured on
 * neighbourhood exchanges of 64 KiB-1 MiB, 2 ranks on 2 CPUs: COOP-p2p
 * and COOP-load 1.1-1.4x the time of RGET) - unless the plan says its
 * sender receives nothing in the call (REQ_F_SENDER_IDLE): that CPU
 * would only wait, so the copy is split by load as when both block
 * (the one edge streaming one way, 2 ranks, 1 MiB: 84.6 -> 41.4 us).
 * Oversubscribed, one side copies, by the plan: the sender (RPUT),
 * unless it takes part in more than twice as many of the call's
 * transfers as the receiver (REQ_F_RECEIVER_COPIES: RGET), so a hot
 * spot's centre copies nothing.  Measured with 4 and 8 ranks on 2 CPUs
 * (plain calls, 3 rounds): at 1 MiB RPUT everywhere took 0.6-0.9x the
 * time of RGET everywhere on stencils and random graphs (stencil2d on 4
 * ranks: 1.13 against 1.52 ms), though RGET saves a handshake; on a hot
 * spot of 8 either alone is slower (its centre copies).  The rule before
 * - RGET unless the receiver's load was two messages above the sender's
 * - mixed the two by load noise and took longer than either (stencil4d
 * on 8 ranks, 1 MiB: 5.9-6.3 ms; RGET 5.5-5.8, RPUT 4.2-4.4, this rule
 * 4.3-5.4).  Hot spot of 8, 64 KiB / 1 MiB: 134 / 1490 -> 120 / 1220
 * us; of 4 at 1 MiB 0.40-0.43 -> 0.45-0.46 ms (Open MPI 0.50).  A ratio
 * of 1 or 3 instead of 2 was slower on A(4, 0.5) or on the hot spot of
 * 4.
 * The loads and why they carry a history: core/load.c.
 */
#include "proto.h"

#define SPLIT_ALIGN 4096ULL

/* The receiver's share x of n that levels the loads: lr + x = ls + n - x */
uint64_t coop_select_level_share(uint64_t ls, uint64_t lr, uint64_t n)
{
	double x = ((double)ls - (double)lr + (double)n) / 2;

	if (x <= 0)
		return 0;
	return x >= (double)n ? n : (uint64_t)x;
}

/* A share below 1/COOP_SPLIT_PARTS of the message is not worth a second
 * copier: both ranges are kept at least that large. */
uint64_t coop_select_clamp_split(uint64_t x, uint64_t n)
{
	uint64_t lo = n / COOP_SPLIT_PARTS;
	uint64_t hi = n - n / COOP_SPLIT_PARTS;

	x = (x + SPLIT_ALIGN / 2) & ~(SPLIT_ALIGN - 1);
	return COOP_MIN(COOP_MAX(x, lo), hi);
}

/* Rows of Table II: how the sender waits. */
enum send_kind { SEND_BLOCKS, SEND_RETURNS, SEND_BUFFERED, SEND_KINDS };
enum table_cell { CELL_COOP, CELL_RPUT, CELL_RGET, CELL_LOAD };

static const enum table_cell table2[SEND_KINDS][2] = {
	/*		  Irecv		Recv */
	[SEND_BLOCKS]	= { CELL_RPUT,	CELL_COOP },
	[SEND_RETURNS]	= { CELL_LOAD,	CELL_RGET },
	[SEND_BUFFERED]	= { CELL_RPUT,	CELL_RGET },
};

static enum send_kind send_kind(uint8_t rts_flags)
{
	if (rts_flags & PF_BUFFERED)
		return SEND_BUFFERED;
	return rts_flags & PF_BLOCKING ? SEND_BLOCKS : SEND_RETURNS;
}

/* COOP-load: RGET, RPUT or COOP split; force_coop: both block (CELL_COOP) */
static enum coop_proto by_load(struct coop_context *ctx, int src, uint64_t n,
			       int force_coop, uint64_t *split)
{
	uint64_t now = coop_now_ns();
	uint64_t ls = coop_load_score(ctx, src, now);
	uint64_t lr = coop_load_score(ctx, ctx->rank, now);
	uint64_t x = coop_select_level_share(ls, lr, n);

	if (!force_coop && !ctx->undersubscribed)	/* one copier */
		return x >= n / 2 ? PROTO_RGET : PROTO_RPUT;
	if (!force_coop && x <= n / COOP_SPLIT_PARTS)
		return PROTO_RPUT;
	if (!force_coop && x >= n - n / COOP_SPLIT_PARTS)
		return PROTO_RGET;
	*split = coop_select_clamp_split(x, n);
	return PROTO_COOP;
}

/*
 * RGET or RPUT through a work slot split at the end or the start: the
 * copier's range is everything, and the other side, when it is blocked
 * in a wait with no copy of its own to do, helps from its end (core/job.c).
 * Only on a node with a CPU per rank: else a waiting rank's CPU serves
 * another rank.
 */
static enum coop_proto assisted(const struct coop_context *ctx,
				enum coop_proto p, uint64_t n,
				uint64_t *split)
{
	if (!ctx->undersubscribed || (p != PROTO_RGET && p != PROTO_RPUT))
		return p;
	*split = p == PROTO_RGET ? n : 0;
	return PROTO_COOP;
}

static enum coop_proto table_choice(struct coop_request *r,
				    const struct coop_msgdesc *m,
				    uint64_t *split)
{
	struct coop_context *ctx = r->ctx;
	int recv_blocks = !!(r->msg.flags & COOP_F_BLOCKING);

	switch (table2[send_kind(m->flags)][recv_blocks]) {
	case CELL_COOP:
		return by_load(ctx, m->src, r->rndv.xfer, 1, split);
	case CELL_RGET:
		return PROTO_RGET;
	case CELL_LOAD:
		return by_load(ctx, m->src, r->rndv.xfer, 0, split);
	case CELL_RPUT:
	default:
		return PROTO_RPUT;
	}
}

/* A collective's message: see the head comment */
static enum coop_proto single_copy(struct coop_request *r, int src,
				   uint64_t n, uint64_t *split)
{
	struct coop_context *ctx = r->ctx;

	if (ctx->undersubscribed)
		return r->msg.flags & REQ_F_SENDER_IDLE ?
		       by_load(ctx, src, n, 1, split) : PROTO_RGET;
	return r->msg.flags & REQ_F_RECEIVER_COPIES ? PROTO_RGET : PROTO_RPUT;
}

enum coop_proto coop_select(struct coop_request *r,
			    const struct coop_msgdesc *m, uint64_t *split)
{
	struct coop_context *ctx = r->ctx;
	enum coop_proto p;

	if (r->rndv.xfer < ctx->cfg.hybrid_min)
		return PROTO_RGET;
	p = r->msg.flags & REQ_F_SINGLE_COPY ?
	    single_copy(r, m->src, r->rndv.xfer, split) :
	    table_choice(r, m, split);
	if (p == PROTO_RPUT && (m->flags & PF_ENGINE) &&
	    coop_stripe_usable(ctx, r->rndv.xfer))
		return PROTO_STRIPE;
	if (r->msg.flags & REQ_F_SINGLE_COPY)
		return p;
	return assisted(ctx, p, r->rndv.xfer, split);
}
