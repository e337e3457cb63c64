// SPDX-License-Identifier: GPL-2.0
/* helpers.c - shared helpers of the coopmpi.ko Check test suite. */
#include "helpers.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

pid_t cm_test_pid;
struct coopmpi_info cm_info_cache;

void cm_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (getpid() == cm_test_pid)
		_ck_assert_failed(file, line, expr, "%s: %s", expr, msg);
	fprintf(stderr, "[child %d] %s:%d: requirement '%s' failed: %s\n",
		(int)getpid(), file, line, expr, msg);
	fflush(stderr);
	_exit(CM_CHILD_FAIL);
}

void cm_setup(void)
{
	int fd;

	cm_test_pid = getpid();
	fd = open(CM_DEV_PATH, O_RDWR | O_CLOEXEC);
	REQUIRE(fd >= 0, "cannot open %s: %s (is coopmpi.ko loaded?)",
		CM_DEV_PATH, strerror(errno));
	memset(&cm_info_cache, 0, sizeof(cm_info_cache));
	REQUIRE_OK(cm_get_info(fd, &cm_info_cache));
	REQUIRE(cm_info_cache.ring_slots > 0 &&
		cm_info_cache.max_endpoints > 0,
		"INFO returned ring_slots=%u max_endpoints=%u",
		cm_info_cache.ring_slots, cm_info_cache.max_endpoints);
	close(fd);
}

void cm_teardown(void)
{
}

TCase *cm_tcase(const char *name, double timeout_s)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, cm_setup, cm_teardown);
	tcase_set_timeout(tc, timeout_s);
	return tc;
}

const char *cm_errname(int err)
{
	switch (err) {
	case 0: return "0";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case ESRCH: return "ESRCH";
	case EINTR: return "EINTR";
	case ENXIO: return "ENXIO";
	case E2BIG: return "E2BIG";
	case EBADF: return "EBADF";
	case EAGAIN: return "EAGAIN";
	case ENOMEM: return "ENOMEM";
	case EACCES: return "EACCES";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case ENODEV: return "ENODEV";
	case EINVAL: return "EINVAL";
	case ENOSPC: return "ENOSPC";
	case ERANGE: return "ERANGE";
	case ENOTTY: return "ENOTTY";
	case EOVERFLOW: return "EOVERFLOW";
	case ENOTCONN: return "ENOTCONN";
	case EALREADY: return "EALREADY";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ETIMEDOUT: return "ETIMEDOUT";
	case ERESTART: return "ERESTART";
	default: return "E?";
	}
}

uint64_t cm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void cm_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

uint64_t cm_unique_key(void)
{
	static uint64_t counter;
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return mix64(((uint64_t)getpid() << 40) ^ ((uint64_t)ts.tv_nsec << 8) ^
		     ((uint64_t)ts.tv_sec << 32) ^ ++counter);
}

void cm_require_root(void)
{
	REQUIRE(geteuid() == 0,
		"this test needs root (euid is %d); the VM runs the suite as root",
		(int)geteuid());
}

void cm_drop_to_nobody(void)
{
	REQUIRE(setgroups(0, NULL) == 0, "setgroups: %s", strerror(errno));
	REQUIRE(setresgid(CM_NOBODY, CM_NOBODY, CM_NOBODY) == 0,
		"setresgid: %s", strerror(errno));
	REQUIRE(setresuid(CM_NOBODY, CM_NOBODY, CM_NOBODY) == 0,
		"setresuid: %s", strerror(errno));
	REQUIRE(geteuid() == CM_NOBODY, "euid %d", (int)geteuid());
}

void cm_rng_seed(struct cm_rng *r, uint64_t seed)
{
	r->s = mix64(seed) | 1;
}

