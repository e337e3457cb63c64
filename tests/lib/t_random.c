/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_random.c - randomized matching test against a reference model.
 *
 * A seed (printed; COOP_TEST_SEED overrides) generates a plan known to
 * every rank and to the checker: messages with random source, destination
 * (self included), communicator, tag, size (inline, bounce, rendezvous) and
 * send mode, and one receive per message whose envelope uses wildcards in
 * a way that guarantees every receive is matched whatever the timing:
 *   comm MIX: per destination, some sources are received with ANY_TAG,
 *             some tags with ANY_SOURCE (disjoint classes), the rest with
 *             exact (source, tag);
 *   comm ANY: ANY_SOURCE + ANY_TAG, some by improbe + imrecv.
 * Each rank interleaves its sends and receives in a random order with
 * random test/testsome/iprobe calls.  Afterwards the checker verifies the
 * reference semantics: every message received exactly once, intact, by a
 * receive whose envelope accepts it, status right, and MPI's non-overtaking
 * rule: if m1 was sent before m2 by the same source to the same
 * destination and comm, and m1 also matches the receive r2 that got m2,
 * then m1's receive r1 was posted before r2.
 */
#include <check.h>
#include <string.h>

#include "harness.h"
#include "tests.h"

#define P 4
#define NMSG 480
#define NTAGS 6
#define C_MIX 31
#define C_ANY 32
#define MAXLEN 300000

struct msg {
	int src, dst, comm, tag, mode;
	size_t len;
	int send_idx;		/* position among src's sends */
};

struct rcv {			/* one per message, at its destination */
	int src, tag, comm;	/* envelope, with wildcards */
	size_t cap;
	int mprobe;
};

struct result {			/* written by the receiving rank */
	int done;
	int post_idx;		/* posting order at the destination */
	int got;		/* plan index of the receive, -1: mprobe */
	int source, tag, error, data_ok;
	size_t count;
};

struct plan {
	uint32_t seed;
	struct msg m[NMSG];
	struct rcv r[NMSG];
	struct result res[NMSG];
};

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static size_t rand_len(uint32_t *s)
{
	uint32_t k = rnd(s) % 100;

	if (k < 60)
		return 8 + rnd(s) % 41;			/* inline */
	if (k < 88)
		return 49 + rnd(s) % 16336;		/* bounce */
	return 16385 + rnd(s) % (MAXLEN - 16385);	/* rendezvous */
}

static void make_plan(struct plan *pl, uint32_t seed)
{
	int at_src[P][P] = { { 0 } }, as_tag[P][NTAGS] = { { 0 } };
	int nsend[P] = { 0 }, i, d, t;
	uint32_t s = seed | 1;

	memset(pl, 0, sizeof(*pl));
	pl->seed = seed;
	for (d = 0; d < P; d++) {	/* wildcard classes per destination */
		at_src[d][rnd(&s) % P] = 1;
		as_tag[d][rnd(&s) % NTAGS] = 1;
		as_tag[d][rnd(&s) % NTAGS] = 1;
	}
	for (i = 0; i < NMSG; i++) {
		struct msg *m = &pl->m[i];
		struct rcv *r = &pl->r[i];
		uint32_t k = rnd(&s) % 100;

		m->src = (int)(rnd(&s) % P);
		m->dst = (int)(rnd(&s) % P);
		m->comm = rnd(&s) % 4 ? C_MIX : C_ANY;
		m->len = rand_len(&s);
		m->mode = k < 70 ? COOP_SEND_STANDARD :
			  k < 85 ? COOP_SEND_SYNC : COOP_SEND_BUFFERED;
		do
			t = (int)(rnd(&s) % NTAGS);
		while (m->comm == C_MIX && at_src[m->dst][m->src] &&
		       as_tag[m->dst][t]);
		m->tag = t;
		m->send_idx = nsend[m->src]++;
		r->comm = m->comm;
		r->src = m->src;
		r->tag = m->tag;
		if (m->comm == C_ANY) {
			r->src = COOP_ANY_SOURCE;
			r->tag = COOP_ANY_TAG;
			r->mprobe = rnd(&s) % 4 == 0;
		} else if (at_src[m->dst][m->src]) {
			r->tag = COOP_ANY_TAG;
		} else if (as_tag[m->dst][m->tag]) {
			r->src = COOP_ANY_SOURCE;
		}
	}
	/* capacity: the largest message the receive could get */
	for (i = 0; i < NMSG; i++) {
		int j;

		for (j = 0; j < NMSG; j++)
			if (pl->m[j].dst == pl->m[i].dst &&
			    pl->m[j].comm == pl->r[i].comm &&
			    (pl->r[i].src < 0 || pl->r[i].src == pl->m[j].src) &&
			    (pl->r[i].tag < 0 || pl->r[i].tag == pl->m[j].tag) &&
			    pl->m[j].len > pl->r[i].cap)
				pl->r[i].cap = pl->m[j].len;
	}
}

