/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * context.c - the core's part of a context's life: configuration, pools,
 * peers, the provider and our shared segment at init; connecting and
 * mapping each peer; the clean good-bye (PKT_BYE, after all our packets:
 * the rings are FIFO) and the teardown.  api/ctx.c runs the layers' parts
 * in order.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"
#include "guard.h"

#define REQ_PREALLOC 1024
#define REQ_MAX (1u << 20)
#define PKT_MAX (1u << 24)
#define WORK_SLOTS 256
#define MIN_BOUNCE 65536

static int init_pools(struct coop_context *ctx)
{
	if (coop_pool_init(&ctx->reqs, sizeof(struct coop_request),
			   REQ_PREALLOC, REQ_MAX) ||
	    coop_pool_init(&ctx->pkts, sizeof(struct coop_pkt_node), 256,
			   PKT_MAX))
		return COOP_ERR_NOMEM;
	return COOP_SUCCESS;
}

static int init_peers(struct coop_context *ctx)
{
	int i;

	ctx->peers = calloc((size_t)ctx->size, sizeof(*ctx->peers));
	if (!ctx->peers)
		return COOP_ERR_NOMEM;
	for (i = 0; i < ctx->size; i++)
		dlist_init(&ctx->peers[i].backlog);
	return COOP_SUCCESS;
}

/* Our endpoint; a dynamic one learns its rank and the domain's size. */
static int open_provider(struct coop_context *ctx, int dynamic)
{
	struct coop_config *cfg = &ctx->cfg;

	ctx->prov.rank = ctx->rank;
	ctx->prov.nranks = ctx->size;
	ctx->prov.flags = (cfg->cma_off ? COOP_PROV_NO_COPY : 0) |
			  (dynamic ? COOP_PROV_DYNAMIC : 0) |
			  (cfg->windows ? COOP_PROV_WINDOWS : 0);
	ctx->prov.ring_slots = cfg->ring_slots;
	ctx->prov.fbox_slots = cfg->fbox_slots;
	ctx->prov.fbox_senders = cfg->fbox_senders;
	ctx->prov.verbose = cfg->verbose;
	ctx->prov.warn_fallback = cfg->warn_fallback;
	ctx->prov.engine_want = (unsigned)cfg->engine;
	ctx->prov.hca_device = cfg->hca_device[0] ? cfg->hca_device : NULL;
	ctx->prov.hca_gid = cfg->hca_gid == COOP_GID_AUTO ? -1 :
						     (int)cfg->hca_gid;
	ctx->prov.hca_mr_cache = cfg->hca_mr_cache;
	if (coop_provider_open(&ctx->prov, coop_config_provider(cfg),
			       ctx->key))
		return COOP_ERR_PROVIDER;
	ctx->rank = ctx->prov.rank;
	ctx->size = ctx->prov.nranks;
	return COOP_SUCCESS;
}

static int init_segment(struct coop_context *ctx)
{
	struct coop_config *cfg = &ctx->cfg;
	size_t bsize = COOP_MAX(cfg->eager_max, MIN_BOUNCE);
	int rc;

	rc = coop_seg_create(&ctx->seg, ctx->key, ctx->rank,
			     cfg->bounce_slots, bsize, WORK_SLOTS);
	if (rc) {
		coop_log(ctx->rank, "cannot create shared segment: %s",
			 strerror(-rc));
		return COOP_ERR_NOMEM;
	}
	ctx->bslot_peer = calloc(cfg->bounce_slots, sizeof(uint16_t));
	ctx->bslot_user = calloc(cfg->bounce_slots, 1);
	if (!ctx->bslot_peer || !ctx->bslot_user)
		return COOP_ERR_NOMEM;
	return COOP_SUCCESS;
}

/*
 * Our endpoint, its peers' table and its segment.  A dynamic endpoint
 * joins under the domain's lock: the last one out reaps the domain's
 * files when no segment has a live owner, which a joining endpoint
 * without its segment yet would not have.
 */
static int open_endpoint(struct coop_context *ctx, int dynamic)
{
	int lock = -1, rc;

	if (dynamic) {
		lock = coop_seg_domain_lock(ctx->key);
		if (lock >= 0)
			ctx->live_fd = coop_guard_join(ctx->key);
		if (lock < 0 || ctx->live_fd < 0) {
			coop_log(ctx->rank, "cannot join the node domain: %s",
				 strerror(lock < 0 ? -lock : -ctx->live_fd));
			if (lock >= 0)
				close(lock);
			return COOP_ERR_PROVIDER;
		}
	}
	rc = open_provider(ctx, dynamic);
	if (!rc)
		rc = init_peers(ctx);
	if (!rc)
		rc = coop_regcache_init(ctx);
	if (!rc)
		rc = coop_windows_init(ctx);
	if (!rc)
		rc = init_segment(ctx);
	if (lock >= 0)
		close(lock);
	return rc;
}

static void init_static_req(struct coop_context *ctx)
{
	struct coop_request *r = &ctx->done_req;

	r->ctx = ctx;
	r->complete = 1;
	r->kind = REQ_SEND;
	dlist_init(&r->alink);
	dlist_init(&r->job.link);
}

