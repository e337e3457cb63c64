// SPDX-License-Identifier: GPL-2.0
/*
 * The DMA-engine channel: an asynchronous copy into a region of any
 * endpoint of the domain, followed by a 16-byte notification (see
 * coopmpi_uapi.h).  This file holds the parameters, the choice of engine,
 * the per-endpoint state and its completion queue, and both ways in
 * (COOPMPI_IOC_DMA_SUBMIT and the io_uring command) and out (a CQE or
 * io_uring_cmd_done()) of a descriptor; dma_xfer.c moves the data.
 *
 * Everything a descriptor refers to is looked up and referenced when it
 * is accepted, so the worker never sees a cookie: it sees regions that
 * may have gone away since (region->gone) and address spaces that may
 * have exited (mmget_not_zero fails), and completes with that error.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/err.h>
#include <linux/fs.h>
#include <linux/io_uring.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/sched/mm.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "dma.h"

static char *dma_mode = "auto";
module_param_named(dma, dma_mode, charp, 0444);
MODULE_PARM_DESC(dma, "DMA engine: auto (a dmaengine memcpy channel if the machine has one, else soft), hw, soft or off");

static unsigned int dma_max_inflight = 256;
module_param_named(dma_max_inflight, dma_max_inflight, uint, 0444);
MODULE_PARM_DESC(dma_max_inflight, "DMA descriptors in flight per endpoint (1..65536)");

static unsigned long long dma_max_bytes = 1ULL << 30;
module_param_named(dma_max_bytes, dma_max_bytes, ullong, 0444);
MODULE_PARM_DESC(dma_max_bytes, "DMA bytes in flight per endpoint (1 MiB..1 TiB)");

unsigned int coopmpi_dma_timeout_ms = 10000;
module_param_named(dma_timeout_ms, coopmpi_dma_timeout_ms, uint, 0444);
MODULE_PARM_DESC(dma_timeout_ms, "longest wait for the dmaengine channel to finish a chunk before it is reset and the descriptor fails with -ETIMEDOUT (10..600000)");

/*
 * An io_uring ring's exit work warns about commands still running five
 * minutes after the ring was closed; ours end well before.
 */
#define DMA_DEADLINE_MIN_MS	100
#define DMA_DEADLINE_MAX_MS	240000

static unsigned int dma_deadline_ms = 60000;

static int dma_deadline_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, DMA_DEADLINE_MIN_MS,
				     DMA_DEADLINE_MAX_MS);
}

static const struct kernel_param_ops dma_deadline_ops = {
	.set = dma_deadline_set,
	.get = param_get_uint,
};

module_param_cb(dma_deadline_ms, &dma_deadline_ops, &dma_deadline_ms, 0644);
MODULE_PARM_DESC(dma_deadline_ms, "longest time a DMA descriptor may take from its submission to its completion, else it fails with -ETIMEDOUT (100..240000; root may change it at run time)");

static unsigned int dma_workers = 4;
module_param_named(dma_workers, dma_workers, uint, 0444);
MODULE_PARM_DESC(dma_workers, "DMA chunks processed at once, node-wide (1..64)");

struct workqueue_struct *coopmpi_dma_wq;
static u32 dma_engine = COOPMPI_DMA_NONE;
static u32 dma_cq_entries;

/* io_uring_cmd.pdu while the completion waits for task work. */
struct dma_uring_pdu {
	s64 res;
};

u32 coopmpi_dma_engine_id(void)
{
	return dma_engine;
}

const char *coopmpi_dma_engine_name(void)
{
	switch (dma_engine) {
	case COOPMPI_DMA_SOFT:
		return "soft";
	case COOPMPI_DMA_HW:
		return "hw";
	default:
		return "none";
	}
}

const char *coopmpi_dma_channel_name(void)
{
	if (dma_engine == COOPMPI_DMA_HW)
		return coopmpi_dma_hw_name();
	return coopmpi_dma_engine_name();
}

/* The largest descriptor: io_uring reports the bytes in an int. */
static u64 dma_max_length(void)
{
	return min_t(u64, dma_max_bytes, MAX_RW_COUNT);
}

int coopmpi_dma_copy_chunk(const struct coopmpi_dma_chunk *c)
{
	if (dma_engine == COOPMPI_DMA_HW)
		return coopmpi_dma_hw_copy(c);
	return coopmpi_dma_soft_copy(c);
}

