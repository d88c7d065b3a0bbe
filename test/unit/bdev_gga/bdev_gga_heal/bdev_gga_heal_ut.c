/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of how a gga bdev gets its redundancy back, on the harness of
 * ../bdev_gga_harness.c: the write-intent bitmap (marked on the members
 * before a write, cleared lazily), member states persisted before a write a
 * member missed is acknowledged, a stale member never trusted after a
 * restart and resynced over the marked regions only, replace with a full
 * rebuild, scrub, and a 4 + 2 array that survives two members and resyncs
 * both.
 */
#include "test/unit/bdev_gga/bdev_gga_heal_env.c"

static void
test_bitmap(void)
{
	uint8_t w[4 * LBS];
	struct bdev_gga_info info;
	struct gga_disk *disk;
	uint32_t i;

	make_error_members("B", 3, MBS);
	/* 4 KiB regions: 4 logical blocks each, 64 regions. */
	disk = make_heal_gga("B", 4, true);
	get_info("B", &info);
	UT_ASSERT_EQ(info.bitmap_region_kib, 4);
	UT_ASSERT_EQ(info.bitmap_regions, NBLK / 4);
	UT_ASSERT_EQ(info.bitmap_dirty, 0);
	bdev_gga_info_clear(&info);

	open_dev("B");
	fill_random(w, sizeof(w));
	/* Blocks 10..13: regions 2 and 3. The marks are on every member before the write. */
	CU_ASSERT(dev_write(10, 4, w));
	get_info("B", &info);
	UT_ASSERT_EQ(info.bitmap_dirty, 2);
	bdev_gga_info_clear(&info);
	for (i = 0; i < 3; i++) {
		UT_ASSERT_EQ(member_bitmap_byte(disk, i, 0), 0x0c);
	}
	/* Untouched for a whole sweep, with every member online: cleared, on the members too. */
	WAIT_FOR(gga_bitmap_dirty(disk) == 0 && !gga_bitmap_busy(disk));
	UT_ASSERT_EQ(gga_bitmap_dirty(disk), 0);
	for (i = 0; i < 3; i++) {
		UT_ASSERT_EQ(member_bitmap_byte(disk, i, 0), 0);
	}
	check_all_paths(disk, 10, 4, w);
	ut_dev_close(&g_dev);
	gga_delete_sync("B");
	delete_error_members("B", 3);
}

/*
 * A delete with every member online closes clean: the marks of the writes
 * just made go by the two updates of rule 8 once no write can come, on the
 * members too, so the next assembly has no region to check. With a member
 * down at the delete they stay (test_stale_member_restart).
 */
static void
test_clean_close(void)
{
	uint8_t w[4 * LBS];
	struct bdev_gga_info info;
	struct gga_disk *disk;
	struct gga_sb sb;
	uint64_t events;
	uint32_t i;

	make_error_members("C", 3, MBS);
	disk = make_heal_gga("C", 4, true);
	open_dev("C");
	fill_random(w, sizeof(w));
	CU_ASSERT(dev_write(10, 4, w));
	UT_ASSERT_EQ(gga_bitmap_dirty(disk), 2);
	read_sb(disk, 0, &sb);
	events = sb.events;
	ut_dev_close(&g_dev);
	/* At once, before a sweep could clear them. */
	gga_delete_sync("C");

	disk = make_heal_gga("C", 4, true);
	get_info("C", &info);
	UT_ASSERT_EQ(info.bitmap_dirty, 0);
	UT_ASSERT_EQ(info.state, BDEV_GGA_ONLINE);
	bdev_gga_info_clear(&info);
	for (i = 0; i < 3; i++) {
		UT_ASSERT_EQ(member_bitmap_byte(disk, i, 0), 0);
		read_sb(disk, i, &sb);
		/* Two updates by the close (and the assembly's own, after it). */
		CU_ASSERT(sb.events >= events + 2);
		UT_ASSERT_EQ(sb.member_state[i], GGA_SB_MEMBER_IN_SYNC);
	}
	open_dev("C");
	check_all_paths(disk, 10, 4, w);
	ut_dev_close(&g_dev);
	gga_delete_sync("C");
	delete_error_members("C", 3);
}

/*
 * d2 fails; writes go on. Before any of them is acknowledged the other
 * members' superblocks say d2 is stale. The gga bdev is deleted and made
 * again (a front restart) with d2 answering again: d2 is stale, not read,
 * and with auto_readd off stays so; turned on, d2 is resynced over exactly
 * the regions written while it was away. Then d1 fails: everything reads
 * back from d2 and parity.
 */
