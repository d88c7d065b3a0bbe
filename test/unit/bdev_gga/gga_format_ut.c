/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the on-target format (gga_format.c): CRC-32C, the fragment
 * metadata layout, the example vectors of docs/FORMAT.md, and superblock
 * encoding and validation. Linked into gga_codec_ut, which runs them.
 */
#include <errno.h>
#include <string.h>

#include "gga/util.h"
#include "bdev_gga/gga_codec.h"
#include "gga_ut.h"

static void
test_crc32c(void)
{
	static const char check[] = "123456789";

	/* The standard CRC-32C check value. */
	UT_ASSERT_EQ(gga_crc32c(check, 9, 0), 0xe3069283u);
	/* Chaining equals one pass. */
	UT_ASSERT_EQ(gga_crc32c(check + 4, 5, gga_crc32c(check, 4, 0)), 0xe3069283u);
	UT_ASSERT_EQ(gga_crc32c(check, 0, 0), 0);
}

/* md_crc is the CRC-32C of LE64(lba) || md[0..27], however it is computed. */
static void
test_md_crc(void)
{
	uint8_t msg[8 + GGA_FRAG_MD_CRC_LEN], md[GGA_FRAG_MD_SIZE];
	uint64_t x = 0x243f6a8885a308d3ull, lba;
	uint32_t i, t;

	for (t = 0; t < 1000; t++) {
		for (i = 0; i < sizeof(md); i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			md[i] = (uint8_t)x;
		}
		lba = t < 3 ? (uint64_t[]){ 0, 1, UINT64_MAX }[t] : x;
		for (i = 0; i < 8; i++) {
			msg[i] = (uint8_t)(lba >> (8 * i));
		}
		memcpy(msg + 8, md, GGA_FRAG_MD_CRC_LEN);
		UT_ASSERT_EQ(gga_frag_md_crc(md, lba), gga_crc32c(msg, sizeof(msg), 0));
	}
}

static void
test_md_layout(void)
{
	struct gga_frag_md md = {
		.version = GGA_FORMAT_VERSION,
		.role = 2,
		.encoding = GGA_ENC_LZ4,
		.k = 2,
		.m = 1,
		.payload_len = 0x1234,
		.data_crc = 0xdeadbeef,
		.generation = 0x0102030405060708ull,
		.block_crc = 0xcafef00d,
	};
	struct gga_frag_md back;
	uint8_t buf[GGA_FRAG_MD_SIZE];
	uint8_t seeded[8 + GGA_FRAG_MD_CRC_LEN];
	uint64_t lba = 0x1122334455ull;
	uint32_t crc;

	gga_frag_md_encode(&md, lba, buf);
	CU_ASSERT(memcmp(buf, "GGAF", 4) == 0);
	UT_ASSERT_EQ(buf[4], 1);
	UT_ASSERT_EQ(buf[5], 2);
	UT_ASSERT_EQ(buf[6], GGA_ENC_LZ4);
	UT_ASSERT_EQ(buf[7], 0x21);
	UT_ASSERT_EQ(buf[8], 0x34);
	UT_ASSERT_EQ(buf[9], 0x12);
	UT_ASSERT_EQ(buf[10], 0);
	UT_ASSERT_EQ(buf[12], 0xef);
	UT_ASSERT_EQ(buf[15], 0xde);
	UT_ASSERT_EQ(buf[16], 0x08);
	UT_ASSERT_EQ(buf[23], 0x01);
	UT_ASSERT_EQ(buf[24], 0x0d);
	UT_ASSERT_EQ(buf[27], 0xca);
	/* md_crc is the CRC-32C of LE64(lba) followed by bytes 0..27. */
	seeded[0] = 0x55;
	seeded[1] = 0x44;
	seeded[2] = 0x33;
	seeded[3] = 0x22;
	seeded[4] = 0x11;
	seeded[5] = seeded[6] = seeded[7] = 0;
	memcpy(seeded + 8, buf, GGA_FRAG_MD_CRC_LEN);
	crc = gga_crc32c(seeded, sizeof(seeded), 0);
	UT_ASSERT_EQ(buf[28], crc & 0xff);
	UT_ASSERT_EQ(buf[31], crc >> 24);

	memset(&back, 0xff, sizeof(back));
	UT_ASSERT_EQ(gga_frag_md_decode(buf, lba, &back), 0);
	UT_ASSERT_EQ(back.role, 2);
	UT_ASSERT_EQ(back.k, 2);
	UT_ASSERT_EQ(back.m, 1);
	UT_ASSERT_EQ(back.payload_len, 0x1234);
	UT_ASSERT_EQ(back.data_crc, 0xdeadbeef);
	UT_ASSERT_EQ(back.generation, 0x0102030405060708ull);
	UT_ASSERT_EQ(back.block_crc, 0xcafef00d);

	UT_ASSERT_EQ(gga_frag_md_decode(buf, lba + 1, &back), -EBADMSG);
	buf[0] ^= 1;
	UT_ASSERT_EQ(gga_frag_md_decode(buf, lba, &back), -EILSEQ);
	buf[0] ^= 1;
	buf[4] = 2;
	UT_ASSERT_EQ(gga_frag_md_decode(buf, lba, &back), -EPROTONOSUPPORT);
	buf[4] = 1;
	buf[20] ^= 0x80;
	UT_ASSERT_EQ(gga_frag_md_decode(buf, lba, &back), -EBADMSG);
	memset(buf, 0, sizeof(buf));
	UT_ASSERT_EQ(gga_frag_md_decode(buf, lba, &back), -ENODATA);
}

