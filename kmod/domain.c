// SPDX-License-Identifier: GPL-2.0
/*
 * Protection domains and their endpoint tables.
 *
 * A domain is named by a 64-bit key and its owner's effective uid, and
 * lives exactly as long as it has joined endpoints.  Its endpoint table is written under domain->lock;
 * the ring pointers in it are RCU-published so the mailbox fast path and
 * mmap() can find a peer's ring without taking a lock.
 */
#include <linux/cred.h>
#include <linux/capability.h>
#include <linux/err.h>
#include <linux/idr.h>
#include <linux/nospec.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "coopmpi.h"

/* Domain list, domain->users, node-wide ring sums. */
DEFINE_MUTEX(coopmpi_lock);
static LIST_HEAD(coopmpi_domains);	/* coopmpi_lock */
static DEFINE_IDA(coopmpi_domain_ida);

/* Final free, called from the domain kobject's release. */
void coopmpi_domain_free(struct coopmpi_domain *d)
{
	WARN_ON_ONCE(!xa_empty(&d->regions));
	xa_destroy(&d->regions);
	if (d->user) {
		coopmpi_user_uncharge(d->user, COOPMPI_USER_DOMAINS, 1);
		coopmpi_user_put(d->user);
	}
	coopmpi_counters_destroy(d);
	kfree(d->slots);
	if (d->id)
		ida_free(&coopmpi_domain_ida, d->id);
	kfree(d);
}

/* The owner's domain count; d->user is set only once charged. */
static int domain_charge(struct coopmpi_domain *d)
{
	struct coopmpi_user *u = coopmpi_user_get(d->uid);
	int ret;

	if (!u)
		return -ENOMEM;
	ret = coopmpi_user_charge(u, COOPMPI_USER_DOMAINS, 1);
	if (ret) {
		coopmpi_user_put(u);
		return ret;
	}
	d->user = u;
	return 0;
}

static struct coopmpi_domain *domain_create(u64 key)
{
	struct coopmpi_domain *d;
	int ret;

	d = kzalloc(sizeof(*d), GFP_KERNEL_ACCOUNT);
	if (!d)
		return ERR_PTR(-ENOMEM);
	/* From here on every failure is a kobject_put(): one free path. */
	coopmpi_domain_sysfs_init(d);
	d->key = key;
	d->uid = current_euid();
	d->max_endpoints = coopmpi_max_endpoints;
	mutex_init(&d->lock);
	xa_init_flags(&d->regions, XA_FLAGS_ALLOC1);
	INIT_LIST_HEAD(&d->node);

	ret = domain_charge(d);
	if (ret)
		goto err;
	ret = -ENOMEM;
	d->slots = kcalloc(d->max_endpoints, sizeof(*d->slots),
			   GFP_KERNEL_ACCOUNT);
	if (!d->slots)
		goto err;
	ret = ida_alloc_range(&coopmpi_domain_ida, 1, INT_MAX, GFP_KERNEL);
	if (ret < 0)
		goto err;
	d->id = ret;
	ret = coopmpi_counters_create(d);
	if (ret)
		goto err;
	ret = coopmpi_domain_sysfs_add(d);
	if (ret)
		goto err;
	return d;
err:
	coopmpi_domain_sysfs_put(d);
	return ERR_PTR(ret);
}

/* Called without any lock held: kobject_del() waits for sysfs readers. */
static void domain_destroy(struct coopmpi_domain *d)
{
	coopmpi_domain_sysfs_del(d);
	atomic_dec(&coopmpi_stats.domains);
	coopmpi_domain_sysfs_put(d);
}

/*
 * A key names a domain of one owner, the effective uid that created it:
 * the same key under another uid is another domain, so no user can take
 * (squat) a key another user's job is about to join.
 */
static struct coopmpi_domain *domain_find(u64 key, kuid_t owner)
{
	struct coopmpi_domain *d;

	lockdep_assert_held(&coopmpi_lock);
	list_for_each_entry(d, &coopmpi_domains, node)
		if (d->key == key && uid_eq(d->uid, owner))
			return d;
	return NULL;
}

/*
 * May the current task use domain d?  Its owner's effective uid or
 * CAP_SYS_ADMIN.  JOIN finds only the caller's own domains, but this is
 * checked at every use: an endpoint's file passed over a unix socket to
 * another uid, or kept across a setuid exec or a privilege drop, must not
 * carry the domain's memory with it.
 */
