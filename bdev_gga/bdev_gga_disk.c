/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The gga disk and its members, the layer every other file of the gga bdev
 * stands on and that calls none of them: member states and the masks the I/O
 * path reads, the superblock writer and generation windows, per-thread
 * channels and the watchdogs, hot-remove of a member, and the end of a disk
 * (gga_disk_try_free). The module's face (function table, registration,
 * deletion, information) is in bdev_gga_module.c, creation in bdev_gga_create.c,
 * the I/O state machine in bdev_gga_io.c.
 *
 * Threads: creation, deletion, superblock updates and hot-remove handling run
 * on the app thread (the thread that created the bdev and opened its bases).
 * The I/O path runs on any thread and shares only atomics with the others:
 * the member states, the generation counter and the range-lock bits.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gga/bdev_module.h"
#include "gga/log.h"
#include "gga/util.h"
#include "gga/uuid.h"

#include "bdev_gga_disk.h"

/* Registered gga bdevs, in creation order (app thread). */
static TAILQ_HEAD(, gga_disk) g_disks = TAILQ_HEAD_INITIALIZER(g_disks);

/* ---------------------------------------------------------------------- */
/* Names                                                                   */
/* ---------------------------------------------------------------------- */

const char *
bdev_gga_role_name(uint32_t index, uint32_t k, uint32_t m, char *buf, size_t len)
{
	if (index < k) {
		snprintf(buf, len, "data_%u", index + 1);
	} else if (m == 1) {
		snprintf(buf, len, "parity");
	} else {
		snprintf(buf, len, "parity_%u", index - k + 1);
	}
	return buf;
}

const char *
bdev_gga_member_state_name(enum bdev_gga_member_state state)
{
	switch (state) {
	case BDEV_GGA_MEMBER_ONLINE:
		return "online";
	case BDEV_GGA_MEMBER_FAILED:
		return "failed";
	case BDEV_GGA_MEMBER_REBUILDING:
		return "rebuilding";
	case BDEV_GGA_MEMBER_STALE:
		return "stale";
	case BDEV_GGA_MEMBER_ABSENT:
		return "absent";
	}
	return "unknown";
}

const char *
bdev_gga_state_name(enum bdev_gga_state state)
{
	switch (state) {
	case BDEV_GGA_ONLINE:
		return "online";
	case BDEV_GGA_DEGRADED:
		return "degraded";
	case BDEV_GGA_FAILED:
		return "failed";
	}
	return "unknown";
}

const char *
gga_role_of(const struct gga_disk *disk, uint32_t index, char *buf, size_t len)
{
	return bdev_gga_role_name(index, disk->k, disk->m, buf, len);
}

const char *
gga_member_label(const struct gga_disk *disk, uint32_t index, char *buf, size_t len)
{
	char role[16];

	snprintf(buf, len, "%s '%s'", gga_role_of(disk, index, role, sizeof(role)),
		 disk->members[index].name);
	return buf;
}

/* ---------------------------------------------------------------------- */
/* Member state                                                            */
/* ---------------------------------------------------------------------- */

enum bdev_gga_state
gga_disk_state(const struct gga_disk *disk)
{
	return gga_lc_state_of((uint32_t)__builtin_popcount(gga_live_mask(disk)), disk->n, disk->k,
			       __atomic_load_n(&disk->lost_blocks, __ATOMIC_RELAXED) != 0);
}

struct gga_test_knobs gga_test_knobs;

bool
gga_disk_all_online(const struct gga_disk *disk)
{
	return gga_live_mask(disk) == disk->all_mask;
}

/* Only a change between none and some is an event: the counts are read when asked. */
void
gga_lost_blocks_add(struct gga_disk *disk, uint64_t n)
{
	if (n == 0) {
		return;
	}
	__atomic_fetch_add(&disk->lost_total, n, __ATOMIC_RELAXED);
	if (__atomic_fetch_add(&disk->lost_blocks, n, __ATOMIC_RELAXED) == 0) {
		bdev_notify_health_changed(&disk->bdev);
	}
}

void
gga_lost_blocks_set(struct gga_disk *disk, uint64_t n)
{
	uint64_t old = __atomic_exchange_n(&disk->lost_blocks, n, __ATOMIC_RELAXED);

	if (n > old) {
		__atomic_fetch_add(&disk->lost_total, n - old, __ATOMIC_RELAXED);
	}
	if ((old == 0) != (n == 0)) {
		bdev_notify_health_changed(&disk->bdev);
	}
}

/*
 * A front of a shared array that does not serve does not know the members'
 * states (the serving front reports them): whole here. Otherwise degraded
 * while the array is not online (a member lost, stale or being rebuilt, or
 * blocks known lost); the spare is the share of members in sync, and its
 * threshold the share of k, below which the array has lost more than it
 * can survive (both rounded down, so exactly k members in sync are not
 * below it).
 */
