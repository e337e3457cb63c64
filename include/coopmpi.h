/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * coopmpi.h - libcoopmpi: intra-node MPI point-to-point messaging with
 * cooperative rendezvous protocols.
 *
 * What it is
 *   A messaging layer an MPI implementation (or a standalone program) puts
 *   under its point-to-point calls.  It implements MPI matching semantics
 *   (context id, source, tag, COOP_ANY_SOURCE/COOP_ANY_TAG, non-overtaking
 *   order, unexpected messages, probe/mprobe, cancel, truncation), all MPI
 *   send modes, persistent requests, and chooses per message between
 *     - eager inline (envelope + data in one 64-byte control packet),
 *     - copy eager through a shared-memory bounce buffer,
 *     - rendezvous RGET, RPUT, RTR (receiver initiated) and COOP-p2p
 *       (sender and receiver both copy parts of the message).
 *   Bytes move through a "provider": the coopmpi kernel driver
 *   (/dev/coopmpi) when present, else a user-space fallback (shared-memory
 *   rings + process_vm_readv/writev, or bounce-buffer pipelining when
 *   cross-process copies are forbidden).
 *
 * Ranks and communicators
 *   Ranks are endpoint ranks 0..size-1 fixed at coop_init().  A
 *   communicator is represented by its 16-bit context id (0..COOP_COMM_MAX);
 *   an MPI implementation translates communicator ranks to endpoint ranks
 *   and back (status.source is an endpoint rank).
 *
 * Error handling
 *   Every function returns COOP_SUCCESS (0) or a positive COOP_ERR_* code;
 *   coop_strerror() names it.  Invalid arguments are reported, never
 *   crash.  When a peer process dies, every request that depends on it
 *   completes with COOP_ERR_PEER_DEAD (pending COOP_ANY_SOURCE receives
 *   too, so nobody hangs).
 *
 * Thread safety
 *   COOP_THREAD_MULTIPLE when the context is created with
 *   COOP_INIT_THREAD_MULTIPLE (or COOP_THREADS=multiple, or a progress
 *   thread runs): any thread may call into it at any time; a request is
 *   completed (wait/test/free) by one thread at a time.  Otherwise
 *   COOP_THREAD_SERIALIZED: several threads, never two at the same time
 *   (the caller serializes), and no locking cost.  Handlers registered
 *   with coopmpi_xfer.h run inside library calls and may call it again.
 *   Different contexts are independent.  coop_strerror() and
 *   coop_thread_level() are always safe.
 *
 * Progress
 *   By default a transfer advances only inside the two ranks' library
 *   calls.  COOP_PROGRESS=thread|thread-sleep (or coop_set_progress())
 *   runs a progress thread per context that copies while the
 *   application computes; see coop_set_progress().
 *
 * Settings
 *   coop_init() reads environment variables COOP_* (provider, eager and
 *   rendezvous thresholds, protocol choice, chunking, offload, spinning
 *   and sleeping).  Their one documentation is the library's own table:
 *   run `lib/coop_info` (or call coop_config_print()) for every name with
 *   its meaning, default, accepted values and the value in effect;
 *   COOP_VERBOSE=2 prints it at coop_init.  A bad value makes coop_init
 *   fail with COOP_ERR_CONFIG and one line on stderr.  Settings that all
 *   ranks must share are checked by coop_connect().  README "Settings"
 *   names the few that matter most.
 *
 * Growing
 *   coop_status_t and coop_stats_t keep reserved fields, zero today, for
 *   fields added later (the structures' sizes never change).  The lower
 *   layer (regions, single and cooperative copies, load counters) for an
 *   MPI implementation that keeps its own matching is coopmpi_xfer.h.
 */
#ifndef COOPMPI_H
#define COOPMPI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && !defined(COOP_NO_VISIBILITY)
#define COOP_API __attribute__((visibility("default")))
#else
#define COOP_API
#endif

/* ------------------------------------------------------------------ */
/* Constants                                                            */
/* ------------------------------------------------------------------ */

#define COOP_ANY_SOURCE		(-1)
#define COOP_ANY_TAG		(-1)
#define COOP_PROC_NULL		(-2)	/* send/recv to it complete at once */
#define COOP_TAG_UB		0x7fffffff	/* valid tags: 0..COOP_TAG_UB */
#define COOP_COMM_MAX		0xffff	/* valid context ids: 0..COOP_COMM_MAX */
#define COOP_ADDR_MAX_LEN	256	/* largest coop_address() blob */
#define COOP_BSEND_OVERHEAD	64	/* per-message bookkeeping, buffered sends */
#define COOP_INLINE_MAX		48	/* largest payload of an inline packet */

#define COOP_THREAD_SINGLE	0
#define COOP_THREAD_FUNNELED	1
#define COOP_THREAD_SERIALIZED	2
#define COOP_THREAD_MULTIPLE	3

/* Error codes (positive; COOP_SUCCESS is 0). */
enum coop_error {
	COOP_SUCCESS = 0,
	COOP_ERR_ARG,		/* invalid argument (NULL pointer, bad value) */
	COOP_ERR_RANK,		/* rank out of range */
	COOP_ERR_TAG,		/* tag out of range */
	COOP_ERR_COMM,		/* context id out of range */
	COOP_ERR_COUNT,		/* size invalid (e.g. NULL buffer, len > 0) */
	COOP_ERR_FLAGS,		/* unknown or conflicting flag bits */
	COOP_ERR_REQUEST,	/* invalid request handle or request state */
	COOP_ERR_TRUNCATE,	/* message longer than the receive buffer */
	COOP_ERR_PEER_DEAD,	/* the peer process exited or closed */
	COOP_ERR_NOMEM,		/* out of memory */
	COOP_ERR_BUFFER,	/* buffered send: attached buffer too small */
	COOP_ERR_IN_STATUS,	/* multiple completion: see statuses[i].error */
	COOP_ERR_STATE,		/* call not valid now (not connected, ...) */
	COOP_ERR_PROVIDER,	/* transport provider failure */
	COOP_ERR_BOOTSTRAP,	/* coop_init_from_env rendezvous failed */
	COOP_ERR_CONFIG,	/* ranks disagree on configuration, bad env */
	COOP_ERR_COPY,		/* data copy failed (bad buffer address) */
	COOP_ERR_UNSUPPORTED,	/* not supported by this build */
	COOP_ERR_INTERNAL,	/* internal error (bug) */
	COOP_ERR_LAST
};

/* Send mode (exactly one) and hint flags for coop_isend() and friends. */
#define COOP_SEND_STANDARD	0u
#define COOP_SEND_SYNC		(1u << 0)	/* completes after match */
#define COOP_SEND_READY		(1u << 1)	/* receive is known posted */
#define COOP_SEND_BUFFERED	(1u << 2)	/* copy to attached buffer */
/*
 * The caller will block on this request right away (MPI_Send/MPI_Recv as
 * opposed to MPI_Isend/MPI_Irecv).  An input of the protocol engine's
 * cooperative decision; it never changes semantics.  Valid for sends and
 * receives.
 */
#define COOP_F_BLOCKING		(1u << 8)

/* ------------------------------------------------------------------ */
/* Types                                                                */
/* ------------------------------------------------------------------ */

typedef struct coop_context coop_context_t;
/* A request handle; NULL is the null request. */
typedef struct coop_request coop_request_t;
/* A message matched by coop_mprobe(); NULL is the null message. */
typedef struct coop_message coop_message_t;

typedef struct coop_status {
	int source;		/* sender's endpoint rank */
	int tag;		/* message tag */
	size_t count;		/* bytes received (capped at the buffer) */
	int error;		/* COOP_SUCCESS or the request's error */
	int cancelled;		/* 1 if the request was cancelled */
	int protocol;		/* enum coop_protocol the message took (sends
				 * and receives; COOP_PROTOCOL_NONE before a
				 * protocol was chosen; coopmpi_xfer.h's copy
				 * jobs: DMA, STRIPE or NONE) */
	int reserved[5];	/* zero: room for later fields */
} coop_status_t;

/*
 * How a message moved (coop_status_t.protocol, coop_stats_t).  The
 * values are stable: MPI implementations may log or count them.
 */
enum coop_protocol {
	COOP_PROTOCOL_NONE = 0,	/* not decided yet / PROC_NULL / cancelled */
	COOP_PROTOCOL_RGET,	/* receiver copies everything */
	COOP_PROTOCOL_RPUT,	/* sender copies everything */
	COOP_PROTOCOL_COOP,	/* both copy: COOP-p2p (split by load) */
	COOP_PROTOCOL_BOUNCE,	/* no single copy: bounce-buffer pipeline */
	COOP_PROTOCOL_RTR,	/* receiver initiated, sender writes */
	COOP_PROTOCOL_DMA,	/* the offload engine copies everything */
	COOP_PROTOCOL_STRIPE,	/* sender's CPU and the offload engine */
	COOP_PROTOCOL_EAGER,	/* inline or bounce eager */
	COOP_PROTOCOL_PRECOPY,	/* sender copied into its own staging area
				 * and completed; receiver copied out */
	COOP_PROTOCOL_POSTCOPY,	/* sender copied into the receiver's
				 * staging area and completed; receiver
				 * copied out */
	COOP_PROTOCOL_COUNT
};

#define COOP_STATUS_IGNORE	((coop_status_t *)0)
#define COOP_STATUSES_IGNORE	((coop_status_t *)0)

typedef struct coop_init_params {
	uint32_t size;		/* sizeof(coop_init_params_t) */
	uint32_t flags;		/* 0 or COOP_INIT_DYNAMIC */
	int rank;		/* this process: 0..nranks-1 (dynamic: 0) */
	int nranks;		/* processes of the job on this node, >= 1
				 * (dynamic: 0) */
	uint64_t job_key;	/* unique per job: names shared objects */
} coop_init_params_t;

/*
 * coop_init_params_t.flags: a dynamic endpoint, for transports that
 * connect lazily (UCX): the process joins the node's domain job_key as
 * one of its endpoints; the domain gives it its rank (a free endpoint,
 * coop_rank()) and the rank space (coop_size(): 256 by default, the
 * driver's max_endpoints); it can message and copy with the peers it
 * connected with coop_connect_peer(), one at a time, whenever it learns
 * their address.  Calls naming a rank that is not connected return
 * COOP_ERR_STATE.  Endpoints of processes that died are reused.
 */
#define COOP_INIT_DYNAMIC	(1u << 0)
/* coop_init_params_t.flags: several threads may call into the context at
 * the same time (COOP_THREAD_MULTIPLE; see Thread safety above). */
#define COOP_INIT_THREAD_MULTIPLE	(1u << 1)

/* ------------------------------------------------------------------ */
/* Context and endpoints                                                */
/* ------------------------------------------------------------------ */

/*
 * coop_init - create a context: open the transport endpoint, create the
 * shared-memory segment (bounce buffers, cooperative work slots).
 * Connect it with coop_address() + (all-gather) + coop_connect().
 *   params: rank, nranks, job_key (all processes of the job pass the same
 *           key; it must not be reused by two running jobs).
 *   ctx:    out, the new context.
 * With COOP_INIT_DYNAMIC the context is connected to itself at once and
 * to other endpoints by coop_connect_peer().
 * Returns COOP_SUCCESS; COOP_ERR_ARG (NULL, bad size, unknown flags,
 * rank or nranks not 0 with COOP_INIT_DYNAMIC), COOP_ERR_RANK (rank
 * outside 0..nranks-1, nranks < 1 or > 65535), COOP_ERR_CONFIG (bad
 * environment value), COOP_ERR_PROVIDER (no endpoint: e.g. the domain is
 * full), COOP_ERR_NOMEM.
 * Thread safety: any thread; the new context is not shared yet.
 */
COOP_API int coop_init(const coop_init_params_t *params, coop_context_t **ctx);

/*
 * coop_address - this endpoint's opaque address blob, to be exchanged
 * with all other ranks (an MPI implementation uses its own all-gather).
 *   blob: out buffer of *len bytes (COOP_ADDR_MAX_LEN is always enough).
 *   len:  in: size of blob; out: bytes written.
 * Returns COOP_SUCCESS, COOP_ERR_ARG (NULL or buffer too small; *len then
 * holds the size needed), COOP_ERR_PROVIDER.
 */
COOP_API int coop_address(coop_context_t *ctx, void *blob, size_t *len);

/*
 * coop_connect - make all ranks reachable.
 *   blobs:  nranks blobs, blob of rank r at (char *)blobs + r * stride
 *           (rank r's own blob included).
 *   stride: distance between blobs, >= the largest blob length.
 * Also probes single-copy permission (process_vm_readv of a peer's known
 * address; on failure large messages are pipelined through bounce buffers
 * and one line on stderr says why), and checks that all ranks use the same
 * provider and protocol settings, and a library whose packets mean the
 * same (its wire version).
 * Returns COOP_SUCCESS, COOP_ERR_ARG, COOP_ERR_STATE (connected already),
 * COOP_ERR_CONFIG (settings or wire versions differ), COOP_ERR_PROVIDER
 * (peer unreachable).
 */
COOP_API int coop_connect(coop_context_t *ctx, const void *blobs, size_t stride);

/*
 * coop_connect_peer - connect a dynamic context (COOP_INIT_DYNAMIC) with
 * the endpoint whose coop_address() blob of len bytes this is; *rank is
 * its rank in the domain.  Connecting again is a no-op (same *rank).
 * Returns COOP_SUCCESS, COOP_ERR_ARG (NULL, blob too short or not an
 * address of this domain's size), COOP_ERR_STATE (not a dynamic
 * context), COOP_ERR_CONFIG (other provider, settings or wire version), and
 * COOP_ERR_PROVIDER (the endpoint is gone or of another domain).
 */
COOP_API int coop_connect_peer(coop_context_t *ctx, const void *blob,
			       size_t len, int *rank);

#define COOP_ADDR_SHORT_LEN 8

/*
 * coop_address_short - a dynamic context's address in COOP_ADDR_SHORT_LEN
 * bytes (its rank and an instance number), for transports whose address
 * must be small (UCX allows 63 bytes); coop_connect_peer() takes it as it
 * takes a full blob, reading the rest from the endpoint's shared segment
 * (COOP_ERR_PEER_DEAD when that endpoint is gone or was taken over).
 *   len: in: size of addr; out: bytes written.
 * Returns COOP_SUCCESS, COOP_ERR_ARG (NULL, *len too small),
 * COOP_ERR_STATE (not a dynamic context).
 */
COOP_API int coop_address_short(coop_context_t *ctx, void *addr, size_t *len);

/*
 * coop_reach_id - what a transport compares before it connects with an
 * endpoint whose address it got from elsewhere (e.g. from every rank of a
 * job across nodes): *node names the kernel, the /dev/shm holding the
 * domains' files and the PID namespace of this process - endpoints whose
 * values differ (other machines, containers with a /dev/shm or PID
 * namespace of their own) cannot connect; *wire is this library's wire
 * version, which connected libraries must share (coop_connect_peer
 * refuses another with COOP_ERR_CONFIG).
 * Returns COOP_SUCCESS, COOP_ERR_ARG (NULL).
 * Thread safety: any thread, no context needed.
 */
COOP_API int coop_reach_id(uint64_t *node, uint32_t *wire);

/*
 * coop_init_from_env - coop_init + address exchange + coop_connect for
 * processes started by scripts/cooprun: reads COOP_RANK, COOP_SIZE and
 * COOP_JOB, exchanges blobs through a shared-memory file
 * /dev/shm/coopmpi-<job>-boot, and returns a connected context.  Waits at
 * most COOP_BOOT_TIMEOUT_S seconds for the other ranks.
 * Returns COOP_SUCCESS, COOP_ERR_BOOTSTRAP (variables missing/invalid,
 * timeout), or any error of coop_init/coop_connect.
 */
COOP_API int coop_init_from_env(coop_context_t **ctx);

/*
 * coop_finalize - complete locally buffered work (pending control packets,
 * buffered sends), tell the peers we leave cleanly, close the endpoint and
 * free the context.  Requests still pending are abandoned (the application
 * must complete them first, as in MPI); a peer that dies meanwhile does
 * not block it.  ctx may be NULL (no-op).  With COOP_VERBOSE=1 one line
 * counts the control packets received, by type.
 * Returns COOP_SUCCESS.
 */
COOP_API int coop_finalize(coop_context_t *ctx);

/*
 * coop_cleanup_stale - remove the /dev/shm files of node domains whose
 * processes all died without finalizing (killed ranks, an aborted job):
 * a domain whose shared segments all have dead owners loses every file.
 * Files of live domains, and of other users, stay.  Needs no context
 * (lib/coop_info --reap is this call; scripts/coopmpi-run runs it after
 * the launcher).  Returns the number of files removed.
 */
COOP_API int coop_cleanup_stale(void);

/*
 * coop_alloc_mem / coop_free_mem - memory the peers of this process's
 * node domain copy from and into directly (what MPI_Alloc_mem and
 * MPI_Free_mem map to): a message to or from it is copied by the peer
 * with loads and stores through a mapping of it, kept from message to
 * message (a window), instead of a system call per chunk.  Without the
 * driver this is the only memory that gets windows (with it every
 * registered buffer can, see COOP_WINDOWS).  size < 64 KiB gets malloc's
 * memory (messages that small are not copied across).  Needs no context.
 * The memory is shared with a child made by fork() (as MAP_SHARED
 * memory is); exec() drops it.  Do not munmap() or mremap() it: free it
 * with coop_free_mem, which keeps a few freed blocks for reuse.
 * coop_alloc_mem returns COOP_SUCCESS, COOP_ERR_ARG (ptr NULL),
 * COOP_ERR_NOMEM; coop_free_mem (ptr from coop_alloc_mem, or NULL)
 * returns COOP_SUCCESS.
 * Thread safety: any thread.
 */
COOP_API int coop_alloc_mem(size_t size, void **ptr);
COOP_API int coop_free_mem(void *ptr);

/* coop_rank / coop_size: this process's rank / the number of ranks.
 * Return COOP_SUCCESS or COOP_ERR_ARG (NULL). */
COOP_API int coop_rank(const coop_context_t *ctx, int *rank);
COOP_API int coop_size(const coop_context_t *ctx, int *size);

/* coop_provider_name: "shm" or "kmod" (NULL if ctx is NULL). */
COOP_API const char *coop_provider_name(const coop_context_t *ctx);

/* coop_thread_level: the highest level supported, COOP_THREAD_MULTIPLE
 * (a context gives it when created with COOP_INIT_THREAD_MULTIPLE). */
COOP_API int coop_thread_level(void);

/* coop_query_thread: the level this context gives (COOP_THREAD_MULTIPLE
 * or COOP_THREAD_SERIALIZED) in *level.  COOP_SUCCESS or COOP_ERR_ARG. */
COOP_API int coop_query_thread(const coop_context_t *ctx, int *level);

/* Progress modes (coop_set_progress, COOP_PROGRESS) */
#define COOP_PROGRESS_MANUAL		0	/* the application's calls */
#define COOP_PROGRESS_THREAD		1	/* a thread polls */
#define COOP_PROGRESS_THREAD_SLEEP	2	/* ... asleep on the doorbell */

/*
 * coop_set_progress - who advances this context's transfers.
 *   COOP_PROGRESS_MANUAL: only the application's library calls (the
 *     lowest latency; a rank that computes moves nothing meanwhile).
 *   COOP_PROGRESS_THREAD: a progress thread that polls: rendezvous data
 *     moves while the application computes; wants a core of its own.
 *   COOP_PROGRESS_THREAD_SLEEP: a progress thread that sleeps on the
 *     mailbox doorbell while there is nothing to do and wakes when a
 *     message arrives: for nodes without a spare core.
 *   cpu: the CPU to bind the thread to, or -1 (not bound).
 * A progress thread makes the context COOP_THREAD_MULTIPLE.  Call it from
 * one thread, while no other uses the context for the first switch away
 * from MANUAL if the context was not created THREAD_MULTIPLE.  The
 * thread starts once the context is connected.  COOP_PROGRESS and
 * COOP_PROGRESS_CPU set the initial mode (not of a COOP_INIT_DYNAMIC
 * endpoint: its handlers come after coop_init, so only this call starts
 * its thread).
 * Returns COOP_SUCCESS, COOP_ERR_ARG (mode, cpu), COOP_ERR_NOMEM.
 */
COOP_API int coop_set_progress(coop_context_t *ctx, int mode, int cpu);
/* coop_get_progress: the mode set (COOP_PROGRESS_*) in *mode. */
COOP_API int coop_get_progress(const coop_context_t *ctx, int *mode);

/*
 * coop_pcontrol - the calls from now on belong to communication phase
 * `phase` (> 0; 0: to none), what MPI_Pcontrol(phase) maps to.  With
 * COOP_RNDV=profile ([Marathe]'s profile-guided selection) each rank
 * records its rendezvous messages of every phase iteration (sizes, when
 * its posts and completion calls began and ended), and from the next
 * iteration on sends to a peer by the protocol (RGET, RPUT, pre-copy,
 * post-copy) whose replay of the pair's last iteration ended soonest.
 * Call it at the start of each iteration of a phase (the same phase ids
 * on every rank; up to 8 phases are tracked at once, ids that share a
 * slot (id % 8) take it over).  Without COOP_RNDV=profile it does
 * nothing.  Returns COOP_SUCCESS, COOP_ERR_ARG (ctx NULL, phase < 0),
 * COOP_ERR_NOMEM.
 */
COOP_API int coop_pcontrol(coop_context_t *ctx, int phase);

/* coop_strerror: static description of an error code (never NULL). */
COOP_API const char *coop_strerror(int err);

/*
 * coop_config_print - write the settings table to out: for every COOP_*
 * environment variable its documentation, default and accepted values as
 * comment lines, then NAME=value with the value the current environment
 * gives it (lib/coop_info is this call).  Needs no context.
 * Returns COOP_SUCCESS, COOP_ERR_ARG (out NULL), COOP_ERR_CONFIG (the
 * environment holds a value coop_init, or coop_init_from_env, would
 * refuse; the table is printed all the same, with the default - or
 * nothing, where there is none - in its place).
 */
COOP_API int coop_config_print(FILE *out);

/* ------------------------------------------------------------------ */
/* Load counters                                                        */
/* ------------------------------------------------------------------ */

/*
 * The copy load of one rank, from the per-node counters every rank of
 * the job shares (the driver's counters page with kmod, a /dev/shm file
 * with shm).  Counts are bytes and copy operations; an operation is one
 * copy job of the library, or one copy call of the driver when the
 * driver copies (kmod), so total_ops is comparable within a provider
 * only.
 */
typedef struct coop_load {
	uint64_t pending_ops;	/* copies assigned to the rank, not done */
	uint64_t pending_bytes;	/* bytes of those still to copy */
	uint64_t kernel_ops;	/* copies the driver runs for it now (kmod) */
	uint64_t kernel_bytes;	/* their bytes (kmod; 0 with shm) */
	uint64_t total_ops;	/* copy operations completed (only grows) */
	uint64_t total_bytes;	/* bytes the rank copied (only grows) */
} coop_load_t;

/*
 * coop_get_load - read rank's load counters into *out, e.g. for an MPI
 * implementation choosing who copies, or for monitoring.  Each field is
 * read atomically; the fields are not one snapshot (other ranks update
 * them concurrently).  A rank that has died reads as zeros once its
 * counters are reset (kmod), or as it left them (shm).  Never blocks,
 * makes no progress.
 *   rank: 0..size-1 (this rank included).
 * Returns COOP_SUCCESS, COOP_ERR_ARG (ctx or out NULL), COOP_ERR_STATE
 * (not connected), COOP_ERR_RANK (rank out of range), COOP_ERR_PROVIDER
 * (counters not available).
 * Thread safety: as any call on ctx (it only reads shared memory).
 */
COOP_API int coop_get_load(coop_context_t *ctx, int rank, coop_load_t *out);

/*
 * The offload engines' load: work in flight on the domain's offload
 * engines, from the same shared counters ([Chakraborty18]'s shared HCA
 * counter; with kmod also in sysfs, /sys/kernel/coopmpi/domains/<id>/
 * offload).  The driver keeps dma_*, the HCA engine (COOP_ENGINE=hca)
 * hca_*; COOP_OFFLOAD_BUSY compares the engine in use's bytes with its
 * threshold.
 */
typedef struct coop_offload_load {
	uint64_t dma_ops;	/* DMA-channel copies in flight */
	uint64_t dma_bytes;
	uint64_t hca_ops;	/* HCA-loopback copies in flight */
	uint64_t hca_bytes;
} coop_offload_load_t;

/*
 * coop_get_offload_load - read the domain's offload counters into *out.
 * Each field is read atomically, not one snapshot.  Never blocks, makes
 * no progress.
 * Returns COOP_SUCCESS, COOP_ERR_ARG (ctx or out NULL), COOP_ERR_PROVIDER
 * (counters not available).
 * Thread safety: as any call on ctx.
 */
COOP_API int coop_get_offload_load(coop_context_t *ctx,
				   coop_offload_load_t *out);

/*
 * What this context did since coop_connect() or the last
 * coop_reset_stats(): messages by protocol, and the work of this rank's
 * CPU and of the offload engine on its behalf.  For benchmarks, tuning
 * and the MPI_T performance variables of an MPI implementation.
 */
typedef struct coop_stats {
	uint64_t sent[COOP_PROTOCOL_COUNT];	/* completed sends */
	uint64_t received[COOP_PROTOCOL_COUNT];	/* completed receives */
	uint64_t copy_jobs;	/* rendezvous in which this CPU copied */
	uint64_t copy_bytes;	/* bytes this CPU copied (rendezvous) */
	uint64_t copy_ns;	/* time this CPU spent in those copies
				 * (but coop_xfer_copy's, not timed) */
	uint64_t offload_bytes;	/* bytes given to the offload engine */
	uint64_t sleeps;	/* sleeps of blocked calls (COOP_SLEEP_US) */
	uint64_t backlog_peak;	/* most packets waiting at once for full
				 * mailboxes (all peers together) */
	uint64_t unexpected_peak;	/* most messages held at once for
					 * receives not posted yet (RTR mode:
					 * with the receivers' RTRs held for
					 * sends not started) */
	uint64_t window_bytes;	/* of copy_bytes, those copied through
				 * windows (peers' regions mapped) */
	uint64_t engine_regs;	/* buffers the offload engine registered
				 * (COOP_ENGINE=hca: pinned) */
	uint64_t engine_regs_kept;	/* registrations it kept and used
					 * again (COOP_HCA_MR_CACHE) */
	uint64_t reserved[3];	/* zero: room for later counters */
} coop_stats_t;

/*
 * coop_get_stats - copy the context's statistics into *out.
 * Returns COOP_SUCCESS or COOP_ERR_ARG (ctx or out NULL).
 * Thread safety: as any call on ctx.
 */
COOP_API int coop_get_stats(coop_context_t *ctx, coop_stats_t *out);
/* coop_reset_stats - zero the statistics.  COOP_SUCCESS, COOP_ERR_ARG. */
COOP_API int coop_reset_stats(coop_context_t *ctx);

/* ------------------------------------------------------------------ */
/* Point-to-point                                                       */
/* ------------------------------------------------------------------ */

/*
 * coop_isend - start a send of len bytes at buf to rank dest.
 *   dest:  0..size-1, or COOP_PROC_NULL (completes at once).
 *   tag:   0..COOP_TAG_UB.   comm: context id 0..COOP_COMM_MAX.
 *   flags: one send mode (COOP_SEND_STANDARD/SYNC/READY/BUFFERED), optional
 *          COOP_F_BLOCKING.
 *   req:   out, the request; complete it with coop_wait/test*.
 * The buffer must not be modified until the request completes (except in
 * buffered mode, where it is copied before return).
 * Returns COOP_SUCCESS, COOP_ERR_ARG, COOP_ERR_RANK, COOP_ERR_TAG,
 * COOP_ERR_COMM, COOP_ERR_COUNT (buf NULL with len > 0), COOP_ERR_FLAGS,
 * COOP_ERR_STATE (not connected), COOP_ERR_BUFFER (buffered mode, no room),
 * COOP_ERR_PEER_DEAD (dest is known dead), COOP_ERR_NOMEM.
 */
COOP_API int coop_isend(coop_context_t *ctx, const void *buf, size_t len,
			int dest, int tag, uint32_t comm, unsigned flags,
			coop_request_t **req);

/*
 * coop_irecv - post a receive of up to cap bytes into buf.
 *   source: 0..size-1, COOP_ANY_SOURCE, or COOP_PROC_NULL.
 *   tag:    0..COOP_TAG_UB or COOP_ANY_TAG.
 *   flags:  0 or COOP_F_BLOCKING.
 * A longer message fills buf and completes with COOP_ERR_TRUNCATE
 * (status.count = cap).  Errors as coop_isend.
 */
COOP_API int coop_irecv(coop_context_t *ctx, void *buf, size_t cap,
			int source, int tag, uint32_t comm, unsigned flags,
			coop_request_t **req);

/* coop_send / coop_recv - blocking forms (isend/irecv + wait with
 * COOP_F_BLOCKING added).  coop_recv returns the request's error
 * (e.g. COOP_ERR_TRUNCATE) and fills status (may be COOP_STATUS_IGNORE).
 * A small standard send completes once its packet is queued; while more
 * than 1024 packets of this rank wait for dest's full mailbox, coop_send
 * also waits (makes progress) until they went, so a rank that only sends
 * cannot fill its memory with them (the blocking collectives do the
 * same for the ranks they sent to; the nonblocking calls never wait). */
COOP_API int coop_send(coop_context_t *ctx, const void *buf, size_t len,
		       int dest, int tag, uint32_t comm, unsigned flags);
COOP_API int coop_recv(coop_context_t *ctx, void *buf, size_t cap, int source,
		       int tag, uint32_t comm, unsigned flags,
		       coop_status_t *status);

/*
 * Persistent requests: coop_send_init / coop_recv_init create an inactive
 * request with the same arguments and checks as coop_isend / coop_irecv;
 * coop_start / coop_startall activate it; a completion call makes it
 * inactive again (the handle stays valid); coop_request_free frees it.
 * coop_start returns COOP_ERR_REQUEST if the request is not an inactive
 * persistent request, COOP_ERR_BUFFER / COOP_ERR_PEER_DEAD as isend.
 */
COOP_API int coop_send_init(coop_context_t *ctx, const void *buf, size_t len,
			    int dest, int tag, uint32_t comm, unsigned flags,
			    coop_request_t **req);
COOP_API int coop_recv_init(coop_context_t *ctx, void *buf, size_t cap,
			    int source, int tag, uint32_t comm, unsigned flags,
			    coop_request_t **req);
COOP_API int coop_start(coop_request_t **req);
COOP_API int coop_startall(int count, coop_request_t **reqs);

/* ------------------------------------------------------------------ */
/* Completion                                                           */
/* ------------------------------------------------------------------ */

/*
 * coop_wait - block (busy polling, then yielding) until *req completes;
 * fill status; free a non-persistent request and set *req = NULL.  A NULL
 * or inactive request returns at once with an empty status (source
 * COOP_ANY_SOURCE, tag COOP_ANY_TAG, count 0).
 * Returns the request's error (COOP_SUCCESS, COOP_ERR_TRUNCATE,
 * COOP_ERR_PEER_DEAD, ...) or COOP_ERR_ARG (req NULL).
 */
COOP_API int coop_wait(coop_request_t **req, coop_status_t *status);

/*
 * coop_test - one progress step; *flag = 1 and as coop_wait if *req is
 * complete, else *flag = 0 and COOP_SUCCESS.
 */
COOP_API int coop_test(coop_request_t **req, int *flag, coop_status_t *status);

/*
 * Multiple completion, as MPI.  reqs[i] may be NULL (ignored).  statuses
 * is an array of count (or COOP_STATUSES_IGNORE).  If a completed request
 * has an error, the call returns COOP_ERR_IN_STATUS and each status'
 * error field tells (waitany/testany return the error itself).
 *   waitall/testall: all (testall: *flag = 1 only if all are complete, and
 *                    then completes them all).
 *   waitany/testany: one; *index = its position or -1 if all are NULL/
 *                    inactive (testany: *flag = 1 then too).
 *   waitsome/testsome: all that are complete now (waitsome blocks until at
 *                    least one); *outcount = -1 if all are NULL/inactive;
 *                    indices[] receives the positions.
 * Return COOP_ERR_ARG for count < 0 or NULL arrays when count > 0.
 * waitall progresses every context its requests belong to; waitany and
 * waitsome progress only the first active request's context (pass
 * requests of one context).
 */
COOP_API int coop_waitall(int count, coop_request_t **reqs,
			  coop_status_t *statuses);
COOP_API int coop_testall(int count, coop_request_t **reqs, int *flag,
			  coop_status_t *statuses);
COOP_API int coop_waitany(int count, coop_request_t **reqs, int *index,
			  coop_status_t *status);
COOP_API int coop_testany(int count, coop_request_t **reqs, int *index,
			  int *flag, coop_status_t *status);
COOP_API int coop_waitsome(int count, coop_request_t **reqs, int *outcount,
			   int *indices, coop_status_t *statuses);
COOP_API int coop_testsome(int count, coop_request_t **reqs, int *outcount,
			   int *indices, coop_status_t *statuses);

/*
 * coop_request_free - free a request handle and set *req = NULL.  An
 * active non-persistent request is freed when it completes (its buffer
 * must still not be touched until then).  An active persistent request:
 * COOP_ERR_REQUEST.
 */
COOP_API int coop_request_free(coop_request_t **req);

/*
 * coop_cancel - cancel a pending receive.  The request must still be
 * completed with a wait/test call; status.cancelled tells whether the
 * receive was cancelled (1) or had already matched a message (0).  A
 * receive that advertised its buffer to a sender (RTR protocol) is
 * cancelled through a handshake with that sender, so its completion needs
 * the sender's progress.  Cancelling a send (or a copy job of
 * coopmpi_xfer.h) is not supported: returns COOP_ERR_UNSUPPORTED (it
 * completes normally).
 * Returns COOP_SUCCESS, COOP_ERR_ARG, COOP_ERR_REQUEST (inactive).
 */
COOP_API int coop_cancel(coop_request_t *req);

/*
 * coop_progress - poll control messages and advance copies once.
 * Returns COOP_SUCCESS or COOP_ERR_ARG.  Never blocks.
 */
COOP_API int coop_progress(coop_context_t *ctx);

/* ------------------------------------------------------------------ */
/* Probe                                                                */
/* ------------------------------------------------------------------ */

/*
 * coop_iprobe - is a message matching (source, tag, comm) waiting to be
 * received?  *flag = 1 and status (source, tag, count = full message size)
 * if so.  coop_probe blocks until one is.  The message stays queued.
 * Errors as coop_irecv.
 */
COOP_API int coop_iprobe(coop_context_t *ctx, int source, int tag,
			 uint32_t comm, int *flag, coop_status_t *status);
COOP_API int coop_probe(coop_context_t *ctx, int source, int tag,
			uint32_t comm, coop_status_t *status);

/*
 * coop_improbe / coop_mprobe - like iprobe/probe, but also dequeue the
 * message: it can then only be received with coop_mrecv/coop_imrecv on
 * *msg.  *msg = NULL when improbe finds nothing.
 * coop_mrecv / coop_imrecv - receive a matched message into buf (up to cap
 * bytes); set *msg = NULL.  Errors as coop_irecv plus COOP_ERR_ARG for a
 * NULL message.
 */
COOP_API int coop_improbe(coop_context_t *ctx, int source, int tag,
			  uint32_t comm, int *flag, coop_message_t **msg,
			  coop_status_t *status);
COOP_API int coop_mprobe(coop_context_t *ctx, int source, int tag,
			 uint32_t comm, coop_message_t **msg,
			 coop_status_t *status);
COOP_API int coop_mrecv(coop_context_t *ctx, void *buf, size_t cap,
			coop_message_t **msg, coop_status_t *status);
COOP_API int coop_imrecv(coop_context_t *ctx, void *buf, size_t cap,
			 coop_message_t **msg, coop_request_t **req);

/* ------------------------------------------------------------------ */
/* Buffered sends                                                       */
/* ------------------------------------------------------------------ */

/*
 * coop_buffer_attach - give the library size bytes at buf for buffered
 * sends; each buffered message uses at most len + COOP_BSEND_OVERHEAD of
 * it.  One buffer per context.
 * Returns COOP_SUCCESS, COOP_ERR_ARG (NULL buf, size too small),
 * COOP_ERR_STATE (a buffer is attached already).
 * coop_buffer_detach - wait until all buffered messages are delivered,
 * then return the buffer (buf, size may be NULL).  COOP_ERR_STATE if none
 * is attached.
 */
COOP_API int coop_buffer_attach(coop_context_t *ctx, void *buf, size_t size);
COOP_API int coop_buffer_detach(coop_context_t *ctx, void **buf, size_t *size);

/* ------------------------------------------------------------------ */
/* Neighborhood collectives [Hoefler]                                   */
/* ------------------------------------------------------------------ */

/*
 * A topology is MPI_Dist_graph_create_adjacent's graph over the ranks of
 * a context: each rank names its sources (whose blocks it receives, in
 * that order) and destinations (to which it sends, in that order); an
 * edge may appear more than once (a multigraph, as in MPI).  Its
 * collectives are MPI_Neighbor_allgather(v) and _alltoall(v) in bytes.
 *
 * Persistence hints (the paper's info keys; all ranks pass the same set,
 * and a program must keep to what it asserted):
 *   COOP_TOPO_STRICT         cdag_strict_communication: the context id
 *                            carries nothing but this topology's traffic.
 *   COOP_TOPO_EXACT_BYTES    cdag_exact_byte_communications: the weights
 *                            are the byte counts of every call (the
 *                            calls are checked: COOP_ERR_COUNT if not);
 *                            with one weight on every edge, of at most
 *                            COOP_NEIGHBOR_TREE_MAX: tree balancing.
 *   COOP_TOPO_STATIC_BUFFERS cdag_static_buffers: every call of one
 *                            kind passes the same buffers, of the same
 *                            sizes (checked: COOP_ERR_COUNT if not).
 *                            Messages of at most COOP_NEIGHBOR_SLOT_MAX
 *                            then go through static slots: the sender
 *                            writes into the receiver's shared memory,
 *                            completion is seen by a canary in the
 *                            block's last 8 bytes (COOP_NBR_CANARY) and
 *                            readiness by the canary armed again
 *                            (COOP_NEIGHBOR_RTR=direct) or by counts
 *                            the receivers combine in a tree per sender
 *                            (=tree): no matching, no control message.
 *                            With EXACT_BYTES too, a rank's own blocks
 *                            to one neighbour share a slot and canary
 *                            (coop_topo_info_t.grouped), and a larger
 *                            block, up to COOP_NEIGHBOR_STREAM_MAX,
 *                            streams through its slot in parts of at
 *                            most COOP_NEIGHBOR_SLOT_MAX (direct RTR).
 * Without STATIC_BUFFERS, blocks of at most COOP_NEIGHBOR_SLOT_OPEN
 * (64 KiB) go through open slots in the receiver's shared memory: the
 * sender writes the data, ending at the canary as in a static slot, and
 * the buffer's length word when the length changed.  A larger block, up
 * to COOP_NEIGHBOR_STREAM_MAX (direct RTR), streams through the slot in
 * parts of a buffer, each with the block's length; a larger one still
 * gets only a length word saying that it comes as a message.
 * Readiness is seen as with static slots; sizes that the two ends do
 * not agree on fail as for messages (COOP_ERR_TRUNCATE: more came, the
 * receive block holds its first bytes; COOP_ERR_COUNT: fewer).  Where
 * a rank's window would pass 16 MiB, a topology's open slots are halved
 * until it does not.
 */
typedef struct coop_topo coop_topo_t;

#define COOP_TOPO_STRICT		(1u << 0)
#define COOP_TOPO_EXACT_BYTES		(1u << 1)
#define COOP_TOPO_STATIC_BUFFERS	(1u << 2)

/*
 * coop_topo_create - collective over all ranks of ctx: build the graph.
 *   comm:  the context id its collectives use (0..COOP_COMM_MAX); the
 *          application must not receive on it with wildcards.
 *   sources[indegree], destinations[outdegree]: ranks (no PROC_NULL);
 *   sourceweights / destweights: NULL, or a weight per edge (bytes with
 *          COOP_TOPO_EXACT_BYTES, which requires them).
 *   hints: COOP_TOPO_* bits.
 * Every rank learns the whole graph (the optimizations are computed the
 * same way on every rank, so ranks agree without more messages).
 * Returns COOP_SUCCESS; COOP_ERR_ARG (NULL, negative degree, unknown
 * hint bits, weights missing for EXACT_BYTES), COOP_ERR_RANK (a rank out
 * of range), COOP_ERR_COMM, COOP_ERR_STATE (not connected): these on the
 * calling rank only, before any message; COOP_ERR_CONFIG on every rank
 * when the ranks' lists disagree (an edge one end does not name, weights
 * or hints that differ); COOP_ERR_NOMEM; COOP_ERR_PEER_DEAD;
 * COOP_ERR_UNSUPPORTED (more than 2^23 - 2 messages per call).
 * STRICT is checked for agreement and kept (the context id is the
 * topology's in any case).  With STATIC_BUFFERS every rank creates a
 * shared-memory window for the slots of the messages it receives
 * (/dev/shm/coopmpi-<key>-nbr-<rank>-<id>, removed by coop_topo_free).
 */
COOP_API int coop_topo_create(coop_context_t *ctx, uint32_t comm,
			      int indegree, const int *sources,
			      const uint64_t *sourceweights, int outdegree,
			      const int *destinations,
			      const uint64_t *destweights, unsigned hints,
			      coop_topo_t **topo);
/* coop_topo_free - free *topo and set it to NULL; COOP_ERR_STATE while
 * a request of it (active or persistent) is not freed. */
COOP_API int coop_topo_free(coop_topo_t **topo);
/* coop_topo_degrees - this rank's in- and out-degree (either may be
 * NULL). */
COOP_API int coop_topo_degrees(const coop_topo_t *topo, int *indegree,
			       int *outdegree);

/* What the optimizations made of a topology (for tests and tuning), per
 * collective (index COOP_NBR_ALLGATHER or COOP_NBR_ALLTOALL): the plans
 * of calls whose sizes are the EXACT_BYTES weights (without that hint,
 * or with weights that differ between edges: of any call, unbalanced). */
#define COOP_NBR_ALLGATHER	0
#define COOP_NBR_ALLTOALL	1
typedef struct coop_topo_info {
	int colors[2];		/* rounds of the send schedule (Welsh-Powell
				 * colouring of the whole graph's messages:
				 * in a round each rank sends at most one
				 * and receives at most one; a message to
				 * itself counts as both) */
	int sends[2];		/* messages this rank sends per call */
	int forwards[2];	/* ... of them carrying other ranks' blocks */
	int moved[2];		/* messages the tree balancing moved away
				 * from their origin (whole graph) */
	int slotted[2];		/* this rank's messages with a slot (static
				 * or open) */
	uint64_t slot_sends[2];	/* messages this rank wrote into slots,
				 * all calls so far, a streamed block's
				 * parts each (open slots: not those that
				 * went as messages) */
	uint64_t canary_flags[2];	/* ... of them whose last 8 bytes
					 * were COOP_NBR_CANARY: completion
					 * was flagged apart (see below) */
	int grouped[2];		/* of slotted: those sharing one slot and
				 * its canary with others to the same rank
				 * (EXACT_BYTES and STATIC_BUFFERS: blocks
				 * of known size, back to back) */
	int packed[2];		/* of slotted: those whose sender
				 * receives nothing in the call (direct
				 * RTR), streamed through more buffers
				 * whose lines are re-armed whole: a
				 * block of at most 64 B alone in its
				 * static slot (32-128 buffers, 1-8 calls
				 * a line), or an open slot's trailers
				 * (and data of up to 8 B; 4 a line) */
} coop_topo_info_t;

/* The canary of static and open slots: a slot buffer's last 8 bytes,
 * read as a uint64_t in memory order, hold it until the sender's data
 * is there.  Data ending in these 8 bytes costs the sender one more
 * store.  Every byte of it is non-zero, so shorter data (padded with
 * zeros in front) never collides.  (An open packed slot's entries hold
 * it until their trailers come.) */
#define COOP_NBR_CANARY 0xC5A7E1B3D9F2486DULL

/* coop_topo_get_info - fill *info.  COOP_ERR_ARG on NULL. */
COOP_API int coop_topo_get_info(const coop_topo_t *topo,
				coop_topo_info_t *info);

/*
 * The collectives.  sbuf: allgather sends its sbytes to every
 * destination; alltoall sends block j (sbytes each, or sbytes[j] at
 * sdispls[j]) to destinations[j].  rbuf: block i (rbytes each, or
 * rbytes[i] at rdispls[i]) comes from sources[i].  A block's sizes must
 * agree at both ends.
 *   coop_neighbor_*       blocking;
 *   coop_ineighbor_*      start it, complete with coop_wait/test*;
 *   coop_neighbor_*_init  a persistent request (coop_start, complete,
 *                         start again; coop_request_free): the buffers
 *                         and arrays must stay valid until it is freed.
 * All ranks start a topology's collectives in the same order (a call
 * refused by its checks is not started: a program whose ranks disagree
 * on sizes is erroneous, as in MPI, and may hang).  A collective's
 * request has an empty status (error set).
 * Returns COOP_SUCCESS; COOP_ERR_ARG (NULL topology, request or arrays,
 * a NULL buffer with bytes), COOP_ERR_COUNT (sizes against the
 * EXACT_BYTES weights, or a block that arrived with another size),
 * COOP_ERR_TRUNCATE (a block longer than its place), COOP_ERR_PEER_DEAD
 * (a neighbour, or a rank whose blocks this rank forwards or receives
 * through another, died), COOP_ERR_NOMEM.
 */
COOP_API int coop_neighbor_allgather(coop_topo_t *topo, const void *sbuf,
				     size_t sbytes, void *rbuf,
				     size_t rbytes);
COOP_API int coop_neighbor_allgatherv(coop_topo_t *topo, const void *sbuf,
				      size_t sbytes, void *rbuf,
				      const size_t *rbytes,
				      const size_t *rdispls);
COOP_API int coop_neighbor_alltoall(coop_topo_t *topo, const void *sbuf,
				    size_t sbytes, void *rbuf, size_t rbytes);
COOP_API int coop_neighbor_alltoallv(coop_topo_t *topo, const void *sbuf,
				     const size_t *sbytes,
				     const size_t *sdispls, void *rbuf,
				     const size_t *rbytes,
				     const size_t *rdispls);
COOP_API int coop_ineighbor_allgather(coop_topo_t *topo, const void *sbuf,
				      size_t sbytes, void *rbuf,
				      size_t rbytes, coop_request_t **req);
COOP_API int coop_ineighbor_allgatherv(coop_topo_t *topo, const void *sbuf,
				       size_t sbytes, void *rbuf,
				       const size_t *rbytes,
				       const size_t *rdispls,
				       coop_request_t **req);
COOP_API int coop_ineighbor_alltoall(coop_topo_t *topo, const void *sbuf,
				     size_t sbytes, void *rbuf, size_t rbytes,
				     coop_request_t **req);
COOP_API int coop_ineighbor_alltoallv(coop_topo_t *topo, const void *sbuf,
				      const size_t *sbytes,
				      const size_t *sdispls, void *rbuf,
				      const size_t *rbytes,
				      const size_t *rdispls,
				      coop_request_t **req);
COOP_API int coop_neighbor_allgather_init(coop_topo_t *topo,
					  const void *sbuf, size_t sbytes,
					  void *rbuf, size_t rbytes,
					  coop_request_t **req);
COOP_API int coop_neighbor_allgatherv_init(coop_topo_t *topo,
					   const void *sbuf, size_t sbytes,
					   void *rbuf, const size_t *rbytes,
					   const size_t *rdispls,
					   coop_request_t **req);
COOP_API int coop_neighbor_alltoall_init(coop_topo_t *topo,
					 const void *sbuf, size_t sbytes,
					 void *rbuf, size_t rbytes,
					 coop_request_t **req);
COOP_API int coop_neighbor_alltoallv_init(coop_topo_t *topo,
					  const void *sbuf,
					  const size_t *sbytes,
					  const size_t *sdispls, void *rbuf,
					  const size_t *rbytes,
					  const size_t *rdispls,
					  coop_request_t **req);

#ifdef __cplusplus
}
#endif

#endif /* COOPMPI_H */
