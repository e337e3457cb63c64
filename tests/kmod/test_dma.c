// SPDX-License-Identifier: GPL-2.0
/*
 * test_dma.c - the DMA-engine channel: engine facts, completion queue,
 * data and notification correctness over sizes and alignments, the
 * notification never visible before the data, hundreds of descriptors
 * outstanding, completion through the CQ and through poll(EPOLLPRI).
 * Runs with whatever engine the module chose (scripts/vm-dma-tests.sh
 * runs it with the test dmaengine provider and in soft mode).
 */
#include "dma_helpers.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

struct dctx {
	uint64_t key;
	struct coopmpi_join j;
	int fd;
	struct cm_cq cq;
};

static void dctx_open(struct dctx *x)
{
	x->key = cm_unique_key();
	x->fd = cm_open_join(x->key, COOPMPI_JOIN_CREATE, &x->j);
	REQUIRE_OK(cm_cq_map(x->fd, &x->cq));
}

static void dctx_close(struct dctx *x)
{
	cm_cq_unmap(&x->cq);
	close(x->fd);
}

static void expect_cqe(const struct coopmpi_dma_cqe *e, int status,
		       uint64_t bytes, const char *what)
{
	REQUIRE(e->status == status && e->bytes == bytes,
		"%s: CQE status %d (%s) bytes %llu, want %d (%s) bytes %llu",
		what, e->status, cm_errname(-e->status),
		(unsigned long long)e->bytes, status, cm_errname(-status),
		(unsigned long long)bytes);
	REQUIRE(e->flags == 0 && e->reserved == 0, "%s: CQE flags %#x", what,
		e->flags);
}

START_TEST(test_dma_info)
{
	const char *want = getenv("COOP_TEST_EXPECT_DMA_ENGINE");
	struct coopmpi_dma_info di;
	char eng[64], chan[64];
	int fd = cm_open();
	int n;

	REQUIRE_OK(cm_dma_info(fd, &di));
	n = cm_read_file(CM_SYSFS_DIR "/dma_engine", eng, sizeof(eng));
	REQUIRE(n > 0, "read dma_engine: %s", strerror(-n));
	eng[strcspn(eng, "\n")] = 0;
	n = cm_read_file(CM_SYSFS_DIR "/dma_channel", chan, sizeof(chan));
	REQUIRE(n > 0, "read dma_channel: %s", strerror(-n));
	chan[strcspn(chan, "\n")] = 0;
	printf("DMA engine %s (%s): max_inflight %u max_bytes %llu max_length %llu cq_entries %u cq_bytes %llu\n",
	       eng, chan, di.max_inflight, (unsigned long long)di.max_bytes,
	       (unsigned long long)di.max_length, di.cq_entries,
	       (unsigned long long)di.cq_bytes);
	REQUIRE(!strcmp(eng, cm_dma_engine_str(di.engine)),
		"sysfs dma_engine '%s', DMA_INFO engine %u", eng, di.engine);
	REQUIRE(cm_info_cache.dma_engine == di.engine,
		"INFO dma_engine %u, DMA_INFO engine %u",
		cm_info_cache.dma_engine, di.engine);
	if (want && *want)
		REQUIRE(!strcmp(want, eng),
			"COOP_TEST_EXPECT_DMA_ENGINE=%s but the module "
			"runs '%s'",
			want, eng);
	REQUIRE(di.desc_size == sizeof(struct coopmpi_dma_desc) &&
		di.cqe_size == sizeof(struct coopmpi_dma_cqe) &&
		di.notify_align == COOPMPI_DMA_NOTIFY_ALIGN,
		"desc_size %u cqe_size %u notify_align %u", di.desc_size,
		di.cqe_size, di.notify_align);
	if (di.engine == COOPMPI_DMA_HW)
		REQUIRE(strcmp(chan, "none") && strcmp(chan, "hw"),
			"hw engine without a channel name: '%s'", chan);
	else
		REQUIRE(!strcmp(chan, eng), "dma_channel '%s' for engine %s",
			chan, eng);
	if (di.engine != COOPMPI_DMA_NONE) {
		REQUIRE(di.max_inflight >= 1 && di.cq_entries >= di.max_inflight &&
			!(di.cq_entries & (di.cq_entries - 1)),
			"max_inflight %u cq_entries %u", di.max_inflight,
			di.cq_entries);
		REQUIRE(di.cq_bytes == coopmpi_dma_cq_bytes(di.cq_entries),
			"cq_bytes %llu", (unsigned long long)di.cq_bytes);
		REQUIRE(di.max_length >= 1 && di.max_length <= di.max_bytes &&
			di.max_length <= 0x7fffffff,
			"max_length %llu max_bytes %llu",
			(unsigned long long)di.max_length,
			(unsigned long long)di.max_bytes);
	}

	/* the generic rules */
	memset(&di, 0, sizeof(di));
	di.size = sizeof(di);
	di.flags = 1;
	REQUIRE_ERR(cm_ioctl(fd, COOPMPI_IOC_DMA_INFO, &di), EINVAL);
	memset(&di, 0, sizeof(di));
	di.size = sizeof(di);
	di.reserved[3] = 1;
	REQUIRE_ERR(cm_ioctl(fd, COOPMPI_IOC_DMA_INFO, &di), EINVAL);
	close(fd);
}
END_TEST

