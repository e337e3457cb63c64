/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_threads.c - COOP_THREAD_MULTIPLE: M ranks (2, 3) of NTHR application
 * threads each, all calling into one context per rank at the same time
 * (COOP_THREADS=multiple; also with a progress thread, polling or asleep
 * on the doorbell).
 *
 * A seed (printed; COOP_TEST_SEED overrides) generates a plan that every
 * rank and the checker know: a global list of messages, each from a
 * random thread (s, i) to a random other thread (d, j) (the same rank's
 * threads included), of a random size (0 B, inline, bounce eager,
 * rendezvous up to 4 MiB) and send mode (standard or synchronous), in one
 * of four receive classes, each on a communicator of its own per
 * receiving thread (so no other thread can take the message):
 *   EXACT    recv(s, tag)
 *   ANYSRC   recv(COOP_ANY_SOURCE, tag)
 *   ANYTAG   recv(s, COOP_ANY_TAG)        (any of rank s's threads)
 *   ANYANY   recv(COOP_ANY_SOURCE, COOP_ANY_TAG)
 * The tag is (s, i, sequence number of (s, i)'s sends); the payload a
 * pattern seeded by the tag, so a receive that got a message, whichever
 * it was, can check source, size and every byte; the bytes behind it in
 * the receive buffer must stay untouched, the send buffer unchanged.
 * Every thread walks the global list and does its part of each message
 * in list order (send or receive), blocking (coop_send/coop_recv, or
 * start + wait/test), or started now and completed later.  That order
 * makes the test deadlock-free whatever the timing: a thread blocks only
 * on a message whose other side the partner reaches without waiting for
 * anything later in the list; since a wildcard receive may take a later
 * message than "its" one, a send in the two wildcard classes is never
 * waited for before the thread's end.  Checked: each message received
 * exactly once, intact, by a receive of its class; per-thread counts and
 * bytes; MPI's non-overtaking order for the wildcard classes (messages of
 * one sending thread arrive in its order in the receiving thread's
 * posting order); the expected protocols ran.
 */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "harness.h"
#include "tests.h"

#define NTHR 4			/* application threads per rank */
#define MAXR 3
#define KMAX 1024		/* messages of a plan */
#define SENDS_PER_THREAD 64	/* on average */
#define CANARY 64		/* checked bytes behind a receive */
#define BIG_MAX ((4u << 20) + 5)
#define WILD_MAX (256u << 10)	/* largest message of the wildcard classes */
#define COMM_BASE 300		/* + class * NTHR + receiving thread */
#define END 0x7fffffff		/* completed at the thread's end */
#define TIME_LIMIT_S 90		/* per run, times t_time_scale() */

enum cls { EXACT, ANYSRC, ANYTAG, ANYANY, NCLS };
enum how { BLOCK, NOW_WAIT, NOW_TEST, LATER };

struct tmsg {
	int s, i, d, j;		/* sender and receiver (rank, thread) */
	int cls, seq, tag;
	unsigned mode;		/* COOP_SEND_STANDARD or COOP_SEND_SYNC */
	int show, rhow;		/* enum how of the two sides */
	int sdue, rdue;		/* LATER: completed before this message */
	size_t len, rcap;	/* rcap: the receive's capacity */
};

struct plan {
	uint32_t seed;
	int nranks, k;
	struct tmsg m[KMAX];
	int by_seq[MAXR][NTHR][KMAX];	/* (s, i, seq) -> message */
	int nsend[MAXR][NTHR];
};

/* Written by each thread (shared memory), read by the checker. */
struct tres {
	int sent, received, ordered;
	uint64_t bytes_sent, bytes_received;
	int proto[2][COOP_PROTOCOL_COUNT];	/* by status.protocol: sends
						 * (not the blocking ones),
						 * receives */
	int done;
};

struct run {
	const char *name;
	int nranks;
	const char *const *env;
	int progress;		/* COOP_PROGRESS_* the ranks must report */
	unsigned want;		/* protocols (1 << COOP_PROTOCOL_*) that must
				 * have run */
};

static struct plan plan;	/* built before the fork: ranks inherit it */
static struct tres *results;	/* [MAXR][NTHR], shared */

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static size_t rand_len(uint32_t *s, int wild)
{
	static const size_t edges[] = { 0, 1, 48, 49, 65535, 65536, 65537,
					(1u << 20) + 1 };
	uint32_t k = rnd(s) % 100;
	size_t len;

	if (k < 6)
		len = edges[rnd(s) % (sizeof(edges) / sizeof(edges[0]))];
	else if (k < 12)
		len = 0;
	else if (k < 35)
		len = 1 + rnd(s) % 48;			/* inline */
	else if (k < 60)
		len = 49 + rnd(s) % 65488;		/* bounce eager */
	else if (k < 88)
		len = 65537 + rnd(s) % (1u << 20);	/* rendezvous */
	else
		len = (1u << 20) + rnd(s) % (BIG_MAX - (1u << 20) + 1);
	if (wild && len > WILD_MAX)
		len = 65537 + len % (WILD_MAX - 65536);
	return len;
}

static int tag_of(int s, int i, int seq)
{
	return s << 26 | i << 20 | seq;
}

static int rand_due(uint32_t *s, int k)
{
	return rnd(s) % 5 == 0 ? END : k + 1 + (int)(rnd(s) % 48);
}

static void make_plan(struct plan *pl, uint32_t seed, int nranks, int k)
{
	uint32_t s = seed * 2654435761u | 1;
	int n, a;

	memset(pl, 0, sizeof(*pl));
	pl->seed = seed;
	pl->nranks = nranks;
	pl->k = k;
	for (n = 0; n < k; n++) {
		struct tmsg *m = &pl->m[n];
		uint32_t c = rnd(&s) % 100, h;

		m->s = (int)(rnd(&s) % (uint32_t)nranks);
		m->i = (int)(rnd(&s) % NTHR);
		do {
			m->d = (int)(rnd(&s) % (uint32_t)nranks);
			m->j = (int)(rnd(&s) % NTHR);
		} while (m->d == m->s && m->j == m->i);
		m->cls = c < 35 ? EXACT : c < 55 ? ANYSRC : c < 75 ? ANYTAG :
			 ANYANY;
		m->seq = pl->nsend[m->s][m->i]++;
		m->tag = tag_of(m->s, m->i, m->seq);
		pl->by_seq[m->s][m->i][m->seq] = n;
		m->len = rand_len(&s, m->cls >= ANYTAG);
		m->mode = rnd(&s) % 10 < 3 ? COOP_SEND_SYNC :
			  COOP_SEND_STANDARD;
		/* a send of a wildcard class: waited for at the end only */
		h = rnd(&s) % 100;
		if (m->cls >= ANYTAG)
			m->show = LATER, m->sdue = END;
		else
			m->show = h < 35 ? BLOCK : h < 50 ? NOW_WAIT :
				  h < 60 ? NOW_TEST : LATER;
		if (m->show == LATER && m->cls < ANYTAG)
			m->sdue = rand_due(&s, n);
		h = rnd(&s) % 100;
		m->rhow = h < 35 ? BLOCK : h < 45 ? NOW_WAIT :
			  h < 55 ? NOW_TEST : LATER;
		if (m->rhow == LATER)
			m->rdue = rand_due(&s, n);
	}
	/* capacities: the largest message the receive could get */
	for (n = 0; n < k; n++) {
		struct tmsg *r = &pl->m[n];

		r->rcap = r->len;
		if (r->cls < ANYTAG)
			continue;
		for (a = 0; a < k; a++) {
			const struct tmsg *m = &pl->m[a];

			if (m->d == r->d && m->j == r->j && m->cls == r->cls &&
			    (r->cls == ANYANY || m->s == r->s) &&
			    m->len > r->rcap)
				r->rcap = m->len;
		}
	}
}

/* ---------------- the ranks ---------------- */

struct op {
	int k;			/* plan message */
	int recv;
	int due;		/* LATER: complete before message due */
	coop_request_t *req;
	char *mem, *buf;	/* buf: unaligned, in mem */
	size_t cap;
	int got;		/* receives: the message that arrived */
};

struct thr {
	pthread_t tid;
	coop_context_t *ctx;
	int rank, t;
	struct tres *res;
	struct op *ops;
	int nops;
	unsigned char seen[KMAX];
};

static int comm_of(int cls, int j)
{
	return COMM_BASE + cls * NTHR + j;
}

static void check_recv(struct thr *th, struct op *op, int rc,
		       const coop_status_t *st)
{
	const struct tmsg *want = &plan.m[op->k], *m;
	int s, i, seq, k;
	size_t n;
	long bad;

	T_ASSERT(rc == 0 && st->error == 0, "thread %d: receive of message "
		 "%d: rc %s, status %s", th->t, op->k, coop_strerror(rc),
		 coop_strerror(st->error));
	s = st->tag >> 26;
	i = st->tag >> 20 & 63;
	seq = st->tag & 0xfffff;
	T_ASSERT(st->tag >= 0 && s < plan.nranks && i < NTHR &&
		 seq < plan.nsend[s][i], "thread %d: receive of message %d "
		 "got tag %#x, sent by nobody", th->t, op->k, st->tag);
	k = plan.by_seq[s][i][seq];
	m = &plan.m[k];
	T_ASSERT(m->d == th->rank && m->j == th->t && m->cls == want->cls,
		 "thread %d: receive of message %d (class %d) got message "
		 "%d for rank %d thread %d class %d", th->t, op->k, want->cls,
		 k, m->d, m->j, m->cls);
	T_ASSERT(want->cls >= ANYTAG || k == op->k, "thread %d: receive "
		 "of message %d got message %d", th->t, op->k, k);
	T_ASSERT(want->cls != ANYTAG || s == want->s, "thread %d: receive "
		 "from rank %d got message %d of rank %d", th->t, want->s, k,
		 s);
	T_ASSERT(st->source == s, "thread %d: message %d from rank %d: "
		 "status.source %d", th->t, k, s, st->source);
	T_ASSERT(st->count == m->len, "thread %d: message %d: count %zu, "
		 "sent %zu", th->t, k, st->count, m->len);
	bad = t_check(op->buf, m->len, (uint32_t)m->tag);
	T_ASSERT(bad < 0, "thread %d: message %d (%zu B, tag %#x, mode %u, "
		 "protocol %d) corrupted at byte %ld", th->t, k, m->len,
		 m->tag, m->mode, st->protocol, bad);
	for (n = m->len; n < op->cap; n++)
		T_ASSERT((unsigned char)op->buf[n] == 0xa5, "thread %d: "
			 "message %d (%zu B): byte %zu behind it written",
			 th->t, k, m->len, n);
	T_ASSERT(!th->seen[k], "thread %d: message %d received twice",
		 th->t, k);
	T_ASSERT(st->protocol >= 0 && st->protocol < COOP_PROTOCOL_COUNT,
		 "protocol %d", st->protocol);
	th->seen[k] = 1;
	op->got = k;
	th->res->received++;
	th->res->bytes_received += m->len;
	th->res->proto[1][st->protocol]++;
	free(op->mem);
	op->mem = op->buf = NULL;
}

static void check_send(struct thr *th, struct op *op, int rc,
		       const coop_status_t *st)
{
	const struct tmsg *m = &plan.m[op->k];
	long bad;

	T_ASSERT(rc == 0 && (!st || st->error == 0), "thread %d: send of "
		 "message %d (%zu B to %d.%d): rc %s, status %s", th->t,
		 op->k, m->len, m->d, m->j, coop_strerror(rc),
		 coop_strerror(st ? st->error : 0));
	bad = t_check(op->buf, m->len, (uint32_t)m->tag);
	T_ASSERT(bad < 0, "thread %d: send buffer of message %d changed at "
		 "byte %ld", th->t, op->k, bad);
	T_ASSERT(!st || (st->protocol >= 0 &&
			 st->protocol < COOP_PROTOCOL_COUNT), "protocol %d",
		 st->protocol);
	if (st)
		th->res->proto[0][st->protocol]++;
	th->res->sent++;
	th->res->bytes_sent += m->len;
	free(op->mem);
	op->mem = op->buf = NULL;
}

static void complete(struct thr *th, struct op *op, int rc,
		     const coop_status_t *st)
{
	if (op->recv)
		check_recv(th, op, rc, st);
	else
		check_send(th, op, rc, st);
}

static void wait_op(struct thr *th, struct op *op, int use_test)
{
	coop_status_t st;
	int rc, flag = 0;

	if (!use_test) {
		rc = coop_wait(&op->req, &st);
	} else {
		do {
			rc = coop_test(&op->req, &flag, &st);
			T_ASSERT(rc == 0 || flag, "coop_test: %s",
				 coop_strerror(rc));
			if (!flag)
				sched_yield();
		} while (!flag);
	}
	T_ASSERT(op->req == NULL, "request not freed");
	complete(th, op, rc, &st);
}

static void start(struct thr *th, struct op *op)
{
	const struct tmsg *m = &plan.m[op->k];
	int how = op->recv ? m->rhow : m->show;
	coop_status_t st;
	int rc;

	op->mem = malloc((op->recv ? m->rcap + CANARY : m->len) + 8);
	T_ASSERT(op->mem, "malloc");
	op->buf = op->mem + 1 + (op->k & 7);	/* unaligned */
	if (op->recv) {
		int src = m->cls == EXACT || m->cls == ANYTAG ? m->s :
			  COOP_ANY_SOURCE;
		int tag = m->cls <= ANYSRC ? m->tag : COOP_ANY_TAG;

		op->cap = m->rcap + CANARY;
		memset(op->buf, 0xa5, op->cap);
		if (how == BLOCK) {
			memset(&st, 0, sizeof(st));
			rc = coop_recv(th->ctx, op->buf, op->cap, src, tag,
				       (uint32_t)comm_of(m->cls, th->t), 0,
				       &st);
			check_recv(th, op, rc, &st);
			return;
		}
		T_OK(coop_irecv(th->ctx, op->buf, op->cap, src, tag,
				(uint32_t)comm_of(m->cls, th->t), 0, &op->req));
	} else {
		t_fill(op->buf, m->len, (uint32_t)m->tag);
		if (how == BLOCK) {
			rc = coop_send(th->ctx, op->buf, m->len, m->d, m->tag,
				       (uint32_t)comm_of(m->cls, m->j),
				       m->mode);
			check_send(th, op, rc, NULL);
			return;
		}
		T_OK(coop_isend(th->ctx, op->buf, m->len, m->d, m->tag,
				(uint32_t)comm_of(m->cls, m->j), m->mode,
				&op->req));
	}
	if (how == NOW_WAIT || how == NOW_TEST)
		wait_op(th, op, how == NOW_TEST);
	else
		op->due = op->recv ? m->rdue : m->sdue;
}

/* Completes what is done among the pending requests, without blocking. */
static void test_some(struct thr *th, int upto)
{
	coop_request_t *rq[64];
	coop_status_t st[64];
	int idx[64], map[64], n = 0, out, a, rc;

	for (a = 0; a < upto && n < 64; a++)
		if (th->ops[a].req) {
			map[n] = a;
			rq[n++] = th->ops[a].req;
		}
	if (!n)
		return;
	rc = coop_testsome(n, rq, &out, idx, st);
	T_ASSERT(rc == 0 || rc == COOP_ERR_IN_STATUS, "testsome: %s",
		 coop_strerror(rc));
	for (a = 0; a < out; a++) {
		struct op *op = &th->ops[map[idx[a]]];

		T_ASSERT(rq[idx[a]] == NULL, "testsome left a request");
		op->req = NULL;
		complete(th, op, st[a].error, &st[a]);
	}
}

/* The rest, at the end: everything still pending, by coop_waitall. */
static void wait_rest(struct thr *th)
{
	coop_request_t **rq = calloc((size_t)th->nops, sizeof(*rq));
	coop_status_t *st = calloc((size_t)th->nops, sizeof(*st));
	int *map = calloc((size_t)th->nops, sizeof(int));
	int n = 0, a, rc;

	for (a = 0; a < th->nops; a++)
		if (th->ops[a].req) {
			map[n] = a;
			rq[n++] = th->ops[a].req;
		}
	rc = coop_waitall(n, rq, st);
	T_ASSERT(rc == 0 || rc == COOP_ERR_IN_STATUS, "waitall: %s",
		 coop_strerror(rc));
	for (a = 0; a < n; a++) {
		struct op *op = &th->ops[map[a]];

		T_ASSERT(rq[a] == NULL, "waitall left a request");
		op->req = NULL;
		complete(th, op, st[a].error, &st[a]);
	}
	free(rq);
	free(st);
	free(map);
}

/* MPI's order: the messages of one sending thread that receives with the
 * same wildcard envelope took, in the posting order of those receives. */
static void check_order(struct thr *th)
{
	int last[NCLS][MAXR][NTHR], a;

	memset(last, 0xff, sizeof(last));
	for (a = 0; a < th->nops; a++) {
		const struct op *op = &th->ops[a];
		const struct tmsg *m;

		if (!op->recv || plan.m[op->k].cls < ANYTAG)
			continue;
		m = &plan.m[op->got];
		T_ASSERT(m->seq > last[m->cls][m->s][m->i], "thread %d: "
			 "message %d (seq %d of %d.%d) overtaken: a receive "
			 "posted earlier got seq %d", th->t, op->got, m->seq,
			 m->s, m->i, last[m->cls][m->s][m->i]);
		last[m->cls][m->s][m->i] = m->seq;
		th->res->ordered++;
	}
}

static void *thread_main(void *arg)
{
	struct thr *th = arg;
	uint32_t rs = plan.seed * 31u + (uint32_t)(th->rank * NTHR + th->t) + 7;
	int k, a, n = 0, flag;
	coop_status_t st;

	th->ops = calloc(2 * (size_t)plan.k, sizeof(*th->ops));
	for (k = 0; k < plan.k; k++) {
		const struct tmsg *m = &plan.m[k];

		if (m->s == th->rank && m->i == th->t)
			th->ops[n++] = (struct op){ .k = k, .recv = 0,
						    .due = -1, .got = -1 };
		if (m->d == th->rank && m->j == th->t)
			th->ops[n++] = (struct op){ .k = k, .recv = 1,
						    .due = -1, .got = -1 };
	}
	th->nops = n;
	for (a = 0; a < n; a++) {
		struct op *op = &th->ops[a];
		int b;

		/* LATER requests due before this message */
		for (b = 0; b < a; b++)
			if (th->ops[b].req && th->ops[b].due <= op->k)
				wait_op(th, &th->ops[b], rnd(&rs) % 4 == 0);
		start(th, op);
		switch (rnd(&rs) % 8) {
		case 0:
			test_some(th, a + 1);
			break;
		case 1:
			T_OK(coop_iprobe(th->ctx, COOP_ANY_SOURCE,
					 COOP_ANY_TAG,
					 (uint32_t)comm_of(ANYANY, th->t),
					 &flag, &st));
			break;
		case 2:
			T_OK(coop_progress(th->ctx));
			break;
		default:
			break;
		}
	}
	wait_rest(th);
	for (a = 0; a < n; a++)
		T_ASSERT(!th->ops[a].recv || th->ops[a].got >= 0, "message "
			 "%d: receive not completed", th->ops[a].k);
	for (k = 0; k < plan.k; k++)
		T_ASSERT(th->seen[k] == (plan.m[k].d == th->rank &&
					 plan.m[k].j == th->t),
			 "thread %d: message %d %s", th->t, k,
			 th->seen[k] ? "not ours, received" : "never received");
	check_order(th);
	th->res->done = 1;
	free(th->ops);
	return NULL;
}

static int threads_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	const struct run *r = arg;
	struct thr *th = calloc(NTHR, sizeof(*th));
	int level, mode, t;

	T_OK(coop_query_thread(ctx, &level));
	T_ASSERT(level == COOP_THREAD_MULTIPLE, "thread level %d", level);
	T_OK(coop_get_progress(ctx, &mode));
	T_ASSERT(mode == r->progress, "progress mode %d, want %d", mode,
		 r->progress);
	t_barrier(ctx, rank, size);
	for (t = 0; t < NTHR; t++) {
		th[t].ctx = ctx;
		th[t].rank = rank;
		th[t].t = t;
		th[t].res = &results[rank * NTHR + t];
		T_ASSERT(!pthread_create(&th[t].tid, NULL, thread_main,
					 &th[t]), "pthread_create");
	}
	for (t = 0; t < NTHR; t++)
		pthread_join(th[t].tid, NULL);
	/* nobody leaves while a peer may still need its progress */
	t_barrier(ctx, rank, size);
	free(th);
	return 0;
}

