/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_xfer.c - include/coopmpi_xfer.h, the lower layer for MPI
 * implementations with their own matching: regions, single-sided GET and
 * PUT jobs, cooperative jobs through a work slot (both sides copy, each
 * chunk once, the reader completes alone when the writer never starts),
 * the slot's references, the COOP-load split (the whole message when the
 * peer copies for itself), and every argument check.
 * The same copies done in the call (coop_xfer_copy), and its refusals.
 * PUT jobs by the offload engine (COOP_XFER_ENGINE) and striped over the
 * CPU and the engine (COOP_XFER_STRIPE): sizes 0 B .. 8 MiB at odd
 * offsets of the peer's region, all in flight at once, every byte (and
 * the bytes between the ranges) checked, the engine's and the CPU's
 * shares in the statistics and counters; without an engine the flags
 * are refused with COOP_ERR_UNSUPPORTED.
 * The tests' own control messages go through coop_send/coop_recv, as an
 * MPI implementation's would go through its own packets.
 */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "coopmpi_xfer.h"
#include "harness.h"
#include "tests.h"

#define COMM 61
#define LEN ((4u << 20) + 123)	/* unaligned, several chunks */

/* What a rendezvous packet of the caller would carry. */
struct ctl {
	coop_rkey_t key;
	uint32_t slot;
	uint32_t pad;
	uint64_t count;
};

static void ctl_send(coop_context_t *ctx, int peer, const struct ctl *c)
{
	T_OK(coop_send(ctx, c, sizeof(*c), peer, 1, COMM, 0));
}

static void ctl_recv(coop_context_t *ctx, int peer, struct ctl *c)
{
	T_OK(coop_recv(ctx, c, sizeof(*c), peer, 1, COMM, 0, NULL));
}

/* Start a job of dir with peer on its region's bytes from offset, wait
 * for it: the bytes we copied. */
static size_t run_job(coop_context_t *ctx, unsigned dir, int peer, void *buf,
		      const coop_rkey_t *key, uint64_t offset, uint32_t slot)
{
	coop_xfer_params_t p = {
		.size = sizeof(p), .flags = dir, .peer = peer, .slot = slot,
		.local = buf, .len = LEN, .key = *key, .offset = offset,
	};
	coop_request_t *r;
	coop_status_t st;

	T_OK(coop_xfer_start(ctx, &p, &r));
	T_OK(coop_wait(&r, &st));
	return st.count;
}

/* The same copy with coop_xfer_copy: done when it returns, one more
 * copy job and LEN more bytes in the statistics, not timed (copy_ns: a
 * copy in the call reads no clock), no load left. */
static size_t copy_now(coop_context_t *ctx, unsigned dir, int peer, void *buf,
		       const coop_rkey_t *key, uint64_t offset)
{
	coop_xfer_params_t p = {
		.size = sizeof(p), .flags = dir, .peer = peer,
		.slot = COOP_XFER_NO_SLOT, .local = buf, .len = LEN,
		.key = *key, .offset = offset,
	};
	coop_stats_t before, after;
	coop_load_t load;

	T_OK(coop_get_stats(ctx, &before));
	T_OK(coop_xfer_copy(ctx, &p));
	T_OK(coop_get_stats(ctx, &after));
	T_ASSERT(after.copy_jobs == before.copy_jobs + 1 &&
		 after.copy_bytes == before.copy_bytes + LEN &&
		 after.copy_ns == before.copy_ns,
		 "statistics: %llu jobs, %llu bytes, %llu ns more",
		 (unsigned long long)(after.copy_jobs - before.copy_jobs),
		 (unsigned long long)(after.copy_bytes - before.copy_bytes),
		 (unsigned long long)(after.copy_ns - before.copy_ns));
	T_OK(coop_get_load(ctx, 0, &load));
	T_ASSERT(!load.pending_ops && !load.pending_bytes, "load left: %llu "
		 "ops, %llu bytes", (unsigned long long)load.pending_ops,
		 (unsigned long long)load.pending_bytes);
	return LEN;
}

/* How single_rank's rank 0 copies. */
struct single_mode {
	unsigned dir;		/* COOP_XFER_GET or COOP_XFER_PUT */
	int now;		/* coop_xfer_copy, else a job */
};

/* arg: a struct single_mode; rank 0 copies against the region of rank
 * 1, whose data start at offset 1 of it. */
static int single_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	const struct single_mode *m = arg;
	unsigned dir = m->dir;
	char *buf = malloc(LEN + 1), *data = buf + 1;	/* unaligned */
	struct ctl c = { .slot = COOP_XFER_NO_SLOT };
	size_t copied;

	(void)size;
	if (rank == 1) {
		t_fill(data, LEN, 7);
		T_OK(coop_mem_reg(ctx, buf, LEN + 1, dir == COOP_XFER_GET ?
				  COOP_ACCESS_READ : COOP_ACCESS_WRITE,
				  &c.key));
		ctl_send(ctx, 0, &c);
		ctl_recv(ctx, 0, &c);	/* done */
		T_OK(coop_mem_dereg(ctx, &c.key));
		if (dir == COOP_XFER_PUT)
			T_ASSERT(t_check(data, LEN, 9) < 0, "PUT data");
	} else {
		t_fill(data, LEN, 9);
		ctl_recv(ctx, 1, &c);
		copied = m->now ? copy_now(ctx, dir, 1, data, &c.key, 1) :
				  run_job(ctx, dir, 1, data, &c.key, 1, c.slot);
		T_ASSERT(copied == LEN, "this side copied everything");
		if (dir == COOP_XFER_GET)
			T_ASSERT(t_check(data, LEN, 7) < 0, "GET data");
		ctl_send(ctx, 1, &c);
	}
	free(buf);
	return 0;
}

/*
 * Keys without registering: rank 1 sends the address of a buffer it did
 * not register.  With the shm provider (coop_xfer_addr_keys) rank 0 reads
 * it, in the call and by a job, and writes into it; with the driver the
 * key names no region, which the copy reports as it does a region that
 * went with its owner.
 */
