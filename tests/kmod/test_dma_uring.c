// SPDX-License-Identifier: GPL-2.0
/*
 * test_dma_uring.c - the DMA channel through io_uring (IORING_OP_URING_CMD,
 * cmd_op COOPMPI_URING_CMD_DMA): copies complete as CQEs (res = bytes or
 * -errno), asynchronously; bad commands; the in-flight limit as CQE
 * -EAGAIN with hundreds outstanding; submitters exiting, killed or
 * exec'ing with commands in flight; a stuck command's ring closed, and
 * its deadline.
 */
#include "dma_helpers.h"

#include <liburing.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static void prep_dma(struct io_uring_sqe *sqe, int fd,
		     const struct coopmpi_dma_desc *d, uint64_t ud, bool sqe128)
{
	struct coopmpi_dma_uring_cmd *c;

	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, NULL, 0, 0);
	sqe->cmd_op = COOPMPI_URING_CMD_DMA;
	memset(sqe->cmd, 0, sqe128 ? 80 : 16);
	c = (struct coopmpi_dma_uring_cmd *)sqe->cmd;
	c->desc = (uintptr_t)d;
	c->desc_size = sizeof(*d);
	io_uring_sqe_set_data64(sqe, ud);
}

static struct io_uring_sqe *get_sqe(struct io_uring *ring)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	REQUIRE(sqe, "SQ full");
	return sqe;
}

static void submit_all(struct io_uring *ring, int n)
{
	int r = io_uring_submit(ring);

	REQUIRE(r == n, "io_uring_submit: %d (%s), want %d", r,
		r < 0 ? strerror(-r) : "short", n);
}

/* next CQE within timeout_ms: its user_data and res */
static void wait_cqe(struct io_uring *ring, unsigned timeout_ms,
		     uint64_t *ud, int *res)
{
	struct __kernel_timespec ts = {
		.tv_sec = timeout_ms / 1000,
		.tv_nsec = (long long)(timeout_ms % 1000) * 1000000,
	};
	struct io_uring_cqe *cqe;
	int r;

	do {
		r = io_uring_wait_cqe_timeout(ring, &cqe, &ts);
	} while (r == -EINTR);
	REQUIRE(r == 0, "no CQE within %u ms: %s (dma_ops %llu)", timeout_ms,
		strerror(-r), (unsigned long long)cm_sysfs_u64("dma_ops"));
	*ud = io_uring_cqe_get_data64(cqe);
	*res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
}

/* one command, its CQE's res */
static int uring_one(struct io_uring *ring, int fd,
		     const struct coopmpi_dma_desc *d, bool sqe128)
{
	uint64_t ud;
	int res;

	prep_dma(get_sqe(ring), fd, d, 0x600d, sqe128);
	submit_all(ring, 1);
	wait_cqe(ring, 30000, &ud, &res);
	REQUIRE(ud == 0x600d, "user_data %#llx", (unsigned long long)ud);
	return res;
}

struct uctx {
	uint64_t key;
	struct coopmpi_join j;
	int fd;
	struct io_uring ring;
	struct cm_owner o;
	struct cm_shm shm;
};

static void uctx_open(struct uctx *x, unsigned entries, unsigned flags,
		      size_t shm_len)
{
	int r;

	x->key = cm_unique_key();
	x->fd = cm_open_join(x->key, COOPMPI_JOIN_CREATE, &x->j);
	r = io_uring_queue_init(entries, &x->ring, flags);
	REQUIRE(r == 0, "io_uring_queue_init(%u, %#x): %s", entries, flags,
		strerror(-r));
	cm_shm_create(&x->shm, shm_len);
	cm_owner_spawn(&x->o, x->key, &x->shm, 0,
		       COOPMPI_REGION_READ | COOPMPI_REGION_WRITE, 0);
}

static void uctx_close(struct uctx *x)
{
	cm_owner_finish(&x->o);
	cm_shm_destroy(&x->shm);
	io_uring_queue_exit(&x->ring);
	close(x->fd);
}

