// SPDX-License-Identifier: GPL-2.0
/*
 * test_dma_stall.c - memory a DMA worker must not wait for: the
 * descriptor deadline (dma_deadline_ms: -ETIMEDOUT, the parameter's
 * bounds), and a FUSE file whose daemon never answers (fuse_silent.h)
 * as a DMA source and destination while another user's copies go on,
 * with the submitter killed or waiting for its completions.
 */
#include "dma_helpers.h"
#include "fuse_silent.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEADLINE_PARAM CM_PARAM_DIR "dma_deadline_ms"
#define CHUNK (1u << 20)
#define FUSE_N 16		/* descriptors, more than dma_workers */

/* sets dma_deadline_ms, returns the old value */
static unsigned deadline_set(unsigned ms)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%u", ms);
	return (unsigned)strtoul(cm_param_swap("dma_deadline_ms", buf), NULL, 10);
}

/* Out-of-range values are refused and change nothing. */
START_TEST(test_dma_deadline_param)
{
	static const char *const bad[] = { "0", "99", "240001", "-1", "x" };
	uint64_t before;

	if (!cm_dma_available())
		return;
	cm_require_root();
	before = cm_param_u64("dma_deadline_ms");
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		REQUIRE_ERR(cm_write_file(DEADLINE_PARAM, bad[i]), EINVAL);
		REQUIRE(cm_param_u64("dma_deadline_ms") == before,
			"%s changed it", bad[i]);
	}
}
END_TEST

/* One endpoint with its CQ and an anonymous region of len bytes. */
struct sctx {
	int fd;
	struct cm_cq cq;
	uint8_t *mine;
	uint64_t rw;
	size_t len;
};

static void sctx_open(struct sctx *x, size_t len)
{
	x->fd = cm_open_join(cm_unique_key(), COOPMPI_JOIN_CREATE, NULL);
	REQUIRE_OK(cm_cq_map(x->fd, &x->cq));
	x->len = len;
	x->mine = cm_map_anon(len);
	REQUIRE_OK(cm_reg(x->fd, x->mine, len,
			  COOPMPI_REGION_READ | COOPMPI_REGION_WRITE, &x->rw));
}

static void sctx_close(struct sctx *x)
{
	cm_cq_unmap(&x->cq);
	close(x->fd);
	cm_unmap(x->mine, x->len);
}

/*
 * A descriptor whose source never appears (userfaultfd, never filled)
 * fails with -ETIMEDOUT once dma_deadline_ms passed, having written
 * nothing.
 */
START_TEST(test_dma_deadline)
{
	const unsigned deadline = 1500;
	struct coopmpi_dma_desc d;
	struct coopmpi_dma_cqe e;
	struct cm_uffd uf;
	struct sctx x;
	unsigned old;
	uint64_t t0, took;

	if (!cm_dma_available())
		return;
	cm_require_root();
	sctx_open(&x, CHUNK);
	memset(x.mine, 0xEE, CHUNK);
	cm_uffd_create(&uf, CHUNK);
	old = deadline_set(deadline);
	cm_desc_local(&d, uf.area, x.rw, 0, CHUNK, 9);
	cm_desc_notify(&d, x.rw, CHUNK - 16, 1, 1);
	t0 = cm_now_ms();
	e = cm_dma_run(x.fd, &x.cq, &d);
	took = cm_now_ms() - t0;
	deadline_set(old);
	printf("stuck descriptor: %s after %llu ms (deadline %u ms)\n",
	       cm_errname(-e.status), (unsigned long long)took, deadline);
	REQUIRE(e.status == -ETIMEDOUT && e.bytes == 0, "status %s bytes %llu",
		cm_errname(-e.status), (unsigned long long)e.bytes);
	REQUIRE(took + CM_CLOCK_SLACK_MS >= deadline &&
		took < deadline + 10000,
		"ended after %llu ms", (unsigned long long)took);
	REQUIRE(cm_check_byte(x.mine, CHUNK, 0xEE) < 0, "memory written");
	cm_dma_wait_idle(5000);
	cm_uffd_destroy(&uf);
	sctx_close(&x);
}
END_TEST

enum fuse_case { FUSE_SRC, FUSE_DST_PRIVATE, FUSE_SRC_KILLED,
		 FUSE_DST_SHARED, FUSE_CASES };

static const char *const fuse_what[] = {
	"source, shared mapping", "destination, private mapping",
	"source, submitter killed", "destination, shared mapping",
};

/* the submitter's descriptors of case c, over the FUSE mapping */
static void fuse_descs(enum fuse_case c, struct cm_fuse *f, struct sctx *x,
		       struct coopmpi_dma_desc *d, unsigned n)
{
	bool dst = c == FUSE_DST_PRIVATE || c == FUSE_DST_SHARED;
	uint8_t *map;
	uint64_t cookie;

