// SPDX-License-Identifier: GPL-2.0
/*
 * test_domain.c - protection domains: isolation of endpoints, rings and
 * regions between domains, keys per owner uid (no squatting), an endpoint
 * file in another uid's hands (-EPERM), JOIN flags, lifetime.
 */
#include "helpers.h"

#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

START_TEST(test_isolation_mbox_mmap)
{
	uint64_t ka = cm_unique_key(), kb = cm_unique_key();
	struct coopmpi_join ja0, ja1, jb0;
	struct coopmpi_ep_query q;
	struct cm_msg m, got[4];
	struct cm_ring ring;
	uint32_t target, done;
	int a0, a1, b0, tfd, sfd;
	void *p;

	a0 = cm_open_join(ka, COOPMPI_JOIN_CREATE, &ja0);
	a1 = cm_open_join(ka, COOPMPI_JOIN_EXISTING, &ja1);
	b0 = cm_open_join(kb, COOPMPI_JOIN_CREATE, &jb0);
	REQUIRE(ja0.domain_id == ja1.domain_id, "same key, domain ids %u %u",
		ja0.domain_id, ja1.domain_id);
	REQUIRE(jb0.domain_id != ja0.domain_id,
		"different keys share domain_id %u", jb0.domain_id);

	/* an ep id that exists in A but not in B */
	if (ja1.ep_id != jb0.ep_id) {
		target = ja1.ep_id;
		tfd = a1;
		sfd = a0;
	} else {
		target = ja0.ep_id;
		tfd = a0;
		sfd = a1;
	}
	REQUIRE_OK(cm_ep_query(sfd, target, &q));
	REQUIRE(q.state == COOPMPI_EP_ALIVE, "target ep %u not alive in A", target);
	REQUIRE_OK(cm_ep_query(b0, target, &q));
	REQUIRE(q.state == COOPMPI_EP_FREE,
		"domain B sees ep %u of domain A as state %u", target, q.state);

	cm_msg_make(&m, 99, 1);
	REQUIRE_ERR(cm_send(b0, target, &m, 1, &done), ENXIO);
	REQUIRE_ERR(cm_doorbell(b0, target), ENXIO);
	p = mmap(NULL, cm_info_cache.ring_bytes, PROT_READ | PROT_WRITE,
		 MAP_SHARED, b0, (off_t)COOPMPI_MMAP_RING(target));
	REQUIRE(p == MAP_FAILED && errno == ENXIO,
		"domain B mmap of ring %u (only in A): %s, want ENXIO", target,
		p == MAP_FAILED ? cm_errname(errno) : "success");

	/* B's own ring and A's legit traffic still work */
	REQUIRE_OK(cm_ring_map(b0, jb0.ep_id, &ring));
	REQUIRE(ring.hdr->ep_id == jb0.ep_id, "own ring hdr ep_id %u",
		ring.hdr->ep_id);
	cm_ring_unmap(&ring);
	cm_msg_make(&m, 1, 7);
	REQUIRE_OK(cm_send(sfd, target, &m, 1, &done));
	REQUIRE(done == 1, "done %u", done);
	REQUIRE_OK(cm_recv(tfd, got, 4, 0, &done));
	REQUIRE(done == 1 && got[0].producer == 1 && got[0].seq == 7,
		"target got %u msgs, first producer %u seq %llu", done,
		got[0].producer, (unsigned long long)got[0].seq);
	REQUIRE_ERR(cm_recv(tfd, got, 4, 0, &done), EAGAIN);
	close(a0);
	close(a1);
	close(b0);
}
END_TEST

