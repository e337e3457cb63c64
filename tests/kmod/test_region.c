// SPDX-License-Identifier: GPL-2.0
/*
 * test_region.c - region registration and copy error paths: bad
 * registrations, bounds, access rights, stale/foreign cookies, owners that
 * exited, remote and local memory that is not there.
 */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define RLEN (64 * 1024)

struct pair {
	uint64_t key;
	int owner, peer;
	struct coopmpi_join jo, jp;
	uint8_t *buf;
};

static void pair_init(struct pair *p)
{
	p->key = cm_unique_key();
	p->owner = cm_open_join(p->key, COOPMPI_JOIN_CREATE, &p->jo);
	p->peer = cm_open_join(p->key, COOPMPI_JOIN_EXISTING, &p->jp);
	p->buf = cm_map_anon(RLEN);
	cm_fill_pattern(p->buf, RLEN, 77);
}

START_TEST(test_register_invalid)
{
	struct pair p;
	uint64_t c = 0;
	int r;

	pair_init(&p);
	REQUIRE_ERR(cm_reg(p.owner, p.buf, RLEN, 1u << 3, &c), EINVAL);
	REQUIRE_ERR(cm_reg(p.owner, p.buf, RLEN,
			   COOPMPI_REGION_READ | 0x80000000u, &c), EINVAL);
	REQUIRE_ERR(cm_reg(p.owner, p.buf, 0, COOPMPI_REGION_READ, &c), EINVAL);
	REQUIRE_ERR(cm_reg(p.owner, (void *)(uintptr_t)(UINT64_MAX - 4095), 8192,
			   COOPMPI_REGION_READ, &c), EINVAL);
	REQUIRE_ERR(cm_reg(p.owner, p.buf, UINT64_MAX, COOPMPI_REGION_READ, &c),
		    EINVAL);
	REQUIRE_ERR(cm_reg(p.owner, p.buf, UINT64_MAX - (uintptr_t)p.buf + 2,
			   COOPMPI_REGION_READ, &c), EINVAL);
	/* kernel addresses are never a user region */
	r = cm_reg(p.owner, (void *)0xffff888000000000ULL, 4096,
		   COOPMPI_REGION_READ, &c);
	REQUIRE(r == -EINVAL || r == -EFAULT,
		"registering a kernel address: %s", cm_errname(-r));
	/* sanity: the same call with good arguments works */
	REQUIRE_OK(cm_reg(p.owner, p.buf, RLEN, COOPMPI_REGION_READ, &c));
	REQUIRE_OK(cm_dereg(p.owner, c));
}
END_TEST

START_TEST(test_copy_bounds)
{
	struct pair p;
	uint8_t local[4096];
	uint64_t c, copied;
	struct { uint64_t off, len; } bad[] = {
		{ RLEN, 1 },
		{ RLEN - 10, 11 },
		{ 0, RLEN + 1 },
		{ RLEN + 4096, 16 },
		{ UINT64_MAX - 5, 10 },
		{ UINT64_MAX, 1 },
		{ 1ULL << 63, 16 },
	};

	pair_init(&p);
	REQUIRE_OK(cm_reg(p.owner, p.buf, RLEN,
			  COOPMPI_REGION_READ | COOPMPI_REGION_WRITE, &c));
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		for (int dir = 0; dir < 2; dir++) {
			uint32_t fl = dir ? COOPMPI_COPY_TO_REGION :
					    COOPMPI_COPY_FROM_REGION;
			uint64_t len = bad[i].len;
			uint8_t *lb = local;
			int r;

			if (len > sizeof(local))
				lb = cm_map_anon(len);
			memset(lb, 0xcd, len);
			r = cm_copy(p.peer, c, bad[i].off, lb, len, fl, &copied);
			REQUIRE(r == -ERANGE,
				"COPY %s offset %#llx len %llu of a %u-byte region: %s, want ERANGE",
				dir ? "TO" : "FROM",
				(unsigned long long)bad[i].off,
				(unsigned long long)len, RLEN, cm_errname(-r));
			REQUIRE(cm_check_byte(lb, len, 0xcd) < 0,
				"out-of-bounds COPY wrote local memory");
			if (lb != local)
				cm_unmap(lb, len);
		}
	}
	REQUIRE(cm_check_pattern(p.buf, RLEN, 77, 0) < 0,
		"out-of-bounds COPY modified the region");
	/* the exact end is fine */
	REQUIRE_OK(cm_copy(p.peer, c, RLEN - 10, local, 10,
			   COOPMPI_COPY_FROM_REGION, &copied));
	REQUIRE(copied == 10 && cm_check_pattern(local, 10, 77, RLEN - 10) < 0,
		"copy up to the end: copied %llu", (unsigned long long)copied);
	REQUIRE_OK(cm_copy(p.peer, c, 0, local, 1, COOPMPI_COPY_FROM_REGION,
			   &copied));
	REQUIRE(copied == 1, "copied %llu", (unsigned long long)copied);
}
END_TEST

