/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_model.c - [Marathe]'s execution models (lib/protocols/model.c)
 * against timings worked out by hand (costs: a call 1 us, a packet
 * 0.5 us, 1 ns per byte for a single copy and a copy in own memory,
 * 2 ns per byte into or out of the other's; 1 MB messages):
 *
 * - late receiver, blocking calls: every protocol's two end times;
 * - each protocol's own case: a late receiver that computes between
 *   two receives while the sender moves on (the staged ones), an idle
 *   sender and a receiver that computes after its irecv (RPUT: the
 *   sender copies meanwhile), the mirror (RGET: the receiver copies
 *   while the sender computes), and the best choice each time;
 * - the compute after the last call adds to a side's end;
 * - events that cannot happen are refused.
 */
#include <check.h>

#include "model.h"
#include "tests.h"

#define MB 1000000ULL
#define MS 1000000ULL

static const struct coop_model_costs costs = {
	.call_ns = 1000, .hop_ns = 500, .copy_ns_per_byte = 1.0,
	.local_ns_per_byte = 1.0, .remote_ns_per_byte = 2.0,
};

static const uint64_t one[] = { MB };
static const uint64_t two[] = { MB, MB };

#define EV(m, op, gap) { (m), COOP_MODEL_##op, (gap) }

static void ends(const struct coop_model_pair *p, enum coop_model_proto pr,
		 uint64_t *s, uint64_t *r)
{
	ck_assert_int_eq(coop_model_replay(&costs, p, pr, s, r), 0);
}

/* Blocking send at 0, blocking receive after 10 ms of compute. */
START_TEST(test_model_late_receiver)
{
	static const struct coop_model_event snd[] = {
		EV(0, POST, 0), EV(0, WAIT, 0) };
	static const struct coop_model_event rcv[] = {
		EV(0, POST, 10 * MS), EV(0, WAIT, 0) };
	struct coop_model_pair p = { one, 1, snd, rcv, 2, 2, 0, 0 };
	uint64_t s, r;

	/* R copies in its post (the RTS is there): 10 ms + 1 us + 1 ms;
	 * S's wait ends on the FIN, 0.5 us later; R's wait costs 1 us */
	ends(&p, COOP_MODEL_RGET, &s, &r);
	ck_assert_uint_eq(s, 11001500);
	ck_assert_uint_eq(r, 11002000);
	/* R's post sends the RTR (10.0015 ms at S); S copies 1 ms; the FIN
	 * reaches R, in its wait since 10.002 ms, at 11.002 ms */
	ends(&p, COOP_MODEL_RPUT, &s, &r);
	ck_assert_uint_eq(s, 11001500);
	ck_assert_uint_eq(r, 11002000);
	/* S: 1 us + 1 ms local copy, then its wait (1 us); R: 10.001 ms,
	 * 2 ms reading S's ring, 1 us wait */
	ends(&p, COOP_MODEL_PRECOPY, &s, &r);
	ck_assert_uint_eq(s, 1002000);
	ck_assert_uint_eq(r, 12002000);
	/* S writes R's ring (2 ms); R reads its own (1 ms) */
	ends(&p, COOP_MODEL_POSTCOPY, &s, &r);
	ck_assert_uint_eq(s, 2002000);
	ck_assert_uint_eq(r, 11002000);
	/* 20 ms of the sender's compute after its send: RGET ends later */
	p.tail_send = 20 * MS;
	ends(&p, COOP_MODEL_RGET, &s, &r);
	ck_assert_uint_eq(s, 31001500);
	ends(&p, COOP_MODEL_PRECOPY, &s, &r);
	ck_assert_uint_eq(s, 21002000);
}
END_TEST

/* S: send, 9 ms of compute, send; R: 10 ms of compute, two receives.
 * Blocking rendezvous holds S until R comes: both staged ones win. */
START_TEST(test_model_staged_wins)
{
	static const struct coop_model_event snd[] = {
		EV(0, POST, 0), EV(0, WAIT, 0),
		EV(1, POST, 9 * MS), EV(1, WAIT, 0) };
	static const struct coop_model_event rcv[] = {
		EV(0, POST, 10 * MS), EV(0, WAIT, 0),
		EV(1, POST, 0), EV(1, WAIT, 0) };
	struct coop_model_pair p = { two, 2, snd, rcv, 4, 4, 0, 0 };
	uint64_t s, r, end[COOP_MODEL_COUNT];
	int best;

	ends(&p, COOP_MODEL_RGET, &s, &r);
	ck_assert_uint_ge(r, 21 * MS);
	ends(&p, COOP_MODEL_PRECOPY, &s, &r);
	ck_assert_uint_eq(r, 14004000);
	ends(&p, COOP_MODEL_POSTCOPY, &s, &r);
	ck_assert_uint_eq(r, 14003500);
	best = coop_model_best(&costs, &p, end);
	ck_assert_int_eq(best, COOP_MODEL_POSTCOPY);
	ck_assert_uint_eq(end[COOP_MODEL_POSTCOPY], 14003500);
	ck_assert_uint_eq(end[COOP_MODEL_PRECOPY], 14004000);
}
END_TEST

/* S: a blocking send at 0, idle after; R: irecv at 10 ms, 5 ms of
 * compute, wait.  RPUT: S copies while R computes. */
START_TEST(test_model_rput_wins)
{
	static const struct coop_model_event snd[] = {
		EV(0, POST, 0), EV(0, WAIT, 0) };
	static const struct coop_model_event rcv[] = {
		EV(0, POST, 10 * MS), EV(0, WAIT, 5 * MS) };
	struct coop_model_pair p = { one, 1, snd, rcv, 2, 2, 0, 0 };
	uint64_t s, r, end[COOP_MODEL_COUNT];

	ends(&p, COOP_MODEL_RGET, &s, &r);
	ck_assert_uint_eq(r, 16002000);	/* R copied in its irecv */
	ends(&p, COOP_MODEL_RPUT, &s, &r);
	ck_assert_uint_eq(r, 15002000);	/* the FIN was there */
	ck_assert_uint_eq(s, 11001500);
	ck_assert_int_eq(coop_model_best(&costs, &p, end), COOP_MODEL_RPUT);
	ck_assert_uint_eq(end[COOP_MODEL_RPUT], 15002000);
}
END_TEST

/* The mirror: R's blocking receive at 0, idle; S: isend at 10 ms,
 * 5 ms of compute, wait.  RGET: R copies while S computes. */
START_TEST(test_model_rget_wins)
{
	static const struct coop_model_event snd[] = {
		EV(0, POST, 10 * MS), EV(0, WAIT, 5 * MS) };
	static const struct coop_model_event rcv[] = {
		EV(0, POST, 0), EV(0, WAIT, 0) };
	struct coop_model_pair p = { one, 1, snd, rcv, 2, 2, 0, 0 };
	uint64_t s, r, end[COOP_MODEL_COUNT];

	ends(&p, COOP_MODEL_RGET, &s, &r);
	ck_assert_uint_eq(s, 15002000);
	ck_assert_uint_eq(r, 11001500);
	ends(&p, COOP_MODEL_RPUT, &s, &r);
	ck_assert_uint_eq(s, 16002000);	/* S copies in its wait */
	ck_assert_int_eq(coop_model_best(&costs, &p, end), COOP_MODEL_RGET);
	ck_assert_uint_eq(end[COOP_MODEL_RGET], 15002000);
}
END_TEST

START_TEST(test_model_refused)
{
	static const struct coop_model_event wait_first[] = {
		EV(0, WAIT, 0), EV(0, POST, 0) };
	static const struct coop_model_event ok[] = {
		EV(0, POST, 0), EV(0, WAIT, 0) };
	static const struct coop_model_event bad_msg[] = { EV(3, POST, 0) };
	struct coop_model_pair p = { one, 1, wait_first, ok, 2, 2, 0, 0 };
	uint64_t s, r;
	int pr;

	for (pr = 0; pr < COOP_MODEL_COUNT; pr++) {
		p.send = wait_first;
		p.nsend = 2;
		ck_assert_int_eq(coop_model_replay(&costs, &p, pr, &s, &r),
				 -1);
		p.send = ok;	/* never received: the sender never ends
				 * (staged ones: the receiver's wait does) */
		p.nrecv = 0;
		ck_assert_int_eq(coop_model_replay(&costs, &p, pr, &s, &r),
				 pr >= COOP_MODEL_PRECOPY ? 0 : -1);
		p.nrecv = 2;
		p.send = bad_msg;
		p.nsend = 1;
		ck_assert_int_eq(coop_model_replay(&costs, &p, pr, &s, &r),
				 -1);
	}
	ck_assert_int_eq(coop_model_replay(&costs, &p, COOP_MODEL_COUNT, &s,
					   &r), -1);
}
END_TEST

TCase *tc_model(void)
{
	TCase *tc = tcase_create("model");

	tcase_add_test(tc, test_model_late_receiver);
	tcase_add_test(tc, test_model_staged_wins);
	tcase_add_test(tc, test_model_rput_wins);
	tcase_add_test(tc, test_model_rget_wins);
	tcase_add_test(tc, test_model_refused);
	return tc;
}
