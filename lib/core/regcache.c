/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * regcache.c - registrations kept for the next message on the same buffer.
 *
 * A request registers its buffer for the peer's copy and lets it go when
 * it completes.  Where a registration names addresses rather than pages
 * (the driver's regions pin nothing: COPY and windows find the pages at
 * copy time, COOP_PROV_CAP_REG_BY_ADDRESS; an HCA engine's key, which
 * pins them, its reg_refresh renews when they changed), keeping it is right,
 * even after the application freed the buffer and got new memory at the
 * same address; and keeping it keeps its cookie, under which peers keep
 * their windows of it (window.c).  COOP_REG_CACHE registrations not in
 * use are kept, the least recently used one deregistered for a new one;
 * a buffer registered with other bounds or less access gets its own.
 */
#include <stdlib.h>

#include "core.h"

struct coop_reg {
	const void *addr;
	size_t len;
	unsigned access;
	unsigned refs;
	uint64_t used;
	struct coop_rkey key;
};

static int reg_cacheable(const struct coop_context *ctx)
{
	return ctx->cfg.reg_cache &&
	       (ctx->prov.caps & COOP_PROV_CAP_REG_BY_ADDRESS);
}

static struct coop_reg *reg_find(struct coop_regcache *rc, const void *addr,
				 size_t len, unsigned access)
{
	struct coop_reg *e;

	for (e = rc->regs; e < rc->regs + rc->n; e++)
		if (e->len && e->addr == addr && e->len == len &&
		    (e->access & access) == access)
			return e;
	return NULL;
}

/* A free entry, or the least recently used unreferenced one, emptied. */
static struct coop_reg *reg_victim(struct coop_context *ctx)
{
	struct coop_regcache *rc = &ctx->regs;
	struct coop_reg *e, *v = NULL;

	for (e = rc->regs; e < rc->regs + rc->n; e++) {
		if (!e->len)
			return e;
		if (!e->refs && (!v || e->used < v->used))
			v = e;
	}
	if (v) {
		ctx->prov.ops->dereg(&ctx->prov, &v->key);
		v->len = 0;
	}
	return v;
}

/* Is kept e good for the memory at its addresses now (the provider's
 * reg_refresh)?  If not, it is dropped unless in use. */
static int reg_fresh(struct coop_context *ctx, struct coop_reg *e)
{
	const struct coop_provider_ops *o = ctx->prov.ops;

	if (!o->reg_refresh || !o->reg_refresh(&ctx->prov, &e->key))
		return 1;
	if (!e->refs) {
		o->dereg(&ctx->prov, &e->key);
		e->len = 0;
	}
	return 0;
}

int coop_reg_get(struct coop_context *ctx, void *addr, size_t len,
		 unsigned access, struct coop_rkey *key, uint8_t *cached)
{
	struct coop_regcache *rc = &ctx->regs;
	struct coop_reg *e = NULL;
	int err;

	*cached = 0;
	if (reg_cacheable(ctx)) {
		e = reg_find(rc, addr, len, access);
		if (e && reg_fresh(ctx, e))
			goto hit;
		e = reg_victim(ctx);
	}
	err = ctx->prov.ops->reg(&ctx->prov, addr, len, access, key);
	if (err || !e)
		return err;
	e->addr = addr;
	e->len = len;
	e->access = access;
	e->key = *key;
hit:
	e->refs++;
	e->used = ++rc->clock;
	*key = e->key;
	*cached = 1;
	return 0;
}

void coop_reg_put(struct coop_context *ctx, const struct coop_rkey *key,
		  uint8_t cached)
{
	struct coop_regcache *rc = &ctx->regs;
	struct coop_reg *e;

	if (!cached) {
		ctx->prov.ops->dereg(&ctx->prov, key);
		return;
	}
	for (e = rc->regs; e < rc->regs + rc->n; e++)
		if (e->len && e->key.cookie == key->cookie && e->refs) {
			e->refs--;
			return;
		}
}

int coop_regcache_init(struct coop_context *ctx)
{
	struct coop_regcache *rc = &ctx->regs;

	rc->n = reg_cacheable(ctx) ? ctx->cfg.reg_cache : 0;
	if (!rc->n)
		return COOP_SUCCESS;
	rc->regs = calloc(rc->n, sizeof(*rc->regs));
	return rc->regs ? COOP_SUCCESS : COOP_ERR_NOMEM;
}

void coop_regcache_fini(struct coop_context *ctx)
{
	struct coop_regcache *rc = &ctx->regs;
	struct coop_reg *e;

	for (e = rc->regs; e < rc->regs + rc->n; e++)
		if (e->len)
			ctx->prov.ops->dereg(&ctx->prov, &e->key);
	free(rc->regs);
	rc->regs = NULL;
	rc->n = 0;
}
