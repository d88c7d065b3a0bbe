/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The calls of bdev_gga_front.c: the role of a front of a shared array
 * (docs/DESIGN.md 1), the shell around gga_front.c.
 * The structures they work on are in bdev_gga_disk.h.
 */
#ifndef GGA_BDEV_GGA_FRONT_H
#define GGA_BDEV_GGA_FRONT_H

#include "bdev_gga_disk.h"

struct gga_front_shell;
/* Give disk its role shell (before registration). 0 or -ENOMEM. */
int gga_front_shell_create(struct gga_disk *disk, uint16_t front_id, uint32_t lease_ms,
			   bool standby);
void gga_front_shell_free(struct gga_disk *disk, struct gga_front_shell *sh);
/*
 * Start the poller (after registration); assemble(arg) runs once the front is
 * active; unassemble(disk) once an assembled front steps down: it ends with
 * gga_front_shell_rearm().
 */
int gga_front_shell_run(struct gga_disk *disk, void (*assemble)(void *arg), void *arg,
			void (*unassemble)(struct gga_disk *disk));
/*
 * The disk let go of its assembly: the front stands by, and calls
 * assemble(arg) with this arg when it is next active.
 */
void gga_front_shell_rearm(struct gga_disk *disk, void *arg);
/* Members whose reservation this front holds now (a member whose renewal got no answer not). */
uint32_t gga_front_shell_held_mask(const struct gga_disk *disk);
/*
 * The assembly asked for ended: rc 0 serves (if still active); else msg says
 * why not. Returns true when the shell will call assemble(arg) again (after
 * a back-off): the caller keeps arg for it.
 */
bool gga_front_shell_assembled(struct gga_disk *disk, int rc, const char *msg);
/* Stop (destruct): the disk is freed once the shell's I/O has ended. */
void gga_front_shell_stop(struct gga_disk *disk);
/* Planned hand-over: 0, -ENOTSUP (single front), -EINVAL (neither active nor standby). */
int gga_front_shell_hand_over(struct gga_disk *disk);
void gga_front_shell_info(const struct gga_disk *disk, struct bdev_gga_info *info);

#endif /* GGA_BDEV_GGA_FRONT_H */