/* ------------------------------------------------------------------ */
/* Module load and unload                                              */
/* ------------------------------------------------------------------ */

static int __init dma_params_check(void)
{
	if (dma_max_inflight < 1 || dma_max_inflight > 65536) {
		pr_err("dma_max_inflight=%u invalid: must be 1..65536\n",
		       dma_max_inflight);
		return -EINVAL;
	}
	if (dma_max_bytes < (1ULL << 20) || dma_max_bytes > (1ULL << 40)) {
		pr_err("dma_max_bytes=%llu invalid: must be 1 MiB..1 TiB\n",
		       dma_max_bytes);
		return -EINVAL;
	}
	if (coopmpi_dma_timeout_ms < 10 || coopmpi_dma_timeout_ms > 600000) {
		pr_err("dma_timeout_ms=%u invalid: must be 10..600000\n",
		       coopmpi_dma_timeout_ms);
		return -EINVAL;
	}
	if (dma_workers < 1 || dma_workers > 64) {
		pr_err("dma_workers=%u invalid: must be 1..64\n", dma_workers);
		return -EINVAL;
	}
	return 0;
}

int __init coopmpi_dma_init(void)
{
	bool try_hw, need_hw;
	int ret;

	ret = dma_params_check();
	if (ret)
		return ret;
	if (!strcmp(dma_mode, "off"))
		return 0;
	try_hw = !strcmp(dma_mode, "auto") || !strcmp(dma_mode, "hw");
	need_hw = !strcmp(dma_mode, "hw");
	if (!try_hw && strcmp(dma_mode, "soft")) {
		pr_err("dma=%s invalid: must be auto, hw, soft or off\n",
		       dma_mode);
		return -EINVAL;
	}

	dma_cq_entries = roundup_pow_of_two(dma_max_inflight);
	ret = coopmpi_dma_sched_init(dma_workers);
	if (ret)
		return ret;
	coopmpi_dma_wq = alloc_workqueue("coopmpi_dma", WQ_UNBOUND,
					 dma_workers);
	if (!coopmpi_dma_wq) {
		coopmpi_dma_sched_exit();
		return -ENOMEM;
	}

	dma_engine = COOPMPI_DMA_SOFT;
	if (try_hw) {
		ret = coopmpi_dma_hw_init();
		if (!ret) {
			dma_engine = COOPMPI_DMA_HW;
		} else if (!need_hw) {
			pr_info("no dmaengine memcpy channel (%d)\n", ret);
		} else {
			pr_err("dma=hw: no dmaengine memcpy channel (%d)\n", ret);
			destroy_workqueue(coopmpi_dma_wq);
			coopmpi_dma_wq = NULL;
			coopmpi_dma_sched_exit();
			dma_engine = COOPMPI_DMA_NONE;
			return ret;
		}
	}
	pr_info("DMA engine %s (%s)\n", coopmpi_dma_engine_name(),
		coopmpi_dma_channel_name());
	return 0;
}

/* After the last endpoint is gone: only finishing work may be left. */
void coopmpi_dma_exit(void)
{
	if (!coopmpi_dma_wq)
		return;
	destroy_workqueue(coopmpi_dma_wq);
	coopmpi_dma_wq = NULL;
	coopmpi_dma_sched_exit();
	if (dma_engine == COOPMPI_DMA_HW)
		coopmpi_dma_hw_exit();
	dma_engine = COOPMPI_DMA_NONE;
}

/* ------------------------------------------------------------------ */
/* Endpoint state and completion queue                                 */
/* ------------------------------------------------------------------ */

static void cq_free(struct coopmpi_shm *shm)
{
	kfree(shm);
}

/* NULL when there is no engine; ERR_PTR on failure. */
struct coopmpi_dma_ep *coopmpi_dma_ep_alloc(void)
{
	struct coopmpi_dma_ep *dep;
	struct coopmpi_shm *cq;

