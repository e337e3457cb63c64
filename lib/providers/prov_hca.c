/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * prov_hca.c - the HCA-loopback offload engine ([Chakraborty18] sec.
 * II-A2 "COOP-hca"): the node's RDMA adapter copies between two
 * processes of the node, driven through libibverbs, while neither CPU
 * does.  It sits on top of either provider (COOP_ENGINE=hca) and takes
 * over its offload ops; messages, CPU copies and counters stay the base
 * provider's.
 *
 * Per pair of endpoints one reliable-connected queue pair on each side,
 * both on the same port and connected to each other through it
 * (loopback).  An offload_put is an RDMA WRITE of the data, then, when a
 * notification is asked for, an RDMA WRITE of its 16 bytes on the same
 * queue pair: RC executes a queue pair's writes in order at the
 * responder, so the peer that sees the notification sees the data.  Only
 * the last write asks for a completion; a failed one completes anyway
 * (and flushes the rest), so each put ends with exactly one
 * offload_done.
 *
 * Addresses: every endpoint creates its queue pairs (one per rank of the
 * domain) and publishes them in its table (hca_table.h) when the
 * provider opens, before its address goes out; connect() then finds
 * the peer's queue pair for us and moves ours to RTS at once.  A side
 * hands out a key of its own only after it connected the peer, so the
 * peer's writes always find our queue pair ready.  That needs the
 * domain's ranks fixed at open: dynamic endpoints (COOP_INIT_DYNAMIC)
 * get no HCA engine.
 *
 * Memory: a region registered for writing is also registered with the
 * HCA (ibv_reg_mr: pinned, counted in RLIMIT_MEMLOCK) and its HCA key is
 * published under the base provider's cookie; the local source of a put
 * is registered for the time of that put.  No registration cache: a
 * buffer freed and reallocated at the same address would be read from
 * its old pages (the reason UCX and Open MPI hook the allocator).
 *
 * Load: the engine keeps the counters page's hca_ops/hca_bytes (work in
 * flight on the HCA, sysfs "offload") up to date, and points the core's
 * COOP_OFFLOAD_BUSY check at hca_bytes: the adaptive offload of sec.
 * II-B3.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "hca_table.h"
#include "provider.h"
#include "util.h"

#define HCA_QP_WRS	64		/* work requests in flight per QP */
#define HCA_MAX_OPS	256		/* puts in flight */
#define HCA_MAX_LENGTH	(1ULL << 30)	/* of one put */
#define HCA_REG_BUCKETS	1024
#define HCA_BLOB_MAGIC	0x68636162U
#define HCA_POLL_BATCH	32

struct hca_blob {		/* appended to the base provider's address */
	uint32_t magic;
	uint32_t pid;
	int32_t fd;		/* of the table, in pid */
	uint32_t pad;
};

/* One registration through reg(): the HCA's part of a writable one. */
struct hca_reg {
	struct hca_reg *next;
	uint64_t cookie;
	uint64_t len;
	struct ibv_mr *mr;	/* NULL: not writable, nothing with the HCA */
	int slot;		/* in our table */
};

enum { PEER_NONE, PEER_READY, PEER_BROKEN };

struct hca_peer {
	struct ibv_qp *qp;	/* ours, for this peer */
	uint32_t psn;
	struct hca_table table;	/* the peer's (ours for ourselves) */
	unsigned wrs;		/* work requests in flight on qp */
	int state;
};

struct hca_op {
	uint64_t tag;
	uint64_t bytes;
	struct ibv_mr *mr;	/* the local source */
	int peer;
	uint8_t nwr;
	uint8_t reported;	/* its offload_done went out (an error) */
};

struct hca {
	struct coop_provider_ops ops;	/* the base's, ours on top */
	const struct coop_provider_ops *base;
	pthread_mutex_t lock;
	struct ibv_device **list;
	struct ibv_context *dev;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct hca_table own;
	struct hca_table_hdr addr;	/* our port's address */
	int gid_index;
	int soft;		/* rxe/siw: the node's CPUs do the copies */
	int rank;
	int nranks;
	char path[64];
	struct hca_peer *peers;
	struct hca_op op[HCA_MAX_OPS];
	uint32_t freel[HCA_MAX_OPS];
	uint32_t nfree;
	uint8_t (*notes)[COOP_OFFLOAD_NOTIFY_SIZE];	/* one per op */
	struct ibv_mr *notes_mr;
	struct hca_reg *regs[HCA_REG_BUCKETS];
	struct coopmpi_offload_counters *cnt;
	uint64_t max_length;
	int verbose;
};

