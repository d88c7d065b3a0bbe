/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One regression test per lifecycle rule, through the production code (the
 * real gga bdev on error bdevs over malloc members, ../bdev_gga_heal_env.c):
 * each fails on a slip that survived every other unit test, named in its
 * comment, and passes on the code as it stands. docs/TESTING.md lists them.
 *
 *   test_ack_threshold        a write is acknowledged with k members, never k - 1
 *   test_hidden_fragment      a resync never takes an older version past a newer
 *                             fragment on a member in sync (FORMAT 7.2)
 *   test_failed_pass_restart  a pass that failed drops its checkpoint: the next
 *                             starts at block 0
 *   test_write_aborted        a write a reset aborted on one member fails
 *   test_format_count         a blank member's record is the next update's
 *   test_checkpoint_in_flight the checkpoint stays at the lowest chunk in flight
 *   test_rebuild_and_resync   4 + 2: a blank and a stale member in one pass: rebuild
 *   test_sweep_touched        the sweep keeps the mark of a region written since
 *                             its last look (FORMAT 3.2)
 *   test_bitmap_union         assembly takes the union of the members' bitmaps
 *   test_blank_probe_below_k  a blank member probed below k is not written at all
 *   test_pass_done_race       a failure an I/O thread takes between a step's view and
 *                             its take stands (rule 9's compare-and-swap)
 *   test_ack_pass_member_missed a write a pass member missed waits for an update
 *                             without its checkpoint bit, however the bit got there
 *   test_write_beside_new_pass a member that misses a write and joins a pass before
 *                             it is decided does not hold it (they waited for ever)
 */
#include "test/unit/bdev_gga/bdev_gga_heal_env.c"

/* ---------------------------------------------------------------------- */
/* Helpers                                                                 */
/* ---------------------------------------------------------------------- */

/*
 * Options of a k + m array `p` over EE_p1..EE_pn: recovery unlimited, no
 * member timeout (the tests hold member I/O on purpose), the given re-add
 * policy and write-intent region (KiB, 0: the default).
 */
static void
rules_opts(const char *p, uint32_t k, uint32_t m, bool auto_readd, uint32_t region_kib,
	   struct bdev_gga_opts *opts)
{
	static char names[BDEV_GGA_MAX_MEMBERS][16];
	uint32_t i;

	bdev_gga_opts_init(opts);
	opts->name = p;
	opts->k = k;
	opts->m = m;
	if (m > 1) {
		opts->matrix = GGA_MATRIX_CAUCHY;
		opts->matrix_set = true;
	}
	for (i = 0; i < k + m; i++) {
		snprintf(names[i], sizeof(names[i]), "EE_%s%u", p, i + 1);
		opts->members[i] = names[i];
	}
	opts->auto_readd = auto_readd;
	opts->bitmap_region_kib = region_kib;
	opts->rebuild_rate_mib_s = 0;
	opts->member_timeout_ms = 0;
}

static struct gga_disk *
make_rules_gga(const char *p, uint32_t k, uint32_t m, bool auto_readd, uint32_t region_kib)
{
	struct bdev_gga_opts opts;
	struct create_res r;

	rules_opts(p, k, m, auto_readd, region_kib, &opts);
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
	return r.bdev->ctxt;
}

/* Blocks of the array's logical size: n blocks of block_size bytes, random. */
static uint8_t *
random_blocks(const struct gga_disk *disk, uint32_t n)
{
	uint8_t *buf = malloc((size_t)n * disk->block_size);

	CU_ASSERT_FATAL(buf != NULL);
	fill_random(buf, (size_t)n * disk->block_size);
	return buf;
}

/* Inject `type` on io_type `io` of error bdev `name`, every I/O (num 0) or the next num. */
static void
inject_io(const char *name, enum bdev_io_type io, enum bdev_error_type type, uint32_t num,
	  uint64_t from_block)
{
	struct bdev_error_inject_opts opts = {
		.io_type = io,
		.error_type = type,
		.num = num,
		.from_block = from_block,
	};

	UT_ASSERT_EQ_FATAL(bdev_error_inject_error(name, &opts), 0);
}

/*
 * The superblock record on base bdev `base` (the malloc bdev under the error
 * bdev, read with a descriptor of its own: nothing injected above it, and no
 * gga bdev needed). 0, or gga_sb_decode's error.
 */
static int
base_sb(const char *base, uint32_t frag_size, struct gga_sb *sb)
{
	struct bdev *bdev = bdev_get_by_name(base);
	struct ut_dev dev;
	struct ut_io r;
	uint8_t *blk;
	int rc;

	CU_ASSERT_FATAL(bdev != NULL);
	blk = calloc(1, bdev_get_buf_block_size(bdev));
	CU_ASSERT_FATAL(blk != NULL);
	UT_ASSERT_EQ_FATAL(ut_dev_open_mode(&dev, base, false, g_ut_app), 0);
	rc = ut_io_sync(&dev, BDEV_IO_TYPE_READ, blk, 0, 1, &r);
	ut_dev_close(&dev);
	if (rc == 0 && !(r.done && r.success)) {
		rc = -EIO;
	}
	if (rc == 0) {
		rc = gga_sb_decode(blk, frag_size, sb);
	}
	free(blk);
	return rc;
}

/* Member i's superblock record read through the gga bdev's descriptor (0 or decode's error). */
static int
member_sb(struct gga_disk *disk, uint32_t i, struct gga_sb *sb)
{
	uint8_t *blk = malloc(disk->mbs);
	int rc;

	CU_ASSERT_FATAL(blk != NULL);
	rc = member_rw(disk, i, false, 0, 1, blk);
	if (rc == 0) {
		rc = gga_sb_decode(blk, disk->frag_size, sb);
	}
	free(blk);
	return rc;
}

/*
 * Every data block 0..nblk-1 decoded from the fragments on the members now
 * (read straight from them) must be `want`, with member `who`'s fragment part
 * of the version chosen: it holds that block. Returns the blocks that fail.
 */
static uint32_t
member_blocks_wrong(struct gga_disk *disk, uint32_t who, const uint8_t *want, uint32_t nblk)
{
	uint8_t *img[BDEV_GGA_MAX_MEMBERS], *out = malloc(disk->block_size);
	const void *fd[BDEV_GGA_MAX_MEMBERS], *fm[BDEV_GGA_MAX_MEMBERS];
	struct gga_codec_scratch *s;
	struct gga_decode_info info;
	uint32_t i, b, bad = 0;
	int rc;

	CU_ASSERT_FATAL(out != NULL);
	UT_ASSERT_EQ_FATAL(gga_codec_scratch_alloc(disk->codec, &s), 0);
	for (i = 0; i < disk->n; i++) {
		img[i] = malloc((size_t)nblk * disk->mbs);
		CU_ASSERT_FATAL(img[i] != NULL);
		UT_ASSERT_EQ(member_rw(disk, i, false, disk->data_offset, nblk, img[i]), 0);
	}
	for (b = 0; b < nblk; b++) {
		for (i = 0; i < disk->n; i++) {
			fd[i] = img[i] + (size_t)b * disk->mbs;
			fm[i] = img[i] + (size_t)b * disk->mbs + disk->frag_size;
		}
		rc = gga_codec_decode(disk->codec, s, fd, fm, disk->all_mask, b, out, &info);
		if (rc != 0 || !(info.valid_mask & (1u << who)) ||
		    memcmp(out, want + (size_t)b * disk->block_size, disk->block_size) != 0) {
			if (bad < 4) {
				fprintf(stderr, "  block %u: rc %d, valid 0x%x (member %u)\n", b,
					rc, info.valid_mask, who);
			}
			bad++;
		}
	}
	for (i = 0; i < disk->n; i++) {
		free(img[i]);
	}
	gga_codec_scratch_free(s);
	free(out);
	return bad;
}

/* Send a reset down member i through the gga bdev's descriptor: held I/O ends aborted. */
static void
member_reset(struct gga_disk *disk, uint32_t i)
{
	struct io_channel *ch = bdev_get_io_channel(disk->members[i].desc);
	struct ut_io r = { 0 };

	CU_ASSERT_FATAL(ch != NULL);
	UT_ASSERT_EQ(bdev_reset(disk->members[i].desc, ch, ut_io_done, &r), 0);
	UT_POLL_UNTIL(r.done);
	CU_ASSERT(r.done);
	io_channel_put(ch);
	ut_poll_idle();
}

static void
knobs_reset(void)
{
	memset(&gga_test_knobs, 0, sizeof(gga_test_knobs));
}

static void
last_recovery(const char *name, struct bdev_gga_recovery_info *last)
{
	struct bdev_gga_info info;

	get_info(name, &info);
	*last = info.last_recovery;
	bdev_gga_info_clear(&info);
}

/* ---------------------------------------------------------------------- */
/* 1. The acknowledgement threshold                                        */
/* ---------------------------------------------------------------------- */

/* Fail the writes of the members in `mask` (error bdevs EE_<p><i+1>), or clear them. */
static void
inject_writes(const char *p, uint32_t mask, enum bdev_error_type type)
{
	char name[16];
	uint32_t i;

	for (i = 0; i < BDEV_GGA_MAX_MEMBERS; i++) {
		if (mask & (1u << i)) {
			snprintf(name, sizeof(name), "EE_%s%u", p, i + 1);
			inject_io(name, BDEV_IO_TYPE_WRITE, type, 0, 0);
		}
	}
}

/*
 * One write that the members in `fail` fail and the others take. Its region
 * is marked first and no superblock update is under way, so that the write
 * itself is the first write those members fail (not a bitmap or superblock
 * write before it). The wait is bounded: returns whether it completed, and
 * *ok its status.
 */
static bool
write_with_failures(struct gga_disk *disk, const char *p, uint32_t fail, uint64_t lba, uint32_t n,
		    uint8_t *buf, bool *ok)
{
	struct ut_io r;
	uint32_t i;

	CU_ASSERT(dev_write(lba, n, buf));
	WAIT_FOR(gga_bitmap_marked(disk, lba) && !gga_bitmap_busy(disk) && !disk->sb_inflight &&
		 !__atomic_load_n(&disk->sb_kicked, __ATOMIC_ACQUIRE) && disk->walk == NULL);
	CU_ASSERT_FATAL(gga_bitmap_marked(disk, lba) && !disk->sb_inflight);
	fill_random(buf, (size_t)n * disk->block_size);
	inject_writes(p, fail, BDEV_ERROR_FAILURE);
	UT_ASSERT_EQ_FATAL(ut_submit(&g_dev, BDEV_IO_TYPE_WRITE, buf, lba, n, &r), 0);
	UT_POLL_UNTIL(r.done);
	inject_writes(p, fail, BDEV_ERROR_NONE);
	/* Each of them failed on this write, and nothing else. */
	for (i = 0; i < disk->n; i++) {
		if (fail & (1u << i)) {
			UT_ASSERT_STR_EQ(__atomic_load_n(&disk->members[i].reason,
							 __ATOMIC_ACQUIRE),
					 "a write failed");
		}
	}
	*ok = r.done && r.success;
	return r.done;
}

/*
 * Rule 7's threshold: a write is acknowledged only if at least k online
 * members took it (gga_lc_ack_decide(), called by write_phase_done()). With
 * exactly k members taking it (the other m fail it) it succeeds, once the
 * records on those k call the missers stale; with exactly k - 1 (all the
 * others fail it) it fails, within a bounded wait. Kills `< k` written
 * `< k - 1` (the k - 1 write is never acknowledged nor failed: it hangs)
 * and `<` written `<=` (the k write fails).
 */
static void
ack_threshold(const char *p, uint32_t k, uint32_t m, uint32_t fail_k, uint32_t fail_k1)
{
	struct gga_disk *disk;
	uint8_t *a, *b, *rd;
	struct gga_sb sb;
	bool on = true, off = false, ok = false;
	uint32_t i, n = k + m;

	gga_test_knobs.probe_ms = 20;
	make_error_members(p, n, MBS);
	disk = make_rules_gga(p, k, m, false, 0);
	open_dev(p);
	a = random_blocks(disk, 4);
	b = random_blocks(disk, 4);
	rd = malloc(4 * disk->block_size);
	CU_ASSERT(dev_write(0, 4, a));

	/* Exactly k take it: acknowledged, and by then their records call the others stale. */
	UT_ASSERT_EQ(__builtin_popcount(fail_k), m);
	CU_ASSERT(write_with_failures(disk, p, fail_k, 8, 4, b, &ok));
	CU_ASSERT(ok);
	for (i = 0; i < n; i++) {
		if (fail_k & (1u << i)) {
			UT_ASSERT_EQ(gga_member_state(&disk->members[i]), BDEV_GGA_MEMBER_FAILED);
			continue;
		}
		UT_ASSERT_EQ(member_sb(disk, i, &sb), 0);
		UT_ASSERT_EQ(sb.member_state[__builtin_ctz(fail_k)], GGA_SB_MEMBER_STALE);
		UT_ASSERT_EQ(sb.member_state[31 - __builtin_clz(fail_k)], GGA_SB_MEMBER_STALE);
	}
	CU_ASSERT(dev_read(8, 4, rd));
	CU_ASSERT(memcmp(rd, b, 4 * disk->block_size) == 0);

	/* Whole again. */
	UT_ASSERT_EQ(bdev_gga_set_options(p, NULL, &on), 0);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask && disk->walk == NULL);
	UT_ASSERT_EQ(gga_live_mask(disk), disk->all_mask);
	UT_ASSERT_EQ(bdev_gga_set_options(p, NULL, &off), 0);

	/* Exactly k - 1 take it: it fails, and does not hang. */
	UT_ASSERT_EQ(__builtin_popcount(fail_k1), n - (k - 1));
	ok = true;
	CU_ASSERT(write_with_failures(disk, p, fail_k1, 16, 4, b, &ok));
	CU_ASSERT(!ok);

	free(a);
	free(b);
	free(rd);
	ut_dev_close(&g_dev);
	gga_delete_sync(p);
	delete_error_members(p, n);
	knobs_reset();
}

