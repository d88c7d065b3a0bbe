/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Regression tests of "never wrong data" (issues 18 and 22), on the harness
 * of ../bdev_gga_heal_env.c: blank members and a front restart, an old copy
 * of a member, records a crash leaves, a checkpoint not resumed after its
 * member left the pass, a flush a member failed, the rebuild rate under load,
 * the member error policy and a member that stalls. Each failed on e5a27b9.
 */
#include "test/unit/bdev_gga/bdev_gga_heal_env.c"

/*
 * A flush that a member failed is acknowledged only once the superblocks of
 * the others call that member out of sync: its cache may have lost writes
 * that were acknowledged.
 */
static void
test_flush_failed_member(void)
{
	struct bdev_error_inject_opts opts = {
		.io_type = BDEV_IO_TYPE_FLUSH,
		.error_type = BDEV_ERROR_FAILURE,
	};
	uint8_t w[4 * LBS];
	struct gga_disk *disk;
	struct gga_sb sb;
	struct ut_io r;

	make_error_members("F", 3, MBS);
	disk = make_heal_gga("F", 4, false);
	open_dev("F");
	fill_random(w, sizeof(w));
	CU_ASSERT(dev_write(0, 4, w));
	CU_ASSERT_FATAL(disk->members[1].flush_supported);
	UT_ASSERT_EQ(bdev_error_inject_error("EE_F2", &opts), 0);
	UT_ASSERT_EQ(ut_io_sync(&g_dev, BDEV_IO_TYPE_FLUSH, NULL, 0, NBLK, &r), 0);
	CU_ASSERT(r.done && r.success);
	/* At the moment of the acknowledgement, not later. */
	read_sb(disk, 0, &sb);
	UT_ASSERT_EQ(sb.member_state[1], GGA_SB_MEMBER_STALE);
	read_sb(disk, 2, &sb);
	UT_ASSERT_EQ(sb.member_state[1], GGA_SB_MEMBER_STALE);
	UT_ASSERT_EQ(gga_member_state(&disk->members[1]), BDEV_GGA_MEMBER_FAILED);
	UT_ASSERT_EQ(inject("EE_F2", BDEV_ERROR_NONE), 0);
	ut_dev_close(&g_dev);
	gga_delete_sync("F");
	delete_error_members("F", 3);
}

/*
 * Two members come back blank, then the front restarts. The blank members'
 * new records must not outvote the one member that holds the data: the
 * assembly refuses (fewer than k members in sync), nothing is written to
 * that member, and no read ever returns the blank members' zeros.
 */
static void
test_two_blank_restart(void)
{
	uint8_t a[16 * LBS], rd[16 * LBS];
	struct bdev_gga_opts opts;
	struct gga_disk *disk;
	struct create_res r;
	struct gga_sb sb[3];
	uint8_t *before;
	bool on = true;
	uint64_t t0;
	uint32_t i;

	make_error_members("Z", 3, MBS);
	disk = make_heal_gga("Z", 4, false);
	open_dev("Z");
	fill_random(a, sizeof(a));
	CU_ASSERT(dev_write(0, 16, a));
	WAIT_FOR(gga_bitmap_dirty(disk) == 0 && !gga_bitmap_busy(disk));
	/* Parity, then data_2: the array fails; their storage is wiped meanwhile. */
	fail_member(disk, "EE_Z3", 2);
	fail_member(disk, "EE_Z2", 1);
	UT_ASSERT_EQ(inject("EE_Z2", BDEV_ERROR_NONE), 0);
	UT_ASSERT_EQ(inject("EE_Z3", BDEV_ERROR_NONE), 0);
	blank_member(disk, 1);
	blank_member(disk, 2);
	/*
	 * Both answer again, blank: with fewer than k members online nothing is
	 * written to them (a record formatted now could tie with the next
	 * assembly's), so they stay failed and blank, and reads fail.
	 */
	UT_ASSERT_EQ(bdev_gga_set_options("Z", NULL, &on), 0);
	t0 = time_now_ns();
	while (time_now_ns() - t0 < 2500ull * 1000 * 1000) {
		ut_poll_idle();
	}
	UT_ASSERT_EQ(gga_member_state(&disk->members[1]), BDEV_GGA_MEMBER_FAILED);
	UT_ASSERT_EQ(gga_member_state(&disk->members[2]), BDEV_GGA_MEMBER_FAILED);
	CU_ASSERT(!dev_read(0, 16, rd));
	read_sb(disk, 0, &sb[0]);
	for (i = 1; i < 3; i++) {
		uint8_t *blk = malloc(disk->mbs);

		UT_ASSERT_EQ(member_rw(disk, i, false, 0, 1, blk), 0);
		UT_ASSERT_EQ(gga_sb_decode(blk, disk->frag_size, &sb[i]), -ENOENT);
		free(blk);
	}
	ut_dev_close(&g_dev);
	gga_delete_sync("Z");

	before = snapshot("Z1");
	heal_opts("Z", &opts);
	/* One formatted member and two blank ones: refused, nothing written. */
	UT_ASSERT_EQ(create_opts_sync(&opts, &r), -EEXIST);
	CU_ASSERT(strstr(r.msg, "cannot be assembled") != NULL);
	CU_ASSERT(bdev_get_by_name("Z") == NULL);
	ut_poll_idle();
	CU_ASSERT(unchanged("Z1", before));
	free(before);
	delete_error_members("Z", 3);
}

/*
 * A member restored from an old copy of its own storage, taken before writes
 * whose marks have since been cleared, is rebuilt whole: a resync of the
 * marked regions would leave it without those writes, and the array would
 * lose them with the next member.
 */
static void
test_old_copy_returns(void)
{
	uint8_t a[8 * LBS], b[8 * LBS], rd[8 * LBS];
	struct bdev_gga_info info;
	struct gga_disk *disk;
	uint8_t *old;
	bool on = true, off = false;

	/*
	 * The test waits twice for the sweep to clear the bitmap: one sweep
	 * every 100 ms instead of every second (read when the array is made).
	 */
	gga_test_knobs.sweep_ms = 100;
	make_error_members("O", 3, MBS);
	disk = make_heal_gga("O", 4, true);
	open_dev("O");
	fill_random(a, sizeof(a));
	fill_random(b, sizeof(b));
	CU_ASSERT(dev_write(0, 8, a));
	WAIT_FOR(gga_bitmap_dirty(disk) == 0 && !gga_bitmap_busy(disk));
	old = snapshot("O2");
	/* Set B while all three are online; its marks are cleared again. */
	CU_ASSERT(dev_write(100, 8, b));
	WAIT_FOR(gga_bitmap_dirty(disk) == 0 && !gga_bitmap_busy(disk));
	UT_ASSERT_EQ(gga_bitmap_dirty(disk), 0);
	/* data_2 goes; its storage comes back as the old copy. */
	UT_ASSERT_EQ(bdev_gga_set_options("O", NULL, &off), 0);
	fail_member(disk, "EE_O2", 1);
	UT_ASSERT_EQ(inject("EE_O2", BDEV_ERROR_NONE), 0);
	UT_ASSERT_EQ(member_rw(disk, 1, true, 0, MEMBER_BLOCKS, old), 0);
	free(old);
	UT_ASSERT_EQ(bdev_gga_set_options("O", NULL, &on), 0);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask);
	get_info("O", &info);
	UT_ASSERT_EQ(info.state, BDEV_GGA_ONLINE);
	CU_ASSERT(info.last_recovery.valid && info.last_recovery.rebuild);
	UT_ASSERT_EQ(info.last_recovery.result, 0);
	bdev_gga_info_clear(&info);
	/* data_1 lost: both sets come from data_2 and parity. */
	UT_ASSERT_EQ(inject("EE_O1", BDEV_ERROR_FAILURE), 0);
	CU_ASSERT(dev_read(0, 8, rd));
	CU_ASSERT(memcmp(rd, a, sizeof(a)) == 0);
	CU_ASSERT(dev_read(100, 8, rd));
	CU_ASSERT(memcmp(rd, b, sizeof(b)) == 0);
	UT_ASSERT_EQ(inject("EE_O1", BDEV_ERROR_NONE), 0);
	ut_dev_close(&g_dev);
	gga_delete_sync("O");
	delete_error_members("O", 3);
	gga_test_knobs.sweep_ms = 0;
}

