/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the gga bdev under faults, on the harness of
 * ../bdev_gga_harness.c: writes torn by a crash (crafted fragment by fragment
 * on the members), silent corruption found by the checksums and repaired,
 * recovery on direct reads, a member failing (error bdev) and a member
 * hot-removed while I/O runs.
 */
#include "test/unit/bdev_gga/bdev_gga_harness.c"

/* ---------------------------------------------------------------------- */
/* Torn writes and corruption                                              */
/* ---------------------------------------------------------------------- */

/*
 * Encode `block` for `lba` with a fresh generation and write only the
 * fragments in `mask` to the members, as a write torn by a crash leaves them.
 */
static void
torn_write(struct gga_disk *disk, uint64_t lba, const uint8_t *block, uint32_t mask)
{
	struct gga_codec_scratch *s;
	void *fd[3], *fm[3];
	uint8_t *frag[3];
	uint64_t gen;
	uint32_t i;

	UT_ASSERT_EQ_FATAL(gga_codec_scratch_alloc(disk->codec, &s), 0);
	UT_ASSERT_EQ_FATAL(gga_gen_reserve(disk, 1, &gen), 0);
	for (i = 0; i < 3; i++) {
		frag[i] = calloc(1, disk->mbs);
		fd[i] = frag[i];
		fm[i] = frag[i] + disk->frag_size;
	}
	UT_ASSERT_EQ_FATAL(gga_codec_encode(disk->codec, s, block, lba, gen, fd, fm, NULL), 0);
	for (i = 0; i < 3; i++) {
		if (mask & (1u << i)) {
			UT_ASSERT_EQ(member_rw(disk, i, true, disk->data_offset + lba, 1, frag[i]),
				     0);
		}
		free(frag[i]);
	}
	gga_codec_scratch_free(s);
}

/* One read that goes through the recovery path (parity included). */
static bool
periodic_read(struct gga_disk *disk, uint64_t lba, uint8_t *buf)
{
	bool ok;

	disk->recovery_read_every_n = 1;
	ok = dev_read(lba, 1, buf);
	disk->recovery_read_every_n = 0;
	return ok;
}

