/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * coop_ucx.h - the UCT transport "coop" (libuct_coop.so) for UCX 1.13:
 * objects shared by its memory domain (md.c), interface (iface.c) and
 * endpoints (ep.c).  Everything it moves goes through libcoopmpi's lower
 * layer (include/coopmpi_xfer.h): regions, copy jobs, COOP-p2p work
 * slots, the load counters and the mailbox rings of one dynamic endpoint
 * per memory domain.
 */
#ifndef COOP_UCX_H
#define COOP_UCX_H

#include <uct/api/uct.h>
#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <uct/sm/base/sm_iface.h>
#include <ucs/datastruct/list.h>

#include "coopmpi.h"
#include "coopmpi_xfer.h"

extern uct_component_t uct_coop_component;

/* What a packed / unpacked remote key holds: the owner's region and the
 * virtual address it starts at (UCT's remote addresses are the owner's). */
typedef struct uct_coop_rkey {
	uint64_t cookie;
	uint64_t length;
	uint64_t base;
} uct_coop_rkey_t;

/* A registration of ours; kept (cached) after its last deregistration. */
typedef struct uct_coop_memh {
	ucs_list_link_t list;	/* md->regs, most recently used first */
	void *addr;
	size_t length;
	coop_rkey_t key;
	unsigned refs;		/* registrations it stands for now */
} uct_coop_memh_t;

typedef struct uct_coop_md_config {
	uct_md_config_t super;
	char *domain;		/* UCX_COOP_DOMAIN: the node domain's name */
} uct_coop_md_config_t;

/* A copy job in flight: ours (comp) or the help we give a peer's GET. */
typedef struct uct_coop_op {
	ucs_list_link_t list;	/* md->ops */
	coop_request_t *req;
	uct_completion_t *comp;	/* NULL: helping */
	struct uct_coop_ep *ep;	/* NULL: helping, or the ep is gone */
	int peer;
	uint32_t slot;		/* helping: the peer's work slot */
	struct uct_coop_memh *reg;	/* ours to drop at the end, or NULL */
} uct_coop_op_t;

/* Interfaces of one md share its endpoint; messages name theirs. */
#define UCT_COOP_MAX_IFACES 16

typedef struct uct_coop_md {
	uct_md_t super;
	char *domain;
	uint64_t key;		/* the node domain (coop job key) */
	uint64_t node;		/* coop_reach_id(): whom it can connect */
	uint32_t wire;		/* ... and speaking which wire version */
	coop_context_t *ctx;	/* its dynamic endpoint, at first query */
	ucs_list_link_t regs;
	unsigned nunused;	/* cached registrations without refs */
	ucs_list_link_t ops;
	struct uct_coop_iface *ifaces[UCT_COOP_MAX_IFACES];
	struct uct_coop_iface *progressing;	/* whose progress runs now */
	unsigned nmsgs;		/* messages and peer events handled: what
				 * progress counts */
} uct_coop_md_t;

/*
 * The transport's messages through the md's endpoint: the first byte
 * says which.  Active messages name the receiving interface of the
 * peer's md; HELP/DONE (ep.c) concern the md's regions.
 */
enum {
	UCT_COOP_MSG_HELP = 1,	/* a reader asks the writer to help */
	UCT_COOP_MSG_DONE = 2,	/* the writer's help ended */
	UCT_COOP_MSG_AM = 3,	/* an active message (am.c) */
};

/* Who copies a put_zcopy (UCX_COOP_PUT; ep.c: put_flags). */
typedef enum {
	UCT_COOP_PUT_AUTO,	/* a DMA channel ("hw" engine) from DMA_MIN on */
	UCT_COOP_PUT_CPU,	/* the initiator's CPU */
	UCT_COOP_PUT_DMA,	/* the offload engine, from DMA_MIN on */
	UCT_COOP_PUT_STRIPE,	/* the CPU and the engine, from DMA_MIN on */
	UCT_COOP_PUT_LAST
} uct_coop_put_mode_t;

/* Their names (UCX_COOP_PUT's values; iface.c). */
extern const char *uct_coop_put_modes[];

/* The offload engine an interface found (iface->engine). */
enum {
	UCT_COOP_ENGINE_UNKNOWN = -1,	/* not asked yet */
	UCT_COOP_ENGINE_NONE,
	UCT_COOP_ENGINE_SOFT,		/* the driver's kernel threads */
	UCT_COOP_ENGINE_HW,		/* a DMA channel */
};

typedef struct uct_coop_iface_config {
	uct_sm_iface_config_t super;
	size_t hybrid_min;	/* UCX_COOP_HYBRID_MIN */
	unsigned put;		/* UCX_COOP_PUT: uct_coop_put_mode_t */
	size_t dma_min;		/* UCX_COOP_DMA_MIN */
} uct_coop_iface_config_t;

typedef struct uct_coop_iface {
	uct_sm_iface_t super;
	uct_coop_md_t *md;
	uint8_t id;		/* in md->ifaces */
	size_t hybrid_min;
	uct_coop_put_mode_t put;
	size_t dma_min;
	int engine;		/* the md endpoint's: UCT_COOP_ENGINE_* */
	ucs_list_link_t eps;	/* uct_coop_ep_t */
	unsigned npending;	/* eps with pending requests */
	unsigned ncheck_failed;	/* eps with check_failed */
	ucs_queue_head_t rxq;	/* AMs another interface's progress got */
	int epfd;		/* its event fd: the md endpoint's + wakefd,
				 * -1 when the endpoint has none */
	int wakefd;		/* rings when an AM lands in rxq while armed */
	uint8_t armed;		/* event_arm succeeded, no progress since */
	uint8_t woken;		/* wakefd was written, not read yet */
} uct_coop_iface_t;

