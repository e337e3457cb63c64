/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * coop_info - print libcoopmpi's settings: every environment variable
 * with its documentation, default, accepted values and the value the
 * current environment gives it (as ucx_info -c).  Exit status 1 when the
 * environment holds a value coop_init() would refuse.
 * coop_info --reap: remove the /dev/shm files of node domains whose
 * processes all died (coop_cleanup_stale()); prints how many.
 */
#include <stdio.h>
#include <string.h>

#include "coopmpi.h"

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--reap")) {
		printf("coop_info: %d stale file(s) removed\n",
		       coop_cleanup_stale());
		return 0;
	}
	if (argc > 1) {
		fprintf(stderr, "usage: %s [--reap]\n  prints the settings "
			"of libcoopmpi and their values in this environment;\n"
			"  --reap: removes the /dev/shm files of domains whose "
			"processes all died\n", argv[0]);
		return strcmp(argv[1], "-h") && strcmp(argv[1], "--help") ?
			       2 : 0;
	}
	return coop_config_print(stdout) ? 1 : 0;
}
