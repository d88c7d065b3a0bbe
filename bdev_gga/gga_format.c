/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Encode, decode and validate the on-target structures of gga_format.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "gga/util.h"
#include "gga/uuid.h"
#include "gga_format.h"

#if defined(__x86_64__)
#include <nmmintrin.h>

/* The CRC32 instruction (SSE4.2) is CRC-32C without the inversions. */
static __attribute__((target("sse4.2"))) uint32_t
md_crc_sse42(const uint8_t *md, uint64_t lba)
{
	uint64_t w[3], crc = 0xffffffffu;
	uint32_t tail;

	/* x86 is little-endian: each word's value is its bytes in order. */
	memcpy(w, md, sizeof(w));
	memcpy(&tail, md + sizeof(w), sizeof(tail));
	crc = _mm_crc32_u64(crc, lba);
	crc = _mm_crc32_u64(crc, w[0]);
	crc = _mm_crc32_u64(crc, w[1]);
	crc = _mm_crc32_u64(crc, w[2]);
	return ~_mm_crc32_u32((uint32_t)crc, tail);
}
#endif

uint32_t
gga_frag_md_crc(const void *md_bytes, uint64_t lba)
{
	uint8_t msg[sizeof(uint64_t) + GGA_FRAG_MD_CRC_LEN];
	uint64_t lba_le = htole64(lba);

	static_assert(GGA_FRAG_MD_CRC_LEN == 3 * sizeof(uint64_t) + sizeof(uint32_t),
		      "md_crc covers 28 bytes");
#if defined(__x86_64__)
	if (likely(__builtin_cpu_supports("sse4.2"))) {
		return md_crc_sse42(md_bytes, lba);
	}
#endif
	/* One pass over a copy: a CRC call costs more than 36 bytes of it. */
	memcpy(msg, &lba_le, sizeof(lba_le));
	memcpy(msg + sizeof(lba_le), md_bytes, GGA_FRAG_MD_CRC_LEN);
	return gga_crc32c(msg, sizeof(msg), 0);
}

int
gga_frag_md_decode(const void *buf, uint64_t lba, struct gga_frag_md *md)
{
	struct gga_frag_md_disk d;

	if (gga_frag_md_is_blank(buf)) {
		return -ENODATA;
	}
	memcpy(&d, buf, sizeof(d));
	if (le32toh(d.magic) != GGA_FRAG_MD_MAGIC) {
		return -EILSEQ;
	}
	/*
	 * The version comes before the crc because a later version is free to
	 * lay out (and checksum) the rest of the record differently.
	 */
	if (d.version != GGA_FORMAT_VERSION) {
		return -EPROTONOSUPPORT;
	}
	if (le32toh(d.md_crc) != gga_frag_md_crc(&d, lba)) {
		return -EBADMSG;
	}
	md->version = d.version;
	md->role = d.role;
	md->encoding = d.encoding;
	md->k = d.geometry >> 4;
	md->m = d.geometry & 0xf;
	md->payload_len = le32toh(d.payload_len);
	md->data_crc = le32toh(d.data_crc);
	md->generation = le64toh(d.generation);
	md->block_crc = le32toh(d.block_crc);
	return 0;
}

int
gga_geometry_check(uint32_t block_size, uint32_t k, uint32_t m, uint32_t md_size)
{
	if (block_size < 512 || block_size > 65536 || !is_pow2(block_size)) {
		return -EINVAL;
	}
	if (k < 1 || m < 1 || k + m > GGA_MAX_FRAGS || block_size % k != 0) {
		return -EINVAL;
	}
	if (md_size < GGA_FRAG_MD_SIZE) {
		return -EINVAL;
	}
	return 0;
}

static bool
matrix_valid(uint32_t matrix)
{
	return matrix == GGA_MATRIX_VANDERMONDE || matrix == GGA_MATRIX_CAUCHY;
}

/* The version-2 fields: member states, recovery, bitmap geometry. */
static bool
sb_state_consistent(const struct gga_sb *sb)
{
	uint32_t n = sb->k + sb->m, i;

	if (sb->region_shift < GGA_REGION_SHIFT_MIN || sb->region_shift > GGA_REGION_SHIFT_MAX ||
	    (1ull << sb->region_shift) < sb->block_size ||
	    gga_bitmap_regions(sb->data_blocks, sb->block_size, sb->region_shift) >
		    (uint64_t)gga_bitmap_bytes(sb->fragment_size) * 8) {
		return false;
	}
	for (i = 0; i < GGA_MAX_FRAGS; i++) {
		if (gga_sb_member_need(sb->member_state[i]) > GGA_SB_MEMBER_REBUILD ||
		    sb->member_state[i] == GGA_SB_MEMBER_FAULTED ||
		    (i >= n && sb->member_state[i] != GGA_SB_MEMBER_IN_SYNC)) {
			return false;
		}
	}
	if ((sb->recovery_mask >> n) != 0 || sb->recovery_offset > sb->data_blocks ||
	    sb->bitmap_events > sb->events) {
		return false;
	}
	return true;
}

