/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The on-member format of the packed layout (docs/FORMAT.md §11, a draft not
 * yet used by the bdev): records, each a self-describing header followed by
 * one fragment of one logical block, grouped into write units (WUs) that are
 * written at once into a segment. Pure code: encode, decode, build, parse.
 *
 * As in gga_format.h, the disk structs (suffix _disk) are packed little-endian
 * and never used in place: encoders and decoders copy them in and out of the
 * caller's buffer, which needs no alignment.
 */
#ifndef GGA_PACKED_FORMAT_H
#define GGA_PACKED_FORMAT_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gga_format.h"

/* Version of the record and WU headers. */
#define GGA_PK_VERSION   1
/* Every record starts at, and is padded to, a multiple of this many bytes. */
#define GGA_PK_ALIGN     16u
/* Bytes of a segment on each member (segment s: the same offsets on every member). */
#define GGA_PK_SEG_BYTES (4u << 20)
/* Bytes of one WU on one member, at most. */
#define GGA_PK_WU_MAX    (128u << 10)
/* The largest fragment a record holds: a raw block of 65536 bytes with k = 1. */
#define GGA_PK_FRAG_MAX  65536u

/* ---------------------------------------------------------------------- */
/* Record header                                                           */
/* ---------------------------------------------------------------------- */

#define GGA_PK_REC_HDR_SIZE 48
/* "GGAR" in byte order, read as a little-endian 32-bit number. */
#define GGA_PK_REC_MAGIC    0x52414747u
/* Bytes covered by hdr_crc (everything before it). */
#define GGA_PK_REC_CRC_LEN  44

enum gga_pk_rec_type {
	GGA_PK_REC_DATA = 1, /* one fragment of one logical block */
	GGA_PK_REC_TRIM = 2, /* blocks lba .. lba + count - 1 read as zeros from here on */
	GGA_PK_REC_PAD = 3,  /* frag_len zero bytes that mean nothing */
};

struct __attribute__((packed)) gga_pk_rec_disk {
	uint32_t magic;       /* GGA_PK_REC_MAGIC */
	uint8_t version;      /* GGA_PK_VERSION */
	uint8_t type;         /* enum gga_pk_rec_type */
	uint8_t role;         /* fragment index: 0..k-1 data, k..k+m-1 parity */
	uint8_t encoding;     /* enum gga_encoding for data, 0 otherwise */
	uint8_t geometry;     /* k << 4 | m */
	uint8_t reserved[3];  /* zero */
	uint32_t frag_len;    /* h: payload bytes that follow the header */
	uint64_t lba;         /* logical block (data) or first block (trim); 0 for pad */
	uint64_t generation;  /* write generation, >= 1; 0 for pad */
	uint32_t payload_len; /* data: compressed block bytes c; trim: block count */
	uint32_t data_crc;    /* CRC-32C of the frag_len payload bytes */
	uint32_t block_crc;   /* data: CRC-32C of the decoded block; 0 otherwise */
	uint32_t hdr_crc;     /* CRC-32C of bytes 0..43 */
};

static_assert(sizeof(struct gga_pk_rec_disk) == GGA_PK_REC_HDR_SIZE, "record header size");
static_assert(GGA_PK_REC_HDR_SIZE % GGA_PK_ALIGN == 0, "record header 16-byte multiple");
static_assert(offsetof(struct gga_pk_rec_disk, magic) == 0, "rec magic");
static_assert(offsetof(struct gga_pk_rec_disk, version) == 4, "rec version");
static_assert(offsetof(struct gga_pk_rec_disk, type) == 5, "rec type");
static_assert(offsetof(struct gga_pk_rec_disk, role) == 6, "rec role");
static_assert(offsetof(struct gga_pk_rec_disk, encoding) == 7, "rec encoding");
static_assert(offsetof(struct gga_pk_rec_disk, geometry) == 8, "rec geometry");
static_assert(offsetof(struct gga_pk_rec_disk, reserved) == 9, "rec reserved");
static_assert(offsetof(struct gga_pk_rec_disk, frag_len) == 12, "rec frag_len");
static_assert(offsetof(struct gga_pk_rec_disk, lba) == 16, "rec lba");
static_assert(offsetof(struct gga_pk_rec_disk, generation) == 24, "rec generation");
static_assert(offsetof(struct gga_pk_rec_disk, payload_len) == 32, "rec payload_len");
static_assert(offsetof(struct gga_pk_rec_disk, data_crc) == 36, "rec data_crc");
static_assert(offsetof(struct gga_pk_rec_disk, block_crc) == 40, "rec block_crc");
static_assert(offsetof(struct gga_pk_rec_disk, hdr_crc) == GGA_PK_REC_CRC_LEN, "rec hdr_crc");

