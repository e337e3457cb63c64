/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_p2p.c - two-rank semantics: send modes (blocking and not), probe and
 * matched probe, cancel (including RTR revoke), persistent requests,
 * buffered sends, control-ring overflow.
 */
#include <check.h>
#include <inttypes.h>
#include <string.h>

#include "harness.h"
#include "tests.h"

#define COMM 21

/* inline 48 (44 synchronous), a span 112 (108), 176 (172), 240 (236) */
static const size_t msizes[] = { 0, 1, 44, 45, 48, 49, 108, 113, 236, 237,
				 240, 241, 4096, 65536, 65537, 70000,
				 1 << 20 };
#define NMS (int)(sizeof(msizes) / sizeof(msizes[0]))
static const unsigned modes[] = { COOP_SEND_STANDARD, COOP_SEND_SYNC,
				  COOP_SEND_READY, COOP_SEND_BUFFERED };

/* Each mode, each size, blocking and nonblocking. */
static int modes_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	size_t bsz = 4 * ((1 << 20) + COOP_BSEND_OVERHEAD);
	char *buf = malloc(1 << 20), *battach = malloc(bsz);
	coop_request_t *r;
	coop_status_t st;
	int m, s, nb, tag = 0;

	(void)arg;
	if (rank == 0)
		T_OK(coop_buffer_attach(ctx, battach, bsz));
	for (m = 0; m < 4; m++)
		for (s = 0; s < NMS; s++)
			for (nb = 0; nb < 2; nb++, tag++) {
				size_t len = msizes[s];

				if (rank == 1) {
					memset(buf, 0, len);
					T_OK(coop_irecv(ctx, buf, len, 0, tag,
							COMM, 0, &r));
					t_barrier(ctx, rank, size);
					T_OK(coop_wait(&r, &st));
					T_ASSERT(st.count == len, "count");
					T_ASSERT(t_check(buf, len, (uint32_t)tag) < 0,
						 "mode %d size %zu", m, len);
					continue;
				}
				t_fill(buf, len, (uint32_t)tag);
				t_barrier(ctx, rank, size);	/* ready: posted */
				if (nb) {
					T_OK(coop_isend(ctx, buf, len, 1, tag,
							COMM, modes[m], &r));
					if (modes[m] == COOP_SEND_BUFFERED)
						memset(buf, 0xee, len);
					T_OK(coop_wait(&r, NULL));
				} else {
					T_OK(coop_send(ctx, buf, len, 1, tag,
						       COMM, modes[m]));
				}
			}
	if (rank == 0)
		T_OK(coop_buffer_detach(ctx, NULL, NULL));
	free(buf);
	free(battach);
	return 0;
}

START_TEST(test_modes)
{
	static const char *const env_rtr[] = { "COOP_RNDV=rtr", NULL };

	ck_assert_int_eq(run_ranks(2, NULL, modes_rank, NULL, 60, NULL), 0);
	ck_assert_int_eq(run_ranks(2, env_rtr, modes_rank, NULL, 60, NULL), 0);
}
END_TEST

/* A synchronous send does not complete before the receive is posted. */
static int ssend_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	volatile int *posted = arg;
	char buf[100000];
	coop_request_t *r;
	size_t len;
	int flag, i;

	for (i = 0; i < 3; i++) {
		len = i == 0 ? 8 : i == 1 ? 5000 : 100000;
		if (rank == 0) {
			T_OK(coop_isend(ctx, buf, len, 1, i, COMM,
					COOP_SEND_SYNC, &r));
			for (flag = 0; !flag && !posted[i];) {
				T_OK(coop_test(&r, &flag, NULL));
				T_ASSERT(!flag || posted[i],
					 "ssend %zu completed early", len);
			}
			if (!flag)
				T_OK(coop_wait(&r, NULL));
		} else {
			usleep(20000);
			posted[i] = 1;
			__sync_synchronize();
			T_OK(coop_recv(ctx, buf, len, 0, i, COMM, 0, NULL));
		}
	}
	(void)size;
	return 0;
}

START_TEST(test_ssend_waits)
{
	int *posted = shared_alloc(4096);

	ck_assert_int_eq(run_ranks(2, NULL, ssend_rank, posted, 60, NULL), 0);
	shared_free(posted, 4096);
}
END_TEST

