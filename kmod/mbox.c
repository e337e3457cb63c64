// SPDX-License-Identifier: GPL-2.0
/*
 * Per-endpoint mailbox rings.
 *
 * The ring lives in memory every endpoint of the domain can map and
 * write, so the kernel treats all of it as hostile: indexes are masked
 * with the kernel's own slot count, retry loops are bounded, and a
 * scribbled-over ring can only yield -EAGAIN or garbage messages.
 */
#include <linux/nospec.h>
#include <linux/poll.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "coopmpi.h"

/* Messages copied from user space per step of MBOX_SEND (on stack). */
#define MBOX_SEND_STEP		8
/* Lost CAS races tolerated per message before reporting -EAGAIN. */
#define MBOX_MAX_RETRIES	1024

static void ring_free(struct coopmpi_shm *shm)
{
	struct coopmpi_ring *ring = container_of(shm, struct coopmpi_ring, shm);

	/* RCU readers of the endpoint table may still look at the kref. */
	kfree_rcu(ring, rcu);
}

struct coopmpi_ring *coopmpi_ring_alloc(u32 slots)
{
	struct coopmpi_ring *ring;
	struct coopmpi_ring_hdr *hdr;
	u32 i;

	ring = kzalloc(sizeof(*ring), GFP_KERNEL_ACCOUNT);
	if (!ring)
		return NULL;
	if (coopmpi_shm_alloc(&ring->shm, coopmpi_ring_bytes(slots),
			      ring_free)) {
		kfree(ring);
		return NULL;
	}
	init_waitqueue_head(&ring->wq);
	ring->slots = slots;
	ring->hdr = ring->shm.mem;
	ring->seq = ring->shm.mem + COOPMPI_RING_SEQ_OFF;
	ring->msgs = ring->shm.mem + coopmpi_ring_msgs_off(slots);

	hdr = ring->hdr;
	hdr->magic = COOPMPI_RING_MAGIC;
	hdr->version = COOPMPI_ABI_VERSION;
	hdr->slots = slots;
	hdr->msg_size = COOPMPI_MSG_SIZE;
	for (i = 0; i < slots; i++)
		ring->seq[i] = i;
	return ring;
}

/* Called before the ring is published, so plain stores suffice. */
void coopmpi_ring_init_hdr(struct coopmpi_ring *ring, u32 ep_id, u32 gen,
			   pid_t owner)
{
	ring->hdr->ep_id = ep_id;
	ring->hdr->generation = gen;
	ring->hdr->owner_pid = owner;
}

void coopmpi_ring_close(struct coopmpi_ring *ring)
{
	WRITE_ONCE(ring->hdr->owner_pid, 0);
	smp_wmb();	/* a producer seeing closed also sees owner_pid 0 */
	WRITE_ONCE(ring->hdr->closed, 1);
	wake_up_all(&ring->wq);
}

void coopmpi_ring_put(struct coopmpi_ring *ring)
{
	coopmpi_shm_put(&ring->shm);
}

/* Returns a referenced ring of a live endpoint of @d, or NULL. */
struct coopmpi_ring *coopmpi_ring_lookup(struct coopmpi_domain *d, u32 ep)
{
	struct coopmpi_ring *ring;

	if (ep >= d->max_endpoints)
		return NULL;
	ep = array_index_nospec(ep, d->max_endpoints);

	rcu_read_lock();
	ring = rcu_dereference(d->slots[ep].ring);
	if (ring && !kref_get_unless_zero(&ring->shm.ref))
		ring = NULL;
	rcu_read_unlock();
	return ring;
}

/* @pgoff is relative to COOPMPI_MMAP_RING_BASE. */
int coopmpi_ring_mmap(struct coopmpi_domain *d, struct vm_area_struct *vma,
		      unsigned long pgoff)
{
	const unsigned int shift = COOPMPI_MMAP_RING_SHIFT - PAGE_SHIFT;
	unsigned long ep = pgoff >> shift;
	struct coopmpi_ring *ring;
	int ret;

	if (ep >= d->max_endpoints)
		return -ENXIO;
	ring = coopmpi_ring_lookup(d, ep);
	if (!ring)
		return -ENXIO;
	ret = coopmpi_shm_mmap(&ring->shm, vma, pgoff & ((1UL << shift) - 1));
	coopmpi_ring_put(ring);
	return ret;
}

