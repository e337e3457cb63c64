// SPDX-License-Identifier: GPL-2.0
/*
 * test_user.c - what one user may hold, and what it may not take from
 * another: the per-user limits (user_max_endpoints, user_max_domains,
 * user_max_dma_inflight, user_max_dma_bytes, user_max_windows: the error
 * at the limit, nothing else affected, room again once released) and the
 * DMA workers' fairness between users (another user's copy latency
 * while one user floods the workers).
 */
#include "dma_helpers.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs fn as nobody in a child; asserts that it exited 0. */
static void as_nobody(void (*fn)(void *), void *arg)
{
	pid_t pid;
	int st;

	pid = cm_fork();
	if (pid == 0) {
		cm_drop_to_nobody();
		fn(arg);
		_exit(0);
	}
	REQUIRE(cm_wait_timeout(pid, 60000, &st) == 0 && WIFEXITED(st) &&
		WEXITSTATUS(st) == 0, "nobody's part: status %#x", st);
}

static int open_ep(void)
{
	int fd = open("/dev/coopmpi", O_RDWR | O_CLOEXEC);

	return fd >= 0 ? fd : -errno;
}

/* nobody may hold 4 endpoints: the 5th open fails, root's does not */
static void endpoints_part(void *arg)
{
	int fd[5];

	(void)arg;
	for (int i = 0; i < 4; i++) {
		fd[i] = open_ep();
		REQUIRE(fd[i] >= 0, "endpoint %d: %s", i, cm_errname(-fd[i]));
	}
	fd[4] = open_ep();
	REQUIRE(fd[4] == -EMFILE, "5th endpoint: %s, want EMFILE",
		cm_errname(-fd[4]));
	close(fd[0]);
	fd[0] = open_ep();
	REQUIRE(fd[0] >= 0, "after a close: %s", cm_errname(-fd[0]));
}

/*
 * With limit param at val, nobody's part runs into it; root, under the
 * same limit with its own count, still makes a domain and an endpoint.
 */
static void limit_for_nobody(const char *param, const char *val,
			     void (*part)(void *))
{
	const char *old;
	int fd;

	cm_require_root();
	old = cm_param_swap(param, val);
	as_nobody(part, NULL);
	fd = cm_open_join(cm_unique_key(), COOPMPI_JOIN_CREATE, NULL);
	close(fd);
	cm_param_swap(param, old);
}

START_TEST(test_user_endpoints)
{
	limit_for_nobody("user_max_endpoints", "4", endpoints_part);
	REQUIRE_ERR(cm_write_file(CM_PARAM_DIR "user_max_endpoints", "0"), EINVAL);
}
END_TEST

/* nobody may own 2 domains: a 3rd JOIN_CREATE fails, joining does not */
static void domains_part(void *arg)
{
	uint64_t key[3] = { cm_unique_key(), cm_unique_key(), cm_unique_key() };
	struct coopmpi_join j;
	int fd[4];

	(void)arg;
	fd[0] = cm_open_join(key[0], COOPMPI_JOIN_CREATE, NULL);
	fd[1] = cm_open_join(key[1], COOPMPI_JOIN_CREATE, NULL);
	fd[2] = open_ep();
	REQUIRE(fd[2] >= 0, "endpoint: %s", cm_errname(-fd[2]));
	REQUIRE_ERR(cm_join(fd[2], key[2], COOPMPI_JOIN_CREATE, &j), EDQUOT);
	/* an existing domain of its own is joined as before */
	REQUIRE_OK(cm_join(fd[2], key[0], COOPMPI_JOIN_EXISTING, &j));
	close(fd[1]);
	fd[3] = cm_open_join(key[2], COOPMPI_JOIN_CREATE, NULL);
	close(fd[3]);
	close(fd[2]);
	close(fd[0]);
}

START_TEST(test_user_domains)
{
	limit_for_nobody("user_max_domains", "2", domains_part);
}
END_TEST

