/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the gga bdev over malloc (and error) members, driven in
 * process on two hand-polled threads: creation (format, assemble, every
 * refusal, with the members' bytes checked unchanged), I/O round trips,
 * periodic recovery reads, deletion and re-assembly with generations that
 * keep growing, the generation window, write_zeroes/unmap, overlapping writes
 * from two threads, buffer pressure, lock waits and the RPCs; and a front of
 * a shared array over members with reservations, fenced on I/O. The fault
 * tests (torn writes, corruption, member failure, hot remove) are in
 * ../bdev_gga_fault/.
 */
#include <inttypes.h>

#include "test/unit/bdev_gga/bdev_gga_harness.c"

#include "bdev_gga/gga_front.h"
/* The target's reservations of a namespace, for the members that can be fenced. */
#include "target/nvmf_resv.c"

/* ---------------------------------------------------------------------- */
/* Creation                                                                */
/* ---------------------------------------------------------------------- */

static void
test_create_format_assemble(void)
{
	struct bdev_gga_info info;
	struct gga_disk *disk;
	struct bdev *bdev;
	struct bdev_desc *desc;
	struct create_res r;
	struct gga_sb sb;
	uint8_t *blk, uuid[16];
	json_t *dump;
	uint32_t i;

	make_members("F");
	UT_ASSERT_EQ_FATAL(create3("G", "F1", "F2", "F3", 0, BDEV_GGA_MODE_AUTO, &r), 0);
	bdev = r.bdev;
	UT_ASSERT_STR_EQ(bdev_get_name(bdev), "G");
	UT_ASSERT_STR_EQ(bdev_get_module_name(bdev), "gga");
	UT_ASSERT_EQ(bdev_get_block_size(bdev), LBS);
	UT_ASSERT_EQ(bdev_get_md_size(bdev), 0);
	UT_ASSERT_EQ(bdev_get_num_blocks(bdev), NBLK);
	for (i = 1; i <= 3; i++) {
		char n[8];

		snprintf(n, sizeof(n), "F%u", i);
		CU_ASSERT(bdev_is_claimed(bdev_get_by_name(n)));
		UT_ASSERT_EQ(bdev_open(n, true, ut_dev_event, NULL, &desc), -EPERM);
	}
	disk = bdev->ctxt;

	/* Every member got a superblock naming its role and the geometry. */
	blk = malloc(disk->mbs);
	for (i = 0; i < 3; i++) {
		UT_ASSERT_EQ(member_rw(disk, i, false, 0, 1, blk), 0);
		UT_ASSERT_EQ_FATAL(gga_sb_decode(blk, MBS, &sb), 0);
		UT_ASSERT_EQ(sb.member_index, i);
		UT_ASSERT_EQ(sb.k, 2);
		UT_ASSERT_EQ(sb.m, 1);
		UT_ASSERT_EQ(sb.block_size, LBS);
		UT_ASSERT_EQ(sb.md_size, MD);
		UT_ASSERT_EQ(sb.data_offset, SB_BLOCKS);
		UT_ASSERT_EQ(sb.data_blocks, NBLK);
		CU_ASSERT(memcmp(sb.array_uuid, disk->array_uuid, 16) == 0);
		CU_ASSERT(sb.generation_epoch > disk->next_gen);
	}
	free(blk);
	memcpy(uuid, disk->array_uuid, 16);

	get_info("G", &info);
	UT_ASSERT_STR_EQ(info.name, "G");
	UT_ASSERT_EQ(info.block_size, LBS);
	UT_ASSERT_EQ(info.num_blocks, NBLK);
	UT_ASSERT_EQ(info.k, 2);
	UT_ASSERT_EQ(info.m, 1);
	UT_ASSERT_EQ(info.matrix, GGA_MATRIX_VANDERMONDE);
	UT_ASSERT_EQ(info.state, BDEV_GGA_ONLINE);
	UT_ASSERT_EQ(info.num_members, 3);
	UT_ASSERT_STR_EQ(info.members[2].name, "F3");
	UT_ASSERT_EQ(info.members[2].state, BDEV_GGA_MEMBER_ONLINE);
	bdev_gga_info_clear(&info);

	dump = json_object();
	bdev->fn_table->dump_info_json(bdev->ctxt, dump);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(json_object_get(dump, "gga"), "state")),
			 "online");
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(
				 json_array_get(json_object_get(json_object_get(dump, "gga"),
								"members"),
						1),
				 "role")),
			 "data_2");
	json_decref(dump);

	/* A second gga bdev on the same bases, or with the same name, is refused. */
	UT_ASSERT_EQ(create3("G2", "F1", "F2", "F3", 0, BDEV_GGA_MODE_AUTO, &r), -EPERM);
	CU_ASSERT(strstr(r.msg, "data_1 'F1'") != NULL);
	UT_ASSERT_EQ(create3("G", "X1", "X2", "X3", 0, BDEV_GGA_MODE_AUTO, &r), -EEXIST);

	gga_delete_sync("G");
	for (i = 1; i <= 3; i++) {
		char n[8];

		snprintf(n, sizeof(n), "F%u", i);
		CU_ASSERT(!bdev_is_claimed(bdev_get_by_name(n)));
	}
	UT_ASSERT_EQ(bdev_gga_delete("G", NULL, NULL), -ENODEV);

	/* The members kept their format: assemble them again, same array. */
	UT_ASSERT_EQ_FATAL(create3("G", "F1", "F2", "F3", 0, BDEV_GGA_MODE_ASSEMBLE, &r), 0);
	CU_ASSERT(memcmp(((struct gga_disk *)r.bdev->ctxt)->array_uuid, uuid, 16) == 0);
	gga_delete_sync("G");
	delete_members("F");
}

/* A malloc bdev that hides its write_zeroes, to exercise zeroing by plain writes. */
static struct bdev_fn_table g_no_wz_table;
static bool (*g_malloc_supported)(void *ctxt, enum bdev_io_type type);

static bool
no_wz_supported(void *ctxt, enum bdev_io_type type)
{
	return type != BDEV_IO_TYPE_WRITE_ZEROES && g_malloc_supported(ctxt, type);
}

static void
test_format_zeroes_members(void)
{
	uint8_t *junk = malloc((MBS + MD) * 4), rd[4 * LBS];
	struct bdev *m2;
	struct ut_dev dev;
	struct ut_io r;
	int i;

	make_members("J");
	m2 = bdev_get_by_name("J2");
	g_no_wz_table = *m2->fn_table;
	g_malloc_supported = g_no_wz_table.io_type_supported;
	g_no_wz_table.io_type_supported = no_wz_supported;
	m2->fn_table = &g_no_wz_table;
	CU_ASSERT(!bdev_io_type_supported(m2, BDEV_IO_TYPE_WRITE_ZEROES));

	/* Leftovers in the data area of blank members (block 0 stays zero). */
	memset(junk, 0x6b, (MBS + MD) * 4);
	for (i = 1; i <= 3; i++) {
		char n[8];

		snprintf(n, sizeof(n), "J%d", i);
		UT_ASSERT_EQ_FATAL(ut_dev_open(&dev, n, g_ut_app), 0);
		UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_WRITE, junk, SB_BLOCKS + 2, 4, &r), 0);
		UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_WRITE, junk, MEMBER_BLOCKS - 1, 1, &r),
			     0);
		ut_dev_close(&dev);
	}
	make_gga("J", 0);
	open_dev("J");
	memset(rd, 0xff, sizeof(rd));
	CU_ASSERT(dev_read(2, 4, rd));
	CU_ASSERT(mem_is_zero(rd, sizeof(rd)));
	CU_ASSERT(dev_read(NBLK - 1, 1, rd));
	CU_ASSERT(mem_is_zero(rd, LBS));
	UT_ASSERT_EQ(counters("J").checksum_failures, 0);
	ut_dev_close(&g_dev);
	gga_delete_sync("J");
	delete_members("J");
	free(junk);
}

/* Create must fail with `rc`, a message containing `what`, and leave the bases alone. */
static void
expect_refusal(const struct bdev_gga_opts *opts, int rc, const char *what)
{
	uint8_t *before[3] = { NULL };
	struct create_res r;
	uint32_t i;

	for (i = 0; i < 3; i++) {
		if (bdev_get_by_name(opts->members[i]) != NULL) {
			before[i] = snapshot(opts->members[i]);
		}
	}
	UT_ASSERT_EQ(create_opts_sync(opts, &r), rc);
	if (strstr(r.msg, what) == NULL) {
		fprintf(stderr, "message \"%s\" lacks \"%s\"\n", r.msg, what);
		CU_FAIL("refusal message");
	}
	CU_ASSERT(bdev_get_by_name(opts->name) == NULL ||
		  strcmp(bdev_get_module_name(bdev_get_by_name(opts->name)), "gga") != 0);
	for (i = 0; i < 3; i++) {
		if (before[i] != NULL) {
			CU_ASSERT(unchanged(opts->members[i], before[i]));
			free(before[i]);
			/* Refused creation released its claims. */
			CU_ASSERT(!bdev_is_claimed(bdev_get_by_name(opts->members[i])) ||
				  strcmp(opts->members[i], "EC") == 0);
		}
	}
}

static void
opts3(struct bdev_gga_opts *opts, const char *d1, const char *d2, const char *p)
{
	bdev_gga_opts_init(opts);
	opts->name = "R";
	opts->members[0] = d1;
	opts->members[1] = d2;
	opts->members[2] = p;
}