START_TEST(test_isolation_region)
{
	uint64_t ka = cm_unique_key(), kb = cm_unique_key();
	struct coopmpi_join ja0, ja1, jb0;
	uint8_t *buf = cm_map_anon(65536), local[256];
	uint64_t c, cb, copied;
	int a0, a1, b0;

	a0 = cm_open_join(ka, COOPMPI_JOIN_CREATE, &ja0);
	a1 = cm_open_join(ka, COOPMPI_JOIN_EXISTING, &ja1);
	b0 = cm_open_join(kb, COOPMPI_JOIN_CREATE, &jb0);
	cm_fill_pattern(buf, 65536, 5);
	REQUIRE_OK(cm_reg(a0, buf, 65536,
			  COOPMPI_REGION_READ | COOPMPI_REGION_WRITE, &c));

	memset(local, 0xee, sizeof(local));
	REQUIRE_ERR(cm_copy(b0, c, 0, local, sizeof(local),
			    COOPMPI_COPY_FROM_REGION, &copied), ENXIO);
	REQUIRE(cm_check_byte(local, sizeof(local), 0xee) < 0,
		"failed cross-domain copy wrote local memory");
	REQUIRE_ERR(cm_copy(b0, c, 0, local, sizeof(local),
			    COOPMPI_COPY_TO_REGION, &copied), ENXIO);
	REQUIRE(cm_check_pattern(buf, 65536, 5, 0) < 0,
		"cross-domain copy modified the region");
	REQUIRE_ERR(cm_dereg(b0, c), ENXIO);

	/* the region is intact and usable inside A */
	REQUIRE_OK(cm_copy(a1, c, 1000, local, sizeof(local),
			   COOPMPI_COPY_FROM_REGION, &copied));
	REQUIRE(copied == sizeof(local), "copied %llu",
		(unsigned long long)copied);
	REQUIRE(cm_check_pattern(local, sizeof(local), 5, 1000) < 0,
		"wrong data from the region");

	/* and the other way round */
	REQUIRE_OK(cm_reg(b0, buf, 4096, COOPMPI_REGION_READ, &cb));
	if (cb != c)
		REQUIRE_ERR(cm_copy(a1, cb, 0, local, 64,
				    COOPMPI_COPY_FROM_REGION, &copied), ENXIO);
	REQUIRE_OK(cm_dereg(b0, cb));
	REQUIRE_OK(cm_dereg(a0, c));
	close(a0);
	close(a1);
	close(b0);
}
END_TEST

/* open the device as the current (dropped) user; fall back to an fd
 * opened before dropping privileges when /dev permissions forbid it */
static int open_as_user(int pre_opened, const char *who)
{
	int fd = open(CM_DEV_PATH, O_RDWR | O_CLOEXEC);

	if (fd >= 0) {
		close(pre_opened);
		return fd;
	}
	REQUIRE(errno == EACCES || errno == EPERM, "open as %s: %s", who,
		strerror(errno));
	fprintf(stderr, "note: %s cannot open %s (%s); using an fd opened as root\n",
		who, CM_DEV_PATH, strerror(errno));
	return pre_opened;
}

/*
 * Keys are per owner (the joiner's effective uid): uid 65534 joining
 * root's key gets a domain of its own and never sees root's; a key that
 * uid 65534 took first (squatting) still gives root - the victim - its
 * own domain; a second process of the same uid joins the first's domain.
 */
