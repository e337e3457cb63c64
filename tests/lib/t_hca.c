/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_hca.c - the HCA-loopback engine (COOP_ENGINE=hca) beyond what the
 * engine-neutral cases (dma, fault, select, xfer) run on it
 * (scripts/vm-hca-tests.sh runs them with COOP_ENGINE=hca over
 * Soft-RoCE, with either provider):
 *
 * - set-up refused with COOP_ERR_PROVIDER and nothing left behind: a
 *   device that is not there (and, without any RDMA device, the engine
 *   at all), a GID index the port does not have, dynamic endpoints;
 * - the offload counters: hca_ops/hca_bytes show the puts in flight
 *   (coop_get_offload_load, and the driver's sysfs domain file with kmod)
 *   and are back to 0 when they completed; dma_* stay 0;
 * - the published table (hca_table.c, no device needed): keys added,
 *   found by cookie and range, removed, their slots reused; a peer's
 *   table mapped read-only through /proc/<pid>/fd; lookups in a table
 *   its owner scribbled end (every entry LIVE with other cookies, a
 *   sequence count left odd) with -ENOENT / -EAGAIN;
 * - pinned memory refused (RLIMIT_MEMLOCK of 2 MiB, CAP_IPC_LOCK
 *   dropped): a 4 MiB receive fails with COOP_ERR_NOMEM, its sender with
 *   an error instead of waiting for good, and a 1 MiB message goes
 *   through afterwards;
 * - keys the engine must refuse: a cookie the peer never registered, a
 *   region the peer deregistered (the CPU path of the shm provider would
 *   still write there: the HCA checks its own keys): the job fails with
 *   COOP_ERR_COPY, no byte of the peer changes, and the pair still works
 *   for the next job.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>

#include "coopmpi_xfer.h"
#include "harness.h"
#include "hca_table.h"
#include "tests.h"

#define COMM 51
#define LEN ((size_t)1 << 20)
#define BIG ((size_t)4 << 20)
#define NBIG 4
#define COOP_MAX_U64(a, b) ((a) > (b) ? (a) : (b))

/* Is there an RDMA device at all (sysfs)? */
static int rdma_device_present(void)
{
	DIR *d = opendir("/sys/class/infiniband");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n > 0;
}

static int init_one(unsigned flags)
{
	coop_init_params_t p = { .size = sizeof(p), .flags = flags,
				 .job_key = t_extra_key() };
	coop_context_t *ctx = NULL;
	int rc;

	if (!(flags & COOP_INIT_DYNAMIC))
		p.nranks = 1;
	rc = coop_init(&p, &ctx);
	if (!rc)
		T_OK(coop_finalize(ctx));
	return rc;
}

START_TEST(test_hca_setup_refused)
{
	setenv("COOP_ENGINE", "hca", 1);
	setenv("COOP_HCA_DEVICE", "no-such-device", 1);
	ck_assert_int_eq(init_one(0), COOP_ERR_PROVIDER);
	unsetenv("COOP_HCA_DEVICE");
	if (!rdma_device_present()) {
		ck_assert_int_eq(init_one(0), COOP_ERR_PROVIDER);
		fprintf(stderr, "hca set-up: no RDMA device: refused\n");
		return;
	}
	setenv("COOP_HCA_GID", "1023", 1);
	ck_assert_int_eq(init_one(0), COOP_ERR_PROVIDER);
	unsetenv("COOP_HCA_GID");
	ck_assert_int_eq(init_one(COOP_INIT_DYNAMIC), COOP_ERR_PROVIDER);
	ck_assert_int_eq(init_one(0), COOP_SUCCESS);	/* nothing stuck */
	unsetenv("COOP_ENGINE");
	ck_assert_int_eq(init_one(COOP_INIT_DYNAMIC), COOP_SUCCESS);
}
END_TEST

/* ---------------- the published table ---------------- */

START_TEST(test_hca_table)
{
	struct hca_table own, peer;
	struct hca_table_hdr h = { .port = 1, .mtu = 3, .is_global = 1 };
	uint64_t addr;
	uint32_t rkey;
	int a, b, i;

	ck_assert_int_eq(hca_table_create(&own, 4, 2), 0);
	own.qp[1].qpn = 77;
	hca_table_publish(&own, &h);
	/* a peer maps it; wrong expectations are refused */
	ck_assert_int_eq(hca_table_map(&peer, getpid(), own.fd, 4, 3),
			 -EPROTO);
	ck_assert_int_eq(hca_table_map(&peer, getpid(), own.fd, 5, 2),
			 -EPROTO);
	ck_assert_int_eq(hca_table_map(&peer, getpid(), 987654, 4, 2),
			 -ESRCH);
	ck_assert_int_eq(hca_table_map(&peer, getpid(), own.fd, 4, 2), 0);
	ck_assert_int_eq(peer.qp[1].qpn, 77);
	a = hca_table_add(&own, 0x1000, 0xa000, 100, 5);
	b = hca_table_add(&own, 0x1000 + ((uint64_t)1 << 40), 0xb000, 50, 6);
	ck_assert_int_ge(a, 0);
	ck_assert_int_ge(b, 0);
	ck_assert_int_eq(hca_table_lookup(&peer, 0x1000, 10, 90, &addr,
					  &rkey), 0);
	ck_assert(addr == 0xa00a && rkey == 5);
	ck_assert_int_eq(hca_table_lookup(&peer, 0x1000, 10, 91, &addr,
					  &rkey), -ENOENT);	/* too long */
	ck_assert_int_eq(hca_table_lookup(&peer, 0x1001, 0, 1, &addr,
					  &rkey), -ENOENT);
	hca_table_remove(&own, a);
	ck_assert_int_eq(hca_table_lookup(&peer, 0x1000, 0, 1, &addr,
					  &rkey), -ENOENT);
	ck_assert_int_eq(hca_table_lookup(&peer, 0x1000 + ((uint64_t)1 << 40),
					  0, 50, &addr, &rkey), 0);
	ck_assert(addr == 0xb000 && rkey == 6);
	/* all slots taken: the next key is refused, a freed slot reused */
	for (i = 2; i < HCA_KEYS + 1; i++)
		ck_assert_int_ge(hca_table_add(&own, (uint64_t)i << 12, 0, 1,
					       1), 0);
	ck_assert_int_eq(hca_table_add(&own, 0x999000, 0, 1, 1), -ENOSPC);
	hca_table_remove(&own, b);
	ck_assert_int_eq(hca_table_add(&own, 0x999000, 0, 1, 1), b);
	/* scribbled by its owner: lookups still end */
	ck_assert_int_eq(hca_table_lookup(&peer, 0x42, 0, 1, &addr, &rkey),
			 -ENOENT);
	for (i = 0; i < HCA_KEYS; i++)
		own.keys[i].seq |= 1;
	ck_assert_int_eq(hca_table_lookup(&peer, 0x42, 0, 1, &addr, &rkey),
			 -EAGAIN);
	hca_table_unmap(&peer);
	hca_table_unmap(&own);
}
END_TEST

/* ---------------- the counters ---------------- */

struct seen {
	uint64_t hca_ops, hca_bytes, dma_ops;	/* highest seen */
	uint64_t sysfs_hca_ops;			/* kmod: highest in sysfs */
	coop_offload_load_t after;
};

struct seen2 {
	struct seen by[2];	/* what each rank saw */
};

/* hca_ops in the driver's file of the domains (kmod), 0 without. */
static uint64_t sysfs_hca_ops(void)
{
	uint64_t v, best = 0;
	char line[64];
	glob_t g;
	size_t i;

	if (glob("/sys/kernel/coopmpi/domains/*/offload", 0, NULL, &g))
		return 0;
	for (i = 0; i < g.gl_pathc; i++) {
		FILE *f = fopen(g.gl_pathv[i], "r");

		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "hca_ops %lu", &v) == 1 && v > best)
				best = v;
		if (f)
			fclose(f);
	}
	globfree(&g);
	return best;
}