static int probe_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	static const size_t len[] = { 10, 9000, 300000 };
	char *buf = malloc(300000);
	coop_message_t *msg;
	coop_request_t *r;
	coop_status_t st;
	int i, flag;

	(void)arg;
	if (rank == 0) {
		for (i = 0; i < 3; i++) {
			t_fill(buf, len[i], (uint32_t)i);
			T_OK(coop_isend(ctx, buf, len[i], 1, 40 + i, COMM, 0,
					&r));
			T_OK(coop_wait(&r, NULL));
			t_barrier(ctx, rank, size);
		}
		t_barrier(ctx, rank, size);
		for (i = 0; i < 3; i++)
			T_OK(coop_send(ctx, buf, 123, 1, 60, COMM, 0));
		free(buf);
		return 0;
	}
	for (i = 0; i < 3; i++) {
		T_OK(coop_iprobe(ctx, 0, 99, COMM, &flag, &st));
		T_ASSERT(!flag, "nothing with tag 99");
		T_OK(coop_probe(ctx, COOP_ANY_SOURCE, COOP_ANY_TAG, COMM, &st));
		T_ASSERT(st.source == 0 && st.tag == 40 + i &&
			 st.count == len[i], "probe %d", i);
		T_OK(coop_iprobe(ctx, 0, 40 + i, COMM, &flag, &st));
		T_ASSERT(flag && st.count == len[i], "iprobe");
		if (i == 1) {	/* plain receive after probing */
			T_OK(coop_recv(ctx, buf, st.count, st.source, st.tag,
				       COMM, 0, &st));
		} else {
			T_OK(coop_mprobe(ctx, 0, COOP_ANY_TAG, COMM, &msg, &st));
			T_OK(coop_iprobe(ctx, 0, 40 + i, COMM, &flag, NULL));
			T_ASSERT(!flag, "mprobe dequeued the message");
			T_OK(coop_mrecv(ctx, buf, st.count, &msg, &st));
			T_ASSERT(msg == NULL, "message consumed");
		}
		T_ASSERT(st.count == len[i], "count");
		T_ASSERT(t_check(buf, len[i], (uint32_t)i) < 0, "data %d", i);
		t_barrier(ctx, rank, size);
	}
	/* improbe: nothing, then three messages, received out of order */
	T_OK(coop_improbe(ctx, 0, 60, COMM, &flag, &msg, &st));
	T_ASSERT(!flag && !msg, "improbe empty");
	t_barrier(ctx, rank, size);
	{
		coop_message_t *ms[3];

		for (i = 0; i < 3; i++) {
			do
				T_OK(coop_improbe(ctx, COOP_ANY_SOURCE, 60, COMM,
						  &flag, &ms[i], &st));
			while (!flag);
		}
		for (i = 2; i >= 0; i--) {
			T_OK(coop_imrecv(ctx, buf, 200, &ms[i], &r));
			T_OK(coop_wait(&r, &st));
			T_ASSERT(st.count == 123 && st.tag == 60, "imrecv");
		}
	}
	T_OK(coop_mprobe(ctx, COOP_PROC_NULL, 0, COMM, &msg, &st));
	T_ASSERT(msg && st.source == COOP_PROC_NULL, "no-proc message");
	T_OK(coop_mrecv(ctx, buf, 10, &msg, &st));
	T_ASSERT(st.source == COOP_PROC_NULL && st.count == 0, "no-proc recv");
	free(buf);
	return 0;
}

START_TEST(test_probe)
{
	static const char *const env_rtr[] = { "COOP_RNDV=rtr", NULL };

	ck_assert_int_eq(run_ranks(2, NULL, probe_rank, NULL, 60, NULL), 0);
	ck_assert_int_eq(run_ranks(2, env_rtr, probe_rank, NULL, 60, NULL), 0);
}
END_TEST

/*
 * Cancel: of receives never matched (eager- and rendezvous-sized, with and
 * without an RTR out), of a receive already matched (cancel fails), and
 * check that messages then go to the next receives in order.
 */
