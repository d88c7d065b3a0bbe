/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * On-target structures of the gga bdev: the per-fragment metadata that
 * travels with every member block, and the member superblock. Both are
 * packed little-endian layouts; docs/FORMAT.md is their normative
 * description and this header must agree with it byte for byte.
 *
 * The disk structs (suffix _disk) are never accessed in place: encode and
 * decode helpers copy them in and out of the caller's buffer, so the buffer
 * needs no alignment and the host structs stay free of byte order.
 */
#ifndef GGA_FORMAT_H
#define GGA_FORMAT_H

#include <assert.h>
#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gga/util.h"

/* Version of the fragment metadata (and of the format as a whole). */
#define GGA_FORMAT_VERSION     1
/*
 * Version of the superblock record. Version 2 adds the array's event counter,
 * the members' states, the recovery checkpoint and the write-intent bitmap;
 * version-1 records are still read (and upgraded in place when assembled).
 */
#define GGA_SB_VERSION_CURRENT 2
#define GGA_SB_VERSION_1       1
/*
 * A member of a packed array (docs/FORMAT.md §11): version 2's record with
 * the layout byte set. The version differs so that a reader that predates the
 * packed layout refuses the member rather than read its log as fixed blocks.
 */
#define GGA_SB_VERSION_PACKED  3

/* The largest k + m any version-1 reader must handle. */
#define GGA_MAX_FRAGS 16

/* The format's checksum: CRC-32C as crc32c() of gga/util.h computes it. */
static inline uint32_t
gga_crc32c(const void *buf, size_t len, uint32_t crc)
{
	return crc32c(buf, len, crc);
}

/* Parity generator matrix; the values are stored in the superblock. */
enum gga_matrix {
	GGA_MATRIX_VANDERMONDE = 1, /* ISA-L gf_gen_rs_matrix() */
	GGA_MATRIX_CAUCHY = 2,      /* ISA-L gf_gen_cauchy1_matrix() */
};

/*
 * How a logical block is stored. RAW, LZ4 and ZERO are the on-target values
 * of the metadata's encoding byte; UNWRITTEN (0) never appears on target: it
 * names a fragment whose metadata is all zero (a block never written).
 */
enum gga_encoding {
	GGA_ENC_UNWRITTEN = 0,
	GGA_ENC_RAW = 1,
	GGA_ENC_LZ4 = 2,
	GGA_ENC_ZERO = 3,
};

/* ---------------------------------------------------------------------- */
/* Per-fragment metadata                                                   */
/* ---------------------------------------------------------------------- */

/* Bytes of metadata the format uses; a member's md_size must be at least this. */
#define GGA_FRAG_MD_SIZE    32
/* "GGAF" in byte order, read as a little-endian 32-bit number. */
#define GGA_FRAG_MD_MAGIC   0x46414747u
/* Bytes covered by md_crc (everything before it); the LBA is prepended. */
#define GGA_FRAG_MD_CRC_LEN 28

struct __attribute__((packed)) gga_frag_md_disk {
	uint32_t magic;       /* GGA_FRAG_MD_MAGIC */
	uint8_t version;      /* GGA_FORMAT_VERSION */
	uint8_t role;         /* fragment index: 0..k-1 data, k..k+m-1 parity */
	uint8_t encoding;     /* enum gga_encoding, never 0 */
	uint8_t geometry;     /* k << 4 | m */
	uint32_t payload_len; /* bytes of payload in the data fragments */
	uint32_t data_crc;    /* CRC-32C of this fragment's data bytes */
	uint64_t generation;  /* write generation, >= 1 */
	uint32_t block_crc;   /* CRC-32C of the logical block (decoded) */
	uint32_t md_crc;      /* CRC-32C of LE64(lba) || bytes 0..27 */
};

static_assert(sizeof(struct gga_frag_md_disk) == GGA_FRAG_MD_SIZE, "fragment md size");
static_assert(offsetof(struct gga_frag_md_disk, magic) == 0, "md magic");
static_assert(offsetof(struct gga_frag_md_disk, version) == 4, "md version");
static_assert(offsetof(struct gga_frag_md_disk, role) == 5, "md role");
static_assert(offsetof(struct gga_frag_md_disk, encoding) == 6, "md encoding");
static_assert(offsetof(struct gga_frag_md_disk, geometry) == 7, "md geometry");
static_assert(offsetof(struct gga_frag_md_disk, payload_len) == 8, "md payload_len");
static_assert(offsetof(struct gga_frag_md_disk, data_crc) == 12, "md data_crc");
static_assert(offsetof(struct gga_frag_md_disk, generation) == 16, "md generation");
static_assert(offsetof(struct gga_frag_md_disk, block_crc) == 24, "md block_crc");
static_assert(offsetof(struct gga_frag_md_disk, md_crc) == GGA_FRAG_MD_CRC_LEN, "md md_crc");