uint64_t cm_rng_next(struct cm_rng *r)
{
	uint64_t x = r->s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	r->s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

uint64_t cm_rng_below(struct cm_rng *r, uint64_t n)
{
	return n ? cm_rng_next(r) % n : 0;
}

/* ------------------------------------------------------------------ */

int cm_open(void)
{
	int fd = open(CM_DEV_PATH, O_RDWR | O_CLOEXEC);

	REQUIRE(fd >= 0, "open %s: %s", CM_DEV_PATH, strerror(errno));
	return fd;
}

int cm_ioctl(int fd, unsigned long cmd, void *arg)
{
	int r = ioctl(fd, cmd, arg);

	if (r == 0)
		return 0;
	REQUIRE(r == -1, "ioctl 0x%lx returned %d (neither 0 nor -1)", cmd, r);
	return -errno;
}

int cm_get_info(int fd, struct coopmpi_info *info)
{
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	return cm_ioctl(fd, COOPMPI_IOC_INFO, info);
}

int cm_join(int fd, uint64_t key, uint32_t flags, struct coopmpi_join *out)
{
	struct coopmpi_join j;
	int r;

	memset(&j, 0, sizeof(j));
	j.size = sizeof(j);
	j.flags = flags;
	j.key = key;
	r = cm_ioctl(fd, COOPMPI_IOC_JOIN, &j);
	if (out)
		*out = j;
	return r;
}

int cm_open_join(uint64_t key, uint32_t flags, struct coopmpi_join *out)
{
	struct coopmpi_join j;
	int fd = cm_open();
	int r = cm_join(fd, key, flags, &j);

	REQUIRE(r == 0, "JOIN key=%#llx flags=%#x: %s",
		(unsigned long long)key, flags, cm_errname(-r));
	REQUIRE(j.ep_id < j.max_endpoints, "JOIN ep_id %u >= max_endpoints %u",
		j.ep_id, j.max_endpoints);
	if (out)
		*out = j;
	return fd;
}

int cm_ep_query(int fd, uint32_t ep, struct coopmpi_ep_query *out)
{
	struct coopmpi_ep_query q;
	int r;

	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	q.ep_id = ep;
	r = cm_ioctl(fd, COOPMPI_IOC_EP_QUERY, &q);
	if (out)
		*out = q;
	return r;
}

int cm_send(int fd, uint32_t peer, const void *msgs, uint32_t count,
	    uint32_t *done)
{
	struct coopmpi_mbox_xfer x;
	int r;

	memset(&x, 0, sizeof(x));
	x.size = sizeof(x);
	x.peer = peer;
	x.count = count;
	x.msgs = (uintptr_t)msgs;
	x.done = 0xdeadbeef;
	r = cm_ioctl(fd, COOPMPI_IOC_MBOX_SEND, &x);
	if (done)
		*done = x.done;
	return r;
}

int cm_recv(int fd, void *msgs, uint32_t count, uint32_t flags, uint32_t *done)
{
	struct coopmpi_mbox_xfer x;
	int r;

	memset(&x, 0, sizeof(x));
	x.size = sizeof(x);
	x.flags = flags;
	x.count = count;
	x.msgs = (uintptr_t)msgs;
	x.done = 0xdeadbeef;
	r = cm_ioctl(fd, COOPMPI_IOC_MBOX_RECV, &x);
	if (done)
		*done = x.done;
	return r;
}

int cm_doorbell(int fd, uint32_t peer)
{
	struct coopmpi_doorbell d;

	memset(&d, 0, sizeof(d));
	d.size = sizeof(d);
	d.peer = peer;
	return cm_ioctl(fd, COOPMPI_IOC_DOORBELL, &d);
}

int cm_reg(int fd, const void *addr, uint64_t len, uint32_t flags,
	   uint64_t *cookie)
{
	struct coopmpi_region_register rr;
	int r;

	memset(&rr, 0, sizeof(rr));
	rr.size = sizeof(rr);
	rr.flags = flags;
	rr.addr = (uintptr_t)addr;
	rr.length = len;
	r = cm_ioctl(fd, COOPMPI_IOC_REGION_REGISTER, &rr);
	if (cookie)
		*cookie = rr.cookie;
	return r;
}

int cm_dereg(int fd, uint64_t cookie)
{
	struct coopmpi_region_deregister d;

	memset(&d, 0, sizeof(d));
	d.size = sizeof(d);
	d.cookie = cookie;
	return cm_ioctl(fd, COOPMPI_IOC_REGION_DEREGISTER, &d);
}

int cm_copyv(int fd, uint64_t cookie, uint64_t off, const struct iovec *iov,
	     uint32_t iov_count, uint64_t len, uint32_t flags, uint64_t *copied)
{
	struct coopmpi_copy c;
	int r;

	memset(&c, 0, sizeof(c));
	c.size = sizeof(c);
	c.flags = flags;
	c.cookie = cookie;
	c.offset = off;
	c.iov = (uintptr_t)iov;
	c.iov_count = iov_count;
	c.length = len;
	c.copied = 0xdeadbeefcafeULL;	/* must be overwritten */
	r = cm_ioctl(fd, COOPMPI_IOC_COPY, &c);
	if (copied)
		*copied = c.copied;
	return r;
}

int cm_copy(int fd, uint64_t cookie, uint64_t off, void *buf, uint64_t len,
	    uint32_t flags, uint64_t *copied)
{
	struct iovec iov = { buf, len };

	return cm_copyv(fd, cookie, off, &iov, 1, len, flags, copied);
}

/* ------------------------------------------------------------------ */

void cm_msg_make(struct cm_msg *m, uint32_t producer, uint64_t seq)
{
	m->magic = CM_MSG_MAGIC;
	m->producer = producer;
	m->seq = seq;
	for (unsigned i = 0; i < sizeof(m->fill); i++)
		m->fill[i] = (uint8_t)(seq * 131 + producer * 7 + i);
}

bool cm_msg_valid(const struct cm_msg *m)
{
	if (m->magic != CM_MSG_MAGIC)
		return false;
	for (unsigned i = 0; i < sizeof(m->fill); i++)
		if (m->fill[i] != (uint8_t)(m->seq * 131 + m->producer * 7 + i))
			return false;
	return true;
}

int cm_ring_map(int fd, uint32_t ep, struct cm_ring *r)
{
	size_t bytes = cm_info_cache.ring_bytes;
	uint32_t slots = cm_info_cache.ring_slots;
	void *p;

	memset(r, 0, sizeof(*r));
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)COOPMPI_MMAP_RING(ep));
	if (p == MAP_FAILED)
		return -errno;
	r->base = p;
	r->bytes = bytes;
	r->slots = slots;
	r->hdr = p;
	r->seq = (uint64_t *)((char *)p + COOPMPI_RING_SEQ_OFF);
	r->msgs = (uint8_t *)p + coopmpi_ring_msgs_off(slots);
	return 0;
}

