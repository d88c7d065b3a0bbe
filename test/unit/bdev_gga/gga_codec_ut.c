/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the gga codec and on-target format: round trips, recovery,
 * corruption and torn-write resolution, never-written blocks, rebuild, and
 * superblock validation. The helpers are in gga_codec_ut_env.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l/erasure_code.h>

#include "gga/log.h"
#include "gga/util.h"
#include "bdev_gga/gga_codec.h"
#include "gga_codec_ut_env.h"
#include "gga_ut.h"

/* Rewrite fragment i's metadata with one field changed and a valid md_crc. */
static void
md_rewrite(struct fset *f, uint32_t i, uint64_t lba, void (*change)(struct gga_frag_md *md))
{
	struct gga_frag_md md;

	UT_ASSERT_EQ_FATAL(gga_frag_md_decode(f->md[i], lba, &md), 0);
	change(&md);
	gga_frag_md_encode(&md, lba, f->md[i]);
}

/* ---------------------------------------------------------------------- */
/* Parity                                                                  */
/* ---------------------------------------------------------------------- */

/* The parity the format promises: XOR for vandermonde 2+1, 142*d1 + 244*d2 for cauchy. */
static void
test_parity_matrix(void)
{
	struct env e;
	uint32_t j, H;
	const uint8_t *d1, *d2, *p;

	env_init(&e, 4096, 2, 1, GGA_MATRIX_VANDERMONDE);
	H = e.B / 2;
	fill_kind(e.block, e.B, KIND_RANDOM);
	UT_ASSERT_EQ(env_encode(&e, &e.f, 3, 1, NULL), 0);
	d1 = e.f.data[0];
	d2 = e.f.data[1];
	p = e.f.data[2];
	CU_ASSERT(memcmp(d1, e.block, H) == 0);
	CU_ASSERT(memcmp(d2, e.block + H, H) == 0);
	for (j = 0; j < H; j++) {
		if (p[j] != (d1[j] ^ d2[j])) {
			CU_FAIL("vandermonde parity is not d1 ^ d2");
			break;
		}
	}
	env_fini(&e);

	env_init(&e, 4096, 2, 1, GGA_MATRIX_CAUCHY);
	fill_kind(e.block, e.B, KIND_RANDOM);
	UT_ASSERT_EQ(env_encode(&e, &e.f, 3, 1, NULL), 0);
	d1 = e.f.data[0];
	d2 = e.f.data[1];
	p = e.f.data[2];
	UT_ASSERT_EQ(gf_inv(2 ^ 0), 142);
	UT_ASSERT_EQ(gf_inv(2 ^ 1), 244);
	for (j = 0; j < H; j++) {
		if (p[j] != (gf_mul(142, d1[j]) ^ gf_mul(244, d2[j]))) {
			CU_FAIL("cauchy parity is not 142*d1 + 244*d2");
			break;
		}
	}
	env_fini(&e);
}

/* ---------------------------------------------------------------------- */
/* Codec creation and arguments                                            */
/* ---------------------------------------------------------------------- */

static void
test_create_validation(void)
{
	struct gga_codec_opts opts;
	struct gga_codec *c = NULL;
	struct gga_codec_scratch *s = NULL;
	static const struct {
		uint32_t bs, k, m, md;
		int matrix;
	} bad[] = {
		{ 256, 2, 1, 32, 1 },
		{ 131072, 2, 1, 32, 1 },
		{ 3072, 2, 1, 32, 1 },
		{ 4096, 0, 1, 32, 1 },
		{ 4096, 2, 0, 32, 1 },
		{ 4096, 8, 9, 32, 2 },
		{ 4096, 3, 1, 32, 1 },
		{ 4096, 2, 1, 31, 1 },
		{ 4096, 2, 1, 32, 0 },
		{ 4096, 2, 1, 32, 3 },
		/* Vandermonde is not MDS for 8 + 5: some patterns are singular. */
		{ 4096, 8, 5, 32, 1 },
	};
	size_t i;

	/* The codec logs each refusal; the expected ones would only be noise here. */
	log_set_level(LOG_LEVEL_DISABLED);
	UT_ASSERT_EQ(gga_codec_create(NULL, &c), -EINVAL);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		gga_codec_opts_init(&opts);
		opts.block_size = bad[i].bs;
		opts.k = bad[i].k;
		opts.m = bad[i].m;
		opts.md_size = bad[i].md;
		opts.matrix = (enum gga_matrix)bad[i].matrix;
		c = NULL;
		UT_ASSERT_EQ(gga_codec_create(&opts, &c), -EINVAL);
		CU_ASSERT(c == NULL);
	}
	log_set_level(LOG_LEVEL_NOTICE);

	gga_codec_opts_init(&opts);
	UT_ASSERT_EQ(gga_codec_create(&opts, NULL), -EINVAL);
	UT_ASSERT_EQ(gga_codec_create(&opts, &c), 0);
	UT_ASSERT_EQ(gga_codec_block_size(c), 4096);
	UT_ASSERT_EQ(gga_codec_frag_size(c), 2048);
	UT_ASSERT_EQ(gga_codec_md_size(c), GGA_FRAG_MD_SIZE);
	UT_ASSERT_EQ(gga_codec_k(c), 2);
	UT_ASSERT_EQ(gga_codec_m(c), 1);
	UT_ASSERT_EQ(gga_codec_matrix(c), GGA_MATRIX_VANDERMONDE);
	UT_ASSERT_EQ(gga_codec_scratch_alloc(c, NULL), -EINVAL);
	UT_ASSERT_EQ(gga_codec_scratch_alloc(c, &s), 0);
	gga_codec_scratch_free(s);
	gga_codec_destroy(c);

	/* The extremes that must work: 8 + 8 cauchy, 1 + 15, 512-byte blocks with k = 8. */
	opts.k = 8;
	opts.m = 8;
	opts.matrix = GGA_MATRIX_CAUCHY;
	UT_ASSERT_EQ(gga_codec_create(&opts, &c), 0);
	gga_codec_destroy(c);
	opts.k = 1;
	opts.m = 15;
	UT_ASSERT_EQ(gga_codec_create(&opts, &c), 0);
	gga_codec_destroy(c);
	opts.block_size = 512;
	opts.k = 8;
	opts.m = 2;
	opts.matrix = GGA_MATRIX_VANDERMONDE;
	UT_ASSERT_EQ(gga_codec_create(&opts, &c), 0);
	UT_ASSERT_EQ(gga_codec_frag_size(c), 64);
	gga_codec_destroy(c);
	gga_codec_destroy(NULL);
	gga_codec_scratch_free(NULL);
}

