/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * iface.c - the "coop" interface: the transport's registration (refused
 * when the running UCX is not the one it was built against), its
 * capabilities (active messages: AM_SHORT, AM_BCOPY; rendezvous:
 * GET_ZCOPY and PUT_ZCOPY; connect to iface; peer failure; events on
 * the md endpoint's fd), its address (domain key + libcoopmpi address
 * blob + interface id + reach id) and reachability (same node, domain and
 * reach id), and its progress (enabled by UCP while the interface has
 * endpoints: a rank helps a peer's cooperative GET from it, and a rank
 * that does not progress leaves the reader copying all).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <ucs/debug/log.h>
#include <uct/api/version.h>

#include "coop_ucx.h"

const char *uct_coop_put_modes[] = {
	[UCT_COOP_PUT_AUTO] = "auto",
	[UCT_COOP_PUT_CPU] = "cpu",
	[UCT_COOP_PUT_DMA] = "dma",
	[UCT_COOP_PUT_STRIPE] = "stripe",
	[UCT_COOP_PUT_LAST] = NULL
};

static ucs_config_field_t uct_coop_iface_config_table[] = {
	/* the memory bandwidth of two copiers (COOP-p2p) */
	{"SM_", "BW=22290MBs", NULL,
	 ucs_offsetof(uct_coop_iface_config_t, super),
	 UCS_CONFIG_TYPE_TABLE(uct_sm_iface_config_table)},

	/* the old name of HYBRID_MIN, read first so that the new one wins */
	{"COOP_MIN", NULL, NULL,
	 ucs_offsetof(uct_coop_iface_config_t, hybrid_min),
	 UCS_CONFIG_TYPE_MEMUNITS},

	{"HYBRID_MIN", "1m",
	 "Smaller GET_ZCOPY operations (and PUT_ZCOPY by the CPU) are copied\n"
	 "by the initiator alone, in the call; from this size\n"
	 "on the writer helps (COOP-p2p, split by the load counters),\n"
	 "as libcoopmpi's COOP_HYBRID_MIN.  Its old name, UCX_COOP_COOP_MIN,\n"
	 "still sets it, with a warning.",
	 ucs_offsetof(uct_coop_iface_config_t, hybrid_min),
	 UCS_CONFIG_TYPE_MEMUNITS},

	{"PUT", "auto",
	 "Who copies a PUT_ZCOPY (UCX_RNDV_SCHEME=put_zcopy) of UCX_COOP_DMA_MIN\n"
	 "bytes or more; smaller ones, and all without an offload engine (shm\n"
	 "provider, coopmpi.ko dma=off), are copied by the initiator's CPU:\n"
	 " auto   - the offload engine when it is a DMA channel (coopmpi.ko's\n"
	 "          \"hw\" engine), else the CPU (not the \"soft\" engine, whose\n"
	 "          kernel threads copy on the node's own CPUs).\n"
	 " cpu    - the CPU.\n"
	 " dma    - the offload engine, hw or soft (no CPU copy).\n"
	 " stripe - the CPU and the engine at the same time, split as\n"
	 "          libcoopmpi's COOP_RNDV=stripe (COOP_STRIPE_RATIO or measured).",
	 ucs_offsetof(uct_coop_iface_config_t, put),
	 UCS_CONFIG_TYPE_ENUM(uct_coop_put_modes)},

	{"DMA_MIN", "1m",
	 "Smaller PUT_ZCOPY operations are copied by the CPU, whatever\n"
	 "UCX_COOP_PUT says.",
	 ucs_offsetof(uct_coop_iface_config_t, dma_min),
	 UCS_CONFIG_TYPE_MEMUNITS},

	{NULL}
};

static ucs_status_t uct_coop_iface_get_address(uct_iface_t *tl_iface,
					       uct_iface_addr_t *addr)
{
	uct_coop_iface_t *iface = ucs_derived_of(tl_iface, uct_coop_iface_t);
	uct_coop_iface_addr_t a = { .key = iface->md->key,
				    .iface = iface->id,
				    .node = iface->md->node,
				    .wire = iface->md->wire };
	size_t len = sizeof(a.addr);

	if (coop_address_short(iface->md->ctx, a.addr, &len))
		return UCS_ERR_IO_ERROR;
	memcpy(addr, &a, sizeof(a));
	return UCS_OK;
}

