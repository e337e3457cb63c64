// SPDX-License-Identifier: GPL-2.0
/*
 * test_pin.c - the pages a COPY or a DMA chunk pins are charged to the
 * caller's (submitter's) pinned_vm against RLIMIT_MEMLOCK while pinned:
 * with 16 KiB of room a 1 MiB copy goes through in chunks of 4 pages,
 * with none COPY fails with ENOMEM and a DMA descriptor waits until its
 * deadline; VmPin is back to 0 after each.  As nobody (root's
 * CAP_IPC_LOCK lifts the limit).
 */
#include "dma_helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define LEN (1u << 20)

static unsigned long vm_pin_kb(void)
{
	char buf[4096], *p;

	REQUIRE(cm_read_file("/proc/self/status", buf, sizeof(buf)) > 0,
		"/proc/self/status");
	p = strstr(buf, "VmPin:");
	REQUIRE(p, "no VmPin in /proc/self/status");
	return strtoul(p + 6, NULL, 10);
}

static void memlock(rlim_t bytes)
{
	struct rlimit r = { bytes, bytes };

	REQUIRE(setrlimit(RLIMIT_MEMLOCK, &r) == 0, "setrlimit: %s",
		strerror(errno));
}

struct pin_env {
	int fd;
	struct cm_cq cq;
	uint8_t *mine, *local;
	uint64_t rw;
};

static void pin_env_open(struct pin_env *x)
{
	x->fd = cm_open_join(cm_unique_key(), COOPMPI_JOIN_CREATE, NULL);
	x->mine = cm_map_anon(LEN);
	x->local = cm_map_anon(LEN);
	REQUIRE_OK(cm_reg(x->fd, x->mine, LEN,
			  COOPMPI_REGION_READ | COOPMPI_REGION_WRITE, &x->rw));
}

static void copy_part(bool dma)
{
	struct coopmpi_dma_desc d;
	struct coopmpi_dma_cqe e;
	struct pin_env x;
	uint64_t copied;

	cm_drop_to_nobody();
	pin_env_open(&x);
	if (dma)
		REQUIRE_OK(cm_cq_map(x.fd, &x.cq));
	memlock(16 << 10);
	cm_fill_pattern(x.local, LEN, 11);
	if (dma) {
		cm_desc_local(&d, x.local, x.rw, 0, LEN, 1);
		e = cm_dma_run(x.fd, &x.cq, &d);
		REQUIRE(e.status == 0 && e.bytes == LEN, "DMA in 16 KiB: %s",
			cm_errname(-e.status));
	} else {
		REQUIRE_OK(cm_copy(x.fd, x.rw, 0, x.local, LEN,
				   COOPMPI_COPY_TO_REGION, &copied));
	}
	REQUIRE(cm_check_pattern(x.mine, LEN, 11, 0) < 0, "data");
	REQUIRE(vm_pin_kb() == 0, "VmPin %lu kB after the copy", vm_pin_kb());

	memlock(0);
	if (dma) {
		e = cm_dma_run(x.fd, &x.cq, &d);
		REQUIRE(e.status == -ETIMEDOUT && e.bytes == 0,
			"DMA without room: %s, %llu bytes",
			cm_errname(-e.status), (unsigned long long)e.bytes);
	} else {
		REQUIRE_ERR(cm_copy(x.fd, x.rw, 0, x.local, LEN,
				    COOPMPI_COPY_TO_REGION, &copied), ENOMEM);
	}
	REQUIRE(vm_pin_kb() == 0, "VmPin %lu kB", vm_pin_kb());
}

/* _i = 0: COPY, 1: DMA */
START_TEST(test_pin_memlock)
{
	const char *old;
	pid_t pid;
	int st;

	if (_i && !cm_dma_available())
		return;
	cm_require_root();
	old = cm_param_swap("dma_deadline_ms", "1500");
	pid = cm_fork();
	if (pid == 0) {
		copy_part(_i);
		_exit(0);
	}
	REQUIRE(cm_wait_timeout(pid, 60000, &st) == 0, "no end");
	cm_param_swap("dma_deadline_ms", old);
	REQUIRE(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
	cm_dma_wait_idle(10000);
}
END_TEST

void add_pin_tests(Suite *s)
{
	TCase *tc = cm_tcase("dma-pin", 120);

	tcase_add_loop_test(tc, test_pin_memlock, 0, 2);
	suite_add_tcase(s, tc);
}