static int cancel_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	enum { N = 4 };
	size_t len = 200000;
	char *buf[N + 1];
	coop_request_t *r[N + 1];
	coop_status_t st;
	int i;

	(void)arg;
	for (i = 0; i <= N; i++)
		buf[i] = calloc(1, len);
	if (rank == 1) {
		/* posted, cancelled, never matched */
		T_OK(coop_irecv(ctx, buf[0], 10, 0, 7, COMM, 0, &r[0]));
		T_OK(coop_cancel(r[0]));
		T_OK(coop_wait(&r[0], &st));
		T_ASSERT(st.cancelled == 1, "small cancel");
		/* N long receives with the same envelope; cancel #0 and #2 */
		for (i = 0; i < N; i++)
			T_OK(coop_irecv(ctx, buf[i], len, 0, 8, COMM, 0, &r[i]));
		T_OK(coop_cancel(r[0]));
		T_OK(coop_cancel(r[2]));
		T_OK(coop_wait(&r[0], &st));
		T_ASSERT(st.cancelled == 1, "long cancel 0");
		T_OK(coop_wait(&r[2], &st));
		T_ASSERT(st.cancelled == 1, "long cancel 2");
		t_barrier(ctx, rank, size);	/* now the sender sends 3 */
		T_OK(coop_irecv(ctx, buf[N], len, 0, 8, COMM, 0, &r[N]));
		T_OK(coop_wait(&r[1], &st));
		T_ASSERT(t_check(buf[1], len, 0) < 0, "first message to #1");
		T_OK(coop_wait(&r[3], &st));
		T_ASSERT(t_check(buf[3], len, 1) < 0, "second message to #3");
		T_OK(coop_wait(&r[N], &st));
		T_ASSERT(t_check(buf[N], len, 2) < 0, "third message to #4");
		/* cancel after the match fails */
		T_OK(coop_irecv(ctx, buf[0], 100, 0, 9, COMM, 0, &r[0]));
		t_barrier(ctx, rank, size);
		t_barrier(ctx, rank, size);	/* message 9 has arrived */
		T_OK(coop_cancel(r[0]));
		T_OK(coop_wait(&r[0], &st));
		T_ASSERT(st.cancelled == 0 && st.count == 100, "late cancel");
	} else {
		t_barrier(ctx, rank, size);
		for (i = 0; i < 3; i++) {
			t_fill(buf[i], len, (uint32_t)i);
			T_OK(coop_send(ctx, buf[i], len, 1, 8, COMM, 0));
		}
		t_barrier(ctx, rank, size);
		T_OK(coop_send(ctx, buf[0], 100, 1, 9, COMM, 0));
		t_barrier(ctx, rank, size);
	}
	for (i = 0; i <= N; i++)
		free(buf[i]);
	return 0;
}

START_TEST(test_cancel)
{
	static const char *const env_rtr[] = { "COOP_RNDV=rtr", NULL };

	ck_assert_int_eq(run_ranks(2, NULL, cancel_rank, NULL, 60, NULL), 0);
	ck_assert_int_eq(run_ranks(2, env_rtr, cancel_rank, NULL, 60, NULL), 0);
}
END_TEST

/* RTR revoke that fails: the send was posted before the cancel. */
static int revoke_late_rank(coop_context_t *ctx, int rank, int size,
			    void *arg)
{
	size_t len = 100000;
	char *buf = calloc(1, len);
	coop_request_t *r;
	coop_status_t st;

	(void)arg;
	if (rank == 1) {
		T_OK(coop_irecv(ctx, buf, len, 0, 3, COMM, 0, &r));
		t_barrier(ctx, rank, size);	/* RTR is out */
		t_barrier(ctx, rank, size);	/* the send is posted */
		T_OK(coop_cancel(r));
		T_OK(coop_wait(&r, &st));
		T_ASSERT(st.cancelled == 0 && st.count == len, "not cancelled");
		T_ASSERT(t_check(buf, len, 5) < 0, "data");
	} else {
		t_fill(buf, len, 5);
		t_barrier(ctx, rank, size);
		T_OK(coop_isend(ctx, buf, len, 1, 3, COMM, 0, &r));
		t_barrier(ctx, rank, size);
		T_OK(coop_wait(&r, NULL));
	}
	free(buf);
	return 0;
}

START_TEST(test_cancel_revoke_late)
{
	static const char *const env_rtr[] = { "COOP_RNDV=rtr", NULL };

	ck_assert_int_eq(run_ranks(2, env_rtr, revoke_late_rank, NULL, 60,
				   NULL), 0);
}
END_TEST

