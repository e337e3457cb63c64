/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * harness.h - multi-process test harness for libcoopmpi: run a function in
 * N forked ranks (each one bootstrapped with coop_init_from_env under a
 * fresh job key and optional environment overrides), with a time limit.
 */
#ifndef TEST_HARNESS_H
#define TEST_HARNESS_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "coopmpi.h"

typedef int (*rank_fn)(coop_context_t *ctx, int rank, int size, void *arg);

/* Outcome of one rank: exit status, or signal number if killed. */
struct rank_result {
	int exited;
	int status;
	int signo;
};

/*
 * Run fn in n ranks.  env: NULL or "VAR=value" strings (NULL-terminated)
 * set in every rank before coop_init_from_env ("R<k>:VAR=value": rank k
 * only).  Returns 0 if every rank exited 0 within timeout_s (times
 * t_time_scale()); results (may be NULL) gets each rank's fate.
 */
int run_ranks(int n, const char *const *env, rank_fn fn, void *arg,
	      int timeout_s, struct rank_result *results);

/*
 * Factor for time limits and timed phases ("compute" sleeps): 3 in the
 * test VM (scripts/vm sets COOP_IN_VM=1; TCG runs ~20x slower and its
 * vCPUs stall), else 1.  A slow machine must not pass for a hang or a
 * missing overlap; nothing is skipped.
 */
int t_time_scale(void);

/* Pin the calling process to the first CPU it may run on; was (may be
 * NULL) gets the CPUs it might run on before.  0, or -1 with errno. */
int t_pin_first_cpu(cpu_set_t *was);

/* Shared memory visible to all ranks of the next run_ranks (MAP_SHARED). */
void *shared_alloc(size_t bytes);
void shared_free(void *p, size_t bytes);

/* Inside a rank: fail loudly and exit(1). */
#define T_FAIL(...) do { t_stderr_release(); \
	fprintf(stderr, "[rank %d] %s:%d: ", t_rank, __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); \
	fflush(stderr); _exit(1); } while (0)
#define T_ASSERT(c, ...) do { if (!(c)) { \
	fprintf(stderr, "[rank %d] failed: %s\n", t_rank, #c); \
	T_FAIL(__VA_ARGS__); } } while (0)
#define T_OK(call) do { int rc_ = (call); if (rc_) \
	T_FAIL("%s -> %s", #call, coop_strerror(rc_)); } while (0)

extern int t_rank;		/* rank of this process (-1 in the parent) */
extern uint64_t t_job;		/* job key of the current run */
/* A second key of the current run, for contexts of the ranks' own (a
 * dynamic domain): its /dev/shm files are removed with the run's. */
uint64_t t_extra_key(void);

/*
 * Make the n system calls nr[] fail with errno err in this process and
 * its children, for good (seccomp; run it in a forked test): 0 or -1.
 */
int t_deny_syscalls(const int *nr, int n, int err);

/* /sys/kernel/coopmpi/<name>: a node-wide counter of the driver, or
 * UINT64_MAX when it cannot be read (no driver). */
uint64_t t_sysfs_u64(const char *name);
/* Will the ranks' provider be kmod (COOP_PROVIDER and /dev/coopmpi)? */
int t_kmod_provider(void);
/* Will the ranks get the HCA engine (COOP_ENGINE=hca in the
 * environment: an RDMA device must be there, e.g. scripts/vm/rxe-up)? */
int t_engine_hca(void);
/* ... an offload engine at all: the HCA's, or kmod's DMA channel
 * (/sys/kernel/coopmpi/dma_engine not "none")? */
int t_engine_present(void);
/* Work the engine has finished, node-wide, counted by the one who runs
 * it: the driver's copies (sysfs dma_completed) or the RDMA devices'
 * sent packets (hw_counters/sent_pkts: at least one per copy). */
uint64_t t_engine_done(void);
/* ... that, plus the DMA copies queued or running: grows as soon as the
 * engine takes a copy. */
uint64_t t_engine_activity(void);

/* Helpers for rank code */
/* The domain's offload engines' bytes in flight (DMA + HCA), or 0. */
uint64_t t_offload_bytes(coop_context_t *ctx);
/* ... their copies in flight. */
uint64_t t_offload_ops(coop_context_t *ctx);
void t_barrier(coop_context_t *ctx, int rank, int size);
/* A flag in shared memory (shared_alloc) between ranks that must not
 * call the library while they wait: raise it (release), or wait until
 * it is raised (acquire, polling every millisecond). */
void t_flag_raise(int *flag);
void t_flag_wait(const int *flag);
/* What the library writes on stderr: t_stderr_begin sends this process's
 * stderr (fd 2) to a temporary file, returned (NULL, errno: it could
 * not), the old one kept in *saved; t_stderr_end(saved) gives it
 * back.  t_count_lines: the lines of f, from its start, that contain
 * both a and b. */
FILE *t_stderr_begin(int *saved);
void t_stderr_end(int saved);
/* A failing check's message reaches the real stderr: the one
 * t_stderr_begin kept, if it still keeps one, is given back. */
void t_stderr_release(void);
int t_count_lines(FILE *f, const char *a, const char *b);
void t_fill(void *buf, size_t len, uint32_t seed);
/* Index of the first byte that differs from t_fill(seed), or -1. */
long t_check(const void *buf, size_t len, uint32_t seed);

#endif
