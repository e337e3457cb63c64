/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * guard.h - a dynamic node domain's guard: what removes the /dev/shm files
 * of a domain whose endpoints were all killed (guard.c).
 */
#ifndef COOP_GUARD_H
#define COOP_GUARD_H

#include <stdint.h>

/*
 * Join domain key's members, for a holder of the domain's lock: a shared
 * lock on its "coopmpi-<key>-live" file, which the kernel drops when we
 * exit, however we exit; and a guard for the domain on this node if it
 * has none.  Returns the fd that holds the lock (close it after leaving
 * the domain, files removed), or -errno.
 */
int coop_guard_join(uint64_t key);

#endif
