/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bootstrap.c - coop_init_from_env(): standalone start-up on one node.
 *
 * scripts/cooprun sets COOP_RANK, COOP_SIZE and COOP_JOB (16 hex digits,
 * unique per launch; it is also the job key), the boot section of the
 * settings table (core/config.c).  Every rank creates-or-opens
 * the same file /dev/shm/coopmpi-<job>-boot (same size: idempotent),
 * publishes its address blob in its own slot, waits for all slots, connects,
 * then meets the others at a counter barrier before the file is unlinked.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mpi.h"

struct boot_slot {
	uint32_t ready;
	uint32_t len;
	unsigned char blob[COOP_ADDR_MAX_LEN];
};

struct boot_hdr {
	uint32_t connected;	/* barrier counter */
	uint32_t pad[15];
};

struct boot {
	char name[64];
	size_t bytes;
	struct boot_hdr *hdr;
	struct boot_slot *slots;
	uint64_t deadline_ns;
	int rank;
};

/* Spin briefly, then sleep 50 us; 0 when cond holds, -1 at deadline. */
static int wait_until(struct boot *b, int (*cond)(struct boot *, int), int n)
{
	unsigned spins = 0;
	struct timespec nap = { 0, 50000 };

	while (!cond(b, n)) {
		if (++spins < 1000)
			continue;
		if (coop_now_ns() > b->deadline_ns)
			return -1;
		nanosleep(&nap, NULL);
	}
	return 0;
}

static int all_ready(struct boot *b, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (!__atomic_load_n(&b->slots[i].ready, __ATOMIC_ACQUIRE))
			return 0;
	return 1;
}

static int all_connected(struct boot *b, int n)
{
	return __atomic_load_n(&b->hdr->connected, __ATOMIC_ACQUIRE) >=
	       (uint32_t)n;
}

static int boot_open(struct boot *b, uint64_t job, int size)
{
	int fd;
	void *m;

	snprintf(b->name, sizeof(b->name), "/coopmpi-%016llx-boot",
		 (unsigned long long)job);
	b->bytes = sizeof(struct boot_hdr) + (size_t)size * sizeof(*b->slots);
	fd = shm_open(b->name, O_RDWR | O_CREAT, 0600);
	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)b->bytes)) {
		close(fd);
		return -1;
	}
	m = mmap(NULL, b->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -1;
	b->hdr = m;
	b->slots = (struct boot_slot *)(b->hdr + 1);
	return 0;
}

static int fail(int rank, const char *what)
{
	coop_log(rank, "coop_init_from_env: %s", what);
	return COOP_ERR_BOOTSTRAP;
}

static int exchange(struct coop_context *ctx, struct boot *b)
{
	struct boot_slot *me = &b->slots[ctx->rank];
	size_t len = sizeof(me->blob);
	int rc = coop_address(ctx, me->blob, &len);

	if (rc)
		return rc;
	me->len = (uint32_t)len;
	__atomic_store_n(&me->ready, 1, __ATOMIC_RELEASE);
	if (wait_until(b, all_ready, ctx->size))
		return fail(ctx->rank, "timeout waiting for the other ranks");
	rc = coop_connect(ctx, b->slots[0].blob, sizeof(struct boot_slot));
	if (rc)
		return rc;
	__atomic_fetch_add(&b->hdr->connected, 1, __ATOMIC_ACQ_REL);
	if (wait_until(b, all_connected, ctx->size))
		return fail(ctx->rank, "timeout waiting for the others to "
			    "connect");
	return COOP_SUCCESS;
}

int coop_init_from_env(coop_context_t **out)
{
	coop_init_params_t p = { .size = sizeof(p) };
	struct coop_context *ctx;
	struct coop_boot_env env;
	struct boot b;
	int rc;

	if (!out)
		return COOP_ERR_ARG;
	memset(&b, 0, sizeof(b));
	if (coop_config_load_boot(&env))
		return fail(-1, "COOP_RANK/COOP_SIZE/COOP_JOB missing or "
			    "invalid (start with scripts/cooprun)");
	p.rank = (int)env.rank;
	p.nranks = (int)env.size;
	p.job_key = env.job;
	rc = coop_init(&p, &ctx);
	if (rc)
		return rc;
	b.deadline_ns = coop_now_ns() + (uint64_t)ctx->cfg.boot_timeout *
				   1000000000ULL;
	if (boot_open(&b, p.job_key, p.nranks)) {
		coop_finalize(ctx);
		return fail(p.rank, "cannot open the rendezvous file");
	}
	rc = exchange(ctx, &b);
	munmap(b.hdr, b.bytes);
	shm_unlink(b.name);	/* everyone has it open or mapped by now */
	if (rc) {
		coop_finalize(ctx);
		return rc;
	}
	*out = ctx;
	return COOP_SUCCESS;
}
