/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * canary.c - moving a small transfer through its static slot
 * [Hoefler, III-C2/3]: ready-to-receive (RTR) and ready-to-exit (RTE)
 * without a message.
 *
 * RTE, the canary: the receiver keeps the last 8 bytes of each slot
 * buffer at COOP_NBR_CANARY.  The sender copies the data so that it
 * ends there, the last 8 bytes (the canary word) stored last, with
 * release; the receiver sees the word change and has the whole data.
 * Data whose last 8 bytes equal the canary would go unnoticed: then the
 * sender also stores the call's number in the buffer's flag.  Data
 * shorter than 8 bytes is preceded by zero bytes in the word, which the
 * canary has none of, so it never collides.
 *
 * RTR: calls take a slot's SLOT_BUFS buffers (a packed slot's 16) in
 * turn; call n may write its buffer once the receiver consumed the call
 * a lap before and armed the canary again.  Direct: the sender finds
 * the canary armed - in the very line it is about to write, so RTR
 * costs no cache line of its own (measured: a consumed count the
 * receiver stores every call and the sender reads, even only when the
 * last one it saw does not free the buffer, took twice as long per
 * call; again for open slots with a lap in the trailer and the count
 * stored every 1-8 calls: 0.21 -> 0.36 us per call of a one-way stream
 * of 8 B).  Only after a collision (the canary was never replaced) it
 * reads the receiver's consumed count, which the receiver stores for
 * such calls.
 * Packed slots (a block of at most 64 bytes alone in its slot, direct
 * RTR; slots.c): 128 buffers of 8 bytes, 64 of 16 or 32 of 32 or 64, so
 * a line holds 8, 4, 2 or 1 calls, and the receiver arms a line's
 * canaries again together once it took the line's last call (a block
 * of 8 bytes is its buffer's canary word).  A stream of calls then
 * moves a line per 1-8 calls, and the sender fills one line while
 * the receiver drains another (re-arming each buffer as it is taken
 * would write the line the sender is filling).  The consumed count is
 * stored with each re-arm, never before it: a collided buffer is free
 * only once its line is armed.  The sender can always write the call
 * its receiver waits for: that buffer's last call ended its line before
 * this one.
 * A streamed slot (slots.c) takes a block in parts, each as a call
 * would: its callers pass turns (call x parts + part) where this file
 * says calls.
 * Tree (COOP_NEIGHBOR_RTR=tree): a sender's slots form a k-ary tree;
 * each receiver publishes the least consumed count of its subtree (its
 * own and its children's words), so the sender reads only its k
 * children's words per call, not one per destination.
 *
 * Groups (coll.h, struct slot_group): every member goes by its
 * leader's canary, flag and RTR.  The sender writes a call's members
 * before the leader (whose release store publishes them all) and a
 * group's calls in order; the receiver's last member to take the call
 * re-arms the canary.
 *
 * Open slots (a topology without STATIC_BUFFERS, whose calls may pass
 * any sizes): every call takes its buffer (RTR as above) and a trailer
 * word says how long its data is - or, for data larger than the slot,
 * that it comes as a point-to-point message - so the two ends never
 * disagree on which way a call's data goes, and sizes that differ are
 * an error as they are for messages.  The trailer is the buffer's
 * length word in the slot header, stored only when it changes: the
 * data ends at the canary as in a static slot (collisions flagged the
 * same way), so 64 bytes cross in one line, not two, and a stream of
 * one size finds the word in its cache (2 ranks exchanging 64 B, plain
 * calls: 0.55 -> 0.41 us per call where Open MPI took 0.58).  A trailer
 * has the top bit clear, the canary has it set.
 * A block larger than the slot's buffer, up to the stream bound
 * (COOP_NEIGHBOR_STREAM_MAX, direct RTR), streams: a turn per part of a
 * buffer, each trailer the block's length, so the receiver learns from
 * the first how many turns the block takes whatever its own size, and
 * both ends stay in step; a length that changes between parts, or past
 * NBR_STREAM_LIMIT, no sender writes.  Here, as for streamed static
 * slots, callers pass turns where this file says calls (sched.c counts
 * an open slot's turns at each end).
 * Packed open slots (the sender receives nothing in the call; slots.c):
 * the trailers are in 64 entries of 16 bytes after the 16 buffers,
 * four to a line and re-armed a line at a time as in packed slots, and
 * an entry's first word holds data of up to 8 bytes.  A one-way stream
 * then moves a line per four calls for such data, and larger data's
 * buffer lines only ever go to the receiver, which polls the entry
 * instead of the buffer's end (one edge, plain calls, 8 / 64 B: 0.20 /
 * 0.34 -> 0.11 / 0.23 us per call).  Call n takes entry n % 64 and,
 * for larger data, buffer n % 16: its own armed entry frees the buffer
 * of call n - 64, so the sender also waits for the entry of call n - 16
 * to be armed again.
 */
#include <stddef.h>
#include <string.h>

#include "atomic.h"
#include "coll.h"

struct slot_hdr {
	uint64_t consumed;	/* receiver: calls of the slot taken, as of
				 * the last one that collided */
	uint64_t ready;		/* receiver: least consumed of its subtree */
	uint64_t pad0[6];
	uint64_t flag[SLOT_BUFS_MAX];	/* sender, per buffer: call + 1,
					 * or with FLAG_LOST; an open
					 * slot's from SLOT_BUFS on: its
					 * buffers' length words (a slot
					 * has as many as its header's
					 * bytes hold) */
};
_Static_assert(sizeof(struct slot_hdr) == 64 + 8 * SLOT_BUFS_MAX,
	       "slot header");
_Static_assert(offsetof(struct slot_hdr, flag[2 * SLOT_BUFS]) == SLOT_HDR,
	       "a short header's flags and open slots' length words");
_Static_assert(SLOT_LINES_PACKED * 8 <= SLOT_BUFS_MAX &&
	       SLOT_BUFS_MAX <= 64 * SLOT_COLLIDED_WORDS,
	       "a packed slot's buffers of 8 B, a bit each in collided");
_Static_assert(SLOT_ENTRIES >= SLOT_BUFS_OPEN + 64 / SLOT_ENTRY,
	       "buffer_free(): a call's entry is armed once the call a lap "
	       "of buffers before it was taken");

#define FLAG_LOST	(1ull << 63)	/* the sender has no data to give */

#define TRAILER_DATA	(1ull << 62)	/* the data is in the slot */
#define TRAILER_MSG	(1ull << 61)	/* it comes as a message */
#define TRAILER_LEN	((1ull << 48) - 1)	/* its bytes (an entry's 0:
						 * lost) */
