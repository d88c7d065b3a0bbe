/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The write units of the packed layout (part of gga_packed_format_ut): round
 * trips at 512 B and 4 KiB LBAs, WUs cut at every length, torn at every LBA,
 * stale, foreign or damaged in any header byte refused whole, crc-sealed but
 * inconsistent bodies refused, padding, the builder's limits, and seeded
 * random garbage that must never crash the parser nor yield a record
 * outside its WU.
 */
#include "pk_ut.h"

static void
wu_roundtrip(uint32_t lba_size, uint32_t k, uint32_t m)
{
	static uint8_t buf[GGA_PK_WU_MAX], frags[MAX_RECS][4096], copy[GGA_PK_WU_MAX];
	static struct gga_pk_rec added[MAX_RECS];
	static struct seen seen;
	struct gga_pk_wu_id id = make_id(lba_size, 12345, 1u << 20);
	struct gga_pk_wu wu, wu_copy;
	struct gga_pk_rec rec;
	uint32_t n = 0, i, offs[MAX_RECS], full = 0;
	int off, len;

	id.k = (uint8_t)k;
	id.m = (uint8_t)m;
	id.role = (uint8_t)(k + m - 1);
	memset(buf, 0xa5, sizeof(buf));
	CU_ASSERT_FATAL(gga_pk_wu_init(&wu, buf, sizeof(buf), &id) == 0);
	UT_ASSERT_EQ(wu.cap, GGA_PK_WU_MAX);
	/* Random records until three in a row do not fit. */
	while (full < 3 && n < MAX_RECS) {
		memset(&rec, 0, sizeof(rec));
		rec.lba = rnd() >> 20;
		rec.generation = 1 + (rnd() >> 8);
		switch (rnd() % 8) {
		case 0:
			rec.type = GGA_PK_REC_DATA;
			rec.encoding = GGA_ENC_ZERO;
			break;
		case 1:
			rec.type = GGA_PK_REC_TRIM;
			rec.payload_len = 1 + (uint32_t)(rnd() % 1000);
			break;
		case 2:
			rec.type = GGA_PK_REC_DATA;
			rec.encoding = GGA_ENC_RAW;
			rec.payload_len = 4096;
			break;
		default:
			rec.type = GGA_PK_REC_DATA;
			rec.encoding = GGA_ENC_LZ4;
			rec.payload_len = 1 + (uint32_t)(rnd() % 4095);
			break;
		}
		rec.block_crc = rec.type == GGA_PK_REC_DATA ? (uint32_t)rnd() : 0;
		fill_rnd(frags[n], sizeof(frags[n]));
		memcpy(copy, buf, sizeof(buf));
		wu_copy = wu;
		off = gga_pk_wu_add_record(&wu, &rec, frags[n]);
		if (off == -ENOSPC) {
			/* Refused whole: nothing written, nothing counted. */
			CU_ASSERT(memcmp(copy, buf, sizeof(buf)) == 0);
			CU_ASSERT(memcmp(&wu_copy, &wu, sizeof(wu)) == 0);
			CU_ASSERT(gga_pk_record_size(rec.type == GGA_PK_REC_DATA ?
							     gga_pk_frag_len(rec.payload_len, k) :
							     0) > wu.cap - wu.used);
			full++;
			continue;
		}
		full = 0;
		CU_ASSERT_FATAL(off > 0);
		UT_ASSERT_EQ(off % 16, 0);
		UT_ASSERT_EQ((uint32_t)off, wu_copy.used);
		added[n] = rec;
		offs[n] = (uint32_t)off;
		n++;
	}
	CU_ASSERT(n > 10);
	len = gga_pk_wu_finish(&wu);
	CU_ASSERT_FATAL(len > 0);
	UT_ASSERT_EQ(len % lba_size, 0);
	CU_ASSERT((uint32_t)len >= wu.used && (uint32_t)len - wu.used < lba_size);
	CU_ASSERT(mem_is_zero(buf + wu.used, len - wu.used));

	memset(&seen, 0, sizeof(seen));
	UT_ASSERT_EQ(gga_pk_wu_parse(buf, sizeof(buf), &id, GGA_PK_PARSE_DATA_CRC, collect, &seen),
		     len);
	UT_ASSERT_EQ_FATAL(seen.n, n);
	for (i = 0; i < n; i++) {
		UT_ASSERT_EQ(seen.off[i], offs[i]);
		UT_ASSERT_EQ(seen.rec[i].type, added[i].type);
		UT_ASSERT_EQ(seen.rec[i].lba, added[i].lba);
		UT_ASSERT_EQ(seen.rec[i].generation, added[i].generation);
		UT_ASSERT_EQ(seen.rec[i].payload_len, added[i].payload_len);
		UT_ASSERT_EQ(seen.rec[i].block_crc, added[i].block_crc);
		UT_ASSERT_EQ(seen.rec[i].role, id.role);
		UT_ASSERT_EQ(seen.rec[i].k, k);
		UT_ASSERT_EQ(seen.rec[i].m, m);
		if (added[i].type == GGA_PK_REC_DATA) {
			UT_ASSERT_EQ(seen.rec[i].encoding, added[i].encoding);
			UT_ASSERT_EQ(seen.rec[i].frag_len,
				     gga_pk_frag_len(added[i].payload_len, k));
			CU_ASSERT(memcmp(seen.frag[i], frags[i], seen.rec[i].frag_len) == 0);
			CU_ASSERT(gga_pk_record_decode(buf + offs[i], len - offs[i], added[i].lba,
						       added[i].generation, &rec) == 0);
		} else {
			UT_ASSERT_EQ(seen.rec[i].frag_len, 0);
		}
	}
	/* A WU read into a larger buffer (the scan reads 128 KiB at once) parses the same. */
	UT_ASSERT_EQ(gga_pk_wu_parse(buf, len, &id, 0, NULL, NULL), len);
}