	if (dma_engine == COOPMPI_DMA_NONE)
		return NULL;
	dep = kzalloc(sizeof(*dep), GFP_KERNEL_ACCOUNT);
	cq = kzalloc(sizeof(*cq), GFP_KERNEL_ACCOUNT);
	if (!dep || !cq)
		goto err;
	if (coopmpi_shm_alloc(cq, coopmpi_dma_cq_bytes(dma_cq_entries),
			      cq_free))
		goto err;
	spin_lock_init(&dep->lock);
	init_waitqueue_head(&dep->poll_wq);
	init_waitqueue_head(&dep->idle_wq);
	dep->cq = cq;
	dep->cq_entries = dma_cq_entries;
	dep->cq_hdr = cq->mem;
	dep->cqes = cq->mem + COOPMPI_DMA_CQ_CQES_OFF;
	dep->cq_hdr->magic = COOPMPI_DMA_CQ_MAGIC;
	dep->cq_hdr->version = COOPMPI_ABI_VERSION;
	dep->cq_hdr->entries = dma_cq_entries;
	dep->cq_hdr->cqe_size = sizeof(struct coopmpi_dma_cqe);
	return dep;
err:
	kfree(cq);
	kfree(dep);
	return ERR_PTR(-ENOMEM);
}

void coopmpi_dma_ep_free(struct coopmpi_dma_ep *dep)
{
	if (IS_ERR_OR_NULL(dep))
		return;
	coopmpi_shm_put(dep->cq);	/* mappings may keep it */
	kfree(dep);
}

static bool dma_ep_idle(struct coopmpi_dma_ep *dep)
{
	bool idle;

	spin_lock(&dep->lock);
	idle = !dep->inflight;
	spin_unlock(&dep->lock);
	return idle;
}

/*
 * Endpoint release: no ioctl or io_uring command of it can be running or
 * in flight (both hold the file).  Descriptors from DMA_SUBMIT may be:
 * they stop at their next chunk with -ECANCELED; wait for the last one.
 */
void coopmpi_dma_ep_release(struct coopmpi_ep *ep)
{
	struct coopmpi_dma_ep *dep = ep->dma;

	if (!dep)
		return;
	spin_lock(&dep->lock);
	dep->closing = true;
	spin_unlock(&dep->lock);
	wait_event(dep->idle_wq, dma_ep_idle(dep));
	ep->dma = NULL;
	coopmpi_dma_ep_free(dep);
}

int coopmpi_dma_cq_mmap(struct coopmpi_ep *ep, struct vm_area_struct *vma,
			unsigned long pgoff)
{
	if (!ep->dma)
		return -ENODEV;
	return coopmpi_shm_mmap(ep->dma->cq, vma, pgoff);
}

__poll_t coopmpi_dma_poll(struct coopmpi_ep *ep, struct file *file,
			  poll_table *wait)
{
	struct coopmpi_dma_ep *dep = ep->dma;

	if (!dep)
		return 0;
	poll_wait(file, &dep->poll_wq, wait);
	/* head is the consumer's; whatever it holds only affects it */
	if (READ_ONCE(dep->cq_hdr->head) != READ_ONCE(dep->cq_tail))
		return EPOLLPRI;
	return 0;
}

static void cq_post(struct coopmpi_dma_ep *dep, u64 tag, int status,
		    u64 bytes)
{
	struct coopmpi_dma_cqe *cqe;

	lockdep_assert_held(&dep->lock);
	cqe = &dep->cqes[dep->cq_tail & (dep->cq_entries - 1)];
	WRITE_ONCE(cqe->user_tag, tag);
	WRITE_ONCE(cqe->status, status);
	WRITE_ONCE(cqe->flags, 0);
	WRITE_ONCE(cqe->bytes, bytes);
	WRITE_ONCE(cqe->reserved, 0);
	WRITE_ONCE(dep->cq_tail, dep->cq_tail + 1);
	/* Release: the entry is visible before the tail that covers it. */
	smp_store_release(&dep->cq_hdr->tail, dep->cq_tail);
	wake_up_poll(&dep->poll_wq, EPOLLPRI);
}

/* ------------------------------------------------------------------ */
/* Completion                                                          */
/* ------------------------------------------------------------------ */

static void dma_uring_done(struct io_uring_cmd *ioucmd,
			   unsigned int issue_flags)
{
	struct dma_uring_pdu *pdu = (struct dma_uring_pdu *)ioucmd->pdu;

	io_uring_cmd_done(ioucmd, pdu->res, 0, issue_flags);
}

