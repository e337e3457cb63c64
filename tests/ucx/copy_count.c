/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * copy_count.c - LD_PRELOAD'ed into MPI ranks by the scripts of tests/ucx
 * next to libuct_coop.so: counts the bytes this process moves with
 * process_vm_readv / process_vm_writev, by calling object - libcoopmpi's
 * shm provider inside libuct_coop.so, Open MPI's vader (CMA), UCX's cma -
 * and prints one line per object on stderr on entering MPI_Finalize and
 * at exit (for what was copied after; lines of one process add up):
 *   copy_count[PID@HOST]: N bytes in M calls by OBJECT
 * (the object's file name; HOST tells the nodes of a multi-node job
 * apart).  Open MPI's default path through coop (ob1 with vader and btl
 * uct) has no UCX lane log to show that coop read the rendezvous data:
 * these lines do.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

typedef ssize_t (*vm_fn)(pid_t, const struct iovec *, unsigned long,
			 const struct iovec *, unsigned long, unsigned long);

#define MAX_CALLERS 8

static struct caller {
	char file[64];		/* its file's base name (the object may be
				 * unloaded before we report) */
	unsigned long bytes, calls;
} callers[MAX_CALLERS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void count(const void *ret_addr, ssize_t n)
{
	Dl_info info;
	const char *file = "?", *base;
	int i;

	if (dladdr(ret_addr, &info) && info.dli_fname) {
		file = info.dli_fname;
		base = strrchr(file, '/');
		if (base)
			file = base + 1;
	}
	pthread_mutex_lock(&lock);
	for (i = 0; i < MAX_CALLERS - 1 && callers[i].file[0] &&
		    strncmp(callers[i].file, file, sizeof(callers[i].file) - 1); i++)
		;
	if (!callers[i].file[0])
		snprintf(callers[i].file, sizeof(callers[i].file), "%s", file);
	callers[i].bytes += (unsigned long)n;
	callers[i].calls++;
	pthread_mutex_unlock(&lock);
}

static ssize_t counted(const char *name, const void *ret_addr, pid_t pid,
		       const struct iovec *l, unsigned long ln,
		       const struct iovec *r, unsigned long rn,
		       unsigned long flags)
{
	vm_fn real = (vm_fn)dlsym(RTLD_NEXT, name);
	ssize_t n = real ? real(pid, l, ln, r, rn, flags) : -1;

	if (n > 0)
		count(ret_addr, n);
	return n;
}

ssize_t process_vm_readv(pid_t pid, const struct iovec *l, unsigned long ln,
			 const struct iovec *r, unsigned long rn,
			 unsigned long flags)
{
	return counted("process_vm_readv", __builtin_return_address(0),
		       pid, l, ln, r, rn, flags);
}

ssize_t process_vm_writev(pid_t pid, const struct iovec *l, unsigned long ln,
			  const struct iovec *r, unsigned long rn,
			  unsigned long flags)
{
	return counted("process_vm_writev", __builtin_return_address(0),
		       pid, l, ln, r, rn, flags);
}

/* prints what was counted since the last report, and starts again */
static void report(void)
{
	char host[64] = "?";
	int i;

	gethostname(host, sizeof(host) - 1);
	pthread_mutex_lock(&lock);
	for (i = 0; i < MAX_CALLERS && callers[i].file[0]; i++) {
		if (!callers[i].calls)
			continue;
		fprintf(stderr, "copy_count[%d@%s]: %lu bytes in %lu calls by %s\n",
			(int)getpid(), host, callers[i].bytes, callers[i].calls,
			callers[i].file);
		callers[i].bytes = callers[i].calls = 0;
	}
	pthread_mutex_unlock(&lock);
}

/*
 * MPI programs report on entering MPI_Finalize as well: their messages
 * have all moved by then, and a rank whose MPI hangs in MPI_Finalize
 * (MPICH 4.0.2 over UCX's tcp, tests/README) never reaches the
 * destructor.  A program without MPI never calls this.
 */
int MPI_Finalize(void)
{
	int (*real)(void) = (int (*)(void))dlsym(RTLD_NEXT, "MPI_Finalize");

	report();
	return real ? real() : 0;
}

__attribute__((destructor)) static void report_at_exit(void)
{
	report();
}
