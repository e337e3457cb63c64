/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * job.c - copy jobs: the data movement of the rendezvous protocols.
 *
 * A job copies len bytes between a local buffer and a peer's region in
 * chunks, one chunk per progress step, so control packets from every peer
 * keep flowing during large copies (COOP-chunked; COOP_CHUNK bounds the
 * copy done without looking at the mailbox).  A single-sided job (RGET,
 * RPUT, RTR, pipeline) claims chunks from a private cursor; a cooperative
 * one (COOP-p2p) from the two ranges of the shared work slot, its own
 * range first, then the partner's (claim_range), so a side that falls
 * behind is helped; both add what they copied to the slot's done counter,
 * and each side's job ends when done reaches the length: neither needs
 * the other's FIN (nor its progress) to complete.  A job that ends calls
 * its owner's done callback (struct coop_job_ops): the core does not
 * know what a protocol does next.
 *
 * Load counters (COOP-load's input): a job charges its expected share
 * (single-sided: everything; cooperative: its own range) to this rank's
 * pending_bytes when it starts - unless the receiver charged it already
 * when it chose the protocol (r->precharged), so that decisions taken
 * meanwhile see it - and discharges it as its chunks are copied; the rest
 * leaves when the job ends.  total_* only grow: one op per job here,
 * unless the provider's copy() charges them itself (kmod: one op per COPY
 * ioctl), which adding here would count twice - but a chunk that went
 * through a window (window.c) instead is counted here, one op each.  Every copied byte also
 * enters the rank's decayed copy history (load.c).
 */
#include <string.h>
#include <sys/uio.h>

#include "core.h"

#define ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define SUB(p, v) __atomic_fetch_sub((p), (v), __ATOMIC_RELAXED)

/*
 * Copy granularity (COOP-chunked): the progress engine looks at the
 * mailbox between chunks, so COOP_CHUNK bounds how long a control message
 * from any peer waits behind a copy.  A single-sided copy takes chunks of
 * COOP_CHUNK; COOP-p2p about an eighth of the message (at least 128 KiB,
 * at most COOP_CHUNK) so the split stays fine enough for one side to help
 * the other, while big chunks cost fewer system calls and page-pinning
 * rounds.
 */
#define COOP_CHUNK_PARTS 8
#define COOP_CHUNK_FLOOR (128u << 10)

uint64_t coop_job_shared_chunk(const struct coop_context *ctx, uint64_t len)
{
	uint64_t c = ((len / COOP_CHUNK_PARTS) + 4095) & ~(uint64_t)4095;
	uint64_t floor = COOP_MIN((uint64_t)COOP_CHUNK_FLOOR, ctx->cfg.chunk);

	return COOP_MIN(COOP_MAX(c, floor), (uint64_t)ctx->cfg.chunk);
}

/* A copy for a transfer of our own, not the writer's part of a peer's
 * cooperative read (core/load.c: own copies). */
static int job_is_own(const struct coop_job *j)
{
	return !j->shared || !j->side;
}

/* Our expected share of the bytes: what we charge to our pending load. */
static uint64_t job_share(const struct coop_job *j)
{
	if (!j->shared)
		return j->len;
	return j->side ? j->len - j->shared->split : j->shared->split;
}

/* A job begins: it counts in our pending load (its bytes, unless the
 * request charged them before) and, if it is our own, in own copies. */
static void job_load_enter(struct coop_context *ctx, const struct coop_job *j,
			   int precharged)
{
	if (job_is_own(j))
		coop_load_own_copy_start(ctx, j->peer);
	if (ctx->load) {
		ADD(&ctx->load->pending_ops, 1);
		if (!precharged)
			ADD(&ctx->load->pending_bytes, j->charge);
	}
}

static void job_init(struct coop_context *ctx, struct coop_job *j,
		     const struct coop_job_args *a)
{
	memset(j, 0, sizeof(*j));
	j->ops = a->ops;
	j->kind = (uint8_t)a->kind;
	j->peer = a->peer;
	j->local = a->local;
	if (a->key)
		j->key = *a->key;
	j->roff = a->roff;
	j->len = a->len;
	j->shared = a->shared;
	j->side = a->kind == JOB_WRITE;
	j->own_slot = -1;
	j->chunk = a->chunk ? a->chunk : ctx->cfg.chunk;
	j->charge = job_share(j);
}