START_TEST(test_dma_off)
{
	struct coopmpi_dma_desc d;
	struct dctx x;
	uint32_t done;
	int u = cm_open();
	void *p;

	REQUIRE_OK(cm_dma_info(u, &cm_dma_info_cache));
	close(u);
	if (cm_dma_info_cache.engine != COOPMPI_DMA_NONE) {
		printf("DMA engine present: dma=off test skipped\n");
		return;
	}
	x.key = cm_unique_key();
	x.fd = cm_open_join(x.key, COOPMPI_JOIN_CREATE, &x.j);
	cm_desc_local(&d, &d, 1, 0, 8, 1);
	REQUIRE_ERR(cm_dma_submit(x.fd, &d, 1, &done), EOPNOTSUPP);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, x.fd,
		 (off_t)COOPMPI_MMAP_DMA_CQ);
	REQUIRE(p == MAP_FAILED && errno == ENODEV,
		"mmap of the CQ without engine: %s",
		p == MAP_FAILED ? strerror(errno) : "mapped");
	REQUIRE(cm_sysfs_u64("dma_ops") == 0, "dma_ops");
	close(x.fd);
}
END_TEST

START_TEST(test_dma_cq_map)
{
	size_t cb;
	struct dctx x;
	struct pollfd pf;
	int u;
	void *p;

	if (!cm_dma_available())
		return;
	cb = cm_dma_info_cache.cq_bytes;
	u = cm_open();
	p = mmap(NULL, cb, PROT_READ, MAP_SHARED, u, (off_t)COOPMPI_MMAP_DMA_CQ);
	REQUIRE(p == MAP_FAILED && errno == ENOTCONN,
		"CQ mmap before JOIN: %s", p == MAP_FAILED ? strerror(errno) : "mapped");
	close(u);

	dctx_open(&x);
	REQUIRE(x.cq.hdr->magic == COOPMPI_DMA_CQ_MAGIC &&
		x.cq.hdr->version == COOPMPI_ABI_VERSION &&
		x.cq.hdr->entries == cm_dma_info_cache.cq_entries &&
		x.cq.hdr->cqe_size == sizeof(struct coopmpi_dma_cqe),
		"CQ header magic %#x version %u entries %u cqe_size %u",
		x.cq.hdr->magic, x.cq.hdr->version, x.cq.hdr->entries,
		x.cq.hdr->cqe_size);
	REQUIRE(x.cq.hdr->head == 0 && x.cq.hdr->tail == 0, "fresh CQ not empty");

	p = mmap(NULL, cb, PROT_READ, MAP_PRIVATE, x.fd, (off_t)COOPMPI_MMAP_DMA_CQ);
	REQUIRE(p == MAP_FAILED && errno == EINVAL, "private CQ mapping");
	p = mmap(NULL, cb, PROT_READ | PROT_EXEC, MAP_SHARED, x.fd,
		 (off_t)COOPMPI_MMAP_DMA_CQ);
	REQUIRE(p == MAP_FAILED && errno == EPERM, "executable CQ mapping");
	p = mmap(NULL, cb + 4096, PROT_READ, MAP_SHARED, x.fd,
		 (off_t)COOPMPI_MMAP_DMA_CQ);
	REQUIRE(p == MAP_FAILED && errno == EINVAL, "CQ mapping too long");
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, x.fd,
		 (off_t)(COOPMPI_MMAP_DMA_CQ + cb));
	REQUIRE(p == MAP_FAILED && errno == EINVAL, "mapping beyond the CQ");
	/* the second page on its own is fine */
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, x.fd,
		 (off_t)(COOPMPI_MMAP_DMA_CQ + 4096));
	REQUIRE(p != MAP_FAILED, "CQ entries page: %s", strerror(errno));
	munmap(p, 4096);

	pf.fd = x.fd;
	pf.events = POLLIN | POLLPRI;
	REQUIRE(poll(&pf, 1, 0) == 0, "idle endpoint polls ready: %#x",
		pf.revents);
	dctx_close(&x);
}
END_TEST

