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
#include "test/unit/bdev_gga/bdev_gga_harness.c"

/* Wait up to UT_TIMEOUT_NS (the probe and the sweep run once a second). */
#define WAIT_FOR(cond) UT_POLL_UNTIL(cond)

static int
inject(const char *name, enum bdev_error_type type)
{
	struct bdev_error_inject_opts opts = {
		.io_type = BDEV_ERROR_IO_TYPE_ALL,
		.error_type = type,
		.num = 0,
	};

	return bdev_error_inject_error(name, &opts);
}

/* n members P1..Pn of fragment size `fs` and `blocks` data blocks under error bdevs EE_Pi. */
static void
make_error_members_of(const char *p, uint32_t n, uint32_t fs, uint32_t blocks)
{
	struct bdev_error_opts eopts = { 0 };
	char name[16];
	uint32_t i;

	for (i = 1; i <= n; i++) {
		snprintf(name, sizeof(name), "%s%u", p, i);
		make_malloc(name, fs, MD, GGA_SB_REGION_BYTES / fs + blocks);
		eopts.base_name = name;
		UT_ASSERT_EQ_FATAL(bdev_error_create(&eopts, NULL), 0);
	}
}

/* The same with NBLK data blocks. */
static void
make_error_members(const char *p, uint32_t n, uint32_t fs)
{
	make_error_members_of(p, n, fs, NBLK);
}

static void
delete_error_members(const char *p, uint32_t n)
{
	struct ut_cpl cpl;
	char name[16];
	uint32_t i;

	for (i = 1; i <= n; i++) {
		memset(&cpl, 0, sizeof(cpl));
		snprintf(name, sizeof(name), "EE_%s%u", p, i);
		UT_ASSERT_EQ(bdev_error_delete(name, ut_cpl_done, &cpl), 0);
		UT_POLL_UNTIL(cpl.done);
		snprintf(name, sizeof(name), "%s%u", p, i);
		malloc_delete_sync(name);
	}
}

/* A 2 + 1 array over EE_p1..EE_p3 with the given options. */
static struct gga_disk *
make_heal_gga(const char *p, uint32_t region_kib, bool auto_readd)
{
	static char names[3][16];
	struct bdev_gga_opts opts;
	struct create_res r;
	uint32_t i;

	bdev_gga_opts_init(&opts);
	opts.name = p;
	for (i = 0; i < 3; i++) {
		snprintf(names[i], sizeof(names[i]), "EE_%s%u", p, i + 1);
		opts.members[i] = names[i];
	}
	opts.bitmap_region_kib = region_kib;
	opts.auto_readd = auto_readd;
	opts.rebuild_rate_mib_s = 0;
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
	return r.bdev->ctxt;
}

/* The superblock record of member i, read from the member. */
static void
read_sb(struct gga_disk *disk, uint32_t i, struct gga_sb *sb)
{
	uint8_t *blk = malloc(disk->mbs);

	UT_ASSERT_EQ(member_rw(disk, i, false, 0, 1, blk), 0);
	UT_ASSERT_EQ(gga_sb_decode(blk, disk->frag_size, sb), 0);
	free(blk);
}

/* Byte `byte` of the bitmap as member i holds it. */
static uint8_t
member_bitmap_byte(struct gga_disk *disk, uint32_t i, uint32_t byte)
{
	uint32_t off = gga_bitmap_offset(disk->frag_size) + byte;
	uint8_t *blk = malloc(disk->mbs), v;

	UT_ASSERT_EQ(member_rw(disk, i, false, off / disk->frag_size, 1, blk), 0);
	v = blk[off % disk->frag_size];
	free(blk);
	return v;
}

/* Every read through every data member left out in turn returns `want`. */
static void
check_all_paths(struct gga_disk *disk, uint64_t lba, uint32_t n, const uint8_t *want)
{
	uint8_t *rd = malloc((size_t)n * LBS);
	uint32_t i;

	for (i = 0; i <= disk->k; i++) {
		disk->recovery_read_every_n = i == 0 ? 0 : 1;
		memset(rd, 0xa5, (size_t)n * LBS);
		CU_ASSERT(dev_read(lba, n, rd));
		CU_ASSERT(memcmp(rd, want, (size_t)n * LBS) == 0);
	}
	disk->recovery_read_every_n = 0;
	free(rd);
}

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

struct replace_res {
	bool done;
	int rc;
	char msg[256];
};

static void
replace_done(void *cb_arg, int rc, const char *msg)
{
	struct replace_res *r = cb_arg;

	r->done = true;
	r->rc = rc;
	snprintf(r->msg, sizeof(r->msg), "%s", msg);
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
	gga_delete_sync("U");

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
		disk = make_heal_gga("D", 4, true);
		open_dev("D");
		fill_random(w, sizeof(w));
		UT_ASSERT_EQ(inject("EE_D2", BDEV_ERROR_FAILURE), 0);
		CU_ASSERT(dev_write(0, 32, w));
		UT_ASSERT_EQ(inject("EE_D2", BDEV_ERROR_NONE), 0);
		/* Round 0: before the probe; 1: once it is stale; 2: once it is rebuilding. */
		if (round >= 1) {
			WAIT_FOR(gga_member_state(&disk->members[1]) != BDEV_GGA_MEMBER_FAILED);
		}
		if (round == 2) {
			WAIT_FOR(disk->walk != NULL ||
				 gga_member_state(&disk->members[1]) == BDEV_GGA_MEMBER_ONLINE);
		}
		ut_dev_close(&g_dev);
		gga_delete_sync("D");
		CU_ASSERT(bdev_get_by_name("D") == NULL);
		CU_ASSERT(!bdev_is_claimed(bdev_get_by_name("EE_D1")));
		CU_ASSERT(!bdev_is_claimed(bdev_get_by_name("EE_D2")));
	}
	delete_error_members("D", 3);
}

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