_Static_assert(COOP_NBR_CANARY >> 63, "a trailer is never the canary");

static struct slot_hdr *slot_of(const struct nbr_plan *p, uint32_t x)
{
	return (struct slot_hdr *)p->slots->base[x];
}

/* x's collision bits' word of buffer b (the bit: b % 64) */
static uint64_t *collided_of(const struct nbr_slots *s, uint32_t x,
			     uint64_t b)
{
	return &s->collided[(uint64_t)x * SLOT_COLLIDED_WORDS + b / 64];
}

static struct slot_group *group_of(const struct nbr_plan *p, uint32_t x)
{
	return &p->slots->grp[p->slots->grp[x].lead];
}

/* call's buffer of x's slot */
static uint64_t buf_index(const struct nbr_plan *p, uint32_t x,
			  uint64_t call)
{
	return call & p->slots->at[x].buf_mask;
}

/* The byte after call's buffer: its data ends there, the canary word
 * being its last 8 bytes. */
static unsigned char *buf_end(const struct nbr_plan *p, uint32_t x,
			      uint64_t call)
{
	return p->slots->at[x].end0 + buf_index(p, x, call) *
				      p->slots->at[x].stride;
}

/* call's entry of x's open packed slot: after the buffers */
static uint64_t *entry_of(const struct nbr_plan *p, uint32_t x,
			  uint64_t call)
{
	return (uint64_t *)(void *)(p->slots->at[x].entry0 +
				    (call & (SLOT_ENTRIES - 1)) * SLOT_ENTRY);
}

