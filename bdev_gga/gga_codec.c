/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The gga codec: LZ4 + ISA-L erasure coding + CRC-32C over one logical block.
 * See gga_codec.h for the contract and docs/FORMAT.md for the format.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l/erasure_code.h>
#include <isa-l/raid.h>
#include <lz4.h>

#include "gga/log.h"
#include "gga/util.h"
#include "gga_codec.h"

/* ISA-L's expanded multiplication tables take 32 bytes per matrix coefficient. */
#define EC_TBL_BYTES       32
#define NO_PATTERN         UINT32_MAX
/* Where the encoding byte sits in fragment metadata (struct gga_frag_md_disk). */
#define MD_ENCODING_OFFSET offsetof(struct gga_frag_md_disk, encoding)
/* Bytes of each fragment of an lz4 block decode prefetches before it starts checking. */
#define PREFETCH_BYTES     4096
/* Acceleration 1 is LZ4's default trade-off of speed for ratio. */
#define LZ4_ACCELERATION   1

struct gga_codec {
	uint32_t block_size;
	uint32_t frag_size;
	uint32_t md_size;
	uint32_t k;
	uint32_t m;
	uint32_t n; /* k + m */
	uint32_t data_mask;
	uint32_t parity_mask;
	uint32_t all_mask;
	enum gga_matrix matrix;
	/* CRC-32C of an all-zero fragment and of an all-zero block. */
	uint32_t zero_frag_crc;
	uint32_t zero_block_crc;
	/*
	 * Multiplication by x^(8 * frag_size) modulo the CRC polynomial, one
	 * table per byte of the multiplicand (the product is linear in it):
	 * what appending a fragment does to the CRC of what precedes it.
	 */
	uint32_t crc_shift_tbl[4][256];
	/* n x k generator matrix: identity on top, parity rows below. */
	uint8_t gen[GGA_MAX_FRAGS * GGA_MAX_FRAGS];
	/* Parity fragments whose row is all ones: the XOR of the data fragments. */
	uint32_t xor_parity_mask;
	/* Tables of the m parity rows, EC_TBL_BYTES * k per row, row after row. */
	uint8_t *enc_tbls;
	/*
	 * Recovery tables, indexed by a fragment mask: the lost data fragments
	 * plus the parity fragments that replace them (as many as are lost).
	 * rec_index[mask] is the offset in rec_tbls of one table per lost data
	 * fragment, ascending, each over the k sources: surviving data
	 * fragments ascending, then the chosen parity fragments ascending.
	 */
	uint32_t *rec_index;
	uint8_t *rec_tbls;
};

struct gga_codec_scratch {
	uint32_t block_size;
	void *lz4_state;
	uint8_t *cbuf; /* LZ4_compressBound(block_size): compressed output */
	int cbuf_len;
	uint8_t *dbuf; /* block_size: contiguous payload, rebuilt fragments */
	uint8_t *bbuf; /* block_size: block decoded for verification by rebuild */
	void *mem;
};

/* ---------------------------------------------------------------------- */
/* Creation                                                                */
/* ---------------------------------------------------------------------- */

void
gga_codec_opts_init(struct gga_codec_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->block_size = 4096;
	opts->k = 2;
	opts->m = 1;
	opts->matrix = GGA_MATRIX_VANDERMONDE;
	opts->md_size = GGA_FRAG_MD_SIZE;
}

/* CRC-32C's polynomial, bit-reflected. */
#define CRC32C_POLY_REFLECTED 0x82f63b78u

/* ISA-L's encode, leaving the vector registers clean (see simd_upper_clean()). */
static inline void
ec_encode(int len, int k, int rows, unsigned char *tbls, unsigned char **src, unsigned char **dst)
{
	ec_encode_data(len, k, rows, tbls, src, dst);
	simd_upper_clean();
}

/* ISA-L's XOR needs its vectors 32-byte aligned and 32-byte multiples. */
#define XOR_ALIGN 32

/*
 * dst = the XOR of the k fragments src[0..k-1] with ISA-L's XOR kernel,
 * which does per byte what the erasure code's table lookups do for a row of
 * ones, at a fraction of the cost. Returns false when the buffers do not
 * suit it (the caller then runs the erasure code).
 */
static bool
xor_frags(const struct gga_codec *c, uint8_t *const src[], uint8_t *dst)
{
	void *v[GGA_MAX_FRAGS + 1];
	uintptr_t bits = (uintptr_t)dst | c->frag_size;
	uint32_t i;
	int rc;

	if (c->k < 2) {
		return false;
	}
	for (i = 0; i < c->k; i++) {
		bits |= (uintptr_t)src[i];
		v[i] = src[i];
	}
	if (bits % XOR_ALIGN != 0) {
		return false;
	}
	v[c->k] = dst;
	rc = xor_gen((int)c->k + 1, (int)c->frag_size, v);
	simd_upper_clean();
	return rc == 0;
}

/* The m parity fragments of the k data fragments in frags[], into frags[k..n-1]. */
static void
encode_parity(const struct gga_codec *c, uint8_t *frags[])
{
	uint32_t done = 0;

	if ((c->xor_parity_mask & (1u << c->k)) && xor_frags(c, frags, frags[c->k])) {
		done = 1;
	}
	if (done < c->m) {
		ec_encode((int)c->frag_size, (int)c->k, (int)(c->m - done),
			  c->enc_tbls + (size_t)EC_TBL_BYTES * c->k * done, frags,
			  &frags[c->k + done]);
	}
}

/* a * b modulo the CRC-32C polynomial, in the CRC's bit-reflected representation. */
static uint32_t
crc32c_mulmod(uint32_t a, uint32_t b)
{
	uint32_t m = 1u << 31, p = 0;

	for (;;) {
		if (a & m) {
			p ^= b;
			if ((a & (m - 1)) == 0) {
				break;
			}
		}
		m >>= 1;
		b = (b & 1) ? (b >> 1) ^ CRC32C_POLY_REFLECTED : b >> 1;
	}
	return p;
}

