/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * proto.h - the protocol layer's interface: how a message moves (eager,
 * rendezvous RGET/RPUT/COOP-p2p/bounce pipeline, the write an RTR asks
 * for, DMA, striping, the COOP-hybrid choice).  The layer
 * registers its packet handlers and one struct coop_proto_ops per
 * protocol with the core (coop_proto_layer_init) and never calls the MPI
 * layer above; what it needs from it goes through the core's upcalls.
 * File map: README.md here.
 */
#ifndef COOP_PROTO_H
#define COOP_PROTO_H

#include "core.h"
#include "model.h"

/* Everything the engine knows about an arriving message (eager or RTS). */
struct coop_msgdesc {
	uint8_t type;		/* PKT_EAGER, PKT_EAGER_BB, PKT_RTS */
	uint8_t flags;		/* PF_* */
	uint8_t proto;
	uint8_t ilen;
	int src;
	int tag;
	uint16_t comm;
	uint32_t seq;
	uint32_t sreq;
	uint32_t slot;
	uint64_t len;
	struct coop_rkey key;
	const uint8_t *data;	/* EAGER: payload */
};

/* An unexpected message (also the coop_message_t of mprobe) or, on the
 * sender side, a queued RTR. */
struct coop_message {
	struct coop_pool_obj pobj;
	struct dlist link;
	struct coop_msgdesc d;
	uint8_t data[PKT_SPAN_INLINE_MAX];
};

/*
 * Receiver-initiated matching (the MPI layer's RTR mode, mpi/rtr.c)
 * numbers the sends that go out here and lets a send whose RTS is out
 * take the receiver's RTR as its CTS; NULL when sends alone initiate.
 */
struct coop_send_hooks {
	/* the number of the next send of (comm, dst, tag), which goes
	 * eagerly without a request */
	uint32_t (*eager_seq)(struct coop_context *ctx, uint16_t comm,
			      int dst, int tag);
	/* r's RTS is out: until its CTS, an RTR may answer it */
	void (*rts_sent)(struct coop_context *ctx, struct coop_request *r);
};

struct coop_dma;

/* The protocol layer's part of a context (ctx->proto). */
struct coop_proto_state {
	struct coop_pool msgs;	/* struct coop_message */
	const struct coop_send_hooks *send_hooks;	/* NULL: none */
	struct coop_dma *dma;	/* PROTO_DMA state, NULL until needed */
	double stripe_ratio;	/* PROTO_STRIPE's R in use, < 0: not known */
	int engine_none;	/* the provider said it has no offload engine */
	struct coop_staged *staged;	/* PRECOPY/POSTCOPY, NULL: unused */
	/* COOP_RNDV=profile (profile.c, set at its init; else NULL, 0) */
	struct coop_profile *profile;
	/* the protocol predicted best for rendezvous send r */
	enum coop_proto (*profile_choice)(struct coop_context *ctx,
					  const struct coop_request *r);
	uint64_t stage_notes_bytes;	/* each staging file's notes area */
};

/* proto.c: the layer's set-up, and what several protocols send */
COOP_HIDDEN int coop_proto_layer_init(struct coop_context *ctx);
COOP_HIDDEN void coop_proto_layer_fini(struct coop_context *ctx);
/* The layer above initiates from receivers too: these hooks see sends. */
COOP_HIDDEN void coop_proto_set_send_hooks(struct coop_context *ctx,
					   const struct coop_send_hooks *h);
/*
 * The message an EAGER, EAGER_BB or RTS packet announces: 0, or -1 when
 * the packet cannot be one its sender's library wrote (inline data longer
 * than the packet, a bounce slot or length its segment does not have).
 */
COOP_HIDDEN int coop_proto_describe(struct coop_context *ctx,
				    struct coop_msgdesc *m,
				    const union coop_pkt *p);
/* CTS answering r's RTS with proto; the receiver charges the sender's
 * share to its pending load first (COOP-load). */
struct coop_cts_args {
	enum coop_proto proto;
	uint32_t slot;		/* COOP: work slot; DMA: notification slot */
	uint64_t chunk;		/* COOP */
	uint64_t split;		/* COOP */
	uint64_t ncookie;	/* DMA: notification area */
};
COOP_HIDDEN int coop_proto_send_cts(struct coop_request *r,
				    const struct coop_cts_args *a);