/* x's group's canary (its leader's; an open packed slot's: the entry's
 * trailer) */
static uint64_t *canary_of(const struct nbr_plan *p, uint32_t x,
			   uint64_t call)
{
	if (p->slots->at[x].entries)
		return entry_of(p, x, call) + 1;
	return (uint64_t *)(void *)(buf_end(p, x, call) - 8);
}

/* Where x's data of len bytes begins in call's buffer. */
static unsigned char *data_of(const struct nbr_plan *p, uint32_t x,
			      uint64_t call, size_t len)
{
	return buf_end(p, x, call) - p->slots->grp[x].end_gap - len;
}

void coop_nbr_canary_arm(const struct nbr_plan *p, uint32_t x)
{
	uint64_t b, n = p->slots->at[x].entries ? SLOT_ENTRIES :
			p->slots->grp[x].bufs;

	for (b = 0; b < n; b++)
		*canary_of(p, x, b) = COOP_NBR_CANARY;
}

static void store_max(uint64_t *word, uint64_t v)
{
	if (__atomic_load_n(word, __ATOMIC_RELAXED) < v)
		__atomic_store_n(word, v, __ATOMIC_RELEASE);
}

void coop_nbr_slot_prefetch(const struct nbr_plan *p, uint32_t x,
			    uint64_t call, int write)
{
	const void *last = p->slots->at[x].entries ?
			   (const void *)canary_of(p, x, call) :
			   (const void *)data_of(p, x, call, 1);

	if (write)
		__builtin_prefetch(last, 1);
	else
		__builtin_prefetch(last, 0);
}

/* ---------------- RTR ---------------- */

/* The lesser of least and what node c (if any) published.  One load:
 * COOP_MIN would read the word twice, and a count that grew between the
 * two reads passed for the minimum - a sender then wrote over a buffer
 * a receiver had not taken (found by the static test under TSan). */
static uint64_t with_ready(const struct nbr_plan *p, uint64_t least,
			   uint32_t c)
{
	uint64_t ready;

	if (c == UINT32_MAX)
		return least;
	ready = LOAD_ACQ(&slot_of(p, c)->ready);
	return ready < least ? ready : least;
}

/* Receiver of x: publish its subtree's least consumed count (the tree's
 * nodes are groups: their leaders). */
static void tree_publish(const struct nbr_plan *p, uint32_t x)
{
	uint64_t least = group_of(p, x)->taking;
	uint32_t k;

	for (k = 0; k < p->slots->arity; k++)
		least = with_ready(p, least, coop_nbr_tree_child(p, x, k));
	store_max(&slot_of(p, x)->ready, least);
}

/* Did the receiver consume up to call - bufs, given its count? */
static int released_by(uint64_t consumed, uint64_t call, uint64_t bufs)
{
	return consumed + bufs > call;
}

/* Sender: is call's buffer of x free (the call a lap before it
 * consumed)? */
static int slot_free(const struct nbr_plan *p, uint32_t x, uint64_t call)
{
	uint32_t lead = p->slots->grp[x].lead;
	uint64_t b = buf_index(p, x, call);

	if (*collided_of(p->slots, lead, b) >> (b % 64) & 1)
		return released_by(LOAD_ACQ(&slot_of(p, x)->consumed), call,
				   p->slots->grp[x].bufs);
	return LOAD_ACQ(canary_of(p, x, call)) == COOP_NBR_CANARY;
}

/* Did a rank that receives one of sender from's slots die?  Then the
 * sender's RTR tree cannot complete. */
