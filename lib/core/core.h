/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * core.h - the core layer's interface: the objects every layer above
 * shares (context, request, copy job), the progress engine with its
 * packet-handler table, copy jobs, request completion, the shared
 * segment, pools, configuration and the load counters.
 *
 * The core never names a protocol or an MPI call: the layers above
 * register what it calls (as Open MPI's bml_register and UCX's
 * UCP_DEFINE_AM do) - packet handlers by type (coop_am_register), one
 * struct coop_proto_ops per protocol (coop_proto_register), a callback
 * per copy job (struct coop_job_ops), a completion callback per request,
 * the upcalls of struct coop_upcalls and an observer's struct
 * coop_observer_ops (profiling).  File map: README.md here.
 */
#ifndef COOP_CORE_H
#define COOP_CORE_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stddef.h>

#include "coopmpi.h"
#include "config.h"
#include "pool.h"
#include "provider.h"
#include "shmseg.h"
#include "wire.h"

#define COOP_HIDDEN __attribute__((visibility("hidden")))

struct coop_context;
struct coop_request;
struct coop_job;
struct coop_msgdesc;		/* protocols/proto.h */
struct coop_proto_state;	/* protocols/proto.h */
struct coop_mpi_state;		/* mpi/mpi.h */
struct coop_coll_state;		/* coll/coll.h */

/* Request kinds: MPI sends and receives, copy jobs of coopmpi_xfer.h,
 * neighborhood collectives (coll/) */
enum { REQ_SEND = 1, REQ_RECV = 2, REQ_XFER = 3, REQ_COLL = 4 };

/* Request flags of the library's own, beside the user's COOP_SEND_* and
 * COOP_F_* in r->flags: the inner send of a buffered send; a message
 * that goes by rendezvous whatever COOP_EAGER_MAX says (a collective's,
 * where a bounce copy costs more than a handshake); a collective's
 * receive whose sender has no receive of its own in the call, so its
 * CPU would only wait (it may take a share of the copy); one whose
 * receiver copies when ranks share CPUs (its sender takes part in more
 * than twice as many of the call's transfers: protocols/select.c). */
#define REQ_F_BUFFERED_INNER	(1u << 31)
#define REQ_F_SINGLE_COPY	(1u << 30)
#define REQ_F_SENDER_IDLE	(1u << 29)
#define REQ_F_RECEIVER_COPIES	(1u << 28)

/* Events a request still waits for (req->pending). */
#define EV_LOCAL	0x01	/* our copy / fragment pushing not done */
#define EV_PEER		0x02	/* the peer's FIN (or CTS/RTR first) */
#define EV_ACK		0x04	/* synchronous send: match not confirmed */
#define EV_MATCH	0x08	/* receive: not matched yet */
#define EV_REVOKE	0x10	/* receive: RTR revoke handshake pending */

/* ---------------- copy jobs (job.c) ---------------- */

/* Copy job kinds */
enum { JOB_NONE, JOB_READ, JOB_WRITE, JOB_PUSH,
       JOB_OFFLOAD };	/* the engine copies: on the DMA lists, not jobs */

struct coop_job_ops {
	/* The job ran out of chunks or failed (j->err); it has left the
	 * job list.  Every job has one. */
	void (*done)(struct coop_job *j);
	/* JOB_PUSH only: move [off, off + n) of the message some other way
	 * than a copy (the bounce pipeline): 0 sent, -1 not now (retried),
	 * or a COOP error. */
	int (*push)(struct coop_job *j, uint64_t off, uint64_t n);
};

struct coop_job {
	struct dlist link;	/* ctx->jobs, or the offload engine's lists */
	struct coop_request *req;	/* whose data it moves */
	const struct coop_job_ops *ops;
	uint8_t kind;
	uint8_t queued;		/* on ctx->jobs */
	uint8_t side;		/* COOP: 0 receiver's range first, 1 sender's */
	uint8_t help_only;	/* COOP: our range is empty (assisted RGET or
				 * RPUT): we take chunks only when idle */
	uint8_t copying;	/* a thread copies a chunk of it, unlocked */
	uint8_t by_window;	/* its last chunk went through a window */
	uint8_t windowed;	/* a chunk did */
	uint8_t end_deferred;	/* its request ended meanwhile: completes
				 * when that copy is over */
	int peer;
	char *local;		/* local buffer base */
	struct coop_rkey key;	/* peer's region (READ/WRITE) */
	uint64_t roff;		/* where byte 0 is in that region */
	uint64_t len;		/* bytes to move in total */
	uint64_t chunk;
	uint64_t cursor;	/* private claim cursor */
	struct coop_work_slot *shared;	/* COOP: shared work slot, or NULL */
	uint64_t charge;	/* bytes still in our load slot's pending_bytes */
	int own_slot;		/* COOP receiver: index of that slot (ours) */
	uint64_t done;		/* bytes this side copied */
	int err;
	/* OFFLOAD: cursor = bytes given to the engine, done = completed */
	uint32_t pieces;	/* copies with the engine */
	uint8_t notified;	/* the last, notifying copy is given */
	struct coop_rkey nkey;	/* the receiver's notification area */
	uint64_t noff;		/* our notification's offset in it */
};

