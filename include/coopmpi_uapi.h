/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR LGPL-2.1-or-later */
/*
 * coopmpi_uapi.h - the ABI between coopmpi.ko and its users (libcoopmpi).
 *
 * One open file of /dev/coopmpi is one endpoint.  An endpoint joins a
 * protection domain (a 64-bit key) and from then on can exchange 64-byte
 * mailbox messages with, register memory regions for, and copy to/from the
 * regions of, the other endpoints of that domain - and nothing else.
 *
 * Versioning: every ioctl argument starts with "__u32 size", which the
 * caller sets to sizeof() of the struct it was compiled with.  The size is
 * the version (as for clone3/openat2): a newer kernel accepts older, shorter
 * structs; an older kernel accepts a longer struct only if the tail it does
 * not know is zero (-E2BIG otherwise).  Every "reserved" field and every
 * unknown flag bit must be zero (-EINVAL otherwise).
 *
 * The same layouts (mailbox ring, counters area) are used by the library's
 * user-space fallback provider, so there is one implementation of each
 * lock-free protocol.
 */
#ifndef COOPMPI_UAPI_H
#define COOPMPI_UAPI_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/ioctl.h>
#else
#include <linux/types.h>
#include <sys/ioctl.h>
#endif

#define COOPMPI_ABI_VERSION	1
#define COOPMPI_DEVICE_NAME	"coopmpi"
#define COOPMPI_IOC_MAGIC	0xC7

/* A mailbox message: the packetizer's unit, opaque to the driver. */
#define COOPMPI_MSG_SIZE	64

/* ------------------------------------------------------------------ */
/* Mailbox ring: shared memory, lock-free, many producers, one consumer */
/* ------------------------------------------------------------------ */

/*
 * Layout of one endpoint's mailbox (what mmap of COOPMPI_MMAP_RING(ep)
 * returns, ring_bytes long):
 *
 *   offset 0                      struct coopmpi_ring_hdr (one page)
 *   offset COOPMPI_RING_SEQ_OFF   __u64 seq[slots]         (page aligned)
 *   offset coopmpi_ring_msgs_off  64-byte messages[slots]  (page aligned)
 *
 * Protocol (bounded MPMC queue with a sequence word per slot):
 *   initially seq[i] = i, head = tail = 0.
 *   producer: pos = tail; s = load_acquire(seq[pos & mask]);
 *             s == pos  -> CAS(tail, pos, pos + 1), on success write the
 *                          message, then store_release(seq[..], pos + 1);
 *             s <  pos  -> ring full: -EAGAIN to the caller, and
 *                          atomically increment full_events;
 *             s >  pos  -> another producer won, reload tail and retry.
 *             After publishing: full fence, then if wake_requested is set,
 *             ring the doorbell (COOPMPI_IOC_DOORBELL).
 *   consumer: pos = head; s = load_acquire(seq[pos & mask]);
 *             s == pos + 1 -> read message, store_release(seq[..],
 *             pos + slots), head = pos + 1; otherwise empty.
 *   sleeping consumer: store wake_requested = 1, full fence, re-check the
 *             ring, then poll() the fd; clear wake_requested when awake.
 * Messages of one producer thread are delivered in the order it enqueued
 * them (FIFO per sender/receiver pair).  The kernel's ioctl path uses the
 * very same protocol on the same memory.
 */
#define COOPMPI_RING_MAGIC	0x434d4258U	/* "CMBX" */

struct coopmpi_ring_hdr {
	__u32 magic;
	__u32 version;		/* COOPMPI_ABI_VERSION */
	__u32 slots;		/* power of two */
	__u32 msg_size;		/* COOPMPI_MSG_SIZE */
	__u32 ep_id;		/* owner endpoint id within the domain */
	__u32 generation;	/* owner's generation, see coopmpi_join */
	__u32 closed;		/* set to 1 when the owner is gone */
	__u32 owner_pid;	/* tgid of the owner, 0 when closed */
	__u8 pad0[32];

	/* producers' cache line */
	__u64 tail;
	__u64 full_events;	/* enqueue attempts refused because full */
	__u8 pad1[48];

	/* consumer's cache line */
	__u64 head;
	__u32 wake_requested;	/* consumer sleeps in poll(); ring doorbell */
	__u32 pad2;
	__u8 pad3[48];
};

#define COOPMPI_RING_SEQ_OFF	4096ULL

static inline __u64 coopmpi_ring_msgs_off(__u32 slots)
{
	__u64 seq_bytes = (__u64)slots * sizeof(__u64);

	return COOPMPI_RING_SEQ_OFF + ((seq_bytes + 4095ULL) & ~4095ULL);
}

static inline __u64 coopmpi_ring_bytes(__u32 slots)
{
	return coopmpi_ring_msgs_off(slots) + (__u64)slots * COOPMPI_MSG_SIZE;
}

/* ------------------------------------------------------------------ */
/* Counters area: per-domain copy load and offload load                 */
/* ------------------------------------------------------------------ */