START_TEST(test_copy_access)
{
	struct pair p;
	uint8_t local[512];
	uint64_t cr, cw, copied;

	pair_init(&p);
	REQUIRE_OK(cm_reg(p.owner, p.buf, RLEN / 2, COOPMPI_REGION_READ, &cr));
	REQUIRE_OK(cm_reg(p.owner, p.buf + RLEN / 2, RLEN / 2,
			  COOPMPI_REGION_WRITE, &cw));
	REQUIRE(cr != cw, "two regions share cookie %#llx",
		(unsigned long long)cr);

	memset(local, 0x3c, sizeof(local));
	REQUIRE_ERR(cm_copy(p.peer, cr, 0, local, sizeof(local),
			    COOPMPI_COPY_TO_REGION, &copied), EACCES);
	REQUIRE(cm_check_pattern(p.buf, RLEN, 77, 0) < 0,
		"write into a READ-only region changed it");
	REQUIRE_ERR(cm_copy(p.peer, cw, 0, local, sizeof(local),
			    COOPMPI_COPY_FROM_REGION, &copied), EACCES);
	REQUIRE(cm_check_byte(local, sizeof(local), 0x3c) < 0,
		"read from a WRITE-only region filled local memory");

	/* the allowed directions work */
	REQUIRE_OK(cm_copy(p.peer, cr, 100, local, sizeof(local),
			   COOPMPI_COPY_FROM_REGION, &copied));
	REQUIRE(copied == sizeof(local) &&
		cm_check_pattern(local, sizeof(local), 77, 100) < 0,
		"READ region copy wrong");
	memset(local, 0x3c, sizeof(local));
	REQUIRE_OK(cm_copy(p.peer, cw, 8, local, sizeof(local),
			   COOPMPI_COPY_TO_REGION, &copied));
	REQUIRE(copied == sizeof(local) &&
		cm_check_byte(p.buf + RLEN / 2 + 8, sizeof(local), 0x3c) < 0,
		"WRITE region copy wrong");
	REQUIRE(cm_check_pattern(p.buf + RLEN / 2, 8, 77, RLEN / 2) < 0 &&
		cm_check_pattern(p.buf + RLEN / 2 + 8 + sizeof(local),
				 RLEN / 2 - 8 - sizeof(local), 77,
				 RLEN / 2 + 8 + sizeof(local)) < 0,
		"WRITE copy touched bytes outside its range");
}
END_TEST

START_TEST(test_cookie_lifetime)
{
	struct pair p;
	uint8_t local[64];
	uint64_t c, c2, copied;

	pair_init(&p);
	REQUIRE_OK(cm_reg(p.owner, p.buf, RLEN, COOPMPI_REGION_READ, &c));
	REQUIRE_OK(cm_copy(p.peer, c, 0, local, sizeof(local),
			   COOPMPI_COPY_FROM_REGION, &copied));

	/* someone else's cookie cannot be deregistered (not even by the
	 * peer that can copy from it) */
	REQUIRE_ERR(cm_dereg(p.peer, c), ENXIO);
	REQUIRE_OK(cm_copy(p.peer, c, 0, local, sizeof(local),
			   COOPMPI_COPY_FROM_REGION, &copied));

	/* never-registered cookies */
	REQUIRE_ERR(cm_dereg(p.owner, c ^ 0x5a5a5a5a00000000ULL), ENXIO);
	REQUIRE_ERR(cm_copy(p.peer, c ^ 0x5a5a5a5a00000000ULL, 0, local, 8,
			    COOPMPI_COPY_FROM_REGION, &copied), ENXIO);

	REQUIRE_OK(cm_dereg(p.owner, c));
	REQUIRE_ERR(cm_copy(p.peer, c, 0, local, sizeof(local),
			    COOPMPI_COPY_FROM_REGION, &copied), ENXIO);
	REQUIRE_ERR(cm_copy(p.owner, c, 0, local, sizeof(local),
			    COOPMPI_COPY_FROM_REGION, &copied), ENXIO);
	REQUIRE_ERR(cm_dereg(p.owner, c), ENXIO);

	/* a new registration never revives the old cookie */
	REQUIRE_OK(cm_reg(p.owner, p.buf, RLEN, COOPMPI_REGION_READ, &c2));
	REQUIRE(c2 != c, "cookie %#llx reused right after deregistration",
		(unsigned long long)c);
	REQUIRE_ERR(cm_copy(p.peer, c, 0, local, 8, COOPMPI_COPY_FROM_REGION,
			    &copied), ENXIO);
	REQUIRE_OK(cm_copy(p.peer, c2, 0, local, 8, COOPMPI_COPY_FROM_REGION,
			   &copied));

	/* closing the owner endpoint removes its regions */
	close(p.owner);
	{
		int r = cm_copy(p.peer, c2, 0, local, 8,
				COOPMPI_COPY_FROM_REGION, &copied);

		REQUIRE(r == -ENXIO || r == -ESRCH,
			"COPY from a closed endpoint's region: %s", cm_errname(-r));
	}
}
END_TEST