/* x^(8 * len) modulo the polynomial, for len a power of two. */
static uint32_t
crc32c_shift_pow2(uint32_t len)
{
	uint32_t p = 1u << 30; /* x^1 */
	uint32_t n;

	for (n = 0; n < 3 + u64log2(len); n++) {
		p = crc32c_mulmod(p, p);
	}
	return p;
}

static void
crc32c_shift_tables(struct gga_codec *c)
{
	uint32_t shift = crc32c_shift_pow2(c->frag_size), j, v;

	for (j = 0; j < 4; j++) {
		for (v = 0; v < 256; v++) {
			c->crc_shift_tbl[j][v] = crc32c_mulmod(shift, v << (8 * j));
		}
	}
}

/*
 * The CRC of A followed by a fragment B from crc(A) and crc(B): crc(A) times
 * x^(8 * |B|), plus crc(B). The pre- and post-inversion of the standard CRC
 * cancel out, as in zlib's crc32_combine(). It lets a raw block's CRC come
 * from its fragments' CRCs instead of another pass over the data.
 */
static uint32_t
crc32c_append_frag(const struct gga_codec *c, uint32_t crc_a, uint32_t crc_b)
{
	return c->crc_shift_tbl[0][crc_a & 0xff] ^ c->crc_shift_tbl[1][(crc_a >> 8) & 0xff] ^
	       c->crc_shift_tbl[2][(crc_a >> 16) & 0xff] ^ c->crc_shift_tbl[3][crc_a >> 24] ^ crc_b;
}

/*
 * CRC-32C is affine over XOR: crc(a ^ b) = crc(a) ^ crc(b) ^ crc(zeros of
 * the same length). So the CRC of a parity fragment that is the XOR of the
 * k data fragments follows from theirs, without a pass over it: the XOR of
 * their CRCs, and the zero fragment's CRC once for every XOR (k - 1 times).
 */
static uint32_t
xor_parity_crc(const struct gga_codec *c, const uint32_t *data_crc)
{
	uint32_t crc = c->k % 2 == 0 ? c->zero_frag_crc : 0, i;

	for (i = 0; i < c->k; i++) {
		crc ^= data_crc[i];
	}
	return crc;
}

static uint32_t
crc_of_fragments(const struct gga_codec *c, const uint32_t *frag_crc)
{
	uint32_t i, crc = 0;

	for (i = 0; i < c->k; i++) {
		crc = i == 0 ? frag_crc[0] : crc32c_append_frag(c, crc, frag_crc[i]);
	}
	return crc;
}

static bool
recovery_pattern(const struct gga_codec *c, uint32_t mask)
{
	uint32_t lost = popcount32(mask & c->data_mask);

	return lost > 0 && lost == popcount32(mask & c->parity_mask);
}

/*
 * Build the recovery tables of one pattern into tbl. Returns 0, or -EINVAL
 * when the sources' matrix is singular (the code is not MDS for k, m).
 */
static int
build_recovery(const struct gga_codec *c, uint32_t mask, uint8_t *tbl)
{
	uint8_t sub[GGA_MAX_FRAGS * GGA_MAX_FRAGS], inv[GGA_MAX_FRAGS * GGA_MAX_FRAGS];
	uint8_t rows[GGA_MAX_FRAGS * GGA_MAX_FRAGS];
	uint32_t i, r = 0, s = 0, k = c->k;

	for (i = 0; i < c->n; i++) {
		bool source = i < k ? !(mask & (1u << i)) : (mask & (1u << i)) != 0;

		if (source) {
			memcpy(&sub[s * k], &c->gen[i * k], k);
			s++;
		}
	}
	if (gf_invert_matrix(sub, inv, (int)k) != 0) {
		return -EINVAL;
	}
	/* Row d of the inverse expresses data fragment d in the sources. */
	for (i = 0; i < k; i++) {
		if (mask & (1u << i)) {
			memcpy(&rows[r * k], &inv[i * k], k);
			r++;
		}
	}
	ec_init_tables((int)k, (int)r, rows, tbl);
	return 0;
}

static int
build_tables(struct gga_codec *c)
{
	uint32_t mask, npatterns = 1u << c->n;
	size_t total = 0;
	int rc;

	if (c->matrix == GGA_MATRIX_VANDERMONDE) {
		gf_gen_rs_matrix(c->gen, (int)c->n, (int)c->k);
	} else {
		gf_gen_cauchy1_matrix(c->gen, (int)c->n, (int)c->k);
	}
	c->enc_tbls = malloc((size_t)EC_TBL_BYTES * c->k * c->m);
	c->rec_index = malloc(sizeof(*c->rec_index) * npatterns);
	if (c->enc_tbls == NULL || c->rec_index == NULL) {
		return -ENOMEM;
	}
	ec_init_tables((int)c->k, (int)c->m, &c->gen[c->k * c->k], c->enc_tbls);

	for (mask = 0; mask < npatterns; mask++) {
		c->rec_index[mask] = NO_PATTERN;
		if (recovery_pattern(c, mask)) {
			c->rec_index[mask] = (uint32_t)total;
			total += (size_t)EC_TBL_BYTES * c->k * popcount32(mask & c->data_mask);
		}
	}
	c->rec_tbls = malloc(total);
	if (c->rec_tbls == NULL) {
		return -ENOMEM;
	}
	for (mask = 0; mask < npatterns; mask++) {
		if (c->rec_index[mask] == NO_PATTERN) {
			continue;
		}
		rc = build_recovery(c, mask, c->rec_tbls + c->rec_index[mask]);
		if (rc != 0) {
			ERRLOG("gga codec %u+%u %s: lost fragment mask 0x%x cannot be recovered; "
			       "use the cauchy matrix\n",
			       c->k, c->m, gga_matrix_name(c->matrix), mask & c->data_mask);
			return rc;
		}
	}
	return 0;
}