/*
 * The example vectors of docs/FORMAT.md, so the document cannot drift from
 * the code: a raw block, a zero block, and a superblock.
 */
static void
test_format_vectors(void)
{
	static const uint8_t md_raw[3][GGA_FRAG_MD_SIZE] = {
		{ 0x47, 0x47, 0x41, 0x46, 0x01, 0x00, 0x01, 0x21, 0x00, 0x10, 0x00,
		  0x00, 0xa7, 0x7e, 0xc1, 0xf1, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
		  0x00, 0x00, 0xe8, 0x1b, 0x49, 0x43, 0x75, 0xe3, 0xc2, 0x2a },
		{ 0x47, 0x47, 0x41, 0x46, 0x01, 0x01, 0x01, 0x21, 0x00, 0x10, 0x00,
		  0x00, 0xb3, 0x1e, 0x65, 0x4d, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
		  0x00, 0x00, 0xe8, 0x1b, 0x49, 0x43, 0xc5, 0xda, 0x42, 0xe7 },
		{ 0x47, 0x47, 0x41, 0x46, 0x01, 0x02, 0x01, 0x21, 0x00, 0x10, 0x00,
		  0x00, 0x5b, 0xe3, 0x2d, 0x18, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
		  0x00, 0x00, 0xe8, 0x1b, 0x49, 0x43, 0x26, 0x54, 0x2f, 0xf1 },
	};
	static const uint8_t md_zero[GGA_FRAG_MD_SIZE] = { 0x47, 0x47, 0x41, 0x46, 0x01, 0x00, 0x03,
							   0x21, 0x00, 0x00, 0x00, 0x00, 0x4f, 0x83,
							   0x89, 0xa4, 0x07, 0x00, 0x00, 0x00, 0x00,
							   0x00, 0x00, 0x00, 0x89, 0x41, 0xf9, 0x98,
							   0x9c, 0xa4, 0x8a, 0xcb };
	static const uint8_t sb_head[80] = {
		0x47, 0x47, 0x41, 0x53, 0x55, 0x50, 0x45, 0x52, 0x02, 0x00, 0x00, 0x00, 0x80, 0x00,
		0x00, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b,
		0x0c, 0x0d, 0x0e, 0x0f, 0x01, 0x02, 0x01, 0x01, 0x00, 0x10, 0x00, 0x00, 0x00, 0x08,
		0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe0, 0xff, 0x0f, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00
	};
	/* events 5; recovery offset 0; member 2 (p) stale; no recovery; 1 MiB regions. */
	static const uint8_t sb_tail[44] = { 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
					     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
					     0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
					     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00,
					     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00 };
	static const uint8_t sb_crc[4] = { 0xcd, 0x8b, 0xb4, 0xfe };
	struct gga_codec_opts opts;
	struct gga_codec *c;
	struct gga_codec_scratch *s;
	struct gga_encode_info einfo;
	struct gga_sb sb;
	uint8_t block[4096], frag[3][2048], md[3][GGA_FRAG_MD_SIZE], sbbuf[GGA_SB_SIZE], uuid[16];
	void *d[3] = { frag[0], frag[1], frag[2] }, *m[3] = { md[0], md[1], md[2] };
	uint32_t x = 1, i;

	gga_codec_opts_init(&opts);
	UT_ASSERT_EQ_FATAL(gga_codec_create(&opts, &c), 0);
	UT_ASSERT_EQ_FATAL(gga_codec_scratch_alloc(c, &s), 0);
	for (i = 0; i < sizeof(block); i++) {
		x = x * 1103515245u + 12345u;
		block[i] = (uint8_t)(x >> 16);
	}
	UT_ASSERT_EQ(gga_codec_encode(c, s, block, 5, 1, d, m, &einfo), 0);
	UT_ASSERT_EQ(einfo.encoding, GGA_ENC_RAW);
	UT_ASSERT_EQ(einfo.block_crc, 0x43491be8u);
	for (i = 0; i < 3; i++) {
		CU_ASSERT(memcmp(md[i], md_raw[i], GGA_FRAG_MD_SIZE) == 0);
	}
	UT_ASSERT_EQ(gga_crc32c(frag[2], 2048, 0), 0x182de35bu);

	UT_ASSERT_EQ(gga_codec_encode_zero(c, 6, 7, d, m, &einfo), 0);
	CU_ASSERT(memcmp(md[0], md_zero, GGA_FRAG_MD_SIZE) == 0);
	UT_ASSERT_EQ(gga_crc32c(frag[0], 2048, 0), 0xa489834fu);

	for (i = 0; i < 16; i++) {
		uuid[i] = (uint8_t)i;
	}
	UT_ASSERT_EQ(gga_sb_init(&sb, uuid, 1, 2, 1, GGA_MATRIX_VANDERMONDE, 4096, 32, 1048576), 0);
	sb.generation_epoch = 1u << 24;
	sb.events = 5;
	sb.member_state[2] = GGA_SB_MEMBER_STALE;
	UT_ASSERT_EQ(gga_sb_encode(&sb, sbbuf), 0);
	CU_ASSERT(memcmp(sbbuf, sb_head, sizeof(sb_head)) == 0);
	CU_ASSERT(memcmp(sbbuf + 80, sb_tail, sizeof(sb_tail)) == 0);
	CU_ASSERT(memcmp(sbbuf + GGA_SB_CRC_LEN, sb_crc, 4) == 0);

	gga_codec_scratch_free(s);
	gga_codec_destroy(c);
}

