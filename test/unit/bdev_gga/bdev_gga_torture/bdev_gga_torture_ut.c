/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A seeded torture run of the gga bdev on the harness of ../bdev_gga_harness.c:
 * the real gga bdev code over error bdevs over malloc members, driven by a
 * random mix of I/O (writes, reads, concurrent batches, flushes) and faults
 * (members failed, returned, blanked, restored from an old copy of their own
 * storage, stalled; fragments corrupted; the gga bdev deleted and created
 * again; failed members replaced; scrubs; waits for recovery).
 *
 * The oracle is a model of every block's last acknowledged content. After
 * every read each block holds one of the contents the model allows (the last
 * acknowledged write; the contents of writes that failed or ran concurrently
 * since), or the whole read failed. A read may fail only when the model says
 * one of its blocks may be lost: more than m of its fragments damaged at once,
 * counting the members not online (bdev_gga_get_info) or failed by the test
 * as damaged, or a write to it failed since its last acknowledged write.
 *
 * GGA_TORTURE_SEED (default 1; make torture: time-based), GGA_TORTURE_SECONDS (default 60,
 * split between 2 + 1 and 4 + 2), GGA_TORTURE_GEOMETRY ("2+1" or "4+2": run
 * only that one, with all the time), GGA_TORTURE_KNOWN_BUGS ("t1,t2": leave
 * out the sequences that trigger those bugs; the oracle is the same; also
 * "overlap": no reads beside writes while degraded, "oldcopy": no member
 * restored from an old copy), GGA_TORTURE_STEPS (stop after that many steps,
 * for a replay), GGA_TORTURE_VERBOSE=1 (print every operation).
 */
#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <time.h>
#include <unistd.h>

#include "test/unit/bdev_gga/bdev_gga_harness.c"

#define T_MAX_N             6
#define T_MAX_BS            (4 * MBS)
#define T_MAXV              8
#define T_OLD               8
#define T_MAX_IO            32
#define T_BATCH             3
#define T_HIST              32
#define T_LINE              200
#define T_SEC_NS            (1000ull * 1000 * 1000)
#define T_WAIT_NS           (3 * T_SEC_NS)
#define T_FINAL_NS          (30 * T_SEC_NS)
#define T_STALL_POLLS       200
/* The gga bdev's member_timeout_ms here: its watchdog ends half of the stalls. */
#define T_MEMBER_TIMEOUT_MS 300ull

/* Bits of GGA_TORTURE_KNOWN_BUGS. */
#define T_KNOWN_T1      0x1u
#define T_KNOWN_T2      0x2u
#define T_KNOWN_OVERLAP 0x4u
#define T_KNOWN_OLDCOPY 0x8u
/* Steps a recovery pass may stay held (op_hold) before the test lets it go on. */
#define T_HOLD_STEPS    40
/* Blocks per chunk of a recovery pass here: a pass takes many chunks, and checkpoints. */
#define T_CHUNK_BLOCKS  8
/* Steps the array may stay down (more than m members out) before the test brings it back. */
#define T_DOWN_STEPS    20

enum t_op {
	OP_WRITE = 0,
	OP_READ,
	OP_BATCH,
	OP_FLUSH,
	OP_FLIP,
	OP_CLUSTER,
	OP_FAIL,
	OP_RETURN,
	OP_BLANK,
	OP_RESTORE,
	OP_SNAPSHOT,
	OP_STALL,
	OP_RESTART,
	OP_REPLACE,
	OP_SCRUB,
	OP_WAIT,
	OP_BLANK_RESTART,
	OP_HOLD,
	OP_DROP,
	OP_COUNT
};

static const struct {
	const char *name;
	uint32_t weight;
} g_ops[OP_COUNT] = {
	[OP_WRITE] = { "write", 26 },
	[OP_READ] = { "read", 26 },
	[OP_BATCH] = { "batch", 8 },
	[OP_FLUSH] = { "flush", 2 },
	[OP_FLIP] = { "corrupt", 6 },
	[OP_CLUSTER] = { "corrupt-cluster", 5 },
	[OP_FAIL] = { "fail", 5 },
	[OP_RETURN] = { "return", 6 },
	[OP_BLANK] = { "blank", 2 },
	[OP_RESTORE] = { "restore-old", 2 },
	[OP_SNAPSHOT] = { "snapshot", 2 },
	[OP_STALL] = { "stall", 2 },
	[OP_RESTART] = { "restart", 2 },
	[OP_REPLACE] = { "replace", 1 },
	[OP_SCRUB] = { "scrub", 2 },
	[OP_WAIT] = { "wait-recovery", 3 },
	[OP_BLANK_RESTART] = { "blank-then-restart", 4 },
	[OP_HOLD] = { "hold-pass", 4 },
	[OP_DROP] = { "drop-writes", 3 },
};

/* What the model knows of one logical block. */
struct t_block {
	uint8_t nver; /* contents a read may return: g_ver[lba][0..nver-1] */
	bool lost;    /* a write to it failed since its last acknowledged one */
	uint32_t dmg; /* members whose fragment of it may be wrong (corrupt, blank, old) */
	/* Hashes of contents it held before (for the report only: "an older content"). */
	uint8_t nold;
	uint64_t old[T_OLD];
};

struct t_io {
	bool write;
	uint64_t lba;
	uint32_t n;
	uint8_t *buf;
	struct ut_io r;
};

struct torture {
	uint64_t seed;
	uint64_t rng;
	uint32_t k, m, n, bs, all;
	const char *name;
	char base[T_MAX_N][16];
	char ee[T_MAX_N][20];
	uint32_t renames;
	struct gga_disk *disk; /* NULL while there is no gga bdev */
	bool open;
	/* Members the test failed (errors injected on all their I/O). */
	uint32_t injected;
	/* Members unreachable at some sample since they were last seen online. */
	uint32_t stale;
	/* Members whose storage was destroyed (blank, old copy, replaced) and not yet back. */
	uint32_t pending_loss;
	/* Of those, members that some other member was unreachable beside. */
	uint32_t taint;
	/* Members not online at the last sample (the gga bdev's view). */
	uint32_t was_off;
	/* Not online or failed at the last sample; steps in a row with more than m of them. */
	uint32_t last_unreach;
	uint32_t down_steps;
	/* Recovery passes stop at this block (0: they run); kept across restarts. */
	uint64_t hold_at;
	uint32_t hold_steps;
	uint64_t writes_dropped;
	uint8_t *snap[T_MAX_N];
	struct t_block blk[NBLK];
	uint64_t step;
	uint32_t hist_next;
	char hist[T_HIST][T_LINE];
	bool failed;
	bool hung;
	bool final; /* in the final check, after the steps */
	bool verbose;
	unsigned known;
	const char *known_env; /* GGA_TORTURE_KNOWN_BUGS as given (a replay needs it) */
	uint8_t *iobuf[T_BATCH];
	uint64_t chosen[OP_COUNT];
	uint64_t op_ns[OP_COUNT]; /* time spent in each operation (where a run's time goes) */
	uint64_t mend_ns;         /* and in bringing a lost or long-down array back */
	uint64_t done[OP_COUNT];
	uint64_t reads_ok, reads_failed, writes_ok, writes_failed, blocks_checked;
	uint64_t frags_flipped, stalls_aborted, stalls_watchdog, arrays_lost, scrubs_done;
};

static uint8_t g_ver[NBLK][T_MAXV][T_MAX_BS];
static const uint8_t g_zero[T_MAX_BS];

static uint64_t
t_rand(struct torture *t)
{
	/* xorshift64*: every choice comes from here, so a seed replays the run. */
	t->rng ^= t->rng >> 12;
	t->rng ^= t->rng << 25;
	t->rng ^= t->rng >> 27;
	return t->rng * 0x2545f4914f6cdd1dull;
}

static uint32_t
t_rnd(struct torture *t, uint32_t n)
{
	return n == 0 ? 0 : (uint32_t)((t_rand(t) >> 16) % n);
}

static void __attribute__((format(printf, 2, 3))) t_log(struct torture *t, const char *fmt, ...)
{
	char *line = t->hist[t->hist_next++ % T_HIST];
	va_list ap;
	int len;

	len = snprintf(line, T_LINE, "step %" PRIu64 ": ", t->step);
	va_start(ap, fmt);
	vsnprintf(line + len, T_LINE - (size_t)len, fmt, ap);
	va_end(ap);
	if (t->verbose) {
		printf("  %s\n", line);
	}
}

static void __attribute__((format(printf, 2, 3))) t_fail(struct torture *t, const char *fmt, ...)
{
	uint32_t i, first;
	va_list ap;

	if (t->failed) {
		return;
	}
	t->failed = true;
	fprintf(stderr, "\ntorture FAILED: seed %" PRIu64 " geometry %u+%u step %" PRIu64 ": ",
		t->seed, t->k, t->m, t->step);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\ntorture: the last operations:\n");
	first = t->hist_next > T_HIST ? t->hist_next - T_HIST : 0;
	for (i = first; i < t->hist_next; i++) {
		fprintf(stderr, "  %s\n", t->hist[i % T_HIST]);
	}
	fprintf(stderr,
		"torture: replay with GGA_TORTURE_SEED=%" PRIu64 " GGA_TORTURE_GEOMETRY=%u+%u "
		"GGA_TORTURE_STEPS=%" PRIu64 " GGA_TORTURE_SECONDS=600 %s%s%s"
		"build/test/unit/bdev_gga/bdev_gga_torture/bdev_gga_torture_ut\n",
		t->seed, t->k, t->m, t->final ? t->step - 1 : t->step,
		t->known_env != NULL ? "GGA_TORTURE_KNOWN_BUGS=" : "",
		t->known_env != NULL ? t->known_env : "", t->known_env != NULL ? " " : "");
	CU_FAIL("torture: the oracle saw a broken promise (see above)");
}

