/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * prov_shm.c - the user-space provider: no kernel module needed.
 *
 * Each endpoint owns a mailbox ring in /dev/shm/coopmpi-<key>-ring-<rank>
 * with the uapi ring layout (driven by ring.c) and, in a static domain,
 * fast boxes in /dev/shm/coopmpi-<key>-fbox-<rank> (fbox.h: a queue per
 * sender, one cache line per message; its first COOP_FBOX_SENDERS
 * senders use one, the others the ring); the per-node load counters live in
 * /dev/shm/coopmpi-<key>-cnt with the uapi counters layout.
 * Regions need no registration (the cookie is the address); copies use
 * process_vm_readv/writev.  Single-copy permission (Yama ptrace scope,
 * capabilities, seccomp, credentials) is tested for real at connect by
 * reading a known word of the peer.  The doorbell is a futex on the
 * ring's wake_requested word, or, for an endpoint waiting in an event
 * loop, a byte sent to its event socket: an abstract-namespace unix
 * datagram socket named after the domain, rank and pid (the kernel frees
 * the name when its owner dies, so nothing is left behind).
 *
 * Dynamic endpoints (COOP_PROV_DYNAMIC, for transports that connect
 * lazily): an endpoint claims a free slot of the counters file - one
 * whose pid is 0 or dead - and that slot is its rank; the file is locked
 * (flock) while slots are claimed and given back, and the last endpoint
 * to leave removes it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "heap.h"
#include "provider.h"
#include "ring.h"
#include "util.h"

#define SHM_BLOB_MAGIC 0x53484d32U	/* "SHM2": fast boxes */
#define SHM_DYNAMIC_MAX 1024	/* endpoints of a dynamic domain: every
				 * UCX context of a 256-core node's
				 * ranks, and some spare (files and
				 * pages are made per endpoint in use) */

struct shm_blob {
	uint32_t magic;
	uint32_t rank;
	uint32_t pid;
	uint32_t slots;
	uint64_t key;
	uint64_t probe_addr;
	uint64_t probe_val;
	uint32_t fbox_slots;	/* its boxes' size, 0: it has none */
	int32_t heap_fd;	/* its shared heap's table (heap.h), or -1 */
};

struct shm_peer {
	struct coop_ring ring;
	struct coop_fbox_tx fbox;	/* .seg NULL: the ring only */
	void *map;
	size_t bytes;
	pid_t pid;
	int pidfd;
	int copy_ok;
	int dead;
	int heap_fd;		/* its heap table's fd there, or -1 */
	struct coop_heap_view heap;	/* that table, mapped on first use */
};

struct shm_priv {
	uint64_t key;
	struct coop_ring own;
	void *own_map;
	size_t ring_bytes;
	char own_name[80];
	struct coop_fbox_rx inbox;	/* .seg NULL: no fast boxes */
	char fbox_name[80];
	unsigned polls;
	int from_box;		/* the last poll_msg's message came from one */
	struct shm_peer *peers;
	void *cnt_map;
	size_t cnt_bytes;
	struct coopmpi_load_slot *slots;
	struct coopmpi_offload_counters *offload;
	volatile uint64_t probe_word;
	int warned;
	int claimed;		/* dynamic: our slot of the counters file */
	int ev_fd;		/* our event socket, -1 until asked for */
	int ev_tx;		/* for doorbells to peers' sockets, or -1 */
	int ev_rung;		/* a doorbell byte may wait in ev_fd */
};

static int yama_scope(void)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
	int scope = 0;

	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = 0;
		fclose(f);
	}
	return scope;
}

static void ring_name(char *buf, size_t n, uint64_t key, int rank)
{
	snprintf(buf, n, "/coopmpi-%016llx-ring-%d", (unsigned long long)key,
		 rank);
}

static void fbox_name(char *buf, size_t n, uint64_t key, int rank)
{
	snprintf(buf, n, "/coopmpi-%016llx-fbox-%d", (unsigned long long)key,
		 rank);
}

