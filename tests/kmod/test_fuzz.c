// SPDX-License-Identifier: GPL-2.0
/*
 * test_fuzz.c - bounded, reproducible fuzzing: random ioctls (numbers in
 * and out of the magic, sizes, pointers, field values), random mmap
 * offsets/lengths/protections, and rings scribbled over by user space.
 * Every call must come back with success or an error; afterwards the
 * device must still work.  The harness checks the kernel log.
 *
 * COOP_TEST_FUZZ_SEED and COOP_TEST_FUZZ_ITERS override the defaults.
 */
#include "helpers.h"

#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define ARENA (1u << 20)
#define DEFAULT_SEED 0xC0C0A11AULL
#define DEFAULT_ITERS 20000

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *v = getenv(name);

	return v && *v ? strtoull(v, NULL, 0) : def;
}

struct fz {
	struct cm_rng rng;
	uint8_t *arena;		/* ARENA bytes, then a PROT_NONE page */
	uint64_t key, key2;
	int fds[4];		/* 0 unjoined, 1-2 joined key, 3 joined key2 */
	uint32_t eps[4];
	uint64_t cookies[4];
};

static const unsigned known_nr[] = { 0x00, 0x01, 0x02, 0x10, 0x11, 0x12,
				     0x20, 0x21, 0x22, 0x23, 0x24 };
static const size_t known_size[] = {
	sizeof(struct coopmpi_info), sizeof(struct coopmpi_join),
	sizeof(struct coopmpi_ep_query), sizeof(struct coopmpi_mbox_xfer),
	sizeof(struct coopmpi_mbox_xfer), sizeof(struct coopmpi_doorbell),
	sizeof(struct coopmpi_region_register),
	sizeof(struct coopmpi_region_deregister), sizeof(struct coopmpi_copy),
	sizeof(struct coopmpi_window_attach),
	sizeof(struct coopmpi_window_detach),
};
static const unsigned known_dir[] = {
	_IOC_READ | _IOC_WRITE, _IOC_READ | _IOC_WRITE, _IOC_READ | _IOC_WRITE,
	_IOC_READ | _IOC_WRITE, _IOC_READ | _IOC_WRITE, _IOC_WRITE,
	_IOC_READ | _IOC_WRITE, _IOC_WRITE, _IOC_READ | _IOC_WRITE,
	_IOC_READ | _IOC_WRITE, _IOC_WRITE,
};
#define NKNOWN (sizeof(known_nr) / sizeof(known_nr[0]))

static uint64_t pick(struct fz *f, uint64_t n)
{
	return cm_rng_below(&f->rng, n);
}

/* an address that is either in the arena or certainly not ours */
static uint64_t fz_ptr(struct fz *f, size_t need)
{
	uint64_t a = (uintptr_t)f->arena;

	switch (pick(f, 12)) {
	case 0: return 0;
	case 1: return 1 + pick(f, 4095);
	case 2: return 0xffffffff81000000ULL + pick(f, 1 << 20);
	case 3: return 0xffff888000000000ULL + pick(f, 1ULL << 30);
	case 4: return UINT64_MAX - pick(f, 4096);
	case 5: return a + ARENA;			/* the guard page */
	case 6: return a + ARENA - 1 - pick(f, 64);	/* crosses into it */
	case 7: {
		uint64_t r = cm_rng_next(&f->rng);

		/* never a canonical user address outside the arena */
		return r | 0x8000000000000000ULL;
	}
	default:
		if (need >= ARENA)
			return a;
		return a + pick(f, ARENA - need + 1);
	}
}

static uint64_t fz_u64(struct fz *f)
{
	switch (pick(f, 10)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return pick(f, 64);
	case 3: return UINT64_MAX;
	case 4: return 1ULL << 63;
	case 5: return pick(f, ARENA + 8192);
	case 6: return cm_info_cache.max_endpoints - 1 + pick(f, 3);
	case 7: return 4096 * pick(f, 512);
	case 8: return (uint32_t)cm_rng_next(&f->rng);
	default: return cm_rng_next(&f->rng);
	}
}

