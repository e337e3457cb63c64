/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_hostile.c - a peer of the same domain that breaks the protocol.  On
 * the shm provider every member can map every ring and segment file, so
 * rank 2 rewrites its own segment's geometry after rank 0 mapped it, then
 * writes into rank 0's mailbox: an EAGER_BB naming a bounce slot that only
 * the rewritten geometry has, a fragment longer than a bounce slot, then
 * thousands of random packets (_i = 1: only random packets, all of known
 * types, sent as the spans their headers say; _i = 2: first an Env+D
 * whose length is more than its span holds; _i = 3: only the first
 * message of a span).  Rank 0 never reads or writes out of bounds,
 * treats rank 2 as failed at its first bad packet (both receives posted
 * for it end with COOP_ERR_PEER_DEAD), and keeps serving rank 1.  (With
 * the driver, rings are mapped through it: the same library checks
 * apply; this test needs the files.)
 *
 * And a rank that writes into a neighbourhood topology's open slot at
 * rank 0 what no sender writes (test_hostile_slot).
 */
#include <check.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "shmseg.h"
#include "tests.h"
#include "wire.h"

#define COMM 61
#define NGARBAGE 4000
#define BAD_SLOT 5000u		/* below the rewritten nbounce only */

enum { VICTIM, HONEST, HOSTILE };

struct hostile_sync {
	int posted;		/* the victim's receives from HOSTILE */
	int attacked;		/* everything is in its mailbox */
	int done;		/* the victim and the honest peer are */
	int variant;		/* _i: what rank 2 sends (see above) */
};

enum { BAD_GEOMETRY, GARBAGE, SPAN_TOO_SHORT, SPAN_MISSING };

