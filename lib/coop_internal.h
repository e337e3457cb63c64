/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * coop_internal.h - the context, request and message objects shared by the
 * protocol engine's files:
 *   request.c   request pool, completion, failure
 *   match.c     posted / unexpected queues, RTR tickets and suspension
 *   xfer.c      copy jobs (single-sided and cooperative) + load counters
 *   proto_eager.c   inline and bounce-buffer eager
 *   proto_rndv.c    RTS/CTS/FIN: RGET, RPUT, COOP-p2p, bounce pipeline
 *   proto_rtr.c     receiver-initiated RTR, revoke (cancel)
 *   proto_dma.c     PROTO_DMA: RPUT by the provider's offload engine
 *   progress.c  packet dispatch, backlog, peer failure
 *   api*.c      public API and argument checks
 */
#ifndef COOP_INTERNAL_H
#define COOP_INTERNAL_H

#include <errno.h>
#include <stdint.h>
#include <stddef.h>

#include "coopmpi.h"
#include "config.h"
#include "pool.h"
#include "provider.h"
#include "shmseg.h"
#include "util.h"
#include "wire.h"

#define COOP_HIDDEN __attribute__((visibility("hidden")))

/* Request kinds */
enum { REQ_SEND = 1, REQ_RECV = 2 };

/* Events a request still waits for (req->pending). */
#define EV_LOCAL	0x01	/* our copy / fragment pushing not done */
#define EV_PEER		0x02	/* the peer's FIN (or CTS/RTR first) */
#define EV_ACK		0x04	/* synchronous send: match not confirmed */
#define EV_MATCH	0x08	/* receive: not matched yet */
#define EV_REVOKE	0x10	/* receive: RTR revoke handshake pending */
#define EV_FRAGS	0x20	/* receive: bounce fragments outstanding */

/* Copy job kinds */
enum { JOB_NONE, JOB_READ, JOB_WRITE, JOB_PUSH,
       JOB_OFFLOAD };	/* the engine copies: on ctx->dma's list, not jobs */

struct coop_job {
	uint8_t kind;
	uint8_t queued;		/* on ctx->jobs */
	int peer;
	char *local;		/* local buffer base */
	struct coop_rkey key;	/* peer's region (READ/WRITE) */
	uint64_t len;		/* bytes to move in total */
	uint64_t chunk;
	uint64_t cursor;	/* private claim cursor */
	struct coop_work_slot *shared;	/* COOP: shared work slot, or NULL */
	uint8_t side;		/* COOP: 0 receiver's range first, 1 sender's */
	uint8_t help_only;	/* COOP: our range is empty (assisted RGET or
				 * RPUT): we take chunks only when idle */
	uint64_t charge;	/* bytes still in our load slot's pending_bytes */
	int own_slot;		/* COOP receiver: index of that slot (ours) */
	uint64_t done;		/* bytes this side copied */
	uint64_t inflight_frags;
	int err;
	/* OFFLOAD: cursor = bytes given to the engine, done = completed */
	uint32_t pieces;	/* copies with the engine */
	uint8_t notified;	/* the last, notifying copy is given */
	struct coop_rkey nkey;	/* the receiver's notification area */
	uint64_t noff;		/* our notification's offset in it */
};

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
	uint8_t data[PKT_INLINE_MAX];
};

