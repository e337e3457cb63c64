// SPDX-License-Identifier: GPL-2.0
/*
 * test_load.c - the driver under load, with kills at random moments:
 * LOAD_USERS users (uids of their own), each with LOAD_WORKERS processes
 * in one domain, every process with up to LOAD_EPS endpoints doing random
 * operations (DMA through the CQ and io_uring into its own region,
 * checked, and into its peers' regions; COPY into its peers' regions;
 * windows over its peers' regions, written and read with memcpy while
 * their owners deregister, close and die; regions re-registered,
 * endpoints closed and opened again) for
 * COOP_TEST_LOAD_SECONDS (default 20), while the test SIGKILLs a random
 * process every 50-300 ms and starts it again, and another user measures
 * the latency of its own 256 KiB DMA copies.
 *
 * Passes when every killed process dies within 10 s, no process fails a
 * check, everything ends within 30 s of the stop, the counters come back
 * to zero, and (in scripts/vm/run) the module unloads with a clean kernel
 * log (and kmemleak, on the debug kernel).  Prints the operations, kills
 * and the other user's copy latencies.  Suite coopmpi-load.
 */
#include "dma_helpers.h"

#include <grp.h>
#include <liburing.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LOAD_USERS	3
#define LOAD_WORKERS	4
#define LOAD_EPS	3
#define LOAD_UID0	61000
#define VICTIM_UID	61999
#define REGION_LEN	(1u << 20)
#define MAX_COPY	(256u << 10)

/* Shared by the test and every process (MAP_SHARED). */
struct board {
	uint64_t cookie[LOAD_USERS][LOAD_WORKERS];	/* 0: none */
	uint64_t ops[LOAD_USERS][LOAD_WORKERS];
	uint64_t victim_copies, victim_max_us, victim_sum_us;
	int stop;
};

struct worker {
	struct board *b;
	int user, slot;
	struct cm_rng rng;
	uint64_t key;
	int fd[LOAD_EPS];
	struct cm_cq cq[LOAD_EPS];
	struct io_uring ring;
	uint8_t *mine, *src;
	uint64_t cookie;
};