/* An interface's address: its domain, its short libcoopmpi address
 * (UCP packs at most 63 bytes), which interface of that endpoint, and
 * what tells a peer whether it can connect (coop_reach_id). */
typedef struct uct_coop_iface_addr {
	uint64_t key;
	uint8_t addr[COOP_ADDR_SHORT_LEN];
	uint8_t iface;
	uint64_t node;
	uint32_t wire;
} UCS_S_PACKED uct_coop_iface_addr_t;

typedef struct uct_coop_ep {
	uct_base_ep_t super;
	int peer;		/* its rank in the domain */
	uint8_t peer_iface;	/* its interface there */
	uint8_t failed;		/* the peer died: reported, ops refused */
	uint8_t dispatching;	/* its pending queue runs: ops may go */
	uint8_t check_failed;	/* ep_check found the peer gone: report */
	uint8_t fenced;		/* later ops wait for the outstanding */
	unsigned outstanding;	/* ops not completed */
	ucs_list_link_t flushes;	/* uct_coop_flush_t waiting for them */
	ucs_list_link_t list;		/* iface->eps */
	ucs_queue_head_t pending;	/* uct_pending_req_t */
} uct_coop_ep_t;

static inline uct_coop_iface_t *uct_coop_ep_iface(const uct_coop_ep_t *ep)
{
	return ucs_derived_of(ep->super.super.iface, uct_coop_iface_t);
}

/* What refuses any operation of ep now, whatever its kind:
 * UCS_ERR_CONNECTION_RESET (the peer died), UCS_ERR_NO_RESOURCE (a fence
 * waits for earlier operations), else UCS_OK. */
static inline ucs_status_t uct_coop_ep_gate(const uct_coop_ep_t *ep)
{
	if (ep->failed)
		return UCS_ERR_CONNECTION_RESET;
	return ep->fenced ? UCS_ERR_NO_RESOURCE : UCS_OK;
}

/* md.c */
/* The md's endpoint of the domain, created on first use (NULL: failed,
 * logged). */
coop_context_t *uct_coop_md_ctx(uct_coop_md_t *md);
/* A registration of [address, address + length) in use (a kept one if
 * one holds it): NULL on failure, logged.  uct_coop_md_dereg ends the use. */
uct_coop_memh_t *uct_coop_md_reg(uct_coop_md_t *md, void *address,
				 size_t length);
void uct_coop_md_dereg(uct_coop_md_t *md, uct_coop_memh_t *m);
/* Our registration with this cookie that holds [off, off + len). */
uct_coop_memh_t *uct_coop_md_find_reg(uct_coop_md_t *md, uint64_t cookie,
				      uint64_t off, uint64_t len);

/* ep.c */
UCS_CLASS_DECLARE(uct_coop_ep_t, const uct_ep_params_t *);
UCS_CLASS_DECLARE_NEW_FUNC(uct_coop_ep_t, uct_ep_t, const uct_ep_params_t *);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_coop_ep_t, uct_ep_t);
ucs_status_t uct_coop_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
				   size_t iovcnt, uint64_t remote_addr,
				   uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t uct_coop_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
				   size_t iovcnt, uint64_t remote_addr,
				   uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t uct_coop_ep_flush(uct_ep_h tl_ep, unsigned flags,
			       uct_completion_t *comp);
/* Our copies are asynchronous: what comes after a fence waits until
 * the copies before it are complete (NO_RESOURCE until then). */
ucs_status_t uct_coop_ep_fence(uct_ep_h tl_ep, unsigned flags);
ucs_status_t uct_coop_iface_fence(uct_iface_h tl_iface, unsigned flags);
/* The md's ops and messages: events. */
unsigned uct_coop_md_progress(uct_coop_md_t *md);
/* A HELP or DONE message of len bytes from rank src. */
void uct_coop_md_help_msg(uct_coop_md_t *md, int src, const void *msg,
			  size_t len);

/* am.c */
/* Active messages of at most this many bytes (header included) travel
 * inside one mailbox message. */
#define UCT_COOP_AM_SHORT_MAX (COOP_MSG_MAX - 4)
ucs_status_t uct_coop_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
				  const void *payload, unsigned length);
ucs_status_t uct_coop_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
				      const uct_iov_t *iov, size_t iovcnt);
ssize_t uct_coop_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
			     uct_pack_callback_t pack_cb, void *arg,
			     unsigned flags);
ucs_status_t uct_coop_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
				     unsigned flags);
void uct_coop_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
			       void *arg);
ucs_status_t uct_coop_ep_check(uct_ep_h tl_ep, unsigned flags,
			       uct_completion_t *comp);
/* May a message go to the ep's peer now: UCS_OK; UCS_ERR_NO_RESOURCE
 * (requests pending before it, or messages backlogged);
 * UCS_ERR_CONNECTION_RESET (the peer died). */
ucs_status_t uct_coop_ep_send_status(uct_coop_ep_t *ep);
/* The md endpoint's handlers: plain messages, messages with a payload,
 * peers that went. */
void uct_coop_md_msg(void *arg, int src, const void *msg, size_t len);
void uct_coop_md_data_msg(void *arg, int src, const void *hdr, size_t hlen,
			  const void *data, size_t len);
void uct_coop_md_peer_gone(void *arg, int peer, int crashed);
/* The interface's share of progress: AMs queued for it, pending
 * requests of its eps. */
unsigned uct_coop_iface_am_progress(uct_coop_iface_t *iface);

/* iface.c */
/* An AM was queued on iface's rxq: wake its event fd if it is armed. */
void uct_coop_iface_wake(uct_coop_iface_t *iface);

#endif
