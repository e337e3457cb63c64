// SPDX-License-Identifier: GPL-2.0
/*
 * Refcounted memory shared with user space: rings, the counters page, a
 * DMA completion queue.
 *
 * Every vma mapping an object holds a reference, so the pages stay valid
 * for as long as any process can touch them, whatever happens to the
 * endpoint or domain that created them.  The pages are charged to the
 * memory cgroup of the process that made them (GFP_KERNEL_ACCOUNT), like
 * any other kernel memory a user can make the driver allocate, so one
 * user cannot pin node memory beyond its cgroup's limit through us.
 * (vmalloc_user() cannot be charged: its pages are allocated one by one
 * here and mapped with vmap() for the kernel's view.)
 */
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "coopmpi.h"

static void shm_free_pages(struct page **pages, unsigned long n)
{
	while (n--)
		__free_page(pages[n]);
	kvfree(pages);
}

int coopmpi_shm_alloc(struct coopmpi_shm *shm, size_t bytes,
		      void (*free)(struct coopmpi_shm *shm))
{
	unsigned long n = PAGE_ALIGN(bytes) >> PAGE_SHIFT, i;
	struct page **pages;

	pages = kvcalloc(n, sizeof(*pages), GFP_KERNEL_ACCOUNT);
	if (!pages)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
		if (!pages[i])
			goto fail;
	}
	shm->mem = vmap(pages, n, VM_MAP, PAGE_KERNEL);
	if (!shm->mem)
		goto fail;
	shm->pages = pages;
	shm->bytes = bytes;
	shm->free = free;
	kref_init(&shm->ref);
	return 0;
fail:
	shm_free_pages(pages, i);
	return -ENOMEM;
}

static void shm_release(struct kref *ref)
{
	struct coopmpi_shm *shm = container_of(ref, struct coopmpi_shm, ref);

	vunmap(shm->mem);
	shm_free_pages(shm->pages, PAGE_ALIGN(shm->bytes) >> PAGE_SHIFT);
	shm->mem = NULL;
	shm->pages = NULL;
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
	unsigned long pages = shm->bytes >> PAGE_SHIFT, num = vma_pages(vma);
	int ret;

	if (pgoff >= pages || num > pages - pgoff)
		return -EINVAL;
	/* Code must never run from memory peers can write. */
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;
	vma->vm_flags &= ~VM_MAYEXEC;
	vma->vm_flags |= VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP;

	ret = vm_insert_pages(vma, vma->vm_start, shm->pages + pgoff, &num);
	if (ret)
		return ret;
	/* Only now: a failed mmap never calls vm_ops->close. */
	kref_get(&shm->ref);
	vma->vm_private_data = shm;
	vma->vm_ops = &coopmpi_shm_vm_ops;
	return 0;
}
