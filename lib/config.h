/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* config.h - tunables read from the environment at coop_init(). */
#ifndef COOP_CONFIG_H
#define COOP_CONFIG_H

#include <stddef.h>
#include <stdint.h>

enum coop_rndv_mode {
	COOP_RNDV_AUTO,
	COOP_RNDV_RGET,
	COOP_RNDV_RPUT,
	COOP_RNDV_RTR,
	COOP_RNDV_COOP,
	COOP_RNDV_DMA,
	COOP_RNDV_STRIPE,
};

struct coop_config {
	size_t eager_max;	/* COOP_EAGER_MAX: bounce-eager limit */
	size_t coop_min;	/* COOP_COOP_MIN: auto -> COOP-p2p threshold */
	size_t chunk;		/* COOP_CHUNK: rendezvous copy granularity */
	uint64_t load_history_ns;	/* COOP_LOAD_HISTORY (ms): half-life
					 * of COOP-load's copy history */
	enum coop_rndv_mode rndv;	/* COOP_RNDV */
	int cma_off;		/* COOP_CMA=off */
	int offload;		/* COOP_OFFLOAD=1: auto mode may use DMA */
	double stripe_ratio;	/* COOP_STRIPE_RATIO: engine/CPU bandwidth,
				 * < 0: measure it, 0: never stripe */
	size_t stripe_min;	/* COOP_STRIPE_MIN: smaller: not striped */
	size_t offload_busy;	/* COOP_OFFLOAD_BUSY: node-wide engine bytes
				 * in flight that stop new offloads */
	int verbose;		/* COOP_VERBOSE */
	const char *provider;	/* COOP_PROVIDER or NULL */
	unsigned ring_slots;	/* COOP_RING_SLOTS */
	unsigned bounce_slots;	/* COOP_BOUNCE_SLOTS */
	unsigned spin;		/* COOP_SPIN */
	unsigned sleep_us;	/* COOP_SLEEP_US: longest sleep, 0 never */
	unsigned boot_timeout;	/* COOP_BOOT_TIMEOUT, seconds */
};

/* Fill cfg from defaults and the environment; COOP_ERR_CONFIG on a bad
 * value (and one line on stderr naming it). */
int coop_config_load(struct coop_config *cfg);
/* Hash of the settings all ranks must agree on. */
uint64_t coop_config_hash(const struct coop_config *cfg, const char *prov);
const char *coop_rndv_name(enum coop_rndv_mode m);

#endif
