// SPDX-License-Identifier: GPL-2.0
/*
 * test_copy.c - copy correctness between two processes.  The region owner
 * is a forked process that maps a memfd at its own address; the test keeps
 * a second view of the same memfd (at another address) to check what the
 * driver wrote into / read from the owner's address space.
 */
#include "helpers.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define SMALL_REGION (4u << 20)
#define BG_SEED 1001		/* region background pattern */
#define GUARD 0xa5

struct copy_env {
	uint64_t key;
	int fd;
	struct coopmpi_join j;
	struct cm_shm shm;
	struct cm_owner owner;
};

static void env_init(struct copy_env *e, size_t region, uint32_t flags)
{
	e->key = cm_unique_key();
	e->fd = cm_open_join(e->key, COOPMPI_JOIN_CREATE, &e->j);
	cm_shm_create(&e->shm, region);
	cm_fill_pattern(e->shm.view, region, BG_SEED);
	cm_owner_spawn(&e->owner, e->key, &e->shm, region, flags, 0);
	REQUIRE(e->owner.addr != (uintptr_t)e->shm.view,
		"owner maps the memfd at the test's address");
	REQUIRE(e->owner.cookie2 != 0, "owner registered no sub-region");
}

static void env_fini(struct copy_env *e)
{
	cm_owner_finish(&e->owner);
	cm_shm_destroy(&e->shm);
	close(e->fd);
}

static const uint64_t lengths[] = { 1, 7, 4095, 4096, 4097, 65537,
				    (1u << 20) + 3 };
#define NLEN (sizeof(lengths) / sizeof(lengths[0]))

START_TEST(test_copy_from_unaligned)
{
	struct copy_env e;
	struct cm_rng rng;
	uint64_t seed = 0xf00d;

	env_init(&e, SMALL_REGION, COOPMPI_REGION_READ | COOPMPI_REGION_WRITE);
	cm_rng_seed(&rng, seed);
	for (unsigned li = 0; li < NLEN; li++) {
		for (int round = 0; round < 4; round++) {
			uint64_t len = lengths[li], copied;
			bool sub = round & 1;	/* region at owner addr+4093 */
			uint64_t rlen = sub ? SMALL_REGION / 2 : SMALL_REGION;
			uint64_t base = sub ? CM_OWNER_SUB_OFF : 0;
			uint64_t off = cm_rng_below(&rng, 4096);
			size_t la = (size_t)cm_rng_below(&rng, 4096);
			size_t blen = len + 4096 + la + 4096;
			uint8_t *local = cm_map_anon(blen), *dst;
			long bad;
			int r;

			if (round == 3)
				off = rlen - len;	/* flush with the end */
			dst = local + 4096 + la;
			memset(local, GUARD, blen);
			r = cm_copy(e.fd, sub ? e.owner.cookie2 : e.owner.cookie,
				    off, dst, len, COOPMPI_COPY_FROM_REGION,
				    &copied);
			REQUIRE(r == 0 && copied == len,
				"FROM len %llu off %llu local+%zu%s: %s copied %llu",
				(unsigned long long)len, (unsigned long long)off,
				la, sub ? " (sub-region)" : "", cm_errname(-r),
				(unsigned long long)copied);
			bad = cm_check_pattern(dst, len, BG_SEED, base + off);
			REQUIRE(bad < 0,
				"FROM len %llu off %llu: byte %ld wrong (%#x, want %#x)",
				(unsigned long long)len, (unsigned long long)off,
				bad, bad >= 0 ? dst[bad] : 0,
				bad >= 0 ? cm_pattern_byte(BG_SEED, base + off + (uint64_t)bad) : 0);
			REQUIRE(cm_check_byte(local, 4096 + la, GUARD) < 0,
				"FROM len %llu wrote before the destination",
				(unsigned long long)len);
			REQUIRE(cm_check_byte(dst + len, 4096, GUARD) < 0,
				"FROM len %llu wrote after the destination",
				(unsigned long long)len);
			cm_unmap(local, blen);
		}
	}
	REQUIRE(cm_check_pattern(e.shm.view, SMALL_REGION, BG_SEED, 0) < 0,
		"FROM copies modified the region");
	env_fini(&e);
}
END_TEST

