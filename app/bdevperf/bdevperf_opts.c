/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bdevperf's own command-line options. app_parse_args() handles the common
 * ones (-m, --cpu, -r, --json, ...) and hands each of these to
 * bdevperf_opts_parse(); bdevperf_opts_validate() then checks how they fit
 * together. Nothing here touches the framework, so the unit tests drive it
 * directly.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bdevperf_internal.h"

const struct option bdevperf_long_opts[] = {
	{ "output", required_argument, NULL, OPT_OUTPUT },
	{ "pattern", required_argument, NULL, OPT_PATTERN },
	{ "io-timeout", required_argument, NULL, OPT_IO_TIMEOUT },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "prefill", no_argument, NULL, OPT_PREFILL },
	{ NULL, 0, NULL, 0 },
};

static const struct {
	const char *name;
	enum bdevperf_workload workload;
} workloads[] = {
	{ "read", WORKLOAD_READ },
	{ "write", WORKLOAD_WRITE },
	{ "randread", WORKLOAD_RANDREAD },
	{ "randwrite", WORKLOAD_RANDWRITE },
	{ "rw", WORKLOAD_RW },
	{ "randrw", WORKLOAD_RANDRW },
	{ "verify", WORKLOAD_VERIFY },
	{ "flush", WORKLOAD_FLUSH },
	{ "unmap", WORKLOAD_UNMAP },
	{ "write_zeroes", WORKLOAD_WRITE_ZEROES },
};

const char *
bdevperf_workload_name(enum bdevperf_workload w)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(workloads); i++) {
		if (workloads[i].workload == w) {
			return workloads[i].name;
		}
	}
	return "none";
}

enum bdevperf_workload
bdevperf_workload_from_name(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(workloads); i++) {
		if (strcmp(workloads[i].name, name) == 0) {
			return workloads[i].workload;
		}
	}
	return WORKLOAD_NONE;
}

bool
bdevperf_workload_is_random(enum bdevperf_workload w)
{
	return w == WORKLOAD_RANDREAD || w == WORKLOAD_RANDWRITE || w == WORKLOAD_RANDRW;
}

bool
bdevperf_workload_is_read_only(enum bdevperf_workload w)
{
	return w == WORKLOAD_READ || w == WORKLOAD_RANDREAD;
}

bool
bdevperf_workload_uses(enum bdevperf_workload w, int rwmixread, enum bdev_io_type type)
{
	switch (w) {
	case WORKLOAD_READ:
	case WORKLOAD_RANDREAD:
		return type == BDEV_IO_TYPE_READ;
	case WORKLOAD_WRITE:
	case WORKLOAD_RANDWRITE:
		return type == BDEV_IO_TYPE_WRITE;
	case WORKLOAD_RW:
	case WORKLOAD_RANDRW:
		return (type == BDEV_IO_TYPE_READ && rwmixread > 0) ||
		       (type == BDEV_IO_TYPE_WRITE && rwmixread < 100);
	case WORKLOAD_VERIFY:
		return type == BDEV_IO_TYPE_READ || type == BDEV_IO_TYPE_WRITE;
	case WORKLOAD_FLUSH:
		return type == BDEV_IO_TYPE_FLUSH;
	case WORKLOAD_UNMAP:
		return type == BDEV_IO_TYPE_UNMAP;
	case WORKLOAD_WRITE_ZEROES:
		return type == BDEV_IO_TYPE_WRITE_ZEROES;
	case WORKLOAD_NONE:
		break;
	}
	return false;
}

void
bdevperf_opts_init(struct bdevperf_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->rwmixread = -1;
	opts->output = OUTPUT_TEXT;
	opts->pattern.type = PATTERN_RANDOM;
}

void
bdevperf_opts_free(struct bdevperf_opts *opts)
{
	uint32_t i;

	for (i = 0; i < opts->num_bdev_names; i++) {
		free(opts->bdev_names[i]);
	}
	free(opts->bdev_names);
	opts->bdev_names = NULL;
	opts->num_bdev_names = 0;
}