static void
test_stale_member_restart(void)
{
	uint8_t a[8 * LBS], b[8 * LBS], rd[8 * LBS];
	struct bdev_gga_info info;
	struct gga_disk *disk;
	struct gga_sb sb;
	bool on = true;
	uint64_t events;

	make_error_members("S", 3, MBS);
	disk = make_heal_gga("S", 4, false);
	open_dev("S");
	fill_random(a, sizeof(a));
	CU_ASSERT(dev_write(0, 8, a));
	WAIT_FOR(gga_bitmap_dirty(disk) == 0 && !gga_bitmap_busy(disk));
	UT_ASSERT_EQ(gga_bitmap_dirty(disk), 0);
	read_sb(disk, 0, &sb);
	events = sb.events;

	UT_ASSERT_EQ(inject("EE_S2", BDEV_ERROR_FAILURE), 0);
	fill_random(b, sizeof(b));
	/* Regions 5 and 20 (blocks 20..23 and 80..83) are written while d2 is away. */
	CU_ASSERT(dev_write(20, 4, b));
	CU_ASSERT(dev_write(80, 4, b + 4 * LBS));
	UT_ASSERT_EQ(gga_member_state(&disk->members[1]), BDEV_GGA_MEMBER_FAILED);
	read_sb(disk, 0, &sb);
	UT_ASSERT_EQ(sb.member_state[1], GGA_SB_MEMBER_STALE);
	UT_ASSERT_EQ(sb.member_state[0], GGA_SB_MEMBER_IN_SYNC);
	CU_ASSERT(sb.events > events);
	read_sb(disk, 2, &sb);
	UT_ASSERT_EQ(sb.member_state[1], GGA_SB_MEMBER_STALE);
	UT_ASSERT_EQ(gga_bitmap_dirty(disk), 2);
	ut_dev_close(&g_dev);
	gga_delete_sync("S");

	/* The front comes back, and so does d2, whose own superblock says all is well. */
	UT_ASSERT_EQ(inject("EE_S2", BDEV_ERROR_NONE), 0);
	disk = make_heal_gga("S", 4, false);
	UT_ASSERT_EQ(gga_member_state(&disk->members[1]), BDEV_GGA_MEMBER_STALE);
	UT_ASSERT_EQ(gga_live_mask(disk), 0x5);
	get_info("S", &info);
	UT_ASSERT_EQ(info.state, BDEV_GGA_DEGRADED);
	CU_ASSERT(info.members[1].needs != NULL && strcmp(info.members[1].needs, "resync") == 0);
	UT_ASSERT_EQ(info.bitmap_dirty, 2);
	bdev_gga_info_clear(&info);
	open_dev("S");
	check_all_paths(disk, 0, 8, a);
	CU_ASSERT(dev_read(20, 4, rd));
	CU_ASSERT(memcmp(rd, b, 4 * LBS) == 0);
	/* auto_readd off: it stays out. */
	ut_poll_idle();
	UT_ASSERT_EQ(gga_member_state(&disk->members[1]), BDEV_GGA_MEMBER_STALE);

	UT_ASSERT_EQ(bdev_gga_set_options("S", NULL, &on), 0);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask);
	get_info("S", &info);
	UT_ASSERT_EQ(info.state, BDEV_GGA_ONLINE);
	CU_ASSERT(info.last_recovery.valid && !info.last_recovery.rebuild);
	UT_ASSERT_EQ(info.last_recovery.result, 0);
	UT_ASSERT_EQ(info.last_recovery.regions_done, 2);
	UT_ASSERT_EQ(info.last_recovery.blocks_copied, 8);
	bdev_gga_info_clear(&info);
	read_sb(disk, 1, &sb);
	UT_ASSERT_EQ(sb.member_state[1], GGA_SB_MEMBER_IN_SYNC);
	UT_ASSERT_EQ(sb.recovery_mask, 0);

	/* A second loss: d1. Every block of A and B comes from d2 and parity. */
	UT_ASSERT_EQ(inject("EE_S1", BDEV_ERROR_FAILURE), 0);
	CU_ASSERT(dev_read(0, 8, rd));
	CU_ASSERT(memcmp(rd, a, sizeof(a)) == 0);
	CU_ASSERT(dev_read(20, 4, rd));
	CU_ASSERT(memcmp(rd, b, 4 * LBS) == 0);
	CU_ASSERT(dev_read(80, 4, rd));
	CU_ASSERT(memcmp(rd, b + 4 * LBS, 4 * LBS) == 0);
	UT_ASSERT_EQ(counters("S").failed_ios, 0);
	UT_ASSERT_EQ(counters("S").checksum_failures, 0);
	UT_ASSERT_EQ(inject("EE_S1", BDEV_ERROR_NONE), 0);
	ut_dev_close(&g_dev);
	gga_delete_sync("S");
	delete_error_members("S", 3);
}

/* Where save_config puts the call of `method` whose params have key = value (-1: nowhere). */
static int
config_index(json_t *config, const char *method, const char *key, const char *value)
{
	const char *m, *n;
	json_t *call;
	size_t i;

	json_array_foreach(config, i, call)
	{
		m = json_string_value(json_object_get(call, "method"));
		n = json_string_value(json_object_get(json_object_get(call, "params"), key));
		if (m != NULL && n != NULL && strcmp(m, method) == 0 && strcmp(n, value) == 0) {
			return (int)i;
		}
	}
	return -1;
}