static void
test_bad_args(void)
{
	struct env e;
	struct gga_codec *other;
	struct gga_codec_scratch *other_s;
	const void *nulls[GGA_CODEC_MAX_FRAGS] = { NULL };
	void *wnulls[GGA_CODEC_MAX_FRAGS] = { NULL };

	env_init(&e, 4096, 2, 1, GGA_MATRIX_VANDERMONDE);
	fill_kind(e.block, e.B, KIND_MILD);
	UT_ASSERT_EQ(env_encode(&e, &e.f, 0, 0, NULL), -EINVAL);
	UT_ASSERT_EQ(gga_codec_encode(e.c, e.s, NULL, 0, 1, e.f.data, e.f.md, NULL), -EINVAL);
	UT_ASSERT_EQ(gga_codec_encode(e.c, NULL, e.block, 0, 1, e.f.data, e.f.md, NULL), -EINVAL);
	UT_ASSERT_EQ(gga_codec_encode(e.c, e.s, e.block, 0, 1, wnulls, e.f.md, NULL), -EINVAL);
	UT_ASSERT_EQ(gga_codec_encode_zero(e.c, 0, 0, e.f.data, e.f.md, NULL), -EINVAL);
	UT_ASSERT_EQ(gga_codec_encode_zero(e.c, 0, 1, e.f.data, wnulls, NULL), -EINVAL);
	UT_ASSERT_EQ(env_encode(&e, &e.f, 0, 1, NULL), 0);

	UT_ASSERT_EQ(env_decode(&e, &e.f, 0x8, 0, NULL, NULL), -EINVAL);
	UT_ASSERT_EQ(gga_codec_decode(e.c, e.s, e.f.cdata, e.f.cmd, 0x7, 0, NULL, NULL), -EINVAL);
	UT_ASSERT_EQ(gga_codec_decode(e.c, NULL, e.f.cdata, e.f.cmd, 0x7, 0, e.out, NULL), -EINVAL);
	UT_ASSERT_EQ(gga_codec_decode(e.c, e.s, nulls, e.f.cmd, 0x7, 0, e.out, NULL), -EINVAL);
	/* NULL is fine for fragments left out of the mask. */
	UT_ASSERT_EQ(gga_codec_decode(e.c, e.s, nulls, nulls, 0, 0, e.out, NULL), -EIO);

	/* A scratch serves codecs of its block size only. */
	other = codec_new(8192, 2, 1, GGA_MATRIX_VANDERMONDE);
	UT_ASSERT_EQ_FATAL(gga_codec_scratch_alloc(other, &other_s), 0);
	UT_ASSERT_EQ(gga_codec_encode(e.c, other_s, e.block, 0, 1, e.f.data, e.f.md, NULL),
		     -EINVAL);
	UT_ASSERT_EQ(gga_codec_decode(e.c, other_s, e.f.cdata, e.f.cmd, 0x7, 0, e.out, NULL),
		     -EINVAL);
	gga_codec_scratch_free(other_s);
	gga_codec_destroy(other);

	UT_ASSERT_EQ(gga_codec_rebuild(e.c, e.s, e.f.cdata, e.f.cmd, 0x3, 0, 0, e.f.data, e.f.md,
				       NULL),
		     -EINVAL);
	UT_ASSERT_EQ(gga_codec_rebuild(e.c, e.s, e.f.cdata, e.f.cmd, 0x3, 0, 0x8, e.f.data, e.f.md,
				       NULL),
		     -EINVAL);
	UT_ASSERT_EQ(gga_codec_rebuild(e.c, e.s, e.f.cdata, e.f.cmd, 0x3, 0, 0x4, wnulls, e.f.md,
				       NULL),
		     -EINVAL);
	env_fini(&e);
}

/* ---------------------------------------------------------------------- */
/* Round trips and recovery                                                */
/* ---------------------------------------------------------------------- */

static void
check_expected_encoding(struct env *e, enum kind kind, const struct gga_encode_info *info)
{
	uint32_t F = e->B / e->k;

	switch (kind) {
	case KIND_RANDOM:
		UT_ASSERT_EQ(info->encoding, GGA_ENC_RAW);
		UT_ASSERT_EQ(info->payload_len, e->B);
		break;
	case KIND_ZERO:
		UT_ASSERT_EQ(info->encoding, GGA_ENC_ZERO);
		UT_ASSERT_EQ(info->payload_len, 0);
		break;
	case KIND_HIGH:
		UT_ASSERT_EQ(info->encoding, GGA_ENC_LZ4);
		CU_ASSERT(info->payload_len <= F);
		break;
	case KIND_MILD:
		UT_ASSERT_EQ(info->encoding, GGA_ENC_LZ4);
		CU_ASSERT(info->payload_len > F && info->payload_len < e->B);
		break;
	default:
		CU_ASSERT(info->encoding == GGA_ENC_LZ4 || info->encoding == GGA_ENC_RAW);
		break;
	}
}

static void
roundtrip_one(struct env *e, enum kind kind, uint64_t lba)
{
	struct gga_encode_info einfo;
	struct gga_decode_info info;
	uint32_t i;

	fill_kind(e->block, e->B, kind);
	memset(e->f.buf, 0xee, (size_t)e->n * (e->f.frag_size + e->f.md_size));
	UT_ASSERT_EQ_FATAL(env_encode(e, &e->f, lba, lba + 1, &einfo), 0);
	check_expected_encoding(e, kind, &einfo);
	UT_ASSERT_EQ(einfo.block_crc, gga_crc32c(e->block, e->B, 0));
	for (i = 0; i < e->n; i++) {
		/* Metadata bytes beyond the format's are written as zero. */
		CU_ASSERT(mem_is_zero((uint8_t *)e->f.md[i] + GGA_FRAG_MD_SIZE,
				      TEST_MD_SIZE - GGA_FRAG_MD_SIZE));
	}
	/* Regular read: the data fragments only. */
	UT_ASSERT_EQ(env_decode(e, &e->f, (1u << e->k) - 1, lba, e->block, &info), 0);
	UT_ASSERT_EQ(info.encoding, einfo.encoding);
	UT_ASSERT_EQ(info.payload_len, einfo.payload_len);
	UT_ASSERT_EQ(info.generation, lba + 1);
	UT_ASSERT_EQ(info.valid_mask, (1u << e->k) - 1);
	UT_ASSERT_EQ(info.missing_mask, e->all & ~((1u << e->k) - 1));
	UT_ASSERT_EQ(info.rebuilt_mask, 0);
	UT_ASSERT_EQ(info.corrupt_mask | info.stale_mask | info.orphan_mask, 0);
	/* Everything present: parity is checked too. */
	UT_ASSERT_EQ(env_decode(e, &e->f, e->all, lba, e->block, &info), 0);
	UT_ASSERT_EQ(info.valid_mask, e->all);
	for (i = 0; i < e->n; i++) {
		UT_ASSERT_EQ(info.status[i], GGA_FRAG_VALID);
	}
}

static void
test_roundtrip_all_sizes(void)
{
	struct env e;
	uint32_t bs;
	int matrix, kind;

	for (bs = 512; bs <= 65536; bs *= 2) {
		for (matrix = GGA_MATRIX_VANDERMONDE; matrix <= GGA_MATRIX_CAUCHY; matrix++) {
			env_init(&e, bs, 2, 1, (enum gga_matrix)matrix);
			for (kind = 0; kind < KIND_COUNT; kind++) {
				roundtrip_one(&e, (enum kind)kind, bs + (uint64_t)kind);
			}
			env_fini(&e);
		}
	}
}

static void
test_encode_zero(void)
{
	struct gga_encode_info einfo;
	struct gga_decode_info info;
	struct env e;
	uint32_t i;

	env_init(&e, 4096, 2, 1, GGA_MATRIX_CAUCHY);
	memset(e.f.buf, 0x5a, (size_t)e.n * (e.f.frag_size + e.f.md_size));
	UT_ASSERT_EQ(gga_codec_encode_zero(e.c, 77, 9, e.f.data, e.f.md, &einfo), 0);
	UT_ASSERT_EQ(einfo.encoding, GGA_ENC_ZERO);
	UT_ASSERT_EQ(einfo.payload_len, 0);
	for (i = 0; i < e.n; i++) {
		CU_ASSERT(mem_is_zero(e.f.data[i], e.f.frag_size));
	}
	memset(e.block, 0, e.B);
	UT_ASSERT_EQ(env_decode(&e, &e.f, e.all, 77, e.block, &info), 0);
	UT_ASSERT_EQ(info.encoding, GGA_ENC_ZERO);
	UT_ASSERT_EQ(info.generation, 9);
	UT_ASSERT_EQ(info.valid_mask, e.all);
	/* Zero data under zero-encoding metadata is still checked. */
	((uint8_t *)e.f.data[1])[100] = 1;
	UT_ASSERT_EQ(env_decode(&e, &e.f, e.all, 77, e.block, &info), 0);
	UT_ASSERT_EQ(info.status[1], GGA_FRAG_BAD_DATA_CRC);
	((uint8_t *)e.f.data[1])[100] = 0;
	/* One fragment is not enough even for a zero block. */
	UT_ASSERT_EQ(env_decode(&e, &e.f, 0x4, 77, NULL, &info), -EIO);
	env_fini(&e);
}

