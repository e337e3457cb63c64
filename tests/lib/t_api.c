/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * t_api.c - argument checking, error codes, a single-rank context
 * (self messages), completion calls, persistent requests, buffered sends,
 * load counters.
 */
#include <check.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "tests.h"

/* A connected one-rank context without the bootstrap. */
static coop_context_t *solo_ctx(void)
{
	coop_init_params_t p = { .size = sizeof(p), .rank = 0, .nranks = 1 };
	coop_context_t *ctx;
	unsigned char blob[COOP_ADDR_MAX_LEN];
	size_t len = sizeof(blob);

	p.job_key = ((uint64_t)getpid() << 20) ^ 0x5e1f;
	ck_assert_int_eq(coop_init(&p, &ctx), COOP_SUCCESS);
	ck_assert_int_eq(coop_address(ctx, blob, &len), COOP_SUCCESS);
	ck_assert_int_eq(coop_connect(ctx, blob, sizeof(blob)), COOP_SUCCESS);
	return ctx;
}

/* What coop_init picks without COOP_PROVIDER: the driver when its device
 * is usable (as provider.c decides), else the user-space fallback. */
static const char *default_provider(void)
{
	return access("/dev/coopmpi", R_OK | W_OK) ? "shm" : "kmod";
}

/* Settings of the adaptive protocols, each with a value coop_init must
 * refuse (COOP_ERR_CONFIG and a line naming it). */
static const char *const bad_env[][2] = {
	{ "COOP_RNDV", "strip" },
	{ "COOP_LOAD_HISTORY_MS", "5x" },
	{ "COOP_LOAD_HISTORY_MS", "-1" },
	{ "COOP_LOAD_BUSY_MS", "1ms" },
	{ "COOP_LOAD_BUSY_MS", "-1" },
	{ "COOP_LOAD_BUSY_MS", "3600001" },
	{ "COOP_LOAD_BUSY", "3600001" },	/* the old name */
	{ "COOP_SLEEP_US", "20000" },
	{ "COOP_STRIPE_RATIO", "-1" },
	{ "COOP_STRIPE_RATIO", "fast" },
	{ "COOP_STRIPE_MIN", "-4096" },
	{ "COOP_OFFLOAD_BUSY", "1q" },
	{ "COOP_CHUNK", "1024" },
	{ "COOP_VERBOSE", "3" },
	{ "COOP_VERBOSE", "yes" },
	{ "COOP_CMA", "maybe" },
	{ "COOP_OFFLOAD", "2" },
	{ "COOP_ENGINE", "ioat" },
	{ "COOP_HCA_GID", "1024" },
	{ "COOP_HCA_GID", "first" },
	{ "COOP_HCA_MR_CACHE", "257" },
	{ "COOP_HCA_MR_CACHE", "lots" },
	{ "COOP_HCA_DEVICE",
	  "a-device-name-longer-than-the-sixty-three-characters-it-may-have" },
	{ "COOP_NEIGHBOR_EAGER_MAX", "100" },
	{ "COOP_NEIGHBOR_EAGER_MAX", "8q" },
	{ "COOP_NEIGHBOR_EAGER_SHARED", "255" },
	{ "COOP_NEIGHBOR_SLOT_MAX", "2m" },
	{ "COOP_NEIGHBOR_SLOT_OPEN", "65k" },
	{ "COOP_NEIGHBOR_SLOT_OPEN", "1x" },
	{ "COOP_NEIGHBOR_STREAM_MAX", "2t" },
	{ "COOP_NEIGHBOR_STREAM_MAX", "16 MiB" },
	{ "COOP_NEIGHBOR_TREE_SHARED", "2m" },
	{ "COOP_NEIGHBOR_ORDER", "rounds" },
	{ "COOP_NEIGHBOR_RTR", "ring" },
	{ "COOP_NEIGHBOR_RTR_ARITY", "0" },
	{ "COOP_NEIGHBOR_RTR_ARITY", "65" },
	{ "COOP_RING_SLOTS", "1000" },
	{ "COOP_FBOX_SLOTS", "2" },
	{ "COOP_FBOX_SLOTS", "48" },
};

/* The settings table as coop_config_print writes it (malloc'd), which
 * returns rc. */
static char *table_text(int rc)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(coop_config_print(f), rc);
	fclose(f);
	return text;
}

/* ... and that it holds the text piece. */
static void table_shows(const char *piece, int rc)
{
	char *text = table_text(rc);

	ck_assert_msg(strstr(text, piece), "\"%s\" not in the table", piece);
	free(text);
}

