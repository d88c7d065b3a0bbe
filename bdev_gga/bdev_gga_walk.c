/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The walk of a gga bdev (app thread): one pass at a time over the logical
 * space in chunks, for a recovery (resync of the regions marked in the
 * write-intent bitmap, or a rebuild of every block) or a scrub (every block,
 * or at assembly the marked regions only). Each chunk is taken under the
 * range lock: the online members are read, every block resolved as a read
 * would (docs/FORMAT.md 7.2), and the recovered members' fragments (and any
 * bad one found on the way) rebuilt from the chosen version and written. The
 * members being recovered take every front write meanwhile and are read by
 * nobody. While the front has I/O a pass is held to its rate; its position
 * is persisted in the superblocks every few seconds so that a front restart
 * resumes it. Members come to a pass through bdev_gga_recover.c (re-add,
 * replace) and the assembly.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gga/bdev_module.h"
#include "gga/log.h"
#include "gga/util.h"

#include "bdev_gga_bitmap.h"
#include "bdev_gga_fanout.h"
#include "bdev_gga_front.h"
#include "bdev_gga_io.h"
#include "bdev_gga_member.h"
#include "bdev_gga_remove.h"
#include "bdev_gga_walk.h"

#define WALK_TICK_US        1000u
#define WALK_DEPTH          8u
#define WALK_CHECKPOINT_SEC 2u
/*
 * The front counts as idle after this long without a new request and with none
 * in flight: a pass then goes unlimited.
 */
#define WALK_IDLE_MS        50u
/* After a pass failed, wait this long before the next attempt. */
#define WALK_RETRY_SEC      10u
#define MIB                 (1024.0 * 1024.0)

struct walk_op {
	struct gga_walk *walk;
	uint8_t *buf; /* n regions of chunk_blocks member blocks */
	uint64_t lba;
	uint32_t blocks;
	uint32_t write_mask;
	bool active;
	bool writing;
	/*
	 * The phase's member I/O; a member without a bdev_io to spare stays in
	 * fo.submit_mask and the walk's poller tries again.
	 */
	struct gga_fanout fo;
};

struct gga_walk {
	struct gga_disk *disk;
	bool scrub;
	bool rebuild;     /* every block (else marked regions only) */
	bool marked_only; /* scrub: the regions marked in the bitmap only */
	uint32_t targets; /* members being recovered */
	uint32_t checked; /* scrub: the members it started with, all read for every block */
	uint64_t cursor;  /* next block to issue */
	uint64_t end;
	uint64_t blocks_done;
	uint64_t blocks_copied;
	uint64_t regions_done;
	uint64_t regions_total;
	uint64_t repaired;
	uint64_t unrecoverable;
	uint32_t rate;        /* MiB/s, 0 = unlimited */
	double tokens;        /* bytes that may be issued */
	uint64_t front_seen;  /* the front's request count last looked at */
	uint64_t front_ticks; /* when it last changed */
	uint64_t last_ticks;
	uint64_t start_ticks;
	uint64_t ckpt_ticks;
	uint32_t chunk_blocks;
	size_t stride;
	uint32_t inflight;
	bool in_pump;
	bool pump_again;
	bool stopping;
	int result;
	struct poller *poller;
	struct gga_codec_scratch *scratch;
	uint8_t *heal;   /* n member blocks */
	uint8_t *bounce; /* one logical block */
	struct walk_op ops[WALK_DEPTH];
};

static double
ticks_to_sec(uint64_t t)
{
	return (double)t / (double)ticks_hz();
}

/* ---------------------------------------------------------------------- */
/* The walk                                                                */
/* ---------------------------------------------------------------------- */

static void walk_pump(struct gga_walk *walk);
static void walk_issue(struct gga_walk *walk);
static void walk_checkpoint(struct gga_walk *walk, bool force);
static void walk_finish(struct gga_walk *walk);
static int scrub_start(struct gga_disk *disk, uint32_t rate_mib_s, bool marked_only);

static void
walk_free(struct gga_walk *walk)
{
	uint32_t i;

	poller_unregister(&walk->poller);
	for (i = 0; i < WALK_DEPTH; i++) {
		env_dma_free(walk->ops[i].buf);
	}
	gga_codec_scratch_free(walk->scratch);
	free(walk->heal);
	free(walk->bounce);
	free(walk);
}

static struct gga_walk *
walk_alloc(struct gga_disk *disk)
{
	struct gga_walk *walk = calloc(1, sizeof(*walk));
	uint32_t i;

	if (walk == NULL) {
		return NULL;
	}
	walk->disk = disk;
	walk->chunk_blocks = gga_test_knobs.chunk_blocks != 0 ?
				     gga_test_knobs.chunk_blocks :
				     GGA_MAX(1u, GGA_CHUNK_BYTES / disk->block_size);
	walk->stride = (size_t)walk->chunk_blocks * disk->mbs;
	walk->heal = malloc((size_t)disk->n * disk->mbs);
	walk->bounce = malloc(disk->block_size);
	if (walk->heal == NULL || walk->bounce == NULL ||
	    gga_codec_scratch_alloc(disk->codec, &walk->scratch) != 0) {
		walk_free(walk);
		return NULL;
	}
	for (i = 0; i < WALK_DEPTH; i++) {
		walk->ops[i].walk = walk;
		walk->ops[i].buf = env_dma_zmalloc((size_t)disk->n * walk->stride, 0);
		if (walk->ops[i].buf == NULL) {
			walk_free(walk);
			return NULL;
		}
	}
	return walk;
}