/* nobody may hold 3 windows: a 4th attach fails until one is detached */
static void windows_part(void *arg)
{
	uint64_t key = cm_unique_key(), cookie;
	int a = cm_open_join(key, COOPMPI_JOIN_CREATE, NULL);
	int b = cm_open_join(key, COOPMPI_JOIN_EXISTING, NULL);
	struct coopmpi_window_attach w[4];
	void *buf = cm_map_anon(4096);

	(void)arg;
	REQUIRE_OK(cm_reg(a, buf, 4096, COOPMPI_REGION_READ |
			  COOPMPI_REGION_MAP, &cookie));
	for (int i = 0; i < 4; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].size = sizeof(w[i]);
		w[i].cookie = cookie;
	}
	REQUIRE_OK(cm_ioctl(b, COOPMPI_IOC_WINDOW_ATTACH, &w[0]));
	REQUIRE_OK(cm_ioctl(b, COOPMPI_IOC_WINDOW_ATTACH, &w[1]));
	REQUIRE_OK(cm_ioctl(a, COOPMPI_IOC_WINDOW_ATTACH, &w[2]));
	REQUIRE_ERR(cm_ioctl(a, COOPMPI_IOC_WINDOW_ATTACH, &w[3]), EDQUOT);
	close(b);	/* frees its two */
	REQUIRE_OK(cm_ioctl(a, COOPMPI_IOC_WINDOW_ATTACH, &w[3]));
	close(a);
}

START_TEST(test_user_windows)
{
	limit_for_nobody("user_max_windows", "3", windows_part);
	REQUIRE_ERR(cm_write_file(CM_PARAM_DIR "user_max_windows", "0"), EINVAL);
}
END_TEST

/*
 * nobody with 8 descriptors in flight (stuck on userfaultfd memory made
 * while still root) on two endpoints: the 9th fails with EAGAIN on
 * either, root's copies go on; a descriptor longer than user_max_dma_bytes
 * fails the same way.
 */
struct dma_limit_env {
	struct cm_uffd uf;
	uint64_t key;
	int fd[2];
	struct cm_cq cq[2];
	uint8_t *mine;
	uint64_t rw;
};

static void dma_limit_part(void *arg)
{
	struct dma_limit_env *x = arg;
	struct coopmpi_dma_desc d;
	uint32_t done;

	for (int i = 0; i < 8; i++) {
		cm_desc_local(&d, x->uf.area, x->rw, 0, 4096, i);
		REQUIRE_OK(cm_dma_submit(x->fd[i % 2], &d, 1, &done));
	}
	REQUIRE_ERR(cm_dma_submit(x->fd[0], &d, 1, &done), EAGAIN);
	REQUIRE_ERR(cm_dma_submit(x->fd[1], &d, 1, &done), EAGAIN);
	REQUIRE(cm_sysfs_u64("dma_ops") == 8, "dma_ops %llu",
		(unsigned long long)cm_sysfs_u64("dma_ops"));
}

static void root_copy_works(void)
{
	struct coopmpi_dma_desc d;
	struct coopmpi_dma_cqe e;
	uint64_t rw;
	struct cm_cq cq;
	uint8_t *buf = cm_map_anon(1 << 20);
	int fd = cm_open_join(cm_unique_key(), COOPMPI_JOIN_CREATE, NULL);

	REQUIRE_OK(cm_cq_map(fd, &cq));
	REQUIRE_OK(cm_reg(fd, buf, 1 << 20, COOPMPI_REGION_WRITE, &rw));
	cm_fill_pattern(buf + (512 << 10), 256 << 10, 5);
	cm_desc_local(&d, buf + (512 << 10), rw, 0, 256 << 10, 1);
	e = cm_dma_run(fd, &cq, &d);
	REQUIRE(e.status == 0 && cm_check_pattern(buf, 256 << 10, 5, 0) < 0,
		"root's copy: %s", cm_errname(-e.status));
	cm_cq_unmap(&cq);
	close(fd);
	cm_unmap(buf, 1 << 20);
}

