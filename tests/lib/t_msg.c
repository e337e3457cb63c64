/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_msg.c - include/coopmpi_xfer.h's messages beyond coop_msg_send:
 * messages with a payload in a bounce slot (coop_msg_buf_get/send/put,
 * the data handler), the slots' accounting, the backlog count
 * (coop_msg_queued), the peers that went (the peer handler,
 * coop_peer_check), and the event fd (coop_event_fd/arm).  Every payload and header byte is checked, and the
 * order of both kinds of messages on a pair of ranks.
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "coopmpi_xfer.h"
#include "harness.h"
#include "tests.h"

#define COMM 71
#define MAX_SLOTS 4096		/* COOP_BOUNCE_SLOTS' upper bound */
#define MAX_SCHED 128

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A deadline s seconds (times the VM factor) from now. */
static double deadline(double s)
{
	return now_s() + s * t_time_scale();
}

/* Rank flags in MAP_SHARED memory: one rank waits (without progress of
 * its context, so its peers' messages stay in its ring) for another. */
struct flags {
	int f[8];
	int n;			/* a count one rank tells the other */
};

static void flag_set(struct flags *s, int i)
{
	__atomic_store_n(&s->f[i], 1, __ATOMIC_RELEASE);
}

static void flag_wait(const struct flags *s, int i)
{
	double end = deadline(20);

	while (!__atomic_load_n(&s->f[i], __ATOMIC_ACQUIRE)) {
		if (now_s() > end)
			T_FAIL("flag %d not set within 20 s", i);
		usleep(200);
	}
}

/* Progress ctx until *cond (an int the handlers set) reaches want.  The
 * handlers may run on a progress thread: *cond is read atomically, and
 * the handler's writes before its rx_count() are seen after. */
static void progress_until(coop_context_t *ctx, const int *cond, int want,
			   const char *what)
{
	double end = deadline(20);

	while (__atomic_load_n(cond, __ATOMIC_ACQUIRE) < want) {
		T_OK(coop_progress(ctx));
		if (now_s() > end)
			T_FAIL("%s: %d of %d within 20 s", what, *cond, want);
	}
}

/* Every free bounce slot for peer, until COOP_ERR_NOMEM: how many.  They
 * are distinct, of max bytes each, not overlapping, and writable. */
static int grab_all(coop_context_t *ctx, int peer, coop_msg_buf_t *b)
{
	size_t max = coop_msg_data_max(ctx);
	int n = 0, rc, i;

	for (;;) {
		T_ASSERT(n < MAX_SLOTS, "more than %d slots", MAX_SLOTS);
		memset(&b[n], 0x5a, sizeof(b[n]));
		rc = coop_msg_buf_get(ctx, peer, &b[n]);
		if (rc == COOP_ERR_NOMEM)
			break;
		T_ASSERT(rc == COOP_SUCCESS, "buf_get: %s", coop_strerror(rc));
		T_ASSERT(b[n].data && b[n].max == max && !b[n].reserved,
			 "buf %d: data %p, max %zu (not %zu), reserved %u", n,
			 b[n].data, b[n].max, max, b[n].reserved);
		memset(b[n].data, 0xa5, max);
		for (i = 0; i < n; i++) {
			const char *x = b[i].data, *y = b[n].data;

			T_ASSERT(b[i].slot != b[n].slot &&
				 (x + max <= y || y + max <= x),
				 "slots %u and %u overlap", b[i].slot,
				 b[n].slot);
		}
		n++;
	}
	T_ASSERT(n > 0, "no slot at all");
	return n;
}

static void put_all(coop_context_t *ctx, coop_msg_buf_t *b, int n)
{
	int i;

	for (i = 0; i < n; i++)
		T_OK(coop_msg_buf_put(ctx, &b[i]));
}

/* ---------------- what the messages carry ---------------- */

/* Header bytes of message seq: seq (4 bytes), then a pattern; a shorter
 * header is the beginning of it. */
static void hdr_make(unsigned char *h, uint32_t seq)
{
	int i;

	memcpy(h, &seq, 4);
	for (i = 4; i < COOP_MSG_DATA_HDR_MAX; i++)
		h[i] = (unsigned char)(seq * 13 + i);
}

/* Payload seed of message seq from src to dst. */
static uint32_t seed_of(int src, int dst, uint32_t seq)
{
	return (uint32_t)src * 100000u + (uint32_t)dst * 10000u + seq;
}

/* A plain message: seq, then a pattern, len bytes (>= 4). */
static void plain_make(unsigned char *m, size_t len, uint32_t seq)
{
	size_t i;

	memcpy(m, &seq, 4);
	for (i = 4; i < len; i++)
		m[i] = (unsigned char)(seq * 7 + i);
}

/* One message of a schedule: plain (hlen < 0) or with a payload. */
struct ent {
	int hlen;		/* -1: plain */
	size_t len;		/* payload, or the plain message's bytes */
};

/* What every rank receives from every src, in this order. */
struct rx {
	int me, nsched;
	const struct ent *sched;
	int next[4];		/* per src: the seq expected next */
	int plain[4], data[4];	/* per src: received */
	int total;		/* all messages received */
	int any_src;		/* 1: srcs not checked against sched */
};

/* A handler's last write: one more message (see progress_until). */
static void rx_count(struct rx *rx)
{
	__atomic_fetch_add(&rx->total, 1, __ATOMIC_RELEASE);
}

static void on_plain(void *arg, int src, const void *msg, size_t len)
{
	struct rx *rx = arg;
	unsigned char want[COOP_MSG_MAX];
	uint32_t seq;

	T_ASSERT(src >= 0 && src < 4, "plain message from %d", src);
	T_ASSERT(len >= 4 && len <= COOP_MSG_MAX, "plain length %zu", len);
	memcpy(&seq, msg, 4);
	T_ASSERT(seq == (uint32_t)rx->next[src],
		 "plain from %d: seq %u, expected %d", src, seq,
		 rx->next[src]);
	if (rx->sched) {
		T_ASSERT(seq < (uint32_t)rx->nsched &&
			 rx->sched[seq].hlen < 0 && rx->sched[seq].len == len,
			 "plain from %d, seq %u: %zu bytes, not in schedule",
			 src, seq, len);
	}
	plain_make(want, len, seq);
	T_ASSERT(!memcmp(msg, want, len), "plain message %u bytes", seq);
	rx->next[src]++;
	rx->plain[src]++;
	rx_count(rx);
}