static void op_put_refs(struct coopmpi_dma_op *op)
{
	if (op->src_r)
		coopmpi_region_put(op->src_r);
	if (op->dst_r)
		coopmpi_region_put(op->dst_r);
	if (op->ntf_r)
		coopmpi_region_put(op->ntf_r);
	if (op->src_mm)
		mmdrop(op->src_mm);
	if (op->pin_mm)
		mmdrop(op->pin_mm);
	if (op->task)
		put_task_struct(op->task);
}

/* The user's share of the node: -EAGAIN beyond its limits. */
static int op_user_charge(struct coopmpi_dma_op *op)
{
	int ret = coopmpi_user_charge(op->user, COOPMPI_USER_DMA_OPS, 1);

	if (ret)
		return ret;
	ret = coopmpi_user_charge(op->user, COOPMPI_USER_DMA_BYTES,
				  op->length);
	if (ret)
		coopmpi_user_uncharge(op->user, COOPMPI_USER_DMA_OPS, 1);
	return ret;
}

static void op_user_uncharge(struct coopmpi_dma_op *op)
{
	coopmpi_user_uncharge(op->user, COOPMPI_USER_DMA_BYTES, op->length);
	coopmpi_user_uncharge(op->user, COOPMPI_USER_DMA_OPS, 1);
}

static void op_account(struct coopmpi_dma_op *op, int sign)
{
	struct coopmpi_offload_counters *o = op->domain->offload;
	s64 bytes = sign * (s64)op->length;

	atomic64_add(sign, coopmpi_atomic64(&o->dma_ops));
	atomic64_add(bytes, coopmpi_atomic64(&o->dma_bytes));
	atomic64_add(sign, &coopmpi_stats.dma_ops);
	atomic64_add(bytes, &coopmpi_stats.dma_bytes);
}

/*
 * The end of every accepted descriptor, in a worker.  Once inflight drops
 * the endpoint may be freed: nothing of it is touched after the unlock.
 */
void coopmpi_dma_op_finish(struct coopmpi_dma_op *op, int status)
{
	struct coopmpi_dma_ep *dep = op->dep;
	struct io_uring_cmd *ioucmd = op->ioucmd;

	op_put_refs(op);
	op_account(op, -1);
	/* the user lives while the endpoint does: before inflight drops */
	op_user_uncharge(op);
	atomic64_inc(status ? &coopmpi_stats.dma_errors :
			      &coopmpi_stats.dma_completed);

	spin_lock(&dep->lock);
	if (!ioucmd)
		cq_post(dep, op->tag, status, op->done);
	dep->inflight--;
	dep->inflight_bytes -= op->length;
	if (!dep->inflight && dep->closing)
		wake_up(&dep->idle_wq);
	spin_unlock(&dep->lock);

	if (ioucmd) {
		struct dma_uring_pdu *pdu = (struct dma_uring_pdu *)ioucmd->pdu;

		/* The CQE is posted from the submitter's task. */
		pdu->res = status ? status : (s64)op->done;
		io_uring_cmd_complete_in_task(ioucmd, dma_uring_done);
	}
	kfree(op);
}

/* ------------------------------------------------------------------ */
/* Submission                                                          */
/* ------------------------------------------------------------------ */

static int desc_check(const struct coopmpi_dma_desc *dd)
{
	bool notify = dd->flags & COOPMPI_DMA_NOTIFY;

	if (dd->flags & ~COOPMPI_DMA_DESC_FLAGS || dd->reserved0 ||
	    memchr_inv(dd->reserved, 0, sizeof(dd->reserved)))
		return -EINVAL;
	if (!(dd->flags & COOPMPI_DMA_SRC_REGION) && dd->src_cookie)
		return -EINVAL;
	if (!notify && (dd->notify_cookie || dd->notify_offset ||
			memchr_inv(dd->notify_data, 0, sizeof(dd->notify_data))))
		return -EINVAL;
	if (!dd->length) {
		/* a bare notification */
		if (!notify || dd->flags & COOPMPI_DMA_SRC_REGION || dd->src ||
		    dd->dst_cookie || dd->dst_offset)
			return -EINVAL;
	} else if (dd->length > dma_max_length()) {
		return -EINVAL;
	}
	return 0;
}

