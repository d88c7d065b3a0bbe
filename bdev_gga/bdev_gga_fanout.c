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
#include "bdev_gga_fanout.h"
#include "bdev_gga_member.h"
#include "bdev_gga_remove.h"

static inline struct gga_member *
fanout_member(struct gga_fanout *fo, uint32_t i)
{
	return &fo->disk->members[i];
}

static void
fanout_wait_done(void *arg)
{
	gga_fanout_submit(arg);
}

bool
gga_fanout_wait(struct gga_fanout *fo, uint32_t i)
{
	fo->wait.bdev = fanout_member(fo, i)->bdev;
	fo->wait.cb_fn = fanout_wait_done;
	fo->wait.cb_arg = fo;
	return bdev_queue_io_wait(fo->wait.bdev, fo->ops->channel(fo, i), &fo->wait) == 0;
}

void
gga_fanout_submit(struct gga_fanout *fo)
{
	gga_fanout_submit_ops(fo, fo->ops);
}

void
gga_fanout_app_sent(struct gga_fanout *fo, uint32_t i)
{
	fanout_member(fo, i)->app_io++;
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
