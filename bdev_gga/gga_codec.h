/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The gga codec: turns one logical block into k data fragments and m parity
 * fragments (each fragment_size = block_size / k data bytes plus metadata)
 * and back. It knows nothing of bdevs or I/O: the gga bdev reads and writes
 * fragments, the codec compresses (LZ4), erasure-codes (ISA-L), checksums
 * (CRC-32C) and decides which fragments define a block. docs/FORMAT.md is the
 * normative description of what it writes.
 *
 * Threads: a codec is immutable after gga_codec_create() and may be used by
 * any number of threads at once. Each thread brings its own scratch
 * (gga_codec_scratch_alloc(), done once per thread, e.g. in an io_channel's
 * create callback), so encode and decode never allocate, lock or sleep.
 *
 * Fragments: index i in 0..k-1 is data fragment i (d1 is 0, d2 is 1 in the
 * bdev's 2+1 naming), k..k+m-1 are the parity fragments. Bit i of a mask
 * stands for fragment i. frag_data[i] points at fragment_size data bytes and
 * frag_md[i] at md_size metadata bytes; they are separate pointers because in
 * an extended-LBA member buffer a block's data and metadata are adjacent but
 * consecutive blocks are strided. No alignment is required of any pointer.
 */
#ifndef GGA_CODEC_H
#define GGA_CODEC_H

#include <stdbool.h>
#include <stdint.h>

#include "gga_format.h"

#define GGA_CODEC_MAX_FRAGS GGA_MAX_FRAGS

struct gga_codec;
struct gga_codec_scratch;

struct gga_codec_opts {
	uint32_t block_size; /* logical block: power of two, 512..65536, divisible by k */
	uint32_t k;          /* data fragments, >= 1 */
	uint32_t m;          /* parity fragments, >= 1; k + m <= GGA_CODEC_MAX_FRAGS */
	enum gga_matrix matrix;
	uint32_t md_size; /* member metadata bytes per block, >= GGA_FRAG_MD_SIZE */
};

/* Defaults: 4096-byte blocks, 2 + 1, vandermonde, GGA_FRAG_MD_SIZE. */
void gga_codec_opts_init(struct gga_codec_opts *opts);

/*
 * Create a codec: generate the coding matrix, the encode tables, and the
 * recovery tables for every pattern of lost fragments that leaves k (so
 * decode never inverts a matrix). Memory is a few hundred bytes for 2 + 1
 * and grows with C(k+m, k); 8 + 8 takes about 13 MiB.
 * Returns 0 and sets *codec, or:
 *   -EINVAL  opts out of range (see gga_codec_opts), or the matrix cannot
 *            recover some pattern of m lost fragments for this k, m
 *            (vandermonde is not MDS for every large k + m)
 *   -ENOMEM
 */
int gga_codec_create(const struct gga_codec_opts *opts, struct gga_codec **codec);
void gga_codec_destroy(struct gga_codec *codec);

uint32_t gga_codec_block_size(const struct gga_codec *codec);
/* Data bytes per fragment (= the member bdev's block size): block_size / k. */
uint32_t gga_codec_frag_size(const struct gga_codec *codec);
/* Metadata bytes written per fragment (opts.md_size; the first GGA_FRAG_MD_SIZE are used). */
uint32_t gga_codec_md_size(const struct gga_codec *codec);
uint32_t gga_codec_k(const struct gga_codec *codec);
uint32_t gga_codec_m(const struct gga_codec *codec);
enum gga_matrix gga_codec_matrix(const struct gga_codec *codec);

/*
 * Per-thread working memory: LZ4 state, a compression buffer and decode
 * buffers, about 16 KiB + 3 * block_size. Allocate it on the thread that will
 * use it. It serves any codec of the same block size. Returns 0, -EINVAL or
 * -ENOMEM.
 */
int gga_codec_scratch_alloc(const struct gga_codec *codec, struct gga_codec_scratch **scratch);
void gga_codec_scratch_free(struct gga_codec_scratch *scratch);

struct gga_encode_info {
	enum gga_encoding encoding; /* RAW, LZ4 or ZERO */
	uint32_t payload_len;
	uint32_t block_crc;
};

/*
 * Encode the block_size bytes at `block` for logical block `lba`, write
 * generation `generation` (>= 1, larger than any generation this block had
 * before), into all k + m fragments. An all-zero block gets the zero
 * encoding; a block that LZ4 shrinks below block_size gets lz4; anything else
 * is stored raw. info may be NULL. Returns 0, or -EINVAL for NULL pointers,
 * generation 0, or a scratch of another block size.
 */
int gga_codec_encode(const struct gga_codec *codec, struct gga_codec_scratch *scratch,
		     const void *block, uint64_t lba, uint64_t generation, void *const frag_data[],
		     void *const frag_md[], struct gga_encode_info *info);

/*
 * gga_codec_encode_ex flag: do not try LZ4 (the data is known to be
 * incompressible); the block is stored raw, or as zeros. The format is the
 * same either way.
 */
#define GGA_ENCODE_NO_LZ4 (1u << 0)

/* gga_codec_encode with flags (0: the same). */
int gga_codec_encode_ex(const struct gga_codec *codec, struct gga_codec_scratch *scratch,
			const void *block, uint64_t lba, uint64_t generation, uint32_t flags,
			void *const frag_data[], void *const frag_md[],
			struct gga_encode_info *info);

/*
 * Encode an all-zero block without looking at one (write_zeroes, unmap): the
 * fragments get zero data and zero-encoding metadata. Same arguments and
 * returns as gga_codec_encode() without the block and scratch.
 */
int gga_codec_encode_zero(const struct gga_codec *codec, uint64_t lba, uint64_t generation,
			  void *const frag_data[], void *const frag_md[],
			  struct gga_encode_info *info);

/* What decode made of one fragment. */
enum gga_frag_status {
	GGA_FRAG_ABSENT = 0, /* not in present_mask */
	GGA_FRAG_VALID,      /* intact and part of the version returned */
	GGA_FRAG_STALE,      /* intact, older than the version returned (or never written) */
	GGA_FRAG_ORPHAN,     /* intact, newer, but its write reached fewer than k fragments */
	GGA_FRAG_UNRESOLVED, /* intact, but no version has k fragments (decode failed) */
	/* The rest are corrupt: */
	GGA_FRAG_BAD_MAGIC,    /* metadata is not gga fragment metadata */
	GGA_FRAG_BAD_VERSION,  /* unknown format version */
	GGA_FRAG_BAD_MD_CRC,   /* metadata damaged, or written for another LBA */
	GGA_FRAG_BAD_ROLE,     /* metadata of another fragment index (members swapped) */
	GGA_FRAG_BAD_GEOMETRY, /* written with another k or m */
	GGA_FRAG_BAD_FIELD,    /* encoding, payload length or generation out of range */
	GGA_FRAG_BAD_DATA_CRC, /* data does not match its checksum */
	GGA_FRAG_BAD_BLANK,    /* all-zero metadata but non-zero data */
	GGA_FRAG_CONFLICT,     /* same generation as the version returned, other content */
};

const char *gga_frag_status_name(enum gga_frag_status status);

/*
 * Outcome of a decode. Every fragment 0..k+m-1 is in exactly one of
 * missing_mask, valid_mask, stale_mask, orphan_mask, corrupt_mask, or (only
 * when decode fails) none of them with status UNRESOLVED. The fragments a
 * caller should rewrite to heal the block are all but valid_mask; pass that
 * set to gga_codec_rebuild().
 */
struct gga_decode_info {
	enum gga_encoding encoding; /* UNWRITTEN for a block never written */
	uint32_t payload_len;
	uint64_t generation; /* 0 for a block never written */
	uint32_t missing_mask;
	uint32_t valid_mask;
	uint32_t stale_mask;
	uint32_t orphan_mask;
	uint32_t corrupt_mask;
	/*
	 * Part of corrupt_mask: fragments that may belong to a write newer than
	 * the one returned, so the newest write may be hidden from the decode:
	 * a header that cannot be read or is not this block's, or a readable
	 * header of a newer write whose data is bad. (A corrupt fragment whose
	 * header names this write or an older one is not in it.)
	 */
	uint32_t hidden_mask;
	/*
	 * Part of corrupt_mask: fragments poisoned on purpose (metadata all 0xff:
	 * written for a block a recovery could not rebuild, so that it stays
	 * unreadable). No member's fault.
	 */
	uint32_t poison_mask;
	uint32_t used_mask;                  /* fragments whose data went into the block */
	uint32_t rebuilt_mask;               /* data fragments rebuilt from parity */
	bool payload_corrupt;                /* k valid fragments, but the block failed its crc */
	uint8_t status[GGA_CODEC_MAX_FRAGS]; /* enum gga_frag_status */
};

/*
 * Decode logical block `lba` into block_out (block_size bytes) from the
 * fragments in present_mask (frag_data[i]/frag_md[i] are read only for those;
 * the others may be NULL). Each present fragment's metadata and data are
 * checked; intact fragments are grouped by write (generation and content);
 * the newest write with at least k intact fragments defines the block, so a
 * write torn across members reads back wholly old or wholly new. Data
 * fragments that are absent or not part of that write are rebuilt from
 * parity when the payload needs them; leaving a data fragment out of
 * present_mask forces that recovery path. A block whose chosen fragments are
 * never-written (all-zero metadata and data) decodes as zeros. info may be
 * NULL.
 *
 * Data fragment i may already lie where a raw block keeps it, at
 * frag_data[i] == block_out + i * fragment_size (a member read straight into
 * the caller's buffer): decode then checks it in place and copies nothing
 * for it. Any other overlap between the inputs and block_out is not allowed.
 * Returns:
 *   0        block_out holds the block, verified against its crc
 *   -EIO     no write has k intact fragments, two writes with the same
 *            generation both have k, or the rebuilt block fails its crc;
 *            block_out is undefined and info says why (and so are the
 *            fragments that lie in block_out)
 *   -EINVAL  NULL codec/scratch/block_out, a NULL pointer for a present
 *            fragment, present_mask bits beyond k + m, or a scratch of
 *            another block size
 */
int gga_codec_decode(const struct gga_codec *codec, struct gga_codec_scratch *scratch,
		     const void *const frag_data[], const void *const frag_md[],
		     uint32_t present_mask, uint64_t lba, void *block_out,
		     struct gga_decode_info *info);

/*
 * Regenerate fragments for repair or member rebuild: resolve the block from
 * the fragments in present_mask exactly as gga_codec_decode() does (and
 * verify it against its block crc), then write fragment i's data and
 * metadata to out_data[i]/out_md[i] for every i in target_mask, identical to
 * what encode wrote for that version. A never-written block yields all-zero
 * data and metadata. out_* buffers must not overlap the inputs. info may be
 * NULL. Returns 0, -EIO (as decode), or -EINVAL (as decode, or target_mask
 * empty or beyond k + m, or a NULL out pointer for a target).
 */
int gga_codec_rebuild(const struct gga_codec *codec, struct gga_codec_scratch *scratch,
		      const void *const frag_data[], const void *const frag_md[],
		      uint32_t present_mask, uint64_t lba, uint32_t target_mask,
		      void *const out_data[], void *const out_md[], struct gga_decode_info *info);

/* ---------------------------------------------------------------------- */
/* The packed layout's fragments (docs/FORMAT.md §11)                      */
/* ---------------------------------------------------------------------- */

/*
 * A block as the packed layout stores it: its payload (the LZ4 output, or
 * the block itself when LZ4 does not shrink it; nothing for a zero block)
 * zero-padded to k * frag_len bytes and cut into k data fragments of
 * frag_len = ceil(payload_len / k) bytes, plus m parity fragments of the
 * same length. The fragments carry no metadata: the record headers around
 * them hold the encoding, payload_len and block_crc (and each fragment's own
 * crc), so the codec only cuts, codes and checks the block.
 */
struct gga_pack_info {
	enum gga_encoding encoding; /* RAW, LZ4 or ZERO */
	uint32_t payload_len;       /* c: 0 for ZERO */
	uint32_t frag_len;          /* h = ceil(c / k); 0 for ZERO */
	uint32_t block_crc;         /* CRC-32C of the block_size bytes of the block */
};

/*
 * Encode the block_size bytes at `block` into the k + m fragments frag[i],
 * each a buffer of at least gga_codec_frag_size() bytes (h never exceeds it);
 * only the first info->frag_len bytes of each are written. flags as for
 * gga_codec_encode_ex (GGA_ENCODE_NO_LZ4). Returns 0, or -EINVAL for NULL
 * pointers or a scratch of another block size.
 */
int gga_codec_pack(const struct gga_codec *codec, struct gga_codec_scratch *scratch,
		   const void *block, uint32_t flags, void *const frag[],
		   struct gga_pack_info *info);

/*
 * Decode a block packed as `info` says from the fragments in present_mask
 * (frag[i], info->frag_len bytes each, trusted intact: the caller checked
 * each record's crc and identity). The data fragments are used where
 * present, missing ones are rebuilt from parity (the lowest parity first);
 * the block is then decompressed and checked against info->block_crc.
 * *used_mask (may be NULL) gets the fragments read. block_out must not
 * overlap the fragments. Returns:
 *   0        block_out holds the block, verified against block_crc
 *   -EIO     fewer than k fragments present, the payload does not
 *            decompress to a whole block, or the block fails its crc
 *   -EINVAL  NULL pointers, a NULL present fragment, present_mask beyond
 *            k + m, an encoding that is none of RAW, LZ4 and ZERO, or a
 *            frag_len that is not ceil(payload_len / k) (RAW: c = block_size)
 */
int gga_codec_unpack(const struct gga_codec *codec, struct gga_codec_scratch *scratch,
		     const void *const frag[], uint32_t present_mask,
		     const struct gga_pack_info *info, void *block_out, uint32_t *used_mask);

#endif /* GGA_CODEC_H */
