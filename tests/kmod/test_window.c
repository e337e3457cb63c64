// SPDX-License-Identifier: GPL-2.0
/*
 * test_window.c - windows: a peer's region mapped and copied with plain
 * loads and stores.  The new data after the owner frees and maps again at
 * the same address, writes, deregistration and owner exit (zeros, no
 * signal), holes, a copier racing the owner's remaps (no accepted copy
 * mixes old and new data), refusals, the per-endpoint bound, fork,
 * windows mapped over each other's regions (invalidations end), and a
 * copier closing while the owner exits.
 */
#include "helpers.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG 4096UL
#define WLEN (16 * PG)

struct win {
	struct coopmpi_window_attach a;
	uint8_t *map;
	const uint64_t *state;	/* the endpoint's state page */
	int fd;
};

static int wattach(int fd, uint64_t cookie, uint32_t flags,
		   struct coopmpi_window_attach *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->flags = flags;
	a->cookie = cookie;
	return cm_ioctl(fd, COOPMPI_IOC_WINDOW_ATTACH, a);
}

static int wdetach(int fd, uint32_t handle)
{
	struct coopmpi_window_detach d;

	memset(&d, 0, sizeof(d));
	d.size = sizeof(d);
	d.handle = handle;
	return cm_ioctl(fd, COOPMPI_IOC_WINDOW_DETACH, &d);
}

static void *wmap(int fd, uint32_t handle, size_t len, int prot, int flags)
{
	return mmap(NULL, len, prot, flags, fd,
		    (off_t)COOPMPI_MMAP_WINDOW(handle));
}

static const uint64_t *state_map(int fd)
{
	void *p = mmap(NULL, PG, PROT_READ, MAP_SHARED, fd,
		       (off_t)COOPMPI_MMAP_WINDOW_STATE);

	REQUIRE(p != MAP_FAILED, "mmap of the window state: %s",
		strerror(errno));
	return p;
}

/* Attaches and maps all of it; asserts. */
static void win_open(struct win *w, int fd, uint64_t cookie, uint32_t flags)
{
	int prot = PROT_READ | (flags & COOPMPI_WINDOW_WRITE ? PROT_WRITE : 0);

	REQUIRE_OK(wattach(fd, cookie, flags, &w->a));
	w->fd = fd;
	w->map = wmap(fd, w->a.handle, w->a.map_bytes, prot, MAP_SHARED);
	REQUIRE(w->map != MAP_FAILED, "mmap of window %u: %s", w->a.handle,
		strerror(errno));
	w->state = state_map(fd);
}

static uint64_t win_word(const struct win *w)
{
	return __atomic_load_n(&w->state[w->a.state_index], __ATOMIC_ACQUIRE);
}

/* The uapi's copier protocol: true when @dst holds what the owner had. */
static bool win_copy(const struct win *w, size_t off, void *dst, size_t len)
{
	uint64_t s0 = win_word(w);

	if (s0 & (1 | COOPMPI_WINDOW_DEAD | COOPMPI_WINDOW_HOLE))
		return false;
	memcpy(dst, w->map + w->a.page_offset + off, len);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return __atomic_load_n(&w->state[w->a.state_index],
			       __ATOMIC_RELAXED) == s0;
}

static void on_signal(int sig)
{
	static const char msg[] = "a window access raised a signal\n";

	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(sig == SIGBUS ? 71 : 72);
}

static void no_signals(void)
{
	signal(SIGBUS, on_signal);
	signal(SIGSEGV, on_signal);
}

struct pair {
	uint64_t key;
	int owner, copier;
	uint8_t *buf;
};

static void pair_init(struct pair *p, size_t len, uint32_t flags,
		      uint64_t *cookie)
{
	p->key = cm_unique_key();
	p->owner = cm_open_join(p->key, COOPMPI_JOIN_CREATE, NULL);
	p->copier = cm_open_join(p->key, COOPMPI_JOIN_EXISTING, NULL);
	p->buf = cm_map_anon(len);
	cm_fill_pattern(p->buf, len, 1);
	REQUIRE_OK(cm_reg(p->owner, p->buf, len, flags, cookie));
	no_signals();
}

