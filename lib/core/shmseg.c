/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* shmseg.c - see shmseg.h. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "provider.h"
#include "shmseg.h"

#define SEG_MAGIC 0x434d5347U	/* "CMSG" */
#define SEG_VERSION 7
#define PAGE 4096ULL
/* bounds of a peer's segment geometry we accept */
#define SEG_MAX_SLOTS 65536U
#define SEG_MAX_BOUNCE (64ULL << 20)

_Static_assert(sizeof(struct coop_seg_hdr) <= PAGE, "header page");
#define ALIGN_UP(x, a) (((x) + (a) - 1) & ~((a) - 1))

static void seg_name(char *buf, size_t n, uint64_t key, int rank)
{
	snprintf(buf, n, "/coopmpi-%016llx-seg-%d", (unsigned long long)key,
		 rank);
}

/* Binds s to the mapping base of a segment laid out as h (checked). */
static void seg_bind(struct coop_seg *s, void *base,
		     const struct coop_seg_hdr *h)
{
	s->base = base;
	s->bytes = h->bytes;
	s->hdr = base;
	s->nbounce = h->nbounce;
	s->nwork = h->nwork;
	s->bounce_size = h->bounce_size;
	s->work = (struct coop_work_slot *)((char *)base + h->off_work);
	s->flags = (struct coop_bounce_flag *)((char *)base + h->off_flags);
	s->bounce = (unsigned char *)base + h->off_bounce;
}

static void seg_layout(struct coop_seg_hdr *h, uint32_t nbounce,
		       size_t bounce_size, uint32_t nwork)
{
	uint64_t off = PAGE;

	h->magic = SEG_MAGIC;
	h->version = SEG_VERSION;
	h->nbounce = nbounce;
	h->nwork = nwork;
	h->bounce_size = bounce_size;
	h->off_work = off;
	off = ALIGN_UP(off + nwork * sizeof(struct coop_work_slot), PAGE);
	h->off_flags = off;
	off = ALIGN_UP(off + nbounce * sizeof(struct coop_bounce_flag), PAGE);
	h->off_bounce = off;
	h->bytes = ALIGN_UP(off + (uint64_t)nbounce * bounce_size, PAGE);
}

/* h->cpus: our affinity, or every online CPU if we cannot read it */
static void seg_affinity(struct coop_seg_hdr *h)
{
	long cpu, n = COOP_SEG_CPU_WORDS * 64, online;
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set)) {
		CPU_ZERO(&set);
		online = sysconf(_SC_NPROCESSORS_ONLN);
		n = COOP_MIN(n, online);
		for (cpu = 0; cpu < n; cpu++)
			CPU_SET(cpu, &set);
	}
	for (cpu = 0; cpu < COOP_SEG_CPU_WORDS * 64 && cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set))
			h->cpus[cpu / 64] |= 1ULL << (cpu % 64);
}

static int seg_open_fd(const char *name)
{
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);

	if (fd < 0 && errno == EEXIST) {
		shm_unlink(name);
		fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	}
	return fd;
}

void *coop_shm_file_create(const char *name, uint64_t bytes, int *err)
{
	void *m;
	int fd = seg_open_fd(name);

	*err = fd < 0 ? -errno : 0;
	if (fd < 0)
		return NULL;
	/* sparse: pages are only allocated where they are written */
	if (ftruncate(fd, (off_t)bytes)) {
		close(fd);
		shm_unlink(name);
		*err = -ENOMEM;
		return NULL;
	}
	m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		shm_unlink(name);
		*err = -ENOMEM;
		return NULL;
	}
	return m;
}

int coop_seg_create(struct coop_seg *s, uint64_t key, int rank,
		    uint32_t nbounce, size_t bounce_size, uint32_t nwork)
{
	struct coop_seg_hdr h;
	void *m;
	uint32_t i;
	int err;

	memset(s, 0, sizeof(*s));
	memset(&h, 0, sizeof(h));
	seg_layout(&h, nbounce, ALIGN_UP(bounce_size, 64), nwork);
	seg_name(s->name, sizeof(s->name), key, rank);
	m = coop_shm_file_create(s->name, h.bytes, &err);
	if (!m)
		return err;
	h.owner_pid = (uint32_t)getpid();
	seg_affinity(&h);
	memcpy(m, &h, sizeof(h));
	seg_bind(s, m, &h);
	s->work_free = malloc(nwork * sizeof(uint32_t));
	s->work_peer = malloc(nwork * sizeof(int32_t));
	s->work_refs = calloc(nwork, 1);
	if (!s->work_free || !s->work_peer || !s->work_refs) {
		coop_seg_destroy(s);
		return -ENOMEM;
	}
	for (i = 0; i < nwork; i++) {
		s->work_free[i] = nwork - 1 - i;
		s->work_peer[i] = -1;
	}
	s->nwork_free = nwork;
	s->neager = nbounce - nbounce / 4;
	s->frag_next = s->neager;
	return 0;
}

