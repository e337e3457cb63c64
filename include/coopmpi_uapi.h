/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR LGPL-2.1-or-later */
/*
 * coopmpi_uapi.h - the ABI between coopmpi.ko and its users (libcoopmpi).
 *
 * One open file of /dev/coopmpi is one endpoint.  An endpoint joins a
 * protection domain (a 64-bit key) and from then on can exchange 64-byte
 * mailbox messages with, register memory regions for, and copy to/from the
 * regions of, the other endpoints of that domain - and nothing else.
 * open() fails with -EMFILE when the caller's effective uid has
 * user_max_endpoints endpoints open already (module parameter).
 *
 * Versioning: every ioctl argument starts with "__u32 size", which the
 * caller sets to sizeof() of the struct it was compiled with.  The size is
 * the version (as for clone3/openat2): the kernel accepts its own size, and
 * a longer struct only if the tail it does not know is zero (-E2BIG
 * otherwise); a shorter one is -EINVAL.  Every "reserved" field and every
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

/* the release these headers belong to (the module's modinfo version) */
#define COOPMPI_VERSION		"0.1.0"
/* tests build a module with another ABI (-DCOOPMPI_ABI_VERSION=N) to see
 * how the library reports the mismatch */
#ifndef COOPMPI_ABI_VERSION
#define COOPMPI_ABI_VERSION	2
#endif
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
 * Protocol (bounded MPMC queue, a sequence word per slot that only
 * producers write, the consumer's head that only it writes):
 *   initially seq[i] = i, head = tail = 0.
 *   producer: pos = tail;
 *             (s64)(pos - load_acquire(head)) >= slots -> ring full:
 *                          -EAGAIN to the caller, and atomically
 *                          increment full_events;
 *             otherwise CAS(tail, pos, pos + 1); on success write the
 *                          message, then store_release(seq[..], pos + 1);
 *                          on failure (another producer won) retry with
 *                          the tail the CAS returned.
 *             A producer may test against a head it read before (head
 *             only grows) and read it again only when that says full.
 *             A span: a producer may claim n consecutive slots with one
 *             CAS(tail, pos, pos + n) (full test at pos + n - 1), write
 *             them, and publish the later seq words before the first,
 *             so a consumer that finds the first finds them all (the
 *             library's messages say in their own header that a span
 *             follows; the ring does not know).
 *             After publishing: full fence, then if wake_requested is set,
 *             ring the doorbell (COOPMPI_IOC_DOORBELL).
 *   consumer: pos = head; s = load_acquire(seq[pos & mask]);
 *             s == pos + 1 -> read message, store_release(head, pos + 1);
 *             otherwise empty.
 *   sleeping consumer: store wake_requested = 1, full fence, re-check the
 *             ring, then poll() the fd; clear wake_requested when awake.
 * Each side writes lines the other only reads (a message and its seq
 * word; head), so a message costs no line that both sides write.
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
	/* every producer reads it after every message: on this line, which
	 * is written only when the consumer goes to sleep or wakes, not on
	 * the consumer's, which changes with every message taken */
	__u32 wake_requested;	/* consumer sleeps in poll(); ring doorbell */
	__u8 pad0[28];

	/* producers' cache line */
	__u64 tail;
	__u64 full_events;	/* enqueue attempts refused because full */
	__u8 pad1[48];

	/* consumer's cache line */
	__u64 head;
	__u8 pad2[56];
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
/* one page of __u64 state words, max_windows of them (read-only) */
#define COOPMPI_MMAP_WINDOW_STATE	(1ULL << 42)
#define COOPMPI_MMAP_WINDOW_BASE	(1ULL << 62)
#define COOPMPI_MMAP_WINDOW_SHIFT	36
#define COOPMPI_MMAP_WINDOW(h)		(COOPMPI_MMAP_WINDOW_BASE + \
					 ((__u64)(h) << COOPMPI_MMAP_WINDOW_SHIFT))

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
	__u32 max_windows;	/* out: per endpoint, 0 without windows */
	__u32 reserved0;
	__u64 reserved[3];
};

enum coopmpi_dma_engine {
	COOPMPI_DMA_NONE = 0,
	COOPMPI_DMA_SOFT = 1,
	COOPMPI_DMA_HW = 2,
};