/* Fragment metadata in host form. */
struct gga_frag_md {
	uint8_t version;
	uint8_t role;
	uint8_t encoding; /* enum gga_encoding */
	uint8_t k;
	uint8_t m;
	uint32_t payload_len;
	uint32_t data_crc;
	uint64_t generation;
	uint32_t block_crc;
};

/*
 * The md_crc of fragment metadata for logical block `lba`: the CRC-32C of
 * the LBA as 8 little-endian bytes followed by the first 28 metadata bytes.
 * Seeding with the LBA makes a block written to the wrong address fail its
 * check without spending a byte of metadata on the address. (Computed with
 * the CPU's CRC-32C instruction where there is one: every fragment read and
 * written takes one, and a library call costs more than its 36 bytes.)
 */
uint32_t gga_frag_md_crc(const void *md_bytes, uint64_t lba);

/* Write the GGA_FRAG_MD_SIZE bytes of `md` for block `lba` to buf (any alignment). */
static inline void
gga_frag_md_encode(const struct gga_frag_md *md, uint64_t lba, void *buf)
{
	struct gga_frag_md_disk d;

	d.magic = htole32(GGA_FRAG_MD_MAGIC);
	d.version = md->version;
	d.role = md->role;
	d.encoding = md->encoding;
	d.geometry = (uint8_t)(md->k << 4 | (md->m & 0xf));
	d.payload_len = htole32(md->payload_len);
	d.data_crc = htole32(md->data_crc);
	d.generation = htole64(md->generation);
	d.block_crc = htole32(md->block_crc);
	d.md_crc = htole32(gga_frag_md_crc(&d, lba));
	memcpy(buf, &d, sizeof(d));
}

/* True when the first GGA_FRAG_MD_SIZE bytes at buf are all zero (never written). */
static inline bool
gga_frag_md_is_blank(const void *buf)
{
	uint64_t w[GGA_FRAG_MD_SIZE / 8];

	memcpy(w, buf, sizeof(w));
	return (w[0] | w[1] | w[2] | w[3]) == 0;
}

/*
 * True when the first GGA_FRAG_MD_SIZE bytes at buf are all 0xff: a fragment
 * poisoned on purpose (see docs/FORMAT.md), never valid metadata.
 */
static inline bool
gga_frag_md_is_poison(const void *buf)
{
	uint64_t w[GGA_FRAG_MD_SIZE / 8];

	memcpy(w, buf, sizeof(w));
	return (w[0] & w[1] & w[2] & w[3]) == UINT64_MAX;
}

/*
 * Decode the metadata at buf (any alignment) of a fragment read for block
 * `lba`. Checks only what needs no geometry: magic, md_crc, version. The
 * codec checks the rest (role, geometry, encoding, lengths, data crc).
 * Returns 0, or:
 *   -ENODATA          all GGA_FRAG_MD_SIZE bytes are zero (never written)
 *   -EILSEQ           wrong magic: not gga fragment metadata
 *   -EBADMSG          md_crc mismatch: damaged, or written for another LBA
 *   -EPROTONOSUPPORT  a version this reader does not know
 */
int gga_frag_md_decode(const void *buf, uint64_t lba, struct gga_frag_md *md);

/* ---------------------------------------------------------------------- */
/* Member superblock                                                       */
/* ---------------------------------------------------------------------- */

#define GGA_SB_MAGIC        "GGASUPER"
#define GGA_SB_MAGIC_LEN    8
/* Bytes of the superblock record. */
#define GGA_SB_SIZE         128
/* Bytes covered by the superblock crc (everything before it). */
#define GGA_SB_CRC_LEN      124
/*
 * Data bytes reserved at the start of every member: the superblock record
 * lives at its start, the rest is zero and held for later versions. Logical
 * block 0 is stored at member block GGA_SB_REGION_BYTES / fragment_size.
 */