/*
 * The rebuild rate holds while a front request is in flight, even with no new
 * request for longer than the idle spell: a pass once went unlimited as soon
 * as 50 ms passed without a new request. Only a lower bound on the time is
 * checked (a slow machine only makes the pass longer).
 */
static void
test_rate_limit_in_flight(void)
{
	uint8_t w[8 * LBS];
	struct bdev_gga_opts opts;
	struct replace_res rr = { 0 };
	struct gga_disk *disk;
	struct create_res r;
	uint64_t t0, ns;
	char msg[256];

	make_error_members("Q", 3, MBS);
	heal_opts("Q", &opts);
	opts.auto_readd = false;
	opts.rebuild_rate_mib_s = 1;
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
	disk = r.bdev->ctxt;
	open_dev("Q");
	fill_random(w, sizeof(w));
	CU_ASSERT(dev_write(0, 8, w));
	fail_member(disk, "EE_Q3", 2);
	UT_ASSERT_EQ(inject("EE_Q3", BDEV_ERROR_NONE), 0);
	/* One front request in flight for the whole pass, and no new one. */
	__atomic_fetch_add(&disk->front_ios, 1, __ATOMIC_RELAXED);
	t0 = time_now_ns();
	UT_ASSERT_EQ(bdev_gga_replace_member("Q", "parity", "EE_Q3", replace_done, &rr, msg,
					     sizeof(msg)),
		     0);
	WAIT_FOR(rr.done && gga_live_mask(disk) == disk->all_mask);
	ns = time_now_ns() - t0;
	__atomic_fetch_add(&disk->front_done, 1, __ATOMIC_RELAXED);
	UT_ASSERT_EQ(rr.rc, 0);
	UT_ASSERT_EQ(gga_live_mask(disk), disk->all_mask);
	/* 256 blocks of 1 KiB at 1 MiB/s: 250 ms; the bucket starts empty. */
	CU_ASSERT(ns >= 225ull * 1000 * 1000);
	fprintf(stderr, "  rebuild of 256 KiB at 1 MiB/s with a request in flight: %.0f ms\n",
		(double)ns / 1e6);
	check_all_paths(disk, 0, 8, w);
	ut_dev_close(&g_dev);
	gga_delete_sync("Q");
	delete_error_members("Q", 3);
}

/*
 * A member that keeps returning corrupt fragments is faulted after
 * member_error_limit of them within the window (while k others stay
 * online): failed, not re-added by the probe, until an operator clears it
 * (then resynced).
 */
static void
test_member_faulted(void)
{
	uint8_t w[8 * LBS], all[8 * LBS], rd[LBS];
	struct bdev_gga_opts opts;
	struct bdev_gga_info info;
	struct gga_disk *disk;
	struct create_res r;
	uint64_t t0;
	uint32_t b;

	make_error_members("X", 3, MBS);
	heal_opts("X", &opts);
	opts.member_error_limit = 3;
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
	disk = r.bdev->ctxt;
	open_dev("X");
	fill_random(w, sizeof(w));
	CU_ASSERT(dev_write(0, 8, w));
	UT_ASSERT_EQ(bdev_gga_clear_member("X", "data_2"), -EALREADY);
	UT_ASSERT_EQ(bdev_gga_clear_member("X", "data_9"), -ENOENT);
	UT_ASSERT_EQ(bdev_gga_clear_member("nope", "data_2"), -ENODEV);
	/* Two bad fragments: repaired, counted, still online. */
	for (b = 0; b < 3; b++) {
		flip(disk, 1, b, 7, 0x40);
		CU_ASSERT(dev_read(b, 1, rd));
		CU_ASSERT(memcmp(rd, w + b * LBS, LBS) == 0);
		if (b < 2) {
			UT_ASSERT_EQ(gga_member_state(&disk->members[1]), BDEV_GGA_MEMBER_ONLINE);
		}
	}
	/* The third: faulted. */
	UT_ASSERT_EQ(gga_member_state(&disk->members[1]), BDEV_GGA_MEMBER_FAILED);
	get_info("X", &info);
	CU_ASSERT(info.members[1].faulted);
	UT_ASSERT_EQ(info.members[1].errors, 3);
	UT_ASSERT_EQ(info.counters.checksum_failures, 3);
	UT_ASSERT_EQ(info.state, BDEV_GGA_DEGRADED);
	bdev_gga_info_clear(&info);
	/* Its base answers, but the probe leaves it out (two probe periods). */
	t0 = time_now_ns();
	while (time_now_ns() - t0 < 2500ull * 1000 * 1000) {
		ut_poll_idle();
	}
	UT_ASSERT_EQ(gga_member_state(&disk->members[1]), BDEV_GGA_MEMBER_FAILED);
	check_all_paths(disk, 0, 8, w);
	/* Cleared by the operator: re-added and resynced (what it missed is marked). */
	UT_ASSERT_EQ(bdev_gga_clear_member("X", "EE_X2"), 0);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask);
	get_info("X", &info);
	UT_ASSERT_EQ(info.state, BDEV_GGA_ONLINE);
	CU_ASSERT(!info.members[1].faulted);
	UT_ASSERT_EQ(info.members[1].errors, 0);
	CU_ASSERT(info.last_recovery.valid && !info.last_recovery.rebuild);
	bdev_gga_info_clear(&info);
	/* Data_1 lost: everything comes from the resynced data_2 and parity. */
	UT_ASSERT_EQ(inject("EE_X1", BDEV_ERROR_FAILURE), 0);
	CU_ASSERT(dev_read(0, 8, all));
	CU_ASSERT(memcmp(all, w, sizeof(w)) == 0);
	UT_ASSERT_EQ(inject("EE_X1", BDEV_ERROR_NONE), 0);
	ut_dev_close(&g_dev);
	gga_delete_sync("X");
	delete_error_members("X", 3);
}

/*
 * The error policy never takes the array below k by itself (issue 32): with
 * data_1 down, parity is one of the last two members. One unreadable block
 * read again and again is charged once; past the limit parity stays online,
 * only the blocks that cannot be read fail, and every other block reads. A
 * fragment gga poisoned itself is charged to nobody.
 */
/* Write member's fragment of block lba as a recovery poisons one it cannot rebuild. */
static void
poison(struct gga_disk *disk, uint32_t member, uint64_t lba)
{
	uint8_t *frag = calloc(1, disk->mbs);

	memset(frag + disk->frag_size, 0xff, GGA_FRAG_MD_SIZE);
	UT_ASSERT_EQ(member_rw(disk, member, true, disk->data_offset + lba, 1, frag), 0);
	free(frag);
}