static uint32_t fz_u32(struct fz *f)
{
	return (uint32_t)fz_u64(f);
}

static uint64_t fz_cookie(struct fz *f)
{
	if (pick(f, 3) == 0)
		return fz_u64(f);
	return f->cookies[pick(f, 4)];
}

static uint32_t fz_ep(struct fz *f)
{
	if (pick(f, 4) == 0)
		return fz_u32(f);
	return f->eps[pick(f, 4)];
}

static uint64_t fz_key(struct fz *f)
{
	switch (pick(f, 3)) {
	case 0: return f->key;
	case 1: return f->key2;
	default: return cm_rng_next(&f->rng);
	}
}

/* iovec array in the arena, segments in the arena or bad */
static uint64_t fz_iov(struct fz *f, uint32_t *count)
{
	uint32_t n = pick(f, 4) ? 1 + (uint32_t)pick(f, 8) : (uint32_t)pick(f, 1100);
	size_t bytes = (size_t)n * sizeof(struct iovec);
	struct iovec *iov;
	uint64_t at;

	if (bytes > ARENA / 4 || pick(f, 10) == 0) {
		*count = pick(f, 2) ? n : fz_u32(f);
		return fz_ptr(f, 16);
	}
	at = (uintptr_t)f->arena + pick(f, ARENA - bytes + 1);
	at &= ~7ULL;
	iov = (struct iovec *)(uintptr_t)at;
	for (uint32_t i = 0; i < n; i++) {
		size_t len = pick(f, 5) ? pick(f, 8192) : (size_t)fz_u64(f);

		iov[i].iov_base = (void *)(uintptr_t)fz_ptr(f, len < ARENA ? len : 1);
		iov[i].iov_len = len;
	}
	*count = pick(f, 10) ? n : fz_u32(f);
	return at;
}

static void fz_fill(struct fz *f, unsigned k, uint8_t *buf, size_t size)
{
	bool structured = pick(f, 5) != 0;

	if (pick(f, 3) == 0) {
		for (size_t i = 0; i < size; i++)
			buf[i] = (uint8_t)cm_rng_next(&f->rng);
	} else {
		memset(buf, 0, size);
	}
	if (size < 8)
		return;
	if (!structured || k >= NKNOWN) {
		if (pick(f, 2))
			*(uint32_t *)buf = (uint32_t)size;
		return;
	}
	*(uint32_t *)buf = pick(f, 8) ? (uint32_t)size : fz_u32(f);
	*(uint32_t *)(buf + 4) = pick(f, 4) ? (uint32_t)pick(f, 4) : fz_u32(f);
	if (size < known_size[k])
		return;
	switch (known_nr[k]) {
	case 0x01: {
		struct coopmpi_join *j = (void *)buf;

		j->key = fz_key(f);
		break;
	}
	case 0x02: {
		struct coopmpi_ep_query *q = (void *)buf;

		q->ep_id = fz_ep(f);
		break;
	}
	case 0x10:
	case 0x11: {
		struct coopmpi_mbox_xfer *x = (void *)buf;

		x->peer = known_nr[k] == 0x11 && pick(f, 2) ? 0 : fz_ep(f);
		x->count = pick(f, 3) ? (uint32_t)pick(f, 40) : fz_u32(f);
		x->msgs = fz_ptr(f, (size_t)(x->count > 16384 ? 1 : x->count) * 64);
		break;
	}
	case 0x12: {
		struct coopmpi_doorbell *d = (void *)buf;

		d->peer = fz_ep(f);
		break;
	}
	case 0x20: {
		struct coopmpi_region_register *r = (void *)buf;

		r->length = pick(f, 3) ? pick(f, ARENA + 1) : fz_u64(f);
		r->addr = fz_ptr(f, r->length < ARENA ? r->length : 1);
		r->flags = pick(f, 4) ? 1 + (uint32_t)pick(f, 7) : fz_u32(f);
		break;
	}
	case 0x21: {
		struct coopmpi_region_deregister *d = (void *)buf;

		d->cookie = fz_cookie(f);
		break;
	}
	case 0x22: {
		struct coopmpi_copy *c = (void *)buf;

		c->flags = pick(f, 4) ? 1 + (uint32_t)pick(f, 2) : fz_u32(f);
		c->cookie = fz_cookie(f);
		c->offset = pick(f, 2) ? pick(f, ARENA) : fz_u64(f);
		c->iov = fz_iov(f, &c->iov_count);
		c->length = pick(f, 2) ? pick(f, 65536) : fz_u64(f);
		break;
	}
	case 0x23: {
		struct coopmpi_window_attach *a = (void *)buf;

		a->flags = pick(f, 4) ? (uint32_t)pick(f, 2) : fz_u32(f);
		a->cookie = fz_cookie(f);
		break;
	}
	case 0x24: {
		struct coopmpi_window_detach *d = (void *)buf;

		d->handle = pick(f, 2) ? (uint32_t)pick(f, 4096) : fz_u32(f);
		break;
	}
	}
	/* reserved fields are mostly left zero by the memset above */
	if (pick(f, 10) == 0 && size >= 16)
		buf[size - 1 - pick(f, 8)] = (uint8_t)(1 + pick(f, 255));
}