START_TEST(test_join_keys_per_uid)
{
	uint64_t root_key = cm_unique_key(), nobody_key = cm_unique_key();
	uint64_t squat_key = cm_unique_key();
	struct coopmpi_join j, jr;
	int sv[2], fd, rfd;
	pid_t pid;

	cm_require_root();
	fd = cm_open_join(root_key, COOPMPI_JOIN_CREATE, &j);
	cm_socketpair(sv);
	pid = cm_fork();
	if (pid == 0) {
		int pre[3] = { cm_open(), cm_open(), cm_open() }, ufd[3], i;
		struct coopmpi_join jn;

		close(sv[0]);
		cm_drop_to_nobody();
		for (i = 0; i < 3; i++)
			ufd[i] = open_as_user(pre[i], "uid 65534");
		REQUIRE_ERR(cm_join(ufd[0], root_key, COOPMPI_JOIN_EXISTING,
				    NULL), ENOENT);
		REQUIRE_OK(cm_join(ufd[0], root_key, 0, &jn));
		REQUIRE(jn.domain_id != j.domain_id,
			"uid 65534 joined root's domain %u", j.domain_id);
		REQUIRE_OK(cm_join(ufd[1], nobody_key, COOPMPI_JOIN_CREATE,
				   &jn));
		cm_put_u64(sv[1], jn.domain_id);
		REQUIRE_OK(cm_join(ufd[2], squat_key, COOPMPI_JOIN_CREATE,
				   &jn));
		cm_put_u64(sv[1], jn.domain_id);
		(void)cm_get_u64(sv[1]);
		for (i = 0; i < 3; i++)
			close(ufd[i]);
		_exit(0);
	}
	close(sv[1]);
	{
		uint32_t nobody_dom = cm_get_u64_from(sv[0], pid, "child");
		uint32_t squat_dom = cm_get_u64_from(sv[0], pid, "child");
		pid_t p2 = cm_fork();

		/* another process of uid 65534 joins nobody's domain */
		if (p2 == 0) {
			int pre = cm_open(), ufd;
			struct coopmpi_join jn;

			cm_drop_to_nobody();
			ufd = open_as_user(pre, "uid 65534");
			REQUIRE_OK(cm_join(ufd, nobody_key,
					   COOPMPI_JOIN_EXISTING, &jn));
			REQUIRE(jn.domain_id == nobody_dom,
				"same uid, same key: domain %u, not %u",
				jn.domain_id, nobody_dom);
			close(ufd);
			_exit(0);
		}
		cm_wait_ok(p2, "same-uid joiner");
		/* root sees neither of nobody's domains, CAP_SYS_ADMIN or not */
		rfd = cm_open();
		REQUIRE_ERR(cm_join(rfd, nobody_key, COOPMPI_JOIN_EXISTING,
				    NULL), ENOENT);
		/* the squatted key: root creates its own domain all the same */
		REQUIRE_OK(cm_join(rfd, squat_key, COOPMPI_JOIN_CREATE, &jr));
		REQUIRE(jr.domain_id != squat_dom && jr.domain_id != j.domain_id,
			"root's squatted key gave domain %u (nobody's %u)",
			jr.domain_id, squat_dom);
		close(rfd);
	}
	cm_put_u64(sv[0], 0);
	cm_wait_ok(pid, "uid 65534 joiner");
	close(sv[0]);
	close(fd);
}
END_TEST

/* SCM_RIGHTS over a unix socket */
static void send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, b = 'f';
	struct iovec iov = { .iov_base = &b, .iov_len = 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	REQUIRE(sendmsg(sock, &mh, 0) == 1, "sendmsg: %s", strerror(errno));
}

static int recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))], b;
	struct iovec iov = { .iov_base = &b, .iov_len = 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	int fd;

	REQUIRE(recvmsg(sock, &mh, 0) == 1, "recvmsg: %s", strerror(errno));
	c = CMSG_FIRSTHDR(&mh);
	REQUIRE(c && c->cmsg_type == SCM_RIGHTS, "no fd received");
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/* A DMA command through io_uring on fd: its CQE's result. */
static int uring_dma_res(int fd)
{
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int res;

	REQUIRE(io_uring_queue_init(4, &ring, 0) == 0, "io_uring_queue_init");
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, NULL, 0, 0);
	sqe->cmd_op = COOPMPI_URING_CMD_DMA;
	memset(sqe->cmd, 0, 16);
	REQUIRE(io_uring_submit(&ring) == 1, "io_uring_submit");
	REQUIRE(io_uring_wait_cqe(&ring, &cqe) == 0, "io_uring_wait_cqe");
	res = cqe->res;
	io_uring_cqe_seen(&ring, cqe);
	io_uring_queue_exit(&ring);
	return res;
}

/* Everything a member can do through its endpoint, as another uid with a
 * member's file: refused, nothing read or written. */