static void on_data(void *arg, int src, const void *hdr, size_t hlen,
		    const void *data, size_t len)
{
	struct rx *rx = arg;
	unsigned char want[COOP_MSG_DATA_HDR_MAX];
	uint32_t seq = (uint32_t)rx->next[src < 0 || src >= 4 ? 0 : src];
	long bad;

	T_ASSERT(src >= 0 && src < 4, "data message from %d", src);
	T_ASSERT(hlen <= COOP_MSG_DATA_HDR_MAX && (!hlen || hdr),
		 "header %p, %zu bytes", hdr, hlen);
	T_ASSERT(!len || data, "data NULL with %zu bytes", len);
	if (rx->sched) {
		T_ASSERT(seq < (uint32_t)rx->nsched &&
			 rx->sched[seq].hlen == (int)hlen &&
			 rx->sched[seq].len == len,
			 "from %d, seq %u: hlen %zu len %zu, expected %d %zu",
			 src, seq, hlen, len,
			 seq < (uint32_t)rx->nsched ? rx->sched[seq].hlen : -2,
			 seq < (uint32_t)rx->nsched ? rx->sched[seq].len : 0);
	}
	if (hlen >= 4) {	/* the seq it carries: strictly increasing */
		uint32_t got;

		memcpy(&got, hdr, 4);
		T_ASSERT(got == seq, "data from %d: seq %u, expected %u", src,
			 got, seq);
	}
	hdr_make(want, seq);
	T_ASSERT(!hlen || !memcmp(hdr, want, hlen),
		 "header of %u (%zu bytes)", seq, hlen);
	bad = t_check(data, len, seed_of(src, rx->me, seq));
	T_ASSERT(bad < 0, "payload of %u from %d (%zu bytes): byte %ld", seq,
		 src, len, bad);
	rx->next[src]++;
	rx->data[src]++;
	rx_count(rx);
}

static void rx_init(struct rx *rx, int me, const struct ent *sched, int n)
{
	memset(rx, 0, sizeof(*rx));
	rx->me = me;
	rx->sched = sched;
	rx->nsched = n;
}

/* Send message seq of the schedule to dst; a slot is waited for (with
 * progress, which lets the receivers free theirs). */
static void send_ent(coop_context_t *ctx, int me, int dst,
		     const struct ent *e, uint32_t seq)
{
	unsigned char h[COOP_MSG_DATA_HDR_MAX], m[COOP_MSG_MAX];
	coop_msg_buf_t b;
	double end;
	int rc;

	if (e->hlen < 0) {
		plain_make(m, e->len, seq);
		T_OK(coop_msg_send(ctx, dst, m, e->len));
		return;
	}
	end = deadline(20);
	while ((rc = coop_msg_buf_get(ctx, dst, &b)) == COOP_ERR_NOMEM) {
		T_OK(coop_progress(ctx));
		if (now_s() > end)
			T_FAIL("no bounce slot freed within 20 s");
	}
	T_ASSERT(rc == COOP_SUCCESS, "buf_get: %s", coop_strerror(rc));
	T_ASSERT(e->len <= b.max, "%zu > max %zu", e->len, b.max);
	t_fill(b.data, e->len, seed_of(me, dst, seq));
	hdr_make(h, seq);
	T_OK(coop_msg_buf_send(ctx, dst, &b, e->hlen ? h : NULL,
			       (size_t)e->hlen, e->len));
	T_ASSERT(b.data == NULL, "buf still pointing at the slot after send");
}

/* ---------------- 1: payloads, both ways, in order ---------------- */

/*
 * Payloads of 0, 1, 4096, 4097 and coop_msg_data_max() bytes with
 * headers of 0, 1 and 40 bytes, twice, interleaved with plain messages;
 * each rank sends the schedule to the other and to itself.  arg: the
 * data_max expected (COOP_EAGER_MAX, at least 64 KiB).
 */
static int build_sched(struct ent *s, size_t max)
{
	static const int hlens[] = { 0, 1, COOP_MSG_DATA_HDR_MAX };
	const size_t sizes[] = { 0, 1, 4096, 4097, max };
	int n = 0, rep, h, z;

	for (rep = 0; rep < 2; rep++)
		for (h = 0; h < 3; h++)
			for (z = 0; z < 5; z++) {
				s[n].hlen = hlens[h];
				s[n++].len = sizes[z];
				if ((h + z + rep) % 2 == 0) {
					s[n].hlen = -1;
					s[n].len = 4 + (size_t)n % 45;
					n++;
				}
			}
	return n;
}

static int payload_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	size_t want = *(const size_t *)arg, max = coop_msg_data_max(ctx);
	struct ent sched[MAX_SCHED];
	int peer = 1 - rank, n, k;
	struct rx rx;

	T_ASSERT(max == want, "coop_msg_data_max %zu, expected %zu", max,
		 want);
	n = build_sched(sched, max);
	rx_init(&rx, rank, sched, n);
	T_OK(coop_msg_set_handler(ctx, on_plain, &rx));
	T_OK(coop_msg_set_data_handler(ctx, on_data, &rx));
	t_barrier(ctx, rank, size);	/* both handlers set */
	for (k = 0; k < n; k++) {
		send_ent(ctx, rank, peer, &sched[k], (uint32_t)k);
		send_ent(ctx, rank, rank, &sched[k], (uint32_t)k);
	}
	progress_until(ctx, &rx.total, 2 * n, "messages received");
	T_ASSERT(rx.next[peer] == n && rx.next[rank] == n && rx.total == 2 * n,
		 "received %d from the peer, %d from ourselves, %d in all",
		 rx.next[peer], rx.next[rank], rx.total);
	T_ASSERT(rx.data[peer] == 30 && rx.plain[peer] == n - 30,
		 "%d with data, %d plain", rx.data[peer], rx.plain[peer]);
	t_barrier(ctx, rank, size);
	return 0;
}

