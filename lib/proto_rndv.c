/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * proto_rndv.c - sender-initiated rendezvous (seed 000, sec. I-A/II-A).
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
 *          the receiver (proto_dma.c).
 * The receive side may downgrade: COOP -> RGET when no work slot is free,
 * DMA -> RPUT when no notification slot is, RGET/COOP -> BOUNCE when it
 * cannot copy from the sender.  In RTR mode (COOP_RNDV=rtr) the
 * sender-initiated fallback is write-based (RPUT).
 */
#include <string.h>

#include "coop_internal.h"

/*
 * Copy granularity (COOP-chunked): the progress engine looks at the
 * mailbox between chunks, so COOP_CHUNK bounds how long a control message
 * from any peer waits behind a copy.  A single-sided copy takes chunks of
 * COOP_CHUNK; COOP-p2p about an eighth of the message (at least 128 KiB,
 * at most COOP_CHUNK) so the split stays fine enough for one side to help
 * the other, while big chunks cost fewer system calls and page-pinning
 * rounds (measured here: 16 MiB window bandwidth +15% with 1 MiB chunks
 * over 128 KiB ones).
 */
#define COOP_CHUNK_PARTS 8
#define COOP_CHUNK_FLOOR (128u << 10)

static uint64_t solo_chunk(const struct coop_context *ctx)
{
	return ctx->cfg.chunk;
}

static uint64_t coop_chunk(const struct coop_context *ctx, uint64_t len)
{
	uint64_t c = ((len / COOP_CHUNK_PARTS) + 4095) & ~(uint64_t)4095;
	uint64_t floor = COOP_MIN((uint64_t)COOP_CHUNK_FLOOR, ctx->cfg.chunk);

	return COOP_MIN(COOP_MAX(c, floor), (uint64_t)ctx->cfg.chunk);
}

static enum coop_proto choose_proto(struct coop_context *ctx,
				    const struct coop_request *r)
{
	if (!ctx->peers[r->peer].copy_ok)
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
	case COOP_RNDV_STRIPE:	/* min size, busy engine: proto_stripe.c */
		return coop_stripe_usable(ctx, r->len) ? PROTO_STRIPE :
							 PROTO_RPUT;
	case COOP_RNDV_AUTO:
	default:
		/* all-DMA only when asked for: it trades bandwidth for
		 * overlap; else the receiver decides (proto_select.c) */
		return ctx->cfg.offload && coop_dma_usable(ctx) &&
		       !coop_offload_busy(ctx) ? PROTO_DMA : PROTO_AUTO;
	}
}

int coop_rndv_reg(struct coop_request *r, unsigned access)
{
	struct coop_context *ctx = r->ctx;
	int rc;

	if (r->lkey_valid)
		return COOP_SUCCESS;
	rc = ctx->prov.ops->reg(&ctx->prov, r->buf, r->len, access, &r->lkey);
	if (rc)
		return coop_err_from_errno(rc);
	r->lkey_valid = 1;
	return COOP_SUCCESS;
}

int coop_send_fin(struct coop_context *ctx, int peer, uint32_t rid, int err,
		  uint64_t len, int tag, uint64_t copied, uint8_t flags)
{
	union coop_pkt pkt;

	coop_hdr_init(ctx, &pkt.h, PKT_FIN, 0, tag);
	pkt.h.flags = flags;
	pkt.fin.req = rid;
	pkt.fin.err = err;
	pkt.fin.len = len;
	pkt.fin.copied = copied;
	pkt.fin.slot = FIN_NONE;
	return coop_send_pkt(ctx, peer, &pkt);
}

void coop_send_slot_fin(struct coop_context *ctx, int peer, uint32_t slot)
{
	union coop_pkt pkt;

	coop_hdr_init(ctx, &pkt.h, PKT_FIN, 0, 0);
	pkt.fin.req = FIN_NONE;
	pkt.fin.slot = slot;
	coop_send_pkt(ctx, peer, &pkt);
}