static int
t_inject(struct torture *t, uint32_t i, enum bdev_error_type type)
{
	struct bdev_error_inject_opts opts = {
		.io_type = BDEV_ERROR_IO_TYPE_ALL,
		.error_type = type,
	};

	return bdev_error_inject_error(t->ee[i], &opts);
}

/* ---------------------------------------------------------------------- */
/* The model                                                               */
/* ---------------------------------------------------------------------- */

static void
t_model_reset(struct torture *t)
{
	uint32_t b;

	for (b = 0; b < NBLK; b++) {
		t->blk[b].nver = 1;
		t->blk[b].lost = false;
		t->blk[b].dmg = 0;
		memset(g_ver[b][0], 0, t->bs);
	}
	t->injected = 0;
	t->stale = 0;
	t->pending_loss = 0;
	t->taint = 0;
	t->was_off = 0;
}

static uint64_t
t_hash(const uint8_t *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < len; i++) {
		h = (h ^ p[i]) * 0x100000001b3ull;
	}
	return h;
}

/* Remember the contents block b may hold now as older ones (before they are replaced). */
static void
t_remember(struct torture *t, uint64_t b)
{
	struct t_block *blk = &t->blk[b];
	uint32_t v;

	for (v = 0; v < blk->nver; v++) {
		memmove(&blk->old[1], &blk->old[0], sizeof(blk->old) - sizeof(blk->old[0]));
		blk->old[0] = t_hash(g_ver[b][v], t->bs);
		blk->nold = (uint8_t)GGA_MIN(blk->nold + 1u, (uint32_t)T_OLD);
	}
}

/* Which older content of b `got` is (1: the one before the last), or 0. */
static uint32_t
t_older(const struct torture *t, uint64_t b, const uint8_t *got)
{
	const struct t_block *blk = &t->blk[b];
	uint64_t h = t_hash(got, t->bs);
	uint32_t v;

	for (v = 0; v < blk->nold; v++) {
		if (blk->old[v] == h) {
			return v + 1;
		}
	}
	return 0;
}

static void
t_add_version(struct torture *t, uint64_t b, const uint8_t *data)
{
	struct t_block *blk = &t->blk[b];
	uint32_t v;

	for (v = 0; v < blk->nver; v++) {
		if (memcmp(g_ver[b][v], data, t->bs) == 0) {
			return;
		}
	}
	/* Callers make room first (t_room): a content the model forgot would be a false alarm. */
	assert(blk->nver < T_MAXV);
	memcpy(g_ver[b][blk->nver++], data, t->bs);
}

/* May a read of block b fail, with the members in `unreach` not online? */
static bool
t_may_fail(const struct torture *t, uint64_t b, uint32_t unreach)
{
	const struct t_block *blk = &t->blk[b];

	return blk->lost || (uint32_t)__builtin_popcount(blk->dmg | unreach) > t->m;
}

/*
 * Member i, whose storage was destroyed, is online again: the gga bdev says
 * it holds every block. Its damage is forgotten for the blocks it could have
 * been rebuilt from: no other damage on the block, and no other member
 * unreachable since it was destroyed. Elsewhere the damage stays (a scrub or
 * a write clears it), which only allows more reads to fail.
 */
static void
t_member_back(struct torture *t, uint32_t i)
{
	uint32_t bit = 1u << i, b;

	for (b = 0; b < NBLK; b++) {
		if ((t->blk[b].dmg & bit) && !(t->taint & bit) && !t->blk[b].lost &&
		    (t->blk[b].dmg & ~bit) == 0) {
			t->blk[b].dmg = 0;
		}
	}
	t->pending_loss &= ~bit;
	t->taint &= ~bit;
}

/*
 * Member i was out (the gga bdev said so) and is online again: a recovery
 * pass rebuilt what it missed from the others. Where another member's
 * fragment of a block may be wrong, so may the one rebuilt from it.
 */
static void
t_member_recovered(struct torture *t, uint32_t i)
{
	uint32_t bit = 1u << i, b;

	for (b = 0; b < NBLK; b++) {
		if (t->blk[b].dmg & ~bit) {
			t->blk[b].dmg |= bit;
		}
	}
}

/*
 * The members not online now (bdev_gga_get_info) or failed by the test;
 * updates what the model knows of each member.
 */
static uint32_t
t_sample(struct torture *t)
{
	struct bdev_gga_info info;
	uint32_t off = 0, unreach, i, bit;

	if (t->disk == NULL) {
		return t->all;
	}
	get_info(t->name, &info);
	for (i = 0; i < t->n; i++) {
		if (info.members[i].state != BDEV_GGA_MEMBER_ONLINE) {
			off |= 1u << i;
		}
	}
	bdev_gga_info_clear(&info);
	unreach = off | t->injected;
	t->stale |= unreach;
	for (i = 0; i < t->n; i++) {
		bit = 1u << i;
		if ((t->pending_loss & bit) && (unreach & ~bit)) {
			t->taint |= bit;
		}
		if (!(unreach & bit)) {
			if (t->pending_loss & bit) {
				t_member_back(t, i);
			}
			if (t->was_off & bit) {
				t_member_recovered(t, i);
			}
			t->stale &= ~bit;
		}
	}
	t->was_off = off;
	t->last_unreach = unreach;
	return unreach;
}

/* Members that hold every block the model knows: not stale, not destroyed. */
static uint32_t
t_good(const struct torture *t)
{
	return t->all & ~t->stale & ~t->pending_loss;
}

static uint32_t
t_member_state(const struct torture *t, uint32_t i)
{
	return t->disk == NULL ? BDEV_GGA_MEMBER_ABSENT : gga_member_state(&t->disk->members[i]);
}

/* Pick a member whose bit is in `mask`; -1 if none. */
static int
t_pick_member(struct torture *t, uint32_t mask)
{
	uint32_t cnt = (uint32_t)__builtin_popcount(mask), j;

	if (cnt == 0) {
		return -1;
	}
	for (j = t_rnd(t, cnt); j > 0; j--) {
		mask &= mask - 1;
	}
	return __builtin_ctz(mask);
}

/* ---------------------------------------------------------------------- */
/* Members and the gga bdev                                                */
/* ---------------------------------------------------------------------- */

static void
t_make_base(const char *base)
{
	struct bdev_error_opts eopts = { .base_name = base };

	make_malloc(base, MBS, MD, SB_BLOCKS + NBLK);
	UT_ASSERT_EQ_FATAL(bdev_error_create(&eopts, NULL), 0);
}

static void
t_delete_base(const char *base)
{
	struct ut_cpl cpl = { 0 };
	char ee[24];

	snprintf(ee, sizeof(ee), "EE_%s", base);
	UT_ASSERT_EQ(bdev_error_delete(ee, ut_cpl_done, &cpl), 0);
	UT_POLL_UNTIL(cpl.done);
	malloc_delete_sync(base);
}

static int
t_create(struct torture *t)
{
	struct bdev_gga_opts opts;
	struct create_res r;
	uint32_t i;
	int rc;

	bdev_gga_opts_init(&opts);
	opts.name = t->name;
	opts.k = t->k;
	opts.m = t->m;
	if (t->m > 1) {
		opts.matrix = GGA_MATRIX_CAUCHY;
		opts.matrix_set = true;
	}
	for (i = 0; i < t->n; i++) {
		opts.members[i] = t->ee[i];
	}
	/* Small regions: resyncs copy some regions and skip others. */
	opts.bitmap_region_kib = 4;
	opts.auto_readd = true;
	opts.rebuild_rate_mib_s = 0;
	opts.member_timeout_ms = T_MEMBER_TIMEOUT_MS;
	rc = create_opts_sync(&opts, &r);
	if (rc != 0) {
		t->disk = NULL;
		return rc;
	}
	t->disk = r.bdev->ctxt;
	/* Passes held where op_hold says (see t_knobs for the rest). */
	__atomic_store_n(&t->disk->walk_hold_at, t->hold_at, __ATOMIC_RELAXED);
	open_dev(t->name);
	t->open = true;
	return 0;
}

static void t_dump_disk(struct torture *t);

static void
t_stop_front(struct torture *t)
{
	if (t->open) {
		ut_dev_close(&g_dev);
		t->open = false;
	}
	if (t->disk != NULL) {
		struct ut_cpl cpl = { 0 };

		UT_ASSERT_EQ_FATAL(bdev_gga_delete(t->name, ut_cpl_done, &cpl), 0);
		UT_POLL_UNTIL(cpl.done);
		if (!cpl.done) {
			t_dump_disk(t);
			t->hung = true;
			t_fail(t, "the delete of the gga bdev did not complete");
			return;
		}
		UT_ASSERT_EQ(cpl.rc, 0);
		t->disk = NULL;
	}
}

