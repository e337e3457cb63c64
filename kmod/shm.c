// SPDX-License-Identifier: GPL-2.0
/*
 * Refcounted vmalloc_user() memory shared with user space.
 *
 * Every vma mapping an object holds a reference, so the pages stay valid
 * for as long as any process can touch them, whatever happens to the
 * endpoint or domain that created them.
 */
#include <linux/mm.h>
#include <linux/vmalloc.h>

#include "coopmpi.h"

int coopmpi_shm_alloc(struct coopmpi_shm *shm, size_t bytes,
		      void (*free)(struct coopmpi_shm *shm))
{
	shm->mem = vmalloc_user(bytes);
	if (!shm->mem)
		return -ENOMEM;
	shm->bytes = bytes;
	shm->free = free;
	kref_init(&shm->ref);
	return 0;
}

static void shm_release(struct kref *ref)
{
	struct coopmpi_shm *shm = container_of(ref, struct coopmpi_shm, ref);

	vfree(shm->mem);
	shm->mem = NULL;
	shm->free(shm);
}

void coopmpi_shm_put(struct coopmpi_shm *shm)
{
	kref_put(&shm->ref, shm_release);
}

/* Called on vma split and mremap: each vma carries its own reference. */
static void shm_vm_open(struct vm_area_struct *vma)
{
	struct coopmpi_shm *shm = vma->vm_private_data;

	kref_get(&shm->ref);
}

static void shm_vm_close(struct vm_area_struct *vma)
{
	coopmpi_shm_put(vma->vm_private_data);
}

static const struct vm_operations_struct coopmpi_shm_vm_ops = {
	.open = shm_vm_open,
	.close = shm_vm_close,
};

/* Maps [pgoff, pgoff + vma size) of the object; takes a ref for the vma. */
int coopmpi_shm_mmap(struct coopmpi_shm *shm, struct vm_area_struct *vma,
		     unsigned long pgoff)
{
	unsigned long pages = shm->bytes >> PAGE_SHIFT;
	int ret;

	if (pgoff >= pages || vma_pages(vma) > pages - pgoff)
		return -EINVAL;
	/* Code must never run from memory peers can write. */
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;
	vma->vm_flags &= ~VM_MAYEXEC;
	vma->vm_flags |= VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP;

	/* The _partial variant is not exported; this maps the whole vma. */
	ret = remap_vmalloc_range(vma, shm->mem, pgoff);
	if (ret)
		return ret;
	/* Only now: a failed mmap never calls vm_ops->close. */
	kref_get(&shm->ref);
	vma->vm_private_data = shm;
	vma->vm_ops = &coopmpi_shm_vm_ops;
	return 0;
}