/* Is h, read from a file of size bytes, a layout seg_layout() makes? */
static int seg_header_sane(const struct coop_seg_hdr *h, off_t bytes)
{
	struct coop_seg_hdr l;

	if (h->magic != SEG_MAGIC || h->version != SEG_VERSION ||
	    h->nbounce > SEG_MAX_SLOTS || h->nwork > SEG_MAX_SLOTS ||
	    h->bounce_size > SEG_MAX_BOUNCE || h->bounce_size % 64)
		return 0;
	memset(&l, 0, sizeof(l));
	seg_layout(&l, h->nbounce, h->bounce_size, h->nwork);
	return l.off_work == h->off_work && l.off_flags == h->off_flags &&
	       l.off_bounce == h->off_bounce && l.bytes == h->bytes &&
	       (uint64_t)bytes >= h->bytes;
}

void *coop_shm_file_map(const char *name, void *hdr, size_t hdr_len,
			uint64_t (*check)(const void *hdr, uint64_t size,
					  const void *arg),
			const void *arg, int *err)
{
	struct stat st;
	uint64_t bytes = 0;
	void *m;
	int fd = shm_open(name, O_RDWR, 0);

	*err = fd < 0 ? -errno : 0;
	if (fd < 0)
		return NULL;
	if (pread(fd, hdr, hdr_len, 0) == (ssize_t)hdr_len && !fstat(fd, &st))
		bytes = check(hdr, (uint64_t)st.st_size, arg);
	m = bytes ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			 0) : MAP_FAILED;
	close(fd);
	if (m == MAP_FAILED) {
		*err = bytes ? -ENOMEM : -EINVAL;
		return NULL;
	}
	return m;
}

static uint64_t seg_check(const void *hdr, uint64_t size, const void *arg)
{
	const struct coop_seg_hdr *h = hdr;

	(void)arg;
	return seg_header_sane(h, (off_t)size) ? h->bytes : 0;
}

int coop_seg_map(struct coop_seg *s, uint64_t key, int rank)
{
	struct coop_seg_hdr h;
	void *m;
	int err;

	memset(s, 0, sizeof(*s));
	seg_name(s->name, sizeof(s->name), key, rank);
	m = coop_shm_file_map(s->name, &h, sizeof(h), seg_check, NULL, &err);
	if (!m)
		return err;
	seg_bind(s, m, &h);
	return 0;
}

/* Is process pid alive?  A zombie is not (its parent has yet to reap
 * it), and another user's process counts as alive. */
static int pid_alive(pid_t pid)
{
	char path[32], stat[256], *p;
	FILE *f;

	if (kill(pid, 0) && errno == ESRCH)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 1;
	p = fgets(stat, sizeof(stat), f) ? strrchr(stat, ')') : NULL;
	fclose(f);
	return !p || p[1] != ' ' || p[2] != 'Z';
}

/* Is the owner of the segment file name alive (or unknown: kept)? */
static int seg_owner_alive(const char *path)
{
	struct coop_seg_hdr h;
	int fd = open(path, O_RDONLY | O_CLOEXEC), alive = 1;

	if (fd < 0)
		return errno != ENOENT;
	if (pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
	    h.magic == SEG_MAGIC && h.version == SEG_VERSION && h.owner_pid)
		alive = pid_alive((pid_t)h.owner_pid);
	close(fd);
	return alive;
}

/* Does any segment of domain key have a live owner? */
static int domain_alive(uint64_t key)
{
	char pat[64];
	glob_t g;
	size_t i;
	int alive = 0;

	snprintf(pat, sizeof(pat), "/dev/shm/coopmpi-%016llx-seg-*",
		 (unsigned long long)key);
	if (glob(pat, 0, NULL, &g))
		return 0;
	for (i = 0; i < g.gl_pathc && !alive; i++)
		alive = seg_owner_alive(g.gl_pathv[i]);
	globfree(&g);
	return alive;
}

int coop_seg_domain_lock(uint64_t key)
{
	char name[64];

	snprintf(name, sizeof(name), "/coopmpi-%016llx-lock",
		 (unsigned long long)key);
	return coop_shm_lock(name);
}

int coop_seg_reap_locked(uint64_t key)
{
	char pat[64];
	glob_t g;
	size_t i;
	int n = 0;

	if (domain_alive(key))
		return 0;
	snprintf(pat, sizeof(pat), "/dev/shm/coopmpi-%016llx-*",
		 (unsigned long long)key);
	if (glob(pat, 0, NULL, &g))
		return 0;
	for (i = 0; i < g.gl_pathc; i++)
		n += !unlink(g.gl_pathv[i]);
	globfree(&g);
	return n;
}

