/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hca_engine.c - the HCA-loopback engine's work (prov_hca.c has the
 * design): regions registered with the HCA and published under the base
 * provider's cookies, and the copies (offload_put: RDMA WRITEs,
 * offload_poll: their completions, the offload counters).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hca.h"
#include "util.h"

#define HCA_POLL_BATCH	32

/* ---------------- regions ---------------- */

static struct hca_reg **reg_bucket(struct hca *h, uint64_t cookie)
{
	return &h->regs[(cookie * 0x9e3779b97f4a7c15ULL) >> 54];
}

_Static_assert(HCA_REG_BUCKETS == 1 << 10, "reg_bucket takes 10 bits");

/* remote read: the flush of add_flush() reads back what was put */
#define WRITABLE (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		  IBV_ACCESS_REMOTE_READ)

/* The HCA's part of a writable region: its key in our table. */
static int reg_writable(struct hca *h, struct hca_reg *g, void *addr)
{
	g->mr = hca_mr_get(h, addr, g->len, WRITABLE);
	if (!g->mr) {
		int e = errno ? errno : ENOMEM;

		if (h->verbose || e == ENOMEM)
			coop_log(h->rank, "HCA engine: cannot register %llu "
				 "bytes: %s%s", (unsigned long long)g->len,
				 strerror(e), e == ENOMEM ? " (the pinned "
				 "memory limit, ulimit -l?)" : "");
		return -e;
	}
	g->slot = hca_table_add(&h->own, g->cookie, (uintptr_t)addr, g->len,
				g->mr->mr->rkey);
	if (g->slot >= 0)
		return 0;
	hca_mr_put(h, g->mr);
	return g->slot;
}

int hca_reg(struct coop_provider *p, void *addr, size_t len,
	    unsigned int access, struct coop_rkey *key)
{
	struct hca *h = hca_of(p);
	struct hca_reg *g, **b;
	int rc = h->base->reg(p, addr, len, access, key);

	if (rc)
		return rc;
	g = calloc(1, sizeof(*g));
	if (!g) {
		h->base->dereg(p, key);
		return -ENOMEM;
	}
	g->cookie = key->cookie;
	g->len = len;
	g->addr = (uintptr_t)addr;
	g->writable = (access & COOPMPI_REGION_WRITE) && len;
	pthread_mutex_lock(&h->lock);
	if (g->writable)
		rc = reg_writable(h, g, addr);
	if (!rc) {
		b = reg_bucket(h, g->cookie);
		g->next = *b;
		*b = g;
	}
	pthread_mutex_unlock(&h->lock);
	if (rc) {
		free(g);
		h->base->dereg(p, key);
	}
	return rc;
}

/*
 * The registration key names.  With the shm provider a cookie is the
 * address, so one buffer registered twice (for reading and for writing)
 * has two with the same cookie and length: drop one that is not with
 * the HCA first, so the HCA's part lasts as long as any of them.
 */
static struct hca_reg *reg_unlink(struct hca *h, const struct coop_rkey *key)
{
	struct hca_reg **pos, **found = NULL, *g;

	for (pos = reg_bucket(h, key->cookie); *pos; pos = &(*pos)->next) {
		if ((*pos)->cookie != key->cookie || (*pos)->len != key->length)
			continue;
		if (!found || !(*pos)->mr)
			found = pos;
		if (!(*pos)->mr)
			break;
	}
	if (!found)
		return NULL;
	g = *found;
	*found = g->next;
	return g;
}

/* The registration of key that has the HCA's part, if any. */
static struct hca_reg *reg_writable_of(struct hca *h,
				       const struct coop_rkey *key)
{
	struct hca_reg *g;

	for (g = *reg_bucket(h, key->cookie); g; g = g->next)
		if (g->cookie == key->cookie && g->len == key->length &&
		    g->writable)
			return g;
	return NULL;
}