/* descriptors the TEST ONLY dmaengine provider completed, or -1 */
#define PROV_DESCS "/sys/module/coopmpi_dmatest/parameters/descs"

static long long prov_descs(void)
{
	char buf[64];

	if (cm_read_file(PROV_DESCS, buf, sizeof(buf)) <= 0)
		return -1;
	return strtoll(buf, NULL, 10);
}

#define SZ_DST (4u << 20)
#define SZ_SRC (4u << 20)

static const uint64_t test_lens[] = {
	1, 15, 16, 4095, 4096, 4097, 8191, 65537, 262151, (1u << 20) + 4093,
};
static const struct { uint32_t s, d; } test_offs[] = {
	{ 0, 0 }, { 1, 4095 }, { 4093, 3 }, { 2048, 2048 },
};

/* _i: 0 source is local memory, 1 source is another endpoint's region */
START_TEST(test_dma_sizes)
{
	const uint64_t seed = 0x5eed0 + _i;
	struct cm_owner dst, src = { 0 };
	struct cm_shm shm;
	struct dctx x;
	uint8_t *local = NULL;
	uint64_t tag = 0, total = 0;
	long long descs0 = prov_descs();

	if (!cm_dma_available())
		return;
	dctx_open(&x);
	cm_shm_create(&shm, SZ_DST);
	cm_owner_spawn(&dst, x.key, &shm, 0,
		       COOPMPI_REGION_READ | COOPMPI_REGION_WRITE, 0);
	if (_i)
		cm_owner_spawn(&src, x.key, NULL, SZ_SRC, COOPMPI_REGION_READ,
			       seed);
	else {
		local = cm_map_anon(SZ_SRC);
		cm_fill_pattern(local, SZ_SRC, seed);
	}

	for (size_t li = 0; li < sizeof(test_lens) / sizeof(test_lens[0]); li++) {
		for (size_t oi = 0; oi < sizeof(test_offs) / sizeof(test_offs[0]); oi++) {
			uint64_t len = test_lens[li];
			uint32_t so = test_offs[oi].s, doff = test_offs[oi].d + 64;
			struct coopmpi_dma_desc d;
			struct coopmpi_dma_cqe e;
			long bad;

			memset(shm.view + doff - 64, 0xEE, len + 128);
			if (_i)
				cm_desc_region(&d, src.cookie, so, dst.cookie,
					       doff, len, ++tag);
			else
				cm_desc_local(&d, local + so, dst.cookie, doff,
					      len, ++tag);
			e = cm_dma_run(x.fd, &x.cq, &d);
			expect_cqe(&e, 0, len, "copy");
			bad = cm_check_pattern(shm.view + doff, len, seed, so);
			REQUIRE(bad < 0,
				"len %llu src+%u dst+%u: byte %ld wrong (%#x, want %#x)",
				(unsigned long long)len, so, doff, bad,
				shm.view[doff + bad],
				cm_pattern_byte(seed, so + bad));
			REQUIRE(cm_check_byte(shm.view + doff - 64, 64, 0xEE) < 0 &&
				cm_check_byte(shm.view + doff + len, 64, 0xEE) < 0,
				"len %llu src+%u dst+%u: bytes outside the destination changed",
				(unsigned long long)len, so, doff);
			total += len;
		}
	}
	printf("%s source: %llu descriptors, %llu bytes verified\n",
	       _i ? "region" : "local", (unsigned long long)tag,
	       (unsigned long long)total);
	/* the hw engine really went through the dmaengine provider */
	if (cm_dma_info_cache.engine == COOPMPI_DMA_HW && descs0 >= 0) {
		long long n = prov_descs() - descs0;

		printf("the test dmaengine provider completed %lld memcpy descriptors\n",
		       n);
		REQUIRE(n >= (long long)tag, "provider did %lld descriptors for %llu copies",
			n, (unsigned long long)tag);
	}
	cm_owner_finish(&dst);
	if (_i)
		cm_owner_finish(&src);
	cm_unmap(local, SZ_SRC);
	cm_shm_destroy(&shm);
	dctx_close(&x);
	cm_dma_wait_idle(10000);
}
END_TEST