void coop_job_start(struct coop_request *r, const struct coop_job_args *a)
{
	struct coop_context *ctx = r->ctx;
	struct coop_job *j = &r->job;

	job_init(ctx, j, a);
	j->req = r;
	j->help_only = a->shared && !j->charge;
	job_load_enter(ctx, j, r->rndv.precharged);
	j->queued = 1;
	dlist_add_tail(&ctx->jobs, &j->link);
	coop_async_kick(ctx);
}

/* n bytes of ours are copied: they leave the pending load. */
static void job_discharge(struct coop_context *ctx, struct coop_job *j,
			  uint64_t n)
{
	n = COOP_MIN(n, j->charge);
	j->charge -= n;
	if (ctx->load && n)
		SUB(&ctx->load->pending_bytes, n);
}

/* Must we add this job's copies to total_*?  Not when the provider's
 * copy() does; bounce pushes never go through it. */
static int job_counts_totals(const struct coop_context *ctx, int kind)
{
	return kind == JOB_PUSH ||
	       !(ctx->prov.caps & COOP_PROV_CAP_KERNEL_TOTALS);
}

/* A job ends: what job_load_enter() counted goes. */
static void job_load_leave(struct coop_context *ctx, struct coop_job *j)
{
	job_discharge(ctx, j, j->charge);
	if (job_is_own(j))
		coop_load_own_copy_end(ctx, j->peer);
	if (ctx->load) {
		SUB(&ctx->load->pending_ops, 1);
		if (job_counts_totals(ctx, j->kind))
			ADD(&ctx->load->total_ops, 1);
	}
}

static void job_unqueue(struct coop_job *j)
{
	struct coop_context *ctx;

	if (!j->queued)
		return;		/* never started (j->req unset), or ended */
	ctx = j->req->ctx;
	j->queued = 0;
	dlist_del(&j->link);
	if (j->shared && j->own_slot >= 0)	/* our use of our slot ends */
		coop_seg_work_put(&ctx->seg, (uint32_t)j->own_slot, j->peer);
	job_load_leave(ctx, j);
}

void coop_job_cancel(struct coop_job *j)
{
	job_unqueue(j);
}

static void job_finish(struct coop_job *j)
{
	job_unqueue(j);
	j->ops->done(j);
}

int coop_job_try_finish(struct coop_job *j)
{
	if (!j->queued || !j->shared ||
	    __atomic_load_n(&j->shared->done, __ATOMIC_ACQUIRE) < j->len)
		return 0;
	job_finish(j);
	return 1;
}

/* Claim a chunk of one range of a cooperative transfer (side 0: the
 * receiver's, 1: the sender's): its offset, or UINT64_MAX. */
static uint64_t claim_range(struct coop_job *j, int side, uint64_t *n)
{
	struct coop_work_slot *w = j->shared;
	uint64_t *cursor = side ? &w->snext : &w->next;
	/* the slot is shared memory: never past our own length (read once:
	 * COOP_MIN would read it again after comparing) */
	uint64_t end = __atomic_load_n(side ? &w->len : &w->split,
				       __ATOMIC_RELAXED), off;

	end = COOP_MIN(end, j->len);

	/* a finished range's cursor is not pushed further on every poll */
	if (__atomic_load_n(cursor, __ATOMIC_RELAXED) >= end)
		return UINT64_MAX;
	off = __atomic_fetch_add(cursor, j->chunk, __ATOMIC_RELAXED);
	if (off >= end)
		return UINT64_MAX;
	*n = COOP_MIN(j->chunk, end - off);
	return off;
}

/* Claim the next chunk: its offset, or UINT64_MAX when none is to be
 * had.  Cooperative jobs take their own range first, then help with the
 * partner's (a help_only job only when may_help). */
