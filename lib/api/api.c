/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * api.c - the public point-to-point calls: argument checks, request
 * set-up, and hand-off to the protocol engine (p2p.c).  Nothing here
 * knows a protocol.
 */
#include <errno.h>
#include <string.h>

#include "api_int.h"

#define SEND_MODES (COOP_SEND_SYNC | COOP_SEND_READY | COOP_SEND_BUFFERED)
#define SEND_FLAGS (SEND_MODES | COOP_F_BLOCKING)
#define RECV_FLAGS (COOP_F_BLOCKING)

/* ---------------- argument checks ---------------- */

static int check_ctx(const struct coop_context *ctx)
{
	if (!ctx)
		return COOP_ERR_ARG;
	return ctx->connected ? COOP_SUCCESS : COOP_ERR_STATE;
}

static int check_rank(const struct coop_context *ctx, int rank, int any)
{
	if (rank == COOP_PROC_NULL || (any && rank == COOP_ANY_SOURCE))
		return COOP_SUCCESS;
	if (rank < 0 || rank >= ctx->size)
		return COOP_ERR_RANK;
	/* a dynamic context's peer that is not connected (yet) */
	return ctx->peers[rank].connected ? COOP_SUCCESS : COOP_ERR_STATE;
}

static int check_tag(int tag, int any)
{
	if (any && tag == COOP_ANY_TAG)
		return COOP_SUCCESS;
	return tag >= 0 && tag <= COOP_TAG_UB ? COOP_SUCCESS : COOP_ERR_TAG;
}

static int check_send_flags(unsigned flags)
{
	unsigned mode = flags & SEND_MODES;

	if (flags & ~SEND_FLAGS)
		return COOP_ERR_FLAGS;
	return (mode & (mode - 1)) ? COOP_ERR_FLAGS : COOP_SUCCESS;
}

static int check_common(const struct coop_context *ctx, const void *buf,
			size_t len, int rank, int tag, uint32_t comm, int any,
			void *out)
{
	int rc = check_ctx(ctx);

	if (rc)
		return rc;
	if (!out)
		return COOP_ERR_ARG;
	if ((rc = check_rank(ctx, rank, any)) || (rc = check_tag(tag, any)))
		return rc;
	if (comm > COOP_COMM_MAX)
		return COOP_ERR_COMM;
	if (len && !buf)
		return COOP_ERR_COUNT;
	if (len > (size_t)INT64_MAX)
		return COOP_ERR_COUNT;
	return COOP_SUCCESS;
}

static int check_send(const struct coop_context *ctx, const void *buf,
		      size_t len, int dest, int tag, uint32_t comm,
		      unsigned flags, void *out)
{
	int rc = check_common(ctx, buf, len, dest, tag, comm, 0, out);

	return rc ? rc : check_send_flags(flags);
}

static int check_recv(const struct coop_context *ctx, const void *buf,
		      size_t cap, int src, int tag, uint32_t comm,
		      unsigned flags, void *out)
{
	int rc = check_common(ctx, buf, cap, src, tag, comm, 1, out);

	if (rc)
		return rc;
	return (flags & ~RECV_FLAGS) ? COOP_ERR_FLAGS : COOP_SUCCESS;
}

/* ---------------- request set-up ---------------- */

static struct coop_request *new_req(struct coop_context *ctx, int kind,
				    const void *buf, size_t len, int peer,
				    int tag, uint32_t comm, unsigned flags)
{
	struct coop_request *r = coop_req_new_msg(ctx, kind, buf, len, peer,
						  tag, (uint16_t)comm);

	if (r)
		r->msg.flags = flags;
	return r;
}

/* Start r; on an immediate failure free it and return the error. */
static int start(struct coop_request *r)
{
	struct coop_context *ctx = r->ctx;
	uint64_t enter;
	int rc = COOP_SUCCESS;

	if (r->kind == REQ_COLL)
		return coop_coll_start(r);
	enter = coop_observe_post_begin(ctx);

	/* observed (profiling): a post sees what arrived before it, as
	 * the models assume (a receive matches an RTS already there, a
	 * send sees a CTS) */
	if (enter)
		coop_progress_once(ctx);
	coop_req_activate(r);
	if (r->kind == REQ_SEND)
		rc = coop_p2p_send_start(ctx, r);
	else
		coop_p2p_recv_post(ctx, r);
	if (!rc && r->complete && r->status.error == COOP_ERR_PEER_DEAD)
		rc = COOP_ERR_PEER_DEAD;
	if (enter && !rc) {
		coop_progress_once(ctx);
		coop_observe_posted(r, enter);
	}
	return rc;
}

