/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mpi.h - the MPI-semantics layer's interface: matching (posted and
 * unexpected queues; receiver-initiated with RTR tickets, wildcard
 * suspension and revoke), starting sends and receives, buffered sends,
 * cancel.  It registers the handlers of arriving messages (EAGER,
 * EAGER_BB, RTS, RTR, REVOKE, REVOKE_REPLY) and the core's unlink
 * upcall.  File map: README.md here.
 */
#ifndef COOP_MPI_H
#define COOP_MPI_H

#include "proto.h"

struct coop_bsend {
	char *buf;
	size_t size;
	struct dlist blocks;	/* in address order, first fit */
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

/*
 * How sends meet receives, chosen once at init (coop_mpi_layer_init):
 * sender-initiated (an RTS, then the receiver's CTS) or, with
 * COOP_RNDV=rtr, receiver-initiated (rtr.c: tickets number the sends and
 * receives of each (comm, peer, tag); a long receive advertises its
 * buffer with an RTR, and its send writes at once).
 */
struct coop_matching {
	/* send r is about to go out: number it */
	void (*number_send)(struct coop_context *ctx, struct coop_request *r);
	/* send r went eagerly */
	void (*sent_eagerly)(struct coop_context *ctx, struct coop_request *r);
	/* send r's rendezvous: an RTR that came first, else an RTS */
	int (*send_rndv)(struct coop_context *ctx, struct coop_request *r);
	/* receive r joined the posted queue */
	void (*recv_posted)(struct coop_context *ctx, struct coop_request *r);
	/* message m was consumed by a receive */
	void (*consumed)(struct coop_context *ctx,
			 const struct coop_msgdesc *m);
};

/* The MPI layer's part of a context (ctx->mpi). */
struct coop_mpi_state {
	const struct coop_matching *matching;
	struct dlist prq;	/* posted receives, in posting order */
	struct dlist umq;	/* unexpected messages, in arrival order */
	unsigned nwild;		/* pending wildcard receives (RTR mode) */
	struct dlist rts_sends;	/* RTR mode: long sends awaiting CTS/RTR */
	struct coop_tickets tk;
	struct coop_bsend bs;
};

/* p2p.c: the layer's set-up, sends and receives */
COOP_HIDDEN int coop_mpi_layer_init(struct coop_context *ctx);
/* Finalize: wait for buffered sends, give back the peers' bounce slots
 * held by unexpected messages. */
COOP_HIDDEN void coop_mpi_finalize(struct coop_context *ctx);
COOP_HIDDEN void coop_mpi_layer_fini(struct coop_context *ctx);
/* Start send r: eager, buffered, or rendezvous.  COOP error. */
COOP_HIDDEN int coop_p2p_send_start(struct coop_context *ctx,
				    struct coop_request *r);
/* The rendezvous part: an RTR that came first (RTR mode), else an RTS. */
COOP_HIDDEN int coop_p2p_send_rndv(struct coop_context *ctx,
				   struct coop_request *r);
/*
 * A receive with no request: when the oldest message that matches
 * (src, tag, comm) already came inline (and asks for no ACK), copy up
 * to cap bytes of it into buf, its length to *len: 1.  0: none such
 * waits (post a receive).
 */
COOP_HIDDEN int coop_p2p_take_inline(struct coop_context *ctx, void *buf,
				     size_t cap, int src, int tag,
				     uint16_t comm, size_t *len);
/* Post receive r: the unexpected queue first, else the posted one. */
COOP_HIDDEN void coop_p2p_recv_post(struct coop_context *ctx,
				    struct coop_request *r);
/* Receive r meets message m. */
COOP_HIDDEN void coop_p2p_recv_deliver(struct coop_request *r,
				       const struct coop_msgdesc *m);

/* match.c */
COOP_HIDDEN struct coop_request *coop_match_posted(struct coop_context *ctx,
						   const struct coop_msgdesc *m);
COOP_HIDDEN struct coop_message *coop_match_unexpected(
	struct coop_context *ctx, int src, int tag, uint16_t comm);
COOP_HIDDEN int coop_match_add_unexpected(struct coop_context *ctx,
					  const struct coop_msgdesc *m);
/* A message (unexpected or arriving) was consumed by a receive. */
COOP_HIDDEN void coop_match_consumed(struct coop_context *ctx,
				     const struct coop_msgdesc *m);
/* Post receive r to the PRQ (receiver-initiated: ticket, advertise). */
COOP_HIDDEN void coop_match_post(struct coop_context *ctx,
				 struct coop_request *r);
COOP_HIDDEN void coop_match_unpost(struct coop_context *ctx,
				   struct coop_request *r);
/* The core's unlink upcall: a request leaves our queues. */
COOP_HIDDEN void coop_match_unlink(struct coop_request *r);

/* rtr.c: receiver-initiated matching (COOP_RNDV=rtr) */
COOP_HIDDEN extern const struct coop_matching coop_sender_initiated;
/* Set up the matching COOP_RNDV asks for; COOP error. */
COOP_HIDDEN int coop_rtr_init(struct coop_context *ctx);
COOP_HIDDEN void coop_rtr_fini(struct coop_context *ctx);
/* Wildcard receive r leaves the posted queue. */
COOP_HIDDEN void coop_rtr_unpost_wildcard(struct coop_context *ctx,
					  struct coop_request *r);
/* A suspension (or revoke) on comm ended: number and advertise. */
COOP_HIDDEN void coop_rtr_resume(struct coop_context *ctx, uint16_t comm);

/* tickets.c: the (comm, peer, tag) table of RTR mode */
COOP_HIDDEN int coop_tickets_init(struct coop_context *ctx);
COOP_HIDDEN void coop_tickets_fini(struct coop_context *ctx);
COOP_HIDDEN struct coop_triple *coop_triple_get(struct coop_context *ctx,
						uint16_t comm, int peer,
						int tag);
/* Lookup without creating. */
COOP_HIDDEN struct coop_triple *coop_triple_find(struct coop_context *ctx,
						 uint16_t comm, int peer,
						 int tag);

/* bsend.c */
COOP_HIDDEN int coop_bsend_start(struct coop_context *ctx,
				 struct coop_request *r);
COOP_HIDDEN void coop_bsend_fini(struct coop_context *ctx);

/* cancel.c */
COOP_HIDDEN void coop_cancel_register(struct coop_context *ctx);
/* Cancel ticketed receive r (RTR mode): at once, or by a revoke
 * handshake with its sender. */
COOP_HIDDEN int coop_cancel_ticketed(struct coop_context *ctx,
				     struct coop_request *r);

#endif