struct coop_request {
	struct coop_pool_obj pobj;	/* must be first */
	struct coop_context *ctx;
	struct dlist link;	/* ctx->prq (receive) or ctx->rts_sends */
	struct dlist alink;	/* ctx->inflight */
	struct dlist jlink;	/* ctx->jobs, or proto_dma.c's offload jobs */
	uint8_t kind;
	uint8_t proto;
	uint8_t is_static;	/* the shared "already complete" request */
	uint8_t persistent;
	uint8_t active;
	uint8_t complete;
	uint8_t user_freed;
	uint8_t internal;	/* buffered send's inner request */
	uint8_t ticketed;
	uint8_t rtr_out;	/* receive advertised itself with an RTR */
	uint8_t rts_sent;	/* send: an RTS went out */
	uint8_t lkey_valid;
	uint8_t cancel_wanted;
	uint8_t wildcard;	/* receive counted in a suspension counter */
	uint8_t precharged;	/* the receiver put our share of the copy in
				 * our pending load already (COOP-load) */
	unsigned flags;		/* user flags (mode, COOP_F_BLOCKING) */
	unsigned pending;	/* EV_* */
	int peer;		/* dest / source (may be COOP_ANY_SOURCE) */
	int tag;
	uint16_t comm;
	void *buf;
	size_t len;		/* send length / receive capacity */
	uint32_t seq;		/* RTR ticket */
	uint32_t rid;		/* the peer's request id */
	int peer_slot;		/* COOP sender: the receiver's work slot, -1 */
	int nslot;		/* DMA receive: our notification slot, -1 */
	uint64_t xfer;		/* bytes moved by the rendezvous */
	uint64_t split;		/* COOP: the receiver's range is [0, split) */
	uint64_t frag_done;	/* receive: bounce bytes copied out */
	struct coop_rkey lkey;	/* our region (registered) */
	struct coop_job job;
	struct coop_job ejob;	/* STRIPE sender: the offload engine's part */
	struct dlist elink;	/* proto_dma.c's striped sends (ejob) */
	uint64_t stripe_ns[3];	/* STRIPE sender: start, CPU part's end,
				 * engine part's end (R adaptation) */
	coop_status_t status;
	void *bblock;		/* buffered send: block in attached buffer */
	int err;		/* first error */
};

struct coop_pkt_node {
	struct coop_pool_obj pobj;
	struct dlist link;
	union coop_pkt pkt;
};

struct coop_peer {
	struct coop_seg seg;	/* the peer's segment, mapped */
	struct dlist backlog;	/* packets waiting for ring space */
	unsigned nbacklog;
	int dead;
	int death_handled;
	int said_bye;		/* finalized cleanly (PKT_BYE) */
	int copy_ok;
};

/* RTR bookkeeping per (comm, peer, tag) and wildcard suspension counts. */
struct coop_triple {
	uint64_t key;
	uint32_t scount;	/* sends posted to peer */
	uint32_t rcount;	/* receives ticketed / messages consumed */
	uint32_t susp;		/* wildcard keys: pending wildcard receives */
	uint32_t revoking;	/* a revoke handshake is pending */
	struct dlist rtrq;	/* sender: queued RTRs (struct coop_message) */
};

struct coop_tickets {
	struct coop_triple **tab;
	uint32_t mask;
	uint32_t used;
};

struct coop_bsend {
	char *buf;
	size_t size;
	size_t used_off;	/* simple first-fit over a block list */
	struct dlist blocks;
	unsigned nblocks;
};

struct coop_context {
	struct coop_config cfg;
	struct coop_provider prov;
	int rank, size;
	uint64_t key;
	uint64_t cfg_hash;
	int connected;
	int rtr;		/* COOP_RNDV=rtr: tickets on */
	struct coop_seg seg;
	struct coop_peer *peers;
	uint16_t *bslot_peer;	/* bounce slot -> peer it was lent to */
	struct coop_pool reqs, msgs, pkts;
	struct dlist prq;	/* posted receives, in posting order */
	struct dlist umq;	/* unexpected messages, in arrival order */
	struct dlist rts_sends;	/* RTR mode: long sends awaiting CTS/RTR */
	struct dlist jobs;	/* active copy jobs, oldest first */
	struct dlist inflight;	/* active requests */
	unsigned nbacklogged;	/* peers with a backlog */
	unsigned nwild;		/* pending wildcard receives (RTR mode) */
	struct coop_tickets tk;
	struct coopmpi_load_slot *load;
	struct coop_bsend bs;
	struct coop_dma *dma;	/* PROTO_DMA state, NULL until needed */
	double stripe_ratio;	/* PROTO_STRIPE's R in use, < 0: not known */
	struct coop_request done_req;	/* static, always complete */
	uint64_t rx[PKT_TYPE_MAX];	/* packets received, by type */
	coop_stats_t stats;	/* coop_get_stats() */
	unsigned idle;
	int blocked;		/* inside a completion call's progress step:
				 * assisting jobs may copy (xfer.c) */
	int undersubscribed;	/* no more ranks than CPUs on the node */
	unsigned empty_polls;
	unsigned deaths;	/* peers marked dead, not yet handled */
	uint64_t last_check_ns;
};

/* request.c */
COOP_HIDDEN struct coop_request *coop_req_new(struct coop_context *ctx,
					      int kind);
