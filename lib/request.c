/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * request.c - request objects: pool allocation, wire ids, completion by
 * events, failure.  A request completes when all the events it waits for
 * (req->pending, EV_*) have happened; failing it unlinks it from every
 * queue it may sit on.
 */
#include <string.h>

#include "coop_internal.h"

#define ID_INDEX_BITS 20
#define ID_INDEX_MASK ((1u << ID_INDEX_BITS) - 1)
#define ID_GEN_MASK ((1u << (32 - ID_INDEX_BITS)) - 1)

struct coop_request *coop_req_new(struct coop_context *ctx, int kind)
{
	struct coop_request *r = coop_pool_get(&ctx->reqs);

	if (!r)
		return NULL;
	r->ctx = ctx;
	r->kind = (uint8_t)kind;
	r->peer_slot = -1;
	r->nslot = -1;
	dlist_init(&r->link);
	dlist_init(&r->alink);
	dlist_init(&r->jlink);
	dlist_init(&r->elink);
	return r;
}

void coop_req_free(struct coop_request *r)
{
	if (r->is_static)
		return;
	coop_pool_put(&r->ctx->reqs, r);
}

uint32_t coop_req_id(const struct coop_request *r)
{
	return (r->pobj.index & ID_INDEX_MASK) |
	       ((r->pobj.gen & ID_GEN_MASK) << ID_INDEX_BITS);
}

struct coop_request *coop_req_lookup(struct coop_context *ctx, uint32_t id)
{
	struct coop_request *r;

	r = coop_pool_at(&ctx->reqs, id & ID_INDEX_MASK);
	/* the wire carries the generation modulo its bits */
	if (!r || !r->pobj.in_use || !r->active ||
	    (r->pobj.gen & ID_GEN_MASK) != id >> ID_INDEX_BITS)
		return NULL;
	return r;
}

void coop_req_activate(struct coop_request *r)
{
	struct coop_context *ctx = r->ctx;

	r->active = 1;
	r->complete = 0;
	r->err = COOP_SUCCESS;
	r->pending = 0;
	r->rtr_out = r->ticketed = r->rts_sent = r->wildcard = 0;
	r->cancel_wanted = 0;
	r->precharged = 0;
	r->lkey_valid = 0;
	r->peer_slot = -1;
	r->nslot = -1;
	r->xfer = r->frag_done = 0;
	r->split = 0;
	r->proto = PROTO_NONE;
	memset(&r->job, 0, sizeof(r->job));
	r->status.source = r->peer;
	r->status.tag = r->tag;
	r->status.count = 0;
	r->status.error = COOP_SUCCESS;
	r->status.cancelled = 0;
	r->status.protocol = COOP_PROTOCOL_NONE;
	dlist_add_tail(&ctx->inflight, &r->alink);
}

void coop_req_set_error(struct coop_request *r, int err)
{
	if (err && !r->err)
		r->err = err;
}

static void req_release_resources(struct coop_request *r)
{
	struct coop_context *ctx = r->ctx;

	if (r->lkey_valid) {
		ctx->prov.ops->dereg(&ctx->prov, &r->lkey);
		r->lkey_valid = 0;
	}
	if (r->proto == PROTO_DMA || r->proto == PROTO_STRIPE)
		coop_dma_release(r);
	if (r->peer_slot >= 0) {	/* we are done with its work slot */
		coop_send_slot_fin(ctx, r->peer, (uint32_t)r->peer_slot);
		r->peer_slot = -1;
	}
}

/* status.protocol and the per-protocol message counts */
static void req_account(struct coop_request *r)
{
	struct coop_context *ctx = r->ctx;
	int p = r->proto < COOP_PROTOCOL_COUNT ? r->proto : PROTO_NONE;

	if (p == PROTO_COOP && r->split >= r->xfer)	/* assisted RGET */
		p = PROTO_RGET;
	else if (p == PROTO_COOP && !r->split)		/* assisted RPUT */
		p = PROTO_RPUT;

	r->status.protocol = p;
	if (p == PROTO_NONE || r->err)
		return;
	if (r->kind == REQ_SEND)
		ctx->stats.sent[p]++;
	else
		ctx->stats.received[p]++;
}

static void req_complete(struct coop_request *r)
{
	struct coop_context *ctx = r->ctx;

	req_account(r);
	req_release_resources(r);
	dlist_del(&r->alink);
	r->status.error = r->err;
	r->complete = 1;
	if (r->internal) {
		coop_bsend_release(ctx, r->bblock);
		r->active = 0;
		coop_req_free(r);
	} else if (r->user_freed) {
		r->active = 0;
		if (!r->persistent)
			coop_req_free(r);
	}
}

void coop_req_event(struct coop_request *r, unsigned ev)
{
	if (!(r->pending & ev))
		return;
	r->pending &= ~ev;
	if (!r->pending)
		req_complete(r);
}

void coop_req_fail(struct coop_request *r, int err)
{
	struct coop_context *ctx = r->ctx;

	if (r->complete || !r->active)
		return;
	coop_req_set_error(r, err);
	if (r->kind == REQ_RECV && dlist_linked(&r->link))
		coop_match_unpost(ctx, r);
	else
		dlist_del(&r->link);
	coop_job_cancel(r);
	r->pending = 0;
	req_complete(r);
}
