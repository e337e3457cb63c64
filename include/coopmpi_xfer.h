/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * coopmpi_xfer.h - libcoopmpi's lower layer, for an MPI implementation
 * that keeps its own matching and rendezvous packets (as Open MPI's smsc
 * framework serves its ob1/sm): memory regions, single copies and
 * cooperative copy jobs between the ranks of a connected context, and
 * the load counters that say who should copy.  Whatever the provider
 * (the coopmpi driver or the user-space fallback), the calls are the same.
 *
 * The caller's own control messages carry what these calls produce: the
 * key of a registered region (coop_rkey_t, 16 bytes), a work slot number
 * (uint32_t).  A typical rendezvous:
 *
 *   sender:   coop_mem_reg(sbuf, READ) -> skey; its RTS(skey, len)
 *   receiver: coop_mem_reg(rbuf, WRITE) -> rkey; coop_xfer_split() -> x;
 *             coop_xfer_slot_alloc(len, x) -> slot; its CTS(rkey, slot);
 *             coop_xfer_start(GET, skey, slot): reads [0, x), then helps
 *   sender:   on the CTS, coop_xfer_start(PUT, rkey, slot): writes
 *             [x, len), then helps
 *   both:     the requests complete (coop_wait/coop_test) when all len
 *             bytes are copied, by either side: neither waits for the
 *             other's FIN, nor for its progress.  The sender then tells
 *             the receiver it is done with the slot (its FIN), and the
 *             receiver calls coop_xfer_slot_release().
 *
 * A copy moves at most COOP_CHUNK bytes per progress step, so control
 * messages keep flowing; requests progress in every completion call and
 * coop_progress() of the context.  A PUT may instead be given to the
 * provider's offload engine (COOP_XFER_ENGINE: the coopmpi driver's DMA
 * channel, no CPU copies) or split between this side's CPU and the
 * engine (COOP_XFER_STRIPE); coop_xfer_engine() says whether there is
 * one.  A peer that dies fails the requests
 * that copy with it (COOP_ERR_PEER_DEAD) unless all their bytes are in,
 * and frees the work slots shared with it.
 *
 * Thread safety: as the context's other calls (COOP_THREAD_SERIALIZED).
 */
#ifndef COOPMPI_XFER_H
#define COOPMPI_XFER_H

#include "coopmpi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The key of a registered region, as peers use it. */
typedef struct coop_mem_key {
	uint64_t cookie;	/* provider's handle (driver cookie / address) */
	uint64_t length;	/* bytes from the region's start */
} coop_rkey_t;

/* What peers may do with a region (coop_mem_reg). */
#define COOP_ACCESS_READ	(1u << 0)	/* copy from it */
#define COOP_ACCESS_WRITE	(1u << 1)	/* copy into it */

/*
 * coop_mem_reg - register len bytes at addr so that the peers of ctx can
 * copy from (READ) and/or into (WRITE) them; *key is what they need.
 * With the driver the pages are pinned while peers copy, not before.
 * Returns COOP_SUCCESS, COOP_ERR_ARG (NULL, len 0, unknown access bits,
 * neither bit), COOP_ERR_STATE (not connected), COOP_ERR_COPY (addr not
 * mapped), COOP_ERR_NOMEM, COOP_ERR_PROVIDER.
 */
COOP_API int coop_mem_reg(coop_context_t *ctx, void *addr, size_t len,
			  unsigned access, coop_rkey_t *key);

/* coop_mem_dereg - end a registration: copies that start later fail.
 * Returns COOP_SUCCESS, COOP_ERR_ARG, COOP_ERR_PROVIDER (unknown key). */
COOP_API int coop_mem_dereg(coop_context_t *ctx, const coop_rkey_t *key);