/* ---------------------------------------------------------------------- */
/* Superblock                                                              */
/* ---------------------------------------------------------------------- */

static const uint8_t g_uuid[16] = { 0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe,
				    0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef };

static void
sb_make(struct gga_sb *sb, uint32_t index)
{
	UT_ASSERT_EQ_FATAL(gga_sb_init(sb, g_uuid, index, 2, 1, GGA_MATRIX_VANDERMONDE, 4096, 64,
				       100000),
			   0);
}

/* Re-encode a superblock record's raw bytes with a fresh crc. */
static void
sb_restamp(uint8_t *buf)
{
	uint32_t crc = htole32(gga_crc32c(buf, GGA_SB_CRC_LEN, 0));

	memcpy(buf + GGA_SB_CRC_LEN, &crc, sizeof(crc));
}

static void
put_le32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, sizeof(v));
}

static void
put_le64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof(v));
}

static uint64_t
get_le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static void
test_superblock_roundtrip(void)
{
	struct gga_sb sb, back;
	uint8_t buf[GGA_SB_SIZE + 16];

	sb_make(&sb, 2);
	UT_ASSERT_EQ(sb.fragment_size, 2048);
	UT_ASSERT_EQ(sb.data_offset, GGA_SB_REGION_BYTES / 2048);
	UT_ASSERT_EQ(sb.data_blocks, 100000 - 32);
	sb.generation_epoch = 0x1234567890ull;
	sb.events = 0x42;
	sb.member_state[2] = GGA_SB_MEMBER_REBUILD;
	sb.recovery_mask = 1u << 2;
	sb.recovery_offset = 77;
	memset(buf, 0xcc, sizeof(buf));
	UT_ASSERT_EQ(gga_sb_encode(&sb, buf), 0);
	/* The record is exactly GGA_SB_SIZE bytes. */
	UT_ASSERT_EQ(buf[GGA_SB_SIZE], 0xcc);
	CU_ASSERT(memcmp(buf, "GGASUPER", 8) == 0);
	UT_ASSERT_EQ(buf[12], GGA_SB_SIZE);
	CU_ASSERT(memcmp(buf + 16, g_uuid, 16) == 0);
	UT_ASSERT_EQ(buf[32], 2);
	UT_ASSERT_EQ(buf[33], 2);
	UT_ASSERT_EQ(buf[34], 1);
	UT_ASSERT_EQ(buf[35], GGA_MATRIX_VANDERMONDE);
	UT_ASSERT_EQ(buf[37], 0x10); /* 4096 */
	UT_ASSERT_EQ(buf[41], 0x08); /* 2048 */
	UT_ASSERT_EQ(buf[44], 64);
	UT_ASSERT_EQ(buf[56], 32);
	UT_ASSERT_EQ(buf[72], 0x90);
	/* Version 2: events, recovery, member states, region shift at 114 (1 MiB regions). */
	UT_ASSERT_EQ(buf[8], GGA_SB_VERSION_CURRENT);
	UT_ASSERT_EQ(buf[80], 0x42);
	UT_ASSERT_EQ(buf[98], GGA_SB_MEMBER_REBUILD);
	UT_ASSERT_EQ(buf[112], 0x04);
	UT_ASSERT_EQ(buf[114], GGA_REGION_SHIFT_DEFAULT);
	CU_ASSERT(mem_is_zero(buf + 115, 9));

	memset(&back, 0, sizeof(back));
	UT_ASSERT_EQ(gga_sb_decode(buf, GGA_SB_SIZE, &back), 0);
	UT_ASSERT_EQ(gga_sb_compare(&back, &sb, NULL, 0), GGA_SB_MATCH);
	UT_ASSERT_EQ(back.generation_epoch, 0x1234567890ull);
	UT_ASSERT_EQ(back.member_blocks, 100000);
	UT_ASSERT_EQ(back.events, 0x42);
	UT_ASSERT_EQ(back.member_state[2], GGA_SB_MEMBER_REBUILD);
	UT_ASSERT_EQ(back.recovery_mask, 1u << 2);
	UT_ASSERT_EQ(back.recovery_offset, 77);
	UT_ASSERT_EQ(back.region_shift, GGA_REGION_SHIFT_DEFAULT);

	/* 512-byte blocks with 8 data fragments: 64-byte fragments, 1024 reserved blocks. */
	UT_ASSERT_EQ(gga_sb_init(&sb, g_uuid, 9, 8, 2, GGA_MATRIX_CAUCHY, 512, 32, 5000), 0);
	UT_ASSERT_EQ(sb.data_offset, 1024);
	UT_ASSERT_EQ(gga_sb_encode(&sb, buf), 0);
	UT_ASSERT_EQ(gga_sb_decode(buf, GGA_SB_SIZE, &back), 0);
	UT_ASSERT_EQ(gga_sb_compare(&back, &sb, NULL, 0), GGA_SB_MATCH);
}