/* Everything a decoded or about-to-be-encoded superblock must satisfy. */
static bool
sb_consistent(const struct gga_sb *sb)
{
	if (gga_geometry_check(sb->block_size, sb->k, sb->m, sb->md_size) != 0) {
		return false;
	}
	if (sb->fragment_size != sb->block_size / sb->k || sb->member_index >= sb->k + sb->m) {
		return false;
	}
	if (!matrix_valid(sb->matrix)) {
		return false;
	}
	if (sb->data_offset != gga_sb_data_offset(sb->fragment_size) ||
	    sb->member_blocks <= sb->data_offset ||
	    sb->data_blocks != sb->member_blocks - sb->data_offset) {
		return false;
	}
	if (sb->version == GGA_SB_VERSION_1) {
		return sb->layout == GGA_LAYOUT_FIXED && sb->seg_shift == 0;
	}
	if (sb->version == GGA_SB_VERSION_PACKED) {
		if (sb->layout != GGA_LAYOUT_PACKED || sb->seg_shift < GGA_SEG_SHIFT_MIN ||
		    sb->seg_shift > GGA_SEG_SHIFT_MAX || gga_sb_segments(sb) == 0) {
			return false;
		}
	} else if (sb->layout != GGA_LAYOUT_FIXED || sb->seg_shift != 0) {
		return false;
	}
	return sb_state_consistent(sb);
}

int
gga_sb_init(struct gga_sb *sb, const uint8_t array_uuid[16], uint32_t member_index, uint32_t k,
	    uint32_t m, enum gga_matrix matrix, uint32_t block_size, uint32_t md_size,
	    uint64_t member_blocks)
{
	if (sb == NULL || array_uuid == NULL ||
	    gga_geometry_check(block_size, k, m, md_size) != 0 || member_index >= k + m ||
	    !matrix_valid(matrix)) {
		return -EINVAL;
	}
	memset(sb, 0, sizeof(*sb));
	sb->version = GGA_SB_VERSION_CURRENT;
	memcpy(sb->array_uuid, array_uuid, sizeof(sb->array_uuid));
	sb->member_index = member_index;
	sb->k = k;
	sb->m = m;
	sb->matrix = matrix;
	sb->block_size = block_size;
	sb->fragment_size = block_size / k;
	sb->md_size = md_size;
	sb->member_blocks = member_blocks;
	sb->data_offset = gga_sb_data_offset(sb->fragment_size);
	if (member_blocks <= sb->data_offset) {
		return -ENOSPC;
	}
	sb->data_blocks = member_blocks - sb->data_offset;
	sb->region_shift = GGA_REGION_SHIFT_DEFAULT;
	while (gga_bitmap_regions(sb->data_blocks, block_size, sb->region_shift) >
	       (uint64_t)gga_bitmap_bytes(sb->fragment_size) * 8) {
		sb->region_shift++;
	}
	return 0;
}

int
gga_sb_set_packed(struct gga_sb *sb, uint32_t seg_shift)
{
	if (sb == NULL || sb->version != GGA_SB_VERSION_CURRENT || sb->layout != GGA_LAYOUT_FIXED ||
	    seg_shift < GGA_SEG_SHIFT_MIN || seg_shift > GGA_SEG_SHIFT_MAX) {
		return -EINVAL;
	}
	if (((sb->data_blocks * sb->fragment_size) >> seg_shift) == 0) {
		return -ENOSPC;
	}
	sb->version = GGA_SB_VERSION_PACKED;
	sb->layout = GGA_LAYOUT_PACKED;
	sb->seg_shift = seg_shift;
	return 0;
}