static int addr_keys_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	char *buf = malloc(LEN), *mine = malloc(LEN);
	struct ctl c = { .slot = COOP_XFER_NO_SLOT };
	coop_xfer_params_t p = {
		.size = sizeof(p), .flags = COOP_XFER_GET, .peer = 1,
		.slot = COOP_XFER_NO_SLOT, .local = mine, .len = LEN,
	};
	int by_addr = coop_xfer_addr_keys(ctx), rc;

	(void)size, (void)arg;
	T_ASSERT(by_addr == !strcmp(coop_provider_name(ctx), "shm") &&
		 !coop_xfer_addr_keys(NULL), "addr keys %d with provider %s",
		 by_addr, coop_provider_name(ctx));
	if (rank == 1) {
		t_fill(buf, LEN, 7);
		c.key.cookie = (uint64_t)(uintptr_t)buf;
		c.key.length = LEN;
		ctl_send(ctx, 0, &c);
		ctl_recv(ctx, 0, &c);	/* done */
		if (by_addr)
			T_ASSERT(t_check(buf, LEN, 9) < 0, "PUT data");
	} else {
		ctl_recv(ctx, 1, &c);
		p.key = c.key;
		if (!by_addr) {	/* no region by that cookie: as a gone one */
			rc = coop_xfer_copy(ctx, &p);
			T_ASSERT(rc == COOP_ERR_PEER_DEAD,
				 "an unregistered key: %s", coop_strerror(rc));
		} else {
			T_OK(coop_xfer_copy(ctx, &p));
			T_ASSERT(t_check(mine, LEN, 7) < 0, "GET data");
			t_fill(mine, LEN, 9);
			T_ASSERT(run_job(ctx, COOP_XFER_PUT, 1, mine, &c.key,
					 0, COOP_XFER_NO_SLOT) == LEN,
				 "the job copied everything");
		}
		ctl_send(ctx, 1, &c);
	}
	free(mine);
	free(buf);
	return 0;
}

/*
 * Cooperative: rank 0 reads (owns the slot, takes [0, split)), rank 1
 * writes; arg nonzero: the writer never starts its job, the reader
 * copies everything.  Each chunk is copied once; the slot is free after
 * the job's and the writer's references are dropped.
 */
static int cooperative_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	int absent = *(const int *)arg;
	char *buf = malloc(LEN);
	struct ctl rts, cts, fin = { .count = 0 };
	size_t split;

	(void)size;
	if (rank == 1) {	/* the sender: writes [split, LEN) */
		t_fill(buf, LEN, 3);
		T_OK(coop_mem_reg(ctx, buf, LEN, COOP_ACCESS_READ, &rts.key));
		ctl_send(ctx, 0, &rts);
		ctl_recv(ctx, 0, &cts);
		if (!absent)
			fin.count = run_job(ctx, COOP_XFER_PUT, 0, buf,
					    &cts.key, 0, cts.slot);
		ctl_send(ctx, 0, &fin);	/* done with the slot */
		ctl_recv(ctx, 0, &fin);	/* the reader is done too */
		T_OK(coop_mem_dereg(ctx, &rts.key));
	} else {
		memset(buf, 0, LEN);
		ctl_recv(ctx, 1, &rts);
		T_OK(coop_mem_reg(ctx, buf, LEN, COOP_ACCESS_WRITE, &cts.key));
		T_OK(coop_xfer_split(ctx, 1, LEN, &split));
		/* idle ranks split evenly, to the nearest page */
		T_ASSERT(split == ((LEN / 2 + 2048) & ~(size_t)4095),
			 "idle ranks' split: %zu", split);
		T_OK(coop_xfer_slot_alloc(ctx, 1, LEN, split, &cts.slot));
		ctl_send(ctx, 1, &cts);
		fin.count = run_job(ctx, COOP_XFER_GET, 1, buf, &rts.key, 0,
				    cts.slot);
		T_ASSERT(t_check(buf, LEN, 3) < 0, "cooperative data");
		if (absent)	/* completes without the writer */
			T_ASSERT(fin.count == LEN, "reader copied %llu",
				 (unsigned long long)fin.count);
		split = fin.count;
		ctl_recv(ctx, 1, &fin);
		T_ASSERT(split + fin.count == LEN, "each chunk once: %zu + %llu",
			 split, (unsigned long long)fin.count);
		T_OK(coop_xfer_slot_release(ctx, 1, cts.slot));
		T_ASSERT(coop_xfer_slot_release(ctx, 1, cts.slot) ==
			 COOP_ERR_ARG, "the slot was freed");
		T_OK(coop_mem_dereg(ctx, &cts.key));
		ctl_send(ctx, 1, &fin);
	}
	free(buf);
	return 0;
}

/*
 * A peer that copies for itself has no CPU to lend: while rank 1 keeps a
 * GET job of its own in flight (it starts one after another until rank 0
 * says it has seen it), rank 0's split is the whole message and
 * coop_xfer_busy says so (and not of rank 0).  Rank 0 copied nothing
 * meanwhile (a ping-pong's writer): once rank 1 stopped, rank 0 shares
 * again at once, however long COOP_LOAD_BUSY_MS (the case's hour).
 */
static int busy_peer_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	char *buf = malloc(LEN);
	struct ctl c = { .slot = COOP_XFER_NO_SLOT };
	coop_request_t *seen;
	size_t share = 0;
	time_t deadline = time(NULL) + 30;
	int flag = 0, busy = -1;

	(void)size;
	(void)arg;
	if (rank == 1) {
		ctl_recv(ctx, 0, &c);
		T_OK(coop_irecv(ctx, &c.count, sizeof(c.count), 0, 2, COMM, 0,
				&seen));
		while (!flag) {
			run_job(ctx, COOP_XFER_GET, 0, buf, &c.key, 0, c.slot);
			T_OK(coop_test(&seen, &flag, NULL));
		}
		ctl_send(ctx, 0, &c);	/* stopped */
	} else {
		t_fill(buf, LEN, 5);
		T_OK(coop_mem_reg(ctx, buf, LEN, COOP_ACCESS_READ, &c.key));
		ctl_send(ctx, 1, &c);
		while (share != LEN && time(NULL) < deadline)
			T_OK(coop_xfer_split(ctx, 1, LEN, &share));
		T_ASSERT(share == LEN, "peer copying: share %zu of %u", share,
			 LEN);
		T_OK(coop_xfer_busy(ctx, 1, &busy));
		T_ASSERT(busy == 1, "peer copying: not busy");
		T_OK(coop_xfer_busy(ctx, 0, &busy));
		T_ASSERT(busy == 0, "we copy nothing: busy");
		T_OK(coop_send(ctx, &c.count, sizeof(c.count), 1, 2, COMM, 0));
		ctl_recv(ctx, 1, &c);
		T_OK(coop_xfer_split(ctx, 1, LEN, &share));
		T_ASSERT(share < LEN, "peer stopped: share %zu", share);
		T_OK(coop_xfer_busy(ctx, 1, &busy));
		T_ASSERT(busy == 0, "peer stopped: busy");
		T_OK(coop_mem_dereg(ctx, &c.key));
	}
	free(buf);
	return 0;
}

