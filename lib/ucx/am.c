/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * am.c - the "coop" endpoint's active messages over libcoopmpi's mailbox
 * rings (the driver's with the kmod provider, shared-memory rings
 * otherwise), their pending requests, and the peers that die.
 *
 * AM_SHORT: id, header and payload inside one mailbox message.
 * AM_BCOPY: the packer writes straight into one of our shared bounce
 * slots; the mailbox message names it; the receiver's handler reads it
 * in place and the slot is free again when the handler returns.
 * Both keep the order of the ring, with each other and with the HELP /
 * DONE messages of the cooperative GETs.
 *
 * Back-pressure: a message that found the peer's ring full waits in
 * libcoopmpi's backlog; the ep then refuses more (NO_RESOURCE) until the
 * backlog is empty, as it does when no bounce slot is free, and UCP
 * queues on the ep (pending_add) what its progress later dispatches.
 *
 * A message for another interface of this md than the one progressing
 * (a UCP context with several workers) is copied to that interface's
 * queue, so AM handlers run only in their own worker's progress.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <stdlib.h>
#include <string.h>

#include <ucs/debug/log.h>

#include "coop_ucx.h"

/* What precedes an AM in its message. */
struct am_hdr {
	uint8_t type;		/* UCT_COOP_MSG_AM */
	uint8_t iface;		/* the receiving interface's id */
	uint8_t id;		/* AM id */
	uint8_t pad;
};

/* An inline AM: the UCT header, then the payload. */
struct am_short_msg {
	struct am_hdr h;
	uint8_t data[UCT_COOP_AM_SHORT_MAX];
};

_Static_assert(sizeof(struct am_short_msg) == COOP_MSG_MAX, "one message");
_Static_assert(sizeof(struct am_hdr) <= COOP_MSG_DATA_HDR_MAX, "header");

/* An AM kept for an interface whose progress did not run. */
typedef struct rx_desc {
	ucs_queue_elem_t elem;
	uint8_t id;
	unsigned length;
	uint8_t data[];
} rx_desc_t;

static ucs_status_t status_of(int rc)
{
	switch (rc) {
	case COOP_SUCCESS:
		return UCS_OK;
	case COOP_ERR_NOMEM:
		return UCS_ERR_NO_RESOURCE;
	case COOP_ERR_PEER_DEAD:
		return UCS_ERR_CONNECTION_RESET;
	default:
		return UCS_ERR_IO_ERROR;
	}
}

ucs_status_t uct_coop_ep_send_status(uct_coop_ep_t *ep)
{
	ucs_status_t status = uct_coop_ep_gate(ep);
	int queued;

	if (status != UCS_OK)
		return status;
	/* a peer that went (even cleanly) takes nothing more, pending or
	 * not: flushes do not wait for what cannot go */
	queued = coop_msg_queued(uct_coop_ep_iface(ep)->md->ctx, ep->peer);
	if (queued < 0)
		return status_of(-queued);
	if (!ep->dispatching && !ucs_queue_is_empty(&ep->pending))
		return UCS_ERR_NO_RESOURCE;
	return queued ? UCS_ERR_NO_RESOURCE : UCS_OK;
}

/* ---------------- sending ---------------- */

static void am_hdr_init(struct am_hdr *h, const uct_coop_ep_t *ep, uint8_t id)
{
	h->type = UCT_COOP_MSG_AM;
	h->iface = ep->peer_iface;
	h->id = id;
	h->pad = 0;
}

/* Send an inline AM of len bytes already in m->data. */
static ucs_status_t am_short_send(uct_coop_ep_t *ep, uint8_t id,
				  struct am_short_msg *m, size_t len)
{
	ucs_status_t status = uct_coop_ep_send_status(ep);

	if (status != UCS_OK)
		return status;
	am_hdr_init(&m->h, ep, id);
	status = status_of(coop_msg_send(uct_coop_ep_iface(ep)->md->ctx,
					 ep->peer, m, sizeof(m->h) + len));
	UCT_TL_EP_STAT_OP_IF_SUCCESS(status, &ep->super, AM, SHORT, len);
	return status;
}

ucs_status_t uct_coop_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
				  const void *payload, unsigned length)
{
	uct_coop_ep_t *ep = ucs_derived_of(tl_ep, uct_coop_ep_t);
	struct am_short_msg m;

	UCT_CHECK_AM_ID(id);
	UCT_CHECK_LENGTH(sizeof(header) + length, 0, UCT_COOP_AM_SHORT_MAX,
			 "am_short");
	memcpy(m.data, &header, sizeof(header));
	memcpy(m.data + sizeof(header), payload, length);
	return am_short_send(ep, id, &m, sizeof(header) + length);
}