COOP_HIDDEN int coop_proto_send_fin(struct coop_context *ctx, int peer,
				    uint32_t rid, int err, uint64_t len,
				    int tag, uint64_t copied, uint8_t flags);
/* The sender's FIN: our copy of send s ended (s->job, + the engine's
 * part for STRIPE), with error err. */
COOP_HIDDEN void coop_proto_sender_fin(struct coop_request *s, int err,
				       uint64_t copied);
COOP_HIDDEN void coop_proto_send_slot_fin(struct coop_context *ctx,
					  int peer, uint32_t slot);

/* eager.c */
COOP_HIDDEN void coop_eager_register(struct coop_context *ctx);
/* 1: r went eagerly (complete, or awaiting the ACK); 0: it must use a
 * rendezvous protocol; -COOP_ERR_*: failure. */
COOP_HIDDEN int coop_eager_send(struct coop_context *ctx,
				struct coop_request *r);
/* May a blocking standard send of len bytes go by
 * coop_eager_inline_fast()? */
COOP_HIDDEN int coop_eager_fast_fits(const struct coop_context *ctx,
				     size_t len);
/* Such a send, with no request at all: COOP_SUCCESS, -EAGAIN (not sent:
 * a span found no room; take the request's way) or COOP_ERR_*. */
COOP_HIDDEN int coop_eager_inline_fast(struct coop_context *ctx,
				       const void *buf, size_t len, int dest,
				       int tag, uint16_t comm);
COOP_HIDDEN void coop_eager_deliver(struct coop_request *r,
				    const struct coop_msgdesc *m);
COOP_HIDDEN void coop_eager_discard(struct coop_context *ctx,
				    const struct coop_msgdesc *m);

/* rndv.c */
COOP_HIDDEN void coop_rndv_register(struct coop_context *ctx);
COOP_HIDDEN int coop_rndv_send(struct coop_context *ctx,
			       struct coop_request *r);
/* Receiver: an RTS met receive r. */
COOP_HIDDEN void coop_rndv_matched(struct coop_request *r,
				   const struct coop_msgdesc *m);
/* Sender: an RTR (mpi/rtr.c) names receive rreq of the peer, cap bytes
 * at key: send s writes into it (or pipelines), no RTS. */
COOP_HIDDEN void coop_rndv_write_for_rtr(struct coop_request *s,
					 uint32_t rreq, uint64_t cap,
					 const struct coop_rkey *key);

/* select.c: COOP-load's rule - the receiver's share of n bytes that
 * levels the sender's load ls and the receiver's lr (0..n) - and COOP's
 * split x of n bytes clamped to [n/8, n - n/8], page aligned, so that
 * each side keeps a range worth a copier of its own. */
#define COOP_SPLIT_PARTS 8
COOP_HIDDEN uint64_t coop_select_level_share(uint64_t ls, uint64_t lr,
					     uint64_t n);
COOP_HIDDEN uint64_t coop_select_clamp_split(uint64_t x, uint64_t n);

/* select.c: COOP-hybrid, the receiver's choice for a PROTO_AUTO RTS;
 * *split: COOP's receiver range [0, split), set when it returns COOP */
COOP_HIDDEN enum coop_proto coop_select(struct coop_request *r,
					const struct coop_msgdesc *m,
					uint64_t *split);

/* stripe.c */
COOP_HIDDEN void coop_stripe_register(struct coop_context *ctx);
/* May this receiver choose STRIPE for len bytes? (an engine, len >=
 * COOP_STRIPE_MIN, ratio not 0, the engine not busy) */
COOP_HIDDEN int coop_stripe_usable(const struct coop_context *ctx,
				   uint64_t len);
/* coopmpi_xfer.h's COOP_XFER_STRIPE: copy job r (REQ_XFER, r->buf,
 * r->xfer bytes) into region key from its byte roff on, split between
 * the CPU (a JOB_WRITE job) and the engine (coop_dma_open() said 1) as
 * a striped send's; r completes (EV_LOCAL, status.count = bytes moved)
 * when both parts ended.  r->proto becomes PROTO_STRIPE. */
