/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * coll_api.c - the public calls of neighborhood collectives (coll/):
 * topologies and the allgather/alltoall family in its blocking,
 * nonblocking and persistent forms.
 */
#include "api_int.h"

enum { BLOCKING, NONBLOCKING, PERSISTENT };

static int topo_create_locked(coop_context_t *ctx, uint32_t comm, int indeg,
			      const int *src, const uint64_t *sw, int outdeg,
			      const int *dst, const uint64_t *dw,
			      unsigned hints, coop_topo_t **topo)
{
	return coop_topo_create_locked(ctx, comm, indeg, src, sw, outdeg, dst,
				       dw, hints, topo);
}

int coop_topo_create(coop_context_t *ctx, uint32_t comm, int indegree,
		     const int *sources, const uint64_t *sourceweights,
		     int outdegree, const int *destinations,
		     const uint64_t *destweights, unsigned hints,
		     coop_topo_t **topo)
{
	COOP_LOCKED(ctx, topo_create_locked(ctx, comm, indegree, sources,
					    sourceweights, outdegree,
					    destinations, destweights, hints,
					    topo));
}

static int topo_free_locked(coop_topo_t **topo)
{
	int rc = coop_topo_free_locked(*topo);

	if (!rc)
		*topo = NULL;
	return rc;
}

int coop_topo_free(coop_topo_t **topo)
{
	if (!topo || !*topo)
		return COOP_ERR_ARG;
	COOP_LOCKED((*topo)->ctx, topo_free_locked(topo));
}

int coop_topo_degrees(const coop_topo_t *topo, int *indegree, int *outdegree)
{
	if (!topo)
		return COOP_ERR_ARG;
	if (indegree)
		*indegree = topo->indeg;
	if (outdegree)
		*outdegree = topo->outdeg;
	return COOP_SUCCESS;
}

int coop_topo_get_info(const coop_topo_t *topo, coop_topo_info_t *info)
{
	if (!topo || !info)
		return COOP_ERR_ARG;
	coop_topo_info_fill(topo, info);
	return COOP_SUCCESS;
}

/* ---------------- the collectives ---------------- */

/* As coop_send: wait while the backlog for a rank the call's plan sends
 * to is too long (none can be while all backlogs together are short). */
static void wait_backlogs(coop_topo_t *t, enum coop_nbr_op op)
{
	const struct nbr_plan *p = t->plan[op];
	uint32_t v;

	if (t->ctx->pkts.live <= COOP_BACKLOG_MANY)
		return;
	for (v = 0; v < p->nv; v++)
		if (p->v[v].kind == V_SEND)
			coop_wait_backlog(t->ctx, p->v[v].peer);
}

static int neighbor_call_locked(coop_topo_t *t, const struct nbr_args *a,
				coop_request_t **req, int mode)
{
	coop_request_t *r = NULL;
	int rc;

	if (!t || (mode != BLOCKING && !req))
		return COOP_ERR_ARG;
	rc = mode == BLOCKING ? coop_nbr_call_blocking(t, a, &r) :
				coop_nbr_call(t, a, &r, mode == PERSISTENT);
	if (rc)
		return rc;
	if (mode != BLOCKING) {
		*req = r;
		return COOP_SUCCESS;
	}
	rc = coop_wait_locked(&r, NULL);
	if (!rc)
		wait_backlogs(t, a->op);
	return rc;
}

static int neighbor_call(coop_topo_t *t, const struct nbr_args *a,
			 coop_request_t **req, int mode)
{
	COOP_LOCKED(t ? t->ctx : NULL, neighbor_call_locked(t, a, req, mode));
}

static int allgather(coop_topo_t *t, const void *sbuf, size_t sbytes,
		     void *rbuf, size_t rbytes, const size_t *rcounts,
		     const size_t *rdispls, coop_request_t **req, int mode)
{
	struct nbr_args a = { .op = NBR_ALLGATHER, .sbuf = sbuf,
			      .sbytes = sbytes, .rbuf = rbuf,
			      .rbytes = rbytes, .rcounts = rcounts,
			      .rdispls = rdispls };

	return neighbor_call(t, &a, req, mode);
}

static int alltoall(coop_topo_t *t, const void *sbuf, size_t sbytes,
		    const size_t *scounts, const size_t *sdispls, void *rbuf,
		    size_t rbytes, const size_t *rcounts,
		    const size_t *rdispls, coop_request_t **req, int mode)
{
	struct nbr_args a = { .op = NBR_ALLTOALL, .sbuf = sbuf,
			      .sbytes = sbytes, .scounts = scounts,
			      .sdispls = sdispls, .rbuf = rbuf,
			      .rbytes = rbytes, .rcounts = rcounts,
			      .rdispls = rdispls };

	return neighbor_call(t, &a, req, mode);
}

