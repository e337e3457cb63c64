/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rndv.c - sender-initiated rendezvous ([Chakraborty18] sec. I-A/II-A).
 *
 *   RGET:  S -RTS(send region)-> R; R copies all; R -FIN-> S.
 *   RPUT:  S -RTS-> R; R -CTS(recv region)-> S; S copies all; S -FIN-> R.
 *   COOP:  S -RTS-> R; R allocates a shared work slot, -CTS(region, slot)->
 *          S, and starts pulling chunks; S pulls chunks too once the CTS
 *          is in.  A side's request completes when its own copy is done
 *          and the slot's done counter shows the peer's chunks are done
 *          too - the shared-memory form of the peer's FIN, so a receiver
 *          whose sender is busy computing does not wait for it.  S's FIN
 *          (after S stopped touching the slot) lets R free the slot.
 *   BOUNCE (no single copy possible): as RPUT, the sender pipelines the
 *          data through its bounce slots (FRAG packets), then FIN.
 *   DMA:   as RPUT, but the provider's offload engine copies and notifies
 *          the receiver (dma.c); STRIPE: the engine takes a part (stripe.c).
 * The receive side may downgrade: COOP -> RGET when no work slot is free,
 * DMA -> RPUT when no notification slot is, RGET/COOP -> BOUNCE when it
 * cannot copy from the sender.  In RTR mode (COOP_RNDV=rtr) the
 * sender-initiated fallback is write-based (RPUT).
 *
 * Each protocol is a struct coop_proto_ops registered with the core: the
 * receiver starts the one it chose through its matched(), the sender's
 * CTS handler through its on_cts(); copy jobs end in the callbacks of
 * their struct coop_job_ops.
 */
#include <string.h>

#include "proto.h"

static uint64_t solo_chunk(const struct coop_context *ctx)
{
	return ctx->cfg.chunk;
}

static enum coop_proto choose_proto(struct coop_context *ctx,
				    const struct coop_request *r)
{
	if (!ctx->peers[r->msg.peer].copy_ok)
		return PROTO_BOUNCE;
	switch (ctx->cfg.rndv) {
	case COOP_RNDV_RGET:
		return PROTO_RGET;
	case COOP_RNDV_RPUT:
	case COOP_RNDV_RTR:
		return PROTO_RPUT;
	case COOP_RNDV_COOP:
		return PROTO_COOP;
	case COOP_RNDV_DMA:	/* without an engine: a one-line note at init */
		return coop_dma_usable(ctx) ? PROTO_DMA : PROTO_RPUT;
	case COOP_RNDV_STRIPE:	/* min size, busy engine: stripe.c */
		return coop_stripe_usable(ctx, r->msg.len) ? PROTO_STRIPE :
							 PROTO_RPUT;
	case COOP_RNDV_PRECOPY:	/* RGET when it cannot: staged.c */
		return PROTO_PRECOPY;
	case COOP_RNDV_POSTCOPY:
		return PROTO_POSTCOPY;
	case COOP_RNDV_PROFILE:	/* profile.c; a dynamic domain has none */
		return ctx->proto->profile_choice ?
		       ctx->proto->profile_choice(ctx, r) : PROTO_RGET;
	case COOP_RNDV_AUTO:
	default:
		/* all-DMA only when asked for: it trades bandwidth for
		 * overlap; else the receiver decides (select.c) */
		return ctx->cfg.offload && coop_dma_usable(ctx) &&
		       !coop_load_offload_busy(ctx) ? PROTO_DMA : PROTO_AUTO;
	}
}