static void
test_replace_member(void)
{
	uint8_t w[16 * LBS], rd[16 * LBS];
	struct bdev_gga_info info;
	struct replace_res r = { 0 };
	struct gga_disk *disk;
	json_t *config;
	char msg[256];

	make_error_members("R", 3, MBS);
	disk = make_heal_gga("R", 0, true);
	open_dev("R");
	fill_random(w, sizeof(w));
	fill_compressible(w, 4 * LBS, 3);
	CU_ASSERT(dev_write(0, 16, w));
	make_malloc("RNEW", MBS, MD, MEMBER_BLOCKS);
	make_malloc("RSMALL", MBS, MD, MEMBER_BLOCKS - 1);

	/* An online member is not replaced; neither is one by a base of another size. */
	UT_ASSERT_EQ(bdev_gga_replace_member("R", "parity", "RNEW", replace_done, &r, msg,
					     sizeof(msg)),
		     -EBUSY);
	CU_ASSERT(strstr(msg, "is online") != NULL);
	UT_ASSERT_EQ(inject("EE_R3", BDEV_ERROR_FAILURE), 0);
	CU_ASSERT(dev_write(0, 16, w));
	UT_ASSERT_EQ(gga_member_state(&disk->members[2]), BDEV_GGA_MEMBER_FAILED);
	UT_ASSERT_EQ(bdev_gga_replace_member("R", "parity", "RSMALL", replace_done, &r, msg,
					     sizeof(msg)),
		     -EINVAL);
	UT_ASSERT_EQ(bdev_gga_replace_member("R", "parity", "NOPE", replace_done, &r, msg,
					     sizeof(msg)),
		     -ENODEV);
	UT_ASSERT_EQ(bdev_gga_replace_member("R", "parity_9", "RNEW", replace_done, &r, msg,
					     sizeof(msg)),
		     -ENOENT);
	UT_ASSERT_EQ(bdev_gga_replace_member("R", "parity", "EE_R1", replace_done, &r, msg,
					     sizeof(msg)),
		     -EEXIST);
	CU_ASSERT(!r.done);
	CU_ASSERT(strcmp(disk->members[2].name, "EE_R3") == 0);

	/* The failed parity is replaced by a blank base: formatted, rebuilt, online. */
	UT_ASSERT_EQ(bdev_gga_replace_member("R", "parity", "RNEW", replace_done, &r, msg,
					     sizeof(msg)),
		     0);
	CU_ASSERT(!r.done);
	UT_POLL_UNTIL(r.done);
	UT_ASSERT_EQ(r.rc, 0);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask);
	CU_ASSERT(strcmp(disk->members[2].name, "RNEW") == 0);
	CU_ASSERT(bdev_is_claimed(bdev_get_by_name("RNEW")));
	CU_ASSERT(!bdev_is_claimed(bdev_get_by_name("EE_R3")));
	get_info("R", &info);
	UT_ASSERT_EQ(info.state, BDEV_GGA_ONLINE);
	CU_ASSERT(info.last_recovery.valid && info.last_recovery.rebuild);
	UT_ASSERT_EQ(info.last_recovery.blocks_copied, NBLK);
	bdev_gga_info_clear(&info);

	/*
	 * save_config replays: RNEW, registered after R, is written before it (as
	 * the error bdevs are after their bases and before R).
	 */
	config = json_array();
	bdev_subsystem_config_json(config);
	CU_ASSERT(config_index(config, "bdev_malloc_create", "name", "RNEW") >= 0);
	CU_ASSERT(config_index(config, "bdev_malloc_create", "name", "RNEW") <
		  config_index(config, "bdev_gga_create", "name", "R"));
	CU_ASSERT(config_index(config, "bdev_malloc_create", "name", "R1") <
		  config_index(config, "bdev_error_create", "base_name", "R1"));
	CU_ASSERT(config_index(config, "bdev_error_create", "base_name", "R1") >= 0);
	CU_ASSERT(config_index(config, "bdev_error_create", "base_name", "R1") <
		  config_index(config, "bdev_gga_create", "name", "R"));
	json_decref(config);

	/* d1 lost too: d2 and the new parity hold everything. */
	UT_ASSERT_EQ(inject("EE_R1", BDEV_ERROR_FAILURE), 0);
	CU_ASSERT(dev_read(0, 16, rd));
	CU_ASSERT(memcmp(rd, w, sizeof(w)) == 0);
	UT_ASSERT_EQ(counters("R").failed_ios, 0);
	UT_ASSERT_EQ(inject("EE_R1", BDEV_ERROR_NONE), 0);
	UT_ASSERT_EQ(inject("EE_R3", BDEV_ERROR_NONE), 0);
	ut_dev_close(&g_dev);
	gga_delete_sync("R");
	malloc_delete_sync("RNEW");
	malloc_delete_sync("RSMALL");
	delete_error_members("R", 3);
}

static void
test_scrub(void)
{
	uint8_t w[32 * LBS];
	struct bdev_gga_info info;
	struct gga_disk *disk;

	make_error_members("C", 3, MBS);
	disk = make_heal_gga("C", 0, true);
	open_dev("C");
	fill_random(w, sizeof(w));
	fill_compressible(w + 8 * LBS, 8 * LBS, 7);
	CU_ASSERT(dev_write(0, 32, w));
	/* Silent corruption on two members, in data and in metadata. */
	flip(disk, 1, 3, 100, 0x10);
	flip(disk, 2, 17, 5, 0x01);
	flip(disk, 0, 30, MBS + 20, 0x80);

	UT_ASSERT_EQ(bdev_gga_scrub_start("C", 0), 0);
	UT_ASSERT_EQ(bdev_gga_scrub_start("C", 0), -EBUSY);
	WAIT_FOR(disk->scrub.state == BDEV_GGA_SCRUB_DONE);
	get_info("C", &info);
	UT_ASSERT_EQ(info.scrub.state, BDEV_GGA_SCRUB_DONE);
	UT_ASSERT_EQ(info.scrub.blocks_done, NBLK);
	UT_ASSERT_EQ(info.scrub.fragments_repaired, 3);
	UT_ASSERT_EQ(info.scrub.unrecoverable_blocks, 0);
	bdev_gga_info_clear(&info);
	/* Repaired on the members: a second scrub finds nothing, every path reads clean. */
	UT_ASSERT_EQ(bdev_gga_scrub_start("C", 0), 0);
	WAIT_FOR(disk->scrub.state == BDEV_GGA_SCRUB_DONE);
	UT_ASSERT_EQ(disk->scrub.fragments_repaired, 0);
	check_all_paths(disk, 0, 32, w);
	UT_ASSERT_EQ(bdev_gga_scrub_stop("C"), -EALREADY);
	UT_ASSERT_EQ(bdev_gga_scrub_start("NOPE", 0), -ENODEV);
	ut_dev_close(&g_dev);
	gga_delete_sync("C");
	delete_error_members("C", 3);
}

