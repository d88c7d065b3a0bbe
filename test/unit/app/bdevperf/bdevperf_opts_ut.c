/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bdevperf's option parsing: each option's accepted range and spelling, and
 * the cross-option checks (required options, -M only with rw/randrw).
 * Rejections print a message to stderr, which the test lets through.
 */
#include "gga_ut.h"

#include "app/bdevperf/bdevperf_opts.c"
#include "app/bdevperf/bdevperf_pattern.c"

/* Parse a NULL-terminated list of (ch, arg) pairs into opts; returns the first error. */
static int
parse_list(struct bdevperf_opts *opts, const int *chs, const char *const *args)
{
	int rc;

	bdevperf_opts_init(opts);
	for (; *chs != 0; chs++, args++) {
		rc = bdevperf_opts_parse(opts, *chs, *args);
		if (rc != 0) {
			return rc;
		}
	}
	return 0;
}

static int
parse_one(int ch, const char *arg)
{
	struct bdevperf_opts opts;
	int rc;

	bdevperf_opts_init(&opts);
	rc = bdevperf_opts_parse(&opts, ch, arg);
	bdevperf_opts_free(&opts);
	return rc;
}

static void
test_valid_full(void)
{
	static const int chs[] = { 'q',
				   'o',
				   'w',
				   't',
				   'S',
				   'b',
				   'b',
				   'C',
				   OPT_OUTPUT,
				   OPT_PATTERN,
				   OPT_IO_TIMEOUT,
				   OPT_SEED,
				   0 };
	static const char *const args[] = { "128",  "64k",         "randrw", "10",
					    "2",    "Malloc0",     "Null0",  NULL,
					    "json", "compress:40", "500",    "0x10" };
	struct bdevperf_opts opts;

	UT_ASSERT_EQ(parse_list(&opts, chs, args), 0);
	UT_ASSERT_EQ(opts.queue_depth, 128);
	UT_ASSERT_EQ(opts.io_size, 65536);
	UT_ASSERT_EQ(opts.workload, WORKLOAD_RANDRW);
	UT_ASSERT_EQ(opts.time_s, 10);
	UT_ASSERT_EQ(opts.period_s, 2);
	UT_ASSERT_EQ(opts.num_bdev_names, 2);
	UT_ASSERT_STR_EQ(opts.bdev_names[0], "Malloc0");
	UT_ASSERT_STR_EQ(opts.bdev_names[1], "Null0");
	CU_ASSERT(opts.every_core);
	UT_ASSERT_EQ(opts.output, OUTPUT_JSON);
	UT_ASSERT_EQ(opts.pattern.type, PATTERN_COMPRESS);
	UT_ASSERT_EQ(opts.pattern.compress_pct, 40);
	UT_ASSERT_EQ(opts.io_timeout_ms, 500);
	UT_ASSERT_EQ(opts.seed, 16);
	/* randrw without -M. */
	UT_ASSERT_EQ(bdevperf_opts_validate(&opts), -EINVAL);
	UT_ASSERT_EQ(bdevperf_opts_parse(&opts, 'M', "70"), 0);
	UT_ASSERT_EQ(opts.rwmixread, 70);
	UT_ASSERT_EQ(bdevperf_opts_validate(&opts), 0);
	bdevperf_opts_free(&opts);
	UT_ASSERT_EQ(opts.num_bdev_names, 0);
}

static void
test_defaults_and_required(void)
{
	static const int chs[] = { 'q', 'o', 'w', 't', 0 };
	static const char *const args[] = { "1", "512", "read", "1" };
	struct bdevperf_opts opts;
	int i;

	UT_ASSERT_EQ(parse_list(&opts, chs, args), 0);
	UT_ASSERT_EQ(bdevperf_opts_validate(&opts), 0);
	UT_ASSERT_EQ(opts.output, OUTPUT_TEXT);
	UT_ASSERT_EQ(opts.pattern.type, PATTERN_RANDOM);
	UT_ASSERT_EQ(opts.io_timeout_ms, 0);
	UT_ASSERT_EQ(opts.period_s, 0);
	UT_ASSERT_EQ(opts.rwmixread, -1);
	CU_ASSERT(!opts.every_core);
	CU_ASSERT(!opts.prefill);

	/* Leaving out any one of -q -o -w -t is refused. */
	for (i = 0; i < 4; i++) {
		int sub_chs[4] = { 0 };
		const char *sub_args[3];
		int j, n = 0;

		for (j = 0; j < 4; j++) {
			if (j != i) {
				sub_chs[n] = chs[j];
				sub_args[n] = args[j];
				n++;
			}
		}
		UT_ASSERT_EQ(parse_list(&opts, sub_chs, sub_args), 0);
		UT_ASSERT_EQ(bdevperf_opts_validate(&opts), -EINVAL);
	}
}