int coop_rndv_send(struct coop_context *ctx, struct coop_request *r)
{
	union coop_pkt pkt;
	enum coop_proto proto = choose_proto(ctx, r);
	int rc;

	if (proto == PROTO_PRECOPY || proto == PROTO_POSTCOPY) {
		rc = coop_staged_send(ctx, r, proto);
		if (rc > 0)
			coop_req_fail(r, rc);
		if (rc >= 0)
			return COOP_SUCCESS;
		proto = PROTO_RGET;	/* no room, synchronous */
	}
	if (proto == PROTO_RGET || proto == PROTO_COOP || proto == PROTO_AUTO) {
		rc = coop_req_reg(r, COOPMPI_REGION_READ);
		if (rc)
			return rc;
	}
	coop_hdr_init(ctx, &pkt.h, PKT_RTS, r->msg.comm, r->msg.tag);
	pkt.h.seq = r->match.seq;
	pkt.h.proto = (uint8_t)proto;
	if (r->msg.flags & COOP_SEND_SYNC)
		pkt.h.flags |= PF_SYNC;
	if (r->msg.flags & COOP_F_BLOCKING)
		pkt.h.flags |= PF_BLOCKING;
	if (r->msg.flags & REQ_F_BUFFERED_INNER)
		pkt.h.flags |= PF_BUFFERED;
	if (coop_dma_usable(ctx))
		pkt.h.flags |= PF_ENGINE;
	pkt.rts.sreq = coop_req_id(r);
	pkt.rts.pad = 0;
	pkt.rts.len = r->msg.len;
	if (r->region.valid)
		pkt.rts.key = r->region.key;
	else
		memset(&pkt.rts.key, 0, sizeof(pkt.rts.key));
	r->rndv.proto = (uint8_t)proto;
	r->pending |= EV_PEER;
	r->rndv.rts_sent = 1;
	if (ctx->proto->send_hooks)
		ctx->proto->send_hooks->rts_sent(ctx, r);
	rc = coop_send_pkt(ctx, r->msg.peer, &pkt);
	if (rc)
		coop_req_fail(r, rc);
	return COOP_SUCCESS;
}

/* ---------------- copy jobs' ends ---------------- */

/* Receiver: RGET, or our part of COOP (the done counter told the
 * sender already, unless we failed). */
static void read_done(struct coop_job *j)
{
	struct coop_request *r = j->req;

	if (j->err)
		coop_req_set_error(r, j->err);
	if (!j->shared || j->err)
		coop_proto_send_fin(r->ctx, j->peer, r->rndv.rid, j->err,
				    r->rndv.xfer, r->status.tag, j->done, 0);
	coop_req_event(r, EV_LOCAL);
}

/* Sender: RPUT, RTR, the bounce pipeline or our part of COOP. */
static void write_done(struct coop_job *j)
{
	struct coop_request *s = j->req;

	if (j->err)
		coop_req_set_error(s, j->err);
	if (!j->shared || j->err)
		coop_proto_sender_fin(s, j->err, j->done);
	coop_req_event(s, EV_LOCAL);
}

/* Pipeline: one fragment through a bounce slot of ours. */
static int push_frag(struct coop_job *j, uint64_t off, uint64_t n)
{
	struct coop_request *r = j->req;
	struct coop_context *ctx = r->ctx;
	union coop_pkt pkt;
	int slot = coop_seg_bounce_alloc(&ctx->seg, 1);

	if (slot < 0)
		return -1;	/* no slot now: retry later */
	memcpy(coop_seg_bounce(&ctx->seg, (uint32_t)slot),
	       (char *)r->msg.buf + off, n);
	ctx->bslot_peer[slot] = (uint16_t)j->peer;
	coop_hdr_init(ctx, &pkt.h, PKT_FRAG, r->msg.comm, r->msg.tag);
	pkt.frag.rreq = r->rndv.rid;
	pkt.frag.slot = (uint32_t)slot;
	pkt.frag.off = off;
	pkt.frag.len = n;
	pkt.frag.total = r->msg.len;
	return coop_send_pkt(ctx, j->peer, &pkt);
}

static const struct coop_job_ops read_ops = { .done = read_done };
static const struct coop_job_ops write_ops = { .done = write_done };
static const struct coop_job_ops push_ops = {
	.done = write_done, .push = push_frag
};

/* ---------------- receiver ---------------- */

static void start_read(struct coop_request *r, const struct coop_msgdesc *m,
		       struct coop_work_slot *shared, uint64_t chunk)
{
	struct coop_job_args a = {
		.kind = JOB_READ, .peer = m->src, .local = r->msg.buf,
		.key = &m->key, .len = r->rndv.xfer, .shared = shared,
		.chunk = chunk, .ops = &read_ops,
	};

	r->pending |= EV_LOCAL;
	coop_job_start(r, &a);
}

