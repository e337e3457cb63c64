/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_xfer.c - include/coopmpi_xfer.h, the lower layer for MPI
 * implementations with their own matching: regions, single-sided GET and
 * PUT jobs, cooperative jobs through a work slot (both sides copy, each
 * chunk once, the reader completes alone when the writer never starts),
 * the slot's references, the COOP-load split, and every argument check.
 * The tests' own control messages go through coop_send/coop_recv, as an
 * MPI implementation's would go through its own packets.
 */
#include <string.h>
#include <sys/wait.h>

#include "coopmpi_xfer.h"
#include "harness.h"
#include "tests.h"

#define COMM 61
#define LEN ((4u << 20) + 123)	/* unaligned, several chunks */

/* What a rendezvous packet of the caller would carry. */
struct ctl {
	coop_rkey_t key;
	uint32_t slot;
	uint32_t pad;
	uint64_t count;
};

static void ctl_send(coop_context_t *ctx, int peer, const struct ctl *c)
{
	T_OK(coop_send(ctx, c, sizeof(*c), peer, 1, COMM, 0));
}

static void ctl_recv(coop_context_t *ctx, int peer, struct ctl *c)
{
	T_OK(coop_recv(ctx, c, sizeof(*c), peer, 1, COMM, 0, NULL));
}

/* Start a job of dir with peer on its region's bytes from offset, wait
 * for it: the bytes we copied. */
static size_t run_job(coop_context_t *ctx, unsigned dir, int peer, void *buf,
		      const coop_rkey_t *key, uint64_t offset, uint32_t slot)
{
	coop_xfer_params_t p = {
		.size = sizeof(p), .flags = dir, .peer = peer, .slot = slot,
		.local = buf, .len = LEN, .key = *key, .offset = offset,
	};
	coop_request_t *r;
	coop_status_t st;

	T_OK(coop_xfer_start(ctx, &p, &r));
	T_OK(coop_wait(&r, &st));
	return st.count;
}

/* arg: COOP_XFER_GET or COOP_XFER_PUT; rank 0 runs the job against the
 * region of rank 1, whose data start at offset 1 of it. */
static int single_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	unsigned dir = *(const unsigned *)arg;
	char *buf = malloc(LEN + 1), *data = buf + 1;	/* unaligned */
	struct ctl c = { .slot = COOP_XFER_NO_SLOT };

	(void)size;
	if (rank == 1) {
		t_fill(data, LEN, 7);
		T_OK(coop_mem_reg(ctx, buf, LEN + 1, dir == COOP_XFER_GET ?
				  COOP_ACCESS_READ : COOP_ACCESS_WRITE,
				  &c.key));
		ctl_send(ctx, 0, &c);
		ctl_recv(ctx, 0, &c);	/* done */
		T_OK(coop_mem_dereg(ctx, &c.key));
		if (dir == COOP_XFER_PUT)
			T_ASSERT(t_check(data, LEN, 9) < 0, "PUT data");
	} else {
		t_fill(data, LEN, 9);
		ctl_recv(ctx, 1, &c);
		T_ASSERT(run_job(ctx, dir, 1, data, &c.key, 1, c.slot) == LEN,
			 "this side copied everything");
		if (dir == COOP_XFER_GET)
			T_ASSERT(t_check(data, LEN, 7) < 0, "GET data");
		ctl_send(ctx, 1, &c);
	}
	free(buf);
	return 0;
}

/*
 * Cooperative: rank 0 reads (owns the slot, takes [0, split)), rank 1
 * writes; arg nonzero: the writer never starts its job, the reader
 * copies everything.  Each chunk is copied once; the slot is free after
 * the job's and the writer's references are dropped.
 */