static struct hca *hca_of(const struct coop_provider *p)
{
	return p->engine;
}

/* ---------------- device, port, queue pairs ---------------- */

static int port_active(struct ibv_context *dev, uint8_t port)
{
	struct ibv_port_attr pa;

	return !ibv_query_port(dev, port, &pa) && pa.state == IBV_PORT_ACTIVE;
}

/* The device named (NULL: the first with an active port) and that
 * port: 0 or -errno. */
static int open_device(struct hca *h, const char *name)
{
	struct ibv_device_attr da;
	int i, n;

	h->list = ibv_get_device_list(&n);
	if (!h->list)
		return -ENODEV;	/* no device, or no kernel support at all */
	for (i = 0; i < n && !h->dev; i++) {
		if (name && *name && strcmp(ibv_get_device_name(h->list[i]),
					    name))
			continue;
		h->dev = ibv_open_device(h->list[i]);
		if (!h->dev || ibv_query_device(h->dev, &da))
			goto next;
		for (h->addr.port = 1; h->addr.port <= da.phys_port_cnt;
		     h->addr.port++)
			if (port_active(h->dev, h->addr.port))
				return 0;
next:
		if (h->dev)
			ibv_close_device(h->dev);
		h->dev = NULL;
	}
	return -ENODEV;
}

/* RoCE: a routable (IPv4-mapped, RoCE v2) GID of the port, else the
 * first valid one; index forced by COOP_HCA_GID when >= 0. */
static int pick_gid(struct hca *h, int forced, int tbl_len)
{
	struct ibv_gid_entry e;
	int i, first = -1;

	for (i = 0; i < tbl_len; i++) {
		if (ibv_query_gid_ex(h->dev, h->addr.port, (uint32_t)i, &e, 0))
			continue;
		if (forced >= 0 && i != forced)
			continue;
		if (first < 0 || forced >= 0)
			first = i;
		if (forced < 0 && e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
		    e.gid.raw[10] == 0xff && e.gid.raw[11] == 0xff) {
			first = i;
			break;
		}
	}
	if (first < 0)
		return -EADDRNOTAVAIL;
	if (ibv_query_gid_ex(h->dev, h->addr.port, (uint32_t)first, &e, 0))
		return -EADDRNOTAVAIL;
	memcpy(h->addr.gid, e.gid.raw, sizeof(h->addr.gid));
	h->gid_index = first;
	return 0;
}

static int port_address(struct hca *h, int gid)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(h->dev, h->addr.port, &pa))
		return -errno;
	h->addr.mtu = (uint8_t)pa.active_mtu;
	h->addr.lid = pa.lid;
	h->addr.is_global = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
	h->max_length = COOP_MIN((uint64_t)pa.max_msg_sz, HCA_MAX_LENGTH);
	if (!h->addr.is_global)
		return 0;
	return pick_gid(h, gid, pa.gid_tbl_len);
}

/* A software RDMA device (rxe, siw) has no parent device in sysfs: its
 * "engine" is kernel code on the node's CPUs, like the soft DMA one. */
static int device_is_soft(struct ibv_context *dev)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/device", dev->device->ibdev_path);
	return access(path, F_OK) != 0;
}

