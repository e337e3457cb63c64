/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * xfer_int.h - what xfer.c (regions, copy jobs) and msg.c (messages)
 * of include/coopmpi_xfer.h share: the argument checks every call makes.
 */
#ifndef COOP_XFER_INT_H
#define COOP_XFER_INT_H

#include "mpi.h"

/* COOP_SUCCESS, COOP_ERR_ARG (NULL) or COOP_ERR_STATE (not connected). */
COOP_HIDDEN int coop_xfer_check_ctx(const struct coop_context *ctx);
/* As coop_xfer_check_ctx, then COOP_ERR_RANK (no such rank) or
 * COOP_ERR_STATE (peer not connected). */
COOP_HIDDEN int coop_xfer_check_peer(const struct coop_context *ctx,
				     int peer);

COOP_HIDDEN void coop_msg_layer_init(struct coop_context *ctx);

#endif
