/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_fbox.c - the shm provider's fast boxes (lib/providers/fbox.c),
 * driven directly on a segment in this process (and one forked sender):
 *
 * - a message is there for the receiver (coop_fbox_ready, poll) only
 *   once sent, and exactly as sent;
 * - spans of 1-4 messages, sent and taken in random turns over many
 *   laps of an 8-slot box: FIFO, whole (a slot of the lap before never
 *   passes for a message), and a full box is -EAGAIN until the receiver
 *   took enough (never a slot written twice);
 * - claims: the first max_claims senders get a box, the next gets
 *   -ENOENT and keeps getting it; every claimed box is polled;
 * - refusals: a first byte of 0 or above 127 (-EINVAL), more messages
 *   than the box holds (-EAGAIN), segments that are not one (-EINVAL);
 * - a sender in another process: 200000 messages in random spans, in
 *   order, while the receiver polls.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fbox.h"
#include "harness.h"
#include "tests.h"

#define NBOXES 5
#define SLOTS 8

struct seg {
	void *mem;
	uint64_t bytes;
	struct coop_fbox_rx rx;
	struct coop_fbox_tx tx[NBOXES];
};

static void seg_make(struct seg *g, uint32_t max_claims)
{
	int i;

	g->bytes = coop_fbox_seg_bytes(NBOXES, SLOTS);
	g->mem = mmap(NULL, g->bytes, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(g->mem, MAP_FAILED);
	coop_fbox_format(g->mem, NBOXES, SLOTS, max_claims);
	coop_fbox_rx_attach(&g->rx, g->mem, g->bytes);
	for (i = 0; i < NBOXES; i++)
		ck_assert_int_eq(coop_fbox_tx_attach(&g->tx[i], g->mem,
						     g->bytes), 0);
}

static void seg_free(struct seg *g)
{
	munmap(g->mem, g->bytes);
}

/*
 * Message k of a sender: byte 0 its rank + 1 (never 0), byte 1 how many
 * follow it in its span, bytes 2-9 k, the rest a pattern of k.
 */
static void msg_fill(unsigned char *m, int rank, unsigned more, uint64_t k)
{
	int i;

	m[0] = (unsigned char)(rank + 1);
	m[1] = (unsigned char)more;
	memcpy(m + 2, &k, sizeof(k));
	for (i = 10; i < COOPMPI_MSG_SIZE; i++)
		m[i] = (unsigned char)(k * 31 + (uint64_t)i);
}

/* Is m message k of rank (any span position)? */
static int msg_is(const unsigned char *m, int rank, uint64_t k)
{
	unsigned char want[COOPMPI_MSG_SIZE];

	msg_fill(want, rank, m[1], k);
	return m[0] == rank + 1 && !memcmp(m + 2, want + 2,
					   COOPMPI_MSG_SIZE - 2);
}

/* A span of n messages of rank from number k on. */
static void span_fill(unsigned char *msgs, int rank, unsigned n, uint64_t k)
{
	unsigned i;

	for (i = 0; i < n; i++)
		msg_fill(msgs + i * COOPMPI_MSG_SIZE, rank, i ? 0 : n - 1,
			 k + i);
}

/* Take one span: its messages' count, 0 when none is there. */
static unsigned take_span(struct coop_fbox_rx *rx, unsigned char *msgs)
{
	unsigned more;

	if (!coop_fbox_poll(rx, msgs))
		return 0;
	more = msgs[1];
	ck_assert_uint_le(more, 3);
	if (more)
		coop_fbox_poll_more(rx, msgs + COOPMPI_MSG_SIZE, more);
	return more + 1;
}

START_TEST(test_fbox_one)
{
	unsigned char m[COOPMPI_MSG_SIZE], got[COOPMPI_MSG_SIZE];
	struct seg g;

	seg_make(&g, 2);
	ck_assert_int_eq(coop_fbox_ready(&g.rx), 0);
	ck_assert_int_eq(coop_fbox_poll(&g.rx, got), 0);
	msg_fill(m, 1, 0, 7);
	ck_assert_int_eq(coop_fbox_send(&g.tx[1], 1, m, 1), 0);
	ck_assert_int_eq(coop_fbox_ready(&g.rx), 1);
	ck_assert_int_eq(coop_fbox_poll(&g.rx, got), 1);
	ck_assert_mem_eq(got, m, sizeof(m));
	ck_assert_int_eq(coop_fbox_ready(&g.rx), 0);
	ck_assert_int_eq(coop_fbox_poll(&g.rx, got), 0);
	seg_free(&g);
}
END_TEST

START_TEST(test_fbox_spans)
{
	unsigned char out[4 * COOPMPI_MSG_SIZE], in[4 * COOPMPI_MSG_SIZE];
	uint64_t sent = 0, taken = 0;
	unsigned seed = 20261126, queued = 0, fulls = 0, i;
	struct seg g;

	seg_make(&g, 2);
	for (i = 0; i < 20000; i++) {
		unsigned n = 1 + (unsigned)rand_r(&seed) % 4;

		if (rand_r(&seed) % 2) {
			int rc;

			span_fill(out, 2, n, sent);
			rc = coop_fbox_send(&g.tx[2], 2, out, n);
			if (rc == -EAGAIN) {
				ck_assert_uint_gt(queued + n, SLOTS);
				fulls++;
				continue;
			}
			ck_assert_int_eq(rc, 0);
			ck_assert_uint_le(queued + n, SLOTS);
			sent += n;
			queued += n;
		} else {
			unsigned got = take_span(&g.rx, in), k;

			ck_assert_uint_eq(got == 0, queued == 0);
			for (k = 0; k < got; k++)
				ck_assert_msg(msg_is(in + k * COOPMPI_MSG_SIZE,
						     2, taken + k),
					      "message %llu",
					      (unsigned long long)(taken + k));
			taken += got;
			queued -= got;
		}
	}
	ck_assert_uint_gt(fulls, 100);
	ck_assert_uint_gt(taken, 10000);
	seg_free(&g);
}
END_TEST

START_TEST(test_fbox_claims)
{
	unsigned char m[COOPMPI_MSG_SIZE], got[COOPMPI_MSG_SIZE];
	int seen[NBOXES] = { 0 }, i, r;
	struct seg g;

	seg_make(&g, 2);
	for (i = 0; i < 3; i++)	/* ranks 3 and 1 first, 4 too late */
		for (r = 3; r >= 1; r -= 2) {
			msg_fill(m, r, 0, (uint64_t)i);
			ck_assert_int_eq(coop_fbox_send(&g.tx[r], r, m, 1), 0);
		}
	msg_fill(m, 4, 0, 0);
	ck_assert_int_eq(coop_fbox_send(&g.tx[4], 4, m, 1), -ENOENT);
	ck_assert_int_eq(coop_fbox_send(&g.tx[4], 4, m, 1), -ENOENT);
	while (coop_fbox_poll(&g.rx, got)) {
		r = got[0] - 1;
		ck_assert(r == 1 || r == 3);
		ck_assert(msg_is(got, r, (uint64_t)seen[r]));
		seen[r]++;
	}
	ck_assert_int_eq(seen[1], 3);
	ck_assert_int_eq(seen[3], 3);
	seg_free(&g);
}
END_TEST

START_TEST(test_fbox_refusals)
{
	unsigned char m[(SLOTS + 1) * COOPMPI_MSG_SIZE];
	struct coop_fbox_tx tx;
	struct coop_fbox_seg *seg;
	struct seg g;

	seg_make(&g, 2);
	span_fill(m, 1, SLOTS + 1, 0);
	ck_assert_int_eq(coop_fbox_send(&g.tx[1], 1, m, SLOTS + 1), -EAGAIN);
	m[0] = 0;
	ck_assert_int_eq(coop_fbox_send(&g.tx[1], 1, m, 1), -EINVAL);
	m[0] = 0x81;	/* the top bit is the box's */
	ck_assert_int_eq(coop_fbox_send(&g.tx[1], 1, m, 1), -EINVAL);
	/* the claim is news until a poll takes it on; nothing was sent */
	ck_assert_int_eq(coop_fbox_ready(&g.rx), 1);
	ck_assert_int_eq(coop_fbox_poll(&g.rx, m), 0);
	ck_assert_int_eq(coop_fbox_ready(&g.rx), 0);
	ck_assert_int_eq(coop_fbox_tx_attach(&tx, g.mem, g.bytes - 64),
			 -EINVAL);
	seg = g.mem;
	seg->max_claims = COOP_FBOX_ACTIVE_MAX + 1;
	ck_assert_int_eq(coop_fbox_tx_attach(&tx, g.mem, g.bytes), -EINVAL);
	seg->max_claims = 2;
	seg->slots = 6;
	ck_assert_int_eq(coop_fbox_tx_attach(&tx, g.mem, g.bytes), -EINVAL);
	seg->slots = SLOTS;
	seg->magic ^= 1;
	ck_assert_int_eq(coop_fbox_tx_attach(&tx, g.mem, g.bytes), -EINVAL);
	seg_free(&g);
}
END_TEST

/* The forked sender: n messages in random spans, retrying while full. */
static void send_all(struct coop_fbox_tx *tx, uint64_t n)
{
	unsigned char out[4 * COOPMPI_MSG_SIZE];
	unsigned seed = 77;
	uint64_t k = 0;

	while (k < n) {
		unsigned len = 1 + (unsigned)rand_r(&seed) % 4;
		int rc;

		if (len > n - k)
			len = (unsigned)(n - k);
		span_fill(out, 3, len, k);
		while ((rc = coop_fbox_send(tx, 3, out, len)) == -EAGAIN)
			;
		if (rc)
			_exit(2);
		k += len;
	}
	_exit(0);
}

START_TEST(test_fbox_processes)
{
	enum { N = 200000 };
	unsigned char in[4 * COOPMPI_MSG_SIZE];
	uint64_t taken = 0;
	struct seg g;
	int status;
	pid_t pid;

	seg_make(&g, 2);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		send_all(&g.tx[3], N);
	while (taken < N) {
		unsigned got = take_span(&g.rx, in), k;

		for (k = 0; k < got; k++)
			if (!msg_is(in + k * COOPMPI_MSG_SIZE, 3, taken + k)) {
				kill(pid, SIGKILL);
				ck_abort_msg("message %llu",
					     (unsigned long long)(taken + k));
			}
		taken += got;
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_eq(coop_fbox_ready(&g.rx), 0);
	seg_free(&g);
}
END_TEST

TCase *tc_fbox(void)
{
	TCase *tc = tcase_create("fbox");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_fbox_one);
	tcase_add_test(tc, test_fbox_spans);
	tcase_add_test(tc, test_fbox_claims);
	tcase_add_test(tc, test_fbox_refusals);
	tcase_add_test(tc, test_fbox_processes);
	return tc;
}
