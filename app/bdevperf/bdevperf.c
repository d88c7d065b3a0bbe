/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bdevperf: drive bdevs with a fixed queue depth of one workload for a fixed
 * time and report IOPS, bandwidth, failures, timeouts and latency.
 *
 * The app thread (this file) picks the bdevs, builds one job per bdev (or, with
 * -C, one per bdev and core), opens the descriptors, and hands each job to its
 * reactor's thread in three steps: setup (channel and buffers), run, and the
 * job's own end. Every step reports back here with bdevperf_job_reported();
 * when all jobs have finished, the app thread closes the descriptors, prints
 * the results and stops the app with a non-zero code if anything failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gga/app.h"
#include "gga/bdev.h"
#include "gga/bdev_modules.h"
#include "gga/log.h"
#include "gga/reactor.h"
#include "gga/thread.h"
#include "gga/util.h"

#include "bdevperf_internal.h"

/* At the end, how long jobs wait for outstanding I/O before resetting the bdev. */
#define MIN_GRACE_MS       5000ull
#define MAX_SCAN_PERIOD_MS 100ull

enum perf_state {
	PERF_INIT = 0, /* start_fn has not run */
	PERF_SETUP,    /* jobs are setting up */
	PERF_PREFILL,  /* --prefill: jobs are writing their regions */
	PERF_RUNNING,
	PERF_TEARDOWN, /* setup failed or interrupted: releasing the ready jobs */
	PERF_DONE,     /* results printed, app_stop called */
};

struct reactor_slot {
	uint32_t core;
	struct thread *thread;
};

static struct bdevperf_opts g_opts;
/* Where the results go: stdout, or with --output json a private copy of it. */
static FILE *g_out;

static struct {
	enum perf_state state;
	struct bdevperf_job **jobs;
	uint32_t num_jobs;
	uint32_t waiting;      /* reports still expected in this phase */
	bool interrupted;      /* SIGINT/SIGTERM or a bdev went away */
	bool shutdown_pending; /* our shutdown_fn owes app_shutdown_continue() */
	bool setup_failed;
	bool bdev_removed; /* a bdev went away during the run */
	struct poller *progress_poller;
	uint64_t progress_ticks;
	uint64_t progress_ios;
	uint64_t progress_failed;
	uint64_t start_ticks;
	int rc;
} g_perf;

static FILE *
info_stream(void)
{
	/* With --output json, stdout carries the JSON object and nothing else. */
	return g_opts.output == OUTPUT_JSON ? stderr : stdout;
}

/*
 * With --output json, keep the real stdout for the JSON object and point fd 1
 * at /dev/null, so that lines other parts print to stdout (the framework's
 * "ready") cannot end up in front of it: scripts parse stdout as one object.
 */
static int
json_stdout_open(void)
{
	int fd, null_fd, rc = 0;

	fflush(stdout);
	fd = dup(STDOUT_FILENO);
	if (fd < 0) {
		return -errno;
	}
	g_out = fdopen(fd, "w");
	if (g_out == NULL) {
		close(fd);
		return -ENOMEM;
	}
	null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null_fd < 0 || dup2(null_fd, STDOUT_FILENO) < 0) {
		rc = -errno;
		fclose(g_out);
		g_out = NULL;
	}
	if (null_fd >= 0) {
		close(null_fd);
	}
	return rc;
}

static bool
arg_given(int argc, char **argv, const char *name)
{
	size_t len = strlen(name);
	int i;

	for (i = 1; i < argc; i++) {
		if (strncmp(argv[i], name, len) == 0 &&
		    (argv[i][len] == '\0' || argv[i][len] == '=')) {
			return true;
		}
	}
	return false;
}

static int
parse_cb(int ch, const char *arg)
{
	return bdevperf_opts_parse(&g_opts, ch, arg);
}

static void
usage_cb(void)
{
	bdevperf_opts_usage(stdout);
}

static void
job_free(struct bdevperf_job *job)
{
	if (job->abandoned) {
		/* The bdev may still write into its buffers and stats. */
		return;
	}
	free(job->stats.hist);
	free(job->name);
	free(job);
}

