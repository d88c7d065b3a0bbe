/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The superblock writer: member areas in and out of member blocks, a
 * member's record encoded, the update (sb_update_msg: one at a time on the
 * app thread, written to every member that takes writes, the lifecycle
 * module told where it landed: sb_persisted) and generation windows. It
 * stands above the member states (bdev_gga_member.c): those ask for an
 * update with gga_sb_kick(), which queues sb_update_msg through
 * disk->sb_update (gga_sb_writer_init()) instead of calling up.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "gga/bdev_module.h"
#include "gga/log.h"
#include "gga/util.h"

#include "bdev_gga_fanout.h"
#include "bdev_gga_member.h"
#include "bdev_gga_remove.h"
#include "bdev_gga_sb.h"

/* ---------------------------------------------------------------------- */
/* Superblocks                                                             */
/* ---------------------------------------------------------------------- */

void
gga_area_gather(const struct gga_disk *disk, const uint8_t *src, uint8_t *dst, size_t len)
{
	size_t n;

	while (len > 0) {
		n = GGA_MIN((size_t)disk->frag_size, len);
		memcpy(dst, src, n);
		dst += n;
		src += disk->mbs;
		len -= n;
	}
}

void
gga_area_scatter(const struct gga_disk *disk, const uint8_t *src, uint8_t *dst, size_t len)
{
	size_t n;

	while (len > 0) {
		n = GGA_MIN((size_t)disk->frag_size, len);
		memcpy(dst, src, n);
		memset(dst + n, 0, disk->mbs - n);
		src += n;
		dst += disk->mbs;
		len -= n;
	}
}

int
gga_sb_record_encode(struct gga_disk *disk, uint32_t index, uint64_t epoch,
		     const struct gga_lc_record *lc, uint8_t *buf)
{
	uint8_t rec[GGA_SB_SIZE];
	struct gga_sb sb;
	int rc;

	rc = gga_sb_init(&sb, disk->array_uuid, index, disk->k, disk->m, disk->matrix,
			 disk->block_size, disk->md_size, disk->member_blocks);
	if (rc != 0) {
		return rc;
	}
	sb.generation_epoch = epoch;
	sb.events = lc->events;
	sb.region_shift = disk->region_shift;
	memcpy(sb.member_state, lc->member_state, sizeof(sb.member_state));
	sb.recovery_mask = lc->rec_mask;
	sb.recovery_offset = lc->rec_offset;
	sb.bitmap_events = lc->bitmap_events;
	rc = gga_sb_encode(&sb, rec);
	if (rc != 0) {
		return rc;
	}
	gga_area_scatter(disk, rec, buf,
			 GGA_MIN((size_t)disk->sb_blocks * disk->frag_size, sizeof(rec)));
	return 0;
}

static void sb_update_msg(void *arg);

/*
 * An update ended (sb_write_done), or was written nowhere: the module hears
 * where it landed (GGA_LC_EV_PERSISTED; an update a member found no bdev_io
 * for counts for nothing). It steps the clearing of write-intent marks
 * (rule 8): one more update (which carries bitmap_events), or the marks may
 * go (the next sweep clears them).
 */
static void
sb_persisted(struct gga_disk *disk)
{
	struct gga_lc_event ev = { .type = GGA_LC_EV_PERSISTED };
	struct gga_lc_actions act;

	ev.events = disk->sb_events;
	ev.mask = disk->sb_fo.short_mask != 0 ? 0 : disk->sb_fo.ok_mask;
	gga_lc_decide(disk, &ev, false, "an update landed", NULL, &act);
	disk->sb_clear_stage = GGA_LC_CLEAR_IDLE;
	if (act.flags & GGA_LC_ACT_CLEAR_BITMAP) {
		disk->bm_clear.stage = GGA_LC_CLEAR_READY;
	}
	if (act.flags & GGA_LC_ACT_PERSIST) {
		disk->sb_again = true;
	}
}

void
gga_bm_clear_request(struct gga_disk *disk)
{
	struct gga_lc_event ev = { .type = GGA_LC_EV_BITMAP_CLEAR };
	struct gga_lc_actions act;

	/* The module starts it if it may (gga_lc_clear_may_start(), every member in sync). */
	gga_lc_decide(disk, &ev, false, "bitmap clear", NULL, &act);
	if (act.flags & GGA_LC_ACT_PERSIST) {
		gga_sb_kick(disk);
	}
}

static void
sb_write_done(struct bdev_io *io, bool success, void *cb_arg)
{
	uint32_t i;
	struct gga_fanout *fo = gga_fanout_of(cb_arg, &i);
	struct gga_disk *disk = fo->disk;

	if (success) {
		disk->members[i].sb_events = disk->sb_events;
	}
	gga_fanout_app_io_done(io, success, cb_arg);
}

