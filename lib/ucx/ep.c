/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ep.c - the "coop" endpoint's rendezvous operations and the help that
 * makes them cooperative (COOP-p2p).
 *
 * GET_ZCOPY (the receiver of a UCP rendezvous reads the sender's buffer):
 * from UCX_COOP_HYBRID_MIN on, when our buffer can be a region of this md
 * (UCP's memh, else registered here for the read), the reader takes a
 * work slot split at the COOP-load share, tells the writer (HELP: slot,
 * length, both regions) and starts its copy job; the
 * writer's progress - this file's message handler, run by its interface's
 * progress callback - starts a job writing the other range.  Each side
 * copies its range first, then claims the other's chunks, so a writer
 * that does not progress leaves the reader copying everything, and both
 * jobs end when all bytes are in, without waiting for each other.  The
 * writer's DONE then gives the slot's second reference back.  Below
 * UCX_COOP_HYBRID_MIN the reader copies in the call and returns UCS_OK.
 * PUT_ZCOPY: the initiator writes everything (UCP's put scheme has no
 * reader to help yet) - its CPU, or from UCX_COOP_DMA_MIN on, as
 * UCX_COOP_PUT says, libcoopmpi's offload engine (COOP_XFER_ENGINE: the
 * coopmpi driver's DMA channel) or both (COOP_XFER_STRIPE); the
 * operation completes when the engine's copies completed, so UCP's ATP
 * after the fence or flush finds every byte in place.  Without an engine
 * the CPU copies (put_flags), in the call below UCX_COOP_HYBRID_MIN.
 * Active messages are am.c's.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <stdlib.h>
#include <string.h>

#include <ucs/debug/log.h>

#include "coop_ucx.h"

/* The reader's help request, and (type DONE, slot) the writer's end. */
struct coop_help {
	uint8_t type;		/* UCT_COOP_MSG_HELP or _DONE */
	uint8_t pad[3];
	uint32_t slot;
	uint64_t len;
	uint64_t src_cookie;	/* the writer's region (its rkey)... */
	uint64_t src_off;	/* ...and where the bytes are in it */
	uint64_t dst_cookie;	/* the reader's region... */
	uint64_t dst_off;	/* ...and where they go */
};

_Static_assert(sizeof(struct coop_help) <= COOP_MSG_MAX, "one message");

UCS_CLASS_INIT_FUNC(uct_coop_ep_t, const uct_ep_params_t *params)
{
	uct_coop_iface_t *iface = ucs_derived_of(params->iface,
						 uct_coop_iface_t);
	const uct_coop_iface_addr_t *a = (const void *)params->iface_addr;
	int rc;

	UCT_EP_PARAMS_CHECK_DEV_IFACE_ADDRS(params);
	UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super.super);
	ucs_list_head_init(&self->flushes);
	ucs_queue_head_init(&self->pending);
	self->outstanding = 0;
	self->failed = 0;
	self->dispatching = 0;
	self->check_failed = 0;
	self->fenced = 0;
	self->peer_iface = a->iface;
	rc = coop_connect_peer(iface->md->ctx, a->addr, sizeof(a->addr),
			       &self->peer);
	if (rc) {
		ucs_error("coop: cannot connect: %s", coop_strerror(rc));
		return UCS_ERR_UNREACHABLE;
	}
	ucs_list_add_tail(&iface->eps, &self->list);
	return UCS_OK;
}

UCS_CLASS_CLEANUP_FUNC(uct_coop_ep_t)
{
	uct_coop_iface_t *iface = ucs_derived_of(self->super.super.iface,
						 uct_coop_iface_t);
	uct_coop_op_t *op;

	/* its operations go on; they must not touch it when they end */
	ucs_list_for_each(op, &iface->md->ops, list)
		if (op->ep == self)
			op->ep = NULL;
	if (!ucs_queue_is_empty(&self->pending))
		iface->npending--;	/* its owner dropped them */
	if (self->check_failed)
		iface->ncheck_failed--;
	ucs_list_del(&self->list);
}

UCS_CLASS_DEFINE(uct_coop_ep_t, uct_base_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_coop_ep_t, uct_ep_t, const uct_ep_params_t *);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_coop_ep_t, uct_ep_t);

