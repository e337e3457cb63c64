/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mpi.h - the MPI-semantics layer's interface: matching (posted and
 * unexpected queues, RTR tickets of receives, wildcard suspension),
 * starting sends and receives, buffered sends, cancel.  It registers the
 * handlers of arriving messages (EAGER, EAGER_BB, RTS) and the core's
 * unlink upcall.  File map: README.md here.
 */
#ifndef COOP_MPI_H
#define COOP_MPI_H

#include "proto.h"

struct coop_bsend {
	char *buf;
	size_t size;
	struct dlist blocks;	/* in address order, first fit */
};

/* The MPI layer's part of a context (ctx->mpi). */
struct coop_mpi_state {
	struct dlist prq;	/* posted receives, in posting order */
	struct dlist umq;	/* unexpected messages, in arrival order */
	unsigned nwild;		/* pending wildcard receives (RTR mode) */
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
/* Post receive r to the PRQ (tickets it, returns 1 if an RTR is due). */
COOP_HIDDEN int coop_match_post(struct coop_context *ctx,
				struct coop_request *r);
COOP_HIDDEN void coop_match_unpost(struct coop_context *ctx,
				   struct coop_request *r);
/* The core's unlink upcall: a request leaves our queues. */
COOP_HIDDEN void coop_match_unlink(struct coop_request *r);
COOP_HIDDEN void coop_match_resume(struct coop_context *ctx, uint16_t comm);

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