static void cnt_name(char *buf, size_t n, uint64_t key)
{
	snprintf(buf, n, "/coopmpi-%016llx-cnt", (unsigned long long)key);
}

static void *map_shm(const char *name, size_t bytes, int create)
{
	int fd, flags = O_RDWR | (create ? O_CREAT : 0);
	void *m;

	fd = shm_open(name, flags, 0600);
	if (fd < 0)
		return NULL;
	if (create && ftruncate(fd, (off_t)bytes)) {
		close(fd);
		return NULL;
	}
	m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return m == MAP_FAILED ? NULL : m;
}

/* Map the counters file (created if needed); slot rank is not touched. */
static int map_counters(struct shm_priv *s, int nranks)
{
	char name[80];
	struct coopmpi_counters_hdr *h;

	cnt_name(name, sizeof(name), s->key);
	s->cnt_bytes = coopmpi_counters_bytes((uint32_t)nranks);
	/* every rank creates-or-opens with the same size: idempotent */
	s->cnt_map = map_shm(name, s->cnt_bytes, 1);
	if (!s->cnt_map)
		return -errno;
	h = s->cnt_map;
	h->version = COOPMPI_ABI_VERSION;
	h->max_endpoints = (uint32_t)nranks;
	__atomic_store_n(&h->magic, COOPMPI_COUNTERS_MAGIC, __ATOMIC_RELEASE);
	s->offload = (struct coopmpi_offload_counters *)(h + 1);
	s->slots = (struct coopmpi_load_slot *)(s->offload + 1);
	return 0;
}

static void slot_take(struct shm_priv *s, int rank)
{
	memset(&s->slots[rank], 0, sizeof(s->slots[rank]));
	s->slots[rank].pid = (uint32_t)getpid();
}

/* The counters file's lock: an fd to close, or -errno. */
static int lock_counters(uint64_t key)
{
	char name[80];

	cnt_name(name, sizeof(name), key);
	return coop_shm_lock(name);
}

static int slot_free(const struct coopmpi_load_slot *slot)
{
	pid_t pid = (pid_t)__atomic_load_n(&slot->pid, __ATOMIC_RELAXED);

	return !pid || (kill(pid, 0) && errno == ESRCH);
}

/* Dynamic: the first free slot is our rank. */
static int claim_slot(struct shm_priv *s, struct coop_provider *p)
{
	int fd = lock_counters(s->key), rc, i;

	if (fd < 0)
		return fd;
	rc = map_counters(s, SHM_DYNAMIC_MAX);
	for (i = 0; !rc && i < SHM_DYNAMIC_MAX && !slot_free(&s->slots[i]);
	     i++)
		;
	if (!rc && i == SHM_DYNAMIC_MAX)
		rc = -ENOSPC;
	if (!rc) {
		slot_take(s, i);
		s->claimed = 1;
		p->rank = i;
		p->nranks = SHM_DYNAMIC_MAX;
	}
	close(fd);
	return rc;
}

/* Dynamic: give our slot back; the last one out removes the file. */
static void release_slot(struct shm_priv *s, struct coop_provider *p)
{
	int fd = lock_counters(s->key), i;
	char name[80];

	memset(&s->slots[p->rank], 0, sizeof(s->slots[p->rank]));
	for (i = 0; i < p->nranks && slot_free(&s->slots[i]); i++)
		;
	if (i == p->nranks) {
		cnt_name(name, sizeof(name), s->key);
		shm_unlink(name);
	}
	if (fd >= 0)
		close(fd);
}

/* A new file of ours, mapped: *map, or -errno. */
static int create_file(const char *name, size_t bytes, void **map)
{
	int fd;

	fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 && errno == EEXIST) {	/* stale: a dead job's file */
		shm_unlink(name);
		fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	}
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)bytes)) {
		int e = -errno;

		close(fd);
		shm_unlink(name);
		return e;
	}
	*map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (*map == MAP_FAILED) {
		*map = NULL;
		shm_unlink(name);
		return -ENOMEM;
	}
	return 0;
}

