/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * atomic.h - the memory orders of the shared-memory protocols (rings,
 * fast boxes, the collectives' canaries), spelled
 * once: a reader that sees a flag with LOAD_ACQ sees everything its
 * writer stored before STORE_REL of it.  Plain counters that order
 * nothing use the relaxed forms.
 */
#ifndef COOP_ATOMIC_H
#define COOP_ATOMIC_H

#define LOAD_ACQ(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define LOAD_RLX(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE_REL(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define STORE_RLX(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

#endif /* COOP_ATOMIC_H */
