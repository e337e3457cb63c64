// SPDX-License-Identifier: GPL-2.0
/*
 * test_sysfs.c - /sys/kernel/coopmpi: node-wide counters move with the
 * traffic, domains/<domain_id>/ lists live endpoints with their pids, is
 * readable by the domain's owner (and root) only, and disappears with the
 * domain.
 */
#include "helpers.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned count_domain_dirs(void)
{
	DIR *d = opendir(CM_SYSFS_DIR "/domains");
	struct dirent *e;
	unsigned n = 0;

	REQUIRE(d, "opendir " CM_SYSFS_DIR "/domains: %s", strerror(errno));
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* node-wide domain count: nr_domains (or domains, if it is a file) */
static bool domains_file(char *name, size_t n)
{
	char path[256];

	snprintf(name, n, "nr_domains");
	snprintf(path, sizeof(path), CM_SYSFS_DIR "/nr_domains");
	if (cm_path_exists(path))
		return true;
	return false;
}

/* does `load` have a line "<ep> ... <pid> ..." ? */
static bool load_lists(const char *text, uint32_t ep, pid_t pid)
{
	const char *line = text;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		char buf[512];
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char *save = NULL, *tok;

		if (len >= sizeof(buf))
			len = sizeof(buf) - 1;
		memcpy(buf, line, len);
		buf[len] = 0;
		line = nl ? nl + 1 : NULL;
		if (buf[0] == '#')
			continue;
		tok = strtok_r(buf, " \t:=", &save);
		if (!tok || strtoul(tok, NULL, 10) != ep)
			continue;
		while ((tok = strtok_r(NULL, " \t:=", &save)))
			if (strtol(tok, NULL, 10) == pid)
				return true;
	}
	return false;
}

static void read_load(uint32_t domain_id, char *buf, size_t n)
{
	char path[256];
	int r;

	snprintf(path, sizeof(path), CM_SYSFS_DIR "/domains/%u/load", domain_id);
	r = cm_read_file(path, buf, n);
	REQUIRE(r >= 0, "read %s: %s", path, strerror(-r));
}