static void refused_as_other_uid(int fd, const struct coopmpi_join *j,
				 uint64_t cookie)
{
	struct cm_msg m;
	uint32_t done = 0;
	uint64_t copied = 0, c2;
	char buf[4096];
	void *p;

	memset(buf, 0x5a, sizeof(buf));
	REQUIRE_ERR(cm_copy(fd, cookie, 0, buf, sizeof(buf),
			    COOPMPI_COPY_FROM_REGION, &copied),
		    EPERM);
	REQUIRE(buf[0] == 0x5a && buf[4095] == 0x5a, "region data read");
	REQUIRE_ERR(cm_copy(fd, cookie, 0, buf, sizeof(buf),
			    COOPMPI_COPY_TO_REGION, &copied), EPERM);
	cm_msg_make(&m, 66, 1);
	REQUIRE_ERR(cm_send(fd, j->ep_id, &m, 1, &done), EPERM);
	REQUIRE_ERR(cm_recv(fd, &m, 1, 0, &done), EPERM);
	REQUIRE_ERR(cm_doorbell(fd, j->ep_id), EPERM);
	REQUIRE_ERR(cm_reg(fd, buf, sizeof(buf), COOPMPI_REGION_READ, &c2),
		    EPERM);
	REQUIRE_ERR(cm_dereg(fd, cookie), EPERM);
	p = mmap(NULL, cm_info_cache.ring_bytes, PROT_READ | PROT_WRITE,
		 MAP_SHARED, fd, (off_t)COOPMPI_MMAP_RING(j->ep_id));
	REQUIRE(p == MAP_FAILED && errno == EPERM, "ring mmap: %s",
		p == MAP_FAILED ? cm_errname(errno) : "mapped");
	p = mmap(NULL, cm_info_cache.counters_bytes, PROT_READ | PROT_WRITE,
		 MAP_SHARED, fd, 0);
	REQUIRE(p == MAP_FAILED && errno == EPERM, "counters mmap: %s",
		p == MAP_FAILED ? cm_errname(errno) : "mapped");
	REQUIRE_ERR(uring_dma_res(fd), EPERM);
}

/*
 * A member's endpoint file in the hands of another uid - passed over a
 * unix socket, or kept across a privilege drop (as across a setuid exec,
 * the euid is what differs) - opens nothing of the domain; the member
 * itself, and a child it forked after joining (same uid), keep working.
 */
START_TEST(test_fd_other_uid)
{
	struct coopmpi_join j;
	uint64_t cookie, copied;
	char *mem = cm_map_anon(4096);
	int sv[2], fd;
	pid_t pid;

	cm_require_root();
	memset(mem, 0x11, 4096);
	fd = cm_open_join(cm_unique_key(), COOPMPI_JOIN_CREATE, &j);
	REQUIRE_OK(cm_reg(fd, mem, 4096,
			  COOPMPI_REGION_READ | COOPMPI_REGION_WRITE, &cookie));
	cm_socketpair(sv);
	pid = cm_fork();
	if (pid == 0) {	/* receives the file, then drops to uid 65534 */
		int got;

		close(sv[0]);
		got = recv_fd(sv[1]);
		cm_drop_to_nobody();
		refused_as_other_uid(got, &j, cookie);
		/* and the inherited one (fork after join, then the drop) */
		refused_as_other_uid(fd, &j, cookie);
		cm_put_u64(sv[1], 1);
		_exit(0);
	}
	close(sv[1]);
	send_fd(sv[0], fd);
	REQUIRE(cm_get_u64_from(sv[0], pid, "child") == 1, "child protocol");
	cm_wait_ok(pid, "uid 65534 holder");
	close(sv[0]);

	/* a child of the same uid forked after the join uses the file */
	pid = cm_fork();
	if (pid == 0) {
		char b[16];

		REQUIRE_OK(cm_copy(fd, cookie, 0, b, sizeof(b),
				   COOPMPI_COPY_FROM_REGION, &copied));
		REQUIRE(b[0] == 0x11 && b[15] == 0x11, "child read %x", b[0]);
		_exit(0);
	}
	cm_wait_ok(pid, "same-uid child");
	REQUIRE(mem[0] == 0x11 && mem[4095] == 0x11, "region memory changed");
	REQUIRE_OK(cm_copy(fd, cookie, 0, mem + 2048, 16,
			   COOPMPI_COPY_FROM_REGION, &copied));
	close(fd);
	munmap(mem, 4096);
}
END_TEST

