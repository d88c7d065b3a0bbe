/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The gga member lifecycle: see gga_lifecycle.h for the contract and
 * docs/FORMAT.md, "Member lifecycle", for the rules and why each holds.
 */
#include <errno.h>
#include <string.h>

#include "gga_lifecycle.h"

#define LC_BIT(i) (1u << (i))

void
gga_lc_rules_default(struct gga_lc_rules *rules)
{
	rules->format_raises_events = true;
	rules->drop_checkpoint = true;
	rules->blank_drops_checkpoint = true;
	rules->check_own_events = true;
	rules->cas_state = true;
	/*
	 * Off: with the two-phase clear no member is ever one below bitmap_events
	 * after a crash, and the exception would trust an old copy taken one
	 * update before a clear (docs/FORMAT.md, "Member lifecycle").
	 */
	rules->trust_one_below = false;
	rules->clear_two_phase = true;
	rules->ack_waits_checkpoint = true;
	rules->fault_keeps_k = true;
}

/* Does a member in this state take records (it answers: online, rebuilding, stale)? */
static bool
lc_run_takes_records(uint32_t run)
{
	return run == GGA_LC_ONLINE || run == GGA_LC_REBUILDING || run == GGA_LC_STALE;
}

/* The members whose state passes `rule` (gga_lc_run_reads, _writes, lc_run_takes_records). */
static uint32_t
lc_mask_where(const struct gga_lc_view *v, bool (*rule)(uint32_t run))
{
	uint32_t i, mask = 0;

	for (i = 0; i < v->n; i++) {
		if (rule(v->mb[i].run)) {
			mask |= LC_BIT(i);
		}
	}
	return mask;
}

static uint32_t
lc_online(const struct gga_lc_view *v)
{
	return (uint32_t)__builtin_popcount(lc_mask_where(v, gga_lc_run_reads));
}

enum gga_lc_array_state
gga_lc_state_of(uint32_t online, uint32_t n, uint32_t k, bool lost)
{
	if (online == n) {
		/* Whole in its members, but blocks known lost: not the true redundancy. */
		return lost ? GGA_LC_ARRAY_DEGRADED : GGA_LC_ARRAY_ONLINE;
	}
	return online >= k ? GGA_LC_ARRAY_DEGRADED : GGA_LC_ARRAY_FAILED;
}

enum gga_lc_array_state
gga_lc_array_state(const struct gga_lc_view *v)
{
	return gga_lc_state_of(lc_online(v), v->n, v->k, false);
}

uint32_t
gga_lc_read_mask(const struct gga_lc_view *v)
{
	if (v->deleted || lc_online(v) < v->k) {
		return 0;
	}
	return lc_mask_where(v, gga_lc_run_reads);
}

uint32_t
gga_lc_write_mask(const struct gga_lc_view *v)
{
	if (v->deleted || lc_online(v) < v->k) {
		return 0;
	}
	return lc_mask_where(v, gga_lc_run_writes);
}

enum gga_lc_ack
gga_lc_ack_decide(const struct gga_lc_durable *d, uint32_t n, uint32_t k, uint32_t held,
		  uint32_t received, uint32_t online)
{
	uint32_t all = LC_BIT(n) - 1, missed = all & ~received, have = received & online & all;

	if ((uint32_t)__builtin_popcount(have) < k) {
		return GGA_LC_ACK_NEVER;
	}
	if (missed == 0) {
		return GGA_LC_ACK_YES;
	}
	if ((have & ~d->reached) != 0 || (missed & (d->sync | (d->rec & held))) != 0) {
		return GGA_LC_ACK_WAIT;
	}
	return GGA_LC_ACK_YES;
}

uint64_t
gga_lc_checkpoint_at(uint64_t cursor, const uint64_t *starts, uint32_t count)
{
	uint64_t low = cursor;
	uint32_t i;

	for (i = 0; i < count; i++) {
		if (starts[i] < low) {
			low = starts[i];
		}
	}
	return low;
}

bool
gga_lc_ack_ok(const struct gga_lc_view *v, uint32_t held, uint32_t received)
{
	struct gga_lc_durable d = {
		.reached = v->persisted_mask,
		.sync = v->persisted_sync,
		.rec = v->persisted_rec,
	};

	return gga_lc_ack_decide(&d, v->n, v->k, held, received,
				 lc_mask_where(v, gga_lc_run_reads)) == GGA_LC_ACK_YES;
}

void
gga_lc_record_make(struct gga_lc_record *rec, uint32_t n, uint64_t events, uint64_t bitmap_events,
		   uint32_t sync, const uint8_t *needs, uint32_t rec_mask, uint64_t rec_offset)
{
	uint32_t i;

	memset(rec, 0, sizeof(*rec));
	rec->events = events;
	rec->bitmap_events = bitmap_events;
	for (i = 0; i < n; i++) {
		rec->member_state[i] = (sync & LC_BIT(i))               ? GGA_SB_MEMBER_IN_SYNC :
				       needs[i] == GGA_LC_NEEDS_REBUILD ? GGA_SB_MEMBER_REBUILD :
									  GGA_SB_MEMBER_STALE;
	}
	rec->rec_mask = rec_mask & (LC_BIT(n) - 1);
	rec->rec_offset = rec->rec_mask != 0 ? rec_offset : 0;
}

