/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * dma.c - PROTO_DMA, "RPUT by the offload engine": neither CPU
 * copies.
 *
 *   S -RTS(DMA)-> R; R arms a notification slot, -CTS(receive region,
 *   slot, notification area)-> S; S gives the copy to the provider's
 *   offload engine, with a 16-byte notification into R's slot written
 *   by the engine after the data.  S completes on the engine's
 *   completion, R when it sees its slot's word change to the value it
 *   expects.
 *
 * Why a notification rather than a FIN sent on S's completion: R then
 * completes without any further step of S (S may be computing, not
 * calling the library) and without a control packet; it is the engine's
 * form of COOP-p2p's shared done counter.  To cover every byte with one
 * notification, a message is one copy; only above the engine's
 * max_length is it cut, and the last piece, which notifies, is given
 * only when the others completed (that one step needs S).  A failed
 * copy writes no notification: S sends a FIN with the error instead.
 * R answers RPUT when it has no free slot or cannot register its
 * notification area; S chooses DMA only when its provider has an engine.
 *
 * Notification area: NOTE_SLOTS 16-byte slots, page aligned, registered
 * for writing on the first DMA receive.  A slot's first word is reset to
 * NOTE_EMPTY before the CTS goes out; the notification writes
 * rreq << 32 | slot there (never NOTE_EMPTY: slot < 2^32 - 1), then the
 * byte count.  A slot is given back when its receive completes or fails;
 * it fails only on a FIN with an error or the sender's death, after
 * which that sender writes nothing more (the driver cancels a closed
 * endpoint's copies before its ring shows it closed).
 *
 * Counters: the engine's copies are no CPU's load, so they stay out of
 * the load slots; the provider keeps the offload counters (dma_ops,
 * dma_bytes in flight) itself.
 *
 * The engine's part of a striped send (PROTO_STRIPE, stripe.c) is an
 * offload job too, s->u.stripe.engine on the list of striped parts, in
 * pieces like DMA's but without a notification (the sender's FIN covers
 * both parts).  An offload job's end runs its done callback.  While this
 * state exists, every progress step reaps the engine (core upcalls).
 *
 * coopmpi_xfer.h's PUT jobs with COOP_XFER_ENGINE (coop_dma_put) are
 * offload jobs of REQ_XFER requests on the DMA list (r->job, r->proto
 * PROTO_DMA so that dma_release drops a failed one), without a
 * notification: the request completes when every piece completed, i.e.
 * the bytes are in the peer's region; with COOP_XFER_STRIPE the engine
 * part is a striped send's (stripe.c: coop_stripe_put).  Such jobs write
 * at their region offset (j->roff), rendezvous ones at 0.  The engine is
 * set up for them on demand (coop_dma_open), also where the settings
 * keep the protocols from using it (coop_dma_usable: a soft engine in
 * auto mode, COOP_RNDV=rput, ...).
 */
#include <stdlib.h>
#include <string.h>

#include "proto.h"

#define NOTE_SLOTS 1024		/* DMA receives in progress at once */
#define NOTE_EMPTY UINT64_MAX
#define REAP_BATCH 32
#define TIMED_TAG (1ULL << 32)	/* not a request id: those are 32-bit */

struct note {
	uint64_t word;		/* written last, with one 64-bit store */
	uint64_t bytes;
};

_Static_assert(sizeof(struct note) == COOP_OFFLOAD_NOTIFY_SIZE, "note");

