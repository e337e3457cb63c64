/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* util.h - small helpers shared by all of libcoopmpi: intrusive lists,
 * branch hints, cache-line constants, logging. */
#ifndef COOP_UTIL_H
#define COOP_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define COOP_CACHELINE 64
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
/* They evaluate an argument twice: pass no call and no load of a word
 * another process or thread changes (coll/canary.c, with_ready()). */
#define COOP_MIN(a, b) ((a) < (b) ? (a) : (b))
#define COOP_MAX(a, b) ((a) > (b) ? (a) : (b))
#define container_of(p, type, member) \
	((type *)((char *)(p) - offsetof(type, member)))

/* Circular doubly-linked list with a sentinel head. */
struct dlist {
	struct dlist *prev, *next;
};

static inline void dlist_init(struct dlist *h)
{
	h->prev = h->next = h;
}

static inline int dlist_empty(const struct dlist *h)
{
	return h->next == h;
}

static inline void dlist_add_tail(struct dlist *h, struct dlist *n)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}

static inline void dlist_del(struct dlist *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = n->next = n;
}

/* A node that is all zero, or was dlist_init'ed or dlist_del'ed, is
 * "unlinked" (zeroed objects need no list set-up). */
static inline int dlist_linked(const struct dlist *n)
{
	return n->next && n->next != n;
}

#define dlist_for_each(pos, head) \
	for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)
#define dlist_for_each_safe(pos, tmp, head) \
	for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); \
	     (pos) = (tmp), (tmp) = (pos)->next)

/* Logging: one line on stderr, prefixed "coopmpi[rank]: ". */
void coop_log(int rank, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* CLOCK_MONOTONIC in ns: one clock for every process of the node. */
static inline uint64_t coop_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

#endif /* COOP_UTIL_H */