static int cooperative_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	int absent = *(const int *)arg;
	char *buf = malloc(LEN);
	struct ctl rts, cts, fin = { .count = 0 };
	size_t split;

	(void)size;
	if (rank == 1) {	/* the sender: writes [split, LEN) */
		t_fill(buf, LEN, 3);
		T_OK(coop_mem_reg(ctx, buf, LEN, COOP_ACCESS_READ, &rts.key));
		ctl_send(ctx, 0, &rts);
		ctl_recv(ctx, 0, &cts);
		if (!absent)
			fin.count = run_job(ctx, COOP_XFER_PUT, 0, buf,
					    &cts.key, 0, cts.slot);
		ctl_send(ctx, 0, &fin);	/* done with the slot */
		ctl_recv(ctx, 0, &fin);	/* the reader is done too */
		T_OK(coop_mem_dereg(ctx, &rts.key));
	} else {
		memset(buf, 0, LEN);
		ctl_recv(ctx, 1, &rts);
		T_OK(coop_mem_reg(ctx, buf, LEN, COOP_ACCESS_WRITE, &cts.key));
		T_OK(coop_xfer_split(ctx, 1, LEN, &split));
		/* idle ranks split evenly, to the nearest page */
		T_ASSERT(split == ((LEN / 2 + 2048) & ~(size_t)4095),
			 "idle ranks' split: %zu", split);
		T_OK(coop_xfer_slot_alloc(ctx, 1, LEN, split, &cts.slot));
		ctl_send(ctx, 1, &cts);
		fin.count = run_job(ctx, COOP_XFER_GET, 1, buf, &rts.key, 0,
				    cts.slot);
		T_ASSERT(t_check(buf, LEN, 3) < 0, "cooperative data");
		if (absent)	/* completes without the writer */
			T_ASSERT(fin.count == LEN, "reader copied %llu",
				 (unsigned long long)fin.count);
		split = fin.count;
		ctl_recv(ctx, 1, &fin);
		T_ASSERT(split + fin.count == LEN, "each chunk once: %zu + %llu",
			 split, (unsigned long long)fin.count);
		T_OK(coop_xfer_slot_release(ctx, 1, cts.slot));
		T_ASSERT(coop_xfer_slot_release(ctx, 1, cts.slot) ==
			 COOP_ERR_ARG, "the slot was freed");
		T_OK(coop_mem_dereg(ctx, &cts.key));
		ctl_send(ctx, 1, &fin);
	}
	free(buf);
	return 0;
}

/* Every argument check answers with its error, and nothing starts. */
static void bad_params(coop_context_t *ctx, char *buf, coop_rkey_t key)
{
	coop_xfer_params_t ok = {
		.size = sizeof(ok), .flags = COOP_XFER_GET, .peer = 1,
		.slot = COOP_XFER_NO_SLOT, .local = buf, .len = 4096,
		.key = key,
	}, p;
	coop_request_t *r;

	p = ok, p.size--;
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_ARG, "size");
	p = ok, p.flags = 0;
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_ARG, "no dir");
	p = ok, p.flags = COOP_XFER_GET | COOP_XFER_PUT;
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_ARG, "two dirs");
	p = ok, p.reserved[2] = 1;
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_ARG, "reserved");
	p = ok, p.len = key.length + 1;
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_ARG, "beyond key");
	p = ok, p.offset = key.length - p.len + 1;
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_ARG, "offset");
	p = ok, p.offset = UINT64_MAX;
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_ARG, "offset wraps");
	p = ok, p.slot = 0;	/* not allocated */
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_ARG, "free slot");
	p = ok, p.flags = COOP_XFER_PUT, p.slot = 1u << 30;
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_ARG, "peer slot");
	p = ok, p.peer = 2;
	T_ASSERT(coop_xfer_start(ctx, &p, &r) == COOP_ERR_RANK, "rank");
	T_ASSERT(coop_xfer_start(ctx, NULL, &r) == COOP_ERR_ARG, "NULL");
	T_ASSERT(coop_xfer_start(ctx, &ok, NULL) == COOP_ERR_ARG, "no req");
	T_ASSERT(coop_xfer_start(NULL, &ok, &r) == COOP_ERR_ARG, "no ctx");
}