int
gga_sb_encode(const struct gga_sb *sb, void *buf)
{
	struct gga_sb_disk d;

	if (sb == NULL || buf == NULL ||
	    (sb->version != GGA_SB_VERSION_CURRENT && sb->version != GGA_SB_VERSION_PACKED) ||
	    !sb_consistent(sb)) {
		return -EINVAL;
	}
	memset(&d, 0, sizeof(d));
	memcpy(d.magic, GGA_SB_MAGIC, GGA_SB_MAGIC_LEN);
	d.version = htole32(sb->version);
	d.sb_size = htole32(GGA_SB_SIZE);
	memcpy(d.array_uuid, sb->array_uuid, sizeof(d.array_uuid));
	d.member_index = (uint8_t)sb->member_index;
	d.k = (uint8_t)sb->k;
	d.m = (uint8_t)sb->m;
	d.matrix = (uint8_t)sb->matrix;
	d.block_size = htole32(sb->block_size);
	d.fragment_size = htole32(sb->fragment_size);
	d.md_size = htole32(sb->md_size);
	d.member_blocks = htole64(sb->member_blocks);
	d.data_offset = htole64(sb->data_offset);
	d.data_blocks = htole64(sb->data_blocks);
	d.generation_epoch = htole64(sb->generation_epoch);
	d.events = htole64(sb->events);
	d.recovery_offset = htole64(sb->recovery_offset);
	memcpy(d.member_state, sb->member_state, sizeof(d.member_state));
	d.recovery_mask = htole16((uint16_t)sb->recovery_mask);
	d.region_shift = (uint8_t)sb->region_shift;
	d.bitmap_events = htole64(sb->bitmap_events);
	if (sb->layout == GGA_LAYOUT_PACKED) {
		d.layout = (uint8_t)(GGA_LAYOUT_PACKED | (sb->seg_shift - GGA_SEG_SHIFT_MIN) << 4);
	}
	d.crc = htole32(gga_crc32c(&d, GGA_SB_CRC_LEN, 0));
	memcpy(buf, &d, sizeof(d));
	return 0;
}

static bool
bytes_zero(const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (p[i] != 0) {
			return false;
		}
	}
	return true;
}

int
gga_sb_decode(const void *buf, size_t len, struct gga_sb *sb)
{
	struct gga_sb_disk d;

	if (buf == NULL || sb == NULL || len < GGA_SB_SIZE) {
		return -EINVAL;
	}
	if (bytes_zero(buf, GGA_SB_SIZE)) {
		return -ENOENT;
	}
	memcpy(&d, buf, sizeof(d));
	if (memcmp(d.magic, GGA_SB_MAGIC, GGA_SB_MAGIC_LEN) != 0) {
		return -EMEDIUMTYPE;
	}
	/* As for fragment metadata, a later version may place its crc elsewhere. */
	if (le32toh(d.version) != GGA_SB_VERSION_CURRENT &&
	    le32toh(d.version) != GGA_SB_VERSION_PACKED && le32toh(d.version) != GGA_SB_VERSION_1) {
		return -EPROTONOSUPPORT;
	}
	if (le32toh(d.crc) != gga_crc32c(&d, GGA_SB_CRC_LEN, 0)) {
		return -EBADMSG;
	}
	if (le32toh(d.sb_size) != GGA_SB_SIZE) {
		return -EUCLEAN;
	}
	memset(sb, 0, sizeof(*sb));
	sb->version = le32toh(d.version);
	memcpy(sb->array_uuid, d.array_uuid, sizeof(sb->array_uuid));
	sb->member_index = d.member_index;
	sb->k = d.k;
	sb->m = d.m;
	sb->matrix = (enum gga_matrix)d.matrix;
	sb->block_size = le32toh(d.block_size);
	sb->fragment_size = le32toh(d.fragment_size);
	sb->md_size = le32toh(d.md_size);
	sb->member_blocks = le64toh(d.member_blocks);
	sb->data_offset = le64toh(d.data_offset);
	sb->data_blocks = le64toh(d.data_blocks);
	sb->generation_epoch = le64toh(d.generation_epoch);
	if (sb->version == GGA_SB_VERSION_PACKED) {
		/* Only a packed layout byte is valid here (a fixed array keeps version 2). */
		if ((d.layout & 0xf) != GGA_LAYOUT_PACKED) {
			return -EUCLEAN;
		}
		sb->layout = GGA_LAYOUT_PACKED;
		sb->seg_shift = GGA_SEG_SHIFT_MIN + (d.layout >> 4);
	}
	if (sb->version != GGA_SB_VERSION_1) {
		sb->events = le64toh(d.events);
		sb->recovery_offset = le64toh(d.recovery_offset);
		memcpy(sb->member_state, d.member_state, sizeof(sb->member_state));
		sb->recovery_mask = le16toh(d.recovery_mask);
		sb->region_shift = d.region_shift;
		sb->bitmap_events = le64toh(d.bitmap_events);
	}
	if (!sb_consistent(sb)) {
		return -EUCLEAN;
	}
	return 0;
}

