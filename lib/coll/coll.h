/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * coll.h - neighborhood collectives [Hoefler] on top of the MPI layer:
 * topologies, their message plans (Welsh-Powell colouring, tree
 * balancing) and the DAG scheduler that runs a plan.  File map:
 * README.md here.
 *
 * A plan is the whole graph's list of transfers (one message each),
 * computed the same way on every rank from the gathered graph, so no
 * rank needs to tell another what it will send.  A transfer carries one
 * or more blocks; a block is the data of one graph edge (origin's send
 * block for that edge, delivered into the destination's receive block).
 * This rank's part of a plan is a DAG of vertices (receive, send, pack,
 * unpack) that an instance runs for one call.
 */
#ifndef COOP_COLL_H
#define COOP_COLL_H

#include "mpi.h"

enum coop_nbr_op { NBR_ALLGATHER, NBR_ALLTOALL, NBR_OPS };

/* Data tags: transfer id << SEQ_BITS | call sequence; the transfers a
 * plan may have keep them below topo.c's own tags. */
#define SEQ_BITS 8
#define MAX_XFERS ((1u << (31 - SEQ_BITS)) - 1)

/* The layer's state in a context. */
struct coop_coll_state {
	struct dlist ready;	/* instances with queued vertices */
	struct dlist polling;	/* instances with slot vertices waiting */
	unsigned running;	/* instances started, not finished */
	int up;			/* the progress upcall, on while running */
	uint64_t topos;		/* topologies created (their ids) */
};

/* ---------------- the graph (topo.c) ---------------- */

struct coop_graph {
	int n;			/* ranks */
	uint32_t *out_off;	/* [n + 1]: rank i's edges are
				 * [out_off[i], out_off[i + 1]) */
	int *to;		/* [E] an edge's destination */
	uint64_t *weight;	/* [E] or NULL */
	int *from;		/* [E] an edge's origin */
	uint32_t *slot;		/* [E] its place in the origin's list */
	uint32_t *rslot;	/* [E] its place in the destination's
				 * sources (k-th o->d edge: k-th o there) */
	uint32_t *in_deg;	/* [n] */
	uint32_t nedges;
	int shared_cpus;	/* a rank counted more ranks than CPUs */
};

struct nbr_plan;
struct nbr_inst;

/* Static sizes of one op's calls (COOP_TOPO_STATIC_BUFFERS): the first
 * call's block sizes, which every later call must repeat. */
struct nbr_sizes {
	int known;
	size_t *out, *in;	/* [outdeg], [indeg] */
};

struct coop_topo {
	struct coop_context *ctx;
	uint16_t comm;
	unsigned hints;
	int indeg, outdeg;
	struct coop_graph g;
	uint64_t *in_weight;	/* [indeg] our sources' weights, or NULL */
	/* per op: the plan of calls with the EXACT_BYTES sizes (balanced
	 * when small), or of calls of any sizes */
	struct nbr_plan *plan[NBR_OPS];
	uint32_t seq;		/* collectives started (tags) */
	uint64_t calls[NBR_OPS];	/* of each op started */
	unsigned nreqs;		/* requests of it not freed */
	/* slots (slots.c): STATIC_BUFFERS, or open ones */
	uint64_t id;		/* names its windows; the same on all ranks */
	unsigned char **win;	/* [n] windows mapped (ours, peers'), NULL */
	uint64_t *win_bytes;	/* [n] each rank's window size */
	char win_name[96];
	struct nbr_sizes sizes[NBR_OPS];
	struct nbr_inst *spare[NBR_OPS];	/* for the next call (sched.c) */
	struct coop_request *blocking[NBR_OPS];	/* blocking calls' (nbr.c) */
};

/* ---------------- plans (plan.c, balance.c, color.c) ---------------- */

/* Where a vertex's bytes are: the user's send block (slot: destination
 * index; allgather: the one send buffer), receive block (source index),
 * or the instance's scratch area (an offset). */
enum nbr_space { SP_SEND, SP_RECV, SP_TEMP };

struct nbr_ref {
	uint8_t space;
	uint32_t slot;
	uint64_t off;		/* SP_TEMP: the offset */
	uint64_t len;		/* SP_TEMP: the length */
};