/*
 * What an operator does for a member the gga bdev faulted (too many corrupt
 * or stale fragments, which this test plants on purpose): clear it.
 */
static void
t_clear_faulted(struct torture *t)
{
	uint32_t i;

	for (i = 0; t->disk != NULL && i < t->n; i++) {
		if (__atomic_load_n(&t->disk->members[i].faulted, __ATOMIC_ACQUIRE) &&
		    bdev_gga_clear_member(t->name, t->disk->members[i].name) == 0) {
			t_log(t, "member %u faulted by the gga bdev: cleared", i);
		}
	}
}

static void
t_clear_all(struct torture *t)
{
	uint32_t i;

	for (i = 0; i < t->n; i++) {
		t_inject(t, i, BDEV_ERROR_NONE);
	}
	t->injected = 0;
	t_clear_faulted(t);
}

static void
t_free_snaps(struct torture *t)
{
	uint32_t i;

	for (i = 0; i < t->n; i++) {
		free(t->snap[i]);
		t->snap[i] = NULL;
	}
}

/* Fresh members, a freshly formatted gga bdev, every block never written. */
static void
t_setup(struct torture *t)
{
	uint32_t i;

	char base[16];

	for (i = 0; i < t->n; i++) {
		snprintf(base, sizeof(base), "%s%u", t->name, i + 1);
		memcpy(t->base[i], base, sizeof(base));
		snprintf(t->ee[i], sizeof(t->ee[i]), "EE_%s", base);
		t_make_base(base);
	}
	t_model_reset(t);
	t_free_snaps(t);
	UT_ASSERT_EQ_FATAL(t_create(t), 0);
}

static void
t_teardown(struct torture *t)
{
	uint32_t i;

	t_clear_all(t);
	t_stop_front(t);
	for (i = 0; i < t->n; i++) {
		t_delete_base(t->base[i]);
	}
	t_free_snaps(t);
}

/* Wait (bounded) until member i has left the failed state: the probe has seen it. */
static void
t_wait_probed(struct torture *t, uint32_t i)
{
	/* Ten probes (gga_test_knobs.probe_ms): a member still failed then stays so for now. */
	uint64_t deadline = time_now_ns() + T_WAIT_NS / 6;

	while (t->disk != NULL && t_member_state(t, i) == BDEV_GGA_MEMBER_FAILED &&
	       time_now_ns() < deadline) {
		ut_poll_once();
	}
}

/* Recovery passes go on (op_hold). */
static void
t_hold_release(struct torture *t)
{
	if (t->hold_at != 0) {
		t_log(t, "hold: released at block %" PRIu64, t->hold_at);
	}
	t->hold_at = 0;
	t->hold_steps = 0;
	if (t->disk != NULL) {
		__atomic_store_n(&t->disk->walk_hold_at, 0, __ATOMIC_RELAXED);
	}
}

/* Wait (bounded) until every member the test has not failed is online and no pass runs. */
static bool
t_wait_recovered(struct torture *t, uint64_t ns)
{
	uint64_t deadline = time_now_ns() + ns;

	t_hold_release(t);
	while (t->disk != NULL && time_now_ns() < deadline) {
		if (((gga_live_mask(t->disk) | t->injected) == t->all) && t->disk->walk == NULL) {
			return true;
		}
		if ((uint32_t)__builtin_popcount(gga_live_mask(t->disk)) < t->k) {
			/* Failed: no pass can run until members come back. */
			return false;
		}
		ut_poll_once();
	}
	return false;
}

/* ---------------------------------------------------------------------- */
/* I/O and the checks                                                      */
/* ---------------------------------------------------------------------- */

static void
t_fill(struct torture *t, uint8_t *buf, uint32_t n)
{
	uint32_t b, i, kind, seed;
	uint8_t *p;

	for (b = 0; b < n; b++) {
		p = buf + (size_t)b * t->bs;
		kind = t_rnd(t, 8);
		seed = (uint32_t)t_rand(t);
		if (kind == 0) {
			memset(p, 0, t->bs);
		} else if (kind <= 3) {
			fill_compressible(p, t->bs, seed);
		} else {
			for (i = 0; i < t->bs; i += 8) {
				uint64_t v = t_rand(t);

				memcpy(p + i, &v, 8);
			}
		}
	}
}

/* Can every block of [lba, lba + n) take `extra` more contents? */
static bool
t_room(const struct torture *t, uint64_t lba, uint32_t n, uint32_t extra)
{
	uint32_t b;

	for (b = 0; b < n; b++) {
		if (t->blk[lba + b].nver + extra > T_MAXV) {
			return false;
		}
	}
	return true;
}

static bool
t_matches(const struct torture *t, uint64_t b, const uint8_t *got, const struct t_io *ios,
	  uint32_t nios)
{
	uint32_t v;

	for (v = 0; v < t->blk[b].nver; v++) {
		if (memcmp(got, g_ver[b][v], t->bs) == 0) {
			return true;
		}
	}
	/* The contents of writes that ran at the same time. */
	for (v = 0; v < nios; v++) {
		if (ios[v].write && b >= ios[v].lba && b < ios[v].lba + ios[v].n &&
		    memcmp(got, ios[v].buf + (b - ios[v].lba) * t->bs, t->bs) == 0) {
			return true;
		}
	}
	return false;
}

/* A concurrent write to b failed: b's content is one of several, and it may be lost. */
static bool
t_batch_failed_write(const struct t_io *ios, uint32_t nios, uint64_t b)
{
	uint32_t v;

	for (v = 0; v < nios; v++) {
		if (ios[v].write && !ios[v].r.success && b >= ios[v].lba &&
		    b < ios[v].lba + ios[v].n) {
			return true;
		}
	}
	return false;
}

/* The oracle, for one completed read. `aborted_ok`: a stalled member was reset under it. */
static void
t_check_read(struct torture *t, const struct t_io *io, uint32_t unreach, const struct t_io *ios,
	     uint32_t nios, bool aborted_ok)
{
	uint64_t b, bad = UINT64_MAX;
	uint32_t nbad = 0, off = 0, older = 0;
	bool allowed = false, zeros = false;

	t->blocks_checked += io->n;
	if (!io->r.success) {
		t->reads_failed++;
		if (aborted_ok && io->r.err == -ECANCELED) {
			return;
		}
		for (b = io->lba; b < io->lba + io->n; b++) {
			allowed |= t_may_fail(t, b, unreach) || t_batch_failed_write(ios, nios, b);
		}
		if (!allowed) {
			t_fail(t,
			       "read of blocks %" PRIu64 "..%" PRIu64 " failed (errno %d) but the "
			       "model says every block is readable: damaged members of block %" PRIu64
			       " 0x%x, members not online 0x%x",
			       io->lba, io->lba + io->n - 1, io->r.err, io->lba,
			       t->blk[io->lba].dmg, unreach);
		}
		return;
	}
	t->reads_ok++;
	for (b = io->lba; b < io->lba + io->n; b++) {
		const uint8_t *got = io->buf + (b - io->lba) * t->bs;

		if (!t_matches(t, b, got, ios, nios)) {
			if (nbad++ == 0) {
				bad = b;
			}
		}
	}
	if (nbad == 0) {
		return;
	}
	{
		const uint8_t *got = io->buf + (bad - io->lba) * t->bs;

		zeros = memcmp(got, g_zero, t->bs) == 0;
		older = t_older(t, bad, got);
		while (off < t->bs && got[off] == g_ver[bad][t->blk[bad].nver - 1][off]) {
			off++;
		}
	}
	t_fail(t,
	       "read of blocks %" PRIu64 "..%" PRIu64 " SUCCEEDED with wrong bytes in %u "
	       "block(s); first: block %" PRIu64 " (%s%s; first difference from the last "
	       "acknowledged content at byte %u; %u content(s) allowed; damaged members 0x%x; "
	       "members not online 0x%x; model: this block %s)",
	       io->lba, io->lba + io->n - 1, nbad, bad, zeros ? "all zeros" : "not zeros",
	       older == 0 ? ", no older content either" :
	       older == 1 ? ", the content it held before the last acknowledged write" :
			    ", an older content it held",
	       off, t->blk[bad].nver, t->blk[bad].dmg, unreach,
	       t_may_fail(t, bad, unreach) ? "may be lost, so the read had to fail" :
					     "is readable");
}