/* The settings table: every variable printed as NAME=value with the value
 * in effect, a refused value reported (and the default shown instead). */
START_TEST(test_config_print)
{
	static const char *const names[] = {
		"COOP_PROVIDER=", "COOP_VERBOSE=", "COOP_EAGER_MAX=",
		"COOP_RNDV=", "COOP_HYBRID_MIN=", "COOP_CHUNK=",
		"COOP_LOAD_HISTORY_MS=", "COOP_LOAD_BUSY_MS=", "COOP_OFFLOAD=",
		"COOP_STRIPE_RATIO=",
		"COOP_STRIPE_MIN=", "COOP_OFFLOAD_BUSY=", "COOP_CMA=",
		"COOP_RING_SLOTS=", "COOP_BOUNCE_SLOTS=", "COOP_SPIN=",
		"COOP_SLEEP_US=", "COOP_BOOT_TIMEOUT_S=", "COOP_FBOX_SLOTS=",
		"COOP_RANK=", "COOP_SIZE=", "COOP_JOB=",
	};
	char *text;
	unsigned i;

	ck_assert_int_eq(coop_config_print(NULL), COOP_ERR_ARG);
	setenv("COOP_CHUNK", "2m", 1);
	text = table_text(COOP_SUCCESS);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		ck_assert_msg(strstr(text, names[i]), "%s missing", names[i]);
	free(text);
	table_shows("\nCOOP_CHUNK=2097152\n", COOP_SUCCESS);
	table_shows("\nCOOP_RNDV=auto\n", COOP_SUCCESS);
	setenv("COOP_RNDV", "bogus", 1);
	table_shows("\nCOOP_RNDV=auto\n", COOP_ERR_CONFIG);
	unsetenv("COOP_RNDV");
	unsetenv("COOP_CHUNK");
}
END_TEST

START_TEST(test_init_bad_env)
{
	coop_init_params_t p = { .size = sizeof(p), .rank = 0, .nranks = 1,
				 .job_key = 43 };
	coop_context_t *ctx = NULL;
	unsigned i;

	for (i = 0; i < sizeof(bad_env) / sizeof(bad_env[0]); i++) {
		setenv(bad_env[i][0], bad_env[i][1], 1);
		ck_assert_msg(coop_init(&p, &ctx) == COOP_ERR_CONFIG,
			      "%s=%s accepted", bad_env[i][0], bad_env[i][1]);
		unsetenv(bad_env[i][0]);
	}
}
END_TEST