int
gga_codec_create(const struct gga_codec_opts *opts, struct gga_codec **codec_out)
{
	struct gga_codec *c;
	uint32_t i, j;
	void *zeros;
	int rc;

	if (opts == NULL || codec_out == NULL) {
		return -EINVAL;
	}
	if (gga_geometry_check(opts->block_size, opts->k, opts->m, opts->md_size) != 0 ||
	    gga_matrix_name(opts->matrix) == NULL) {
		ERRLOG("gga codec: invalid geometry block_size %u k %u m %u md_size %u matrix %d\n",
		       opts->block_size, opts->k, opts->m, opts->md_size, (int)opts->matrix);
		return -EINVAL;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		return -ENOMEM;
	}
	c->block_size = opts->block_size;
	c->k = opts->k;
	c->m = opts->m;
	c->n = opts->k + opts->m;
	c->frag_size = opts->block_size / opts->k;
	c->md_size = opts->md_size;
	c->matrix = opts->matrix;
	c->data_mask = (1u << c->k) - 1;
	c->all_mask = (1u << c->n) - 1;
	c->parity_mask = c->all_mask & ~c->data_mask;

	zeros = calloc(1, c->block_size);
	if (zeros == NULL) {
		rc = -ENOMEM;
		goto out_destroy_codec;
	}
	c->zero_frag_crc = gga_crc32c(zeros, c->frag_size, 0);
	c->zero_block_crc = gga_crc32c(zeros, c->block_size, 0);
	free(zeros);
	crc32c_shift_tables(c);

	rc = build_tables(c);
	if (rc != 0) {
		goto out_destroy_codec;
	}
	for (i = c->k; i < c->n; i++) {
		for (j = 0; j < c->k && c->gen[i * c->k + j] == 1; j++) {
		}
		if (j == c->k) {
			c->xor_parity_mask |= 1u << i;
		}
	}
	*codec_out = c;
	return 0;

out_destroy_codec:
	gga_codec_destroy(c);
	return rc;
}

void
gga_codec_destroy(struct gga_codec *codec)
{
	if (codec == NULL) {
		return;
	}
	free(codec->rec_tbls);
	free(codec->rec_index);
	free(codec->enc_tbls);
	free(codec);
}

uint32_t
gga_codec_block_size(const struct gga_codec *codec)
{
	return codec->block_size;
}

uint32_t
gga_codec_frag_size(const struct gga_codec *codec)
{
	return codec->frag_size;
}

uint32_t
gga_codec_md_size(const struct gga_codec *codec)
{
	return codec->md_size;
}

uint32_t
gga_codec_k(const struct gga_codec *codec)
{
	return codec->k;
}

uint32_t
gga_codec_m(const struct gga_codec *codec)
{
	return codec->m;
}

enum gga_matrix
gga_codec_matrix(const struct gga_codec *codec)
{
	return codec->matrix;
}

int
gga_codec_scratch_alloc(const struct gga_codec *codec, struct gga_codec_scratch **scratch_out)
{
	struct gga_codec_scratch *s;
	size_t state_len, cbuf_len, len;
	uint8_t *p;

	if (codec == NULL || scratch_out == NULL) {
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		return -ENOMEM;
	}
	state_len = align_up((uint64_t)LZ4_sizeofState(), GGA_CACHE_LINE);
	cbuf_len = align_up((uint64_t)LZ4_compressBound((int)codec->block_size), GGA_CACHE_LINE);
	len = state_len + cbuf_len + 2 * (size_t)codec->block_size;
	if (posix_memalign(&s->mem, GGA_CACHE_LINE, len) != 0) {
		free(s);
		return -ENOMEM;
	}
	p = s->mem;
	s->block_size = codec->block_size;
	s->lz4_state = p;
	s->cbuf = p + state_len;
	s->cbuf_len = (int)cbuf_len;
	s->dbuf = s->cbuf + cbuf_len;
	s->bbuf = s->dbuf + codec->block_size;
	*scratch_out = s;
	return 0;
}

void
gga_codec_scratch_free(struct gga_codec_scratch *scratch)
{
	if (scratch == NULL) {
		return;
	}
	free(scratch->mem);
	free(scratch);
}

/* ---------------------------------------------------------------------- */
/* Encode                                                                  */
/* ---------------------------------------------------------------------- */

static bool
frag_ptrs_ok(const struct gga_codec *c, const void *const data[], const void *const md[],
	     uint32_t mask)
{
	uint32_t i;

	if (data == NULL || md == NULL) {
		return false;
	}
	for (mask &= c->all_mask; mask != 0; mask &= mask - 1) {
		i = (uint32_t)__builtin_ctz(mask);
		if (data[i] == NULL || md[i] == NULL) {
			return false;
		}
	}
	return true;
}

/* Write fragment i's metadata: `common` with this role and data crc, then zero padding. */
static void
write_md(const struct gga_codec *c, struct gga_frag_md *common, uint32_t i, uint32_t data_crc,
	 uint64_t lba, void *md)
{
	common->role = (uint8_t)i;
	common->data_crc = data_crc;
	gga_frag_md_encode(common, lba, md);
	if (c->md_size > GGA_FRAG_MD_SIZE) {
		memset((uint8_t *)md + GGA_FRAG_MD_SIZE, 0, c->md_size - GGA_FRAG_MD_SIZE);
	}
}

static void
md_common_init(const struct gga_codec *c, struct gga_frag_md *md, enum gga_encoding encoding,
	       uint32_t payload_len, uint64_t generation, uint32_t block_crc)
{
	memset(md, 0, sizeof(*md));
	md->version = GGA_FORMAT_VERSION;
	md->encoding = (uint8_t)encoding;
	md->k = (uint8_t)c->k;
	md->m = (uint8_t)c->m;
	md->payload_len = payload_len;
	md->generation = generation;
	md->block_crc = block_crc;
}

static void
fill_encode_info(struct gga_encode_info *info, enum gga_encoding encoding, uint32_t payload_len,
		 uint32_t block_crc)
{
	if (info != NULL) {
		info->encoding = encoding;
		info->payload_len = payload_len;
		info->block_crc = block_crc;
	}
}

static void
encode_zero(const struct gga_codec *c, uint64_t lba, uint64_t generation, void *const frag_data[],
	    void *const frag_md[], struct gga_encode_info *info)
{
	struct gga_frag_md md;
	uint32_t i;

	md_common_init(c, &md, GGA_ENC_ZERO, 0, generation, c->zero_block_crc);
	for (i = 0; i < c->n; i++) {
		memset(frag_data[i], 0, c->frag_size);
		write_md(c, &md, i, c->zero_frag_crc, lba, frag_md[i]);
	}
	fill_encode_info(info, GGA_ENC_ZERO, 0, c->zero_block_crc);
}

