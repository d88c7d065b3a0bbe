/* SPDX-License-Identifier: BSD-3-Clause */
/* The plain tests of gga_packed_ut (gga_packed_rules.c), one per rule. */
#ifndef GGA_PACKED_UT_H
#define GGA_PACKED_UT_H

void test_alloc_out_of_place(void);
void test_reserve_list_needs_commit(void);
void test_protected_reserve(void);
void test_pending_until_commit(void);
void test_generations_order_completions(void);
void test_gc_cas(void);
void test_gc_pick(void);
void test_ckpt_scans_busy(void);
void test_recover(void);
void test_recover_trim_keeps_mapped_segment(void);

#endif /* GGA_PACKED_UT_H */