enum nbr_vkind { V_RECV, V_SEND, V_PACK };

struct nbr_vertex {
	uint8_t kind;
	int peer;		/* V_RECV/V_SEND */
	uint32_t xfer;		/* the transfer (tags) */
	struct nbr_ref ref;	/* the message's bytes */
	uint32_t nsegs, seg0;	/* V_PACK: copies segs[seg0 .. +nsegs) */
	uint32_t ndeps;		/* predecessors */
	uint32_t nsucc, succ0;	/* successors: succ[succ0 .. +nsucc) */
	uint32_t mate;		/* a transfer to ourselves: its other end
				 * (the send copies straight into the
				 * receive's bytes); UINT32_MAX: none */
};

struct nbr_seg {		/* one copy of a pack */
	struct nbr_ref src, dst;
};

/* A transfer of the whole graph's plan. */
struct nbr_xfer {
	int from, to;
	uint32_t blk0, nblk;	/* blocks: blk[blk0 .. +nblk), edge ids */
	uint32_t color;
	int sender_idle;	/* from receives nothing from another rank */
	int receiver_copies;	/* from takes part in more than twice as
				 * many transfers as to: with ranks
				 * sharing CPUs, to copies the message
				 * (else from: select.c) */
};

/* A plan's slots (the whole graph's; slots.c): static ones, or open
 * ones when the calls' sizes are not fixed (no STATIC_BUFFERS).  A
 * slot's header: a line of counts, then a flag per buffer (an open
 * slot's length words after them) - two lines, or as many as a static
 * packed slot's flags take (coop_nbr_slot_hdr). */
#define SLOT_HDR 192u
/*
 * Small transfers between the same two ranks share one slot (a group):
 * their data lies back to back in each buffer, the leader's (the last
 * in send order) ending at the canary, so the receiver polls one word
 * and the lot crosses in as few lines as its bytes need.  Only blocks of
 * known size (EXACT_BYTES) that their sender owns are grouped: each
 * member's place is fixed, and no member's send waits for a receive.
 * A transfer alone is its own leader with one member.
 */
struct slot_group {
	uint32_t lead;		/* the transfer whose canary x's data shares */
	uint32_t members;	/* leader: transfers in its group */
	uint64_t end_gap;	/* bytes between x's data and its buffer's
				 * end (0 for the leader) */
	uint32_t bufs;		/* buffers of x's slot (a power of two):
				 * SLOT_BUFS, 32 or 64 static packed,
				 * SLOT_BUFS_OPEN open packed */
	uint32_t line_calls;	/* calls whose buffers (an open packed
				 * slot's: entries) share a line: 1, or in
				 * a packed slot 1 (64 B), 2 or 4 */
	/* leader, sender side: the call its group writes, how many of the
	 * call's members wrote, whether one had no data */
	uint64_t writing;
	uint32_t wrote;
	uint8_t lost;
	/* leader, receiver side: the call its group is taken of, members
	 * that took it */
	uint32_t took;
	uint64_t taking;
};
/* Buffers of a slot, taken by the calls in turn: a sender may run
 * SLOT_BUFS - 1 calls ahead of its receiver.  8 rather than 4: a
 * one-way stream of 8 B calls took 0.074 instead of 0.101 us per call
 * (2 ranks).  A static packed slot has 32, 64 of 16 B or 128 of 8 B
 * (at least SLOT_LINES_PACKED lines; at most SLOT_BUFS_MAX: the
 * collision bits, SLOT_COLLIDED_WORDS words a slot): its lines
 * are re-armed whole, so 8 left the sender 4-8 calls ahead (8 B
 * stream: 0.13-0.16 -> 0.11-0.14 us where a line crossed slowest).
 * Sender and receiver work on lines apart the more lines there are:
 * 16 buffers of 8 B, two lines, measured no faster than 16 of 16 B;
 * 32 of 8 B, four lines of eight calls, took 0.063 instead of 0.082
 * us; 64 of 8 B (eight lines) took 0.10-0.13 instead of 0.14-0.18
 * where lines crossed slower, and where they crossed slower still 64
 * of 16 B (sixteen lines) took 0.086-0.092 instead of 0.165-0.186 (Open
 * MPI 0.14-0.17), 16 B blocks 0.095 instead of 0.137.  32 of 64 B took
 * 0.11-0.13 instead of 0.19 (64 of 32 or 64 B: 0.14 / 0.17 instead of
 * 0.11; 128 B and more: no faster).  128 of 8 B (sixteen lines of
 * eight calls) took 0.089 where 64 of 16 B took 0.085-0.092 (lines
 * crossing slowly, before express calls); with express calls, 0.042
 * instead of 0.061 where lines crossed fast (Open MPI 0.115), 0.065
 * against 0.064 where slower (0.17).  An open packed slot has 16, each
 * of the open bound's size, and 64 entries (canary.c): sixteen lines of
 * them took 0.085-0.096 us per call of a stream of 8 B where four took
 * 0.15-0.18 (Open MPI 0.13-0.17); 64 buffers too would take four times
 * the memory. */