int coop_rndv_send(struct coop_context *ctx, struct coop_request *r)
{
	union coop_pkt pkt;
	enum coop_proto proto = choose_proto(ctx, r);
	int rc;

	if (proto == PROTO_RGET || proto == PROTO_COOP || proto == PROTO_AUTO) {
		rc = coop_rndv_reg(r, COOPMPI_REGION_READ);
		if (rc)
			return rc;
	}
	coop_hdr_init(ctx, &pkt.h, PKT_RTS, r->comm, r->tag);
	pkt.h.seq = r->seq;
	pkt.h.proto = (uint8_t)proto;
	if (r->flags & COOP_SEND_SYNC)
		pkt.h.flags |= PF_SYNC;
	if (r->flags & COOP_F_BLOCKING)
		pkt.h.flags |= PF_BLOCKING;
	if (r->internal)	/* the inner send of a buffered send */
		pkt.h.flags |= PF_BUFFERED;
	if (coop_dma_usable(ctx))
		pkt.h.flags |= PF_ENGINE;
	pkt.rts.sreq = coop_req_id(r);
	pkt.rts.pad = 0;
	pkt.rts.len = r->len;
	if (r->lkey_valid)
		pkt.rts.key = r->lkey;
	else
		memset(&pkt.rts.key, 0, sizeof(pkt.rts.key));
	r->proto = (uint8_t)proto;
	r->pending |= EV_PEER;
	r->rts_sent = 1;
	if (ctx->rtr)
		dlist_add_tail(&ctx->rts_sends, &r->link);
	rc = coop_send_pkt(ctx, r->peer, &pkt);
	if (rc)
		coop_req_fail(r, rc);
	return COOP_SUCCESS;
}

/* The sender's CPU share of a protocol we answer with a CTS: we put it in
 * its pending load before it hears of it (proto_select.c). */
static uint64_t sender_share(const struct coop_request *r,
			     enum coop_proto proto, uint64_t split)
{
	if (proto == PROTO_RPUT)
		return r->xfer;
	return proto == PROTO_COOP ? r->xfer - split : 0;
}

static int send_cts(struct coop_request *r, enum coop_proto proto,
		    int slot, uint64_t chunk, uint64_t split)
{
	struct coop_context *ctx = r->ctx;
	int src = r->status.source;
	int64_t charge = (int64_t)sender_share(r, proto, split);
	union coop_pkt pkt;
	int rc = coop_rndv_reg(r, COOPMPI_REGION_WRITE);

	if (rc)
		return rc;
	coop_precharge(ctx, src, charge);
	coop_hdr_init(ctx, &pkt.h, PKT_CTS, r->comm, r->status.tag);
	pkt.h.proto = (uint8_t)proto;
	pkt.cts.sreq = r->rid;
	pkt.cts.rreq = coop_req_id(r);
	pkt.cts.len = r->xfer;
	pkt.cts.key = r->lkey;
	pkt.cts.slot = (uint32_t)slot;
	pkt.cts.chunk = (uint32_t)chunk;
	pkt.cts.ncookie = proto == PROTO_DMA ? coop_dma_ncookie(ctx) : 0;
	rc = coop_send_pkt(ctx, src, &pkt);
	if (rc)
		coop_precharge(ctx, src, -charge);
	return rc;
}

static void start_read(struct coop_request *r, const struct coop_msgdesc *m,
		       struct coop_work_slot *shared, uint64_t chunk)
{
	r->pending |= EV_LOCAL;
	coop_job_start(r, JOB_READ, m->src, r->buf, &m->key, r->xfer, shared,
		       chunk);
}

/* COOP: a work slot split at split, the CTS, and our part of the copy;
 * -1 when no slot is free (the caller reads everything instead). */