static bool ring_readable(struct coopmpi_ring *ring)
{
	u64 head = READ_ONCE(ring->hdr->head);
	u64 *seq = &ring->seq[head & (ring->slots - 1)];

	/* Acquire pairs with the producer's release of seq. */
	return smp_load_acquire(seq) == head + 1;
}

__poll_t coopmpi_ring_poll(struct coopmpi_ep *ep, struct file *file,
			   poll_table *wait)
{
	poll_wait(file, &ep->ring->wq, wait);
	return ring_readable(ep->ring) ? EPOLLIN | EPOLLRDNORM : 0;
}

/* One message into the ring, per the protocol in coopmpi_uapi.h. */
static int ring_enqueue(struct coopmpi_ring *ring, const void *msg)
{
	struct coopmpi_ring_hdr *hdr = ring->hdr;
	u64 mask = ring->slots - 1;
	u64 pos = READ_ONCE(hdr->tail);
	unsigned int tries;

	for (tries = 0; tries < MBOX_MAX_RETRIES; tries++) {
		/*
		 * Acquire pairs with the consumer's release of head: the
		 * message a lap before pos was read.  Signed: a pos behind
		 * head is a stale tail, which the cmpxchg refuses.
		 */
		if ((s64)(pos - smp_load_acquire(&hdr->head)) > (s64)mask) {
			atomic64_inc(coopmpi_atomic64(&hdr->full_events));
			return -EAGAIN;
		}
		/* On failure try_cmpxchg64 reloads pos. */
		if (try_cmpxchg64(&hdr->tail, &pos, pos + 1)) {
			memcpy(ring->msgs + (pos & mask) * COOPMPI_MSG_SIZE,
			       msg, COOPMPI_MSG_SIZE);
			/* Release: the message is visible before the seq. */
			smp_store_release(&ring->seq[pos & mask], pos + 1);
			return 0;
		}
	}
	return -EAGAIN;
}

static void ring_kick(struct coopmpi_ring *ring)
{
	/*
	 * Full barrier: the seq publication must be visible before we read
	 * the consumer's flag and the waitqueue; pairs with the smp_mb() in
	 * ring_wait() and with set_current_state() in wait_event / poll.
	 */
	smp_mb();
	if (READ_ONCE(ring->hdr->wake_requested) ||
	    /* poll() sleepers may never have set wake_requested */
	    waitqueue_active(&ring->wq))
		wake_up_interruptible_poll(&ring->wq, EPOLLIN | EPOLLRDNORM);
}

static int xfer_check(const struct coopmpi_mbox_xfer *x)
{
	if (x->reserved0 || memchr_inv(x->reserved, 0, sizeof(x->reserved)))
		return -EINVAL;
	if (x->count > COOPMPI_MBOX_MAX_BATCH)
		return -EINVAL;
	return 0;
}

/* Returns 0 or the error that stopped it; *done counts what went in. */
static int send_batch(struct coopmpi_ring *ring, const u8 __user *umsgs,
		      u32 count, u32 *done)
{
	u8 buf[MBOX_SEND_STEP * COOPMPI_MSG_SIZE];
	u32 n, i;
	int ret;

	while (*done < count) {
		n = min_t(u32, count - *done, MBOX_SEND_STEP);
		/* Fault before claiming slots: a claimed slot blocks the peer. */
		if (copy_from_user(buf, umsgs + (size_t)*done * COOPMPI_MSG_SIZE,
				   n * COOPMPI_MSG_SIZE))
			return -EFAULT;
		for (i = 0; i < n; i++) {
			ret = ring_enqueue(ring, buf + i * COOPMPI_MSG_SIZE);
			if (ret)
				return ret;
			(*done)++;
		}
		/* A hostile ring can make every message retry: stay polite. */
		cond_resched();
	}
	return 0;
}

