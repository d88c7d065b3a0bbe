/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One bdevperf job: queue_depth tasks driving one bdev from one reactor
 * thread. Every completion records its latency and resubmits the task at
 * once, so the queue stays full; the I/O path does no allocation and reads
 * the clock once per I/O (the completion time doubles as the next submit
 * time).
 *
 * Life cycle on the job thread: setup (channel, buffers) → run (submit all
 * tasks; a 1 ms housekeeping poller ends the run and scans for timeouts) →
 * drain (no new I/O; wait for the outstanding, at most the grace time) →
 * if still outstanding, count them as timeouts and bdev_reset() to abort them →
 * finish (put the channel, free buffers, report to the app thread).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gga/bdev.h"
#include "gga/env.h"
#include "gga/log.h"
#include "gga/thread.h"
#include "gga/util.h"

#include "bdevperf_internal.h"

#define HOUSEKEEPING_PERIOD_US 1000
/* How long the aborts of a reset may take before the job gives up on them. */
#define RESET_WAIT_S           5
#define MAX_MISMATCH_LOGS      8

static void task_issue(struct bdevperf_task *task);
static void task_retry(void *arg);

/* Counters the app thread samples for -S lines: single writer, relaxed atomics. */
static inline void
counter_inc(uint64_t *c)
{
	__atomic_store_n(c, *c + 1, __ATOMIC_RELAXED);
}

struct send_retry {
	struct thread *thread;
	msg_fn fn;
	void *arg;
	struct poller *poller;
};

static int
send_retry_poll(void *ctx)
{
	struct send_retry *r = ctx;

	if (thread_send_msg(r->thread, r->fn, r->arg) != 0) {
		return POLLER_IDLE;
	}
	poller_unregister(&r->poller);
	free(r);
	return POLLER_BUSY;
}

/*
 * Send a message that must arrive: a full queue (-ENOMEM) is retried every
 * millisecond from a poller on the calling thread.
 */
void
bdevperf_send(struct thread *thread, msg_fn fn, void *arg)
{
	struct send_retry *r;

	if (thread_send_msg(thread, fn, arg) == 0) {
		return;
	}
	r = calloc(1, sizeof(*r));
	if (r != NULL) {
		r->thread = thread;
		r->fn = fn;
		r->arg = arg;
		r->poller = poller_register(send_retry_poll, r, 1000, "bdevperf_send_retry");
		if (r->poller != NULL) {
			return;
		}
		free(r);
	}
	ERRLOG("cannot send a message to thread %s: out of memory\n", thread_get_name(thread));
}

static void
report_to_app(struct bdevperf_job *job)
{
	bdevperf_send(thread_get_app(), bdevperf_job_reported, job);
}

static inline void
busy_set(uint64_t *bits, uint64_t i)
{
	bits[i >> 6] |= 1ull << (i & 63);
}

static inline void
busy_clear(uint64_t *bits, uint64_t i)
{
	bits[i >> 6] &= ~(1ull << (i & 63));
}

static inline bool
busy_test(const uint64_t *bits, uint64_t i)
{
	return (bits[i >> 6] >> (i & 63)) & 1;
}

static void
job_free_resources(struct bdevperf_job *job)
{
	free(job->tasks);
	job->tasks = NULL;
	if (job->buf_slab != NULL) {
		env_dma_free(job->buf_slab);
		job->buf_slab = NULL;
	}
	if (job->rbuf_slab != NULL) {
		env_dma_free(job->rbuf_slab);
		job->rbuf_slab = NULL;
	}
	free(job->pattern_buf);
	job->pattern_buf = NULL;
	free(job->busy);
	job->busy = NULL;
	if (job->ch != NULL) {
		io_channel_put(job->ch);
		job->ch = NULL;
	}
}

static bool
workload_has_data(enum bdevperf_workload w)
{
	return w != WORKLOAD_FLUSH && w != WORKLOAD_UNMAP && w != WORKLOAD_WRITE_ZEROES;
}

static void *
dma_slab(struct bdevperf_job *job, size_t stride, const char *what)
{
	size_t align = GGA_MAX(job->buf_align, (uint32_t)GGA_CACHE_LINE);
	size_t len = stride * job->queue_depth;
	void *p = env_dma_malloc(len, align);

	if (p == NULL) {
		ERRLOG("job %u (%s): cannot allocate %zu bytes of %s buffers (queue depth %u x "
		       "%zu bytes); lower -q or -o, or raise --mem-size\n",
		       job->index, job->name, len, what, job->queue_depth, stride);
	}
	return p;
}