struct coop_dma {
	/* sender */
	int open;		/* the provider's engine is set up */
	int engine;		/* ... and the protocols may use it */
	const char *name;	/* which engine: "hw", "soft" */
	uint64_t max_length;	/* of one copy */
	unsigned inflight;	/* copies given to the engine, not completed */
	int up;			/* our progress upcall's handle */
	struct dlist jobs;	/* DMA sends' offload jobs (s->job) */
	struct dlist stripes;	/* striped sends' engine parts */
	uint64_t timed;		/* coop_dma_time_put: its copy completed */
	/* receiver */
	struct note *area;
	struct coop_rkey akey;
	int area_state;		/* 0 not yet, 1 registered, -1 failed */
	uint32_t nfree, nbusy;
	uint32_t freel[NOTE_SLOTS];
	uint32_t busy[NOTE_SLOTS];	/* armed slots, dense, polled */
	uint32_t bpos[NOTE_SLOTS];	/* where a slot is in busy[] */
	uint32_t rid[NOTE_SLOTS];	/* the receive an armed slot serves */
};

static uint64_t note_word(uint32_t rreq, uint32_t slot)
{
	return (uint64_t)rreq << 32 | slot;
}

static int dma_progress(struct coop_context *ctx);
static int dma_busy(const struct coop_context *ctx);

static struct coop_dma *dma_get(struct coop_context *ctx)
{
	struct coop_dma *d = ctx->proto->dma;
	uint32_t i;

	if (d)
		return d;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	dlist_init(&d->jobs);
	dlist_init(&d->stripes);
	for (i = 0; i < NOTE_SLOTS; i++)
		d->freel[i] = NOTE_SLOTS - 1 - i;
	d->nfree = NOTE_SLOTS;
	d->up = coop_up_register(ctx, dma_progress, dma_busy);
	if (d->up < 0) {
		free(d);
		return NULL;
	}
	coop_up_switch(ctx, d->up, 1);
	ctx->proto->dma = d;
	return d;
}

/* ---------------- setup ---------------- */

/* The setting that asks for the engine (for the note when there is
 * none), "" when only auto mode's striping might use it, or NULL. */
static const char *engine_wanted(const struct coop_config *cfg)
{
	if (cfg->rndv == COOP_RNDV_DMA)
		return "COOP_RNDV=dma";
	if (cfg->rndv == COOP_RNDV_STRIPE)
		return "COOP_RNDV=stripe";
	if (cfg->offload)
		return "COOP_OFFLOAD=1";
	return cfg->rndv == COOP_RNDV_AUTO && cfg->stripe_ratio != 0 ? "" :
								       NULL;
}

void coop_dma_init(struct coop_context *ctx)
{
	const struct coop_provider_ops *ops = ctx->prov.ops;
	const char *why = engine_wanted(&ctx->cfg);
	struct coop_offload_info info;
	int rc = -EOPNOTSUPP;

	ctx->proto->stripe_ratio = ctx->cfg.stripe_ratio;
	if (!why)
		return;		/* nothing will ask for the engine */
	if (ops->offload_info)
		rc = ops->offload_info(&ctx->prov, &info);
	if (!rc && !*why && ctx->proto->stripe_ratio < 0 &&
	    !strcmp(info.engine, "soft")) {
		/* kernel threads copying on the node's own CPUs: striping
		 * onto them adds no bandwidth, only takes CPUs from ranks */
		if (ctx->cfg.verbose)
			coop_log(ctx->rank, "auto: soft offload engine not "
				 "used for striping (set COOP_STRIPE_RATIO to "
				 "force it)");
		return;
	}
	if (!rc && dma_get(ctx)) {
		ctx->proto->dma->open = 1;
		ctx->proto->dma->engine = 1;
		ctx->proto->dma->name = info.engine;
		ctx->proto->dma->max_length = info.max_length;
		if (ctx->cfg.verbose && ctx->proto->stripe_ratio >= 0)
			coop_log(ctx->rank, "stripe: R = %.3f "
				 "(COOP_STRIPE_RATIO)", ctx->proto->stripe_ratio);
		return;		/* the provider said which engine and path */
	}
	if (!rc)
		rc = -ENOMEM;
	else
		ctx->proto->engine_none = 1;	/* coop_dma_open: asked */
	if (ctx->cfg.verbose && *why)
		coop_log(ctx->rank, "%s: provider %s has no offload engine "
			 "(%s): %s", why, ops->name, strerror(-rc),
			 ctx->cfg.rndv == COOP_RNDV_DMA ||
			 ctx->cfg.rndv == COOP_RNDV_STRIPE ?
			 "RPUT instead" : "auto mode without it");
}