static int persist_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	static const size_t len[] = { 16, 3000, 250000 };
	coop_request_t *r[3];
	coop_status_t st[3];
	char *buf[3];
	int i, it;

	(void)arg;
	(void)size;
	for (i = 0; i < 3; i++) {
		buf[i] = malloc(len[i]);
		if (rank == 0)
			T_OK(coop_send_init(ctx, buf[i], len[i], 1, i, COMM,
					    i == 1 ? COOP_SEND_SYNC : 0, &r[i]));
		else
			T_OK(coop_recv_init(ctx, buf[i], len[i], 0, i, COMM, 0,
					    &r[i]));
	}
	/* inactive persistent requests complete at once */
	T_OK(coop_wait(&r[0], &st[0]));
	T_ASSERT(r[0] != NULL, "persistent handle kept");
	for (it = 0; it < 50; it++) {
		for (i = 0; i < 3; i++)
			if (rank == 0)
				t_fill(buf[i], len[i], (uint32_t)(it * 3 + i));
		if (it % 2) {
			T_OK(coop_startall(3, r));
		} else {
			for (i = 2; i >= 0; i--)
				T_OK(coop_start(&r[i]));
		}
		T_ASSERT(coop_start(&r[0]) == COOP_ERR_REQUEST, "active");
		T_OK(coop_waitall(3, r, st));
		for (i = 0; i < 3; i++) {
			T_ASSERT(r[i] != NULL, "kept");
			if (rank == 1)
				T_ASSERT(t_check(buf[i], len[i],
						 (uint32_t)(it * 3 + i)) < 0 &&
					 st[i].count == len[i], "it %d", it);
		}
	}
	for (i = 0; i < 3; i++) {
		T_OK(coop_request_free(&r[i]));
		T_ASSERT(r[i] == NULL, "freed");
		free(buf[i]);
	}
	return 0;
}

START_TEST(test_persistent)
{
	static const char *const env_rtr[] = { "COOP_RNDV=rtr", NULL };

	ck_assert_int_eq(run_ranks(2, NULL, persist_rank, NULL, 60, NULL), 0);
	ck_assert_int_eq(run_ranks(2, env_rtr, persist_rank, NULL, 60, NULL), 0);
}
END_TEST

/* Buffered sends: user buffer reusable at once; too little space. */
static int bsend_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	enum { N = 8 };
	size_t len = 100000, bsz = 3 * (len + COOP_BSEND_OVERHEAD);
	char *buf = malloc(len), *att = malloc(bsz), *out;
	coop_request_t *r;
	void *ab;
	size_t asz;
	int i;

	(void)arg;
	if (rank == 0) {
		T_OK(coop_buffer_attach(ctx, att, bsz));
		for (i = 0; i < 3; i++) {
			t_fill(buf, len, (uint32_t)i);
			T_OK(coop_send(ctx, buf, len, 1, i, COMM,
				       COOP_SEND_BUFFERED));
		}
		memset(buf, 0, len);	/* must not matter */
		T_ASSERT(coop_isend(ctx, buf, len, 1, 9, COMM,
				    COOP_SEND_BUFFERED, &r) == COOP_ERR_BUFFER,
			 "no room left");
		t_barrier(ctx, rank, size);	/* receiver drains */
		T_OK(coop_buffer_detach(ctx, &ab, &asz));
		T_ASSERT(ab == att && asz == bsz, "detach returns it");
		T_OK(coop_buffer_attach(ctx, att, bsz));
		for (i = 0; i < N; i++)	/* small ones need no space */
			T_OK(coop_send(ctx, buf, 100 + i, 1, 10, COMM,
				       COOP_SEND_BUFFERED));
		T_OK(coop_buffer_detach(ctx, NULL, NULL));
	} else {
		out = malloc(len);
		t_barrier(ctx, rank, size);
		for (i = 0; i < 3; i++) {
			T_OK(coop_recv(ctx, out, len, 0, i, COMM, 0, NULL));
			T_ASSERT(t_check(out, len, (uint32_t)i) < 0, "bsend %d", i);
		}
		for (i = 0; i < N; i++)
			T_OK(coop_recv(ctx, out, len, 0, 10, COMM, 0, NULL));
		free(out);
	}
	free(buf);
	free(att);
	return 0;
}

START_TEST(test_bsend)
{
	ck_assert_int_eq(run_ranks(2, NULL, bsend_rank, NULL, 60, NULL), 0);
}
END_TEST

/*
 * Far more packets than ring (or fast box) slots before the receiver
 * looks, of sizes that go in one packet, in a span (which then finds no
 * room and takes a bounce slot or a rendezvous) and in a bounce slot,
 * from every other rank to rank 0: each message arrives whole and in
 * its sender's order.
 */
