// SPDX-License-Identifier: GPL-2.0
/*
 * test_mbox.c - mailboxes: ring layout, cross-process FIFO order through
 * the ioctl path and through the mapped ring (uapi protocol implemented in
 * helpers.c), many producers, backpressure, poll()/doorbell wake-ups,
 * MBOX_WAIT, closed peers.
 */
#include "helpers.h"

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

enum { MODE_IOCTL = 0, MODE_MMAP = 1 };
static const char *const mode_name[] = { "ioctl", "mmap" };

/* ------------------------------------------------------------------ */

START_TEST(test_ring_layout)
{
	uint64_t key = cm_unique_key();
	struct coopmpi_join jr;
	struct cm_ring own;
	struct cm_msg m[8], got[8];
	uint32_t slots = cm_info_cache.ring_slots, done;
	int r = cm_open_join(key, COOPMPI_JOIN_CREATE, &jr);
	int s = cm_open_join(key, COOPMPI_JOIN_EXISTING, NULL);

	REQUIRE_OK(cm_ring_map(r, jr.ep_id, &own));
	REQUIRE(own.hdr->magic == COOPMPI_RING_MAGIC, "magic %#x", own.hdr->magic);
	REQUIRE(own.hdr->version == COOPMPI_ABI_VERSION, "version %u",
		own.hdr->version);
	REQUIRE(own.hdr->slots == slots, "slots %u, INFO says %u",
		own.hdr->slots, slots);
	REQUIRE(own.hdr->msg_size == COOPMPI_MSG_SIZE, "msg_size %u",
		own.hdr->msg_size);
	REQUIRE(own.hdr->ep_id == jr.ep_id, "ep_id %u want %u", own.hdr->ep_id,
		jr.ep_id);
	REQUIRE(own.hdr->generation == jr.generation, "generation %u want %u",
		own.hdr->generation, jr.generation);
	REQUIRE(own.hdr->closed == 0, "closed %u", own.hdr->closed);
	REQUIRE(own.hdr->owner_pid == (uint32_t)getpid(), "owner_pid %u want %d",
		own.hdr->owner_pid, (int)getpid());
	REQUIRE(own.hdr->head == 0 && own.hdr->tail == 0 &&
		own.hdr->full_events == 0 && own.hdr->wake_requested == 0,
		"fresh ring: head %llu tail %llu full_events %llu wake %u",
		(unsigned long long)own.hdr->head,
		(unsigned long long)own.hdr->tail,
		(unsigned long long)own.hdr->full_events,
		own.hdr->wake_requested);
	for (uint32_t i = 0; i < slots; i++)
		REQUIRE(own.seq[i] == i, "fresh ring: seq[%u] = %llu", i,
			(unsigned long long)own.seq[i]);

	/* kernel producer path follows the uapi protocol on this memory */
	for (int i = 0; i < 8; i++)
		cm_msg_make(&m[i], 3, (uint64_t)i);
	REQUIRE_OK(cm_send(s, jr.ep_id, m, 5, &done));
	REQUIRE(done == 5, "done %u", done);
	REQUIRE(own.hdr->tail == 5, "tail %llu after 5 sends",
		(unsigned long long)own.hdr->tail);
	for (uint32_t i = 0; i < 5; i++) {
		REQUIRE(own.seq[i] == i + 1, "seq[%u] = %llu after send", i,
			(unsigned long long)own.seq[i]);
		REQUIRE(memcmp(own.msgs + i * COOPMPI_MSG_SIZE, &m[i],
			       COOPMPI_MSG_SIZE) == 0, "slot %u content", i);
	}
	REQUIRE(own.seq[5] == 5, "seq[5] = %llu", (unsigned long long)own.seq[5]);

	/* kernel consumer path */
	REQUIRE_OK(cm_recv(r, got, 3, 0, &done));
	REQUIRE(done == 3, "recv done %u", done);
	REQUIRE(memcmp(got, m, 3 * sizeof(m[0])) == 0, "recv content");
	REQUIRE(own.hdr->head == 3, "head %llu after 3 recvs",
		(unsigned long long)own.hdr->head);
	for (uint32_t i = 0; i < 3; i++)	/* only producers write seq */
		REQUIRE(own.seq[i] == i + 1, "seq[%u] = %llu after recv", i,
			(unsigned long long)own.seq[i]);

	/* user consumer continues where the kernel stopped */
	REQUIRE_OK(cm_ring_consume(&own, &got[0]));
	REQUIRE(memcmp(&got[0], &m[3], sizeof(m[3])) == 0, "mmap consume");
	/* user producer; kernel consumer sees it in order */
	REQUIRE(cm_ring_produce(&own, &m[5]) >= 0, "produce");
	REQUIRE_OK(cm_recv(r, got, 8, 0, &done));
	REQUIRE(done == 2 && memcmp(&got[0], &m[4], 64) == 0 &&
		memcmp(&got[1], &m[5], 64) == 0, "mixed order: done %u", done);
	REQUIRE_ERR(cm_recv(r, got, 8, 0, &done), EAGAIN);
	REQUIRE(done == 0, "done %u on empty", done);
	cm_ring_unmap(&own);
	close(r);
	close(s);
}
END_TEST