static void
test_superblock_init_errors(void)
{
	struct gga_sb sb;

	UT_ASSERT_EQ(gga_sb_init(&sb, g_uuid, 3, 2, 1, GGA_MATRIX_VANDERMONDE, 4096, 32, 1000),
		     -EINVAL);
	UT_ASSERT_EQ(gga_sb_init(&sb, g_uuid, 0, 2, 1, 7, 4096, 32, 1000), -EINVAL);
	UT_ASSERT_EQ(gga_sb_init(&sb, g_uuid, 0, 2, 1, GGA_MATRIX_VANDERMONDE, 4000, 32, 1000),
		     -EINVAL);
	UT_ASSERT_EQ(gga_sb_init(&sb, g_uuid, 0, 2, 1, GGA_MATRIX_VANDERMONDE, 4096, 16, 1000),
		     -EINVAL);
	UT_ASSERT_EQ(gga_sb_init(&sb, NULL, 0, 2, 1, GGA_MATRIX_VANDERMONDE, 4096, 32, 1000),
		     -EINVAL);
	/* 32 reserved blocks of 2048 bytes: 32 blocks leave nothing for data. */
	UT_ASSERT_EQ(gga_sb_init(&sb, g_uuid, 0, 2, 1, GGA_MATRIX_VANDERMONDE, 4096, 32, 32),
		     -ENOSPC);
	UT_ASSERT_EQ(gga_sb_init(&sb, g_uuid, 0, 2, 1, GGA_MATRIX_VANDERMONDE, 4096, 32, 33), 0);
	UT_ASSERT_EQ(sb.data_blocks, 1);
	sb.k = 0;
	UT_ASSERT_EQ(gga_sb_encode(&sb, (uint8_t[GGA_SB_SIZE]){ 0 }), -EINVAL);
}