static void
test_create_refusals_geometry(void)
{
	struct bdev_gga_opts opts;

	make_members("A");
	make_malloc("BS", 1024, MD, MEMBER_BLOCKS);
	make_malloc("MDS", MBS, 32, MEMBER_BLOCKS);
	make_malloc("NB", MBS, MD, MEMBER_BLOCKS + 1);
	make_malloc("S1", MBS, 16, MEMBER_BLOCKS);
	make_malloc("S2", MBS, 16, MEMBER_BLOCKS);
	make_malloc("S3", MBS, 16, MEMBER_BLOCKS);
	make_malloc("T1", MBS, MD, SB_BLOCKS);
	make_malloc("T2", MBS, MD, SB_BLOCKS);
	make_malloc("T3", MBS, MD, SB_BLOCKS);
	make_malloc("H1", 65536, MD, 4);
	make_malloc("H2", 65536, MD, 4);
	make_malloc("H3", 65536, MD, 4);
	make_malloc("EC", MBS, MD, MEMBER_BLOCKS);
	CU_ASSERT_FATAL(bdev_error_create(&(struct bdev_error_opts){ .base_name = "EC" }, NULL) ==
			0);

	opts3(&opts, "A1", "BS", "A3");
	expect_refusal(&opts, -EINVAL, "data_2 'BS' has block_size 1024, data_1 'A1' has 512");
	opts3(&opts, "A1", "A2", "MDS");
	expect_refusal(&opts, -EINVAL, "parity 'MDS' has md_size 32, data_1 'A1' has 64");
	opts3(&opts, "A1", "NB", "A3");
	expect_refusal(&opts, -EINVAL, "data_2 'NB' has num_blocks 385, data_1 'A1' has 384");
	opts3(&opts, "S1", "S2", "S3");
	expect_refusal(&opts, -EINVAL, "md_size 16");
	opts3(&opts, "T1", "T2", "T3");
	expect_refusal(&opts, -EINVAL, "superblock region takes 128");
	opts3(&opts, "H1", "H2", "H3");
	expect_refusal(&opts, -EINVAL, "at most 65536");
	opts3(&opts, "A1", "nope", "A3");
	expect_refusal(&opts, -ENODEV, "data_2 'nope': base bdev does not exist");
	opts3(&opts, "A1", "A2", "EC");
	expect_refusal(
		&opts, -EPERM,
		"parity 'EC': base bdev is a base of another bdev (claimed by the error module)");
	opts3(&opts, "A1", "A2", "A1");
	expect_refusal(&opts, -EEXIST, "data_1 and parity are the same bdev 'A1'");
	opts3(&opts, "A1", "A2", "A3");
	opts.uuid = "not-a-uuid";
	expect_refusal(&opts, -EINVAL, "uuid");
	/* Two fronts: the uuid is needed, and members that can be fenced (malloc cannot). */
	opts3(&opts, "A1", "A2", "A3");
	opts.front_id = 1;
	expect_refusal(&opts, -EINVAL, "front_id: a shared array needs its uuid");
	opts.uuid = "0f6e4d39-8b51-4b46-9e0c-5f8a2f2f8f01";
	expect_refusal(&opts, -EOPNOTSUPP,
		       "data_1 'A1': a front of a shared array (front_id) needs "
		       "members that are NVMe namespaces with reservations");
	opts3(&opts, "A1", "A2", "A3");
	opts.standby = true;
	expect_refusal(&opts, -EINVAL, "standby: only with front_id");
	opts3(&opts, "A1", "A2", "A3");
	opts.force = true;
	expect_refusal(&opts, -EINVAL, "force");
	opts3(&opts, "A1", "A2", "A3");
	opts.name = "A2";
	expect_refusal(&opts, -EINVAL, "own name");
	/* The packed layout (issue 35) is not accepted yet, in any mode. */
	opts3(&opts, "A1", "A2", "A3");
	opts.layout = GGA_LAYOUT_PACKED;
	expect_refusal(&opts, -EINVAL, "layout: 'packed' is not yet supported");
	opts.mode = BDEV_GGA_MODE_ASSEMBLE;
	expect_refusal(&opts, -EINVAL, "layout: 'packed' is not yet supported");

	UT_ASSERT_EQ(bdev_gga_create(NULL, create_done, NULL), -EINVAL);

	CU_ASSERT(bdev_error_delete("EE_EC", NULL, NULL) == 0);
	ut_poll_idle();
	malloc_delete_sync("EC");
	delete_members("A");
	malloc_delete_sync("BS");
	malloc_delete_sync("MDS");
	malloc_delete_sync("NB");
	delete_members("S");
	delete_members("T");
	delete_members("H");
}

/* Write a raw superblock record to block 0 of a base (not claimed). */
static void
write_block0(const char *name, const void *rec, size_t len)
{
	struct ut_dev dev;
	struct ut_io r;
	uint8_t *blk = calloc(1, MBS + MD);

	memcpy(blk, rec, len);
	UT_ASSERT_EQ_FATAL(ut_dev_open(&dev, name, g_ut_app), 0);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_WRITE, blk, 0, 1, &r), 0);
	CU_ASSERT(r.success);
	ut_dev_close(&dev);
	free(blk);
}

static void
test_create_refusals_superblock(void)
{
	struct bdev_gga_opts opts;
	struct gga_disk *disk;
	struct create_res r;
	uint8_t rec[GGA_SB_SIZE], uuid[16] = { 1, 2, 3 }, *buf;
	struct gga_sb sb;
	char ustr[40];
	int i;

	make_members("X");
	make_members("Y");
	make_members("B");
	make_members("Z");
	make_malloc("W", MBS, MD, MEMBER_BLOCKS);

	/* Two arrays, formatted and then deleted (members keep their format). */
	disk = make_gga("X", 0);
	buf = malloc(4 * LBS);
	fill_random(buf, 4 * LBS);
	open_dev("X");
	CU_ASSERT(dev_write(0, 4, buf));
	ut_dev_close(&g_dev);
	snprintf(ustr, sizeof(ustr), "%s", bdev_get_uuid_str(&disk->bdev));
	gga_delete_sync("X");
	make_gga("Y", 0);
	gga_delete_sync("Y");

	opts3(&opts, "X1", "X2", "Y3");
	expect_refusal(&opts, -EEXIST, "parity 'Y3' belongs to another array");
	opts3(&opts, "X2", "X1", "X3");
	expect_refusal(&opts, -EEXIST, "data_1 'X2' is the data_2 member of array");
	opts3(&opts, "X1", "X2", "X3");
	opts.matrix = GGA_MATRIX_CAUCHY;
	opts.matrix_set = true;
	expect_refusal(&opts, -EEXIST,
		       "data_1 'X1' was formatted with the vandermonde matrix, not cauchy");
	opts3(&opts, "X1", "X2", "X3");
	opts.uuid = "01234567-89ab-4def-8123-456789abcdef";
	expect_refusal(&opts, -EEXIST, "not of the requested array");
	/* One formatted member beside blank ones is not an array that can be assembled. */
	opts3(&opts, "X1", "B2", "B3");
	expect_refusal(&opts, -EEXIST,
		       "data_1 'X1' is formatted but data_2 'B2' and others are "
		       "blank");
	opts3(&opts, "B1", "B2", "B3");
	opts.mode = BDEV_GGA_MODE_ASSEMBLE;
	expect_refusal(&opts, -ENOENT, "data_1 'B1' is blank");
	opts3(&opts, "X1", "X2", "X3");
	opts.mode = BDEV_GGA_MODE_CREATE;
	expect_refusal(&opts, -EEXIST, "data_1 'X1' is not blank");

	/* A superblock describing another geometry (fragments of 1024 bytes). */
	for (i = 2; i >= 0; i--) {
		char n[8];

		UT_ASSERT_EQ(gga_sb_init(&sb, uuid, (uint32_t)i, 2, 1, GGA_MATRIX_VANDERMONDE, 2048,
					 MD, MEMBER_BLOCKS),
			     0);
		UT_ASSERT_EQ(gga_sb_encode(&sb, rec), 0);
		snprintf(n, sizeof(n), "Z%d", i + 1);
		write_block0(n, rec, sizeof(rec));
	}
	opts3(&opts, "Z1", "Z2", "Z3");
	opts.mode = BDEV_GGA_MODE_ASSEMBLE;
	expect_refusal(&opts, -EEXIST,
		       "data_1 'Z1' was formatted with another geometry: "
		       "block size is 2048, expected 1024");
	/*
	 * Members of a packed array in this geometry: never assembled as a fixed
	 * array (their log would read as blocks), whatever the options say.
	 */
	for (i = 2; i >= 0; i--) {
		char n[8];

		UT_ASSERT_EQ(gga_sb_init(&sb, uuid, (uint32_t)i, 2, 1, GGA_MATRIX_VANDERMONDE, LBS,
					 MD, MEMBER_BLOCKS),
			     0);
		UT_ASSERT_EQ(gga_sb_set_packed(&sb, GGA_SEG_SHIFT_MIN), 0);
		UT_ASSERT_EQ(gga_sb_encode(&sb, rec), 0);
		snprintf(n, sizeof(n), "Z%d", i + 1);
		write_block0(n, rec, sizeof(rec));
	}
	opts3(&opts, "Z1", "Z2", "Z3");
	expect_refusal(&opts, -EINVAL,
		       "data_1 'Z1' holds a member of a packed array, which this build does not "
		       "assemble yet");
	opts.mode = BDEV_GGA_MODE_ASSEMBLE;
	expect_refusal(&opts, -EINVAL, "holds a member of a packed array");
	/* Something else's data, and a damaged superblock. */
	write_block0("W", "not a gga member", 16);
	opts3(&opts, "W", "B2", "B3");
	expect_refusal(&opts, -EMEDIUMTYPE, "data_1 'W' holds data that is not a gga member");
	rec[20] ^= 1;
	write_block0("Z2", rec, sizeof(rec));
	opts3(&opts, "Z2", "B2", "B3");
	expect_refusal(&opts, -EBADMSG, "data_1 'Z2' has a damaged gga superblock");

	/*
	 * A blank member beside k formatted ones is this array's member come
	 * back empty (a replaced disk): it is assembled as stale, rebuilt whole,
	 * and then online, and the data is as it was.
	 */
	{
		uint8_t rd[4 * LBS];
		struct bdev_gga_info info;
		bool online = false;

		opts3(&opts, "X1", "X2", "B3");
		opts.name = "XB";
		UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
		disk = r.bdev->ctxt;
		UT_POLL_UNTIL(gga_member_state(&disk->members[2]) == BDEV_GGA_MEMBER_ONLINE);
		UT_ASSERT_EQ(gga_member_state(&disk->members[2]), BDEV_GGA_MEMBER_ONLINE);
		get_info("XB", &info);
		online = info.state == BDEV_GGA_ONLINE;
		CU_ASSERT(online);
		CU_ASSERT(info.last_recovery.valid && info.last_recovery.rebuild);
		UT_ASSERT_EQ(info.last_recovery.result, 0);
		UT_ASSERT_EQ(info.last_recovery.blocks_copied, NBLK);
		bdev_gga_info_clear(&info);
		/* Every block is readable from the rebuilt parity and one data member. */
		disk->recovery_read_every_n = 1;
		open_dev("XB");
		CU_ASSERT(dev_read(0, 4, rd));
		CU_ASSERT(memcmp(rd, buf, sizeof(rd)) == 0);
		UT_ASSERT_EQ(counters("XB").checksum_failures, 0);
		ut_dev_close(&g_dev);
		gga_delete_sync("XB");
	}

	/* Mode create with force reformats, and the old blocks are gone. */
	opts3(&opts, "X1", "X2", "X3");
	opts.name = "X";
	opts.mode = BDEV_GGA_MODE_CREATE;
	opts.force = true;
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
	CU_ASSERT(strcmp(bdev_get_uuid_str(r.bdev), ustr) != 0);
	open_dev("X");
	CU_ASSERT(dev_read(0, 4, buf));
	CU_ASSERT(mem_is_zero(buf, 4 * LBS));
	ut_dev_close(&g_dev);
	gga_delete_sync("X");

	free(buf);
	delete_members("X");
	delete_members("Y");
	delete_members("B");
	delete_members("Z");
	malloc_delete_sync("W");
}

/* ---------------------------------------------------------------------- */
/* I/O                                                                     */
/* ---------------------------------------------------------------------- */

static void
roundtrip(uint64_t lba, uint64_t n, int kind)
{
	uint8_t *w = malloc(n * LBS), *rd = malloc(n * LBS);
	uint64_t b;

	for (b = 0; b < n; b++) {
		if (kind == 0) {
			fill_random(w + b * LBS, LBS);
		} else if (kind == 1) {
			memset(w + b * LBS, 0, LBS);
		} else {
			fill_compressible(w + b * LBS, LBS, (uint32_t)(lba + b));
		}
	}
	CU_ASSERT(dev_write(lba, n, w));
	memset(rd, 0xa5, n * LBS);
	CU_ASSERT(dev_read(lba, n, rd));
	CU_ASSERT(memcmp(w, rd, n * LBS) == 0);
	free(w);
	free(rd);
}

