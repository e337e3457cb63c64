/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * eager.c - eager protocols.
 *   inline (Env+D): envelope and up to 48 bytes of data in one packet
 *                   (44 for synchronous sends, which carry their request
 *                   id for the ACK), or up to 240 (236) in a span of up
 *                   to four packets enqueued together, when it fits the
 *                   peer's ring now and nothing waits in our backlog for
 *                   it (a span is never backlogged: such a message takes
 *                   a bounce slot instead);
 *   bounce:         the sender copies the data into one of its shared
 *                   bounce slots and sends the envelope + slot number; the
 *                   receiver copies out and frees the slot.  Up to
 *                   COOP_EAGER_MAX bytes; when no slot is free the message
 *                   goes by rendezvous instead (no waiting, no deadlock).
 * A span costs the two processes no line that both write (the ring's
 * protocol); a bounce slot's busy flag is written by both.
 * Standard/ready/buffered eager sends complete at once; synchronous ones
 * when the receiver's ACK says a receive matched.
 */
#include <errno.h>
#include <string.h>

#include "proto.h"

static size_t inline_max(unsigned flags)
{
	return (flags & COOP_SEND_SYNC) ? PKT_INLINE_SYNC_MAX : PKT_INLINE_MAX;
}

static size_t span_max(unsigned flags)
{
	return inline_max(flags) + PKT_SPAN_INLINE_MAX - PKT_INLINE_MAX;
}

static void send_done(struct coop_request *r, int sync)
{
	r->rndv.proto = PROTO_EAGER;
	if (sync) {
		r->pending |= EV_ACK;
		return;
	}
	r->pending |= EV_LOCAL;
	coop_req_event(r, EV_LOCAL);
}

/*
 * Build Env+D of len bytes (with the synchronous send's id first if
 * sreq) in pkts, an array of PKT_SPAN_MAX: how many packets it takes.
 */
static unsigned fill_inline(struct coop_context *ctx, union coop_pkt *pkts,
			    const struct coop_pkt_hdr *env, const void *buf,
			    size_t len, const uint32_t *sreq)
{
	uint8_t *data = coop_pkt_inline(pkts);
	size_t body = len + (sreq ? sizeof(*sreq) : 0);
	unsigned n = 1;

	if (body > PKT_BODY)
		n += (unsigned)((body - PKT_BODY + COOPMPI_MSG_SIZE - 1) /
				COOPMPI_MSG_SIZE);
	coop_hdr_init(ctx, &pkts->h, PKT_EAGER, env->comm, env->tag);
	pkts->h.seq = env->seq;
	pkts->h.ilen = (uint8_t)len;
	if (sreq) {
		pkts->h.flags |= PF_SYNC;
		memcpy(data, sreq, sizeof(*sreq));
		data += sizeof(*sreq);
	}
	if (len)
		memcpy(data, buf, len);
	if (n > 1)	/* the last packet's tail: no stack bytes to the peer */
		memset(coop_pkt_inline(pkts) + body, 0,
		       PKT_BODY + (n - 1) * COOPMPI_MSG_SIZE - body);
	return n;
}

/* COOP_SUCCESS, -EAGAIN (a span found no room now) or COOP_ERR_*. */
static int send_inline_pkts(struct coop_context *ctx, int peer,
			    union coop_pkt *pkts, unsigned n)
{
	return n == 1 ? coop_send_pkt(ctx, peer, pkts) :
			coop_send_span(ctx, peer, pkts, n);
}

static int send_inline(struct coop_context *ctx, struct coop_request *r)
{
	union coop_pkt pkts[PKT_SPAN_MAX];
	struct coop_pkt_hdr env = { .comm = r->msg.comm, .tag = r->msg.tag,
				    .seq = r->match.seq };
	int sync = !!(r->msg.flags & COOP_SEND_SYNC);
	uint32_t id = sync ? coop_req_id(r) : 0;
	unsigned n = fill_inline(ctx, pkts, &env, r->msg.buf, r->msg.len,
				 sync ? &id : NULL);
	int rc = send_inline_pkts(ctx, r->msg.peer, pkts, n);

	if (rc)
		return rc;
	send_done(r, sync);
	return COOP_SUCCESS;
}