/* ---------------- 2: slot accounting ---------------- */

/* Rank 0 takes every slot for rank 1, gives them back, takes them again
 * and sends them all: no slot until rank 1 handled the messages, then
 * all of them again. */
static int slots_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	static coop_msg_buf_t b[MAX_SLOTS];
	static struct ent sched[MAX_SLOTS];
	struct flags *fl = arg;
	size_t max = coop_msg_data_max(ctx);
	coop_msg_buf_t x;
	struct rx rx;
	int n, i;

	if (rank == 1) {
		rx_init(&rx, rank, NULL, 0);
		T_OK(coop_msg_set_data_handler(ctx, on_data, &rx));
		t_barrier(ctx, rank, size);
		flag_set(fl, 2);	/* no more progress until flag 0 */
		flag_wait(fl, 0);	/* all sent, none handled yet */
		progress_until(ctx, &rx.total, fl->n, "payloads handled");
		T_ASSERT(rx.data[0] == fl->n && rx.plain[0] == 0,
			 "%d data, %d plain", rx.data[0], rx.plain[0]);
		flag_set(fl, 1);
		t_barrier(ctx, rank, size);
		return 0;
	}
	t_barrier(ctx, rank, size);
	n = grab_all(ctx, 1, b);
	T_ASSERT(coop_msg_buf_get(ctx, 1, &x) == COOP_ERR_NOMEM,
		 "NOMEM again");
	put_all(ctx, b, n);
	T_ASSERT(b[0].data == NULL, "put leaves the buf pointing at it");
	T_ASSERT(coop_msg_buf_put(ctx, &b[0]) == COOP_ERR_ARG,
		 "the second put of a buf");
	i = grab_all(ctx, 1, b);
	T_ASSERT(i == n, "after the puts: %d slots, before %d", i, n);
	flag_wait(fl, 2);	/* rank 1 out of the barrier */
	for (i = 0; i < n; i++) {	/* sizes 0 .. max */
		sched[i].hlen = 4;
		sched[i].len = (size_t)i * 4099 % (max + 1);
		t_fill(b[i].data, sched[i].len, seed_of(0, 1, (uint32_t)i));
		T_OK(coop_msg_buf_send(ctx, 1, &b[i], &i, 4, sched[i].len));
	}
	T_ASSERT(coop_msg_buf_get(ctx, 1, &x) == COOP_ERR_NOMEM,
		 "a slot free before the receiver handled its message");
	fl->n = n;
	flag_set(fl, 0);
	flag_wait(fl, 1);	/* freed by the receiver, no progress here */
	i = grab_all(ctx, 1, b);
	T_ASSERT(i == n, "after the receiver: %d slots, before %d", i, n);
	put_all(ctx, b, n);
	t_barrier(ctx, rank, size);
	return 0;
}

/* ---------------- 3: bad input ---------------- */

/* Bad sends of b (got for peer 1): each refused, b still ours. */
static void bad_sends(coop_context_t *ctx, int size, coop_msg_buf_t *b)
{
	unsigned char h[COOP_MSG_DATA_HDR_MAX + 1] = { 0 };
	coop_msg_buf_t c;
	int rc;

	T_ASSERT(coop_msg_buf_send(NULL, 1, b, h, 4, 8) == COOP_ERR_ARG,
		 "NULL ctx");
	T_ASSERT(coop_msg_buf_send(ctx, 1, NULL, h, 4, 8) == COOP_ERR_ARG,
		 "NULL buf");
	T_ASSERT(coop_msg_buf_send(ctx, -1, b, h, 4, 8) == COOP_ERR_RANK,
		 "rank -1");
	T_ASSERT(coop_msg_buf_send(ctx, size, b, h, 4, 8) == COOP_ERR_RANK,
		 "rank size");
	T_ASSERT(coop_msg_buf_send(ctx, 1, b, h, 4, b->max + 1) ==
		 COOP_ERR_ARG, "len > max");
	T_ASSERT(coop_msg_buf_send(ctx, 1, b, h, COOP_MSG_DATA_HDR_MAX + 1,
				   8) == COOP_ERR_ARG, "hlen 41");
	T_ASSERT(coop_msg_buf_send(ctx, 1, b, NULL, 1, 8) == COOP_ERR_ARG,
		 "hdr NULL with hlen 1");
	c = *b, c.slot ^= 1;
	T_ASSERT(coop_msg_buf_send(ctx, 1, &c, h, 4, 8) == COOP_ERR_ARG,
		 "forged slot number");
	c = *b, c.slot = UINT32_MAX;
	T_ASSERT(coop_msg_buf_send(ctx, 1, &c, h, 4, 8) == COOP_ERR_ARG,
		 "slot UINT32_MAX");
	c = *b, c.data = (char *)c.data + 1;
	T_ASSERT(coop_msg_buf_send(ctx, 1, &c, h, 4, 8) == COOP_ERR_ARG,
		 "forged data pointer");
	c = *b, c.reserved = 1;
	T_ASSERT(coop_msg_buf_send(ctx, 1, &c, h, 4, 8) == COOP_ERR_ARG,
		 "reserved not zero");
	/* a larger max than the slot's does not let more bytes through */
	c = *b, c.max = b->max + 4096;
	rc = coop_msg_buf_send(ctx, 1, &c, h, 4, b->max + 1);
	T_ASSERT(rc == COOP_ERR_ARG, "forged max, len max + 1: %s",
		 coop_strerror(rc));
	if (size >= 3)
		T_ASSERT(coop_msg_buf_send(ctx, 2, b, h, 4, 8) ==
			 COOP_ERR_ARG, "buf got for rank 1 sent to rank 2");
	T_ASSERT(b->data && b->max == coop_msg_data_max(ctx),
		 "the failed sends changed the buf");
}

