// SPDX-License-Identifier: GPL-2.0
/*
 * The dmaengine DMA engine: one DMA_MEMCPY channel (e.g. Intel I/OAT),
 * requested at module load and released at unload, shared by all
 * endpoints.
 *
 * A chunk's pinned pages are DMA-mapped page by page on the channel's
 * device, each for exactly the bytes the chunk copies in it, one memcpy
 * descriptor is prepared and submitted per page-pair segment, and the
 * worker sleeps until every descriptor's callback ran.
 * The callbacks only count down (they may run in a tasklet or hardirq);
 * the worker then unmaps and, after the last chunk, the CPU writes the
 * notification, so it can never overtake the data.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/dmaengine.h>
#include <linux/mutex.h>

#include "dma.h"

/* Rounds without a free descriptor in the channel before giving up. */
#define HW_MAX_STALLS	5000

static struct {
	struct dma_chan *chan;
	struct device *dev;	/* the device mappings are made for */
	struct mutex lock;	/* prep + submit + issue of one batch */
} hw;

/* One batch of submitted descriptors; lives on the worker's stack. */
struct hw_batch {
	atomic_t pending;	/* descriptors + 1 while submitting */
	int error;
	struct completion done;
};

int coopmpi_dma_hw_init(void)
{
	dma_cap_mask_t mask;
	struct dma_chan *chan;

	dma_cap_zero(mask);
	dma_cap_set(DMA_MEMCPY, mask);
	chan = dma_request_chan_by_mask(&mask);
	/* -EPROBE_DEFER: no dmaengine device at all (yet) */
	if (IS_ERR(chan))
		return PTR_ERR(chan) == -EPROBE_DEFER ? -ENODEV : PTR_ERR(chan);
	hw.chan = chan;
	hw.dev = dmaengine_get_dma_device(chan);
	mutex_init(&hw.lock);
	return 0;
}

/* No descriptor of ours is outstanding (the DMA workqueue is gone). */
void coopmpi_dma_hw_exit(void)
{
	if (!hw.chan)
		return;
	/* callbacks still returning into this module */
	dmaengine_synchronize(hw.chan);
	dma_release_channel(hw.chan);
	hw.chan = NULL;
	hw.dev = NULL;
}

const char *coopmpi_dma_hw_name(void)
{
	return hw.chan ? dma_chan_name(hw.chan) : "none";
}

static void hw_callback(void *param, const struct dmaengine_result *res)
{
	struct hw_batch *b = param;

	if (res && res->result != DMA_TRANS_NOERROR)
		WRITE_ONCE(b->error, -EIO);
	/* Whoever drops the last count wakes (or is) the worker. */
	if (atomic_dec_and_test(&b->pending))
		complete(&b->done);
}

/*
 * The bytes of page i of a run of len bytes that starts off into its first
 * page.  Only they are mapped: where a mapping bounces (swiotlb) or the
 * caches are not coherent, the device's side of a whole page would be
 * written back over bytes the copy does not own - the owner's, or another
 * descriptor's in the same page.
 */
static void hw_page_span(unsigned int off, size_t len, unsigned int i,
			 unsigned int *start, unsigned int *size)
{
	size_t page = (size_t)i * PAGE_SIZE;
	size_t lo = max_t(size_t, page, off);
	size_t hi = min_t(size_t, page + PAGE_SIZE, off + len);

	*start = lo - page;
	*size = hi - lo;
}

/*
 * dma[i] is the DMA address of byte 0 of page i, so that byte o of it is
 * at dma[i] + o; only the bytes of its span are mapped.
 */
static void hw_unmap_pages(dma_addr_t *dma, unsigned int off, size_t len,
			   unsigned int nr, enum dma_data_direction dir)
{
	unsigned int i, start, size;

	for (i = 0; i < nr; i++) {
		hw_page_span(off, len, i, &start, &size);
		dma_unmap_page(hw.dev, dma[i] + start, size, dir);
	}
}

static int hw_map_pages(struct page **pages, dma_addr_t *dma,
			unsigned int off, size_t len, unsigned int nr,
			enum dma_data_direction dir)
{
	unsigned int i, start, size;
	dma_addr_t addr;

	for (i = 0; i < nr; i++) {
		hw_page_span(off, len, i, &start, &size);
		addr = dma_map_page(hw.dev, pages[i], start, size, dir);
		if (dma_mapping_error(hw.dev, addr)) {
			hw_unmap_pages(dma, off, len, i, dir);
			return -ENOMEM;
		}
		dma[i] = addr - start;
	}
	return 0;
}

static void hw_unmap(const struct coopmpi_dma_chunk *c, unsigned int nr_src,
		     unsigned int nr_dst)
{
	hw_unmap_pages(c->dst_dma, c->dst_off, c->len, nr_dst, DMA_FROM_DEVICE);
	hw_unmap_pages(c->src_dma, c->src_off, c->len, nr_src, DMA_TO_DEVICE);
}

