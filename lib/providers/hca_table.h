/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hca_table.h - what an endpoint with the HCA engine (prov_hca.c)
 * publishes to the other endpoints of its domain: how to reach it
 * through the HCA (port address, one queue pair per peer) and the HCA
 * keys of its regions open for writing.
 *
 * Why a table in shared memory: a region key (struct coop_rkey) is the
 * base provider's cookie and travels in 64-byte packets that have no
 * room for an HCA address and rkey next to it.  The peer that got the
 * cookie looks the HCA key up in the owner's table instead.  The table is
 * a memfd of the owner, mapped read-only by peers through
 * /proc/<pid>/fd/<fd> (no file name to clean up after a crash).
 *
 * Keys: open addressing on the cookie, probed linearly; an entry is
 * EMPTY (never used: a probe stops there), LIVE or DEAD (reusable).  The
 * owner alone writes, under a sequence count (odd while it writes), so
 * a reader takes an entry only when it read the same even count before
 * and after.  The owner may lie or scribble: a reader bounds every loop
 * and checks ranges; what it finds can only name the owner's memory,
 * which the HCA checks against the owner's own protection domain.
 */
#ifndef COOP_HCA_TABLE_H
#define COOP_HCA_TABLE_H

#include <stddef.h>
#include <stdint.h>

#define HCA_TABLE_MAGIC		0x41434843U	/* "CHCA" */
#define HCA_TABLE_VERSION	1
#define HCA_KEYS		4096		/* power of two */

struct hca_table_hdr {
	uint32_t magic;		/* written last: the table is complete */
	uint32_t version;
	uint32_t nranks;
	uint32_t rank;
	uint8_t gid[16];	/* RoCE: the port's GID the peers address */
	uint16_t lid;		/* InfiniBand: the port's LID */
	uint8_t port;
	uint8_t mtu;		/* enum ibv_mtu, active */
	uint32_t is_global;	/* 1: address by GID (RoCE), 0: by LID */
	uint64_t reserved[4];
};

/* The queue pair the owner keeps for one peer. */
struct hca_qp_info {
	uint32_t qpn;
	uint32_t psn;		/* its first send PSN */
};

enum { HCA_KEY_EMPTY, HCA_KEY_LIVE, HCA_KEY_DEAD };

struct hca_key {
	uint32_t seq;		/* odd while the owner writes */
	uint32_t state;		/* HCA_KEY_* */
	uint64_t cookie;	/* the base provider's key */
	uint64_t addr;		/* HCA address of the region's byte 0 */
	uint64_t len;
	uint32_t rkey;
	uint32_t pad;
};

/* A table: the owner's (rw) or a peer's (read-only) mapping. */
struct hca_table {
	void *map;
	size_t bytes;
	struct hca_table_hdr *hdr;
	struct hca_qp_info *qp;	/* [nranks] */
	struct hca_key *keys;	/* [HCA_KEYS] */
	int fd;			/* owner: the memfd; peer: -1 */
};

/* The owner: a table for nranks peers, all zero; fills t. */
int hca_table_create(struct hca_table *t, uint32_t nranks, uint32_t rank);
/* The owner: publish the header (magic last). */
void hca_table_publish(struct hca_table *t, const struct hca_table_hdr *h);
/* The owner: a LIVE entry; its index, or -ENOSPC. */
int hca_table_add(struct hca_table *t, uint64_t cookie, uint64_t addr,
		  uint64_t len, uint32_t rkey);
/* The owner: entry i is DEAD. */
void hca_table_remove(struct hca_table *t, int i);

/* A peer's table through its owner's pid and fd, checked against what
 * we expect of it (rank, nranks): 0 or -errno. */
int hca_table_map(struct hca_table *t, int pid, int fd, uint32_t nranks,
		  uint32_t rank);
void hca_table_unmap(struct hca_table *t);

/*
 * The HCA address and rkey of [off, off + len) of the owner's region
 * cookie: 0, -ENOENT (no such live region, or not that long) or
 * -EAGAIN (the owner kept writing the entry: try later).
 */
int hca_table_lookup(const struct hca_table *t, uint64_t cookie,
		     uint64_t off, uint64_t len, uint64_t *addr,
		     uint32_t *rkey);

#endif
