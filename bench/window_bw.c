/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * window_bw - a copy through a window (the peer's region mapped, copied
 * with memcpy) next to COOPMPI_IOC_COPY and process_vm_readv, straight on
 * include/coopmpi_uapi.h (needs /dev/coopmpi: run it in the VM, see
 * bench/run-suite.sh).
 *
 *   bench/bin/window_bw [-i iters] [-r repeats] [sizes...]
 *
 * Two processes join one protection domain: the child registers a region
 * (READ | MAP) and sleeps; the parent reads it into its own buffer by
 *   window  WINDOW_ATTACH + mmap once, then memcpy per copy, checking the
 *           window's state word before and after (the uapi's protocol);
 *   COPY    COOPMPI_IOC_COPY (COOPMPI_COPY_FROM_REGION);
 *   CMA     process_vm_readv from the child.
 * The first copy of each method is checked against the child's bytes.
 * The repeats of the three methods alternate, so that a disturbance of
 * the (emulated) machine hits all alike.  Prints per size
 *   "size window_MB/s copy_MB/s cma_MB/s"
 * each the median over repeats (a warm-up repeat is dropped), MB = 1e6
 * bytes.  Exit status 1 when the device or windows are missing, or when
 * a copy is wrong.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coopmpi_uapi.h"
#include "osu_util.h"

enum { WINDOW, COPY, CMA, METHODS };

static const size_t def_sizes[] = { 65536, 262144, 1048576, 4194304,
				    16777216 };

struct peer {
	pid_t pid;
	int keep;		/* closing it ends the child */
	uint64_t cookie;
	uint64_t addr;
};

static int fd = -1;
static struct peer child = { .pid = -1, .keep = -1 };
static struct coopmpi_window_attach win;
static const uint8_t *map;
static const uint64_t *word;

static void fail(const char *what)
{
	fprintf(stderr, "window_bw: %s: %s\n", what, strerror(errno));
	if (child.pid > 0) {
		kill(child.pid, SIGKILL);
		waitpid(child.pid, NULL, 0);
	}
	exit(1);
}

static int dev_open_join(uint64_t key, uint32_t flags)
{
	struct coopmpi_join j = { .size = sizeof(j), .flags = flags,
				  .key = key };
	int f = open("/dev/" COOPMPI_DEVICE_NAME, O_RDWR | O_CLOEXEC);

	if (f >= 0 && ioctl(f, COOPMPI_IOC_JOIN, &j)) {
		close(f);
		return -1;
	}
	return f;
}

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 131 + (i >> 12));
}

/* The child: registers bytes of its memory, reports it, sleeps. */
static void child_main(uint64_t key, size_t bytes, int report, int keep)
{
	struct coopmpi_region_register reg = { .size = sizeof(reg) };
	uint8_t *buf = ou_alloc(bytes);
	uint64_t msg[2] = { 0, (uintptr_t)buf };
	int f = dev_open_join(key, COOPMPI_JOIN_EXISTING);
	char ch;

	for (size_t i = 0; i < bytes; i++)
		buf[i] = pattern(i);
	reg.flags = COOPMPI_REGION_READ | COOPMPI_REGION_MAP;
	reg.addr = (uintptr_t)buf;
	reg.length = bytes;
	if (f >= 0 && !ioctl(f, COOPMPI_IOC_REGION_REGISTER, &reg))
		msg[0] = reg.cookie;
	if (write(report, msg, sizeof(msg)) != sizeof(msg))
		_exit(1);
	while (read(keep, &ch, 1) < 0 && errno == EINTR)
		;
	_exit(0);
}

static void start_child(uint64_t key, size_t bytes)
{
	uint64_t msg[2];
	int rep[2], keep[2];

	if (pipe(rep) || pipe(keep))
		fail("pipe");
	child.pid = fork();
	if (child.pid < 0)
		fail("fork");
	if (child.pid == 0) {
		close(rep[0]);
		close(keep[1]);
		child_main(key, bytes, rep[1], keep[0]);
	}
	close(rep[1]);
	close(keep[0]);
	child.keep = keep[1];
	if (read(rep[0], msg, sizeof(msg)) != sizeof(msg) || !msg[0]) {
		errno = EIO;
		fail("child could not join or register its region");
	}
	close(rep[0]);
	child.cookie = msg[0];
	child.addr = msg[1];
}

static void attach_window(void)
{
	void *m, *s;

	win.size = sizeof(win);
	win.cookie = child.cookie;
	if (ioctl(fd, COOPMPI_IOC_WINDOW_ATTACH, &win))
		fail("WINDOW_ATTACH");
	m = mmap(NULL, win.map_bytes, PROT_READ, MAP_SHARED, fd,
		 (off_t)COOPMPI_MMAP_WINDOW(win.handle));
	s = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd,
		 (off_t)COOPMPI_MMAP_WINDOW_STATE);
	if (m == MAP_FAILED || s == MAP_FAILED)
		fail("mmap of the window");
	map = (const uint8_t *)m + win.page_offset;
	word = (const uint64_t *)s + win.state_index;
}