void coop_dma_fini(struct coop_context *ctx)
{
	struct coop_dma *d = ctx->proto->dma;

	if (!d)
		return;
	if (d->area_state > 0)
		ctx->prov.ops->dereg(&ctx->prov, &d->akey);
	coop_up_switch(ctx, d->up, 0);
	free(d->area);
	free(d);
	ctx->proto->dma = NULL;
}

int coop_dma_usable(const struct coop_context *ctx)
{
	return ctx->proto->dma && ctx->proto->dma->engine;
}

int coop_dma_open(struct coop_context *ctx, const char **name)
{
	const struct coop_provider_ops *ops = ctx->prov.ops;
	struct coop_offload_info info;
	struct coop_dma *d = ctx->proto->dma;

	if (!(d && d->open)) {
		if (ctx->proto->engine_none || !ops->offload_info)
			return 0;
		if (ops->offload_info(&ctx->prov, &info)) {
			ctx->proto->engine_none = 1;	/* ask once */
			return 0;
		}
		d = dma_get(ctx);
		if (!d)
			return 0;	/* may work another time */
		d->open = 1;	/* d->engine stays as coop_dma_init left it */
		d->name = info.engine;
		d->max_length = info.max_length;
		if (ctx->cfg.verbose)
			coop_log(ctx->rank, "offload engine %s (%s) set up for "
				 "copy jobs", info.engine, info.path);
	}
	if (name)
		*name = d->name;
	return 1;
}

static int dma_busy(const struct coop_context *ctx)
{
	const struct coop_dma *d = ctx->proto->dma;

	return d && (d->inflight || d->nbusy || !dlist_empty(&d->jobs) ||
		     !dlist_empty(&d->stripes));
}

/* ---------------- receiver: notification slots ---------------- */

/* Register the notification area on first use: 0, or -1 for good. */
static int area_ready(struct coop_context *ctx, struct coop_dma *d)
{
	size_t bytes = NOTE_SLOTS * sizeof(struct note);

	if (d->area_state)
		return d->area_state > 0 ? 0 : -1;
	d->area_state = -1;
	d->area = aligned_alloc(4096, bytes);
	if (!d->area)
		return -1;
	memset(d->area, 0xff, bytes);
	if (ctx->prov.ops->reg(&ctx->prov, d->area, bytes,
			       COOPMPI_REGION_WRITE, &d->akey)) {
		free(d->area);
		d->area = NULL;
		return -1;
	}
	d->area_state = 1;
	return 0;
}

/* Receiver: arm a notification slot for r: 0, or -1 when there is none
 * (answer RPUT instead). */
static int arm(struct coop_request *r)
{
	struct coop_context *ctx = r->ctx;
	struct coop_dma *d = dma_get(ctx);
	uint32_t slot;

	if (!d || !d->nfree || area_ready(ctx, d))
		return -1;
	slot = d->freel[--d->nfree];
	/* the CTS (a release of the ring slot) orders this before the
	 * engine's write */
	__atomic_store_n(&d->area[slot].word, NOTE_EMPTY, __ATOMIC_RELAXED);
	d->rid[slot] = coop_req_id(r);
	d->bpos[slot] = d->nbusy;
	d->busy[d->nbusy++] = slot;
	r->rndv.u.dma.nslot = slot;
	r->rndv.u.dma.armed = 1;
	return 0;
}

static int dma_matched(struct coop_request *r, const struct coop_msgdesc *m,
		       uint64_t split)
{
	struct coop_cts_args a = { .proto = PROTO_DMA };

	(void)m;
	(void)split;
	if (arm(r))
		return -1;
	a.slot = r->rndv.u.dma.nslot;
	a.ncookie = r->ctx->proto->dma->akey.cookie;
	r->pending |= EV_PEER;
	return coop_proto_send_cts(r, &a);
}

