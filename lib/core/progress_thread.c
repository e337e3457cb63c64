/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * progress_thread.c - the progress thread (COOP_PROGRESS, seed 002's
 * thread-based progress).  Without it a rendezvous moves only inside the
 * two ranks' library calls: an RGET receiver or an RPUT sender that
 * computes copies nothing meanwhile.  The thread runs the same progress
 * step as a blocked caller (so it copies our share of COOP-p2p, helps the
 * partner, answers RTS and CTS), with the state lock taken only between
 * copies.
 *
 *   thread        polls: the lowest latency, but it takes a core.
 *   thread-sleep  when there is nothing to do, sleeps on the mailbox
 *                 doorbell (the provider's wait_msg: poll() on the
 *                 endpoint's file with kmod, a futex with shm); producers
 *                 ring it through wake_requested, so it wakes when a
 *                 packet arrives (interrupt-driven progress).  Work that
 *                 ends without a packet to us (a partner's COOP chunks,
 *                 the DMA engine, our backlog) is polled with yields.
 *
 * Callers blocked in completion calls meanwhile wait on the context's
 * completion condition (lock.c) once their spin is over, instead of the
 * doorbell, which is the thread's.
 */
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "core.h"

/* thread mode: empty polls between yields of the CPU.  A yield nobody
 * takes costs ~0.3 us; one every 1024 polls held a CPU shared with the
 * application ~28 us at a time (4 KiB ping-pong: 15 us). */
#define POLL_YIELD_MASK 63u
/* thread-sleep: while a blocked caller polls, the thread naps this long
 * instead of asking for the doorbell: a doorbell costs the sender a
 * system call and the poller a context switch on its core, for a message
 * the poller takes anyway (8 B ping-pong: 14 us with the doorbell) */
#define POLLER_NAP_US 100

struct coop_async {
	pthread_t tid;
	int mode;		/* enum coop_progress_mode */
	int stop;		/* under ctx->lock */
	unsigned cpu;
	unsigned spins_seen;	/* ctx->spins at the last look */
	int asleep;		/* on the doorbell (under ctx->lock) */
};

/* Did a blocked caller poll since the last look? */
static int caller_polls(struct coop_context *ctx, struct coop_async *a)
{
	int polled = ctx->spins != a->spins_seen;

	a->spins_seen = ctx->spins;
	return polled;
}

/* Nothing to do in this step: let the lock go for a while. */
static void async_idle(struct coop_context *ctx, struct coop_async *a,
		       unsigned empty)
{
	unsigned us = ctx->cfg.sleep_us ? ctx->cfg.sleep_us : 1000;
	int dropped, yield;

	if (a->mode == COOP_PROGRESS_MODE_SLEEP && caller_polls(ctx, a)) {
		dropped = coop_lock_drop(ctx);
		usleep(POLLER_NAP_US);
		coop_lock_retake(ctx, dropped);
		return;
	}
	if (a->mode == COOP_PROGRESS_MODE_SLEEP && !coop_work_pending(ctx)) {
		us = coop_sleep_bound_us(ctx, us);
		if (!us)
			return;	/* a death to handle first */
		a->asleep = 1;
		dropped = coop_lock_drop(ctx);
		ctx->prov.ops->wait_msg(&ctx->prov, (long)us);
		coop_lock_retake(ctx, dropped);
		a->asleep = 0;
		return;
	}
	/* a polling caller takes the messages itself: if it shares our CPU,
	 * it should have it */
	yield = !(empty & POLL_YIELD_MASK) ||
		a->mode == COOP_PROGRESS_MODE_SLEEP || caller_polls(ctx, a);
	dropped = coop_lock_drop(ctx);
	if (yield)
		sched_yield();
	else
		coop_cpu_relax();
	coop_lock_retake(ctx, dropped);
}

static void bind_cpu(unsigned cpu)
{
	cpu_set_t set;

	if (cpu == COOP_CPU_NONE)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *async_main(void *arg)
{
	struct coop_context *ctx = arg;
	struct coop_async *a;
	unsigned empty = 0;

	coop_lock(ctx);
	a = ctx->async;
	bind_cpu(a->cpu);
	while (!a->stop) {
		int n;

		ctx->blocked++;	/* it has nothing else to do: may help */
		n = coop_progress_once(ctx);
		ctx->blocked--;
		if (n)
			empty = 0;
		else
			async_idle(ctx, a, ++empty);
	}
	coop_unlock(ctx);
	return NULL;
}

static void async_stop(struct coop_context *ctx)
{
	struct coop_async *a = ctx->async;

	if (!a)
		return;
	coop_lock(ctx);
	a->stop = 1;
	coop_unlock(ctx);
	/* asleep on the doorbell: it wakes within COOP_SLEEP_US */
	pthread_join(a->tid, NULL);
	coop_lock(ctx);
	ctx->async = NULL;
	coop_unlock(ctx);
	free(a);
}

int coop_async_set(struct coop_context *ctx, int mode, unsigned cpu)
{
	struct coop_async *a;

	async_stop(ctx);
	if (mode == COOP_PROGRESS_MODE_MANUAL)
		return COOP_SUCCESS;
	a = calloc(1, sizeof(*a));
	if (!a)
		return COOP_ERR_NOMEM;
	a->mode = mode;
	a->cpu = cpu;
	coop_lock(ctx);
	ctx->async = a;
	if (pthread_create(&a->tid, NULL, async_main, ctx)) {
		ctx->async = NULL;
		free(a);
		coop_unlock(ctx);
		return COOP_ERR_NOMEM;
	}
	coop_unlock(ctx);
	return COOP_SUCCESS;
}

/* A packet to ourselves: through the ring's doorbell protocol it wakes
 * the thread wherever it sleeps (futex, poll on the driver's file). */
void coop_async_kick(struct coop_context *ctx)
{
	union coop_pkt pkt;

	if (!ctx->async || !ctx->async->asleep ||
	    pthread_equal(ctx->async->tid, pthread_self()))
		return;
	ctx->async->asleep = 0;	/* one packet is enough */
	coop_hdr_init(ctx, &pkt.h, PKT_WAKE, 0, 0);
	coop_send_pkt(ctx, ctx->rank, &pkt);
}

static void on_wake(struct coop_context *ctx, const union coop_pkt *p)
{
	(void)ctx, (void)p;	/* the wake-up was all */
}

void coop_async_init(struct coop_context *ctx)
{
	coop_am_register(ctx, PKT_WAKE, on_wake);
}

int coop_async_mode(const struct coop_context *ctx)
{
	return ctx->async ? ctx->async->mode : COOP_PROGRESS_MODE_MANUAL;
}
