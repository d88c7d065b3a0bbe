/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Member states, the lowest layer of the gga bdev's own files: the names of
 * roles and states, each member's state and the masks the I/O path reads
 * (live_mask, write_mask), failures and the error policy, blocks known lost
 * and the health, and the disk as the lifecycle module sees it
 * (gga_lc_view_of/take/now/decide). Every file above calls it; it calls none
 * of them. A change the superblocks must record asks the superblock writer
 * (bdev_gga_sb.c, above) for an update through gga_sb_kick(), which queues
 * the writer's message (disk->sb_update) on the app thread rather than
 * calling it.
 *
 * Threads: any thread fails a member (atomics); the lifecycle steps run on
 * the app thread.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gga/bdev_module.h"
#include "gga/log.h"
#include "gga/util.h"

#include "bdev_gga_member.h"

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

bool
gga_lost_block_read(struct gga_disk *disk, uint64_t lba)
{
	uint64_t *slot = &disk->lost_seen[(lba ^ (lba >> 8)) % GGA_CHARGED_SLOTS];

	if (__atomic_exchange_n(slot, lba + 1, __ATOMIC_RELAXED) == lba + 1) {
		return false;
	}
	gga_lost_blocks_add(disk, 1);
	return true;
}

void
gga_lost_blocks_set(struct gga_disk *disk, uint64_t n)
{
	uint64_t old = __atomic_exchange_n(&disk->lost_blocks, n, __ATOMIC_RELAXED);
	uint32_t i;

	/* A count set anew (a full scrub): blocks read lost before are counted again. */
	for (i = 0; i < GGA_CHARGED_SLOTS; i++) {
		__atomic_store_n(&disk->lost_seen[i], 0, __ATOMIC_RELAXED);
	}

	if (n > old) {
		__atomic_fetch_add(&disk->lost_total, n - old, __ATOMIC_RELAXED);
	}
	if ((old == 0) != (n == 0)) {
		bdev_notify_health_changed(&disk->bdev);
	}
}