static int args_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	char *buf = malloc(LEN);
	coop_xfer_params_t p = {
		.size = sizeof(p), .flags = COOP_XFER_GET, .peer = 1,
		.slot = COOP_XFER_NO_SLOT, .local = buf, .len = 4096,
	};
	coop_request_t *r;
	uint32_t slot;
	size_t share;

	(void)arg;
	if (rank == 1) {
		t_barrier(ctx, rank, size);
		free(buf);
		return 0;
	}
	T_ASSERT(coop_mem_reg(ctx, NULL, 8, COOP_ACCESS_READ, &p.key) ==
		 COOP_ERR_ARG, "NULL addr");
	T_ASSERT(coop_mem_reg(ctx, buf, 0, COOP_ACCESS_READ, &p.key) ==
		 COOP_ERR_ARG, "len 0");
	T_ASSERT(coop_mem_reg(ctx, buf, 8, 0, &p.key) == COOP_ERR_ARG,
		 "no access");
	T_ASSERT(coop_mem_reg(ctx, buf, 8, 4, &p.key) == COOP_ERR_ARG,
		 "unknown access bit");
	T_ASSERT(coop_mem_reg(ctx, buf, 8, COOP_ACCESS_READ, NULL) ==
		 COOP_ERR_ARG, "NULL key");
	T_OK(coop_mem_reg(ctx, buf, LEN, COOP_ACCESS_READ, &p.key));
	bad_params(ctx, buf, p.key);
	T_ASSERT(coop_xfer_slot_alloc(ctx, 1, 100, 101, &slot) ==
		 COOP_ERR_ARG, "split > len");
	T_ASSERT(coop_xfer_slot_alloc(ctx, 1, 0, 0, &slot) == COOP_ERR_ARG,
		 "len 0");
	T_ASSERT(coop_xfer_slot_alloc(ctx, -1, 100, 0, &slot) ==
		 COOP_ERR_RANK, "rank");
	T_ASSERT(coop_xfer_slot_alloc(ctx, 1, 100, 0, NULL) == COOP_ERR_ARG,
		 "NULL slot");
	T_ASSERT(coop_xfer_slot_release(ctx, 1, 7) == COOP_ERR_ARG,
		 "release of a free slot");
	T_ASSERT(coop_xfer_split(ctx, 1, 100, NULL) == COOP_ERR_ARG, "NULL");
	T_OK(coop_xfer_split(ctx, 1, 0, &share));
	T_ASSERT(share == 0, "share of nothing");
	/* a job of our own region (single-sided, with ourselves): it may
	 * not be cancelled, it completes */
	p.peer = 0;
	T_OK(coop_xfer_start(ctx, &p, &r));
	T_ASSERT(coop_cancel(r) == COOP_ERR_UNSUPPORTED, "cancel");
	T_OK(coop_wait(&r, NULL));
	T_OK(coop_mem_dereg(ctx, &p.key));
	T_ASSERT(coop_mem_dereg(ctx, NULL) == COOP_ERR_ARG, "dereg NULL");
	t_barrier(ctx, rank, size);
	free(buf);
	return 0;
}

/* ---------------- dynamic endpoints and messages ---------------- */

/* The dynamic domain of this run: a key of its own beside the job's. */
static uint64_t dyn_key(void)
{
	return t_extra_key();
}

static coop_context_t *dyn_init(void)
{
	coop_init_params_t p = { .size = sizeof(p),
				 .flags = COOP_INIT_DYNAMIC,
				 .job_key = dyn_key() };
	coop_context_t *d;

	T_OK(coop_init(&p, &d));
	return d;
}

/* Every rank's dynamic address, through the static context: all[i] is
 * rank i's blob. */
struct dyn_addr {
	int rank;		/* its dynamic rank, for the tests' checks */
	size_t len;
	char blob[COOP_ADDR_MAX_LEN];
};

static void dyn_allgather(coop_context_t *ctx, coop_context_t *d, int rank,
			  int size, struct dyn_addr *all)
{
	int i;

	all[rank].len = sizeof(all[rank].blob);
	T_OK(coop_address(d, all[rank].blob, &all[rank].len));
	T_OK(coop_rank(d, &all[rank].rank));
	for (i = 0; i < size; i++)
		if (i != rank)
			T_OK(coop_send(ctx, &all[rank], sizeof(all[rank]), i,
				       2, COMM, 0));
	for (i = 0; i < size; i++)
		if (i != rank)
			T_OK(coop_recv(ctx, &all[i], sizeof(all[i]), i, 2,
				       COMM, 0, NULL));
}

struct got_msg {
	int n, src;
	size_t len;
	char data[COOP_MSG_MAX];
};

static void on_msg(void *arg, int src, const void *msg, size_t len)
{
	struct got_msg *g = arg;

	g->n++;
	g->src = src;
	g->len = len;
	memcpy(g->data, msg, len);
}

/* Rank 0 connects with ranks 1 and 2, which do not connect with each
 * other: messages, MPI sends and copy jobs between connected endpoints,
 * COOP_ERR_STATE between the others. */
