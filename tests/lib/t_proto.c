/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_proto.c - every protocol, forced with COOP_RNDV (and the bounce
 * pipeline with COOP_CMA=off; pre-copy and post-copy also with areas too
 * small for the larger messages): sizes 0 B .. 64 MiB on unaligned buffers,
 * receive posted before and after the send, truncation, ordering of mixed
 * eager/rendezvous messages, and the per-node load counters.
 */
#include <check.h>
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>

#include "harness.h"
#include "tests.h"

static const size_t sizes[] = {
	0, 1, 7, 47, 48, 49, 63, 64, 1000, 4095, 4096, 16383, 16384, 16385,
	65535, 65536, 65537, 200000, (1 << 20) + 3, (4 << 20) + 5,
	(16 << 20) + 1, 64 << 20,
};
#define NSIZES (int)(sizeof(sizes) / sizeof(sizes[0]))
#define COMM 11

struct bufs {
	char *base[NSIZES];
	char *p[NSIZES];
};

static void alloc_bufs(struct bufs *b, int recv_side)
{
	int i;

	for (i = 0; i < NSIZES; i++) {
		size_t off = recv_side ? (size_t)(i % 7) + 1 : (size_t)(i % 5) + 3;

		b->base[i] = malloc(sizes[i] + 16);
		b->p[i] = b->base[i] + off;	/* unaligned */
	}
}

static void free_bufs(struct bufs *b)
{
	int i;

	for (i = 0; i < NSIZES; i++)
		free(b->base[i]);
}

static void check_recv(struct bufs *b, coop_status_t *st, int phase, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		long bad = t_check(b->p[i], sizes[i], (uint32_t)(i + 100 * phase));

		T_ASSERT(st[i].error == 0, "size %zu: %s", sizes[i],
			 coop_strerror(st[i].error));
		T_ASSERT(st[i].count == sizes[i], "size %zu: count %zu",
			 sizes[i], st[i].count);
		T_ASSERT(st[i].source == 0 && st[i].tag == i, "size %zu",
			 sizes[i]);
		T_ASSERT(bad < 0, "size %zu: byte %ld differs", sizes[i], bad);
	}
}

/* How many sizes are <= *max (all without a max). */
static int sizes_upto(const size_t *max)
{
	int n = 0;

	while (n < NSIZES && (!max || sizes[n] <= *max))
		n++;
	return n;
}

size_t proto_sizes_sum(size_t above, size_t max, int *count)
{
	size_t sum = 0;
	int i;

	for (*count = 0, i = 0; i < NSIZES; i++) {
		if (sizes[i] > above && sizes[i] <= max) {
			sum += sizes[i];
			++*count;
		}
	}
	return sum;
}

/* Phase 1: receives posted first; phase 2: sends first. */
int proto_sizes_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	coop_request_t *r[NSIZES];
	coop_status_t st[NSIZES];
	struct bufs b;
	int i, phase, n = sizes_upto(arg);

	alloc_bufs(&b, rank);
	for (phase = 1; phase <= 2; phase++) {
		if (rank == 0)
			for (i = 0; i < n; i++)
				t_fill(b.p[i], sizes[i], (uint32_t)(i + 100 * phase));
		else
			for (i = 0; i < n; i++)
				memset(b.p[i], 0, sizes[i]);
		if (rank == 1 && phase == 1)
			for (i = 0; i < n; i++)
				T_OK(coop_irecv(ctx, b.p[i], sizes[i], 0, i, COMM,
						0, &r[i]));
		t_barrier(ctx, rank, size);
		if (rank == 0) {
			for (i = 0; i < n; i++)
				T_OK(coop_isend(ctx, b.p[i], sizes[i], 1, i, COMM,
						0, &r[i]));
			t_barrier(ctx, rank, size);
			T_OK(coop_waitall(n, r, st));
		} else {
			t_barrier(ctx, rank, size);
			if (phase == 2)	/* reverse order, mixed blocking */
				for (i = n - 1; i >= 0; i--)
					T_OK(coop_irecv(ctx, b.p[i], sizes[i],
							0, i, COMM, 0, &r[i]));
			T_OK(coop_waitall(n, r, st));
			check_recv(&b, st, phase, n);
		}
	}
	free_bufs(&b);
	return 0;
}