static void
test_ack_threshold(void)
{
	/* 2 + 1: parity fails (k take); data_2 and parity fail (k - 1 take). */
	ack_threshold("A", 2, 1, 1u << 2, (1u << 1) | (1u << 2));
	/* 4 + 2: data_2 and parity_1 fail; then data_1, data_3 and parity_2. */
	ack_threshold("B", 4, 2, (1u << 1) | (1u << 4), (1u << 0) | (1u << 2) | (1u << 5));
}

/* ---------------------------------------------------------------------- */
/* 2. The hidden-fragment rule (FORMAT 7.2, "Members that missed writes")  */
/* ---------------------------------------------------------------------- */

/*
 * A resync reads the member it resyncs, whose fragments are one version
 * older where it missed a write. Blocks 4 and 6 hold A on all three; the
 * parity fails; B is written to them, acknowledged on data_1 and data_2, but
 * data_2 drops it (a disk that loses writes): data_2 and the parity still hold
 * A, two fragments of one version, enough to decode. Block 4 keeps B intact
 * on data_1 (an orphan); block 6's B fragment on data_1 is then damaged in
 * its data, its header (generation of B) intact (hidden_mask). The resync
 * must not take A for either (op_rebuild() in bdev_gga_walk.c): both are
 * left unrecoverable and their reads fail, rather than return A, the content
 * before an acknowledged write. The other blocks of the region are resynced.
 * Kills dropping the hidden_mask clause (block 6 reads back as A) and the
 * orphan_mask clause (block 4 does).
 */
static void
test_hidden_fragment(void)
{
	struct bdev_gga_recovery_info last;
	uint8_t a[8 * LBS], b[2 * LBS], c[2 * LBS], want[8 * LBS], rd[LBS];
	struct gga_disk *disk;
	bool on = true;
	uint32_t i, path;

	gga_test_knobs.probe_ms = 20;
	make_error_members("H", 3, MBS);
	disk = make_rules_gga("H", 2, 1, false, 4);
	open_dev("H");
	fill_random(a, sizeof(a));
	fill_random(b, sizeof(b));
	fill_random(c, sizeof(c));
	CU_ASSERT(dev_write(0, 8, a));

	fail_member(disk, "EE_H3", 2);
	UT_ASSERT_EQ(inject("EE_H3", BDEV_ERROR_NONE), 0);
	/* data_2 acknowledges B for blocks 4 and 6 without writing it. */
	inject_io("EE_H2", BDEV_IO_TYPE_WRITE, BDEV_ERROR_DROP, 0, disk->data_offset + 4);
	CU_ASSERT(dev_write(4, 1, b));
	CU_ASSERT(dev_write(6, 1, b + LBS));
	inject_io("EE_H2", BDEV_IO_TYPE_WRITE, BDEV_ERROR_NONE, 0, 0);
	UT_ASSERT_EQ(frag_generation(disk, 1, 4), frag_generation(disk, 2, 4));
	CU_ASSERT(frag_generation(disk, 0, 4) > frag_generation(disk, 1, 4));
	/* Blocks 5 and 7 of the same region: C, on data_1 and data_2. */
	CU_ASSERT(dev_write(5, 1, c));
	CU_ASSERT(dev_write(7, 1, c + LBS));
	/* Block 6 on data_1: data damaged, header of B intact. */
	flip(disk, 0, 6, 7, 0x40);

	UT_ASSERT_EQ(bdev_gga_set_options("H", NULL, &on), 0);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask && disk->walk == NULL);
	UT_ASSERT_EQ(gga_live_mask(disk), disk->all_mask);
	last_recovery("H", &last);
	CU_ASSERT(last.valid && !last.rebuild);
	UT_ASSERT_EQ(last.members, 1u << 2);
	UT_ASSERT_EQ(last.result, 0);
	UT_ASSERT_EQ(last.unrecoverable_blocks, 2);

	/* Neither block ever reads back as A (nor anything else), on any path. */
	for (path = 0; path <= disk->k; path++) {
		disk->recovery_read_every_n = path == 0 ? 0 : 1;
		for (i = 4; i <= 6; i += 2) {
			memset(rd, 0, sizeof(rd));
			CU_ASSERT(!dev_read(i, 1, rd));
			CU_ASSERT(memcmp(rd, a + i * LBS, LBS) != 0);
		}
	}
	disk->recovery_read_every_n = 0;
	/* The rest is whole, the resynced member included. */
	memcpy(want, a, sizeof(want));
	memcpy(want + 5 * LBS, c, LBS);
	memcpy(want + 7 * LBS, c + LBS, LBS);
	check_all_paths(disk, 0, 4, want);
	check_all_paths(disk, 5, 1, want + 5 * LBS);
	check_all_paths(disk, 7, 1, want + 7 * LBS);
	UT_ASSERT_EQ(inject("EE_H1", BDEV_ERROR_FAILURE), 0);
	CU_ASSERT(dev_read(5, 1, rd));
	CU_ASSERT(memcmp(rd, c, LBS) == 0);
	UT_ASSERT_EQ(inject("EE_H1", BDEV_ERROR_NONE), 0);

	ut_dev_close(&g_dev);
	gga_delete_sync("H");
	delete_error_members("H", 3);
	knobs_reset();
}

/* ---------------------------------------------------------------------- */
/* 3. A failed pass starts over                                            */
/* ---------------------------------------------------------------------- */