/* A referenced region of @d allowing @access over [off, off + len). */
static int region_ref(struct coopmpi_domain *d, u64 cookie, u32 access,
		      u64 off, u64 len, struct coopmpi_region **out)
{
	struct coopmpi_region *r = coopmpi_region_get(d, cookie);
	int ret;

	if (!r)
		return -ENXIO;
	if (!(r->access & access))
		ret = -EACCES;
	else if (off > r->length || len > r->length - off)
		ret = -ERANGE;
	else
		ret = 0;
	if (ret)
		coopmpi_region_put(r);
	else
		*out = r;
	return ret;
}

static int op_lookup(struct coopmpi_dma_op *op, struct coopmpi_domain *d,
		     const struct coopmpi_dma_desc *dd)
{
	u64 len = dd->length;
	int ret;

	if (dd->flags & COOPMPI_DMA_NOTIFY) {
		ret = region_ref(d, dd->notify_cookie, COOPMPI_REGION_WRITE,
				 dd->notify_offset, COOPMPI_DMA_NOTIFY_SIZE,
				 &op->ntf_r);
		if (ret)
			return ret;
		op->ntf_addr = op->ntf_r->addr + dd->notify_offset;
		if (!IS_ALIGNED(op->ntf_addr, COOPMPI_DMA_NOTIFY_ALIGN))
			return -EINVAL;
		memcpy(op->ntf_data, dd->notify_data, sizeof(op->ntf_data));
	}
	if (!len)
		return 0;

	ret = region_ref(d, dd->dst_cookie, COOPMPI_REGION_WRITE,
			 dd->dst_offset, len, &op->dst_r);
	if (ret)
		return ret;
	op->dst_addr = op->dst_r->addr + dd->dst_offset;

	if (dd->flags & COOPMPI_DMA_SRC_REGION) {
		ret = region_ref(d, dd->src_cookie, COOPMPI_REGION_READ,
				 dd->src, len, &op->src_r);
		if (ret)
			return ret;
		op->src_addr = op->src_r->addr + dd->src;
		op->src_mm = op->src_r->mm;
	} else {
		op->src_addr = untagged_addr(dd->src);
		if (!current->mm ||
		    !access_ok(u64_to_user_ptr(op->src_addr), len))
			return -EFAULT;
		op->src_mm = current->mm;
	}
	mmgrab(op->src_mm);
	return 0;
}

static int dma_ep_reserve(struct coopmpi_dma_ep *dep, u64 len, bool cq)
{
	int ret = 0;

	spin_lock(&dep->lock);
	if (dep->closing)
		ret = -ESHUTDOWN;
	else if (dep->inflight >= dma_max_inflight ||
		 len > dma_max_bytes - dep->inflight_bytes)
		ret = -EAGAIN;
	/*
	 * A head beyond what was posted counts as full: never overwrite.
	 * Acquire: the consumer read an entry before it released its slot.
	 */
	else if (cq && dep->cq_reserved - smp_load_acquire(&dep->cq_hdr->head) >=
		       dep->cq_entries)
		ret = -EAGAIN;
	if (!ret) {
		dep->inflight++;
		dep->inflight_bytes += len;
		if (cq)
			dep->cq_reserved++;
	}
	spin_unlock(&dep->lock);
	return ret;
}

/* Validates, references and queues one descriptor. */
static int dma_submit_one(struct coopmpi_ep *ep,
			  const struct coopmpi_dma_desc *dd,
			  struct io_uring_cmd *ioucmd)
{
	struct coopmpi_domain *d = coopmpi_ep_domain(ep);
	struct coopmpi_dma_ep *dep = ep->dma;
	struct coopmpi_dma_op *op;
	int ret;

	ret = desc_check(dd);
	if (ret)
		return ret;
	if (!current->mm)	/* its pins are charged there (pin.c) */
		return -EFAULT;
	op = kzalloc(sizeof(*op), GFP_KERNEL_ACCOUNT);
	if (!op)
		return -ENOMEM;
	op->user = d->user;
	op->length = dd->length;
	ret = op_lookup(op, d, dd);
	if (!ret)
		ret = op_user_charge(op);
	if (!ret) {
		ret = dma_ep_reserve(dep, dd->length, !ioucmd);
		if (ret)
			op_user_uncharge(op);
	}
	if (ret) {
		op_put_refs(op);
		kfree(op);
		return ret;
	}
	coopmpi_dma_sched_init_op(op);
	op->dep = dep;
	op->domain = d;
	op->ioucmd = ioucmd;
	op->tag = dd->user_tag;
	op->deadline = jiffies + msecs_to_jiffies(READ_ONCE(dma_deadline_ms));
	/* io-wq and SQPOLL threads share the submitter's signal_struct */
	op->task = get_task_struct(current);
	op->pin_mm = current->mm;
	mmgrab(op->pin_mm);
	op->pin_limit = coopmpi_pin_limit();
	op_account(op, 1);
	coopmpi_dma_sched_ready(op);
	return 0;
}

