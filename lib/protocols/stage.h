/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stage.h - the staging areas of the decoupled protocols of
 * [Marathe] (seed 001): a sender that copies the message somewhere
 * the receiver can read it later completes at once.
 *
 * One shared-memory file per rank, /dev/shm/coopmpi-<key>-stage-<rank>,
 * created when the settings may use it and mapped by every peer:
 *
 *   header page
 *   outbox  (pre-copy): the owner copies a message here, the receiver
 *           copies it out whenever it matches
 *   inbox   (post-copy): one partition per sending rank; sender s copies
 *           into partition s of the receiver, the receiver (owner) copies
 *           out when it matches
 *   notes   (profile-guided selection): the owner's records for its
 *           peers to read, of a size its user chooses (0: none)
 *
 * Each area (the outbox; each inbox partition) is a ring of chunks with
 * one writer: a 64-byte chunk header, then the data, 64-byte aligned.
 * The writer allocates at its head and takes chunks back at its tail
 * once their reader cleared the busy word (in any order: a chunk freed
 * early waits for the ones before it).  A chunk never wraps: the writer
 * pads the end of the ring with a free chunk instead.
 */
#ifndef COOP_STAGE_H
#define COOP_STAGE_H

#include <stddef.h>
#include <stdint.h>

#define COOP_STAGE_CHUNK_HDR 64

struct coop_stage_hdr {
	uint32_t magic;
	uint32_t version;
	uint32_t owner_pid;
	uint32_t nranks;
	uint64_t out_bytes;	/* outbox ring size */
	uint64_t part_bytes;	/* each inbox partition's ring size */
	uint64_t notes_bytes;
	uint64_t off_out, off_in, off_notes, bytes;
};

#define COOP_STAGE_MAX_CHUNKS 1024	/* in a ring at once */

/*
 * The writer's view of one ring (private to the writer).  The sizes of
 * its chunks are kept here, not read back from the shared headers, which
 * the reader could scribble.
 */
struct coop_stage_ring {
	unsigned char *base;	/* the ring's first byte */
	uint64_t size;		/* 0: no ring */
	uint64_t head, tail;	/* byte positions, only grow */
	uint64_t sizes[COOP_STAGE_MAX_CHUNKS];	/* FIFO, bytes */
	uint32_t first, count;
};

/* A mapped staging file: ours, or a peer's (geometry checked at map). */
struct coop_stage {
	void *map;
	size_t bytes;
	int nranks;
	uint64_t out_bytes, part_bytes;
	unsigned char *out;	/* outbox ring */
	unsigned char *in;	/* inbox partitions, part_bytes each */
	unsigned char *notes;	/* notes_bytes */
	uint64_t notes_bytes;
	char name[80];
};

/* Owner: create ours (out_bytes, in_bytes for all partitions together,
 * rounded down to 64-byte multiples; any of the three may be 0). */
int coop_stage_create(struct coop_stage *st, uint64_t key, int rank,
		      int nranks, uint64_t out_bytes, uint64_t in_bytes,
		      uint64_t notes_bytes);
/* Peer: map rank's, checking its geometry (and that its notes are
 * notes_bytes long): 0 or -errno. */
int coop_stage_map(struct coop_stage *st, uint64_t key, int rank,
		   int nranks, uint64_t notes_bytes);
void coop_stage_unmap(struct coop_stage *st);
void coop_stage_destroy(struct coop_stage *st);

/* Writer: start r as the ring of writer `from` into st's inbox (st:
 * the receiver's), or as the owner's outbox ring. */
void coop_stage_inbox_ring(struct coop_stage_ring *r,
			   const struct coop_stage *st, int from);
void coop_stage_outbox_ring(struct coop_stage_ring *r,
			    const struct coop_stage *st);
/* Writer: are all its chunks back? */
int coop_stage_ring_idle(struct coop_stage_ring *r);
/* Writer: does a chunk still wait for a reader that is not gone? */
int coop_stage_ring_awaited(struct coop_stage_ring *r,
			    int (*gone)(const void *arg, int rank),
			    const void *arg);

/*
 * Writer: room for len bytes, marked busy: the data's offset in the
 * ring, or -1 when there is none now (or ever: len beyond the ring).
 */
int64_t coop_stage_alloc(struct coop_stage_ring *r, uint64_t len, int reader);

/*
 * Reader: the data of the chunk at off of a ring of size bytes at base,
 * if a chunk of len bytes is there (what a peer's packet claims is
 * checked), else NULL.
 */
const void *coop_stage_chunk(const unsigned char *base, uint64_t size,
			     uint64_t off, uint64_t len);
/* Reader: give the chunk at off back to its writer. */
void coop_stage_release(unsigned char *base, uint64_t off);

#endif
