/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * prov_kmod.c - the provider on top of coopmpi.ko (/dev/coopmpi).
 *
 * The job key is the protection domain: every rank of the job joins it, so
 * the driver refuses any other domain (and any other user) access to our
 * mailbox and regions.  Messages go straight into the peer's mapped ring
 * (the packetizer window) without a system call; only a doorbell for a
 * sleeping peer enters the kernel.  Copies are the driver's chunked COPY
 * ioctl on registered regions, which pins a bounded number of pages at a
 * time and charges the kernel_* load counters itself.  A dynamic
 * endpoint's rank is its endpoint id in the domain.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "provider.h"
#include "prov_kmod_dma.h"
#include "prov_kmod_window.h"
#include "ring.h"
#include "util.h"

#define KMOD_BLOB_MAGIC 0x4b4d4f31U	/* "KMO1" */
#define KMOD_DEVICE "/dev/" COOPMPI_DEVICE_NAME

struct kmod_blob {
	uint32_t magic;
	uint32_t rank;
	uint32_t ep_id;
	uint32_t generation;
	uint32_t pid;
	uint32_t pad;
	uint64_t key;
};

struct kmod_peer {
	struct coop_ring ring;
	void *map;
	uint32_t ep_id;
	uint32_t generation;
	int connected;
	int dead;
};

struct kmod_priv {
	int fd;
	uint64_t key;
	struct coopmpi_info info;
	struct coopmpi_join join;
	struct coop_ring own;
	void *own_map;
	void *cnt_map;
	struct coopmpi_offload_counters *offload;
	struct coopmpi_load_slot *slots;
	struct kmod_peer *peers;
	struct kmod_dma *dma;	/* prov_kmod_dma.c, NULL until asked for */
	const uint64_t *win_state;	/* prov_kmod_window.c, NULL until used */
};

static void *map_dev(int fd, uint64_t offset, uint64_t bytes)
{
	void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       (off_t)offset);

	return m == MAP_FAILED ? NULL : m;
}

static int kmod_query_and_join(struct kmod_priv *k)
{
	k->info.size = sizeof(k->info);
	if (ioctl(k->fd, COOPMPI_IOC_INFO, &k->info))
		return -errno;
	if (k->info.abi_version != COOPMPI_ABI_VERSION)
		return -EPROTO;
	k->join.size = sizeof(k->join);
	k->join.key = k->key;
	if (ioctl(k->fd, COOPMPI_IOC_JOIN, &k->join))
		return -errno;
	return 0;
}

static int kmod_map_own(struct kmod_priv *k)
{
	struct coopmpi_counters_hdr *h;

	k->own_map = map_dev(k->fd, COOPMPI_MMAP_RING(k->join.ep_id),
			     k->info.ring_bytes);
	k->cnt_map = map_dev(k->fd, COOPMPI_MMAP_COUNTERS,
			     k->info.counters_bytes);
	if (!k->own_map || !k->cnt_map)
		return -errno;
	h = k->cnt_map;
	k->offload = (struct coopmpi_offload_counters *)(h + 1);
	k->slots = (struct coopmpi_load_slot *)(k->offload + 1);
	return coop_ring_attach(&k->own, k->own_map, k->info.ring_bytes);
}

static int kmod_open_ep(struct coop_provider *p, uint64_t job_key, int rank,
			int nranks)
{
	struct kmod_priv *k = calloc(1, sizeof(*k));
	int rc;

	(void)rank;
	if (!k)
		return -ENOMEM;
	p->priv = k;
	k->key = job_key;
	k->fd = open(KMOD_DEVICE, O_RDWR | O_CLOEXEC);
	if (k->fd < 0)
		return -errno;
	rc = kmod_query_and_join(k);
	if (rc)
		return rc;
	if (p->flags & COOP_PROV_DYNAMIC) {	/* the driver's endpoint id */
		p->rank = (int)k->join.ep_id;
		p->nranks = (int)k->info.max_endpoints;
		nranks = p->nranks;
	}
	k->peers = calloc((size_t)nranks, sizeof(*k->peers));
	if (!k->peers)
		return -ENOMEM;
	p->rx = &k->own;
	rc = kmod_map_own(k);
	/* the COPY ioctl adds total_ops/total_bytes to our slot; regions
	 * pin nothing, COPY and windows find the pages at copy time */
	p->caps |= COOP_PROV_CAP_KERNEL_TOTALS | COOP_PROV_CAP_REG_BY_ADDRESS;
	return rc;
}

static int kmod_address(struct coop_provider *p, void *blob, size_t *len)
{
	struct kmod_priv *k = p->priv;
	struct kmod_blob b = {
		.magic = KMOD_BLOB_MAGIC,
		.rank = (uint32_t)p->rank,
		.ep_id = k->join.ep_id,
		.generation = k->join.generation,
		.pid = (uint32_t)getpid(),
		.key = k->key,
	};

	if (*len < sizeof(b)) {
		*len = sizeof(b);
		return -ENOSPC;
	}
	memcpy(blob, &b, sizeof(b));
	*len = sizeof(b);
	return 0;
}

