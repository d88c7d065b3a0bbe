/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Latency histogram. Recording (bdevperf_histogram_record, inline in the
 * header) is an index computation and an increment; everything here runs
 * once, when the results are printed.
 */
#include <math.h>
#include <string.h>

#include "bdevperf_internal.h"

void
bdevperf_histogram_init(struct bdevperf_histogram *h)
{
	memset(h, 0, sizeof(*h));
}

/* Power of two (k) and bucket width (1 << shift) of bucket idx >= 2 * HIST_SUB_COUNT. */
static void
bucket_geometry(uint32_t idx, uint64_t *low, uint64_t *width)
{
	uint32_t k, shift;

	if (idx < 2 * HIST_SUB_COUNT) {
		*low = idx;
		*width = 1;
		return;
	}
	k = (idx >> HIST_SUB_BITS) + HIST_SUB_BITS - 1;
	shift = k - HIST_SUB_BITS;
	*low = (uint64_t)(HIST_SUB_COUNT + (idx & (HIST_SUB_COUNT - 1))) << shift;
	*width = 1ull << shift;
}

uint64_t
bdevperf_histogram_bucket_low(uint32_t idx)
{
	uint64_t low, width;

	bucket_geometry(idx, &low, &width);
	return low;
}

uint64_t
bdevperf_histogram_bucket_high(uint32_t idx)
{
	uint64_t low, width;

	bucket_geometry(idx, &low, &width);
	return low + (width - 1);
}

void
bdevperf_histogram_merge(struct bdevperf_histogram *dst, const struct bdevperf_histogram *src)
{
	uint32_t i;

	for (i = 0; i < HIST_NUM_BUCKETS; i++) {
		dst->buckets[i] += src->buckets[i];
	}
	dst->count += src->count;
}

uint64_t
bdevperf_histogram_percentile(const struct bdevperf_histogram *h, double pct)
{
	uint64_t rank, seen = 0;
	uint32_t i;
	double r;

	if (h->count == 0) {
		return 0;
	}
	if (pct > 100.0) {
		pct = 100.0;
	}
	/* The tiny bias keeps 99.9 % of 1000 at rank 999 despite rounding. */
	r = pct / 100.0 * (double)h->count;
	rank = (uint64_t)ceil(r - r * 1e-12);
	if (rank == 0) {
		rank = 1;
	}
	if (rank > h->count) {
		rank = h->count;
	}
	for (i = 0; i < HIST_NUM_BUCKETS; i++) {
		seen += h->buckets[i];
		if (seen >= rank) {
			return bdevperf_histogram_bucket_high(i);
		}
	}
	return bdevperf_histogram_bucket_high(HIST_NUM_BUCKETS - 1);
}
