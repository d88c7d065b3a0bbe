/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The calls of bdev_gga_io.c: the I/O state machine and the range lock.
 * The structures they work on are in bdev_gga_disk.h.
 */
#ifndef GGA_BDEV_GGA_IO_H
#define GGA_BDEV_GGA_IO_H

#include "bdev_gga_disk.h"

void gga_submit_request(struct io_channel *ch, struct bdev_io *io);
int gga_retry_poll(void *ctx);
bool gga_lock_try(struct gga_disk *disk, uint64_t lba, uint32_t count);
void gga_lock_release(struct gga_disk *disk, uint64_t lba, uint32_t count);

#endif /* GGA_BDEV_GGA_IO_H */
