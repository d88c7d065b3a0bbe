/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of gga_packed_block: one block as packed records, written as
 * one WU per member and read back from any k of them, never as wrong data.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gga/util.h"
#include "bdev_gga/gga_packed_block.h"
#include "gga_ut.h"

#define LBA_SIZE 512u
#define CAP      (128u << 10)

static uint64_t g_x = 0x9e3779b97f4a7c15ull;

static uint64_t
rnd(void)
{
	g_x ^= g_x << 13;
	g_x ^= g_x >> 7;
	g_x ^= g_x << 17;
	return g_x;
}

enum kind { K_RANDOM, K_ZERO, K_HALF, K_TEXT, K_COUNT };

/* K_HALF: random 16-byte chunks every other chunk, zeros between: about 2:1. */
static void
fill(uint8_t *p, uint32_t len, enum kind kind)
{
	uint32_t i;

	for (i = 0; i < len; i++) {
		switch (kind) {
		case K_RANDOM:
			p[i] = (uint8_t)rnd();
			break;
		case K_ZERO:
			p[i] = 0;
			break;
		case K_HALF:
			p[i] = (i / 16) % 2 == 0 ? (uint8_t)rnd() : 0;
			break;
		default:
			p[i] = (uint8_t) "gga packs! "[i % 11];
			break;
		}
	}
}

/* A codec, its scratch, and buffers for the k + m members' WUs and fragments. */
struct env {
	struct gga_codec *c;
	struct gga_codec_scratch *s;
	uint32_t B, k, m, n;
	struct gga_pk_wu_id id;
	uint8_t *block, *out;
	void *frag[GGA_CODEC_MAX_FRAGS];
	void *wu[GGA_CODEC_MAX_FRAGS];
};

static void
env_init(struct env *e, uint32_t B, uint32_t k, uint32_t m)
{
	struct gga_codec_opts o;
	uint32_t i;

	memset(e, 0, sizeof(*e));
	gga_codec_opts_init(&o);
	o.block_size = B;
	o.k = k;
	o.m = m;
	o.matrix = GGA_MATRIX_CAUCHY;
	UT_ASSERT_EQ_FATAL(gga_codec_create(&o, &e->c), 0);
	UT_ASSERT_EQ_FATAL(gga_codec_scratch_alloc(e->c, &e->s), 0);
	e->B = B;
	e->k = k;
	e->m = m;
	e->n = k + m;
	for (i = 0; i < 16; i++) {
		e->id.array_uuid[i] = (uint8_t)(0xa0 + i);
	}
	e->id.seg_seq = 7;
	e->id.wu_off = 4096;
	e->id.lba_size = LBA_SIZE;
	e->id.k = (uint8_t)k;
	e->id.m = (uint8_t)m;
	e->block = malloc(B);
	e->out = malloc(B);
	CU_ASSERT_FATAL(e->block != NULL && e->out != NULL);
	for (i = 0; i < e->n; i++) {
		e->frag[i] = malloc(B / k);
		e->wu[i] = malloc(CAP);
		CU_ASSERT_FATAL(e->frag[i] != NULL && e->wu[i] != NULL);
	}
}

static void
env_fini(struct env *e)
{
	uint32_t i;

	for (i = 0; i < e->n; i++) {
		free(e->frag[i]);
		free(e->wu[i]);
	}
	free(e->block);
	free(e->out);
	gga_codec_scratch_free(e->s);
	gga_codec_destroy(e->c);
}

/* Member i's record: where the read path would have read it from. */
static const void *
rec_of(const struct env *e, const struct gga_pkb_write *w, uint32_t i)
{
	return (const uint8_t *)e->wu[i] + w->rec_off;
}

static int
read_back(struct env *e, const struct gga_pkb_write *w, const void *const rec[], uint32_t mask,
	  uint64_t lba, uint64_t gen, uint32_t *bad)
{
	int rc;

	memset(e->out, 0x5a, e->B);
	rc = gga_pkb_read(e->c, e->s, rec, w->rec_size, mask, lba, gen, e->out, bad);
	if (rc == 0) {
		CU_ASSERT(memcmp(e->out, e->block, e->B) == 0);
	}
	return rc;
}

