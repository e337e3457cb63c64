/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * api_wait.c - completion calls: wait/test and their any/some/all forms.
 * A completed non-persistent request is freed and its handle set to NULL;
 * a persistent one becomes inactive.  NULL and inactive handles are
 * ignored (empty status), as in MPI.
 */
#include "api_int.h"

static void empty_status(coop_status_t *st)
{
	static const coop_status_t empty = {
		.source = COOP_ANY_SOURCE, .tag = COOP_ANY_TAG,
	};

	if (st)
		*st = empty;
}

/* Null, the static "done" request, or an inactive persistent request. */
static int is_idle(const struct coop_request *r)
{
	return !r || coop_req_is_static(r) || !r->active;
}

static int finish(coop_request_t **rp, coop_status_t *st)
{
	struct coop_request *r = *rp;
	int err;

	if (is_idle(r)) {
		empty_status(st);
		/* an inline send, done at once */
		if (r && coop_req_is_static(r)) {
			if (st)
				st->protocol = COOP_PROTOCOL_EAGER;
			*rp = NULL;
		}
		return COOP_SUCCESS;
	}
	coop_observe_completed(r);
	err = r->status.error;
	if (st) {
		*st = r->status;
		st->error = err;
	}
	if (r->persistent) {
		r->active = 0;
	} else {
		coop_req_free(r);
		*rp = NULL;
	}
	return err;
}

/* One step of a caller blocked in a completion call: its CPU has nothing
 * else to do, so assisting copy jobs may take chunks (core/job.c). */
static void progress_blocked(struct coop_context *ctx)
{
	uint64_t t0 = coop_observe_block_begin(ctx);
	int n;

	ctx->blocked++;
	n = coop_progress_once(ctx);
	ctx->blocked--;
	if (n)
		ctx->idle = 0;
	else
		coop_idle(ctx);
	coop_observe_block_end(ctx, t0);
}

static int wait_internal(struct coop_request *r)
{
	struct coop_context *ctx = r->ctx;

	coop_observe_wait_began(r);
	while (!r->complete)
		progress_blocked(ctx);
	ctx->idle = 0;
	return r->status.error;
}

void coop_wait_backlog(struct coop_context *ctx, int peer)
{
	if (likely(peer < 0 || !coop_backlog_full(ctx, peer)))
		return;
	do
		progress_blocked(ctx);
	while (coop_backlog_full(ctx, peer));
	ctx->idle = 0;
}

int coop_wait_locked(coop_request_t **req, coop_status_t *status)
{
	if (!req)
		return COOP_ERR_ARG;
	if (!is_idle(*req))
		wait_internal(*req);
	return finish(req, status);
}

int coop_wait(coop_request_t **req, coop_status_t *status)
{
	COOP_LOCKED(req && *req ? (*req)->ctx : NULL,
		    coop_wait_locked(req, status));
}

static int test_locked(coop_request_t **req, int *flag, coop_status_t *status)
{
	struct coop_request *r;

	if (!req || !flag)
		return COOP_ERR_ARG;
	r = *req;
	if (!is_idle(r) && !r->complete)
		coop_progress_once(r->ctx);
	*flag = is_idle(r) || r->complete;
	return *flag ? finish(req, status) : COOP_SUCCESS;
}

int coop_test(coop_request_t **req, int *flag, coop_status_t *status)
{
	COOP_LOCKED(req && *req ? (*req)->ctx : NULL,
		    test_locked(req, flag, status));
}

static int check_array(int count, coop_request_t **reqs)
{
	return count < 0 || (count > 0 && !reqs) ? COOP_ERR_ARG : 0;
}

/* Some active request's context, or NULL when all are idle. */
static struct coop_context *any_ctx(int count, coop_request_t **reqs)
{
	int i;

	for (i = 0; i < count; i++)
		if (!is_idle(reqs[i]))
			return reqs[i]->ctx;
	return NULL;
}

static int all_done(int count, coop_request_t **reqs)
{
	int i;

	for (i = 0; i < count; i++)
		if (!is_idle(reqs[i]) && !reqs[i]->complete)
			return 0;
	return 1;
}

static int finish_all(int count, coop_request_t **reqs, coop_status_t *sts)
{
	int i, err = COOP_SUCCESS;

	for (i = 0; i < count; i++)
		if (finish(&reqs[i], sts ? &sts[i] : NULL))
			err = COOP_ERR_IN_STATUS;
	return err;
}

/* The context of the first request not complete yet, or NULL. */
static struct coop_context *pending_ctx(int count, coop_request_t **reqs)
{
	int i;

	for (i = 0; i < count; i++)
		if (!is_idle(reqs[i]) && !reqs[i]->complete)
			return reqs[i]->ctx;
	return NULL;
}

/* The observer hears that a completion call for reqs begins. */
static void wait_began(int count, coop_request_t **reqs)
{
	int i;

	for (i = 0; i < count; i++)
		if (!is_idle(reqs[i]))
			coop_observe_wait_began(reqs[i]);
}

static int waitall_locked(int count, coop_request_t **reqs,
			  coop_status_t *statuses)
{
	struct coop_context *ctx, *last = NULL;

	if (check_array(count, reqs))
		return COOP_ERR_ARG;
	wait_began(count, reqs);
	while ((ctx = pending_ctx(count, reqs)) != NULL) {
		progress_blocked(ctx);
		last = ctx;
	}
	if (last)
		last->idle = 0;
	return finish_all(count, reqs, statuses);
}

