/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The calls of bdev_gga_remove.c: hot-remove of a member, the end of a
 * disk, the list of disks and the module.
 * The structures they work on are in bdev_gga_disk.h.
 */
#ifndef GGA_BDEV_GGA_REMOVE_H
#define GGA_BDEV_GGA_REMOVE_H

#include "bdev_gga_disk.h"

extern struct bdev_module gga_bdev_module;
/* Release a member: its app-thread channel, its claim, its descriptor (app thread). */
void gga_member_close(struct gga_member *member);
/* io_device_for_each_channel() step (ctx: the member): drop its channels once drained. */
void gga_member_release_channel(struct io_channel_iter *i);
/* Close a member now, or once its app-thread I/O has ended. */
void gga_member_close_when_idle(struct gga_member *member);
/* An app-thread I/O to the member ended (call after bdev_free_io). */
void gga_member_app_io_done(struct gga_member *member);
/* Event callback of every member's descriptor (hot-remove). */
void gga_member_event_cb(enum bdev_event_type type, struct bdev *bdev, void *ctx);
/* The bitmap's memory (gga_bitmap_create()) goes with the disk. */
void gga_bitmap_destroy(struct gga_disk *disk);
void gga_disk_free(struct gga_disk *disk);
/* Is the bitmap writing, or about to (a flush message queued)? */
bool gga_bitmap_busy(const struct gga_disk *disk);
/* Recovery work that holds the disk: a walk, a probe, member I/O of the app thread. */
bool gga_recover_busy(const struct gga_disk *disk);
/* Any of those, or a superblock update in flight or queued. */
bool gga_disk_app_busy(const struct gga_disk *disk);
/* Final free may proceed once nothing asynchronous is left (app thread). */
void gga_disk_try_free(struct gga_disk *disk);
/* A disk is registered: the list bdev_gga_first() walks has it. */
void gga_disk_link(struct gga_disk *disk);
/* The gga bdev of that name, unless it is being deleted; NULL otherwise. */
struct gga_disk *gga_disk_lookup(const char *name);

#endif /* GGA_BDEV_GGA_REMOVE_H */