/* Decode with every single fragment left out. */
static void
test_single_erasure(void)
{
	struct gga_decode_info info;
	struct gga_encode_info einfo;
	struct env e;
	uint32_t i, F;
	int matrix, kind;

	for (matrix = GGA_MATRIX_VANDERMONDE; matrix <= GGA_MATRIX_CAUCHY; matrix++) {
		env_init(&e, 4096, 2, 1, (enum gga_matrix)matrix);
		F = e.B / 2;
		for (kind = 0; kind < KIND_COUNT; kind++) {
			fill_kind(e.block, e.B, (enum kind)kind);
			UT_ASSERT_EQ_FATAL(env_encode(&e, &e.f, 11, 5, &einfo), 0);
			for (i = 0; i < e.n; i++) {
				uint32_t mask = e.all & ~(1u << i);
				bool needed;

				UT_ASSERT_EQ(env_decode(&e, &e.f, mask, 11, e.block, &info), 0);
				UT_ASSERT_EQ(info.valid_mask, mask);
				UT_ASSERT_EQ(info.missing_mask, 1u << i);
				/* A lost data fragment is rebuilt only if it carries payload. */
				needed = i < e.k && (einfo.encoding == GGA_ENC_RAW ||
						     (einfo.encoding == GGA_ENC_LZ4 &&
						      einfo.payload_len > i * F));
				UT_ASSERT_EQ(info.rebuilt_mask, needed ? 1u << i : 0);
				if (needed) {
					UT_ASSERT_EQ(info.used_mask, mask);
				}
			}
			/* Two lost fragments of 2 + 1: unreadable. */
			for (i = 0; i < e.n; i++) {
				UT_ASSERT_EQ(env_decode(&e, &e.f, 1u << i, 11, NULL, &info), -EIO);
				UT_ASSERT_EQ(info.valid_mask, 0);
				UT_ASSERT_EQ(info.status[i], GGA_FRAG_UNRESOLVED);
			}
		}
		env_fini(&e);
	}
}

/* The recovery read: the caller leaves a data fragment out on purpose. */
static void
test_forced_recovery(void)
{
	struct gga_decode_info info;
	struct env e;
	int kind;

	env_init(&e, 8192, 2, 1, GGA_MATRIX_VANDERMONDE);
	for (kind = 0; kind < KIND_COUNT; kind++) {
		if (kind == KIND_ZERO) {
			continue;
		}
		fill_kind(e.block, e.B, (enum kind)kind);
		UT_ASSERT_EQ_FATAL(env_encode(&e, &e.f, 1, 1, NULL), 0);
		/* d2 + p */
		UT_ASSERT_EQ(env_decode(&e, &e.f, 0x6, 1, e.block, &info), 0);
		UT_ASSERT_EQ(info.rebuilt_mask, 0x1);
		UT_ASSERT_EQ(info.used_mask, 0x6);
		/* d1 + p */
		UT_ASSERT_EQ(env_decode(&e, &e.f, 0x5, 1, e.block, &info), 0);
		if (kind != KIND_HIGH) {
			UT_ASSERT_EQ(info.rebuilt_mask, 0x2);
			UT_ASSERT_EQ(info.used_mask, 0x5);
		} else {
			/* The payload fits in d1: nothing to rebuild. */
			UT_ASSERT_EQ(info.rebuilt_mask, 0);
			UT_ASSERT_EQ(info.used_mask, 0x1);
		}
	}
	env_fini(&e);
}

/*
 * Data fragments read straight into the output block (where a raw block keeps
 * them): decode checks them there, rebuilds lost or corrupt ones around them
 * and decompresses lz4 payloads without reading what it overwrites. Every
 * kind of block, 2 + 1 and 4 + 2, with each data fragment lost, corrupt or
 * left out.
 */
static void
test_decode_in_place(void)
{
	static const uint32_t geo[][2] = { { 2, 1 }, { 4, 2 } };
	struct gga_decode_info info;
	struct gga_encode_info einfo;
	const void *cdata[GGA_CODEC_MAX_FRAGS];
	uint32_t g, i, j, F, mask;
	uint8_t *out;
	struct env e;
	int kind, variant;

	for (g = 0; g < ARRAY_SIZE(geo); g++) {
		env_init(&e, 4096, geo[g][0], geo[g][1], GGA_MATRIX_CAUCHY);
		F = e.B / e.k;
		out = malloc(e.B);
		CU_ASSERT_FATAL(out != NULL);
		for (kind = 0; kind < KIND_COUNT; kind++) {
			fill_kind(e.block, e.B, (enum kind)kind);
			UT_ASSERT_EQ_FATAL(env_encode(&e, &e.f, 9, 3, &einfo), 0);
			/* variant 0: all present; 1 + j: data fragment j left out; then corrupt. */
			for (variant = 0; variant <= (int)(2 * e.k); variant++) {
				for (i = 0; i < e.n; i++) {
					cdata[i] = e.f.cdata[i];
				}
				for (i = 0; i < e.k; i++) {
					memcpy(out + (size_t)i * F, e.f.data[i], F);
					cdata[i] = out + (size_t)i * F;
				}
				mask = e.all;
				j = (uint32_t)(variant - 1) % e.k;
				if (variant >= 1 && variant <= (int)e.k) {
					mask &= ~(1u << j);
					memset(out + (size_t)j * F, 0x5a, F);
				} else if (variant > (int)e.k) {
					out[(size_t)j * F + 7] ^= 0x40;
				}
				UT_ASSERT_EQ(gga_codec_decode(e.c, e.s, cdata, e.f.cmd, mask, 9,
							      out, &info),
					     0);
				CU_ASSERT(memcmp(out, e.block, e.B) == 0);
				UT_ASSERT_EQ(info.encoding, einfo.encoding);
				if (variant > (int)e.k) {
					UT_ASSERT_EQ(info.status[j], GGA_FRAG_BAD_DATA_CRC);
				}
			}
		}
		free(out);
		env_fini(&e);
	}
}