#define SLOT_BUFS 8u
#define SLOT_BUFS_PACKED 32u
#define SLOT_LINES_PACKED 16u
#define SLOT_BUFS_MAX 128u
#define SLOT_COLLIDED_WORDS (SLOT_BUFS_MAX / 64)
#define SLOT_BUFS_OPEN 16u
#define SLOT_ENTRIES 64u
/* An open packed slot's entries (canary.c), after its buffers: a data
 * word (a call's data of up to 8 bytes) and the trailer, four to a
 * line. */
#define SLOT_ENTRY 16u
struct nbr_slots {
	uint64_t *off;		/* [nxf] offset in the receiver's window */
	unsigned char **base;	/* [nxf] the slot, where its window is
				 * mapped here (NULL: not) */
	struct slot_at {	/* [nxf] where mapped here, of the slot: */
		unsigned char *end0;	/* its buffer 0's end */
		unsigned char *entry0;	/* its entries (open packed) */
		uint64_t stride;	/* coop_nbr_buf_stride() */
		uint32_t buf_mask;	/* its buffers - 1 */
		uint32_t entries;	/* coop_nbr_entries() */
	} *at;			/* (what canary.c reads per call, in one
				 * place) */
	uint64_t *cap;		/* [nxf] bytes of each of its buffers
				 * (64-byte multiple, or 8, 16 or 32 in a
				 * packed slot); 0: no slot */
	uint32_t *parts;	/* [nxf] buffers a call's block takes: 1,
				 * or a streamed slot's parts (a static
				 * block larger than COOP_NEIGHBOR_SLOT_MAX
				 * goes through it in turns of a buffer) */
	uint32_t *order;	/* slots (their groups' leaders), by sender,
				 * each sender's in transfer order: the
				 * nodes of its RTR tree */
	uint32_t *first;	/* [n + 1] sender s's: order[first[s] ..) */
	uint32_t *pos;		/* [nxf] a leader's node among its
				 * sender's */
	uint64_t *next;		/* [nxf] ours to take: the next call (a
				 * streamed slot's: turn) */
	uint64_t *calls;	/* [nxf] open slots: calls our end of x
				 * ended - the next call's turns begin
				 * where the last one's ended */
	uint64_t *collided;	/* [nxf * SLOT_COLLIDED_WORDS] ours to
				 * send: bit b, buffer b's last data left
				 * the canary in place */
	struct slot_group *grp;	/* [nxf] see below */
	unsigned arity;		/* RTR tree's; 0: direct RTR */
	uint64_t tree_seen;	/* our tree's top's least count, last read */
	uint32_t streamed;	/* slots with parts > 1 */
	uint64_t sends, flagged;	/* this rank's slot sends, and those
					 * whose canary word collided */
	uint64_t open;		/* sizes not fixed (no STATIC_BUFFERS):
				 * the most bytes an open slot takes
				 * (COOP_NEIGHBOR_SLOT_OPEN), each call's
				 * length in a trailer word; 0: fixed */
	uint64_t stream;	/* open slots: larger blocks up to this
				 * stream through them in parts of a
				 * buffer (COOP_NEIGHBOR_STREAM_MAX; 0:
				 * they go as messages) */
	/* sched.c's (flat_plan): does a call run flat (no wave front),
	 * its vertices in the order it takes them, may it go express */
	enum { FLAT_UNKNOWN, FLAT_YES, FLAT_NO } flat;
	uint32_t *flat_order, nflat;
	int express;
};

