// SPDX-License-Identifier: GPL-2.0
/* dma_helpers.c - helpers of the DMA-engine channel tests. */
#include "dma_helpers.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct coopmpi_dma_info cm_dma_info_cache;

int cm_dma_info(int fd, struct coopmpi_dma_info *info)
{
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	return cm_ioctl(fd, COOPMPI_IOC_DMA_INFO, info);
}

const char *cm_dma_engine_str(uint32_t engine)
{
	switch (engine) {
	case COOPMPI_DMA_NONE: return "none";
	case COOPMPI_DMA_SOFT: return "soft";
	case COOPMPI_DMA_HW: return "hw";
	default: return "?";
	}
}

bool cm_dma_available(void)
{
	int fd = cm_open();

	REQUIRE_OK(cm_dma_info(fd, &cm_dma_info_cache));
	close(fd);
	if (cm_dma_info_cache.engine != COOPMPI_DMA_NONE)
		return true;
	printf("no DMA engine (dma=off): test skipped\n");
	return false;
}

void cm_desc_local(struct coopmpi_dma_desc *d, const void *src,
		   uint64_t dst_cookie, uint64_t dst_off, uint64_t len,
		   uint64_t tag)
{
	memset(d, 0, sizeof(*d));
	d->src = (uintptr_t)src;
	d->dst_cookie = dst_cookie;
	d->dst_offset = dst_off;
	d->length = len;
	d->user_tag = tag;
}

void cm_desc_region(struct coopmpi_dma_desc *d, uint64_t src_cookie,
		    uint64_t src_off, uint64_t dst_cookie, uint64_t dst_off,
		    uint64_t len, uint64_t tag)
{
	memset(d, 0, sizeof(*d));
	d->flags = COOPMPI_DMA_SRC_REGION;
	d->src = src_off;
	d->src_cookie = src_cookie;
	d->dst_cookie = dst_cookie;
	d->dst_offset = dst_off;
	d->length = len;
	d->user_tag = tag;
}

void cm_desc_notify(struct coopmpi_dma_desc *d, uint64_t cookie,
		    uint64_t off, uint64_t lo, uint64_t hi)
{
	d->flags |= COOPMPI_DMA_NOTIFY;
	d->notify_cookie = cookie;
	d->notify_offset = off;
	memcpy(d->notify_data, &lo, 8);
	memcpy(d->notify_data + 8, &hi, 8);
}

int cm_dma_submitv(int fd, const void *descs, uint32_t count,
		   uint32_t desc_size, uint32_t *done)
{
	struct coopmpi_dma_submit s;
	int r;

	memset(&s, 0, sizeof(s));
	s.size = sizeof(s);
	s.descs = (uintptr_t)descs;
	s.count = count;
	s.desc_size = desc_size;
	s.done = 0xdeadbeef;
	r = cm_ioctl(fd, COOPMPI_IOC_DMA_SUBMIT, &s);
	if (done)
		*done = s.done;
	return r;
}

int cm_dma_submit(int fd, const struct coopmpi_dma_desc *d, uint32_t count,
		  uint32_t *done)
{
	return cm_dma_submitv(fd, d, count, sizeof(*d), done);
}

int cm_cq_map(int fd, struct cm_cq *cq)
{
	size_t bytes = cm_dma_info_cache.cq_bytes;
	void *p;

	memset(cq, 0, sizeof(*cq));
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)COOPMPI_MMAP_DMA_CQ);
	if (p == MAP_FAILED)
		return -errno;
	cq->base = p;
	cq->bytes = bytes;
	cq->hdr = p;
	cq->cqes = (void *)((char *)p + COOPMPI_DMA_CQ_CQES_OFF);
	cq->mask = cm_dma_info_cache.cq_entries - 1;
	return 0;
}

void cm_cq_unmap(struct cm_cq *cq)
{
	if (cq->base)
		munmap(cq->base, cq->bytes);
	memset(cq, 0, sizeof(*cq));
}

unsigned cm_cq_reap(struct cm_cq *cq, struct coopmpi_dma_cqe *out,
		    unsigned max)
{
	uint64_t head = __atomic_load_n(&cq->hdr->head, __ATOMIC_RELAXED);
	uint64_t tail = __atomic_load_n(&cq->hdr->tail, __ATOMIC_ACQUIRE);
	unsigned n = 0;

	REQUIRE(tail - head <= cq->mask + 1ULL,
		"CQ tail %llu head %llu: more entries than the CQ holds",
		(unsigned long long)tail, (unsigned long long)head);
	for (; head != tail && n < max; head++, n++)
		out[n] = cq->cqes[head & cq->mask];
	__atomic_store_n(&cq->hdr->head, head, __ATOMIC_RELEASE);
	return n;
}