/*
 * _i == 0: the owner process exits (its endpoint goes with it);
 * _i == 1: the endpoint outlives the process that registered the region
 *          (the fd is shared with the test), so only the mm is gone.
 */
START_TEST(test_owner_exited)
{
	uint64_t key = cm_unique_key(), c, copied;
	struct coopmpi_join jp;
	uint8_t local[4096];
	int peer = cm_open_join(key, COOPMPI_JOIN_CREATE, &jp);
	int shared = -1, sv[2], r;
	pid_t pid;

	if (_i == 1)
		shared = cm_open_join(key, COOPMPI_JOIN_EXISTING, NULL);
	cm_socketpair(sv);
	pid = cm_fork();
	if (pid == 0) {
		uint8_t *mem = cm_map_anon(1 << 20);
		int fd = shared >= 0 ? shared :
			 cm_open_join(key, COOPMPI_JOIN_EXISTING, NULL);

		close(sv[0]);
		cm_fill_pattern(mem, 1 << 20, 3);
		REQUIRE_OK(cm_reg(fd, mem, 1 << 20,
				  COOPMPI_REGION_READ | COOPMPI_REGION_WRITE,
				  &c));
		cm_put_u64(sv[1], c);
		(void)cm_get_u64(sv[1]);
		_exit(0);
	}
	close(sv[1]);
	c = cm_get_u64_from(sv[0], pid, "child");
	REQUIRE_OK(cm_copy(peer, c, 4096, local, sizeof(local),
			   COOPMPI_COPY_FROM_REGION, &copied));
	REQUIRE(cm_check_pattern(local, sizeof(local), 3, 4096) < 0,
		"copy from the live owner returned wrong data");
	cm_put_u64(sv[0], 0);
	cm_wait_ok(pid, "region owner");
	close(sv[0]);

	for (int dir = 0; dir < 2; dir++) {
		r = cm_copy(peer, c, 0, local, sizeof(local),
			    dir ? COOPMPI_COPY_TO_REGION : COOPMPI_COPY_FROM_REGION,
			    &copied);
		REQUIRE(r == -ENXIO || r == -ESRCH,
			"COPY %s a region whose owner exited: %s, want ENXIO/ESRCH",
			dir ? "to" : "from", cm_errname(-r));
	}
	if (shared >= 0) {
		/* deregistering through the surviving endpoint must not crash */
		r = cm_dereg(shared, c);
		REQUIRE(r == 0 || r == -ENXIO || r == -ESRCH,
			"DEREGISTER after the owner mm died: %s", cm_errname(-r));
		close(shared);
	}
	close(peer);
}
END_TEST