void
gga_lc_record_fill(const struct gga_lc_view *v, struct gga_lc_record *rec)
{
	uint8_t needs[GGA_LC_MAX_MEMBERS];
	uint32_t i, sync = 0, recs = 0;

	for (i = 0; i < v->n; i++) {
		needs[i] = v->mb[i].needs;
		sync |= v->mb[i].needs == GGA_LC_NEEDS_NONE ? LC_BIT(i) : 0;
		recs |= v->mb[i].rec ? LC_BIT(i) : 0;
	}
	gga_lc_record_make(rec, v->n, v->events, v->bitmap_events, sync, needs, recs,
			   v->rec_offset);
	for (i = 0; i < v->n; i++) {
		if (v->mb[i].faulted && rec->member_state[i] != GGA_SB_MEMBER_IN_SYNC) {
			rec->member_state[i] |= GGA_SB_MEMBER_FAULTED;
		}
	}
}

bool
gga_lc_may_record(const struct gga_lc_view *v)
{
	return lc_online(v) >= v->k;
}

/*
 * Ask for an update of every member that takes records, formatting the
 * reserved region of the blank ones first. Rule 1: the count goes up when the
 * update is asked for, not when it lands, so a short update is never reused.
 * A member neither online nor rebuilding is recorded as not in sync (rule 7).
 * With fewer than k online nothing is written (rule 5): an update that only
 * members fewer than k hold could be outvoted by k others that never saw it,
 * which would then reuse its count with other states.
 */
static void
lc_persist(struct gga_lc_view *v, struct gga_lc_actions *act)
{
	uint32_t i, to, format = 0;

	if (!gga_lc_may_record(v)) {
		return;
	}
	for (i = 0; i < v->n; i++) {
		if (v->mb[i].run != GGA_LC_ONLINE && v->mb[i].run != GGA_LC_REBUILDING &&
		    v->mb[i].needs == GGA_LC_NEEDS_NONE) {
			v->mb[i].needs = GGA_LC_NEEDS_RESYNC;
		}
		if (v->mb[i].blank && v->mb[i].run == GGA_LC_STALE) {
			format |= LC_BIT(i);
			v->mb[i].blank = false;
		}
	}
	to = lc_mask_where(v, lc_run_takes_records);
	/*
	 * The record and its count are the writer's to ask for when it issues
	 * the update (gga_lc_issue()): several changes asked for while it is busy
	 * go out in one update, and no count is skipped (a member one behind the
	 * freshest after a crash missed exactly one update, see assembly).
	 */
	act->flags |= GGA_LC_ACT_PERSIST;
	act->persist_to = to;
	if (format != 0) {
		act->flags |= GGA_LC_ACT_FORMAT;
		act->format_mask |= format;
	}
}

bool
gga_lc_issue(struct gga_lc_view *v, struct gga_lc_record *rec)
{
	uint32_t i;

	if (!gga_lc_may_record(v)) {
		/* Rule 5: nothing is written below k. */
		return false;
	}
	for (i = 0; i < v->n; i++) {
		if (!gga_lc_run_writes(v->mb[i].run) && v->mb[i].needs == GGA_LC_NEEDS_NONE) {
			/* Rule 7: a member neither online nor rebuilding is not in sync. */
			v->mb[i].needs = GGA_LC_NEEDS_RESYNC;
		}
	}
	if (v->clear_one_phase) {
		/* One-phase clear: the update carries its own count as bitmap_events. */
		v->bitmap_events = v->events + 1;
	}
	/* Rule 1: a new count for every update issued, persisted or not. */
	v->events++;
	gga_lc_record_fill(v, rec);
	v->issued_sync = 0;
	v->issued_rec = rec->rec_mask;
	for (i = 0; i < v->n; i++) {
		if (rec->member_state[i] == GGA_SB_MEMBER_IN_SYNC) {
			v->issued_sync |= LC_BIT(i);
		}
	}
	if (v->clear.stage == GGA_LC_CLEAR_FIRST || v->clear.stage == GGA_LC_CLEAR_SECOND) {
		/* This update carries the clear's stage: its landing steps it. */
		v->clear_issued = v->events;
	}
	if (v->clear_one_phase) {
		v->clear_one_phase = false;
		v->clear_events = v->events;
	}
	return true;
}

void
gga_lc_unissue(struct gga_lc_view *v, uint64_t events)
{
	if (events != 0 && v->events == events) {
		v->events--;
	}
}

/* A pass stops without success: its targets wait again, the checkpoint goes (rule 6). */
static void
lc_pass_end_failed(struct gga_lc_view *v, bool retry_wait)
{
	uint32_t i;

	for (i = 0; i < v->n; i++) {
		if ((v->pass_targets & LC_BIT(i)) && v->mb[i].run == GGA_LC_REBUILDING) {
			v->mb[i].run = GGA_LC_STALE;
		}
	}
	if (v->rules.drop_checkpoint) {
		for (i = 0; i < v->n; i++) {
			v->mb[i].rec = false;
		}
		v->rec_offset = 0;
	}
	v->pass = false;
	v->pass_targets = 0;
	v->retry_wait = retry_wait;
}

