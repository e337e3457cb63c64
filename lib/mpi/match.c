/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * match.c - MPI matching: the posted-receive queue (PRQ) and the
 * unexpected-message queue (UMQ), both in order, plus the RTR tickets.
 *
 * Non-overtaking: packets of one sender arrive in order (FIFO rings), a
 * message matches the oldest posted receive that accepts it, and a receive
 * takes the oldest unexpected message it accepts.
 *
 * RTR tickets (COOP_RNDV=rtr, [Nikoloudakis22] sec. 3.5-3.6): for each
 * (comm, peer, tag) the n-th send matches the n-th receive.  Every send
 * carries its number (hdr.seq); a receive posted while no wildcard receive
 * could steal its message gets its number (ticket) at post time and may
 * advertise its buffer with an RTR carrying the ticket; a ticketed receive
 * only accepts the message with its own number, so an RTR never matches
 * the wrong send.  Pending COOP_ANY_SOURCE receives of a comm, or
 * COOP_ANY_TAG receives for a source, suspend ticketing (receiver
 * initiation) for what they could match; receives posted meanwhile are
 * numbered when they match, or when the suspension lifts (in posting
 * order), whichever comes first.
 */
#include <string.h>

#include "mpi.h"

/* Is receiver initiation suspended for (comm, src, tag): a wildcard
 * receive could take its message, or a revoke is under way? */
static int suspended(struct coop_context *ctx, uint16_t comm, int src,
		     int tag)
{
	struct coop_triple *t;

	if (ctx->mpi->nwild) {
		t = coop_triple_find(ctx, comm, COOP_ANY_SOURCE, COOP_ANY_TAG);
		if (t && t->susp)
			return 1;
		t = coop_triple_find(ctx, comm, src, COOP_ANY_TAG);
		if (t && t->susp)
			return 1;
	}
	t = coop_triple_find(ctx, comm, src, tag);
	return t && t->revoking;
}

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
			container_of(pos, struct coop_request, link);

		if (!envelope_matches(r->peer, r->tag, r->comm, m->src,
				      m->tag, m->comm))
			continue;
		/* a ticketed receive is reserved for its own message */
		if (r->ticketed && r->seq != m->seq)
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
	struct coop_triple *t;

	if (!ctx->proto->rtr)
		return;
	t = coop_triple_get(ctx, m->comm, m->src, m->tag);
	if (t && m->seq > t->rcount)
		t->rcount = m->seq;
}

static int wild_count(struct coop_context *ctx, struct coop_request *r,
		      int delta)
{
	int src = r->peer == COOP_ANY_SOURCE ? COOP_ANY_SOURCE : r->peer;
	struct coop_triple *t =
		coop_triple_get(ctx, r->comm, src, COOP_ANY_TAG);

	if (!t)
		return -1;
	t->susp = (uint32_t)((int)t->susp + delta);
	ctx->mpi->nwild = (unsigned)((int)ctx->mpi->nwild + delta);
	return (int)t->susp;
}

/* Number a receive: it is the next of its (comm, src, tag). */
static int ticket(struct coop_context *ctx, struct coop_request *r)
{
	struct coop_triple *t = coop_triple_get(ctx, r->comm, r->peer, r->tag);

	if (!t)
		return 0;
	r->seq = ++t->rcount;
	r->ticketed = 1;
	return coop_req_rndv_sized(ctx, r);
}

int coop_match_post(struct coop_context *ctx, struct coop_request *r)
{
	dlist_add_tail(&ctx->mpi->prq, &r->link);
	if (!ctx->proto->rtr)
		return 0;
	if (r->peer == COOP_ANY_SOURCE || r->tag == COOP_ANY_TAG) {
		r->wildcard = 1;
		wild_count(ctx, r, +1);
		return 0;
	}
	if (suspended(ctx, r->comm, r->peer, r->tag))
		return 0;
	return ticket(ctx, r);
}

/* A suspension (or revoke) on comm ended: number the receives that waited
 * for it, in posting order, and advertise every long ticketed receive that
 * has no RTR out. */
void coop_match_resume(struct coop_context *ctx, uint16_t comm)
{
	struct dlist *pos, *tmp;

	dlist_for_each_safe(pos, tmp, &ctx->mpi->prq) {
		struct coop_request *r =
			container_of(pos, struct coop_request, link);

		if (r->comm != comm || r->wildcard ||
		    suspended(ctx, comm, r->peer, r->tag))
			continue;
		if (!r->ticketed)
			ticket(ctx, r);
		if (r->ticketed && !r->rtr_out && coop_req_rndv_sized(ctx, r))
			coop_rtr_send(ctx, r);
	}
}

void coop_match_unpost(struct coop_context *ctx, struct coop_request *r)
{
	dlist_del(&r->link);
	if (r->wildcard) {
		r->wildcard = 0;
		if (wild_count(ctx, r, -1) == 0)
			coop_match_resume(ctx, r->comm);
	}
}

void coop_match_unlink(struct coop_request *r)
{
	if (r->kind == REQ_RECV)
		coop_match_unpost(r->ctx, r);
	else
		dlist_del(&r->link);
}
