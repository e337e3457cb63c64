/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * load.c - the load counters as the protocols read and charge them
 * (COOP-load's inputs, offload busy; the rule itself is
 * protocols/select.c's): a rank's load is its pending copy bytes
 * (per-node counters page) plus its decayed copy history (kept in its
 * shared segment, readable by every peer).
 *
 * Why a history term: pending bytes only show work assigned at the
 * instant of a decision; in an iterative exchange every queue is empty
 * when an iteration starts, so the same ranks would be picked every time
 * and the imbalance repeat.  The history (bytes copied, halving every
 * COOP_LOAD_HISTORY_MS; 0 = pending only) carries it forward so choices
 * even out over iterations, as a fair-share scheduler does.
 */
#include "core.h"

/* v halved every half ns of dt; linear between halvings (within 6%). */
static uint64_t decay(uint64_t v, uint64_t dt, uint64_t half)
{
	uint64_t k = dt / half;

	if (k >= 64)
		return 0;
	v >>= k;
	return (uint64_t)((double)v *
			  (1.0 - 0.5 * (double)(dt % half) / (double)half));
}

void coop_load_history_add(struct coop_context *ctx, uint64_t n,
			   uint64_t now)
{
	struct coop_seg_hdr *h = ctx->seg.hdr;
	uint64_t half = ctx->cfg.load_history_ns, v;

	if (!half || !h)
		return;
	v = decay(h->hist_bytes, now - h->hist_ns, half) + n +
	    ctx->hist_deferred;
	ctx->hist_deferred = 0;
	__atomic_store_n(&h->hist_bytes, v, __ATOMIC_RELAXED);
	__atomic_store_n(&h->hist_ns, now, __ATOMIC_RELAXED);
}

/*
 * Copies in the call (job.c: coop_job_copy_now) enter the history in
 * batches of HIST_BATCH bytes, or with the next job's chunk: an update
 * reads the clock, a noticeable share of a 16 KiB copy's cost, while the
 * history weighs COOP_LOAD_HISTORY_MS of copying (a batch is microseconds
 * of it).
 */
#define HIST_BATCH (256u << 10)

void coop_load_history_defer(struct coop_context *ctx, uint64_t n)
{
	if (!ctx->cfg.load_history_ns || !ctx->seg.hdr)
		return;
	ctx->hist_deferred += n;
	if (ctx->hist_deferred >= HIST_BATCH)
		coop_load_history_add(ctx, 0, coop_now_ns());
}

static uint64_t history(const struct coop_seg_hdr *h, uint64_t half,
			uint64_t now)
{
	uint64_t t, v;

	if (!half || !h)
		return 0;
	t = __atomic_load_n(&h->hist_ns, __ATOMIC_RELAXED);
	v = __atomic_load_n(&h->hist_bytes, __ATOMIC_RELAXED);
	return decay(v, now > t ? now - t : 0, half);
}

uint64_t coop_load_score(struct coop_context *ctx, int rank, uint64_t now)
{
	const struct coopmpi_load_slot *ls =
		ctx->prov.ops->load_slot(&ctx->prov, rank);
	const struct coop_seg_hdr *h = rank == ctx->rank ?
		ctx->seg.hdr : ctx->peers[rank].seg.hdr;
	uint64_t pend = ls ? __atomic_load_n(&ls->pending_bytes,
					     __ATOMIC_RELAXED) : 0;

	if (pend >> 62)		/* a discharge overtook its charge */
		pend = 0;
	return pend + history(h, ctx->cfg.load_history_ns, now);
}

/*
 * Copies of a rank's own transfers in flight (core/job.c counts them in
 * its segment).  A rank asked to help with a peer's read while it copies
 * for itself would only interleave the two on its CPU: in an exchange,
 * where both ranks receive at once, the second copier adds handshakes
 * and finer chunks but no CPU, and each side had best copy its own.
 * The reader decides on the RTS, often just before the writer's own copy
 * starts; so a rank whose own copy started or ended while the peer it
 * reads from copied for itself (an exchange) counts as busy for
 * COOP_LOAD_BUSY_MS after.  A ping-pong never overlaps the two (its writer is idle and
 * helps every time); a streaming sender copies nothing.
 */
/* If the peer we copy with copies for itself too, we are in an exchange
 * from now on (for COOP_LOAD_BUSY_MS). */
static void exchange_check(struct coop_context *ctx, struct coop_seg_hdr *h,
			   int peer)
{
	const struct coop_seg_hdr *p = NULL;

	if (peer >= 0 && peer < ctx->size && peer != ctx->rank)
		p = ctx->peers[peer].seg.hdr;
	if (p && __atomic_load_n(&p->own_copies, __ATOMIC_RELAXED))
		__atomic_store_n(&h->exchange_ns, coop_now_ns(),
				 __ATOMIC_RELAXED);
}

void coop_load_own_copy_start(struct coop_context *ctx, int peer)
{
	struct coop_seg_hdr *h = ctx->seg.hdr;

	if (!h)
		return;
	__atomic_add_fetch(&h->own_copies, 1, __ATOMIC_RELAXED);
	exchange_check(ctx, h, peer);
}

/* At the end too: a peer whose copy started during ours saw us copying
 * and counts itself in an exchange; so must we, or we would ask it for a
 * help that it declines, and copy in shared chunks meanwhile. */
void coop_load_own_copy_end(struct coop_context *ctx, int peer)
{
	struct coop_seg_hdr *h = ctx->seg.hdr;

	if (!h)
		return;
	exchange_check(ctx, h, peer);
	__atomic_sub_fetch(&h->own_copies, 1, __ATOMIC_RELAXED);
}

int coop_load_peer_copying(const struct coop_context *ctx, int rank,
			   uint64_t now)
{
	const struct coop_seg_hdr *h = rank == ctx->rank ?
		ctx->seg.hdr : ctx->peers[rank].seg.hdr;
	uint64_t t;

	if (!h)
		return 0;
	if (__atomic_load_n(&h->own_copies, __ATOMIC_RELAXED))
		return 1;
	t = __atomic_load_n(&h->exchange_ns, __ATOMIC_RELAXED);
	return t && now - t < ctx->cfg.load_busy_ns;
}

void coop_load_precharge(struct coop_context *ctx, int rank, int64_t bytes)
{
	struct coopmpi_load_slot *ls = ctx->prov.ops->load_slot(&ctx->prov,
								 rank);

	if (ls && bytes)
		__atomic_fetch_add(&ls->pending_bytes, (uint64_t)bytes,
				   __ATOMIC_RELAXED);
}

/* Adaptive offload ([Chakraborty18] sec. II-B3): the engine in use
 * counts its bytes in flight in the domain's offload counters (the
 * driver dma_bytes, the HCA engine hca_bytes); from COOP_OFFLOAD_BUSY on,
 * no new transfer is given to the engine, so concurrent ones do not pile
 * onto it. */
int coop_load_offload_busy(const struct coop_context *ctx)
{
	const uint64_t *load = ctx->prov.engine_load;

	return ctx->cfg.offload_busy && load &&
	       __atomic_load_n(load, __ATOMIC_RELAXED) >= ctx->cfg.offload_busy;
}
