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
 * responder, so the peer that sees the notification sees the data.
 * Without one, an RDMA READ of the last bytes follows instead: its answer
 * comes after the data is in the peer's memory, so the put's completion
 * means the bytes are there (a FIN or the caller's own message may tell
 * the peer).  Only the last work request asks for a completion; a failed
 * one completes anyway (and flushes the rest), so each put ends with
 * exactly one offload_done.
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
 * is registered for the time of that put.  Those MRs are kept for the
 * next message on the same buffer where the base provider can watch the
 * buffer's pages (hca_mrcache.c: a buffer freed and allocated again at
 * the same address has other pages, which a kept MR would not see).
 *
 * Load: the engine keeps the counters page's hca_ops/hca_bytes (work in
 * flight on the HCA, sysfs "offload") up to date, and points the core's
 * COOP_OFFLOAD_BUSY check at hca_bytes: the adaptive offload of sec.
 * II-B3.
 *
 * This file sets the engine up (device, port, queue pairs, addresses)
 * and tears it down; hca_engine.c does its work (regions, copies).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "hca.h"
#include "util.h"

#define HCA_BLOB_MAGIC	0x68636162U
/* writes, and the reads that flush them (hca_engine.c: add_flush) */
#define QP_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		   IBV_ACCESS_REMOTE_READ)

struct hca_blob {		/* appended to the base provider's address */
	uint32_t magic;
	uint32_t pid;
	int32_t fd;		/* of the table, in pid */
	uint32_t pad;
};

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
		/* reads in flight per queue pair: the flushes */
		h->rd_atom = (uint8_t)COOP_MIN(COOP_MIN(da.max_qp_rd_atom,
							da.max_qp_init_rd_atom),
					       16);
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

int coop_hca_describe(const char *name, char *buf, size_t len)
{
	struct hca *h = calloc(1, sizeof(*h));
	int rc = h ? open_device(h, name) : -ENOMEM;

	if (!rc)
		snprintf(buf, len, "%s, port %u active",
			 ibv_get_device_name(h->dev->device), h->addr.port);
	else
		snprintf(buf, len, "no RDMA device%s%s%s with an active port",
			 name && *name ? " \"" : "", name ? name : "",
			 name && *name ? "\"" : "");
	if (h && h->dev)
		ibv_close_device(h->dev);
	if (h && h->list)
		ibv_free_device_list(h->list);
	free(h);
	return rc;
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
		.qp_access_flags = QP_ACCESS,
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
		.max_dest_rd_atomic = h->rd_atom,
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
	a.max_rd_atomic = h->rd_atom;
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
	a.qp_access_flags = QP_ACCESS;
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
	/* notifications are sent from it, flushes read into it */
	h->notes_mr = ibv_reg_mr(h->pd, h->notes, bytes,
				 IBV_ACCESS_LOCAL_WRITE);
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
		hca_drop_ops(h);
	hca_free_regs(h);
	hca_mrcache_fini(h);
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

/* Names both ends' GIDs: on RoCE a connect fails in the kernel's route
 * resolution, and which GIDs it was given is what tells why. */
static void log_unreachable(const struct hca *h, int rank, int rc)
{
	char ours[INET6_ADDRSTRLEN] = "-", theirs[INET6_ADDRSTRLEN] = "-";
	const struct hca_table_hdr *th = h->peers[rank].table.hdr;

	if (h->addr.is_global) {
		inet_ntop(AF_INET6, h->addr.gid, ours, sizeof(ours));
		if (th)
			inet_ntop(AF_INET6, th->gid, theirs, sizeof(theirs));
	}
	coop_log(h->rank, "HCA engine: cannot reach rank %d (GID %s, index "
		 "%d, to GID %s): %s", rank, ours, h->gid_index, theirs,
		 strerror(-rc));
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
	if (rc)
		log_unreachable(h, rank, rc);
	pthread_mutex_unlock(&h->lock);
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
	/* a writable region's HCA key pins its pages: a region the core
	 * keeps needs a new one when they are gone, which a watch tells */
	if (h->base->watch && h->mrc.n)
		h->ops.reg_refresh = hca_reg_refresh;
	else
		p->caps &= ~COOP_PROV_CAP_REG_BY_ADDRESS;
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
	h->prov = p;
	h->rank = p->rank;
	h->nranks = p->nranks;
	h->verbose = p->verbose;
	rc = setup(h, p);
	if (!rc)
		rc = hca_mrcache_init(h, p->hca_mr_cache);
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