/* The generic code: 4 + 2 with every single and every pair of fragments lost. */
static void
test_k4m2_erasures(void)
{
	static const enum kind kinds[] = { KIND_RANDOM, KIND_MILD, KIND_HIGH };
	struct gga_decode_info info;
	struct env e;
	uint32_t a, b, bs;
	int matrix;
	size_t kk;

	for (bs = 512; bs <= 4096; bs *= 8) {
		for (matrix = GGA_MATRIX_VANDERMONDE; matrix <= GGA_MATRIX_CAUCHY; matrix++) {
			env_init(&e, bs, 4, 2, (enum gga_matrix)matrix);
			for (kk = 0; kk < ARRAY_SIZE(kinds); kk++) {
				fill_kind(e.block, e.B, kinds[kk]);
				UT_ASSERT_EQ_FATAL(env_encode(&e, &e.f, 42, 3, NULL), 0);
				for (a = 0; a < e.n; a++) {
					uint32_t mask = e.all & ~(1u << a);

					UT_ASSERT_EQ(env_decode(&e, &e.f, mask, 42, e.block, &info),
						     0);
					for (b = a + 1; b < e.n; b++) {
						mask = e.all & ~(1u << a) & ~(1u << b);
						UT_ASSERT_EQ(env_decode(&e, &e.f, mask, 42, e.block,
									&info),
							     0);
						UT_ASSERT_EQ(info.valid_mask, mask);
					}
				}
				/* Three lost: fewer than k left. */
				UT_ASSERT_EQ(env_decode(&e, &e.f, 0x38, 42, NULL, &info), -EIO);
				UT_ASSERT_EQ(env_decode(&e, &e.f, 0x7, 42, NULL, &info), -EIO);
			}
			env_fini(&e);
		}
	}
}

/* 8 + 2 and 1 + 2 prove the loops do not assume two data fragments. */
static void
test_other_geometries(void)
{
	static const struct {
		uint32_t bs, k, m;
	} geo[] = { { 4096, 8, 2 }, { 512, 8, 2 }, { 4096, 1, 2 }, { 65536, 4, 4 } };
	struct gga_decode_info info;
	struct gga_encode_info einfo;
	struct env e;
	size_t g;
	uint32_t lost, a, b;
	int kind;

	for (g = 0; g < ARRAY_SIZE(geo); g++) {
		env_init(&e, geo[g].bs, geo[g].k, geo[g].m, GGA_MATRIX_CAUCHY);
		for (kind = 0; kind < KIND_COUNT; kind++) {
			fill_kind(e.block, e.B, (enum kind)kind);
			UT_ASSERT_EQ_FATAL(env_encode(&e, &e.f, 5, 1, &einfo), 0);
			/* A raw block's crc is combined from its k fragments' crcs. */
			UT_ASSERT_EQ(einfo.block_crc, gga_crc32c(e.block, e.B, 0));
			for (a = 0; a < e.n; a++) {
				b = (a + 1) % e.n;
				lost = (1u << a) | (e.m > 1 ? 1u << b : 0);
				UT_ASSERT_EQ(env_decode(&e, &e.f, e.all & ~lost, 5, e.block, &info),
					     0);
			}
		}
		env_fini(&e);
	}
}

/* ---------------------------------------------------------------------- */
/* Corruption                                                              */
/* ---------------------------------------------------------------------- */

static enum gga_frag_status
status_for_md_byte(uint32_t byte)
{
	if (byte < 4) {
		return GGA_FRAG_BAD_MAGIC;
	}
	if (byte == 4) {
		return GGA_FRAG_BAD_VERSION;
	}
	return GGA_FRAG_BAD_MD_CRC;
}

/* A bit flip anywhere in any fragment's metadata is caught and worked around. */
static void
test_corrupt_md_bits(void)
{
	struct gga_decode_info info;
	struct env e;
	struct fset g;
	uint32_t i, byte;
	int kind;

	env_init(&e, 2048, 2, 1, GGA_MATRIX_VANDERMONDE);
	fset_init(&g, e.c);
	for (kind = 0; kind < KIND_COUNT; kind++) {
		fill_kind(e.block, e.B, (enum kind)kind);
		UT_ASSERT_EQ_FATAL(env_encode(&e, &e.f, 1000, 17, NULL), 0);
		for (i = 0; i < e.n; i++) {
			for (byte = 0; byte < GGA_FRAG_MD_SIZE; byte++) {
				fset_copy(&g, &e.f);
				((uint8_t *)g.md[i])[byte] ^= (uint8_t)(1u << (byte % 8));
				UT_ASSERT_EQ(env_decode(&e, &g, e.all, 1000, e.block, &info), 0);
				UT_ASSERT_EQ(info.corrupt_mask, 1u << i);
				UT_ASSERT_EQ(info.valid_mask, e.all & ~(1u << i));
				UT_ASSERT_EQ(info.status[i], status_for_md_byte(byte));
			}
			/* Bytes past the format's 32 are not looked at. */
			fset_copy(&g, &e.f);
			((uint8_t *)g.md[i])[GGA_FRAG_MD_SIZE] ^= 1;
			UT_ASSERT_EQ(env_decode(&e, &g, e.all, 1000, e.block, &info), 0);
			UT_ASSERT_EQ(info.valid_mask, e.all);
		}
	}
	fset_free(&g);
	env_fini(&e);
}

static void
set_role_0(struct gga_frag_md *md)
{
	md->role = 0;
}

static void
set_k_4(struct gga_frag_md *md)
{
	md->k = 4;
}

static void
set_m_2(struct gga_frag_md *md)
{
	md->m = 2;
}

static void
set_encoding_9(struct gga_frag_md *md)
{
	md->encoding = 9;
}

static void
set_encoding_0(struct gga_frag_md *md)
{
	md->encoding = 0;
}

static void
set_payload_block(struct gga_frag_md *md)
{
	md->payload_len = 4096;
}

static void
set_payload_0(struct gga_frag_md *md)
{
	md->payload_len = 0;
}

static void
set_generation_0(struct gga_frag_md *md)
{
	md->generation = 0;
}

static void
set_generation_up(struct gga_frag_md *md)
{
	md->generation++;
}

static void
set_block_crc(struct gga_frag_md *md)
{
	md->block_crc ^= 1;
}

static void
set_data_crc(struct gga_frag_md *md)
{
	md->data_crc ^= 1;
}

static void
set_encoding_raw(struct gga_frag_md *md)
{
	md->encoding = GGA_ENC_RAW;
}

/* Fields rewritten with a valid md_crc: each is caught by its own check. */
static void
test_corrupt_md_fields(void)
{
	static const struct {
		void (*change)(struct gga_frag_md *md);
		enum gga_frag_status status;
	} cases[] = {
		{ set_k_4, GGA_FRAG_BAD_GEOMETRY },
		{ set_m_2, GGA_FRAG_BAD_GEOMETRY },
		{ set_encoding_9, GGA_FRAG_BAD_FIELD },
		{ set_encoding_0, GGA_FRAG_BAD_FIELD },
		{ set_payload_block, GGA_FRAG_BAD_FIELD }, /* lz4 may not be block-sized */
		{ set_payload_0, GGA_FRAG_BAD_FIELD },
		{ set_generation_0, GGA_FRAG_BAD_FIELD },
		{ set_encoding_raw, GGA_FRAG_BAD_FIELD }, /* raw needs payload == block */
		{ set_data_crc, GGA_FRAG_BAD_DATA_CRC },
		/* Intact on its own but not the same write as the other two. */
		{ set_block_crc, GGA_FRAG_CONFLICT },
		{ set_generation_up, GGA_FRAG_ORPHAN },
	};
	struct gga_decode_info info;
	struct env e;
	struct fset g;
	uint32_t i;
	size_t t;

	env_init(&e, 4096, 2, 1, GGA_MATRIX_CAUCHY);
	fset_init(&g, e.c);
	fill_kind(e.block, e.B, KIND_MILD);
	UT_ASSERT_EQ_FATAL(env_encode(&e, &e.f, 64, 100, NULL), 0);
	for (t = 0; t < ARRAY_SIZE(cases); t++) {
		for (i = 0; i < e.n; i++) {
			fset_copy(&g, &e.f);
			md_rewrite(&g, i, 64, cases[t].change);
			UT_ASSERT_EQ(env_decode(&e, &g, e.all, 64, e.block, &info), 0);
			UT_ASSERT_EQ(info.status[i], cases[t].status);
			UT_ASSERT_EQ(info.valid_mask, e.all & ~(1u << i));
			UT_ASSERT_EQ(info.generation, 100);
		}
	}
	/* A fragment stamped with another role. */
	fset_copy(&g, &e.f);
	md_rewrite(&g, 2, 64, set_role_0);
	UT_ASSERT_EQ(env_decode(&e, &g, e.all, 64, e.block, &info), 0);
	UT_ASSERT_EQ(info.status[2], GGA_FRAG_BAD_ROLE);
	UT_ASSERT_EQ(info.rebuilt_mask, 0);

	/* Members swapped: d1 and d2 both carry the other's role; p alone cannot decode. */
	fset_copy(&g, &e.f);
	memcpy(g.data[0], e.f.data[1], g.frag_size);
	memcpy(g.md[0], e.f.md[1], g.md_size);
	memcpy(g.data[1], e.f.data[0], g.frag_size);
	memcpy(g.md[1], e.f.md[0], g.md_size);
	UT_ASSERT_EQ(env_decode(&e, &g, e.all, 64, NULL, &info), -EIO);
	UT_ASSERT_EQ(info.status[0], GGA_FRAG_BAD_ROLE);
	UT_ASSERT_EQ(info.status[1], GGA_FRAG_BAD_ROLE);
	UT_ASSERT_EQ(info.status[2], GGA_FRAG_UNRESOLVED);
	UT_ASSERT_EQ(info.corrupt_mask, 0x3);
	fset_free(&g);
	env_fini(&e);
}