/* Not connected: every call says so. */
static void unconnected_checks(const coop_msg_buf_t *ours)
{
	coop_init_params_t p = { .size = sizeof(p), .rank = 0, .nranks = 1,
				 .job_key = t_extra_key() };
	coop_msg_buf_t b = *ours;
	coop_context_t *u;

	T_OK(coop_init(&p, &u));
	T_ASSERT(coop_msg_data_max(u) == 0, "data_max not connected");
	T_ASSERT(coop_msg_buf_get(u, 0, &b) == COOP_ERR_STATE, "get");
	T_ASSERT(coop_msg_buf_send(u, 0, &b, NULL, 0, 0) == COOP_ERR_STATE,
		 "send");
	T_ASSERT(coop_msg_buf_put(u, &b) == COOP_ERR_STATE, "put");
	T_ASSERT(coop_msg_queued(u, 0) == -COOP_ERR_STATE, "queued");
	T_ASSERT(coop_peer_check(u, 0) == COOP_ERR_STATE, "peer_check");
	T_OK(coop_msg_set_data_handler(u, on_data, NULL));
	T_OK(coop_msg_set_peer_handler(u, NULL, NULL));
	T_OK(coop_finalize(u));
}

/* Argument errors of coop_msg_queued, coop_msg_buf_get and _put. */
static void queued_get_put_args(coop_context_t *ctx, int size)
{
	coop_msg_buf_t b;

	T_ASSERT(coop_msg_queued(NULL, 1) == -COOP_ERR_ARG, "queued(NULL)");
	T_ASSERT(coop_msg_queued(ctx, -1) == -COOP_ERR_RANK, "queued(-1)");
	T_ASSERT(coop_msg_queued(ctx, size) == -COOP_ERR_RANK, "queued(size)");
	T_ASSERT(coop_msg_buf_get(NULL, 1, &b) == COOP_ERR_ARG, "get NULL ctx");
	T_ASSERT(coop_msg_buf_get(ctx, 1, NULL) == COOP_ERR_ARG, "get NULL");
	T_ASSERT(coop_msg_buf_get(ctx, -1, &b) == COOP_ERR_RANK, "get -1");
	T_ASSERT(coop_msg_buf_get(ctx, size, &b) == COOP_ERR_RANK,
		 "get size");
	T_ASSERT(coop_msg_buf_put(NULL, &b) == COOP_ERR_ARG, "put NULL ctx");
	T_ASSERT(coop_msg_buf_put(ctx, NULL) == COOP_ERR_ARG, "put NULL");
}

/* Bad sends: refused, the slot still ours (a put gives it back). */
static void refused_then_put(coop_context_t *ctx, int size)
{
	coop_msg_buf_t b, stale;

	T_OK(coop_msg_buf_get(ctx, 1, &b));
	bad_sends(ctx, size, &b);
	stale = b, stale.slot ^= 1;
	T_ASSERT(coop_msg_buf_put(ctx, &stale) == COOP_ERR_ARG,
		 "put of a forged slot number");
	stale = b, stale.data = (char *)stale.data + 64;
	T_ASSERT(coop_msg_buf_put(ctx, &stale) == COOP_ERR_ARG,
		 "put of a forged data pointer");
	T_OK(coop_msg_buf_put(ctx, &b));
}

/*
 * The same with a message that then goes: its bytes intact, the buf
 * neither put nor sent again, and its slot free once rank 1 handled it
 * (n: all the slots).  Returns the buf as the send left it.
 */
static coop_msg_buf_t refused_then_sent(coop_context_t *ctx, int size,
					struct flags *fl,
					coop_msg_buf_t *all, int n)
{
	/* the header, named as the checks' text prints it */
	char eager[COOP_MSG_DATA_HDR_MAX];
	coop_msg_buf_t b;
	int i;

	T_OK(coop_msg_buf_get(ctx, 1, &b));
	t_fill(b.data, 100, seed_of(0, 1, 0));
	bad_sends(ctx, size, &b);
	hdr_make((unsigned char *)eager, 0);
	T_OK(coop_msg_buf_send(ctx, 1, &b, eager, 4, 100));
	T_ASSERT(coop_msg_buf_put(ctx, &b) == COOP_ERR_ARG, "put after send");
	T_ASSERT(coop_msg_buf_send(ctx, 1, &b, eager, 4, 100) == COOP_ERR_ARG,
		 "send after send");
	flag_wait(fl, 2);	/* rank 1 handled it: its slot is free */
	i = grab_all(ctx, 1, all);
	T_ASSERT(i == n, "%d slots after the message, %d before", i, n);
	put_all(ctx, all, i);
	return b;
}

/* A stale copy of a buf given back, its slot free: neither sent nor put.
 * Leaves all n slots ours, in all. */
static void stale_of_free_slot(coop_context_t *ctx, coop_msg_buf_t *all,
			       int n)
{
	coop_msg_buf_t b2, stale;
	int i, rc;

	T_OK(coop_msg_buf_get(ctx, 1, &b2));
	stale = b2;
	T_OK(coop_msg_buf_put(ctx, &b2));
	rc = coop_msg_buf_send(ctx, 1, &stale, NULL, 0, 8);
	T_ASSERT(rc == COOP_ERR_ARG, "send of a buf given back: %s",
		 coop_strerror(rc));
	rc = coop_msg_buf_put(ctx, &stale);
	T_ASSERT(rc == COOP_ERR_ARG, "put of a buf given back: %s",
		 coop_strerror(rc));
	i = grab_all(ctx, 1, all);
	T_ASSERT(i == n, "%d slots, %d before", i, n);
}

/* The same with its slot busy with an MPI eager send (to rank 1, tag 7,
 * seed 99): all n slots ours; give back the last, which the send takes. */