/* Truncation at every protocol level. */
static int trunc_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	static const size_t len[] = { 40, 5000, 100000, 3 << 20 };
	static const size_t cap[] = { 10, 100, 50001, 1 << 20 };
	char *buf = malloc(4 << 20), *ref = malloc(4 << 20);
	coop_status_t st;
	int i;

	(void)arg;
	(void)size;
	for (i = 0; i < 4; i++) {
		t_fill(ref, len[i], (uint32_t)i);
		if (rank == 0) {
			t_fill(buf, len[i], (uint32_t)i);
			T_OK(coop_send(ctx, buf, len[i], 1, i, COMM, 0));
		} else {
			memset(buf, 0, 4 << 20);
			T_ASSERT(coop_recv(ctx, buf, cap[i], 0, i, COMM, 0, &st) ==
				 COOP_ERR_TRUNCATE, "len %zu", len[i]);
			T_ASSERT(st.error == COOP_ERR_TRUNCATE, "status");
			T_ASSERT(st.count == cap[i], "count %zu", st.count);
			T_ASSERT(!memcmp(buf, ref, cap[i]), "data");
			T_ASSERT(buf[cap[i]] == 0, "wrote past the buffer");
		}
	}
	free(buf);
	free(ref);
	return 0;
}

/* Same tag, alternating eager/rendezvous sizes: arrive in send order. */
static int order_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	enum { N = 24 };
	static const size_t len[] = { 8, 300000, 5000, 0, 70000, 40 };
	coop_request_t *r[N];
	coop_status_t st[N];
	char *buf[N];
	int i;

	(void)arg;
	for (i = 0; i < N; i++) {
		buf[i] = malloc(300000);
		if (rank == 0)
			t_fill(buf[i], len[i % 6], (uint32_t)i);
	}
	if (rank == 1)	/* half posted before the sends */
		for (i = 0; i < N / 2; i++)
			T_OK(coop_irecv(ctx, buf[i], 300000, 0, 5, COMM, 0,
					&r[i]));
	t_barrier(ctx, rank, size);
	if (rank == 0) {
		for (i = 0; i < N; i++)
			T_OK(coop_isend(ctx, buf[i], len[i % 6], 1, 5, COMM,
					i % 4 == 3 ? COOP_SEND_SYNC : 0, &r[i]));
		T_OK(coop_waitall(N, r, st));
	} else {
		for (i = N / 2; i < N; i++)
			T_OK(coop_irecv(ctx, buf[i], 300000, i % 2 ? 0 :
					COOP_ANY_SOURCE, 5, COMM, 0, &r[i]));
		T_OK(coop_waitall(N, r, st));
		for (i = 0; i < N; i++) {
			T_ASSERT(st[i].count == len[i % 6], "msg %d count %zu",
				 i, st[i].count);
			T_ASSERT(t_check(buf[i], len[i % 6], (uint32_t)i) < 0,
				 "msg %d data", i);
		}
	}
	for (i = 0; i < N; i++)
		free(buf[i]);
	return 0;
}

static const char *const env_auto[] = { NULL };
static const char *const env_rget[] = { "COOP_RNDV=rget", NULL };
static const char *const env_rput[] = { "COOP_RNDV=rput", NULL };
static const char *const env_rtr[] = { "COOP_RNDV=rtr", NULL };
static const char *const env_coop[] = { "COOP_RNDV=coop", NULL };
static const char *const env_coop_small[] = { "COOP_RNDV=coop",
	"COOP_CHUNK=4096", "COOP_EAGER_MAX=0", NULL };
static const char *const env_bounce[] = { "COOP_CMA=off", NULL };
static const char *const env_bounce_rtr[] = { "COOP_CMA=off",
	"COOP_RNDV=rtr", "COOP_BOUNCE_SLOTS=8", NULL };
/* the offload engine, or RPUT without one (t_dma.c checks which) */
static const char *const env_dma[] = { "COOP_RNDV=dma", NULL };
/* staged (t_staged.c checks which went staged); the small areas make the
 * larger messages fall back to RGET */