/* Does x's slot keep its trailers in its SLOT_ENTRIES entries (an open
 * packed slot)?  Open plans have no static packed slots. */
static inline int coop_nbr_entries(const struct nbr_slots *s, uint32_t x)
{
	return s->open && s->grp[x].line_calls > 1;
}

/* x's slot's header bytes: a line, and a flag per buffer, at least the
 * short header's lines */
static inline uint64_t coop_nbr_slot_hdr(const struct nbr_slots *s,
					 uint32_t x)
{
	uint64_t bufs = s->grp[x].bufs;

	return 64 + 8 * (bufs > 2 * SLOT_BUFS ? bufs : 2 * SLOT_BUFS);
}

/* Bytes from one of x's buffers to the next: a line more than its cap
 * when that is a multiple of 2 KiB.  A call's data ends at its
 * buffer's end, and buffers 4 or 8 KiB apart put every call's last
 * line in one L1 set, two KiB apart in two: more lines than the set's
 * ways (an open slot's 16 of 8 KiB, one edge, plain calls of 64 B:
 * 0.284 us per call, 0.212 with the padding). */
static inline uint64_t coop_nbr_buf_stride(const struct nbr_slots *s,
					   uint32_t x)
{
	return s->cap[x] % 2048 ? s->cap[x] : s->cap[x] + 64;
}

struct nbr_plan {
	enum coop_nbr_op op;
	uint64_t block;		/* uniform block bytes; UINT64_MAX: per call */
	/* whole graph */
	struct nbr_xfer *xf;
	uint32_t nxf;
	uint32_t *blk;		/* edge ids */
	uint32_t nblk;
	uint32_t moved;		/* transfers the balancing moved */
	uint32_t ncolors;	/* rounds of its colouring */
	/* this rank's DAG */
	struct nbr_vertex *v;
	uint32_t nv;
	uint32_t *succ;
	struct nbr_seg *seg;
	uint32_t nsegs;
	uint64_t temp;		/* scratch bytes an instance needs */
	uint32_t sends, forwards;
	struct nbr_slots *slots;	/* NULL: none */
};

/* The global graph's transfers for op with uniform block bytes (balanced
 * when the topology's hints and block allow), coloured, and this rank's
 * DAG; NULL: out of memory. */
COOP_HIDDEN struct nbr_plan *coop_nbr_plan_build(const struct coop_topo *t,
						 enum coop_nbr_op op,
						 uint64_t block);
COOP_HIDDEN void coop_nbr_plan_free(struct nbr_plan *p);

/* color.c: colours of the transfers xf[0..n): no two with the same
 * colour share a sender or a receiver (Welsh-Powell: most conflicting
 * first, each the least colour free at both ends).  The number of
 * colours, or 0 when out of memory. */
COOP_HIDDEN uint32_t coop_nbr_color(struct nbr_xfer *xf, uint32_t n,
				    int nranks);

/* balance.c: the tree balancing of small messages (the paper's
 * II-B1): moves transfers from the rank with the most to the one with
 * the fewest while they differ by more than t; xf/blk grow (realloc).
 * The number of transfers moved, or -1 when out of memory. */
/* Make room for need elements of elem bytes in *p (capacity *cap,
 * doubled): 0, or -1 out of memory (*p unchanged). */
COOP_HIDDEN int coop_coll_grow(void **p, uint32_t *cap, uint32_t need,
			       size_t elem);
struct nbr_balance {
	struct nbr_xfer *xf;
	uint32_t nxf, capxf;
	uint32_t *blk;
	uint32_t nblk, capblk;
};
COOP_HIDDEN int coop_nbr_balance(const struct coop_graph *g,
				 enum coop_nbr_op op, uint64_t block,
				 struct nbr_balance *b,
				 const struct coop_config *cfg);

/* ---------------- slots (slots.c, canary.c) ---------------- */

/* Lay out both plans' slots, create our window and map the ones we
 * touch (collective: every rank gets the same result).  COOP error. */
