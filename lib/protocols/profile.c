/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * profile.c - [Marathe]'s profile-guided protocol selection
 * (COOP_RNDV=profile).
 *
 * The application marks its communication phases with coop_pcontrol(ctx,
 * n) (what MPI_Pcontrol(n) maps to).  In each iteration of a phase every
 * rank logs, per peer and direction, its rendezvous messages: sizes, and
 * when each post and each completion call began and ended (the compute
 * between them is what lies between).  When the rank leaves the phase it
 * publishes its receive logs in its staging file's notes.  In the next
 * iteration, a send to peer d looks up d's log of the previous iteration
 * for messages from us, puts it next to our own send log of that
 * iteration and replays both under each protocol (model.c: RGET, RPUT,
 * pre-copy, post-copy); the one that ends the pair soonest is used for
 * every send to d in this iteration.  Without both logs (the first
 * iteration, a peer that is late publishing) the send goes by RGET, the
 * library's plain sender-initiated rendezvous; so do sends outside
 * phases.
 *
 * What is logged per (phase, peer, direction): the first PROF_MSGS
 * messages and PROF_EVENTS calls (more are not modelled).  Receives
 * posted for COOP_ANY_SOURCE are not logged (no pair to charge them to).
 * A log is published under a sequence count (odd while written) with
 * the phase id and the iteration; a reader copies it and checks both.
 *
 * The calls reach this file as the core's observer (struct
 * coop_observer_ops, registered at init): posts, completion calls, time
 * blocked in them and coop_pcontrol, reported by the API layer through
 * the core.  rndv.c asks for the choice through ctx->proto's
 * profile_choice, set here too.
 *
 * Calls are timed on a compute clock: the wall clock less the time this
 * rank spent blocked in completion calls.  What lies between two logged
 * calls is then the rank's own work, not waits in other communication
 * (a barrier, eager messages) whose length depends on the protocol
 * used.  Only the phase's start is on the wall clock too, to line the
 * two ranks up.
 *
 * Costs (struct coop_model_costs): the copies' rates are measured at the
 * first prediction (memcpy for the staging copies, the provider's single
 * copy for RGET/RPUT, 4 MiB each); a call and a control packet are taken
 * as 1 us and 2 us.
 */
#include <stdlib.h>
#include <string.h>

#include "proto.h"

#define PROF_PHASES 8
#define PROF_MSGS 64
#define PROF_EVENTS 128
#define CALIB_BYTES (4u << 20)

struct prof_event {
	uint64_t enter, leave;
	uint32_t msg;
	uint32_t op;		/* enum coop_model_op */
};

struct prof_log {
	uint32_t seq;		/* published copy: odd while written */
	int32_t phase;
	uint32_t iter;
	uint32_t nmsg, nev;
	uint32_t pad;
	uint64_t start;		/* this side entered the phase (wall) */
	uint64_t start_compute;	/* ... on the compute clock */
	uint64_t end;		/* ... and left it (compute clock) */
	uint64_t bytes[PROF_MSGS];
	struct prof_event ev[PROF_EVENTS];
};

enum { DIR_SEND, DIR_RECV };

struct prof_slot {
	int32_t phase;		/* the phase id it tracks, 0: free */
	uint32_t iter;		/* iterations entered */
	uint64_t start, start_compute;
	struct prof_log **cur[2];	/* [peer], this iteration's */
	struct prof_log **prev_send;	/* [peer], the last iteration's */
	uint32_t *chosen_iter;		/* [peer]: decided for this iter */
	uint8_t *chosen;		/* [peer]: enum coop_proto */
};

/* The record of a request the profile logged, in a table by the
 * request's pool index: it is r's while req and gen are r's. */
struct prof_rec {
	const struct coop_request *req;
	uint32_t gen;
	uint16_t msg;		/* index + 1 in its log, 0: none */
	uint8_t slot;		/* the phase's slot */
	uint8_t dir;		/* 0 send, 1 receive */
	uint32_t iter;		/* the phase iteration it was posted in */
	uint64_t wait_ns;	/* a completion call for it began */
};

struct coop_profile {
	struct prof_slot slot[PROF_PHASES];
	struct prof_rec *recs;
	uint32_t nrecs;
	int cur;		/* the slot of the phase we are in, -1 */
	struct coop_model_costs costs;
	int calibrated;
	uint64_t blocked_ns;	/* spent blocked in completion calls */
};

