// SPDX-License-Identifier: GPL-2.0
/*
 * fuse_silent.c - see fuse_silent.h.  The daemon is a forked child of the
 * test running fuse_session_loop(); the parent waits until the file is
 * visible.
 */
#define FUSE_USE_VERSION 34

#include "fuse_silent.h"
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define DATA_INO 2
#define ATTR_TTL 3600.0

static size_t data_size;

static void fill_attr(struct stat *st, fuse_ino_t ino)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0666;
		st->st_nlink = 1;
		st->st_size = (off_t)data_size;
	}
}

static void silent_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->want &= ~FUSE_CAP_ASYNC_READ;
}

static void silent_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;

	if (parent != FUSE_ROOT_ID || strcmp(name, "data")) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = DATA_INO;
	e.attr_timeout = ATTR_TTL;
	e.entry_timeout = ATTR_TTL;
	fill_attr(&e.attr, DATA_INO);
	fuse_reply_entry(req, &e);
}

static void silent_getattr(fuse_req_t req, fuse_ino_t ino,
			   struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (ino != FUSE_ROOT_ID && ino != DATA_INO) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(&st, ino);
	fuse_reply_attr(req, &st, ATTR_TTL);
}

static void silent_open(fuse_req_t req, fuse_ino_t ino,
			struct fuse_file_info *fi)
{
	if (ino != DATA_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

/* The point of it: the request stays unanswered until the daemon dies. */
static void silent_read(fuse_req_t req, fuse_ino_t ino, size_t size,
			off_t off, struct fuse_file_info *fi)
{
	(void)req, (void)ino, (void)size, (void)off, (void)fi;
}

static void silent_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
			 size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)req, (void)ino, (void)buf, (void)size, (void)off, (void)fi;
}

static const struct fuse_lowlevel_ops silent_ops = {
	.init = silent_init,
	.lookup = silent_lookup,
	.getattr = silent_getattr,
	.open = silent_open,
	.read = silent_read,
	.write = silent_write,
};

static void __attribute__((noreturn)) daemon_main(const char *dir)
{
	char *argv[] = { "fuse_silent", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(1, argv);
	struct fuse_session *se;

	se = fuse_session_new(&args, &silent_ops, sizeof(silent_ops), NULL);
	if (!se || fuse_session_mount(se, dir)) {
		fprintf(stderr, "fuse_silent: cannot mount %s\n", dir);
		_exit(CM_CHILD_FAIL);
	}
	fuse_session_loop(se);
	_exit(0);
}

static void fuse_module_loaded(void)
{
	if (access("/dev/fuse", R_OK | W_OK) == 0)
		return;
	REQUIRE(system("modprobe fuse") == 0 &&
		access("/dev/fuse", R_OK | W_OK) == 0,
		"no /dev/fuse (modprobe fuse failed): this kernel needs FUSE");
}

void cm_fuse_start(struct cm_fuse *f, size_t size)
{
	struct stat st;
	uint64_t t0;
	int status;

	cm_require_root();
	fuse_module_loaded();
	snprintf(f->dir, sizeof(f->dir), "/tmp/coopmpi-fuse-XXXXXX");
	REQUIRE(mkdtemp(f->dir), "mkdtemp: %s", strerror(errno));
	snprintf(f->path, sizeof(f->path), "%s/data", f->dir);
	f->size = size;
	data_size = size;
	f->pid = cm_fork();
	if (f->pid == 0)
		daemon_main(f->dir);
	t0 = cm_now_ms();
	while (stat(f->path, &st) != 0 || (size_t)st.st_size != size) {
		REQUIRE(waitpid(f->pid, &status, WNOHANG) == 0,
			"the FUSE daemon exited (status %#x)", status);
		REQUIRE(cm_now_ms() - t0 < 20000, "%s did not appear", f->path);
		cm_sleep_ms(20);
	}
}

void *cm_fuse_map(struct cm_fuse *f, int prot, int flags)
{
	int fd = open(f->path, prot & PROT_WRITE && flags & MAP_SHARED ?
			       O_RDWR : O_RDONLY);
	void *p;

	REQUIRE(fd >= 0, "open %s: %s", f->path, strerror(errno));
	p = mmap(NULL, f->size, prot, flags, fd, 0);
	REQUIRE(p != MAP_FAILED, "mmap %s: %s", f->path, strerror(errno));
	close(fd);
	return p;
}

void cm_fuse_stop(struct cm_fuse *f)
{
	int st;

	kill(f->pid, SIGKILL);
	REQUIRE(cm_wait_timeout(f->pid, 20000, &st) == 0,
		"the FUSE daemon did not die");
	REQUIRE(umount2(f->dir, MNT_DETACH) == 0, "umount %s: %s", f->dir,
		strerror(errno));
	REQUIRE(rmdir(f->dir) == 0, "rmdir %s: %s", f->dir, strerror(errno));
}
