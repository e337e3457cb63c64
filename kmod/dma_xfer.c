// SPDX-License-Identifier: GPL-2.0
/*
 * The DMA worker: moves one chunk of a descriptor per run and requeues
 * it, then writes the notification and completes it.
 *
 * A chunk is at most copy_chunk_pages pages on each side; both sides are
 * pinned only while the engine copies it.  Pinning never waits: not for
 * mmap_lock (trylock), not for I/O (FOLL_NOWAIT), and memory whose
 * faults could wait for a process (file mappings, userfaultfd) is not
 * faulted at all.  What could not be pinned is retried after a growing
 * delay until the descriptor's deadline (dma_deadline_ms), so a user
 * cannot park a shared worker on its memory, and every descriptor ends.
 *
 * The notification is written by the CPU after the engine reported every
 * data byte done, second half first and first half last (one 64-bit
 * store), so a receiver polling the first word never sees it before the
 * data or before the rest of it.
 */
#include <linux/highmem.h>
#include <linux/hugetlb.h>
#include <linux/io_uring_types.h>
#include <linux/magic.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/userfaultfd_k.h>

#include "dma.h"

/* Outcomes of op_step() and op_notify() besides 0 and -errno. */
#define OP_MORE		0	/* op_step(): next chunk, now */
#define OP_DATA_DONE	1	/* op_step(): notify and complete */
#define OP_RETRY	2	/* a page would wait: again after a delay */

/* Longest delay between retries of a page that would wait, jiffies. */
#define OP_MAX_BACKOFF	max(HZ / 50, 1)

/* tmpfs, memfd, SysV and shared anonymous memory: shmem's (not exported) */
static bool dma_vma_shmem(struct vm_area_struct *vma)
{
	return vma->vm_file &&
	       file_inode(vma->vm_file)->i_sb->s_magic == TMPFS_MAGIC;
}

/*
 * Whether a worker may fault pages of @vma in (without waiting for I/O:
 * FOLL_NOWAIT).  Only anonymous, shmem and hugetlb memory: their faults
 * allocate or start swap-in and never wait for another process.  A fault
 * on a file mapping may wait for whatever backs it (a FUSE daemon that
 * never answers), and one in a userfaultfd-armed vma for its handler;
 * once that userfaultfd is released, handle_userfault() answers
 * VM_FAULT_NOPAGE and GUP would retry forever holding mmap_lock, which
 * userfaultfd_release() waits for.  There only present pages are pinned.
 */
static bool dma_vma_faultable(struct vm_area_struct *vma)
{
	if (userfaultfd_armed(vma))
		return false;
	return vma_is_anonymous(vma) || dma_vma_shmem(vma) ||
	       is_vm_hugetlb_page(vma);
}

/*
 * A destination's pages are dirtied under their page lock, which the
 * page cache of a file system may hold while it waits for its backing
 * store (FUSE holds it across a WRITE to the daemon): shared mappings of
 * such files are refused.  Their private mappings receive into anonymous
 * copies.
 */
static bool dma_vma_writable(struct vm_area_struct *vma)
{
	if (!(vma->vm_flags & VM_WRITE))
		return false;
	return !(vma->vm_flags & VM_SHARED) || !vma->vm_file ||
	       dma_vma_shmem(vma) || is_vm_hugetlb_page(vma);
}

/*
 * Under mmap_lock: pins up to @nr pages at @start of one vma; 0 when the
 * first page is missing and may not be faulted in here.
 */
static long dma_pin_vma(struct mm_struct *mm, unsigned long start,
			unsigned long nr, unsigned int gup_flags,
			struct page **pages, int *locked)
{
	struct vm_area_struct *vma = vma_lookup(mm, start);
	long pinned;

	if (!vma)
		return -EFAULT;
	nr = min(nr, (vma->vm_end - start) >> PAGE_SHIFT);
	if (gup_flags & FOLL_WRITE) {
		if (!dma_vma_writable(vma))
			return vma->vm_flags & VM_WRITE ? -EOPNOTSUPP : -EFAULT;
	} else if (!(vma->vm_flags & VM_READ)) {
		return -EFAULT;
	}
	if (dma_vma_faultable(vma))
		return pin_user_pages_remote(mm, start, nr,
					     gup_flags | FOLL_NOWAIT, pages,
					     NULL, locked);
	pinned = pin_user_pages_remote(mm, start, nr, gup_flags | FOLL_NOFAULT,
				       pages, NULL, locked);
	return pinned == -EFAULT ? 0 : pinned;
}

/*
 * Pins up to @nr pages of @mm at @start without waiting for anything:
 * returns the count pinned, 0 if the first page (or mmap_lock) would
 * have to wait, -ESRCH when the address space is gone, -ENOMEM, -EFAULT
 * or -EOPNOTSUPP.  A worker must not sleep on mmap_lock either: its
 * holder may itself be waiting for a fault of that kind.
 */