static void
test_io_roundtrip(void)
{
	static const size_t cuts[] = { 700, 1348, 1, 2047, 4096, 100, 3000 };
	struct bdev_gga_counters c0, c1;
	uint8_t *w, *rd;

	make_members("I");
	make_gga("I", 0);
	open_dev("I");

	/* Never written: zeros. */
	rd = malloc(NBLK * LBS);
	memset(rd, 0xff, NBLK * LBS);
	CU_ASSERT(dev_read(0, NBLK, rd));
	CU_ASSERT(mem_is_zero(rd, NBLK * LBS));

	c0 = counters("I");
	roundtrip(0, 1, 0);
	roundtrip(1, 1, 1);
	roundtrip(2, 1, 2);
	roundtrip(5, 3, 0);
	roundtrip(9, 7, 2);
	/* Larger than a chunk (128 blocks): three chunks. */
	roundtrip(20, 200, 0);
	roundtrip(NBLK - 1, 1, 0);
	c1 = counters("I");
	UT_ASSERT_EQ(c1.writes - c0.writes, 7);
	UT_ASSERT_EQ(c1.reads - c0.reads, 7);
	UT_ASSERT_EQ(c1.regular_reads - c0.regular_reads, 7);
	UT_ASSERT_EQ(c1.raw_blocks - c0.raw_blocks, 1 + 3 + 200 + 1);
	UT_ASSERT_EQ(c1.zero_blocks - c0.zero_blocks, 1);
	UT_ASSERT_EQ(c1.lz4_blocks - c0.lz4_blocks, 1 + 7);
	UT_ASSERT_EQ(c1.logical_bytes_written - c0.logical_bytes_written, 214 * LBS);
	CU_ASSERT(c1.compressed_bytes_written - c0.compressed_bytes_written < 214 * LBS - 8 * 500);
	UT_ASSERT_EQ(c1.recovery_reads_forced - c0.recovery_reads_forced, 0);
	UT_ASSERT_EQ(c1.checksum_failures + c1.torn_writes_detected + c1.repairs_written, 0);

	/* Blocks that straddle the caller's iovecs. */
	w = malloc(16 * LBS);
	fill_random(w, 16 * LBS);
	CU_ASSERT(dev_iov(true, 100, 16, w, cuts, 7));
	memset(rd, 0, 16 * LBS);
	CU_ASSERT(dev_read(100, 16, rd));
	CU_ASSERT(memcmp(w, rd, 16 * LBS) == 0);
	memset(rd, 0, 16 * LBS);
	CU_ASSERT(dev_iov(false, 100, 16, rd, cuts, 7));
	CU_ASSERT(memcmp(w, rd, 16 * LBS) == 0);
	/* The rest of the disk is still what it was. */
	CU_ASSERT(dev_read(0, 1, rd));
	free(w);
	free(rd);

	ut_dev_close(&g_dev);
	gga_delete_sync("I");
	delete_members("I");
}

/* 4 KiB logical blocks over 2 KiB members, the benchmark geometry. */
static void
test_io_4k(void)
{
	uint8_t *w = malloc(64 * 4096), *rd = malloc(64 * 4096);
	struct create_res r;
	int i;

	for (i = 1; i <= 3; i++) {
		char n[8];

		snprintf(n, sizeof(n), "K%d", i);
		make_malloc(n, 2048, 32, 32 + 256);
	}
	UT_ASSERT_EQ_FATAL(create3("K", "K1", "K2", "K3", 0, BDEV_GGA_MODE_AUTO, &r), 0);
	UT_ASSERT_EQ(bdev_get_block_size(r.bdev), 4096);
	UT_ASSERT_EQ(bdev_get_num_blocks(r.bdev), 256);
	open_dev("K");
	fill_random(w, 64 * 4096);
	fill_compressible(w + 4096, 4096, 7);
	memset(w + 8192, 0, 4096);
	CU_ASSERT(dev_write(10, 64, w));
	CU_ASSERT(dev_read(10, 64, rd));
	CU_ASSERT(memcmp(w, rd, 64 * 4096) == 0);
	CU_ASSERT(dev_read(11, 1, rd));
	CU_ASSERT(memcmp(w + 4096, rd, 4096) == 0);
	ut_dev_close(&g_dev);
	gga_delete_sync("K");
	delete_members("K");
	free(w);
	free(rd);
}

struct iostat_res {
	bool done;
	struct bdev_io_stat stat;
};

static void
iostat_done(struct bdev *bdev, struct bdev_io_stat *stat, void *cb_arg, int rc)
{
	((struct iostat_res *)cb_arg)->done = true;
}

static uint64_t
member_reads(const char *name)
{
	struct iostat_res r = { 0 };

	bdev_get_iostat(bdev_get_by_name(name), &r.stat, iostat_done, &r);
	UT_POLL_UNTIL(r.done);
	return r.stat.num_read_ops;
}

/*
 * The compression memory: a region whose blocks keep coming back
 * incompressible stops trying LZ4, tries again now and then, and compresses
 * again once its data does. Nothing of it changes what is read back.
 */
static void
test_compression_memory(void)
{
	struct bdev_gga_counters c0, c1, c2;
	uint64_t raw, lz4, skipped;

	make_members("C");
	make_gga("C", 0);
	open_dev("C");
	c0 = counters("C");
	roundtrip(0, 8, 0);
	c1 = counters("C");
	/* GGA_INCOMP_SKIP (4) tried and stored raw, then the rest without trying. */
	UT_ASSERT_EQ(c1.raw_blocks - c0.raw_blocks, 8);
	UT_ASSERT_EQ(c1.lz4_skipped_blocks - c0.lz4_skipped_blocks, 8 - GGA_INCOMP_SKIP);

	/* Compressible data now: stored raw until a retry finds it compresses. */
	roundtrip(8, 40, 2);
	c2 = counters("C");
	raw = c2.raw_blocks - c1.raw_blocks;
	lz4 = c2.lz4_blocks - c1.lz4_blocks;
	skipped = c2.lz4_skipped_blocks - c1.lz4_skipped_blocks;
	CU_ASSERT(lz4 > 0 && raw > 0 && raw + lz4 == 40);
	UT_ASSERT_EQ(skipped, raw);
	CU_ASSERT(raw < GGA_INCOMP_RETRY);
	/* From then on every block is tried (and compressed). */
	c1 = c2;
	roundtrip(48, 8, 2);
	c2 = counters("C");
	UT_ASSERT_EQ(c2.lz4_blocks - c1.lz4_blocks, 8);
	UT_ASSERT_EQ(c2.lz4_skipped_blocks - c1.lz4_skipped_blocks, 0);
	UT_ASSERT_EQ(c2.checksum_failures, 0);
	ut_dev_close(&g_dev);
	gga_delete_sync("C");
	delete_members("C");
}

static void
test_periodic_recovery(void)
{
	struct bdev_gga_counters c;
	uint8_t *w = malloc(8 * LBS), *rd = malloc(8 * LBS);
	uint64_t r1, r2, r3;
	int i;

	/* Every read a recovery read, alternating the data member rebuilt. */
	make_members("P");
	make_gga("P", 1);
	open_dev("P");
	fill_random(w, 8 * LBS);
	fill_compressible(w + 2 * LBS, LBS, 3);
	CU_ASSERT(dev_write(0, 8, w));
	r1 = member_reads("P1");
	r2 = member_reads("P2");
	r3 = member_reads("P3");
	for (i = 0; i < 10; i++) {
		memset(rd, 0, 8 * LBS);
		CU_ASSERT(dev_read(0, 8, rd));
		CU_ASSERT(memcmp(w, rd, 8 * LBS) == 0);
	}
	c = counters("P");
	UT_ASSERT_EQ(c.reads, 10);
	UT_ASSERT_EQ(c.recovery_reads_periodic, 10);
	UT_ASSERT_EQ(c.regular_reads, 0);
	UT_ASSERT_EQ(c.recovery_reads_forced, 0);
	UT_ASSERT_EQ(member_reads("P1") - r1, 5);
	UT_ASSERT_EQ(member_reads("P2") - r2, 5);
	UT_ASSERT_EQ(member_reads("P3") - r3, 10);
	ut_dev_close(&g_dev);
	gga_delete_sync("P");

	/* Every third read. */
	make_gga("P", 3);
	open_dev("P");
	for (i = 0; i < 9; i++) {
		memset(rd, 0, 8 * LBS);
		CU_ASSERT(dev_read(0, 8, rd));
		CU_ASSERT(memcmp(w, rd, 8 * LBS) == 0);
	}
	c = counters("P");
	UT_ASSERT_EQ(c.recovery_reads_periodic, 3);
	UT_ASSERT_EQ(c.regular_reads, 6);
	ut_dev_close(&g_dev);
	gga_delete_sync("P");
	delete_members("P");
	free(w);
	free(rd);
}

/* ---------------------------------------------------------------------- */
/* Generations                                                             */
/* ---------------------------------------------------------------------- */

static void
test_reassemble_generation(void)
{
	uint8_t w[4 * LBS], rd[4 * LBS], recs[3][GGA_SB_SIZE];
	uint64_t gen_before, gen_after, limit;
	struct gga_disk *disk;
	struct gga_sb sb;
	uint8_t *blk;
	uint32_t i;

	make_members("R");
	disk = make_gga("R", 0);
	open_dev("R");
	fill_random(w, sizeof(w));
	CU_ASSERT(dev_write(0, 4, w));
	CU_ASSERT(dev_write(0, 4, w));
	gen_before = frag_generation(disk, 0, 3);
	CU_ASSERT(gen_before > 0);
	limit = disk->gen_limit;
	ut_dev_close(&g_dev);
	gga_delete_sync("R");

	disk = make_gga("R", 0);
	/* Assembled, not formatted: data intact, generations above the old window. */
	CU_ASSERT(disk->next_gen >= limit);
	open_dev("R");
	CU_ASSERT(dev_read(0, 4, rd));
	CU_ASSERT(memcmp(rd, w, sizeof(w)) == 0);
	fill_random(w, LBS);
	CU_ASSERT(dev_write(3, 1, w));
	gen_after = frag_generation(disk, 0, 3);
	CU_ASSERT(gen_after > gen_before);
	CU_ASSERT(gen_after >= limit);
	CU_ASSERT(dev_read(3, 1, rd));
	CU_ASSERT(memcmp(rd, w, LBS) == 0);

	/* The superblocks carry the new window's end. */
	blk = malloc(disk->mbs);
	UT_ASSERT_EQ(member_rw(disk, 2, false, 0, 1, blk), 0);
	UT_ASSERT_EQ(gga_sb_decode(blk, MBS, &sb), 0);
	UT_ASSERT_EQ(sb.generation_epoch, disk->gen_limit);
	CU_ASSERT(sb.generation_epoch > gen_after);
	UT_ASSERT_EQ(sb.version, GGA_SB_VERSION_CURRENT);
	CU_ASSERT(sb.events >= 2);
	ut_dev_close(&g_dev);
	for (i = 0; i < 3; i++) {
		UT_ASSERT_EQ(member_rw(disk, i, false, 0, 1, blk), 0);
		memcpy(recs[i], blk, GGA_SB_SIZE);
	}
	gga_delete_sync("R");

	/*
	 * A version-1 array (the same records with version 1 and bytes 80..123
	 * zero, as an older gga wrote them) assembles and is upgraded in place.
	 */
	{
		uint8_t *rec;
		uint32_t crc;
		char n[8];

		for (i = 0; i < 3; i++) {
			rec = recs[i];
			rec[8] = GGA_SB_VERSION_1;
			memset(rec + 80, 0, 44);
			crc = htole32(gga_crc32c(rec, GGA_SB_CRC_LEN, 0));
			memcpy(rec + GGA_SB_CRC_LEN, &crc, sizeof(crc));
			snprintf(n, sizeof(n), "R%u", i + 1);
			write_block0(n, rec, GGA_SB_SIZE);
		}
	}
	disk = make_gga("R", 0);
	UT_ASSERT_EQ(member_rw(disk, 1, false, 0, 1, blk), 0);
	UT_ASSERT_EQ(gga_sb_decode(blk, MBS, &sb), 0);
	UT_ASSERT_EQ(sb.version, GGA_SB_VERSION_CURRENT);
	UT_ASSERT_EQ(sb.region_shift, GGA_REGION_SHIFT_DEFAULT);
	UT_ASSERT_EQ(sb.member_state[0] | sb.member_state[1] | sb.member_state[2], 0);
	UT_ASSERT_EQ(gga_live_mask(disk), disk->all_mask);
	open_dev("R");
	CU_ASSERT(dev_read(3, 1, rd));
	CU_ASSERT(memcmp(rd, w, LBS) == 0);
	free(blk);
	ut_dev_close(&g_dev);
	gga_delete_sync("R");
	delete_members("R");
}

