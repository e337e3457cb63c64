/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * provider.h - the transport-provider interface of libcoopmpi.
 *
 * A provider moves 64-byte control messages between ranks, exposes memory
 * regions of this process to peers, copies to/from a peer's region, and
 * gives access to the per-node load counters.  The protocol engine talks
 * only to this interface; it never knows whether the kernel driver
 * (kmod), the user-space fallback (shm: shared-memory rings +
 * process_vm_readv/writev) or verbs carries the bytes.
 *
 * Both intra-node providers use the ring and counters layouts of
 * include/coopmpi_uapi.h, implemented once in ring.c / counters access.
 *
 * Return values: 0 or a positive count on success, a negative errno on
 * failure (-EAGAIN: try again later, -EPIPE/-ESRCH: peer gone).
 */
#ifndef COOP_PROVIDER_H
#define COOP_PROVIDER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "coopmpi_uapi.h"
#include "fbox.h"
#include "ring.h"
#include "util.h"

struct coop_provider;

/* Remote key of a registered region: fits in a control message. */
struct coop_rkey {
	uint64_t cookie;	/* kmod: driver cookie; shm: remote address */
	uint64_t length;
};

enum coop_copy_dir {
	COOP_COPY_FROM_PEER,	/* peer region -> local memory (RGET side) */
	COOP_COPY_TO_PEER,	/* local memory -> peer region (RPUT side) */
};

/*
 * The provider (or its engine) keeps offload()->dma_ops/dma_bytes up to
 * date for the copies it runs; callers never touch them.
 */
struct coop_offload_info {
	const char *engine;	/* e.g. "soft", "hw" */
	const char *path;	/* how copies reach it, e.g. "io_uring" */
	unsigned max_inflight;	/* copies queued or running at once */
	uint64_t max_length;	/* largest len of one offload_put */
};

#define COOP_OFFLOAD_NOTIFY_SIZE	16
#define COOP_OFFLOAD_NOTIFY_ALIGN	16

struct coop_offload_done {
	uint64_t tag;
	int status;		/* 0 or -errno (then no notification) */
	uint64_t bytes;		/* data bytes copied */
};

/*
 * A window: a peer's region mapped here (win_map), so that its bytes are
 * copied with loads and stores.  What a copy through it got is good when
 * *state read before it (acquire) is even, carries neither
 * COOPMPI_WINDOW_DEAD nor COOPMPI_WINDOW_HOLE, and equals *state read
 * after it (include/coopmpi_uapi.h).
 */
struct coop_window_map {
	uint8_t *base;		/* the region's byte 0 */
	size_t len;		/* bytes from base that may be copied */
	const uint64_t *state;	/* its state word */
	void *map;		/* what win_unmap unmaps */
	size_t map_bytes;
};

/*
 * A watch on a range of our own memory (watch/unwatch): *word counts the
 * changes of our page tables over it - munmap, mremap, MADV_DONTNEED,
 * copy-on-write after fork, migration - as a window's state word does
 * (odd while one is under way, COOPMPI_WINDOW_DEAD once the watch is
 * gone).  Pages pinned meanwhile (an RDMA registration) are still the
 * range's iff the word read now (acquire) equals the even, flagless word
 * read before they were pinned and again right after.
 */
struct coop_watch {
	const uint64_t *word;
	struct coop_rkey key;	/* the region the watch is on */
	uint32_t handle;	/* and its window */
};

/* Largest endpoint address blob a provider produces. */
#define COOP_ADDR_MAX 128

struct coop_provider_ops {
	const char *name;

	/* Create the local endpoint; job_key names the node-local domain. */
	int (*open)(struct coop_provider *p, uint64_t job_key, int rank,
		    int nranks);
	/* Opaque address blob of the local endpoint (<= COOP_ADDR_MAX). */
	int (*address)(struct coop_provider *p, void *blob, size_t *len);
	/* Make peer rank reachable from its blob. */
	int (*connect)(struct coop_provider *p, int rank, const void *blob,
		       size_t len);
	/* Forget peer rank (its endpoint was taken over: dynamic domains);
	 * connect() may follow with the new one's blob. */
	void (*disconnect)(struct coop_provider *p, int rank);
	void (*close)(struct coop_provider *p);

	/*
	 * Control messages (COOPMPI_MSG_SIZE bytes, FIFO per peer pair).
	 * send_msg enqueues n of them (msg holds n, a span) in consecutive
	 * slots, all or none: 0, -EAGAIN (the ring is full), other -errno
	 * (the peer is gone).  The first byte of msg is 1..127 (the shm
	 * provider's fast boxes tell a full slot by it).
	 */
	int (*send_msg)(struct coop_provider *p, int peer, const void *msg,
			unsigned n);
	/* Dequeue one message (alone or the first of a span): 1 got it, 0
	 * none there. */
	int (*poll_msg)(struct coop_provider *p, void *msg);
	/* Dequeue the n messages of the span whose first poll_msg gave
	 * last, all or none: 1 got them, 0 not (all) there. */
	int (*poll_more)(struct coop_provider *p, void *msg, unsigned n);
	/*
	 * Sleep until a message may be there or timeout_us passes (< 0:
	 * no limit): 1 a message is ready, 0 not (yet).  Asks senders for a
	 * doorbell (wake_requested) and rechecks the ring first, so a message
	 * sent meanwhile is never slept through.
	 */
	int (*wait_msg)(struct coop_provider *p, long timeout_us);
	/*
	 * Optional (NULL: the provider has none): a file descriptor that
	 * polls readable when a message came after event_arm(p, 1) returned
	 * 0 (1: one is there already); event_arm(p, 0) ends that.
	 * event_fd returns the fd or -errno (it may be made on first use).
	 */
	int (*event_fd)(struct coop_provider *p);
	int (*event_arm)(struct coop_provider *p, int arm);

