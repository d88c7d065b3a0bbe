/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The write-intent bitmap of a gga bdev (docs/FORMAT.md section 3.2): one
 * bit per region of logical space, kept in the reserved region of every
 * member. A region is marked on the members before a write into it is
 * issued, and cleared lazily, once every member is online and the region
 * has had no write for a whole sweep period. While a member is away the
 * marks stay, so a returning member resyncs only the regions written while
 * it was gone, and after an unclean stop only marked regions can hold
 * fragments that disagree.
 *
 * Threads: the I/O path (any thread) counts its writes per region and asks
 * for marks; the app thread owns the image, writes it and clears it. They
 * share per-region atomics only:
 *   state[r]    CLEAN -> WANTED (a writer asks) -> FLUSHING (the app thread
 *               writes it) -> MARKED (on the members; writers may go);
 *               MARKED -> CLEAN when the sweep clears it.
 *   writers[r]  writes in flight into the region.
 * A writer counts itself before it looks at the state, and the sweep
 * un-marks the state before it looks at the count (both sequentially
 * consistent), so a write never goes out into a region whose mark is being
 * cleared.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gga/bdev_module.h"
#include "gga/log.h"
#include "gga/util.h"

#include "bdev_gga_bitmap.h"
#include "bdev_gga_fanout.h"
#include "bdev_gga_member.h"
#include "bdev_gga_remove.h"
#include "bdev_gga_sb.h"

/* How often the lazy clearing looks (a region needs two idle looks to be cleared). */
#define BITMAP_SWEEP_US (1000u * 1000u)

enum region_state {
	REGION_CLEAN = 0,
	REGION_WANTED,
	REGION_FLUSHING,
	REGION_MARKED,
};

static bool close_step(struct gga_disk *disk);

int
gga_bitmap_create(struct gga_disk *disk, uint32_t region_shift, const uint8_t *image)
{
	struct gga_bitmap *bm;
	uint64_t r;

	bm = calloc(1, sizeof(*bm));
	if (bm == NULL) {
		return -ENOMEM;
	}
	bm->disk = disk;
	bm->block_shift = region_shift - (uint32_t)__builtin_ctz(disk->block_size);
	bm->regions = gga_bitmap_regions(disk->member_blocks - disk->data_offset, disk->block_size,
					 region_shift);
	bm->area_bytes = gga_bitmap_bytes(disk->frag_size);
	bm->first_block = gga_bitmap_offset(disk->frag_size) / disk->frag_size;
	bm->nblocks = disk->data_offset - bm->first_block;
	bm->state = calloc(bm->regions, 1);
	bm->writers = calloc(bm->regions, sizeof(*bm->writers));
	bm->touched = calloc(bm->regions, 1);
	bm->bits = calloc(bm->regions, 1);
	bm->incomp = calloc(bm->regions, 1);
	bm->packed = calloc(bm->area_bytes, 1);
	bm->io_buf = env_dma_zmalloc(bm->nblocks * disk->mbs, 0);
	if (bm->state == NULL || bm->writers == NULL || bm->touched == NULL || bm->bits == NULL ||
	    bm->incomp == NULL || bm->packed == NULL || bm->io_buf == NULL) {
		disk->bm = bm;
		gga_bitmap_destroy(disk);
		return -ENOMEM;
	}
	for (r = 0; image != NULL && r < bm->regions; r++) {
		if (image[r / 8] & (1u << (r % 8))) {
			bm->bits[r] = 1;
			bm->state[r] = REGION_MARKED;
			bm->dirty++;
		}
	}
	disk->bm = bm;
	disk->close_step = close_step;
	return 0;
}

static void bitmap_flush(struct gga_bitmap *bm);

void
gga_bitmap_encode_area(const struct gga_disk *disk, uint8_t *area)
{
	struct gga_bitmap *bm = disk->bm;
	uint64_t r;

	memset(bm->packed, 0, bm->area_bytes);
	for (r = 0; r < bm->regions; r++) {
		if (bm->bits[r]) {
			bm->packed[r / 8] |= (uint8_t)(1u << (r % 8));
		}
	}
	gga_area_scatter(disk, bm->packed, area, bm->area_bytes);
}

/* Mark `from` regions `to` after the flush, and let a new flush start. */
static void
regions_move(struct gga_bitmap *bm, uint8_t from, uint8_t to)
{
	uint8_t *p = bm->state, *end = bm->state + bm->regions;

	while ((p = memchr(p, from, (size_t)(end - p))) != NULL) {
		__atomic_store_n(p, to, __ATOMIC_SEQ_CST);
		p++;
	}
}