static void
test_torn_writes(void)
{
	static const uint32_t masks[] = { 1, 2, 4, 3, 5, 6 };
	struct bdev_gga_counters c0, c1, c2;
	uint8_t old[LBS], new[LBS], rd[LBS], chk[LBS];
	struct gga_disk *disk;
	uint64_t lba, gen_old, gen;
	uint32_t t, mask;
	bool landed;

	make_members("T");
	disk = make_gga("T", 0);
	open_dev("T");
	for (t = 0; t < ARRAY_SIZE(masks); t++) {
		mask = masks[t];
		lba = 10 + t;
		/* 2 of 3 fragments of the new write define it; 1 of 3 leaves the old one. */
		landed = __builtin_popcount(mask) >= 2;
		fill_random(old, LBS);
		if (t % 2) {
			fill_compressible(new, LBS, t);
		} else {
			fill_random(new, LBS);
		}
		CU_ASSERT(dev_write(lba, 1, old));
		UT_ASSERT_EQ(check_consistent(disk, lba, &gen_old, chk), 0);
		torn_write(disk, lba, new, mask);
		c0 = counters("T");

		CU_ASSERT(dev_read(lba, 1, rd));
		CU_ASSERT(memcmp(rd, landed ? new : old, LBS) == 0);
		if (mask == 3 || mask == 4) {
			/*
			 * A regular read touches d1 and d2 only, which agree here; the
			 * odd parity is found by a read that includes it.
			 */
			c1 = counters("T");
			UT_ASSERT_EQ(c1.torn_writes_detected, c0.torn_writes_detected);
			CU_ASSERT(periodic_read(disk, lba, rd));
			CU_ASSERT(memcmp(rd, landed ? new : old, LBS) == 0);
		}
		c1 = counters("T");
		UT_ASSERT_EQ(c1.torn_writes_detected - c0.torn_writes_detected, 1);
		UT_ASSERT_EQ(c1.repairs_written - c0.repairs_written, 1);
		UT_ASSERT_EQ(c1.checksum_failures, c0.checksum_failures);

		/* Repaired: the members agree, and a second read is a plain regular read. */
		UT_ASSERT_EQ(check_consistent(disk, lba, &gen, chk), 0);
		CU_ASSERT(memcmp(chk, landed ? new : old, LBS) == 0);
		if (landed) {
			CU_ASSERT(gen > gen_old);
		} else {
			UT_ASSERT_EQ(gen, gen_old);
		}
		CU_ASSERT(dev_read(lba, 1, rd));
		CU_ASSERT(memcmp(rd, landed ? new : old, LBS) == 0);
		c2 = counters("T");
		UT_ASSERT_EQ(c2.regular_reads - c1.regular_reads, 1);
		UT_ASSERT_EQ(c2.torn_writes_detected, c1.torn_writes_detected);
		UT_ASSERT_EQ(c2.repairs_written, c1.repairs_written);
	}

	/* A torn write over a never-written block reads back as zeros or the new block. */
	fill_random(new, LBS);
	torn_write(disk, 100, new, 1);
	CU_ASSERT(dev_read(100, 1, rd));
	CU_ASSERT(mem_is_zero(rd, LBS));
	torn_write(disk, 101, new, 6);
	CU_ASSERT(dev_read(101, 1, rd));
	CU_ASSERT(memcmp(rd, new, LBS) == 0);
	UT_ASSERT_EQ(check_consistent(disk, 100, NULL, chk), 0);
	UT_ASSERT_EQ(check_consistent(disk, 101, NULL, chk), 0);

	ut_dev_close(&g_dev);
	gga_delete_sync("T");
	delete_members("T");
}
static void
test_bit_flips(void)
{
	struct {
		uint32_t member;
		uint32_t offset;
		bool parity_read;
	} cases[] = {
		{ 0, 100, false },      /* d1 data */
		{ 1, MBS + 17, false }, /* d2 metadata (the generation) */
		{ 1, MBS + 2, false },  /* d2 metadata (encoding byte) */
		{ 2, 5, true },         /* parity data */
		{ 0, MBS + 40, false }, /* padding after the format's 32 bytes */
	};
	struct bdev_gga_counters c0, c1;
	uint8_t w[4 * LBS], rd[4 * LBS], chk[LBS];
	struct gga_disk *disk;
	uint32_t t;

	make_members("C");
	disk = make_gga("C", 0);
	open_dev("C");
	fill_random(w, sizeof(w));
	fill_compressible(w + LBS, LBS, 9);
	CU_ASSERT(dev_write(40, 4, w));
	for (t = 0; t < ARRAY_SIZE(cases); t++) {
		c0 = counters("C");
		flip(disk, cases[t].member, 41, cases[t].offset, 0x10);
		memset(rd, 0, sizeof(rd));
		if (cases[t].parity_read) {
			disk->recovery_read_every_n = 1;
		}
		CU_ASSERT(dev_read(40, 4, rd));
		disk->recovery_read_every_n = 0;
		CU_ASSERT(memcmp(rd, w, sizeof(w)) == 0);
		c1 = counters("C");
		if (cases[t].offset == MBS + 40) {
			UT_ASSERT_EQ(c1.checksum_failures, c0.checksum_failures);
			continue;
		}
		UT_ASSERT_EQ(c1.checksum_failures - c0.checksum_failures, 1);
		UT_ASSERT_EQ(c1.repairs_written - c0.repairs_written, 1);
		UT_ASSERT_EQ(c1.recovery_reads_forced - c0.recovery_reads_forced, 1);
		UT_ASSERT_EQ(c1.torn_writes_detected, c0.torn_writes_detected);
		/* Healed on the member itself. */
		UT_ASSERT_EQ(check_consistent(disk, 41, NULL, chk), 0);
		CU_ASSERT(memcmp(chk, w + LBS, LBS) == 0);
	}
	/* Corrupt two members of one block: it cannot be trusted, the read fails. */
	flip(disk, 0, 42, 10, 1);
	flip(disk, 1, 42, 10, 1);
	CU_ASSERT(!dev_read(42, 1, rd));
	CU_ASSERT(dev_read(43, 1, rd));
	CU_ASSERT(memcmp(rd, w + 3 * LBS, LBS) == 0);
	ut_dev_close(&g_dev);
	gga_delete_sync("C");
	delete_members("C");
}