static uint8_t *
op_block(const struct walk_op *op, uint32_t m, uint32_t b)
{
	const struct gga_disk *disk = op->walk->disk;

	return op->buf + (size_t)m * op->walk->stride + (size_t)b * disk->mbs;
}

static void op_phase_done(struct walk_op *op);

/* Submit the phase's read or write of the chunk to member i. */
static int
op_submit_one(struct gga_fanout *fo, uint32_t i, void *cb_arg)
{
	struct walk_op *op = container_of(fo, struct walk_op, fo);
	struct gga_disk *disk = op->walk->disk;
	struct gga_member *member = &disk->members[i];

	if (member->app_ch == NULL || member->removing) {
		return -ENODEV;
	}
	if (op->writing) {
		return bdev_write_blocks(member->desc, member->app_ch, op_block(op, i, 0),
					 disk->data_offset + op->lba, op->blocks,
					 gga_fanout_app_io_done, cb_arg);
	}
	return bdev_read_blocks(member->desc, member->app_ch, op_block(op, i, 0),
				disk->data_offset + op->lba, op->blocks, gga_fanout_app_io_done,
				cb_arg);
}

static void
op_fanout_done(struct gga_fanout *fo)
{
	op_phase_done(container_of(fo, struct walk_op, fo));
}

/* A chunk's reads or writes, whose failure fails the member for `why`. */
#define OP_FANOUT(why)                                                                      \
	{                                                                                   \
		.submit = op_submit_one, .done = op_fanout_done, .nomem = GGA_FANOUT_LATER, \
		.app = true, .refused = "recovery I/O not submitted", .failed = (why),      \
	}

static const struct gga_fanout_ops op_read_fanout = OP_FANOUT("a recovery read failed");
static const struct gga_fanout_ops op_write_fanout = OP_FANOUT("a recovery write failed");

/*
 * Read or write the chunk on the members in mask; the phase ends once
 * nothing is in flight or left to submit.
 */
static void
op_submit(struct walk_op *op, uint32_t mask, bool write)
{
	op->writing = write;
	gga_fanout_start(&op->fo, write ? &op_write_fanout : &op_read_fanout, op->walk->disk, mask);
}

static void
op_end(struct walk_op *op)
{
	struct gga_walk *walk = op->walk;

	gga_lock_release(walk->disk, op->lba, op->blocks);
	op->active = false;
	walk->inflight--;
	walk_pump(walk);
}

/* Mark a fragment corrupt on purpose: an unreadable block must stay unreadable. */
static void
poison_fragment(const struct gga_disk *disk, uint8_t *frag)
{
	memset(frag, 0, disk->frag_size);
	memset(frag + disk->frag_size, 0xff, GGA_FRAG_MD_SIZE);
}

/* Copy the rebuilt fragments of the members in mask into the op's block b. */
static void
op_take_rebuilt(struct walk_op *op, uint32_t b, uint32_t mask)
{
	const struct gga_disk *disk = op->walk->disk;
	uint32_t i;

	for (i = 0; i < disk->n; i++) {
		if (mask & (1u << i)) {
			memcpy(op_block(op, i, b), op->walk->heal + (size_t)i * disk->mbs,
			       disk->mbs);
		}
	}
}

/*
 * The chunk is read: resolve every block (once: a recovery rebuilds its
 * members' fragments in the same pass, a scrub only checks) and rebuild what
 * must be written: the recovered members' fragments, and any fragment found
 * bad on the way.
 */
