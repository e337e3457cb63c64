/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ctx.c - context life cycle: coop_init, coop_address, coop_connect,
 * coop_finalize; context queries (rank, size, provider, load counters).
 *
 * The address blob is a library header (rank, size, configuration hash,
 * provider name) followed by the provider's own blob; coop_connect checks
 * that all ranks agree before connecting anything.  Each layer sets up
 * its own part, lowest first (core, protocols, MPI semantics), and tears
 * it down in the opposite order.
 */
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "mpi.h"
#include "node.h"
#include "api_int.h"

#define BLOB_MAGIC 0x434f4f50U	/* "COOP" */

struct lib_blob {
	uint32_t magic;
	uint32_t rank;
	uint32_t size;
	uint32_t prov_len;
	uint64_t cfg_hash;
	char prov[8];
	uint32_t instance;	/* dynamic endpoints: which one of the rank */
	uint32_t wire;		/* COOP_WIRE_VERSION */
};

/* t_api.c changes the wire version of a blob where it lies */
_Static_assert(offsetof(struct lib_blob, wire) == 36, "blob layout");

static int check_params(const coop_init_params_t *p, coop_context_t **ctx)
{
	if (!p || !ctx || p->size != sizeof(*p) ||
	    (p->flags & ~(COOP_INIT_DYNAMIC | COOP_INIT_THREAD_MULTIPLE)))
		return COOP_ERR_ARG;
	if (p->flags & COOP_INIT_DYNAMIC)	/* the domain assigns them */
		return p->rank || p->nranks ? COOP_ERR_ARG : COOP_SUCCESS;
	if (p->nranks < 1 || p->nranks > 65533 || p->rank < 0 ||
	    p->rank >= p->nranks)
		return COOP_ERR_RANK;
	return COOP_SUCCESS;
}

static int connect_self(struct coop_context *ctx);

_Static_assert(COOP_PROGRESS_MANUAL == COOP_PROGRESS_MODE_MANUAL &&
	       COOP_PROGRESS_THREAD == COOP_PROGRESS_MODE_THREAD &&
	       COOP_PROGRESS_THREAD_SLEEP == COOP_PROGRESS_MODE_SLEEP,
	       "public and internal progress modes differ");

/* The progress thread asked for (COOP_PROGRESS, coop_set_progress), once
 * the context is connected: it needs the peers. */
static int start_progress(struct coop_context *ctx)
{
	if (!ctx->connected ||
	    ctx->progress_want == coop_async_mode(ctx))
		return COOP_SUCCESS;
	ctx->mt = 1;
	return coop_async_set(ctx, ctx->progress_want, ctx->progress_cpu);
}

static void ctx_free(struct coop_context *ctx)
{
	coop_coll_layer_fini(ctx);
	coop_mpi_layer_fini(ctx);
	coop_proto_layer_fini(ctx);
	coop_core_fini(ctx);
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
	ctx->dynamic = !!(params->flags & COOP_INIT_DYNAMIC);
	rc = coop_core_init(ctx, ctx->dynamic);
	ctx->mt = (params->flags & COOP_INIT_THREAD_MULTIPLE) ||
		  ctx->cfg.threads ||
		  ctx->cfg.progress != COOP_PROGRESS_MODE_MANUAL;
	/* a dynamic endpoint's owner (a transport such as UCX) registers
	 * its handlers after coop_init: only coop_set_progress starts its
	 * thread, once they are in */
	ctx->progress_want = ctx->dynamic ? COOP_PROGRESS_MODE_MANUAL :
					    ctx->cfg.progress;
	ctx->progress_cpu = ctx->cfg.progress_cpu;
	if (!rc)
		rc = coop_proto_layer_init(ctx);
	if (!rc)
		rc = coop_mpi_layer_init(ctx);
	if (!rc)
		rc = coop_coll_layer_init(ctx);
	if (!rc)
		coop_msg_layer_init(ctx);
	if (!rc) {
		ctx->cfg_hash = coop_config_hash(&ctx->cfg,
						 ctx->prov.ops->name);
		if (ctx->dynamic)
			rc = connect_self(ctx);
	}
	if (rc) {
		ctx_free(ctx);
		return rc;
	}
	if (ctx->cfg.verbose >= 2 && ctx->rank == 0)
		coop_config_print_table(stderr, &ctx->cfg);
	*out = ctx;
	return COOP_SUCCESS;
}

static int address_locked(coop_context_t *ctx, void *blob, size_t *len)
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
	h.instance = ctx->instance;
	h.wire = COOP_WIRE_VERSION;
	strncpy(h.prov, ctx->prov.ops->name, sizeof(h.prov) - 1);
	memcpy(blob, &h, sizeof(h));
	*len = sizeof(h) + plen;
	return COOP_SUCCESS;
}

