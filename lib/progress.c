/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * progress.c - the progress engine: drain the mailbox ring and dispatch
 * packets, push packets that found a peer's ring full (per-peer FIFO
 * backlog, so order is kept), run one chunk of copy work, and detect dead
 * peers (all requests that depend on a dead peer complete with
 * COOP_ERR_PEER_DEAD).  Busy polling; a blocked caller starts to
 * sched_yield() after COOP_SPIN idle polls.
 */
#include <sched.h>
#include <string.h>
#include <time.h>

#include "coop_internal.h"

#define POLL_BATCH 32
#define CHECK_PERIOD_NS 10000000ULL	/* peer liveness, while idle */

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
	return COOP_SUCCESS;
}

int coop_send_pkt(struct coop_context *ctx, int peer, union coop_pkt *pkt)
{
	struct coop_peer *pe = &ctx->peers[peer];
	int rc;

	if (unlikely(pe->dead))
		return COOP_ERR_PEER_DEAD;
	if (likely(!pe->nbacklog)) {
		rc = ctx->prov.ops->send_msg(&ctx->prov, peer, pkt);
		if (likely(rc == 0))
			return COOP_SUCCESS;
		if (rc != -EAGAIN) {
			coop_peer_failed(ctx, peer);
			return COOP_ERR_PEER_DEAD;
		}
	}
	return backlog_add(ctx, peer, pkt);
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

		rc = ctx->prov.ops->send_msg(&ctx->prov, peer, &n->pkt);
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

static void desc_from_pkt(struct coop_msgdesc *m, const union coop_pkt *p)
{
	const struct coop_pkt_hdr *h = &p->h;

	memset(m, 0, sizeof(*m));
	m->type = h->type;
	m->flags = h->flags;
	m->proto = h->proto;
	m->src = h->src;
	m->tag = h->tag;
	m->comm = h->comm;
	m->seq = h->seq;
	switch (h->type) {
	case PKT_EAGER:
		m->ilen = h->ilen;
		m->len = h->ilen;
		m->data = p->eager.data;
		if (h->flags & PF_SYNC) {
			memcpy(&m->sreq, p->eager.data, sizeof(m->sreq));
			m->data += sizeof(m->sreq);
		}
		break;
	case PKT_EAGER_BB:
		m->slot = p->bb.slot;
		m->sreq = p->bb.sreq;
		m->len = p->bb.len;
		break;
	case PKT_RTS:
		m->sreq = p->rts.sreq;
		m->len = p->rts.len;
		m->key = p->rts.key;
		break;
	default:
		break;
	}
}

static void on_ack(struct coop_context *ctx, const struct coop_pkt_ack *p)
{
	struct coop_request *s = coop_req_lookup(ctx, p->sreq);

	if (s && s->kind == REQ_SEND)
		coop_req_event(s, EV_ACK);
}

static void dispatch(struct coop_context *ctx, const union coop_pkt *p)
{
	struct coop_msgdesc m;

	if (unlikely(p->h.src >= ctx->size)) {
		coop_log(ctx->rank, "packet from invalid rank %u dropped",
			 p->h.src);
		return;
	}
	if (likely(p->h.type < PKT_TYPE_MAX))
		ctx->rx[p->h.type]++;
	switch (p->h.type) {
	case PKT_EAGER:
	case PKT_EAGER_BB:
	case PKT_RTS:
		desc_from_pkt(&m, p);
		coop_recv_arrival(ctx, &m);
		break;
	case PKT_CTS:
		coop_rndv_on_cts(ctx, &p->cts);
		break;
	case PKT_FIN:
		coop_rndv_on_fin(ctx, &p->fin);
		break;
	case PKT_ACK:
		on_ack(ctx, &p->ack);
		break;
	case PKT_FRAG:
		coop_rndv_on_frag(ctx, &p->frag);
		break;
	case PKT_RTR:
		coop_rtr_on_rtr(ctx, &p->rtr);
		break;
	case PKT_REVOKE:
		coop_rtr_on_revoke(ctx, &p->revoke);
		break;
	case PKT_REVOKE_REPLY:
		coop_rtr_on_revoke_reply(ctx, &p->revoke);
		break;
	case PKT_BYE:
		ctx->peers[p->h.src].said_bye = 1;
		break;
	default:
		coop_log(ctx->rank, "unknown packet type %u from %u dropped",
			 p->h.type, p->h.src);
	}
}

/* ---------------- peer failure ---------------- */

void coop_peer_failed(struct coop_context *ctx, int peer)
{
	if (peer == ctx->rank || ctx->peers[peer].dead)
		return;
	ctx->peers[peer].dead = 1;
	ctx->deaths++;
}

/* A crash also fails pending ANY_SOURCE receives (the message they wait
 * for may never come); a clean finalize does not. */
static int depends_on(const struct coop_request *r, int peer, int crashed)
{
	if (r->kind == REQ_SEND)
		return r->peer == peer;
	if (r->pending & EV_MATCH)
		return r->peer == peer ||
		       (crashed && r->peer == COOP_ANY_SOURCE);
	return r->status.source == peer;
}

static void drop_rtrs_from(struct coop_context *ctx, int peer)
{
	struct coop_tickets *tk = &ctx->tk;
	uint32_t i;

	for (i = 0; i <= tk->mask; i++) {
		struct coop_triple *t = tk->tab[i];

		while (t && !dlist_empty(&t->rtrq)) {
			struct coop_message *u = container_of(
				t->rtrq.next, struct coop_message, link);

			if (u->d.src != peer)
				break;
			dlist_del(&u->link);
			coop_pool_put(&ctx->msgs, u);
		}
	}
}

static void reclaim_bounce(struct coop_context *ctx, int peer)
{
	uint32_t i;

	for (i = 0; i < ctx->seg.hdr->nbounce; i++)
		if (ctx->bslot_peer[i] == (uint16_t)peer &&
		    __atomic_load_n(&ctx->seg.flags[i].busy, __ATOMIC_ACQUIRE))
			coop_seg_bounce_free(&ctx->seg, i);
}

static void handle_death(struct coop_context *ctx, int peer)
{
	struct dlist *pos, *tmp;
	int crashed = !ctx->peers[peer].said_bye;

	if (ctx->cfg.verbose)
		coop_log(ctx->rank, "rank %d %s: failing its requests", peer,
			 crashed ? "died" : "finalized");
	backlog_drop(ctx, peer);
	coop_rtr_peer_gone(ctx, peer);
	dlist_for_each_safe(pos, tmp, &ctx->inflight) {
		struct coop_request *r =
			container_of(pos, struct coop_request, alink);

		if (depends_on(r, peer, crashed) && !coop_job_try_finish(r))
			coop_req_fail(r, COOP_ERR_PEER_DEAD);
	}
	drop_rtrs_from(ctx, peer);
	reclaim_bounce(ctx, peer);
	coop_seg_work_free_peer(&ctx->seg, peer);
}

static void process_deaths(struct coop_context *ctx)
{
	union coop_pkt pkt;
	int p;

	/* what the dead peer sent before it went is still valid: use it */
	while (ctx->prov.ops->poll_msg(&ctx->prov, &pkt) > 0)
		dispatch(ctx, &pkt);
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
		if (p != ctx->rank && !ctx->peers[p].dead &&
		    !ctx->prov.ops->peer_alive(&ctx->prov, p))
			coop_peer_failed(ctx, p);
}

/* ---------------- the loop ---------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Every few thousand empty polls, and at most every CHECK_PERIOD_NS, ask
 * the provider whether the peers are alive: whoever polls (wait, test,
 * probe or coop_progress loops) notices a dead peer. */
static void idle_poll(struct coop_context *ctx)
{
	uint64_t t;

	if (++ctx->empty_polls & 4095)
		return;
	t = now_ns();
	if (t - ctx->last_check_ns >= CHECK_PERIOD_NS) {
		ctx->last_check_ns = t;
		coop_check_peers(ctx);
	}
}

int coop_progress_once(struct coop_context *ctx)
{
	union coop_pkt pkt;
	int n = 0;

	if (unlikely(ctx->deaths))
		process_deaths(ctx);
	while (n < POLL_BATCH && ctx->prov.ops->poll_msg(&ctx->prov, &pkt) > 0) {
		dispatch(ctx, &pkt);
		n++;
	}
	if (unlikely(ctx->nbacklogged))
		n += backlog_flush(ctx);
	if (!dlist_empty(&ctx->jobs))
		n += coop_job_step(ctx);
	if (unlikely(ctx->dma != NULL))
		n += coop_dma_progress(ctx);
	if (!n)
		idle_poll(ctx);
	return n;
}

void coop_idle(struct coop_context *ctx)
{
	if (++ctx->idle > ctx->cfg.spin)
		sched_yield();
}