static void slot_free(struct coop_dma *d, uint32_t slot)
{
	uint32_t last = d->busy[--d->nbusy];

	d->busy[d->bpos[slot]] = last;
	d->bpos[last] = d->bpos[slot];
	d->freel[d->nfree++] = slot;
}

/* Receives whose notification arrived complete. */
static int notes_poll(struct coop_context *ctx, struct coop_dma *d)
{
	uint32_t i = 0, slot;
	int n = 0;

	while (i < d->nbusy) {
		struct coop_request *r;

		slot = d->busy[i];
		if (__atomic_load_n(&d->area[slot].word, __ATOMIC_ACQUIRE) !=
		    note_word(d->rid[slot], slot)) {
			i++;
			continue;
		}
		slot_free(d, slot);	/* busy[i] is another slot now */
		/* an armed slot's receive is alive: see dma_release */
		r = coop_req_lookup(ctx, d->rid[slot]);
		if (r) {
			r->rndv.u.dma.armed = 0;
			coop_req_event(r, EV_PEER);
		}
		n++;
	}
	return n;
}

/* ---------------- sender: offload jobs ---------------- */

/* The offload job of send or copy job s that an engine completion is
 * for: DMA's (or COOP_XFER_ENGINE's) s->job, or a striped send's (or
 * COOP_XFER_STRIPE's) engine part; NULL when it ended. */
static struct coop_job *offload_job(struct coop_request *s)
{
	struct coop_job *j = s->rndv.proto == PROTO_STRIPE ?
			     &s->rndv.u.stripe.engine : &s->job;

	if ((s->kind != REQ_SEND && s->kind != REQ_XFER) ||
	    j->kind != JOB_OFFLOAD || !dlist_linked(&j->link))
		return NULL;
	return j;
}

/* Does job j end with a notification?  A DMA send's does (dma_on_cts
 * names the receiver's slot); a striped send's engine part does not (its
 * FIN does), nor do coopmpi_xfer.h's jobs (their completion is the
 * caller's to tell). */
static int job_notifies(const struct coop_job *j)
{
	return j->nkey.length != 0;
}

static int job_put(struct coop_context *ctx, struct coop_request *s,
		   struct coop_job *j, uint64_t len, int note)
{
	struct note n = {
		note_word(s->rndv.rid, (uint32_t)(j->noff / sizeof(n))), j->len
	};

	return ctx->prov.ops->offload_put(&ctx->prov, j->peer,
					  j->local + j->cursor, len, &j->key,
					  j->roff + j->cursor,
					  note ? &j->nkey : NULL,
					  j->noff, &n, coop_req_id(s));
}

static void job_end(struct coop_job *j)
{
	dlist_del(&j->link);
	j->ops->done(j);
}

/*
 * Give the engine what it takes of job j of s.  A notifying job's last
 * piece carries the notification and waits until the others completed,
 * so that the notification covers every byte.
 */
static int job_submit(struct coop_context *ctx, struct coop_request *s,
		      struct coop_job *j)
{
	struct coop_dma *d = ctx->proto->dma;
	int n = 0, rc;

	while (!j->err && !j->notified) {
		uint64_t len = COOP_MIN(j->len - j->cursor, d->max_length);
		int last = j->cursor + len == j->len;
		int note = last && job_notifies(j);

		if (note && j->pieces)
			break;
		rc = job_put(ctx, s, j, len, note);
		if (rc == -EAGAIN)
			break;	/* engine full: again after completions */
		if (rc) {
			j->err = coop_err_from_errno(rc);
			break;
		}
		j->cursor += len;
		j->pieces++;
		j->notified = (uint8_t)last;
		d->inflight++;
		ctx->stats.offload_bytes += len;
		n++;
	}
	if (j->err && !j->pieces)
		job_end(j);
	return n;
}

