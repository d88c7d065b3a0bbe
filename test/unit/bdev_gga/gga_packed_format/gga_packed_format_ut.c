/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the packed layout's records and write units
 * (bdev_gga/gga_packed_format.c, docs/FORMAT.md §11). This file: the
 * helpers, the byte layout and the example vector of the document, record
 * round trips, every record header byte's damage caught, the read path's
 * decoder; gga_packed_wu_ut.c: the write units.
 */
#include <lz4.h>

#include "pk_ut.h"

uint64_t g_x = 0x9e3779b97f4a7c15ull;

static void
test_helpers(void)
{
	UT_ASSERT_EQ(gga_pk_frag_len(0, 2), 0);
	UT_ASSERT_EQ(gga_pk_frag_len(1, 2), 1);
	UT_ASSERT_EQ(gga_pk_frag_len(36, 2), 18);
	UT_ASSERT_EQ(gga_pk_frag_len(37, 2), 19);
	UT_ASSERT_EQ(gga_pk_frag_len(4096, 4), 1024);
	UT_ASSERT_EQ(gga_pk_record_size(0), 48);
	UT_ASSERT_EQ(gga_pk_record_size(1), 64);
	UT_ASSERT_EQ(gga_pk_record_size(16), 64);
	UT_ASSERT_EQ(gga_pk_record_size(17), 80);
	UT_ASSERT_EQ(gga_pk_record_size(2048), 2096);
	UT_ASSERT_EQ(gga_pk_record_size(GGA_PK_FRAG_MAX), 65536 + 48);
	UT_ASSERT_EQ(gga_pk_lba_span(0, 0, 512), 0);
	UT_ASSERT_EQ(gga_pk_lba_span(0, 1, 512), 1);
	UT_ASSERT_EQ(gga_pk_lba_span(0, 512, 512), 1);
	UT_ASSERT_EQ(gga_pk_lba_span(0, 513, 512), 2);
	UT_ASSERT_EQ(gga_pk_lba_span(496, 32, 512), 2);
	UT_ASSERT_EQ(gga_pk_lba_span(512, 512, 512), 1);
	UT_ASSERT_EQ(gga_pk_lba_span(4080, 2096, 4096), 2);
	UT_ASSERT_EQ(gga_pk_lba_span(4080, 2096, 512), 6);
	UT_ASSERT_EQ(gga_pk_lba_span(64, 1072, 512), 3);
}

/* docs/FORMAT.md §11.4: the example WU, byte for byte. */
static const uint8_t g_example_payload[36] = {
	0xbf, 0x67, 0x67, 0x61, 0x20, 0x70, 0x61, 0x63, 0x6b, 0x73, 0x21, 0x20,
	0x0b, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xec, 0x50, 0x20, 0x67, 0x67, 0x61, 0x20,
};

static const uint8_t g_example_wu[240] = {
	0x47, 0x47, 0x41, 0x57, 0x01, 0x00, 0x21, 0x09, 0x00, 0x20, 0x00, 0x00, 0x00, 0x02, 0x00,
	0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05,
	0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x03, 0x00, 0x00, 0x00, 0xf0,
	0x00, 0x00, 0x00, 0x31, 0xa3, 0x0a, 0xac, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0xd2, 0x9e, 0x48, 0xf9, 0x47, 0x47, 0x41, 0x52, 0x01, 0x01, 0x00, 0x02, 0x21, 0x00, 0x00,
	0x00, 0x12, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x24, 0x00, 0x00, 0x00, 0x69, 0xba, 0xad, 0x02, 0xca,
	0x7d, 0x91, 0xa4, 0xeb, 0x8a, 0x03, 0x02, 0xbf, 0x67, 0x67, 0x61, 0x20, 0x70, 0x61, 0x63,
	0x6b, 0x73, 0x21, 0x20, 0x0b, 0x00, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x47, 0x47, 0x41, 0x52, 0x01, 0x01,
	0x00, 0x03, 0x21, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x89, 0x41, 0xf9, 0x98, 0xc2, 0xa5, 0xed, 0xed, 0x47, 0x47, 0x41,
	0x52, 0x01, 0x02, 0x00, 0x00, 0x21, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x64, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x12, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1c,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8, 0xd0, 0xb3, 0x17,
};

