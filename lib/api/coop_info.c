/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * coop_info - what libcoopmpi and the driver are here, as ucx_info and
 * ompi_info tell theirs.
 *   coop_info            every setting: documentation, default, accepted
 *                        values, the value in effect (exit 1: a value
 *                        coop_init() or coop_init_from_env() would
 *                        refuse)
 *   coop_info -c         every setting on a line: value, default, source
 *   coop_info --status   module, device, provider this process would get
 *                        and why (exit 1: not the driver, unless
 *                        COOP_PROVIDER=shm asks for shm)
 *   coop_info --version  library and module versions and ABIs
 *   coop_info --reap     remove the /dev/shm files of node domains whose
 *                        processes all died (coop_cleanup_stale())
 */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "coopmpi.h"
#include "kmod_probe.h"
#include "api_int.h"

static int usage(FILE *out, const char *prog, int rc)
{
	fprintf(out, "usage: %s [-c | --status | --version | --reap]\n"
		"  (none)     every setting of libcoopmpi, documented, with "
		"its value here\n"
		"  -c         every setting: value, default, source\n"
		"  --status   module, device and the provider this process "
		"would get, and why\n"
		"  --version  library and module versions\n"
		"  --reap     remove the /dev/shm files of domains whose "
		"processes all died\n", prog);
	return rc;
}

static int print_version(void)
{
	struct coop_kmod_status st;

	coop_kmod_probe(&st);
	printf("libcoopmpi %s (ABI %u)\n", COOPMPI_VERSION,
	       COOPMPI_ABI_VERSION);
	if (st.module_version[0])
		printf("coopmpi.ko %s (ABI %u)\n", st.module_version,
		       st.module_abi);
	else
		printf("coopmpi.ko not loaded\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *arg = argc == 2 ? argv[1] : "";

	if (argc == 1)
		return coop_config_print(stdout) ? 1 : 0;
	if (!strcmp(arg, "-c"))
		return coop_config_print_brief(stdout) ? 1 : 0;
	if (!strcmp(arg, "--status"))
		return coop_status_print(stdout);
	if (!strcmp(arg, "--version") || !strcmp(arg, "-v"))
		return print_version();
	if (!strcmp(arg, "--reap")) {
		printf("coop_info: %d stale file(s) removed\n",
		       coop_cleanup_stale());
		return 0;
	}
	if (!strcmp(arg, "-h") || !strcmp(arg, "--help"))
		return usage(stdout, argv[0], 0);
	return usage(stderr, argv[0], 2);
}
