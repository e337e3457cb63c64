/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bsend.c - buffered sends.  Eager-sized buffered sends need no attached
 * space (the data is in a packet or bounce slot before the call returns);
 * a rendezvous-sized one is copied into the attached buffer and sent by an
 * internal request that frees its block when it completes, while the
 * user's request completes at once.  The attached buffer is managed
 * first-fit, blocks kept in address order; each block starts with its
 * header (<= COOP_BSEND_OVERHEAD bytes).
 */
#include <string.h>

#include "mpi.h"

struct bblock {
	struct dlist link;
	size_t off;	/* of this header within the buffer */
	size_t size;	/* header + data, rounded */
};

/* header + alignment of the data and of the next block */
_Static_assert(sizeof(struct bblock) + 2 * 7 <= COOP_BSEND_OVERHEAD,
	       "overhead");

#define ALIGN8(x) (((x) + 7) & ~(size_t)7)

static int buffer_attach_locked(coop_context_t *ctx, void *buf, size_t size)
{
	if (!ctx || !buf || size < COOP_BSEND_OVERHEAD)
		return COOP_ERR_ARG;
	if (ctx->mpi->bs.buf)
		return COOP_ERR_STATE;
	ctx->mpi->bs.buf = buf;
	ctx->mpi->bs.size = size;
	return COOP_SUCCESS;
}

int coop_buffer_attach(coop_context_t *ctx, void *buf, size_t size)
{
	COOP_LOCKED(ctx, buffer_attach_locked(ctx, buf, size));
}

static void wait_blocks(struct coop_context *ctx)
{
	while (!dlist_empty(&ctx->mpi->bs.blocks)) {
		if (coop_progress_once(ctx))
			ctx->idle = 0;
		else
			coop_idle(ctx);
	}
	ctx->idle = 0;
}

static int buffer_detach_locked(coop_context_t *ctx, void **buf, size_t *size)
{
	if (!ctx)
		return COOP_ERR_ARG;
	if (!ctx->mpi->bs.buf)
		return COOP_ERR_STATE;
	wait_blocks(ctx);
	if (buf)
		*buf = ctx->mpi->bs.buf;
	if (size)
		*size = ctx->mpi->bs.size;
	ctx->mpi->bs.buf = NULL;
	ctx->mpi->bs.size = 0;
	return COOP_SUCCESS;
}

int coop_buffer_detach(coop_context_t *ctx, void **buf, size_t *size)
{
	COOP_LOCKED(ctx, buffer_detach_locked(ctx, buf, size));
}

void coop_bsend_fini(struct coop_context *ctx)
{
	if (ctx->mpi->bs.buf)
		wait_blocks(ctx);
}

/* First fit: insert a block of need bytes, or NULL. */
static struct bblock *bblock_alloc(struct coop_bsend *bs, size_t need)
{
	struct dlist *pos;
	size_t start;
	struct bblock *b;

	if (!bs->buf)
		return NULL;
	start = (size_t)(-(uintptr_t)bs->buf & 7);	/* align the base */
	dlist_for_each(pos, &bs->blocks) {
		struct bblock *o = container_of(pos, struct bblock, link);

		if (o->off >= start && o->off - start >= need)
			break;
		start = o->off + o->size;
	}
	if (start > bs->size || bs->size - start < need)
		return NULL;
	b = (struct bblock *)(bs->buf + start);
	b->off = start;
	b->size = need;
	dlist_add_tail(pos, &b->link);	/* before pos: address order */
	return b;
}

/* The inner send completed: its block is free, the request ours to free. */
static void inner_done(struct coop_request *in)
{
	struct bblock *b = in->owner.data;

	dlist_del(&b->link);
	in->active = 0;
	coop_req_free(in);
}

int coop_bsend_start(struct coop_context *ctx, struct coop_request *r)
{
	size_t need = ALIGN8(sizeof(struct bblock)) + ALIGN8(r->msg.len);
	struct bblock *b = bblock_alloc(&ctx->mpi->bs, need);
	struct coop_request *in;
	int rc;

	if (!b) {
		coop_req_fail(r, COOP_ERR_BUFFER);
		return COOP_ERR_BUFFER;
	}
	in = coop_req_new(ctx, REQ_SEND);
	if (!in) {
		dlist_del(&b->link);
		coop_req_fail(r, COOP_ERR_NOMEM);
		return COOP_ERR_NOMEM;
	}
	in->msg.buf = (char *)b + ALIGN8(sizeof(struct bblock));
	memcpy(in->msg.buf, r->msg.buf, r->msg.len);
	in->msg.len = r->msg.len;
	in->msg.peer = r->msg.peer;
	in->msg.tag = r->msg.tag;
	in->msg.comm = r->msg.comm;
	in->msg.flags =
		(r->msg.flags & ~(COOP_SEND_BUFFERED | COOP_F_BLOCKING)) |
		REQ_F_BUFFERED_INNER;
	in->owner.complete_cb = inner_done;
	in->owner.data = b;
	coop_req_activate(in);
	in->match.seq = r->match.seq;
	rc = coop_p2p_send_rndv(ctx, in);
	if (rc)
		coop_req_fail(in, rc);
	r->pending |= EV_LOCAL;	/* the user's request: done, data copied */
	coop_req_event(r, EV_LOCAL);
	return COOP_SUCCESS;
}
