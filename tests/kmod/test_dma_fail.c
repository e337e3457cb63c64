// SPDX-License-Identifier: GPL-2.0
/*
 * test_dma_fail.c - the DMA channel when things go wrong: bad descriptors
 * of every kind, bad DMA_SUBMIT arguments, regions and owners vanishing
 * under descriptors in flight, the endpoint closed and the submitter
 * killed with descriptors in flight, a userfaultfd closed under them, the
 * in-flight bounds, engine errors, and the sysfs/counters-page accounting
 * returning to zero.
 *
 * Descriptors are held in flight deterministically by a source in
 * userfaultfd memory (see cm_uffd_create).
 */
#include "dma_helpers.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define RLEN (256u << 10)

struct fctx {
	uint64_t key;
	struct coopmpi_join j;
	int fd;
	struct cm_cq cq;
	uint8_t *mine;			/* my own region, RLEN bytes */
	uint64_t rw, ro, wo;		/* cookies over it: RW, READ, WRITE */
	uint8_t *local;
};

static void fctx_open(struct fctx *x)
{
	x->key = cm_unique_key();
	x->fd = cm_open_join(x->key, COOPMPI_JOIN_CREATE, &x->j);
	REQUIRE_OK(cm_cq_map(x->fd, &x->cq));
	x->mine = cm_map_anon(RLEN);
	REQUIRE_OK(cm_reg(x->fd, x->mine, RLEN,
			  COOPMPI_REGION_READ | COOPMPI_REGION_WRITE, &x->rw));
	REQUIRE_OK(cm_reg(x->fd, x->mine, RLEN, COOPMPI_REGION_READ, &x->ro));
	REQUIRE_OK(cm_reg(x->fd, x->mine, RLEN, COOPMPI_REGION_WRITE, &x->wo));
	x->local = cm_map_anon(RLEN);
	cm_fill_pattern(x->local, RLEN, 61);
}

static void fctx_close(struct fctx *x)
{
	cm_cq_unmap(&x->cq);
	close(x->fd);
	cm_unmap(x->mine, RLEN);
	cm_unmap(x->local, RLEN);
}

/* a valid descriptor: local -> mine, with a notification */
static void valid_desc(struct fctx *x, struct coopmpi_dma_desc *d)
{
	cm_desc_local(d, x->local, x->rw, 4096, 1000, 1);
	cm_desc_notify(d, x->rw, RLEN - 16, 1, 2);
}

enum bad_kind {
	BAD_FLAGS, BAD_RESERVED0, BAD_RESERVED, BAD_SRC_COOKIE_NO_FLAG,
	BAD_NTF_COOKIE_NO_FLAG, BAD_NTF_OFF_NO_FLAG, BAD_NTF_DATA_NO_FLAG,
	BAD_ZERO_LEN_NO_NTF, BAD_ZERO_LEN_DST, BAD_ZERO_LEN_SRC,
	BAD_ZERO_LEN_SRC_REGION, BAD_TOO_LONG, BAD_LEN_MAX,
	BAD_DST_COOKIE0, BAD_DST_UNKNOWN, BAD_DST_OLD_GEN, BAD_DST_RO,
	BAD_DST_RANGE, BAD_DST_OFF_MAX, BAD_DST_OFF_END,
	BAD_SRC_UNKNOWN, BAD_SRC_WO, BAD_SRC_RANGE, BAD_SRC_OFF_MAX,
	BAD_NTF_UNKNOWN, BAD_NTF_RO, BAD_NTF_RANGE, BAD_NTF_OFF_MAX,
	BAD_NTF_MISALIGNED, BAD_LOCAL_KERNEL, BAD_LOCAL_WRAP,
	BAD_LOCAL_NONCANON, BAD_DEREGISTERED, BAD_OTHER_DOMAIN,
	BAD_COUNT
};

