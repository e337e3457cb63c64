/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * p2p.c - starting sends and receives, and a receive meeting its message
 * (the arrival handlers of EAGER, EAGER_BB and RTS packets), plus the
 * layer's set-up and teardown.
 *   send: (numbered, RTR mode) eager inline -> eager bounce -> (buffered:
 *         copy to the attached buffer) -> RTR already queued (RTR mode)
 *         -> rendezvous RTS.
 *   receive: unexpected queue first, else post (and maybe send an RTR).
 */
#include <stdlib.h>
#include <string.h>

#include "mpi.h"

static void complete_now(struct coop_request *r)
{
	r->pending |= EV_LOCAL;
	coop_req_event(r, EV_LOCAL);
}

int coop_p2p_send_rndv(struct coop_context *ctx, struct coop_request *r)
{
	return ctx->mpi->matching->send_rndv(ctx, r);
}

int coop_p2p_send_start(struct coop_context *ctx, struct coop_request *r)
{
	int rc;

	if (r->msg.peer == COOP_PROC_NULL) {
		complete_now(r);
		return COOP_SUCCESS;
	}
	if (ctx->peers[r->msg.peer].dead) {
		coop_req_fail(r, COOP_ERR_PEER_DEAD);
		return COOP_ERR_PEER_DEAD;
	}
	ctx->mpi->matching->number_send(ctx, r);
	rc = coop_eager_send(ctx, r);
	if (rc < 0) {
		coop_req_fail(r, -rc);
		return -rc;
	}
	if (rc > 0) {
		ctx->mpi->matching->sent_eagerly(ctx, r);
		return COOP_SUCCESS;
	}
	if (r->msg.flags & COOP_SEND_BUFFERED)
		return coop_bsend_start(ctx, r);
	rc = coop_p2p_send_rndv(ctx, r);
	if (rc)
		coop_req_fail(r, rc);
	return rc;
}

void coop_p2p_recv_deliver(struct coop_request *r, const struct coop_msgdesc *m)
{
	r->status.source = m->src;
	r->status.tag = m->tag;
	if (m->type == PKT_RTS)
		coop_rndv_matched(r, m);
	else
		coop_eager_deliver(r, m);
}

int coop_p2p_take_inline(struct coop_context *ctx, void *buf, size_t cap,
			 int src, int tag, uint16_t comm, size_t *len)
{
	struct coop_message *u = coop_match_unexpected(ctx, src, tag, comm);

	if (!u || u->d.type != PKT_EAGER || (u->d.flags & PF_SYNC))
		return 0;
	dlist_del(&u->link);
	coop_match_consumed(ctx, &u->d);
	*len = u->d.len;
	memcpy(buf, u->d.data, COOP_MIN(u->d.len, cap));
	coop_pool_put(&ctx->proto->msgs, u);
	ctx->stats.received[PROTO_EAGER]++;
	return 1;
}

void coop_p2p_recv_post(struct coop_context *ctx, struct coop_request *r)
{
	struct coop_message *u;

	r->pending |= EV_MATCH;
	if (r->msg.peer == COOP_PROC_NULL) {
		r->status.source = COOP_PROC_NULL;
		r->status.tag = COOP_ANY_TAG;
		coop_req_event(r, EV_MATCH);
		return;
	}
	u = coop_match_unexpected(ctx, r->msg.peer, r->msg.tag, r->msg.comm);
	if (u) {
		dlist_del(&u->link);
		coop_match_consumed(ctx, &u->d);
		coop_p2p_recv_deliver(r, &u->d);
		coop_pool_put(&ctx->proto->msgs, u);
		return;
	}
	if (r->msg.peer != COOP_ANY_SOURCE && ctx->peers[r->msg.peer].dead) {
		coop_req_fail(r, COOP_ERR_PEER_DEAD);
		return;
	}
	coop_match_post(ctx, r);
}

/* A message arrives: the oldest posted receive it matches, else the
 * unexpected queue. */
static void on_arrival(struct coop_context *ctx, const union coop_pkt *p)
{
	struct coop_msgdesc md, *m = &md;
	struct coop_request *r;

	if (coop_proto_describe(ctx, m, p)) {
		coop_peer_misbehaved(ctx, p->h.src, "message envelope");
		return;
	}
	r = coop_match_posted(ctx, m);

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
	coop_match_consumed(ctx, m);
	coop_match_unpost(ctx, r);
	coop_p2p_recv_deliver(r, m);
}

/* A request (re)starts: no ticket, RTR, wildcard count or cancel. */
static void mpi_req_activate(struct coop_request *r)
{
	r->match.ticketed = 0;
	r->match.rtr_out = 0;
	r->match.wildcard = 0;
	r->match.cancel_wanted = 0;
}

int coop_mpi_layer_init(struct coop_context *ctx)
{
	struct coop_mpi_state *ms = calloc(1, sizeof(*ms));

	if (!ms)
		return COOP_ERR_NOMEM;
	ctx->mpi = ms;
	coop_up_on_activate(ctx, mpi_req_activate);
	dlist_init(&ms->prq);
	dlist_init(&ms->umq);
	dlist_init(&ms->bs.blocks);
	if (coop_rtr_init(ctx))
		return COOP_ERR_NOMEM;
	coop_am_register(ctx, PKT_EAGER, on_arrival);
	coop_am_register(ctx, PKT_EAGER_BB, on_arrival);
	coop_am_register(ctx, PKT_RTS, on_arrival);
	coop_cancel_register(ctx);
	ctx->up.unlink = coop_match_unlink;
	return COOP_SUCCESS;
}

/* Give back the peers' bounce slots still held by unexpected messages. */
static void drop_unexpected(struct coop_context *ctx)
{
	struct dlist *umq = &ctx->mpi->umq;

	while (!dlist_empty(umq)) {
		struct coop_message *u = container_of(umq->next,
						      struct coop_message,
						      link);

		dlist_del(&u->link);
		coop_eager_discard(ctx, &u->d);
		coop_pool_put(&ctx->proto->msgs, u);
	}
}

void coop_mpi_finalize(struct coop_context *ctx)
{
	coop_bsend_fini(ctx);
	coop_staged_drain(ctx);
	coop_core_say_bye(ctx);
	drop_unexpected(ctx);
}

void coop_mpi_layer_fini(struct coop_context *ctx)
{
	if (!ctx->mpi)
		return;
	coop_rtr_fini(ctx);
	free(ctx->mpi);
	ctx->mpi = NULL;
}