static void
test_member_fault_keeps_k(void)
{
	uint8_t w[8 * LBS], all[8 * LBS], rd[LBS];
	struct bdev_gga_opts opts;
	struct bdev_gga_info info;
	struct gga_disk *disk;
	struct create_res r;
	uint32_t b;

	make_error_members("Y", 3, MBS);
	heal_opts("Y", &opts);
	opts.member_error_limit = 3;
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
	disk = r.bdev->ctxt;
	open_dev("Y");
	fill_random(w, sizeof(w));
	CU_ASSERT(dev_write(0, 8, w));
	UT_ASSERT_EQ(inject("EE_Y1", BDEV_ERROR_FAILURE), 0);
	CU_ASSERT(dev_read(0, 8, all));
	WAIT_FOR(gga_member_state(&disk->members[0]) == BDEV_GGA_MEMBER_FAILED);
	/* Block 0's parity fragment corrupt, read ten times: one error charged. */
	flip(disk, 2, 0, 7, 0x40);
	for (b = 0; b < 10; b++) {
		CU_ASSERT(!dev_read(0, 1, rd));
		if (b == 1) {
			/* Below the limit, where nothing resets the count. */
			get_info("Y", &info);
			UT_ASSERT_EQ(info.members[2].errors, 1);
			bdev_gga_info_clear(&info);
		}
	}
	get_info("Y", &info);
	UT_ASSERT_EQ(info.members[2].errors, 1);
	UT_ASSERT_EQ(info.state, BDEV_GGA_DEGRADED);
	bdev_gga_info_clear(&info);
	/* Two more blocks: past the limit, but faulting parity would fail the array. */
	for (b = 1; b < 3; b++) {
		flip(disk, 2, b, 7, 0x40);
		CU_ASSERT(!dev_read(b, 1, rd));
	}
	ut_poll_idle();
	UT_ASSERT_EQ(gga_member_state(&disk->members[2]), BDEV_GGA_MEMBER_ONLINE);
	get_info("Y", &info);
	CU_ASSERT(!info.members[2].faulted);
	UT_ASSERT_EQ(info.state, BDEV_GGA_DEGRADED);
	bdev_gga_info_clear(&info);
	CU_ASSERT(dev_read(3, 4, all));
	CU_ASSERT(memcmp(all, w + 3 * LBS, 4 * LBS) == 0);
	/* A fragment gga poisoned (metadata all 0xff): unreadable, nobody's fault. */
	poison(disk, 1, 7);
	CU_ASSERT(!dev_read(7, 1, rd));
	get_info("Y", &info);
	UT_ASSERT_EQ(info.members[1].errors, 0);
	bdev_gga_info_clear(&info);
	UT_ASSERT_EQ(inject("EE_Y1", BDEV_ERROR_NONE), 0);
	ut_dev_close(&g_dev);
	gga_delete_sync("Y");
	delete_error_members("Y", 3);
}

/*
 * A member that stops answering (its I/O held, as by a target that hangs)
 * does not hold the gga bdev's I/O: after member_timeout_ms it is failed and
 * reset, reads go on degraded, and a write completes once the superblocks
 * say the member missed it.
 */
static void
test_member_stall(void)
{
	struct bdev_error_inject_opts hold = {
		.io_type = BDEV_ERROR_IO_TYPE_ALL,
		.error_type = BDEV_ERROR_PENDING,
	};
	uint8_t w[8 * LBS], rd[8 * LBS];
	struct bdev_gga_opts opts;
	struct gga_disk *disk;
	struct create_res r;
	bool on = true, off = false;
	struct gga_sb sb;
	uint64_t t0, ns, lba;

	make_error_members("W", 3, MBS);
	heal_opts("W", &opts);
	opts.auto_readd = false;
	opts.member_timeout_ms = 200;
	/* Regions of 4 blocks: the end of the array stays unmarked until the last part. */
	opts.bitmap_region_kib = 4;
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
	disk = r.bdev->ctxt;
	open_dev("W");
	fill_random(w, sizeof(w));
	CU_ASSERT(dev_write(0, 8, w));

	/* data_2 hangs: a read waits about member_timeout_ms, then is served without it. */
	UT_ASSERT_EQ(bdev_error_inject_error("EE_W2", &hold), 0);
	t0 = time_now_ns();
	CU_ASSERT(dev_read(0, 8, rd));
	ns = time_now_ns() - t0;
	CU_ASSERT(memcmp(rd, w, sizeof(w)) == 0);
	CU_ASSERT(ns >= 150ull * 1000 * 1000);
	fprintf(stderr, "  read with data_2 hanging: %.0f ms (member_timeout_ms 200)\n",
		(double)ns / 1e6);
	UT_ASSERT_EQ(gga_member_state(&disk->members[1]), BDEV_GGA_MEMBER_FAILED);
	UT_ASSERT_EQ(inject("EE_W2", BDEV_ERROR_NONE), 0);
	UT_ASSERT_EQ(bdev_gga_set_options("W", NULL, &on), 0);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask);
	UT_ASSERT_EQ(gga_live_mask(disk), disk->all_mask);
	UT_ASSERT_EQ(bdev_gga_set_options("W", NULL, &off), 0);

	/* The parity hangs: a write completes, and the superblocks call it out of sync. */
	UT_ASSERT_EQ(bdev_error_inject_error("EE_W3", &hold), 0);
	fill_random(w, sizeof(w));
	CU_ASSERT(dev_write(0, 8, w));
	UT_ASSERT_EQ(gga_member_state(&disk->members[2]), BDEV_GGA_MEMBER_FAILED);
	read_sb(disk, 0, &sb);
	UT_ASSERT_EQ(sb.member_state[2], GGA_SB_MEMBER_STALE);
	CU_ASSERT(dev_read(0, 8, rd));
	CU_ASSERT(memcmp(rd, w, sizeof(w)) == 0);
	UT_ASSERT_EQ(inject("EE_W3", BDEV_ERROR_NONE), 0);
	UT_ASSERT_EQ(bdev_gga_set_options("W", NULL, &on), 0);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask);
	check_all_paths(disk, 0, 8, w);
	UT_ASSERT_EQ(bdev_gga_set_options("W", NULL, &off), 0);

	/*
	 * data_1 hangs a bitmap write (the app thread's own I/O, which no front
	 * channel watches): the first write to an unmarked region waits for the
	 * mark, so the member is failed and reset after member_timeout_ms and
	 * the write completes without it (it hung for ever before).
	 */
	lba = r.bdev->num_blocks - 8;
	UT_ASSERT_EQ_FATAL(gga_bitmap_marked(disk, lba), false);
	UT_ASSERT_EQ(bdev_error_inject_error("EE_W1", &hold), 0);
	fill_random(w, sizeof(w));
	t0 = time_now_ns();
	CU_ASSERT(dev_write(lba, 8, w));
	ns = time_now_ns() - t0;
	fprintf(stderr, "  write with a bitmap write hanging on data_1: %.0f ms\n",
		(double)ns / 1e6);
	UT_ASSERT_EQ(gga_member_state(&disk->members[0]), BDEV_GGA_MEMBER_FAILED);
	CU_ASSERT(dev_read(lba, 8, rd));
	CU_ASSERT(memcmp(rd, w, sizeof(w)) == 0);
	UT_ASSERT_EQ(inject("EE_W1", BDEV_ERROR_NONE), 0);
	UT_ASSERT_EQ(bdev_gga_set_options("W", NULL, &on), 0);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask);
	check_all_paths(disk, lba, 8, w);
	ut_dev_close(&g_dev);
	gga_delete_sync("W");
	delete_error_members("W", 3);
}