/*
 * A front of a shared array that does not serve does not know the members'
 * states (the serving front reports them): whole here. (A bdev that waits
 * for members to assemble has none online: below its threshold.) Otherwise degraded
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

	if (gga_disk_gated(disk) && !__atomic_load_n(&disk->waiting, __ATOMIC_ACQUIRE)) {
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

bool
gga_member_stall(struct gga_disk *disk, uint32_t index, const char *why)
{
	bool fail;

	pthread_mutex_lock(&disk->stall_mutex);
	fail = gga_lc_stall_may_fail(gga_live_mask(disk), disk->k, index);
	if (fail) {
		gga_member_fail(disk, index, why);
	}
	pthread_mutex_unlock(&disk->stall_mutex);
	return fail;
}

/* Past the limit within the window: the module is asked (gga_member_faults_decide()). */
static void
member_errors(struct gga_disk *disk, uint32_t index, uint32_t count)
{
	struct gga_member *member = &disk->members[index];
	uint64_t now = ticks_get(), start, n;
	uint32_t limit = __atomic_load_n(&disk->err_limit, __ATOMIC_RELAXED);

	if (limit == 0 || count == 0 || __atomic_load_n(&member->faulted, __ATOMIC_ACQUIRE)) {
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
	if (n < limit || (__atomic_fetch_or(&disk->fault_asked, 1u << index, __ATOMIC_ACQ_REL) &
			  (1u << index))) {
		return;
	}
	gga_sb_kick(disk);
}

void
gga_member_charge(struct gga_disk *disk, uint64_t lba, uint32_t mask)
{
	uint64_t *slot = &disk->charged[(lba ^ (lba >> 8)) % GGA_CHARGED_SLOTS];
	uint64_t tag = (lba + 1) << 16, old = __atomic_load_n(slot, __ATOMIC_RELAXED), want;
	uint32_t fresh, i;

	mask &= disk->all_mask;
	do {
		fresh = (old & ~0xffffull) == tag ? mask & ~(uint32_t)(old & 0xffff) : mask;
		if (fresh == 0) {
			return;
		}
		want = tag | ((old & ~0xffffull) == tag ? (old & 0xffff) : 0) | mask;
	} while (!__atomic_compare_exchange_n(slot, &old, want, false, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	for (; fresh != 0; fresh &= fresh - 1) {
		i = (uint32_t)__builtin_ctz(fresh);
		member_errors(disk, i, 1);
	}
}

void
gga_member_faults_decide(struct gga_disk *disk)
{
	uint32_t asked = __atomic_exchange_n(&disk->fault_asked, 0, __ATOMIC_ACQ_REL), i;
	struct gga_lc_event ev = { .type = GGA_LC_EV_FAULT };
	struct gga_member *member;
	struct gga_lc_actions act;
	char label[160];
	uint64_t n;

	for (; asked != 0 && !disk->destructing; asked &= asked - 1) {
		i = (uint32_t)__builtin_ctz(asked);
		member = &disk->members[i];
		n = __atomic_load_n(&member->err_count, __ATOMIC_RELAXED);
		ev.member = i;
		gga_lc_decide(disk, &ev, false, "faulted: too many corrupt or stale fragments",
			      NULL, &act);
		gga_member_label(disk, i, label, sizeof(label));
		if (act.flags & GGA_LC_ACT_FAULT_KEPT) {
			WARNLOG("gga bdev '%s': %s: %" PRIu64 " corrupt or stale fragments within "
				"%u s (limit %u), but faulting it would leave fewer than %u members "
				"in sync: it stays, and only the blocks that cannot be read fail\n",
				disk->bdev.name, label, n, disk->err_window_s, disk->err_limit,
				disk->k);
		} else if (__atomic_load_n(&member->faulted, __ATOMIC_ACQUIRE)) {
			ERRLOG("gga bdev '%s': %s: %" PRIu64 " corrupt or stale fragments within "
			       "%u s (limit %u): faulted; bdev_gga_clear_member or "
			       "bdev_gga_replace_member brings it back\n",
			       disk->bdev.name, label, n, disk->err_window_s, disk->err_limit);
		}
		if (act.flags & GGA_LC_ACT_STOP_PASS) {
			disk->pass_stop = true;
		}
		if (act.flags & GGA_LC_ACT_FAULT_KEPT) {
			/* Its count starts over: it asks again after `limit` more blocks. */
			__atomic_store_n(&member->err_count, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&member->err_start, 0, __ATOMIC_RELAXED);
		}
	}
}

/* ---------------------------------------------------------------------- */
/* The lifecycle module and the disk                                       */
/* ---------------------------------------------------------------------- */

/*
 * The module's view of the disk: its last result, as gga_lc_take() (and
 * create's taking of the assembly) left it in the disk's fields, which
 * nothing else writes (the torture run's differential check holds the shell
 * to it), with no rule of its own; and the inputs the I/O code gives it:
 * the member states the I/O threads changed (failures not yet told), the
 * members its policy holds back, the retry delay, the counts each member is
 * known to hold, the latest persisted update.
 */
void
gga_lc_view_of(const struct gga_disk *disk, struct gga_lc_view *v)
{
	const struct gga_member *member;
	struct gga_lc_durable durable;
	struct gga_lc_member *mb;
	uint32_t i;

	gga_lc_durable_unpack(__atomic_load_n(&disk->persisted, __ATOMIC_ACQUIRE), &durable);

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
	v->resume_ok = disk->resume_ok;
	/* A pass waits for its retry time, and for probes under way (one pass for all). */
	v->retry_wait = ticks_get() < disk->rec_retry_ticks;
	/* (A clean close steps the clear of the marks after the delete.) */
	v->deleted = disk->destructing && disk->closing != GGA_CLOSE_CLEARING;
	v->persisted_sync = durable.sync;
	v->clear = disk->bm_clear;
	/* The update in flight carries the clear's stage: its landing steps it. */
	v->clear_issued = disk->sb_clear_stage != GGA_LC_CLEAR_IDLE ? disk->sb_events : 0;
	v->persisted_mask = durable.reached;
	v->persisted_rec = durable.rec;
	for (i = 0; i < disk->n; i++) {
		member = &disk->members[i];
		mb = &v->mb[i];
		mb->run = (uint8_t)gga_member_state(member);
		mb->needs = (uint8_t)member->needs;
		mb->rec = (disk->rec_mask & (1u << i)) != 0;
		mb->foreign = member->foreign;
		mb->faulted = __atomic_load_n(&member->faulted, __ATOMIC_ACQUIRE);
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
		__atomic_store_n(&member->faulted, v->mb[i].faulted, __ATOMIC_RELEASE);
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
	disk->resume_ok = v->resume_ok;
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
/* Asking for a superblock update                                          */
/* ---------------------------------------------------------------------- */

void
gga_sb_kick(struct gga_disk *disk)
{
	if (__atomic_exchange_n(&disk->sb_kicked, true, __ATOMIC_ACQ_REL)) {
		return;
	}
	if (thread_send_msg(disk->app_thread, disk->sb_update, disk) != 0) {
		/* The next state change or window that notices tries again. */
		__atomic_store_n(&disk->sb_kicked, false, __ATOMIC_RELEASE);
	}
}