static int kmod_connect(struct coop_provider *p, int rank, const void *blob,
			size_t len)
{
	struct kmod_priv *k = p->priv;
	struct kmod_peer *pe = &k->peers[rank];
	struct kmod_blob b;

	if (len < sizeof(b))
		return -EINVAL;
	memcpy(&b, blob, sizeof(b));
	if (b.magic != KMOD_BLOB_MAGIC || b.key != k->key ||
	    b.rank != (uint32_t)rank || b.ep_id >= k->info.max_endpoints)
		return -EINVAL;
	pe->ep_id = b.ep_id;
	pe->generation = b.generation;
	if (rank == p->rank) {
		pe->ring = k->own;
	} else {
		pe->map = map_dev(k->fd, COOPMPI_MMAP_RING(b.ep_id),
				  k->info.ring_bytes);
		if (!pe->map)
			return errno == ENXIO ? -ESRCH : -errno;
		if (coop_ring_attach(&pe->ring, pe->map, k->info.ring_bytes))
			return -EINVAL;
		/* The slot may already hold a newer endpoint. */
		if (pe->ring.hdr->generation != b.generation)
			return -ESRCH;
	}
	pe->connected = 1;
	return 0;
}

static void kmod_disconnect(struct coop_provider *p, int rank)
{
	struct kmod_priv *k = p->priv;
	struct kmod_peer *pe = &k->peers[rank];

	if (pe->map)
		munmap(pe->map, k->info.ring_bytes);
	memset(pe, 0, sizeof(*pe));
}

static void kmod_close(struct coop_provider *p)
{
	struct kmod_priv *k = p->priv;
	int i;

	if (!k)
		return;
	kmod_dma_close(k->dma);	/* its copies use the fd and our memory */
	kmod_win_close(p);
	for (i = 0; k->peers && i < p->nranks; i++)
		kmod_disconnect(p, i);
	if (k->own_map)
		munmap(k->own_map, k->info.ring_bytes);
	if (k->cnt_map)
		munmap(k->cnt_map, k->info.counters_bytes);
	if (k->fd >= 0)
		close(k->fd);	/* the driver tears down regions and slots */
	free(k->peers);
	free(k);
	p->priv = NULL;
}

static int kmod_doorbell(struct kmod_priv *k, uint32_t ep_id)
{
	struct coopmpi_doorbell db = { .size = sizeof(db), .peer = ep_id };

	return ioctl(k->fd, COOPMPI_IOC_DOORBELL, &db) ? -errno : 0;
}

static int kmod_send_msg(struct coop_provider *p, int peer, const void *msg,
			 unsigned n)
{
	struct kmod_priv *k = p->priv;
	struct kmod_peer *pe = &k->peers[peer];
	int rc;

	if (unlikely(pe->dead))
		return -EPIPE;
	rc = coop_ring_enqueue(&pe->ring, msg, n);
	if (unlikely(rc > 0)) {
		/* The message is in the ring: the peer may have read it
		 * and closed (-ENXIO) before the doorbell.  A peer that is
		 * really gone shows as closed to peer_alive. */
		kmod_doorbell(k, pe->ep_id);
		rc = 0;
	}
	return rc;
}

static int kmod_poll_msg(struct coop_provider *p, void *msg)
{
	struct kmod_priv *k = p->priv;

	return coop_ring_dequeue(&k->own, msg, 1);
}

static int kmod_poll_more(struct coop_provider *p, void *msg, unsigned n)
{
	struct kmod_priv *k = p->priv;

	return coop_ring_dequeue(&k->own, msg, n);
}

/* The driver's poll rechecks the ring after queueing us: a doorbell
 * between coop_ring_sleep's check and this sleep is not lost. */
static void kmod_sleep(void *arg, const struct timespec *timeout)
{
	struct pollfd pfd = { .fd = *(int *)arg, .events = POLLIN };

	ppoll(&pfd, 1, timeout, NULL);
}

static int kmod_wait_msg(struct coop_provider *p, long timeout_us)
{
	struct kmod_priv *k = p->priv;

	return coop_ring_sleep(&k->own, timeout_us, kmod_sleep, &k->fd);
}

/* The endpoint's file polls readable while its ring holds a message;
 * producers' doorbells wake pollers. */
static int kmod_event_fd(struct coop_provider *p)
{
	return ((struct kmod_priv *)p->priv)->fd;
}

static int kmod_event_arm(struct coop_provider *p, int arm)
{
	struct kmod_priv *k = p->priv;

	if (arm)
		return coop_ring_arm(&k->own, COOP_RING_WAKE_FD);
	coop_ring_disarm(&k->own);
	return 0;
}

