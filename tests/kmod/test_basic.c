// SPDX-License-Identifier: GPL-2.0
/*
 * test_basic.c - ioctl ABI rules: INFO, join state, struct size/version,
 * reserved fields, unknown flags, unknown ioctls, EP_QUERY, domain full.
 */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

enum { I_INFO, I_JOIN, I_EPQ, I_SEND, I_RECV, I_DOORBELL, I_REG, I_DEREG,
       I_COPY, I_WATTACH, I_WDETACH, I_COUNT };

static const char *const ioc_name[I_COUNT] = {
	"INFO", "JOIN", "EP_QUERY", "MBOX_SEND", "MBOX_RECV", "DOORBELL",
	"REGION_REGISTER", "REGION_DEREGISTER", "COPY", "WINDOW_ATTACH",
	"WINDOW_DETACH",
};

static const unsigned long ioc_cmd[I_COUNT] = {
	COOPMPI_IOC_INFO, COOPMPI_IOC_JOIN, COOPMPI_IOC_EP_QUERY,
	COOPMPI_IOC_MBOX_SEND, COOPMPI_IOC_MBOX_RECV, COOPMPI_IOC_DOORBELL,
	COOPMPI_IOC_REGION_REGISTER, COOPMPI_IOC_REGION_DEREGISTER,
	COOPMPI_IOC_COPY, COOPMPI_IOC_WINDOW_ATTACH, COOPMPI_IOC_WINDOW_DETACH,
};

union cm_args {
	struct coopmpi_info info;
	struct coopmpi_join join;
	struct coopmpi_ep_query epq;
	struct coopmpi_mbox_xfer xfer;
	struct coopmpi_doorbell db;
	struct coopmpi_region_register reg;
	struct coopmpi_region_deregister dereg;
	struct coopmpi_copy copy;
	struct coopmpi_window_attach wattach;
	struct coopmpi_window_detach wdetach;
	uint8_t raw[512];
};

/* A joined pair of endpoints plus resources for "valid" calls. */
struct ctx {
	uint64_t key;
	int a, b;		/* joined endpoints */
	struct coopmpi_join ja, jb;
	uint8_t *buf;		/* 64 KiB */
	struct cm_msg msgs[4];
	uint8_t local[64];
	struct iovec iov;
};

static void ctx_init(struct ctx *x)
{
	memset(x, 0, sizeof(*x));
	x->key = cm_unique_key();
	x->a = cm_open_join(x->key, COOPMPI_JOIN_CREATE, &x->ja);
	x->b = cm_open_join(x->key, COOPMPI_JOIN_EXISTING, &x->jb);
	x->buf = cm_map_anon(65536);
	memset(x->buf, 0x11, 65536);
	for (int i = 0; i < 4; i++)
		cm_msg_make(&x->msgs[i], 0, (uint64_t)i);
	x->iov.iov_base = x->local;
	x->iov.iov_len = sizeof(x->local);
}

static size_t ioc_size(int which)
{
	return _IOC_SIZE(ioc_cmd[which]);
}

/*
 * Fill u with arguments that make ioctl `which` succeed; returns the fd to
 * issue it on.  Side effects make sure success is possible (a message is
 * queued before RECV, a fresh region exists for DEREG and COPY).
 */
