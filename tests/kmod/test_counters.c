// SPDX-License-Identifier: GPL-2.0
/*
 * test_counters.c - the per-domain counters page (COOPMPI_MMAP_COUNTERS):
 * shared between the processes of a domain, one slot per endpoint with its
 * pid, zeroed on join and close, kernel totals move with copies.
 */
#include "helpers.h"

#include <stdio.h>
#include <unistd.h>

static void check_hdr(struct cm_counters *c, const struct coopmpi_join *j)
{
	REQUIRE(c->hdr->magic == COOPMPI_COUNTERS_MAGIC, "magic %#x",
		c->hdr->magic);
	REQUIRE(c->hdr->version == COOPMPI_ABI_VERSION, "version %u",
		c->hdr->version);
	REQUIRE(c->hdr->max_endpoints == cm_info_cache.max_endpoints,
		"max_endpoints %u", c->hdr->max_endpoints);
	REQUIRE(c->hdr->domain_id == j->domain_id, "domain_id %u, joined %u",
		c->hdr->domain_id, j->domain_id);
}

START_TEST(test_counters_shared)
{
	uint64_t key = cm_unique_key(), deadline;
	struct coopmpi_join jp;
	struct cm_counters c;
	struct coopmpi_load_slot *cs;
	uint64_t dma0;
	uint32_t child_ep, child_gen;
	int fd, sv[2];
	pid_t pid, me = getpid();

	fd = cm_open_join(key, COOPMPI_JOIN_CREATE, &jp);
	REQUIRE_OK(cm_counters_map(fd, &c));
	check_hdr(&c, &jp);
	REQUIRE(c.slot[jp.ep_id].pid == (uint32_t)me &&
		c.slot[jp.ep_id].generation == jp.generation,
		"own slot: pid %u (want %d) generation %u (want %u)",
		c.slot[jp.ep_id].pid, (int)me, c.slot[jp.ep_id].generation,
		jp.generation);
	dma0 = __atomic_load_n(&c.offload->dma_ops, __ATOMIC_RELAXED);

	cm_socketpair(sv);
	pid = cm_fork();
	if (pid == 0) {
		struct coopmpi_join jc;
		struct cm_counters cc;
		int cfd;

		close(sv[0]);
		cfd = cm_open_join(key, COOPMPI_JOIN_EXISTING, &jc);
		REQUIRE_OK(cm_counters_map(cfd, &cc));
		check_hdr(&cc, &jc);
		REQUIRE(cc.slot[jc.ep_id].pid == (uint32_t)getpid(),
			"child slot pid %u", cc.slot[jc.ep_id].pid);
		REQUIRE(cc.slot[jp.ep_id].pid == (uint32_t)me,
			"child sees parent slot pid %u", cc.slot[jp.ep_id].pid);
		__atomic_fetch_add(&cc.slot[jc.ep_id].pending_bytes, 12345,
				   __ATOMIC_SEQ_CST);
		__atomic_fetch_add(&cc.slot[jc.ep_id].pending_ops, 3,
				   __ATOMIC_SEQ_CST);
		__atomic_fetch_add(&cc.offload->dma_ops, 1, __ATOMIC_SEQ_CST);
		cm_put_u64(sv[1], jc.ep_id);
		cm_put_u64(sv[1], jc.generation);
		(void)cm_get_u64(sv[1]);
		REQUIRE(__atomic_load_n(&cc.slot[jp.ep_id].pending_ops,
					__ATOMIC_SEQ_CST) == 777,
			"parent's add not visible in the child: %llu",
			(unsigned long long)cc.slot[jp.ep_id].pending_ops);
		cm_put_u64(sv[1], 1);
		(void)cm_get_u64(sv[1]);
		cm_counters_unmap(&cc);
		close(cfd);
		_exit(0);
	}
	close(sv[1]);
	child_ep = (uint32_t)cm_get_u64_from(sv[0], pid, "child");
	child_gen = (uint32_t)cm_get_u64_from(sv[0], pid, "child");
	cs = &c.slot[child_ep];
	REQUIRE(cs->pid == (uint32_t)pid && cs->generation == child_gen,
		"child slot seen by parent: pid %u (want %d) gen %u (want %u)",
		cs->pid, (int)pid, cs->generation, child_gen);
	REQUIRE(__atomic_load_n(&cs->pending_bytes, __ATOMIC_SEQ_CST) == 12345 &&
		__atomic_load_n(&cs->pending_ops, __ATOMIC_SEQ_CST) == 3,
		"child's adds not visible: pending_bytes %llu pending_ops %llu",
		(unsigned long long)cs->pending_bytes,
		(unsigned long long)cs->pending_ops);
	REQUIRE(__atomic_load_n(&c.offload->dma_ops, __ATOMIC_SEQ_CST) == dma0 + 1,
		"offload dma_ops %llu, want %llu",
		(unsigned long long)c.offload->dma_ops,
		(unsigned long long)dma0 + 1);
	__atomic_fetch_add(&c.slot[jp.ep_id].pending_ops, 777, __ATOMIC_SEQ_CST);
	cm_put_u64(sv[0], 1);
	REQUIRE(cm_get_u64_from(sv[0], pid, "child") == 1, "child check");
	cm_put_u64(sv[0], 2);
	cm_wait_ok(pid, "child");
	close(sv[0]);

	/* the closed endpoint's slot is zeroed */
	deadline = cm_now_ms() + 2000;
	while (__atomic_load_n(&cs->pid, __ATOMIC_SEQ_CST) != 0 &&
	       cm_now_ms() < deadline)
		cm_sleep_ms(10);
	REQUIRE(cs->pid == 0 && cs->pending_bytes == 0 && cs->pending_ops == 0,
		"slot of the closed ep %u: pid %u pending_bytes %llu pending_ops %llu",
		child_ep, cs->pid, (unsigned long long)cs->pending_bytes,
		(unsigned long long)cs->pending_ops);
	/* ours is untouched */
	REQUIRE(c.slot[jp.ep_id].pending_ops == 777 &&
		c.slot[jp.ep_id].pid == (uint32_t)me, "own slot changed");
	cm_counters_unmap(&c);
	close(fd);
}
END_TEST