static int
job_alloc(struct bdevperf_job *job)
{
	size_t buf_len = job->io_blocks * job->buf_block_size;
	size_t align = GGA_MAX(job->buf_align, (uint32_t)GGA_CACHE_LINE);
	size_t stride = align_up(buf_len, align);
	uint64_t fill_rng = bdevperf_rand_seed(job->rng, 0x70617474ull);
	uint32_t i;

	job->ch = bdev_get_io_channel(job->desc);
	if (job->ch == NULL) {
		ERRLOG("job %u (%s): cannot get an I/O channel on core %u\n", job->index, job->name,
		       job->core);
		return -ENOMEM;
	}
	job->tasks = calloc(job->queue_depth, sizeof(*job->tasks));
	if (job->tasks == NULL) {
		ERRLOG("job %u (%s): out of memory\n", job->index, job->name);
		goto out_free_resources;
	}
	if (workload_has_data(job->workload) || job->prefill) {
		job->buf_slab = dma_slab(job, stride, "I/O");
		if (job->buf_slab == NULL) {
			goto out_free_resources;
		}
		/*
		 * Fill (and so fault in) every buffer now rather than during the
		 * run. Write workloads keep this data: each task's buffer holds a
		 * different stretch of the pattern.
		 */
		bdevperf_pattern_fill(&job->pattern, &fill_rng, job->buf_slab,
				      stride * job->queue_depth);
	}
	if (job->verify || job->mixed) {
		/*
		 * Reads land apart from the write data: verify compares the two,
		 * and rw/randrw must keep writing the pattern, not what it read.
		 */
		job->rbuf_slab = dma_slab(job, stride, "read");
		if (job->rbuf_slab == NULL) {
			goto out_free_resources;
		}
		memset(job->rbuf_slab, 0, stride * job->queue_depth);
	}
	if (job->verify) {
		job->pattern_buf = malloc(
			bdevperf_pattern_alloc_len(job->block_size, job->md_size));
		job->busy = calloc((job->region_ranges + 63) / 64, sizeof(uint64_t));
		if (job->pattern_buf == NULL || job->busy == NULL) {
			ERRLOG("job %u (%s): out of memory\n", job->index, job->name);
			goto out_free_resources;
		}
		bdevperf_pattern_fill_source(&job->pattern, &fill_rng, job->pattern_buf,
					     bdevperf_pattern_alloc_len(job->block_size,
									job->md_size));
	}
	for (i = 0; i < job->queue_depth; i++) {
		struct bdevperf_task *task = &job->tasks[i];

		task->job = job;
		if (job->buf_slab != NULL) {
			task->buf = job->buf_slab + (size_t)i * stride;
		}
		task->rbuf = task->buf;
		if (job->rbuf_slab != NULL) {
			task->rbuf = job->rbuf_slab + (size_t)i * stride;
		}
		task->io_type = job->io_type;
	}
	return 0;

out_free_resources:
	job_free_resources(job);
	return -ENOMEM;
}

void
bdevperf_job_setup(void *arg)
{
	struct bdevperf_job *job = arg;

	job->setup_rc = job_alloc(job);
	if (job->setup_rc == 0) {
		job->state = JOB_READY;
	}
	report_to_app(job);
}

void
bdevperf_job_teardown(void *arg)
{
	struct bdevperf_job *job = arg;

	job_free_resources(job);
	job->state = JOB_DONE;
	report_to_app(job);
}

static inline void
record_latency(struct bdevperf_job *job, uint64_t lat)
{
	struct bdevperf_stats *s = &job->stats;

	counter_inc(&s->io_completed);
	s->lat_total_ticks += lat;
	if (unlikely(lat < s->lat_min_ticks)) {
		s->lat_min_ticks = lat;
	}
	if (unlikely(lat > s->lat_max_ticks)) {
		s->lat_max_ticks = lat;
	}
	bdevperf_histogram_record(s->hist, lat);
}