ucs_status_t uct_coop_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
				      const uct_iov_t *iov, size_t iovcnt)
{
	uct_coop_ep_t *ep = ucs_derived_of(tl_ep, uct_coop_ep_t);
	struct am_short_msg m;
	size_t len = 0, i, n;

	UCT_CHECK_AM_ID(id);
	for (i = 0; i < iovcnt; i++) {
		n = iov[i].length * iov[i].count;
		UCT_CHECK_LENGTH(len + n, 0, UCT_COOP_AM_SHORT_MAX,
				 "am_short_iov");
		if (iov[i].count > 1 && iov[i].stride != iov[i].length)
			return UCS_ERR_UNSUPPORTED;
		memcpy(m.data + len, iov[i].buffer, n);
		len += n;
	}
	return am_short_send(ep, id, &m, len);
}

ssize_t uct_coop_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
			     uct_pack_callback_t pack_cb, void *arg,
			     unsigned flags)
{
	uct_coop_ep_t *ep = ucs_derived_of(tl_ep, uct_coop_ep_t);
	coop_context_t *ctx = uct_coop_ep_iface(ep)->md->ctx;
	ucs_status_t status = uct_coop_ep_send_status(ep);
	struct am_hdr h;
	coop_msg_buf_t buf;
	size_t len;
	int rc;

	(void)flags;
	UCT_CHECK_AM_ID(id);
	if (status != UCS_OK)
		return status;
	rc = coop_msg_buf_get(ctx, ep->peer, &buf);
	if (rc)
		return status_of(rc);
	len = pack_cb(buf.data, arg);
	ucs_assertv(len <= buf.max, "am_bcopy packed %zu > %zu", len, buf.max);
	am_hdr_init(&h, ep, id);
	rc = coop_msg_buf_send(ctx, ep->peer, &buf, &h, sizeof(h), len);
	if (rc) {
		coop_msg_buf_put(ctx, &buf);
		return status_of(rc);
	}
	UCT_TL_EP_STAT_OP(&ep->super, AM, BCOPY, len);
	return len;
}

/* ---------------- pending ---------------- */

ucs_status_t uct_coop_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
				     unsigned flags)
{
	uct_coop_ep_t *ep = ucs_derived_of(tl_ep, uct_coop_ep_t);

	(void)flags;
	/* always queued: dispatched by the next progress, in order */
	if (ucs_queue_is_empty(&ep->pending))
		uct_coop_ep_iface(ep)->npending++;
	uct_pending_req_queue_push(&ep->pending, req);
	UCT_TL_EP_STAT_PEND(&ep->super);
	return UCS_OK;
}

void uct_coop_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
			       void *arg)
{
	uct_coop_ep_t *ep = ucs_derived_of(tl_ep, uct_coop_ep_t);
	uct_pending_req_priv_queue_t *priv;

	if (ucs_queue_is_empty(&ep->pending))
		return;
	uct_pending_queue_purge(priv, &ep->pending, 1, cb, arg);
	uct_coop_ep_iface(ep)->npending--;
}

static void ep_dispatch(uct_coop_ep_t *ep)
{
	uct_pending_req_priv_queue_t *priv;

	ep->dispatching = 1;
	uct_pending_queue_dispatch(priv, &ep->pending,
				   uct_coop_ep_send_status(ep) == UCS_OK);
	ep->dispatching = 0;
	if (ucs_queue_is_empty(&ep->pending))
		uct_coop_ep_iface(ep)->npending--;
}

static unsigned dispatch_pending(uct_coop_iface_t *iface)
{
	uct_coop_ep_t *ep, *tmp;
	unsigned before = iface->npending;

	/* a request may destroy its ep (UCP discards eps from callbacks) */
	ucs_list_for_each_safe(ep, tmp, &iface->eps, list)
		if (!ucs_queue_is_empty(&ep->pending))
			ep_dispatch(ep);
	return before - iface->npending;
}

static unsigned report_checks(uct_coop_iface_t *iface);

/* ---------------- receiving ---------------- */

static void am_invoke(uct_coop_iface_t *iface, uint8_t id, const void *data,
		      size_t len)
{
	/* flags 0: UCP copies what it keeps; the data is ours (rx queue,
	 * the mailbox message) or the sender's bounce slot until return */
	uct_iface_invoke_am(&iface->super.super, id, (void *)data,
			    (unsigned)len, 0);
}

static void am_deliver(uct_coop_md_t *md, int src, const struct am_hdr *h,
		       const void *data, size_t len)
{
	uct_coop_iface_t *iface = h->iface < UCT_COOP_MAX_IFACES ?
				  md->ifaces[h->iface] : NULL;
	rx_desc_t *d;

	if (!iface || h->id >= UCT_AM_ID_MAX) {
		ucs_debug("coop: AM %u for interface %u from rank %d dropped",
			  h->id, h->iface, src);
		return;
	}
	if (iface == md->progressing) {
		am_invoke(iface, h->id, data, len);
		return;
	}
	d = malloc(sizeof(*d) + len);
	if (!d) {
		ucs_error("coop: AM %u from rank %d lost: no memory", h->id,
			  src);
		return;
	}
	d->id = h->id;
	d->length = (unsigned)len;
	memcpy(d->data, data, len);
	ucs_queue_push(&iface->rxq, &d->elem);
	uct_coop_iface_wake(iface);
}

