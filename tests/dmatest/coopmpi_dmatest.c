// SPDX-License-Identifier: GPL-2.0
/*
 * coopmpi_dmatest.ko - TEST ONLY.  A dmaengine provider with one
 * DMA_MEMCPY channel whose "hardware" is a work item copying with the
 * CPU, so coopmpi.ko's dmaengine path (mapping, one descriptor per page
 * pair, callbacks, a full descriptor ring) runs in a VM without DMA
 * hardware.
 *
 * The copy goes through the direct map at the DMA address: that needs
 * DMA addresses that are physical addresses (no IOMMU; swiotlb bounce
 * buffers are fine), which probe verifies.  Callbacks run with bottom halves disabled, as from a real
 * driver's tasklet.  The channel is DMA_PRIVATE: only
 * dma_request_chan_by_mask() users get it.
 *
 * Parameters: ring (descriptors prepared at once; prep fails beyond),
 * delay_us (per descriptor), fail_every (every Nth descriptor is not
 * copied and reports DMA_TRANS_WRITE_FAILED; 0 = never), descs (read:
 * descriptors completed).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/dmaengine.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/workqueue.h>

#define DRV_NAME "coopmpi_dmatest"

static unsigned int ring = 64;
module_param(ring, uint, 0444);
MODULE_PARM_DESC(ring, "descriptors prepared at once (1..4096)");

static unsigned int delay_us;
module_param(delay_us, uint, 0644);
MODULE_PARM_DESC(delay_us, "delay per descriptor, microseconds");

static unsigned int fail_every;
module_param(fail_every, uint, 0644);
MODULE_PARM_DESC(fail_every, "fail every Nth descriptor (0: never)");

static bool stall;
module_param(stall, bool, 0644);
MODULE_PARM_DESC(stall, "a hung engine: issued descriptors are left alone until the channel is terminated");

static unsigned long descs;
module_param(descs, ulong, 0444);
MODULE_PARM_DESC(descs, "descriptors completed");

struct prov_desc {
	struct dma_async_tx_descriptor tx;
	struct list_head node;
	dma_addr_t src, dst;
	size_t len;
};

struct prov {
	struct dma_device dma;
	struct dma_chan chan;
	spinlock_t lock;		/* lists, allocated, cookies */
	struct list_head submitted;	/* not yet issued */
	struct list_head issued;
	unsigned int allocated;		/* prepared, not yet freed */
	unsigned long count;		/* work: descriptors processed */
	struct work_struct work;
};

static struct platform_device *prov_pdev;

static struct prov *to_prov(struct dma_chan *chan)
{
	return container_of(chan, struct prov, chan);
}

static void desc_free(struct prov *p, struct prov_desc *d)
{
	unsigned long flags;

	spin_lock_irqsave(&p->lock, flags);
	p->allocated--;
	spin_unlock_irqrestore(&p->lock, flags);
	kfree(d);
}

static dma_cookie_t prov_tx_submit(struct dma_async_tx_descriptor *tx)
{
	struct prov_desc *d = container_of(tx, struct prov_desc, tx);
	struct prov *p = to_prov(tx->chan);
	unsigned long flags;
	dma_cookie_t cookie;

	spin_lock_irqsave(&p->lock, flags);
	cookie = p->chan.cookie + 1;
	if (cookie < DMA_MIN_COOKIE)
		cookie = DMA_MIN_COOKIE;
	p->chan.cookie = cookie;
	tx->cookie = cookie;
	list_add_tail(&d->node, &p->submitted);
	spin_unlock_irqrestore(&p->lock, flags);
	return cookie;
}

static struct dma_async_tx_descriptor *
prov_prep_memcpy(struct dma_chan *chan, dma_addr_t dst, dma_addr_t src,
		 size_t len, unsigned long flags)
{
	struct prov *p = to_prov(chan);
	struct prov_desc *d;
	unsigned long irqf;
	bool full;

	spin_lock_irqsave(&p->lock, irqf);
	full = p->allocated >= ring;
	if (!full)
		p->allocated++;
	spin_unlock_irqrestore(&p->lock, irqf);
	if (full)
		return NULL;

	d = kzalloc(sizeof(*d), GFP_NOWAIT);
	if (!d) {
		desc_free(p, NULL);
		return NULL;
	}
	dma_async_tx_descriptor_init(&d->tx, chan);
	d->tx.flags = flags;
	d->tx.tx_submit = prov_tx_submit;
	d->src = src;
	d->dst = dst;
	d->len = len;
	return &d->tx;
}