/*
 * An exchange: both ranks read each other's region at once, one job after
 * another, until each has started a copy while the other copied for
 * itself (coop_xfer_busy of itself, between its jobs) and heard the same
 * of the other.  Then both are busy, to each other and to themselves,
 * for COOP_LOAD_BUSY_MS (an hour) after the last copy ended, and neither
 * splits a read with the other.
 */
static int exchange_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	char *buf = malloc(LEN), *mine = malloc(LEN);
	int peer = 1 - rank, flag = 0, busy = 0, seen = 0;
	struct ctl c = { .slot = COOP_XFER_NO_SLOT }, theirs;
	time_t deadline = time(NULL) + 30;
	coop_request_t *heard;
	size_t share = 0;

	(void)size;
	(void)arg;
	t_fill(mine, LEN, 3 + rank);
	T_OK(coop_mem_reg(ctx, mine, LEN, COOP_ACCESS_READ, &c.key));
	ctl_send(ctx, peer, &c);
	ctl_recv(ctx, peer, &theirs);
	T_OK(coop_irecv(ctx, &c.count, sizeof(c.count), peer, 2, COMM, 0,
			&heard));
	while ((!flag || !seen) && time(NULL) < deadline) {
		run_job(ctx, COOP_XFER_GET, peer, buf, &theirs.key, 0,
			COOP_XFER_NO_SLOT);
		T_OK(coop_xfer_busy(ctx, rank, &busy));
		if (busy && !seen++)
			T_OK(coop_send(ctx, &c.count, sizeof(c.count), peer,
				       2, COMM, 0));
		if (!flag)
			T_OK(coop_test(&heard, &flag, NULL));
	}
	T_ASSERT(flag && seen, "no overlap seen in 30 s (%d, %d)", flag, seen);
	T_ASSERT(t_check(buf, LEN, 3 + (uint32_t)peer) < 0,
		 "data read from rank %d", peer);
	ctl_send(ctx, peer, &c);	/* both stopped: no copy in flight */
	ctl_recv(ctx, peer, &theirs);
	T_OK(coop_xfer_busy(ctx, rank, &busy));
	T_ASSERT(busy == 1, "after the exchange: we are not busy");
	T_OK(coop_xfer_busy(ctx, peer, &busy));
	T_ASSERT(busy == 1, "after the exchange: rank %d not busy", peer);
	T_OK(coop_xfer_split(ctx, peer, LEN, &share));
	T_ASSERT(share == LEN, "after the exchange: share %zu", share);
	ctl_send(ctx, peer, &c);	/* both checked: regions may go */
	ctl_recv(ctx, peer, &theirs);
	T_OK(coop_mem_dereg(ctx, &c.key));
	free(mine);
	free(buf);
	return 0;
}

/* A GET of 4096 bytes into buf from rank 1's region key that every
 * check lets through: what the argument checks change one field of. */
static coop_xfer_params_t valid_get(char *buf, coop_rkey_t key)
{
	coop_xfer_params_t p = {
		.size = sizeof(p), .flags = COOP_XFER_GET, .peer = 1,
		.slot = COOP_XFER_NO_SLOT, .local = buf, .len = 4096,
		.key = key,
	};

	return p;
}

/* Every argument check answers with its error, and nothing starts. */
static void bad_params(coop_context_t *ctx, char *buf, coop_rkey_t key)
{
	coop_xfer_params_t ok = valid_get(buf, key), p;
	coop_request_t *r;

	p = ok, p.size--;
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_ARG, "size");
	p = ok, p.flags = 0;
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_ARG, "no dir");
	p = ok, p.flags = COOP_XFER_GET | COOP_XFER_PUT;
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_ARG, "two dirs");
	p = ok, p.reserved[2] = 1;
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_ARG, "reserved");
	p = ok, p.len = key.length + 1;
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_ARG, "beyond key");
	p = ok, p.offset = key.length - p.len + 1;
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_ARG, "offset");
	p = ok, p.offset = UINT64_MAX;
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_ARG, "offset wraps");
	p = ok, p.slot = 0;	/* not allocated */
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_ARG, "free slot");
	p = ok, p.flags = COOP_XFER_PUT, p.slot = 1u << 30;
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_ARG, "peer slot");
	p = ok, p.flags = COOP_XFER_PUT | COOP_XFER_ENGINE | COOP_XFER_STRIPE;
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_ARG,
		 "engine and stripe");
	p = ok, p.flags = COOP_XFER_PUT | (1u << 4);
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_ARG, "unknown flag");
	p = ok, p.flags = COOP_XFER_ENGINE;
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_ARG,
		 "engine, no direction");
	p = ok, p.flags = COOP_XFER_PUT | COOP_XFER_STRIPE, p.slot = 1u << 30;
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_ARG,
		 "stripe with a slot");
	p = ok, p.flags = COOP_XFER_GET | COOP_XFER_ENGINE;
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_UNSUPPORTED,
		 "engine GET");
	p = ok, p.flags = COOP_XFER_GET | COOP_XFER_STRIPE;
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_UNSUPPORTED,
		 "striped GET");
	p = ok, p.peer = 2;
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_RANK, "rank");
	T_ASSERT(coop_xfer_start(ctx, NULL, &r) == COOP_ERR_ARG, "NULL");
	T_ASSERT(coop_xfer_start(ctx, &ok, NULL) == COOP_ERR_ARG, "no req");
	T_ASSERT(coop_xfer_start(NULL, &ok, &r) == COOP_ERR_ARG, "no ctx");
}

/* coop_xfer_copy's: those of a job, and no slot or engine; nothing is
 * copied for any of them. */
