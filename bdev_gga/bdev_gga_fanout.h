/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The calls of bdev_gga_fanout.c: one member fan-out, the I/O of one step
 * sent to a mask of members and joined. Every place that sends member I/O
 * to several members at once uses it: the I/O path's phases
 * (bdev_gga_io.c), recovery chunks (bdev_gga_walk.c), bitmap flushes
 * (bdev_gga_bitmap.c), superblock updates (bdev_gga_sb.c) and creation's
 * superblock reads, zeroing and region writes (bdev_gga_create.c).
 *
 * The owner keeps a struct gga_fanout inline in its own state (no
 * allocation), gives it a table of what differs (struct gga_fanout_ops:
 * how to submit to one member, what to do once all have answered, what a
 * member without a bdev_io to spare does), and starts it with a mask. Each
 * member I/O completes with cb_arg = &fo->idx[i]; the owner's completion
 * (or gga_fanout_app_io_done) reads the result into the masks with
 * gga_fanout_ok() or gga_fanout_fail(), the one path that fails a member,
 * and ends with gga_fanout_put(), which calls ops->done once every member
 * submitted to has answered and none is left to submit. The start and the
 * submission loop are inline here, so that the I/O path (whose ops are a
 * constant) calls its own submit and done directly.
 *
 * This header stands below bdev_gga_disk.h (which embeds the structure)
 * and includes none of the gga bdev's own headers but bdev_gga.h.
 */
#ifndef GGA_BDEV_GGA_FANOUT_H
#define GGA_BDEV_GGA_FANOUT_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "gga/bdev.h"
#include "gga/util.h"

#include "bdev_gga.h"

struct gga_disk;
struct gga_fanout;

/* What a member whose submission finds no bdev_io to spare (-ENOMEM) does. */
enum gga_fanout_nomem {
	/*
	 * Wait for one on that member's channel (ops->channel;
	 * bdev_queue_io_wait), then go on from that member; the members
	 * already submitted to carry on meanwhile.
	 */
	GGA_FANOUT_WAIT = 0,
	/* Stop, the member left in submit_mask: the owner calls gga_fanout_submit() later. */
	GGA_FANOUT_LATER,
	/* Go on without it (in short_mask): the owner decides what a short fan-out is worth. */
	GGA_FANOUT_SKIP,
};

struct gga_fanout_ops {
	/*
	 * Submit member i's I/O with completion context cb_arg. Returns 0;
	 * -ENOMEM (no bdev_io to spare: see nomem); -ENODEV (the member is
	 * going away: left out, neither failed nor counted); or another error
	 * (refused: in fail_mask, and the member failed for `refused`).
	 */
	int (*submit)(struct gga_fanout *fo, uint32_t i, void *cb_arg);
	/* Every member submitted to has answered and none is left to submit. */
	void (*done)(struct gga_fanout *fo);
	/* GGA_FANOUT_WAIT: the channel on which member i's submission waits. */
	struct io_channel *(*channel)(struct gga_fanout *fo, uint32_t i);
	enum gga_fanout_nomem nomem;
	/*
	 * App thread I/O on member->app_ch: each submitted I/O counts in the
	 * member's app_io (the app thread's watchdog, a close deferred until
	 * it ends) until gga_fanout_app_io_done() ends it.
	 */
	bool app;
	/* Why a member that refuses a submission is failed; NULL: it is not (fail_mask only). */
	const char *refused;
	/* gga_fanout_app_io_done(): why a member whose I/O failed is failed. */
	const char *failed;
};