/* Bit flips in each fragment's data: detected, and rebuilt from the other two. */
static void
test_corrupt_payload(void)
{
	struct gga_decode_info info;
	struct gga_encode_info einfo;
	struct env e;
	struct fset g;
	uint32_t i, pos[3], p;
	int kind, matrix;

	for (matrix = GGA_MATRIX_VANDERMONDE; matrix <= GGA_MATRIX_CAUCHY; matrix++) {
		env_init(&e, 4096, 2, 1, (enum gga_matrix)matrix);
		fset_init(&g, e.c);
		pos[0] = 0;
		pos[1] = g.frag_size / 2 + 3;
		pos[2] = g.frag_size - 1;
		for (kind = 0; kind < KIND_COUNT; kind++) {
			fill_kind(e.block, e.B, (enum kind)kind);
			UT_ASSERT_EQ_FATAL(env_encode(&e, &e.f, 9, 2, &einfo), 0);
			for (i = 0; i < e.n; i++) {
				for (p = 0; p < 3; p++) {
					fset_copy(&g, &e.f);
					((uint8_t *)g.data[i])[pos[p]] ^= 0x10;
					UT_ASSERT_EQ(env_decode(&e, &g, e.all, 9, e.block, &info),
						     0);
					UT_ASSERT_EQ(info.status[i], GGA_FRAG_BAD_DATA_CRC);
					UT_ASSERT_EQ(info.corrupt_mask, 1u << i);
					CU_ASSERT((info.used_mask & (1u << i)) == 0);
					/* Only d1 + d2 read: the bad one is lost, p is needed. */
					if (i < e.k) {
						UT_ASSERT_EQ(env_decode(&e, &g, 0x3, 9, NULL,
									&info),
							     -EIO);
					}
				}
			}
		}
		fset_free(&g);
		env_fini(&e);
	}
}

/* Metadata bound to the LBA: a misdirected write is caught. */
static void
test_wrong_lba(void)
{
	struct gga_decode_info info;
	struct env e;
	struct fset g;
	uint32_t i;

	env_init(&e, 4096, 2, 1, GGA_MATRIX_VANDERMONDE);
	fset_init(&g, e.c);
	fill_kind(e.block, e.B, KIND_MILD);
	UT_ASSERT_EQ_FATAL(env_encode(&e, &e.f, 500, 4, NULL), 0);
	UT_ASSERT_EQ(env_decode(&e, &e.f, e.all, 501, NULL, &info), -EIO);
	for (i = 0; i < e.n; i++) {
		UT_ASSERT_EQ(info.status[i], GGA_FRAG_BAD_MD_CRC);
	}
	UT_ASSERT_EQ(info.corrupt_mask, e.all);

	/* Block 501 got one fragment meant for 500: that one is refused. */
	fill_kind(e.block, e.B, KIND_RANDOM);
	UT_ASSERT_EQ_FATAL(env_encode(&e, &g, 501, 4, NULL), 0);
	for (i = 0; i < e.n; i++) {
		struct fset h;

		fset_init(&h, e.c);
		fset_copy(&h, &g);
		fset_take(&h, &e.f, i);
		UT_ASSERT_EQ(env_decode(&e, &h, e.all, 501, e.block, &info), 0);
		UT_ASSERT_EQ(info.status[i], GGA_FRAG_BAD_MD_CRC);
		fset_free(&h);
	}
	fset_free(&g);
	env_fini(&e);
}

/* ---------------------------------------------------------------------- */
/* Torn writes and never-written blocks                                    */
/* ---------------------------------------------------------------------- */

