// SPDX-License-Identifier: GPL-2.0
/*
 * Module entry, /dev/coopmpi file operations, ioctl dispatch.
 *
 * One open file is one endpoint.  Every ioctl argument is an extensible
 * struct (size is the version), so the dispatcher does the generic part
 * once: size, known flags, join state, copy in and copy out.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/log2.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/nospec.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/stringify.h>
#include <linux/uaccess.h>

#include "coopmpi.h"

unsigned int coopmpi_mbox_slots = 1024;
module_param_named(mbox_slots, coopmpi_mbox_slots, uint, 0444);
MODULE_PARM_DESC(mbox_slots, "mailbox ring slots per endpoint (power of two, 64..65536)");

unsigned int coopmpi_max_endpoints = 256;
module_param_named(max_endpoints, coopmpi_max_endpoints, uint, 0444);
MODULE_PARM_DESC(max_endpoints, "endpoints per domain (2..4096)");

unsigned int coopmpi_copy_chunk_pages = 64;
module_param_named(copy_chunk_pages, coopmpi_copy_chunk_pages, uint, 0444);
MODULE_PARM_DESC(copy_chunk_pages, "pages pinned at a time by COPY (1..1024)");

unsigned int coopmpi_max_regions = 4096;
module_param_named(max_regions, coopmpi_max_regions, uint, 0444);
MODULE_PARM_DESC(max_regions, "registered regions per endpoint (1..1048576)");

unsigned int coopmpi_max_windows = 256;
module_param_named(max_windows, coopmpi_max_windows, uint, 0444);
MODULE_PARM_DESC(max_windows, "windows alive per endpoint (1..512)");

static int ioc_info(struct coopmpi_ep *ep, void *arg)
{
	struct coopmpi_info *info = arg;

	if (info->reserved0 ||
	    memchr_inv(info->reserved, 0, sizeof(info->reserved)))
		return -EINVAL;
	info->abi_version = COOPMPI_ABI_VERSION;
	info->max_endpoints = coopmpi_max_endpoints;
	info->ring_slots = coopmpi_mbox_slots;
	info->msg_size = COOPMPI_MSG_SIZE;
	info->ring_bytes = coopmpi_ring_bytes(coopmpi_mbox_slots);
	info->counters_bytes = coopmpi_counters_bytes(coopmpi_max_endpoints);
	info->copy_chunk_pages = coopmpi_copy_chunk_pages;
	info->dma_engine = coopmpi_dma_engine_id();
	info->max_windows = COOPMPI_WINDOWS ? coopmpi_max_windows : 0;
	return 0;
}

/* Every argument struct starts like this. */
struct coopmpi_arg_head {
	__u32 size;
	__u32 flags;
};

union coopmpi_args {
	struct coopmpi_arg_head head;
	struct coopmpi_info info;
	struct coopmpi_join join;
	struct coopmpi_ep_query ep_query;
	struct coopmpi_mbox_xfer xfer;
	struct coopmpi_doorbell doorbell;
	struct coopmpi_region_register reg;
	struct coopmpi_region_deregister dereg;
	struct coopmpi_copy copy;
	struct coopmpi_dma_info dma_info;
	struct coopmpi_dma_submit dma_submit;
	struct coopmpi_window_attach window_attach;
	struct coopmpi_window_detach window_detach;
};

struct coopmpi_ioctl {
	unsigned int cmd;
	unsigned int ksize;	/* also the minimum: all structs are v1 */
	u32 flags;		/* known flag bits */
	bool unjoined;		/* allowed before JOIN */
	int (*fn)(struct coopmpi_ep *ep, void *arg);
};

#define COOPMPI_IOCTL(_cmd, _type, _flags, _unjoined, _fn)		\
	[_IOC_NR(_cmd)] = { .cmd = _cmd, .ksize = sizeof(_type),	\
			    .flags = _flags, .unjoined = _unjoined,	\
			    .fn = _fn }

