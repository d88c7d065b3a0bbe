/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bdevperf internals shared by its source files:
 *
 *   bdevperf.c            main(), job construction and the app-thread side of a run
 *   bdevperf_opts.c       command-line options: parsing and validation (pure)
 *   bdevperf_job.c        one job's I/O engine, run on its reactor's thread
 *   bdevperf_pattern.c    PRNG, write-data patterns, verify block fill and compare (pure)
 *   bdevperf_histogram.c  log-linear latency histogram (pure)
 *   bdevperf_report.c     the results table and the JSON form (pure)
 */
#ifndef BDEVPERF_INTERNAL_H
#define BDEVPERF_INTERNAL_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gga/bdev.h"
#include "gga/util.h"

/* ---------------------------------------------------------------- options */

enum bdevperf_workload {
	WORKLOAD_NONE = 0,
	WORKLOAD_READ,
	WORKLOAD_WRITE,
	WORKLOAD_RANDREAD,
	WORKLOAD_RANDWRITE,
	WORKLOAD_RW,
	WORKLOAD_RANDRW,
	WORKLOAD_VERIFY,
	WORKLOAD_FLUSH,
	WORKLOAD_UNMAP,
	WORKLOAD_WRITE_ZEROES,
};

enum bdevperf_output {
	OUTPUT_TEXT = 0,
	OUTPUT_JSON,
};

enum bdevperf_pattern_type {
	PATTERN_RANDOM = 0,
	PATTERN_ZEROS,
	PATTERN_COMPRESS,
};

struct bdevperf_pattern {
	enum bdevperf_pattern_type type;
	/* PATTERN_COMPRESS: target LZ4-compressed size in percent, 1..100. */
	uint32_t compress_pct;
};

#define BDEVPERF_MAX_QUEUE_DEPTH   4096u
#define BDEVPERF_MAX_IO_SIZE       (1ull << 30)
#define BDEVPERF_MAX_TIME_S        (366ull * 24 * 3600)
#define BDEVPERF_MAX_IO_TIMEOUT_MS (3600ull * 1000)
#define BDEVPERF_MAX_BDEV_NAMES    1024u

/* Long-option values (app_parse_args wants them >= 0x1000). */
enum {
	OPT_OUTPUT = 0x1000,
	OPT_PATTERN,
	OPT_IO_TIMEOUT,
	OPT_SEED,
	OPT_PREFILL,
};

#define BDEVPERF_GETOPT "q:o:w:t:M:S:b:C"

struct bdevperf_opts {
	uint32_t queue_depth; /* 0: not given */
	uint64_t io_size;     /* bytes; 0: not given */
	enum bdevperf_workload workload;
	uint64_t time_s;   /* 0: not given */
	int rwmixread;     /* -1: not given */
	uint64_t period_s; /* -S; 0: no progress lines */
	char **bdev_names; /* -b, in the order given */
	uint32_t num_bdev_names;
	bool every_core; /* -C */
	enum bdevperf_output output;
	struct bdevperf_pattern pattern;
	uint64_t io_timeout_ms; /* 0: no I/O timeout */
	uint64_t seed;
	bool prefill; /* --prefill: write each job's range before the run */
};

extern const struct option bdevperf_long_opts[];

void bdevperf_opts_init(struct bdevperf_opts *opts);
void bdevperf_opts_free(struct bdevperf_opts *opts);
/* One option as app_parse_args hands it over. Returns 0 or -EINVAL (message printed). */
int bdevperf_opts_parse(struct bdevperf_opts *opts, int ch, const char *arg);
/* Cross-option checks after parsing. Returns 0 or -EINVAL (message printed). */
int bdevperf_opts_validate(const struct bdevperf_opts *opts);
void bdevperf_opts_usage(FILE *f);

const char *bdevperf_workload_name(enum bdevperf_workload w);
enum bdevperf_workload bdevperf_workload_from_name(const char *name);
bool bdevperf_workload_is_random(enum bdevperf_workload w);
/* True if the workload never writes (the bdev is then opened read-only). */
bool bdevperf_workload_is_read_only(enum bdevperf_workload w);
/* The bdev I/O types a workload issues, for the io_type_supported check. */
bool bdevperf_workload_uses(enum bdevperf_workload w, int rwmixread, enum bdev_io_type type);