static void add_blocked(struct coop_context *ctx, uint64_t ns)
{
	ctx->proto->profile->blocked_ns += ns;
}

static uint64_t compute_clock(const struct coop_context *ctx)
{
	return coop_now_ns() - ctx->proto->profile->blocked_ns;
}

static void slot_free(struct prof_slot *s, int n)
{
	int d, i;

	for (i = 0; i < 2; i++)
		for (d = 0; s->cur[i] && d < n; d++)
			free(s->cur[i][d]);
	for (d = 0; s->prev_send && d < n; d++)
		free(s->prev_send[d]);
	free(s->cur[0]);
	free(s->cur[1]);
	free(s->prev_send);
	free(s->chosen_iter);
	free(s->chosen);
	memset(s, 0, sizeof(*s));
}

/* ---------------- phases ---------------- */

static int slot_of(int phase)
{
	return (int)((unsigned)phase % PROF_PHASES);
}

static int slot_take(struct prof_slot *s, int phase, int n)
{
	slot_free(s, n);
	s->phase = phase;
	s->cur[0] = calloc((size_t)n, sizeof(*s->cur[0]));
	s->cur[1] = calloc((size_t)n, sizeof(*s->cur[1]));
	s->prev_send = calloc((size_t)n, sizeof(*s->prev_send));
	s->chosen_iter = calloc((size_t)n, sizeof(*s->chosen_iter));
	s->chosen = calloc((size_t)n, sizeof(*s->chosen));
	if (s->cur[0] && s->cur[1] && s->prev_send && s->chosen_iter &&
	    s->chosen)
		return 0;
	slot_free(s, n);
	return -1;
}