/*
 * Issue 32 case 7: a member that stalls while the array has only k members
 * online (here data_1 failed; in the field a rebuild's source) is kept, not
 * failed: failing it would take the array below k and fail every request
 * at once (21,303 failed commands in ~9 s), when waiting serves them all. A
 * read and a write wait through the stall (three member_timeout_ms), the
 * member stays online, and both complete once it answers again; the array
 * never failed. Before, it was failed after member_timeout_ms and both
 * requests failed.
 */
static void
test_member_stall_keeps_k(void)
{
	struct bdev_error_inject_opts hold = {
		.io_type = BDEV_ERROR_IO_TYPE_ALL,
		.error_type = BDEV_ERROR_PENDING,
	};
	uint8_t w[8 * LBS], w2[8 * LBS], rd[8 * LBS];
	struct ut_io rr = { 0 }, rw = { 0 };
	struct bdev_gga_opts opts;
	struct gga_disk *disk;
	struct create_res r;
	uint64_t t0;

	make_error_members("V", 3, MBS);
	heal_opts("V", &opts);
	opts.auto_readd = false;
	opts.member_timeout_ms = 200;
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
	disk = r.bdev->ctxt;
	open_dev("V");
	fill_random(w, sizeof(w));
	CU_ASSERT(dev_write(0, 8, w));
	gga_member_fail(disk, 0, "failed by the test");
	ut_poll_idle();
	UT_ASSERT_EQ(popcount32(gga_live_mask(disk)), 2);

	/* data_2 hangs: exactly k online, so it is kept and the requests wait. */
	UT_ASSERT_EQ(bdev_error_inject_error("EE_V2", &hold), 0);
	fill_random(w2, sizeof(w2));
	UT_ASSERT_EQ(ut_submit(&g_dev, BDEV_IO_TYPE_READ, rd, 0, 8, &rr), 0);
	UT_ASSERT_EQ(ut_submit(&g_dev, BDEV_IO_TYPE_WRITE, w2, 8, 8, &rw), 0);
	t0 = time_now_ns();
	while (time_now_ns() - t0 < 600ull * 1000 * 1000 && !rr.done && !rw.done) {
		ut_poll_once();
	}
	CU_ASSERT(!rr.done);
	CU_ASSERT(!rw.done);
	UT_ASSERT_EQ(gga_member_state(&disk->members[1]), BDEV_GGA_MEMBER_ONLINE);
	UT_ASSERT_EQ(popcount32(gga_live_mask(disk)), 2);

	/* It answers again: both complete, nothing failed. */
	UT_ASSERT_EQ(inject("EE_V2", BDEV_ERROR_NONE), 0);
	UT_ASSERT_EQ(bdev_error_release_pending("EE_V2"), 0);
	UT_POLL_UNTIL(rr.done && rw.done);
	CU_ASSERT(rr.done && rr.success);
	CU_ASSERT(rw.done && rw.success);
	CU_ASSERT(memcmp(rd, w, sizeof(w)) == 0);
	CU_ASSERT(dev_read(8, 8, rd));
	CU_ASSERT(memcmp(rd, w2, sizeof(w2)) == 0);
	UT_ASSERT_EQ(gga_member_state(&disk->members[1]), BDEV_GGA_MEMBER_ONLINE);

	/* With three online, a stall is failed as before (k others stay). */
	ut_dev_close(&g_dev);
	gga_delete_sync("V");
	delete_error_members("V", 3);
}

/* Rewrite member i's superblock record as `sb` (crafting what a crash left). */
static void
write_sb(struct gga_disk *disk, uint32_t i, const struct gga_sb *sb)
{
	uint8_t *blk = calloc(1, disk->mbs);

	CU_ASSERT_FATAL(blk != NULL);
	UT_ASSERT_EQ(gga_sb_encode(sb, blk), 0);
	UT_ASSERT_EQ(member_rw(disk, i, true, 0, 1, blk), 0);
	free(blk);
}

/* Zero member i's data area (its fragments), leaving its reserved region. */
static void
blank_data(struct gga_disk *disk, uint32_t i)
{
	uint8_t *zero = calloc(NBLK, disk->mbs);

	CU_ASSERT_FATAL(zero != NULL);
	UT_ASSERT_EQ(member_rw(disk, i, true, disk->data_offset, NBLK, zero), 0);
	free(zero);
}

/* Delete and assemble "Y" again over EE_Y1..3; the new disk. */
static struct gga_disk *
reassemble_y(void)
{
	ut_dev_close(&g_dev);
	gga_delete_sync("Y");
	return make_heal_gga("Y", 4, true);
}

/* After a recovery: with data_1 lost, every block still reads back as written. */
static void
check_without_data_1(struct gga_disk *disk, const uint8_t *w)
{
	uint8_t rd[16 * LBS];

	WAIT_FOR(gga_live_mask(disk) == disk->all_mask);
	UT_ASSERT_EQ(gga_live_mask(disk), disk->all_mask);
	UT_ASSERT_EQ(inject("EE_Y1", BDEV_ERROR_FAILURE), 0);
	CU_ASSERT(dev_read(0, 16, rd));
	CU_ASSERT(memcmp(rd, w, sizeof(rd)) == 0);
	CU_ASSERT(dev_read(200, 16, rd));
	CU_ASSERT(memcmp(rd, w + sizeof(rd), sizeof(rd)) == 0);
	UT_ASSERT_EQ(inject("EE_Y1", BDEV_ERROR_NONE), 0);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask);
}

/*
 * What a crash leaves in the records, crafted on the members, then an
 * assembly:
 * - one update cut short between the records of a member just formatted
 *   (data_2: "needs a rebuild" in its own record) and the others' (data_2
 *   "stale"), all with one event count: the tie resolves toward the more
 *   degraded view, so data_2 is rebuilt whole, not resynced over no region;
 * - a checkpoint at block 128 for the parity, whose storage then comes back
 *   blank: its rebuild starts at block 0, not 128.
 */
static void
test_assembly_crash_records(void)
{
	uint8_t w[32 * LBS];
	struct bdev_gga_info info;
	struct gga_disk *disk;
	struct gga_sb sb[3];
	uint32_t i;

	make_error_members("Y", 3, MBS);
	disk = make_heal_gga("Y", 4, true);
	open_dev("Y");
	fill_random(w, sizeof(w));
	CU_ASSERT(dev_write(0, 16, w));
	CU_ASSERT(dev_write(200, 16, w + 16 * LBS));
	WAIT_FOR(gga_bitmap_dirty(disk) == 0 && !gga_bitmap_busy(disk));

	/* The tie: data_2's fragments are blank, its record says so, the others' do not. */
	for (i = 0; i < 3; i++) {
		read_sb(disk, i, &sb[i]);
	}
	blank_data(disk, 1);
	for (i = 0; i < 3; i++) {
		sb[i].member_state[1] = i == 1 ? GGA_SB_MEMBER_REBUILD : GGA_SB_MEMBER_STALE;
		write_sb(disk, i, &sb[i]);
	}
	disk = reassemble_y();
	open_dev("Y");
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask);
	get_info("Y", &info);
	CU_ASSERT(info.last_recovery.valid && info.last_recovery.rebuild);
	UT_ASSERT_EQ(info.last_recovery.blocks_copied, NBLK);
	bdev_gga_info_clear(&info);
	check_without_data_1(disk, w);

	/* The checkpoint: parity in a pass done below 128, then its storage blank. */
	for (i = 0; i < 3; i++) {
		read_sb(disk, i, &sb[i]);
		sb[i].member_state[2] = GGA_SB_MEMBER_REBUILD;
		sb[i].recovery_mask = 1u << 2;
		sb[i].recovery_offset = 128;
		write_sb(disk, i, &sb[i]);
	}
	blank_member(disk, 2);
	disk = reassemble_y();
	open_dev("Y");
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask);
	get_info("Y", &info);
	CU_ASSERT(info.last_recovery.valid && info.last_recovery.rebuild);
	UT_ASSERT_EQ(info.last_recovery.blocks_copied, NBLK);
	bdev_gga_info_clear(&info);
	check_without_data_1(disk, w);

	ut_dev_close(&g_dev);
	gga_delete_sync("Y");
	delete_error_members("Y", 3);
}

