/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * xfer.c - include/coopmpi_xfer.h: the core's regions, copy jobs, work
 * slots and load counters for MPI implementations with their own
 * matching.  A copy job is a request of kind REQ_XFER whose job's done
 * callback completes it; everything else (chunking, the claim of work
 * slot ranges, load accounting, peer failure) is the core's, the same
 * code the library's own rendezvous protocols run.  PUT jobs with
 * COOP_XFER_ENGINE or COOP_XFER_STRIPE go to the protocol layer's
 * offload engine code instead (protocols/dma.c: coop_dma_put, as a DMA
 * send's copy without its notification; protocols/stripe.c:
 * coop_stripe_put, a striped send's two parts).
 */
#include <string.h>

#include "mpi.h"
#include "coopmpi_xfer.h"
#include "api_int.h"

_Static_assert(sizeof(coop_rkey_t) == sizeof(struct coop_rkey), "rkey");
_Static_assert(COOP_ACCESS_READ == COOPMPI_REGION_READ &&
	       COOP_ACCESS_WRITE == COOPMPI_REGION_WRITE, "access bits");

#define ACCESS_BITS (COOP_ACCESS_READ | COOP_ACCESS_WRITE)
#define DIR_BITS (COOP_XFER_GET | COOP_XFER_PUT)
#define ENGINE_BITS (COOP_XFER_ENGINE | COOP_XFER_STRIPE)

int coop_xfer_check_ctx(const struct coop_context *ctx)
{
	if (!ctx)
		return COOP_ERR_ARG;
	return ctx->connected ? COOP_SUCCESS : COOP_ERR_STATE;
}

int coop_xfer_check_peer(const struct coop_context *ctx, int peer)
{
	int rc = coop_xfer_check_ctx(ctx);

	if (rc)
		return rc;
	if (peer < 0 || peer >= ctx->size)
		return COOP_ERR_RANK;
	return ctx->peers[peer].connected ? COOP_SUCCESS : COOP_ERR_STATE;
}

static int mem_reg_locked(coop_context_t *ctx, void *addr, size_t len,
			  unsigned access, coop_rkey_t *key)
{
	struct coop_rkey k;
	int rc = coop_xfer_check_ctx(ctx);

	if (rc)
		return rc;
	if (!addr || !len || !key || !access || (access & ~ACCESS_BITS))
		return COOP_ERR_ARG;
	rc = ctx->prov.ops->reg(&ctx->prov, addr, len, access, &k);
	if (rc)
		return coop_err_from_errno(rc);
	memcpy(key, &k, sizeof(k));
	return COOP_SUCCESS;
}

int coop_mem_reg(coop_context_t *ctx, void *addr, size_t len,
		 unsigned access, coop_rkey_t *key)
{
	COOP_LOCKED(ctx, mem_reg_locked(ctx, addr, len, access, key));
}

static int mem_dereg_locked(coop_context_t *ctx, const coop_rkey_t *key)
{
	struct coop_rkey k;

	if (!ctx || !key)
		return COOP_ERR_ARG;
	memcpy(&k, key, sizeof(k));
	return ctx->prov.ops->dereg(&ctx->prov, &k) ? COOP_ERR_PROVIDER :
						       COOP_SUCCESS;
}

int coop_mem_dereg(coop_context_t *ctx, const coop_rkey_t *key)
{
	COOP_LOCKED(ctx, mem_dereg_locked(ctx, key));
}

/* Our slot shared with peer, busy: its index is trusted from now on. */
static int own_slot_ok(const struct coop_context *ctx, int peer,
		       uint32_t slot)
{
	return slot < ctx->seg.nwork && ctx->seg.work_peer[slot] == peer;
}

/* The work slot p names, of the length p moves; NULL if there is none. */
static struct coop_work_slot *slot_of(struct coop_context *ctx,
				      const coop_xfer_params_t *p)
{
	int get = (p->flags & DIR_BITS) == COOP_XFER_GET;
	const struct coop_seg *seg = get ? &ctx->seg : &ctx->peers[p->peer].seg;
	struct coop_work_slot *w;

	if (get && !own_slot_ok(ctx, p->peer, p->slot))
		return NULL;
	if (!seg->hdr || p->slot >= seg->nwork)
		return NULL;
	w = &seg->work[p->slot];
	return w->len == p->len ? w : NULL;
}

static int check_params(struct coop_context *ctx, const coop_xfer_params_t *p)
{
	unsigned i, dir, engine;
	int rc;

	if (!p || p->size != sizeof(*p))
		return COOP_ERR_ARG;
	rc = coop_xfer_check_peer(ctx, p->peer);
	if (rc)
		return rc;
	for (i = 0; i < sizeof(p->reserved) / sizeof(p->reserved[0]); i++)
		if (p->reserved[i])
			return COOP_ERR_ARG;
	dir = p->flags & DIR_BITS;
	engine = p->flags & ENGINE_BITS;
	if ((p->flags & ~(DIR_BITS | ENGINE_BITS)) ||
	    (dir != COOP_XFER_GET && dir != COOP_XFER_PUT) ||
	    engine == ENGINE_BITS ||
	    (engine && p->slot != COOP_XFER_NO_SLOT) ||
	    (p->len && !p->local) || p->offset > p->key.length ||
	    p->len > p->key.length - p->offset)
		return COOP_ERR_ARG;
	if (p->slot != COOP_XFER_NO_SLOT && !slot_of(ctx, p))
		return COOP_ERR_ARG;
	/* the engine only writes into peers' regions */
	if (engine && (dir == COOP_XFER_GET || !coop_dma_open(ctx, NULL)))
		return COOP_ERR_UNSUPPORTED;
	return ctx->peers[p->peer].dead ? COOP_ERR_PEER_DEAD : COOP_SUCCESS;
}

static void xfer_done(struct coop_job *j)
{
	struct coop_request *r = j->req;

	coop_req_set_error(r, j->err);
	r->status.count = j->done;
	coop_req_event(r, EV_LOCAL);
}

static const struct coop_job_ops xfer_ops = { .done = xfer_done };

/* The copy job of p: its key copied to *key. */
static void job_args(const coop_xfer_params_t *p, struct coop_rkey *key,
		     struct coop_job_args *a)
{
	memcpy(key, &p->key, sizeof(*key));
	a->kind = (p->flags & DIR_BITS) == COOP_XFER_GET ? JOB_READ : JOB_WRITE;
	a->peer = p->peer;
	a->local = p->local;
	a->key = key;
	a->roff = p->offset;
	a->len = p->len;
}

static int xfer_start_locked(coop_context_t *ctx, const coop_xfer_params_t *p,
			     coop_request_t **req)
{
	struct coop_job_args a = { .ops = &xfer_ops };
	struct coop_request *r;
	struct coop_rkey key;
	int rc = check_params(ctx, p);

	if (rc || !req)
		return rc ? rc : COOP_ERR_ARG;
	r = coop_req_new(ctx, REQ_XFER);
	if (!r)
		return COOP_ERR_NOMEM;
	r->msg.peer = p->peer;
	r->msg.buf = p->local;
	r->msg.len = p->len;
	coop_req_activate(r);
	memcpy(&key, &p->key, sizeof(key));
	*req = r;
	if (p->flags & ENGINE_BITS) {	/* r->proto: DMA or STRIPE */
		r->pending |= EV_LOCAL;
		if (p->flags & COOP_XFER_ENGINE)
			coop_dma_put(r, &key, p->offset, &xfer_ops);
		else
			coop_stripe_put(r, &key, p->offset);
		return COOP_SUCCESS;
	}
	job_args(p, &key, &a);
	if (p->slot != COOP_XFER_NO_SLOT) {
		a.shared = slot_of(ctx, p);
		a.chunk = a.shared->chunk;
	}
	r->pending |= EV_LOCAL;
	coop_job_start(r, &a);
	if (a.kind == JOB_READ && a.shared)
		r->job.own_slot = (int)p->slot;	/* its reference */
	return COOP_SUCCESS;
}

int coop_xfer_start(coop_context_t *ctx, const coop_xfer_params_t *p,
		    coop_request_t **req)
{
	COOP_LOCKED(ctx, xfer_start_locked(ctx, p, req));
}

static int xfer_copy_locked(coop_context_t *ctx, const coop_xfer_params_t *p)
{
	struct coop_job_args a = { 0 };
	struct coop_rkey key;
	int rc;

	/* the CPU copies it all, now */
	if (p && ((p->flags & ENGINE_BITS) || p->slot != COOP_XFER_NO_SLOT))
		return COOP_ERR_ARG;
	rc = check_params(ctx, p);
	if (rc)
		return rc;
	if (!p->len)
		return COOP_SUCCESS;
	job_args(p, &key, &a);
	return coop_job_copy_now(ctx, &a);
}

int coop_xfer_copy(coop_context_t *ctx, const coop_xfer_params_t *p)
{
	COOP_LOCKED(ctx, xfer_copy_locked(ctx, p));
}

int coop_xfer_engine(coop_context_t *ctx, const char **name)
{
	return ctx && ctx->proto && coop_dma_open(ctx, name);
}

int coop_xfer_addr_keys(const coop_context_t *ctx)
{
	return ctx && (ctx->prov.caps & COOP_PROV_CAP_ADDR_KEYS);
}

static int xfer_slot_alloc_locked(coop_context_t *ctx, int peer, size_t len,
				  size_t split, uint32_t *slot)
{
	int rc = coop_xfer_check_peer(ctx, peer), s;

	if (rc)
		return rc;
	if (!slot || !len || split > len)
		return COOP_ERR_ARG;
	s = coop_seg_work_alloc(&ctx->seg, len, coop_job_shared_chunk(ctx, len),
				split, peer);
	if (s < 0)
		return COOP_ERR_NOMEM;
	*slot = (uint32_t)s;
	return COOP_SUCCESS;
}

int coop_xfer_slot_alloc(coop_context_t *ctx, int peer, size_t len,
			 size_t split, uint32_t *slot)
{
	COOP_LOCKED(ctx, xfer_slot_alloc_locked(ctx, peer, len, split, slot));
}

static int xfer_slot_release_locked(coop_context_t *ctx, int peer,
				    uint32_t slot)
{
	int rc = coop_xfer_check_peer(ctx, peer);

	if (rc)
		return rc;
	if (!own_slot_ok(ctx, peer, slot))
		return COOP_ERR_ARG;
	coop_seg_work_put(&ctx->seg, slot, peer);
	return COOP_SUCCESS;
}

int coop_xfer_slot_release(coop_context_t *ctx, int peer, uint32_t slot)
{
	COOP_LOCKED(ctx, xfer_slot_release_locked(ctx, peer, slot));
}

static int xfer_busy_locked(coop_context_t *ctx, int rank, int *busy)
{
	int rc = coop_xfer_check_peer(ctx, rank);

	if (rc)
		return rc;
	if (!busy)
		return COOP_ERR_ARG;
	*busy = coop_load_peer_copying(ctx, rank, coop_now_ns());
	return COOP_SUCCESS;
}

int coop_xfer_busy(coop_context_t *ctx, int rank, int *busy)
{
	COOP_LOCKED(ctx, xfer_busy_locked(ctx, rank, busy));
}

static int xfer_split_locked(coop_context_t *ctx, int peer, size_t len,
			     size_t *share)
{
	uint64_t now = coop_now_ns(), ls;
	int rc = coop_xfer_check_peer(ctx, peer);

	if (rc)
		return rc;
	if (!share)
		return COOP_ERR_ARG;
	/* the peer has no CPU to lend: we copy it all (more ranks than
	 * CPUs: a helper would take the CPU of a rank that waits for it) */
	if (!ctx->undersubscribed || coop_load_peer_copying(ctx, peer, now)) {
		*share = len;
		return COOP_SUCCESS;
	}
	ls = coop_load_score(ctx, peer, now);
	*share = (size_t)coop_select_clamp_split(
		coop_select_level_share(ls, coop_load_score(ctx, ctx->rank, now),
				      len), len);
	return COOP_SUCCESS;
}

int coop_xfer_split(coop_context_t *ctx, int peer, size_t len, size_t *share)
{
	COOP_LOCKED(ctx, xfer_split_locked(ctx, peer, len, share));
}
