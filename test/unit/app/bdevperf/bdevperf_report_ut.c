/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bdevperf's results: the arithmetic (IOPS, MiB/s, rates, latencies in µs,
 * percentiles clamped to the observed extremes), the text table's layout and
 * the JSON object, read back with jansson.
 */
#include <stdlib.h>

#include <jansson.h>

#include "gga_ut.h"

#include "app/bdevperf/bdevperf_histogram.c"
#include "app/bdevperf/bdevperf_report.c"

/* 1 MHz ticks make a tick a microsecond. */
#define HZ 1000000ull

static void
make_row(struct bdevperf_report_row *row, struct bdevperf_histogram *h, const char *name,
	 uint32_t core, uint64_t ios, uint64_t lat_us)
{
	uint64_t i;

	memset(row, 0, sizeof(*row));
	bdevperf_histogram_init(h);
	row->index = core;
	row->name = name;
	row->core = core;
	row->workload = "randread";
	row->queue_depth = 32;
	row->io_size = 4096;
	row->stats.hist = h;
	row->stats.runtime_ticks = 2 * HZ;
	row->stats.lat_min_ticks = UINT64_MAX;
	/* ios I/Os: all at lat_us except one at 10x. */
	for (i = 0; i < ios; i++) {
		uint64_t lat = i == ios - 1 ? 10 * lat_us : lat_us;

		row->stats.io_completed++;
		row->stats.lat_total_ticks += lat;
		row->stats.lat_min_ticks = GGA_MIN(row->stats.lat_min_ticks, lat);
		row->stats.lat_max_ticks = GGA_MAX(row->stats.lat_max_ticks, lat);
		bdevperf_histogram_record(h, lat);
	}
}