static void
jobs_free(void)
{
	uint32_t i;

	for (i = 0; i < g_perf.num_jobs; i++) {
		job_free(g_perf.jobs[i]);
	}
	free(g_perf.jobs);
	g_perf.jobs = NULL;
	g_perf.num_jobs = 0;
}

static void
jobs_close(void)
{
	struct bdevperf_job *job;
	uint32_t i;

	for (i = 0; i < g_perf.num_jobs; i++) {
		job = g_perf.jobs[i];
		if (job->desc != NULL && !job->abandoned) {
			bdev_close(job->desc);
			job->desc = NULL;
		}
	}
}

static void
barrier_nop(void *ctx)
{
}

static void
perf_stop_done(void *ctx)
{
	jobs_free();
	if (g_perf.shutdown_pending) {
		app_shutdown_continue();
	} else {
		app_stop(g_perf.rc);
	}
}

static void
perf_stop(int rc)
{
	bool abandoned = false;
	uint32_t i;

	for (i = 0; i < g_perf.num_jobs; i++) {
		abandoned |= g_perf.jobs[i]->abandoned;
	}
	poller_unregister(&g_perf.progress_poller);
	jobs_close();
	g_perf.state = PERF_DONE;
	g_perf.rc = rc;
	if (abandoned) {
		/*
		 * Some I/O never came back even after a reset. A clean shutdown
		 * would wait for that bdev's channel forever; the results are out,
		 * so leave now.
		 */
		fprintf(stderr, "bdevperf: exiting without a clean shutdown: I/O is still "
				"outstanding at the bdev\n");
		fflush(g_out);
		fflush(stdout);
		fflush(stderr);
		_exit(rc != 0 ? rc : 1);
	}
	/*
	 * A stop message (SIGINT, hot remove) may still sit in a job thread's
	 * queue behind the job's end. Messages run in order, so once a message
	 * has gone round every thread, nothing refers to the jobs any more.
	 */
	if (thread_for_each(barrier_nop, NULL, perf_stop_done) != 0) {
		WARNLOG("cannot synchronise with the reactors; not freeing the jobs\n");
		g_perf.num_jobs = 0;
		perf_stop_done(NULL);
	}
}

/* ------------------------------------------------------------ progress */

static int
progress_poll(void *ctx)
{
	uint64_t now = ticks_get(), ios = 0, failed = 0, hz = ticks_hz();
	double dt, iops, fail;
	uint32_t i;

	for (i = 0; i < g_perf.num_jobs; i++) {
		ios += __atomic_load_n(&g_perf.jobs[i]->stats.io_completed, __ATOMIC_RELAXED);
		failed += __atomic_load_n(&g_perf.jobs[i]->stats.io_failed, __ATOMIC_RELAXED);
	}
	dt = (double)(now - g_perf.progress_ticks) / (double)hz;
	if (dt <= 0) {
		return POLLER_IDLE;
	}
	iops = (double)(ios - g_perf.progress_ios) / dt;
	fail = (double)(failed - g_perf.progress_failed) / dt;
	fprintf(info_stream(), "[%8.2f s] %12.2f IOPS %10.2f MiB/s %10.2f Fail/s\n",
		(double)(now - g_perf.start_ticks) / (double)hz, iops,
		iops * (double)g_opts.io_size / (1024.0 * 1024.0), fail);
	fflush(info_stream());
	g_perf.progress_ticks = now;
	g_perf.progress_ios = ios;
	g_perf.progress_failed = failed;
	return POLLER_BUSY;
}

/* ------------------------------------------------------------ results */

