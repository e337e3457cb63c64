/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sched.c - the DAG scheduler [Hoefler, III-C2]: an instance runs this
 * rank's part of a plan for one call.  Vertices without predecessors
 * start at once; each receive and send is an MPI-layer request whose
 * completion callback queues its vertex; the progress upcall (or the
 * start itself) takes queued vertices off, releases their successors and
 * starts those that have no predecessor left: a wave front through the
 * DAG (the paper's active queue).  Packs copy at once.
 *
 * Failure: a failed vertex fails the instance and poisons its
 * successors; a poisoned send still goes, with no bytes, so a rank that
 * waits for blocks we forward learns of the failure instead of waiting
 * for ever (a receive that gets no bytes where it expected some fails
 * with COOP_ERR_PEER_DEAD).
 *
 * Tags: transfer id << SEQ_BITS | the call's sequence number, so calls
 * of one topology in flight together never take each other's messages.
 *
 * A transfer with a slot (slots.c) is a slot vertex instead, polled by
 * the upcall; an open slot's vertex becomes a request when the slot
 * says its data goes as a message (SLOT_MSG: larger than the slot and
 * the stream bound).  A streamed block takes a turn of its slot per
 * part: a static slot's calls take its parts count each, so a call's
 * turns follow from its number; an open slot's calls take what their
 * sizes need, so each end counts its turns, and a call's vertex begins
 * once the call before ended there (open_try).
 */
#include <stdlib.h>
#include <string.h>

#include "coll.h"


struct vref {
	struct nbr_inst *in;
	uint32_t v;
};

struct nbr_inst {
	struct coop_topo *t;
	struct nbr_plan *p;
	struct nbr_args a;
	struct coop_request *req;	/* the user's */
	char *temp;
	uint32_t *deps;		/* [nv] predecessors left */
	uint8_t *poisoned;	/* [nv] a predecessor failed */
	struct vref *refs;	/* [nv] the children's owner.data */
	uint32_t *doneq;	/* [nv] finished, successors not released */
	int *doneerr;		/* [nv] their errors */
	uint32_t *pend;		/* [nv] slot vertices waiting (RTR, RTE) */
	struct part_state {	/* [nv] a streamed or open slot's vertex: */
		uint32_t done;	/* parts written or taken this call */
		int rc;		/* the first one's error */
		uint32_t turns;	/* an open slot's vertex: this call's
				 * (0: not begun) */
		uint64_t total;	/* and its block's bytes (receiver: as
				 * the trailer tells, UINT64_MAX before) */
	} *part;
	uint32_t npend;
	uint32_t *hold;		/* [nv] RTR tree nodes we publish till
				 * their subtree consumed the call */
	uint32_t nhold;
	int flat;		/* this call runs flat (see flat_plan) */
	struct express_vx {	/* [nflat] an express call's vertices: */
		char *buf;	/* their bytes, as in->a gives them */
		size_t len;
		uint32_t x;	/* the transfer */
		int send;
	} *xv;
	int xv_ok;		/* xv is of in->a */
	int running;		/* counted in the layer's running */
	uint32_t ndone, finished;
	int err;
	uint16_t seq;
	uint64_t call;		/* of its op on the topology */
	struct dlist link;	/* on the ready list */
	struct dlist plink;	/* on the polling list */
};

/* ---------------- bytes of a vertex ---------------- */

static char *ref_addr(const struct nbr_inst *in, const struct nbr_ref *r,
		      size_t *len)
{
	const struct nbr_args *a = &in->a;

	switch (r->space) {
	case SP_SEND:
		if (a->op == NBR_ALLGATHER || !a->scounts) {
			*len = a->sbytes;
			return (char *)(uintptr_t)a->sbuf +
			       (a->op == NBR_ALLGATHER ? 0 :
				(size_t)r->slot * a->sbytes);
		}
		*len = a->scounts[r->slot];
		return (char *)(uintptr_t)a->sbuf + a->sdispls[r->slot];
	case SP_RECV:
		*len = a->rcounts ? a->rcounts[r->slot] : a->rbytes;
		return a->rbuf + (a->rcounts ? a->rdispls[r->slot] :
				  (size_t)r->slot * a->rbytes);
	default:
		*len = r->len;
		return in->temp + r->off;
	}
}

/* ---------------- vertices ---------------- */

static void queue_done(struct nbr_inst *in, uint32_t v, int err)
{
	struct coop_context *ctx = in->t->ctx;

	in->doneerr[in->ndone] = err;
	in->doneq[in->ndone++] = v;
	if (!dlist_linked(&in->link))
		dlist_add_tail(&ctx->coll->ready, &in->link);
}

/* A receive of want bytes got got: an empty message says its data was
 * lost upstream (a poisoned send). */
static int recv_result(size_t got, size_t want)
{
	if (got == want)
		return COOP_SUCCESS;
	if (got > want)
		return COOP_ERR_TRUNCATE;
	return got ? COOP_ERR_COUNT : COOP_ERR_PEER_DEAD;
}

/* A child request ended: its vertex is done (the request goes). */
static void child_done(struct coop_request *r)
{
	struct vref *ref = r->owner.data;
	struct nbr_inst *in = ref->in;
	int err = r->status.error;

	if (!err && r->kind == REQ_RECV)
		err = recv_result(r->status.count, r->msg.len);
	coop_req_free(r);
	queue_done(in, ref->v, err);
}

/* ---------------- transfers to ourselves ---------------- */

/* Send vertex v's bytes straight into its mate's (the receive of the
 * same transfer): the receive's result, as a message would give it. */
static int self_copy(struct nbr_inst *in, uint32_t v)
{
	const struct nbr_vertex *vx = &in->p->v[v];
	size_t slen, rlen;
	const char *src = ref_addr(in, &vx->ref, &slen);
	char *dst = ref_addr(in, &in->p->v[vx->mate].ref, &rlen);

	if (in->poisoned[v])
		return COOP_ERR_PEER_DEAD;	/* its data never came */
	memmove(dst, src, COOP_MIN(slen, rlen));
	if (slen == rlen)
		return COOP_SUCCESS;
	return slen > rlen ? COOP_ERR_TRUNCATE : COOP_ERR_COUNT;
}

/* ---------------- slot vertices ---------------- */

static int peer_lost(const struct coop_context *ctx, int peer)
{
	return ctx->peers[peer].dead || ctx->peers[peer].misbehaved;
}

static void finish(struct nbr_inst *in);

static void poll_link(struct nbr_inst *in)
{
	if (!dlist_linked(&in->plink))
		dlist_add_tail(&in->t->ctx->coll->polling, &in->plink);
}

/* A node of a sender's RTR tree stands for its subtree: it publishes
 * the subtree's progress until all of it consumed the call (else its
 * parent could wait for a word nobody updates). */
static void hold_start(struct nbr_inst *in, uint32_t x)
{
	if (!in->p->slots->arity || coop_nbr_tree_child(in->p, x, 0) ==
	    UINT32_MAX || coop_nbr_tree_hold(in->t, in->p, x, in->call))
		return;
	in->hold[in->nhold++] = x;
	poll_link(in);
}

/* The slot's own count of v's turns: the call, or for a streamed slot
 * the part of it v is at (each part takes a buffer as a call would;
 * an unstreamed vertex's done stays 0).  An open slot's calls take
 * their own numbers of turns: its ends count them (our next turn to
 * write or take; a vertex uses it once the call before ended there). */
static uint64_t slot_turn(const struct nbr_inst *in, uint32_t v)
{
	const struct nbr_slots *s = in->p->slots;
	const struct nbr_vertex *vx = &in->p->v[v];

	if (s->open)
		return vx->kind == V_SEND ? s->grp[vx->xfer].writing :
					    s->next[vx->xfer];
	return in->call * s->parts[vx->xfer] + in->part[v].done;
}

static int slot_send(struct nbr_inst *in, uint32_t v, uint64_t turn,
		     const char *buf, size_t len)
{
	const struct nbr_vertex *vx = &in->p->v[v];

	if (in->p->slots->open)
		return coop_nbr_open_write(in->p, vx->xfer, turn, buf, len,
					   in->part[v].total, in->poisoned[v]);
	coop_nbr_slot_write(in->p, vx->xfer, turn, buf, len, in->poisoned[v]);
	return COOP_SUCCESS;
}

/* buf, len: the part's bytes; an open slot's receiver: the block's */
static int slot_take(struct nbr_inst *in, uint32_t v, uint64_t turn,
		     char *buf, size_t len)
{
	struct part_state *ps = &in->part[v];
	uint32_t x = in->p->v[v].xfer;

	if (in->p->slots->open)
		return coop_nbr_open_take(in->p, x, turn, &ps->total,
					  ps->done * in->p->slots->cap[x], buf,
					  len);
	return coop_nbr_slot_take(in->p, x, turn, buf, len);
}

/* One try of slot vertex v's turn (len bytes at buf): SLOT_WAIT,
 * SLOT_MSG (its data goes as a message), or its result. */
static int turn_try(struct nbr_inst *in, uint32_t v, uint64_t turn,
		    char *buf, size_t len)
{
	const struct nbr_vertex *vx = &in->p->v[v];
	struct coop_context *ctx = in->t->ctx;
	int rc;

	if (vx->kind == V_SEND) {
		if (coop_nbr_slot_ready(in->t, in->p, vx->xfer, turn, len))
			return slot_send(in, v, turn, buf, len);
		return peer_lost(ctx, vx->peer) ? COOP_ERR_PEER_DEAD :
						  SLOT_WAIT;
	}
	rc = slot_take(in, v, turn, buf, len);
	if (rc == SLOT_WAIT) {
		if (!peer_lost(ctx, vx->peer))
			return SLOT_WAIT;
		/* one more look: it may have written, then died */
		rc = slot_take(in, v, turn, buf, len);
		if (rc == SLOT_WAIT)
			return COOP_ERR_PEER_DEAD;
	}
	if (rc == SLOT_BAD) {
		coop_peer_misbehaved(ctx, vx->peer, "open slot trailer");
		rc = COOP_ERR_PEER_DEAD;
	}
	hold_start(in, vx->xfer);
	return rc;
}

/* A streamed slot's vertex: its parts in turn, as far as they go.
 * Every part takes its turn even after one failed (the other end counts
 * them all); the first error is the vertex's. */
static int parts_try(struct nbr_inst *in, uint32_t v, char *buf, size_t len)
{
	struct part_state *ps = &in->part[v];
	uint32_t parts = in->p->slots->parts[in->p->v[v].xfer];
	size_t plen = coop_nbr_part_len(len, parts), off;
	int rc;

	while (ps->done < parts) {
		off = ps->done * plen;
		rc = turn_try(in, v, slot_turn(in, v), buf + off,
			      COOP_MIN(plen, len - off));
		if (rc == SLOT_WAIT)
			return SLOT_WAIT;
		if (rc && !ps->rc)
			ps->rc = rc;
		ps->done++;
	}
	return ps->rc;
}

/* An open slot's vertex begins once the call before ended at our end
 * of the slot: the sender knows its turns, the receiver learns them
 * from the first one's trailer. */
static int open_begin(struct nbr_inst *in, uint32_t v, int send, size_t len)
{
	struct part_state *ps = &in->part[v];
	uint32_t x = in->p->v[v].xfer;

	if (in->p->slots->calls[x] != in->call)
		return 0;
	ps->turns = send ? coop_nbr_open_turns(in->p, x, len,
					       in->poisoned[v]) : 1;
	ps->total = send ? len : UINT64_MAX;
	return 1;
}

/* One turn of open slot vertex v: the sender's part of a buffer (the
 * whole block when it does not stream), the receiver's into its block
 * as the trailer says - the first one's, more than a buffer, that its
 * sender streams it. */
static int open_turn(struct nbr_inst *in, uint32_t v, int send, char *buf,
		     size_t len)
{
	struct part_state *ps = &in->part[v];
	const struct nbr_slots *s = in->p->slots;
	uint32_t x = in->p->v[v].xfer;
	uint64_t cap = s->cap[x], off;
	int rc;

	if (send) {
		off = (uint64_t)ps->done * cap;
		return turn_try(in, v, slot_turn(in, v), buf + off,
				ps->turns > 1 ? COOP_MIN(cap, len - off) : len);
	}
	rc = turn_try(in, v, slot_turn(in, v), buf, len);
	if (!ps->done && ps->total != UINT64_MAX && ps->total > cap)
		ps->turns = coop_nbr_open_parts(in->p, x, ps->total);
	return rc;
}

/* An open slot's vertex: its turns, as far as they go (every one taken
 * even after one failed, as in parts_try).  Once they are all done, or
 * its data goes as a message, the slot's next call may begin. */
static int open_try(struct nbr_inst *in, uint32_t v, char *buf, size_t len)
{
	struct part_state *ps = &in->part[v];
	int send = in->p->v[v].kind == V_SEND, rc;

	if (!ps->turns && !open_begin(in, v, send, len))
		return SLOT_WAIT;
	do {
		rc = open_turn(in, v, send, buf, len);
		if (rc == SLOT_WAIT)
			return SLOT_WAIT;
		if (rc == SLOT_MSG)
			break;
		if (rc && !ps->rc)
			ps->rc = rc;
	} while (++ps->done < ps->turns);
	in->p->slots->calls[in->p->v[v].xfer]++;
	if (rc != SLOT_MSG)
		rc = ps->rc;
	ps->turns = ps->done = 0;
	ps->rc = 0;
	return rc;
}

/* One try of slot vertex v: SLOT_WAIT, SLOT_MSG (its data goes as a
 * message), or its result. */
static int slot_try(struct nbr_inst *in, uint32_t v)
{
	const struct nbr_vertex *vx = &in->p->v[v];
	size_t len;
	char *buf = ref_addr(in, &vx->ref, &len);

	if (in->p->slots->open)
		return open_try(in, v, buf, len);
	if (in->p->slots->parts[vx->xfer] > 1)
		return parts_try(in, v, buf, len);
	return turn_try(in, v, in->call, buf, len);
}

static void msg_start(struct nbr_inst *in, uint32_t v);

/* One try of slot vertex v: 1 it left the slot (done and queued, or
 * its data goes as a message), 0 it still waits. */
static int slot_step(struct nbr_inst *in, uint32_t v)
{
	int rc = slot_try(in, v);

	if (rc == SLOT_WAIT)
		return 0;
	if (rc == SLOT_MSG)
		msg_start(in, v);
	else
		queue_done(in, v, rc);
	return 1;
}

static void slot_start(struct nbr_inst *in, uint32_t v)
{
	if (slot_step(in, v))
		return;
	in->pend[in->npend++] = v;
	poll_link(in);
}

/* The tree holds of in that still wait: the number that ended. */
static int holds_poll(struct nbr_inst *in)
{
	uint32_t i;
	int n = 0;

	for (i = 0; i < in->nhold;) {
		if (coop_nbr_tree_hold(in->t, in->p, in->hold[i], in->call)) {
			in->hold[i] = in->hold[--in->nhold];
			n++;
		} else {
			i++;
		}
	}
	return n;
}

/* ---------------- flat calls ---------------- */

/*
 * A call whose every vertex is a slot send or
 * receive of the user's own blocks, or a copy to ourselves (no pack, no
 * forward: nothing waits for another vertex but the sends for the one
 * before) needs no wave front: its pending list is the plan's sends in
 * colour order (a self send stands for its receive too), then its
 * receives, and a loop takes each that can go, the sends in order.
 * Sends first: a peer takes our data while we look for its own (a
 * receive polled before its sender wrote only moves the line twice;
 * 2 ranks, 8 B: 0.34 -> 0.26 us per call).  Static sizes, or open
 * slots (which take every call, whatever its size), let the first call
 * decide for all; an open slot's larger data goes as a message, whose
 * request finishes the call when it is the last to end.
 * Express: a flat call of static slots, each block in one buffer, with
 * direct RTR and no copy to ourselves has nothing the slots' own calls
 * (canary.c) do not do - no message, part or tree word - so it first
 * tries its vertices straight (express_run).
 */
static int flat_plan(struct nbr_inst *in)
{
	struct nbr_plan *p = in->p;
	struct nbr_slots *s = p->slots;
	size_t len;
	uint32_t v;

	if (s->flat != FLAT_UNKNOWN)
		return s->flat == FLAT_YES;
	s->flat = FLAT_NO;
	s->express = !s->open && !s->streamed && !s->arity;
	for (v = 0; v < p->nv; v++) {
		const struct nbr_vertex *vx = &p->v[v];

		ref_addr(in, &vx->ref, &len);
		if (vx->kind == V_PACK || vx->ref.space == SP_TEMP ||
		    (vx->kind == V_SEND && vx->ref.space != SP_SEND) ||
		    (vx->mate == UINT32_MAX &&
		     !coop_nbr_slotted(p, vx->xfer, len)))
			return 0;
		s->express &= vx->mate == UINT32_MAX;
	}
	s->flat_order = malloc((p->nv ? p->nv : 1) * sizeof(*s->flat_order));
	if (!s->flat_order)
		return 0;
	for (v = 0; v < p->nv; v++)	/* a self send takes both ends */
		if (p->v[v].kind == V_SEND)
			s->flat_order[s->nflat++] = v;
	for (v = 0; v < p->nv; v++)
		if (p->v[v].kind != V_SEND && p->v[v].mate == UINT32_MAX)
			s->flat_order[s->nflat++] = v;
	s->flat = FLAT_YES;
	return 1;
}

/* Take what can go of a flat call; finish it when nothing is left
 * (an open slot's message may still be on its way: then its request
 * finishes it).  With several vertices pending the slots' lines are
 * asked for first, so their cache misses overlap; one vertex's prefetch
 * only delays it (one edge, plain calls of 8 / 64 B: 0.170 / 0.297 ->
 * 0.152 / 0.275 us per call without it). */
static int flat_poll(struct nbr_inst *in)
{
	uint32_t i, j = 0;
	int rc, n = 0, msgs = 0, send_waits = 0;

	for (i = 0; in->npend > 1 && i < in->npend; i++) {
		const struct nbr_vertex *vx = &in->p->v[in->pend[i]];

		if (vx->mate == UINT32_MAX)
			coop_nbr_slot_prefetch(in->p, vx->xfer,
					       slot_turn(in, in->pend[i]),
					       vx->kind == V_SEND);
	}
	for (i = 0; i < in->npend; i++) {
		uint32_t v = in->pend[i];
		int send = in->p->v[v].kind == V_SEND;

		if (in->p->v[v].mate != UINT32_MAX) {	/* both ends */
			rc = self_copy(in, v);
			if (rc && !in->err)
				in->err = rc;
			n += 2;
			continue;
		}
		rc = send && send_waits ? SLOT_WAIT : slot_try(in, v);
		if (rc == SLOT_WAIT) {
			send_waits |= send;
			in->pend[j++] = v;
			continue;
		}
		if (rc == SLOT_MSG) {
			msg_start(in, v);
			msgs++;
			continue;
		}
		if (rc && !in->err)
			in->err = rc;
		n++;
	}
	in->npend = j;
	in->finished += (uint32_t)n;
	if (!in->npend && !in->nhold) {
		if (dlist_linked(&in->plink))
			dlist_del(&in->plink);
		if (in->finished == in->p->nv)
			finish(in);
	}
	return n + msgs;
}

/* An express call's vertices' bytes and transfers, once per arguments
 * (a persistent request's are fixed). */
static void express_fill(struct nbr_inst *in)
{
	const struct nbr_plan *p = in->p;
	uint32_t i;

	for (i = 0; i < p->slots->nflat; i++) {
		const struct nbr_vertex *vx = &p->v[p->slots->flat_order[i]];
		struct express_vx *d = &in->xv[i];

		d->buf = ref_addr(in, &vx->ref, &d->len);
		d->x = vx->xfer;
		d->send = vx->kind == V_SEND;
	}
	in->xv_ok = 1;
}

/*
 * An express call (flat_plan) first tries its vertices once, in order,
 * on bytes looked up once, straight into the slots' own calls, and
 * stops at the first that waits, for flat_poll() to go on from there:
 * the number taken.  A call whose slots are all ready never builds a
 * pending list (one edge, static 8 B, persistent calls: 740 -> 530
 * instructions a receive, measured with callgrind).
 */
static uint32_t express_run(struct nbr_inst *in)
{
	struct nbr_plan *p = in->p;
	const struct express_vx *d;
	uint32_t i;
	int rc;

	if (!in->xv_ok)
		express_fill(in);
	for (i = 0; i < p->slots->nflat; i++) {
		d = &in->xv[i];
		if (d->send) {
			if (!coop_nbr_slot_ready(in->t, p, d->x, in->call,
						 d->len))
				break;
			coop_nbr_slot_write(p, d->x, in->call, d->buf, d->len,
					    0);
			continue;
		}
		rc = coop_nbr_slot_take(p, d->x, in->call, d->buf, d->len);
		if (rc == SLOT_WAIT)
			break;
		if (rc && !in->err)
			in->err = rc;
	}
	return i;
}

static void flat_start(struct nbr_inst *in)
{
	const struct nbr_slots *s = in->p->slots;
	uint32_t done = s->express ? express_run(in) : 0;

	in->finished = done;
	if (done == s->nflat) {	/* all taken (an express call's nflat is nv) */
		finish(in);
		return;
	}
	in->npend = s->nflat - done;
	memcpy(in->pend, s->flat_order + done,
	       in->npend * sizeof(*in->pend));
	flat_poll(in);
	if (in->npend || in->nhold)
		poll_link(in);
}

/* The slot vertices and tree holds of in that wait: the number done. */
static int slots_poll(struct nbr_inst *in)
{
	uint32_t i = 0;
	int n = 0;

	if (in->flat) {
		n = holds_poll(in);
		return n + flat_poll(in);
	}
	while (i < in->npend) {
		if (slot_step(in, in->pend[i])) {
			in->pend[i] = in->pend[--in->npend];
			n++;
		} else {
			i++;
		}
	}
	n += holds_poll(in);
	if (!in->npend && !in->nhold) {
		dlist_del(&in->plink);
		if (in->finished == in->p->nv)
			finish(in);
	}
	return n;
}

static int slots_waiting(const struct coop_context *ctx)
{
	return !dlist_empty(&ctx->coll->polling);
}

/* ---------------- point-to-point vertices ---------------- */

/*
 * The largest message of ours that takes the bounce copy.  Above it one
 * copy per byte beats a handshake saved - unless ranks share CPUs, where
 * each wait of the handshake is a context switch (4-8 ranks on 2 CPUs,
 * 16 and 32 KiB blocks: the bounce copy took 0.42-0.79x the time of a
 * single copy on every graph measured; at 64 KiB 0.72-1.15x).
 */
static size_t eager_max(const struct coop_context *ctx)
{
	return ctx->undersubscribed ? ctx->cfg.nbr_eager_max :
				      ctx->cfg.nbr_eager_shared;
}

static int vertex_tag(const struct nbr_inst *in, const struct nbr_vertex *vx)
{
	return (int)(vx->xfer << SEQ_BITS | in->seq);
}

/* A send that fits a packet or a span goes with no request, as a
 * blocking standard send of that size does: 1 when it went (or failed),
 * 0 when it needs a request. */
static int send_inline(struct nbr_inst *in, uint32_t v, const char *buf,
		       size_t len)
{
	const struct nbr_vertex *vx = &in->p->v[v];
	struct coop_context *ctx = in->t->ctx;
	int rc;

	if (!coop_eager_fast_fits(ctx, len))
		return 0;
	rc = coop_eager_inline_fast(ctx, buf, len, vx->peer,
				    vertex_tag(in, vx), (uint16_t)in->t->comm);
	if (rc == -EAGAIN)
		return 0;
	queue_done(in, v, rc);
	return 1;
}

/* A receive whose message already came inline takes it with no
 * request: 1 when it did. */
static int recv_arrived(struct nbr_inst *in, uint32_t v, char *buf,
			size_t len)
{
	const struct nbr_vertex *vx = &in->p->v[v];
	size_t got;

	if (!coop_p2p_take_inline(in->t->ctx, buf, len, vx->peer,
				  vertex_tag(in, vx), (uint16_t)in->t->comm,
				  &got))
		return 0;
	queue_done(in, v, recv_result(got, len));
	return 1;
}

/* Vertex v's data as a point-to-point message.  COOP error. */
static int msg_child(struct nbr_inst *in, uint32_t v)
{
	const struct nbr_vertex *vx = &in->p->v[v];
	struct coop_context *ctx = in->t->ctx;
	struct coop_request *r;
	size_t len;
	char *buf = ref_addr(in, &vx->ref, &len);
	int rc = COOP_SUCCESS;

	if (vx->kind == V_SEND && in->poisoned[v])
		len = 0;	/* tells the receiver the data is lost */
	if (vx->kind == V_SEND ? send_inline(in, v, buf, len) :
				 recv_arrived(in, v, buf, len))
		return COOP_SUCCESS;
	r = coop_req_new_msg(ctx, vx->kind == V_RECV ? REQ_RECV : REQ_SEND,
			     buf, len, vx->peer, vertex_tag(in, vx),
			     in->t->comm);
	if (!r)
		return COOP_ERR_NOMEM;
	if (len > eager_max(ctx))
		r->msg.flags |= REQ_F_SINGLE_COPY |
			    (in->p->xf[vx->xfer].sender_idle ?
			     REQ_F_SENDER_IDLE : 0) |
			    (in->p->xf[vx->xfer].receiver_copies ?
			     REQ_F_RECEIVER_COPIES : 0);
	r->owner.complete_cb = child_done;
	r->owner.data = &in->refs[v];
	coop_req_activate(r);
	if (vx->kind == V_RECV)
		coop_p2p_recv_post(ctx, r);
	else
		rc = coop_p2p_send_start(ctx, r);
	if (rc && !r->complete)
		coop_req_fail(r, rc);	/* queues the vertex, failed */
	return COOP_SUCCESS;
}

static void msg_start(struct nbr_inst *in, uint32_t v)
{
	int rc = msg_child(in, v);

	if (rc)
		queue_done(in, v, rc);
}

static int start_child(struct nbr_inst *in, uint32_t v)
{
	const struct nbr_vertex *vx = &in->p->v[v];
	size_t len;

	if (vx->mate != UINT32_MAX) {	/* the send does both ends */
		if (vx->kind == V_SEND) {
			queue_done(in, vx->mate, self_copy(in, v));
			queue_done(in, v, COOP_SUCCESS);
		}
		return COOP_SUCCESS;
	}
	ref_addr(in, &vx->ref, &len);
	if (coop_nbr_slotted(in->p, vx->xfer, len)) {
		slot_start(in, v);
		return COOP_SUCCESS;
	}
	if (vx->kind == V_RECV && in->p->slots &&
	    in->p->slots->cap[vx->xfer]) {
		coop_nbr_slot_pass(in->p, vx->xfer, in->call);
		hold_start(in, vx->xfer);
	}
	return msg_child(in, v);
}

static void run_pack(struct nbr_inst *in, uint32_t v)
{
	const struct nbr_vertex *vx = &in->p->v[v];
	uint32_t i;
	size_t n, m;

	for (i = 0; !in->poisoned[v] && i < vx->nsegs; i++) {
		const struct nbr_seg *s = &in->p->seg[vx->seg0 + i];
		char *dst = ref_addr(in, &s->dst, &n);
		const char *src = ref_addr(in, &s->src, &m);

		memcpy(dst, src, COOP_MIN(n, m));
	}
	queue_done(in, v, COOP_SUCCESS);
}

static void run_vertex(struct nbr_inst *in, uint32_t v)
{
	int rc;

	if (in->p->v[v].kind == V_PACK) {
		run_pack(in, v);
		return;
	}
	rc = start_child(in, v);
	if (rc)
		queue_done(in, v, rc);
}

/* ---------------- the wave front ---------------- */

static void finish(struct nbr_inst *in)
{
	struct coop_context *ctx = in->t->ctx;

	if (in->running && !--ctx->coll->running)
		coop_up_switch(ctx, ctx->coll->up, 0);
	in->running = 0;
	if (in->err)
		coop_req_set_error(in->req, in->err);
	coop_req_event(in->req, EV_LOCAL);
}

/* Release the successors of the queued vertices: the number taken. */
static int drain(struct nbr_inst *in)
{
	const struct nbr_plan *p = in->p;
	uint32_t v, i;
	int err, n = 0;

	while (in->ndone) {
		v = in->doneq[--in->ndone];
		err = in->doneerr[in->ndone];
		if (err && !in->err)
			in->err = err;
		in->finished++;
		n++;
		/* a flat call's order is its loop's (its deps are not set) */
		for (i = 0; !in->flat && i < p->v[v].nsucc; i++) {
			uint32_t s = p->succ[p->v[v].succ0 + i];

			in->poisoned[s] |= err || in->poisoned[v];
			if (!--in->deps[s])
				run_vertex(in, s);
		}
	}
	if (dlist_linked(&in->link))
		dlist_del(&in->link);
	if (in->finished == p->nv && !in->nhold)
		finish(in);
	return n;
}

static int coll_progress(struct coop_context *ctx)
{
	struct dlist *ready = &ctx->coll->ready, *pos, *next;
	int n = 0;

	for (pos = ctx->coll->polling.next; pos != &ctx->coll->polling;
	     pos = next) {
		next = pos->next;
		n += slots_poll(container_of(pos, struct nbr_inst, plink));
	}
	while (!dlist_empty(ready))
		n += drain(container_of(ready->next, struct nbr_inst, link));
	return n;
}

/* The layer's progress upcall runs while an instance waits for
 * anything; a flat call that ends in its start never counts (one edge,
 * static 8 B: setting the upcall and clearing it again were ~55 of ~800
 * instructions a receive). */
static void run_begin(struct nbr_inst *in)
{
	struct coop_context *ctx = in->t->ctx;

	in->running = 1;
	if (!ctx->coll->running++)
		coop_up_switch(ctx, ctx->coll->up, 1);
}

/* ---------------- instances and their requests ---------------- */

static void inst_free(struct nbr_inst *in)
{
	free(in->temp);
	free(in->deps);
	free(in->poisoned);
	free(in->refs);
	free(in->doneq);
	free(in->doneerr);
	free(in->pend);
	free(in->part);
	free(in->hold);
	free(in->xv);
	free(in);
}

static struct nbr_inst *inst_new(struct coop_topo *t,
				 struct nbr_plan *p,
				 const struct nbr_args *a)
{
	struct nbr_inst *in = calloc(1, sizeof(*in));
	size_t nv = p->nv ? p->nv : 1;
	uint32_t v;

	if (!in)
		return NULL;
	in->t = t;
	in->p = p;
	in->a = *a;
	in->temp = p->temp ? malloc(p->temp) : NULL;
	in->deps = malloc(nv * sizeof(*in->deps));
	in->poisoned = calloc(nv, 1);
	in->refs = malloc(nv * sizeof(*in->refs));
	in->doneq = malloc(nv * sizeof(*in->doneq));
	in->doneerr = malloc(nv * sizeof(*in->doneerr));
	in->pend = malloc(nv * sizeof(*in->pend));
	in->part = calloc(nv, sizeof(*in->part));
	in->hold = malloc(nv * sizeof(*in->hold));
	in->xv = malloc(nv * sizeof(*in->xv));
	dlist_init(&in->link);
	dlist_init(&in->plink);
	if ((p->temp && !in->temp) || !in->deps || !in->poisoned ||
	    !in->refs || !in->doneq || !in->doneerr || !in->pend ||
	    !in->part || !in->hold || !in->xv) {
		inst_free(in);
		return NULL;
	}
	for (v = 0; v < p->nv; v++)
		in->refs[v] = (struct vref){ in, v };
	return in;
}

/* The topology keeps one instance per op for the next call (a
 * blocking call's set-up then allocates nothing). */
static void req_gone(struct coop_request *r)
{
	struct nbr_inst *in = r->owner.data;
	struct nbr_inst **spare = &in->t->spare[in->p->op];

	in->t->nreqs--;
	if (!*spare)
		*spare = in;
	else
		inst_free(in);
	r->owner.data = NULL;
}

static struct nbr_inst *inst_get(struct coop_topo *t, struct nbr_plan *p,
				 const struct nbr_args *a)
{
	struct nbr_inst *in = t->spare[p->op];

	if (!in)
		return inst_new(t, p, a);
	t->spare[p->op] = NULL;
	in->a = *a;
	in->xv_ok = 0;
	return in;
}

void coop_coll_spares_free(struct coop_topo *t)
{
	int op;

	for (op = 0; op < NBR_OPS; op++) {
		if (t->spare[op])
			inst_free(t->spare[op]);
		t->spare[op] = NULL;
	}
}

int coop_coll_request(struct coop_topo *t, struct nbr_plan *p,
		      const struct nbr_args *a, int persistent,
		      struct coop_request **out)
{
	struct coop_request *r;
	struct nbr_inst *in;

	in = inst_get(t, p, a);
	r = in ? coop_req_new(t->ctx, REQ_COLL) : NULL;
	if (!r) {
		if (in)
			inst_free(in);
		return COOP_ERR_NOMEM;
	}
	r->msg.peer = COOP_ANY_SOURCE;
	r->msg.tag = COOP_ANY_TAG;
	r->msg.comm = t->comm;
	r->owner.data = in;
	r->owner.free_cb = req_gone;
	r->persistent = (uint8_t)persistent;
	r->complete = 1;	/* inactive until started */
	in->req = r;
	t->nreqs++;
	*out = r;
	return COOP_SUCCESS;
}

int coop_coll_start(struct coop_request *r)
{
	struct nbr_inst *in = r->owner.data;
	struct nbr_plan *p = in->p;
	uint32_t v;

	coop_req_activate(r);
	r->status.count = 0;
	r->pending = EV_LOCAL;
	in->seq = (uint16_t)(in->t->seq++ & ((1u << SEQ_BITS) - 1));
	in->call = in->t->calls[p->op]++;
	in->ndone = in->finished = 0;
	in->npend = in->nhold = 0;
	in->err = COOP_SUCCESS;
	if (p->slots && p->slots->streamed)
		memset(in->part, 0, p->nv * sizeof(*in->part));
	in->flat = p->slots && flat_plan(in);
	if (in->flat) {	/* nothing poisons: in->poisoned stays 0 */
		flat_start(in);
		if (!r->complete)
			run_begin(in);
		return COOP_SUCCESS;
	}
	run_begin(in);
	memset(in->poisoned, 0, p->nv ? p->nv : 1);
	for (v = 0; v < p->nv; v++)
		in->deps[v] = p->v[v].ndeps;
	for (v = 0; v < p->nv; v++)
		if (!p->v[v].ndeps)
			run_vertex(in, v);
	drain(in);
	return COOP_SUCCESS;
}

int coop_coll_start_with(struct coop_request *r, const struct nbr_args *a)
{
	struct nbr_inst *in = r->owner.data;

	in->a = *a;
	in->xv_ok = 0;
	return coop_coll_start(r);
}

int coop_coll_layer_init(struct coop_context *ctx)
{
	ctx->coll = calloc(1, sizeof(*ctx->coll));
	if (!ctx->coll)
		return COOP_ERR_NOMEM;
	dlist_init(&ctx->coll->ready);
	dlist_init(&ctx->coll->polling);
	ctx->coll->up = coop_up_register(ctx, coll_progress, slots_waiting);
	if (ctx->coll->up < 0) {
		free(ctx->coll);
		ctx->coll = NULL;
		return COOP_ERR_NOMEM;
	}
	return COOP_SUCCESS;
}

void coop_coll_layer_fini(struct coop_context *ctx)
{
	if (ctx->coll)
		coop_up_switch(ctx, ctx->coll->up, 0);
	free(ctx->coll);
	ctx->coll = NULL;
}