static void dyn_exchange(coop_context_t *d, int rank, const int *dr)
{
	char big[COOP_MSG_MAX + 1] = "dynamic", out[64];
	struct got_msg g = { 0 };

	T_OK(coop_msg_set_handler(d, on_msg, &g));
	if (rank == 0) {
		T_OK(coop_msg_send(d, dr[1], big, COOP_MSG_MAX));
		T_ASSERT(coop_msg_send(d, dr[1], big, COOP_MSG_MAX + 1) ==
			 COOP_ERR_ARG, "too long");
		T_ASSERT(coop_msg_send(d, dr[1], NULL, 4) == COOP_ERR_ARG,
			 "NULL");
		T_OK(coop_recv(d, out, sizeof(out), dr[2], 5, COMM, 0, NULL));
		T_ASSERT(!strcmp(out, "from 2"), "MPI receive: %s", out);
	} else if (rank == 1) {
		while (!g.n)
			T_OK(coop_progress(d));
		T_ASSERT(g.src == dr[0] && g.len == COOP_MSG_MAX &&
			 !memcmp(g.data, big, COOP_MSG_MAX), "message");
		T_ASSERT(coop_msg_send(d, dr[2], "x", 1) == COOP_ERR_STATE,
			 "not connected");
		T_ASSERT(coop_send(d, "x", 1, dr[2], 0, COMM, 0) ==
			 COOP_ERR_STATE, "send to a stranger");
	} else {
		T_OK(coop_send(d, "from 2", 7, dr[0], 5, COMM, 0));
	}
}

static int dynamic_rank(coop_context_t *ctx, int rank, int size, void *arg)
{
	struct dyn_addr all[3];
	coop_context_t *d = dyn_init();
	int dr[3], i, r, dsize;

	(void)arg;
	T_OK(coop_size(d, &dsize));
	dyn_allgather(ctx, d, rank, size, all);
	/* the driver's default max_endpoints; shm's SHM_DYNAMIC_MAX */
	T_ASSERT(dsize == (strcmp(coop_provider_name(d), "kmod") ? 1024 : 256) &&
		 all[rank].rank >= 0 && all[rank].rank < dsize,
		 "dynamic rank %d of %d", all[rank].rank, dsize);
	for (i = 0; i < size; i++)
		dr[i] = all[i].rank;
	for (i = 0; i < size; i++) {
		T_ASSERT(i == rank || dr[i] != dr[rank], "ranks differ");
		if (i == rank || (rank && i))	/* 1 and 2: only 0 */
			continue;
		T_OK(coop_connect_peer(d, all[i].blob, all[i].len, &r));
		T_ASSERT(r == dr[i], "the blob's rank: %d, not %d", r, dr[i]);
		T_OK(coop_connect_peer(d, all[i].blob, all[i].len, &r));
		T_ASSERT(r == dr[i], "connecting again: the same rank");
	}
	t_barrier(ctx, rank, size);
	dyn_exchange(d, rank, dr);
	t_barrier(ctx, rank, size);
	T_OK(coop_finalize(d));
	return 0;
}

/* The dynamic contexts' files are gone once all of them finalized. */
static int dyn_files_left(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "ls /dev/shm | grep -q %016llx",
		 (unsigned long long)dyn_key());
	return system(cmd) == 0;
}

static int dynamic_files_rank(coop_context_t *ctx, int rank, int size,
			      void *arg)
{
	int rc = dynamic_rank(ctx, rank, size, arg);

	t_barrier(ctx, rank, size);
	T_ASSERT(!dyn_files_left(), "/dev/shm files of the dynamic domain");
	return rc;
}

/* A dynamic endpoint's process died without finalize: its endpoint is
 * given to the next one; and the argument checks of the dynamic calls. */
static int dynamic_reuse_rank(coop_context_t *ctx, int rank, int size,
			      void *arg)
{
	coop_init_params_t p = { .size = sizeof(p),
				 .flags = COOP_INIT_DYNAMIC, .rank = 1,
				 .job_key = dyn_key() };
	char blob[COOP_ADDR_MAX_LEN];
	size_t len = sizeof(blob);
	coop_context_t *d;
	int mine, theirs, st;
	pid_t pid;

	(void)ctx, (void)rank, (void)size, (void)arg;
	T_ASSERT(coop_init(&p, &d) == COOP_ERR_ARG, "rank with DYNAMIC");
	p.rank = 0, p.nranks = 2;
	T_ASSERT(coop_init(&p, &d) == COOP_ERR_ARG, "nranks with DYNAMIC");
	p.nranks = 0, p.flags = 2;
	T_ASSERT(coop_init(&p, &d) == COOP_ERR_ARG, "unknown flag");
	T_ASSERT(coop_connect_peer(ctx, blob, len, &mine) == COOP_ERR_STATE,
		 "static context");
	pid = fork();
	if (!pid) {		/* takes an endpoint and dies with it */
		d = dyn_init();
		T_OK(coop_rank(d, &theirs));
		_exit(theirs);
	}
	T_ASSERT(waitpid(pid, &st, 0) == pid && WIFEXITED(st), "child");
	d = dyn_init();
	T_OK(coop_rank(d, &mine));
	T_ASSERT(mine == WEXITSTATUS(st), "endpoint %d reused (dead: %d)",
		 mine, WEXITSTATUS(st));
	T_ASSERT(coop_connect(d, blob, len) == COOP_ERR_STATE,
		 "coop_connect of a dynamic context");
	T_OK(coop_address(d, blob, &len));
	T_ASSERT(coop_connect_peer(d, blob, 8, &theirs) == COOP_ERR_ARG,
		 "short blob");
	T_OK(coop_connect_peer(d, blob, len, &theirs));
	T_ASSERT(theirs == mine, "ourselves");
	T_OK(coop_finalize(d));
	return 0;
}

