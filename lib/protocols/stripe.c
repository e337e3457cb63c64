/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stripe.c - PROTO_STRIPE, offload striping ([Chakraborty18] sec.
 * II-A2 "COOP-hca" and II-B3): an RPUT whose copy is split between the
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
 * the CPU part's copy as its job will make it - through a window (a
 * memcpy) when the provider has them, else the provider's copy (the
 * driver's COPY ioctl, which pins and maps pages, several times slower)
 * - against an engine copy of CALIB_BYTES into a region of our own (both
 * accept any region of the domain, ours too), best of CALIB_ROUNDS each;
 * then adapted from each striped send's two parts (adapt_ratio).  Timing
 * the other path would hand the engine too large a share until the
 * adaptation caught up.
 *
 * Adaptive offload (sec. II-B3): the driver counts the engine's bytes in
 * flight node-wide (offload counters, dma_bytes); from COOP_OFFLOAD_BUSY
 * on no new striped transfer starts (plain RPUT instead, core/load.c), so
 * concurrent transfers do not pile onto a saturated engine.  Messages below
 * COOP_STRIPE_MIN are not striped: the engine's round trip costs more
 * than its share saves.
 *
 * Errors: the FIN carries the first error of either part and goes only
 * when no engine piece is in flight any more (else the engine might still
 * write into a receive buffer its owner has got back); an engine error
 * stops the CPU part, a CPU error stops giving the engine pieces.  A send
 * failed from outside (the peer died) drops its engine part as a DMA send
 * does (stripe_release): the pieces in flight complete unheeded; they
 * read only our buffer and write only the dead peer's region.
 *
 * coopmpi_xfer.h's COOP_XFER_STRIPE PUT jobs (coop_stripe_put) run the
 * same two parts (stripe_start) into the caller's region at its offset,
 * with the same split and R, on a REQ_XFER request: instead of the FIN,
 * status.count gets the bytes of both parts.  The caller chose to
 * stripe: no minimum size, no busy check.
 */
#include <stdlib.h>
#include <string.h>

#include "proto.h"

#define PAGE		4096ULL
#define CALIB_BYTES	(4u << 20)
#define CALIB_ROUNDS	3

/* ---------------- policy ---------------- */

int coop_stripe_usable(const struct coop_context *ctx, uint64_t len)
{
	return coop_dma_usable(ctx) && ctx->proto->stripe_ratio != 0 &&
	       len >= ctx->cfg.stripe_min && !coop_load_offload_busy(ctx);
}

/* ---------------- the ratio ---------------- */

/* One copy of len bytes into our own region as a striped send's CPU
 * part copies it (through a window when there is one, else the
 * provider's copy: the driver's COPY ioctl with kmod); *path: which.
 * UINT64_MAX when it fails. */
static uint64_t time_cpu_copy(struct coop_context *ctx, char *src,
			      size_t len, const struct coop_rkey *key,
			      enum coop_copy_path *path)
{
	uint64_t t0 = coop_now_ns();

	*path = coop_copy_chunk(ctx, ctx->rank, key, 0, src, len,
				COOP_COPY_TO_PEER, 0, NULL);
	return *path == COPY_FAILED ? UINT64_MAX : coop_now_ns() - t0;
}

static double mbps(size_t len, uint64_t ns)
{
	return ns ? (double)len * 1e3 / (double)ns : 0;
}

static const char *path_name(enum coop_copy_path path)
{
	return path == COPY_BY_WINDOW ? "through a window" :
	       path == COPY_BY_PROVIDER ? "by the provider's copy" : "failed";
}

/* BW_engine / BW_cpu from the best of CALIB_ROUNDS copies each; 0 (never
 * stripe) when the engine fails the copy. */
static double measure_ratio(struct coop_context *ctx)
{
	size_t len = CALIB_BYTES;
	char *buf = aligned_alloc(PAGE, 2 * len);
	uint64_t cpu = UINT64_MAX, eng = UINT64_MAX, t = 0;
	enum coop_copy_path path = COPY_FAILED;
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
		t = time_cpu_copy(ctx, buf, len, &key, &path);
		cpu = COOP_MIN(cpu, t);
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
		coop_log(ctx->rank, "stripe: CPU copy %.0f MB/s (%s), offload "
			 "engine %.0f MB/s (%u KiB, best of %d)", mbps(len, cpu),
			 path_name(path), mbps(len, eng == UINT64_MAX ? 0 : eng),
			 CALIB_BYTES >> 10, CALIB_ROUNDS);
	return t ? (double)cpu / (double)eng : 0;
}

