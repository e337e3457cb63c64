// SPDX-License-Identifier: GPL-2.0
/*
 * Memory regions and single-copy transfers between endpoints.
 *
 * Registration pins nothing: a copy pins the owner's pages one chunk at a
 * time, so a huge region costs nothing until used and a copy never holds
 * more than copy_chunk_pages pinned.  The owner's mm is only mmgrab'd;
 * once its address space is gone, copies fail with -ESRCH.
 */
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uio.h>

#include "coopmpi.h"

static void region_release(struct kref *ref)
{
	struct coopmpi_region *r = container_of(ref, struct coopmpi_region,
						ref);

	mmdrop(r->mm);
	kfree(r);
}

void coopmpi_region_put(struct coopmpi_region *r)
{
	kref_put(&r->ref, region_release);
}

/* The xarray index is the cookie's low half; the high half must match. */
struct coopmpi_region *coopmpi_region_get(struct coopmpi_domain *d,
					  u64 cookie)
{
	struct coopmpi_region *r;

	xa_lock(&d->regions);
	r = xa_load(&d->regions, (u32)cookie);
	if (r && r->cookie == cookie)
		kref_get(&r->ref);
	else
		r = NULL;
	xa_unlock(&d->regions);
	return r;
}

/*
 * Unpublishes @r.  Copies look at ->gone with each chunk's pages pinned,
 * so once this returns only a chunk already being copied may touch @r.
 */
static void region_unlink(struct coopmpi_domain *d, struct coopmpi_region *r,
			  int why)
{
	xa_lock(&d->regions);
	__xa_erase(&d->regions, (u32)r->cookie);
	WRITE_ONCE(r->gone, why);
	xa_unlock(&d->regions);
}

static int region_publish(struct coopmpi_domain *d, struct coopmpi_region *r)
{
	u64 gen = (u32)atomic_inc_return(&d->region_gen);
	u32 id;
	int ret;

	/* The cookie must be complete before the xa_lock is dropped. */
	xa_lock(&d->regions);
	ret = __xa_alloc_cyclic(&d->regions, &id, r, XA_LIMIT(1, U32_MAX),
				&d->next_region, GFP_KERNEL_ACCOUNT);
	if (ret >= 0)
		r->cookie = gen << 32 | id;
	xa_unlock(&d->regions);
	return ret < 0 ? ret : 0;
}

static int register_check(const struct coopmpi_region_register *reg)
{
	u64 addr = untagged_addr(reg->addr);

	if (!(reg->flags & COOPMPI_REGION_FLAGS) ||
	    memchr_inv(reg->reserved, 0, sizeof(reg->reserved)))
		return -EINVAL;
	if (!reg->length || addr + reg->length < addr ||
	    addr + reg->length > TASK_SIZE)
		return -EINVAL;
	return 0;
}

int coopmpi_ioc_region_register(struct coopmpi_ep *ep, void *arg)
{
	struct coopmpi_domain *d = coopmpi_ep_domain(ep);
	struct coopmpi_region_register *reg = arg;
	struct coopmpi_region *r;
	int ret;

	ret = register_check(reg);
	if (ret)
		return ret;
	r = kzalloc(sizeof(*r), GFP_KERNEL_ACCOUNT);
	if (!r)
		return -ENOMEM;
	kref_init(&r->ref);
	spin_lock_init(&r->windows_lock);
	INIT_LIST_HEAD(&r->windows);
	r->owner = ep;
	r->mm = current->mm;
	mmgrab(r->mm);
	r->addr = untagged_addr(reg->addr);
	r->length = reg->length;
	r->access = reg->flags;

	mutex_lock(&ep->lock);
	if (ep->nr_regions >= coopmpi_max_regions)
		ret = -ENOSPC;
	else
		ret = region_publish(d, r);
	if (!ret) {
		list_add(&r->node, &ep->regions);
		ep->nr_regions++;
		reg->cookie = r->cookie;
	}
	mutex_unlock(&ep->lock);
	if (ret)
		coopmpi_region_put(r);
	return ret;
}

int coopmpi_ioc_region_deregister(struct coopmpi_ep *ep, void *arg)
{
	struct coopmpi_domain *d = coopmpi_ep_domain(ep);
	struct coopmpi_region_deregister *dr = arg;
	struct coopmpi_region *r;

	if (memchr_inv(dr->reserved, 0, sizeof(dr->reserved)))
		return -EINVAL;

	mutex_lock(&ep->lock);
	r = coopmpi_region_get(d, dr->cookie);
	if (!r || r->owner != ep) {
		mutex_unlock(&ep->lock);
		if (r)
			coopmpi_region_put(r);
		return -ENXIO;
	}
	region_unlink(d, r, -ENXIO);
	list_del(&r->node);
	ep->nr_regions--;
	mutex_unlock(&ep->lock);

	coopmpi_windows_region_gone(r);
	coopmpi_region_put(r);		/* lookup reference */
	coopmpi_region_put(r);		/* xarray reference */
	return 0;
}

