// SPDX-License-Identifier: GPL-2.0
/*
 * Windows: a peer's region mapped into the caller's address space.
 *
 * A window's mapping holds no page and no pin: a fault looks up the
 * owner's page at that address (GUP on the owner's mm, reference dropped
 * at once) and inserts its pfn.  That is safe because an interval
 * notifier on the owner's range runs before the owner's page tables
 * change, and the pfn is inserted only under w->lock if no invalidation
 * began since the lookup (the mmu_interval_read_begin/retry pattern), while
 * every invalidation zaps what was inserted before it returns.
 *
 * The zap is done by window_wq, the invalidation waiting for it: zapping
 * a mapping runs the mapping mm's own notifiers, which must not nest in
 * the owner's (one lockdep map covers them all).  Those nested notifier
 * calls only cover window mappings, which no window can resolve (GUP
 * refuses VM_PFNMAP), so a window invalidated from inside our own zap
 * has nothing to zap and stops there: no chain of windows over windows
 * recurses.  The zap work never waits for another, and window_wq has a
 * rescuer, so an invalidation from reclaim always completes.
 *
 * Offsets of the window mappings are unique per device file mapping
 * (handles are global), so unmap_mapping_range() reaches every mapping
 * of one window and nothing else.
 *
 * Lock order: the faulting mm's mmap_lock -> w->lock -> its page table
 * lock.  w->lock is never held across an allocation, a sleep or a zap.
 * The owner's mmap_lock is only tried in a fault (else the fault waits
 * for it holding no lock and is retried).
 */
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/wait_bit.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "coopmpi.h"

#define WINDOW_PGOFF_SHIFT	(COOPMPI_MMAP_WINDOW_SHIFT - PAGE_SHIFT)
#define WINDOW_HANDLES		XA_LIMIT(1, (1U << (62 - COOPMPI_MMAP_WINDOW_SHIFT)) - 1)

struct coopmpi_window {
	struct kref ref;
	struct mmu_interval_notifier notifier;
	struct mutex lock;		/* dead, the seq against inserts */
	struct list_head node;		/* r->windows, r->windows_lock */
	struct coopmpi_region *r;	/* referenced */
	struct coopmpi_ep *ep;		/* the attacher; outlives the window */
	unsigned long start;		/* the owner's address of page 0 */
	unsigned long pages;
	u32 handle;
	u32 slot;			/* state word index */
	bool writable;
	bool notifier_on;
	bool attached;			/* window_handles' xa_lock */
	bool dead;
	atomic_t mappings;		/* vmas */
};

/* Handles name windows in mmap offsets of every endpoint's file. */
static DEFINE_XARRAY_ALLOC1(window_handles);
static struct workqueue_struct *window_wq;

static u64 *window_word(struct coopmpi_window *w)
{
	return (u64 *)w->ep->window_state->mem + w->slot;
}

static pgoff_t window_pgoff(struct coopmpi_window *w)
{
	return COOPMPI_MMAP_WINDOW(w->handle) >> PAGE_SHIFT;
}

struct window_zap {
	struct work_struct work;
	struct completion done;
	struct coopmpi_window *w;
	pgoff_t first;
	pgoff_t nr;
};

static void window_zap_work(struct work_struct *work)
{
	struct window_zap *z = container_of(work, struct window_zap, work);

	unmap_mapping_range(z->w->ep->mapping,
			    (loff_t)(window_pgoff(z->w) + z->first) << PAGE_SHIFT,
			    (loff_t)z->nr << PAGE_SHIFT, 1);
	complete(&z->done);
}

/* Inside window_zap_work: the notifier call covers a window mapping. */
static bool window_zapping(void)
{
	struct work_struct *cw = current_work();

	return cw && cw->func == window_zap_work;
}

/* Removes pages [first, first + nr) from every mapping of @w. */
static void window_zap(struct coopmpi_window *w, pgoff_t first, pgoff_t nr)
{
	struct window_zap z = { .w = w, .first = first, .nr = nr };

	/* A mapping is counted before its first fault can insert a page. */
	if (!atomic_read(&w->mappings))
		return;
	INIT_WORK_ONSTACK(&z.work, window_zap_work);
	init_completion(&z.done);
	queue_work(window_wq, &z.work);
	wait_for_completion(&z.done);
	destroy_work_on_stack(&z.work);
}

static void window_word_add(struct coopmpi_window *w, u64 clear, u64 add)
{
	u64 *word = window_word(w);

	/* Copiers read the word, the data, the word: see the uapi header. */
	smp_store_release(word, (READ_ONCE(*word) & ~clear) + add);
}