static const struct coopmpi_ioctl coopmpi_ioctls[] = {
	COOPMPI_IOCTL(COOPMPI_IOC_INFO, struct coopmpi_info, 0, true,
		      ioc_info),
	COOPMPI_IOCTL(COOPMPI_IOC_JOIN, struct coopmpi_join,
		      COOPMPI_JOIN_FLAGS, true, coopmpi_ioc_join),
	COOPMPI_IOCTL(COOPMPI_IOC_EP_QUERY, struct coopmpi_ep_query, 0, false,
		      coopmpi_ioc_ep_query),
	COOPMPI_IOCTL(COOPMPI_IOC_MBOX_SEND, struct coopmpi_mbox_xfer, 0,
		      false, coopmpi_ioc_mbox_send),
	COOPMPI_IOCTL(COOPMPI_IOC_MBOX_RECV, struct coopmpi_mbox_xfer,
		      COOPMPI_MBOX_WAIT, false, coopmpi_ioc_mbox_recv),
	COOPMPI_IOCTL(COOPMPI_IOC_DOORBELL, struct coopmpi_doorbell, 0, false,
		      coopmpi_ioc_doorbell),
	COOPMPI_IOCTL(COOPMPI_IOC_REGION_REGISTER,
		      struct coopmpi_region_register, COOPMPI_REGION_FLAGS,
		      false, coopmpi_ioc_region_register),
	COOPMPI_IOCTL(COOPMPI_IOC_REGION_DEREGISTER,
		      struct coopmpi_region_deregister, 0, false,
		      coopmpi_ioc_region_deregister),
	COOPMPI_IOCTL(COOPMPI_IOC_COPY, struct coopmpi_copy, COOPMPI_COPY_FLAGS,
		      false, coopmpi_ioc_copy),
	COOPMPI_IOCTL(COOPMPI_IOC_WINDOW_ATTACH, struct coopmpi_window_attach,
		      COOPMPI_WINDOW_ATTACH_FLAGS, false,
		      coopmpi_ioc_window_attach),
	COOPMPI_IOCTL(COOPMPI_IOC_WINDOW_DETACH, struct coopmpi_window_detach,
		      0, false, coopmpi_ioc_window_detach),
	COOPMPI_IOCTL(COOPMPI_IOC_DMA_INFO, struct coopmpi_dma_info, 0, true,
		      coopmpi_ioc_dma_info),
	COOPMPI_IOCTL(COOPMPI_IOC_DMA_SUBMIT, struct coopmpi_dma_submit, 0,
		      false, coopmpi_ioc_dma_submit),
};

static const struct coopmpi_ioctl *ioctl_lookup(unsigned int cmd)
{
	unsigned int nr = _IOC_NR(cmd);
	const struct coopmpi_ioctl *desc;

	if (_IOC_TYPE(cmd) != COOPMPI_IOC_MAGIC ||
	    nr >= ARRAY_SIZE(coopmpi_ioctls))
		return NULL;
	desc = &coopmpi_ioctls[array_index_nospec(nr, ARRAY_SIZE(coopmpi_ioctls))];
	/* The size bits may differ (newer struct), the direction may not. */
	if (!desc->fn || _IOC_DIR(cmd) != _IOC_DIR(desc->cmd))
		return NULL;
	return desc;
}

static long coopmpi_ioctl(struct file *file, unsigned int cmd,
			  unsigned long arg)
{
	struct coopmpi_ep *ep = file->private_data;
	void __user *uarg = (void __user *)arg;
	const struct coopmpi_ioctl *desc;
	size_t usize = _IOC_SIZE(cmd);
	union coopmpi_args karg;
	long ret;

	desc = ioctl_lookup(cmd);
	if (!desc)
		return -ENOTTY;
	if (!desc->unjoined) {
		struct coopmpi_domain *d = coopmpi_ep_domain_checked(ep);

		if (IS_ERR(d))
			return PTR_ERR(d);
	}
	if (usize < desc->ksize)
		return -EINVAL;
	ret = copy_struct_from_user(&karg, desc->ksize, uarg, usize);
	if (ret)
		return ret;
	if (karg.head.size != usize || karg.head.flags & ~desc->flags)
		return -EINVAL;

	ret = desc->fn(ep, &karg);
	/* Out fields (e.g. COPY's copied) are meaningful on error too. */
	if ((_IOC_DIR(cmd) & _IOC_READ) &&
	    copy_to_user(uarg, &karg, desc->ksize) && !ret)
		ret = -EFAULT;
	return ret;
}

static int coopmpi_open(struct inode *inode, struct file *file)
{
	struct coopmpi_ep *ep;
	int ret;

	ep = kzalloc(sizeof(*ep), GFP_KERNEL_ACCOUNT);
	if (!ep)
		return -ENOMEM;
	ep->user = coopmpi_user_get(current_euid());
	ret = ep->user ? coopmpi_user_charge(ep->user,
					     COOPMPI_USER_ENDPOINTS, 1) :
			 -ENOMEM;
	if (ret) {
		coopmpi_user_put(ep->user);
		kfree(ep);
		return ret;
	}
	mutex_init(&ep->lock);
	mutex_init(&ep->recv_lock);
	INIT_LIST_HEAD(&ep->regions);
	xa_init_flags(&ep->windows, XA_FLAGS_ALLOC);
	ep->mapping = file->f_mapping;
	file->private_data = ep;
	return stream_open(inode, file);
}

static int coopmpi_release(struct inode *inode, struct file *file)
{
	struct coopmpi_ep *ep = file->private_data;

	coopmpi_ep_release(ep);
	coopmpi_user_uncharge(ep->user, COOPMPI_USER_ENDPOINTS, 1);
	coopmpi_user_put(ep->user);
	kfree(ep);
	return 0;
}