START_TEST(test_uring_copy)
{
	enum { N = 48, SLICE = 300000 };
	static struct coopmpi_dma_desc d[N];
	struct cm_owner so;
	struct cm_cq cq;
	struct uctx x;
	uint8_t *local, seen[N] = { 0 };

	if (!cm_dma_available())
		return;
	uctx_open(&x, 64, 0, (size_t)N * SLICE + 4096 * 2);
	REQUIRE_OK(cm_cq_map(x.fd, &cq));
	cm_owner_spawn(&so, x.key, NULL, (size_t)N * SLICE, COOPMPI_REGION_READ,
		       91);
	local = cm_map_anon((size_t)N * SLICE);
	cm_fill_pattern(local, (size_t)N * SLICE, 91);
	memset(x.shm.view, 0xEE, x.shm.len);
	for (int i = 0; i < N; i++) {
		uint64_t len = 1 + (uint64_t)i * 6247 % SLICE, off = (uint64_t)i * SLICE;

		if (i & 1)
			cm_desc_region(&d[i], so.cookie, off, x.o.cookie, off,
				       len, 0);
		else
			cm_desc_local(&d[i], local + off, x.o.cookie, off, len,
				      0);
		if (i % 4 == 0)
			cm_desc_notify(&d[i], x.o.cookie,
				       (uint64_t)N * SLICE + 16 * i, len, i);
		prep_dma(get_sqe(&x.ring), x.fd, &d[i], i, false);
	}
	submit_all(&x.ring, N);
	for (int k = 0; k < N; k++) {
		uint64_t ud, len;
		int res;

		wait_cqe(&x.ring, 60000, &ud, &res);
		REQUIRE(ud < N && !seen[ud], "user_data %llu",
			(unsigned long long)ud);
		seen[ud] = 1;
		len = d[ud].length;
		REQUIRE(res == (int)len, "command %llu: res %d (%s), want %llu",
			(unsigned long long)ud, res,
			res < 0 ? cm_errname(-res) : "", (unsigned long long)len);
		REQUIRE(cm_check_pattern(x.shm.view + ud * SLICE, len, 91,
					 ud * SLICE) < 0,
			"command %llu data", (unsigned long long)ud);
		if (ud % 4 == 0)
			REQUIRE(!memcmp(x.shm.view + N * SLICE + 16 * ud,
					d[ud].notify_data, 16),
				"command %llu notification",
				(unsigned long long)ud);
	}
	/* io_uring commands never post to the mmap'ed CQ */
	REQUIRE(cq.hdr->tail == 0, "CQ tail %llu after io_uring commands",
		(unsigned long long)cq.hdr->tail);
	cm_dma_wait_idle(10000);
	cm_cq_unmap(&cq);
	cm_owner_finish(&so);
	cm_unmap(local, (size_t)N * SLICE);
	uctx_close(&x);
}
END_TEST

/*
 * The CQE comes when the copy is done, not when it is submitted: with
 * the source stuck in a fault the command stays in flight (and counted)
 * until the memory appears.
 */