/*
 * Rule 6: a pass that ends without success drops its checkpoint, even with
 * its target still reachable. A rebuild of the parity (its storage wiped,
 * so every block must be written) is held at block 128 until its
 * checkpoint (mask 0x4, offset 128) is on the members; then data_1 fails
 * under it, the array with it, and the pass fails; the parity stays up
 * (stale). data_1 comes back (it failed with the array): the record then
 * written has no checkpoint. Blocks 0..7, below the old checkpoint, are
 * written while no pass runs; the next pass starts at block 0 (it copies
 * all 256 blocks) and the parity holds every block, those included. Kills
 * lc_pass_end_failed() keeping the checkpoint together with
 * prune_checkpoint() keeping the bits of members no longer rebuilding: the
 * records keep 0x4 at 128, the next pass resumes there, and the parity
 * never gets blocks 0..7. Re-adding is off until the replace is asked for:
 * a probe (every 20 ms) would otherwise take the parity back first on a
 * slow machine, and the replace would be refused (-EBUSY).
 */
static void
test_failed_pass_restart(void)
{
	struct bdev_gga_recovery_info last;
	struct replace_res rr = { 0 };
	struct gga_disk *disk;
	struct gga_sb sb;
	uint8_t *w, *c;
	uint64_t ckpt_events = 0;
	char msg[256], base[8];
	bool on = true;
	uint32_t i;

	gga_test_knobs.probe_ms = 20;
	gga_test_knobs.checkpoint_ms = 5;
	gga_test_knobs.chunk_blocks = 8;
	make_error_members("T", 3, MBS);
	disk = make_rules_gga("T", 2, 1, false, 0);
	open_dev("T");
	w = random_blocks(disk, NBLK);
	c = random_blocks(disk, 8);
	CU_ASSERT(dev_write(0, NBLK, w));

	/* The parity wiped and rebuilt, held at 128 until that checkpoint is persisted. */
	fail_member(disk, "EE_T3", 2);
	UT_ASSERT_EQ(inject("EE_T3", BDEV_ERROR_NONE), 0);
	blank_member(disk, 2);
	__atomic_store_n(&disk->walk_hold_at, 128, __ATOMIC_RELAXED);
	UT_ASSERT_EQ(bdev_gga_replace_member("T", "parity", "EE_T3", replace_done, &rr, msg,
					     sizeof(msg)),
		     0);
	/* data_1 is re-added when it comes back, below. */
	UT_ASSERT_EQ(bdev_gga_set_options("T", NULL, &on), 0);
	WAIT_FOR(rr.done && base_sb("T1", disk->frag_size, &sb) == 0 &&
		 sb.recovery_mask == 1u << 2 && sb.recovery_offset == 128);
	UT_ASSERT_EQ(rr.rc, 0);
	UT_ASSERT_EQ(sb.recovery_mask, 1u << 2);
	UT_ASSERT_EQ(sb.recovery_offset, 128);
	ckpt_events = sb.events;
	CU_ASSERT_FATAL(disk->walk != NULL);

	/* data_1 fails under the pass: the array fails, the pass too; the parity stays up. */
	UT_ASSERT_EQ(inject("EE_T1", BDEV_ERROR_FAILURE), 0);
	__atomic_store_n(&disk->walk_hold_at, 0, __ATOMIC_RELAXED);
	WAIT_FOR(disk->walk == NULL);
	CU_ASSERT(disk->walk == NULL);
	last_recovery("T", &last);
	CU_ASSERT(last.valid && last.rebuild && last.result != 0);
	UT_ASSERT_EQ(gga_member_state(&disk->members[0]), BDEV_GGA_MEMBER_FAILED);
	UT_ASSERT_EQ(gga_member_state(&disk->members[2]), BDEV_GGA_MEMBER_STALE);

	/* data_1 back (the retry of the pass is 10 s away): the checkpoint is gone. */
	UT_ASSERT_EQ(inject("EE_T1", BDEV_ERROR_NONE), 0);
	WAIT_FOR(gga_member_state(&disk->members[0]) == BDEV_GGA_MEMBER_ONLINE &&
		 base_sb("T2", disk->frag_size, &sb) == 0 && sb.events > ckpt_events);
	UT_ASSERT_EQ(gga_member_state(&disk->members[0]), BDEV_GGA_MEMBER_ONLINE);
	UT_ASSERT_EQ(gga_member_state(&disk->members[2]), BDEV_GGA_MEMBER_STALE);
	CU_ASSERT(disk->walk == NULL);
	UT_ASSERT_EQ(disk->rec_mask, 0);
	for (i = 1; i <= 3; i++) {
		snprintf(base, sizeof(base), "T%u", i);
		UT_ASSERT_EQ(base_sb(base, disk->frag_size, &sb), 0);
		CU_ASSERT(sb.events > ckpt_events);
		UT_ASSERT_EQ(sb.recovery_mask, 0);
		UT_ASSERT_EQ(sb.recovery_offset, 0);
	}

	/* Written below the old checkpoint while the parity waits. */
	CU_ASSERT(dev_write(0, 8, c));
	memcpy(w, c, 8 * disk->block_size);

	/* The next pass: from block 0. */
	disk->rec_retry_ticks = 0;
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask && disk->walk == NULL);
	UT_ASSERT_EQ(gga_live_mask(disk), disk->all_mask);
	last_recovery("T", &last);
	CU_ASSERT(last.valid && last.rebuild);
	UT_ASSERT_EQ(last.result, 0);
	UT_ASSERT_EQ(last.members, 1u << 2);
	UT_ASSERT_EQ(last.blocks_copied, NBLK);
	UT_ASSERT_EQ(member_blocks_wrong(disk, 2, w, NBLK), 0);

	free(w);
	free(c);
	ut_dev_close(&g_dev);
	gga_delete_sync("T");
	delete_error_members("T", 3);
	knobs_reset();
}

/*
 * Rule 7: a write that a reset aborted on one member is not acknowledged,
 * even with k others done: the member that did not take it is not failed
 * (a reset is no fault of its own), so no update will ever record that it
 * missed the write. The parity's part of the write is held in its error
 * bdev, data_1 and data_2 take theirs, then a reset of the parity aborts
 * the held part. Kills the mutant io-aborted-acked (write_phase_done
 * acknowledging an aborted write).
 */
static void
test_write_aborted(void)
{
	uint8_t a[4 * LBS], b[4 * LBS];
	struct gga_disk *disk;
	struct ut_io r = { 0 };

	make_error_members("X", 3, MBS);
	disk = make_rules_gga("X", 2, 1, false, 4);
	open_dev("X");
	fill_random(a, sizeof(a));
	CU_ASSERT(dev_write(0, 4, a));
	/* The region is marked and no update runs: the write goes to the members at once. */
	WAIT_FOR(gga_bitmap_marked(disk, 0) && !gga_bitmap_busy(disk) && !disk->sb_inflight &&
		 !__atomic_load_n(&disk->sb_kicked, __ATOMIC_ACQUIRE));
	fill_random(b, sizeof(b));
	inject_io("EE_X3", BDEV_IO_TYPE_WRITE, BDEV_ERROR_PENDING, 1, 0);
	UT_ASSERT_EQ_FATAL(ut_submit(&g_dev, BDEV_IO_TYPE_WRITE, b, 0, 4, &r), 0);
	ut_poll_idle();
	/* Held on the parity: not complete. */
	CU_ASSERT(!r.done);
	member_reset(disk, 2);
	UT_POLL_UNTIL(r.done);
	CU_ASSERT_FATAL(r.done);
	CU_ASSERT(!r.success);
	inject_io("EE_X3", BDEV_IO_TYPE_WRITE, BDEV_ERROR_NONE, 0, 0);
	/* The parity is not failed for it, and the array serves on. */
	UT_ASSERT_EQ(gga_live_mask(disk), disk->all_mask);
	CU_ASSERT(dev_write(0, 4, b));
	check_all_paths(disk, 0, 4, b);

	ut_dev_close(&g_dev);
	gga_delete_sync("X");
	delete_error_members("X", 3);
	knobs_reset();
}

/* ---------------------------------------------------------------------- */
/* 4. A formatted member's record is the next update's                    */
/* ---------------------------------------------------------------------- */

/*
 * Rule 1: a blank member is formatted by an update like any other: its
 * format writes no record of its own, so no count is held by one member
 * alone (a member that then missed the next update in a crash would be two
 * behind the freshest record, not one, and assembly would refuse an array
 * that k members hold whole: the torture run's "fmtcount"). Observed while
 * no later update can land: the update that records the parity's failure
 * is held on data_2 (its first write after the failure stays in the error
 * bdev); data_1 has that update's count, data_2 the one before. The parity
 * comes back blank and is formatted: it must hold no record until the next
 * update, and then the same one as the others.
 */