static void expect_notification(const uint8_t *p, uint64_t lo, uint64_t hi,
				const char *what)
{
	uint64_t got[2];

	memcpy(got, p, 16);
	REQUIRE(got[0] == lo && got[1] == hi,
		"%s: notification %#llx %#llx, want %#llx %#llx", what,
		(unsigned long long)got[0], (unsigned long long)got[1],
		(unsigned long long)lo, (unsigned long long)hi);
	REQUIRE(cm_check_byte(p - 16, 16, 0xEE) < 0 &&
		cm_check_byte(p + 16, 16, 0xEE) < 0,
		"%s: bytes around the notification changed", what);
}

START_TEST(test_dma_notify)
{
	const size_t len = 64 << 10;
	struct coopmpi_dma_desc d;
	struct coopmpi_dma_cqe e;
	struct cm_owner o;
	struct cm_shm shm;
	struct dctx x;
	uint8_t *local, *hole;
	uint32_t done;

	if (!cm_dma_available())
		return;
	dctx_open(&x);
	cm_shm_create(&shm, len);
	cm_owner_spawn(&o, x.key, &shm, 0,
		       COOPMPI_REGION_READ | COOPMPI_REGION_WRITE, 0);
	REQUIRE(o.cookie2, "owner has no sub-region");
	local = cm_map_anon(16 << 10);
	cm_fill_pattern(local, 16 << 10, 21);
	memset(shm.view, 0xEE, len);

	/* data and notification in the same region */
	cm_desc_local(&d, local, o.cookie, 0, 5000, 1);
	cm_desc_notify(&d, o.cookie, 8240, 0x1111222233334444ULL,
		       0x5555666677778888ULL);
	e = cm_dma_run(x.fd, &x.cq, &d);
	expect_cqe(&e, 0, 5000, "data + notification");
	REQUIRE(cm_check_pattern(shm.view, 5000, 21, 0) < 0, "data");
	expect_notification(shm.view + 8240, 0x1111222233334444ULL,
			    0x5555666677778888ULL, "same region");

	/*
	 * A bare notification into the sub-region, which starts 4093 bytes
	 * into the mapping: offset 3 + 16k is 16-byte aligned, 0 is not.
	 */
	memset(&d, 0, sizeof(d));
	d.user_tag = 2;
	cm_desc_notify(&d, o.cookie2, 3 + 1600, 42, 43);
	e = cm_dma_run(x.fd, &x.cq, &d);
	expect_cqe(&e, 0, 0, "bare notification");
	expect_notification(shm.view + 4096 + 1600, 42, 43, "bare");
	cm_desc_notify(&d, o.cookie2, 0, 1, 1);
	REQUIRE_ERR(cm_dma_submit(x.fd, &d, 1, &done), EINVAL);
	REQUIRE(done == 0, "done %u", done);

	/* a source that is not mapped: error, no notification */
	hole = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(hole != MAP_FAILED, "mmap");
	cm_fill_pattern(hole, 3 * 4096, 22);
	munmap(hole + 2 * 4096, 4096);
	cm_desc_local(&d, hole + 2 * 4096, o.cookie, 16384, 100, 3);
	cm_desc_notify(&d, o.cookie, 16384 + 4096, 7, 7);
	e = cm_dma_run(x.fd, &x.cq, &d);
	expect_cqe(&e, -EFAULT, 0, "unmapped source");
	REQUIRE(cm_check_byte(shm.view + 16384, 100, 0xEE) < 0 &&
		cm_check_byte(shm.view + 16384 + 4096 - 16, 48, 0xEE) < 0,
		"a failed descriptor wrote data or its notification");

	/* the source ends in the hole: the first two pages arrive */
	cm_desc_local(&d, hole, o.cookie, 24576, 3 * 4096, 4);
	cm_desc_notify(&d, o.cookie, 24576 + 3 * 4096 + 64, 9, 9);
	e = cm_dma_run(x.fd, &x.cq, &d);
	expect_cqe(&e, -EFAULT, 2 * 4096, "source running into a hole");
	REQUIRE(cm_check_pattern(shm.view + 24576, 2 * 4096, 22, 0) < 0,
		"the part before the hole");
	REQUIRE(cm_check_byte(shm.view + 24576 + 3 * 4096 + 48, 48, 0xEE) < 0,
		"notification written after an error");
	munmap(hole, 2 * 4096);

	cm_owner_finish(&o);
	cm_unmap(local, 16 << 10);
	cm_shm_destroy(&shm);
	dctx_close(&x);
}
END_TEST