static int
print_results(void)
{
	struct bdevperf_report_row *rows;
	struct bdevperf_stats total;
	struct bdevperf_job *job;
	uint32_t i;
	int rc = 0;

	rows = calloc(g_perf.num_jobs, sizeof(*rows));
	if (rows == NULL) {
		fprintf(stderr, "bdevperf: out of memory printing the results\n");
		return 1;
	}
	for (i = 0; i < g_perf.num_jobs; i++) {
		job = g_perf.jobs[i];
		rows[i].index = job->index;
		rows[i].name = job->name;
		rows[i].core = job->core;
		rows[i].workload = bdevperf_workload_name(job->workload);
		rows[i].queue_depth = job->queue_depth;
		rows[i].io_size = job->io_size;
		rows[i].verify = job->verify;
		rows[i].stats = job->stats;
	}
	if (g_opts.output == OUTPUT_JSON) {
		if (bdevperf_report_json(g_out, rows, g_perf.num_jobs, ticks_hz()) != 0) {
			fprintf(stderr, "bdevperf: cannot write the JSON results\n");
			rc = 1;
		}
	} else {
		bdevperf_report_text(g_out, rows, g_perf.num_jobs, ticks_hz());
	}
	fflush(g_out);

	bdevperf_report_total(rows, g_perf.num_jobs, &total, NULL);
	if (total.io_failed != 0 || total.io_timeout != 0 || total.verify_mismatches != 0) {
		fprintf(stderr,
			"bdevperf: run failed: %" PRIu64 " failed I/Os, %" PRIu64
			" timed-out I/Os, %" PRIu64 " verify mismatches\n",
			total.io_failed, total.io_timeout, total.verify_mismatches);
		rc = 1;
	} else if (total.io_completed == 0) {
		fprintf(stderr, "bdevperf: run failed: no I/O completed\n");
		rc = 1;
	} else if (g_perf.bdev_removed) {
		fprintf(stderr, "bdevperf: run failed: a bdev was removed during the run\n");
		rc = 1;
	}
	free(rows);
	return rc;
}

/* ------------------------------------------------------------ phases */

static void
start_teardown(void)
{
	struct bdevperf_job *job;
	uint32_t i;

	g_perf.state = PERF_TEARDOWN;
	g_perf.waiting = 0;
	for (i = 0; i < g_perf.num_jobs; i++) {
		if (g_perf.jobs[i]->state == JOB_READY) {
			g_perf.waiting++;
		}
	}
	if (g_perf.waiting == 0) {
		perf_stop(1);
		return;
	}
	for (i = 0; i < g_perf.num_jobs; i++) {
		job = g_perf.jobs[i];
		if (job->state == JOB_READY) {
			bdevperf_send(job->thread, bdevperf_job_teardown, job);
		}
	}
}

static void
start_run(void)
{
	uint32_t i;

	g_perf.state = PERF_RUNNING;
	g_perf.waiting = g_perf.num_jobs;
	if (g_opts.output == OUTPUT_TEXT) {
		printf("Running I/O for %" PRIu64 " seconds...\n", g_opts.time_s);
		fflush(stdout);
	}
	g_perf.start_ticks = ticks_get();
	g_perf.progress_ticks = g_perf.start_ticks;
	if (g_opts.period_s != 0) {
		g_perf.progress_poller = poller_register(progress_poll, NULL,
							 g_opts.period_s * 1000000ull,
							 "bdevperf_progress");
		if (g_perf.progress_poller == NULL) {
			WARNLOG("cannot register the progress poller; no -S lines\n");
		}
	}
	for (i = 0; i < g_perf.num_jobs; i++) {
		bdevperf_send(g_perf.jobs[i]->thread, bdevperf_job_run, g_perf.jobs[i]);
	}
}

static void
start_prefill(void)
{
	uint32_t i;

	g_perf.state = PERF_PREFILL;
	g_perf.waiting = g_perf.num_jobs;
	if (g_opts.output == OUTPUT_TEXT) {
		printf("Prefilling %u job%s (untimed)...\n", g_perf.num_jobs,
		       g_perf.num_jobs == 1 ? "" : "s");
		fflush(stdout);
	}
	for (i = 0; i < g_perf.num_jobs; i++) {
		bdevperf_send(g_perf.jobs[i]->thread, bdevperf_job_prefill, g_perf.jobs[i]);
	}
}