static void
test_superblock_decode_errors(void)
{
	static const struct {
		uint32_t off;
		uint8_t width; /* 1, 4 or 8 */
		uint64_t value;
	} fields[] = {
		{ 12, 4, 256 },                       /* sb_size */
		{ 32, 1, 3 },                         /* member_index beyond k + m */
		{ 33, 1, 0 },                         /* k */
		{ 34, 1, 0 },                         /* m */
		{ 33, 1, 3 },                         /* k does not divide the block */
		{ 34, 1, 15 },                        /* k + m > 16 */
		{ 35, 1, 0 },                         /* matrix */
		{ 35, 1, 3 },        { 36, 4, 4000 }, /* block size */
		{ 36, 4, 256 },      { 40, 4, 1024 }, /* fragment size */
		{ 44, 4, 31 },                        /* md size */
		{ 48, 4, 32 },                        /* member_blocks: no room for data */
		{ 56, 8, 64 },                        /* data_offset */
		{ 64, 8, 5 },                         /* data_blocks */
		{ 114, 1, 11 },                       /* region shift below 4 KiB */
		{ 114, 1, 41 },                       /* region shift above 1 TiB */
		{ 96, 1, 3 },                         /* unknown member state */
		{ 99, 1, 1 },                         /* a state for a member beyond k + m */
		{ 112, 1, 8 },                        /* recovery of a member beyond k + m */
		{ 88, 8, 1u << 30 },                  /* recovery offset beyond the data */
	};
	struct gga_sb sb, back;
	uint8_t good[GGA_SB_SIZE], buf[GGA_SB_SIZE];
	size_t i;

	sb_make(&sb, 0);
	UT_ASSERT_EQ_FATAL(gga_sb_encode(&sb, good), 0);

	UT_ASSERT_EQ(gga_sb_decode(NULL, GGA_SB_SIZE, &back), -EINVAL);
	UT_ASSERT_EQ(gga_sb_decode(good, GGA_SB_SIZE - 1, &back), -EINVAL);
	memset(buf, 0, sizeof(buf));
	UT_ASSERT_EQ(gga_sb_decode(buf, sizeof(buf), &back), -ENOENT);
	memcpy(buf, good, sizeof(buf));
	buf[3] = 'x';
	UT_ASSERT_EQ(gga_sb_decode(buf, sizeof(buf), &back), -EMEDIUMTYPE);
	memcpy(buf, good, sizeof(buf));
	buf[8] = GGA_SB_VERSION_PACKED + 1;
	sb_restamp(buf);
	UT_ASSERT_EQ(gga_sb_decode(buf, sizeof(buf), &back), -EPROTONOSUPPORT);
	/* A version-1 record (bytes 80..123 reserved, zero) still decodes, with no state. */
	memcpy(buf, good, sizeof(buf));
	buf[8] = GGA_SB_VERSION_1;
	memset(buf + 80, 0, 44);
	sb_restamp(buf);
	UT_ASSERT_EQ(gga_sb_decode(buf, sizeof(buf), &back), 0);
	UT_ASSERT_EQ(back.version, GGA_SB_VERSION_1);
	UT_ASSERT_EQ(back.region_shift, 0);
	UT_ASSERT_EQ(back.events, 0);
	/* ... and its reserved bytes are ignored there. */
	buf[100] = 7;
	sb_restamp(buf);
	UT_ASSERT_EQ(gga_sb_decode(buf, sizeof(buf), &back), 0);
	/* Any flipped bit after the magic and version fails the crc. */
	for (i = 12; i < GGA_SB_SIZE; i++) {
		memcpy(buf, good, sizeof(buf));
		buf[i] ^= (uint8_t)(1u << (i % 8));
		UT_ASSERT_EQ(gga_sb_decode(buf, sizeof(buf), &back), -EBADMSG);
	}
	/* Fields that pass the crc but make no sense. */
	for (i = 0; i < ARRAY_SIZE(fields); i++) {
		memcpy(buf, good, sizeof(buf));
		if (fields[i].width == 1) {
			buf[fields[i].off] = (uint8_t)fields[i].value;
		} else if (fields[i].width == 4) {
			put_le32(buf + fields[i].off, (uint32_t)fields[i].value);
		} else {
			put_le64(buf + fields[i].off, fields[i].value);
		}
		sb_restamp(buf);
		UT_ASSERT_EQ(gga_sb_decode(buf, sizeof(buf), &back), -EUCLEAN);
	}
	/* The reserved byte (123) is ignored by readers (but covered by the crc). */
	memcpy(buf, good, sizeof(buf));
	buf[123] = 1;
	sb_restamp(buf);
	UT_ASSERT_EQ(gga_sb_decode(buf, sizeof(buf), &back), 0);
	/* bitmap_events (115..122) up to events, never beyond. */
	memcpy(buf, good, sizeof(buf));
	put_le64(buf + 115, get_le64(buf + 80));
	sb_restamp(buf);
	UT_ASSERT_EQ(gga_sb_decode(buf, sizeof(buf), &back), 0);
	UT_ASSERT_EQ(back.bitmap_events, back.events);
	put_le64(buf + 115, get_le64(buf + 80) + 1);
	sb_restamp(buf);
	UT_ASSERT_EQ(gga_sb_decode(buf, sizeof(buf), &back), -EUCLEAN);
}