/*
 * A member fails under a scrub: the scrub fails instead of counting blocks
 * unrecoverable from the two members left (each of which has a flipped
 * fragment). The member comes back and is resynced over the region still
 * marked: the resync reads its fragments too, so the two blocks are resolved
 * with them and the flipped fragments mended (it used to rebuild the parity
 * from the two corrupt-in-turn members and poison it: both blocks lost).
 */
static void
test_scrub_member_lost(void)
{
	uint8_t w[32 * LBS];
	struct bdev_gga_info info;
	struct gga_disk *disk;

	make_error_members("L", 3, MBS);
	disk = make_heal_gga("L", 0, true);
	open_dev("L");
	fill_random(w, sizeof(w));
	CU_ASSERT(dev_write(0, 32, w));
	flip(disk, 0, 3, 100, 0x10);
	flip(disk, 1, 17, 5, 0x01);

	UT_ASSERT_EQ(inject("EE_L3", BDEV_ERROR_FAILURE), 0);
	UT_ASSERT_EQ(bdev_gga_scrub_start("L", 0), 0);
	WAIT_FOR(disk->scrub.state != BDEV_GGA_SCRUB_RUNNING);
	get_info("L", &info);
	UT_ASSERT_EQ(info.scrub.state, BDEV_GGA_SCRUB_FAILED);
	UT_ASSERT_EQ(info.scrub.unrecoverable_blocks, 0);
	UT_ASSERT_EQ(info.scrub.fragments_repaired, 0);
	UT_ASSERT_EQ(gga_member_state(&disk->members[2]), BDEV_GGA_MEMBER_FAILED);
	bdev_gga_info_clear(&info);

	/* Back (the probe finds it, nothing was written: an empty resync), then checked. */
	UT_ASSERT_EQ(inject("EE_L3", BDEV_ERROR_NONE), 0);
	WAIT_FOR(gga_live_mask(disk) == 0x7 && disk->walk == NULL);
	UT_ASSERT_EQ(gga_live_mask(disk), 0x7);
	get_info("L", &info);
	CU_ASSERT(info.last_recovery.valid && !info.last_recovery.rebuild);
	UT_ASSERT_EQ(info.last_recovery.result, 0);
	UT_ASSERT_EQ(info.last_recovery.fragments_repaired, 2);
	bdev_gga_info_clear(&info);
	UT_ASSERT_EQ(bdev_gga_scrub_start("L", 0), 0);
	WAIT_FOR(disk->scrub.state == BDEV_GGA_SCRUB_DONE);
	UT_ASSERT_EQ(disk->scrub.fragments_repaired, 0);
	UT_ASSERT_EQ(disk->scrub.unrecoverable_blocks, 0);
	check_all_paths(disk, 0, 32, w);
	ut_dev_close(&g_dev);
	gga_delete_sync("L");
	delete_error_members("L", 3);
}

/* 4 + 2 over six members of 512-byte fragments (2 KiB blocks): two lost, both resynced. */
static void
test_four_plus_two(void)
{
	static const char *const names[6] = {
		"EE_K1", "EE_K2", "EE_K3", "EE_K4", "EE_K5", "EE_K6"
	};
	uint8_t a[16 * LBS], b[16 * LBS], rd[16 * LBS];
	struct bdev_gga_opts opts;
	struct bdev_gga_info info;
	struct create_res r;
	struct gga_disk *disk;
	uint32_t i;

	make_error_members("K", 6, MBS);
	bdev_gga_opts_init(&opts);
	opts.name = "K";
	opts.k = 4;
	opts.m = 2;
	opts.matrix = GGA_MATRIX_CAUCHY;
	opts.matrix_set = true;
	opts.rebuild_rate_mib_s = 0;
	for (i = 0; i < 6; i++) {
		opts.members[i] = names[i];
	}
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
	disk = r.bdev->ctxt;
	UT_ASSERT_EQ(disk->n, 6);
	open_dev("K");
	fill_random(a, sizeof(a));
	CU_ASSERT(dev_write(0, 8, a));

	/* Two members down (a data and a parity one): reads and writes go on. */
	UT_ASSERT_EQ(inject("EE_K2", BDEV_ERROR_FAILURE), 0);
	UT_ASSERT_EQ(inject("EE_K6", BDEV_ERROR_FAILURE), 0);
	CU_ASSERT(dev_read(0, 8, rd));
	CU_ASSERT(memcmp(rd, a, sizeof(a)) == 0);
	fill_random(b, sizeof(b));
	CU_ASSERT(dev_write(100, 8, b));
	get_info("K", &info);
	UT_ASSERT_EQ(info.state, BDEV_GGA_DEGRADED);
	UT_ASSERT_EQ(info.members[1].state, BDEV_GGA_MEMBER_FAILED);
	UT_ASSERT_EQ(info.members[5].state, BDEV_GGA_MEMBER_FAILED);
	bdev_gga_info_clear(&info);

	/* Both back: resynced together, then every read path agrees. */
	UT_ASSERT_EQ(inject("EE_K2", BDEV_ERROR_NONE), 0);
	UT_ASSERT_EQ(inject("EE_K6", BDEV_ERROR_NONE), 0);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask);
	get_info("K", &info);
	UT_ASSERT_EQ(info.state, BDEV_GGA_ONLINE);
	UT_ASSERT_EQ(info.last_recovery.members, (1u << 1) | (1u << 5));
	UT_ASSERT_EQ(info.last_recovery.result, 0);
	bdev_gga_info_clear(&info);
	/* Now two others go: the resynced members carry the data. */
	UT_ASSERT_EQ(inject("EE_K1", BDEV_ERROR_FAILURE), 0);
	UT_ASSERT_EQ(inject("EE_K5", BDEV_ERROR_FAILURE), 0);
	CU_ASSERT(dev_read(0, 8, rd));
	CU_ASSERT(memcmp(rd, a, sizeof(a)) == 0);
	CU_ASSERT(dev_read(100, 8, rd));
	CU_ASSERT(memcmp(rd, b, sizeof(b)) == 0);
	UT_ASSERT_EQ(counters("K").failed_ios, 0);
	UT_ASSERT_EQ(inject("EE_K1", BDEV_ERROR_NONE), 0);
	UT_ASSERT_EQ(inject("EE_K5", BDEV_ERROR_NONE), 0);
	ut_dev_close(&g_dev);
	gga_delete_sync("K");
	delete_error_members("K", 6);
}