/* What a job moves: its request's buffer with a peer's region. */
struct coop_job_args {
	int kind;		/* JOB_READ, JOB_WRITE, JOB_PUSH */
	int peer;
	char *local;
	const struct coop_rkey *key;	/* NULL for JOB_PUSH */
	uint64_t roff;		/* where byte 0 is in that region */
	uint64_t len;
	struct coop_work_slot *shared;	/* COOP's work slot, or NULL */
	uint64_t chunk;		/* 0: COOP_CHUNK */
	const struct coop_job_ops *ops;
};

/* The chunk size of a cooperative copy of len bytes (COOP-chunked). */
COOP_HIDDEN uint64_t coop_job_shared_chunk(const struct coop_context *ctx,
					 uint64_t len);
/* Start r->job: queued, its share charged to our pending load (unless
 * r->precharged). */
COOP_HIDDEN void coop_job_start(struct coop_request *r,
				const struct coop_job_args *a);
/* A copy of a->len bytes (JOB_READ or JOB_WRITE, no work slot) by the
 * caller, now and whole, without a request or the job list: counted in
 * the load and the statistics as a job.  COOP_SUCCESS or the error of
 * the chunk that failed. */
COOP_HIDDEN int coop_job_copy_now(struct coop_context *ctx,
				  const struct coop_job_args *a);
/* One chunk of copy work: 1 if some job made progress.  Jobs that only
 * assist (help_only) take chunks when ctx->blocked and no job of ours
 * has work of its own. */
COOP_HIDDEN int coop_job_step(struct coop_context *ctx);
/* Take j off the job list without its done callback (r fails; if a
 * chunk is being copied, r completes when that copy is over). */
COOP_HIDDEN void coop_job_cancel(struct coop_job *j);
/* A cooperative job whose bytes are all copied ends normally (done
 * callback), even if the partner is gone: 1 if it did. */
COOP_HIDDEN int coop_job_try_finish(struct coop_job *j);

/* ---------------- requests (request.c) ---------------- */

/*
 * Per-protocol request state: only the protocol in r->proto touches its
 * member, which is zero when the request is activated.
 */
union coop_proto_req {
	struct {		/* COOP-p2p */
		uint64_t split;	/* the receiver's range is [0, split) */
		uint32_t peer_slot;	/* sender: the receiver's work slot */
		uint8_t holds_slot;	/* sender: FIN due for peer_slot */
	} coop;
	struct {		/* DMA receiver */
		uint32_t nslot;	/* our notification slot */
		uint8_t armed;
	} dma;
	struct {		/* STRIPE sender */
		struct coop_job engine;	/* the offload engine's part */
		uint64_t ns[3];	/* start, CPU part's end, engine part's end
				 * (R adaptation) */
	} stripe;
};

/* The MPI layer's part of a request (mpi/): receiver-initiated matching
 * and cancel. */
struct coop_req_match {
	struct dlist link;	/* on a queue of the layer: the posted
				 * receives, the RTR mode's waiting sends */
	uint32_t seq;		/* RTR ticket */
	uint8_t ticketed;
	uint8_t rtr_out;	/* receive advertised itself with an RTR */
	uint8_t cancel_wanted;
	uint8_t wildcard;	/* receive counted in a suspension counter */
};

/* The protocol layer's part (protocols/): the rendezvous. */
struct coop_req_rndv {
	uint8_t proto;		/* enum coop_proto */
	uint8_t rts_sent;	/* send: an RTS went out */
	uint8_t precharged;	/* the receiver put our share of the copy in
				 * our pending load already (COOP-load) */
	uint32_t rid;		/* the peer's request id */
	uint64_t xfer;		/* bytes moved by the rendezvous */
	union coop_proto_req u;
};

/* The message a request carries, as the call that made it gave it. */
struct coop_req_msg {
	unsigned flags;		/* user flags (mode, COOP_F_BLOCKING) */
	int peer;		/* dest / source (may be COOP_ANY_SOURCE) */
	int tag;
	uint16_t comm;
	void *buf;
	size_t len;		/* send length / receive capacity */
};

