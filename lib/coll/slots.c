/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * slots.c - the slots of a topology's small transfers [Hoefler, III-C]:
 * where each one's slot is, the windows that hold them, and the
 * collective RTR trees' shape.  Static slots (COOP_TOPO_STATIC_BUFFERS,
 * up to COOP_NEIGHBOR_SLOT_MAX) are the paper's; without that hint the
 * calls' sizes are not fixed, and open slots (up to
 * COOP_NEIGHBOR_SLOT_OPEN) carry each call's length after the data
 * (canary.c) - a plain call then skips the MPI layer too; larger blocks
 * stream through them in parts of a buffer, up to
 * COOP_NEIGHBOR_STREAM_MAX (s->stream; with direct RTR).  Open slots
 * are an optimisation only: they are halved while a window would pass
 * OPEN_WIN_MAX, and a topology whose windows cannot be made goes
 * without them.
 *
 * Every rank has one window, /dev/shm/coopmpi-<key>-nbr-<rank>-<id>,
 * with a slot per transfer it receives (both ops' plans): a line its
 * owner writes (calls consumed, the tree word), two lines the sender
 * writes (the collision flags; 4-16 in a static packed slot), then
 * SLOT_BUFS buffers (32-128 in a packed slot; calls take them in
 * turn), and an open packed slot's entries.
 * The layout follows from the plans, which every rank computes alike,
 * so no rank tells another where anything is; the windows are created,
 * agreed on and mapped while the topology is created, so a call never
 * waits for a file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "coll.h"

#define WIN_MAGIC	0x434e5757U	/* "CNWW" */
#define WIN_VERSION	7	/* 3: packed slots, 4: open ones' entries,
				 * 5: 32-64 packed buffers, 6: buffers a
				 * line apart past 2 KiB multiples, 64
				 * open entries, packed buffers of 16 B,
				 * 7: 128 packed buffers of 8 B */
#define WIN_HDR		64u
#define TAG_AGREE	(COOP_TAG_UB - 5)
#define TAG_AGREED	(COOP_TAG_UB - 6)
/* Open slots: a window's bytes at most.  Its pages take memory only once
 * a call writes them, so this bounds what blocks of COOP_NEIGHBOR_SLOT_OPEN
 * would take: 16 MiB holds 64 KiB slots (eight buffers, both ops) for 15
 * blocks received per call - a 4-D stencil's 8 with room. */
#define OPEN_WIN_MAX	(16ull << 20)
#define NO_SLOTS	(-1)	/* agreed: the topology goes without */

struct win_hdr {
	uint32_t magic, version, owner_pid, pad;
	uint64_t id;		/* the topology's (coop_topo.id) */
	uint64_t bytes;
	uint64_t pad2[4];
};
_Static_assert(sizeof(struct win_hdr) == WIN_HDR, "window header");

static uint64_t align64(uint64_t x)
{
	return (x + 63) & ~63ull;
}

/* A transfer's bytes in every call, when the plan knows them; else 0. */
static uint64_t exact_len(const struct coop_topo *t, const struct nbr_plan *p,
			  const struct nbr_xfer *x)
{
	const struct coop_graph *g = &t->g;

	if (p->block != UINT64_MAX)
		return p->block * x->nblk;
	if ((t->hints & COOP_TOPO_EXACT_BYTES) && g->weight && x->nblk == 1)
		return g->weight[p->blk[x->blk0]];
	return 0;
}

static int sizes_open(const struct coop_topo *t)
{
	return !(t->hints & COOP_TOPO_STATIC_BUFFERS);
}

/* Does a static block of len bytes, too large for a slot, stream
 * through one in parts?  Its size must be known to both ends, and an
 * RTR tree counts every slot of a sender alike, in calls. */
static int streams(const struct coop_topo *t, const struct nbr_xfer *x,
		   uint64_t len, uint64_t max)
{
	const struct coop_config *cfg = &t->ctx->cfg;

	return max && x->nblk == 1 && !cfg->nbr_rtr_tree &&
	       len <= cfg->nbr_stream_max;
}

/* A transfer's buffer bytes: its exact size when the plan knows it,
 * else the bound (open slots: theirs); 0 when it is too large for a
 * slot (a static slot holds a pack of blocks of up to the bound each,
 * an open one no more than its bound in all) - unless it streams: then
 * a part's, *parts of them. */
static uint64_t slot_cap(const struct coop_topo *t, const struct nbr_plan *p,
			 const struct nbr_xfer *x, uint32_t *parts)
{
	uint64_t open = p->slots->open, len = exact_len(t, p, x);
	uint64_t max = open ? open : t->ctx->cfg.nbr_slot_max * x->nblk;

	*parts = 1;
	if (!len && !((t->hints & COOP_TOPO_EXACT_BYTES) && t->g.weight))
		len = open ? open : t->ctx->cfg.nbr_slot_max;
	if (!open && len > max && streams(t, x, len, max)) {
		*parts = (uint32_t)((len + max - 1) / max);
		len = coop_nbr_part_len(len, *parts);
	}
	return len && len <= max ? align64(len) : 0;
}

static int slots_alloc(struct nbr_slots *s, uint32_t nxf, int n)
{
	s->off = calloc(nxf + 1, sizeof(*s->off));
	s->base = calloc(nxf + 1, sizeof(*s->base));
	s->at = calloc(nxf + 1, sizeof(*s->at));
	s->cap = calloc(nxf + 1, sizeof(*s->cap));
	s->parts = calloc(nxf + 1, sizeof(*s->parts));
	s->pos = calloc(nxf + 1, sizeof(*s->pos));
	s->next = calloc(nxf + 1, sizeof(*s->next));
	s->calls = calloc(nxf + 1, sizeof(*s->calls));
	s->collided = calloc((nxf + 1) * SLOT_COLLIDED_WORDS,
			     sizeof(*s->collided));
	s->order = calloc(nxf + 1, sizeof(*s->order));
	s->first = calloc((size_t)n + 1, sizeof(*s->first));
	s->grp = calloc(nxf + 1, sizeof(*s->grp));
	return s->off && s->base && s->at && s->cap && s->parts && s->pos &&
	       s->next && s->calls && s->collided && s->order && s->first &&
	       s->grp ?
	       0 : -1;
}

void coop_nbr_slots_free(struct nbr_slots *s)
{
	if (!s)
		return;
	free(s->off);
	free(s->base);
	free(s->at);
	free(s->cap);
	free(s->parts);
	free(s->pos);
	free(s->next);
	free(s->calls);
	free(s->collided);
	free(s->order);
	free(s->first);
	free(s->grp);
	free(s->flat_order);
	free(s);
}

/* A node of its sender's RTR tree: a slot's leader. */
static int tree_node(const struct nbr_slots *s, uint32_t x)
{
	return s->cap[x] && s->grp[x].lead == x;
}

/* Each sender's slots (their leaders), in transfer order: the nodes of
 * its RTR tree (see coop_nbr_tree_child()). */
static int slots_order(struct nbr_slots *s, const struct nbr_plan *p, int n)
{
	uint32_t x, *fill = calloc((size_t)n + 1, sizeof(*fill));
	int r;

	if (!fill)
		return -1;
	for (x = 0; x < p->nxf; x++)
		if (tree_node(s, x))
			s->first[p->xf[x].from + 1]++;
	for (r = 0; r < n; r++)
		s->first[r + 1] += s->first[r];
	for (x = 0; x < p->nxf; x++) {
		if (!tree_node(s, x))
			continue;
		r = p->xf[x].from;
		s->pos[x] = fill[r]++;
		s->order[s->first[r] + s->pos[x]] = x;
	}
	free(fill);
	return 0;
}

/* ---------------- groups ---------------- */

/* May x share a slot with others to the same rank?  Its size is known
 * and its sender sends its own block (no receive comes first); not in
 * open slots, whose trailer is one transfer's. */
static int groupable(const struct coop_topo *t, const struct nbr_plan *p,
		     uint32_t x)
{
	const struct nbr_xfer *xf = &p->xf[x];

	return !p->slots->open && p->slots->cap[x] &&
	       p->slots->parts[x] == 1 && xf->nblk == 1 &&
	       t->g.from[p->blk[xf->blk0]] == xf->from &&
	       exact_len(t, p, xf) > 0;
}

/* Send order within a pair of ranks: the senders' (colour, transfer). */
static int by_pair(const void *a, const void *c, void *arg)
{
	const struct nbr_xfer *xf = arg;
	const struct nbr_xfer *i = &xf[*(const uint32_t *)a];
	const struct nbr_xfer *j = &xf[*(const uint32_t *)c];

	if (i->from != j->from)
		return i->from < j->from ? -1 : 1;
	if (i->to != j->to)
		return i->to < j->to ? -1 : 1;
	if (i->color != j->color)
		return i->color < j->color ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)c ? -1 : 1;
}