static void
test_torn_writes(void)
{
	struct gga_decode_info info;
	struct env e;
	struct fset old, new, mix;
	uint8_t *old_block, *new_block;
	uint32_t sel, i;

	env_init(&e, 4096, 2, 1, GGA_MATRIX_VANDERMONDE);
	fset_init(&old, e.c);
	fset_init(&new, e.c);
	fset_init(&mix, e.c);
	old_block = malloc(e.B);
	new_block = malloc(e.B);
	CU_ASSERT_FATAL(old_block != NULL && new_block != NULL);

	fill_kind(e.block, e.B, KIND_MILD);
	memcpy(old_block, e.block, e.B);
	UT_ASSERT_EQ_FATAL(env_encode(&e, &old, 7, 1000, NULL), 0);
	fill_kind(e.block, e.B, KIND_RANDOM);
	memcpy(new_block, e.block, e.B);
	UT_ASSERT_EQ_FATAL(env_encode(&e, &new, 7, 1001, NULL), 0);

	/* sel: bit i set = fragment i from the new write. */
	for (sel = 0; sel <= e.all; sel++) {
		uint32_t nnew = (uint32_t)__builtin_popcount(sel);
		const uint8_t *expect = nnew >= 2 ? new_block : old_block;

		for (i = 0; i < e.n; i++) {
			fset_take(&mix, (sel & (1u << i)) ? &new : &old, i);
		}
		UT_ASSERT_EQ(env_decode(&e, &mix, e.all, 7, expect, &info), 0);
		UT_ASSERT_EQ(info.generation, nnew >= 2 ? 1001 : 1000);
		UT_ASSERT_EQ(info.valid_mask, nnew >= 2 ? sel : e.all & ~sel);
		UT_ASSERT_EQ(info.stale_mask, nnew >= 2 ? e.all & ~sel : 0);
		UT_ASSERT_EQ(info.orphan_mask, nnew >= 2 ? 0 : sel);
		/* With a regular read (d1, d2) a torn pair needs p as the tie-breaker. */
		if (nnew == 1 && (sel & 0x3)) {
			UT_ASSERT_EQ(env_decode(&e, &mix, 0x3, 7, NULL, &info), -EIO);
		}
	}

	/* Three writes, one fragment each: no version has two fragments. */
	fill_kind(e.block, e.B, KIND_HIGH);
	UT_ASSERT_EQ_FATAL(env_encode(&e, &mix, 7, 1002, NULL), 0);
	fset_take(&mix, &old, 1);
	fset_take(&mix, &new, 2);
	UT_ASSERT_EQ(env_decode(&e, &mix, e.all, 7, NULL, &info), -EIO);
	UT_ASSERT_EQ(info.valid_mask, 0);
	for (i = 0; i < e.n; i++) {
		UT_ASSERT_EQ(info.status[i], GGA_FRAG_UNRESOLVED);
	}

	/* Same generation, different content: the pair wins, the odd one is a conflict. */
	fill_kind(e.block, e.B, KIND_HIGH);
	UT_ASSERT_EQ_FATAL(env_encode(&e, &mix, 7, 1000, NULL), 0);
	fset_copy(&new, &old);
	fset_take(&new, &mix, 0);
	UT_ASSERT_EQ(env_decode(&e, &new, e.all, 7, old_block, &info), 0);
	UT_ASSERT_EQ(info.status[0], GGA_FRAG_CONFLICT);
	UT_ASSERT_EQ(info.corrupt_mask, 0x1);

	/*
	 * hidden_mask: d1 holds the new write but is damaged, d2 and p the old
	 * one, so the old one is returned. A damaged header, or a readable header
	 * of the newer write over bad data, may hide the newest write; bad data
	 * under a header of the write returned (or an older one) does not.
	 */
	memcpy(e.block, new_block, e.B);
	UT_ASSERT_EQ_FATAL(env_encode(&e, &new, 7, 1001, NULL), 0);
	fset_copy(&mix, &old);
	fset_take(&mix, &new, 0);
	((uint8_t *)mix.data[0])[5] ^= 0x10;
	UT_ASSERT_EQ(env_decode(&e, &mix, e.all, 7, old_block, &info), 0);
	UT_ASSERT_EQ(info.status[0], GGA_FRAG_BAD_DATA_CRC);
	UT_ASSERT_EQ(info.hidden_mask, 0x1);
	fset_copy(&mix, &old);
	fset_take(&mix, &new, 0);
	((uint8_t *)mix.md[0])[5] ^= 0x10;
	UT_ASSERT_EQ(env_decode(&e, &mix, e.all, 7, old_block, &info), 0);
	UT_ASSERT_EQ(info.status[0], GGA_FRAG_BAD_MD_CRC);
	UT_ASSERT_EQ(info.hidden_mask, 0x1);
	fset_copy(&mix, &new);
	((uint8_t *)mix.data[0])[5] ^= 0x10;
	UT_ASSERT_EQ(env_decode(&e, &mix, e.all, 7, new_block, &info), 0);
	UT_ASSERT_EQ(info.corrupt_mask, 0x1);
	UT_ASSERT_EQ(info.hidden_mask, 0);

	free(old_block);
	free(new_block);
	fset_free(&mix);
	fset_free(&new);
	fset_free(&old);
	env_fini(&e);
}

/* 2 + 2: two complete writes can coexist; the newer wins, a tie is refused. */
static void
test_torn_k2m2(void)
{
	struct gga_decode_info info;
	struct env e;
	struct fset a, b, mix;
	uint8_t *block_a;

	env_init(&e, 4096, 2, 2, GGA_MATRIX_CAUCHY);
	fset_init(&a, e.c);
	fset_init(&b, e.c);
	fset_init(&mix, e.c);
	block_a = malloc(e.B);
	CU_ASSERT_FATAL(block_a != NULL);
	fill_kind(e.block, e.B, KIND_MILD);
	memcpy(block_a, e.block, e.B);
	UT_ASSERT_EQ_FATAL(env_encode(&e, &a, 3, 20, NULL), 0);
	fill_kind(e.block, e.B, KIND_RANDOM);
	UT_ASSERT_EQ_FATAL(env_encode(&e, &b, 3, 21, NULL), 0);

	fset_take(&mix, &a, 0);
	fset_take(&mix, &a, 3);
	fset_take(&mix, &b, 1);
	fset_take(&mix, &b, 2);
	UT_ASSERT_EQ(env_decode(&e, &mix, e.all, 3, e.block, &info), 0);
	UT_ASSERT_EQ(info.generation, 21);
	UT_ASSERT_EQ(info.stale_mask, 0x9);
	UT_ASSERT_EQ(info.rebuilt_mask, 0x1);

	/* Same generation twice with two fragments each: ambiguous. */
	fill_kind(e.block, e.B, KIND_RANDOM);
	UT_ASSERT_EQ_FATAL(env_encode(&e, &b, 3, 20, NULL), 0);
	fset_take(&mix, &b, 1);
	fset_take(&mix, &b, 2);
	UT_ASSERT_EQ(env_decode(&e, &mix, e.all, 3, NULL, &info), -EIO);
	UT_ASSERT_EQ(env_decode(&e, &mix, 0x9, 3, block_a, &info), 0);

	free(block_a);
	fset_free(&mix);
	fset_free(&b);
	fset_free(&a);
	env_fini(&e);
}

static void
test_never_written(void)
{
	struct gga_decode_info info;
	struct env e;
	struct fset blank;
	uint8_t *zeros;
	uint32_t i;

	env_init(&e, 4096, 2, 1, GGA_MATRIX_VANDERMONDE);
	fset_init(&blank, e.c);
	zeros = calloc(1, e.B);
	CU_ASSERT_FATAL(zeros != NULL);

	UT_ASSERT_EQ(env_decode(&e, &blank, e.all, 12, zeros, &info), 0);
	UT_ASSERT_EQ(info.encoding, GGA_ENC_UNWRITTEN);
	UT_ASSERT_EQ(info.generation, 0);
	UT_ASSERT_EQ(info.valid_mask, e.all);
	UT_ASSERT_EQ(env_decode(&e, &blank, 0x3, 12, zeros, &info), 0);
	UT_ASSERT_EQ(env_decode(&e, &blank, 0x6, 12, zeros, &info), 0);
	UT_ASSERT_EQ(env_decode(&e, &blank, 0x1, 12, NULL, &info), -EIO);

	/* A first write that reached one member only: still never written. */
	fill_kind(e.block, e.B, KIND_MILD);
	UT_ASSERT_EQ_FATAL(env_encode(&e, &e.f, 12, 1, NULL), 0);
	for (i = 0; i < e.n; i++) {
		struct fset mix;

		fset_init(&mix, e.c);
		fset_take(&mix, &e.f, i);
		UT_ASSERT_EQ(env_decode(&e, &mix, e.all, 12, zeros, &info), 0);
		UT_ASSERT_EQ(info.status[i], GGA_FRAG_ORPHAN);
		UT_ASSERT_EQ(info.generation, 0);
		/* ...and one that reached two: written. */
		fset_copy(&mix, &e.f);
		memset(mix.data[i], 0, mix.frag_size);
		memset(mix.md[i], 0, mix.md_size);
		UT_ASSERT_EQ(env_decode(&e, &mix, e.all, 12, e.block, &info), 0);
		UT_ASSERT_EQ(info.status[i], GGA_FRAG_STALE);
		UT_ASSERT_EQ(info.stale_mask, 1u << i);
		fset_free(&mix);
	}

	/* Blank metadata over non-zero data is not "never written". */
	((uint8_t *)blank.data[0])[5] = 1;
	UT_ASSERT_EQ(env_decode(&e, &blank, e.all, 12, zeros, &info), 0);
	UT_ASSERT_EQ(info.status[0], GGA_FRAG_BAD_BLANK);
	UT_ASSERT_EQ(info.valid_mask, 0x6);

	free(zeros);
	fset_free(&blank);
	env_fini(&e);
}

