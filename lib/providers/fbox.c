/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fbox.c - fast boxes; the protocol is in fbox.h. */
#include <errno.h>
#include <string.h>

#include "atomic.h"
#include "fbox.h"
#include "util.h"

_Static_assert(offsetof(struct coop_fbox_seg, claimed) == 64 &&
	       sizeof(struct coop_fbox_seg) <= COOP_FBOX_BOXES_OFF,
	       "fast box header lines");

static unsigned char *box_at(struct coop_fbox_seg *seg, uint32_t rank)
{
	return (unsigned char *)seg + COOP_FBOX_BOXES_OFF +
	       (uint64_t)rank * (COOP_FBOX_CTL +
				 (uint64_t)seg->slots * COOPMPI_MSG_SIZE);
}

void coop_fbox_format(void *mem, uint32_t nboxes, uint32_t slots,
		      uint32_t max_claims)
{
	struct coop_fbox_seg *seg = mem;

	/* a fresh file is all zero: every box empty, nothing claimed */
	seg->nboxes = nboxes;
	seg->slots = slots;
	seg->max_claims = max_claims;
	seg->version = COOP_FBOX_VERSION;
	STORE_REL(&seg->magic, COOP_FBOX_MAGIC);
}

void coop_fbox_rx_attach(struct coop_fbox_rx *rx, void *mem, uint64_t bytes)
{
	memset(rx, 0, sizeof(*rx));
	rx->seg = mem;
	rx->bytes = bytes;
	rx->mask = rx->seg->slots - 1;
	rx->shift = (uint32_t)__builtin_ctz(rx->seg->slots);
	rx->nboxes = rx->seg->nboxes;
	rx->max_claims = rx->seg->max_claims;
}

int coop_fbox_tx_attach(struct coop_fbox_tx *tx, void *mem, uint64_t bytes)
{
	struct coop_fbox_seg *seg = mem;
	uint32_t slots;

	memset(tx, 0, sizeof(*tx));
	if (bytes < sizeof(*seg) || LOAD_ACQ(&seg->magic) != COOP_FBOX_MAGIC ||
	    seg->version != COOP_FBOX_VERSION)
		return -EINVAL;
	slots = seg->slots;
	if (slots < 4 || (slots & (slots - 1)) ||
	    seg->max_claims > COOP_FBOX_ACTIVE_MAX ||
	    coop_fbox_seg_bytes(seg->nboxes, slots) > bytes)
		return -EINVAL;
	tx->seg = seg;
	tx->bytes = bytes;
	tx->mask = slots - 1;
	tx->shift = (uint32_t)__builtin_ctz(slots);
	return 0;
}

/* Our first message: a box of our own, or the ring for good. */
static int claim(struct coop_fbox_tx *tx, int me)
{
	struct coop_fbox_seg *seg = tx->seg;
	uint32_t i, free_entry;
	unsigned char *box;

	tx->state = COOP_FBOX_NONE;
	if (me < 0 || (uint32_t)me >= seg->nboxes)
		return -ENOENT;
	for (i = 0; i < seg->max_claims; i++) {
		free_entry = 0;
		if (__atomic_compare_exchange_n(&seg->claimed[i], &free_entry,
						(uint32_t)me + 1, 0,
						__ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			break;
	}
	if (i == seg->max_claims)
		return -ENOENT;
	box = box_at(seg, (uint32_t)me);
	tx->head = (uint64_t *)box;
	tx->slots = box + COOP_FBOX_CTL;
	tx->state = COOP_FBOX_OWN;
	return 0;
}

static int room_for(struct coop_fbox_tx *tx, unsigned n)
{
	if (tx->tail + n - tx->seen_head <= (uint64_t)tx->mask + 1)
		return 1;
	/* acquire: the receiver read (and emptied) those slots before it
	 * moved head */
	tx->seen_head = LOAD_ACQ(tx->head);
	return tx->tail + n - tx->seen_head <= (uint64_t)tx->mask + 1;
}

int coop_fbox_send(struct coop_fbox_tx *tx, int me, const void *msgs,
		   unsigned n)
{
	const unsigned char *m = msgs;
	uint64_t word;
	unsigned i;

	if (unlikely(tx->state != COOP_FBOX_OWN)) {
		if (tx->state == COOP_FBOX_NONE || claim(tx, me))
			return -ENOENT;
	}
	memcpy(&word, m, sizeof(word));
	if (unlikely(!(word & 0xff) || (word & 0x80)))
		return -EINVAL;
	if (unlikely(n - 1 > tx->mask) || !room_for(tx, n))
		return -EAGAIN;
	for (i = 1; i < n; i++)
		memcpy(coop_fbox_slot(tx->slots, tx->mask, tx->tail + i),
		       m + i * COOPMPI_MSG_SIZE, COOPMPI_MSG_SIZE);
	memcpy((unsigned char *)coop_fbox_slot(tx->slots, tx->mask, tx->tail) +
	       sizeof(word), m + sizeof(word),
	       COOPMPI_MSG_SIZE - sizeof(word));
	word |= ((tx->tail >> tx->shift) & 1) << 7;
	STORE_REL(coop_fbox_slot(tx->slots, tx->mask, tx->tail), word);
	tx->tail += n;
	return 0;
}

/* Take the claims made since we last looked. */
static void take_claims(struct coop_fbox_rx *rx)
{
	uint32_t n = rx->nactive;

	while (n < rx->max_claims) {
		uint32_t who = LOAD_ACQ(&rx->seg->claimed[n]);
		unsigned char *box;

		if (!who || who > rx->nboxes)
			break;
		box = box_at(rx->seg, who - 1);
		rx->active[n].head = (uint64_t *)box;
		rx->active[n].slots = box + COOP_FBOX_CTL;
		n++;
		/* release: a lockless coop_fbox_ready() sees the entry */
		STORE_REL(&rx->nactive, n);
	}
}

/* Copy n messages of box b out from its head on; first: the first of a
 * send (its lap bit goes), else the later ones of a span (their first
 * byte is data, which must not pass for a message a lap on). */
static void take(struct coop_fbox_rx *rx, struct coop_fbox_in *b, void *msgs,
		 unsigned n, int first)
{
	uint64_t pos = b->taken;
	unsigned i;

	for (i = 0; i < n; i++) {
		uint64_t *w = coop_fbox_slot(b->slots, rx->mask, pos + i);

		memcpy((unsigned char *)msgs + i * COOPMPI_MSG_SIZE, w,
		       COOPMPI_MSG_SIZE);
		if (!first)
			STORE_RLX(w, 0);
	}
	if (first)
		*(unsigned char *)msgs &= 0x7f;
	STORE_RLX(&b->taken, pos + n);
	/* release: the slots are read (and emptied) before the sender
	 * writes them again */
	STORE_REL(b->head, pos + n);
}

int coop_fbox_poll(struct coop_fbox_rx *rx, void *msg)
{
	uint32_t i, k, n;

	if (unlikely(coop_fbox_claim_news(rx, rx->nactive)))
		take_claims(rx);
	n = rx->nactive;
	for (i = 0, k = rx->next; i < n; i++, k = k + 1 == n ? 0 : k + 1) {
		struct coop_fbox_in *b = &rx->active[k];

		if (!coop_fbox_in_full(rx, b, b->taken))
			continue;
		take(rx, b, msg, 1, 1);
		rx->last = (int)k;
		rx->next = k + 1 == n ? 0 : k + 1;
		return 1;
	}
	return 0;
}

void coop_fbox_poll_more(struct coop_fbox_rx *rx, void *msgs, unsigned n)
{
	take(rx, &rx->active[rx->last], msgs, n, 0);
}