/* A record of the caller's size: at least v1, at most a page. */
static int desc_copy(struct coopmpi_dma_desc *dd, const void __user *src,
		     u32 size)
{
	if (size < sizeof(*dd) || size > PAGE_SIZE)
		return -EINVAL;
	return copy_struct_from_user(dd, sizeof(*dd), src, size);
}

int coopmpi_ioc_dma_submit(struct coopmpi_ep *ep, void *arg)
{
	struct coopmpi_dma_submit *s = arg;
	const u8 __user *descs = u64_to_user_ptr(s->descs);
	struct coopmpi_dma_desc dd;
	int ret = 0;

	if (s->reserved0 || memchr_inv(s->reserved, 0, sizeof(s->reserved)))
		return -EINVAL;
	if (s->count > COOPMPI_DMA_MAX_BATCH ||
	    (s->count && (s->desc_size < sizeof(dd) ||
			  s->desc_size > PAGE_SIZE)))
		return -EINVAL;
	if (!ep->dma)
		return -EOPNOTSUPP;
	for (s->done = 0; s->done < s->count; s->done++) {
		ret = desc_copy(&dd, descs + (size_t)s->done * s->desc_size,
				s->desc_size);
		if (!ret)
			ret = dma_submit_one(ep, &dd, NULL);
		if (ret)
			break;
	}
	return ret;
}

/*
 * IORING_OP_URING_CMD: one descriptor, completed by io_uring_cmd_done().
 * sqe->cmd is shared with user space: copy it once, then validate.
 */
int coopmpi_dma_uring_cmd(struct io_uring_cmd *ioucmd,
			  unsigned int issue_flags)
{
	struct coopmpi_ep *ep = ioucmd->file->private_data;
	struct coopmpi_dma_uring_cmd uc;
	struct coopmpi_domain *d;
	struct coopmpi_dma_desc dd;
	int ret;

	BUILD_BUG_ON(sizeof(uc) != 16);
	BUILD_BUG_ON(sizeof(struct dma_uring_pdu) > sizeof(ioucmd->pdu));

	if (ioucmd->cmd_op != COOPMPI_URING_CMD_DMA)
		return -ENOTTY;
	d = coopmpi_ep_domain_checked(ep);
	if (IS_ERR(d))
		return PTR_ERR(d);
	if (!ep->dma)
		return -EOPNOTSUPP;
	if (ioucmd->flags || issue_flags & IO_URING_F_IOPOLL)
		return -EINVAL;
	memcpy(&uc, ioucmd->cmd, sizeof(uc));
	if (uc.flags)
		return -EINVAL;
	/* SQE128: 64 more command bytes, reserved */
	if (issue_flags & IO_URING_F_SQE128 &&
	    memchr_inv(ioucmd->cmd + sizeof(uc), 0, 80 - sizeof(uc)))
		return -EINVAL;
	ret = desc_copy(&dd, u64_to_user_ptr(uc.desc), uc.desc_size);
	if (!ret)
		ret = dma_submit_one(ep, &dd, ioucmd);
	return ret ? ret : -EIOCBQUEUED;
}

int coopmpi_ioc_dma_info(struct coopmpi_ep *ep, void *arg)
{
	struct coopmpi_dma_info *info = arg;

	if (memchr_inv(info->reserved, 0, sizeof(info->reserved)))
		return -EINVAL;
	info->engine = dma_engine;
	info->max_inflight = dma_max_inflight;
	info->max_bytes = dma_max_bytes;
	info->max_length = dma_max_length();
	info->cq_entries = dma_cq_entries;
	info->cqe_size = sizeof(struct coopmpi_dma_cqe);
	info->cq_bytes = dma_cq_entries ? coopmpi_dma_cq_bytes(dma_cq_entries) :
					  0;
	info->desc_size = sizeof(struct coopmpi_dma_desc);
	info->notify_align = COOPMPI_DMA_NOTIFY_ALIGN;
	return 0;
}
