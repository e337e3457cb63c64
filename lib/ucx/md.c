/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * md.c - the "coop" component and memory domain.
 *
 * One md is one endpoint of a libcoopmpi node domain (COOP_INIT_DYNAMIC),
 * created at the first query (whether UCP must carry rkeys depends on
 * the provider it opens): registrations are its regions (the driver's with
 * the kmod provider, plain addresses with shm), and its interfaces
 * connect, message and copy through it.  The domain is the job's, so that
 * ranks of different jobs never reach each other: UCX_COOP_DOMAIN names
 * it, else Open MPI's PMIx namespace, else MPICH hydra's proxy (the
 * parent of every local rank), else the user.
 *
 * Registration cache: with the driver (keys are registrations: the md
 * asks UCP for rkeys) UCP registers the sender's buffer of every
 * rendezvous with the md (the reader's only ep.c registers, when the
 * writer helps), which costs an ioctl.  A region pins
 * nothing (the driver pins a copy's pages while it copies, at whatever
 * the address maps then), so a registration can outlive its
 * deregistration safely: the last RCACHE_UNUSED unused ones stay, and a
 * registration inside one of ours reuses it.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <ucs/debug/log.h>

#include "coop_ucx.h"

static ucs_config_field_t uct_coop_md_config_table[] = {
	{"", "", NULL, ucs_offsetof(uct_coop_md_config_t, super),
	 UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

	{"DOMAIN", "auto",
	 "Name of the node domain whose processes reach each other through\n"
	 "coop; \"auto\": the job's (PMIx namespace, MPICH hydra proxy), else\n"
	 "the user's.",
	 ucs_offsetof(uct_coop_md_config_t, domain), UCS_CONFIG_TYPE_STRING},

	{NULL}
};

static uint64_t hash_str(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

/* The start time of process pid (clock ticks since boot), "" if unknown:
 * with the pid it names one process, whatever pids are reused. */
static void start_time(pid_t pid, char *buf, size_t len)
{
	char path[64], stat[1024], *p;
	FILE *f;
	int i;

	buf[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return;
	p = fgets(stat, sizeof(stat), f) ? strrchr(stat, ')') : NULL;
	fclose(f);
	for (i = 0; p && i < 20; i++)	/* field 22: after ") state ..." */
		p = strchr(p + 1, ' ');
	if (p)
		snprintf(buf, len, "%.*s", (int)strcspn(p + 1, " "), p + 1);
}

static uint64_t domain_key(const char *name)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	char buf[96], t[32];
	const char *ns = getenv("PMIX_NAMESPACE");

	if (strcmp(name, "auto"))
		return hash_str(hash_str(h, "name:"), name);
	if (ns)
		return hash_str(hash_str(h, "pmix:"), ns);
	if (getenv("PMI_FD") || getenv("MPI_LOCALNRANKS")) {
		start_time(getppid(), t, sizeof(t));
		snprintf(buf, sizeof(buf), "hydra:%d:%s", (int)getppid(), t);
		return hash_str(h, buf);
	}
	snprintf(buf, sizeof(buf), "uid:%u", (unsigned)getuid());
	return hash_str(h, buf);
}

coop_context_t *uct_coop_md_ctx(uct_coop_md_t *md)
{
	coop_init_params_t p = { .size = sizeof(p),
				 .flags = COOP_INIT_DYNAMIC, .job_key = md->key };
	int rc;

	if (md->ctx)
		return md->ctx;
	rc = coop_init(&p, &md->ctx);
	if (rc) {
		ucs_error("coop: cannot join node domain %s (%016llx): %s",
			  md->domain, (unsigned long long)md->key,
			  coop_strerror(rc));
		md->ctx = NULL;
		return NULL;
	}
	coop_msg_set_handler(md->ctx, uct_coop_md_msg, md);
	coop_msg_set_data_handler(md->ctx, uct_coop_md_data_msg, md);
	coop_msg_set_peer_handler(md->ctx, uct_coop_md_peer_gone, md);
	ucs_debug("coop: md joined domain %s (%016llx), provider %s",
		  md->domain, (unsigned long long)md->key,
		  coop_provider_name(md->ctx));
	return md->ctx;
}

uct_coop_memh_t *uct_coop_md_find_reg(uct_coop_md_t *md, uint64_t cookie,
				      uint64_t off, uint64_t len)
{
	uct_coop_memh_t *m;

	ucs_list_for_each(m, &md->regs, list)
		if (m->key.cookie == cookie && off <= m->length &&
		    len <= m->length - off)
			return m;
	return NULL;
}

#define RCACHE_UNUSED 64

/* A registration of ours holding [addr, addr + length), now in use. */
static uct_coop_memh_t *reg_reuse(uct_coop_md_t *md, const char *addr,
				  size_t length)
{
	uct_coop_memh_t *m;

	ucs_list_for_each(m, &md->regs, list) {
		if ((const char *)m->addr > addr ||
		    addr + length > (const char *)m->addr + m->length)
			continue;
		if (!m->refs++)
			md->nunused--;
		ucs_list_del(&m->list);
		ucs_list_add_head(&md->regs, &m->list);
		return m;
	}
	return NULL;
}

static void reg_drop(uct_coop_md_t *md, uct_coop_memh_t *m)
{
	ucs_list_del(&m->list);
	if (m->length)
		coop_mem_dereg(md->ctx, &m->key);
	free(m);
}

/* Keep the RCACHE_UNUSED most recently used registrations without refs. */
static void reg_trim(uct_coop_md_t *md)
{
	ucs_list_link_t *pos = md->regs.prev, *prev;
	uct_coop_memh_t *m;

	for (; md->nunused > RCACHE_UNUSED && pos != &md->regs; pos = prev) {
		prev = pos->prev;	/* oldest first */
		m = ucs_container_of(pos, uct_coop_memh_t, list);
		if (!m->refs) {
			md->nunused--;
			reg_drop(md, m);
		}
	}
}

uct_coop_memh_t *uct_coop_md_reg(uct_coop_md_t *md, void *address,
				 size_t length)
{
	coop_context_t *ctx = uct_coop_md_ctx(md);
	uct_coop_memh_t *m;
	int rc = COOP_SUCCESS;

	if (!ctx)
		return NULL;
	m = reg_reuse(md, address, length);
	if (m)
		return m;
	m = calloc(1, sizeof(*m));
	if (!m) {
		ucs_error("coop: no memory to register %p..+%zu", address,
			  length);
		return NULL;
	}
	m->addr = address;
	m->length = length;
	if (length)	/* an empty region needs no registration */
		rc = coop_mem_reg(ctx, address, length,
				  COOP_ACCESS_READ | COOP_ACCESS_WRITE, &m->key);
	if (rc) {
		ucs_error("coop: cannot register %p..+%zu: %s", address,
			  length, coop_strerror(rc));
		free(m);
		return NULL;
	}
	m->refs = 1;
	ucs_list_add_head(&md->regs, &m->list);
	return m;
}

void uct_coop_md_dereg(uct_coop_md_t *md, uct_coop_memh_t *m)
{
	if (!--m->refs) {
		md->nunused++;
		reg_trim(md);
	}
}

static ucs_status_t uct_coop_mem_reg(uct_md_h tl_md, void *address,
				     size_t length, unsigned flags,
				     uct_mem_h *memh_p)
{
	uct_coop_md_t *md = ucs_derived_of(tl_md, uct_coop_md_t);
	uct_coop_memh_t *m;

	(void)flags;
	m = uct_coop_md_reg(md, address, length);
	if (!m)
		return UCS_ERR_IO_ERROR;
	*memh_p = m;
	return UCS_OK;
}

static ucs_status_t
uct_coop_mem_dereg(uct_md_h tl_md, const uct_md_mem_dereg_params_t *params)
{
	UCT_MD_MEM_DEREG_CHECK_PARAMS(params, 0);
	uct_coop_md_dereg(ucs_derived_of(tl_md, uct_coop_md_t), params->memh);
	return UCS_OK;
}

/*
 * ucp_mem_map(ALLOCATE) with md:coop in UCX_ALLOC_PRIO: the library's
 * shared heap, which peers copy through windows also without the driver.
 */
static ucs_status_t uct_coop_mem_alloc(uct_md_h tl_md, size_t *length_p,
				       void **address_p,
				       ucs_memory_type_t mem_type,
				       unsigned flags, const char *alloc_name,
				       uct_mem_h *memh_p)
{
	ucs_status_t st;
	void *p;

	(void)alloc_name;
	if (mem_type != UCS_MEMORY_TYPE_HOST)
		return UCS_ERR_UNSUPPORTED;
	if (coop_alloc_mem(*length_p, &p))
		return UCS_ERR_NO_MEMORY;
	st = uct_coop_mem_reg(tl_md, p, *length_p, flags, memh_p);
	if (st != UCS_OK) {
		coop_free_mem(p);
		return st;
	}
	*address_p = p;
	return UCS_OK;
}

/* The memory goes: so does its registration, kept or not. */
static ucs_status_t uct_coop_mem_free(uct_md_h tl_md, uct_mem_h memh)
{
	uct_coop_md_t *md = ucs_derived_of(tl_md, uct_coop_md_t);
	uct_coop_memh_t *m = memh;
	void *addr = m->addr;

	if (!--m->refs)
		reg_drop(md, m);
	coop_free_mem(addr);
	return UCS_OK;
}

static ucs_status_t uct_coop_mkey_pack(uct_md_h tl_md, uct_mem_h memh,
				       const uct_md_mkey_pack_params_t *params,
				       void *rkey_buffer)
{
	const uct_coop_memh_t *m = memh;
	uct_coop_rkey_t rk = { m->key.cookie, m->key.length,
			       (uintptr_t)m->addr };

	(void)tl_md, (void)params;
	memcpy(rkey_buffer, &rk, sizeof(rk));
	return UCS_OK;
}

static ucs_status_t uct_coop_rkey_unpack(uct_component_t *component,
					 const void *rkey_buffer,
					 uct_rkey_t *rkey_p, void **handle_p)
{
	uct_coop_rkey_t *rk = malloc(sizeof(*rk));

	(void)component;
	if (!rk)
		return UCS_ERR_NO_MEMORY;
	memcpy(rk, rkey_buffer, sizeof(*rk));
	*rkey_p = (uintptr_t)rk;
	*handle_p = NULL;
	return UCS_OK;
}

static ucs_status_t uct_coop_rkey_release(uct_component_t *component,
					  uct_rkey_t rkey, void *handle)
{
	(void)component, (void)handle;
	free((void *)rkey);
	return UCS_OK;
}

static ucs_status_t uct_coop_md_query(uct_md_h tl_md, uct_md_attr_t *attr)
{
	uct_coop_md_t *md = ucs_derived_of(tl_md, uct_coop_md_t);

	attr->rkey_packed_size = sizeof(uct_coop_rkey_t);
	/*
	 * No UCT_MD_FLAG_NEED_MEMH: UCP would register every receive buffer
	 * (about a ninth of a rendezvous's instructions in UCP and here), while
	 * only a reader that asks the writer's help needs its buffer to be
	 * a region; ep.c registers that one itself.  UCT_MD_FLAG_NEED_RKEY
	 * only where keys are registrations (the driver): where addresses
	 * are keys, UCP would register every send buffer and pack, unpack
	 * and resolve an rkey that says no more than the address does.
	 */
	attr->cap.flags = UCT_MD_FLAG_REG | UCT_MD_FLAG_ALLOC;
	if (!coop_xfer_addr_keys(uct_coop_md_ctx(md)))
		attr->cap.flags |= UCT_MD_FLAG_NEED_RKEY;
	attr->cap.reg_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
	attr->cap.alloc_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
	attr->cap.access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
	attr->cap.detect_mem_types = 0;
	attr->cap.max_alloc = ULONG_MAX;
	attr->cap.max_reg = ULONG_MAX;
	attr->reg_cost = ucs_linear_func_make(1e-7, 0);
	memset(&attr->local_cpus, 0xff, sizeof(attr->local_cpus));
	return UCS_OK;
}

static void uct_coop_md_close(uct_md_h tl_md)
{
	uct_coop_md_t *md = ucs_derived_of(tl_md, uct_coop_md_t);
	uct_coop_memh_t *m, *tmp;
	uct_coop_op_t *op, *otmp;

	/* ops still running complete unheeded, their requests freed then */
	ucs_list_for_each_safe(op, otmp, &md->ops, list) {
		coop_request_free(&op->req);
		free(op);
	}
	ucs_list_for_each_safe(m, tmp, &md->regs, list)
		reg_drop(md, m);
	coop_finalize(md->ctx);
	free(md->domain);
	free(md);
}

static uct_md_ops_t uct_coop_md_ops = {
	.close = uct_coop_md_close,
	.query = uct_coop_md_query,
	.mem_alloc = uct_coop_mem_alloc,
	.mem_free = uct_coop_mem_free,
	.mem_advise = (uct_md_mem_advise_func_t)ucs_empty_function_return_unsupported,
	.mem_reg = uct_coop_mem_reg,
	.mem_dereg = uct_coop_mem_dereg,
	.mem_query = (uct_md_mem_query_func_t)ucs_empty_function_return_unsupported,
	.mkey_pack = uct_coop_mkey_pack,
	.is_sockaddr_accessible = ucs_empty_function_return_zero_int,
	.detect_memory_type = ucs_empty_function_return_unsupported,
};

static ucs_status_t uct_coop_md_open(uct_component_t *component,
				     const char *md_name,
				     const uct_md_config_t *config,
				     uct_md_h *md_p)
{
	const uct_coop_md_config_t *cfg = ucs_derived_of(config,
							 uct_coop_md_config_t);
	uct_coop_md_t *md = calloc(1, sizeof(*md));

	(void)md_name;
	if (!md)
		return UCS_ERR_NO_MEMORY;
	md->domain = strdup(cfg->domain);
	if (!md->domain) {
		free(md);
		return UCS_ERR_NO_MEMORY;
	}
	md->super.ops = &uct_coop_md_ops;
	md->super.component = component;
	md->key = domain_key(md->domain);
	coop_reach_id(&md->node, &md->wire);
	ucs_list_head_init(&md->regs);
	ucs_list_head_init(&md->ops);
	*md_p = &md->super;
	return UCS_OK;
}

/* Usable when the driver is there, or a process may copy from another
 * (tried on ourselves, as UCX's cma does). */
static ucs_status_t uct_coop_query_md_resources(uct_component_t *component,
						uct_md_resource_desc_t **res,
						unsigned *num)
{
	uint64_t src = 1, dst = 0;
	struct iovec l = { &src, sizeof(src) }, r = { &dst, sizeof(dst) };

	if (!access("/dev/coopmpi", R_OK | W_OK) ||
	    process_vm_writev(getpid(), &l, 1, &r, 1, 0) == sizeof(dst))
		return uct_md_query_single_md_resource(component, res, num);
	ucs_debug("coop: no /dev/coopmpi and no cross-process copies");
	return uct_md_query_empty_md_resource(res, num);
}

uct_component_t uct_coop_component = {
	.query_md_resources = uct_coop_query_md_resources,
	.md_open = uct_coop_md_open,
	.cm_open = ucs_empty_function_return_unsupported,
	.rkey_unpack = uct_coop_rkey_unpack,
	.rkey_ptr = ucs_empty_function_return_unsupported,
	.rkey_release = uct_coop_rkey_release,
	.name = "coop",
	.md_config = {
		.name = "coop memory domain",
		.prefix = "COOP_",
		.table = uct_coop_md_config_table,
		.size = sizeof(uct_coop_md_config_t),
	},
	.cm_config = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
	.tl_list = UCT_COMPONENT_TL_LIST_INITIALIZER(&uct_coop_component),
	.flags = 0,
	.md_vfs_init = (uct_component_md_vfs_init_func_t)ucs_empty_function,
};