static int create_ring(struct shm_priv *s, int rank, unsigned slots)
{
	int rc;

	ring_name(s->own_name, sizeof(s->own_name), s->key, rank);
	s->ring_bytes = coopmpi_ring_bytes(slots);
	rc = create_file(s->own_name, s->ring_bytes, &s->own_map);
	if (rc)
		return rc;
	coop_ring_format(s->own_map, slots, (uint32_t)rank, 1,
			 (uint32_t)getpid());
	return coop_ring_attach(&s->own, s->own_map, s->ring_bytes);
}

/* Our fast boxes, one per rank of the domain (pages only where used). */
static int create_fboxes(struct shm_priv *s, struct coop_provider *p)
{
	uint64_t bytes = coop_fbox_seg_bytes((uint32_t)p->nranks,
					     p->fbox_slots);
	void *map;
	int rc;

	fbox_name(s->fbox_name, sizeof(s->fbox_name), s->key, p->rank);
	rc = create_file(s->fbox_name, bytes, &map);
	if (rc)
		return rc;
	coop_fbox_format(map, (uint32_t)p->nranks, p->fbox_slots,
			 p->fbox_senders);
	coop_fbox_rx_attach(&s->inbox, map, bytes);
	p->inbox = &s->inbox;
	return 0;
}

static int shm_open_ep(struct coop_provider *p, uint64_t job_key, int rank,
		       int nranks)
{
	struct shm_priv *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return -ENOMEM;
	p->priv = s;
	s->key = job_key;
	s->ev_fd = -1;
	s->ev_tx = -1;
	s->probe_word = 0x636f6f70ULL ^ ((uint64_t)getpid() << 16) ^ job_key;
	/* Yama scope 1 lets only ancestors ptrace us; peers are siblings.
	 * Allow them (as MPI libraries do) - same-uid processes only. */
	if (yama_scope() == 1 && !(p->flags & COOP_PROV_NO_COPY))
		prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	if (p->flags & COOP_PROV_DYNAMIC) {
		rc = claim_slot(s, p);
		if (rc)
			return rc;
		rank = p->rank;
		nranks = p->nranks;
	} else {
		rc = map_counters(s, nranks);
		if (rc)
			return rc;
		slot_take(s, rank);
	}
	s->peers = calloc((size_t)nranks, sizeof(*s->peers));
	if (!s->peers)
		return -ENOMEM;
	p->rx = &s->own;
	p->caps |= COOP_PROV_CAP_ADDR_KEYS;	/* shm_reg's cookie: the address */
	rc = create_ring(s, rank, p->ring_slots ? p->ring_slots : 1024);
	/* a dynamic domain's boxes would outlive the endpoints that
	 * claimed them: its peers use the ring */
	if (!rc && p->fbox_slots && p->fbox_senders &&
	    !(p->flags & COOP_PROV_DYNAMIC))
		rc = create_fboxes(s, p);
	return rc;
}

static int shm_address(struct coop_provider *p, void *blob, size_t *len)
{
	struct shm_priv *s = p->priv;
	struct shm_blob b = {
		.magic = SHM_BLOB_MAGIC,
		.rank = (uint32_t)p->rank,
		.pid = (uint32_t)getpid(),
		.slots = s->own.mask + 1,
		.key = s->key,
		.probe_addr = (uint64_t)(uintptr_t)&s->probe_word,
		.probe_val = s->probe_word,
		.fbox_slots = s->inbox.seg ? s->inbox.seg->slots : 0,
		.heap_fd = -1,
	};

	if (*len < sizeof(b)) {
		*len = sizeof(b);
		return -ENOSPC;
	}
	if (p->flags & COOP_PROV_WINDOWS)
		b.heap_fd = coop_heap_table_fd();
	memcpy(blob, &b, sizeof(b));
	*len = sizeof(b);
	return 0;
}

/* A field of /proc/self/status ("Seccomp", "CapEff"), as a number. */
static unsigned long long status_field(const char *name, int base)
{
	char line[256];
	size_t n = strlen(name);
	unsigned long long v = 0;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, name, n) && line[n] == ':')
			v = strtoull(line + n + 1, NULL, base);
	if (f)
		fclose(f);
	return v;
}