static void
test_format_count(void)
{
	uint8_t w[8 * LBS];
	struct gga_disk *disk;
	struct gga_sb before[3], sb[3];
	bool on = true;
	uint32_t i;

	gga_test_knobs.probe_ms = 20;
	make_error_members("V", 3, MBS);
	disk = make_rules_gga("V", 2, 1, false, 4);
	open_dev("V");
	/* Nothing written yet: no mark, so no bitmap or record write but the test's. */
	WAIT_FOR(!disk->sb_inflight && !__atomic_load_n(&disk->sb_kicked, __ATOMIC_ACQUIRE) &&
		 !gga_bitmap_busy(disk));
	UT_ASSERT_EQ(gga_bitmap_dirty(disk), 0);
	CU_ASSERT_FATAL(!disk->sb_inflight);
	for (i = 0; i < 3; i++) {
		UT_ASSERT_EQ(member_sb(disk, i, &before[i]), 0);
	}

	/* The update recording the parity's failure: on data_1, held on data_2. */
	inject_io("EE_V2", BDEV_IO_TYPE_WRITE, BDEV_ERROR_PENDING, 1, 0);
	fail_member(disk, "EE_V3", 2);
	WAIT_FOR(member_sb(disk, 0, &sb[0]) == 0 && sb[0].events > before[0].events);
	CU_ASSERT(sb[0].events > before[0].events);
	UT_ASSERT_EQ(sb[0].member_state[2], GGA_SB_MEMBER_STALE);
	CU_ASSERT(disk->sb_inflight);
	UT_ASSERT_EQ(member_sb(disk, 1, &sb[1]), 0);
	UT_ASSERT_EQ(sb[1].events, before[1].events);

	/* The parity answers again, blank: formatted, then rebuilt. */
	UT_ASSERT_EQ(inject("EE_V3", BDEV_ERROR_NONE), 0);
	blank_member(disk, 2);
	UT_ASSERT_EQ(bdev_gga_set_options("V", NULL, &on), 0);
	WAIT_FOR(gga_member_state(&disk->members[2]) != BDEV_GGA_MEMBER_FAILED &&
		 disk->walk == NULL && !disk->members[2].probing);
	/* Still held: the format wrote no record; the parity's first is the next update's. */
	CU_ASSERT(disk->sb_inflight);
	UT_ASSERT_EQ(member_sb(disk, 2, &sb[2]), -ENOENT);
	for (i = 0; i < 2; i++) {
		UT_ASSERT_EQ(member_sb(disk, i, &sb[i]), 0);
	}
	UT_ASSERT_EQ(sb[1].events, before[1].events);
	/* Every count on the members is an update's: data_1 one ahead of data_2. */
	UT_ASSERT_EQ(sb[0].events, sb[1].events + 1);

	/* Let the held update go (data_2 fails for it), then all three come back. */
	inject_io("EE_V2", BDEV_IO_TYPE_WRITE, BDEV_ERROR_NONE, 0, 0);
	member_reset(disk, 1);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask && disk->walk == NULL &&
		 !disk->sb_inflight && !__atomic_load_n(&disk->sb_kicked, __ATOMIC_ACQUIRE));
	UT_ASSERT_EQ(gga_live_mask(disk), disk->all_mask);
	for (i = 0; i < 3; i++) {
		UT_ASSERT_EQ(member_sb(disk, i, &sb[i]), 0);
		UT_ASSERT_EQ(sb[i].events, sb[0].events);
		UT_ASSERT_EQ(sb[i].member_state[2], GGA_SB_MEMBER_IN_SYNC);
	}
	fill_random(w, sizeof(w));
	CU_ASSERT(dev_write(0, 8, w));
	check_all_paths(disk, 0, 8, w);

	ut_dev_close(&g_dev);
	gga_delete_sync("V");
	delete_error_members("V", 3);
	knobs_reset();
}

/* ---------------------------------------------------------------------- */
/* 5. The checkpoint with chunks in flight                                 */
/* ---------------------------------------------------------------------- */

/*
 * A checkpoint says every block below it is recovered, so it may not pass
 * the lowest chunk still in flight (walk_checkpoint(), gga_lc_checkpoint_at()).
 * A rebuild of the parity (its storage wiped) in chunks of 8 blocks is held
 * at 64 until that is persisted; then data_1's read of chunk 64 is held in
 * its error bdev while chunks 72, 80 and 88 complete, and checkpoints are
 * due every 5 ms. The checkpoint in memory and on every member must stay at
 * 64. Then a crash: the members' content at that moment is copied, the held
 * read aborted, the array deleted, the copies put back and the array
 * assembled: its pass resumes at the checkpoint and the parity holds every
 * block. Kills walk_checkpoint() taking the cursor (96): the records say
 * 96, and after the crash blocks 64..71 of the parity are never rebuilt.
 */
static void
test_checkpoint_in_flight(void)
{
	struct bdev_gga_recovery_info last, now;
	struct bdev_gga_scrub_info scrub;
	struct replace_res rr = { 0 };
	struct bdev_gga_opts opts;
	struct gga_disk *disk;
	struct create_res r;
	struct gga_sb sb;
	struct ut_dev dev;
	struct ut_io io;
	uint8_t *w, *copy[3];
	uint64_t t0, highest = 0;
	char msg[256], name[16];
	uint32_t i;

	gga_test_knobs.probe_ms = 20;
	gga_test_knobs.checkpoint_ms = 5;
	gga_test_knobs.chunk_blocks = 8;
	make_error_members("C", 3, MBS);
	disk = make_rules_gga("C", 2, 1, false, 0);
	open_dev("C");
	w = random_blocks(disk, NBLK);
	CU_ASSERT(dev_write(0, NBLK, w));

	fail_member(disk, "EE_C3", 2);
	UT_ASSERT_EQ(inject("EE_C3", BDEV_ERROR_NONE), 0);
	blank_member(disk, 2);
	__atomic_store_n(&disk->walk_hold_at, 64, __ATOMIC_RELAXED);
	UT_ASSERT_EQ(bdev_gga_replace_member("C", "parity", "EE_C3", replace_done, &rr, msg,
					     sizeof(msg)),
		     0);
	WAIT_FOR(rr.done && base_sb("C1", disk->frag_size, &sb) == 0 &&
		 sb.recovery_mask == 1u << 2 && sb.recovery_offset == 64);
	UT_ASSERT_EQ(rr.rc, 0);
	UT_ASSERT_EQ(sb.recovery_offset, 64);
	CU_ASSERT_FATAL(disk->walk != NULL);

	/* Chunk 64 stays in flight (data_1's read held); 72, 80 and 88 complete. */
	inject_io("EE_C1", BDEV_IO_TYPE_READ, BDEV_ERROR_PENDING, 1, 0);
	__atomic_store_n(&disk->walk_hold_at, 96, __ATOMIC_RELAXED);
	WAIT_FOR((gga_recover_info(disk, &now, &scrub), now.active && now.blocks_done == 64 + 24));
	CU_ASSERT(now.active);
	UT_ASSERT_EQ(now.blocks_done, 64 + 24);
	/* Twenty checkpoint periods: none may pass the held chunk. */
	t0 = time_now_ns();
	while (time_now_ns() - t0 < 100ull * 1000 * 1000) {
		ut_poll_once();
		highest = GGA_MAX(highest, disk->rec_offset);
	}
	UT_ASSERT_EQ(highest, 64);
	UT_ASSERT_EQ(disk->rec_offset, 64);
	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "C%u", i + 1);
		UT_ASSERT_EQ(base_sb(name, disk->frag_size, &sb), 0);
		UT_ASSERT_EQ(sb.recovery_mask, 1u << 2);
		UT_ASSERT_EQ(sb.recovery_offset, 64);
	}
	CU_ASSERT(disk->walk != NULL);

	/* The crash: what the members hold now is all that is left. */
	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "C%u", i + 1);
		copy[i] = snapshot(name);
	}
	member_reset(disk, 0);
	__atomic_store_n(&disk->walk_hold_at, 0, __ATOMIC_RELAXED);
	WAIT_FOR(disk->walk == NULL);
	ut_dev_close(&g_dev);
	gga_delete_sync("C");
	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "EE_C%u", i + 1);
		UT_ASSERT_EQ(inject(name, BDEV_ERROR_NONE), 0);
		UT_ASSERT_EQ_FATAL(ut_dev_open(&dev, name, g_ut_app), 0);
		UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_WRITE, copy[i], 0, MEMBER_BLOCKS, &io),
			     0);
		CU_ASSERT(io.done && io.success);
		ut_dev_close(&dev);
		free(copy[i]);
	}

	/* Assembled again: the pass resumes at 64 and leaves nothing out. */
	rules_opts("C", 2, 1, true, 0, &opts);
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
	disk = r.bdev->ctxt;
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask && disk->walk == NULL);
	UT_ASSERT_EQ(gga_live_mask(disk), disk->all_mask);
	last_recovery("C", &last);
	CU_ASSERT(last.valid && last.rebuild);
	UT_ASSERT_EQ(last.result, 0);
	UT_ASSERT_EQ(last.blocks_copied, NBLK - 64);
	UT_ASSERT_EQ(member_blocks_wrong(disk, 2, w, NBLK), 0);

	free(w);
	gga_delete_sync("C");
	delete_error_members("C", 3);
	knobs_reset();
}

/* ---------------------------------------------------------------------- */
/* 6. 4 + 2: one pass for a blank and a stale member                       */
/* ---------------------------------------------------------------------- */

/*
 * In 4 + 2, data_2 and parity_2 fail; writes go on with the other four;
 * data_2 comes back blank and parity_2 with its record (stale), both in one
 * probe round, so one pass takes both. It must rebuild (data_2 holds
 * nothing): every block of data_2 is then part of the version its members
 * hold, and a scrub finds nothing to repair. Kills lc_maybe_start()'s
 * `rebuild |=` written `rebuild =` (the last target, the stale parity_2,
 * decides: a resync, and data_2 stays blank outside the marked regions).
 */