static int start_new(struct coop_request *r, coop_request_t **out)
{
	int rc = start(r);

	if (rc) {
		coop_req_free(r);
		*out = NULL;
		return rc;
	}
	*out = r;
	return COOP_SUCCESS;
}

/* Standard/ready sends of a packet or a span need no request. */
static int inline_ok(const struct coop_context *ctx, size_t len, int dest,
		     unsigned flags)
{
	return coop_eager_fast_fits(ctx, len) && dest >= 0 &&
	       !(flags & (COOP_SEND_SYNC | COOP_SEND_BUFFERED)) &&
	       !ctx->peers[dest].dead;
}

/* A checked send: with no request (*req = the static done one) when it
 * fits a packet or a span and goes now. */
static int send_checked(coop_context_t *ctx, const void *buf, size_t len,
			int dest, int tag, uint32_t comm, unsigned flags,
			coop_request_t **req)
{
	struct coop_request *r;
	int rc;

	if (inline_ok(ctx, len, dest, flags)) {
		rc = coop_eager_inline_fast(ctx, buf, len, dest, tag,
					    (uint16_t)comm);
		if (rc != -EAGAIN) {
			*req = rc ? NULL : &ctx->done_req;
			return rc;
		}
	}
	r = new_req(ctx, REQ_SEND, buf, len, dest, tag, comm, flags);
	if (!r)
		return COOP_ERR_NOMEM;
	return start_new(r, req);
}

static int isend_locked(coop_context_t *ctx, const void *buf, size_t len,
			int dest, int tag, uint32_t comm, unsigned flags,
			coop_request_t **req)
{
	int rc = check_send(ctx, buf, len, dest, tag, comm, flags, req);

	return rc ? rc : send_checked(ctx, buf, len, dest, tag, comm, flags,
				      req);
}

int coop_isend(coop_context_t *ctx, const void *buf, size_t len, int dest,
	       int tag, uint32_t comm, unsigned flags, coop_request_t **req)
{
	COOP_LOCKED(ctx,
		    isend_locked(ctx, buf, len, dest, tag, comm, flags, req));
}

static int irecv_locked(coop_context_t *ctx, void *buf, size_t cap, int source,
			int tag, uint32_t comm, unsigned flags,
			coop_request_t **req)
{
	struct coop_request *r;
	int rc = check_recv(ctx, buf, cap, source, tag, comm, flags, req);

	if (rc)
		return rc;
	r = new_req(ctx, REQ_RECV, buf, cap, source, tag, comm, flags);
	if (!r)
		return COOP_ERR_NOMEM;
	return start_new(r, req);
}

int coop_irecv(coop_context_t *ctx, void *buf, size_t cap, int source,
	       int tag, uint32_t comm, unsigned flags, coop_request_t **req)
{
	COOP_LOCKED(ctx,
		    irecv_locked(ctx, buf, cap, source, tag, comm, flags, req));
}

static int send_locked(coop_context_t *ctx, const void *buf, size_t len,
		       int dest, int tag, uint32_t comm, unsigned flags)
{
	coop_request_t *r;
	int rc = check_send(ctx, buf, len, dest, tag, comm, flags, &r);

	if (rc)
		return rc;
	rc = send_checked(ctx, buf, len, dest, tag, comm,
			  flags | COOP_F_BLOCKING, &r);
	if (!rc && r != &ctx->done_req)
		rc = coop_wait_locked(&r, COOP_STATUS_IGNORE);
	if (!rc)
		coop_wait_backlog(ctx, dest);
	return rc;
}

int coop_send(coop_context_t *ctx, const void *buf, size_t len, int dest,
	      int tag, uint32_t comm, unsigned flags)
{
	COOP_LOCKED(ctx, send_locked(ctx, buf, len, dest, tag, comm, flags));
}

static int recv_locked(coop_context_t *ctx, void *buf, size_t cap, int source,
		       int tag, uint32_t comm, unsigned flags,
		       coop_status_t *status)
{
	coop_request_t *r;
	int rc = irecv_locked(ctx, buf, cap, source, tag, comm,
			    flags | COOP_F_BLOCKING, &r);

	return rc ? rc : coop_wait_locked(&r, status);
}

int coop_recv(coop_context_t *ctx, void *buf, size_t cap, int source, int tag,
	      uint32_t comm, unsigned flags, coop_status_t *status)
{
	COOP_LOCKED(ctx,
		    recv_locked(ctx, buf, cap, source, tag, comm, flags,
				status));
}

/* ---------------- persistent requests ---------------- */

/* An inactive persistent request: complete until coop_start(). */
static int persistent_init(coop_context_t *ctx, int kind, const void *buf,
			   size_t len, int peer, int tag, uint32_t comm,
			   unsigned flags, coop_request_t **req)
{
	struct coop_request *r = new_req(ctx, kind, buf, len, peer, tag, comm,
					 flags);

	if (!r)
		return COOP_ERR_NOMEM;
	r->persistent = 1;
	r->complete = 1;
	*req = r;
	return COOP_SUCCESS;
}

