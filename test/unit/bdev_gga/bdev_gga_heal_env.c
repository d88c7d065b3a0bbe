/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the redundancy tests share (bdev_gga_heal_ut.c and
 * bdev_gga_recovery_ut.c #include this file, on ../bdev_gga_harness.c):
 * members under error bdevs, 2 + 1 arrays over them, superblock reads, the
 * same blocks read through every path, a member failed by an I/O error or
 * wiped, and the replace callback.
 */
#include "test/unit/bdev_gga/bdev_gga_harness.c"

/* Wait up to UT_TIMEOUT_NS (the probe and the sweep run once a second). */
#define WAIT_FOR(cond) UT_POLL_UNTIL(cond)

int
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
void
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
void
make_error_members(const char *p, uint32_t n, uint32_t fs)
{
	make_error_members_of(p, n, fs, NBLK);
}

void
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

/* Options of a 2 + 1 array `p` over EE_p1..EE_p3, recovery unlimited (one array at a time). */
void
heal_opts(const char *p, struct bdev_gga_opts *opts)
{
	static char names[3][16];
	uint32_t i;

	bdev_gga_opts_init(opts);
	opts->name = p;
	for (i = 0; i < 3; i++) {
		snprintf(names[i], sizeof(names[i]), "EE_%s%u", p, i + 1);
		opts->members[i] = names[i];
	}
	opts->rebuild_rate_mib_s = 0;
}

/* A 2 + 1 array over EE_p1..EE_p3 with the given options. */
struct gga_disk *
make_heal_gga(const char *p, uint32_t region_kib, bool auto_readd)
{
	struct bdev_gga_opts opts;
	struct create_res r;

	heal_opts(p, &opts);
	opts.bitmap_region_kib = region_kib;
	opts.auto_readd = auto_readd;
	UT_ASSERT_EQ_FATAL(create_opts_sync(&opts, &r), 0);
	return r.bdev->ctxt;
}

/* The superblock record of member i, read from the member. */
void
read_sb(struct gga_disk *disk, uint32_t i, struct gga_sb *sb)
{
	uint8_t *blk = malloc(disk->mbs);

	UT_ASSERT_EQ(member_rw(disk, i, false, 0, 1, blk), 0);
	UT_ASSERT_EQ(gga_sb_decode(blk, disk->frag_size, sb), 0);
	free(blk);
}

/* Byte `byte` of the bitmap as member i holds it. */
uint8_t
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
void
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

struct replace_res {
	bool done;
	int rc;
	char msg[256];
};

void
replace_done(void *cb_arg, int rc, const char *msg)
{
	struct replace_res *r = cb_arg;

	r->done = true;
	r->rc = rc;
	snprintf(r->msg, sizeof(r->msg), "%s", msg);
}

/* Zero member i's whole storage, superblock region included (it must not be in use). */
void
blank_member(struct gga_disk *disk, uint32_t i)
{
	uint8_t *zero = calloc(MEMBER_BLOCKS, disk->mbs);

	CU_ASSERT_FATAL(zero != NULL);
	UT_ASSERT_EQ(member_rw(disk, i, true, 0, MEMBER_BLOCKS, zero), 0);
	free(zero);
}

/* Fail member i with an I/O error: a read that reaches it fails it. */
void
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