/* DMA send: the receiver knows from the notification; a FIN only tells
 * it an error. */
static void dma_done(struct coop_job *j)
{
	struct coop_request *s = j->req;

	if (j->err) {
		coop_req_set_error(s, j->err);
		coop_proto_sender_fin(s, j->err, j->done);
	}
	coop_req_event(s, EV_LOCAL);
}

static const struct coop_job_ops dma_job_ops = { .done = dma_done };

/* An offload job of s moving [off, s->xfer) of its buffer into region
 * key, whose byte roff is the buffer's byte 0 (the CTS's region: 0). */
static void offload_job_init(struct coop_job *j, struct coop_request *s,
			     struct coop_rkey key, uint64_t roff, uint64_t off,
			     const struct coop_job_ops *ops)
{
	memset(j, 0, sizeof(*j));
	dlist_init(&j->link);
	j->req = s;
	j->ops = ops;
	j->kind = JOB_OFFLOAD;
	j->peer = s->msg.peer;
	j->local = s->msg.buf;	/* piece at cursor: local + cursor -> */
	j->key = key;		/* roff + cursor of the region */
	j->roff = roff;
	j->cursor = off;
	j->len = s->rndv.xfer;
	j->own_slot = -1;
}

static void dma_on_cts(struct coop_request *s, const struct coop_pkt_cts *p)
{
	struct coop_context *ctx = s->ctx;
	struct coop_job *j = &s->job;

	s->pending |= EV_LOCAL;
	if (!coop_dma_usable(ctx)) {	/* we never asked for DMA then */
		coop_req_fail(s, COOP_ERR_INTERNAL);
		return;
	}
	offload_job_init(j, s, s->job.key, 0, 0, &dma_job_ops);
	j->noff = (uint64_t)p->slot * sizeof(struct note);
	j->nkey.cookie = p->ncookie;
	j->nkey.length = j->noff + sizeof(struct note);	/* at least */
	dlist_add_tail(&ctx->proto->dma->jobs, &j->link);
	job_submit(ctx, s, j);
}

static int jobs_step(struct coop_context *ctx, struct coop_dma *d)
{
	struct dlist *pos, *tmp;
	struct coop_job *j;
	int n = 0;

	dlist_for_each_safe(pos, tmp, &d->jobs) {
		j = container_of(pos, struct coop_job, link);
		n += job_submit(ctx, j->req, j);
	}
	dlist_for_each_safe(pos, tmp, &d->stripes) {
		j = container_of(pos, struct coop_job, link);
		n += job_submit(ctx, j->req, j);
	}
	return n;
}

static void on_done(struct coop_context *ctx, const struct coop_offload_done *c)
{
	struct coop_request *s;
	struct coop_job *j;

	if (c->tag == TIMED_TAG) {	/* coop_dma_time_put's copy */
		ctx->proto->dma->timed = c->status ? UINT64_MAX : coop_now_ns();
		return;
	}
	ctx->proto->dma->inflight--;
	s = coop_req_lookup(ctx, (uint32_t)c->tag);
	j = s ? offload_job(s) : NULL;
	if (!j)
		return;		/* the send failed meanwhile */
	j->pieces--;
	j->done += c->bytes;
	if (c->status && !j->err) {
		if (c->status == -ESRCH || c->status == -EPIPE)
			coop_peer_failed(ctx, j->peer);
		j->err = coop_err_from_errno(c->status);
	}
	if (!j->pieces && (j->err || j->notified))
		job_end(j);
}

static int reap(struct coop_context *ctx)
{
	struct coop_offload_done c[REAP_BATCH];
	int i, n = ctx->prov.ops->offload_poll(&ctx->prov, c, REAP_BATCH);

	for (i = 0; i < n; i++)
		on_done(ctx, &c[i]);
	return n > 0 ? n : 0;
}