#define CAP_SYS_PTRACE_BIT 19

/* Why process_vm_readv of a peer failed with err, in a few words. */
static const char *cma_hint(int err)
{
	int cap = (status_field("CapEff", 16) >> CAP_SYS_PTRACE_BIT) & 1;
	int scope = yama_scope();

	if (err != EPERM && err != ENOSYS)
		return strerror(err);
	if (status_field("Seccomp", 10))
		return "a seccomp filter denies process_vm_readv";
	if (err == ENOSYS)
		return "process_vm_readv not available in this kernel";
	if (scope == 3)
		return "Yama ptrace_scope=3 forbids all ptrace access";
	if (scope == 2 && !cap)
		return "Yama ptrace_scope=2 and no CAP_SYS_PTRACE";
	if (scope == 1 && !cap)
		return "Yama ptrace_scope=1 and the peer did not allow us";
	return "ptrace access denied (other credentials or an LSM)";
}

/* The real test: read the peer's probe word through process_vm_readv. */
static int probe_cma(struct coop_provider *p, struct shm_peer *pe,
		     const struct shm_blob *b)
{
	struct shm_priv *s = p->priv;
	uint64_t v = 0;
	struct iovec l = { &v, sizeof(v) };
	struct iovec r = { (void *)(uintptr_t)b->probe_addr, sizeof(v) };
	ssize_t n;

	if (p->flags & COOP_PROV_NO_COPY)
		return 0;
	n = process_vm_readv(pe->pid, &l, 1, &r, 1, 0);
	if (n == (ssize_t)sizeof(v) && v == b->probe_val)
		return 1;
	if (!s->warned++)
		coop_log(p->rank, "single-copy (CMA) to rank %u impossible: "
			 "%s; using shared-memory bounce buffers", b->rank,
			 n < 0 ? cma_hint(errno) : "probe word mismatch");
	return 0;
}

/* The peer's fast boxes, to send through ours there. */
static int map_fboxes(struct shm_priv *s, struct shm_peer *pe, int rank,
		      uint32_t slots, int nranks)
{
	uint64_t bytes = coop_fbox_seg_bytes((uint32_t)nranks, slots);
	char name[80];
	void *map;

	fbox_name(name, sizeof(name), s->key, rank);
	map = map_shm(name, bytes, 0);
	if (!map)
		return -errno;
	if (coop_fbox_tx_attach(&pe->fbox, map, bytes)) {
		munmap(map, bytes);
		return -EINVAL;
	}
	return 0;
}

static int shm_connect(struct coop_provider *p, int rank, const void *blob,
		       size_t len)
{
	struct shm_priv *s = p->priv;
	struct shm_peer *pe = &s->peers[rank];
	struct shm_blob b;
	char name[80];

	if (len < sizeof(b))
		return -EINVAL;
	memcpy(&b, blob, sizeof(b));
	if (b.magic != SHM_BLOB_MAGIC || b.key != s->key ||
	    b.rank != (uint32_t)rank)
		return -EINVAL;
	pe->pid = (pid_t)b.pid;
	pe->heap_fd = b.heap_fd;
	if (rank == p->rank) {
		pe->ring = s->own;
		pe->pidfd = -1;
		pe->copy_ok = probe_cma(p, pe, &b);	/* seccomp applies too */
		return 0;
	}
	ring_name(name, sizeof(name), s->key, rank);
	pe->bytes = coopmpi_ring_bytes(b.slots);
	pe->map = map_shm(name, pe->bytes, 0);
	if (!pe->map)
		return -errno;
	if (coop_ring_attach(&pe->ring, pe->map, pe->bytes))
		return -EINVAL;
	if (b.fbox_slots && s->inbox.seg) {
		int rc = map_fboxes(s, pe, rank, b.fbox_slots, p->nranks);

		if (rc)
			return rc;
	}
	pe->pidfd = (int)syscall(SYS_pidfd_open, pe->pid, 0);
	pe->copy_ok = probe_cma(p, pe, &b);
	return 0;
}

