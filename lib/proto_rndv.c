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

/* Single-sided copies use bigger chunks: fewer syscalls, no partner. */
#define SOLO_CHUNK_MULT 4

static uint64_t solo_chunk(const struct coop_context *ctx)
{
	return ctx->cfg.chunk * SOLO_CHUNK_MULT;
}

/*
 * COOP-p2p chunk: about an eighth of the message, at least COOP_CHUNK and
 * at most 1 MiB.  Eight chunks keep the split fine enough for the faster
 * side to take more; big chunks cost fewer system calls and page-pinning
 * rounds (measured here: 16 MiB window bandwidth +15% with 1 MiB chunks
 * over 128 KiB ones).
 */
#define COOP_CHUNK_PARTS 8
#define COOP_CHUNK_CAP (1u << 20)

static uint64_t coop_chunk(const struct coop_context *ctx, uint64_t len)
{
	uint64_t c = ((len / COOP_CHUNK_PARTS) + 4095) & ~(uint64_t)4095;

	c = COOP_MIN(c, (uint64_t)COOP_CHUNK_CAP);
	return COOP_MAX(c, (uint64_t)ctx->cfg.chunk);
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
	case COOP_RNDV_AUTO:
	default:
		if (r->len < ctx->cfg.coop_min)
			return PROTO_RGET;
		/* DMA only when asked for: when it pays is a later question */
		return ctx->cfg.offload && coop_dma_usable(ctx) ? PROTO_DMA :
								  PROTO_COOP;
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

	if (proto == PROTO_RGET || proto == PROTO_COOP) {
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

static int send_cts(struct coop_request *r, enum coop_proto proto,
		    int slot, uint64_t chunk)
{
	struct coop_context *ctx = r->ctx;
	union coop_pkt pkt;
	int rc = coop_rndv_reg(r, COOPMPI_REGION_WRITE);

	if (rc)
		return rc;
	coop_hdr_init(ctx, &pkt.h, PKT_CTS, r->comm, r->status.tag);
	pkt.h.proto = (uint8_t)proto;
	pkt.cts.sreq = r->rid;
	pkt.cts.rreq = coop_req_id(r);
	pkt.cts.len = r->xfer;
	pkt.cts.key = r->lkey;
	pkt.cts.slot = (uint32_t)slot;
	pkt.cts.chunk = (uint32_t)chunk;
	pkt.cts.ncookie = proto == PROTO_DMA ? coop_dma_ncookie(ctx) : 0;
	return coop_send_pkt(ctx, r->status.source, &pkt);
}

static void start_read(struct coop_request *r, const struct coop_msgdesc *m,
		       struct coop_work_slot *shared, uint64_t chunk)
{
	r->pending |= EV_LOCAL;
	coop_job_start(r, JOB_READ, m->src, r->buf, &m->key, r->xfer, shared,
		       chunk);
}

/* Receiver: an RTS met receive r. */
void coop_rndv_matched(struct coop_request *r, const struct coop_msgdesc *m)
{
	struct coop_context *ctx = r->ctx;
	enum coop_proto proto = (enum coop_proto)m->proto;
	int rc = COOP_SUCCESS, slot;

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
	if ((proto == PROTO_RGET || proto == PROTO_COOP) &&
	    !ctx->peers[m->src].copy_ok)
		proto = PROTO_BOUNCE;
	if (proto == PROTO_COOP) {
		uint64_t chunk = coop_chunk(ctx, r->xfer);

		slot = coop_seg_work_alloc(&ctx->seg, r->xfer, chunk, m->src);
		if (slot < 0) {
			proto = PROTO_RGET;
		} else {
			rc = send_cts(r, PROTO_COOP, slot, chunk);
			if (rc)	/* the sender will never touch it */
				coop_seg_work_free(&ctx->seg, (uint32_t)slot,
						   m->src);
			else {
				start_read(r, m, &ctx->seg.work[slot], chunk);
				r->job.own_slot = slot;
			}
		}
	}
	if (proto == PROTO_DMA && coop_dma_arm(r))
		proto = PROTO_RPUT;	/* no notification slot */
	if (proto == PROTO_RGET) {
		start_read(r, m, NULL, solo_chunk(ctx));
	} else if (proto != PROTO_COOP) {	/* RPUT, BOUNCE, DMA */
		r->pending |= EV_PEER;
		rc = send_cts(r, proto, r->nslot, 0);
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
	if (p->h.proto != PROTO_COOP) {
		s->proto = p->h.proto;
		if (s->proto == PROTO_DMA)
			coop_dma_start(s, p);
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