/* What the parser hands out of one WU. */
struct seen {
	uint32_t n;
	struct gga_pk_rec rec;
	uint32_t off;
};

static int
collect(void *ctx, const struct gga_pk_rec *rec, uint32_t off, const uint8_t *frag)
{
	struct seen *s = ctx;

	(void)frag;
	s->n++;
	s->rec = *rec;
	s->off = off;
	return 0;
}

static void
roundtrip(struct env *e, enum kind kind, uint64_t lba, uint64_t gen)
{
	const void *rec[GGA_CODEC_MAX_FRAGS];
	struct gga_pk_wu_id want = e->id;
	struct gga_pkb_write w;
	struct seen seen;
	uint32_t i, mask, bad;

	fill(e->block, e->B, kind);
	UT_ASSERT_EQ_FATAL(gga_pkb_build(e->c, e->s, e->block, lba, gen, &e->id, e->frag, e->wu,
					 CAP, &w),
			   0);
	UT_ASSERT_EQ(w.rec_off, GGA_PK_WU_HDR_SIZE);
	UT_ASSERT_EQ(w.rec_size, gga_pk_record_size(w.info.frag_len));
	UT_ASSERT_EQ(w.wu_len % LBA_SIZE, 0);
	CU_ASSERT(w.wu_len >= w.rec_off + w.rec_size);
	CU_ASSERT(w.wu_len <= gga_pkb_wu_max(e->c, LBA_SIZE));
	for (i = 0; i < e->n; i++) {
		/* Each member's WU is a valid WU of its role, holding the one record. */
		want.role = (uint8_t)i;
		memset(&seen, 0, sizeof(seen));
		UT_ASSERT_EQ(gga_pk_wu_parse(e->wu[i], w.wu_len, &want, GGA_PK_PARSE_DATA_CRC,
					     collect, &seen),
			     (int)w.wu_len);
		UT_ASSERT_EQ(seen.n, 1);
		UT_ASSERT_EQ(seen.off, w.rec_off);
		UT_ASSERT_EQ(seen.rec.lba, lba);
		UT_ASSERT_EQ(seen.rec.generation, gen);
		UT_ASSERT_EQ(seen.rec.role, i);
		rec[i] = rec_of(e, &w, i);
	}
	/* Any k members give the block back; fewer never do. */
	for (mask = 0; mask < (1u << e->n); mask++) {
		int rc = read_back(e, &w, rec, mask, lba, gen, &bad);

		UT_ASSERT_EQ(bad, 0);
		UT_ASSERT_EQ(rc, (uint32_t)__builtin_popcount(mask) >= e->k ? 0 : -EIO);
	}
	/* Another block or generation finds nothing of its own. */
	UT_ASSERT_EQ(read_back(e, &w, rec, (1u << e->n) - 1, lba + 1, gen, &bad), -EIO);
	UT_ASSERT_EQ(bad, (1u << e->n) - 1);
	UT_ASSERT_EQ(read_back(e, &w, rec, (1u << e->n) - 1, lba, gen + 1, &bad), -EIO);
	UT_ASSERT_EQ(bad, (1u << e->n) - 1);
}

static void
test_roundtrip(void)
{
	static const uint32_t geo[][3] = {
		{ 4096, 2, 1 }, { 1024, 2, 1 }, { 8192, 4, 2 }, { 4096, 1, 1 }, { 65536, 2, 1 }
	};
	struct env e;
	uint32_t g;
	int kind;

	for (g = 0; g < ARRAY_SIZE(geo); g++) {
		env_init(&e, geo[g][0], geo[g][1], geo[g][2]);
		for (kind = 0; kind < K_COUNT; kind++) {
			roundtrip(&e, (enum kind)kind, 1000 + (uint64_t)kind, 3 + (uint64_t)kind);
		}
		env_fini(&e);
	}
}