/*
 * A region the core kept is used again: its HCA key must name the pages
 * now at its addresses.  While its MR's watch says they are the pinned
 * ones, nothing to do; else a new MR and key replace the old (the
 * region is not in use, or the application freed memory in use), or
 * come back after a refresh that failed.
 */
int hca_reg_refresh(struct coop_provider *p, const struct coop_rkey *key)
{
	struct hca *h = hca_of(p);
	struct hca_reg *g;
	int rc = 0;

	pthread_mutex_lock(&h->lock);
	g = reg_writable_of(h, key);
	if (g && g->mr && hca_mr_current(g->mr)) {
		p->engine_regs_kept++;
	} else if (g) {
		if (g->mr) {
			hca_table_remove(&h->own, g->slot);
			hca_mr_put(h, g->mr);
		}
		rc = reg_writable(h, g, (void *)g->addr);
		if (rc)
			g->mr = NULL;	/* the core drops the region */
	}
	pthread_mutex_unlock(&h->lock);
	return rc;
}

int hca_dereg(struct coop_provider *p, const struct coop_rkey *key)
{
	struct hca *h = hca_of(p);
	struct hca_reg *g;

	pthread_mutex_lock(&h->lock);
	g = reg_unlink(h, key);
	if (g && g->mr) {
		hca_table_remove(&h->own, g->slot);
		hca_mr_put(h, g->mr);
	}
	pthread_mutex_unlock(&h->lock);
	free(g);
	return h->base->dereg(p, key);
}

/* ---------------- the engine ---------------- */

int hca_offload_info(struct coop_provider *p, struct coop_offload_info *info)
{
	struct hca *h = hca_of(p);

	info->engine = h->soft ? "soft" : "hca";
	info->path = h->path;
	info->max_inflight = HCA_MAX_OPS;
	info->max_length = h->max_length;
	return 0;
}

static void count_op(struct hca *h, const struct hca_op *op, int sign)
{
	if (!h->cnt)
		return;
	if (sign > 0) {
		__atomic_fetch_add(&h->cnt->hca_ops, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&h->cnt->hca_bytes, op->bytes,
				   __ATOMIC_RELAXED);
	} else {
		__atomic_fetch_sub(&h->cnt->hca_ops, 1, __ATOMIC_RELAXED);
		__atomic_fetch_sub(&h->cnt->hca_bytes, op->bytes,
				   __ATOMIC_RELAXED);
	}
}

/* Where [off, off + len) of the peer's region key is for the HCA. */
static int remote(struct hca_peer *pe, const struct coop_rkey *key,
		  uint64_t off, uint64_t len, struct ibv_send_wr *wr)
{
	int rc = hca_table_lookup(&pe->table, key->cookie, off, len,
				  &wr->wr.rdma.remote_addr, &wr->wr.rdma.rkey);

	return rc == -ENOENT ? -EFAULT : rc;
}

struct put_wrs {
	struct ibv_send_wr wr[2];
	struct ibv_sge sge[2];
	int n;
};

static void wr_add(struct put_wrs *w, uint32_t opi, enum ibv_wr_opcode opcode,
		   uint64_t addr, uint32_t len, uint32_t lkey)
{
	struct ibv_send_wr *wr = &w->wr[w->n];

	w->sge[w->n] = (struct ibv_sge){ addr, len, lkey };
	wr->sg_list = &w->sge[w->n];
	wr->num_sge = 1;
	wr->opcode = opcode;
	wr->wr_id = (uint64_t)opi << 1;
	if (w->n)
		w->wr[w->n - 1].next = wr;
	w->n++;
}

/*
 * A put without a notification ends with a read of its last bytes: the
 * responder answers a read only after the writes before it on the queue
 * pair are in memory (an RDMA WRITE's acknowledgment alone says they
 * reached the adapter), so the completion means "placed", and a peer
 * told by a message (a FIN, a coopmpi_xfer.h job's caller) reads them.
 */