/*
 * Start a pass over every stale member if none runs, k members are online
 * and no retry delay is pending. A checkpoint is resumed only if an assembly
 * found it and every target is one of its members (rule 6); e5a27b9 resumed
 * any checkpoint whose mask equals the targets.
 */
static void
lc_maybe_start(struct gga_lc_view *v, struct gga_lc_actions *act)
{
	uint32_t i, targets = 0, recs = 0;
	uint64_t from = 0;
	bool rebuild = false;

	if (v->pass || v->deleted || v->retry_wait || lc_online(v) < v->k) {
		return;
	}
	for (i = 0; i < v->n; i++) {
		if (v->mb[i].run == GGA_LC_STALE && !v->mb[i].foreign && !v->mb[i].held) {
			targets |= LC_BIT(i);
			rebuild |= v->mb[i].needs == GGA_LC_NEEDS_REBUILD;
		}
		if (v->mb[i].rec) {
			recs |= LC_BIT(i);
		}
	}
	if (targets == 0) {
		return;
	}
	if (v->rules.drop_checkpoint) {
		if (v->resume_ok && recs != 0 && (targets & ~recs) == 0) {
			from = v->rec_offset;
		}
	} else if (recs != 0 && recs == targets) {
		from = v->rec_offset;
	}
	v->resume_ok = false;
	for (i = 0; i < v->n; i++) {
		v->mb[i].rec = (targets & LC_BIT(i)) != 0;
		if (targets & LC_BIT(i)) {
			v->mb[i].run = GGA_LC_REBUILDING;
		}
	}
	v->rec_offset = from;
	v->pass = true;
	v->pass_targets = targets;
	v->pass_rebuild = rebuild;
	act->flags |= GGA_LC_ACT_START_PASS;
	act->pass_targets = targets;
	act->pass_rebuild = rebuild;
	act->pass_from = from;
	lc_persist(v, act);
}

/*
 * A member holds nothing trusted: format its region and rebuild it whole.
 * e5a27b9 wrote the new record with the unchanged count, to it alone (B1).
 */
static void
lc_format(struct gga_lc_view *v, uint32_t i, struct gga_lc_actions *act)
{
	v->mb[i].run = GGA_LC_STALE;
	v->mb[i].needs = GGA_LC_NEEDS_REBUILD;
	v->mb[i].rec = false;
	v->mb[i].foreign = false;
	v->mb[i].faulted = false;
	if (v->rules.format_raises_events) {
		v->mb[i].blank = true;
		lc_persist(v, act);
	} else {
		gga_lc_record_fill(v, &act->record);
		act->flags |= GGA_LC_ACT_PERSIST | GGA_LC_ACT_FORMAT | GGA_LC_ACT_RECORD_MADE;
		act->persist_to = LC_BIT(i);
		act->format_mask = LC_BIT(i);
	}
	lc_maybe_start(v, act);
}

static void
lc_fail(struct gga_lc_view *v, uint32_t i, struct gga_lc_actions *act)
{
	struct gga_lc_member *mb = &v->mb[i];

	if (mb->run != GGA_LC_ONLINE && mb->run != GGA_LC_REBUILDING && mb->run != GGA_LC_STALE) {
		return;
	}
	mb->run = GGA_LC_FAILED;
	if (v->rules.drop_checkpoint) {
		mb->rec = false;
	}
	if (v->pass && (v->pass_targets & LC_BIT(i))) {
		v->pass_targets &= ~LC_BIT(i);
		if (v->pass_targets == 0) {
			act->flags |= GGA_LC_ACT_STOP_PASS;
			lc_pass_end_failed(v, false);
		}
	}
	if (lc_online(v) < v->k) {
		/* Rule 5: nothing can be acknowledged now, so nobody can miss a write. */
		if (v->pass) {
			act->flags |= GGA_LC_ACT_STOP_PASS;
			lc_pass_end_failed(v, true);
		}
		act->flags |= GGA_LC_ACT_FAIL_IO;
		return;
	}
	if (mb->needs == GGA_LC_NEEDS_NONE) {
		mb->needs = GGA_LC_NEEDS_RESYNC;
	}
	lc_persist(v, act);
}