/* Compare one numeric field; on a difference, describe it and report true. */
static bool
field_differs(const char *name, uint64_t have, uint64_t want, char *why, size_t why_len)
{
	if (have == want) {
		return false;
	}
	if (why != NULL && why_len > 0) {
		snprintf(why, why_len, "%s is %" PRIu64 ", expected %" PRIu64, name, have, want);
	}
	return true;
}

enum gga_sb_mismatch
gga_sb_compare(const struct gga_sb *sb, const struct gga_sb *want, char *why, size_t why_len)
{
	char have_uuid[UUID_STR_LEN], want_uuid[UUID_STR_LEN];

	if (why != NULL && why_len > 0) {
		why[0] = '\0';
	}
	if (memcmp(sb->array_uuid, want->array_uuid, sizeof(sb->array_uuid)) != 0) {
		if (why != NULL && why_len > 0) {
			uuid_format(sb->array_uuid, have_uuid);
			uuid_format(want->array_uuid, want_uuid);
			snprintf(why, why_len, "member of array %s, expected array %s", have_uuid,
				 want_uuid);
		}
		return GGA_SB_OTHER_ARRAY;
	}
	if (field_differs("member index", sb->member_index, want->member_index, why, why_len)) {
		return GGA_SB_WRONG_ROLE;
	}
	if (field_differs("k", sb->k, want->k, why, why_len) ||
	    field_differs("m", sb->m, want->m, why, why_len) ||
	    field_differs("matrix", sb->matrix, want->matrix, why, why_len) ||
	    field_differs("block size", sb->block_size, want->block_size, why, why_len) ||
	    field_differs("fragment size", sb->fragment_size, want->fragment_size, why, why_len) ||
	    field_differs("md size", sb->md_size, want->md_size, why, why_len) ||
	    field_differs("data offset", sb->data_offset, want->data_offset, why, why_len) ||
	    field_differs("layout", sb->layout, want->layout, why, why_len) ||
	    field_differs("segment shift", sb->seg_shift, want->seg_shift, why, why_len)) {
		return GGA_SB_GEOMETRY;
	}
	if (field_differs("member blocks", sb->member_blocks, want->member_blocks, why, why_len) ||
	    field_differs("data blocks", sb->data_blocks, want->data_blocks, why, why_len)) {
		return GGA_SB_SIZE_CHANGED;
	}
	return GGA_SB_MATCH;
}

const char *
gga_sb_mismatch_name(enum gga_sb_mismatch mismatch)
{
	switch (mismatch) {
	case GGA_SB_MATCH:
		return "match";
	case GGA_SB_OTHER_ARRAY:
		return "member of another array";
	case GGA_SB_WRONG_ROLE:
		return "wrong role";
	case GGA_SB_GEOMETRY:
		return "geometry mismatch";
	case GGA_SB_SIZE_CHANGED:
		return "size changed";
	}
	return "unknown";
}

const char *
gga_matrix_name(enum gga_matrix matrix)
{
	switch (matrix) {
	case GGA_MATRIX_VANDERMONDE:
		return "vandermonde";
	case GGA_MATRIX_CAUCHY:
		return "cauchy";
	}
	return NULL;
}

int
gga_matrix_parse(const char *name, enum gga_matrix *matrix)
{
	if (name == NULL || matrix == NULL) {
		return -EINVAL;
	}
	if (strcmp(name, "vandermonde") == 0) {
		*matrix = GGA_MATRIX_VANDERMONDE;
	} else if (strcmp(name, "cauchy") == 0) {
		*matrix = GGA_MATRIX_CAUCHY;
	} else {
		return -EINVAL;
	}
	return 0;
}

const char *
gga_encoding_name(enum gga_encoding encoding)
{
	switch (encoding) {
	case GGA_ENC_UNWRITTEN:
		return "unwritten";
	case GGA_ENC_RAW:
		return "raw";
	case GGA_ENC_LZ4:
		return "lz4";
	case GGA_ENC_ZERO:
		return "zero";
	}
	return "invalid";
}

const char *
gga_layout_name(enum gga_layout layout)
{
	switch (layout) {
	case GGA_LAYOUT_FIXED:
		return "fixed";
	case GGA_LAYOUT_PACKED:
		return "packed";
	}
	return NULL;
}

int
gga_layout_parse(const char *name, enum gga_layout *layout)
{
	if (name == NULL || layout == NULL) {
		return -EINVAL;
	}
	if (strcmp(name, "fixed") == 0) {
		*layout = GGA_LAYOUT_FIXED;
	} else if (strcmp(name, "packed") == 0) {
		*layout = GGA_LAYOUT_PACKED;
	} else {
		return -EINVAL;
	}
	return 0;
}