START_TEST(test_sysfs_counters)
{
	uint64_t key = cm_unique_key(), copied, cookie;
	uint64_t sent0, copies0, bytes0, eps0, ndom_file0 = 0;
	unsigned dirs0;
	struct coopmpi_join jp;
	struct cm_msg m;
	char dname[64], path[256], load[16384], offload[4096];
	bool have_ndom;
	uint8_t *buf = cm_map_anon(1 << 20);
	uint32_t done, child_ep;
	int fd, sv[2], r;
	pid_t pid;

	REQUIRE(cm_path_exists(CM_SYSFS_DIR), CM_SYSFS_DIR " missing");
	sent0 = cm_sysfs_u64("mbox_sent");
	copies0 = cm_sysfs_u64("copies");
	bytes0 = cm_sysfs_u64("copy_bytes");
	eps0 = cm_sysfs_u64("endpoints");
	dirs0 = count_domain_dirs();
	have_ndom = domains_file(dname, sizeof(dname));
	if (have_ndom)
		ndom_file0 = cm_sysfs_u64(dname);

	fd = cm_open_join(key, COOPMPI_JOIN_CREATE, &jp);
	cm_socketpair(sv);
	pid = cm_fork();
	if (pid == 0) {
		struct coopmpi_join jc;
		uint64_t c;
		int cfd;

		close(sv[0]);
		cfd = cm_open_join(key, COOPMPI_JOIN_EXISTING, &jc);
		cm_fill_pattern(buf, 1 << 20, 1);
		REQUIRE_OK(cm_reg(cfd, buf, 1 << 20, COOPMPI_REGION_READ, &c));
		cm_put_u64(sv[1], jc.ep_id);
		cm_put_u64(sv[1], c);
		(void)cm_get_u64(sv[1]);
		_exit(0);
	}
	close(sv[1]);
	child_ep = (uint32_t)cm_get_u64_from(sv[0], pid, "child");
	cookie = cm_get_u64_from(sv[0], pid, "child");

	/* endpoints and domain directory */
	REQUIRE(cm_sysfs_u64("endpoints") >= eps0 + 2, "endpoints %llu, baseline %llu",
		(unsigned long long)cm_sysfs_u64("endpoints"),
		(unsigned long long)eps0);
	REQUIRE(count_domain_dirs() >= dirs0 + 1, "no new domain directory");
	if (have_ndom)
		REQUIRE(cm_sysfs_u64(dname) >= ndom_file0 + 1, "%s did not grow",
			dname);
	snprintf(path, sizeof(path), CM_SYSFS_DIR "/domains/%u", jp.domain_id);
	REQUIRE(cm_path_exists(path), "%s missing", path);
	read_load(jp.domain_id, load, sizeof(load));
	REQUIRE(load_lists(load, jp.ep_id, getpid()),
		"load does not list ep %u pid %d:\n%s", jp.ep_id, (int)getpid(),
		load);
	REQUIRE(load_lists(load, child_ep, pid),
		"load does not list ep %u pid %d:\n%s", child_ep, (int)pid, load);
	snprintf(path, sizeof(path), CM_SYSFS_DIR "/domains/%u/offload",
		 jp.domain_id);
	r = cm_read_file(path, offload, sizeof(offload));
	REQUIRE(r >= 0, "read %s: %s", path, strerror(-r));

	/* traffic: 100 messages one by one, 5 copies of 10000 bytes */
	for (int i = 0; i < 100; i++) {
		cm_msg_make(&m, 0, (uint64_t)i);
		REQUIRE_OK(cm_send(fd, child_ep, &m, 1, &done));
	}
	for (int i = 0; i < 5; i++) {
		REQUIRE_OK(cm_copy(fd, cookie, (uint64_t)i * 10000, buf, 10000,
				   COOPMPI_COPY_FROM_REGION, &copied));
		REQUIRE(copied == 10000, "copied %llu", (unsigned long long)copied);
	}
	REQUIRE(cm_sysfs_u64("mbox_sent") >= sent0 + 100,
		"mbox_sent %llu, baseline %llu, sent 100",
		(unsigned long long)cm_sysfs_u64("mbox_sent"),
		(unsigned long long)sent0);
	REQUIRE(cm_sysfs_u64("copies") >= copies0 + 5,
		"copies %llu, baseline %llu, did 5",
		(unsigned long long)cm_sysfs_u64("copies"),
		(unsigned long long)copies0);
	REQUIRE(cm_sysfs_u64("copy_bytes") >= bytes0 + 50000,
		"copy_bytes %llu, baseline %llu, copied 50000",
		(unsigned long long)cm_sysfs_u64("copy_bytes"),
		(unsigned long long)bytes0);

	/* the child leaves: its line goes */
	cm_put_u64(sv[0], 0);
	cm_wait_ok(pid, "child endpoint");
	close(sv[0]);
	{
		uint64_t deadline = cm_now_ms() + 3000;

		do {
			read_load(jp.domain_id, load, sizeof(load));
			if (!load_lists(load, child_ep, pid))
				break;
			cm_sleep_ms(20);
		} while (cm_now_ms() < deadline);
	}
	REQUIRE(!load_lists(load, child_ep, pid),
		"load still lists the closed ep %u pid %d:\n%s", child_ep,
		(int)pid, load);
	REQUIRE(load_lists(load, jp.ep_id, getpid()), "load lost the live ep:\n%s",
		load);

	/* last endpoint closes: directory and counts back to the baseline */
	close(fd);
	snprintf(path, sizeof(path), CM_SYSFS_DIR "/domains/%u", jp.domain_id);
	{
		uint64_t deadline = cm_now_ms() + 3000;

		while ((cm_path_exists(path) ||
			cm_sysfs_u64("endpoints") != eps0) &&
		       cm_now_ms() < deadline)
			cm_sleep_ms(20);
	}
	REQUIRE(!cm_path_exists(path), "%s still exists after the last close",
		path);
	/* <=: leftovers of an earlier test may still be exiting */
	REQUIRE(cm_sysfs_u64("endpoints") <= eps0, "endpoints %llu, baseline %llu",
		(unsigned long long)cm_sysfs_u64("endpoints"),
		(unsigned long long)eps0);
	REQUIRE(count_domain_dirs() <= dirs0, "domain dirs %u, baseline %u",
		count_domain_dirs(), dirs0);
	if (have_ndom)
		REQUIRE(cm_sysfs_u64(dname) <= ndom_file0, "%s %llu, baseline %llu",
			dname, (unsigned long long)cm_sysfs_u64(dname),
			(unsigned long long)ndom_file0);
	cm_unmap(buf, 1 << 20);
}
END_TEST