static void sample(coop_context_t *ctx, struct seen *s)
{
	coop_offload_load_t o;

	T_OK(coop_get_offload_load(ctx, &o));
	s->hca_ops = o.hca_ops > s->hca_ops ? o.hca_ops : s->hca_ops;
	s->hca_bytes = o.hca_bytes > s->hca_bytes ? o.hca_bytes : s->hca_bytes;
	s->dma_ops = o.dma_ops > s->dma_ops ? o.dma_ops : s->dma_ops;
	o.hca_ops = sysfs_hca_ops();
	if (o.hca_ops > s->sysfs_hca_ops)
		s->sysfs_hca_ops = o.hca_ops;
}

/* Both ranks sample while the copies run: a software device may do a
 * copy within the sender's post, so that only the other rank sees it. */
static int counters_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	struct seen *s = &((struct seen2 *)arg)->by[rank];
	char *buf = malloc(NBIG * BIG);
	coop_request_t *r[NBIG];
	coop_status_t st[NBIG];
	int i, done = 0;

	for (i = 0; rank == 1 && i < NBIG; i++)
		T_OK(coop_irecv(ctx, buf + i * BIG, BIG, 0, i, COMM, 0, &r[i]));
	t_barrier(ctx, rank, size);
	for (i = 0; rank == 0 && i < NBIG; i++) {
		t_fill(buf + i * BIG, BIG, (uint32_t)i);
		T_OK(coop_isend(ctx, buf + i * BIG, BIG, 1, i, COMM, 0, &r[i]));
	}
	while (!done) {
		T_OK(coop_testall(NBIG, r, &done, st));
		sample(ctx, s);
	}
	for (i = 0; i < NBIG; i++)
		T_ASSERT(st[i].protocol == COOP_PROTOCOL_DMA, "message %d: "
			 "protocol %d", i, st[i].protocol);
	for (i = 0; rank == 1 && i < NBIG; i++)
		T_ASSERT(t_check(buf + i * BIG, BIG, (uint32_t)i) < 0,
			 "message %d", i);
	t_barrier(ctx, rank, size);
	if (rank == 0)
		T_OK(coop_get_offload_load(ctx, &s->after));
	free(buf);
	return 0;
}