/* Direction of a copy job (exactly one). */
#define COOP_XFER_GET	(1u << 0)	/* the peer's region -> local */
#define COOP_XFER_PUT	(1u << 1)	/* local -> the peer's region */
/*
 * Who copies a PUT without a slot (at most one; neither: this side's
 * CPU, in COOP_CHUNK steps).  Both need an offload engine
 * (coop_xfer_engine()).  The request completes when every byte is in
 * the peer's region (the engine's completions, reaped by progress; no
 * notification to the peer: tell it yourself, e.g. by a message).
 * Engine bytes are no CPU load: they count in the node's offload
 * counters (driver: dma_ops, dma_bytes in flight, sysfs dma_completed)
 * and in coop_stats_t.offload_bytes, not in the load counters.
 * status.protocol of such a job says COOP_PROTOCOL_DMA or
 * COOP_PROTOCOL_STRIPE (plain jobs: COOP_PROTOCOL_NONE); copy jobs never
 * count in coop_stats_t's messages.
 */
#define COOP_XFER_ENGINE (1u << 2)	/* the engine moves every byte */
#define COOP_XFER_STRIPE (1u << 3)	/* this side's CPU copies [0, c),
					 * the engine [c, len) at the same
					 * time: COOP_RNDV=stripe's split
					 * (the engine's share R/(1+R),
					 * R = COOP_STRIPE_RATIO or measured
					 * at the first striped copy, then
					 * adapted; c page aligned; R = 0:
					 * the CPU copies everything) */

#define COOP_XFER_NO_SLOT	UINT32_MAX

typedef struct coop_xfer_params {
	uint32_t size;		/* sizeof(coop_xfer_params_t) */
	uint32_t flags;		/* COOP_XFER_GET or COOP_XFER_PUT, the
				 * latter optionally with COOP_XFER_ENGINE
				 * or COOP_XFER_STRIPE */
	int peer;		/* rank whose region key names */
	uint32_t slot;		/* cooperative: the work slot (GET: ours,
				 * from coop_xfer_slot_alloc; PUT: the
				 * peer's), else COOP_XFER_NO_SLOT */
	void *local;		/* local buffer */
	size_t len;		/* bytes */
	coop_rkey_t key;	/* the peer's region */
	uint64_t offset;	/* where the bytes are in it */
	uint64_t reserved[3];	/* must be zero */
} coop_xfer_params_t;

/*
 * coop_xfer_start - start a copy job between p->local and the peer's
 * region.  Without a slot this side copies everything; with one it
 * copies its range of the slot first (GET: [0, split), PUT: [split,
 * len)), then claims chunks of the other side's range that the other
 * side has not taken, so a side that falls behind is helped.  The
 * request completes when all len bytes are copied (by either side):
 * status.count = bytes this side copied (with COOP_XFER_ENGINE/STRIPE:
 * this side's CPU and its engine), status.error = COOP_SUCCESS,
 * COOP_ERR_COPY (bad address or key), COOP_ERR_PEER_DEAD (the engine
 * may also fail with COOP_ERR_PROVIDER or COOP_ERR_NOMEM).
 * Returns COOP_SUCCESS, COOP_ERR_ARG (NULL, bad size, flags - unknown
 * bits, not exactly one direction, ENGINE and STRIPE together, either
 * with a slot -, reserved not zero, offset + len beyond the key, a slot
 * that is not one of the peer's or ours shared with it, or of another
 * length), COOP_ERR_UNSUPPORTED (COOP_XFER_ENGINE or COOP_XFER_STRIPE
 * with GET, or without an offload engine: coop_xfer_engine() is 0),
 * COOP_ERR_RANK, COOP_ERR_STATE (not connected), COOP_ERR_PEER_DEAD,
 * COOP_ERR_NOMEM.
 */
COOP_API int coop_xfer_start(coop_context_t *ctx,
			     const coop_xfer_params_t *p,
			     coop_request_t **req);

/*
 * coop_xfer_copy - copy p->len bytes between p->local and the peer's
 * region now, in this call, by this side's CPU (as CMA's single copy
 * does): no request, no work slot, nothing left to progress.  The copy
 * counts in the totals, the copy history and the statistics as a copy
 * job, never as pending load (it ends before a peer could weigh it).  For messages too small to be worth a cooperative split or
 * a progress round; a long one holds the caller for its whole length.
 * Returns COOP_SUCCESS, COOP_ERR_ARG (as coop_xfer_start, and
 * COOP_XFER_ENGINE, COOP_XFER_STRIPE or a slot), COOP_ERR_RANK,
 * COOP_ERR_STATE, COOP_ERR_PEER_DEAD, COOP_ERR_COPY (bad address or key;
 * some bytes may have been copied).
 */
