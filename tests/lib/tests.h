/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tests.h - the test cases of test_lib. */
#ifndef TESTS_H
#define TESTS_H

#include <check.h>

#include "coopmpi.h"

TCase *tc_api(void);
TCase *tc_p2p(void);
TCase *tc_proto(void);
TCase *tc_random(void);
TCase *tc_fault(void);
TCase *tc_hostile(void);
TCase *tc_dma(void);
TCase *tc_hca(void);
TCase *tc_staged(void);
TCase *tc_model(void);
TCase *tc_profile(void);
TCase *tc_sleep(void);
TCase *tc_select(void);
TCase *tc_xfer(void);
TCase *tc_msg(void);
TCase *tc_threads(void);
TCase *tc_neighbor(void);
TCase *tc_fbox(void);
TCase *tc_window(void);
TCase *tc_heap(void);

/* t_proto.c: two ranks, every size 0 B .. 64 MiB (arg NULL) or up to
 * *(const size_t *)arg, unaligned, receives posted before and after the
 * sends, data checked. */
int proto_sizes_rank(coop_context_t *ctx, int rank, int size, void *arg);
/* Bytes (and count) of its sizes in (above, max], per phase. */
size_t proto_sizes_sum(size_t above, size_t max, int *count);

#endif
