/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internal structures of coopmpi.ko, shared by its files.
 *
 * Object model:
 *   file of /dev/coopmpi == struct coopmpi_ep (file->private_data)
 *   ep --joins--> struct coopmpi_domain (one per 64-bit key, node-wide)
 *   ep owns one struct coopmpi_ring (its mailbox) and its regions
 *   ep owns its DMA channel state (ep->dma: bounds, completion queue)
 *   domain owns the counters area and the region xarray
 *   ep and domain each hold their uid's struct coopmpi_user (user.c:
 *   per-user counts and limits, the user's DMA queue)
 *   pinned pages count in the pinner's mm->pinned_vm while pinned (pin.c)
 *
 * Lifetimes:
 *   - A domain lives while it has joined endpoints (d->users, changed
 *     only under coopmpi_lock, so a lookup under that lock never finds a
 *     dying domain).  Nothing else pins a domain: every other path runs
 *     from an ioctl/mmap/poll of a joined endpoint, which pins it.
 *   - A ring and the counters area are refcounted shared memory
 *     (struct coopmpi_shm): the owner, every vma mapping it and every
 *     in-flight MBOX_SEND hold a reference, so a peer closing while
 *     mapped or mid-send only leaves a dead ring behind.
 *   - A region is refcounted: the domain xarray holds one reference, an
 *     in-flight COPY holds another; the region's mm is mmgrab'd.
 *   - A window (window.c) holds its region and lives while its attacher
 *     keeps it attached or any vma maps it; its attacher (ep) outlives
 *     it, since those vmas hold the endpoint's file.  Deregistration and
 *     the owner's close kill the region's windows (DEAD) through
 *     region->windows.
 *   - vmas hold their file (vm_file), so an endpoint is only released
 *     after all its mappings are gone; the module is pinned by fops owner.
 *   - A DMA descriptor in flight (struct coopmpi_dma_op, dma*.c) holds
 *     references on its regions, the submitting task and an mmgrab of the
 *     source mm; it points to its endpoint's ep->dma and domain, which live
 *     until the endpoint is released: release cancels the endpoint's
 *     descriptors and waits until none is left (workers never sleep on
 *     user memory, so that wait is short).  An io_uring command holds its
 *     file, so the endpoint outlives it until io_uring_cmd_done() (run
 *     from task work); it is cancelled when its submitter exits.  The DMA
 *     completion queue is refcounted shared memory like a ring.  Module
 *     exit drains the DMA workqueue before releasing the dmaengine channel
 *     (whose owner module is pinned while coopmpi holds it).
 *
 * Lock order (outermost first):
 *   ep->lock  ->  coopmpi_lock  ->  domain->lock  ->  domain->regions xa_lock
 *   ep->recv_lock is a leaf mutex (serialises kernel-side consumers).
 *   A window's lock nests only the faulting mm's page table lock (taken
 *   under that mm's mmap_lock); region->windows_lock is a leaf spinlock;
 *   windows are zapped holding none of ours (window.c).
 *   ep->dma->lock is a leaf spinlock (in-flight bounds, CQ producer); the
 *   DMA waitqueues are woken under it (their locks nest inside it).
 *   The hw engine's submit mutex (dma_hw.c) is a leaf around descriptor
 *   prep/submit/issue (the dmaengine driver's locks nest inside it); its
 *   completion callbacks take no lock of ours.  DMA workers pin pages
 *   (mmap_read_trylock of any endpoint's mm, FOLL_NOWAIT or FOLL_NOFAULT)
 *   holding none of ours.  dma_sched.c's sched_lock (taken with irqs
 *   off: retry timers queue from softirq) and user.c's users_lock are
 *   leaf spinlocks.
 *   Ring and counters memory are accessed lock-free (shared with user
 *   space).  sysfs show() takes coopmpi_lock and/or domain->lock, so no
 *   kobject is ever deleted with one of those held.
 */
#ifndef COOPMPI_H
#define COOPMPI_H

#include <linux/atomic.h>
#include <linux/kobject.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "coopmpi_uapi.h"

/* Module parameters, validated at load and read-only afterwards. */
extern unsigned int coopmpi_mbox_slots;
extern unsigned int coopmpi_max_endpoints;
extern unsigned int coopmpi_copy_chunk_pages;
extern unsigned int coopmpi_max_regions;
extern unsigned int coopmpi_max_windows;

extern struct mutex coopmpi_lock;

/* Node-wide statistics exported in /sys/kernel/coopmpi. */
struct coopmpi_stats {
	atomic_t endpoints;
	atomic_t domains;
	atomic64_t retired_sent;	/* tails of closed rings */
	atomic64_t retired_full;	/* full_events of closed rings */
	atomic64_t dropped;		/* undelivered messages at close */
	atomic64_t copies;
	atomic64_t copy_bytes;
	atomic64_t copy_errors;
	atomic64_t dma_ops;		/* DMA descriptors in flight */
	atomic64_t dma_bytes;		/* their bytes */
	atomic64_t dma_completed;	/* completed with status 0 */
	atomic64_t dma_errors;		/* completed with an error */
};

extern struct coopmpi_stats coopmpi_stats;

/*
 * Shared memory is written by user space with atomics; the kernel's view
 * of a __u64 field as an atomic64_t lets it use the same atomic RMW.
 */
static inline atomic64_t *coopmpi_atomic64(__u64 *p)
{
	BUILD_BUG_ON(sizeof(atomic64_t) != sizeof(__u64));
	return (atomic64_t *)p;
}

/* Refcounted, memcg-charged pages that can be mapped to user space. */
struct coopmpi_shm {
	struct kref ref;
	void *mem;		/* the kernel's view (vmap) */
	struct page **pages;	/* what user space maps */
	size_t bytes;
	void (*free)(struct coopmpi_shm *shm);
};

int coopmpi_shm_alloc(struct coopmpi_shm *shm, size_t bytes,
		      void (*free)(struct coopmpi_shm *shm));
void coopmpi_shm_put(struct coopmpi_shm *shm);
int coopmpi_shm_mmap(struct coopmpi_shm *shm, struct vm_area_struct *vma,
		     unsigned long pgoff);

struct coopmpi_ring {
	struct coopmpi_shm shm;
	wait_queue_head_t wq;		/* the owner sleeps here */
	struct coopmpi_ring_hdr *hdr;
	u64 *seq;
	u8 *msgs;
	u32 slots;
	struct rcu_head rcu;		/* RCU lookup in domain slots */
};

struct coopmpi_domain;
struct coopmpi_dma_ep;

/* What one effective uid holds (user.c); its limits are module params. */
enum coopmpi_user_res {
	COOPMPI_USER_ENDPOINTS,
	COOPMPI_USER_DOMAINS,
	COOPMPI_USER_DMA_OPS,
	COOPMPI_USER_DMA_BYTES,
	COOPMPI_USER_WINDOWS,
	COOPMPI_USER_NR
};

struct coopmpi_user {
	struct hlist_node node;		/* user.c's hash, its lock */
	refcount_t ref;
	kuid_t uid;
	atomic64_t held[COOPMPI_USER_NR];
	/* dma_sched.c's, under its lock */
	struct list_head dma_ready;	/* descriptors waiting for a worker */
	struct list_head dma_turn;	/* on the round of users with some */
};

struct coopmpi_ep {
	struct mutex lock;		/* join, regions list */
	struct coopmpi_user *user;	/* the uid that opened it */
	struct mutex recv_lock;
	/* NULL until joined; published with release semantics. */
	struct coopmpi_domain *domain;
	struct coopmpi_ring *ring;
	struct pid *pid;
	u32 ep_id;
	u32 generation;
	struct list_head regions;
	unsigned int nr_regions;
	/* DMA channel state, NULL with dma=off; set before domain. */
	struct coopmpi_dma_ep *dma;
	/* window.c: slot -> the windows it attached (until freed) */
	struct xarray windows;
	atomic_t nr_windows;		/* not freed yet: release waits */
	struct coopmpi_shm *window_state;	/* set once, cmpxchg */
	struct address_space *mapping;		/* its file's: window zaps */
};

struct coopmpi_slot {
	struct coopmpi_ep *ep;			/* domain->lock */
	struct coopmpi_ring __rcu *ring;	/* set under domain->lock */
	u32 generation;				/* domain->lock */
};

struct coopmpi_domain {
	struct list_head node;		/* coopmpi_lock */
	unsigned int users;		/* joined endpoints, coopmpi_lock */
	u64 key;
	u32 id;
	kuid_t uid;
	struct coopmpi_user *user;	/* of uid */
	u32 max_endpoints;
	struct mutex lock;		/* slots[] (ring pointers: RCU) */
	struct coopmpi_slot *slots;
	struct xarray regions;
	u32 next_region;		/* xa_alloc_cyclic cursor */
	atomic_t region_gen;
	struct coopmpi_shm *counters;
	struct coopmpi_load_slot *load;	/* inside counters */
	struct coopmpi_offload_counters *offload;
	struct kobject kobj;
};

struct coopmpi_region {
	struct kref ref;
	struct list_head node;		/* owner->regions, owner->lock */
	struct coopmpi_ep *owner;	/* identity only, never dereferenced */
	struct mm_struct *mm;		/* mmgrab'd */
	u64 addr;
	u64 length;
	u64 cookie;
	u32 access;
	/*
	 * 0 while published; then why it went away, as COPY reports it:
	 * -ENXIO deregistered, -ESRCH owner closed.  Set under the xa_lock.
	 */
	int gone;
	/* window.c: windows mapping it; closed once it is gone */
	spinlock_t windows_lock;
	struct list_head windows;
	bool windows_closed;
};

static inline struct coopmpi_domain *coopmpi_ep_domain(struct coopmpi_ep *ep)
{
	/* Pairs with the release in coopmpi_join(). */
	return smp_load_acquire(&ep->domain);
}

/* domain.c */
/* The endpoint's domain for a call of the current task: -ENOTCONN before
 * JOIN, -EPERM when the task may not use the domain (another uid). */
struct coopmpi_domain *coopmpi_ep_domain_checked(struct coopmpi_ep *ep);
void coopmpi_domain_free(struct coopmpi_domain *d);
int coopmpi_ioc_join(struct coopmpi_ep *ep, void *arg);
int coopmpi_ioc_ep_query(struct coopmpi_ep *ep, void *arg);
void coopmpi_ep_release(struct coopmpi_ep *ep);
u64 coopmpi_sum_live_rings(size_t field);

/* pin.c */
unsigned long coopmpi_pin_limit(void);
unsigned long coopmpi_pin_room(struct mm_struct *mm, unsigned long limit);
unsigned long coopmpi_pin_charge(struct mm_struct *mm, unsigned long nr,
				 unsigned long limit);
void coopmpi_pin_uncharge(struct mm_struct *mm, unsigned long nr);

/* user.c */
struct coopmpi_user *coopmpi_user_get(kuid_t uid);
void coopmpi_user_put(struct coopmpi_user *u);
int coopmpi_user_charge(struct coopmpi_user *u, enum coopmpi_user_res res,
			u64 n);
void coopmpi_user_uncharge(struct coopmpi_user *u, enum coopmpi_user_res res,
			   u64 n);

/* mbox.c */
struct coopmpi_ring *coopmpi_ring_alloc(u32 slots);
void coopmpi_ring_init_hdr(struct coopmpi_ring *ring, u32 ep_id, u32 gen,
			   pid_t owner);
void coopmpi_ring_close(struct coopmpi_ring *ring);
void coopmpi_ring_put(struct coopmpi_ring *ring);
struct coopmpi_ring *coopmpi_ring_lookup(struct coopmpi_domain *d, u32 ep);
int coopmpi_ring_mmap(struct coopmpi_domain *d, struct vm_area_struct *vma,
		      unsigned long pgoff);
__poll_t coopmpi_ring_poll(struct coopmpi_ep *ep, struct file *file,
			   poll_table *wait);
int coopmpi_ioc_mbox_send(struct coopmpi_ep *ep, void *arg);
int coopmpi_ioc_mbox_recv(struct coopmpi_ep *ep, void *arg);
int coopmpi_ioc_doorbell(struct coopmpi_ep *ep, void *arg);

/* region.c */
struct coopmpi_region *coopmpi_region_get(struct coopmpi_domain *d,
					  u64 cookie);
void coopmpi_region_put(struct coopmpi_region *r);
int coopmpi_ioc_region_register(struct coopmpi_ep *ep, void *arg);
int coopmpi_ioc_region_deregister(struct coopmpi_ep *ep, void *arg);
int coopmpi_ioc_copy(struct coopmpi_ep *ep, void *arg);
void coopmpi_regions_release(struct coopmpi_ep *ep);

/* window.c: windows need MMU notifiers */
#ifdef CONFIG_MMU_NOTIFIER
int coopmpi_window_init(void);
void coopmpi_window_exit(void);
int coopmpi_ioc_window_attach(struct coopmpi_ep *ep, void *arg);
int coopmpi_ioc_window_detach(struct coopmpi_ep *ep, void *arg);
int coopmpi_window_mmap(struct coopmpi_ep *ep, struct vm_area_struct *vma,
			unsigned long pgoff);
int coopmpi_window_state_mmap(struct coopmpi_ep *ep,
			      struct vm_area_struct *vma);
void coopmpi_windows_region_gone(struct coopmpi_region *r);
void coopmpi_windows_release(struct coopmpi_ep *ep);
#define COOPMPI_WINDOWS 1
#else
static inline int coopmpi_window_init(void) { return 0; }
static inline void coopmpi_window_exit(void) { }
static inline int coopmpi_ioc_window_attach(struct coopmpi_ep *ep, void *arg)
{
	return -EOPNOTSUPP;
}

static inline int coopmpi_ioc_window_detach(struct coopmpi_ep *ep, void *arg)
{
	return -EOPNOTSUPP;
}

static inline int coopmpi_window_mmap(struct coopmpi_ep *ep,
				      struct vm_area_struct *vma,
				      unsigned long pgoff)
{
	return -ENODEV;
}

static inline int coopmpi_window_state_mmap(struct coopmpi_ep *ep,
					    struct vm_area_struct *vma)
{
	return -ENODEV;
}

static inline void coopmpi_windows_region_gone(struct coopmpi_region *r) { }
static inline void coopmpi_windows_release(struct coopmpi_ep *ep) { }
#define COOPMPI_WINDOWS 0
#endif

/* counters.c */
int coopmpi_counters_create(struct coopmpi_domain *d);
void coopmpi_counters_destroy(struct coopmpi_domain *d);
void coopmpi_counters_slot_reset(struct coopmpi_domain *d, u32 ep_id,
				 pid_t pid, u32 generation);
int coopmpi_counters_mmap(struct coopmpi_domain *d,
			  struct vm_area_struct *vma, unsigned long pgoff);
void coopmpi_domain_sysfs_init(struct coopmpi_domain *d);
int coopmpi_domain_sysfs_add(struct coopmpi_domain *d);
void coopmpi_domain_sysfs_del(struct coopmpi_domain *d);
void coopmpi_domain_sysfs_put(struct coopmpi_domain *d);
int coopmpi_sysfs_init(void);
void coopmpi_sysfs_exit(void);

/* dma.c: the DMA-engine channel */
struct io_uring_cmd;
int coopmpi_dma_init(void);
void coopmpi_dma_exit(void);
u32 coopmpi_dma_engine_id(void);
const char *coopmpi_dma_engine_name(void);
const char *coopmpi_dma_channel_name(void);
struct coopmpi_dma_ep *coopmpi_dma_ep_alloc(void);
void coopmpi_dma_ep_free(struct coopmpi_dma_ep *dep);
void coopmpi_dma_ep_release(struct coopmpi_ep *ep);
int coopmpi_ioc_dma_info(struct coopmpi_ep *ep, void *arg);
int coopmpi_ioc_dma_submit(struct coopmpi_ep *ep, void *arg);
int coopmpi_dma_uring_cmd(struct io_uring_cmd *ioucmd,
			  unsigned int issue_flags);
__poll_t coopmpi_dma_poll(struct coopmpi_ep *ep, struct file *file,
			  poll_table *wait);
int coopmpi_dma_cq_mmap(struct coopmpi_ep *ep, struct vm_area_struct *vma,
			unsigned long pgoff);

#endif /* COOPMPI_H */