static void
test_generation_window(void)
{
	uint8_t w[LBS], rd[LBS], *blk;
	uint64_t old_limit, next;
	struct gga_disk *disk;
	struct ut_io r;
	struct gga_sb sb;

	make_members("N");
	disk = make_gga("N", 0);
	open_dev("N");
	fill_random(w, sizeof(w));

	/* Close to the end of the window: a write moves the window on. */
	next = __atomic_load_n(&disk->next_gen, __ATOMIC_RELAXED);
	disk->gen_limit = next + 10;
	old_limit = disk->gen_limit;
	CU_ASSERT(dev_write(0, 1, w));
	ut_poll_idle();
	UT_ASSERT_EQ(disk->gen_limit, old_limit + GGA_GEN_WINDOW);
	blk = malloc(disk->mbs);
	UT_ASSERT_EQ(member_rw(disk, 1, false, 0, 1, blk), 0);
	UT_ASSERT_EQ(gga_sb_decode(blk, MBS, &sb), 0);
	UT_ASSERT_EQ(sb.generation_epoch, disk->gen_limit);

	/* Window used up: the write waits for the superblocks, then completes. */
	next = __atomic_load_n(&disk->next_gen, __ATOMIC_RELAXED);
	disk->gen_limit = next;
	UT_ASSERT_EQ(ut_submit(&g_dev, BDEV_IO_TYPE_WRITE, w, 1, 1, &r), 0);
	UT_POLL_UNTIL(r.done);
	CU_ASSERT(r.success);
	CU_ASSERT(disk->gen_limit > old_limit);
	UT_ASSERT_EQ(frag_generation(disk, 2, 1), next);
	CU_ASSERT(dev_read(1, 1, rd));
	CU_ASSERT(memcmp(rd, w, LBS) == 0);
	free(blk);
	ut_dev_close(&g_dev);
	gga_delete_sync("N");
	delete_members("N");
}

/* ---------------------------------------------------------------------- */
/* Other I/O types                                                         */
/* ---------------------------------------------------------------------- */

static void
test_zeroes_unmap_flush_reset(void)
{
	uint8_t w[8 * LBS], rd[8 * LBS], *frag;
	struct bdev_gga_counters c0, c1;
	struct gga_frag_md md;
	struct gga_disk *disk;
	struct ut_io r;

	make_members("Z");
	disk = make_gga("Z", 0);
	open_dev("Z");
	fill_random(w, sizeof(w));
	CU_ASSERT(dev_write(0, 8, w));
	c0 = counters("Z");
	UT_ASSERT_EQ(ut_io_sync(&g_dev, BDEV_IO_TYPE_WRITE_ZEROES, NULL, 1, 2, &r), 0);
	CU_ASSERT(r.success);
	UT_ASSERT_EQ(ut_io_sync(&g_dev, BDEV_IO_TYPE_UNMAP, NULL, 5, 200, &r), 0);
	CU_ASSERT(r.success);
	c1 = counters("Z");
	UT_ASSERT_EQ(c1.zero_blocks - c0.zero_blocks, 202);
	UT_ASSERT_EQ(c1.writes - c0.writes, 2);
	CU_ASSERT(dev_read(0, 8, rd));
	CU_ASSERT(memcmp(rd, w, LBS) == 0);
	CU_ASSERT(mem_is_zero(rd + LBS, 2 * LBS));
	CU_ASSERT(memcmp(rd + 3 * LBS, w + 3 * LBS, 2 * LBS) == 0);
	CU_ASSERT(mem_is_zero(rd + 5 * LBS, 3 * LBS));
	/* On the members: the zero encoding with a generation, not blank blocks. */
	frag = malloc(disk->mbs);
	UT_ASSERT_EQ(member_rw(disk, 2, false, disk->data_offset + 6, 1, frag), 0);
	UT_ASSERT_EQ(gga_frag_md_decode(frag + MBS, 6, &md), 0);
	UT_ASSERT_EQ(md.encoding, GGA_ENC_ZERO);
	CU_ASSERT(md.generation > 0);
	free(frag);

	UT_ASSERT_EQ(ut_io_sync(&g_dev, BDEV_IO_TYPE_FLUSH, NULL, 0, NBLK, &r), 0);
	CU_ASSERT(r.success);
	UT_ASSERT_EQ(ut_io_sync(&g_dev, BDEV_IO_TYPE_RESET, NULL, 0, 0, &r), 0);
	CU_ASSERT(r.success);
	CU_ASSERT(dev_read(0, 1, rd));
	CU_ASSERT(memcmp(rd, w, LBS) == 0);
	ut_dev_close(&g_dev);
	gga_delete_sync("Z");
	delete_members("Z");
}

/*
 * More requests in flight than there are buffers: large requests fall back to
 * small buffers (smaller chunks), and beyond those the bdev layer queues and
 * resubmits (NOMEM). Everything completes, and the data is right.
 */
static void
test_buffer_pressure(void)
{
	enum { NW = 64, NR = GGA_SMALL_POOL_COUNT + 100 };
	uint8_t *w = malloc(256 * 4096), *rd = malloc((size_t)NR * 4096);
	struct ut_io *r = calloc(NR, sizeof(*r));
	struct create_res cr;
	int i, done;

	for (i = 1; i <= 3; i++) {
		char n[8];

		snprintf(n, sizeof(n), "U%d", i);
		make_malloc(n, 2048, 32, 32 + 256);
	}
	UT_ASSERT_EQ_FATAL(create3("U", "U1", "U2", "U3", 0, BDEV_GGA_MODE_AUTO, &cr), 0);
	open_dev("U");
	fill_random(w, 256 * 4096);
	/* 64 writes of 4 blocks (large buffers: there are 32) all at once. */
	for (i = 0; i < NW; i++) {
		UT_ASSERT_EQ(ut_submit(&g_dev, BDEV_IO_TYPE_WRITE, w + (size_t)i * 4 * 4096,
				       (uint64_t)i * 4, 4, &r[i]),
			     0);
	}
	UT_POLL_UNTIL(({
		done = 0;
		for (i = 0; i < NW; i++)
			done += r[i].done;
		done == NW;
	}));
	for (i = 0; i < NW; i++) {
		CU_ASSERT(r[i].done && r[i].success);
	}
	/* More single-block reads at once than there are small buffers. */
	for (i = 0; i < NR; i++) {
		UT_ASSERT_EQ(ut_submit(&g_dev, BDEV_IO_TYPE_READ, rd + (size_t)i * 4096,
				       (uint64_t)(i % 256), 1, &r[i]),
			     0);
	}
	UT_POLL_UNTIL(({
		done = 0;
		for (i = 0; i < NR; i++)
			done += r[i].done;
		done == NR;
	}));
	for (i = 0; i < NR; i++) {
		CU_ASSERT(r[i].done && r[i].success);
		CU_ASSERT(memcmp(rd + (size_t)i * 4096, w + (size_t)(i % 256) * 4096, 4096) == 0);
	}
	ut_dev_close(&g_dev);
	gga_delete_sync("U");
	delete_members("U");
	free(w);
	free(rd);
	free(r);
}

/*
 * Writes, and the repair of a read, wait for the range lock: hold a block's
 * bit from the test (as another writer would) and watch them wait and go on.
 */
static void
test_lock_waits(void)
{
	uint8_t w[LBS], w2[LBS], rd[LBS], chk[LBS];
	struct bdev_gga_counters c0, c1;
	struct gga_disk *disk;
	struct ut_io rw, rr;
	int i;

	make_members("L");
	disk = make_gga("L", 0);
	open_dev("L");
	fill_random(w, LBS);
	CU_ASSERT(dev_write(50, 1, w));

	CU_ASSERT_FATAL(gga_lock_try(disk, 50, 1));
	/* Another block that hashes to the same bit waits too: the lock is by bit. */
	CU_ASSERT(!gga_lock_try(disk, 50 + GGA_LOCK_BITS, 1));
	fill_random(w2, LBS);
	UT_ASSERT_EQ(ut_submit(&g_dev, BDEV_IO_TYPE_WRITE, w2, 50, 1, &rw), 0);
	for (i = 0; i < 50; i++) {
		ut_poll_once();
	}
	CU_ASSERT(!rw.done);
	gga_lock_release(disk, 50, 1);
	UT_POLL_UNTIL(rw.done);
	CU_ASSERT(rw.success);

	/* A corrupt half: the read decodes, then waits for the lock to repair it. */
	flip(disk, 0, 50, 7, 0x80);
	c0 = counters("L");
	CU_ASSERT_FATAL(gga_lock_try(disk, 50, 1));
	UT_ASSERT_EQ(ut_submit(&g_dev, BDEV_IO_TYPE_READ, rd, 50, 1, &rr), 0);
	for (i = 0; i < 50; i++) {
		ut_poll_once();
	}
	CU_ASSERT(!rr.done);
	gga_lock_release(disk, 50, 1);
	UT_POLL_UNTIL(rr.done);
	CU_ASSERT(rr.success);
	CU_ASSERT(memcmp(rd, w2, LBS) == 0);
	c1 = counters("L");
	UT_ASSERT_EQ(c1.repairs_written - c0.repairs_written, 1);
	UT_ASSERT_EQ(check_consistent(disk, 50, NULL, chk), 0);
	ut_dev_close(&g_dev);
	gga_delete_sync("L");
	delete_members("L");
}