static void
test_superblock_compare(void)
{
	struct gga_sb want, sb;
	char why[160];

	sb_make(&want, 1);
	sb = want;
	UT_ASSERT_EQ(gga_sb_compare(&sb, &want, why, sizeof(why)), GGA_SB_MATCH);
	UT_ASSERT_STR_EQ(why, "");

	sb.array_uuid[15] ^= 1;
	UT_ASSERT_EQ(gga_sb_compare(&sb, &want, why, sizeof(why)), GGA_SB_OTHER_ARRAY);
	CU_ASSERT(strstr(why, "10325476-98ba-dcfe-0123-456789abcdee") != NULL);
	sb = want;
	sb.member_index = 0;
	UT_ASSERT_EQ(gga_sb_compare(&sb, &want, why, sizeof(why)), GGA_SB_WRONG_ROLE);
	UT_ASSERT_STR_EQ(why, "member index is 0, expected 1");
	sb = want;
	sb.matrix = GGA_MATRIX_CAUCHY;
	UT_ASSERT_EQ(gga_sb_compare(&sb, &want, why, sizeof(why)), GGA_SB_GEOMETRY);
	sb = want;
	sb.block_size = 8192;
	UT_ASSERT_EQ(gga_sb_compare(&sb, &want, why, sizeof(why)), GGA_SB_GEOMETRY);
	UT_ASSERT_STR_EQ(why, "block size is 8192, expected 4096");
	sb = want;
	sb.md_size = 32;
	UT_ASSERT_EQ(gga_sb_compare(&sb, &want, NULL, 0), GGA_SB_GEOMETRY);
	sb = want;
	sb.k = 4;
	UT_ASSERT_EQ(gga_sb_compare(&sb, &want, NULL, 0), GGA_SB_GEOMETRY);
	sb = want;
	sb.member_blocks++;
	sb.data_blocks++;
	UT_ASSERT_EQ(gga_sb_compare(&sb, &want, why, sizeof(why)), GGA_SB_SIZE_CHANGED);
	/* A version-1 member of the array matches: assembling upgrades it. */
	sb = want;
	sb.version = GGA_SB_VERSION_1;
	UT_ASSERT_EQ(gga_sb_compare(&sb, &want, why, sizeof(why)), GGA_SB_MATCH);
	sb = want;
	sb.generation_epoch = 99;
	sb.events = 7;
	sb.member_state[1] = GGA_SB_MEMBER_STALE;
	UT_ASSERT_EQ(gga_sb_compare(&sb, &want, why, sizeof(why)), GGA_SB_MATCH);
	UT_ASSERT_STR_EQ(gga_sb_mismatch_name(GGA_SB_WRONG_ROLE), "wrong role");
}