COOP_HIDDEN void coop_req_free(struct coop_request *r);
COOP_HIDDEN uint32_t coop_req_id(const struct coop_request *r);
COOP_HIDDEN struct coop_request *coop_req_lookup(struct coop_context *ctx,
						 uint32_t id);
/* Clear events; complete the request when none is left. */
COOP_HIDDEN void coop_req_event(struct coop_request *r, unsigned ev);
COOP_HIDDEN void coop_req_set_error(struct coop_request *r, int err);
/* Fail a pending request: unlink it from every queue and complete it. */
COOP_HIDDEN void coop_req_fail(struct coop_request *r, int err);
COOP_HIDDEN void coop_req_activate(struct coop_request *r);

/* match.c */
COOP_HIDDEN int coop_match_init(struct coop_context *ctx);
COOP_HIDDEN void coop_match_fini(struct coop_context *ctx);
COOP_HIDDEN struct coop_request *coop_match_posted(struct coop_context *ctx,
						   const struct coop_msgdesc *m);
COOP_HIDDEN struct coop_message *coop_match_unexpected(
	struct coop_context *ctx, int src, int tag, uint16_t comm);
COOP_HIDDEN int coop_match_add_unexpected(struct coop_context *ctx,
					  const struct coop_msgdesc *m);
/* A message (unexpected or arriving) was consumed by receive r. */
COOP_HIDDEN void coop_match_consumed(struct coop_context *ctx,
				     struct coop_request *r,
				     const struct coop_msgdesc *m);
/* Post receive r to the PRQ (tickets it, returns 1 if an RTR is due). */
COOP_HIDDEN int coop_match_post(struct coop_context *ctx,
				struct coop_request *r);
COOP_HIDDEN void coop_match_unpost(struct coop_context *ctx,
				   struct coop_request *r);
COOP_HIDDEN int coop_match_envelope(int want_src, int want_tag,
				    uint16_t want_comm, int src, int tag,
				    uint16_t comm);
COOP_HIDDEN struct coop_triple *coop_triple_get(struct coop_context *ctx,
						uint16_t comm, int peer,
						int tag);
COOP_HIDDEN void coop_match_resume(struct coop_context *ctx, uint16_t comm);
COOP_HIDDEN int coop_match_suspended(struct coop_context *ctx, uint16_t comm,
				     int src, int tag);

/* xfer.c */
COOP_HIDDEN void coop_job_start(struct coop_request *r, int kind, int peer,
				char *local, const struct coop_rkey *key,
				uint64_t len, struct coop_work_slot *shared,
				uint64_t chunk);
/* One chunk of copy work: 1 if some job made progress.  Jobs that only
 * assist (help_only) take chunks when ctx->blocked and no job of ours
 * has work of its own. */
COOP_HIDDEN int coop_job_step(struct coop_context *ctx);
COOP_HIDDEN void coop_job_cancel(struct coop_request *r);
/* A cooperative job whose bytes are all copied ends normally, even if
 * the partner is gone: 1 if it did. */
COOP_HIDDEN int coop_job_try_finish(struct coop_request *r);

/* proto_eager.c */
COOP_HIDDEN int coop_eager_send(struct coop_context *ctx,
				struct coop_request *r);
COOP_HIDDEN int coop_eager_fits(const struct coop_context *ctx, size_t len,
				unsigned flags);
COOP_HIDDEN int coop_eager_inline_fast(struct coop_context *ctx,
				       const void *buf, size_t len, int dest,
				       int tag, uint16_t comm);
COOP_HIDDEN void coop_eager_deliver(struct coop_request *r,
				    const struct coop_msgdesc *m);
COOP_HIDDEN void coop_eager_discard(struct coop_context *ctx,
				    const struct coop_msgdesc *m);

/* proto_rndv.c */
COOP_HIDDEN int coop_rndv_send(struct coop_context *ctx,
			       struct coop_request *r);
COOP_HIDDEN void coop_rndv_matched(struct coop_request *r,
				   const struct coop_msgdesc *m);
COOP_HIDDEN void coop_rndv_on_cts(struct coop_context *ctx,
				  const struct coop_pkt_cts *p);
COOP_HIDDEN void coop_rndv_on_fin(struct coop_context *ctx,
				  const struct coop_pkt_fin *p);
