/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The calls of bdev_gga_channel.c: channels of a gga disk, their stall
 * watchdogs and the app thread's.
 * The structures they work on are in bdev_gga_disk.h.
 */
#ifndef GGA_BDEV_GGA_CHANNEL_H
#define GGA_BDEV_GGA_CHANNEL_H

#include "bdev_gga_disk.h"

/* sum += add, counter by counter. */
void gga_counters_add(struct bdev_gga_counters *sum, const struct bdev_gga_counters *add);
/* Channels of the disk's io_device (io_device_register). */
int gga_channel_create(void *io_device, void *ctx_buf);
void gga_channel_destroy(void *io_device, void *ctx_buf);
/* Channel: drop a member channel once its I/O is drained (hot-remove). */
void gga_channel_member_drained(struct gga_channel *ch, uint32_t index);
/* Start watching the app thread's member I/O (until the disk is freed). */
void gga_app_watchdog_start(struct gga_disk *disk);

#endif /* GGA_BDEV_GGA_CHANNEL_H */
