/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ring.h - the mailbox ring protocol of include/coopmpi_uapi.h (bounded
 * MPMC queue of 64-byte messages with a sequence word per slot), on memory
 * mapped from the driver (kmod) or from /dev/shm (shm).  One
 * implementation for both providers; the doorbell is the provider's job.
 */
#ifndef COOP_RING_H
#define COOP_RING_H

#include <stdint.h>
#include <time.h>

#include "coopmpi_uapi.h"

struct coop_ring {
	struct coopmpi_ring_hdr *hdr;
	__u64 *seq;
	unsigned char *msgs;
	uint32_t mask;
	uint64_t head;		/* consumer: private copy of hdr->head */
	uint64_t seen_head;	/* producers: hdr->head as last read */
};

/* Bind r to a mapped ring of ring_bytes; -EINVAL if the header is bad. */
int coop_ring_attach(struct coop_ring *r, void *mem, uint64_t ring_bytes);
/* Initialise a fresh ring in mem (owner side, shm provider only). */
void coop_ring_format(void *mem, uint32_t slots, uint32_t ep_id,
		      uint32_t generation, uint32_t pid);

/*
 * Enqueue n COOPMPI_MSG_SIZE messages into consecutive slots, all or
 * none (a span: a consumer that finds the first finds the others).
 * Returns 0 when enqueued and no wake-up is needed, 1 when enqueued and
 * the consumer asked for a doorbell, -EAGAIN when full (or n is more
 * than the ring holds), -EPIPE when the owner closed the ring.
 */
int coop_ring_enqueue(struct coop_ring *r, const void *msgs, unsigned n);
/*
 * Producer, after publishing messages (here or in a fast box of the
 * consumer's): did the consumer ask for a doorbell?  The full fence pairs
 * with coop_ring_arm()'s: either it sees our message or we its request.
 */
static inline int coop_ring_wake_wanted(const struct coop_ring *r)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return __atomic_load_n(&r->hdr->wake_requested, __ATOMIC_RELAXED) ?
	       1 : 0;
}

/* Dequeue n consecutive messages into msgs, all or none: 1 got them,
 * 0 not (all) there. */
int coop_ring_dequeue(struct coop_ring *r, void *msgs, unsigned n);
/* Consumer: is a message ready (without taking it)?  Inline: idle
 * progress loops ask this on every turn. */
static inline int coop_ring_ready(const struct coop_ring *r)
{
	uint64_t head = __atomic_load_n(&r->head, __ATOMIC_RELAXED);

	return __atomic_load_n(&r->seq[head & r->mask], __ATOMIC_ACQUIRE) ==
	       head + 1;
}

/*
 * Consumer: sleep until a message may be there or timeout_us passes (< 0:
 * no limit).  Asks producers for a doorbell (wake_requested), rechecks the
 * ring, and only then calls sleep(arg, timeout or NULL), which must return
 * early on the provider's doorbell.  Returns coop_ring_ready() after.
 */
int coop_ring_sleep(struct coop_ring *r, long timeout_us,
		    void (*sleep)(void *arg, const struct timespec *timeout),
		    void *arg);
/*
 * How a consumer waits, as it tells producers in wake_requested (any
 * non-zero value asks for a doorbell; the driver needs no more, the shm
 * provider rings a futex or a socket).
 */
#define COOP_RING_WAKE_SLEEP	1u	/* in the provider's wait_msg */
#define COOP_RING_WAKE_FD	2u	/* on the provider's event fd */

/*
 * Consumer waiting on the provider's fd elsewhere (an event loop): ask
 * producers for a doorbell from now on (how: COOP_RING_WAKE_*); 1 when
 * a message is already there (then the fd may never fire: progress
 * instead).  Until coop_ring_disarm(), a message rings.  Disarming
 * returns the request as it was: 0 when a producer took it (and rang).
 */
int coop_ring_arm(struct coop_ring *r, uint32_t how);
uint32_t coop_ring_disarm(struct coop_ring *r);

#endif