START_TEST(test_hca_counters)
{
	static const char *const env[] = { "COOP_RNDV=dma", NULL };
	struct seen2 *both;
	struct seen *s;

	if (!t_engine_hca()) {
		fprintf(stderr, "hca counters: COOP_ENGINE is not hca: "
			"skipped\n");
		return;
	}
	both = shared_alloc(sizeof(*both));
	ck_assert_int_eq(run_ranks(2, env, counters_rank, both, 120, NULL),
			 0);
	s = &both->by[0];
	s->hca_ops = COOP_MAX_U64(s->hca_ops, both->by[1].hca_ops);
	s->hca_bytes = COOP_MAX_U64(s->hca_bytes, both->by[1].hca_bytes);
	s->dma_ops = COOP_MAX_U64(s->dma_ops, both->by[1].dma_ops);
	s->sysfs_hca_ops = COOP_MAX_U64(s->sysfs_hca_ops,
					both->by[1].sysfs_hca_ops);
	fprintf(stderr, "hca counters: up to %lu ops, %lu bytes in flight "
		"(sysfs %lu); after: %lu, %lu\n", s->hca_ops, s->hca_bytes,
		s->sysfs_hca_ops, s->after.hca_ops, s->after.hca_bytes);
	ck_assert_msg(s->hca_ops >= 1 && s->hca_bytes >= BIG,
		      "in flight: %lu ops, %lu bytes", s->hca_ops,
		      s->hca_bytes);
	ck_assert_msg(!s->after.hca_ops && !s->after.hca_bytes,
		      "after: %lu ops, %lu bytes", s->after.hca_ops,
		      s->after.hca_bytes);
	ck_assert_msg(!s->dma_ops && !s->after.dma_bytes, "DMA counted");
	if (t_kmod_provider())
		ck_assert_msg(s->sysfs_hca_ops >= 1, "sysfs hca_ops");
	shared_free(both, sizeof(*both));
}
END_TEST

/* ---------------- keys the engine refuses ---------------- */

/* rank 0's PUT of LEN bytes by the engine into key at 0: its error. */
static int engine_put(coop_context_t *ctx, const void *src,
		      const coop_rkey_t *key)
{
	coop_xfer_params_t p = {
		.size = sizeof(p), .flags = COOP_XFER_PUT | COOP_XFER_ENGINE,
		.peer = 1, .slot = COOP_XFER_NO_SLOT, .local = (void *)src,
		.len = LEN, .key = *key,
	};
	coop_request_t *r;
	coop_status_t st;
	int rc;

	T_OK(coop_xfer_start(ctx, &p, &r));
	rc = coop_wait(&r, &st);
	T_ASSERT(rc == st.error, "wait: %s, status %s", coop_strerror(rc),
		 coop_strerror(st.error));
	return rc;
}

static void key_send(coop_context_t *ctx, int to, const coop_rkey_t *k)
{
	T_OK(coop_send(ctx, k, sizeof(*k), to, 1, COMM, 0));
}

static void key_recv(coop_context_t *ctx, int from, coop_rkey_t *k)
{
	T_OK(coop_recv(ctx, k, sizeof(*k), from, 1, COMM, 0, NULL));
}