/* ------------------------------------------------------------------ */

static void producer_main(uint64_t key, uint32_t consumer_ep, uint32_t id,
			  uint64_t count, int mode, uint64_t seed)
{
	struct coopmpi_join j;
	struct cm_ring ring;
	struct cm_msg batch[32];
	struct cm_rng rng;
	uint64_t seq = 0;
	int fd = cm_open_join(key, COOPMPI_JOIN_EXISTING, &j);

	cm_rng_seed(&rng, seed + id);
	if (mode == MODE_MMAP)
		REQUIRE_OK(cm_ring_map(fd, consumer_ep, &ring));
	while (seq < count) {
		if (mode == MODE_MMAP) {
			struct cm_msg m;
			int r;

			cm_msg_make(&m, id, seq);
			r = cm_ring_send(fd, consumer_ep, &ring, &m);
			REQUIRE(r == 0 || r == -EAGAIN, "ring_send %d", r);
			if (r == 0)
				seq++;
			else
				sched_yield();
		} else {
			uint32_t n = 1 + (uint32_t)cm_rng_below(&rng, 32), done;
			int r;

			if (n > count - seq)
				n = (uint32_t)(count - seq);
			for (uint32_t i = 0; i < n; i++)
				cm_msg_make(&batch[i], id, seq + i);
			r = cm_send(fd, consumer_ep, batch, n, &done);
			if (r == 0) {
				REQUIRE(done >= 1 && done <= n,
					"SEND of %u returned 0 with done %u", n,
					done);
				seq += done;
			} else {
				REQUIRE(r == -EAGAIN, "SEND: %s", cm_errname(-r));
				sched_yield();
			}
		}
	}
	if (mode == MODE_MMAP)
		cm_ring_unmap(&ring);
	close(fd);
	_exit(0);
}

static void check_children(pid_t *pids, int n, bool *reaped)
{
	for (int i = 0; i < n; i++) {
		int st;

		if (reaped[i])
			continue;
		if (waitpid(pids[i], &st, WNOHANG) == pids[i]) {
			reaped[i] = true;
			REQUIRE(WIFEXITED(st) && WEXITSTATUS(st) == 0,
				"producer %d failed (status %#x)", i, st);
		}
	}
}

/* sleep in poll() following the uapi "sleeping consumer" rule */
static void consumer_sleep(int fd, struct cm_ring *own)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (own) {
		__atomic_store_n(&own->hdr->wake_requested, 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (cm_ring_empty(own))
			poll(&p, 1, 200);
		__atomic_store_n(&own->hdr->wake_requested, 0, __ATOMIC_RELAXED);
	} else {
		poll(&p, 1, 200);
	}
}

