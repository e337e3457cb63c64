// SPDX-License-Identifier: GPL-2.0
/*
 * Pinned pages are charged to an address space's pinned_vm against its
 * RLIMIT_MEMLOCK, as RDMA and io_uring charge theirs: a COPY to the
 * caller's, a DMA descriptor's chunk to its submitter's.  Pins last one
 * chunk, so the charge is short, but how many chunks a user pins at once
 * (threads, endpoints) is bounded by the same limit as its other pins.
 * CAP_IPC_LOCK lifts the limit.
 */
#include <linux/capability.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>

#include "coopmpi.h"

/* The current task's limit in pages; ULONG_MAX without one. */
unsigned long coopmpi_pin_limit(void)
{
	unsigned long lim = rlimit(RLIMIT_MEMLOCK);

	/* noaudit: most callers are within the limit anyway */
	if (lim == RLIM_INFINITY || has_capability_noaudit(current, CAP_IPC_LOCK))
		return ULONG_MAX;
	return lim >> PAGE_SHIFT;
}

/* Room left within @limit with @pinned pages pinned already. */
static unsigned long room_at(s64 pinned, unsigned long limit)
{
	if (limit == ULONG_MAX)
		return ULONG_MAX;
	return pinned < 0 || (u64)pinned >= limit ? 0 : limit - pinned;
}

/* How many pages @mm may still pin within @limit (a hint: racy). */
unsigned long coopmpi_pin_room(struct mm_struct *mm, unsigned long limit)
{
	return room_at(atomic64_read(&mm->pinned_vm), limit);
}

/*
 * Charges up to @nr pages to @mm within @limit: returns how many, fewer
 * than @nr when the limit leaves less room, 0 when it leaves none.
 */
unsigned long coopmpi_pin_charge(struct mm_struct *mm, unsigned long nr,
				 unsigned long limit)
{
	s64 old = atomic64_read(&mm->pinned_vm);
	unsigned long n;

	do {
		n = min(nr, room_at(old, limit));
		if (!n)
			return 0;
	} while (!atomic64_try_cmpxchg(&mm->pinned_vm, &old, old + n));
	return n;
}

void coopmpi_pin_uncharge(struct mm_struct *mm, unsigned long nr)
{
	atomic64_sub(nr, &mm->pinned_vm);
}
