/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ctx.c - context life cycle: coop_init, coop_address, coop_connect,
 * coop_finalize; context queries (rank, size, provider, load counters).
 *
 * The address blob is a library header (rank, size, configuration hash,
 * provider name) followed by the provider's own blob; coop_connect checks
 * that all ranks agree before connecting anything.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coop_internal.h"

#define BLOB_MAGIC 0x434f4f50U	/* "COOP" */
#define REQ_PREALLOC 1024
#define REQ_MAX (1u << 20)
#define MSG_MAX (1u << 24)
#define WORK_SLOTS 256
#define MIN_BOUNCE 65536

struct lib_blob {
	uint32_t magic;
	uint32_t rank;
	uint32_t size;
	uint32_t prov_len;
	uint64_t cfg_hash;
	char prov[8];
};

static int check_params(const coop_init_params_t *p, coop_context_t **ctx)
{
	if (!p || !ctx || p->size != sizeof(*p) || p->flags)
		return COOP_ERR_ARG;
	if (p->nranks < 1 || p->nranks > 65533 || p->rank < 0 ||
	    p->rank >= p->nranks)
		return COOP_ERR_RANK;
	return COOP_SUCCESS;
}

static int init_pools(struct coop_context *ctx)
{
	if (coop_pool_init(&ctx->reqs, sizeof(struct coop_request),
			   REQ_PREALLOC, REQ_MAX) ||
	    coop_pool_init(&ctx->msgs, sizeof(struct coop_message), 256,
			   MSG_MAX) ||
	    coop_pool_init(&ctx->pkts, sizeof(struct coop_pkt_node), 256,
			   MSG_MAX))
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

static int init_transport(struct coop_context *ctx)
{
	struct coop_config *cfg = &ctx->cfg;
	size_t bsize = COOP_MAX(cfg->eager_max, MIN_BOUNCE);
	int rc;

	ctx->prov.rank = ctx->rank;
	ctx->prov.nranks = ctx->size;
	ctx->prov.flags = cfg->cma_off ? COOP_PROV_NO_COPY : 0;
	ctx->prov.ring_slots = cfg->ring_slots;
	ctx->prov.verbose = cfg->verbose;
	rc = coop_provider_open(&ctx->prov, cfg->provider, ctx->key);
	if (rc)
		return COOP_ERR_PROVIDER;
	rc = coop_seg_create(&ctx->seg, ctx->key, ctx->rank,
			     cfg->bounce_slots, bsize, WORK_SLOTS);
	if (rc) {
		coop_log(ctx->rank, "cannot create shared segment: %s",
			 strerror(-rc));
		return COOP_ERR_NOMEM;
	}
	ctx->bslot_peer = calloc(cfg->bounce_slots, sizeof(uint16_t));
	if (!ctx->bslot_peer)
		return COOP_ERR_NOMEM;
	return COOP_SUCCESS;
}

static void init_static_req(struct coop_context *ctx)
{
	struct coop_request *r = &ctx->done_req;

	r->ctx = ctx;
	r->is_static = 1;
	r->complete = 1;
	r->kind = REQ_SEND;
	dlist_init(&r->link);
	dlist_init(&r->alink);
	dlist_init(&r->jlink);
}

static void ctx_free(struct coop_context *ctx)
{
	int i;

	for (i = 0; ctx->peers && i < ctx->size; i++)
		if (i != ctx->rank)
			coop_seg_unmap(&ctx->peers[i].seg);
	if (ctx->seg.base)
		coop_seg_destroy(&ctx->seg);
	coop_dma_fini(ctx);
	if (ctx->prov.ops)
		ctx->prov.ops->close(&ctx->prov);
	coop_match_fini(ctx);
	coop_pool_destroy(&ctx->reqs);
	coop_pool_destroy(&ctx->msgs);
	coop_pool_destroy(&ctx->pkts);
	free(ctx->bslot_peer);
	free(ctx->peers);
	free(ctx);
}

int coop_init(const coop_init_params_t *params, coop_context_t **out)
{
	struct coop_context *ctx;
	int rc = check_params(params, out);

	if (rc)
		return rc;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return COOP_ERR_NOMEM;
	ctx->rank = params->rank;
	ctx->size = params->nranks;
	ctx->key = params->job_key;
	dlist_init(&ctx->rts_sends);
	dlist_init(&ctx->jobs);
	dlist_init(&ctx->inflight);
	dlist_init(&ctx->bs.blocks);
	init_static_req(ctx);
	rc = coop_config_load(&ctx->cfg);
	if (!rc)
		rc = init_pools(ctx);
	if (!rc)
		rc = coop_match_init(ctx) ? COOP_ERR_NOMEM : COOP_SUCCESS;
	if (!rc)
		rc = init_peers(ctx);
	if (!rc)
		rc = init_transport(ctx);
	if (rc) {
		ctx_free(ctx);
		return rc;
	}
	ctx->rtr = ctx->cfg.rndv == COOP_RNDV_RTR;
	coop_dma_init(ctx);
	ctx->cfg_hash = coop_config_hash(&ctx->cfg, ctx->prov.ops->name);
	*out = ctx;
	return COOP_SUCCESS;
}

int coop_address(coop_context_t *ctx, void *blob, size_t *len)
{
	struct lib_blob h;
	size_t plen;
	int rc;

	if (!ctx || !blob || !len)
		return COOP_ERR_ARG;
	if (*len < sizeof(h)) {
		*len = COOP_ADDR_MAX_LEN;
		return COOP_ERR_ARG;
	}
	plen = *len - sizeof(h);
	rc = ctx->prov.ops->address(&ctx->prov, (char *)blob + sizeof(h),
				    &plen);
	if (rc) {
		*len = sizeof(h) + plen;
		return rc == -ENOSPC ? COOP_ERR_ARG : COOP_ERR_PROVIDER;
	}
	memset(&h, 0, sizeof(h));
	h.magic = BLOB_MAGIC;
	h.rank = (uint32_t)ctx->rank;
	h.size = (uint32_t)ctx->size;
	h.prov_len = (uint32_t)plen;
	h.cfg_hash = ctx->cfg_hash;
	strncpy(h.prov, ctx->prov.ops->name, sizeof(h.prov) - 1);
	memcpy(blob, &h, sizeof(h));
	*len = sizeof(h) + plen;
	return COOP_SUCCESS;
}

static int check_blob(struct coop_context *ctx, const struct lib_blob *h,
		      int r, size_t stride)
{
	if (h->magic != BLOB_MAGIC || h->rank != (uint32_t)r ||
	    h->size != (uint32_t)ctx->size ||
	    sizeof(*h) + h->prov_len > stride)
		return COOP_ERR_ARG;
	if (strncmp(h->prov, ctx->prov.ops->name, sizeof(h->prov))) {
		coop_log(ctx->rank, "rank %d uses provider %.8s, I use %s", r,
			 h->prov, ctx->prov.ops->name);
		return COOP_ERR_CONFIG;
	}
	if (h->cfg_hash != ctx->cfg_hash) {
		coop_log(ctx->rank, "rank %d has other COOP_EAGER_MAX/"
			 "COOP_RNDV/COOP_COOP_MIN settings", r);
		return COOP_ERR_CONFIG;
	}
	return COOP_SUCCESS;
}

static int connect_peer(struct coop_context *ctx, int r, const char *blob)
{
	const struct lib_blob *h = (const struct lib_blob *)blob;
	struct coop_peer *pe = &ctx->peers[r];
	int rc;

	rc = ctx->prov.ops->connect(&ctx->prov, r, blob + sizeof(*h),
				    h->prov_len);
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
	return COOP_SUCCESS;
}

static void log_settings(struct coop_context *ctx)
{
	const struct coop_config *c = &ctx->cfg;
	int i, copy = 1;

	for (i = 0; i < ctx->size; i++)
		copy &= ctx->peers[i].copy_ok;
	coop_log(ctx->rank, "%d ranks, provider %s, inline <= %zu B, eager <= "
		 "%zu B, rndv %s (coop >= %zu B), chunk %zu B, single copy %s",
		 ctx->size, ctx->prov.ops->name, (size_t)PKT_INLINE_MAX,
		 c->eager_max, coop_rndv_name(c->rndv), c->coop_min, c->chunk,
		 copy ? "on" : "off (bounce pipeline)");
}

int coop_connect(coop_context_t *ctx, const void *blobs, size_t stride)
{
	const char *b = blobs;
	int r, rc;

	if (!ctx || !blobs || stride < sizeof(struct lib_blob))
		return COOP_ERR_ARG;
	if (ctx->connected)
		return COOP_ERR_STATE;
	for (r = 0; r < ctx->size; r++) {
		rc = check_blob(ctx, (const struct lib_blob *)(b + r * stride),
				r, stride);
		if (rc)
			return rc;
	}
	for (r = 0; r < ctx->size; r++) {
		rc = connect_peer(ctx, r, b + r * stride);
		if (rc)
			return rc;
	}
	/* Only now: kmod finds a rank's slot (ours too) by its connection. */
	ctx->load = ctx->prov.ops->load_slot(&ctx->prov, ctx->rank);
	if (!ctx->load)
		coop_log(ctx->rank, "no load counters: copies are not "
			 "accounted");
	/* every rank of the job runs on this node: more of them than CPUs
	 * and a waiting rank's CPU is not free (COOP-hybrid) */
	ctx->undersubscribed = ctx->size <= sysconf(_SC_NPROCESSORS_ONLN);
	ctx->connected = 1;
	if (ctx->cfg.verbose)
		log_settings(ctx);
	return COOP_SUCCESS;
}

/* Give back the peers' bounce slots still held by unexpected messages. */
static void drop_unexpected(struct coop_context *ctx)
{
	while (!dlist_empty(&ctx->umq)) {
		struct coop_message *u = container_of(ctx->umq.next,
						      struct coop_message,
						      link);

		dlist_del(&u->link);
		coop_eager_discard(ctx, &u->d);
		coop_pool_put(&ctx->msgs, u);
	}
}

static void flush_backlog(struct coop_context *ctx)
{
	while (ctx->nbacklogged) {
		if (!coop_progress_once(ctx))
			coop_idle(ctx);
	}
}

/* Tell everyone we leave cleanly (after all our packets: FIFO). */
static void say_bye(struct coop_context *ctx)
{
	union coop_pkt pkt;
	int p;

	for (p = 0; p < ctx->size; p++) {
		if (p == ctx->rank || ctx->peers[p].dead)
			continue;
		coop_hdr_init(ctx, &pkt.h, PKT_BYE, 0, 0);
		coop_send_pkt(ctx, p, &pkt);
	}
	flush_backlog(ctx);
}

static void log_stats(struct coop_context *ctx)
{
	const uint64_t *n = ctx->rx;

	coop_log(ctx->rank, "received: eager %llu, bounce %llu, RTS %llu, "
		 "CTS %llu, RTR %llu, FIN %llu, ACK %llu, FRAG %llu, "
		 "REVOKE %llu/%llu",
		 (unsigned long long)n[PKT_EAGER],
		 (unsigned long long)n[PKT_EAGER_BB],
		 (unsigned long long)n[PKT_RTS], (unsigned long long)n[PKT_CTS],
		 (unsigned long long)n[PKT_RTR], (unsigned long long)n[PKT_FIN],
		 (unsigned long long)n[PKT_ACK], (unsigned long long)n[PKT_FRAG],
		 (unsigned long long)n[PKT_REVOKE],
		 (unsigned long long)n[PKT_REVOKE_REPLY]);
}

int coop_finalize(coop_context_t *ctx)
{
	int rc = COOP_SUCCESS;

	if (!ctx)
		return COOP_SUCCESS;
	if (ctx->cfg.verbose)
		log_stats(ctx);
	if (ctx->connected) {
		coop_bsend_fini(ctx);
		flush_backlog(ctx);
		say_bye(ctx);
		drop_unexpected(ctx);
	}
	ctx_free(ctx);
	return rc;
}

int coop_rank(const coop_context_t *ctx, int *rank)
{
	if (!ctx || !rank)
		return COOP_ERR_ARG;
	*rank = ctx->rank;
	return COOP_SUCCESS;
}

int coop_size(const coop_context_t *ctx, int *size)
{
	if (!ctx || !size)
		return COOP_ERR_ARG;
	*size = ctx->size;
	return COOP_SUCCESS;
}

/* Relaxed loads: each counter is a statistic, not a synchronization. */
static void load_read(const struct coopmpi_load_slot *s, coop_load_t *out)
{
	out->pending_ops = __atomic_load_n(&s->pending_ops, __ATOMIC_RELAXED);
	out->pending_bytes = __atomic_load_n(&s->pending_bytes,
					     __ATOMIC_RELAXED);
	out->kernel_ops = __atomic_load_n(&s->kernel_ops, __ATOMIC_RELAXED);
	out->kernel_bytes = __atomic_load_n(&s->kernel_bytes,
					    __ATOMIC_RELAXED);
	out->total_ops = __atomic_load_n(&s->total_ops, __ATOMIC_RELAXED);
	out->total_bytes = __atomic_load_n(&s->total_bytes, __ATOMIC_RELAXED);
}

int coop_get_load(coop_context_t *ctx, int rank, coop_load_t *out)
{
	const struct coopmpi_load_slot *s;

	if (!ctx || !out)
		return COOP_ERR_ARG;
	if (!ctx->connected)	/* kmod knows other ranks' slots only now */
		return COOP_ERR_STATE;
	if (rank < 0 || rank >= ctx->size)
		return COOP_ERR_RANK;
	s = ctx->prov.ops->load_slot(&ctx->prov, rank);
	if (!s)
		return COOP_ERR_PROVIDER;
	load_read(s, out);
	return COOP_SUCCESS;
}

int coop_get_stats(coop_context_t *ctx, coop_stats_t *out)
{
	if (!ctx || !out)
		return COOP_ERR_ARG;
	*out = ctx->stats;
	return COOP_SUCCESS;
}

int coop_reset_stats(coop_context_t *ctx)
{
	if (!ctx)
		return COOP_ERR_ARG;
	memset(&ctx->stats, 0, sizeof(ctx->stats));
	return COOP_SUCCESS;
}

const char *coop_provider_name(const coop_context_t *ctx)
{
	return ctx && ctx->prov.ops ? ctx->prov.ops->name : NULL;
}

int coop_thread_level(void)
{
	return COOP_THREAD_SERIALIZED;
}