static void prov_issue_pending(struct dma_chan *chan)
{
	struct prov *p = to_prov(chan);
	unsigned long flags;

	spin_lock_irqsave(&p->lock, flags);
	list_splice_tail_init(&p->submitted, &p->issued);
	spin_unlock_irqrestore(&p->lock, flags);
	queue_work(system_unbound_wq, &p->work);
}

static enum dma_status prov_tx_status(struct dma_chan *chan,
				      dma_cookie_t cookie,
				      struct dma_tx_state *state)
{
	struct prov *p = to_prov(chan);
	dma_cookie_t issued, done;
	unsigned long flags;

	spin_lock_irqsave(&p->lock, flags);
	issued = chan->cookie;
	done = chan->completed_cookie;
	spin_unlock_irqrestore(&p->lock, flags);
	if (state) {
		state->last = done;
		state->used = issued;
		state->residue = 0;
	}
	return dma_async_is_complete(cookie, done, issued);
}

/* The "hardware": one descriptor after the other, in issue order. */
static void prov_work(struct work_struct *work)
{
	struct prov *p = container_of(work, struct prov, work);
	struct dmaengine_result res;
	struct prov_desc *d;
	unsigned int every;
	unsigned long flags;
	bool fail;

	for (;;) {
		if (READ_ONCE(stall))
			break;
		spin_lock_irqsave(&p->lock, flags);
		d = list_first_entry_or_null(&p->issued, struct prov_desc,
					     node);
		if (d)
			list_del(&d->node);
		spin_unlock_irqrestore(&p->lock, flags);
		if (!d)
			break;

		if (READ_ONCE(delay_us))
			usleep_range(delay_us, delay_us + 10);
		every = READ_ONCE(fail_every);
		fail = every && ++p->count % every == 0;
		if (!fail)
			memcpy(phys_to_virt(d->dst), phys_to_virt(d->src),
			       d->len);
		res.result = fail ? DMA_TRANS_WRITE_FAILED : DMA_TRANS_NOERROR;
		res.residue = fail ? d->len : 0;

		spin_lock_irqsave(&p->lock, flags);
		p->chan.completed_cookie = d->tx.cookie;
		spin_unlock_irqrestore(&p->lock, flags);
		WRITE_ONCE(descs, descs + 1);

		/* like a real driver's completion tasklet */
		local_bh_disable();
		if (d->tx.callback_result)
			d->tx.callback_result(d->tx.callback_param, &res);
		else if (d->tx.callback)
			d->tx.callback(d->tx.callback_param);
		local_bh_enable();
		desc_free(p, d);
		cond_resched();
	}
}

static int prov_alloc_chan_resources(struct dma_chan *chan)
{
	chan->cookie = DMA_MIN_COOKIE;
	chan->completed_cookie = DMA_MIN_COOKIE;
	return 0;
}

/* Aborts every descriptor not yet being copied, as a real engine's reset
 * does; synchronize waits for the one that is. */
static int prov_terminate_all(struct dma_chan *chan)
{
	struct prov *p = to_prov(chan);
	struct prov_desc *d, *n;
	unsigned long flags;
	LIST_HEAD(drop);

	spin_lock_irqsave(&p->lock, flags);
	list_splice_init(&p->submitted, &drop);
	list_splice_init(&p->issued, &drop);
	spin_unlock_irqrestore(&p->lock, flags);
	list_for_each_entry_safe(d, n, &drop, node)
		desc_free(p, d);
	return 0;
}

static void prov_synchronize(struct dma_chan *chan)
{
	flush_work(&to_prov(chan)->work);
}

static void prov_free_chan_resources(struct dma_chan *chan)
{
	prov_terminate_all(chan);
	prov_synchronize(chan);
}

static void prov_release(struct dma_device *dma)
{
	kfree(container_of(dma, struct prov, dma));
}

