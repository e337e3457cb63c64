/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * shmseg.h - the library's own shared-memory segment, one per rank,
 * created with either provider (/dev/shm/coopmpi-<key>-seg-<rank>) and
 * mapped by every peer at connect:
 *   - bounce buffers: copy-eager messages and the pipelined fallback when
 *     single copies are impossible.  The owner (sender) fills a slot, the
 *     peer copies out and frees it by clearing its busy word.  The first
 *     3/4 of the slots serve eager messages (which may wait unexpected for
 *     long); the rest are kept for pipeline fragments, which are always
 *     consumed promptly, so pipelines never starve.
 *   - COOP-p2p work slots, one per cooperative transfer, allocated by
 *     the receiver: the message is split at `split` into the receiver's
 *     range [0, split) and the sender's [split, len), each with a claim
 *     cursor both sides may fetch-add: a side claims chunks of its own
 *     range first, then helps with the other's, so a side that falls
 *     behind (busy with other copies, computing) is helped.
 *   - the rank's copy history (COOP-load): bytes copied recently, decayed
 *     with a half-life, read by peers choosing who copies.
 */
#ifndef COOP_SHMSEG_H
#define COOP_SHMSEG_H

#include <stddef.h>
#include <stdint.h>

#define COOP_SEG_ADDR_MAX 256
#define COOP_SEG_CPU_WORDS 16	/* CPUs 0..1023 */

struct coop_work_slot {
	uint64_t next;		/* atomic: receiver's range cursor */
	uint64_t done;		/* atomic: bytes copied, both sides */
	uint64_t len;
	uint64_t chunk;
	uint64_t split;		/* receiver's range ends, sender's starts */
	uint64_t snext;		/* atomic: sender's range cursor */
	uint64_t pad[2];
};

struct coop_bounce_flag {
	uint32_t busy;
	uint32_t pad[15];
};

struct coop_seg_hdr {
	uint32_t magic;
	uint32_t version;
	uint32_t owner_pid;	/* alive: the segment's endpoint may be */
	uint32_t pad;
	uint32_t nbounce;
	uint32_t nwork;
	uint64_t bounce_size;
	uint64_t off_work, off_flags, off_bounce, bytes;
	/* owner writes, peers read (relaxed: a heuristic input) */
	uint64_t hist_bytes;	/* decayed bytes copied, as of hist_ns */
	uint64_t hist_ns;	/* CLOCK_MONOTONIC of the last update */
	/* the owner's copy jobs in flight other than the writer's part of a
	 * peer's cooperative read, and when one last started while the peer
	 * it reads from copied for itself too (an exchange): while it has
	 * some, and shortly after such a start, it has no idle CPU to lend
	 * (core/load.c) */
	uint64_t own_copies;
	uint64_t exchange_ns;
	/* the CPUs the owner may run on (its affinity when it created the
	 * segment): a node's ranks count the CPUs they share from these, as
	 * a job confined to a cpuset has fewer than the node */
	uint64_t cpus[COOP_SEG_CPU_WORDS];
	/* a dynamic endpoint's address, for peers that know only its rank
	 * and instance (written before instance, with release) */
	uint32_t instance;	/* 0 until published */
	uint32_t addr_len;
	uint8_t addr[COOP_SEG_ADDR_MAX];
};

/*
 * A mapped segment: our own or a peer's.  Its geometry is checked once at
 * map time and kept here: the header stays writable by its owner, who
 * must not be able to send our reads and writes elsewhere.
 */
struct coop_seg {
	void *base;
	size_t bytes;
	uint32_t nbounce, nwork;
	uint64_t bounce_size;
	struct coop_seg_hdr *hdr;
	struct coop_work_slot *work;
	struct coop_bounce_flag *flags;
	unsigned char *bounce;
	/* owner only */
	char name[80];
	uint32_t *work_free;
	int32_t *work_peer;		/* partner of each busy slot, -1 free */
	uint8_t *work_refs;		/* users left: our job, partner's FIN */
	uint32_t nwork_free;
	uint32_t eager_next, frag_next;	/* allocation cursors */
	uint32_t neager;		/* slots 0..neager-1 serve eager */
};