static const struct {
	const char *name;
	int err;
} bad_table[BAD_COUNT] = {
	[BAD_FLAGS] = { "unknown flag", EINVAL },
	[BAD_RESERVED0] = { "reserved0", EINVAL },
	[BAD_RESERVED] = { "reserved[1]", EINVAL },
	[BAD_SRC_COOKIE_NO_FLAG] = { "src_cookie without SRC_REGION", EINVAL },
	[BAD_NTF_COOKIE_NO_FLAG] = { "notify_cookie without NOTIFY", EINVAL },
	[BAD_NTF_OFF_NO_FLAG] = { "notify_offset without NOTIFY", EINVAL },
	[BAD_NTF_DATA_NO_FLAG] = { "notify_data without NOTIFY", EINVAL },
	[BAD_ZERO_LEN_NO_NTF] = { "length 0 without NOTIFY", EINVAL },
	[BAD_ZERO_LEN_DST] = { "length 0 with a destination", EINVAL },
	[BAD_ZERO_LEN_SRC] = { "length 0 with a source", EINVAL },
	[BAD_ZERO_LEN_SRC_REGION] = { "length 0 with SRC_REGION", EINVAL },
	[BAD_TOO_LONG] = { "length > max_length", EINVAL },
	[BAD_LEN_MAX] = { "length UINT64_MAX", EINVAL },
	[BAD_DST_COOKIE0] = { "dst cookie 0", ENXIO },
	[BAD_DST_UNKNOWN] = { "unknown dst cookie", ENXIO },
	[BAD_DST_OLD_GEN] = { "dst cookie of another generation", ENXIO },
	[BAD_DST_RO] = { "read-only dst", EACCES },
	[BAD_DST_RANGE] = { "dst past the region", ERANGE },
	[BAD_DST_OFF_MAX] = { "dst offset UINT64_MAX", ERANGE },
	[BAD_DST_OFF_END] = { "dst offset at the end", ERANGE },
	[BAD_SRC_UNKNOWN] = { "unknown src cookie", ENXIO },
	[BAD_SRC_WO] = { "write-only src region", EACCES },
	[BAD_SRC_RANGE] = { "src past the region", ERANGE },
	[BAD_SRC_OFF_MAX] = { "src offset UINT64_MAX", ERANGE },
	[BAD_NTF_UNKNOWN] = { "unknown notify cookie", ENXIO },
	[BAD_NTF_RO] = { "read-only notify region", EACCES },
	[BAD_NTF_RANGE] = { "notification past the region", ERANGE },
	[BAD_NTF_OFF_MAX] = { "notify offset UINT64_MAX", ERANGE },
	[BAD_NTF_MISALIGNED] = { "misaligned notification", EINVAL },
	[BAD_LOCAL_KERNEL] = { "kernel source address", EFAULT },
	[BAD_LOCAL_WRAP] = { "source wrapping around", EFAULT },
	[BAD_LOCAL_NONCANON] = { "non-canonical source", EFAULT },
	[BAD_DEREGISTERED] = { "deregistered dst", ENXIO },
	[BAD_OTHER_DOMAIN] = { "dst of another domain", ENXIO },
};

static void make_bad(struct fctx *x, struct coopmpi_dma_desc *d, int k,
		     uint64_t dereg_cookie, uint64_t foreign_cookie)
{
	valid_desc(x, d);
	switch (k) {
	case BAD_FLAGS: d->flags |= 1u << 7; break;
	case BAD_RESERVED0: d->reserved0 = 1; break;
	case BAD_RESERVED: d->reserved[1] = 1; break;
	case BAD_SRC_COOKIE_NO_FLAG: d->src_cookie = x->rw; break;
	case BAD_NTF_COOKIE_NO_FLAG:
		d->flags = 0;
		d->notify_offset = 0;
		memset(d->notify_data, 0, 16);
		break;
	case BAD_NTF_OFF_NO_FLAG:
		d->flags = 0;
		d->notify_cookie = 0;
		memset(d->notify_data, 0, 16);
		break;
	case BAD_NTF_DATA_NO_FLAG:
		d->flags = 0;
		d->notify_cookie = 0;
		d->notify_offset = 0;
		break;
	case BAD_ZERO_LEN_NO_NTF:
		memset(d, 0, sizeof(*d));
		break;
	case BAD_ZERO_LEN_DST:
		d->length = 0;
		d->src = 0;
		break;
	case BAD_ZERO_LEN_SRC:
		d->length = 0;
		d->dst_cookie = 0;
		d->dst_offset = 0;
		break;
	case BAD_ZERO_LEN_SRC_REGION:
		d->length = 0;
		d->src = 0;
		d->dst_cookie = 0;
		d->dst_offset = 0;
		d->flags |= COOPMPI_DMA_SRC_REGION;
		break;
	case BAD_TOO_LONG: d->length = cm_dma_info_cache.max_length + 1; break;
	case BAD_LEN_MAX: d->length = UINT64_MAX; break;
	case BAD_DST_COOKIE0: d->dst_cookie = 0; break;
	case BAD_DST_UNKNOWN: d->dst_cookie = x->rw + 1000; break;
	case BAD_DST_OLD_GEN: d->dst_cookie = x->rw ^ (1ULL << 40); break;
	case BAD_DST_RO: d->dst_cookie = x->ro; break;
	case BAD_DST_RANGE: d->dst_offset = RLEN - 999; break;
	case BAD_DST_OFF_MAX: d->dst_offset = UINT64_MAX; break;
	case BAD_DST_OFF_END:
		d->dst_offset = RLEN;
		d->length = 1;
		break;
	case BAD_SRC_UNKNOWN:
		d->flags |= COOPMPI_DMA_SRC_REGION;
		d->src = 0;
		d->src_cookie = x->rw + 77;
		break;
	case BAD_SRC_WO:
		d->flags |= COOPMPI_DMA_SRC_REGION;
		d->src = 0;
		d->src_cookie = x->wo;
		break;
	case BAD_SRC_RANGE:
		d->flags |= COOPMPI_DMA_SRC_REGION;
		d->src = RLEN - 999;
		d->src_cookie = x->ro;
		break;
	case BAD_SRC_OFF_MAX:
		d->flags |= COOPMPI_DMA_SRC_REGION;
		d->src = UINT64_MAX;
		d->src_cookie = x->ro;
		break;
	case BAD_NTF_UNKNOWN: d->notify_cookie = 12345; break;
	case BAD_NTF_RO: d->notify_cookie = x->ro; break;
	case BAD_NTF_RANGE: d->notify_offset = RLEN - 8; break;
	case BAD_NTF_OFF_MAX: d->notify_offset = UINT64_MAX; break;
	case BAD_NTF_MISALIGNED: d->notify_offset = 4096 + 8; break;
	case BAD_LOCAL_KERNEL: d->src = 0xffff888000000000ULL; break;
	case BAD_LOCAL_WRAP:
		d->src = UINT64_MAX - 100;
		break;
	/* above the user address space even with 5-level paging */
	case BAD_LOCAL_NONCANON: d->src = 0x0200000000000000ULL; break;
	case BAD_DEREGISTERED: d->dst_cookie = dereg_cookie; break;
	case BAD_OTHER_DOMAIN: d->dst_cookie = foreign_cookie; break;
	}
}

