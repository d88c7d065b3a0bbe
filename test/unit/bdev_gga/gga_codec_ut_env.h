/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the gga codec's unit tests share: fragment sets laid out as member
 * blocks, test data of several kinds, and a codec with its scratch and
 * buffers (gga_codec_ut_env.c).
 */
#ifndef GGA_CODEC_UT_ENV_H
#define GGA_CODEC_UT_ENV_H

#include <stddef.h>
#include <stdint.h>

#include "bdev_gga/gga_codec.h"

/* Metadata bytes per member block in these tests: more than the format needs. */
#define TEST_MD_SIZE 40

/*
 * A set of k + m fragments laid out as member blocks are: each fragment's
 * data followed by its metadata.
 */
struct fset {
	uint32_t n, frag_size, md_size;
	uint8_t *buf;
	void *data[GGA_CODEC_MAX_FRAGS];
	void *md[GGA_CODEC_MAX_FRAGS];
	const void *cdata[GGA_CODEC_MAX_FRAGS];
	const void *cmd[GGA_CODEC_MAX_FRAGS];
};

void fset_init(struct fset *f, const struct gga_codec *c);
void fset_free(struct fset *f);
/* Copy fragment i (data and metadata) from src into dst. */
void fset_take(struct fset *dst, const struct fset *src, uint32_t i);
void fset_copy(struct fset *dst, const struct fset *src);

uint64_t rng_next(void);
void fill_random(uint8_t *p, size_t len);

enum kind {
	KIND_RANDOM, /* random bytes: stored raw */
	KIND_ZERO,   /* all zero: zero encoding */
	KIND_HIGH,   /* a short repeating phrase: lz4, payload in the first fragment */
	KIND_MILD,   /* 60% random in 16-byte chunks: lz4, payload across fragments */
	KIND_HARD,   /* 94% random: lz4 barely wins or loses */
	KIND_COUNT,
};

/* Fill a block with data of the given kind. */
void fill_kind(uint8_t *p, size_t len, enum kind kind);

struct gga_codec *codec_new(uint32_t block_size, uint32_t k, uint32_t m, enum gga_matrix matrix);

/* Everything one test needs around a codec. */
struct env {
	struct gga_codec *c;
	struct gga_codec_scratch *s;
	uint32_t B, k, m, n, all;
	uint8_t *block, *out;
	struct fset f;
};

void env_init(struct env *e, uint32_t block_size, uint32_t k, uint32_t m, enum gga_matrix matrix);
void env_fini(struct env *e);
int env_encode(struct env *e, struct fset *f, uint64_t lba, uint64_t gen,
	       struct gga_encode_info *info);
/* Decode fragments of f present in mask; on success compare with expect. */
int env_decode(struct env *e, struct fset *f, uint32_t mask, uint64_t lba, const uint8_t *expect,
	       struct gga_decode_info *info);

#endif /* GGA_CODEC_UT_ENV_H */
