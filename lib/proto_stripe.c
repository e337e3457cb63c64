/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * proto_stripe.c - PROTO_STRIPE, offload striping (seed 000, sec. II-A2
 * "COOP-hca" and II-B3): an RPUT whose copy is split between the
 * sender's CPU and the provider's offload engine, working at the same
 * time.
 *
 *   S -RTS(PF_ENGINE)-> R; R -CTS(STRIPE, receive region)-> S; S copies
 *   [0, c) itself (a JOB_WRITE copy job) and gives [c, n) to the engine
 *   (offload_put into the same region at offset c, in pieces, without a
 *   notification); when both parts are done, S sends the FIN.
 *
 * The receiver does what it does for RPUT.  The split: the engine takes
 * R / (1 + R) of the bytes, R = BW_engine / BW_cpu (the paper's
 * R_optimal), so that both parts end together; c is rounded to a page.
 * R is COOP_STRIPE_RATIO, or measured once, at the first striped send:
 * the provider's CPU copy path (the driver's COPY ioctl with kmod, which
 * pins and maps pages: much slower than a memcpy) against an engine copy
 * of CALIB_BYTES into a region of our own (both accept any region of the
 * domain, ours too), best of CALIB_ROUNDS each; then adapted from each
 * striped send's two parts (adapt_ratio).
 *
 * Adaptive offload (sec. II-B3): the driver counts the engine's bytes in
 * flight node-wide (offload counters, dma_bytes); from COOP_OFFLOAD_BUSY
 * on no new striped transfer starts (plain RPUT instead), so concurrent
 * transfers do not pile onto a saturated engine.  Messages below
 * COOP_STRIPE_MIN are not striped: the engine's round trip costs more
 * than its share saves.
 *
 * Errors: the FIN carries the first error of either part and goes only
 * when no engine piece is in flight any more (else the engine might still
 * write into a receive buffer its owner has got back); an engine error
 * stops the CPU part, a CPU error stops giving the engine pieces.  A send
 * failed from outside (the peer died) drops its engine part as a DMA send
 * does (coop_dma_release): the pieces in flight complete unheeded; they
 * read only our buffer and write only the dead peer's region.
 */
#include <stdlib.h>
#include <string.h>

#include "coop_internal.h"

#define PAGE		4096ULL
#define CALIB_BYTES	(4u << 20)
#define CALIB_ROUNDS	3

/* ---------------- policy ---------------- */

int coop_offload_busy(const struct coop_context *ctx)
{
	struct coop_provider *p = (struct coop_provider *)&ctx->prov;
	struct coopmpi_offload_counters *o;

	if (!ctx->cfg.offload_busy || !p->ops->offload)
		return 0;
	o = p->ops->offload(p);
	return o && __atomic_load_n(&o->dma_bytes, __ATOMIC_RELAXED) >=
			    ctx->cfg.offload_busy;
}

int coop_stripe_usable(const struct coop_context *ctx, uint64_t len)
{
	return coop_dma_usable(ctx) && ctx->stripe_ratio != 0 &&
	       len >= ctx->cfg.stripe_min && !coop_offload_busy(ctx);
}

/* ---------------- the ratio ---------------- */

/* One copy of len bytes by the provider's CPU path (what a striped
 * send's CPU part runs: the driver's COPY ioctl with kmod) into our own
 * region; UINT64_MAX when it fails. */
static uint64_t time_cpu_copy(struct coop_context *ctx, const char *src,
			      size_t len, const struct coop_rkey *key)
{
	struct iovec iov = { (void *)src, len };
	uint64_t t0 = coop_now_ns();

	if (ctx->prov.ops->copy(&ctx->prov, ctx->rank, key, 0, &iov, 1, len,
				COOP_COPY_TO_PEER) < 0)
		return UINT64_MAX;
	return coop_now_ns() - t0;
}

static double mbps(size_t len, uint64_t ns)
{
	return ns ? (double)len * 1e3 / (double)ns : 0;
}

/* BW_engine / BW_cpu from the best of CALIB_ROUNDS copies each; 0 (never
 * stripe) when the engine fails the copy. */
static double measure_ratio(struct coop_context *ctx)
{
	size_t len = CALIB_BYTES;
	char *buf = aligned_alloc(PAGE, 2 * len);
	uint64_t cpu = UINT64_MAX, eng = UINT64_MAX, t = 0;
	struct coop_rkey key;
	int i;

	if (!buf)
		return 0;
	memset(buf, 1, 2 * len);	/* fault both halves in */
	if (ctx->prov.ops->reg(&ctx->prov, buf + len, len,
			       COOPMPI_REGION_WRITE, &key)) {
		free(buf);
		return 0;
	}
	for (i = 0; i < CALIB_ROUNDS; i++) {
		cpu = COOP_MIN(cpu, time_cpu_copy(ctx, buf, len, &key));
		t = coop_dma_time_put(ctx, buf, len, &key);
		if (!t || t == UINT64_MAX)
			break;
		eng = COOP_MIN(eng, t);
	}
	if (t == UINT64_MAX)
		return 0;	/* the engine may still write there: leak */
	ctx->prov.ops->dereg(&ctx->prov, &key);
	free(buf);
	if (ctx->cfg.verbose)
		coop_log(ctx->rank, "stripe: CPU copy %.0f MB/s, offload engine "
			 "%.0f MB/s (%u KiB, best of %d)", mbps(len, cpu),
			 mbps(len, eng == UINT64_MAX ? 0 : eng), CALIB_BYTES >> 10,
			 CALIB_ROUNDS);
	return t ? (double)cpu / (double)eng : 0;
}