/* ---------------------------------------------------------------- PRNG */

/* splitmix64: turns any seed (0 included) into a well-mixed state. */
static inline uint64_t
bdevperf_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* xorshift64*: a few cycles per number, good enough for offsets and data. */
static inline uint64_t
bdevperf_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* A uniform number in [0, n) by multiply-high, which avoids a division. */
static inline uint64_t
bdevperf_rand_below(uint64_t *state, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)bdevperf_rand(state) * n) >> 64);
}

static inline uint64_t
bdevperf_rand_seed(uint64_t seed, uint64_t stream)
{
	uint64_t s = bdevperf_mix64(seed ^ bdevperf_mix64(stream));

	return s != 0 ? s : 1;
}

/* ---------------------------------------------------------------- patterns */

/* Length of the per-job pattern buffer that verify writes take their data from. */
#define BDEVPERF_PATTERN_LEN (64u * 1024)
/* Bytes of {lba, seq} header at the start of each verify block. */
#define BDEVPERF_VERIFY_HDR  16u

/* Parse "random", "zeros", "compress:N". Returns 0 or -EINVAL. */
int bdevperf_pattern_parse(const char *s, struct bdevperf_pattern *p);
/* "random", "zeros", "compress:N" into buf. */
const char *bdevperf_pattern_str(const struct bdevperf_pattern *p, char *buf, size_t len);
/* Fill len bytes with the pattern, drawing randomness from *rng. */
void bdevperf_pattern_fill(const struct bdevperf_pattern *p, uint64_t *rng, uint8_t *buf,
			   size_t len);
/* Random bytes per 256-byte chunk used for compress:N (exposed for the tests). */
uint32_t bdevperf_pattern_random_bytes(uint32_t pct);

/*
 * The data a verify write of nblocks blocks at lba with sequence number seq
 * carries: per block a {lba, seq} header, then pattern bytes chosen by
 * (lba, seq); metadata bytes (md_size per block, interleaved) likewise.
 * `pattern` must hold BDEVPERF_PATTERN_LEN + block_size + md_size bytes
 * (the tail repeating the head) - see bdevperf_pattern_alloc_len().
 */
void bdevperf_verify_fill(uint8_t *buf, uint64_t lba, uint64_t nblocks, uint64_t seq,
			  uint32_t block_size, uint32_t md_size, const uint8_t *pattern);
size_t bdevperf_pattern_alloc_len(uint32_t block_size, uint32_t md_size);
/* Fill a pattern buffer of bdevperf_pattern_alloc_len() bytes. */
void bdevperf_pattern_fill_source(const struct bdevperf_pattern *p, uint64_t *rng, uint8_t *buf,
				  size_t alloc_len);

/*
 * Compare nblocks blocks of buf_block_size bytes. Returns the number of
 * blocks that differ; for the first one, *first_block and *first_offset (byte
 * within the block) locate the first differing byte.
 */
uint64_t bdevperf_verify_compare(const uint8_t *expected, const uint8_t *actual, uint64_t nblocks,
				 uint32_t buf_block_size, uint64_t *first_block,
				 uint32_t *first_offset);

/* ---------------------------------------------------------------- histogram */

/*
 * Log-linear histogram of tick counts: values below 128 are exact, above that
 * every power of two is split into 64 buckets, so a bucket is at most 1/64
 * (1.6 %) of its value wide. 3,776 buckets cover all of uint64_t.
 */
#define HIST_SUB_BITS    6u
#define HIST_SUB_COUNT   (1u << HIST_SUB_BITS)
#define HIST_NUM_BUCKETS (HIST_SUB_COUNT * (64u - HIST_SUB_BITS + 1u))

struct bdevperf_histogram {
	uint64_t count;
	uint64_t buckets[HIST_NUM_BUCKETS];
};