static void run_producers_consumer(int nprod, uint64_t per, int cons_mode,
				   int prod_mode /* -1: alternate */)
{
	uint64_t key = cm_unique_key();
	struct coopmpi_join jc;
	struct cm_ring own;
	struct cm_msg buf[64];
	pid_t pids[8];
	bool reaped[8] = { false };
	uint64_t expect[8] = { 0 }, total = (uint64_t)nprod * per, got = 0;
	uint64_t last_progress = cm_now_ms();
	int fd = cm_open_join(key, COOPMPI_JOIN_CREATE, &jc);
	uint32_t done;

	REQUIRE(nprod <= 8, "nprod");
	/* mapped in both modes: consumed through in MODE_MMAP, and shows
	 * head/tail when a run stalls */
	REQUIRE_OK(cm_ring_map(fd, jc.ep_id, &own));
	for (int i = 0; i < nprod; i++) {
		int pm = prod_mode >= 0 ? prod_mode : (i & 1);

		pids[i] = cm_fork();
		if (pids[i] == 0)
			producer_main(key, jc.ep_id, (uint32_t)i, per, pm, 1234);
	}
	while (got < total) {
		uint32_t n = 0;

		if (cons_mode == MODE_MMAP) {
			while (n < 64 && cm_ring_consume(&own, &buf[n]) == 0)
				n++;
		} else {
			int r = cm_recv(fd, buf, 64, 0, &done);

			REQUIRE(r == 0 || r == -EAGAIN, "RECV: %s", cm_errname(-r));
			if (r == 0) {
				REQUIRE(done >= 1 && done <= 64, "RECV done %u", done);
				n = done;
			}
		}
		if (n == 0) {
			check_children(pids, nprod, reaped);
			consumer_sleep(fd, cons_mode == MODE_MMAP ? &own : NULL);
			REQUIRE(cm_now_ms() - last_progress < 20000,
				"no message for 20 s: got %llu of %llu (ring head %llu tail %llu)",
				(unsigned long long)got, (unsigned long long)total,
				(unsigned long long)own.hdr->head,
				(unsigned long long)own.hdr->tail);
			continue;
		}
		last_progress = cm_now_ms();
		for (uint32_t i = 0; i < n; i++) {
			struct cm_msg *m = &buf[i];

			REQUIRE(cm_msg_valid(m), "corrupt message #%llu",
				(unsigned long long)(got + i));
			REQUIRE(m->producer < (uint32_t)nprod, "producer id %u",
				m->producer);
			REQUIRE(m->seq == expect[m->producer],
				"producer %u: got seq %llu, expected %llu (FIFO broken)",
				m->producer, (unsigned long long)m->seq,
				(unsigned long long)expect[m->producer]);
			expect[m->producer]++;
		}
		got += n;
	}
	for (int i = 0; i < nprod; i++) {
		if (!reaped[i])
			cm_wait_ok(pids[i], "producer");
		REQUIRE(expect[i] == per, "producer %d: %llu of %llu messages", i,
			(unsigned long long)expect[i], (unsigned long long)per);
	}
	/* nothing extra, nothing duplicated */
	REQUIRE_ERR(cm_recv(fd, buf, 64, 0, &done), EAGAIN);
	REQUIRE(cm_ring_empty(&own), "ring not empty at the end");
	REQUIRE(own.hdr->head == total && own.hdr->tail == total,
		"after %llu messages: head %llu tail %llu",
		(unsigned long long)total, (unsigned long long)own.hdr->head,
		(unsigned long long)own.hdr->tail);
	cm_ring_unmap(&own);
	close(fd);
}

/* _i: bit 0 producer mode, bit 1 consumer mode */
START_TEST(test_fifo_cross_process)
{
	int pm = _i & 1, cmode = (_i >> 1) & 1;

	printf("fifo: producer via %s, consumer via %s, 10000 messages\n",
	       mode_name[pm], mode_name[cmode]);
	run_producers_consumer(1, 10000, cmode, pm);
}
END_TEST

START_TEST(test_many_producers)
{
	printf("4 producers x 5000 (ioctl and mmap mixed), consumer via %s\n",
	       mode_name[_i]);
	run_producers_consumer(4, 5000, _i, -1);
}
END_TEST

/* ------------------------------------------------------------------ */