/* m[0..k) (send order) become one group: the last leads, each other's
 * data ends where the next one's begins. */
static void group_make(const struct coop_topo *t, struct nbr_plan *p,
		       const uint32_t *m, uint32_t k)
{
	struct nbr_slots *s = p->slots;
	uint32_t lead = m[k - 1], i;
	uint64_t gap = COOP_MAX(exact_len(t, p, &p->xf[lead]), (uint64_t)8);

	for (i = k - 1; i-- > 0;) {
		s->grp[m[i]].end_gap = gap;
		gap += exact_len(t, p, &p->xf[m[i]]);
	}
	for (i = 0; i < k; i++) {
		s->grp[m[i]].lead = lead;
		s->cap[m[i]] = align64(gap);
	}
	s->grp[lead].members = k;
}

/*
 * The most bytes (the members' data and 8) a group's buffer holds: a
 * slot's, when a rank of the topology shares its CPU (fewer words to
 * poll, fewer wake-ups: stencil2d on 4 ranks on 2 CPUs, 64 B / 1 KiB,
 * 7.3 / 9.2 us per call grouped, 8.3 / 10.4 in one line), else a line's
 * data: larger groups only made the sender write its members before the
 * leader (2 ranks, 64 B blocks: stencil2d 0.67 -> 0.56 us per call,
 * stencil4d 0.64 -> 0.54, in groups of at most a line; 8 B alike).
 */
