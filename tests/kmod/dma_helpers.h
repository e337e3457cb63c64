/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dma_helpers.h - helpers of the DMA-engine channel tests (test_dma*.c).
 *
 * The DMA tests form their own Check suite, "coopmpi-dma", so that they
 * can be run alone against each engine (CK_RUN_SUITE=coopmpi-dma, see
 * scripts/vm-dma-tests.sh).  Without an engine (dma=off) every test but
 * the dma=off one returns at once.  COOP_TEST_EXPECT_DMA_ENGINE=hw|soft|none
 * makes test_dma_info fail when the loaded module runs another engine.
 */
#ifndef COOPMPI_TEST_DMA_HELPERS_H
#define COOPMPI_TEST_DMA_HELPERS_H

#include "helpers.h"

extern struct coopmpi_dma_info cm_dma_info_cache;

int cm_dma_info(int fd, struct coopmpi_dma_info *info);
const char *cm_dma_engine_str(uint32_t engine);
/* fills cm_dma_info_cache; false (with a note) when there is no engine */
bool cm_dma_available(void);

/* ---- descriptors and submission ---- */
void cm_desc_local(struct coopmpi_dma_desc *d, const void *src,
		   uint64_t dst_cookie, uint64_t dst_off, uint64_t len,
		   uint64_t tag);
void cm_desc_region(struct coopmpi_dma_desc *d, uint64_t src_cookie,
		    uint64_t src_off, uint64_t dst_cookie, uint64_t dst_off,
		    uint64_t len, uint64_t tag);
void cm_desc_notify(struct coopmpi_dma_desc *d, uint64_t cookie,
		    uint64_t off, uint64_t lo, uint64_t hi);
/* DMA_SUBMIT of count records of desc_size bytes: 0 / -errno */
int cm_dma_submitv(int fd, const void *descs, uint32_t count,
		   uint32_t desc_size, uint32_t *done);
int cm_dma_submit(int fd, const struct coopmpi_dma_desc *d, uint32_t count,
		  uint32_t *done);

/* ---- completion queue ---- */
struct cm_cq {
	void *base;
	size_t bytes;
	struct coopmpi_dma_cq_hdr *hdr;
	struct coopmpi_dma_cqe *cqes;
	uint32_t mask;
};
int cm_cq_map(int fd, struct cm_cq *cq);
void cm_cq_unmap(struct cm_cq *cq);
/* consumes up to max entries without waiting */
unsigned cm_cq_reap(struct cm_cq *cq, struct coopmpi_dma_cqe *out,
		    unsigned max);
/* consumes exactly n entries, sleeping in poll(POLLPRI); asserts */
void cm_cq_wait(int fd, struct cm_cq *cq, struct coopmpi_dma_cqe *out,
		unsigned n, unsigned timeout_ms);
/* submit one descriptor and wait for its entry; returns the entry */
struct coopmpi_dma_cqe cm_dma_run(int fd, struct cm_cq *cq,
				  const struct coopmpi_dma_desc *d);

/* ---- counters ---- */
/* waits until sysfs dma_ops and dma_bytes are 0; asserts */
void cm_dma_wait_idle(unsigned timeout_ms);
/* /sys/kernel/coopmpi/domains/<id>/offload field, asserts */
uint64_t cm_domain_offload(uint32_t domain_id, const char *field);

/*
 * Another user (nobody, a domain of its own): rounds (at most 256)
 * checked copies of 256 KiB one after the other; returns the longest
 * one's milliseconds, the median's microseconds in *median_us.
 */
uint64_t cm_dma_latency_as_nobody(unsigned rounds, uint64_t *median_us);

/* ---- suites ---- */
void add_dma_tests(Suite *s);
void add_dma_uring_tests(Suite *s);
void add_dma_fail_tests(Suite *s);
void add_dma_stall_tests(Suite *s);
void add_dma_user_tests(Suite *s);
void add_load_tests(Suite *s);
void add_pin_tests(Suite *s);

#endif
