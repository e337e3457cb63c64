/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * node.h - which processes this one can connect with (node.c).
 */
#ifndef COOP_NODE_H
#define COOP_NODE_H

#include <stdint.h>

/*
 * A hash of what a connection between two endpoints needs in common: the
 * kernel (its boot id), the /dev/shm that holds the domains' files and
 * the PID namespace in which peers' pids mean something.  Processes on
 * other machines, or in containers with a /dev/shm or PID namespace of
 * their own, have another.
 */
uint64_t coop_node_scope(void);

#endif
