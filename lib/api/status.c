/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * status.c - coop_info --status: whether this process would use the
 * driver, and if not why, with what an administrator needs beside it
 * (versions, device permissions, engines, limits), as ucx_info -d and
 * ompi_info tell theirs.
 */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "coopmpi.h"
#include "kmod_probe.h"
#include "provider.h"
#include "api_int.h"

#define SYSFS "/sys/kernel/coopmpi/"
#define PARAMS "/sys/module/coopmpi/parameters/"

static const char *file_text(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");

	buf[0] = 0;
	if (f) {
		if (!fgets(buf, (int)len, f))
			buf[0] = 0;
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = 0;
	return buf[0] ? buf : "?";
}

static void print_module(FILE *out, const struct coop_kmod_status *st)
{
	char a[64], b[64], c[64];

	fprintf(out, "library:    libcoopmpi %s, ABI %u\n", COOPMPI_VERSION,
		COOPMPI_ABI_VERSION);
	if (st->state == COOP_KMOD_ABSENT && !st->module_version[0]) {
		fprintf(out, "module:     not loaded\n");
		return;
	}
	fprintf(out, "module:     coopmpi.ko %s, ABI %u\n",
		st->module_version[0] ? st->module_version : "?",
		st->module_abi);
	fprintf(out, "device:     /dev/coopmpi %s\n",
		st->device[0] ? st->device : "absent");
	fprintf(out, "use:        %s endpoints, %s domains now\n",
		file_text(SYSFS "endpoints", a, sizeof(a)),
		file_text(SYSFS "nr_domains", b, sizeof(b)));
	fprintf(out, "per user:   %s endpoints, %s domains, %s DMA "
		"descriptors in flight at most\n",
		file_text(PARAMS "user_max_endpoints", a, sizeof(a)),
		file_text(PARAMS "user_max_domains", b, sizeof(b)),
		file_text(PARAMS "user_max_dma_inflight", c, sizeof(c)));
	fprintf(out, "DMA engine: %s", file_text(SYSFS "dma_engine", a,
						   sizeof(a)));
	if (!strcmp(a, "hw"))
		fprintf(out, " (%s)", file_text(SYSFS "dma_channel", b,
						sizeof(b)));
	fprintf(out, "\n");
}

/* Which provider coop_init would open here, and why: 0 when it is the
 * driver or the one COOP_PROVIDER asks for, 1 for a fallback or none. */
static int print_provider(FILE *out, const struct coop_config *cfg,
			  const struct coop_kmod_status *st)
{
	char cause[256];

	coop_kmod_cause(st, cause, sizeof(cause));
	if (cfg->provider == COOP_PROVIDER_SHM) {
		fprintf(out, "provider:   shm (COOP_PROVIDER=shm)\n");
		return 0;
	}
	if (st->state == COOP_KMOD_READY) {
		fprintf(out, "provider:   kmod (%s)\n", cause);
		return 0;
	}
	if (cfg->provider == COOP_PROVIDER_KMOD)
		fprintf(out, "provider:   none: COOP_PROVIDER=kmod, but %s; "
			"coop_init would fail\n", cause);
	else
		fprintf(out, "provider:   shm, because %s\n", cause);
	fprintf(out, "fix:        %s\n", coop_kmod_fix(st));
	return 1;
}

static void print_engine(FILE *out, const struct coop_config *cfg)
{
	char hca[160];
	const char *dev = cfg->hca_device[0] ? cfg->hca_device : NULL;
	int rc = coop_hca_describe(dev, hca, sizeof(hca));

	if (cfg->engine == COOP_ENGINE_HCA)
		fprintf(out, "offload:    COOP_ENGINE=hca: %s%s\n", hca,
			rc ? "; coop_init would fail" : "");
	else
		fprintf(out, "offload:    COOP_ENGINE=dma (the driver's DMA "
			"channel); HCA: %s\n", hca);
}

int coop_status_print(FILE *out)
{
	struct coop_kmod_status st;
	struct coop_config cfg;
	int rc;

	if (coop_config_load(&cfg))
		return 2;
	coop_kmod_probe(&st);
	print_module(out, &st);
	rc = print_provider(out, &cfg, &st);
	print_engine(out, &cfg);
	return rc;
}