/* After a batch: what the writes leave in the model. */
static void
t_apply_writes(struct torture *t, const struct t_io *ios, uint32_t nios)
{
	uint64_t b, lo = UINT64_MAX, hi = 0;
	uint32_t v, cover;
	bool failed;

	for (v = 0; v < nios; v++) {
		if (ios[v].write) {
			lo = GGA_MIN(lo, ios[v].lba);
			hi = GGA_MAX(hi, ios[v].lba + ios[v].n);
		}
	}
	for (b = lo; b < hi; b++) {
		cover = 0;
		failed = false;
		for (v = 0; v < nios; v++) {
			if (ios[v].write && b >= ios[v].lba && b < ios[v].lba + ios[v].n) {
				cover++;
				failed |= !ios[v].r.success;
			}
		}
		if (cover == 0) {
			continue;
		}
		if (!failed) {
			/* Acknowledged: these contents only (either, if two raced), nothing damaged. */
			t_remember(t, b);
			t->blk[b].nver = 0;
			t->blk[b].lost = false;
			t->blk[b].dmg = 0;
		} else {
			/* A failed write may have reached some members: old or new, or lost. */
			t->blk[b].lost = true;
		}
		for (v = 0; v < nios; v++) {
			if (ios[v].write && b >= ios[v].lba && b < ios[v].lba + ios[v].n) {
				t_add_version(t, b, ios[v].buf + (b - ios[v].lba) * t->bs);
			}
		}
	}
}

static void
t_describe(struct torture *t, const struct t_io *ios, uint32_t nios, const char *what,
	   uint32_t unreach)
{
	char line[T_LINE];
	size_t len = 0;
	uint32_t v;

	for (v = 0; v < nios && len < sizeof(line); v++) {
		len += (size_t)snprintf(line + len, sizeof(line) - len, "%s%s %" PRIu64 "+%u %s",
					v == 0 ? "" : ", ", ios[v].write ? "write" : "read",
					ios[v].lba, ios[v].n, ios[v].r.success ? "ok" : "FAILED");
	}
	t_log(t, "%s: %s (not online 0x%x)", what, line, unreach);
}

/* What the gga bdev holds when an I/O hangs: where a write can wait. */
static void
t_dump_disk(struct torture *t)
{
	struct gga_disk *d = t->disk;
	uint32_t i, locked = 0;

	if (d == NULL) {
		return;
	}
	for (i = 0; i < GGA_LOCK_WORDS; i++) {
		locked += (uint32_t)__builtin_popcountll(d->lock_words[i]);
	}
	printf("torture: disk: live 0x%x write 0x%x persisted sync 0x%x rec 0x%x; generations "
	       "next %" PRIu64 " limit %" PRIu64 " epoch busy %d wanted %d; superblock kicked %d "
	       "in flight %d again %d events %" PRIu64 "; %u range locks held; front %" PRIu64
	       " submitted %" PRIu64 " done; walk %p\n",
	       gga_live_mask(d), gga_write_mask(d), d->persisted_sync_mask, d->persisted_rec_mask,
	       d->next_gen, d->gen_limit, d->epoch_busy, d->epoch_wanted, d->sb_kicked,
	       d->sb_inflight, d->sb_again, d->events, locked, d->front_ios, d->front_done,
	       (void *)d->walk);
	printf("torture: disk: channels gone %d pending ops %u bitmap busy %d recovery busy %d "
	       "destructing %d\n",
	       d->channels_gone, d->pending_ops, gga_bitmap_busy(d), gga_recover_busy(d),
	       d->destructing);
	for (i = 0; i < d->n; i++) {
		printf("torture: member %u: state %u app_io %u probing %d resetting %d removing %d "
		       "app_ch %p\n",
		       i, gga_member_state(&d->members[i]), d->members[i].app_io,
		       d->members[i].probing, d->members[i].app_resetting, d->members[i].removing,
		       (void *)d->members[i].app_ch);
	}
}

/*
 * Submit the I/Os at once, wait for all of them, check the reads and update
 * the model. With `stall` >= 0 that member holds its I/O (the error bdev's
 * pending injection) until the test resets it.
 */
static void
t_run_ios(struct torture *t, struct t_io *ios, uint32_t nios, int stall, const char *what)
{
	uint32_t before, after, v, polls;
	uint64_t deadline;
	bool all_done = false, reset = false;

	before = t_sample(t);
	if (stall >= 0) {
		UT_ASSERT_EQ(t_inject(t, (uint32_t)stall, BDEV_ERROR_PENDING), 0);
	}
	for (v = 0; v < nios; v++) {
		if (ut_submit(&g_dev, ios[v].write ? BDEV_IO_TYPE_WRITE : BDEV_IO_TYPE_READ,
			      ios[v].buf, ios[v].lba, ios[v].n, &ios[v].r) != 0) {
			/* Never: the ranges are valid and the pool is large. */
			ios[v].r.done = true;
			ios[v].r.success = false;
			ios[v].r.err = -ENOMEM;
		}
	}
	if (stall >= 0 && t_rnd(t, 2) == 0) {
		/*
		 * Half the stalls are the gga bdev's to end: its watchdog fails and
		 * resets the member after member_timeout_ms (T_MEMBER_TIMEOUT_MS).
		 */
		deadline = time_now_ns() + 4 * T_MEMBER_TIMEOUT_MS * 1000 * 1000;
		do {
			for (v = 0, all_done = true; v < nios; v++) {
				all_done &= ios[v].r.done;
			}
			ut_poll_once();
		} while (!all_done && time_now_ns() < deadline);
		if (all_done) {
			t->stalls_watchdog++;
		}
	}
	if (stall >= 0) {
		for (polls = 0; polls < T_STALL_POLLS; polls++) {
			ut_poll_once();
		}
		for (v = 0, all_done = true; v < nios; v++) {
			all_done &= ios[v].r.done;
		}
		UT_ASSERT_EQ(t_inject(t, (uint32_t)stall, BDEV_ERROR_NONE), 0);
		if (!all_done) {
			struct ut_dev sd;
			struct ut_io rr;

			/* Held: a reset of the member completes what it holds (aborted). */
			reset = true;
			t->stalls_aborted++;
			UT_ASSERT_EQ_FATAL(ut_dev_open_mode(&sd, t->ee[stall], false, g_ut_app), 0);
			UT_ASSERT_EQ(ut_io_sync(&sd, BDEV_IO_TYPE_RESET, NULL, 0, 0, &rr), 0);
			ut_dev_close(&sd);
		}
	}
	deadline = time_now_ns() + UT_TIMEOUT_NS;
	do {
		for (v = 0, all_done = true; v < nios; v++) {
			all_done &= ios[v].r.done;
		}
		if (all_done) {
			break;
		}
		ut_poll_once();
	} while (time_now_ns() < deadline);
	if (!all_done) {
		t->hung = true;
		t_dump_disk(t);
		t_describe(t, ios, nios, what, before);
		t_fail(t, "an I/O did not complete within %llu s",
		       (unsigned long long)(UT_TIMEOUT_NS / T_SEC_NS));
		return;
	}
	after = t_sample(t);
	t_describe(t, ios, nios, what, before | after);
	for (v = 0; v < nios; v++) {
		if (!ios[v].write) {
			t_check_read(t, &ios[v], before | after, ios, nios, reset);
		} else if (ios[v].r.success) {
			t->writes_ok++;
		} else {
			t->writes_failed++;
			if ((before | after) == 0 && !reset) {
				t_fail(t,
				       "write of blocks %" PRIu64 "..%" PRIu64 " failed (errno %d) "
				       "with every member online",
				       ios[v].lba, ios[v].lba + ios[v].n - 1, ios[v].r.err);
			}
		}
	}
	t_apply_writes(t, ios, nios);
}

/* A range of 1..32 blocks (mostly short). */
static void
t_range(struct torture *t, uint64_t *lba, uint32_t *n)
{
	*n = t_rnd(t, 4) == 0 ? 1 + t_rnd(t, T_MAX_IO) : 1 + t_rnd(t, 8);
	*lba = t_rnd(t, NBLK - *n + 1);
}

static void
t_io_prepare(struct torture *t, struct t_io *io, uint32_t slot, bool write, uint64_t lba,
	     uint32_t n)
{
	memset(io, 0, sizeof(*io));
	io->write = write;
	io->lba = lba;
	io->n = n;
	io->buf = t->iobuf[slot];
	if (write) {
		t_fill(t, io->buf, n);
	} else {
		memset(io->buf, 0xa5, (size_t)n * t->bs);
	}
}

/* Writes to an array that cannot take them only pile up contents: mostly read instead. */
static bool
t_write_ok(struct torture *t, uint64_t lba, uint32_t n, uint32_t extra)
{
	if ((uint32_t)__builtin_popcount(t->injected) > t->m && t_rnd(t, 4) != 0) {
		return false;
	}
	return t_room(t, lba, n, extra);
}

static void
op_io(struct torture *t, bool write, int stall)
{
	struct t_io io;
	uint64_t lba;
	uint32_t n;

	t_range(t, &lba, &n);
	if (write && !t_write_ok(t, lba, n, 1)) {
		write = false;
	}
	t_io_prepare(t, &io, 0, write, lba, n);
	t_run_ios(t, &io, 1, stall, stall >= 0 ? "stall" : write ? "write" : "read");
}

/* Two or three I/Os at once around one place: reads overlap writes. */
static void
op_batch(struct torture *t)
{
	struct t_io ios[T_BATCH];
	uint32_t nios = 2 + t_rnd(t, T_BATCH - 1), v, n;
	uint64_t center = t_rnd(t, NBLK), lba;
	bool write, degraded;

	/* The overlap bug (known): reads beside writes fail while degraded. */
	degraded = (t->known & T_KNOWN_OVERLAP) && t_sample(t) != 0;
	for (v = 0; v < nios; v++) {
		n = 1 + t_rnd(t, 12);
		lba = center > n / 2 ? center - n / 2 - t_rnd(t, 3) : 0;
		lba = GGA_MIN(lba, (uint64_t)(NBLK - n));
		write = t_rnd(t, 2) == 0 && t_write_ok(t, lba, n, nios) && !degraded;
		t_io_prepare(t, &ios[v], v, write, lba, n);
	}
	t_run_ios(t, ios, nios, -1, "batch");
}

