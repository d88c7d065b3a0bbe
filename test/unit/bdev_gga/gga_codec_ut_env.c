/* SPDX-License-Identifier: BSD-3-Clause */
/* The gga codec unit tests' shared helpers (gga_codec_ut_env.h). */
#include <stdlib.h>
#include <string.h>

#include "gga/util.h"
#include "gga_codec_ut_env.h"
#include "gga_ut.h"

void
fset_init(struct fset *f, const struct gga_codec *c)
{
	uint32_t i, stride;

	memset(f, 0, sizeof(*f));
	f->n = gga_codec_k(c) + gga_codec_m(c);
	f->frag_size = gga_codec_frag_size(c);
	f->md_size = gga_codec_md_size(c);
	stride = f->frag_size + f->md_size;
	f->buf = calloc(f->n, stride);
	CU_ASSERT_FATAL(f->buf != NULL);
	for (i = 0; i < f->n; i++) {
		f->data[i] = f->buf + (size_t)i * stride;
		f->md[i] = f->buf + (size_t)i * stride + f->frag_size;
		f->cdata[i] = f->data[i];
		f->cmd[i] = f->md[i];
	}
}

void
fset_free(struct fset *f)
{
	free(f->buf);
	f->buf = NULL;
}

/* Copy fragment i (data and metadata) from src into dst. */
void
fset_take(struct fset *dst, const struct fset *src, uint32_t i)
{
	memcpy(dst->data[i], src->data[i], dst->frag_size);
	memcpy(dst->md[i], src->md[i], dst->md_size);
}

void
fset_copy(struct fset *dst, const struct fset *src)
{
	uint32_t i;

	for (i = 0; i < dst->n; i++) {
		fset_take(dst, src, i);
	}
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

uint64_t
rng_next(void)
{
	g_rng ^= g_rng << 13;
	g_rng ^= g_rng >> 7;
	g_rng ^= g_rng << 17;
	return g_rng;
}

void
fill_random(uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		p[i] = (uint8_t)rng_next();
	}
}

/* Fill a block with data of the given kind; chunks are `percent` random. */
static void
fill_chunks(uint8_t *p, size_t len, uint32_t percent)
{
	size_t off;
	uint32_t acc = 0;

	for (off = 0; off < len; off += 16) {
		acc += percent;
		if (acc >= 100) {
			acc -= 100;
			fill_random(p + off, 16);
		} else {
			memset(p + off, (int)(rng_next() & 0xff), 16);
		}
	}
}

void
fill_kind(uint8_t *p, size_t len, enum kind kind)
{
	static const char phrase[] = "gga compresses, splits and protects every block. ";
	size_t i;

	switch (kind) {
	case KIND_RANDOM:
		fill_random(p, len);
		break;
	case KIND_ZERO:
		memset(p, 0, len);
		break;
	case KIND_HIGH:
		for (i = 0; i < len; i++) {
			p[i] = (uint8_t)phrase[i % (sizeof(phrase) - 1)];
		}
		break;
	case KIND_MILD:
		fill_chunks(p, len, 60);
		break;
	default:
		fill_chunks(p, len, 94);
		break;
	}
}

struct gga_codec *
codec_new(uint32_t block_size, uint32_t k, uint32_t m, enum gga_matrix matrix)
{
	struct gga_codec_opts opts;
	struct gga_codec *c = NULL;

	gga_codec_opts_init(&opts);
	opts.block_size = block_size;
	opts.k = k;
	opts.m = m;
	opts.matrix = matrix;
	opts.md_size = TEST_MD_SIZE;
	UT_ASSERT_EQ_FATAL(gga_codec_create(&opts, &c), 0);
	CU_ASSERT_FATAL(c != NULL);
	return c;
}

void
env_init(struct env *e, uint32_t block_size, uint32_t k, uint32_t m, enum gga_matrix matrix)
{
	memset(e, 0, sizeof(*e));
	e->c = codec_new(block_size, k, m, matrix);
	UT_ASSERT_EQ_FATAL(gga_codec_scratch_alloc(e->c, &e->s), 0);
	e->B = block_size;
	e->k = k;
	e->m = m;
	e->n = k + m;
	e->all = (1u << e->n) - 1;
	e->block = malloc(block_size);
	e->out = malloc(block_size);
	CU_ASSERT_FATAL(e->block != NULL && e->out != NULL);
	fset_init(&e->f, e->c);
}

void
env_fini(struct env *e)
{
	fset_free(&e->f);
	free(e->block);
	free(e->out);
	gga_codec_scratch_free(e->s);
	gga_codec_destroy(e->c);
}

int
env_encode(struct env *e, struct fset *f, uint64_t lba, uint64_t gen, struct gga_encode_info *info)
{
	return gga_codec_encode(e->c, e->s, e->block, lba, gen, f->data, f->md, info);
}

/* Decode fragments of f present in mask; on success compare with expect. */
int
env_decode(struct env *e, struct fset *f, uint32_t mask, uint64_t lba, const uint8_t *expect,
	   struct gga_decode_info *info)
{
	int rc;

	memset(e->out, 0xa5, e->B);
	rc = gga_codec_decode(e->c, e->s, f->cdata, f->cmd, mask, lba, e->out, info);
	if (rc == 0 && expect != NULL) {
		CU_ASSERT(memcmp(e->out, expect, e->B) == 0);
	}
	return rc;
}