static bool stopping(const struct board *b)
{
	return __atomic_load_n(&b->stop, __ATOMIC_ACQUIRE);
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void drop_to(uid_t uid)
{
	REQUIRE(setgroups(0, NULL) == 0 && setresgid(uid, uid, uid) == 0 &&
		setresuid(uid, uid, uid) == 0, "setresuid(%d): %s", (int)uid,
		strerror(errno));
}

static void ep_open(struct worker *w, int k)
{
	w->fd[k] = cm_open_join(w->key, 0, NULL);
	REQUIRE_OK(cm_cq_map(w->fd[k], &w->cq[k]));
}

static void ep_close(struct worker *w, int k)
{
	cm_cq_unmap(&w->cq[k]);
	close(w->fd[k]);
}

/* The region lives on endpoint 0; peers find its cookie on the board. */
static void region_publish(struct worker *w)
{
	REQUIRE_OK(cm_reg(w->fd[0], w->mine, REGION_LEN,
			  COOPMPI_REGION_READ | COOPMPI_REGION_WRITE |
			  COOPMPI_REGION_MAP, &w->cookie));
	__atomic_store_n(&w->b->cookie[w->user][w->slot], w->cookie,
			 __ATOMIC_RELEASE);
}

static uint64_t peer_cookie(struct worker *w)
{
	int peer = (int)cm_rng_below(&w->rng, LOAD_WORKERS);

	return __atomic_load_n(&w->b->cookie[w->user][peer], __ATOMIC_ACQUIRE);
}

/* A peer's region may be gone at any moment: these are not errors. */
static bool peer_gone(int err)
{
	return err == -ENXIO || err == -ESRCH;
}

/*
 * A length and an offset in one half of a region: its owner checks what
 * it copies into the first half, peers write into the second.
 */
static void pick(struct worker *w, bool peer, uint64_t *len, uint64_t *off)
{
	const uint64_t half = REGION_LEN / 2;

	*len = 1 + cm_rng_below(&w->rng, MAX_COPY);
	*off = cm_rng_below(&w->rng, half - *len + 1) + (peer ? half : 0);
}

static void op_dma_self(struct worker *w)
{
	int k = (int)cm_rng_below(&w->rng, LOAD_EPS);
	uint64_t len, off, seed = cm_rng_next(&w->rng);
	struct coopmpi_dma_desc d;
	struct coopmpi_dma_cqe e;

	pick(w, false, &len, &off);
	cm_fill_pattern(w->src, len, seed);
	cm_desc_local(&d, w->src, w->cookie, off, len, seed);
	e = cm_dma_run(w->fd[k], &w->cq[k], &d);
	REQUIRE(e.status == 0 && e.bytes == len, "own DMA: %s",
		cm_errname(-e.status));
	REQUIRE(cm_check_pattern(w->mine + off, len, seed, 0) < 0, "own DMA data");
}

static void op_dma_peer(struct worker *w)
{
	int k = (int)cm_rng_below(&w->rng, LOAD_EPS);
	struct coopmpi_dma_desc d[8];
	struct coopmpi_dma_cqe e[8];
	uint64_t cookie = peer_cookie(w), len, off;
	uint32_t done = 0;
	int ret;

	if (!cookie)
		return;
	for (int i = 0; i < 8; i++) {
		pick(w, true, &len, &off);
		cm_desc_local(&d[i], w->src, cookie, off, len, i);
	}
	ret = cm_dma_submit(w->fd[k], d, 8, &done);
	REQUIRE(!ret || peer_gone(ret) || ret == -EAGAIN, "peer DMA: %s",
		cm_errname(-ret));
	cm_cq_wait(w->fd[k], &w->cq[k], e, done, 30000);
	for (uint32_t i = 0; i < done; i++)
		REQUIRE(!e[i].status || peer_gone(e[i].status), "peer DMA: %s",
			cm_errname(-e[i].status));
}

static void op_copy_peer(struct worker *w)
{
	uint64_t cookie = peer_cookie(w), len, off, copied;
	int ret;

	if (!cookie)
		return;
	pick(w, true, &len, &off);
	ret = cm_copy(w->fd[0], cookie, off, w->src, len,
		      COOPMPI_COPY_TO_REGION, &copied);
	REQUIRE(!ret || peer_gone(ret), "COPY: %s", cm_errname(-ret));
}

/*
 * A window over a peer's region: a chunk written into the peer half and
 * read back with memcpy.  Its owner may deregister, close or die at any
 * moment; the window then reads zeros and sinks writes, never a signal
 * (which would end this process: a failed check).
 */
static void op_window_peer(struct worker *w)
{
	int k = (int)cm_rng_below(&w->rng, LOAD_EPS);
	struct coopmpi_window_attach a = { .size = sizeof(a),
					   .flags = COOPMPI_WINDOW_WRITE };
	struct coopmpi_window_detach d = { .size = sizeof(d) };
	uint64_t len, off;
	uint8_t *m;
	int ret;

	a.cookie = peer_cookie(w);
	if (!a.cookie)
		return;
	ret = cm_ioctl(w->fd[k], COOPMPI_IOC_WINDOW_ATTACH, &a);
	REQUIRE(!ret || peer_gone(ret), "window attach: %s", cm_errname(-ret));
	if (ret)
		return;
	m = mmap(NULL, a.map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		 w->fd[k], (off_t)COOPMPI_MMAP_WINDOW(a.handle));
	d.handle = a.handle;
	REQUIRE_OK(cm_ioctl(w->fd[k], COOPMPI_IOC_WINDOW_DETACH, &d));
	REQUIRE(m != MAP_FAILED, "window mmap: %s", strerror(errno));
	pick(w, true, &len, &off);
	memcpy(m + a.page_offset + off, w->src, len);
	memcpy(w->src, m + a.page_offset + off, len);
	REQUIRE(munmap(m, a.map_bytes) == 0, "window munmap");
}

static void op_uring_self(struct worker *w)
{
	int k = (int)cm_rng_below(&w->rng, LOAD_EPS);
	uint64_t len, off, seed = cm_rng_next(&w->rng);
	struct coopmpi_dma_uring_cmd *c;
	struct coopmpi_dma_desc d;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;

	pick(w, false, &len, &off);
	cm_fill_pattern(w->src, len, seed);
	cm_desc_local(&d, w->src, w->cookie, off, len, 0);
	sqe = io_uring_get_sqe(&w->ring);
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, w->fd[k], NULL, 0, 0);
	sqe->cmd_op = COOPMPI_URING_CMD_DMA;
	memset(sqe->cmd, 0, 16);
	c = (struct coopmpi_dma_uring_cmd *)sqe->cmd;
	c->desc = (uintptr_t)&d;
	c->desc_size = sizeof(d);
	REQUIRE(io_uring_submit(&w->ring) == 1, "io_uring_submit");
	REQUIRE(io_uring_wait_cqe(&w->ring, &cqe) == 0, "io_uring_wait_cqe");
	REQUIRE(cqe->res == (int)len, "own io_uring DMA: %d", cqe->res);
	io_uring_cqe_seen(&w->ring, cqe);
	REQUIRE(cm_check_pattern(w->mine + off, len, seed, 0) < 0,
		"own io_uring DMA data");
}

