/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One logical block as the packed layout stores it (docs/FORMAT.md §11):
 * the pure core of the packed write and read paths, between the codec
 * (gga_codec_pack/unpack) and the on-member units (gga_packed_format.h).
 * A write turns a block into one data record per member, each in a write
 * unit of its own (one record per WU: no group commit yet), all of the
 * same length with the record at the same offset; a read takes the
 * record bytes read from any members, keeps those that pass every check
 * of §11.4 (a data record of this block and generation, the member's role,
 * the array's geometry, its fragment crc, the same write as the others)
 * and decodes the block from any k of them, verified against its crc.
 * No I/O, no allocation: the caller brings every buffer.
 */
#ifndef GGA_PACKED_BLOCK_H
#define GGA_PACKED_BLOCK_H

#include <stdint.h>

#include "gga_codec.h"
#include "gga_packed_format.h"

/* Where a block's record landed in its WUs (the same on every member). */
struct gga_pkb_write {
	struct gga_pack_info info;
	uint32_t rec_off;  /* byte offset of the record in the WU */
	uint32_t rec_size; /* bytes of the record (header, fragment, padding) */
	uint32_t wu_len;   /* bytes of each member's WU: what is written */
};

/*
 * Pack `block` (logical block lba, write generation gen >= 1) and build, for
 * every member i < k + m, a WU in wu_buf[i] (cap bytes each: at least the
 * largest WU, see gga_pkb_wu_max) holding its one record, with the identity
 * *id (its role replaced by i). frag[i] are k + m scratch buffers of
 * gga_codec_frag_size() bytes. Returns 0 and fills *out, or -EINVAL (bad
 * arguments, a codec that is not id's geometry), -ENOSPC (cap too small).
 */
int gga_pkb_build(const struct gga_codec *codec, struct gga_codec_scratch *scratch,
		  const void *block, uint64_t lba, uint64_t gen, const struct gga_pk_wu_id *id,
		  void *const frag[], void *const wu_buf[], uint32_t cap,
		  struct gga_pkb_write *out);

/*
 * The same for a trim of blocks lba .. lba + count - 1 at generation gen:
 * one trim record per member. out->info is zero.
 */
int gga_pkb_build_trim(uint32_t n, uint64_t lba, uint32_t count, uint64_t gen,
		       const struct gga_pk_wu_id *id, void *const wu_buf[], uint32_t cap,
		       struct gga_pkb_write *out);

/* The largest WU gga_pkb_build writes for a codec and member LBA size (a raw block). */
uint32_t gga_pkb_wu_max(const struct gga_codec *codec, uint32_t lba_size);

/*
 * Read block lba, written at generation gen, back from the record bytes
 * rec[i] (len bytes from the record's start, at least its rec_size) of the
 * members in present. A member's record counts only if it decodes as a
 * data record of (lba, gen) with the member's role i and the codec's
 * geometry, its fragment passes its crc, and it names the same write
 * (encoding, payload_len, block_crc) as the first that passed. Returns:
 *   0        block_out holds the block (its crc checked); *bad_mask (may be
 *            NULL) the present members whose record did not count
 *   -EIO     fewer than k records count, or the block fails its crc
 *   -EINVAL  bad arguments
 */
int gga_pkb_read(const struct gga_codec *codec, struct gga_codec_scratch *scratch,
		 const void *const rec[], uint32_t len, uint32_t present, uint64_t lba,
		 uint64_t gen, void *block_out, uint32_t *bad_mask);

#endif /* GGA_PACKED_BLOCK_H */
