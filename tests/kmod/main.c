// SPDX-License-Identifier: GPL-2.0
/*
 * main.c - runner of the coopmpi.ko test suite.
 *
 * Runs every test in its own forked process (CK_FORK=yes is forced unless
 * the environment says otherwise).  Select parts with Check's own
 * variables: CK_RUN_CASE=mbox, CK_RUN_SUITE=coopmpi (the driver) or
 * CK_RUN_SUITE=coopmpi-dma (the DMA-engine channel), CK_RUN_SUITE=
 * coopmpi-load (the load test, COOP_TEST_LOAD_SECONDS), CK_VERBOSITY=normal,
 * CK_TIMEOUT_MULTIPLIER=2.  Exit status 0 only when every test passed.
 */
#include "helpers.h"
#include "dma_helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
	Suite *s = suite_create("coopmpi");
	Suite *dma = suite_create("coopmpi-dma");
	Suite *load = suite_create("coopmpi-load");
	SRunner *sr;
	int failed;
	enum print_output mode = CK_VERBOSE;

	setenv("CK_FORK", "yes", 0);
	if (getenv("CK_VERBOSITY"))
		mode = CK_ENV;
	setvbuf(stdout, NULL, _IOLBF, 0);

	add_basic_tests(s);
	add_domain_tests(s);
	add_mbox_tests(s);
	add_region_tests(s);
	add_copy_tests(s);
	add_kill_tests(s);
	add_fuzz_tests(s);
	add_sysfs_tests(s);
	add_counters_tests(s);
	add_limits_tests(s);
	add_user_tests(s);
	add_window_tests(s);

	add_dma_tests(dma);
	add_dma_uring_tests(dma);
	add_dma_fail_tests(dma);
	add_dma_stall_tests(dma);
	add_dma_user_tests(dma);
	add_pin_tests(dma);
	add_load_tests(load);

	sr = srunner_create(s);
	srunner_add_suite(sr, dma);
	srunner_add_suite(sr, load);
	srunner_run_all(sr, mode);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