START_TEST(test_init_args)
{
	coop_init_params_t p = { .size = sizeof(p), .rank = 0, .nranks = 1,
				 .job_key = 42 };
	coop_context_t *ctx = NULL;
	unsigned char blob[COOP_ADDR_MAX_LEN];
	size_t len = 4;

	ck_assert_int_eq(coop_init(NULL, &ctx), COOP_ERR_ARG);
	ck_assert_int_eq(coop_init(&p, NULL), COOP_ERR_ARG);
	p.size = 3;
	ck_assert_int_eq(coop_init(&p, &ctx), COOP_ERR_ARG);
	p.size = sizeof(p);
	p.flags = 1;
	ck_assert_int_eq(coop_init(&p, &ctx), COOP_ERR_ARG);
	p.flags = 0;
	p.rank = 1;
	ck_assert_int_eq(coop_init(&p, &ctx), COOP_ERR_RANK);
	p.rank = -1;
	ck_assert_int_eq(coop_init(&p, &ctx), COOP_ERR_RANK);
	p.rank = 0;
	p.nranks = 0;
	ck_assert_int_eq(coop_init(&p, &ctx), COOP_ERR_RANK);
	p.nranks = 1;
	setenv("COOP_RNDV", "bogus", 1);
	ck_assert_int_eq(coop_init(&p, &ctx), COOP_ERR_CONFIG);
	unsetenv("COOP_RNDV");
	setenv("COOP_EAGER_MAX", "12x", 1);
	ck_assert_int_eq(coop_init(&p, &ctx), COOP_ERR_CONFIG);
	unsetenv("COOP_EAGER_MAX");
	setenv("COOP_PROVIDER", "nope", 1);
	ck_assert_int_eq(coop_init(&p, &ctx), COOP_ERR_CONFIG);
	if (access("/dev/coopmpi", F_OK)) {	/* forced but unusable */
		setenv("COOP_PROVIDER", "kmod", 1);
		ck_assert_int_eq(coop_init(&p, &ctx), COOP_ERR_PROVIDER);
	}
	setenv("COOP_PROVIDER", "shm", 1);
	ck_assert_int_eq(coop_init(&p, &ctx), COOP_SUCCESS);
	ck_assert_str_eq(coop_provider_name(ctx), "shm");
	ck_assert_int_eq(coop_finalize(ctx), COOP_SUCCESS);
	unsetenv("COOP_PROVIDER");
	ck_assert_int_eq(coop_init(&p, &ctx), COOP_SUCCESS);
	ck_assert_str_eq(coop_provider_name(ctx), default_provider());
	/* not connected yet */
	ck_assert_int_eq(coop_isend(ctx, blob, 1, 0, 0, 0, 0,
				    &(coop_request_t *){ NULL }),
			 COOP_ERR_STATE);
	ck_assert_int_eq(coop_progress(ctx), COOP_ERR_STATE);
	ck_assert_int_eq(coop_address(ctx, blob, &len), COOP_ERR_ARG);
	ck_assert_uint_ge(len, 8);
	len = sizeof(blob);
	ck_assert_int_eq(coop_address(ctx, blob, &len), COOP_SUCCESS);
	ck_assert_int_eq(coop_connect(ctx, NULL, 64), COOP_ERR_ARG);
	ck_assert_int_eq(coop_connect(ctx, blob, 2), COOP_ERR_ARG);
	blob[0] ^= 0xff;
	ck_assert_int_eq(coop_connect(ctx, blob, sizeof(blob)), COOP_ERR_ARG);
	blob[0] ^= 0xff;
	blob[36] ^= 0xff;	/* another library's wire version */
	ck_assert_int_eq(coop_connect(ctx, blob, sizeof(blob)),
			 COOP_ERR_CONFIG);
	blob[36] ^= 0xff;
	ck_assert_int_eq(coop_connect(ctx, blob, sizeof(blob)), COOP_SUCCESS);
	ck_assert_int_eq(coop_connect(ctx, blob, sizeof(blob)), COOP_ERR_STATE);
	ck_assert_str_eq(coop_provider_name(ctx), default_provider());
	ck_assert_int_eq(coop_finalize(ctx), COOP_SUCCESS);
	ck_assert_int_eq(coop_finalize(NULL), COOP_SUCCESS);
	ck_assert_int_eq(coop_init_from_env(NULL), COOP_ERR_ARG);
	unsetenv("COOP_RANK");
	ck_assert_int_eq(coop_init_from_env(&ctx), COOP_ERR_BOOTSTRAP);
}
END_TEST

/* coop_init_from_env()'s variables (rank, size, job; NULL: unset): one
 * missing or refused, or a rank not below the size, fails before a
 * context exists; a good set starts a one-rank job. */
START_TEST(test_boot_env)
{
	static const char *const bad[][3] = {
		{ "0", "1", NULL }, { NULL, "1", "5e1f" }, { "1", "1", "5e1f" },
		{ "x", "2", "5e1f" }, { "0", "65534", "5e1f" },
		{ "0", "2", "5e1g" }, { "0", "0", "5e1f" },
	};
	static const char *const names[] = { "COOP_RANK", "COOP_SIZE",
					     "COOP_JOB" };
	coop_context_t *ctx;
	char job[32];
	unsigned i, k;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		for (k = 0; k < 3; k++)
			if (bad[i][k])
				setenv(names[k], bad[i][k], 1);
			else
				unsetenv(names[k]);
		ck_assert_msg(coop_init_from_env(&ctx) == COOP_ERR_BOOTSTRAP,
			      "COOP_RANK=%s COOP_SIZE=%s COOP_JOB=%s accepted",
			      bad[i][0], bad[i][1], bad[i][2]);
	}
	snprintf(job, sizeof(job), "%llx",
		 ((unsigned long long)getpid() << 20) ^ 0xb007);
	setenv("COOP_RANK", "0", 1);
	setenv("COOP_SIZE", "1", 1);
	setenv("COOP_JOB", job, 1);
	ck_assert_int_eq(coop_init_from_env(&ctx), COOP_SUCCESS);
	ck_assert_int_eq(coop_finalize(ctx), COOP_SUCCESS);
	for (k = 0; k < 3; k++)
		unsetenv(names[k]);
}
END_TEST

/* Two coop_inits, one after the other, with name=value in the
 * environment: the lines on stderr that warn "name what". */