static void bad_copy_params(coop_context_t *ctx, char *buf, coop_rkey_t key)
{
	coop_xfer_params_t ok = valid_get(buf, key), p;
	static const unsigned refused[] = {
		0, COOP_XFER_GET | COOP_XFER_PUT, COOP_XFER_PUT | (1u << 4),
		COOP_XFER_PUT | COOP_XFER_ENGINE,
		COOP_XFER_PUT | COOP_XFER_STRIPE,
	};
	unsigned i;

	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		p = ok, p.flags = refused[i];
		T_ASSERT(coop_xfer_copy(ctx, &p) == COOP_ERR_ARG,
			 "flags %#x", refused[i]);
	}
	p = ok, p.size--;
	T_ASSERT(coop_xfer_copy(ctx, &p) == COOP_ERR_ARG, "size");
	p = ok, p.reserved[0] = 1;
	T_ASSERT(coop_xfer_copy(ctx, &p) == COOP_ERR_ARG, "reserved");
	p = ok, p.len = key.length + 1;
	T_ASSERT(coop_xfer_copy(ctx, &p) == COOP_ERR_ARG, "beyond key");
	p = ok, p.slot = 0;
	T_ASSERT(coop_xfer_copy(ctx, &p) == COOP_ERR_ARG, "a slot");
	p = ok, p.peer = 2;
	T_ASSERT(coop_xfer_copy(ctx, &p) == COOP_ERR_RANK, "rank");
	T_ASSERT(coop_xfer_copy(ctx, NULL) == COOP_ERR_ARG, "NULL");
	T_ASSERT(coop_xfer_copy(NULL, &ok) == COOP_ERR_ARG, "no ctx");
	p = ok, p.len = 0, p.local = NULL;
	T_OK(coop_xfer_copy(ctx, &p));
}

static int args_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	char *buf = malloc(LEN);
	coop_xfer_params_t p = {
		.size = sizeof(p), .flags = COOP_XFER_GET, .peer = 1,
		.slot = COOP_XFER_NO_SLOT, .local = buf, .len = 4096,
	};
	coop_request_t *r;
	uint32_t slot;
	size_t share;
	int busy;

	(void)arg;
	if (rank == 1) {
		t_barrier(ctx, rank, size);
		free(buf);
		return 0;
	}
	T_ASSERT(coop_mem_reg(ctx, NULL, 8, COOP_ACCESS_READ, &p.key) ==
		 COOP_ERR_ARG, "NULL addr");
	T_ASSERT(coop_mem_reg(ctx, buf, 0, COOP_ACCESS_READ, &p.key) ==
		 COOP_ERR_ARG, "len 0");
	T_ASSERT(coop_mem_reg(ctx, buf, 8, 0, &p.key) == COOP_ERR_ARG,
		 "no access");
	T_ASSERT(coop_mem_reg(ctx, buf, 8, 4, &p.key) == COOP_ERR_ARG,
		 "unknown access bit");
	T_ASSERT(coop_mem_reg(ctx, buf, 8, COOP_ACCESS_READ, NULL) ==
		 COOP_ERR_ARG, "NULL key");
	T_OK(coop_mem_reg(ctx, buf, LEN, COOP_ACCESS_READ, &p.key));
	bad_params(ctx, buf, p.key);
	bad_copy_params(ctx, buf, p.key);
	T_ASSERT(coop_xfer_slot_alloc(ctx, 1, 100, 101, &slot) ==
		 COOP_ERR_ARG, "split > len");
	T_ASSERT(coop_xfer_slot_alloc(ctx, 1, 0, 0, &slot) == COOP_ERR_ARG,
		 "len 0");
	T_ASSERT(coop_xfer_slot_alloc(ctx, -1, 100, 0, &slot) ==
		 COOP_ERR_RANK, "rank");
	T_ASSERT(coop_xfer_slot_alloc(ctx, 1, 100, 0, NULL) == COOP_ERR_ARG,
		 "NULL slot");
	T_ASSERT(coop_xfer_slot_release(ctx, 1, 7) == COOP_ERR_ARG,
		 "release of a free slot");
	T_ASSERT(coop_xfer_split(ctx, 1, 100, NULL) == COOP_ERR_ARG, "NULL");
	T_ASSERT(coop_xfer_busy(ctx, 1, NULL) == COOP_ERR_ARG, "busy NULL");
	T_ASSERT(coop_xfer_busy(ctx, 2, &busy) == COOP_ERR_RANK,
		 "busy rank 2");
	T_ASSERT(coop_xfer_busy(ctx, -1, &busy) == COOP_ERR_RANK,
		 "busy rank -1");
	T_ASSERT(coop_xfer_busy(NULL, 0, &busy) == COOP_ERR_ARG,
		 "busy no ctx");
	T_OK(coop_xfer_split(ctx, 1, 0, &share));
	T_ASSERT(share == 0, "share of nothing");
	/* a job of our own region (single-sided, with ourselves): it may
	 * not be cancelled, it completes */
	p.peer = 0;
	T_OK(coop_xfer_start(ctx, &p, &r));
	T_ASSERT(coop_cancel(r) == COOP_ERR_UNSUPPORTED, "cancel");
	T_OK(coop_wait(&r, NULL));
	T_OK(coop_xfer_copy(ctx, &p));
	T_OK(coop_mem_dereg(ctx, &p.key));
	T_ASSERT(coop_mem_dereg(ctx, NULL) == COOP_ERR_ARG, "dereg NULL");
	t_barrier(ctx, rank, size);
	free(buf);
	return 0;
}

/* ---------------- dynamic endpoints and messages ---------------- */

/* The dynamic domain of this run: a key of its own beside the job's. */
static uint64_t dyn_key(void)
{
	return t_extra_key();
}

static coop_context_t *dyn_init(void)
{
	coop_init_params_t p = { .size = sizeof(p),
				 .flags = COOP_INIT_DYNAMIC,
				 .job_key = dyn_key() };
	coop_context_t *d;

	T_OK(coop_init(&p, &d));
	return d;
}

/* Every rank's dynamic address, through the static context: all[i] is
 * rank i's blob. */
struct dyn_addr {
	int rank;		/* its dynamic rank, for the tests' checks */
	size_t len;
	char blob[COOP_ADDR_MAX_LEN];
};

static void dyn_allgather(coop_context_t *ctx, coop_context_t *d, int rank,
			  int size, struct dyn_addr *all)
{
	int i;

	all[rank].len = sizeof(all[rank].blob);
	T_OK(coop_address(d, all[rank].blob, &all[rank].len));
	T_OK(coop_rank(d, &all[rank].rank));
	for (i = 0; i < size; i++)
		if (i != rank)
			T_OK(coop_send(ctx, &all[rank], sizeof(all[rank]), i,
				       2, COMM, 0));
	for (i = 0; i < size; i++)
		if (i != rank)
			T_OK(coop_recv(ctx, &all[i], sizeof(all[i]), i, 2,
				       COMM, 0, NULL));
}

struct got_msg {
	int n, src;
	size_t len;
	char data[COOP_MSG_MAX];
};

static void on_msg(void *arg, int src, const void *msg, size_t len)
{
	struct got_msg *g = arg;

	g->n++;
	g->src = src;
	g->len = len;
	memcpy(g->data, msg, len);
}

/* Rank 0 connects with ranks 1 and 2, which do not connect with each
 * other: messages, MPI sends and copy jobs between connected endpoints,
 * COOP_ERR_STATE between the others. */