/* A new /dev/shm file name (a dead run's of that name replaced) of
 * bytes, mapped read/write: the mapping, or NULL with *err = -errno. */
void *coop_shm_file_create(const char *name, uint64_t bytes, int *err);

/* An existing one: its first hdr_len bytes read into hdr, check()
 * gives the bytes to map (0: not a file we accept), mapped read/write:
 * the mapping, or NULL with *err = -errno (-EINVAL: refused). */
void *coop_shm_file_map(const char *name, void *hdr, size_t hdr_len,
			uint64_t (*check)(const void *hdr, uint64_t size,
					  const void *arg),
			const void *arg, int *err);

int coop_seg_create(struct coop_seg *s, uint64_t key, int rank,
		    uint32_t nbounce, size_t bounce_size, uint32_t nwork);
int coop_seg_map(struct coop_seg *s, uint64_t key, int rank);
/*
 * Remove /dev/shm's files of node domains whose endpoints all died: a
 * domain (key) is stale when no segment of it has a live owner; then
 * every "coopmpi-<key>-*" file goes (the providers' rings and counters
 * too), under the domain's lock.  key: only that domain; 0: every domain
 * of ours.  Returns the number of files removed.
 */
int coop_seg_reap(uint64_t key);
/*
 * A dynamic domain's lock (coop_shm_lock on "coopmpi-<key>-lock"): held
 * by whoever creates or removes the domain's files - an endpoint joining
 * (provider slot, ring, segment), one leaving (those, then the reap), so
 * that a reap never sees a joining endpoint without its segment.  An fd
 * to close, or -errno.
 */
int coop_seg_domain_lock(uint64_t key);
/* coop_seg_reap(key) for a holder of the domain's lock */
int coop_seg_reap_locked(uint64_t key);

/* Owner: publish our address blob under instance (not 0). */
void coop_seg_publish(struct coop_seg *s, const void *addr, size_t len,
		      uint32_t instance);
/* The address rank published under instance: 0 and *len set, -ESRCH
 * (no such endpoint, or another instance now), -ENOSPC (*len short). */
int coop_seg_peer_addr(uint64_t key, int rank, uint32_t instance,
		       void *addr, size_t *len);
void coop_seg_unmap(struct coop_seg *s);
void coop_seg_destroy(struct coop_seg *s);

/* Owner: a free bounce slot, marked busy, or -1.  frag selects the
 * pipeline part of the pool. */
int coop_seg_bounce_alloc(struct coop_seg *s, int frag);
static inline void *coop_seg_bounce(const struct coop_seg *s, uint32_t slot)
{
	return s->bounce + (size_t)slot * s->bounce_size;
}
/* Reader (peer) or owner: give a slot back. */
static inline void coop_seg_bounce_free(struct coop_seg *s, uint32_t slot)
{
	__atomic_store_n(&s->flags[slot].busy, 0, __ATOMIC_RELEASE);
}
static inline int coop_seg_slot_valid(const struct coop_seg *s, uint32_t slot)
{
	return s->hdr && slot < s->nbounce;
}
/* Can slot hold len bytes?  (What a peer's packet claims is checked.) */
static inline int coop_seg_bounce_holds(const struct coop_seg *s,
					uint32_t slot, uint64_t len)
{
	return coop_seg_slot_valid(s, slot) && len <= s->bounce_size;
}

/*
 * Owner (receiver): a cooperative work slot shared with peer, or -1.  It
 * has two references, independent of the requests: our copy job (dropped
 * when the job leaves the job list) and the peer (dropped by its FIN, sent
 * once it will not touch the slot again); it is freed when both are gone,
 * or when the peer dies.
 */
int coop_seg_work_alloc(struct coop_seg *s, uint64_t len, uint64_t chunk,
			uint64_t split, int peer);
/* Drop one reference of a slot busy with peer. */
void coop_seg_work_put(struct coop_seg *s, uint32_t slot, int peer);
/* Free slot if it is busy with peer; 0 done, -1 not such a slot. */
int coop_seg_work_free(struct coop_seg *s, uint32_t slot, int peer);
/* Free every slot shared with peer (it died). */
void coop_seg_work_free_peer(struct coop_seg *s, int peer);

#endif