/*
 * Same machine (UCX's boot id test), same job's domain, and same scope:
 * /dev/shm and PID namespace (containers on one host share the boot id).
 * A peer of this node whose library speaks another wire version is
 * unreachable too, and said so once: UCP then takes another transport.
 */
static int uct_coop_iface_is_reachable(const uct_iface_h tl_iface,
				       const uct_device_addr_t *dev_addr,
				       const uct_iface_addr_t *tl_iface_addr)
{
	uct_coop_iface_t *iface = ucs_derived_of(tl_iface, uct_coop_iface_t);
	const uct_coop_iface_addr_t *a = (const void *)tl_iface_addr;
	static int warned;

	if (!uct_sm_iface_is_reachable(tl_iface, dev_addr, tl_iface_addr) ||
	    a->key != iface->md->key || a->node != iface->md->node)
		return 0;
	if (a->wire == iface->md->wire)
		return 1;
	if (!warned++)
		ucs_warn("coop: a peer's libcoopmpi speaks wire version %u, "
			 "this one %u: not using coop with it (install one "
			 "coopmpi release on the node)", a->wire,
			 iface->md->wire);
	return 0;
}

/*
 * Events.  The md's endpoint has one fd (the driver's endpoint file, or
 * the shm provider's socket) for all its interfaces; an interface whose
 * progress is off (UCP's adaptive progress) sleeps while a sibling's
 * progress may take its AMs off the ring into its rxq.  So each
 * interface's event fd is an epoll set of the endpoint's fd and an
 * eventfd of its own that rings then.
 */
static void close_events(uct_coop_iface_t *iface)
{
	if (iface->epfd >= 0)
		close(iface->epfd);
	if (iface->wakefd >= 0)
		close(iface->wakefd);
	iface->epfd = iface->wakefd = -1;
}

static ucs_status_t init_events(uct_coop_iface_t *iface)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fd;

	iface->epfd = iface->wakefd = -1;
	if (coop_event_fd(iface->md->ctx, &fd) != COOP_SUCCESS)
		return UCS_OK;	/* no events: iface_query says so */
	iface->epfd = epoll_create1(EPOLL_CLOEXEC);
	iface->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (iface->epfd >= 0 && iface->wakefd >= 0 &&
	    !epoll_ctl(iface->epfd, EPOLL_CTL_ADD, fd, &ev) &&
	    !epoll_ctl(iface->epfd, EPOLL_CTL_ADD, iface->wakefd, &ev))
		return UCS_OK;
	ucs_error("coop: event fd of interface %u: %m", iface->id);
	close_events(iface);
	return UCS_ERR_IO_ERROR;
}

void uct_coop_iface_wake(uct_coop_iface_t *iface)
{
	uint64_t one = 1;

	if (!iface->armed || iface->woken)
		return;
	if (write(iface->wakefd, &one, sizeof(one)) < 0)
		ucs_debug("coop: wake of interface %u: %m", iface->id);
	iface->woken = 1;
}

static ucs_status_t uct_coop_iface_event_fd_get(uct_iface_h tl_iface,
						int *fd_p)
{
	uct_coop_iface_t *iface = ucs_derived_of(tl_iface, uct_coop_iface_t);

	if (iface->epfd < 0)
		return UCS_ERR_UNSUPPORTED;
	*fd_p = iface->epfd;
	return UCS_OK;
}

/*
 * Sleeping on the fd is safe only when nothing waits for our progress:
 * the fd fires on messages, not on copies completing, pending requests
 * or peers found gone by ep_check.
 */
