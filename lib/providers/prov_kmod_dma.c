/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * prov_kmod_dma.c - the kmod provider's offload engine: the driver's
 * DMA-engine channel (COOPMPI_IOC_DMA_*, see coopmpi_uapi.h).
 *
 * Copies reach the driver through io_uring (IORING_OP_URING_CMD with
 * cmd_op COOPMPI_URING_CMD_DMA, one descriptor per SQE, the CQE is the
 * completion) or, when no ring can be set up (io_uring disabled by the
 * kernel.io_uring_disabled sysctl, a seccomp filter, an old kernel),
 * through COOPMPI_IOC_DMA_SUBMIT batches and the mmap'ed completion
 * queue.  COOP_VERBOSE says which.
 *
 * offload_put only fills a descriptor slot and queues it; offload_poll
 * submits the whole queue (one io_uring_submit or one ioctl), then
 * reaps.  A slot stays taken until its completion because the driver
 * may read an io_uring descriptor again until then (a command punted to
 * io-wq).  The driver's per-endpoint limits (descriptors, bytes in
 * flight) are mirrored here, so its -EAGAIN is an exception: the
 * descriptor is queued again.  io_uring posts a CQE from the submitter's
 * task work: the library polls in the thread that submitted (its
 * contexts are SERIALIZED, and a wait polls where the copies started).
 * The driver counts the in-flight descriptors in the offload counters
 * itself.
 */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "prov_kmod_dma.h"
#include "util.h"

#define KDMA_MAX_SLOTS	1024	/* our own cap on descriptors in flight */
#define KDMA_CLOSE_MS	10000	/* how long close waits for them */

struct kdma_slot {
	struct coopmpi_dma_desc desc;
	uint64_t tag;
};

struct kmod_dma {
	int fd;
	int uring;		/* 1: io_uring, 0: ioctl + mmap'ed CQ */
	struct coopmpi_dma_info info;
	struct io_uring ring;
	void *cq_map;		/* ioctl path */
	struct coopmpi_dma_cq_hdr *cq;
	struct coopmpi_dma_cqe *cqes;
	struct coopmpi_dma_desc *batch;	/* ioctl path: one DMA_SUBMIT */
	struct kdma_slot *slots;
	uint32_t nslots;
	uint32_t *freel, nfree;
	uint32_t *queue, qhead, nqueued;	/* FIFO of slots to submit */
	uint64_t bytes;		/* of the slots taken */
};

/* ---------------- slots and the submission queue ---------------- */

static void queue_push(struct kmod_dma *d, uint32_t slot)
{
	d->queue[(d->qhead + d->nqueued++) % d->nslots] = slot;
}

static uint32_t queue_at(const struct kmod_dma *d, uint32_t k)
{
	return d->queue[(d->qhead + k) % d->nslots];
}

static void queue_drop(struct kmod_dma *d, uint32_t n)
{
	d->qhead = (d->qhead + n) % d->nslots;
	d->nqueued -= n;
}

/* Slot i is done: report it in *o and free it. */
static void slot_done(struct kmod_dma *d, uint32_t i, int status,
		      uint64_t bytes, struct coop_offload_done *o)
{
	o->tag = d->slots[i].tag;
	o->status = status;
	o->bytes = bytes;
	d->bytes -= d->slots[i].desc.length;
	d->freel[d->nfree++] = i;
}

static void desc_fill(struct coopmpi_dma_desc *dd, const void *local,
		      size_t len, const struct coop_rkey *dst,
		      uint64_t dst_off, const struct coop_rkey *notify,
		      uint64_t notify_off, const void *notify16, uint32_t i)
{
	memset(dd, 0, sizeof(*dd));
	if (len) {		/* else a bare notification: all zero */
		dd->src = (uint64_t)(uintptr_t)local;
		dd->dst_cookie = dst->cookie;
		dd->dst_offset = dst_off;
		dd->length = len;
	}
	if (notify) {
		dd->flags = COOPMPI_DMA_NOTIFY;
		dd->notify_cookie = notify->cookie;
		dd->notify_offset = notify_off;
		memcpy(dd->notify_data, notify16, COOPMPI_DMA_NOTIFY_SIZE);
	}
	dd->user_tag = i;	/* the CQ's; io_uring carries user_data */
}

/* ---------------- io_uring path ---------------- */

static void uring_prep(struct kmod_dma *d, struct io_uring_sqe *sqe,
		       uint32_t i)
{
	struct coopmpi_dma_uring_cmd *c;

	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, d->fd, NULL, 0, 0);
	/* after prep_rw, which clears these fields */
	sqe->cmd_op = COOPMPI_URING_CMD_DMA;
	memset(sqe->cmd, 0, sizeof(*c));
	c = (struct coopmpi_dma_uring_cmd *)sqe->cmd;
	c->desc = (uint64_t)(uintptr_t)&d->slots[i].desc;
	c->desc_size = sizeof(d->slots[i].desc);
	io_uring_sqe_set_data64(sqe, i);
}