START_TEST(test_uring_async)
{
	const uint64_t len = (256u << 10) + 100;
	struct coopmpi_dma_desc d;
	struct io_uring_cqe *cqe;
	struct cm_counters c;
	struct cm_uffd uf;
	struct uctx x;
	uint64_t ud;
	int res;

	if (!cm_dma_available())
		return;
	uctx_open(&x, 8, 0, 1 << 20);
	REQUIRE_OK(cm_counters_map(x.fd, &c));
	cm_uffd_create(&uf, 1 << 20);
	cm_desc_local(&d, uf.area + 4096, x.o.cookie, 0, len, 0);
	cm_desc_notify(&d, x.o.cookie, 512 << 10, 0xabc, 0xdef);
	memset(x.shm.view, 0xEE, x.shm.len);
	prep_dma(get_sqe(&x.ring), x.fd, &d, 7, false);
	submit_all(&x.ring, 1);
	cm_sleep_ms(300);
	REQUIRE(io_uring_peek_cqe(&x.ring, &cqe) == -EAGAIN,
		"CQE (res %d) before the source memory exists",
		cqe ? cqe->res : 0);
	REQUIRE(c.offload->dma_ops == 1 && c.offload->dma_bytes == len,
		"counters page while in flight: dma_ops %llu dma_bytes %llu",
		(unsigned long long)c.offload->dma_ops,
		(unsigned long long)c.offload->dma_bytes);
	REQUIRE(cm_sysfs_u64("dma_ops") == 1 && cm_sysfs_u64("dma_bytes") == len,
		"sysfs while in flight");
	REQUIRE(cm_check_byte(x.shm.view + (512 << 10), 16, 0xEE) < 0,
		"notification before the data");

	cm_uffd_fill(&uf, 0, 1 << 20, 101);
	wait_cqe(&x.ring, 30000, &ud, &res);
	REQUIRE(ud == 7 && res == (int)len, "CQE %llu res %d",
		(unsigned long long)ud, res);
	REQUIRE(cm_check_pattern(x.shm.view, len, 101, 4096) < 0, "data");
	REQUIRE(!memcmp(x.shm.view + (512 << 10), d.notify_data, 16),
		"notification");
	REQUIRE(c.offload->dma_ops == 0 && c.offload->dma_bytes == 0,
		"counters page after the CQE");
	cm_dma_wait_idle(5000);
	cm_counters_unmap(&c);
	cm_uffd_destroy(&uf);
	uctx_close(&x);
}
END_TEST