static int overflow_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	enum { N = 3000, MAXLEN = 300 };
	static const size_t lens[] = { 4, 100, 240, MAXLEN };
	coop_request_t **r = calloc(N, sizeof(*r));
	unsigned char *bufs = malloc((size_t)N * MAXLEN);
	coop_status_t st;
	int i, src;

	(void)arg;
	T_ASSERT(r && bufs, "calloc");
	for (i = 0; i < N && rank; i++) {
		t_fill(bufs + (size_t)i * MAXLEN, lens[i % 4],
		       (uint32_t)(i * size + rank));
		T_OK(coop_isend(ctx, bufs + (size_t)i * MAXLEN, lens[i % 4], 0,
				i % 3, COMM, 0, &r[i]));
	}
	if (rank) {
		t_barrier(ctx, rank, size);
		T_OK(coop_waitall(N, r, NULL));
	} else {
		usleep(50000);
		t_barrier(ctx, rank, size);
		for (i = 0; i < N; i++)
			for (src = 1; src < size; src++) {
				T_OK(coop_recv(ctx, bufs, MAXLEN, src, i % 3,
					       COMM, 0, &st));
				T_ASSERT(st.count == lens[i % 4] &&
					 t_check(bufs, st.count,
						 (uint32_t)(i * size + src)) < 0,
					 "message %d of %d: %zu bytes", i, src,
					 st.count);
			}
	}
	free(bufs);
	free(r);
	return 0;
}

/* The shared ring alone; then one sender through a 4-slot fast box and
 * the other, which finds no box left, through the ring. */
START_TEST(test_ring_overflow)
{
	static const char *const ring[] = { "COOP_RING_SLOTS=64",
					    "COOP_FBOX_SLOTS=0", NULL };
	static const char *const mixed[] = { "COOP_RING_SLOTS=64",
					     "COOP_FBOX_SLOTS=4",
					     "COOP_FBOX_SENDERS=1", NULL };

	ck_assert_int_eq(run_ranks(2, ring, overflow_rank, NULL, 60, NULL), 0);
	ck_assert_int_eq(run_ranks(3, mixed, overflow_rank, NULL, 90, NULL),
			 0);
}
END_TEST

/*
 * Counters of memory held for later: rank 1 sends HELD_MSGS messages and
 * waits; rank 0 probes for the last, so all of them are unexpected at
 * once, then receives them (coop_stats_t.unexpected_peak is exactly
 * HELD_MSGS).  Then a one-way flood before the receiver looks: rank 1
 * starts FLOOD_ISENDS sends that cannot go (rank 0 does not call the
 * library until they all returned: isend stays local however long the
 * backlog), then makes FLOOD_SENDS blocking sends, which wait while more
 * than FLOOD_BACKLOG_WAIT packets wait for rank 0: the backlog never
 * grows past the isends' plus one (without the wait: by about
 * FLOOD_SENDS), and every message arrives in order.  Manual progress: a
 * progress thread would take rank 0's messages while it is late.
 */
enum {
	HELD_MSGS = 50,		/* fit a fast box and the ring */
	FLOOD_ISENDS = 3000,	/* more than a mailbox (1024) + the bound */
	FLOOD_SENDS = 100000,
	FLOOD_BACKLOG_WAIT = 1024,	/* coop_send's bound (coopmpi.h) */
};

struct flood_flags {
	int held_seen;
	int isends_done;
};

static void flood_send(coop_context_t *ctx, struct flood_flags *f)
{
	coop_request_t **r = calloc(FLOOD_ISENDS, sizeof(*r));
	int *vals = calloc(FLOOD_ISENDS, sizeof(*vals));
	coop_stats_t st;
	int i;

	T_ASSERT(r && vals, "calloc");
	for (i = 0; i < HELD_MSGS; i++)
		T_OK(coop_send(ctx, &i, sizeof(i), 0, i == HELD_MSGS - 1 ? 3 : 0,
			       COMM, 0));
	t_flag_wait(&f->held_seen);
	for (i = 0; i < FLOOD_ISENDS; i++) {
		vals[i] = i;
		T_OK(coop_isend(ctx, &vals[i], sizeof(vals[i]), 0, 1, COMM, 0,
				&r[i]));
	}
	t_flag_raise(&f->isends_done);
	for (i = 0; i < FLOOD_SENDS; i++)
		T_OK(coop_send(ctx, &i, sizeof(i), 0, 2, COMM, 0));
	T_OK(coop_waitall(FLOOD_ISENDS, r, NULL));
	T_OK(coop_get_stats(ctx, &st));
	T_ASSERT(st.backlog_peak > FLOOD_BACKLOG_WAIT &&
		 st.backlog_peak <= FLOOD_ISENDS + 1,
		 "backlog peak %" PRIu64, st.backlog_peak);
	free(vals);
	free(r);
}