/* Encode the update's record as member i's superblock and write it. */
static int
sb_write_submit(struct gga_fanout *fo, uint32_t i, void *cb_arg)
{
	struct gga_disk *disk = fo->disk;
	struct gga_member *member = &disk->members[i];
	uint8_t *area = disk->sb_buf + (size_t)i * disk->sb_blocks * disk->mbs;
	int rc;

	rc = gga_sb_record_encode(disk, i, disk->sb_new_limit, &disk->sb_record, area);
	if (rc == 0) {
		rc = bdev_write_blocks(member->desc, member->app_ch, area, 0, disk->sb_blocks,
				       sb_write_done, cb_arg);
	}
	if (rc != 0 && rc != -ENOMEM) {
		ERRLOG("gga bdev '%s': superblock update of '%s' not submitted: %s\n",
		       disk->bdev.name, member->name, strerror(-rc));
	}
	return rc;
}

/* The update reached nobody: nothing it says is persisted. */
static void
sb_written_nowhere(struct gga_disk *disk)
{
	struct gga_lc_view before, v;

	/* The module may hand its count out again (gga_lc_unissue()). */
	gga_lc_view_now(disk, &v);
	before = v;
	gga_lc_unissue(&v, disk->sb_events);
	gga_lc_take(disk, &before, &v, "an update written nowhere");
	sb_persisted(disk);
	disk->sb_inflight = false;
	if (disk->sb_epoch) {
		disk->sb_epoch = false;
		__atomic_store_n(&disk->epoch_busy, false, __ATOMIC_RELEASE);
	}
	gga_disk_try_free(disk);
}

/* Every member write of the update has ended (or none was submitted). */
static void
sb_write_end(struct gga_fanout *fo)
{
	struct gga_disk *disk = fo->disk;
	struct gga_lc_durable durable;

	if (fo->short_mask != 0) {
		/* Not persisted until every member has it: all again, once this ends. */
		disk->sb_again = true;
	}
	if (fo->sent_mask == 0) {
		sb_written_nowhere(disk);
		return;
	}
	if (disk->sb_epoch) {
		if ((uint32_t)__builtin_popcount(fo->ok_mask) >= disk->k) {
			__atomic_store_n(&disk->gen_limit, disk->sb_new_limit, __ATOMIC_RELEASE);
			DEBUGLOG(bdev_gga,
				 "gga bdev '%s': generation window now ends at %" PRIu64 "\n",
				 disk->bdev.name, disk->sb_new_limit);
		} else {
			ERRLOG("gga bdev '%s': cannot persist the next generation window (only %d "
			       "superblocks written); writes wait\n",
			       disk->bdev.name, __builtin_popcount(fo->ok_mask));
		}
		disk->sb_epoch = false;
		__atomic_store_n(&disk->epoch_busy, false, __ATOMIC_RELEASE);
	}
	if (fo->ok_mask != 0 && fo->short_mask == 0) {
		/*
		 * Every member written is in sync or knows it is not; one that
		 * failed the write is failed, and its failure asked for another
		 * update, which writes that wait for it will wait for too.
		 */
		durable.reached = fo->ok_mask;
		durable.sync = disk->sb_sync_mask;
		durable.rec = disk->sb_rec_mask;
		__atomic_store_n(&disk->persisted, gga_lc_durable_pack(&durable), __ATOMIC_RELEASE);
	}
	sb_persisted(disk);
	disk->sb_inflight = false;
	if (disk->sb_again) {
		disk->sb_again = false;
		sb_update_msg(disk);
		return;
	}
	gga_disk_try_free(disk);
}

static const struct gga_fanout_ops sb_fanout = {
	.submit = sb_write_submit,
	.done = sb_write_end,
	.nomem = GGA_FANOUT_SKIP,
	.app = true,
	.refused = "superblock write not submitted",
	.failed = "superblock write failed",
};

/* May member i take superblock and bitmap writes (app thread)? */
static bool
member_writable(const struct gga_member *member)
{
	uint32_t state = gga_member_state(member);

	return member->app_ch != NULL && !member->removing &&
	       (state == BDEV_GGA_MEMBER_ONLINE || state == BDEV_GGA_MEMBER_REBUILDING ||
		state == BDEV_GGA_MEMBER_STALE);
}

/*
 * App thread: write every reachable member's superblock with the members'
 * states as they are now, the event counter one up and, when asked for, the
 * next generation window.
 */