static void
lc_probe(struct gga_lc_view *v, const struct gga_lc_event *ev, struct gga_lc_actions *act)
{
	struct gga_lc_member *mb = &v->mb[ev->member];

	if ((mb->run != GGA_LC_FAILED && mb->run != GGA_LC_ABSENT) || mb->faulted) {
		/* A faulted member waits for the operator, whatever it holds. */
		return;
	}
	switch (ev->found) {
	case GGA_LC_FOUND_ABSENT:
		return;
	case GGA_LC_FOUND_FOREIGN:
		mb->foreign = true;
		return;
	case GGA_LC_FOUND_BLANK:
		if (!gga_lc_may_record(v)) {
			/*
			 * Rule 5: no record may be written, so it cannot be formatted;
			 * it stays failed and is probed again once the array is back.
			 */
			return;
		}
		lc_format(v, ev->member, act);
		return;
	case GGA_LC_FOUND_RECORD:
		break;
	}
	if (ev->rec.events > v->events) {
		/* A record of an update this writer never saw: never reuse its count. */
		v->events = ev->rec.events;
	}
	if (v->rules.check_own_events) {
		if (ev->rec.events < v->seen[ev->member] && mb->needs == GGA_LC_NEEDS_NONE) {
			/* Not the record it had when it went: an old copy of it. */
			mb->needs = GGA_LC_NEEDS_RESYNC;
		}
		if (ev->rec.events < v->bitmap_events) {
			/* Rule 3: older than the last clear; marks of writes it lacks are gone. */
			mb->needs = GGA_LC_NEEDS_REBUILD;
		}
	}
	v->seen[ev->member] = ev->rec.events;
	if (mb->needs == GGA_LC_NEEDS_NONE && lc_online(v) < v->k) {
		/* It failed with the array: no write was acknowledged since. */
		mb->run = GGA_LC_ONLINE;
		lc_persist(v, act);
		lc_maybe_start(v, act);
		return;
	}
	if (mb->needs == GGA_LC_NEEDS_NONE) {
		mb->needs = GGA_LC_NEEDS_RESYNC;
	}
	mb->run = GGA_LC_STALE;
	lc_persist(v, act);
	lc_maybe_start(v, act);
}

static void
lc_pass_done(struct gga_lc_view *v, const struct gga_lc_event *ev, struct gga_lc_actions *act)
{
	uint32_t i, targets;

	if (!v->pass && v->rules.cas_state) {
		return;
	}
	if (ev->result != 0) {
		if (!v->pass) {
			return;
		}
		lc_pass_end_failed(v, true);
		lc_persist(v, act);
		return;
	}
	/* Rule 9: only from the state the pass decided in (e5a27b9 set blindly, B6). */
	targets = v->rules.cas_state ? v->pass_targets : ev->mask;
	for (i = 0; i < v->n; i++) {
		if (!(targets & LC_BIT(i)) ||
		    (v->rules.cas_state && v->mb[i].run != GGA_LC_REBUILDING)) {
			continue;
		}
		v->mb[i].run = GGA_LC_ONLINE;
		v->mb[i].needs = GGA_LC_NEEDS_NONE;
	}
	for (i = 0; i < v->n; i++) {
		v->mb[i].rec = false;
	}
	v->rec_offset = 0;
	v->pass = false;
	v->pass_targets = 0;
	lc_persist(v, act);
	lc_maybe_start(v, act);
}

bool
gga_lc_clear_may_start(const struct gga_lc_clear *c, uint32_t online, uint32_t n, bool pass,
		       uint32_t rec_mask)
{
	return c->stage == GGA_LC_CLEAR_IDLE && online == n && !pass && rec_mask == 0;
}

enum gga_lc_clear_stage
gga_lc_clear_landed(struct gga_lc_clear *c, uint8_t carried, uint64_t events, bool whole)
{
	if (carried == GGA_LC_CLEAR_IDLE) {
		return (enum gga_lc_clear_stage)c->stage;
	}
	if (!whole || c->stage != carried) {
		/* A member was left out (or it was overtaken): over again once all are back. */
		c->stage = GGA_LC_CLEAR_IDLE;
	} else if (carried == GGA_LC_CLEAR_FIRST) {
		c->first_events = events;
		c->stage = GGA_LC_CLEAR_SECOND;
	} else if (carried == GGA_LC_CLEAR_SECOND) {
		c->stage = GGA_LC_CLEAR_READY;
	}
	return (enum gga_lc_clear_stage)c->stage;
}

static uint32_t
lc_rec_mask(const struct gga_lc_view *v)
{
	uint32_t i, mask = 0;

	for (i = 0; i < v->n; i++) {
		mask |= v->mb[i].rec ? LC_BIT(i) : 0;
	}
	return mask;
}

/*
 * Rule 8. One phase: an update whose bitmap_events is its own count, then the
 * clear. Two phases (gga_lc_clear_landed()): a plain update first; once every
 * member has it, one whose bitmap_events is the plain one's count, then the
 * clear.
 */
static void
lc_bitmap_clear(struct gga_lc_view *v, struct gga_lc_actions *act)
{
	uint32_t i;

	if (v->clear_events != 0 ||
	    !gga_lc_clear_may_start(&v->clear, lc_online(v), v->n, v->pass, lc_rec_mask(v))) {
		return;
	}
	for (i = 0; i < v->n; i++) {
		if (v->mb[i].needs != GGA_LC_NEEDS_NONE) {
			return;
		}
	}
	if (v->rules.clear_two_phase) {
		v->clear.stage = GGA_LC_CLEAR_FIRST;
		lc_persist(v, act);
		return;
	}
	v->clear_one_phase = true;
	lc_persist(v, act);
}