static bool window_invalidate(struct mmu_interval_notifier *mni,
			      const struct mmu_notifier_range *range,
			      unsigned long cur_seq)
{
	struct coopmpi_window *w = container_of(mni, struct coopmpi_window,
						notifier);
	unsigned long start = max(range->start, w->start);
	unsigned long end = min(range->end, w->start + w->pages * PAGE_SIZE);
	bool nested = window_zapping();

	if (!nested && !mmu_notifier_range_blockable(range))
		return false;
	mutex_lock(&w->lock);
	mmu_interval_set_seq(mni, cur_seq);
	if (!nested && !w->dead)
		window_word_add(w, COOPMPI_WINDOW_HOLE, 1);	/* odd */
	mutex_unlock(&w->lock);
	if (nested || READ_ONCE(w->dead))
		return true;

	window_zap(w, (start - w->start) >> PAGE_SHIFT,
		   ((end - 1 - w->start) >> PAGE_SHIFT) -
		   ((start - w->start) >> PAGE_SHIFT) + 1);
	mutex_lock(&w->lock);
	if (!w->dead)
		window_word_add(w, 0, 1);			/* even */
	mutex_unlock(&w->lock);
	return true;
}

static const struct mmu_interval_notifier_ops window_notifier_ops = {
	.invalidate = window_invalidate,
};

/* What a dead window or a hole shows: zeros, or the endpoint's sink. */
static unsigned long window_void_pfn(struct coopmpi_window *w,
				     unsigned long addr)
{
	if (w->writable)
		return page_to_pfn(w->ep->window_state->pages[1]);
	return page_to_pfn(ZERO_PAGE(addr));
}

/*
 * The pfn of the owner's page @idx: 0, -EAGAIN when the owner's mmap_lock
 * is taken (wait for it unlocked), or another error for a hole.  The
 * owner may have exited meanwhile: the last reference to its mm is put
 * by a worker (mmput_async), not here, where the copier's mmap_lock is
 * held and exit_mmap would take the owner's.
 */
static int window_owner_pfn(struct coopmpi_window *w, struct vm_fault *vmf,
			    pgoff_t idx, unsigned long *pfn)
{
	struct mm_struct *mm = w->notifier.mm;
	bool own = mm == vmf->vma->vm_mm;
	struct page *page;
	long got;

	if (!mmget_not_zero(mm))
		return -ESRCH;
	if (!own && !mmap_read_trylock(mm)) {
		mmput_async(mm);
		return -EAGAIN;
	}
	got = get_user_pages_remote(mm, w->start + idx * PAGE_SIZE, 1,
				    w->writable ? FOLL_WRITE : 0, &page, NULL,
				    NULL);
	if (!own)
		mmap_read_unlock(mm);
	mmput_async(mm);
	if (got != 1)
		return -EFAULT;
	*pfn = page_to_pfn(page);
	/* the notifier, not a reference, keeps it from going unseen */
	put_page(page);
	return 0;
}

/*
 * Waits for the owner's mmap_lock without holding the faulting mm's.  The
 * fault is retried at once, in the kernel: a reader may take the lock past
 * a writer waiting for it (the trylock fails, the lock does not), so two
 * copiers faulting on each other's windows would keep both CPUs and the
 * woken writers out for good.  Yield before the retry.
 */
static vm_fault_t window_wait_owner(struct coopmpi_window *w,
				    struct vm_fault *vmf)
{
	struct mm_struct *mm = w->notifier.mm;

	if (!(vmf->flags & FAULT_FLAG_ALLOW_RETRY) ||
	    (vmf->flags & FAULT_FLAG_RETRY_NOWAIT) || !mmget_not_zero(mm))
		return VM_FAULT_NOPAGE;		/* the access faults again */
	mmap_read_unlock(vmf->vma->vm_mm);
	if (!mmap_read_lock_killable(mm))
		mmap_read_unlock(mm);
	mmput_async(mm);
	cond_resched();
	return VM_FAULT_RETRY;
}

static int window_pte_present(pte_t *pte, unsigned long addr, void *data)
{
	return 0;
}