static void
test_queue_depth(void)
{
	UT_ASSERT_EQ(parse_one('q', "1"), 0);
	UT_ASSERT_EQ(parse_one('q', "4096"), 0);
	UT_ASSERT_EQ(parse_one('q', "0"), -EINVAL);
	UT_ASSERT_EQ(parse_one('q', "4097"), -EINVAL);
	UT_ASSERT_EQ(parse_one('q', "-1"), -EINVAL);
	UT_ASSERT_EQ(parse_one('q', "abc"), -EINVAL);
	UT_ASSERT_EQ(parse_one('q', "32x"), -EINVAL);
	UT_ASSERT_EQ(parse_one('q', ""), -EINVAL);
	UT_ASSERT_EQ(parse_one('q', " 4"), -EINVAL);
	UT_ASSERT_EQ(parse_one('q', "99999999999999999999999"), -EINVAL);
	UT_ASSERT_EQ(parse_one('q', NULL), -EINVAL);
}

static void
test_io_size(void)
{
	struct bdevperf_opts opts;

	bdevperf_opts_init(&opts);
	UT_ASSERT_EQ(bdevperf_opts_parse(&opts, 'o', "4k"), 0);
	UT_ASSERT_EQ(opts.io_size, 4096);
	UT_ASSERT_EQ(bdevperf_opts_parse(&opts, 'o', "1m"), 0);
	UT_ASSERT_EQ(opts.io_size, 1024 * 1024);
	UT_ASSERT_EQ(bdevperf_opts_parse(&opts, 'o', "4096"), 0);
	UT_ASSERT_EQ(opts.io_size, 4096);
	UT_ASSERT_EQ(bdevperf_opts_parse(&opts, 'o', "1000"), 0);
	UT_ASSERT_EQ(opts.io_size, 1000);
	UT_ASSERT_EQ(bdevperf_opts_parse(&opts, 'o', "0"), -EINVAL);
	UT_ASSERT_EQ(bdevperf_opts_parse(&opts, 'o', "abc"), -EINVAL);
	UT_ASSERT_EQ(bdevperf_opts_parse(&opts, 'o', "4q"), -EINVAL);
	UT_ASSERT_EQ(bdevperf_opts_parse(&opts, 'o', "2g"), -EINVAL);
	UT_ASSERT_EQ(bdevperf_opts_parse(&opts, 'o', ""), -EINVAL);
	/* A refused value leaves the last good one. */
	UT_ASSERT_EQ(opts.io_size, 1000);
}

static void
test_workloads(void)
{
	static const char *const names[] = { "read",  "write",       "randread", "randwrite",
					     "rw",    "randrw",      "verify",   "flush",
					     "unmap", "write_zeroes" };
	struct bdevperf_opts opts;
	size_t i;

	bdevperf_opts_init(&opts);
	for (i = 0; i < ARRAY_SIZE(names); i++) {
		UT_ASSERT_EQ(bdevperf_opts_parse(&opts, 'w', names[i]), 0);
		UT_ASSERT_STR_EQ(bdevperf_workload_name(opts.workload), names[i]);
	}
	UT_ASSERT_EQ(parse_one('w', "sideways"), -EINVAL);
	UT_ASSERT_EQ(parse_one('w', "READ"), -EINVAL);
	UT_ASSERT_EQ(parse_one('w', ""), -EINVAL);

	CU_ASSERT(bdevperf_workload_is_random(WORKLOAD_RANDRW));
	CU_ASSERT(!bdevperf_workload_is_random(WORKLOAD_VERIFY));
	CU_ASSERT(bdevperf_workload_is_read_only(WORKLOAD_RANDREAD));
	CU_ASSERT(!bdevperf_workload_is_read_only(WORKLOAD_RW));
	CU_ASSERT(bdevperf_workload_uses(WORKLOAD_RW, 100, BDEV_IO_TYPE_READ));
	CU_ASSERT(!bdevperf_workload_uses(WORKLOAD_RW, 100, BDEV_IO_TYPE_WRITE));
	CU_ASSERT(bdevperf_workload_uses(WORKLOAD_VERIFY, -1, BDEV_IO_TYPE_WRITE));
	CU_ASSERT(bdevperf_workload_uses(WORKLOAD_UNMAP, -1, BDEV_IO_TYPE_UNMAP));
	CU_ASSERT(!bdevperf_workload_uses(WORKLOAD_UNMAP, -1, BDEV_IO_TYPE_WRITE));
}

