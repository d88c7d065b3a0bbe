/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The calls of bdev_gga_recover.c: re-add (probe), attach, replace (their
 * RPCs are in bdev_gga.h).
 * The structures they work on are in bdev_gga_disk.h.
 */
#ifndef GGA_BDEV_GGA_RECOVER_H
#define GGA_BDEV_GGA_RECOVER_H

#include "bdev_gga_disk.h"

void gga_recover_start_disk(struct gga_disk *disk);
void gga_recover_stop_disk(struct gga_disk *disk);

#endif /* GGA_BDEV_GGA_RECOVER_H */