static int keys_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	char *a = malloc(LEN), *b = malloc(LEN);
	coop_rkey_t ka, kb, forged;

	(void)size;
	(void)arg;
	memset(a, 0x11, LEN);
	memset(b, 0x22, LEN);
	if (rank == 1) {
		T_OK(coop_mem_reg(ctx, a, LEN, COOP_ACCESS_WRITE, &ka));
		T_OK(coop_mem_reg(ctx, b, LEN, COOP_ACCESS_WRITE, &kb));
		T_OK(coop_mem_dereg(ctx, &kb));	/* b: a stale key */
		key_send(ctx, 0, &ka);
		key_send(ctx, 0, &kb);
		key_recv(ctx, 0, &ka);		/* done */
		T_OK(coop_mem_dereg(ctx, &ka));
		T_ASSERT(t_check(a, LEN, 9) < 0, "the good put's data");
		T_ASSERT(b[0] == 0x22 && !memcmp(b, b + 1, LEN - 1),
			 "the deregistered region was written");
	} else {
		key_recv(ctx, 1, &ka);
		key_recv(ctx, 1, &kb);
		forged = ka;
		forged.cookie ^= 0x5a5a000;	/* never registered */
		t_fill(a, LEN, 9);
		T_ASSERT(engine_put(ctx, a, &forged) == COOP_ERR_COPY,
			 "forged key");
		T_ASSERT(engine_put(ctx, a, &kb) == COOP_ERR_COPY,
			 "deregistered key");
		T_ASSERT(engine_put(ctx, a, &ka) == COOP_SUCCESS, "good key");
		key_send(ctx, 1, &ka);
	}
	free(a);
	free(b);
	return 0;
}

START_TEST(test_hca_bad_keys)
{
	if (!t_engine_hca()) {
		fprintf(stderr, "hca keys: COOP_ENGINE is not hca: skipped\n");
		return;
	}
	ck_assert_int_eq(run_ranks(2, NULL, keys_rank, NULL, 60, NULL), 0);
}
END_TEST

/* ---------------- pinned memory refused ---------------- */

/* This process and its children without CAP_IPC_LOCK, pinning at most
 * bytes: 0 or -1. */
static int limit_pinning(rlim_t bytes)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	struct rlimit rl = { bytes, bytes };
	unsigned bit = 1u << (CAP_IPC_LOCK % 32);

	if (syscall(SYS_capget, &h, d))
		return -1;
	d[CAP_IPC_LOCK / 32].effective &= ~bit;
	d[CAP_IPC_LOCK / 32].permitted &= ~bit;
	d[CAP_IPC_LOCK / 32].inheritable &= ~bit;
	if (syscall(SYS_capset, &h, d))
		return -1;
	return setrlimit(RLIMIT_MEMLOCK, &rl);
}

static int memlock_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	size_t big = (size_t)4 << 20, small = (size_t)1 << 20;
	char *buf = malloc(big);
	int rc;

	(void)arg;
	t_fill(buf, big, 3);
	if (rank == 0) {
		rc = coop_send(ctx, buf, big, 1, 1, COMM, 0);
		T_ASSERT(rc != COOP_SUCCESS, "4 MiB send: no error");
		fprintf(stderr, "hca memlock: the sender got %s\n",
			coop_strerror(rc));
	} else {
		rc = coop_recv(ctx, buf, big, 0, 1, COMM, 0, NULL);
		T_ASSERT(rc == COOP_ERR_NOMEM, "4 MiB receive: %s",
			 coop_strerror(rc));
	}
	t_barrier(ctx, rank, size);
	if (rank == 0)
		T_OK(coop_send(ctx, buf, small, 1, 2, COMM, 0));
	else {
		memset(buf, 0, small);
		T_OK(coop_recv(ctx, buf, small, 0, 2, COMM, 0, NULL));
		T_ASSERT(t_check(buf, small, 3) < 0, "1 MiB data");
	}
	free(buf);
	return 0;
}

START_TEST(test_hca_memlock)
{
	static const char *const env[] = { "COOP_RNDV=dma", NULL };

	if (!t_engine_hca()) {
		fprintf(stderr, "hca memlock: COOP_ENGINE is not hca: "
			"skipped\n");
		return;
	}
	ck_assert_int_eq(limit_pinning((rlim_t)2 << 20), 0);
	ck_assert_int_eq(run_ranks(2, env, memlock_rank, NULL, 60, NULL), 0);
}
END_TEST

TCase *tc_hca(void)
{
	TCase *tc = tcase_create("hca");

	/* Check's default is 4 s (x3 in the VM): the counters case copies
	 * 16 MiB through Soft-RoCE, which once took longer than that in
	 * the debug kernel's VM */
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_hca_table);
	tcase_add_test(tc, test_hca_setup_refused);
	tcase_add_test(tc, test_hca_counters);
	tcase_add_test(tc, test_hca_bad_keys);
	tcase_add_test(tc, test_hca_memlock);
	return tc;
}
