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

#include <stdint.h>

/*
 * A sequence count over a record that one writer changes in place and
 * readers in other processes copy (published tables): odd while the
 * writer is at it; a reader keeps its copy only when it read the same
 * even count before and after (coop_seq_read_retry() == 0).  The record's
 * fields are read and written with the relaxed forms between.
 */
static inline void coop_seq_write_begin(uint32_t *seq)
{
	STORE_RLX(seq, LOAD_RLX(seq) + 1);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static inline void coop_seq_write_end(uint32_t *seq)
{
	STORE_REL(seq, LOAD_RLX(seq) + 1);
}

/* The count to give coop_seq_read_retry(); odd: the writer is at it. */
static inline uint32_t coop_seq_read_begin(const uint32_t *seq)
{
	return LOAD_ACQ(seq);
}

static inline int coop_seq_read_retry(const uint32_t *seq, uint32_t s)
{
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return (s & 1) || LOAD_RLX(seq) != s;
}

#endif /* COOP_ATOMIC_H */