static int dma_progress(struct coop_context *ctx)
{
	struct coop_dma *d = ctx->proto->dma;
	int n = 0;

	if (!dlist_empty(&d->jobs) || !dlist_empty(&d->stripes))
		n += jobs_step(ctx, d);
	if (d->inflight)	/* also submits what jobs_step queued */
		n += reap(ctx);
	if (d->nbusy)
		n += notes_poll(ctx, d);
	return n;
}

/* A DMA receive gives its slot back, a send drops its offload job (the
 * copies in flight end unheeded). */
static void dma_release(struct coop_request *r)
{
	if (r->rndv.u.dma.armed) {
		slot_free(r->ctx->proto->dma, r->rndv.u.dma.nslot);
		r->rndv.u.dma.armed = 0;
	}
	if (r->job.kind == JOB_OFFLOAD && dlist_linked(&r->job.link))
		dlist_del(&r->job.link);
}

/* ---------------- coopmpi_xfer.h: COOP_XFER_ENGINE ---------------- */

void coop_dma_put(struct coop_request *r, const struct coop_rkey *key,
		  uint64_t roff, const struct coop_job_ops *ops)
{
	struct coop_context *ctx = r->ctx;
	struct coop_job *j = &r->job;

	/* dma_release drops the job if r fails */
	r->rndv.proto = PROTO_DMA;
	r->rndv.xfer = r->msg.len;
	offload_job_init(j, r, *key, roff, 0, ops);
	if (!j->len) {		/* nothing to give the engine */
		ops->done(j);
		return;
	}
	dlist_add_tail(&ctx->proto->dma->jobs, &j->link);
	job_submit(ctx, r, j);
}

/* ---------------- sender: a striped send's engine part ---------------- */

void coop_dma_stripe_part(struct coop_request *s,
			  const struct coop_rkey *key, uint64_t roff,
			  uint64_t off, const struct coop_job_ops *ops)
{
	struct coop_context *ctx = s->ctx;
	struct coop_job *j = &s->rndv.u.stripe.engine;

	offload_job_init(j, s, *key, roff, off, ops);
	dlist_add_tail(&ctx->proto->dma->stripes, &j->link);
	job_submit(ctx, s, j);
}

int coop_dma_stripe_stop(struct coop_request *s, int err)
{
	struct coop_job *j = &s->rndv.u.stripe.engine;

	if (!dlist_linked(&j->link))
		return 1;
	if (!j->err)
		j->err = err;
	if (j->pieces)
		return 0;	/* on_done ends it */
	dlist_del(&j->link);
	return 1;
}

/*
 * The engine's time for one copy, measured the way a striped send uses
 * it (offload_put, then completions reaped by polling).  Completions of
 * other copies are handled as usual meanwhile.  The wait is bounded; if
 * the copy does not complete, src and dst stay allocated (the engine may
 * still use them): the caller then leaks them on purpose.
 */
#define TIMED_WAIT_NS (30ULL * 1000000000ULL)

uint64_t coop_dma_time_put(struct coop_context *ctx, const void *src,
			   size_t len, const struct coop_rkey *dst)
{
	struct coop_dma *d = ctx->proto->dma;
	uint64_t t0 = coop_now_ns();

	d->timed = 0;
	if (ctx->prov.ops->offload_put(&ctx->prov, ctx->rank, src, len, dst,
				       0, NULL, 0, NULL, TIMED_TAG))
		return 0;
	while (!d->timed && coop_now_ns() - t0 < TIMED_WAIT_NS)
		reap(ctx);
	if (!d->timed)
		return UINT64_MAX;	/* still in flight: do not free */
	return d->timed == UINT64_MAX ? 0 : d->timed - t0;
}

static const struct coop_proto_ops dma_ops = {
	.name = "dma", .matched = dma_matched, .on_cts = dma_on_cts,
	.release = dma_release,
};

void coop_dma_register(struct coop_context *ctx)
{
	coop_proto_register(ctx, PROTO_DMA, &dma_ops);
}