/*
 * One request over a block that cannot be decoded (two of its three
 * fragments corrupt) and a block that can but needs a repair (one fragment
 * corrupt) fails as a whole, in either order, and is counted: the repairable
 * block once made the request succeed with the lost block's wrong bytes.
 */
static void
test_multiblock_read_one_lost(void)
{
	struct bdev_gga_counters c0, c1;
	uint8_t w[4 * LBS], rd[4 * LBS];
	struct bdev_gga_info info;
	struct gga_disk *disk;
	uint32_t t;

	make_members("L");
	disk = make_gga("L", 0);
	open_dev("L");
	fill_random(w, sizeof(w));
	CU_ASSERT(dev_write(100, 4, w));
	/* Block 101: lost. Blocks 100 and 102: one fragment each, repairable. */
	flip(disk, 0, 101, 10, 1);
	flip(disk, 1, 101, 10, 1);
	for (t = 0; t < 2; t++) {
		flip(disk, 1, t == 0 ? 102 : 100, 10, 1);
		c0 = counters("L");
		memset(rd, 0, sizeof(rd));
		/* t 0: the lost block first; t 1: the repairable block first. */
		CU_ASSERT(!dev_read(t == 0 ? 101 : 100, 2, rd));
		c1 = counters("L");
		UT_ASSERT_EQ(c1.failed_ios - c0.failed_ios, 1);
	}
	CU_ASSERT(!dev_read(100, 4, rd));
	CU_ASSERT(!dev_read(101, 1, rd));
	/* The others read right, and were repaired on the way. */
	CU_ASSERT(dev_read(100, 1, rd));
	CU_ASSERT(memcmp(rd, w, LBS) == 0);
	CU_ASSERT(dev_read(102, 2, rd));
	CU_ASSERT(memcmp(rd, w + 2 * LBS, 2 * LBS) == 0);
	UT_ASSERT_EQ(check_consistent(disk, 100, NULL, rd), 0);
	UT_ASSERT_EQ(check_consistent(disk, 102, NULL, rd), 0);
	/* Every member online, but a block is lost: the array does not say online. */
	get_info("L", &info);
	UT_ASSERT_EQ(info.state, BDEV_GGA_DEGRADED);
	CU_ASSERT(info.unrecoverable_blocks >= 1);
	bdev_gga_info_clear(&info);
	/* Rewritten, and a full scrub finds nothing: online again. */
	CU_ASSERT(dev_write(101, 1, w + LBS));
	UT_ASSERT_EQ(bdev_gga_scrub_start("L", 0), 0);
	UT_POLL_UNTIL(disk->scrub.state == BDEV_GGA_SCRUB_DONE);
	get_info("L", &info);
	UT_ASSERT_EQ(info.scrub.state, BDEV_GGA_SCRUB_DONE);
	UT_ASSERT_EQ(info.scrub.unrecoverable_blocks, 0);
	UT_ASSERT_EQ(info.unrecoverable_blocks, 0);
	UT_ASSERT_EQ(info.state, BDEV_GGA_ONLINE);
	bdev_gga_info_clear(&info);
	ut_dev_close(&g_dev);
	gga_delete_sync("L");
	delete_members("L");
}

/*
 * Regular reads take the data halves straight into the caller's buffer, where
 * decoding an lz4 block overwrites them. A chunk whose lz4 blocks decoded
 * before another block of it turned out corrupt must still read back right:
 * the forced recovery read may not decode from what was overwritten. Also
 * with blocks straddling the caller's iovecs, which are read via the pool.
 */