/* Owner memory freed and mapped again at the same address, twice. */
START_TEST(test_window_remap)
{
	const uint32_t ro = COOPMPI_REGION_READ | COOPMPI_REGION_MAP;
	uint8_t got[WLEN];
	struct pair p;
	struct win w;
	uint64_t c, s;

	REQUIRE(cm_info_cache.max_windows >= 2,
		"INFO.max_windows %u: the test kernels have MMU notifiers",
		cm_info_cache.max_windows);
	pair_init(&p, WLEN, ro, &c);
	win_open(&w, p.copier, c, 0);
	REQUIRE(w.a.map_bytes == WLEN && w.a.page_offset == 0,
		"map_bytes %llu page_offset %u",
		(unsigned long long)w.a.map_bytes, w.a.page_offset);
	REQUIRE(win_word(&w) == 0, "fresh state word %#llx",
		(unsigned long long)win_word(&w));
	REQUIRE(win_copy(&w, 0, got, WLEN), "copy of a quiet window refused");
	REQUIRE(cm_check_pattern(got, WLEN, 1, 0) < 0, "window data differ");

	for (uint64_t seed = 2; seed < 4; seed++) {
		s = win_word(&w);
		cm_unmap(p.buf, WLEN);
		REQUIRE(mmap(p.buf, WLEN, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
			p.buf, "mmap at the same address: %s", strerror(errno));
		cm_fill_pattern(p.buf, WLEN, seed);
		REQUIRE(win_word(&w) >= s + 2 && !(win_word(&w) & 1),
			"state word %#llx after the owner's munmap (was %#llx)",
			(unsigned long long)win_word(&w),
			(unsigned long long)s);
		REQUIRE(win_copy(&w, 0, got, WLEN), "copy refused");
		REQUIRE(cm_check_pattern(got, WLEN, seed, 0) < 0,
			"after the owner's new mapping %llu the window shows the old data",
			(unsigned long long)seed);
	}
}
END_TEST

/* A region not starting on a page, written through a writable window. */
START_TEST(test_window_write)
{
	const uint32_t rw = COOPMPI_REGION_READ | COOPMPI_REGION_WRITE |
			    COOPMPI_REGION_MAP;
	struct coopmpi_window_attach a;
	struct pair p;
	struct win w;
	uint64_t c, c2;

	pair_init(&p, WLEN, rw, &c);
	REQUIRE_OK(cm_dereg(p.owner, c));
	REQUIRE_OK(cm_reg(p.owner, p.buf + 100, 3 * PG, rw, &c));
	win_open(&w, p.copier, c, COOPMPI_WINDOW_WRITE);
	REQUIRE(w.a.page_offset == 100 && w.a.map_bytes == 4 * PG,
		"page_offset %u map_bytes %llu", w.a.page_offset,
		(unsigned long long)w.a.map_bytes);
	memset(w.map + 100, 0x5a, 3 * PG);
	REQUIRE(cm_check_byte(p.buf + 100, 3 * PG, 0x5a) < 0,
		"the owner does not see the window's writes");
	REQUIRE(cm_check_pattern(p.buf + 100 + 3 * PG, WLEN - 100 - 3 * PG, 1,
				 100 + 3 * PG) < 0,
		"a write went beyond the region");

	/* a writable window needs WRITE and READ on the region */
	REQUIRE_OK(cm_reg(p.owner, p.buf, PG,
			  COOPMPI_REGION_READ | COOPMPI_REGION_MAP, &c2));
	REQUIRE_ERR(wattach(p.copier, c2, COOPMPI_WINDOW_WRITE, &a), EACCES);
	REQUIRE_OK(cm_reg(p.owner, p.buf, PG,
			  COOPMPI_REGION_WRITE | COOPMPI_REGION_MAP, &c2));
	REQUIRE_ERR(wattach(p.copier, c2, COOPMPI_WINDOW_WRITE, &a), EACCES);
	REQUIRE_ERR(wattach(p.copier, c2, 0, &a), EACCES);
}
END_TEST

/* Deregistration: zeros, writes go nowhere, no signal, no new attach. */
START_TEST(test_window_deregistered)
{
	const uint32_t rw = COOPMPI_REGION_READ | COOPMPI_REGION_WRITE |
			    COOPMPI_REGION_MAP;
	struct coopmpi_window_attach a;
	struct win r, w;
	struct pair p;
	uint64_t c;

	pair_init(&p, WLEN, rw, &c);
	win_open(&r, p.copier, c, 0);
	win_open(&w, p.copier, c, COOPMPI_WINDOW_WRITE);
	REQUIRE(cm_check_pattern(r.map, WLEN, 1, 0) < 0, "window data");
	REQUIRE_OK(cm_dereg(p.owner, c));
	REQUIRE(win_word(&r) & COOPMPI_WINDOW_DEAD, "state %#llx: not dead",
		(unsigned long long)win_word(&r));
	REQUIRE(cm_check_byte(r.map, WLEN, 0) < 0,
		"a dead window shows something else than zeros");
	memset(w.map, 0x77, WLEN);
	REQUIRE(cm_check_pattern(p.buf, WLEN, 1, 0) < 0,
		"a dead window's writes reached the owner's memory");
	REQUIRE(cm_check_byte(r.map, WLEN, 0) < 0,
		"a dead read window shows a writable window's writes");
	REQUIRE_ERR(wattach(p.copier, c, 0, &a), ENXIO);
}
END_TEST

/* Owner killed while mapped: DEAD once its endpoint closes, zeros. */
START_TEST(test_window_owner_exit)
{
	const uint32_t ro = COOPMPI_REGION_READ | COOPMPI_REGION_MAP;
	uint64_t key = cm_unique_key();
	int fd = cm_open_join(key, COOPMPI_JOIN_CREATE, NULL);
	struct cm_owner o;
	struct win w;
	int st;

	no_signals();
	cm_owner_spawn(&o, key, NULL, WLEN, ro, 9);
	win_open(&w, fd, o.cookie, 0);
	REQUIRE(cm_check_pattern(w.map, WLEN, 9, 0) < 0, "window data");
	kill(o.pid, SIGKILL);
	REQUIRE(waitpid(o.pid, &st, 0) == o.pid, "waitpid");
	for (int i = 0; i < 500 && !(win_word(&w) & COOPMPI_WINDOW_DEAD); i++)
		cm_sleep_ms(10);
	REQUIRE(win_word(&w) & COOPMPI_WINDOW_DEAD,
		"state %#llx 5 s after the owner's death",
		(unsigned long long)win_word(&w));
	REQUIRE(cm_check_byte(w.map, WLEN, 0) < 0, "not zeros after exit");
	REQUIRE_OK(munmap(w.map, WLEN));
	REQUIRE_OK(wdetach(fd, w.a.handle));
	close(o.sock);
}
END_TEST

/* A page the owner unmapped: zeros and HOLE until mapped anew. */
START_TEST(test_window_hole)
{
	const uint32_t ro = COOPMPI_REGION_READ | COOPMPI_REGION_MAP;
	uint8_t got[PG];
	struct pair p;
	struct win w;
	uint64_t c;

	pair_init(&p, WLEN, ro, &c);
	win_open(&w, p.copier, c, 0);
	cm_unmap(p.buf + 4 * PG, PG);
	REQUIRE(!win_copy(&w, 4 * PG, got, PG), "copy of a hole accepted");
	REQUIRE(win_word(&w) & COOPMPI_WINDOW_HOLE, "state %#llx: no HOLE",
		(unsigned long long)win_word(&w));
	REQUIRE(cm_check_byte(w.map + 4 * PG, PG, 0) < 0, "hole not zeros");
	REQUIRE(cm_check_pattern(w.map + 5 * PG, PG, 1, 5 * PG) < 0,
		"the page after the hole");
	REQUIRE(mmap(p.buf + 4 * PG, PG, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
		p.buf + 4 * PG, "mmap: %s", strerror(errno));
	memset(p.buf + 4 * PG, 0x33, PG);
	/* memory mapped where there was none changes no page table entry */
	REQUIRE(!win_copy(&w, 4 * PG, got, PG), "HOLE gone by itself");
	REQUIRE_OK(munmap(w.map, w.a.map_bytes));
	w.map = wmap(p.copier, w.a.handle, w.a.map_bytes, PROT_READ,
		     MAP_SHARED);
	REQUIRE(w.map != MAP_FAILED, "mmap: %s", strerror(errno));
	REQUIRE(win_copy(&w, 4 * PG, got, PG), "copy refused, mapped anew");
	REQUIRE(cm_check_byte(got, PG, 0x33) < 0, "the new page's data");
}
END_TEST

/*
 * A copier reading while the owner (another process) swaps its buffer for
 * a new one at the same address 200 times: every accepted copy holds one
 * buffer's bytes only.
 */
START_TEST(test_window_swap_race)
{
	const uint32_t ro = COOPMPI_REGION_READ | COOPMPI_REGION_MAP;
	uint64_t key = cm_unique_key();
	int fd = cm_open_join(key, COOPMPI_JOIN_CREATE, NULL);
	volatile uint32_t *done = mmap(NULL, PG, PROT_READ | PROT_WRITE,
				       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	unsigned copies = 0, accepted = 0, torn = 0, odd = 0, holes = 0;
	static uint8_t got[WLEN];
	struct win w;
	int sv[2];
	pid_t pid;

	REQUIRE(done != MAP_FAILED, "mmap: %s", strerror(errno));
	no_signals();
	cm_socketpair(sv);
	pid = cm_fork();
	if (pid == 0) {
		int ofd = cm_open_join(key, COOPMPI_JOIN_EXISTING, NULL);
		uint8_t *buf = cm_map_anon(WLEN);
		uint64_t c;

		memset(buf, 1, WLEN);
		REQUIRE_OK(cm_reg(ofd, buf, WLEN, ro, &c));
		cm_put_u64(sv[1], c);
		(void)cm_get_u64(sv[1]);
		for (int i = 2; i < 202; i++) {
			uint8_t *next = cm_map_anon(WLEN);

			memset(next, i, WLEN);
			REQUIRE(mremap(next, WLEN, WLEN, MREMAP_MAYMOVE |
				       MREMAP_FIXED, buf) == buf,
				"mremap: %s", strerror(errno));
			cm_sleep_ms(1);
		}
		*done = 1;
		cm_put_u64(sv[1], 0);
		_exit(0);
	}
	win_open(&w, fd, cm_get_u64_from(sv[0], pid, "owner"), 0);
	cm_put_u64(sv[0], 1);
	while (!*done) {
		uint64_t s0 = win_word(&w);

		copies++;
		odd += s0 & 1;
		holes += !!(s0 & COOPMPI_WINDOW_HOLE);
		if (!win_copy(&w, 0, got, WLEN))
			continue;
		accepted++;
		if (cm_check_byte(got, WLEN, got[0]) >= 0)
			torn++;
	}
	(void)cm_get_u64_from(sv[0], pid, "owner");
	cm_wait_ok(pid, "owner");
	printf("window swap race: %u copies, %u accepted, %u torn (word odd %u, HOLE %u)\n",
	       copies, accepted, torn, odd, holes);
	REQUIRE(torn == 0, "%u accepted copies mixed two buffers", torn);
	REQUIRE(accepted > 0, "no copy accepted in 200 swaps");
}
END_TEST

START_TEST(test_window_refused)
{
	const uint32_t ro = COOPMPI_REGION_READ | COOPMPI_REGION_MAP;
	struct coopmpi_window_attach a;
	struct pair p;
	struct win w;
	uint64_t c, nomap;
	int other = cm_open_join(cm_unique_key(), COOPMPI_JOIN_CREATE, NULL);
	void *q;

	pair_init(&p, WLEN, ro, &c);
	REQUIRE_OK(cm_reg(p.owner, p.buf, WLEN, COOPMPI_REGION_READ, &nomap));
	REQUIRE_ERR(wattach(p.copier, nomap, 0, &a), EACCES);
	REQUIRE_ERR(wattach(other, c, 0, &a), ENXIO);	/* another domain */
	REQUIRE_ERR(wattach(p.copier, c ^ (1ULL << 40), 0, &a), ENXIO);
	REQUIRE_ERR(wattach(p.copier, 0, 0, &a), ENXIO);

	REQUIRE_OK(wattach(p.copier, c, 0, &a));
	w.a = a;
	q = wmap(p.copier, a.handle, WLEN, PROT_READ | PROT_EXEC, MAP_SHARED);
	REQUIRE(q == MAP_FAILED && errno == EPERM, "PROT_EXEC: %s",
		q == MAP_FAILED ? strerror(errno) : "mapped");
	q = wmap(p.copier, a.handle, WLEN, PROT_READ | PROT_WRITE, MAP_SHARED);
	REQUIRE(q == MAP_FAILED && errno == EACCES, "PROT_WRITE: %s",
		q == MAP_FAILED ? strerror(errno) : "mapped");
	q = wmap(p.copier, a.handle, WLEN + PG, PROT_READ, MAP_SHARED);
	REQUIRE(q == MAP_FAILED && errno == EINVAL, "beyond: %s",
		q == MAP_FAILED ? strerror(errno) : "mapped");
	q = wmap(p.copier, a.handle, WLEN, PROT_READ, MAP_PRIVATE);
	REQUIRE(q == MAP_FAILED, "MAP_PRIVATE mapped");
	q = wmap(p.owner, a.handle, WLEN, PROT_READ, MAP_SHARED);
	REQUIRE(q == MAP_FAILED && errno == ENXIO,
		"another endpoint's handle: %s",
		q == MAP_FAILED ? strerror(errno) : "mapped");
	q = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, p.copier,
		 (off_t)COOPMPI_MMAP_WINDOW_STATE);
	REQUIRE(q == MAP_FAILED, "writable state page mapped");

	w.map = wmap(p.copier, a.handle, WLEN - PG, PROT_READ, MAP_SHARED);
	REQUIRE(w.map != MAP_FAILED, "mmap: %s", strerror(errno));
	REQUIRE(mprotect(w.map, PG, PROT_READ | PROT_WRITE) != 0,
		"mprotect made a read window writable");
	REQUIRE(cm_check_pattern(w.map, WLEN - PG, 1, 0) < 0, "window data");
	REQUIRE_OK(wdetach(p.copier, a.handle));
	REQUIRE_ERR(wdetach(p.copier, a.handle), ENXIO);
	q = wmap(p.copier, a.handle, WLEN, PROT_READ, MAP_SHARED);
	REQUIRE(q == MAP_FAILED && errno == ENXIO, "detached handle: %s",
		q == MAP_FAILED ? strerror(errno) : "mapped");
	/* a mapping made before the detach stays valid */
	REQUIRE(cm_check_pattern(w.map, WLEN - PG, 1, 0) < 0,
		"window data after the detach");
	/* windows are not memory a copy can pin */
	{
		uint64_t mine, copied;
		uint8_t got[64];

		REQUIRE_OK(cm_reg(p.copier, w.map, PG, COOPMPI_REGION_READ,
				  &mine));
		REQUIRE_ERR(cm_copy(p.owner, mine, 0, got, sizeof(got),
				    COOPMPI_COPY_FROM_REGION, &copied), EFAULT);
	}
}
END_TEST

/* Another uid's domain: its cookies are never found. */
START_TEST(test_window_other_user)
{
	const uint32_t ro = COOPMPI_REGION_READ | COOPMPI_REGION_MAP;
	struct pair p;
	uint64_t c;
	pid_t pid;

	cm_require_root();
	pair_init(&p, WLEN, ro, &c);
	pid = cm_fork();
	if (pid == 0) {
		struct coopmpi_window_attach a;
		int fd;

		cm_drop_to_nobody();
		fd = cm_open_join(p.key, 0, NULL);
		REQUIRE_ERR(wattach(fd, c, 0, &a), ENXIO);
		_exit(0);
	}
	cm_wait_ok(pid, "other user");
}
END_TEST

/* max_windows per endpoint; a detached window counts until unmapped. */
START_TEST(test_window_bound)
{
	const uint32_t ro = COOPMPI_REGION_READ | COOPMPI_REGION_MAP;
	uint32_t max = cm_info_cache.max_windows, *h;
	struct coopmpi_window_attach a;
	struct pair p;
	uint64_t c;
	void *m;

	pair_init(&p, PG, ro, &c);
	h = calloc(max, sizeof(*h));
	for (uint32_t i = 0; i < max; i++) {
		REQUIRE_OK(wattach(p.copier, c, 0, &a));
		h[i] = a.handle;
	}
	REQUIRE_ERR(wattach(p.copier, c, 0, &a), ENOSPC);
	REQUIRE_OK(wattach(p.owner, c, 0, &a));		/* per endpoint */
	m = wmap(p.copier, h[0], PG, PROT_READ, MAP_SHARED);
	REQUIRE(m != MAP_FAILED, "mmap: %s", strerror(errno));
	REQUIRE_OK(wdetach(p.copier, h[0]));
	REQUIRE_ERR(wattach(p.copier, c, 0, &a), ENOSPC);
	REQUIRE_OK(munmap(m, PG));
	REQUIRE_OK(wattach(p.copier, c, 0, &a));
	for (uint32_t i = 1; i < max; i++)
		REQUIRE_OK(wdetach(p.copier, h[i]));
	free(h);
}
END_TEST

/* fork: the child has no window mapping; the parent's still works. */
START_TEST(test_window_fork)
{
	const uint32_t ro = COOPMPI_REGION_READ | COOPMPI_REGION_MAP;
	struct pair p;
	struct win w;
	uint64_t c;
	pid_t pid;

	pair_init(&p, WLEN, ro, &c);
	win_open(&w, p.copier, c, 0);
	pid = cm_fork();
	if (pid == 0) {
		void *q = mmap(w.map, WLEN, PROT_READ, MAP_PRIVATE |
			       MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

		REQUIRE(q == w.map, "the child inherited the window mapping");
		_exit(0);
	}
	cm_wait_ok(pid, "child");
	REQUIRE(cm_check_pattern(w.map + w.a.page_offset, WLEN, 1, 0) < 0,
		"window data after fork");
}
END_TEST

/*
 * Each endpoint maps a window of the other's region over the other's
 * region: resolving either finds only a window (HOLE), and an unmap's
 * invalidation of one window, zapping the other's, ends.
 */
START_TEST(test_window_crossed)
{
	const uint32_t ro = COOPMPI_REGION_READ | COOPMPI_REGION_MAP;
	uint8_t *x = cm_map_anon(WLEN), *y = cm_map_anon(WLEN);
	uint64_t key = cm_unique_key(), cx, cy;
	int a = cm_open_join(key, COOPMPI_JOIN_CREATE, NULL);
	int b = cm_open_join(key, COOPMPI_JOIN_EXISTING, NULL);
	struct coopmpi_window_attach wx, wy;
	const uint64_t *sa, *sb;
	void *q;

	no_signals();
	REQUIRE_OK(cm_reg(a, x, WLEN, ro, &cx));
	REQUIRE_OK(cm_reg(b, y, WLEN, ro, &cy));
	REQUIRE_OK(wattach(b, cx, 0, &wx));
	REQUIRE_OK(wattach(a, cy, 0, &wy));
	q = mmap(y, WLEN, PROT_READ, MAP_SHARED | MAP_FIXED, b,
		 (off_t)COOPMPI_MMAP_WINDOW(wx.handle));
	REQUIRE(q == y, "mmap over y: %s", strerror(errno));
	q = mmap(x, WLEN, PROT_READ, MAP_SHARED | MAP_FIXED, a,
		 (off_t)COOPMPI_MMAP_WINDOW(wy.handle));
	REQUIRE(q == x, "mmap over x: %s", strerror(errno));
	sa = state_map(a);
	sb = state_map(b);
	REQUIRE(cm_check_byte(x, WLEN, 0) < 0, "a window over a window");
	REQUIRE(cm_check_byte(y, WLEN, 0) < 0, "a window over a window");
	REQUIRE(sa[wy.state_index] & COOPMPI_WINDOW_HOLE, "no HOLE");
	REQUIRE(sb[wx.state_index] & COOPMPI_WINDOW_HOLE, "no HOLE");
	cm_unmap(x, WLEN);
	cm_unmap(y, WLEN);
	REQUIRE_OK(wdetach(a, wy.handle));
	REQUIRE_OK(wdetach(b, wx.handle));
}
END_TEST

/*
 * The owner exits (its regions' windows die in its context) while the
 * copier closes its endpoint: the copier's close waits for the windows
 * the owner's exit still holds, 100 times.
 */
START_TEST(test_window_close_race)
{
	const uint32_t ro = COOPMPI_REGION_READ | COOPMPI_REGION_MAP;
	uint64_t key = cm_unique_key();
	int keeper = cm_open_join(key, COOPMPI_JOIN_CREATE, NULL);

	for (int i = 0; i < 100; i++) {
		struct coopmpi_window_attach a;
		struct cm_owner o;
		int fd = cm_open_join(key, COOPMPI_JOIN_EXISTING, NULL);
		uint8_t *m[4];

		cm_owner_spawn(&o, key, NULL, WLEN, ro, 3);
		for (int k = 0; k < 4; k++) {
			REQUIRE_OK(wattach(fd, o.cookie, 0, &a));
			m[k] = wmap(fd, a.handle, WLEN, PROT_READ, MAP_SHARED);
			REQUIRE(m[k] != MAP_FAILED, "mmap: %s",
				strerror(errno));
			REQUIRE(m[k][k] == cm_pattern_byte(3, k),
				"window data");
			REQUIRE_OK(wdetach(fd, a.handle));
		}
		/* the owner's death zaps mapped windows: unmap meanwhile */
		kill(o.pid, SIGKILL);
		cm_sleep_ms(i % 3);
		for (int k = 0; k < 4; k++)
			REQUIRE_OK(munmap(m[k], WLEN));
		close(fd);
		REQUIRE(waitpid(o.pid, NULL, 0) == o.pid, "waitpid");
		close(o.sock);
	}
	close(keeper);
}
END_TEST

void add_window_tests(Suite *s)
{
	TCase *tc = cm_tcase("window", 60);

	tcase_add_test(tc, test_window_remap);
	tcase_add_test(tc, test_window_write);
	tcase_add_test(tc, test_window_deregistered);
	tcase_add_test(tc, test_window_owner_exit);
	tcase_add_test(tc, test_window_hole);
	tcase_add_test(tc, test_window_swap_race);
	tcase_add_test(tc, test_window_refused);
	tcase_add_test(tc, test_window_other_user);
	tcase_add_test(tc, test_window_bound);
	tcase_add_test(tc, test_window_fork);
	tcase_add_test(tc, test_window_crossed);
	tcase_add_test(tc, test_window_close_race);
	suite_add_tcase(s, tc);
}