int coop_waitall(int count, coop_request_t **reqs, coop_status_t *statuses)
{
	COOP_LOCKED(coop_req_array_ctx(count, reqs),
		    waitall_locked(count, reqs, statuses));
}

static int testall_locked(int count, coop_request_t **reqs, int *flag,
			  coop_status_t *statuses)
{
	struct coop_context *ctx;

	if (check_array(count, reqs) || !flag)
		return COOP_ERR_ARG;
	ctx = any_ctx(count, reqs);
	if (ctx && !all_done(count, reqs))
		coop_progress_once(ctx);
	*flag = all_done(count, reqs);
	return *flag ? finish_all(count, reqs, statuses) : COOP_SUCCESS;
}

int coop_testall(int count, coop_request_t **reqs, int *flag,
		 coop_status_t *statuses)
{
	COOP_LOCKED(coop_req_array_ctx(count, reqs),
		    testall_locked(count, reqs, flag, statuses));
}

/* Index of a completed active request, -1 none, -2 all idle. */
static int find_done(int count, coop_request_t **reqs)
{
	int i, active = 0;

	for (i = 0; i < count; i++) {
		if (is_idle(reqs[i]))
			continue;
		active = 1;
		if (reqs[i]->complete)
			return i;
	}
	return active ? -1 : -2;
}

static int testany_locked(int count, coop_request_t **reqs, int *index,
			  int *flag, coop_status_t *status)
{
	struct coop_context *ctx;
	int i;

	if (check_array(count, reqs) || !index || !flag)
		return COOP_ERR_ARG;
	ctx = any_ctx(count, reqs);
	if (ctx && find_done(count, reqs) == -1)
		coop_progress_once(ctx);
	i = find_done(count, reqs);
	*flag = i != -1;
	*index = i >= 0 ? i : -1;
	if (i < 0) {
		empty_status(status);
		return COOP_SUCCESS;
	}
	return finish(&reqs[i], status);
}

int coop_testany(int count, coop_request_t **reqs, int *index, int *flag,
		 coop_status_t *status)
{
	COOP_LOCKED(coop_req_array_ctx(count, reqs),
		    testany_locked(count, reqs, index, flag, status));
}

static int waitany_locked(int count, coop_request_t **reqs, int *index,
			  coop_status_t *status)
{
	struct coop_context *ctx;
	int i;

	if (check_array(count, reqs) || !index)
		return COOP_ERR_ARG;
	ctx = any_ctx(count, reqs);
	while ((i = find_done(count, reqs)) == -1)
		progress_blocked(ctx);
	if (ctx)
		ctx->idle = 0;
	*index = i >= 0 ? i : -1;
	if (i < 0) {
		empty_status(status);
		return COOP_SUCCESS;
	}
	return finish(&reqs[i], status);
}

int coop_waitany(int count, coop_request_t **reqs, int *index,
		 coop_status_t *status)
{
	COOP_LOCKED(coop_req_array_ctx(count, reqs),
		    waitany_locked(count, reqs, index, status));
}

static int collect(int count, coop_request_t **reqs, int *outcount,
		   int *indices, coop_status_t *sts)
{
	int i, n = 0, err = COOP_SUCCESS;

	if (find_done(count, reqs) == -2) {
		*outcount = -1;
		return COOP_SUCCESS;
	}
	for (i = 0; i < count; i++) {
		if (is_idle(reqs[i]) || !reqs[i]->complete)
			continue;
		if (finish(&reqs[i], sts ? &sts[n] : NULL))
			err = COOP_ERR_IN_STATUS;
		indices[n++] = i;
	}
	*outcount = n;
	return err;
}

static int waitsome_locked(int count, coop_request_t **reqs, int *outcount,
			   int *indices, coop_status_t *statuses)
{
	struct coop_context *ctx;

	if (check_array(count, reqs) || !outcount || (count && !indices))
		return COOP_ERR_ARG;
	ctx = any_ctx(count, reqs);
	while (find_done(count, reqs) == -1)
		progress_blocked(ctx);
	if (ctx)
		ctx->idle = 0;
	return collect(count, reqs, outcount, indices, statuses);
}

int coop_waitsome(int count, coop_request_t **reqs, int *outcount,
		  int *indices, coop_status_t *statuses)
{
	COOP_LOCKED(coop_req_array_ctx(count, reqs),
		    waitsome_locked(count, reqs, outcount, indices, statuses));
}

static int testsome_locked(int count, coop_request_t **reqs, int *outcount,
			   int *indices, coop_status_t *statuses)
{
	struct coop_context *ctx;

	if (check_array(count, reqs) || !outcount || (count && !indices))
		return COOP_ERR_ARG;
	ctx = any_ctx(count, reqs);
	if (ctx && find_done(count, reqs) == -1)
		coop_progress_once(ctx);
	return collect(count, reqs, outcount, indices, statuses);
}

int coop_testsome(int count, coop_request_t **reqs, int *outcount,
		  int *indices, coop_status_t *statuses)
{
	COOP_LOCKED(coop_req_array_ctx(count, reqs),
		    testsome_locked(count, reqs, outcount, indices, statuses));
}