static int build_valid(struct ctx *x, int which, union cm_args *u,
		       int *unjoined_fd)
{
	memset(u, 0, sizeof(*u));
	switch (which) {
	case I_INFO:
		u->info.size = sizeof(u->info);
		return x->a;
	case I_JOIN:
		if (*unjoined_fd < 0)
			*unjoined_fd = cm_open();
		u->join.size = sizeof(u->join);
		u->join.key = x->key;
		u->join.flags = COOPMPI_JOIN_EXISTING;
		return *unjoined_fd;
	case I_EPQ:
		u->epq.size = sizeof(u->epq);
		u->epq.ep_id = x->ja.ep_id;
		return x->a;
	case I_SEND:
		u->xfer.size = sizeof(u->xfer);
		u->xfer.peer = x->jb.ep_id;
		u->xfer.count = 1;
		u->xfer.msgs = (uintptr_t)x->msgs;
		return x->a;
	case I_RECV: {
		struct cm_msg drain[16];
		uint32_t done;

		while (cm_recv(x->b, drain, 16, 0, &done) == 0)
			;
		REQUIRE_OK(cm_send(x->a, x->jb.ep_id, x->msgs, 1, &done));
		u->xfer.size = sizeof(u->xfer);
		u->xfer.count = 1;
		u->xfer.msgs = (uintptr_t)x->msgs;
		return x->b;
	}
	case I_DOORBELL:
		u->db.size = sizeof(u->db);
		u->db.peer = x->jb.ep_id;
		return x->a;
	case I_REG:
		u->reg.size = sizeof(u->reg);
		u->reg.flags = COOPMPI_REGION_READ;
		u->reg.addr = (uintptr_t)x->buf;
		u->reg.length = 4096;
		return x->a;
	case I_DEREG: {
		uint64_t c;

		REQUIRE_OK(cm_reg(x->a, x->buf, 8192, COOPMPI_REGION_READ, &c));
		u->dereg.size = sizeof(u->dereg);
		u->dereg.cookie = c;
		return x->a;
	}
	case I_COPY: {
		uint64_t c;

		REQUIRE_OK(cm_reg(x->a, x->buf, 8192,
				  COOPMPI_REGION_READ | COOPMPI_REGION_WRITE,
				  &c));
		u->copy.size = sizeof(u->copy);
		u->copy.flags = COOPMPI_COPY_FROM_REGION;
		u->copy.cookie = c;
		u->copy.offset = 100;
		u->copy.iov = (uintptr_t)&x->iov;
		u->copy.iov_count = 1;
		u->copy.length = sizeof(x->local);
		return x->b;
	}
	case I_WATTACH:
	case I_WDETACH: {
		struct coopmpi_window_attach a = { .size = sizeof(a) };
		uint64_t c;

		REQUIRE_OK(cm_reg(x->a, x->buf, 8192,
				  COOPMPI_REGION_READ | COOPMPI_REGION_MAP, &c));
		a.cookie = c;
		if (which == I_WATTACH) {
			u->wattach = a;
			return x->b;
		}
		REQUIRE_OK(cm_ioctl(x->b, COOPMPI_IOC_WINDOW_ATTACH, &a));
		u->wdetach.size = sizeof(u->wdetach);
		u->wdetach.handle = a.handle;
		return x->b;
	}
	}
	REQUIRE(0, "bad ioctl index %d", which);
	return -1;
}

static void expect_valid_ok(struct ctx *x, int which, int *unjoined_fd)
{
	union cm_args u;
	int fd = build_valid(x, which, &u, unjoined_fd);
	int r = cm_ioctl(fd, ioc_cmd[which], &u);

	REQUIRE(r == 0, "valid %s failed: %s", ioc_name[which], cm_errname(-r));
	if (which == I_JOIN) {
		close(*unjoined_fd);
		*unjoined_fd = -1;
	}
}