/* One copy of len bytes into dst by method m; 0 or -1. */
static int copy_once(int m, uint8_t *dst, size_t len)
{
	struct iovec local = { dst, len };
	struct iovec remote = { (void *)(uintptr_t)child.addr, len };
	struct coopmpi_copy c = { .size = sizeof(c) };
	uint64_t s0;

	switch (m) {
	case WINDOW:
		s0 = __atomic_load_n(word, __ATOMIC_ACQUIRE);
		memcpy(dst, map, len);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (s0 & (1 | COOPMPI_WINDOW_DEAD | COOPMPI_WINDOW_HOLE) ||
		    __atomic_load_n(word, __ATOMIC_RELAXED) != s0) {
			errno = ESTALE;
			return -1;
		}
		return 0;
	case COPY:
		c.flags = COOPMPI_COPY_FROM_REGION;
		c.cookie = child.cookie;
		c.iov = (uintptr_t)&local;
		c.iov_count = 1;
		c.length = len;
		return ioctl(fd, COOPMPI_IOC_COPY, &c);
	default:
		return process_vm_readv(child.pid, &local, 1, &remote, 1, 0) ==
		       (ssize_t)len ? 0 : -1;
	}
}

static void check(uint8_t *dst, size_t len)
{
	static const char *const name[METHODS] = { "window", "COPY", "CMA" };

	for (int m = 0; m < METHODS; m++) {
		memset(dst, 0, len);
		if (copy_once(m, dst, len))
			fail(name[m]);
		for (size_t i = 0; i < len; i++)
			if (dst[i] != pattern(i)) {
				errno = EIO;
				fail(name[m]);
			}
	}
}

static void bandwidth(uint8_t *dst, size_t len, int iters, int reps,
		      double out[METHODS])
{
	double v[METHODS][OU_MAX_REPS];

	for (int r = 0; r <= reps; r++)		/* repeat 0: warm-up */
		for (int m = 0; m < METHODS; m++) {
			double t0 = ou_now_us();

			for (int i = 0; i < iters; i++)
				if (copy_once(m, dst, len))
					fail("copy");
			if (r)
				v[m][r - 1] = (double)len * iters /
					      (ou_now_us() - t0);
		}
	for (int m = 0; m < METHODS; m++)
		out[m] = ou_median(v[m], reps);
}

int main(int argc, char **argv)
{
	size_t sizes[OU_MAX_SIZES], maxsz = 0;
	int n, opt, iters = 0, reps = 5;
	uint8_t *dst;

	while ((opt = getopt(argc, argv, "i:r:")) != -1) {
		if (opt == 'i') {
			iters = atoi(optarg);
		} else if (opt == 'r') {
			reps = atoi(optarg);
		} else {
			fprintf(stderr, "usage: window_bw [-i iters] [-r repeats] [sizes...]\n");
			return 2;
		}
	}
	if (reps < 1 || reps > OU_MAX_REPS)
		reps = 5;
	n = ou_parse_sizes(argc, argv, optind, sizes, def_sizes,
			   sizeof(def_sizes) / sizeof(def_sizes[0]));
	for (int s = 0; s < n; s++) {
		if (!sizes[s]) {
			fprintf(stderr, "window_bw: size 0 is not a copy\n");
			return 2;
		}
		maxsz = sizes[s] > maxsz ? sizes[s] : maxsz;
	}
	fd = dev_open_join(((uint64_t)getpid() << 20) ^ 0x77696e, 0);
	if (fd < 0)
		fail("open and join " COOPMPI_DEVICE_NAME);
	start_child(((uint64_t)getpid() << 20) ^ 0x77696e, maxsz);
	attach_window();
	dst = ou_alloc(maxsz);
	printf("# window handle %u, %llu bytes mapped\n", win.handle,
	       (unsigned long long)win.map_bytes);
	printf("# size window_MB/s copy_MB/s cma_MB/s\n");
	for (int s = 0; s < n; s++) {
		size_t len = sizes[s];
		int it = iters ? iters : len <= 262144 ? 200 : len <= 4194304 ?
			 20 : 5;
		double bw[METHODS];

		check(dst, len);
		bandwidth(dst, len, it, reps, bw);
		printf("%zu %.1f %.1f %.1f\n", len, bw[WINDOW], bw[COPY],
		       bw[CMA]);
		fflush(stdout);
	}
	close(child.keep);
	waitpid(child.pid, NULL, 0);
	return 0;
}
