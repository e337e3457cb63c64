/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test_main.c - test_lib: the libcoopmpi test suite (Check).
 *   make -C tests/lib check        all tests
 *   CK_RUN_CASE=random tests/lib/test_lib    one test case
 *   COOP_TEST_SEED=n                the randomized test's base seed
 */
#include <check.h>
#include <stdlib.h>

#include "harness.h"
#include "tests.h"

int main(void)
{
	Suite *s = suite_create("libcoopmpi");
	SRunner *sr;
	char mult[16];
	int failed;

	/* Check reads this when a test case sets its timeout: stretch those
	 * like run_ranks' limits, unless the caller chose a multiplier. */
	snprintf(mult, sizeof(mult), "%d", t_time_scale());
	setenv("CK_TIMEOUT_MULTIPLIER", mult, 0);

	suite_add_tcase(s, tc_api());
	suite_add_tcase(s, tc_p2p());
	suite_add_tcase(s, tc_proto());
	suite_add_tcase(s, tc_random());
	suite_add_tcase(s, tc_fault());
	suite_add_tcase(s, tc_hostile());
	suite_add_tcase(s, tc_dma());
	suite_add_tcase(s, tc_hca());
	suite_add_tcase(s, tc_staged());
	suite_add_tcase(s, tc_model());
	suite_add_tcase(s, tc_profile());
	suite_add_tcase(s, tc_sleep());
	suite_add_tcase(s, tc_select());
	suite_add_tcase(s, tc_xfer());
	suite_add_tcase(s, tc_msg());
	suite_add_tcase(s, tc_threads());
	suite_add_tcase(s, tc_neighbor());
	suite_add_tcase(s, tc_fbox());
	suite_add_tcase(s, tc_window());
	suite_add_tcase(s, tc_heap());
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