#define GGA_SB_REGION_BYTES 65536u

struct __attribute__((packed)) gga_sb_disk {
	char magic[GGA_SB_MAGIC_LEN]; /* "GGASUPER", no terminator */
	uint32_t version;             /* GGA_FORMAT_VERSION */
	uint32_t sb_size;             /* GGA_SB_SIZE */
	uint8_t array_uuid[16];
	uint8_t member_index; /* role: fragment index of this member */
	uint8_t k;
	uint8_t m;
	uint8_t matrix;            /* enum gga_matrix */
	uint32_t block_size;       /* logical block size B */
	uint32_t fragment_size;    /* B / k: the member's block size */
	uint32_t md_size;          /* the member's metadata bytes per block */
	uint64_t member_blocks;    /* blocks of the member bdev */
	uint64_t data_offset;      /* first member block holding logical block 0 */
	uint64_t data_blocks;      /* logical blocks: member_blocks - data_offset */
	uint64_t generation_epoch; /* generation bound, see docs/FORMAT.md */
	/* Version 2 (zero in version 1): */
	uint64_t events;                     /* array event counter */
	uint64_t recovery_offset;            /* recovery done below this logical block */
	uint8_t member_state[GGA_MAX_FRAGS]; /* enum gga_sb_member_state per member */
	uint16_t recovery_mask;              /* members being recovered */
	uint8_t region_shift;                /* log2 of a bitmap region's logical bytes */
	uint64_t bitmap_events;              /* events when bitmap marks were last cleared */
	/* Version 3: GGA_LAYOUT_PACKED | (seg_shift - 16) << 4; zero (reserved) before. */
	uint8_t layout;
	uint32_t crc; /* CRC-32C of bytes 0..123 */
};

static_assert(sizeof(struct gga_sb_disk) == GGA_SB_SIZE, "superblock size");
static_assert(offsetof(struct gga_sb_disk, version) == 8, "sb version");
static_assert(offsetof(struct gga_sb_disk, sb_size) == 12, "sb sb_size");
static_assert(offsetof(struct gga_sb_disk, array_uuid) == 16, "sb array_uuid");
static_assert(offsetof(struct gga_sb_disk, member_index) == 32, "sb member_index");
static_assert(offsetof(struct gga_sb_disk, k) == 33, "sb k");
static_assert(offsetof(struct gga_sb_disk, m) == 34, "sb m");
static_assert(offsetof(struct gga_sb_disk, matrix) == 35, "sb matrix");
static_assert(offsetof(struct gga_sb_disk, block_size) == 36, "sb block_size");
static_assert(offsetof(struct gga_sb_disk, fragment_size) == 40, "sb fragment_size");
static_assert(offsetof(struct gga_sb_disk, md_size) == 44, "sb md_size");
static_assert(offsetof(struct gga_sb_disk, member_blocks) == 48, "sb member_blocks");
static_assert(offsetof(struct gga_sb_disk, data_offset) == 56, "sb data_offset");
static_assert(offsetof(struct gga_sb_disk, data_blocks) == 64, "sb data_blocks");
static_assert(offsetof(struct gga_sb_disk, generation_epoch) == 72, "sb generation_epoch");
static_assert(offsetof(struct gga_sb_disk, events) == 80, "sb events");
static_assert(offsetof(struct gga_sb_disk, recovery_offset) == 88, "sb recovery_offset");
static_assert(offsetof(struct gga_sb_disk, member_state) == 96, "sb member_state");
static_assert(offsetof(struct gga_sb_disk, recovery_mask) == 112, "sb recovery_mask");
static_assert(offsetof(struct gga_sb_disk, region_shift) == 114, "sb region_shift");
static_assert(offsetof(struct gga_sb_disk, bitmap_events) == 115, "sb bitmap_events");
static_assert(offsetof(struct gga_sb_disk, layout) == 123, "sb layout");
static_assert(offsetof(struct gga_sb_disk, crc) == GGA_SB_CRC_LEN, "sb crc");

/*
 * A member's state as the array's writers saw it (superblock version 2).
 * IN_SYNC members hold every acknowledged write; STALE ones missed writes
 * to the regions marked in the bitmap; REBUILD ones hold nothing usable
 * (blank or replaced) and must be rebuilt whole.
 */
enum gga_sb_member_state {
	GGA_SB_MEMBER_IN_SYNC = 0,
	GGA_SB_MEMBER_STALE = 1,
	GGA_SB_MEMBER_REBUILD = 2,
};

