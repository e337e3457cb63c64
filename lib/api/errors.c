/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* errors.c - coop_strerror. */
#include "coopmpi.h"

static const char *const msgs[COOP_ERR_LAST] = {
	[COOP_SUCCESS] = "success",
	[COOP_ERR_ARG] = "invalid argument",
	[COOP_ERR_RANK] = "invalid rank",
	[COOP_ERR_TAG] = "invalid tag",
	[COOP_ERR_COMM] = "invalid context id",
	[COOP_ERR_COUNT] = "invalid buffer or size",
	[COOP_ERR_FLAGS] = "unknown or conflicting flags",
	[COOP_ERR_REQUEST] = "invalid request or request state",
	[COOP_ERR_TRUNCATE] = "message truncated",
	[COOP_ERR_PEER_DEAD] = "peer process died",
	[COOP_ERR_NOMEM] = "out of memory",
	[COOP_ERR_BUFFER] = "attached buffer too small",
	[COOP_ERR_IN_STATUS] = "error in status",
	[COOP_ERR_STATE] = "call not valid in this state",
	[COOP_ERR_PROVIDER] = "transport provider failure",
	[COOP_ERR_BOOTSTRAP] = "bootstrap rendezvous failed",
	[COOP_ERR_CONFIG] = "inconsistent or invalid configuration",
	[COOP_ERR_COPY] = "data copy failed",
	[COOP_ERR_UNSUPPORTED] = "operation not supported",
	[COOP_ERR_INTERNAL] = "internal error",
};

const char *coop_strerror(int err)
{
	if (err < 0 || err >= COOP_ERR_LAST || !msgs[err])
		return "unknown error";
	return msgs[err];
}