/* 64 descriptors in one call: mixed sources, each with a notification. */
START_TEST(test_dma_batch)
{
	enum { N = 64, SLICE = 20000, NTF = N * SLICE };
	struct coopmpi_dma_desc d[N];
	struct coopmpi_dma_cqe e[N];
	struct cm_owner o, so;
	struct cm_shm shm;
	struct dctx x;
	uint8_t *local, seen[N] = { 0 };
	uint32_t done;

	if (!cm_dma_available())
		return;
	dctx_open(&x);
	cm_shm_create(&shm, NTF + N * 16 + 4096);
	cm_owner_spawn(&o, x.key, &shm, 0,
		       COOPMPI_REGION_READ | COOPMPI_REGION_WRITE, 0);
	cm_owner_spawn(&so, x.key, NULL, NTF, COOPMPI_REGION_READ, 31);
	local = cm_map_anon(NTF);
	cm_fill_pattern(local, NTF, 31);
	memset(shm.view, 0xEE, shm.len);
	for (int i = 0; i < N; i++) {
		uint64_t len = SLICE - 7 * i, off = (uint64_t)i * SLICE;

		if (i % 3 == 0)
			cm_desc_region(&d[i], so.cookie, off, o.cookie, off, len,
				       1000 + i);
		else
			cm_desc_local(&d[i], local + off, o.cookie, off, len,
				      1000 + i);
		cm_desc_notify(&d[i], o.cookie, NTF + 16 * i, len, i);
	}
	REQUIRE_OK(cm_dma_submit(x.fd, d, N, &done));
	REQUIRE(done == N, "done %u", done);
	cm_cq_wait(x.fd, &x.cq, e, N, 60000);
	for (int i = 0; i < N; i++) {
		uint64_t k = e[i].user_tag - 1000;

		REQUIRE(k < N && !seen[k], "CQE %d: tag %llu unknown or twice", i,
			(unsigned long long)e[i].user_tag);
		seen[k] = 1;
		expect_cqe(&e[i], 0, SLICE - 7 * k, "batch");
	}
	for (int i = 0; i < N; i++) {
		uint64_t len = SLICE - 7 * i, off = (uint64_t)i * SLICE;

		REQUIRE(cm_check_pattern(shm.view + off, len, 31, off) < 0,
			"descriptor %d data", i);
		REQUIRE(cm_check_byte(shm.view + off + len, 7 * i, 0xEE) < 0,
			"descriptor %d wrote past its end", i);
		REQUIRE(!memcmp(shm.view + NTF + 16 * i, d[i].notify_data, 16),
			"descriptor %d notification", i);
	}
	REQUIRE(cm_cq_reap(&x.cq, e, 1) == 0, "extra CQE");
	cm_owner_finish(&o);
	cm_owner_finish(&so);
	cm_unmap(local, NTF);
	cm_shm_destroy(&shm);
	dctx_close(&x);
}
END_TEST

START_TEST(test_dma_poll)
{
	const size_t big = 8u << 20;
	struct coopmpi_dma_desc d;
	struct coopmpi_dma_cqe e;
	struct epoll_event ev;
	struct cm_owner o;
	struct cm_shm shm;
	struct cm_msg m;
	struct pollfd pf;
	struct dctx x;
	uint8_t *local;
	uint32_t done;
	int ep, r;

	if (!cm_dma_available())
		return;
	dctx_open(&x);
	cm_shm_create(&shm, big);
	cm_owner_spawn(&o, x.key, &shm, 0, COOPMPI_REGION_WRITE, 0);
	local = cm_map_anon(big);
	cm_fill_pattern(local, big, 41);

	pf.fd = x.fd;
	pf.events = POLLIN | POLLPRI;
	REQUIRE(poll(&pf, 1, 0) == 0, "idle: revents %#x", pf.revents);

	/* sleep in poll() while a big copy runs */
	cm_desc_local(&d, local, o.cookie, 0, big, 77);
	REQUIRE_OK(cm_dma_submit(x.fd, &d, 1, &done));
	r = poll(&pf, 1, 60000);
	REQUIRE(r == 1 && (pf.revents & POLLPRI) && !(pf.revents & POLLIN),
		"poll after a copy: %d revents %#x", r, pf.revents);
	REQUIRE(cm_cq_reap(&x.cq, &e, 1) == 1, "no CQE behind POLLPRI");
	expect_cqe(&e, 0, big, "polled copy");
	REQUIRE(cm_check_pattern(shm.view, big, 41, 0) < 0, "data");
	REQUIRE(poll(&pf, 1, 0) == 0, "consumed CQ still polls %#x",
		pf.revents);

	/* a mailbox message is POLLIN, never POLLPRI */
	cm_msg_make(&m, 1, 1);
	REQUIRE_OK(cm_send(x.fd, x.j.ep_id, &m, 1, &done));
	REQUIRE(poll(&pf, 1, 1000) == 1 && pf.revents == POLLIN,
		"message: revents %#x", pf.revents);
	REQUIRE_OK(cm_recv(x.fd, &m, 1, 0, &done));

	/* epoll, edge triggered */
	ep = epoll_create1(EPOLL_CLOEXEC);
	REQUIRE(ep >= 0, "epoll_create1");
	ev.events = EPOLLPRI | EPOLLET;
	ev.data.u64 = 5;
	REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, x.fd, &ev) == 0, "epoll_ctl");
	REQUIRE(epoll_wait(ep, &ev, 1, 0) == 0, "epoll ready while idle");
	cm_desc_local(&d, local, o.cookie, 0, 1 << 20, 78);
	REQUIRE_OK(cm_dma_submit(x.fd, &d, 1, &done));
	r = epoll_wait(ep, &ev, 1, 60000);
	REQUIRE(r == 1 && (ev.events & EPOLLPRI) && ev.data.u64 == 5,
		"epoll_wait %d events %#x", r, ev.events);
	REQUIRE(cm_cq_reap(&x.cq, &e, 1) == 1 && e.user_tag == 78, "CQE");
	close(ep);

	cm_owner_finish(&o);
	cm_unmap(local, big);
	cm_shm_destroy(&shm);
	dctx_close(&x);
}
END_TEST

