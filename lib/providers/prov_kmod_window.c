/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * prov_kmod_window.c - windows on the driver: a peer's region, registered
 * with COOPMPI_REGION_MAP, attached and mapped here.  The driver keeps the
 * mapping coherent with the owner's page tables and says in the window's
 * state word whether a copy through it got what the owner had; the
 * endpoint's state words are one read-only page, mapped once.  A watch
 * is a window on a region of our own, attached and never mapped: only
 * its state word is used, which the driver's notifier on the range keeps
 * counting for as long as it is attached.
 */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "prov_kmod_dma.h"
#include "prov_kmod_window.h"

uint32_t kmod_win_reg_flags(const struct coop_provider *p, unsigned access)
{
	uint32_t f = access & (COOPMPI_REGION_READ | COOPMPI_REGION_WRITE);

	if (!(p->flags & COOP_PROV_WINDOWS) || !kmod_ep_info(p)->max_windows)
		return f;
	/* a writable mapping reads too */
	if (f & COOPMPI_REGION_WRITE)
		f |= COOPMPI_REGION_READ;
	return f | COOPMPI_REGION_MAP;
}

static const uint64_t *win_state(struct coop_provider *p)
{
	const uint64_t **state = kmod_ep_win_state(p);
	void *m;

	if (!*state) {
		m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, kmod_ep_fd(p),
			 (off_t)COOPMPI_MMAP_WINDOW_STATE);
		if (m != MAP_FAILED)
			*state = m;
	}
	return *state;
}

static void win_detach(struct coop_provider *p, uint32_t handle)
{
	struct coopmpi_window_detach d = { .size = sizeof(d),
					   .handle = handle };

	ioctl(kmod_ep_fd(p), COOPMPI_IOC_WINDOW_DETACH, &d);
}

int kmod_win_map(struct coop_provider *p, int peer,
		 const struct coop_rkey *key, int writable,
		 struct coop_window_map *w)
{
	struct coopmpi_window_attach a = {
		.size = sizeof(a),
		.flags = writable ? COOPMPI_WINDOW_WRITE : 0,
		.cookie = key->cookie,
	};
	const uint64_t *state = win_state(p);
	int prot = PROT_READ | (writable ? PROT_WRITE : 0), err;
	void *m;

	(void)peer;	/* the cookie names the region, and so its owner */
	if (!state)
		return -errno;
	if (ioctl(kmod_ep_fd(p), COOPMPI_IOC_WINDOW_ATTACH, &a))
		return -errno;
	m = mmap(NULL, a.map_bytes, prot, MAP_SHARED, kmod_ep_fd(p),
		 (off_t)COOPMPI_MMAP_WINDOW(a.handle));
	err = errno;
	/* a window lives while mapped: the handle is not needed any more */
	win_detach(p, a.handle);
	if (m == MAP_FAILED)
		return -err;
	w->map = m;
	w->map_bytes = a.map_bytes;
	w->base = (uint8_t *)m + a.page_offset;
	w->len = a.map_bytes - a.page_offset;
	w->state = state + a.state_index;
	return 0;
}

void kmod_win_unmap(struct coop_provider *p, struct coop_window_map *w)
{
	(void)p;
	munmap(w->map, w->map_bytes);
	memset(w, 0, sizeof(*w));
}

void kmod_win_close(struct coop_provider *p)
{
	const uint64_t **state = kmod_ep_win_state(p);

	if (*state)
		munmap((void *)*state, 4096);
	*state = NULL;
}

int kmod_watch(struct coop_provider *p, void *addr, size_t len,
	       struct coop_watch *w)
{
	struct coopmpi_window_attach a = { .size = sizeof(a) };
	const uint64_t *state;
	int err;

	if (!(kmod_win_reg_flags(p, COOPMPI_REGION_READ) & COOPMPI_REGION_MAP))
		return -EOPNOTSUPP;
	state = win_state(p);
	if (!state)
		return -errno;
	err = kmod_reg(p, addr, len, COOPMPI_REGION_READ, &w->key);
	if (err)
		return err;
	a.cookie = w->key.cookie;
	if (ioctl(kmod_ep_fd(p), COOPMPI_IOC_WINDOW_ATTACH, &a)) {
		err = -errno;
		kmod_dereg(p, &w->key);
		return err;
	}
	w->handle = a.handle;
	w->word = state + a.state_index;
	return 0;
}

void kmod_unwatch(struct coop_provider *p, struct coop_watch *w)
{
	win_detach(p, w->handle);
	kmod_dereg(p, &w->key);
	memset(w, 0, sizeof(*w));
}