void
gga_disk_health(const struct gga_disk *disk, struct bdev_health *health)
{
	uint32_t live = (uint32_t)__builtin_popcount(gga_live_mask(disk));

	if (gga_disk_gated(disk)) {
		return;
	}
	health->degraded = gga_disk_state(disk) != BDEV_GGA_ONLINE;
	health->spare_pct = (uint8_t)(live * 100 / disk->n);
	health->spare_threshold_pct = (uint8_t)(disk->k * 100 / disk->n);
	health->media_errors = __atomic_load_n(&disk->lost_total, __ATOMIC_RELAXED);
}

/*
 * Recompute the masks from the states (after a change of one member's
 * state): who is read and who is written is the lifecycle module's rule.
 */
static void
masks_update(struct gga_disk *disk, uint32_t index, uint32_t state)
{
	uint32_t bit = 1u << index, live = gga_live_mask(disk);

	/* Written before read, and no longer read before no longer written. */
	if (gga_lc_run_writes(state)) {
		__atomic_fetch_or(&disk->write_mask, bit, __ATOMIC_ACQ_REL);
	}
	if (gga_lc_run_reads(state)) {
		__atomic_fetch_or(&disk->live_mask, bit, __ATOMIC_ACQ_REL);
	} else {
		__atomic_fetch_and(&disk->live_mask, ~bit, __ATOMIC_ACQ_REL);
	}
	if (!gga_lc_run_writes(state)) {
		__atomic_fetch_and(&disk->write_mask, ~bit, __ATOMIC_ACQ_REL);
	}
	if (gga_live_mask(disk) != live) {
		bdev_notify_health_changed(&disk->bdev);
	}
}

static void
log_state_change(struct gga_disk *disk, uint32_t index, uint32_t old, uint32_t state,
		 const char *reason)
{
	struct gga_member *member = &disk->members[index];
	char role[16];

	NOTICELOG("gga bdev '%s': member %s '%s': %s -> %s (%s); %d of %u members online, "
		  "array %s\n",
		  disk->bdev.name, gga_role_of(disk, index, role, sizeof(role)), member->name,
		  bdev_gga_member_state_name(old), bdev_gga_member_state_name(state), reason,
		  __builtin_popcount(gga_live_mask(disk)), disk->n,
		  bdev_gga_state_name(gga_disk_state(disk)));
}

void
gga_member_set_state(struct gga_disk *disk, uint32_t index, enum bdev_gga_member_state state,
		     const char *reason)
{
	struct gga_member *member = &disk->members[index];
	uint32_t old = __atomic_exchange_n(&member->state, state, __ATOMIC_ACQ_REL);

	__atomic_store_n(&member->reason, reason, __ATOMIC_RELEASE);
	masks_update(disk, index, state);
	if (old != state) {
		log_state_change(disk, index, old, state, reason);
	}
}

bool
gga_member_cas_state(struct gga_disk *disk, uint32_t index, enum bdev_gga_member_state from,
		     enum bdev_gga_member_state to, const char *reason)
{
	struct gga_member *member = &disk->members[index];
	uint32_t old = from;

