/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * model.c - the replay of model.h: a discrete-event simulation of the
 * two ranks of a pair.  Each rank is a sequence of steps (start a call,
 * its own work, one ready piece of work, end the call); the step that
 * starts earliest runs next, so whatever the other rank makes ready
 * before a step starts is seen by it.
 */
#include <stdlib.h>
#include <string.h>

#include "model.h"

#define NEVER UINT64_MAX
enum { SEND, RECV };

enum { WORK_NONE, WORK_COPY, WORK_ANSWER };

struct mstate {
	uint64_t posted[2];	/* post call's start, NEVER: not yet */
	uint64_t ready[2];	/* the packet this side's work waits for
				 * (RTS, CTS, FIN) arrives, NEVER: not sent */
	uint8_t work[2];	/* this side's next piece (WORK_*) */
	uint8_t complete[2];
};

struct side {
	const struct coop_model_event *ev;
	uint32_t nev, pc;
	uint64_t clock;
	int in_call;		/* executing ev[pc] */
	int post_done;		/* ... its own work done */
};

struct sim {
	const struct coop_model_costs *c;
	const struct coop_model_pair *p;
	enum coop_model_proto proto;
	struct mstate *m;
	struct side s[2];
};

static uint64_t cost(double ns_per_byte, uint64_t bytes)
{
	return (uint64_t)(ns_per_byte * (double)bytes);
}

/* The copy side x does for message k (when it has work), ns. */
static uint64_t copy_cost(const struct sim *sm, int x, uint32_t k)
{
	const struct coop_model_costs *c = sm->c;
	uint64_t b = sm->p->bytes[k];

	switch (sm->proto) {
	case COOP_MODEL_PRECOPY:
		return cost(x == SEND ? c->local_ns_per_byte :
					c->remote_ns_per_byte, b);
	case COOP_MODEL_POSTCOPY:
		return cost(x == SEND ? c->remote_ns_per_byte :
					c->local_ns_per_byte, b);
	default:
		return cost(c->copy_ns_per_byte, b);
	}
}

/* Side x posts message k at time t (the call's cost paid): its own part
 * and what it sends; the time its post's own work ends. */
static uint64_t post(struct sim *sm, int x, uint32_t k, uint64_t t)
{
	struct mstate *m = &sm->m[k];
	uint64_t hop = sm->c->hop_ns;
	int staged = sm->proto == COOP_MODEL_PRECOPY ||
		     sm->proto == COOP_MODEL_POSTCOPY;

	m->posted[x] = t;
	if (x == SEND) {
		if (staged) {
			t += copy_cost(sm, SEND, k);
			m->complete[SEND] = 1;
		}
		m->ready[RECV] = t + hop;	/* the RTS */
		m->work[SEND] = sm->proto == COOP_MODEL_RPUT ? WORK_COPY :
							       WORK_NONE;
	} else {
		m->work[RECV] = sm->proto == COOP_MODEL_RPUT ? WORK_ANSWER :
							       WORK_COPY;
	}
	return t;
}

/* One ready piece of side x's work at its clock, oldest message first:
 * 1 done (clock moved), 0 none ready. */
static int ready_work(struct sim *sm, int x)
{
	struct side *sd = &sm->s[x];
	uint32_t k;

	for (k = 0; k < sm->p->nmsg; k++) {
		struct mstate *m = &sm->m[k];

		if (m->complete[x] || m->posted[x] == NEVER ||
		    m->ready[x] > sd->clock)
			continue;
		switch (m->work[x]) {
		case WORK_ANSWER:	/* RPUT: the CTS; then its FIN */
			m->ready[SEND] = sd->clock + sm->c->hop_ns;
			m->ready[RECV] = NEVER;
			m->work[x] = WORK_NONE;
			break;
		case WORK_COPY:		/* the copy, then FIN or done */
			sd->clock += copy_cost(sm, x, k);
			m->work[x] = WORK_NONE;
			m->complete[x] = 1;
			if (sm->proto == COOP_MODEL_RGET ||
			    sm->proto == COOP_MODEL_RPUT)
				m->ready[!x] = sd->clock + sm->c->hop_ns;
			break;
		default:		/* the peer's FIN came */
			m->complete[x] = 1;
		}
		return 1;
	}
	return 0;
}

/* When could side x, blocked, have work: the earliest packet of a
 * posted, incomplete message still to come, or NEVER. */
static uint64_t next_ready(const struct sim *sm, int x)
{
	uint64_t t = NEVER;
	uint32_t k;

	for (k = 0; k < sm->p->nmsg; k++) {
		const struct mstate *m = &sm->m[k];

		if (!m->complete[x] && m->posted[x] != NEVER &&
		    m->ready[x] < t)
			t = m->ready[x];
	}
	return t;
}