/* A record header in host form. */
struct gga_pk_rec {
	uint8_t type; /* enum gga_pk_rec_type */
	uint8_t role;
	uint8_t encoding; /* enum gga_encoding (data only) */
	uint8_t k;
	uint8_t m;
	uint32_t frag_len;
	uint64_t lba;
	uint64_t generation;
	uint32_t payload_len; /* data: c; trim: the block count */
	uint32_t data_crc;
	uint32_t block_crc;
};

/* h = ceil(c / k): the fragment length of a block of c compressed bytes. */
static inline uint32_t
gga_pk_frag_len(uint32_t payload_len, uint32_t k)
{
	return (payload_len + k - 1) / k;
}

/* Bytes a record of fragment length h takes: header + h, rounded up to 16. */
static inline uint32_t
gga_pk_record_size(uint32_t frag_len)
{
	return (GGA_PK_REC_HDR_SIZE + frag_len + GGA_PK_ALIGN - 1) & ~(GGA_PK_ALIGN - 1);
}

/*
 * Member LBAs of lba_size bytes that bytes off .. off + size - 1 touch (off
 * counted from any LBA boundary, e.g. the segment's start): what the read
 * path reads to fetch a record. 0 when size is 0.
 */
static inline uint64_t
gga_pk_lba_span(uint64_t off, uint64_t size, uint32_t lba_size)
{
	if (size == 0) {
		return 0;
	}
	return (off + size - 1) / lba_size - off / lba_size + 1;
}

/*
 * Write the header of `rec` (its data_crc as given) to buf (any alignment).
 * Returns 0, or -EINVAL if `rec` would not decode (see gga_pk_rec_hdr_decode).
 */
int gga_pk_rec_hdr_encode(const struct gga_pk_rec *rec, void *buf);

/*
 * Decode the GGA_PK_REC_HDR_SIZE header bytes at buf (any alignment) and
 * check everything that needs no block size. Returns 0, or:
 *   -EINVAL           buf or rec NULL
 *   -ENODATA          all 48 bytes are zero (nothing written here)
 *   -EILSEQ           wrong magic
 *   -EPROTONOSUPPORT  a version this reader does not know
 *   -EBADMSG          hdr_crc mismatch
 *   -EUCLEAN          crc good but fields inconsistent: unknown type, reserved
 *                     bytes not zero, bad geometry or role, generation 0,
 *                     frag_len not ceil(payload_len / k), a field that must be
 *                     zero for the type is not, a trim range that wraps
 */
int gga_pk_rec_hdr_decode(const void *buf, struct gga_pk_rec *rec);

/*
 * The read path's check of one data record at buf (any alignment), len bytes
 * read from its start: header as above, then that it is a data record of
 * block `lba` with generation `generation` (0: any), then the data_crc of its
 * fragment. The caller checks role and geometry against the member it read
 * and the array (FORMAT §4.1 steps 5-6), and the §5 rules that need B.
 * Returns 0 (rec filled), an error of gga_pk_rec_hdr_decode, or:
 *   -EINVAL    buf or rec NULL
 *   -EMSGSIZE  len shorter than the header, or than header + frag_len
 *   -ESTALE    a valid record, but not a data record of (lba, generation):
 *              the map points at a place that now holds something else
 *   -EIO       the fragment's bytes fail data_crc
 */
int gga_pk_record_decode(const void *buf, size_t len, uint64_t lba, uint64_t generation,
			 struct gga_pk_rec *rec);

/* ---------------------------------------------------------------------- */
/* Write unit header                                                       */
/* ---------------------------------------------------------------------- */