static void
test_mix_and_times(void)
{
	static const int chs[] = { 'q', 'o', 'w', 't', 'M', 0 };
	static const char *const args[] = { "4", "4k", "randread", "1", "50" };
	struct bdevperf_opts opts;

	UT_ASSERT_EQ(parse_one('M', "0"), 0);
	UT_ASSERT_EQ(parse_one('M', "100"), 0);
	UT_ASSERT_EQ(parse_one('M', "101"), -EINVAL);
	UT_ASSERT_EQ(parse_one('M', "-1"), -EINVAL);
	/* -M with a workload that does not mix is refused. */
	UT_ASSERT_EQ(parse_list(&opts, chs, args), 0);
	UT_ASSERT_EQ(bdevperf_opts_validate(&opts), -EINVAL);
	UT_ASSERT_EQ(bdevperf_opts_parse(&opts, 'w', "rw"), 0);
	UT_ASSERT_EQ(bdevperf_opts_validate(&opts), 0);

	UT_ASSERT_EQ(parse_one('t', "0"), -EINVAL);
	UT_ASSERT_EQ(parse_one('t', "1.5"), -EINVAL);
	UT_ASSERT_EQ(parse_one('t', "86400"), 0);
	UT_ASSERT_EQ(parse_one('S', "0"), -EINVAL);
	UT_ASSERT_EQ(parse_one('S', "1"), 0);
	UT_ASSERT_EQ(parse_one(OPT_IO_TIMEOUT, "0"), -EINVAL);
	UT_ASSERT_EQ(parse_one(OPT_IO_TIMEOUT, "1"), 0);
	UT_ASSERT_EQ(parse_one(OPT_IO_TIMEOUT, "10s"), -EINVAL);
	UT_ASSERT_EQ(parse_one(OPT_SEED, "0"), 0);
	UT_ASSERT_EQ(parse_one(OPT_SEED, "18446744073709551615"), 0);
	UT_ASSERT_EQ(parse_one(OPT_SEED, "18446744073709551616"), -EINVAL);
	UT_ASSERT_EQ(parse_one(OPT_SEED, "-3"), -EINVAL);
}

static void
test_misc_options(void)
{
	struct bdevperf_opts opts;
	int i;

	UT_ASSERT_EQ(parse_one(OPT_OUTPUT, "text"), 0);
	UT_ASSERT_EQ(parse_one(OPT_OUTPUT, "json"), 0);
	UT_ASSERT_EQ(parse_one(OPT_OUTPUT, "xml"), -EINVAL);
	UT_ASSERT_EQ(parse_one(OPT_PATTERN, "zeros"), 0);
	UT_ASSERT_EQ(parse_one(OPT_PATTERN, "compress:0"), -EINVAL);
	UT_ASSERT_EQ(parse_one(OPT_PATTERN, "ones"), -EINVAL);
	UT_ASSERT_EQ(parse_one('b', ""), -EINVAL);
	UT_ASSERT_EQ(parse_one('x', "1"), -EINVAL);

	/* --prefill is a flag: getopt hands it over without an argument. */
	bdevperf_opts_init(&opts);
	UT_ASSERT_EQ(bdevperf_opts_parse(&opts, OPT_PREFILL, NULL), 0);
	CU_ASSERT(opts.prefill);
	UT_ASSERT_EQ(bdevperf_opts_parse(&opts, 'w', "randread"), 0);
	UT_ASSERT_EQ(bdevperf_opts_parse(&opts, 'q', "32"), 0);
	UT_ASSERT_EQ(bdevperf_opts_parse(&opts, 'o', "4k"), 0);
	UT_ASSERT_EQ(bdevperf_opts_parse(&opts, 't', "1"), 0);
	UT_ASSERT_EQ(bdevperf_opts_validate(&opts), 0);
	UT_ASSERT_EQ(parse_one(OPT_PREFILL, "yes"), -EINVAL);
	for (i = 0; bdevperf_long_opts[i].name != NULL; i++) {
		if (strcmp(bdevperf_long_opts[i].name, "prefill") == 0) {
			break;
		}
	}
	CU_ASSERT_FATAL(bdevperf_long_opts[i].name != NULL);
	UT_ASSERT_EQ(bdevperf_long_opts[i].has_arg, no_argument);
	UT_ASSERT_EQ(bdevperf_long_opts[i].val, OPT_PREFILL);
	bdevperf_opts_free(&opts);

	bdevperf_opts_init(&opts);
	UT_ASSERT_EQ(bdevperf_opts_parse(&opts, 'b', "Malloc0"), 0);
	UT_ASSERT_EQ(bdevperf_opts_parse(&opts, 'b', "Malloc0"), -EINVAL);
	UT_ASSERT_EQ(opts.num_bdev_names, 1);
	bdevperf_opts_free(&opts);
}

static void
test_usage(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	CU_ASSERT_FATAL(f != NULL);
	bdevperf_opts_usage(f);
	fclose(f);
	CU_ASSERT(strstr(text, "-q DEPTH") != NULL);
	CU_ASSERT(strstr(text, "--pattern") != NULL);
	CU_ASSERT(strstr(text, "--io-timeout") != NULL);
	CU_ASSERT(strstr(text, "--prefill") != NULL);
	free(text);
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_valid_full),   UT_TEST(test_defaults_and_required),
		UT_TEST(test_queue_depth),  UT_TEST(test_io_size),
		UT_TEST(test_workloads),    UT_TEST(test_mix_and_times),
		UT_TEST(test_misc_options), UT_TEST(test_usage),
	};

	return ut_run("bdevperf_opts", tests, ARRAY_SIZE(tests), NULL, NULL);
}