static void
test_result_compute(void)
{
	struct bdevperf_histogram *h = malloc(sizeof(*h));
	struct bdevperf_report_row row;
	struct bdevperf_result r;

	CU_ASSERT_FATAL(h != NULL);
	make_row(&row, h, "Malloc0", 0, 2000, 100);
	row.stats.io_failed = 4;
	row.stats.io_timeout = 2;
	bdevperf_result_compute(&row.stats, row.io_size, HZ, &r);
	CU_ASSERT_DOUBLE_EQUAL(r.runtime_s, 2.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(r.iops, 1000.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(r.mibps, 1000.0 * 4096 / (1024 * 1024), 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(r.fail_per_s, 2.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(r.timeout_per_s, 1.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(r.avg_us, (1999.0 * 100 + 1000) / 2000, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(r.min_us, 100.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(r.max_us, 1000.0, 1e-9);
	/* 100 and 1000 lie inside buckets; the clamp makes both percentiles exact here. */
	CU_ASSERT_DOUBLE_EQUAL(r.p50_us, 100.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(r.p99_us, 100.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(r.p999_us, 100.0, 1e-9);

	/* Nothing completed: rates of zero, no division by zero. */
	memset(&row.stats, 0, sizeof(row.stats));
	row.stats.lat_min_ticks = UINT64_MAX;
	bdevperf_result_compute(&row.stats, row.io_size, HZ, &r);
	CU_ASSERT_DOUBLE_EQUAL(r.iops, 0.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(r.avg_us, 0.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(r.min_us, 0.0, 1e-9);
	free(h);
}

static void
test_percentile_clamped(void)
{
	struct bdevperf_histogram *h = malloc(sizeof(*h));
	struct bdevperf_report_row row;
	struct bdevperf_result r;

	CU_ASSERT_FATAL(h != NULL);
	/* 1000 µs latencies: the bucket's upper end (1007) must not exceed the max. */
	make_row(&row, h, "M", 0, 10, 1000);
	row.stats.lat_max_ticks = 1000;
	bdevperf_result_compute(&row.stats, row.io_size, HZ, &r);
	CU_ASSERT(r.p50_us <= 1000.0);
	CU_ASSERT(r.p999_us <= 1000.0);
	free(h);
}

static void
test_text_table(void)
{
	struct bdevperf_histogram *h = calloc(2, sizeof(*h));
	struct bdevperf_report_row rows[2];
	char *text = NULL, *line, *header, *save = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	CU_ASSERT_FATAL(f != NULL && h != NULL);
	make_row(&rows[0], &h[0], "Malloc0", 0, 2000, 100);
	make_row(&rows[1], &h[1], "Malloc0", 1, 4000, 50);
	rows[1].verify = true;
	rows[1].stats.verify_blocks = 4000;
	rows[1].stats.verify_mismatches = 3;
	bdevperf_report_text(f, rows, 2, HZ);
	fclose(f);

	CU_ASSERT(strstr(text, "Latency(us)") != NULL);
	CU_ASSERT(strstr(text, "Job: Malloc0 (Core Mask 0x1)\n") != NULL);
	CU_ASSERT(strstr(text, "Job: Malloc0 (Core Mask 0x2)\n") != NULL);
	CU_ASSERT(strstr(text, "verify: 4000 blocks compared, 3 mismatches") != NULL);
	header = strstr(text,
			"Device Information     : runtime(s)       IOPS      MiB/s     "
			"Fail/s     TO/s    Average        min        max        p50        p99"
			"      p99.9\n");
	CU_ASSERT(header != NULL);
	/* Rows line up with the header; the total sums the rates (1000 + 2000 IOPS). */
	CU_ASSERT(strstr(text,
			 "         Malloc0       :       2.00    1000.00       3.91       "
			 "0.00     0.00     100.45     100.00    1000.00     100.00     100.00"
			 "     100.00\n") != NULL);
	CU_ASSERT(strstr(text, "Total                  :               3000.00      11.72       "
			       "0.00     0.00      66.89      50.00    1000.00\n") != NULL);
	/* The separator is as wide as the header. */
	for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '=') {
			UT_ASSERT_EQ(strlen(line),
				     strlen("Device Information     : runtime(s)") + 11 * 9 + 9);
			CU_ASSERT(strspn(line, "=") == strlen(line));
		}
	}
	free(text);
	free(h);
}

static void
test_json(void)
{
	struct bdevperf_histogram *h = calloc(2, sizeof(*h));
	struct bdevperf_report_row rows[2];
	json_t *root, *results, *r0, *total;
	json_error_t err;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	CU_ASSERT_FATAL(f != NULL && h != NULL);
	make_row(&rows[0], &h[0], "Malloc0", 0, 2000, 100);
	make_row(&rows[1], &h[1], "Null0", 1, 4000, 50);
	rows[1].stats.io_failed = 8;
	UT_ASSERT_EQ(bdevperf_report_json(f, rows, 2, HZ), 0);
	fclose(f);

	root = json_loads(text, 0, &err);
	CU_ASSERT_FATAL(root != NULL);
	results = json_object_get(root, "results");
	CU_ASSERT_FATAL(json_is_array(results));
	UT_ASSERT_EQ(json_array_size(results), 2);
	r0 = json_array_get(results, 0);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(r0, "bdev")), "Malloc0");
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(r0, "core_mask")), "0x1");
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(r0, "workload")), "randread");
	UT_ASSERT_EQ(json_integer_value(json_object_get(r0, "queue_depth")), 32);
	UT_ASSERT_EQ(json_integer_value(json_object_get(r0, "io_size")), 4096);
	CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(r0, "iops")), 1000.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(r0, "p999_latency_us")), 100.0,
			       1e-9);
	CU_ASSERT(json_object_get(r0, "verify_mismatches") != NULL);
	CU_ASSERT(json_object_get(r0, "io_timeout") != NULL);
	r0 = json_array_get(results, 1);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(r0, "core_mask")), "0x2");

	total = json_object_get(root, "total");
	CU_ASSERT_FATAL(json_is_object(total));
	CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(total, "iops")), 3000.0, 1e-9);
	UT_ASSERT_EQ(json_integer_value(json_object_get(total, "io_failed")), 8);
	CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(total, "min_latency_us")), 50.0,
			       1e-9);
	CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(total, "max_latency_us")), 1000.0,
			       1e-9);
	/* Merged histogram: 4000 of 6000 I/Os took 50 µs, so the median is 50. */
	CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(total, "p50_latency_us")), 50.0,
			       1e-9);
	/* Rounded to two decimals. */
	CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(total, "avg_latency_us")), 66.89,
			       1e-9);
	json_decref(root);
	free(text);
	free(h);
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_result_compute),
		UT_TEST(test_percentile_clamped),
		UT_TEST(test_text_table),
		UT_TEST(test_json),
	};

	return ut_run("bdevperf_report", tests, ARRAY_SIZE(tests), NULL, NULL);
}