/*
 * A front restart with a member's base missing (its target still down): the
 * array is assembled degraded, the member absent; when a bdev of that name
 * appears (holding its old superblock) it is claimed, found stale and
 * resynced.
 */
static void
test_absent_at_assembly(void)
{
	uint8_t a[8 * LBS], b[8 * LBS], rd[8 * LBS];
	struct bdev_error_opts eopts = { .base_name = "A2" };
	struct bdev_gga_info info;
	struct gga_disk *disk;
	struct ut_cpl cpl = { 0 };

	make_error_members("A", 3, MBS);
	disk = make_heal_gga("A", 4, true);
	open_dev("A");
	fill_random(a, sizeof(a));
	CU_ASSERT(dev_write(0, 8, a));
	/* Marks still set at a stop are kept (and resynced later): let them clear first. */
	WAIT_FOR(gga_bitmap_dirty(disk) == 0 && !gga_bitmap_busy(disk));
	ut_dev_close(&g_dev);
	gga_delete_sync("A");
	UT_ASSERT_EQ(bdev_error_delete("EE_A2", ut_cpl_done, &cpl), 0);
	UT_POLL_UNTIL(cpl.done);

	disk = make_heal_gga("A", 4, true);
	UT_ASSERT_EQ(gga_member_state(&disk->members[1]), BDEV_GGA_MEMBER_ABSENT);
	get_info("A", &info);
	UT_ASSERT_EQ(info.state, BDEV_GGA_DEGRADED);
	bdev_gga_info_clear(&info);
	open_dev("A");
	check_all_paths(disk, 0, 8, a);
	fill_random(b, sizeof(b));
	CU_ASSERT(dev_write(40, 8, b));

	/* The base is back, with the superblock it had: stale, so resynced. */
	UT_ASSERT_EQ_FATAL(bdev_error_create(&eopts, NULL), 0);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask);
	get_info("A", &info);
	UT_ASSERT_EQ(info.state, BDEV_GGA_ONLINE);
	CU_ASSERT(info.last_recovery.valid && !info.last_recovery.rebuild);
	UT_ASSERT_EQ(info.last_recovery.regions_done, 2);
	bdev_gga_info_clear(&info);
	check_all_paths(disk, 0, 8, a);
	check_all_paths(disk, 40, 8, b);
	UT_ASSERT_EQ(inject("EE_A1", BDEV_ERROR_FAILURE), 0);
	CU_ASSERT(dev_read(40, 8, rd));
	CU_ASSERT(memcmp(rd, b, sizeof(b)) == 0);
	UT_ASSERT_EQ(inject("EE_A1", BDEV_ERROR_NONE), 0);
	ut_dev_close(&g_dev);
	gga_delete_sync("A");

	/* A new array needs all its members: one missing and the others blank is refused. */
	delete_error_members("A", 3);
	make_error_members("A", 3, MBS);
	cpl.done = false;
	UT_ASSERT_EQ(bdev_error_delete("EE_A3", ut_cpl_done, &cpl), 0);
	UT_POLL_UNTIL(cpl.done);
	{
		struct bdev_gga_opts opts;
		struct create_res r;

		bdev_gga_opts_init(&opts);
		opts.name = "A";
		opts.members[0] = "EE_A1";
		opts.members[1] = "EE_A2";
		opts.members[2] = "EE_A3";
		UT_ASSERT_EQ(create_opts_sync(&opts, &r), -ENODEV);
		CU_ASSERT(strstr(r.msg, "parity 'EE_A3': base bdev does not exist") != NULL);
		CU_ASSERT(!bdev_is_claimed(bdev_get_by_name("EE_A1")));
	}
	UT_ASSERT_EQ_FATAL(bdev_error_create(&(struct bdev_error_opts){ .base_name = "A3" }, NULL),
			   0);
	delete_error_members("A", 3);
}

/*
 * An unclean stop: a write torn after one member (an orphan fragment of a
 * newer generation on d1 only) in a region still marked. Assembling checks
 * the marked regions at once and puts the block back to the version that
 * two members agree on.
 */
