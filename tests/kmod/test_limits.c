// SPDX-License-Identifier: GPL-2.0
/*
 * test_limits.c - what a user makes the driver allocate is charged to the
 * user's memory cgroup: the pages of its rings and counters areas, its
 * endpoints, domains and regions.  So the cgroup limits an administrator
 * sets (a Slurm job's, a systemd slice's) bound them, and one user cannot
 * exhaust the node's memory through /dev/coopmpi.  The charge goes away
 * with the endpoints.
 *
 * Needs cgroup v2 with the memory controller (mounted here if it is not):
 * the test says so and passes on a kernel without it; Debian's kernel and
 * the debug kernel (scripts/vm/debug.config) have it.
 */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CG_ROOT		"/sys/fs/cgroup"
#define NR_EPS		64

/* cgroup v2 with the memory controller for children of the root */
static bool memcg_ready(void)
{
	char buf[256] = "";

	if (!cm_path_exists(CG_ROOT "/cgroup.controllers"))
		mount("cgroup2", CG_ROOT, "cgroup2", 0, NULL);
	if (cm_read_file(CG_ROOT "/cgroup.controllers", buf, sizeof(buf)) <= 0 ||
	    !strstr(buf, "memory"))
		return false;
	return !cm_write_file(CG_ROOT "/cgroup.subtree_control", "+memory");
}

/*
 * The kernel memory charged to @cg: memory.stat's "kernel" (slab, vmalloc,
 * pages; memory.current would also count the charges each CPU keeps in
 * stock, up to 64 pages per CPU).
 */
static long long kernel_charged(const char *cg)
{
	char path[256], st[8192];
	const char *k;

	snprintf(path, sizeof(path), "%s/memory.stat", cg);
	REQUIRE(cm_read_file(path, st, sizeof(st)) > 0, "read %s: %s", path,
		strerror(errno));
	k = strstr(st, "\nkernel ");
	if (!k && !strncmp(st, "kernel ", 7))
		k = st - 1;
	REQUIRE(k, "no \"kernel\" line in %s", path);
	return atoll(k + 8);
}

/*
 * The kernel memory of @cg once it is at least (@rising) or at most @bound,
 * else its last value after 3 s: memory.stat's counters are flushed from
 * per-CPU deltas, a read may miss the latest (a flush already running makes
 * it skip its own; the periodic one runs every 2 s), and frees may be
 * deferred to RCU or a workqueue.
 */
static long long settled_kernel(const char *cg, long long bound, bool rising)
{
	long long cur = 0;
	int i;

	for (i = 0; i < 300; i++) {
		cur = kernel_charged(cg);
		if (rising ? cur >= bound : cur <= bound)
			break;
		cm_sleep_ms(10);
	}
	return cur;
}

/* the pages of an endpoint's ring and counters areas */
static long long areas_bytes(void)
{
	return (long long)cm_info_cache.ring_bytes +
	       (long long)cm_info_cache.counters_bytes;
}

/* what NR_EPS endpoints must charge at least: 9/10 of their areas (the
 * whole charge is more, their structures too) */
static long long eps_floor(void)
{
	return NR_EPS * areas_bytes() * 9 / 10;
}

/*
 * The child, in the cgroup: opens NR_EPS endpoints, each in a domain of its
 * own, reports the cgroup's kernel memory on the pipe, closes them.
 */
static void open_endpoints(const char *cg, int report)
{
	char path[256];
	long long cur;
	int fds[NR_EPS], i, r;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	r = cm_write_file(path, "0");
	REQUIRE(r == 0, "join %s: %s", cg, strerror(-r));
	for (i = 0; i < NR_EPS; i++)
		fds[i] = cm_open_join(cm_unique_key(), 0, NULL);
	cur = settled_kernel(cg, eps_floor(), true);
	REQUIRE(write(report, &cur, sizeof(cur)) == sizeof(cur), "report");
	for (i = 0; i < NR_EPS; i++)
		close(fds[i]);
	_exit(0);
}

START_TEST(test_memcg_charged)
{
	char cg[128];
	int report[2];
	long long with_eps, after;
	long long per_ep = areas_bytes();
	pid_t pid;

	cm_require_root();
	if (!memcg_ready()) {
		printf("limits: no cgroup v2 memory controller: not tested\n");
		return;
	}
	snprintf(cg, sizeof(cg), CG_ROOT "/coopmpi-limits-%d", getpid());
	REQUIRE(mkdir(cg, 0755) == 0, "mkdir %s: %s", cg, strerror(errno));
	REQUIRE(pipe(report) == 0, "pipe");
	pid = fork();
	REQUIRE(pid >= 0, "fork");
	if (pid == 0)
		open_endpoints(cg, report[1]);
	REQUIRE(read(report[0], &with_eps, sizeof(with_eps)) ==
		sizeof(with_eps), "the child did not report");
	cm_wait_ok(pid, "endpoint opener");
	/* the cgroup was empty before the child came */
	after = settled_kernel(cg, per_ep, false);
	printf("limits: %d endpoints charged %lld bytes (%lld each, rings and "
	       "counters %lld); %lld left after they closed\n", NR_EPS,
	       with_eps, with_eps / NR_EPS, per_ep, after);
	REQUIRE(with_eps >= eps_floor(),
		"%d endpoints charged only %lld bytes to their cgroup (their "
		"rings and counters alone take %lld)", NR_EPS, with_eps,
		NR_EPS * per_ep);
	REQUIRE(after <= per_ep,
		"%lld bytes still charged after every endpoint closed", after);
	REQUIRE(rmdir(cg) == 0, "rmdir %s: %s", cg, strerror(errno));
}
END_TEST

void add_limits_tests(Suite *s)
{
	TCase *tc = cm_tcase("limits", 60);

	tcase_add_test(tc, test_memcg_charged);
	suite_add_tcase(s, tc);
}