COOP_HIDDEN void coop_stripe_put(struct coop_request *r,
				 const struct coop_rkey *key, uint64_t roff);

/* dma.c */
COOP_HIDDEN void coop_dma_register(struct coop_context *ctx);
/* At init: set the provider's offload engine up if the settings may use
 * it; a verbose note when they ask for it and there is none. */
COOP_HIDDEN void coop_dma_init(struct coop_context *ctx);
COOP_HIDDEN void coop_dma_fini(struct coop_context *ctx);
/* May this rank's sends use PROTO_DMA? */
COOP_HIDDEN int coop_dma_usable(const struct coop_context *ctx);
/* Set the provider's offload engine up if it is not yet (for
 * coopmpi_xfer.h's jobs, whatever the settings let the protocols use):
 * 1 it is (*name, if name is not NULL: "hw", "soft"), 0 there is none. */
COOP_HIDDEN int coop_dma_open(struct coop_context *ctx, const char **name);
/* coopmpi_xfer.h's COOP_XFER_ENGINE: copy job r (REQ_XFER, r->buf,
 * r->xfer bytes) by the engine alone, into region key from its byte roff
 * on, no notification (coop_dma_open() said 1).  ops->done runs when
 * every piece completed (j->done bytes, j->err), at once for 0 bytes.
 * r->proto becomes PROTO_DMA. */
COOP_HIDDEN void coop_dma_put(struct coop_request *r,
			      const struct coop_rkey *key, uint64_t roff,
			      const struct coop_job_ops *ops);
/* Striped send (or copy job) s: give the engine [off, s->xfer) of
 * s->buf, into region key at roff + off (its engine job); at its end the
 * job's done callback (ops) runs. */
COOP_HIDDEN void coop_dma_stripe_part(struct coop_request *s,
				      const struct coop_rkey *key,
				      uint64_t roff, uint64_t off,
				      const struct coop_job_ops *ops);
/* ... and stop giving it pieces after an error: 1 if none is in flight
 * (the part ended, without its callback), else 0. */
COOP_HIDDEN int coop_dma_stripe_stop(struct coop_request *s, int err);
/* Time one engine copy of len bytes from src into our region dst (other
 * completions meanwhile go their usual way): ns; 0 when the engine did
 * not take it or failed; UINT64_MAX when it did not complete in time
 * (src and dst must then stay allocated). */
COOP_HIDDEN uint64_t coop_dma_time_put(struct coop_context *ctx,
				       const void *src, size_t len,
				       const struct coop_rkey *dst);

/* staged.c: PRECOPY and POSTCOPY ([Marathe]) */
COOP_HIDDEN void coop_staged_register(struct coop_context *ctx);
/* At init: the staging file, when the settings may use it. */
COOP_HIDDEN int coop_staged_init(struct coop_context *ctx);
COOP_HIDDEN void coop_staged_fini(struct coop_context *ctx);
/* Finalizing: wait until the ranks still there have read what we
 * pre-copied for them (it lives in our outbox, which goes with us). */
COOP_HIDDEN void coop_staged_drain(struct coop_context *ctx);
/* Sender: stage r for its receiver and complete it (0), or -1 when it
 * must go another way (no room, synchronous, no staging), or the
 * COOP_ERR_* of a failed RTS. */
COOP_HIDDEN int coop_staged_send(struct coop_context *ctx,
				 struct coop_request *r,
				 enum coop_proto proto);

/* The notes area of rank's staging file (ours for ourselves; mapped if
 * need be), NULL without one. */
COOP_HIDDEN unsigned char *coop_staged_notes(struct coop_context *ctx,
					     int rank);

/* The protocol layer's observer of the application's calls, profile.c:
 * [Marathe]'s profile-guided selection (COOP_RNDV=profile).  When the
 * settings profile, init sets ctx->proto's profile fields (before
 * coop_staged_init, which reads stage_notes_bytes) and registers with
 * the core as its observer; fini undoes both. */
COOP_HIDDEN int coop_proto_observer_init(struct coop_context *ctx);
COOP_HIDDEN void coop_proto_observer_fini(struct coop_context *ctx);

#endif
