/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The calls of bdev_gga_bitmap.c: the write-intent bitmap
 * (docs/FORMAT.md 3.2).
 * The structures they work on are in bdev_gga_disk.h.
 */
#ifndef GGA_BDEV_GGA_BITMAP_H
#define GGA_BDEV_GGA_BITMAP_H

#include "bdev_gga_disk.h"

/*
 * The compression memory of lba's region (NULL without a bitmap): how many
 * writes in a row came back incompressible. Racy by design (relaxed atomic
 * loads and stores from every thread): it only decides whether to try LZ4.
 */
uint8_t *gga_region_incomp(struct gga_disk *disk, uint64_t lba);
/* Set up the bitmap from the image `bits` (NULL: clean). Returns 0 or -ENOMEM. */
int gga_bitmap_create(struct gga_disk *disk, uint32_t region_shift, const uint8_t *image);
/* Start the lazy clearing (app thread, after registration). */
void gga_bitmap_start(struct gga_disk *disk);
void gga_bitmap_stop(struct gga_disk *disk);
/*
 * I/O path, any thread: count a write into blocks lba..lba+count-1 and make
 * sure their regions are marked on the members. Returns true when they
 * are; false when a bitmap write was asked for (call again later; the count
 * stays taken). gga_bitmap_release() drops the count.
 */
bool gga_bitmap_hold(struct gga_disk *disk, uint64_t lba, uint32_t count, bool held);
void gga_bitmap_release(struct gga_disk *disk, uint64_t lba, uint32_t count);
/* Any thread (relaxed, may be a moment old): is the region of block lba marked? */
bool gga_bitmap_marked(const struct gga_disk *disk, uint64_t lba);
/* App thread: is region r marked; regions; bytes of the image; dirty count. */
bool gga_bitmap_test(const struct gga_disk *disk, uint64_t region);
uint64_t gga_bitmap_regions_count(const struct gga_disk *disk);
uint64_t gga_bitmap_dirty(const struct gga_disk *disk);
uint32_t gga_bitmap_region_blocks(const struct gga_disk *disk);
/* App thread: the bitmap area of the reserved region (member blocks) for a member write. */
void gga_bitmap_encode_area(const struct gga_disk *disk, uint8_t *area);
/*
 * App thread: write the image to every member that takes writes, whether
 * or not it changed (a member back from an outage holds an old one).
 */
void gga_bitmap_rewrite(struct gga_disk *disk);

/*
 * A clean close (disk->closing): at the delete of an array that is whole (no
 * front of a shared array, every member online, no recovery checkpoint),
 * once no host write can come any more, the marks are cleared by the same
 * rule-8 sequence as the sweep's (two updates that reach every member, the
 * module deciding), so the next assembly finds nothing to check. Anything
 * else on the way (a member lost, an update short) leaves the marks, which
 * is always safe. App thread, at the delete: may this array close clean
 * (GGA_CLOSE_WANTED, enum gga_close)?
 */
bool gga_bitmap_close_eligible(const struct gga_disk *disk);

#endif /* GGA_BDEV_GGA_BITMAP_H */