static void
op_rebuild(struct walk_op *op)
{
	struct gga_walk *walk = op->walk;
	struct gga_disk *disk = walk->disk;
	const void *fd[GGA_CODEC_MAX_FRAGS] = { NULL }, *fm[GGA_CODEC_MAX_FRAGS] = { NULL };
	void *od[GGA_CODEC_MAX_FRAGS] = { NULL }, *om[GGA_CODEC_MAX_FRAGS] = { NULL };
	uint32_t present = op->fo.ok_mask, targets = walk->targets & gga_write_mask(disk);
	uint32_t b, i, bad, charge;
	struct gga_decode_info info;
	uint8_t *frag;
	int rc;

	op->write_mask = targets;
	for (i = 0; i < disk->n; i++) {
		od[i] = walk->heal + (size_t)i * disk->mbs;
		om[i] = (uint8_t *)od[i] + disk->frag_size;
	}
	for (b = 0; b < op->blocks; b++) {
		for (i = 0; i < disk->n; i++) {
			frag = op_block(op, i, b);
			fd[i] = (present & (1u << i)) ? frag : NULL;
			fm[i] = (present & (1u << i)) ? frag + disk->frag_size : NULL;
		}
		if (targets != 0) {
			rc = gga_codec_rebuild(disk->codec, walk->scratch, fd, fm, present,
					       op->lba + b, targets, od, om, &info);
		} else {
			rc = gga_codec_decode(disk->codec, walk->scratch, fd, fm, present,
					      op->lba + b, walk->bounce, &info);
		}
		if (rc == 0 && (info.valid_mask & targets) != 0 &&
		    ((info.orphan_mask & ~targets) != 0 ||
		     ((uint32_t)__builtin_popcount(info.valid_mask & ~targets) < disk->k &&
		      (info.hidden_mask & ~targets) != 0))) {
			/*
			 * The version chosen takes fragments of members that missed
			 * writes, and an in-sync member holds a newer one, or, where
			 * it needs them to reach k, may hold one behind a fragment
			 * too damaged to say: stale fragments never outvote the
			 * newest version (a blank one would claim "never written").
			 * Nothing is repaired; the block stays as unreadable as it
			 * was.
			 */
			rc = -ESTALE;
		}
		if (rc != 0) {
			walk->unrecoverable++;
			ERRLOG("gga bdev '%s': lba %" PRIu64
			       " cannot be resolved from members 0x%x "
			       "during %s\n",
			       disk->bdev.name, op->lba + b, present,
			       walk->scrub ? "scrub" : "recovery");
			for (i = 0; i < disk->n; i++) {
				if (targets & (1u << i)) {
					poison_fragment(disk, op_block(op, i, b));
				}
			}
			continue;
		}
		op_take_rebuilt(op, b, targets);
		/* The targets are rewritten anyway (a resync reads them too: see op_start). */
		bad = present & ~info.valid_mask & ~targets;
		if (bad == 0 || (!disk->repair && !walk->scrub)) {
			continue;
		}
		/* Rare: a fragment found corrupt, stale or torn on the way is rewritten too. */
		if (gga_codec_rebuild(disk->codec, walk->scratch, fd, fm, present, op->lba + b, bad,
				      od, om, NULL) != 0) {
			walk->unrecoverable++;
			continue;
		}
		op_take_rebuilt(op, b, bad);
		walk->repaired += (uint64_t)__builtin_popcount(bad);
		/* Charged as a read under the lock is: never for fragments gga poisoned. */
		charge = bad & info.corrupt_mask & ~info.poison_mask;
		if (!gga_bitmap_marked(disk, op->lba + b)) {
			charge |= bad & info.stale_mask;
		}
		if (charge != 0) {
			gga_member_charge(disk, op->lba + b, charge);
		}
		op->write_mask |= bad;
	}
}

/*
 * A member the scrub started with was not read (it failed, or is going):
 * the blocks can no longer be checked against all their fragments, and a
 * corrupt fragment among the rest would be counted unrecoverable although
 * the member's return (and its recovery) may mend it. The scrub fails
 * instead, once; a new one can be started when the array is whole again.
 */
static void
scrub_member_lost(struct gga_walk *walk, uint32_t lost)
{
	char label[160];

	if (walk->stopping) {
		return;
	}
	NOTICELOG("gga bdev '%s': scrub failed: member %s left it\n", walk->disk->bdev.name,
		  gga_member_label(walk->disk, (uint32_t)__builtin_ctz(lost), label,
				   sizeof(label)));
	walk->result = -EIO;
	walk->stopping = true;
}

static void
op_phase_done(struct walk_op *op)
{
	struct gga_walk *walk = op->walk;
	struct gga_disk *disk = walk->disk;
	uint32_t live = gga_live_mask(disk);

	if (op->writing) {
		walk->blocks_done += op->blocks;
		if ((op->fo.ok_mask & walk->targets) != 0) {
			walk->blocks_copied += op->blocks;
		}
		op_end(op);
		return;
	}
	if (walk->scrub && (op->fo.ok_mask & walk->checked) != walk->checked) {
		scrub_member_lost(walk, walk->checked & ~op->fo.ok_mask);
		op_end(op);
		return;
	}
	if ((uint32_t)__builtin_popcount(op->fo.ok_mask & ~walk->targets) < disk->k) {
		if ((uint32_t)__builtin_popcount(live) >= disk->k && !walk->stopping) {
			/* A member failed under the read: read the chunk again from the rest. */
			op_submit(op, live, false);
			return;
		}
		walk->result = -EIO;
		walk->stopping = true;
		op_end(op);
		return;
	}
	op_rebuild(op);
	if (op->write_mask == 0) {
		walk->blocks_done += op->blocks;
		op_end(op);
		return;
	}
	/* Ends in op_phase_done() even if nothing could be submitted. */
	op_submit(op, op->write_mask, true);
}

