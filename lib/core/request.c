/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * request.c - request objects: pool allocation, wire ids, completion by
 * events, failure.  A request completes when all the events it waits for
 * (req->pending, EV_*) have happened; failing it unlinks it from every
 * queue it may sit on.  What a protocol holds is given back by its
 * registered release callback, whatever the outcome.
 */
#include <string.h>

#include "core.h"

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
	dlist_init(&r->alink);
	dlist_init(&r->job.link);
	return r;
}

struct coop_request *coop_req_new_msg(struct coop_context *ctx, int kind,
				      const void *buf, size_t len, int peer,
				      int tag, uint16_t comm)
{
	struct coop_request *r = coop_req_new(ctx, kind);

	if (!r)
		return NULL;
	r->msg.buf = (void *)(uintptr_t)buf;
	r->msg.len = len;
	r->msg.peer = peer;
	r->msg.tag = tag;
	r->msg.comm = comm;
	return r;
}

void coop_req_free(struct coop_request *r)
{
	if (coop_req_is_static(r))
		return;
	if (r->owner.free_cb)
		r->owner.free_cb(r);
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

struct coop_request *coop_req_lookup_peer(struct coop_context *ctx,
					  uint32_t id, int peer)
{
	struct coop_request *r = coop_req_lookup(ctx, id);
	int partner;

	if (!r)
		return NULL;
	partner = r->kind == REQ_RECV && !(r->pending & EV_MATCH) ?
			  r->status.source : r->msg.peer;
	return partner == peer ? r : NULL;
}

void coop_req_activate(struct coop_request *r)
{
	struct coop_context *ctx = r->ctx;
	unsigned i;

	r->active = 1;
	r->complete = 0;
	r->pending = 0;
	r->region.valid = 0;
	for (i = 0; i < ctx->up.nactivate; i++)
		ctx->up.activate[i](r);
	/* a collective's request never copies: a persistent one restarts
	 * cheaply */
	if (r->kind != REQ_COLL || r->job.copying || r->job.end_deferred)
		memset(&r->job, 0, sizeof(r->job));
	dlist_init(&r->job.link);
	r->status.source = r->msg.peer;
	r->status.tag = r->msg.tag;
	r->status.count = 0;
	r->status.error = COOP_SUCCESS;
	r->status.cancelled = 0;
	r->status.protocol = COOP_PROTOCOL_NONE;
	dlist_add_tail(&ctx->inflight, &r->alink);
}

void coop_req_set_error(struct coop_request *r, int err)
{
	/* a failure after a truncation lost the data: it is what counts */
	if (err && (!r->status.error || r->status.error == COOP_ERR_TRUNCATE))
		r->status.error = err;
}

int coop_req_reg(struct coop_request *r, unsigned access)
{
	struct coop_context *ctx = r->ctx;
	int rc;

	if (r->region.valid)
		return COOP_SUCCESS;
	rc = coop_reg_get(ctx, r->msg.buf, r->msg.len, access, &r->region.key,
			  &r->region.cached);
	if (rc)
		return coop_err_from_errno(rc);
	r->region.valid = 1;
	return COOP_SUCCESS;
}

static void req_release_resources(struct coop_request *r)
{
	struct coop_context *ctx = r->ctx;
	const struct coop_proto_ops *ops = coop_proto_ops(ctx, r->rndv.proto);

	if (r->region.valid) {
		coop_reg_put(ctx, &r->region.key, r->region.cached);
		r->region.valid = 0;
	}
	if (ops && ops->release)
		ops->release(r);
}

/* status.protocol and the per-protocol message counts */
static void req_account(struct coop_request *r)
{
	struct coop_context *ctx = r->ctx;
	const struct coop_proto_ops *ops = coop_proto_ops(ctx, r->rndv.proto);
	int p = ops && ops->reported ? ops->reported(r) : r->rndv.proto;

	if (p >= COOP_PROTOCOL_COUNT)
		p = PROTO_NONE;
	r->status.protocol = p;
	if (p == PROTO_NONE || r->status.error)
		return;
	if (r->kind == REQ_SEND)
		ctx->stats.sent[p]++;
	else if (r->kind == REQ_RECV)	/* copy jobs are no messages */
		ctx->stats.received[p]++;
}

static void req_complete(struct coop_request *r)
{
	if (r->job.copying) {	/* a thread still copies into its buffer */
		r->job.end_deferred = 1;
		return;
	}
	if (r->kind != REQ_COLL) {	/* no protocol, no registration */
		req_account(r);
		req_release_resources(r);
	}
	dlist_del(&r->alink);
	r->complete = 1;
	coop_lock_completed(r->ctx);
	if (r->owner.complete_cb) {
		r->owner.complete_cb(r);
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

struct coop_context *coop_req_array_ctx(int count,
					struct coop_request **reqs)
{
	int i;

	/* inactive ones too: coop_startall starts them */
	for (i = 0; reqs && i < count; i++)
		if (reqs[i])
			return reqs[i]->ctx;
	return NULL;
}

void coop_req_copy_over(struct coop_request *r)
{
	if (!r->job.end_deferred)
		return;
	r->job.end_deferred = 0;
	req_complete(r);
}

void coop_req_unlink(struct coop_request *r)
{
	if (r->ctx->up.unlink)
		r->ctx->up.unlink(r);
}

void coop_req_fail(struct coop_request *r, int err)
{
	if (r->complete || !r->active)
		return;
	coop_req_set_error(r, err);
	coop_req_unlink(r);
	coop_job_cancel(&r->job);
	r->pending = 0;
	req_complete(r);
}