static vm_fault_t window_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct coopmpi_window *w = vma->vm_private_data;
	pgoff_t idx = vmf->pgoff - window_pgoff(w);
	unsigned long pfn, seq;
	vm_fault_t ret;
	int err;

	/* The insertion under w->lock must not allocate a page table. */
	if (pmd_none(*vmf->pmd) &&
	    apply_to_page_range(vma->vm_mm, vmf->address & PAGE_MASK,
				PAGE_SIZE, window_pte_present, NULL))
		return VM_FAULT_OOM;
	seq = mmu_interval_read_begin(&w->notifier);
	err = READ_ONCE(w->dead) ? -ENXIO :
	      window_owner_pfn(w, vmf, idx, &pfn);
	if (err == -EAGAIN)
		return window_wait_owner(w, vmf);

	mutex_lock(&w->lock);
	if (!w->dead && mmu_interval_read_retry(&w->notifier, seq)) {
		mutex_unlock(&w->lock);
		return VM_FAULT_NOPAGE;		/* look again */
	}
	if (w->dead || err) {
		if (!w->dead)
			window_word_add(w, COOPMPI_WINDOW_HOLE,
					COOPMPI_WINDOW_HOLE);
		pfn = window_void_pfn(w, vmf->address);
	}
	ret = vmf_insert_pfn(vma, vmf->address, pfn);
	mutex_unlock(&w->lock);
	return ret;
}

static void window_release(struct kref *ref);

static void window_put(struct coopmpi_window *w)
{
	kref_put(&w->ref, window_release);
}

/* vma split and mremap: each vma holds the window. */
static void window_vm_open(struct vm_area_struct *vma)
{
	struct coopmpi_window *w = vma->vm_private_data;

	kref_get(&w->ref);
	atomic_inc(&w->mappings);
}

/* Once no mapping is left, no hole is shown any more. */
static void window_vm_close(struct vm_area_struct *vma)
{
	struct coopmpi_window *w = vma->vm_private_data;

	if (atomic_dec_and_test(&w->mappings)) {
		mutex_lock(&w->lock);
		if (!w->dead && (*window_word(w) & COOPMPI_WINDOW_HOLE))
			window_word_add(w, COOPMPI_WINDOW_HOLE, 2);
		mutex_unlock(&w->lock);
	}
	window_put(w);
}

static const struct vm_operations_struct window_vm_ops = {
	.open = window_vm_open,
	.close = window_vm_close,
	.fault = window_fault,
};

static void window_release(struct kref *ref)
{
	struct coopmpi_window *w = container_of(ref, struct coopmpi_window,
						ref);
	struct coopmpi_region *r = w->r;
	struct coopmpi_ep *ep = w->ep;

	if (w->notifier_on)
		mmu_interval_notifier_remove(&w->notifier);
	spin_lock(&r->windows_lock);
	list_del_init(&w->node);
	spin_unlock(&r->windows_lock);
	if (w->handle)
		xa_erase(&window_handles, w->handle);
	xa_erase(&ep->windows, w->slot);
	coopmpi_user_uncharge(ep->user, COOPMPI_USER_WINDOWS, 1);
	coopmpi_region_put(r);
	kfree(w);
	/* last: the endpoint's release may free it once this is 0 */
	if (atomic_dec_and_test(&ep->nr_windows))
		wake_up_var(&ep->nr_windows);
}

static void window_state_free(struct coopmpi_shm *shm)
{
	kfree(shm);
}

/*
 * @ep's state words (page 0, mapped read-only by its owner) and the sink
 * page a dead writable window shows (page 1), made by its first need.
 */
static int window_state_get(struct coopmpi_ep *ep)
{
	struct coopmpi_shm *shm;
	int ret;

	if (smp_load_acquire(&ep->window_state))
		return 0;
	shm = kzalloc(sizeof(*shm), GFP_KERNEL_ACCOUNT);
	if (!shm)
		return -ENOMEM;
	ret = coopmpi_shm_alloc(shm, 2 * PAGE_SIZE, window_state_free);
	if (ret) {
		kfree(shm);
		return ret;
	}
	if (cmpxchg_release(&ep->window_state, NULL, shm))
		coopmpi_shm_put(shm);		/* another call's won */
	return 0;
}

static int attach_check(const struct coopmpi_window_attach *a,
			const struct coopmpi_region *r)
{
	u32 need = COOPMPI_REGION_MAP | COOPMPI_REGION_READ;
	u64 first = r->addr & PAGE_MASK;

	if (a->flags & COOPMPI_WINDOW_WRITE)
		need |= COOPMPI_REGION_WRITE;
	if ((r->access & need) != need)
		return -EACCES;
	if (PAGE_ALIGN(r->addr + r->length) - first > COOPMPI_WINDOW_MAX_BYTES)
		return -EFBIG;
	return 0;
}