static void
test_direct_read_recovery(void)
{
	static const size_t cuts[] = { LBS / 2, 3 * LBS, LBS + 100, LBS - 100 };
	struct bdev_gga_counters c0, c1;
	uint8_t w[8 * LBS], rd[8 * LBS], chk[LBS];
	struct gga_disk *disk;
	uint32_t b, bad;

	make_members("D");
	disk = make_gga("D", 0);
	open_dev("D");
	for (bad = 0; bad < 8; bad += 3) {
		for (b = 0; b < 8; b++) {
			if (b % 3 == 1) {
				fill_random(w + b * LBS, LBS);
			} else {
				fill_compressible(w + b * LBS, LBS, 17 * bad + b);
			}
		}
		CU_ASSERT(dev_write(60, 8, w));
		c0 = counters("D");
		/* d1's half of block `bad`: decoding fails there, after lz4 blocks before it. */
		flip(disk, 0, 60 + bad, 3, 0x20);
		memset(rd, 0, sizeof(rd));
		CU_ASSERT(dev_read(60, 8, rd));
		CU_ASSERT(memcmp(rd, w, sizeof(w)) == 0);
		c1 = counters("D");
		UT_ASSERT_EQ(c1.recovery_reads_forced - c0.recovery_reads_forced, 1);
		UT_ASSERT_EQ(c1.checksum_failures - c0.checksum_failures, 1);
		UT_ASSERT_EQ(c1.repairs_written - c0.repairs_written, 1);
		UT_ASSERT_EQ(check_consistent(disk, 60 + bad, NULL, chk), 0);
		CU_ASSERT(memcmp(chk, w + bad * LBS, LBS) == 0);

		/* The same with d2 and the caller's buffer cut across blocks. */
		flip(disk, 1, 60 + 7 - bad, 9, 0x01);
		memset(rd, 0, sizeof(rd));
		CU_ASSERT(dev_iov(false, 60, 8, rd, cuts, 4));
		CU_ASSERT(memcmp(rd, w, sizeof(w)) == 0);
		UT_ASSERT_EQ(check_consistent(disk, 60 + 7 - bad, NULL, chk), 0);
		/* Periodic recovery reads rebuild d1 in the caller's buffer. */
		disk->recovery_read_every_n = 1;
		memset(rd, 0, sizeof(rd));
		CU_ASSERT(dev_read(60, 8, rd));
		disk->recovery_read_every_n = 0;
		CU_ASSERT(memcmp(rd, w, sizeof(w)) == 0);
	}
	ut_dev_close(&g_dev);
	gga_delete_sync("D");
	delete_members("D");
}

/* ---------------------------------------------------------------------- */
/* Degraded mode                                                           */
/* ---------------------------------------------------------------------- */

static int
inject(const char *name, enum bdev_error_type type, uint32_t num)
{
	struct bdev_error_inject_opts opts = {
		.io_type = BDEV_ERROR_IO_TYPE_ALL,
		.error_type = type,
		.num = num,
	};

	return bdev_error_inject_error(name, &opts);
}