void
test_wu_roundtrip(void)
{
	wu_roundtrip(512, 2, 1);
	wu_roundtrip(4096, 2, 1);
	wu_roundtrip(4096, 4, 2);
	wu_roundtrip(512, 1, 1);
}

/* A small WU of a few records for the damage tests; returns its length. */
static int
small_wu(uint8_t *buf, uint32_t cap, const struct gga_pk_wu_id *id, uint32_t nrec)
{
	struct gga_pk_wu wu;
	struct gga_pk_rec rec = { .type = GGA_PK_REC_DATA, .encoding = GGA_ENC_LZ4 };
	uint8_t frag[600];
	uint32_t i;

	CU_ASSERT_FATAL(gga_pk_wu_init(&wu, buf, cap, id) == 0);
	for (i = 0; i < nrec; i++) {
		fill_rnd(frag, sizeof(frag));
		rec.lba = 10 + i;
		rec.generation = 100 + i;
		rec.payload_len = 2 * (100 + 97 * i % 500);
		rec.block_crc = (uint32_t)rnd();
		CU_ASSERT_FATAL(gga_pk_wu_add_record(&wu, &rec, frag) > 0);
	}
	return gga_pk_wu_finish(&wu);
}

/* Cut short at every length, the WU is refused; at its length it is taken. */
void
test_wu_truncated(void)
{
	static uint8_t buf[8192], cut[8192];
	struct gga_pk_wu_id id = make_id(512, 5, 0);
	struct seen seen = { 0 };
	int len, l, rc;

	len = small_wu(buf, sizeof(buf), &id, 6);
	CU_ASSERT_FATAL(len > 2048);
	for (l = 0; l < len; l++) {
		/* Into a buffer of exactly l bytes (ASan sees any read past it). */
		uint8_t *p = malloc(l > 0 ? (size_t)l : 1);

		CU_ASSERT_FATAL(p != NULL);
		memcpy(p, buf, (size_t)l);
		rc = gga_pk_wu_parse(p, (size_t)l, &id, 0, collect, &seen);
		UT_ASSERT_EQ(rc, -EMSGSIZE);
		free(p);
		/* Or as a torn write: the bytes after l are what was there before (zeros). */
		memset(cut, 0, sizeof(cut));
		memcpy(cut, buf, (size_t)l);
		rc = gga_pk_wu_parse(cut, sizeof(cut), &id, 0, collect, &seen);
		if (memcmp(cut, buf, (size_t)len) == 0) {
			/* Cut in the zero padding: the same bytes, the same WU. */
			UT_ASSERT_EQ(rc, len);
			UT_ASSERT_EQ(seen.n, 6);
			seen.n = 0;
			continue;
		}
		CU_ASSERT(rc < 0);
		if (l < GGA_PK_WU_HDR_SIZE && l > 0) {
			CU_ASSERT(rc == -EBADMSG || rc == -EILSEQ || rc == -EPROTONOSUPPORT);
		} else if (l >= GGA_PK_WU_HDR_SIZE) {
			UT_ASSERT_EQ(rc, -EIO);
		}
	}
	seen.n = 0;
	UT_ASSERT_EQ(gga_pk_wu_parse(buf, (size_t)len, &id, 0, collect, &seen), len);
	UT_ASSERT_EQ(seen.n, 6);
}