static void op_reregister(struct worker *w)
{
	REQUIRE_OK(cm_dereg(w->fd[0], w->cookie));
	region_publish(w);
}

static void op_reopen(struct worker *w)
{
	int k = (int)cm_rng_below(&w->rng, LOAD_EPS);

	ep_close(w, k);
	ep_open(w, k);
	if (k == 0)
		region_publish(w);	/* its region went with it */
}

static void (*const load_ops[])(struct worker *w) = {
	op_dma_self, op_dma_peer, op_copy_peer, op_window_peer, op_uring_self,
	op_reregister, op_reopen,
};

static void __attribute__((noreturn))
worker_main(struct board *b, int user, int slot)
{
	struct worker w = { .b = b, .user = user, .slot = slot };

	drop_to(LOAD_UID0 + user);
	cm_rng_seed(&w.rng, now_us() ^ ((uint64_t)getpid() << 20));
	w.key = 0x10ad0000ULL + user;
	for (int k = 0; k < LOAD_EPS; k++)
		ep_open(&w, k);
	REQUIRE(io_uring_queue_init(4, &w.ring, 0) == 0, "io_uring");
	w.mine = cm_map_anon(REGION_LEN);
	w.src = cm_map_anon(MAX_COPY);
	region_publish(&w);
	while (!stopping(b)) {
		load_ops[cm_rng_below(&w.rng, sizeof(load_ops) /
					    sizeof(load_ops[0]))](&w);
		__atomic_add_fetch(&b->ops[user][slot], 1, __ATOMIC_RELAXED);
	}
	_exit(0);
}

/* Another user's 256 KiB copies, one after the other, until the stop. */
static void __attribute__((noreturn)) victim_main(struct board *b)
{
	const size_t len = 256u << 10;
	uint8_t *src, *dst;
	struct coopmpi_dma_desc d;
	struct coopmpi_dma_cqe e;
	struct cm_cq cq;
	uint64_t rw, t0, us;
	int fd;

	drop_to(VICTIM_UID);
	fd = cm_open_join(cm_unique_key(), COOPMPI_JOIN_CREATE, NULL);
	src = cm_map_anon(len);
	dst = cm_map_anon(len);
	REQUIRE_OK(cm_cq_map(fd, &cq));
	REQUIRE_OK(cm_reg(fd, dst, len, COOPMPI_REGION_WRITE, &rw));
	cm_fill_pattern(src, len, 42);
	cm_desc_local(&d, src, rw, 0, len, 1);
	while (!stopping(b)) {
		t0 = now_us();
		e = cm_dma_run(fd, &cq, &d);
		us = now_us() - t0;
		REQUIRE(e.status == 0, "the other user's copy: %s",
			cm_errname(-e.status));
		b->victim_copies++;
		b->victim_sum_us += us;
		if (us > b->victim_max_us)
			b->victim_max_us = us;
	}
	REQUIRE(cm_check_pattern(dst, len, 42, 0) < 0, "the other user's data");
	_exit(0);
}

static pid_t spawn(struct board *b, int user, int slot)
{
	pid_t pid = cm_fork();

	if (pid == 0) {
		if (user < 0)
			victim_main(b);
		worker_main(b, user, slot);
	}
	return pid;
}

/* A process that ended by itself before the stop failed a check. */
static void reap_unexpected(void)
{
	int st = 0;
	pid_t pid = waitpid(-1, &st, WNOHANG);

	REQUIRE(pid <= 0, "process %d ended by itself (status %#x)", (int)pid,
		st);
}