static void
test_member_failure(void)
{
	struct bdev_error_opts eopts = { 0 };
	struct bdev_gga_counters c0, c1;
	struct bdev_gga_info info;
	uint8_t w[16 * LBS], w2[16 * LBS], rd[16 * LBS];
	struct create_res r;
	struct gga_disk *disk;
	int i;

	make_members("E");
	for (i = 1; i <= 3; i++) {
		char n[8];

		snprintf(n, sizeof(n), "E%d", i);
		eopts.base_name = n;
		UT_ASSERT_EQ_FATAL(bdev_error_create(&eopts, NULL), 0);
	}
	UT_ASSERT_EQ_FATAL(create3("E", "EE_E1", "EE_E2", "EE_E3", 0, BDEV_GGA_MODE_AUTO, &r), 0);
	disk = r.bdev->ctxt;
	open_dev("E");
	fill_random(w, sizeof(w));
	CU_ASSERT(dev_write(0, 16, w));

	/* d1 fails every I/O from now on. */
	UT_ASSERT_EQ(inject("EE_E1", BDEV_ERROR_FAILURE, 0), 0);
	c0 = counters("E");
	CU_ASSERT(dev_read(0, 16, rd));
	CU_ASSERT(memcmp(rd, w, sizeof(w)) == 0);
	UT_ASSERT_EQ(gga_member_state(&disk->members[0]), BDEV_GGA_MEMBER_FAILED);
	get_info("E", &info);
	UT_ASSERT_EQ(info.state, BDEV_GGA_DEGRADED);
	UT_ASSERT_EQ(info.members[0].state, BDEV_GGA_MEMBER_FAILED);
	UT_ASSERT_EQ(info.members[1].state, BDEV_GGA_MEMBER_ONLINE);
	UT_ASSERT_EQ(info.counters.member_io_errors - c0.member_io_errors, 1);
	UT_ASSERT_EQ(info.counters.recovery_reads_forced - c0.recovery_reads_forced, 1);
	bdev_gga_info_clear(&info);

	/* Writes go to the two live members; reads rebuild d1 from d2 and parity. */
	fill_random(w2, sizeof(w2));
	fill_compressible(w2 + LBS, LBS, 1);
	CU_ASSERT(dev_write(0, 16, w2));
	CU_ASSERT(dev_read(0, 16, rd));
	CU_ASSERT(memcmp(rd, w2, sizeof(w2)) == 0);
	/* Periodic recovery reads still work, whichever data member they leave out. */
	disk->recovery_read_every_n = 1;
	for (i = 0; i < 4; i++) {
		memset(rd, 0, sizeof(rd));
		CU_ASSERT(dev_read(0, 16, rd));
		CU_ASSERT(memcmp(rd, w2, sizeof(w2)) == 0);
	}
	disk->recovery_read_every_n = 0;
	c1 = counters("E");
	/* A failed member is not touched again. */
	UT_ASSERT_EQ(c1.member_io_errors - c0.member_io_errors, 1);
	UT_ASSERT_EQ(c1.failed_ios, 0);

	/* A second member down: everything fails, nothing wrong is returned. */
	UT_ASSERT_EQ(inject("EE_E3", BDEV_ERROR_FAILURE, 0), 0);
	memset(rd, 0x5a, sizeof(rd));
	CU_ASSERT(!dev_read(0, 16, rd));
	CU_ASSERT(!dev_read(0, 1, rd));
	CU_ASSERT(!dev_write(0, 1, w));
	get_info("E", &info);
	UT_ASSERT_EQ(info.state, BDEV_GGA_FAILED);
	UT_ASSERT_EQ(info.members[2].state, BDEV_GGA_MEMBER_FAILED);
	CU_ASSERT(info.counters.failed_ios >= 3);
	bdev_gga_info_clear(&info);
	/*
	 * With the errors cleared both come back on their own: parity, which
	 * failed with the array and so missed no acknowledged write, rejoins at
	 * once; d1, which the superblocks record as stale, is resynced over the
	 * one region written while it was away. Nothing written is lost.
	 */
	UT_ASSERT_EQ(inject("EE_E1", BDEV_ERROR_NONE, 0), 0);
	UT_ASSERT_EQ(inject("EE_E3", BDEV_ERROR_NONE, 0), 0);
	UT_POLL_UNTIL(gga_live_mask(disk) == disk->all_mask);
	get_info("E", &info);
	UT_ASSERT_EQ(info.state, BDEV_GGA_ONLINE);
	CU_ASSERT(info.last_recovery.valid && !info.last_recovery.rebuild);
	UT_ASSERT_EQ(info.last_recovery.result, 0);
	UT_ASSERT_EQ(info.last_recovery.members, 1u << 0);
	UT_ASSERT_EQ(info.last_recovery.regions_done, 1);
	bdev_gga_info_clear(&info);
	disk->recovery_read_every_n = 1;
	for (i = 0; i < 4; i++) {
		memset(rd, 0, sizeof(rd));
		CU_ASSERT(dev_read(0, 16, rd));
		CU_ASSERT(memcmp(rd, w2, sizeof(w2)) == 0);
	}
	disk->recovery_read_every_n = 0;
	UT_ASSERT_EQ(counters("E").checksum_failures, 0);

	ut_dev_close(&g_dev);
	gga_delete_sync("E");
	for (i = 1; i <= 3; i++) {
		char n[8];
		struct ut_cpl cpl = { 0 };

		snprintf(n, sizeof(n), "EE_E%d", i);
		UT_ASSERT_EQ(bdev_error_delete(n, ut_cpl_done, &cpl), 0);
		UT_POLL_UNTIL(cpl.done);
	}
	delete_members("E");
}