static int start_coop(struct coop_request *r, const struct coop_msgdesc *m,
		      uint64_t split)
{
	struct coop_context *ctx = r->ctx;
	uint64_t chunk = coop_chunk(ctx, r->xfer);
	int slot = coop_seg_work_alloc(&ctx->seg, r->xfer, chunk, split,
				       m->src);
	int rc;

	if (slot < 0)
		return -1;
	rc = send_cts(r, PROTO_COOP, slot, chunk, split);
	if (rc) {		/* the sender will never touch it */
		coop_seg_work_free(&ctx->seg, (uint32_t)slot, m->src);
		return rc;
	}
	r->split = split;
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

	*split = r->xfer / 2;
	if (proto == PROTO_AUTO)
		proto = coop_select(r, m, split);
	if ((proto == PROTO_RGET || proto == PROTO_COOP) &&
	    !r->ctx->peers[m->src].copy_ok)
		proto = PROTO_BOUNCE;
	return proto;
}

/* Receiver: an RTS met receive r. */
void coop_rndv_matched(struct coop_request *r, const struct coop_msgdesc *m)
{
	struct coop_context *ctx = r->ctx;
	enum coop_proto proto;
	uint64_t split;
	int rc = COOP_SUCCESS;

	r->rid = m->sreq;
	r->xfer = COOP_MIN(m->len, r->len);
	r->status.count = r->xfer;
	if (m->len > r->len)
		coop_req_set_error(r, COOP_ERR_TRUNCATE);
	if (ctx->peers[m->src].dead) {
		coop_req_fail(r, COOP_ERR_PEER_DEAD);
		return;
	}
	if (r->rtr_out) {	/* our RTR is the sender's CTS */
		r->pending |= EV_PEER;
		coop_req_event(r, EV_MATCH);
		return;
	}
	proto = answer_proto(r, m, &split);
	if (proto == PROTO_COOP) {
		rc = start_coop(r, m, split);
		if (rc < 0) {	/* no work slot: one copier, unassisted */
			proto = split ? PROTO_RGET : PROTO_RPUT;
			rc = COOP_SUCCESS;
		}
	}
	if (proto == PROTO_DMA && coop_dma_arm(r))
		proto = PROTO_RPUT;	/* no notification slot */
	if (proto == PROTO_RGET) {
		start_read(r, m, NULL, solo_chunk(ctx));
	} else if (proto != PROTO_COOP) {	/* RPUT, BOUNCE, DMA, STRIPE */
		r->pending |= EV_PEER;
		rc = send_cts(r, proto, r->nslot, 0, 0);
	}
	r->proto = (uint8_t)proto;
	if (rc)
		coop_req_fail(r, rc);
	else
		coop_req_event(r, EV_MATCH);
}

/* Sender: copy to the receiver (RPUT/RTR/COOP share) or pipeline. */
void coop_rndv_start_write(struct coop_request *r)
{
	struct coop_context *ctx = r->ctx;
	struct coop_rkey key = r->job.key;	/* set by the CTS/RTR */
	int peer = r->peer;

	r->pending |= EV_LOCAL;
	if (!ctx->peers[peer].copy_ok)
		coop_job_start(r, JOB_PUSH, peer, r->buf, NULL, r->xfer, NULL,
			       ctx->seg.hdr->bounce_size);
	else
		coop_job_start(r, JOB_WRITE, peer, r->buf, &key, r->xfer,
			       NULL, solo_chunk(ctx));
}

