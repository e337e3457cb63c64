/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fbox.h - fast boxes: a single-producer queue per sender in the
 * receiver's memory, beside the shared mailbox ring (shm provider).
 *
 * Why: a ring message costs the receiver two dependent cache misses (the
 * slot's sequence word, then the slot) and every producer a CAS on the
 * shared tail.  In a box the message's own first byte says it is there:
 * one line per message, nothing shared between senders (Open MPI's
 * vader fast boxes are the model).
 *
 * The receiver's segment (one file per rank):
 *   offset 0     struct coop_fbox_seg (header line, then the list of
 *                claimed boxes)
 *   offset 4096  box[sender] for every rank of the domain: a control
 *                line the receiver writes (head: slots taken), a line
 *                left empty (the adjacent-line prefetcher pairs lines),
 *                then slots * 64-byte messages.
 * A slot holds a message for the receiver when its first byte is its
 * lap's: not zero, its top bit the lap's parity (slot position / slots,
 * odd or even).  A sender writes a message's other bytes (and the span's
 * later messages) first and its first word last (release), the parity
 * in the first byte's top bit; the receiver copies the message out with
 * that bit cleared, zeroes the first word of a span's later slots (their
 * first byte is data), then moves head on (release).  So a message
 * costs the receiver one line it only reads, and a sender one line it
 * only writes.  Hence the one rule for users: the first byte of the
 * first message of a send is 1..127 (the library's packet type).
 *
 * A sender claims its box with its first message: it writes its rank + 1
 * into the list's first free entry (CAS), so the list fills in order and
 * a sender that dies meanwhile leaves no gap.  At most the receiver's
 * max_claims <= COOP_FBOX_ACTIVE_MAX senders do (the receiver polls a
 * bounded list); one that finds no entry left uses the ring, always.  A
 * pair uses exactly one of the two, so FIFO per pair needs nothing more.
 * A full box is -EAGAIN, as a full ring is.
 */
#ifndef COOP_FBOX_H
#define COOP_FBOX_H

#include <stddef.h>
#include <stdint.h>

#include "coopmpi_uapi.h"

#define COOP_FBOX_MAGIC		0x46424f58U	/* "FBOX" */
#define COOP_FBOX_VERSION	1
#define COOP_FBOX_ACTIVE_MAX	64
#define COOP_FBOX_BOXES_OFF	4096ULL
#define COOP_FBOX_CTL		128	/* head line + the empty line */

struct coop_fbox_seg {
	uint32_t magic;
	uint32_t version;
	uint32_t nboxes;	/* one per rank of the domain */
	uint32_t slots;		/* per box, a power of two */
	uint32_t max_claims;	/* boxes that may be claimed */
	uint8_t pad0[44];
	/* claimers' lines: rank + 1 of each claim in claim order, 0 free */
	uint32_t claimed[COOP_FBOX_ACTIVE_MAX];
};

/* Bytes of a segment for nboxes boxes of slots messages. */
static inline uint64_t coop_fbox_seg_bytes(uint32_t nboxes, uint32_t slots)
{
	return COOP_FBOX_BOXES_OFF +
	       (uint64_t)nboxes * (COOP_FBOX_CTL + (uint64_t)slots *
				   COOPMPI_MSG_SIZE);
}

/* A box as its receiver sees it. */
struct coop_fbox_in {
	uint64_t *head;		/* the box's control word (shared) */
	unsigned char *slots;
	uint64_t taken;		/* our copy of head */
};

/* The first word of the slot at position pos. */
static inline uint64_t *coop_fbox_slot(unsigned char *slots, uint32_t mask,
				       uint64_t pos)
{
	return (uint64_t *)(slots + (pos & mask) * COOPMPI_MSG_SIZE);
}

/* Is the slot at pos, whose first word is w, full for its reader? */
static inline int coop_fbox_full(uint64_t w, uint64_t pos, unsigned shift)
{
	uint64_t b = w & 0xff;

	return b && b >> 7 == ((pos >> shift) & 1);
}

/* The receiver's side of its own segment. */
struct coop_fbox_rx {
	struct coop_fbox_seg *seg;
	uint64_t bytes;
	uint32_t mask;		/* slots - 1 */
	uint32_t shift;		/* log2(slots) */
	uint32_t nboxes;
	uint32_t max_claims;
	uint32_t nactive;	/* boxes in active[] */
	uint32_t next;		/* where the next poll starts */
	int last;		/* active[] index the last message came from */
	struct coop_fbox_in active[COOP_FBOX_ACTIVE_MAX];
};

/* A sender's view of one receiver's segment. */
struct coop_fbox_tx {
	struct coop_fbox_seg *seg;
	uint64_t bytes;
	uint64_t *head;		/* our box's control word, once claimed */
	unsigned char *slots;
	uint32_t mask;
	uint32_t shift;
	int state;		/* COOP_FBOX_* below */
	uint64_t tail;		/* slots written */
	uint64_t seen_head;	/* the receiver's head as last read */
};

enum { COOP_FBOX_UNCLAIMED, COOP_FBOX_OWN, COOP_FBOX_NONE };

/* Has box b a message at position pos (its reader's taken)? */
static inline int coop_fbox_in_full(const struct coop_fbox_rx *rx,
				    const struct coop_fbox_in *b, uint64_t pos)
{
	return coop_fbox_full(__atomic_load_n(coop_fbox_slot(b->slots,
							     rx->mask, pos),
					      __ATOMIC_ACQUIRE),
			      pos, rx->shift);
}

/* Did a sender claim a box beyond the n we took on? */
static inline int coop_fbox_claim_news(const struct coop_fbox_rx *rx,
				       uint32_t n)
{
	return n < rx->max_claims &&
	       __atomic_load_n(&rx->seg->claimed[n], __ATOMIC_RELAXED);
}

/* Format a fresh (zero) segment at mem, its owner, before anyone maps
 * it: slots a power of two >= 4, max_claims <= COOP_FBOX_ACTIVE_MAX. */
void coop_fbox_format(void *mem, uint32_t nboxes, uint32_t slots,
		      uint32_t max_claims);
/* Bind rx to our formatted segment. */
void coop_fbox_rx_attach(struct coop_fbox_rx *rx, void *mem, uint64_t bytes);
/* Bind tx to a peer's mapped segment: 0, or -EINVAL when it is not one
 * (or too short for its header's size). */
int coop_fbox_tx_attach(struct coop_fbox_tx *tx, void *mem, uint64_t bytes);

/*
 * Sender (one thread at a time per tx): enqueue n messages (msgs holds
 * n; n <= slots) from rank me.  0 sent, -EAGAIN the box is full, -ENOENT
 * no box for us (use the ring from now on; said once, then always),
 * -EINVAL the first byte is not 1..127.
 */
int coop_fbox_send(struct coop_fbox_tx *tx, int me, const void *msgs,
		   unsigned n);
/* Receiver: take one message (the first of a span): 1 got one, 0 none.
 * Boxes are polled in turn from where the last poll stopped. */
int coop_fbox_poll(struct coop_fbox_rx *rx, void *msg);
/* Receiver: take the n messages that followed the one poll gave last
 * (its span; the sender wrote them before it). */
void coop_fbox_poll_more(struct coop_fbox_rx *rx, void *msgs, unsigned n);

/*
 * Receiver: is a message there, or a box newly claimed (a poll takes
 * it on)?  Reads shared words atomically and our own with relaxed
 * atomics, so a sleeper may ask without the consumer's lock.
 */
static inline int coop_fbox_ready(const struct coop_fbox_rx *rx)
{
	uint32_t i, n = __atomic_load_n(&rx->nactive, __ATOMIC_ACQUIRE);

	if (coop_fbox_claim_news(rx, n))
		return 1;
	for (i = 0; i < n; i++) {
		const struct coop_fbox_in *b = &rx->active[i];

		if (coop_fbox_in_full(rx, b, __atomic_load_n(&b->taken,
							     __ATOMIC_RELAXED)))
			return 1;
	}
	return 0;
}

#endif
