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
 *   for the next job;
 * - registrations kept for the next message (hca_mrcache.c): the same
 *   buffers again use them (kmod provider: its windows watch the pages),
 *   buffers unmapped and mapped again at the same address or dropped
 *   with MADV_DONTNEED are registered anew and their new data arrives,
 *   into the receiver's new pages; COOP_HCA_MR_CACHE bounds what is
 *   kept; without the driver nothing is.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

/* ---------------- kept registrations ---------------- */

/* What one rank's engine registered (coop_stats_t) after each step. */
struct regs_seen {
	uint64_t made[8], kept[8];
	int steps;
};

static void regs_note(coop_context_t *ctx, struct regs_seen *s)
{
	coop_stats_t st;

	T_OK(coop_get_stats(ctx, &st));
	s->made[s->steps] = st.engine_regs;
	s->kept[s->steps++] = st.engine_regs_kept;
}

/*
 * A message buffer of LEN bytes in pages of its own: BUF_AT bytes into a
 * mapping of MAP_LEN at addr (NULL: anywhere).  Not page-aligned on
 * purpose: Debian 6.1's Soft-RoCE reads past its page list when a copy
 * ends exactly at the end of an MR of 256 pages (rxe_mr_copy steps to
 * the next map after the last buffer; KASAN reports it), which a
 * page-aligned 1 MiB buffer is.
 */
#define BUF_AT 64
#define MAP_LEN (LEN + 4096)

static char *fresh_pages(char *addr)
{
	void *p = mmap(addr ? addr - BUF_AT : NULL, MAP_LEN,
		       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
		       (addr ? MAP_FIXED_NOREPLACE : 0), -1, 0);

	T_ASSERT(p != MAP_FAILED && (!addr || (char *)p + BUF_AT == addr),
		 "mmap at %p: %s", (void *)addr, strerror(errno));
	return (char *)p + BUF_AT;
}

static void drop_pages(char *buf)
{
	T_ASSERT(!munmap(buf - BUF_AT, MAP_LEN), "munmap");
}

/* One message of LEN bytes, seed, from rank 0's buf into rank 1's,
 * by the engine; rank 1 checks what its buffer's pages show. */
static void engine_message(coop_context_t *ctx, int rank, char *buf,
			   uint32_t seed)
{
	coop_status_t st;

	if (rank == 0) {
		t_fill(buf, LEN, seed);
		T_OK(coop_send(ctx, buf, LEN, 1, (int)seed, COMM, 0));
		return;
	}
	memset(buf, 0, LEN);
	T_OK(coop_recv(ctx, buf, LEN, 0, (int)seed, COMM, 0, &st));
	T_ASSERT(st.protocol == COOP_PROTOCOL_DMA, "message %u: protocol %d",
		 seed, st.protocol);
	T_ASSERT(t_check(buf, LEN, seed) < 0, "message %u: byte %ld", seed,
		 t_check(buf, LEN, seed));
}

/*
 * The same buffers four times: as they are, again, after munmap and a
 * new mapping at the same address (what free and malloc may do), and
 * after MADV_DONTNEED (new zero pages where the old ones were).  Both
 * ranks' buffers change, so a kept registration of either would move
 * the old pages: the sender's old data, or the receiver's new pages
 * left empty.
 */
static int realloc_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	struct regs_seen *s = &((struct regs_seen *)arg)[rank];
	char *buf = fresh_pages(NULL);

	engine_message(ctx, rank, buf, 1);
	regs_note(ctx, s);
	engine_message(ctx, rank, buf, 2);
	regs_note(ctx, s);
	t_barrier(ctx, rank, size);
	drop_pages(buf);
	buf = fresh_pages(buf);
	engine_message(ctx, rank, buf, 3);
	regs_note(ctx, s);
	t_barrier(ctx, rank, size);
	T_ASSERT(!madvise(buf - BUF_AT, MAP_LEN, MADV_DONTNEED), "madvise");
	engine_message(ctx, rank, buf, 4);
	regs_note(ctx, s);
	drop_pages(buf);
	return 0;
}

