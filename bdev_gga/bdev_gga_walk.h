/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The calls of bdev_gga_walk.c: recovery passes and scrub, and the
 * lifecycle steps that start them.
 * The structures they work on are in bdev_gga_disk.h.
 */
#ifndef GGA_BDEV_GGA_WALK_H
#define GGA_BDEV_GGA_WALK_H

#include "bdev_gga_disk.h"

/*
 * Carry out what the lifecycle module asked for after gga_lc_take(): a pass
 * to start (which persists its records), or else a record update.
 */
void gga_lc_carry(struct gga_disk *disk, const struct gga_lc_actions *act);
/*
 * One lifecycle step of the app thread: gga_lc_decide(), then its actions
 * carried out (gga_lc_carry()). Returns the members it moved; the actions in
 * *act if not NULL.
 */
uint32_t gga_lc_step(struct gga_disk *disk, const struct gga_lc_event *ev, bool hold_pass,
		     const char *reason,
		     const char *(*reason_of)(const struct gga_lc_view *v,
					      const struct gga_lc_event *ev),
		     struct gga_lc_actions *act);
/* Start a recovery pass for members that need one, if none runs (app thread). */
void gga_recover_maybe_start(struct gga_disk *disk);
/* The disk starts: carry out the pass its assembly started, or start one if one may. */
void gga_recover_start_assembled(struct gga_disk *disk);
/* App thread: the running recovery's progress (active false if none) and the scrub's. */
void gga_recover_info(const struct gga_disk *disk, struct bdev_gga_recovery_info *rec,
		      struct bdev_gga_scrub_info *scrub);
/* After assembly: check the regions still marked in the bitmap, if every member is online. */
void gga_walk_check_marked(struct gga_disk *disk);
/* Stop the pass running (it ends once its chunks in flight are done). */
void gga_walk_stop(struct gga_disk *disk);
/* A recovery pass running takes this rate at once. */
void gga_walk_set_rate(struct gga_disk *disk, uint32_t rate_mib_s);

#endif /* GGA_BDEV_GGA_WALK_H */
