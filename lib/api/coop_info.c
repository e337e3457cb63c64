/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * coop_info - print libcoopmpi's settings: every environment variable
 * with its documentation, default, accepted values and the value the
 * current environment gives it (as ucx_info -c).  Exit status 1 when the
 * environment holds a value coop_init() would refuse.
 */
#include <stdio.h>
#include <string.h>

#include "coopmpi.h"

int main(int argc, char **argv)
{
	if (argc > 1) {
		fprintf(stderr, "usage: %s\n  prints the settings of "
			"libcoopmpi and their values in this environment\n",
			argv[0]);
		return strcmp(argv[1], "-h") && strcmp(argv[1], "--help") ?
			       2 : 0;
	}
	return coop_config_print(stdout) ? 1 : 0;
}
