/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * progress.c - the progress engine: drain the mailbox ring and hand each
 * packet to the handler registered for its type (coop_am_register), push
 * packets that found a peer's ring full (per-peer FIFO backlog, so order
 * is kept), run one chunk of copy work, and detect dead peers (the
 * registered peer-gone callbacks run, then every request that depends on
 * the peer completes with COOP_ERR_PEER_DEAD).  A blocked caller polls
 * COOP_SPIN times, then sleeps in the provider's wait_msg (coop_idle).
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "core.h"

#define POLL_BATCH 32
#define CHECK_PERIOD_NS 10000000ULL	/* peer liveness, while idle */
#define SPIN_YIELD_MASK 255	/* spinning yields once every 256 polls */
#define MT_YIELD_MASK 15	/* ... every 16 with other threads around */
#define SLEEP_MIN_US 50		/* first sleep of a wait; doubles */
#define SLEEP_SILENT_US 1000	/* cap while work may end without a message */

void coop_hdr_init(struct coop_context *ctx, struct coop_pkt_hdr *h,
		   uint8_t type, uint16_t comm, int tag)
{
	memset(h + 1, 0, PKT_BODY);
	h->type = type;
	h->flags = 0;
	h->ilen = 0;
	h->proto = 0;
	h->src = (uint16_t)ctx->rank;
	h->comm = comm;
	h->tag = tag;
	h->seq = 0;
}

/* ---------------- sending with backlog ---------------- */

static int backlog_add(struct coop_context *ctx, int peer,
		       const union coop_pkt *pkt)
{
	struct coop_peer *pe = &ctx->peers[peer];
	struct coop_pkt_node *n = coop_pool_get(&ctx->pkts);

	if (!n)
		return COOP_ERR_NOMEM;
	n->pkt = *pkt;
	dlist_add_tail(&pe->backlog, &n->link);
	if (pe->nbacklog++ == 0)
		ctx->nbacklogged++;
	ctx->stats.backlog_peak = COOP_MAX(ctx->stats.backlog_peak,
					   (uint64_t)ctx->pkts.live);
	return COOP_SUCCESS;
}

/* Enqueue n messages now: COOP_SUCCESS, -EAGAIN (full, or a backlog
 * must go first) or COOP_ERR_*. */
static int send_now(struct coop_context *ctx, int peer,
		    const union coop_pkt *pkts, unsigned n)
{
	struct coop_peer *pe = &ctx->peers[peer];
	int rc;

	if (unlikely(pe->dead || !pe->connected))
		return pe->dead ? COOP_ERR_PEER_DEAD : COOP_ERR_STATE;
	if (unlikely(pe->nbacklog))
		return -EAGAIN;
	rc = ctx->prov.ops->send_msg(&ctx->prov, peer, pkts, n);
	if (likely(rc == 0) || rc == -EAGAIN)
		return rc;
	coop_peer_failed(ctx, peer);
	return COOP_ERR_PEER_DEAD;
}

int coop_send_pkt(struct coop_context *ctx, int peer, union coop_pkt *pkt)
{
	int rc = send_now(ctx, peer, pkt, 1);

	return rc == -EAGAIN ? backlog_add(ctx, peer, pkt) : rc;
}

int coop_send_span(struct coop_context *ctx, int peer, union coop_pkt *pkts,
		   unsigned n)
{
	pkts->h.flags = (uint8_t)((pkts->h.flags & ~PF_SPAN_MASK) |
				  (n - 1) << PF_SPAN_SHIFT);
	return send_now(ctx, peer, pkts, n);
}

static void backlog_drop(struct coop_context *ctx, int peer)
{
	struct coop_peer *pe = &ctx->peers[peer];

	while (!dlist_empty(&pe->backlog)) {
		struct coop_pkt_node *n = container_of(pe->backlog.next,
						       struct coop_pkt_node,
						       link);

		dlist_del(&n->link);
		coop_pool_put(&ctx->pkts, n);
	}
	if (pe->nbacklog)
		ctx->nbacklogged--;
	pe->nbacklog = 0;
}

static int backlog_flush_peer(struct coop_context *ctx, int peer)
{
	struct coop_peer *pe = &ctx->peers[peer];
	int sent = 0, rc;

	while (!dlist_empty(&pe->backlog)) {
		struct coop_pkt_node *n = container_of(pe->backlog.next,
						       struct coop_pkt_node,
						       link);

		rc = ctx->prov.ops->send_msg(&ctx->prov, peer, &n->pkt, 1);
		if (rc == -EAGAIN)
			break;
		if (rc) {
			coop_peer_failed(ctx, peer);
			break;
		}
		dlist_del(&n->link);
		coop_pool_put(&ctx->pkts, n);
		sent++;
		if (--pe->nbacklog == 0)
			ctx->nbacklogged--;
	}
	return sent;
}