/*
 * All of max_inflight at once, unconsumed: the CQ has no room for one
 * more (-EAGAIN, deterministically), then everything completes.
 */
START_TEST(test_dma_many)
{
	struct coopmpi_dma_desc *d, one;
	struct coopmpi_dma_cqe *e;
	struct cm_counters c;
	struct cm_owner o;
	struct cm_shm shm;
	struct dctx x;
	uint8_t *local, *seen;
	uint32_t n, done, sub = 0;
	uint64_t peak_ops = 0;
	int r;

	if (!cm_dma_available())
		return;
	n = cm_dma_info_cache.cq_entries;
	if (n > 4096)
		n = 4096;
	d = calloc(n, sizeof(*d));
	e = calloc(n, sizeof(*e));
	seen = calloc(n, 1);
	REQUIRE(d && e && seen, "calloc");
	dctx_open(&x);
	REQUIRE_OK(cm_counters_map(x.fd, &c));
	cm_shm_create(&shm, (size_t)n * 8192);
	cm_owner_spawn(&o, x.key, &shm, 0, COOPMPI_REGION_WRITE, 0);
	local = cm_map_anon((size_t)n * 8192);
	cm_fill_pattern(local, (size_t)n * 8192, 51);

	for (uint32_t i = 0; i < n; i++)
		cm_desc_local(&d[i], local + (size_t)i * 8192 + i % 7, o.cookie,
			      (size_t)i * 8192, 4096 + i % 4000, i);
	/* in batches of at most COOPMPI_DMA_MAX_BATCH */
	while (sub < n) {
		uint32_t k = n - sub > COOPMPI_DMA_MAX_BATCH ?
			     COOPMPI_DMA_MAX_BATCH : n - sub;

		r = cm_dma_submit(x.fd, d + sub, k, &done);
		REQUIRE(r == 0 || r == -EAGAIN, "submit: %s", cm_errname(-r));
		sub += done;
		if (r == -EAGAIN) {
			/* max_inflight < cq_entries: wait for some to finish */
			REQUIRE(sub >= cm_dma_info_cache.max_inflight,
				"EAGAIN after %u", sub);
			cm_sleep_ms(10);
		}
		if (__atomic_load_n(&c.offload->dma_ops, __ATOMIC_RELAXED) > peak_ops)
			peak_ops = c.offload->dma_ops;
	}
	cm_desc_local(&one, local, o.cookie, 0, 1, 999999);
	REQUIRE_ERR(cm_dma_submit(x.fd, &one, 1, &done), EAGAIN);
	REQUIRE(done == 0, "done %u", done);
	printf("%u descriptors outstanding, one more refused; peak dma_ops in the counters page %llu\n",
	       n, (unsigned long long)peak_ops);

	cm_cq_wait(x.fd, &x.cq, e, n, 120000);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t k = e[i].user_tag;

		REQUIRE(k < n && !seen[k], "tag %llu", (unsigned long long)k);
		seen[k] = 1;
		expect_cqe(&e[i], 0, 4096 + k % 4000, "many");
		REQUIRE(cm_check_pattern(shm.view + k * 8192, 4096 + k % 4000,
					 51, k * 8192 + k % 7) < 0,
			"descriptor %llu data", (unsigned long long)k);
	}
	/* room again */
	REQUIRE_OK(cm_dma_submit(x.fd, &one, 1, &done));
	cm_cq_wait(x.fd, &x.cq, e, 1, 10000);
	expect_cqe(&e[0], 0, 1, "after draining");

	REQUIRE(__atomic_load_n(&c.offload->dma_ops, __ATOMIC_RELAXED) == 0 &&
		__atomic_load_n(&c.offload->dma_bytes, __ATOMIC_RELAXED) == 0,
		"counters page offload: dma_ops %llu dma_bytes %llu",
		(unsigned long long)c.offload->dma_ops,
		(unsigned long long)c.offload->dma_bytes);
	REQUIRE(cm_domain_offload(x.j.domain_id, "dma_ops") == 0 &&
		cm_domain_offload(x.j.domain_id, "dma_bytes") == 0,
		"domain offload file not back to 0");
	cm_dma_wait_idle(10000);
	cm_owner_finish(&o);
	cm_counters_unmap(&c);
	cm_unmap(local, (size_t)n * 8192);
	cm_shm_destroy(&shm);
	dctx_close(&x);
	free(d);
	free(e);
	free(seen);
}
END_TEST

