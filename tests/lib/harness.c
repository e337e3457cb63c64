/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* harness.c - see harness.h. */
#include <errno.h>
#include <glob.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "harness.h"

#define BARRIER_COMM 0xfffe

int t_rank = -1;
uint64_t t_job;
static unsigned run_counter;

void *shared_alloc(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		abort();
	}
	return p;
}

void shared_free(void *p, size_t bytes)
{
	munmap(p, bytes);
}

static void rank_main(int rank, int n, const char *const *env, rank_fn fn,
		      void *arg)
{
	coop_context_t *ctx;
	char buf[32];
	int rc, i;

	t_rank = rank;
	snprintf(buf, sizeof(buf), "%d", rank);
	setenv("COOP_RANK", buf, 1);
	snprintf(buf, sizeof(buf), "%d", n);
	setenv("COOP_SIZE", buf, 1);
	snprintf(buf, sizeof(buf), "%016llx", (unsigned long long)t_job);
	setenv("COOP_JOB", buf, 1);
	for (i = 0; env && env[i]; i++) {
		const char *e = env[i];
		int only = -1, k = 0;

		if (sscanf(e, "R%d:%n", &only, &k) == 1 && k > 0) {
			if (only != rank)
				continue;
			e += k;
		}
		putenv((char *)e);
	}
	rc = coop_init_from_env(&ctx);
	if (rc)
		T_FAIL("coop_init_from_env: %s", coop_strerror(rc));
	rc = fn(ctx, rank, n, arg);
	if (rc)
		T_FAIL("rank function returned %d", rc);
	rc = coop_finalize(ctx);
	if (rc)
		T_FAIL("coop_finalize: %s", coop_strerror(rc));
	fflush(stdout);
	_exit(0);
}

uint64_t t_extra_key(void)
{
	return t_job ^ 0xd1a0000000000000ULL;
}

static void cleanup_key(uint64_t key)
{
	char pat[96];
	glob_t g;
	size_t i;

	snprintf(pat, sizeof(pat), "/dev/shm/coopmpi-%016llx-*",
		 (unsigned long long)key);
	if (glob(pat, 0, NULL, &g))
		return;
	for (i = 0; i < g.gl_pathc; i++)
		unlink(g.gl_pathv[i]);
	globfree(&g);
}

/* The run's files, also those a rank that failed could not remove. */
static void cleanup_shm(void)
{
	cleanup_key(t_job);
	cleanup_key(t_extra_key());
}

int t_time_scale(void)
{
	const char *vm = getenv("COOP_IN_VM");

	return vm && !strcmp(vm, "1") ? 3 : 1;
}

int t_pin_first_cpu(cpu_set_t *was)
{
	cpu_set_t set, one;
	int cpu;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	for (cpu = 0; cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &set); cpu++)
		;
	if (was)
		*was = set;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	return sched_setaffinity(0, sizeof(one), &one);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int collect(int n, pid_t *pids, int timeout_s,
		   struct rank_result *res)
{
	double deadline = now_s() + timeout_s;
	int left = n, bad = 0, i, st;

	while (left > 0) {
		pid_t p = waitpid(-1, &st, WNOHANG);

		if (p == 0) {
			if (now_s() > deadline) {
				fprintf(stderr, "harness: time limit of %d s "
					"reached, killing the ranks\n",
					timeout_s);
				for (i = 0; i < n; i++)
					if (pids[i])
						kill(pids[i], SIGKILL);
				deadline = 1e300;
				bad = 1;
			}
			usleep(1000);
			continue;
		}
		if (p < 0)
			break;
		for (i = 0; i < n && pids[i] != p; i++)
			;
		if (i == n)
			continue;
		pids[i] = 0;
		left--;
		res[i].exited = WIFEXITED(st);
		res[i].status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		res[i].signo = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
		if (!res[i].exited || res[i].status)
			bad = 1;
	}
	return bad;
}

/* A failed run's ranks: a signal or a silent exit leaves no message of
 * the rank's own (T_FAIL prints one before exiting). */
static void report_fates(int n, const struct rank_result *res)
{
	int i;

	for (i = 0; i < n; i++) {
		if (res[i].signo)
			fprintf(stderr, "harness: rank %d killed by signal %d (%s)\n",
				i, res[i].signo, strsignal(res[i].signo));
		else if (res[i].exited && res[i].status)
			fprintf(stderr, "harness: rank %d exited with %d\n", i,
				res[i].status);
	}
}

int run_ranks(int n, const char *const *env, rank_fn fn, void *arg,
	      int timeout_s, struct rank_result *results)
{
	struct rank_result local[64] = { { 0 } };	/* an unreaped rank: no fate */
	struct rank_result *res = results ? results : local;
	pid_t pids[64];
	int i, bad;

	if (n > 64)
		return -1;
	t_job = ((uint64_t)getpid() << 24) ^ ((uint64_t)++run_counter << 8) ^
		(uint64_t)time(NULL) << 40;
	fflush(stdout);
	fflush(stderr);
	for (i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			rank_main(i, n, env, fn, arg);
		if (pids[i] < 0) {
			perror("fork");
			abort();
		}
	}
	bad = collect(n, pids, timeout_s * t_time_scale(), res);
	if (bad && !results)	/* nobody else will look at the fates */
		report_fates(n, res);
	cleanup_shm();
	return bad;
}