static bool foreign_type_ok(unsigned type)
{
	/* types that the VFS answers itself for any file */
	return type != 0x00 && type != 'T' && type != 'X' && type != 'f' &&
	       type != 0x94 && type != COOPMPI_IOC_MAGIC;
}

static void on_alarm(int sig)
{
	(void)sig;
}

static void arm(bool on)
{
	struct itimerval it;

	memset(&it, 0, sizeof(it));
	if (on) {
		/* periodic: a signal that lands before a blocking call
		 * started must not leave it blocked forever */
		it.it_value.tv_usec = 20000;
		it.it_interval.tv_usec = 20000;
	}
	setitimer(ITIMER_REAL, &it, NULL);
}

static void fz_setup(struct fz *f, uint64_t seed)
{
	struct coopmpi_join j;
	struct sigaction sa;

	memset(f, 0, sizeof(*f));
	cm_rng_seed(&f->rng, seed);
	f->arena = mmap(NULL, ARENA + 4096, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(f->arena != MAP_FAILED, "mmap arena");
	REQUIRE(mprotect(f->arena + ARENA, 4096, PROT_NONE) == 0, "mprotect");
	f->key = cm_unique_key();
	f->key2 = cm_unique_key();
	f->fds[0] = cm_open();
	f->fds[1] = cm_open_join(f->key, COOPMPI_JOIN_CREATE, &j);
	f->eps[1] = j.ep_id;
	f->fds[2] = cm_open_join(f->key, COOPMPI_JOIN_EXISTING, &j);
	f->eps[2] = j.ep_id;
	f->fds[3] = cm_open_join(f->key2, COOPMPI_JOIN_CREATE, &j);
	f->eps[3] = j.ep_id;
	f->eps[0] = cm_info_cache.max_endpoints;
	REQUIRE_OK(cm_reg(f->fds[1], f->arena, ARENA,
			  COOPMPI_REGION_READ | COOPMPI_REGION_WRITE,
			  &f->cookies[1]));
	REQUIRE_OK(cm_reg(f->fds[2], f->arena, ARENA / 2, COOPMPI_REGION_READ,
			  &f->cookies[2]));
	REQUIRE_OK(cm_reg(f->fds[3], f->arena + 4096, 8192,
			  COOPMPI_REGION_WRITE, &f->cookies[3]));
	f->cookies[0] = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;	/* no SA_RESTART: MBOX_WAIT ends */
	sigaction(SIGALRM, &sa, NULL);
}

/* the device still does its job after the storm */
static void check_device_works(struct fz *f)
{
	struct coopmpi_join ja, jb;
	struct coopmpi_ep_query q;
	struct coopmpi_info info;
	struct cm_msg m, got;
	uint8_t local[128];
	uint64_t key = cm_unique_key(), c, copied;
	uint32_t done;
	int a, b;

	for (int i = 0; i < 4; i++)
		REQUIRE_OK(cm_get_info(f->fds[i], &info));
	REQUIRE_OK(cm_ep_query(f->fds[1], f->eps[1], &q));
	REQUIRE(q.state == COOPMPI_EP_ALIVE, "fuzzed endpoint died");
	/* fuzzed endpoints: drain, then a clean send/recv */
	while (cm_recv(f->fds[2], &got, 1, 0, &done) == 0)
		;
	cm_msg_make(&m, 1, 1);
	REQUIRE_OK(cm_send(f->fds[1], f->eps[2], &m, 1, &done));
	REQUIRE_OK(cm_recv(f->fds[2], &got, 1, 0, &done));
	REQUIRE(done == 1 && memcmp(&got, &m, sizeof(m)) == 0,
		"fuzzed endpoints: send/recv broken");
	/* a fresh domain */
	a = cm_open_join(key, COOPMPI_JOIN_CREATE, &ja);
	b = cm_open_join(key, COOPMPI_JOIN_EXISTING, &jb);
	cm_msg_make(&m, 2, 2);
	REQUIRE_OK(cm_send(a, jb.ep_id, &m, 1, &done));
	REQUIRE_OK(cm_recv(b, &got, 1, 0, &done));
	REQUIRE(done == 1 && memcmp(&got, &m, sizeof(m)) == 0,
		"fresh endpoints: send/recv broken");
	cm_fill_pattern(f->arena, 4096, 8);
	REQUIRE_OK(cm_reg(a, f->arena, 4096, COOPMPI_REGION_READ, &c));
	REQUIRE_OK(cm_copy(b, c, 17, local, sizeof(local),
			   COOPMPI_COPY_FROM_REGION, &copied));
	REQUIRE(cm_check_pattern(local, sizeof(local), 8, 17) < 0,
		"fresh endpoints: copy broken");
	close(a);
	close(b);
}

START_TEST(test_fuzz_ioctl)
{
	uint64_t seed = env_u64("COOP_TEST_FUZZ_SEED", DEFAULT_SEED);
	uint64_t iters = env_u64("COOP_TEST_FUZZ_ITERS", DEFAULT_ITERS);
	unsigned hist[160] = { 0 };
	unsigned ok = 0;
	struct fz f;

	printf("ioctl fuzz: seed %#llx, %llu iterations "
	       "(COOP_TEST_FUZZ_SEED/ITERS)\n",
	       (unsigned long long)seed, (unsigned long long)iters);
	fz_setup(&f, seed);
	for (uint64_t it = 0; it < iters; it++) {
		unsigned k = (unsigned)pick(&f, NKNOWN + 3);
		unsigned dir, type, nr;
		size_t size;
		unsigned long cmd;
		uint64_t arg;
		int fd = f.fds[pick(&f, 4)], r;
		bool foreign = false, unknown_nr = false;

		if (k < NKNOWN) {
			type = COOPMPI_IOC_MAGIC;
			nr = known_nr[k];
			if (pick(&f, 8)) {
				size = known_size[k];
				dir = known_dir[k];
			} else {
				size = pick(&f, 2) ? known_size[k] + pick(&f, 64) - 32 :
						     pick(&f, 1 << 14);
				dir = (unsigned)pick(&f, 4);
			}
		} else if (k == NKNOWN) {
			/* the magic with a random number */
			type = COOPMPI_IOC_MAGIC;
			nr = (unsigned)pick(&f, 256);
			size = pick(&f, 2) ? pick(&f, 128) : pick(&f, 1 << 14);
			dir = (unsigned)pick(&f, 4);
			unknown_nr = true;
			for (unsigned i = 0; i < NKNOWN; i++)
				if (known_nr[i] == nr)
					unknown_nr = false;
			if (nr >= 0x30 && nr <= 0x3f)	/* DMA channel range */
				unknown_nr = false;
		} else {
			do {
				type = (unsigned)pick(&f, 256);
			} while (!foreign_type_ok(type));
			nr = (unsigned)pick(&f, 256);
			size = pick(&f, 256);
			dir = (unsigned)pick(&f, 4);
			foreign = true;
		}
		if (size >= (1u << 14))
			size = (1u << 14) - 1;
		if (dir == _IOC_NONE && pick(&f, 2))
			size = 0;
		cmd = _IOC(dir, type, nr, size);
		if (pick(&f, 8) == 0 || size > ARENA / 2) {
			arg = fz_ptr(&f, size ? size : 1);
		} else {
			arg = (uintptr_t)f.arena + pick(&f, ARENA - size - 64);
			fz_fill(&f, k, (uint8_t *)(uintptr_t)arg, size);
		}
		/* sometimes reopen the unjoined endpoint */
		if (it % 997 == 0) {
			close(f.fds[0]);
			f.fds[0] = cm_open();
		}
		arm(true);
		r = cm_ioctl(fd, cmd, (void *)(uintptr_t)arg);
		arm(false);
		if (foreign || unknown_nr)
			REQUIRE(r == -ENOTTY,
				"iteration %llu: unknown ioctl %#lx returned %s, want ENOTTY",
				(unsigned long long)it, cmd, cm_errname(-r));
		if (r == 0)
			ok++;
		else if (-r < 160)
			hist[-r]++;
	}
	printf("ioctl fuzz: %u successes;", ok);
	for (int e = 1; e < 160; e++)
		if (hist[e])
			printf(" %s=%u", cm_errname(e), hist[e]);
	printf("\n");
	REQUIRE(ok > 0, "no fuzzed ioctl ever succeeded: the fuzzer is blind");
	check_device_works(&f);
}
END_TEST

/* ------------------------------------------------------------------ */

static sigjmp_buf fault_jmp;
static volatile sig_atomic_t faults;

static void on_fault(int sig)
{
	(void)sig;
	faults++;
	siglongjmp(fault_jmp, 1);
}

static __attribute__((noinline)) void touch_one(volatile uint8_t *p,
						bool write)
{
	if (sigsetjmp(fault_jmp, 1) == 0) {
		uint8_t v = p[0];

		if (write)
			p[0] = v;
	}
}

/* touch up to 16 pages; a SIGBUS/SIGSEGV is an acceptable answer */
static void touch(volatile uint8_t *p, size_t len, bool write)
{
	size_t pages = (len + 4095) / 4096;

	if (pages > 16)
		pages = 16;
	for (size_t i = 0; i < pages; i++)
		touch_one(p + i * 4096, write);
}

START_TEST(test_fuzz_mmap)
{
	uint64_t seed = env_u64("COOP_TEST_FUZZ_SEED", DEFAULT_SEED) ^ 0x3a3a;
	uint64_t key = cm_unique_key();
	struct coopmpi_join ja, jb;
	struct cm_rng rng;
	struct sigaction sa;
	unsigned mapped = 0, refused = 0;
	uint32_t maxep = cm_info_cache.max_endpoints;
	uint64_t rb = cm_info_cache.ring_bytes, cb = cm_info_cache.counters_bytes;
	int a = cm_open_join(key, COOPMPI_JOIN_CREATE, &ja);
	int b = cm_open_join(key, COOPMPI_JOIN_EXISTING, &jb);
	int iters = 2000;

	printf("mmap fuzz: seed %#llx, %d iterations\n", (unsigned long long)seed,
	       iters);
	cm_rng_seed(&rng, seed);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fault;
	sa.sa_flags = SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);

	for (int it = 0; it < iters; it++) {
		uint64_t off, len;
		int prot = 0, flags, fd = cm_rng_below(&rng, 2) ? a : b;
		uint8_t *p;

		switch (cm_rng_below(&rng, 8)) {
		case 0: off = COOPMPI_MMAP_COUNTERS + 4096 * cm_rng_below(&rng, 4); break;
		case 1: off = 4096 * cm_rng_below(&rng, 1ULL << 28); break;
		case 2: off = COOPMPI_MMAP_RING(cm_rng_below(&rng, 2) ? ja.ep_id : jb.ep_id) +
			      4096 * cm_rng_below(&rng, rb / 4096 + 2); break;
		case 3: off = COOPMPI_MMAP_RING(cm_rng_below(&rng, maxep + 4)); break;
		case 4: off = COOPMPI_MMAP_RING(cm_rng_below(&rng, 1ULL << 24)); break;
		case 5: off = COOPMPI_MMAP_RING_BASE - 4096 * (1 + cm_rng_below(&rng, 4)); break;
		case 6:
			switch (cm_rng_below(&rng, 4)) {
			case 0: off = COOPMPI_MMAP_WINDOW_STATE + 4096 * cm_rng_below(&rng, 3); break;
			case 1: off = COOPMPI_MMAP_WINDOW(cm_rng_below(&rng, 4096)) +
				      4096 * cm_rng_below(&rng, 32); break;
			case 2: off = cm_rng_next(&rng) & ~4095ULL; break;
			default: off = (cm_rng_next(&rng) & ((1ULL << 62) - 1)) & ~4095ULL; break;
			}
			break;
		default: off = COOPMPI_MMAP_RING(ja.ep_id) + cm_rng_below(&rng, 4096); break;
		}
		switch (cm_rng_below(&rng, 8)) {
		case 0: len = 1 + cm_rng_below(&rng, 8192); break;
		case 1: len = rb; break;
		case 2: len = rb + 4096 * (1 + cm_rng_below(&rng, 4)); break;
		case 3: len = cb; break;
		case 4: len = cb + 4096 * (1 + cm_rng_below(&rng, 4)); break;
		case 5: len = cm_rng_below(&rng, 64ULL << 20); break;
		case 6: len = 1ULL << (30 + cm_rng_below(&rng, 16)); break;
		default: len = 4096; break;
		}
		if (cm_rng_below(&rng, 4))
			prot |= PROT_READ;
		if (cm_rng_below(&rng, 2))
			prot |= PROT_WRITE;
		if (cm_rng_below(&rng, 8) == 0)
			prot |= PROT_EXEC;
		flags = cm_rng_below(&rng, 4) ? MAP_SHARED : MAP_PRIVATE;
		/* keep the kernel log free of overcommit complaints: huge
		 * private writable mappings never reach the driver anyway */
		if (flags == MAP_PRIVATE && (prot & PROT_WRITE) && len > (64ULL << 20))
			len = 64ULL << 20;
		if (cm_rng_below(&rng, 6) == 0)
			flags |= MAP_POPULATE;
		p = mmap(NULL, len, prot, flags, fd, (off_t)off);
		if (p == MAP_FAILED) {
			refused++;
			continue;
		}
		mapped++;
		if (prot & PROT_READ)
			touch(p, len, (prot & PROT_WRITE) && (flags & MAP_SHARED));
		/* grow it, split it, change its protection */
		if (cm_rng_below(&rng, 3) == 0) {
			uint8_t *q = mremap(p, len, len + 8192, MREMAP_MAYMOVE);

			if (q != MAP_FAILED) {
				p = q;
				if (prot & PROT_READ)
					touch(p + ((len + 4095) & ~4095ULL), 8192,
					      false);
				len += 8192;
			}
		}
		if (len > 8192 && cm_rng_below(&rng, 3) == 0) {
			munmap(p, 4096);
			if (prot & PROT_READ)
				touch(p + 4096, len - 4096, false);
			munmap(p + 4096, len - 4096);
			continue;
		}
		if (cm_rng_below(&rng, 4) == 0)
			mprotect(p, len, PROT_READ | PROT_WRITE | PROT_EXEC);
		munmap(p, len);
	}
	printf("mmap fuzz: %u mapped, %u refused, %d faults\n", mapped, refused,
	       (int)faults);
	REQUIRE(mapped > 0 && refused > 0, "mmap fuzz is blind: %u mapped, %u refused",
		mapped, refused);
	{
		struct cm_ring ring;
		struct cm_msg m, got;
		uint32_t done;

		REQUIRE_OK(cm_ring_map(a, jb.ep_id, &ring));
		cm_msg_make(&m, 1, 2);
		REQUIRE(cm_ring_send(a, jb.ep_id, &ring, &m) == 0, "ring send");
		REQUIRE_OK(cm_recv(b, &got, 1, 0, &done));
		REQUIRE(done == 1 && memcmp(&m, &got, sizeof(m)) == 0, "recv");
		cm_ring_unmap(&ring);
	}
	close(a);
	close(b);
}
END_TEST