START_TEST(test_counters_zeroed_on_join)
{
	uint64_t key = cm_unique_key();
	struct coopmpi_join jp, j2;
	struct cm_counters c;
	int fd = cm_open_join(key, COOPMPI_JOIN_CREATE, &jp), fd2;
	struct coopmpi_load_slot *s;

	REQUIRE_OK(cm_counters_map(fd, &c));
	/* dirty every free slot */
	for (uint32_t i = 0; i < c.hdr->max_endpoints; i++) {
		if (i == jp.ep_id)
			continue;
		c.slot[i].pending_ops = 0x1111;
		c.slot[i].pending_bytes = 0x2222;
		c.slot[i].kernel_ops = 0x3333;
		c.slot[i].total_ops = 0x4444;
		c.slot[i].total_bytes = 0x5555;
	}
	fd2 = cm_open_join(key, COOPMPI_JOIN_EXISTING, &j2);
	s = &c.slot[j2.ep_id];
	REQUIRE(s->pending_ops == 0 && s->pending_bytes == 0 &&
		s->kernel_ops == 0 && s->kernel_bytes == 0 &&
		s->total_ops == 0 && s->total_bytes == 0,
		"slot %u not zeroed on join: %llx %llx %llx %llx %llx", j2.ep_id,
		(unsigned long long)s->pending_ops,
		(unsigned long long)s->pending_bytes,
		(unsigned long long)s->kernel_ops,
		(unsigned long long)s->total_ops,
		(unsigned long long)s->total_bytes);
	REQUIRE(s->pid == (uint32_t)getpid() && s->generation == j2.generation,
		"joined slot pid %u gen %u", s->pid, s->generation);
	cm_counters_unmap(&c);
	close(fd2);
	close(fd);
}
END_TEST