/* Overlapping writes from two threads: each block ends up wholly one of them. */
static void
test_concurrent_overlap(void)
{
	uint8_t *a = malloc(20 * LBS), *b = malloc(20 * LBS), *rd = malloc(20 * LBS);
	uint8_t chk[LBS];
	struct ut_dev dev2;
	struct gga_disk *disk;
	struct ut_io ra, rb;
	int round, blk;

	make_members("O");
	disk = make_gga("O", 0);
	open_dev("O");
	UT_ASSERT_EQ_FATAL(ut_dev_open(&dev2, "O", g_ut_app), 0);
	for (round = 0; round < 8; round++) {
		fill_random(a, 20 * LBS);
		fill_random(b, 20 * LBS);
		/* A covers 0..9 (or 0..19), B covers 5..14: both in flight at once. */
		UT_ASSERT_EQ(ut_submit(&g_dev, BDEV_IO_TYPE_WRITE, a, 0, round % 2 ? 20 : 10, &ra),
			     0);
		UT_ASSERT_EQ(ut_submit(&dev2, BDEV_IO_TYPE_WRITE, b + 5 * LBS, 5, 10, &rb), 0);
		UT_POLL_UNTIL(ra.done && rb.done);
		CU_ASSERT(ra.success && rb.success);
		CU_ASSERT(dev_read(0, 20, rd));
		for (blk = 0; blk < 20; blk++) {
			const uint8_t *got = rd + blk * LBS;
			bool in_a = blk < (round % 2 ? 20 : 10), in_b = blk >= 5 && blk < 15;

			CU_ASSERT((in_a && memcmp(got, a + blk * LBS, LBS) == 0) ||
				  (in_b && memcmp(got, b + blk * LBS, LBS) == 0) ||
				  (!in_a && !in_b));
			UT_ASSERT_EQ(check_consistent(disk, (uint64_t)blk, NULL, chk), 0);
		}
	}
	ut_dev_close(&dev2);
	ut_dev_close(&g_dev);
	gga_delete_sync("O");
	delete_members("O");
	free(a);
	free(b);
	free(rd);
}

/* ---------------------------------------------------------------------- */
/* RPC                                                                     */
/* ---------------------------------------------------------------------- */

static void
test_rpc(void)
{
	json_t *resp, *res, *g, *config, *entry;
	struct bdev *bdev;
	uint8_t w[2 * LBS], rd[2 * LBS];
	char uuid[40];

	make_members("Q");
	resp = ut_rpc_call("bdev_gga_create",
			   "{\"name\": \"Q\", \"data_1\": \"Q1\", "
			   "\"data_2\": \"Q2\", \"parity\": \"Q3\", \"matrix_type\": \"cauchy\", "
			   "\"recovery_read_every_n\": 4}");
	CU_ASSERT_FATAL(resp != NULL);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(resp, "result")), "Q");
	json_decref(resp);

	resp = ut_rpc_call("bdev_gga_get_info", "{\"name\": \"Q\"}");
	res = json_object_get(resp, "result");
	UT_ASSERT_EQ_FATAL(json_array_size(res), 1);
	g = json_array_get(res, 0);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(g, "matrix_type")), "cauchy");
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(g, "layout")), "fixed");
	UT_ASSERT_EQ(json_integer_value(json_object_get(g, "recovery_read_every_n")), 4);
	UT_ASSERT_EQ(json_integer_value(json_object_get(g, "block_size")), LBS);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(g, "state")), "online");
	UT_ASSERT_STR_EQ(json_string_value(
				 json_object_get(json_array_get(json_object_get(g, "members"), 2),
						 "role")),
			 "parity");
	CU_ASSERT(json_object_get(json_object_get(g, "counters"), "repairs_written") != NULL);
	CU_ASSERT(json_integer_value(
			  json_object_get(json_object_get(g, "counters"), "generation")) > 0);
	json_decref(resp);
	resp = ut_rpc_call("bdev_gga_get_info", NULL);
	UT_ASSERT_EQ(json_array_size(json_object_get(resp, "result")), 1);
	json_decref(resp);

	UT_ASSERT_EQ(ut_rpc_code("bdev_gga_get_info", "{\"name\": \"Q1\"}"), -ENODEV);
	UT_ASSERT_EQ(ut_rpc_code("bdev_gga_create", "{\"name\": \"Q\"}"), RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_EQ(ut_rpc_code("bdev_gga_create",
				 "{\"name\": \"x\", \"data_1\": \"Q1\", "
				 "\"data_2\": \"Q2\", \"parity\": \"Q3\", \"mode\": \"maybe\"}"),
		     RPC_ERROR_INVALID_PARAMS);
	/* The layout: one of the two names; packed is refused for now. */
	UT_ASSERT_EQ(ut_rpc_code("bdev_gga_create",
				 "{\"name\": \"x\", \"data_1\": \"Q1\", "
				 "\"data_2\": \"Q2\", \"parity\": \"Q3\", \"layout\": \"log\"}"),
		     RPC_ERROR_INVALID_PARAMS);
	resp = ut_rpc_call("bdev_gga_create", "{\"name\": \"x\", \"data_1\": \"Q1\", "
					      "\"data_2\": \"Q2\", \"parity\": \"Q3\", "
					      "\"layout\": \"packed\"}");
	UT_ASSERT_EQ(ut_rpc_error_code(resp), RPC_ERROR_INVALID_PARAMS);
	CU_ASSERT(strstr(ut_rpc_error_message(resp), "layout: 'packed' is not yet supported") !=
		  NULL);
	json_decref(resp);
	/* With fewer than k bases that exist there is nothing to assemble. */
	resp = ut_rpc_call("bdev_gga_create", "{\"name\": \"x\", \"data_1\": \"nope\", "
					      "\"data_2\": \"nope2\", \"parity\": \"nope3\"}");
	UT_ASSERT_EQ(ut_rpc_error_code(resp), -ENODEV);
	CU_ASSERT(strstr(ut_rpc_error_message(resp), "data_1 'nope': base bdev does not exist") !=
		  NULL);
	json_decref(resp);
	resp = ut_rpc_call("bdev_gga_create", "{\"name\": \"x\", \"data_1\": \"Q1\", "
					      "\"data_2\": \"Q2\", \"parity\": \"Q3\"}");
	UT_ASSERT_EQ(ut_rpc_error_code(resp), -EPERM);
	CU_ASSERT(strstr(ut_rpc_error_message(resp), "claimed") != NULL);
	json_decref(resp);
	CU_ASSERT(bdev_get_by_name("x") == NULL);

	/* save_config's entry recreates it: same uuid, same data. */
	bdev = bdev_get_by_name("Q");
	snprintf(uuid, sizeof(uuid), "%s", bdev_get_uuid_str(bdev));
	open_dev("Q");
	fill_random(w, sizeof(w));
	CU_ASSERT(dev_write(7, 2, w));
	ut_dev_close(&g_dev);
	/* An unsigned 32-bit option past 2^31 is written as it is (found by the RPC fuzzer). */
	UT_ASSERT_EQ(ut_rpc_code("bdev_gga_set_options", "{\"name\": \"Q\", "
							 "\"rebuild_rate_mib_s\": 4294967295}"),
		     0);
	entry = ut_bdev_config(bdev);
	CU_ASSERT_FATAL(entry != NULL);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(entry, "method")), "bdev_gga_create");
	UT_ASSERT_EQ(json_integer_value(json_object_get(json_object_get(entry, "params"),
							"rebuild_rate_mib_s")),
		     4294967295LL);
	UT_ASSERT_EQ(ut_rpc_code("bdev_gga_delete", "{\"name\": \"Q\"}"), 0);
	UT_ASSERT_EQ(ut_rpc_code("bdev_gga_delete", "{\"name\": \"Q\"}"), -ENODEV);
	UT_ASSERT_EQ(ut_rpc_replay(entry), 0);
	json_decref(entry);
	bdev = bdev_get_by_name("Q");
	CU_ASSERT_FATAL(bdev != NULL);
	UT_ASSERT_STR_EQ(bdev_get_uuid_str(bdev), uuid);
	UT_ASSERT_EQ(((struct gga_disk *)bdev->ctxt)->matrix, GGA_MATRIX_CAUCHY);
	UT_ASSERT_EQ(((struct gga_disk *)bdev->ctxt)->recovery_read_every_n, 4);
	UT_ASSERT_EQ(((struct gga_disk *)bdev->ctxt)->rebuild_rate, UINT32_MAX);
	open_dev("Q");
	CU_ASSERT(dev_read(7, 2, rd));
	CU_ASSERT(memcmp(rd, w, sizeof(w)) == 0);
	ut_dev_close(&g_dev);

	/* The whole subsystem configuration lists it after its bases. */
	config = json_array();
	bdev_subsystem_config_json(config);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(json_array_get(config, 3), "method")),
			 "bdev_gga_create");
	json_decref(config);

	UT_ASSERT_EQ(ut_rpc_code("bdev_gga_delete", "{\"name\": \"Q\"}"), 0);
	delete_members("Q");
}

/* ---------------------------------------------------------------------- */
/* Two fronts: members that can be fenced                                  */
/* ---------------------------------------------------------------------- */

/*
 * A member with NVMe reservations, for the tests of the front shell
 * (bdev_gga_front.c): "R_<base>" passes block I/O through to a malloc base
 * and keeps the reservations of one namespace as the target does (its pure
 * module, target/nvmf_resv.c, built in). bdev_nvme_reservation() commands
 * run as host RESV_HOST_A, the front under test, and block I/O that the
 * reservation forbids that host fails with Reservation Conflict (-EBADE).
 * The test plays the other front by calling the module as RESV_HOST_B. With
 * `hold` set, A's reservation commands wait unanswered (a member slow to
 * answer them) until resv_release_held() carries them out.
 */
#define RESV_MAX_HELD 8

static const uint8_t RESV_HOST_A[NVMF_RESV_HOSTID_LEN] = { 0xa };
static const uint8_t RESV_HOST_B[NVMF_RESV_HOSTID_LEN] = { 0xb };

struct resv_member {
	/* The io_device of its channels: the bdev (the layer's own) is not its first field. */
	struct bdev_desc *base_desc;
	struct bdev *base;
	struct bdev bdev;
	struct nvmf_resv resv;
	bool hold;
	uint32_t fail_reads; /* the next block reads that fail (a member lost for a moment) */
	uint32_t nheld;
	struct bdev_io *held[RESV_MAX_HELD];
};

struct resv_channel {
	struct io_channel *base_ch;
};

static struct bdev_module g_resv_module = { .name = "ut_resv" };

static int
resv_run(struct resv_member *rm, const struct bdev_nvme_resv_cmd *c)
{
	switch (c->op) {
	case BDEV_NVME_RESV_REGISTER:
		return nvmf_resv_register(&rm->resv, RESV_HOST_A, 1, c->action, c->iekey, c->cptpl,
					  c->crkey, c->nrkey, NULL);
	case BDEV_NVME_RESV_ACQUIRE:
		return nvmf_resv_acquire(&rm->resv, RESV_HOST_A, c->action, c->iekey, c->rtype,
					 c->crkey, c->nrkey, NULL);
	case BDEV_NVME_RESV_RELEASE:
		return nvmf_resv_release(&rm->resv, RESV_HOST_A, c->action, c->iekey, c->rtype,
					 c->crkey, NULL);
	default:
		return nvmf_resv_report(&rm->resv, true, c->buf, c->len);
	}
}

static void
resv_base_done(struct bdev_io *base_io, bool success, void *cb_arg)
{
	struct bdev_io *io = cb_arg;

	bdev_free_io(base_io);
	bdev_io_complete(io, success ? BDEV_IO_STATUS_SUCCESS : BDEV_IO_STATUS_FAILED);
}