/*
 * A torn WU: each member LBA after the first left as an older WU of the same
 * place wrote it (the segment's previous use), or the first LBA old and the
 * rest new. Refused whole every time, whatever else is in it.
 */
void
test_wu_torn(void)
{
	static uint8_t new[8192], old[8192], mix[8192];
	struct gga_pk_wu_id id_new = make_id(512, 9, 4096), id_old = make_id(512, 4, 4096);
	struct seen seen = { 0 };
	int len_new, len_old, lba, rc;

	len_new = small_wu(new, sizeof(new), &id_new, 7);
	len_old = small_wu(old, sizeof(old), &id_old, 7);
	CU_ASSERT_FATAL(len_new == len_old && len_new > 1024);
	for (lba = 0; lba < len_new / 512; lba++) {
		memcpy(mix, new, sizeof(mix));
		memcpy(mix + lba * 512, old + lba * 512, 512);
		rc = gga_pk_wu_parse(mix, sizeof(mix), &id_new, 0, collect, &seen);
		UT_ASSERT_EQ(rc, lba == 0 ? -ESTALE : -EIO);
		/* Read as the old WU, the mix is refused as well. */
		rc = gga_pk_wu_parse(mix, sizeof(mix), &id_old, 0, collect, &seen);
		UT_ASSERT_EQ(rc, lba == 0 ? -EIO : -ESTALE);
	}
	UT_ASSERT_EQ(seen.n, 0);
	/* Every byte of a whole WU, damaged in turn. */
	for (lba = 0; lba < len_new; lba++) {
		memcpy(mix, new, sizeof(mix));
		mix[lba] ^= 0x10;
		rc = gga_pk_wu_parse(mix, sizeof(mix), &id_new, 0, collect, &seen);
		CU_ASSERT(rc < 0);
		if (lba >= GGA_PK_WU_HDR_SIZE) {
			UT_ASSERT_EQ(rc, -EIO);
		}
	}
	UT_ASSERT_EQ(seen.n, 0);
}

/* Not this WU: another segment, offset, array, member, geometry, LBA size. */
void
test_wu_stale_foreign(void)
{
	static uint8_t buf[4096];
	struct gga_pk_wu_id id = make_id(512, 77, 65536), want;
	struct gga_pk_wu_hdr hdr;
	struct seen seen = { 0 };
	int len;

	len = small_wu(buf, sizeof(buf), &id, 3);
	CU_ASSERT_FATAL(len > 0);
	UT_ASSERT_EQ(gga_pk_wu_hdr_decode(buf, &id, &hdr), 0);
	UT_ASSERT_EQ(hdr.wu_len, len);
	UT_ASSERT_EQ(hdr.rec_count, 3);
	UT_ASSERT_EQ(hdr.id.seg_seq, 77);
	UT_ASSERT_EQ(hdr.id.wu_off, 65536);
	UT_ASSERT_EQ(hdr.id.lba_size, 512);
	UT_ASSERT_EQ(gga_pk_wu_hdr_decode(buf, NULL, &hdr), 0);

	want = id;
	want.seg_seq = 76;
	UT_ASSERT_EQ(gga_pk_wu_parse(buf, sizeof(buf), &want, 0, collect, &seen), -ESTALE);
	want.seg_seq = 78;
	UT_ASSERT_EQ(gga_pk_wu_parse(buf, sizeof(buf), &want, 0, collect, &seen), -ESTALE);
	want = id;
	want.wu_off = 65536 + 512;
	UT_ASSERT_EQ(gga_pk_wu_parse(buf, sizeof(buf), &want, 0, collect, &seen), -ESTALE);
	want = id;
	want.array_uuid[15] ^= 1;
	UT_ASSERT_EQ(gga_pk_wu_parse(buf, sizeof(buf), &want, 0, collect, &seen), -EXDEV);
	want = id;
	want.role = 1;
	UT_ASSERT_EQ(gga_pk_wu_parse(buf, sizeof(buf), &want, 0, collect, &seen), -EXDEV);
	want = id;
	want.m = 2;
	UT_ASSERT_EQ(gga_pk_wu_parse(buf, sizeof(buf), &want, 0, collect, &seen), -EXDEV);
	want = id;
	want.lba_size = 4096;
	UT_ASSERT_EQ(gga_pk_wu_parse(buf, sizeof(buf), &want, 0, collect, &seen), -EXDEV);
	UT_ASSERT_EQ(seen.n, 0);
	UT_ASSERT_EQ(gga_pk_wu_parse(buf, sizeof(buf), &id, 0, collect, &seen), len);
	UT_ASSERT_EQ(seen.n, 3);

	/* Blank space and garbage are no WU. */
	memset(buf, 0, sizeof(buf));
	UT_ASSERT_EQ(gga_pk_wu_parse(buf, sizeof(buf), &id, 0, NULL, NULL), -ENODATA);
	UT_ASSERT_EQ(gga_pk_wu_parse(buf, 10, &id, 0, NULL, NULL), -EMSGSIZE);
	UT_ASSERT_EQ(gga_pk_wu_parse(NULL, 512, &id, 0, NULL, NULL), -EINVAL);
	UT_ASSERT_EQ(gga_pk_wu_parse(buf, 512, NULL, 0, NULL, NULL), -EINVAL);
	buf[0] = 'G';
	UT_ASSERT_EQ(gga_pk_wu_parse(buf, sizeof(buf), &id, 0, NULL, NULL), -EILSEQ);
}