void cm_cq_wait(int fd, struct cm_cq *cq, struct coopmpi_dma_cqe *out,
		unsigned n, unsigned timeout_ms)
{
	uint64_t deadline = cm_now_ms() + timeout_ms;
	unsigned got = 0;

	while (got < n) {
		struct pollfd p = { .fd = fd, .events = POLLPRI };
		uint64_t now;
		int r;

		got += cm_cq_reap(cq, out + got, n - got);
		if (got == n)
			break;
		now = cm_now_ms();
		REQUIRE(now < deadline,
			"only %u of %u DMA completions within %u ms (dma_ops %llu)",
			got, n, timeout_ms,
			(unsigned long long)cm_sysfs_u64("dma_ops"));
		r = poll(&p, 1, (int)(deadline - now));
		REQUIRE(r >= 0 || errno == EINTR, "poll: %s", strerror(errno));
		REQUIRE(!(p.revents & (POLLERR | POLLNVAL)), "poll revents %#x",
			p.revents);
	}
}

struct coopmpi_dma_cqe cm_dma_run(int fd, struct cm_cq *cq,
				  const struct coopmpi_dma_desc *d)
{
	struct coopmpi_dma_cqe e;
	uint32_t done;

	REQUIRE_OK(cm_dma_submit(fd, d, 1, &done));
	REQUIRE(done == 1, "done %u", done);
	cm_cq_wait(fd, cq, &e, 1, 60000);
	REQUIRE(e.user_tag == d->user_tag, "CQE tag %#llx, submitted %#llx",
		(unsigned long long)e.user_tag,
		(unsigned long long)d->user_tag);
	return e;
}

void cm_dma_wait_idle(unsigned timeout_ms)
{
	uint64_t deadline = cm_now_ms() + timeout_ms;
	uint64_t ops, bytes;

	for (;;) {
		ops = cm_sysfs_u64("dma_ops");
		bytes = cm_sysfs_u64("dma_bytes");
		if (!ops && !bytes)
			return;
		REQUIRE(cm_now_ms() < deadline,
			"DMA not idle after %u ms: dma_ops %llu dma_bytes %llu",
			timeout_ms, (unsigned long long)ops,
			(unsigned long long)bytes);
		cm_sleep_ms(10);
	}
}

uint64_t cm_domain_offload(uint32_t domain_id, const char *field)
{
	char path[128], buf[512], *p;
	size_t flen = strlen(field);
	int n;

	snprintf(path, sizeof(path), CM_SYSFS_DIR "/domains/%u/offload",
		 domain_id);
	n = cm_read_file(path, buf, sizeof(buf));
	REQUIRE(n > 0, "read %s: %s", path, n < 0 ? strerror(-n) : "empty");
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, field, flen) && p[flen] == ' ')
			return strtoull(p + flen + 1, NULL, 10);
	REQUIRE(0, "%s has no %s: '%s'", path, field, buf);
	return 0;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* In the child: rounds checked copies, their latencies sorted (us). */
static void latency_rounds(unsigned rounds, uint64_t *us)
{
	const size_t len = 256u << 10;
	uint8_t *src = cm_map_anon(len), *dst = cm_map_anon(len);
	int fd = cm_open_join(cm_unique_key(), COOPMPI_JOIN_CREATE, NULL);
	struct coopmpi_dma_desc d;
	struct coopmpi_dma_cqe e;
	struct cm_cq cq;
	uint64_t rw, t0;

	REQUIRE_OK(cm_cq_map(fd, &cq));
	REQUIRE_OK(cm_reg(fd, dst, len, COOPMPI_REGION_WRITE, &rw));
	for (unsigned i = 0; i < rounds; i++) {
		cm_fill_pattern(src, len, 300 + i);
		cm_desc_local(&d, src, rw, 0, len, i);
		t0 = now_us();
		e = cm_dma_run(fd, &cq, &d);
		us[i] = now_us() - t0;
		REQUIRE(e.status == 0 && e.bytes == len, "copy %u: %s", i,
			cm_errname(-e.status));
		REQUIRE(cm_check_pattern(dst, len, 300 + i, 0) < 0, "data %u",
			i);
	}
	qsort(us, rounds, sizeof(*us), cmp_u64);
}

uint64_t cm_dma_latency_as_nobody(unsigned rounds, uint64_t *median_us)
{
	uint64_t us[256], worst, median;
	int sv[2], st;
	pid_t pid;

	REQUIRE(rounds && rounds <= 256, "rounds %u", rounds);
	cm_socketpair(sv);
	pid = cm_fork();
	if (pid == 0) {
		close(sv[0]);
		cm_drop_to_nobody();
		latency_rounds(rounds, us);
		cm_put_u64(sv[1], us[rounds / 2]);
		cm_put_u64(sv[1], us[rounds - 1]);
		_exit(0);
	}
	close(sv[1]);
	median = cm_get_u64_from(sv[0], pid, "the other user");
	worst = cm_get_u64_from(sv[0], pid, "the other user");
	REQUIRE(cm_wait_timeout(pid, 20000, &st) == 0 && WIFEXITED(st) &&
		WEXITSTATUS(st) == 0, "the other user: status %#x", st);
	close(sv[0]);
	if (median_us)
		*median_us = median;
	return worst / 1000;
}