static void shm_disconnect(struct coop_provider *p, int rank)
{
	struct shm_priv *s = p->priv;
	struct shm_peer *pe = &s->peers[rank];

	if (pe->map)
		munmap(pe->map, pe->bytes);
	if (pe->fbox.seg)
		munmap(pe->fbox.seg, pe->fbox.bytes);
	if (pe->pidfd > 0)
		close(pe->pidfd);
	coop_heap_view_close(&pe->heap);
	memset(pe, 0, sizeof(*pe));
}

static void shm_close(struct coop_provider *p)
{
	struct shm_priv *s = p->priv;
	int i;

	if (!s)
		return;
	for (i = 0; s->peers && i < p->nranks; i++)
		shm_disconnect(p, i);
	if (s->own_map) {
		struct coopmpi_ring_hdr *h = s->own_map;

		__atomic_store_n(&h->closed, 1, __ATOMIC_RELEASE);
		h->owner_pid = 0;
		munmap(s->own_map, s->ring_bytes);
		shm_unlink(s->own_name);
	}
	if (s->inbox.seg) {
		munmap(s->inbox.seg, s->inbox.bytes);
		shm_unlink(s->fbox_name);
	}
	if (s->cnt_map && (p->flags & COOP_PROV_DYNAMIC)) {
		if (s->claimed)
			release_slot(s, p);
		munmap(s->cnt_map, s->cnt_bytes);
	} else if (s->cnt_map) {
		memset(&s->slots[p->rank], 0, sizeof(s->slots[p->rank]));
		munmap(s->cnt_map, s->cnt_bytes);
		if (p->rank == 0) {
			char name[80];

			cnt_name(name, sizeof(name), s->key);
			shm_unlink(name);
		}
	}
	if (s->ev_fd >= 0)
		close(s->ev_fd);
	if (s->ev_tx >= 0)
		close(s->ev_tx);
	free(s->peers);
	free(s);
	p->priv = NULL;
}

/* The event socket's address: "\0coopmpi-<key>-ev-<rank>-<pid>". */
static socklen_t ev_addr(struct sockaddr_un *a, uint64_t key, int rank,
			 pid_t pid)
{
	int n;

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1,
		     "coopmpi-%016llx-ev-%d-%d", (unsigned long long)key, rank,
		     (int)pid);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* A byte to the peer's event socket.  Best effort: if it has none, or
 * its queue is full, it is not sleeping on it or will wake anyway. */
static void ring_event_socket(struct shm_priv *s, int peer, pid_t pid)
{
	struct sockaddr_un a;
	socklen_t len = ev_addr(&a, s->key, peer, pid);
	char one = 1;

	if (s->ev_tx < 0)
		s->ev_tx = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC |
				  SOCK_NONBLOCK, 0);
	if (s->ev_tx >= 0)
		sendto(s->ev_tx, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL,
		       (struct sockaddr *)&a, len);
}

static void doorbell(struct shm_priv *s, int peer, struct shm_peer *pe)
{
	struct coopmpi_ring_hdr *h = pe->ring.hdr;
	uint32_t how = __atomic_exchange_n(&h->wake_requested, 0,
					   __ATOMIC_ACQ_REL);

	if (how == COOP_RING_WAKE_FD)
		ring_event_socket(s, peer, pe->pid);
	else if (how)
		syscall(SYS_futex, &h->wake_requested, FUTEX_WAKE, INT_MAX,
			NULL, NULL, 0);
}

/* As coop_ring_enqueue(), through our box at the peer: 1 the peer asked
 * for a doorbell, -ENOENT we have no box there. */
static int send_fbox(struct coop_provider *p, struct shm_peer *pe,
		     const void *msg, unsigned n)
{
	int rc;

	if (unlikely(__atomic_load_n(&pe->ring.hdr->closed, __ATOMIC_RELAXED)))
		return -EPIPE;
	rc = coop_fbox_send(&pe->fbox, p->rank, msg, n);
	return rc ? rc : coop_ring_wake_wanted(&pe->ring);
}