/* Every bit and byte of the WU header damaged: the parse refuses each. */
void
test_wu_header_every_byte(void)
{
	static uint8_t buf[1024], bad[1024];
	static const uint8_t masks[] = { 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xff };
	struct gga_pk_wu_id id = make_id(512, 3, 0);
	struct gga_pk_wu_hdr hdr;
	uint32_t i, j;
	int len, rc;

	len = small_wu(buf, sizeof(buf), &id, 1);
	CU_ASSERT_FATAL(len > 0);
	for (i = 0; i < GGA_PK_WU_HDR_SIZE; i++) {
		for (j = 0; j < sizeof(masks); j++) {
			memcpy(bad, buf, sizeof(bad));
			bad[i] ^= masks[j];
			rc = gga_pk_wu_parse(bad, sizeof(bad), &id, 0, NULL, NULL);
			CU_ASSERT(rc < 0);
			UT_ASSERT_EQ(rc, i < 4 ? -EILSEQ : i == 4 ? -EPROTONOSUPPORT : -EBADMSG);
			CU_ASSERT(gga_pk_wu_hdr_decode(bad, NULL, &hdr) < 0);
		}
	}
}

/*
 * Fields that a crc cannot vouch for (a writer's bug): a WU whose crcs are
 * good but whose body breaks a rule is refused as inconsistent.
 */
