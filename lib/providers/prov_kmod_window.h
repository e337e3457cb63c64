/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * prov_kmod_window.h - the kmod provider's windows (prov_kmod_window.c):
 * peers' regions mapped through the driver (COOPMPI_IOC_WINDOW_ATTACH),
 * and watches: windows on regions of our own, never mapped.
 */
#ifndef COOP_PROV_KMOD_WINDOW_H
#define COOP_PROV_KMOD_WINDOW_H

#include "provider.h"

/* Kept by prov_kmod.c: the endpoint's fd (prov_kmod_dma.h), the driver's
 * INFO, and where the window state page is mapped (NULL until needed). */
const struct coopmpi_info *kmod_ep_info(const struct coop_provider *p);
const uint64_t **kmod_ep_win_state(struct coop_provider *p);

/* prov_kmod.c's reg and dereg: a region of ours. */
int kmod_reg(struct coop_provider *p, void *addr, size_t len,
	     unsigned int access, struct coop_rkey *key);
int kmod_dereg(struct coop_provider *p, const struct coop_rkey *key);

/* The register flags that let peers map a region of this access. */
uint32_t kmod_win_reg_flags(const struct coop_provider *p, unsigned access);

/* The window ops (provider.h). */
int kmod_win_map(struct coop_provider *p, int peer,
		 const struct coop_rkey *key, int writable,
		 struct coop_window_map *w);
void kmod_win_unmap(struct coop_provider *p, struct coop_window_map *w);
/* The watch ops (provider.h): a window of our own on a region of ours. */
int kmod_watch(struct coop_provider *p, void *addr, size_t len,
	       struct coop_watch *w);
void kmod_unwatch(struct coop_provider *p, struct coop_watch *w);

/* Unmap the state page; before the endpoint's fd is closed. */
void kmod_win_close(struct coop_provider *p);

#endif