void cm_ring_unmap(struct cm_ring *r)
{
	if (r->base)
		munmap(r->base, r->bytes);
	memset(r, 0, sizeof(*r));
}

int cm_ring_produce(struct cm_ring *r, const void *msg)
{
	uint64_t mask = r->slots - 1;
	uint64_t pos = __atomic_load_n(&r->hdr->tail, __ATOMIC_RELAXED);

	do {
		uint64_t head = __atomic_load_n(&r->hdr->head,
						__ATOMIC_ACQUIRE);

		if ((int64_t)(pos - head) > (int64_t)mask) {
			__atomic_fetch_add(&r->hdr->full_events, 1,
					   __ATOMIC_RELAXED);
			return -EAGAIN;
		}
		/* pos reloaded by a failed CAS */
	} while (!__atomic_compare_exchange_n(&r->hdr->tail, &pos, pos + 1,
					      false, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	memcpy(r->msgs + (pos & mask) * COOPMPI_MSG_SIZE, msg,
	       COOPMPI_MSG_SIZE);
	__atomic_store_n(&r->seq[pos & mask], pos + 1, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return __atomic_load_n(&r->hdr->wake_requested, __ATOMIC_RELAXED) ? 1 : 0;
}

int cm_ring_send(int fd, uint32_t peer, struct cm_ring *r, const void *msg)
{
	int ret = cm_ring_produce(r, msg);

	if (ret == 1) {
		REQUIRE_OK(cm_doorbell(fd, peer));
		ret = 0;
	}
	return ret;
}

int cm_ring_consume(struct cm_ring *r, void *msg)
{
	uint64_t mask = r->slots - 1;
	uint64_t pos = __atomic_load_n(&r->hdr->head, __ATOMIC_RELAXED);
	uint64_t *sq = &r->seq[pos & mask];
	uint64_t s = __atomic_load_n(sq, __ATOMIC_ACQUIRE);

	if (s != pos + 1)
		return -EAGAIN;
	memcpy(msg, r->msgs + (pos & mask) * COOPMPI_MSG_SIZE, COOPMPI_MSG_SIZE);
	__atomic_store_n(&r->hdr->head, pos + 1, __ATOMIC_RELEASE);
	return 0;
}

bool cm_ring_empty(struct cm_ring *r)
{
	uint64_t pos = __atomic_load_n(&r->hdr->head, __ATOMIC_RELAXED);

	return __atomic_load_n(&r->seq[pos & (r->slots - 1)],
			       __ATOMIC_ACQUIRE) != pos + 1;
}

int cm_counters_map(int fd, struct cm_counters *c)
{
	size_t bytes = cm_info_cache.counters_bytes;
	void *p;

	memset(c, 0, sizeof(*c));
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)COOPMPI_MMAP_COUNTERS);
	if (p == MAP_FAILED)
		return -errno;
	c->base = p;
	c->bytes = bytes;
	c->hdr = p;
	c->offload = (void *)((char *)p + sizeof(struct coopmpi_counters_hdr));
	c->slot = (void *)((char *)c->offload +
			   sizeof(struct coopmpi_offload_counters));
	return 0;
}

void cm_counters_unmap(struct cm_counters *c)
{
	if (c->base)
		munmap(c->base, c->bytes);
	memset(c, 0, sizeof(*c));
}

/* ------------------------------------------------------------------ */

pid_t cm_fork(void)
{
	pid_t parent = getpid();
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	REQUIRE(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(CM_CHILD_FAIL);
	}
	return pid;
}

static void describe_status(int st, char *buf, size_t n)
{
	if (WIFEXITED(st))
		snprintf(buf, n, "exited with %d%s", WEXITSTATUS(st),
			 WEXITSTATUS(st) == CM_CHILD_FAIL ?
			 " (a requirement failed, see stderr)" : "");
	else if (WIFSIGNALED(st))
		snprintf(buf, n, "killed by signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else
		snprintf(buf, n, "status %#x", st);
}

void cm_wait_ok(pid_t pid, const char *what)
{
	int st;
	pid_t r;
	char desc[128];

	do {
		r = waitpid(pid, &st, 0);
	} while (r < 0 && errno == EINTR);
	REQUIRE(r == pid, "waitpid(%d) for %s: %s", (int)pid, what,
		strerror(errno));
	describe_status(st, desc, sizeof(desc));
	REQUIRE(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s (pid %d) %s", what,
		(int)pid, desc);
}

int cm_wait_timeout(pid_t pid, unsigned timeout_ms, int *status)
{
	uint64_t deadline = cm_now_ms() + timeout_ms;

	for (;;) {
		int st;
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid) {
			if (status)
				*status = st;
			return 0;
		}
		REQUIRE(r == 0 || errno == EINTR, "waitpid(%d): %s", (int)pid,
			strerror(errno));
		if (cm_now_ms() >= deadline)
			return -ETIMEDOUT;
		cm_sleep_ms(5);
	}
}

void cm_kill_wait(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

void cm_socketpair(int sv[2])
{
	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0,
		"socketpair: %s", strerror(errno));
}

void cm_put_u64(int fd, uint64_t v)
{
	ssize_t n;

	do {
		n = write(fd, &v, sizeof(v));
	} while (n < 0 && errno == EINTR);
	REQUIRE(n == (ssize_t)sizeof(v), "write to peer process: %s",
		n < 0 ? strerror(errno) : "short");
}

static int get_all(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		got += (size_t)n;
	}
	return 0;
}

