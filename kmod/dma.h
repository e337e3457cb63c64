/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internals of the DMA-engine channel, shared by dma*.c.
 *
 *   dma.c       parameters, engine selection, per-endpoint state, the
 *               completion queue, submission (ioctl and io_uring) and
 *               completion delivery
 *   dma_sched.c which descriptor a worker serves next: users take turns
 *   dma_xfer.c  the worker: one chunk of a descriptor per run (pin both
 *               sides, let the engine copy, unpin), then the notification
 *   dma_soft.c  the soft engine: the worker's CPU copies the chunk
 *   dma_hw.c    the dmaengine engine: map the chunk's pages, one memcpy
 *               descriptor per page pair, wait for the callbacks, unmap
 *
 * A descriptor is processed by one worker at a time and goes back to its
 * user's queue after each chunk, so users share the dma_workers workers
 * fairly (dma_sched.c) and pinned memory is bounded node-wide by
 * dma_workers * (2 * copy_chunk_pages + 1) pages.
 * Workers never sleep on user memory: mmap_lock is only tried, pages are
 * pinned with FOLL_NOWAIT, file and userfaultfd mappings are not faulted
 * at all, and a page that is not there yet is retried later from a
 * timer, so every run of a work item takes bounded time and endpoint
 * release can wait for them.  A descriptor fails with -ETIMEDOUT once
 * dma_deadline_ms passed since it was accepted.
 */
#ifndef COOPMPI_DMA_H
#define COOPMPI_DMA_H

#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/spinlock.h>
#include <linux/timer.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "coopmpi.h"

/* Per-endpoint channel state (ep->dma), freed at endpoint release. */
struct coopmpi_dma_ep {
	spinlock_t lock;
	unsigned int inflight;		/* lock: accepted, not finished */
	u64 inflight_bytes;		/* lock */
	u64 cq_reserved;		/* lock: DMA_SUBMIT descriptors accepted */
	u64 cq_tail;			/* lock: CQEs posted */
	bool closing;			/* lock; workers read it unlocked */
	wait_queue_head_t poll_wq;	/* CQ became non-empty (EPOLLPRI) */
	wait_queue_head_t idle_wq;	/* release waits for inflight == 0 */
	struct coopmpi_shm *cq;		/* refcounted: vmas may outlive us */
	struct coopmpi_dma_cq_hdr *cq_hdr;
	struct coopmpi_dma_cqe *cqes;
	u32 cq_entries;
};

/* One accepted descriptor. */
struct coopmpi_dma_op {
	struct list_head sched_node;	/* dma_sched.c: its user's queue */
	struct timer_list retry;	/* dma_sched.c: back to the queue */
	struct coopmpi_user *user;	/* the domain owner's, for fairness */
	unsigned int backoff;		/* retries of a page that would wait */
	unsigned long deadline;		/* jiffies: then -ETIMEDOUT */
	struct coopmpi_dma_ep *dep;
	struct coopmpi_domain *domain;	/* the submitter's, for counters */
	struct io_uring_cmd *ioucmd;	/* NULL: completes to the CQ */
	struct coopmpi_region *src_r;	/* NULL: source in the submitter */
	struct coopmpi_region *dst_r;
	struct coopmpi_region *ntf_r;	/* NULL: no notification */
	struct mm_struct *src_mm;	/* mmgrab'd */
	struct mm_struct *pin_mm;	/* the submitter's, mmgrab'd: pin.c */
	unsigned long pin_limit;	/* its RLIMIT_MEMLOCK, pages */
	struct task_struct *task;	/* the submitter, referenced */
	u64 src_addr;			/* next source byte */
	u64 dst_addr;			/* next destination byte */
	u64 ntf_addr;
	u64 length;
	u64 done;			/* bytes copied */
	u64 tag;
	u8 ntf_data[COOPMPI_DMA_NOTIFY_SIZE];
};

/* The pinned pages of one chunk: src_off/dst_off into the first page. */
struct coopmpi_dma_chunk {
	struct page **src_pages;
	struct page **dst_pages;
	dma_addr_t *src_dma;		/* scratch of the hw engine */
	dma_addr_t *dst_dma;
	unsigned int src_off;
	unsigned int dst_off;
	size_t len;
};

/* A piece of a chunk that lies within one source and one destination page. */
struct coopmpi_dma_seg {
	unsigned int si, di;		/* page indexes */
	unsigned int soff, doff;	/* offsets in those pages */
	size_t len;
};

/* The segment at byte @pos of @c; false past the end. */
static inline bool coopmpi_dma_seg_at(const struct coopmpi_dma_chunk *c,
				      size_t pos, struct coopmpi_dma_seg *s)
{
	size_t sa = c->src_off + pos, da = c->dst_off + pos;

	if (pos >= c->len)
		return false;
	s->si = sa >> PAGE_SHIFT;
	s->soff = sa & ~PAGE_MASK;
	s->di = da >> PAGE_SHIFT;
	s->doff = da & ~PAGE_MASK;
	s->len = min_t(size_t, PAGE_SIZE - max(s->soff, s->doff),
		       c->len - pos);
	return true;
}

static inline unsigned int coopmpi_dma_chunk_pages(unsigned int off,
						   size_t len)
{
	return DIV_ROUND_UP(off + len, PAGE_SIZE);
}

extern struct workqueue_struct *coopmpi_dma_wq;
extern unsigned int coopmpi_dma_timeout_ms;

/* dma.c */
int coopmpi_dma_copy_chunk(const struct coopmpi_dma_chunk *c);
void coopmpi_dma_op_finish(struct coopmpi_dma_op *op, int status);

/* dma_xfer.c */
void coopmpi_dma_op_run(struct coopmpi_dma_op *op);

/* dma_sched.c */
int coopmpi_dma_sched_init(unsigned int workers);
void coopmpi_dma_sched_exit(void);
void coopmpi_dma_sched_init_op(struct coopmpi_dma_op *op);
void coopmpi_dma_sched_ready(struct coopmpi_dma_op *op);
void coopmpi_dma_sched_retry(struct coopmpi_dma_op *op, unsigned long delay);

/* dma_soft.c */
int coopmpi_dma_soft_copy(const struct coopmpi_dma_chunk *c);

/* dma_hw.c */
int coopmpi_dma_hw_init(void);
void coopmpi_dma_hw_exit(void);
const char *coopmpi_dma_hw_name(void);
int coopmpi_dma_hw_copy(const struct coopmpi_dma_chunk *c);

#endif /* COOPMPI_DMA_H */