static uint64_t job_claim(struct coop_job *j, uint64_t *n, int may_help)
{
	uint64_t off;

	if (j->shared) {
		off = claim_range(j, j->side, n);
		if (off != UINT64_MAX || (j->help_only && !may_help))
			return off;
		return claim_range(j, !j->side, n);
	}
	off = j->cursor;
	if (off >= j->len)
		return UINT64_MAX;
	j->cursor = off + j->chunk;
	*n = COOP_MIN(j->chunk, j->len - off);
	return off;
}

/* Which way a READ or WRITE job's bytes go. */
static enum coop_copy_dir job_dir(int kind)
{
	return kind == JOB_READ ? COOP_COPY_FROM_PEER : COOP_COPY_TO_PEER;
}

/* Copy [off, off + n) of j with the state lock let go (other threads
 * copy other chunks meanwhile): the provider's result. */
static ssize_t job_copy(struct coop_context *ctx, struct coop_job *j,
			uint64_t off, uint64_t n)
{
	enum coop_copy_dir dir = job_dir(j->kind);
	uint64_t t0 = coop_now_ns(), t1;
	ssize_t rc;

	j->copying = 1;
	j->by_window = coop_copy_chunk(ctx, j->peer, &j->key, j->roff + off,
				       j->local + off, n, dir, 1, &rc) ==
		       COPY_BY_WINDOW;
	j->copying = 0;
	j->windowed |= j->by_window;
	t1 = coop_now_ns();
	ctx->stats.copy_ns += t1 - t0;
	coop_load_history_add(ctx, rc < 0 ? 0 : n, t1);
	return rc;
}

/* JOB_PUSH: one fragment by the owner's push callback. */
static int job_push(struct coop_context *ctx, struct coop_job *j)
{
	uint64_t n = COOP_MIN(j->chunk, j->len - COOP_MIN(j->cursor, j->len));
	int rc;

	if (j->cursor >= j->len) {
		job_finish(j);
		return 1;
	}
	rc = j->ops->push(j, j->cursor, n);
	if (rc < 0)
		return 0;	/* no room now: retry later */
	j->cursor += n;
	j->done += n;
	job_discharge(ctx, j, n);
	if (rc) {
		j->err = rc;
		job_finish(j);
	}
	return 1;
}

/* A chunk of n bytes copied with peer (the provider's result rc; through
 * a window: by_window) in the totals (when ours to count) and the
 * statistics: its error, COOP_SUCCESS if none. */
static int chunk_count(struct coop_context *ctx, int peer, uint64_t n,
		       ssize_t rc, int by_window, int totals)
{
	if (rc == -ESRCH || rc == -EPIPE)
		coop_peer_failed(ctx, peer);
	if (ctx->load && (totals || by_window))
		ADD(&ctx->load->total_bytes, n);
	/* a window's chunk instead of the driver's COPY, which counts one */
	if (ctx->load && by_window && !totals)
		ADD(&ctx->load->total_ops, 1);
	ctx->stats.copy_bytes += n;
	if (by_window)
		ctx->stats.window_bytes += n;
	return rc < 0 ? coop_err_from_errno((int)rc) : COOP_SUCCESS;
}

/* A copied chunk of n bytes of j (provider result rc) in the counters:
 * its error, COOP_SUCCESS if none. */
static int job_count(struct coop_context *ctx, struct coop_job *j,
		     uint64_t n, ssize_t rc)
{
	job_discharge(ctx, j, n);
	if (!j->done)
		ctx->stats.copy_jobs++;
	j->done += n;
	return chunk_count(ctx, j->peer, n, rc, j->by_window,
			   job_counts_totals(ctx, j->kind));
}

/* What a copied chunk of n bytes (provider result rc) counts for. */
static void job_account(struct coop_context *ctx, struct coop_job *j,
			uint64_t n, ssize_t rc)
{
	int err = job_count(ctx, j, n, rc);

	if (err) {
		j->err = err;
		job_finish(j);
	} else if (j->shared) {
		__atomic_fetch_add(&j->shared->done, n, __ATOMIC_RELEASE);
	}
}

/*
 * A window outlives its owner (the pages stay while mapped), and only a
 * driver marks it dead then: a job that copied through one succeeds only
 * if its peer was alive after the last byte.  A cooperative job ends
 * when all bytes are in, whoever copied them: its partner may be gone
 * by then, legitimately.
 */
