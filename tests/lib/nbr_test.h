/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nbr_test.h - what the neighbor case's files (t_nbr_*.c) share: the
 * graphs, a rank's view of its topology, one call's buffers and the
 * naive reference every received block is checked against
 * (nbr_test.c), and the functions that add each file's tests to the
 * case (tc_neighbor() adds them in one order across the files).
 */
#ifndef NBR_TEST_H
#define NBR_TEST_H

#include <check.h>

#include "harness.h"

#define MAXR 8			/* ranks of a graph */
#define MAXDEG 16		/* a rank's in- or out-degree */
#define COMM_BASE 300		/* topologies' context ids: 300.. */
#define SENT 0xa5		/* the bytes no block may write */
#define AG_SLOT 500		/* allgather's one block, in the seeds */
#define TAIL 16			/* sentinel bytes behind the last block */
#define MIB (1u << 20)

/* ------------------------------------------------------------------ */
/* graphs                                                               */
/* ------------------------------------------------------------------ */

struct graph {
	int n;
	int outdeg[MAXR], indeg[MAXR];
	int dst[MAXR][MAXDEG], src[MAXR][MAXDEG];
};

enum gkind { G_ER, G_CART, G_HOT, G_RING };

struct gspec {
	enum gkind kind;
	int n;
	double p;		/* G_ER: edge probability */
	uint32_t seed;		/* G_ER */
	int ndims, dims[4];	/* G_CART: periodic, rank-major in dim 0 */
	int back;		/* G_HOT: the others send to rank 0 */
	const char *name;
};

void g_edge(struct graph *g, int o, int d);
void graph_make(struct graph *g, const struct gspec *s);
int origin_slot(const struct graph *g, int r, int i);

/* ------------------------------------------------------------------ */
/* a rank's view                                                        */
/* ------------------------------------------------------------------ */

enum { OP_AG, OP_AGV, OP_A2A, OP_A2AV, NOPS };
enum { M_BLOCK, M_NONBLOCK, M_PERSIST, NMODES };
enum { W_NONE, W_UNIFORM, W_EDGE };	/* EXACT_BYTES weights */

extern const char *const op_name[NOPS];
extern const char *const mode_name[NMODES];

struct rk {
	coop_context_t *ctx;
	coop_topo_t *topo;
	struct graph g;
	int rank;
	int wmode;		/* the topology's weights: W_* */
	size_t wbytes;		/* ... their size (base) */
	uint32_t iter;		/* collectives so far: the data's seeds */
	char what[96];		/* the call, for messages */
};

uint32_t bseed(int o, int j, uint32_t iter);
int topo_make(struct rk *k, uint32_t comm, unsigned hints);
void rk_init(struct rk *k, coop_context_t *ctx, int rank,
	     const struct gspec *s);
void topo_done(struct rk *k);
uint32_t test_seed(void);
double now(void);

/* ------------------------------------------------------------------ */
/* one call's buffers and the reference                                 */
/* ------------------------------------------------------------------ */

struct call {
	int op, nsend, nrecv;
	size_t bytes;			/* uniform size; v: sizes' base */
	size_t scnt[MAXDEG], sdsp[MAXDEG], rcnt[MAXDEG], rdsp[MAXDEG];
	size_t slen, rlen;
	unsigned char *sbuf, *rbuf;
	uint32_t iter;			/* of the data in it */
};

int is_v(int op);
size_t layout(int n, const size_t *cnt, size_t *dsp, int rev);
void call_alloc(struct call *c);
void call_setup(struct call *c, const struct rk *k, int op, size_t bytes);
void call_free(struct call *c);
void call_fill(struct call *c, struct rk *k);
void call_check(struct call *c, const struct rk *k);
int call_post(struct call *c, coop_topo_t *t, int mode,
	      coop_request_t **req);
void check_status(const struct rk *k, const coop_status_t *st, int err);
void complete(struct rk *k, coop_request_t **req, int persistent);
void blocking_call(struct call *c, struct rk *k);
void run_call(struct rk *k, int op, int mode, size_t bytes);
void run_matrix(struct rk *k, const size_t *sizes, int nsizes,
		unsigned ops);
void check_info(const struct rk *k, coop_topo_info_t *out);

#define ALL_OPS ((1u << NOPS) - 1)

/* several calls outstanding (t_nbr_flow.c, t_nbr_static.c) */
#define MAX_TOGETHER 10
void run_together(struct rk *const *ks, const int *ops, int n,
		  size_t bytes);
/* a CPU for each of size ranks? (t_nbr_copy.c, _static.c, _canary.c) */
int cpu_per_rank(int size);

/* static slots with exact sizes; static and packed slots' settings */
#define EX (COOP_TOPO_STATIC_BUFFERS | COOP_TOPO_EXACT_BYTES)
extern const char *const env_direct[];
extern const char *const env_tree2[];
extern const char *const env_packed[];

/*
 * The case's tests, one function each: tc_neighbor() (nbr_test.c) adds
 * them in the case's one order, which interleaves the files (a test
 * file's START_TESTs are static to it).
 */
void nbr_add_er(TCase *tc);		/* t_nbr_graphs.c */
void nbr_add_stencil(TCase *tc);
void nbr_add_outstanding(TCase *tc);	/* t_nbr_flow.c */
void nbr_add_flood_bounded(TCase *tc);
void nbr_add_open_slots(TCase *tc);	/* t_nbr_open.c */
void nbr_add_open_sizes(TCase *tc);
void nbr_add_open_window(TCase *tc);
void nbr_add_exact_hotspot(TCase *tc);	/* t_nbr_exact.c */
void nbr_add_exact_hotspot_shared(TCase *tc);
void nbr_add_exact_er(TCase *tc);
void nbr_add_copier(TCase *tc);		/* t_nbr_copy.c */
void nbr_add_single_copy(TCase *tc);
void nbr_add_bad_args(TCase *tc);	/* t_nbr_errors.c */
void nbr_add_peer_death(TCase *tc);	/* t_nbr_death.c */
void nbr_add_static_death(TCase *tc);
void nbr_add_packed_death(TCase *tc);
void nbr_add_static(TCase *tc);		/* t_nbr_static.c */
void nbr_add_group_line(TCase *tc);
void nbr_add_canary(TCase *tc);		/* t_nbr_canary.c */
void nbr_add_packed(TCase *tc);

#endif
