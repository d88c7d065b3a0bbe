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
/*
 * One round of the watch over the app thread's member I/O (app_io): the
 * members that have held it for member_timeout_ms with no completion (once
 * per stall), each reset if it can be, so that the I/O ends now, failed.
 * With `fail` (a running disk) each is first failed by gga_member_stall(),
 * and one it keeps is neither reset nor returned (its I/O waits); else (an
 * assembly) the caller leaves them out. A reset in flight counts in the
 * member's app_io.
 */
uint32_t gga_app_watch_round(struct gga_disk *disk, bool fail);

#endif /* GGA_BDEV_GGA_CHANNEL_H */