COOP_API int coop_xfer_copy(coop_context_t *ctx, const coop_xfer_params_t *p);

/*
 * coop_xfer_engine - may this context's PUT jobs use COOP_XFER_ENGINE
 * and COOP_XFER_STRIPE?  The first call sets the provider's offload
 * engine up, whatever COOP_RNDV says: the coopmpi driver's DMA channel
 * ("hw") or its kernel threads copying on the node's own CPUs ("soft",
 * module parameter dma=auto without a channel, or dma=soft); the shm
 * provider and the driver loaded with dma=off have none.
 * Returns 1 (*name, unless name is NULL: "hw" or "soft") or 0 (none,
 * or ctx NULL).
 */
COOP_API int coop_xfer_engine(coop_context_t *ctx, const char **name);

/*
 * coop_xfer_addr_keys - may a peer's memory be named without the peer
 * registering it?  1: any address range of a connected peer is a key as
 * it is, { .cookie = address, .length = bytes }, for coop_xfer_copy and
 * coop_xfer_start (the shm provider, whose copies go by address with the
 * permission of process_vm_readv, which every peer of the domain has
 * anyway).  0: only the keys of the peer's coop_mem_reg (the coopmpi
 * driver, which copies between registered regions), or ctx NULL.
 */
COOP_API int coop_xfer_addr_keys(const coop_context_t *ctx);

/*
 * coop_xfer_slot_alloc - a work slot in our shared segment for a
 * cooperative copy of len bytes with peer: we (the reader, GET) take
 * [0, split), the peer (PUT) [split, len).  It holds two references:
 * our copy job's (dropped when our request completes; call
 * coop_xfer_slot_release instead if no job is started on it) and the
 * peer's (coop_xfer_slot_release when its message says it is done).
 * Returns COOP_SUCCESS, COOP_ERR_ARG (NULL, split > len, len 0),
 * COOP_ERR_RANK, COOP_ERR_STATE, COOP_ERR_NOMEM (all slots busy: copy
 * single-sided instead).
 */
COOP_API int coop_xfer_slot_alloc(coop_context_t *ctx, int peer, size_t len,
				  size_t split, uint32_t *slot);

/* coop_xfer_slot_release - drop one reference of our slot shared with
 * peer.  Returns COOP_SUCCESS, COOP_ERR_ARG (not such a slot). */
COOP_API int coop_xfer_slot_release(coop_context_t *ctx, int peer,
				    uint32_t slot);

/*
 * coop_xfer_split - COOP-load: the share x of len bytes that this rank
 * (the reader) should copy so that both ranks' loads - pending copy bytes
 * from the counters plus recently copied bytes - end level: own + x =
 * peer's + len - x, within [len/8, len - len/8] and rounded to a page, so
 * that each side has a range to start with (then both take what the
 * other has not).  x = len when the peer copies for transfers of its own
 * (both ranks receiving at once), or did within COOP_LOAD_BUSY_MS, and
 * when the connected ranks outnumber the CPUs they run on: the peer has
 * no CPU to lend, so this rank should copy alone, without a work slot.
 * Never blocks.
 * Returns COOP_SUCCESS, COOP_ERR_ARG, COOP_ERR_RANK, COOP_ERR_STATE.
 */
COOP_API int coop_xfer_split(coop_context_t *ctx, int peer, size_t len,
			     size_t *share);

/*
 * coop_xfer_busy - does rank (this one or a peer) copy for transfers of
 * its own - its reads, its single-sided writes, not the help it gives -
 * or is it in an exchange (within COOP_LOAD_BUSY_MS of starting such a
 * copy while the peer it copied with did too): *busy 1 or 0.  The test
 * coop_xfer_split makes of the writer; a writer asked to help (its PUT on
 * the reader's slot) while it is busy may decline, and the reader copies
 * all of it.
 * Never blocks.
 * Returns COOP_SUCCESS, COOP_ERR_ARG (busy NULL), COOP_ERR_RANK,
 * COOP_ERR_STATE.
 */
