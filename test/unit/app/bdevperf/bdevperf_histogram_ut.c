/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bdevperf's latency histogram: bucket geometry (every value lands in a
 * bucket that contains it, buckets are at most 1/64 of their value wide,
 * small values are exact) and percentiles (rank rounding, merge).
 */
#include <stdlib.h>

#include "gga_ut.h"

#include "app/bdevperf/bdevperf_histogram.c"

static struct bdevperf_histogram *
hist_new(void)
{
	struct bdevperf_histogram *h = malloc(sizeof(*h));

	CU_ASSERT_FATAL(h != NULL);
	bdevperf_histogram_init(h);
	return h;
}

/* Check that v falls into its bucket and that the bucket is narrow enough. */
static int
check_value(uint64_t v)
{
	uint32_t idx = bdevperf_histogram_index(v);
	uint64_t lo = bdevperf_histogram_bucket_low(idx);
	uint64_t hi = bdevperf_histogram_bucket_high(idx);

	if (idx >= HIST_NUM_BUCKETS || v < lo || v > hi) {
		fprintf(stderr, "value %llu: bucket %u [%llu, %llu]\n", (unsigned long long)v, idx,
			(unsigned long long)lo, (unsigned long long)hi);
		return 1;
	}
	if (v < 2 * HIST_SUB_COUNT && lo != hi) {
		fprintf(stderr, "value %llu: small values must be exact\n", (unsigned long long)v);
		return 1;
	}
	if (v >= 2 * HIST_SUB_COUNT && hi - lo + 1 > lo / HIST_SUB_COUNT) {
		fprintf(stderr, "value %llu: bucket [%llu, %llu] is too wide\n",
			(unsigned long long)v, (unsigned long long)lo, (unsigned long long)hi);
		return 1;
	}
	return 0;
}

static void
test_bucket_geometry(void)
{
	uint64_t v, state = 12345;
	uint32_t bad = 0, i, k;

	for (v = 0; v < (1u << 18); v++) {
		bad += check_value(v);
	}
	for (k = 18; k < 64; k++) {
		bad += check_value(1ull << k);
		bad += check_value((1ull << k) - 1);
		bad += check_value((1ull << k) + 1);
	}
	for (i = 0; i < 100000; i++) {
		bad += check_value(bdevperf_rand(&state) >> (i % 64));
	}
	bad += check_value(UINT64_MAX);
	UT_ASSERT_EQ(bad, 0);
	UT_ASSERT_EQ(bdevperf_histogram_index(UINT64_MAX), HIST_NUM_BUCKETS - 1);
	CU_ASSERT(bdevperf_histogram_bucket_high(HIST_NUM_BUCKETS - 1) == UINT64_MAX);
}

static void
test_buckets_contiguous(void)
{
	uint32_t i, bad = 0;

	/* Buckets tile the number line: each starts right after the previous one ends. */
	UT_ASSERT_EQ(bdevperf_histogram_bucket_low(0), 0);
	for (i = 1; i < HIST_NUM_BUCKETS; i++) {
		if (bdevperf_histogram_bucket_low(i) != bdevperf_histogram_bucket_high(i - 1) + 1) {
			bad++;
		}
		if (bdevperf_histogram_index(bdevperf_histogram_bucket_low(i)) != i) {
			bad++;
		}
	}
	UT_ASSERT_EQ(bad, 0);
}

static void
test_percentile_exact_small(void)
{
	struct bdevperf_histogram *h = hist_new();
	uint64_t v;
	int rep;

	UT_ASSERT_EQ(bdevperf_histogram_percentile(h, 50.0), 0);
	/* 0..99, ten of each: 1000 samples, all in exact buckets. */
	for (v = 0; v < 100; v++) {
		for (rep = 0; rep < 10; rep++) {
			bdevperf_histogram_record(h, v);
		}
	}
	UT_ASSERT_EQ(h->count, 1000);
	UT_ASSERT_EQ(bdevperf_histogram_percentile(h, 50.0), 49);
	UT_ASSERT_EQ(bdevperf_histogram_percentile(h, 99.0), 98);
	/* Rank 999 of 1000 is the last sample of 99, even though 99.9 % is not exact in binary. */
	UT_ASSERT_EQ(bdevperf_histogram_percentile(h, 99.9), 99);
	UT_ASSERT_EQ(bdevperf_histogram_percentile(h, 100.0), 99);
	UT_ASSERT_EQ(bdevperf_histogram_percentile(h, 0.01), 0);
	UT_ASSERT_EQ(bdevperf_histogram_percentile(h, 0.1), 0);
	UT_ASSERT_EQ(bdevperf_histogram_percentile(h, 1.1), 1);
	free(h);
}

static void
check_near(uint64_t got, uint64_t want)
{
	/* The upper end of want's bucket: never below, at most 1/64 above. */
	if (got < want || got > want + want / HIST_SUB_COUNT) {
		fprintf(stderr, "percentile %llu, expected %llu (+1/64)\n", (unsigned long long)got,
			(unsigned long long)want);
	}
	CU_ASSERT(got >= want && got <= want + want / HIST_SUB_COUNT);
}

static void
test_percentile_large(void)
{
	struct bdevperf_histogram *h = hist_new();
	uint64_t v;

	/* 1000, 2000, ..., 10,000,000 ticks. */
	for (v = 1; v <= 10000; v++) {
		bdevperf_histogram_record(h, v * 1000);
	}
	check_near(bdevperf_histogram_percentile(h, 50.0), 5000 * 1000);
	check_near(bdevperf_histogram_percentile(h, 99.0), 9900 * 1000);
	check_near(bdevperf_histogram_percentile(h, 99.9), 9990 * 1000);
	check_near(bdevperf_histogram_percentile(h, 100.0), 10000 * 1000);
	free(h);
}

static void
test_merge(void)
{
	struct bdevperf_histogram *a = hist_new(), *b = hist_new(), *all = hist_new();
	uint64_t state = 7, v;
	double pcts[] = { 1, 50, 90, 99, 99.9, 100 };
	uint32_t i;

	for (i = 0; i < 20000; i++) {
		v = bdevperf_rand_below(&state, 1000000);
		bdevperf_histogram_record(i % 3 == 0 ? a : b, v);
		bdevperf_histogram_record(all, v);
	}
	bdevperf_histogram_merge(a, b);
	UT_ASSERT_EQ(a->count, 20000);
	for (i = 0; i < ARRAY_SIZE(pcts); i++) {
		UT_ASSERT_EQ(bdevperf_histogram_percentile(a, pcts[i]),
			     bdevperf_histogram_percentile(all, pcts[i]));
	}
	CU_ASSERT(memcmp(a->buckets, all->buckets, sizeof(a->buckets)) == 0);
	free(a);
	free(b);
	free(all);
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_bucket_geometry),
		UT_TEST(test_buckets_contiguous),
		UT_TEST(test_percentile_exact_small),
		UT_TEST(test_percentile_large),
		UT_TEST(test_merge),
	};

	return ut_run("bdevperf_histogram", tests, ARRAY_SIZE(tests), NULL, NULL);
}
