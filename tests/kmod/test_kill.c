// SPDX-License-Identifier: GPL-2.0
/*
 * test_kill.c - processes dying in the middle of copies: the region owner
 * SIGKILLed while a peer copies from/to it, the copier SIGKILLed mid-copy,
 * the region deregistered under a running copy or one waiting in a fault,
 * the copier's fd closed or buffer unmapped by another thread mid-copy,
 * and processes killed while they wait in the driver.  Nothing may hang,
 * copies end with success or -ESRCH/-ENXIO, and the harness checks the
 * kernel log.
 */
#include "helpers.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define BIG (64u << 20)

static pid_t spawn_killer(pid_t victim, unsigned delay_ms)
{
	pid_t k = cm_fork();

	if (k == 0) {
		cm_sleep_ms(delay_ms);
		kill(victim, SIGKILL);
		_exit(0);
	}
	return k;
}

/* _i selects the kill delay */
START_TEST(test_owner_killed_during_copy)
{
	static const unsigned delays[] = { 30, 200, 600 };
	uint64_t key = cm_unique_key(), copied;
	struct coopmpi_join j;
	struct cm_owner o;
	uint8_t *local = cm_map_anon(BIG);
	int fd = cm_open_join(key, COOPMPI_JOIN_CREATE, &j);
	int r = 0, ok = 0, st;
	uint64_t t0;
	pid_t killer;

	cm_owner_spawn(&o, key, NULL, BIG,
		       COOPMPI_REGION_READ | COOPMPI_REGION_WRITE, 7);
	killer = spawn_killer(o.pid, delays[_i]);
	t0 = cm_now_ms();
	for (int it = 0; it < 100000 && cm_now_ms() - t0 < 60000; it++) {
		uint32_t dir = (it & 1) ? COOPMPI_COPY_TO_REGION :
					  COOPMPI_COPY_FROM_REGION;
		/* whole-region copies (the kill lands inside one), or 1 MiB
		 * copies all over the region (it lands between or inside) */
		uint64_t len = _i == 2 ? 1u << 20 : BIG;
		uint64_t off = _i == 2 ? (uint64_t)(it % 64) << 20 : 0;

		copied = 0;
		r = cm_copy(fd, o.cookie, off, local, len, dir, &copied);
		if (r != 0)
			break;
		REQUIRE(copied == len, "successful copy moved %llu bytes",
			(unsigned long long)copied);
		ok++;
	}
	REQUIRE(r == -ESRCH || r == -ENXIO,
		"copies while the owner is killed ended with %s after %d successes",
		cm_errname(-r), ok);
	REQUIRE(copied <= BIG, "copied %llu", (unsigned long long)copied);
	printf("owner killed after %u ms: %d complete %s copies, then %s\n",
	       delays[_i], ok, _i == 2 ? "1 MiB" : "64 MiB", cm_errname(-r));
	cm_wait_ok(killer, "killer");
	REQUIRE_OK(cm_wait_timeout(o.pid, 20000, &st));
	REQUIRE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
		"owner status %#x", st);
	/* and it stays dead */
	r = cm_copy(fd, o.cookie, 0, local, 4096, COOPMPI_COPY_FROM_REGION,
		    &copied);
	REQUIRE(r == -ESRCH || r == -ENXIO, "copy after the owner died: %s",
		cm_errname(-r));
	close(o.sock);
	close(fd);
	cm_unmap(local, BIG);
}
END_TEST