static long dma_pin(struct mm_struct *mm, unsigned long start,
		    unsigned long nr, unsigned int gup_flags,
		    struct page **pages)
{
	int locked = 1;
	long pinned = 0;

	if (!mmget_not_zero(mm))
		return -ESRCH;
	if (mmap_read_trylock(mm)) {
		pinned = dma_pin_vma(mm, start, nr, gup_flags, pages, &locked);
		if (locked)
			mmap_read_unlock(mm);
	}
	mmput(mm);
	if (pinned >= 0 || pinned == -ENOMEM || pinned == -EOPNOTSUPP)
		return pinned;
	return -EFAULT;
}

/*
 * dma_pin() with the pages charged to the submitter's pinned_vm within
 * its RLIMIT_MEMLOCK (pin.c): fewer pages when the limit leaves less
 * room, 0 (wait) when it leaves none.
 */
static long op_pin(struct coopmpi_dma_op *op, struct mm_struct *mm,
		   unsigned long start, unsigned long nr,
		   unsigned int gup_flags, struct page **pages)
{
	unsigned long charged;
	long pinned;

	charged = coopmpi_pin_charge(op->pin_mm, nr, op->pin_limit);
	if (!charged)
		return 0;
	pinned = dma_pin(mm, start, charged, gup_flags, pages);
	coopmpi_pin_uncharge(op->pin_mm, charged - max(pinned, 0L));
	return pinned;
}

static void op_unpin(struct coopmpi_dma_op *op, struct page **pages,
		     unsigned long n, bool dirty)
{
	if (dirty)
		unpin_user_pages_dirty_lock(pages, n, true);
	else
		unpin_user_pages(pages, n);
	coopmpi_pin_uncharge(op->pin_mm, n);
}

static int chunk_alloc(struct coopmpi_dma_chunk *c)
{
	unsigned int n = coopmpi_copy_chunk_pages;

	c->src_pages = kmalloc_array(2 * n, sizeof(*c->src_pages), GFP_KERNEL);
	c->src_dma = kmalloc_array(2 * n, sizeof(*c->src_dma), GFP_KERNEL);
	if (!c->src_pages || !c->src_dma) {
		kfree(c->src_pages);
		kfree(c->src_dma);
		return -ENOMEM;
	}
	c->dst_pages = c->src_pages + n;
	c->dst_dma = c->src_dma + n;
	return 0;
}

static void chunk_free(struct coopmpi_dma_chunk *c)
{
	kfree(c->src_pages);
	kfree(c->src_dma);
}

/* Where a region went: set when it is deregistered or its owner closed. */
static int op_regions_gone(const struct coopmpi_dma_op *op)
{
	int ret = 0;

	if (op->src_r)
		ret = READ_ONCE(op->src_r->gone);
	if (!ret)
		ret = READ_ONCE(op->dst_r->gone);
	return ret;
}

/*
 * Pages per side of the next chunk: copy_chunk_pages, fewer when the
 * submitter's RLIMIT_MEMLOCK has room for less (half of it each side, so
 * that the destination is not left without room by the source).
 */
static unsigned long op_chunk_pages(struct coopmpi_dma_op *op)
{
	unsigned long half = coopmpi_pin_room(op->pin_mm, op->pin_limit) / 2;

	return clamp_t(unsigned long, half, 1, coopmpi_copy_chunk_pages);
}

/* Pins and copies (a prefix of) the next chunk: OP_MORE, OP_RETRY, -errno. */
static int op_copy_chunk(struct coopmpi_dma_op *op)
{
	struct coopmpi_dma_chunk c = {};
	long nr_src, nr_dst;
	int ret;

	c.src_off = op->src_addr & ~PAGE_MASK;
	c.dst_off = op->dst_addr & ~PAGE_MASK;
	c.len = min_t(u64, op->length - op->done,
		      (size_t)op_chunk_pages(op) * PAGE_SIZE -
		      max(c.src_off, c.dst_off));
	ret = chunk_alloc(&c);
	if (ret)
		return ret;

	nr_src = op_pin(op, op->src_mm, op->src_addr & PAGE_MASK,
			coopmpi_dma_chunk_pages(c.src_off, c.len), 0,
			c.src_pages);
	if (nr_src <= 0) {
		ret = nr_src ? nr_src : OP_RETRY;
		goto out;
	}
	c.len = min_t(size_t, c.len, nr_src * PAGE_SIZE - c.src_off);

	nr_dst = op_pin(op, op->dst_r->mm, op->dst_addr & PAGE_MASK,
			coopmpi_dma_chunk_pages(c.dst_off, c.len), FOLL_WRITE,
			c.dst_pages);
	if (nr_dst <= 0) {
		ret = nr_dst ? nr_dst : OP_RETRY;
		goto unpin_src;
	}
	c.len = min_t(size_t, c.len, nr_dst * PAGE_SIZE - c.dst_off);

	/*
	 * Again with both sides pinned: a page that could be pinned only
	 * now (a fault resolved since op_step() looked) may have come after
	 * the region's deregistration, which must then fail the copy.
	 */
	ret = op_regions_gone(op);
	if (!ret)
		ret = coopmpi_dma_copy_chunk(&c);
	op_unpin(op, c.dst_pages, nr_dst, true);
	if (!ret) {
		op->done += c.len;
		op->src_addr += c.len;
		op->dst_addr += c.len;
	}
unpin_src:
	op_unpin(op, c.src_pages, nr_src, false);
out:
	chunk_free(&c);
	return ret;
}