static void
resv_submit(struct io_channel *ch, struct bdev_io *io)
{
	struct resv_member *rm = io->bdev->ctxt;
	struct resv_channel *rch = io_channel_get_ctx(ch);
	int rc;

	switch (io->type) {
	case BDEV_IO_TYPE_NVME_RESV:
		if (rm->hold && rm->nheld < RESV_MAX_HELD) {
			rm->held[rm->nheld++] = io;
		} else {
			bdev_io_complete_nvme_status(io, NVME_SCT_GENERIC,
						     resv_run(rm, &io->u.resv));
		}
		return;
	case BDEV_IO_TYPE_RESET:
		bdev_io_complete(io, BDEV_IO_STATUS_SUCCESS);
		return;
	default:
		break;
	}
	/* Every command of the namespace's data but a read counts as a write (the target's table). */
	if (nvmf_resv_check(&rm->resv, RESV_HOST_A, io->type != BDEV_IO_TYPE_READ) !=
	    NVME_SC_SUCCESS) {
		bdev_io_complete_nvme_status(io, NVME_SCT_GENERIC, NVME_SC_RESERVATION_CONFLICT);
		return;
	}
	if (io->type == BDEV_IO_TYPE_READ && rm->fail_reads > 0) {
		rm->fail_reads--;
		bdev_io_complete(io, BDEV_IO_STATUS_FAILED);
		return;
	}
	switch (io->type) {
	case BDEV_IO_TYPE_READ:
		rc = bdev_readv_blocks(rm->base_desc, rch->base_ch, io->u.iovs, io->u.iovcnt,
				       io->u.offset_blocks, io->u.num_blocks, resv_base_done, io);
		break;
	case BDEV_IO_TYPE_WRITE:
		rc = bdev_writev_blocks(rm->base_desc, rch->base_ch, io->u.iovs, io->u.iovcnt,
					io->u.offset_blocks, io->u.num_blocks, resv_base_done, io);
		break;
	case BDEV_IO_TYPE_FLUSH:
		rc = bdev_flush_blocks(rm->base_desc, rch->base_ch, io->u.offset_blocks,
				       io->u.num_blocks, resv_base_done, io);
		break;
	case BDEV_IO_TYPE_UNMAP:
		rc = bdev_unmap_blocks(rm->base_desc, rch->base_ch, io->u.offset_blocks,
				       io->u.num_blocks, resv_base_done, io);
		break;
	case BDEV_IO_TYPE_WRITE_ZEROES:
		rc = bdev_write_zeroes_blocks(rm->base_desc, rch->base_ch, io->u.offset_blocks,
					      io->u.num_blocks, resv_base_done, io);
		break;
	default:
		rc = -ENOTSUP;
		break;
	}
	if (rc != 0) {
		bdev_io_complete(io, rc == -ENOMEM ? BDEV_IO_STATUS_NOMEM : BDEV_IO_STATUS_FAILED);
	}
}

static bool
resv_io_type_supported(void *ctxt, enum bdev_io_type type)
{
	struct resv_member *rm = ctxt;

	return type == BDEV_IO_TYPE_NVME_RESV || type == BDEV_IO_TYPE_RESET ||
	       bdev_io_type_supported(rm->base, type);
}

static struct io_channel *
resv_get_io_channel(void *ctxt)
{
	return io_channel_get(ctxt);
}

static void
resv_unregistered(void *io_device)
{
	struct resv_member *rm = io_device;

	bdev_module_release_bdev(rm->base);
	bdev_close(rm->base_desc);
	bdev_destruct_done(&rm->bdev, 0);
	free(rm->bdev.name);
	free(rm);
}

static int
resv_destruct(void *ctxt)
{
	io_device_unregister(ctxt, resv_unregistered);
	return 1;
}

static const struct bdev_fn_table g_resv_fn_table = {
	.destruct = resv_destruct,
	.submit_request = resv_submit,
	.io_type_supported = resv_io_type_supported,
	.get_io_channel = resv_get_io_channel,
};

static int
resv_channel_create(void *io_device, void *ctx_buf)
{
	struct resv_member *rm = io_device;
	struct resv_channel *rch = ctx_buf;

	rch->base_ch = bdev_get_io_channel(rm->base_desc);
	return rch->base_ch != NULL ? 0 : -ENOMEM;
}

static void
resv_channel_destroy(void *io_device, void *ctx_buf)
{
	struct resv_channel *rch = ctx_buf;

	(void)io_device;
	io_channel_put(rch->base_ch);
}

static void
resv_base_event(enum bdev_event_type type, struct bdev *bdev, void *ctx)
{
	(void)type;
	(void)bdev;
	(void)ctx;
}

/* "R_<base>" over the malloc bdev `base`, nobody registered. */
static struct resv_member *
resv_member_create(const char *base)
{
	struct resv_member *rm = calloc(1, sizeof(*rm));

	CU_ASSERT_FATAL(rm != NULL);
	CU_ASSERT_FATAL(asprintf(&rm->bdev.name, "R_%s", base) > 0);
	UT_ASSERT_EQ_FATAL(bdev_open(base, true, resv_base_event, rm, &rm->base_desc), 0);
	rm->base = bdev_desc_get_bdev(rm->base_desc);
	UT_ASSERT_EQ_FATAL(bdev_module_claim_bdev(rm->base, rm->base_desc, &g_resv_module), 0);
	rm->bdev.product_name = "Reservation test disk";
	rm->bdev.block_size = bdev_get_block_size(rm->base);
	rm->bdev.md_size = bdev_get_md_size(rm->base);
	rm->bdev.num_blocks = bdev_get_num_blocks(rm->base);
	rm->bdev.buf_align = bdev_get_buf_align(rm->base);
	rm->bdev.ctxt = rm;
	rm->bdev.fn_table = &g_resv_fn_table;
	rm->bdev.module = &g_resv_module;
	nvmf_resv_init(&rm->resv);
	io_device_register(rm, resv_channel_create, resv_channel_destroy,
			   sizeof(struct resv_channel), rm->bdev.name);
	UT_ASSERT_EQ_FATAL(bdev_register(&rm->bdev), 0);
	return rm;
}

static void
resv_member_delete(struct resv_member *rm)
{
	struct ut_cpl cpl = { 0 };

	bdev_unregister(&rm->bdev, ut_cpl_done, &cpl);
	UT_POLL_UNTIL(cpl.done);
	CU_ASSERT(cpl.done);
}

/* Carry out A's held reservation commands, in order, and answer them. */
static void
resv_release_held(struct resv_member *rm)
{
	uint32_t i, n = rm->nheld;

	rm->hold = false;
	rm->nheld = 0;
	for (i = 0; i < n; i++) {
		bdev_io_complete_nvme_status(rm->held[i], NVME_SCT_GENERIC,
					     resv_run(rm, &rm->held[i]->u.resv));
	}
	ut_poll_idle();
}

/* Write the member's base bdev directly, past its reservations (what another front did). */
static int
resv_base_write(struct resv_member *rm, uint64_t mlba, uint32_t n, void *buf)
{
	return desc_rw(rm->base_desc, true, mlba, n, buf);
}

/* The key of the member's holder, 0 if nobody holds it. */
static uint64_t
resv_holder_key(const struct resv_member *rm)
{
	uint32_t j;

	for (j = 0; j < rm->resv.nregs && rm->resv.type != NVMF_RESV_NONE; j++) {
		if (memcmp(rm->resv.regs[j].hostid, rm->resv.holder, NVMF_RESV_HOSTID_LEN) == 0) {
			return rm->resv.regs[j].key;
		}
	}
	return 0;
}

/* The other front (B) preempts the holder's key it read, as a standby whose lease lapsed. */
static void
resv_other_front_takes(struct resv_member *rm, uint64_t key)
{
	uint64_t seen = resv_holder_key(rm);

	CU_ASSERT_FATAL(seen != 0);
	UT_ASSERT_EQ(nvmf_resv_register(&rm->resv, RESV_HOST_B, 2, NVMF_RESV_REPLACE, true, 0, 0,
					key, NULL),
		     NVME_SC_SUCCESS);
	UT_ASSERT_EQ(nvmf_resv_acquire(&rm->resv, RESV_HOST_B, NVMF_RESV_PREEMPT_ABORT, false,
				       GGA_FRONT_RTYPE, key, seen, NULL),
		     NVME_SC_SUCCESS);
	CU_ASSERT(nvmf_resv_is_holder(&rm->resv, RESV_HOST_B));
	CU_ASSERT(!nvmf_resv_is_registered(&rm->resv, RESV_HOST_A));
}

/* The front's role as bdev_gga_get_info tells it (static strings). */
static const char *
front_role(const char *name, const char **reason)
{
	struct bdev_gga_info info;
	const char *role;

	get_info(name, &info);
	role = info.role;
	if (reason != NULL) {
		*reason = info.role_reason;
	}
	bdev_gga_info_clear(&info);
	return role != NULL ? role : "";
}

/* Poll every thread for `ms` milliseconds. */
static void
poll_for_ms(uint32_t ms)
{
	uint64_t end = time_now_ns() + ms * 1000000ull;

	while (time_now_ns() < end) {
		ut_poll_once();
	}
}

/*
 * The members of a front test: malloc bases <p>1..<p>3, reservation members
 * R_<p>1..R_<p>3 over them, and the options of front 1 of the shared array
 * <p> over them (lease 800 ms). The strings live until the next call.
 */
static void
front_members_make(char p, const char *uuid, struct resv_member **rm, struct bdev_gga_opts *opts)
{
	static char name[2], members[3][12];
	char base[8];
	uint32_t i;

	name[0] = p;
	for (i = 0; i < 3; i++) {
		snprintf(base, sizeof(base), "%c%u", p, i + 1);
		make_malloc(base, MBS, MD, MEMBER_BLOCKS);
		rm[i] = resv_member_create(base);
		snprintf(members[i], sizeof(members[i]), "R_%s", base);
	}
	bdev_gga_opts_init(opts);
	opts->name = name;
	for (i = 0; i < 3; i++) {
		opts->members[i] = members[i];
	}
	opts->uuid = uuid;
	opts->front_id = 1;
	opts->lease_ms = 800;
}

/* The end of a front test: the reservation members of `live` and the three bases. */
static void
front_members_delete(char p, struct resv_member **rm, uint32_t live)
{
	char base[8];
	uint32_t i;

	for (i = 0; i < 3; i++) {
		if (live & (1u << i)) {
			resv_member_delete(rm[i]);
		}
		snprintf(base, sizeof(base), "%c%u", p, i + 1);
		malloc_delete_sync(base);
	}
}

/*
 * DESIGN 1.5 and 1.8: an active front that meets Reservation Conflict on a
 * member I/O steps down at once, not when its lease lapses. Front 1 (lease
 * 800 ms, the preferred one) takes three blank members, formats and serves
 * them. The other front then preempts its key on every member, and the
 * members answer none of front 1's reservation commands any more (its
 * renewals stay out: nothing but the conflict on I/O tells it). A write
 * fails with the conflict, and is not acknowledged; the front must stop
 * serving at once and step down as fenced by the I/O at its next poll
 * (lease / 8), well within the lease, failing no member. Kills the shell
 * not passing front_fenced to the module (shell-conflict-ignored): the
 * front stays active until its lease lapses, and steps down for that.
 *
 * Then the way back (issue 32): once the commands held are answered, the
 * disk lets go of its assembly and the front stands by. While it stood down
 * the other front blanked member 3 (a replaced disk, say). The other front
 * never renews: front 1 takes the members over again after a lease and
 * assembles them afresh: member 3 is found blank and rebuilt (its old view
 * had it online), the blocks written before the fence read back, and the
 * array serves again. Before, it stayed stepped down until the bdev was
 * created again.
 */
