/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * staged.c - the decoupled protocols of [Marathe] (seed 001), where
 * the send completes as soon as the sender has copied the message
 * somewhere the receiver can reach it later:
 *
 *   PRECOPY:  S copies into its own outbox (staging file, stage.h),
 *             -RTS(offset)-> R and completes; when a receive matches, R
 *             copies out of S's outbox and frees the chunk.
 *   POSTCOPY: S copies into its partition of R's inbox, -RTS(offset)-> R
 *             and completes; R copies out of its own inbox when a
 *             receive matches.
 *
 * Both cost two copies (one on each side) where RGET and RPUT cost one,
 * but neither side ever waits for the other: pre-copy when the receiver
 * comes late (the sender's copy is local and cheap), post-copy when the
 * receiver comes late and should find the data at home (its copy-out is
 * local).  The paper's remote copy is an RDMA read or write; here it is a
 * copy through shared memory, still the more expensive side (remote
 * pages, the other CPU's caches).
 *
 * A sender falls back to RGET when its ring has no room (or the message
 * is larger than the ring), and always for synchronous sends (they wait
 * for the match anyway).  No FIN: nothing of the sender waits.  The
 * staging files exist when COOP_RNDV may use them, for a static domain;
 * a peer's is mapped at first use.  The RTS carries the chunk's offset in
 * its key (cookie = offset, length = message length); a receiver checks
 * it against the ring (a peer's packet is never trusted).
 */
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "stage.h"

struct coop_staged {
	struct coop_stage own;
	struct coop_stage_ring outbox;	/* ours, PRECOPY */
	struct coop_stage *peer;	/* [size]: mapped on first use */
	struct coop_stage_ring **inbox;	/* [size]: ours in the peer's */
};

static int stage_wanted(const struct coop_config *cfg, uint64_t *out,
			uint64_t *in)
{
	int profile = cfg->rndv == COOP_RNDV_PROFILE;

	*out = cfg->rndv == COOP_RNDV_PRECOPY || profile ?
	       cfg->precopy_bytes : 0;
	*in = cfg->rndv == COOP_RNDV_POSTCOPY || profile ?
	      cfg->postcopy_bytes : 0;
	return *out || *in;
}

int coop_staged_init(struct coop_context *ctx)
{
	struct coop_staged *sg;
	uint64_t out, in;
	int rc;

	if (ctx->dynamic || !stage_wanted(&ctx->cfg, &out, &in))
		return COOP_SUCCESS;
	sg = calloc(1, sizeof(*sg));
	if (!sg)
		return COOP_ERR_NOMEM;
	sg->peer = calloc((size_t)ctx->size, sizeof(*sg->peer));
	sg->inbox = calloc((size_t)ctx->size, sizeof(*sg->inbox));
	rc = sg->peer && sg->inbox ?
	     coop_stage_create(&sg->own, ctx->key, ctx->rank, ctx->size, out,
			       in, ctx->proto->stage_notes_bytes) : -ENOMEM;
	if (rc) {
		coop_log(ctx->rank, "cannot create the staging area: %s",
			 strerror(-rc));
		free(sg->peer);
		free(sg->inbox);
		free(sg);
		return COOP_ERR_NOMEM;
	}
	coop_stage_outbox_ring(&sg->outbox, &sg->own);
	ctx->proto->staged = sg;
	return COOP_SUCCESS;
}

void coop_staged_fini(struct coop_context *ctx)
{
	struct coop_staged *sg = ctx->proto->staged;
	int i;

	if (!sg)
		return;
	for (i = 0; i < ctx->size; i++) {
		coop_stage_unmap(&sg->peer[i]);
		free(sg->inbox[i]);
	}
	coop_stage_destroy(&sg->own);
	free(sg->peer);
	free(sg->inbox);
	free(sg);
	ctx->proto->staged = NULL;
}

/* Rank r's staging file (ours for ourselves), mapped if need be. */
static const struct coop_stage *stage_of(struct coop_context *ctx, int r)
{
	struct coop_staged *sg = ctx->proto->staged;

	if (r == ctx->rank)
		return &sg->own;
	if (!sg->peer[r].map &&
	    coop_stage_map(&sg->peer[r], ctx->key, r, ctx->size,
			   ctx->proto->stage_notes_bytes))
		return NULL;
	return &sg->peer[r];
}

unsigned char *coop_staged_notes(struct coop_context *ctx, int rank)
{
	const struct coop_stage *st;

	if (!ctx->proto->staged)
		return NULL;
	st = stage_of(ctx, rank);
	return st && st->notes_bytes ? st->notes : NULL;
}

/* Can rank no longer read a chunk of ours (gone, or we ourselves, who
 * stop reading now)? */
static int reader_gone(const void *arg, int rank)
{
	const struct coop_context *ctx = arg;

	return rank < 0 || rank >= ctx->size || rank == ctx->rank ||
	       ctx->peers[rank].dead;
}

void coop_staged_drain(struct coop_context *ctx)
{
	struct coop_staged *sg = ctx->proto->staged;

	if (!sg)
		return;
	while (coop_stage_ring_awaited(&sg->outbox, reader_gone, ctx)) {
		if (coop_progress_once(ctx))
			ctx->idle = 0;
		else
			coop_idle(ctx);
	}
	ctx->idle = 0;
}

/* The ring a send to peer fills: our outbox or our part of its inbox. */
static struct coop_stage_ring *send_ring(struct coop_context *ctx,
					 enum coop_proto proto, int peer)
{
	struct coop_staged *sg = ctx->proto->staged;
	const struct coop_stage *st;

	if (proto == PROTO_PRECOPY)
		return &sg->outbox;
	if (!sg->inbox[peer]) {
		st = stage_of(ctx, peer);
		if (!st || !(sg->inbox[peer] = malloc(sizeof(**sg->inbox))))
			return NULL;
		coop_stage_inbox_ring(sg->inbox[peer], st, ctx->rank);
	}
	return sg->inbox[peer];
}

int coop_staged_send(struct coop_context *ctx, struct coop_request *r,
		     enum coop_proto proto)
{
	struct coop_stage_ring *ring;
	union coop_pkt pkt;
	int64_t off;
	int rc;

	if (!ctx->proto->staged || (r->msg.flags & COOP_SEND_SYNC))
		return -1;
	ring = send_ring(ctx, proto, r->msg.peer);
	off = ring ? coop_stage_alloc(ring, r->msg.len, r->msg.peer) : -1;
	if (off < 0)
		return -1;
	memcpy(ring->base + off, r->msg.buf, r->msg.len);
	coop_load_history_add(ctx, r->msg.len, coop_now_ns());
	coop_hdr_init(ctx, &pkt.h, PKT_RTS, r->msg.comm, r->msg.tag);
	pkt.h.seq = r->match.seq;
	pkt.h.proto = (uint8_t)proto;
	if (r->msg.flags & REQ_F_BUFFERED_INNER)
		pkt.h.flags |= PF_BUFFERED;
	pkt.rts.sreq = FIN_NONE;	/* nothing of ours waits */
	pkt.rts.pad = 0;
	pkt.rts.len = r->msg.len;
	pkt.rts.key.cookie = (uint64_t)off;
	pkt.rts.key.length = r->msg.len;
	rc = coop_send_pkt(ctx, r->msg.peer, &pkt);
	if (rc) {
		coop_stage_release(ring->base, (uint64_t)off);
		return rc;
	}
	r->rndv.proto = (uint8_t)proto;
	r->status.count = r->msg.len;
	r->pending |= EV_LOCAL;
	coop_req_event(r, EV_LOCAL);
	return COOP_SUCCESS;
}

/* Receiver: copy the staged message out and free its chunk. */
static int staged_matched(struct coop_request *r, const struct coop_msgdesc *m,
			  uint64_t split)
{
	struct coop_context *ctx = r->ctx;
	const struct coop_stage *st;
	unsigned char *base;
	uint64_t size;
	const void *data;

	(void)split;
	if (!ctx->proto->staged) {	/* our settings agree: it knows */
		coop_peer_misbehaved(ctx, m->src, "staged message");
		return COOP_ERR_PEER_DEAD;
	}
	st = stage_of(ctx, m->proto == PROTO_PRECOPY ? m->src : ctx->rank);
	if (!st)
		return COOP_ERR_PROVIDER;
	if (m->proto == PROTO_PRECOPY) {
		base = st->out;
		size = st->out_bytes;
	} else {
		base = st->in + (uint64_t)m->src * st->part_bytes;
		size = st->part_bytes;
	}
	data = coop_stage_chunk(base, size, m->key.cookie, m->len);
	if (!data) {
		coop_peer_misbehaved(ctx, m->src, "staged message");
		return COOP_ERR_PEER_DEAD;
	}
	memcpy(r->msg.buf, data, r->rndv.xfer);
	coop_stage_release(base, m->key.cookie);
	coop_load_history_add(ctx, r->rndv.xfer, coop_now_ns());
	return COOP_SUCCESS;
}

static int precopy_reported(const struct coop_request *r)
{
	(void)r;
	return COOP_PROTOCOL_PRECOPY;
}

static int postcopy_reported(const struct coop_request *r)
{
	(void)r;
	return COOP_PROTOCOL_POSTCOPY;
}

static const struct coop_proto_ops precopy_ops = {
	.name = "precopy", .matched = staged_matched,
	.reported = precopy_reported,
};

static const struct coop_proto_ops postcopy_ops = {
	.name = "postcopy", .matched = staged_matched,
	.reported = postcopy_reported,
};

void coop_staged_register(struct coop_context *ctx)
{
	coop_proto_register(ctx, PROTO_PRECOPY, &precopy_ops);
	coop_proto_register(ctx, PROTO_POSTCOPY, &postcopy_ops);
}