int coopmpi_ioc_mbox_send(struct coopmpi_ep *ep, void *arg)
{
	struct coopmpi_domain *d = coopmpi_ep_domain(ep);
	struct coopmpi_mbox_xfer *x = arg;
	struct coopmpi_ring *ring;
	int ret;

	ret = xfer_check(x);
	if (ret)
		return ret;
	x->done = 0;
	ring = coopmpi_ring_lookup(d, x->peer);
	if (!ring)
		return -ENXIO;
	ret = send_batch(ring, u64_to_user_ptr(x->msgs), x->count, &x->done);
	if (x->done)
		ring_kick(ring);
	coopmpi_ring_put(ring);
	return x->done ? 0 : ret;
}

/*
 * Copies straight from the ring to user space and releases a slot only
 * once its message reached the user: a fault loses nothing.
 */
static int recv_batch(struct coopmpi_ring *ring, u8 __user *umsgs,
		      u32 count, u32 *done)
{
	struct coopmpi_ring_hdr *hdr = ring->hdr;
	u64 mask = ring->slots - 1;
	u64 pos = READ_ONCE(hdr->head);

	for (; *done < count; (*done)++, pos++) {
		u64 *seq = &ring->seq[pos & mask];

		/* Acquire pairs with the producer's release of seq. */
		if (smp_load_acquire(seq) != pos + 1)
			break;
		if (copy_to_user(umsgs + (size_t)*done * COOPMPI_MSG_SIZE,
				 ring->msgs + (pos & mask) * COOPMPI_MSG_SIZE,
				 COOPMPI_MSG_SIZE))
			return -EFAULT;
		/* Release: the message is read before producers reuse it. */
		smp_store_release(&hdr->head, pos + 1);
	}
	return 0;
}

static int ring_wait(struct coopmpi_ring *ring)
{
	int ret;

	WRITE_ONCE(ring->hdr->wake_requested, 1);
	smp_mb();	/* flag visible before the re-check in wait_event */
	ret = wait_event_interruptible(ring->wq, ring_readable(ring));
	WRITE_ONCE(ring->hdr->wake_requested, 0);
	return ret ? -EINTR : 0;
}

int coopmpi_ioc_mbox_recv(struct coopmpi_ep *ep, void *arg)
{
	struct coopmpi_mbox_xfer *x = arg;
	struct coopmpi_ring *ring = ep->ring;
	int ret;

	ret = xfer_check(x);
	if (ret)
		return ret;
	if (x->peer)
		return -EINVAL;
	x->done = 0;
	while (x->count) {
		/* The protocol has one consumer; kernel threads take turns. */
		if (mutex_lock_interruptible(&ep->recv_lock))
			return -EINTR;
		ret = recv_batch(ring, u64_to_user_ptr(x->msgs), x->count,
				 &x->done);
		mutex_unlock(&ep->recv_lock);
		if (x->done || ret)
			break;
		if (!(x->flags & COOPMPI_MBOX_WAIT))
			return -EAGAIN;
		/* A ring user space keeps flipping must not pin the CPU. */
		if (signal_pending(current))
			return -EINTR;
		cond_resched();
		ret = ring_wait(ring);
		if (ret)
			return ret;
	}
	return x->done ? 0 : ret;
}

int coopmpi_ioc_doorbell(struct coopmpi_ep *ep, void *arg)
{
	struct coopmpi_domain *d = coopmpi_ep_domain(ep);
	struct coopmpi_doorbell *db = arg;
	struct coopmpi_ring *ring;

	if (db->reserved0 || memchr_inv(db->reserved, 0, sizeof(db->reserved)))
		return -EINVAL;
	ring = coopmpi_ring_lookup(d, db->peer);
	if (!ring)
		return -ENXIO;
	wake_up_interruptible_poll(&ring->wq, EPOLLIN | EPOLLRDNORM);
	coopmpi_ring_put(ring);
	return 0;
}