void coopmpi_regions_release(struct coopmpi_ep *ep)
{
	struct coopmpi_domain *d = ep->domain;
	struct coopmpi_region *r, *tmp;
	LIST_HEAD(gone);

	mutex_lock(&ep->lock);
	list_for_each_entry(r, &ep->regions, node)
		region_unlink(d, r, -ESRCH);
	list_splice_init(&ep->regions, &gone);
	ep->nr_regions = 0;
	mutex_unlock(&ep->lock);

	/* Their windows are zapped holding no lock of ours. */
	list_for_each_entry_safe(r, tmp, &gone, node) {
		list_del(&r->node);
		coopmpi_windows_region_gone(r);
		coopmpi_region_put(r);
	}
}

/* Pins up to @nr pages of the owner at @start; returns the count pinned. */
static long pin_chunk(struct coopmpi_region *r, unsigned long start,
		      unsigned long nr, unsigned int gup_flags,
		      struct page **pages)
{
	int locked = 1;
	long pinned;

	if (!mmget_not_zero(r->mm))
		return -ESRCH;
	if (mmap_read_lock_killable(r->mm)) {
		mmput(r->mm);
		return -EINTR;
	}
	pinned = pin_user_pages_remote(r->mm, start, nr, gup_flags, pages,
				       NULL, &locked);
	if (locked)
		mmap_read_unlock(r->mm);
	mmput(r->mm);

	if (pinned > 0)
		return pinned;
	if (fatal_signal_pending(current))
		return -EINTR;
	return pinned == -ENOMEM ? -ENOMEM : -EFAULT;
}

struct copy_state {
	struct coopmpi_region *r;
	struct page **pages;
	struct iov_iter *iter;
	bool to_region;
	unsigned long pin_limit;	/* coopmpi_pin_limit(), pages */
	u64 addr;		/* next region address */
	u64 left;		/* bytes still to copy */
	u64 copied;
};

/*
 * Copies between the pinned pages and the local iovec with page faults
 * disabled: -EAGAIN when a local page went away after fault_in_local()
 * (the chunk is retried from there), never a wait while the owner's pages
 * are held.
 */
static int copy_pages(struct copy_state *cs, long pinned)
{
	size_t off = cs->addr & ~PAGE_MASK;
	int ret = 0;
	long i;

	pagefault_disable();
	for (i = 0; i < pinned && cs->left; i++, off = 0) {
		size_t step = min_t(u64, PAGE_SIZE - off, cs->left);
		size_t done;

		if (cs->to_region)
			done = copy_page_from_iter(cs->pages[i], off, step,
						   cs->iter);
		else
			done = copy_page_to_iter(cs->pages[i], off, step,
						 cs->iter);
		cs->addr += done;
		cs->left -= done;
		cs->copied += done;
		if (done != step) {
			ret = -EAGAIN;
			break;
		}
	}
	pagefault_enable();
	return ret;
}

/*
 * Faults in the local side of the next @bytes (it may wait, e.g. on a
 * userfaultfd or FUSE page) before any page of the owner is pinned;
 * returns how many bytes from the start are present, 0 if none can be.
 */
static size_t fault_in_local(struct copy_state *cs, size_t bytes)
{
	size_t missing = cs->to_region ?
		fault_in_iov_iter_readable(cs->iter, bytes) :
		fault_in_iov_iter_writeable(cs->iter, bytes);

	return bytes - missing;
}

/*
 * One chunk: the local side faulted in first, then the owner's pages
 * pinned, the region looked at again, the bytes moved without a fault.
 * The chunk never waits with the owner's pages held, so once DEREGISTER
 * has returned no byte moves to or from the region (region_unlink()).
 */
static int copy_chunk(struct copy_state *cs)
{
	unsigned long off = cs->addr & ~PAGE_MASK;
	int ret = READ_ONCE(cs->r->gone);
	unsigned long nr, charged;
	size_t bytes;
	long pinned;

	if (ret)
		return ret;
	if (fatal_signal_pending(current))
		return -EINTR;

	bytes = min_t(u64, cs->left,
		      (u64)coopmpi_copy_chunk_pages * PAGE_SIZE - off);
	bytes = fault_in_local(cs, bytes);
	if (!bytes)
		return -EFAULT;	/* local memory */
	nr = DIV_ROUND_UP(off + bytes, PAGE_SIZE);
	charged = coopmpi_pin_charge(current->mm, nr, cs->pin_limit);
	if (!charged)
		return -ENOMEM;	/* RLIMIT_MEMLOCK taken by other pins */
	pinned = pin_chunk(cs->r, cs->addr & PAGE_MASK, charged,
			   cs->to_region ? FOLL_WRITE : 0, cs->pages);
	if (pinned > 0) {
		/* pinning may have waited for a fault: the region may be gone */
		ret = READ_ONCE(cs->r->gone);
		if (!ret)
			ret = copy_pages(cs, pinned);
		unpin_user_pages_dirty_lock(cs->pages, pinned, cs->to_region);
	} else {
		ret = pinned;
	}
	coopmpi_pin_uncharge(current->mm, charged);
	return ret == -EAGAIN ? 0 : ret;
}

