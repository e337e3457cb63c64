/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * provider.c - provider registry and selection.
 *
 * Preference order: kmod, then shm; a fallback says why (kmod_probe.c).
 * COOP_PROVIDER=kmod|shm forces one (a forced provider that cannot open is
 * an error, not a fallback).  COOP_ENGINE=hca then puts the HCA
 * engine on top of the one opened (an error too when it cannot).
 */
#include <errno.h>
#include <string.h>

#include "kmod_probe.h"
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

/* The cause (and the fix) of kmod's failure to open with rc; its state. */
static enum coop_kmod_state kmod_failure(int rc, char *buf, size_t len,
					 const char **fix)
{
	struct coop_kmod_status st;

	coop_kmod_explain(rc, &st);
	*fix = coop_kmod_fix(&st);
	coop_kmod_cause(&st, buf, len);
	return st.state;
}

static int open_forced(struct coop_provider *p, const char *name,
		       uint64_t job_key)
{
	const struct coop_provider_ops *ops = coop_provider_find(name);
	const char *fix;
	char cause[256];
	int rc;

	if (!ops) {
		coop_log(p->rank, "provider %s forced but not built in", name);
		return -ENOSYS;
	}
	rc = try_open(p, ops, job_key);
	if (rc && ops == &coop_provider_kmod) {
		kmod_failure(rc, cause, sizeof(cause), &fix);
		coop_log(p->rank, "error: COOP_PROVIDER=kmod, but %s; fix: %s",
			 cause, fix);
	} else if (rc) {
		coop_log(p->rank, "provider %s forced but failed: %s", name,
			 strerror(-rc));
	} else if (p->verbose) {
		coop_log(p->rank, "provider %s (forced by COOP_PROVIDER)",
			 name);
	}
	return rc;
}

/* Once the shm provider stands in for kmod, which failed with kmod_rc:
 * the choice when verbose, and a line with the fix - from rank 0 when
 * the cause is the node's (every rank meets it), from the rank itself
 * when it may be its own (a limit). */
static void report_fallback(const struct coop_provider *p, int kmod_rc)
{
	enum coop_kmod_state state;
	const char *fix;
	char cause[256];
	int warn;

	/* the rank's own cause, or rank 0 for the node's */
	state = coop_kmod_state_of(kmod_rc);
	warn = p->warn_fallback && (p->rank == 0 || state == COOP_KMOD_LIMIT ||
				    state == COOP_KMOD_ERROR);
	if (!p->verbose && !warn)
		return;
	kmod_failure(kmod_rc, cause, sizeof(cause), &fix);
	if (p->verbose)
		coop_log(p->rank, "provider shm (%s)", cause);
	if (!warn)
		return;
	coop_log(p->rank, "%s: %s; using the shm provider instead; fix: %s "
		 "(COOP_WARN_FALLBACK=0 silences this)",
		 state == COOP_KMOD_ABSENT ? "note" : "warning", cause, fix);
}

static int open_base(struct coop_provider *p, const char *name,
		     uint64_t job_key)
{
	int kmod_rc, rc;

	if (name)
		return open_forced(p, name, job_key);
	kmod_rc = try_open(p, &coop_provider_kmod, job_key);
	if (!kmod_rc) {
		if (p->verbose)
			coop_log(p->rank, "provider kmod (" KMOD_DEV
				 " present)");
		return 0;
	}
	rc = try_open(p, &coop_provider_shm, job_key);
	if (!rc)
		report_fallback(p, kmod_rc);
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
