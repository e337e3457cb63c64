/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * proto_rtr.c - receiver-initiated rendezvous (seed 003, final variant),
 * enabled by COOP_RNDV=rtr.
 *
 * A long receive that got a ticket at post time (see match.c) sends an RTR
 * with its buffer and ticket.  The sender keeps RTRs per (comm, peer, tag):
 *   - the send with the same number, if already waiting for a CTS after
 *     its RTS, takes the RTR as its CTS;
 *   - an RTR whose number was already used by an eager send is dropped;
 *   - otherwise it waits in the queue for the send with its number, which
 *     then writes at once, without any RTS.
 * The sender's FIN carries the completion data (message size and tag), so
 * no envelope packet is needed.  Because a ticketed receive accepts only
 * its own message, an RTR can never be matched by the wrong send.
 *
 * Cancel: a receive whose ticket is covered by an RTR (its own or a later
 * receive's) is revoked with the sender: if the sender has not posted
 * that send yet, it drops the RTRs from that ticket on and answers OK, and
 * the receiver renumbers and re-advertises the later receives; otherwise
 * the message is already on its way and the cancel fails.
 */
#include <string.h>

#include "coop_internal.h"

void coop_rtr_send(struct coop_context *ctx, struct coop_request *r)
{
	union coop_pkt pkt;

	if (coop_rndv_reg(r, COOPMPI_REGION_WRITE))
		return;		/* stays sender-initiated */
	coop_hdr_init(ctx, &pkt.h, PKT_RTR, r->comm, r->tag);
	pkt.h.seq = r->seq;
	pkt.rtr.rreq = coop_req_id(r);
	pkt.rtr.pad = 0;
	pkt.rtr.cap = r->len;
	pkt.rtr.key = r->lkey;
	r->rtr_out = 1;
	coop_send_pkt(ctx, r->peer, &pkt);
}

static void rtr_apply(struct coop_request *s, uint32_t rreq, uint64_t cap,
		      const struct coop_rkey *key)
{
	s->rid = rreq;
	s->xfer = COOP_MIN(s->len, cap);
	s->job.key = *key;
	s->proto = PROTO_RTR;
	coop_rndv_start_write(s);
}

static struct coop_request *waiting_send(struct coop_context *ctx,
					 const struct coop_pkt_rtr *p)
{
	struct dlist *pos;

	dlist_for_each(pos, &ctx->rts_sends) {
		struct coop_request *s =
			container_of(pos, struct coop_request, link);

		if (s->peer == p->h.src && s->comm == p->h.comm &&
		    s->tag == p->h.tag && s->seq == p->h.seq)
			return s;
	}
	return NULL;
}

void coop_rtr_on_rtr(struct coop_context *ctx, const struct coop_pkt_rtr *p)
{
	struct coop_triple *t = coop_triple_get(ctx, p->h.comm, p->h.src,
						p->h.tag);
	struct coop_request *s = waiting_send(ctx, p);
	struct coop_message *u;

	if (s) {
		dlist_del(&s->link);
		rtr_apply(s, p->rreq, p->cap, &p->key);
		coop_req_event(s, EV_PEER);
		return;
	}
	if (!t || p->h.seq <= t->scount)
		return;		/* its send went eagerly */
	u = coop_pool_get(&ctx->msgs);
	if (!u)
		return;		/* the send will use RTS instead */
	u->d.type = PKT_RTR;
	u->d.src = p->h.src;
	u->d.seq = p->h.seq;
	u->d.sreq = p->rreq;
	u->d.len = p->cap;
	u->d.key = p->key;
	dlist_add_tail(&t->rtrq, &u->link);
}

/* Drop queued RTRs below 'below', return the one numbered 'want' if
 * it is there (want == 0: none). */
static struct coop_message *rtrq_scan(struct coop_context *ctx,
				      struct coop_triple *t, uint32_t below,
				      uint32_t want)
{
	struct dlist *pos, *tmp;

	dlist_for_each_safe(pos, tmp, &t->rtrq) {
		struct coop_message *u =
			container_of(pos, struct coop_message, link);

		if (u->d.seq < below) {
			dlist_del(&u->link);
			coop_pool_put(&ctx->msgs, u);
		} else if (want && u->d.seq == want) {
			dlist_del(&u->link);
			return u;
		} else {
			break;
		}
	}
	return NULL;
}

uint32_t coop_rtr_send_seq(struct coop_context *ctx, uint16_t comm, int dst,
			   int tag, int eager)
{
	struct coop_triple *t = coop_triple_get(ctx, comm, dst, tag);
	uint32_t seq;

	if (!t)
		return 0;
	seq = ++t->scount;
	if (eager && !dlist_empty(&t->rtrq))
		rtrq_scan(ctx, t, seq + 1, 0);
	return seq;
}

void coop_rtr_prune(struct coop_context *ctx, uint16_t comm, int dst, int tag,
		    uint32_t upto)
{
	struct coop_triple *t = coop_triple_get(ctx, comm, dst, tag);

	if (t && !dlist_empty(&t->rtrq))
		rtrq_scan(ctx, t, upto + 1, 0);
}

struct coop_message *coop_rtr_take(struct coop_context *ctx,
				   struct coop_request *s)
{
	struct coop_triple *t = coop_triple_get(ctx, s->comm, s->peer, s->tag);
	struct coop_message *u;

	if (!t || dlist_empty(&t->rtrq))
		return NULL;
	u = rtrq_scan(ctx, t, s->seq, s->seq);
	if (u) {
		rtr_apply(s, u->d.sreq, u->d.len, &u->d.key);
		coop_pool_put(&ctx->msgs, u);
	}
	return u;
}

/* ---------------- cancel ---------------- */

static int same_triple(const struct coop_request *a,
		       const struct coop_request *b)
{
	return a->comm == b->comm && a->peer == b->peer && a->tag == b->tag;
}

/* Is r's ticket covered by an RTR (r's own or a later receive's)? */
static int rtr_covers(struct coop_context *ctx, struct coop_request *r)
{
	struct dlist *pos;

	if (r->rtr_out)
		return 1;
	dlist_for_each(pos, &ctx->prq) {
		struct coop_request *q =
			container_of(pos, struct coop_request, link);

		if (q->ticketed && same_triple(q, r) && q->seq > r->seq &&
		    q->rtr_out)
			return 1;
	}
	return 0;
}

/* r leaves the numbering: later receives of its triple move down one. */
static void renumber_after(struct coop_context *ctx, struct coop_triple *t,
			   struct coop_request *r)
{
	struct dlist *pos;

	dlist_for_each(pos, &ctx->prq) {
		struct coop_request *q =
			container_of(pos, struct coop_request, link);

		if (q->ticketed && same_triple(q, r) && q->seq > r->seq) {
			q->seq--;
			q->rtr_out = 0;	/* the sender dropped those RTRs */
		}
	}
	t->rcount--;
}

static void cancel_now(struct coop_context *ctx, struct coop_request *r)
{
	coop_match_unpost(ctx, r);
	r->status.cancelled = 1;
	r->cancel_wanted = 0;
	coop_req_event(r, EV_MATCH | EV_REVOKE);
}

int coop_rtr_cancel(struct coop_context *ctx, struct coop_request *r)
{
	struct coop_triple *t = coop_triple_get(ctx, r->comm, r->peer, r->tag);
	union coop_pkt pkt;

	if (!t)
		return COOP_ERR_NOMEM;
	r->cancel_wanted = 1;
	if (t->revoking)
		return COOP_SUCCESS;	/* retried when the answer comes */
	if (!rtr_covers(ctx, r)) {
		renumber_after(ctx, t, r);
		cancel_now(ctx, r);
		return COOP_SUCCESS;
	}
	coop_hdr_init(ctx, &pkt.h, PKT_REVOKE, r->comm, r->tag);
	pkt.h.seq = r->seq;
	pkt.revoke.rreq = coop_req_id(r);
	pkt.revoke.ok = 0;
	t->revoking = 1;
	r->pending |= EV_REVOKE;
	return coop_send_pkt(ctx, r->peer, &pkt);
}

static void rtrq_drop_from(struct coop_context *ctx, struct coop_triple *t,
			   uint32_t from)
{
	struct dlist *pos, *tmp;

	dlist_for_each_safe(pos, tmp, &t->rtrq) {
		struct coop_message *u =
			container_of(pos, struct coop_message, link);

		if (u->d.seq >= from) {
			dlist_del(&u->link);
			coop_pool_put(&ctx->msgs, u);
		}
	}
}

void coop_rtr_on_revoke(struct coop_context *ctx,
			const struct coop_pkt_revoke *p)
{
	struct coop_triple *t = coop_triple_get(ctx, p->h.comm, p->h.src,
						p->h.tag);
	union coop_pkt pkt;
	int ok = t && p->h.seq > t->scount;

	if (ok)
		rtrq_drop_from(ctx, t, p->h.seq);
	coop_hdr_init(ctx, &pkt.h, PKT_REVOKE_REPLY, p->h.comm, p->h.tag);
	pkt.h.seq = p->h.seq;
	pkt.revoke.rreq = p->rreq;
	pkt.revoke.ok = (uint32_t)ok;
	coop_send_pkt(ctx, p->h.src, &pkt);
}

static void retry_cancels(struct coop_context *ctx, uint16_t comm, int peer,
			  int tag)
{
	struct dlist *pos, *tmp;

	dlist_for_each_safe(pos, tmp, &ctx->prq) {
		struct coop_request *q =
			container_of(pos, struct coop_request, link);

		if (q->cancel_wanted && !(q->pending & EV_REVOKE) &&
		    q->comm == comm && q->peer == peer && q->tag == tag) {
			coop_rtr_cancel(ctx, q);
			return;	/* at most one handshake at a time */
		}
	}
}

void coop_rtr_on_revoke_reply(struct coop_context *ctx,
			      const struct coop_pkt_revoke *p)
{
	struct coop_triple *t = coop_triple_get(ctx, p->h.comm, p->h.src,
						p->h.tag);
	struct coop_request *r = coop_req_lookup(ctx, p->rreq);

	if (!t)
		return;
	t->revoking = 0;
	if (r && p->ok && dlist_linked(&r->link) &&
	    (r->pending & EV_MATCH)) {
		renumber_after(ctx, t, r);
		cancel_now(ctx, r);
	} else if (r) {
		r->cancel_wanted = 0;	/* too late: it completes normally */
		coop_req_event(r, EV_REVOKE);
	}
	coop_match_resume(ctx, p->h.comm);
	retry_cancels(ctx, p->h.comm, p->h.src, p->h.tag);
}

/*
 * The sender is gone, so no REVOKE_REPLY will come: answer for it.  A
 * receive still unmatched can no longer be written to (cancel succeeds);
 * one whose FIN came first keeps its data (cancel failed).
 */
void coop_rtr_peer_gone(struct coop_context *ctx, int peer)
{
	struct dlist *pos, *tmp;

	dlist_for_each_safe(pos, tmp, &ctx->inflight) {
		struct coop_request *r =
			container_of(pos, struct coop_request, alink);
		struct coop_pkt_revoke reply = { .rreq = coop_req_id(r) };

		if (r->kind != REQ_RECV || r->peer != peer ||
		    !(r->pending & EV_REVOKE))
			continue;
		reply.h.comm = (uint16_t)r->comm;
		reply.h.src = (uint16_t)peer;
		reply.h.tag = r->tag;
		reply.ok = !!(r->pending & EV_MATCH);
		coop_rtr_on_revoke_reply(ctx, &reply);
	}
}