/*
 * A rebuild whose checkpoint was persisted at block 1024 or beyond loses its
 * member, a write lands below the checkpoint meanwhile, and the member comes
 * back: its pass starts over from block 0. It once resumed at the
 * checkpoint, and the member went online without the write.
 */
static void
test_checkpoint_not_resumed(void)
{
	uint8_t a[8 * LBS], c[8 * LBS], rd[8 * LBS];
	struct replace_res rr = { 0 };
	struct bdev_gga_opts opts;
	struct bdev_gga_info info;
	struct gga_disk *disk;
	struct create_res r;
	struct gga_sb sb;
	char msg[256];
	uint64_t t0;

	make_error_members_of("K", 3, MBS, 4096);
	heal_opts("K", &opts);
	opts.auto_readd = false;
	opts.rebuild_rate_mib_s = 1;
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
	disk = r.bdev->ctxt;
	open_dev("K");
	fill_random(a, sizeof(a));
	fill_random(c, sizeof(c));
	CU_ASSERT(dev_write(0, 8, a));
	fail_member(disk, "EE_K3", 2);
	UT_ASSERT_EQ(inject("EE_K3", BDEV_ERROR_NONE), 0);
	/* A full rebuild of the parity, held to 1 MiB/s by front reads, until a checkpoint. */
	UT_ASSERT_EQ(bdev_gga_replace_member("K", "parity", "EE_K3", replace_done, &rr, msg,
					     sizeof(msg)),
		     0);
	t0 = time_now_ns();
	memset(&sb, 0, sizeof(sb));
	while (time_now_ns() - t0 < 8ull * 1000 * 1000 * 1000) {
		CU_ASSERT(dev_read(4000, 1, rd));
		if (rr.done && disk->rec_offset >= 1024) {
			/* On the members, not only in memory. */
			read_sb(disk, 0, &sb);
			if (sb.recovery_offset >= 1024 && sb.recovery_mask == 1u << 2) {
				break;
			}
		}
	}
	CU_ASSERT(sb.recovery_offset >= 1024 && sb.recovery_mask == 1u << 2);
	CU_ASSERT(disk->walk != NULL);
	/* It fails; block 0..7 are written without it, below the checkpoint. */
	UT_ASSERT_EQ(inject("EE_K3", BDEV_ERROR_FAILURE), 0);
	CU_ASSERT(dev_write(0, 8, c));
	UT_ASSERT_EQ(gga_member_state(&disk->members[2]), BDEV_GGA_MEMBER_FAILED);
	WAIT_FOR(disk->walk == NULL);
	/* Back: recovered from block 0, so the write below the old checkpoint is on it. */
	UT_ASSERT_EQ(inject("EE_K3", BDEV_ERROR_NONE), 0);
	disk->rec_retry_ticks = 0;
	disk->members[2].forced = true;
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask);
	UT_ASSERT_EQ(gga_live_mask(disk), disk->all_mask);
	get_info("K", &info);
	CU_ASSERT(info.last_recovery.valid && info.last_recovery.result == 0);
	UT_ASSERT_EQ(info.last_recovery.blocks_copied, 4096);
	bdev_gga_info_clear(&info);
	UT_ASSERT_EQ(inject("EE_K1", BDEV_ERROR_FAILURE), 0);
	CU_ASSERT(dev_read(0, 8, rd));
	CU_ASSERT(memcmp(rd, c, sizeof(c)) == 0);
	UT_ASSERT_EQ(inject("EE_K1", BDEV_ERROR_NONE), 0);
	ut_dev_close(&g_dev);
	gga_delete_sync("K");
	delete_error_members("K", 3);
}

/* ---------------------------------------------------------------------- */
/* Assembly that waits, leaves out a failing member, is timed (issue 32)   */
/* ---------------------------------------------------------------------- */

/* Error bdev EE_<p><i> over the malloc base <p><i>, again. */
static void
error_member_up(const char *p, uint32_t i)
{
	struct bdev_error_opts eopts = { 0 };
	char name[16];

	snprintf(name, sizeof(name), "%s%u", p, i);
	eopts.base_name = name;
	UT_ASSERT_EQ_FATAL(bdev_error_create(&eopts, NULL), 0);
}

/* Error bdev EE_<p><i> gone: the member's base bdev does not exist (its data stays below). */
static void
error_member_down(const char *p, uint32_t i)
{
	struct ut_cpl cpl = { 0 };
	char name[16];

	snprintf(name, sizeof(name), "EE_%s%u", p, i);
	UT_ASSERT_EQ_FATAL(bdev_error_delete(name, ut_cpl_done, &cpl), 0);
	UT_POLL_UNTIL(cpl.done);
	CU_ASSERT(cpl.done);
}

/*
 * Issue 32, case 4: the array restarts while two of its three members are
 * down. Without wait_for_members the create is refused as before; with it
 * (what save_config writes) the bdev is registered, says it waits, fails
 * every request, and assembles by itself once a second member comes back:
 * every block written before reads back. The third is attached and
 * resynced later by the probe, like any absent member.
 */
static void
test_assembly_waits_for_members(void)
{
	uint8_t a[16 * LBS], rd[16 * LBS];
	struct bdev_gga_opts opts;
	struct bdev_gga_info info;
	struct gga_disk *disk;
	struct create_res r;

	make_error_members("A", 3, MBS);
	disk = make_heal_gga("A", 4, true);
	open_dev("A");
	fill_random(a, sizeof(a));
	CU_ASSERT(dev_write(0, 16, a));
	ut_dev_close(&g_dev);
	gga_delete_sync("A");
	error_member_down("A", 2);
	error_member_down("A", 3);

	heal_opts("A", &opts);
	UT_ASSERT_EQ(create_opts_sync(&opts, &r), -ENODEV);
	CU_ASSERT(bdev_get_by_name("A") == NULL);

	opts.wait_for_members = true;
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
	CU_ASSERT_FATAL(r.bdev != NULL);
	disk = r.bdev->ctxt;
	get_info("A", &info);
	UT_ASSERT_EQ(info.state, BDEV_GGA_FAILED);
	CU_ASSERT_FATAL(info.waiting != NULL);
	CU_ASSERT(strstr(info.waiting, "in sync") != NULL);
	UT_ASSERT_EQ(info.members[0].state, BDEV_GGA_MEMBER_STALE);
	UT_ASSERT_EQ(info.members[1].state, BDEV_GGA_MEMBER_ABSENT);
	UT_ASSERT_EQ(info.members[2].state, BDEV_GGA_MEMBER_ABSENT);
	bdev_gga_info_clear(&info);
	CU_ASSERT(!bdev_is_accessible(r.bdev));
	/* Every request fails, none hangs. */
	open_dev("A");
	CU_ASSERT(!dev_read(0, 16, rd));
	CU_ASSERT(!dev_write(0, 1, rd));

	/* data_2 back: assembled by itself, degraded, everything reads back. */
	error_member_up("A", 2);
	WAIT_FOR(!__atomic_load_n(&disk->waiting, __ATOMIC_ACQUIRE));
	CU_ASSERT(!__atomic_load_n(&disk->waiting, __ATOMIC_ACQUIRE));
	CU_ASSERT(bdev_is_accessible(r.bdev));
	UT_ASSERT_EQ(gga_live_mask(disk), 3);
	get_info("A", &info);
	UT_ASSERT_EQ(info.state, BDEV_GGA_DEGRADED);
	CU_ASSERT(info.waiting == NULL);
	bdev_gga_info_clear(&info);
	memset(rd, 0, sizeof(rd));
	CU_ASSERT(dev_read(0, 16, rd));
	CU_ASSERT(memcmp(rd, a, sizeof(a)) == 0);
	fill_random(a, 4 * LBS);
	CU_ASSERT(dev_write(0, 4, a));

	/* The parity back: the probe attaches and resyncs it. */
	error_member_up("A", 3);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask);
	UT_ASSERT_EQ(gga_live_mask(disk), disk->all_mask);
	check_all_paths(disk, 0, 16, a);
	ut_dev_close(&g_dev);
	gga_delete_sync("A");
	delete_error_members("A", 3);
}