/*
 * The members a chunk is read from: the live ones and, in a resync, the
 * members being resynced too. Their fragments of blocks not written while
 * they were away are still good and take part in resolving the block (the
 * generations leave out those that missed a write), so a fragment found
 * corrupt on a live member is mended from them instead of condemning the
 * block. A rebuild's targets are blank or foreign: nothing to gain there.
 */
static uint32_t
op_read_mask(const struct gga_walk *walk)
{
	uint32_t mask = gga_live_mask(walk->disk);

	if (!walk->scrub && !walk->rebuild) {
		mask |= walk->targets & gga_write_mask(walk->disk);
	}
	return mask;
}

static void
op_start(struct gga_walk *walk, struct walk_op *op, uint64_t lba, uint32_t blocks)
{
	op->lba = lba;
	op->blocks = blocks;
	op->active = true;
	walk->inflight++;
	op_submit(op, op_read_mask(walk), false);
}

/* Persist where a recovery stands: everything below the oldest chunk in flight is done. */
static void
walk_checkpoint(struct gga_walk *walk, bool force)
{
	struct gga_lc_event ev = { .type = GGA_LC_EV_PASS_CHECKPOINT };
	struct gga_disk *disk = walk->disk;
	uint64_t now = ticks_get(), every, starts[WALK_DEPTH];
	uint32_t i, count = 0;

	every = gga_test_knobs.checkpoint_ms != 0 ?
			(uint64_t)gga_test_knobs.checkpoint_ms * ticks_hz() / 1000 :
			(uint64_t)WALK_CHECKPOINT_SEC * ticks_hz();
	if (walk->scrub || (!force && now - walk->ckpt_ticks < every)) {
		return;
	}
	walk->ckpt_ticks = now;
	for (i = 0; i < WALK_DEPTH; i++) {
		if (walk->ops[i].active) {
			starts[count++] = walk->ops[i].lba;
		}
	}
	ev.offset = gga_lc_checkpoint_at(walk->cursor, starts, count);
	if (ev.offset != disk->rec_offset) {
		/* The module records it (and persists it) only while its pass runs. */
		gga_lc_step(disk, &ev, false, "checkpoint", NULL, NULL);
	}
}

/* Does the walk visit only the regions marked in the bitmap? */
static bool
walk_marked(const struct gga_walk *walk)
{
	return walk->scrub ? walk->marked_only : !walk->rebuild;
}

/* The next chunk to issue at or after the cursor, or false at the end. */
static bool
walk_next_chunk(struct gga_walk *walk, uint64_t *lba, uint32_t *blocks)
{
	struct gga_disk *disk = walk->disk;
	uint32_t rblocks = gga_bitmap_region_blocks(disk);
	uint64_t region, region_end;

	while (walk->cursor < walk->end) {
		region = walk->cursor / rblocks;
		region_end = GGA_MIN((region + 1) * rblocks, walk->end);
		if (walk_marked(walk) && !gga_bitmap_test(disk, region)) {
			walk->blocks_done += region_end - walk->cursor;
			walk->cursor = region_end;
			continue;
		}
		*lba = walk->cursor;
		*blocks = (uint32_t)GGA_MIN((uint64_t)walk->chunk_blocks,
					    region_end - walk->cursor);
		return true;
	}
	return false;
}

/*
 * Issue chunks while the rate and the depth allow. Completions call it too,
 * and a chunk can complete inside it: a nested call only asks the running
 * one to go round again, so the walk is never freed under a caller.
 */
static void
walk_pump(struct gga_walk *walk)
{
	if (walk->in_pump) {
		walk->pump_again = true;
		return;
	}
	walk->in_pump = true;
	do {
		walk->pump_again = false;
		walk_issue(walk);
	} while (walk->pump_again);
	walk->in_pump = false;
	walk_checkpoint(walk, false);
	if (walk->inflight == 0 && (walk->stopping || walk->cursor >= walk->end)) {
		walk_finish(walk);
	}
}