static int hw_map(const struct coopmpi_dma_chunk *c, unsigned int nr_src,
		  unsigned int nr_dst)
{
	int ret;

	ret = hw_map_pages(c->src_pages, c->src_dma, c->src_off, c->len,
			   nr_src, DMA_TO_DEVICE);
	if (ret)
		return ret;
	ret = hw_map_pages(c->dst_pages, c->dst_dma, c->dst_off, c->len,
			   nr_dst, DMA_FROM_DEVICE);
	if (ret)
		hw_unmap_pages(c->src_dma, c->src_off, c->len, nr_src,
			       DMA_TO_DEVICE);
	return ret;
}

/*
 * Prepares and submits descriptors from byte *pos on, as many as the
 * channel takes.  Every descriptor asks for an interrupt: a driver may
 * otherwise reap a batch cut short by a full ring only on a timer.
 */
static int hw_submit(const struct coopmpi_dma_chunk *c, size_t *pos,
		     struct hw_batch *b)
{
	const unsigned long flags = DMA_PREP_INTERRUPT | DMA_CTRL_ACK;
	struct dma_async_tx_descriptor *tx;
	struct coopmpi_dma_seg s;
	dma_cookie_t cookie;
	int ret = 0;

	mutex_lock(&hw.lock);
	while (coopmpi_dma_seg_at(c, *pos, &s)) {
		tx = dmaengine_prep_dma_memcpy(hw.chan,
					       c->dst_dma[s.di] + s.doff,
					       c->src_dma[s.si] + s.soff,
					       s.len, flags);
		if (!tx)
			break;	/* channel full: wait for this batch */
		tx->callback_result = hw_callback;
		tx->callback_param = b;
		atomic_inc(&b->pending);
		cookie = dmaengine_submit(tx);
		if (dma_submit_error(cookie)) {
			atomic_dec(&b->pending);
			ret = -EIO;
			break;
		}
		*pos += s.len;
	}
	dma_async_issue_pending(hw.chan);
	mutex_unlock(&hw.lock);
	return ret;
}

/*
 * Waits for a batch's callbacks; false if the engine did not finish it in
 * dma_timeout_ms.  A hung engine must not hang the worker, and through it
 * the endpoint's release (close, exit): the channel is reset, which drops
 * every descriptor in it, ours and other workers' (their waits time out
 * in turn) and guarantees no callback runs after it, so the batch on our
 * stack can go.
 */
static bool hw_wait(struct hw_batch *b)
{
	if (wait_for_completion_timeout(&b->done,
					msecs_to_jiffies(coopmpi_dma_timeout_ms)))
		return true;
	pr_warn_ratelimited("DMA channel %s did not finish a chunk in %u ms: reset\n",
			    dma_chan_name(hw.chan), coopmpi_dma_timeout_ms);
	dmaengine_terminate_sync(hw.chan);
	return false;
}

static int hw_copy_mapped(const struct coopmpi_dma_chunk *c)
{
	unsigned int stalls = 0;
	size_t pos = 0;
	int ret = 0;

	while (pos < c->len && !ret) {
		struct hw_batch b = { .error = 0 };
		size_t start = pos;

		atomic_set(&b.pending, 1);
		init_completion(&b.done);
		ret = hw_submit(c, &pos, &b);
		if (!atomic_dec_and_test(&b.pending) && !hw_wait(&b))
			return -ETIMEDOUT;
		if (!ret)
			ret = READ_ONCE(b.error);
		if (!ret && pos == start) {
			/* nothing went in: others fill the channel */
			if (++stalls > HW_MAX_STALLS)
				ret = -EBUSY;
			else
				usleep_range(100, 200);
		}
	}
	return ret;
}

int coopmpi_dma_hw_copy(const struct coopmpi_dma_chunk *c)
{
	unsigned int nr_src = coopmpi_dma_chunk_pages(c->src_off, c->len);
	unsigned int nr_dst = coopmpi_dma_chunk_pages(c->dst_off, c->len);
	struct coopmpi_dma_seg s;
	size_t pos;
	int ret;

	/* A channel with alignment rules gets only what it can do. */
	for (pos = 0; coopmpi_dma_seg_at(c, pos, &s); pos += s.len)
		if (!is_dma_copy_aligned(hw.chan->device, s.soff, s.doff,
					 s.len))
			return coopmpi_dma_soft_copy(c);

	ret = hw_map(c, nr_src, nr_dst);
	if (ret)
		return ret;
	ret = hw_copy_mapped(c);
	hw_unmap(c, nr_src, nr_dst);
	return ret;
}
