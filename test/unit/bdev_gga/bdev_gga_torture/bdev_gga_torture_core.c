/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The torture run's core (included by bdev_gga_torture_ut.c, one translation
 * unit): its state, the model of every block's acknowledged contents and of
 * what each member holds of it, the oracle that checks reads and the members'
 * media against it, the members and the gga bdev it creates, and I/O
 * submitted and checked in batches.
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
#define T_KNOWN_T1       0x1u
#define T_KNOWN_T2       0x2u
#define T_KNOWN_OVERLAP  0x4u
#define T_KNOWN_OLDCOPY  0x8u
#define T_KNOWN_FMTCOUNT 0x10u
/* Steps a recovery pass may stay held (op_hold) before the test lets it go on. */
#define T_HOLD_STEPS     40
/* Blocks per chunk of a recovery pass here: a pass takes many chunks, and checkpoints. */
#define T_CHUNK_BLOCKS   8
/* Steps the array may stay down (more than m members out) before the test brings it back. */
#define T_DOWN_STEPS     20

/*
 * Steps per geometry (GGA_TORTURE_STEPS): the same on any machine. Chosen so
 * that make test's run (2 + 1, then 4 + 2, seed 1) takes about 60 s on an
 * idle 2-core machine in the normal build. Most of a step's time is waits
 * for the gga bdev's timers (probes, the watchdog), so an ASan build takes
 * about as long and runs the same steps (docs/TESTING.md).
 */
#define T_STEPS         2400
/*
 * The hang guard (GGA_TORTURE_LIMIT_SECONDS): T_LIMIT_BASE_S plus
 * T_LIMIT_STEP_MS per step, some six times what a step takes here, and
 * short enough that both geometries end within test/unit/run.sh's 600 s.
 */
#define T_LIMIT_BASE_S  30
#define T_LIMIT_STEP_MS 80

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
	OP_CRASH,
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
	[OP_CRASH] = { "crash", 3 },
};

/*
 * What the oracle knows of one member's fragment of one block, from the
 * test's own operations only (never from the gga bdev's view of its members).
 */
enum t_hold {
	/* The block's last acknowledged version. */
	H_CUR = 0,
	/* That, or the newer version of a write that was not acknowledged (failed, cut). */
	H_MAYBE,
	/* Not the last version: it missed writes, or its storage was destroyed. A recovery must mend it. */
	H_MISSED,
	/* Damaged in place by the test (a corrupt byte, a dropped write, an orphan of a torn write). */
	H_BAD,
};

/* What the model knows of one logical block. */
struct t_block {
	uint8_t nver;          /* contents a read may return: g_ver[lba][0..nver-1] */
	uint8_t unacked;       /* writes to it not acknowledged since its last acknowledged one */
	uint8_t hold[T_MAX_N]; /* enum t_hold, per member */
	uint32_t seq;          /* writes issued to it (a restored copy older than one missed it) */
	/*
	 * Since its last acknowledged write, some member held a fragment that
	 * may hide a newer write (damaged, or of a write not acknowledged): a
	 * pass may have called it unrecoverable then.
	 */
	bool doubt;
	/* Hashes of contents it held before (for the report only: "an older content"). */
	uint8_t nold;
	uint64_t old[T_OLD];
};