START_TEST(test_copy_to_unaligned)
{
	struct copy_env e;
	struct cm_rng rng;
	uint8_t *view;

	env_init(&e, SMALL_REGION, COOPMPI_REGION_READ | COOPMPI_REGION_WRITE);
	view = e.shm.view;
	cm_rng_seed(&rng, 0xbeef);
	for (unsigned li = 0; li < NLEN; li++) {
		for (int round = 0; round < 4; round++) {
			uint64_t len = lengths[li], copied;
			bool sub = round & 1;
			uint64_t rlen = sub ? SMALL_REGION / 2 : SMALL_REGION;
			uint64_t base = sub ? CM_OWNER_SUB_OFF : 0;
			uint64_t off = cm_rng_below(&rng, 4096);
			size_t la = (size_t)cm_rng_below(&rng, 4096);
			uint64_t src_seed = 5000 + li * 10 + (uint64_t)round;
			uint8_t *local = cm_map_anon(len + la), *src = local + la;
			uint64_t at;
			long bad;
			int r;

			if (round == 3)
				off = rlen - len;
			at = base + off;
			cm_fill_pattern(src, len, src_seed);
			r = cm_copy(e.fd, sub ? e.owner.cookie2 : e.owner.cookie,
				    off, src, len, COOPMPI_COPY_TO_REGION, &copied);
			REQUIRE(r == 0 && copied == len,
				"TO len %llu off %llu: %s copied %llu",
				(unsigned long long)len, (unsigned long long)off,
				cm_errname(-r), (unsigned long long)copied);
			bad = cm_check_pattern(view + at, len, src_seed, 0);
			REQUIRE(bad < 0, "TO len %llu off %llu%s: byte %ld wrong",
				(unsigned long long)len, (unsigned long long)off,
				sub ? " (sub-region)" : "", bad);
			REQUIRE(cm_check_pattern(view, at, BG_SEED, 0) < 0,
				"TO len %llu off %llu wrote before its range",
				(unsigned long long)len, (unsigned long long)off);
			REQUIRE(cm_check_pattern(view + at + len,
						 SMALL_REGION - at - len, BG_SEED,
						 at + len) < 0,
				"TO len %llu off %llu wrote after its range",
				(unsigned long long)len, (unsigned long long)off);
			REQUIRE(cm_check_pattern(src, len, src_seed, 0) < 0,
				"TO modified the source");
			cm_fill_pattern_at(view + at, len, BG_SEED, at);
			cm_unmap(local, len + la);
		}
	}
	env_fini(&e);
}
END_TEST

/* iovecs: up to COOPMPI_COPY_MAX_IOV small segments, each crossing a page */
struct segs {
	uint8_t *buf;
	size_t buf_len;
	struct iovec *iov;
	uint32_t n;
	uint64_t total;
};

static void segs_build(struct segs *s, uint32_t n)
{
	s->n = n;
	s->buf_len = (size_t)(n + 2) * 4096;
	s->buf = cm_map_anon(s->buf_len);
	s->iov = calloc(n, sizeof(*s->iov));
	REQUIRE(s->iov, "calloc");
	s->total = 0;
	for (uint32_t k = 0; k < n; k++) {
		size_t back = 1 + (k * 97) % 300;
		size_t len = back + 1 + (k * 53) % 300;

		if (k % 37 == 5)
			len = 0;	/* empty segments are legal */
		s->iov[k].iov_base = s->buf + (size_t)(k + 1) * 4096 - back;
		s->iov[k].iov_len = len;
		s->total += len;
	}
}

static bool in_seg(const struct segs *s, size_t pos)
{
	/* segment k only lives around page boundary k+1 */
	size_t k = (pos + 2048) / 4096;

	if (k == 0 || k > s->n)
		return false;
	k--;
	return pos >= (size_t)((uint8_t *)s->iov[k].iov_base - s->buf) &&
	       pos < (size_t)((uint8_t *)s->iov[k].iov_base - s->buf) +
		     s->iov[k].iov_len;
}