/* Verify: the next free range after the cursor (region_ranges >= queue depth). */
static uint64_t
verify_pick_range(struct bdevperf_job *job)
{
	uint64_t range;

	do {
		range = job->next_range;
		if (++job->next_range == job->region_ranges) {
			job->next_range = 0;
		}
	} while (busy_test(job->busy, range));
	busy_set(job->busy, range);
	return range;
}

/* Choose the next operation for a task and submit it. */
static inline void
task_start(struct bdevperf_task *task, uint64_t now)
{
	struct bdevperf_job *job = task->job;
	uint64_t range;

	task->submit_ticks = now;
	task->timed_out = false;
	if (unlikely(job->verify)) {
		range = verify_pick_range(job);
		task->range = range;
		task->offset_blocks = job->region_offset + range * job->io_blocks;
		task->seq = ++job->seq;
		task->verify_read = false;
		task->io_type = BDEV_IO_TYPE_WRITE;
		bdevperf_verify_fill(task->buf, task->offset_blocks, job->io_blocks, task->seq,
				     job->block_size, job->md_size, job->pattern_buf);
		task_issue(task);
		return;
	}
	if (job->random) {
		range = bdevperf_rand_below(&job->rng, job->region_ranges);
	} else {
		range = job->next_range;
		if (++job->next_range == job->region_ranges) {
			job->next_range = 0;
		}
	}
	task->offset_blocks = job->region_offset + range * job->io_blocks;
	if (job->mixed) {
		task->io_type = bdevperf_rand_below(&job->rng, 100) < job->rwmixread ?
					BDEV_IO_TYPE_READ :
					BDEV_IO_TYPE_WRITE;
	}
	task_issue(task);
}

static void task_complete(struct bdev_io *io, bool success, void *cb_arg);

static void
job_begin_drain(struct bdevperf_job *job, uint64_t now)
{
	if (job->state != JOB_RUNNING) {
		return;
	}
	job->state = JOB_DRAINING;
	job->end_ticks = now;
	job->stats.runtime_ticks = now - job->start_ticks;
	job->deadline_ticks = now + job->grace_ticks;
}

/* A task that will not be resubmitted. */
static void
task_retire(struct bdevperf_task *task)
{
	struct bdevperf_job *job = task->job;

	if (job->verify) {
		busy_clear(job->busy, task->range);
	}
	task->state = TASK_IDLE;
	job->outstanding--;
}

static void __attribute__((cold)) task_submit_failed(struct bdevperf_task *task, int rc)
{
	struct bdevperf_job *job = task->job;

	if (rc == -ENOMEM) {
		task->wait.bdev = job->bdev;
		task->wait.cb_fn = task_retry;
		task->wait.cb_arg = task;
		task->state = TASK_WAITING;
		if (bdev_queue_io_wait(job->bdev, job->ch, &task->wait) == 0) {
			return;
		}
		/* A bdev_io is free again already: retry from a message, not recursively. */
		if (thread_send_msg(job->thread, task_retry, task) == 0) {
			return;
		}
	}
	if (!job->submit_error_logged) {
		job->submit_error_logged = true;
		ERRLOG("job %u (%s): %s of %" PRIu64 " blocks at lba %" PRIu64 " could not be "
		       "submitted: %s; stopping the job\n",
		       job->index, job->name, bdev_io_type_name(task->io_type), job->io_blocks,
		       task->offset_blocks, strerror(-rc));
	}
	counter_inc(&job->stats.io_failed);
	task_retire(task);
	job_begin_drain(job, ticks_get());
}

static void
task_issue(struct bdevperf_task *task)
{
	struct bdevperf_job *job = task->job;
	int rc;

	switch (task->io_type) {
	case BDEV_IO_TYPE_READ:
		rc = bdev_read_blocks(job->desc, job->ch, task->rbuf, task->offset_blocks,
				      job->io_blocks, task_complete, task);
		break;
	case BDEV_IO_TYPE_WRITE:
		rc = bdev_write_blocks(job->desc, job->ch, task->buf, task->offset_blocks,
				       job->io_blocks, task_complete, task);
		break;
	case BDEV_IO_TYPE_FLUSH:
		rc = bdev_flush_blocks(job->desc, job->ch, task->offset_blocks, job->io_blocks,
				       task_complete, task);
		break;
	case BDEV_IO_TYPE_UNMAP:
		rc = bdev_unmap_blocks(job->desc, job->ch, task->offset_blocks, job->io_blocks,
				       task_complete, task);
		break;
	case BDEV_IO_TYPE_WRITE_ZEROES:
		rc = bdev_write_zeroes_blocks(job->desc, job->ch, task->offset_blocks,
					      job->io_blocks, task_complete, task);
		break;
	default:
		rc = -EINVAL;
		break;
	}
	if (likely(rc == 0)) {
		task->state = TASK_SUBMITTED;
		return;
	}
	task_submit_failed(task, rc);
}