static void stale_of_eager_slot(coop_context_t *ctx, coop_msg_buf_t *all,
				int n)
{
	coop_msg_buf_t b2, stale;
	coop_request_t *r;
	char eager[1000];
	int rc;

	stale = all[n - 1];
	T_OK(coop_msg_buf_put(ctx, &all[n - 1]));
	t_fill(eager, sizeof(eager), 99);
	T_OK(coop_isend(ctx, eager, sizeof(eager), 1, 7, COMM, 0, &r));
	T_OK(coop_wait(&r, NULL));
	T_ASSERT(coop_msg_buf_get(ctx, 1, &b2) == COOP_ERR_NOMEM,
		 "the eager send took no slot");
	rc = coop_msg_buf_put(ctx, &stale);
	T_ASSERT(rc == COOP_ERR_ARG, "put of the eager send's slot: %s",
		 coop_strerror(rc));
	T_ASSERT(coop_msg_buf_get(ctx, 1, &b2) == COOP_ERR_NOMEM,
		 "the eager send's slot was given away");
	rc = coop_msg_buf_send(ctx, 1, &stale, NULL, 0, 8);
	T_ASSERT(rc == COOP_ERR_ARG, "send of the eager send's slot: %s",
		 coop_strerror(rc));
	put_all(ctx, all, n - 1);
}

/* Argument errors of coop_peer_check and coop_msg_set_peer_handler. */
static void peer_args(coop_context_t *ctx, int size)
{
	T_ASSERT(coop_peer_check(NULL, 1) == COOP_ERR_ARG, "check NULL");
	T_ASSERT(coop_peer_check(ctx, -1) == COOP_ERR_RANK, "check -1");
	T_ASSERT(coop_peer_check(ctx, size) == COOP_ERR_RANK, "check size");
	T_ASSERT(coop_msg_set_peer_handler(NULL, NULL, NULL) == COOP_ERR_ARG,
		 "set_peer_handler(NULL)");
}

/*
 * Rank 0 checks; rank 1 receives exactly the one good message of them
 * and an eager MPI message whose bounce slot a stale buf of rank 0
 * names; rank 2 (when there) nothing.
 */
static int args_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	static coop_msg_buf_t all[MAX_SLOTS];
	struct flags *fl = arg;
	coop_msg_buf_t b;
	char eager[1000];
	struct rx rx;
	int n, i;

	rx_init(&rx, rank, NULL, 0);
	T_OK(coop_msg_set_data_handler(ctx, on_data, &rx));
	T_OK(coop_msg_set_handler(ctx, on_plain, &rx));
	t_barrier(ctx, rank, size);
	if (rank == 1) {
		progress_until(ctx, &rx.total, 1, "the good message");
		flag_set(fl, 2);
		flag_wait(fl, 0);
		T_OK(coop_recv(ctx, eager, sizeof(eager), 0, 7, COMM, 0,
			       NULL));
		T_ASSERT(t_check(eager, sizeof(eager), 99) < 0,
			 "eager message");
	}
	if (rank) {
		t_barrier(ctx, rank, size);
		T_ASSERT(rx.total == (rank == 1) && rx.data[0] == (rank == 1),
			 "rank %d received %d messages", rank, rx.total);
		t_barrier(ctx, rank, size);
		return 0;
	}
	T_ASSERT(coop_msg_data_max(NULL) == 0, "data_max(NULL)");
	T_ASSERT(coop_msg_set_data_handler(NULL, on_data, &rx) ==
		 COOP_ERR_ARG, "set_data_handler(NULL)");
	queued_get_put_args(ctx, size);
	n = grab_all(ctx, 1, all);
	put_all(ctx, all, n);

	refused_then_put(ctx, size);
	b = refused_then_sent(ctx, size, fl, all, n);
	stale_of_free_slot(ctx, all, n);
	stale_of_eager_slot(ctx, all, n);
	flag_set(fl, 0);

	peer_args(ctx, size);
	unconnected_checks(&b);
	t_barrier(ctx, rank, size);	/* rank 1 got its messages */
	i = grab_all(ctx, 1, all);
	T_ASSERT(i == n, "%d slots at the end, %d before", i, n);
	put_all(ctx, all, n);
	T_ASSERT(rx.total == 0, "rank 0 received %d", rx.total);
	t_barrier(ctx, rank, size);
	return 0;
}

/* ---------------- 4: no data handler ---------------- */

#define NODROP 10

/*
 * Rank 1 has no data handler (arg 0: never set, 1: set, then NULL): the
 * NODROP payloads rank 0 sends (all its slots taken first) are dropped,
 * one line each on stderr, and their slots freed: rank 0 gets all again.
 * A plain message after them tells rank 1 they were all seen.
 */
static int nohandler_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	static coop_msg_buf_t b[MAX_SLOTS];
	struct flags *fl = arg;
	int variant = fl->n, n, i, saved, lines, total;
	struct rx rx;
	FILE *err;
	double end;

	rx_init(&rx, rank, NULL, 0);
	if (rank == 1) {
		if (variant) {
			T_OK(coop_msg_set_data_handler(ctx, on_data, &rx));
			T_OK(coop_msg_set_data_handler(ctx, NULL, NULL));
		}
		T_OK(coop_msg_set_handler(ctx, on_plain, &rx));
		err = t_stderr_begin(&saved);
		T_ASSERT(err != NULL, "stderr to a file: %s", strerror(errno));
		t_barrier(ctx, rank, size);
		end = deadline(20);
		while (__atomic_load_n(&rx.total, __ATOMIC_ACQUIRE) < 1 &&
		       now_s() < end)
			if (coop_progress(ctx))
				break;
		total = rx.total;
		t_stderr_end(saved);
		T_ASSERT(total == 1 && rx.plain[0] == 1 && rx.data[0] == 0,
			 "received %d messages, %d plain", total, rx.plain[0]);
		lines = t_count_lines(err, "dropped", "from 0");
		T_ASSERT(lines == NODROP, "%d lines on stderr, not %d", lines,
			 NODROP);
		fclose(err);
		flag_set(fl, 1);
		t_barrier(ctx, rank, size);
		return 0;
	}
	t_barrier(ctx, rank, size);
	n = grab_all(ctx, 1, b);
	T_ASSERT(n >= NODROP, "%d slots", n);
	for (i = 0; i < NODROP; i++) {
		t_fill(b[i].data, 1000, seed_of(0, 1, (uint32_t)i));
		T_OK(coop_msg_buf_send(ctx, 1, &b[i], &i, 4, 1000));
	}
	send_ent(ctx, 0, 1, &(struct ent){ -1, 8 }, 0);
	put_all(ctx, b + NODROP, n - NODROP);
	flag_wait(fl, 1);
	i = grab_all(ctx, 1, b);
	T_ASSERT(i == n, "%d slots after the drops, %d before: the dropped "
		 "messages' slots were not freed", i, n);
	put_all(ctx, b, i);
	t_barrier(ctx, rank, size);
	return 0;
}