/* ---------------- the checker ---------------- */

static uint32_t base_seed(void)
{
	const char *s = getenv("COOP_TEST_SEED");

	return s ? (uint32_t)strtoul(s, NULL, 0) : 20240917u;
}

/* Pinned what the expectations depend on: the suite may run with
 * COOP_PROGRESS or COOP_RNDV set for all its cases. */
static const char *const env_mt[] = { "COOP_THREADS=multiple",
	"COOP_PROGRESS=manual", "COOP_RNDV=auto", "COOP_CMA=auto", NULL };
static const char *const env_rtr[] = { "COOP_THREADS=multiple",
	"COOP_PROGRESS=manual", "COOP_RNDV=rtr", "COOP_CMA=auto", NULL };
static const char *const env_coop[] = { "COOP_THREADS=multiple",
	"COOP_PROGRESS=manual", "COOP_RNDV=coop", "COOP_CHUNK=64k",
	"COOP_CMA=auto", NULL };
static const char *const env_bounce[] = { "COOP_THREADS=multiple",
	"COOP_PROGRESS=manual", "COOP_CMA=off", "COOP_RING_SLOTS=64", NULL };
static const char *const env_thread[] = { "COOP_THREADS=multiple",
	"COOP_PROGRESS=thread", "COOP_RNDV=auto", "COOP_CMA=auto", NULL };