static void
task_retry(void *arg)
{
	struct bdevperf_task *task = arg;

	if (task->job->state != JOB_RUNNING && !task->verify_read) {
		/* The run is over; an I/O that never started need not be issued. */
		task_retire(task);
		return;
	}
	task_issue(task);
}

/*
 * An I/O that failed after being outstanding for longer than the end-of-run
 * grace was aborted by a reset (ours or, with -C, another job's on the same
 * bdev): it timed out rather than failed.
 */
static void __attribute__((cold))
count_failure(struct bdevperf_job *job, struct bdevperf_task *task, uint64_t now)
{
	if (now - task->submit_ticks >= job->grace_ticks) {
		task->timed_out = true;
		counter_inc(&job->stats.io_timeout);
	} else {
		counter_inc(&job->stats.io_failed);
	}
}

static void
log_mismatch(struct bdevperf_job *job, struct bdevperf_task *task, uint64_t bad, uint64_t blk,
	     uint32_t off)
{
	const uint8_t *e = task->buf + blk * job->buf_block_size + off;
	const uint8_t *a = task->rbuf + blk * job->buf_block_size + off;
	uint32_t n = GGA_MIN(16u, job->buf_block_size - off), i;
	char ehex[3 * 16 + 1] = "", ahex[3 * 16 + 1] = "";

	if (job->mismatch_logs >= MAX_MISMATCH_LOGS) {
		return;
	}
	for (i = 0; i < n; i++) {
		snprintf(ehex + 3 * i, 4, " %02x", e[i]);
		snprintf(ahex + 3 * i, 4, " %02x", a[i]);
	}
	ERRLOG("job %u (%s): verify mismatch in %" PRIu64 " of %" PRIu64 " blocks read at lba "
	       "%" PRIu64 "; first at lba %" PRIu64 " byte %u%s (write seq %" PRIu64 "): "
	       "expected%s, read%s\n",
	       job->index, job->name, bad, job->io_blocks, task->offset_blocks,
	       task->offset_blocks + blk, off, off >= job->block_size ? " (metadata)" : "",
	       task->seq, ehex, ahex);
	if (++job->mismatch_logs == MAX_MISMATCH_LOGS) {
		ERRLOG("job %u (%s): further verify mismatches are counted but not logged\n",
		       job->index, job->name);
	}
}

/*
 * Verify completions. Returns true if the task went on to its read-back, so
 * there is nothing more to do with it now.
 */
static bool __attribute__((noinline))
verify_complete(struct bdevperf_job *job, struct bdevperf_task *task, bool success, uint64_t now)
{
	uint64_t bad, blk = 0;
	uint32_t off = 0;

	if (!task->verify_read) {
		if (success && !task->timed_out && job->state == JOB_RUNNING) {
			task->verify_read = true;
			task->io_type = BDEV_IO_TYPE_READ;
			task_issue(task);
			return true;
		}
	} else if (success && !task->timed_out) {
		bad = bdevperf_verify_compare(task->buf, task->rbuf, job->io_blocks,
					      job->buf_block_size, &blk, &off);
		job->stats.verify_blocks += job->io_blocks;
		if (unlikely(bad != 0)) {
			job->stats.verify_mismatches += bad;
			log_mismatch(job, task, bad, blk, off);
		}
		if (job->state == JOB_RUNNING) {
			record_latency(job, now - task->submit_ticks);
		}
	}
	if (!success && !task->timed_out) {
		count_failure(job, task, now);
	}
	busy_clear(job->busy, task->range);
	return false;
}

