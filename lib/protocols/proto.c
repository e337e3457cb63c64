/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * proto.c - the protocol layer's set-up (its state, every protocol's
 * registration with the core, the offload engine) and the control
 * packets several protocols send: CTS, FIN, the work-slot FIN.
 */
#include <stdlib.h>
#include <string.h>

#include "proto.h"

#define MSG_PREALLOC 256
#define MSG_MAX (1u << 24)

/* A request (re)starts: no protocol yet, nothing moved. */
static void proto_req_activate(struct coop_request *r)
{
	r->rndv.proto = PROTO_NONE;
	r->rndv.rts_sent = 0;
	r->rndv.precharged = 0;
	r->rndv.xfer = 0;
	if (r->kind != REQ_COLL)	/* a collective's carries none */
		memset(&r->rndv.u, 0, sizeof(r->rndv.u));
}

int coop_proto_layer_init(struct coop_context *ctx)
{
	struct coop_proto_state *ps = calloc(1, sizeof(*ps));

	if (!ps)
		return COOP_ERR_NOMEM;
	ctx->proto = ps;
	coop_up_on_activate(ctx, proto_req_activate);
	if (coop_pool_init(&ps->msgs, sizeof(struct coop_message),
			   MSG_PREALLOC, MSG_MAX))
		return COOP_ERR_NOMEM;
	coop_eager_register(ctx);
	coop_rndv_register(ctx);
	coop_dma_register(ctx);
	coop_stripe_register(ctx);
	coop_staged_register(ctx);
	coop_dma_init(ctx);
	/* profile.c first: it sizes the staging files' notes */
	if (coop_proto_observer_init(ctx))
		return COOP_ERR_NOMEM;
	return coop_staged_init(ctx);
}

void coop_proto_layer_fini(struct coop_context *ctx)
{
	struct coop_proto_state *ps = ctx->proto;

	if (!ps)
		return;
	coop_dma_fini(ctx);
	coop_proto_observer_fini(ctx);
	coop_staged_fini(ctx);
	coop_pool_destroy(&ps->msgs);
	free(ps);
	ctx->proto = NULL;
}

void coop_proto_set_send_hooks(struct coop_context *ctx,
			       const struct coop_send_hooks *h)
{
	ctx->proto->send_hooks = h;
}

int coop_proto_describe(struct coop_context *ctx, struct coop_msgdesc *m,
			const union coop_pkt *p)
{
	const struct coop_pkt_hdr *h = &p->h;
	const struct coop_seg *seg = &ctx->peers[h->src].seg;
	size_t room = PKT_BODY + coop_pkt_span_more(p) * COOPMPI_MSG_SIZE;

	memset(m, 0, sizeof(*m));
	m->type = h->type;
	m->flags = h->flags;
	m->proto = h->proto;
	m->src = h->src;
	m->tag = h->tag;
	m->comm = h->comm;
	m->seq = h->seq;
	switch (h->type) {
	case PKT_EAGER:
		m->ilen = h->ilen;
		m->len = h->ilen;
		m->data = p->eager.data;
		if (h->flags & PF_SYNC) {
			memcpy(&m->sreq, p->eager.data, sizeof(m->sreq));
			m->data += sizeof(m->sreq);
			room -= sizeof(m->sreq);
		}
		return h->ilen <= room ? 0 : -1;
	case PKT_EAGER_BB:
		m->slot = p->bb.slot;
		m->sreq = p->bb.sreq;
		m->len = p->bb.len;
		return coop_seg_bounce_holds(seg, m->slot, m->len) ? 0 : -1;
	case PKT_RTS:
		m->sreq = p->rts.sreq;
		m->len = p->rts.len;
		m->key = p->rts.key;
		return 0;
	default:
		return -1;
	}
}

/* The sender's CPU share of a protocol we answer with a CTS: we put it in
 * its pending load before it hears of it (select.c). */
static uint64_t sender_share(const struct coop_request *r,
			     enum coop_proto proto, uint64_t split)
{
	if (proto == PROTO_RPUT)
		return r->rndv.xfer;
	return proto == PROTO_COOP ? r->rndv.xfer - split : 0;
}

int coop_proto_send_cts(struct coop_request *r, const struct coop_cts_args *a)
{
	struct coop_context *ctx = r->ctx;
	int src = r->status.source;
	int64_t charge = (int64_t)sender_share(r, a->proto, a->split);
	union coop_pkt pkt;
	int rc = coop_req_reg(r, COOPMPI_REGION_WRITE);

	if (rc)
		return rc;
	coop_load_precharge(ctx, src, charge);
	coop_hdr_init(ctx, &pkt.h, PKT_CTS, r->msg.comm, r->status.tag);
	pkt.h.proto = (uint8_t)a->proto;
	pkt.cts.sreq = r->rndv.rid;
	pkt.cts.rreq = coop_req_id(r);
	pkt.cts.len = r->rndv.xfer;
	pkt.cts.key = r->region.key;
	pkt.cts.slot = a->slot;
	pkt.cts.chunk = (uint32_t)a->chunk;
	pkt.cts.ncookie = a->ncookie;
	rc = coop_send_pkt(ctx, src, &pkt);
	if (rc)
		coop_load_precharge(ctx, src, -charge);
	return rc;
}

int coop_proto_send_fin(struct coop_context *ctx, int peer, uint32_t rid,
			int err, uint64_t len, int tag, uint64_t copied,
			uint8_t flags)
{
	union coop_pkt pkt;

	coop_hdr_init(ctx, &pkt.h, PKT_FIN, 0, tag);
	pkt.h.flags = flags;
	pkt.fin.req = rid;
	pkt.fin.err = err;
	pkt.fin.len = len;
	pkt.fin.copied = copied;
	pkt.fin.slot = FIN_NONE;
	return coop_send_pkt(ctx, peer, &pkt);
}

void coop_proto_sender_fin(struct coop_request *s, int err, uint64_t copied)
{
	coop_proto_send_fin(s->ctx, s->msg.peer, s->rndv.rid, err, s->msg.len,
			    s->msg.tag, copied,
			    s->rndv.rts_sent ? PF_RTS_SENT : 0);
}

void coop_proto_send_slot_fin(struct coop_context *ctx, int peer,
			      uint32_t slot)
{
	union coop_pkt pkt;

	coop_hdr_init(ctx, &pkt.h, PKT_FIN, 0, 0);
	pkt.fin.req = FIN_NONE;
	pkt.fin.slot = slot;
	coop_send_pkt(ctx, peer, &pkt);
}