/*
 * COOPMPI_IOC_JOIN: attach this endpoint to the domain named by key and
 * the caller's effective uid, creating the domain if it does not exist
 * (unless JOIN_EXISTING).  Keys are per owner: another uid joining the same
 * key gets a domain of its own, never this one (CAP_SYS_ADMIN included).
 * Errors: -EALREADY joined, -ENOENT with JOIN_EXISTING, -EEXIST with
 * JOIN_CREATE, -ENOSPC domain full, -EDQUOT the caller owns
 * user_max_domains domains already (module parameter).
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
 * Copies (COPY and DMA descriptors) look at the region again with each
 * chunk's pages pinned, just before the chunk moves: once DEREGISTER has
 * returned only a chunk already moving (copy_chunk_pages at most) may
 * still touch the memory; one waiting in a fault or for a retry fails
 * with -ENXIO.  A COPY faults in its local side of a chunk before it pins
 * the region's pages and moves the chunk without waiting on either.
 */
#define COOPMPI_REGION_READ	(1U << 0)	/* peers may copy from it */
#define COOPMPI_REGION_WRITE	(1U << 1)	/* peers may copy into it */
/* peers may also map it (COOPMPI_IOC_WINDOW_ATTACH): the owner consents
 * to the whole pages the region touches being visible, with its access */
#define COOPMPI_REGION_MAP	(1U << 2)
#define COOPMPI_REGION_FLAGS	(COOPMPI_REGION_READ | COOPMPI_REGION_WRITE | \
				 COOPMPI_REGION_MAP)

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
 * -EINTR fatal signal, -ENOMEM no room left in the caller's
 * RLIMIT_MEMLOCK: the region's pages pinned at a time (at most
 * copy_chunk_pages) count in its pinned_vm (VmPin) while pinned.
 */
/*
 * Windows: a peer's region mapped into the caller's address space, so
 * that it copies with plain loads and stores (XPMEM's attach).
 *
 * COOPMPI_IOC_WINDOW_ATTACH: region cookie, registered with REGION_MAP by
 * an endpoint of my domain; WINDOW_WRITE asks for a writable mapping
 * (needs REGION_WRITE and REGION_READ, since a writable mapping reads
 * too), otherwise it needs REGION_READ.  Out: handle, to mmap (shared,
 * PROT_READ or with WINDOW_WRITE PROT_READ|PROT_WRITE, never PROT_EXEC)
 * at offset COOPMPI_MMAP_WINDOW(handle) of this endpoint's file, any
 * length up to map_bytes; the region's first byte is at page_offset of
 * the mapping.  state_index names the window's state word (below).
 * Errors: -ENXIO unknown cookie, -EACCES no REGION_MAP or access,
 * -EFBIG map_bytes beyond COOPMPI_WINDOW_MAX_BYTES, -ENOSPC
 * max_windows windows alive on this endpoint (attached, or detached
 * and still mapped), -EDQUOT user_max_windows for its uid,
 * -EOPNOTSUPP a kernel without MMU notifiers.
 * COOPMPI_IOC_WINDOW_DETACH: forgets the handle; mappings made stay
 * until unmapped.  A window lives while attached or mapped; fork does
 * not copy its mappings (the child has none).
 *
 * Pages come from the owner's address space when first touched, and
 * whenever the owner's page tables change over the region (munmap,
 * mremap, a fork's copy-on-write, migration, swap) every mapping of it
 * loses that part before the owner's old page can go: the next touch
 * finds what the owner has at that address then.  Such a change is an
 * invalidation.  The window never holds a page: the owner's memory is
 * charged, pinned and swapped as if no window existed.
 *
 * State word: a __u64 per window in the page mmap'ed (shared, read-only)
 * at COOPMPI_MMAP_WINDOW_STATE, at index state_index.  Its low bits
 * count invalidations (odd while one is under way, +2 for each), and:
 *   COOPMPI_WINDOW_DEAD  the region was deregistered or its owner closed:
 *                        every page of the window reads as zeros (a
 *                        writable window's writes go nowhere), for good
 *   COOPMPI_WINDOW_HOLE  a page touched had no owner page (unmapped, or
 *                        not accessible): it reads as zeros, writes to it
 *                        go nowhere, until the next invalidation over it
 *                        (an owner mapping memory where there was none is
 *                        not one) or until every mapping of the window is
 *                        gone; the flag stays as long
 * No access to a window raises a signal, whatever the owner does.  A
 * copy through a window is what the owner had iff the word read before
 * it (load-acquire) is even, without DEAD or HOLE, and equal to the word
 * read after it (after a read barrier); otherwise copy again, or use
 * COOPMPI_IOC_COPY, which reports the region's fate as an error.
 * A window maps only pages of ordinary memory (anonymous, shmem, file);
 * a window's own mapping can't be resolved through another window
 * (HOLE), nor be used by process_vm_readv, COPY or O_DIRECT (EFAULT).
 */