static void add_flush(struct hca *h, struct put_wrs *w, uint32_t opi,
		      size_t len)
{
	struct ibv_send_wr *write = &w->wr[0];
	uint32_t n = (uint32_t)COOP_MIN(len, (size_t)8);

	wr_add(w, opi, IBV_WR_RDMA_READ, (uintptr_t)h->notes[opi], n,
	       h->notes_mr->lkey);
	w->wr[1].wr.rdma.remote_addr = write->wr.rdma.remote_addr + len - n;
	w->wr[1].wr.rdma.rkey = write->wr.rdma.rkey;
}

static int hca_put_locked(struct hca *h, int peer, const void *local,
			  size_t len, const struct coop_rkey *dst,
			  uint64_t dst_off, const struct coop_rkey *notify,
			  uint64_t notify_off, const void *notify16,
			  uint64_t tag)
{
	struct hca_peer *pe = &h->peers[peer];
	struct put_wrs w = { .n = 0 };
	struct ibv_send_wr *bad;
	struct hca_op *op;
	uint32_t opi;
	int rc, nwr = len ? 2 : 1;	/* data, then notification or flush */

	if (pe->state != PEER_READY)
		return pe->state == PEER_BROKEN ? -EIO : -ENOTCONN;
	if (!h->nfree || pe->wrs + (unsigned)nwr > HCA_QP_WRS)
		return -EAGAIN;
	opi = h->freel[h->nfree - 1];
	op = &h->op[opi];
	memset(op, 0, sizeof(*op));
	memset(w.wr, 0, sizeof(w.wr));
	if (len) {
		op->mr = hca_mr_get(h, local, len, 0);
		if (!op->mr)
			return errno ? -errno : -ENOMEM;
		wr_add(&w, opi, IBV_WR_RDMA_WRITE, (uintptr_t)local,
		       (uint32_t)len, op->mr->mr->lkey);
		rc = remote(pe, dst, dst_off, len, &w.wr[0]);
		if (rc)
			goto fail;
	}
	if (notify) {
		memcpy(h->notes[opi], notify16, COOP_OFFLOAD_NOTIFY_SIZE);
		wr_add(&w, opi, IBV_WR_RDMA_WRITE, (uintptr_t)h->notes[opi],
		       COOP_OFFLOAD_NOTIFY_SIZE, h->notes_mr->lkey);
		rc = remote(pe, notify, notify_off, COOP_OFFLOAD_NOTIFY_SIZE,
			    &w.wr[w.n - 1]);
		if (rc)
			goto fail;
	} else {
		add_flush(h, &w, opi, len);
	}
	w.wr[w.n - 1].wr_id |= 1;	/* the last one */
	w.wr[w.n - 1].send_flags = IBV_SEND_SIGNALED;
	op->bytes = len;
	/* counted first: a software device may move it all in the call */
	count_op(h, op, 1);
	rc = -ibv_post_send(pe->qp, &w.wr[0], &bad);
	if (rc) {
		count_op(h, op, -1);
		goto fail;
	}
	h->nfree--;
	op->tag = tag;
	op->peer = peer;
	op->nwr = (uint8_t)nwr;
	pe->wrs += (unsigned)nwr;
	return 0;
fail:
	if (op->mr)
		hca_mr_put(h, op->mr);
	op->mr = NULL;
	return rc;
}

int hca_offload_put(struct coop_provider *p, int peer, const void *local,
		    size_t len, const struct coop_rkey *dst, uint64_t dst_off,
		    const struct coop_rkey *notify, uint64_t notify_off,
		    const void *notify16, uint64_t tag)
{
	struct hca *h = hca_of(p);
	int rc;

	if (peer < 0 || peer >= h->nranks || (!len && !notify) ||
	    len > h->max_length || (notify && !notify16))
		return -EINVAL;
	pthread_mutex_lock(&h->lock);
	rc = hca_put_locked(h, peer, local, len, dst, dst_off, notify,
			    notify_off, notify16, tag);
	pthread_mutex_unlock(&h->lock);
	return rc;
}