/* When side x's next step starts, or NEVER (finished or blocked with
 * nothing to come yet). */
static uint64_t next_step(const struct sim *sm, int x)
{
	const struct side *sd = &sm->s[x];
	const struct coop_model_event *e;
	uint64_t t;

	if (sd->pc >= sd->nev)
		return NEVER;
	e = &sd->ev[sd->pc];
	if (!sd->in_call)
		return sd->clock + e->gap_ns;
	if (!sd->post_done || e->op == COOP_MODEL_POST ||
	    sm->m[e->msg].complete[x])
		return sd->clock;
	t = next_ready(sm, x);
	return t == NEVER ? NEVER : (t > sd->clock ? t : sd->clock);
}

/* Run side x's next step (it starts at t): 0, or -1 when its event
 * cannot happen. */
static int step(struct sim *sm, int x, uint64_t t)
{
	struct side *sd = &sm->s[x];
	const struct coop_model_event *e = &sd->ev[sd->pc];
	struct mstate *m = &sm->m[e->msg];

	sd->clock = t;
	if (!sd->in_call) {	/* enter the call */
		if (e->op == COOP_MODEL_POST ? m->posted[x] != NEVER :
					       m->posted[x] == NEVER)
			return -1;	/* posted twice, waited unposted */
		sd->in_call = 1;
		sd->post_done = 0;
		sd->clock += sm->c->call_ns;
		return 0;
	}
	if (!sd->post_done) {
		if (e->op == COOP_MODEL_POST)
			sd->clock = post(sm, x, e->msg, sd->clock);
		sd->post_done = 1;
		return 0;
	}
	if (ready_work(sm, x))
		return 0;
	/* nothing ready: a post ends, a wait ends when complete */
	if (e->op == COOP_MODEL_POST || m->complete[x]) {
		sd->in_call = 0;
		sd->pc++;
	}
	return 0;
}

static int check_events(const struct coop_model_pair *p)
{
	uint32_t i;

	if (p->nmsg > COOP_MODEL_MAX)
		return -1;
	for (i = 0; i < p->nsend; i++)
		if (p->send[i].msg >= p->nmsg)
			return -1;
	for (i = 0; i < p->nrecv; i++)
		if (p->recv[i].msg >= p->nmsg)
			return -1;
	return 0;
}

static int simulate(struct sim *sm)
{
	uint64_t t0, t1;
	int x;

	for (;;) {
		t0 = next_step(sm, SEND);
		t1 = next_step(sm, RECV);
		if (t0 == NEVER && t1 == NEVER)
			break;
		x = t1 < t0 ? RECV : SEND;
		if (step(sm, x, x == SEND ? t0 : t1))
			return -1;
	}
	/* both blocked for good, or a message one side never posted */
	return sm->s[SEND].pc == sm->s[SEND].nev &&
	       sm->s[RECV].pc == sm->s[RECV].nev ? 0 : -1;
}

int coop_model_replay(const struct coop_model_costs *c,
		      const struct coop_model_pair *p,
		      enum coop_model_proto proto, uint64_t *end_send,
		      uint64_t *end_recv)
{
	struct sim sm = { .c = c, .p = p, .proto = proto };
	uint32_t k;
	int rc;

	if (check_events(p) || proto >= COOP_MODEL_COUNT)
		return -1;
	sm.m = calloc(p->nmsg ? p->nmsg : 1, sizeof(*sm.m));
	if (!sm.m)
		return -1;
	for (k = 0; k < p->nmsg; k++) {
		sm.m[k].posted[SEND] = sm.m[k].posted[RECV] = NEVER;
		sm.m[k].ready[SEND] = sm.m[k].ready[RECV] = NEVER;
	}
	sm.s[SEND] = (struct side){ .ev = p->send, .nev = p->nsend };
	sm.s[RECV] = (struct side){ .ev = p->recv, .nev = p->nrecv };
	rc = simulate(&sm);
	free(sm.m);
	*end_send = sm.s[SEND].clock + p->tail_send;
	*end_recv = sm.s[RECV].clock + p->tail_recv;
	return rc;
}

int coop_model_best(const struct coop_model_costs *c,
		    const struct coop_model_pair *p,
		    uint64_t ends[COOP_MODEL_COUNT])
{
	uint64_t es, er, end, best = NEVER;
	int proto, won = -1;

	for (proto = 0; proto < COOP_MODEL_COUNT; proto++) {
		if (coop_model_replay(c, p, (enum coop_model_proto)proto, &es,
				      &er))
			return -1;
		end = es > er ? es : er;
		if (ends)
			ends[proto] = end;
		if (end < best) {
			best = end;
			won = proto;
		}
	}
	return won;
}