COOP_HIDDEN void coop_rndv_on_frag(struct coop_context *ctx,
				   const struct coop_pkt_frag *p);
COOP_HIDDEN void coop_rndv_job_done(struct coop_request *r);
COOP_HIDDEN void coop_rndv_start_write(struct coop_request *r);
COOP_HIDDEN int coop_rndv_reg(struct coop_request *r, unsigned access);
COOP_HIDDEN int coop_send_fin(struct coop_context *ctx, int peer,
			      uint32_t rid, int err, uint64_t len, int tag,
			      uint64_t copied, uint8_t flags);
COOP_HIDDEN void coop_send_slot_fin(struct coop_context *ctx, int peer,
				    uint32_t slot);

/* proto_select.c: COOP-hybrid, the receiver's choice for a PROTO_AUTO RTS;
 * *split: COOP's receiver range [0, split), set when it returns COOP */
COOP_HIDDEN enum coop_proto coop_select(struct coop_request *r,
					const struct coop_msgdesc *m,
					uint64_t *split);
/* COOP-load's rule: the receiver's share of n bytes that levels the
 * sender's load ls and the receiver's lr (0..n). */
COOP_HIDDEN uint64_t coop_level_share(uint64_t ls, uint64_t lr, uint64_t n);
/* A rank's load: pending copy bytes + decayed copy history. */
COOP_HIDDEN uint64_t coop_load_score(struct coop_context *ctx, int rank,
				     uint64_t now);
/* This rank copied n bytes at time now (its history). */
COOP_HIDDEN void coop_load_history_add(struct coop_context *ctx, uint64_t n,
				       uint64_t now);
/* Add bytes (may be negative) to rank's pending copy load. */
COOP_HIDDEN void coop_precharge(struct coop_context *ctx, int rank,
				int64_t bytes);
/* proto_stripe.c: may this receiver choose STRIPE for len bytes? (an
 * engine, len >= COOP_STRIPE_MIN, ratio not 0, the engine not busy) */
COOP_HIDDEN int coop_stripe_usable(const struct coop_context *ctx,
				   uint64_t len);
/* Are the node's offload engines busy (COOP_OFFLOAD_BUSY)? */
COOP_HIDDEN int coop_offload_busy(const struct coop_context *ctx);
/* Sender: the CTS of a PROTO_STRIPE send came in: CPU + engine copy. */
COOP_HIDDEN void coop_stripe_start(struct coop_request *s,
				   const struct coop_pkt_cts *p);
/* Sender: the CPU part (s->job) of a striped send ended. */
COOP_HIDDEN void coop_stripe_cpu_done(struct coop_request *s);
/* Sender: the engine part (s->ejob) ended (proto_dma.c). */
COOP_HIDDEN void coop_stripe_engine_done(struct coop_request *s);

/* proto_dma.c */
/* At init: set the provider's offload engine up if the settings may use
 * it; a verbose note when they ask for it and there is none. */
COOP_HIDDEN void coop_dma_init(struct coop_context *ctx);
COOP_HIDDEN void coop_dma_fini(struct coop_context *ctx);
/* Has the engine work that ends without a message to us (copies in
 * flight or queued, notification slots armed)? */
COOP_HIDDEN int coop_dma_busy(const struct coop_context *ctx);
/* May this rank's sends use PROTO_DMA? */
COOP_HIDDEN int coop_dma_usable(const struct coop_context *ctx);
/* Receiver: arm a notification slot for r (r->nslot): 0, or -1 when
 * there is none (answer RPUT instead). */
COOP_HIDDEN int coop_dma_arm(struct coop_request *r);
COOP_HIDDEN uint64_t coop_dma_ncookie(const struct coop_context *ctx);
/* Sender: the CTS of a PROTO_DMA send came in: give the engine the copy. */
COOP_HIDDEN void coop_dma_start(struct coop_request *s,
				const struct coop_pkt_cts *p);
/* Engine completions, notifications, queued copies: events handled. */
COOP_HIDDEN int coop_dma_progress(struct coop_context *ctx);
/* r (PROTO_DMA, PROTO_STRIPE) completes or fails: drop its slot /
 * offload job. */