	if (!dst) {
		map = cm_fuse_map(f, PROT_READ, MAP_SHARED);
		for (unsigned i = 0; i < n; i++)
			cm_desc_local(&d[i], map + (size_t)i * CHUNK, x->rw, 0,
				      CHUNK, i);
		return;
	}
	map = cm_fuse_map(f, PROT_READ | PROT_WRITE,
			  c == FUSE_DST_SHARED ? MAP_SHARED : MAP_PRIVATE);
	REQUIRE_OK(cm_reg(x->fd, map, f->size, COOPMPI_REGION_WRITE, &cookie));
	for (unsigned i = 0; i < n; i++)
		cm_desc_local(&d[i], x->mine, cookie, (size_t)i * CHUNK, CHUNK,
			      i);
}

/* The submitter: n descriptors in flight, then its completions. */
static void __attribute__((noreturn))
fuse_submitter(enum fuse_case c, struct cm_fuse *f, int sock)
{
	const unsigned n = FUSE_N;
	int want = c == FUSE_DST_SHARED ? -EOPNOTSUPP : -ETIMEDOUT;
	struct coopmpi_dma_desc d[FUSE_N];
	struct coopmpi_dma_cqe e[FUSE_N];
	struct sctx x;
	uint32_t done;
	uint64_t t0;

	sctx_open(&x, CHUNK);
	cm_fill_pattern(x.mine, CHUNK, 77);
	fuse_descs(c, f, &x, d, n);
	t0 = cm_now_ms();
	REQUIRE_OK(cm_dma_submit(x.fd, d, n, &done));
	cm_put_u64(sock, 1);
	if (c == FUSE_SRC_KILLED)
		for (;;)
			pause();
	cm_cq_wait(x.fd, &x.cq, e, n, 60000);
	for (unsigned i = 0; i < n; i++)
		REQUIRE(e[i].status == want && e[i].bytes == 0,
			"%s: descriptor %llu ended %s, %llu bytes",
			fuse_what[c], (unsigned long long)e[i].user_tag,
			cm_errname(-e[i].status),
			(unsigned long long)e[i].bytes);
	cm_put_u64(sock, cm_now_ms() - t0);
	_exit(0);
}

/*
 * More descriptors than workers on FUSE memory: the other user's copies
 * go on meanwhile, and the submitter's end by the deadline (-ETIMEDOUT),
 * at once (-EOPNOTSUPP: a shared file mapping as destination) or with
 * the submitter, which dies at once when killed.
 */
START_TEST(test_dma_fuse)
{
	const unsigned n = FUSE_N, deadline = 5000;
	uint64_t worst, took, t0;
	struct cm_fuse f;
	int sv[2], st;
	unsigned old;
	pid_t pid;

	if (!cm_dma_available())
		return;
	cm_fuse_start(&f, (size_t)n * CHUNK);
	/* killed: the default deadline, far beyond how soon it must die */
	old = deadline_set(_i == FUSE_SRC_KILLED ?
			   (unsigned)cm_param_u64("dma_deadline_ms") : deadline);
	cm_socketpair(sv);
	pid = cm_fork();
	if (pid == 0) {
		close(sv[0]);
		fuse_submitter(_i, &f, sv[1]);
	}
	close(sv[1]);
	REQUIRE(cm_get_u64_from(sv[0], pid, "submitter") == 1, "submitted");
	worst = cm_dma_latency_as_nobody(20, NULL);
	printf("FUSE %s: %u descriptors in flight, the other user's longest copy %llu ms\n",
	       fuse_what[_i], n, (unsigned long long)worst);
	REQUIRE(worst < 5000, "the other user's copies waited %llu ms",
		(unsigned long long)worst);
	if (_i == FUSE_SRC_KILLED) {
		t0 = cm_now_ms();
		kill(pid, SIGKILL);
		REQUIRE(cm_wait_timeout(pid, 5000, &st) == 0,
			"killed submitter still there after 5 s");
		printf("killed submitter gone in %llu ms\n",
		       (unsigned long long)(cm_now_ms() - t0));
	} else {
		took = cm_get_u64_from(sv[0], pid, "submitter");
		printf("its descriptors ended after %llu ms (deadline %u ms)\n",
		       (unsigned long long)took, deadline);
		if (_i != FUSE_DST_SHARED)
			REQUIRE(took + CM_CLOCK_SLACK_MS >= deadline,
				"ended before the deadline");
		REQUIRE(cm_wait_timeout(pid, 5000, &st) == 0 && WIFEXITED(st) &&
			WEXITSTATUS(st) == 0, "submitter status %#x", st);
	}
	close(sv[0]);
	cm_dma_wait_idle(10000);
	deadline_set(old);
	cm_fuse_stop(&f);
}
END_TEST

void add_dma_stall_tests(Suite *s)
{
	TCase *tc = cm_tcase("dma-stall", 180);

	tcase_add_test(tc, test_dma_deadline_param);
	tcase_add_test(tc, test_dma_deadline);
	tcase_add_loop_test(tc, test_dma_fuse, 0, FUSE_CASES);
	suite_add_tcase(s, tc);
}
