/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The results: SPDK bdevperf's table (plus p50/p99/p99.9) or one JSON object
 * for scripts. Everything here works on plain numbers, so the unit tests can
 * check the arithmetic and the layout.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bdevperf_internal.h"

#define MIB      (1024.0 * 1024.0)
#define NAME_COL 23

static double
ticks_us(uint64_t ticks, uint64_t ticks_per_s)
{
	return (double)ticks * 1e6 / (double)ticks_per_s;
}

static uint64_t
core_mask(uint32_t core)
{
	return core < 64 ? UINT64_C(1) << core : 0;
}

static uint64_t
clamp_u64(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v < lo ? lo : (v > hi ? hi : v);
}

/* Bucket ends can overshoot the extremes; the true min and max bound them. */
static double
percentile_us(const struct bdevperf_histogram *h, double pct, uint64_t lo, uint64_t hi,
	      uint64_t ticks_per_s)
{
	return ticks_us(clamp_u64(bdevperf_histogram_percentile(h, pct), lo, hi), ticks_per_s);
}

void
bdevperf_result_compute(const struct bdevperf_stats *s, uint64_t io_size, uint64_t ticks_per_s,
			struct bdevperf_result *r)
{
	uint64_t lo, hi;

	memset(r, 0, sizeof(*r));
	r->runtime_s = (double)s->runtime_ticks / (double)ticks_per_s;
	if (r->runtime_s > 0) {
		r->iops = (double)s->io_completed / r->runtime_s;
		r->mibps = r->iops * (double)io_size / MIB;
		r->fail_per_s = (double)s->io_failed / r->runtime_s;
		r->timeout_per_s = (double)s->io_timeout / r->runtime_s;
	}
	if (s->io_completed == 0) {
		return;
	}
	lo = s->lat_min_ticks;
	hi = s->lat_max_ticks;
	r->avg_us = ticks_us(s->lat_total_ticks, ticks_per_s) / (double)s->io_completed;
	r->min_us = ticks_us(lo, ticks_per_s);
	r->max_us = ticks_us(hi, ticks_per_s);
	if (s->hist != NULL && s->hist->count > 0) {
		r->p50_us = percentile_us(s->hist, 50.0, lo, hi, ticks_per_s);
		r->p99_us = percentile_us(s->hist, 99.0, lo, hi, ticks_per_s);
		r->p999_us = percentile_us(s->hist, 99.9, lo, hi, ticks_per_s);
	}
}

void
bdevperf_report_total(const struct bdevperf_report_row *rows, uint32_t n,
		      struct bdevperf_stats *total, struct bdevperf_histogram *hist)
{
	const struct bdevperf_stats *s;
	uint32_t i;

	memset(total, 0, sizeof(*total));
	total->lat_min_ticks = UINT64_MAX;
	if (hist != NULL) {
		bdevperf_histogram_init(hist);
	}
	total->hist = hist;
	for (i = 0; i < n; i++) {
		s = &rows[i].stats;
		total->io_completed += s->io_completed;
		total->io_failed += s->io_failed;
		total->io_timeout += s->io_timeout;
		total->lat_total_ticks += s->lat_total_ticks;
		total->lat_min_ticks = GGA_MIN(total->lat_min_ticks, s->lat_min_ticks);
		total->lat_max_ticks = GGA_MAX(total->lat_max_ticks, s->lat_max_ticks);
		total->verify_blocks += s->verify_blocks;
		total->verify_mismatches += s->verify_mismatches;
		total->runtime_ticks = GGA_MAX(total->runtime_ticks, s->runtime_ticks);
		if (hist != NULL && s->hist != NULL) {
			bdevperf_histogram_merge(hist, s->hist);
		}
	}
}

/*
 * Totals as SPDK prints them: rates are the sums of the jobs' rates (jobs may
 * run for slightly different times), latencies are over all I/Os.
 */
static void
total_result(const struct bdevperf_report_row *rows, uint32_t n, uint64_t ticks_per_s,
	     struct bdevperf_stats *total, struct bdevperf_histogram *hist,
	     struct bdevperf_result *tr)
{
	struct bdevperf_result r;
	uint32_t i;

	bdevperf_report_total(rows, n, total, hist);
	bdevperf_result_compute(total, 1, ticks_per_s, tr);
	tr->iops = tr->mibps = tr->fail_per_s = tr->timeout_per_s = 0;
	for (i = 0; i < n; i++) {
		bdevperf_result_compute(&rows[i].stats, rows[i].io_size, ticks_per_s, &r);
		tr->iops += r.iops;
		tr->mibps += r.mibps;
		tr->fail_per_s += r.fail_per_s;
		tr->timeout_per_s += r.timeout_per_s;
	}
}

