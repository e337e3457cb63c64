// SPDX-License-Identifier: GPL-2.0
/*
 * Per-user accounting: what each effective uid holds of the driver
 * (endpoints, domains, DMA descriptors and bytes in flight), bounded by
 * module parameters that root may change at run time, so that one user
 * cannot take the whole node from the others.  A limit lowered below
 * what a user holds refuses new charges until it drops back.
 *
 * A struct coopmpi_user lives while something holds it: each endpoint
 * (the uid that opened it) and each domain (its owner).  It also carries
 * the DMA scheduler's queue of that user (dma_sched.c).
 */
#include <linux/hashtable.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

#include "coopmpi.h"

struct user_limit {
	u64 min, max;
	u64 val;
	int err;		/* what a charge beyond it fails with */
};

static struct user_limit user_limits[COOPMPI_USER_NR] = {
	[COOPMPI_USER_ENDPOINTS] = { 1, 1 << 20, 4096, -EMFILE },
	[COOPMPI_USER_DOMAINS] = { 1, 1 << 20, 1024, -EDQUOT },
	[COOPMPI_USER_DMA_OPS] = { 1, 1 << 24, 4096, -EAGAIN },
	[COOPMPI_USER_DMA_BYTES] = { 1 << 20, 1ULL << 50, 16ULL << 30, -EAGAIN },
	[COOPMPI_USER_WINDOWS] = { 1, 1 << 22, 16384, -EDQUOT },
};

static int user_limit_set(const char *val, const struct kernel_param *kp)
{
	struct user_limit *l = kp->arg;
	u64 v;
	int ret;

	ret = kstrtou64(val, 0, &v);
	if (ret)
		return ret;
	if (v < l->min || v > l->max)
		return -EINVAL;
	WRITE_ONCE(l->val, v);
	return 0;
}

static int user_limit_get(char *buf, const struct kernel_param *kp)
{
	const struct user_limit *l = kp->arg;

	return sysfs_emit(buf, "%llu\n", READ_ONCE(l->val));
}

static const struct kernel_param_ops user_limit_ops = {
	.set = user_limit_set,
	.get = user_limit_get,
};

#define USER_LIMIT_PARAM(_name, _res, _desc)				\
	module_param_cb(_name, &user_limit_ops, &user_limits[_res], 0644); \
	MODULE_PARM_DESC(_name, _desc)

USER_LIMIT_PARAM(user_max_endpoints, COOPMPI_USER_ENDPOINTS,
		 "endpoints (open files of /dev/coopmpi) per user; more fail with EMFILE (1..1048576)");
USER_LIMIT_PARAM(user_max_domains, COOPMPI_USER_DOMAINS,
		 "domains per owner; creating more fails with EDQUOT (1..1048576)");
USER_LIMIT_PARAM(user_max_dma_inflight, COOPMPI_USER_DMA_OPS,
		 "DMA descriptors in flight per user; more answer EAGAIN (1..16777216)");
USER_LIMIT_PARAM(user_max_dma_bytes, COOPMPI_USER_DMA_BYTES,
		 "DMA bytes in flight per user; more answer EAGAIN (1 MiB..1 PiB)");
USER_LIMIT_PARAM(user_max_windows, COOPMPI_USER_WINDOWS,
		 "windows alive per user; more attaches fail with EDQUOT (1..4194304)");

static DEFINE_HASHTABLE(users, 6);
static DEFINE_SPINLOCK(users_lock);

static struct coopmpi_user *user_find(kuid_t uid)
{
	struct coopmpi_user *u;

	hash_for_each_possible(users, u, node, __kuid_val(uid))
		if (uid_eq(u->uid, uid) && refcount_inc_not_zero(&u->ref))
			return u;
	return NULL;
}

struct coopmpi_user *coopmpi_user_get(kuid_t uid)
{
	struct coopmpi_user *u, *fresh;

	spin_lock(&users_lock);
	u = user_find(uid);
	spin_unlock(&users_lock);
	if (u)
		return u;

	/* Outlives the task that makes it: not charged to its cgroup. */
	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
	if (!fresh)
		return NULL;
	fresh->uid = uid;
	refcount_set(&fresh->ref, 1);
	INIT_LIST_HEAD(&fresh->dma_ready);
	INIT_LIST_HEAD(&fresh->dma_turn);

	spin_lock(&users_lock);
	u = user_find(uid);
	if (!u) {
		hash_add(users, &fresh->node, __kuid_val(uid));
		u = fresh;
		fresh = NULL;
	}
	spin_unlock(&users_lock);
	kfree(fresh);
	return u;
}

void coopmpi_user_put(struct coopmpi_user *u)
{
	if (!u || !refcount_dec_and_lock(&u->ref, &users_lock))
		return;
	hash_del(&u->node);
	spin_unlock(&users_lock);
	WARN_ON_ONCE(!list_empty(&u->dma_ready));
	kfree(u);
}

/* Takes @n of @res for @u: 0, or the limit's error with nothing taken. */
int coopmpi_user_charge(struct coopmpi_user *u, enum coopmpi_user_res res,
			u64 n)
{
	const struct user_limit *l = &user_limits[res];
	u64 limit = READ_ONCE(l->val);
	atomic64_t *held = &u->held[res];
	s64 old = atomic64_read(held);

	do {
		if (n > limit || (u64)old > limit - n)
			return l->err;
	} while (!atomic64_try_cmpxchg(held, &old, old + n));
	return 0;
}

void coopmpi_user_uncharge(struct coopmpi_user *u, enum coopmpi_user_res res,
			   u64 n)
{
	WARN_ON_ONCE(atomic64_sub_return(n, &u->held[res]) < 0);
}