COOP_API int coop_xfer_busy(coop_context_t *ctx, int rank, int *busy);

/*
 * Control messages through the context's mailbox rings: up to
 * COOP_MSG_MAX bytes, in order per pair of ranks, delivered to the
 * receiver's handler during its progress (any completion call or
 * coop_progress()) - the caller's own RTS, CTS, FIN or help requests.
 * A message that finds the peer's ring full waits in a backlog and is
 * sent by a later progress step (the order is kept).
 */
#define COOP_MSG_MAX 48

/* Called once per message: src is the sender's rank; msg is valid only
 * during the call.  It may send messages and start copy jobs. */
typedef void (*coop_msg_cb_t)(void *arg, int src, const void *msg,
			      size_t len);

/* coop_msg_set_handler - the handler of this context's messages (NULL:
 * none; messages are then dropped, each with a line on stderr).
 * Returns COOP_SUCCESS, COOP_ERR_ARG (ctx NULL). */
COOP_API int coop_msg_set_handler(coop_context_t *ctx, coop_msg_cb_t cb,
				  void *arg);

/* coop_msg_send - send len bytes to peer (this rank too).  Returns
 * COOP_SUCCESS, COOP_ERR_ARG (NULL with len, len > COOP_MSG_MAX),
 * COOP_ERR_RANK, COOP_ERR_STATE (not connected), COOP_ERR_PEER_DEAD,
 * COOP_ERR_NOMEM. */
COOP_API int coop_msg_send(coop_context_t *ctx, int peer, const void *msg,
			   size_t len);
/*
 * coop_msg_queued - how many of our messages to peer wait in the backlog
 * for ring space (a transport with back-pressure sends no more until it
 * is 0).  Returns the count, or -COOP_ERR_* (as coop_msg_send;
 * -COOP_ERR_PEER_DEAD once the peer is known to be gone).
 */
COOP_API int coop_msg_queued(coop_context_t *ctx, int peer);

/*
 * Messages with a payload: a header of up to COOP_MSG_DATA_HDR_MAX bytes
 * travels in the mailbox packet, up to coop_msg_data_max() bytes in one
 * of the sender's shared bounce slots, which the sender fills in place
 * (no copy of its own) and the receiver's handler reads in place.  In
 * order with the plain messages.  The slot is free again when the
 * receiver's handler returned, or when the receiver died.
 *
 *   coop_msg_buf_get(ctx, peer, &b);    write up to b.max bytes at b.data
 *   coop_msg_buf_send(ctx, peer, &b, hdr, hlen, len);
 *   receiver: data_cb(arg, src, hdr, hlen, data, len)
 */
#define COOP_MSG_DATA_HDR_MAX 40
typedef struct coop_msg_buf {
	void *data;		/* where the payload goes */
	size_t max;		/* its room: coop_msg_data_max() */
	uint32_t slot;		/* which bounce slot */
	uint32_t reserved;	/* zero */
} coop_msg_buf_t;
/* The largest payload of one message (the bounce slot size, set by
 * COOP_EAGER_MAX), 0 when ctx is not connected. */
COOP_API size_t coop_msg_data_max(coop_context_t *ctx);
/* coop_msg_buf_get - a bounce slot for a message to peer.  Returns
 * COOP_SUCCESS, COOP_ERR_ARG, COOP_ERR_RANK, COOP_ERR_STATE,
 * COOP_ERR_PEER_DEAD, COOP_ERR_NOMEM (all slots in flight: progress lets
 * receivers free them; retry then). */
COOP_API int coop_msg_buf_get(coop_context_t *ctx, int peer,
			      coop_msg_buf_t *buf);