static void
test_rebuild_and_resync(void)
{
	struct bdev_gga_recovery_info last;
	struct gga_disk *disk;
	uint8_t *w, *b;
	bool on = true;
	uint32_t i;

	gga_test_knobs.probe_ms = 20;
	make_error_members("S", 6, MBS);
	disk = make_rules_gga("S", 4, 2, false, 8);
	UT_ASSERT_EQ(disk->n, 6);
	open_dev("S");
	w = random_blocks(disk, NBLK);
	b = random_blocks(disk, 8);
	CU_ASSERT(dev_write(0, NBLK, w));
	WAIT_FOR(gga_bitmap_dirty(disk) == 0 && !gga_bitmap_busy(disk));
	UT_ASSERT_EQ(gga_bitmap_dirty(disk), 0);

	/* data_2 and parity_2 fail on a write; two more writes without them. */
	UT_ASSERT_EQ(inject("EE_S2", BDEV_ERROR_FAILURE), 0);
	UT_ASSERT_EQ(inject("EE_S6", BDEV_ERROR_FAILURE), 0);
	CU_ASSERT(dev_write(40, 4, b));
	CU_ASSERT(dev_write(200, 4, b + 4 * disk->block_size));
	memcpy(w + 40 * disk->block_size, b, 4 * disk->block_size);
	memcpy(w + 200 * disk->block_size, b + 4 * disk->block_size, 4 * disk->block_size);
	UT_ASSERT_EQ(gga_member_state(&disk->members[1]), BDEV_GGA_MEMBER_FAILED);
	UT_ASSERT_EQ(gga_member_state(&disk->members[5]), BDEV_GGA_MEMBER_FAILED);
	CU_ASSERT(gga_bitmap_dirty(disk) > 0);

	/* data_2 blank, parity_2 as it was: both answer again before the next probe. */
	UT_ASSERT_EQ(inject("EE_S2", BDEV_ERROR_NONE), 0);
	UT_ASSERT_EQ(inject("EE_S6", BDEV_ERROR_NONE), 0);
	blank_member(disk, 1);
	UT_ASSERT_EQ(bdev_gga_set_options("S", NULL, &on), 0);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask && disk->walk == NULL);
	UT_ASSERT_EQ(gga_live_mask(disk), disk->all_mask);
	last_recovery("S", &last);
	UT_ASSERT_EQ(last.members, (1u << 1) | (1u << 5));
	CU_ASSERT(last.valid && last.rebuild);
	UT_ASSERT_EQ(last.result, 0);
	UT_ASSERT_EQ(last.blocks_copied, NBLK);

	/* Every block of both: part of the version the members hold. */
	UT_ASSERT_EQ(member_blocks_wrong(disk, 1, w, NBLK), 0);
	UT_ASSERT_EQ(member_blocks_wrong(disk, 5, w, NBLK), 0);
	UT_ASSERT_EQ(bdev_gga_scrub_start("S", 0), 0);
	WAIT_FOR(disk->scrub.state != BDEV_GGA_SCRUB_RUNNING);
	UT_ASSERT_EQ(disk->scrub.state, BDEV_GGA_SCRUB_DONE);
	UT_ASSERT_EQ(disk->scrub.fragments_repaired, 0);
	UT_ASSERT_EQ(disk->scrub.unrecoverable_blocks, 0);
	for (i = 0; i < disk->n; i++) {
		UT_ASSERT_EQ(gga_member_state(&disk->members[i]), BDEV_GGA_MEMBER_ONLINE);
	}

	free(w);
	free(b);
	ut_dev_close(&g_dev);
	gga_delete_sync("S");
	delete_error_members("S", 6);
	knobs_reset();
}

/* ---------------------------------------------------------------------- */
/* 7. The write-intent bitmap: the sweep, and the union at assembly        */
/* ---------------------------------------------------------------------- */

/*
 * FORMAT 3.2: a mark goes only once its region had no write for a whole
 * sweep. Regions 1 and 3 (8 KiB each) are written once; two sweeps later
 * the two clearing updates have run (bm_clear READY: the next sweep clears
 * what is still untouched). Region 1 is written again then, and the write
 * completes before that sweep: it is newer than the updates that would let
 * its mark go. The sweep clears region 3 and must keep region 1, in memory
 * and on every member; region 1 goes later, after a whole idle sweep of its
 * own. Sweeps every 200 ms (gga_test_knobs.sweep_ms). Kills the sweep's
 * touched check dropped (bm-sweep-touched): region 1, idle at the instant
 * of the sweep, is cleared with region 3.
 */
static void
test_sweep_touched(void)
{
	struct gga_disk *disk;
	uint32_t i, rb;
	uint8_t *a;

	gga_test_knobs.sweep_ms = 200;
	make_error_members("W", 3, MBS);
	disk = make_rules_gga("W", 2, 1, false, 8);
	rb = gga_bitmap_region_blocks(disk);
	UT_ASSERT_EQ_FATAL(rb, 8);
	open_dev("W");
	a = random_blocks(disk, 2);
	CU_ASSERT(dev_write(1 * rb, 1, a));
	CU_ASSERT(dev_write(3 * rb, 1, a + disk->block_size));
	CU_ASSERT(gga_bitmap_test(disk, 1) && gga_bitmap_test(disk, 3));

	/*
	 * The clearing updates have run: the next sweep clears what is still
	 * untouched. Region 1 is written before that sweep (again if a stalled
	 * machine let the sweep run during the write: the write's own count
	 * keeps the mark then, and the next READY comes a sweep later).
	 */
	for (i = 0; i < 3; i++) {
		WAIT_FOR(disk->bm_clear.stage == GGA_LC_CLEAR_READY);
		UT_ASSERT_EQ_FATAL(disk->bm_clear.stage, GGA_LC_CLEAR_READY);
		CU_ASSERT(gga_bitmap_test(disk, 1));
		CU_ASSERT(dev_write(1 * rb, 1, a));
		if (disk->bm_clear.stage == GGA_LC_CLEAR_READY) {
			break;
		}
	}
	UT_ASSERT_EQ(disk->bm_clear.stage, GGA_LC_CLEAR_READY);

	/* That sweep: region 3 goes, region 1 (written since the last look) stays. */
	WAIT_FOR(disk->bm_clear.stage != GGA_LC_CLEAR_READY && !gga_bitmap_busy(disk));
	CU_ASSERT(!gga_bitmap_test(disk, 3));
	CU_ASSERT(gga_bitmap_test(disk, 1));
	UT_ASSERT_EQ(gga_bitmap_dirty(disk), 1);
	for (i = 0; i < disk->n; i++) {
		UT_ASSERT_EQ(member_bitmap_byte(disk, i, 0), 1u << 1);
	}

	/* Region 1 goes once a whole sweep found it idle. */
	WAIT_FOR(gga_bitmap_dirty(disk) == 0 && !gga_bitmap_busy(disk));
	UT_ASSERT_EQ(gga_bitmap_dirty(disk), 0);
	for (i = 0; i < disk->n; i++) {
		UT_ASSERT_EQ(member_bitmap_byte(disk, i, 0), 0);
	}

	free(a);
	ut_dev_close(&g_dev);
	gga_delete_sync("W");
	delete_error_members("W", 3);
	knobs_reset();
}

/* Byte `byte` of the bitmap on base bdev `base` (read below the error bdev, as base_sb). */
static uint8_t
base_bitmap_byte(const char *base, uint32_t frag_size, uint32_t byte)
{
	uint32_t off = gga_bitmap_offset(frag_size) + byte;
	struct bdev *bdev = bdev_get_by_name(base);
	struct ut_dev dev;
	struct ut_io r;
	uint8_t *blk, v = 0;

	CU_ASSERT_FATAL(bdev != NULL);
	blk = calloc(1, bdev_get_buf_block_size(bdev));
	CU_ASSERT_FATAL(blk != NULL);
	UT_ASSERT_EQ_FATAL(ut_dev_open_mode(&dev, base, false, g_ut_app), 0);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_READ, blk, off / frag_size, 1, &r), 0);
	ut_dev_close(&dev);
	CU_ASSERT(r.done && r.success);
	v = blk[off % frag_size];
	free(blk);
	return v;
}

/*
 * FORMAT 3.2: an assembler takes the union of the members' bitmaps. A member
 * failed before region 5 was first written lacks its mark (the flush skips a
 * member that takes no writes); the two others have it. The gga bdev is
 * deleted with the member still failed, the member answers again and the
 * array is assembled: region 5 must be marked, and the member, stale and
 * resynced over the marked regions only, must then hold blocks 40..43.
 * Once with data_1 failed, once with the parity (the last member read).
 * Kills `|=` written `=` in create_merge_bitmaps() (create-bitmap-last-wins):
 * the parity's bitmap, without region 5, is the array's, the resync copies
 * nothing and the parity never gets blocks 40..43.
 */
static void
bitmap_union(const char *p, uint32_t who)
{
	struct bdev_gga_recovery_info last;
	struct gga_disk *disk;
	uint8_t *a, *b, out[LBS];
	uint32_t i, rb, frag_size, other = (who + 1) % 3;
	bool on = true;
	char name[16];

	gga_test_knobs.probe_ms = 20;
	make_error_members(p, 3, MBS);
	disk = make_rules_gga(p, 2, 1, false, 8);
	rb = gga_bitmap_region_blocks(disk);
	UT_ASSERT_EQ_FATAL(rb, 8);
	frag_size = disk->frag_size;
	open_dev(p);
	a = random_blocks(disk, 4);
	b = random_blocks(disk, 4);
	/* Region 0 on all three. */
	CU_ASSERT(dev_write(0, 4, a));

	/* The member fails; blocks 40..43 (region 5) are written without it. */
	snprintf(name, sizeof(name), "EE_%s%u", p, who + 1);
	fail_member(disk, name, who);
	UT_ASSERT_EQ(inject(name, BDEV_ERROR_NONE), 0);
	CU_ASSERT(dev_write(5 * rb, 4, b));
	WAIT_FOR(!gga_bitmap_busy(disk) && !disk->sb_inflight &&
		 !__atomic_load_n(&disk->sb_kicked, __ATOMIC_ACQUIRE));
	CU_ASSERT(gga_bitmap_test(disk, 5));
	UT_ASSERT_EQ(gga_member_state(&disk->members[who]), BDEV_GGA_MEMBER_FAILED);
	ut_dev_close(&g_dev);
	gga_delete_sync(p);

	/* The members' bitmaps differ: region 5 is on the two others only. */
	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "%s%u", p, i + 1);
		UT_ASSERT_EQ(base_bitmap_byte(name, frag_size, 0) & (1u << 5),
			     i == who ? 0 : 1u << 5);
	}

	/* Assembled again with the member back: its bitmap must not hide the others' marks. */
	disk = make_rules_gga(p, 2, 1, false, 8);
	UT_ASSERT_EQ(gga_member_state(&disk->members[who]), BDEV_GGA_MEMBER_STALE);
	CU_ASSERT(gga_bitmap_test(disk, 5));
	open_dev(p);
	UT_ASSERT_EQ(bdev_gga_set_options(p, NULL, &on), 0);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask && disk->walk == NULL);
	UT_ASSERT_EQ(gga_live_mask(disk), disk->all_mask);
	last_recovery(p, &last);
	CU_ASSERT(last.valid && !last.rebuild);
	UT_ASSERT_EQ(last.members, 1u << who);
	UT_ASSERT_EQ(last.result, 0);

	/* The member holds the blocks written while it was away. */
	for (i = 0; i < 4; i++) {
		CU_ASSERT(frag_generation(disk, who, 5 * rb + i) != 0);
		UT_ASSERT_EQ(frag_generation(disk, who, 5 * rb + i),
			     frag_generation(disk, other, 5 * rb + i));
		UT_ASSERT_EQ(check_consistent(disk, 5 * rb + i, NULL, out), 0);
		CU_ASSERT(memcmp(out, b + (size_t)i * disk->block_size, disk->block_size) == 0);
	}
	check_all_paths(disk, 5 * rb, 4, b);
	check_all_paths(disk, 0, 4, a);

	free(a);
	free(b);
	ut_dev_close(&g_dev);
	gga_delete_sync(p);
	delete_error_members(p, 3);
	knobs_reset();
}

