/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hca_table.c - the HCA engine's published table (hca_table.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "atomic.h"
#include "hca_table.h"
#include "provider.h"

#define READ_TRIES 1000	/* reads of an entry the owner keeps writing */

static size_t table_bytes(uint32_t nranks)
{
	size_t n = sizeof(struct hca_table_hdr) +
		   (size_t)nranks * sizeof(struct hca_qp_info);

	n = (n + 63) & ~(size_t)63;
	return n + HCA_KEYS * sizeof(struct hca_key);
}

static void table_layout(struct hca_table *t, uint32_t nranks)
{
	size_t qps = sizeof(struct hca_table_hdr) +
		     (size_t)nranks * sizeof(struct hca_qp_info);

	t->hdr = t->map;
	t->qp = (struct hca_qp_info *)(t->hdr + 1);
	t->keys = (struct hca_key *)((char *)t->map +
				     ((qps + 63) & ~(size_t)63));
}

int hca_table_create(struct hca_table *t, uint32_t nranks, uint32_t rank)
{
	memset(t, 0, sizeof(*t));
	t->fd = memfd_create("coopmpi-hca", MFD_CLOEXEC);
	if (t->fd < 0)
		return -errno;
	t->bytes = table_bytes(nranks);
	if (ftruncate(t->fd, (off_t)t->bytes))
		goto fail;
	t->map = mmap(NULL, t->bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		      t->fd, 0);
	if (t->map == MAP_FAILED)
		goto fail;
	table_layout(t, nranks);
	t->hdr->nranks = nranks;
	t->hdr->rank = rank;
	return 0;
fail:
	close(t->fd);
	t->fd = -1;
	t->map = NULL;
	return -errno;
}

void hca_table_publish(struct hca_table *t, const struct hca_table_hdr *h)
{
	struct hca_table_hdr *d = t->hdr;

	d->version = HCA_TABLE_VERSION;
	memcpy(d->gid, h->gid, sizeof(d->gid));
	d->lid = h->lid;
	d->port = h->port;
	d->mtu = h->mtu;
	d->is_global = h->is_global;
	__atomic_store_n(&d->magic, HCA_TABLE_MAGIC, __ATOMIC_RELEASE);
}

static uint32_t key_hash(uint64_t cookie)
{
	return (uint32_t)((cookie * 0x9e3779b97f4a7c15ULL) >> 40) &
	       (HCA_KEYS - 1);
}

int hca_table_add(struct hca_table *t, uint64_t cookie, uint64_t addr,
		  uint64_t len, uint32_t rkey)
{
	uint32_t h = key_hash(cookie), i;

	for (i = 0; i < HCA_KEYS; i++) {
		struct hca_key *e = &t->keys[(h + i) & (HCA_KEYS - 1)];

		if (e->state == HCA_KEY_LIVE)
			continue;
		coop_seq_write_begin(&e->seq);
		__atomic_store_n(&e->cookie, cookie, __ATOMIC_RELAXED);
		__atomic_store_n(&e->addr, addr, __ATOMIC_RELAXED);
		__atomic_store_n(&e->len, len, __ATOMIC_RELAXED);
		__atomic_store_n(&e->rkey, rkey, __ATOMIC_RELAXED);
		__atomic_store_n(&e->state, HCA_KEY_LIVE, __ATOMIC_RELAXED);
		coop_seq_write_end(&e->seq);
		return (int)((h + i) & (HCA_KEYS - 1));
	}
	return -ENOSPC;
}

void hca_table_remove(struct hca_table *t, int i)
{
	struct hca_key *e = &t->keys[i];

	coop_seq_write_begin(&e->seq);
	__atomic_store_n(&e->state, HCA_KEY_DEAD, __ATOMIC_RELAXED);
	coop_seq_write_end(&e->seq);
}

/* One consistent read of entry e into *out: 0, or -EAGAIN. */
static int entry_read(const struct hca_key *e, struct hca_key *out)
{
	int tries;

	for (tries = 0; tries < READ_TRIES; tries++) {
		uint32_t s1 = coop_seq_read_begin(&e->seq);

		out->state = __atomic_load_n(&e->state, __ATOMIC_RELAXED);
		out->cookie = __atomic_load_n(&e->cookie, __ATOMIC_RELAXED);
		out->addr = __atomic_load_n(&e->addr, __ATOMIC_RELAXED);
		out->len = __atomic_load_n(&e->len, __ATOMIC_RELAXED);
		out->rkey = __atomic_load_n(&e->rkey, __ATOMIC_RELAXED);
		if (!coop_seq_read_retry(&e->seq, s1))
			return 0;
	}
	return -EAGAIN;
}

int hca_table_lookup(const struct hca_table *t, uint64_t cookie,
		     uint64_t off, uint64_t len, uint64_t *addr,
		     uint32_t *rkey)
{
	uint32_t h = key_hash(cookie), i;
	struct hca_key e;

	for (i = 0; i < HCA_KEYS; i++) {
		if (entry_read(&t->keys[(h + i) & (HCA_KEYS - 1)], &e))
			return -EAGAIN;
		if (e.state == HCA_KEY_EMPTY)
			break;
		if (e.state != HCA_KEY_LIVE || e.cookie != cookie ||
		    off > e.len || len > e.len - off)
			continue;
		*addr = e.addr + off;
		*rkey = e.rkey;
		return 0;
	}
	return -ENOENT;
}

int hca_table_map(struct hca_table *t, int pid, int fd, uint32_t nranks,
		  uint32_t rank)
{
	int rc = -EPROTO;

	memset(t, 0, sizeof(*t));
	t->fd = -1;
	t->bytes = table_bytes(nranks);
	fd = coop_peer_fd_open(pid, fd, O_RDONLY, t->bytes);
	if (fd < 0)
		return fd;
	t->map = mmap(NULL, t->bytes, PROT_READ, MAP_SHARED, fd, 0);
	if (t->map == MAP_FAILED) {
		rc = -errno;
		t->map = NULL;
		goto out;
	}
	table_layout(t, nranks);
	if (__atomic_load_n(&t->hdr->magic, __ATOMIC_ACQUIRE) !=
	    HCA_TABLE_MAGIC || t->hdr->version != HCA_TABLE_VERSION ||
	    t->hdr->nranks != nranks || t->hdr->rank != rank) {
		hca_table_unmap(t);
		goto out;
	}
	rc = 0;
out:
	close(fd);
	return rc;
}

void hca_table_unmap(struct hca_table *t)
{
	if (t->map)
		munmap(t->map, t->bytes);
	if (t->fd >= 0)
		close(t->fd);
	memset(t, 0, sizeof(*t));
	t->fd = -1;
}