/* ---------------- operations ---------------- */

/* A flush waiting for an endpoint's operations. */
typedef struct uct_coop_flush {
	ucs_list_link_t list;
	uct_completion_t *comp;
} uct_coop_flush_t;

/* What a copy's libcoopmpi result is for UCP: a dead peer resets the
 * connection, any other failure is an I/O error. */
static ucs_status_t copy_status(int rc)
{
	if (rc == COOP_SUCCESS)
		return UCS_OK;
	return rc == COOP_ERR_PEER_DEAD ? UCS_ERR_CONNECTION_RESET :
					  UCS_ERR_IO_ERROR;
}

/* Start p's copy job; reg (may be NULL) is dropped when it ends. */
static ucs_status_t start_op(uct_coop_md_t *md, uct_coop_ep_t *ep,
			     const coop_xfer_params_t *p,
			     uct_completion_t *comp, uct_coop_memh_t *reg)
{
	uct_coop_op_t *op = calloc(1, sizeof(*op));
	int rc;

	if (!op)
		return UCS_ERR_NO_MEMORY;
	rc = coop_xfer_start(md->ctx, p, &op->req);
	if (rc) {
		free(op);
		ucs_error("coop: copy with rank %d failed to start: %s",
			  p->peer, coop_strerror(rc));
		return copy_status(rc);
	}
	op->comp = comp;
	op->ep = ep;
	op->peer = p->peer;
	op->slot = comp ? COOP_XFER_NO_SLOT : p->slot;	/* help: DONE due */
	op->reg = reg;
	if (ep)
		ep->outstanding++;
	ucs_list_add_tail(&md->ops, &op->list);
	return UCS_INPROGRESS;
}

/* The bytes of a zcopy operation's one iov (UCT: length x count). */
static size_t iov_bytes(const uct_iov_t *iov)
{
	return iov->length * iov->count;
}

/* One contiguous buffer, or none at all. */
static int iov_contiguous(const uct_iov_t *iov, size_t iovcnt)
{
	return !iovcnt || iov->count <= 1 || iov->stride == iov->length;
}

/* May a zcopy of iov start on ep: UCS_OK (*empty: it moves no byte), or
 * what the call returns - the endpoint's gate (a dead peer, a fence), or
 * UCS_ERR_UNSUPPORTED for a strided iov. */
static ucs_status_t zcopy_admit(const uct_coop_ep_t *ep,
				const uct_iov_t *iov, size_t iovcnt, int *empty)
{
	ucs_status_t status = uct_coop_ep_gate(ep);

	if (status != UCS_OK)
		return status;
	if (!iov_contiguous(iov, iovcnt))
		return UCS_ERR_UNSUPPORTED;
	*empty = !iovcnt || !iov_bytes(iov);
	return UCS_OK;
}

/*
 * p for a zcopy of iov with the peer's memory at remote_addr: UCS_OK, or
 * UCS_ERR_INVALID_PARAM for no rkey where keys are registrations.  Where
 * addresses are keys the md does not ask UCP for rkeys (md.c), UCP
 * passes UCT_INVALID_RKEY and the remote range is the key.
 */
static ucs_status_t xfer_params(coop_xfer_params_t *p,
				const uct_coop_ep_t *ep, unsigned dir,
				const uct_iov_t *iov, uint64_t remote_addr,
				uct_rkey_t rkey)
{
	const uct_coop_rkey_t *rk = (const uct_coop_rkey_t *)rkey;
	coop_context_t *ctx = uct_coop_ep_iface(ep)->md->ctx;

	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
	p->flags = dir;
	p->peer = ep->peer;
	p->slot = COOP_XFER_NO_SLOT;
	p->local = iov->buffer;
	p->len = iov_bytes(iov);
	if (rkey != UCT_INVALID_RKEY) {
		p->key.cookie = rk->cookie;
		p->key.length = rk->length;
		p->offset = remote_addr - rk->base;
	} else if (coop_xfer_addr_keys(ctx)) {
		p->key.cookie = remote_addr;
		p->key.length = p->len;
	} else {
		ucs_error("coop: a zcopy without an rkey (provider %s)",
			  coop_provider_name(ctx));
		return UCS_ERR_INVALID_PARAM;
	}
	return UCS_OK;
}