static void
test_bitmap_union(void)
{
	bitmap_union("Y", 0);
	bitmap_union("Z", 2);
}

/* ---------------------------------------------------------------------- */
/* 8. A blank member probed while the array is failed                      */
/* ---------------------------------------------------------------------- */

struct iostat_res {
	bool done;
	struct bdev_io_stat stat;
};

static void
iostat_done(struct bdev *bdev, struct bdev_io_stat *stat, void *cb_arg, int rc)
{
	(void)bdev;
	(void)stat;
	(void)rc;
	((struct iostat_res *)cb_arg)->done = true;
}

/* The I/O statistics of bdev `name` (a malloc base: what reached the medium). */
static struct bdev_io_stat
base_iostat(const char *name)
{
	struct iostat_res r;

	memset(&r, 0, sizeof(r));
	bdev_get_iostat(bdev_get_by_name(name), &r.stat, iostat_done, &r);
	UT_POLL_UNTIL(r.done);
	CU_ASSERT(r.done);
	return r.stat;
}

/* Is every byte of base bdev `name` zero? */
static bool
base_all_zero(const char *name)
{
	struct bdev *bdev = bdev_get_by_name(name);
	size_t len = bdev_get_num_blocks(bdev) * bdev_get_buf_block_size(bdev), i;
	uint8_t *now = snapshot(name);
	bool zero = true;

	for (i = 0; i < len && zero; i++) {
		zero = now[i] == 0;
	}
	free(now);
	return zero;
}

/*
 * Rule 5: with fewer than k members online nothing is written, not even a
 * blank member's format. 2 + 1: the parity fails, blocks 8..15 are written
 * without it (their regions marked), then data_2 fails and the array with
 * it (data_2 failed with the array: still in sync). The parity answers again,
 * blank: it is probed, and probed again, and nothing may reach its medium (a
 * format would write its reserved region, the marked bitmap in it). Then
 * data_2 answers again and comes back online at once; the parity's next
 * probe formats it, and a rebuild makes it whole. Kills
 * t2-probe-formats-below-k (member_format_region() with one member online).
 */
static void
test_blank_probe_below_k(void)
{
	struct bdev_gga_recovery_info last;
	struct bdev_io_stat before, now;
	struct gga_disk *disk;
	uint8_t *w, *b, rd[LBS];
	bool on = true;

	gga_test_knobs.probe_ms = 20;
	make_error_members("P", 3, MBS);
	disk = make_rules_gga("P", 2, 1, false, 4);
	open_dev("P");
	w = random_blocks(disk, NBLK);
	b = random_blocks(disk, 8);
	CU_ASSERT(dev_write(0, NBLK, w));

	fail_member(disk, "EE_P3", 2);
	CU_ASSERT(dev_write(8, 8, b));
	memcpy(w + 8 * disk->block_size, b, 8 * disk->block_size);
	WAIT_FOR(!gga_bitmap_busy(disk) && !disk->sb_inflight &&
		 !__atomic_load_n(&disk->sb_kicked, __ATOMIC_ACQUIRE));
	CU_ASSERT(gga_bitmap_marked(disk, 8) && gga_bitmap_dirty(disk) > 0);
	fail_member(disk, "EE_P2", 1);
	CU_ASSERT((uint32_t)__builtin_popcount(gga_live_mask(disk)) < disk->k);
	UT_ASSERT_EQ(disk->members[1].needs, GGA_LC_NEEDS_NONE);

	/* The parity answers again, blank; data_2 does not. */
	UT_ASSERT_EQ(inject("EE_P3", BDEV_ERROR_NONE), 0);
	blank_member(disk, 2);
	CU_ASSERT_FATAL(base_all_zero("P3"));
	before = base_iostat("P3");
	UT_ASSERT_EQ(bdev_gga_set_options("P", NULL, &on), 0);
	WAIT_FOR((now = base_iostat("P3"), now.num_read_ops >= before.num_read_ops + 2));
	CU_ASSERT(now.num_read_ops >= before.num_read_ops + 2);
	/* Probed twice, written never: still blank, failed, and the array fails reads. */
	UT_ASSERT_EQ(now.num_write_ops, before.num_write_ops);
	CU_ASSERT(base_all_zero("P3"));
	UT_ASSERT_EQ(gga_member_state(&disk->members[2]), BDEV_GGA_MEMBER_FAILED);
	CU_ASSERT(!dev_read(0, 1, rd));

	/* data_2 back (online at once), then the parity formatted and rebuilt. */
	UT_ASSERT_EQ(inject("EE_P2", BDEV_ERROR_NONE), 0);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask && disk->walk == NULL);
	UT_ASSERT_EQ(gga_live_mask(disk), disk->all_mask);
	last_recovery("P", &last);
	CU_ASSERT(last.valid && last.rebuild);
	UT_ASSERT_EQ(last.members, 1u << 2);
	UT_ASSERT_EQ(last.result, 0);
	UT_ASSERT_EQ(member_blocks_wrong(disk, 2, w, NBLK), 0);
	check_all_paths(disk, 0, 16, w);

	free(w);
	free(b);
	ut_dev_close(&g_dev);
	gga_delete_sync("P");
	delete_error_members("P", 3);
	knobs_reset();
}

/* ---------------------------------------------------------------------- */
/* 9. A pass ends while an I/O thread fails its target                    */
/* ---------------------------------------------------------------------- */

/* Poll the worker (I/O) thread alone until `cond` holds or the timeout passes. */
#define WORKER_POLL_UNTIL(cond)                                        \
	do {                                                           \
		uint64_t _wk_deadline = time_now_ns() + UT_TIMEOUT_NS; \
		while (!(cond) && time_now_ns() < _wk_deadline) {      \
			thread_poll(g_ut_worker, 0, 0);                \
		}                                                      \
	} while (0)

/* The same on the app thread alone. */
#define APP_POLL_UNTIL(cond)                                            \
	do {                                                            \
		uint64_t _app_deadline = time_now_ns() + UT_TIMEOUT_NS; \
		while (!(cond) && time_now_ns() < _app_deadline) {      \
			thread_poll(g_ut_app, 0, 0);                    \
		}                                                       \
	} while (0)

/*
 * Rule 9: a lifecycle step carries its decision out by compare-and-swap
 * from the state it decided from: a failure an I/O thread takes between the
 * step's view and its take has the last word. The step is the one
 * recovery_finish() takes when a resync of the parity ends (gga_lc_step():
 * gga_lc_view_now(), the module's decision, gga_lc_take(), gga_lc_carry()),
 * called here in that order, with the pass itself held at block 128 (the
 * blocks the parity missed are below it). Between the decision (the parity
 * online) and the take, a write whose part on the parity fails runs on the
 * I/O thread alone, which fails the parity. After the take the parity must
 * still be failed: the write is acknowledged once the records say the parity
 * is not in sync, and reads right on every path; the parity then comes back
 * through a probe and a new pass. Kills b6-take-blind (the take swaps from
 * the state it finds: the parity online without the write, which then waits
 * for ever for a record that calls it out of sync).
 */