static int tree_broken(const struct coop_topo *t, const struct nbr_plan *p,
		       int from)
{
	const struct nbr_slots *s = p->slots;
	uint32_t i;

	for (i = s->first[from]; i < s->first[from + 1]; i++)
		if (t->ctx->peers[p->xf[s->order[i]].to].dead)
			return 1;
	return 0;
}

/* Did every receiver of our slots consume call - SLOT_BUFS, by the
 * tree (whose slots are never packed)? */
static int tree_ready(const struct coop_topo *t, struct nbr_plan *p,
		      uint64_t call)
{
	struct nbr_slots *s = p->slots;
	uint64_t least = UINT64_MAX;
	uint32_t k;

	if (released_by(s->tree_seen, call, SLOT_BUFS))
		return 1;
	for (k = 0; k < s->arity; k++)
		least = with_ready(p, least,
				   coop_nbr_tree_top(p, t->ctx->rank, k));
	s->tree_seen = least;
	return released_by(least, call, SLOT_BUFS);
}

/* Does an open slot take len bytes in one buffer? */
static int fits_a_buffer(const struct nbr_slots *s, uint32_t x,
			 uint64_t len)
{
	return len <= s->open && len <= s->cap[x];
}

/* May a block of len bytes stream through x's open slot: at most
 * NBR_STREAM_LIMIT, in fewer than 2^32 parts (a receiver's bound: the
 * sender's COOP_NEIGHBOR_STREAM_MAX is its own)? */
static int stream_ok(const struct nbr_slots *s, uint32_t x, uint64_t len)
{
	return len <= NBR_STREAM_LIMIT && (len - 1) / s->cap[x] < UINT32_MAX;
}

/* Does an open slot take a block of len bytes in parts of a buffer
 * (else one that does not fit comes as a message)? */
static int streams(const struct nbr_slots *s, uint32_t x, uint64_t len)
{
	return len <= s->stream && s->cap[x] && stream_ok(s, x, len);
}

uint32_t coop_nbr_open_parts(const struct nbr_plan *p, uint32_t x,
			     uint64_t total)
{
	uint64_t cap = p->slots->cap[x];

	return total > cap ? (uint32_t)((total + cap - 1) / cap) : 1;
}

uint32_t coop_nbr_open_turns(const struct nbr_plan *p, uint32_t x,
			     uint64_t len, int lost)
{
	const struct nbr_slots *s = p->slots;

	if (lost || fits_a_buffer(s, x, len) || !streams(s, x, len))
		return 1;
	return coop_nbr_open_parts(p, x, len);
}

/* An open packed slot's call of len bytes: its data in a buffer
 * (more than its entry's word holds)? */
static int in_buffer(const struct nbr_slots *s, uint32_t x, size_t len)
{
	return len > 8 && fits_a_buffer(s, x, len);
}

/* Sender of an open packed slot: did the receiver take the call a lap
 * of buffers before call?  That call's entry holds its trailer until
 * its line is re-armed, and no later call's yet (it is a lap of
 * entries after ours).  Then our entry is armed too: its last call
 * came before. */
static int buffer_free(const struct nbr_plan *p, uint32_t x, uint64_t call)
{
	uint64_t bufs = p->slots->grp[x].bufs;

	return call < bufs ||
	       LOAD_ACQ(canary_of(p, x, call - bufs)) == COOP_NBR_CANARY;
}

int coop_nbr_slot_ready(const struct coop_topo *t, struct nbr_plan *p,
			uint32_t x, uint64_t call, size_t len)
{
	const struct slot_group *g = group_of(p, x);

	/* a group's calls in turn, its leader after the others */
	if (g->writing != call ||
	    (p->slots->grp[x].lead == x && g->wrote + 1 < g->members))
		return 0;
	if (p->slots->at[x].entries && in_buffer(p->slots, x, len))
		return buffer_free(p, x, call);
	if (!p->slots->arity)
		return slot_free(p, x, call);
	if (tree_ready(t, p, call))
		return 1;
	/* a dead rank stalls the tree: then ask each receiver directly */
	return tree_broken(t, p, t->ctx->rank) && slot_free(p, x, call);
}