/*
 * The RPCs that change an array while it waits for members (issue 32): the
 * changes refuse with -EAGAIN and say why (scrub start and stop, clear and
 * replace a member), changing nothing (the new base is not claimed, nothing
 * is written to the member that answered); the options are recorded and
 * taken by the assembly. Before, a scrub start said "fewer than k members
 * are online", a stop "no scrub is running", a clear "not faulted", a
 * replace "fewer than 2 members online"; auto_readd turned on stepped the
 * lifecycle module over the placeholder states of the waiting.
 */
static void
test_assembly_wait_rpcs(void)
{
	uint8_t a[8 * LBS];
	struct bdev_gga_opts opts;
	struct bdev_gga_info info;
	struct gga_disk *disk;
	struct create_res r;
	struct bdev *b4;
	uint8_t *before;
	uint64_t t0;
	uint32_t i;

	make_error_members("W", 3, MBS);
	make_malloc("W4", MBS, MD, GGA_SB_REGION_BYTES / MBS + NBLK);
	disk = make_heal_gga("W", 4, false);
	open_dev("W");
	fill_random(a, sizeof(a));
	CU_ASSERT(dev_write(0, 8, a));
	ut_dev_close(&g_dev);
	gga_delete_sync("W");
	error_member_down("W", 2);
	error_member_down("W", 3);
	before = snapshot("W1");

	heal_opts("W", &opts);
	opts.auto_readd = false;
	opts.wait_for_members = true;
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
	disk = r.bdev->ctxt;
	CU_ASSERT_FATAL(__atomic_load_n(&disk->waiting, __ATOMIC_ACQUIRE));

	UT_ASSERT_EQ(rpc_refused("bdev_gga_scrub", "{\"name\": \"W\", \"action\": \"start\"}",
				 "gga bdev 'W' is not assembled: waiting for members (only 1 of 3"),
		     -EAGAIN);
	UT_ASSERT_EQ(rpc_refused("bdev_gga_scrub", "{\"name\": \"W\", \"action\": \"stop\"}",
				 "is not assembled: waiting for members"),
		     -EAGAIN);
	UT_ASSERT_EQ(rpc_refused("bdev_gga_scrub", "{\"name\": \"W\"}", NULL), 0);
	UT_ASSERT_EQ(rpc_refused("bdev_gga_clear_member",
				 "{\"name\": \"W\", \"member\": \"data_1\"}",
				 "is not assembled: waiting for members"),
		     -EAGAIN);
	/* A typo is still named as such. */
	UT_ASSERT_EQ(rpc_refused("bdev_gga_clear_member",
				 "{\"name\": \"W\", \"member\": \"data_9\"}", "has no member"),
		     -ENOENT);
	UT_ASSERT_EQ(rpc_refused("bdev_gga_replace_member",
				 "{\"name\": \"W\", \"member\": \"parity\", \"new_base\": \"W4\"}",
				 "is not assembled: waiting for members"),
		     -EAGAIN);
	b4 = bdev_get_by_name("W4");
	CU_ASSERT_FATAL(b4 != NULL);
	CU_ASSERT(!bdev_is_claimed(b4));
	UT_ASSERT_STR_EQ(disk->members[2].name, "EE_W3");

	/* Options: recorded, and nothing else moves while it waits. */
	UT_ASSERT_EQ(
		ut_rpc_code("bdev_gga_set_options",
			    "{\"name\": \"W\", \"auto_readd\": true, \"rebuild_rate_mib_s\": 7, "
			    "\"member_timeout_ms\": 1500}"),
		0);
	CU_ASSERT(disk->walk == NULL);
	CU_ASSERT(disk->events == 0);
	get_info("W", &info);
	CU_ASSERT(info.waiting != NULL);
	UT_ASSERT_EQ(info.members[0].state, BDEV_GGA_MEMBER_STALE);
	UT_ASSERT_EQ(info.members[1].state, BDEV_GGA_MEMBER_ABSENT);
	UT_ASSERT_EQ(info.members[2].state, BDEV_GGA_MEMBER_ABSENT);
	CU_ASSERT(info.auto_readd);
	UT_ASSERT_EQ(info.rebuild_rate_mib_s, 7);
	UT_ASSERT_EQ(info.member_timeout_ms, 1500);
	bdev_gga_info_clear(&info);
	/* An attempt of the assembly at least (one a second) writes nothing either. */
	t0 = time_now_ns();
	while (time_now_ns() - t0 < 1200ull * 1000 * 1000) {
		ut_poll_idle();
	}
	CU_ASSERT(disk->walk == NULL);
	CU_ASSERT(unchanged("W1", before));
	free(before);

	/* data_2 back: assembled with the options given while it waited; changes are taken now. */
	error_member_up("W", 2);
	WAIT_FOR(!__atomic_load_n(&disk->waiting, __ATOMIC_ACQUIRE));
	CU_ASSERT_FATAL(!__atomic_load_n(&disk->waiting, __ATOMIC_ACQUIRE));
	UT_ASSERT_EQ(disk->rebuild_rate, 7);
	UT_ASSERT_EQ(disk->timeout_ms, 1500);
	CU_ASSERT(disk->auto_readd);
	UT_ASSERT_EQ(rpc_refused("bdev_gga_scrub", "{\"name\": \"W\", \"action\": \"start\"}",
				 NULL),
		     0);
	open_dev("W");
	check_all_paths(disk, 0, 8, a);
	ut_dev_close(&g_dev);
	gga_delete_sync("W");
	malloc_delete_sync("W4");

	/*
	 * No member at all: nothing tells the bdev's block size and size, so it
	 * cannot be registered; the refusal says so (before: "data_1 ...: base
	 * bdev does not exist (and fewer than 2 members do)").
	 */
	error_member_down("W", 1);
	error_member_down("W", 2);
	opts.wait_for_members = true;
	UT_ASSERT_EQ(create_opts_sync(&opts, &r), -ENODEV);
	CU_ASSERT(strstr(r.msg, "no member's base bdev exists") != NULL);
	CU_ASSERT(strstr(r.msg, "block size and size") != NULL);
	CU_ASSERT(bdev_get_by_name("W") == NULL);
	for (i = 1; i <= 3; i++) {
		error_member_up("W", i);
	}
	delete_error_members("W", 3);
}