static void
test_check_marked_after_unclean_stop(void)
{
	uint8_t x[4 * LBS], y[LBS];
	struct gga_codec_scratch *sc;
	void *fd[3], *fm[3];
	uint8_t *frag[3];
	struct bdev_gga_info info;
	struct gga_disk *disk;
	uint64_t gen;
	uint32_t i;

	make_error_members("U", 3, MBS);
	disk = make_heal_gga("U", 4, true);
	open_dev("U");
	fill_random(x, sizeof(x));
	CU_ASSERT(dev_write(4, 4, x));
	/* The torn write: block 5's new fragment reached d1 only. */
	fill_random(y, sizeof(y));
	UT_ASSERT_EQ_FATAL(gga_codec_scratch_alloc(disk->codec, &sc), 0);
	UT_ASSERT_EQ_FATAL(gga_gen_reserve(disk, 1, &gen), 0);
	for (i = 0; i < 3; i++) {
		frag[i] = calloc(1, disk->mbs);
		fd[i] = frag[i];
		fm[i] = frag[i] + disk->frag_size;
	}
	UT_ASSERT_EQ_FATAL(gga_codec_encode(disk->codec, sc, y, 5, gen, fd, fm, NULL), 0);
	UT_ASSERT_EQ(member_rw(disk, 0, true, disk->data_offset + 5, 1, frag[0]), 0);
	for (i = 0; i < 3; i++) {
		free(frag[i]);
	}
	gga_codec_scratch_free(sc);
	UT_ASSERT_EQ(gga_bitmap_dirty(disk), 1);
	ut_dev_close(&g_dev);
	/* An unclean stop: the delete does not close clean (test_clean_close). */
	gga_test_knobs.keep_marks = true;
	gga_delete_sync("U");
	gga_test_knobs.keep_marks = false;

	disk = make_heal_gga("U", 4, true);
	WAIT_FOR(disk->scrub.state == BDEV_GGA_SCRUB_DONE);
	get_info("U", &info);
	UT_ASSERT_EQ(info.scrub.state, BDEV_GGA_SCRUB_DONE);
	CU_ASSERT(info.scrub.marked_only);
	UT_ASSERT_EQ(info.scrub.regions_done, 1);
	UT_ASSERT_EQ(info.scrub.fragments_repaired, 1);
	bdev_gga_info_clear(&info);
	open_dev("U");
	check_all_paths(disk, 4, 4, x);
	UT_ASSERT_EQ(counters("U").torn_writes_detected, 0);
	ut_dev_close(&g_dev);
	gga_delete_sync("U");
	delete_error_members("U", 3);
}

/*
 * A member's base reconnects (BDEV_EVENT_MEDIA_CHANGED, from the malloc base
 * through its error bdev) with no I/O in flight: the member is not trusted
 * until its superblock is read again. The same content: resynced (nothing
 * marked, nothing copied). Then its superblock is wiped (a target restarted
 * on a blank disk) and it reconnects again: rebuilt whole.
 */
static void
test_media_changed(void)
{
	uint8_t w[16 * LBS], *zero;
	struct bdev_gga_info info;
	struct gga_disk *disk;
	bool readd;

	make_error_members("G", 3, MBS);
	disk = make_heal_gga("G", 4, true);
	open_dev("G");
	fill_random(w, sizeof(w));
	CU_ASSERT(dev_write(0, 16, w));
	WAIT_FOR(gga_bitmap_dirty(disk) == 0 && !gga_bitmap_busy(disk));

	bdev_notify_media_changed(bdev_get_by_name("G2"));
	WAIT_FOR(gga_member_state(&disk->members[1]) != BDEV_GGA_MEMBER_ONLINE);
	CU_ASSERT(gga_member_state(&disk->members[1]) != BDEV_GGA_MEMBER_ONLINE);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask);
	get_info("G", &info);
	UT_ASSERT_EQ(info.state, BDEV_GGA_ONLINE);
	CU_ASSERT(info.last_recovery.valid && !info.last_recovery.rebuild);
	UT_ASSERT_EQ(info.last_recovery.regions_done, 0);
	UT_ASSERT_EQ(info.last_recovery.blocks_copied, 0);
	bdev_gga_info_clear(&info);

	zero = calloc(1, disk->mbs);
	UT_ASSERT_EQ(member_rw(disk, 1, true, 0, 1, zero), 0);
	free(zero);
	bdev_notify_media_changed(bdev_get_by_name("G2"));
	WAIT_FOR(gga_member_state(&disk->members[1]) != BDEV_GGA_MEMBER_ONLINE);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask);
	get_info("G", &info);
	UT_ASSERT_EQ(info.state, BDEV_GGA_ONLINE);
	CU_ASSERT(info.last_recovery.valid && info.last_recovery.rebuild);
	UT_ASSERT_EQ(info.last_recovery.blocks_copied, NBLK);
	bdev_gga_info_clear(&info);
	check_all_paths(disk, 0, 16, w);

	/*
	 * The parity's controller is lost while nothing reaches it (reads do not
	 * read parity): it is not online, nor is the array, until it is back.
	 */
	readd = false;
	UT_ASSERT_EQ(bdev_gga_set_options("G", NULL, &readd), 0);
	bdev_notify_offline(bdev_get_by_name("G3"));
	WAIT_FOR(gga_member_state(&disk->members[2]) == BDEV_GGA_MEMBER_FAILED);
	UT_ASSERT_EQ(gga_member_state(&disk->members[2]), BDEV_GGA_MEMBER_FAILED);
	get_info("G", &info);
	UT_ASSERT_EQ(info.state, BDEV_GGA_DEGRADED);
	bdev_gga_info_clear(&info);
	readd = true;
	UT_ASSERT_EQ(bdev_gga_set_options("G", NULL, &readd), 0);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask);
	UT_ASSERT_EQ(gga_live_mask(disk), disk->all_mask);
	check_all_paths(disk, 0, 16, w);
	ut_dev_close(&g_dev);
	gga_delete_sync("G");
	delete_error_members("G", 3);
}

