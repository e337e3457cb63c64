/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kmod_probe.c - names what keeps a process from coopmpi.ko, so that a
 * fallback to shared memory says why, and what to do about it, instead
 * of only that it happened.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coopmpi_uapi.h"
#include "kmod_probe.h"

#define KMOD_DEVICE "/dev/" COOPMPI_DEVICE_NAME
#define MODULE_VERSION_FILE "/sys/module/coopmpi/version"
#define MODULE_ABI_FILE "/sys/kernel/coopmpi/version"

static void read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");

	buf[0] = 0;
	if (!f)
		return;
	if (!fgets(buf, (int)len, f))
		buf[0] = 0;
	buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

static void mode_text(mode_t m, char *s)
{
	static const char rwx[] = "rwxrwxrwx";
	int i;

	s[0] = S_ISCHR(m) ? 'c' : '?';
	for (i = 0; i < 9; i++)
		s[i + 1] = m & (1u << (8 - i)) ? rwx[i] : '-';
	s[10] = 0;
}

/* "crw-rw---- root:coopmpi", for the messages */
static void device_text(struct coop_kmod_status *st)
{
	struct passwd *pw;
	struct group *gr;
	struct stat sb;
	char mode[11], uid[16], gid[16];

	st->device[0] = 0;
	if (stat(KMOD_DEVICE, &sb))
		return;
	mode_text(sb.st_mode, mode);
	pw = getpwuid(sb.st_uid);
	gr = getgrgid(sb.st_gid);
	snprintf(uid, sizeof(uid), "%u", (unsigned)sb.st_uid);
	snprintf(gid, sizeof(gid), "%u", (unsigned)sb.st_gid);
	snprintf(st->device, sizeof(st->device), "%s %s:%s", mode,
		 pw ? pw->pw_name : uid, gr ? gr->gr_name : gid);
}

static void module_text(struct coop_kmod_status *st)
{
	char abi[16];

	read_line(MODULE_VERSION_FILE, st->module_version,
		  sizeof(st->module_version));
	if (!st->module_abi) {
		read_line(MODULE_ABI_FILE, abi, sizeof(abi));
		st->module_abi = (unsigned)strtoul(abi, NULL, 10);
	}
}

enum coop_kmod_state coop_kmod_state_of(int rc)
{
	switch (-rc) {
	case 0:
		return COOP_KMOD_READY;
	case ENOENT:
	case ENODEV:
	case ENXIO:
		return COOP_KMOD_ABSENT;
	case EACCES:
	case EPERM:
		return COOP_KMOD_DENIED;
	case EPROTO:
		return COOP_KMOD_ABI;
	case EMFILE:
	case ENFILE:
	case ENOSPC:
	case EDQUOT:
		return COOP_KMOD_LIMIT;
	default:
		return COOP_KMOD_ERROR;
	}
}

void coop_kmod_explain(int rc, struct coop_kmod_status *st)
{
	memset(st, 0, sizeof(*st));
	st->err = -rc;
	st->state = coop_kmod_state_of(rc);
	device_text(st);
	module_text(st);
}

void coop_kmod_probe(struct coop_kmod_status *st)
{
	struct coopmpi_info info = { .size = sizeof(info) };
	int fd, err = 0;

	fd = open(KMOD_DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		err = errno;
	else if (ioctl(fd, COOPMPI_IOC_INFO, &info))
		err = errno;
	else if (info.abi_version != COOPMPI_ABI_VERSION)
		err = EPROTO;
	if (fd >= 0)
		close(fd);
	coop_kmod_explain(-err, st);
	if (fd >= 0 && info.abi_version)
		st->module_abi = info.abi_version;
}

static const char *limit_text(int err)
{
	switch (err) {
	case ENOSPC:
		return "the job's domain is full: the module's max_endpoints";
	case EDQUOT:
		return "this user owns user_max_domains domains already";
	case ENFILE:
		return "the system's open files";
	default:
		return "this process's RLIMIT_NOFILE or the module's "
		       "user_max_endpoints";
	}
}

const char *coop_kmod_cause(const struct coop_kmod_status *st, char *buf,
			    size_t len)
{
	switch (st->state) {
	case COOP_KMOD_READY:
		snprintf(buf, len, "coopmpi.ko %s (ABI %u) is ready",
			 st->module_version, st->module_abi);
		break;
	case COOP_KMOD_ABSENT:
		snprintf(buf, len, KMOD_DEVICE " is absent (the coopmpi "
			 "module is not loaded)");
		break;
	case COOP_KMOD_DENIED:
		snprintf(buf, len, KMOD_DEVICE ": permission denied (%s; "
			 "this process runs as uid %u)", st->device,
			 (unsigned)geteuid());
		break;
	case COOP_KMOD_ABI:
		snprintf(buf, len, "ABI mismatch: coopmpi.ko %s speaks ABI "
			 "%u, this libcoopmpi %s speaks ABI %u",
			 st->module_version[0] ? st->module_version : "?",
			 st->module_abi, COOPMPI_VERSION, COOPMPI_ABI_VERSION);
		break;
	case COOP_KMOD_LIMIT:
		snprintf(buf, len, KMOD_DEVICE ": too many endpoints (%s: %s)",
			 strerror(st->err), limit_text(st->err));
		break;
	default:
		snprintf(buf, len, KMOD_DEVICE ": %s", strerror(st->err));
	}
	return buf;
}

const char *coop_kmod_fix(const struct coop_kmod_status *st)
{
	switch (st->state) {
	case COOP_KMOD_ABSENT:
		return "load it with `sudo modprobe coopmpi` (README, Install)";
	case COOP_KMOD_DENIED:
		return "ask the administrator for access to " KMOD_DEVICE
		       " (README, Permissions)";
	case COOP_KMOD_ABI:
		return "install the module and the library of one release "
		       "(`coop_info --status` shows both)";
	case COOP_KMOD_LIMIT:
		return "run fewer processes or raise the limit "
		       "(README, Troubleshooting)";
	case COOP_KMOD_ERROR:
		return "see `coop_info --status`";
	default:
		return "";
	}
}