#define COOPMPI_WINDOW_WRITE		(1U << 0)
#define COOPMPI_WINDOW_ATTACH_FLAGS	COOPMPI_WINDOW_WRITE
#define COOPMPI_WINDOW_DEAD		(1ULL << 63)
#define COOPMPI_WINDOW_HOLE		(1ULL << 62)
#define COOPMPI_WINDOW_MAX_BYTES	(1ULL << 36)

struct coopmpi_window_attach {
	__u32 size;
	__u32 flags;
	__u64 cookie;
	__u32 handle;		/* out */
	__u32 state_index;	/* out */
	__u64 map_bytes;	/* out: whole pages covering the region */
	__u32 page_offset;	/* out: the region's start in the mapping */
	__u32 reserved0;
	__u64 reserved[2];
};

struct coopmpi_window_detach {
	__u32 size;
	__u32 flags;		/* must be 0 */
	__u32 handle;
	__u32 reserved0;
	__u64 reserved[1];
};

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
#define COOPMPI_IOC_WINDOW_ATTACH \
	_IOWR(COOPMPI_IOC_MAGIC, 0x23, struct coopmpi_window_attach)
#define COOPMPI_IOC_WINDOW_DETACH \
	_IOW(COOPMPI_IOC_MAGIC, 0x24, struct coopmpi_window_detach)
/* 0x30..0x3f are reserved for the DMA-engine channel. */

/* ------------------------------------------------------------------ */
/* DMA-engine channel (ioctl numbers 0x30..0x3f)                        */
/* ------------------------------------------------------------------ */

/*
 * An asynchronous copy engine per endpoint, modelled on an RDMA-write
 * engine: a descriptor copies length bytes from a source (local memory of
 * the submitter, or a region of any endpoint of the domain) into a region
 * of any endpoint of the domain and then, optionally, writes 16 bytes of
 * notification data into a region (the receiver watches that memory).
 *
 * Engine (COOPMPI_IOC_DMA_INFO.engine, INFO.dma_engine, sysfs dma_engine):
 * a kernel dmaengine DMA_MEMCPY channel (COOPMPI_DMA_HW, e.g. Intel
 * I/OAT) or kernel worker threads copying on other CPUs (COOPMPI_DMA_SOFT);
 * module parameter dma=auto|hw|soft|off.  With COOPMPI_DMA_NONE every DMA
 * call fails with -EOPNOTSUPP (mmap of the CQ with -ENODEV).
 *
 * Submission, two ways:
 *  - COOPMPI_IOC_DMA_SUBMIT: a batch of descriptors; each accepted one
 *    later posts exactly one entry to the endpoint's completion queue
 *    (mmap COOPMPI_MMAP_DMA_CQ); poll() reports EPOLLPRI while the CQ is
 *    not empty (EPOLLIN stays the mailbox's).
 *  - io_uring: IORING_OP_URING_CMD on the endpoint's fd, cmd_op
 *    COOPMPI_URING_CMD_DMA, sqe->cmd holding struct coopmpi_dma_uring_cmd
 *    (a pointer to one descriptor).  The CQE arrives when the copy (and
 *    the notification) is done: res = bytes copied, or -errno; user_data
 *    is the tag (desc.user_tag is ignored).  Such descriptors never post
 *    to the mmap'ed CQ.  With IORING_SETUP_SQE128 the 64 extra command
 *    bytes must be zero.  IOPOLL rings are not supported.
 *
 * Errors found at submission (bad flags/reserved fields, unknown cookie,
 * access, bounds, alignment, limits) fail the submission itself: the
 * ioctl's return value (done = descriptors accepted before the bad one),
 * or the CQE's res for io_uring.  Errors after acceptance complete the
 * descriptor with status -errno: -ENXIO region deregistered, -ESRCH its
 * owner (or the submitter's address space) gone, -EFAULT unmapped memory,
 * -EOPNOTSUPP a destination in a shared mapping of a file other than
 * tmpfs/shmem or hugetlbfs, -EIO engine error, -ECANCELED endpoint closed
 * (for io_uring: its ring closed, or the submitting thread exited),
 * -ETIMEDOUT not done within the module parameter dma_deadline_ms of its
 * submission; bytes tells how far the data got.  The notification is
 * written only when status is 0.
 *
 * Memory: the driver's workers never wait for a page.  They fault in
 * anonymous, shmem and hugetlb memory without waiting for I/O; pages of
 * file mappings and userfaultfd-armed areas are used only when present
 * (a page that is not is looked at again, up to 20 ms apart, until the
 * deadline).  Touch such memory before submitting.  The pages of a chunk
 * count in the submitter's pinned_vm against its RLIMIT_MEMLOCK while
 * pinned: chunks shrink to what it has room for, and wait (until the
 * deadline) while it has room for fewer than 2 pages.
 *
 * Ordering: the notification is written by a CPU after every data byte is
 * visible (after the engine's completion of the last data byte).  Its
 * second 8 bytes are written first, then its first 8 bytes with one
 * 64-bit store: a receiver that sees the first 8 bytes change (read with
 * acquire semantics) sees the rest of the notification and all the data.
 * Descriptors complete in any order; overlapping source and destination
 * give unspecified data (like memcpy).
 *
 * Limits: per endpoint at most max_inflight descriptors and max_bytes
 * bytes in flight, and at most cq_entries descriptors from DMA_SUBMIT
 * either in flight or completed but not yet consumed from the CQ: beyond
 * that submission fails with -EAGAIN (as a CQE res for io_uring), as it
 * does beyond the domain owner's user_max_dma_inflight descriptors and
 * user_max_dma_bytes bytes in flight over all its endpoints.  Workers
 * serve the users with descriptors in turn, one chunk each.  Pages are
 * pinned only while a worker copies one chunk of a descriptor.
 * Closing the endpoint cancels its descriptors (-ECANCELED) and waits for
 * the chunks already running; io_uring keeps the endpoint open until its
 * commands completed, and closing the ring cancels them.
 */