/* Zero member i's whole storage, superblock region included (it must not be in use). */
static void
blank_member(struct gga_disk *disk, uint32_t i)
{
	uint8_t *zero = calloc(MEMBER_BLOCKS, disk->mbs);

	CU_ASSERT_FATAL(zero != NULL);
	UT_ASSERT_EQ(member_rw(disk, i, true, 0, MEMBER_BLOCKS, zero), 0);
	free(zero);
}

/* Fail member i with an I/O error: a read that reaches it fails it. */
static void
fail_member(struct gga_disk *disk, const char *error_bdev, uint32_t i)
{
	uint8_t rd[LBS];

	UT_ASSERT_EQ(inject(error_bdev, BDEV_ERROR_FAILURE), 0);
	disk->recovery_read_every_n = 1;
	WAIT_FOR((dev_read(0, 1, rd),
		  gga_member_state(&disk->members[i]) == BDEV_GGA_MEMBER_FAILED));
	disk->recovery_read_every_n = 0;
	UT_ASSERT_EQ(gga_member_state(&disk->members[i]), BDEV_GGA_MEMBER_FAILED);
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
	bdev_gga_opts_init(&opts);
	opts.name = "Z";
	opts.members[0] = "EE_Z1";
	opts.members[1] = "EE_Z2";
	opts.members[2] = "EE_Z3";
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
	bdev_gga_opts_init(&opts);
	opts.name = "Q";
	opts.members[0] = "EE_Q1";
	opts.members[1] = "EE_Q2";
	opts.members[2] = "EE_Q3";
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
 * member_error_limit of them within the window: failed, not re-added by the
 * probe, until an operator clears it (then rebuilt whole).
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
	bdev_gga_opts_init(&opts);
	opts.name = "X";
	opts.members[0] = "EE_X1";
	opts.members[1] = "EE_X2";
	opts.members[2] = "EE_X3";
	opts.rebuild_rate_mib_s = 0;
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
	/* Cleared by the operator: re-added and rebuilt whole. */
	UT_ASSERT_EQ(bdev_gga_clear_member("X", "EE_X2"), 0);
	WAIT_FOR(gga_live_mask(disk) == disk->all_mask);
	get_info("X", &info);
	UT_ASSERT_EQ(info.state, BDEV_GGA_ONLINE);
	CU_ASSERT(!info.members[1].faulted);
	UT_ASSERT_EQ(info.members[1].errors, 0);
	CU_ASSERT(info.last_recovery.valid && info.last_recovery.rebuild);
	bdev_gga_info_clear(&info);
	/* Data_1 lost: everything comes from the rebuilt data_2 and parity. */
	UT_ASSERT_EQ(inject("EE_X1", BDEV_ERROR_FAILURE), 0);
	CU_ASSERT(dev_read(0, 8, all));
	CU_ASSERT(memcmp(all, w, sizeof(w)) == 0);
	UT_ASSERT_EQ(inject("EE_X1", BDEV_ERROR_NONE), 0);
	ut_dev_close(&g_dev);
	gga_delete_sync("X");
	delete_error_members("X", 3);
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
	uint64_t t0, ns;

	make_error_members("W", 3, MBS);
	bdev_gga_opts_init(&opts);
	opts.name = "W";
	opts.members[0] = "EE_W1";
	opts.members[1] = "EE_W2";
	opts.members[2] = "EE_W3";
	opts.rebuild_rate_mib_s = 0;
	opts.auto_readd = false;
	opts.member_timeout_ms = 200;
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
	ut_dev_close(&g_dev);
	gga_delete_sync("W");
	delete_error_members("W", 3);
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
	bdev_gga_opts_init(&opts);
	opts.name = "K";
	opts.members[0] = "EE_K1";
	opts.members[1] = "EE_K2";
	opts.members[2] = "EE_K3";
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
		UT_TEST(test_media_changed),
		UT_TEST(test_rpc),
		UT_TEST(test_delete_while_recovering),
		UT_TEST(test_two_blank_restart),
		UT_TEST(test_old_copy_returns),
		UT_TEST(test_flush_failed_member),
		UT_TEST(test_rate_limit_in_flight),
		UT_TEST(test_member_faulted),
		UT_TEST(test_member_stall),
		UT_TEST(test_assembly_crash_records),
		UT_TEST(test_checkpoint_not_resumed),
	};

	return ut_run("bdev_gga_heal", tests, ARRAY_SIZE(tests), suite_init, suite_fini);
}