static void
op_flush(struct torture *t)
{
	struct ut_io r;
	uint32_t before = t_sample(t), after;

	UT_ASSERT_EQ(ut_io_sync(&g_dev, BDEV_IO_TYPE_FLUSH, NULL, 0, NBLK, &r), 0);
	after = t_sample(t);
	t_log(t, "flush: %s (not online 0x%x)", r.success ? "ok" : "FAILED", before | after);
	if (!r.done) {
		t->hung = true;
		t_fail(t, "a flush did not complete");
	} else if (!r.success && (before | after) == 0) {
		t_fail(t, "flush failed (errno %d) with every member online", r.err);
	}
}

/* ---------------------------------------------------------------------- */
/* Faults                                                                  */
/* ---------------------------------------------------------------------- */

/* Flip one bit of member i's fragment of block lba: data or fragment metadata. */
static bool
t_flip(struct torture *t, uint32_t i, uint64_t lba)
{
	uint32_t off = t_rnd(t, 10) < 7 ? t_rnd(t, t->disk->frag_size) :
					  t->disk->frag_size + t_rnd(t, GGA_FRAG_MD_SIZE);
	uint8_t bit = (uint8_t)(1u << t_rnd(t, 8)), *frag = malloc(t->disk->mbs);
	int rc;

	rc = member_rw(t->disk, i, false, t->disk->data_offset + lba, 1, frag);
	if (rc == 0) {
		frag[off] ^= bit;
		rc = member_rw(t->disk, i, true, t->disk->data_offset + lba, 1, frag);
	}
	free(frag);
	t_log(t, "corrupt: block %" PRIu64 " member %u byte %u bit 0x%02x%s", lba, i, off, bit,
	      rc == 0 ? "" : " (member I/O failed: not corrupted)");
	if (rc != 0) {
		return false;
	}
	t->blk[lba].dmg |= 1u << i;
	t->frags_flipped++;
	return true;
}

/* Members whose fragments the test may flip: online, not failed by the test. */
static uint32_t
t_flippable(struct torture *t)
{
	return t->disk == NULL ? 0 : gga_live_mask(t->disk) & ~t->injected;
}

static bool
t_flip_block(struct torture *t, uint64_t lba, uint32_t count)
{
	uint32_t mask = t_flippable(t) & ~t->blk[lba].dmg, c;
	int i;
	bool any = false;

	for (c = 0; c < count; c++) {
		i = t_pick_member(t, mask);
		if (i < 0) {
			break;
		}
		mask &= ~(1u << i);
		any |= t_flip(t, (uint32_t)i, lba);
	}
	return any;
}

static bool
op_flip(struct torture *t)
{
	uint64_t lba = t_rnd(t, NBLK);
	uint32_t count = 1 + t_rnd(t, t->m + 1);

	if (t->known & T_KNOWN_T1) {
		/* T1 needs a block with more than m bad fragments beside a repairable one. */
		if (t->blk[lba].dmg != 0) {
			return false;
		}
		count = 1;
	}
	return t_flip_block(t, lba, count);
}

/*
 * Neighbouring blocks damaged at once, then one read over both: one beyond
 * repair (m + 1 fragments), one repairable (one fragment), in either order.
 */
static bool
op_cluster(struct torture *t)
{
	uint64_t a = t_rnd(t, NBLK - 1), lost, fixable;
	struct t_io io;
	uint32_t before = 0, n;

	if ((t->known & T_KNOWN_T1) || t->disk == NULL ||
	    (uint32_t)__builtin_popcount(t_flippable(t)) < t->m + 1) {
		return false;
	}
	lost = t_rnd(t, 4) == 0 ? a + 1 : a;
	fixable = lost == a ? a + 1 : a;
	if (!t_flip_block(t, lost, t->m + 1)) {
		return false;
	}
	t_flip_block(t, fixable, 1);
	/* One draw: GGA_MIN evaluates its arguments twice (a second draw read before block 0). */
	before = t_rnd(t, 3);
	before = (uint32_t)GGA_MIN(a, (uint64_t)before);
	n = 2 + before + t_rnd(t, 3);
	n = (uint32_t)GGA_MIN((uint64_t)n, NBLK - (a - before));
	t_io_prepare(t, &io, 0, false, a - before, n);
	t_run_ios(t, &io, 1, -1, "read");
	return true;
}

static bool
op_fail(struct torture *t)
{
	int i;

	/* At most m + 1 at once (enough to take the array down), and m + 1 seldom. */
	if ((uint32_t)__builtin_popcount(t->injected) > t->m ||
	    ((uint32_t)__builtin_popcount(t->injected) == t->m && t_rnd(t, 4) != 0)) {
		return false;
	}
	i = t_pick_member(t, t->all & ~t->injected);
	if (i < 0) {
		return false;
	}
	UT_ASSERT_EQ(t_inject(t, (uint32_t)i, BDEV_ERROR_FAILURE), 0);
	t->injected |= 1u << i;
	t_log(t, "fail: member %u (%s)", i, t->ee[i]);
	return true;
}

static bool
op_return(struct torture *t)
{
	int i = t_pick_member(t, t->injected);

	if (i < 0) {
		return false;
	}
	UT_ASSERT_EQ(t_inject(t, (uint32_t)i, BDEV_ERROR_NONE), 0);
	t->injected &= ~(1u << i);
	t_wait_probed(t, (uint32_t)i);
	t_log(t, "return: member %u (state now %s)", i,
	      bdev_gga_member_state_name(t_member_state(t, (uint32_t)i)));
	return true;
}

/* Failed members the gga bdev knows are failed: their storage can be changed behind it. */
static uint32_t
t_known_failed(struct torture *t)
{
	uint32_t mask = 0, i;

	for (i = 0; i < t->n; i++) {
		if ((t->injected & (1u << i)) && t_member_state(t, i) == BDEV_GGA_MEMBER_FAILED) {
			mask |= 1u << i;
		}
	}
	return mask;
}

/* Its whole storage destroyed: every fragment of member i is suspect until it is back. */
static void
t_destroyed(struct torture *t, uint32_t i)
{
	uint32_t b;

	for (b = 0; b < NBLK; b++) {
		t->blk[b].dmg |= 1u << i;
	}
	t->pending_loss |= 1u << i;
}

/* T2 is a front restart with blank members: with it known, never more than m destroyed. */
static bool
t_may_destroy(struct torture *t, uint32_t i)
{
	return !(t->known & T_KNOWN_T2) ||
	       (uint32_t)__builtin_popcount(t->pending_loss | (1u << i)) <= t->m;
}

/*
 * Write a whole image (reserved region included) to failed member i, its
 * writes let through for that (reads stay failed, so no probe sees it half
 * written).
 */
static int
t_write_image(struct torture *t, uint32_t i, const uint8_t *img)
{
	struct bdev_error_inject_opts opts = {
		.io_type = BDEV_IO_TYPE_WRITE,
		.error_type = BDEV_ERROR_NONE,
	};
	int rc;

	UT_ASSERT_EQ(bdev_error_inject_error(t->ee[i], &opts), 0);
	rc = member_rw(t->disk, i, true, 0, (uint32_t)t->disk->member_blocks, (void *)img);
	opts.error_type = BDEV_ERROR_FAILURE;
	UT_ASSERT_EQ(bdev_error_inject_error(t->ee[i], &opts), 0);
	return rc;
}

static bool
op_blank(struct torture *t, int i)
{
	uint8_t *zero;
	int rc;

	if (i < 0) {
		i = t_pick_member(t, t_known_failed(t));
	}
	if (i < 0 || !t_may_destroy(t, (uint32_t)i)) {
		return false;
	}
	zero = calloc(t->disk->member_blocks, t->disk->mbs);
	rc = t_write_image(t, (uint32_t)i, zero);
	free(zero);
	t_log(t, "blank: member %u%s", i, rc == 0 ? "" : " (write failed)");
	UT_ASSERT_EQ(rc, 0);
	t_destroyed(t, (uint32_t)i);
	return true;
}

/*
 * May member j go back to its snapshot? Not if the copy could pass for a
 * crash in the middle of an update, the known limit (docs/FORMAT.md 3.2.1,
 * "any older copy"; the exhaustive checker leaves such copies out too): a
 * copy exactly one update behind the freshest record an assembly will find
 * is trusted when fewer than k members are otherwise. So only a blank
 * snapshot, one older than the last clearing of the bitmap (rule 3 makes it
 * a full rebuild), or one at least two updates behind a member that holds
 * every block (its record only grows).
 */