static int coopmpi_mmap(struct file *file, struct vm_area_struct *vma)
{
	const unsigned long ring_base = COOPMPI_MMAP_RING_BASE >> PAGE_SHIFT;
	const unsigned long dma_cq = COOPMPI_MMAP_DMA_CQ >> PAGE_SHIFT;
	const unsigned long window = COOPMPI_MMAP_WINDOW_BASE >> PAGE_SHIFT;
	const unsigned long state = COOPMPI_MMAP_WINDOW_STATE >> PAGE_SHIFT;
	struct coopmpi_ep *ep = file->private_data;
	struct coopmpi_domain *d = coopmpi_ep_domain_checked(ep);

	if (IS_ERR(d))
		return PTR_ERR(d);
	/* A private copy of a ring or the counters would silently diverge. */
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (vma->vm_pgoff >= window)
		return coopmpi_window_mmap(ep, vma, vma->vm_pgoff);
	if (vma->vm_pgoff == state)
		return coopmpi_window_state_mmap(ep, vma);
	if (vma->vm_pgoff > state)
		return -EINVAL;
	if (vma->vm_pgoff >= ring_base)
		return coopmpi_ring_mmap(d, vma, vma->vm_pgoff - ring_base);
	if (vma->vm_pgoff >= dma_cq)
		return coopmpi_dma_cq_mmap(ep, vma, vma->vm_pgoff - dma_cq);
	return coopmpi_counters_mmap(d, vma, vma->vm_pgoff);
}

static __poll_t coopmpi_poll(struct file *file, poll_table *wait)
{
	struct coopmpi_ep *ep = file->private_data;

	if (!coopmpi_ep_domain(ep))
		return EPOLLERR;
	/* EPOLLIN: mailbox; EPOLLPRI: DMA completions in the CQ */
	return coopmpi_ring_poll(ep, file, wait) |
	       coopmpi_dma_poll(ep, file, wait);
}

static const struct file_operations coopmpi_fops = {
	.owner = THIS_MODULE,
	.open = coopmpi_open,
	.release = coopmpi_release,
	.unlocked_ioctl = coopmpi_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = coopmpi_mmap,
	.poll = coopmpi_poll,
	.uring_cmd = coopmpi_dma_uring_cmd,
	.llseek = no_llseek,
};

static struct miscdevice coopmpi_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = COOPMPI_DEVICE_NAME,
	.fops = &coopmpi_fops,
	.mode = 0666,
};

static int __init param_check(const char *name, unsigned int val,
			      unsigned int min, unsigned int max, bool pow2)
{
	if (val >= min && val <= max && (!pow2 || is_power_of_2(val)))
		return 0;
	pr_err("%s=%u invalid: must be %s%u..%u\n", name, val,
	       pow2 ? "a power of two in " : "", min, max);
	return -EINVAL;
}

static int __init coopmpi_params_check(void)
{
	return param_check("mbox_slots", coopmpi_mbox_slots, 64, 65536, true) ?:
	       param_check("max_endpoints", coopmpi_max_endpoints, 2, 4096,
			   false) ?:
	       param_check("copy_chunk_pages", coopmpi_copy_chunk_pages, 1,
			   1024, false) ?:
	       param_check("max_regions", coopmpi_max_regions, 1, 1 << 20,
			   false) ?:
	       param_check("max_windows", coopmpi_max_windows, 1,
			   PAGE_SIZE / sizeof(u64), false);
}

static int __init coopmpi_init(void)
{
	int ret;

	ret = coopmpi_params_check();
	if (ret)
		return ret;
	ret = coopmpi_dma_init();
	if (ret)
		return ret;
	ret = coopmpi_window_init();
	if (ret)
		goto err_dma;
	ret = coopmpi_sysfs_init();
	if (ret)
		goto err_window;
	/* Last: the device is usable the moment it appears. */
	ret = misc_register(&coopmpi_misc);
	if (ret)
		goto err_sysfs;
	return 0;
err_sysfs:
	coopmpi_sysfs_exit();
err_window:
	coopmpi_window_exit();
err_dma:
	coopmpi_dma_exit();
	return ret;
}

static void __exit coopmpi_exit(void)
{
	misc_deregister(&coopmpi_misc);
	coopmpi_sysfs_exit();
	coopmpi_window_exit();
	coopmpi_dma_exit();
}

module_init(coopmpi_init);
module_exit(coopmpi_exit);

MODULE_DESCRIPTION("coopmpi: cooperative intra-node MPI mailboxes and single-copy transfers");
MODULE_LICENSE("GPL");
MODULE_VERSION(COOPMPI_VERSION);
MODULE_INFO(abi, __stringify(COOPMPI_ABI_VERSION));
