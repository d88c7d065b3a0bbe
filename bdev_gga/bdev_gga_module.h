/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The calls of bdev_gga_module.c that the files above it make:
 * registration and start of a disk (the function table, delete and the
 * information calls are reached through the bdev layer and bdev_gga.h).
 * The structures they work on are in bdev_gga_disk.h.
 */
#ifndef GGA_BDEV_GGA_MODULE_H
#define GGA_BDEV_GGA_MODULE_H

#include "bdev_gga_disk.h"

/*
 * Make a created disk a bdev: buffer pools, io_device, bdev_register.
 * Returns 0, -ENOMEM, or bdev_register()'s error (nothing left registered).
 */
int gga_disk_register(struct gga_disk *disk);
/*
 * Start the disk's background work (bitmap sweep, watchdog, probes and
 * recovery). gga_disk_register does it, but for a front of a shared array,
 * which registers before it may assemble: it starts once assembled.
 */
void gga_disk_start(struct gga_disk *disk);
/*
 * A front that was assembled and stepped down (gated): stop the disk's
 * background work, wait until nothing of the assembly runs, reset what the
 * assembly derived from the superblocks, then call done(disk), unless the
 * disk is deleted first. 0, -EBUSY (under way), -ENODEV (deleted) or -ENOMEM.
 */
int gga_disk_forget(struct gga_disk *disk, void (*done)(struct gga_disk *disk));

#endif /* GGA_BDEV_GGA_MODULE_H */