void uct_coop_md_msg(void *arg, int src, const void *msg, size_t len)
{
	uct_coop_md_t *md = arg;
	struct am_hdr h;

	md->nmsgs++;
	if (len < sizeof(h)) {
		ucs_error("coop: message of %zu bytes from rank %d dropped",
			  len, src);
		return;
	}
	memcpy(&h, msg, sizeof(h));
	if (h.type == UCT_COOP_MSG_AM)
		am_deliver(md, src, &h, (const char *)msg + sizeof(h),
			   len - sizeof(h));
	else
		uct_coop_md_help_msg(md, src, msg, len);
}

void uct_coop_md_data_msg(void *arg, int src, const void *hdr, size_t hlen,
			  const void *data, size_t len)
{
	uct_coop_md_t *md = arg;
	struct am_hdr h;

	md->nmsgs++;
	if (hlen != sizeof(h)) {
		ucs_error("coop: message with %zu header bytes from rank %d "
			  "dropped", hlen, src);
		return;
	}
	memcpy(&h, hdr, sizeof(h));
	if (h.type != UCT_COOP_MSG_AM) {
		ucs_error("coop: message with data of type %u from rank %d "
			  "dropped", h.type, src);
		return;
	}
	am_deliver(md, src, &h, data, len);
}

unsigned uct_coop_iface_am_progress(uct_coop_iface_t *iface)
{
	unsigned n = 0;
	rx_desc_t *d;

	while (!ucs_queue_is_empty(&iface->rxq)) {
		d = ucs_queue_pull_elem_non_empty(&iface->rxq, rx_desc_t, elem);
		am_invoke(iface, d->id, d->data, d->length);
		free(d);
		n++;
	}
	if (iface->npending)
		n += dispatch_pending(iface);
	if (iface->ncheck_failed)
		n += report_checks(iface);
	return n;
}

/* ---------------- peer failure ---------------- */

/* The first ep of the md to the dead peer not yet told, or NULL. */
static uct_coop_ep_t *unreported_ep(uct_coop_md_t *md, int peer)
{
	uct_coop_ep_t *ep;
	unsigned i;

	for (i = 0; i < UCT_COOP_MAX_IFACES; i++) {
		if (!md->ifaces[i])
			continue;
		ucs_list_for_each(ep, &md->ifaces[i]->eps, list)
			if (ep->peer == peer && !ep->failed)
				return ep;
	}
	return NULL;
}

void uct_coop_md_peer_gone(void *arg, int peer, int crashed)
{
	uct_coop_md_t *md = arg;
	uct_coop_ep_t *ep;

	md->nmsgs++;
	/* a peer that closed cleanly owes nothing: its eps just end */
	if (!crashed)
		return;
	/* one at a time: the handler may destroy eps */
	while ((ep = unreported_ep(md, peer))) {
		ep->failed = 1;
		ucs_debug("coop: ep %p: rank %d died", ep, peer);
		uct_iface_handle_ep_err(ep->super.super.iface, &ep->super.super,
					UCS_ERR_ENDPOINT_TIMEOUT);
	}
}

/*
 * Asked whether the peer lives, a peer that has gone at all - crashed,
 * or closed cleanly - fails the ep; reported from the next progress step
 * of the interface.
 */
ucs_status_t uct_coop_ep_check(uct_ep_h tl_ep, unsigned flags,
			       uct_completion_t *comp)
{
	uct_coop_ep_t *ep = ucs_derived_of(tl_ep, uct_coop_ep_t);

	UCT_EP_KEEPALIVE_CHECK_PARAM(flags, comp);
	if (!ep->failed && !ep->check_failed &&
	    coop_peer_check(uct_coop_ep_iface(ep)->md->ctx, ep->peer) ==
	    COOP_ERR_PEER_DEAD) {
		ep->check_failed = 1;
		uct_coop_ep_iface(ep)->ncheck_failed++;
	}
	return UCS_OK;
}

/* Report the eps whose check found the peer gone. */
static unsigned report_checks(uct_coop_iface_t *iface)
{
	uct_coop_ep_t *ep;
	unsigned n = 0;

	/* one at a time: the handler may destroy eps */
	while (iface->ncheck_failed) {
		ucs_list_for_each(ep, &iface->eps, list)
			if (ep->check_failed)
				break;
		if (&ep->list == &iface->eps)
			break;
		ep->check_failed = 0;
		iface->ncheck_failed--;
		n++;
		if (ep->failed)
			continue;
		ep->failed = 1;
		uct_iface_handle_ep_err(&iface->super.super.super,
					&ep->super.super,
					UCS_ERR_ENDPOINT_TIMEOUT);
	}
	return n;
}