/* R in use: configured, else measured at the first call. */
static double stripe_ratio(struct coop_context *ctx)
{
	if (ctx->proto->stripe_ratio >= 0)
		return ctx->proto->stripe_ratio;
	ctx->proto->stripe_ratio = measure_ratio(ctx);
	if (ctx->cfg.verbose)
		coop_log(ctx->rank, "stripe: R = %.3f measured: the engine "
			 "takes %.0f%% of a striped message%s",
			 ctx->proto->stripe_ratio, 100 * ctx->proto->stripe_ratio /
			 (1 + ctx->proto->stripe_ratio), ctx->proto->stripe_ratio ? "" :
			 " (it failed: never)");
	return ctx->proto->stripe_ratio;
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
	const uint64_t *t = s->rndv.u.stripe.ns;
	double cpu, eng, r;

	if (ctx->cfg.stripe_ratio >= 0 || s->status.error || !s->job.done ||
	    !s->rndv.u.stripe.engine.done || t[1] <= t[0] || t[2] <= t[0])
		return;
	cpu = (double)s->job.done / (double)(t[1] - t[0]);
	eng = (double)s->rndv.u.stripe.engine.done / (double)(t[2] - t[0]);
	r = ctx->proto->stripe_ratio + (eng / cpu - ctx->proto->stripe_ratio) / R_WEIGHT;
	ctx->proto->stripe_ratio = r < R_MIN ? R_MIN : r > R_MAX ? R_MAX : r;
}

/* The FIN (a copy job: its byte count) once both parts ended, with the
 * first error. */
static void stripe_fin(struct coop_request *s)
{
	uint64_t done = s->job.done + s->rndv.u.stripe.engine.done;

	if (s->job.queued || dlist_linked(&s->rndv.u.stripe.engine.link))
		return;		/* a part still runs */
	adapt_ratio(s);
	if (s->kind == REQ_SEND)
		coop_proto_sender_fin(s, s->status.error, done);
	else
		s->status.count = done;
	coop_req_event(s, EV_LOCAL);
}

/* The CPU part (s->job) ended. */
static void cpu_done(struct coop_job *j)
{
	struct coop_request *s = j->req;

	if (j->err)
		coop_req_set_error(s, j->err);
	s->rndv.u.stripe.ns[1] = coop_now_ns();
	if (j->err)		/* no more pieces for the engine */
		coop_dma_stripe_stop(s, j->err);
	stripe_fin(s);
}

/* The engine part ended. */
static void engine_done(struct coop_job *j)
{
	struct coop_request *s = j->req;

	s->rndv.u.stripe.ns[2] = coop_now_ns();
	if (j->err) {
		coop_req_set_error(s, j->err);
		coop_job_cancel(&s->job);	/* no more CPU chunks either */
	}
	stripe_fin(s);
}

static const struct coop_job_ops cpu_ops = { .done = cpu_done };
static const struct coop_job_ops engine_ops = { .done = engine_done };

/* Copy s->xfer bytes of s->buf into region key from its byte roff on:
 * the CPU [0, c), the engine [c, s->xfer). */
static void stripe_start(struct coop_request *s, const struct coop_rkey *key,
			 uint64_t roff)
{
	struct coop_context *ctx = s->ctx;
	int engine = coop_dma_open(ctx, NULL);
	uint64_t c = s->rndv.xfer;
	struct coop_job_args a = {
		.kind = JOB_WRITE, .peer = s->msg.peer, .local = s->msg.buf,
		.key = key, .roff = roff, .ops = &cpu_ops,
	};

	s->pending |= EV_LOCAL;
	s->rndv.u.stripe.ns[0] = coop_now_ns();
	if (engine && stripe_ratio(ctx) > 0)
		c = cpu_part(ctx->proto->stripe_ratio, s->rndv.xfer);
	if (!ctx->peers[s->msg.peer].copy_ok) {	/* our CPU cannot write */
		if (!engine) {
			coop_req_fail(s, COOP_ERR_INTERNAL);
			return;
		}
		c = 0;
	}
	a.len = c;
	if (c)
		coop_job_start(s, &a);
	if (c < s->rndv.xfer)	/* may even end at once */
		coop_dma_stripe_part(s, key, roff, c, &engine_ops);
	else
		stripe_fin(s);	/* nothing for the engine (or at all) */
}

/* The receiver named its region in the CTS (s->xfer set by rndv.c).  A
 * STRIPE CTS answers only an RTS with PF_ENGINE: our engine is set up. */
static void stripe_on_cts(struct coop_request *s,
			  const struct coop_pkt_cts *p)
{
	struct coop_rkey key = p->key;

	stripe_start(s, &key, 0);
}

void coop_stripe_put(struct coop_request *r, const struct coop_rkey *key,
		     uint64_t roff)
{
	/* offload_job() and stripe_release */
	r->rndv.proto = PROTO_STRIPE;
	r->rndv.xfer = r->msg.len;
	stripe_start(r, key, roff);
}

/* The receiver answers as for RPUT, with STRIPE in its CTS. */
static int stripe_matched(struct coop_request *r,
			  const struct coop_msgdesc *m, uint64_t split)
{
	struct coop_cts_args a = { .proto = PROTO_STRIPE, .slot = UINT32_MAX };

	(void)m;
	(void)split;
	r->pending |= EV_PEER;
	return coop_proto_send_cts(r, &a);
}

/* A send that failed from outside: its engine part's pieces in flight
 * complete unheeded. */
static void stripe_release(struct coop_request *r)
{
	if (dlist_linked(&r->rndv.u.stripe.engine.link))
		dlist_del(&r->rndv.u.stripe.engine.link);
}

static const struct coop_proto_ops stripe_ops = {
	.name = "stripe", .matched = stripe_matched, .on_cts = stripe_on_cts,
	.release = stripe_release,
};

void coop_stripe_register(struct coop_context *ctx)
{
	coop_proto_register(ctx, PROTO_STRIPE, &stripe_ops);
}
