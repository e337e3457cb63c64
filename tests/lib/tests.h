/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tests.h - the test cases of test_lib. */
#ifndef TESTS_H
#define TESTS_H

#include <check.h>

TCase *tc_api(void);
TCase *tc_p2p(void);
TCase *tc_proto(void);
TCase *tc_random(void);
TCase *tc_fault(void);

#endif