void
test_wu_inconsistent(void)
{
	static uint8_t buf[1024], bad[1024];
	struct gga_pk_wu_id id = make_id(512, 3, 0);
	uint32_t v;
	int len;

	len = small_wu(buf, sizeof(buf), &id, 1);
	UT_ASSERT_EQ_FATAL(len, 512);
	UT_ASSERT_EQ(gga_pk_wu_parse(buf, sizeof(buf), &id, 0, NULL, NULL), 512);
	/* rec_count one more, one less. */
	for (v = 0; v < 3; v += 2) {
		memcpy(bad, buf, sizeof(bad));
		put32(bad + 40, v);
		reseal_wu(bad, sizeof(bad));
		UT_ASSERT_EQ(gga_pk_wu_parse(bad, sizeof(bad), &id, 0, NULL, NULL), -EUCLEAN);
	}
	/* A non-zero byte in the tail. */
	memcpy(bad, buf, sizeof(bad));
	bad[len - 1] = 1;
	reseal_wu(bad, sizeof(bad));
	UT_ASSERT_EQ(gga_pk_wu_parse(bad, sizeof(bad), &id, 0, NULL, NULL), -EUCLEAN);
	/* used past the records (a zero record header where one should be). */
	memcpy(bad, buf, sizeof(bad));
	memcpy(&v, bad + 44, 4);
	put32(bad + 44, le32toh(v) + 48);
	reseal_wu(bad, sizeof(bad));
	UT_ASSERT_EQ(gga_pk_wu_parse(bad, sizeof(bad), &id, 0, NULL, NULL), -EUCLEAN);
	/* used not a multiple of 16, wu_len not used rounded to the LBA. */
	memcpy(bad, buf, sizeof(bad));
	memcpy(&v, bad + 44, 4);
	put32(bad + 44, le32toh(v) - 8);
	reseal_wu(bad, sizeof(bad));
	UT_ASSERT_EQ(gga_pk_wu_parse(bad, sizeof(bad), &id, 0, NULL, NULL), -EUCLEAN);
	memcpy(bad, buf, sizeof(bad));
	put32(bad + 12, 1024);
	reseal_wu(bad, sizeof(bad));
	UT_ASSERT_EQ(gga_pk_wu_parse(bad, sizeof(bad), &id, 0, NULL, NULL), -EUCLEAN);
	/* used so large that rounding it up to an LBA would wrap to 0 = wu_len. */
	memcpy(bad, buf, sizeof(bad));
	put32(bad + 44, 0xfffffff0u);
	put32(bad + 12, 0);
	reseal_wu(bad, sizeof(bad));
	UT_ASSERT_EQ(gga_pk_wu_parse(bad, sizeof(bad), &id, 0, NULL, NULL), -EUCLEAN);
	/* Reserved bytes, an LBA shift out of range. */
	memcpy(bad, buf, sizeof(bad));
	bad[55] = 1;
	reseal_wu(bad, sizeof(bad));
	UT_ASSERT_EQ(gga_pk_wu_parse(bad, sizeof(bad), &id, 0, NULL, NULL), -EUCLEAN);
	memcpy(bad, buf, sizeof(bad));
	bad[7] = 8;
	reseal_wu(bad, sizeof(bad));
	UT_ASSERT_EQ(gga_pk_wu_parse(bad, sizeof(bad), &id, 0, NULL, NULL), -EUCLEAN);
	/* A record of another role inside (its own crc good). */
	memcpy(bad, buf, sizeof(bad));
	bad[64 + 6] = 1;
	reseal_rec(bad + 64);
	reseal_wu(bad, sizeof(bad));
	UT_ASSERT_EQ(gga_pk_wu_parse(bad, sizeof(bad), &id, 0, NULL, NULL), -EUCLEAN);
	/* A record whose data_crc lies: caught when asked to check fragments. */
	memcpy(bad, buf, sizeof(bad));
	bad[64 + 36] ^= 1;
	reseal_rec(bad + 64);
	reseal_wu(bad, sizeof(bad));
	UT_ASSERT_EQ(gga_pk_wu_parse(bad, sizeof(bad), &id, 0, NULL, NULL), 512);
	UT_ASSERT_EQ(gga_pk_wu_parse(bad, sizeof(bad), &id, GGA_PK_PARSE_DATA_CRC, NULL, NULL),
		     -EUCLEAN);
	/* A record's padding byte not zero. */
	memcpy(&v, buf + 64 + 12, 4);
	if (le32toh(v) % 16 != 0) {
		memcpy(bad, buf, sizeof(bad));
		bad[64 + gga_pk_record_size(le32toh(v)) - 1] = 1;
		reseal_wu(bad, sizeof(bad));
		UT_ASSERT_EQ(gga_pk_wu_parse(bad, sizeof(bad), &id, 0, NULL, NULL), -EUCLEAN);
	}
}

static int g_calls;

static int
stop_first(void *ctx, const struct gga_pk_rec *rec, uint32_t off, const uint8_t *frag)
{
	(void)ctx;
	(void)rec;
	(void)off;
	(void)frag;
	g_calls++;
	return -ECANCELED;
}