static int warnings_about(const char *name, const char *value,
			  const char *what)
{
	coop_init_params_t p = { .size = sizeof(p), .rank = 0, .nranks = 1,
				 .job_key = 44 };
	coop_context_t *ctx[2];
	char about[128];
	FILE *err;
	int saved, rc[2], i, n;

	setenv(name, value, 1);
	err = t_stderr_begin(&saved);
	ck_assert_ptr_nonnull(err);
	for (i = 0; i < 2; i++) {
		rc[i] = coop_init(&p, &ctx[i]);
		if (!rc[i])
			coop_finalize(ctx[i]);
	}
	t_stderr_end(saved);
	unsetenv(name);
	ck_assert_int_eq(rc[0], COOP_SUCCESS);
	ck_assert_int_eq(rc[1], COOP_SUCCESS);
	snprintf(about, sizeof(about), "warning: %s %s", name, what);
	n = t_count_lines(err, "coopmpi: ", about);
	fclose(err);
	return n;
}

/* A COOP_ variable that is no setting: one line naming it, at the first
 * coop_init only; none for a setting, for a variable of the project's
 * tests (COOP_TEST_*) or with COOP_WARN_SETTINGS=0. */
START_TEST(test_env_unknown)
{
	const char *typo = "COOP_CHUNCK";	/* settings-check: skip */
	const char *other = "COOP_BOGUS";	/* settings-check: skip */

	ck_assert_int_eq(warnings_about(typo, "2m", "is not a setting"), 1);
	ck_assert_int_eq(warnings_about(typo, "2m", ""), 0);
	ck_assert_int_eq(warnings_about("COOP_CHUNK", "2m", ""), 0);
	ck_assert_int_eq(warnings_about("COOP_TEST_SEED", "7", ""), 0);
	setenv("COOP_WARN_SETTINGS", "0", 1);
	ck_assert_int_eq(warnings_about(other, "1", ""), 0);
	unsetenv("COOP_WARN_SETTINGS");
	ck_assert_int_eq(warnings_about(other, "1", "is not a setting"), 1);
}
END_TEST

/* An old name still sets its setting, and says once which name to use;
 * the new name wins when both are set; the table names the old one. */
START_TEST(test_env_old_name)
{
	ck_assert_int_eq(warnings_about("COOP_COOP_MIN", "128k",
					"is deprecated, use COOP_HYBRID_MIN"),
			 1);
	ck_assert_int_eq(warnings_about("COOP_COOP_MIN", "128k", ""), 0);
	setenv("COOP_COOP_MIN", "128k", 1);
	table_shows("\nCOOP_HYBRID_MIN=131072\n", COOP_SUCCESS);
	table_shows("COOP_COOP_MIN", COOP_SUCCESS);
	setenv("COOP_HYBRID_MIN", "1m", 1);
	table_shows("\nCOOP_HYBRID_MIN=1048576\n", COOP_SUCCESS);
	unsetenv("COOP_HYBRID_MIN");
	setenv("COOP_COOP_MIN", "12x", 1);
	table_shows("\nCOOP_HYBRID_MIN=65536\n", COOP_ERR_CONFIG);
	unsetenv("COOP_COOP_MIN");
}
END_TEST

static int env_is(const char *name, const char *value)
{
	const char *v = getenv(name);

	return v && !strcmp(v, value);
}

/* Send arguments: context, request, rank, tag, comm, count, flags. */
static void p2p_send_args(coop_context_t *ctx)
{
	coop_request_t *r = NULL;
	char buf[64];

	ck_assert_int_eq(coop_isend(NULL, buf, 1, 0, 0, 0, 0, &r), COOP_ERR_ARG);
	ck_assert_int_eq(coop_isend(ctx, buf, 1, 0, 0, 0, 0, NULL), COOP_ERR_ARG);
	ck_assert_int_eq(coop_isend(ctx, buf, 1, 1, 0, 0, 0, &r), COOP_ERR_RANK);
	ck_assert_int_eq(coop_isend(ctx, buf, 1, -7, 0, 0, 0, &r), COOP_ERR_RANK);
	ck_assert_int_eq(coop_isend(ctx, buf, 1, COOP_ANY_SOURCE, 0, 0, 0, &r),
			 COOP_ERR_RANK);
	ck_assert_int_eq(coop_isend(ctx, buf, 1, 0, -1, 0, 0, &r), COOP_ERR_TAG);
	ck_assert_int_eq(coop_isend(ctx, buf, 1, 0, -9, 0, 0, &r), COOP_ERR_TAG);
	ck_assert_int_eq(coop_isend(ctx, buf, 1, 0, 0, 0x10000, 0, &r),
			 COOP_ERR_COMM);
	ck_assert_int_eq(coop_isend(ctx, NULL, 1, 0, 0, 0, 0, &r),
			 COOP_ERR_COUNT);
	ck_assert_int_eq(coop_isend(ctx, buf, 1, 0, 0, 0, 1u << 20, &r),
			 COOP_ERR_FLAGS);
	ck_assert_int_eq(coop_isend(ctx, buf, 1, 0, 0, 0,
				    COOP_SEND_SYNC | COOP_SEND_READY, &r),
			 COOP_ERR_FLAGS);
	ck_assert_int_eq(coop_send(ctx, buf, 1, 0, 0, 0, 0x80), COOP_ERR_FLAGS);
}