/* Replay entry's bdev_gga_create with params[key] = value (NULL: key left out); the message. */
static int
replay_with(json_t *entry, const char *key, json_t *value, const char *want)
{
	json_t *params = json_deep_copy(json_object_get(entry, "params"));
	char *text;
	int code;

	CU_ASSERT_FATAL(params != NULL);
	if (value != NULL) {
		json_object_set_new(params, key, value);
	} else {
		json_object_del(params, key);
	}
	text = json_dumps(params, 0);
	CU_ASSERT_FATAL(text != NULL);
	code = rpc_refused("bdev_gga_create", text, want);
	free(text);
	json_decref(params);
	return code;
}

/*
 * Issue 32: the front restarts from its saved configuration while every
 * member is down (a power cut where the front boots first). save_config
 * records the members' geometry, so the bdev is registered from it and
 * waits (before: refused, "no member's base bdev exists", and gga0 was lost
 * for good); members that come back are assembled, every block reads back.
 * Without the geometry the refusal stays; a geometry other than the
 * members' is refused at create, and while waiting the members that do not
 * match it are not taken (nothing written to them).
 */
static void
test_assembly_waits_with_no_member(void)
{
	uint8_t a[16 * LBS], rd[16 * LBS];
	struct bdev_gga_info info;
	struct gga_disk *disk;
	json_t *entry, *params;
	struct bdev *bdev;
	uint8_t *before;
	uint64_t t0;
	uint32_t i;

	make_error_members("Z", 3, MBS);
	disk = make_heal_gga("Z", 4, true);
	open_dev("Z");
	fill_random(a, sizeof(a));
	CU_ASSERT(dev_write(0, 16, a));
	ut_dev_close(&g_dev);
	entry = ut_bdev_config(&disk->bdev);
	CU_ASSERT_FATAL(entry != NULL);
	params = json_object_get(entry, "params");
	UT_ASSERT_EQ(json_integer_value(json_object_get(params, "member_block_size")), MBS);
	UT_ASSERT_EQ(json_integer_value(json_object_get(params, "member_md_size")), MD);
	UT_ASSERT_EQ(json_integer_value(json_object_get(params, "member_num_blocks")),
		     (json_int_t)(GGA_SB_REGION_BYTES / MBS + NBLK));
	gga_delete_sync("Z");

	/* A geometry other than the members' is refused while they are there. */
	UT_ASSERT_EQ(replay_with(entry, "member_num_blocks",
				 json_integer(GGA_SB_REGION_BYTES / MBS + NBLK + 8),
				 "the array (member_block_size etc. given)"),
		     RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_EQ(replay_with(entry, "member_md_size", NULL, "give all three"),
		     RPC_ERROR_INVALID_PARAMS);
	CU_ASSERT(bdev_get_by_name("Z") == NULL);

	for (i = 1; i <= 3; i++) {
		error_member_down("Z", i);
	}
	/* Without the geometry: refused as before, saying what is missing. */
	UT_ASSERT_EQ(replay_with(entry, "member_block_size", NULL, "member_block_size"),
		     RPC_ERROR_INVALID_PARAMS);
	params = json_deep_copy(params);
	json_object_del(params, "member_md_size");
	json_object_del(params, "member_num_blocks");
	json_object_set_new(entry, "params", params);
	UT_ASSERT_EQ(replay_with(entry, "member_block_size", NULL,
				 "no member's base bdev exists (data_1 'EE_Z1' the first)"),
		     -ENODEV);
	params = json_deep_copy(params);
	json_object_set_new(params, "member_block_size", json_integer(MBS));
	json_object_set_new(params, "member_md_size", json_integer(MD));
	json_object_set_new(params, "member_num_blocks",
			    json_integer(GGA_SB_REGION_BYTES / MBS + NBLK));
	json_object_set_new(entry, "params", params);
	CU_ASSERT(bdev_get_by_name("Z") == NULL);

	/* Another geometry, no member: registered, but members that do not match are not taken. */
	before = snapshot("Z1");
	UT_ASSERT_EQ_FATAL(replay_with(entry, "member_num_blocks",
				       json_integer(GGA_SB_REGION_BYTES / MBS + NBLK + 8), NULL),
			   0);
	bdev = bdev_get_by_name("Z");
	CU_ASSERT_FATAL(bdev != NULL);
	disk = bdev->ctxt;
	UT_ASSERT_EQ(bdev_get_num_blocks(bdev), NBLK + 8);
	for (i = 1; i <= 3; i++) {
		error_member_up("Z", i);
	}
	t0 = time_now_ns();
	while (time_now_ns() - t0 < 1500ull * 1000 * 1000) {
		ut_poll_idle();
	}
	CU_ASSERT(__atomic_load_n(&disk->waiting, __ATOMIC_ACQUIRE));
	get_info("Z", &info);
	UT_ASSERT_EQ(info.state, BDEV_GGA_FAILED);
	UT_ASSERT_EQ(info.members[0].state, BDEV_GGA_MEMBER_ABSENT);
	CU_ASSERT(info.members[0].reason != NULL &&
		  strstr(info.members[0].reason, "another geometry") != NULL);
	CU_ASSERT(info.waiting != NULL && strstr(info.waiting, "another geometry") != NULL);
	bdev_gga_info_clear(&info);
	CU_ASSERT(!bdev_is_claimed(bdev_get_by_name("EE_Z1")));
	gga_delete_sync("Z");
	CU_ASSERT(unchanged("Z1", before));
	free(before);
	for (i = 1; i <= 3; i++) {
		error_member_down("Z", i);
	}

	/* The saved configuration, no member: registered, waiting, every request fails. */
	UT_ASSERT_EQ_FATAL(ut_rpc_replay(entry), 0);
	bdev = bdev_get_by_name("Z");
	CU_ASSERT_FATAL(bdev != NULL);
	disk = bdev->ctxt;
	UT_ASSERT_EQ(bdev_get_num_blocks(bdev), NBLK);
	UT_ASSERT_EQ(bdev_get_block_size(bdev), LBS);
	UT_ASSERT_STR_EQ(bdev_get_uuid_str(bdev),
			 json_string_value(json_object_get(params, "uuid")));
	get_info("Z", &info);
	UT_ASSERT_EQ(info.state, BDEV_GGA_FAILED);
	CU_ASSERT_FATAL(info.waiting != NULL);
	CU_ASSERT(strstr(info.waiting, "no member's base bdev exists") != NULL);
	for (i = 0; i < 3; i++) {
		UT_ASSERT_EQ(info.members[i].state, BDEV_GGA_MEMBER_ABSENT);
	}
	bdev_gga_info_clear(&info);
	CU_ASSERT(!bdev_is_accessible(bdev));
	open_dev("Z");
	CU_ASSERT(!dev_read(0, 16, rd));
	CU_ASSERT(!dev_write(0, 1, rd));

	/* One member back: still too few. Two: assembled by itself, everything reads back. */
	error_member_up("Z", 1);
	t0 = time_now_ns();
	while (time_now_ns() - t0 < 1200ull * 1000 * 1000) {
		ut_poll_idle();
	}
	CU_ASSERT(__atomic_load_n(&disk->waiting, __ATOMIC_ACQUIRE));
	error_member_up("Z", 3);
	WAIT_FOR(!__atomic_load_n(&disk->waiting, __ATOMIC_ACQUIRE));
	CU_ASSERT_FATAL(!__atomic_load_n(&disk->waiting, __ATOMIC_ACQUIRE));
	CU_ASSERT(bdev_is_accessible(bdev));
	memset(rd, 0, sizeof(rd));
	CU_ASSERT(dev_read(0, 16, rd));
	CU_ASSERT(memcmp(rd, a, sizeof(a)) == 0);
	fill_random(a, 4 * LBS);
	CU_ASSERT(dev_write(0, 4, a));
	/* The last one: attached and resynced by the probe. */
	error_member_up("Z", 2);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask);
	UT_ASSERT_EQ(gga_live_mask(disk), disk->all_mask);
	check_all_paths(disk, 0, 16, a);
	ut_dev_close(&g_dev);
	json_decref(entry);
	gga_delete_sync("Z");
	delete_error_members("Z", 3);
}