static void
lc_persisted(struct gga_lc_view *v, const struct gga_lc_event *ev, struct gga_lc_actions *act)
{
	uint32_t i, all = LC_BIT(v->n) - 1;
	uint8_t carried;

	for (i = 0; i < v->n; i++) {
		if (ev->mask & LC_BIT(i)) {
			v->seen[i] = ev->events;
		}
	}
	if (ev->events == v->events && ev->events > v->persisted_events) {
		/* Only the latest: an older update's states may already be out of date. */
		v->persisted_events = ev->events;
		v->persisted_mask = ev->mask;
		v->persisted_sync = v->issued_sync;
		v->persisted_rec = v->rules.ack_waits_checkpoint ? v->issued_rec : 0;
	}
	if ((v->clear.stage == GGA_LC_CLEAR_FIRST || v->clear.stage == GGA_LC_CLEAR_SECOND) &&
	    ev->events == v->clear_issued) {
		carried = v->clear.stage;
		switch (gga_lc_clear_landed(&v->clear, carried, ev->events,
					    (ev->mask & all) == all && lc_online(v) == v->n &&
						    !v->pass)) {
		case GGA_LC_CLEAR_SECOND:
			v->bitmap_events = v->clear.first_events;
			lc_persist(v, act);
			break;
		case GGA_LC_CLEAR_READY:
			act->flags |= GGA_LC_ACT_CLEAR_BITMAP;
			v->clear.stage = GGA_LC_CLEAR_IDLE;
			break;
		default:
			break;
		}
		return;
	}
	if (v->clear_events != 0 && ev->events == v->clear_events) {
		v->clear_events = 0;
		if ((ev->mask & all) == all) {
			act->flags |= GGA_LC_ACT_CLEAR_BITMAP;
		}
	}
}

/*
 * The member's confirmed errors passed the policy's limit. It is faulted
 * (failed, and recorded so, so that no restart trusts it again) only while
 * k other members stay online. One in sync (online, or failed with the
 * array) among the last k would otherwise be the end of the array, or of
 * its only way back: faulting it would fail every block to stop errors on
 * some, so it stays, and its bad blocks fail alone (md and ZFS likewise
 * never fail the last redundancy for errors). One that is not in sync holds
 * nothing the others lack and may always be faulted.
 */
static void
lc_fault(struct gga_lc_view *v, uint32_t i, struct gga_lc_actions *act)
{
	struct gga_lc_member *mb = &v->mb[i];
	uint32_t others = lc_online(v) - (mb->run == GGA_LC_ONLINE ? 1 : 0);

	if (mb->faulted) {
		return;
	}
	if (mb->needs == GGA_LC_NEEDS_NONE && v->rules.fault_keeps_k && others < v->k) {
		act->flags |= GGA_LC_ACT_FAULT_KEPT;
		return;
	}
	mb->faulted = true;
	if (mb->run == GGA_LC_FAILED || mb->run == GGA_LC_ABSENT) {
		/* Down already: only the record changes. */
		if (mb->needs == GGA_LC_NEEDS_NONE) {
			mb->needs = GGA_LC_NEEDS_RESYNC;
		}
		lc_persist(v, act);
		return;
	}
	lc_fail(v, i, act);
}

/*
 * The operator clears a faulted member (only a faulted one: another in sync
 * holds what may be the last copy of a write). It comes back as a failed
 * member that missed the writes since its fault (all marked in the bitmap,
 * which is not cleared while a member is down): the probe takes it back and
 * a resync brings it up to date; bad fragments left on it are mended as they
 * are read, or by a scrub.
 */
static int
lc_distrust(struct gga_lc_view *v, uint32_t i, struct gga_lc_actions *act)
{
	struct gga_lc_member *mb = &v->mb[i];

	if (!mb->faulted) {
		return -EINVAL;
	}
	if (mb->run != GGA_LC_FAILED && mb->run != GGA_LC_ABSENT) {
		return -EBUSY;
	}
	mb->faulted = false;
	if (mb->needs == GGA_LC_NEEDS_NONE) {
		mb->needs = GGA_LC_NEEDS_RESYNC;
	}
	mb->rec = false;
	lc_persist(v, act);
	return 0;
}

/* Members found foreign are probed again: what they hold now decides (lc_probe()). */
static void
lc_readd(struct gga_lc_view *v, struct gga_lc_actions *act)
{
	uint32_t i;

	for (i = 0; i < v->n; i++) {
		v->mb[i].foreign = false;
	}
	lc_maybe_start(v, act);
}