START_TEST(test_join_flags)
{
	uint64_t k = cm_unique_key();
	struct coopmpi_join j1, j2, j3;
	int u = cm_open(), v = cm_open(), w = cm_open();

	REQUIRE_ERR(cm_join(u, k, COOPMPI_JOIN_EXISTING, NULL), ENOENT);
	REQUIRE_ERR(cm_join(u, k, COOPMPI_JOIN_FLAGS, NULL), EINVAL);
	REQUIRE_OK(cm_join(u, k, COOPMPI_JOIN_CREATE, &j1));

	REQUIRE_ERR(cm_join(v, k, COOPMPI_JOIN_CREATE, NULL), EEXIST);
	REQUIRE_ERR(cm_join(v, k, COOPMPI_JOIN_FLAGS, NULL), EINVAL);
	REQUIRE_OK(cm_join(v, k, COOPMPI_JOIN_EXISTING, &j2));
	REQUIRE_OK(cm_join(w, k, 0, &j3));
	REQUIRE(j1.domain_id == j2.domain_id && j2.domain_id == j3.domain_id,
		"one key, domain ids %u %u %u", j1.domain_id, j2.domain_id,
		j3.domain_id);
	REQUIRE(j1.ep_id != j2.ep_id && j2.ep_id != j3.ep_id &&
		j1.ep_id != j3.ep_id, "ep ids %u %u %u", j1.ep_id, j2.ep_id,
		j3.ep_id);
	REQUIRE(j1.max_endpoints == cm_info_cache.max_endpoints,
		"max_endpoints %u", j1.max_endpoints);
	close(u);
	close(v);
	close(w);
}
END_TEST

START_TEST(test_domain_lifetime)
{
	uint64_t k = cm_unique_key();
	struct coopmpi_join j;
	int a = cm_open_join(k, COOPMPI_JOIN_CREATE, &j);
	int b = cm_open_join(k, COOPMPI_JOIN_EXISTING, NULL);
	int u = cm_open(), r = 0;
	uint64_t deadline;

	close(a);
	/* one endpoint left: the domain lives on */
	REQUIRE_OK(cm_join(u, k, COOPMPI_JOIN_EXISTING, NULL));
	close(u);
	close(b);
	/* last endpoint closed: the key is free again */
	u = cm_open();
	deadline = cm_now_ms() + 3000;
	do {
		r = cm_join(u, k, COOPMPI_JOIN_EXISTING, NULL);
		if (r == 0) {
			close(u);
			u = cm_open();
			cm_sleep_ms(20);
		}
	} while (r == 0 && cm_now_ms() < deadline);
	REQUIRE(r == -ENOENT, "JOIN_EXISTING after the last close: %s",
		cm_errname(-r));
	REQUIRE_OK(cm_join(u, k, COOPMPI_JOIN_CREATE, &j));
	close(u);
}
END_TEST

void add_domain_tests(Suite *s)
{
	TCase *tc = cm_tcase("domain", 60);

	tcase_add_test(tc, test_isolation_mbox_mmap);
	tcase_add_test(tc, test_isolation_region);
	tcase_add_test(tc, test_join_keys_per_uid);
	tcase_add_test(tc, test_fd_other_uid);
	tcase_add_test(tc, test_join_flags);
	tcase_add_test(tc, test_domain_lifetime);
	suite_add_tcase(s, tc);
}