START_TEST(test_backpressure)
{
	uint64_t key = cm_unique_key();
	struct coopmpi_join jr;
	struct cm_ring peer;
	uint32_t slots = cm_info_cache.ring_slots, done;
	struct cm_msg *m = calloc(slots + 8, sizeof(*m)), *got;
	uint64_t fe0, sent = 0, next = 1;
	int r = cm_open_join(key, COOPMPI_JOIN_CREATE, &jr);
	int s = cm_open_join(key, COOPMPI_JOIN_EXISTING, NULL);
	int ret;

	got = calloc(COOPMPI_MBOX_MAX_BATCH, sizeof(*got));
	REQUIRE(m && got, "calloc");
	for (uint32_t i = 0; i < slots + 8; i++)
		cm_msg_make(&m[i], 0, i);
	REQUIRE_OK(cm_ring_map(s, jr.ep_id, &peer));	/* the peer's ring */
	fe0 = peer.hdr->full_events;

	REQUIRE_OK(cm_send(s, jr.ep_id, m, 0, &done));	/* count 0 */
	REQUIRE(done == 0, "count 0: done %u", done);
	while (sent < slots) {
		uint32_t n = slots - (uint32_t)sent;

		if (n > COOPMPI_MBOX_MAX_BATCH)
			n = COOPMPI_MBOX_MAX_BATCH;
		REQUIRE_OK(cm_send(s, jr.ep_id, &m[sent], n, &done));
		REQUIRE(done == n, "ring with room for %u took %u",
			slots - (uint32_t)sent, done);
		sent += done;
	}
	REQUIRE(peer.hdr->full_events == fe0,
		"full_events moved while the ring had room");
	/* full: refused, counted */
	REQUIRE_ERR(cm_send(s, jr.ep_id, &m[slots], 1, &done), EAGAIN);
	REQUIRE(done == 0, "done %u on a full ring", done);
	REQUIRE(peer.hdr->full_events == fe0 + 1,
		"full_events %llu, want %llu after one refused SEND",
		(unsigned long long)peer.hdr->full_events,
		(unsigned long long)fe0 + 1);
	REQUIRE_ERR(cm_send(s, jr.ep_id, &m[slots], 4, &done), EAGAIN);
	REQUIRE(peer.hdr->full_events >= fe0 + 2, "full_events %llu",
		(unsigned long long)peer.hdr->full_events);
	/* the user-space producer sees the same full ring */
	fe0 = peer.hdr->full_events;
	REQUIRE(cm_ring_produce(&peer, &m[slots]) == -EAGAIN,
		"user producer enqueued into a full ring");
	REQUIRE(peer.hdr->full_events == fe0 + 1, "user full_events");

	/* dequeue one: exactly one more fits */
	REQUIRE_OK(cm_recv(r, got, 1, 0, &done));
	REQUIRE(done == 1 && got[0].seq == 0, "first message seq %llu",
		(unsigned long long)got[0].seq);
	REQUIRE_OK(cm_send(s, jr.ep_id, &m[slots], 3, &done));
	REQUIRE(done == 1, "SEND of 3 with one free slot: done %u, want 1", done);
	ret = cm_send(s, jr.ep_id, &m[slots + 1], 1, &done);
	REQUIRE(ret == -EAGAIN, "SEND after refill: %s", cm_errname(-ret));

	/* drain: seq 1..slots, in order, exactly once */
	for (;;) {
		ret = cm_recv(r, got, COOPMPI_MBOX_MAX_BATCH, 0, &done);
		if (ret == -EAGAIN)
			break;
		REQUIRE(ret == 0, "RECV: %s", cm_errname(-ret));
		for (uint32_t i = 0; i < done; i++) {
			REQUIRE(cm_msg_valid(&got[i]), "corrupt message");
			REQUIRE(got[i].seq == next, "got seq %llu want %llu",
				(unsigned long long)got[i].seq,
				(unsigned long long)next);
			next++;
		}
	}
	REQUIRE(next == (uint64_t)slots + 1, "drained up to seq %llu, want %u",
		(unsigned long long)next - 1, slots);
	cm_ring_unmap(&peer);
	free(m);
	free(got);
	close(r);
	close(s);
}
END_TEST