static inline uint32_t
bdevperf_histogram_index(uint64_t v)
{
	uint32_t k;

	if (v < HIST_SUB_COUNT) {
		return (uint32_t)v;
	}
	k = u64log2(v);
	return ((k - HIST_SUB_BITS + 1) << HIST_SUB_BITS) |
	       (uint32_t)((v >> (k - HIST_SUB_BITS)) & (HIST_SUB_COUNT - 1));
}

static inline void
bdevperf_histogram_record(struct bdevperf_histogram *h, uint64_t v)
{
	h->buckets[bdevperf_histogram_index(v)]++;
	h->count++;
}

void bdevperf_histogram_init(struct bdevperf_histogram *h);
/* Smallest and largest value that falls into bucket idx. */
uint64_t bdevperf_histogram_bucket_low(uint32_t idx);
uint64_t bdevperf_histogram_bucket_high(uint32_t idx);
void bdevperf_histogram_merge(struct bdevperf_histogram *dst, const struct bdevperf_histogram *src);
/*
 * The value at percentile pct (0 < pct <= 100): the upper end of the bucket
 * holding the ceil(pct/100 * count)-th smallest value. 0 if empty.
 */
uint64_t bdevperf_histogram_percentile(const struct bdevperf_histogram *h, double pct);

/* ---------------------------------------------------------------- stats */

struct bdevperf_stats {
	uint64_t io_completed; /* successful I/Os within the run time */
	uint64_t io_failed;
	uint64_t io_timeout;
	uint64_t lat_total_ticks;
	uint64_t lat_min_ticks; /* UINT64_MAX: none */
	uint64_t lat_max_ticks;
	uint64_t verify_blocks;     /* blocks read back and compared */
	uint64_t verify_mismatches; /* blocks that differed */
	uint64_t runtime_ticks;
	struct bdevperf_histogram *hist;
};

/* ---------------------------------------------------------------- jobs */

enum job_state {
	JOB_IDLE = 0,   /* built, not yet set up on its thread */
	JOB_READY,      /* channel and buffers in place */
	JOB_PREFILLING, /* --prefill: writing the region once, untimed */
	JOB_RUNNING,
	JOB_DRAINING,  /* run time over, waiting for outstanding I/O */
	JOB_RESETTING, /* grace expired, bdev_reset issued */
	JOB_DONE,
};

enum task_state {
	TASK_IDLE = 0,
	TASK_SUBMITTED, /* at the bdev */
	TASK_WAITING,   /* queued for a bdev_io after -ENOMEM */
};

struct bdevperf_job;

struct bdevperf_task {
	struct bdevperf_job *job;
	uint8_t *buf;  /* write data / read target */
	uint8_t *rbuf; /* reads land here: buf, or apart (verify, rw) */
	uint64_t offset_blocks;
	uint64_t range; /* offset in I/O-size units within the region */
	uint64_t submit_ticks;
	uint64_t seq; /* verify: write sequence number */
	enum bdev_io_type io_type;
	enum task_state state;
	bool verify_read; /* verify: in the read-back phase */
	bool timed_out;   /* already counted in io_timeout */
	struct bdev_io_wait_entry wait;
};

/*
 * A job: one bdev on one core. The app thread fills in everything up to
 * `tasks` before handing the job to its thread; the job thread owns the rest
 * (and the stats) until it reports done.
 */
struct bdevperf_job {
	/* Hot: read or written per I/O. */
	enum job_state state;
	bool random;
	bool verify;
	bool mixed;                /* rw/randrw: read or write per I/O */
	enum bdev_io_type io_type; /* the single I/O type of the other workloads */
	uint32_t rwmixread;        /* percent reads for rw/randrw */
	uint32_t outstanding;      /* tasks not TASK_IDLE */
	uint64_t io_blocks;        /* blocks per I/O */
	uint64_t region_offset;    /* first block of this job's region */
	uint64_t region_ranges;    /* I/O-size ranges in the region */
	uint64_t next_range;       /* sequential cursor */
	uint64_t rng;              /* PRNG state; the app thread seeds it */
	uint64_t seq;              /* verify: last write sequence number */
	uint64_t *busy;            /* verify: bitmap of ranges in flight */
	struct bdev_desc *desc;
	struct io_channel *ch;
	struct bdev *bdev;
	uint8_t *pattern_buf; /* verify: the data source */
	uint32_t block_size;
	uint32_t md_size;
	uint32_t buf_block_size;
	struct bdevperf_stats stats;