static int backlog_flush(struct coop_context *ctx)
{
	int p, sent = 0;

	for (p = 0; p < ctx->size && ctx->nbacklogged; p++)
		if (ctx->peers[p].nbacklog && !ctx->peers[p].dead)
			sent += backlog_flush_peer(ctx, p);
	return sent;
}

/* ---------------- dispatch ---------------- */

void coop_am_register(struct coop_context *ctx, uint8_t type,
		      coop_am_handler_t h)
{
	if (type < PKT_TYPE_MAX)
		ctx->am[type] = h;
}

void coop_proto_register(struct coop_context *ctx, enum coop_proto p,
			 const struct coop_proto_ops *ops)
{
	if (p < PROTO_COUNT)
		ctx->protos[p] = ops;
}

void coop_on_peer_gone(struct coop_context *ctx, coop_peer_gone_cb cb)
{
	if (ctx->npeer_gone < COOP_PEER_GONE_MAX)
		ctx->peer_gone[ctx->npeer_gone++] = cb;
}

void coop_up_on_activate(struct coop_context *ctx,
			 void (*cb)(struct coop_request *r))
{
	if (ctx->up.nactivate < COOP_ACTIVATE_MAX)
		ctx->up.activate[ctx->up.nactivate++] = cb;
}

static void dispatch(struct coop_context *ctx, const union coop_pkt *p)
{
	coop_am_handler_t h;

	if (unlikely(p->h.src >= ctx->size)) {
		coop_log(ctx->rank, "packet from invalid rank %u dropped",
			 p->h.src);
		return;
	}
	if (unlikely(ctx->peers[p->h.src].misbehaved))
		return;
	h = p->h.type < PKT_TYPE_MAX ? ctx->am[p->h.type] : NULL;
	if (unlikely(!h)) {
		coop_peer_misbehaved(ctx, p->h.src, "unknown packet type");
		return;
	}
	ctx->rx[p->h.type]++;
	h(ctx, p);
}

/*
 * Take the next packet with the rest of its span into pkts (an array of
 * PKT_SPAN_MAX): 1 got one, 0 the ring is empty, -1 one was taken whose
 * span is not there (its sender broke the protocol).
 */
static int poll_pkt(struct coop_context *ctx, union coop_pkt *pkts)
{
	unsigned more;

	if (ctx->prov.ops->poll_msg(&ctx->prov, pkts) <= 0)
		return 0;
	more = coop_pkt_span_more(pkts);
	if (likely(!more) ||
	    ctx->prov.ops->poll_more(&ctx->prov, pkts + 1, more) > 0)
		return 1;
	if (pkts->h.src < ctx->size)
		coop_peer_misbehaved(ctx, pkts->h.src, "span not sent whole");
	return -1;
}

/* Dispatch up to max packets from the ring: how many were taken. */
static int poll_dispatch(struct coop_context *ctx, int max)
{
	union coop_pkt pkts[PKT_SPAN_MAX];
	int n = 0, got;

	while (n < max && (got = poll_pkt(ctx, pkts)) != 0) {
		if (got > 0)
			dispatch(ctx, pkts);
		n++;
	}
	return n;
}

/* ---------------- peer failure ---------------- */

void coop_peer_failed(struct coop_context *ctx, int peer)
{
	if (peer == ctx->rank || ctx->peers[peer].dead)
		return;
	ctx->peers[peer].dead = 1;
	ctx->deaths++;
	coop_windows_peer_gone(ctx, peer);
}

void coop_peer_misbehaved(struct coop_context *ctx, int peer,
			  const char *what)
{
	if (peer == ctx->rank || ctx->peers[peer].misbehaved)
		return;
	coop_log(ctx->rank, "rank %d broke the protocol (%s): treated as "
		 "failed", peer, what);
	ctx->peers[peer].misbehaved = 1;
	coop_peer_failed(ctx, peer);
}

/* A crash also fails pending ANY_SOURCE receives (the message they wait
 * for may never come); a clean finalize does not. */
static int depends_on(const struct coop_request *r, int peer, int crashed)
{
	if (r->kind != REQ_RECV)
		return r->msg.peer == peer;
	if (r->pending & EV_MATCH)
		return r->msg.peer == peer ||
		       (crashed && r->msg.peer == COOP_ANY_SOURCE);
	return r->status.source == peer;
}

static void reclaim_bounce(struct coop_context *ctx, int peer)
{
	uint32_t i;

	for (i = 0; i < ctx->seg.nbounce; i++)
		if (ctx->bslot_peer[i] == (uint16_t)peer &&
		    !ctx->bslot_user[i] &&
		    __atomic_load_n(&ctx->seg.flags[i].busy, __ATOMIC_ACQUIRE))
			coop_seg_bounce_free(&ctx->seg, i);
}