/* A request's owner when it is not the user's alone: a buffered send
 * (its block), a collective's schedule. */
struct coop_req_owner {
	/* called at completion instead of the user's handling: the owner
	 * takes the request over */
	void (*complete_cb)(struct coop_request *r);
	/* called when the request is freed: the owner's state goes too */
	void (*free_cb)(struct coop_request *r);
	void *data;
};

/* The request's buffer registered with the provider (coop_req_reg). */
struct coop_req_region {
	struct coop_rkey key;
	uint8_t valid;
	uint8_t cached;		/* the registration cache's (regcache.c) */
};

/*
 * A request: core's base (pool object, context, life cycle, status,
 * owner, region, copy job) and a part per layer above that keeps state
 * in it, each written only by its layer (scripts/field-check.sh).  The
 * profile's records of requests are in protocols/profile.c's table.
 */
struct coop_request {
	struct coop_pool_obj pobj;	/* must be first */
	struct coop_context *ctx;
	struct dlist alink;	/* ctx->inflight */
	uint8_t kind;
	uint8_t persistent;
	uint8_t active;
	uint8_t complete;
	uint8_t user_freed;
	unsigned pending;	/* EV_* */
	coop_status_t status;	/* .error: the first error */
	struct coop_req_owner owner;
	struct coop_req_region region;
	struct coop_job job;
	struct coop_req_msg msg;	/* api/, at post */
	struct coop_req_match match;	/* mpi/ */
	struct coop_req_rndv rndv;	/* protocols/ */
};

COOP_HIDDEN struct coop_request *coop_req_new(struct coop_context *ctx,
					      int kind);
/* A new request for a message: buffer, length, peer, tag, context id. */
COOP_HIDDEN struct coop_request *coop_req_new_msg(struct coop_context *ctx,
						  int kind, const void *buf,
						  size_t len, int peer, int tag,
						  uint16_t comm);
COOP_HIDDEN void coop_req_free(struct coop_request *r);
COOP_HIDDEN uint32_t coop_req_id(const struct coop_request *r);
COOP_HIDDEN struct coop_request *coop_req_lookup(struct coop_context *ctx,
						 uint32_t id);
/* coop_req_lookup() of a request whose partner is peer (the source a
 * receive matched, or the one it was posted for): packets name requests
 * by id, and a peer must not reach the requests of another */
COOP_HIDDEN struct coop_request *coop_req_lookup_peer(struct coop_context *ctx,
						      uint32_t id, int peer);
/* Clear events; complete the request when none is left. */
COOP_HIDDEN void coop_req_event(struct coop_request *r, unsigned ev);
COOP_HIDDEN void coop_req_set_error(struct coop_request *r, int err);
/* Fail a pending request: unlink it from every queue and complete it. */
COOP_HIDDEN void coop_req_fail(struct coop_request *r, int err);
COOP_HIDDEN void coop_req_activate(struct coop_request *r);
/* r leaves the higher layer's queue it is on, if any (upcalls.unlink). */
COOP_HIDDEN void coop_req_unlink(struct coop_request *r);
/* Register r's buffer with the provider (r->lkey) once: a COOP error. */
COOP_HIDDEN int coop_req_reg(struct coop_request *r, unsigned access);
/* The context of the first request of reqs[0..count), active or not, or
 * NULL (none, or a bad array). */
COOP_HIDDEN struct coop_context *coop_req_array_ctx(int count,
						    struct coop_request **reqs);
/* The chunk copy of r's job is over: r completes if it ended meanwhile. */
COOP_HIDDEN void coop_req_copy_over(struct coop_request *r);

/* ---------------- registrations and windows ---------------- */

/* Registrations kept for the next message on the same buffer
 * (regcache.c): *cached says whether coop_reg_put keeps it. */
struct coop_reg;
struct coop_regcache {
	struct coop_reg *regs;
	unsigned n;		/* COOP_REG_CACHE, 0 when not cacheable */
	uint64_t clock;
};

COOP_HIDDEN int coop_regcache_init(struct coop_context *ctx);
COOP_HIDDEN void coop_regcache_fini(struct coop_context *ctx);
/* Register addr (or take the kept registration of it): 0 or -errno. */
COOP_HIDDEN int coop_reg_get(struct coop_context *ctx, void *addr,
			     size_t len, unsigned access,
			     struct coop_rkey *key, uint8_t *cached);