static void
test_pass_done_race(void)
{
	struct gga_lc_event ev = { .type = GGA_LC_EV_PASS_DONE };
	struct gga_lc_view before, v;
	struct gga_lc_actions act;
	struct gga_disk *disk;
	uint8_t *w, *b, *c;
	struct gga_sb sb;
	struct ut_io r;
	bool on = true;
	uint32_t i;

	gga_test_knobs.probe_ms = 20;
	gga_test_knobs.checkpoint_ms = 5;
	gga_test_knobs.chunk_blocks = 8;
	gga_test_knobs.retry_ms = 50;
	make_error_members("D", 3, MBS);
	disk = make_rules_gga("D", 2, 1, false, 4);
	open_dev("D");
	w = random_blocks(disk, NBLK);
	b = random_blocks(disk, 4);
	c = random_blocks(disk, 4);
	CU_ASSERT(dev_write(0, NBLK, w));
	fail_member(disk, "EE_D3", 2);
	UT_ASSERT_EQ(inject("EE_D3", BDEV_ERROR_NONE), 0);
	CU_ASSERT(dev_write(8, 4, b));
	memcpy(w + 8 * disk->block_size, b, 4 * disk->block_size);

	/* The parity back; its resync copies the blocks below 128 and is held there. */
	__atomic_store_n(&disk->walk_hold_at, 128, __ATOMIC_RELAXED);
	UT_ASSERT_EQ(bdev_gga_set_options("D", NULL, &on), 0);
	WAIT_FOR(disk->walk != NULL && disk->rec_offset == 128 && !disk->sb_inflight &&
		 !__atomic_load_n(&disk->sb_kicked, __ATOMIC_ACQUIRE));
	UT_ASSERT_EQ_FATAL(gga_member_state(&disk->members[2]), BDEV_GGA_MEMBER_REBUILDING);
	UT_ASSERT_EQ(disk->rec_offset, 128);

	/* The step of the pass's end: view and decision... */
	gga_lc_view_now(disk, &v);
	before = v;
	ev.result = 0;
	ev.mask = v.pass_targets;
	UT_ASSERT_EQ(ev.mask, 1u << 2);
	UT_ASSERT_EQ(gga_lc_apply(&v, &ev, &act), 0);
	UT_ASSERT_EQ(v.mb[2].run, GGA_LC_ONLINE);
	/* ...meanwhile a write fails on the parity, on the I/O thread alone... */
	inject_io("EE_D3", BDEV_IO_TYPE_WRITE, BDEV_ERROR_FAILURE, 0, 0);
	UT_ASSERT_EQ_FATAL(ut_submit(&g_dev, BDEV_IO_TYPE_WRITE, c, 16, 4, &r), 0);
	WORKER_POLL_UNTIL(gga_member_state(&disk->members[2]) == BDEV_GGA_MEMBER_FAILED);
	UT_ASSERT_EQ_FATAL(gga_member_state(&disk->members[2]), BDEV_GGA_MEMBER_FAILED);
	/* ...then the take: the failure stands. */
	gga_lc_take(disk, &before, &v, "resynced");
	gga_lc_carry(disk, &act);
	UT_ASSERT_EQ_FATAL(gga_member_state(&disk->members[2]), BDEV_GGA_MEMBER_FAILED);
	UT_ASSERT_EQ(gga_live_mask(disk) & (1u << 2), 0);

	/* The write: acknowledged once the records on data_1 and data_2 call the parity stale. */
	UT_POLL_UNTIL(r.done);
	CU_ASSERT(r.done && r.success);
	memcpy(w + 16 * disk->block_size, c, 4 * disk->block_size);
	for (i = 0; i < 2; i++) {
		UT_ASSERT_EQ(member_sb(disk, i, &sb), 0);
		CU_ASSERT(sb.member_state[2] != GGA_SB_MEMBER_IN_SYNC);
	}
	check_all_paths(disk, 16, 4, c);

	/* The held pass lets go and ends; the parity comes back through a probe and a pass. */
	inject_io("EE_D3", BDEV_IO_TYPE_WRITE, BDEV_ERROR_NONE, 0, 0);
	__atomic_store_n(&disk->walk_hold_at, 0, __ATOMIC_RELAXED);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask && disk->walk == NULL);
	UT_ASSERT_EQ(gga_live_mask(disk), disk->all_mask);
	UT_ASSERT_EQ(member_blocks_wrong(disk, 2, w, NBLK), 0);
	check_all_paths(disk, 0, 24, w);

	free(w);
	free(b);
	free(c);
	ut_dev_close(&g_dev);
	gga_delete_sync("D");
	delete_error_members("D", 3);
	knobs_reset();
}

/* ---------------------------------------------------------------------- */
/* 10. A write a pass member missed, its checkpoint persisted meanwhile     */
/* ---------------------------------------------------------------------- */

/* Read block `mlba` of base `dev` (opened on the app thread), polling the app thread alone. */
static bool
app_read(struct ut_dev *dev, uint64_t mlba, uint8_t *blk)
{
	struct ut_io r;

	if (ut_submit(dev, BDEV_IO_TYPE_READ, blk, mlba, 1, &r) != 0) {
		return false;
	}
	APP_POLL_UNTIL(r.done);
	return r.done && r.success;
}

/* The record on base `dev`, read polling the app thread alone (0, or decode's error). */
static int
app_sb(struct ut_dev *dev, uint32_t frag_size, struct gga_sb *sb)
{
	uint8_t *blk = calloc(1, bdev_get_buf_block_size(bdev_desc_get_bdev(dev->desc)));
	int rc = -EIO;

	CU_ASSERT_FATAL(blk != NULL);
	if (app_read(dev, 0, blk)) {
		rc = gga_sb_decode(blk, frag_size, sb);
	}
	free(blk);
	return rc;
}

/* The generation of logical block `lba`'s fragment on base `dev` (app thread alone). */
static uint64_t
app_generation(struct gga_disk *disk, struct ut_dev *dev, uint64_t lba)
{
	uint8_t *blk = calloc(1, disk->mbs);
	struct gga_frag_md md;
	uint64_t gen = 0;

	CU_ASSERT_FATAL(blk != NULL);
	if (app_read(dev, disk->data_offset + lba, blk) &&
	    gga_frag_md_decode(blk + disk->frag_size, lba, &md) == 0) {
		gen = md.generation;
	}
	free(blk);
	return gen;
}

/*
 * Rule 7 (changed): a write that a member of the running pass missed is
 * acknowledged only once an update without the member's checkpoint bit has
 * landed, even if the checkpoint was not yet persisted when the write went
 * out (it went to the member as a target of the pass: that counts). 4 + 2:
 * parity_1 fails and the array is assembled again: it waits, stale, not
 * re-added (auto_readd off). parity_2 fails on a write of blocks 8..11 and is
 * replaced by itself: its rebuild copies blocks 0..63 and is held there. The
 * update starting the pass is held on parity_1 (its record write answers
 * NOMEM; the pass neither reads nor writes it), so the persisted records have
 * no checkpoint when a write of block 8 goes out: data_1..data_4 take it,
 * parity_2 fails it. With the app thread alone running, the held update
 * lands and then the checkpoint's: every member holds a record with parity_2
 * in the checkpoint at 64, above block 8. Then the I/O thread alone hears the
 * write's completions: it must not acknowledge the write (a crash then would
 * assemble with that checkpoint, resume at 64 and put parity_2 online
 * without block 8). It is acknowledged once the update recording the
 * failure, without the checkpoint, has landed. Kills r7-write-ignores-rec
 * (acknowledged at once: only the checkpoint as it was at send held it).
 */