/* A whole decimal (or 0x hex) number in [min, max]; no sign, no trailing junk. */
static int
parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (s == NULL || *s == '\0' || *s == '-' || *s == '+' || *s == ' ') {
		return -EINVAL;
	}
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || *end != '\0' || v < min || v > max) {
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int
add_bdev_name(struct bdevperf_opts *opts, const char *name)
{
	char **names;
	uint32_t i;

	if (name[0] == '\0') {
		fprintf(stderr, "bdevperf: -b needs a bdev name\n");
		return -EINVAL;
	}
	for (i = 0; i < opts->num_bdev_names; i++) {
		if (strcmp(opts->bdev_names[i], name) == 0) {
			fprintf(stderr, "bdevperf: bdev '%s' given twice with -b\n", name);
			return -EINVAL;
		}
	}
	if (opts->num_bdev_names >= BDEVPERF_MAX_BDEV_NAMES) {
		fprintf(stderr, "bdevperf: too many -b options (at most %u)\n",
			BDEVPERF_MAX_BDEV_NAMES);
		return -EINVAL;
	}
	names = realloc(opts->bdev_names, (opts->num_bdev_names + 1) * sizeof(*names));
	if (names == NULL) {
		return -EINVAL;
	}
	opts->bdev_names = names;
	names[opts->num_bdev_names] = strdup(name);
	if (names[opts->num_bdev_names] == NULL) {
		return -EINVAL;
	}
	opts->num_bdev_names++;
	return 0;
}

int
bdevperf_opts_parse(struct bdevperf_opts *opts, int ch, const char *arg)
{
	/* Options without an argument (-C) get NULL; messages print "". */
	const char *val = arg != NULL ? arg : "";
	uint64_t v;

	switch (ch) {
	case 'q':
		if (parse_u64(val, 1, BDEVPERF_MAX_QUEUE_DEPTH, &v) != 0) {
			fprintf(stderr, "bdevperf: invalid queue depth '%s' for -q (1..%u)\n", val,
				BDEVPERF_MAX_QUEUE_DEPTH);
			return -EINVAL;
		}
		opts->queue_depth = (uint32_t)v;
		return 0;
	case 'o':
		if (parse_size(val, &v) != 0 || v == 0 || v > BDEVPERF_MAX_IO_SIZE) {
			fprintf(stderr,
				"bdevperf: invalid I/O size '%s' for -o (bytes, with an "
				"optional k/m suffix; at most 1g)\n",
				val);
			return -EINVAL;
		}
		opts->io_size = v;
		return 0;
	case 'w':
		opts->workload = bdevperf_workload_from_name(val);
		if (opts->workload == WORKLOAD_NONE) {
			fprintf(stderr,
				"bdevperf: unknown workload '%s' for -w (read, write, "
				"randread, randwrite, rw, randrw, verify, flush, unmap, "
				"write_zeroes)\n",
				val);
			return -EINVAL;
		}
		return 0;
	case 't':
		if (parse_u64(val, 1, BDEVPERF_MAX_TIME_S, &v) != 0) {
			fprintf(stderr,
				"bdevperf: invalid run time '%s' for -t "
				"(whole seconds, 1..%llu)\n",
				val, (unsigned long long)BDEVPERF_MAX_TIME_S);
			return -EINVAL;
		}
		opts->time_s = v;
		return 0;
	case 'M':
		if (parse_u64(val, 0, 100, &v) != 0) {
			fprintf(stderr, "bdevperf: invalid read percentage '%s' for -M (0..100)\n",
				val);
			return -EINVAL;
		}
		opts->rwmixread = (int)v;
		return 0;
	case 'S':
		if (parse_u64(val, 1, BDEVPERF_MAX_TIME_S, &v) != 0) {
			fprintf(stderr,
				"bdevperf: invalid period '%s' for -S "
				"(whole seconds >= 1)\n",
				val);
			return -EINVAL;
		}
		opts->period_s = v;
		return 0;
	case 'b':
		return add_bdev_name(opts, val);
	case 'C':
		opts->every_core = true;
		return 0;
	case OPT_OUTPUT:
		if (strcmp(val, "text") == 0) {
			opts->output = OUTPUT_TEXT;
		} else if (strcmp(val, "json") == 0) {
			opts->output = OUTPUT_JSON;
		} else {
			fprintf(stderr, "bdevperf: invalid --output '%s' (text or json)\n", val);
			return -EINVAL;
		}
		return 0;
	case OPT_PATTERN:
		if (bdevperf_pattern_parse(val, &opts->pattern) != 0) {
			fprintf(stderr,
				"bdevperf: invalid --pattern '%s' (random, zeros or "
				"compress:N with N in 1..100)\n",
				val);
			return -EINVAL;
		}
		return 0;
	case OPT_IO_TIMEOUT:
		if (parse_u64(val, 1, BDEVPERF_MAX_IO_TIMEOUT_MS, &v) != 0) {
			fprintf(stderr,
				"bdevperf: invalid --io-timeout '%s' "
				"(milliseconds, 1..%llu)\n",
				val, (unsigned long long)BDEVPERF_MAX_IO_TIMEOUT_MS);
			return -EINVAL;
		}
		opts->io_timeout_ms = v;
		return 0;
	case OPT_SEED:
		if (parse_u64(val, 0, UINT64_MAX, &v) != 0) {
			fprintf(stderr, "bdevperf: invalid --seed '%s' (an unsigned number)\n",
				val);
			return -EINVAL;
		}
		opts->seed = v;
		return 0;
	case OPT_PREFILL:
		if (arg != NULL) {
			fprintf(stderr, "bdevperf: --prefill takes no value\n");
			return -EINVAL;
		}
		opts->prefill = true;
		return 0;
	default:
		break;
	}
	fprintf(stderr, "bdevperf: unknown option\n");
	return -EINVAL;
}

int
bdevperf_opts_validate(const struct bdevperf_opts *opts)
{
	if (opts->queue_depth == 0) {
		fprintf(stderr, "bdevperf: missing queue depth (-q)\n");
		return -EINVAL;
	}
	if (opts->io_size == 0) {
		fprintf(stderr, "bdevperf: missing I/O size (-o)\n");
		return -EINVAL;
	}
	if (opts->workload == WORKLOAD_NONE) {
		fprintf(stderr, "bdevperf: missing workload (-w)\n");
		return -EINVAL;
	}
	if (opts->time_s == 0) {
		fprintf(stderr, "bdevperf: missing run time (-t)\n");
		return -EINVAL;
	}
	if (opts->workload == WORKLOAD_RW || opts->workload == WORKLOAD_RANDRW) {
		if (opts->rwmixread < 0) {
			fprintf(stderr, "bdevperf: workload %s needs the read percentage (-M)\n",
				bdevperf_workload_name(opts->workload));
			return -EINVAL;
		}
	} else if (opts->rwmixread >= 0) {
		fprintf(stderr,
			"bdevperf: -M applies only to the rw and randrw workloads, "
			"not %s\n",
			bdevperf_workload_name(opts->workload));
		return -EINVAL;
	}
	return 0;
}

void
bdevperf_opts_usage(FILE *f)
{
	fprintf(f,
		"  -q DEPTH               queue depth per job (1..%u), required\n"
		"  -o SIZE                I/O size in bytes (k/m suffixes), a multiple of the\n"
		"                         block size, required\n"
		"  -w WORKLOAD            read, write, randread, randwrite, rw, randrw, verify,\n"
		"                         flush, unmap, write_zeroes; required\n"
		"  -t SECONDS             run time, required\n"
		"  -M PERCENT             reads in percent, required for rw and randrw\n"
		"  -S SECONDS             print a progress line every SECONDS\n"
		"  -b BDEV                test this bdev (repeatable); default: every\n"
		"                         unclaimed bdev\n"
		"  -C                     a job on every core for every bdev (default: one job\n"
		"                         per bdev, cores assigned round robin)\n"
		"      --output FORMAT    text (default) or json\n"
		"      --pattern PATTERN  write data: random (default), zeros, or compress:N\n"
		"                         (LZ4 compresses it to about N %% of its size)\n"
		"      --io-timeout MS    count I/Os outstanding longer than MS as timeouts\n"
		"      --seed N           seed for offsets and data (default 0)\n"
		"      --prefill          before the timed run, write each job's whole range\n"
		"                         once, sequentially, with its data pattern, queue\n"
		"                         depth and I/O size (not timed, not in the results),\n"
		"                         so reads return written data rather than blocks\n"
		"                         never written\n",
		BDEVPERF_MAX_QUEUE_DEPTH);
}