static void
stop_jobs(void)
{
	uint32_t i;

	/* No retry on a full queue: a job ends at its run time anyway. */
	for (i = 0; i < g_perf.num_jobs; i++) {
		if (thread_send_msg(g_perf.jobs[i]->thread, bdevperf_job_stop, g_perf.jobs[i]) !=
		    0) {
			WARNLOG("cannot stop job %u early\n", g_perf.jobs[i]->index);
		}
	}
}

void
bdevperf_job_reported(void *arg)
{
	struct bdevperf_job *job = arg;
	int rc;

	if (job->setup_rc != 0) {
		g_perf.setup_failed = true;
	}
	if (--g_perf.waiting > 0) {
		return;
	}
	switch (g_perf.state) {
	case PERF_SETUP:
		if (g_perf.setup_failed || g_perf.interrupted) {
			start_teardown();
		} else if (g_opts.prefill) {
			start_prefill();
		} else {
			start_run();
		}
		break;
	case PERF_PREFILL:
		/* Every job has reported: READY, or DONE after a failed prefill. */
		if (g_perf.setup_failed || g_perf.interrupted) {
			if (!g_perf.interrupted) {
				fprintf(stderr, "bdevperf: prefill failed; no run\n");
			}
			start_teardown();
		} else {
			start_run();
		}
		break;
	case PERF_RUNNING:
		rc = print_results();
		perf_stop(g_perf.setup_failed ? 1 : rc);
		break;
	case PERF_TEARDOWN:
		perf_stop(1);
		break;
	default:
		ERRLOG("unexpected job report in state %d\n", g_perf.state);
		break;
	}
}

/* ------------------------------------------------------------ building jobs */

static void
bdev_event(enum bdev_event_type type, struct bdev *bdev, void *ctx)
{
	struct bdevperf_job *job = ctx;

	if (type != BDEV_EVENT_REMOVE) {
		return;
	}
	WARNLOG("bdev %s is being removed; stopping job %u\n", bdev_get_name(bdev), job->index);
	g_perf.interrupted = true;
	g_perf.bdev_removed = true;
	if (g_perf.state == PERF_RUNNING || g_perf.state == PERF_PREFILL) {
		if (thread_send_msg(job->thread, bdevperf_job_stop, job) != 0) {
			WARNLOG("cannot stop job %u early\n", job->index);
		}
	}
}

/* The bdevs to test: those named with -b, or every unclaimed one. */
static int
collect_bdevs(struct bdev ***out, uint32_t *count)
{
	struct bdev **bdevs = NULL, **tmp, *bdev;
	uint32_t n = 0, i;

	if (g_opts.num_bdev_names > 0) {
		bdevs = calloc(g_opts.num_bdev_names, sizeof(*bdevs));
		if (bdevs == NULL) {
			return -ENOMEM;
		}
		for (i = 0; i < g_opts.num_bdev_names; i++) {
			bdevs[i] = bdev_get_by_name(g_opts.bdev_names[i]);
			if (bdevs[i] == NULL) {
				fprintf(stderr, "bdevperf: no bdev named '%s' (-b)\n",
					g_opts.bdev_names[i]);
				free(bdevs);
				return -ENODEV;
			}
		}
		n = g_opts.num_bdev_names;
	} else {
		for (bdev = bdev_first(); bdev != NULL; bdev = bdev_next(bdev)) {
			if (bdev_is_claimed(bdev)) {
				continue;
			}
			tmp = realloc(bdevs, (n + 1) * sizeof(*bdevs));
			if (tmp == NULL) {
				free(bdevs);
				return -ENOMEM;
			}
			bdevs = tmp;
			bdevs[n++] = bdev;
		}
		if (n == 0) {
			fprintf(stderr, "bdevperf: no bdevs to test (none configured, or all "
					"claimed); create some with --json CONFIG\n");
			free(bdevs);
			return -ENODEV;
		}
	}
	*out = bdevs;
	*count = n;
	return 0;
}

