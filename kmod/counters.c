// SPDX-License-Identifier: GPL-2.0
/*
 * The per-domain counters area and /sys/kernel/coopmpi.
 *
 * The counters area is written by user space with atomics, so the kernel
 * only ever reads it with READ_ONCE and resets fields with WRITE_ONCE:
 * whatever is in there is reported, never trusted.
 */
#include <linux/cred.h>
#include <linux/kobject.h>
#include <linux/mm.h>
#include <linux/pid.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/uidgid.h>

#include "coopmpi.h"

struct coopmpi_stats coopmpi_stats;

static struct kobject *coopmpi_kobj;
static struct kobject *coopmpi_domains_kobj;

static void counters_free(struct coopmpi_shm *shm)
{
	kfree(shm);
}

int coopmpi_counters_create(struct coopmpi_domain *d)
{
	struct coopmpi_counters_hdr *hdr;
	struct coopmpi_shm *shm;

	shm = kzalloc(sizeof(*shm), GFP_KERNEL);
	if (!shm)
		return -ENOMEM;
	if (coopmpi_shm_alloc(shm, coopmpi_counters_bytes(d->max_endpoints),
			      counters_free)) {
		kfree(shm);
		return -ENOMEM;
	}
	hdr = shm->mem;
	hdr->magic = COOPMPI_COUNTERS_MAGIC;
	hdr->version = COOPMPI_ABI_VERSION;
	hdr->max_endpoints = d->max_endpoints;
	hdr->domain_id = d->id;
	d->offload = (void *)(hdr + 1);
	d->load = (void *)(d->offload + 1);
	d->counters = shm;
	return 0;
}

void coopmpi_counters_destroy(struct coopmpi_domain *d)
{
	if (d->counters)
		coopmpi_shm_put(d->counters);
	d->counters = NULL;
}

/* Field by field: user space may be doing atomics on it right now. */
void coopmpi_counters_slot_reset(struct coopmpi_domain *d, u32 ep_id,
				 pid_t pid, u32 generation)
{
	struct coopmpi_load_slot *s = &d->load[ep_id];

	WRITE_ONCE(s->pending_ops, 0);
	WRITE_ONCE(s->pending_bytes, 0);
	WRITE_ONCE(s->kernel_ops, 0);
	WRITE_ONCE(s->kernel_bytes, 0);
	WRITE_ONCE(s->total_ops, 0);
	WRITE_ONCE(s->total_bytes, 0);
	WRITE_ONCE(s->reserved, 0);
	WRITE_ONCE(s->generation, generation);
	WRITE_ONCE(s->pid, pid);
}

int coopmpi_counters_mmap(struct coopmpi_domain *d,
			  struct vm_area_struct *vma, unsigned long pgoff)
{
	return coopmpi_shm_mmap(d->counters, vma, pgoff);
}

/* ------------------------------------------------------------------ */
/* /sys/kernel/coopmpi/domains/<domain_id>/                            */
/* ------------------------------------------------------------------ */

static struct coopmpi_domain *kobj_domain(struct kobject *kobj)
{
	return container_of(kobj, struct coopmpi_domain, kobj);
}

static ssize_t uid_show(struct kobject *kobj, struct kobj_attribute *attr,
			char *buf)
{
	return sysfs_emit(buf, "%u\n", from_kuid_munged(current_user_ns(),
							 kobj_domain(kobj)->uid));
}

static ssize_t endpoints_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(kobj_domain(kobj)->users));
}

static ssize_t offload_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	struct coopmpi_offload_counters *o = kobj_domain(kobj)->offload;

	return sysfs_emit(buf, "dma_ops %llu\ndma_bytes %llu\nhca_ops %llu\nhca_bytes %llu\n",
			  READ_ONCE(o->dma_ops), READ_ONCE(o->dma_bytes),
			  READ_ONCE(o->hca_ops), READ_ONCE(o->hca_bytes));
}

/*
 * A domain's files name its processes and their traffic: readable by its
 * owner (domain_get_ownership) and root only, whatever hidepid says.
 */
static struct kobj_attribute domain_attr_uid = __ATTR(uid, 0400, uid_show, NULL);
static struct kobj_attribute domain_attr_endpoints =
	__ATTR(endpoints, 0400, endpoints_show, NULL);