static void
test_front_fenced_on_io(void)
{
	struct resv_member *rm[3];
	struct bdev_gga_opts opts;
	struct bdev_gga_info info;
	struct gga_disk *disk;
	struct create_res r;
	uint8_t a[4 * LBS], a0[4 * LBS], rd[4 * LBS];
	const char *reason = NULL;
	uint64_t t0, took_ms;
	uint8_t *zeros;
	uint32_t i;

	front_members_make('K', "5c0ffee5-0b5e-4a7d-9c1e-2f3a4b5c6d7e", rm, &opts);
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
	disk = r.bdev->ctxt;

	/* The preferred front takes the members nobody holds, formats them and serves. */
	UT_POLL_UNTIL(__atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE));
	CU_ASSERT_FATAL(__atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE));
	get_info("K", &info);
	UT_ASSERT_STR_EQ(info.role, "active");
	CU_ASSERT(info.serving);
	UT_ASSERT_EQ(info.members_held, 3);
	bdev_gga_info_clear(&info);
	for (i = 0; i < 3; i++) {
		CU_ASSERT(nvmf_resv_is_holder(&rm[i]->resv, RESV_HOST_A));
	}
	open_dev("K");
	fill_random(a, sizeof(a));
	CU_ASSERT(dev_write(0, 4, a));
	CU_ASSERT(dev_read(0, 4, rd));
	CU_ASSERT(memcmp(rd, a, sizeof(a)) == 0);
	memcpy(a0, a, sizeof(a0));

	/* The other front takes every member; front 1's renewals go unanswered from now on. */
	for (i = 0; i < 3; i++) {
		rm[i]->hold = true;
		resv_other_front_takes(rm[i], gga_front_key(2, 1));
	}
	t0 = time_now_ns();
	fill_random(a, sizeof(a));
	CU_ASSERT(!dev_write(0, 4, a));
	CU_ASSERT(!__atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE));

	/*
	 * It steps down as fenced at its next poll (every lease / 8), not a
	 * lease later: the role is looked at every millisecond.
	 */
	while (strcmp(front_role("K", NULL), "stepped_down") != 0 &&
	       time_now_ns() - t0 < UT_TIMEOUT_NS) {
		poll_for_ms(1);
	}
	took_ms = (time_now_ns() - t0) / 1000000;
	UT_ASSERT_STR_EQ(front_role("K", &reason), "stepped_down");
	UT_ASSERT_STR_EQ(reason, "fenced: a member refused an I/O");
	CU_ASSERT(took_ms < opts.lease_ms / 2);
	printf("\n  stepped down %" PRIu64 " ms after the conflict (lease %u ms)\n", took_ms,
	       opts.lease_ms);
	get_info("K", &info);
	CU_ASSERT(!info.serving);
	for (i = 0; i < 3; i++) {
		/* A fence is no member failure. */
		UT_ASSERT_EQ(info.members[i].state, BDEV_GGA_MEMBER_ONLINE);
	}
	bdev_gga_info_clear(&info);
	CU_ASSERT(!dev_read(0, 4, rd));
	/* Letting go of its assembly, it takes no change of the array (issue 32). */
	UT_ASSERT_EQ(rpc_refused("bdev_gga_scrub", "{\"name\": \"K\", \"action\": \"start\"}",
				 "gga bdev 'K' is not assembled: this front stepped down"),
		     -EAGAIN);

	/* The other front blanks member 3's reserved region, then goes quiet. */
	/* Blocks with their metadata interleaved: mbs bytes each. */
	zeros = calloc(disk->data_offset, disk->mbs);
	CU_ASSERT_FATAL(zeros != NULL);
	UT_ASSERT_EQ(resv_base_write(rm[2], 0, (uint32_t)disk->data_offset, zeros), 0);
	free(zeros);
	/* Its commands answered, the disk lets go of the assembly: the front stands by. */
	for (i = 0; i < 3; i++) {
		resv_release_held(rm[i]);
	}
	UT_POLL_UNTIL(strcmp(front_role("K", NULL), "standby") == 0);
	UT_ASSERT_STR_EQ(front_role("K", NULL), "standby");
	/* The other front's lease lapses: front 1 takes over and assembles afresh. */
	UT_POLL_UNTIL(__atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE));
	CU_ASSERT_FATAL(__atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE));
	UT_ASSERT_STR_EQ(front_role("K", NULL), "active");
	for (i = 0; i < 3; i++) {
		CU_ASSERT(nvmf_resv_is_holder(&rm[i]->resv, RESV_HOST_A));
	}
	get_info("K", &info);
	/* Found blank, not taken as in sync: rebuilt (or still being). */
	CU_ASSERT(info.members[2].state != BDEV_GGA_MEMBER_ONLINE ||
		  (info.last_recovery.rebuild && (info.last_recovery.members & 4u)));
	bdev_gga_info_clear(&info);
	CU_ASSERT(dev_read(0, 4, rd));
	CU_ASSERT(memcmp(rd, a0, sizeof(a0)) == 0);
	UT_POLL_UNTIL(gga_member_state(&disk->members[2]) == BDEV_GGA_MEMBER_ONLINE);
	UT_ASSERT_EQ(gga_member_state(&disk->members[2]), BDEV_GGA_MEMBER_ONLINE);
	fill_random(a, sizeof(a));
	CU_ASSERT(dev_write(4, 4, a));
	CU_ASSERT(dev_read(4, 4, rd));
	CU_ASSERT(memcmp(rd, a, sizeof(a)) == 0);
	CU_ASSERT(dev_read(0, 4, rd));
	CU_ASSERT(memcmp(rd, a0, sizeof(a0)) == 0);

	ut_dev_close(&g_dev);
	gga_delete_sync("K");
	front_members_delete('K', rm, 7);
}

/* Front 1 (key of epoch `epoch` for front 2) fenced by the other front; back to standby. */
static void
front_fenced_to_standby(const char *name, struct gga_disk *disk, struct resv_member **rm,
			uint32_t n, uint32_t epoch)
{
	uint8_t a[LBS];
	uint32_t i;

	for (i = 0; i < n; i++) {
		rm[i]->hold = true;
		resv_other_front_takes(rm[i], gga_front_key(2, epoch));
	}
	fill_random(a, sizeof(a));
	CU_ASSERT(!dev_write(0, 1, a));
	CU_ASSERT(!__atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE));
	UT_POLL_UNTIL(strcmp(front_role(name, NULL), "stepped_down") == 0);
	for (i = 0; i < n; i++) {
		resv_release_held(rm[i]);
	}
	UT_POLL_UNTIL(strcmp(front_role(name, NULL), "standby") == 0);
	UT_ASSERT_STR_EQ(front_role(name, NULL), "standby");
}

/*
 * Members' bases that go away while a front stands by (issue 34's stay-up
 * leftover of 32). Front 1 serves, is fenced and stands by; meanwhile the
 * targets of data_2 and parity restart (their bases are removed and come
 * back, nobody registered). When the other front's lease lapses, front 1
 * takes all three and serves with every member online: the bases that came
 * back were opened while it stood by. Fenced again, parity's base goes and
 * stays away: front 1 takes over and serves degraded. Before, a base
 * removed while standing by failed every assembly ("was removed during
 * creation") and a front that let go of an assembly never opened a base
 * that appeared: the front never served again.
 */
static void
test_front_base_gone_while_standby(void)
{
	struct resv_member *rm[3];
	struct bdev_gga_opts opts;
	struct bdev_gga_info info;
	struct gga_disk *disk;
	struct create_res r;
	uint8_t a[8 * LBS], rd[8 * LBS];
	uint32_t i;

	front_members_make('H', "5c0ffee5-0b5e-4a7d-9c1e-2f3a4b5c6d81", rm, &opts);
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
	disk = r.bdev->ctxt;
	UT_POLL_UNTIL(__atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE));
	CU_ASSERT_FATAL(__atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE));
	open_dev("H");
	fill_random(a, sizeof(a));
	CU_ASSERT(dev_write(8, 8, a));

	front_fenced_to_standby("H", disk, rm, 3, 1);
	resv_member_delete(rm[1]);
	resv_member_delete(rm[2]);
	poll_for_ms(300);
	rm[1] = resv_member_create("H2");
	rm[2] = resv_member_create("H3");
	UT_POLL_UNTIL(__atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE));
	CU_ASSERT_FATAL(__atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE));
	get_info("H", &info);
	CU_ASSERT(info.assembled);
	for (i = 0; i < 3; i++) {
		UT_ASSERT_EQ(info.members[i].state, BDEV_GGA_MEMBER_ONLINE);
	}
	bdev_gga_info_clear(&info);
	CU_ASSERT(dev_read(8, 8, rd));
	CU_ASSERT(memcmp(rd, a, sizeof(a)) == 0);

	front_fenced_to_standby("H", disk, rm, 3, 2);
	resv_member_delete(rm[2]);
	UT_POLL_UNTIL(__atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE));
	CU_ASSERT_FATAL(__atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE));
	get_info("H", &info);
	UT_ASSERT_EQ(info.state, BDEV_GGA_DEGRADED);
	UT_ASSERT_EQ(info.members[2].state, BDEV_GGA_MEMBER_ABSENT);
	bdev_gga_info_clear(&info);
	memset(rd, 0, sizeof(rd));
	CU_ASSERT(dev_read(8, 8, rd));
	CU_ASSERT(memcmp(rd, a, sizeof(a)) == 0);

	ut_dev_close(&g_dev);
	gga_delete_sync("H");
	front_members_delete('H', rm, 3);
}

/*
 * Issue 32 case 6: an assembly that fails part-way is tried again. Front 1
 * takes three blank members; member 2's read of its superblock fails once
 * (the member lost for a moment just after the takeover). The assembly
 * fails, and the shell assembles again after its back-off (100 ms) instead
 * of holding the members without serving for good: the front formats them
 * and serves. Before, `failed` was set and the front never served.
 */
static void
test_front_assembly_retried(void)
{
	struct resv_member *rm[3];
	struct bdev_gga_opts opts;
	struct bdev_gga_info info;
	struct gga_disk *disk;
	struct create_res r;
	uint8_t a[4 * LBS], rd[4 * LBS];
	uint64_t t0;

	front_members_make('F', "5c0ffee5-0b5e-4a7d-9c1e-2f3a4b5c6d7f", rm, &opts);
	rm[1]->fail_reads = 1;
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
	disk = r.bdev->ctxt;

	t0 = time_now_ns();
	while (!__atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE) &&
	       time_now_ns() - t0 < UT_TIMEOUT_NS) {
		poll_for_ms(1);
	}
	UT_ASSERT_EQ(rm[1]->fail_reads, 0);
	CU_ASSERT_FATAL(__atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE));
	get_info("F", &info);
	UT_ASSERT_STR_EQ(info.role, "active");
	CU_ASSERT(info.serving && info.assembled);
	UT_ASSERT_EQ(info.members_held, 3);
	bdev_gga_info_clear(&info);
	open_dev("F");
	fill_random(a, sizeof(a));
	CU_ASSERT(dev_write(0, 4, a));
	CU_ASSERT(dev_read(0, 4, rd));
	CU_ASSERT(memcmp(rd, a, sizeof(a)) == 0);
	ut_dev_close(&g_dev);
	gga_delete_sync("F");
	front_members_delete('F', rm, 7);
}

/*
 * Issue 32, case 4, for a front: restarted while two of its three members'
 * bases are down. Without wait_for_members it is refused as before; with it
 * (save_config writes it for a front too) it is registered, does not serve,
 * and opens the bases as they appear: once two answer it takes their
 * reservations, assembles and serves, every block written before reads
 * back. With no base at all it is registered from the members' geometry
 * given, and serves once they are back. Before, the create was refused
 * ("fewer than 2 members do"), and a front's retries never opened a base
 * that appeared later.
 */