int coop_address(coop_context_t *ctx, void *blob, size_t *len)
{
	COOP_LOCKED(ctx, address_locked(ctx, blob, len));
}

static int check_blob(struct coop_context *ctx, const struct lib_blob *h,
		      int r, size_t stride)
{
	if (h->magic != BLOB_MAGIC || h->rank != (uint32_t)r ||
	    h->size != (uint32_t)ctx->size ||
	    sizeof(*h) + h->prov_len > stride)
		return COOP_ERR_ARG;
	if (h->wire != COOP_WIRE_VERSION) {
		coop_log(ctx->rank, "rank %d speaks wire version %u, I speak "
			 "%u: another libcoopmpi", r, h->wire,
			 COOP_WIRE_VERSION);
		return COOP_ERR_CONFIG;
	}
	if (strncmp(h->prov, ctx->prov.ops->name, sizeof(h->prov))) {
		coop_log(ctx->rank, "rank %d uses provider %.8s, I use %s", r,
			 h->prov, ctx->prov.ops->name);
		return COOP_ERR_CONFIG;
	}
	if (h->cfg_hash != ctx->cfg_hash) {
		coop_log(ctx->rank, "rank %d has other %s settings", r,
			 coop_config_agreed_names());
		return COOP_ERR_CONFIG;
	}
	return COOP_SUCCESS;
}

static int connect_peer(struct coop_context *ctx, int r, const char *blob)
{
	const struct lib_blob *h = (const struct lib_blob *)blob;

	return coop_core_connect_peer(ctx, r, blob + sizeof(*h), h->prov_len);
}

/* The short address: a dynamic endpoint's rank and instance. */
struct short_addr {
	uint32_t rank;
	uint32_t instance;	/* never 0 */
};

_Static_assert(sizeof(struct short_addr) == COOP_ADDR_SHORT_LEN, "short");

/* A dynamic endpoint is connected to itself from the start, and its
 * address published in its segment for peers that have the short one. */
static int connect_self(struct coop_context *ctx)
{
	char blob[COOP_ADDR_MAX_LEN];
	size_t len = sizeof(blob);
	int rc;

	ctx->instance = (uint32_t)(coop_now_ns() ^ (uint64_t)getpid() << 16) |
			1;
	rc = coop_address(ctx, blob, &len);
	if (!rc)
		rc = connect_peer(ctx, ctx->rank, blob);
	if (rc)
		return rc;
	ctx->peers[ctx->rank].instance = ctx->instance;
	coop_core_connected(ctx);
	coop_seg_publish(&ctx->seg, blob, len, ctx->instance);
	return COOP_SUCCESS;
}

static int address_short_locked(coop_context_t *ctx, void *addr, size_t *len)
{
	struct short_addr a;

	if (!ctx || !addr || !len || *len < sizeof(a))
		return COOP_ERR_ARG;
	if (!ctx->dynamic)
		return COOP_ERR_STATE;
	a.rank = (uint32_t)ctx->rank;
	a.instance = ctx->instance;
	memcpy(addr, &a, sizeof(a));
	*len = sizeof(a);
	return COOP_SUCCESS;
}

int coop_address_short(coop_context_t *ctx, void *addr, size_t *len)
{
	COOP_LOCKED(ctx, address_short_locked(ctx, addr, len));
}

int coop_reach_id(uint64_t *node, uint32_t *wire)
{
	if (!node || !wire)
		return COOP_ERR_ARG;
	*node = coop_node_scope();
	*wire = COOP_WIRE_VERSION;
	return COOP_SUCCESS;
}

/* The full blob of the endpoint a short address names (ESRCH: gone). */
static int resolve_short(struct coop_context *ctx, const void *addr,
			 char *blob, size_t *len)
{
	struct short_addr a;
	int rc;

	memcpy(&a, addr, sizeof(a));
	if (a.rank >= (uint32_t)ctx->size || !a.instance)
		return COOP_ERR_ARG;
	rc = coop_seg_peer_addr(ctx->key, (int)a.rank, a.instance, blob, len);
	if (rc == -ESRCH)
		return COOP_ERR_PEER_DEAD;
	return rc ? COOP_ERR_PROVIDER : COOP_SUCCESS;
}