static struct kobj_attribute domain_attr_offload =
	__ATTR(offload, 0400, offload_show, NULL);

#define LOAD_HEADER \
	"# ep pid pending_ops pending_bytes kernel_ops kernel_bytes total_ops total_bytes\n"
/* Two u32 and six u64 in decimal, eight separators. */
#define LOAD_LINE_MAX	(2 * 10 + 6 * 20 + 8)

static size_t load_format(struct coopmpi_domain *d, char *text, size_t cap)
{
	size_t len = scnprintf(text, cap, "%s", LOAD_HEADER);
	u32 i;

	mutex_lock(&d->lock);
	for (i = 0; i < d->max_endpoints; i++) {
		struct coopmpi_load_slot *s = &d->load[i];
		struct coopmpi_ep *ep = d->slots[i].ep;

		if (!ep)
			continue;
		len += scnprintf(text + len, cap - len,
				 "%u %d %llu %llu %llu %llu %llu %llu\n", i,
				 pid_vnr(ep->pid), READ_ONCE(s->pending_ops),
				 READ_ONCE(s->pending_bytes),
				 READ_ONCE(s->kernel_ops),
				 READ_ONCE(s->kernel_bytes),
				 READ_ONCE(s->total_ops),
				 READ_ONCE(s->total_bytes));
	}
	mutex_unlock(&d->lock);
	return len;
}

/*
 * A binary attribute because a full domain does not fit in the one page
 * a text attribute gets; each read() window is formatted afresh.
 */
static ssize_t load_read(struct file *file, struct kobject *kobj,
			 struct bin_attribute *attr, char *buf, loff_t off,
			 size_t count)
{
	struct coopmpi_domain *d = kobj_domain(kobj);
	size_t cap = sizeof(LOAD_HEADER) + (size_t)d->max_endpoints *
					    LOAD_LINE_MAX;
	size_t len;
	char *text;

	text = kvmalloc(cap, GFP_KERNEL);
	if (!text)
		return -ENOMEM;
	len = load_format(d, text, cap);
	if (off >= len) {
		count = 0;
	} else {
		count = min_t(size_t, count, len - off);
		memcpy(buf, text + off, count);
	}
	kvfree(text);
	return count;
}

static struct bin_attribute domain_attr_load =
	__BIN_ATTR(load, 0400, load_read, NULL, 0);

static struct attribute *domain_attrs[] = {
	&domain_attr_uid.attr,
	&domain_attr_endpoints.attr,
	&domain_attr_offload.attr,
	NULL,
};

static struct bin_attribute *domain_bin_attrs[] = {
	&domain_attr_load,
	NULL,
};

static const struct attribute_group domain_group = {
	.attrs = domain_attrs,
	.bin_attrs = domain_bin_attrs,
};
__ATTRIBUTE_GROUPS(domain);

static void domain_kobj_release(struct kobject *kobj)
{
	coopmpi_domain_free(kobj_domain(kobj));
}

/* The domain's directory and files belong to its owner's uid. */
static void domain_get_ownership(struct kobject *kobj, kuid_t *uid,
				 kgid_t *gid)
{
	*uid = kobj_domain(kobj)->uid;
}

static struct kobj_type coopmpi_domain_ktype = {
	.release = domain_kobj_release,
	.sysfs_ops = &kobj_sysfs_ops,
	.default_groups = domain_groups,
	.get_ownership = domain_get_ownership,
};

void coopmpi_domain_sysfs_init(struct coopmpi_domain *d)
{
	kobject_init(&d->kobj, &coopmpi_domain_ktype);
}

int coopmpi_domain_sysfs_add(struct coopmpi_domain *d)
{
	return kobject_add(&d->kobj, coopmpi_domains_kobj, "%u", d->id);
}

/* Waits for running show()s: call with no lock they might take. */
void coopmpi_domain_sysfs_del(struct coopmpi_domain *d)
{
	kobject_del(&d->kobj);
}

void coopmpi_domain_sysfs_put(struct coopmpi_domain *d)
{
	kobject_put(&d->kobj);
}

/* ------------------------------------------------------------------ */
/* /sys/kernel/coopmpi/ node-wide files                                */
/* ------------------------------------------------------------------ */