/*
 * Our buffer as a region the writer may write into: the memh UCP gave
 * (memory the user mapped, Open MPI's btl uct registers its own), else a
 * registration of ours, *taken, dropped when the read ends.
 */
static const uct_coop_memh_t *own_region(uct_coop_md_t *md,
					 const uct_iov_t *iov,
					 uct_coop_memh_t **taken)
{
	if (iov->memh != UCT_MEM_HANDLE_NULL)
		return iov->memh;
	*taken = uct_coop_md_reg(md, iov->buffer, iov_bytes(iov));
	return *taken;
}

/* A work slot for p split at share, and the writer asked to help into
 * region m: 0 and p->slot set, or -1 (no slot free, no message sent). */
static int send_help(coop_context_t *ctx, coop_xfer_params_t *p,
		     const uct_coop_memh_t *m, size_t share)
{
	struct coop_help h = { .type = UCT_COOP_MSG_HELP, .len = p->len,
			       .src_cookie = p->key.cookie,
			       .src_off = p->offset,
			       .dst_cookie = m->key.cookie,
			       .dst_off = (uintptr_t)p->local -
					  (uintptr_t)m->addr };

	if (coop_xfer_slot_alloc(ctx, p->peer, p->len, share, &h.slot))
		return -1;
	if (coop_msg_send(ctx, p->peer, &h, sizeof(h))) {
		/* no helper: neither reference will be dropped otherwise */
		coop_xfer_slot_release(ctx, p->peer, h.slot);
		coop_xfer_slot_release(ctx, p->peer, h.slot);
		return -1;
	}
	p->slot = h.slot;
	return 0;
}

/*
 * The writer asked to help with a GET of p->len bytes, split at the
 * COOP-load share: p->slot set, *taken the registration of our buffer
 * made for it (NULL if none).  Nothing when the message is small, the
 * writer copies for itself (the share is all of it), our buffer cannot
 * be a region or no slot is free.
 */
static void ask_help(uct_coop_iface_t *iface, coop_xfer_params_t *p,
		     const uct_iov_t *iov, uct_coop_memh_t **taken)
{
	uct_coop_md_t *md = iface->md;
	const uct_coop_memh_t *m;
	size_t share;

	if (p->len < iface->hybrid_min ||
	    coop_xfer_split(md->ctx, p->peer, p->len, &share) ||
	    share >= p->len)
		return;
	m = own_region(md, iov, taken);
	if (m && m->length && !send_help(md->ctx, p, m, share))
		return;
	if (*taken)
		uct_coop_md_dereg(md, *taken);
	*taken = NULL;
}

/*
 * Is p copied in the call, as vader's CMA copies: a message under
 * UCX_COOP_HYBRID_MIN, which this side's CPU copies alone (no writer
 * helps, no engine).  A job would cost an allocation, a request and a
 * progress round more for the same single copy.  (UCX's cma queues it
 * for its next progress call instead: cheaper than a job, no faster
 * than the call.)
 */
static int copy_now(const uct_coop_iface_t *iface, const coop_xfer_params_t *p)
{
	return p->slot == COOP_XFER_NO_SLOT &&
	       !(p->flags & (COOP_XFER_ENGINE | COOP_XFER_STRIPE)) &&
	       p->len < iface->hybrid_min;
}

/* p copied now: UCS_OK, or the error (the peer gone, a bad key). */
static ucs_status_t copy(uct_coop_md_t *md, const coop_xfer_params_t *p)
{
	int rc = coop_xfer_copy(md->ctx, p);

	if (rc != COOP_SUCCESS)
		ucs_error("coop: copy with rank %d failed: %s", p->peer,
			  coop_strerror(rc));
	return copy_status(rc);
}