static void handle_death(struct coop_context *ctx, int peer)
{
	struct dlist *pos, *tmp;
	int crashed = !ctx->peers[peer].said_bye;
	unsigned i;

	if (ctx->cfg.verbose)
		coop_log(ctx->rank, "rank %d %s: failing its requests", peer,
			 crashed ? "died" : "finalized");
	backlog_drop(ctx, peer);
	for (i = 0; i < ctx->npeer_gone; i++)
		ctx->peer_gone[i](ctx, peer);
	dlist_for_each_safe(pos, tmp, &ctx->inflight) {
		struct coop_request *r =
			container_of(pos, struct coop_request, alink);

		if (depends_on(r, peer, crashed) &&
		    !coop_job_try_finish(&r->job))
			coop_req_fail(r, COOP_ERR_PEER_DEAD);
	}
	reclaim_bounce(ctx, peer);
	coop_seg_work_free_peer(&ctx->seg, peer);
}

void coop_peer_gone_now(struct coop_context *ctx, int peer)
{
	struct coop_peer *pe = &ctx->peers[peer];

	coop_peer_failed(ctx, peer);
	if (!pe->death_handled) {
		pe->death_handled = 1;
		handle_death(ctx, peer);
	}
}

static void process_deaths(struct coop_context *ctx)
{
	int p;

	/* what the dead peer sent before it went is still valid: use it */
	poll_dispatch(ctx, INT_MAX);
	ctx->deaths = 0;
	for (p = 0; p < ctx->size; p++) {
		if (ctx->peers[p].dead && !ctx->peers[p].death_handled) {
			ctx->peers[p].death_handled = 1;
			handle_death(ctx, p);
		}
	}
}

void coop_check_peers(struct coop_context *ctx)
{
	int p;

	for (p = 0; p < ctx->size; p++)
		if (p != ctx->rank && ctx->peers[p].connected &&
		    !ctx->peers[p].dead &&
		    !ctx->prov.ops->peer_alive(&ctx->prov, p))
			coop_peer_failed(ctx, p);
}

/* ---------------- the loop ---------------- */

/* Check the peers if CHECK_PERIOD_NS passed since the last check (t is
 * now); ns until the next one is due. */
static uint64_t check_peers_due(struct coop_context *ctx, uint64_t t)
{
	if (t - ctx->last_check_ns >= CHECK_PERIOD_NS) {
		ctx->last_check_ns = t;
		coop_check_peers(ctx);
	}
	return ctx->last_check_ns + CHECK_PERIOD_NS - t;
}

/* Every few thousand empty polls, and at most every CHECK_PERIOD_NS, ask
 * the provider whether the peers are alive: whoever polls (wait, test,
 * probe or coop_progress loops) notices a dead peer. */
static void idle_poll(struct coop_context *ctx)
{
	if (++ctx->empty_polls & 4095)
		return;
	check_peers_due(ctx, coop_now_ns());
}

/* Nothing to do on this turn?  One look at flags and the ring, so a loop
 * polling several transports (UCX's worker) pays little for ours. */
static inline int progress_idle(const struct coop_context *ctx)
{
	return !(ctx->event_armed | ctx->deaths | ctx->nbacklogged) &&
	       dlist_empty(&ctx->jobs) && !ctx->up.non &&
	       !coop_provider_msg_ready(&ctx->prov);
}

int coop_up_register(struct coop_context *ctx, coop_up_progress_cb progress,
		     coop_up_silent_cb silent)
{
	struct coop_up_source *src;

	if (ctx->up.nsrc == COOP_UP_MAX)
		return -1;
	src = &ctx->up.src[ctx->up.nsrc];
	src->progress = progress;
	src->silent_work = silent;
	src->on = 0;
	return (int)ctx->up.nsrc++;
}

void coop_up_switch(struct coop_context *ctx, int handle, int on)
{
	struct coop_up_source *src = &ctx->up.src[handle];

	ctx->up.non += !!on - src->on;
	src->on = !!on;
}

static int upcalls_progress(struct coop_context *ctx)
{
	unsigned i;
	int n = 0;

	for (i = 0; i < ctx->up.nsrc; i++)
		if (ctx->up.src[i].on)
			n += ctx->up.src[i].progress(ctx);
	return n;
}

int coop_progress_once(struct coop_context *ctx)
{
	int n;

	if (likely(progress_idle(ctx))) {
		idle_poll(ctx);
		return 0;
	}

	if (unlikely(ctx->event_armed)) {	/* awake: no more doorbells */
		ctx->prov.ops->event_arm(&ctx->prov, 0);
		ctx->event_armed = 0;
	}
	if (unlikely(ctx->deaths))
		process_deaths(ctx);
	n = poll_dispatch(ctx, POLL_BATCH);
	if (unlikely(ctx->nbacklogged))
		n += backlog_flush(ctx);
	if (!dlist_empty(&ctx->jobs))
		n += coop_job_step(ctx);
	if (unlikely(ctx->up.non))
		n += upcalls_progress(ctx);
	if (!n)
		idle_poll(ctx);
	return n;
}