/* ---------------- 5: the backlog ---------------- */

#define EXTRA 100

/* The receiver's ring: COOP_RING_SLOTS with shm, the driver's
 * mbox_slots with kmod, 0 when unknown. */
static int ring_capacity(coop_context_t *ctx)
{
	const char *prov = coop_provider_name(ctx);
	FILE *f;
	int n = 0;

	if (prov && !strcmp(prov, "shm"))
		return 64;	/* the test's COOP_RING_SLOTS */
	f = fopen("/sys/module/coopmpi/parameters/mbox_slots", "r");
	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = 0;
		fclose(f);
	}
	return n;
}

/*
 * Rank 1 does not progress while rank 0 sends: the ring fills, the rest
 * waits in rank 0's backlog, which coop_msg_queued counts exactly; once
 * rank 1 progresses and rank 0 flushes, the count is back to 0 and rank
 * 1 got everything in order (plain and payload messages).
 */
static int queued_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	struct flags *fl = arg;
	struct ent e[EXTRA];
	struct rx rx;
	int k = 0, j, q, last, cap;
	double end;

	rx_init(&rx, rank, NULL, 0);
	T_OK(coop_msg_set_handler(ctx, on_plain, &rx));
	T_OK(coop_msg_set_data_handler(ctx, on_data, &rx));
	t_barrier(ctx, rank, size);
	if (rank == 1) {
		T_ASSERT(coop_msg_queued(ctx, 0) == 0, "queued to 0");
		flag_set(fl, 2);	/* the barrier's packets read */
		flag_wait(fl, 0);
		progress_until(ctx, &rx.total, fl->n, "messages received");
		T_ASSERT(rx.total == fl->n && rx.next[0] == fl->n,
			 "%d received, in order %d, of %d", rx.total,
			 rx.next[0], fl->n);
		T_ASSERT(rx.data[0] == EXTRA / 10, "%d payloads", rx.data[0]);
		flag_set(fl, 1);
		t_barrier(ctx, rank, size);
		return 0;
	}
	flag_wait(fl, 2);	/* rank 1's ring empty */
	T_ASSERT(coop_msg_queued(ctx, 1) == 0, "queued before");
	T_ASSERT(coop_msg_queued(ctx, 0) == 0, "queued to ourselves");
	while ((q = coop_msg_queued(ctx, 1)) == 0) {
		T_ASSERT(k < (1 << 17), "%d messages, none waiting", k);
		send_ent(ctx, 0, 1, &(struct ent){ -1, 8 + k % 41 },
			 (uint32_t)k);
		k++;
	}
	T_ASSERT(q == 1, "queued %d after the first that waits", q);
	cap = ring_capacity(ctx);
	T_ASSERT(!cap || k - 1 == cap, "%d went into a ring of %d", k - 1,
		 cap);
	for (j = 0; j < EXTRA; j++) {	/* every tenth with a payload */
		e[j].hlen = j % 10 == 5 ? 8 : -1;
		e[j].len = j % 10 == 5 ? 3000 : 4 + (size_t)j % 45;
		send_ent(ctx, 0, 1, &e[j], (uint32_t)k++);
		q = coop_msg_queued(ctx, 1);
		T_ASSERT(q == j + 2, "queued %d after %d more, not %d", q,
			 j + 1, j + 2);
	}
	T_ASSERT(coop_msg_queued(ctx, 0) == 0, "queued to ourselves");
	fl->n = k;
	flag_set(fl, 0);
	end = deadline(20);
	last = q;
	while ((q = coop_msg_queued(ctx, 1)) > 0) {
		T_ASSERT(q <= last, "queued grew: %d after %d", q, last);
		last = q;
		T_OK(coop_progress(ctx));
		T_ASSERT(now_s() < end, "still %d queued after 20 s", q);
	}
	T_ASSERT(q == 0, "queued %d", q);
	flag_wait(fl, 1);
	T_ASSERT(coop_msg_queued(ctx, 1) == 0, "queued at the end");
	t_barrier(ctx, rank, size);
	return 0;
}

/* ---------------- 6: peers that went ---------------- */

struct gone {
	int n;			/* calls */
	int peer[8], crashed[8];
	int got_before[8];	/* messages of the peer received by then */
	struct rx *rx;
};

static void on_gone(void *arg, int peer, int crashed)
{
	struct gone *g = arg;

	T_ASSERT(g->n < 8, "peer handler called %d times", g->n + 1);
	g->peer[g->n] = peer;
	g->crashed[g->n] = crashed;
	g->got_before[g->n] = peer >= 0 && peer < 4 ?
		g->rx->plain[peer] + g->rx->data[peer] : -1;
	g->n++;
}

/* Calls of the handler for peer, and the index of the last. */
static int calls_for(const struct gone *g, int peer, int *last)
{
	int i, n = 0;

	for (i = 0; i < g->n; i++)
		if (g->peer[i] == peer)
			n++, *last = i;
	return n;
}

/* A plain and a payload message to rank 0, then go. */
static void last_words(coop_context_t *ctx, int rank)
{
	static const struct ent plain = { -1, 12 }, data = { 20, 5000 };

	send_ent(ctx, rank, 0, &plain, 0);
	send_ent(ctx, rank, 0, &data, 1);
}