/* R in use: configured, else measured at the first call. */
static double stripe_ratio(struct coop_context *ctx)
{
	if (ctx->stripe_ratio >= 0)
		return ctx->stripe_ratio;
	ctx->stripe_ratio = measure_ratio(ctx);
	if (ctx->cfg.verbose)
		coop_log(ctx->rank, "stripe: R = %.3f measured: the engine "
			 "takes %.0f%% of a striped message%s",
			 ctx->stripe_ratio, 100 * ctx->stripe_ratio /
			 (1 + ctx->stripe_ratio), ctx->stripe_ratio ? "" :
			 " (it failed: never)");
	return ctx->stripe_ratio;
}

/* The CPU's part [0, c) of n bytes: n / (1 + R), to the nearest page. */
static uint64_t cpu_part(double r, uint64_t n)
{
	uint64_t c = (uint64_t)((double)n / (1 + r) + PAGE / 2) & ~(PAGE - 1);

	return COOP_MIN(c, n);
}

/* ---------------- sender ---------------- */

/*
 * A measured R follows what striped sends see: each one that completes
 * with both parts gives the engine's and the CPU's rates while they ran
 * side by side (the one-off measurement had them alone), averaged in
 * with weight 1/R_WEIGHT.  A configured R stays as it is.
 */
#define R_WEIGHT 4
#define R_MIN (1.0 / 64)
#define R_MAX 64.0

static void adapt_ratio(struct coop_request *s)
{
	struct coop_context *ctx = s->ctx;
	const uint64_t *t = s->stripe_ns;
	double cpu, eng, r;

	if (ctx->cfg.stripe_ratio >= 0 || s->err || !s->job.done ||
	    !s->ejob.done || t[1] <= t[0] || t[2] <= t[0])
		return;
	cpu = (double)s->job.done / (double)(t[1] - t[0]);
	eng = (double)s->ejob.done / (double)(t[2] - t[0]);
	r = ctx->stripe_ratio + (eng / cpu - ctx->stripe_ratio) / R_WEIGHT;
	ctx->stripe_ratio = r < R_MIN ? R_MIN : r > R_MAX ? R_MAX : r;
}

/* The FIN once both parts ended, with the first error. */
static void stripe_fin(struct coop_request *s)
{
	if (s->job.queued || dlist_linked(&s->elink))
		return;		/* a part still runs */
	adapt_ratio(s);
	coop_send_fin(s->ctx, s->peer, s->rid, s->err, s->len, s->tag,
		      s->job.done + s->ejob.done,
		      s->rts_sent ? PF_RTS_SENT : 0);
	coop_req_event(s, EV_LOCAL);
}

void coop_stripe_start(struct coop_request *s, const struct coop_pkt_cts *p)
{
	struct coop_context *ctx = s->ctx;
	struct coop_rkey key = s->job.key;	/* the CTS's region */
	int engine = coop_dma_usable(ctx);
	uint64_t c = s->xfer;

	(void)p;		/* s->job.key and s->xfer come from it */
	s->pending |= EV_LOCAL;
	memset(&s->ejob, 0, sizeof(s->ejob));
	s->stripe_ns[0] = coop_now_ns();
	s->stripe_ns[1] = s->stripe_ns[2] = 0;
	if (engine && stripe_ratio(ctx) > 0)
		c = cpu_part(ctx->stripe_ratio, s->xfer);
	if (!ctx->peers[s->peer].copy_ok) {	/* our CPU cannot write */
		if (!engine) {
			coop_req_fail(s, COOP_ERR_INTERNAL);
			return;
		}
		c = 0;
	}
	if (c)
		coop_job_start(s, JOB_WRITE, s->peer, s->buf, &key, c, NULL, 0);
	if (c < s->xfer)
		coop_dma_stripe_part(s, c);	/* may even end at once */
	else
		stripe_fin(s);	/* nothing for the engine (or at all) */
}

void coop_stripe_cpu_done(struct coop_request *s)
{
	s->stripe_ns[1] = coop_now_ns();
	if (s->job.err)		/* no more pieces for the engine */
		coop_dma_stripe_stop(s, s->job.err);
	stripe_fin(s);
}

void coop_stripe_engine_done(struct coop_request *s)
{
	s->stripe_ns[2] = coop_now_ns();
	if (s->ejob.err) {
		coop_req_set_error(s, s->ejob.err);
		coop_job_cancel(s);	/* no more CPU chunks either */
	}
	stripe_fin(s);
}