static int window_owner_gone(struct coop_context *ctx, int peer)
{
	if (ctx->prov.ops->peer_alive(&ctx->prov, peer))
		return 0;
	coop_peer_failed(ctx, peer);
	return 1;
}

static void job_check_owner(struct coop_context *ctx, struct coop_job *j)
{
	if (j->windowed && !j->shared && !j->err &&
	    window_owner_gone(ctx, j->peer))
		j->err = COOP_ERR_PEER_DEAD;
}

/* One chunk of job j: 1 progress made, 0 stalled. */
static int job_run(struct coop_context *ctx, struct coop_job *j,
		   int may_help)
{
	uint64_t n = 0, off;
	ssize_t rc;

	if (j->kind == JOB_PUSH)
		return job_push(ctx, j);
	off = job_claim(j, &n, may_help);
	if (off == UINT64_MAX) {
		/* cooperative: done when the partner's chunks are in too */
		if (j->shared && __atomic_load_n(&j->shared->done,
						 __ATOMIC_ACQUIRE) < j->len)
			return 0;
		job_check_owner(ctx, j);
		job_finish(j);
		return 1;
	}
	rc = job_copy(ctx, j, off, n);
	if (j->queued)
		job_account(ctx, j, n, rc);
	else	/* its request failed while we copied: the slot is gone */
		coop_req_copy_over(j->req);
	return 1;
}

/* One chunk of the first job that can make progress; that job goes to
 * the back, so concurrent jobs take turns and a job that only waits for
 * its partner's chunks (COOP-p2p) notices their end behind a long one.
 * may_help: assisting jobs may take chunks of their partner's range too. */
static int job_pass(struct coop_context *ctx, int may_help)
{
	struct dlist *pos, *tmp;

	dlist_for_each_safe(pos, tmp, &ctx->jobs) {
		struct coop_job *j = container_of(pos, struct coop_job, link);

		if (j->copying)		/* another thread's */
			continue;
		if (job_run(ctx, j, may_help)) {
			if (j->queued) {
				dlist_del(&j->link);
				dlist_add_tail(&ctx->jobs, &j->link);
			}
			return 1;
		}
	}
	return 0;
}

/*
 * A copy in the call (coop_xfer_copy: a message the caller's CPU copies
 * alone, as CMA does) is no job: no other side claims its chunks and no
 * progress step resumes it.  It ends before any peer could weigh it: it
 * counts in the totals, the statistics and (in batches) the copy
 * history, never as pending load or as an own copy in flight, and it is
 * not timed (copy_ns): charging and discharging those shared counters
 * cost the caller more than CMA's whole overhead for the same single
 * copy, and two clock reads and a history update a few per cent of a
 * 16-64 KiB one.
 */
int coop_job_copy_now(struct coop_context *ctx, const struct coop_job_args *a)
{
	enum coop_copy_dir dir = job_dir(a->kind);
	uint64_t chunk = a->chunk ? a->chunk : ctx->cfg.chunk;
	uint64_t done = 0, copied = 0, n;
	int totals = job_counts_totals(ctx, a->kind), windowed = 0;
	int err = COOP_SUCCESS, by_window;
	ssize_t rc;

	if (a->len)
		ctx->stats.copy_jobs++;
	for (; !err && done < a->len; done += n) {
		n = COOP_MIN(chunk, a->len - done);
		by_window = coop_copy_chunk(ctx, a->peer, a->key,
					    a->roff + done, a->local + done,
					    n, dir, 1, &rc) == COPY_BY_WINDOW;
		windowed |= by_window;
		copied += rc < 0 ? 0 : n;
		err = chunk_count(ctx, a->peer, n, rc, by_window, totals);
	}
	coop_load_history_defer(ctx, copied);
	if (!err && windowed && window_owner_gone(ctx, a->peer))
		err = COOP_ERR_PEER_DEAD;
	if (ctx->load && totals)
		ADD(&ctx->load->total_ops, 1);
	return err;
}

int coop_job_step(struct coop_context *ctx)
{
	return job_pass(ctx, 0) || (ctx->blocked && job_pass(ctx, 1));
}