ucs_status_t uct_coop_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
				   size_t iovcnt, uint64_t remote_addr,
				   uct_rkey_t rkey, uct_completion_t *comp)
{
	uct_coop_ep_t *ep = ucs_derived_of(tl_ep, uct_coop_ep_t);
	uct_coop_iface_t *iface = uct_coop_ep_iface(ep);
	uct_coop_memh_t *taken = NULL;
	coop_xfer_params_t p;
	ucs_status_t status;
	int empty;

	UCT_CHECK_IOV_SIZE(iovcnt, 1ul, "uct_coop_ep_get_zcopy");
	status = zcopy_admit(ep, iov, iovcnt, &empty);
	if (status != UCS_OK || empty)
		return status;
	status = xfer_params(&p, ep, COOP_XFER_GET, iov, remote_addr, rkey);
	if (status != UCS_OK)
		return status;
	ask_help(iface, &p, iov, &taken);
	if (copy_now(iface, &p))
		return copy(iface->md, &p);
	status = start_op(iface->md, ep, &p, comp, taken);
	if (status != UCS_INPROGRESS && p.slot != COOP_XFER_NO_SLOT) {
		/* the writer's DONE will drop the other reference */
		coop_xfer_slot_release(iface->md->ctx, p.peer, p.slot);
		if (taken)
			uct_coop_md_dereg(iface->md, taken);
	}
	return status;
}

/* Who copies a put of len bytes: 0 (the CPU), COOP_XFER_ENGINE or
 * COOP_XFER_STRIPE (UCX_COOP_PUT).  The engine is set up at the first
 * put that may use it. */
static unsigned put_flags(uct_coop_iface_t *iface, size_t len)
{
	const char *mode = uct_coop_put_modes[iface->put], *name = NULL;

	if (iface->put == UCT_COOP_PUT_CPU || len < iface->dma_min)
		return 0;
	if (iface->engine == UCT_COOP_ENGINE_UNKNOWN) {
		iface->engine = !coop_xfer_engine(iface->md->ctx, &name) ?
				UCT_COOP_ENGINE_NONE : !strcmp(name, "hw") ?
				UCT_COOP_ENGINE_HW : UCT_COOP_ENGINE_SOFT;
		if (iface->engine == UCT_COOP_ENGINE_NONE)
			ucs_info("coop: UCX_COOP_PUT=%s: no offload engine "
				 "(provider %s): the CPU copies put_zcopy",
				 mode,
				 coop_provider_name(iface->md->ctx));
		else
			ucs_info("coop: UCX_COOP_PUT=%s: offload engine %s%s",
				 mode, name,
				 iface->put == UCT_COOP_PUT_AUTO &&
				 iface->engine == UCT_COOP_ENGINE_SOFT ?
				 " not used (auto: DMA "
				 "channels only), the CPU copies put_zcopy" :
				 "");
	}
	switch (iface->put) {
	case UCT_COOP_PUT_DMA:
		return iface->engine != UCT_COOP_ENGINE_NONE ?
		       COOP_XFER_ENGINE : 0;
	case UCT_COOP_PUT_STRIPE:
		return iface->engine != UCT_COOP_ENGINE_NONE ?
		       COOP_XFER_STRIPE : 0;
	default:	/* auto */
		return iface->engine == UCT_COOP_ENGINE_HW ?
		       COOP_XFER_ENGINE : 0;
	}
}

ucs_status_t uct_coop_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
				   size_t iovcnt, uint64_t remote_addr,
				   uct_rkey_t rkey, uct_completion_t *comp)
{
	uct_coop_ep_t *ep = ucs_derived_of(tl_ep, uct_coop_ep_t);
	uct_coop_iface_t *iface;
	coop_xfer_params_t p;
	ucs_status_t status;
	int empty;

	UCT_CHECK_IOV_SIZE(iovcnt, 1ul, "uct_coop_ep_put_zcopy");
	iface = uct_coop_ep_iface(ep);
	status = zcopy_admit(ep, iov, iovcnt, &empty);
	if (status != UCS_OK || empty)
		return status;
	status = xfer_params(&p, ep, COOP_XFER_PUT, iov, remote_addr, rkey);
	if (status != UCS_OK)
		return status;
	p.flags |= put_flags(iface, p.len);
	if (copy_now(iface, &p))
		return copy(iface->md, &p);
	return start_op(iface->md, ep, &p, comp, NULL);
}