/* coop_msg_buf_send - send the first len bytes of buf (taken for peer)
 * with hlen header bytes; buf is the receiver's afterwards.  Returns
 * COOP_SUCCESS; on COOP_ERR_ARG (not a slot got for peer, len > max,
 * hlen > COOP_MSG_DATA_HDR_MAX), COOP_ERR_RANK, COOP_ERR_STATE,
 * COOP_ERR_PEER_DEAD or COOP_ERR_NOMEM buf stays the caller's. */
COOP_API int coop_msg_buf_send(coop_context_t *ctx, int peer,
			       coop_msg_buf_t *buf, const void *hdr,
			       size_t hlen, size_t len);
/* coop_msg_buf_put - give back a slot that will not be sent.  Returns
 * COOP_SUCCESS, COOP_ERR_ARG (not ours), COOP_ERR_STATE. */
COOP_API int coop_msg_buf_put(coop_context_t *ctx, coop_msg_buf_t *buf);
/* Called once per message with a payload; hdr and data are valid only
 * during the call (data is in the sender's memory: copy what is kept). */
typedef void (*coop_msg_data_cb_t)(void *arg, int src, const void *hdr,
				   size_t hlen, const void *data, size_t len);
/* coop_msg_set_data_handler - the handler of messages with a payload
 * (NULL: dropped with a line on stderr).  Returns COOP_SUCCESS,
 * COOP_ERR_ARG. */
COOP_API int coop_msg_set_data_handler(coop_context_t *ctx,
				       coop_msg_data_cb_t cb, void *arg);

/*
 * Waiting in an event loop: coop_event_fd() gives a file descriptor that
 * polls readable (POLLIN) when a message comes for this context after
 * coop_event_arm() returned COOP_SUCCESS; the next progress step disarms
 * it.  The driver's endpoint file is it; the shm provider makes an
 * abstract unix socket on first use (so peers in another network
 * namespace cannot ring it: their messages still arrive, the fd does not
 * fire - poll with a timeout there).
 *
 *   if (coop_event_arm(ctx) == COOP_SUCCESS) poll(fd) ... ;
 *   coop_progress(ctx);
 */
/* coop_event_fd - the descriptor (owned by ctx: do not close).  Returns
 * COOP_SUCCESS, COOP_ERR_UNSUPPORTED (this provider has none),
 * COOP_ERR_ARG, COOP_ERR_STATE, COOP_ERR_PROVIDER (no socket could be made). */
COOP_API int coop_event_fd(coop_context_t *ctx, int *fd);
/* coop_event_arm - ask for the fd to fire on the next message.  Returns
 * COOP_SUCCESS (armed: sleeping on the fd is safe), COOP_ERR_STATE (do
 * not sleep: a message is there already, or copies, backlogged messages
 * or a peer's death need progress, or a progress thread runs - it takes
 * the messages, and the handlers run on it), COOP_ERR_UNSUPPORTED,
 * COOP_ERR_ARG. */
COOP_API int coop_event_arm(coop_context_t *ctx);

/*
 * Peers that went: the handler runs once per connected peer, from a
 * progress step, when the peer finalized (crashed = 0: it said goodbye)
 * or died (crashed = 1: noticed by the periodic liveness check, a failed
 * copy, or coop_peer_check).  Its messages sent before are delivered
 * first; its copy jobs have failed.
 */
typedef void (*coop_peer_cb_t)(void *arg, int peer, int crashed);
/* coop_msg_set_peer_handler - set it (NULL: none).  Returns COOP_SUCCESS,
 * COOP_ERR_ARG, COOP_ERR_NOMEM (the context's callback table is full). */
COOP_API int coop_msg_set_peer_handler(coop_context_t *ctx,
				       coop_peer_cb_t cb, void *arg);
/* coop_peer_check - ask the provider now whether peer lives.  Returns
 * COOP_SUCCESS (alive), COOP_ERR_PEER_DEAD (the handler will run at the
 * next progress step), COOP_ERR_ARG, COOP_ERR_RANK, COOP_ERR_STATE. */
COOP_API int coop_peer_check(coop_context_t *ctx, int peer);

#ifdef __cplusplus
}
#endif

#endif /* COOPMPI_XFER_H */