/* Build the example WU of docs/FORMAT.md §11.4 in buf (512 bytes). */
static int
build_example(uint8_t buf[512])
{
	struct gga_pk_wu_id id = make_id(512, 3, 8192);
	struct gga_pk_wu wu;
	struct gga_pk_rec lz = {
		.type = GGA_PK_REC_DATA,
		.encoding = GGA_ENC_LZ4,
		.lba = 5,
		.generation = 0x10,
		.payload_len = sizeof(g_example_payload),
		.block_crc = 0,
	};
	struct gga_pk_rec zero = {
		.type = GGA_PK_REC_DATA,
		.encoding = GGA_ENC_ZERO,
		.lba = 6,
		.generation = 0x11,
		.block_crc = 0x98f94189u,
	};
	struct gga_pk_rec trim = {
		.type = GGA_PK_REC_TRIM,
		.lba = 100,
		.generation = 0x12,
		.payload_len = 28,
	};
	char block[4096];
	const char *w = "gga packs! ";
	uint32_t i;

	for (i = 0; i < sizeof(block); i++) {
		block[i] = w[i % 11];
	}
	lz.block_crc = gga_crc32c(block, sizeof(block), 0);
	memset(buf, 0xee, 512);
	CU_ASSERT_FATAL(gga_pk_wu_init(&wu, buf, 512, &id) == 0);
	UT_ASSERT_EQ(gga_pk_wu_add_record(&wu, &lz, g_example_payload), 64);
	UT_ASSERT_EQ(gga_pk_wu_add_record(&wu, &zero, NULL), 144);
	UT_ASSERT_EQ(gga_pk_wu_add_record(&wu, &trim, NULL), 192);
	return gga_pk_wu_finish(&wu);
}

static void
test_example_vector(void)
{
	uint8_t buf[512];
	char block[4096], out[4096];
	const char *w = "gga packs! ";
	uint32_t i;
	int len;

	/* The payload is the LZ4 block of the example's logical block. */
	for (i = 0; i < sizeof(block); i++) {
		block[i] = w[i % 11];
	}
	UT_ASSERT_EQ(LZ4_decompress_safe((const char *)g_example_payload, out,
					 sizeof(g_example_payload), sizeof(out)),
		     4096);
	CU_ASSERT(memcmp(out, block, sizeof(block)) == 0);
	UT_ASSERT_EQ(gga_crc32c(block, sizeof(block), 0), 0xa4917dcau);

	len = build_example(buf);
	UT_ASSERT_EQ(len, 512);
	for (i = 0; i < sizeof(g_example_wu); i++) {
		if (buf[i] != g_example_wu[i]) {
			fprintf(stderr, "example byte %u: %02x, document %02x\n", i, buf[i],
				g_example_wu[i]);
		}
		UT_ASSERT_EQ(buf[i], g_example_wu[i]);
	}
	CU_ASSERT(mem_is_zero(buf + sizeof(g_example_wu), 512 - sizeof(g_example_wu)));
}