START_TEST(test_copy_iovec)
{
	struct copy_env e;
	struct segs s;
	uint64_t copied, off, pos;
	int r;

	env_init(&e, SMALL_REGION, COOPMPI_REGION_READ | COOPMPI_REGION_WRITE);
	segs_build(&s, COOPMPI_COPY_MAX_IOV);

	/* FROM into the segments */
	off = 12345;
	memset(s.buf, GUARD, s.buf_len);
	r = cm_copyv(e.fd, e.owner.cookie, off, s.iov, s.n, s.total,
		     COOPMPI_COPY_FROM_REGION, &copied);
	REQUIRE(r == 0 && copied == s.total, "FROM %u iovs (%llu bytes): %s copied %llu",
		s.n, (unsigned long long)s.total, cm_errname(-r),
		(unsigned long long)copied);
	pos = off;
	for (uint32_t k = 0; k < s.n; k++) {
		long bad = cm_check_pattern(s.iov[k].iov_base, s.iov[k].iov_len,
					    BG_SEED, pos);

		REQUIRE(bad < 0, "FROM iov %u: byte %ld wrong", k, bad);
		pos += s.iov[k].iov_len;
	}
	for (size_t i = 0; i < s.buf_len; i++)
		if (!in_seg(&s, i))
			REQUIRE(s.buf[i] == GUARD,
				"FROM iov wrote the gap byte at %zu", i);

	/* FROM with iov total > length: only length bytes land */
	memset(s.buf, GUARD, s.buf_len);
	r = cm_copyv(e.fd, e.owner.cookie, off, s.iov, s.n, s.total / 2,
		     COOPMPI_COPY_FROM_REGION, &copied);
	REQUIRE(r == 0 && copied == s.total / 2, "FROM half: %s copied %llu",
		cm_errname(-r), (unsigned long long)copied);
	{
		uint64_t left = s.total / 2;

		pos = off;
		for (uint32_t k = 0; k < s.n; k++) {
			size_t l = s.iov[k].iov_len, take = l < left ? l : left;

			REQUIRE(cm_check_pattern(s.iov[k].iov_base, take, BG_SEED,
						 pos) < 0, "FROM half iov %u", k);
			REQUIRE(cm_check_byte((uint8_t *)s.iov[k].iov_base + take,
					      l - take, GUARD) < 0,
				"FROM copied past length into iov %u", k);
			left -= take;
			pos += take;
		}
	}

	/* TO from the segments */
	cm_fill_pattern(s.buf, s.buf_len, 77);
	off = SMALL_REGION - s.total - 3;
	r = cm_copyv(e.fd, e.owner.cookie, off, s.iov, s.n, s.total,
		     COOPMPI_COPY_TO_REGION, &copied);
	REQUIRE(r == 0 && copied == s.total, "TO %u iovs: %s copied %llu", s.n,
		cm_errname(-r), (unsigned long long)copied);
	pos = off;
	for (uint32_t k = 0; k < s.n; k++) {
		REQUIRE(memcmp(e.shm.view + pos, s.iov[k].iov_base,
			       s.iov[k].iov_len) == 0, "TO iov %u landed wrong", k);
		pos += s.iov[k].iov_len;
	}
	REQUIRE(cm_check_pattern(e.shm.view, off, BG_SEED, 0) < 0,
		"TO iov wrote before its range");
	REQUIRE(cm_check_pattern(e.shm.view + off + s.total, 3, BG_SEED,
				 off + s.total) < 0, "TO iov wrote after its range");
	free(s.iov);
	cm_unmap(s.buf, s.buf_len);
	env_fini(&e);
}
END_TEST

START_TEST(test_copy_zero_bytes)
{
	struct copy_env e;
	uint8_t local[64];
	struct iovec iov = { local, sizeof(local) };
	uint64_t copied;

	env_init(&e, SMALL_REGION, COOPMPI_REGION_READ | COOPMPI_REGION_WRITE);
	for (int dir = 0; dir < 2; dir++) {
		uint64_t offs[] = { 0, 100, SMALL_REGION - 1 };

		for (int k = 0; k < 3; k++) {
			int r;

			memset(local, GUARD, sizeof(local));
			r = cm_copyv(e.fd, e.owner.cookie, offs[k], &iov, 1, 0,
				     dir ? COOPMPI_COPY_TO_REGION :
					   COOPMPI_COPY_FROM_REGION, &copied);
			REQUIRE(r == 0 && copied == 0,
				"0-byte COPY %s at %llu: %s copied %llu",
				dir ? "TO" : "FROM", (unsigned long long)offs[k],
				cm_errname(-r), (unsigned long long)copied);
			REQUIRE(cm_check_byte(local, sizeof(local), GUARD) < 0,
				"0-byte COPY wrote local memory");
		}
	}
	REQUIRE(cm_check_pattern(e.shm.view, SMALL_REGION, BG_SEED, 0) < 0,
		"0-byte COPY modified the region");
	env_fini(&e);
}
END_TEST

