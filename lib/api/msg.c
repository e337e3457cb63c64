/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * msg.c - include/coopmpi_xfer.h's messages: the caller's own control
 * messages (one mailbox packet), messages with a payload in a bounce
 * slot of the sender's segment (the receiver's handler reads it in place,
 * the slot is free again when the handler returns), and the peers that
 * went.  The packets travel the context's rings in order with the
 * library's own, through the same backlog.
 */
#include <string.h>

#include "mpi.h"
#include "coopmpi_xfer.h"
#include "api_int.h"

_Static_assert(COOP_MSG_MAX == PKT_INLINE_MAX, "one packet");
_Static_assert(COOP_MSG_DATA_HDR_MAX ==
	       sizeof(((struct coop_pkt_user_data *)0)->hdr), "one packet");

/* Our packet of this type; its seq carries our instance, so that a
 * dynamic receiver can connect back to exactly this endpoint. */
static void user_hdr_init(struct coop_context *ctx, union coop_pkt *pkt,
			  uint8_t type)
{
	coop_hdr_init(ctx, &pkt->h, type, 0, 0);
	pkt->h.seq = ctx->instance;
}

/*
 * A dynamic endpoint may hear from a peer it never connected to (the
 * peer connected to us), or from a new endpoint that took its rank over:
 * connect to the sender now - its segment holds the payloads, and answers
 * go back to it.  0, or -1 when the sender is
 * gone (its rank taken over: the packet is stale).
 */
static int connect_sender(struct coop_context *ctx, const union coop_pkt *p)
{
	uint32_t addr[2] = { p->h.src, p->h.seq };
	int rank;

	const struct coop_peer *pe = &ctx->peers[p->h.src];

	if (!ctx->dynamic || (pe->connected && pe->instance == p->h.seq))
		return 0;
	if (coop_connect_peer(ctx, addr, sizeof(addr), &rank) == COOP_SUCCESS)
		return 0;
	coop_log(ctx->rank, "message from %u (instance %08x) dropped: it is "
		 "gone", p->h.src, p->h.seq);
	return -1;
}

static void on_user_msg(struct coop_context *ctx, const union coop_pkt *p)
{
	if (connect_sender(ctx, p))
		return;
	if (!ctx->msg_cb) {
		coop_log(ctx->rank, "message from %u dropped: no handler",
			 p->h.src);
		return;
	}
	ctx->msg_cb(ctx->msg_arg, p->h.src, p->eager.data,
		    COOP_MIN(p->h.ilen, (size_t)PKT_INLINE_MAX));
}

static int msg_set_handler_locked(coop_context_t *ctx, coop_msg_cb_t cb,
				  void *arg)
{
	if (!ctx)
		return COOP_ERR_ARG;
	ctx->msg_cb = cb;
	ctx->msg_arg = arg;
	return COOP_SUCCESS;
}

int coop_msg_set_handler(coop_context_t *ctx, coop_msg_cb_t cb, void *arg)
{
	COOP_LOCKED(ctx, msg_set_handler_locked(ctx, cb, arg));
}

static int msg_send_locked(coop_context_t *ctx, int peer, const void *msg,
			   size_t len)
{
	union coop_pkt pkt;
	int rc = coop_xfer_check_peer(ctx, peer);

	if (rc)
		return rc;
	if ((len && !msg) || len > COOP_MSG_MAX)
		return COOP_ERR_ARG;
	user_hdr_init(ctx, &pkt, PKT_USER);
	pkt.h.ilen = (uint8_t)len;
	if (len)
		memcpy(pkt.eager.data, msg, len);
	return coop_send_pkt(ctx, peer, &pkt);
}

int coop_msg_send(coop_context_t *ctx, int peer, const void *msg, size_t len)
{
	COOP_LOCKED(ctx, msg_send_locked(ctx, peer, msg, len));
}

static int msg_queued_locked(coop_context_t *ctx, int peer)
{
	int rc = coop_xfer_check_peer(ctx, peer);

	if (!rc && ctx->peers[peer].dead)
		rc = COOP_ERR_PEER_DEAD;
	return rc ? -rc : (int)ctx->peers[peer].nbacklog;
}

int coop_msg_queued(coop_context_t *ctx, int peer)
{
	COOP_LOCKED(ctx, msg_queued_locked(ctx, peer));
}

/* ---------------- messages with a payload ---------------- */

size_t coop_msg_data_max(coop_context_t *ctx)
{
	return coop_xfer_check_ctx(ctx) ? 0 : ctx->seg.bounce_size;
}

