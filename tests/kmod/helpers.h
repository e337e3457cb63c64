/* SPDX-License-Identifier: GPL-2.0 */
/*
 * helpers.h - shared helpers of the coopmpi.ko Check test suite.
 *
 * Conventions:
 *  - every cm_* ioctl wrapper returns 0 on success or -errno;
 *  - REQUIRE() works both in the Check test process (it fails the test
 *    through Check) and in processes the test forked itself (it prints the
 *    failure and _exit()s with CM_CHILD_FAIL, which the parent's
 *    cm_wait_ok() turns into a test failure);
 *  - forked helpers always end with _exit(), never return into Check.
 */
#ifndef COOPMPI_TEST_HELPERS_H
#define COOPMPI_TEST_HELPERS_H

#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "coopmpi_uapi.h"

#define CM_DEV_PATH	"/dev/" COOPMPI_DEVICE_NAME
#define CM_SYSFS_DIR	"/sys/kernel/coopmpi"
#define CM_PARAM_DIR	"/sys/module/coopmpi/parameters/"
#define CM_CHILD_FAIL	86
/* The driver's deadlines count jiffies (4 ms each at HZ=250, 10 at 100),
 * ours whole milliseconds: a deadline may end this much before it. */
#define CM_CLOCK_SLACK_MS 10

extern pid_t cm_test_pid;
extern struct coopmpi_info cm_info_cache;

/* Check fixture: records the test process and fetches INFO once. */
void cm_setup(void);
void cm_teardown(void);
/* Adds the standard checked fixture and a timeout to a tcase. */
TCase *cm_tcase(const char *name, double timeout_s);

void cm_fail(const char *file, int line, const char *expr,
	     const char *fmt, ...) __attribute__((noreturn, format(printf, 4, 5)));