COOP_HIDDEN int coop_nbr_slots_init(struct coop_topo *t);
COOP_HIDDEN void coop_nbr_slots_fini(struct coop_topo *t);
COOP_HIDDEN void coop_nbr_slots_free(struct nbr_slots *s);
/* RTR tree of transfer x's sender: x's k-th child, or (top) the
 * sender's own k-th child; UINT32_MAX: none. */
COOP_HIDDEN uint32_t coop_nbr_tree_child(const struct nbr_plan *p,
					 uint32_t x, unsigned k);
COOP_HIDDEN uint32_t coop_nbr_tree_top(const struct nbr_plan *p, int from,
				       unsigned k);

/* Does call's transfer x of len bytes go through its slot?  An open
 * slot takes every call: a larger one's trailer says a message comes. */
static inline int coop_nbr_slotted(const struct nbr_plan *p, uint32_t x,
				   size_t len)
{
	if (!p->slots || !p->slots->cap[x])
		return 0;
	return p->slots->open ||
	       (len && len <= p->slots->cap[x] * p->slots->parts[x]);
}

/* The bytes of each part of a streamed slot's block of len (the last
 * one's may be fewer): both ends cut the block alike. */
static inline size_t coop_nbr_part_len(size_t len, uint32_t parts)
{
	return (len + parts - 1) / parts;
}
/* The most bytes a block streams through an open slot: the bound of
 * COOP_NEIGHBOR_STREAM_MAX (core/config.c), so a trailer past it is
 * none a sender writes. */
#define NBR_STREAM_LIMIT (1ull << 40)
#define SLOT_WAIT (-1)
#define SLOT_MSG (-2)	/* open slot: the data comes as a message */
#define SLOT_BAD (-3)	/* open slot: its sender broke the protocol */
/* Receiver (owner): arm the canaries of all of x's buffers. */
COOP_HIDDEN void coop_nbr_canary_arm(const struct nbr_plan *p, uint32_t x);
/* Start loading the line of call's canary of x (write: for writing),
 * so that a loop over many slots waits for their misses together. */
COOP_HIDDEN void coop_nbr_slot_prefetch(const struct nbr_plan *p, uint32_t x,
					uint64_t call, int write);
/* Sender: may call write x's buffer (RTR), len bytes? */
COOP_HIDDEN int coop_nbr_slot_ready(const struct coop_topo *t,
				    struct nbr_plan *p, uint32_t x,
				    uint64_t call, size_t len);
/* Receiver of x, a node with children in its sender's RTR tree:
 * publish x's subtree; 1 once all of it consumed call (or the tree lost
 * a rank), so the node need not stay for it any longer. */
COOP_HIDDEN int coop_nbr_tree_hold(const struct coop_topo *t,
				   struct nbr_plan *p, uint32_t x,
				   uint64_t call);
/* Sender: write call's data (or, lost, that there is none). */
COOP_HIDDEN void coop_nbr_slot_write(struct nbr_plan *p, uint32_t x,
				     uint64_t call, const void *src,
				     size_t len, int lost);
/* Receiver: take call's data if it is there: COOP_SUCCESS, SLOT_WAIT,
 * or COOP_ERR_PEER_DEAD (the sender had none). */
COOP_HIDDEN int coop_nbr_slot_take(struct nbr_plan *p, uint32_t x,
				   uint64_t call, void *dst, size_t len);
/* Receiver: call of x went another way; count it consumed. */
COOP_HIDDEN void coop_nbr_slot_pass(struct nbr_plan *p, uint32_t x,
				    uint64_t call);
/* Open slots: the parts of a buffer a block of total bytes takes (one
 * when it fits) - a receiver's count once the first trailer told the
 * total (open_copy bounds it below 2^32). */
COOP_HIDDEN uint32_t coop_nbr_open_parts(const struct nbr_plan *p,
					 uint32_t x, uint64_t total);
/* Open slots: the turns a block of len bytes takes (lost: none to
 * give, one turn): one, or a streamed block's parts of a buffer each. */
COOP_HIDDEN uint32_t coop_nbr_open_turns(const struct nbr_plan *p,
					 uint32_t x, uint64_t len, int lost);