	/* Regions and single-copy transfers. */
	int (*reg)(struct coop_provider *p, void *addr, size_t len,
		   unsigned int access, struct coop_rkey *key);
	int (*dereg)(struct coop_provider *p, const struct coop_rkey *key);
	/* A registration the core kept (COOP_PROV_CAP_REG_BY_ADDRESS) is
	 * used again: make it good for the memory at its addresses now
	 * (optional: NULL when nothing of it can go stale).  0, or -errno:
	 * the core deregisters it and registers anew. */
	int (*reg_refresh)(struct coop_provider *p,
			   const struct coop_rkey *key);
	/* Copy len bytes between local iov and peer's region at offset. */
	ssize_t (*copy)(struct coop_provider *p, int peer,
			const struct coop_rkey *key, uint64_t offset,
			const struct iovec *iov, int iovcnt, size_t len,
			enum coop_copy_dir dir);

	/*
	 * Windows (optional: both NULL when the provider has none).  Map
	 * peer's region key, writable or not: 0, or -errno (-EACCES: its
	 * owner did not allow it, -ENXIO/-ESRCH: it is gone, -ENOSPC: too
	 * many windows).  Mapping is a system call and every page's first
	 * touch a fault: callers keep windows (core/window.c).
	 */
	int (*win_map)(struct coop_provider *p, int peer,
		       const struct coop_rkey *key, int writable,
		       struct coop_window_map *w);
	void (*win_unmap)(struct coop_provider *p, struct coop_window_map *w);
	/*
	 * Watches (optional: both NULL when the provider has none).  Watch
	 * [addr, addr + len) of our memory: 0, or -errno (-EOPNOTSUPP: not
	 * on this endpoint, e.g. windows off).  A watch costs a region and a
	 * window of the endpoint's until unwatch.
	 */
	int (*watch)(struct coop_provider *p, void *addr, size_t len,
		     struct coop_watch *w);
	void (*unwatch)(struct coop_provider *p, struct coop_watch *w);

	/* Is the peer still alive?  1 yes, 0 no. */
	int (*peer_alive)(struct coop_provider *p, int peer);
	/*
	 * May copy() move data to/from this peer's regions?  1 yes, 0 no (e.g.
	 * cross-process copies forbidden: the engine then pipelines through
	 * shared bounce buffers).  Valid after connect().
	 */
	int (*copy_ok)(struct coop_provider *p, int peer);
	/* Per-node load counters (shared memory, atomics). */
	struct coopmpi_load_slot *(*load_slot)(struct coop_provider *p,
					       int rank);
	struct coopmpi_offload_counters *(*offload)(struct coop_provider *p);

	/*
	 * Offload engine (optional: all three NULL when the provider has
	 * none, e.g. shm).  An asynchronous copy engine that moves bytes
	 * from local memory into a peer's region without either CPU, then
	 * optionally writes a 16-byte notification into a region.
	 */
	/* Set the engine up (first call) and describe it: 0, or
	 * -EOPNOTSUPP when this provider instance has no engine. */
	int (*offload_info)(struct coop_provider *p,
			    struct coop_offload_info *info);
	/*
	 * Queue a copy of len bytes from local memory (unchanged until the
	 * completion) to dst at dst_off; then, if notify is not NULL, write
	 * the 16 bytes notify16 at notify_off of region notify (aligned to
	 * COOP_OFFLOAD_NOTIFY_ALIGN): the peer seeing its first 8 bytes
	 * change sees all the data.  len 0 is a bare notification.  Returns
	 * 0 (exactly one completion with this tag will follow), -EAGAIN
	 * (engine full: poll completions, try again) or -errno.  Queued
	 * copies are submitted by the next offload_poll at the latest.
	 */
	int (*offload_put)(struct coop_provider *p, int peer, const void *local,
			   size_t len, const struct coop_rkey *dst,
			   uint64_t dst_off, const struct coop_rkey *notify,
			   uint64_t notify_off, const void *notify16,
			   uint64_t tag);
	/* Submit what is queued, reap up to max completions: count. */
	int (*offload_poll)(struct coop_provider *p,
			    struct coop_offload_done *out, int max);
};


/* Requests from the library, set before open(). */
#define COOP_PROV_NO_COPY	(1u << 0)	/* never offer single copies */
/* Dynamic endpoint: open() chooses rank and nranks (a free endpoint of
 * the node domain job_key, and the domain's size) and stores them in
 * p->rank and p->nranks; peers connect one by one. */