START_TEST(test_user_dma_limits)
{
	struct dma_limit_env x;
	const char *old_ops, *old_bytes;
	pid_t pid;
	int st, sv[2];

	if (!cm_dma_available())
		return;
	cm_require_root();
	old_ops = cm_param_swap("user_max_dma_inflight", "8");
	cm_socketpair(sv);
	pid = cm_fork();
	if (pid == 0) {
		close(sv[0]);
		cm_uffd_create(&x.uf, 1 << 20);	/* as root */
		cm_drop_to_nobody();
		x.key = cm_unique_key();
		x.fd[0] = cm_open_join(x.key, COOPMPI_JOIN_CREATE, NULL);
		x.fd[1] = cm_open_join(x.key, COOPMPI_JOIN_EXISTING, NULL);
		x.mine = cm_map_anon(1 << 20);
		REQUIRE_OK(cm_reg(x.fd[0], x.mine, 1 << 20,
				  COOPMPI_REGION_WRITE, &x.rw));
		dma_limit_part(&x);
		cm_put_u64(sv[1], 1);
		for (;;)
			pause();
	}
	close(sv[1]);
	REQUIRE(cm_get_u64_from(sv[0], pid, "nobody") == 1, "nobody's part");
	root_copy_works();
	kill(pid, SIGKILL);
	REQUIRE(cm_wait_timeout(pid, 10000, &st) == 0, "nobody did not die");
	close(sv[0]);
	cm_dma_wait_idle(10000);
	cm_param_swap("user_max_dma_inflight", old_ops);

	old_bytes = cm_param_swap("user_max_dma_bytes", "1048576");
	{
		struct coopmpi_dma_desc d;
		uint8_t *buf = cm_map_anon(4 << 20);
		int fd = cm_open_join(cm_unique_key(), COOPMPI_JOIN_CREATE, NULL);
		uint64_t rw;
		uint32_t done;

		REQUIRE_OK(cm_reg(fd, buf, 4 << 20, COOPMPI_REGION_WRITE, &rw));
		cm_desc_local(&d, buf + (2 << 20), rw, 0, (1 << 20) + 1, 1);
		REQUIRE_ERR(cm_dma_submit(fd, &d, 1, &done), EAGAIN);
		close(fd);
		cm_unmap(buf, 4 << 20);
	}
	cm_param_swap("user_max_dma_bytes", old_bytes);
	root_copy_works();
}
END_TEST

/*
 * User A (root) keeps FLOOD_EPS endpoints x FLOOD_DEPTH descriptors of
 * 1 MiB in flight, submitting again what completes, until the socket
 * says stop; then reports how many it completed.
 */
#define FLOOD_EPS	2
#define FLOOD_DEPTH	128
#define FLOOD_LEN	(1u << 20)

static void __attribute__((noreturn)) flood(int sock)
{
	static struct coopmpi_dma_desc d[FLOOD_DEPTH];
	struct coopmpi_dma_cqe e[FLOOD_DEPTH];
	uint64_t key = cm_unique_key(), rw, completed = 0;
	uint8_t *src = cm_map_anon(FLOOD_LEN), *dst;
	struct pollfd p = { .fd = sock, .events = POLLIN };
	struct cm_cq cq[FLOOD_EPS];
	int fd[FLOOD_EPS];
	uint32_t done;

	cm_fill_pattern(src, FLOOD_LEN, 3);
	for (int k = 0; k < FLOOD_EPS; k++) {
		fd[k] = cm_open_join(key, k ? COOPMPI_JOIN_EXISTING :
					     COOPMPI_JOIN_CREATE, NULL);
		REQUIRE_OK(cm_cq_map(fd[k], &cq[k]));
	}
	dst = cm_map_anon(FLOOD_LEN);
	REQUIRE_OK(cm_reg(fd[0], dst, FLOOD_LEN, COOPMPI_REGION_WRITE, &rw));
	for (int i = 0; i < FLOOD_DEPTH; i++)
		cm_desc_local(&d[i], src, rw, 0, FLOOD_LEN, i);
	for (int k = 0; k < FLOOD_EPS; k++)
		REQUIRE_OK(cm_dma_submit(fd[k], d, FLOOD_DEPTH, &done));
	cm_put_u64(sock, 1);
	while (poll(&p, 1, 0) == 0) {
		for (int k = 0; k < FLOOD_EPS; k++) {
			unsigned n = cm_cq_reap(&cq[k], e, FLOOD_DEPTH);

			for (unsigned i = 0; i < n; i++)
				REQUIRE(e[i].status == 0, "flood: %s",
					cm_errname(-e[i].status));
			completed += n;
			if (n)
				REQUIRE_OK(cm_dma_submit(fd[k], d, n, &done));
		}
		usleep(1000);
	}
	cm_put_u64(sock, completed);
	_exit(0);
}

