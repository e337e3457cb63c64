// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard.c - a dynamic node domain's guard.
 *
 * The last endpoint to leave a domain removes its files (context.c), and
 * a launcher removes those of its job's ranks when they die (cooprun,
 * coopmpi-run's coop_info --reap) - on its own node.  On the other nodes
 * of a job whose ranks were killed nobody is left to do it.  So every
 * member holds a shared flock on the domain's "-live" file, which the
 * kernel drops when the process dies, and one guard per domain and node -
 * a shell in a session of its own, so that the job's kill does not reach
 * it - waits for the exclusive lock: the moment no member is left.  Then,
 * under the domain lock and if no member joined meanwhile, it removes the
 * domain's files; if they are gone already (the last member left
 * cleanly) or belong to a new domain of the same name, it just ends.
 * Waiting for a lock costs no CPU, and a guard that exits takes nothing
 * with it: the worst a missing one (no /bin/sh, no flock(1)) leaves is
 * what coop_info --reap removes.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guard.h"

/* sh -c GUARD_SH coopmpi-guard KEY.  fd 7: the guard's own lock (one
 * guard per domain), taken by the spawner and inherited; 8: the
 * members' file; 9: the domain lock.  Few processes: under emulation
 * each one costs the joiner that starts a guard, and the machine. */
static const char guard_sh[] =
	"k=/dev/shm/coopmpi-$1\n"
	"{\n"
	"  exec 8<\"$k-live\" || exit 0\n"
	"  while flock -x 8 && flock -u 8; do\n"
	"    exec 9<\"$k-lock\" && flock -x 9 || exit 0\n"
	"    [ /proc/self/fd/8 -ef \"$k-live\" ] || exit 0\n"
	"    flock -n -x 8 && { rm -f \"$k\"-*; exit 0; }\n"
	"    exec 9<&-\n"
	"  done\n"
	"} </dev/null >/dev/null 2>&1 &\n";

static int domain_file(uint64_t key, const char *what)
{
	char name[64];
	int fd;

	snprintf(name, sizeof(name), "/coopmpi-%016llx-%s",
		 (unsigned long long)key, what);
	fd = shm_open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	return fd < 0 ? -errno : fd;
}

/* Start the guard: a session of its own, default signals, no fds of
 * ours but guard_lock (held: it passes to the guard as fd 7); the shell
 * we wait for leaves it running in the background. */
static void spawn_guard(uint64_t key, int guard_lock)
{
	char *env[] = { "PATH=/usr/bin:/bin", NULL }, arg[17];
	char *argv[] = { "sh", "-c", (char *)guard_sh, "coopmpi-guard", arg,
			 NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t all, none;
	pid_t pid;
	int fd;

	snprintf(arg, sizeof(arg), "%016llx", (unsigned long long)key);
	sigfillset(&all);
	sigemptyset(&none);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID |
				 POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawn_file_actions_init(&fa);
	for (fd = 0; fd < 3; fd++)
		posix_spawn_file_actions_addopen(&fa, fd, "/dev/null", O_RDWR, 0);
	posix_spawn_file_actions_adddup2(&fa, guard_lock, 7);
	if (!posix_spawn(&pid, "/bin/sh", &fa, &attr, argv, env))
		waitpid(pid, NULL, 0);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
}

int coop_guard_join(uint64_t key)
{
	int live = domain_file(key, "live"), guard;

	if (live < 0)
		return live;
	if (flock(live, LOCK_SH)) {
		guard = -errno;
		close(live);
		return guard;
	}
	guard = domain_file(key, "guard");
	if (guard >= 0 && !flock(guard, LOCK_EX | LOCK_NB))
		spawn_guard(key, guard);	/* none watches the domain */
	if (guard >= 0)
		close(guard);
	return live;
}
