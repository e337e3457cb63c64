/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* config.c - environment variables and their documented defaults. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coopmpi.h"
#include "config.h"

#define DEF_EAGER_MAX	65536
#define DEF_COOP_MIN	65536
#define DEF_CHUNK	(1u << 20)
#define DEF_HISTORY_MS	50
#define DEF_RING_SLOTS	1024
#define DEF_BOUNCE	64
#define DEF_SPIN	20000
#define DEF_SLEEP_US	10000	/* = the peer check period */
#define DEF_BOOT	60
#define DEF_STRIPE_MIN	(1u << 20)
#define DEF_OFFLOAD_BUSY (4u << 20)

static const char *const rndv_names[] = {
	[COOP_RNDV_AUTO] = "auto", [COOP_RNDV_RGET] = "rget",
	[COOP_RNDV_RPUT] = "rput", [COOP_RNDV_RTR] = "rtr",
	[COOP_RNDV_COOP] = "coop", [COOP_RNDV_DMA] = "dma",
	[COOP_RNDV_STRIPE] = "stripe",
};

const char *coop_rndv_name(enum coop_rndv_mode m)
{
	return rndv_names[m];
}

static int bad(const char *var, const char *val)
{
	fprintf(stderr, "coopmpi: invalid %s=\"%s\"\n", var, val);
	return COOP_ERR_CONFIG;
}

/* Unsigned size with optional k/m/g suffix, within [lo, hi]. */
static int env_size(const char *var, size_t def, size_t lo, size_t hi,
		    size_t *out)
{
	const char *s = getenv(var);
	char *end;
	unsigned long long v;

	*out = def;
	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		return bad(var, s);
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end || v < lo || v > hi)
		return bad(var, s);
	*out = (size_t)v;
	return 0;
}

static int env_uint(const char *var, unsigned def, unsigned lo, unsigned hi,
		    unsigned *out)
{
	size_t v;
	int rc = env_size(var, def, lo, hi, &v);

	*out = (unsigned)v;
	return rc;
}

/* A ratio >= 0 ("unset" or empty: def). */
static int env_ratio(const char *var, double def, double *out)
{
	const char *s = getenv(var);
	char *end;

	*out = def;
	if (!s || !*s)
		return 0;
	errno = 0;
	*out = strtod(s, &end);
	if (errno || end == s || *end || !(*out >= 0 && *out <= 1e6))
		return bad(var, s);
	return 0;
}

static int env_rndv(enum coop_rndv_mode *m)
{
	const char *s = getenv("COOP_RNDV");
	unsigned i;

	*m = COOP_RNDV_AUTO;
	if (!s || !*s)
		return 0;
	for (i = 0; i < sizeof(rndv_names) / sizeof(rndv_names[0]); i++) {
		if (!strcmp(s, rndv_names[i])) {
			*m = (enum coop_rndv_mode)i;
			return 0;
		}
	}
	return bad("COOP_RNDV", s);
}

static int env_cma(int *off)
{
	const char *s = getenv("COOP_CMA");

	*off = 0;
	if (!s || !*s || !strcmp(s, "auto") || !strcmp(s, "on"))
		return 0;
	if (!strcmp(s, "off") || !strcmp(s, "0")) {
		*off = 1;
		return 0;
	}
	return bad("COOP_CMA", s);
}

/* 0 or 1 (unset or empty: 0). */
static int env_bool(const char *var, int *out)
{
	const char *s = getenv(var);

	*out = 0;
	if (!s || !*s || !strcmp(s, "0"))
		return 0;
	if (strcmp(s, "1"))
		return bad(var, s);
	*out = 1;
	return 0;
}

static int env_provider(const char **p)
{
	const char *s = getenv("COOP_PROVIDER");

	*p = NULL;
	if (!s || !*s)
		return 0;
	if (strcmp(s, "shm") && strcmp(s, "kmod"))
		return bad("COOP_PROVIDER", s);
	*p = s;
	return 0;
}

int coop_config_load(struct coop_config *cfg)
{
	const char *v = getenv("COOP_VERBOSE");
	size_t ms;
	int rc = 0;

	memset(cfg, 0, sizeof(*cfg));
	cfg->verbose = v && *v && strcmp(v, "0");
	rc |= env_size("COOP_EAGER_MAX", DEF_EAGER_MAX, 0, 1u << 20,
		       &cfg->eager_max);
	rc |= env_size("COOP_COOP_MIN", DEF_COOP_MIN, 0, (size_t)1 << 40,
		       &cfg->coop_min);
	rc |= env_size("COOP_CHUNK", DEF_CHUNK, 4096, 1u << 30, &cfg->chunk);
	rc |= env_size("COOP_LOAD_HISTORY", DEF_HISTORY_MS, 0, 3600000, &ms);
	cfg->load_history_ns = (uint64_t)ms * 1000000ULL;
	rc |= env_rndv(&cfg->rndv);
	rc |= env_cma(&cfg->cma_off);
	rc |= env_bool("COOP_OFFLOAD", &cfg->offload);
	rc |= env_ratio("COOP_STRIPE_RATIO", -1, &cfg->stripe_ratio);
	rc |= env_size("COOP_STRIPE_MIN", DEF_STRIPE_MIN, 0, (size_t)1 << 40,
		       &cfg->stripe_min);
	rc |= env_size("COOP_OFFLOAD_BUSY", DEF_OFFLOAD_BUSY, 0,
		       (size_t)1 << 40, &cfg->offload_busy);
	rc |= env_provider(&cfg->provider);
	rc |= env_uint("COOP_RING_SLOTS", DEF_RING_SLOTS, 16, 1u << 20,
		       &cfg->ring_slots);
	rc |= env_uint("COOP_BOUNCE_SLOTS", DEF_BOUNCE, 4, 4096,
		       &cfg->bounce_slots);
	rc |= env_uint("COOP_SPIN", DEF_SPIN, 0, 1u << 30, &cfg->spin);
	rc |= env_uint("COOP_SLEEP_US", DEF_SLEEP_US, 0, 10000,
		       &cfg->sleep_us);
	rc |= env_uint("COOP_BOOT_TIMEOUT", DEF_BOOT, 1, 86400,
		       &cfg->boot_timeout);
	if (!rc && (cfg->ring_slots & (cfg->ring_slots - 1)))
		rc = bad("COOP_RING_SLOTS", getenv("COOP_RING_SLOTS"));
	return rc ? COOP_ERR_CONFIG : COOP_SUCCESS;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h;
}

uint64_t coop_config_hash(const struct coop_config *cfg, const char *prov)
{
	uint64_t h = 0x636f6f70ULL;
	const char *c;

	h = mix(h, cfg->eager_max);
	h = mix(h, cfg->coop_min);
	h = mix(h, (uint64_t)cfg->rndv);
	for (c = prov; *c; c++)
		h = mix(h, (unsigned char)*c);
	return h;
}