static int rget_matched(struct coop_request *r, const struct coop_msgdesc *m,
			uint64_t split)
{
	(void)split;
	start_read(r, m, NULL, solo_chunk(r->ctx));
	return COOP_SUCCESS;
}

/* RPUT, BOUNCE: the sender writes once it has our CTS. */
static int cts_matched(struct coop_request *r, const struct coop_msgdesc *m,
		       uint64_t split)
{
	struct coop_cts_args a = { .proto = (enum coop_proto)r->rndv.proto,
				   .slot = UINT32_MAX };

	(void)m;
	(void)split;
	r->pending |= EV_PEER;
	return coop_proto_send_cts(r, &a);
}

/* COOP: a work slot split at split, the CTS, and our part of the copy;
 * -1 when no slot is free (the caller has one side copy instead). */
static int coop_matched(struct coop_request *r, const struct coop_msgdesc *m,
			uint64_t split)
{
	struct coop_context *ctx = r->ctx;
	uint64_t chunk = coop_job_shared_chunk(ctx, r->rndv.xfer);
	int slot = coop_seg_work_alloc(&ctx->seg, r->rndv.xfer, chunk, split,
				       m->src);
	struct coop_cts_args a = { .proto = PROTO_COOP, .slot = (uint32_t)slot,
				   .chunk = chunk, .split = split };
	int rc;

	if (slot < 0)
		return -1;
	rc = coop_proto_send_cts(r, &a);
	if (rc) {		/* the sender will never touch it */
		coop_seg_work_free(&ctx->seg, (uint32_t)slot, m->src);
		return rc;
	}
	r->rndv.u.coop.split = split;
	start_read(r, m, &ctx->seg.work[slot], chunk);
	r->job.own_slot = slot;
	return COOP_SUCCESS;
}

/* The protocol this receive answers the RTS with, and COOP's split. */
static enum coop_proto answer_proto(struct coop_request *r,
				    const struct coop_msgdesc *m,
				    uint64_t *split)
{
	enum coop_proto proto = (enum coop_proto)m->proto;

	*split = r->rndv.xfer / 2;
	if (proto == PROTO_AUTO)
		proto = coop_select(r, m, split);
	if ((proto == PROTO_RGET || proto == PROTO_COOP) &&
	    !r->ctx->peers[m->src].copy_ok)
		proto = PROTO_BOUNCE;
	return proto;
}

/* What a protocol that cannot start now falls back to: COOP without a
 * work slot has one side copy (unassisted), DMA without a notification
 * slot is RPUT. */
static enum coop_proto fallback(enum coop_proto proto, uint64_t split)
{
	if (proto == PROTO_COOP)
		return split ? PROTO_RGET : PROTO_RPUT;
	return PROTO_RPUT;
}

static int start_proto(struct coop_request *r, const struct coop_msgdesc *m,
		       enum coop_proto proto, uint64_t split)
{
	const struct coop_proto_ops *ops = coop_proto_ops(r->ctx, proto);

	if (!ops || !ops->matched)
		return COOP_ERR_INTERNAL;	/* not a protocol of ours */
	r->rndv.proto = (uint8_t)proto;
	return ops->matched(r, m, split);
}

void coop_rndv_matched(struct coop_request *r, const struct coop_msgdesc *m)
{
	struct coop_context *ctx = r->ctx;
	enum coop_proto proto;
	uint64_t split;
	int rc;

	r->rndv.rid = m->sreq;
	r->rndv.xfer = COOP_MIN(m->len, r->msg.len);
	r->status.count = r->rndv.xfer;
	if (m->len > r->msg.len)
		coop_req_set_error(r, COOP_ERR_TRUNCATE);
	/* a staged message needs no sender: post-copy's data is in our
	 * inbox, pre-copy's in an outbox we may still have mapped */
	if (ctx->peers[m->src].dead && m->proto != PROTO_PRECOPY &&
	    m->proto != PROTO_POSTCOPY) {
		coop_req_fail(r, COOP_ERR_PEER_DEAD);
		return;
	}
	if (r->match.rtr_out) {	/* our RTR is the sender's CTS */
		r->pending |= EV_PEER;
		coop_req_event(r, EV_MATCH);
		return;
	}
	proto = answer_proto(r, m, &split);
	rc = start_proto(r, m, proto, split);
	if (rc < 0)
		rc = start_proto(r, m, fallback(proto, split), split);
	if (!rc) {
		coop_req_event(r, EV_MATCH);
		return;
	}
	/* e.g. the buffer cannot be registered: the sender waits for our
	 * answer, so it gets this one */
	coop_proto_send_fin(ctx, m->src, r->rndv.rid, rc, m->len, r->status.tag,
			    0, 0);
	coop_req_fail(r, rc);
}