/*
 * Bit 7 of a member_state byte: the member was faulted for errors (never with
 * IN_SYNC) and is not taken back until an operator clears or replaces it.
 * The low bits keep what it needs (STALE or REBUILD).
 */
#define GGA_SB_MEMBER_FAULTED 0x80u

/* A member_state byte without the faulted bit. */
static inline uint8_t
gga_sb_member_need(uint8_t state)
{
	return (uint8_t)(state & ~GGA_SB_MEMBER_FAULTED);
}

/* Bitmap regions: 4 KiB .. 1 TiB of logical bytes each; 1 MiB by default. */
#define GGA_REGION_SHIFT_MIN     12
#define GGA_REGION_SHIFT_MAX     40
#define GGA_REGION_SHIFT_DEFAULT 20

/* How the members hold the logical blocks. */
enum gga_layout {
	GGA_LAYOUT_FIXED = 0,  /* block b at member block data_offset + b (docs/FORMAT.md) */
	GGA_LAYOUT_PACKED = 1, /* a log of records in segments (docs/FORMAT.md §11) */
};

/* Packed segments: 2^16 .. 2^31 bytes of each member; 4 MiB by default. */
#define GGA_SEG_SHIFT_MIN     16
#define GGA_SEG_SHIFT_MAX     31
#define GGA_SEG_SHIFT_DEFAULT 22

/* Superblock in host form. */
struct gga_sb {
	uint32_t version;
	uint8_t array_uuid[16];
	uint32_t member_index;
	uint32_t k;
	uint32_t m;
	enum gga_matrix matrix;
	uint32_t block_size;
	uint32_t fragment_size;
	uint32_t md_size;
	uint64_t member_blocks;
	uint64_t data_offset;
	uint64_t data_blocks;
	uint64_t generation_epoch;
	/* Version 2; a decoded version-1 record has events 0, every member in sync, no bitmap. */
	uint64_t events;
	uint64_t recovery_offset;
	uint8_t member_state[GGA_MAX_FRAGS];
	uint32_t recovery_mask;
	uint32_t region_shift; /* 0 in a version-1 record */
	/*
	 * The events of the update persisted before write-intent marks were
	 * last cleared (0: never, or written by a reader that predates it): a
	 * member whose own record is older may miss writes no mark remembers.
	 */
	uint64_t bitmap_events;
	/* Version 3 (GGA_LAYOUT_FIXED and 0 otherwise). */
	enum gga_layout layout;
	uint32_t seg_shift; /* packed: log2 of a segment's bytes on each member */
};

/*
 * Check a geometry the way gga_codec_create() does: block_size a power of two
 * in 512..65536 and divisible by k, k >= 1, m >= 1, k + m <= GGA_MAX_FRAGS,
 * md_size >= GGA_FRAG_MD_SIZE. Returns 0 or -EINVAL.
 */
int gga_geometry_check(uint32_t block_size, uint32_t k, uint32_t m, uint32_t md_size);

/* Member blocks reserved for the superblock region for a given fragment size. */
static inline uint64_t
gga_sb_data_offset(uint32_t fragment_size)
{
	return (GGA_SB_REGION_BYTES + fragment_size - 1) / fragment_size;
}

/*
 * The write-intent bitmap: the reserved region's data bytes from
 * gga_bitmap_offset() to GGA_SB_REGION_BYTES, bit r (byte r / 8, bit r % 8)
 * set while logical region r (region_shift bits of logical bytes) may hold
 * writes that some member lacks. It starts on a member block boundary.
 */
static inline uint32_t
gga_bitmap_offset(uint32_t fragment_size)
{
	return fragment_size > 4096 ? fragment_size : 4096;
}

static inline uint32_t
gga_bitmap_bytes(uint32_t fragment_size)
{
	return GGA_SB_REGION_BYTES - gga_bitmap_offset(fragment_size);
}

/* Regions of 2^shift logical bytes covering data_blocks blocks of block_size. */
static inline uint64_t
gga_bitmap_regions(uint64_t data_blocks, uint32_t block_size, uint32_t shift)
{
	uint64_t bytes = data_blocks * block_size;

	return (bytes + (1ull << shift) - 1) >> shift;
}

