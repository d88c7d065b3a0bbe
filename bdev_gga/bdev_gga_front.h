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
/* Why member i, not in gga_front_shell_held_mask(), is not held (a static string). */
const char *gga_front_shell_not_held_why(const struct gga_disk *disk, uint32_t i);
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
/*
 * Why the disk takes no operator's change of its array now (scrub, replace,
 * clear), NULL when it does; *assembled (if not NULL): whether the disk runs
 * an assembly at all. A bdev waiting for members (wait_for_members) and a
 * front between assemblies (a standby, one taking over or assembling, one
 * whose assembly failed, one letting go of it) are not assembled; an
 * assembled front that does not serve (proving its lease, fenced) is, but
 * takes no change either. A static string.
 */
const char *gga_disk_unready(const struct gga_disk *disk, bool *assembled);
/*
 * The same as a sentence for an operator ("gga bdev 'x' is not assembled:
 * waiting for members (...)") in msg: true, or false if it takes changes.
 */
bool gga_disk_unready_msg(const struct gga_disk *disk, char *msg, size_t len);
void gga_front_shell_info(const struct gga_disk *disk, struct bdev_gga_info *info);

#endif /* GGA_BDEV_GGA_FRONT_H */
