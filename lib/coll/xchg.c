/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * xchg.c - blocking messages of the collective layer's own (a topology's
 * creation gathers and spreads the graph with them).
 */
#include "coll.h"

static struct coop_request *new_req(struct coop_context *ctx, int kind,
				    const void *buf, size_t len, int peer,
				    int tag, uint16_t comm)
{
	struct coop_request *r = coop_req_new_msg(ctx, kind, buf, len, peer,
						  tag, comm);

	if (r)
		coop_req_activate(r);
	return r;
}

/* Wait for r, free it: its error (*got: the bytes it brought). */
static int finish(struct coop_context *ctx, struct coop_request *r,
		  size_t *got)
{
	int err;

	while (!r->complete)
		if (!coop_progress_once(ctx))
			coop_idle(ctx);
	ctx->idle = 0;
	err = r->status.error;
	if (got)
		*got = r->status.count;
	coop_req_free(r);
	return err;
}

int coop_coll_send(struct coop_context *ctx, const void *buf, size_t len,
		   int dest, int tag, uint16_t comm)
{
	struct coop_request *r = new_req(ctx, REQ_SEND, buf, len, dest, tag,
					 comm);
	int rc;

	if (!r)
		return COOP_ERR_NOMEM;
	rc = coop_p2p_send_start(ctx, r);
	if (rc && !r->complete)
		coop_req_fail(r, rc);
	return finish(ctx, r, NULL);
}

int coop_coll_recv(struct coop_context *ctx, void *buf, size_t cap, int src,
		   int tag, uint16_t comm, size_t *got)
{
	struct coop_request *r = new_req(ctx, REQ_RECV, buf, cap, src, tag,
					 comm);

	if (!r)
		return COOP_ERR_NOMEM;
	coop_p2p_recv_post(ctx, r);
	return finish(ctx, r, got);
}
