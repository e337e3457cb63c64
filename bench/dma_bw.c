/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * dma_bw - bandwidth and overlap of the driver's DMA channel next to the
 * CPU copy of COOPMPI_IOC_COPY, straight on include/coopmpi_uapi.h (needs
 * /dev/coopmpi: run it in the VM, see bench/run-suite.sh).
 *
 *   bench/bin/dma_bw [-i iters] [-r repeats] [-q window] [sizes...]
 *
 * Two processes join one protection domain: the child registers a region
 * (read/write) and sleeps; the parent copies its own memory into that
 * region, by
 *   DMA   COOPMPI_IOC_DMA_SUBMIT of descriptors, completions reaped from
 *         the mmap'ed completion ring (COOPMPI_MMAP_DMA_CQ) by polling;
 *   COPY  the blocking COOPMPI_IOC_COPY (COOPMPI_COPY_TO_REGION).
 * Bandwidth: windows of `window` descriptors (default 16, capped by the
 * channel's limits) submitted in one batch and all reaped, vs. as many
 * COPY calls; MB/s with MB = 1e6 bytes.  The repeats of DMA and COPY
 * alternate, so that a disturbance of the (emulated) machine hits both.
 * Overlap: as bench/overlap - one copy alone (t_pure), then one copy with
 * a busy compute loop of t_pure started right after the submission
 * (t_total, compute time t_cpu); overlap = 100 * (1 - (t_total - t_cpu) /
 * t_pure) clamped to 0..100, the share of the copy the caller spends
 * computing.  A blocking COPY returns only when it is done, so it can
 * only be followed by the compute loop: its overlap is ~0 by design.
 *
 * Prints "# engine <soft|hw> ..." and then per size
 *   "size dma_MB/s copy_MB/s dma_overlap_% copy_overlap_%"
 * each the median over repeats (a warm-up repeat is dropped).
 * Exit status 1 when the device or a DMA engine is missing.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coopmpi_uapi.h"
#include "osu_util.h"

#define MAX_WINDOW 256

static const size_t def_sizes[] = { 65536, 1048576, 4194304 };

static int fd = -1;
static struct coopmpi_dma_info info;
static struct coopmpi_dma_cq_hdr *cq_hdr;
static struct coopmpi_dma_cqe *cqes;
static uint64_t cookie;
static pid_t child = -1;
static int keep[2] = { -1, -1 };

static void fail(const char *what)
{
	fprintf(stderr, "dma_bw: %s: %s\n", what, strerror(errno));
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	exit(1);
}

static const char *engine_name(uint32_t e)
{
	return e == COOPMPI_DMA_SOFT ? "soft" : e == COOPMPI_DMA_HW ? "hw" :
	       e == COOPMPI_DMA_NONE ? "none" : "?";
}

static int dev_open_join(uint64_t key, uint32_t flags)
{
	struct coopmpi_join j;
	int f = open("/dev/" COOPMPI_DEVICE_NAME, O_RDWR | O_CLOEXEC);

	if (f < 0)
		return -1;
	memset(&j, 0, sizeof(j));
	j.size = sizeof(j);
	j.flags = flags;
	j.key = key;
	if (ioctl(f, COOPMPI_IOC_JOIN, &j)) {
		close(f);
		return -1;
	}
	return f;
}

/* The child: register a region of bytes bytes, report its cookie, sleep. */
static void start_child(uint64_t key, size_t bytes)
{
	int cpipe[2];

	if (pipe(cpipe) || pipe(keep))
		fail("pipe");
	child = fork();
	if (child < 0)
		fail("fork");
	if (child == 0) {
		struct coopmpi_region_register reg;
		void *buf = ou_alloc(bytes);
		uint64_t c = 0;
		char ch;
		int f = dev_open_join(key, COOPMPI_JOIN_EXISTING);

		close(keep[1]);
		if (f >= 0) {
			memset(&reg, 0, sizeof(reg));
			reg.size = sizeof(reg);
			reg.flags = COOPMPI_REGION_READ | COOPMPI_REGION_WRITE;
			reg.addr = (uintptr_t)buf;
			reg.length = (bytes + 4095) & ~(size_t)4095;
			if (!ioctl(f, COOPMPI_IOC_REGION_REGISTER, &reg))
				c = reg.cookie;
		}
		if (write(cpipe[1], &c, sizeof(c)) != sizeof(c))
			_exit(1);
		while (read(keep[0], &ch, 1) < 0 && errno == EINTR)
			;
		_exit(0);	/* closing the fd deregisters the region */
	}
	close(cpipe[1]);
	close(keep[0]);
	if (read(cpipe[0], &cookie, sizeof(cookie)) != sizeof(cookie) ||
	    !cookie) {
		errno = EIO;
		fail("child could not join or register its region");
	}
	close(cpipe[0]);
}

static void stop_child(void)
{
	close(keep[1]);
	waitpid(child, NULL, 0);
	child = -1;
}

/* Consume up to max completions; returns how many (checks each one). */
static unsigned reap(unsigned max, size_t len)
{
	uint64_t head = cq_hdr->head;
	uint64_t tail = __atomic_load_n(&cq_hdr->tail, __ATOMIC_ACQUIRE);
	unsigned n = 0;

	for (; head != tail && n < max; head++, n++) {
		const struct coopmpi_dma_cqe *e =
			&cqes[head & (info.cq_entries - 1)];

		if (e->status || e->bytes != len) {
			errno = e->status < 0 ? -e->status : EIO;
			fprintf(stderr, "dma_bw: completion: status %d bytes %llu of %zu\n",
				e->status, (unsigned long long)e->bytes, len);
			fail("DMA descriptor");
		}
	}
	__atomic_store_n(&cq_hdr->head, head, __ATOMIC_RELEASE);
	return n;
}

static void reap_all(unsigned n, size_t len)
{
	unsigned got = 0, spins = 0;

	while (got < n) {
		unsigned k = reap(n - got, len);

		got += k;
		if (!k && ++spins % 256 == 0)
			sched_yield();	/* let a worker on this CPU run */
	}
}

/* Submit count copies of len bytes from src into the region. */
static void submit(const char *src, size_t len, unsigned count)
{
	struct coopmpi_dma_desc d[MAX_WINDOW];
	unsigned i, off = 0;

	memset(d, 0, sizeof(d[0]) * count);
	for (i = 0; i < count; i++) {
		d[i].src = (uintptr_t)src;
		d[i].dst_cookie = cookie;
		d[i].length = len;
		d[i].user_tag = i;
	}
	while (off < count) {
		struct coopmpi_dma_submit s;

		memset(&s, 0, sizeof(s));
		s.size = sizeof(s);
		s.descs = (uintptr_t)(d + off);
		s.count = count - off;
		s.desc_size = sizeof(d[0]);
		if (ioctl(fd, COOPMPI_IOC_DMA_SUBMIT, &s) && errno != EAGAIN)
			fail("COOPMPI_IOC_DMA_SUBMIT");
		off += s.done;
		if (off < count)
			sched_yield();
	}
}

static void copy(const char *src, size_t len)
{
	struct iovec iov = { (void *)src, len };
	struct coopmpi_copy c;

	memset(&c, 0, sizeof(c));
	c.size = sizeof(c);
	c.flags = COOPMPI_COPY_TO_REGION;
	c.cookie = cookie;
	c.iov = (uintptr_t)&iov;
	c.iov_count = 1;
	c.length = len;
	if (ioctl(fd, COOPMPI_IOC_COPY, &c) || c.copied != len)
		fail("COOPMPI_IOC_COPY");
}

/* One copy by DMA (dma = 1) or COPY, then compute_us of busy loop. */
static double one(int dma, const char *src, size_t len, double compute_us,
		  double *cpu)
{
	double t0 = ou_now_us(), c0;

	if (dma)
		submit(src, len, 1);
	else
		copy(src, len);
	if (compute_us > 0) {
		c0 = ou_now_us();
		while (ou_now_us() - c0 < compute_us)
			;
		*cpu += ou_now_us() - c0;
	}
	if (dma)
		reap_all(1, len);
	return ou_now_us() - t0;
}

/* Mean time of iters copies, each followed by compute_us of computing. */
static double series(int dma, const char *src, size_t len, int iters,
		     double compute_us, double *cpu_mean)
{
	double sum = 0, cpu = 0;
	int i;

	for (i = 0; i < iters; i++)
		sum += one(dma, src, len, compute_us, &cpu);
	*cpu_mean = cpu / iters;
	return sum / iters;
}

/*
 * Overlap of DMA (out[0]) and COPY (out[1]); the repeats of the two
 * alternate, so that a disturbance of the machine hits both alike.
 */
static void overlap(const char *src, size_t len, int iters, int reps,
		    double out[2])
{
	double pure[2][OU_MAX_REPS], ovl[2][OU_MAX_REPS], tp[2], cpu;
	int r, m;

	for (r = 0; r <= reps; r++)	/* repeat 0: warm-up */
		for (m = 0; m < 2; m++) {
			double t = series(!m, src, len, iters, 0, &cpu);

			if (r)
				pure[m][r - 1] = t;
		}
	for (m = 0; m < 2; m++)
		tp[m] = ou_median(pure[m], reps);
	for (r = 0; r < reps; r++)
		for (m = 0; m < 2; m++) {
			double total = series(!m, src, len, iters, tp[m], &cpu);
			double o = 100.0 * (1.0 - (total - cpu) / tp[m]);

			ovl[m][r] = o < 0 ? 0 : o > 100 ? 100 : o;
		}
	for (m = 0; m < 2; m++)
		out[m] = ou_median(ovl[m], reps);
}

/* Bandwidth of DMA (out[0]) and COPY (out[1]), repeats alternating. */
static void bandwidth(const char *src, size_t len, unsigned win, int iters,
		      int reps, double out[2])
{
	double v[2][OU_MAX_REPS];
	int r, i, m;
	unsigned k;

	for (r = 0; r <= reps; r++) {	/* repeat 0: warm-up */
		for (m = 0; m < 2; m++) {
			double t0 = ou_now_us(), t;

			for (i = 0; i < iters; i++) {
				if (!m) {
					submit(src, len, win);
					reap_all(win, len);
				} else {
					for (k = 0; k < win; k++)
						copy(src, len);
				}
			}
			t = ou_now_us() - t0;
			if (r)
				v[m][r - 1] = (double)len * win * iters / t;
		}
	}
	for (m = 0; m < 2; m++)
		out[m] = ou_median(v[m], reps);
}

int main(int argc, char **argv)
{
	size_t sizes[OU_MAX_SIZES], maxsz = 4096;
	int n, s, opt, iters = 0, reps = 5, wopt = 16;
	uint64_t key;
	void *cq;
	char *src;

	while ((opt = getopt(argc, argv, "i:r:q:")) != -1) {
		if (opt == 'i') {
			iters = atoi(optarg);
		} else if (opt == 'r') {
			reps = atoi(optarg);
		} else if (opt == 'q') {
			wopt = atoi(optarg);
		} else {
			fprintf(stderr, "usage: dma_bw [-i iters] [-r repeats] [-q window] [sizes...]\n");
			return 2;
		}
	}
	if (reps < 1 || reps > OU_MAX_REPS - 1)
		reps = 5;
	if (wopt < 1 || wopt > MAX_WINDOW)
		wopt = 16;
	n = ou_parse_sizes(argc, argv, optind, sizes, def_sizes,
			   (int)(sizeof(def_sizes) / sizeof(def_sizes[0])));
	for (s = 0; s < n; s++) {
		if (!sizes[s]) {
			fprintf(stderr, "dma_bw: size 0 is not a copy\n");
			return 2;
		}
		if (sizes[s] > maxsz)
			maxsz = sizes[s];
	}

	fd = open("/dev/" COOPMPI_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		fail("open /dev/" COOPMPI_DEVICE_NAME " (load coopmpi.ko)");
	memset(&info, 0, sizeof(info));
	info.size = sizeof(info);
	if (ioctl(fd, COOPMPI_IOC_DMA_INFO, &info))
		fail("COOPMPI_IOC_DMA_INFO");
	if (info.engine == COOPMPI_DMA_NONE) {
		errno = EOPNOTSUPP;
		fail("no DMA engine (module loaded with dma=off?)");
	}
	if (maxsz > info.max_length) {
		errno = E2BIG;
		fail("size above the channel's max_length");
	}
	key = ((uint64_t)getpid() << 32) ^ (uint64_t)(ou_now_us() * 1000.0);
	close(fd);
	fd = dev_open_join(key, COOPMPI_JOIN_CREATE);
	if (fd < 0)
		fail("COOPMPI_IOC_JOIN");
	cq = mmap(NULL, info.cq_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		  (off_t)COOPMPI_MMAP_DMA_CQ);
	if (cq == MAP_FAILED)
		fail("mmap of the DMA completion queue");
	cq_hdr = cq;
	cqes = (void *)((char *)cq + COOPMPI_DMA_CQ_CQES_OFF);
	start_child(key, maxsz);
	src = ou_alloc(maxsz);

	printf("# engine %s max_inflight %u max_bytes %llu cq_entries %u\n",
	       engine_name(info.engine), info.max_inflight,
	       (unsigned long long)info.max_bytes, info.cq_entries);
	fflush(stdout);
	for (s = 0; s < n; s++) {
		size_t len = sizes[s];
		unsigned win = (unsigned)wopt;
		int it = iters ? iters : len <= 65536 ? 50 :
			 len <= 1048576 ? 10 : 3;
		double bw[2], ovl[2];

		if (win > info.max_inflight)
			win = info.max_inflight;
		if (win > info.cq_entries)
			win = info.cq_entries;
		if ((uint64_t)win * len > info.max_bytes)
			win = (unsigned)(info.max_bytes / len);
		if (win < 1)
			win = 1;
		bandwidth(src, len, win, it, reps, bw);
		overlap(src, len, it, reps, ovl);
		printf("%zu %.1f %.1f %.1f %.1f\n", len, bw[0], bw[1], ovl[0],
		       ovl[1]);
		fflush(stdout);
	}
	stop_child();
	munmap(cq, info.cq_bytes);
	close(fd);
	free(src);
	return 0;
}