/*
 * Fairness: user B's copy latency while user A floods the workers with
 * FLOOD_EPS * FLOOD_DEPTH MiB in flight.  The workers serve the users in
 * turn, so B's one-chunk copy waits for at most the chunk each worker is
 * busy with, not for A's queue: dma_workers + 1 times its time alone
 * when the engine does one chunk at a time (the test provider's single
 * channel).  B's median may be twice that, for the noise of an emulated
 * machine, plus 10 ms; first-come first-served workers make B wait for
 * A's whole queue, two orders of magnitude more.
 */
START_TEST(test_user_dma_fairness)
{
	uint64_t alone_med, alone_max, flood_med, flood_max, completed;
	uint64_t workers;
	int sv[2], st;
	pid_t pid;

	if (!cm_dma_available())
		return;
	cm_require_root();
	workers = cm_param_u64("dma_workers");
	alone_max = cm_dma_latency_as_nobody(40, &alone_med);
	cm_socketpair(sv);
	pid = cm_fork();
	if (pid == 0) {
		close(sv[0]);
		flood(sv[1]);
	}
	close(sv[1]);
	REQUIRE(cm_get_u64_from(sv[0], pid, "flood") == 1, "flood started");
	cm_sleep_ms(200);
	flood_max = cm_dma_latency_as_nobody(40, &flood_med);
	cm_put_u64(sv[0], 0);
	completed = cm_get_u64_from(sv[0], pid, "flood");
	REQUIRE(cm_wait_timeout(pid, 30000, &st) == 0 && WIFEXITED(st) &&
		WEXITSTATUS(st) == 0, "flood: status %#x", st);
	close(sv[0]);
	cm_dma_wait_idle(30000);
	printf("other user's 256 KiB copy: alone median %llu us, max %llu ms; "
	       "while A floods (%d MiB in flight, %llu MiB copied): median %llu us, max %llu ms\n",
	       (unsigned long long)alone_med, (unsigned long long)alone_max,
	       FLOOD_EPS * FLOOD_DEPTH, (unsigned long long)completed,
	       (unsigned long long)flood_med, (unsigned long long)flood_max);
	REQUIRE(flood_med <= 2 * (workers + 1) * alone_med + 10000,
		"B's median copy took %llu us while A flooded, %llu us alone (%llu workers)",
		(unsigned long long)flood_med, (unsigned long long)alone_med,
		(unsigned long long)workers);
}
END_TEST

void add_user_tests(Suite *s)
{
	TCase *tc = cm_tcase("user", 120);

	tcase_add_test(tc, test_user_endpoints);
	tcase_add_test(tc, test_user_domains);
	tcase_add_test(tc, test_user_windows);
	suite_add_tcase(s, tc);
}

void add_dma_user_tests(Suite *s)
{
	TCase *tc = cm_tcase("dma-user", 180);

	tcase_add_test(tc, test_user_dma_limits);
	tcase_add_test(tc, test_user_dma_fairness);
	suite_add_tcase(s, tc);
}