int coop_nbr_tree_hold(const struct coop_topo *t, struct nbr_plan *p,
		       uint32_t x, uint64_t call)
{
	tree_publish(p, x);
	/* a broken tree's root asks directly: no one needs our word */
	return LOAD_ACQ(&slot_of(p, x)->ready) > call ||
	       tree_broken(t, p, p->xf[x].from);
}

/* ---------------- RTE ---------------- */

/* A member that does not lead: its data only; the leader publishes. */
static void member_write(struct nbr_plan *p, uint32_t x, uint64_t call,
			 const void *src, size_t len, int lost)
{
	struct slot_group *g = group_of(p, x);

	if (!lost)
		memcpy(data_of(p, x, call, len), src, len);
	g->lost |= (uint8_t)!!lost;
	g->wrote++;
}

/* Leader x: publish call's data (len bytes ending at the buffer's end;
 * none when lost) with the canary word, stored last, and a flag when
 * that word is the canary or there is no data. */
static void publish(struct nbr_plan *p, uint32_t x, uint64_t call,
		    const void *src, size_t len, int lost)
{
	unsigned char *end = buf_end(p, x, call);
	struct slot_hdr *h = slot_of(p, x);
	struct nbr_slots *s = p->slots;
	size_t tail = COOP_MIN(len, (size_t)8);
	uint64_t b = buf_index(p, x, call), word = 0;
	uint64_t *collided = collided_of(s, x, b), bit = 1ull << (b % 64);

	s->grp[x].writing = call + 1;
	*collided |= bit;	/* unless the canary changes below */
	if (lost) {
		__atomic_store_n(&h->flag[b], (call + 1) | FLAG_LOST,
				 __ATOMIC_RELEASE);
		return;
	}
	if (len > tail)
		memcpy(end - len, src, len - tail);
	if (tail == 8)	/* one load, not a copy of a variable length */
		memcpy(&word, (const unsigned char *)src + len - 8, 8);
	else if (tail)
		memcpy((unsigned char *)&word + 8 - tail,
		       (const unsigned char *)src + len - tail, tail);
	__atomic_store_n((uint64_t *)(void *)(end - 8), word,
			 __ATOMIC_RELEASE);
	if (word != COOP_NBR_CANARY) {
		*collided &= ~bit;
		return;
	}
	s->flagged++;
	__atomic_store_n(&h->flag[b], call + 1, __ATOMIC_RELEASE);
}

void coop_nbr_slot_write(struct nbr_plan *p, uint32_t x, uint64_t call,
			 const void *src, size_t len, int lost)
{
	struct slot_group *g = &p->slots->grp[x];

	p->slots->sends++;
	if (g->lead != x) {
		member_write(p, x, call, src, len, lost);
		return;
	}
	lost |= g->lost;	/* one member's loss is the group's */
	g->lost = 0;
	g->wrote = 0;
	publish(p, x, call, src, len, lost);
}

/* Receiver of x's group, done with call: once it is its line's last,
 * arm the line's canaries again (the sender's RTR; the loads of the
 * data are done before), then store the count if the sender reads it:
 * after a collision (flag), or for any of a packed line's. */
static void rearm(struct nbr_plan *p, uint32_t x, uint64_t call,
		  uint64_t flag)
{
	uint64_t k = p->slots->grp[x].line_calls, c;

	if ((call + 1) & (k - 1))
		return;
	for (c = call + 1 - k; c <= call; c++)
		__atomic_store_n(canary_of(p, x, c), COOP_NBR_CANARY,
				 __ATOMIC_RELEASE);
	if (flag || k > 1)
		store_max(&slot_of(p, x)->consumed, call + 1);
}