/* Copy log l into the notes area entry e, under its sequence count. */
static void publish(struct prof_log *e, const struct prof_log *l)
{
	uint32_t s = __atomic_load_n(&e->seq, __ATOMIC_RELAXED);

	__atomic_store_n(&e->seq, s + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memcpy((char *)e + sizeof(e->seq), (const char *)l + sizeof(l->seq),
	       sizeof(*l) - sizeof(l->seq));
	__atomic_store_n(&e->seq, s + 2, __ATOMIC_RELEASE);
}

static struct prof_log *notes_entry(unsigned char *notes, int slot, int src,
				    int n)
{
	return (struct prof_log *)notes + (size_t)slot * (size_t)n +
	       (size_t)src;
}

/* We leave the phase of slot i: publish its receive logs, keep its send
 * logs as the last iteration's. */
static void phase_end(struct coop_context *ctx, int i)
{
	struct prof_slot *s = &ctx->proto->profile->slot[i];
	unsigned char *notes = coop_staged_notes(ctx, ctx->rank);
	uint64_t now = compute_clock(ctx);
	int d;

	for (d = 0; d < ctx->size; d++) {
		struct prof_log *l = s->cur[DIR_RECV][d];

		if (s->cur[DIR_SEND][d])
			s->cur[DIR_SEND][d]->end = now;
		if (l)
			l->end = now;
		if (l && notes)
			publish(notes_entry(notes, i, d, ctx->size), l);
		free(l);
		s->cur[DIR_RECV][d] = NULL;
		free(s->prev_send[d]);
		s->prev_send[d] = s->cur[DIR_SEND][d];
		s->cur[DIR_SEND][d] = NULL;
	}
}

static int set_phase(struct coop_context *ctx, int phase)
{
	struct coop_profile *pf = ctx->proto->profile;
	struct prof_slot *s;
	int i;

	if (pf->cur >= 0)
		phase_end(ctx, pf->cur);
	pf->cur = -1;
	if (phase <= 0)
		return COOP_SUCCESS;
	i = slot_of(phase);
	s = &pf->slot[i];
	if (s->phase != phase && slot_take(s, phase, ctx->size))
		return COOP_ERR_NOMEM;
	s->iter++;
	s->start = coop_now_ns();
	s->start_compute = compute_clock(ctx);
	pf->cur = i;
	return COOP_SUCCESS;
}

/* ---------------- logging ---------------- */

static struct prof_log *log_of(struct coop_context *ctx, int dir, int peer)
{
	struct coop_profile *pf = ctx->proto->profile;
	struct prof_slot *s = &pf->slot[pf->cur];
	struct prof_log **lp = &s->cur[dir][peer];

	if (!*lp) {
		*lp = calloc(1, sizeof(**lp));
		if (!*lp)
			return NULL;
		(*lp)->phase = s->phase;
		(*lp)->iter = s->iter;
		(*lp)->start = s->start;
		(*lp)->start_compute = s->start_compute;
	}
	return *lp;
}

static void add_event(struct prof_log *l, uint32_t msg, uint32_t op,
		      uint64_t enter, uint64_t leave)
{
	if (l->nev < PROF_EVENTS)
		l->ev[l->nev++] = (struct prof_event){ enter, leave, msg, op };
}

/* r's record, NULL when r is not being logged. */
static struct prof_rec *rec_of(struct coop_profile *pf,
			       const struct coop_request *r)
{
	struct prof_rec *rec;

	if (r->pobj.index >= pf->nrecs)
		return NULL;
	rec = &pf->recs[r->pobj.index];
	if (rec->req != r || rec->gen != r->pobj.gen || !rec->msg)
		return NULL;	/* another request's, or r's last start's */
	return rec;
}

/* A new record for pooled r, NULL when out of memory. */
static struct prof_rec *rec_new(struct coop_profile *pf,
				const struct coop_request *r)
{
	uint32_t i = r->pobj.index, n = pf->nrecs;
	struct prof_rec *recs;

	if (i >= n) {
		while (n <= i)
			n = n ? 2 * n : 64;
		recs = realloc(pf->recs, n * sizeof(*recs));
		if (!recs)
			return NULL;
		memset(recs + pf->nrecs, 0, (n - pf->nrecs) * sizeof(*recs));
		pf->recs = recs;
		pf->nrecs = n;
	}
	pf->recs[i] = (struct prof_rec){ .req = r, .gen = r->pobj.gen };
	return &pf->recs[i];
}

static void log_post(struct coop_request *r, uint64_t enter_ns)
{
	struct coop_context *ctx = r->ctx;
	struct coop_profile *pf = ctx->proto->profile;
	int dir = r->kind == REQ_SEND ? DIR_SEND : DIR_RECV;
	struct prof_rec *rec = rec_of(pf, r);
	struct prof_log *l;

	if (rec)		/* a persistent request's last start */
		rec->msg = 0;
	if (pf->cur < 0 || !r->pobj.in_use || r->msg.peer < 0 ||
	    r->msg.peer >= ctx->size || r->msg.len <= ctx->cfg.eager_max ||
	    (r->kind != REQ_SEND && r->kind != REQ_RECV))
		return;
	l = log_of(ctx, dir, r->msg.peer);
	if (!l || l->nmsg >= PROF_MSGS)
		return;
	rec = rec_new(pf, r);
	if (!rec)
		return;
	l->bytes[l->nmsg] = r->msg.len;
	add_event(l, l->nmsg, COOP_MODEL_POST, enter_ns,
		  compute_clock(ctx));
	rec->msg = (uint16_t)(++l->nmsg);
	rec->slot = (uint8_t)pf->cur;
	rec->dir = (uint8_t)dir;
	rec->iter = pf->slot[pf->cur].iter;
}

/* The first completion call for r ends the compute before its wait. */
static void wait_began(struct coop_request *r)
{
	struct prof_rec *rec = rec_of(r->ctx->proto->profile, r);

	if (rec && !rec->wait_ns)
		rec->wait_ns = compute_clock(r->ctx);
}

/* A completion call returns it: its wait, from its first completion
 * call on, ends now. */
static void log_completion(struct coop_request *r)
{
	struct coop_context *ctx = r->ctx;
	struct coop_profile *pf = ctx->proto->profile;
	struct prof_rec *rec = rec_of(pf, r);
	struct prof_slot *s;
	struct prof_log *l;
	uint64_t now;

	if (!rec)
		return;
	if (pf->cur != rec->slot)
		goto done;
	s = &pf->slot[rec->slot];
	l = s->cur[rec->dir][r->msg.peer];
	if (!l || s->iter != rec->iter)
		goto done;	/* completed in a later phase or iteration */
	now = compute_clock(ctx);
	add_event(l, rec->msg - 1u, COOP_MODEL_WAIT,
		  rec->wait_ns ? rec->wait_ns : now, now);
done:
	rec->msg = 0;
}

/* ---------------- prediction ---------------- */

static double ns_per_byte(uint64_t ns, size_t bytes)
{
	return (double)ns / (double)bytes;
}

/* The copies' rates, measured once: best of 3 of each; the
 * cross-process one as jobs copy (through a window when there is one). */
static void calibrate(struct coop_context *ctx, struct coop_profile *pf)
{
	char *a = malloc(2 * CALIB_BYTES);
	uint64_t mem = UINT64_MAX, cma = UINT64_MAX, t;
	struct coop_rkey key;
	int i, reg;

	pf->calibrated = 1;
	pf->costs.copy_ns_per_byte = pf->costs.local_ns_per_byte =
		pf->costs.remote_ns_per_byte = 0.1;	/* 10 GB/s */
	if (!a)
		return;
	memset(a, 1, 2 * CALIB_BYTES);
	reg = !ctx->prov.ops->reg(&ctx->prov, a + CALIB_BYTES, CALIB_BYTES,
				  COOPMPI_REGION_WRITE, &key);
	for (i = 0; i < 3; i++) {
		t = coop_now_ns();
		memcpy(a + CALIB_BYTES, a, CALIB_BYTES);
		t = coop_now_ns() - t;
		mem = COOP_MIN(mem, t);
		t = coop_now_ns();
		if (reg && coop_copy_chunk(ctx, ctx->rank, &key, 0, a,
					   CALIB_BYTES, COOP_COPY_TO_PEER, 0,
					   NULL) >= 0) {
			t = coop_now_ns() - t;
			cma = COOP_MIN(cma, t);
		}
	}
	if (reg)
		ctx->prov.ops->dereg(&ctx->prov, &key);
	free(a);
	pf->costs.local_ns_per_byte = ns_per_byte(mem, CALIB_BYTES);
	pf->costs.remote_ns_per_byte = pf->costs.local_ns_per_byte;
	pf->costs.copy_ns_per_byte = cma == UINT64_MAX ?
		pf->costs.local_ns_per_byte : ns_per_byte(cma, CALIB_BYTES);
}

/* A consistent copy of peer's published log of our messages to it in
 * the phase of slot i, iteration iter: 0, or -1 (none such). */
static int peer_log(struct coop_context *ctx, int i, int peer,
		    int32_t phase, uint32_t iter, struct prof_log *out)
{
	unsigned char *notes = coop_staged_notes(ctx, peer);
	const struct prof_log *e;
	uint32_t s1;

	if (!notes)
		return -1;
	e = notes_entry(notes, i, ctx->rank, ctx->size);
	s1 = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
	if (s1 & 1)
		return -1;
	memcpy(out, e, sizeof(*out));
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&e->seq, __ATOMIC_RELAXED) != s1 ||
	    out->phase != phase || out->iter != iter)
		return -1;
	out->nmsg = COOP_MIN(out->nmsg, PROF_MSGS);
	out->nev = COOP_MIN(out->nev, PROF_EVENTS);
	return 0;
}