/*
 * The receiver spins on the first word of its notification and checks
 * every data byte the moment it flips: the notification must never be
 * visible before the data.
 */
#define ORD_LEN (3 * (256u << 10) + 4093)
#define ORD_ITERS 60
#define ORD_MAGIC 0x4e4f544946590000ULL

START_TEST(test_dma_notify_order)
{
	struct dctx x;
	int sv[2];
	pid_t rx;
	uint64_t cookie, spins_total = 0;
	uint8_t *local;

	if (!cm_dma_available())
		return;
	dctx_open(&x);
	cm_socketpair(sv);
	rx = cm_fork();
	if (rx == 0) {
		uint8_t *buf = cm_map_anon(ORD_LEN + 4096 + 4096);
		uint64_t *ntf = (uint64_t *)(buf + ((ORD_LEN + 4095) & ~4095u));
		int fd = cm_open_join(x.key, COOPMPI_JOIN_EXISTING, NULL);
		uint64_t c;

		close(sv[0]);
		REQUIRE_OK(cm_reg(fd, buf, ORD_LEN + 8192,
				  COOPMPI_REGION_READ | COOPMPI_REGION_WRITE, &c));
		cm_put_u64(sv[1], c);
		cm_put_u64(sv[1], (uint64_t)((uint8_t *)ntf - buf));
		for (uint64_t i = 0; i < ORD_ITERS; i++) {
			uint64_t spins = 0, v, t0;
			long bad;

			memset(buf, 0, ORD_LEN);
			__atomic_store_n(&ntf[1], ~0ULL, __ATOMIC_RELAXED);
			__atomic_store_n(&ntf[0], ~0ULL, __ATOMIC_RELEASE);
			cm_put_u64(sv[1], i);
			t0 = cm_now_ms();
			while ((v = __atomic_load_n(&ntf[0], __ATOMIC_ACQUIRE)) ==
			       ~0ULL) {
				if (++spins % (1u << 20) == 0)
					REQUIRE(cm_now_ms() - t0 < 60000,
						"iteration %llu: no notification",
						(unsigned long long)i);
			}
			REQUIRE(v == (ORD_LEN | i << 32),
				"iteration %llu: first word %#llx",
				(unsigned long long)i, (unsigned long long)v);
			REQUIRE(__atomic_load_n(&ntf[1], __ATOMIC_RELAXED) ==
				(ORD_MAGIC | i),
				"iteration %llu: second word %#llx before the first",
				(unsigned long long)i, (unsigned long long)ntf[1]);
			bad = cm_check_pattern(buf, ORD_LEN, 0x0d0 + i, 0);
			REQUIRE(bad < 0,
				"iteration %llu: notification visible but data byte %ld of %u not",
				(unsigned long long)i, bad, ORD_LEN);
			cm_put_u64(sv[1], spins);
		}
		close(fd);
		_exit(0);
	}
	close(sv[1]);
	cookie = cm_get_u64_from(sv[0], rx, "receiver");
	{
		uint64_t ntf_off = cm_get_u64_from(sv[0], rx, "receiver");

		local = cm_map_anon(ORD_LEN);
		for (uint64_t i = 0; i < ORD_ITERS; i++) {
			struct coopmpi_dma_desc d;
			struct coopmpi_dma_cqe e;
			uint32_t done;

			REQUIRE(cm_get_u64_from(sv[0], rx, "receiver") == i,
				"receiver out of step");
			cm_fill_pattern(local, ORD_LEN, 0x0d0 + i);
			cm_desc_local(&d, local, cookie, 0, ORD_LEN, i);
			cm_desc_notify(&d, cookie, ntf_off, ORD_LEN | i << 32,
				       ORD_MAGIC | i);
			REQUIRE_OK(cm_dma_submit(x.fd, &d, 1, &done));
			spins_total += cm_get_u64_from(sv[0], rx, "receiver");
			cm_cq_wait(x.fd, &x.cq, &e, 1, 60000);
			expect_cqe(&e, 0, ORD_LEN, "ordered copy");
		}
	}
	cm_wait_ok(rx, "receiver");
	printf("%d notifications watched by a spinning receiver, %llu spins in all\n",
	       ORD_ITERS, (unsigned long long)spins_total);
	close(sv[0]);
	cm_unmap(local, ORD_LEN);
	dctx_close(&x);
}
END_TEST