static void dyn_exchange(coop_context_t *d, int rank, const int *dr)
{
	char big[COOP_MSG_MAX + 1] = "dynamic", out[64];
	struct got_msg g = { 0 };

	T_OK(coop_msg_set_handler(d, on_msg, &g));
	if (rank == 0) {
		T_OK(coop_msg_send(d, dr[1], big, COOP_MSG_MAX));
		T_ASSERT(coop_msg_send(d, dr[1], big, COOP_MSG_MAX + 1) ==
			 COOP_ERR_ARG, "too long");
		T_ASSERT(coop_msg_send(d, dr[1], NULL, 4) == COOP_ERR_ARG,
			 "NULL");
		T_OK(coop_recv(d, out, sizeof(out), dr[2], 5, COMM, 0, NULL));
		T_ASSERT(!strcmp(out, "from 2"), "MPI receive: %s", out);
	} else if (rank == 1) {
		while (!g.n)
			T_OK(coop_progress(d));
		T_ASSERT(g.src == dr[0] && g.len == COOP_MSG_MAX &&
			 !memcmp(g.data, big, COOP_MSG_MAX), "message");
		T_ASSERT(coop_msg_send(d, dr[2], "x", 1) == COOP_ERR_STATE,
			 "not connected");
		T_ASSERT(coop_send(d, "x", 1, dr[2], 0, COMM, 0) ==
			 COOP_ERR_STATE, "send to a stranger");
	} else {
		T_OK(coop_send(d, "from 2", 7, dr[0], 5, COMM, 0));
	}
}

static int dynamic_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	struct dyn_addr all[3];
	coop_context_t *d = dyn_init();
	int dr[3], i, r, dsize;

	(void)arg;
	T_OK(coop_size(d, &dsize));
	dyn_allgather(ctx, d, rank, size, all);
	/* the driver's default max_endpoints; shm's SHM_DYNAMIC_MAX */
	T_ASSERT(dsize == (strcmp(coop_provider_name(d), "kmod") ? 1024 : 256) &&
		 all[rank].rank >= 0 && all[rank].rank < dsize,
		 "dynamic rank %d of %d", all[rank].rank, dsize);
	for (i = 0; i < size; i++)
		dr[i] = all[i].rank;
	for (i = 0; i < size; i++) {
		T_ASSERT(i == rank || dr[i] != dr[rank], "ranks differ");
		if (i == rank || (rank && i))	/* 1 and 2: only 0 */
			continue;
		T_OK(coop_connect_peer(d, all[i].blob, all[i].len, &r));
		T_ASSERT(r == dr[i], "the blob's rank: %d, not %d", r, dr[i]);
		T_OK(coop_connect_peer(d, all[i].blob, all[i].len, &r));
		T_ASSERT(r == dr[i], "connecting again: the same rank");
	}
	t_barrier(ctx, rank, size);
	dyn_exchange(d, rank, dr);
	t_barrier(ctx, rank, size);
	T_OK(coop_finalize(d));
	return 0;
}

/* The dynamic contexts' files are gone once all of them finalized. */
static int dyn_files_left(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "ls /dev/shm | grep -q %016llx",
		 (unsigned long long)dyn_key());
	return system(cmd) == 0;
}

static int dynamic_files_rank(coop_context_t *ctx, int rank, int size,
			      void *arg)
{
	int rc = dynamic_rank(ctx, rank, size, arg);

	t_barrier(ctx, rank, size);
	T_ASSERT(!dyn_files_left(), "/dev/shm files of the dynamic domain");
	return rc;
}

/* A dynamic endpoint's process died without finalize: its endpoint is
 * given to the next one; and the argument checks of the dynamic calls. */
static int dynamic_reuse_rank(coop_context_t *ctx, int rank, int size,
			      void *arg)
{
	coop_init_params_t p = { .size = sizeof(p),
				 .flags = COOP_INIT_DYNAMIC, .rank = 1,
				 .job_key = dyn_key() };
	char blob[COOP_ADDR_MAX_LEN];
	size_t len = sizeof(blob);
	coop_context_t *d;
	int mine, theirs, st;
	pid_t pid;

	(void)ctx, (void)rank, (void)size, (void)arg;
	T_ASSERT(coop_init(&p, &d) == COOP_ERR_ARG, "rank with DYNAMIC");
	p.rank = 0, p.nranks = 2;
	T_ASSERT(coop_init(&p, &d) == COOP_ERR_ARG, "nranks with DYNAMIC");
	p.nranks = 0, p.flags = 4;
	T_ASSERT(coop_init(&p, &d) == COOP_ERR_ARG, "unknown flag");
	T_ASSERT(coop_connect_peer(ctx, blob, len, &mine) == COOP_ERR_STATE,
		 "static context");
	pid = fork();
	if (!pid) {		/* takes an endpoint and dies with it */
		d = dyn_init();
		T_OK(coop_rank(d, &theirs));
		_exit(theirs);
	}
	T_ASSERT(waitpid(pid, &st, 0) == pid && WIFEXITED(st), "child");
	d = dyn_init();
	T_OK(coop_rank(d, &mine));
	T_ASSERT(mine == WEXITSTATUS(st), "endpoint %d reused (dead: %d)",
		 mine, WEXITSTATUS(st));
	T_ASSERT(coop_connect(d, blob, len) == COOP_ERR_STATE,
		 "coop_connect of a dynamic context");
	T_OK(coop_address(d, blob, &len));
	T_ASSERT(coop_connect_peer(d, blob, 8, &theirs) == COOP_ERR_ARG,
		 "short blob");
	T_OK(coop_connect_peer(d, blob, len, &theirs));
	T_ASSERT(theirs == mine, "ourselves");
	T_OK(coop_finalize(d));
	return 0;
}

/* A dynamic endpoint killed with nobody of its domain left on the node
 * (as on the other nodes of a job a launcher kills): the domain's guard
 * removes its files, without any launcher's help. */
static int dynamic_killed_rank(coop_context_t *ctx, int rank, int size,
			       void *arg)
{
	int st, tries;
	pid_t pid;

	(void)ctx, (void)rank, (void)size, (void)arg;
	pid = fork();
	if (!pid) {
		dyn_init();
		raise(SIGKILL);
	}
	T_ASSERT(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st), "killed");
	for (tries = 0; tries < 100 && dyn_files_left(); tries++)
		usleep(50000);
	T_ASSERT(!dyn_files_left(), "/dev/shm files of the killed endpoint "
		 "after %d ms", tries * 50);
	return 0;
}