/*
 * The flush's member writes are over (or none was submitted): marks written
 * to every member that takes writes now let the writers that wanted them
 * go. A member that failed the write takes no writes. If none took it, the
 * writers see the array fail on their own.
 */
static void
flush_done(struct gga_fanout *fo)
{
	struct gga_bitmap *bm = container_of(fo, struct gga_bitmap, fo);
	struct gga_disk *disk = bm->disk;

	/* Marks count only once every member has them: a short flush does not. */
	regions_move(bm, REGION_FLUSHING,
		     fo->ok_mask != 0 && fo->short_mask == 0 ? REGION_MARKED : REGION_WANTED);
	bm->flushing = false;
	if (bm->again && fo->ok_mask != 0 && !bm->stopped) {
		bitmap_flush(bm);
		return;
	}
	gga_disk_try_free(disk);
}

static int
flush_submit(struct gga_fanout *fo, uint32_t i, void *cb_arg)
{
	struct gga_bitmap *bm = container_of(fo, struct gga_bitmap, fo);
	struct gga_member *member = &bm->disk->members[i];

	return bdev_write_blocks(member->desc, member->app_ch, bm->io_buf, bm->first_block,
				 bm->nblocks, gga_fanout_app_io_done, cb_arg);
}

static const struct gga_fanout_ops flush_fanout = {
	.submit = flush_submit,
	.done = flush_done,
	.nomem = GGA_FANOUT_SKIP,
	.app = true,
	.refused = "bitmap write not submitted",
	.failed = "bitmap write failed",
};

/* App thread: write the image to every member that takes writes. */
static void
bitmap_flush(struct gga_bitmap *bm)
{
	struct gga_disk *disk = bm->disk;
	struct gga_member *member;
	uint8_t *p, *end = bm->state + bm->regions;
	uint32_t i, targets = gga_write_mask(disk), mask = 0;

	if (bm->flushing) {
		bm->again = true;
		return;
	}
	bm->again = false;
	/* The regions wanted so far go into this flush. */
	for (p = bm->state; (p = memchr(p, REGION_WANTED, (size_t)(end - p))) != NULL; p++) {
		__atomic_store_n(p, REGION_FLUSHING, __ATOMIC_SEQ_CST);
		if (!bm->bits[p - bm->state]) {
			bm->bits[p - bm->state] = 1;
			bm->dirty++;
		}
	}
	gga_bitmap_encode_area(disk, bm->io_buf);
	bm->flushing = true;
	for (i = 0; i < disk->n && !gga_disk_gated(disk); i++) {
		/* (Gated: a front that does not serve writes nothing; its writes fail.) */
		member = &disk->members[i];
		if ((targets & (1u << i)) && member->app_ch != NULL && !member->removing) {
			mask |= 1u << i;
		}
	}
	/* Completes the flush at once if nothing was submitted. */
	gga_fanout_start(&bm->fo, &flush_fanout, disk, mask);
}

static void
flush_msg(void *arg)
{
	struct gga_bitmap *bm = arg;

	__atomic_store_n(&bm->kicked, false, __ATOMIC_RELEASE);
	if (bm->stopped || bm->disk->channels_gone) {
		gga_disk_try_free(bm->disk);
		return;
	}
	bitmap_flush(bm);
}

static void
bitmap_kick(struct gga_bitmap *bm)
{
	if (__atomic_exchange_n(&bm->kicked, true, __ATOMIC_ACQ_REL)) {
		return;
	}
	if (thread_send_msg(bm->disk->app_thread, flush_msg, bm) != 0) {
		__atomic_store_n(&bm->kicked, false, __ATOMIC_RELEASE);
	}
}