/* count messages with tag from rank 1, their values 0, 1, ... */
static void recv_in_order(coop_context_t *ctx, int tag, int count)
{
	int i, v;

	for (i = 0; i < count; i++) {
		T_OK(coop_recv(ctx, &v, sizeof(v), 1,
			       tag < 0 ? COOP_ANY_TAG : tag, COMM, 0, NULL));
		T_ASSERT(v == i, "tag %d: %d came as message %d", tag, v, i);
	}
}

static void flood_recv(coop_context_t *ctx, struct flood_flags *f)
{
	coop_stats_t st;

	T_OK(coop_probe(ctx, 1, 3, COMM, NULL));
	T_OK(coop_get_stats(ctx, &st));
	T_ASSERT(st.unexpected_peak == HELD_MSGS, "unexpected peak %" PRIu64,
		 st.unexpected_peak);
	recv_in_order(ctx, -1, HELD_MSGS);
	t_flag_raise(&f->held_seen);
	t_flag_wait(&f->isends_done);
	usleep(20000);		/* the blocking sends find full mailboxes */
	recv_in_order(ctx, 1, FLOOD_ISENDS);
	recv_in_order(ctx, 2, FLOOD_SENDS);
}

static int flood_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	(void)size;
	if (rank)
		flood_send(ctx, arg);
	else
		flood_recv(ctx, arg);
	t_barrier(ctx, rank, 2);
	return 0;
}

START_TEST(test_flood_bounded)
{
	static const char *const manual[] = { "COOP_PROGRESS=manual", NULL };
	struct flood_flags *f = shared_alloc(4096);

	ck_assert_int_eq(run_ranks(2, manual, flood_rank, f, 90, NULL), 0);
	shared_free(f, 4096);
}
END_TEST

/* Ranks disagreeing on protocol settings refuse to connect (no hang). */
static int never_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	(void)ctx, (void)rank, (void)size, (void)arg;
	return 0;
}

START_TEST(test_config_mismatch)
{
	static const char *const env[] = { "R0:COOP_EAGER_MAX=1000",
					   "COOP_BOOT_TIMEOUT_S=10", NULL };
	struct rank_result res[2];

	ck_assert_int_ne(run_ranks(2, env, never_rank, NULL, 30, res), 0);
	ck_assert(res[0].exited && res[0].status == 1);
	ck_assert(res[1].exited && res[1].status == 1);
}
END_TEST

/*
 * Overlap: with RGET and COOP-p2p a receive completes while its sender is
 * busy computing (not calling the library) after isend.
 */
static int overlap_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	volatile int *woke = arg;
	size_t len = 8 << 20;
	char *buf = malloc(len);
	coop_request_t *r;

	(void)size;
	if (rank == 0) {
		t_fill(buf, len, 3);
		T_OK(coop_isend(ctx, buf, len, 1, 1, COMM, 0, &r));
		usleep(500000 * t_time_scale());	/* "compute" */
		*woke = 1;
		__sync_synchronize();
		T_OK(coop_wait(&r, NULL));
	} else {
		T_OK(coop_recv(ctx, buf, len, 0, 1, COMM, 0, NULL));
		T_ASSERT(!*woke, "receive waited for the sender's progress");
		T_ASSERT(t_check(buf, len, 3) < 0, "data");
	}
	free(buf);
	return 0;
}

START_TEST(test_overlap)
{
	static const char *const env_coop[] = { "COOP_RNDV=coop", NULL };
	static const char *const env_rget[] = { "COOP_RNDV=rget", NULL };
	int *woke = shared_alloc(4096);

	ck_assert_int_eq(run_ranks(2, env_coop, overlap_rank, woke, 60, NULL),
			 0);
	*woke = 0;
	ck_assert_int_eq(run_ranks(2, env_rget, overlap_rank, woke, 60, NULL),
			 0);
	shared_free(woke, 4096);
}
END_TEST

TCase *tc_p2p(void)
{
	TCase *tc = tcase_create("p2p");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_modes);
	tcase_add_test(tc, test_ssend_waits);
	tcase_add_test(tc, test_probe);
	tcase_add_test(tc, test_cancel);
	tcase_add_test(tc, test_cancel_revoke_late);
	tcase_add_test(tc, test_persistent);
	tcase_add_test(tc, test_bsend);
	tcase_add_test(tc, test_ring_overflow);
	tcase_add_test(tc, test_flood_bounded);
	tcase_add_test(tc, test_config_mismatch);
	tcase_add_test(tc, test_overlap);
	return tc;
}