COOP_HIDDEN void coop_reg_put(struct coop_context *ctx,
			      const struct coop_rkey *key, uint8_t cached);

/* Peers' regions kept mapped (window.c). */
struct coop_window;
struct coop_windows {
	struct coop_window *w;
	unsigned n;		/* COOP_WINDOWS, 0 without windows */
	uint64_t clock;
};

COOP_HIDDEN int coop_windows_init(struct coop_context *ctx);
COOP_HIDDEN void coop_windows_fini(struct coop_context *ctx);
/* A window of peer's region key (writable for copies into it), held for
 * one copy until coop_window_put; NULL: copy with the provider. */
COOP_HIDDEN struct coop_window *coop_window_get(struct coop_context *ctx,
						int peer,
						const struct coop_rkey *key,
						int writable);
/* Copy n bytes at off of the region to or from local, unlocked: 1 when
 * they are what the owner had (else copy them again another way). */
COOP_HIDDEN int coop_window_copy(struct coop_window *w, uint64_t off,
				 void *local, uint64_t n, int to_peer);
COOP_HIDDEN void coop_window_put(struct coop_context *ctx,
				 struct coop_window *w);
COOP_HIDDEN void coop_windows_peer_gone(struct coop_context *ctx, int peer);
/* One copy of n bytes between local and [off, off + n) of peer's region,
 * as every copy goes: through the region's window when it has one, else
 * by the provider's copy(), uncounted; with unlock, the state lock is let
 * go around it (a window in use is never unmapped).  *rc (may be NULL):
 * the provider's result, n through a window. */
enum coop_copy_path { COPY_FAILED = -1, COPY_BY_PROVIDER, COPY_BY_WINDOW };
COOP_HIDDEN enum coop_copy_path coop_copy_chunk(struct coop_context *ctx,
						int peer,
						const struct coop_rkey *key,
						uint64_t off, void *local,
						uint64_t n,
						enum coop_copy_dir dir,
						int unlock, ssize_t *rc);

/* ---------------- protocols and upcalls ---------------- */

/* What the core asks of a protocol (one per enum coop_proto). */
struct coop_proto_ops {
	const char *name;
	/* Receiver: answer an RTS that met receive r (r->xfer set) with
	 * this protocol: 0 started, -1 not possible now (the caller falls
	 * back to another protocol), or a COOP error. */
	int (*matched)(struct coop_request *r, const struct coop_msgdesc *m,
		       uint64_t split);
	/* Sender: the CTS answering r with this protocol came in. */
	void (*on_cts)(struct coop_request *s, const struct coop_pkt_cts *p);
	/* r completes or fails: give back what the protocol holds. */
	void (*release)(struct coop_request *r);
	/* The enum coop_protocol status and statistics report; NULL: the
	 * protocol itself. */
	int (*reported)(const struct coop_request *r);
};

COOP_HIDDEN void coop_proto_register(struct coop_context *ctx,
				     enum coop_proto p,
				     const struct coop_proto_ops *ops);

typedef void (*coop_am_handler_t)(struct coop_context *ctx,
				  const union coop_pkt *pkt);
/* Packets of this type go to h (the last registration wins). */
COOP_HIDDEN void coop_am_register(struct coop_context *ctx, uint8_t type,
				  coop_am_handler_t h);

/*
 * More progress from a layer above while it has work (the offload
 * engine's completions and notifications, the collectives' schedules):
 * registered once, then switched on and off.  While on, every progress
 * step calls progress (events handled), and blocked callers sleep at
 * most 1 ms at a time when silent (NULL: never) says it has work that
 * ends without a message to us.
 */
#define COOP_UP_MAX 4
typedef int (*coop_up_progress_cb)(struct coop_context *ctx);
typedef int (*coop_up_silent_cb)(const struct coop_context *ctx);
/* Its handle (>= 0, off), or -1: COOP_UP_MAX are registered. */
COOP_HIDDEN int coop_up_register(struct coop_context *ctx,
				 coop_up_progress_cb progress,
				 coop_up_silent_cb silent);
COOP_HIDDEN void coop_up_switch(struct coop_context *ctx, int handle, int on);

typedef void (*coop_peer_gone_cb)(struct coop_context *ctx, int peer);
#define COOP_PEER_GONE_MAX 4
/* cb runs when a peer died or finalized, before the requests that
 * depend on it fail (in registration order). */
COOP_HIDDEN void coop_on_peer_gone(struct coop_context *ctx,
				   coop_peer_gone_cb cb);
/* cb clears a layer's part of a request when it is (re)started
 * (coop_req_activate), in registration order. */