static void
walk_issue(struct gga_walk *walk)
{
	struct gga_disk *disk = walk->disk;
	uint64_t now = ticks_get(), lba, front, hold;
	uint32_t i, blocks;
	bool limited;
	double cap;

	if (gga_disk_gated(disk)) {
		/* A front that stepped down writes no member: the pass ends here. */
		walk->stopping = true;
		return;
	}
	/*
	 * As md does: the rate limits a pass while the front has I/O; with none
	 * for WALK_IDLE_MS the pass goes at full speed.
	 */
	front = __atomic_load_n(&disk->front_ios, __ATOMIC_RELAXED);
	if (front != walk->front_seen ||
	    front != __atomic_load_n(&disk->front_done, __ATOMIC_RELAXED)) {
		/* New requests, or requests still in flight: the front is not idle. */
		walk->front_seen = front;
		walk->front_ticks = now;
	}
	limited = walk->rate != 0 && now - walk->front_ticks < WALK_IDLE_MS * ticks_hz() / 1000;
	if (limited) {
		/* At most two chunks at once: a limited pass comes in small bursts. */
		cap = 2.0 * walk->chunk_blocks * disk->block_size;
		walk->tokens += ticks_to_sec(now - walk->last_ticks) * walk->rate * MIB;
		walk->tokens = GGA_MIN(walk->tokens, cap);
	}
	walk->last_ticks = now;
	if (!walk->scrub && disk->pass_stop) {
		/* The lifecycle module stopped the pass (gga_lc_view_now()). */
		walk->result = walk->result != 0 ? walk->result : -EIO;
		walk->stopping = true;
	}
	if (!walk->scrub && (walk->targets & gga_write_mask(disk)) == 0) {
		/* Every member being recovered failed again. */
		walk->result = walk->result != 0 ? walk->result : -ENODEV;
		walk->stopping = true;
	}
	while (!walk->stopping && walk->inflight < WALK_DEPTH) {
		if (limited && walk->tokens < (double)walk->chunk_blocks * disk->block_size) {
			break;
		}
		if (!walk_next_chunk(walk, &lba, &blocks)) {
			break;
		}
		hold = __atomic_load_n(&disk->walk_hold_at, __ATOMIC_RELAXED);
		if (!walk->scrub && hold != 0 && lba >= hold) {
			/* A test holds the pass here. */
			break;
		}
		if (!gga_lock_try(disk, lba, blocks)) {
			/* Front I/O holds these blocks: the next tick tries again. */
			break;
		}
		if (walk_marked(walk) && lba % gga_bitmap_region_blocks(disk) == 0) {
			/* Counted once issued: a chunk held back above is tried again. */
			walk->regions_done++;
		}
		walk->cursor += blocks;
		walk->tokens -= (double)blocks * disk->block_size;
		for (i = 0; i < WALK_DEPTH && walk->ops[i].active; i++) {
		}
		op_start(walk, &walk->ops[i], lba, blocks);
	}
}

static int
walk_poll(void *arg)
{
	struct gga_walk *walk = arg;
	uint32_t i;

	walk->in_pump = true;
	for (i = 0; i < WALK_DEPTH; i++) {
		if (walk->ops[i].active && walk->ops[i].fo.submit_mask != 0) {
			gga_fanout_submit(&walk->ops[i].fo);
		}
	}
	walk->in_pump = false;
	walk_pump(walk);
	return POLLER_BUSY;
}

static int
walk_start(struct gga_disk *disk, struct gga_walk *walk, uint64_t from)
{
	walk->end = disk->bdev.num_blocks;
	walk->cursor = from;
	walk->blocks_done = from;
	walk->start_ticks = walk->last_ticks = walk->ckpt_ticks = ticks_get();
	walk->tokens = 0;
	walk->poller = poller_register(walk_poll, walk, WALK_TICK_US, "gga_walk");
	if (walk->poller == NULL) {
		return -ENOMEM;
	}
	disk->walk = walk;
	return 0;
}

static void lc_carry_start(struct gga_disk *disk, const struct gga_lc_actions *act);

/* A pass failed: the next waits for the retry time. */
static void
walk_retry_later(struct gga_disk *disk)
{
	disk->rec_retry_ticks = ticks_get() +
				(gga_test_knobs.retry_ms != 0 ?
					 (uint64_t)gga_test_knobs.retry_ms * ticks_hz() / 1000 :
					 (uint64_t)WALK_RETRY_SEC * ticks_hz());
}

/*
 * A pass ended: the lifecycle module says who is online now (only a target
 * still rebuilding: one an I/O thread failed meanwhile stays failed) and
 * drops the checkpoint (done, failed or stopped, a checkpoint is resumed by
 * an assembly only: writes that land before the next pass may fall below
 * it). It may start the next pass at once (the walk is already detached).
 */