/* One record of each kind, encoded and decoded back. */
static void
test_rec_roundtrip(void)
{
	struct gga_pk_rec recs[] = {
		{ .type = GGA_PK_REC_DATA,
		  .role = 2,
		  .encoding = GGA_ENC_LZ4,
		  .k = 2,
		  .m = 1,
		  .frag_len = 18,
		  .lba = 0x1122334455667788ull,
		  .generation = 0x0102030405060708ull,
		  .payload_len = 36,
		  .data_crc = 0xdeadbeef,
		  .block_crc = 0xcafef00d },
		{ .type = GGA_PK_REC_DATA,
		  .role = 0,
		  .encoding = GGA_ENC_RAW,
		  .k = 1,
		  .m = 15,
		  .frag_len = 65536,
		  .lba = 0,
		  .generation = 1,
		  .payload_len = 65536 },
		{ .type = GGA_PK_REC_DATA,
		  .role = 11,
		  .encoding = GGA_ENC_ZERO,
		  .k = 8,
		  .m = 4,
		  .lba = 7,
		  .generation = UINT64_MAX,
		  .block_crc = 0x98f94189u },
		{ .type = GGA_PK_REC_TRIM,
		  .role = 1,
		  .k = 4,
		  .m = 2,
		  .lba = 100,
		  .generation = 9,
		  .payload_len = UINT32_MAX },
		{ .type = GGA_PK_REC_PAD,
		  .role = 1,
		  .k = 2,
		  .m = 1,
		  .frag_len = 400,
		  .data_crc = 0x1234 },
	};
	struct gga_pk_rec back;
	uint8_t buf[GGA_PK_REC_HDR_SIZE];
	uint32_t i;

	for (i = 0; i < sizeof(recs) / sizeof(recs[0]); i++) {
		memset(&back, 0, sizeof(back));
		UT_ASSERT_EQ(gga_pk_rec_hdr_encode(&recs[i], buf), 0);
		UT_ASSERT_EQ(gga_pk_rec_hdr_decode(buf, &back), 0);
		CU_ASSERT(rec_eq(&recs[i], &back));
	}
	/* The first one's bytes, field by field (FORMAT §11.2). */
	gga_pk_rec_hdr_encode(&recs[0], buf);
	CU_ASSERT(memcmp(buf, "GGAR", 4) == 0);
	UT_ASSERT_EQ(buf[4], 1);
	UT_ASSERT_EQ(buf[5], GGA_PK_REC_DATA);
	UT_ASSERT_EQ(buf[6], 2);
	UT_ASSERT_EQ(buf[7], GGA_ENC_LZ4);
	UT_ASSERT_EQ(buf[8], 0x21);
	CU_ASSERT(mem_is_zero(buf + 9, 3));
	UT_ASSERT_EQ(buf[12], 18);
	UT_ASSERT_EQ(buf[16], 0x88);
	UT_ASSERT_EQ(buf[23], 0x11);
	UT_ASSERT_EQ(buf[24], 0x08);
	UT_ASSERT_EQ(buf[31], 0x01);
	UT_ASSERT_EQ(buf[32], 36);
	UT_ASSERT_EQ(buf[36], 0xef);
	UT_ASSERT_EQ(buf[40], 0x0d);
	UT_ASSERT_EQ(le32toh(*(uint32_t *)(void *)(buf + 44)), gga_crc32c(buf, 44, 0));

	/* What an encoder refuses to write. */
	struct gga_pk_rec bad[] = {
		{ .type = 0, .k = 2, .m = 1, .generation = 1 },
		{ .type = 4, .k = 2, .m = 1, .generation = 1 },
		{ .type = GGA_PK_REC_DATA,
		  .encoding = GGA_ENC_LZ4,
		  .k = 2,
		  .m = 1,
		  .frag_len = 18,
		  .payload_len = 36,
		  .generation = 0 },
		{ .type = GGA_PK_REC_DATA,
		  .encoding = GGA_ENC_LZ4,
		  .k = 2,
		  .m = 1,
		  .frag_len = 17,
		  .payload_len = 36,
		  .generation = 1 },
		{ .type = GGA_PK_REC_DATA,
		  .encoding = GGA_ENC_UNWRITTEN,
		  .k = 2,
		  .m = 1,
		  .generation = 1 },
		{ .type = GGA_PK_REC_DATA,
		  .encoding = 4,
		  .k = 2,
		  .m = 1,
		  .frag_len = 1,
		  .payload_len = 2,
		  .generation = 1 },
		{ .type = GGA_PK_REC_DATA,
		  .encoding = GGA_ENC_ZERO,
		  .k = 2,
		  .m = 1,
		  .frag_len = 1,
		  .payload_len = 1,
		  .generation = 1 },
		{ .type = GGA_PK_REC_DATA,
		  .encoding = GGA_ENC_LZ4,
		  .k = 2,
		  .m = 1,
		  .generation = 1 },
		{ .type = GGA_PK_REC_DATA,
		  .encoding = GGA_ENC_RAW,
		  .k = 1,
		  .m = 1,
		  .frag_len = 65537,
		  .payload_len = 65537,
		  .generation = 1 },
		{ .type = GGA_PK_REC_DATA,
		  .role = 3,
		  .encoding = GGA_ENC_ZERO,
		  .k = 2,
		  .m = 1,
		  .generation = 1 },
		{ .type = GGA_PK_REC_DATA,
		  .encoding = GGA_ENC_ZERO,
		  .k = 0,
		  .m = 1,
		  .generation = 1 },
		{ .type = GGA_PK_REC_DATA,
		  .encoding = GGA_ENC_ZERO,
		  .k = 2,
		  .m = 0,
		  .generation = 1 },
		{ .type = GGA_PK_REC_DATA,
		  .encoding = GGA_ENC_ZERO,
		  .k = 15,
		  .m = 2,
		  .generation = 1 },
		{ .type = GGA_PK_REC_TRIM, .k = 2, .m = 1, .lba = 1, .generation = 1 },
		{ .type = GGA_PK_REC_TRIM,
		  .k = 2,
		  .m = 1,
		  .lba = UINT64_MAX,
		  .payload_len = 2,
		  .generation = 1 },
		{ .type = GGA_PK_REC_TRIM, .k = 2, .m = 1, .lba = 1, .payload_len = 2 },
		{ .type = GGA_PK_REC_TRIM,
		  .k = 2,
		  .m = 1,
		  .lba = 1,
		  .payload_len = 2,
		  .generation = 1,
		  .frag_len = 16 },
		{ .type = GGA_PK_REC_TRIM,
		  .k = 2,
		  .m = 1,
		  .lba = 1,
		  .payload_len = 2,
		  .generation = 1,
		  .block_crc = 1 },
		{ .type = GGA_PK_REC_PAD, .k = 2, .m = 1, .lba = 1 },
		{ .type = GGA_PK_REC_PAD, .k = 2, .m = 1, .generation = 1 },
		{ .type = GGA_PK_REC_PAD, .k = 2, .m = 1, .encoding = GGA_ENC_RAW },
		{ .type = GGA_PK_REC_PAD, .k = 2, .m = 1, .frag_len = GGA_PK_WU_MAX },
	};
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(buf, 0x5a, sizeof(buf));
		UT_ASSERT_EQ(gga_pk_rec_hdr_encode(&bad[i], buf), -EINVAL);
		UT_ASSERT_EQ(buf[0], 0x5a);
		/* The same fields under a good crc: a decoder refuses them too. */
		memset(buf, 0, sizeof(buf));
		put32(buf, GGA_PK_REC_MAGIC);
		buf[4] = GGA_PK_VERSION;
		buf[5] = bad[i].type;
		buf[6] = bad[i].role;
		buf[7] = bad[i].encoding;
		buf[8] = (uint8_t)(bad[i].k << 4 | bad[i].m);
		put32(buf + 12, bad[i].frag_len);
		memcpy(buf + 16, &(uint64_t){ htole64(bad[i].lba) }, 8);
		memcpy(buf + 24, &(uint64_t){ htole64(bad[i].generation) }, 8);
		put32(buf + 32, bad[i].payload_len);
		put32(buf + 40, bad[i].block_crc);
		reseal_rec(buf);
		UT_ASSERT_EQ(gga_pk_rec_hdr_decode(buf, &back), -EUCLEAN);
	}
}