COOP_HIDDEN void coop_up_on_activate(struct coop_context *ctx,
				     void (*cb)(struct coop_request *r));

struct coop_up_source {
	coop_up_progress_cb progress;
	coop_up_silent_cb silent_work;
	int on;
};

/* Calls of the core into the layers above (NULL: none). */
/* The layers that keep state in a request: protocols, mpi (and room). */
#define COOP_ACTIVATE_MAX 4

struct coop_upcalls {
	/* r leaves the higher layer's queue it is on (r->match.link): it
	 * failed, or a FIN completed it before it matched.  NULL: no layer
	 * queues requests. */
	void (*unlink)(struct coop_request *r);
	/* r is (re)started: each layer that keeps state in the request
	 * clears its own part (coop_up_on_activate) */
	void (*activate[COOP_ACTIVATE_MAX])(struct coop_request *r);
	unsigned nactivate;
	struct coop_up_source src[COOP_UP_MAX];	/* coop_up_register */
	unsigned nsrc;		/* registered */
	unsigned non;		/* of those, on */
};

/*
 * An observer of the application's communication calls: profiling
 * (protocols/profile.c, COOP_RNDV=profile).  The layer that owns it
 * registers its ops at init; the layer that sees the calls (api/)
 * reports posts, completion calls, blocking and phases through the
 * coop_observe_* entry points below, which pass them on.  Without an
 * observer each is a pointer test.  Times are on the observer's clock.
 */
struct coop_observer_ops {
	/* The clock it times calls by, ns (never 0). */
	uint64_t (*clock)(const struct coop_context *ctx);
	/* r was started by a call that began at enter_ns: the observer sets
	 * r->prof_msg when it records r. */
	void (*posted)(struct coop_request *r, uint64_t enter_ns);
	/* A completion call for recorded r begins (maybe not the first). */
	void (*wait_began)(struct coop_request *r);
	/* A completion call returns recorded r, complete. */
	void (*completed)(struct coop_request *r);
	/* A caller spent ns blocked in a completion call's progress step. */
	void (*blocked)(struct coop_context *ctx, uint64_t ns);
	/* coop_pcontrol(): the calls from now on belong to phase (0:
	 * none); a COOP error code. */
	int (*phase)(struct coop_context *ctx, int phase);
};

/* ---------------- the context ---------------- */

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
	int misbehaved;		/* broke the protocol: not heard any more */
	int copy_ok;
	int connected;		/* its ring and segment are mapped */
	uint32_t instance;	/* dynamic: which endpoint of its rank */
};

struct coop_context {
	struct coop_config cfg;
	struct coop_provider prov;
	int rank, size;
	uint64_t key;
	uint64_t cfg_hash;
	int connected;
	int dynamic;		/* COOP_INIT_DYNAMIC: peers connect one by one */
	int live_fd;		/* dynamic: our lock as a member (guard.c) */
	uint32_t instance;	/* dynamic: of our short address */
	struct coop_seg seg;
	struct coop_peer *peers;
	uint16_t *bslot_peer;	/* bounce slot -> peer it was lent to */
	uint8_t *bslot_user;	/* 1: coop_msg_buf_get's, not sent yet */
	struct coop_pool reqs, pkts;
	struct dlist jobs;	/* active copy jobs, oldest first */
	struct dlist inflight;	/* active requests */
	unsigned nbacklogged;	/* peers with a backlog */
	struct coopmpi_load_slot *load;
	struct coop_request done_req;	/* static, always complete */
	uint64_t rx[PKT_TYPE_MAX];	/* packets received, by type */
	coop_stats_t stats;	/* coop_get_stats() */
	/* the provider's engine_regs / _kept at the last coop_reset_stats */
	uint64_t engine_regs_base, engine_regs_kept_base;
	struct coop_regcache regs;	/* regcache.c */
	struct coop_windows wins;	/* window.c */
	unsigned idle;
	int blocked;		/* callers inside a completion call's progress
				 * step (or the progress thread): assisting
				 * jobs may copy (job.c) */
	int undersubscribed;	/* no more ranks than CPUs they share */
	int nconnected;		/* peers connected, ourselves included */
	uint64_t node_cpus[COOP_SEG_CPU_WORDS];	/* theirs, together */
	unsigned empty_polls;
	uint64_t hist_deferred;	/* copied in calls, not yet in the copy
				 * history (load.c) */
	unsigned deaths;	/* peers marked dead, not yet handled */
	int event_armed;	/* the provider's event fd is armed */
	uint64_t last_check_ns;
	/* what the layers above registered */
	coop_am_handler_t am[PKT_TYPE_MAX];
	const struct coop_proto_ops *protos[PROTO_COUNT];
	coop_peer_gone_cb peer_gone[COOP_PEER_GONE_MAX];
	unsigned npeer_gone;
	struct coop_upcalls up;
	const struct coop_observer_ops *observer;	/* NULL: none */
	/* the application's handlers (api/msg.c): PKT_USER, PKT_USER_DATA,
	 * peers that went */
	void (*msg_cb)(void *arg, int src, const void *msg, size_t len);
	void *msg_arg;
	void (*data_cb)(void *arg, int src, const void *hdr, size_t hlen,
			const void *data, size_t len);
	void *data_arg;
	void (*peer_cb)(void *arg, int peer, int crashed);
	void *peer_arg;
	/* their state */
	struct coop_proto_state *proto;
	struct coop_mpi_state *mpi;
	struct coop_coll_state *coll;
	/* threads (lock.c, progress_thread.c) */
	int mt;			/* lock: COOP_THREAD_MULTIPLE or a thread */
	unsigned lock_depth;	/* how often the holder took the lock */
	pthread_mutex_t lock;	/* the state lock (recursive) */
	pthread_cond_t done_cv;	/* a request completed (cv_waiters) */
	unsigned cv_waiters;
	unsigned spins;		/* empty polls of blocked callers (progress_thread.c) */
	struct coop_async *async;	/* the progress thread, or NULL */
	int progress_want;	/* the mode asked for (COOP_PROGRESS) */
	unsigned progress_cpu;	/* COOP_PROGRESS_CPU */
};