static int connect_peer_locked(coop_context_t *ctx, const void *blob,
			       size_t len, int *rank)
{
	const struct lib_blob *h = blob;
	char full[COOP_ADDR_MAX_LEN];
	int rc;

	if (!ctx || !blob || !rank)
		return COOP_ERR_ARG;
	if (!ctx->dynamic)
		return COOP_ERR_STATE;
	if (len == COOP_ADDR_SHORT_LEN) {
		len = sizeof(full);
		rc = resolve_short(ctx, blob, full, &len);
		if (rc)
			return rc;
		h = blob = full;
	}
	if (len < sizeof(*h))
		return COOP_ERR_ARG;
	if (h->rank >= (uint32_t)ctx->size)
		return COOP_ERR_ARG;
	rc = check_blob(ctx, h, (int)h->rank, len);
	if (rc)
		return rc;
	*rank = (int)h->rank;
	if (ctx->peers[*rank].connected) {
		if (ctx->peers[*rank].instance == h->instance &&
		    !ctx->peers[*rank].dead)
			return COOP_SUCCESS;	/* the same endpoint again */
		if (*rank == ctx->rank)
			return COOP_ERR_ARG;	/* not ours: a stale address */
		coop_core_disconnect_peer(ctx, *rank);	/* taken over */
	}
	rc = connect_peer(ctx, *rank, blob);
	if (!rc)
		ctx->peers[*rank].instance = h->instance;
	return rc;
}

int coop_connect_peer(coop_context_t *ctx, const void *blob, size_t len,
		      int *rank)
{
	COOP_LOCKED(ctx, connect_peer_locked(ctx, blob, len, rank));
}

static void log_settings(struct coop_context *ctx)
{
	const struct coop_config *c = &ctx->cfg;
	int i, copy = 1;

	for (i = 0; i < ctx->size; i++)
		copy &= ctx->peers[i].copy_ok;
	coop_log(ctx->rank, "%d ranks, provider %s, inline <= %zu B, eager <= "
		 "%zu B, rndv %s (hybrid >= %zu B), chunk %zu B, single copy %s",
		 ctx->size, ctx->prov.ops->name, (size_t)PKT_INLINE_MAX,
		 c->eager_max, coop_rndv_name(c->rndv), c->hybrid_min, c->chunk,
		 copy ? "on" : "off (bounce pipeline)");
}

static int connect_all(coop_context_t *ctx, const void *blobs, size_t stride)
{
	const char *b = blobs;
	int r, rc;

	if (!ctx || !blobs || stride < sizeof(struct lib_blob))
		return COOP_ERR_ARG;
	if (ctx->connected || ctx->dynamic)
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
	coop_core_connected(ctx);
	if (ctx->cfg.verbose)
		log_settings(ctx);
	return COOP_SUCCESS;
}

int coop_connect(coop_context_t *ctx, const void *blobs, size_t stride)
{
	int rc;

	if (!ctx)
		return COOP_ERR_ARG;
	coop_lock(ctx);
	rc = connect_all(ctx, blobs, stride);
	coop_unlock(ctx);
	return rc ? rc : start_progress(ctx);
}

static void log_stats(struct coop_context *ctx)
{
	const uint64_t *n = ctx->rx;
	char host[256] = "?";

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
	/* window copies pass no system call: tests count them here, each
	 * node's apart in a job across nodes (ranks are per node) */
	gethostname(host, sizeof(host) - 1);
	coop_log(ctx->rank, "copied: %llu bytes in %llu jobs, %llu through "
		 "windows, on %s", (unsigned long long)ctx->stats.copy_bytes,
		 (unsigned long long)ctx->stats.copy_jobs,
		 (unsigned long long)ctx->stats.window_bytes, host);
	if (ctx->prov.engine_regs)
		coop_log(ctx->rank, "offload engine: %llu registrations, "
			 "kept ones used %llu times",
			 (unsigned long long)ctx->prov.engine_regs,
			 (unsigned long long)ctx->prov.engine_regs_kept);
}