/* A packed array's record: version 3, the layout byte, the segments. */
static void
test_superblock_packed(void)
{
	struct gga_sb sb, back, fixed;
	uint8_t buf[GGA_SB_SIZE], good[GGA_SB_SIZE];
	char why[160];

	sb_make(&sb, 1);
	fixed = sb;
	UT_ASSERT_EQ(fixed.layout, GGA_LAYOUT_FIXED);
	UT_ASSERT_EQ(gga_sb_segments(&fixed), 0);
	UT_ASSERT_EQ(gga_sb_set_packed(&sb, GGA_SEG_SHIFT_MIN - 1), -EINVAL);
	UT_ASSERT_EQ(gga_sb_set_packed(&sb, GGA_SEG_SHIFT_MAX + 1), -EINVAL);
	/* 99968 blocks of 2048 bytes (195 MiB): no 256 MiB segment fits. */
	UT_ASSERT_EQ(gga_sb_set_packed(&sb, 28), -ENOSPC);
	UT_ASSERT_EQ(sb.version, GGA_SB_VERSION_CURRENT);
	UT_ASSERT_EQ(gga_sb_set_packed(&sb, GGA_SEG_SHIFT_DEFAULT), 0);
	UT_ASSERT_EQ(gga_sb_set_packed(&sb, GGA_SEG_SHIFT_DEFAULT), -EINVAL);
	UT_ASSERT_EQ(sb.version, GGA_SB_VERSION_PACKED);
	UT_ASSERT_EQ(gga_sb_segments(&sb), (99968ull * 2048) >> 22);
	UT_ASSERT_EQ_FATAL(gga_sb_encode(&sb, good), 0);
	UT_ASSERT_EQ(good[8], GGA_SB_VERSION_PACKED);
	UT_ASSERT_EQ(good[123], GGA_LAYOUT_PACKED | (GGA_SEG_SHIFT_DEFAULT - 16) << 4);
	UT_ASSERT_EQ(gga_sb_decode(good, sizeof(good), &back), 0);
	UT_ASSERT_EQ(back.layout, GGA_LAYOUT_PACKED);
	UT_ASSERT_EQ(back.seg_shift, GGA_SEG_SHIFT_DEFAULT);
	UT_ASSERT_EQ(back.region_shift, sb.region_shift);
	UT_ASSERT_EQ(gga_sb_compare(&back, &sb, NULL, 0), GGA_SB_MATCH);
	/* A fixed array's member is not a packed one's, nor the other way round. */
	UT_ASSERT_EQ(gga_sb_compare(&back, &fixed, why, sizeof(why)), GGA_SB_GEOMETRY);
	UT_ASSERT_STR_EQ(why, "layout is 1, expected 0");
	UT_ASSERT_EQ(gga_sb_compare(&fixed, &back, NULL, 0), GGA_SB_GEOMETRY);
	back.seg_shift = 20;
	UT_ASSERT_EQ(gga_sb_compare(&back, &sb, NULL, 0), GGA_SB_GEOMETRY);

	/* Version 3 needs a packed layout byte whose segments fit. */
	memcpy(buf, good, sizeof(buf));
	buf[123] = 0;
	sb_restamp(buf);
	UT_ASSERT_EQ(gga_sb_decode(buf, sizeof(buf), &back), -EUCLEAN);
	buf[123] = 2 | (GGA_SEG_SHIFT_DEFAULT - 16) << 4;
	sb_restamp(buf);
	UT_ASSERT_EQ(gga_sb_decode(buf, sizeof(buf), &back), -EUCLEAN);
	buf[123] = 1 | 12 << 4; /* 256 MiB */
	sb_restamp(buf);
	UT_ASSERT_EQ(gga_sb_decode(buf, sizeof(buf), &back), -EUCLEAN);
	buf[123] = 1 | 11 << 4; /* 128 MiB: one segment */
	sb_restamp(buf);
	UT_ASSERT_EQ(gga_sb_decode(buf, sizeof(buf), &back), 0);
	UT_ASSERT_EQ(gga_sb_segments(&back), 1);
	/* Version 2 stays fixed whatever byte 123 holds. */
	memcpy(buf, good, sizeof(buf));
	buf[8] = GGA_SB_VERSION_CURRENT;
	sb_restamp(buf);
	UT_ASSERT_EQ(gga_sb_decode(buf, sizeof(buf), &back), 0);
	UT_ASSERT_EQ(back.layout, GGA_LAYOUT_FIXED);
	UT_ASSERT_EQ(back.seg_shift, 0);
	/* A host record that mixes version and layout does not encode. */
	back = sb;
	back.layout = GGA_LAYOUT_FIXED;
	UT_ASSERT_EQ(gga_sb_encode(&back, buf), -EINVAL);
	back = fixed;
	back.layout = GGA_LAYOUT_PACKED;
	back.seg_shift = GGA_SEG_SHIFT_DEFAULT;
	UT_ASSERT_EQ(gga_sb_encode(&back, buf), -EINVAL);
}