	if (!__atomic_compare_exchange_n(&member->state, &old, to, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		return false;
	}
	__atomic_store_n(&member->reason, reason, __ATOMIC_RELEASE);
	masks_update(disk, index, to);
	if (from != to) {
		log_state_change(disk, index, from, to, reason);
	}
	return true;
}

void
gga_member_fail(struct gga_disk *disk, uint32_t index, const char *why)
{
	struct gga_member *member = &disk->members[index];
	uint32_t old = gga_member_state(member);

	/* Only the thread that moves it to FAILED reports it, so it is logged once. */
	do {
		if (old != BDEV_GGA_MEMBER_ONLINE && old != BDEV_GGA_MEMBER_REBUILDING &&
		    old != BDEV_GGA_MEMBER_STALE) {
			return;
		}
	} while (!__atomic_compare_exchange_n(&member->state, &old, BDEV_GGA_MEMBER_FAILED, false,
					      __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
	__atomic_store_n(&member->reason, why, __ATOMIC_RELEASE);
	masks_update(disk, index, BDEV_GGA_MEMBER_FAILED);
	log_state_change(disk, index, old, BDEV_GGA_MEMBER_FAILED, why);
	/* The superblocks must say so before a write it missed is acknowledged. */
	gga_sb_kick(disk);
}

void
gga_member_errors(struct gga_disk *disk, uint32_t index, uint32_t count)
{
	struct gga_member *member = &disk->members[index];
	uint64_t now = ticks_get(), start, n;
	uint32_t limit = __atomic_load_n(&disk->err_limit, __ATOMIC_RELAXED);

	if (limit == 0 || count == 0) {
		return;
	}
	/* Racy by design between threads: a window restarted twice costs nothing. */
	start = __atomic_load_n(&member->err_start, __ATOMIC_RELAXED);
	if (start == 0 ||
	    now - start >
		    (uint64_t)__atomic_load_n(&disk->err_window_s, __ATOMIC_RELAXED) * ticks_hz()) {
		__atomic_store_n(&member->err_start, now, __ATOMIC_RELAXED);
		__atomic_store_n(&member->err_count, 0, __ATOMIC_RELAXED);
	}
	n = __atomic_add_fetch(&member->err_count, count, __ATOMIC_RELAXED);
	if (n < limit || __atomic_exchange_n(&member->faulted, true, __ATOMIC_ACQ_REL)) {
		return;
	}
	ERRLOG("gga bdev '%s': member '%s': %" PRIu64 " corrupt or stale fragments within %u s "
	       "(limit %u): faulted; bdev_gga_clear_member or bdev_gga_replace_member brings it "
	       "back\n",
	       disk->bdev.name, member->name, n, disk->err_window_s, limit);
	gga_member_fail(disk, index, "faulted: too many corrupt or stale fragments");
}

/* ---------------------------------------------------------------------- */
/* The lifecycle module and the disk                                       */
/* ---------------------------------------------------------------------- */

void
gga_lc_view_of(const struct gga_disk *disk, struct gga_lc_view *v)
{
	const struct gga_member *member;
	struct gga_lc_durable durable;
	struct gga_lc_member *mb;
	uint32_t i, bit, sync;

	gga_lc_durable_unpack(__atomic_load_n(&disk->persisted, __ATOMIC_ACQUIRE), &durable);
	sync = durable.sync;

	memset(v, 0, sizeof(*v));
	gga_lc_rules_default(&v->rules);
	v->n = disk->n;
	v->k = disk->k;
	v->m = disk->m;
	v->events = disk->events;
	v->bitmap_events = disk->bitmap_events;
	v->rec_offset = disk->rec_offset;
	v->pass = disk->pass_targets != 0;
	v->pass_targets = disk->pass_targets;
	v->pass_rebuild = disk->pass_rebuild;
	/* A checkpoint outlives only the assembly that found it (gga_recover_start_disk()). */
	v->resume_ok = disk->rec_mask != 0 && !v->pass;
	/* A pass waits for its retry time, and for probes under way (one pass for all). */
	v->retry_wait = ticks_get() < disk->rec_retry_ticks;
	v->deleted = disk->destructing;
	v->persisted_sync = sync;
	v->clear = disk->bm_clear;
	/* The update in flight carries the clear's stage: its landing steps it. */
	v->clear_issued = disk->sb_clear_stage != GGA_LC_CLEAR_IDLE ? disk->sb_events : 0;
	v->persisted_mask = durable.reached;
	v->persisted_rec = durable.rec;
	for (i = 0; i < disk->n; i++) {
		member = &disk->members[i];
		mb = &v->mb[i];
		bit = 1u << i;
		mb->run = (uint8_t)gga_member_state(member);
		mb->needs = (uint8_t)member->needs;
		if (mb->needs == GGA_LC_NEEDS_NONE && mb->run != GGA_LC_ONLINE && !(sync & bit)) {
			/* Out of the last persisted update's in-sync set: it missed writes. */
			mb->needs = GGA_LC_NEEDS_RESYNC;
		}
		mb->rec = (disk->rec_mask & bit) != 0;
		mb->foreign = member->foreign;
		mb->held = mb->run == GGA_LC_STALE &&
			   (member->probing || member->app_ch == NULL || member->removing ||
			    !(disk->auto_readd || member->forced));
		v->seen[i] = member->sb_events;
		v->retry_wait |= member->probing;
	}
}

uint32_t
gga_lc_take(struct gga_disk *disk, const struct gga_lc_view *before, const struct gga_lc_view *v,
	    const char *reason)
{
	uint32_t i, moved = 0, cur, to;
	struct gga_member *member;

	for (i = 0; i < disk->n; i++) {
		member = &disk->members[i];
		if (v->mb[i].run != before->mb[i].run) {
			cur = gga_member_state(member);
			to = v->mb[i].run;
			if (cur == to ||
			    (to == BDEV_GGA_MEMBER_FAILED && cur == BDEV_GGA_MEMBER_ABSENT)) {
				/* There already: a failure the I/O thread took at once. */
			} else if (!gga_member_cas_state(disk, i, before->mb[i].run, to, reason)) {
				/* Failed on an I/O thread meanwhile: that event comes next. */
				continue;
			}
			moved |= 1u << i;
		}
		member->foreign = v->mb[i].foreign;
		member->needs = (enum gga_lc_needs)v->mb[i].needs;
	}
	disk->rec_mask = 0;
	for (i = 0; i < disk->n; i++) {
		disk->rec_mask |= v->mb[i].rec ? 1u << i : 0;
	}
	disk->rec_offset = disk->rec_mask != 0 ? v->rec_offset : 0;
	disk->pass_targets = v->pass ? v->pass_targets : 0;
	disk->pass_rebuild = v->pass && v->pass_rebuild;
	disk->bm_clear = v->clear;
	disk->bitmap_events = v->bitmap_events;
	disk->events = v->events;
	return moved;
}

void
gga_lc_view_now(struct gga_disk *disk, struct gga_lc_view *v)
{
	struct gga_lc_event ev = { .type = GGA_LC_EV_IO_ERROR };
	struct gga_lc_actions act;
	struct gga_lc_view before;
	uint32_t i, down = 0, absent = 0, state;

	for (i = 0; i < disk->n; i++) {
		state = gga_member_state(&disk->members[i]);
		if (state == BDEV_GGA_MEMBER_FAILED || state == BDEV_GGA_MEMBER_ABSENT) {
			down |= 1u << i;
		}
		absent |= state == BDEV_GGA_MEMBER_ABSENT ? 1u << i : 0;
	}
	disk->lc_failed &= down;
	for (i = 0; i < disk->n; i++) {
		if (!(down & ~disk->lc_failed & (1u << i))) {
			continue;
		}
		/*
		 * Up before (online, rebuilding or stale: what follows is the same for
		 * each): its checkpoint bit goes, it leaves the pass, it needs a resync
		 * unless it failed with the array. A base that went away is a lost
		 * controller, an I/O error the rest.
		 */
		gga_lc_view_of(disk, v);
		v->mb[i].run = GGA_LC_STALE;
		v->mb[i].held = false;
		before = *v;
		ev.type = (absent & (1u << i)) ? GGA_LC_EV_CTRLR_LOST : GGA_LC_EV_IO_ERROR;
		ev.member = i;
		gga_lc_apply(v, &ev, &act);
		gga_lc_take(disk, &before, v, "an I/O failed");
		/* A failure starts nothing: it may stop the pass and asks for an update. */
		if (act.flags & GGA_LC_ACT_STOP_PASS) {
			disk->pass_stop = true;
		}
		if (act.flags & GGA_LC_ACT_PERSIST) {
			gga_sb_kick(disk);
		}
		disk->lc_failed |= 1u << i;
	}
	gga_lc_view_of(disk, v);
}

uint32_t
gga_lc_decide(struct gga_disk *disk, const struct gga_lc_event *ev, bool hold_pass,
	      const char *reason,
	      const char *(*reason_of)(const struct gga_lc_view *v, const struct gga_lc_event *ev),
	      struct gga_lc_actions *act)
{
	struct gga_lc_view before, v;

	gga_lc_view_now(disk, &v);
	if (hold_pass) {
		v.retry_wait = true;
	}
	before = v;
	if (gga_lc_apply(&v, ev, act) != 0) {
		memset(act, 0, sizeof(*act));
		return 0;
	}
	return gga_lc_take(disk, &before, &v, reason_of != NULL ? reason_of(&v, ev) : reason);
}

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

int
gga_sb_area_encode(struct gga_disk *disk, uint32_t index, uint64_t epoch, uint64_t events,
		   uint32_t sync_mask, uint8_t *buf)
{
	uint8_t needs[GGA_LC_MAX_MEMBERS];
	struct gga_lc_record lc;
	uint32_t i;

	for (i = 0; i < disk->n; i++) {
		needs[i] = (uint8_t)disk->members[i].needs;
	}
	gga_lc_record_make(&lc, disk->n, events, disk->bitmap_events, sync_mask, needs,
			   disk->rec_mask, disk->rec_offset);
	return gga_sb_record_encode(disk, index, epoch, &lc, buf);
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
	ev.mask = disk->sb_short ? 0 : disk->sb_ok_mask;
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
	struct gga_member_ctx *mctx = cb_arg;
	struct gga_disk *disk = mctx->owner;
	struct gga_member *member = &disk->members[mctx->index];
	bool fenced = !success && gga_member_io_fenced(disk, io);
	struct gga_lc_durable durable;

	bdev_free_io(io);
	if (success) {
		disk->sb_ok_mask |= 1u << member->index;
		member->sb_events = disk->sb_events;
	} else if (!fenced) {
		/* (Fenced: not counted, and the member is fine.) */
		gga_member_fail(disk, member->index, "superblock write failed");
	}
	disk->sb_pending &= ~(1u << member->index);
	gga_member_app_io_done(member);
	if (disk->sb_pending != 0) {
		return;
	}
	if (disk->sb_epoch) {
		if ((uint32_t)__builtin_popcount(disk->sb_ok_mask) >= disk->k) {
			__atomic_store_n(&disk->gen_limit, disk->sb_new_limit, __ATOMIC_RELEASE);
			DEBUGLOG(bdev_gga,
				 "gga bdev '%s': generation window now ends at %" PRIu64 "\n",
				 disk->bdev.name, disk->sb_new_limit);
		} else {
			ERRLOG("gga bdev '%s': cannot persist the next generation window (only %d "
			       "superblocks written); writes wait\n",
			       disk->bdev.name, __builtin_popcount(disk->sb_ok_mask));
		}
		disk->sb_epoch = false;
		__atomic_store_n(&disk->epoch_busy, false, __ATOMIC_RELEASE);
	}
	if (disk->sb_ok_mask != 0 && !disk->sb_short) {
		/*
		 * Every member written is in sync or knows it is not; one that
		 * failed the write is failed, and its failure asked for another
		 * update, which writes that wait for it will wait for too.
		 */
		durable.reached = disk->sb_ok_mask;
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
	struct gga_member *member;
	struct gga_lc_record rec;
	uint64_t limit, next;
	uint8_t *area;
	uint32_t i;
	int rc;

	__atomic_store_n(&disk->sb_kicked, false, __ATOMIC_RELEASE);
	if (gga_disk_gated(disk)) {
		/* A front that does not serve writes no record; nothing it holds waits for one. */
		return;
	}
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
	if (disk->channels_gone || disk->destructing || gga_write_mask(disk) == 0 ||
	    !gga_lc_issue(&v, &rec)) {
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
	disk->sb_short = false;
	disk->sb_ok_mask = 0;
	disk->sb_pending = 0;
	disk->sb_inflight = true;
	for (i = 0; i < disk->n; i++) {
		member = &disk->members[i];
		if (!member_writable(member)) {
			continue;
		}
		area = disk->sb_buf + (size_t)i * disk->sb_blocks * disk->mbs;
		rc = gga_sb_record_encode(disk, i, disk->sb_new_limit, &rec, area);
		if (rc == 0) {
			disk->sb_ctx[i].owner = disk;
			disk->sb_ctx[i].index = i;
			rc = bdev_write_blocks(member->desc, member->app_ch, area, 0,
					       disk->sb_blocks, sb_write_done, &disk->sb_ctx[i]);
		}
		if (rc == -ENOMEM) {
			/* Not persisted until every member has it: all again, once this ends. */
			disk->sb_again = true;
			disk->sb_short = true;
			continue;
		}
		if (rc != 0) {
			ERRLOG("gga bdev '%s': superblock update of '%s' not submitted: %s\n",
			       disk->bdev.name, member->name, strerror(-rc));
			gga_member_fail(disk, i, "superblock write not submitted");
			continue;
		}
		disk->sb_pending |= 1u << i;
		member->app_io++;
	}
	if (disk->sb_pending == 0) {
		/* Written nowhere: the module may hand its count out again. */
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
}

void
gga_sb_kick(struct gga_disk *disk)
{
	if (__atomic_exchange_n(&disk->sb_kicked, true, __ATOMIC_ACQ_REL)) {
		return;
	}
	if (thread_send_msg(disk->app_thread, sb_update_msg, disk) != 0) {
		/* The next state change or window that notices tries again. */
		__atomic_store_n(&disk->sb_kicked, false, __ATOMIC_RELEASE);
	}
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

/* ---------------------------------------------------------------------- */
/* Channels                                                                */
/* ---------------------------------------------------------------------- */

void
gga_counters_add(struct bdev_gga_counters *sum, const struct bdev_gga_counters *add)
{
	uint64_t *s = (uint64_t *)sum;
	const uint64_t *a = (const uint64_t *)add;
	size_t i;

	for (i = 0; i < sizeof(*sum) / sizeof(uint64_t); i++) {
		s[i] += a[i];
	}
}

static void
channel_put_members(struct gga_channel *ch)
{
	uint32_t i;

	for (i = 0; i < BDEV_GGA_MAX_MEMBERS; i++) {
		if (ch->member_ch[i] != NULL) {
			io_channel_put(ch->member_ch[i]);
			ch->member_ch[i] = NULL;
		}
	}
}

/* How often a channel looks for members that stopped answering. */
#define WATCHDOG_PERIOD_US (100u * 1000u)

static void
watchdog_reset_done(struct bdev_io *io, bool success, void *cb_arg)
{
	struct gga_member_ctx *mctx = cb_arg;
	struct gga_channel *ch = mctx->owner;
	uint32_t i = mctx->index;

	bdev_free_io(io);
	free(mctx);
	ch->member_outstanding[i]--;
	if (ch->member_release[i] != NULL && ch->member_outstanding[i] == 0) {
		gga_channel_member_drained(ch, i);
	}
}

/*
 * Reset member i from this channel: its I/O in flight (here and on every
 * other thread) ends now, failed, instead of at its own timeout.
 */
static void
watchdog_reset(struct gga_channel *ch, uint32_t i)
{
	struct gga_disk *disk = ch->disk;
	struct gga_member *member = &disk->members[i];
	struct gga_member_ctx *mctx;
	int rc;

	if (!member->reset_supported) {
		/* Nothing ends its requests early: they wait for its own timeout. */
		ch->member_reset[i] = true;
		return;
	}
	mctx = malloc(sizeof(*mctx));
	if (mctx == NULL) {
		return;
	}
	mctx->owner = ch;
	mctx->index = i;
	rc = bdev_reset(member->desc, ch->member_ch[i], watchdog_reset_done, mctx);
	if (rc != 0) {
		free(mctx);
		if (rc != -ENOMEM) {
			ch->member_reset[i] = true;
		}
		return;
	}
	ch->member_outstanding[i]++;
	ch->member_reset[i] = true;
}

/*
 * Every WATCHDOG_PERIOD_US: a member with I/O of this channel in flight and
 * no completion for member_timeout_ms is failed, so that reads go on without
 * it and writes are acknowledged once the superblocks say it missed them,
 * and reset, so that its requests end. md's failfast and ZFS's deadman do the
 * same for a disk that stops answering.
 */
static int
watchdog_poll(void *arg)
{
	struct gga_channel *ch = arg;
	struct gga_disk *disk = ch->disk;
	uint32_t timeout = __atomic_load_n(&disk->timeout_ms, __ATOMIC_RELAXED), i;
	uint64_t now = ticks_get();
	bool busy = false;

	for (i = 0; i < disk->n; i++) {
		if (ch->member_outstanding[i] == 0 || ch->member_ch[i] == NULL) {
			ch->member_since[i] = 0;
			ch->member_reset[i] = false;
			continue;
		}
		if (ch->member_since[i] == 0 || ch->member_done[i] != ch->member_seen[i]) {
			ch->member_seen[i] = ch->member_done[i];
			ch->member_since[i] = now;
			continue;
		}
		if (timeout == 0 || ch->member_reset[i] ||
		    now - ch->member_since[i] < (uint64_t)timeout * ticks_hz() / 1000) {
			continue;
		}
		WARNLOG("gga bdev '%s': member '%s' has not answered for %u ms; failing and "
			"resetting it\n",
			disk->bdev.name, disk->members[i].name, timeout);
		gga_member_fail(disk, i, "stalled: no answer within member_timeout_ms");
		watchdog_reset(ch, i);
		busy = true;
	}
	return busy ? POLLER_BUSY : POLLER_IDLE;
}

static void
app_watchdog_reset_done(struct bdev_io *io, bool success, void *cb_arg)
{
	struct gga_member *member = cb_arg;

	bdev_free_io(io);
	member->app_resetting = false;
	gga_member_app_io_done(member);
	/* A delete may have waited for this reset alone. */
	gga_disk_try_free(member->disk);
}

/*
 * The same watch over the app thread's own member I/O: superblock and
 * bitmap writes, probes and recovery chunks. A member that holds one of them
 * for member_timeout_ms is failed and reset; a bitmap write it held would
 * otherwise hold every write that waits for a mark (until its own timeout,
 * 30 s for an nvme bdev; for ever for one without).
 */
static int
app_watchdog_poll(void *arg)
{
	struct gga_disk *disk = arg;
	uint32_t timeout = __atomic_load_n(&disk->timeout_ms, __ATOMIC_RELAXED), i;
	struct gga_member *member;
	uint64_t now = ticks_get();
	bool busy = false;
	int rc;

	for (i = 0; i < disk->n; i++) {
		member = &disk->members[i];
		if (member->app_io == 0 || member->app_ch == NULL) {
			member->app_since = 0;
			continue;
		}
		if (member->app_since == 0 || member->app_done != member->app_seen) {
			member->app_seen = member->app_done;
			member->app_since = now;
			continue;
		}
		if (timeout == 0 || member->app_resetting ||
		    now - member->app_since < (uint64_t)timeout * ticks_hz() / 1000) {
			continue;
		}
		WARNLOG("gga bdev '%s': member '%s' has not answered the superblock, bitmap or "
			"recovery I/O for %u ms; failing and resetting it\n",
			disk->bdev.name, member->name, timeout);
		gga_member_fail(disk, i, "stalled: no answer within member_timeout_ms");
		/* Once per stall: a new one is timed from now. */
		member->app_since = now;
		busy = true;
		if (!member->reset_supported) {
			continue;
		}
		rc = bdev_reset(member->desc, member->app_ch, app_watchdog_reset_done, member);
		if (rc == 0) {
			member->app_resetting = true;
			member->app_io++;
		}
	}
	return busy ? POLLER_BUSY : POLLER_IDLE;
}

void
gga_app_watchdog_start(struct gga_disk *disk)
{
	disk->app_watchdog = poller_register(app_watchdog_poll, disk, WATCHDOG_PERIOD_US,
					     "gga_app_watchdog");
	if (disk->app_watchdog == NULL) {
		WARNLOG("gga bdev '%s': no watchdog poller for superblock and bitmap I/O\n",
			disk->bdev.name);
	}
}

int
gga_channel_create(void *io_device, void *ctx_buf)
{
	struct gga_disk *disk = io_device;
	struct gga_channel *ch = ctx_buf;
	struct gga_member *member;
	uint32_t i;
	int rc;

	memset(ch, 0, sizeof(*ch));
	ch->disk = disk;
	TAILQ_INIT(&ch->retry);
	for (i = 0; i < disk->n; i++) {
		member = &disk->members[i];
		if (member->desc == NULL || member->removing) {
			continue;
		}
		ch->member_ch[i] = bdev_get_io_channel(member->desc);
		if (ch->member_ch[i] == NULL) {
			ERRLOG("gga bdev '%s': no channel to member '%s'\n", disk->bdev.name,
			       member->name);
			rc = -ENOMEM;
			goto out_put_members;
		}
	}
	rc = gga_codec_scratch_alloc(disk->codec, &ch->scratch);
	if (rc != 0) {
		goto out_put_members;
	}
	ch->bounce = malloc(disk->block_size);
	ch->heal = malloc((size_t)disk->n * disk->mbs);
	if (ch->bounce == NULL || ch->heal == NULL) {
		rc = -ENOMEM;
		goto out_free_buffers;
	}
	ch->watchdog = poller_register(watchdog_poll, ch, WATCHDOG_PERIOD_US, "gga_watchdog");
	if (ch->watchdog == NULL) {
		rc = -ENOMEM;
		goto out_free_buffers;
	}
	return 0;

out_free_buffers:
	free(ch->bounce);
	free(ch->heal);
	gga_codec_scratch_free(ch->scratch);
out_put_members:
	channel_put_members(ch);
	return rc;
}

void
gga_channel_destroy(void *io_device, void *ctx_buf)
{
	struct gga_disk *disk = io_device;
	struct gga_channel *ch = ctx_buf;
	struct io_channel_iter *iter;
	uint32_t i;

	if (!TAILQ_EMPTY(&ch->retry)) {
		ERRLOG("gga bdev '%s': channel destroyed with requests waiting\n", disk->bdev.name);
	}
	poller_unregister(&ch->retry_poller);
	poller_unregister(&ch->watchdog);
	/* A hot-remove walk waiting for this channel's I/O can go on: there is none now. */
	for (i = 0; i < BDEV_GGA_MAX_MEMBERS; i++) {
		iter = ch->member_release[i];
		if (iter != NULL) {
			ch->member_release[i] = NULL;
			io_channel_put(ch->member_ch[i]);
			ch->member_ch[i] = NULL;
			io_channel_iter_continue(iter, 0);
		}
	}
	channel_put_members(ch);
	gga_codec_scratch_free(ch->scratch);
	free(ch->bounce);
	free(ch->heal);

	pthread_mutex_lock(&disk->gone_mutex);
	gga_counters_add(&disk->gone, &ch->stats);
	pthread_mutex_unlock(&disk->gone_mutex);
}

void
gga_channel_member_drained(struct gga_channel *ch, uint32_t index)
{
	struct io_channel_iter *iter = ch->member_release[index];

	ch->member_release[index] = NULL;
	io_channel_put(ch->member_ch[index]);
	ch->member_ch[index] = NULL;
	io_channel_iter_continue(iter, 0);
}

/* ---------------------------------------------------------------------- */
/* Hot-remove of a member                                                  */
/* ---------------------------------------------------------------------- */

void
gga_member_close(struct gga_member *member)
{
	if (member->app_ch != NULL) {
		io_channel_put(member->app_ch);
		member->app_ch = NULL;
	}
	if (member->claimed) {
		bdev_module_release_bdev(member->bdev);
		member->claimed = false;
	}
	if (member->desc != NULL) {
		bdev_close(member->desc);
		member->desc = NULL;
	}
}

void
gga_member_release_channel(struct io_channel_iter *i)
{
	struct gga_member *member = io_channel_iter_get_ctx(i);
	struct gga_channel *ch = io_channel_get_ctx(io_channel_iter_get_channel(i));
	uint32_t index = member->index;

	if (ch->member_ch[index] == NULL) {
		io_channel_iter_continue(i, 0);
		return;
	}
	if (ch->member_outstanding[index] > 0) {
		/* The last completion of I/O to this member puts the channel. */
		ch->member_release[index] = i;
		return;
	}
	io_channel_put(ch->member_ch[index]);
	ch->member_ch[index] = NULL;
	io_channel_iter_continue(i, 0);
}

void
gga_member_close_when_idle(struct gga_member *member)
{
	if (member->app_io > 0) {
		member->close_deferred = true;
		return;
	}
	gga_member_close(member);
}

void
gga_member_app_io_done(struct gga_member *member)
{
	assert(member->app_io > 0);
	member->app_done++;
	if (--member->app_io == 0 && member->close_deferred) {
		/* A hot-remove or replace finished while this I/O was in flight. */
		member->close_deferred = false;
		gga_member_close(member);
	}
}

static void
member_release_done(struct io_channel_iter *i, int status)
{
	struct gga_member *member = io_channel_iter_get_ctx(i);
	struct gga_disk *disk = member->disk;

	gga_member_close_when_idle(member);
	gga_member_set_state(disk, member->index, BDEV_GGA_MEMBER_ABSENT, "base bdev removed");
	disk->pending_ops--;
	gga_disk_try_free(disk);
}

void
gga_member_event_cb(enum bdev_event_type type, struct bdev *bdev, void *ctx)
{
	struct gga_member *member = ctx;
	struct gga_disk *disk = member->disk;

	if ((type == BDEV_EVENT_MEDIA_CHANGED || type == BDEV_EVENT_OFFLINE) &&
	    gga_disk_gated(disk)) {
		/*
		 * A front that does not serve: the members are read when it
		 * assembles them (their superblocks say what they hold then).
		 */
		return;
	}
	if (type == BDEV_EVENT_MEDIA_CHANGED) {
		/*
		 * Its target may have restarted on a blank or other disk while no
		 * I/O reached it: until its superblock is read again it is not
		 * trusted (the probe decides: resync, rebuild or nothing).
		 */
		if (disk->registered && !disk->destructing) {
			NOTICELOG("gga bdev '%s': base '%s' was reconnected; checking it\n",
				  disk->bdev.name, member->name);
			gga_member_fail(disk, member->index, "its base reconnected: checked again");
		}
		return;
	}
	if (type == BDEV_EVENT_OFFLINE) {
		/*
		 * Its controller is lost: whether or not I/O reaches it (reads never
		 * touch parity), it is not online, and the array says so.
		 */
		if (disk->registered && !disk->destructing) {
			NOTICELOG("gga bdev '%s': base '%s' is offline\n", disk->bdev.name,
				  member->name);
			gga_member_fail(disk, member->index,
					"its base is offline (controller lost)");
		}
		return;
	}
	if (type != BDEV_EVENT_REMOVE || member->removing) {
		return;
	}
	member->removing = true;
	if (!disk->registered) {
		/* Still being created: creation notices and gives up. */
		return;
	}
	NOTICELOG("gga bdev '%s': base '%s' is being removed\n", disk->bdev.name, member->name);
	gga_member_fail(disk, member->index, "base bdev removed");
	if (disk->channels_gone) {
		gga_member_close_when_idle(member);
		return;
	}
	disk->pending_ops++;
	io_device_for_each_channel(disk, gga_member_release_channel, member, member_release_done);
}

/* ---------------------------------------------------------------------- */
/* Function table                                                          */
/* ---------------------------------------------------------------------- */

/* The bitmap's memory, allocated by gga_bitmap_create(), goes with the disk. */
void
gga_bitmap_destroy(struct gga_disk *disk)
{
	struct gga_bitmap *bm = disk->bm;

	if (bm == NULL) {
		return;
	}
	free(bm->state);
	free(bm->writers);
	free(bm->touched);
	free(bm->bits);
	free(bm->incomp);
	free(bm->packed);
	env_dma_free(bm->io_buf);
	free(bm);
	disk->bm = NULL;
}

void
gga_disk_free(struct gga_disk *disk)
{
	uint32_t i;

	for (i = 0; i < BDEV_GGA_MAX_MEMBERS; i++) {
		free(disk->members[i].name);
	}
	if (disk->small_pool != NULL) {
		mempool_free(disk->small_pool);
	}
	if (disk->large_pool != NULL) {
		mempool_free(disk->large_pool);
	}
	env_dma_free(disk->sb_buf);
	gga_bitmap_destroy(disk);
	gga_codec_destroy(disk->codec);
	pthread_mutex_destroy(&disk->gone_mutex);
	free(disk->bdev.name);
	free(disk);
}

/* Is the bitmap writing, or about to? */
bool
gga_bitmap_busy(const struct gga_disk *disk)
{
	const struct gga_bitmap *bm = disk->bm;

	return bm != NULL && (bm->flushing || __atomic_load_n(&bm->kicked, __ATOMIC_ACQUIRE));
}

/* Recovery work that holds the disk: a walk, a probe, member I/O of the app thread. */
bool
gga_recover_busy(const struct gga_disk *disk)
{
	uint32_t i;

	if (disk->walk != NULL) {
		return true;
	}
	for (i = 0; i < disk->n; i++) {
		if (disk->members[i].probing || disk->members[i].app_io > 0) {
			return true;
		}
	}
	return false;
}

/*
 * The last step of a deletion, once no channel, walk, probe, superblock or
 * bitmap write, or message about one, is left.
 */
void
gga_disk_try_free(struct gga_disk *disk)
{
	uint32_t i;

	if (!disk->channels_gone || disk->pending_ops > 0 || disk->sb_inflight ||
	    __atomic_load_n(&disk->sb_kicked, __ATOMIC_ACQUIRE) || gga_bitmap_busy(disk) ||
	    gga_recover_busy(disk)) {
		return;
	}
	/* Watched to the end: a member that stalls the last records cannot hold the delete. */
	poller_unregister(&disk->app_watchdog);
	for (i = 0; i < disk->n; i++) {
		gga_member_close(&disk->members[i]);
	}
	if (disk->registered) {
		TAILQ_REMOVE(&g_disks, disk, link);
	}
	NOTICELOG("gga bdev '%s': deleted; members keep their format\n", disk->bdev.name);
	bdev_destruct_done(&disk->bdev, 0);
	gga_disk_free(disk);
}

/* ---------------------------------------------------------------------- */
/* Deletion and information                                                */
/* ---------------------------------------------------------------------- */

void
gga_disk_link(struct gga_disk *disk)
{
	TAILQ_INSERT_TAIL(&g_disks, disk, link);
	disk->registered = true;
}

struct gga_disk *
gga_disk_lookup(const char *name)
{
	struct bdev *bdev = name != NULL ? bdev_get_by_name(name) : NULL;
	struct gga_disk *disk;

	if (bdev == NULL || bdev->module != &gga_bdev_module) {
		return NULL;
	}
	disk = bdev->ctxt;
	return disk->destructing ? NULL : disk;
}

struct bdev *
bdev_gga_first(void)
{
	struct gga_disk *disk = TAILQ_FIRST(&g_disks);

	return disk != NULL ? &disk->bdev : NULL;
}

struct bdev *
bdev_gga_next(struct bdev *prev)
{
	struct gga_disk *disk = TAILQ_NEXT((struct gga_disk *)prev->ctxt, link);

	return disk != NULL ? &disk->bdev : NULL;
}

/* ---------------------------------------------------------------------- */
/* Module                                                                  */
/* ---------------------------------------------------------------------- */

static size_t
gga_get_ctx_size(void)
{
	return sizeof(struct gga_io);
}

struct bdev_module gga_bdev_module = {
	.name = "gga",
	.get_ctx_size = gga_get_ctx_size,
};