/* The ring of an io_uring command was closed: nobody waits for it. */
static bool op_ring_closed(const struct coopmpi_dma_op *op)
{
	/* the request holds a reference on its ring */
	struct io_ring_ctx *ctx = cmd_to_io_kiocb(op->ioucmd)->ctx;

	return percpu_ref_is_dying(&ctx->refs);
}

/*
 * The endpoint is closing, or the submitting process exits, or for an
 * io_uring command its ring was closed or the submitting thread exits
 * (io_uring waits for a thread's commands when it exits; io-wq and
 * SQPOLL threads submit for others).
 */
static bool op_canceled(const struct coopmpi_dma_op *op)
{
	unsigned int pf = READ_ONCE(op->task->flags);

	if (READ_ONCE(op->dep->closing))
		return true;
	if (READ_ONCE(op->task->signal->flags) & SIGNAL_GROUP_EXIT)
		return true;
	if (!op->ioucmd)
		return false;
	return op_ring_closed(op) ||
	       (pf & (PF_EXITING | PF_IO_WORKER)) == PF_EXITING;
}

/* OP_DATA_DONE when all data is done, OP_MORE, OP_RETRY, or -errno. */
static int op_step(struct coopmpi_dma_op *op)
{
	int ret;

	if (op_canceled(op))
		return -ECANCELED;
	if (time_after(jiffies, op->deadline))
		return -ETIMEDOUT;
	if (op->done == op->length)
		return OP_DATA_DONE;
	ret = op_regions_gone(op);
	if (!ret)
		ret = op_copy_chunk(op);
	if (!ret && op->done == op->length)
		return OP_DATA_DONE;
	return ret;
}

/* 0 when written (or none wanted), OP_RETRY, or -errno. */
static int op_notify(struct coopmpi_dma_op *op)
{
	struct coopmpi_region *r = op->ntf_r;
	unsigned long off = op->ntf_addr & ~PAGE_MASK;
	struct page *page;
	u64 lo, hi, *p;
	void *va;
	long n;
	int ret;

	if (!r)
		return 0;
	ret = READ_ONCE(r->gone);
	if (ret)
		return ret;
	n = op_pin(op, r->mm, op->ntf_addr & PAGE_MASK, 1, FOLL_WRITE, &page);
	if (n <= 0)
		return n ? n : OP_RETRY;
	ret = READ_ONCE(r->gone);	/* as in op_copy_chunk() */
	if (ret) {
		op_unpin(op, &page, 1, false);
		return ret;
	}
	memcpy(&lo, op->ntf_data, sizeof(lo));
	memcpy(&hi, op->ntf_data + sizeof(lo), sizeof(hi));

	/*
	 * The data was written by this or another CPU (ordered by the
	 * workqueue's locking) or by the device (its completion callback
	 * ran, the pages are unmapped): make all of it visible first.
	 */
	mb();
	va = kmap_local_page(page);
	p = va + off;			/* 16-byte aligned: one page */
	WRITE_ONCE(p[1], hi);
	/* second half before first: pollers of the first word see both */
	smp_wmb();
	WRITE_ONCE(p[0], lo);
	kunmap_local(va);
	op_unpin(op, &page, 1, true);
	return 0;
}

static void op_requeue(struct coopmpi_dma_op *op, bool retry)
{
	unsigned long delay;

	if (!retry) {
		op->backoff = 0;
		/* behind everybody else's next chunk */
		coopmpi_dma_sched_ready(op);
		return;
	}
	delay = min_t(unsigned long, 1UL << min(op->backoff++, 8U),
		      OP_MAX_BACKOFF);
	coopmpi_dma_sched_retry(op, delay);
}

/* One step of @op in a worker; op is not ours any more afterwards. */
void coopmpi_dma_op_run(struct coopmpi_dma_op *op)
{
	int ret;

	ret = op_step(op);
	if (ret == OP_MORE) {
		op_requeue(op, false);
		return;
	}
	if (ret == OP_DATA_DONE)
		ret = op_notify(op);
	if (ret == OP_RETRY) {
		op_requeue(op, true);
		return;
	}
	coopmpi_dma_op_finish(op, ret);
}