/* Flip every bit and every byte of a record header: decode refuses each. */
static void
test_rec_every_byte(void)
{
	static const uint8_t masks[] = { 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xff };
	struct gga_pk_rec rec = { .type = GGA_PK_REC_DATA,
				  .role = 1,
				  .encoding = GGA_ENC_LZ4,
				  .k = 2,
				  .m = 1,
				  .frag_len = 18,
				  .lba = 77,
				  .generation = 5,
				  .payload_len = 36,
				  .data_crc = 1,
				  .block_crc = 2 };
	struct gga_pk_rec back, orig;
	uint8_t buf[GGA_PK_REC_HDR_SIZE], bad[GGA_PK_REC_HDR_SIZE];
	uint32_t i, j;
	int rc;

	CU_ASSERT_FATAL(gga_pk_rec_hdr_encode(&rec, buf) == 0);
	CU_ASSERT_FATAL(gga_pk_rec_hdr_decode(buf, &orig) == 0);
	for (i = 0; i < sizeof(buf); i++) {
		for (j = 0; j < sizeof(masks); j++) {
			memcpy(bad, buf, sizeof(buf));
			bad[i] ^= masks[j];
			memset(&back, 0, sizeof(back));
			rc = gga_pk_rec_hdr_decode(bad, &back);
			/* Fail, or (never, with a crc) give the same fields. */
			CU_ASSERT(rc < 0 || rec_eq(&back, &orig));
			CU_ASSERT(rc != 0);
			if (i < 4) {
				UT_ASSERT_EQ(rc, -EILSEQ);
			} else if (i == 4) {
				UT_ASSERT_EQ(rc, -EPROTONOSUPPORT);
			} else {
				UT_ASSERT_EQ(rc, -EBADMSG);
			}
		}
	}
	memset(bad, 0, sizeof(bad));
	UT_ASSERT_EQ(gga_pk_rec_hdr_decode(bad, &back), -ENODATA);
}