/* Pad records, record padding to 16 bytes, and the WU's padding to an LBA. */
void
test_wu_padding(void)
{
	static uint8_t buf[16384];
	struct gga_pk_wu_id id = make_id(4096, 2, 0);
	struct gga_pk_wu wu;
	struct gga_pk_rec rec = { .type = GGA_PK_REC_DATA,
				  .encoding = GGA_ENC_LZ4,
				  .lba = 1,
				  .generation = 1,
				  .payload_len = 3 };
	struct gga_pk_rec pad = { .type = GGA_PK_REC_PAD };
	struct gga_pk_rec raw = { .type = GGA_PK_REC_DATA,
				  .encoding = GGA_ENC_RAW,
				  .lba = 2,
				  .generation = 2,
				  .payload_len = 8192 };
	static uint8_t frag[4096];
	struct seen seen = { 0 };
	int off;

	memset(buf, 0xcc, sizeof(buf));
	memset(frag, 0x33, sizeof(frag));
	CU_ASSERT_FATAL(gga_pk_wu_init(&wu, buf, sizeof(buf), &id) == 0);
	UT_ASSERT_EQ(wu.cap, 16384);
	/* h = 2: 48 + 2 bytes, padded to 64 with zeros. */
	UT_ASSERT_EQ(gga_pk_wu_add_record(&wu, &rec, frag), 64);
	UT_ASSERT_EQ(buf[64 + 48], 0x33);
	UT_ASSERT_EQ(buf[64 + 49], 0x33);
	CU_ASSERT(mem_is_zero(buf + 64 + 50, 14));
	/* A pad so that the raw fragment after its header starts on an LBA. */
	pad.frag_len = 4096 - 128 - 48 - 48;
	UT_ASSERT_EQ(gga_pk_wu_add_record(&wu, &pad, NULL), 128);
	CU_ASSERT(mem_is_zero(buf + 128 + 48, pad.frag_len));
	off = gga_pk_wu_add_record(&wu, &raw, frag);
	UT_ASSERT_EQ(off + 48, 4096);
	UT_ASSERT_EQ(gga_pk_lba_span((uint32_t)off + 48, 4096, 4096), 1);
	/* 4096 + 4096 bytes of fragment: the WU ends on an LBA, no tail. */
	UT_ASSERT_EQ(gga_pk_wu_finish(&wu), 8192);
	UT_ASSERT_EQ(buf[8192], 0xcc);
	/* The parse skips the pad. */
	UT_ASSERT_EQ(gga_pk_wu_parse(buf, 8192, &id, GGA_PK_PARSE_DATA_CRC, collect, &seen), 8192);
	UT_ASSERT_EQ_FATAL(seen.n, 2);
	UT_ASSERT_EQ(seen.off[0], 64);
	UT_ASSERT_EQ(seen.off[1], 4048);
	/* A callback's non-zero return stops the walk and is what the parse returns. */
	g_calls = 0;
	UT_ASSERT_EQ(gga_pk_wu_parse(buf, 8192, &id, 0, stop_first, NULL), -ECANCELED);
	UT_ASSERT_EQ(g_calls, 1);
	/* Non-zero pad bytes under good crcs are refused. */
	buf[128 + 48 + 5] = 1;
	reseal_wu(buf, sizeof(buf));
	UT_ASSERT_EQ(gga_pk_wu_parse(buf, 8192, &id, 0, NULL, NULL), -EUCLEAN);
}

