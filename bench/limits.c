/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * limits - what the machine itself can copy, in the unit of bw (MB/s,
 * MB = 1e6 bytes of message moved per second):
 *
 *   bench/limits -m memcpy1|memcpy2|pvr [-r repeats] [sizes...]
 *
 *   memcpy1  one thread: memcpy(dst, src, size)
 *   memcpy2  two threads (pinned to CPUs 0 and 1 when there are two), each
 *            copying one half of the same message: what COOP-p2p can hope
 *            for when sender and receiver copy together
 *   pvr      process_vm_readv() of size bytes out of another process: the
 *            single cross-process copy every CMA-based rendezvous makes
 *   line     no copy: a cache line's one-way trip between threads on
 *            CPUs 0 and 1 (half the round trip of a count the other
 *            echoes, a line each way), printed as "line US"; sizes are
 *            ignored.  Every small message waits for at least one such
 *            trip, and on a virtual machine it changes with where the
 *            host runs the virtual CPUs (here 0.07 us in one minute,
 *            0.30 in another)
 *
 * Each repeat copies the message n times, n doubled from 1 until a repeat
 * takes at least 2 ms (those calibration rounds are the warm-up), and the
 * median over repeats is printed as "size MB/s".  Source and destination stay the
 * same buffers, as in osu_bw (the message is cache-resident when it fits).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "osu_util.h"

enum mode { M_MEMCPY1, M_MEMCPY2, M_PVR, M_LINE };

static const size_t def_sizes[] = { 1, 64, 4096, 65536, 1048576, 4194304,
				    16777216 };

/* ---- memcpy2: the helper thread copies the second half ---- */
static struct {
	char *dst, *src;
	size_t half, rest;
	unsigned long gen;	/* main -> helper: copy round gen */
	unsigned long done;	/* helper -> main: finished round done */
	int quit;
} h2;

static void pin(int cpu)
{
	cpu_set_t set;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	if (ncpu < 2)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);	/* best effort */
}

static void *helper(void *arg)
{
	unsigned long seen = 0;

	(void)arg;
	pin(1);
	for (;;) {
		unsigned long g;

		while ((g = __atomic_load_n(&h2.gen, __ATOMIC_ACQUIRE)) == seen)
			if (__atomic_load_n(&h2.quit, __ATOMIC_ACQUIRE))
				return NULL;
		seen = g;
		memcpy(h2.dst + h2.half, h2.src + h2.half, h2.rest);
		__atomic_store_n(&h2.done, g, __ATOMIC_RELEASE);
	}
}

static void copy2(char *dst, const char *src, size_t size)
{
	unsigned long g;

	h2.dst = dst;
	h2.src = (char *)src;
	h2.half = size / 2;
	h2.rest = size - size / 2;
	g = h2.gen + 1;
	__atomic_store_n(&h2.gen, g, __ATOMIC_RELEASE);
	memcpy(dst, src, size / 2);
	while (__atomic_load_n(&h2.done, __ATOMIC_ACQUIRE) != g)
		;
}

/* ---- line: the helper echoes a count, a line for each direction (as
 * two ranks' slots); LINE_QUIT ends it ---- */
#define LINE_QUIT (~0ul)
static struct {
	unsigned long ping __attribute__((aligned(128)));	/* main's */
	unsigned long pong __attribute__((aligned(128)));	/* helper's */
} lt;

static void *echo(void *arg)
{
	unsigned long seen = 0, g;

	(void)arg;
	pin(1);
	for (;;) {
		while ((g = __atomic_load_n(&lt.ping, __ATOMIC_ACQUIRE)) == seen)
			;
		if (g == LINE_QUIT)
			return NULL;
		seen = g;
		__atomic_store_n(&lt.pong, g, __ATOMIC_RELEASE);
	}
}

/* The count is kept apart from the line: loading the line it is about
 * to store to, which the helper just read, made a round trip 0.80 us
 * instead of 0.62. */
static void round_trip(void)
{
	static unsigned long trips;
	unsigned long g = ++trips;

	__atomic_store_n(&lt.ping, g, __ATOMIC_RELEASE);
	while (__atomic_load_n(&lt.pong, __ATOMIC_ACQUIRE) != g)
		;
}

/* ---- pvr: a child process holds the source buffer ---- */
static pid_t child = -1;
static int child_keep[2] = { -1, -1 };