static uint64_t group_max(const struct coop_topo *t)
{
	return t->g.shared_cpus ? t->ctx->cfg.nbr_slot_max : 8 + 64;
}

/* Group each pair's groupable transfers, in send order, as many at a
 * time as fit group_max().  0, or -1 out of memory. */
static int groups_form(const struct coop_topo *t, struct nbr_plan *p)
{
	uint32_t *m = calloc(p->nxf + 1, sizeof(*m)), n = 0, i, k;
	uint64_t max = group_max(t), bytes;

	if (!m)
		return -1;
	for (i = 0; i < p->nxf; i++)
		if (groupable(t, p, i))
			m[n++] = i;
	qsort_r(m, n, sizeof(*m), by_pair, p->xf);
	for (i = 0; i < n; i += k) {
		bytes = 8 + exact_len(t, p, &p->xf[m[i]]);
		for (k = 1; i + k < n && p->xf[m[i + k]].from ==
		     p->xf[m[i]].from && p->xf[m[i + k]].to == p->xf[m[i]].to;
		     k++) {
			bytes += exact_len(t, p, &p->xf[m[i + k]]);
			if (bytes > max)
				break;
		}
		if (k > 1)
			group_make(t, p, m + i, k);
	}
	free(m);
	return 0;
}

/* A line's share of x's calls when x's slot is packed (its buffer's
 * bytes, at least 8; an open slot's entry's); 0: it is not. */
static uint64_t packed_share(const struct coop_topo *t,
			     const struct nbr_plan *p, uint32_t x)
{
	const struct nbr_slots *s = p->slots;
	uint64_t len, share;

	if (!s->cap[x] || !p->xf[x].sender_idle || s->grp[x].members != 1 ||
	    s->grp[x].lead != x)
		return 0;
	if (s->open)
		return SLOT_ENTRY;
	len = exact_len(t, p, &p->xf[x]);
	if (!len || len > 64)
		return 0;
	for (share = 8; share < len; share *= 2)
		;
	return share;
}

/* A static block of at most 64 bytes alone in its slot, whose sender
 * receives nothing in the call, with direct RTR, gets 128 buffers of 8
 * bytes, 64 of 16 or 32 of 32 or 64, at least SLOT_LINES_PACKED lines
 * (coll.h): a line holds 1-8 calls, re-armed together (canary.c).
 * Such a sender streams ahead of its receiver, and a line moved there
 * and back per call bounded the stream; where both ends receive, each
 * call waits for the other's line, and a line shared with the next
 * call cost more (2 ranks exchanging 8 B: 0.37 -> 0.52 us per call).
 * Such an open slot gets 16 buffers and 64 entries, which carry the
 * trailers (and data of up to 8 bytes) four to a line, so its buffers'
 * lines only ever go to the receiver.  Not in RTR trees, whose counts
 * would free a buffer before its line is armed. */