void
bdevperf_report_text(FILE *f, const struct bdevperf_report_row *rows, uint32_t n,
		     uint64_t ticks_per_s)
{
	struct bdevperf_stats total;
	struct bdevperf_result r;
	char name[256];
	int width;
	uint32_t i;

	fprintf(f, "%*s\n", 97, "Latency(us)");
	width = fprintf(f, "%-*s: %10s %10s %10s %10s %8s %10s %10s %10s %10s %10s %10s", NAME_COL,
			"Device Information", "runtime(s)", "IOPS", "MiB/s", "Fail/s", "TO/s",
			"Average", "min", "max", "p50", "p99", "p99.9");
	fprintf(f, "\n");
	for (i = 0; i < n; i++) {
		bdevperf_result_compute(&rows[i].stats, rows[i].io_size, ticks_per_s, &r);
		fprintf(f, "Job: %s (Core Mask 0x%" PRIx64 ")\n", rows[i].name,
			core_mask(rows[i].core));
		snprintf(name, sizeof(name), "%9s%s", "", rows[i].name);
		fprintf(f,
			"%-*s: %10.2f %10.2f %10.2f %10.2f %8.2f %10.2f %10.2f %10.2f %10.2f "
			"%10.2f %10.2f\n",
			NAME_COL, name, r.runtime_s, r.iops, r.mibps, r.fail_per_s, r.timeout_per_s,
			r.avg_us, r.min_us, r.max_us, r.p50_us, r.p99_us, r.p999_us);
		if (rows[i].verify) {
			fprintf(f,
				"%9sverify: %" PRIu64 " blocks compared, %" PRIu64 " mismatches\n",
				"", rows[i].stats.verify_blocks, rows[i].stats.verify_mismatches);
		}
	}
	for (i = 0; i < (uint32_t)(width > 0 ? width : 0); i++) {
		fputc('=', f);
	}
	fputc('\n', f);
	/* The total's percentiles go to JSON only; the table keeps SPDK's shape. */
	total_result(rows, n, ticks_per_s, &total, NULL, &r);
	fprintf(f, "%-*s: %10s %10.2f %10.2f %10.2f %8.2f %10.2f %10.2f %10.2f\n", NAME_COL,
		"Total", "", r.iops, r.mibps, r.fail_per_s, r.timeout_per_s, r.avg_us, r.min_us,
		r.max_us);
}

/* Two decimals, like the table; keeps the JSON free of 17-digit noise. */
static json_t *
json_num(double v)
{
	return json_real(round(v * 100.0) / 100.0);
}

static int
add_result(json_t *obj, const struct bdevperf_stats *s, const struct bdevperf_result *r)
{
	int rc = 0;

	rc |= json_object_set_new(obj, "runtime", json_num(r->runtime_s));
	rc |= json_object_set_new(obj, "iops", json_num(r->iops));
	rc |= json_object_set_new(obj, "mibps", json_num(r->mibps));
	rc |= json_object_set_new(obj, "io_completed", json_integer((json_int_t)s->io_completed));
	rc |= json_object_set_new(obj, "io_failed", json_integer((json_int_t)s->io_failed));
	rc |= json_object_set_new(obj, "io_timeout", json_integer((json_int_t)s->io_timeout));
	rc |= json_object_set_new(obj, "fail_per_s", json_num(r->fail_per_s));
	rc |= json_object_set_new(obj, "timeout_per_s", json_num(r->timeout_per_s));
	rc |= json_object_set_new(obj, "avg_latency_us", json_num(r->avg_us));
	rc |= json_object_set_new(obj, "min_latency_us", json_num(r->min_us));
	rc |= json_object_set_new(obj, "max_latency_us", json_num(r->max_us));
	rc |= json_object_set_new(obj, "p50_latency_us", json_num(r->p50_us));
	rc |= json_object_set_new(obj, "p99_latency_us", json_num(r->p99_us));
	rc |= json_object_set_new(obj, "p999_latency_us", json_num(r->p999_us));
	rc |= json_object_set_new(obj, "verify_blocks", json_integer((json_int_t)s->verify_blocks));
	rc |= json_object_set_new(obj, "verify_mismatches",
				  json_integer((json_int_t)s->verify_mismatches));
	return rc == 0 ? 0 : -ENOMEM;
}

int
bdevperf_report_json(FILE *f, const struct bdevperf_report_row *rows, uint32_t n,
		     uint64_t ticks_per_s)
{
	struct bdevperf_histogram *hist;
	struct bdevperf_stats total;
	struct bdevperf_result r;
	json_t *root, *results, *obj;
	char mask[32];
	int rc = -ENOMEM;
	uint32_t i;

	hist = malloc(sizeof(*hist));
	root = json_object();
	results = json_array();
	if (hist == NULL || root == NULL || results == NULL ||
	    json_object_set(root, "results", results) != 0) {
		goto out_free_report;
	}
	for (i = 0; i < n; i++) {
		bdevperf_result_compute(&rows[i].stats, rows[i].io_size, ticks_per_s, &r);
		snprintf(mask, sizeof(mask), "0x%" PRIx64, core_mask(rows[i].core));
		obj = json_pack("{s:i, s:s, s:s, s:s, s:i, s:I}", "job", (int)rows[i].index, "bdev",
				rows[i].name, "core_mask", mask, "workload", rows[i].workload,
				"queue_depth", (int)rows[i].queue_depth, "io_size",
				(json_int_t)rows[i].io_size);
		if (obj == NULL || json_array_append_new(results, obj) != 0 ||
		    add_result(obj, &rows[i].stats, &r) != 0) {
			goto out_free_report;
		}
	}
	total_result(rows, n, ticks_per_s, &total, hist, &r);
	obj = json_object();
	if (obj == NULL || json_object_set_new(root, "total", obj) != 0 ||
	    add_result(obj, &total, &r) != 0) {
		goto out_free_report;
	}
	if (json_dumpf(root, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15)) !=
	    0) {
		rc = -EIO;
		goto out_free_report;
	}
	fputc('\n', f);
	rc = 0;
out_free_report:
	json_decref(results);
	json_decref(root);
	free(hist);
	return rc;
}