/* A child endpoint: sends its short address up the pipe, connects with
 * the sender of the first message (its short address is the message)
 * and sends it back, then finalizes. */
static void echo_child(int fd)
{
	coop_context_t *d = dyn_init();
	struct got_msg g = { 0 };
	char addr[COOP_ADDR_SHORT_LEN];
	size_t len = sizeof(addr);
	int peer;

	T_OK(coop_msg_set_handler(d, on_msg, &g));
	T_OK(coop_address_short(d, addr, &len));
	T_ASSERT(write(fd, addr, len) == (ssize_t)len, "pipe");
	while (!g.n)
		T_OK(coop_progress(d));
	T_OK(coop_connect_peer(d, g.data, g.len, &peer));
	T_ASSERT(peer == g.src, "the sender's address");
	T_OK(coop_msg_send(d, peer, g.data, g.len));
	T_OK(coop_finalize(d));
	_exit(0);
}

/* Connect d to a new echo child and exchange a message: its rank. */
static int echo_round(coop_context_t *d)
{
	struct got_msg g = { 0 };
	char addr[COOP_ADDR_SHORT_LEN], mine[COOP_ADDR_SHORT_LEN];
	size_t len = sizeof(mine);
	int fd[2], peer, st;
	pid_t pid;

	T_ASSERT(!pipe(fd), "pipe");
	pid = fork();
	if (!pid)
		echo_child(fd[1]);
	T_ASSERT(read(fd[0], addr, sizeof(addr)) == sizeof(addr), "addr");
	T_OK(coop_connect_peer(d, addr, sizeof(addr), &peer));
	T_OK(coop_msg_set_handler(d, on_msg, &g));
	T_OK(coop_address_short(d, mine, &len));
	T_OK(coop_msg_send(d, peer, mine, len));
	while (!g.n)
		T_OK(coop_progress(d));
	T_ASSERT(g.src == peer && g.len == len && !memcmp(g.data, mine, len),
		 "echo");
	T_ASSERT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		 !WEXITSTATUS(st), "child");
	close(fd[0]);
	close(fd[1]);
	return peer;
}

/* A rank's endpoint finalizes and a new process takes it over: connecting
 * its short address again reaches the new one, not the old mapping. */
static int dynamic_reconnect_rank(coop_context_t *ctx, int rank, int size,
				  void *arg)
{
	coop_context_t *d = dyn_init();
	int first, second;

	(void)ctx, (void)rank, (void)size, (void)arg;
	first = echo_round(d);
	second = echo_round(d);
	T_ASSERT(first == second, "the rank was reused: %d, %d", first,
		 second);
	T_OK(coop_finalize(d));
	return 0;
}

/*
 * Endpoints come and go in three processes at once, 300 times each: no
 * two live ones ever share a rank (the last one out removes the domain's
 * files while another may be waiting to claim a slot in them), and each
 * resolves its own short address to itself.  A round takes milliseconds
 * natively but seconds under the debug kernel in the emulator, so each
 * process stops early (after at least MIN_ROUNDS) once BUDGET_S times
 * t_time_scale() is spent, well inside run_ranks' limit.
 */
static int dynamic_churn_rank(coop_context_t *ctx, int rank, int size,
			      void *arg)
{
	enum { ROUNDS = 300, MIN_ROUNDS = 10, BUDGET_S = 20, MAXR = 1024 };
	const size_t bytes = MAXR * sizeof(uint32_t);
	const time_t start = time(NULL);
	const time_t end = start + BUDGET_S * t_time_scale();
	char name[64];
	uint32_t *holder;
	int fd, i;

	(void)arg;
	snprintf(name, sizeof(name), "/coopmpi-test-churn-%016llx",
		 (unsigned long long)dyn_key());
	fd = shm_open(name, O_RDWR | O_CREAT, 0600);
	T_ASSERT(fd >= 0 && !ftruncate(fd, (off_t)bytes), "%s", name);
	holder = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	T_ASSERT(holder != MAP_FAILED, "map %s", name);
	t_barrier(ctx, rank, size);
	if (rank == 0)
		shm_unlink(name);	/* everybody has it mapped */
	for (i = 0; i < ROUNDS && (i < MIN_ROUNDS || time(NULL) < end); i++) {
		coop_context_t *d = dyn_init();
		char a[COOP_ADDR_SHORT_LEN];
		size_t len = sizeof(a);
		uint32_t other = 0;
		int mine, r;

		T_OK(coop_rank(d, &mine));
		T_ASSERT(mine >= 0 && mine < MAXR, "rank %d", mine);
		T_ASSERT(__atomic_compare_exchange_n(&holder[mine], &other,
						     (uint32_t)getpid(), 0,
						     __ATOMIC_SEQ_CST,
						     __ATOMIC_SEQ_CST),
			 "round %d: rank %d also held by pid %u", i, mine,
			 other);
		T_OK(coop_address_short(d, a, &len));
		T_OK(coop_connect_peer(d, a, len, &r));
		T_ASSERT(r == mine, "own address: rank %d, not %d", r, mine);
		__atomic_store_n(&holder[mine], 0, __ATOMIC_SEQ_CST);
		T_OK(coop_finalize(d));
	}
	fprintf(stderr, "dynamic churn: rank %d: %d rounds in %lld s\n", rank,
		i, (long long)(time(NULL) - start));
	t_barrier(ctx, rank, size);
	munmap(holder, bytes);
	return 0;
}

/* ---------------- PUT jobs by the offload engine ---------------- */

static const size_t eng_sizes[] = { 0, 1, 4097, (1u << 20) + 3, 8u << 20 };
#define NENG (int)(sizeof(eng_sizes) / sizeof(eng_sizes[0]))
#define ENG_GAP 7		/* untouched bytes between the ranges */
#define ENG_OLD 0x5a		/* what the region held before */

struct eng_case {
	const char *name;
	const char *const *env;
	unsigned mode;		/* COOP_XFER_ENGINE or COOP_XFER_STRIPE */
	int ratio;		/* COOP_STRIPE_RATIO in env: 0, 1; -1 none */
};

struct eng_outcome {
	const struct eng_case *c;
	int engine;		/* t_engine_present() */
};

/* Where size i goes in the peer's region (odd offsets). */
static size_t eng_off(int i)
{
	size_t off = 5;
	int k;

	for (k = 0; k < i; k++)
		off += eng_sizes[k] + ENG_GAP;
	return off;
}

/* The engine's share of n bytes with R = 1 (stripe.c: the CPU takes
 * n / 2, to the nearest page). */