/* 1 sent, 0 no free slot, or -COOP_ERR_*. */
static int send_bounce(struct coop_context *ctx, struct coop_request *r)
{
	union coop_pkt pkt;
	int sync = !!(r->msg.flags & COOP_SEND_SYNC);
	int slot = coop_seg_bounce_alloc(&ctx->seg, 0), rc;

	if (slot < 0)
		return 0;
	memcpy(coop_seg_bounce(&ctx->seg, (uint32_t)slot), r->msg.buf,
	       r->msg.len);
	ctx->bslot_peer[slot] = (uint16_t)r->msg.peer;
	coop_hdr_init(ctx, &pkt.h, PKT_EAGER_BB, r->msg.comm, r->msg.tag);
	pkt.h.seq = r->match.seq;
	if (sync)
		pkt.h.flags |= PF_SYNC;
	pkt.bb.slot = (uint32_t)slot;
	pkt.bb.sreq = sync ? coop_req_id(r) : 0;
	pkt.bb.len = r->msg.len;
	rc = coop_send_pkt(ctx, r->msg.peer, &pkt);
	if (rc) {
		coop_seg_bounce_free(&ctx->seg, (uint32_t)slot);
		return -rc;
	}
	send_done(r, sync);
	return 1;
}

/* 1: r went eagerly (complete, or awaiting the ACK); 0: it must use a
 * rendezvous protocol; -COOP_ERR_*: failure. */
int coop_eager_send(struct coop_context *ctx, struct coop_request *r)
{
	int rc;

	if (r->msg.len <= inline_max(r->msg.flags)) {
		rc = send_inline(ctx, r);
		return rc ? -rc : 1;
	}
	if (coop_req_rndv_sized(ctx, r))
		return 0;
	if (r->msg.len <= span_max(r->msg.flags)) {
		rc = send_inline(ctx, r);
		if (rc != -EAGAIN)
			return rc ? -rc : 1;
	}
	return send_bounce(ctx, r);
}

int coop_eager_fast_fits(const struct coop_context *ctx, size_t len)
{
	return len <= PKT_INLINE_MAX ||
	       (len <= PKT_SPAN_INLINE_MAX && len <= ctx->cfg.eager_max &&
		!ctx->proto->send_hooks);
}

int coop_eager_inline_fast(struct coop_context *ctx, const void *buf,
			   size_t len, int dest, int tag, uint16_t comm)
{
	union coop_pkt pkts[PKT_SPAN_MAX];
	struct coop_pkt_hdr env = { .comm = comm, .tag = tag };
	unsigned n;
	int rc;

	if (ctx->proto->send_hooks)
		env.seq = ctx->proto->send_hooks->eager_seq(ctx, comm, dest,
							    tag);
	n = fill_inline(ctx, pkts, &env, buf, len, NULL);
	rc = send_inline_pkts(ctx, dest, pkts, n);
	if (!rc)	/* no request: count it here, as req_account would */
		ctx->stats.sent[PROTO_EAGER]++;
	return rc;
}

static void send_ack(struct coop_context *ctx, const struct coop_msgdesc *m)
{
	union coop_pkt pkt;

	coop_hdr_init(ctx, &pkt.h, PKT_ACK, m->comm, m->tag);
	pkt.ack.sreq = m->sreq;
	coop_send_pkt(ctx, m->src, &pkt);
}

static void release_slot(struct coop_context *ctx,
			 const struct coop_msgdesc *m)
{
	struct coop_seg *seg = &ctx->peers[m->src].seg;

	if (coop_seg_slot_valid(seg, m->slot))
		coop_seg_bounce_free(seg, m->slot);
}

void coop_eager_deliver(struct coop_request *r, const struct coop_msgdesc *m)
{
	struct coop_context *ctx = r->ctx;
	size_t n = COOP_MIN(m->len, r->msg.len);

	if (m->len > r->msg.len)
		coop_req_set_error(r, COOP_ERR_TRUNCATE);
	if (m->type == PKT_EAGER) {
		if (n)
			memcpy(r->msg.buf, m->data, n);
	} else {
		struct coop_seg *seg = &ctx->peers[m->src].seg;

		/* coop_proto_describe() checked the slot at arrival */
		if (n)
			memcpy(r->msg.buf, coop_seg_bounce(seg, m->slot), n);
		release_slot(ctx, m);
	}
	r->status.count = n;
	r->rndv.proto = PROTO_EAGER;
	if (m->flags & PF_SYNC)
		send_ack(ctx, m);
	coop_req_event(r, EV_MATCH);
}

void coop_eager_discard(struct coop_context *ctx, const struct coop_msgdesc *m)
{
	if (m->type == PKT_EAGER_BB)
		release_slot(ctx, m);
}

/* A synchronous eager send's receive matched. */
static void on_ack(struct coop_context *ctx, const union coop_pkt *p)
{
	struct coop_request *s = coop_req_lookup_peer(ctx, p->ack.sreq, p->h.src);

	if (s && s->kind == REQ_SEND)
		coop_req_event(s, EV_ACK);
}

void coop_eager_register(struct coop_context *ctx)
{
	coop_am_register(ctx, PKT_ACK, on_ack);
}