static bool domain_may_use(struct coopmpi_domain *d)
{
	/* capable() last: it audits, and only matters on a uid mismatch. */
	return uid_eq(current_euid(), d->uid) || capable(CAP_SYS_ADMIN);
}

struct coopmpi_domain *coopmpi_ep_domain_checked(struct coopmpi_ep *ep)
{
	struct coopmpi_domain *d = coopmpi_ep_domain(ep);

	if (!d)
		return ERR_PTR(-ENOTCONN);
	if (!domain_may_use(d))
		return ERR_PTR(-EPERM);
	return d;
}

/* Looks up or creates the domain; the caller attaches before unlocking. */
static struct coopmpi_domain *domain_lookup(u64 key, u32 flags)
{
	struct coopmpi_domain *d;

	lockdep_assert_held(&coopmpi_lock);
	d = domain_find(key, current_euid());
	if (d)
		return flags & COOPMPI_JOIN_CREATE ? ERR_PTR(-EEXIST) : d;
	if (flags & COOPMPI_JOIN_EXISTING)
		return ERR_PTR(-ENOENT);
	d = domain_create(key);
	if (!IS_ERR(d)) {
		list_add(&d->node, &coopmpi_domains);
		atomic_inc(&coopmpi_stats.domains);
	}
	return d;
}

static int slot_attach(struct coopmpi_domain *d, struct coopmpi_ep *ep,
		       struct coopmpi_ring *ring)
{
	struct coopmpi_slot *s;
	pid_t pid = task_tgid_vnr(current);
	u32 i;

	mutex_lock(&d->lock);
	for (i = 0; i < d->max_endpoints; i++)
		if (!d->slots[i].ep)
			break;
	if (i == d->max_endpoints) {
		mutex_unlock(&d->lock);
		return -ENOSPC;
	}
	s = &d->slots[i];
	s->generation++;
	ep->ep_id = i;
	ep->generation = s->generation;
	ep->ring = ring;
	s->ep = ep;
	coopmpi_counters_slot_reset(d, i, pid, s->generation);
	coopmpi_ring_init_hdr(ring, i, s->generation, pid);
	/* Peers may map or send to the ring from now on. */
	rcu_assign_pointer(s->ring, ring);
	mutex_unlock(&d->lock);
	return 0;
}

/* Folds a closing ring into the node-wide totals; its header is untrusted. */
static void ring_retire(struct coopmpi_ring *ring)
{
	u64 tail = READ_ONCE(ring->hdr->tail);
	u64 head = READ_ONCE(ring->hdr->head);
	s64 pending = (s64)(tail - head);

	atomic64_add(tail, &coopmpi_stats.retired_sent);
	atomic64_add(READ_ONCE(ring->hdr->full_events),
		     &coopmpi_stats.retired_full);
	if (pending > 0)
		atomic64_add(min_t(s64, pending, ring->slots),
			     &coopmpi_stats.dropped);
}

static void slot_detach(struct coopmpi_domain *d, struct coopmpi_ep *ep)
{
	struct coopmpi_slot *s = &d->slots[ep->ep_id];

	lockdep_assert_held(&coopmpi_lock);
	mutex_lock(&d->lock);
	s->ep = NULL;
	RCU_INIT_POINTER(s->ring, NULL);
	coopmpi_counters_slot_reset(d, ep->ep_id, 0, 0);
	/* Under coopmpi_lock so sysfs sums never count a ring twice. */
	ring_retire(ep->ring);
	mutex_unlock(&d->lock);
}

static int join_locked(struct coopmpi_ep *ep, struct coopmpi_join *j,
		       struct coopmpi_ring *ring)
{
	struct coopmpi_domain *d;
	int ret;

	mutex_lock(&coopmpi_lock);
	d = domain_lookup(j->key, j->flags);
	if (IS_ERR(d)) {
		mutex_unlock(&coopmpi_lock);
		return PTR_ERR(d);
	}
	ret = slot_attach(d, ep, ring);
	if (ret) {
		bool empty = !d->users;

		if (empty)
			list_del(&d->node);
		mutex_unlock(&coopmpi_lock);
		if (empty)
			domain_destroy(d);
		return ret;
	}
	d->users++;
	mutex_unlock(&coopmpi_lock);