static bool
t_restorable(struct torture *t, uint32_t j)
{
	struct gga_sb sb;
	uint32_t x;

	if (gga_sb_decode(t->snap[j], t->disk->frag_size, &sb) != 0 ||
	    sb.events < t->disk->bitmap_events) {
		return true;
	}
	for (x = 0; x < t->n; x++) {
		if (x != j && (t_good(t) & (1u << x)) &&
		    t->disk->members[x].sb_events >= sb.events + 2) {
			return true;
		}
	}
	return false;
}

static bool
op_restore(struct torture *t)
{
	uint32_t mask = t_known_failed(t), i;
	int j, rc;

	for (i = 0; i < t->n; i++) {
		if (t->snap[i] == NULL) {
			mask &= ~(1u << i);
		}
	}
	j = t_pick_member(t, mask);
	/* The old-copy bug (known): a member restored from an old copy is trusted. */
	if (j < 0 || !t_may_destroy(t, (uint32_t)j) || (t->known & T_KNOWN_OLDCOPY)) {
		return false;
	}
	if (t->disk == NULL || !t_restorable(t, (uint32_t)j)) {
		t_log(t,
		      "restore-old: member %d left as it is (its snapshot could be taken for a "
		      "crash in the middle of an update: the known limit)",
		      j);
		return false;
	}
	rc = t_write_image(t, (uint32_t)j, t->snap[j]);
	t_log(t, "restore-old: member %d from its snapshot%s", j, rc == 0 ? "" : " (failed)");
	UT_ASSERT_EQ(rc, 0);
	t_destroyed(t, (uint32_t)j);
	return true;
}

static bool
op_snapshot(struct torture *t)
{
	uint32_t i = t_rnd(t, t->n);

	free(t->snap[i]);
	t->snap[i] = snapshot(t->base[i]);
	t_log(t, "snapshot: member %u", i);
	return true;
}

static bool
op_stall(struct torture *t)
{
	int i = t_pick_member(t, t_flippable(t));

	if (i < 0) {
		return false;
	}
	op_io(t, t_rnd(t, 5) < 2, i);
	return true;
}

/*
 * Delete the gga bdev and create it again over the same members. Failed
 * members make assembly fail (their superblocks cannot be read): then they
 * come back first. If it still fails, it must be for want of k good members.
 */
static bool
t_restart(struct torture *t, const char *why)
{
	uint32_t unreach = t_sample(t);
	int rc;

	if (t->disk != NULL && t->disk->walk != NULL) {
		t_log(t, "%s: a pass runs: checkpoint at block %" PRIu64 " for members 0x%x", why,
		      t->disk->rec_offset, t->disk->rec_mask);
	}
	t_stop_front(t);
	rc = t_create(t);
	if (rc != 0 && t->injected != 0) {
		t_log(t, "%s: assembly refused (%d) with failed members 0x%x: they come back", why,
		      rc, t->injected);
		t_clear_all(t);
		rc = t_create(t);
	}
	if (rc != 0) {
		t_log(t, "%s: assembly refused (%d); good members 0x%x", why, rc, t_good(t));
		if ((uint32_t)__builtin_popcount(t_good(t)) >= t->k) {
			t_fail(t,
			       "the gga bdev could not be assembled again (%d) although members "
			       "0x%x (at least k) hold every block",
			       rc, t_good(t));
		}
		return false;
	}
	t_log(t, "%s: assembled (not online before 0x%x, now 0x%x)", why, unreach, t_sample(t));
	return true;
}

static bool
op_restart(struct torture *t)
{
	if ((t->known & T_KNOWN_T2) && t->pending_loss != 0) {
		return false;
	}
	if (!t_restart(t, "restart") && !t->failed) {
		/* The array is gone for good (the model agrees): start a fresh one. */
		t->arrays_lost++;
		t_teardown(t);
		t_setup(t);
		t_log(t, "restart: a fresh array");
	}
	return true;
}

struct t_replace {
	bool done;
	int rc;
};

static void
t_replace_done(void *cb_arg, int rc, const char *msg)
{
	struct t_replace *r = cb_arg;

	r->done = true;
	r->rc = rc;
}

static bool
op_replace(struct torture *t)
{
	struct t_replace r = { 0 };
	char base[16], ee[20], msg[256];
	int i = t_pick_member(t, t_known_failed(t)), rc;

	if (i < 0 || !t_may_destroy(t, (uint32_t)i)) {
		return false;
	}
	snprintf(base, sizeof(base), "%sR%u", t->name, ++t->renames);
	snprintf(ee, sizeof(ee), "EE_%s", base);
	t_make_base(base);
	rc = bdev_gga_replace_member(t->name, t->ee[i], ee, t_replace_done, &r, msg, sizeof(msg));
	if (rc == 0) {
		UT_POLL_UNTIL(r.done);
		if (!r.done) {
			t->hung = true;
			t_fail(t, "replace of member %d never completed", i);
			return true;
		}
		rc = r.rc;
	}
	t_log(t, "replace: member %d %s by %s: %d", i, t->ee[i], ee, rc);
	if (rc != 0) {
		t_delete_base(base);
		return false;
	}
	t_inject(t, (uint32_t)i, BDEV_ERROR_NONE);
	t_delete_base(t->base[i]);
	snprintf(t->base[i], sizeof(t->base[i]), "%s", base);
	snprintf(t->ee[i], sizeof(t->ee[i]), "%s", ee);
	t->injected &= ~(1u << i);
	free(t->snap[i]);
	t->snap[i] = NULL;
	t_destroyed(t, (uint32_t)i);
	return true;
}

/* Blocks a read may fail on, with the members in `unreach` not online. */
static uint32_t
t_count_may_fail(const struct torture *t, uint32_t unreach)
{
	uint32_t b, cnt = 0;

	for (b = 0; b < NBLK; b++) {
		cnt += t_may_fail(t, b, unreach);
	}
	return cnt;
}

/*
 * After a whole scrub with every member online, a block that the model says
 * may be lost and that reads back right was decodable, so the scrub mended
 * all its fragments: its damage is forgotten.
 */
static void
t_scrub_verify(struct torture *t)
{
	struct t_io io;
	uint32_t b;

	for (b = 0; b < NBLK && !t->failed; b++) {
		if (t->blk[b].dmg == 0) {
			continue;
		}
		t_io_prepare(t, &io, 0, false, b, 1);
		UT_ASSERT_EQ(ut_io_sync(&g_dev, BDEV_IO_TYPE_READ, io.buf, b, 1, &io.r), 0);
		if (!io.r.done) {
			t->hung = true;
			t_fail(t, "a read of block %u did not complete", b);
			return;
		}
		t_check_read(t, &io, 0, NULL, 0, false);
		if (io.r.success) {
			t->blk[b].dmg = 0;
		}
	}
}

static bool
op_scrub(struct torture *t, bool must_run)
{
	uint32_t before, after, off, allowed, b;
	struct bdev_gga_info info;
	uint64_t deadline;
	int rc;

	/* A recovery pass would refuse or stop it, at a time the seed does not choose. */
	t_wait_recovered(t, T_WAIT_NS);
	before = t_sample(t);
	rc = bdev_gga_scrub_start(t->name, 0);
	if (rc != 0) {
		t_log(t, "scrub: not started (%d)", rc);
		if (must_run) {
			t_fail(t, "the final scrub did not start (%d)", rc);
		}
		return false;
	}
	deadline = time_now_ns() + 20 * T_SEC_NS;
	while (t->disk->scrub.state == BDEV_GGA_SCRUB_RUNNING && time_now_ns() < deadline) {
		ut_poll_once();
	}
	get_info(t->name, &info);
	after = t_sample(t);
	off = before | after;
	allowed = t_count_may_fail(t, off);
	t_log(t,
	      "scrub: %s, %" PRIu64 " repaired, %" PRIu64 " unrecoverable (model: at most %u) "
	      "(not online 0x%x)",
	      info.scrub.state == BDEV_GGA_SCRUB_DONE ? "done" : "not done",
	      info.scrub.fragments_repaired, info.scrub.unrecoverable_blocks, allowed, off);
	if (info.scrub.state == BDEV_GGA_SCRUB_RUNNING) {
		t_fail(t, "a scrub of %u blocks did not end within 20 s", NBLK);
	} else if (info.scrub.state == BDEV_GGA_SCRUB_DONE) {
		t->scrubs_done++;
		if (info.scrub.unrecoverable_blocks > allowed) {
			t_fail(t,
			       "scrub found %" PRIu64 " unrecoverable blocks; the model allows "
			       "at most %u",
			       info.scrub.unrecoverable_blocks, allowed);
		}
		/* Checked and repaired from members that were online throughout. */
		for (b = 0; b < NBLK; b++) {
			if (!t->blk[b].lost &&
			    (uint32_t)__builtin_popcount(t->blk[b].dmg | off) <= t->m) {
				t->blk[b].dmg &= off;
			}
		}
		if (off == 0) {
			t_scrub_verify(t);
		}
	} else if (must_run) {
		t_fail(t, "the final scrub ended in state %d with every member online",
		       info.scrub.state);
	}
	bdev_gga_info_clear(&info);
	return true;
}

/*
 * Recovery passes stop issuing chunks at a random block, with the checkpoint
 * below it persisted, until a later op_hold, a wait or T_HOLD_STEPS steps
 * let them go on; the hold outlives a front restart. So a pass meets the
 * rest: its member fails again or comes back blank or old, writes land
 * behind and ahead of its checkpoint, the front restarts and resumes it.
 */