START_TEST(test_dma_bad_desc)
{
	struct coopmpi_dma_desc d;
	struct coopmpi_dma_cqe e;
	uint64_t dereg, foreign, errs0;
	struct fctx x;
	uint32_t done;
	int other;

	if (!cm_dma_available())
		return;
	fctx_open(&x);
	REQUIRE_OK(cm_reg(x.fd, x.mine, RLEN, COOPMPI_REGION_WRITE, &dereg));
	REQUIRE_OK(cm_dereg(x.fd, dereg));
	/* cookies count per domain: make it one this domain never had */
	other = cm_open_join(cm_unique_key(), COOPMPI_JOIN_CREATE, NULL);
	for (int i = 0; i < 10; i++)
		REQUIRE_OK(cm_reg(other, x.mine, RLEN, COOPMPI_REGION_WRITE,
				  &foreign));
	errs0 = cm_sysfs_u64("dma_errors");

	for (int k = 0; k < BAD_COUNT; k++) {
		int r;

		make_bad(&x, &d, k, dereg, foreign);
		r = cm_dma_submit(x.fd, &d, 1, &done);
		REQUIRE(r == -bad_table[k].err,
			"%s: DMA_SUBMIT returned %s, want %s", bad_table[k].name,
			cm_errname(-r), cm_errname(bad_table[k].err));
		REQUIRE(done == 0, "%s: done %u", bad_table[k].name, done);
	}
	/* refused descriptors leave no trace */
	REQUIRE(cm_cq_reap(&x.cq, &e, 1) == 0, "CQE for a refused descriptor");
	REQUIRE(cm_sysfs_u64("dma_errors") == errs0,
		"refused descriptors counted as errors");
	REQUIRE(cm_sysfs_u64("dma_ops") == 0, "dma_ops");

	/* and the valid one works */
	valid_desc(&x, &d);
	e = cm_dma_run(x.fd, &x.cq, &d);
	REQUIRE(e.status == 0 && e.bytes == 1000, "valid: %d %llu", e.status,
		(unsigned long long)e.bytes);
	REQUIRE(cm_check_pattern(x.mine + 4096, 1000, 61, 0) < 0, "data");
	close(other);
	fctx_close(&x);
}
END_TEST