static void slots_pack(const struct coop_topo *t, struct nbr_plan *p)
{
	struct nbr_slots *s = p->slots;
	uint64_t share;
	uint32_t x;

	if (s->arity)
		return;
	for (x = 0; x < p->nxf; x++) {
		share = packed_share(t, p, x);
		if (!share)
			continue;
		if (!s->open)
			s->cap[x] = share;
		s->grp[x].line_calls = (uint32_t)(64 / share);
		s->grp[x].bufs = s->open ? SLOT_BUFS_OPEN :
				 COOP_MAX(SLOT_BUFS_PACKED,
					  SLOT_LINES_PACKED *
					  s->grp[x].line_calls);
	}
}

/* Where x's entries (an open packed slot's) begin: after its header
 * and buffers */
static uint64_t entries_off(const struct nbr_slots *s, uint32_t x)
{
	return coop_nbr_slot_hdr(s, x) +
	       s->grp[x].bufs * coop_nbr_buf_stride(s, x);
}

/* x's slot's bytes in its receiver's window */
static uint64_t slot_bytes(const struct nbr_slots *s, uint32_t x)
{
	uint64_t entries = coop_nbr_entries(s, x) ? SLOT_ENTRIES : 0;

	return entries_off(s, x) + entries * SLOT_ENTRY;
}

/* The slots of plan p (open: open slots of at most that many bytes),
 * their offsets counted on in bytes[] (a window's size per rank): 0, or
 * -1 out of memory. */
static int slots_lay_out(const struct coop_topo *t, struct nbr_plan *p,
			 uint64_t open, uint64_t *bytes)
{
	struct nbr_slots *s = calloc(1, sizeof(*s));
	uint32_t x;

	if (!s || slots_alloc(s, p->nxf, t->g.n)) {
		coop_nbr_slots_free(s);
		return -1;
	}
	p->slots = s;
	s->open = open;
	for (x = 0; x < p->nxf; x++) {
		/* to ourselves: copied straight (sched.c) */
		s->parts[x] = 1;
		if (p->xf[x].from != p->xf[x].to)
			s->cap[x] = slot_cap(t, p, &p->xf[x], &s->parts[x]);
		s->streamed += s->parts[x] > 1;
		s->grp[x].lead = x;
		s->grp[x].members = 1;
		s->grp[x].bufs = SLOT_BUFS;
		s->grp[x].line_calls = 1;
	}
	if (groups_form(t, p))
		return -1;
	s->arity = t->ctx->cfg.nbr_rtr_tree ? t->ctx->cfg.nbr_rtr_arity : 0;
	/* an RTR tree counts every slot of a sender alike, in calls */
	s->stream = open && !s->arity ? t->ctx->cfg.nbr_stream_max : 0;
	slots_pack(t, p);
	for (x = 0; x < p->nxf; x++) {
		int to = p->xf[x].to;

		if (!s->cap[x] || s->grp[x].lead != x)
			continue;
		s->off[x] = bytes[to];
		bytes[to] += slot_bytes(s, x);
	}
	for (x = 0; x < p->nxf; x++)
		s->off[x] = s->off[s->grp[x].lead];
	return slots_order(s, p, t->g.n);
}

/* ---------------- windows ---------------- */

static void win_name(char *buf, size_t n, uint64_t key, int rank, uint64_t id)
{
	snprintf(buf, n, "/coopmpi-%016llx-nbr-%d-%llx",
		 (unsigned long long)key, rank, (unsigned long long)id);
}

struct win_want {
	uint64_t id, bytes;
};

static uint64_t win_check(const void *hdr, uint64_t size, const void *arg)
{
	const struct win_hdr *h = hdr;
	const struct win_want *w = arg;

	return h->magic == WIN_MAGIC && h->version == WIN_VERSION &&
	       h->id == w->id && h->bytes == w->bytes && size >= w->bytes ?
	       w->bytes : 0;
}

/* x's slot where its receiver's window is mapped here (win), and where
 * its buffer 0 ends and its entries begin. */
static void slot_bind(struct nbr_slots *s, uint32_t x, unsigned char *win)
{
	s->base[x] = win + s->off[x];
	s->at[x].end0 = s->base[x] + coop_nbr_slot_hdr(s, x) + s->cap[x];
	s->at[x].entry0 = s->base[x] + entries_off(s, x);
	s->at[x].stride = coop_nbr_buf_stride(s, x);
	s->at[x].buf_mask = s->grp[x].bufs - 1;
	s->at[x].entries = (uint32_t)coop_nbr_entries(s, x);
}