/* ---------------- the ranks ---------------- */

struct slot {
	coop_request_t *req;
	char *buf;
	int msg;		/* plan index of the message / receive */
	int is_recv;
};

static void record(struct plan *pl, struct slot *sl, const coop_status_t *st,
		   int post_idx)
{
	struct result *res;
	uint32_t id = 0xffffffff;

	T_ASSERT(st->error == 0, "receive (plan %d) failed: %s", sl->msg,
		 coop_strerror(st->error));
	if (st->count >= 4)
		memcpy(&id, sl->buf, 4);
	T_ASSERT(id < NMSG, "payload id %u (count %zu, err %s)", id,
		 st->count, coop_strerror(st->error));
	res = &pl->res[id];
	T_ASSERT(!res->done, "message %u received twice", id);
	res->done = 1;
	res->post_idx = post_idx;
	res->source = st->source;
	res->tag = st->tag;
	res->error = st->error;
	res->count = st->count;
	res->data_ok = st->count == pl->m[id].len &&
		       t_check(sl->buf + 4, st->count - 4, id) < 0;
	/* the receive that took it: remember its envelope */
	res->got = sl->msg;
}

static int post_send(coop_context_t *ctx, struct plan *pl, struct slot *sl)
{
	const struct msg *m = &pl->m[sl->msg];
	uint32_t id = (uint32_t)sl->msg;

	sl->buf = malloc(m->len);
	memcpy(sl->buf, &id, 4);
	t_fill(sl->buf + 4, m->len - 4, id);
	if (m->mode == COOP_SEND_STANDARD && m->len <= 16384 && (id & 1)) {
		T_OK(coop_send(ctx, sl->buf, m->len, m->dst, m->tag, m->comm,
			       0));
		sl->req = NULL;
		return 0;
	}
	return coop_isend(ctx, sl->buf, m->len, m->dst, m->tag, m->comm,
			  (unsigned)m->mode, &sl->req);
}

/* This rank's sends (in plan order) and receives (shuffled), merged in a
 * random interleaving.  Returns their number; *nmp = receives left to
 * matched probes. */
static int interleave(struct plan *pl, int rank, struct slot *sl,
		      uint32_t *s, int *nmp)
{
	int snd[NMSG], rcv[NMSG], ns = 0, nr = 0, i, a = 0, b = 0, n = 0;

	*nmp = 0;
	for (i = 0; i < NMSG; i++) {
		if (pl->m[i].src == rank)
			snd[ns++] = i;
		if (pl->m[i].dst == rank && !pl->r[i].mprobe)
			rcv[nr++] = i;
		if (pl->m[i].dst == rank && pl->r[i].mprobe)
			(*nmp)++;
	}
	for (i = nr - 1; i > 0; i--) {
		int j = (int)(rnd(s) % (uint32_t)(i + 1)), t = rcv[i];

		rcv[i] = rcv[j];
		rcv[j] = t;
	}
	while (a < ns || b < nr) {
		int take_send = b == nr || (a < ns && rnd(s) % 2);

		sl[n++] = take_send ?
			(struct slot){ .msg = snd[a++], .is_recv = 0 } :
			(struct slot){ .msg = rcv[b++], .is_recv = 1 };
	}
	return n;
}