static const char *const env_sleep[] = { "COOP_THREADS=multiple",
	"COOP_PROGRESS=thread-sleep", "COOP_RNDV=auto", "COOP_CMA=auto",
	NULL };

#define P(x) (1u << COOP_PROTOCOL_##x)
static const struct run runs[] = {
	{ "auto", 2, env_mt, COOP_PROGRESS_MANUAL,
	  P(EAGER) | P(RGET) | P(RPUT) },
	{ "auto", 3, env_mt, COOP_PROGRESS_MANUAL,
	  P(EAGER) | P(RGET) | P(RPUT) },
	{ "rtr", 3, env_rtr, COOP_PROGRESS_MANUAL, P(EAGER) | P(RTR) },
	{ "coop, 64 KiB chunks", 2, env_coop, COOP_PROGRESS_MANUAL,
	  P(EAGER) | P(COOP) },
	{ "cma off", 2, env_bounce, COOP_PROGRESS_MANUAL,
	  P(EAGER) | P(BOUNCE) },
	{ "progress thread", 2, env_thread, COOP_PROGRESS_THREAD,
	  P(EAGER) | P(RGET) | P(RPUT) },
	{ "progress thread", 3, env_thread, COOP_PROGRESS_THREAD,
	  P(EAGER) | P(RGET) | P(RPUT) },
	{ "progress thread-sleep", 2, env_sleep, COOP_PROGRESS_THREAD_SLEEP,
	  P(EAGER) | P(RGET) | P(RPUT) },
	{ "progress thread-sleep", 3, env_sleep, COOP_PROGRESS_THREAD_SLEEP,
	  P(EAGER) | P(RGET) | P(RPUT) },
};
#define NRUNS (int)(sizeof(runs) / sizeof(runs[0]))