static void
task_complete(struct bdev_io *io, bool success, void *cb_arg)
{
	struct bdevperf_task *task = cb_arg;
	struct bdevperf_job *job = task->job;
	uint64_t now = ticks_get();

	bdev_free_io(io);
	if (unlikely(job->verify)) {
		if (verify_complete(job, task, success, now)) {
			return;
		}
	} else if (likely(success && !task->timed_out)) {
		if (likely(job->state == JOB_RUNNING)) {
			record_latency(job, now - task->submit_ticks);
		}
	} else if (!task->timed_out) {
		count_failure(job, task, now);
	}
	if (likely(job->state == JOB_RUNNING)) {
		task_start(task, now);
		return;
	}
	/* verify_complete() already released the range. */
	task->state = TASK_IDLE;
	job->outstanding--;
}

static void
scan_timeouts(struct bdevperf_job *job, uint64_t now)
{
	struct bdevperf_task *task;
	uint32_t i;

	for (i = 0; i < job->queue_depth; i++) {
		task = &job->tasks[i];
		if (task->state != TASK_SUBMITTED || task->timed_out ||
		    now - task->submit_ticks < job->io_timeout_ticks) {
			continue;
		}
		task->timed_out = true;
		if (job->stats.io_timeout == 0) {
			WARNLOG("job %u (%s): %s at lba %" PRIu64 " outstanding for more than "
				"--io-timeout; counting it (and any more) as timed out\n",
				job->index, job->name, bdev_io_type_name(task->io_type),
				task->offset_blocks);
		}
		counter_inc(&job->stats.io_timeout);
	}
}

static void
reset_done(struct bdev_io *io, bool success, void *cb_arg)
{
	struct bdevperf_job *job = cb_arg;

	bdev_free_io(io);
	job->reset_outstanding = false;
	if (!success) {
		ERRLOG("job %u (%s): bdev reset failed\n", job->index, job->name);
	}
}

static void
reset_submit(void *arg)
{
	struct bdevperf_job *job = arg;
	int rc;

	job->reset_waiting = false;
	rc = bdev_reset(job->desc, job->ch, reset_done, job);
	if (rc == 0) {
		job->reset_outstanding = true;
		return;
	}
	if (rc == -ENOMEM) {
		job->reset_wait.bdev = job->bdev;
		job->reset_wait.cb_fn = reset_submit;
		job->reset_wait.cb_arg = job;
		if (bdev_queue_io_wait(job->bdev, job->ch, &job->reset_wait) == 0) {
			job->reset_waiting = true;
			return;
		}
		/* A bdev_io is available now: the next housekeeping tick tries again. */
		job->reset_retry = true;
		return;
	}
	ERRLOG("job %u (%s): cannot reset the bdev: %s\n", job->index, job->name, strerror(-rc));
}

/* The grace time is over: what is still outstanding has timed out. Abort it. */
static void
job_begin_reset(struct bdevperf_job *job, uint64_t now)
{
	uint32_t i, n = 0;

	for (i = 0; i < job->queue_depth; i++) {
		struct bdevperf_task *task = &job->tasks[i];

		if (task->state != TASK_IDLE && !task->timed_out) {
			task->timed_out = true;
			counter_inc(&job->stats.io_timeout);
			n++;
		}
	}
	ERRLOG("job %u (%s): %u I/Os still outstanding %.1f s after the end of the run "
	       "(%u counted as timed out now); resetting the bdev to abort them\n",
	       job->index, job->name, job->outstanding,
	       (double)(now - job->end_ticks) / (double)ticks_hz(), n);
	job->state = JOB_RESETTING;
	job->deadline_ticks = now + RESET_WAIT_S * ticks_hz();
	reset_submit(job);
}

static void
job_finish(struct bdevperf_job *job)
{
	poller_unregister(&job->poller);
	job->state = JOB_DONE;
	if (job->outstanding > 0 || job->reset_outstanding || job->reset_waiting) {
		/*
		 * The bdev still owns some of our buffers (or queue entries). Leak
		 * them rather than free memory it may yet write to; the app thread
		 * sees `abandoned` and exits without the clean shutdown that would
		 * wait for this channel forever.
		 */
		ERRLOG("job %u (%s): %u I/Os did not complete even after the reset; abandoning "
		       "them\n",
		       job->index, job->name, job->outstanding);
		job->abandoned = true;
	} else {
		job_free_resources(job);
	}
	report_to_app(job);
}

static void prefill_check_timeouts(struct bdevperf_job *job, uint64_t now);

