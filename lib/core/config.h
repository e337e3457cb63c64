/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* config.h - the settings read from the environment at coop_init(); the
 * table of them (names, defaults, ranges, documentation) is config.c. */
#ifndef COOP_CONFIG_H
#define COOP_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum coop_rndv_mode {
	COOP_RNDV_AUTO,
	COOP_RNDV_RGET,
	COOP_RNDV_RPUT,
	COOP_RNDV_RTR,
	COOP_RNDV_COOP,
	COOP_RNDV_DMA,
	COOP_RNDV_STRIPE,
	COOP_RNDV_PRECOPY,
	COOP_RNDV_POSTCOPY,
	COOP_RNDV_PROFILE,
};

/* COOP_PROGRESS: who advances transfers while the application computes */
enum coop_progress_mode {
	COOP_PROGRESS_MODE_MANUAL,	/* only the application's calls */
	COOP_PROGRESS_MODE_THREAD,	/* a thread that polls */
	COOP_PROGRESS_MODE_SLEEP,	/* a thread asleep on the doorbell */
};

/* COOP_PROGRESS_CPU's "none" */
#define COOP_CPU_NONE	(~0u)
/* COOP_HCA_GID's "auto" */
#define COOP_GID_AUTO	(~0u)
/* room of a text setting, with its NUL */
#define COOP_CFG_TEXT_MAX 64

enum coop_provider_choice {
	COOP_PROVIDER_ANY,
	COOP_PROVIDER_KMOD,
	COOP_PROVIDER_SHM,
};

/* One field per entry of config.c's table (its name in the comment). */
struct coop_config {
	size_t eager_max;	/* COOP_EAGER_MAX */
	size_t hybrid_min;	/* COOP_HYBRID_MIN */
	size_t chunk;		/* COOP_CHUNK */
	uint64_t load_history_ns;	/* COOP_LOAD_HISTORY_MS */
	uint64_t load_busy_ns;	/* COOP_LOAD_BUSY_MS */
	int rndv;		/* COOP_RNDV: enum coop_rndv_mode */
	int cma_off;		/* COOP_CMA=off */
	int offload;		/* COOP_OFFLOAD */
	int engine;		/* COOP_ENGINE: enum coop_engine_choice */
	char hca_device[COOP_CFG_TEXT_MAX];	/* COOP_HCA_DEVICE */
	unsigned hca_gid;	/* COOP_HCA_GID, COOP_GID_AUTO */
	unsigned hca_mr_cache;	/* COOP_HCA_MR_CACHE */
	double stripe_ratio;	/* COOP_STRIPE_RATIO, < 0: measure it */
	size_t stripe_min;	/* COOP_STRIPE_MIN */
	size_t offload_busy;	/* COOP_OFFLOAD_BUSY */
	size_t precopy_bytes;	/* COOP_PRECOPY_BYTES */
	size_t postcopy_bytes;	/* COOP_POSTCOPY_BYTES */
	size_t nbr_tree_max;	/* COOP_NEIGHBOR_TREE_MAX */
	size_t nbr_tree_shared;	/* COOP_NEIGHBOR_TREE_SHARED */
	unsigned nbr_tree_slack;	/* COOP_NEIGHBOR_TREE_SLACK */
	unsigned nbr_tree_hop_sends;	/* COOP_NEIGHBOR_TREE_HOP_SENDS */
	int nbr_order;		/* COOP_NEIGHBOR_ORDER: 1 colour rounds, 0 list */
	size_t nbr_eager_max;	/* COOP_NEIGHBOR_EAGER_MAX */
	size_t nbr_eager_shared;	/* COOP_NEIGHBOR_EAGER_SHARED */
	size_t nbr_slot_max;	/* COOP_NEIGHBOR_SLOT_MAX */
	size_t nbr_stream_max;	/* COOP_NEIGHBOR_STREAM_MAX */
	size_t nbr_slot_open;	/* COOP_NEIGHBOR_SLOT_OPEN */
	int nbr_rtr_tree;	/* COOP_NEIGHBOR_RTR: 1 tree, 0 direct */
	unsigned nbr_rtr_arity;	/* COOP_NEIGHBOR_RTR_ARITY */
	unsigned verbose;	/* COOP_VERBOSE */
	int warn_fallback;	/* COOP_WARN_FALLBACK */
	int warn_settings;	/* COOP_WARN_SETTINGS */
	int provider;		/* COOP_PROVIDER: enum coop_provider_choice */
	unsigned ring_slots;	/* COOP_RING_SLOTS */
	unsigned fbox_slots;	/* COOP_FBOX_SLOTS */
	unsigned fbox_senders;	/* COOP_FBOX_SENDERS */
	unsigned bounce_slots;	/* COOP_BOUNCE_SLOTS */
	unsigned windows;	/* COOP_WINDOWS */
	unsigned reg_cache;	/* COOP_REG_CACHE */
	unsigned spin;		/* COOP_SPIN */
	unsigned sleep_us;	/* COOP_SLEEP_US */
	unsigned boot_timeout;	/* COOP_BOOT_TIMEOUT_S */
	int threads;		/* COOP_THREADS: 1 = multiple */
	int progress;		/* COOP_PROGRESS: enum coop_progress_mode */
	unsigned progress_cpu;	/* COOP_PROGRESS_CPU, COOP_CPU_NONE */
};

/* coop_init_from_env()'s own section of the table (scripts/cooprun's
 * variables), which coop_init() does not read. */
struct coop_boot_env {
	unsigned size;		/* COOP_SIZE */
	unsigned rank;		/* COOP_RANK, below size */
	uint64_t job;		/* COOP_JOB */
};

/* Fill cfg from the defaults and the environment; COOP_ERR_CONFIG on a
 * bad value (and one line on stderr naming it). */
int coop_config_load(struct coop_config *cfg);
/* Fill b from the environment: COOP_ERR_CONFIG as coop_config_load,
 * else COOP_ERR_BOOTSTRAP when a variable is missing. */
int coop_config_load_boot(struct coop_boot_env *b);
/* A line on stderr for each COOP_ variable of the environment that is
 * no setting (nor one of the project's scripts and tests), once per
 * process; none when cfg says COOP_WARN_SETTINGS=0. */
void coop_config_warn_env(const struct coop_config *cfg);
/* Print the table with cfg's values (NULL: the environment's), and the
 * boot section's from the environment; the result of loading them (a
 * boot variable missing is none). */
int coop_config_print_table(FILE *out, const struct coop_config *cfg);
/* One line per setting (the boot section's too): the value in effect,
 * the default and where the value comes from; as the above. */
int coop_config_print_brief(FILE *out);
/* Hash of the settings all ranks must agree on. */
uint64_t coop_config_hash(const struct coop_config *cfg, const char *prov);
/* Their names, "A/B/C", for messages. */
const char *coop_config_agreed_names(void);
const char *coop_rndv_name(enum coop_rndv_mode m);
/* COOP_PROVIDER's provider name, NULL for any. */
static inline const char *coop_config_provider(const struct coop_config *c)
{
	return c->provider == COOP_PROVIDER_KMOD ? "kmod" :
	       c->provider == COOP_PROVIDER_SHM ? "shm" : NULL;
}

#endif