/*
 * Layout (mmap of COOPMPI_MMAP_COUNTERS, counters_bytes long, read/write):
 *   struct coopmpi_counters_hdr
 *   struct coopmpi_offload_counters
 *   struct coopmpi_load_slot slot[max_endpoints]   (indexed by ep_id)
 * Every field is updated with atomic add/sub.  "pending_*" is the load the
 * library has assigned to an endpoint (incremented when a copy is assigned,
 * decremented when it is done: the input of COOP-load); "kernel_*" is what
 * the driver is copying for it right now; "total_*" only grows.
 * The driver zeroes a slot when an endpoint joins and when it closes.
 */
#define COOPMPI_COUNTERS_MAGIC	0x434d4354U	/* "CMCT" */

struct coopmpi_counters_hdr {
	__u32 magic;
	__u32 version;
	__u32 max_endpoints;
	__u32 domain_id;
	__u64 reserved[6];
};

struct coopmpi_offload_counters {
	__u64 dma_ops;		/* outstanding DMA-engine descriptors */
	__u64 dma_bytes;
	__u64 hca_ops;		/* outstanding HCA (loopback/RDMA) operations */
	__u64 hca_bytes;
	__u64 reserved[4];
};

struct coopmpi_load_slot {
	__u64 pending_ops;
	__u64 pending_bytes;
	__u64 kernel_ops;
	__u64 kernel_bytes;
	__u64 total_ops;
	__u64 total_bytes;
	__u32 pid;		/* owner tgid, 0 when the slot is free */
	__u32 generation;
	__u64 reserved;
};

static inline __u64 coopmpi_counters_bytes(__u32 max_endpoints)
{
	__u64 n = sizeof(struct coopmpi_counters_hdr) +
		  sizeof(struct coopmpi_offload_counters) +
		  (__u64)max_endpoints * sizeof(struct coopmpi_load_slot);

	return (n + 4095ULL) & ~4095ULL;
}

/* ------------------------------------------------------------------ */
/* mmap offsets                                                         */
/* ------------------------------------------------------------------ */

#define COOPMPI_MMAP_COUNTERS		0ULL
#define COOPMPI_MMAP_RING_BASE		(1ULL << 40)
#define COOPMPI_MMAP_RING_SHIFT		28
#define COOPMPI_MMAP_RING(ep)		(COOPMPI_MMAP_RING_BASE + \
					 ((__u64)(ep) << COOPMPI_MMAP_RING_SHIFT))

/* ------------------------------------------------------------------ */
/* ioctls                                                               */
/* ------------------------------------------------------------------ */

/* COOPMPI_IOC_INFO: driver facts, valid before join. */
struct coopmpi_info {
	__u32 size;
	__u32 flags;		/* must be 0 */
	__u32 abi_version;	/* out */
	__u32 max_endpoints;	/* out: per domain */
	__u32 ring_slots;	/* out */
	__u32 msg_size;		/* out */
	__u64 ring_bytes;	/* out: mmap length of one ring */
	__u64 counters_bytes;	/* out: mmap length of the counters area */
	__u32 copy_chunk_pages;	/* out */
	__u32 dma_engine;	/* out: enum coopmpi_dma_engine */
	__u64 reserved[4];
};

enum coopmpi_dma_engine {
	COOPMPI_DMA_NONE = 0,
	COOPMPI_DMA_SOFT = 1,
	COOPMPI_DMA_HW = 2,
};

/*
 * COOPMPI_IOC_JOIN: attach this endpoint to the domain named by key,
 * creating the domain if it does not exist (unless JOIN_EXISTING).
 * Only the domain creator's effective uid (or CAP_SYS_ADMIN) may join.
 * Errors: -EALREADY joined, -EPERM other uid, -ENOENT with JOIN_EXISTING,
 * -EEXIST with JOIN_CREATE, -ENOSPC domain full.
 */
#define COOPMPI_JOIN_EXISTING	(1U << 0)
#define COOPMPI_JOIN_CREATE	(1U << 1)
#define COOPMPI_JOIN_FLAGS	(COOPMPI_JOIN_EXISTING | COOPMPI_JOIN_CREATE)

struct coopmpi_join {
	__u32 size;
	__u32 flags;
	__u64 key;
	__u32 ep_id;		/* out: 0..max_endpoints-1 */
	__u32 generation;	/* out: distinguishes reuses of an ep_id */
	__u32 domain_id;	/* out: node-local, names the sysfs directory */
	__u32 max_endpoints;	/* out */
	__u64 reserved[4];
};

/*
 * COOPMPI_IOC_EP_QUERY: is endpoint ep_id of my domain alive?
 * state: COOPMPI_EP_FREE or COOPMPI_EP_ALIVE.
 */
#define COOPMPI_EP_FREE		0
#define COOPMPI_EP_ALIVE	1

struct coopmpi_ep_query {
	__u32 size;
	__u32 flags;		/* must be 0 */
	__u32 ep_id;
	__u32 state;		/* out */
	__u32 generation;	/* out */
	__u32 pid;		/* out: tgid of the owner */
	__u64 reserved[2];
};

