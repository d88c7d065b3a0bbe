/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One member fan-out (bdev_gga_fanout.h): submit the I/O of one step to a
 * mask of members, wait for a bdev_io where a member has none to spare (or
 * leave that to the owner), join the answers and fail, by one path, the
 * members that refused or failed the I/O. It stands just above the member
 * states (gga_member_fail) and the end of a member's app thread I/O; the
 * I/O path, recovery, the bitmap, the superblock writer and creation stand
 * above it.
 */
#include <errno.h>

#include "bdev_gga_fanout.h"
#include "bdev_gga_member.h"
#include "bdev_gga_remove.h"

static inline struct gga_member *
fanout_member(struct gga_fanout *fo, uint32_t i)
{
	return &fo->disk->members[i];
}

bool
gga_fanout_start(struct gga_fanout *fo, const struct gga_fanout_ops *ops, struct gga_disk *disk,
		 uint32_t mask)
{
	bool going;

	fo->ops = ops;
	fo->disk = disk;
	fo->submit_mask = mask;
	fo->sent_mask = 0;
	fo->ok_mask = 0;
	fo->fail_mask = 0;
	fo->short_mask = 0;
	/* One count of its own keeps the answers from ending it while it submits. */
	fo->pending = 1;
	gga_fanout_submit(fo);
	going = (fo->sent_mask | fo->submit_mask) != 0;
	gga_fanout_put(fo);
	return going;
}

static void
fanout_wait_done(void *arg)
{
	gga_fanout_submit(arg);
}

/*
 * Wait for a bdev_io on member i's channel. False if one became free
 * meanwhile: try again now.
 */
static bool
fanout_wait(struct gga_fanout *fo, uint32_t i)
{
	const struct gga_fanout_ops *ops = fo->ops;

	fo->wait.bdev = fanout_member(fo, i)->bdev;
	fo->wait.cb_fn = fanout_wait_done;
	fo->wait.cb_arg = fo;
	return bdev_queue_io_wait(fo->wait.bdev, ops->channel(fo, i), &fo->wait) == 0;
}

void
gga_fanout_submit(struct gga_fanout *fo)
{
	const struct gga_fanout_ops *ops = fo->ops;
	uint32_t i, bit;
	int rc;

	fo->pending++;
	while (fo->submit_mask != 0) {
		i = (uint32_t)__builtin_ctz(fo->submit_mask);
		bit = 1u << i;
		fo->idx[i] = (uint8_t)i;
		rc = ops->submit(fo, i, &fo->idx[i]);
		if (likely(rc == 0)) {
			fo->pending++;
			fo->sent_mask |= bit;
			if (ops->app) {
				fanout_member(fo, i)->app_io++;
			}
		} else if (rc == -ENOMEM) {
			if (ops->nomem == GGA_FANOUT_WAIT) {
				if (fanout_wait(fo, i)) {
					break;
				}
				continue;
			}
			if (ops->nomem == GGA_FANOUT_LATER) {
				break;
			}
			fo->short_mask |= bit;
		} else if (rc != -ENODEV) {
			gga_fanout_fail(fo, i, ops->refused);
		}
		fo->submit_mask &= ~bit;
	}
	gga_fanout_put(fo);
}

void
gga_fanout_fail(struct gga_fanout *fo, uint32_t i, const char *why)
{
	fo->fail_mask |= 1u << i;
	if (why != NULL) {
		gga_member_fail(fo->disk, i, why);
	}
}

void
gga_fanout_app_io_done(struct bdev_io *io, bool success, void *cb_arg)
{
	uint32_t i;
	struct gga_fanout *fo = gga_fanout_of(cb_arg, &i);

	if (success) {
		gga_fanout_ok(fo, i);
	} else if (!gga_member_io_fenced(fo->disk, io)) {
		/* (Fenced: not counted, and the member is fine.) */
		gga_fanout_fail(fo, i, fo->ops->failed);
	}
	bdev_free_io(io);
	gga_member_app_io_done(fanout_member(fo, i));
	gga_fanout_put(fo);
}