int
gga_lc_apply(struct gga_lc_view *v, const struct gga_lc_event *ev, struct gga_lc_actions *act)
{
	memset(act, 0, sizeof(*act));
	if (ev->member >= v->n) {
		return -EINVAL;
	}
	if (v->deleted) {
		return 0;
	}
	switch (ev->type) {
	case GGA_LC_EV_IO_ERROR:
	case GGA_LC_EV_CTRLR_LOST:
		lc_fail(v, ev->member, act);
		break;
	case GGA_LC_EV_CTRLR_BACK:
		if ((v->mb[ev->member].run == GGA_LC_FAILED ||
		     v->mb[ev->member].run == GGA_LC_ABSENT) &&
		    !v->mb[ev->member].faulted) {
			act->flags |= GGA_LC_ACT_PROBE;
			act->probe_member = ev->member;
		}
		break;
	case GGA_LC_EV_PROBE:
		lc_probe(v, ev, act);
		break;
	case GGA_LC_EV_PASS_START:
		v->retry_wait = false;
		lc_maybe_start(v, act);
		break;
	case GGA_LC_EV_PASS_CHECKPOINT:
		if (v->pass) {
			v->rec_offset = ev->offset;
			lc_persist(v, act);
		}
		break;
	case GGA_LC_EV_PASS_DONE:
		lc_pass_done(v, ev, act);
		break;
	case GGA_LC_EV_REPLACE:
		if (v->mb[ev->member].run != GGA_LC_FAILED &&
		    v->mb[ev->member].run != GGA_LC_ABSENT &&
		    v->mb[ev->member].run != GGA_LC_STALE) {
			return -EBUSY;
		}
		lc_format(v, ev->member, act);
		break;
	case GGA_LC_EV_PERSISTED:
		lc_persisted(v, ev, act);
		break;
	case GGA_LC_EV_BITMAP_CLEAR:
		lc_bitmap_clear(v, act);
		break;
	case GGA_LC_EV_DELETE:
		if (v->pass) {
			act->flags |= GGA_LC_ACT_STOP_PASS;
			v->pass = false;
		}
		v->deleted = true;
		break;
	case GGA_LC_EV_DISTRUST: {
		int rc = lc_distrust(v, ev->member, act);

		if (rc != 0) {
			return rc;
		}
		break;
	}
	case GGA_LC_EV_FAULT:
		lc_fault(v, ev->member, act);
		break;
	case GGA_LC_EV_READD:
		lc_readd(v, act);
		break;
	}
	if (gga_lc_array_state(v) == GGA_LC_ARRAY_FAILED) {
		act->flags |= GGA_LC_ACT_FAIL_IO;
	}
	return 0;
}

static bool
lc_record_same(const struct gga_lc_record *a, const struct gga_lc_record *b, uint32_t n)
{
	return a->events == b->events && a->bitmap_events == b->bitmap_events &&
	       a->rec_mask == b->rec_mask && a->rec_offset == b->rec_offset &&
	       memcmp(a->member_state, b->member_state, n) == 0;
}

/*
 * The record assembly goes by (rule 2): the one with the largest count, or,
 * where records with that count disagree, each member's worst state among
 * them and no checkpoint. e5a27b9 took the first such record (B1).
 */
static int
lc_fresh(const struct gga_lc_view *v, const enum gga_lc_found *found,
	 const struct gga_lc_record *rec, struct gga_lc_record *fresh)
{
	uint32_t i, j;
	int first = -1;

	for (i = 0; i < v->n; i++) {
		if (found[i] == GGA_LC_FOUND_RECORD &&
		    (first < 0 || rec[i].events > rec[first].events)) {
			first = (int)i;
		}
	}
	if (first < 0) {
		return -ENODEV;
	}
	*fresh = rec[first];
	if (!v->rules.format_raises_events) {
		return 0;
	}
	for (i = 0; i < v->n; i++) {
		if (found[i] != GGA_LC_FOUND_RECORD || rec[i].events != fresh->events ||
		    lc_record_same(&rec[i], &rec[first], v->n)) {
			continue;
		}
		for (j = 0; j < v->n; j++) {
			/* rebuild > stale > in sync; faulted if either says so */
			if (gga_sb_member_need(rec[i].member_state[j]) >
			    gga_sb_member_need(fresh->member_state[j])) {
				fresh->member_state[j] = (uint8_t)(gga_sb_member_need(
									   rec[i].member_state[j]) |
								   (fresh->member_state[j] &
								    GGA_SB_MEMBER_FAULTED));
			}
			fresh->member_state[j] |= rec[i].member_state[j] & GGA_SB_MEMBER_FAULTED;
		}
		if (rec[i].bitmap_events > fresh->bitmap_events) {
			fresh->bitmap_events = rec[i].bitmap_events;
		}
		fresh->rec_mask = 0;
		fresh->rec_offset = 0;
	}
	return 0;
}

static enum gga_lc_needs
lc_needs_of(uint8_t sb_state)
{
	sb_state = gga_sb_member_need(sb_state);
	return sb_state == GGA_SB_MEMBER_IN_SYNC ? GGA_LC_NEEDS_NONE :
	       sb_state == GGA_SB_MEMBER_STALE   ? GGA_LC_NEEDS_RESYNC :
						   GGA_LC_NEEDS_REBUILD;
}

static uint32_t
lc_trust(struct gga_lc_view *v, uint32_t mask, uint32_t trusted)
{
	uint32_t i;

	for (i = 0; i < v->n; i++) {
		if (mask & LC_BIT(i)) {
			v->mb[i].run = GGA_LC_ONLINE;
			v->mb[i].needs = GGA_LC_NEEDS_NONE;
			v->mb[i].rec = false;
			trusted++;
		}
	}
	return trusted;
}

static int
lc_refuse(struct gga_lc_actions *act, int rc, const char *why)
{
	act->flags = GGA_LC_ACT_REFUSE;
	act->refuse = rc;
	act->why = why;
	return rc;
}