static int shm_send_msg(struct coop_provider *p, int peer, const void *msg,
			unsigned n)
{
	struct shm_priv *s = p->priv;
	struct shm_peer *pe = &s->peers[peer];
	int rc;

	if (unlikely(pe->dead))
		return -EPIPE;
	rc = pe->fbox.seg ? send_fbox(p, pe, msg, n) : -ENOENT;
	if (rc == -ENOENT)
		rc = coop_ring_enqueue(&pe->ring, msg, n);
	if (unlikely(rc > 0)) {
		doorbell(s, peer, pe);
		rc = 0;
	}
	return rc;
}

static int poll_fbox(struct shm_priv *s, void *msg)
{
	s->from_box = s->inbox.seg && coop_fbox_poll(&s->inbox, msg);
	return s->from_box;
}

/* The boxes first, the ring when they are empty - and first on every
 * eighth poll, so busy boxes never starve the ring's senders. */
static int shm_poll_msg(struct coop_provider *p, void *msg)
{
	struct shm_priv *s = p->priv;

	if (unlikely((++s->polls & 7) == 0) &&
	    coop_ring_dequeue(&s->own, msg, 1)) {
		s->from_box = 0;
		return 1;
	}
	return poll_fbox(s, msg) || coop_ring_dequeue(&s->own, msg, 1);
}

static int shm_poll_more(struct coop_provider *p, void *msg, unsigned n)
{
	struct shm_priv *s = p->priv;

	if (!s->from_box)
		return coop_ring_dequeue(&s->own, msg, n);
	coop_fbox_poll_more(&s->inbox, msg, n);
	return 1;
}

/* The doorbell is a futex wake on wake_requested: the wait returns at
 * once if a producer cleared it between the check and the sleep.  The
 * ring is checked after the request for it, the boxes here. */
static void shm_sleep(void *arg, const struct timespec *timeout)
{
	struct shm_priv *s = arg;

	if (!(s->inbox.seg && coop_fbox_ready(&s->inbox)))
		syscall(SYS_futex, &s->own.hdr->wake_requested, FUTEX_WAIT,
			1, timeout, NULL, 0);
}

static int shm_wait_msg(struct coop_provider *p, long timeout_us)
{
	struct shm_priv *s = p->priv;

	coop_ring_sleep(&s->own, timeout_us, shm_sleep, s);
	return coop_provider_msg_ready(p);
}

/* Our event socket, bound on first use. */
static int shm_event_fd(struct coop_provider *p)
{
	struct shm_priv *s = p->priv;
	struct sockaddr_un a;
	socklen_t len = ev_addr(&a, s->key, p->rank, getpid());
	int fd;

	if (s->ev_fd >= 0)
		return s->ev_fd;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, len)) {
		int e = -errno;

		close(fd);
		return e;
	}
	s->ev_fd = fd;
	return fd;
}

static int shm_event_arm(struct coop_provider *p, int arm)
{
	struct shm_priv *s = p->priv;
	char drain[64];

	if (!arm) {
		/* a producer that took the request sent a byte */
		if (!coop_ring_disarm(&s->own))
			s->ev_rung = 1;
		return 0;
	}
	/* that byte would wake the loop for nothing */
	while (s->ev_rung && recv(s->ev_fd, drain, sizeof(drain),
				  MSG_DONTWAIT) > 0)
		;
	s->ev_rung = 0;
	return coop_ring_arm(&s->own, COOP_RING_WAKE_FD) ||
	       coop_provider_msg_ready(p);
}

static int shm_reg(struct coop_provider *p, void *addr, size_t len,
		   unsigned int access, struct coop_rkey *key)
{
	(void)p;
	(void)access;
	key->cookie = (uint64_t)(uintptr_t)addr;
	key->length = len;
	return 0;
}

static int shm_dereg(struct coop_provider *p, const struct coop_rkey *key)
{
	(void)p;
	(void)key;
	return 0;
}