/* _i selects the kill delay; the copier alternates directions */
START_TEST(test_copier_killed_mid_copy)
{
	static const unsigned delays[] = { 30, 200, 600 };
	uint64_t key = cm_unique_key(), copied;
	struct coopmpi_join j;
	struct cm_owner o;
	uint8_t buf[4096];
	int fd = cm_open_join(key, COOPMPI_JOIN_CREATE, &j);
	int sv[2], st;
	pid_t copier;

	cm_owner_spawn(&o, key, NULL, BIG,
		       COOPMPI_REGION_READ | COOPMPI_REGION_WRITE, 8);
	cm_socketpair(sv);
	copier = cm_fork();
	if (copier == 0) {
		uint8_t *local = cm_map_anon(BIG);
		int cfd = cm_open_join(key, COOPMPI_JOIN_EXISTING, NULL);

		close(sv[0]);
		cm_fill_pattern(local, BIG, 8);	/* writes back the same data */
		cm_put_u64(sv[1], 1);
		for (int it = 0;; it++) {
			uint64_t c;
			int r = cm_copy(cfd, o.cookie, 0, local, BIG,
					(it & 1) ? COOPMPI_COPY_TO_REGION :
						   COOPMPI_COPY_FROM_REGION, &c);

			REQUIRE(r == 0, "copier: %s", cm_errname(-r));
		}
	}
	close(sv[1]);
	REQUIRE(cm_get_u64_from(sv[0], copier, "copier") == 1, "copier ready");
	cm_sleep_ms(delays[_i]);
	kill(copier, SIGKILL);
	REQUIRE(cm_wait_timeout(copier, 20000, &st) == 0,
		"SIGKILLed copier did not exit within 20 s (stuck in the driver?)");
	REQUIRE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
		"copier status %#x (it should have been killed mid-copy)", st);
	close(sv[0]);

	/* the region and the owner are unharmed */
	REQUIRE_OK(cm_copy(fd, o.cookie, BIG - sizeof(buf), buf, sizeof(buf),
			   COOPMPI_COPY_FROM_REGION, &copied));
	REQUIRE(cm_check_pattern(buf, sizeof(buf), 8, BIG - sizeof(buf)) < 0,
		"region content damaged");
	cm_owner_finish(&o);
	close(fd);
}
END_TEST

START_TEST(test_dereg_during_copy)
{
	uint64_t key = cm_unique_key(), copied, cookie;
	struct coopmpi_join j;
	uint8_t *local = cm_map_anon(BIG);
	int fd = cm_open_join(key, COOPMPI_JOIN_CREATE, &j);
	int sv[2], r = 0, ok = 0;
	pid_t pid;

	cm_socketpair(sv);
	pid = cm_fork();
	if (pid == 0) {
		uint8_t *mem = cm_map_anon(BIG);
		int ofd = cm_open_join(key, COOPMPI_JOIN_EXISTING, NULL);
		uint64_t c;

		close(sv[0]);
		cm_fill_pattern(mem, BIG, 9);
		REQUIRE_OK(cm_reg(ofd, mem, BIG,
				  COOPMPI_REGION_READ | COOPMPI_REGION_WRITE, &c));
		cm_put_u64(sv[1], c);
		cm_sleep_ms(300);
		REQUIRE_OK(cm_dereg(ofd, c));
		/* the memory is released right away */
		REQUIRE(munmap(mem, BIG) == 0, "munmap");
		cm_put_u64(sv[1], 2);
		(void)cm_get_u64(sv[1]);
		_exit(0);
	}
	close(sv[1]);
	cookie = cm_get_u64_from(sv[0], pid, "owner");
	for (int it = 0; it < 10000; it++) {
		r = cm_copy(fd, cookie, 0, local, BIG,
			    (it & 1) ? COOPMPI_COPY_TO_REGION :
				       COOPMPI_COPY_FROM_REGION, &copied);
		if (r)
			break;
		ok++;
	}
	/* an in-flight copy may also meet the owner's munmap: -EFAULT */
	REQUIRE(r == -ENXIO || r == -EFAULT,
		"copies racing with DEREGISTER ended with %s after %d successes, want ENXIO",
		cm_errname(-r), ok);
	REQUIRE(cm_get_u64_from(sv[0], pid, "owner") == 2, "owner");
	REQUIRE_ERR(cm_copy(fd, cookie, 0, local, 4096, COOPMPI_COPY_FROM_REGION,
			    &copied), ENXIO);
	cm_put_u64(sv[0], 3);
	cm_wait_ok(pid, "owner");
	close(sv[0]);
	close(fd);
	cm_unmap(local, BIG);
}
END_TEST