static uint64_t eng_half(uint64_t n)
{
	return n - ((n / 2 + 2048) & ~(uint64_t)4095);
}

/* Rank 0 has no engine: both flags refused, nothing starts. */
static void eng_refused(coop_context_t *ctx, char *buf, const coop_rkey_t *key)
{
	coop_xfer_params_t p = {
		.size = sizeof(p), .peer = 1, .slot = COOP_XFER_NO_SLOT,
		.local = buf, .len = 4096, .key = *key, .offset = 5,
	};
	coop_request_t *r = NULL;
	const char *name = "none";

	T_ASSERT(!coop_xfer_engine(ctx, &name) && !strcmp(name, "none"),
		 "no engine, yet coop_xfer_engine says %s", name);
	p.flags = COOP_XFER_PUT | COOP_XFER_ENGINE;
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_UNSUPPORTED && !r,
		 "ENGINE without an engine");
	p.flags = COOP_XFER_PUT | COOP_XFER_STRIPE;
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_UNSUPPORTED && !r,
		 "STRIPE without an engine");
	p.flags = COOP_XFER_PUT;	/* the CPU still copies */
	T_OK(coop_xfer_start(ctx, &p, &r));
	T_OK(coop_wait(&r, NULL));
}

/* Rank 0: every size at once into rank 1's region, then the outcome. */
static void eng_put(coop_context_t *ctx, const struct eng_outcome *o,
		    char **src, const coop_rkey_t *key)
{
	const struct eng_case *c = o->c;
	coop_xfer_params_t p = {
		.size = sizeof(p), .flags = COOP_XFER_PUT | c->mode, .peer = 1,
		.slot = COOP_XFER_NO_SLOT, .key = *key,
	};
	coop_request_t *r[NENG];
	coop_status_t st[NENG];
	coop_stats_t stats;
	coop_load_t load;
	uint64_t all = 0, half = 0;
	const char *name = NULL;
	int i, want = c->mode == COOP_XFER_ENGINE ? COOP_PROTOCOL_DMA :
						     COOP_PROTOCOL_STRIPE;

	T_ASSERT(coop_xfer_engine(ctx, &name) == 1 && name &&
		 (!strcmp(name, "hw") || !strcmp(name, "soft") ||
		  !strcmp(name, "hca")),
		 "the engine: %s", name ? name : "(null)");
	T_ASSERT(coop_xfer_engine(ctx, NULL) == 1, "asked again");
	T_OK(coop_reset_stats(ctx));
	for (i = 0; i < NENG; i++) {
		p.local = src[i];
		p.len = eng_sizes[i];
		p.offset = eng_off(i);
		T_OK(coop_xfer_start(ctx, &p, &r[i]));
		all += eng_sizes[i];
		half += eng_half(eng_sizes[i]);
	}
	T_OK(coop_waitall(NENG, r, st));
	for (i = 0; i < NENG; i++)
		T_ASSERT(!st[i].error && st[i].count == eng_sizes[i] &&
			 st[i].protocol == want, "size %zu: %s, count %zu, "
			 "protocol %d", eng_sizes[i], coop_strerror(st[i].error),
			 st[i].count, st[i].protocol);
	T_OK(coop_get_stats(ctx, &stats));
	T_OK(coop_get_load(ctx, 0, &load));
	fprintf(stderr, "xfer %s (%s engine): %llu bytes, engine %llu, CPU "
		"%llu (load counters: %llu)\n", c->name, name,
		(unsigned long long)all,
		(unsigned long long)stats.offload_bytes,
		(unsigned long long)stats.copy_bytes,
		(unsigned long long)load.total_bytes);
	T_ASSERT(stats.offload_bytes + stats.copy_bytes == all,
		 "engine %llu + CPU %llu != %llu",
		 (unsigned long long)stats.offload_bytes,
		 (unsigned long long)stats.copy_bytes, (unsigned long long)all);
	for (i = 0; i < COOP_PROTOCOL_COUNT; i++)
		T_ASSERT(!stats.sent[i] && !stats.received[i],
			 "copy jobs counted as messages (%d)", i);
	if (c->mode == COOP_XFER_ENGINE || c->ratio == 1) {
		uint64_t eng = c->mode == COOP_XFER_ENGINE ? all : half;

		T_ASSERT(stats.offload_bytes == eng, "engine %llu, want %llu",
			 (unsigned long long)stats.offload_bytes,
			 (unsigned long long)eng);
		/* no calibration copy: the load counters saw the CPU's part */
		T_ASSERT(load.total_bytes == all - eng,
			 "load counters: %llu, want %llu",
			 (unsigned long long)load.total_bytes,
			 (unsigned long long)(all - eng));
	}
	if (c->ratio == 0)
		T_ASSERT(!stats.offload_bytes, "R = 0: the CPU copies all");
}

/* Rank 1 offers its region (filled with ENG_OLD), rank 0 writes every
 * size into it; rank 1 checks every byte. */
static int eng_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	struct eng_outcome *o = arg;
	size_t reg = eng_off(NENG) + 16;
	struct ctl c = { .slot = COOP_XFER_NO_SLOT };
	char *region = NULL, *base[NENG], *src[NENG];
	long bad;
	int i;

	(void)size;
	if (rank == 1) {
		region = malloc(reg);
		memset(region, ENG_OLD, reg);
		T_OK(coop_mem_reg(ctx, region, reg, COOP_ACCESS_WRITE, &c.key));
		ctl_send(ctx, 0, &c);
		ctl_recv(ctx, 0, &c);	/* done */
		T_OK(coop_mem_dereg(ctx, &c.key));
		if (!o->engine) {	/* only the CPU's 4 KiB at 5 */
			T_ASSERT(t_check(region + 5, 4096, 42) < 0,
				 "the CPU's PUT");
			memset(region + 5, ENG_OLD, 4096);
		}
		for (i = 0; o->engine && i < NENG; i++) {
			bad = t_check(region + eng_off(i), eng_sizes[i],
				      (uint32_t)(i + 1));
			T_ASSERT(bad < 0, "size %zu: byte %ld differs",
				 eng_sizes[i], bad);
		}
		for (i = 0; i <= NENG; i++) {	/* the gaps, the ends */
			size_t from = i ? eng_off(i) - ENG_GAP : 0;
			size_t to = i < NENG ? eng_off(i) : reg, k;

			for (k = from; k < to; k++)
				T_ASSERT((unsigned char)region[k] == ENG_OLD,
					 "byte %zu outside the ranges: %#x", k,
					 (unsigned char)region[k]);
		}
		free(region);
		return 0;
	}
	for (i = 0; i < NENG; i++) {
		base[i] = malloc(eng_sizes[i] + 2);
		src[i] = base[i] + 1 + i % 2;	/* unaligned */
		t_fill(src[i], eng_sizes[i], (uint32_t)(i + 1));
	}
	ctl_recv(ctx, 1, &c);
	if (o->engine) {
		eng_put(ctx, o, src, &c.key);
	} else {
		t_fill(src[NENG - 1], 4096, 42);
		eng_refused(ctx, src[NENG - 1], &c.key);
	}
	ctl_send(ctx, 1, &c);
	for (i = 0; i < NENG; i++)
		free(base[i]);
	return 0;
}