static void uring_flush(struct kmod_dma *d)
{
	struct io_uring_sqe *sqe;

	while (d->nqueued && (sqe = io_uring_get_sqe(&d->ring)) != NULL) {
		uring_prep(d, sqe, queue_at(d, 0));
		queue_drop(d, 1);
	}
	/* a failed submit leaves the SQEs in the ring: the next one sends */
	if (io_uring_sq_ready(&d->ring))
		io_uring_submit(&d->ring);
}

static int uring_reap(struct kmod_dma *d, struct coop_offload_done *out,
		      int max)
{
	struct io_uring_cqe *cqe;
	int n = 0;

	while (n < max && io_uring_peek_cqe(&d->ring, &cqe) == 0) {
		uint32_t i = (uint32_t)io_uring_cqe_get_data64(cqe);
		int res = cqe->res;

		io_uring_cqe_seen(&d->ring, cqe);
		if (res == -EAGAIN)	/* driver full: resubmitted next poll */
			queue_push(d, i);
		else
			slot_done(d, i, res < 0 ? res : 0,
				  res < 0 ? 0 : (uint64_t)res, &out[n++]);
	}
	return n;
}

static int uring_open(struct kmod_dma *d)
{
	unsigned entries = 1;

	while (entries < d->nslots)
		entries <<= 1;
	return io_uring_queue_init(entries, &d->ring, 0);
}

/* ---------------- ioctl + mmap'ed CQ path ---------------- */

/* Submit the queue in batches; a refused descriptor completes with its
 * error (in out, at most max of them).  Returns the count in out. */
static int ioctl_flush(struct kmod_dma *d, struct coop_offload_done *out,
		       int max)
{
	int n = 0;

	while (d->nqueued && n < max) {
		struct coopmpi_dma_submit s = {
			.size = sizeof(s),
			.descs = (uint64_t)(uintptr_t)d->batch,
			.count = COOP_MIN(d->nqueued, COOPMPI_DMA_MAX_BATCH),
			.desc_size = sizeof(*d->batch),
		};
		uint32_t k;
		int rc;

		for (k = 0; k < s.count; k++)
			d->batch[k] = d->slots[queue_at(d, k)].desc;
		rc = ioctl(d->fd, COOPMPI_IOC_DMA_SUBMIT, &s) ? -errno : 0;
		queue_drop(d, s.done);
		if (rc == -EAGAIN)
			break;	/* limits: again after completions */
		if (rc) {
			slot_done(d, queue_at(d, 0), rc, 0, &out[n++]);
			queue_drop(d, 1);
		}
	}
	return n;
}

static int cq_reap(struct kmod_dma *d, struct coop_offload_done *out,
		   int max)
{
	uint64_t head = __atomic_load_n(&d->cq->head, __ATOMIC_RELAXED);
	uint64_t mask = d->info.cq_entries - 1;
	uint64_t tail = __atomic_load_n(&d->cq->tail, __ATOMIC_ACQUIRE);
	int n = 0;

	for (; head != tail && n < max; head++) {
		const struct coopmpi_dma_cqe *e = &d->cqes[head & mask];

		if (e->user_tag < d->nslots)	/* our tags: always */
			slot_done(d, (uint32_t)e->user_tag, e->status,
				  e->bytes, &out[n++]);
	}
	/* release: we read the entries before the kernel reuses them */
	__atomic_store_n(&d->cq->head, head, __ATOMIC_RELEASE);
	return n;
}

static int cq_open(struct kmod_dma *d)
{
	void *m = mmap(NULL, d->info.cq_bytes, PROT_READ | PROT_WRITE,
		       MAP_SHARED, d->fd, (off_t)COOPMPI_MMAP_DMA_CQ);

	if (m == MAP_FAILED)
		return -errno;
	d->cq_map = m;
	d->cq = m;
	d->cqes = (struct coopmpi_dma_cqe *)((char *)m +
					     COOPMPI_DMA_CQ_CQES_OFF);
	d->batch = calloc(COOP_MIN(d->nslots, COOPMPI_DMA_MAX_BATCH),
			  sizeof(*d->batch));
	return d->batch ? 0 : -ENOMEM;
}

/* ---------------- setup and teardown ---------------- */

static const char *engine_name(uint32_t engine)
{
	return engine == COOPMPI_DMA_HW ? "hw" : "soft";
}

static int dma_query(int fd, struct coopmpi_dma_info *info)
{
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	if (ioctl(fd, COOPMPI_IOC_DMA_INFO, info))
		return -errno;
	return info->engine == COOPMPI_DMA_NONE ? -EOPNOTSUPP : 0;
}