START_TEST(test_sysfs_files_readable)
{
	const char *names[] = { "mbox_sent", "copies", "copy_bytes",
				"endpoints" };
	char buf[256];

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		(void)cm_sysfs_u64(names[i]);
	REQUIRE(cm_path_exists(CM_SYSFS_DIR "/domains"),
		CM_SYSFS_DIR "/domains missing");
	/* sysfs is read-only */
	REQUIRE(cm_write_file(CM_SYSFS_DIR "/copies", "0\n") != 0,
		"writing " CM_SYSFS_DIR "/copies succeeded");
	REQUIRE(cm_read_file(CM_SYSFS_DIR "/endpoints", buf, sizeof(buf)) > 0,
		"endpoints unreadable");
}
END_TEST

/* Can the current user open the domain's file NAME? 0 or an errno */
static int domain_file_errno(uint32_t domain_id, const char *name)
{
	char path[256], buf[64];
	int r;

	snprintf(path, sizeof(path), CM_SYSFS_DIR "/domains/%u/%s", domain_id,
		 name);
	r = cm_read_file(path, buf, sizeof(buf));
	return r < 0 ? -r : 0;
}

/*
 * A domain's files (its pids and traffic) belong to the domain's owner:
 * another uid cannot read them, the owner can, the node-wide totals stay
 * world-readable.
 */
START_TEST(test_sysfs_domain_owner_only)
{
	static const char *const names[] = { "load", "uid", "endpoints",
					     "offload" };
	struct coopmpi_join j;
	int sv[2], fd;
	pid_t pid;

	cm_require_root();
	fd = cm_open_join(cm_unique_key(), COOPMPI_JOIN_CREATE, &j);
	cm_socketpair(sv);
	pid = cm_fork();
	if (pid == 0) {
		int pre = cm_open(), ufd;
		struct coopmpi_join jn;
		char path[256];
		struct stat st;
		unsigned int i;

		close(sv[0]);
		cm_drop_to_nobody();
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			REQUIRE(domain_file_errno(j.domain_id, names[i]) == EACCES,
				"uid %d read root's domains/%u/%s", CM_NOBODY,
				j.domain_id, names[i]);
		(void)cm_sysfs_u64("endpoints");
		(void)cm_sysfs_u64("copies");
		/* its own domain: its files, readable */
		ufd = pre;
		REQUIRE_OK(cm_join(ufd, cm_unique_key(), COOPMPI_JOIN_CREATE,
				   &jn));
		snprintf(path, sizeof(path), CM_SYSFS_DIR "/domains/%u/load",
			 jn.domain_id);
		REQUIRE(stat(path, &st) == 0 && st.st_uid == CM_NOBODY,
			"%s owned by uid %d", path, (int)st.st_uid);
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			REQUIRE(domain_file_errno(jn.domain_id, names[i]) == 0,
				"the owner cannot read domains/%u/%s: %s",
				jn.domain_id, names[i],
				strerror(domain_file_errno(jn.domain_id,
							   names[i])));
		cm_put_u64(sv[1], jn.domain_id);
		(void)cm_get_u64(sv[1]);
		close(ufd);
		_exit(0);
	}
	close(sv[1]);
	/* root reads both */
	{
		uint32_t other = cm_get_u64_from(sv[0], pid, "child");

		REQUIRE(domain_file_errno(other, "load") == 0,
			"root cannot read domains/%u/load", other);
		REQUIRE(domain_file_errno(j.domain_id, "load") == 0,
			"root cannot read domains/%u/load", j.domain_id);
	}
	cm_put_u64(sv[0], 0);
	cm_wait_ok(pid, "uid 65534 reader");
	close(sv[0]);
	close(fd);
}
END_TEST

void add_sysfs_tests(Suite *s)
{
	TCase *tc = cm_tcase("sysfs", 60);

	tcase_add_test(tc, test_sysfs_counters);
	tcase_add_test(tc, test_sysfs_files_readable);
	tcase_add_test(tc, test_sysfs_domain_owner_only);
	suite_add_tcase(s, tc);
}
