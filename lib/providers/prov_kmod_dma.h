/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * prov_kmod_dma.h - the kmod provider's offload engine (prov_kmod_dma.c):
 * the driver's DMA-engine channel behind the provider's offload ops.
 */
#ifndef COOP_PROV_KMOD_DMA_H
#define COOP_PROV_KMOD_DMA_H

#include "provider.h"

struct kmod_dma;

/* Kept by prov_kmod.c: the endpoint's fd and where its DMA state lives
 * (NULL until offload_info sets it up). */
int kmod_ep_fd(const struct coop_provider *p);
struct kmod_dma **kmod_ep_dma(struct coop_provider *p);

/* Wait (bounded) for the copies in flight, then free d (may be NULL).
 * Before the endpoint's fd is closed. */
void kmod_dma_close(struct kmod_dma *d);

/* The offload ops (provider.h). */
int kmod_offload_info(struct coop_provider *p, struct coop_offload_info *info);
int kmod_offload_put(struct coop_provider *p, int peer, const void *local,
		     size_t len, const struct coop_rkey *dst, uint64_t dst_off,
		     const struct coop_rkey *notify, uint64_t notify_off,
		     const void *notify16, uint64_t tag);
int kmod_offload_poll(struct coop_provider *p, struct coop_offload_done *out,
		      int max);

#endif