static int msg_buf_get_locked(coop_context_t *ctx, int peer,
			      coop_msg_buf_t *buf)
{
	int rc = coop_xfer_check_peer(ctx, peer), slot;

	if (rc)
		return rc;
	if (!buf)
		return COOP_ERR_ARG;
	if (ctx->peers[peer].dead)
		return COOP_ERR_PEER_DEAD;
	slot = coop_seg_bounce_alloc(&ctx->seg, 0);
	if (slot < 0)
		return COOP_ERR_NOMEM;
	/* reclaimed if the peer dies before it reads the slot */
	ctx->bslot_peer[slot] = (uint16_t)peer;
	ctx->bslot_user[slot] = 1;
	memset(buf, 0, sizeof(*buf));
	buf->data = coop_seg_bounce(&ctx->seg, (uint32_t)slot);
	buf->max = ctx->seg.bounce_size;
	buf->slot = (uint32_t)slot;
	return COOP_SUCCESS;
}

int coop_msg_buf_get(coop_context_t *ctx, int peer, coop_msg_buf_t *buf)
{
	COOP_LOCKED(ctx, msg_buf_get_locked(ctx, peer, buf));
}

/* Is buf one of our bounce slots, as coop_msg_buf_get filled it? */
static int own_buf(const struct coop_context *ctx, const coop_msg_buf_t *buf)
{
	return buf && coop_seg_slot_valid(&ctx->seg, buf->slot) &&
	       ctx->bslot_user[buf->slot] &&
	       buf->data == coop_seg_bounce(&ctx->seg, buf->slot) &&
	       buf->max == ctx->seg.bounce_size && !buf->reserved;
}

static int msg_buf_put_locked(coop_context_t *ctx, coop_msg_buf_t *buf)
{
	int rc = coop_xfer_check_ctx(ctx);

	if (rc)
		return rc;
	if (!own_buf(ctx, buf))
		return COOP_ERR_ARG;
	ctx->bslot_user[buf->slot] = 0;
	coop_seg_bounce_free(&ctx->seg, buf->slot);
	buf->data = NULL;
	return COOP_SUCCESS;
}

int coop_msg_buf_put(coop_context_t *ctx, coop_msg_buf_t *buf)
{
	COOP_LOCKED(ctx, msg_buf_put_locked(ctx, buf));
}

static int msg_buf_send_locked(coop_context_t *ctx, int peer,
			       coop_msg_buf_t *buf, const void *hdr,
			       size_t hlen, size_t len)
{
	union coop_pkt pkt;
	int rc = coop_xfer_check_peer(ctx, peer);

	if (rc)
		return rc;
	if (!own_buf(ctx, buf) || ctx->bslot_peer[buf->slot] != peer ||
	    len > buf->max || hlen > COOP_MSG_DATA_HDR_MAX || (hlen && !hdr))
		return COOP_ERR_ARG;
	user_hdr_init(ctx, &pkt, PKT_USER_DATA);
	pkt.h.ilen = (uint8_t)hlen;
	pkt.udata.slot = buf->slot;
	pkt.udata.len = (uint32_t)len;
	if (hlen)
		memcpy(pkt.udata.hdr, hdr, hlen);
	rc = coop_send_pkt(ctx, peer, &pkt);
	if (rc)
		return rc;	/* the slot stays the caller's */
	ctx->bslot_user[buf->slot] = 0;
	buf->data = NULL;
	return COOP_SUCCESS;
}

int coop_msg_buf_send(coop_context_t *ctx, int peer, coop_msg_buf_t *buf,
		      const void *hdr, size_t hlen, size_t len)
{
	COOP_LOCKED(ctx, msg_buf_send_locked(ctx, peer, buf, hdr, hlen, len));
}

static void on_user_data(struct coop_context *ctx, const union coop_pkt *p)
{
	struct coop_seg *seg = &ctx->peers[p->h.src].seg;
	uint32_t slot = p->udata.slot;

	if (connect_sender(ctx, p))
		return;
	if (!coop_seg_bounce_holds(seg, slot, p->udata.len) ||
	    p->h.ilen > COOP_MSG_DATA_HDR_MAX) {
		coop_peer_misbehaved(ctx, p->h.src, "message with data");
		if (coop_seg_slot_valid(seg, slot))
			coop_seg_bounce_free(seg, slot);
		return;
	}
	if (ctx->data_cb)
		ctx->data_cb(ctx->data_arg, p->h.src, p->udata.hdr, p->h.ilen,
			     coop_seg_bounce(seg, slot), p->udata.len);
	else
		coop_log(ctx->rank, "message with data from %u dropped: "
			 "no handler", p->h.src);
	coop_seg_bounce_free(seg, slot);
}