#define REQUIRE(cond, ...)						\
	do {								\
		if (!(cond))						\
			cm_fail(__FILE__, __LINE__, #cond, __VA_ARGS__); \
	} while (0)

/* expr returns 0 / -errno */
#define REQUIRE_OK(expr)						\
	do {								\
		long _r = (long)(expr);					\
		REQUIRE(_r == 0, "%s returned %ld (%s), expected 0",	\
			#expr, _r, _r < 0 ? strerror((int)-_r) : "?");	\
	} while (0)

#define REQUIRE_ERR(expr, err)						\
	do {								\
		long _r = (long)(expr);					\
		REQUIRE(_r == -(long)(err),				\
			"%s returned %ld (%s), expected -%s",		\
			#expr, _r, _r < 0 ? strerror((int)-_r) : "success", \
			#err);						\
	} while (0)

/* ---- generic ---- */
const char *cm_errname(int err);	/* "ENXIO" etc. for errno values */
uint64_t cm_now_ms(void);
void cm_sleep_ms(unsigned ms);
uint64_t cm_unique_key(void);		/* a fresh domain key */
void cm_require_root(void);
/* uid and gid 65534 (nobody): a user other than root */
#define CM_NOBODY 65534
/* setgroups(0), then gid and uid CM_NOBODY (real, effective, saved) */
void cm_drop_to_nobody(void);

/* xorshift64* PRNG */
struct cm_rng { uint64_t s; };
void cm_rng_seed(struct cm_rng *r, uint64_t seed);
uint64_t cm_rng_next(struct cm_rng *r);
uint64_t cm_rng_below(struct cm_rng *r, uint64_t n);

/* ---- device and raw ioctls ---- */
int cm_open(void);			/* asserts success */
int cm_ioctl(int fd, unsigned long cmd, void *arg);	/* 0 / -errno */
int cm_get_info(int fd, struct coopmpi_info *info);
int cm_join(int fd, uint64_t key, uint32_t flags, struct coopmpi_join *out);
/* open + join, asserting success */
int cm_open_join(uint64_t key, uint32_t flags, struct coopmpi_join *out);
int cm_ep_query(int fd, uint32_t ep, struct coopmpi_ep_query *out);
int cm_send(int fd, uint32_t peer, const void *msgs, uint32_t count,
	    uint32_t *done);
int cm_recv(int fd, void *msgs, uint32_t count, uint32_t flags,
	    uint32_t *done);
int cm_doorbell(int fd, uint32_t peer);
int cm_reg(int fd, const void *addr, uint64_t len, uint32_t flags,
	   uint64_t *cookie);
int cm_dereg(int fd, uint64_t cookie);
int cm_copyv(int fd, uint64_t cookie, uint64_t off, const struct iovec *iov,
	     uint32_t iov_count, uint64_t len, uint32_t flags, uint64_t *copied);
int cm_copy(int fd, uint64_t cookie, uint64_t off, void *buf, uint64_t len,
	    uint32_t flags, uint64_t *copied);

/* ---- test messages ---- */
struct cm_msg {
	uint32_t magic;
	uint32_t producer;
	uint64_t seq;
	uint8_t fill[48];
};
_Static_assert(sizeof(struct cm_msg) == COOPMPI_MSG_SIZE, "msg size");
#define CM_MSG_MAGIC 0x7e57ab1eU
void cm_msg_make(struct cm_msg *m, uint32_t producer, uint64_t seq);
bool cm_msg_valid(const struct cm_msg *m);	/* magic and fill intact */

/* ---- mailbox ring mapped into user space ---- */
struct cm_ring {
	void *base;
	size_t bytes;
	uint32_t slots;
	struct coopmpi_ring_hdr *hdr;
	uint64_t *seq;
	uint8_t *msgs;
};
/* mmap COOPMPI_MMAP_RING(ep) of fd's domain; 0 / -errno */
int cm_ring_map(int fd, uint32_t ep, struct cm_ring *r);
void cm_ring_unmap(struct cm_ring *r);
/* uapi producer protocol: 0 ok, 1 ok and wake_requested set, -EAGAIN full */
int cm_ring_produce(struct cm_ring *r, const void *msg);
/* producer + doorbell through fd when the consumer asked for it */
int cm_ring_send(int fd, uint32_t peer, struct cm_ring *r, const void *msg);
/* uapi consumer protocol: 0 got one, -EAGAIN empty */
int cm_ring_consume(struct cm_ring *r, void *msg);
bool cm_ring_empty(struct cm_ring *r);

/* ---- counters area ---- */
struct cm_counters {
	void *base;
	size_t bytes;
	struct coopmpi_counters_hdr *hdr;
	struct coopmpi_offload_counters *offload;
	struct coopmpi_load_slot *slot;
};
int cm_counters_map(int fd, struct cm_counters *c);
void cm_counters_unmap(struct cm_counters *c);

/* ---- processes and IPC ---- */
/* fork(); the child gets PR_SET_PDEATHSIG=SIGKILL. */
pid_t cm_fork(void);
/* waitpid and require a clean exit(0) */
void cm_wait_ok(pid_t pid, const char *what);
/* waitpid with a deadline; 0 when reaped (status stored), -ETIMEDOUT */
int cm_wait_timeout(pid_t pid, unsigned timeout_ms, int *status);
/* kill + reap, for cleanup */
void cm_kill_wait(pid_t pid);
void cm_socketpair(int sv[2]);
void cm_put_u64(int fd, uint64_t v);
uint64_t cm_get_u64(int fd);
/* the same, but on EOF report how child `pid` ended */
uint64_t cm_get_u64_from(int fd, pid_t pid, const char *what);
/* get with timeout: 0 ok, -ETIMEDOUT, -EPIPE on EOF */
int cm_get_u64_timeout(int fd, uint64_t *v, unsigned timeout_ms);

/* ---- memory ---- */
void *cm_map_anon(size_t len);		/* asserts */
void cm_unmap(void *p, size_t len);
/* memfd shared between the test and a region owner at different addresses */
struct cm_shm {
	int fd;
	size_t len;
	uint8_t *view;
};
void cm_shm_create(struct cm_shm *s, size_t len);
void cm_shm_destroy(struct cm_shm *s);
void cm_fill_pattern(uint8_t *p, size_t len, uint64_t seed);
/* p[i] = pattern byte (start_idx + i) */
void cm_fill_pattern_at(uint8_t *p, size_t len, uint64_t seed,
			uint64_t start_idx);
uint8_t cm_pattern_byte(uint64_t seed, uint64_t idx);
/* index of first mismatch with the pattern, or -1 */
long cm_check_pattern(const uint8_t *p, size_t len, uint64_t seed,
		      uint64_t start_idx);
long cm_check_byte(const uint8_t *p, size_t len, uint8_t v);

/*
 * A region owner: a forked process that opens its own endpoint, joins
 * `key` (JOIN_EXISTING), maps memory and registers it, sends
 * {ep_id, cookie, cookie2, address} to the test and waits for a command.
 *   shm != NULL: region over a fresh mapping of shm (different address
 *                from shm->view); cookie2 covers [4093, 4093+len/2).
 *   shm == NULL: region over len bytes of private anonymous memory filled
 *                with cm_fill_pattern(seed); cookie2 = 0.
 * Commands: cm_owner_finish() makes it deregister and exit 0.
 */
struct cm_owner {
	pid_t pid;
	int sock;
	uint32_t ep_id;
	uint64_t cookie;
	uint64_t cookie2;
	uint64_t addr;
	uint64_t len;
};
#define CM_OWNER_SUB_OFF 4093ULL
void cm_owner_spawn(struct cm_owner *o, uint64_t key, struct cm_shm *shm,
		    size_t len, uint32_t flags, uint64_t seed);
void cm_owner_finish(struct cm_owner *o);

/*
 * ---- stalled memory ----
 * Anonymous memory registered with userfaultfd (missing pages) that only
 * UFFDIO_COPY fills: a DMA from it stays in flight (the driver's workers
 * never wait for a fault; they retry) and a COPY from it waits in the
 * fault, until cm_uffd_fill() - a way to hold descriptors in flight and
 * copies waiting, deterministically.  Never touch it directly.
 */
struct cm_uffd {
	int fd;
	uint8_t *area;
	size_t len;
};
void cm_uffd_create(struct cm_uffd *u, size_t len);
/* fill [off, off + len) (page aligned) with pattern bytes (seed, off) */
void cm_uffd_fill(struct cm_uffd *u, size_t off, size_t len, uint64_t seed);
void cm_uffd_destroy(struct cm_uffd *u);

/* ---- sysfs ---- */
/* read a whole sysfs file; returns bytes read or -errno */
int cm_read_file(const char *path, char *buf, size_t size);
/* write the string to a sysfs/cgroup file in one write; 0 or -errno */
int cm_write_file(const char *path, const char *s);
/* /sys/kernel/coopmpi/<name> as an unsigned integer, asserts */
uint64_t cm_sysfs_u64(const char *name);
bool cm_path_exists(const char *path);
/* module parameter <name> as a string without the newline (one of four
 * static buffers) or as a number; asserts */
const char *cm_param_get(const char *name);
uint64_t cm_param_u64(const char *name);
/* sets module parameter <name>, asserts it took; returns the old value
 * (as cm_param_get) for the test to put back */
const char *cm_param_swap(const char *name, const char *val);

/* ---- suites ---- */
void add_basic_tests(Suite *s);
void add_domain_tests(Suite *s);
void add_mbox_tests(Suite *s);
void add_region_tests(Suite *s);
void add_copy_tests(Suite *s);
void add_kill_tests(Suite *s);
void add_fuzz_tests(Suite *s);
void add_sysfs_tests(Suite *s);
void add_counters_tests(Suite *s);
void add_limits_tests(Suite *s);
void add_user_tests(Suite *s);
void add_window_tests(Suite *s);

#endif