void
gga_lc_new(struct gga_lc_view *v, uint32_t k, uint32_t m)
{
	uint32_t i;

	memset(v, 0, sizeof(*v));
	gga_lc_rules_default(&v->rules);
	v->n = k + m;
	v->k = k;
	v->m = m;
	for (i = 0; i < v->n && i < GGA_LC_MAX_MEMBERS; i++) {
		v->mb[i].run = GGA_LC_ONLINE;
		v->mb[i].needs = GGA_LC_NEEDS_NONE;
	}
}

int
gga_lc_assemble(struct gga_lc_view *v, uint32_t k, uint32_t m, const struct gga_lc_rules *rules,
		const enum gga_lc_found *found, const struct gga_lc_record *rec, uint32_t held,
		struct gga_lc_actions *act)
{
	struct gga_lc_record fresh;
	uint32_t i, bit, one_below = 0, behind = 0, trusted = 0;
	struct gga_lc_member *mb;

	memset(v, 0, sizeof(*v));
	memset(act, 0, sizeof(*act));
	if (rules != NULL) {
		v->rules = *rules;
	} else {
		gga_lc_rules_default(&v->rules);
	}
	v->n = k + m;
	v->k = k;
	v->m = m;
	if (k == 0 || m == 0 || v->n > GGA_LC_MAX_MEMBERS) {
		return lc_refuse(act, -EINVAL, "bad geometry");
	}
	for (i = 0; i < v->n; i++) {
		if (found[i] == GGA_LC_FOUND_FOREIGN) {
			return lc_refuse(act, -EEXIST, "a member holds a foreign record");
		}
	}
	if (lc_fresh(v, found, rec, &fresh) != 0) {
		return lc_refuse(act, -ENODEV, "no member holds a record of the array");
	}
	v->events = fresh.events;
	v->bitmap_events = fresh.bitmap_events;
	for (i = 0; i < v->n; i++) {
		mb = &v->mb[i];
		bit = LC_BIT(i);
		mb->needs = (uint8_t)lc_needs_of(fresh.member_state[i]);
		mb->rec = (fresh.rec_mask & bit) != 0;
		mb->faulted = (fresh.member_state[i] & GGA_SB_MEMBER_FAULTED) != 0;
		if (mb->faulted && found[i] != GGA_LC_FOUND_ABSENT &&
		    found[i] != GGA_LC_FOUND_FOREIGN) {
			/* Faulted: neither read nor written until the operator says so. */
			mb->run = GGA_LC_FAILED;
			mb->rec = mb->rec && !v->rules.drop_checkpoint;
			if (found[i] == GGA_LC_FOUND_RECORD) {
				v->seen[i] = rec[i].events;
			}
			continue;
		}
		switch (found[i]) {
		case GGA_LC_FOUND_ABSENT:
		case GGA_LC_FOUND_FOREIGN:
			mb->run = GGA_LC_ABSENT;
			if (mb->needs == GGA_LC_NEEDS_NONE) {
				mb->needs = GGA_LC_NEEDS_RESYNC;
			}
			mb->rec = mb->rec && !v->rules.drop_checkpoint;
			break;
		case GGA_LC_FOUND_BLANK:
			/* Rule 4: never trusted, and nothing of a pass is on it (B3). */
			mb->run = GGA_LC_STALE;
			mb->needs = GGA_LC_NEEDS_REBUILD;
			mb->rec = mb->rec && !v->rules.blank_drops_checkpoint;
			mb->blank = true;
			break;
		case GGA_LC_FOUND_RECORD:
			v->seen[i] = rec[i].events;
			if (v->rules.check_own_events && rec[i].events < fresh.bitmap_events) {
				/* Rule 3: older than the last clear (B4). */
				if (mb->needs == GGA_LC_NEEDS_NONE &&
				    rec[i].events + 1 == fresh.bitmap_events) {
					one_below |= bit;
				}
				mb->needs = GGA_LC_NEEDS_REBUILD;
			} else if (v->rules.check_own_events && rec[i].events < fresh.events &&
				   mb->needs == GGA_LC_NEEDS_NONE) {
				/*
				 * The freshest record says in sync, its own is older: it may be an
				 * old copy; the marks since the last clear cover what it lacks.
				 */
				if (rec[i].events + 1 == fresh.events) {
					behind |= bit;
				}
				mb->needs = GGA_LC_NEEDS_RESYNC;
			}
			mb->run = mb->needs == GGA_LC_NEEDS_NONE ? GGA_LC_ONLINE : GGA_LC_STALE;
			if (mb->needs == GGA_LC_NEEDS_NONE && v->rules.drop_checkpoint) {
				mb->rec = false;
			}
			trusted += mb->needs == GGA_LC_NEEDS_NONE;
			break;
		}
	}
	if (trusted < k) {
		/*
		 * A crash in the middle of the last update: those one behind missed
		 * only it, and no write was acknowledged after it was asked for.
		 */
		trusted = lc_trust(v, behind, trusted);
	}
	if (trusted < k && v->rules.trust_one_below) {
		/* A crash in the middle of the clearing update. */
		trusted = lc_trust(v, one_below, trusted);
	}
	if (trusted < k) {
		/* Rule 5: nothing is written, not even a record. */
		return lc_refuse(act, -EIO, "fewer than k members hold every acknowledged write");
	}
	for (i = 0; i < v->n; i++) {
		if (v->mb[i].rec) {
			v->rec_offset = fresh.rec_offset;
			v->resume_ok = true;
		}
		v->mb[i].held = (held & LC_BIT(i)) != 0;
	}
	lc_persist(v, act);
	lc_maybe_start(v, act);
	if (!v->pass && v->resume_ok && v->rules.drop_checkpoint) {
		/*
		 * Rule 6: the pass the records describe cannot resume now (its
		 * members are held); writes will land below its checkpoint before
		 * one can, so the next starts over.
		 */
		for (i = 0; i < v->n; i++) {
			v->mb[i].rec = false;
		}
		v->rec_offset = 0;
		v->resume_ok = false;
	}
	return 0;
}

