/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rtr.c - receiver-initiated matching ([Nikoloudakis22]'s final variant),
 * enabled by COOP_RNDV=rtr; without it sends alone initiate
 * (coop_sender_initiated).  The choice is made once, in coop_rtr_init.
 *
 * Tickets ([Nikoloudakis22] sec. 3.5-3.6): for each (comm, peer, tag) the
 * n-th send matches the n-th receive.  Every send
 * carries its number (hdr.seq); a receive posted while no wildcard receive
 * could steal its message gets its number (ticket) at post time and may
 * advertise its buffer with an RTR carrying the ticket; a ticketed receive
 * only accepts the message with its own number, so an RTR never matches
 * the wrong send.  Pending COOP_ANY_SOURCE receives of a comm, or
 * COOP_ANY_TAG receives for a source, suspend ticketing (receiver
 * initiation) for what they could match; receives posted meanwhile are
 * numbered when they match, or when the suspension lifts (in posting
 * order), whichever comes first.
 *
 * A long receive that got a ticket sends an RTR with its buffer and
 * ticket.  The sender keeps RTRs per (comm, peer, tag):
 *   - the send with the same number, if already waiting for a CTS after
 *     its RTS, takes the RTR as its CTS;
 *   - an RTR whose number was already used by an eager send is dropped;
 *   - otherwise it waits in the queue for the send with its number, which
 *     then writes at once, without any RTS (protocols/rndv.c's write).
 * The sender's FIN carries the completion data (message size and tag), so
 * no envelope packet is needed.  Because a ticketed receive accepts only
 * its own message, an RTR can never be matched by the wrong send.
 *
 * Cancel (cancel.c): a receive whose ticket is covered by an RTR (its own
 * or a later receive's) is revoked with the sender: if the sender has not
 * posted that send yet, it drops the RTRs from that ticket on and answers
 * OK (on_revoke here), and the receiver renumbers and re-advertises the
 * later receives; otherwise the message is already on its way and the
 * cancel fails.
 */
#include <string.h>

#include "mpi.h"

/* ---------------- the receiver's side: tickets, suspension ---------------- */

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

static int wild_count(struct coop_context *ctx, struct coop_request *r,
		      int delta)
{
	int src = r->msg.peer == COOP_ANY_SOURCE ? COOP_ANY_SOURCE :
						   r->msg.peer;
	struct coop_triple *t =
		coop_triple_get(ctx, r->msg.comm, src, COOP_ANY_TAG);

	if (!t)
		return -1;
	t->susp = (uint32_t)((int)t->susp + delta);
	ctx->mpi->nwild = (unsigned)((int)ctx->mpi->nwild + delta);
	return (int)t->susp;
}

/* Number a receive: it is the next of its (comm, src, tag). */
static int ticket(struct coop_context *ctx, struct coop_request *r)
{
	struct coop_triple *t =
		coop_triple_get(ctx, r->msg.comm, r->msg.peer, r->msg.tag);

	if (!t)
		return 0;
	r->match.seq = ++t->rcount;
	r->match.ticketed = 1;
	return coop_req_rndv_sized(ctx, r);
}

static void rtr_send(struct coop_context *ctx, struct coop_request *r);

static void recv_posted(struct coop_context *ctx, struct coop_request *r)
{
	if (r->msg.peer == COOP_ANY_SOURCE || r->msg.tag == COOP_ANY_TAG) {
		r->match.wildcard = 1;
		wild_count(ctx, r, +1);
		return;
	}
	if (!suspended(ctx, r->msg.comm, r->msg.peer, r->msg.tag) &&
	    ticket(ctx, r))
		rtr_send(ctx, r);
}

static void consumed(struct coop_context *ctx, const struct coop_msgdesc *m)
{
	struct coop_triple *t = coop_triple_get(ctx, m->comm, m->src, m->tag);

	if (t && m->seq > t->rcount)
		t->rcount = m->seq;
}

/* Number the receives that waited for comm's suspension, in posting
 * order, and advertise every long ticketed receive that has no RTR out. */
void coop_rtr_resume(struct coop_context *ctx, uint16_t comm)
{
	struct dlist *pos, *tmp;

	dlist_for_each_safe(pos, tmp, &ctx->mpi->prq) {
		struct coop_request *r =
			container_of(pos, struct coop_request, match.link);

		if (r->msg.comm != comm || r->match.wildcard ||
		    suspended(ctx, comm, r->msg.peer, r->msg.tag))
			continue;
		if (!r->match.ticketed)
			ticket(ctx, r);
		if (r->match.ticketed && !r->match.rtr_out &&
		    coop_req_rndv_sized(ctx, r))
			rtr_send(ctx, r);
	}
}

void coop_rtr_unpost_wildcard(struct coop_context *ctx,
			      struct coop_request *r)
{
	r->match.wildcard = 0;
	if (wild_count(ctx, r, -1) == 0)
		coop_rtr_resume(ctx, r->msg.comm);
}

/* ---------------- the sender's side: RTRs ---------------- */

static void rtr_send(struct coop_context *ctx, struct coop_request *r)
{
	union coop_pkt pkt;

	if (coop_req_reg(r, COOPMPI_REGION_WRITE))
		return;		/* stays sender-initiated */
	coop_hdr_init(ctx, &pkt.h, PKT_RTR, r->msg.comm, r->msg.tag);
	pkt.h.seq = r->match.seq;
	pkt.rtr.rreq = coop_req_id(r);
	pkt.rtr.pad = 0;
	pkt.rtr.cap = r->msg.len;
	pkt.rtr.key = r->region.key;
	r->match.rtr_out = 1;
	coop_send_pkt(ctx, r->msg.peer, &pkt);
}

static struct coop_request *waiting_send(struct coop_context *ctx,
					 const struct coop_pkt_rtr *p)
{
	struct dlist *pos;

	dlist_for_each(pos, &ctx->mpi->rts_sends) {
		struct coop_request *s =
			container_of(pos, struct coop_request, match.link);

		if (s->msg.peer == p->h.src && s->msg.comm == p->h.comm &&
		    s->msg.tag == p->h.tag && s->match.seq == p->h.seq)
			return s;
	}
	return NULL;
}

static void on_rtr(struct coop_context *ctx, const union coop_pkt *pkt)
{
	const struct coop_pkt_rtr *p = &pkt->rtr;
	struct coop_triple *t = coop_triple_get(ctx, p->h.comm, p->h.src,
						p->h.tag);
	struct coop_request *s = waiting_send(ctx, p);
	struct coop_message *u;

	if (s) {
		dlist_del(&s->match.link);
		coop_rndv_write_for_rtr(s, p->rreq, p->cap, &p->key);
		coop_req_event(s, EV_PEER);
		return;
	}
	if (!t || p->h.seq <= t->scount)
		return;		/* its send went eagerly */
	u = coop_pool_get(&ctx->proto->msgs);
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
			coop_pool_put(&ctx->proto->msgs, u);
		} else if (want && u->d.seq == want) {
			dlist_del(&u->link);
			return u;
		} else {
			break;
		}
	}
	return NULL;
}

static uint32_t send_seq(struct coop_context *ctx, uint16_t comm, int dst,
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

/* Send r went eagerly: RTRs up to its number are void. */
static void sent_eagerly(struct coop_context *ctx, struct coop_request *r)
{
	struct coop_triple *t =
		coop_triple_get(ctx, r->msg.comm, r->msg.peer, r->msg.tag);

	if (t && !dlist_empty(&t->rtrq))
		rtrq_scan(ctx, t, r->match.seq + 1, 0);
}

/* 1 when an RTR for send s was queued: s now writes (no RTS); else 0. */
static int take_rtr(struct coop_context *ctx, struct coop_request *s)
{
	struct coop_triple *t =
		coop_triple_get(ctx, s->msg.comm, s->msg.peer, s->msg.tag);
	struct coop_message *u;

	if (!t || dlist_empty(&t->rtrq))
		return 0;
	u = rtrq_scan(ctx, t, s->match.seq, s->match.seq);
	if (!u)
		return 0;
	coop_rndv_write_for_rtr(s, u->d.sreq, u->d.len, &u->d.key);
	coop_pool_put(&ctx->proto->msgs, u);
	return 1;
}

/* ---------------- revoke, the sender's side ---------------- */

static void rtrq_drop_from(struct coop_context *ctx, struct coop_triple *t,
			   uint32_t from)
{
	struct dlist *pos, *tmp;

	dlist_for_each_safe(pos, tmp, &t->rtrq) {
		struct coop_message *u =
			container_of(pos, struct coop_message, link);

		if (u->d.seq >= from) {
			dlist_del(&u->link);
			coop_pool_put(&ctx->proto->msgs, u);
		}
	}
}

/* The receiver wants to cancel the receive with ticket seq: possible if
 * our send with that number is not posted yet.  We drop the RTRs from
 * that ticket on (the receiver renumbers and re-advertises). */
static void on_revoke(struct coop_context *ctx, const union coop_pkt *in)
{
	const struct coop_pkt_revoke *p = &in->revoke;
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

/* A dead sender's RTRs: nobody will write for them. */
static void drop_rtrs_from(struct coop_context *ctx, int peer)
{
	struct coop_tickets *tk = &ctx->mpi->tk;
	uint32_t i;

	for (i = 0; i <= tk->mask; i++) {
		struct coop_triple *t = tk->tab[i];

		while (t && !dlist_empty(&t->rtrq)) {
			struct coop_message *u = container_of(
				t->rtrq.next, struct coop_message, link);

			if (u->d.src != peer)
				break;
			dlist_del(&u->link);
			coop_pool_put(&ctx->proto->msgs, u);
		}
	}
}

/* An RTR for this send may sit in our ring: take it in first, before
 * the send is numbered, so no RTS is wasted. */
static void number_send(struct coop_context *ctx, struct coop_request *r)
{
	if (coop_req_rndv_sized(ctx, r))
		coop_progress_once(ctx);
	r->match.seq = send_seq(ctx, r->msg.comm, r->msg.peer, r->msg.tag, 0);
}

static int send_rndv(struct coop_context *ctx, struct coop_request *r)
{
	if (take_rtr(ctx, r))
		return COOP_SUCCESS;	/* the receiver asked first: write */
	return coop_rndv_send(ctx, r);
}

static uint32_t eager_seq(struct coop_context *ctx, uint16_t comm, int dst,
			  int tag)
{
	return send_seq(ctx, comm, dst, tag, 1);
}

static void rts_sent(struct coop_context *ctx, struct coop_request *r)
{
	dlist_add_tail(&ctx->mpi->rts_sends, &r->match.link);
}

static const struct coop_send_hooks send_hooks = {
	.eager_seq = eager_seq,
	.rts_sent = rts_sent,
};

static const struct coop_matching receiver_initiated = {
	.number_send = number_send,
	.sent_eagerly = sent_eagerly,
	.send_rndv = send_rndv,
	.recv_posted = recv_posted,
	.consumed = consumed,
};

/* ---------------- sender-initiated: nothing to number ---------------- */

static void nothing_to_number(struct coop_context *ctx, struct coop_request *r)
{
	(void)ctx;
	(void)r;
}

static void no_tickets(struct coop_context *ctx, const struct coop_msgdesc *m)
{
	(void)ctx;
	(void)m;
}

const struct coop_matching coop_sender_initiated = {
	.number_send = nothing_to_number,
	.sent_eagerly = nothing_to_number,
	.send_rndv = coop_rndv_send,
	.recv_posted = nothing_to_number,
	.consumed = no_tickets,
};

int coop_rtr_init(struct coop_context *ctx)
{
	struct coop_mpi_state *ms = ctx->mpi;

	dlist_init(&ms->rts_sends);
	if (coop_tickets_init(ctx))
		return COOP_ERR_NOMEM;
	if (ctx->cfg.rndv != COOP_RNDV_RTR) {
		ms->matching = &coop_sender_initiated;
		return COOP_SUCCESS;
	}
	ms->matching = &receiver_initiated;
	coop_proto_set_send_hooks(ctx, &send_hooks);
	coop_am_register(ctx, PKT_RTR, on_rtr);
	coop_am_register(ctx, PKT_REVOKE, on_revoke);
	coop_on_peer_gone(ctx, drop_rtrs_from);
	return COOP_SUCCESS;
}

void coop_rtr_fini(struct coop_context *ctx)
{
	coop_tickets_fini(ctx);
}