static int
check_bdev(struct bdev *bdev, uint32_t jobs_per_bdev)
{
	static const enum bdev_io_type types[] = {
		BDEV_IO_TYPE_READ,  BDEV_IO_TYPE_WRITE,        BDEV_IO_TYPE_FLUSH,
		BDEV_IO_TYPE_UNMAP, BDEV_IO_TYPE_WRITE_ZEROES,
	};
	const char *name = bdev_get_name(bdev);
	uint32_t block_size = bdev_get_block_size(bdev), align = bdev_get_buf_align(bdev);
	uint64_t io_blocks, ranges;
	size_t i;

	if (g_opts.io_size % block_size != 0) {
		fprintf(stderr,
			"bdevperf: bdev %s: I/O size %" PRIu64 " is not a multiple of "
			"its block size %u\n",
			name, g_opts.io_size, block_size);
		return -EINVAL;
	}
	if (align > 1 && !is_pow2(align)) {
		fprintf(stderr, "bdevperf: bdev %s: buffer alignment %u is not a power of two\n",
			name, align);
		return -EINVAL;
	}
	for (i = 0; i < ARRAY_SIZE(types); i++) {
		if (bdevperf_workload_uses(g_opts.workload, g_opts.rwmixread, types[i]) &&
		    !bdev_io_type_supported(bdev, types[i])) {
			fprintf(stderr,
				"bdevperf: bdev %s does not support %s, which workload "
				"%s needs\n",
				name, bdev_io_type_name(types[i]),
				bdevperf_workload_name(g_opts.workload));
			return -ENOTSUP;
		}
	}
	if (g_opts.prefill && !bdev_io_type_supported(bdev, BDEV_IO_TYPE_WRITE)) {
		fprintf(stderr,
			"bdevperf: bdev %s does not support write, which --prefill "
			"needs\n",
			name);
		return -ENOTSUP;
	}
	io_blocks = g_opts.io_size / block_size;
	ranges = bdev_get_num_blocks(bdev) / jobs_per_bdev / io_blocks;
	if (ranges == 0) {
		fprintf(stderr,
			"bdevperf: bdev %s: I/O size %" PRIu64 " is larger than the %" PRIu64
			" blocks each of its %u jobs gets\n",
			name, g_opts.io_size, bdev_get_num_blocks(bdev) / jobs_per_bdev,
			jobs_per_bdev);
		return -EINVAL;
	}
	if (g_opts.workload == WORKLOAD_VERIFY && ranges < g_opts.queue_depth) {
		fprintf(stderr,
			"bdevperf: bdev %s: verify keeps every outstanding I/O on its own "
			"range, but each job has only %" PRIu64 " ranges of %" PRIu64 " bytes for "
			"queue depth %u\n",
			name, ranges, g_opts.io_size, g_opts.queue_depth);
		return -EINVAL;
	}
	return 0;
}

static int
collect_reactors(struct reactor_slot **out, uint32_t *count)
{
	struct reactor_stats st;
	struct reactor_slot *slots;
	uint32_t n = reactor_count(), i;

	if (n == 0) {
		return -ENODEV;
	}
	slots = calloc(n, sizeof(*slots));
	if (slots == NULL) {
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		if (reactor_get_stats(i, &st) != 0 ||
		    (slots[i].thread = thread_get_by_id(st.thread_id)) == NULL) {
			ERRLOG("cannot find the thread of reactor %u\n", i);
			free(slots);
			return -ENODEV;
		}
		slots[i].core = st.core;
	}
	*out = slots;
	*count = n;
	return 0;
}