/* Receive arguments, of the persistent requests too, and of the probes. */
static void p2p_recv_args(coop_context_t *ctx)
{
	coop_request_t *r = NULL;
	coop_message_t *m = NULL;
	coop_status_t st;
	char buf[64];
	int flag;

	ck_assert_int_eq(coop_irecv(ctx, buf, 1, 0, 0, 0, COOP_SEND_SYNC, &r),
			 COOP_ERR_FLAGS);
	ck_assert_int_eq(coop_irecv(ctx, buf, 1, 3, 0, 0, 0, &r), COOP_ERR_RANK);
	ck_assert_int_eq(coop_irecv(ctx, buf, 1, 0, -2, 0, 0, &r), COOP_ERR_TAG);
	ck_assert_int_eq(coop_irecv(ctx, NULL, 5, 0, 0, 0, 0, &r),
			 COOP_ERR_COUNT);
	ck_assert_int_eq(coop_recv(ctx, buf, 1, 0, 0, 99999, 0, NULL),
			 COOP_ERR_COMM);
	ck_assert_int_eq(coop_send_init(ctx, buf, 1, 2, 0, 0, 0, &r),
			 COOP_ERR_RANK);
	ck_assert_int_eq(coop_recv_init(ctx, buf, 1, 0, 0, 0, 7, &r),
			 COOP_ERR_FLAGS);
	ck_assert_int_eq(coop_iprobe(ctx, 5, 0, 0, &flag, &st), COOP_ERR_RANK);
	ck_assert_int_eq(coop_iprobe(ctx, 0, -3, 0, &flag, &st), COOP_ERR_TAG);
	ck_assert_int_eq(coop_iprobe(ctx, 0, 0, 0, NULL, &st), COOP_ERR_ARG);
	ck_assert_int_eq(coop_improbe(ctx, 0, 0, 0, &flag, NULL, &st),
			 COOP_ERR_ARG);
	ck_assert_int_eq(coop_mrecv(ctx, buf, 1, &m, &st), COOP_ERR_ARG);
	ck_assert_int_eq(coop_mrecv(ctx, buf, 1, NULL, &st), COOP_ERR_ARG);
}

/* Completion calls on no request at all, and their argument errors. */
static void completion_args(void)
{
	coop_request_t *r;
	coop_status_t st;
	int idx, n;

	ck_assert_int_eq(coop_wait(NULL, &st), COOP_ERR_ARG);
	r = NULL;
	ck_assert_int_eq(coop_wait(&r, &st), COOP_SUCCESS);
	ck_assert_int_eq(st.source, COOP_ANY_SOURCE);
	ck_assert_int_eq(coop_test(&r, NULL, &st), COOP_ERR_ARG);
	ck_assert_int_eq(coop_waitall(-1, NULL, NULL), COOP_ERR_ARG);
	ck_assert_int_eq(coop_waitall(2, NULL, NULL), COOP_ERR_ARG);
	ck_assert_int_eq(coop_waitany(1, &r, &idx, &st), COOP_SUCCESS);
	ck_assert_int_eq(idx, -1);
	ck_assert_int_eq(coop_waitsome(1, &r, &n, &idx, NULL), COOP_SUCCESS);
	ck_assert_int_eq(n, -1);
	ck_assert_int_eq(coop_testany(1, &r, &idx, NULL, &st), COOP_ERR_ARG);
	ck_assert_int_eq(coop_request_free(NULL), COOP_ERR_ARG);
	ck_assert_int_eq(coop_request_free(&r), COOP_ERR_ARG);
	ck_assert_int_eq(coop_cancel(NULL), COOP_ERR_ARG);
	ck_assert_int_eq(coop_start(NULL), COOP_ERR_ARG);
	ck_assert_int_eq(coop_startall(-1, NULL), COOP_ERR_ARG);
}