/*
 * COOPMPI_IOC_MBOX_SEND: enqueue count messages (msgs points to count*64
 * bytes) into peer's ring, in order, stopping at the first full slot.
 * done (out) = messages enqueued.  Returns 0 when done > 0 or count == 0,
 * -EAGAIN when the ring was full before the first one, -ENXIO when peer is
 * not an endpoint of this domain (or is gone).
 *
 * COOPMPI_IOC_MBOX_RECV: dequeue up to count messages of my own ring into
 * msgs.  -EAGAIN when empty, unless COOPMPI_MBOX_WAIT: then sleep until at
 * least one arrives (-EINTR on a signal).  peer must be 0.
 */
#define COOPMPI_MBOX_WAIT	(1U << 0)
#define COOPMPI_MBOX_MAX_BATCH	1024

struct coopmpi_mbox_xfer {
	__u32 size;
	__u32 flags;
	__u32 peer;
	__u32 count;
	__u64 msgs;		/* user pointer */
	__u32 done;		/* out */
	__u32 reserved0;
	__u64 reserved[2];
};

/* COOPMPI_IOC_DOORBELL: wake peer if it sleeps in poll() on its ring. */
struct coopmpi_doorbell {
	__u32 size;
	__u32 flags;		/* must be 0 */
	__u32 peer;
	__u32 reserved0;
	__u64 reserved[1];
};

/*
 * COOPMPI_IOC_REGION_REGISTER: expose [addr, addr+length) of my address
 * space to my domain with the given access; cookie (out) names it.
 * Pages are not pinned at registration; copies pin chunk by chunk.
 * COOPMPI_IOC_REGION_DEREGISTER: cookie must be one of mine (-ENXIO).
 */
#define COOPMPI_REGION_READ	(1U << 0)	/* peers may copy from it */
#define COOPMPI_REGION_WRITE	(1U << 1)	/* peers may copy into it */
#define COOPMPI_REGION_FLAGS	(COOPMPI_REGION_READ | COOPMPI_REGION_WRITE)

struct coopmpi_region_register {
	__u32 size;
	__u32 flags;
	__u64 addr;
	__u64 length;
	__u64 cookie;		/* out */
	__u64 reserved[2];
};

struct coopmpi_region_deregister {
	__u32 size;
	__u32 flags;		/* must be 0 */
	__u64 cookie;
	__u64 reserved[1];
};

/*
 * COOPMPI_IOC_COPY: copy length bytes between region cookie at offset and
 * the caller's iovec array (iov points to iov_count struct iovec, whose
 * total must be >= length).  Direction by flag, exactly one of:
 *   COOPMPI_COPY_FROM_REGION  region -> local (needs REGION_READ)
 *   COOPMPI_COPY_TO_REGION    local -> region (needs REGION_WRITE)
 * copied (out) = bytes copied.  Errors: -ENXIO unknown/deregistered
 * cookie, -ESRCH region owner exited, -EACCES access, -ERANGE bounds,
 * -EFAULT bad local or remote memory (copied tells how far it got),
 * -EINTR fatal signal.
 */
#define COOPMPI_COPY_FROM_REGION	(1U << 0)
#define COOPMPI_COPY_TO_REGION		(1U << 1)
#define COOPMPI_COPY_FLAGS	(COOPMPI_COPY_FROM_REGION | COOPMPI_COPY_TO_REGION)
#define COOPMPI_COPY_MAX_IOV	1024

struct coopmpi_copy {
	__u32 size;
	__u32 flags;
	__u64 cookie;
	__u64 offset;
	__u64 iov;		/* user pointer to struct iovec[iov_count] */
	__u32 iov_count;
	__u32 reserved0;
	__u64 length;
	__u64 copied;		/* out */
	__u64 reserved[2];
};

#define COOPMPI_IOC_INFO	_IOWR(COOPMPI_IOC_MAGIC, 0x00, struct coopmpi_info)
#define COOPMPI_IOC_JOIN	_IOWR(COOPMPI_IOC_MAGIC, 0x01, struct coopmpi_join)
#define COOPMPI_IOC_EP_QUERY	_IOWR(COOPMPI_IOC_MAGIC, 0x02, struct coopmpi_ep_query)
#define COOPMPI_IOC_MBOX_SEND	_IOWR(COOPMPI_IOC_MAGIC, 0x10, struct coopmpi_mbox_xfer)
#define COOPMPI_IOC_MBOX_RECV	_IOWR(COOPMPI_IOC_MAGIC, 0x11, struct coopmpi_mbox_xfer)
#define COOPMPI_IOC_DOORBELL	_IOW(COOPMPI_IOC_MAGIC, 0x12, struct coopmpi_doorbell)
#define COOPMPI_IOC_REGION_REGISTER \
	_IOWR(COOPMPI_IOC_MAGIC, 0x20, struct coopmpi_region_register)
#define COOPMPI_IOC_REGION_DEREGISTER \
	_IOW(COOPMPI_IOC_MAGIC, 0x21, struct coopmpi_region_deregister)
#define COOPMPI_IOC_COPY	_IOWR(COOPMPI_IOC_MAGIC, 0x22, struct coopmpi_copy)
/* 0x30..0x3f are reserved for the DMA-engine channel. */

#endif /* COOPMPI_UAPI_H */