ucs_status_t uct_coop_ep_flush(uct_ep_h tl_ep, unsigned flags,
			       uct_completion_t *comp)
{
	uct_coop_ep_t *ep = ucs_derived_of(tl_ep, uct_coop_ep_t);
	ucs_status_t status = uct_coop_ep_send_status(ep);
	uct_coop_flush_t *f;

	(void)flags;
	/* a message still pending or backlogged is not sent yet; UCP
	 * queues the flush behind it */
	if (status == UCS_ERR_NO_RESOURCE)
		return status;
	if (!ep->outstanding)
		return UCS_OK;
	if (comp) {
		f = malloc(sizeof(*f));
		if (!f)
			return UCS_ERR_NO_MEMORY;
		f->comp = comp;
		ucs_list_add_tail(&ep->flushes, &f->list);
	}
	return UCS_INPROGRESS;
}

ucs_status_t uct_coop_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
	uct_coop_ep_t *ep = ucs_derived_of(tl_ep, uct_coop_ep_t);

	(void)flags;
	if (ep->outstanding)
		ep->fenced = 1;
	UCT_TL_EP_STAT_FENCE(&ep->super);
	return UCS_OK;
}

ucs_status_t uct_coop_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
	uct_coop_iface_t *iface = ucs_derived_of(tl_iface, uct_coop_iface_t);
	uct_coop_ep_t *ep;

	ucs_list_for_each(ep, &iface->eps, list)
		uct_coop_ep_fence(&ep->super.super, flags);
	UCT_TL_IFACE_STAT_FENCE(&iface->super.super);
	return UCS_OK;
}

/* ---------------- help, completion ---------------- */

/* Do we copy for transfers of our own (libcoopmpi's count), or did just
 * before?  When it cannot be told: yes, so that no help is given. */
static int md_busy(uct_coop_md_t *md)
{
	int rank, busy;

	return coop_rank(md->ctx, &rank) ||
	       coop_xfer_busy(md->ctx, rank, &busy) || busy;
}

/*
 * Our memory that a reader's HELP names, or NULL.  Where keys are
 * registrations, only a region of ours, as its rkey named it.  Where
 * addresses are keys the reader names our buffer by its address (UCP
 * registered nothing): a peer of the domain may read all our memory
 * anyway (process_vm_readv), and what we copy from it goes only to the
 * reader.
 */
static void *help_source(uct_coop_md_t *md, const struct coop_help *h)
{
	uct_coop_memh_t *m;

	if (coop_xfer_addr_keys(md->ctx))
		return (void *)(uintptr_t)(h->src_cookie + h->src_off);
	m = uct_coop_md_find_reg(md, h->src_cookie, h->src_off, h->len);
	return m ? (char *)m->addr + h->src_off : NULL;
}

/*
 * The writer's part of a peer's cooperative GET.  A writer with copies of
 * its own in flight or just done (both ranks sending at once: an
 * exchange, a ring) has no idle CPU to give: it declines at once, and the
 * reader copies all of it, as a single-copy transport would.
 */
static void help_peer_read(uct_coop_md_t *md, int src,
			   const struct coop_help *h)
{
	void *source = help_source(md, h);
	coop_xfer_params_t p = {
		.size = sizeof(p), .flags = COOP_XFER_PUT, .peer = src,
		.slot = h->slot, .len = h->len,
		.key = { h->dst_cookie, h->dst_off + h->len },
		.offset = h->dst_off,
	};
	struct coop_help done = { .type = UCT_COOP_MSG_DONE, .slot = h->slot };

	if (source && !md_busy(md)) {
		p.local = source;
		if (start_op(md, NULL, &p, NULL, NULL) == UCS_INPROGRESS)
			return;	/* DONE when the job ends */
	}
	coop_msg_send(md->ctx, src, &done, sizeof(done));
}