struct gga_fanout {
	const struct gga_fanout_ops *ops;
	struct gga_disk *disk;
	uint32_t submit_mask; /* members still to submit to */
	uint32_t pending;     /* member I/Os in flight, and one while submitting */
	uint32_t sent_mask;   /* members submitted to */
	uint32_t ok_mask;     /* members whose I/O succeeded */
	uint32_t fail_mask;   /* members whose I/O failed or was refused */
	uint32_t short_mask;  /* GGA_FANOUT_SKIP: members left out for want of a bdev_io */
	/*
	 * What a member I/O's completion is given: &idx[i], which holds i and
	 * leads back to the fan-out (gga_fanout_of()). One byte per member:
	 * every bdev_io of the pool carries this context.
	 */
	uint8_t idx[BDEV_GGA_MAX_MEMBERS];
	struct bdev_io_wait_entry wait; /* GGA_FANOUT_WAIT */
};

/* Submit to the members left in submit_mask (GGA_FANOUT_LATER: the owner's retry). */
void gga_fanout_submit(struct gga_fanout *fo);
/*
 * Member i's I/O failed, or its submission was refused: counted in
 * fail_mask and, unless why is NULL, the member is failed for why
 * (gga_member_fail).
 */
void gga_fanout_fail(struct gga_fanout *fo, uint32_t i, const char *why);
/*
 * The completion of an app thread fan-out (ops->app): success counts the
 * member in ok_mask; a failure fails it for ops->failed, but for a
 * Reservation Conflict (the front is fenced, the member is fine: neither);
 * then the bdev_io is freed, the member's app_io ends and the answer is in
 * (gga_fanout_put).
 */
void gga_fanout_app_io_done(struct bdev_io *io, bool success, void *cb_arg);
/* GGA_FANOUT_WAIT: wait for a bdev_io for member i. False if one came free meanwhile. */
bool gga_fanout_wait(struct gga_fanout *fo, uint32_t i);
/* ops->app: member i's I/O was submitted (its app_io counts it). */
void gga_fanout_app_sent(struct gga_fanout *fo, uint32_t i);

/* The fan-out of a member I/O's completion context, and the member (*i). */
static inline struct gga_fanout *
gga_fanout_of(void *cb_arg, uint32_t *i)
{
	uint8_t *idx = cb_arg;

	*i = *idx;
	return container_of(idx - *i, struct gga_fanout, idx[0]);
}

static inline void
gga_fanout_ok(struct gga_fanout *fo, uint32_t i)
{
	fo->ok_mask |= 1u << i;
}

/*
 * A member's answer is in: the fan-out ends (ops->done) with the last. An
 * owner that names its own ops (a constant) calls done directly.
 */
static inline void
gga_fanout_put_ops(struct gga_fanout *fo, const struct gga_fanout_ops *ops)
{
	if (--fo->pending == 0 && fo->submit_mask == 0) {
		ops->done(fo);
	}
}

static inline void
gga_fanout_put(struct gga_fanout *fo)
{
	gga_fanout_put_ops(fo, fo->ops);
}

/*
 * gga_fanout_submit() with fo's ops given: inline, so that the I/O path,
 * whose ops are a constant, calls its submit and done directly.
 */
static inline void
gga_fanout_submit_ops(struct gga_fanout *fo, const struct gga_fanout_ops *ops)
{
	uint32_t i, bit;
	int rc;

	/* One count of its own keeps the answers from ending it while it submits. */
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
				gga_fanout_app_sent(fo, i);
			}
		} else if (rc == -ENOMEM) {
			if (ops->nomem == GGA_FANOUT_WAIT) {
				if (gga_fanout_wait(fo, i)) {
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
	gga_fanout_put_ops(fo, ops);
}

/*
 * Send ops's I/O to the members in mask (on the owner's thread). Returns
 * false when it ended at once, nothing submitted and nothing left to
 * submit (ops->done has run); true when it goes on.
 */
static inline bool
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
	/* The start's own count: `going` is read before the fan-out may end. */
	fo->pending = 1;
	gga_fanout_submit_ops(fo, ops);
	going = (fo->sent_mask | fo->submit_mask) != 0;
	gga_fanout_put_ops(fo, ops);
	return going;
}

#endif /* GGA_BDEV_GGA_FANOUT_H */