START_TEST(test_uring_errors)
{
	struct coopmpi_dma_desc d, big[2];
	struct io_uring ring128;
	struct io_uring_sqe *sqe;
	struct uctx x;
	uint64_t ud;
	int res, u, r;

	if (!cm_dma_available())
		return;
	uctx_open(&x, 16, 0, 1 << 20);
	cm_desc_local(&d, x.shm.view, x.o.cookie, 0, 100, 0);

	/* unknown cmd_op */
	sqe = get_sqe(&x.ring);
	prep_dma(sqe, x.fd, &d, 0x600d, false);
	sqe->cmd_op = COOPMPI_URING_CMD_DMA + 1;
	submit_all(&x.ring, 1);
	wait_cqe(&x.ring, 10000, &ud, &res);
	REQUIRE(res == -ENOTTY, "unknown cmd_op: %d", res);

	/* command flags, sizes, pointers */
	sqe = get_sqe(&x.ring);
	prep_dma(sqe, x.fd, &d, 0x600d, false);
	((struct coopmpi_dma_uring_cmd *)sqe->cmd)->flags = 1;
	submit_all(&x.ring, 1);
	wait_cqe(&x.ring, 10000, &ud, &res);
	REQUIRE(res == -EINVAL, "cmd flags: %d", res);

	sqe = get_sqe(&x.ring);
	prep_dma(sqe, x.fd, &d, 0x600d, false);
	((struct coopmpi_dma_uring_cmd *)sqe->cmd)->desc_size = 8;
	submit_all(&x.ring, 1);
	wait_cqe(&x.ring, 10000, &ud, &res);
	REQUIRE(res == -EINVAL, "desc_size 8: %d", res);

	memset(big, 0, sizeof(big));
	big[0] = d;
	big[1].flags = 1;		/* unknown tail */
	sqe = get_sqe(&x.ring);
	prep_dma(sqe, x.fd, big, 0x600d, false);
	((struct coopmpi_dma_uring_cmd *)sqe->cmd)->desc_size = sizeof(big);
	submit_all(&x.ring, 1);
	wait_cqe(&x.ring, 10000, &ud, &res);
	REQUIRE(res == -E2BIG, "non-zero tail: %d", res);

	sqe = get_sqe(&x.ring);
	prep_dma(sqe, x.fd, &d, 0x600d, false);
	((struct coopmpi_dma_uring_cmd *)sqe->cmd)->desc = 0xffff888000000000ULL;
	submit_all(&x.ring, 1);
	wait_cqe(&x.ring, 10000, &ud, &res);
	REQUIRE(res == -EFAULT, "kernel descriptor pointer: %d", res);

	/* descriptor-level errors are the CQE's res */
	d.reserved[0] = 1;
	REQUIRE(uring_one(&x.ring, x.fd, &d, false) == -EINVAL, "reserved");
	d.reserved[0] = 0;
	d.dst_cookie ^= 1ULL << 40;
	REQUIRE(uring_one(&x.ring, x.fd, &d, false) == -ENXIO, "bad cookie");
	d.dst_cookie ^= 1ULL << 40;
	d.src = (uintptr_t)mmap(NULL, 4096, PROT_NONE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(uring_one(&x.ring, x.fd, &d, false) == -EFAULT,
		"inaccessible source");
	munmap((void *)(uintptr_t)d.src, 4096);
	d.src = (uintptr_t)x.shm.view;

	/* unjoined endpoint */
	u = cm_open();
	REQUIRE(uring_one(&x.ring, u, &d, false) == -ENOTCONN, "unjoined");
	close(u);
	/* not our file */
	REQUIRE(uring_one(&x.ring, x.o.sock, &d, false) == -EOPNOTSUPP,
		"a socket");

	/* SQE128: 80 command bytes, the last 64 reserved */
	r = io_uring_queue_init(4, &ring128, IORING_SETUP_SQE128);
	REQUIRE(r == 0, "SQE128 ring: %s", strerror(-r));
	REQUIRE(uring_one(&ring128, x.fd, &d, true) == 100, "SQE128 copy");
	sqe = get_sqe(&ring128);
	prep_dma(sqe, x.fd, &d, 1, true);
	sqe->cmd[79] = 1;
	REQUIRE(io_uring_submit(&ring128) == 1, "submit");
	wait_cqe(&ring128, 10000, &ud, &res);
	REQUIRE(res == -EINVAL, "SQE128 reserved bytes: %d", res);
	io_uring_queue_exit(&ring128);

	/* and the good one on the plain ring */
	REQUIRE(uring_one(&x.ring, x.fd, &d, false) == 100, "valid command");
	cm_dma_wait_idle(5000);
	uctx_close(&x);
}
END_TEST

/*
 * max_inflight commands stuck at once, one more gets -EAGAIN (the ioctl
 * too); then the memory appears and all of them complete.
 */
START_TEST(test_uring_full)
{
	struct coopmpi_dma_desc *d, one;
	struct cm_uffd uf;
	struct uctx x;
	uint32_t n, done, entries = 1;
	uint8_t *seen;
	uint64_t ud;
	int res;

	if (!cm_dma_available())
		return;
	n = cm_dma_info_cache.max_inflight;
	if (n > 2048) {
		printf("max_inflight %u: skipped\n", n);
		return;
	}
	while (entries < n + 1)
		entries <<= 1;
	d = calloc(n + 1, sizeof(*d));
	seen = calloc(n + 1, 1);
	REQUIRE(d && seen, "calloc");
	uctx_open(&x, entries, 0, (size_t)(n + 1) * 512);
	cm_uffd_create(&uf, 64 << 10);
	for (uint32_t i = 0; i <= n; i++) {
		cm_desc_local(&d[i], uf.area + i * 512 % (64 << 10), x.o.cookie,
			      (uint64_t)i * 512, 512, 0);
		prep_dma(get_sqe(&x.ring), x.fd, &d[i], i, false);
		if (i + 1 == n)
			submit_all(&x.ring, n);
	}
	cm_sleep_ms(200);
	REQUIRE(cm_sysfs_u64("dma_ops") == n, "dma_ops %llu, want %u",
		(unsigned long long)cm_sysfs_u64("dma_ops"), n);
	submit_all(&x.ring, 1);
	wait_cqe(&x.ring, 10000, &ud, &res);
	REQUIRE(ud == n && res == -EAGAIN,
		"command %u over the limit: CQE %llu res %d", n + 1,
		(unsigned long long)ud, res);
	cm_desc_local(&one, x.shm.view, x.o.cookie, 0, 1, 0);
	REQUIRE_ERR(cm_dma_submit(x.fd, &one, 1, &done), EAGAIN);
	printf("%u io_uring commands outstanding, one more refused\n", n);

	cm_uffd_fill(&uf, 0, 64 << 10, 111);
	for (uint32_t k = 0; k < n; k++) {
		wait_cqe(&x.ring, 60000, &ud, &res);
		REQUIRE(ud < n && !seen[ud] && res == 512,
			"CQE %u: user_data %llu res %d", k,
			(unsigned long long)ud, res);
		seen[ud] = 1;
		REQUIRE(cm_check_pattern(x.shm.view + ud * 512, 512, 111,
					 ud * 512 % (64 << 10)) < 0,
			"command %llu data", (unsigned long long)ud);
	}
	cm_dma_wait_idle(10000);
	cm_uffd_destroy(&uf);
	uctx_close(&x);
	free(d);
	free(seen);
}
END_TEST

/*
 * A domain, an owner of a destination region and a forked submitter that
 * says 1 on the socket once its commands are in flight.
 */
struct sub_env {
	uint64_t key;
	int fd, sock[2];
	struct cm_owner o;
	struct cm_shm shm;
	pid_t pid;
};

/* 0 in the submitter, its pid in the test */
static pid_t sub_env_fork(struct sub_env *x, size_t len)
{
	x->key = cm_unique_key();
	x->fd = cm_open_join(x->key, COOPMPI_JOIN_CREATE, NULL);
	cm_shm_create(&x->shm, len);
	cm_owner_spawn(&x->o, x->key, &x->shm, 0, COOPMPI_REGION_WRITE, 0);
	cm_socketpair(x->sock);
	x->pid = cm_fork();
	close(x->sock[x->pid ? 1 : 0]);
	return x->pid;
}

static void sub_env_wait_submitted(struct sub_env *x)
{
	REQUIRE(cm_get_u64_from(x->sock[0], x->pid, "submitter") == 1,
		"submitted");
}

static void sub_env_close(struct sub_env *x)
{
	close(x->sock[0]);
	cm_owner_finish(&x->o);
	cm_shm_destroy(&x->shm);
	close(x->fd);
}

/*
 * A submitter with commands in flight (some stuck in a fault, some
 * copying) that _i = 0 is SIGKILLed, 1 exits without waiting, 2 closes
 * its ring and endpoint first: it must go away, and so must the load.
 */
START_TEST(test_uring_exit_inflight)
{
	static const char *const how[] = { "killed", "exit", "close+exit" };
	enum { N = 32, LEN = 1 << 20 };
	uint64_t errs0 = cm_sysfs_u64("dma_errors");
	struct sub_env x;
	int st;

	if (!cm_dma_available())
		return;
	if (sub_env_fork(&x, LEN) == 0) {
		static struct coopmpi_dma_desc d[2 * N];
		struct io_uring ring;
		struct cm_uffd uf;
		uint8_t *src = cm_map_anon(LEN);
		int cfd = cm_open_join(x.key, COOPMPI_JOIN_EXISTING, NULL);

		REQUIRE(io_uring_queue_init(2 * N, &ring, 0) == 0, "ring");
		cm_uffd_create(&uf, LEN);
		cm_fill_pattern(src, LEN, 121);
		for (int i = 0; i < 2 * N; i++) {
			cm_desc_local(&d[i], i < N ? uf.area : src, x.o.cookie,
				      0, LEN, 0);
			prep_dma(get_sqe(&ring), cfd, &d[i], i, false);
		}
		submit_all(&ring, 2 * N);
		cm_put_u64(x.sock[1], 1);
		if (_i == 0)
			for (;;)
				pause();
		cm_sleep_ms(100);
		if (_i == 2) {
			io_uring_queue_exit(&ring);
			close(cfd);
			cm_sleep_ms(100);
		}
		_exit(0);
	}
	sub_env_wait_submitted(&x);
	if (_i == 0) {
		cm_sleep_ms(100);
		kill(x.pid, SIGKILL);
	}
	REQUIRE(cm_wait_timeout(x.pid, 20000, &st) == 0,
		"submitter (%s) with io_uring DMA in flight did not go away in 20 s",
		how[_i]);
	REQUIRE(_i ? WIFEXITED(st) && WEXITSTATUS(st) == 0 :
		     WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
		"submitter (%s) status %#x", how[_i], st);
	/* the ring is torn down asynchronously: its commands finish soon */
	cm_dma_wait_idle(20000);
	REQUIRE(cm_sysfs_u64("dma_errors") - errs0 >= N,
		"the %d stuck commands were not cancelled (dma_errors +%llu)", N,
		(unsigned long long)(cm_sysfs_u64("dma_errors") - errs0));
	printf("submitter %s: all io_uring DMA finished\n", how[_i]);
	sub_env_close(&x);
}
END_TEST

/*
 * A command whose source never appears (userfaultfd, never filled), _i =
 * 0 issued inline, 1 from io-wq (IOSQE_ASYNC): with the ring closed and
 * the process alive it is cancelled at once (nobody waits for it: io_uring
 * would warn about it after 5 minutes); with the ring open it ends with
 * -ETIMEDOUT at dma_deadline_ms.
 */

static void prep_stuck(struct uctx *x, struct io_uring *ring,
		       struct cm_uffd *uf, struct coopmpi_dma_desc *d,
		       bool async)
{
	struct io_uring_sqe *sqe = get_sqe(ring);

	cm_desc_local(d, uf->area, x->o.cookie, 0, 8192, 0);
	prep_dma(sqe, x->fd, d, 3, false);
	if (async)
		sqe->flags |= IOSQE_ASYNC;
	submit_all(ring, 1);
	cm_sleep_ms(100);
	REQUIRE(cm_sysfs_u64("dma_ops") == 1, "the command is not in flight");
}

START_TEST(test_uring_ring_closed)
{
	uint64_t errs0 = cm_sysfs_u64("dma_errors"), t0;
	struct coopmpi_dma_desc d;
	struct io_uring ring;
	struct cm_uffd uf;
	struct uctx x;

	if (!cm_dma_available())
		return;
	uctx_open(&x, 8, 0, 1 << 20);
	/* after the owner's fork: this process alone holds the ring */
	REQUIRE(io_uring_queue_init(8, &ring, 0) == 0, "ring");
	cm_uffd_create(&uf, 1 << 20);
	prep_stuck(&x, &ring, &uf, &d, _i);
	t0 = cm_now_ms();
	io_uring_queue_exit(&ring);
	cm_dma_wait_idle(5000);
	printf("ring closed (%s): command cancelled in %llu ms\n",
	       _i ? "io-wq" : "inline", (unsigned long long)(cm_now_ms() - t0));
	REQUIRE(cm_sysfs_u64("dma_errors") == errs0 + 1, "not cancelled");
	cm_uffd_destroy(&uf);
	uctx_close(&x);
}
END_TEST

START_TEST(test_uring_deadline)
{
	const unsigned deadline = 1500;
	struct coopmpi_dma_desc d;
	struct cm_uffd uf;
	struct uctx x;
	const char *old;
	uint64_t t0, ud, took;
	int res;

	if (!cm_dma_available())
		return;
	cm_require_root();
	old = cm_param_swap("dma_deadline_ms", "1500");
	uctx_open(&x, 8, 0, 1 << 20);
	cm_uffd_create(&uf, 1 << 20);
	t0 = cm_now_ms();
	prep_stuck(&x, &x.ring, &uf, &d, _i);
	wait_cqe(&x.ring, 30000, &ud, &res);
	took = cm_now_ms() - t0;
	cm_param_swap("dma_deadline_ms", old);
	printf("stuck command (%s): %s after %llu ms (deadline %u ms)\n",
	       _i ? "io-wq" : "inline", cm_errname(-res),
	       (unsigned long long)took, deadline);
	REQUIRE(ud == 3 && res == -ETIMEDOUT, "CQE %llu res %d",
		(unsigned long long)ud, res);
	REQUIRE(took + CM_CLOCK_SLACK_MS >= deadline &&
		took < deadline + 10000,
		"ended after %llu ms", (unsigned long long)took);
	cm_dma_wait_idle(5000);
	cm_uffd_destroy(&uf);
	uctx_close(&x);
}
END_TEST

/*
 * A submitter that execs with 64 real copies in flight, submitted _i = 0
 * with DMA_SUBMIT (the endpoint, close-on-exec, is released by the exec:
 * what is left is cancelled), 1 through io_uring (the exec waits for the
 * thread's commands).  The exec goes through, every descriptor ends, and
 * the destination's owner is served afterwards.
 */
START_TEST(test_exec_inflight)
{
	static const char *const how[] = { "DMA_SUBMIT", "io_uring" };
	enum { N = 64, LEN = 1 << 20 };
	uint64_t ended0, ended;
	struct coopmpi_dma_desc d;
	struct coopmpi_dma_cqe e;
	struct sub_env x;
	struct cm_cq cq;
	uint8_t *src;
	int st;

	if (!cm_dma_available())
		return;
	ended0 = cm_sysfs_u64("dma_completed") + cm_sysfs_u64("dma_errors");
	if (sub_env_fork(&x, LEN) == 0) {
		static struct coopmpi_dma_desc ds[N];
		int cfd = cm_open_join(x.key, COOPMPI_JOIN_EXISTING, NULL);
		struct io_uring ring;
		uint32_t done;

		src = cm_map_anon(LEN);
		cm_fill_pattern(src, LEN, 131);
		for (int i = 0; i < N; i++)
			cm_desc_local(&ds[i], src, x.o.cookie, 0, LEN, i);
		if (_i == 0) {
			REQUIRE_OK(cm_dma_submit(cfd, ds, N, &done));
		} else {
			REQUIRE(io_uring_queue_init(N, &ring, 0) == 0, "ring");
			for (int i = 0; i < N; i++)
				prep_dma(get_sqe(&ring), cfd, &ds[i], i, false);
			submit_all(&ring, N);
		}
		cm_put_u64(x.sock[1], 1);
		execl("/bin/true", "true", (char *)NULL);
		_exit(99);
	}
	sub_env_wait_submitted(&x);
	REQUIRE(cm_wait_timeout(x.pid, 20000, &st) == 0,
		"exec with %s DMA in flight: no exit in 20 s", how[_i]);
	REQUIRE(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		"exec with %s DMA in flight: status %#x", how[_i], st);
	cm_dma_wait_idle(20000);
	ended = cm_sysfs_u64("dma_completed") + cm_sysfs_u64("dma_errors") -
		ended0;
	REQUIRE(ended == N, "%s: %llu of %d descriptors ended", how[_i],
		(unsigned long long)ended, N);
	printf("exec with %d %s descriptors in flight: all ended\n", N, how[_i]);

	/* the owner is served afterwards */
	REQUIRE_OK(cm_cq_map(x.fd, &cq));
	src = cm_map_anon(4096);
	cm_fill_pattern(src, 4096, 133);
	cm_desc_local(&d, src, x.o.cookie, 0, 4096, 7);
	e = cm_dma_run(x.fd, &cq, &d);
	REQUIRE(e.status == 0 && e.bytes == 4096, "after the exec: %s",
		cm_errname(-e.status));
	REQUIRE(cm_check_pattern(x.shm.view, 4096, 133, 0) < 0, "data");
	cm_unmap(src, 4096);
	cm_cq_unmap(&cq);
	sub_env_close(&x);
}
END_TEST

void add_dma_uring_tests(Suite *s)
{
	TCase *tc = cm_tcase("dma-uring", 180);

	tcase_add_test(tc, test_uring_copy);
	tcase_add_test(tc, test_uring_async);
	tcase_add_test(tc, test_uring_errors);
	tcase_add_test(tc, test_uring_full);
	tcase_add_loop_test(tc, test_uring_exit_inflight, 0, 3);
	tcase_add_loop_test(tc, test_exec_inflight, 0, 2);
	tcase_add_loop_test(tc, test_uring_ring_closed, 0, 2);
	tcase_add_loop_test(tc, test_uring_deadline, 0, 2);
	suite_add_tcase(s, tc);
}