int
gga_codec_encode_zero(const struct gga_codec *codec, uint64_t lba, uint64_t generation,
		      void *const frag_data[], void *const frag_md[], struct gga_encode_info *info)
{
	if (codec == NULL || generation == 0 ||
	    !frag_ptrs_ok(codec, (const void *const *)frag_data, (const void *const *)frag_md,
			  codec->all_mask)) {
		return -EINVAL;
	}
	encode_zero(codec, lba, generation, frag_data, frag_md, info);
	return 0;
}

int
gga_codec_encode(const struct gga_codec *c, struct gga_codec_scratch *s, const void *block,
		 uint64_t lba, uint64_t generation, void *const frag_data[], void *const frag_md[],
		 struct gga_encode_info *info)
{
	return gga_codec_encode_ex(c, s, block, lba, generation, 0, frag_data, frag_md, info);
}

int
gga_codec_encode_ex(const struct gga_codec *c, struct gga_codec_scratch *s, const void *block,
		    uint64_t lba, uint64_t generation, uint32_t flags, void *const frag_data[],
		    void *const frag_md[], struct gga_encode_info *info)
{
	uint8_t *frags[GGA_MAX_FRAGS];
	uint32_t crc[GGA_MAX_FRAGS] = { 0 };
	const uint8_t *payload;
	struct gga_frag_md md;
	enum gga_encoding encoding;
	uint32_t i, len, block_crc, F;
	int clen;

	if (unlikely(c == NULL || s == NULL || block == NULL || generation == 0 ||
		     s->block_size != c->block_size ||
		     !frag_ptrs_ok(c, (const void *const *)frag_data, (const void *const *)frag_md,
				   c->all_mask))) {
		return -EINVAL;
	}
	if (mem_is_zero(block, c->block_size)) {
		encode_zero(c, lba, generation, frag_data, frag_md, info);
		return 0;
	}
	F = c->frag_size;
	/*
	 * Compression goes first: it streams the block (usually cold, fresh from
	 * the network) in order, and the CRCs then run over cached data. The
	 * block is checksummed slice by slice: if it ends up stored raw, the
	 * slices are the data fragments and their CRCs are already known.
	 */
	clen = 0;
	if (!(flags & GGA_ENCODE_NO_LZ4)) {
		clen = LZ4_compress_fast_extState(s->lz4_state, block, (char *)s->cbuf,
						  (int)c->block_size, s->cbuf_len,
						  LZ4_ACCELERATION);
	}
	for (i = 0; i < c->k; i++) {
		crc[i] = gga_crc32c((const uint8_t *)block + (size_t)i * F, F, 0);
	}
	block_crc = crc_of_fragments(c, crc);
	/* Equal size gains nothing and costs a decompression, so it is stored raw. */
	if (clen > 0 && (uint32_t)clen < c->block_size) {
		encoding = GGA_ENC_LZ4;
		payload = s->cbuf;
		len = (uint32_t)clen;
	} else {
		encoding = GGA_ENC_RAW;
		payload = block;
		len = c->block_size;
	}

	/* The payload, zero-padded to block_size, is cut into the k data fragments. */
	for (i = 0; i < c->k; i++) {
		uint32_t off = i * F;
		uint32_t n = len > off ? GGA_MIN(F, len - off) : 0;

		frags[i] = frag_data[i];
		memcpy(frags[i], payload + off, n);
		if (n < F) {
			memset(frags[i] + n, 0, F - n);
		}
		if (encoding != GGA_ENC_RAW) {
			crc[i] = gga_crc32c(frags[i], F, 0);
		}
	}
	for (i = c->k; i < c->n; i++) {
		frags[i] = frag_data[i];
	}
	encode_parity(c, frags);
	for (i = c->k; i < c->n; i++) {
		crc[i] = (c->xor_parity_mask & (1u << i)) ? xor_parity_crc(c, crc) :
							    gga_crc32c(frags[i], F, 0);
	}

	md_common_init(c, &md, encoding, len, generation, block_crc);
	for (i = 0; i < c->n; i++) {
		write_md(c, &md, i, crc[i], lba, frag_md[i]);
	}
	fill_encode_info(info, encoding, len, block_crc);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Resolving which fragments define a block                                */
/* ---------------------------------------------------------------------- */

/* The version of the block that decode settled on. */
struct resolved {
	struct gga_frag_md md; /* common fields; role and data_crc meaningless */
	uint32_t valid_mask;
	uint32_t data_crc[GGA_MAX_FRAGS]; /* of each valid fragment, checked */
};

/* Fragments belong to the same write when all of this agrees. */
static bool
same_write(const struct gga_frag_md *a, const struct gga_frag_md *b)
{
	return a->generation == b->generation && a->encoding == b->encoding &&
	       a->payload_len == b->payload_len && a->block_crc == b->block_crc;
}

/* Check one present fragment; fill md and return GGA_FRAG_VALID if it is intact. */
static enum gga_frag_status
check_fragment(const struct gga_codec *c, const uint8_t *data, const void *md_buf, uint32_t i,
	       uint64_t lba, struct gga_frag_md *md)
{
	int rc;

	rc = gga_frag_md_decode(md_buf, lba, md);
	switch (rc) {
	case 0:
		break;
	case -ENODATA:
		if (!mem_is_zero(data, c->frag_size)) {
			return GGA_FRAG_BAD_BLANK;
		}
		memset(md, 0, sizeof(*md));
		md->encoding = GGA_ENC_UNWRITTEN;
		return GGA_FRAG_VALID;
	case -EILSEQ:
		return GGA_FRAG_BAD_MAGIC;
	case -EPROTONOSUPPORT:
		return GGA_FRAG_BAD_VERSION;
	default:
		return GGA_FRAG_BAD_MD_CRC;
	}
	if (md->role != i) {
		return GGA_FRAG_BAD_ROLE;
	}
	if (md->k != c->k || md->m != c->m) {
		return GGA_FRAG_BAD_GEOMETRY;
	}
	if (md->generation == 0) {
		return GGA_FRAG_BAD_FIELD;
	}
	switch (md->encoding) {
	case GGA_ENC_RAW:
		if (md->payload_len != c->block_size) {
			return GGA_FRAG_BAD_FIELD;
		}
		break;
	case GGA_ENC_LZ4:
		if (md->payload_len == 0 || md->payload_len >= c->block_size) {
			return GGA_FRAG_BAD_FIELD;
		}
		break;
	case GGA_ENC_ZERO:
		if (md->payload_len != 0 || md->block_crc != c->zero_block_crc ||
		    md->data_crc != c->zero_frag_crc) {
			return GGA_FRAG_BAD_FIELD;
		}
		break;
	default:
		return GGA_FRAG_BAD_FIELD;
	}
	if (gga_crc32c(data, c->frag_size, 0) != md->data_crc) {
		return GGA_FRAG_BAD_DATA_CRC;
	}
	return GGA_FRAG_VALID;
}

/*
 * Check every present fragment, group the intact ones by write, and pick the
 * newest write that has at least k of them. Fills info's masks and statuses
 * and returns 0, or -EIO when no write qualifies or the choice is ambiguous.
 */
static int
resolve(const struct gga_codec *c, const void *const frag_data[], const void *const frag_md[],
	uint32_t present, uint64_t lba, struct resolved *res, struct gga_decode_info *info)
{
	struct gga_frag_md md[GGA_MAX_FRAGS];
	uint32_t group_mask[GGA_MAX_FRAGS], group_first[GGA_MAX_FRAGS];
	uint32_t i, g, m, ngroups = 0, intact = 0;
	int best = -1;
	bool tie = false;

	/*
	 * Fragments usually arrive cold (DMA, another core). Ask for all the
	 * metadata up front so the misses overlap instead of queueing behind
	 * each fragment's checksum. The data of an lz4 block is asked for up
	 * front too; a raw block's is not: gga_codec_bench decodes lz4 blocks
	 * about 6 % faster with it and raw blocks about 10 % faster without
	 * (their checksum and copy are sequential passes, which the hardware
	 * prefetcher serves on its own). The encoding byte of the first
	 * fragment's metadata decides: only a hint, checked below like the rest.
	 */
	for (m = present; m != 0; m &= m - 1) {
		__builtin_prefetch(frag_md[__builtin_ctz(m)]);
	}
	if (present != 0 &&
	    ((const uint8_t *)frag_md[__builtin_ctz(present)])[MD_ENCODING_OFFSET] == GGA_ENC_LZ4) {
		for (m = present; m != 0; m &= m - 1) {
			const uint8_t *p = frag_data[__builtin_ctz(m)];
			uint32_t off, len = GGA_MIN(c->frag_size, PREFETCH_BYTES);

			/*
			 * Four lines a round: the loop, not the prefetches, costs
			 * the instructions. Past the end of a fragment under four
			 * lines this only touches the cache: a prefetch never faults.
			 */
			for (off = 0; off < len; off += 4 * GGA_CACHE_LINE) {
				__builtin_prefetch(p + off);
				__builtin_prefetch(p + off + GGA_CACHE_LINE);
				__builtin_prefetch(p + off + 2 * GGA_CACHE_LINE);
				__builtin_prefetch(p + off + 3 * GGA_CACHE_LINE);
			}
		}
	}
	memset(info, 0, sizeof(*info));
	info->missing_mask = c->all_mask & ~present;
	for (m = present; m != 0; m &= m - 1) {
		enum gga_frag_status st;

		i = (uint32_t)__builtin_ctz(m);
		st = check_fragment(c, frag_data[i], frag_md[i], i, lba, &md[i]);
		info->status[i] = (uint8_t)st;
		if (st != GGA_FRAG_VALID) {
			info->corrupt_mask |= 1u << i;
			if (gga_frag_md_is_poison(frag_md[i])) {
				info->poison_mask |= 1u << i;
			}
			continue;
		}
		intact |= 1u << i;
		for (g = 0; g < ngroups; g++) {
			if (same_write(&md[group_first[g]], &md[i])) {
				break;
			}
		}
		if (g == ngroups) {
			group_first[ngroups] = i;
			group_mask[ngroups] = 0;
			ngroups++;
		}
		group_mask[g] |= 1u << i;
	}

	for (g = 0; g < ngroups; g++) {
		uint64_t gen = md[group_first[g]].generation;

		if (popcount32(group_mask[g]) < c->k) {
			continue;
		}
		if (best < 0 || gen > md[group_first[best]].generation) {
			best = (int)g;
			tie = false;
		} else if (gen == md[group_first[best]].generation) {
			tie = true;
		}
	}

	if (best < 0 || tie) {
		for (i = 0; i < c->n; i++) {
			if (intact & (1u << i)) {
				info->status[i] = GGA_FRAG_UNRESOLVED;
			}
		}
		return -EIO;
	}

	res->md = md[group_first[best]];
	res->valid_mask = group_mask[best];
	for (m = res->valid_mask; m != 0; m &= m - 1) {
		i = (uint32_t)__builtin_ctz(m);
		res->data_crc[i] = md[i].data_crc;
	}
	info->encoding = res->md.encoding;
	info->payload_len = res->md.payload_len;
	info->generation = res->md.generation;
	info->valid_mask = res->valid_mask;
	for (m = info->corrupt_mask; m != 0; m &= m - 1) {
		i = (uint32_t)__builtin_ctz(m);
		if (info->status[i] != GGA_FRAG_BAD_DATA_CRC ||
		    md[i].generation > res->md.generation) {
			info->hidden_mask |= 1u << i;
		}
	}
	/* Usually every intact fragment is part of the chosen write. */
	for (m = intact & ~res->valid_mask; m != 0; m &= m - 1) {
		uint32_t bit = m & -m;

		i = (uint32_t)__builtin_ctz(m);
		if (md[i].generation < res->md.generation) {
			info->status[i] = GGA_FRAG_STALE;
			info->stale_mask |= bit;
		} else if (md[i].generation > res->md.generation) {
			info->status[i] = GGA_FRAG_ORPHAN;
			info->orphan_mask |= bit;
		} else {
			info->status[i] = GGA_FRAG_CONFLICT;
			info->corrupt_mask |= bit;
		}
	}
	return 0;
}

/*
 * Rebuild the data fragments in `want` (a subset of the data fragments not in
 * `valid`) into out[d], from the valid data fragments and as many valid parity
 * fragments, lowest first, as there are data fragments missing. Returns the
 * mask of fragments read.
 */
static uint32_t
recover_data(const struct gga_codec *c, const void *const frag_data[], uint32_t valid,
	     uint32_t want, uint8_t *const out[])
{
	uint8_t *src[GGA_MAX_FRAGS], *dst[GGA_MAX_FRAGS];
	uint32_t lost = c->data_mask & ~valid;
	uint32_t nlost = popcount32(lost), pmask = 0, used, i, s = 0, r = 0;
	const uint8_t *tbl;

	for (i = c->k; i < c->n && popcount32(pmask) < nlost; i++) {
		if (valid & (1u << i)) {
			pmask |= 1u << i;
		}
	}
	/* resolve() guarantees k valid fragments, hence enough parity. */
	assert(popcount32(pmask) == nlost);
	used = (c->data_mask & valid) | pmask;
	for (i = 0; i < c->n; i++) {
		if (used & (1u << i)) {
			src[s++] = (uint8_t *)(uintptr_t)frag_data[i];
		}
	}
	tbl = c->rec_tbls + c->rec_index[lost | pmask];
	if (want == lost) {
		for (i = 0; i < c->k; i++) {
			if (lost & (1u << i)) {
				dst[r++] = out[i];
			}
		}
		/* One data fragment rebuilt from the XOR parity is the XOR of the other k. */
		if (r == 1 && pmask == (c->xor_parity_mask & (1u << c->k)) &&
		    xor_frags(c, src, dst[0])) {
			return used;
		}
		ec_encode((int)c->frag_size, (int)c->k, (int)r, (uint8_t *)(uintptr_t)tbl, src,
			  dst);
		return used;
	}
	/* Only some lost fragments matter: run their table rows one by one. */
	for (i = 0; i < c->k; i++) {
		if (!(lost & (1u << i))) {
			continue;
		}
		if (want & (1u << i)) {
			ec_encode((int)c->frag_size, (int)c->k, 1,
				  (uint8_t *)(uintptr_t)tbl + (size_t)EC_TBL_BYTES * c->k * r, src,
				  (uint8_t **)&out[i]);
		}
		r++;
	}
	return used;
}

static bool
decode_args_ok(const struct gga_codec *c, const struct gga_codec_scratch *s,
	       const void *const frag_data[], const void *const frag_md[], uint32_t present)
{
	return c != NULL && s != NULL && s->block_size == c->block_size &&
	       (present & ~c->all_mask) == 0 && frag_ptrs_ok(c, frag_data, frag_md, present);
}

/* ---------------------------------------------------------------------- */
/* Decode                                                                  */
/* ---------------------------------------------------------------------- */

/*
 * A raw block is its data fragments end to end. Their CRCs were checked
 * (or, for rebuilt ones, are computed here), so the block's CRC follows from
 * them without another pass over the block.
 */
static int
decode_raw(const struct gga_codec *c, const void *const frag_data[], struct resolved *res,
	   uint8_t *block, struct gga_decode_info *info)
{
	uint8_t *out[GGA_MAX_FRAGS];
	uint32_t i, valid = res->valid_mask, lost = c->data_mask & ~valid;

	for (i = 0; i < c->k; i++) {
		out[i] = block + (size_t)i * c->frag_size;
		/* A fragment read into its place in the block is already there. */
		if ((valid & (1u << i)) && frag_data[i] != out[i]) {
			memcpy(out[i], frag_data[i], c->frag_size);
		}
	}
	info->used_mask = c->data_mask & valid;
	if (lost != 0) {
		info->used_mask = recover_data(c, frag_data, valid, lost, out);
		info->rebuilt_mask = lost;
		for (i = 0; i < c->k; i++) {
			if (lost & (1u << i)) {
				res->data_crc[i] = gga_crc32c(out[i], c->frag_size, 0);
			}
		}
	}
	return crc_of_fragments(c, res->data_crc) == res->md.block_crc ? 0 : -EIO;
}

static int
decode_lz4(const struct gga_codec *c, struct gga_codec_scratch *s, const void *const frag_data[],
	   uint32_t valid, uint32_t len, uint8_t *block, struct gga_decode_info *info)
{
	uint32_t F = c->frag_size, nfrag = (len + F - 1) / F;
	uint32_t need = (1u << nfrag) - 1, lost = need & ~valid, i;
	uint8_t *out[GGA_MAX_FRAGS];
	const uint8_t *src;
	int n;

	info->used_mask = need & valid;
	if (nfrag == 1 && lost == 0 && frag_data[0] != block) {
		/*
		 * The whole payload sits in the first fragment: no copy needed,
		 * unless that fragment lies in the output block (LZ4 cannot
		 * decompress in place).
		 */
		src = frag_data[0];
	} else {
		for (i = 0; i < nfrag; i++) {
			out[i] = s->dbuf + (size_t)i * F;
			if (valid & (1u << i)) {
				memcpy(out[i], frag_data[i], GGA_MIN(F, len - i * F));
			}
		}
		if (lost != 0) {
			info->used_mask = recover_data(c, frag_data, valid, lost, out);
			info->rebuilt_mask = lost;
		}
		src = s->dbuf;
	}
	n = LZ4_decompress_safe((const char *)src, (char *)block, (int)len, (int)c->block_size);
	if (n != (int)c->block_size) {
		return -EIO;
	}
	return 0;
}

int
gga_codec_decode(const struct gga_codec *c, struct gga_codec_scratch *s,
		 const void *const frag_data[], const void *const frag_md[], uint32_t present_mask,
		 uint64_t lba, void *block_out, struct gga_decode_info *info)
{
	struct gga_decode_info local;
	struct resolved res;
	int rc;

	if (unlikely(block_out == NULL ||
		     !decode_args_ok(c, s, frag_data, frag_md, present_mask))) {
		return -EINVAL;
	}
	if (info == NULL) {
		info = &local;
	}
	rc = resolve(c, frag_data, frag_md, present_mask, lba, &res, info);
	if (rc != 0) {
		return rc;
	}
	switch (res.md.encoding) {
	case GGA_ENC_UNWRITTEN:
	case GGA_ENC_ZERO:
		memset(block_out, 0, c->block_size);
		return 0;
	case GGA_ENC_RAW:
		rc = decode_raw(c, frag_data, &res, block_out, info);
		break;
	default:
		rc = decode_lz4(c, s, frag_data, res.valid_mask, res.md.payload_len, block_out,
				info);
		if (rc == 0 && gga_crc32c(block_out, c->block_size, 0) != res.md.block_crc) {
			rc = -EIO;
		}
		break;
	}
	if (rc != 0) {
		info->payload_corrupt = true;
		DEBUGLOG(gga_codec,
			 "lba %" PRIu64 " generation %" PRIu64 ": %s block failed "
			 "verification\n",
			 lba, res.md.generation, gga_encoding_name(res.md.encoding));
	}
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Rebuild                                                                 */
/* ---------------------------------------------------------------------- */

/* Check that the k data fragments of a write really hold the block it claims. */
static int
verify_data_fragments(const struct gga_codec *c, struct gga_codec_scratch *s, uint8_t *const data[],
		      const struct gga_frag_md *md)
{
	uint32_t i, crc = 0, F = c->frag_size, len = md->payload_len;
	int n;

	switch (md->encoding) {
	case GGA_ENC_RAW:
		for (i = 0; i < c->k; i++) {
			crc = gga_crc32c(data[i], F, crc);
		}
		return crc == md->block_crc ? 0 : -EIO;
	case GGA_ENC_LZ4:
		for (i = 0; i * F < len; i++) {
			memcpy(s->cbuf + (size_t)i * F, data[i], GGA_MIN(F, len - i * F));
		}
		n = LZ4_decompress_safe((const char *)s->cbuf, (char *)s->bbuf, (int)len,
					(int)c->block_size);
		if (n != (int)c->block_size ||
		    gga_crc32c(s->bbuf, c->block_size, 0) != md->block_crc) {
			return -EIO;
		}
		return 0;
	default:
		for (i = 0; i < c->k; i++) {
			if (!mem_is_zero(data[i], F)) {
				return -EIO;
			}
		}
		return 0;
	}
}

int
gga_codec_rebuild(const struct gga_codec *c, struct gga_codec_scratch *s,
		  const void *const frag_data[], const void *const frag_md[], uint32_t present_mask,
		  uint64_t lba, uint32_t target_mask, void *const out_data[], void *const out_md[],
		  struct gga_decode_info *info)
{
	uint8_t *data[GGA_MAX_FRAGS], *out;
	struct gga_decode_info local;
	struct resolved res;
	uint32_t i, lost, spare = 0;
	int rc;

	if (!decode_args_ok(c, s, frag_data, frag_md, present_mask) || target_mask == 0 ||
	    (target_mask & ~c->all_mask) != 0 ||
	    !frag_ptrs_ok(c, (const void *const *)out_data, (const void *const *)out_md,
			  target_mask)) {
		return -EINVAL;
	}
	if (info == NULL) {
		info = &local;
	}
	rc = resolve(c, frag_data, frag_md, present_mask, lba, &res, info);
	if (rc != 0) {
		return rc;
	}
	if (res.md.encoding == GGA_ENC_UNWRITTEN) {
		for (i = 0; i < c->n; i++) {
			if (target_mask & (1u << i)) {
				memset(out_data[i], 0, c->frag_size);
				memset(out_md[i], 0, c->md_size);
			}
		}
		return 0;
	}

	/* Gather all k data fragments, rebuilding lost ones into a target or scratch. */
	lost = c->data_mask & ~res.valid_mask;
	for (i = 0; i < c->k; i++) {
		if (res.valid_mask & (1u << i)) {
			data[i] = (uint8_t *)(uintptr_t)frag_data[i];
		} else if (target_mask & (1u << i)) {
			data[i] = out_data[i];
		} else {
			data[i] = s->dbuf + (size_t)spare++ * c->frag_size;
		}
	}
	info->used_mask = c->data_mask & res.valid_mask;
	if (lost != 0) {
		info->used_mask = recover_data(c, frag_data, res.valid_mask, lost, data);
		info->rebuilt_mask = lost;
	}
	rc = verify_data_fragments(c, s, data, &res.md);
	if (rc != 0) {
		info->payload_corrupt = true;
		return rc;
	}

	for (i = 0; i < c->n; i++) {
		if (!(target_mask & (1u << i))) {
			continue;
		}
		out = out_data[i];
		if (i < c->k) {
			if (data[i] != out) {
				memcpy(out, data[i], c->frag_size);
			}
		} else {
			ec_encode((int)c->frag_size, (int)c->k, 1,
				  c->enc_tbls + (size_t)EC_TBL_BYTES * c->k * (i - c->k), data,
				  &out);
		}
		write_md(c, &res.md, i, gga_crc32c(out, c->frag_size, 0), lba, out_md[i]);
	}
	return 0;
}

const char *
gga_frag_status_name(enum gga_frag_status status)
{
	switch (status) {
	case GGA_FRAG_ABSENT:
		return "absent";
	case GGA_FRAG_VALID:
		return "valid";
	case GGA_FRAG_STALE:
		return "stale";
	case GGA_FRAG_ORPHAN:
		return "orphan";
	case GGA_FRAG_UNRESOLVED:
		return "unresolved";
	case GGA_FRAG_BAD_MAGIC:
		return "bad magic";
	case GGA_FRAG_BAD_VERSION:
		return "bad version";
	case GGA_FRAG_BAD_MD_CRC:
		return "bad metadata crc";
	case GGA_FRAG_BAD_ROLE:
		return "wrong role";
	case GGA_FRAG_BAD_GEOMETRY:
		return "wrong geometry";
	case GGA_FRAG_BAD_FIELD:
		return "bad field";
	case GGA_FRAG_BAD_DATA_CRC:
		return "bad data crc";
	case GGA_FRAG_BAD_BLANK:
		return "blank metadata with data";
	case GGA_FRAG_CONFLICT:
		return "conflicting write";
	}
	return "unknown";
}

/* ---------------------------------------------------------------------- */
/* The packed layout's fragments                                           */
/* ---------------------------------------------------------------------- */

int
gga_codec_pack(const struct gga_codec *c, struct gga_codec_scratch *s, const void *block,
	       uint32_t flags, void *const frag[], struct gga_pack_info *info)
{
	uint8_t *frags[GGA_MAX_FRAGS];
	const uint8_t *payload;
	uint32_t i, len, h;
	int clen = 0;

	if (c == NULL || s == NULL || block == NULL || frag == NULL || info == NULL ||
	    s->block_size != c->block_size) {
		return -EINVAL;
	}
	for (i = 0; i < c->n; i++) {
		if (frag[i] == NULL) {
			return -EINVAL;
		}
		frags[i] = frag[i];
	}
	memset(info, 0, sizeof(*info));
	info->block_crc = gga_crc32c(block, c->block_size, 0);
	if (mem_is_zero(block, c->block_size)) {
		info->encoding = GGA_ENC_ZERO;
		return 0;
	}
	if (!(flags & GGA_ENCODE_NO_LZ4)) {
		clen = LZ4_compress_fast_extState(s->lz4_state, block, (char *)s->cbuf,
						  (int)c->block_size, s->cbuf_len,
						  LZ4_ACCELERATION);
	}
	if (clen > 0 && (uint32_t)clen < c->block_size) {
		info->encoding = GGA_ENC_LZ4;
		payload = s->cbuf;
		len = (uint32_t)clen;
	} else {
		info->encoding = GGA_ENC_RAW;
		payload = block;
		len = c->block_size;
	}
	h = (len + c->k - 1) / c->k;
	for (i = 0; i < c->k; i++) {
		uint32_t off = i * h;
		uint32_t n = len > off ? GGA_MIN(h, len - off) : 0;

		memcpy(frags[i], payload + off, n);
		memset(frags[i] + n, 0, h - n);
	}
	ec_encode((int)h, (int)c->k, (int)c->m, c->enc_tbls, frags, &frags[c->k]);
	info->payload_len = len;
	info->frag_len = h;
	return 0;
}

int
gga_codec_unpack(const struct gga_codec *c, struct gga_codec_scratch *s, const void *const frag[],
		 uint32_t present, const struct gga_pack_info *info, void *block_out,
		 uint32_t *used_mask)
{
	uint8_t *src[GGA_MAX_FRAGS], *dst[GGA_MAX_FRAGS];
	uint32_t lost, pmask = 0, used, i, r = 0, n = 0, h, len;
	uint8_t *pay;
	int dlen;

	if (used_mask != NULL) {
		*used_mask = 0;
	}
	if (c == NULL || s == NULL || frag == NULL || info == NULL || block_out == NULL ||
	    s->block_size != c->block_size || (present & ~c->all_mask) != 0) {
		return -EINVAL;
	}
	for (i = 0; i < c->n; i++) {
		if ((present & (1u << i)) && frag[i] == NULL) {
			return -EINVAL;
		}
	}
	len = info->payload_len;
	h = info->frag_len;
	switch (info->encoding) {
	case GGA_ENC_ZERO:
		if (len != 0 || h != 0) {
			return -EINVAL;
		}
		memset(block_out, 0, c->block_size);
		return info->block_crc == c->zero_block_crc ? 0 : -EIO;
	case GGA_ENC_RAW:
		if (len != c->block_size) {
			return -EINVAL;
		}
		break;
	case GGA_ENC_LZ4:
		if (len == 0 || len >= c->block_size) {
			return -EINVAL;
		}
		break;
	default:
		return -EINVAL;
	}
	if (h != (len + c->k - 1) / c->k) {
		return -EINVAL;
	}
	if (popcount32(present) < c->k) {
		return -EIO;
	}
	/* The payload is assembled in dbuf (block_size bytes: k * h can exceed c by < k). */
	pay = info->encoding == GGA_ENC_RAW ? block_out : s->dbuf;
	lost = c->data_mask & ~present;
	for (i = c->k; i < c->n && popcount32(pmask) < popcount32(lost); i++) {
		if (present & (1u << i)) {
			pmask |= 1u << i;
		}
	}
	used = (c->data_mask & present) | pmask;
	for (i = 0; i < c->k; i++) {
		uint32_t off = i * h;
		uint32_t cnt = len > off ? GGA_MIN(h, len - off) : 0;

		if (present & (1u << i)) {
			memcpy(pay + off, frag[i], cnt);
		}
	}
	if (lost != 0) {
		uint8_t *tmp = s->bbuf;

		for (i = 0; i < c->n; i++) {
			if (used & (1u << i)) {
				src[n++] = (uint8_t *)(uintptr_t)frag[i];
			}
		}
		/* Rebuilt fragments go to bbuf (k * h may pass the block's end), then into place. */
		for (i = 0; i < c->k; i++) {
			if (lost & (1u << i)) {
				dst[r] = tmp + (size_t)r * h;
				r++;
			}
		}
		ec_encode((int)h, (int)c->k, (int)r,
			  (uint8_t *)(uintptr_t)c->rec_tbls + c->rec_index[lost | pmask], src, dst);
		r = 0;
		for (i = 0; i < c->k; i++) {
			if (lost & (1u << i)) {
				uint32_t off = i * h;
				uint32_t cnt = len > off ? GGA_MIN(h, len - off) : 0;

				memcpy(pay + off, dst[r], cnt);
				r++;
			}
		}
	}
	if (used_mask != NULL) {
		*used_mask = used;
	}
	if (info->encoding == GGA_ENC_LZ4) {
		dlen = LZ4_decompress_safe((const char *)pay, (char *)block_out, (int)len,
					   (int)c->block_size);
		if (dlen != (int)c->block_size) {
			return -EIO;
		}
	}
	return gga_crc32c(block_out, c->block_size, 0) == info->block_crc ? 0 : -EIO;
}