static void
test_ack_pass_member_missed(void)
{
	struct replace_res rr = { 0 };
	struct gga_lc_durable durable;
	struct bdev_gga_opts opts;
	struct gga_disk *disk;
	struct create_res cr;
	struct ut_dev base[6];
	uint8_t *w, *b, *c, *rd;
	char name[16], msg[256];
	struct gga_sb sb;
	struct ut_io r;
	bool on = true;
	uint64_t t0;
	size_t bs;
	uint32_t i;

	gga_test_knobs.probe_ms = 20;
	gga_test_knobs.checkpoint_ms = 5;
	gga_test_knobs.chunk_blocks = 8;
	gga_test_knobs.retry_ms = 50;
	make_error_members("R", 6, MBS);
	disk = make_rules_gga("R", 4, 2, false, 8);
	bs = disk->block_size;
	open_dev("R");
	w = random_blocks(disk, NBLK);
	b = random_blocks(disk, 8);
	c = random_blocks(disk, 1);
	rd = malloc(16 * bs);
	CU_ASSERT_FATAL(rd != NULL);
	CU_ASSERT(dev_write(0, NBLK, w));

	/* parity_1 fails on a write; assembled again, it waits, stale, held. */
	UT_ASSERT_EQ(inject("EE_R5", BDEV_ERROR_FAILURE), 0);
	CU_ASSERT(dev_write(8, 4, b));
	memcpy(w + 8 * bs, b, 4 * bs);
	UT_ASSERT_EQ(gga_member_state(&disk->members[4]), BDEV_GGA_MEMBER_FAILED);
	UT_ASSERT_EQ(inject("EE_R5", BDEV_ERROR_NONE), 0);
	ut_dev_close(&g_dev);
	gga_delete_sync("R");
	rules_opts("R", 4, 2, false, 8, &opts);
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &cr), 0);
	disk = cr.bdev->ctxt;
	open_dev("R");
	UT_ASSERT_EQ(gga_member_state(&disk->members[4]), BDEV_GGA_MEMBER_STALE);
	CU_ASSERT(disk->walk == NULL);

	/* parity_2 fails on a write of blocks 8..11 (their region marked). */
	UT_ASSERT_EQ(inject("EE_R6", BDEV_ERROR_FAILURE), 0);
	CU_ASSERT(dev_write(8, 4, b + 4 * bs));
	memcpy(w + 8 * bs, b + 4 * bs, 4 * bs);
	UT_ASSERT_EQ(gga_member_state(&disk->members[5]), BDEV_GGA_MEMBER_FAILED);
	UT_ASSERT_EQ(inject("EE_R6", BDEV_ERROR_NONE), 0);
	WAIT_FOR(!gga_bitmap_busy(disk) && !disk->sb_inflight &&
		 !__atomic_load_n(&disk->sb_kicked, __ATOMIC_ACQUIRE));
	CU_ASSERT(gga_bitmap_marked(disk, 8));

	/* parity_2 replaced by itself: rebuilt to 64 while the update starting it is held. */
	for (i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "R%u", i + 1);
		UT_ASSERT_EQ_FATAL(ut_dev_open_mode(&base[i], name, false, g_ut_app), 0);
	}
	inject_io("EE_R5", BDEV_IO_TYPE_WRITE, BDEV_ERROR_NOMEM, 0, 0);
	__atomic_store_n(&disk->walk_hold_at, 64, __ATOMIC_RELAXED);
	UT_ASSERT_EQ(bdev_gga_replace_member("R", "parity_2", "EE_R6", replace_done, &rr, msg,
					     sizeof(msg)),
		     0);
	WAIT_FOR(rr.done && disk->walk != NULL && disk->rec_offset == 64);
	UT_ASSERT_EQ(rr.rc, 0);
	UT_ASSERT_EQ_FATAL(gga_member_state(&disk->members[5]), BDEV_GGA_MEMBER_REBUILDING);
	UT_ASSERT_EQ(gga_member_state(&disk->members[4]), BDEV_GGA_MEMBER_STALE);
	UT_ASSERT_EQ(disk->rec_offset, 64);
	CU_ASSERT_FATAL(disk->sb_inflight);
	gga_lc_durable_unpack(__atomic_load_n(&disk->persisted, __ATOMIC_ACQUIRE), &durable);
	UT_ASSERT_EQ(durable.rec, 0);

	/* Block 8 goes out: to data_1..data_4 and parity_2, which fails it. */
	inject_io("EE_R6", BDEV_IO_TYPE_WRITE, BDEV_ERROR_FAILURE, 1, 0);
	UT_ASSERT_EQ_FATAL(ut_submit(&g_dev, BDEV_IO_TYPE_WRITE, c, 8, 1, &r), 0);
	inject_io("EE_R5", BDEV_IO_TYPE_WRITE, BDEV_ERROR_NONE, 0, 0);

	/* The app thread alone: the held update lands, then the checkpoint's. */
	APP_POLL_UNTIL((gga_lc_durable_unpack(__atomic_load_n(&disk->persisted, __ATOMIC_ACQUIRE),
					      &durable),
			durable.rec == 1u << 5 && !disk->sb_inflight &&
				!__atomic_load_n(&disk->sb_kicked, __ATOMIC_ACQUIRE)));
	UT_ASSERT_EQ(durable.rec, 1u << 5);
	for (i = 0; i < 6; i++) {
		UT_ASSERT_EQ(app_sb(&base[i], disk->frag_size, &sb), 0);
		UT_ASSERT_EQ(sb.recovery_mask, 1u << 5);
		UT_ASSERT_EQ(sb.recovery_offset, 64);
		CU_ASSERT(sb.member_state[5] != GGA_SB_MEMBER_IN_SYNC);
	}
	CU_ASSERT(!r.done);

	/* The I/O thread alone: the write's completions, the failure of parity_2 among them. */
	WORKER_POLL_UNTIL(gga_member_state(&disk->members[5]) == BDEV_GGA_MEMBER_FAILED);
	UT_ASSERT_EQ(gga_member_state(&disk->members[5]), BDEV_GGA_MEMBER_FAILED);
	t0 = time_now_ns();
	while (!r.done && time_now_ns() - t0 < 20ull * 1000 * 1000) {
		thread_poll(g_ut_worker, 0, 0);
	}
	/* k members have it, but the records would resume parity_2's rebuild above it. */
	CU_ASSERT(!r.done);
	for (i = 1; i < 4; i++) {
		UT_ASSERT_EQ(app_generation(disk, &base[i], 8), app_generation(disk, &base[0], 8));
	}

	/* Once the failure is recorded (no checkpoint), acknowledged. */
	UT_POLL_UNTIL(r.done);
	CU_ASSERT(r.done && r.success);
	memcpy(w + 8 * bs, c, bs);
	for (i = 0; i < 4; i++) {
		UT_ASSERT_EQ(member_sb(disk, i, &sb), 0);
		UT_ASSERT_EQ(sb.recovery_mask & (1u << 5), 0);
		CU_ASSERT(sb.member_state[5] != GGA_SB_MEMBER_IN_SYNC);
	}

	/* The pass lets go; both parities come back: every block right on each. */
	__atomic_store_n(&disk->walk_hold_at, 0, __ATOMIC_RELAXED);
	UT_ASSERT_EQ(bdev_gga_set_options("R", NULL, &on), 0);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask && disk->walk == NULL);
	UT_ASSERT_EQ(gga_live_mask(disk), disk->all_mask);
	UT_ASSERT_EQ(member_blocks_wrong(disk, 4, w, NBLK), 0);
	UT_ASSERT_EQ(member_blocks_wrong(disk, 5, w, NBLK), 0);
	CU_ASSERT(dev_read(0, 16, rd));
	CU_ASSERT(memcmp(rd, w, 16 * bs) == 0);

	for (i = 0; i < 6; i++) {
		ut_dev_close(&base[i]);
	}
	free(w);
	free(b);
	free(c);
	free(rd);
	ut_dev_close(&g_dev);
	gga_delete_sync("R");
	delete_error_members("R", 6);
	knobs_reset();
}

/* ---------------------------------------------------------------------- */
/* 11. A write that a member missed, the member back in a pass meanwhile   */
/* ---------------------------------------------------------------------- */

/*
 * Rule 7 and liveness: a member that was online when a write went out,
 * missed it and joined a pass before the write was decided does not hold
 * the write back with its checkpoint bit: the pass waits for the range lock
 * the write holds, so its checkpoint stays at or below the write's block,
 * and a resumed pass copies it. 2 + 1: a write of block 1 goes out; data_1
 * takes it, data_2's part answers NOMEM and waits on the I/O thread, the
 * parity fails it. With the app thread alone running, the parity's failure
 * is recorded, it is probed back and its resync starts (its checkpoint bit
 * persisted) and stops at block 0, whose chunk the write holds. Then data_2
 * takes its part: the write must be acknowledged (waiting for the parity's
 * bit to go, it would wait for the pass, which waits for it: both for
 * ever), and the pass then copies block 1.
 */
static void
test_write_beside_new_pass(void)
{
	struct bdev_gga_recovery_info now;
	struct bdev_gga_scrub_info scrub;
	struct gga_lc_durable durable;
	struct gga_disk *disk;
	uint8_t *w, *c;
	struct ut_io r;

	gga_test_knobs.probe_ms = 20;
	gga_test_knobs.checkpoint_ms = 5;
	gga_test_knobs.chunk_blocks = 8;
	make_error_members("J", 3, MBS);
	disk = make_rules_gga("J", 2, 1, true, 4);
	open_dev("J");
	w = random_blocks(disk, NBLK);
	c = random_blocks(disk, 1);
	CU_ASSERT(dev_write(0, NBLK, w));
	WAIT_FOR(!gga_bitmap_busy(disk) && !disk->sb_inflight &&
		 !__atomic_load_n(&disk->sb_kicked, __ATOMIC_ACQUIRE));
	CU_ASSERT_FATAL(gga_bitmap_marked(disk, 1));

	/* Block 1 goes out: data_2's part waits (NOMEM), the parity fails its part. */
	inject_io("EE_J2", BDEV_IO_TYPE_WRITE, BDEV_ERROR_NOMEM, 0, 0);
	inject_io("EE_J3", BDEV_IO_TYPE_WRITE, BDEV_ERROR_FAILURE, 1, 0);
	UT_ASSERT_EQ_FATAL(ut_submit(&g_dev, BDEV_IO_TYPE_WRITE, c, 1, 1, &r), 0);
	WORKER_POLL_UNTIL(gga_member_state(&disk->members[2]) == BDEV_GGA_MEMBER_FAILED);
	UT_ASSERT_EQ_FATAL(gga_member_state(&disk->members[2]), BDEV_GGA_MEMBER_FAILED);
	inject_io("EE_J2", BDEV_IO_TYPE_WRITE, BDEV_ERROR_NONE, 0, 0);

	/* The app thread alone: the parity back, its resync started and stopped at block 0. */
	APP_POLL_UNTIL((gga_lc_durable_unpack(__atomic_load_n(&disk->persisted, __ATOMIC_ACQUIRE),
					      &durable),
			durable.rec == 1u << 2 && disk->walk != NULL && !disk->sb_inflight &&
				!__atomic_load_n(&disk->sb_kicked, __ATOMIC_ACQUIRE)));
	UT_ASSERT_EQ_FATAL(durable.rec, 1u << 2);
	UT_ASSERT_EQ(gga_member_state(&disk->members[2]), BDEV_GGA_MEMBER_REBUILDING);
	gga_recover_info(disk, &now, &scrub);
	CU_ASSERT(now.active);
	UT_ASSERT_EQ(now.blocks_copied, 0);
	UT_ASSERT_EQ(disk->rec_offset, 0);
	CU_ASSERT(!r.done);

	/* Both threads: data_2 takes its part; the write is acknowledged, then resynced. */
	UT_POLL_UNTIL(r.done);
	CU_ASSERT(r.done && r.success);
	memcpy(w + disk->block_size, c, disk->block_size);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask && disk->walk == NULL);
	UT_ASSERT_EQ(gga_live_mask(disk), disk->all_mask);
	UT_ASSERT_EQ(member_blocks_wrong(disk, 2, w, NBLK), 0);
	check_all_paths(disk, 0, 8, w);

	free(w);
	free(c);
	ut_dev_close(&g_dev);
	gga_delete_sync("J");
	delete_error_members("J", 3);
	knobs_reset();
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_ack_threshold),         UT_TEST(test_hidden_fragment),
		UT_TEST(test_failed_pass_restart),   UT_TEST(test_write_aborted),
		UT_TEST(test_format_count),          UT_TEST(test_checkpoint_in_flight),
		UT_TEST(test_rebuild_and_resync),    UT_TEST(test_sweep_touched),
		UT_TEST(test_bitmap_union),          UT_TEST(test_blank_probe_below_k),
		UT_TEST(test_pass_done_race),        UT_TEST(test_ack_pass_member_missed),
		UT_TEST(test_write_beside_new_pass),
	};

	return ut_run("bdev_gga_rules", tests, ARRAY_SIZE(tests), suite_init, suite_fini);
}
