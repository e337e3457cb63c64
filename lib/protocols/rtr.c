/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rtr.c - receiver-initiated rendezvous ([Nikoloudakis22]'s final
 * variant), enabled by COOP_RNDV=rtr.
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
 * Cancel (mpi/cancel.c): a receive whose ticket is covered by an RTR
 * (its own or a later receive's) is revoked with the sender: if the
 * sender has not posted that send yet, it drops the RTRs from that ticket
 * on and answers OK (on_revoke here), and the receiver renumbers and
 * re-advertises the later receives; otherwise the message is already on
 * its way and the cancel fails.
 */
#include <string.h>

#include "proto.h"

void coop_rtr_send(struct coop_context *ctx, struct coop_request *r)
{
	union coop_pkt pkt;

	if (coop_req_reg(r, COOPMPI_REGION_WRITE))
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

	dlist_for_each(pos, &ctx->proto->rts_sends) {
		struct coop_request *s =
			container_of(pos, struct coop_request, link);

		if (s->peer == p->h.src && s->comm == p->h.comm &&
		    s->tag == p->h.tag && s->seq == p->h.seq)
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
		dlist_del(&s->link);
		rtr_apply(s, p->rreq, p->cap, &p->key);
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

int coop_rtr_take(struct coop_context *ctx, struct coop_request *s)
{
	struct coop_triple *t = coop_triple_get(ctx, s->comm, s->peer, s->tag);
	struct coop_message *u;

	if (!t || dlist_empty(&t->rtrq))
		return 0;
	u = rtrq_scan(ctx, t, s->seq, s->seq);
	if (!u)
		return 0;
	rtr_apply(s, u->d.sreq, u->d.len, &u->d.key);
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
	struct coop_tickets *tk = &ctx->proto->tk;
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

void coop_rtr_register(struct coop_context *ctx)
{
	coop_am_register(ctx, PKT_RTR, on_rtr);
	coop_am_register(ctx, PKT_REVOKE, on_revoke);
	coop_on_peer_gone(ctx, drop_rtrs_from);
}