/* Every rank alive; a rank past the last refused. */
static void all_alive(coop_context_t *ctx, int size)
{
	int i;

	for (i = 0; i < size; i++)
		T_ASSERT(coop_peer_check(ctx, i) == COOP_SUCCESS,
			 "rank %d alive", i);
	T_ASSERT(coop_peer_check(ctx, size) == COOP_ERR_RANK, "bad rank");
}

/* Rank 2 found dead by coop_peer_check alone (no progress). */
static void wait_rank2_dead(coop_context_t *ctx)
{
	double end = deadline(20);
	int rc;

	while ((rc = coop_peer_check(ctx, 2)) == COOP_SUCCESS) {
		T_ASSERT(now_s() < end, "rank 2 alive after 20 s");
		usleep(1000);
	}
	T_ASSERT(rc == COOP_ERR_PEER_DEAD, "check: %s", coop_strerror(rc));
}

/*
 * The dead and the gone: no message to them, no slot for them; b (got
 * for rank 2 before it died, not sent) is still ours, and of the n slots
 * the others are free.
 */
static void dead_peer_checks(coop_context_t *ctx, coop_msg_buf_t *b,
			     coop_msg_buf_t *all, int n)
{
	coop_msg_buf_t x;
	int i, rc;

	T_ASSERT(coop_peer_check(ctx, 1) == COOP_ERR_PEER_DEAD, "rank 1");
	T_ASSERT(coop_peer_check(ctx, 0) == COOP_SUCCESS, "ourselves");
	T_ASSERT(coop_msg_send(ctx, 2, "x", 1) == COOP_ERR_PEER_DEAD, "send");
	T_ASSERT(coop_msg_buf_get(ctx, 2, &x) == COOP_ERR_PEER_DEAD, "get");
	rc = coop_msg_buf_send(ctx, 2, b, NULL, 0, 8);
	T_ASSERT(rc == COOP_ERR_PEER_DEAD, "buf_send to the dead: %s",
		 coop_strerror(rc));
	/* b is still ours: its slot was not reclaimed with rank 2's */
	i = grab_all(ctx, 0, all);
	T_ASSERT(i == n - 1, "%d slots free while one is held, of %d: the "
		 "held one was reclaimed with the dead peer's", i, n);
	put_all(ctx, all, i);
	rc = coop_msg_buf_put(ctx, b);
	T_ASSERT(rc == COOP_SUCCESS, "put: %s", coop_strerror(rc));
	i = grab_all(ctx, 0, all);
	T_ASSERT(i == n, "%d slots in the end, of %d", i, n);
	put_all(ctx, all, i);
}

/*
 * Rank 1 finalizes cleanly, rank 2 is SIGKILLed; rank 0 finds 2 dead
 * with coop_peer_check (no progress meanwhile, so the handler waits for
 * the next progress step), then both go through its peer handler once,
 * each after its last messages.  A slot got for rank 2 and not sent
 * stays rank 0's.
 */
static int peer_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	static coop_msg_buf_t all[MAX_SLOTS];
	struct gone g = { 0 };
	coop_msg_buf_t b;
	struct rx rx;
	int i, n, last = -1;
	double end;

	(void)arg;
	if (rank) {
		t_barrier(ctx, rank, size);
		last_words(ctx, rank);
		if (rank == 2)
			raise(SIGKILL);
		return 0;	/* finalized by the harness */
	}
	rx_init(&rx, rank, NULL, 0);
	g.rx = &rx;
	T_OK(coop_msg_set_handler(ctx, on_plain, &rx));
	T_OK(coop_msg_set_data_handler(ctx, on_data, &rx));
	for (i = 0; i < 10; i++)	/* setting it again takes no room */
		T_OK(coop_msg_set_peer_handler(ctx, on_gone, &g));
	T_OK(coop_msg_set_peer_handler(ctx, NULL, NULL));
	T_OK(coop_msg_set_peer_handler(ctx, on_gone, &g));
	all_alive(ctx, size);
	n = grab_all(ctx, 2, all);
	put_all(ctx, all, n);
	T_OK(coop_msg_buf_get(ctx, 2, &b));	/* kept through the death */
	t_barrier(ctx, rank, size);

	wait_rank2_dead(ctx);
	T_ASSERT(g.n == 0, "handler called without progress");
	T_ASSERT(coop_peer_check(ctx, 2) == COOP_ERR_PEER_DEAD, "again");
	T_OK(coop_progress(ctx));
	T_ASSERT(calls_for(&g, 2, &last) == 1 && g.crashed[last] == 1,
		 "rank 2: %d calls, crashed %d", calls_for(&g, 2, &last),
		 last >= 0 ? g.crashed[last] : -1);
	T_ASSERT(g.got_before[last] == 2, "rank 2's messages before its "
		 "handler: %d of 2", g.got_before[last]);
	end = deadline(20);
	while (!calls_for(&g, 1, &last)) {
		T_OK(coop_progress(ctx));
		T_ASSERT(now_s() < end, "rank 1's end not seen in 20 s");
	}
	T_ASSERT(g.crashed[last] == 0, "rank 1 finalized: crashed %d",
		 g.crashed[last]);
	T_ASSERT(g.got_before[last] == 2, "rank 1's messages before its "
		 "handler: %d of 2", g.got_before[last]);
	end = now_s() + 0.2;	/* nothing more comes */
	while (now_s() < end)
		T_OK(coop_progress(ctx));
	T_ASSERT(g.n == 2 && calls_for(&g, 1, &last) == 1 &&
		 calls_for(&g, 2, &last) == 1, "%d calls", g.n);
	T_ASSERT(rx.total == 4 && rx.plain[1] == 1 && rx.data[1] == 1 &&
		 rx.plain[2] == 1 && rx.data[2] == 1, "messages: %d", rx.total);

	dead_peer_checks(ctx, &b, all, n);
	T_ASSERT(g.n == 2, "%d calls", g.n);
	return 0;
}

/* ---------------- the event fd ---------------- */

static void count_msg(void *arg, int src, const void *msg, size_t len)
{
	(void)src, (void)msg, (void)len;
	(*(int *)arg)++;
}