static const char *const env_ratio1[] = { "COOP_STRIPE_RATIO=1", NULL };
static const char *const env_ratio0[] = { "COOP_STRIPE_RATIO=0", NULL };

static const struct eng_case eng_cases[] = {
	{ "ENGINE", NULL, COOP_XFER_ENGINE, -1 },
	{ "STRIPE, R = 1", env_ratio1, COOP_XFER_STRIPE, 1 },
	{ "STRIPE, R measured", NULL, COOP_XFER_STRIPE, -1 },
	{ "STRIPE, R = 0", env_ratio0, COOP_XFER_STRIPE, 0 },
};
#define NENG_CASES (int)(sizeof(eng_cases) / sizeof(eng_cases[0]))

START_TEST(test_xfer_engine)
{
	struct eng_outcome *o = shared_alloc(sizeof(*o));
	const struct eng_case *c = &eng_cases[_i];
	uint64_t before = 0, after;
	int jobs = NENG - 1;	/* not the empty one */

	o->c = c;
	o->engine = t_engine_present();
	fprintf(stderr, "xfer: %s, %s\n", c->name,
		o->engine ? "offload engine" : "no engine: refused");
	if (o->engine)
		before = t_engine_done();
	ck_assert_int_eq(run_ranks(2, c->env, eng_rank, o, 120, NULL), 0);
	if (o->engine && c->ratio != 0) {	/* R = 0: the CPU alone */
		after = t_engine_done();
		ck_assert_msg(before != UINT64_MAX && after - before >=
			      (uint64_t)jobs, "the engine's work grew by %llu, "
			      "%d jobs", (unsigned long long)(after - before),
			      jobs);
	}
	shared_free(o, sizeof(*o));
}
END_TEST

/*
 * Two ranks confined to one CPU (as a cpuset or taskset does): idle as
 * they are, the writer has no CPU of its own to lend the reader, so the
 * split is the whole message.
 */
static int confined_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	struct ctl c = { .slot = COOP_XFER_NO_SLOT };
	size_t share = 0;

	(void)size;
	(void)arg;
	if (rank == 1) {
		ctl_recv(ctx, 0, &c);	/* alive until rank 0 checked */
		return 0;
	}
	T_OK(coop_xfer_split(ctx, 1, LEN, &share));
	T_ASSERT(share == LEN, "2 ranks on 1 CPU: share %zu of %u", share,
		 LEN);
	ctl_send(ctx, 1, &c);
	return 0;
}

static const struct single_mode get = { COOP_XFER_GET, 0 },
	put = { COOP_XFER_PUT, 0 }, get_now = { COOP_XFER_GET, 1 },
	put_now = { COOP_XFER_PUT, 1 };
static const int writer_present = 0, writer_absent = 1;

static const char *const env_busy_hour[] = { "COOP_LOAD_BUSY_MS=3600000",
					      NULL };

/* Each case: two ranks running fn(arg), with env. */
static const struct {
	rank_fn fn;
	const void *arg;
	const char *const *env;
} cases[] = {
	{ single_rank, &get, NULL },
	{ single_rank, &put, NULL },
	{ single_rank, &get_now, NULL },
	{ single_rank, &put_now, NULL },
	{ cooperative_rank, &writer_present, NULL },
	{ cooperative_rank, &writer_absent, NULL },
	{ busy_peer_rank, NULL, env_busy_hour },
	{ exchange_rank, NULL, env_busy_hour },
	{ args_rank, NULL, NULL },
	{ addr_keys_rank, NULL, NULL },
};

/* Each case: three ranks running fn, the dynamic domain their own. */
static const struct {
	rank_fn fn;
	int ranks;
} dynamic_cases[] = {
	{ dynamic_files_rank, 3 },
	{ dynamic_reuse_rank, 1 },
	{ dynamic_reconnect_rank, 1 },
	{ dynamic_churn_rank, 3 },
	{ dynamic_killed_rank, 1 },
};

START_TEST(test_xfer)
{
	ck_assert_int_eq(run_ranks(2, cases[_i].env, cases[_i].fn,
				   (void *)cases[_i].arg, 60, NULL), 0);
}
END_TEST

START_TEST(test_xfer_confined)
{
	cpu_set_t set;

	ck_assert_int_eq(t_pin_first_cpu(&set), 0);
	ck_assert_int_eq(run_ranks(2, NULL, confined_rank, NULL, 60, NULL), 0);
	ck_assert_int_eq(sched_setaffinity(0, sizeof(set), &set), 0);
}
END_TEST

/* COOP_ENGINE=hca: dynamic endpoints are refused (t_hca.c) */
static int dynamic_refused_rank(coop_context_t *ctx, int rank, int size,
				void *arg)
{
	coop_init_params_t p = { .size = sizeof(p),
				 .flags = COOP_INIT_DYNAMIC,
				 .job_key = dyn_key() };
	coop_context_t *d;

	(void)ctx;
	(void)rank;
	(void)size;
	(void)arg;
	T_ASSERT(coop_init(&p, &d) == COOP_ERR_PROVIDER, "dynamic + hca");
	return 0;
}

START_TEST(test_dynamic)
{
	if (t_engine_hca()) {
		ck_assert_int_eq(run_ranks(1, NULL, dynamic_refused_rank, NULL,
					   60, NULL), 0);
		return;
	}
	ck_assert_int_eq(run_ranks(dynamic_cases[_i].ranks, NULL,
				   dynamic_cases[_i].fn, NULL, 60, NULL), 0);
}
END_TEST

TCase *tc_xfer(void)
{
	TCase *tc = tcase_create("xfer");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_xfer, 0,
			    (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, test_xfer_confined);
	tcase_add_loop_test(tc, test_dynamic, 0,
			    (int)(sizeof(dynamic_cases) /
				  sizeof(dynamic_cases[0])));
	tcase_add_loop_test(tc, test_xfer_engine, 0, NENG_CASES);
	return tc;
}