/* The builder's limits: ids, capacity, the segment's end, -ENOSPC, sealing. */
void
test_wu_limits(void)
{
	static uint8_t buf[GGA_PK_WU_MAX + 4096], frag[4096], copy[1024];
	struct gga_pk_wu_id id = make_id(512, 1, 0), bad;
	struct gga_pk_wu wu, wu_copy;
	struct gga_pk_rec rec = { .type = GGA_PK_REC_DATA,
				  .encoding = GGA_ENC_RAW,
				  .lba = 3,
				  .generation = 3,
				  .payload_len = 1024 };
	struct gga_pk_rec zero = {
		.type = GGA_PK_REC_DATA, .encoding = GGA_ENC_ZERO, .lba = 4, .generation = 4
	};
	int off, i;

	/* Ids that do not build. */
	bad = id;
	bad.lba_size = 256;
	UT_ASSERT_EQ(gga_pk_wu_init(&wu, buf, 4096, &bad), -EINVAL);
	bad.lba_size = 1000;
	UT_ASSERT_EQ(gga_pk_wu_init(&wu, buf, 4096, &bad), -EINVAL);
	bad = id;
	bad.seg_seq = 0;
	UT_ASSERT_EQ(gga_pk_wu_init(&wu, buf, 4096, &bad), -EINVAL);
	bad = id;
	bad.wu_off = 100;
	UT_ASSERT_EQ(gga_pk_wu_init(&wu, buf, 4096, &bad), -EINVAL);
	bad = id;
	bad.wu_off = GGA_PK_SEG_BYTES;
	UT_ASSERT_EQ(gga_pk_wu_init(&wu, buf, 4096, &bad), -EINVAL);
	bad = id;
	bad.role = 3;
	UT_ASSERT_EQ(gga_pk_wu_init(&wu, buf, 4096, &bad), -EINVAL);
	UT_ASSERT_EQ(gga_pk_wu_init(&wu, buf, 511, &id), -EINVAL);
	UT_ASSERT_EQ(gga_pk_wu_init(&wu, NULL, 4096, &id), -EINVAL);

	/* The capacity: rounded down to an LBA, at most 128 KiB, never past the segment. */
	UT_ASSERT_EQ(gga_pk_wu_init(&wu, buf, 1000, &id), 0);
	UT_ASSERT_EQ(wu.cap, 512);
	UT_ASSERT_EQ(gga_pk_wu_init(&wu, buf, sizeof(buf), &id), 0);
	UT_ASSERT_EQ(wu.cap, GGA_PK_WU_MAX);
	id.wu_off = GGA_PK_SEG_BYTES - 1024;
	UT_ASSERT_EQ(gga_pk_wu_init(&wu, buf, sizeof(buf), &id), 0);
	UT_ASSERT_EQ(wu.cap, 1024);

	/* 1024 - 64 = 960 bytes: one record of h = 512 (560) fits, a second does not. */
	UT_ASSERT_EQ(gga_pk_wu_add_record(&wu, &rec, frag), 64);
	memcpy(copy, buf, sizeof(copy));
	wu_copy = wu;
	UT_ASSERT_EQ(gga_pk_wu_add_record(&wu, &rec, frag), -ENOSPC);
	CU_ASSERT(memcmp(copy, buf, sizeof(copy)) == 0);
	CU_ASSERT(memcmp(&wu_copy, &wu, sizeof(wu)) == 0);
	/* Zero records (48 bytes) fill what is left exactly: 400 = 8 x 48 + 16. */
	for (i = 0; i < 8; i++) {
		UT_ASSERT_EQ(gga_pk_wu_add_record(&wu, &zero, NULL), 624 + 48 * i);
	}
	UT_ASSERT_EQ(gga_pk_wu_add_record(&wu, &zero, NULL), -ENOSPC);
	UT_ASSERT_EQ(gga_pk_wu_add_record(&wu, &rec, NULL), -EINVAL);
	rec.type = 9;
	UT_ASSERT_EQ(gga_pk_wu_add_record(&wu, &rec, frag), -EINVAL);
	rec.type = GGA_PK_REC_DATA;
	UT_ASSERT_EQ(gga_pk_wu_finish(&wu), 1024);
	UT_ASSERT_EQ(gga_pk_wu_finish(&wu), -EINVAL);
	UT_ASSERT_EQ(gga_pk_wu_add_record(&wu, &zero, NULL), -EINVAL);
	UT_ASSERT_EQ(gga_pk_wu_parse(buf, 1024, &id, 0, NULL, NULL), 1024);

	/* One LBA of 512: 448 bytes after the header; h = 401 needs 464, h = 400 fits exactly. */
	id.wu_off = 0;
	UT_ASSERT_EQ(gga_pk_wu_init(&wu, buf, 512, &id), 0);
	rec.payload_len = 802;
	UT_ASSERT_EQ(gga_pk_wu_add_record(&wu, &rec, frag), -ENOSPC);
	UT_ASSERT_EQ(wu.used, 64);
	rec.payload_len = 800;
	UT_ASSERT_EQ(gga_pk_wu_add_record(&wu, &rec, frag), 64);
	UT_ASSERT_EQ(wu.used, 512);
	UT_ASSERT_EQ(gga_pk_wu_add_record(&wu, &zero, NULL), -ENOSPC);
	UT_ASSERT_EQ(gga_pk_wu_finish(&wu), 512);
	UT_ASSERT_EQ(gga_pk_wu_parse(buf, 512, &id, GGA_PK_PARSE_DATA_CRC, NULL, NULL), 512);

	/* An empty WU is one LBA with only its header. */
	id.wu_off = 0;
	UT_ASSERT_EQ(gga_pk_wu_init(&wu, buf, sizeof(buf), &id), 0);
	UT_ASSERT_EQ(gga_pk_wu_finish(&wu), 512);
	UT_ASSERT_EQ(gga_pk_wu_parse(buf, 512, &id, 0, NULL, NULL), 512);
	/* The largest record: a raw 64 KiB block with k = 1 (4 KiB LBAs). */
	id = make_id(4096, 1, 0);
	id.k = 1;
	off = gga_pk_wu_init(&wu, buf, sizeof(buf), &id);
	UT_ASSERT_EQ(off, 0);
	rec.payload_len = 65536;
	{
		static uint8_t big[65536];

		fill_rnd(big, sizeof(big));
		UT_ASSERT_EQ(gga_pk_wu_add_record(&wu, &rec, big), 64);
		UT_ASSERT_EQ(gga_pk_wu_finish(&wu), 69632);
		UT_ASSERT_EQ(gga_pk_wu_parse(buf, sizeof(buf), &id, GGA_PK_PARSE_DATA_CRC, NULL,
					     NULL),
			     69632);
	}
}

