/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * match.c - MPI matching: the posted-receive queue (PRQ) and the
 * unexpected-message queue (UMQ), both in order.
 *
 * Non-overtaking: packets of one sender arrive in order (FIFO rings), a
 * message matches the oldest posted receive that accepts it, and a receive
 * takes the oldest unexpected message it accepts.
 *
 * Receiver-initiated matching (COOP_RNDV=rtr) and its tickets: rtr.c.
 */
#include <string.h>

#include "mpi.h"

/* ---------------- queues ---------------- */

static int envelope_matches(int want_src, int want_tag, uint16_t want_comm,
			    int src, int tag, uint16_t comm)
{
	return want_comm == comm &&
	       (want_src == COOP_ANY_SOURCE || want_src == src) &&
	       (want_tag == COOP_ANY_TAG || want_tag == tag);
}

struct coop_request *coop_match_posted(struct coop_context *ctx,
				       const struct coop_msgdesc *m)
{
	struct dlist *pos;

	dlist_for_each(pos, &ctx->mpi->prq) {
		struct coop_request *r =
			container_of(pos, struct coop_request, match.link);

		if (!envelope_matches(r->msg.peer, r->msg.tag, r->msg.comm,
				      m->src, m->tag, m->comm))
			continue;
		/* a ticketed receive is reserved for its own message */
		if (r->match.ticketed && r->match.seq != m->seq)
			continue;
		return r;
	}
	return NULL;
}

struct coop_message *coop_match_unexpected(struct coop_context *ctx, int src,
					   int tag, uint16_t comm)
{
	struct dlist *pos;

	dlist_for_each(pos, &ctx->mpi->umq) {
		struct coop_message *u =
			container_of(pos, struct coop_message, link);

		if (envelope_matches(src, tag, comm, u->d.src, u->d.tag,
				     u->d.comm))
			return u;
	}
	return NULL;
}

int coop_match_add_unexpected(struct coop_context *ctx,
			      const struct coop_msgdesc *m)
{
	struct coop_message *u = coop_pool_get(&ctx->proto->msgs);

	if (!u)
		return COOP_ERR_NOMEM;
	u->d = *m;
	if (m->type == PKT_EAGER) {
		memcpy(u->data, m->data, m->ilen);
		u->d.data = u->data;
	}
	dlist_add_tail(&ctx->mpi->umq, &u->link);
	ctx->stats.unexpected_peak = COOP_MAX(ctx->stats.unexpected_peak,
					      (uint64_t)ctx->proto->msgs.live);
	return COOP_SUCCESS;
}

void coop_match_consumed(struct coop_context *ctx,
			 const struct coop_msgdesc *m)
{
	ctx->mpi->matching->consumed(ctx, m);
}

void coop_match_post(struct coop_context *ctx, struct coop_request *r)
{
	dlist_add_tail(&ctx->mpi->prq, &r->match.link);
	ctx->mpi->matching->recv_posted(ctx, r);
}

void coop_match_unpost(struct coop_context *ctx, struct coop_request *r)
{
	dlist_del(&r->match.link);
	if (r->match.wildcard)
		coop_rtr_unpost_wildcard(ctx, r);
}

void coop_match_unlink(struct coop_request *r)
{
	if (!dlist_linked(&r->match.link))
		return;
	if (r->kind == REQ_RECV)
		coop_match_unpost(r->ctx, r);
	else
		dlist_del(&r->match.link);
}