int t_deny_syscalls(const int *nr, int n, int err)
{
	struct sock_filter f[16 + 3];
	struct sock_fprog prog = { (unsigned short)(n + 3), f };
	int i;

	if (n < 1 || n > 16)
		return -1;
	f[0] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
				offsetof(struct seccomp_data, nr));
	for (i = 0; i < n; i++)		/* a match jumps to the last one */
		f[1 + i] = (struct sock_filter)BPF_JUMP(
			BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr[i],
			(unsigned char)(n - i), 0);
	f[1 + n] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
						SECCOMP_RET_ALLOW);
	f[2 + n] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
				SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA));
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -1;
	return 0;
}

static int stderr_kept = -1;	/* t_stderr_begin's saved fd */

FILE *t_stderr_begin(int *saved)
{
	FILE *f = tmpfile();

	if (!f)
		return NULL;
	fflush(stderr);
	*saved = dup(2);
	if (*saved >= 0 && dup2(fileno(f), 2) == 2) {
		stderr_kept = *saved;
		return f;
	}
	if (*saved >= 0)
		close(*saved);
	fclose(f);
	return NULL;
}

void t_stderr_end(int saved)
{
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	if (saved == stderr_kept)
		stderr_kept = -1;
}

void t_stderr_release(void)
{
	if (stderr_kept >= 0)
		t_stderr_end(stderr_kept);
}

int t_count_lines(FILE *f, const char *a, const char *b)
{
	char line[512];
	int n = 0;

	rewind(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, a) && strstr(line, b))
			n++;
	return n;
}

uint64_t t_sysfs_u64(const char *name)
{
	char path[128], buf[32];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/sys/kernel/coopmpi/%s", name);
	f = fopen(path, "r");
	if (!f)
		return UINT64_MAX;
	ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	return ok ? strtoull(buf, NULL, 10) : UINT64_MAX;
}

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	int ok;

	if (!f)
		return -1;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

int t_kmod_provider(void)
{
	const char *prov = getenv("COOP_PROVIDER");

	if (prov && *prov && strcmp(prov, "kmod"))
		return 0;
	return !access("/dev/coopmpi", R_OK | W_OK);
}

int t_engine_hca(void)
{
	const char *e = getenv("COOP_ENGINE");

	return e && !strcmp(e, "hca");
}

/* The sum of the RDMA devices' port counter name. */
static uint64_t rdma_counter_sum(const char *name)
{
	char pat[128], buf[32];
	uint64_t sum = 0;
	glob_t g;
	size_t i;

	snprintf(pat, sizeof(pat),
		 "/sys/class/infiniband/*/ports/*/hw_counters/%s", name);
	if (glob(pat, 0, NULL, &g))
		return 0;
	for (i = 0; i < g.gl_pathc; i++)
		if (!read_line(g.gl_pathv[i], buf, sizeof(buf)))
			sum += strtoull(buf, NULL, 10);
	globfree(&g);
	return sum;
}

uint64_t t_engine_done(void)
{
	if (t_engine_hca())
		return rdma_counter_sum("sent_pkts");
	return t_sysfs_u64("dma_completed");
}

uint64_t t_engine_activity(void)
{
	if (t_engine_hca())
		return rdma_counter_sum("sent_pkts");
	return t_sysfs_u64("dma_ops") + t_sysfs_u64("dma_completed");
}

int t_engine_present(void)
{
	char eng[16];

	if (t_engine_hca())
		return 1;
	if (!t_kmod_provider() ||
	    read_line("/sys/kernel/coopmpi/dma_engine", eng, sizeof(eng)))
		return 0;
	return strcmp(eng, "none") != 0;
}

uint64_t t_offload_bytes(coop_context_t *ctx)
{
	coop_offload_load_t o;

	T_OK(coop_get_offload_load(ctx, &o));
	return o.dma_bytes + o.hca_bytes;
}

uint64_t t_offload_ops(coop_context_t *ctx)
{
	coop_offload_load_t o;

	T_OK(coop_get_offload_load(ctx, &o));
	return o.dma_ops + o.hca_ops;
}

void t_flag_raise(int *flag)
{
	__atomic_store_n(flag, 1, __ATOMIC_RELEASE);
}

void t_flag_wait(const int *flag)
{
	while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE))
		usleep(1000);
}

void t_barrier(coop_context_t *ctx, int rank, int size)
{
	int i;

	/* gather to 0, then release */
	if (rank == 0) {
		for (i = 1; i < size; i++)
			T_OK(coop_recv(ctx, NULL, 0, i, 0, BARRIER_COMM, 0,
				       NULL));
		for (i = 1; i < size; i++)
			T_OK(coop_send(ctx, NULL, 0, i, 1, BARRIER_COMM, 0));
	} else {
		T_OK(coop_send(ctx, NULL, 0, 0, 0, BARRIER_COMM, 0));
		T_OK(coop_recv(ctx, NULL, 0, 0, 1, BARRIER_COMM, 0, NULL));
	}
}

static inline uint32_t xs(uint32_t *s)
{
	uint32_t x = *s;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *s = x;
}

void t_fill(void *buf, size_t len, uint32_t seed)
{
	unsigned char *p = buf;
	uint32_t s = seed * 2654435761u + 1;
	size_t i;

	for (i = 0; i + 4 <= len; i += 4) {
		uint32_t v = xs(&s);

		memcpy(p + i, &v, 4);
	}
	for (; i < len; i++)
		p[i] = (unsigned char)xs(&s);
}

long t_check(const void *buf, size_t len, uint32_t seed)
{
	const unsigned char *p = buf;
	uint32_t s = seed * 2654435761u + 1;
	size_t i;

	for (i = 0; i + 4 <= len; i += 4) {
		uint32_t v = xs(&s);

		if (memcmp(p + i, &v, 4))
			return (long)i;
	}
	for (; i < len; i++)
		if (p[i] != (unsigned char)xs(&s))
			return (long)i;
	return -1;
}