static int dma_alloc(struct kmod_dma *d)
{
	uint32_t i;

	d->nslots = COOP_MIN(COOP_MIN(d->info.max_inflight, d->info.cq_entries),
			     KDMA_MAX_SLOTS);
	d->slots = calloc(d->nslots, sizeof(*d->slots));
	d->freel = calloc(d->nslots, sizeof(*d->freel));
	d->queue = calloc(d->nslots, sizeof(*d->queue));
	if (!d->nslots || !d->slots || !d->freel || !d->queue)
		return -ENOMEM;
	for (i = 0; i < d->nslots; i++)
		d->freel[i] = d->nslots - 1 - i;
	d->nfree = d->nslots;
	return 0;
}

/* io_uring if we can, else the ioctl path; says which when verbose. */
static int dma_path(struct coop_provider *p, struct kmod_dma *d)
{
	const char *eng = engine_name(d->info.engine);
	int rc = uring_open(d);

	if (!rc) {
		d->uring = 1;
		if (p->verbose)
			coop_log(p->rank, "offload: DMA engine %s via io_uring "
				 "(%u copies in flight)", eng, d->nslots);
		return 0;
	}
	if (p->verbose)
		coop_log(p->rank, "offload: io_uring unavailable (%s): DMA "
			 "engine %s via ioctl + mmap'ed CQ (%u copies in "
			 "flight)", strerror(-rc), eng, d->nslots);
	return cq_open(d);
}

static int dma_setup(struct coop_provider *p, struct kmod_dma **dp)
{
	struct kmod_dma *d = calloc(1, sizeof(*d));
	int rc;

	if (!d)
		return -ENOMEM;
	d->fd = kmod_ep_fd(p);
	rc = dma_query(d->fd, &d->info);
	if (!rc)
		rc = dma_alloc(d);
	if (!rc)
		rc = dma_path(p, d);
	if (rc) {
		kmod_dma_close(d);
		return rc;
	}
	*dp = d;
	return 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Submit, then reap: the count of completions in out. */
static int dma_poll(struct kmod_dma *d, struct coop_offload_done *out,
		    int max)
{
	int n;

	if (d->uring) {
		uring_flush(d);
		return uring_reap(d, out, max);
	}
	n = ioctl_flush(d, out, max);
	return n + cq_reap(d, out + n, max - n);
}

/* The driver may still read the descriptors of copies in flight, and
 * they refer to our memory: let them finish (queued ones never went). */
static void dma_drain(struct kmod_dma *d)
{
	struct coop_offload_done c[32];
	uint64_t deadline = now_ms() + KDMA_CLOSE_MS;

	while (d->nqueued) {
		slot_done(d, queue_at(d, 0), -ECANCELED, 0, c);
		queue_drop(d, 1);
	}
	while (d->nfree < d->nslots && now_ms() < deadline)
		if (!dma_poll(d, c, 32))
			usleep(1000);
}

void kmod_dma_close(struct kmod_dma *d)
{
	if (!d)
		return;
	if (d->slots && d->freel && d->queue && (d->uring || d->cq_map))
		dma_drain(d);
	if (d->uring)
		io_uring_queue_exit(&d->ring);
	if (d->cq_map)
		munmap(d->cq_map, d->info.cq_bytes);
	free(d->batch);
	free(d->slots);
	free(d->freel);
	free(d->queue);
	free(d);
}

/* ---------------- the offload ops ---------------- */

int kmod_offload_info(struct coop_provider *p, struct coop_offload_info *info)
{
	struct kmod_dma **dp = kmod_ep_dma(p);
	struct coopmpi_offload_counters *o = p->ops->offload(p);
	int rc = *dp ? 0 : dma_setup(p, dp);

	if (rc)
		return rc;
	p->engine_load = o ? (const uint64_t *)&o->dma_bytes : NULL;	/* the driver's count */
	info->engine = engine_name((*dp)->info.engine);
	info->path = (*dp)->uring ? "io_uring" : "ioctl";
	info->max_inflight = (*dp)->nslots;
	info->max_length = (*dp)->info.max_length;
	return 0;
}

int kmod_offload_put(struct coop_provider *p, int peer, const void *local,
		     size_t len, const struct coop_rkey *dst, uint64_t dst_off,
		     const struct coop_rkey *notify, uint64_t notify_off,
		     const void *notify16, uint64_t tag)
{
	struct kmod_dma *d = *kmod_ep_dma(p);
	uint32_t i;

	(void)peer;	/* the cookies name the regions, and so their owners */
	if (!d)
		return -EOPNOTSUPP;
	if (len > d->info.max_length || (!len && !notify))
		return -EINVAL;
	if (!d->nfree || len > d->info.max_bytes - d->bytes)
		return -EAGAIN;
	i = d->freel[--d->nfree];
	desc_fill(&d->slots[i].desc, local, len, dst, dst_off, notify,
		  notify_off, notify16, i);
	d->slots[i].tag = tag;
	d->bytes += len;
	queue_push(d, i);
	return 0;
}

int kmod_offload_poll(struct coop_provider *p, struct coop_offload_done *out,
		      int max)
{
	struct kmod_dma *d = *kmod_ep_dma(p);

	return d ? dma_poll(d, out, max) : 0;
}
