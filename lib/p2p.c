/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * p2p.c - starting sends and receives, and a receive meeting its message:
 * the protocol engine's entry points, independent of the provider.
 *   send: eager inline -> eager bounce -> (buffered: copy to the attached
 *         buffer) -> RTR already queued (RTR mode) -> rendezvous RTS.
 *   receive: unexpected queue first, else post (and maybe send an RTR).
 */
#include <string.h>

#include "coop_internal.h"

static void complete_now(struct coop_request *r)
{
	r->pending |= EV_LOCAL;
	coop_req_event(r, EV_LOCAL);
}

int coop_send_rndv(struct coop_context *ctx, struct coop_request *r)
{
	if (ctx->rtr && coop_rtr_take(ctx, r))
		return COOP_SUCCESS;	/* the receiver asked first: write */
	return coop_rndv_send(ctx, r);
}

int coop_send_start(struct coop_context *ctx, struct coop_request *r)
{
	int rc;

	if (r->peer == COOP_PROC_NULL) {
		complete_now(r);
		return COOP_SUCCESS;
	}
	if (ctx->peers[r->peer].dead) {
		coop_req_fail(r, COOP_ERR_PEER_DEAD);
		return COOP_ERR_PEER_DEAD;
	}
	if (ctx->rtr) {
		/* an RTR for this send may sit in our ring: take it in first,
		 * before this send is numbered, so no RTS is wasted */
		if (r->len > ctx->cfg.eager_max)
			coop_progress_once(ctx);
		r->seq = coop_rtr_send_seq(ctx, r->comm, r->peer, r->tag, 0);
	}
	rc = coop_eager_send(ctx, r);
	if (rc < 0) {
		coop_req_fail(r, -rc);
		return -rc;
	}
	if (rc > 0) {
		if (ctx->rtr)
			coop_rtr_prune(ctx, r->comm, r->peer, r->tag, r->seq);
		return COOP_SUCCESS;
	}
	if (r->flags & COOP_SEND_BUFFERED)
		return coop_bsend_start(ctx, r);
	rc = coop_send_rndv(ctx, r);
	if (rc)
		coop_req_fail(r, rc);
	return rc;
}

void coop_recv_deliver(struct coop_request *r, const struct coop_msgdesc *m)
{
	r->status.source = m->src;
	r->status.tag = m->tag;
	if (m->type == PKT_RTS)
		coop_rndv_matched(r, m);
	else
		coop_eager_deliver(r, m);
}

void coop_recv_post(struct coop_context *ctx, struct coop_request *r)
{
	struct coop_message *u;

	r->pending |= EV_MATCH;
	if (r->peer == COOP_PROC_NULL) {
		r->status.source = COOP_PROC_NULL;
		r->status.tag = COOP_ANY_TAG;
		coop_req_event(r, EV_MATCH);
		return;
	}
	u = coop_match_unexpected(ctx, r->peer, r->tag, r->comm);
	if (u) {
		dlist_del(&u->link);
		coop_match_consumed(ctx, r, &u->d);
		coop_recv_deliver(r, &u->d);
		coop_pool_put(&ctx->msgs, u);
		return;
	}
	if (r->peer != COOP_ANY_SOURCE && ctx->peers[r->peer].dead) {
		coop_req_fail(r, COOP_ERR_PEER_DEAD);
		return;
	}
	if (coop_match_post(ctx, r))
		coop_rtr_send(ctx, r);
}

void coop_recv_arrival(struct coop_context *ctx, const struct coop_msgdesc *m)
{
	struct coop_request *r = coop_match_posted(ctx, m);

	if (!r) {
		if (coop_match_add_unexpected(ctx, m)) {
			coop_log(ctx->rank, "out of memory: message from %d "
				 "dropped", m->src);
			coop_eager_discard(ctx, m);
		}
		return;
	}
	/* count the message before unposting: that may lift a suspension
	 * and number the receives waiting behind r */
	coop_match_consumed(ctx, r, m);
	coop_match_unpost(ctx, r);
	coop_recv_deliver(r, m);
}