bool
gga_lc_assemble_may_wait(const struct gga_lc_view *v, const enum gga_lc_found *found, int rc)
{
	uint32_t i, trusted = 0, absent = 0;

	if (rc != -EIO) {
		return false;
	}
	for (i = 0; i < v->n && i < GGA_LC_MAX_MEMBERS; i++) {
		trusted += v->mb[i].run == GGA_LC_ONLINE;
		/* A faulted member that returns is still not trusted. */
		absent += found[i] == GGA_LC_FOUND_ABSENT && !v->mb[i].faulted;
	}
	return absent > 0 && trusted + absent >= v->k;
}

bool
gga_lc_assembly_written(const struct gga_lc_view *v, uint32_t written)
{
	uint32_t i, held = 0;

	for (i = 0; i < v->n && i < GGA_LC_MAX_MEMBERS; i++) {
		held += v->mb[i].run == GGA_LC_ONLINE && (written & LC_BIT(i)) != 0;
	}
	return held >= v->k;
}

bool
gga_lc_stall_may_fail(uint32_t online, uint32_t k, uint32_t i)
{
	if (i >= GGA_LC_MAX_MEMBERS || !(online & LC_BIT(i))) {
		return true;
	}
	return (uint32_t)__builtin_popcount(online & ~LC_BIT(i)) >= k;
}

/* The lowest member of a mask (0 for an empty one, which no refusal names). */
static uint32_t
lc_lowest(uint32_t mask)
{
	return mask != 0 ? (uint32_t)__builtin_ctz(mask) : 0;
}

static void
lc_plan_refuse(struct gga_lc_plan *plan, int rc, enum gga_lc_plan_why why, uint32_t member)
{
	plan->kind = GGA_LC_PLAN_REFUSE;
	plan->rc = rc;
	plan->why = why;
	plan->member = member;
}

void
gga_lc_plan_create(uint32_t n, uint32_t k, enum gga_lc_mode mode, bool force, uint32_t absent,
		   uint32_t blank, uint32_t formatted, uint32_t other, struct gga_lc_plan *plan)
{
	uint32_t all = n >= 32 ? ~0u : LC_BIT(n) - 1, i;

	memset(plan, 0, sizeof(*plan));
	plan->kind = GGA_LC_PLAN_ASSEMBLE;
	switch (mode) {
	case GGA_LC_MODE_CREATE:
		if (!force && (formatted | other) != 0) {
			i = lc_lowest(formatted | other);
			lc_plan_refuse(plan, -EEXIST,
				       (formatted & LC_BIT(i)) ? GGA_LC_WHY_NOT_BLANK_RECORD :
								 GGA_LC_WHY_NOT_BLANK_DATA,
				       i);
			return;
		}
		plan->kind = GGA_LC_PLAN_FORMAT;
		return;
	case GGA_LC_MODE_AUTO:
	case GGA_LC_MODE_ASSEMBLE:
		if (other != 0) {
			lc_plan_refuse(plan, -EMEDIUMTYPE, GGA_LC_WHY_OTHER_DATA, lc_lowest(other));
			return;
		}
		if (absent != 0 && formatted == 0) {
			lc_plan_refuse(plan, -ENODEV, GGA_LC_WHY_ABSENT_NEW, lc_lowest(absent));
			return;
		}
		if (mode == GGA_LC_MODE_ASSEMBLE && formatted == 0) {
			lc_plan_refuse(plan, -ENOENT, GGA_LC_WHY_NOTHING_TO_ASSEMBLE,
				       lc_lowest(blank));
			return;
		}
		/*
		 * Blank members beside formatted ones are the array's members come
		 * back empty (a replaced disk), rebuilt at assembly if enough of
		 * the others are in sync. Beside fewer than k formatted ones the
		 * array cannot be assembled, and only mode create with force
		 * formats over the formatted ones.
		 */
		if (blank != 0 && formatted != 0 && (uint32_t)__builtin_popcount(formatted) < k) {
			lc_plan_refuse(plan, -EEXIST, GGA_LC_WHY_TOO_FEW_FORMATTED,
				       lc_lowest(formatted));
			plan->member2 = lc_lowest(blank);
			return;
		}
		if (blank == all) {
			plan->kind = GGA_LC_PLAN_FORMAT;
		}
		return;
	}
	/* Any other mode: ASSEMBLE, unchecked (see gga_lifecycle.h). */
}