/* Publishes @w where faults, the owner's changes and its fate reach it. */
static int window_publish(struct coopmpi_window *w)
{
	struct coopmpi_region *r = w->r;
	struct mm_struct *mm = r->mm;
	int ret = -ESRCH;

	if (mmget_not_zero(mm)) {
		ret = mmu_interval_notifier_insert(&w->notifier, mm, w->start,
						   w->pages * PAGE_SIZE,
						   &window_notifier_ops);
		mmput(mm);
	}
	if (ret)
		return ret;
	w->notifier_on = true;

	spin_lock(&r->windows_lock);
	if (r->windows_closed)
		ret = -ENXIO;
	else
		list_add(&w->node, &r->windows);
	spin_unlock(&r->windows_lock);
	if (ret)
		return ret;
	ret = xa_alloc(&window_handles, &w->handle, w, WINDOW_HANDLES,
		       GFP_KERNEL);
	return ret == -EBUSY ? -ENOSPC : ret;
}

static struct coopmpi_window *window_new(struct coopmpi_ep *ep,
					 struct coopmpi_region *r, bool writable)
{
	struct coopmpi_window *w;
	int ret;

	ret = coopmpi_user_charge(ep->user, COOPMPI_USER_WINDOWS, 1);
	if (ret)
		return ERR_PTR(ret);
	w = kzalloc(sizeof(*w), GFP_KERNEL_ACCOUNT);
	if (!w) {
		coopmpi_user_uncharge(ep->user, COOPMPI_USER_WINDOWS, 1);
		return ERR_PTR(-ENOMEM);
	}
	kref_init(&w->ref);
	mutex_init(&w->lock);
	INIT_LIST_HEAD(&w->node);
	w->r = r;
	w->ep = ep;
	w->writable = writable;
	w->start = r->addr & PAGE_MASK;
	w->pages = (PAGE_ALIGN(r->addr + r->length) - w->start) >> PAGE_SHIFT;
	ret = xa_alloc(&ep->windows, &w->slot, w,
		       XA_LIMIT(0, coopmpi_max_windows - 1),
		       GFP_KERNEL_ACCOUNT);
	if (ret) {
		coopmpi_user_uncharge(ep->user, COOPMPI_USER_WINDOWS, 1);
		kfree(w);
		return ERR_PTR(ret == -EBUSY ? -ENOSPC : ret);
	}
	atomic_inc(&ep->nr_windows);
	WRITE_ONCE(*window_word(w), 0);
	return w;
}

int coopmpi_ioc_window_attach(struct coopmpi_ep *ep, void *arg)
{
	struct coopmpi_domain *d = coopmpi_ep_domain(ep);
	struct coopmpi_window_attach *a = arg;
	struct coopmpi_window *w;
	struct coopmpi_region *r;
	int ret;

	if (a->reserved0 || memchr_inv(a->reserved, 0, sizeof(a->reserved)))
		return -EINVAL;
	ret = window_state_get(ep);
	if (ret)
		return ret;
	r = coopmpi_region_get(d, a->cookie);
	if (!r)
		return -ENXIO;
	ret = attach_check(a, r);
	if (ret) {
		coopmpi_region_put(r);
		return ret;
	}
	w = window_new(ep, r, a->flags & COOPMPI_WINDOW_WRITE);
	if (IS_ERR(w)) {
		coopmpi_region_put(r);
		return PTR_ERR(w);
	}
	ret = window_publish(w);		/* w owns r from here */
	if (ret) {
		window_put(w);
		return ret;
	}
	WRITE_ONCE(w->attached, true);
	a->handle = w->handle;
	a->state_index = w->slot;
	a->map_bytes = (u64)w->pages << PAGE_SHIFT;
	a->page_offset = offset_in_page(r->addr);
	return 0;
}

/* The attached window @handle of @ep, referenced; NULL if none. */
static struct coopmpi_window *window_lookup(struct coopmpi_ep *ep, u32 handle,
					    bool detach)
{
	struct coopmpi_window *w;

	xa_lock(&window_handles);
	w = xa_load(&window_handles, handle);
	if (w && w->ep == ep && w->attached && kref_get_unless_zero(&w->ref)) {
		if (detach)
			w->attached = false;
	} else {
		w = NULL;
	}
	xa_unlock(&window_handles);
	return w;
}