static const char *const proto_names[COOP_PROTOCOL_COUNT] = {
	"none", "rget", "rput", "coop", "bounce", "rtr", "dma", "stripe",
	"eager", "precopy", "postcopy",
};

START_TEST(test_threads)
{
	const struct run *r = &runs[_i];
	uint32_t seed = base_seed() + (uint32_t)_i;
	size_t rbytes = sizeof(struct tres) * MAXR * NTHR;
	int want_recv[MAXR][NTHR] = { { 0 } };
	int want_sent[MAXR][NTHR] = { { 0 } };
	int proto[2][COOP_PROTOCOL_COUNT] = { { 0 } }, ordered = 0, k, s, t, p;
	uint64_t bytes = 0, got_bytes = 0, sent_bytes = 0;
	unsigned want;

	ck_assert(r->nranks <= MAXR &&
		  r->nranks * NTHR * SENDS_PER_THREAD <= KMAX);
	make_plan(&plan, seed, r->nranks, r->nranks * NTHR * SENDS_PER_THREAD);
	for (k = 0; k < plan.k; k++) {
		want_recv[plan.m[k].d][plan.m[k].j]++;
		want_sent[plan.m[k].s][plan.m[k].i]++;
		bytes += plan.m[k].len;
	}
	fprintf(stderr, "threads: %s, %d ranks x %d threads, %d messages, "
		"%.1f MiB, seed %u (COOP_TEST_SEED=%u)\n", r->name, r->nranks,
		NTHR, plan.k, bytes / 1048576.0, seed, base_seed());
	results = shared_alloc(rbytes);
	ck_assert_int_eq(run_ranks(r->nranks, r->env, threads_rank, (void *)r,
				   TIME_LIMIT_S, NULL), 0);
	for (s = 0; s < r->nranks; s++)
		for (t = 0; t < NTHR; t++) {
			const struct tres *x = &results[s * NTHR + t];

			ck_assert_msg(x->done, "rank %d thread %d did not end",
				      s, t);
			ck_assert_msg(x->received == want_recv[s][t] &&
				      x->sent == want_sent[s][t],
				      "rank %d thread %d: received %d (of %d), "
				      "sent %d (of %d)", s, t, x->received,
				      want_recv[s][t], x->sent,
				      want_sent[s][t]);
			got_bytes += x->bytes_received;
			sent_bytes += x->bytes_sent;
			ordered += x->ordered;
			for (p = 0; p < COOP_PROTOCOL_COUNT; p++) {
				proto[0][p] += x->proto[0][p];
				proto[1][p] += x->proto[1][p];
			}
		}
	ck_assert_msg(got_bytes == bytes && sent_bytes == bytes,
		      "%llu bytes received and %llu sent of %llu",
		      (unsigned long long)got_bytes,
		      (unsigned long long)sent_bytes,
		      (unsigned long long)bytes);
	for (s = 0; s < 2; s++) {
		fprintf(stderr, "threads: %s: %s by protocol:", r->name,
			s ? "receives" : "sends (nonblocking)");
		for (p = 0; p < COOP_PROTOCOL_COUNT; p++)
			if (proto[s][p])
				fprintf(stderr, " %s %d", proto_names[p],
					proto[s][p]);
		fputc('\n', stderr);
	}
	fprintf(stderr, "threads: %s: ok, %d wildcard receives in order\n",
		r->name, ordered);
	/* COOP_CMA=off holds back the shm provider's copies, not the
	 * driver's: there rendezvous stays */
	want = r->want & ~(t_kmod_provider() ? P(BOUNCE) : 0u);
	for (p = 0; p < COOP_PROTOCOL_COUNT; p++)
		ck_assert_msg(!(want & 1u << p) ||
			      proto[0][p] + proto[1][p] > 0,
			      "%s: no message took protocol %s", r->name,
			      proto_names[p]);
	shared_free(results, rbytes);
}
END_TEST

TCase *tc_threads(void)
{
	TCase *tc = tcase_create("threads");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_threads, 0, NRUNS);
	return tc;
}