uint64_t cm_get_u64(int fd)
{
	uint64_t v = 0;
	int r = get_all(fd, &v, sizeof(v));

	REQUIRE(r == 0, "read from peer process: %s",
		r == -EPIPE ? "EOF (peer died?)" : strerror(-r));
	return v;
}

uint64_t cm_get_u64_from(int fd, pid_t pid, const char *what)
{
	uint64_t v = 0;
	int r = get_all(fd, &v, sizeof(v));
	char desc[128] = "still running";
	int st;

	if (r == 0)
		return v;
	if (cm_wait_timeout(pid, 5000, &st) == 0)
		describe_status(st, desc, sizeof(desc));
	REQUIRE(0, "%s (pid %d) stopped talking (%s): %s", what, (int)pid,
		r == -EPIPE ? "EOF" : strerror(-r), desc);
	return 0;
}

int cm_get_u64_timeout(int fd, uint64_t *v, unsigned timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r;

	do {
		r = poll(&p, 1, (int)timeout_ms);
	} while (r < 0 && errno == EINTR);
	if (r == 0)
		return -ETIMEDOUT;
	return get_all(fd, v, sizeof(*v));
}

/* ------------------------------------------------------------------ */

void *cm_map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	REQUIRE(p != MAP_FAILED, "mmap %zu bytes: %s", len, strerror(errno));
	return p;
}

void cm_unmap(void *p, size_t len)
{
	if (p)
		munmap(p, len);
}

void cm_shm_create(struct cm_shm *s, size_t len)
{
	s->fd = memfd_create("coopmpi-test", MFD_CLOEXEC);
	REQUIRE(s->fd >= 0, "memfd_create: %s", strerror(errno));
	REQUIRE(ftruncate(s->fd, (off_t)len) == 0, "ftruncate: %s",
		strerror(errno));
	s->len = len;
	s->view = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	REQUIRE(s->view != MAP_FAILED, "mmap memfd: %s", strerror(errno));
}