static void
test_names(void)
{
	enum gga_matrix mx;
	enum gga_layout lay;

	UT_ASSERT_EQ(gga_matrix_parse("cauchy", &mx), 0);
	UT_ASSERT_EQ(mx, GGA_MATRIX_CAUCHY);
	UT_ASSERT_EQ(gga_matrix_parse("vandermonde", &mx), 0);
	UT_ASSERT_EQ(mx, GGA_MATRIX_VANDERMONDE);
	UT_ASSERT_EQ(gga_matrix_parse("rs", &mx), -EINVAL);
	UT_ASSERT_STR_EQ(gga_matrix_name(GGA_MATRIX_CAUCHY), "cauchy");
	CU_ASSERT(gga_matrix_name((enum gga_matrix)0) == NULL);
	UT_ASSERT_EQ(gga_layout_parse("packed", &lay), 0);
	UT_ASSERT_EQ(lay, GGA_LAYOUT_PACKED);
	UT_ASSERT_EQ(gga_layout_parse("fixed", &lay), 0);
	UT_ASSERT_EQ(lay, GGA_LAYOUT_FIXED);
	UT_ASSERT_EQ(gga_layout_parse("log", &lay), -EINVAL);
	UT_ASSERT_STR_EQ(gga_layout_name(GGA_LAYOUT_PACKED), "packed");
	CU_ASSERT(gga_layout_name((enum gga_layout)5) == NULL);
	UT_ASSERT_STR_EQ(gga_encoding_name(GGA_ENC_LZ4), "lz4");
	UT_ASSERT_STR_EQ(gga_encoding_name((enum gga_encoding)7), "invalid");
	UT_ASSERT_STR_EQ(gga_frag_status_name(GGA_FRAG_BAD_DATA_CRC), "bad data crc");
}

const struct ut_test g_format_tests[] = {
	UT_TEST(test_crc32c),
	UT_TEST(test_md_crc),
	UT_TEST(test_md_layout),
	UT_TEST(test_format_vectors),
	UT_TEST(test_superblock_roundtrip),
	UT_TEST(test_superblock_init_errors),
	UT_TEST(test_superblock_decode_errors),
	UT_TEST(test_superblock_compare),
	UT_TEST(test_superblock_packed),
	UT_TEST(test_names),
};
const size_t g_format_tests_count = ARRAY_SIZE(g_format_tests);