/* Post request i: the receive (in posting order *posted) or the send. */
static void post_one(coop_context_t *ctx, struct plan *pl, struct slot *sl,
		     int *post_idx, int *posted, int i)
{
	if (sl[i].is_recv) {
		const struct rcv *r = &pl->r[sl[i].msg];

		sl[i].buf = malloc(r->cap);
		post_idx[i] = (*posted)++;
		T_OK(coop_irecv(ctx, sl[i].buf, r->cap, r->src, r->tag,
				r->comm, 0, &sl[i].req));
	} else {
		T_OK(post_send(ctx, pl, &sl[i]));
	}
}

/* After posting request i, at random: a test of one posted so far, an
 * iprobe, a progress call, or nothing. */
static void random_call(coop_context_t *ctx, struct plan *pl,
			struct slot *sl, const int *post_idx, int i,
			uint32_t *s)
{
	coop_status_t st;
	int j, flag;

	switch (rnd(s) % 8) {
	case 0:
		j = (int)(rnd(s) % (uint32_t)(i + 1));
		if (!sl[j].req)
			break;
		T_OK(coop_test(&sl[j].req, &flag, &st));
		if (flag && sl[j].is_recv)
			record(pl, &sl[j], &st, post_idx[j]);
		break;
	case 1:
		T_OK(coop_iprobe(ctx, COOP_ANY_SOURCE, COOP_ANY_TAG,
				 C_ANY, &flag, &st));
		T_ASSERT(!flag || st.count <= MAXLEN, "iprobe");
		break;
	case 2:
		T_OK(coop_progress(ctx));
		break;
	default:
		break;
	}
}

/* The nmp receives done by matched probe, after the n requests posted so
 * far: returns the number of requests. */
static int post_mprobed(coop_context_t *ctx, struct slot *sl, int *post_idx,
			int *posted, int n, int nmp)
{
	coop_status_t st;
	int i, flag;

	for (i = 0; i < nmp; i++) {
		coop_message_t *msg;

		do
			T_OK(coop_improbe(ctx, COOP_ANY_SOURCE, COOP_ANY_TAG,
					  C_ANY, &flag, &msg, &st));
		while (!flag);
		sl[n].buf = malloc(st.count);
		sl[n].is_recv = 1;
		sl[n].msg = -1;
		post_idx[n] = (*posted)++;
		T_OK(coop_imrecv(ctx, sl[n].buf, st.count, &msg, &sl[n].req));
		n++;
	}
	return n;
}

/* Complete the group of (up to) 64 requests from i on, of n. */
static void complete_group(struct plan *pl, struct slot *sl,
			   const int *post_idx, int i, int n)
{
	int k = n - i < 64 ? n - i : 64;
	coop_request_t *rq[64];
	int j, idx[64], out;

	for (j = 0; j < k; j++)
		rq[j] = sl[i + j].req;
	do {
		coop_status_t sts[64];

		int rc = coop_waitsome(k, rq, &out, idx, sts);

		T_ASSERT(!rc || rc == COOP_ERR_IN_STATUS, "waitsome %d",
			 rc);
		for (j = 0; j < out && out > 0; j++) {
			struct slot *x = &sl[i + idx[j]];

			x->req = NULL;
			T_ASSERT(sts[j].error == 0, "%s of plan message %d"
				 ": %s", x->is_recv ? "receive" : "send",
				 x->msg, coop_strerror(sts[j].error));
			if (x->is_recv)
				record(pl, x, &sts[j], post_idx[i + idx[j]]);
		}
	} while (out >= 0);
}

