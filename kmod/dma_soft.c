// SPDX-License-Identifier: GPL-2.0
/*
 * The soft DMA engine: the worker running the chunk copies it with the
 * CPU it runs on (an unbound worker: usually not the submitter's CPU).
 */
#include <linux/highmem.h>
#include <linux/sched.h>
#include <linux/string.h>

#include "dma.h"

int coopmpi_dma_soft_copy(const struct coopmpi_dma_chunk *c)
{
	struct coopmpi_dma_seg s;
	size_t pos = 0;

	while (coopmpi_dma_seg_at(c, pos, &s)) {
		void *src = kmap_local_page(c->src_pages[s.si]);
		void *dst = kmap_local_page(c->dst_pages[s.di]);

		memcpy(dst + s.doff, src + s.soff, s.len);
		kunmap_local(dst);
		kunmap_local(src);
		pos += s.len;
		cond_resched();
	}
	return 0;
}