START_TEST(test_dma_bad_submit)
{
	struct coopmpi_dma_desc d[4];
	struct coopmpi_dma_submit s;
	struct coopmpi_dma_cqe e[2];
	uint8_t big[2 * sizeof(struct coopmpi_dma_desc)];
	struct fctx x;
	uint32_t done;
	int u;

	if (!cm_dma_available())
		return;
	fctx_open(&x);
	valid_desc(&x, &d[0]);

	u = cm_open();
	REQUIRE_ERR(cm_dma_submit(u, d, 1, &done), ENOTCONN);
	close(u);

#define SUBMIT_FIELD(field, val, err)					\
	do {								\
		memset(&s, 0, sizeof(s));				\
		s.size = sizeof(s);					\
		s.descs = (uintptr_t)d;					\
		s.count = 1;						\
		s.desc_size = sizeof(d[0]);				\
		s.field = val;						\
		REQUIRE_ERR(cm_ioctl(x.fd, COOPMPI_IOC_DMA_SUBMIT, &s), err); \
	} while (0)
	SUBMIT_FIELD(flags, 1, EINVAL);
	SUBMIT_FIELD(reserved0, 1, EINVAL);
	SUBMIT_FIELD(reserved[1], 1, EINVAL);
	SUBMIT_FIELD(count, COOPMPI_DMA_MAX_BATCH + 1, EINVAL);
	SUBMIT_FIELD(desc_size, sizeof(d[0]) - 8, EINVAL);
	SUBMIT_FIELD(desc_size, 0, EINVAL);
	SUBMIT_FIELD(desc_size, 4097, EINVAL);
	SUBMIT_FIELD(descs, 0xffff888000000000ULL, EFAULT);
	SUBMIT_FIELD(descs, 0, EFAULT);
#undef SUBMIT_FIELD

	/* count 0 is a no-op */
	REQUIRE_OK(cm_dma_submit(x.fd, NULL, 0, &done));
	REQUIRE(done == 0, "done %u", done);

	/* a longer record: zero tail accepted, non-zero tail -E2BIG */
	memset(big, 0, sizeof(big));
	memcpy(big, &d[0], sizeof(d[0]));
	REQUIRE_OK(cm_dma_submitv(x.fd, big, 1, sizeof(big), &done));
	cm_cq_wait(x.fd, &x.cq, e, 1, 10000);
	REQUIRE(e[0].status == 0, "longer record: %d", e[0].status);
	big[sizeof(big) - 1] = 1;
	REQUIRE_ERR(cm_dma_submitv(x.fd, big, 1, sizeof(big), &done), E2BIG);

	/* a batch stops at the first bad one; the ones before it run */
	valid_desc(&x, &d[1]);
	d[1].user_tag = 2;
	valid_desc(&x, &d[2]);
	d[2].reserved0 = 9;
	valid_desc(&x, &d[3]);
	REQUIRE_ERR(cm_dma_submit(x.fd, d, 4, &done), EINVAL);
	REQUIRE(done == 2, "batch with a bad third: done %u, want 2", done);
	cm_cq_wait(x.fd, &x.cq, e, 2, 10000);
	REQUIRE(e[0].status == 0 && e[1].status == 0 &&
		e[0].user_tag + e[1].user_tag == 3,
		"the two accepted ones: %d/%llu %d/%llu", e[0].status,
		(unsigned long long)e[0].user_tag, e[1].status,
		(unsigned long long)e[1].user_tag);
	/* a descriptor array running into unmapped memory */
	{
		uint8_t *pg = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct coopmpi_dma_desc *t;

		REQUIRE(pg != MAP_FAILED, "mmap");
		munmap(pg + 4096, 4096);
		t = (void *)(pg + 4096 - sizeof(*t));
		valid_desc(&x, t);
		REQUIRE_ERR(cm_dma_submit(x.fd, t, 2, &done), EFAULT);
		REQUIRE(done == 1, "done %u", done);
		cm_cq_wait(x.fd, &x.cq, e, 1, 10000);
		munmap(pg, 4096);
	}
	cm_dma_wait_idle(10000);
	fctx_close(&x);
}
END_TEST

/*
 * Memory vanishing under descriptors held in flight: the destination
 * deregistered (-ENXIO), its owner killed (-ESRCH), the source region
 * deregistered (-ENXIO), the submitter's own source unmapped (-EFAULT).
 * _i picks the case.
 */
START_TEST(test_dma_region_gone)
{
	static const char *const what[] = {
		"destination deregistered", "destination owner killed",
		"source region deregistered", "local source unmapped",
	};
	static const int want[] = { -ENXIO, -ESRCH, -ENXIO, -EFAULT };
	struct coopmpi_dma_desc d;
	struct coopmpi_dma_cqe e;
	struct cm_owner o;
	struct cm_uffd uf;
	struct cm_shm shm;
	struct fctx x;
	uint32_t done;
	int st;

	if (!cm_dma_available())
		return;
	fctx_open(&x);
	cm_shm_create(&shm, RLEN);
	cm_owner_spawn(&o, x.key, &shm, 0,
		       COOPMPI_REGION_READ | COOPMPI_REGION_WRITE, 0);
	cm_uffd_create(&uf, 1 << 20);
	memset(shm.view, 0xEE, RLEN);

	if (_i != 2) {
		cm_desc_local(&d, uf.area, o.cookie, 0, 8192, 1);
		cm_desc_notify(&d, o.cookie, RLEN - 16, 3, 3);
	} else {
		/* from the owner's region into mine, stalled on my side */
		REQUIRE_OK(cm_reg(x.fd, uf.area, 1 << 20, COOPMPI_REGION_WRITE,
				  &x.wo));
		cm_desc_region(&d, o.cookie, 0, x.wo, 0, 8192, 1);
	}
	REQUIRE_OK(cm_dma_submit(x.fd, &d, 1, &done));
	cm_sleep_ms(100);
	REQUIRE(cm_cq_reap(&x.cq, &e, 1) == 0,
		"a stalled descriptor completed: %d", e.status);
	REQUIRE(cm_sysfs_u64("dma_ops") == 1, "dma_ops while stalled");

	if (_i == 1) {
		kill(o.pid, SIGKILL);
		REQUIRE_OK(cm_wait_timeout(o.pid, 20000, &st));
		close(o.sock);
	} else if (_i == 3) {
		munmap(uf.area, uf.len);
		uf.area = NULL;
	} else {
		cm_owner_finish(&o);	/* deregisters and exits */
	}
	if (uf.area)
		cm_uffd_fill(&uf, 0, 8192, 5);
	cm_cq_wait(x.fd, &x.cq, &e, 1, 20000);
	REQUIRE(e.status == want[_i] && e.bytes == 0,
		"%s: status %s bytes %llu", what[_i], cm_errname(-e.status),
		(unsigned long long)e.bytes);
	REQUIRE(cm_check_byte(shm.view, RLEN, 0xEE) < 0,
		"%s: memory written", what[_i]);
	cm_dma_wait_idle(10000);
	if (_i == 3)
		cm_owner_finish(&o);
	cm_uffd_destroy(&uf);
	cm_shm_destroy(&shm);
	fctx_close(&x);
}
END_TEST