START_TEST(test_copy_64mib)
{
	const size_t sz = 64u << 20;
	struct copy_env e;
	uint8_t *local;
	uint64_t copied, t0;
	long bad;
	int r;

	env_init(&e, sz, COOPMPI_REGION_READ | COOPMPI_REGION_WRITE);
	local = cm_map_anon(sz + 4096);
	memset(local + sz, GUARD, 4096);
	t0 = cm_now_ms();
	r = cm_copy(e.fd, e.owner.cookie, 0, local, sz, COOPMPI_COPY_FROM_REGION,
		    &copied);
	REQUIRE(r == 0 && copied == sz, "64 MiB FROM: %s copied %llu",
		cm_errname(-r), (unsigned long long)copied);
	printf("64 MiB FROM: %llu ms\n", (unsigned long long)(cm_now_ms() - t0));
	bad = cm_check_pattern(local, sz, BG_SEED, 0);
	REQUIRE(bad < 0, "64 MiB FROM: byte %ld wrong", bad);
	REQUIRE(cm_check_byte(local + sz, 4096, GUARD) < 0, "overrun");

	cm_fill_pattern(local, sz, 4242);
	t0 = cm_now_ms();
	r = cm_copy(e.fd, e.owner.cookie, 0, local, sz, COOPMPI_COPY_TO_REGION,
		    &copied);
	REQUIRE(r == 0 && copied == sz, "64 MiB TO: %s copied %llu",
		cm_errname(-r), (unsigned long long)copied);
	printf("64 MiB TO: %llu ms\n", (unsigned long long)(cm_now_ms() - t0));
	bad = cm_check_pattern(e.shm.view, sz, 4242, 0);
	REQUIRE(bad < 0, "64 MiB TO: byte %ld wrong", bad);
	cm_unmap(local, sz + 4096);
	env_fini(&e);
}
END_TEST

/* three copiers hammer one region at once, each in its own slice */
START_TEST(test_copy_concurrent)
{
	const size_t sz = 8u << 20, slice = sz / 4;
	struct copy_env e;
	pid_t pids[3];

	env_init(&e, sz, COOPMPI_REGION_READ | COOPMPI_REGION_WRITE);
	for (int c = 0; c < 3; c++) {
		pids[c] = cm_fork();
		if (pids[c] == 0) {
			int fd = cm_open_join(e.key, COOPMPI_JOIN_EXISTING, NULL);
			uint8_t *local = cm_map_anon(slice);
			struct cm_rng rng;
			uint64_t copied;

			cm_rng_seed(&rng, (uint64_t)c + 99);
			for (int it = 0; it < 60; it++) {
				uint64_t len = 1 + cm_rng_below(&rng, slice);
				uint64_t off = cm_rng_below(&rng, slice - len + 1);
				uint64_t seed = (uint64_t)c * 1000 + (uint64_t)it;

				/* write a slice of my own, read it back */
				cm_fill_pattern(local, len, seed);
				REQUIRE_OK(cm_copy(fd, e.owner.cookie,
						   (uint64_t)c * slice + off, local,
						   len, COOPMPI_COPY_TO_REGION,
						   &copied));
				memset(local, 0, len);
				REQUIRE_OK(cm_copy(fd, e.owner.cookie,
						   (uint64_t)c * slice + off, local,
						   len, COOPMPI_COPY_FROM_REGION,
						   &copied));
				REQUIRE(copied == len &&
					cm_check_pattern(local, len, seed, 0) < 0,
					"copier %d iteration %d read back wrong", c,
					it);
				/* and read the untouched last slice */
				len = 1 + cm_rng_below(&rng, 65536);
				REQUIRE_OK(cm_copy(fd, e.owner.cookie, 3 * slice,
						   local, len,
						   COOPMPI_COPY_FROM_REGION,
						   &copied));
				REQUIRE(cm_check_pattern(local, len, BG_SEED,
							 3 * slice) < 0,
					"copier %d: last slice wrong", c);
			}
			_exit(0);
		}
	}
	for (int c = 0; c < 3; c++)
		cm_wait_ok(pids[c], "concurrent copier");
	REQUIRE(cm_check_pattern(e.shm.view + 3 * slice, slice, BG_SEED,
				 3 * slice) < 0, "untouched slice modified");
	env_fini(&e);
}
END_TEST

void add_copy_tests(Suite *s)
{
	TCase *tc = cm_tcase("copy", 120);

	tcase_add_test(tc, test_copy_from_unaligned);
	tcase_add_test(tc, test_copy_to_unaligned);
	tcase_add_test(tc, test_copy_iovec);
	tcase_add_test(tc, test_copy_zero_bytes);
	tcase_add_test(tc, test_copy_64mib);
	tcase_add_test(tc, test_copy_concurrent);
	suite_add_tcase(s, tc);
}