/*
 * The copier's three words after a COPY that met DEREGISTER: its error
 * (ENXIO), the bytes it copied (0) and whether its buffer holds what it
 * held before (1).
 */
static void expect_nothing_moved(int sock, pid_t pid, const char *dir,
				 const char *when)
{
	REQUIRE(cm_get_u64_from(sock, pid, "copier") == ENXIO,
		"a copy %s a region deregistered while %s: not ENXIO", dir,
		when);
	REQUIRE(cm_get_u64_from(sock, pid, "copier") == 0,
		"bytes copied %s a deregistered region", dir);
	REQUIRE(cm_get_u64_from(sock, pid, "copier") == 1,
		"the copier's buffer written from a deregistered region");
}

/*
 * A COPY waiting in a fault on the owner's page when the owner deregisters
 * the region and only then resolves the fault: the copy must not touch the
 * memory it no longer may (-ENXIO, nothing moved), whichever way it goes:
 * _i = 0 from the region, 1 into it.
 */
START_TEST(test_dereg_during_fault)
{
	static const char *const what[] = { "from", "into" };
	uint64_t key = cm_unique_key(), cookie;
	struct cm_uffd uf;
	int fd = cm_open_join(key, COOPMPI_JOIN_CREATE, NULL);
	int sv[2], st;
	pid_t pid;

	cm_uffd_create(&uf, 4096);
	REQUIRE_OK(cm_reg(fd, uf.area, 4096,
			  COOPMPI_REGION_READ | COOPMPI_REGION_WRITE, &cookie));
	cm_socketpair(sv);
	pid = cm_fork();
	if (pid == 0) {
		int cfd = cm_open_join(key, COOPMPI_JOIN_EXISTING, NULL);
		uint8_t buf[4096];
		uint64_t copied = 0;
		int r;

		close(sv[0]);
		memset(buf, 0xEE, sizeof(buf));
		cm_put_u64(sv[1], 1);
		r = cm_copy(cfd, cookie, 0, buf, sizeof(buf),
			    _i ? COOPMPI_COPY_TO_REGION :
				 COOPMPI_COPY_FROM_REGION, &copied);
		cm_put_u64(sv[1], (uint64_t)-r);
		cm_put_u64(sv[1], copied);
		cm_put_u64(sv[1], cm_check_byte(buf, sizeof(buf), 0xEE) < 0);
		_exit(0);
	}
	close(sv[1]);
	REQUIRE(cm_get_u64_from(sv[0], pid, "copier") == 1, "copier ready");
	cm_sleep_ms(200);
	REQUIRE(waitpid(pid, &st, WNOHANG) == 0,
		"a copy %s an unresolved userfaultfd page did not wait",
		what[_i]);
	REQUIRE_OK(cm_dereg(fd, cookie));
	cm_uffd_fill(&uf, 0, 4096, 5);
	expect_nothing_moved(sv[0], pid, what[_i], "it waited in a fault");
	REQUIRE(cm_check_pattern(uf.area, 4096, 5, 0) < 0,
		"a deregistered region written");
	cm_wait_ok(pid, "copier");
	close(sv[0]);
	cm_uffd_destroy(&uf);
	close(fd);
}
END_TEST

struct filler {
	struct cm_uffd *uf;
	int sock;
};

static void *fill_on_word(void *arg)
{
	struct filler *f = arg;

	(void)cm_get_u64(f->sock);
	cm_uffd_fill(f->uf, 0, f->uf->len, 5);
	return NULL;
}

/*
 * A COPY whose local buffer is a page waiting in a fault (userfaultfd)
 * when the owner deregisters the region, the fault resolved only after
 * DEREGISTER returned: nothing moves to or from the region (-ENXIO, 0
 * bytes; its memory unwritten, the local page not filled from it), both
 * directions: _i = 0 from the region, 1 into it.  A driver that pinned the
 * owner's pages first would hold them through the fault and move the
 * chunk after DEREGISTER returned.
 */