int coopmpi_ioc_window_detach(struct coopmpi_ep *ep, void *arg)
{
	struct coopmpi_window_detach *dt = arg;
	struct coopmpi_window *w;

	if (dt->reserved0 || memchr_inv(dt->reserved, 0, sizeof(dt->reserved)))
		return -EINVAL;
	w = window_lookup(ep, dt->handle, true);
	if (!w)
		return -ENXIO;
	window_put(w);		/* the lookup's */
	window_put(w);		/* the attachment's */
	return 0;
}

int coopmpi_window_mmap(struct coopmpi_ep *ep, struct vm_area_struct *vma,
			unsigned long pgoff)
{
	unsigned long first = pgoff & ((1UL << WINDOW_PGOFF_SHIFT) - 1);
	struct coopmpi_window *w;
	int ret = -EINVAL;

	if (pgoff >> (62 - PAGE_SHIFT) != 1)
		return -EINVAL;
	w = window_lookup(ep, (pgoff >> WINDOW_PGOFF_SHIFT) &
			  ((1UL << (62 - COOPMPI_MMAP_WINDOW_SHIFT)) - 1),
			  false);
	if (!w)
		return -ENXIO;
	if (first >= w->pages || vma_pages(vma) > w->pages - first)
		goto fail;
	ret = -EPERM;
	if (vma->vm_flags & VM_EXEC)
		goto fail;
	ret = -EACCES;
	if ((vma->vm_flags & VM_WRITE) && !w->writable)
		goto fail;
	vma->vm_flags &= ~VM_MAYEXEC;
	if (!w->writable)
		vma->vm_flags &= ~VM_MAYWRITE;
	/* VM_PFNMAP: no GUP, no struct page of ours; not inherited by fork */
	vma->vm_flags |= VM_PFNMAP | VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP;
	vma->vm_private_data = w;		/* the lookup's reference */
	vma->vm_ops = &window_vm_ops;
	atomic_inc(&w->mappings);
	return 0;
fail:
	window_put(w);
	return ret;
}

/* The state words, read-only: only the driver may say what a copy got. */
int coopmpi_window_state_mmap(struct coopmpi_ep *ep,
			      struct vm_area_struct *vma)
{
	int ret;

	if (vma->vm_flags & VM_WRITE)
		return -EPERM;
	if (vma_pages(vma) != 1)
		return -EINVAL;
	ret = window_state_get(ep);
	if (ret)
		return ret;
	vma->vm_flags &= ~VM_MAYWRITE;
	return coopmpi_shm_mmap(ep->window_state, vma, 0);
}

static void window_kill(struct coopmpi_window *w)
{
	mutex_lock(&w->lock);
	w->dead = true;
	window_word_add(w, COOPMPI_WINDOW_HOLE, COOPMPI_WINDOW_DEAD);
	mutex_unlock(&w->lock);
	window_zap(w, 0, w->pages);
}

/* @r was unpublished: its windows show zeros from now on. */
void coopmpi_windows_region_gone(struct coopmpi_region *r)
{
	struct coopmpi_window *w;

	spin_lock(&r->windows_lock);
	r->windows_closed = true;
	while ((w = list_first_entry_or_null(&r->windows,
					     struct coopmpi_window, node))) {
		list_del_init(&w->node);
		if (!kref_get_unless_zero(&w->ref))
			continue;	/* its release is waiting for the lock */
		spin_unlock(&r->windows_lock);
		window_kill(w);
		window_put(w);
		spin_lock(&r->windows_lock);
	}
	spin_unlock(&r->windows_lock);
}

/*
 * At close no mapping of @ep's is left, so this frees every window -
 * but the death of a window's region may hold one a little longer
 * (coopmpi_windows_region_gone, in the owner's context), and a window
 * uses its endpoint until it is freed: wait for that.
 */
void coopmpi_windows_release(struct coopmpi_ep *ep)
{
	struct coopmpi_window *w, *attached;
	unsigned long slot;

	xa_for_each(&ep->windows, slot, w) {
		attached = window_lookup(ep, w->handle, true);
		if (attached) {
			window_put(attached);
			window_put(attached);
		}
	}
	wait_var_event(&ep->nr_windows, !atomic_read(&ep->nr_windows));
	WARN_ON_ONCE(!xa_empty(&ep->windows));
	if (ep->window_state)
		coopmpi_shm_put(ep->window_state);
}

int __init coopmpi_window_init(void)
{
	window_wq = alloc_workqueue("coopmpi_window", WQ_UNBOUND |
				    WQ_MEM_RECLAIM, 0);
	return window_wq ? 0 : -ENOMEM;
}

void coopmpi_window_exit(void)
{
	destroy_workqueue(window_wq);
}