/* ---------------- threads (lock.c) ---------------- */

/*
 * One state lock per context, recursive (the application's handlers may
 * call back in).  Every public call holds it for its whole duration; the
 * core drops it, when held once, around what takes long - a chunk copy
 * (job.c), a sleep or a yield (progress.c) - so copies of several threads
 * run in parallel and nothing waits behind one.  The rings need no lock
 * (MPMC enqueue; one consumer: whoever holds the lock).  Without
 * COOP_THREADS=multiple or a progress thread ctx->mt is 0 and these are a
 * branch each.  The lock order: ctx->lock before the provider's own locks
 * (the DMA channel's submission lock); never two contexts' locks.
 */
static inline void coop_lock(struct coop_context *ctx)
{
	if (ctx->mt) {
		pthread_mutex_lock(&ctx->lock);
		ctx->lock_depth++;
	}
}

static inline void coop_unlock(struct coop_context *ctx)
{
	if (ctx->mt) {
		ctx->lock_depth--;
		pthread_mutex_unlock(&ctx->lock);
	}
}

/* A public call's lock, for a context that may be NULL (a bad argument
 * the call itself reports). */
static inline void coop_enter(struct coop_context *ctx)
{
	if (ctx)
		coop_lock(ctx);
}

static inline void coop_leave(struct coop_context *ctx)
{
	if (ctx)
		coop_unlock(ctx);
}

/* The body of a public call: CALL (its _locked implementation) with the
 * lock of context CTX held. */
#define COOP_LOCKED(ctx, call)						\
	do {								\
		struct coop_context *locked_ctx_ = (ctx);		\
		int locked_rc_;						\
									\
		coop_enter(locked_ctx_);				\
		locked_rc_ = (call);					\
		coop_leave(locked_ctx_);				\
		return locked_rc_;					\
	} while (0)

/* The one request of every send done at once (ctx->done_req): complete,
 * never freed. */
static inline int coop_req_is_static(const struct coop_request *r)
{
	return r == &r->ctx->done_req;
}

/* Does r's size call for a rendezvous (beyond COOP_EAGER_MAX, or a
 * single-copy message)?  Messages that fit a packet go eagerly anyway. */
static inline int coop_req_rndv_sized(const struct coop_context *ctx,
				      const struct coop_request *r)
{
	return r->msg.len > ctx->cfg.eager_max ||
	       (r->msg.flags & REQ_F_SINGLE_COPY);
}