static int random_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	struct plan *pl = arg;
	struct slot *sl = calloc(2 * NMSG, sizeof(*sl));
	int *post_idx = calloc(2 * NMSG, sizeof(int));
	int n, i, posted = 0, nmp;
	size_t bsz = 64 << 20;
	char *batt = malloc(bsz);
	uint32_t s = pl->seed * 7919u + (uint32_t)rank + 1;

	(void)size;
	T_OK(coop_buffer_attach(ctx, batt, bsz));
	n = interleave(pl, rank, sl, &s, &nmp);
	for (i = 0; i < n; i++) {
		post_one(ctx, pl, sl, post_idx, &posted, i);
		random_call(ctx, pl, sl, post_idx, i, &s);
	}
	/* receives done by matched probe, after all our sends are out */
	n = post_mprobed(ctx, sl, post_idx, &posted, n, nmp);
	/* complete in random groups */
	for (i = 0; i < n; i += 64)
		complete_group(pl, sl, post_idx, i, n);
	T_OK(coop_buffer_detach(ctx, NULL, NULL));
	for (i = 0; i < n; i++)
		free(sl[i].buf);
	free(sl);
	free(post_idx);
	free(batt);
	return 0;
}

/* ---------------- the checker ---------------- */

static int accepts(const struct rcv *r, const struct msg *m)
{
	return r->comm == m->comm && (r->src < 0 || r->src == m->src) &&
	       (r->tag < 0 || r->tag == m->tag);
}

static void check_plan(struct plan *pl)
{
	static const struct rcv any = { COOP_ANY_SOURCE, COOP_ANY_TAG, C_ANY,
					0, 1 };
	int a, b;

	for (a = 0; a < NMSG; a++) {
		const struct result *x = &pl->res[a];
		const struct msg *m = &pl->m[a];
		const struct rcv *r;

		ck_assert_msg(x->done, "message %d never received", a);
		ck_assert_msg(x->error == 0, "message %d: %s", a,
			      coop_strerror(x->error));
		ck_assert_msg(x->data_ok, "message %d corrupted", a);
		ck_assert_msg(x->source == m->src && x->tag == m->tag,
			      "message %d: status %d/%d", a, x->source, x->tag);
		r = x->got >= 0 ? &pl->r[x->got] : &any;
		ck_assert_msg(accepts(r, m), "message %d taken by a receive "
			      "that does not accept it", a);
	}
	for (a = 0; a < NMSG; a++)
		for (b = 0; b < NMSG; b++) {
			const struct msg *m1 = &pl->m[a], *m2 = &pl->m[b];
			const struct rcv *r2;

			if (m1->src != m2->src || m1->dst != m2->dst ||
			    m1->comm != m2->comm || m1->send_idx >= m2->send_idx)
				continue;
			r2 = pl->res[b].got >= 0 ? &pl->r[pl->res[b].got] : &any;
			if (!accepts(r2, m1))
				continue;
			ck_assert_msg(pl->res[a].post_idx < pl->res[b].post_idx,
				      "overtaking: message %d (sent before %d) "
				      "matched a later receive", a, b);
		}
}

static uint32_t base_seed(void)
{
	const char *s = getenv("COOP_TEST_SEED");

	return s ? (uint32_t)strtoul(s, NULL, 0) : 20240611u;
}

static const char *const env_auto[] = { NULL };
static const char *const env_rtr[] = { "COOP_RNDV=rtr", NULL };
static const char *const env_coop[] = { "COOP_RNDV=coop", "COOP_CHUNK=16384",
	NULL };
static const char *const env_bounce[] = { "COOP_CMA=off",
	"COOP_RNDV=rget", "COOP_RING_SLOTS=32", NULL };
static const char *const *const envs[] = { env_auto, env_rtr, env_coop,
					   env_bounce };
static const char *const names[] = { "auto", "rtr", "coop", "cma off" };

START_TEST(test_random_matching)
{
	struct plan *pl = shared_alloc(sizeof(*pl));
	uint32_t seed = base_seed() + (uint32_t)_i;

	fprintf(stderr, "random matching: seed %u (COOP_TEST_SEED=%u), %s\n",
		seed, base_seed(), names[_i]);
	make_plan(pl, seed);
	ck_assert_int_eq(run_ranks(P, envs[_i], random_rank, pl, 100, NULL), 0);
	check_plan(pl);
	shared_free(pl, sizeof(*pl));
}
END_TEST

TCase *tc_random(void)
{
	TCase *tc = tcase_create("random");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_random_matching, 0, 4);
	return tc;
}