static int send_init_locked(coop_context_t *ctx, const void *buf, size_t len,
			    int dest, int tag, uint32_t comm, unsigned flags,
			    coop_request_t **req)
{
	int rc = check_send(ctx, buf, len, dest, tag, comm, flags, req);

	return rc ? rc : persistent_init(ctx, REQ_SEND, buf, len, dest, tag,
					 comm, flags, req);
}

int coop_send_init(coop_context_t *ctx, const void *buf, size_t len, int dest,
		   int tag, uint32_t comm, unsigned flags, coop_request_t **req)
{
	COOP_LOCKED(ctx,
		    send_init_locked(ctx, buf, len, dest, tag, comm, flags,
				     req));
}

static int recv_init_locked(coop_context_t *ctx, void *buf, size_t cap,
			    int source, int tag, uint32_t comm, unsigned flags,
			    coop_request_t **req)
{
	int rc = check_recv(ctx, buf, cap, source, tag, comm, flags, req);

	return rc ? rc : persistent_init(ctx, REQ_RECV, buf, cap, source, tag,
					 comm, flags, req);
}

int coop_recv_init(coop_context_t *ctx, void *buf, size_t cap, int source,
		   int tag, uint32_t comm, unsigned flags, coop_request_t **req)
{
	COOP_LOCKED(ctx,
		    recv_init_locked(ctx, buf, cap, source, tag, comm, flags,
				     req));
}

static int start_locked(coop_request_t **req)
{
	struct coop_request *r;

	if (!req || !*req)
		return COOP_ERR_ARG;
	r = *req;
	if (coop_req_is_static(r) || !r->persistent || r->active)
		return COOP_ERR_REQUEST;
	return start(r);
}

int coop_start(coop_request_t **req)
{
	COOP_LOCKED(req && *req ? (*req)->ctx : NULL, start_locked(req));
}

static int startall_locked(int count, coop_request_t **reqs)
{
	int i, rc, first = COOP_SUCCESS;

	if (count < 0 || (count && !reqs))
		return COOP_ERR_ARG;
	for (i = 0; i < count; i++) {
		rc = start_locked(&reqs[i]);
		if (rc && !first)
			first = rc;
	}
	return first;
}

int coop_startall(int count, coop_request_t **reqs)
{
	COOP_LOCKED(coop_req_array_ctx(count, reqs),
		    startall_locked(count, reqs));
}

/* ---------------- cancel, free, progress ---------------- */

static int cancel_locked(coop_request_t *r)
{
	struct coop_context *ctx;

	if (!r)
		return COOP_ERR_ARG;
	if (coop_req_is_static(r) || r->kind != REQ_RECV)
		return coop_req_is_static(r) || r->active ?
			COOP_ERR_UNSUPPORTED : COOP_ERR_REQUEST;
	if (!r->active)
		return COOP_ERR_REQUEST;
	ctx = r->ctx;
	if (r->complete || !(r->pending & EV_MATCH) ||
	    !dlist_linked(&r->match.link))
		return COOP_SUCCESS;	/* matched already: cancel fails */
	/* receiver-initiated matching numbered it */
	if (r->match.ticketed)
		return coop_cancel_ticketed(ctx, r);
	coop_match_unpost(ctx, r);
	r->status.cancelled = 1;
	coop_req_event(r, EV_MATCH);
	return COOP_SUCCESS;
}

int coop_cancel(coop_request_t *r)
{
	COOP_LOCKED(r ? r->ctx : NULL, cancel_locked(r));
}

static int request_free_locked(coop_request_t **req)
{
	struct coop_request *r;

	if (!req || !*req)
		return COOP_ERR_ARG;
	r = *req;
	*req = NULL;
	if (coop_req_is_static(r))
		return COOP_SUCCESS;
	if (r->active && !r->complete) {
		if (r->persistent) {
			*req = r;
			return COOP_ERR_REQUEST;
		}
		r->user_freed = 1;	/* freed at completion */
		return COOP_SUCCESS;
	}
	coop_req_free(r);
	return COOP_SUCCESS;
}

int coop_request_free(coop_request_t **req)
{
	COOP_LOCKED(req && *req ? (*req)->ctx : NULL, request_free_locked(req));
}

static int progress_locked(coop_context_t *ctx)
{
	int rc = check_ctx(ctx);

	if (rc)
		return rc;
	coop_progress_once(ctx);
	return COOP_SUCCESS;
}

int coop_progress(coop_context_t *ctx)
{
	COOP_LOCKED(ctx, progress_locked(ctx));
}
