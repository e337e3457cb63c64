/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cancel.c - cancel of a ticketed receive in RTR mode (the receiver's
 * side of the revoke handshake; the sender's is rtr.c).  A
 * receive whose ticket is covered by an RTR (its own or a later
 * receive's) cannot just leave the posted queue: the sender may already
 * write into it.  It asks the sender (PKT_REVOKE); on OK it leaves and
 * the later receives of its triple move down one ticket and advertise
 * again; else its message is on the way and the cancel fails.  One
 * handshake per triple at a time; cancels asked for meanwhile are retried
 * when the answer comes.
 */
#include <string.h>

#include "mpi.h"

static int same_triple(const struct coop_request *a,
		       const struct coop_request *b)
{
	return a->msg.comm == b->msg.comm && a->msg.peer == b->msg.peer &&
	       a->msg.tag == b->msg.tag;
}

/* Is r's ticket covered by an RTR (r's own or a later receive's)? */
static int rtr_covers(struct coop_context *ctx, struct coop_request *r)
{
	struct dlist *pos;

	if (r->match.rtr_out)
		return 1;
	dlist_for_each(pos, &ctx->mpi->prq) {
		struct coop_request *q =
			container_of(pos, struct coop_request, match.link);

		if (q->match.ticketed && same_triple(q, r) &&
		    q->match.seq > r->match.seq && q->match.rtr_out)
			return 1;
	}
	return 0;
}

/* r leaves the numbering: later receives of its triple move down one. */
static void renumber_after(struct coop_context *ctx, struct coop_triple *t,
			   struct coop_request *r)
{
	struct dlist *pos;

	dlist_for_each(pos, &ctx->mpi->prq) {
		struct coop_request *q =
			container_of(pos, struct coop_request, match.link);

		if (q->match.ticketed && same_triple(q, r) &&
		    q->match.seq > r->match.seq) {
			q->match.seq--;
			/* the sender dropped those RTRs */
			q->match.rtr_out = 0;
		}
	}
	t->rcount--;
}

static void cancel_now(struct coop_context *ctx, struct coop_request *r)
{
	coop_match_unpost(ctx, r);
	r->status.cancelled = 1;
	r->match.cancel_wanted = 0;
	coop_req_event(r, EV_MATCH | EV_REVOKE);
}

int coop_cancel_ticketed(struct coop_context *ctx, struct coop_request *r)
{
	struct coop_triple *t =
		coop_triple_get(ctx, r->msg.comm, r->msg.peer, r->msg.tag);
	union coop_pkt pkt;

	if (!t)
		return COOP_ERR_NOMEM;
	r->match.cancel_wanted = 1;
	if (t->revoking)
		return COOP_SUCCESS;	/* retried when the answer comes */
	if (!rtr_covers(ctx, r)) {
		renumber_after(ctx, t, r);
		cancel_now(ctx, r);
		return COOP_SUCCESS;
	}
	coop_hdr_init(ctx, &pkt.h, PKT_REVOKE, r->msg.comm, r->msg.tag);
	pkt.h.seq = r->match.seq;
	pkt.revoke.rreq = coop_req_id(r);
	pkt.revoke.ok = 0;
	t->revoking = 1;
	r->pending |= EV_REVOKE;
	return coop_send_pkt(ctx, r->msg.peer, &pkt);
}

static void retry_cancels(struct coop_context *ctx, uint16_t comm, int peer,
			  int tag)
{
	struct dlist *pos, *tmp;

	dlist_for_each_safe(pos, tmp, &ctx->mpi->prq) {
		struct coop_request *q =
			container_of(pos, struct coop_request, match.link);

		if (q->match.cancel_wanted && !(q->pending & EV_REVOKE) &&
		    q->msg.comm == comm && q->msg.peer == peer &&
		    q->msg.tag == tag) {
			coop_cancel_ticketed(ctx, q);
			return;	/* at most one handshake at a time */
		}
	}
}

static void revoke_reply(struct coop_context *ctx,
			 const struct coop_pkt_revoke *p)
{
	struct coop_triple *t = coop_triple_get(ctx, p->h.comm, p->h.src,
						p->h.tag);
	struct coop_request *r = coop_req_lookup(ctx, p->rreq);

	if (!t)
		return;
	t->revoking = 0;
	if (r && p->ok && dlist_linked(&r->match.link) &&
	    (r->pending & EV_MATCH)) {
		renumber_after(ctx, t, r);
		cancel_now(ctx, r);
	} else if (r) {
		/* too late: it completes normally */
		r->match.cancel_wanted = 0;
		coop_req_event(r, EV_REVOKE);
	}
	coop_rtr_resume(ctx, p->h.comm);
	retry_cancels(ctx, p->h.comm, p->h.src, p->h.tag);
}

/*
 * The sender is gone, so no REVOKE_REPLY will come: answer for it.  A
 * receive still unmatched can no longer be written to (cancel succeeds);
 * one whose FIN came first keeps its data (cancel failed).
 */
static void peer_gone(struct coop_context *ctx, int peer)
{
	struct dlist *pos, *tmp;

	dlist_for_each_safe(pos, tmp, &ctx->inflight) {
		struct coop_request *r =
			container_of(pos, struct coop_request, alink);
		struct coop_pkt_revoke reply = { .rreq = coop_req_id(r) };

		if (r->kind != REQ_RECV || r->msg.peer != peer ||
		    !(r->pending & EV_REVOKE))
			continue;
		reply.h.comm = (uint16_t)r->msg.comm;
		reply.h.src = (uint16_t)peer;
		reply.h.tag = r->msg.tag;
		reply.ok = !!(r->pending & EV_MATCH);
		revoke_reply(ctx, &reply);
	}
}

static void on_revoke_reply(struct coop_context *ctx,
			    const union coop_pkt *pkt)
{
	revoke_reply(ctx, &pkt->revoke);
}

void coop_cancel_register(struct coop_context *ctx)
{
	coop_am_register(ctx, PKT_REVOKE_REPLY, on_revoke_reply);
	coop_on_peer_gone(ctx, peer_gone);
}