START_TEST(test_recv_empty_and_batch_limit)
{
	uint64_t key = cm_unique_key();
	struct coopmpi_join jr;
	struct cm_msg *m = calloc(COOPMPI_MBOX_MAX_BATCH + 1, sizeof(*m));
	uint32_t done = 77;
	int r = cm_open_join(key, COOPMPI_JOIN_CREATE, &jr);
	int s = cm_open_join(key, COOPMPI_JOIN_EXISTING, NULL);
	int ret;

	REQUIRE(m, "calloc");
	REQUIRE_ERR(cm_recv(r, m, 1, 0, &done), EAGAIN);
	REQUIRE(done == 0 || done == 0xdeadbeef, "done %u after EAGAIN", done);
	REQUIRE_ERR(cm_recv(r, m, COOPMPI_MBOX_MAX_BATCH, 0, &done), EAGAIN);
	/* more than MAX_BATCH: refused or clipped, never more */
	for (uint32_t i = 0; i <= COOPMPI_MBOX_MAX_BATCH; i++)
		cm_msg_make(&m[i], 0, i);
	ret = cm_send(s, jr.ep_id, m, COOPMPI_MBOX_MAX_BATCH + 1, &done);
	REQUIRE(ret == -EINVAL || (ret == 0 && done <= COOPMPI_MBOX_MAX_BATCH),
		"SEND of MAX_BATCH+1: %s done %u", cm_errname(-ret), done);
	free(m);
	close(r);
	close(s);
}
END_TEST

/* ------------------------------------------------------------------ */

