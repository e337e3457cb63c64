/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ring.c - see ring.h and the protocol comment in coopmpi_uapi.h. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "atomic.h"
#include "ring.h"

/* each side's words on lines of their own (coopmpi_uapi.h) */
_Static_assert(offsetof(struct coopmpi_ring_hdr, wake_requested) < 64 &&
	       offsetof(struct coopmpi_ring_hdr, tail) == 64 &&
	       offsetof(struct coopmpi_ring_hdr, head) == 128 &&
	       sizeof(struct coopmpi_ring_hdr) == 192, "ring header lines");

int coop_ring_attach(struct coop_ring *r, void *mem, uint64_t ring_bytes)
{
	struct coopmpi_ring_hdr *h = mem;
	uint32_t slots = h->slots;

	if (h->magic != COOPMPI_RING_MAGIC ||
	    h->version != COOPMPI_ABI_VERSION ||
	    h->msg_size != COOPMPI_MSG_SIZE || !slots ||
	    (slots & (slots - 1)) || coopmpi_ring_bytes(slots) > ring_bytes)
		return -EINVAL;
	r->hdr = h;
	r->seq = (__u64 *)((char *)mem + COOPMPI_RING_SEQ_OFF);
	r->msgs = (unsigned char *)mem + coopmpi_ring_msgs_off(slots);
	r->mask = slots - 1;
	r->head = LOAD_RLX(&h->head);
	r->seen_head = r->head;
	return 0;
}

void coop_ring_format(void *mem, uint32_t slots, uint32_t ep_id,
		      uint32_t generation, uint32_t pid)
{
	struct coopmpi_ring_hdr *h = mem;
	__u64 *seq = (__u64 *)((char *)mem + COOPMPI_RING_SEQ_OFF);
	uint32_t i;

	memset(h, 0, sizeof(*h));
	h->version = COOPMPI_ABI_VERSION;
	h->slots = slots;
	h->msg_size = COOPMPI_MSG_SIZE;
	h->ep_id = ep_id;
	h->generation = generation;
	h->owner_pid = pid;
	for (i = 0; i < slots; i++)
		seq[i] = i;
	/* magic last: a peer attaching sees a complete ring or none */
	STORE_REL(&h->magic, COOPMPI_RING_MAGIC);
}

/*
 * Is slot pos free, i.e. has the consumer taken the message a lap
 * before it?  Our copy of its head says so most of the time without a
 * look at its line; when it does not, the real head (acquire: the
 * consumer read that message before it moved head past it).  The copy
 * is shared by this process's producing threads (release/acquire, so
 * one thread's look covers another's write).
 */
static int slot_free(struct coop_ring *r, uint64_t pos)
{
	uint64_t head = LOAD_ACQ(&r->seen_head);

	/* signed: a pos behind head is a stale tail, the CAS will fail */
	if ((int64_t)(pos - head) <= (int64_t)r->mask)
		return 1;
	head = LOAD_ACQ(&r->hdr->head);
	STORE_REL(&r->seen_head, head);
	return (int64_t)(pos - head) <= (int64_t)r->mask;
}

int coop_ring_enqueue(struct coop_ring *r, const void *msgs, unsigned n)
{
	struct coopmpi_ring_hdr *h = r->hdr;
	uint64_t pos = LOAD_RLX(&h->tail);
	unsigned i;

	if (__builtin_expect(LOAD_RLX(&h->closed) != 0, 0))
		return -EPIPE;
	if (__builtin_expect(n - 1 > r->mask, 0))
		return -EAGAIN;	/* never fits: the caller has another way */
	do {
		if (!slot_free(r, pos + n - 1)) {
			__atomic_fetch_add(&h->full_events, 1,
					   __ATOMIC_RELAXED);
			return -EAGAIN;
		}
		/* pos reloaded by a failed CAS (another producer's) */
	} while (!__atomic_compare_exchange_n(&h->tail, &pos, pos + n, 0,
					      __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	for (i = 0; i < n; i++)
		memcpy(r->msgs + ((pos + i) & r->mask) * COOPMPI_MSG_SIZE,
		       (const unsigned char *)msgs + i * COOPMPI_MSG_SIZE,
		       COOPMPI_MSG_SIZE);
	/* the first last: a consumer that finds it finds all */
	for (i = n; i-- > 0;)
		STORE_REL(&r->seq[(pos + i) & r->mask], pos + i + 1);
	return coop_ring_wake_wanted(r);
}

int coop_ring_dequeue(struct coop_ring *r, void *msgs, unsigned n)
{
	uint64_t pos = LOAD_RLX(&r->head);
	unsigned i;

	for (i = 0; i < n; i++)
		if (LOAD_ACQ(&r->seq[(pos + i) & r->mask]) != pos + i + 1)
			return 0;
	for (i = 0; i < n; i++)
		memcpy((unsigned char *)msgs + i * COOPMPI_MSG_SIZE,
		       r->msgs + ((pos + i) & r->mask) * COOPMPI_MSG_SIZE,
		       COOPMPI_MSG_SIZE);
	STORE_RLX(&r->head, pos + n);	/* a sleeper reads it unlocked */
	/* release: the messages are read before a producer reuses a slot */
	STORE_REL(&r->hdr->head, pos + n);
	return 1;
}

int coop_ring_arm(struct coop_ring *r, uint32_t how)
{
	__atomic_store_n(&r->hdr->wake_requested, how, __ATOMIC_RELAXED);
	/* pairs with the fence in coop_ring_enqueue(): either the producer
	 * sees our request and rings, or we see its message here */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return coop_ring_ready(r);
}

uint32_t coop_ring_disarm(struct coop_ring *r)
{
	return __atomic_exchange_n(&r->hdr->wake_requested, 0,
				   __ATOMIC_ACQ_REL);
}

int coop_ring_sleep(struct coop_ring *r, long timeout_us,
		    void (*sleep)(void *arg, const struct timespec *timeout),
		    void *arg)
{
	struct timespec ts = { timeout_us / 1000000,
			       timeout_us % 1000000 * 1000 };

	if (!coop_ring_arm(r, COOP_RING_WAKE_SLEEP))
		sleep(arg, timeout_us >= 0 ? &ts : NULL);
	coop_ring_disarm(r);
	return coop_ring_ready(r);
}