bool
gga_bitmap_hold(struct gga_disk *disk, uint64_t lba, uint32_t count, bool held)
{
	struct gga_bitmap *bm = disk->bm;
	uint64_t r, first = lba >> bm->block_shift, last = (lba + count - 1) >> bm->block_shift;
	uint8_t st, clean;
	bool ready = true;

	for (r = first; r <= last; r++) {
		if (!held) {
			__atomic_fetch_add(&bm->writers[r], 1, __ATOMIC_SEQ_CST);
			if (!bm->touched[r]) {
				__atomic_store_n(&bm->touched[r], 1, __ATOMIC_RELAXED);
			}
		}
		st = __atomic_load_n(&bm->state[r], __ATOMIC_SEQ_CST);
		if (likely(st == REGION_MARKED)) {
			continue;
		}
		ready = false;
		clean = REGION_CLEAN;
		if (st == REGION_CLEAN) {
			__atomic_compare_exchange_n(&bm->state[r], &clean, REGION_WANTED, false,
						    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		}
	}
	if (!ready) {
		bitmap_kick(bm);
	}
	return ready;
}

void
gga_bitmap_release(struct gga_disk *disk, uint64_t lba, uint32_t count)
{
	struct gga_bitmap *bm = disk->bm;
	uint64_t r, first = lba >> bm->block_shift, last = (lba + count - 1) >> bm->block_shift;

	for (r = first; r <= last; r++) {
		__atomic_fetch_sub(&bm->writers[r], 1, __ATOMIC_RELEASE);
	}
}

/*
 * App thread, the clear is READY: un-mark region r unless a writer is in it
 * (the state first, then the count: see the top of the file). Returns 1 if
 * it was cleared.
 */
static uint64_t
region_clear(struct gga_bitmap *bm, uint64_t r)
{
	uint8_t st = REGION_MARKED;

	if (!__atomic_compare_exchange_n(&bm->state[r], &st, REGION_CLEAN, false, __ATOMIC_SEQ_CST,
					 __ATOMIC_SEQ_CST)) {
		return 0;
	}
	if (__atomic_load_n(&bm->writers[r], __ATOMIC_SEQ_CST) != 0) {
		/* A writer got in: it keeps the mark (unless it already asked again). */
		st = REGION_CLEAN;
		__atomic_compare_exchange_n(&bm->state[r], &st, REGION_MARKED, false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		return 0;
	}
	bm->bits[r] = 0;
	bm->dirty--;
	return 1;
}

/*
 * App thread, every BITMAP_SWEEP_US: with every member online and nothing
 * being recovered, clear the marks of regions that no write touched since
 * the last sweep and none is writing now.
 */
static int
sweep_poll(void *arg)
{
	struct gga_bitmap *bm = arg;
	struct gga_disk *disk = bm->disk;
	uint8_t *p, *end = bm->bits + bm->regions;
	uint64_t r, cleared = 0;
	bool clear, wanted = false;

	if (bm->dirty == 0 || !gga_disk_all_online(disk) || disk->rec_mask != 0 ||
	    gga_recover_busy(disk) || bm->flushing) {
		if (!gga_disk_all_online(disk)) {
			disk->bm_clear.stage = GGA_LC_CLEAR_IDLE;
		}
		return POLLER_IDLE;
	}
	if (disk->bm_clear.stage == GGA_LC_CLEAR_FIRST ||
	    disk->bm_clear.stage == GGA_LC_CLEAR_SECOND) {
		/* The updates that let marks go are under way. */
		return POLLER_IDLE;
	}
	clear = disk->bm_clear.stage == GGA_LC_CLEAR_READY;
	disk->bm_clear.stage = GGA_LC_CLEAR_IDLE;
	for (p = bm->bits; (p = memchr(p, 1, (size_t)(end - p))) != NULL; p++) {
		r = (uint64_t)(p - bm->bits);
		if (__atomic_load_n(&bm->touched[r], __ATOMIC_RELAXED)) {
			__atomic_store_n(&bm->touched[r], 0, __ATOMIC_RELAXED);
			continue;
		}
		if (!clear) {
			/*
			 * Untouched since the last look: clear it once two updates
			 * made every member's record newer than every write it holds
			 * (an old copy of a member is then known to be one).
			 */
			if (__atomic_load_n(&bm->writers[r], __ATOMIC_SEQ_CST) == 0) {
				wanted = true;
			}
			continue;
		}
		cleared += region_clear(bm, r);
	}
	if (wanted) {
		gga_bm_clear_request(disk);
		return POLLER_BUSY;
	}
	if (cleared == 0) {
		return POLLER_IDLE;
	}
	DEBUGLOG(bdev_gga, "gga bdev '%s': %" PRIu64 " bitmap regions clean\n", disk->bdev.name,
		 cleared);
	bitmap_flush(bm);
	return POLLER_BUSY;
}

bool
gga_bitmap_close_eligible(const struct gga_disk *disk)
{
	/*
	 * Not a front of a shared array: it has let go of its reservations, and
	 * the other front may be writing the members already.
	 */
	return !gga_test_knobs.keep_marks && disk->bm != NULL && disk->bm->dirty != 0 &&
	       disk->front == NULL && !gga_disk_gated(disk) && gga_disk_all_online(disk) &&
	       disk->rec_mask == 0 && disk->pass_targets == 0;
}

/*
 * gga_disk_try_free() asks it once no channel (so no host write), walk,
 * probe, superblock or bitmap write is left: the steps of a clean close.
 */
static bool
close_step(struct gga_disk *disk)
{
	struct gga_bitmap *bm = disk->bm;
	uint64_t r, cleared = 0, marked = bm->dirty;

	switch (disk->closing) {
	case GGA_CLOSE_WANTED:
		disk->closing = GGA_CLOSE_CLEARING;
		/*
		 * A clear of the sweep's that the delete cut short (its update
		 * never issued: nothing is in flight now) starts over.
		 */
		disk->bm_clear.stage = GGA_LC_CLEAR_IDLE;
		if (gga_disk_all_online(disk)) {
			/* The module starts the two updates if it may. */
			gga_bm_clear_request(disk);
		}
		if (gga_disk_app_busy(disk)) {
			return true;
		}
		break;
	case GGA_CLOSE_CLEARING:
		/* Both updates reached every member, and every member is online still. */
		if (disk->bm_clear.stage != GGA_LC_CLEAR_READY || !gga_disk_all_online(disk)) {
			break;
		}
		disk->bm_clear.stage = GGA_LC_CLEAR_IDLE;
		for (r = 0; r < bm->regions; r++) {
			cleared += bm->bits[r] != 0 ? region_clear(bm, r) : 0;
		}
		if (cleared == 0) {
			break;
		}
		NOTICELOG("gga bdev '%s': closed clean: %" PRIu64 " of %" PRIu64
			  " write-intent marks cleared\n",
			  disk->bdev.name, cleared, marked);
		disk->closing = GGA_CLOSE_FLUSHING;
		bitmap_flush(bm);
		return bm->flushing;
	default:
		return false;
	}
	if (disk->closing == GGA_CLOSE_CLEARING) {
		NOTICELOG("gga bdev '%s': not closed clean: its %" PRIu64
			  " write-intent marks stay (checked at the next assembly)\n",
			  disk->bdev.name, marked);
	}
	disk->closing = GGA_CLOSE_DONE;
	return false;
}

void
gga_bitmap_rewrite(struct gga_disk *disk)
{
	struct gga_bitmap *bm = disk->bm;

	if (bm != NULL && !bm->stopped) {
		bitmap_flush(bm);
	}
}

void
gga_bitmap_start(struct gga_disk *disk)
{
	uint64_t period_us = gga_test_knobs.sweep_ms != 0 ? gga_test_knobs.sweep_ms * 1000ull :
							    BITMAP_SWEEP_US;

	disk->bm->sweep_poller = poller_register(sweep_poll, disk->bm, period_us,
						 "gga_bitmap_sweep");
	if (disk->bm->sweep_poller == NULL) {
		WARNLOG("gga bdev '%s': no bitmap sweep poller: marks are never cleared\n",
			disk->bdev.name);
	}
}

void
gga_bitmap_stop(struct gga_disk *disk)
{
	if (disk->bm != NULL) {
		disk->bm->stopped = true;
		poller_unregister(&disk->bm->sweep_poller);
	}
}

bool
gga_bitmap_marked(const struct gga_disk *disk, uint64_t lba)
{
	const struct gga_bitmap *bm = disk->bm;
	uint64_t r;

	if (bm == NULL) {
		/* No bitmap: every region may hold a torn write. */
		return true;
	}
	r = lba >> bm->block_shift;
	return r >= bm->regions || __atomic_load_n(&bm->bits[r], __ATOMIC_RELAXED) != 0 ||
	       __atomic_load_n(&bm->state[r], __ATOMIC_RELAXED) != REGION_CLEAN;
}

bool
gga_bitmap_test(const struct gga_disk *disk, uint64_t region)
{
	return disk->bm->bits[region] != 0;
}

uint64_t
gga_bitmap_regions_count(const struct gga_disk *disk)
{
	return disk->bm != NULL ? disk->bm->regions : 0;
}

uint8_t *
gga_region_incomp(struct gga_disk *disk, uint64_t lba)
{
	struct gga_bitmap *bm = disk->bm;
	uint64_t r;

	if (bm == NULL) {
		return NULL;
	}
	r = lba >> bm->block_shift;
	return r < bm->regions ? &bm->incomp[r] : NULL;
}

uint64_t
gga_bitmap_dirty(const struct gga_disk *disk)
{
	return disk->bm != NULL ? disk->bm->dirty : 0;
}

uint32_t
gga_bitmap_region_blocks(const struct gga_disk *disk)
{
	return 1u << disk->bm->block_shift;
}