/* Receiver: x is done with call (flag: the one the buffer had).  The
 * group's last member re-arms (the members' loads are done before). */
static void receiver_done(struct nbr_plan *p, uint32_t x, uint64_t call,
			  uint64_t flag)
{
	struct slot_group *g = group_of(p, x);

	p->slots->next[x] = call + 1;
	if (++g->took == g->members) {
		g->took = 0;
		g->taking = call + 1;
		rearm(p, x, call, flag);
	}
	if (p->slots->arity)
		tree_publish(p, x);
}

/* Receiver: nothing to take yet; the tree still hears from us. */
static int take_wait(const struct nbr_plan *p, uint32_t x)
{
	if (p->slots->arity)
		tree_publish(p, x);
	return SLOT_WAIT;
}

/* Receiver: did call's data of x's group come?  SLOT_WAIT, or
 * COOP_SUCCESS / COOP_ERR_PEER_DEAD (the sender had none) with *flag
 * the buffer's flag (0: the canary word changed). */
static int arrived(const struct nbr_plan *p, uint32_t x, uint64_t call,
		   uint64_t *flag)
{
	*flag = 0;
	if (LOAD_ACQ(canary_of(p, x, call)) != COOP_NBR_CANARY)
		return COOP_SUCCESS;
	*flag = LOAD_ACQ(&slot_of(p, x)->flag[buf_index(p, x, call)]);
	if ((*flag & ~FLAG_LOST) != call + 1)
		return SLOT_WAIT;
	return *flag & FLAG_LOST ? COOP_ERR_PEER_DEAD : COOP_SUCCESS;
}

int coop_nbr_slot_take(struct nbr_plan *p, uint32_t x, uint64_t call,
		       void *dst, size_t len)
{
	uint64_t flag;
	int rc;

	/* an earlier call takes it (or its group) first */
	if (p->slots->next[x] != call || group_of(p, x)->taking != call)
		return take_wait(p, x);
	rc = arrived(p, x, call, &flag);
	if (rc == SLOT_WAIT)
		return take_wait(p, x);
	if (!rc)
		memcpy(dst, data_of(p, x, call, len), len);
	receiver_done(p, x, call, flag);
	return rc;
}

void coop_nbr_slot_pass(struct nbr_plan *p, uint32_t x, uint64_t call)
{
	receiver_done(p, x, call, 0);
}

/* ---------------- open slots ---------------- */

/* Where call's data of len bytes is: an open packed slot's entry holds
 * up to 8 bytes, so the receiver finds them in the trailer's line. */
static unsigned char *open_data(const struct nbr_plan *p, uint32_t x,
				uint64_t call, size_t len)
{
	if (p->slots->at[x].entries && len <= 8)
		return (unsigned char *)entry_of(p, x, call) + 8 - len;
	return data_of(p, x, call, len);
}

/* An open slot's length word of call's buffer (packed slots have their
 * trailers in entries): after the collision flags. */
static uint64_t *len_word(const struct nbr_plan *p, uint32_t x, uint64_t call)
{
	return &slot_of(p, x)->flag[SLOT_BUFS + buf_index(p, x, call)];
}

/* An open slot's call: its length word, stored only when it changes (a
 * stream of one size reads it from its cache), then the data as in a
 * static slot, whose canary word publishes both; none when lost. */
static void canary_write(struct nbr_plan *p, uint32_t x, uint64_t call,
			 const void *src, size_t len, uint64_t trailer)
{
	uint64_t *word = len_word(p, x, call);

	if (trailer && __atomic_load_n(word, __ATOMIC_RELAXED) != trailer)
		__atomic_store_n(word, trailer, __ATOMIC_RELAXED);
	publish(p, x, call, src, len, !trailer);
}

/* An open packed slot's call: data of up to 8 bytes in the entry, more
 * in the buffer, then the trailer. */