/*
 * A descriptor.  Source: with COOPMPI_DMA_SRC_REGION, offset src in the
 * region src_cookie (needs REGION_READ); otherwise src is an address of
 * the submitter's memory (src_cookie must be 0), which must stay valid
 * and unchanged until completion.  Destination: offset dst_offset in
 * region dst_cookie (needs REGION_WRITE).  length 0 is allowed only with
 * COOPMPI_DMA_NOTIFY and all source/destination fields 0 (a bare
 * notification).  Notification (COOPMPI_DMA_NOTIFY, otherwise its fields
 * must be 0): notify_data written at offset notify_offset of region
 * notify_cookie (needs REGION_WRITE); the target address must be
 * COOPMPI_DMA_NOTIFY_ALIGN aligned.
 */
#define COOPMPI_DMA_SRC_REGION	(1U << 0)
#define COOPMPI_DMA_NOTIFY	(1U << 1)
#define COOPMPI_DMA_DESC_FLAGS	(COOPMPI_DMA_SRC_REGION | COOPMPI_DMA_NOTIFY)
#define COOPMPI_DMA_NOTIFY_SIZE		16
#define COOPMPI_DMA_NOTIFY_ALIGN	16

struct coopmpi_dma_desc {
	__u32 flags;
	__u32 reserved0;
	__u64 src;		/* local address, or offset with SRC_REGION */
	__u64 src_cookie;
	__u64 dst_cookie;
	__u64 dst_offset;
	__u64 length;
	__u64 notify_cookie;
	__u64 notify_offset;
	__u8 notify_data[COOPMPI_DMA_NOTIFY_SIZE];
	__u64 user_tag;		/* echoed in the CQE */
	__u64 reserved[2];
};

/* Completion queue entry. */
struct coopmpi_dma_cqe {
	__u64 user_tag;
	__s32 status;		/* 0 or -errno */
	__u32 flags;		/* 0 */
	__u64 bytes;		/* data bytes copied */
	__u64 reserved;
};