static void
recovery_finish(struct gga_walk *walk)
{
	struct gga_disk *disk = walk->disk;
	struct bdev_gga_recovery_info *last = &disk->last_recovery;
	struct gga_lc_event ev = { .type = GGA_LC_EV_PASS_DONE };
	uint32_t i, done = 0;

	if (walk->result == -ECANCELED && disk->destructing) {
		/*
		 * Deleted (GGA_LC_EV_DELETE ended the pass): the next assembly resumes
		 * from the last checkpoint persisted.
		 */
		walk_checkpoint(walk, true);
	} else {
		ev.result = walk->result;
		ev.mask = walk->targets;
		done = gga_lc_step(disk, &ev, false,
				   walk->result == 0 ? (walk->rebuild ? "rebuilt" : "resynced") :
				   walk->result == -ECANCELED ? "recovery stopped" :
								"recovery failed",
				   NULL, NULL) &
		       walk->targets;
		for (i = 0; i < disk->n; i++) {
			if ((done & (1u << i)) &&
			    gga_member_state(&disk->members[i]) == BDEV_GGA_MEMBER_ONLINE) {
				disk->members[i].forced = false;
			}
		}
	}
	if (walk->result == 0) {
		/* Their bitmap areas are as old as their outage: give them today's. */
		gga_bitmap_rewrite(disk);
	} else {
		walk_retry_later(disk);
	}
	memset(last, 0, sizeof(*last));
	last->valid = true;
	last->rebuild = walk->rebuild;
	last->members = walk->targets;
	last->blocks_done = walk->blocks_done;
	last->blocks_total = walk->end;
	last->blocks_copied = walk->blocks_copied;
	last->regions_done = walk->regions_done;
	last->regions_total = walk->regions_total;
	last->fragments_repaired = walk->repaired;
	last->unrecoverable_blocks = walk->unrecoverable;
	gga_lost_blocks_add(disk, walk->unrecoverable);
	last->rate_mib_s = walk->rate;
	last->seconds = ticks_to_sec(ticks_get() - walk->start_ticks);
	last->result = walk->result;
	NOTICELOG("gga bdev '%s': %s of members 0x%x %s: %" PRIu64 " regions, %" PRIu64
		  " blocks copied in %.1f s; %" PRIu64 " unrecoverable blocks, %" PRIu64
		  " corrupt fragments of other members repaired\n",
		  disk->bdev.name, walk->rebuild ? "rebuild" : "resync", walk->targets,
		  walk->result == 0          ? "done" :
		  walk->result == -ECANCELED ? "stopped" :
					       "failed",
		  walk->regions_done, walk->blocks_copied, last->seconds, walk->unrecoverable,
		  walk->repaired);
	gga_sb_kick(disk);
	(void)done;
}

static void
scrub_finish(struct gga_walk *walk)
{
	struct gga_disk *disk = walk->disk;
	struct bdev_gga_scrub_info *s = &disk->scrub;

	s->state = walk->result == 0          ? BDEV_GGA_SCRUB_DONE :
		   walk->result == -ECANCELED ? BDEV_GGA_SCRUB_STOPPED :
						BDEV_GGA_SCRUB_FAILED;
	s->marked_only = walk->marked_only;
	s->regions_done = walk->regions_done;
	s->blocks_done = walk->blocks_done;
	s->blocks_total = walk->end;
	s->fragments_repaired = walk->repaired;
	s->unrecoverable_blocks = walk->unrecoverable;
	if (s->state == BDEV_GGA_SCRUB_DONE && !walk->marked_only) {
		/* Every block was just looked at: the count is what it found. */
		gga_lost_blocks_set(disk, walk->unrecoverable);
	} else {
		gga_lost_blocks_add(disk, walk->unrecoverable);
	}
	s->seconds = ticks_to_sec(ticks_get() - walk->start_ticks);
	NOTICELOG("gga bdev '%s': %s %s: %" PRIu64 " of %" PRIu64 " blocks checked, %" PRIu64
		  " fragments repaired, %" PRIu64 " unrecoverable blocks, %.1f s\n",
		  disk->bdev.name, walk->marked_only ? "check of the marked regions" : "scrub",
		  s->state == BDEV_GGA_SCRUB_DONE    ? "done" :
		  s->state == BDEV_GGA_SCRUB_STOPPED ? "stopped" :
						       "failed",
		  s->blocks_done, s->blocks_total, s->fragments_repaired, s->unrecoverable_blocks,
		  s->seconds);
}

static void
walk_finish(struct gga_walk *walk)
{
	struct gga_disk *disk = walk->disk;

	/* Detached first: the end of a recovery may start the next pass. */
	disk->walk = NULL;
	if (walk->scrub) {
		scrub_finish(walk);
	} else {
		recovery_finish(walk);
	}
	walk_free(walk);
	if (disk->destructing) {
		gga_disk_try_free(disk);
		return;
	}
	gga_recover_maybe_start(disk);
}

/* ---------------------------------------------------------------------- */
/* Recovery passes                                                         */
/* ---------------------------------------------------------------------- */

/* Members that can be recovered now. */
static uint32_t
recover_candidates(const struct gga_disk *disk)
{
	const struct gga_member *member;
	uint32_t i, mask = 0;

	for (i = 0; i < disk->n; i++) {
		member = &disk->members[i];
		if (gga_member_state(member) == BDEV_GGA_MEMBER_STALE && !member->probing &&
		    member->app_ch != NULL && !member->removing &&
		    (disk->auto_readd || member->forced)) {
			mask |= 1u << i;
		}
	}
	return mask;
}

/*
 * Carry out a pass the lifecycle module started (gga_lc_take() already made
 * its targets rebuilding and set the checkpoint): the walk, from
 * act->pass_from. Without memory for it the targets wait again (stale).
 */