static void entry_write(struct nbr_plan *p, uint32_t x, uint64_t call,
			const void *src, size_t len, uint64_t trailer)
{
	p->slots->grp[x].writing = call + 1;
	if (len)
		memcpy(open_data(p, x, call, len), src, len);
	__atomic_store_n(canary_of(p, x, call), trailer, __ATOMIC_RELEASE);
}

int coop_nbr_open_write(struct nbr_plan *p, uint32_t x, uint64_t turn,
			const void *src, size_t len, uint64_t total, int lost)
{
	uint64_t trailer = COOP_MIN(total, TRAILER_LEN);
	int rc = COOP_SUCCESS;

	if (lost) {
		trailer = 0;
		len = 0;
	} else if (fits_a_buffer(p->slots, x, total) ||
		   streams(p->slots, x, total)) {
		trailer |= TRAILER_DATA;
		p->slots->sends++;
	} else {
		trailer |= TRAILER_MSG;
		rc = SLOT_MSG;
		len = 0;
	}
	if (p->slots->at[x].entries)
		entry_write(p, x, turn, src, len, trailer);
	else
		canary_write(p, x, turn, src, len, trailer);
	return rc;
}

/* A receiver's view of one turn of an open slot: the block's bytes so
 * far (UINT64_MAX: none seen), where this turn's part begins, and the
 * receive block. */
struct open_dst {
	uint64_t *total;
	uint64_t off;
	unsigned char *buf;
	size_t len;
};

/* Receiver: turn's data as its trailer (or length word) tells, into
 * d's block; SLOT_MSG, SLOT_BAD, or as coop_nbr_open_take(). */
static int open_copy(const struct nbr_plan *p, uint32_t x, uint64_t turn,
		     uint64_t trailer, const struct open_dst *d)
{
	uint64_t sent = trailer & TRAILER_LEN, n;

	if ((trailer & ~TRAILER_LEN) == TRAILER_MSG && !d->off)
		return SLOT_MSG;
	if ((trailer & ~TRAILER_LEN) != TRAILER_DATA ||
	    (d->off && (d->off >= sent || sent != *d->total)) ||
	    (sent > p->slots->cap[x] && !stream_ok(p->slots, x, sent)))
		return SLOT_BAD;
	*d->total = sent;
	n = COOP_MIN(sent - d->off, p->slots->cap[x]);
	if (n && d->off < d->len)
		memcpy(d->buf + d->off, open_data(p, x, turn, n),
		       COOP_MIN(n, d->len - d->off));
	return sent == d->len ? COOP_SUCCESS :
	       sent > d->len ? COOP_ERR_TRUNCATE : COOP_ERR_COUNT;
}

static int canary_take(struct nbr_plan *p, uint32_t x, uint64_t turn,
		       const struct open_dst *d)
{
	uint64_t flag;
	int rc = arrived(p, x, turn, &flag);

	if (rc == SLOT_WAIT)
		return take_wait(p, x);
	if (!rc)
		rc = open_copy(p, x, turn, LOAD_ACQ(len_word(p, x, turn)), d);
	receiver_done(p, x, turn, flag);
	return rc;
}

static int entry_take(struct nbr_plan *p, uint32_t x, uint64_t turn,
		      const struct open_dst *d)
{
	uint64_t trailer = LOAD_ACQ(canary_of(p, x, turn));
	int rc;

	if (trailer == COOP_NBR_CANARY)
		return take_wait(p, x);
	rc = trailer ? open_copy(p, x, turn, trailer, d) : COOP_ERR_PEER_DEAD;
	receiver_done(p, x, turn, 0);
	return rc;
}

int coop_nbr_open_take(struct nbr_plan *p, uint32_t x, uint64_t turn,
		       uint64_t *total, uint64_t off, void *dst, size_t len)
{
	const struct open_dst d = { total, off, dst, len };

	if (p->slots->next[x] != turn)
		return take_wait(p, x);
	if (p->slots->at[x].entries)
		return entry_take(p, x, turn, &d);
	return canary_take(p, x, turn, &d);
}