#define GGA_PK_WU_HDR_SIZE 64
/* "GGAW" in byte order, read as a little-endian 32-bit number. */
#define GGA_PK_WU_MAGIC    0x57414747u
/* Bytes covered by hdr_crc (everything before it). */
#define GGA_PK_WU_CRC_LEN  60

struct __attribute__((packed)) gga_pk_wu_disk {
	uint32_t magic;         /* GGA_PK_WU_MAGIC */
	uint8_t version;        /* GGA_PK_VERSION */
	uint8_t role;           /* the member's role: every record's role */
	uint8_t geometry;       /* k << 4 | m: every record's geometry */
	uint8_t lba_shift;      /* log2 of the member LBA size, 9..16 */
	uint32_t wu_off;        /* byte offset of the WU in its segment */
	uint32_t wu_len;        /* bytes of the WU: header, records, zero tail */
	uint64_t seg_seq;       /* sequence number the segment was opened with, >= 1 */
	uint8_t array_uuid[16]; /* the array's uuid, as in the superblock */
	uint32_t rec_count;     /* records, pad records included */
	uint32_t used;          /* header + records: where the zero tail starts */
	uint32_t body_crc;      /* CRC-32C of bytes 64 .. wu_len - 1 */
	uint8_t reserved[8];    /* zero */
	uint32_t hdr_crc;       /* CRC-32C of bytes 0..59 */
};

static_assert(sizeof(struct gga_pk_wu_disk) == GGA_PK_WU_HDR_SIZE, "WU header size");
static_assert(GGA_PK_WU_HDR_SIZE % GGA_PK_ALIGN == 0, "WU header 16-byte multiple");
static_assert(offsetof(struct gga_pk_wu_disk, version) == 4, "wu version");
static_assert(offsetof(struct gga_pk_wu_disk, role) == 5, "wu role");
static_assert(offsetof(struct gga_pk_wu_disk, geometry) == 6, "wu geometry");
static_assert(offsetof(struct gga_pk_wu_disk, lba_shift) == 7, "wu lba_shift");
static_assert(offsetof(struct gga_pk_wu_disk, wu_off) == 8, "wu wu_off");
static_assert(offsetof(struct gga_pk_wu_disk, wu_len) == 12, "wu wu_len");
static_assert(offsetof(struct gga_pk_wu_disk, seg_seq) == 16, "wu seg_seq");
static_assert(offsetof(struct gga_pk_wu_disk, array_uuid) == 24, "wu array_uuid");
static_assert(offsetof(struct gga_pk_wu_disk, rec_count) == 40, "wu rec_count");
static_assert(offsetof(struct gga_pk_wu_disk, used) == 44, "wu used");
static_assert(offsetof(struct gga_pk_wu_disk, body_crc) == 48, "wu body_crc");
static_assert(offsetof(struct gga_pk_wu_disk, reserved) == 52, "wu reserved");
static_assert(offsetof(struct gga_pk_wu_disk, hdr_crc) == GGA_PK_WU_CRC_LEN, "wu hdr_crc");

/*
 * Where a WU belongs: written into the builder's header, and what a parser
 * expects to find (it knows the array, the member it reads, the segment's
 * sequence number and the offset it reads at).
 */
struct gga_pk_wu_id {
	uint8_t array_uuid[16];
	uint64_t seg_seq;
	uint32_t wu_off;
	uint32_t lba_size; /* member LBA size: a power of two, 512..65536 */
	uint8_t role;
	uint8_t k;
	uint8_t m;
};

/* A WU header in host form. */
struct gga_pk_wu_hdr {
	struct gga_pk_wu_id id;
	uint32_t wu_len;
	uint32_t rec_count;
	uint32_t used;
	uint32_t body_crc;
};

/*
 * Decode the GGA_PK_WU_HDR_SIZE bytes at buf and check them against `want`
 * (NULL: no expectation). A scanner reads the first LBA of a WU, learns
 * wu_len from it, and reads the rest. Returns 0, or:
 *   -ENODATA          all 64 bytes are zero (no WU here: the log ends)
 *   -EILSEQ           wrong magic
 *   -EPROTONOSUPPORT  a version this reader does not know
 *   -EBADMSG          hdr_crc mismatch
 *   -EUCLEAN          crc good but fields inconsistent (bad geometry, role,
 *                     LBA size, length, offset, record count, reserved bytes)
 *   -EXDEV            another array's WU, or another role, geometry or LBA size
 *   -ESTALE           this array's, but another segment sequence or offset: left
 *                     from an earlier use of the segment (or a WU not yet reached)
 */