static int reap_domain(uint64_t key)
{
	int fd = coop_seg_domain_lock(key), n;

	if (fd < 0)
		return 0;
	n = coop_seg_reap_locked(key);
	close(fd);
	return n;
}

int coop_seg_reap(uint64_t key)
{
	unsigned long long k, last = 0;
	glob_t g;
	size_t i;
	int n = 0;

	if (key)
		return reap_domain(key);
	if (glob("/dev/shm/coopmpi-*-*", 0, NULL, &g))
		return 0;
	/* sorted: a domain's files are together */
	for (i = 0; i < g.gl_pathc; i++)
		if (sscanf(g.gl_pathv[i], "/dev/shm/coopmpi-%16llx-", &k) == 1 &&
		    k && k != last)
			n += reap_domain(last = k);
	globfree(&g);
	return n;
}

void coop_seg_publish(struct coop_seg *s, const void *addr, size_t len,
		      uint32_t instance)
{
	memcpy(s->hdr->addr, addr, len);
	s->hdr->addr_len = (uint32_t)len;
	__atomic_store_n(&s->hdr->instance, instance, __ATOMIC_RELEASE);
}

int coop_seg_peer_addr(uint64_t key, int rank, uint32_t instance,
		       void *addr, size_t *len)
{
	struct coop_seg s;
	int rc = coop_seg_map(&s, key, rank);

	if (rc)
		return rc == -ENOENT ? -ESRCH : rc;
	if (__atomic_load_n(&s.hdr->instance, __ATOMIC_ACQUIRE) != instance)
		rc = -ESRCH;
	else if (s.hdr->addr_len > *len || s.hdr->addr_len > COOP_SEG_ADDR_MAX)
		rc = -ENOSPC;
	else
		memcpy(addr, s.hdr->addr, (*len = s.hdr->addr_len));
	coop_seg_unmap(&s);
	return rc;
}

void coop_seg_unmap(struct coop_seg *s)
{
	if (s->base)
		munmap(s->base, s->bytes);
	free(s->work_free);
	free(s->work_peer);
	free(s->work_refs);
	memset(s, 0, sizeof(*s));
}

void coop_seg_destroy(struct coop_seg *s)
{
	if (s->name[0])
		shm_unlink(s->name);
	coop_seg_unmap(s);
}

static int claim(struct coop_seg *s, uint32_t i)
{
	uint32_t zero = 0;

	return __atomic_load_n(&s->flags[i].busy, __ATOMIC_ACQUIRE) == 0 &&
	       __atomic_compare_exchange_n(&s->flags[i].busy, &zero, 1, 0,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

int coop_seg_bounce_alloc(struct coop_seg *s, int frag)
{
	uint32_t lo = frag ? s->neager : 0;
	uint32_t n = frag ? s->nbounce - s->neager : s->neager;
	uint32_t *cur = frag ? &s->frag_next : &s->eager_next;
	uint32_t k;

	for (k = 0; k < n; k++) {
		uint32_t i = lo + (*cur - lo + k) % n;

		if (claim(s, i)) {
			*cur = lo + (i - lo + 1) % n;
			return (int)i;
		}
	}
	return -1;
}

int coop_seg_work_alloc(struct coop_seg *s, uint64_t len, uint64_t chunk,
			uint64_t split, int peer)
{
	struct coop_work_slot *w;
	uint32_t i;

	if (!s->nwork_free)
		return -1;
	i = s->work_free[--s->nwork_free];
	s->work_peer[i] = peer;
	s->work_refs[i] = 2;
	w = &s->work[i];
	w->len = len;
	w->chunk = chunk;
	w->split = split;
	__atomic_store_n(&w->snext, split, __ATOMIC_RELAXED);
	__atomic_store_n(&w->done, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&w->next, 0, __ATOMIC_RELEASE);
	return (int)i;
}

void coop_seg_work_put(struct coop_seg *s, uint32_t slot, int peer)
{
	if (slot < s->nwork && s->work_peer[slot] == peer &&
	    --s->work_refs[slot] == 0)
		coop_seg_work_free(s, slot, peer);
}

int coop_seg_work_free(struct coop_seg *s, uint32_t slot, int peer)
{
	if (slot >= s->nwork || s->work_peer[slot] != peer)
		return -1;
	s->work_peer[slot] = -1;
	s->work_refs[slot] = 0;
	s->work_free[s->nwork_free++] = slot;
	return 0;
}

void coop_seg_work_free_peer(struct coop_seg *s, int peer)
{
	uint32_t i;

	for (i = 0; i < s->nwork; i++)
		if (s->work_peer[i] == peer)
			coop_seg_work_free(s, i, peer);
}