static void
test_front_waits_for_members(void)
{
	struct resv_member *rm[3];
	struct bdev_gga_opts opts;
	struct bdev_gga_info info;
	struct gga_disk *disk;
	struct create_res r;
	uint8_t a[8 * LBS], rd[8 * LBS];
	json_t *entry;
	char base[8];
	uint64_t t0;
	uint32_t i;

	front_members_make('G', "5c0ffee5-0b5e-4a7d-9c1e-2f3a4b5c6d80", rm, &opts);
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
	disk = r.bdev->ctxt;
	t0 = time_now_ns();
	while (!__atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE) &&
	       time_now_ns() - t0 < UT_TIMEOUT_NS) {
		poll_for_ms(1);
	}
	CU_ASSERT_FATAL(__atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE));
	open_dev("G");
	fill_random(a, sizeof(a));
	CU_ASSERT(dev_write(0, 8, a));
	ut_dev_close(&g_dev);
	/* save_config has the front wait for its members too. */
	entry = ut_bdev_config(&disk->bdev);
	CU_ASSERT_FATAL(entry != NULL);
	CU_ASSERT(json_is_true(
		json_object_get(json_object_get(entry, "params"), "wait_for_members")));
	json_decref(entry);
	gga_delete_sync("G");
	resv_member_delete(rm[1]);
	resv_member_delete(rm[2]);

	/* Refused without waiting, as before. */
	expect_refusal(&opts, -ENODEV, "fewer than 2 members do");
	CU_ASSERT(bdev_get_by_name("G") == NULL);

	opts.wait_for_members = true;
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
	disk = r.bdev->ctxt;
	poll_for_ms(1500);
	CU_ASSERT(!__atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE));
	CU_ASSERT(!bdev_is_accessible(r.bdev));
	get_info("G", &info);
	CU_ASSERT(!info.serving);
	UT_ASSERT_EQ(info.members[1].state, BDEV_GGA_MEMBER_ABSENT);
	bdev_gga_info_clear(&info);

	/* data_2's base is back (a target restarted: nobody holds it): opened, held, assembled. */
	rm[1] = resv_member_create("G2");
	t0 = time_now_ns();
	while (!__atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE) &&
	       time_now_ns() - t0 < UT_TIMEOUT_NS) {
		poll_for_ms(1);
	}
	CU_ASSERT_FATAL(__atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE));
	get_info("G", &info);
	UT_ASSERT_STR_EQ(info.role, "active");
	CU_ASSERT(info.serving && info.assembled);
	UT_ASSERT_EQ(info.members[1].state, BDEV_GGA_MEMBER_ONLINE);
	bdev_gga_info_clear(&info);
	open_dev("G");
	memset(rd, 0, sizeof(rd));
	CU_ASSERT(dev_read(0, 8, rd));
	CU_ASSERT(memcmp(rd, a, sizeof(a)) == 0);
	fill_random(a, 2 * LBS);
	CU_ASSERT(dev_write(0, 2, a));
	CU_ASSERT(dev_read(0, 2, rd));
	CU_ASSERT(memcmp(rd, a, 2 * LBS) == 0);
	ut_dev_close(&g_dev);
	gga_delete_sync("G");

	/* No base at all: registered from the geometry given; serves once they are back. */
	resv_member_delete(rm[0]);
	resv_member_delete(rm[1]);
	expect_refusal(&opts, -ENODEV, "no member's base bdev exists");
	opts.member_block_size = MBS;
	opts.member_md_size = MD;
	opts.member_num_blocks = MEMBER_BLOCKS;
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
	disk = r.bdev->ctxt;
	UT_ASSERT_EQ(bdev_get_num_blocks(r.bdev), NBLK);
	poll_for_ms(1200);
	CU_ASSERT(!__atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE));
	for (i = 0; i < 3; i++) {
		snprintf(base, sizeof(base), "G%u", i + 1);
		rm[i] = resv_member_create(base);
	}
	t0 = time_now_ns();
	while (!__atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE) &&
	       time_now_ns() - t0 < UT_TIMEOUT_NS) {
		poll_for_ms(1);
	}
	CU_ASSERT_FATAL(__atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE));
	open_dev("G");
	memset(rd, 0, sizeof(rd));
	CU_ASSERT(dev_read(0, 2, rd));
	CU_ASSERT(memcmp(rd, a, 2 * LBS) == 0);
	ut_dev_close(&g_dev);
	gga_delete_sync("G");
	front_members_delete('G', rm, 7);
}

/*
 * The RPCs that change the array while a front has not assembled it (issue
 * 32). Front 1 of an array whose third member's base does not exist: its
 * reservation commands go unanswered at first (a standby that holds
 * nothing), then data_2's reads fail, so that the front is active but its
 * assemblies fail and are tried again. In both states a scrub start, a
 * replace and a clear refuse with -EAGAIN and say why, changing nothing
 * (the new base is not claimed); options are recorded. Before, the replace
 * of the absent parity went ahead on a front that held no member (it
 * formatted and claimed the new base), and a scrub started a walk. A
 * hand-over of the active front that has not assembled lets the front stand
 * by, and the bdev can be deleted: before, the hand-over let go of an
 * assembly it did not have, a second assembly context was started beside
 * the first, and the delete never completed.
 */
static void
test_front_unassembled_rpcs(void)
{
	struct resv_member *rm[2];
	struct bdev_gga_opts opts;
	struct bdev_gga_info info;
	struct gga_disk *disk;
	struct create_res r;
	struct bdev *b4;
	json_t *dump;
	char base[8];
	uint32_t i;

	for (i = 0; i < 2; i++) {
		snprintf(base, sizeof(base), "U%u", i + 1);
		make_malloc(base, MBS, MD, MEMBER_BLOCKS);
		rm[i] = resv_member_create(base);
		rm[i]->hold = true;
	}
	make_malloc("U4", MBS, MD, MEMBER_BLOCKS);
	bdev_gga_opts_init(&opts);
	opts.name = "U";
	opts.members[0] = "R_U1";
	opts.members[1] = "R_U2";
	opts.members[2] = "R_U3";
	opts.uuid = "5c0ffee5-0b5e-4a7d-9c1e-2f3a4b5c6d80";
	opts.front_id = 1;
	opts.lease_ms = 800;
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
	disk = r.bdev->ctxt;
	poll_for_ms(100);
	get_info("U", &info);
	CU_ASSERT(!info.assembled && !info.serving);
	bdev_gga_info_clear(&info);
	/* bdev_get_bdevs says what bdev_gga_get_info says: not known (before: "online"). */
	dump = json_object();
	r.bdev->fn_table->dump_info_json(r.bdev->ctxt, dump);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(json_object_get(dump, "gga"), "state")),
			 "unknown");
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(
				 json_array_get(json_object_get(json_object_get(dump, "gga"),
								"members"),
						0),
				 "state")),
			 "unknown");
	json_decref(dump);

	UT_ASSERT_EQ(rpc_refused("bdev_gga_scrub", "{\"name\": \"U\", \"action\": \"start\"}",
				 "gga bdev 'U' is not assembled: this front is"),
		     -EAGAIN);
	UT_ASSERT_EQ(rpc_refused("bdev_gga_replace_member",
				 "{\"name\": \"U\", \"member\": \"parity\", \"new_base\": \"U4\"}",
				 "is not assembled"),
		     -EAGAIN);
	UT_ASSERT_EQ(rpc_refused("bdev_gga_clear_member",
				 "{\"name\": \"U\", \"member\": \"data_1\"}", "is not assembled"),
		     -EAGAIN);
	UT_ASSERT_EQ(
		ut_rpc_code("bdev_gga_set_options",
			    "{\"name\": \"U\", \"auto_readd\": true, \"rebuild_rate_mib_s\": 9}"),
		0);
	UT_ASSERT_EQ(disk->rebuild_rate, 9);
	poll_for_ms(50);
	CU_ASSERT(disk->walk == NULL);
	b4 = bdev_get_by_name("U4");
	CU_ASSERT_FATAL(b4 != NULL);
	CU_ASSERT(!bdev_is_claimed(b4));
	UT_ASSERT_STR_EQ(disk->members[2].name, "R_U3");

	/* It takes the two members; data_2's reads fail, so every assembly fails. */
	rm[1]->fail_reads = 1000000;
	for (i = 0; i < 2; i++) {
		resv_release_held(rm[i]);
	}
	UT_POLL_UNTIL(
		(get_info("U", &info),
		 i = info.role_reason != NULL && strstr(info.role_reason, "trying again") != NULL,
		 bdev_gga_info_clear(&info), i));
	get_info("U", &info);
	UT_ASSERT_STR_EQ(info.role, "active");
	CU_ASSERT(!info.assembled);
	bdev_gga_info_clear(&info);
	UT_ASSERT_EQ(rpc_refused("bdev_gga_scrub", "{\"name\": \"U\", \"action\": \"start\"}",
				 "this front is active"),
		     -EAGAIN);
	UT_ASSERT_EQ(rpc_refused("bdev_gga_replace_member",
				 "{\"name\": \"U\", \"member\": \"parity\", \"new_base\": \"U4\"}",
				 "this front is active"),
		     -EAGAIN);
	CU_ASSERT(!bdev_is_claimed(b4));

	/* Handed over: it stands by (nothing to let go of), and the bdev can be deleted. */
	UT_ASSERT_EQ(ut_rpc_code("bdev_gga_hand_over", "{\"name\": \"U\"}"), 0);
	poll_for_ms(100);
	UT_ASSERT_STR_EQ(front_role("U", NULL), "standby");
	gga_delete_sync("U");
	CU_ASSERT(bdev_get_by_name("U") == NULL);
	rm[1]->fail_reads = 0;
	for (i = 0; i < 2; i++) {
		resv_member_delete(rm[i]);
		snprintf(base, sizeof(base), "U%u", i + 1);
		malloc_delete_sync(base);
	}
	malloc_delete_sync("U4");
}

/* The harness's modules and the reservation members. */
static void
register_modules_resv(void)
{
	register_modules();
	bdev_module_register(&g_resv_module);
}

static int
suite_init_resv(void)
{
	return ut_setup_arena(register_modules_resv, "bdev_gga_ut", 160ull * 1024 * 1024);
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_create_format_assemble),
		UT_TEST(test_format_zeroes_members),
		UT_TEST(test_create_refusals_geometry),
		UT_TEST(test_create_refusals_superblock),
		UT_TEST(test_io_roundtrip),
		UT_TEST(test_compression_memory),
		UT_TEST(test_io_4k),
		UT_TEST(test_periodic_recovery),
		UT_TEST(test_reassemble_generation),
		UT_TEST(test_generation_window),
		UT_TEST(test_zeroes_unmap_flush_reset),
		UT_TEST(test_lock_waits),
		UT_TEST(test_concurrent_overlap),
		UT_TEST(test_buffer_pressure),
		UT_TEST(test_rpc),
		UT_TEST(test_front_fenced_on_io),
		UT_TEST(test_front_assembly_retried),
		UT_TEST(test_front_unassembled_rpcs),
		UT_TEST(test_front_waits_for_members),
		UT_TEST(test_front_base_gone_while_standby),
	};

	return ut_run("bdev_gga", tests, ARRAY_SIZE(tests), suite_init_resv, suite_fini);
}