/* Data LZ4 halves takes well under the member bytes of a raw block. */
static void
test_compressible_smaller(void)
{
	struct gga_pkb_write raw, half;
	struct env e;

	env_init(&e, 4096, 2, 1);
	fill(e.block, e.B, K_RANDOM);
	UT_ASSERT_EQ_FATAL(gga_pkb_build(e.c, e.s, e.block, 1, 1, &e.id, e.frag, e.wu, CAP, &raw),
			   0);
	UT_ASSERT_EQ(raw.info.encoding, GGA_ENC_RAW);
	UT_ASSERT_EQ(raw.wu_len, gga_pkb_wu_max(e.c, LBA_SIZE));
	fill(e.block, e.B, K_HALF);
	UT_ASSERT_EQ_FATAL(gga_pkb_build(e.c, e.s, e.block, 1, 2, &e.id, e.frag, e.wu, CAP, &half),
			   0);
	UT_ASSERT_EQ(half.info.encoding, GGA_ENC_LZ4);
	CU_ASSERT(half.rec_size * 3 < raw.rec_size * 2);
	CU_ASSERT(half.wu_len < raw.wu_len);
	env_fini(&e);
}

/* Damaged, swapped, foreign and conflicting records never make wrong data. */
static void
test_bad_records(void)
{
	const void *rec[GGA_CODEC_MAX_FRAGS];
	struct gga_pkb_write w, w2;
	uint8_t *copy0, *other[3];
	struct env e;
	uint32_t bad, i;

	env_init(&e, 4096, 2, 1);
	fill(e.block, e.B, K_HALF);
	UT_ASSERT_EQ_FATAL(gga_pkb_build(e.c, e.s, e.block, 9, 5, &e.id, e.frag, e.wu, CAP, &w), 0);
	for (i = 0; i < 3; i++) {
		rec[i] = rec_of(&e, &w, i);
	}
	/* A flipped fragment byte on data member 0: parity stands in for it. */
	copy0 = malloc(w.rec_size);
	CU_ASSERT_FATAL(copy0 != NULL);
	memcpy(copy0, rec[0], w.rec_size);
	copy0[GGA_PK_REC_HDR_SIZE + 3] ^= 0x40;
	rec[0] = copy0;
	UT_ASSERT_EQ(read_back(&e, &w, rec, 0x7, 9, 5, &bad), 0);
	UT_ASSERT_EQ(bad, 0x1);
	UT_ASSERT_EQ(read_back(&e, &w, rec, 0x3, 9, 5, &bad), -EIO);
	UT_ASSERT_EQ(bad, 0x1);
	/* Roles swapped (members in the wrong slots): neither counts. */
	rec[0] = rec_of(&e, &w, 1);
	rec[1] = rec_of(&e, &w, 0);
	UT_ASSERT_EQ(read_back(&e, &w, rec, 0x7, 9, 5, &bad), -EIO);
	UT_ASSERT_EQ(bad, 0x3);
	/* Short reads: the fragment is not all there. */
	rec[0] = rec_of(&e, &w, 0);
	rec[1] = rec_of(&e, &w, 1);
	UT_ASSERT_EQ(gga_pkb_read(e.c, e.s, rec, GGA_PK_REC_HDR_SIZE + 1, 0x7, 9, 5, e.out, &bad),
		     -EIO);
	UT_ASSERT_EQ(bad, 0x7);

	/*
	 * Another write of block 9 with the same generation (never written by
	 * a correct writer, but damage may look like it): member 1's record
	 * names another write than member 0's, so it does not count.
	 */
	for (i = 0; i < 3; i++) {
		other[i] = malloc(CAP);
		CU_ASSERT_FATAL(other[i] != NULL);
	}
	memcpy(e.out, e.block, e.B);
	fill(e.block, e.B, K_TEXT);
	UT_ASSERT_EQ_FATAL(gga_pkb_build(e.c, e.s, e.block, 9, 5, &e.id, e.frag,
					 (void *const *)other, CAP, &w2),
			   0);
	memcpy(e.block, e.out, e.B);
	rec[1] = other[1] + w2.rec_off;
	UT_ASSERT_EQ(read_back(&e, &w, rec, 0x7, 9, 5, &bad), 0);
	UT_ASSERT_EQ(bad, 0x2);
	UT_ASSERT_EQ(read_back(&e, &w, rec, 0x3, 9, 5, &bad), -EIO);
	for (i = 0; i < 3; i++) {
		free(other[i]);
	}
	free(copy0);
	UT_ASSERT_EQ(gga_pkb_read(e.c, e.s, rec, w.rec_size, 0x8, 9, 5, e.out, NULL), -EINVAL);
	UT_ASSERT_EQ(gga_pkb_read(e.c, e.s, rec, w.rec_size, 0x7, 9, 0, e.out, NULL), -EINVAL);
	env_fini(&e);
}