/* ---------------- sender ---------------- */

static void start_write(struct coop_request *r)
{
	struct coop_context *ctx = r->ctx;
	struct coop_rkey key = r->job.key;	/* set by the CTS/RTR */
	struct coop_job_args a = {
		.kind = JOB_WRITE, .peer = r->msg.peer, .local = r->msg.buf,
		.key = &key, .len = r->rndv.xfer, .chunk = solo_chunk(ctx),
		.ops = &write_ops,
	};

	if (!ctx->peers[r->msg.peer].copy_ok) {
		a.kind = JOB_PUSH;
		a.key = NULL;
		a.chunk = ctx->seg.bounce_size;
		a.ops = &push_ops;
	}
	r->pending |= EV_LOCAL;
	coop_job_start(r, &a);
}

void coop_rndv_write_for_rtr(struct coop_request *s, uint32_t rreq,
			     uint64_t cap, const struct coop_rkey *key)
{
	s->rndv.rid = rreq;
	s->rndv.xfer = COOP_MIN(s->msg.len, cap);
	s->job.key = *key;
	s->rndv.proto = PROTO_RTR;
	start_write(s);
}

static void write_on_cts(struct coop_request *s, const struct coop_pkt_cts *p)
{
	(void)p;
	start_write(s);
}

/* COOP: our part of the copy, from the receiver's work slot. */
static void coop_on_cts(struct coop_request *s, const struct coop_pkt_cts *p)
{
	struct coop_seg *pseg = &s->ctx->peers[s->msg.peer].seg;
	struct coop_job_args a = {
		.kind = JOB_WRITE, .peer = s->msg.peer, .local = s->msg.buf,
		.key = &p->key, .len = s->rndv.xfer, .chunk = p->chunk,
		.ops = &write_ops,
	};

	if (!pseg->hdr || p->slot >= pseg->nwork) {
		coop_req_fail(s, COOP_ERR_INTERNAL);
		return;
	}
	s->rndv.u.coop.peer_slot = p->slot;
	s->rndv.u.coop.holds_slot = 1;
	s->rndv.u.coop.split = pseg->work[p->slot].split;
	a.shared = &pseg->work[p->slot];
	s->pending |= EV_LOCAL;
	coop_job_start(s, &a);
}

/* A CTS for one of our sends: the protocol the receiver chose starts. */
static void on_cts(struct coop_context *ctx, const union coop_pkt *pkt)
{
	const struct coop_pkt_cts *p = &pkt->cts;
	struct coop_request *s = coop_req_lookup_peer(ctx, p->sreq, p->h.src);
	const struct coop_proto_ops *ops = coop_proto_ops(ctx, p->h.proto);

	if (!s || s->kind != REQ_SEND || !(s->pending & EV_PEER))
		return;
	coop_req_unlink(s);	/* no longer awaits an RTR (rts_sent) */
	if (!ops || !ops->on_cts) {
		coop_req_fail(s, COOP_ERR_INTERNAL);
		return;
	}
	s->rndv.rid = p->rreq;
	s->rndv.xfer = COOP_MIN(p->len, s->msg.len);
	s->job.key = p->key;
	/* the receiver charged our share to our load (coop_proto_send_cts) */
	s->rndv.precharged = p->h.proto == PROTO_RPUT ||
			     p->h.proto == PROTO_COOP;
	s->rndv.proto = p->h.proto;
	ops->on_cts(s, p);
	/* RPUT: our FIN ends it; COOP: the done counter; DMA: the engine's
	 * notification */
	coop_req_event(s, EV_PEER);
}

/* ---------------- FIN and fragments ---------------- */

