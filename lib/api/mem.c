/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mem.c - coop_alloc_mem / coop_free_mem: the provider layer's shared
 * heap (providers/heap.h), whose blocks peers map as windows.
 */
#include <errno.h>

#include "mpi.h"
#include "heap.h"

int coop_alloc_mem(size_t size, void **ptr)
{
	int rc;

	if (!ptr)
		return COOP_ERR_ARG;
	rc = coop_heap_alloc(size, ptr);
	if (rc)
		*ptr = NULL;
	return rc ? COOP_ERR_NOMEM : COOP_SUCCESS;
}

int coop_free_mem(void *ptr)
{
	if (ptr)
		coop_heap_free(ptr);
	return COOP_SUCCESS;
}