/* The v forms: their arrays must be there (checked per block later). */
static int allgatherv(coop_topo_t *t, const void *sbuf, size_t sbytes,
		      void *rbuf, const size_t *rcounts,
		      const size_t *rdispls, coop_request_t **req, int mode)
{
	if (!rcounts || !rdispls)
		return COOP_ERR_ARG;
	return allgather(t, sbuf, sbytes, rbuf, 0, rcounts, rdispls, req,
			 mode);
}

static int alltoallv(coop_topo_t *t, const void *sbuf,
		     const size_t *scounts, const size_t *sdispls, void *rbuf,
		     const size_t *rcounts, const size_t *rdispls,
		     coop_request_t **req, int mode)
{
	if (!scounts || !sdispls || !rcounts || !rdispls)
		return COOP_ERR_ARG;
	return alltoall(t, sbuf, 0, scounts, sdispls, rbuf, 0, rcounts,
			rdispls, req, mode);
}

int coop_neighbor_allgather(coop_topo_t *topo, const void *sbuf,
			    size_t sbytes, void *rbuf, size_t rbytes)
{
	return allgather(topo, sbuf, sbytes, rbuf, rbytes, NULL, NULL, NULL,
			 BLOCKING);
}

int coop_neighbor_allgatherv(coop_topo_t *topo, const void *sbuf,
			     size_t sbytes, void *rbuf, const size_t *rbytes,
			     const size_t *rdispls)
{
	return allgatherv(topo, sbuf, sbytes, rbuf, rbytes, rdispls, NULL,
			  BLOCKING);
}

int coop_neighbor_alltoall(coop_topo_t *topo, const void *sbuf,
			   size_t sbytes, void *rbuf, size_t rbytes)
{
	return alltoall(topo, sbuf, sbytes, NULL, NULL, rbuf, rbytes, NULL,
			NULL, NULL, BLOCKING);
}

int coop_neighbor_alltoallv(coop_topo_t *topo, const void *sbuf,
			    const size_t *sbytes, const size_t *sdispls,
			    void *rbuf, const size_t *rbytes,
			    const size_t *rdispls)
{
	return alltoallv(topo, sbuf, sbytes, sdispls, rbuf, rbytes, rdispls,
			 NULL, BLOCKING);
}

int coop_ineighbor_allgather(coop_topo_t *topo, const void *sbuf,
			     size_t sbytes, void *rbuf, size_t rbytes,
			     coop_request_t **req)
{
	return allgather(topo, sbuf, sbytes, rbuf, rbytes, NULL, NULL, req,
			 NONBLOCKING);
}

int coop_ineighbor_allgatherv(coop_topo_t *topo, const void *sbuf,
			      size_t sbytes, void *rbuf, const size_t *rbytes,
			      const size_t *rdispls, coop_request_t **req)
{
	return allgatherv(topo, sbuf, sbytes, rbuf, rbytes, rdispls, req,
			  NONBLOCKING);
}

int coop_ineighbor_alltoall(coop_topo_t *topo, const void *sbuf,
			    size_t sbytes, void *rbuf, size_t rbytes,
			    coop_request_t **req)
{
	return alltoall(topo, sbuf, sbytes, NULL, NULL, rbuf, rbytes, NULL,
			NULL, req, NONBLOCKING);
}

int coop_ineighbor_alltoallv(coop_topo_t *topo, const void *sbuf,
			     const size_t *sbytes, const size_t *sdispls,
			     void *rbuf, const size_t *rbytes,
			     const size_t *rdispls, coop_request_t **req)
{
	return alltoallv(topo, sbuf, sbytes, sdispls, rbuf, rbytes, rdispls,
			 req, NONBLOCKING);
}

int coop_neighbor_allgather_init(coop_topo_t *topo, const void *sbuf,
				 size_t sbytes, void *rbuf, size_t rbytes,
				 coop_request_t **req)
{
	return allgather(topo, sbuf, sbytes, rbuf, rbytes, NULL, NULL, req,
			 PERSISTENT);
}

int coop_neighbor_allgatherv_init(coop_topo_t *topo, const void *sbuf,
				  size_t sbytes, void *rbuf,
				  const size_t *rbytes, const size_t *rdispls,
				  coop_request_t **req)
{
	return allgatherv(topo, sbuf, sbytes, rbuf, rbytes, rdispls, req,
			  PERSISTENT);
}

int coop_neighbor_alltoall_init(coop_topo_t *topo, const void *sbuf,
				size_t sbytes, void *rbuf, size_t rbytes,
				coop_request_t **req)
{
	return alltoall(topo, sbuf, sbytes, NULL, NULL, rbuf, rbytes, NULL,
			NULL, req, PERSISTENT);
}

int coop_neighbor_alltoallv_init(coop_topo_t *topo, const void *sbuf,
				 const size_t *sbytes, const size_t *sdispls,
				 void *rbuf, const size_t *rbytes,
				 const size_t *rdispls, coop_request_t **req)
{
	return alltoallv(topo, sbuf, sbytes, sdispls, rbuf, rbytes, rdispls,
			 req, PERSISTENT);
}