	/* Set up on the app thread. */
	uint32_t index;
	char *name; /* bdev name (copy) */
	uint32_t core;
	struct thread *thread;
	enum bdevperf_workload workload;
	uint32_t queue_depth;
	uint64_t io_size;
	uint32_t buf_align;
	uint64_t run_ticks;
	uint64_t io_timeout_ticks;  /* 0: none */
	uint64_t scan_period_ticks; /* how often to look for timed-out I/O */
	uint64_t grace_ticks;       /* how long the end waits before resetting */
	struct bdevperf_pattern pattern;
	bool prefill; /* write the region before the run */

	/* Job thread only. */
	struct bdevperf_task *tasks;
	uint8_t *buf_slab;
	uint8_t *rbuf_slab;
	struct poller *poller;
	uint64_t start_ticks;
	uint64_t end_ticks;
	uint64_t next_scan_ticks;
	uint64_t deadline_ticks; /* drain or reset deadline */
	bool reset_outstanding;
	bool reset_waiting;
	bool reset_retry;
	struct bdev_io_wait_entry reset_wait;
	uint32_t mismatch_logs;
	bool submit_error_logged;
	bool abandoned; /* I/O still outstanding at the very end */
	int setup_rc;
};

/*
 * Job-thread entry points, each run by thread_send_msg() on the job's thread.
 * Setup, teardown and finish report back with bdevperf_job_reported() on the
 * app thread.
 */
void bdevperf_job_setup(void *job);
/*
 * --prefill, between setup and run: write the job's whole region once,
 * sequentially, queue_depth I/Os of io_size at a time, with the job's data
 * (the task buffers' pattern; verify's block headers for verify). Nothing
 * is timed or counted. Reports with the job READY again, or, if a write
 * failed or the job was stopped, DONE (resources released) with setup_rc set.
 */
void bdevperf_job_prefill(void *job);
void bdevperf_job_run(void *job);
void bdevperf_job_stop(void *job);
void bdevperf_job_teardown(void *job);
/* App thread: a job finished setup (state READY or setup_rc set) or its run/teardown. */
void bdevperf_job_reported(void *job);
/* thread_send_msg() that retries from a poller when the queue is full. */
void bdevperf_send(struct thread *thread, msg_fn fn, void *arg);

/* ---------------------------------------------------------------- report */

struct bdevperf_report_row {
	uint32_t index;   /* job number */
	const char *name; /* bdev name */
	uint32_t core;
	const char *workload;
	uint32_t queue_depth;
	uint64_t io_size;
	bool verify;
	struct bdevperf_stats stats;
};

/* Derived numbers for one row or the total. */
struct bdevperf_result {
	double runtime_s;
	double iops;
	double mibps;
	double fail_per_s;
	double timeout_per_s;
	double avg_us, min_us, max_us;
	double p50_us, p99_us, p999_us;
};

void bdevperf_result_compute(const struct bdevperf_stats *stats, uint64_t io_size,
			     uint64_t ticks_per_s, struct bdevperf_result *res);
void bdevperf_report_text(FILE *f, const struct bdevperf_report_row *rows, uint32_t n,
			  uint64_t ticks_per_s);
/* Returns 0 or -ENOMEM. */
int bdevperf_report_json(FILE *f, const struct bdevperf_report_row *rows, uint32_t n,
			 uint64_t ticks_per_s);
/* Aggregate the rows into one stats (histogram into `hist`, runtime = longest). */
void bdevperf_report_total(const struct bdevperf_report_row *rows, uint32_t n,
			   struct bdevperf_stats *total, struct bdevperf_histogram *hist);

#endif /* BDEVPERF_INTERNAL_H */