/* ---------------------------------------------------------------------- */
/* Rebuild                                                                 */
/* ---------------------------------------------------------------------- */

static void
rebuild_check(struct env *e, struct fset *good, uint64_t lba)
{
	struct gga_decode_info info;
	struct fset in, out;
	uint32_t t, i;

	fset_init(&in, e->c);
	fset_init(&out, e->c);
	for (t = 0; t < e->n; t++) {
		/* Fragment t damaged; rebuild it from the others. */
		fset_copy(&in, good);
		memset(in.data[t], 0x33, in.frag_size);
		memset(out.buf, 0x77, (size_t)e->n * (out.frag_size + out.md_size));
		UT_ASSERT_EQ(gga_codec_rebuild(e->c, e->s, in.cdata, in.cmd, e->all, lba, 1u << t,
					       out.data, out.md, &info),
			     0);
		UT_ASSERT_EQ(info.corrupt_mask, 1u << t);
		CU_ASSERT(memcmp(out.data[t], good->data[t], out.frag_size) == 0);
		CU_ASSERT(memcmp(out.md[t], good->md[t], out.md_size) == 0);
	}
	/* Everything from the minimum: each k-subset regenerates all fragments. */
	for (t = 0; t < e->n; t++) {
		uint32_t mask = e->all & ~(1u << t);

		memset(out.buf, 0x77, (size_t)e->n * (out.frag_size + out.md_size));
		UT_ASSERT_EQ(gga_codec_rebuild(e->c, e->s, good->cdata, good->cmd, mask, lba,
					       e->all, out.data, out.md, &info),
			     0);
		for (i = 0; i < e->n; i++) {
			CU_ASSERT(memcmp(out.data[i], good->data[i], out.frag_size) == 0);
			CU_ASSERT(memcmp(out.md[i], good->md[i], out.md_size) == 0);
		}
	}
	/* Not enough left. */
	UT_ASSERT_EQ(gga_codec_rebuild(e->c, e->s, good->cdata, good->cmd, 0x1, lba, 0x2, out.data,
				       out.md, &info),
		     -EIO);
	fset_free(&out);
	fset_free(&in);
}

static void
test_rebuild(void)
{
	struct env e;
	int kind, matrix;

	for (matrix = GGA_MATRIX_VANDERMONDE; matrix <= GGA_MATRIX_CAUCHY; matrix++) {
		env_init(&e, 4096, 2, 1, (enum gga_matrix)matrix);
		for (kind = 0; kind < KIND_COUNT; kind++) {
			fill_kind(e.block, e.B, (enum kind)kind);
			UT_ASSERT_EQ_FATAL(env_encode(&e, &e.f, 31, 8, NULL), 0);
			rebuild_check(&e, &e.f, 31);
		}
		env_fini(&e);
	}
	/* The generic path: 4 + 2. */
	env_init(&e, 4096, 4, 2, GGA_MATRIX_VANDERMONDE);
	fill_kind(e.block, e.B, KIND_MILD);
	UT_ASSERT_EQ_FATAL(env_encode(&e, &e.f, 31, 8, NULL), 0);
	rebuild_check(&e, &e.f, 31);
	/* A never-written block rebuilds as blank fragments. */
	memset(e.f.buf, 0, (size_t)e.n * (e.f.frag_size + e.f.md_size));
	rebuild_check(&e, &e.f, 31);
	env_fini(&e);
}

/* Rebuild refuses to spread a block that fails its whole-block crc. */
static void
test_rebuild_verifies(void)
{
	struct gga_decode_info info;
	struct gga_frag_md md;
	struct env e;
	struct fset out;
	uint32_t i;

	env_init(&e, 4096, 2, 1, GGA_MATRIX_VANDERMONDE);
	fset_init(&out, e.c);
	fill_kind(e.block, e.B, KIND_RANDOM);
	UT_ASSERT_EQ_FATAL(env_encode(&e, &e.f, 2, 3, NULL), 0);
	/* Corrupt d1 and restamp every fragment's data crc so only block_crc can tell. */
	((uint8_t *)e.f.data[0])[10] ^= 1;
	((uint8_t *)e.f.data[2])[10] ^= 1;
	for (i = 0; i < e.n; i += 2) {
		UT_ASSERT_EQ_FATAL(gga_frag_md_decode(e.f.md[i], 2, &md), 0);
		md.data_crc = gga_crc32c(e.f.data[i], e.f.frag_size, 0);
		gga_frag_md_encode(&md, 2, e.f.md[i]);
	}
	UT_ASSERT_EQ(gga_codec_rebuild(e.c, e.s, e.f.cdata, e.f.cmd, e.all, 2, 0x4, out.data,
				       out.md, &info),
		     -EIO);
	CU_ASSERT(info.payload_corrupt);
	UT_ASSERT_EQ(env_decode(&e, &e.f, e.all, 2, NULL, &info), -EIO);
	CU_ASSERT(info.payload_corrupt);
	fset_free(&out);
	env_fini(&e);
}

/*
 * The format's tests live in gga_format_ut.c, those of the codec's ISA-L
 * kernels in gga_codec_kernels_ut.c; one binary runs them all.
 */
extern const struct ut_test g_format_tests[];
extern const size_t g_format_tests_count;
extern const struct ut_test g_kernel_tests[];
extern const size_t g_kernel_tests_count;

/* ---------------------------------------------------------------------- */
/* The packed layout's fragments                                           */
/* ---------------------------------------------------------------------- */

/* Fragments of one packed block: n buffers of frag_size bytes, filled with 0xee. */
struct pset {
	uint8_t *buf;
	void *frag[GGA_CODEC_MAX_FRAGS];
};

static void
pset_init(struct pset *p, const struct env *e)
{
	uint32_t F = e->B / e->k, i;

	p->buf = malloc((size_t)e->n * F);
	CU_ASSERT_FATAL(p->buf != NULL);
	memset(p->buf, 0xee, (size_t)e->n * F);
	for (i = 0; i < e->n; i++) {
		p->frag[i] = p->buf + (size_t)i * F;
	}
}

/* Unpack from the fragments in mask; on success compare with e->block. */
static int
unpack_mask(struct env *e, struct pset *p, uint32_t mask, const struct gga_pack_info *info,
	    uint32_t *used)
{
	int rc;

	memset(e->out, 0x5a, e->B);
	rc = gga_codec_unpack(e->c, e->s, (const void *const *)p->frag, mask, info, e->out, used);
	if (rc == 0) {
		CU_ASSERT(memcmp(e->out, e->block, e->B) == 0);
	}
	return rc;
}

