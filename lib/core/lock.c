/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lock.c - the context's state lock (COOP_THREAD_MULTIPLE): set-up, and
 * letting it go around long operations.  Why one recursive lock that is
 * never held across a copy or a sleep: core.h, "threads".
 */
#include <time.h>

#include "core.h"

int coop_lock_init(struct coop_context *ctx)
{
	pthread_mutexattr_t ma;
	pthread_condattr_t ca;
	int rc;

	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	rc = pthread_mutex_init(&ctx->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	if (rc)
		return COOP_ERR_NOMEM;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	rc = pthread_cond_init(&ctx->done_cv, &ca);
	pthread_condattr_destroy(&ca);
	if (rc) {
		pthread_mutex_destroy(&ctx->lock);
		return COOP_ERR_NOMEM;
	}
	return COOP_SUCCESS;
}

void coop_lock_fini(struct coop_context *ctx)
{
	pthread_cond_destroy(&ctx->done_cv);
	pthread_mutex_destroy(&ctx->lock);
}

int coop_lock_drop(struct coop_context *ctx)
{
	if (!ctx->mt || ctx->lock_depth != 1)
		return 0;
	ctx->lock_depth = 0;
	pthread_mutex_unlock(&ctx->lock);
	return 1;
}

void coop_lock_retake(struct coop_context *ctx, int dropped)
{
	if (!dropped)
		return;
	pthread_mutex_lock(&ctx->lock);
	ctx->lock_depth = 1;
}

int coop_lock_wait_completion(struct coop_context *ctx, unsigned timeout_us)
{
	struct timespec ts;
	uint64_t ns;

	if (!ctx->mt || ctx->lock_depth != 1)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ns = (uint64_t)ts.tv_nsec + (uint64_t)timeout_us * 1000;
	ts.tv_sec += (time_t)(ns / 1000000000);
	ts.tv_nsec = (long)(ns % 1000000000);
	ctx->cv_waiters++;
	ctx->lock_depth = 0;
	pthread_cond_timedwait(&ctx->done_cv, &ctx->lock, &ts);
	ctx->lock_depth = 1;
	ctx->cv_waiters--;
	return 1;
}