/* The RPC surface: the k + m form, set_options, scrub, replace refusals, save_config. */
static void
test_rpc(void)
{
	json_t *resp, *g, *entry;
	struct bdev *bdev;
	uint8_t w[4 * 2 * LBS], rd[4 * 2 * LBS];
	char uuid[40];
	int i;

	for (i = 1; i <= 6; i++) {
		char n[8];

		snprintf(n, sizeof(n), "KR%d", i);
		make_malloc(n, MBS, MD, MEMBER_BLOCKS);
	}
	/* Not both forms; both lists; strings only; not more than 16 members. */
	UT_ASSERT_EQ(ut_rpc_code("bdev_gga_create",
				 "{\"name\": \"KR\", \"data_1\": \"KR1\", "
				 "\"data_members\": [\"KR1\"], \"parity_members\": [\"KR2\"]}"),
		     RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_EQ(ut_rpc_code("bdev_gga_create", "{\"name\": \"KR\", "
						    "\"data_members\": [\"KR1\", \"KR2\"]}"),
		     RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_EQ(ut_rpc_code("bdev_gga_create",
				 "{\"name\": \"KR\", "
				 "\"data_members\": [\"KR1\", 7], \"parity_members\": [\"KR2\"]}"),
		     RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_EQ(ut_rpc_code("bdev_gga_create",
				 "{\"name\": \"KR\", "
				 "\"data_members\": [\"KR1\"], \"parity_members\": []}"),
		     RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_EQ(
		ut_rpc_code("bdev_gga_create",
			    "{\"name\": \"KR\", \"data_1\": \"KR1\", "
			    "\"data_2\": \"KR2\", \"parity\": \"KR3\", \"bitmap_region_kib\": 3}"),
		RPC_ERROR_INVALID_PARAMS);
	CU_ASSERT(!bdev_is_claimed(bdev_get_by_name("KR1")));

	UT_ASSERT_EQ(ut_rpc_code("bdev_gga_create",
				 "{\"name\": \"KR\", \"data_members\": "
				 "[\"KR1\", \"KR2\", \"KR3\", \"KR4\"], \"parity_members\": "
				 "[\"KR5\", \"KR6\"], \"matrix_type\": \"cauchy\", "
				 "\"rebuild_rate_mib_s\": 7, \"auto_readd\": false, "
				 "\"bitmap_region_kib\": 64}"),
		     0);
	resp = ut_rpc_call("bdev_gga_get_info", "{\"name\": \"KR\"}");
	g = json_array_get(json_object_get(resp, "result"), 0);
	CU_ASSERT_FATAL(g != NULL);
	UT_ASSERT_EQ(json_integer_value(json_object_get(g, "k")), 4);
	UT_ASSERT_EQ(json_integer_value(json_object_get(g, "m")), 2);
	UT_ASSERT_EQ(json_integer_value(json_object_get(g, "block_size")), 4 * MBS);
	UT_ASSERT_STR_EQ(json_string_value(
				 json_object_get(json_array_get(json_object_get(g, "members"), 5),
						 "role")),
			 "parity_2");
	UT_ASSERT_EQ(json_integer_value(json_object_get(g, "rebuild_rate_mib_s")), 7);
	CU_ASSERT(json_is_false(json_object_get(g, "auto_readd")));
	UT_ASSERT_EQ(json_integer_value(
			     json_object_get(json_object_get(g, "bitmap"), "region_kib")),
		     64);
	CU_ASSERT(json_is_null(json_object_get(g, "recovery")));
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(json_object_get(g, "scrub"), "state")),
			 "idle");
	json_decref(resp);

	UT_ASSERT_EQ(ut_rpc_code("bdev_gga_set_options",
				 "{\"name\": \"KR\", "
				 "\"rebuild_rate_mib_s\": 0, \"auto_readd\": true}"),
		     0);
	UT_ASSERT_EQ(ut_rpc_code("bdev_gga_set_options", "{\"name\": \"KR\", "
							 "\"rebuild_rate_mib_s\": -1}"),
		     RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_EQ(ut_rpc_code("bdev_gga_set_options", "{\"name\": \"KR\", "
							 "\"auto_readd\": 1}"),
		     RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_EQ(ut_rpc_code("bdev_gga_set_options", "{\"name\": \"nope\"}"), -ENODEV);
	UT_ASSERT_EQ(ut_rpc_code("bdev_gga_scrub", "{\"name\": \"KR\", \"action\": \"sideways\"}"),
		     RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_EQ(ut_rpc_code("bdev_gga_scrub", "{\"name\": \"KR\", \"action\": \"stop\"}"),
		     -EALREADY);
	UT_ASSERT_EQ(ut_rpc_code("bdev_gga_scrub", "{\"name\": \"KR\", \"action\": \"start\", "
						   "\"rate_mib_s\": 0}"),
		     0);
	WAIT_FOR(((struct gga_disk *)bdev_get_by_name("KR")->ctxt)->scrub.state ==
		 BDEV_GGA_SCRUB_DONE);
	resp = ut_rpc_call("bdev_gga_scrub", "{\"name\": \"KR\"}");
	UT_ASSERT_STR_EQ(json_string_value(
				 json_object_get(json_object_get(resp, "result"), "state")),
			 "done");
	json_decref(resp);
	UT_ASSERT_EQ(ut_rpc_code("bdev_gga_replace_member",
				 "{\"name\": \"KR\", "
				 "\"member\": \"parity_2\", \"new_base\": \"KR1\"}"),
		     -EBUSY);
	UT_ASSERT_EQ(ut_rpc_code("bdev_gga_replace_member", "{\"name\": \"KR\"}"),
		     RPC_ERROR_INVALID_PARAMS);

	/* save_config writes the lists and the options; replayed, it assembles the same array. */
	bdev = bdev_get_by_name("KR");
	snprintf(uuid, sizeof(uuid), "%s", bdev_get_uuid_str(bdev));
	open_dev("KR");
	fill_random(w, sizeof(w));
	CU_ASSERT(dev_write(3, 4, w));
	ut_dev_close(&g_dev);
	entry = ut_bdev_config(bdev);
	CU_ASSERT_FATAL(entry != NULL);
	g = json_object_get(entry, "params");
	UT_ASSERT_EQ(json_array_size(json_object_get(g, "data_members")), 4);
	UT_ASSERT_STR_EQ(json_string_value(json_array_get(json_object_get(g, "parity_members"), 1)),
			 "KR6");
	CU_ASSERT(json_object_get(g, "data_1") == NULL);
	UT_ASSERT_EQ(json_integer_value(json_object_get(g, "bitmap_region_kib")), 64);
	CU_ASSERT(json_is_true(json_object_get(g, "auto_readd")));
	UT_ASSERT_EQ(ut_rpc_code("bdev_gga_delete", "{\"name\": \"KR\"}"), 0);
	UT_ASSERT_EQ(ut_rpc_replay(entry), 0);
	json_decref(entry);
	bdev = bdev_get_by_name("KR");
	CU_ASSERT_FATAL(bdev != NULL);
	UT_ASSERT_STR_EQ(bdev_get_uuid_str(bdev), uuid);
	open_dev("KR");
	CU_ASSERT(dev_read(3, 4, rd));
	CU_ASSERT(memcmp(rd, w, sizeof(w)) == 0);
	ut_dev_close(&g_dev);
	UT_ASSERT_EQ(ut_rpc_code("bdev_gga_delete", "{\"name\": \"KR\"}"), 0);
	for (i = 1; i <= 6; i++) {
		char n[8];

		snprintf(n, sizeof(n), "KR%d", i);
		malloc_delete_sync(n);
	}
}

/*
 * Deleting a gga bdev while its recovery machinery is busy (a probe, a pass
 * or a superblock write in flight) still completes and releases the bases.
 */
static void
test_delete_while_recovering(void)
{
	uint8_t w[32 * LBS];
	struct gga_disk *disk;
	int round;

	make_error_members("D", 3, MBS);
	for (round = 0; round < 3; round++) {
		/*
		 * The resync that fails at assembly (its member fails again at
		 * once) is retried after retry_ms, 10 s by default: round 1
		 * deletes before that, with the member stale; round 2 retries
		 * after 100 ms, so that it finds the member rebuilding (or
		 * rebuilt) rather than wait out WAIT_FOR's bound still stale.
		 */
		gga_test_knobs.retry_ms = round == 2 ? 100 : 0;
		disk = make_heal_gga("D", 4, true);
		open_dev("D");
		fill_random(w, sizeof(w));
		UT_ASSERT_EQ(inject("EE_D2", BDEV_ERROR_FAILURE), 0);
		CU_ASSERT(dev_write(0, 32, w));
		UT_ASSERT_EQ(inject("EE_D2", BDEV_ERROR_NONE), 0);
		/* Round 0: before the probe; 1: once it is stale; 2: once it is rebuilding. */
		if (round >= 1) {
			WAIT_FOR(gga_member_state(&disk->members[1]) != BDEV_GGA_MEMBER_FAILED);
			CU_ASSERT(gga_member_state(&disk->members[1]) != BDEV_GGA_MEMBER_FAILED);
		}
		if (round == 2) {
			WAIT_FOR(disk->walk != NULL ||
				 gga_member_state(&disk->members[1]) == BDEV_GGA_MEMBER_ONLINE);
			CU_ASSERT(disk->walk != NULL ||
				  gga_member_state(&disk->members[1]) == BDEV_GGA_MEMBER_ONLINE);
		}
		ut_dev_close(&g_dev);
		gga_delete_sync("D");
		CU_ASSERT(bdev_get_by_name("D") == NULL);
		CU_ASSERT(!bdev_is_claimed(bdev_get_by_name("EE_D1")));
		CU_ASSERT(!bdev_is_claimed(bdev_get_by_name("EE_D2")));
	}
	delete_error_members("D", 3);
	gga_test_knobs.retry_ms = 0;
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_bitmap),
		UT_TEST(test_stale_member_restart),
		UT_TEST(test_replace_member),
		UT_TEST(test_scrub),
		UT_TEST(test_scrub_member_lost),
		UT_TEST(test_four_plus_two),
		UT_TEST(test_absent_at_assembly),
		UT_TEST(test_check_marked_after_unclean_stop),
		UT_TEST(test_clean_close),
		UT_TEST(test_media_changed),
		UT_TEST(test_rpc),
		UT_TEST(test_delete_while_recovering),
	};

	return ut_run("bdev_gga_heal", tests, ARRAY_SIZE(tests), suite_init, suite_fini);
}