static void
test_trim_and_limits(void)
{
	const void *rec[GGA_CODEC_MAX_FRAGS];
	struct gga_pk_wu_id want;
	struct gga_pkb_write w;
	struct seen seen;
	struct env e;
	uint32_t i, bad;

	env_init(&e, 4096, 2, 1);
	UT_ASSERT_EQ_FATAL(gga_pkb_build_trim(3, 40, 8, 12, &e.id, e.wu, CAP, &w), 0);
	UT_ASSERT_EQ(w.rec_size, GGA_PK_REC_HDR_SIZE);
	UT_ASSERT_EQ(w.wu_len, LBA_SIZE);
	for (i = 0; i < 3; i++) {
		want = e.id;
		want.role = (uint8_t)i;
		memset(&seen, 0, sizeof(seen));
		UT_ASSERT_EQ(gga_pk_wu_parse(e.wu[i], w.wu_len, &want, 0, collect, &seen),
			     (int)w.wu_len);
		UT_ASSERT_EQ(seen.n, 1);
		UT_ASSERT_EQ(seen.rec.type, GGA_PK_REC_TRIM);
		UT_ASSERT_EQ(seen.rec.lba, 40);
		UT_ASSERT_EQ(seen.rec.payload_len, 8);
		UT_ASSERT_EQ(seen.rec.generation, 12);
		rec[i] = rec_of(&e, &w, i);
	}
	/* A trim record is no data of the block. */
	UT_ASSERT_EQ(gga_pkb_read(e.c, e.s, rec, w.rec_size, 0x7, 40, 12, e.out, &bad), -EIO);
	UT_ASSERT_EQ(bad, 0x7);
	UT_ASSERT_EQ(gga_pkb_build_trim(2, 40, 8, 12, &e.id, e.wu, CAP, &w), -EINVAL);
	UT_ASSERT_EQ(gga_pkb_build_trim(3, 40, 0, 12, &e.id, e.wu, CAP, &w), -EINVAL);
	/* A raw block does not fit a WU of one LBA; a codec of another geometry is refused. */
	fill(e.block, e.B, K_RANDOM);
	UT_ASSERT_EQ(gga_pkb_build(e.c, e.s, e.block, 1, 1, &e.id, e.frag, e.wu, LBA_SIZE, &w),
		     -ENOSPC);
	e.id.k = 4;
	UT_ASSERT_EQ(gga_pkb_build(e.c, e.s, e.block, 1, 1, &e.id, e.frag, e.wu, CAP, &w), -EINVAL);
	e.id.k = 2;
	UT_ASSERT_EQ(gga_pkb_build(e.c, e.s, e.block, 1, 0, &e.id, e.frag, e.wu, CAP, &w), -EINVAL);
	env_fini(&e);
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_roundtrip),
		UT_TEST(test_compressible_smaller),
		UT_TEST(test_bad_records),
		UT_TEST(test_trim_and_limits),
	};

	return ut_run("gga_packed_block", tests, ARRAY_SIZE(tests), NULL, NULL);
}