/*
 * The endpoint released with descriptors in flight: _i = 0 many real
 * copies, 1 copies stuck in a fault, both released by close() (the CQ
 * unmapped first); 2 stuck copies, close() while the CQ is still mapped
 * (the mapping keeps the endpoint, nothing is cancelled) and release by
 * munmap().  The release cancels what is left and returns at once.
 */
START_TEST(test_dma_close_inflight)
{
	static const char *const how[] = { "copying", "stuck", "stuck, mapped" };
	enum { N = 64, LEN = 1 << 20 };
	struct coopmpi_dma_desc d[N];
	struct cm_owner o;
	struct cm_uffd uf = { .fd = -1 };
	struct cm_shm shm;
	struct cm_cq cq;
	struct fctx x;
	uint8_t *src;
	uint32_t done;
	uint64_t t0, errs0 = cm_sysfs_u64("dma_errors");
	uint64_t ok0 = cm_sysfs_u64("dma_completed"), canceled, completed;
	int fd;

	if (!cm_dma_available())
		return;
	fctx_open(&x);
	cm_shm_create(&shm, LEN);
	cm_owner_spawn(&o, x.key, &shm, 0, COOPMPI_REGION_WRITE, 0);
	/* after the fork: nobody else holds this endpoint's file */
	fd = cm_open_join(x.key, COOPMPI_JOIN_EXISTING, NULL);
	REQUIRE_OK(cm_cq_map(fd, &cq));
	if (_i) {
		cm_uffd_create(&uf, LEN);
		src = uf.area;
	} else {
		src = cm_map_anon(LEN);
		cm_fill_pattern(src, LEN, 71);
	}
	for (int i = 0; i < N; i++)
		cm_desc_local(&d[i], src, o.cookie, 0, LEN, i);
	REQUIRE_OK(cm_dma_submit(fd, d, N, &done));
	REQUIRE(done == N, "done %u", done);
	if (_i)
		cm_sleep_ms(50);

	if (_i == 2) {
		/* the CQ mapping holds the file: the endpoint stays */
		REQUIRE(close(fd) == 0, "close: %s", strerror(errno));
		cm_sleep_ms(50);
		REQUIRE(cm_sysfs_u64("dma_ops") == N,
			"closed but mapped endpoint: dma_ops %llu, want %d",
			(unsigned long long)cm_sysfs_u64("dma_ops"), N);
		t0 = cm_now_ms();
		cm_cq_unmap(&cq);
	} else {
		cm_cq_unmap(&cq);
		t0 = cm_now_ms();
		REQUIRE(close(fd) == 0, "close: %s", strerror(errno));
	}
	printf("release (%s) with %d descriptors in flight took %llu ms\n",
	       how[_i], N, (unsigned long long)(cm_now_ms() - t0));
	REQUIRE(cm_sysfs_u64("dma_ops") == 0 && cm_sysfs_u64("dma_bytes") == 0,
		"descriptors of a released endpoint still in flight");
	canceled = cm_sysfs_u64("dma_errors") - errs0;
	completed = cm_sysfs_u64("dma_completed") - ok0;
	REQUIRE(canceled + completed == N,
		"%llu cancelled + %llu completed, want %d",
		(unsigned long long)canceled, (unsigned long long)completed, N);
	if (_i)
		REQUIRE(canceled == N, "stuck descriptors: %llu cancelled",
			(unsigned long long)canceled);
	printf("%llu of %d cancelled\n", (unsigned long long)canceled, N);
	cm_owner_finish(&o);
	if (_i)
		cm_uffd_destroy(&uf);
	else
		cm_unmap(src, LEN);
	cm_shm_destroy(&shm);
	fctx_close(&x);
}
END_TEST