COOP_HIDDEN void coop_dma_release(struct coop_request *r);
/* Striped send s: give the engine [off, s->xfer) (s->ejob); it ends in
 * coop_stripe_engine_done(). */
COOP_HIDDEN void coop_dma_stripe_part(struct coop_request *s, uint64_t off);
/* ... and stop giving it pieces after an error: 1 if none is in flight
 * (the part ended, without coop_stripe_engine_done), else 0. */
COOP_HIDDEN int coop_dma_stripe_stop(struct coop_request *s, int err);
/* Time one engine copy of len bytes from src into our region dst (other
 * completions meanwhile go their usual way): ns; 0 when the engine did
 * not take it or failed; UINT64_MAX when it did not complete in time
 * (src and dst must then stay allocated). */
COOP_HIDDEN uint64_t coop_dma_time_put(struct coop_context *ctx,
				       const void *src, size_t len,
				       const struct coop_rkey *dst);

/* proto_rtr.c */
COOP_HIDDEN void coop_rtr_send(struct coop_context *ctx,
			       struct coop_request *r);
COOP_HIDDEN void coop_rtr_on_rtr(struct coop_context *ctx,
				 const struct coop_pkt_rtr *p);
COOP_HIDDEN struct coop_message *coop_rtr_take(struct coop_context *ctx,
					       struct coop_request *s);
COOP_HIDDEN uint32_t coop_rtr_send_seq(struct coop_context *ctx,
				       uint16_t comm, int dst, int tag,
				       int eager);
COOP_HIDDEN void coop_rtr_prune(struct coop_context *ctx, uint16_t comm,
				int dst, int tag, uint32_t upto);
COOP_HIDDEN int coop_rtr_cancel(struct coop_context *ctx,
				struct coop_request *r);
COOP_HIDDEN void coop_rtr_on_revoke(struct coop_context *ctx,
				    const struct coop_pkt_revoke *p);
COOP_HIDDEN void coop_rtr_on_revoke_reply(struct coop_context *ctx,
					  const struct coop_pkt_revoke *p);
COOP_HIDDEN void coop_rtr_peer_gone(struct coop_context *ctx, int peer);

/* progress.c */
COOP_HIDDEN int coop_send_pkt(struct coop_context *ctx, int peer,
			      union coop_pkt *pkt);
COOP_HIDDEN int coop_progress_once(struct coop_context *ctx);
/* Called in a blocked loop when progress found nothing to do. */
COOP_HIDDEN void coop_idle(struct coop_context *ctx);
COOP_HIDDEN void coop_peer_failed(struct coop_context *ctx, int peer);
COOP_HIDDEN void coop_check_peers(struct coop_context *ctx);
COOP_HIDDEN void coop_hdr_init(struct coop_context *ctx,
			       struct coop_pkt_hdr *h, uint8_t type,
			       uint16_t comm, int tag);

/* recv.c: a receive meets its message */
COOP_HIDDEN void coop_recv_deliver(struct coop_request *r,
				   const struct coop_msgdesc *m);
COOP_HIDDEN void coop_recv_post(struct coop_context *ctx,
				struct coop_request *r);
COOP_HIDDEN int coop_send_start(struct coop_context *ctx,
				struct coop_request *r);
COOP_HIDDEN void coop_recv_arrival(struct coop_context *ctx,
				   const struct coop_msgdesc *m);

COOP_HIDDEN int coop_send_rndv(struct coop_context *ctx,
			       struct coop_request *r);

/* bsend.c */
COOP_HIDDEN int coop_bsend_start(struct coop_context *ctx,
				 struct coop_request *r);
COOP_HIDDEN void coop_bsend_release(struct coop_context *ctx, void *block);
COOP_HIDDEN void coop_bsend_fini(struct coop_context *ctx);

/* api_wait.c */
COOP_HIDDEN int coop_wait_internal(struct coop_request *r);

/* Convert a negative errno from the provider into a COOP error. */
static inline int coop_err_from_errno(int e)
{
	switch (e) {
	case -ESRCH:
	case -EPIPE:
	case -ENXIO:
		return COOP_ERR_PEER_DEAD;
	case -EFAULT:
	case -ERANGE:
	case -EACCES:
		return COOP_ERR_COPY;
	case -ENOMEM:
		return COOP_ERR_NOMEM;
	default:
		return COOP_ERR_PROVIDER;
	}
}

#endif