/*
 * Fill a superblock for member `member_index` of a new array, deriving
 * fragment_size, data_offset and data_blocks, with version GGA_SB_VERSION_CURRENT,
 * generation_epoch 0, events 0, every member in sync, the default region
 * size (or the smallest larger one whose bitmap fits the reserved region). Returns 0, -EINVAL (bad
 * geometry, matrix or member index) or -ENOSPC (member_blocks leaves no
 * block after the reserved region).
 */
int gga_sb_init(struct gga_sb *sb, const uint8_t array_uuid[16], uint32_t member_index, uint32_t k,
		uint32_t m, enum gga_matrix matrix, uint32_t block_size, uint32_t md_size,
		uint64_t member_blocks);

/*
 * Make sb (from gga_sb_init) a packed array's: version GGA_SB_VERSION_PACKED,
 * segments of 2^seg_shift bytes from data_offset on. Returns 0, -EINVAL
 * (seg_shift out of range) or -ENOSPC (not one whole segment fits).
 */
int gga_sb_set_packed(struct gga_sb *sb, uint32_t seg_shift);

/* Whole segments of a packed array's members (0 for a fixed array). */
static inline uint64_t
gga_sb_segments(const struct gga_sb *sb)
{
	if (sb->layout != GGA_LAYOUT_PACKED) {
		return 0;
	}
	return (sb->data_blocks * sb->fragment_size) >> sb->seg_shift;
}

/*
 * Write the GGA_SB_SIZE bytes of `sb` (reserved bytes zero, crc computed) to
 * buf. The caller writes buf at the start of the member's reserved region and
 * zeroes the rest of the region. Returns 0, or -EINVAL if `sb` is not
 * self-consistent (it would not decode).
 */
int gga_sb_encode(const struct gga_sb *sb, void *buf);

/*
 * Decode and validate the superblock at the start of buf (len >= GGA_SB_SIZE
 * bytes: the reserved region's first data bytes). Returns 0, or:
 *   -EINVAL           buf NULL or len < GGA_SB_SIZE
 *   -ENOENT           the record is all zero: a blank member
 *   -EMEDIUMTYPE      wrong magic: something other than a gga member
 *   -EPROTONOSUPPORT  a version (or record size) this reader does not know
 *   -EBADMSG          crc mismatch: the record is damaged
 *   -EUCLEAN          crc good but fields inconsistent (bad geometry, role
 *                     out of range, unknown matrix, wrong data_offset or
 *                     data_blocks; version 3: a layout byte that is not a
 *                     packed layout whose segments fit)
 */
int gga_sb_decode(const void *buf, size_t len, struct gga_sb *sb);

/* Result of comparing a member's superblock with the one expected of it. */
enum gga_sb_mismatch {
	GGA_SB_MATCH = 0,
	GGA_SB_OTHER_ARRAY,  /* array_uuid differs: a member of another array */
	GGA_SB_WRONG_ROLE,   /* member_index differs: members swapped */
	GGA_SB_GEOMETRY,     /* k, m, matrix, block, fragment or md size, data_offset, layout */
	GGA_SB_SIZE_CHANGED, /* member_blocks or data_blocks differ */
};

/*
 * Compare a decoded superblock `sb` with `want` (generation_epoch, the
 * version-2 state fields and the version itself are not compared: a
 * version-1 member is upgraded in place). Returns the first mismatch in the order of the enum, and when
 * why != NULL writes a sentence naming the field and both values to it.
 */
enum gga_sb_mismatch gga_sb_compare(const struct gga_sb *sb, const struct gga_sb *want, char *why,
				    size_t why_len);

const char *gga_sb_mismatch_name(enum gga_sb_mismatch mismatch);

/* "vandermonde" / "cauchy"; NULL for an unknown value. */
const char *gga_matrix_name(enum gga_matrix matrix);
/* Parse "vandermonde" or "cauchy". Returns 0 or -EINVAL. */
int gga_matrix_parse(const char *name, enum gga_matrix *matrix);
/* "fixed" / "packed"; NULL for an unknown value. */
const char *gga_layout_name(enum gga_layout layout);
/* Parse "fixed" or "packed". Returns 0 or -EINVAL. */
int gga_layout_parse(const char *name, enum gga_layout *layout);
/* "unwritten", "raw", "lz4", "zero"; "invalid" otherwise. */
const char *gga_encoding_name(enum gga_encoding encoding);

#endif /* GGA_FORMAT_H */