/* _i = 0: SIGKILL with copies running, 1: SIGKILL with copies stuck */
START_TEST(test_dma_kill_inflight)
{
	enum { N = 128, LEN = 1 << 20 };
	struct cm_owner o;
	struct cm_shm shm;
	struct fctx x;
	int sv[2], st;
	pid_t pid;

	if (!cm_dma_available())
		return;
	fctx_open(&x);
	cm_shm_create(&shm, LEN);
	cm_owner_spawn(&o, x.key, &shm, 0, COOPMPI_REGION_WRITE, 0);
	cm_socketpair(sv);
	pid = cm_fork();
	if (pid == 0) {
		static struct coopmpi_dma_desc d[N];
		struct cm_uffd uf;
		uint8_t *src;
		uint32_t done;
		int fd = cm_open_join(x.key, COOPMPI_JOIN_EXISTING, NULL);

		close(sv[0]);
		if (_i) {
			cm_uffd_create(&uf, LEN);
			src = uf.area;
		} else {
			src = cm_map_anon(LEN);
			cm_fill_pattern(src, LEN, 81);
		}
		for (int i = 0; i < N; i++)
			cm_desc_local(&d[i], src, o.cookie, 0, LEN, i);
		REQUIRE_OK(cm_dma_submit(fd, d, N, &done));
		cm_put_u64(sv[1], done);
		for (;;)
			pause();
	}
	close(sv[1]);
	REQUIRE(cm_get_u64_from(sv[0], pid, "submitter") == N, "submitted");
	cm_sleep_ms(_i ? 100 : 5);
	kill(pid, SIGKILL);
	REQUIRE(cm_wait_timeout(pid, 20000, &st) == 0,
		"SIGKILLed submitter with DMA in flight did not exit in 20 s");
	REQUIRE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
	cm_dma_wait_idle(20000);
	close(sv[0]);
	/* the destination owner and the domain are unharmed */
	{
		struct coopmpi_dma_desc d;
		struct coopmpi_dma_cqe e;

		cm_desc_local(&d, x.local, o.cookie, 0, 4096, 5);
		e = cm_dma_run(x.fd, &x.cq, &d);
		REQUIRE(e.status == 0 && e.bytes == 4096, "after the kill: %d",
			e.status);
		REQUIRE(cm_check_pattern(shm.view, 4096, 61, 0) < 0, "data");
	}
	cm_owner_finish(&o);
	cm_shm_destroy(&shm);
	fctx_close(&x);
}
END_TEST

/*
 * One round of test_dma_uffd_closed: descriptors waiting on a page of a
 * userfaultfd area, then the userfaultfd closed.
 */
static void uffd_closed_round(int fd, struct cm_cq *cq, uint64_t dst,
			      uint8_t *view, unsigned int n)
{
	static struct coopmpi_dma_desc d[256];
	static struct coopmpi_dma_cqe e[256];
	struct cm_uffd uf;
	uint32_t done;

	memset(view, 0xEE, 4096);
	cm_uffd_create(&uf, 4096);
	for (unsigned int i = 0; i < n; i++)
		cm_desc_local(&d[i], uf.area, dst, 0, 4096, i);
	REQUIRE_OK(cm_dma_submit(fd, d, n, &done));
	cm_sleep_ms(30);
	REQUIRE(cm_cq_reap(cq, e, 1) == 0,
		"a descriptor waiting on userfaultfd completed: %d", e[0].status);
	REQUIRE(close(uf.fd) == 0, "close(userfaultfd): %s", strerror(errno));
	cm_cq_wait(fd, cq, e, n, 20000);
	for (unsigned int i = 0; i < n; i++)
		REQUIRE(e[i].status == 0 && e[i].bytes == 4096,
			"after the close: status %s bytes %llu",
			cm_errname(-e[i].status),
			(unsigned long long)e[i].bytes);
	/* the area is plain anonymous memory now: never written, zeros */
	REQUIRE(cm_check_byte(view, 4096, 0) < 0, "destination not zeroed");
	munmap(uf.area, uf.len);
}

/*
 * A userfaultfd closed while descriptors wait on its area: they go on
 * from the memory left behind and complete, and close() returns.  A
 * worker faulting in the released area would spin with mmap_lock held
 * and hang the close (or the exit) for good; repeated to give that race
 * its chances.  In a child (with an endpoint of its own: mappings are not
 * inherited): such a hang cannot be killed.
 */