static const char *const env_precopy[] = { "COOP_RNDV=precopy", NULL };
static const char *const env_postcopy[] = { "COOP_RNDV=postcopy", NULL };
static const char *const env_staged_small[] = { "COOP_RNDV=postcopy",
	"COOP_POSTCOPY_BYTES=1m", NULL };

static const char *const *const envs[] = {
	env_auto, env_rget, env_rput, env_rtr, env_coop, env_coop_small,
	env_bounce, env_bounce_rtr, env_dma, env_precopy, env_postcopy,
	env_staged_small,
};
static const char *const env_names[] = {
	"auto", "rget", "rput", "rtr", "coop", "coop+4k chunks, no bounce eager",
	"cma off", "cma off + rtr", "dma", "precopy", "postcopy",
	"postcopy, 1 MiB area",
};

START_TEST(test_sizes)
{
	fprintf(stderr, "sizes: protocol %s\n", env_names[_i]);
	ck_assert_int_eq(run_ranks(2, envs[_i], proto_sizes_rank, NULL, 120,
				   NULL), 0);
}
END_TEST

START_TEST(test_truncate)
{
	ck_assert_int_eq(run_ranks(2, envs[_i], trunc_rank, NULL, 60, NULL), 0);
}
END_TEST

START_TEST(test_order)
{
	ck_assert_int_eq(run_ranks(2, envs[_i], order_rank, NULL, 60, NULL), 0);
}
END_TEST

/* Every copy is accounted: pending back to 0, totals grew. */
static int load_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	coop_load_t slot[2];
	size_t len = 8 << 20;
	char *buf = malloc(len);
	uint64_t tot;
	int i;

	(void)arg;
	T_ASSERT(size == 2, "size %d", size);
	memset(buf, 1, len);
	for (i = 0; i < 4; i++) {
		if (rank == 0)
			T_OK(coop_send(ctx, buf, len, 1, 0, COMM, 0));
		else
			T_OK(coop_recv(ctx, buf, len, 0, 0, COMM, 0, NULL));
	}
	t_barrier(ctx, rank, size);
	if (rank == 0) {
		for (i = 0; i < size; i++) {
			T_OK(coop_get_load(ctx, i, &slot[i]));
			T_ASSERT(slot[i].pending_ops == 0, "rank %d ops %llu", i,
				 (unsigned long long)slot[i].pending_ops);
			T_ASSERT(slot[i].pending_bytes == 0, "rank %d bytes", i);
			T_ASSERT(slot[i].kernel_ops == 0 &&
				 slot[i].kernel_bytes == 0, "rank %d kernel", i);
		}
		/* counted once, whoever (library or driver) counts */
		tot = slot[0].total_bytes + slot[1].total_bytes;
		T_ASSERT(tot == 4 * len, "total %llu", (unsigned long long)tot);
		/* both sides ran a copy job (how many bytes each one took
		 * depends on scheduling) */
		T_ASSERT(slot[0].total_ops >= 4 && slot[1].total_ops >= 4,
			 "COOP-p2p: both sides took part (ops %llu, %llu)",
			 (unsigned long long)slot[0].total_ops,
			 (unsigned long long)slot[1].total_ops);
	}
	t_barrier(ctx, rank, size);
	free(buf);
	return 0;
}

START_TEST(test_load_counters)
{
	ck_assert_int_eq(run_ranks(2, env_coop, load_rank, NULL, 60, NULL), 0);
}
END_TEST

/* Make process_vm_readv/writev fail with EPERM in this process and its
 * children, as a hardened container would. */
static void forbid_cma(void)
{
	static const int nr[] = { SYS_process_vm_readv, SYS_process_vm_writev };

	ck_assert_int_eq(t_deny_syscalls(nr, 2, EPERM), 0);
}

/* The connect-time probe finds CMA forbidden: everything still works,
 * through the bounce pipeline, whatever protocol is asked for. */
START_TEST(test_cma_forbidden)
{
	static const char *const env[] = { "COOP_RNDV=coop", NULL };

	forbid_cma();
	ck_assert_int_eq(run_ranks(2, env, proto_sizes_rank, NULL, 120, NULL),
			 0);
	ck_assert_int_eq(run_ranks(2, env_rtr, order_rank, NULL, 60, NULL), 0);
}
END_TEST