static ucs_status_t uct_coop_iface_event_arm(uct_iface_h tl_iface,
					     unsigned events)
{
	uct_coop_iface_t *iface = ucs_derived_of(tl_iface, uct_coop_iface_t);
	uint64_t rings;
	int rc;

	(void)events;	/* completions and messages: both need progress */
	if (iface->epfd < 0)
		return UCS_ERR_UNSUPPORTED;
	if (iface->woken && read(iface->wakefd, &rings, sizeof(rings)) < 0 &&
	    errno != EAGAIN)
		return UCS_ERR_IO_ERROR;
	iface->woken = 0;
	if (!ucs_list_is_empty(&iface->md->ops) ||
	    !ucs_queue_is_empty(&iface->rxq) || iface->npending ||
	    iface->ncheck_failed)
		return UCS_ERR_BUSY;
	rc = coop_event_arm(iface->md->ctx);
	if (rc == COOP_SUCCESS) {
		iface->armed = 1;
		return UCS_OK;
	}
	return rc == COOP_ERR_STATE ? UCS_ERR_BUSY : UCS_ERR_IO_ERROR;
}

static ucs_status_t uct_coop_iface_query(uct_iface_h tl_iface,
					 uct_iface_attr_t *attr)
{
	uct_coop_iface_t *iface = ucs_derived_of(tl_iface, uct_coop_iface_t);

	uct_base_iface_query(&iface->super.super, attr);
	attr->cap.put.max_zcopy = SIZE_MAX;
	attr->cap.put.opt_zcopy_align = 1;
	attr->cap.put.align_mtu = 1;
	attr->cap.put.max_iov = 1;
	attr->cap.get.max_zcopy = SIZE_MAX;
	attr->cap.get.opt_zcopy_align = 1;
	attr->cap.get.align_mtu = 1;
	attr->cap.get.max_iov = 1;
	attr->cap.am.max_short = UCT_COOP_AM_SHORT_MAX;
	attr->cap.am.max_bcopy = coop_msg_data_max(iface->md->ctx);
	attr->cap.am.opt_zcopy_align = 1;
	attr->cap.am.align_mtu = 1;
	attr->cap.am.max_iov = 8;
	attr->device_addr_len = uct_sm_iface_get_device_addr_len();
	attr->iface_addr_len = sizeof(uct_coop_iface_addr_t);
	attr->ep_addr_len = 0;
	attr->max_conn_priv = 0;
	if (iface->epfd >= 0)
		attr->cap.event_flags = UCT_IFACE_FLAG_EVENT_SEND_COMP |
					UCT_IFACE_FLAG_EVENT_RECV |
					UCT_IFACE_FLAG_EVENT_FD;
	attr->cap.flags = UCT_IFACE_FLAG_AM_SHORT | UCT_IFACE_FLAG_AM_BCOPY |
			  UCT_IFACE_FLAG_GET_ZCOPY | UCT_IFACE_FLAG_PUT_ZCOPY |
			  UCT_IFACE_FLAG_PENDING | UCT_IFACE_FLAG_CB_SYNC |
			  UCT_IFACE_FLAG_CONNECT_TO_IFACE |
			  UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE |
			  UCT_IFACE_FLAG_EP_CHECK;
	/* a little behind posix's 80 ns: where both are, UCP keeps posix
	 * for messages and coop for the rendezvous */
	attr->latency = ucs_linear_func_make(100e-9, 0);
	attr->overhead = 2e-6;
	attr->bandwidth.dedicated = iface->super.config.bandwidth;
	attr->bandwidth.shared = 0;
	attr->priority = 0;
	return UCS_OK;
}

static unsigned uct_coop_iface_progress(uct_iface_h tl_iface)
{
	uct_coop_iface_t *iface = ucs_derived_of(tl_iface, uct_coop_iface_t);
	uct_coop_md_t *md = iface->md;
	uct_coop_iface_t *outer = md->progressing;
	unsigned n;

	iface->armed = 0;
	md->progressing = iface;	/* its AMs are delivered at once */
	n = uct_coop_md_progress(md);
	n += uct_coop_iface_am_progress(iface);
	md->progressing = outer;
	return n;
}

static ucs_status_t uct_coop_iface_flush(uct_iface_h tl_iface, unsigned flags,
					 uct_completion_t *comp)
{
	uct_coop_iface_t *iface = ucs_derived_of(tl_iface, uct_coop_iface_t);
	uct_coop_op_t *op;
	uct_coop_ep_t *ep;

	(void)flags;
	if (comp)
		return UCS_ERR_UNSUPPORTED;
	ucs_list_for_each(op, &iface->md->ops, list)
		if (op->comp)	/* ours, not the help we give */
			return UCS_INPROGRESS;
	ucs_list_for_each(ep, &iface->eps, list)
		if (uct_coop_ep_send_status(ep) == UCS_ERR_NO_RESOURCE)
			return UCS_INPROGRESS;
	return UCS_OK;
}