static void on_fin(struct coop_context *ctx, const union coop_pkt *pkt)
{
	const struct coop_pkt_fin *p = &pkt->fin;
	struct coop_request *q;

	if (p->slot != FIN_NONE)	/* the sender is done with our slot */
		coop_seg_work_put(&ctx->seg, p->slot, p->h.src);
	if (p->req == FIN_NONE)
		return;
	q = coop_req_lookup_peer(ctx, p->req, p->h.src);
	if (!q)
		return;
	if (p->err) {		/* the peer's copy failed: so did ours */
		coop_req_fail(q, p->err);
		return;
	}
	if (q->kind == REQ_RECV) {
		/* completion data: needed when no RTS told us (RTR) */
		q->status.source = p->h.src;
		q->status.tag = p->h.tag;
		q->status.count = COOP_MIN(p->len, q->msg.len);
		if (p->len > q->msg.len)
			coop_req_set_error(q, COOP_ERR_TRUNCATE);
		/* the sender wrote: status */
		if (q->rndv.proto == PROTO_NONE && q->match.rtr_out)
			q->rndv.proto = PROTO_RTR;
		coop_req_unlink(q);
		coop_req_event(q, EV_MATCH | EV_PEER);
	} else {
		/* no CTS: the receiver read */
		if (q->rndv.proto == PROTO_AUTO)
			q->rndv.proto = PROTO_RGET;
		coop_req_event(q, EV_PEER);
	}
}

static void on_frag(struct coop_context *ctx, const union coop_pkt *pkt)
{
	const struct coop_pkt_frag *p = &pkt->frag;
	struct coop_request *r = coop_req_lookup_peer(ctx, p->rreq, p->h.src);
	struct coop_seg *seg = &ctx->peers[p->h.src].seg;
	uint64_t n;

	if (!coop_seg_bounce_holds(seg, p->slot, p->len)) {
		coop_peer_misbehaved(ctx, p->h.src, "fragment");
		return;
	}
	if (r && r->kind == REQ_RECV && p->off < r->msg.len) {
		n = COOP_MIN(p->len, r->msg.len - p->off);
		memcpy((char *)r->msg.buf + p->off,
		       coop_seg_bounce(seg, p->slot), n);
	}
	coop_seg_bounce_free(seg, p->slot);
}

/* ---------------- registration ---------------- */

/* The sender is done with the receiver's work slot: FIN for it. */
static void coop_release(struct coop_request *r)
{
	if (!r->rndv.u.coop.holds_slot)
		return;
	r->rndv.u.coop.holds_slot = 0;
	coop_proto_send_slot_fin(r->ctx, r->msg.peer, r->rndv.u.coop.peer_slot);
}

/* Assisted RGET and RPUT (a COOP work slot split at the end or the
 * start, select.c) report the protocol that copied. */
static int coop_reported(const struct coop_request *r)
{
	if (r->rndv.u.coop.split >= r->rndv.xfer)
		return PROTO_RGET;
	return r->rndv.u.coop.split ? PROTO_COOP : PROTO_RPUT;
}

static const struct coop_proto_ops rget_ops = {
	.name = "rget", .matched = rget_matched,
};
static const struct coop_proto_ops rput_ops = {
	.name = "rput", .matched = cts_matched, .on_cts = write_on_cts,
};
static const struct coop_proto_ops bounce_ops = {
	.name = "bounce", .matched = cts_matched, .on_cts = write_on_cts,
};
static const struct coop_proto_ops coop_ops = {
	.name = "coop", .matched = coop_matched, .on_cts = coop_on_cts,
	.release = coop_release, .reported = coop_reported,
};

void coop_rndv_register(struct coop_context *ctx)
{
	coop_proto_register(ctx, PROTO_RGET, &rget_ops);
	coop_proto_register(ctx, PROTO_RPUT, &rput_ops);
	coop_proto_register(ctx, PROTO_BOUNCE, &bounce_ops);
	coop_proto_register(ctx, PROTO_COOP, &coop_ops);
	coop_am_register(ctx, PKT_CTS, on_cts);
	coop_am_register(ctx, PKT_FIN, on_fin);
	coop_am_register(ctx, PKT_FRAG, on_frag);
}