/* The read path's decoder: which block, which write, whole fragment. */
static void
test_record_decode(void)
{
	uint8_t buf[512], frag[18], bad[512];
	struct gga_pk_wu_id id = make_id(512, 1, 0);
	struct gga_pk_wu wu;
	struct gga_pk_rec rec = { .type = GGA_PK_REC_DATA,
				  .encoding = GGA_ENC_LZ4,
				  .lba = 42,
				  .generation = 1000,
				  .payload_len = 35,
				  .block_crc = 3 };
	struct gga_pk_rec trim = {
		.type = GGA_PK_REC_TRIM, .lba = 40, .generation = 1001, .payload_len = 8
	};
	struct gga_pk_rec back;
	uint32_t i;
	int off, toff;

	fill_rnd(frag, sizeof(frag));
	CU_ASSERT_FATAL(gga_pk_wu_init(&wu, buf, sizeof(buf), &id) == 0);
	off = gga_pk_wu_add_record(&wu, &rec, frag);
	toff = gga_pk_wu_add_record(&wu, &trim, NULL);
	UT_ASSERT_EQ_FATAL(off, 64);
	UT_ASSERT_EQ_FATAL(toff, 144);
	UT_ASSERT_EQ(gga_pk_wu_finish(&wu), 512);

	UT_ASSERT_EQ(gga_pk_record_decode(buf + off, 80, 42, 1000, &back), 0);
	UT_ASSERT_EQ(back.frag_len, 18);
	UT_ASSERT_EQ(back.data_crc, gga_crc32c(frag, sizeof(frag), 0));
	UT_ASSERT_EQ(gga_pk_record_decode(buf + off, 80, 42, 0, &back), 0);
	UT_ASSERT_EQ(gga_pk_record_decode(buf + off, 80, 43, 1000, &back), -ESTALE);
	UT_ASSERT_EQ(gga_pk_record_decode(buf + off, 80, 42, 999, &back), -ESTALE);
	UT_ASSERT_EQ(gga_pk_record_decode(buf + toff, 64, 42, 0, &back), -ESTALE);
	UT_ASSERT_EQ(gga_pk_record_decode(buf + toff, 64, 40, 0, &back), -ESTALE);
	/* Exactly header + h is enough; one byte less is not. */
	UT_ASSERT_EQ(gga_pk_record_decode(buf + off, 48 + 18, 42, 1000, &back), 0);
	UT_ASSERT_EQ(gga_pk_record_decode(buf + off, 48 + 17, 42, 1000, &back), -EMSGSIZE);
	UT_ASSERT_EQ(gga_pk_record_decode(buf + off, 47, 42, 1000, &back), -EMSGSIZE);
	UT_ASSERT_EQ(gga_pk_record_decode(buf + 192, 64, 42, 1000, &back), -ENODATA);
	UT_ASSERT_EQ(gga_pk_record_decode(buf + off + 16, 80, 42, 1000, &back), -EILSEQ);
	UT_ASSERT_EQ(gga_pk_record_decode(NULL, 80, 42, 1000, &back), -EINVAL);
	/* Every byte of the fragment matters. */
	for (i = 0; i < sizeof(frag); i++) {
		memcpy(bad, buf, sizeof(buf));
		bad[off + 48 + i] ^= 0x40;
		UT_ASSERT_EQ(gga_pk_record_decode(bad + off, 80, 42, 1000, &back), -EIO);
	}
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_helpers),          UT_TEST(test_example_vector),
		UT_TEST(test_rec_roundtrip),    UT_TEST(test_rec_every_byte),
		UT_TEST(test_record_decode),    UT_TEST(test_wu_roundtrip),
		UT_TEST(test_wu_truncated),     UT_TEST(test_wu_torn),
		UT_TEST(test_wu_stale_foreign), UT_TEST(test_wu_header_every_byte),
		UT_TEST(test_wu_inconsistent),  UT_TEST(test_wu_padding),
		UT_TEST(test_wu_limits),        UT_TEST(test_fuzz),
	};

	return ut_run("gga_packed_format", tests, sizeof(tests) / sizeof(tests[0]), NULL, NULL);
}