/* A receive posted before its send goes receiver-initiated (RTR); both
 * sides' status says so, though no RTS ever told the receiver. */
static int rtr_status_rank(coop_context_t *ctx, int rank, int size,
			   void *arg)
{
	size_t len = 1 << 20;
	char *buf = malloc(len);
	coop_request_t *r;
	coop_status_t st;

	(void)arg;
	t_fill(buf, len, 5);
	if (rank == 1)
		T_OK(coop_irecv(ctx, buf, len, 0, 4, COMM, 0, &r));
	t_barrier(ctx, rank, size);
	if (rank == 0) {
		usleep(100000);	/* the RTR is there first */
		T_OK(coop_send(ctx, buf, len, 1, 4, COMM, 0));
	} else {
		T_OK(coop_wait(&r, &st));
		T_ASSERT(st.protocol == COOP_PROTOCOL_RTR &&
			 st.count == len && st.source == 0 && st.tag == 4,
			 "receiver: protocol %d, %zu bytes", st.protocol,
			 st.count);
	}
	free(buf);
	return 0;
}

START_TEST(test_rtr_status)
{
	ck_assert_int_eq(run_ranks(2, env_rtr, rtr_status_rank, NULL, 60,
				   NULL), 0);
}
END_TEST

/* A small standard send completes at once, inline in its packet (no
 * request behind its handle): its status and the statistics still say
 * EAGER, for coop_isend and coop_send alike. */
static int inline_status_rank(coop_context_t *ctx, int rank, int size,
			      void *arg)
{
	char msg[8] = "inline!";
	coop_request_t *r;
	coop_status_t st;
	coop_stats_t before, after;

	(void)arg, (void)size;
	if (rank == 0) {
		T_OK(coop_get_stats(ctx, &before));
		T_OK(coop_isend(ctx, msg, sizeof(msg), 1, 6, COMM, 0, &r));
		T_OK(coop_wait(&r, &st));
		T_OK(coop_get_stats(ctx, &after));
		T_ASSERT(st.protocol == COOP_PROTOCOL_EAGER && !r,
			 "inline send: protocol %d", st.protocol);
		T_ASSERT(after.sent[COOP_PROTOCOL_EAGER] ==
			 before.sent[COOP_PROTOCOL_EAGER] + 1,
			 "inline send not counted as EAGER");
		T_OK(coop_send(ctx, msg, sizeof(msg), 1, 6, COMM, 0));
		T_OK(coop_get_stats(ctx, &after));
		T_ASSERT(after.sent[COOP_PROTOCOL_EAGER] ==
			 before.sent[COOP_PROTOCOL_EAGER] + 2,
			 "blocking inline send not counted as EAGER");
	} else {
		for (int i = 0; i < 2; i++) {
			memset(msg, 0, sizeof(msg));
			T_OK(coop_recv(ctx, msg, sizeof(msg), 0, 6, COMM, 0,
				       &st));
			T_ASSERT(st.protocol == COOP_PROTOCOL_EAGER &&
				 !strcmp(msg, "inline!"),
				 "receiver: protocol %d", st.protocol);
		}
	}
	return 0;
}

START_TEST(test_inline_status)
{
	ck_assert_int_eq(run_ranks(2, NULL, inline_status_rank, NULL, 60,
				   NULL), 0);
}
END_TEST

#define NENVS (int)(sizeof(envs) / sizeof(envs[0]))

TCase *tc_proto(void)
{
	TCase *tc = tcase_create("protocols");

	tcase_set_timeout(tc, 150);
	tcase_add_loop_test(tc, test_sizes, 0, NENVS);
	tcase_add_loop_test(tc, test_truncate, 0, NENVS);
	tcase_add_loop_test(tc, test_order, 0, NENVS);
	tcase_add_test(tc, test_load_counters);
	tcase_add_test(tc, test_rtr_status);
	tcase_add_test(tc, test_inline_status);
	tcase_add_test(tc, test_cma_forbidden);
	return tc;
}