static struct bdevperf_job *
job_create(struct bdev *bdev, uint32_t index, const struct reactor_slot *slot, uint32_t part,
	   uint32_t parts)
{
	uint64_t hz = ticks_hz(), region_blocks, grace_ms, scan_ms;
	struct bdevperf_job *job;
	bool writes;
	int rc;

	job = calloc(1, sizeof(*job));
	if (job == NULL) {
		return NULL;
	}
	job->stats.hist = calloc(1, sizeof(*job->stats.hist));
	job->name = strdup(bdev_get_name(bdev));
	if (job->stats.hist == NULL || job->name == NULL) {
		goto out_free_job;
	}
	job->index = index;
	job->bdev = bdev;
	job->core = slot->core;
	job->thread = slot->thread;
	job->workload = g_opts.workload;
	job->random = bdevperf_workload_is_random(g_opts.workload);
	job->verify = g_opts.workload == WORKLOAD_VERIFY;
	job->mixed = g_opts.workload == WORKLOAD_RW || g_opts.workload == WORKLOAD_RANDRW;
	job->rwmixread = g_opts.rwmixread < 0 ? 0 : (uint32_t)g_opts.rwmixread;
	switch (g_opts.workload) {
	case WORKLOAD_READ:
	case WORKLOAD_RANDREAD:
		job->io_type = BDEV_IO_TYPE_READ;
		break;
	case WORKLOAD_FLUSH:
		job->io_type = BDEV_IO_TYPE_FLUSH;
		break;
	case WORKLOAD_UNMAP:
		job->io_type = BDEV_IO_TYPE_UNMAP;
		break;
	case WORKLOAD_WRITE_ZEROES:
		job->io_type = BDEV_IO_TYPE_WRITE_ZEROES;
		break;
	default:
		job->io_type = BDEV_IO_TYPE_WRITE;
		break;
	}
	job->queue_depth = g_opts.queue_depth;
	job->io_size = g_opts.io_size;
	job->block_size = bdev_get_block_size(bdev);
	job->md_size = bdev_get_md_size(bdev);
	job->buf_block_size = bdev_get_buf_block_size(bdev);
	job->buf_align = bdev_get_buf_align(bdev);
	job->io_blocks = g_opts.io_size / job->block_size;
	/* Jobs sharing a bdev (-C) get disjoint regions, so verify stays meaningful. */
	region_blocks = bdev_get_num_blocks(bdev) / parts;
	job->region_ranges = region_blocks / job->io_blocks;
	job->region_offset = region_blocks * part;
	job->rng = bdevperf_rand_seed(g_opts.seed, index);
	job->pattern = g_opts.pattern;
	job->prefill = g_opts.prefill;
	job->run_ticks = g_opts.time_s * hz;
	if (g_opts.io_timeout_ms != 0) {
		job->io_timeout_ticks = us_to_ticks(g_opts.io_timeout_ms * 1000);
		/* Look every quarter timeout, at most every 100 ms, at least every 1 ms. */
		scan_ms = GGA_MIN(GGA_MAX(g_opts.io_timeout_ms / 4, 1ull), MAX_SCAN_PERIOD_MS);
		job->scan_period_ticks = us_to_ticks(scan_ms * 1000);
	}
	grace_ms = GGA_MAX(g_opts.io_timeout_ms, MIN_GRACE_MS);
	job->grace_ticks = us_to_ticks(grace_ms * 1000);
	job->stats.lat_min_ticks = UINT64_MAX;

	writes = !bdevperf_workload_is_read_only(g_opts.workload) || g_opts.prefill;
	rc = bdev_open(job->name, writes, bdev_event, job, &job->desc);
	if (rc != 0) {
		fprintf(stderr, "bdevperf: cannot open bdev %s%s: %s\n", job->name,
			writes ? " for writing" : "",
			rc == -EPERM ? "it is claimed by another module" : strerror(-rc));
		goto out_free_job;
	}
	return job;

out_free_job:
	free(job->stats.hist);
	free(job->name);
	free(job);
	return NULL;
}