/* _i: MODE_IOCTL (kernel wakes) or MODE_MMAP (user producer + DOORBELL) */
START_TEST(test_poll_wakeup)
{
	uint64_t key = cm_unique_key();
	struct coopmpi_join jr;
	struct cm_ring own;
	struct pollfd p;
	struct cm_msg got[2];
	uint64_t t0, el;
	uint32_t done;
	int sv[2], r, pr;
	pid_t pid;

	r = cm_open_join(key, COOPMPI_JOIN_CREATE, &jr);
	REQUIRE_OK(cm_ring_map(r, jr.ep_id, &own));
	p.fd = r;
	p.events = POLLIN;
	p.revents = 0;
	REQUIRE(poll(&p, 1, 0) == 0, "poll on an empty ring: revents %#x",
		p.revents);
	cm_socketpair(sv);
	pid = cm_fork();
	if (pid == 0) {
		struct cm_ring peer;
		struct cm_msg m;
		int s;

		close(sv[0]);
		s = cm_open_join(key, COOPMPI_JOIN_EXISTING, NULL);
		if (_i == MODE_MMAP)
			REQUIRE_OK(cm_ring_map(s, jr.ep_id, &peer));
		cm_put_u64(sv[1], 1);
		(void)cm_get_u64(sv[1]);
		cm_sleep_ms(500);
		cm_msg_make(&m, 5, 42);
		if (_i == MODE_MMAP) {
			int w = cm_ring_produce(&peer, &m);

			REQUIRE(w == 1, "consumer's wake_requested not seen (produce %d)",
				w);
			REQUIRE_OK(cm_doorbell(s, jr.ep_id));
		} else {
			REQUIRE_OK(cm_send(s, jr.ep_id, &m, 1, &done));
		}
		(void)cm_get_u64(sv[1]);
		_exit(0);
	}
	close(sv[1]);
	REQUIRE(cm_get_u64_from(sv[0], pid, "child") == 1, "child ready");

	__atomic_store_n(&own.hdr->wake_requested, 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	REQUIRE(cm_ring_empty(&own), "ring not empty before the wait");
	cm_put_u64(sv[0], 1);
	t0 = cm_now_ms();
	p.revents = 0;
	pr = poll(&p, 1, 10000);
	el = cm_now_ms() - t0;
	__atomic_store_n(&own.hdr->wake_requested, 0, __ATOMIC_RELAXED);
	REQUIRE(pr == 1 && (p.revents & POLLIN),
		"poll (%s path) returned %d revents %#x after %llu ms", mode_name[_i],
		pr, p.revents, (unsigned long long)el);
	REQUIRE(el >= 250, "poll returned after %llu ms, before the send",
		(unsigned long long)el);
	REQUIRE(el < 9000, "poll woke only after %llu ms", (unsigned long long)el);
	/* ready stays ready until consumed */
	REQUIRE(poll(&p, 1, 0) == 1 && (p.revents & POLLIN), "POLLIN not level");
	REQUIRE_OK(cm_recv(r, got, 2, 0, &done));
	REQUIRE(done == 1 && got[0].seq == 42 && got[0].producer == 5,
		"received %u, seq %llu", done, (unsigned long long)got[0].seq);
	p.revents = 0;
	REQUIRE(poll(&p, 1, 0) == 0, "POLLIN after draining: revents %#x",
		p.revents);
	cm_put_u64(sv[0], 2);
	cm_wait_ok(pid, "producer");
	cm_ring_unmap(&own);
	close(r);
}
END_TEST

static void on_alarm(int sig)
{
	(void)sig;
}

START_TEST(test_mbox_wait)
{
	uint64_t key = cm_unique_key();
	struct coopmpi_join jr;
	struct cm_msg got[4];
	struct sigaction sa;
	struct itimerval it;
	uint64_t t0, el;
	uint32_t done;
	int sv[2], r, ret;
	pid_t pid;

	r = cm_open_join(key, COOPMPI_JOIN_CREATE, &jr);
	cm_socketpair(sv);
	pid = cm_fork();
	if (pid == 0) {
		struct cm_msg m;
		int s;

		close(sv[0]);
		s = cm_open_join(key, COOPMPI_JOIN_EXISTING, NULL);
		cm_put_u64(sv[1], 1);
		(void)cm_get_u64(sv[1]);
		cm_sleep_ms(500);
		cm_msg_make(&m, 2, 9);
		REQUIRE_OK(cm_send(s, jr.ep_id, &m, 1, &done));
		(void)cm_get_u64(sv[1]);
		_exit(0);
	}
	close(sv[1]);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;	/* no SA_RESTART */
	sigaction(SIGALRM, &sa, NULL);
	memset(&it, 0, sizeof(it));
	REQUIRE(cm_get_u64_from(sv[0], pid, "child") == 1, "child ready");
	cm_put_u64(sv[0], 1);
	it.it_value.tv_sec = 15;	/* watchdog: the send comes at 0.5 s */
	setitimer(ITIMER_REAL, &it, NULL);
	t0 = cm_now_ms();
	ret = cm_recv(r, got, 4, COOPMPI_MBOX_WAIT, &done);
	el = cm_now_ms() - t0;
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	REQUIRE(ret == 0 && done == 1,
		"MBOX_WAIT: %s done %u after %llu ms (the send came at ~500 ms)",
		cm_errname(-ret), done, (unsigned long long)el);
	REQUIRE(got[0].seq == 9 && got[0].producer == 2, "wrong message");
	REQUIRE(el >= 250, "MBOX_WAIT returned after %llu ms, before the send",
		(unsigned long long)el);
	cm_put_u64(sv[0], 2);
	cm_wait_ok(pid, "sender");

	/* a signal interrupts the wait: -EINTR */
	memset(&it, 0, sizeof(it));
	it.it_value.tv_usec = 300000;
	setitimer(ITIMER_REAL, &it, NULL);
	t0 = cm_now_ms();
	ret = cm_recv(r, got, 4, COOPMPI_MBOX_WAIT, &done);
	el = cm_now_ms() - t0;
	REQUIRE(ret == -EINTR, "MBOX_WAIT interrupted by a signal: %s",
		cm_errname(-ret));
	REQUIRE(el >= 200 && el < 10000, "interrupted after %llu ms",
		(unsigned long long)el);
	/* and the endpoint is fine afterwards */
	REQUIRE_ERR(cm_recv(r, got, 4, 0, &done), EAGAIN);
	close(r);
}
END_TEST

/* _i == 0: the peer closes its fd; _i == 1: the peer is SIGKILLed */
START_TEST(test_peer_closed)
{
	uint64_t key = cm_unique_key();
	struct coopmpi_join jp;
	struct coopmpi_ep_query q;
	struct cm_ring ring;
	struct cm_msg m;
	uint32_t ep, gen, done;
	uint64_t deadline;
	int sv[2], fd, ret;
	pid_t pid;
	void *p;

	fd = cm_open_join(key, COOPMPI_JOIN_CREATE, &jp);
	cm_socketpair(sv);
	pid = cm_fork();
	if (pid == 0) {
		struct coopmpi_join jc;
		int c;

		close(sv[0]);
		c = cm_open_join(key, COOPMPI_JOIN_EXISTING, &jc);
		cm_put_u64(sv[1], jc.ep_id);
		cm_put_u64(sv[1], jc.generation);
		(void)cm_get_u64(sv[1]);
		close(c);
		cm_put_u64(sv[1], 1);
		for (;;)
			pause();
	}
	close(sv[1]);
	ep = (uint32_t)cm_get_u64_from(sv[0], pid, "child");
	gen = (uint32_t)cm_get_u64_from(sv[0], pid, "child");
	REQUIRE_OK(cm_ring_map(fd, ep, &ring));
	REQUIRE(ring.hdr->magic == COOPMPI_RING_MAGIC && ring.hdr->ep_id == ep &&
		ring.hdr->generation == gen && ring.hdr->closed == 0 &&
		ring.hdr->owner_pid == (uint32_t)pid,
		"peer ring hdr: magic %#x ep %u gen %u closed %u owner %u (want pid %d)",
		ring.hdr->magic, ring.hdr->ep_id, ring.hdr->generation,
		ring.hdr->closed, ring.hdr->owner_pid, (int)pid);
	cm_msg_make(&m, 0, 0);
	REQUIRE_OK(cm_send(fd, ep, &m, 1, &done));
	REQUIRE(done == 1, "done %u", done);

	if (_i == 0) {
		cm_put_u64(sv[0], 1);
		REQUIRE(cm_get_u64_from(sv[0], pid, "child") == 1, "child closed");
	} else {
		cm_kill_wait(pid);
		pid = 0;
	}
	deadline = cm_now_ms() + 2000;
	while (__atomic_load_n(&ring.hdr->closed, __ATOMIC_ACQUIRE) != 1 &&
	       cm_now_ms() < deadline)
		cm_sleep_ms(10);
	REQUIRE(ring.hdr->closed == 1, "mapped ring of a closed peer: closed=%u",
		ring.hdr->closed);
	REQUIRE(ring.hdr->owner_pid == 0, "closed ring owner_pid %u",
		ring.hdr->owner_pid);
	ret = cm_send(fd, ep, &m, 1, &done);
	REQUIRE(ret == -ENXIO, "SEND to a closed peer: %s, want ENXIO",
		cm_errname(-ret));
	REQUIRE_OK(cm_ep_query(fd, ep, &q));
	REQUIRE(q.state == COOPMPI_EP_FREE, "closed peer state %u", q.state);
	p = mmap(NULL, cm_info_cache.ring_bytes, PROT_READ, MAP_SHARED, fd,
		 (off_t)COOPMPI_MMAP_RING(ep));
	REQUIRE(p == MAP_FAILED && errno == ENXIO,
		"new mmap of a closed peer's ring: %s, want ENXIO",
		p == MAP_FAILED ? cm_errname(errno) : "success");
	cm_ring_unmap(&ring);
	if (pid)
		cm_kill_wait(pid);
	close(sv[0]);
	close(fd);
}
END_TEST

void add_mbox_tests(Suite *s)
{
	TCase *tc = cm_tcase("mbox", 120);

	tcase_add_test(tc, test_ring_layout);
	tcase_add_loop_test(tc, test_fifo_cross_process, 0, 4);
	tcase_add_loop_test(tc, test_many_producers, 0, 2);
	tcase_add_test(tc, test_backpressure);
	tcase_add_test(tc, test_recv_empty_and_batch_limit);
	tcase_add_loop_test(tc, test_poll_wakeup, 0, 2);
	tcase_add_test(tc, test_mbox_wait);
	tcase_add_loop_test(tc, test_peer_closed, 0, 2);
	suite_add_tcase(s, tc);
}