START_TEST(test_info_before_join)
{
	struct coopmpi_info info;
	struct coopmpi_join j;
	int fd = cm_open();

	REQUIRE_OK(cm_get_info(fd, &info));
	REQUIRE(info.size == sizeof(info), "size %u", info.size);
	REQUIRE(info.abi_version == COOPMPI_ABI_VERSION, "abi_version %u",
		info.abi_version);
	REQUIRE(info.msg_size == COOPMPI_MSG_SIZE, "msg_size %u", info.msg_size);
	REQUIRE(info.ring_slots >= 2 &&
		(info.ring_slots & (info.ring_slots - 1)) == 0,
		"ring_slots %u not a power of two", info.ring_slots);
	REQUIRE(info.ring_bytes == coopmpi_ring_bytes(info.ring_slots),
		"ring_bytes %llu != coopmpi_ring_bytes(%u) = %llu",
		(unsigned long long)info.ring_bytes, info.ring_slots,
		(unsigned long long)coopmpi_ring_bytes(info.ring_slots));
	REQUIRE(info.max_endpoints >= 2, "max_endpoints %u", info.max_endpoints);
	REQUIRE(info.counters_bytes == coopmpi_counters_bytes(info.max_endpoints),
		"counters_bytes %llu != %llu",
		(unsigned long long)info.counters_bytes,
		(unsigned long long)coopmpi_counters_bytes(info.max_endpoints));
	REQUIRE(info.copy_chunk_pages >= 1, "copy_chunk_pages %u",
		info.copy_chunk_pages);
	REQUIRE(info.dma_engine <= COOPMPI_DMA_HW, "dma_engine %u",
		info.dma_engine);
	printf("INFO: abi=%u max_endpoints=%u ring_slots=%u ring_bytes=%llu "
	       "counters_bytes=%llu copy_chunk_pages=%u dma_engine=%u\n",
	       info.abi_version, info.max_endpoints, info.ring_slots,
	       (unsigned long long)info.ring_bytes,
	       (unsigned long long)info.counters_bytes, info.copy_chunk_pages,
	       info.dma_engine);

	/* still works after join, same answers */
	REQUIRE_OK(cm_join(fd, cm_unique_key(), 0, &j));
	REQUIRE(j.max_endpoints == info.max_endpoints, "join max_endpoints %u",
		j.max_endpoints);
	{
		struct coopmpi_info again;

		REQUIRE_OK(cm_get_info(fd, &again));
		REQUIRE(again.ring_slots == info.ring_slots &&
			again.ring_bytes == info.ring_bytes &&
			again.max_endpoints == info.max_endpoints,
			"INFO changed after join");
	}
	close(fd);
}
END_TEST

START_TEST(test_not_joined_enotconn)
{
	struct ctx x;
	int u = cm_open();
	int dummy = -1;
	void *p;

	ctx_init(&x);
	for (int which = I_EPQ; which < I_COUNT; which++) {
		union cm_args a;
		int r;

		build_valid(&x, which, &a, &dummy);
		r = cm_ioctl(u, ioc_cmd[which], &a);
		REQUIRE(r == -ENOTCONN, "%s before JOIN returned %s, want ENOTCONN",
			ioc_name[which], cm_errname(-r));
	}
	p = mmap(NULL, cm_info_cache.counters_bytes, PROT_READ, MAP_SHARED, u,
		 (off_t)COOPMPI_MMAP_COUNTERS);
	REQUIRE(p == MAP_FAILED, "mmap of the counters before JOIN succeeded");
	p = mmap(NULL, cm_info_cache.ring_bytes, PROT_READ, MAP_SHARED, u,
		 (off_t)COOPMPI_MMAP_RING(x.ja.ep_id));
	REQUIRE(p == MAP_FAILED, "mmap of a ring before JOIN succeeded");
	/* and the fd is still joinable */
	REQUIRE_OK(cm_join(u, x.key, COOPMPI_JOIN_EXISTING, NULL));
	close(u);
}
END_TEST

START_TEST(test_join_twice)
{
	struct coopmpi_join j, j2;
	struct coopmpi_ep_query q;
	uint64_t key = cm_unique_key();
	int fd = cm_open_join(key, 0, &j);

	REQUIRE_ERR(cm_join(fd, key, 0, &j2), EALREADY);
	REQUIRE_ERR(cm_join(fd, key, COOPMPI_JOIN_EXISTING, &j2), EALREADY);
	REQUIRE_ERR(cm_join(fd, cm_unique_key(), 0, &j2), EALREADY);
	REQUIRE_ERR(cm_join(fd, cm_unique_key(), COOPMPI_JOIN_CREATE, &j2),
		    EALREADY);
	/* still the same endpoint */
	REQUIRE_OK(cm_ep_query(fd, j.ep_id, &q));
	REQUIRE(q.state == COOPMPI_EP_ALIVE && q.pid == (uint32_t)getpid() &&
		q.generation == j.generation,
		"endpoint changed by failed JOIN: state %u pid %u gen %u",
		q.state, q.pid, q.generation);
	close(fd);
}
END_TEST