static void
sb_update_msg(void *arg)
{
	struct gga_disk *disk = arg;
	struct gga_lc_view before, v;
	struct gga_lc_record rec;
	uint64_t limit, next;
	uint32_t i, mask = 0;

	__atomic_store_n(&disk->sb_kicked, false, __ATOMIC_RELEASE);
	if (gga_disk_gated(disk)) {
		/*
		 * A front that does not serve (or a bdev waiting for members to
		 * assemble) writes no record; nothing it holds waits for one. A
		 * delete may have waited for this message alone.
		 */
		__atomic_store_n(&disk->fault_asked, 0, __ATOMIC_RELEASE);
		gga_disk_try_free(disk);
		return;
	}
	/* Members past the error limit: the module faults each or keeps it (k in sync). */
	gga_member_faults_decide(disk);
	if (disk->sb_inflight) {
		disk->sb_again = true;
		return;
	}
	/* The failures the I/O threads took, told to the module (may stop a pass). */
	gga_lc_view_now(disk, &v);
	before = v;
	/*
	 * The module makes the record and its count (gga_lc_issue()). With fewer
	 * than k members online it makes none (rule 5): no write can be
	 * acknowledged, so no member can miss one: the last members to fail stay
	 * in sync on the members, and come back as such (see the probe).
	 */
	if (((disk->channels_gone || disk->destructing) && disk->closing != GGA_CLOSE_CLEARING) ||
	    gga_write_mask(disk) == 0 || !gga_lc_issue(&v, &rec)) {
		if (__atomic_exchange_n(&disk->epoch_wanted, false, __ATOMIC_ACQ_REL)) {
			__atomic_store_n(&disk->epoch_busy, false, __ATOMIC_RELEASE);
		}
		gga_disk_try_free(disk);
		return;
	}
	limit = __atomic_load_n(&disk->gen_limit, __ATOMIC_ACQUIRE);
	disk->sb_epoch = __atomic_exchange_n(&disk->epoch_wanted, false, __ATOMIC_ACQ_REL);
	if (disk->sb_epoch) {
		next = __atomic_load_n(&disk->next_gen, __ATOMIC_RELAXED);
		disk->sb_new_limit = GGA_MAX(limit, next) + GGA_GEN_WINDOW;
	} else {
		disk->sb_new_limit = limit;
	}
	/*
	 * The module has heard of every failure before the record is made
	 * (gga_lc_view_now() above): a pass member that left the pass has lost
	 * its checkpoint bit (rule 6), whichever thread saw it go. Its count is
	 * new for every update, persisted or not: two records never tie and
	 * differ (rule 1).
	 */
	gga_lc_take(disk, &before, &v, "an update");
	disk->sb_events = rec.events;
	disk->sb_sync_mask = 0;
	for (i = 0; i < disk->n; i++) {
		disk->sb_sync_mask |= rec.member_state[i] == GGA_SB_MEMBER_IN_SYNC ? 1u << i : 0;
	}
	disk->sb_rec_mask = rec.rec_mask;
	/* It carries the clear's stage; SECOND's bitmap_events the module set (sb_persisted). */
	disk->sb_clear_stage = GGA_LC_CLEAR_IDLE;
	if (disk->bm_clear.stage == GGA_LC_CLEAR_FIRST ||
	    disk->bm_clear.stage == GGA_LC_CLEAR_SECOND) {
		disk->sb_clear_stage = disk->bm_clear.stage;
	}
	disk->sb_record = rec;
	disk->sb_inflight = true;
	for (i = 0; i < disk->n; i++) {
		mask |= member_writable(&disk->members[i]) ? 1u << i : 0;
	}
	gga_fanout_start(&disk->sb_fo, &sb_fanout, disk, mask);
}

void
gga_sb_writer_init(struct gga_disk *disk)
{
	disk->sb_update = sb_update_msg;
}

static void
epoch_kick(struct gga_disk *disk)
{
	if (__atomic_exchange_n(&disk->epoch_busy, true, __ATOMIC_ACQ_REL)) {
		return;
	}
	__atomic_store_n(&disk->epoch_wanted, true, __ATOMIC_RELEASE);
	gga_sb_kick(disk);
}

int
gga_gen_reserve(struct gga_disk *disk, uint32_t count, uint64_t *first)
{
	uint64_t old = __atomic_load_n(&disk->next_gen, __ATOMIC_RELAXED);
	uint64_t limit;

	do {
		limit = __atomic_load_n(&disk->gen_limit, __ATOMIC_ACQUIRE);
		if (unlikely(old + count > limit)) {
			epoch_kick(disk);
			return -EAGAIN;
		}
	} while (!__atomic_compare_exchange_n(&disk->next_gen, &old, old + count, true,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	*first = old;
	if (unlikely(limit - (old + count) < GGA_GEN_WINDOW / 2)) {
		epoch_kick(disk);
	}
	return 0;
}
