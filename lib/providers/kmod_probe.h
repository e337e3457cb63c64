/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kmod_probe.h - why this process can or cannot use coopmpi.ko: the
 * cause a fallback to the shm provider names, and coop_info --status.
 */
#ifndef COOP_KMOD_PROBE_H
#define COOP_KMOD_PROBE_H

#include <stddef.h>

enum coop_kmod_state {
	COOP_KMOD_READY,	/* the device opens and speaks our ABI */
	COOP_KMOD_ABSENT,	/* no /dev/coopmpi: the module is not loaded */
	COOP_KMOD_DENIED,	/* the device is there; we may not open it */
	COOP_KMOD_ABI,		/* the module speaks another ABI */
	COOP_KMOD_LIMIT,	/* too many endpoints or domains */
	COOP_KMOD_ERROR,	/* anything else: err says what */
};

struct coop_kmod_status {
	enum coop_kmod_state state;
	int err;			/* errno of the step that failed */
	unsigned module_abi;		/* 0 when the module did not say */
	char module_version[32];	/* modinfo's version, "" if unknown */
	char device[96];		/* "crw-rw---- root:coopmpi", "" */
};

/* The state behind a failed kmod open's rc (-errno), without the
 * details coop_kmod_explain() reads (stat, passwd, sysfs). */
enum coop_kmod_state coop_kmod_state_of(int rc);

/* Opens the device and asks its ABI (no domain is joined). */
void coop_kmod_probe(struct coop_kmod_status *st);

/* The status behind a failed kmod open that returned rc (-errno):
 * ENOENT absent, EACCES/EPERM denied, EPROTO another ABI, EMFILE,
 * ENFILE, ENOSPC and EDQUOT limits. */
void coop_kmod_explain(int rc, struct coop_kmod_status *st);

/* One line each: what stands in the way, and what fixes it ("" when
 * nothing does, e.g. READY). */
const char *coop_kmod_cause(const struct coop_kmod_status *st, char *buf,
			    size_t len);
const char *coop_kmod_fix(const struct coop_kmod_status *st);

#endif