static int
job_poll(void *ctx)
{
	struct bdevperf_job *job = ctx;
	uint64_t now = ticks_get();

	if (unlikely(job->state == JOB_PREFILLING)) {
		if (job->io_timeout_ticks != 0 && now >= job->next_scan_ticks) {
			prefill_check_timeouts(job, now);
			job->next_scan_ticks = now + job->scan_period_ticks;
		}
		if (job->state == JOB_PREFILLING) {
			return POLLER_IDLE;
		}
	}
	if (job->state == JOB_RUNNING) {
		if (now - job->start_ticks >= job->run_ticks) {
			job_begin_drain(job, now);
		} else if (job->io_timeout_ticks != 0 && now >= job->next_scan_ticks) {
			scan_timeouts(job, now);
			job->next_scan_ticks = now + job->scan_period_ticks;
		}
		if (job->state == JOB_RUNNING) {
			return POLLER_IDLE;
		}
	}
	if (job->io_timeout_ticks != 0 && now >= job->next_scan_ticks) {
		scan_timeouts(job, now);
		job->next_scan_ticks = now + job->scan_period_ticks;
	}
	if (job->outstanding == 0 && !job->reset_outstanding && !job->reset_waiting) {
		job_finish(job);
		return POLLER_BUSY;
	}
	if (job->state == JOB_DRAINING && now >= job->deadline_ticks) {
		job_begin_reset(job, now);
	} else if (job->state == JOB_RESETTING) {
		if (job->reset_retry) {
			job->reset_retry = false;
			reset_submit(job);
		}
		if (now >= job->deadline_ticks) {
			job_finish(job);
			return POLLER_BUSY;
		}
	}
	return POLLER_IDLE;
}

/* ------------------------------------------------------------ prefill */

static void prefill_complete(struct bdev_io *io, bool success, void *cb_arg);
static void prefill_retry(void *arg);

/*
 * The prefill cannot go on (a write failed, the job was stopped, a write
 * timed out): stop submitting and end like a run does, draining what is
 * outstanding and resetting the bdev if that takes longer than the grace.
 * job_poll() then finishes the job, which reports it DONE.
 */
static void
prefill_abort(struct bdevperf_job *job, int rc, uint64_t now)
{
	if (job->state != JOB_PREFILLING) {
		return;
	}
	job->setup_rc = rc;
	job->state = JOB_DRAINING;
	job->end_ticks = now;
	job->deadline_ticks = now + job->grace_ticks;
}

static void
prefill_retire(struct bdevperf_task *task)
{
	struct bdevperf_job *job = task->job;
	uint32_t i;

	task->state = TASK_IDLE;
	job->outstanding--;
	if (job->outstanding == 0 && job->state == JOB_PREFILLING) {
		/* Every range is written: back to READY for the run. */
		poller_unregister(&job->poller);
		for (i = 0; i < job->queue_depth; i++) {
			job->tasks[i].io_type = job->io_type;
		}
		job->next_range = 0;
		job->state = JOB_READY;
		report_to_app(job);
	}
}

static void
prefill_issue(struct bdevperf_task *task)
{
	struct bdevperf_job *job = task->job;
	int rc;

	rc = bdev_write_blocks(job->desc, job->ch, task->buf, task->offset_blocks, job->io_blocks,
			       prefill_complete, task);
	if (rc == 0) {
		task->state = TASK_SUBMITTED;
		return;
	}
	if (rc == -ENOMEM) {
		task->wait.bdev = job->bdev;
		task->wait.cb_fn = prefill_retry;
		task->wait.cb_arg = task;
		task->state = TASK_WAITING;
		if (bdev_queue_io_wait(job->bdev, job->ch, &task->wait) == 0) {
			return;
		}
		/* A bdev_io is free again already: retry from a message, not recursively. */
		if (thread_send_msg(job->thread, prefill_retry, task) == 0) {
			return;
		}
	}
	ERRLOG("job %u (%s): prefill write of %" PRIu64 " blocks at lba %" PRIu64 " could not "
	       "be submitted: %s\n",
	       job->index, job->name, job->io_blocks, task->offset_blocks, strerror(-rc));
	prefill_abort(job, rc, ticks_get());
	prefill_retire(task);
}

static void
prefill_retry(void *arg)
{
	struct bdevperf_task *task = arg;

	if (task->job->state != JOB_PREFILLING) {
		prefill_retire(task);
		return;
	}
	prefill_issue(task);
}