/* Arm as soon as nothing is left to progress (init's own traffic). */
static void arm_when_idle(coop_context_t *ctx)
{
	double end = deadline(20);
	int rc;

	while ((rc = coop_event_arm(ctx)) == COOP_ERR_STATE) {
		T_OK(coop_progress(ctx));
		if (now_s() > end)
			T_FAIL("coop_event_arm still busy after 20 s");
	}
	T_OK(rc);
}

/*
 * After arming, the fd is quiet until rank 1's message, then readable;
 * arming with a message waiting is refused; arming again once it is
 * taken makes the fd quiet again (shm: the doorbell's byte is drained).
 */
static int event_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	struct flags *fl = arg;
	int fd = -1, got = 0, one = 1;
	struct pollfd pfd;

	(void)size;
	T_ASSERT(coop_event_fd(NULL, &fd) == COOP_ERR_ARG &&
		 coop_event_fd(ctx, NULL) == COOP_ERR_ARG &&
		 coop_event_arm(NULL) == COOP_ERR_ARG, "bad arguments");
	T_OK(coop_event_fd(ctx, &fd));
	T_OK(coop_msg_set_handler(ctx, count_msg, &got));
	if (rank == 1) {
		flag_wait(fl, 0);	/* rank 0 armed */
		T_OK(coop_msg_send(ctx, 0, &one, sizeof(one)));
		flag_wait(fl, 1);	/* it woke and took it */
		T_OK(coop_msg_send(ctx, 0, &one, sizeof(one)));
		flag_set(fl, 2);
		flag_wait(fl, 3);
		return 0;
	}
	arm_when_idle(ctx);
	pfd.fd = fd;
	pfd.events = POLLIN;
	T_ASSERT(poll(&pfd, 1, 0) == 0, "readable with nothing sent");
	flag_set(fl, 0);
	T_ASSERT(poll(&pfd, 1, (int)(20000 * t_time_scale())) == 1 &&
		 (pfd.revents & POLLIN), "no wake-up by the message");
	progress_until(ctx, &got, 1, "the first message");
	flag_set(fl, 1);
	flag_wait(fl, 2);
	T_ASSERT(coop_event_arm(ctx) == COOP_ERR_STATE,
		 "armed while a message waits");
	progress_until(ctx, &got, 2, "the second message");
	arm_when_idle(ctx);
	T_ASSERT(poll(&pfd, 1, 0) == 0, "readable again after re-arming");
	T_OK(coop_progress(ctx));
	T_OK(coop_set_progress(ctx, COOP_PROGRESS_THREAD_SLEEP, -1));
	T_ASSERT(coop_event_arm(ctx) == COOP_ERR_STATE,
		 "armed while a progress thread takes the messages");
	T_OK(coop_set_progress(ctx, COOP_PROGRESS_MANUAL, -1));
	flag_set(fl, 3);
	return 0;
}

/* ---------------- the test case ---------------- */

static const size_t max_default = 64 << 10, max_128k = 128 << 10;
static const char *const env_128k[] = { "COOP_EAGER_MAX=128k", NULL };

START_TEST(test_msg_payload)
{
	ck_assert_int_eq(run_ranks(2, _i ? env_128k : NULL, payload_rank,
				   (void *)(_i ? &max_128k : &max_default),
				   60, NULL), 0);
}
END_TEST

/* nranks ranks of fn sharing fresh flags (n set to n); run_ranks' result. */
static int run_with_flags(int nranks, const char *const *env, rank_fn fn,
			  int n)
{
	struct flags *fl = shared_alloc(4096);
	int rc;

	fl->n = n;
	rc = run_ranks(nranks, env, fn, fl, 60, NULL);
	shared_free(fl, 4096);
	return rc;
}

/*
 * What these check holds under manual progress, whatever COOP_PROGRESS
 * the suite runs with: handlers run only inside the caller's progress, a
 * ring fills while its owner does not poll, the caller's event fd fires.
 * A progress thread drains the rings and runs the handlers itself.
 */
static const char *const env_manual[] = { "COOP_PROGRESS=manual", NULL };

START_TEST(test_msg_slots)
{
	ck_assert_int_eq(run_with_flags(2, env_manual, slots_rank, 0), 0);
}
END_TEST

START_TEST(test_msg_args)
{
	ck_assert_int_eq(run_with_flags(3, NULL, args_rank, 0), 0);
}
END_TEST

START_TEST(test_msg_no_handler)
{
	ck_assert_int_eq(run_with_flags(2, NULL, nohandler_rank, _i), 0);
}
END_TEST

START_TEST(test_msg_queued)
{
	static const char *const env[] = { "COOP_RING_SLOTS=64",
					   "COOP_PROGRESS=manual", NULL };

	ck_assert_int_eq(run_with_flags(2, env, queued_rank, 0), 0);
}
END_TEST

START_TEST(test_msg_peer_gone)
{
	struct rank_result res[3];

	run_ranks(3, env_manual, peer_rank, NULL, 60, res);
	ck_assert_msg(res[0].exited && res[0].status == 0, "rank 0 failed");
	ck_assert_msg(res[1].exited && res[1].status == 0, "rank 1 failed");
	ck_assert_int_eq(res[2].signo, SIGKILL);
}
END_TEST

START_TEST(test_msg_event_fd)
{
	ck_assert_int_eq(run_with_flags(2, env_manual, event_rank, 0), 0);
}
END_TEST

TCase *tc_msg(void)
{
	TCase *tc = tcase_create("msg");

	tcase_set_timeout(tc, 90);
	tcase_add_loop_test(tc, test_msg_payload, 0, 2);
	tcase_add_test(tc, test_msg_slots);
	tcase_add_test(tc, test_msg_args);
	tcase_add_loop_test(tc, test_msg_no_handler, 0, 2);
	tcase_add_test(tc, test_msg_queued);
	tcase_add_test(tc, test_msg_peer_gone);
	tcase_add_test(tc, test_msg_event_fd);
	return tc;
}