	atomic_inc(&coopmpi_stats.endpoints);
	j->ep_id = ep->ep_id;
	j->generation = ep->generation;
	j->domain_id = d->id;
	j->max_endpoints = d->max_endpoints;
	/* Pairs with coopmpi_ep_domain(): ep fields are set before. */
	smp_store_release(&ep->domain, d);
	return 0;
}

int coopmpi_ioc_join(struct coopmpi_ep *ep, void *arg)
{
	struct coopmpi_join *j = arg;
	struct coopmpi_dma_ep *dma;
	struct coopmpi_ring *ring;
	int ret;

	if ((j->flags & COOPMPI_JOIN_FLAGS) == COOPMPI_JOIN_FLAGS ||
	    memchr_inv(j->reserved, 0, sizeof(j->reserved)))
		return -EINVAL;

	/* Allocate before taking locks: it can be megabytes. */
	ring = coopmpi_ring_alloc(coopmpi_mbox_slots);
	if (!ring)
		return -ENOMEM;
	dma = coopmpi_dma_ep_alloc();
	if (IS_ERR(dma)) {
		coopmpi_ring_put(ring);
		return PTR_ERR(dma);
	}

	mutex_lock(&ep->lock);
	if (ep->domain) {
		ret = -EALREADY;
	} else {
		/* Before the slot is visible: peers report it. */
		ep->pid = get_pid(task_tgid(current));
		/* Before the domain is published: joined calls use it. */
		ep->dma = dma;
		ret = join_locked(ep, j, ring);
		if (ret) {
			put_pid(ep->pid);
			ep->pid = NULL;
			ep->dma = NULL;
		}
	}
	mutex_unlock(&ep->lock);

	if (ret) {
		coopmpi_ring_put(ring);
		coopmpi_dma_ep_free(dma);
	}
	return ret;
}

int coopmpi_ioc_ep_query(struct coopmpi_ep *ep, void *arg)
{
	struct coopmpi_domain *d = coopmpi_ep_domain(ep);
	struct coopmpi_ep_query *q = arg;
	struct coopmpi_slot *s;

	if (memchr_inv(q->reserved, 0, sizeof(q->reserved)))
		return -EINVAL;
	if (q->ep_id >= d->max_endpoints)
		return -EINVAL;

	s = &d->slots[array_index_nospec(q->ep_id, d->max_endpoints)];
	mutex_lock(&d->lock);
	q->state = s->ep ? COOPMPI_EP_ALIVE : COOPMPI_EP_FREE;
	q->generation = s->generation;
	q->pid = s->ep ? pid_vnr(s->ep->pid) : 0;
	mutex_unlock(&d->lock);
	return 0;
}

/*
 * Sums one u64 field of the headers of all live rings.  The value is
 * whatever user space left there: it is reported, never trusted.
 */
u64 coopmpi_sum_live_rings(size_t field)
{
	struct coopmpi_domain *d;
	u64 sum = 0;
	u32 i;

	lockdep_assert_held(&coopmpi_lock);
	list_for_each_entry(d, &coopmpi_domains, node) {
		mutex_lock(&d->lock);
		for (i = 0; i < d->max_endpoints; i++) {
			struct coopmpi_ep *ep = d->slots[i].ep;

			if (ep)
				sum += READ_ONCE(*(u64 *)((u8 *)ep->ring->hdr +
							  field));
		}
		mutex_unlock(&d->lock);
	}
	return sum;
}

/* Tears down everything an endpoint owns; no ioctl of it can be running. */
void coopmpi_ep_release(struct coopmpi_ep *ep)
{
	struct coopmpi_domain *d = ep->domain;
	bool last;

	if (!d)
		return;

	/* First: its descriptors use the regions and count in the domain. */
	coopmpi_dma_ep_release(ep);
	coopmpi_windows_release(ep);
	coopmpi_regions_release(ep);
	coopmpi_ring_close(ep->ring);

	mutex_lock(&ep->lock);
	mutex_lock(&coopmpi_lock);
	slot_detach(d, ep);
	last = !--d->users;
	if (last)
		list_del(&d->node);
	mutex_unlock(&coopmpi_lock);
	mutex_unlock(&ep->lock);

	/* Peers still holding the ring (send, mmap) keep it alive. */
	coopmpi_ring_put(ep->ring);
	ep->ring = NULL;
	if (last)
		domain_destroy(d);
	put_pid(ep->pid);
	atomic_dec(&coopmpi_stats.endpoints);
}