int gga_pk_wu_hdr_decode(const void *buf, const struct gga_pk_wu_id *want,
			 struct gga_pk_wu_hdr *hdr);

/* ---------------------------------------------------------------------- */
/* Builder                                                                 */
/* ---------------------------------------------------------------------- */

struct gga_pk_wu {
	uint8_t *buf;
	uint32_t cap; /* bytes the WU may grow to: a multiple of the LBA size */
	uint32_t used;
	uint32_t rec_count;
	bool sealed;
	struct gga_pk_wu_id id;
};

/*
 * Start a WU for member id->role in buf (cap bytes, any alignment). Its size
 * is bounded by cap, GGA_PK_WU_MAX and the end of the segment, rounded down
 * to a whole LBA. Returns 0, or -EINVAL (bad id: LBA size, geometry, role,
 * seg_seq 0, wu_off not on an LBA boundary or past the segment's end; or no
 * room for the header in one LBA).
 */
int gga_pk_wu_init(struct gga_pk_wu *wu, void *buf, uint32_t cap, const struct gga_pk_wu_id *id);

/*
 * Append a record: `rec`'s type, encoding, lba, generation, payload_len and
 * block_crc (role, geometry, frag_len and data_crc are the builder's: the
 * WU's role and geometry, ceil(payload_len / k) for data, frag_len as given
 * for pad, 0 for trim) and, for data, frag_len bytes of the fragment at
 * `frag`. Returns the record's byte offset in the WU (a multiple of 16), or
 * -ENOSPC (it does not fit: the WU is left as it was), -EINVAL (bad record,
 * or the WU already finished).
 */
int gga_pk_wu_add_record(struct gga_pk_wu *wu, const struct gga_pk_rec *rec, const void *frag);

/*
 * Seal the WU: zero its tail to the next LBA boundary, write the header and
 * both crcs. Returns the byte length to write (a multiple of the LBA size),
 * or -EINVAL if already finished.
 */
int gga_pk_wu_finish(struct gga_pk_wu *wu);

/* ---------------------------------------------------------------------- */
/* Parser                                                                  */
/* ---------------------------------------------------------------------- */

/* Verify each data record's data_crc as well (the body crc already covers it). */
#define GGA_PK_PARSE_DATA_CRC 0x1u

/*
 * Called once per data or trim record of a WU that passed every check, in
 * order: the record, its byte offset in the WU, its fragment (frag_len bytes
 * in the caller's buffer). It returns 0 to go on; anything else (a negative
 * errno, so as not to pass for a length) stops the walk and is returned.
 */
typedef int (*gga_pk_rec_fn)(void *ctx, const struct gga_pk_rec *rec, uint32_t off,
			     const uint8_t *frag);

/*
 * Validate the WU at buf (len bytes read from its start; may be more than
 * the WU) against `want`: its header (gga_pk_wu_hdr_decode), its length, its
 * body crc, then every record header in turn (valid, role and geometry of
 * the WU, the records tiling bytes 64 .. used exactly, rec_count of them),
 * pad payloads and the tail zero. Only if all of that holds is `fn` called
 * (may be NULL), so a damaged or torn WU yields no record at all. Returns
 * wu_len (> 0), the callback's non-zero value, an error of
 * gga_pk_wu_hdr_decode, or:
 *   -EINVAL    buf or want NULL
 *   -EMSGSIZE  len shorter than the header or than wu_len: truncated
 *   -EIO       body crc mismatch: a torn or damaged WU
 *   -EUCLEAN   crcs good but the body inconsistent (a bad record header, a
 *              record past `used`, wrong count, non-zero padding; with
 *              GGA_PK_PARSE_DATA_CRC a fragment failing its data_crc)
 */
int gga_pk_wu_parse(const void *buf, size_t len, const struct gga_pk_wu_id *want, unsigned flags,
		    gga_pk_rec_fn fn, void *ctx);

#endif /* GGA_PACKED_FORMAT_H */