/*
 * May work in flight end without a message to us?  A COOP-p2p partner's
 * chunks show only in the shared done counter, pipeline fragments wait
 * for bounce slots the receiver frees in shared memory, the offload
 * engine completes copies and writes notifications, a peer drains the
 * ring our backlog waits for: none rings our doorbell.
 */
static int silent_work(const struct coop_context *ctx)
{
	const struct coop_up_source *src = ctx->up.src;
	unsigned i;

	if (!dlist_empty(&ctx->jobs) || ctx->nbacklogged)
		return 1;
	for (i = 0; i < ctx->up.nsrc; i++)
		if (src[i].on && src[i].silent_work && src[i].silent_work(ctx))
			return 1;
	return 0;
}

int coop_work_pending(const struct coop_context *ctx)
{
	return silent_work(ctx) || ctx->deaths;
}

unsigned coop_sleep_bound_us(struct coop_context *ctx, unsigned cap_us)
{
	uint64_t next = check_peers_due(ctx, coop_now_ns());

	if (ctx->deaths)
		return 0;	/* the next progress step fails the requests */
	return (unsigned)COOP_MIN((uint64_t)cap_us, next / 1000 + 1);
}

/* The k-th sleep of a blocked caller: until a message may be there, for
 * at most SLEEP_MIN_US << k, the cap, and the time to the next peer
 * check (a death rings no doorbell either).  The lock is let go while
 * it sleeps. */
static void idle_sleep(struct coop_context *ctx, unsigned k)
{
	uint64_t us = ctx->cfg.sleep_us;
	int dropped;

	if (silent_work(ctx))
		us = COOP_MIN(us, SLEEP_SILENT_US);
	us = COOP_MIN(us, (uint64_t)SLEEP_MIN_US << COOP_MIN(k, 16u));
	us = coop_sleep_bound_us(ctx, (unsigned)us);
	if (!us)
		return;
	ctx->stats.sleeps++;
	if (ctx->async) {	/* the doorbell is the progress thread's */
		if (coop_lock_wait_completion(ctx, (unsigned)us))
			return;
	}
	dropped = coop_lock_drop(ctx);
	ctx->prov.ops->wait_msg(&ctx->prov, (long)us);
	coop_lock_retake(ctx, dropped);
}

/* Let the CPU (yield) or only the lock (relax) go for a moment. */
static void idle_yield(struct coop_context *ctx, int yield)
{
	int dropped = coop_lock_drop(ctx);

	if (yield)
		sched_yield();
	else
		coop_cpu_relax();
	coop_lock_retake(ctx, dropped);
}

/*
 * A blocked caller found nothing to do (it resets ctx->idle when progress
 * happens): spin COOP_SPIN times for latency, then sleep, so
 * oversubscribed ranks leave the CPU to those that have work.  The spin
 * yields now and then: a rank we wait for may share our CPU (one CPU,
 * 8 B ping-pong: 2.7 instead of 92 us), and a yield nobody takes costs a
 * fraction of a microsecond.  With more ranks than CPUs every empty poll
 * yields, as Open MPI's mpi_yield_when_idle does (4 ranks on 2 CPUs, a
 * neighbourhood alltoall of 8 B: 2 instead of 15 us); sleeping on a
 * futex that the writers of the data rang was 3x slower (8 ranks, a 4-D
 * stencil of 8 B; bench/HISTORY: a sleep and a wake-up cost more than a
 * yield).
 * COOP_SLEEP_US=0: yield instead of sleeping.
 * Other threads of the context take the lock while we spin or sleep.
 */
void coop_idle(struct coop_context *ctx)
{
	unsigned n = ++ctx->idle, spin = ctx->cfg.spin;

	if (n <= spin)
		ctx->spins++;	/* someone polls: the progress thread naps */
	if (n > spin && ctx->cfg.sleep_us)
		idle_sleep(ctx, n - spin - 1);
	else if (n > spin || !(n & SPIN_YIELD_MASK) || !ctx->undersubscribed)
		idle_yield(ctx, 1);
	else if (ctx->mt)	/* the others' turn with the lock */
		idle_yield(ctx, !(n & MT_YIELD_MASK));
}

void coop_flush_backlog(struct coop_context *ctx)
{
	while (ctx->nbacklogged) {
		if (!coop_progress_once(ctx))
			coop_idle(ctx);
	}
}