/* A spinning thread's pause (frees the core's pipeline for its twin). */
static inline void coop_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* Before a long operation: let the lock go if we hold it once (1). */
COOP_HIDDEN int coop_lock_drop(struct coop_context *ctx);
/* After it: take it back if coop_lock_drop() let it go. */
COOP_HIDDEN void coop_lock_retake(struct coop_context *ctx, int dropped);
/* Set the lock up (ctx->mt); 0 or COOP_ERR_NOMEM. */
COOP_HIDDEN int coop_lock_init(struct coop_context *ctx);
COOP_HIDDEN void coop_lock_fini(struct coop_context *ctx);
/* A request completed: wake the callers waiting for one (done_cv). */
static inline void coop_lock_completed(struct coop_context *ctx)
{
	if (ctx->cv_waiters)
		pthread_cond_broadcast(&ctx->done_cv);
}
/* A blocked caller while a progress thread works: wait (lock dropped)
 * until some request completes, at most timeout_us.  0 if it cannot
 * (the lock is held more than once). */
COOP_HIDDEN int coop_lock_wait_completion(struct coop_context *ctx,
					  unsigned timeout_us);

/* ---------------- the progress thread (progress_thread.c) ---------------- */

/* Run a progress thread of mode (enum coop_progress_mode; MANUAL stops
 * it), bound to cpu (COOP_CPU_NONE: unbound).  Call without the lock. */
COOP_HIDDEN int coop_async_set(struct coop_context *ctx, int mode,
			       unsigned cpu);
/* The mode running now. */
COOP_HIDDEN int coop_async_mode(const struct coop_context *ctx);
/* Work for the thread came from another thread (a copy job started by a
 * call that matched a message which was there already): wake it if it
 * sleeps on the doorbell, or it would sleep through the copy. */
COOP_HIDDEN void coop_async_kick(struct coop_context *ctx);
/* Register the wake-up packet (core init). */
COOP_HIDDEN void coop_async_init(struct coop_context *ctx);

static inline const struct coop_proto_ops *
coop_proto_ops(const struct coop_context *ctx, unsigned p)
{
	return p < PROTO_COUNT ? ctx->protos[p] : NULL;
}

/* ---------------- the observer ---------------- */

/* One observer at a time: the last registration wins. */
static inline void coop_observer_register(struct coop_context *ctx,
					  const struct coop_observer_ops *ops)
{
	ctx->observer = ops;
}

static inline void coop_observer_unregister(struct coop_context *ctx)
{
	ctx->observer = NULL;
}

/* A call that posts a request begins: the observer's clock, 0 without
 * an observer (then the post goes unreported). */
static inline uint64_t coop_observe_post_begin(const struct coop_context *ctx)
{
	return ctx->observer ? ctx->observer->clock(ctx) : 0;
}

/* ... it started r (enter: what coop_observe_post_begin gave, not 0). */
static inline void coop_observe_posted(struct coop_request *r, uint64_t enter)
{
	r->ctx->observer->posted(r, enter);
}

/* A completion call for r begins. */
static inline void coop_observe_wait_began(struct coop_request *r)
{
	if (r->ctx->observer)
		r->ctx->observer->wait_began(r);
}

/* A completion call returns r, complete. */
static inline void coop_observe_completed(struct coop_request *r)
{
	if (r->ctx->observer)
		r->ctx->observer->completed(r);
}

/* A completion call's progress step begins: the wall clock, 0 without
 * an observer; and it ended (t0: what that gave). */
static inline uint64_t coop_observe_block_begin(const struct coop_context *ctx)
{
	return ctx->observer ? coop_now_ns() : 0;
}

static inline void coop_observe_block_end(struct coop_context *ctx,
					  uint64_t t0)
{
	if (t0)
		ctx->observer->blocked(ctx, coop_now_ns() - t0);
}

/* coop_pcontrol(ctx, phase); without an observer a no-op, as in MPI. */
static inline int coop_observe_phase(struct coop_context *ctx, int phase)
{
	return ctx->observer ? ctx->observer->phase(ctx, phase) :
			       COOP_SUCCESS;
}

/* ---------------- progress (progress.c) ---------------- */

/* Send pkt to peer: now, or after the peer's backlog (FIFO kept).
 * COOP_SUCCESS or COOP_ERR_*. */
COOP_HIDDEN int coop_send_pkt(struct coop_context *ctx, int peer,
			      union coop_pkt *pkt);
/* Send the span of n (2..PKT_SPAN_MAX) messages pkts now, or not at all
 * (a span is never backlogged): COOP_SUCCESS, -EAGAIN (the ring is full,
 * or a backlog waits: the caller takes another way), or COOP_ERR_*. */
COOP_HIDDEN int coop_send_span(struct coop_context *ctx, int peer,
			       union coop_pkt *pkts, unsigned n);
COOP_HIDDEN int coop_progress_once(struct coop_context *ctx);
/* Called in a blocked loop when progress found nothing to do. */
COOP_HIDDEN void coop_idle(struct coop_context *ctx);
/* How long a sleeper may sleep now, at most cap_us: until the next peer
 * check is due (a death rings no doorbell); 0 while a death waits. */