/*
 * The errno of a failed put.  An RC queue pair in error stays so, and
 * the peer's goes down with it: a remote error (its key or memory gone,
 * no answer) means the peer died or broke the pair, and either way it
 * cannot be reached through the HCA again: -ESRCH / -EPIPE fail it.
 */
static int wc_errno(struct coop_provider *p, struct hca *h, int peer,
		    enum ibv_wc_status s)
{
	if (!h->base->peer_alive(p, peer))
		return -ESRCH;
	switch (s) {
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_LOC_LEN_ERR:
		return -EFAULT;
	case IBV_WC_WR_FLUSH_ERR:
		return -EIO;
	default:
		return -EPIPE;
	}
}

/* One work completion; 1 when it ends a put, reported in *o. */
static int on_wc(struct coop_provider *p, struct hca *h,
		 const struct ibv_wc *wc, struct coop_offload_done *o)
{
	uint32_t opi = (uint32_t)(wc->wr_id >> 1);
	struct hca_op *op = &h->op[opi];
	int last = (int)(wc->wr_id & 1), out = 0;

	if (wc->status != IBV_WC_SUCCESS && !op->reported) {
		/* an RC queue pair in error stays so: the pair is done */
		h->peers[op->peer].state = PEER_BROKEN;
		*o = (struct coop_offload_done){
			op->tag, wc_errno(p, h, op->peer, wc->status), 0 };
		if (h->verbose)
			coop_log(h->rank, "HCA engine: put to rank %d: %s",
				 op->peer, ibv_wc_status_str(wc->status));
		op->reported = 1;
		out = 1;
	}
	if (!last)
		return out;
	if (!op->reported) {
		*o = (struct coop_offload_done){ op->tag, 0, op->bytes };
		out = 1;
	}
	if (op->mr)
		hca_mr_put(h, op->mr);
	op->mr = NULL;
	h->peers[op->peer].wrs -= op->nwr;
	count_op(h, op, -1);
	h->freel[h->nfree++] = opi;
	return out;
}

int hca_offload_poll(struct coop_provider *p, struct coop_offload_done *out,
		     int max)
{
	struct hca *h = hca_of(p);
	struct ibv_wc wc[HCA_POLL_BATCH];
	int n = 0, got, i;

	pthread_mutex_lock(&h->lock);
	while (n < max && h->nfree < HCA_MAX_OPS) {
		got = ibv_poll_cq(h->cq, COOP_MIN(max - n, HCA_POLL_BATCH), wc);
		if (got <= 0)
			break;
		for (i = 0; i < got; i++)
			n += on_wc(p, h, &wc[i], &out[n]);
	}
	pthread_mutex_unlock(&h->lock);
	return n;
}

/* ---------------- tear-down ---------------- */

void hca_free_regs(struct hca *h)
{
	struct hca_reg *g;
	int b;

	for (b = 0; b < HCA_REG_BUCKETS; b++) {
		while ((g = h->regs[b])) {
			h->regs[b] = g->next;
			if (g->mr)
				hca_mr_put(h, g->mr);
			free(g);
		}
	}
}

/* Give back the counters of the puts still in flight (their queue pairs
 * are gone) and the registrations of their sources. */
void hca_drop_ops(struct hca *h)
{
	uint32_t i;
	int busy[HCA_MAX_OPS] = { 0 };

	for (i = 0; i < h->nfree; i++)
		busy[h->freel[i]] = -1;
	for (i = 0; i < HCA_MAX_OPS; i++) {
		struct hca_op *op = &h->op[i];

		if (busy[i])
			continue;
		if (h->cnt) {
			__atomic_fetch_sub(&h->cnt->hca_ops, 1,
					   __ATOMIC_RELAXED);
			__atomic_fetch_sub(&h->cnt->hca_bytes, op->bytes,
					   __ATOMIC_RELAXED);
		}
		if (op->mr)
			hca_mr_put(h, op->mr);
	}
}