#define COOP_PROV_DYNAMIC	(1u << 1)
/* Let peers map our regions (win_map), where the provider can. */
#define COOP_PROV_WINDOWS	(1u << 2)

/* The offload engine asked for (p->engine_want), set before open(). */
enum coop_engine_choice {
	COOP_ENGINE_PROVIDER,	/* the provider's own, if any (kmod: DMA) */
	COOP_ENGINE_HCA,	/* the RDMA adapter's, through libibverbs */
};

/* What the provider does itself, set by open(). */
#define COOP_PROV_CAP_KERNEL_TOTALS (1u << 0)	/* copy() charges total_* */
/* A registration names addresses, not pages (nothing is pinned, or what
 * is, reg_refresh renews), so it stays right for whatever memory is at
 * them later: it may be kept and used again (core's registration cache). */
#define COOP_PROV_CAP_REG_BY_ADDRESS (1u << 1)
/* Any address range of a peer is a key as it is ({ cookie = address,
 * length }): copy() and windows go by address, with the permission the
 * peer's process gives (process_vm_readv's), so a peer's memory needs no
 * registration to be named (coop_xfer_addr_keys). */
#define COOP_PROV_CAP_ADDR_KEYS (1u << 2)

struct coop_provider {
	const struct coop_provider_ops *ops;
	void *priv;
	/* what poll_msg takes from, once open: idle progress peeks at it
	 * (coop_provider_msg_ready) instead of calling poll_msg - the ring,
	 * and the fast boxes (shm) or NULL */
	const struct coop_ring *rx;
	const struct coop_fbox_rx *inbox;
	int rank;
	int nranks;
	unsigned flags;		/* COOP_PROV_* */
	unsigned caps;		/* COOP_PROV_CAP_* */
	unsigned ring_slots;	/* wanted ring size, power of two (shm) */
	unsigned fbox_slots;	/* fast box size, power of two; 0: none */
	unsigned fbox_senders;	/* senders that may have one at a rank */
	int verbose;		/* log decisions on stderr */
	int warn_fallback;	/* say why kmod could not be used (rank 0) */
	/* the offload engine: wanted (set before open) ... */
	unsigned engine_want;	/* enum coop_engine_choice */
	const char *hca_device;	/* COOP_ENGINE_HCA: its name, NULL: any */
	int hca_gid;		/* RoCE GID index, < 0: a routable one */
	unsigned hca_mr_cache;	/* HCA registrations kept at most */
	/* ... and in use: the HCA engine's state (prov_hca.c), and the
	 * node's bytes in flight on the engine (offload counters) once set
	 * up, else NULL */
	void *engine;
	const uint64_t *engine_load;
	/* the registrations the engine made, and those it kept and used
	 * again, since open (coop_stats_t) */
	uint64_t engine_regs;
	uint64_t engine_regs_kept;
};

/* Is a message there for poll_msg?  Safe without the consumer's lock. */
static inline int coop_provider_msg_ready(const struct coop_provider *p)
{
	return coop_ring_ready(p->rx) || (p->inbox && coop_fbox_ready(p->inbox));
}

/*
 * Provider registry (provider.c): the providers this build knows, in
 * order of preference (kmod if /dev/coopmpi exists, then shm).
 */
const struct coop_provider_ops *coop_provider_find(const char *name);
/* Open the preferred usable provider (or the one forced by name, may be
 * NULL); fills p->ops/priv.  Logs the choice and the reason when
 * p->verbose; a fallback from kmod to shm, with its cause and fix, when
 * p->warn_fallback (rank 0).  Returns 0 or a negative errno. */
int coop_provider_open(struct coop_provider *p, const char *name,
		       uint64_t job_key);

/*
 * An exclusive lock (flock) on the /dev/shm file name, created if need
 * be: an fd to close to unlock, or -errno.  Such a file is only removed
 * by a holder of its lock, so it may be removed at any time: a file that
 * lost its name while we waited is not the one the name stands for any
 * more, and the lock is taken again on the one it has now.
 */
int coop_shm_lock(const char *name);

/*
 * Open fd of process pid (a memfd it publishes) with open flags, through
 * /proc: the new fd, -ESRCH (no such fd or process), -EPROTO (not a
 * regular file of bytes bytes) or -errno (e.g. -EACCES: not ours).
 */
int coop_peer_fd_open(int pid, int fd, int flags, size_t bytes);

/*
 * Put the HCA-loopback engine (prov_hca.c) on top of the open provider
 * p: it takes over p's offload ops, reg/dereg (a writable region also
 * gets an HCA key) and address/connect (queue pairs), and close.  0 or
 * -errno (no usable device, dynamic endpoints: -EOPNOTSUPP), logged.
 */
int coop_hca_attach(struct coop_provider *p);
/* The adapter COOP_ENGINE=hca would use (name, NULL: any) in buf:
 * 0, or -ENODEV when there is none with an active port. */
int coop_hca_describe(const char *name, char *buf, size_t len);

extern const struct coop_provider_ops coop_provider_kmod;
extern const struct coop_provider_ops coop_provider_shm;

#endif /* COOP_PROVIDER_H */