void uct_coop_md_help_msg(uct_coop_md_t *md, int src, const void *msg,
			  size_t len)
{
	struct coop_help h;

	if (len != sizeof(h)) {
		ucs_error("coop: message of %zu bytes from rank %d dropped",
			  len, src);
		return;
	}
	memcpy(&h, msg, sizeof(h));
	if (h.type == UCT_COOP_MSG_HELP)
		help_peer_read(md, src, &h);
	else if (h.type == UCT_COOP_MSG_DONE)
		coop_xfer_slot_release(md->ctx, src, h.slot);
	else
		ucs_error("coop: message of type %u from rank %d dropped",
			  h.type, src);
}

static void ep_op_done(uct_coop_ep_t *ep)
{
	uct_coop_flush_t *f, *tmp;

	if (--ep->outstanding)
		return;
	ep->fenced = 0;
	ucs_list_for_each_safe(f, tmp, &ep->flushes, list) {
		ucs_list_del(&f->list);
		uct_invoke_completion(f->comp, UCS_OK);
		free(f);
	}
}

static void op_done(uct_coop_md_t *md, uct_coop_op_t *op, int err)
{
	struct coop_help done = { .type = UCT_COOP_MSG_DONE, .slot = op->slot };
	ucs_status_t status = copy_status(err);

	ucs_list_del(&op->list);
	if (!op->comp)		/* our help: the reader may reuse its slot */
		coop_msg_send(md->ctx, op->peer, &done, sizeof(done));
	if (err)
		ucs_debug("coop: copy with rank %d: %s", op->peer,
			  coop_strerror(err));
	if (op->reg)
		uct_coop_md_dereg(md, op->reg);
	if (op->ep)
		ep_op_done(op->ep);
	if (op->comp)
		uct_invoke_completion(op->comp, status);
	free(op);
}

/* How many of the oldest ops one progress call looks at. */
#define UCT_COOP_TEST_BATCH 64

/*
 * The ops that ended, among the oldest UCT_COOP_TEST_BATCH, completed;
 * one step of libcoopmpi's progress (a chunk copied, the mailbox
 * looked at) only when none had ended.  Testing each op with coop_test
 * would run a step, and copy a chunk, per op in flight: with many reads
 * outstanding (a window of both ranks' messages) one call copied them
 * all while the caller's other transports waited - Open MPI's ob1,
 * whose vader carries the headers and FINs of those reads.
 */
static unsigned ops_done(uct_coop_md_t *md)
{
	coop_request_t *reqs[UCT_COOP_TEST_BATCH];
	uct_coop_op_t *ops[UCT_COOP_TEST_BATCH], *op;
	coop_status_t st[UCT_COOP_TEST_BATCH];
	int idx[UCT_COOP_TEST_BATCH], count = 0, ended = 0, rc, i;

	ucs_list_for_each(op, &md->ops, list) {
		if (count == UCT_COOP_TEST_BATCH)
			break;
		ops[count] = op;
		reqs[count++] = op->req;
	}
	if (!count)	/* coop_testsome would say -1: none active */
		return 0;
	/* COOP_ERR_IN_STATUS: some ended with an error, in st[] */
	rc = coop_testsome(count, reqs, &ended, idx, st);
	if (rc != COOP_SUCCESS && rc != COOP_ERR_IN_STATUS)
		return 0;
	for (i = 0; i < ended; i++) {
		ops[idx[i]]->req = reqs[idx[i]];	/* freed: NULL */
		op_done(md, ops[idx[i]], st[i].error);
	}
	return ended > 0 ? (unsigned)ended : 0;
}

unsigned uct_coop_md_progress(uct_coop_md_t *md)
{
	unsigned nmsgs = md->nmsgs, n;

	if (ucs_list_is_empty(&md->ops))
		coop_progress(md->ctx);
	n = ops_done(md);
	return n + md->nmsgs - nmsgs;	/* UCP sleeps when progress says 0 */
}