static u64 live_ring_sum(atomic64_t *retired, size_t field)
{
	u64 sum;

	/* One lock for both terms: a closing ring moves between them. */
	mutex_lock(&coopmpi_lock);
	sum = atomic64_read(retired) + coopmpi_sum_live_rings(field);
	mutex_unlock(&coopmpi_lock);
	return sum;
}

#define NODE_ATTR_U64(_name, _expr)					\
static ssize_t node_##_name##_show(struct kobject *kobj,		\
				   struct kobj_attribute *attr,		\
				   char *buf)				\
{									\
	return sysfs_emit(buf, "%llu\n", (u64)(_expr));			\
}									\
static struct kobj_attribute node_attr_##_name =			\
	__ATTR(_name, 0444, node_##_name##_show, NULL)

NODE_ATTR_U64(version, COOPMPI_ABI_VERSION);
NODE_ATTR_U64(endpoints, atomic_read(&coopmpi_stats.endpoints));
NODE_ATTR_U64(nr_domains, atomic_read(&coopmpi_stats.domains));
NODE_ATTR_U64(mbox_sent,
	      live_ring_sum(&coopmpi_stats.retired_sent,
			    offsetof(struct coopmpi_ring_hdr, tail)));
NODE_ATTR_U64(mbox_full,
	      live_ring_sum(&coopmpi_stats.retired_full,
			    offsetof(struct coopmpi_ring_hdr, full_events)));
NODE_ATTR_U64(mbox_dropped, atomic64_read(&coopmpi_stats.dropped));
NODE_ATTR_U64(copies, atomic64_read(&coopmpi_stats.copies));
NODE_ATTR_U64(copy_bytes, atomic64_read(&coopmpi_stats.copy_bytes));
NODE_ATTR_U64(copy_errors, atomic64_read(&coopmpi_stats.copy_errors));
NODE_ATTR_U64(dma_ops, atomic64_read(&coopmpi_stats.dma_ops));
NODE_ATTR_U64(dma_bytes, atomic64_read(&coopmpi_stats.dma_bytes));
NODE_ATTR_U64(dma_completed, atomic64_read(&coopmpi_stats.dma_completed));
NODE_ATTR_U64(dma_errors, atomic64_read(&coopmpi_stats.dma_errors));

static ssize_t dma_engine_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n", coopmpi_dma_engine_name());
}

static ssize_t dma_channel_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n", coopmpi_dma_channel_name());
}

static struct kobj_attribute node_attr_dma_engine = __ATTR_RO(dma_engine);
static struct kobj_attribute node_attr_dma_channel = __ATTR_RO(dma_channel);

static struct attribute *node_attrs[] = {
	&node_attr_version.attr,
	&node_attr_endpoints.attr,
	&node_attr_nr_domains.attr,
	&node_attr_mbox_sent.attr,
	&node_attr_mbox_full.attr,
	&node_attr_mbox_dropped.attr,
	&node_attr_copies.attr,
	&node_attr_copy_bytes.attr,
	&node_attr_copy_errors.attr,
	&node_attr_dma_engine.attr,
	&node_attr_dma_channel.attr,
	&node_attr_dma_ops.attr,
	&node_attr_dma_bytes.attr,
	&node_attr_dma_completed.attr,
	&node_attr_dma_errors.attr,
	NULL,
};

static const struct attribute_group node_group = {
	.attrs = node_attrs,
};

int coopmpi_sysfs_init(void)
{
	int ret;

	coopmpi_kobj = kobject_create_and_add("coopmpi", kernel_kobj);
	if (!coopmpi_kobj)
		return -ENOMEM;
	ret = sysfs_create_group(coopmpi_kobj, &node_group);
	if (ret)
		goto err;
	coopmpi_domains_kobj = kobject_create_and_add("domains", coopmpi_kobj);
	if (!coopmpi_domains_kobj) {
		ret = -ENOMEM;
		goto err;
	}
	return 0;
err:
	kobject_put(coopmpi_kobj);
	return ret;
}

void coopmpi_sysfs_exit(void)
{
	kobject_put(coopmpi_domains_kobj);
	kobject_put(coopmpi_kobj);
}