#define DMATEST_DELAY "/sys/module/coopmpi_dmatest/parameters/delay_us"

/*
 * A descriptor that writes part of a destination page leaves the rest of
 * the page to its owner: bytes the owner writes there while the
 * descriptor is in flight keep the owner's values.  An engine that maps
 * the whole page for the device's writes loses them where the mapping
 * bounces (swiotlb: the bounce buffer, copied from the page at map time,
 * is copied back over all of it at unmap).  With the test provider the
 * descriptor is held 400 ms (delay_us) so the writes land in flight;
 * scripts/vm-dma-tests.sh hw-bounce runs it with swiotlb=force.
 */
START_TEST(test_dma_partial_page)
{
	const uint64_t off = 1000, len = 100;
	struct coopmpi_dma_desc d;
	struct coopmpi_dma_cqe e;
	struct cm_owner o;
	struct cm_shm shm;
	struct dctx x;
	uint8_t *local;
	uint32_t done;
	bool held;

	if (!cm_dma_available())
		return;
	held = cm_dma_info_cache.engine == COOPMPI_DMA_HW &&
	       cm_write_file(DMATEST_DELAY, "400000\n") == 0;
	dctx_open(&x);
	cm_shm_create(&shm, 4096);
	cm_owner_spawn(&o, x.key, &shm, 0,
		       COOPMPI_REGION_READ | COOPMPI_REGION_WRITE, 0);
	local = cm_map_anon(4096);
	cm_fill_pattern(local, len, 41);
	memset(shm.view, 0xEE, 4096);
	cm_desc_local(&d, local, o.cookie, off, len, 1);
	REQUIRE_OK(cm_dma_submit(x.fd, &d, 1, &done));
	cm_sleep_ms(100);
	memset(shm.view, 0x5A, off);
	memset(shm.view + off + len, 0x5A, 4096 - off - len);
	if (held)
		REQUIRE(cm_cq_reap(&x.cq, &e, 1) == 0,
			"the descriptor completed before the owner's writes");
	cm_cq_wait(x.fd, &x.cq, &e, 1, 10000);
	if (held)
		REQUIRE_OK(cm_write_file(DMATEST_DELAY, "0\n"));
	expect_cqe(&e, 0, len, "partial page");
	REQUIRE(cm_check_pattern(shm.view + off, len, 41, 0) < 0,
		"the copied bytes");
	REQUIRE(cm_check_byte(shm.view, off, 0x5A) < 0 &&
		cm_check_byte(shm.view + off + len, 4096 - off - len, 0x5A) < 0,
		"bytes the owner wrote beside the copy in flight were reverted");
	cm_owner_finish(&o);
	cm_unmap(local, 4096);
	cm_shm_destroy(&shm);
	dctx_close(&x);
}
END_TEST

void add_dma_tests(Suite *s)
{
	TCase *tc = cm_tcase("dma-basic", 60);

	tcase_add_test(tc, test_dma_info);
	tcase_add_test(tc, test_dma_off);
	tcase_add_test(tc, test_dma_cq_map);
	tcase_add_test(tc, test_dma_poll);
	suite_add_tcase(s, tc);

	tc = cm_tcase("dma-data", 300);
	tcase_add_loop_test(tc, test_dma_sizes, 0, 2);
	tcase_add_test(tc, test_dma_notify);
	tcase_add_test(tc, test_dma_batch);
	suite_add_tcase(s, tc);

	tc = cm_tcase("dma-order", 300);
	tcase_add_test(tc, test_dma_notify_order);
	suite_add_tcase(s, tc);

	tc = cm_tcase("dma-many", 300);
	tcase_add_test(tc, test_dma_many);
	suite_add_tcase(s, tc);

	tc = cm_tcase("dma-partial", 60);
	tcase_add_test(tc, test_dma_partial_page);
	suite_add_tcase(s, tc);
}