static UCS_CLASS_DECLARE_DELETE_FUNC(uct_coop_iface_t, uct_iface_t);

static uct_iface_ops_t uct_coop_iface_tl_ops = {
	.ep_am_short = uct_coop_ep_am_short,
	.ep_am_short_iov = uct_coop_ep_am_short_iov,
	.ep_am_bcopy = uct_coop_ep_am_bcopy,
	.ep_put_zcopy = uct_coop_ep_put_zcopy,
	.ep_get_zcopy = uct_coop_ep_get_zcopy,
	.ep_pending_add = uct_coop_ep_pending_add,
	.ep_pending_purge = uct_coop_ep_pending_purge,
	.ep_check = uct_coop_ep_check,
	.ep_flush = uct_coop_ep_flush,
	.ep_fence = uct_coop_ep_fence,
	.ep_create = UCS_CLASS_NEW_FUNC_NAME(uct_coop_ep_t),
	.ep_destroy = UCS_CLASS_DELETE_FUNC_NAME(uct_coop_ep_t),
	.iface_flush = uct_coop_iface_flush,
	.iface_fence = uct_coop_iface_fence,
	.iface_progress_enable = uct_base_iface_progress_enable,
	.iface_progress_disable = uct_base_iface_progress_disable,
	.iface_progress = uct_coop_iface_progress,
	.iface_event_fd_get = uct_coop_iface_event_fd_get,
	.iface_event_arm = uct_coop_iface_event_arm,
	.iface_close = UCS_CLASS_DELETE_FUNC_NAME(uct_coop_iface_t),
	.iface_query = uct_coop_iface_query,
	.iface_get_address = uct_coop_iface_get_address,
	.iface_get_device_address = uct_sm_iface_get_device_address,
	.iface_is_reachable = uct_coop_iface_is_reachable,
};

static uct_iface_internal_ops_t uct_coop_iface_internal_ops = {
	.iface_estimate_perf = uct_base_iface_estimate_perf,
	.iface_vfs_refresh = (uct_iface_vfs_refresh_func_t)ucs_empty_function,
	.ep_query = (uct_ep_query_func_t)ucs_empty_function_return_unsupported,
	.ep_invalidate =
		(uct_ep_invalidate_func_t)ucs_empty_function_return_unsupported,
};

/* AM data reaches handlers in place (flags 0, no descriptors): the
 * alignment asked for binds nothing, but must be a valid one. */
static ucs_status_t check_am_alignment(const uct_iface_params_t *params,
				       coop_context_t *ctx)
{
	size_t align, align_offset;
	ucs_status_t status;

	status = uct_iface_param_am_alignment(params, coop_msg_data_max(ctx),
					      0, 0, &align, &align_offset);
	if (status != UCS_OK)
		return status;
	if (!align || !ucs_is_pow2(align)) {
		ucs_error("coop: AM alignment %zu is not a power of 2", align);
		return UCS_ERR_INVALID_PARAM;
	}
	return UCS_OK;
}

/* An old setting name still works; once per process, say its new one. */
static void warn_old_names(void)
{
	static int warned;

	if (!warned && getenv("UCX_COOP_COOP_MIN")) {
		ucs_warn("coop: UCX_COOP_COOP_MIN is now UCX_COOP_HYBRID_MIN "
			 "(the new name wins when both are set)");
		warned = 1;
	}
}