START_TEST(test_dereg_during_local_fault)
{
	static const char *const what[] = { "from", "into" };
	uint64_t key = cm_unique_key(), cookie;
	int fd = cm_open_join(key, COOPMPI_JOIN_CREATE, NULL);
	uint8_t *mem = cm_map_anon(4096);
	int sv[2];
	pid_t pid;

	memset(mem, 0xEE, 4096);
	REQUIRE_OK(cm_reg(fd, mem, 4096,
			  COOPMPI_REGION_READ | COOPMPI_REGION_WRITE, &cookie));
	cm_socketpair(sv);
	pid = cm_fork();
	if (pid == 0) {
		int cfd = cm_open_join(key, COOPMPI_JOIN_EXISTING, NULL);
		struct cm_uffd uf;
		struct filler f = { &uf, sv[1] };
		uint64_t copied = 0;
		pthread_t th;
		int r;

		close(sv[0]);
		cm_uffd_create(&uf, 4096);
		REQUIRE(pthread_create(&th, NULL, fill_on_word, &f) == 0,
			"pthread_create");
		cm_put_u64(sv[1], 1);
		r = cm_copy(cfd, cookie, 0, uf.area, 4096,
			    _i ? COOPMPI_COPY_TO_REGION :
				 COOPMPI_COPY_FROM_REGION, &copied);
		pthread_join(th, NULL);
		cm_put_u64(sv[1], (uint64_t)-r);
		cm_put_u64(sv[1], copied);
		cm_put_u64(sv[1], cm_check_pattern(uf.area, 4096, 5, 0) < 0);
		_exit(0);
	}
	close(sv[1]);
	REQUIRE(cm_get_u64_from(sv[0], pid, "copier") == 1, "copier ready");
	cm_sleep_ms(200);
	REQUIRE_OK(cm_dereg(fd, cookie));
	cm_put_u64(sv[0], 1);	/* now resolve the fault */
	expect_nothing_moved(sv[0], pid, what[_i], "its local page faulted");
	REQUIRE(cm_check_byte(mem, 4096, 0xEE) < 0,
		"a deregistered region written");
	cm_wait_ok(pid, "copier");
	close(sv[0]);
	cm_unmap(mem, 4096);
	close(fd);
}
END_TEST

struct teardown {
	int fd;
	uint8_t *local;
	bool unmap;		/* else close the fd */
};

static void *teardown_after_50ms(void *arg)
{
	struct teardown *t = arg;

	cm_sleep_ms(50);
	if (t->unmap)
		munmap(t->local, BIG);
	else
		close(t->fd);
	return NULL;
}

/*
 * Copies in a loop while another thread of the copier _i = 0 closes the
 * endpoint's fd, 1 unmaps the local buffer: the copy running then
 * finishes (the ioctl holds the file) or stops with -EFAULT, the loop ends
 * on -EBADF / -EFAULT, and nothing leaks (the harness checks kmemleak and
 * the unload).
 */
START_TEST(test_teardown_mid_copy)
{
	static const char *const what[] = { "fd closed", "buffer unmapped" };
	static const int want[] = { -EBADF, -EFAULT };
	uint64_t key = cm_unique_key(), copied;
	struct teardown t = { .unmap = _i == 1 };
	struct cm_owner o;
	uint8_t buf[4096];
	pthread_t th;
	int fd = cm_open_join(key, COOPMPI_JOIN_CREATE, NULL), r, n = 0;

	cm_owner_spawn(&o, key, NULL, BIG,
		       COOPMPI_REGION_READ | COOPMPI_REGION_WRITE, 8);
	t.fd = cm_open_join(key, COOPMPI_JOIN_EXISTING, NULL);
	t.local = cm_map_anon(BIG);
	cm_fill_pattern(t.local, BIG, 8);	/* writes back the same data */
	REQUIRE(pthread_create(&th, NULL, teardown_after_50ms, &t) == 0,
		"pthread_create");
	do
		r = cm_copy(t.fd, o.cookie, 0, t.local, BIG,
			    (n++ & 1) ? COOPMPI_COPY_TO_REGION :
					COOPMPI_COPY_FROM_REGION, &copied);
	while (r == 0);
	pthread_join(th, NULL);
	REQUIRE(r == want[_i], "%s: the copy loop ended with %s", what[_i],
		cm_errname(-r));
	printf("%s mid-copy: %d copies, then %s\n", what[_i], n - 1,
	       cm_errname(-r));

	REQUIRE_OK(cm_copy(fd, o.cookie, BIG - sizeof(buf), buf, sizeof(buf),
			   COOPMPI_COPY_FROM_REGION, &copied));
	REQUIRE(cm_check_pattern(buf, sizeof(buf), 8, BIG - sizeof(buf)) < 0,
		"region content damaged");
	if (t.unmap)
		close(t.fd);
	else
		cm_unmap(t.local, BIG);
	cm_owner_finish(&o);
	close(fd);
}
END_TEST

