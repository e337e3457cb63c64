/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * api_int.h - what the api files share: the argument checks of
 * include/coopmpi_xfer.h's calls (xfer.c: regions, copy jobs; msg.c:
 * messages), and the completion call the blocking calls end with.
 */
#ifndef COOP_API_INT_H
#define COOP_API_INT_H

#include <stdio.h>

#include "coll.h"

/* COOP_SUCCESS, COOP_ERR_ARG (NULL) or COOP_ERR_STATE (not connected). */
COOP_HIDDEN int coop_xfer_check_ctx(const struct coop_context *ctx);
/* As coop_xfer_check_ctx, then COOP_ERR_RANK (no such rank) or
 * COOP_ERR_STATE (peer not connected). */
COOP_HIDDEN int coop_xfer_check_peer(const struct coop_context *ctx,
				     int peer);

COOP_HIDDEN void coop_msg_layer_init(struct coop_context *ctx);

/* coop_wait() for a caller that holds the context's lock already (a
 * blocking call: coop_send, coop_recv, coop_mrecv): a nested public call
 * would hold it twice and could not let it go while it sleeps. */
COOP_HIDDEN int coop_wait_locked(coop_request_t **req, coop_status_t *status);
/* The end of a blocking call that sent to peer (coop_send, the blocking
 * collectives; peer < 0: none): make progress while our backlog for it
 * is too long (coop_backlog_full), as an MPI's blocking send waits for
 * its data to leave; the nonblocking calls must not wait. */
COOP_HIDDEN void coop_wait_backlog(struct coop_context *ctx, int peer);

/* coop_info --status (status.c): the module, the device, the provider
 * this process would get and why; 0 when that is the driver or the
 * provider COOP_PROVIDER asks for, 1 when not, 2 for refused settings. */
COOP_HIDDEN int coop_status_print(FILE *out);

#endif