static void kill_one(struct board *b, pid_t pids[LOAD_USERS][LOAD_WORKERS],
		     struct cm_rng *rng)
{
	int u = (int)cm_rng_below(rng, LOAD_USERS);
	int s = (int)cm_rng_below(rng, LOAD_WORKERS);
	int st;

	kill(pids[u][s], SIGKILL);
	REQUIRE(cm_wait_timeout(pids[u][s], 10000, &st) == 0,
		"a killed process (user %d) still there after 10 s", u);
	REQUIRE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
		"user %d's process failed before its kill (status %#x)", u, st);
	pids[u][s] = spawn(b, u, s);
}

static void stop_all(struct board *b, pid_t pids[LOAD_USERS][LOAD_WORKERS],
		     pid_t victim)
{
	int st;

	__atomic_store_n(&b->stop, 1, __ATOMIC_RELEASE);
	for (int u = 0; u < LOAD_USERS; u++)
		for (int s = 0; s < LOAD_WORKERS; s++)
			REQUIRE(cm_wait_timeout(pids[u][s], 30000, &st) == 0 &&
				WIFEXITED(st) && WEXITSTATUS(st) == 0,
				"user %d's process at the stop: status %#x", u, st);
	REQUIRE(cm_wait_timeout(victim, 30000, &st) == 0 && WIFEXITED(st) &&
		WEXITSTATUS(st) == 0, "the other user at the stop: %#x", st);
}

/*
 * The domains of the stopped processes go away; a killed process's ring
 * may still hold an endpoint for a moment (io_uring's exit work and the
 * deferred fput run asynchronously).
 */
static void wait_domains(uint64_t want, unsigned timeout_ms)
{
	uint64_t end = cm_now_ms() + timeout_ms;

	while (cm_sysfs_u64("nr_domains") != want) {
		REQUIRE(cm_now_ms() < end, "domains left after %u ms: %llu",
			timeout_ms,
			(unsigned long long)(cm_sysfs_u64("nr_domains") - want));
		cm_sleep_ms(20);
	}
}

START_TEST(test_load)
{
	const char *env = getenv("COOP_TEST_LOAD_SECONDS");
	unsigned seconds = env ? (unsigned)atoi(env) : 20;
	struct board *b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pids[LOAD_USERS][LOAD_WORKERS], victim;
	uint64_t end, kills = 0, ops = 0, domains0;
	struct cm_rng rng;

	if (!cm_dma_available())
		return;
	cm_require_root();
	REQUIRE(b != MAP_FAILED, "mmap: %s", strerror(errno));
	cm_rng_seed(&rng, now_us());
	domains0 = cm_sysfs_u64("nr_domains");
	victim = spawn(b, -1, 0);
	for (int u = 0; u < LOAD_USERS; u++)
		for (int s = 0; s < LOAD_WORKERS; s++)
			pids[u][s] = spawn(b, u, s);
	end = cm_now_ms() + seconds * 1000ULL;
	while (cm_now_ms() < end) {
		cm_sleep_ms(50 + (unsigned)cm_rng_below(&rng, 250));
		reap_unexpected();
		kill_one(b, pids, &rng);
		kills++;
	}
	stop_all(b, pids, victim);
	cm_dma_wait_idle(30000);
	wait_domains(domains0, 20000);
	for (int u = 0; u < LOAD_USERS; u++)
		for (int s = 0; s < LOAD_WORKERS; s++)
			ops += b->ops[u][s];
	printf("load: %u s, %d users x %d processes x %d endpoints: %llu operations, %llu kills; "
	       "the other user's 256 KiB DMA copy: %llu copies, mean %llu us, max %llu ms\n",
	       seconds, LOAD_USERS, LOAD_WORKERS, LOAD_EPS,
	       (unsigned long long)ops, (unsigned long long)kills,
	       (unsigned long long)b->victim_copies,
	       (unsigned long long)(b->victim_sum_us /
				    (b->victim_copies ? b->victim_copies : 1)),
	       (unsigned long long)(b->victim_max_us / 1000));
	REQUIRE(ops > 0 && b->victim_copies > 0, "nothing happened");
	munmap(b, sizeof(*b));
}
END_TEST

void add_load_tests(Suite *s)
{
	const char *env = getenv("COOP_TEST_LOAD_SECONDS");
	TCase *tc = cm_tcase("load", (env ? atoi(env) : 20) + 120);

	tcase_add_test(tc, test_load);
	suite_add_tcase(s, tc);
}