static void *map_shm_file(const char *fmt, int rank, size_t *bytes)
{
	char name[80];
	struct stat st;
	void *m;
	int fd;

	snprintf(name, sizeof(name), fmt, (unsigned long long)t_job, rank);
	fd = shm_open(name, O_RDWR, 0);
	T_ASSERT(fd >= 0 && !fstat(fd, &st), "open %s", name);
	*bytes = (size_t)st.st_size;
	m = mmap(NULL, *bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	T_ASSERT(m != MAP_FAILED, "map %s", name);
	return m;
}

/* Claim n slots of ring h (spin while full): the first one's position */
static uint64_t claim(struct coopmpi_ring_hdr *h, unsigned n)
{
	uint64_t mask = h->slots - 1, pos, head;

	for (;;) {
		pos = __atomic_load_n(&h->tail, __ATOMIC_RELAXED);
		head = __atomic_load_n(&h->head, __ATOMIC_ACQUIRE);
		if ((int64_t)(pos + n - 1 - head) > (int64_t)mask) {
			/* full: the victim drains it */
			T_ASSERT(!__atomic_load_n(&h->closed, __ATOMIC_ACQUIRE),
				 "the victim left");
			usleep(100);
			continue;
		}
		if (__atomic_compare_exchange_n(&h->tail, &pos, pos + n, 0,
						__ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return pos;
	}
}

/*
 * The uapi ring protocol's producer side, on rank's mailbox file: each
 * packet with the span its header says (published first last), cut short
 * where pkts end.
 */
static void inject(int rank, const union coop_pkt *pkts, int n)
{
	size_t bytes;
	struct coopmpi_ring_hdr *h =
		map_shm_file("/coopmpi-%016llx-ring-%d", rank, &bytes);
	uint64_t *seq = (uint64_t *)((char *)h + COOPMPI_RING_SEQ_OFF);
	char *msgs = (char *)h + coopmpi_ring_msgs_off(h->slots);
	uint64_t mask = h->slots - 1, pos;
	int i = 0, k, span;

	while (i < n) {
		span = 1 + (int)coop_pkt_span_more(&pkts[i]);
		span = span < n - i ? span : n - i;
		pos = claim(h, (unsigned)span);
		for (k = 0; k < span; k++)
			memcpy(msgs + ((pos + k) & mask) * COOPMPI_MSG_SIZE,
			       &pkts[i + k], COOPMPI_MSG_SIZE);
		for (k = span; k-- > 0;)
			__atomic_store_n(&seq[(pos + k) & mask], pos + k + 1,
					 __ATOMIC_RELEASE);
		i += span;
	}
	munmap(h, bytes);
}

static void rewrite_own_geometry(void)
{
	size_t bytes;
	struct coop_seg_hdr *h =
		map_shm_file("/coopmpi-%016llx-seg-%d", HOSTILE, &bytes);

	h->nbounce = 1u << 20;
	h->bounce_size = 1ULL << 40;
	munmap(h, bytes);
}

static void fill_garbage(union coop_pkt *p, int n, int valid_types)
{
	uint32_t x = 12345;

	for (int i = 0; i < n; i++) {
		for (size_t b = 0; b < sizeof(p[i]); b++) {
			x = x * 1103515245u + 12345u;
			p[i].raw[b] = (uint8_t)(x >> 16);
		}
		if (valid_types)
			p[i].h.type = 1 + p[i].h.type % (PKT_TYPE_MAX - 1);
		p[i].h.src = HOSTILE;	/* its own: the others' are not ours */
	}
}

/* The first bad packets, for the first receive (tag 1): how many. */
static int first_bad(union coop_pkt *p, int variant)
{
	memset(p, 0, 2 * sizeof(p[0]));
	p[0].h.src = p[1].h.src = HOSTILE;
	p[0].h.comm = COMM;
	p[0].h.tag = 1;
	if (variant == BAD_GEOMETRY) {
		p[0].h.type = PKT_EAGER_BB;
		p[0].bb.slot = BAD_SLOT;
		p[0].bb.len = 1000;
		p[1].h.type = PKT_FRAG;
		p[1].frag.len = 1ULL << 40;
		return 2;
	}
	/* an Env+D said to go on in the next message (SPAN_MISSING: which
	 * never comes), longer than the two hold */
	p[0].h.type = PKT_EAGER;
	p[0].h.flags = 1 << PF_SPAN_SHIFT;
	p[0].h.ilen = PKT_BODY + COOPMPI_MSG_SIZE + 1;
	return variant == SPAN_MISSING ? 1 : 2;
}

static void hostile(struct hostile_sync *sy)
{
	static union coop_pkt p[NGARBAGE];
	int n;

	t_flag_wait(&sy->posted);
	rewrite_own_geometry();
	fill_garbage(p, NGARBAGE, sy->variant == GARBAGE);
	if (sy->variant == GARBAGE) {
		inject(VICTIM, p, NGARBAGE);
	} else {
		n = first_bad(p, sy->variant);
		/* nothing after a span cut short: it would complete it */
		inject(VICTIM, p, sy->variant == SPAN_MISSING ? n : NGARBAGE);
	}
	__atomic_store_n(&sy->attacked, 1, __ATOMIC_RELEASE);
}

/* The request ends within 30 s: its error */
static int finish(coop_request_t **req)
{
	double end = (double)time(NULL) + 30 * t_time_scale();
	coop_status_t st;
	int flag = 0, rc = 0;

	while (!flag && time(NULL) < end)
		rc = coop_test(req, &flag, &st);
	T_ASSERT(flag, "a request did not end in 30 s");
	return rc ? rc : st.error;
}

/* One message of each size to the peer, the same back: data checked. */
static void honest_exchange(coop_context_t *ctx, int rank)
{
	static const size_t sizes[] = { 64, 64 << 10, 4 << 20 };
	int peer = rank == VICTIM ? HONEST : VICTIM;
	char *buf = malloc(4 << 20);
	coop_request_t *r;

	T_ASSERT(buf, "malloc");
	for (int i = 0; i < 3; i++) {
		for (int turn = 0; turn < 2; turn++) {
			if ((turn == 0) == (rank == VICTIM)) {
				t_fill(buf, sizes[i], 900 + i);
				T_OK(coop_isend(ctx, buf, sizes[i], peer,
						10 + i, COMM, 0, &r));
				T_OK(finish(&r));
				continue;
			}
			memset(buf, 0, sizes[i]);
			T_OK(coop_irecv(ctx, buf, sizes[i], peer, 10 + i,
					COMM, 0, &r));
			T_OK(finish(&r));
			T_ASSERT(t_check(buf, sizes[i], 900 + i) < 0,
				 "%zu bytes from rank %d", sizes[i], peer);
		}
	}
	free(buf);
}

static int hostile_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	struct hostile_sync *sy = arg;
	char a[1000], b[8];
	coop_request_t *r1, *r2;
	int rc;

	t_barrier(ctx, rank, size);	/* all connected */
	if (rank == HOSTILE) {
		hostile(sy);
		/* alive until the end: failed for what it sent */
		t_flag_wait(&sy->done);
		_exit(0);
	}
	if (rank == HONEST) {
		honest_exchange(ctx, rank);
		return 0;
	}
	if (sy->variant == GARBAGE) {
		t_flag_raise(&sy->posted);
		goto attacked;
	}
	T_OK(coop_irecv(ctx, a, sizeof(a), HOSTILE, 1, COMM, 0, &r1));
	T_OK(coop_irecv(ctx, b, sizeof(b), HOSTILE, 2, COMM, 0, &r2));
	t_flag_raise(&sy->posted);
	rc = finish(&r1);
	T_ASSERT(rc == COOP_ERR_PEER_DEAD, "the receive the bad message "
		 "was for: %s", coop_strerror(rc));
	rc = finish(&r2);
	T_ASSERT(rc == COOP_ERR_PEER_DEAD, "the other receive: %s",
		 coop_strerror(rc));
attacked:
	while (!__atomic_load_n(&sy->attacked, __ATOMIC_ACQUIRE))
		coop_progress(ctx);
	for (int i = 0; i < 1000; i++)	/* the garbage, dispatched */
		coop_progress(ctx);
	honest_exchange(ctx, rank);
	t_flag_raise(&sy->done);
	return 0;
}

START_TEST(test_hostile_peer)
{
	struct hostile_sync *sy;
	struct rank_result res[3];

	if (t_kmod_provider()) {	/* the rings are not files */
		printf("hostile peer: shm provider only (lib-native)\n");
		return;
	}
	sy = shared_alloc(sizeof(*sy));
	sy->variant = _i;
	run_ranks(3, NULL, hostile_rank, sy, 120, res);
	ck_assert_msg(res[VICTIM].exited && res[VICTIM].status == 0,
		      "victim: exited %d status %d signal %d",
		      res[VICTIM].exited, res[VICTIM].status,
		      res[VICTIM].signo);
	ck_assert_msg(res[HONEST].exited && res[HONEST].status == 0,
		      "honest peer: status %d signal %d", res[HONEST].status,
		      res[HONEST].signo);
	ck_assert_msg(res[HOSTILE].exited && res[HOSTILE].status == 0,
		      "hostile peer: status %d signal %d",
		      res[HOSTILE].status, res[HOSTILE].signo);
	shared_free(sy, sizeof(*sy));
}
END_TEST

/* An open slot (lib/coll/canary.c): a 192-byte header whose third line
 * holds its eight buffers' length words, then the 64 KiB buffers (a
 * line apart), each ending in its canary word.  A packed one (its
 * sender receives nothing) has sixteen buffers and then 64 entries, a
 * trailer in each one's second word. */
#define OPEN_HDR 192
#define OPEN_LEN_WORDS 128
#define OPEN_BUF 65536

/* Trailers no sender writes: a length just past the most a block may
 * stream through a slot (1 TiB, COOP_NEIGHBOR_STREAM_MAX's bound), far
 * past it, unknown bits, both kinds. */
static const uint64_t bad_trailers[] = {
	(1ull << 62) | ((1ull << 40) + OPEN_BUF), (1ull << 62) | (1ull << 47),
	0x1234ull << 48, (3ull << 61) | 8,
};
#define NBAD_TRAILERS ((int)(sizeof(bad_trailers) / sizeof(bad_trailers[0])))

struct slot_sync {
	int corrupted, done;
	int both;		/* rank 0 sends to rank 1 too */
	uint64_t bad;
};

/* The first call's trailer of each of rank 0's slots (one per op: one
 * edge) becomes bad: the first of each slot's canary words (a packed
 * slot's entry), or the length word of the buffer it ends (and the
 * word then changed, as by a call). */
static void corrupt_slots(const struct slot_sync *sy)
{
	const int per_slot = sy->both ? 8 : 64;
	const size_t to_len = (OPEN_HDR + OPEN_BUF - 8 - OPEN_LEN_WORDS) / 8;
	size_t bytes, i;
	uint64_t *w = map_shm_file("/coopmpi-%016llx-nbr-%d-1", VICTIM,
				   &bytes);
	int found = 0;

	for (i = 0; i < bytes / 8; i++) {
		if (w[i] != COOP_NBR_CANARY || found++ % per_slot)
			continue;
		if (sy->both) {
			T_ASSERT(i >= to_len && !w[i - to_len],
				 "no length word %zu words before canary %d",
				 to_len, found);
			w[i - to_len] = sy->bad;
		}
		__atomic_store_n(&w[i], sy->both ? 0 : sy->bad,
				 __ATOMIC_RELEASE);
	}
	munmap(w, bytes);
	T_ASSERT(found == 2 * per_slot, "%d canaries in rank 0's window",
		 found);
}

static int slot_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	struct slot_sync *sy = arg;
	const int other = !rank, in = sy->both || !rank;
	const int out = sy->both || rank;
	unsigned char sb[8] = { 0 }, rb[8];
	coop_topo_t *t;
	int i, rc;

	(void)size;
	T_OK(coop_topo_create(ctx, COMM, in, &other, NULL, out, &other,
			      NULL, 0, &t));
	if (rank) {	/* never calls the collective: it writes */
		corrupt_slots(sy);
		t_flag_raise(&sy->corrupted);
		t_flag_wait(&sy->done);
	} else {
		t_flag_wait(&sy->corrupted);
		for (i = 0; i < 2; i++) {
			rc = coop_neighbor_alltoall(t, sb, 8, rb, 8);
			T_ASSERT(rc == COOP_ERR_PEER_DEAD, "call %d: %s", i,
				 coop_strerror(rc));
		}
		t_flag_raise(&sy->done);
	}
	T_OK(coop_topo_free(&t));
	return 0;
}

/* Rank 0's alltoall with rank 1's bad trailer fails with
 * COOP_ERR_PEER_DEAD, and so does the next one - rank 1 counts as
 * failed, although it is still there and its next buffer is armed -
 * and nothing is read outside the buffer (the sanitized stages).  Rank 1
 * sends only (its slots packed: the trailers in entries), or both
 * send. */
START_TEST(test_hostile_slot)
{
	struct slot_sync *sy = shared_alloc(sizeof(*sy));

	sy->bad = bad_trailers[_i / 2];
	sy->both = _i % 2;
	ck_assert_int_eq(run_ranks(2, NULL, slot_rank, sy, 60, NULL), 0);
	shared_free(sy, sizeof(*sy));
}
END_TEST

TCase *tc_hostile(void)
{
	TCase *tc = tcase_create("hostile");

	tcase_set_timeout(tc, 150);
	tcase_add_loop_test(tc, test_hostile_peer, 0, 4);
	tcase_add_loop_test(tc, test_hostile_slot, 0, 2 * NBAD_TRAILERS);
	return tc;
}