/*
 * Completion queue (mmap of COOPMPI_MMAP_DMA_CQ, cq_bytes long, shared,
 * read/write, the caller's own endpoint only):
 *   offset 0                       struct coopmpi_dma_cq_hdr (one page)
 *   offset COOPMPI_DMA_CQ_CQES_OFF struct coopmpi_dma_cqe cqes[entries]
 * One producer (the kernel), one consumer (the owner):
 *   kernel:   writes cqes[tail & (entries - 1)], store_release(tail + 1)
 *   consumer: t = load_acquire(tail); read cqes[head & mask] while
 *             head != t; store_release(head, new head).
 * The kernel reads head only to count free entries (see Limits) and
 * trusts nothing in this memory.
 */
#define COOPMPI_DMA_CQ_MAGIC	0x434d4451U	/* "CMDQ" */
#define COOPMPI_DMA_CQ_CQES_OFF	4096ULL

struct coopmpi_dma_cq_hdr {
	__u32 magic;
	__u32 version;		/* COOPMPI_ABI_VERSION */
	__u32 entries;		/* power of two */
	__u32 cqe_size;		/* sizeof(struct coopmpi_dma_cqe) */
	__u8 pad0[48];

	/* producer's (kernel's) cache line */
	__u64 tail;
	__u8 pad1[56];

	/* consumer's cache line */
	__u64 head;
	__u8 pad2[56];
};

static inline __u64 coopmpi_dma_cq_bytes(__u32 entries)
{
	__u64 n = (__u64)entries * sizeof(struct coopmpi_dma_cqe);

	return COOPMPI_DMA_CQ_CQES_OFF + ((n + 4095ULL) & ~4095ULL);
}

#define COOPMPI_MMAP_DMA_CQ	(1ULL << 39)

/* COOPMPI_IOC_DMA_INFO: the channel's facts, valid before join. */
struct coopmpi_dma_info {
	__u32 size;
	__u32 flags;		/* must be 0 */
	__u32 engine;		/* out: enum coopmpi_dma_engine */
	__u32 max_inflight;	/* out: descriptors in flight per endpoint */
	__u64 max_bytes;	/* out: bytes in flight per endpoint */
	__u64 max_length;	/* out: largest length of one descriptor */
	__u32 cq_entries;	/* out */
	__u32 cqe_size;		/* out */
	__u64 cq_bytes;		/* out: mmap length of COOPMPI_MMAP_DMA_CQ */
	__u32 desc_size;	/* out: the kernel's sizeof(coopmpi_dma_desc) */
	__u32 notify_align;	/* out: COOPMPI_DMA_NOTIFY_ALIGN */
	__u64 reserved[4];
};

/*
 * COOPMPI_IOC_DMA_SUBMIT: accept count descriptors (descs points to count
 * records of desc_size bytes, desc_size being the caller's
 * sizeof(struct coopmpi_dma_desc); a larger record must have a zero tail,
 * -E2BIG otherwise), in order, stopping at the first one refused.
 * done (out) = descriptors accepted.  Returns 0 when all were accepted,
 * else the error of descs[done] (-EAGAIN: limits reached, try again after
 * consuming completions).
 */
#define COOPMPI_DMA_MAX_BATCH	1024

struct coopmpi_dma_submit {
	__u32 size;
	__u32 flags;		/* must be 0 */
	__u64 descs;		/* user pointer */
	__u32 count;
	__u32 desc_size;
	__u32 done;		/* out */
	__u32 reserved0;
	__u64 reserved[2];
};

/* sqe->cmd of IORING_OP_URING_CMD with cmd_op COOPMPI_URING_CMD_DMA. */
struct coopmpi_dma_uring_cmd {
	__u64 desc;		/* user pointer to one descriptor */
	__u32 desc_size;	/* as for DMA_SUBMIT */
	__u32 flags;		/* must be 0 */
};

#define COOPMPI_IOC_DMA_INFO	_IOWR(COOPMPI_IOC_MAGIC, 0x30, struct coopmpi_dma_info)
#define COOPMPI_IOC_DMA_SUBMIT	_IOWR(COOPMPI_IOC_MAGIC, 0x31, struct coopmpi_dma_submit)
/* Not an ioctl: the cmd_op of the io_uring command. */
#define COOPMPI_URING_CMD_DMA	_IOW(COOPMPI_IOC_MAGIC, 0x32, struct coopmpi_dma_uring_cmd)

#endif /* COOPMPI_UAPI_H */