static void *start_child(size_t bytes)
{
	int addr_pipe[2];
	void *remote = NULL;

	if (pipe(addr_pipe) || pipe(child_keep)) {
		perror("limits: pipe");
		exit(1);
	}
	child = fork();
	if (child < 0) {
		perror("limits: fork");
		exit(1);
	}
	if (child == 0) {
		char c;
		void *buf = ou_alloc(bytes);

		close(child_keep[1]);
		if (write(addr_pipe[1], &buf, sizeof(buf)) != sizeof(buf))
			_exit(1);
		/* wait until the parent closes its end (or dies) */
		while (read(child_keep[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(child_keep[0]);
	close(addr_pipe[1]);
	if (read(addr_pipe[0], &remote, sizeof(remote)) != sizeof(remote)) {
		fprintf(stderr, "limits: child did not start\n");
		exit(1);
	}
	close(addr_pipe[0]);
	return remote;
}

static void stop_child(void)
{
	if (child > 0) {
		close(child_keep[1]);
		waitpid(child, NULL, 0);
		child = -1;
	}
}

static void pvr(char *dst, const char *remote, size_t size)
{
	struct iovec l = { dst, size }, r = { (void *)remote, size };
	size_t got = 0;

	while (got < size) {
		ssize_t n;

		l.iov_base = dst + got;
		l.iov_len = size - got;
		r.iov_base = (char *)remote + got;
		r.iov_len = size - got;
		n = process_vm_readv(child, &l, 1, &r, 1, 0);
		if (n <= 0) {
			fprintf(stderr, "limits: process_vm_readv: %s\n",
				n < 0 ? strerror(errno) : "no progress");
			stop_child();
			exit(1);
		}
		got += (size_t)n;
	}
}

static void one(enum mode mode, char *dst, const char *src,
		const char *remote, size_t size)
{
	if (mode == M_MEMCPY1)
		memcpy(dst, src, size);
	else if (mode == M_MEMCPY2)
		copy2(dst, src, size);
	else if (mode == M_LINE)
		round_trip();
	else
		pvr(dst, remote, size);
	__asm__ __volatile__("" ::: "memory");
}

int main(int argc, char **argv)
{
	size_t sizes[OU_MAX_SIZES], maxsz = 1;
	int n, s, r, opt, reps = 7;
	enum mode mode = M_MEMCPY1;
	pthread_t th;
	double v[OU_MAX_REPS];
	char *src, *dst, *remote = NULL;

	while ((opt = getopt(argc, argv, "m:r:")) != -1) {
		if (opt == 'r') {
			reps = atoi(optarg);
		} else if (opt == 'm' && !strcmp(optarg, "memcpy1")) {
			mode = M_MEMCPY1;
		} else if (opt == 'm' && !strcmp(optarg, "memcpy2")) {
			mode = M_MEMCPY2;
		} else if (opt == 'm' && !strcmp(optarg, "pvr")) {
			mode = M_PVR;
		} else if (opt == 'm' && !strcmp(optarg, "line")) {
			mode = M_LINE;
		} else {
			fprintf(stderr, "usage: limits -m memcpy1|memcpy2|pvr|line [-r repeats] [sizes...]\n");
			return 2;
		}
	}
	if (reps < 1 || reps > OU_MAX_REPS)
		reps = 7;
	n = ou_parse_sizes(argc, argv, optind, sizes, def_sizes,
			   (int)(sizeof(def_sizes) / sizeof(def_sizes[0])));
	if (mode == M_LINE) {	/* one trip, nothing copied */
		sizes[0] = 0;
		n = 1;
	}
	for (s = 0; s < n; s++)
		if (sizes[s] > maxsz)
			maxsz = sizes[s];
	src = ou_alloc(maxsz);
	dst = ou_alloc(maxsz);
	if (mode == M_MEMCPY2 || mode == M_LINE) {
		pin(0);
		if (pthread_create(&th, NULL, mode == M_LINE ? echo : helper,
				   NULL)) {
			fprintf(stderr, "limits: pthread_create failed\n");
			return 1;
		}
	} else if (mode == M_PVR) {
		remote = start_child(maxsz);
	}
	for (s = 0; s < n; s++) {
		size_t size = sizes[s], iters = 1, it;

		/* calibration (and warm-up): a repeat takes >= 2 ms */
		for (;;) {
			double t0 = ou_now_us();

			for (it = 0; it < iters; it++)
				one(mode, dst, src, remote, size);
			if (ou_now_us() - t0 >= 2000 || iters >= (1u << 24))
				break;
			iters *= 2;
		}
		for (r = 0; r < reps; r++) {
			double t0 = ou_now_us(), t;

			for (it = 0; it < iters; it++)
				one(mode, dst, src, remote, size);
			t = ou_now_us() - t0;
			v[r] = mode == M_LINE ? t / (double)iters / 2 :
				(double)size * (double)iters / (t > 0 ? t : 1e-3);
		}
		if (mode == M_LINE)
			printf("line %.3f\n", ou_median(v, reps));
		else
			printf("%zu %.1f\n", size, ou_median(v, reps));
		fflush(stdout);
	}
	if (mode == M_MEMCPY2 || mode == M_LINE) {
		__atomic_store_n(&h2.quit, 1, __ATOMIC_RELEASE);
		__atomic_store_n(&lt.ping, LINE_QUIT, __ATOMIC_RELEASE);
		pthread_join(th, NULL);
	}
	stop_child();
	free(src);
	free(dst);
	return 0;
}