static void
lc_carry_start(struct gga_disk *disk, const struct gga_lc_actions *act)
{
	struct gga_lc_event ev = { .type = GGA_LC_EV_PASS_DONE };
	struct gga_walk *walk = walk_alloc(disk);
	char label[160];
	uint32_t i;

	disk->pass_stop = false;
	if (walk != NULL) {
		walk->rebuild = act->pass_rebuild;
		walk->targets = act->pass_targets;
		walk->rate = disk->rebuild_rate;
		walk->regions_total = walk->rebuild ? 0 : gga_bitmap_dirty(disk);
		if (walk_start(disk, walk, act->pass_from) != 0) {
			walk_free(walk);
			walk = NULL;
		}
	}
	if (walk == NULL) {
		/* A pass that failed at once: the module puts its targets back (stale). */
		ERRLOG("gga bdev '%s': out of memory for a recovery pass\n", disk->bdev.name);
		ev.result = -ENOMEM;
		ev.mask = act->pass_targets;
		walk_retry_later(disk);
		gga_lc_step(disk, &ev, false, "no memory for a pass", NULL, NULL);
		return;
	}
	for (i = 0; i < disk->n; i++) {
		if (act->pass_targets & (1u << i)) {
			NOTICELOG("gga bdev '%s': %s %s from block %" PRIu64 " (%" PRIu64
				  " marked regions)\n",
				  disk->bdev.name, walk->rebuild ? "rebuilding" : "resyncing",
				  gga_member_label(disk, i, label, sizeof(label)), act->pass_from,
				  walk->regions_total);
		}
	}
	gga_sb_kick(disk);
}

void
gga_lc_carry(struct gga_disk *disk, const struct gga_lc_actions *act)
{
	if ((act->flags & GGA_LC_ACT_STOP_PASS) && disk->walk != NULL && !disk->walk->scrub &&
	    !disk->walk->stopping) {
		/* Every target failed, or fewer than k members are left to read. */
		disk->walk->result = disk->walk->result != 0 ? disk->walk->result : -EIO;
		disk->walk->stopping = true;
	}
	if (act->flags & GGA_LC_ACT_START_PASS) {
		lc_carry_start(disk, act);
	} else if (act->flags & GGA_LC_ACT_PERSIST) {
		gga_sb_kick(disk);
	}
}

uint32_t
gga_lc_step(struct gga_disk *disk, const struct gga_lc_event *ev, bool hold_pass,
	    const char *reason,
	    const char *(*reason_of)(const struct gga_lc_view *v, const struct gga_lc_event *ev),
	    struct gga_lc_actions *act_out)
{
	struct gga_lc_actions act;
	uint32_t moved;

	moved = gga_lc_decide(disk, ev, hold_pass, reason, reason_of, &act);
	gga_lc_carry(disk, &act);
	if (act_out != NULL) {
		*act_out = act;
	}
	return moved;
}

static const char *
pass_start_reason(const struct gga_lc_view *v, const struct gga_lc_event *ev)
{
	(void)ev;
	return v->pass_rebuild ? "rebuild started" : "resync started";
}

/*
 * The disk starts: the pass its assembly started (gga_lc_assemble(), taken
 * by create: disk->pass_targets, the checkpoint it resumes from) is carried
 * out, its targets made rebuilding as the module decided; if none, one
 * starts if it may.
 */
void
gga_recover_start_assembled(struct gga_disk *disk)
{
	struct gga_lc_actions act;
	uint32_t i;

	if (disk->pass_targets == 0 || disk->walk != NULL || disk->destructing) {
		gga_recover_maybe_start(disk);
		return;
	}
	for (i = 0; i < disk->n; i++) {
		if (disk->pass_targets & (1u << i)) {
			gga_member_cas_state(disk, i, BDEV_GGA_MEMBER_STALE,
					     BDEV_GGA_MEMBER_REBUILDING,
					     disk->pass_rebuild ? "rebuild started" :
								  "resync started");
		}
	}
	memset(&act, 0, sizeof(act));
	act.flags = GGA_LC_ACT_START_PASS;
	act.pass_targets = disk->pass_targets;
	act.pass_rebuild = disk->pass_rebuild;
	act.pass_from = disk->rec_mask != 0 ? disk->rec_offset : 0;
	gga_lc_carry(disk, &act);
}

/*
 * Start a recovery pass if the lifecycle module says one may: the members
 * it recovers, rebuild or resync, and whether it resumes a checkpoint.
 * The I/O code only waits for the retry time and for probes under way (a
 * member a probe may bring back joins the same pass).
 */
void
gga_recover_maybe_start(struct gga_disk *disk)
{
	struct gga_lc_event ev = { .type = GGA_LC_EV_PASS_START };
	uint32_t i;

	if (disk->destructing || disk->walk != NULL) {
		if (disk->walk != NULL && disk->walk->scrub && recover_candidates(disk) != 0 &&
		    !disk->walk->stopping) {
			NOTICELOG("gga bdev '%s': scrub stopped: a member needs recovery\n",
				  disk->bdev.name);
			disk->walk->result = -ECANCELED;
			disk->walk->stopping = true;
		}
		return;
	}
	if (recover_candidates(disk) == 0 || ticks_get() < disk->rec_retry_ticks) {
		return;
	}
	for (i = 0; i < disk->n; i++) {
		if (disk->members[i].probing) {
			/* It may come back too: its probe's end starts one pass for both. */
			return;
		}
	}
	gga_lc_step(disk, &ev, false, NULL, pass_start_reason, NULL);
}