/* A side's log as the model's events: gaps from t0 (wall clock), then
 * from the end of its previous call; events of messages beyond nmsg
 * dropped; *tail: from its last call to its leaving the phase. */
static uint32_t to_events(const struct prof_log *l, uint64_t t0,
			  uint32_t nmsg, struct coop_model_event *ev,
			  uint64_t *tail)
{
	uint64_t late = l->start - t0, last = l->start_compute;
	uint32_t i, n = 0;

	for (i = 0; i < l->nev; i++) {
		const struct prof_event *e = &l->ev[i];

		if (e->msg >= nmsg)
			continue;
		ev[n].msg = e->msg;
		ev[n].op = (uint8_t)e->op;
		ev[n].gap_ns = (e->enter > last ? e->enter - last : 0) + late;
		late = 0;
		last = e->leave > e->enter ? e->leave : e->enter;
		n++;
	}
	*tail = l->end > last ? l->end - last : 0;
	return n;
}

static const enum coop_proto model_proto[COOP_MODEL_COUNT] = {
	[COOP_MODEL_RGET] = PROTO_RGET, [COOP_MODEL_RPUT] = PROTO_RPUT,
	[COOP_MODEL_PRECOPY] = PROTO_PRECOPY,
	[COOP_MODEL_POSTCOPY] = PROTO_POSTCOPY,
};