/* Start on a non-persistent request; cancel of a receive, of a send. */
static void start_and_cancel(coop_context_t *ctx)
{
	coop_request_t *r;
	coop_status_t st;
	char buf[64];

	ck_assert_int_eq(coop_irecv(ctx, buf, 8, 0, 5, 0, 0, &r), COOP_SUCCESS);
	ck_assert_int_eq(coop_start(&r), COOP_ERR_REQUEST);
	ck_assert_int_eq(coop_cancel(r), COOP_SUCCESS);
	ck_assert_int_eq(coop_wait(&r, &st), COOP_SUCCESS);
	ck_assert_int_eq(st.cancelled, 1);
	ck_assert_ptr_null(r);
	ck_assert_int_eq(coop_isend(ctx, buf, 8, 0, 5, 0, COOP_SEND_SYNC, &r),
			 COOP_SUCCESS);
	ck_assert_int_eq(coop_cancel(r), COOP_ERR_UNSUPPORTED);
	ck_assert_int_eq(coop_recv(ctx, buf, 8, 0, 5, 0, 0, &st), COOP_SUCCESS);
	ck_assert_int_eq(coop_wait(&r, NULL), COOP_SUCCESS);
}

/* The buffer of buffered sends: attach once, big enough; detach. */
static void buffer_args(coop_context_t *ctx)
{
	char buf[64];

	ck_assert_int_eq(coop_buffer_detach(ctx, NULL, NULL), COOP_ERR_STATE);
	ck_assert_int_eq(coop_buffer_attach(ctx, NULL, 100), COOP_ERR_ARG);
	ck_assert_int_eq(coop_buffer_attach(ctx, buf, 8), COOP_ERR_ARG);
	ck_assert_int_eq(coop_buffer_attach(ctx, buf, sizeof(buf)),
			 COOP_SUCCESS);
	ck_assert_int_eq(coop_buffer_attach(ctx, buf, sizeof(buf)),
			 COOP_ERR_STATE);
	ck_assert_int_eq(coop_buffer_detach(ctx, NULL, NULL), COOP_SUCCESS);
}

/* Rank and size, thread level, progress mode. */
static void context_queries(coop_context_t *ctx)
{
	int rank, size, level, mode;

	ck_assert_int_eq(coop_rank(ctx, &rank), COOP_SUCCESS);
	ck_assert_int_eq(coop_size(ctx, &size), COOP_SUCCESS);
	ck_assert_int_eq(rank, 0);
	ck_assert_int_eq(size, 1);
	ck_assert_int_eq(coop_rank(NULL, &rank), COOP_ERR_ARG);
	ck_assert_int_eq(coop_thread_level(), COOP_THREAD_MULTIPLE);
	ck_assert_int_eq(coop_get_progress(ctx, &mode), COOP_SUCCESS);
	ck_assert_int_eq(coop_query_thread(ctx, &level), COOP_SUCCESS);
	/* no COOP_INIT_THREAD_MULTIPLE: only the settings make it so */
	ck_assert_int_eq(level, mode != COOP_PROGRESS_MANUAL ||
			 env_is("COOP_THREADS", "multiple") ?
			 COOP_THREAD_MULTIPLE : COOP_THREAD_SERIALIZED);
	ck_assert_int_eq(coop_query_thread(NULL, &level), COOP_ERR_ARG);
	ck_assert_int_eq(coop_set_progress(ctx, 3, -1), COOP_ERR_ARG);
	ck_assert_int_eq(coop_set_progress(ctx, -1, -1), COOP_ERR_ARG);
	ck_assert_int_eq(coop_set_progress(ctx, COOP_PROGRESS_THREAD, -2),
			 COOP_ERR_ARG);
	ck_assert_int_eq(coop_set_progress(NULL, 0, -1), COOP_ERR_ARG);
	ck_assert_int_eq(coop_progress(NULL), COOP_ERR_ARG);
}

START_TEST(test_p2p_args)
{
	coop_context_t *ctx = solo_ctx();

	p2p_send_args(ctx);
	p2p_recv_args(ctx);
	completion_args();
	start_and_cancel(ctx);
	buffer_args(ctx);
	context_queries(ctx);
	ck_assert_int_eq(coop_finalize(ctx), COOP_SUCCESS);
}
END_TEST

