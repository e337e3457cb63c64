/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * api_probe.c - probe, iprobe, matched probe (mprobe/improbe) and the
 * matched receives (mrecv/imrecv).  Probes look at the unexpected queue
 * only: a message already reserved by a posted receive (or written by
 * RTR) is not "waiting to be received".
 */
#include <string.h>

#include "api_int.h"

/* mprobe's answer for COOP_PROC_NULL (MPI_MESSAGE_NO_PROC). */
static struct coop_message msg_noproc;

static int check_probe(const struct coop_context *ctx, int src, int tag,
		       uint32_t comm)
{
	if (!ctx)
		return COOP_ERR_ARG;
	if (!ctx->connected)
		return COOP_ERR_STATE;
	if (src != COOP_ANY_SOURCE && src != COOP_PROC_NULL &&
	    (src < 0 || src >= ctx->size))
		return COOP_ERR_RANK;
	if (src >= 0 && !ctx->peers[src].connected)
		return COOP_ERR_STATE;
	if (tag != COOP_ANY_TAG && (tag < 0 || tag > COOP_TAG_UB))
		return COOP_ERR_TAG;
	return comm > COOP_COMM_MAX ? COOP_ERR_COMM : COOP_SUCCESS;
}

static void fill(coop_status_t *st, int src, int tag, size_t count)
{
	if (st)
		*st = (coop_status_t){ .source = src, .tag = tag,
				       .count = count };
}

/* One step: progress, then look again.  NULL: nothing yet. */
static struct coop_message *progress_and_find(struct coop_context *ctx,
					      int src, int tag, uint32_t comm)
{
	struct coop_message *u;

	u = coop_match_unexpected(ctx, src, tag, (uint16_t)comm);
	if (u)
		return u;
	if (coop_progress_once(ctx))
		ctx->idle = 0;
	return coop_match_unexpected(ctx, src, tag, (uint16_t)comm);
}

/* Blocked probing: a dead peer must not leave us waiting forever. */
static int source_dead(const struct coop_context *ctx, int src)
{
	return src >= 0 && ctx->peers[src].dead;
}

static int probe(struct coop_context *ctx, int src, int tag, uint32_t comm,
		 int block, struct coop_message **out, coop_status_t *st)
{
	struct coop_message *u;
	int rc = check_probe(ctx, src, tag, comm);

	*out = NULL;
	if (rc)
		return rc;
	if (src == COOP_PROC_NULL) {
		fill(st, COOP_PROC_NULL, COOP_ANY_TAG, 0);
		*out = &msg_noproc;
		return COOP_SUCCESS;
	}
	while (!(u = progress_and_find(ctx, src, tag, comm))) {
		if (!block)
			return COOP_SUCCESS;
		if (source_dead(ctx, src))
			return COOP_ERR_PEER_DEAD;
		coop_idle(ctx);
	}
	ctx->idle = 0;
	fill(st, u->d.src, u->d.tag, u->d.len);
	*out = u;
	return COOP_SUCCESS;
}

static int iprobe_locked(coop_context_t *ctx, int source, int tag,
			 uint32_t comm, int *flag, coop_status_t *status)
{
	struct coop_message *u;
	int rc;

	if (!flag)
		return COOP_ERR_ARG;
	rc = probe(ctx, source, tag, comm, 0, &u, status);
	*flag = u != NULL;
	return rc;
}

int coop_iprobe(coop_context_t *ctx, int source, int tag, uint32_t comm,
		int *flag, coop_status_t *status)
{
	COOP_LOCKED(ctx, iprobe_locked(ctx, source, tag, comm, flag, status));
}

static int probe_locked(coop_context_t *ctx, int source, int tag, uint32_t comm,
			coop_status_t *status)
{
	struct coop_message *u;

	return probe(ctx, source, tag, comm, 1, &u, status);
}

int coop_probe(coop_context_t *ctx, int source, int tag, uint32_t comm,
	       coop_status_t *status)
{
	COOP_LOCKED(ctx, probe_locked(ctx, source, tag, comm, status));
}

/* Take u off the unexpected queue: it now belongs to the caller. */
static void claim(struct coop_context *ctx, struct coop_message *u)
{
	if (u == &msg_noproc)
		return;
	dlist_del(&u->link);
	coop_match_consumed(ctx, &u->d);
}

static int improbe_locked(coop_context_t *ctx, int source, int tag,
			  uint32_t comm, int *flag, coop_message_t **msg,
			  coop_status_t *status)
{
	struct coop_message *u;
	int rc;

	if (!flag || !msg)
		return COOP_ERR_ARG;
	rc = probe(ctx, source, tag, comm, 0, &u, status);
	*flag = u != NULL;
	*msg = u;
	if (u)
		claim(ctx, u);
	return rc;
}

int coop_improbe(coop_context_t *ctx, int source, int tag, uint32_t comm,
		 int *flag, coop_message_t **msg, coop_status_t *status)
{
	COOP_LOCKED(ctx,
		    improbe_locked(ctx, source, tag, comm, flag, msg, status));
}

static int mprobe_locked(coop_context_t *ctx, int source, int tag,
			 uint32_t comm, coop_message_t **msg,
			 coop_status_t *status)
{
	struct coop_message *u;
	int rc;

	if (!msg)
		return COOP_ERR_ARG;
	rc = probe(ctx, source, tag, comm, 1, &u, status);
	*msg = u;
	if (u)
		claim(ctx, u);
	return rc;
}

int coop_mprobe(coop_context_t *ctx, int source, int tag, uint32_t comm,
		coop_message_t **msg, coop_status_t *status)
{
	COOP_LOCKED(ctx, mprobe_locked(ctx, source, tag, comm, msg, status));
}

static int imrecv_locked(coop_context_t *ctx, void *buf, size_t cap,
			 coop_message_t **msg, coop_request_t **req)
{
	struct coop_message *u;
	struct coop_request *r;

	if (!ctx || !msg || !*msg || !req)
		return COOP_ERR_ARG;
	if (cap && !buf)
		return COOP_ERR_COUNT;
	u = *msg;
	r = coop_req_new(ctx, REQ_RECV);
	if (!r)
		return COOP_ERR_NOMEM;
	r->msg.buf = buf;
	r->msg.len = cap;
	r->msg.peer = u == &msg_noproc ? COOP_PROC_NULL : u->d.src;
	r->msg.tag = u == &msg_noproc ? COOP_ANY_TAG : u->d.tag;
	r->msg.comm = u->d.comm;
	coop_req_activate(r);
	if (u == &msg_noproc) {
		coop_p2p_recv_post(ctx, r);	/* completes at once */
	} else {
		r->pending |= EV_MATCH;
		coop_p2p_recv_deliver(r, &u->d);
		coop_pool_put(&ctx->proto->msgs, u);
	}
	*msg = NULL;
	*req = r;
	return COOP_SUCCESS;
}

int coop_imrecv(coop_context_t *ctx, void *buf, size_t cap,
		coop_message_t **msg, coop_request_t **req)
{
	COOP_LOCKED(ctx, imrecv_locked(ctx, buf, cap, msg, req));
}

static int mrecv_locked(coop_context_t *ctx, void *buf, size_t cap,
			coop_message_t **msg, coop_status_t *status)
{
	coop_request_t *r;
	int rc = imrecv_locked(ctx, buf, cap, msg, &r);

	return rc ? rc : coop_wait_locked(&r, status);
}

int coop_mrecv(coop_context_t *ctx, void *buf, size_t cap,
	       coop_message_t **msg, coop_status_t *status)
{
	COOP_LOCKED(ctx, mrecv_locked(ctx, buf, cap, msg, status));
}