/* A child endpoint: sends its short address up the pipe, connects with
 * the sender of the first message (its short address is the message)
 * and sends it back, then finalizes. */
static void echo_child(int fd)
{
	coop_context_t *d = dyn_init();
	struct got_msg g = { 0 };
	char addr[COOP_ADDR_SHORT_LEN];
	size_t len = sizeof(addr);
	int peer;

	T_OK(coop_msg_set_handler(d, on_msg, &g));
	T_OK(coop_address_short(d, addr, &len));
	T_ASSERT(write(fd, addr, len) == (ssize_t)len, "pipe");
	while (!g.n)
		T_OK(coop_progress(d));
	T_OK(coop_connect_peer(d, g.data, g.len, &peer));
	T_ASSERT(peer == g.src, "the sender's address");
	T_OK(coop_msg_send(d, peer, g.data, g.len));
	T_OK(coop_finalize(d));
	_exit(0);
}

/* Connect d to a new echo child and exchange a message: its rank. */
static int echo_round(coop_context_t *d)
{
	struct got_msg g = { 0 };
	char addr[COOP_ADDR_SHORT_LEN], mine[COOP_ADDR_SHORT_LEN];
	size_t len = sizeof(mine);
	int fd[2], peer, st;
	pid_t pid;

	T_ASSERT(!pipe(fd), "pipe");
	pid = fork();
	if (!pid)
		echo_child(fd[1]);
	T_ASSERT(read(fd[0], addr, sizeof(addr)) == sizeof(addr), "addr");
	T_OK(coop_connect_peer(d, addr, sizeof(addr), &peer));
	T_OK(coop_msg_set_handler(d, on_msg, &g));
	T_OK(coop_address_short(d, mine, &len));
	T_OK(coop_msg_send(d, peer, mine, len));
	while (!g.n)
		T_OK(coop_progress(d));
	T_ASSERT(g.src == peer && g.len == len && !memcmp(g.data, mine, len),
		 "echo");
	T_ASSERT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		 !WEXITSTATUS(st), "child");
	close(fd[0]);
	close(fd[1]);
	return peer;
}

/* A rank's endpoint finalizes and a new process takes it over: connecting
 * its short address again reaches the new one, not the old mapping. */
static int dynamic_reconnect_rank(coop_context_t *ctx, int rank, int size,
				  void *arg)
{
	coop_context_t *d = dyn_init();
	int first, second;

	(void)ctx, (void)rank, (void)size, (void)arg;
	first = echo_round(d);
	second = echo_round(d);
	T_ASSERT(first == second, "the rank was reused: %d, %d", first,
		 second);
	T_OK(coop_finalize(d));
	return 0;
}

static const unsigned get = COOP_XFER_GET, put = COOP_XFER_PUT;
static const int writer_present = 0, writer_absent = 1;

/* Each case: two ranks running fn(arg). */
static const struct {
	rank_fn fn;
	const void *arg;
} cases[] = {
	{ single_rank, &get },
	{ single_rank, &put },
	{ cooperative_rank, &writer_present },
	{ cooperative_rank, &writer_absent },
	{ args_rank, NULL },
};

/* Each case: three ranks running fn, the dynamic domain their own. */
static const rank_fn dynamic_cases[] = {
	dynamic_files_rank,
	dynamic_reuse_rank,
	dynamic_reconnect_rank,
};

START_TEST(test_xfer)
{
	ck_assert_int_eq(run_ranks(2, NULL, cases[_i].fn,
				   (void *)cases[_i].arg, 60, NULL), 0);
}
END_TEST

START_TEST(test_dynamic)
{
	ck_assert_int_eq(run_ranks(_i ? 1 : 3, NULL, dynamic_cases[_i], NULL,
				   60, NULL), 0);
}
END_TEST

TCase *tc_xfer(void)
{
	TCase *tc = tcase_create("xfer");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_xfer, 0,
			    (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_loop_test(tc, test_dynamic, 0,
			    (int)(sizeof(dynamic_cases) /
				  sizeof(dynamic_cases[0])));
	return tc;
}