START_TEST(test_bad_size)
{
	struct ctx x;
	int unjoined = -1;

	ctx_init(&x);
	for (int which = 0; which < I_COUNT; which++) {
		size_t sz = ioc_size(which);
		uint32_t bad[] = { 0, 4, 8, (uint32_t)sz - 8, (uint32_t)sz - 1,
				   (uint32_t)sz + 1, (uint32_t)sz + 8,
				   (uint32_t)sz * 2, 0xffffffffu };

		for (unsigned k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
			union cm_args u;
			int fd = build_valid(&x, which, &u, &unjoined);
			int r;

			u.info.size = bad[k];	/* size is the first field */
			r = cm_ioctl(fd, ioc_cmd[which], &u);
			REQUIRE(r == -EINVAL,
				"%s with size field %u (_IOC_SIZE %zu) returned %s, want EINVAL",
				ioc_name[which], bad[k], sz, cm_errname(-r));
		}
		/* the same call with the right size works */
		expect_valid_ok(&x, which, &unjoined);
	}
}
END_TEST

struct field { int which; size_t off; size_t len; const char *name; };

#define F(w, type, member) \
	{ w, offsetof(type, member), sizeof(((type *)0)->member), #type "." #member }

static const struct field reserved_fields[] = {
	F(I_INFO, struct coopmpi_info, reserved0),
	F(I_INFO, struct coopmpi_info, reserved[0]),
	F(I_INFO, struct coopmpi_info, reserved[2]),
	F(I_JOIN, struct coopmpi_join, reserved[0]),
	F(I_JOIN, struct coopmpi_join, reserved[1]),
	F(I_JOIN, struct coopmpi_join, reserved[2]),
	F(I_JOIN, struct coopmpi_join, reserved[3]),
	F(I_EPQ, struct coopmpi_ep_query, reserved[0]),
	F(I_EPQ, struct coopmpi_ep_query, reserved[1]),
	F(I_SEND, struct coopmpi_mbox_xfer, reserved0),
	F(I_SEND, struct coopmpi_mbox_xfer, reserved[0]),
	F(I_SEND, struct coopmpi_mbox_xfer, reserved[1]),
	F(I_RECV, struct coopmpi_mbox_xfer, reserved0),
	F(I_RECV, struct coopmpi_mbox_xfer, reserved[0]),
	F(I_RECV, struct coopmpi_mbox_xfer, reserved[1]),
	F(I_DOORBELL, struct coopmpi_doorbell, reserved0),
	F(I_DOORBELL, struct coopmpi_doorbell, reserved[0]),
	F(I_REG, struct coopmpi_region_register, reserved[0]),
	F(I_REG, struct coopmpi_region_register, reserved[1]),
	F(I_DEREG, struct coopmpi_region_deregister, reserved[0]),
	F(I_COPY, struct coopmpi_copy, reserved0),
	F(I_COPY, struct coopmpi_copy, reserved[0]),
	F(I_COPY, struct coopmpi_copy, reserved[1]),
	F(I_WATTACH, struct coopmpi_window_attach, reserved0),
	F(I_WATTACH, struct coopmpi_window_attach, reserved[0]),
	F(I_WATTACH, struct coopmpi_window_attach, reserved[1]),
	F(I_WDETACH, struct coopmpi_window_detach, reserved0),
	F(I_WDETACH, struct coopmpi_window_detach, reserved[0]),
};

static void set_field(union cm_args *u, size_t off, size_t len, uint64_t v)
{
	if (len == 4) {
		uint32_t v32 = (uint32_t)v;

		memcpy(u->raw + off, &v32, 4);
	} else {
		memcpy(u->raw + off, &v, 8);
	}
}

START_TEST(test_reserved_nonzero)
{
	struct ctx x;
	int unjoined = -1;
	uint64_t vals[] = { 1, 0x80000000ULL, 0x8000000000000000ULL };

	ctx_init(&x);
	for (size_t i = 0; i < sizeof(reserved_fields) / sizeof(reserved_fields[0]); i++) {
		const struct field *f = &reserved_fields[i];

		for (unsigned k = 0; k < 3; k++) {
			union cm_args u;
			int fd = build_valid(&x, f->which, &u, &unjoined);
			int r;

			if (f->len == 4 && k == 2)
				continue;
			set_field(&u, f->off, f->len, vals[k]);
			r = cm_ioctl(fd, ioc_cmd[f->which], &u);
			REQUIRE(r == -EINVAL, "%s = %#llx returned %s, want EINVAL",
				f->name, (unsigned long long)vals[k],
				cm_errname(-r));
		}
		expect_valid_ok(&x, f->which, &unjoined);
	}
	/* MBOX_RECV: "peer must be 0" */
	{
		union cm_args u;
		int fd = build_valid(&x, I_RECV, &u, &unjoined);

		u.xfer.peer = x.ja.ep_id == 0 ? x.jb.ep_id : x.ja.ep_id;
		if (u.xfer.peer == 0)
			u.xfer.peer = 1;
		REQUIRE_ERR(cm_ioctl(fd, COOPMPI_IOC_MBOX_RECV, &u), EINVAL);
	}
}
END_TEST

static const struct { int which; uint32_t flags; } bad_flags[] = {
	{ I_INFO, 1 }, { I_INFO, 0x80000000u },
	{ I_JOIN, 1u << 2 }, { I_JOIN, 0x80000000u },
	{ I_JOIN, COOPMPI_JOIN_FLAGS | (1u << 5) },
	{ I_EPQ, 1 }, { I_EPQ, 0x80000000u },
	{ I_SEND, 1u << 1 }, { I_SEND, 0x80000000u },
	{ I_RECV, 1u << 1 }, { I_RECV, COOPMPI_MBOX_WAIT | (1u << 7) },
	{ I_RECV, 0x80000000u },
	{ I_DOORBELL, 1 }, { I_DOORBELL, 0x80000000u },
	{ I_REG, 1u << 3 }, { I_REG, COOPMPI_REGION_FLAGS | 0x80000000u },
	{ I_DEREG, 1 }, { I_DEREG, 0x80000000u },
	{ I_COPY, 0 },					/* no direction */
	{ I_COPY, COOPMPI_COPY_FLAGS },			/* both directions */
	{ I_COPY, 1u << 2 },
	{ I_COPY, COOPMPI_COPY_FROM_REGION | 0x80000000u },
	{ I_WATTACH, 1u << 1 }, { I_WATTACH, 0x80000000u },
	{ I_WDETACH, 1 }, { I_WDETACH, 0x80000000u },
};

START_TEST(test_unknown_flags)
{
	struct ctx x;
	int unjoined = -1;

	ctx_init(&x);
	for (size_t i = 0; i < sizeof(bad_flags) / sizeof(bad_flags[0]); i++) {
		union cm_args u;
		int which = bad_flags[i].which;
		int fd = build_valid(&x, which, &u, &unjoined);
		int r;

		u.info.flags = bad_flags[i].flags;	/* flags is 2nd field */
		r = cm_ioctl(fd, ioc_cmd[which], &u);
		REQUIRE(r == -EINVAL, "%s with flags %#x returned %s, want EINVAL",
			ioc_name[which], bad_flags[i].flags, cm_errname(-r));
		expect_valid_ok(&x, which, &unjoined);
	}
}
END_TEST

START_TEST(test_unknown_ioctl)
{
	struct ctx x;
	int u = cm_open();
	uint8_t buf[512];
	const unsigned nrs[] = { 0x03, 0x0f, 0x13, 0x1f, 0x25, 0x2f, 0x40,
				 0x7f, 0x80, 0xff };
	const unsigned long other[] = {
		_IOWR(0xC6, 0x00, struct coopmpi_info),
		_IOWR(0xC8, 0x01, struct coopmpi_join),
		_IOWR('T', 0x99, struct coopmpi_info),
		_IO(0x00, 0x00),
	};

	ctx_init(&x);
	memset(buf, 0, sizeof(buf));
	for (int pass = 0; pass < 2; pass++) {
		int fd = pass ? x.a : u;

		for (unsigned i = 0; i < sizeof(nrs) / sizeof(nrs[0]); i++) {
			unsigned long cmds[] = {
				_IOWR(COOPMPI_IOC_MAGIC, nrs[i], struct coopmpi_info),
				_IOW(COOPMPI_IOC_MAGIC, nrs[i], struct coopmpi_copy),
				_IO(COOPMPI_IOC_MAGIC, nrs[i]),
			};

			for (unsigned k = 0; k < 3; k++) {
				int r;

				memset(buf, 0, sizeof(buf));
				*(uint32_t *)buf = _IOC_SIZE(cmds[k]);
				r = cm_ioctl(fd, cmds[k], buf);
				REQUIRE(r == -ENOTTY,
					"ioctl nr %#x (cmd %#lx, %s fd) returned %s, want ENOTTY",
					nrs[i], cmds[k], pass ? "joined" : "unjoined",
					cm_errname(-r));
			}
		}
		for (unsigned i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
			int r;

			memset(buf, 0, sizeof(buf));
			*(uint32_t *)buf = _IOC_SIZE(other[i]);
			r = cm_ioctl(fd, other[i], buf);
			REQUIRE(r == -ENOTTY, "foreign ioctl %#lx returned %s, want ENOTTY",
				other[i], cm_errname(-r));
		}
	}
	close(u);
}
END_TEST

/*
 * uapi versioning: a caller compiled against a newer header passes a
 * longer struct (and a correspondingly larger _IOC_SIZE); accepted when the
 * unknown tail is zero, -E2BIG otherwise.
 */
START_TEST(test_longer_struct)
{
	struct ctx x;
	uint8_t buf[512];
	const size_t extra = 16;
	unsigned long info_cmd = _IOC(_IOC_READ | _IOC_WRITE, COOPMPI_IOC_MAGIC,
				      _IOC_NR(COOPMPI_IOC_INFO),
				      sizeof(struct coopmpi_info) + extra);
	unsigned long join_cmd = _IOC(_IOC_READ | _IOC_WRITE, COOPMPI_IOC_MAGIC,
				      _IOC_NR(COOPMPI_IOC_JOIN),
				      sizeof(struct coopmpi_join) + extra);
	struct coopmpi_info *info = (void *)buf;
	struct coopmpi_join *j = (void *)buf;
	int u = cm_open();

	ctx_init(&x);
	/* INFO, zero tail: accepted */
	memset(buf, 0, sizeof(buf));
	info->size = sizeof(*info) + extra;
	REQUIRE_OK(cm_ioctl(x.a, info_cmd, buf));
	REQUIRE(info->abi_version == COOPMPI_ABI_VERSION &&
		info->ring_slots == cm_info_cache.ring_slots,
		"longer INFO returned abi %u slots %u", info->abi_version,
		info->ring_slots);
	/* INFO, non-zero tail */
	memset(buf, 0, sizeof(buf));
	info->size = sizeof(*info) + extra;
	buf[sizeof(*info) + extra - 1] = 1;
	REQUIRE_ERR(cm_ioctl(x.a, info_cmd, buf), E2BIG);

	/* JOIN, non-zero tail: refused and the fd stays unjoined */
	memset(buf, 0, sizeof(buf));
	j->size = sizeof(*j) + extra;
	j->key = x.key;
	buf[sizeof(*j)] = 0x80;
	REQUIRE_ERR(cm_ioctl(u, join_cmd, buf), E2BIG);
	REQUIRE_ERR(cm_ep_query(u, 0, NULL), ENOTCONN);
	/* JOIN, zero tail: joins */
	memset(buf, 0, sizeof(buf));
	j->size = sizeof(*j) + extra;
	j->key = x.key;
	j->flags = COOPMPI_JOIN_EXISTING;
	REQUIRE_OK(cm_ioctl(u, join_cmd, buf));
	REQUIRE(j->ep_id < cm_info_cache.max_endpoints &&
		j->ep_id != x.ja.ep_id && j->ep_id != x.jb.ep_id &&
		j->domain_id == x.ja.domain_id,
		"longer JOIN: ep %u domain %u", j->ep_id, j->domain_id);
	close(u);
}
END_TEST

START_TEST(test_bad_arg_pointer)
{
	struct ctx x;
	void *bad[] = { NULL, (void *)8, (void *)0xffffffff81000000ULL,
			(void *)0xffff888000000000ULL };
	uint8_t *guard;

	ctx_init(&x);
	/* a struct that straddles into a PROT_NONE page */
	guard = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(guard != MAP_FAILED, "mmap");
	REQUIRE(mprotect(guard + 4096, 4096, PROT_NONE) == 0, "mprotect");
	for (int which = 0; which < I_COUNT; which++) {
		int fd = which == I_JOIN ? cm_open() : x.a;

		for (unsigned k = 0; k < 4; k++) {
			int r = cm_ioctl(fd, ioc_cmd[which], bad[k]);

			REQUIRE(r == -EFAULT, "%s with arg %p returned %s, want EFAULT",
				ioc_name[which], bad[k], cm_errname(-r));
		}
		{
			uint8_t *p = guard + 4096 - 8;
			int r;

			memset(p, 0, 8);
			*(uint32_t *)p = (uint32_t)ioc_size(which);
			r = cm_ioctl(fd, ioc_cmd[which], p);
			REQUIRE(r == -EFAULT,
				"%s with arg crossing into a PROT_NONE page returned %s, want EFAULT",
				ioc_name[which], cm_errname(-r));
		}
		if (which == I_JOIN)
			close(fd);
	}
}
END_TEST

START_TEST(test_ep_query)
{
	struct ctx x;
	struct coopmpi_ep_query q;
	uint32_t free_ep = UINT32_MAX;
	int r;

	ctx_init(&x);
	REQUIRE_OK(cm_ep_query(x.a, x.ja.ep_id, &q));
	REQUIRE(q.state == COOPMPI_EP_ALIVE && q.pid == (uint32_t)getpid() &&
		q.generation == x.ja.generation && q.ep_id == x.ja.ep_id,
		"own ep: state %u pid %u (want %d) gen %u (want %u)", q.state,
		q.pid, (int)getpid(), q.generation, x.ja.generation);
	REQUIRE_OK(cm_ep_query(x.a, x.jb.ep_id, &q));
	REQUIRE(q.state == COOPMPI_EP_ALIVE && q.generation == x.jb.generation &&
		q.pid == (uint32_t)getpid(), "peer ep: state %u gen %u pid %u",
		q.state, q.generation, q.pid);
	REQUIRE(x.ja.domain_id == x.jb.domain_id, "domain ids differ: %u %u",
		x.ja.domain_id, x.jb.domain_id);
	REQUIRE(x.ja.ep_id != x.jb.ep_id, "two endpoints share ep_id %u",
		x.ja.ep_id);
	for (uint32_t e = 0; e < cm_info_cache.max_endpoints; e++)
		if (e != x.ja.ep_id && e != x.jb.ep_id) {
			free_ep = e;
			break;
		}
	if (free_ep != UINT32_MAX) {
		REQUIRE_OK(cm_ep_query(x.a, free_ep, &q));
		REQUIRE(q.state == COOPMPI_EP_FREE, "unused ep %u state %u",
			free_ep, q.state);
	}
	r = cm_ep_query(x.a, cm_info_cache.max_endpoints, &q);
	REQUIRE(r == -EINVAL || r == -ENXIO || (r == 0 && q.state == COOPMPI_EP_FREE),
		"EP_QUERY(max_endpoints) returned %s state %u", cm_errname(-r),
		q.state);
	r = cm_ep_query(x.a, 0xffffffffu, &q);
	REQUIRE(r == -EINVAL || r == -ENXIO || (r == 0 && q.state == COOPMPI_EP_FREE),
		"EP_QUERY(~0) returned %s state %u", cm_errname(-r), q.state);
	/* a closed endpoint becomes FREE */
	close(x.b);
	REQUIRE_OK(cm_ep_query(x.a, x.jb.ep_id, &q));
	REQUIRE(q.state == COOPMPI_EP_FREE, "closed ep %u still state %u",
		x.jb.ep_id, q.state);
}
END_TEST

START_TEST(test_domain_full)
{
	uint32_t max = cm_info_cache.max_endpoints;
	uint64_t key = cm_unique_key();
	struct coopmpi_join j;
	struct rlimit rl;
	int *fds = calloc(max + 1, sizeof(int));
	uint32_t *gen = calloc(max, sizeof(uint32_t));
	uint8_t *seen = calloc(max, 1);
	uint32_t *epof = calloc(max, sizeof(uint32_t));
	int extra, victim;

	REQUIRE(fds && gen && seen && epof, "calloc");
	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < (rlim_t)max + 64) {
		rl.rlim_cur = (rlim_t)max + 64;
		if (rl.rlim_max < rl.rlim_cur)
			rl.rlim_max = rl.rlim_cur;
		REQUIRE(setrlimit(RLIMIT_NOFILE, &rl) == 0,
			"need %u fds: setrlimit: %s", max + 64, strerror(errno));
	}
	for (uint32_t i = 0; i < max; i++) {
		fds[i] = cm_open_join(key, i ? COOPMPI_JOIN_EXISTING : 0, &j);
		REQUIRE(!seen[j.ep_id], "ep_id %u handed out twice", j.ep_id);
		seen[j.ep_id] = 1;
		gen[j.ep_id] = j.generation;
		epof[i] = j.ep_id;
	}
	extra = cm_open();
	REQUIRE_ERR(cm_join(extra, key, 0, &j), ENOSPC);
	REQUIRE_ERR(cm_join(extra, key, COOPMPI_JOIN_EXISTING, &j), ENOSPC);
	/* free one slot: the next JOIN must get that id, with a new generation */
	victim = (int)(max / 2);
	{
		struct coopmpi_ep_query q;
		uint32_t vep = epof[victim];
		int other = fds[victim == 0 ? 1 : 0];

		close(fds[victim]);
		for (uint32_t e = 0; e < max; e++) {
			REQUIRE_OK(cm_ep_query(other, e, &q));
			REQUIRE(q.state == (e == vep ? COOPMPI_EP_FREE : COOPMPI_EP_ALIVE),
				"after closing ep %u: ep %u has state %u", vep, e,
				q.state);
		}
		REQUIRE_OK(cm_join(extra, key, COOPMPI_JOIN_EXISTING, &j));
		REQUIRE(j.ep_id == vep, "rejoin got ep %u, the only free one is %u",
			j.ep_id, vep);
		REQUIRE(j.generation != gen[vep],
			"reused ep_id %u kept generation %u", vep, j.generation);
		REQUIRE_OK(cm_ep_query(other, vep, &q));
		REQUIRE(q.state == COOPMPI_EP_ALIVE && q.generation == j.generation,
			"EP_QUERY of the reused id: state %u gen %u (want %u)",
			q.state, q.generation, j.generation);
	}
	for (uint32_t i = 0; i < max; i++)
		if ((int)i != victim)
			close(fds[i]);
	close(extra);
	free(fds);
	free(gen);
	free(seen);
	free(epof);
}
END_TEST

void add_basic_tests(Suite *s)
{
	TCase *tc = cm_tcase("basic", 60);

	tcase_add_test(tc, test_info_before_join);
	tcase_add_test(tc, test_not_joined_enotconn);
	tcase_add_test(tc, test_join_twice);
	tcase_add_test(tc, test_bad_size);
	tcase_add_test(tc, test_reserved_nonzero);
	tcase_add_test(tc, test_unknown_flags);
	tcase_add_test(tc, test_unknown_ioctl);
	tcase_add_test(tc, test_longer_struct);
	tcase_add_test(tc, test_bad_arg_pointer);
	tcase_add_test(tc, test_ep_query);
	tcase_add_test(tc, test_domain_full);
	suite_add_tcase(s, tc);
}