static bool
op_hold(struct torture *t)
{
	uint64_t deadline;

	if (t->hold_at != 0) {
		t_hold_release(t);
		return true;
	}
	t->hold_at = 1 + t_rnd(t, NBLK - 1);
	t->hold_steps = 0;
	if (t->disk != NULL) {
		__atomic_store_n(&t->disk->walk_hold_at, t->hold_at, __ATOMIC_RELAXED);
	}
	if (t->disk != NULL && t->disk->walk != NULL &&
	    t->disk->scrub.state != BDEV_GGA_SCRUB_RUNNING) {
		/* A pass runs: it reaches the hold, and persists its checkpoint there (bounded). */
		deadline = time_now_ns() + T_SEC_NS;
		while (t->disk->walk != NULL && time_now_ns() < deadline &&
		       (t->disk->rec_offset < t->hold_at || t->disk->sb_inflight ||
			__atomic_load_n(&t->disk->sb_kicked, __ATOMIC_ACQUIRE))) {
			ut_poll_once();
		}
	}
	t_log(t,
	      "hold: recovery passes stop at block %" PRIu64 " (a pass %s; checkpoint %" PRIu64
	      ", members 0x%x)",
	      t->hold_at, t->disk != NULL && t->disk->walk != NULL ? "is held" : "does not run",
	      t->disk != NULL ? t->disk->rec_offset : 0, t->disk != NULL ? t->disk->rec_mask : 0);
	return true;
}

/*
 * A member loses writes: during one write it acknowledges every write of
 * fragments without storing it (the error bdev's drop, from the data area
 * on). Its fragments of the blocks written stay the old ones: damage, as the
 * model counts it. Its record and bitmap writes are kept: a member that
 * acknowledges records it does not keep defeats the records' protocol, as it
 * does md's superblocks (the exhaustive checker assumes them durable too),
 * and with more than m members lost after it no oracle could hold.
 */
static bool
op_drop(struct torture *t)
{
	struct bdev_error_inject_opts drop = {
		.io_type = BDEV_ERROR_IO_TYPE_ALL,
		.error_type = BDEV_ERROR_DROP,
		.from_block = t->disk != NULL ? t->disk->data_offset : 0,
	};
	int i = t_pick_member(t, t_flippable(t));
	struct t_io io;
	uint64_t lba, b;
	uint32_t n;

	if (i < 0) {
		return false;
	}
	t_range(t, &lba, &n);
	if (!t_write_ok(t, lba, n, 1)) {
		return false;
	}
	UT_ASSERT_EQ(bdev_error_inject_error(t->ee[i], &drop), 0);
	t_log(t, "drop: member %d loses the data writes of the next write", i);
	t_io_prepare(t, &io, 0, true, lba, n);
	t_run_ios(t, &io, 1, -1, "write");
	UT_ASSERT_EQ(t_inject(t, (uint32_t)i, BDEV_ERROR_NONE), 0);
	for (b = lba; b < lba + n; b++) {
		t->blk[b].dmg |= 1u << i;
	}
	t->writes_dropped++;
	return true;
}

static bool
op_wait(struct torture *t)
{
	bool ok = t_wait_recovered(t, T_WAIT_NS);

	t_log(t, "wait-recovery: %s (not online 0x%x)", ok ? "done" : "not within 3 s",
	      t_sample(t));
	return true;
}

/* Every block, one read each, against the model. */
static void
t_read_all(struct torture *t)
{
	struct t_io io;
	uint32_t b, before, after;

	for (b = 0; b < NBLK && !t->failed; b++) {
		before = t_sample(t);
		t_io_prepare(t, &io, 0, false, b, 1);
		UT_ASSERT_EQ(ut_io_sync(&g_dev, BDEV_IO_TYPE_READ, io.buf, b, 1, &io.r), 0);
		if (!io.r.done) {
			t->hung = true;
			t_fail(t, "a read of block %u did not complete", b);
			return;
		}
		after = t_sample(t);
		t_check_read(t, &io, before | after, NULL, 0, false);
	}
}

/*
 * More than m members' storage destroyed: the array cannot hold its data.
 * They come back (the probe formats the blank ones), the front restarts; an
 * array that assembles must still never return wrong bytes. Then a fresh
 * array.
 */
static void
t_array_lost(struct torture *t)
{
	uint32_t was = t->injected, i;

	t->arrays_lost++;
	t_log(t, "array lost: members 0x%x destroyed; they come back, then a front restart",
	      t->pending_loss);
	t_clear_all(t);
	for (i = 0; i < t->n; i++) {
		if (was & (1u << i)) {
			t_wait_probed(t, i);
		}
	}
	if ((t->known & T_KNOWN_T2) && t->pending_loss != 0) {
		/* T2 (known): a restart over blank members trusts them. */
		t_log(t, "restart after loss: left out (t2 known)");
	} else if (t_restart(t, "restart after loss")) {
		t_read_all(t);
	}
	if (!t->failed) {
		t_teardown(t);
		t_setup(t);
		t_log(t, "a fresh array");
	}
}

/*
 * Down for long (more than m members out): every failed member comes back.
 * If fewer than k members still hold every block, the array is lost.
 */
static void
t_revive(struct torture *t)
{
	uint32_t was = t->injected, now, i;

	t->down_steps = 0;
	t_clear_all(t);
	for (i = 0; i < t->n; i++) {
		if (was & (1u << i)) {
			t_wait_probed(t, i);
		}
	}
	t_wait_recovered(t, T_WAIT_NS);
	now = t_sample(t);
	t_log(t, "revive: members 0x%x came back; not online 0x%x, good 0x%x", was, now, t_good(t));
	if ((uint32_t)__builtin_popcount(t_good(t)) < t->k) {
		t_array_lost(t);
	}
}

/* The explicit T2 sequence: m + 1 members fail, are blanked, come back; the front restarts. */
static bool
op_blank_restart(struct torture *t)
{
	uint32_t want = t->m + 1, mask = 0, c, i;
	struct t_io io;
	int j;

	/* From a healthy array, as in the field: the members it had all fail together. */
	if ((t->known & T_KNOWN_T2) || t->injected != 0 || t->disk == NULL ||
	    gga_live_mask(t->disk) != t->all) {
		return false;
	}
	/* Half the time the last m + 1 (data_2 and parity in 2 + 1, as in the field report). */
	if (t_rnd(t, 2) == 0) {
		mask = t->all & ~((1u << (t->n - want)) - 1);
	}
	for (c = (uint32_t)__builtin_popcount(mask); c < want; c++) {
		j = t_pick_member(t, t->all & ~mask);
		mask |= 1u << j;
	}
	for (i = 0; i < t->n; i++) {
		if (mask & (1u << i)) {
			UT_ASSERT_EQ(t_inject(t, i, BDEV_ERROR_FAILURE), 0);
		}
	}
	t->injected = mask;
	t_log(t, "blank-then-restart: members 0x%x fail", mask);
	/* A write finds them failed. */
	t_io_prepare(t, &io, 0, true, t_rnd(t, NBLK - 4), 4);
	if (t_room(t, io.lba, io.n, 1)) {
		t_run_ios(t, &io, 1, -1, "write");
	}
	for (i = 0; i < t->n && !t->failed; i++) {
		if ((mask & (1u << i)) && t_member_state(t, i) == BDEV_GGA_MEMBER_FAILED) {
			op_blank(t, (int)i);
		}
	}
	return true;
}

/* ---------------------------------------------------------------------- */
/* The run                                                                 */
/* ---------------------------------------------------------------------- */

static enum t_op
t_pick_op(struct torture *t)
{
	uint32_t total = 0, r, i;

	for (i = 0; i < OP_COUNT; i++) {
		total += g_ops[i].weight;
	}
	r = t_rnd(t, total);
	for (i = 0; i < OP_COUNT; i++) {
		if (r < g_ops[i].weight) {
			return (enum t_op)i;
		}
		r -= g_ops[i].weight;
	}
	return OP_READ;
}