static void slots_bind(struct coop_topo *t)
{
	uint32_t x;
	int op;

	for (op = 0; op < NBR_OPS; op++) {
		struct nbr_plan *p = t->plan[op];

		for (x = 0; x < p->nxf; x++)
			if (p->slots->cap[x] && t->win[p->xf[x].to])
				slot_bind(p->slots, x, t->win[p->xf[x].to]);
	}
}

/* Our window: every slot's canaries armed, nothing consumed; the
 * header last (a peer maps only a complete window). */
static int win_create(struct coop_topo *t)
{
	int me = t->ctx->rank, op, err;
	struct win_hdr *h;
	uint32_t x;

	win_name(t->win_name, sizeof(t->win_name), t->ctx->key, me, t->id);
	h = coop_shm_file_create(t->win_name, t->win_bytes[me], &err);
	if (!h)
		return COOP_ERR_NOMEM;
	t->win[me] = (unsigned char *)h;
	slots_bind(t);
	for (op = 0; op < NBR_OPS; op++) {
		const struct nbr_plan *p = t->plan[op];

		for (x = 0; x < p->nxf; x++)
			if (p->slots->cap[x] && p->xf[x].to == me)
				coop_nbr_canary_arm(p, x);
	}
	h->version = WIN_VERSION;
	h->owner_pid = (uint32_t)getpid();
	h->id = t->id;
	h->bytes = t->win_bytes[me];
	__atomic_store_n(&h->magic, WIN_MAGIC, __ATOMIC_RELEASE);
	return COOP_SUCCESS;
}

static int win_map(struct coop_topo *t, int r)
{
	struct win_want want = { t->id, t->win_bytes[r] };
	char name[96];
	struct win_hdr h;
	int err;

	if (t->win[r])
		return COOP_SUCCESS;
	win_name(name, sizeof(name), t->ctx->key, r, t->id);
	t->win[r] = coop_shm_file_map(name, &h, sizeof(h), win_check, &want,
				      &err);
	return t->win[r] ? COOP_SUCCESS : COOP_ERR_PROVIDER;
}

/* The windows we write (our destinations') or read (our RTR tree
 * children's, whoever sent to us). */
static int wins_map(struct coop_topo *t)
{
	int me = t->ctx->rank, op, rc = COOP_SUCCESS;
	uint32_t x, k;

	for (op = 0; op < NBR_OPS && !rc; op++) {
		const struct nbr_plan *p = t->plan[op];
		const struct nbr_slots *s = p->slots;

		for (x = 0; x < p->nxf && !rc; x++) {
			if (!s->cap[x])
				continue;
			if (p->xf[x].from == me)
				rc = win_map(t, p->xf[x].to);
			for (k = 0; p->xf[x].to == me && !rc &&
			     k < s->arity; k++) {
				uint32_t c = coop_nbr_tree_child(p, x, k);

				if (c != UINT32_MAX)
					rc = win_map(t, p->xf[c].to);
			}
		}
	}
	return rc;
}

/* Every rank's rc, combined at rank 0 (the first failure), is every
 * rank's result: so all keep the topology, or none does. */
static int agree(struct coop_context *ctx, uint16_t comm, int rc)
{
	int64_t mine = rc, other;
	int i, r;

	if (ctx->rank) {
		r = coop_coll_send(ctx, &mine, sizeof(mine), 0, TAG_AGREE,
				   comm);
		if (!r)
			r = coop_coll_recv(ctx, &other, sizeof(other), 0,
					   TAG_AGREED, comm, NULL);
		return r ? r : (int)other;
	}
	for (i = 1; i < ctx->size; i++) {
		r = coop_coll_recv(ctx, &other, sizeof(other), i, TAG_AGREE,
				   comm, NULL);
		if (!mine)
			mine = r ? r : other;
	}
	for (i = 1; i < ctx->size; i++)
		coop_coll_send(ctx, &mine, sizeof(mine), i, TAG_AGREED, comm);
	return (int)mine;
}

