/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * window.c - peers' regions kept mapped (the provider's windows), so a
 * chunk is copied with memcpy instead of a system call that pins pages.
 *
 * COOP_WINDOWS windows per context, keyed by peer and cookie (a cookie
 * names one registration of one peer; with its registration cache it
 * names the same buffer message after message), the least recently used
 * unmapped for a new one; a window in use by a copy is never unmapped.
 * A region whose owner does not allow it (or a provider without windows)
 * is remembered as refused, so its chunks go to the provider's copy()
 * without asking again.  A copy through a window is used only when the
 * state word says it got what the owner had (provider.h); otherwise the
 * chunk is copied again by copy(), which also reports the region's fate.
 * A window whose region went (DEAD) is dropped and its cookie refused; one
 * that showed a HOLE is dropped, so the next use maps it afresh.
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"

struct coop_window {
	int peer;		/* -1: free */
	uint64_t cookie;
	uint8_t writable;
	uint8_t refused;
	unsigned busy;		/* copies through it right now */
	uint64_t used;
	struct coop_window_map m;
};

static int windows_on(const struct coop_context *ctx)
{
	return ctx->wins.n && ctx->prov.ops->win_map;
}

static void win_drop(struct coop_context *ctx, struct coop_window *w)
{
	if (w->m.map)
		ctx->prov.ops->win_unmap(&ctx->prov, &w->m);
	memset(w, 0, sizeof(*w));
	w->peer = -1;
}

static struct coop_window *win_find(struct coop_windows *ws, int peer,
				    uint64_t cookie, int writable)
{
	struct coop_window *w;

	for (w = ws->w; w < ws->w + ws->n; w++)
		if (w->peer == peer && w->cookie == cookie &&
		    (w->refused || w->writable >= writable))
			return w;
	return NULL;
}

static struct coop_window *win_victim(struct coop_context *ctx)
{
	struct coop_windows *ws = &ctx->wins;
	struct coop_window *w, *v = NULL;

	for (w = ws->w; w < ws->w + ws->n; w++) {
		if (w->peer < 0)
			return w;
		if (!w->busy && (!v || w->used < v->used))
			v = w;
	}
	if (v)
		win_drop(ctx, v);
	return v;
}

struct coop_window *coop_window_get(struct coop_context *ctx, int peer,
				    const struct coop_rkey *key, int writable)
{
	struct coop_windows *ws = &ctx->wins;
	struct coop_window *w;

	if (!windows_on(ctx))
		return NULL;
	w = win_find(ws, peer, key->cookie, writable);
	if (!w) {
		w = win_victim(ctx);
		if (!w)
			return NULL;		/* all in use */
		w->peer = peer;
		w->cookie = key->cookie;
		w->writable = (uint8_t)writable;
		w->refused = ctx->prov.ops->win_map(&ctx->prov, peer, key,
						    writable, &w->m) != 0;
	}
	w->used = ++ws->clock;
	if (w->refused || w->m.len < key->length)
		return NULL;
	w->busy++;
	return w;
}

static int word_good(uint64_t s)
{
	return !(s & (1 | COOPMPI_WINDOW_DEAD | COOPMPI_WINDOW_HOLE));
}

int coop_window_copy(struct coop_window *w, uint64_t off, void *local,
		     uint64_t n, int to_peer)
{
	uint64_t s0 = __atomic_load_n(w->m.state, __ATOMIC_ACQUIRE);

	if (!word_good(s0))
		return 0;
	if (to_peer)
		memcpy(w->m.base + off, local, n);
	else
		memcpy(local, w->m.base + off, n);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return __atomic_load_n(w->m.state, __ATOMIC_RELAXED) == s0;
}

void coop_window_put(struct coop_context *ctx, struct coop_window *w)
{
	uint64_t s = __atomic_load_n(w->m.state, __ATOMIC_ACQUIRE);

	/* a HOLE stays until the window is mapped afresh; a DEAD window's
	 * cookie is refused when asked for again */
	if (!--w->busy && (s & (COOPMPI_WINDOW_DEAD | COOPMPI_WINDOW_HOLE)))
		win_drop(ctx, w);
}

enum coop_copy_path coop_copy_chunk(struct coop_context *ctx, int peer,
				    const struct coop_rkey *key, uint64_t off,
				    void *local, uint64_t n,
				    enum coop_copy_dir dir, int unlock,
				    ssize_t *rc)
{
	int to_peer = dir == COOP_COPY_TO_PEER, copied, dropped = 0;
	struct iovec iov = { local, n };
	struct coop_window *w = NULL;
	ssize_t r;

	if (off + n <= key->length)
		w = coop_window_get(ctx, peer, key, to_peer);
	if (unlock)
		dropped = coop_lock_drop(ctx);
	copied = w && coop_window_copy(w, off, local, n, to_peer);
	r = copied ? (ssize_t)n :
		     ctx->prov.ops->copy(&ctx->prov, peer, key, off, &iov, 1,
					 n, dir);
	coop_lock_retake(ctx, dropped);
	if (w)
		coop_window_put(ctx, w);
	if (rc)
		*rc = r;
	if (copied)
		return COPY_BY_WINDOW;
	return r < 0 ? COPY_FAILED : COPY_BY_PROVIDER;
}

void coop_windows_peer_gone(struct coop_context *ctx, int peer)
{
	struct coop_windows *ws = &ctx->wins;
	struct coop_window *w;

	for (w = ws->w; w < ws->w + ws->n; w++)
		if (w->peer == peer && !w->busy)
			win_drop(ctx, w);
}

int coop_windows_init(struct coop_context *ctx)
{
	struct coop_windows *ws = &ctx->wins;
	unsigned i;

	ws->n = ctx->prov.ops->win_map ? ctx->cfg.windows : 0;
	if (!ws->n)
		return COOP_SUCCESS;
	ws->w = calloc(ws->n, sizeof(*ws->w));
	if (!ws->w) {
		ws->n = 0;
		return COOP_ERR_NOMEM;
	}
	for (i = 0; i < ws->n; i++)
		ws->w[i].peer = -1;
	return COOP_SUCCESS;
}

void coop_windows_fini(struct coop_context *ctx)
{
	struct coop_windows *ws = &ctx->wins;
	unsigned i;

	for (i = 0; i < ws->n; i++)
		if (ws->w[i].peer >= 0)
			win_drop(ctx, &ws->w[i]);
	free(ws->w);
	ws->w = NULL;
	ws->n = 0;
}