START_TEST(test_dma_uffd_closed)
{
	enum { ROUNDS = 20 };
	struct cm_owner o;
	struct cm_shm shm;
	struct fctx x;
	unsigned int n;
	pid_t pid;
	int st;

	if (!cm_dma_available())
		return;
	n = 256;
	n = n < cm_dma_info_cache.max_inflight ? n :
						 cm_dma_info_cache.max_inflight;
	n = n < cm_dma_info_cache.cq_entries ? n : cm_dma_info_cache.cq_entries;
	fctx_open(&x);
	cm_shm_create(&shm, 4096);
	cm_owner_spawn(&o, x.key, &shm, 0, COOPMPI_REGION_WRITE, 0);
	pid = cm_fork();
	if (pid == 0) {
		struct cm_cq cq;
		int fd = cm_open_join(x.key, COOPMPI_JOIN_EXISTING, NULL);

		REQUIRE_OK(cm_cq_map(fd, &cq));
		for (int r = 0; r < ROUNDS; r++)
			uffd_closed_round(fd, &cq, o.cookie, shm.view, n);
		_exit(0);
	}
	REQUIRE(cm_wait_timeout(pid, 60000, &st) == 0,
		"%d rounds of closing a userfaultfd under %u descriptors: no end in 60 s",
		ROUNDS, n);
	REQUIRE(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
	printf("%d userfaultfd closes under %u waiting descriptors each\n",
	       ROUNDS, n);
	cm_dma_wait_idle(10000);
	cm_owner_finish(&o);
	cm_shm_destroy(&shm);
	fctx_close(&x);
}
END_TEST

/* The per-endpoint bytes bound, with one descriptor of max_length stuck. */
START_TEST(test_dma_bytes_bound)
{
	struct coopmpi_dma_desc d;
	struct coopmpi_dma_cqe e;
	struct cm_counters c;
	struct cm_uffd uf;
	struct fctx x;
	uint64_t len, cookie, errs0;
	uint8_t *dst;
	uint32_t done;

	if (!cm_dma_available())
		return;
	len = cm_dma_info_cache.max_length;
	if (len > (1ULL << 30) || len < cm_dma_info_cache.max_bytes) {
		printf("max_length %llu max_bytes %llu: bytes bound test skipped\n",
		       (unsigned long long)len,
		       (unsigned long long)cm_dma_info_cache.max_bytes);
		return;
	}
	fctx_open(&x);
	REQUIRE_OK(cm_counters_map(x.fd, &c));
	/* address space only: nothing of either is ever touched */
	cm_uffd_create(&uf, len);
	dst = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	REQUIRE(dst != MAP_FAILED, "mmap %llu", (unsigned long long)len);
	REQUIRE_OK(cm_reg(x.fd, dst, len, COOPMPI_REGION_WRITE, &cookie));

	cm_desc_local(&d, uf.area, cookie, 0, len, 1);
	REQUIRE_OK(cm_dma_submit(x.fd, &d, 1, &done));
	cm_desc_local(&d, x.local, x.rw, 0, 1, 2);
	REQUIRE_ERR(cm_dma_submit(x.fd, &d, 1, &done), EAGAIN);
	/* accounted while in flight, everywhere */
	REQUIRE(cm_sysfs_u64("dma_ops") == 1 && cm_sysfs_u64("dma_bytes") == len,
		"sysfs dma_ops %llu dma_bytes %llu",
		(unsigned long long)cm_sysfs_u64("dma_ops"),
		(unsigned long long)cm_sysfs_u64("dma_bytes"));
	REQUIRE(c.offload->dma_ops == 1 && c.offload->dma_bytes == len,
		"counters page dma_ops %llu dma_bytes %llu",
		(unsigned long long)c.offload->dma_ops,
		(unsigned long long)c.offload->dma_bytes);
	REQUIRE(cm_domain_offload(x.j.domain_id, "dma_ops") == 1 &&
		cm_domain_offload(x.j.domain_id, "dma_bytes") == len,
		"domain offload file");

	/* releasing the endpoint (mappings first) cancels it */
	REQUIRE(cm_cq_reap(&x.cq, &e, 1) == 0, "CQE %d", e.status);
	errs0 = cm_sysfs_u64("dma_errors");
	cm_counters_unmap(&c);
	cm_cq_unmap(&x.cq);
	close(x.fd);
	x.fd = -1;
	REQUIRE(cm_sysfs_u64("dma_errors") - errs0 == 1,
		"the stuck descriptor was not cancelled");
	REQUIRE(cm_sysfs_u64("dma_ops") == 0 && cm_sysfs_u64("dma_bytes") == 0,
		"in flight after release");
	munmap(dst, len);
	cm_uffd_destroy(&uf);
	cm_unmap(x.mine, RLEN);
	cm_unmap(x.local, RLEN);
}
END_TEST

/* sysfs totals move by exactly what completed, and in flight returns to 0 */
START_TEST(test_dma_sysfs_counters)
{
	struct coopmpi_dma_desc d[13];
	struct coopmpi_dma_cqe e[13];
	uint64_t ok0, err0, ok1, err1;
	struct fctx x;
	uint32_t done;
	uint8_t *hole;

	if (!cm_dma_available())
		return;
	fctx_open(&x);
	hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(hole != MAP_FAILED, "mmap");
	cm_dma_wait_idle(10000);
	ok0 = cm_sysfs_u64("dma_completed");
	err0 = cm_sysfs_u64("dma_errors");
	for (int i = 0; i < 13; i++)
		cm_desc_local(&d[i], i < 10 ? x.local : hole, x.rw, 4096 * i,
			      4096, i);
	REQUIRE_OK(cm_dma_submit(x.fd, d, 13, &done));
	cm_cq_wait(x.fd, &x.cq, e, 13, 30000);
	for (int i = 0; i < 13; i++)
		REQUIRE(e[i].status == (e[i].user_tag < 10 ? 0 : -EFAULT),
			"tag %llu status %d", (unsigned long long)e[i].user_tag,
			e[i].status);
	ok1 = cm_sysfs_u64("dma_completed");
	err1 = cm_sysfs_u64("dma_errors");
	REQUIRE(ok1 - ok0 == 10 && err1 - err0 == 3,
		"dma_completed +%llu (want 10), dma_errors +%llu (want 3)",
		(unsigned long long)(ok1 - ok0),
		(unsigned long long)(err1 - err0));
	REQUIRE(cm_sysfs_u64("dma_ops") == 0 && cm_sysfs_u64("dma_bytes") == 0,
		"in flight after every CQE arrived");
	REQUIRE(cm_domain_offload(x.j.domain_id, "dma_ops") == 0 &&
		cm_domain_offload(x.j.domain_id, "dma_bytes") == 0,
		"domain offload");
	munmap(hole, 4096);
	fctx_close(&x);
}
END_TEST

/* Engine errors: the test provider's fail_every (hw engine only). */
#define PROV_FAIL "/sys/module/coopmpi_dmatest/parameters/fail_every"

/*
 * One 3-page descriptor with a notification, run while the test provider's
 * fault parameter @param is 1; *waited_ms: how long its CQE took.  It
 * must fail with @want and no byte and no notification may land, and the
 * same descriptor must work once the fault is off.  False when this is
 * not the hw engine on the test provider (nothing run).
 */
static bool engine_fault(const char *param, int want, uint64_t *waited_ms)
{
	struct coopmpi_dma_desc d;
	struct coopmpi_dma_cqe e;
	struct fctx x;
	uint64_t t0;

	if (!cm_dma_available())
		return false;
	if (cm_dma_info_cache.engine != COOPMPI_DMA_HW ||
	    !cm_path_exists(param)) {
		printf("not the test dmaengine provider: skipped\n");
		return false;
	}
	fctx_open(&x);
	memset(x.mine, 0xEE, RLEN);
	cm_desc_local(&d, x.local, x.rw, 0, 3 * 4096, 1);
	cm_desc_notify(&d, x.rw, RLEN - 16, 1, 1);
	REQUIRE_OK(cm_write_file(param, "1"));
	t0 = cm_now_ms();
	e = cm_dma_run(x.fd, &x.cq, &d);
	*waited_ms = cm_now_ms() - t0;
	REQUIRE_OK(cm_write_file(param, "0"));
	REQUIRE(e.status == want && e.bytes == 0, "%s: %s %llu bytes", param,
		cm_errname(-e.status), (unsigned long long)e.bytes);
	REQUIRE(cm_check_byte(x.mine + RLEN - 16, 16, 0xEE) < 0,
		"notification after %s", param);
	e = cm_dma_run(x.fd, &x.cq, &d);
	REQUIRE(e.status == 0 && e.bytes == 3 * 4096, "after %s: %s", param,
		cm_errname(-e.status));
	fctx_close(&x);
	return true;
}

START_TEST(test_dma_engine_error)
{
	uint64_t waited;

	engine_fault(PROV_FAIL, -EIO, &waited);
}
END_TEST

/* A hung engine (the test provider's stall): the descriptor fails with
 * -ETIMEDOUT after dma_timeout_ms instead of hanging its worker, and the
 * channel works again afterwards. */
#define PROV_STALL "/sys/module/coopmpi_dmatest/parameters/stall"
#define DMA_TIMEOUT "/sys/module/coopmpi/parameters/dma_timeout_ms"

START_TEST(test_dma_engine_hung)
{
	uint64_t waited, timeout_ms;
	char buf[32];

	if (cm_read_file(DMA_TIMEOUT, buf, sizeof(buf)) <= 0)
		return;	/* not loaded with a dmaengine channel */
	timeout_ms = strtoull(buf, NULL, 10);
	if (!engine_fault(PROV_STALL, -ETIMEDOUT, &waited))
		return;
	printf("hung engine: -ETIMEDOUT after %llu ms (dma_timeout_ms %llu)\n",
	       (unsigned long long)waited, (unsigned long long)timeout_ms);
	REQUIRE(waited >= timeout_ms && waited < timeout_ms + 10000,
		"hung engine reported after %llu ms", (unsigned long long)waited);
}
END_TEST

void add_dma_fail_tests(Suite *s)
{
	TCase *tc = cm_tcase("dma-bad", 120);

	tcase_add_test(tc, test_dma_bad_desc);
	tcase_add_test(tc, test_dma_bad_submit);
	tcase_add_test(tc, test_dma_sysfs_counters);
	tcase_add_test(tc, test_dma_engine_error);
	tcase_add_test(tc, test_dma_engine_hung);
	suite_add_tcase(s, tc);

	tc = cm_tcase("dma-gone", 180);
	tcase_add_loop_test(tc, test_dma_region_gone, 0, 4);
	tcase_add_loop_test(tc, test_dma_close_inflight, 0, 3);
	tcase_add_loop_test(tc, test_dma_kill_inflight, 0, 2);
	tcase_add_test(tc, test_dma_bytes_bound);
	tcase_add_test(tc, test_dma_uffd_closed);
	suite_add_tcase(s, tc);
}