void cm_shm_destroy(struct cm_shm *s)
{
	if (s->view)
		munmap(s->view, s->len);
	if (s->fd >= 0)
		close(s->fd);
	s->view = NULL;
	s->fd = -1;
}

static inline uint64_t pattern_word(uint64_t seed, uint64_t w)
{
	return mix64(w ^ (seed * 0xd6e8feb86659fd93ULL));
}

uint8_t cm_pattern_byte(uint64_t seed, uint64_t idx)
{
	return (uint8_t)(pattern_word(seed, idx >> 3) >> ((idx & 7) * 8));
}

void cm_fill_pattern(uint8_t *p, size_t len, uint64_t seed)
{
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t w = pattern_word(seed, i >> 3);

		memcpy(p + i, &w, 8);
	}
	for (; i < len; i++)
		p[i] = cm_pattern_byte(seed, i);
}

void cm_fill_pattern_at(uint8_t *p, size_t len, uint64_t seed,
			uint64_t start_idx)
{
	size_t i = 0;

	for (; i < len && ((start_idx + i) & 7); i++)
		p[i] = cm_pattern_byte(seed, start_idx + i);
	for (; i + 8 <= len; i += 8) {
		uint64_t w = pattern_word(seed, (start_idx + i) >> 3);

		memcpy(p + i, &w, 8);
	}
	for (; i < len; i++)
		p[i] = cm_pattern_byte(seed, start_idx + i);
}

long cm_check_pattern(const uint8_t *p, size_t len, uint64_t seed,
		      uint64_t start_idx)
{
	uint64_t word = 0, word_no = UINT64_MAX;

	for (size_t i = 0; i < len; i++) {
		uint64_t idx = start_idx + i;

		if ((idx >> 3) != word_no) {
			word_no = idx >> 3;
			word = pattern_word(seed, word_no);
		}
		if (p[i] != (uint8_t)(word >> ((idx & 7) * 8)))
			return (long)i;
	}
	return -1;
}

long cm_check_byte(const uint8_t *p, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return (long)i;
	return -1;
}

/* ------------------------------------------------------------------ */

void cm_owner_spawn(struct cm_owner *o, uint64_t key, struct cm_shm *shm,
		    size_t len, uint32_t flags, uint64_t seed)
{
	int sv[2];

	memset(o, 0, sizeof(*o));
	cm_socketpair(sv);
	o->pid = cm_fork();
	if (o->pid == 0) {
		struct coopmpi_join j;
		uint64_t cookie = 0, cookie2 = 0, cmd;
		uint8_t *mem;
		int fd;

		close(sv[0]);
		fd = cm_open_join(key, COOPMPI_JOIN_EXISTING, &j);
		if (shm) {
			len = shm->len;
			/* the inherited view is still mapped: new address */
			mem = mmap(NULL, len, PROT_READ | PROT_WRITE,
				   MAP_SHARED, shm->fd, 0);
			REQUIRE(mem != MAP_FAILED, "mmap memfd: %s",
				strerror(errno));
			REQUIRE(mem != shm->view, "same address");
			munmap(shm->view, len);
		} else {
			mem = cm_map_anon(len);
			cm_fill_pattern(mem, len, seed);
		}
		REQUIRE_OK(cm_reg(fd, mem, len, flags, &cookie));
		if (shm && len > 4 * CM_OWNER_SUB_OFF)
			REQUIRE_OK(cm_reg(fd, mem + CM_OWNER_SUB_OFF, len / 2,
					  flags, &cookie2));
		cm_put_u64(sv[1], j.ep_id);
		cm_put_u64(sv[1], cookie);
		cm_put_u64(sv[1], cookie2);
		cm_put_u64(sv[1], (uintptr_t)mem);
		cmd = cm_get_u64(sv[1]);
		if (cmd == 1) {
			REQUIRE_OK(cm_dereg(fd, cookie));
			if (cookie2)
				REQUIRE_OK(cm_dereg(fd, cookie2));
		}
		cm_put_u64(sv[1], 0);
		close(fd);
		_exit(0);
	}
	close(sv[1]);
	o->sock = sv[0];
	o->ep_id = (uint32_t)cm_get_u64_from(o->sock, o->pid, "region owner");
	o->cookie = cm_get_u64_from(o->sock, o->pid, "region owner");
	o->cookie2 = cm_get_u64_from(o->sock, o->pid, "region owner");
	o->addr = cm_get_u64_from(o->sock, o->pid, "region owner");
	o->len = shm ? shm->len : len;
}

