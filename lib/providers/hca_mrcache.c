/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hca_mrcache.c - the HCA engine's memory registrations, kept for the
 * next message on the same buffer.
 *
 * An ibv MR pins the pages its range had when it was made.  A buffer
 * freed and allocated again at the same address has other pages, and
 * the adapter would move the old ones: a kept MR may be used again only
 * while the process's page tables over its range have not changed since
 * its pages were pinned.  The base provider watches the range for that
 * (provider.h, watch: with the driver, a window on a region of our own,
 * whose state word the driver's MMU notifier moves on every munmap,
 * mremap, MADV_DONTNEED, copy-on-write or migration over it): the word
 * is read before the MR is made and again after, and an MR is kept only
 * if the two agree; it is used again only while the word still has that
 * value.  Without a watch (the shm provider, COOP_WINDOWS=0) nothing is
 * kept and every message registers its buffers.  A kept MR serves any
 * range inside its own for a put's source, but only its own range for a
 * region peers write into: its key opens no more to their adapters than
 * the region does.
 *
 * COOP_HCA_MR_CACHE kept MRs at most, the least recently used one
 * unused dropped for a new one; unused ones are dropped too when the
 * adapter refuses a registration (pinned memory, RLIMIT_MEMLOCK), and
 * the registration is tried once more.  A kept MR pins its pages and
 * holds one of the endpoint's windows until dropped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hca.h"
#include "util.h"

/* A word read then says nothing of the pages: a change under way, or
 * the watch gone. */
#define WATCH_UNSTABLE (1 | COOPMPI_WINDOW_DEAD | COOPMPI_WINDOW_HOLE)

static uint64_t watch_word(const struct hca_mr *m)
{
	return __atomic_load_n(m->watch.word, __ATOMIC_ACQUIRE);
}

int hca_mr_current(const struct hca_mr *m)
{
	return m->watch.word && watch_word(m) == m->seq;
}

#define REMOTE_ACCESS (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

/* May m serve [addr, addr + len) with access?  A key peers use must
 * open no more than that range to their adapters: the same range. */
static int mr_covers(const struct hca_mr *m, uintptr_t addr, size_t len,
		     int access)
{
	if (!m->mr || (m->access & access) != access)
		return 0;
	if (access & REMOTE_ACCESS)
		return m->addr == addr && m->len == len;
	return m->addr <= addr && addr + len <= m->addr + m->len;
}

static void mr_drop(struct hca *h, struct hca_mr *m)
{
	ibv_dereg_mr(m->mr);
	if (m->watch.word)
		h->base->unwatch(h->prov, &m->watch);
	memset(m, 0, sizeof(*m));
}

/* Drop the unused kept MRs: n of them, or all (n < 0); how many. */
static int drop_unused(struct hca *h, int n)
{
	struct hca_mrcache *c = &h->mrc;
	struct hca_mr *m, *oldest;
	int dropped = 0;

	while (n < 0 || dropped < n) {
		oldest = NULL;
		for (m = c->e; m < c->e + c->n; m++)
			if (m->mr && !m->refs &&
			    (!oldest || m->used < oldest->used))
				oldest = m;
		if (!oldest)
			break;
		mr_drop(h, oldest);
		dropped++;
	}
	return dropped;
}

static struct ibv_mr *reg_mr(struct hca *h, uintptr_t addr, size_t len,
			     int access)
{
	struct ibv_mr *mr = ibv_reg_mr(h->pd, (void *)addr, len, access);

	if (!mr && errno == ENOMEM && drop_unused(h, -1))
		mr = ibv_reg_mr(h->pd, (void *)addr, len, access);
	if (mr)
		h->prov->engine_regs++;
	return mr;
}

/*
 * Make m's MR over [addr, addr + len), watched if it is to be kept and a
 * watch is to be had: kept (m->watch.word set) only if no change of the
 * range was under way before the pages were pinned and none came while
 * they were.
 */
static int mr_make(struct hca *h, struct hca_mr *m, uintptr_t addr,
		   size_t len, int access, int keep)
{
	const struct coop_provider_ops *b = h->base;
	uint64_t before = 1;

	if (keep && b->watch && !b->watch(h->prov, (void *)addr, len,
					  &m->watch))
		before = watch_word(m);
	m->mr = reg_mr(h, addr, len, access);
	if (!m->mr) {
		int e = errno ? errno : ENOMEM;

		if (m->watch.word)
			b->unwatch(h->prov, &m->watch);
		memset(m, 0, sizeof(*m));
		return -e;
	}
	if (m->watch.word && (before & WATCH_UNSTABLE ||
			      before != watch_word(m)))
		b->unwatch(h->prov, &m->watch);	/* m->watch.word NULL */
	m->addr = addr;
	m->len = len;
	m->access = access;
	m->seq = before;
	m->refs = 1;
	return 0;
}

/* A free place in the cache, the least recently used unused MR's if
 * none; NULL when every kept MR is in use. */
static struct hca_mr *free_entry(struct hca *h)
{
	struct hca_mrcache *c = &h->mrc;
	struct hca_mr *m;

	for (m = c->e; m < c->e + c->n; m++)
		if (!m->mr)
			return m;
	return drop_unused(h, 1) ? free_entry(h) : NULL;
}

/* A kept MR over the range that is still current, now in use; a stale
 * unused one on the way is dropped. */
static struct hca_mr *find_current(struct hca *h, uintptr_t addr,
				   size_t len, int access)
{
	struct hca_mrcache *c = &h->mrc;
	struct hca_mr *m;

	for (m = c->e; m < c->e + c->n; m++) {
		if (!mr_covers(m, addr, len, access))
			continue;
		if (hca_mr_current(m))
			return m;
		if (!m->refs)
			mr_drop(h, m);
	}
	return NULL;
}

struct hca_mr *hca_mr_get(struct hca *h, const void *addr, size_t len,
			  int access)
{
	struct hca_mrcache *c = &h->mrc;
	struct hca_mr *m = find_current(h, (uintptr_t)addr, len, access);
	int rc, loose;

	if (m) {
		m->refs++;
		m->used = ++c->clock;
		h->prov->engine_regs_kept++;
		return m;
	}
	m = free_entry(h);
	loose = !m;
	if (loose && !(m = calloc(1, sizeof(*m))))
		return NULL;
	rc = mr_make(h, m, (uintptr_t)addr, len, access, !loose);
	if (rc) {
		if (loose)
			free(m);
		errno = -rc;
		return NULL;
	}
	m->loose = (uint8_t)loose;
	m->used = ++c->clock;
	return m;
}

void hca_mr_put(struct hca *h, struct hca_mr *m)
{
	if (--m->refs)
		return;
	if (m->loose) {
		mr_drop(h, m);
		free(m);
	} else if (!m->watch.word) {
		mr_drop(h, m);	/* not to be kept: its place is free */
	}
}

int hca_mrcache_init(struct hca *h, unsigned n)
{
	h->mrc.e = n ? calloc(n, sizeof(*h->mrc.e)) : NULL;
	h->mrc.n = h->mrc.e ? n : 0;
	return n && !h->mrc.e ? -ENOMEM : 0;
}

void hca_mrcache_fini(struct hca *h)
{
	struct hca_mrcache *c = &h->mrc;
	struct hca_mr *m;

	for (m = c->e; m < c->e + c->n; m++)
		if (m->mr)
			mr_drop(h, m);
	free(c->e);
	memset(c, 0, sizeof(*c));
}