static ssize_t shm_copy(struct coop_provider *p, int peer,
			const struct coop_rkey *key, uint64_t offset,
			const struct iovec *iov, int iovcnt, size_t len,
			enum coop_copy_dir dir)
{
	struct shm_priv *s = p->priv;
	struct shm_peer *pe = &s->peers[peer];
	struct iovec r;
	ssize_t n;

	if (offset > key->length || len > key->length - offset)
		return -ERANGE;
	if (!pe->copy_ok)
		return -EPERM;
	r.iov_base = (void *)(uintptr_t)(key->cookie + offset);
	r.iov_len = len;
	if (dir == COOP_COPY_FROM_PEER)
		n = process_vm_readv(pe->pid, iov, (unsigned long)iovcnt, &r, 1,
				     0);
	else
		n = process_vm_writev(pe->pid, iov, (unsigned long)iovcnt, &r,
				      1, 0);
	if (n < 0)
		return -errno;
	if ((size_t)n != len)	/* stops only at a fault */
		return -EFAULT;
	return n;
}

/* A peer's region is a window when it lies in the peer's shared heap. */
static int shm_win_map(struct coop_provider *p, int peer,
		       const struct coop_rkey *key, int writable,
		       struct coop_window_map *w)
{
	struct shm_priv *s = p->priv;
	struct shm_peer *pe = &s->peers[peer];
	int rc;

	if (!pe->copy_ok || pe->heap_fd < 0 || peer == p->rank)
		return -EACCES;
	if (!pe->heap.t) {
		rc = coop_heap_view_open(&pe->heap, pe->pid, pe->heap_fd);
		if (rc)
			return rc;
	}
	return coop_heap_map(&pe->heap, key->cookie, key->length, writable, w);
}

static void shm_win_unmap(struct coop_provider *p, struct coop_window_map *w)
{
	(void)p;
	coop_heap_unmap(w);
}

static int shm_peer_alive(struct coop_provider *p, int peer)
{
	struct shm_priv *s = p->priv;
	struct shm_peer *pe = &s->peers[peer];

	if (peer == p->rank)
		return 1;
	if (pe->dead)
		return 0;
	if (__atomic_load_n(&pe->ring.hdr->closed, __ATOMIC_ACQUIRE)) {
		pe->dead = 1;
	} else if (pe->pidfd >= 0) {
		struct pollfd pfd = { pe->pidfd, POLLIN, 0 };

		if (poll(&pfd, 1, 0) > 0)	/* readable: exited */
			pe->dead = 1;
	} else if (kill(pe->pid, 0) && errno == ESRCH) {
		pe->dead = 1;
	}
	return !pe->dead;
}

static int shm_copy_ok(struct coop_provider *p, int peer)
{
	struct shm_priv *s = p->priv;

	return s->peers[peer].copy_ok;
}

static struct coopmpi_load_slot *shm_load_slot(struct coop_provider *p,
					       int rank)
{
	struct shm_priv *s = p->priv;

	if (!s->slots || rank < 0 || rank >= p->nranks)
		return NULL;
	return &s->slots[rank];
}

static struct coopmpi_offload_counters *shm_offload(struct coop_provider *p)
{
	struct shm_priv *s = p->priv;

	return s->offload;
}

const struct coop_provider_ops coop_provider_shm = {
	.name = "shm",
	.open = shm_open_ep,
	.disconnect = shm_disconnect,
	.address = shm_address,
	.connect = shm_connect,
	.close = shm_close,
	.send_msg = shm_send_msg,
	.poll_msg = shm_poll_msg,
	.poll_more = shm_poll_more,
	.wait_msg = shm_wait_msg,
	.event_fd = shm_event_fd,
	.event_arm = shm_event_arm,
	.reg = shm_reg,
	.dereg = shm_dereg,
	.copy = shm_copy,
	.win_map = shm_win_map,
	.win_unmap = shm_win_unmap,
	.peer_alive = shm_peer_alive,
	.copy_ok = shm_copy_ok,
	.load_slot = shm_load_slot,
	.offload = shm_offload,
};