static UCS_CLASS_INIT_FUNC(uct_coop_iface_t, uct_md_h md, uct_worker_h worker,
			   const uct_iface_params_t *params,
			   const uct_iface_config_t *tl_config)
{
	const uct_coop_iface_config_t *cfg =
		ucs_derived_of(tl_config, uct_coop_iface_config_t);

	UCS_CLASS_CALL_SUPER_INIT(uct_sm_iface_t, &uct_coop_iface_tl_ops,
				  &uct_coop_iface_internal_ops, md, worker,
				  params, tl_config);
	uct_coop_md_t *cmd = ucs_derived_of(md, uct_coop_md_t);
	ucs_status_t status;
	unsigned id;

	for (id = 0; id < UCT_COOP_MAX_IFACES && cmd->ifaces[id]; id++)
		;
	if (id == UCT_COOP_MAX_IFACES) {
		ucs_error("coop: md %p has %u interfaces already", cmd, id);
		return UCS_ERR_EXCEEDS_LIMIT;
	}
	self->md = cmd;
	self->id = (uint8_t)id;
	self->hybrid_min = cfg->hybrid_min;
	warn_old_names();
	self->put = (uct_coop_put_mode_t)cfg->put;
	self->dma_min = cfg->dma_min;
	/* asked at the first put that may use it */
	self->engine = UCT_COOP_ENGINE_UNKNOWN;
	ucs_list_head_init(&self->eps);
	ucs_queue_head_init(&self->rxq);
	self->npending = 0;
	self->ncheck_failed = 0;
	self->armed = 0;
	self->woken = 0;
	if (!uct_coop_md_ctx(self->md))
		return UCS_ERR_IO_ERROR;
	status = check_am_alignment(params, cmd->ctx);
	if (status != UCS_OK)
		return status;
	status = init_events(self);
	if (status != UCS_OK)
		return status;
	cmd->ifaces[id] = self;
	return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_coop_iface_t)
{
	ucs_queue_elem_t *e;

	uct_base_iface_progress_disable(&self->super.super.super,
					UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
	close_events(self);
	self->md->ifaces[self->id] = NULL;
	while (!ucs_queue_is_empty(&self->rxq)) {
		e = ucs_queue_pull_non_empty(&self->rxq);
		free(e);	/* first member of its descriptor */
	}
}

UCS_CLASS_DEFINE(uct_coop_iface_t, uct_sm_iface_t);

static UCS_CLASS_DEFINE_NEW_FUNC(uct_coop_iface_t, uct_iface_t, uct_md_h,
				 uct_worker_h, const uct_iface_params_t *,
				 const uct_iface_config_t *);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_coop_iface_t, uct_iface_t);

UCT_TL_DEFINE_ENTRY(&uct_coop_component, coop, uct_sm_base_query_tl_devices,
		    uct_coop_iface_t, "COOP_", uct_coop_iface_config_table,
		    uct_coop_iface_config_t);

/*
 * The module's internal UCX structures must be the ones it was compiled
 * against.  UCT 1.13 has no version call; libucp of the same package
 * does, so ask it (it is loaded with UCT by every UCP user anyway).
 */
typedef void (*ucp_version_fn)(unsigned *, unsigned *, unsigned *);

static int version_matches(void)
{
	ucp_version_fn get = (ucp_version_fn)dlsym(RTLD_DEFAULT,
						   "ucp_get_version");
	unsigned major = 0, minor = 0, patch = 0;
	void *ucp = get ? NULL : dlopen("libucp.so.0", RTLD_LAZY);

	if (ucp)	/* a UCT-only process: the package's libucp tells */
		get = (ucp_version_fn)dlsym(ucp, "ucp_get_version");
	if (get)
		get(&major, &minor, &patch);
	if (ucp)
		dlclose(ucp);
	if (major == UCT_VERNO_MAJOR && minor == UCT_VERNO_MINOR &&
	    patch == UCT_VERNO_PATCH)
		return 1;
	ucs_error("coop: libuct_coop.so was built for UCX %s, this is UCX "
		  "%u.%u.%u: transport coop not registered (rebuild it)",
		  UCT_VERNO_STRING, major, minor, patch);
	return 0;
}

static int registered;

UCS_F_CTOR void uct_coop_init(void)
{
	if (!version_matches())
		return;
	uct_component_register(&uct_coop_component);
	uct_tl_register(&uct_coop_component, &UCT_TL_NAME(coop));
	registered = 1;
}

UCS_F_DTOR void uct_coop_cleanup(void)
{
	if (!registered)
		return;
	uct_tl_unregister(&UCT_TL_NAME(coop));
	uct_component_unregister(&uct_coop_component);
}