START_TEST(test_counters_copy_totals)
{
	uint64_t key = cm_unique_key(), copied, ops0, bytes0;
	struct coopmpi_join jp;
	struct cm_counters c;
	struct cm_owner o;
	struct coopmpi_load_slot *s;
	uint8_t *buf = cm_map_anon(1 << 20);
	int fd = cm_open_join(key, COOPMPI_JOIN_CREATE, &jp);

	REQUIRE_OK(cm_counters_map(fd, &c));
	cm_owner_spawn(&o, key, NULL, 1 << 20, COOPMPI_REGION_READ, 4);
	s = &c.slot[jp.ep_id];
	ops0 = __atomic_load_n(&s->total_ops, __ATOMIC_SEQ_CST);
	bytes0 = __atomic_load_n(&s->total_bytes, __ATOMIC_SEQ_CST);
	REQUIRE_OK(cm_copy(fd, o.cookie, 0, buf, 100000,
			   COOPMPI_COPY_FROM_REGION, &copied));
	REQUIRE(copied == 100000 && cm_check_pattern(buf, 100000, 4, 0) < 0,
		"copy");
	REQUIRE(s->total_ops >= ops0 + 1, "total_ops %llu after a copy, was %llu",
		(unsigned long long)s->total_ops, (unsigned long long)ops0);
	REQUIRE(s->total_bytes >= bytes0 + 100000,
		"total_bytes %llu after 100000 bytes, was %llu",
		(unsigned long long)s->total_bytes, (unsigned long long)bytes0);
	for (int i = 0; i < 3; i++)
		REQUIRE_OK(cm_copy(fd, o.cookie, 4096, buf, 4096,
				   COOPMPI_COPY_FROM_REGION, &copied));
	REQUIRE(s->total_ops >= ops0 + 4, "total_ops %llu after 4 copies, was %llu",
		(unsigned long long)s->total_ops, (unsigned long long)ops0);
	/* nothing in flight any more */
	REQUIRE(s->kernel_ops == 0 && s->kernel_bytes == 0,
		"kernel_ops %llu kernel_bytes %llu with no copy running",
		(unsigned long long)s->kernel_ops,
		(unsigned long long)s->kernel_bytes);
	cm_owner_finish(&o);
	cm_counters_unmap(&c);
	close(fd);
	cm_unmap(buf, 1 << 20);
}
END_TEST

START_TEST(test_counters_isolated)
{
	struct coopmpi_join ja, jb;
	struct cm_counters ca, cb;
	int a = cm_open_join(cm_unique_key(), COOPMPI_JOIN_CREATE, &ja);
	int b = cm_open_join(cm_unique_key(), COOPMPI_JOIN_CREATE, &jb);

	REQUIRE_OK(cm_counters_map(a, &ca));
	REQUIRE_OK(cm_counters_map(b, &cb));
	REQUIRE(ca.hdr->domain_id == ja.domain_id &&
		cb.hdr->domain_id == jb.domain_id && ja.domain_id != jb.domain_id,
		"domain ids %u/%u vs %u/%u", ca.hdr->domain_id, ja.domain_id,
		cb.hdr->domain_id, jb.domain_id);
	__atomic_fetch_add(&ca.slot[jb.ep_id].pending_ops, 5, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&ca.offload->hca_ops, 9, __ATOMIC_SEQ_CST);
	REQUIRE(cb.slot[jb.ep_id].pending_ops == 0 && cb.offload->hca_ops == 0,
		"domain A's counters leak into domain B");
	cm_counters_unmap(&ca);
	cm_counters_unmap(&cb);
	close(a);
	close(b);
}
END_TEST

void add_counters_tests(Suite *s)
{
	TCase *tc = cm_tcase("counters", 60);

	tcase_add_test(tc, test_counters_shared);
	tcase_add_test(tc, test_counters_zeroed_on_join);
	tcase_add_test(tc, test_counters_copy_totals);
	tcase_add_test(tc, test_counters_isolated);
	suite_add_tcase(s, tc);
}