/*
 * Every wait in the driver ends on SIGKILL: _i = 0 a receive sleeping in
 * MBOX_WAIT, 1 a COPY from a region whose page sits in a userfaultfd area
 * nobody resolves (the copy waits in the fault).
 */
START_TEST(test_killed_while_waiting)
{
	static const char *const what[] = { "MBOX_WAIT",
					    "COPY waiting in a userfaultfd fault" };
	uint64_t key = cm_unique_key(), cookie = 0, t0;
	struct cm_uffd uf = { .fd = -1 };
	int fd = cm_open_join(key, COOPMPI_JOIN_CREATE, NULL);
	int sv[2], st;
	pid_t pid;

	if (_i == 1) {
		cm_uffd_create(&uf, 1 << 20);
		REQUIRE_OK(cm_reg(fd, uf.area, 1 << 20, COOPMPI_REGION_READ,
				  &cookie));
	}
	cm_socketpair(sv);
	pid = cm_fork();
	if (pid == 0) {
		int cfd = cm_open_join(key, COOPMPI_JOIN_EXISTING, NULL);
		struct cm_msg m;
		uint8_t buf[4096];
		uint32_t done;
		uint64_t c;

		close(sv[0]);
		cm_put_u64(sv[1], 1);
		if (_i == 0)
			cm_recv(cfd, &m, 1, COOPMPI_MBOX_WAIT, &done);
		else
			cm_copy(cfd, cookie, 0, buf, sizeof(buf),
				COOPMPI_COPY_FROM_REGION, &c);
		_exit(3);	/* the wait ended without the kill */
	}
	close(sv[1]);
	REQUIRE(cm_get_u64_from(sv[0], pid, "waiter") == 1, "waiter ready");
	cm_sleep_ms(200);
	REQUIRE(waitpid(pid, &st, WNOHANG) == 0, "%s: did not wait (status %#x)",
		what[_i], st);
	t0 = cm_now_ms();
	kill(pid, SIGKILL);
	REQUIRE(cm_wait_timeout(pid, 5000, &st) == 0,
		"%s: still there 5 s after SIGKILL", what[_i]);
	REQUIRE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
		"%s: status %#x (the wait ended by itself)", what[_i], st);
	printf("%s: gone %llu ms after SIGKILL\n", what[_i],
	       (unsigned long long)(cm_now_ms() - t0));
	close(sv[0]);
	if (_i == 1) {
		REQUIRE_OK(cm_dereg(fd, cookie));
		cm_uffd_destroy(&uf);
	}
	close(fd);
}
END_TEST

void add_kill_tests(Suite *s)
{
	TCase *tc = cm_tcase("kill", 120);

	tcase_add_loop_test(tc, test_owner_killed_during_copy, 0, 3);
	tcase_add_loop_test(tc, test_copier_killed_mid_copy, 0, 3);
	tcase_add_test(tc, test_dereg_during_copy);
	tcase_add_loop_test(tc, test_dereg_during_fault, 0, 2);
	tcase_add_loop_test(tc, test_dereg_during_local_fault, 0, 2);
	tcase_add_loop_test(tc, test_teardown_mid_copy, 0, 2);
	tcase_add_loop_test(tc, test_killed_while_waiting, 0, 2);
	suite_add_tcase(s, tc);
}