/*
 * A bdev that waits can be deleted: the waiting ends, every member it
 * opened is released (its base can be deleted and claimed again), and
 * nothing was written to the one member it read.
 */
static void
test_assembly_wait_deleted(void)
{
	struct bdev_gga_opts opts;
	struct create_res r;
	uint8_t *before;
	uint64_t t0;

	make_error_members("D", 3, MBS);
	make_heal_gga("D", 4, true);
	gga_delete_sync("D");
	error_member_down("D", 3);
	error_member_down("D", 2);
	before = snapshot("D1");
	heal_opts("D", &opts);
	opts.wait_for_members = true;
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
	CU_ASSERT(bdev_get_by_name("D") != NULL);
	/* Two attempts at least, then the delete. */
	t0 = time_now_ns();
	while (time_now_ns() - t0 < 2500ull * 1000 * 1000) {
		ut_poll_idle();
	}
	gga_delete_sync("D");
	CU_ASSERT(unchanged("D1", before));
	free(before);
	/* Released: with its members back the array assembles anew, whole. */
	error_member_up("D", 2);
	error_member_up("D", 3);
	opts.wait_for_members = false;
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
	UT_ASSERT_EQ(gga_live_mask(r.bdev->ctxt), 7);
	gga_delete_sync("D");
	delete_error_members("D", 3);
}

/*
 * A member whose superblock read fails at assembly is left out when the
 * others suffice (it failed the whole create before), and is brought back
 * by the probe once it answers.
 */
static void
test_assembly_leaves_out_failed_read(void)
{
	struct bdev_error_inject_opts fail = {
		.io_type = BDEV_IO_TYPE_READ,
		.error_type = BDEV_ERROR_FAILURE,
	};
	uint8_t a[8 * LBS];
	struct bdev_gga_opts opts;
	struct gga_disk *disk;
	struct create_res r;

	make_error_members("L", 3, MBS);
	disk = make_heal_gga("L", 4, true);
	open_dev("L");
	fill_random(a, sizeof(a));
	CU_ASSERT(dev_write(0, 8, a));
	ut_dev_close(&g_dev);
	gga_delete_sync("L");

	UT_ASSERT_EQ(bdev_error_inject_error("EE_L1", &fail), 0);
	heal_opts("L", &opts);
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
	disk = r.bdev->ctxt;
	UT_ASSERT_EQ(gga_member_state(&disk->members[0]), BDEV_GGA_MEMBER_ABSENT);
	UT_ASSERT_EQ(gga_live_mask(disk), 6);
	open_dev("L");
	check_all_paths(disk, 0, 8, a);
	UT_ASSERT_EQ(inject("EE_L1", BDEV_ERROR_NONE), 0);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask);
	UT_ASSERT_EQ(gga_live_mask(disk), disk->all_mask);
	check_all_paths(disk, 0, 8, a);
	ut_dev_close(&g_dev);
	gga_delete_sync("L");
	delete_error_members("L", 3);
}

/*
 * A member that holds its superblock read (a paused target) is left out
 * after member_timeout_ms, not after its own timeout (for ever here); one
 * whose assembly write fails is failed once the array runs, and the next
 * record says it is out of sync.
 */
static void
test_assembly_stall_and_write_failure(void)
{
	struct bdev_error_inject_opts hold = {
		.io_type = BDEV_IO_TYPE_READ,
		.error_type = BDEV_ERROR_PENDING,
	};
	struct bdev_error_inject_opts wfail = {
		.io_type = BDEV_IO_TYPE_WRITE,
		.error_type = BDEV_ERROR_FAILURE,
	};
	uint8_t a[8 * LBS];
	struct bdev_gga_opts opts;
	struct gga_disk *disk;
	struct create_res r;
	struct gga_sb sb;

	make_error_members("S", 3, MBS);
	disk = make_heal_gga("S", 4, true);
	open_dev("S");
	fill_random(a, sizeof(a));
	CU_ASSERT(dev_write(0, 8, a));
	ut_dev_close(&g_dev);
	gga_delete_sync("S");

	/* data_2 holds every read: left out after 200 ms, and the bdev comes up. */
	UT_ASSERT_EQ(bdev_error_inject_error("EE_S2", &hold), 0);
	heal_opts("S", &opts);
	opts.member_timeout_ms = 200;
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
	disk = r.bdev->ctxt;
	UT_ASSERT_EQ(gga_member_state(&disk->members[1]), BDEV_GGA_MEMBER_ABSENT);
	CU_ASSERT(strstr(disk->members[1].reason, "member_timeout_ms") != NULL);
	open_dev("S");
	check_all_paths(disk, 0, 8, a);
	UT_ASSERT_EQ(inject("EE_S2", BDEV_ERROR_NONE), 0);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask);
	UT_ASSERT_EQ(gga_live_mask(disk), disk->all_mask);
	ut_dev_close(&g_dev);
	gga_delete_sync("S");

	/* The parity fails the assembly's write: assembled without it, recorded out of sync. */
	UT_ASSERT_EQ(bdev_error_inject_error("EE_S3", &wfail), 0);
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
	disk = r.bdev->ctxt;
	WAIT_FOR(gga_member_state(&disk->members[2]) == BDEV_GGA_MEMBER_FAILED);
	UT_ASSERT_EQ(gga_member_state(&disk->members[2]), BDEV_GGA_MEMBER_FAILED);
	WAIT_FOR((read_sb(disk, 0, &sb), sb.member_state[2] == GGA_SB_MEMBER_STALE));
	UT_ASSERT_EQ(sb.member_state[2], GGA_SB_MEMBER_STALE);
	open_dev("S");
	check_all_paths(disk, 0, 8, a);
	UT_ASSERT_EQ(inject("EE_S3", BDEV_ERROR_NONE), 0);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask);
	UT_ASSERT_EQ(gga_live_mask(disk), disk->all_mask);
	check_all_paths(disk, 0, 8, a);
	ut_dev_close(&g_dev);
	gga_delete_sync("S");
	delete_error_members("S", 3);
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_flush_failed_member),
		UT_TEST(test_two_blank_restart),
		UT_TEST(test_old_copy_returns),
		UT_TEST(test_rate_limit_in_flight),
		UT_TEST(test_member_faulted),
		UT_TEST(test_member_fault_keeps_k),
		UT_TEST(test_member_stall),
		UT_TEST(test_member_stall_keeps_k),
		UT_TEST(test_assembly_crash_records),
		UT_TEST(test_checkpoint_not_resumed),
		UT_TEST(test_assembly_waits_for_members),
		UT_TEST(test_assembly_wait_deleted),
		UT_TEST(test_assembly_wait_rpcs),
		UT_TEST(test_assembly_waits_with_no_member),
		UT_TEST(test_assembly_leaves_out_failed_read),
		UT_TEST(test_assembly_stall_and_write_failure),
	};

	return ut_run("bdev_gga_recovery", tests, ARRAY_SIZE(tests), suite_init, suite_fini);
}