COOP_HIDDEN unsigned coop_sleep_bound_us(struct coop_context *ctx,
					 unsigned cap_us);
COOP_HIDDEN void coop_peer_failed(struct coop_context *ctx, int peer);
/*
 * What peer sent (a packet, its segment) breaks the protocol: logged with
 * what, and the peer is failed like a dead one - its requests end with
 * COOP_ERR_PEER_DEAD, the other peers are served as before.
 */
COOP_HIDDEN void coop_peer_misbehaved(struct coop_context *ctx, int peer,
				      const char *what);
/* The peer is gone for good now: what depends on it fails at once. */
COOP_HIDDEN void coop_peer_gone_now(struct coop_context *ctx, int peer);
COOP_HIDDEN void coop_check_peers(struct coop_context *ctx);
COOP_HIDDEN void coop_hdr_init(struct coop_context *ctx,
			       struct coop_pkt_hdr *h, uint8_t type,
			       uint16_t comm, int tag);
/* Is there work that progresses without a message to us (copies,
 * backlog, the engine), or a death to handle?  Then nobody should sleep
 * on the event fd. */
COOP_HIDDEN int coop_work_pending(const struct coop_context *ctx);
/* Until all backlogged packets went out (or their peers died). */
COOP_HIDDEN void coop_flush_backlog(struct coop_context *ctx);

/* Packets waiting for a peer's full mailbox above which a blocking call
 * that sent to it waits for them to go, so a rank that only sends cannot
 * fill its memory. */
#define COOP_BACKLOG_MANY 1024

/* Should a blocking call that sent to peer wait for its backlog? */
static inline int coop_backlog_full(const struct coop_context *ctx, int peer)
{
	return ctx->peers[peer].nbacklog > COOP_BACKLOG_MANY;
}

/* ---------------- context (context.c) ---------------- */

/* The core's part of coop_init: configuration, pools, the provider, peers
 * and our segment; the packets the core handles itself.  dynamic: the
 * provider chooses ctx->rank and ctx->size (a free endpoint of the node
 * domain, the domain's size), peers connect one by one. */
COOP_HIDDEN int coop_core_init(struct coop_context *ctx, int dynamic);
/* ... of coop_connect: connect and map rank r from its provider blob. */
COOP_HIDDEN int coop_core_connect_peer(struct coop_context *ctx, int r,
				       const void *blob, size_t len);
/* Dynamic: rank's endpoint was taken over: fail what depends on the old
 * one, unmap it; coop_core_connect_peer() may follow. */
COOP_HIDDEN void coop_core_disconnect_peer(struct coop_context *ctx, int r);
/* ... after all peers are connected. */
COOP_HIDDEN void coop_core_connected(struct coop_context *ctx);
/* Finalize: send what is backlogged, then PKT_BYE to every live peer. */
COOP_HIDDEN void coop_core_say_bye(struct coop_context *ctx);
/* After the layers above released what they hold of the provider. */
COOP_HIDDEN void coop_core_fini(struct coop_context *ctx);

/* ---------------- load counters (load.c) ---------------- */

/* A rank's load: pending copy bytes + decayed copy history. */
COOP_HIDDEN uint64_t coop_load_score(struct coop_context *ctx, int rank,
				     uint64_t now);
/* This rank copied n bytes at time now (its history). */
COOP_HIDDEN void coop_load_history_add(struct coop_context *ctx, uint64_t n,
				       uint64_t now);
/* The same for n bytes copied in a call: added with a later update. */
COOP_HIDDEN void coop_load_history_defer(struct coop_context *ctx,
					 uint64_t n);
/* One of our copies for our own transfers, with peer's region, starts
 * or ends; whether rank copies for itself now or is in an exchange
 * (started one within COOP_LOAD_BUSY_MS while its source did too). */
COOP_HIDDEN void coop_load_own_copy_start(struct coop_context *ctx, int peer);
COOP_HIDDEN void coop_load_own_copy_end(struct coop_context *ctx, int peer);
COOP_HIDDEN int coop_load_peer_copying(const struct coop_context *ctx,
				       int rank, uint64_t now);
/* Add bytes (may be negative) to rank's pending copy load. */
COOP_HIDDEN void coop_load_precharge(struct coop_context *ctx, int rank,
				     int64_t bytes);
/* Are the node's offload engines busy (COOP_OFFLOAD_BUSY)? */
COOP_HIDDEN int coop_load_offload_busy(const struct coop_context *ctx);

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