/* coop_get_load: argument and state errors; a fresh rank has no load. */
START_TEST(test_load_args)
{
	coop_init_params_t p = { .size = sizeof(p), .rank = 0, .nranks = 1 };
	unsigned char blob[COOP_ADDR_MAX_LEN];
	size_t len = sizeof(blob);
	coop_context_t *ctx;
	coop_load_t l;

	p.job_key = ((uint64_t)getpid() << 20) ^ 0x10ad;
	ck_assert_int_eq(coop_init(&p, &ctx), COOP_SUCCESS);
	ck_assert_int_eq(coop_get_load(ctx, 0, &l), COOP_ERR_STATE);
	ck_assert_int_eq(coop_address(ctx, blob, &len), COOP_SUCCESS);
	ck_assert_int_eq(coop_connect(ctx, blob, sizeof(blob)), COOP_SUCCESS);
	ck_assert_int_eq(coop_get_load(NULL, 0, &l), COOP_ERR_ARG);
	ck_assert_int_eq(coop_get_load(ctx, 0, NULL), COOP_ERR_ARG);
	ck_assert_int_eq(coop_get_load(ctx, 1, &l), COOP_ERR_RANK);
	ck_assert_int_eq(coop_get_load(ctx, -1, &l), COOP_ERR_RANK);
	ck_assert_int_eq(coop_get_load(ctx, COOP_ANY_SOURCE - 1, &l),
			 COOP_ERR_RANK);
	memset(&l, 0xa5, sizeof(l));
	ck_assert_int_eq(coop_get_load(ctx, 0, &l), COOP_SUCCESS);
	ck_assert_uint_eq(l.pending_ops, 0);
	ck_assert_uint_eq(l.pending_bytes, 0);
	ck_assert_uint_eq(l.kernel_ops, 0);
	ck_assert_uint_eq(l.kernel_bytes, 0);
	ck_assert_uint_eq(l.total_ops, 0);
	ck_assert_uint_eq(l.total_bytes, 0);
	ck_assert_int_eq(coop_finalize(ctx), COOP_SUCCESS);
}
END_TEST

START_TEST(test_strerror)
{
	int e;

	for (e = 0; e < COOP_ERR_LAST; e++) {
		ck_assert_ptr_nonnull(coop_strerror(e));
		ck_assert_str_ne(coop_strerror(e), "unknown error");
	}
	ck_assert_str_eq(coop_strerror(-1), "unknown error");
	ck_assert_str_eq(coop_strerror(COOP_ERR_LAST), "unknown error");
	ck_assert_str_eq(coop_strerror(12345), "unknown error");
}
END_TEST

/* The reach id: stable in a process, another behind a /dev/shm of its
 * own (a container, a node of tests/nodes). Needs root, as the suite. */
START_TEST(test_reach_id)
{
	uint64_t node, again, other;
	uint32_t wire, wire2;
	int fd[2], st;
	pid_t pid;

	ck_assert_int_eq(coop_reach_id(NULL, &wire), COOP_ERR_ARG);
	ck_assert_int_eq(coop_reach_id(&node, NULL), COOP_ERR_ARG);
	ck_assert_int_eq(coop_reach_id(&node, &wire), COOP_SUCCESS);
	ck_assert_int_eq(coop_reach_id(&again, &wire2), COOP_SUCCESS);
	ck_assert(node == again && wire == wire2 && wire > 0);
	ck_assert_int_eq(pipe(fd), 0);
	pid = fork();
	if (!pid) {
		if (unshare(CLONE_NEWNS) ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    mount("coop-test", "/dev/shm", "tmpfs", 0, NULL) ||
		    coop_reach_id(&other, &wire2) ||
		    write(fd[1], &other, sizeof(other)) != sizeof(other))
			_exit(1);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && !WEXITSTATUS(st),
		      "child with a /dev/shm of its own failed (root?)");
	ck_assert_int_eq(read(fd[0], &other, sizeof(other)), sizeof(other));
	close(fd[0]);
	close(fd[1]);
	ck_assert_msg(other != node, "another /dev/shm, the same reach id");
}
END_TEST

