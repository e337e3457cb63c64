/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * provider.c - provider registry and selection.
 *
 * Preference order: kmod (when /dev/coopmpi exists), then shm.
 * COOP_PROVIDER=kmod|shm forces one (a forced provider that cannot open is
 * an error, not a silent fallback).  COOP_ENGINE=hca then puts the HCA
 * engine on top of the one opened (an error too when it cannot).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "provider.h"
#include "util.h"

#define KMOD_DEV "/dev/" COOPMPI_DEVICE_NAME

const struct coop_provider_ops *coop_provider_find(const char *name)
{
	if (!strcmp(name, "shm"))
		return &coop_provider_shm;
	if (!strcmp(name, "kmod"))
		return &coop_provider_kmod;
	return NULL;
}

static int try_open(struct coop_provider *p,
		    const struct coop_provider_ops *ops, uint64_t key)
{
	int rc;

	p->ops = ops;
	p->priv = NULL;
	p->engine = NULL;
	p->engine_load = NULL;
	p->caps = 0;	/* not what a provider that failed to open set */
	rc = ops->open(p, key, p->rank, p->nranks);
	if (rc) {
		if (p->priv)
			ops->close(p);
		p->ops = NULL;
	}
	return rc;
}

static int open_forced(struct coop_provider *p, const char *name,
		       uint64_t key)
{
	const struct coop_provider_ops *ops = coop_provider_find(name);
	int rc;

	if (!ops) {
		coop_log(p->rank, "provider %s forced but not built in", name);
		return -ENOSYS;
	}
	rc = try_open(p, ops, key);
	if (rc)
		coop_log(p->rank, "provider %s forced but failed: %s", name,
			 strerror(-rc));
	else if (p->verbose)
		coop_log(p->rank, "provider %s (forced by COOP_PROVIDER)",
			 name);
	return rc;
}

static int open_base(struct coop_provider *p, const char *name,
		     uint64_t job_key)
{
	const char *why;
	int rc;

	if (name)
		return open_forced(p, name, job_key);
	if (access(KMOD_DEV, R_OK | W_OK))
		why = KMOD_DEV " not present";
	else if ((rc = try_open(p, &coop_provider_kmod, job_key)) != 0)
		why = "kmod open failed";
	else {
		if (p->verbose)
			coop_log(p->rank, "provider kmod (" KMOD_DEV
				 " present)");
		return 0;
	}
	rc = try_open(p, &coop_provider_shm, job_key);
	if (!rc && p->verbose)
		coop_log(p->rank, "provider shm (%s)", why);
	return rc;
}

int coop_provider_open(struct coop_provider *p, const char *name,
		       uint64_t job_key)
{
	int rc = open_base(p, name, job_key);

	if (rc || p->engine_want != COOP_ENGINE_HCA)
		return rc;
	rc = coop_hca_attach(p);
	if (rc) {
		p->ops->close(p);
		p->ops = NULL;
	}
	return rc;
}