int coop_finalize(coop_context_t *ctx)
{
	int rc = COOP_SUCCESS;

	if (!ctx)
		return COOP_SUCCESS;
	coop_async_set(ctx, COOP_PROGRESS_MODE_MANUAL, COOP_CPU_NONE);
	if (ctx->cfg.verbose)
		log_stats(ctx);
	if (ctx->connected)
		coop_mpi_finalize(ctx);
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

static int get_load_locked(coop_context_t *ctx, int rank, coop_load_t *out)
{
	const struct coopmpi_load_slot *s;

	if (!ctx || !out)
		return COOP_ERR_ARG;
	if (!ctx->connected)	/* kmod knows other ranks' slots only now */
		return COOP_ERR_STATE;
	if (rank < 0 || rank >= ctx->size)
		return COOP_ERR_RANK;
	if (!ctx->peers[rank].connected)
		return COOP_ERR_STATE;
	s = ctx->prov.ops->load_slot(&ctx->prov, rank);
	if (!s)
		return COOP_ERR_PROVIDER;
	load_read(s, out);
	return COOP_SUCCESS;
}

int coop_get_load(coop_context_t *ctx, int rank, coop_load_t *out)
{
	COOP_LOCKED(ctx, get_load_locked(ctx, rank, out));
}

static int get_offload_load_locked(coop_context_t *ctx,
				   coop_offload_load_t *out)
{
	const struct coopmpi_offload_counters *o;

	if (!ctx || !out)
		return COOP_ERR_ARG;
	o = ctx->prov.ops->offload ? ctx->prov.ops->offload(&ctx->prov) : NULL;
	if (!o)
		return COOP_ERR_PROVIDER;
	out->dma_ops = __atomic_load_n(&o->dma_ops, __ATOMIC_RELAXED);
	out->dma_bytes = __atomic_load_n(&o->dma_bytes, __ATOMIC_RELAXED);
	out->hca_ops = __atomic_load_n(&o->hca_ops, __ATOMIC_RELAXED);
	out->hca_bytes = __atomic_load_n(&o->hca_bytes, __ATOMIC_RELAXED);
	return COOP_SUCCESS;
}

int coop_get_offload_load(coop_context_t *ctx, coop_offload_load_t *out)
{
	COOP_LOCKED(ctx, get_offload_load_locked(ctx, out));
}

static int get_stats_locked(coop_context_t *ctx, coop_stats_t *out)
{
	if (!ctx || !out)
		return COOP_ERR_ARG;
	*out = ctx->stats;
	out->engine_regs = ctx->prov.engine_regs - ctx->engine_regs_base;
	out->engine_regs_kept = ctx->prov.engine_regs_kept -
				ctx->engine_regs_kept_base;
	return COOP_SUCCESS;
}

int coop_get_stats(coop_context_t *ctx, coop_stats_t *out)
{
	COOP_LOCKED(ctx, get_stats_locked(ctx, out));
}

static int reset_stats_locked(coop_context_t *ctx)
{
	if (!ctx)
		return COOP_ERR_ARG;
	memset(&ctx->stats, 0, sizeof(ctx->stats));
	ctx->engine_regs_base = ctx->prov.engine_regs;
	ctx->engine_regs_kept_base = ctx->prov.engine_regs_kept;
	return COOP_SUCCESS;
}

int coop_reset_stats(coop_context_t *ctx)
{
	COOP_LOCKED(ctx, reset_stats_locked(ctx));
}

const char *coop_provider_name(const coop_context_t *ctx)
{
	return ctx && ctx->prov.ops ? ctx->prov.ops->name : NULL;
}

int coop_thread_level(void)
{
	return COOP_THREAD_MULTIPLE;
}

int coop_query_thread(const coop_context_t *ctx, int *level)
{
	if (!ctx || !level)
		return COOP_ERR_ARG;
	*level = ctx->mt ? COOP_THREAD_MULTIPLE : COOP_THREAD_SERIALIZED;
	return COOP_SUCCESS;
}

static int pcontrol_locked(coop_context_t *ctx, int phase)
{
	if (!ctx || phase < 0)
		return COOP_ERR_ARG;
	return coop_observe_phase(ctx, phase);
}

int coop_pcontrol(coop_context_t *ctx, int phase)
{
	COOP_LOCKED(ctx, pcontrol_locked(ctx, phase));
}

int coop_set_progress(coop_context_t *ctx, int mode, int cpu)
{
	if (!ctx || mode < COOP_PROGRESS_MANUAL ||
	    mode > COOP_PROGRESS_THREAD_SLEEP || cpu < -1 ||
	    cpu >= CPU_SETSIZE)
		return COOP_ERR_ARG;
	if (mode != COOP_PROGRESS_MANUAL)
		ctx->mt = 1;	/* before a second thread exists */
	coop_lock(ctx);
	ctx->progress_want = mode;
	ctx->progress_cpu = cpu < 0 ? COOP_CPU_NONE : (unsigned)cpu;
	coop_unlock(ctx);
	/* a thread to stop needs the lock to see it */
	return mode == coop_async_mode(ctx) ? COOP_SUCCESS :
	       ctx->connected ? coop_async_set(ctx, mode, ctx->progress_cpu) :
				COOP_SUCCESS;
}

int coop_get_progress(const coop_context_t *ctx, int *mode)
{
	if (!ctx || !mode)
		return COOP_ERR_ARG;
	*mode = ctx->progress_want;
	return COOP_SUCCESS;
}

int coop_cleanup_stale(void)
{
	return coop_seg_reap(0);
}

int coop_config_print(FILE *out)
{
	if (!out)
		return COOP_ERR_ARG;
	return coop_config_print_table(out, NULL);
}