START_TEST(test_copy_bad_memory)
{
	struct pair p;
	uint64_t c, copied;
	uint8_t *local = cm_map_anon(RLEN), *hole;
	struct iovec iov[2];
	int r;

	pair_init(&p);
	REQUIRE_OK(cm_reg(p.owner, p.buf, RLEN,
			  COOPMPI_REGION_READ | COOPMPI_REGION_WRITE, &c));

	/* bad local memory */
	r = cm_copy(p.peer, c, 0, NULL, 4096, COOPMPI_COPY_FROM_REGION, &copied);
	REQUIRE(r == -EFAULT, "COPY into NULL: %s", cm_errname(-r));
	r = cm_copy(p.peer, c, 0, (void *)0xffff888000000000ULL, 4096,
		    COOPMPI_COPY_FROM_REGION, &copied);
	REQUIRE(r == -EFAULT, "COPY into a kernel address: %s", cm_errname(-r));
	r = cm_copy(p.peer, c, 0, (void *)0xffffffff81000000ULL, 4096,
		    COOPMPI_COPY_TO_REGION, &copied);
	REQUIRE(r == -EFAULT, "COPY from a kernel address: %s", cm_errname(-r));
	REQUIRE(cm_check_pattern(p.buf, RLEN, 77, 0) < 0,
		"COPY from kernel memory changed the region");

	/* second half of the local buffer is missing: copied tells */
	hole = local + RLEN / 2;
	REQUIRE(munmap(hole, RLEN / 2) == 0, "munmap");
	copied = 0;
	r = cm_copy(p.peer, c, 0, local, RLEN, COOPMPI_COPY_FROM_REGION,
		    &copied);
	REQUIRE(r == -EFAULT, "COPY into a half-unmapped buffer: %s",
		cm_errname(-r));
	REQUIRE(copied <= RLEN / 2, "copied %llu past the hole",
		(unsigned long long)copied);
	REQUIRE(cm_check_pattern(local, copied, 77, 0) < 0,
		"the %llu bytes reported copied are wrong",
		(unsigned long long)copied);

	/* iov array itself unreadable */
	r = cm_copyv(p.peer, c, 0, (struct iovec *)hole, 1, 16,
		     COOPMPI_COPY_FROM_REGION, &copied);
	REQUIRE(r == -EFAULT, "COPY with an unreadable iov array: %s",
		cm_errname(-r));

	/* iov total shorter than length */
	iov[0].iov_base = local;
	iov[0].iov_len = 100;
	iov[1].iov_base = local + 200;
	iov[1].iov_len = 100;
	r = cm_copyv(p.peer, c, 0, iov, 2, 201, COOPMPI_COPY_FROM_REGION,
		     &copied);
	REQUIRE(r == -EINVAL || r == -EFAULT || r == -ERANGE,
		"iov total 200 < length 201: %s", cm_errname(-r));
	/* too many iovs */
	{
		struct iovec *many = calloc(COOPMPI_COPY_MAX_IOV + 1, sizeof(*many));

		REQUIRE(many, "calloc");
		for (int i = 0; i <= COOPMPI_COPY_MAX_IOV; i++) {
			many[i].iov_base = local + i;
			many[i].iov_len = 1;
		}
		r = cm_copyv(p.peer, c, 0, many, COOPMPI_COPY_MAX_IOV + 1,
			     COOPMPI_COPY_MAX_IOV + 1, COOPMPI_COPY_FROM_REGION,
			     &copied);
		REQUIRE(r == -EINVAL, "COPY with %d iovs: %s, want EINVAL",
			COOPMPI_COPY_MAX_IOV + 1, cm_errname(-r));
		free(many);
	}
	cm_unmap(local, RLEN / 2);
}
END_TEST

/* the owner unmaps (part of) a registered range: -EFAULT, no crash */
START_TEST(test_region_memory_unmapped)
{
	struct pair p;
	uint64_t c, copied;
	uint8_t *local = cm_map_anon(RLEN);
	int r;

	pair_init(&p);
	REQUIRE_OK(cm_reg(p.owner, p.buf, RLEN,
			  COOPMPI_REGION_READ | COOPMPI_REGION_WRITE, &c));
	REQUIRE(munmap(p.buf + RLEN / 2, RLEN / 2) == 0, "munmap");
	r = cm_copy(p.peer, c, 0, local, RLEN, COOPMPI_COPY_FROM_REGION,
		    &copied);
	REQUIRE(r == -EFAULT, "COPY from a half-unmapped region: %s",
		cm_errname(-r));
	REQUIRE(copied <= RLEN / 2, "copied %llu", (unsigned long long)copied);
	REQUIRE(cm_check_pattern(local, copied, 77, 0) < 0,
		"reported-copied bytes wrong");
	r = cm_copy(p.peer, c, RLEN / 2, local, 4096, COOPMPI_COPY_TO_REGION,
		    &copied);
	REQUIRE(r == -EFAULT, "COPY into an unmapped part: %s", cm_errname(-r));
	REQUIRE(copied == 0, "copied %llu into nothing",
		(unsigned long long)copied);
	/* the mapped half still works */
	REQUIRE_OK(cm_copy(p.peer, c, 100, local, 1000,
			   COOPMPI_COPY_FROM_REGION, &copied));
	REQUIRE(cm_check_pattern(local, 1000, 77, 100) < 0, "data");
	/* a read-only mapping registered READ|WRITE: writes fail cleanly */
	REQUIRE(mprotect(p.buf, RLEN / 2, PROT_READ) == 0, "mprotect");
	r = cm_copy(p.peer, c, 0, local, 4096, COOPMPI_COPY_TO_REGION, &copied);
	REQUIRE(r == -EFAULT, "COPY into read-only owner memory: %s",
		cm_errname(-r));
	REQUIRE(cm_check_pattern(p.buf, RLEN / 2, 77, 0) < 0,
		"read-only owner memory was modified");
	REQUIRE_OK(cm_dereg(p.owner, c));
	cm_unmap(local, RLEN);
}
END_TEST

void add_region_tests(Suite *s)
{
	TCase *tc = cm_tcase("region", 60);

	tcase_add_test(tc, test_register_invalid);
	tcase_add_test(tc, test_copy_bounds);
	tcase_add_test(tc, test_copy_access);
	tcase_add_test(tc, test_cookie_lifetime);
	tcase_add_loop_test(tc, test_owner_exited, 0, 2);
	tcase_add_test(tc, test_copy_bad_memory);
	tcase_add_test(tc, test_region_memory_unmapped);
	suite_add_tcase(s, tc);
}