static void
t_step(struct torture *t)
{
	enum t_op op = t_pick_op(t);
	bool done = true;

	uint64_t t0 = time_now_ns();

	t->chosen[op]++;
	switch (op) {
	case OP_WRITE:
		op_io(t, true, -1);
		break;
	case OP_READ:
		op_io(t, false, -1);
		break;
	case OP_BATCH:
		op_batch(t);
		break;
	case OP_FLUSH:
		op_flush(t);
		break;
	case OP_FLIP:
		done = op_flip(t);
		break;
	case OP_CLUSTER:
		done = op_cluster(t);
		break;
	case OP_FAIL:
		done = op_fail(t);
		break;
	case OP_RETURN:
		done = op_return(t);
		break;
	case OP_BLANK:
		done = op_blank(t, -1);
		break;
	case OP_RESTORE:
		done = op_restore(t);
		break;
	case OP_SNAPSHOT:
		done = op_snapshot(t);
		break;
	case OP_STALL:
		done = op_stall(t);
		break;
	case OP_RESTART:
		done = op_restart(t);
		break;
	case OP_REPLACE:
		done = op_replace(t);
		break;
	case OP_SCRUB:
		done = op_scrub(t, false);
		break;
	case OP_WAIT:
		done = op_wait(t);
		break;
	case OP_HOLD:
		done = op_hold(t);
		break;
	case OP_DROP:
		done = op_drop(t);
		break;
	default:
		done = op_blank_restart(t);
		break;
	}
	if (t->hold_at != 0 && ++t->hold_steps > T_HOLD_STEPS) {
		t_hold_release(t);
	}
	if (done) {
		t->done[op]++;
	} else if (!t->failed) {
		/* Not possible now (no such member, or left out): a read instead. */
		op_io(t, false, -1);
	}
	t->op_ns[op] += time_now_ns() - t0;
	t0 = time_now_ns();
	if (!t->failed && (uint32_t)__builtin_popcount(t->all & ~t->pending_loss) < t->k) {
		t_array_lost(t);
	}
	t->down_steps = (uint32_t)__builtin_popcount(t->last_unreach) > t->m ? t->down_steps + 1 :
									       0;
	if (!t->failed && t->down_steps > T_DOWN_STEPS) {
		t_revive(t);
	}
	t->mend_ns += time_now_ns() - t0;
}

/*
 * Wait (bounded) for every member to come back, with a failed pass retried
 * (10 s later). Once the members had time to be probed, fewer than k members
 * that hold every block mean that nothing can bring the others back.
 */
static bool
t_wait_final(struct torture *t)
{
	uint64_t start = time_now_ns(), next = start;

	t_hold_release(t);
	while (t->disk != NULL && time_now_ns() < start + T_FINAL_NS) {
		if (((gga_live_mask(t->disk) | t->injected) == t->all) && t->disk->walk == NULL) {
			return true;
		}
		if (time_now_ns() >= next) {
			t_clear_faulted(t);
			t_sample(t);
			if (time_now_ns() > start + T_WAIT_NS &&
			    (uint32_t)__builtin_popcount(t_good(t)) < t->k) {
				return false;
			}
			next = time_now_ns() + T_SEC_NS / 10;
		}
		ut_poll_once();
	}
	return false;
}

/*
 * The end: every fault cleared, every member online (bounded), a scrub, and
 * every block the model does not call possibly lost reads right.
 */
static void
t_final(struct torture *t)
{
	uint32_t unreach;

	t->step++;
	t->final = true;
	t_log(t, "final: every fault cleared");
	t_clear_all(t);
	if (!t_wait_final(t)) {
		unreach = t_sample(t);
		t_log(t, "final: members 0x%x not online", unreach);
		if ((uint32_t)__builtin_popcount(t_good(t)) >= t->k) {
			t_fail(t,
			       "members 0x%x did not come back within %llu s with every fault "
			       "cleared, although members 0x%x hold every block",
			       unreach, (unsigned long long)(T_FINAL_NS / T_SEC_NS), t_good(t));
			return;
		}
		t_read_all(t);
		return;
	}
	t_sample(t);
	op_scrub(t, true);
	if (!t->failed) {
		t_read_all(t);
	}
	t_log(t, "final: %u blocks possibly lost", t_count_may_fail(t, 0));
}

static uint64_t
t_env_u64(const char *name, uint64_t dflt)
{
	const char *v = getenv(name);

	return v != NULL && *v != '\0' ? strtoull(v, NULL, 0) : dflt;
}

static void
t_run(const char *name, uint32_t k, uint32_t m)
{
	static uint64_t seed;
	struct torture *t;
	const char *geo = getenv("GGA_TORTURE_GEOMETRY"), *known = getenv("GGA_TORTURE_KNOWN_BUGS");
	uint64_t seconds = t_env_u64("GGA_TORTURE_SECONDS", 60), start, deadline, ns;
	uint64_t max_steps = t_env_u64("GGA_TORTURE_STEPS", UINT64_MAX);
	char want[8];
	uint32_t i;

	snprintf(want, sizeof(want), "%u+%u", k, m);
	if (geo != NULL && *geo != '\0' && strcmp(geo, want) != 0) {
		printf("torture: geometry %s skipped (GGA_TORTURE_GEOMETRY=%s)\n", want, geo);
		return;
	}
	if (seed == 0) {
		/*
		 * make test runs one fixed seed (1), so that every lane and every CI
		 * run replays the same mix; make torture passes a new one each time.
		 */
		seed = t_env_u64("GGA_TORTURE_SEED", 1);
	}
	t = calloc(1, sizeof(*t));
	CU_ASSERT_FATAL(t != NULL);
	/*
	 * Passes persist a checkpoint after every chunk of T_CHUNK_BLOCKS, so that
	 * op_hold and a restart meet real checkpoints; members are probed and
	 * failed passes retried in milliseconds, so the run spends its time on
	 * operations rather than on waits.
	 */
	gga_test_knobs.checkpoint_ms = 1;
	gga_test_knobs.chunk_blocks = T_CHUNK_BLOCKS;
	gga_test_knobs.probe_ms = 50;
	gga_test_knobs.retry_ms = 200;
	t->seed = seed;
	/* Each geometry its own stream of the same seed. */
	t->rng = (seed ^ ((uint64_t)k << 32 | m)) * 0x9e3779b97f4a7c15ull | 1;
	t->name = name;
	t->k = k;
	t->m = m;
	t->n = k + m;
	t->all = (1u << t->n) - 1;
	t->bs = k * MBS;
	t->verbose = t_env_u64("GGA_TORTURE_VERBOSE", 0) != 0;
	t->known_env = known;
	if (known != NULL) {
		t->known |= strstr(known, "t1") != NULL ? T_KNOWN_T1 : 0;
		t->known |= strstr(known, "t2") != NULL ? T_KNOWN_T2 : 0;
		t->known |= strstr(known, "overlap") != NULL ? T_KNOWN_OVERLAP : 0;
		t->known |= strstr(known, "oldcopy") != NULL ? T_KNOWN_OLDCOPY : 0;
	}
	for (i = 0; i < T_BATCH; i++) {
		t->iobuf[i] = malloc((size_t)T_MAX_IO * T_MAX_BS);
	}
	if (geo == NULL || *geo == '\0') {
		seconds = seconds / 2 + (m == 1 ? seconds % 2 : 0);
	}
	printf("\ntorture: seed %" PRIu64 " geometry %u+%u (%" PRIu64 " s%s%s)\n", seed, k, m,
	       seconds, known != NULL ? ", known bugs: " : "", known != NULL ? known : "");
	fflush(stdout);

	t_setup(t);
	start = time_now_ns();
	deadline = start + seconds * T_SEC_NS;
	while (!t->failed && time_now_ns() < deadline && t->step < max_steps) {
		t->step++;
		t_step(t);
	}
	if (!t->failed) {
		t_final(t);
	}
	ns = GGA_MAX(time_now_ns() - start, 1ull);
	printf("torture: %u+%u %s: %" PRIu64 " steps in %.1f s (%.0f ops/s); reads %" PRIu64
	       " ok %" PRIu64 " failed, writes %" PRIu64 " ok %" PRIu64 " failed, %" PRIu64
	       " blocks checked\n",
	       k, m, t->failed ? "FAILED" : "passed", t->step, (double)ns / T_SEC_NS,
	       (double)t->step * T_SEC_NS / (double)ns, t->reads_ok, t->reads_failed, t->writes_ok,
	       t->writes_failed, t->blocks_checked);
	printf("torture: %u+%u operations (done/chosen):", k, m);
	for (i = 0; i < OP_COUNT; i++) {
		printf(" %s %" PRIu64 "/%" PRIu64 " (%.1f s)", g_ops[i].name, t->done[i],
		       t->chosen[i], (double)t->op_ns[i] / T_SEC_NS);
	}
	printf("; arrays brought back %.1f s", (double)t->mend_ns / T_SEC_NS);
	printf("; fragments corrupted %" PRIu64 ", stalls ended by the watchdog %" PRIu64
	       ", by the test's reset %" PRIu64 ", arrays lost %" PRIu64 ", scrubs done %" PRIu64
	       ", writes dropped by a member %" PRIu64 "\n",
	       t->frags_flipped, t->stalls_watchdog, t->stalls_aborted, t->arrays_lost,
	       t->scrubs_done, t->writes_dropped);
	fflush(stdout);
	if (t->hung) {
		/*
		 * I/O still in flight references the buffers, the channels and the
		 * bdevs: no teardown can run safely, so stop here (a failure).
		 */
		fprintf(stderr, "torture: an I/O hung; exiting without teardown\n");
		fflush(stdout);
		fflush(stderr);
		_exit(1);
	}
	t_teardown(t);
	for (i = 0; i < T_BATCH; i++) {
		free(t->iobuf[i]);
	}
	free(t);
	memset(&gga_test_knobs, 0, sizeof(gga_test_knobs));
}

static void
test_torture_2_1(void)
{
	t_run("TA", 2, 1);
}

static void
test_torture_4_2(void)
{
	t_run("TB", 4, 2);
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_torture_2_1),
		UT_TEST(test_torture_4_2),
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	return ut_run("bdev_gga_torture", tests, ARRAY_SIZE(tests), suite_init, suite_fini);
}