/* Walk a WU that passed: every record inside it, each one valid. */
static int
check_rec(void *ctx, const struct gga_pk_rec *rec, uint32_t off, const uint8_t *frag)
{
	const struct gga_pk_wu_hdr *h = ctx;

	CU_ASSERT(off >= GGA_PK_WU_HDR_SIZE && off % 16 == 0);
	CU_ASSERT(off + gga_pk_record_size(rec->frag_len) <= h->used);
	CU_ASSERT(frag == NULL || rec->frag_len <= GGA_PK_FRAG_MAX);
	CU_ASSERT(rec->type == GGA_PK_REC_DATA || rec->type == GGA_PK_REC_TRIM);
	return 0;
}

/*
 * Seeded random garbage, and random damage to good WUs resealed with fresh
 * crcs so that it reaches the record checks: never a crash (ASan lane), and
 * anything accepted keeps its records inside the WU.
 */
void
test_fuzz(void)
{
	static uint8_t buf[16384], good[16384];
	struct gga_pk_wu_id id = make_id(512, 1, 0);
	struct gga_pk_wu_hdr h;
	struct gga_pk_rec rec;
	uint32_t t, i, n, len;
	int rc, glen, accepted = 0;

	g_x = 0x2545f4914f6cdd1dull;
	for (t = 0; t < 20000; t++) {
		len = 1 + (uint32_t)(rnd() % sizeof(buf));
		fill_rnd(buf, len);
		if (t % 2 == 0) {
			/* A plausible header, so the checks after the magic run. */
			put32(buf, GGA_PK_WU_MAGIC);
			buf[4] = GGA_PK_VERSION;
		}
		rc = gga_pk_wu_parse(buf, len, &id, GGA_PK_PARSE_DATA_CRC, NULL, NULL);
		CU_ASSERT(rc < 0);
		rc = gga_pk_record_decode(buf, len, 0, 0, &rec);
		CU_ASSERT(rc < 0);
	}
	for (t = 0; t < 3000; t++) {
		glen = small_wu(good, sizeof(good), &id, 1 + (uint32_t)(rnd() % 12));
		CU_ASSERT_FATAL(glen > 0);
		memcpy(buf, good, sizeof(buf));
		n = 1 + (uint32_t)(rnd() % 4);
		for (i = 0; i < n; i++) {
			/* Mostly in the record headers' region. */
			uint32_t at = (uint32_t)(rnd() % (uint32_t)(t % 3 == 0 ? glen : 256));

			buf[at] ^= (uint8_t)(1 + rnd() % 255);
		}
		if (t % 4 != 0) {
			if (rnd() % 2) {
				reseal_rec(buf + 64);
			}
			reseal_wu(buf, sizeof(buf));
		}
		if (gga_pk_wu_hdr_decode(buf, &id, &h) != 0) {
			continue;
		}
		rc = gga_pk_wu_parse(buf, sizeof(buf), &id, t % 2 ? GGA_PK_PARSE_DATA_CRC : 0,
				     check_rec, &h);
		if (rc > 0) {
			accepted++;
			CU_ASSERT(rc == (int)h.wu_len);
		}
	}
	/* Some damage passes (a data byte under resealed crcs), most does not. */
	CU_ASSERT(accepted > 0 && accepted < 3000);
}