static int
build_jobs(void)
{
	struct reactor_slot *slots = NULL, *slot;
	struct bdev **bdevs = NULL;
	uint32_t num_bdevs = 0, num_slots = 0, per_bdev, b, j;
	struct bdevperf_job *job;
	int rc;

	rc = collect_bdevs(&bdevs, &num_bdevs);
	if (rc != 0) {
		return rc;
	}
	rc = collect_reactors(&slots, &num_slots);
	if (rc != 0) {
		goto out_free_arrays;
	}
	per_bdev = g_opts.every_core ? num_slots : 1;
	for (b = 0; b < num_bdevs; b++) {
		rc = check_bdev(bdevs[b], per_bdev);
		if (rc != 0) {
			goto out_free_arrays;
		}
	}
	g_perf.jobs = calloc((size_t)num_bdevs * per_bdev, sizeof(*g_perf.jobs));
	if (g_perf.jobs == NULL) {
		rc = -ENOMEM;
		goto out_free_arrays;
	}
	for (b = 0; b < num_bdevs; b++) {
		for (j = 0; j < per_bdev; j++) {
			/* One job per bdev: cores round robin. -C: every core, bdev split. */
			slot = &slots[g_opts.every_core ? j : b % num_slots];
			job = job_create(bdevs[b], g_perf.num_jobs, slot, j, per_bdev);
			if (job == NULL) {
				rc = -ENOMEM;
				goto out_free_arrays;
			}
			g_perf.jobs[g_perf.num_jobs++] = job;
		}
	}
out_free_arrays:
	free(slots);
	free(bdevs);
	return rc;
}

static void
bdevperf_start(void *ctx)
{
	uint32_t i;

	if (build_jobs() != 0) {
		jobs_close();
		jobs_free();
		g_perf.state = PERF_DONE;
		g_perf.rc = 1;
		app_stop(1);
		return;
	}
	g_perf.state = PERF_SETUP;
	g_perf.waiting = g_perf.num_jobs;
	for (i = 0; i < g_perf.num_jobs; i++) {
		bdevperf_send(g_perf.jobs[i]->thread, bdevperf_job_setup, g_perf.jobs[i]);
	}
}

/* SIGINT/SIGTERM, or our own app_stop(): stop the jobs first, print what we have. */
static void
bdevperf_shutdown(void *ctx)
{
	switch (g_perf.state) {
	case PERF_INIT:
	case PERF_DONE:
		app_shutdown_continue();
		return;
	case PERF_SETUP:
	case PERF_TEARDOWN:
		g_perf.interrupted = true;
		g_perf.shutdown_pending = true;
		return;
	case PERF_PREFILL:
	case PERF_RUNNING:
		if (!g_perf.shutdown_pending) {
			fprintf(stderr, "bdevperf: interrupted; stopping the jobs\n");
		}
		g_perf.interrupted = true;
		g_perf.shutdown_pending = true;
		stop_jobs();
		return;
	}
}

int
main(int argc, char **argv)
{
	struct app_opts opts;
	int rc;

	app_opts_init(&opts, "bdevperf");
	/* bdevperf serves RPC only when asked to with -r. */
	opts.rpc_addr = NULL;
	bdevperf_opts_init(&g_opts);
	rc = app_parse_args(argc, argv, &opts, BDEVPERF_GETOPT, bdevperf_long_opts, parse_cb,
			    usage_cb);
	if (rc != 0 || bdevperf_opts_validate(&g_opts) != 0) {
		bdevperf_opts_free(&g_opts);
		return rc == 1 ? 0 : 1;
	}
	g_out = stdout;
	if (g_opts.output == OUTPUT_JSON) {
		if (json_stdout_open() != 0) {
			fprintf(stderr, "bdevperf: cannot set up stdout for --output json\n");
			bdevperf_opts_free(&g_opts);
			return 1;
		}
		/* Only warnings and errors beside the JSON, unless asked for more. */
		if (!arg_given(argc, argv, "--log-level")) {
			log_set_level(LOG_LEVEL_WARN);
		}
	}
	opts.start_fn = bdevperf_start;
	opts.shutdown_fn = bdevperf_shutdown;
	bdev_modules_register_all();
	rc = app_start(&opts);
	if (rc == 0 && g_perf.rc != 0) {
		rc = g_perf.rc;
	}
	if (g_perf.state != PERF_DONE && rc == 0) {
		/* The app stopped before the run finished (say, the config failed). */
		rc = 1;
	}
	if (g_out != stdout) {
		fclose(g_out);
	}
	bdevperf_opts_free(&g_opts);
	return rc;
}