int kmod_reg(struct coop_provider *p, void *addr, size_t len,
	     unsigned int access, struct coop_rkey *key)
{
	struct kmod_priv *k = p->priv;
	struct coopmpi_region_register r = {
		.size = sizeof(r),
		.flags = kmod_win_reg_flags(p, access),
		.addr = (uint64_t)(uintptr_t)addr,
		.length = len,
	};

	if (ioctl(k->fd, COOPMPI_IOC_REGION_REGISTER, &r))
		return -errno;
	key->cookie = r.cookie;
	key->length = len;
	return 0;
}

int kmod_dereg(struct coop_provider *p, const struct coop_rkey *key)
{
	struct kmod_priv *k = p->priv;
	struct coopmpi_region_deregister d = {
		.size = sizeof(d),
		.cookie = key->cookie,
	};

	return ioctl(k->fd, COOPMPI_IOC_REGION_DEREGISTER, &d) ? -errno : 0;
}

static ssize_t kmod_copy(struct coop_provider *p, int peer,
			 const struct coop_rkey *key, uint64_t offset,
			 const struct iovec *iov, int iovcnt, size_t len,
			 enum coop_copy_dir dir)
{
	struct kmod_priv *k = p->priv;
	struct coopmpi_copy c = {
		.size = sizeof(c),
		.flags = dir == COOP_COPY_FROM_PEER ? COOPMPI_COPY_FROM_REGION :
						      COOPMPI_COPY_TO_REGION,
		.cookie = key->cookie,
		.offset = offset,
		.iov = (uint64_t)(uintptr_t)iov,
		.iov_count = (uint32_t)iovcnt,
		.length = len,
	};

	(void)peer;	/* the cookie names the region, and so its owner */
	if (ioctl(k->fd, COOPMPI_IOC_COPY, &c))
		return -errno;
	return (ssize_t)c.copied;
}

static int kmod_peer_alive(struct coop_provider *p, int peer)
{
	struct kmod_priv *k = p->priv;
	struct kmod_peer *pe = &k->peers[peer];
	struct coopmpi_ring_hdr *h;

	if (peer == p->rank || pe->dead || !pe->connected)
		return !pe->dead;
	/* The driver marks a closed endpoint's ring; no system call. */
	h = pe->ring.hdr;
	if (__atomic_load_n(&h->closed, __ATOMIC_ACQUIRE) ||
	    h->generation != pe->generation)
		pe->dead = 1;
	return !pe->dead;
}

static int kmod_copy_ok(struct coop_provider *p, int peer)
{
	(void)p;
	(void)peer;
	return 1;	/* the driver copies for any member of the domain */
}

static struct coopmpi_load_slot *kmod_load_slot(struct coop_provider *p,
						int rank)
{
	struct kmod_priv *k = p->priv;

	if (!k->slots || rank < 0 || rank >= p->nranks ||
	    !k->peers[rank].connected)
		return NULL;
	return &k->slots[k->peers[rank].ep_id];
}

static struct coopmpi_offload_counters *kmod_offload(struct coop_provider *p)
{
	struct kmod_priv *k = p->priv;

	return k->offload;
}

/* For prov_kmod_dma.c, which keeps the DMA channel apart. */
int kmod_ep_fd(const struct coop_provider *p)
{
	const struct kmod_priv *k = p->priv;

	return k->fd;
}

struct kmod_dma **kmod_ep_dma(struct coop_provider *p)
{
	struct kmod_priv *k = p->priv;

	return &k->dma;
}

/* For prov_kmod_window.c. */
const struct coopmpi_info *kmod_ep_info(const struct coop_provider *p)
{
	const struct kmod_priv *k = p->priv;

	return &k->info;
}

const uint64_t **kmod_ep_win_state(struct coop_provider *p)
{
	struct kmod_priv *k = p->priv;

	return &k->win_state;
}

const struct coop_provider_ops coop_provider_kmod = {
	.name = "kmod",
	.open = kmod_open_ep,
	.address = kmod_address,
	.connect = kmod_connect,
	.disconnect = kmod_disconnect,
	.close = kmod_close,
	.send_msg = kmod_send_msg,
	.poll_msg = kmod_poll_msg,
	.poll_more = kmod_poll_more,
	.wait_msg = kmod_wait_msg,
	.event_fd = kmod_event_fd,
	.event_arm = kmod_event_arm,
	.reg = kmod_reg,
	.dereg = kmod_dereg,
	.copy = kmod_copy,
	.win_map = kmod_win_map,
	.win_unmap = kmod_win_unmap,
	.watch = kmod_watch,
	.unwatch = kmod_unwatch,
	.peer_alive = kmod_peer_alive,
	.copy_ok = kmod_copy_ok,
	.load_slot = kmod_load_slot,
	.offload = kmod_offload,
	.offload_info = kmod_offload_info,
	.offload_put = kmod_offload_put,
	.offload_poll = kmod_offload_poll,
};