/*
 * The copy uses the direct map at the DMA address: a mapping's DMA address
 * must be the physical address of memory holding the mapped bytes - the
 * page itself, or a swiotlb bounce buffer (swiotlb=force), not an IOVA.
 */
static bool prov_direct_mapped(struct device *dev)
{
	struct page *page = alloc_page(GFP_KERNEL);
	dma_addr_t addr;
	bool ok;

	if (!page)
		return false;
	memset(page_address(page), 0xA5, PAGE_SIZE);
	addr = dma_map_page(dev, page, 0, PAGE_SIZE, DMA_BIDIRECTIONAL);
	if (dma_mapping_error(dev, addr)) {
		ok = false;
	} else {
		ok = pfn_valid(PHYS_PFN(addr)) &&
		     !memcmp(phys_to_virt(addr), page_address(page), PAGE_SIZE);
		dma_unmap_page(dev, addr, PAGE_SIZE, DMA_BIDIRECTIONAL);
	}
	__free_page(page);
	return ok;
}

static int prov_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct prov *p;
	int ret;

	if (ring < 1 || ring > 4096)
		return -EINVAL;
	ret = dma_coerce_mask_and_coherent(dev, DMA_BIT_MASK(64));
	if (ret)
		return ret;
	if (!prov_direct_mapped(dev)) {
		dev_err(dev, "DMA addresses are not physical addresses (IOMMU?)\n");
		return -ENODEV;
	}

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	spin_lock_init(&p->lock);
	INIT_LIST_HEAD(&p->submitted);
	INIT_LIST_HEAD(&p->issued);
	INIT_WORK(&p->work, prov_work);

	dma_cap_zero(p->dma.cap_mask);
	dma_cap_set(DMA_MEMCPY, p->dma.cap_mask);
	dma_cap_set(DMA_PRIVATE, p->dma.cap_mask);
	p->dma.dev = dev;
	p->dma.device_alloc_chan_resources = prov_alloc_chan_resources;
	p->dma.device_free_chan_resources = prov_free_chan_resources;
	p->dma.device_prep_dma_memcpy = prov_prep_memcpy;
	p->dma.device_tx_status = prov_tx_status;
	p->dma.device_issue_pending = prov_issue_pending;
	p->dma.device_terminate_all = prov_terminate_all;
	p->dma.device_synchronize = prov_synchronize;
	p->dma.device_release = prov_release;
	INIT_LIST_HEAD(&p->dma.channels);
	p->chan.device = &p->dma;
	list_add_tail(&p->chan.device_node, &p->dma.channels);

	ret = dma_async_device_register(&p->dma);
	if (ret) {
		kfree(p);
		return ret;
	}
	platform_set_drvdata(pdev, p);
	dev_info(dev, "test memcpy channel %s, ring %u\n",
		 dma_chan_name(&p->chan), ring);
	return 0;
}

static int prov_remove(struct platform_device *pdev)
{
	struct prov *p = platform_get_drvdata(pdev);

	/* The channel's users pin this module: nobody holds it now. */
	dma_async_device_unregister(&p->dma);
	return 0;
}

static struct platform_driver prov_driver = {
	.probe = prov_probe,
	.remove = prov_remove,
	.driver = {
		.name = DRV_NAME,
	},
};

static int __init prov_init(void)
{
	int ret;

	ret = platform_driver_register(&prov_driver);
	if (ret)
		return ret;
	prov_pdev = platform_device_register_simple(DRV_NAME, -1, NULL, 0);
	if (IS_ERR(prov_pdev)) {
		platform_driver_unregister(&prov_driver);
		return PTR_ERR(prov_pdev);
	}
	if (!platform_get_drvdata(prov_pdev)) {
		/* probe failed: the reason is in the log */
		platform_device_unregister(prov_pdev);
		platform_driver_unregister(&prov_driver);
		return -ENODEV;
	}
	return 0;
}

static void __exit prov_exit(void)
{
	platform_device_unregister(prov_pdev);
	platform_driver_unregister(&prov_driver);
}

module_init(prov_init);
module_exit(prov_exit);

MODULE_DESCRIPTION("coopmpi TEST ONLY: software dmaengine memcpy provider");
MODULE_LICENSE("GPL");