/* Open slots, sender: write turn's data, len bytes of a block of total
 * (a streamed block's part; else all of it), with the block's length
 * (SUCCESS), or only that it comes as a message of total bytes
 * (SLOT_MSG), or that there is none (lost). */
COOP_HIDDEN int coop_nbr_open_write(struct nbr_plan *p, uint32_t x,
				    uint64_t turn, const void *src,
				    size_t len, uint64_t total, int lost);
/* Open slots, receiver: take turn's data, the part at byte off of the
 * sender's block, into dst (the block, len bytes); *total: the block's
 * length, UINT64_MAX before its first turn (then set from the trailer).
 * COOP_SUCCESS, SLOT_WAIT, SLOT_MSG (receive it as a message; a first
 * turn only), COOP_ERR_TRUNCATE (more came: dst filled) or
 * COOP_ERR_COUNT (fewer), COOP_ERR_PEER_DEAD (the sender had none),
 * SLOT_BAD (a trailer no sender writes: unknown bits, a part past the
 * block, a length that changed between parts). */
COOP_HIDDEN int coop_nbr_open_take(struct nbr_plan *p, uint32_t x,
				   uint64_t turn, uint64_t *total,
				   uint64_t off, void *dst, size_t len);

/* ---------------- running a plan (sched.c) ---------------- */

/* One call's buffers (v variants: arrays; else uniform bytes). */
struct nbr_args {
	enum coop_nbr_op op;
	const char *sbuf;
	char *rbuf;
	size_t sbytes, rbytes;	/* uniform */
	const size_t *scounts, *sdispls, *rcounts, *rdispls;	/* v */
};

/* A collective request of t running plan p over a (a persistent one:
 * started by coop_coll_start).  COOP error. */
COOP_HIDDEN int coop_coll_request(struct coop_topo *t, struct nbr_plan *p,
				  const struct nbr_args *a, int persistent,
				  struct coop_request **out);
/* Free the instances t keeps for its next calls. */
COOP_HIDDEN void coop_coll_spares_free(struct coop_topo *t);
/* (Re)start collective request r: COOP error. */
COOP_HIDDEN int coop_coll_start(struct coop_request *r);
/* Start inactive collective request r of a's op over a's buffers. */
COOP_HIDDEN int coop_coll_start_with(struct coop_request *r,
				     const struct nbr_args *a);

/* ---------------- entry points (nbr.c, topo.c) ---------------- */

COOP_HIDDEN int coop_coll_layer_init(struct coop_context *ctx);
COOP_HIDDEN void coop_coll_layer_fini(struct coop_context *ctx);
COOP_HIDDEN int coop_topo_create_locked(struct coop_context *ctx,
					uint32_t comm, int indeg,
					const int *src, const uint64_t *sw,
					int outdeg, const int *dst,
					const uint64_t *dw, unsigned hints,
					struct coop_topo **out);
COOP_HIDDEN int coop_topo_free_locked(struct coop_topo *t);
/* A collective call, nonblocking or persistent: *req its request. */
COOP_HIDDEN int coop_nbr_call(struct coop_topo *t, const struct nbr_args *a,
			      coop_request_t **req, int persistent);
/* A blocking call started: *req its request, to wait for; then it stays
 * t's (free it with coop_nbr_blocking_free). */
COOP_HIDDEN int coop_nbr_call_blocking(struct coop_topo *t,
				       const struct nbr_args *a,
				       coop_request_t **req);
/* Free the requests t keeps for blocking calls, unless t has another
 * request or one of them runs (COOP_ERR_STATE): COOP error. */
COOP_HIDDEN int coop_nbr_blocking_free(struct coop_topo *t);
COOP_HIDDEN void coop_topo_info_fill(const struct coop_topo *t,
				     coop_topo_info_t *info);

/* xchg.c: blocking internal messages on comm (tags of the library's),
 * for topology creation: COOP error. */
COOP_HIDDEN int coop_coll_send(struct coop_context *ctx, const void *buf,
			       size_t len, int dest, int tag, uint16_t comm);
COOP_HIDDEN int coop_coll_recv(struct coop_context *ctx, void *buf,
			       size_t cap, int src, int tag, uint16_t comm,
			       size_t *got);

#endif