static int copy_loop(struct copy_state *cs)
{
	int ret = 0;

	cs->pages = kmalloc_array(coopmpi_copy_chunk_pages,
				  sizeof(*cs->pages), GFP_KERNEL);
	if (!cs->pages)
		return -ENOMEM;
	while (cs->left) {
		ret = copy_chunk(cs);
		if (ret)
			break;
		cond_resched();
	}
	kfree(cs->pages);
	return ret;
}

/* Accounts the copy in the caller's load slot while it runs. */
static int copy_accounted(struct coopmpi_ep *ep, struct copy_state *cs)
{
	struct coopmpi_load_slot *slot = &ep->domain->load[ep->ep_id];
	u64 len = cs->left;
	int ret;

	atomic64_inc(coopmpi_atomic64(&slot->kernel_ops));
	atomic64_add(len, coopmpi_atomic64(&slot->kernel_bytes));
	ret = copy_loop(cs);
	atomic64_sub(len, coopmpi_atomic64(&slot->kernel_bytes));
	atomic64_dec(coopmpi_atomic64(&slot->kernel_ops));
	atomic64_inc(coopmpi_atomic64(&slot->total_ops));
	atomic64_add(cs->copied, coopmpi_atomic64(&slot->total_bytes));
	return ret;
}

static int copy_region(struct coopmpi_ep *ep, struct coopmpi_region *r,
		       struct coopmpi_copy *c)
{
	struct iovec iovstack[UIO_FASTIOV], *iov = iovstack;
	struct copy_state cs = { .r = r };
	struct iov_iter iter;
	ssize_t total;
	int ret;

	cs.to_region = c->flags & COOPMPI_COPY_TO_REGION;
	cs.pin_limit = coopmpi_pin_limit();
	if (!(r->access & (cs.to_region ? COOPMPI_REGION_WRITE :
					  COOPMPI_REGION_READ)))
		return -EACCES;
	if (c->offset > r->length || c->length > r->length - c->offset)
		return -ERANGE;
	if (!c->length)
		return 0;

	/* Kernel copies into local memory for FROM_REGION: ITER_DEST. */
	total = import_iovec(cs.to_region ? ITER_SOURCE : ITER_DEST,
			     u64_to_user_ptr(c->iov), c->iov_count,
			     ARRAY_SIZE(iovstack), &iov, &iter);
	if (total < 0)
		return total;
	ret = -EINVAL;		/* also for length > MAX_RW_COUNT */
	if (total >= c->length) {
		iov_iter_truncate(&iter, c->length);
		cs.iter = &iter;
		cs.addr = r->addr + c->offset;
		cs.left = c->length;
		ret = copy_accounted(ep, &cs);
		c->copied = cs.copied;
	}
	kfree(iov);
	return ret;
}

static int copy_check(const struct coopmpi_copy *c)
{
	u32 dir = c->flags & COOPMPI_COPY_FLAGS;

	if (dir != COOPMPI_COPY_FROM_REGION && dir != COOPMPI_COPY_TO_REGION)
		return -EINVAL;
	if (c->reserved0 || memchr_inv(c->reserved, 0, sizeof(c->reserved)))
		return -EINVAL;
	if (c->iov_count > COOPMPI_COPY_MAX_IOV)
		return -EINVAL;
	return 0;
}

int coopmpi_ioc_copy(struct coopmpi_ep *ep, void *arg)
{
	struct coopmpi_domain *d = coopmpi_ep_domain(ep);
	struct coopmpi_copy *c = arg;
	struct coopmpi_region *r;
	int ret;

	ret = copy_check(c);
	if (ret)
		return ret;
	c->copied = 0;
	r = coopmpi_region_get(d, c->cookie);
	if (r) {
		ret = copy_region(ep, r, c);
		coopmpi_region_put(r);
	} else {
		ret = -ENXIO;
	}
	atomic64_inc(ret ? &coopmpi_stats.copy_errors : &coopmpi_stats.copies);
	atomic64_add(c->copied, &coopmpi_stats.copy_bytes);
	return ret;
}