static void
pack_roundtrip(struct env *e, enum kind kind)
{
	struct gga_pack_info info;
	struct pset p;
	uint32_t mask, used;

	fill_kind(e->block, e->B, kind);
	pset_init(&p, e);
	UT_ASSERT_EQ_FATAL(gga_codec_pack(e->c, e->s, e->block, 0, p.frag, &info), 0);
	UT_ASSERT_EQ(info.block_crc, gga_crc32c(e->block, e->B, 0));
	UT_ASSERT_EQ(info.frag_len, (info.payload_len + e->k - 1) / e->k);
	switch (kind) {
	case KIND_ZERO:
		UT_ASSERT_EQ(info.encoding, GGA_ENC_ZERO);
		UT_ASSERT_EQ(info.payload_len, 0);
		break;
	case KIND_RANDOM:
		UT_ASSERT_EQ(info.encoding, GGA_ENC_RAW);
		UT_ASSERT_EQ(info.payload_len, e->B);
		break;
	case KIND_HIGH:
	case KIND_MILD:
		/* Compressible data takes fragments shorter than the fixed layout's. */
		UT_ASSERT_EQ(info.encoding, GGA_ENC_LZ4);
		CU_ASSERT(info.frag_len < e->B / e->k);
		break;
	default:
		break;
	}
	if (info.frag_len < e->B / e->k) {
		/* Nothing past h is touched. */
		UT_ASSERT_EQ(((uint8_t *)p.frag[e->n - 1])[info.frag_len], 0xee);
	}
	/* Every subset of k or more fragments gives the block back; fewer do not. */
	for (mask = 0; mask <= e->all; mask++) {
		int rc = unpack_mask(e, &p, mask, &info, &used);

		if (info.encoding == GGA_ENC_ZERO) {
			UT_ASSERT_EQ(rc, 0);
			continue;
		}
		if ((uint32_t)__builtin_popcount(mask) < e->k) {
			UT_ASSERT_EQ(rc, -EIO);
			continue;
		}
		UT_ASSERT_EQ(rc, 0);
		UT_ASSERT_EQ((uint32_t)__builtin_popcount(used), e->k);
		UT_ASSERT_EQ(used & ~mask, 0);
		UT_ASSERT_EQ(used & mask & ((1u << e->k) - 1), mask & ((1u << e->k) - 1));
	}
	free(p.buf);
}

static void
test_pack_roundtrip(void)
{
	static const uint32_t geo[][2] = { { 2, 1 }, { 1, 1 }, { 4, 2 }, { 2, 2 }, { 4, 1 } };
	struct env e;
	uint32_t bs, g;
	int kind;

	for (bs = 512; bs <= 65536; bs *= 4) {
		for (g = 0; g < ARRAY_SIZE(geo); g++) {
			env_init(&e, bs, geo[g][0], geo[g][1], GGA_MATRIX_CAUCHY);
			for (kind = 0; kind < KIND_COUNT; kind++) {
				pack_roundtrip(&e, (enum kind)kind);
			}
			env_fini(&e);
		}
	}
}

/* Payload lengths of every residue mod k and mod 16: short fragments, odd h. */
static void
test_pack_short_payloads(void)
{
	struct gga_pack_info info;
	struct env e;
	struct pset p;
	uint32_t len, mask, seen = 0;

	env_init(&e, 4096, 4, 2, GGA_MATRIX_VANDERMONDE);
	pset_init(&p, &e);
	for (len = 1; len <= 200; len++) {
		/* A random head and a zero tail: LZ4 output grows with the head. */
		memset(e.block, 0, e.B);
		fill_random(e.block, len);
		UT_ASSERT_EQ_FATAL(gga_codec_pack(e.c, e.s, e.block, 0, p.frag, &info), 0);
		UT_ASSERT_EQ_FATAL(info.encoding, GGA_ENC_LZ4);
		seen |= 1u << (info.frag_len % 16);
		for (mask = 0; mask <= e.all; mask++) {
			if (__builtin_popcount(mask) >= 4) {
				UT_ASSERT_EQ(unpack_mask(&e, &p, mask, &info, NULL), 0);
			}
		}
	}
	UT_ASSERT_EQ(seen, 0xffff);
	free(p.buf);
	env_fini(&e);
}

/* A damaged fragment or a wrong length never yields a block that passes. */
static void
test_pack_damage(void)
{
	struct gga_pack_info info, bad;
	struct env e;
	struct pset p;

	env_init(&e, 4096, 2, 1, GGA_MATRIX_VANDERMONDE);
	pset_init(&p, &e);
	fill_kind(e.block, e.B, KIND_MILD);
	UT_ASSERT_EQ_FATAL(gga_codec_pack(e.c, e.s, e.block, 0, p.frag, &info), 0);
	UT_ASSERT_EQ(unpack_mask(&e, &p, 0x7, &info, NULL), 0);
	((uint8_t *)p.frag[1])[info.frag_len / 2] ^= 0x10;
	UT_ASSERT_EQ(unpack_mask(&e, &p, 0x3, &info, NULL), -EIO);
	/* Without the damaged fragment, parity stands in for it. */
	UT_ASSERT_EQ(unpack_mask(&e, &p, 0x5, &info, NULL), 0);
	bad = info;
	bad.block_crc ^= 1;
	UT_ASSERT_EQ(unpack_mask(&e, &p, 0x5, &bad, NULL), -EIO);
	bad = info;
	bad.frag_len++;
	UT_ASSERT_EQ(unpack_mask(&e, &p, 0x5, &bad, NULL), -EINVAL);
	bad = info;
	bad.encoding = GGA_ENC_UNWRITTEN;
	UT_ASSERT_EQ(unpack_mask(&e, &p, 0x5, &bad, NULL), -EINVAL);
	bad = info;
	bad.encoding = GGA_ENC_RAW;
	UT_ASSERT_EQ(unpack_mask(&e, &p, 0x5, &bad, NULL), -EINVAL);
	UT_ASSERT_EQ(unpack_mask(&e, &p, 0x8, &info, NULL), -EINVAL);
	UT_ASSERT_EQ(gga_codec_pack(e.c, e.s, NULL, 0, p.frag, &info), -EINVAL);
	/* NO_LZ4 stores compressible data raw. */
	UT_ASSERT_EQ_FATAL(gga_codec_pack(e.c, e.s, e.block, GGA_ENCODE_NO_LZ4, p.frag, &info), 0);
	UT_ASSERT_EQ(info.encoding, GGA_ENC_RAW);
	UT_ASSERT_EQ(info.frag_len, e.B / 2);
	UT_ASSERT_EQ(unpack_mask(&e, &p, 0x6, &info, NULL), 0);
	free(p.buf);
	env_fini(&e);
}

int
main(void)
{
	static const struct ut_test codec_tests[] = {
		UT_TEST(test_parity_matrix),
		UT_TEST(test_create_validation),
		UT_TEST(test_bad_args),
		UT_TEST(test_roundtrip_all_sizes),
		UT_TEST(test_encode_zero),
		UT_TEST(test_single_erasure),
		UT_TEST(test_forced_recovery),
		UT_TEST(test_decode_in_place),
		UT_TEST(test_k4m2_erasures),
		UT_TEST(test_other_geometries),
		UT_TEST(test_corrupt_md_bits),
		UT_TEST(test_corrupt_md_fields),
		UT_TEST(test_corrupt_payload),
		UT_TEST(test_wrong_lba),
		UT_TEST(test_torn_writes),
		UT_TEST(test_torn_k2m2),
		UT_TEST(test_never_written),
		UT_TEST(test_rebuild),
		UT_TEST(test_rebuild_verifies),
		UT_TEST(test_pack_roundtrip),
		UT_TEST(test_pack_short_payloads),
		UT_TEST(test_pack_damage),
	};
	struct ut_test tests[ARRAY_SIZE(codec_tests) + 16];
	size_t i, n = 0;

	for (i = 0; i < g_format_tests_count && n < ARRAY_SIZE(tests); i++) {
		tests[n++] = g_format_tests[i];
	}
	for (i = 0; i < ARRAY_SIZE(codec_tests) && n < ARRAY_SIZE(tests); i++) {
		tests[n++] = codec_tests[i];
	}
	for (i = 0; i < g_kernel_tests_count && n < ARRAY_SIZE(tests); i++) {
		tests[n++] = g_kernel_tests[i];
	}
	return ut_run("gga_codec", tests, n, NULL, NULL);
}