static void on_bye(struct coop_context *ctx, const union coop_pkt *p)
{
	ctx->peers[p->h.src].said_bye = 1;
}

int coop_core_init(struct coop_context *ctx, int dynamic)
{
	int rc = coop_lock_init(ctx);

	ctx->live_fd = -1;
	if (rc)
		return rc;
	dlist_init(&ctx->jobs);
	dlist_init(&ctx->inflight);
	init_static_req(ctx);
	coop_am_register(ctx, PKT_BYE, on_bye);
	coop_async_init(ctx);
	rc = coop_config_load(&ctx->cfg);
	coop_config_warn_env(&ctx->cfg);
	if (!rc)
		rc = init_pools(ctx);
	if (!rc)
		rc = open_endpoint(ctx, dynamic);
	return rc;
}

/*
 * No more ranks than CPUs: a waiting rank's CPU is free to help
 * (COOP-hybrid) and may spin.  The CPUs are those the ranks may run on
 * together, not the node's: a job confined to a cpuset (or ranks bound
 * by taskset) shares fewer (2 ranks bound to one CPU, 8 B exchange:
 * 5.4 us per call counting 2 CPUs, 1.6 counting 1).
 */
static void count_cpus(struct coop_context *ctx,
		       const struct coop_seg_hdr *h)
{
	unsigned i, n = 0;

	for (i = 0; i < COOP_SEG_CPU_WORDS; i++) {
		ctx->node_cpus[i] |= __atomic_load_n(&h->cpus[i],
						     __ATOMIC_RELAXED);
		n += (unsigned)__builtin_popcountll(ctx->node_cpus[i]);
	}
	ctx->undersubscribed = ctx->nconnected <= (int)n;
}

int coop_core_connect_peer(struct coop_context *ctx, int r, const void *blob,
			   size_t len)
{
	struct coop_peer *pe = &ctx->peers[r];
	int rc;

	rc = ctx->prov.ops->connect(&ctx->prov, r, blob, len);
	if (rc) {
		coop_log(ctx->rank, "cannot connect rank %d: %s", r,
			 strerror(-rc));
		return COOP_ERR_PROVIDER;
	}
	if (r == ctx->rank) {
		pe->seg = ctx->seg;	/* shared view, not owned */
	} else {
		rc = coop_seg_map(&pe->seg, ctx->key, r);
		if (rc) {
			coop_log(ctx->rank, "cannot map segment of rank %d: %s",
				 r, strerror(-rc));
			return COOP_ERR_PROVIDER;
		}
	}
	pe->copy_ok = ctx->prov.ops->copy_ok(&ctx->prov, r);
	pe->connected = 1;
	ctx->nconnected++;
	count_cpus(ctx, pe->seg.hdr);
	return COOP_SUCCESS;
}

void coop_core_disconnect_peer(struct coop_context *ctx, int r)
{
	struct coop_peer *pe = &ctx->peers[r];

	coop_peer_gone_now(ctx, r);
	ctx->prov.ops->disconnect(&ctx->prov, r);
	coop_seg_unmap(&pe->seg);
	memset(pe, 0, sizeof(*pe));
	dlist_init(&pe->backlog);
	ctx->nconnected--;
}

void coop_core_connected(struct coop_context *ctx)
{
	/* Only now: kmod finds a rank's slot (ours too) by its connection. */
	ctx->load = ctx->prov.ops->load_slot(&ctx->prov, ctx->rank);
	if (!ctx->load)
		coop_log(ctx->rank, "no load counters: copies are not "
			 "accounted");
	ctx->connected = 1;
}

void coop_core_say_bye(struct coop_context *ctx)
{
	union coop_pkt pkt;
	int p;

	coop_flush_backlog(ctx);
	for (p = 0; p < ctx->size; p++) {
		if (p == ctx->rank || ctx->peers[p].dead ||
		    !ctx->peers[p].connected)
			continue;
		coop_hdr_init(ctx, &pkt.h, PKT_BYE, 0, 0);
		coop_send_pkt(ctx, p, &pkt);
	}
	coop_flush_backlog(ctx);
}

void coop_core_fini(struct coop_context *ctx)
{
	int i, lock = ctx->dynamic ? coop_seg_domain_lock(ctx->key) : -1;

	for (i = 0; ctx->peers && i < ctx->size; i++)
		if (i != ctx->rank)
			coop_seg_unmap(&ctx->peers[i].seg);
	if (ctx->seg.base)
		coop_seg_destroy(&ctx->seg);
	if (ctx->prov.ops) {
		coop_windows_fini(ctx);
		coop_regcache_fini(ctx);
		ctx->prov.ops->close(&ctx->prov);
	}
	/* a dynamic domain's last endpoint out also removes what the dead
	 * ones left (the static job's launcher does it for its ranks) */
	if (lock >= 0) {
		coop_seg_reap_locked(ctx->key);
		close(lock);
	}
	if (ctx->live_fd >= 0)
		close(ctx->live_fd);	/* the guard may look now */
	coop_pool_destroy(&ctx->reqs);
	coop_pool_destroy(&ctx->pkts);
	free(ctx->bslot_peer);
	free(ctx->bslot_user);
	free(ctx->peers);
	coop_lock_fini(ctx);
}
