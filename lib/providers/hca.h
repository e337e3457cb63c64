/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hca.h - the HCA-loopback engine's state, shared by its set-up
 * (prov_hca.c: device, queue pairs, addresses) and its work (hca_engine.c:
 * regions and copies).  See prov_hca.c for how it works.
 */
#ifndef COOP_HCA_H
#define COOP_HCA_H

#include <infiniband/verbs.h>
#include <pthread.h>

#include "hca_table.h"
#include "provider.h"

#define HCA_QP_WRS	64		/* work requests in flight per QP */
#define HCA_MAX_OPS	256		/* puts in flight */
#define HCA_MAX_LENGTH	(1ULL << 30)	/* of one put */
#define HCA_REG_BUCKETS	1024

/* An HCA registration (ibv MR) of [addr, addr + len), kept for the next
 * message while its watch says the range still has the pages it pinned
 * (hca_mrcache.c). */
struct hca_mr {
	struct ibv_mr *mr;	/* NULL: a free place */
	uintptr_t addr;
	size_t len;
	int access;		/* IBV_ACCESS_* */
	unsigned refs;
	uint8_t loose;		/* not in the cache: freed when unused */
	uint64_t used;		/* LRU clock */
	uint64_t seq;		/* the watch's word when the pages were pinned */
	struct coop_watch watch;	/* word NULL: not kept */
};

struct hca_mrcache {
	struct hca_mr *e;	/* COOP_HCA_MR_CACHE places */
	unsigned n;
	uint64_t clock;
};

/* One registration through reg(): the HCA's part of a writable one. */
struct hca_reg {
	struct hca_reg *next;
	uint64_t cookie;
	uint64_t len;
	uintptr_t addr;
	uint8_t writable;	/* has (or must get back) the HCA's part */
	struct hca_mr *mr;	/* NULL: nothing with the HCA now */
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
	struct hca_mr *mr;	/* the local source */
	int peer;
	uint8_t nwr;
	uint8_t reported;	/* its offload_done went out (an error) */
};

struct hca {
	struct coop_provider_ops ops;	/* the base's, ours on top */
	const struct coop_provider_ops *base;
	struct coop_provider *prov;	/* whose engine this is */
	pthread_mutex_t lock;
	struct ibv_device **list;
	struct ibv_context *dev;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct hca_table own;
	struct hca_table_hdr addr;	/* our port's address */
	int gid_index;
	uint8_t rd_atom;	/* reads in flight per queue pair */
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
	struct hca_mrcache mrc;
	struct coopmpi_offload_counters *cnt;
	uint64_t max_length;
	int verbose;
};

static inline struct hca *hca_of(const struct coop_provider *p)
{
	return p->engine;
}

/* hca_engine.c: the provider ops it takes over for regions and copies */
int hca_reg(struct coop_provider *p, void *addr, size_t len,
	    unsigned int access, struct coop_rkey *key);
int hca_dereg(struct coop_provider *p, const struct coop_rkey *key);
int hca_reg_refresh(struct coop_provider *p, const struct coop_rkey *key);
int hca_offload_info(struct coop_provider *p, struct coop_offload_info *info);
int hca_offload_put(struct coop_provider *p, int peer, const void *local,
		    size_t len, const struct coop_rkey *dst, uint64_t dst_off,
		    const struct coop_rkey *notify, uint64_t notify_off,
		    const void *notify16, uint64_t tag);
int hca_offload_poll(struct coop_provider *p, struct coop_offload_done *out,
		     int max);
/* ... and what tear-down needs: every registration dropped; the counters
 * and source registrations of the puts still in flight given back (their
 * queue pairs are gone) */
void hca_free_regs(struct hca *h);
void hca_drop_ops(struct hca *h);

/* hca_mrcache.c: an MR over [addr, addr + len) with at least access, in
 * use until hca_mr_put (NULL, errno set: the adapter refused it) */
struct hca_mr *hca_mr_get(struct hca *h, const void *addr, size_t len,
			  int access);
void hca_mr_put(struct hca *h, struct hca_mr *m);
/* Does m's range still have the pages m pinned?  (0 if not watched) */
int hca_mr_current(const struct hca_mr *m);
/* n MRs kept at most (0: none): 0 or -ENOMEM; fini drops them all */
int hca_mrcache_init(struct hca *h, unsigned n);
void hca_mrcache_fini(struct hca *h);

#endif