/* ------------------------------------------------------------------ */

/*
 * User space owns the ring memory and may scribble over it; the kernel's
 * SEND/RECV/poll must stay bounded and memory-safe (_i = scenario).
 */
START_TEST(test_ring_scribbled)
{
	uint64_t key = cm_unique_key();
	struct coopmpi_join jr, js;
	struct cm_ring own;
	struct cm_rng rng;
	uint32_t slots = cm_info_cache.ring_slots;
	int r = cm_open_join(key, COOPMPI_JOIN_CREATE, &jr);
	int s = cm_open_join(key, COOPMPI_JOIN_EXISTING, &js);
	int st;
	pid_t pid;

	cm_rng_seed(&rng, 0x5c5c + (uint64_t)_i);
	REQUIRE_OK(cm_ring_map(r, jr.ep_id, &own));
	switch (_i) {
	case 0:	/* tail laps ahead of head: "full" for ever */
		own.hdr->tail = 3ULL * slots + 5;
		break;
	case 1:	/* wild tail and seq */
		own.hdr->tail = cm_rng_next(&rng);
		for (uint32_t i = 0; i < slots; i++)
			own.seq[i] = cm_rng_next(&rng);
		break;
	case 2:	/* wild head, every slot "ready" for the consumer */
		own.hdr->head = cm_rng_next(&rng);
		for (uint32_t i = 0; i < slots; i++)
			own.seq[i] = own.hdr->head + 1 + i;
		break;
	case 3:	/* lie about the geometry */
		own.hdr->slots = 0xffffffffu;
		own.hdr->msg_size = 0xffffffffu;
		own.hdr->tail = 0x7fffffffffffffffULL;
		own.hdr->head = 0x7fffffffffffffffULL;
		break;
	default: /* everything 0xff */
		memset(own.base, 0xff, coopmpi_ring_msgs_off(slots));
		break;
	}
	pid = cm_fork();
	if (pid == 0) {
		struct cm_msg m[8];
		struct pollfd p = { .fd = r, .events = POLLIN };
		uint32_t done;

		for (int i = 0; i < 8; i++)
			cm_msg_make(&m[i], 0, (uint64_t)i);
		for (int i = 0; i < 200; i++) {
			int x = cm_send(s, jr.ep_id, m, 1 + (i & 7), &done);

			REQUIRE(x == 0 || x == -EAGAIN, "SEND to a scribbled ring: %s",
				cm_errname(-x));
			x = cm_recv(r, m, 8, 0, &done);
			REQUIRE(x == 0 || x == -EAGAIN, "RECV of a scribbled ring: %s",
				cm_errname(-x));
			REQUIRE_OK(cm_doorbell(s, jr.ep_id));
			poll(&p, 1, 0);
		}
		_exit(0);
	}
	REQUIRE(cm_wait_timeout(pid, 30000, &st) == 0,
		"SEND/RECV on a scribbled ring (scenario %d) did not finish in 30 s",
		_i);
	REQUIRE(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		"scribbled ring scenario %d: child status %#x", _i, st);
	cm_ring_unmap(&own);
	/* the scribbler's peer is fine with others */
	{
		struct coopmpi_join jt;
		int t = cm_open_join(key, COOPMPI_JOIN_EXISTING, &jt);
		struct cm_msg m, got;
		uint32_t done;

		cm_msg_make(&m, 0, 0);
		REQUIRE_OK(cm_send(s, jt.ep_id, &m, 1, &done));
		REQUIRE_OK(cm_recv(t, &got, 1, 0, &done));
		REQUIRE(done == 1 && memcmp(&m, &got, sizeof(m)) == 0,
			"send/recv next to a scribbled ring");
		close(t);
	}
	close(r);
	close(s);
}
END_TEST

void add_fuzz_tests(Suite *s)
{
	TCase *tc = cm_tcase("fuzz", 180);

	tcase_add_test(tc, test_fuzz_ioctl);
	tcase_add_test(tc, test_fuzz_mmap);
	tcase_add_loop_test(tc, test_ring_scribbled, 0, 5);
	suite_add_tcase(s, tc);
}