void cm_owner_finish(struct cm_owner *o)
{
	cm_put_u64(o->sock, 1);
	(void)cm_get_u64_from(o->sock, o->pid, "region owner");
	cm_wait_ok(o->pid, "region owner");
	close(o->sock);
	o->pid = 0;
	o->sock = -1;
}

/* ------------------------------------------------------------------ */

int cm_read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;

	if (fd < 0)
		return -errno;
	while (got + 1 < size) {
		ssize_t n = read(fd, buf + got, size - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			close(fd);
			return -e;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	buf[got] = 0;
	close(fd);
	return (int)got;
}

int cm_write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), e = 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	if (n < 0)
		e = -errno;
	else if ((size_t)n != strlen(s))
		e = -EIO;
	close(fd);
	return e;
}

static void param_read(const char *name, char *v, size_t size)
{
	char path[128];

	snprintf(path, sizeof(path), CM_PARAM_DIR "%s", name);
	REQUIRE(cm_read_file(path, v, size) > 0, "read %s", path);
	v[strcspn(v, "\n")] = 0;
}

const char *cm_param_get(const char *name)
{
	static char vals[4][32];
	static unsigned next;
	char *v = vals[next++ % 4];

	param_read(name, v, sizeof(vals[0]));
	return v;
}

uint64_t cm_param_u64(const char *name)
{
	return strtoull(cm_param_get(name), NULL, 0);
}

const char *cm_param_swap(const char *name, const char *val)
{
	const char *old = cm_param_get(name);
	char path[128], now[32];

	snprintf(path, sizeof(path), CM_PARAM_DIR "%s", name);
	REQUIRE_OK(cm_write_file(path, val));
	param_read(name, now, sizeof(now));
	REQUIRE(strcmp(now, val) == 0, "%s did not take %s", name, val);
	return old;
}

uint64_t cm_sysfs_u64(const char *name)
{
	char path[256], buf[128], *end;
	unsigned long long v;
	int n;

	snprintf(path, sizeof(path), CM_SYSFS_DIR "/%s", name);
	n = cm_read_file(path, buf, sizeof(buf));
	REQUIRE(n > 0, "read %s: %s", path, n < 0 ? strerror(-n) : "empty");
	errno = 0;
	v = strtoull(buf, &end, 0);
	REQUIRE(errno == 0 && end != buf && (*end == '\n' || *end == 0),
		"%s does not hold a number: '%s'", path, buf);
	return v;
}

bool cm_path_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

void cm_uffd_create(struct cm_uffd *u, size_t len)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;

	u->len = len;
	u->fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	REQUIRE(u->fd >= 0, "userfaultfd: %s", strerror(errno));
	REQUIRE(ioctl(u->fd, UFFDIO_API, &api) == 0, "UFFDIO_API: %s",
		strerror(errno));
	u->area = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	REQUIRE(u->area != MAP_FAILED, "mmap %zu: %s", len, strerror(errno));
	memset(&reg, 0, sizeof(reg));
	reg.range.start = (uintptr_t)u->area;
	reg.range.len = len;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	REQUIRE(ioctl(u->fd, UFFDIO_REGISTER, &reg) == 0,
		"UFFDIO_REGISTER: %s", strerror(errno));
}

void cm_uffd_fill(struct cm_uffd *u, size_t off, size_t len, uint64_t seed)
{
	uint8_t *buf = cm_map_anon(len);
	struct uffdio_copy c;

	cm_fill_pattern_at(buf, len, seed, off);
	memset(&c, 0, sizeof(c));
	c.dst = (uintptr_t)u->area + off;
	c.src = (uintptr_t)buf;
	c.len = len;
	REQUIRE(ioctl(u->fd, UFFDIO_COPY, &c) == 0 && c.copy == (int64_t)len,
		"UFFDIO_COPY %zu bytes at %zu: %s (copied %lld)", len, off,
		strerror(errno), (long long)c.copy);
	cm_unmap(buf, len);
}

void cm_uffd_destroy(struct cm_uffd *u)
{
	if (u->area)
		munmap(u->area, u->len);
	if (u->fd >= 0)
		close(u->fd);
	u->area = NULL;
	u->fd = -1;
}