static int qp_create(struct hca *h, struct hca_peer *pe)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = h->cq, .recv_cq = h->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = HCA_QP_WRS, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = h->addr.port,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE,
	};

	pe->qp = ibv_create_qp(h->pd, &ia);
	if (!pe->qp)
		return -errno;
	if (getrandom(&pe->psn, sizeof(pe->psn), 0) != sizeof(pe->psn))
		pe->psn = (uint32_t)getpid();
	pe->psn &= 0xffffff;
	return -ibv_modify_qp(pe->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			      IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

/* Our queue pair for peer r to RTS, connected to r's queue pair for us
 * as r's table describes it. */
static int qp_connect(struct hca *h, struct hca_peer *pe)
{
	const struct hca_table_hdr *th = pe->table.hdr;
	const struct hca_qp_info *them = &pe->table.qp[h->rank];
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = (enum ibv_mtu)COOP_MIN(h->addr.mtu, th->mtu),
		.dest_qp_num = __atomic_load_n(&them->qpn, __ATOMIC_RELAXED),
		.rq_psn = __atomic_load_n(&them->psn, __ATOMIC_RELAXED) &
			  0xffffff,
		.min_rnr_timer = 12,
		.ah_attr = { .dlid = th->lid, .port_num = h->addr.port,
			     .is_global = (uint8_t)h->addr.is_global },
	};
	int rc;

	if (a.ah_attr.is_global) {
		memcpy(a.ah_attr.grh.dgid.raw, th->gid, 16);
		a.ah_attr.grh.sgid_index = (uint8_t)h->gid_index;
		a.ah_attr.grh.hop_limit = 1;
	}
	rc = ibv_modify_qp(pe->qp, &a, IBV_QP_STATE | IBV_QP_AV |
			   IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (rc)
		return -rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 17;		/* 0.5 s: no false alarm from a busy node */
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = pe->psn;
	return -ibv_modify_qp(pe->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			      IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			      IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int qp_reset(struct hca *h, struct hca_peer *pe)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	if (ibv_modify_qp(pe->qp, &a, IBV_QP_STATE))
		return -errno;
	a.qp_state = IBV_QPS_INIT;
	a.port_num = h->addr.port;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	return -ibv_modify_qp(pe->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			      IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

/* ---------------- set-up and tear-down ---------------- */

static int setup_ops(struct hca *h)
{
	size_t bytes = HCA_MAX_OPS * COOP_OFFLOAD_NOTIFY_SIZE;
	uint32_t i;

	h->notes = aligned_alloc(4096, bytes);
	if (!h->notes)
		return -ENOMEM;
	h->notes_mr = ibv_reg_mr(h->pd, h->notes, bytes, 0);
	if (!h->notes_mr)
		return -errno;
	for (i = 0; i < HCA_MAX_OPS; i++)
		h->freel[i] = HCA_MAX_OPS - 1 - i;
	h->nfree = HCA_MAX_OPS;
	return 0;
}

static int setup_qps(struct hca *h)
{
	int r, rc;

	h->peers = calloc((size_t)h->nranks, sizeof(*h->peers));
	if (!h->peers)
		return -ENOMEM;
	for (r = 0; r < h->nranks; r++)
		h->peers[r].table.fd = -1;
	rc = hca_table_create(&h->own, (uint32_t)h->nranks, (uint32_t)h->rank);
	for (r = 0; !rc && r < h->nranks; r++) {
		rc = qp_create(h, &h->peers[r]);
		if (!rc) {
			h->own.qp[r].qpn = h->peers[r].qp->qp_num;
			h->own.qp[r].psn = h->peers[r].psn;
		}
	}
	if (!rc)
		hca_table_publish(&h->own, &h->addr);
	return rc;
}

static int setup(struct hca *h, struct coop_provider *p)
{
	int rc = open_device(h, p->hca_device);

	if (!rc)
		rc = port_address(h, p->hca_gid);
	if (rc)
		return rc;
	h->soft = device_is_soft(h->dev);
	snprintf(h->path, sizeof(h->path), "RC loopback on %s port %u",
		 ibv_get_device_name(h->dev->device), h->addr.port);
	h->pd = ibv_alloc_pd(h->dev);
	if (!h->pd)
		return -errno ? -errno : -ENOMEM;
	/* every work request of every op may complete (errors flush) */
	h->cq = ibv_create_cq(h->dev, 2 * HCA_MAX_OPS + 16, NULL, NULL, 0);
	if (!h->cq)
		return -errno ? -errno : -ENOMEM;
	rc = setup_ops(h);
	return rc ? rc : setup_qps(h);
}

static void free_regs(struct hca *h)
{
	struct hca_reg *g;
	int b;

	for (b = 0; b < HCA_REG_BUCKETS; b++) {
		while ((g = h->regs[b])) {
			h->regs[b] = g->next;
			if (g->mr)
				ibv_dereg_mr(g->mr);
			free(g);
		}
	}
}

/* Give back the counters of the puts still in flight (their queue pairs
 * are gone) and the registrations of their sources. */
static void drop_ops(struct hca *h)
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
			ibv_dereg_mr(op->mr);
	}
}

static void hca_free(struct hca *h)
{
	int r;

	for (r = 0; h->peers && r < h->nranks; r++) {
		if (h->peers[r].qp)
			ibv_destroy_qp(h->peers[r].qp);
		if (r != h->rank)
			hca_table_unmap(&h->peers[r].table);
	}
	if (h->notes)
		drop_ops(h);
	free_regs(h);
	if (h->notes_mr)
		ibv_dereg_mr(h->notes_mr);
	free(h->notes);
	if (h->cq)
		ibv_destroy_cq(h->cq);
	if (h->pd)
		ibv_dealloc_pd(h->pd);
	if (h->dev)
		ibv_close_device(h->dev);
	if (h->list)
		ibv_free_device_list(h->list);
	if (h->own.map)
		hca_table_unmap(&h->own);
	free(h->peers);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

static void hca_close(struct coop_provider *p)
{
	struct hca *h = hca_of(p);

	p->ops = h->base;
	p->engine = NULL;
	p->engine_load = NULL;
	hca_free(h);
	p->ops->close(p);
}

/* ---------------- addresses ---------------- */

static int hca_address(struct coop_provider *p, void *blob, size_t *len)
{
	struct hca *h = hca_of(p);
	struct hca_blob b = { HCA_BLOB_MAGIC, (uint32_t)getpid(), h->own.fd,
			      0 };
	size_t room = *len > sizeof(b) ? *len - sizeof(b) : 0;
	int rc = h->base->address(p, blob, &room);

	*len = room + sizeof(b);
	if (rc)
		return rc;
	memcpy((char *)blob + room, &b, sizeof(b));
	return 0;
}

static int peer_ready(struct hca *h, int r, const struct hca_blob *b)
{
	struct hca_peer *pe = &h->peers[r];
	int rc;

	if (r == h->rank)
		pe->table = h->own;	/* a view: hca_free does not unmap */
	else {
		hca_table_unmap(&pe->table);
		rc = hca_table_map(&pe->table, (int)b->pid, b->fd,
				   (uint32_t)h->nranks, (uint32_t)r);
		if (rc)
			return rc;
	}
	if (pe->state != PEER_NONE && (rc = qp_reset(h, pe)) != 0)
		return rc;
	pe->state = PEER_BROKEN;
	rc = qp_connect(h, pe);
	if (!rc)
		pe->state = PEER_READY;
	return rc;
}

static int hca_connect(struct coop_provider *p, int rank, const void *blob,
		       size_t len)
{
	struct hca *h = hca_of(p);
	struct hca_blob b;
	int rc;

	if (rank < 0 || rank >= h->nranks || len < sizeof(b))
		return -EINVAL;
	memcpy(&b, (const char *)blob + len - sizeof(b), sizeof(b));
	if (b.magic != HCA_BLOB_MAGIC)
		return -EPROTO;		/* the peer has no HCA engine */
	rc = h->base->connect(p, rank, blob, len - sizeof(b));
	if (rc)
		return rc;
	pthread_mutex_lock(&h->lock);
	rc = peer_ready(h, rank, &b);
	pthread_mutex_unlock(&h->lock);
	if (rc)
		coop_log(h->rank, "HCA engine: cannot reach rank %d: %s", rank,
			 strerror(-rc));
	return rc;
}

static void hca_disconnect(struct coop_provider *p, int rank)
{
	struct hca *h = hca_of(p);

	h->base->disconnect(p, rank);
	if (rank < 0 || rank >= h->nranks || rank == h->rank)
		return;
	hca_table_unmap(&h->peers[rank].table);
}

/* ---------------- regions ---------------- */

static struct hca_reg **reg_bucket(struct hca *h, uint64_t cookie)
{
	return &h->regs[(cookie * 0x9e3779b97f4a7c15ULL) >> 54];
}

_Static_assert(HCA_REG_BUCKETS == 1 << 10, "reg_bucket takes 10 bits");

/* The HCA's part of a writable region: its key in our table. */
static int reg_writable(struct hca *h, struct hca_reg *g, void *addr)
{
	g->mr = ibv_reg_mr(h->pd, addr, g->len,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
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
				g->mr->rkey);
	if (g->slot >= 0)
		return 0;
	ibv_dereg_mr(g->mr);
	return g->slot;
}

static int hca_reg(struct coop_provider *p, void *addr, size_t len,
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
	pthread_mutex_lock(&h->lock);
	if ((access & COOPMPI_REGION_WRITE) && len)
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

static int hca_dereg(struct coop_provider *p, const struct coop_rkey *key)
{
	struct hca *h = hca_of(p);
	struct hca_reg *g;

	pthread_mutex_lock(&h->lock);
	g = reg_unlink(h, key);
	if (g && g->mr) {
		hca_table_remove(&h->own, g->slot);
		ibv_dereg_mr(g->mr);
	}
	pthread_mutex_unlock(&h->lock);
	free(g);
	return h->base->dereg(p, key);
}

/* ---------------- the engine ---------------- */

static int hca_offload_info(struct coop_provider *p,
			    struct coop_offload_info *info)
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

static void wr_add(struct put_wrs *w, uint32_t opi, uint64_t addr,
		   uint32_t len, uint32_t lkey)
{
	struct ibv_send_wr *wr = &w->wr[w->n];

	w->sge[w->n] = (struct ibv_sge){ addr, len, lkey };
	wr->sg_list = &w->sge[w->n];
	wr->num_sge = 1;
	wr->opcode = IBV_WR_RDMA_WRITE;
	wr->wr_id = (uint64_t)opi << 1;
	if (w->n)
		w->wr[w->n - 1].next = wr;
	w->n++;
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
	int rc, nwr = (len > 0) + (notify != NULL);

	if (pe->state != PEER_READY)
		return pe->state == PEER_BROKEN ? -EIO : -ENOTCONN;
	if (!h->nfree || pe->wrs + (unsigned)nwr > HCA_QP_WRS)
		return -EAGAIN;
	opi = h->freel[h->nfree - 1];
	op = &h->op[opi];
	memset(op, 0, sizeof(*op));
	memset(w.wr, 0, sizeof(w.wr));
	if (len) {
		op->mr = ibv_reg_mr(h->pd, (void *)local, len, 0);
		if (!op->mr)
			return errno ? -errno : -ENOMEM;
		wr_add(&w, opi, (uintptr_t)local, (uint32_t)len, op->mr->lkey);
		rc = remote(pe, dst, dst_off, len, &w.wr[0]);
		if (rc)
			goto fail;
	}
	if (notify) {
		memcpy(h->notes[opi], notify16, COOP_OFFLOAD_NOTIFY_SIZE);
		wr_add(&w, opi, (uintptr_t)h->notes[opi],
		       COOP_OFFLOAD_NOTIFY_SIZE, h->notes_mr->lkey);
		rc = remote(pe, notify, notify_off, COOP_OFFLOAD_NOTIFY_SIZE,
			    &w.wr[w.n - 1]);
		if (rc)
			goto fail;
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
		ibv_dereg_mr(op->mr);
	op->mr = NULL;
	return rc;
}

static int hca_offload_put(struct coop_provider *p, int peer,
			   const void *local, size_t len,
			   const struct coop_rkey *dst, uint64_t dst_off,
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
		ibv_dereg_mr(op->mr);
	op->mr = NULL;
	h->peers[op->peer].wrs -= op->nwr;
	count_op(h, op, -1);
	h->freel[h->nfree++] = opi;
	return out;
}

static int hca_offload_poll(struct coop_provider *p,
			    struct coop_offload_done *out, int max)
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

/* ---------------- attaching ---------------- */

static void take_over(struct hca *h, struct coop_provider *p)
{
	h->base = p->ops;
	h->ops = *p->ops;
	h->ops.close = hca_close;
	h->ops.address = hca_address;
	h->ops.connect = hca_connect;
	h->ops.disconnect = hca_disconnect;
	h->ops.reg = hca_reg;
	h->ops.dereg = hca_dereg;
	h->ops.offload_info = hca_offload_info;
	h->ops.offload_put = hca_offload_put;
	h->ops.offload_poll = hca_offload_poll;
	h->cnt = h->base->offload ? h->base->offload(p) : NULL;
	p->engine = h;
	p->engine_load = h->cnt ? (const uint64_t *)&h->cnt->hca_bytes : NULL;
	p->ops = &h->ops;
}

int coop_hca_attach(struct coop_provider *p)
{
	struct hca *h;
	int rc;

	if (p->flags & COOP_PROV_DYNAMIC) {
		coop_log(p->rank, "COOP_ENGINE=hca: dynamic endpoints "
			 "(COOP_INIT_DYNAMIC) have no HCA engine: its queue "
			 "pairs are made for a domain of fixed ranks");
		return -EOPNOTSUPP;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	pthread_mutex_init(&h->lock, NULL);
	h->own.fd = -1;
	h->rank = p->rank;
	h->nranks = p->nranks;
	h->verbose = p->verbose;
	rc = setup(h, p);
	if (rc) {
		if (h->dev)
			coop_log(p->rank, "COOP_ENGINE=hca: cannot set up %s: %s",
				 ibv_get_device_name(h->dev->device),
				 strerror(-rc));
		else
			coop_log(p->rank, "COOP_ENGINE=hca: no RDMA device%s%s%s "
				 "with an active port", p->hca_device ? " \"" :
				 "", p->hca_device ? p->hca_device : "",
				 p->hca_device ? "\" (COOP_HCA_DEVICE)" : "");
		hca_free(h);
		return rc;
	}
	take_over(h, p);
	if (p->verbose)
		coop_log(p->rank, "offload engine: HCA, %s (%s, GID index %d)",
			 h->path, h->soft ? "software RDMA" : "hardware",
			 h->addr.is_global ? h->gid_index : -1);
	return 0;
}