START_TEST(test_hca_kept_regs_realloc)
{
	static const char *const env[] = { "COOP_RNDV=dma", NULL };
	struct regs_seen *s;
	int r, kmod = t_kmod_provider();

	if (!t_engine_hca()) {
		fprintf(stderr, "hca kept registrations: COOP_ENGINE is not "
			"hca: skipped\n");
		return;
	}
	s = shared_alloc(2 * sizeof(*s));
	ck_assert_int_eq(run_ranks(2, env, realloc_rank, s, 120, NULL), 0);
	for (r = 0; r < 2; r++) {
		fprintf(stderr, "hca kept registrations, rank %d: made %lu "
			"%lu %lu %lu, kept %lu %lu %lu %lu\n", r, s[r].made[0],
			s[r].made[1], s[r].made[2], s[r].made[3], s[r].kept[0],
			s[r].kept[1], s[r].kept[2], s[r].kept[3]);
		ck_assert_msg(s[r].made[0] >= 1, "rank %d registered nothing",
			      r);
		if (!kmod) {	/* nothing watches the pages: none kept */
			ck_assert_msg(!s[r].kept[3], "rank %d kept some", r);
			continue;
		}
		/* the same pages: kept; new ones: registered anew */
		ck_assert_msg(s[r].kept[1] > s[r].kept[0] &&
			      s[r].made[1] == s[r].made[0],
			      "rank %d: the second message registered again", r);
		ck_assert_msg(s[r].made[2] > s[r].made[1],
			      "rank %d: munmap + mmap: an MR kept", r);
		ck_assert_msg(s[r].made[3] > s[r].made[2],
			      "rank %d: MADV_DONTNEED: an MR kept", r);
	}
	shared_free(s, 2 * sizeof(*s));
}
END_TEST

/* Rank 0 sends from two buffers in turn, four times; rank 1 receives
 * into one. */
static int turns_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	struct regs_seen *s = &((struct regs_seen *)arg)[rank];
	char *a = fresh_pages(NULL), *b = fresh_pages(NULL);
	uint32_t i;

	(void)size;
	for (i = 1; i <= 4; i++) {
		engine_message(ctx, rank, rank == 0 && !(i & 1) ? b : a, i);
		if (i == 1 || i == 4)
			regs_note(ctx, s);
	}
	drop_pages(a);
	drop_pages(b);
	return 0;
}

#define REGS_DELTA(s, f) ((s).f[1] - (s).f[0])

/* COOP_HCA_MR_CACHE bounds what is kept: with 1 the sender's two
 * buffers cannot both stay (nor can one stay beside the DMA protocol's
 * own notification area, registered for good); with 8 both do, and so
 * does the receiver's one. */
START_TEST(test_hca_kept_regs_bound)
{
	static const char *const one[] = { "COOP_RNDV=dma",
					   "COOP_HCA_MR_CACHE=1", NULL };
	static const char *const eight[] = { "COOP_RNDV=dma",
					     "COOP_HCA_MR_CACHE=8", NULL };
	struct regs_seen *s;

	if (!t_engine_hca() || !t_kmod_provider()) {
		fprintf(stderr, "hca kept registrations' bound: needs "
			"COOP_ENGINE=hca on the kmod provider: skipped\n");
		return;
	}
	s = shared_alloc(2 * sizeof(*s));
	ck_assert_int_eq(run_ranks(2, one, turns_rank, s, 120, NULL), 0);
	fprintf(stderr, "hca kept registrations, bound 1, messages 2-4: "
		"sender made %lu, kept %lu\n", REGS_DELTA(s[0], made),
		REGS_DELTA(s[0], kept));
	ck_assert_msg(!REGS_DELTA(s[0], kept) && REGS_DELTA(s[0], made) == 3,
		      "bound 1: the sender used a kept registration");
	memset(s, 0, 2 * sizeof(*s));
	ck_assert_int_eq(run_ranks(2, eight, turns_rank, s, 120, NULL), 0);
	fprintf(stderr, "hca kept registrations, bound 8, messages 2-4: "
		"sender made %lu, kept %lu; receiver made %lu, kept %lu\n",
		REGS_DELTA(s[0], made), REGS_DELTA(s[0], kept),
		REGS_DELTA(s[1], made), REGS_DELTA(s[1], kept));
	ck_assert_msg(REGS_DELTA(s[0], kept) == 2 &&
		      REGS_DELTA(s[0], made) == 1,
		      "bound 8: the sender's buffers were not kept");
	ck_assert_msg(REGS_DELTA(s[1], kept) == 3 && !REGS_DELTA(s[1], made),
		      "bound 8: the receiver's buffer was not kept");
	shared_free(s, 2 * sizeof(*s));
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
	tcase_add_test(tc, test_hca_kept_regs_realloc);
	tcase_add_test(tc, test_hca_kept_regs_bound);
	return tc;
}