/* Both plans' slots and every rank's window size: COOP error. */
static int slots_plan(struct coop_topo *t, uint64_t open)
{
	int r, op;

	t->win_bytes = calloc((size_t)t->g.n, sizeof(*t->win_bytes));
	t->win = calloc((size_t)t->g.n, sizeof(*t->win));
	if (!t->win_bytes || !t->win)
		return COOP_ERR_NOMEM;
	for (r = 0; r < t->g.n; r++)
		t->win_bytes[r] = WIN_HDR;
	for (op = 0; op < NBR_OPS; op++)
		if (slots_lay_out(t, t->plan[op], open, t->win_bytes))
			return COOP_ERR_NOMEM;
	return COOP_SUCCESS;
}

static uint64_t wins_most(const struct coop_topo *t)
{
	uint64_t most = 0;
	int r;

	for (r = 0; r < t->g.n; r++)
		most = COOP_MAX(most, t->win_bytes[r]);
	return most;
}

/* The topology goes without slots: the plans' freed, windows gone. */
static void slots_drop(struct coop_topo *t)
{
	int op;

	coop_nbr_slots_fini(t);
	for (op = 0; op < NBR_OPS; op++) {
		coop_nbr_slots_free(t->plan[op]->slots);
		t->plan[op]->slots = NULL;
	}
}

/* Both plans' slots; open ones half the size while a window would pass
 * OPEN_WIN_MAX.  NO_SLOTS when no slot is left.  The plans, alike on
 * every rank, decide alike. */
static int slots_plan_fit(struct coop_topo *t)
{
	uint64_t open = sizes_open(t) ? t->ctx->cfg.nbr_slot_open : 0;
	int rc;

	if (sizes_open(t) && !open)
		return NO_SLOTS;	/* COOP_NEIGHBOR_SLOT_OPEN=0 */
	rc = slots_plan(t, open);
	while (!rc && open && wins_most(t) > OPEN_WIN_MAX) {
		slots_drop(t);
		open /= 2;
		rc = open >= 64 ? slots_plan(t, open) : NO_SLOTS;
	}
	return !rc && wins_most(t) <= WIN_HDR ? NO_SLOTS : rc;
}

/* The agreed result: a topology whose hints asked for slots fails
 * without them; one with open slots (an optimisation only) goes on
 * without, when it was memory or the windows that failed. */
static int slots_outcome(struct coop_topo *t, int rc)
{
	if (rc == NO_SLOTS ||
	    (sizes_open(t) && (rc == COOP_ERR_NOMEM ||
			       rc == COOP_ERR_PROVIDER))) {
		slots_drop(t);
		return COOP_SUCCESS;
	}
	if (rc)
		slots_drop(t);
	return rc;
}

int coop_nbr_slots_init(struct coop_topo *t)
{
	int rc = slots_plan_fit(t);

	/* no slot (COOP_NEIGHBOR_SLOT_OPEN=0, say) is agreed on too: a rank
	 * set otherwise must not wait for the others */
	if (!rc)
		rc = win_create(t);
	/* a rank out of memory still agrees: the others do not wait */
	rc = agree(t->ctx, t->comm, rc);
	if (!rc)
		rc = agree(t->ctx, t->comm, wins_map(t));
	if (!rc)
		slots_bind(t);
	return slots_outcome(t, rc);
}

void coop_nbr_slots_fini(struct coop_topo *t)
{
	int r;

	for (r = 0; t->win && r < t->g.n; r++)
		if (t->win[r])
			munmap(t->win[r], t->win_bytes[r]);
	if (t->win && t->win[t->ctx->rank])
		shm_unlink(t->win_name);
	free(t->win);
	free(t->win_bytes);
	t->win = NULL;
	t->win_bytes = NULL;
}

/* Node c of sender from's tree (its c-th transfer with a slot). */
static uint32_t sender_node(const struct nbr_slots *s, int from, uint64_t c)
{
	if (c >= s->first[from + 1] - s->first[from])
		return UINT32_MAX;
	return s->order[s->first[from] + c];
}

uint32_t coop_nbr_tree_child(const struct nbr_plan *p, uint32_t x, unsigned k)
{
	const struct nbr_slots *s = p->slots;
	uint64_t c = ((uint64_t)s->pos[s->grp[x].lead] + 1) * s->arity + k;

	return k < s->arity ? sender_node(s, p->xf[x].from, c) : UINT32_MAX;
}

uint32_t coop_nbr_tree_top(const struct nbr_plan *p, int from, unsigned k)
{
	const struct nbr_slots *s = p->slots;

	return k < s->arity ? sender_node(s, from, k) : UINT32_MAX;
}