static int msg_set_data_handler_locked(coop_context_t *ctx,
				       coop_msg_data_cb_t cb, void *arg)
{
	if (!ctx)
		return COOP_ERR_ARG;
	ctx->data_cb = cb;
	ctx->data_arg = arg;
	return COOP_SUCCESS;
}

int coop_msg_set_data_handler(coop_context_t *ctx, coop_msg_data_cb_t cb,
			      void *arg)
{
	COOP_LOCKED(ctx, msg_set_data_handler_locked(ctx, cb, arg));
}

/* ---------------- waiting on a file descriptor ---------------- */

static int event_fd_locked(coop_context_t *ctx, int *fd)
{
	int rc = coop_xfer_check_ctx(ctx);

	if (rc)
		return rc;
	if (!fd)
		return COOP_ERR_ARG;
	if (!ctx->prov.ops->event_fd)
		return COOP_ERR_UNSUPPORTED;
	rc = ctx->prov.ops->event_fd(&ctx->prov);
	if (rc < 0)
		return coop_err_from_errno(rc);
	*fd = rc;
	return COOP_SUCCESS;
}

int coop_event_fd(coop_context_t *ctx, int *fd)
{
	COOP_LOCKED(ctx, event_fd_locked(ctx, fd));
}

static int event_arm_locked(coop_context_t *ctx)
{
	int rc = coop_xfer_check_ctx(ctx);

	if (rc)
		return rc;
	if (!ctx->prov.ops->event_arm)
		return COOP_ERR_UNSUPPORTED;
	/* the progress thread takes the messages: the fd would not fire */
	if (ctx->async || coop_work_pending(ctx))
		return COOP_ERR_STATE;
	ctx->event_armed = 1;
	if (ctx->prov.ops->event_arm(&ctx->prov, 1))
		return COOP_ERR_STATE;	/* a message is there */
	return COOP_SUCCESS;
}

int coop_event_arm(coop_context_t *ctx)
{
	COOP_LOCKED(ctx, event_arm_locked(ctx));
}

/* ---------------- peers that went ---------------- */

static void on_peer_gone(struct coop_context *ctx, int peer)
{
	if (ctx->peer_cb)
		ctx->peer_cb(ctx->peer_arg, peer, !ctx->peers[peer].said_bye);
}

static int msg_set_peer_handler_locked(coop_context_t *ctx, coop_peer_cb_t cb,
				       void *arg)
{
	unsigned i;

	if (!ctx)
		return COOP_ERR_ARG;
	for (i = 0; i < ctx->npeer_gone; i++)
		if (ctx->peer_gone[i] == on_peer_gone)
			break;
	if (i == ctx->npeer_gone) {
		if (i == COOP_PEER_GONE_MAX)
			return COOP_ERR_NOMEM;
		coop_on_peer_gone(ctx, on_peer_gone);
	}
	ctx->peer_cb = cb;
	ctx->peer_arg = arg;
	return COOP_SUCCESS;
}

int coop_msg_set_peer_handler(coop_context_t *ctx, coop_peer_cb_t cb,
			      void *arg)
{
	COOP_LOCKED(ctx, msg_set_peer_handler_locked(ctx, cb, arg));
}

static int peer_check_locked(coop_context_t *ctx, int peer)
{
	struct coop_peer *pe;
	int rc = coop_xfer_check_peer(ctx, peer);

	if (rc)
		return rc;
	pe = &ctx->peers[peer];
	if (!pe->dead && peer != ctx->rank &&
	    !ctx->prov.ops->peer_alive(&ctx->prov, peer))
		coop_peer_failed(ctx, peer);
	return pe->dead ? COOP_ERR_PEER_DEAD : COOP_SUCCESS;
}

int coop_peer_check(coop_context_t *ctx, int peer)
{
	COOP_LOCKED(ctx, peer_check_locked(ctx, peer));
}

/* The message handlers, registered at coop_init: a message that comes
 * before coop_msg_set_*handler is dropped (its slot freed), not left to
 * dispatch's "unknown packet type". */
void coop_msg_layer_init(struct coop_context *ctx)
{
	coop_am_register(ctx, PKT_USER, on_user_msg);
	coop_am_register(ctx, PKT_USER_DATA, on_user_data);
}