/* Why a failed read was accepted (the counts printed at the end), the strongest cause first. */
enum t_accept {
	/* Fewer than k members hold the block's version at all, by the oracle's record. */
	ACC_LOST = 0,
	/* k members hold it, but fewer than k of them are up: the test failed the others. */
	ACC_DOWN,
	/* Only because members the oracle has not verified since they came back are not counted. */
	ACC_UNVERIFIED,
	/* A write beside it in the same batch failed. */
	ACC_BATCH,
	/* A stalled member was reset under it, or a crash cut it. */
	ACC_ABORTED,
	ACC_COUNT
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
	/*
	 * Members whose fragments the oracle does not count until it has
	 * verified them on their media: returned after a failure, stalled,
	 * destroyed, or everyone after a crash (t_verify clears them).
	 */
	uint32_t unverified;
	/* Of those, members whose storage was destroyed (blank, old copy, replaced). */
	uint32_t destroyed;
	/* Not online per the gga bdev or failed by the test: when to bring the array back only. */
	uint32_t last_unreach;
	uint32_t down_steps;
	/* Recovery passes stop at this block (0: they run); kept across restarts. */
	uint64_t hold_at;
	uint32_t hold_steps;
	uint64_t writes_dropped;
	uint8_t *snap[T_MAX_N];
	/* What each member held of each block when its snapshot was taken. */
	uint8_t snap_hold[T_MAX_N][NBLK];
	uint32_t snap_seq[T_MAX_N][NBLK];
	struct t_block blk[NBLK];
	uint64_t step;
	uint32_t hist_next;
	char hist[T_HIST][T_LINE];
	bool failed;
	bool hung;
	bool crashing; /* op_crash: the I/O of this batch may fail whatever the record says */
	bool final;    /* in the final check, after the steps */
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
	uint64_t accepted[ACC_COUNT]; /* failed reads the oracle accepted, by cause */
	uint64_t crashes, crash_writes_acked, crash_writes_cut, verifies, frags_verified;
	uint64_t recovered_verified; /* members verified on their media after they came back */
	uint64_t torn_left;          /* fragments of cut writes the gga bdev left on a member */
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

/* Append to buf (size bytes, *len used so far): never past its end. */
static void __attribute__((format(printf, 4, 5)))
t_cat(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*len + 1 >= size) {
		return;
	}
	va_start(ap, fmt);
	n = vsnprintf(buf + *len, size - *len, fmt, ap);
	va_end(ap);
	if (n > 0) {
		*len = GGA_MIN(*len + (size_t)n, size - 1);
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
		"GGA_TORTURE_STEPS=%" PRIu64 " %s%s%s"
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
		memset(&t->blk[b], 0, sizeof(t->blk[b]));
		t->blk[b].nver = 1;
		memset(g_ver[b][0], 0, t->bs);
	}
	t->injected = 0;
	t->unverified = 0;
	t->destroyed = 0;
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

/* Members whose fragments the oracle counts: not failed by the test, verified since. */
static uint32_t
t_available(const struct torture *t)
{
	return t->all & ~t->injected & ~t->unverified;
}

/*
 * Must a read of block b succeed, with the fragments of the members in
 * `avail` (in sync by the record)? Yes if k of them hold its last
 * acknowledged version. With one write not acknowledged since (failed, or cut
 * by a crash), the members that may hold either version count too when every
 * split of them between the two leaves k fragments of one (FORMAT 7.2:
 * 2 + 1 always, 4 + 2 not with a 3 / 3 split). `more`: members the gga bdev
 * has just reported recovered, not yet verified; their fragments count only
 * where no member has held one that may hide a newer write since the last
 * acknowledged write (a damaged fragment, or one of a write not
 * acknowledged): a pass that recovered them then may have called the block
 * unrecoverable (FORMAT 7.2, "members that missed writes"). Nothing here asks
 * the gga bdev.
 */
static bool
t_must_read(const struct torture *t, uint64_t b, uint32_t avail, uint32_t more)
{
	const struct t_block *blk = &t->blk[b];
	uint32_t x = 0, y = 0, xm = 0, i, bit;
	bool doubt = blk->doubt;

	for (i = 0; i < t->n; i++) {
		bit = 1u << i;
		if (avail & bit) {
			x += blk->hold[i] == H_CUR;
			y += blk->hold[i] == H_MAYBE;
		}
		if ((avail | more) & bit) {
			xm += blk->hold[i] == H_CUR;
			doubt |= blk->hold[i] == H_BAD || blk->hold[i] == H_MAYBE;
		}
	}
	if (x >= t->k) {
		return true;
	}
	if (blk->unacked == 1 && x + y - GGA_MIN(y, t->k - 1) >= t->k) {
		return true;
	}
	return more != 0 && !doubt && xm >= t->k;
}

/* Members whose fragment of b is damaged or missing by the oracle's record. */
static uint32_t
t_unsure(const struct torture *t, uint64_t b)
{
	uint32_t mask = 0, i;

	for (i = 0; i < t->n; i++) {
		if (t->blk[b].hold[i] >= H_MISSED) {
			mask |= 1u << i;
		}
	}
	return mask;
}

/* The holds of block b as text ("C" last version, "?" maybe, "M" missed, "B" bad). */
static const char *
t_holds(const struct torture *t, uint64_t b, char *buf)
{
	static const char sym[] = "C?MB";
	uint32_t i;

	for (i = 0; i < t->n; i++) {
		buf[i] = sym[t->blk[b].hold[i] & 3];
	}
	buf[t->n] = '\0';
	return buf;
}

/*
 * The members not online now (bdev_gga_get_info) or failed by the test. The
 * gga bdev's view: for the log and for when to bring a long-down array back,
 * never for what a read may return.
 */
static uint32_t
t_sample(struct torture *t)
{
	struct bdev_gga_info info;
	uint32_t off = 0, i;

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
	t->last_unreach = off | t->injected;
	return t->last_unreach;
}

/*
 * Members that hold every block the oracle knows: counted now, storage not
 * destroyed. With k of them an assembly must succeed and every member must
 * come back.
 */
static uint32_t
t_good(const struct torture *t)
{
	return t_available(t) & ~t->destroyed;
}

/* Member i failed, stalled or came back: not counted until verified. */
static void
t_unverify(struct torture *t, uint32_t mask)
{
	t->unverified |= mask & t->all;
}

/* The test stops failing these members: they come back, counted once verified. */
static void
t_uninject(struct torture *t, uint32_t mask)
{
	t_unverify(t, mask & t->injected);
	t->injected &= ~mask;
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
	/*
	 * No fault policy: the gga bdev would fail a member for the corrupt
	 * fragments this test plants, on its own judgement, and the oracle counts
	 * a member only from what the test did (test_member_faulted covers it).
	 */
	opts.member_error_limit = 0;
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
			/* Rebuilt: counted again once verified. */
			t_unverify(t, 1u << i);
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
	t_uninject(t, t->injected);
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

/*
 * Wait (bounded, one deadline for all) until the members in `mask` have left
 * the failed state: the probe has seen them.
 */
static void
t_wait_probed(struct torture *t, uint32_t mask)
{
	/* Ten probes (gga_test_knobs.probe_ms): a member still failed then stays so for now. */
	uint64_t deadline = time_now_ns() + T_WAIT_NS / 6;
	uint32_t i, failed;

	do {
		for (i = 0, failed = 0; t->disk != NULL && i < t->n; i++) {
			if ((mask & (1u << i)) && t_member_state(t, i) == BDEV_GGA_MEMBER_FAILED) {
				failed |= 1u << i;
			}
		}
		if (failed == 0) {
			return;
		}
		ut_poll_once();
	} while (time_now_ns() < deadline);
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

/* The oracle, for one completed read. `aborted_ok`: a stalled member was reset, or a crash cut it. */
static void
t_check_read(struct torture *t, const struct t_io *io, const struct t_io *ios, uint32_t nios,
	     bool aborted_ok)
{
	uint32_t avail = t_available(t), wider = t->unverified & ~t->injected;
	uint64_t b, bad = UINT64_MAX;
	uint32_t nbad = 0, off = 0, older = 0;
	int cause = -1;
	bool zeros = false;
	char holds[T_MAX_N + 1];

	t->blocks_checked += io->n;
	if (!io->r.success) {
		t->reads_failed++;
		if (aborted_ok && (io->r.err == -ECANCELED || t->crashing)) {
			t->accepted[ACC_ABORTED]++;
			return;
		}
		for (b = io->lba; b < io->lba + io->n; b++) {
			int c;

			if (t_batch_failed_write(ios, nios, b)) {
				c = ACC_BATCH;
			} else if (t_must_read(t, b, avail, 0)) {
				continue;
			} else if (t_must_read(t, b, avail, wider)) {
				c = ACC_UNVERIFIED;
			} else if (t_must_read(t, b, t->all, 0)) {
				c = ACC_DOWN;
			} else {
				c = ACC_LOST;
			}
			cause = cause < 0 ? c : GGA_MIN(cause, c);
		}
		if (cause < 0) {
			char all[T_MAX_IO * (T_MAX_N + 6) + 1];
			size_t len = 0;

			all[0] = '\0';
			for (b = io->lba; b < io->lba + io->n; b++) {
				t_cat(all, sizeof(all), &len, " %s/%u", t_holds(t, b, holds),
				      t->blk[b].unacked);
			}
			t_fail(t,
			       "read of blocks %" PRIu64 "..%" PRIu64 " failed (errno %d) but the "
			       "oracle's record says every block is readable: each block's "
			       "fragments by member (C last version, ? maybe newer, M missed, "
			       "B bad) / writes not acknowledged since:%s; members counted 0x%x",
			       io->lba, io->lba + io->n - 1, io->r.err, all, avail);
			return;
		}
		t->accepted[cause]++;
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
	       "acknowledged content at byte %u; %u content(s) allowed; members' fragments %s "
	       "(C last version, ? maybe newer, M missed, B bad); members counted 0x%x; "
	       "oracle: this block %s)",
	       io->lba, io->lba + io->n - 1, nbad, bad, zeros ? "all zeros" : "not zeros",
	       older == 0 ? ", no older content either" :
	       older == 1 ? ", the content it held before the last acknowledged write" :
			    ", an older content it held",
	       off, t->blk[bad].nver, t_holds(t, bad, holds), avail,
	       t_must_read(t, bad, avail, 0) ? "is readable" :
					       "may be lost, so the read had to fail");
}

/*
 * After a batch: what the writes leave in the model. `avail`: the members the
 * oracle counted when they were issued. An acknowledged write is on each of
 * them (H_CUR) and missed by the others; one that failed may have reached any
 * member that held the last version.
 */
static void
t_apply_writes(struct torture *t, const struct t_io *ios, uint32_t nios, uint32_t avail)
{
	uint64_t b, lo = UINT64_MAX, hi = 0;
	uint32_t v, cover, i;
	bool failed;

	for (v = 0; v < nios; v++) {
		if (ios[v].write) {
			lo = GGA_MIN(lo, ios[v].lba);
			hi = GGA_MAX(hi, ios[v].lba + ios[v].n);
		}
	}
	for (b = lo; b < hi; b++) {
		struct t_block *blk = &t->blk[b];

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
		blk->seq++;
		if (!failed) {
			/* Acknowledged: these contents only (either, if two raced). */
			t_remember(t, b);
			blk->nver = 0;
			blk->unacked = 0;
			blk->doubt = false;
			for (i = 0; i < t->n; i++) {
				blk->hold[i] = (avail & (1u << i)) ? H_CUR : H_MISSED;
			}
		} else {
			/* Not acknowledged: it may have reached some members, old or new. */
			blk->unacked = (uint8_t)GGA_MIN(blk->unacked + 1u, 100u);
			blk->doubt = true;
			for (i = 0; i < t->n; i++) {
				if (blk->hold[i] == H_CUR) {
					blk->hold[i] = H_MAYBE;
				}
			}
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
	printf("torture: disk: live 0x%x write 0x%x persisted reached 0x%x sync 0x%x rec 0x%x; generations "
	       "next %" PRIu64 " limit %" PRIu64 " epoch busy %d wanted %d; superblock kicked %d "
	       "in flight %d again %d events %" PRIu64 "; %u range locks held; front %" PRIu64
	       " submitted %" PRIu64 " done; walk %p\n",
	       gga_live_mask(d), gga_write_mask(d), (uint32_t)(d->persisted & 0xffff),
	       (uint32_t)(d->persisted >> 16 & 0xffff), (uint32_t)(d->persisted >> 32 & 0xffff),
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
 * The I/Os of a batch are done: check the reads, count the writes, update the
 * model. `avail`: the members the oracle counted when they were issued.
 */
static void
t_check_ios(struct torture *t, struct t_io *ios, uint32_t nios, uint32_t avail, bool aborted)
{
	uint32_t v;

	for (v = 0; v < nios; v++) {
		if (!ios[v].write) {
			t_check_read(t, &ios[v], ios, nios, aborted);
		} else if (ios[v].r.success) {
			t->writes_ok++;
		} else {
			t->writes_failed++;
			if (avail == t->all && !aborted) {
				t_fail(t,
				       "write of blocks %" PRIu64 "..%" PRIu64 " failed (errno %d) "
				       "with every member up by the oracle's record",
				       ios[v].lba, ios[v].lba + ios[v].n - 1, ios[v].r.err);
			}
		}
	}
	t_apply_writes(t, ios, nios, avail);
}

/*
 * The oracle's look at the members themselves, at a quiet moment: each
 * member's storage read straight from its base (below the error bdev, so
 * whatever is injected), each block decoded as FORMAT 7.2 says (the codec is
 * the format's definition; nothing of the gga bdev's state is read). The
 * evidence is what the members in sync hold, as for the gga bdev (a blank or
 * stale member's fragment proves nothing, FORMAT 3.1): the members the
 * oracle counts, and those being checked. The fragment of each other member
 * is then compared with the version found. Checked:
 *  A  a block the record says must read decodes to one of its contents;
 *  B  a member counted as holding the last version (H_CUR) holds it;
 *  C  with `recovered` (the gga bdev reported every member the test has not
 *     failed online and no pass running: when to look, not what to find),
 *     a member that came back holds every block that decodes, except
 *     fragments the test damaged in place since (H_BAD) or cut writes;
 *  D  after a whole scrub (`scrubbed`), every member the test has not failed
 *     holds every block that decodes.
 * Then the record takes what the media show: members that hold the decoded
 * version's fragment hold the last version, the block's contents are that
 * version's, and the members that came back are counted again. A block that
 * does not decode keeps its record.
 */
static void
t_verify(struct torture *t, bool recovered, bool scrubbed)
{
	uint32_t avail = t_available(t), checking = recovered ? t->unverified & ~t->injected : 0;
	uint32_t evid = avail | checking, valid, i, v, bit;
	const void *fd[T_MAX_N], *fm[T_MAX_N];
	uint8_t *img[T_MAX_N] = { NULL }, *out;
	struct gga_codec_scratch *scr = NULL;
	struct gga_decode_info info, one;
	char holds[T_MAX_N + 1];
	uint64_t b, off;
	bool must, sure, doubt;
	int rc, ver;

	if (t->disk == NULL || t->failed) {
		return;
	}
	ut_poll_idle();
	out = malloc(T_MAX_BS);
	CU_ASSERT_FATAL(out != NULL);
	for (i = 0; i < t->n; i++) {
		img[i] = snapshot(t->base[i]);
	}
	UT_ASSERT_EQ_FATAL(gga_codec_scratch_alloc(t->disk->codec, &scr), 0);
	for (b = 0; b < NBLK && !t->failed; b++) {
		struct t_block *blk = &t->blk[b];

		for (i = 0; i < t->n; i++) {
			off = (t->disk->data_offset + b) * t->disk->mbs;
			fd[i] = img[i] + off;
			fm[i] = img[i] + off + t->disk->frag_size;
		}
		memset(&info, 0, sizeof(info));
		rc = gga_codec_decode(t->disk->codec, scr, fd, fm, evid, b, out, &info);
		ver = -1;
		for (v = 0; rc == 0 && v < blk->nver && ver < 0; v++) {
			if (memcmp(out, g_ver[b][v], t->bs) == 0) {
				ver = (int)v;
			}
		}
		must = t_must_read(t, b, avail, checking);
		t->frags_verified += t->n;
		/*
		 * Found with the fragments of members just recovered while another
		 * may hide a newer write: the gga bdev may call it unrecoverable
		 * (FORMAT 7.2), so its recovered members need not hold it.
		 */
		sure = (uint32_t)__builtin_popcount(info.valid_mask & avail) >= t->k;
		for (i = 0, doubt = false; i < t->n; i++) {
			doubt |= (evid & (1u << i)) &&
				 (blk->hold[i] == H_BAD || blk->hold[i] == H_MAYBE);
		}
		sure |= !doubt && !blk->doubt;
		if (ver < 0) {
			if (must) {
				t_fail(t,
				       "verify: block %" PRIu64
				       " of the members' media %s, but the "
				       "record says k members hold its last version (fragments %s, "
				       "members counted 0x%x; decode of members 0x%x: %d, valid 0x%x "
				       "stale 0x%x orphan 0x%x corrupt 0x%x)",
				       b,
				       rc == 0 ? "decodes to a content never written there" :
						 "does not decode",
				       t_holds(t, b, holds), avail, evid, rc, info.valid_mask,
				       info.stale_mask, info.orphan_mask, info.corrupt_mask);
			}
			/* The members recovered hold nothing of it the media can show. */
			for (i = 0; i < t->n; i++) {
				if (checking & (1u << i)) {
					blk->hold[i] = H_BAD;
					blk->doubt = true;
				}
			}
			continue;
		}
		valid = info.valid_mask;
		for (i = 0; i < t->n; i++) {
			bit = 1u << i;
			if (evid & bit) {
				continue;
			}
			/* Does member i hold that version's fragment too? */
			memset(&one, 0, sizeof(one));
			if (gga_codec_decode(t->disk->codec, scr, fd, fm, evid | bit, b, out,
					     &one) == 0 &&
			    one.generation == info.generation && (one.valid_mask & bit)) {
				valid |= bit;
			}
		}
		for (i = 0; i < t->n && !t->failed; i++) {
			bit = 1u << i;
			if ((valid & bit) || !(evid & bit)) {
				continue;
			}
			if ((avail & bit) && blk->hold[i] == H_CUR) {
				t_fail(t,
				       "verify: member %u lost its fragment of block %" PRIu64
				       ": the "
				       "record has it holding the last acknowledged version (fragments "
				       "%s), its media do not (valid 0x%x stale 0x%x orphan 0x%x "
				       "corrupt 0x%x)",
				       i, b, t_holds(t, b, holds), info.valid_mask, info.stale_mask,
				       info.orphan_mask, info.corrupt_mask);
			} else if ((checking & bit) && sure &&
				   (blk->hold[i] == H_CUR || blk->hold[i] == H_MISSED)) {
				t_fail(t,
				       "verify: member %u is reported back with no pass running, but "
				       "its fragment of block %" PRIu64
				       " is not the block's (fragments "
				       "%s; valid 0x%x stale 0x%x orphan 0x%x corrupt 0x%x)",
				       i, b, t_holds(t, b, holds), info.valid_mask, info.stale_mask,
				       info.orphan_mask, info.corrupt_mask);
			} else if (scrubbed && !(t->injected & bit)) {
				t_fail(t,
				       "verify: after a whole scrub with every member online, member "
				       "%u's fragment of block %" PRIu64
				       " is still not the block's "
				       "(fragments %s; valid 0x%x stale 0x%x orphan 0x%x corrupt 0x%x)",
				       i, b, t_holds(t, b, holds), info.valid_mask, info.stale_mask,
				       info.orphan_mask, info.corrupt_mask);
			} else if ((checking & bit) && blk->hold[i] == H_MAYBE) {
				/* A fragment of a cut write left over (repair is a SHOULD). */
				t->torn_left++;
			}
		}
		if (ver != 0) {
			memcpy(g_ver[b][0], g_ver[b][ver], t->bs);
		}
		blk->nver = 1;
		blk->unacked = 0;
		for (i = 0; i < t->n; i++) {
			bit = 1u << i;
			/* Damage the test did in place stays that (no recovery has to mend it). */
			blk->hold[i] = (valid & bit)                         ? H_CUR :
				       (evid & bit) || blk->hold[i] == H_BAD ? H_BAD :
									       H_MISSED;
			blk->doubt |= blk->hold[i] == H_BAD;
		}
	}
	gga_codec_scratch_free(scr);
	for (i = 0; i < t->n; i++) {
		free(img[i]);
	}
	free(out);
	if (t->failed) {
		return;
	}
	t->verifies++;
	t->recovered_verified += (uint32_t)__builtin_popcount(checking);
	t->unverified &= ~checking;
	t->destroyed &= ~checking;
	t_log(t, "verify: media of %u members checked%s%s; members 0x%x counted again", t->n,
	      recovered ? ", recovery reported done" : "", scrubbed ? ", after a scrub" : "",
	      checking);
}

/*
 * Wait (bounded) until the gga bdev reports every member the test has not
 * failed online with no pass running, then verify the media (t_verify).
 */
static bool
t_sync(struct torture *t, bool scrubbed)
{
	bool ok = t_wait_recovered(t, T_WAIT_NS);

	t_verify(t, ok, scrubbed && ok);
	return ok;
}

/*
 * Submit the I/Os at once, wait for all of them, check the reads and update
 * the model. With `stall` >= 0 that member holds its I/O (the error bdev's
 * pending injection) until the test resets it.
 */
static void
t_run_ios(struct torture *t, struct t_io *ios, uint32_t nios, int stall, const char *what)
{
	uint32_t before, after, v, polls, avail;
	uint64_t deadline;
	bool all_done = false, reset = false;

	before = t_sample(t);
	if (stall >= 0) {
		/* The watchdog or the test's reset fails it: counted again once verified. */
		t_unverify(t, 1u << stall);
		UT_ASSERT_EQ(t_inject(t, (uint32_t)stall, BDEV_ERROR_PENDING), 0);
	}
	avail = t_available(t);
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
	t_check_ios(t, ios, nios, avail, reset);
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