void coop_rndv_on_cts(struct coop_context *ctx, const struct coop_pkt_cts *p)
{
	struct coop_request *s = coop_req_lookup(ctx, p->sreq);
	struct coop_seg *pseg;

	if (!s || s->kind != REQ_SEND || !(s->pending & EV_PEER))
		return;
	if (dlist_linked(&s->link))
		dlist_del(&s->link);	/* RTR mode: no longer awaits RTR */
	s->rid = p->rreq;
	s->xfer = COOP_MIN(p->len, s->len);
	s->job.key = p->key;
	/* the receiver charged our share to our load (send_cts) */
	s->precharged = p->h.proto == PROTO_RPUT || p->h.proto == PROTO_COOP;
	if (p->h.proto != PROTO_COOP) {
		s->proto = p->h.proto;
		if (s->proto == PROTO_DMA)
			coop_dma_start(s, p);
		else if (s->proto == PROTO_STRIPE)
			coop_stripe_start(s, p);
		else
			coop_rndv_start_write(s);
		/* RPUT: our FIN ends it; DMA: the engine's notification */
		coop_req_event(s, EV_PEER);
		return;
	}
	pseg = &ctx->peers[s->peer].seg;
	if (!pseg->hdr || p->slot >= pseg->hdr->nwork) {
		coop_req_fail(s, COOP_ERR_INTERNAL);
		return;
	}
	s->peer_slot = (int)p->slot;
	s->proto = PROTO_COOP;
	s->split = pseg->work[p->slot].split;
	s->pending |= EV_LOCAL;
	coop_job_start(s, JOB_WRITE, s->peer, s->buf, &p->key, s->xfer,
		       &pseg->work[p->slot], p->chunk);
	coop_req_event(s, EV_PEER);
}

/* A job of r ran out of chunks (or failed). */
void coop_rndv_job_done(struct coop_request *r)
{
	struct coop_context *ctx = r->ctx;
	struct coop_job *j = &r->job;
	int peer = j->peer;

	if (j->err)
		coop_req_set_error(r, j->err);
	if (r->proto == PROTO_STRIPE && r->kind == REQ_SEND) {
		coop_stripe_cpu_done(r);	/* FIN when the engine's is too */
		return;
	}
	if ((j->shared || j->kind == JOB_OFFLOAD) && !j->err) {
		/* COOP: the done counter told both sides already; DMA: the
		 * engine's notification told the receiver */
	} else if (j->kind == JOB_READ) {	/* receiver: RGET (or error) */
		coop_send_fin(ctx, peer, r->rid, j->err, r->xfer, r->status.tag,
			      j->done, 0);
	} else {			/* sender: WRITE or PUSH */
		coop_send_fin(ctx, peer, r->rid, j->err, r->len, r->tag,
			      j->done, r->rts_sent ? PF_RTS_SENT : 0);
	}
	coop_req_event(r, EV_LOCAL);
}

void coop_rndv_on_fin(struct coop_context *ctx, const struct coop_pkt_fin *p)
{
	struct coop_request *q;

	if (p->slot != FIN_NONE)	/* the sender is done with our slot */
		coop_seg_work_put(&ctx->seg, p->slot, p->h.src);
	if (p->req == FIN_NONE)
		return;
	q = coop_req_lookup(ctx, p->req);
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
		q->status.count = COOP_MIN(p->len, q->len);
		if (p->len > q->len)
			coop_req_set_error(q, COOP_ERR_TRUNCATE);
		if (dlist_linked(&q->link))
			coop_match_unpost(ctx, q);
		coop_req_event(q, EV_MATCH | EV_PEER);
	} else {
		if (q->proto == PROTO_AUTO)	/* no CTS: the receiver read */
			q->proto = PROTO_RGET;
		coop_req_event(q, EV_PEER);
	}
}

void coop_rndv_on_frag(struct coop_context *ctx,
		       const struct coop_pkt_frag *p)
{
	struct coop_request *r = coop_req_lookup(ctx, p->rreq);
	struct coop_seg *seg = &ctx->peers[p->h.src].seg;
	uint64_t n;

	if (!coop_seg_slot_valid(seg, p->slot))
		return;
	if (r && r->kind == REQ_RECV && p->off < r->len) {
		n = COOP_MIN(p->len, r->len - p->off);
		memcpy((char *)r->buf + p->off, coop_seg_bounce(seg, p->slot),
		       n);
		r->frag_done += n;
	}
	coop_seg_bounce_free(seg, p->slot);
}