/* The prediction from our send log and the peer's receive log. */
static int predict(struct coop_context *ctx, const struct prof_log *snd,
		   const struct prof_log *rcv, uint64_t end[COOP_MODEL_COUNT])
{
	struct coop_profile *pf = ctx->proto->profile;
	struct coop_model_event es[PROF_EVENTS], er[PROF_EVENTS];
	uint64_t t0 = COOP_MIN(snd->start, rcv->start);
	uint32_t nmsg = COOP_MIN(snd->nmsg, rcv->nmsg);
	struct coop_model_pair p = { snd->bytes, nmsg, es, er, 0, 0, 0, 0 };

	if (!pf->calibrated)
		calibrate(ctx, pf);
	p.nsend = to_events(snd, t0, nmsg, es, &p.tail_send);
	p.nrecv = to_events(rcv, t0, nmsg, er, &p.tail_recv);
	return coop_model_best(&pf->costs, &p, end);
}

/* The protocol of rendezvous send r: the one predicted best for its
 * phase and destination, RGET while there is no prediction yet. */
static enum coop_proto choose(struct coop_context *ctx,
			      const struct coop_request *r)
{
	struct coop_profile *pf = ctx->proto->profile;
	struct prof_slot *s;
	struct prof_log *peer;
	uint64_t end[COOP_MODEL_COUNT];
	int d = r->msg.peer, best;

	if (pf->cur < 0)
		return PROTO_RGET;
	s = &pf->slot[pf->cur];
	if (s->chosen_iter[d] == s->iter)
		return (enum coop_proto)s->chosen[d];
	peer = malloc(sizeof(*peer));
	best = peer && s->prev_send[d] &&
	       !peer_log(ctx, pf->cur, d, s->phase, s->prev_send[d]->iter,
			 peer) ? predict(ctx, s->prev_send[d], peer, end) : -1;
	free(peer);
	if (best < 0)
		return PROTO_RGET;	/* nothing to go by (yet) */
	s->chosen_iter[d] = s->iter;
	s->chosen[d] = (uint8_t)model_proto[best];
	if (ctx->cfg.verbose)
		coop_log(ctx->rank, "profile: phase %d, to rank %d: %s (the "
			 "last iteration replayed, us: rget %.1f rput %.1f "
			 "precopy %.1f postcopy %.1f)", s->phase, d,
			 coop_proto_ops(ctx, model_proto[best])->name,
			 (double)end[0] / 1e3, (double)end[1] / 1e3,
			 (double)end[2] / 1e3, (double)end[3] / 1e3);
	return model_proto[best];
}

/* ---------------- set-up ---------------- */

static const struct coop_observer_ops profile_observer = {
	.clock = compute_clock,
	.posted = log_post,
	.wait_began = wait_began,
	.completed = log_completion,
	.blocked = add_blocked,
	.phase = set_phase,
};

int coop_proto_observer_init(struct coop_context *ctx)
{
	struct coop_proto_state *ps = ctx->proto;
	struct coop_profile *pf;

	if (ctx->cfg.rndv != COOP_RNDV_PROFILE || ctx->dynamic)
		return COOP_SUCCESS;
	pf = calloc(1, sizeof(*pf));
	if (!pf)
		return COOP_ERR_NOMEM;
	pf->cur = -1;
	pf->costs.call_ns = 1000;
	pf->costs.hop_ns = 2000;
	ps->profile = pf;
	ps->stage_notes_bytes = (uint64_t)PROF_PHASES * (uint64_t)ctx->size *
				sizeof(struct prof_log);
	ps->profile_choice = choose;
	coop_observer_register(ctx, &profile_observer);
	return COOP_SUCCESS;
}

void coop_proto_observer_fini(struct coop_context *ctx)
{
	struct coop_proto_state *ps = ctx->proto;
	int i;

	if (!ps->profile)
		return;
	coop_observer_unregister(ctx);
	ps->profile_choice = NULL;
	for (i = 0; i < PROF_PHASES; i++)
		slot_free(&ps->profile->slot[i], ctx->size);
	free(ps->profile->recs);
	free(ps->profile);
	ps->profile = NULL;
}