/* Give the task the next range of the region, or retire it if none is left. */
static void
prefill_next(struct bdevperf_task *task, uint64_t now)
{
	struct bdevperf_job *job = task->job;

	if (job->state != JOB_PREFILLING || job->next_range == job->region_ranges) {
		prefill_retire(task);
		return;
	}
	task->range = job->next_range++;
	task->offset_blocks = job->region_offset + task->range * job->io_blocks;
	task->submit_ticks = now;
	task->io_type = BDEV_IO_TYPE_WRITE;
	if (job->verify) {
		/* The verify pattern, so what the run reads back is what verify writes. */
		task->seq = ++job->seq;
		bdevperf_verify_fill(task->buf, task->offset_blocks, job->io_blocks, task->seq,
				     job->block_size, job->md_size, job->pattern_buf);
	}
	prefill_issue(task);
}

static void
prefill_complete(struct bdev_io *io, bool success, void *cb_arg)
{
	struct bdevperf_task *task = cb_arg;
	struct bdevperf_job *job = task->job;
	uint64_t now = ticks_get();

	bdev_free_io(io);
	if (unlikely(!success) && job->state == JOB_PREFILLING) {
		ERRLOG("job %u (%s): prefill write of %" PRIu64 " blocks at lba %" PRIu64
		       " failed\n",
		       job->index, job->name, job->io_blocks, task->offset_blocks);
		prefill_abort(job, -EIO, now);
	}
	prefill_next(task, now);
}

static void
prefill_check_timeouts(struct bdevperf_job *job, uint64_t now)
{
	uint32_t i;

	for (i = 0; i < job->queue_depth; i++) {
		struct bdevperf_task *task = &job->tasks[i];

		if (task->state == TASK_SUBMITTED &&
		    now - task->submit_ticks >= job->io_timeout_ticks) {
			ERRLOG("job %u (%s): prefill write at lba %" PRIu64 " outstanding for "
			       "more than --io-timeout\n",
			       job->index, job->name, task->offset_blocks);
			prefill_abort(job, -ETIMEDOUT, now);
			return;
		}
	}
}

void
bdevperf_job_prefill(void *arg)
{
	struct bdevperf_job *job = arg;
	uint64_t now;
	uint32_t i;

	job->poller = poller_register(job_poll, job, HOUSEKEEPING_PERIOD_US, "bdevperf_job");
	if (job->poller == NULL) {
		ERRLOG("job %u (%s): cannot register its poller\n", job->index, job->name);
		job->setup_rc = -ENOMEM;
		report_to_app(job);
		return;
	}
	now = ticks_get();
	job->state = JOB_PREFILLING;
	job->next_range = 0;
	job->next_scan_ticks = now + job->scan_period_ticks;
	/* Count them all first: a write that fails at once must not end the prefill early. */
	job->outstanding = GGA_MIN((uint64_t)job->queue_depth, job->region_ranges);
	for (i = 0; i < job->outstanding; i++) {
		job->tasks[i].state = TASK_SUBMITTED;
	}
	for (i = 0; i < GGA_MIN((uint64_t)job->queue_depth, job->region_ranges); i++) {
		prefill_next(&job->tasks[i], now);
	}
}

/* ------------------------------------------------------------ run */

void
bdevperf_job_run(void *arg)
{
	struct bdevperf_job *job = arg;
	uint64_t now;
	uint32_t i;

	job->poller = poller_register(job_poll, job, HOUSEKEEPING_PERIOD_US, "bdevperf_job");
	if (job->poller == NULL) {
		ERRLOG("job %u (%s): cannot register its poller\n", job->index, job->name);
		job->setup_rc = -ENOMEM;
		job_free_resources(job);
		job->state = JOB_DONE;
		report_to_app(job);
		return;
	}
	now = ticks_get();
	job->state = JOB_RUNNING;
	job->start_ticks = now;
	job->next_scan_ticks = now + job->scan_period_ticks;
	for (i = 0; i < job->queue_depth && job->state == JOB_RUNNING; i++) {
		job->outstanding++;
		task_start(&job->tasks[i], now);
	}
}

void
bdevperf_job_stop(void *arg)
{
	struct bdevperf_job *job = arg;

	if (job->state == JOB_PREFILLING) {
		prefill_abort(job, -ECANCELED, ticks_get());
		return;
	}
	job_begin_drain(job, ticks_get());
}
