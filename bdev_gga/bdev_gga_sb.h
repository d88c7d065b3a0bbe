/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The calls of bdev_gga_sb.c, the superblock writer: member areas,
 * records, updates and generation windows.
 * The structures they work on are in bdev_gga_disk.h.
 */
#ifndef GGA_BDEV_GGA_SB_H
#define GGA_BDEV_GGA_SB_H

#include "bdev_gga_disk.h"

/* Gather `len` data bytes of member blocks (disk->mbs each) at src into dst, skipping metadata. */
void gga_area_gather(const struct gga_disk *disk, const uint8_t *src, uint8_t *dst, size_t len);
/* The reverse: scatter `len` data bytes into member blocks, metadata zero. */
void gga_area_scatter(const struct gga_disk *disk, const uint8_t *src, uint8_t *dst, size_t len);
/* Encode the module's record `rec` as member `index`'s superblock into buf (sb_blocks blocks). */
int gga_sb_record_encode(struct gga_disk *disk, uint32_t index, uint64_t epoch,
			 const struct gga_lc_record *rec, uint8_t *buf);
/*
 * App thread: the bitmap sweep found marks to clear; start the two updates
 * after which it may (disk->bm_clear.stage becomes GGA_LC_CLEAR_READY).
 */
void gga_bm_clear_request(struct gga_disk *disk);
/* Reserve `count` generations; -EAGAIN when the persisted window is used up. */
int gga_gen_reserve(struct gga_disk *disk, uint32_t count, uint64_t *first);
/*
 * Give the disk its update message (disk->sb_update), which gga_sb_kick()
 * queues: once, when the disk is made, before anything may ask for an update.
 */
void gga_sb_writer_init(struct gga_disk *disk);

#endif /* GGA_BDEV_GGA_SB_H */