static void
test_hot_remove(void)
{
	uint8_t w[8 * LBS], rd[8 * LBS];
	struct bdev_gga_info info;
	struct gga_disk *disk;

	make_members("H");
	disk = make_gga("H", 0);
	open_dev("H");
	fill_random(w, sizeof(w));
	CU_ASSERT(dev_write(0, 8, w));
	/* The data_2 base goes away under the gga bdev. */
	malloc_delete_sync("H2");
	CU_ASSERT(bdev_get_by_name("H2") == NULL);
	UT_ASSERT_EQ(gga_member_state(&disk->members[1]), BDEV_GGA_MEMBER_ABSENT);
	CU_ASSERT(disk->members[1].desc == NULL);
	CU_ASSERT(dev_read(0, 8, rd));
	CU_ASSERT(memcmp(rd, w, sizeof(w)) == 0);
	fill_random(w, sizeof(w));
	CU_ASSERT(dev_write(0, 8, w));
	CU_ASSERT(dev_read(0, 8, rd));
	CU_ASSERT(memcmp(rd, w, sizeof(w)) == 0);
	get_info("H", &info);
	UT_ASSERT_EQ(info.state, BDEV_GGA_DEGRADED);
	bdev_gga_info_clear(&info);

	/* A blank base of that name appears: it is claimed, formatted and rebuilt whole. */
	make_malloc("H2", MBS, MD, MEMBER_BLOCKS);
	UT_POLL_UNTIL(gga_live_mask(disk) == disk->all_mask);
	get_info("H", &info);
	UT_ASSERT_EQ(info.state, BDEV_GGA_ONLINE);
	CU_ASSERT(info.last_recovery.valid && info.last_recovery.rebuild);
	UT_ASSERT_EQ(info.last_recovery.result, 0);
	UT_ASSERT_EQ(info.last_recovery.blocks_copied, NBLK);
	bdev_gga_info_clear(&info);
	CU_ASSERT(bdev_is_claimed(bdev_get_by_name("H2")));
	/* d1 and d2 alone, then d2 and parity: both read what was written. */
	CU_ASSERT(dev_read(0, 8, rd));
	CU_ASSERT(memcmp(rd, w, sizeof(w)) == 0);
	disk->recovery_read_every_n = 1;
	CU_ASSERT(dev_read(0, 8, rd));
	CU_ASSERT(memcmp(rd, w, sizeof(w)) == 0);
	CU_ASSERT(dev_read(0, 8, rd));
	CU_ASSERT(memcmp(rd, w, sizeof(w)) == 0);
	disk->recovery_read_every_n = 0;
	UT_ASSERT_EQ(counters("H").checksum_failures, 0);
	ut_dev_close(&g_dev);
	gga_delete_sync("H");
	malloc_delete_sync("H1");
	malloc_delete_sync("H2");
	malloc_delete_sync("H3");
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_torn_writes),          UT_TEST(test_bit_flips),
		UT_TEST(test_direct_read_recovery), UT_TEST(test_member_failure),
		UT_TEST(test_hot_remove),           UT_TEST(test_multiblock_read_one_lost),
	};

	return ut_run("bdev_gga_fault", tests, ARRAY_SIZE(tests), suite_init, suite_fini);
}