/* Self messages of every kind and size in one process. */
START_TEST(test_self)
{
	static const size_t sizes[] = { 0, 5, 48, 49, 16384, 70000, 1 << 20 };
	coop_context_t *ctx = solo_ctx();
	size_t i, big = 1 << 20;
	char *s = malloc(big), *d = malloc(big);
	coop_request_t *rr, *sr;
	coop_status_t st;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		t_fill(s, sizes[i], (uint32_t)i);
		memset(d, 0, big);
		ck_assert_int_eq(coop_irecv(ctx, d, big, COOP_ANY_SOURCE,
					    COOP_ANY_TAG, 3, 0, &rr), 0);
		ck_assert_int_eq(coop_isend(ctx, s, sizes[i], 0, 77, 3, 0, &sr),
				 0);
		ck_assert_int_eq(coop_wait(&rr, &st), 0);
		ck_assert_int_eq(coop_wait(&sr, NULL), 0);
		ck_assert_int_eq(st.source, 0);
		ck_assert_int_eq(st.tag, 77);
		ck_assert_uint_eq(st.count, sizes[i]);
		ck_assert_int_eq(t_check(d, sizes[i], (uint32_t)i), -1);
		/* unexpected path: send first */
		ck_assert_int_eq(coop_isend(ctx, s, sizes[i], 0, 78, 3, 0, &sr),
				 0);
		ck_assert_int_eq(coop_recv(ctx, d, big, 0, 78, 3, 0, &st), 0);
		ck_assert_int_eq(coop_wait(&sr, NULL), 0);
		ck_assert_int_eq(t_check(d, sizes[i], (uint32_t)i), -1);
	}
	/* PROC_NULL */
	ck_assert_int_eq(coop_send(ctx, s, 10, COOP_PROC_NULL, 0, 0, 0), 0);
	ck_assert_int_eq(coop_recv(ctx, d, 10, COOP_PROC_NULL, 0, 0, 0, &st), 0);
	ck_assert_int_eq(st.source, COOP_PROC_NULL);
	ck_assert_uint_eq(st.count, 0);
	free(s);
	free(d);
	ck_assert_int_eq(coop_finalize(ctx), COOP_SUCCESS);
}
END_TEST

/* waitany / waitsome / testall / testsome / testany on self messages. */
START_TEST(test_completion_calls)
{
	coop_context_t *ctx = solo_ctx();
	coop_request_t *r[6];
	coop_status_t st[6];
	int buf[6], out[6], idx[6], i, n, flag, total = 0;

	for (i = 0; i < 6; i++)
		ck_assert_int_eq(coop_irecv(ctx, &out[i], sizeof(int), 0, i, 1,
					    0, &r[i]), 0);
	ck_assert_int_eq(coop_testall(6, r, &flag, st), 0);
	ck_assert_int_eq(flag, 0);
	ck_assert_int_eq(coop_testsome(6, r, &n, idx, st), 0);
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(coop_testany(6, r, &i, &flag, st), 0);
	ck_assert_int_eq(flag, 0);
	for (i = 0; i < 6; i++) {
		buf[i] = 100 + i;
		ck_assert_int_eq(coop_send(ctx, &buf[i], sizeof(int), 0, 5 - i,
					   1, 0), 0);
	}
	ck_assert_int_eq(coop_waitany(6, r, &i, &st[0]), 0);
	ck_assert_ptr_null(r[i]);
	ck_assert_int_eq(out[i], 100 + 5 - i);
	total++;
	ck_assert_int_eq(coop_waitsome(6, r, &n, idx, st), 0);
	ck_assert_int_ge(n, 1);
	total += n;
	ck_assert_int_eq(coop_testall(6, r, &flag, st), 0);
	ck_assert_int_eq(flag, 1);
	for (i = 0; i < 6; i++) {
		ck_assert_ptr_null(r[i]);
		ck_assert_int_eq(out[i], 100 + 5 - i);
	}
	ck_assert_int_eq(coop_finalize(ctx), COOP_SUCCESS);
}
END_TEST

TCase *tc_api(void)
{
	TCase *tc = tcase_create("api");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_init_args);
	tcase_add_test(tc, test_init_bad_env);
	tcase_add_test(tc, test_boot_env);
	tcase_add_test(tc, test_env_unknown);
	tcase_add_test(tc, test_env_old_name);
	tcase_add_test(tc, test_config_print);
	tcase_add_test(tc, test_p2p_args);
	tcase_add_test(tc, test_load_args);
	tcase_add_test(tc, test_strerror);
	tcase_add_test(tc, test_reach_id);
	tcase_add_test(tc, test_self);
	tcase_add_test(tc, test_completion_calls);
	return tc;
}