void
gga_recover_info(const struct gga_disk *disk, struct bdev_gga_recovery_info *rec,
		 struct bdev_gga_scrub_info *scrub)
{
	const struct gga_walk *walk = disk->walk;

	memset(rec, 0, sizeof(*rec));
	*scrub = disk->scrub;
	if (walk == NULL) {
		return;
	}
	if (walk->scrub) {
		scrub->regions_done = walk->regions_done;
		scrub->blocks_done = walk->blocks_done;
		scrub->blocks_total = walk->end;
		scrub->fragments_repaired = walk->repaired;
		scrub->unrecoverable_blocks = walk->unrecoverable;
		scrub->seconds = ticks_to_sec(ticks_get() - walk->start_ticks);
		return;
	}
	rec->active = true;
	rec->rebuild = walk->rebuild;
	rec->members = walk->targets;
	rec->blocks_done = walk->blocks_done;
	rec->blocks_total = walk->end;
	rec->blocks_copied = walk->blocks_copied;
	rec->regions_done = walk->regions_done;
	rec->regions_total = walk->regions_total;
	rec->rate_mib_s = walk->rate;
	rec->seconds = ticks_to_sec(ticks_get() - walk->start_ticks);
}

static int
scrub_start(struct gga_disk *disk, uint32_t rate_mib_s, bool marked_only)
{
	struct gga_walk *walk;

	if (disk->walk != NULL) {
		return -EBUSY;
	}
	if ((uint32_t)__builtin_popcount(gga_live_mask(disk)) < disk->k) {
		return -EIO;
	}
	walk = walk_alloc(disk);
	if (walk == NULL) {
		return -ENOMEM;
	}
	walk->scrub = true;
	walk->checked = gga_live_mask(disk);
	walk->marked_only = marked_only;
	walk->rate = rate_mib_s;
	walk->regions_total = marked_only ? gga_bitmap_dirty(disk) : 0;
	if (walk_start(disk, walk, 0) != 0) {
		walk_free(walk);
		return -ENOMEM;
	}
	memset(&disk->scrub, 0, sizeof(disk->scrub));
	disk->scrub.state = BDEV_GGA_SCRUB_RUNNING;
	disk->scrub.rate_mib_s = rate_mib_s;
	disk->scrub.blocks_total = walk->end;
	disk->scrub.marked_only = marked_only;
	if (marked_only) {
		NOTICELOG("gga bdev '%s': checking the %" PRIu64 " regions marked in the bitmap "
			  "(writes may have been torn by an unclean stop)\n",
			  disk->bdev.name, walk->regions_total);
	} else {
		NOTICELOG("gga bdev '%s': scrub started (%u MiB/s)\n", disk->bdev.name, rate_mib_s);
	}
	return 0;
}

int
bdev_gga_scrub_start(const char *name, uint32_t rate_mib_s)
{
	struct gga_disk *disk = gga_disk_lookup(name);

	if (disk == NULL) {
		return -ENODEV;
	}
	if (gga_disk_unready(disk, NULL) != NULL) {
		/* Not assembled (or a front that does not serve): nothing to check yet. */
		return -EAGAIN;
	}
	return scrub_start(disk, rate_mib_s, false);
}

int
bdev_gga_scrub_stop(const char *name)
{
	struct gga_disk *disk = gga_disk_lookup(name);

	if (disk == NULL) {
		return -ENODEV;
	}
	if (gga_disk_unready(disk, NULL) != NULL) {
		/* A scrub running when it stopped serving ends by itself (walk_issue()). */
		return -EAGAIN;
	}
	if (disk->walk == NULL || !disk->walk->scrub || disk->walk->stopping) {
		return -EALREADY;
	}
	disk->walk->result = -ECANCELED;
	disk->walk->stopping = true;
	return 0;
}

void
gga_walk_check_marked(struct gga_disk *disk)
{
	/*
	 * Regions still marked when an array is assembled may hold writes torn by
	 * an unclean stop: with every member in sync, check them now rather than
	 * on their first read.
	 */
	if (disk->walk == NULL && disk->check_marked && gga_disk_all_online(disk) &&
	    gga_bitmap_dirty(disk) > 0) {
		scrub_start(disk, disk->rebuild_rate, true);
	}
}

void
gga_walk_stop(struct gga_disk *disk)
{
	if (disk->walk != NULL) {
		disk->walk->result = -ECANCELED;
		disk->walk->stopping = true;
	}
}

void
gga_walk_set_rate(struct gga_disk *disk, uint32_t rate_mib_s)
{
	if (disk->walk != NULL && !disk->walk->scrub) {
		disk->walk->rate = rate_mib_s;
	}
}
