/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The lifecycle of a gga bdev's members as one pure module: the array's view
 * of its members (who is online, who needs what, the event counter, the
 * recovery checkpoint) and every decision about it, as a function of
 * (view, event) to (new view, actions). It does no I/O, takes no lock, keeps
 * no global and never allocates: the I/O code feeds it events, from one
 * thread, and carries out the actions it returns, so the decisions can be
 * checked against every order of events (test/unit/bdev_gga/gga_lifecycle).
 *
 * The rules it follows are listed in docs/FORMAT.md, "Member lifecycle".
 */
#ifndef GGA_LIFECYCLE_H
#define GGA_LIFECYCLE_H

#include <stdbool.h>
#include <stdint.h>

#include "gga_format.h"

#define GGA_LC_MAX_MEMBERS GGA_MAX_FRAGS

/*
 * What a member is doing now, as the array sees it: the one member state of
 * the gga bdev (bdev_gga.h names it bdev_gga_member_state; the values are
 * reported by bdev_gga_get_info, so their order stays).
 */
enum gga_lc_run {
	GGA_LC_ONLINE = 0,     /* read and written: holds every acknowledged write */
	GGA_LC_FAILED = 1,     /* an I/O error or a lost controller: neither read nor written */
	GGA_LC_REBUILDING = 2, /* target of the running pass: written, not read */
	GGA_LC_STALE = 3,      /* reachable, takes records, waits for a recovery pass */
	GGA_LC_ABSENT = 4,     /* not found at assembly (or its base went away) */
};

/* Does a member in this state take reads; writes (and so each mask's rule)? */
static inline bool
gga_lc_run_reads(uint32_t run)
{
	return run == GGA_LC_ONLINE;
}

static inline bool
gga_lc_run_writes(uint32_t run)
{
	return run == GGA_LC_ONLINE || run == GGA_LC_REBUILDING;
}

/* What a member needs before it may be read again. */
enum gga_lc_needs {
	GGA_LC_NEEDS_NONE = 0,    /* holds every acknowledged write */
	GGA_LC_NEEDS_RESYNC = 1,  /* missed writes, all to regions marked in the bitmap */
	GGA_LC_NEEDS_REBUILD = 2, /* holds nothing trusted: every block is rebuilt */
};

enum gga_lc_array_state {
	GGA_LC_ARRAY_ONLINE = 0,   /* every member online: full redundancy */
	GGA_LC_ARRAY_DEGRADED = 1, /* at least k members online */
	GGA_LC_ARRAY_FAILED = 2,   /* fewer than k: every I/O fails */
};

/*
 * Each fix of the member lifecycle, on (true) by default but trust_one_below,
 * the first wording of rule 3 that the checker shows unsafe. Production code
 * MUST use gga_lc_rules_default(); turning one off reproduces the behaviour of
 * e5a27b9 (or the first wording of a rule) so that the checker can show what
 * it finds.
 */
struct gga_lc_rules {
	/* B1: formatting a member raises the event count; tied records that disagree
	 * give each member its worst state and drop the checkpoint (off: the first
	 * record with the largest count wins). */
	bool format_raises_events;
	/* B2: a pass member that fails or is absent loses its checkpoint bit, a pass
	 * that ends without success drops the checkpoint, and only an assembly
	 * resumes one (off: kept until a pass succeeds, resumed whenever the same
	 * members come back). */
	bool drop_checkpoint;
	/* B3: a member found blank at assembly loses its checkpoint bit. */
	bool blank_drops_checkpoint;
	/* B4: a member whose own record is older than the last bitmap clear needs a
	 * full rebuild; one whose record is older than the last one it was known to
	 * hold (probe) or than the freshest (assembly) is not trusted in sync. */
	bool check_own_events;
	/* B6: a pass that ends moves a target online only if it is still rebuilding
	 * (off: every target the pass had when it looked). */
	bool cas_state;
	/* Rule 3's exception as first written (default off, unsafe with the one-phase
	 * clear): at assembly, if fewer than k members are trusted, one exactly one
	 * update below bitmap_events is trusted as well. */
	bool trust_one_below;
	/* Bitmap clearing in two updates (see gga_lc_apply(), GGA_LC_EV_BITMAP_CLEAR):
	 * the update carrying bitmap_events follows a plain one that every member got,
	 * so bitmap_events is one below the clearing record's own count. */
	bool clear_two_phase;
	/* Rule 7 extended: a write a pass member missed waits until an update without
	 * its checkpoint bit is persisted, not only one that says it is not in sync
	 * (off: rule 7 as first written, which lets a resumed pass skip the write). */
	bool ack_waits_checkpoint;
	/* A member is faulted for errors (GGA_LC_EV_FAULT) only while k others stay
	 * online (off: always, which can fail the array by itself). */
	bool fault_keeps_k;
};

/* A decoded superblock record: the lifecycle fields only. */
struct gga_lc_record {
	uint64_t events;
	/* The events of the last update every member had before the bitmap was cleared. */
	uint64_t bitmap_events;
	uint64_t rec_offset;
	uint32_t rec_mask;
	uint8_t member_state[GGA_LC_MAX_MEMBERS]; /* enum gga_sb_member_state */
};

/* What assembly or a probe found on a member. */
enum gga_lc_found {
	GGA_LC_FOUND_RECORD = 0,  /* a record of this array, this role and geometry */
	GGA_LC_FOUND_BLANK = 1,   /* an all-zero record */
	GGA_LC_FOUND_FOREIGN = 2, /* another array, role or geometry, or a damaged record */
	GGA_LC_FOUND_ABSENT = 3,  /* no base bdev (assembly) or unreadable (probe) */
};

struct gga_lc_member {
	uint8_t run;   /* enum gga_lc_run */
	uint8_t needs; /* enum gga_lc_needs */
	bool rec;      /* in the persisted checkpoint's rec_mask */
	bool foreign;  /* holds a foreign record: only a replace takes it back */
	bool blank;    /* found blank (or replaced): its region is formatted by the next update */
	/*
	 * Not to be recovered now, though stale: the I/O code's policy (auto
	 * re-add off, a probe still reading it, its base going away). A pass
	 * leaves it out, as it leaves out a foreign one.
	 */
	bool held;
	/*
	 * Failed for errors (GGA_LC_EV_FAULT): recorded in the superblocks, never
	 * probed or re-added until the operator clears (GGA_LC_EV_DISTRUST) or
	 * replaces it.
	 */
	bool faulted;
};

/*
 * Rule 8: write-intent marks are cleared only after two updates that reached
 * every member, all of them online: a plain one (FIRST), then one whose
 * bitmap_events is the first one's count (SECOND); then (READY) the marks
 * may go. The module's GGA_LC_EV_BITMAP_CLEAR / GGA_LC_EV_PERSISTED and the
 * superblock writer (bm_clear_step) step it with the same two functions.
 */
enum gga_lc_clear_stage {
	GGA_LC_CLEAR_IDLE = 0,
	GGA_LC_CLEAR_FIRST,  /* the plain update is wanted or in flight */
	GGA_LC_CLEAR_SECOND, /* the update carrying bitmap_events is wanted or in flight */
	GGA_LC_CLEAR_READY,  /* both landed everywhere: the next sweep clears */
};

struct gga_lc_clear {
	uint8_t stage;         /* enum gga_lc_clear_stage */
	uint64_t first_events; /* the plain update's count, once it landed on every member */
};

/*
 * May a clear start: none under way, every member online (so in sync, and
 * no pass runs), and no checkpoint of a pass left (rec_mask).
 */
bool gga_lc_clear_may_start(const struct gga_lc_clear *c, uint32_t online, uint32_t n, bool pass,
			    uint32_t rec_mask);

/*
 * The update issued at stage `carried` (IDLE: not one of a clear) with count
 * `events` landed; `whole`: on every member, every member online. Returns the
 * new stage: SECOND asks for one more update, carrying bitmap_events =
 * c->first_events; READY lets the marks go. An update that was not whole, or
 * that a stage change overtook, starts the clear over (IDLE).
 */
enum gga_lc_clear_stage gga_lc_clear_landed(struct gga_lc_clear *c, uint8_t carried,
					    uint64_t events, bool whole);

struct gga_lc_view {
	struct gga_lc_rules rules;
	uint32_t n, k, m;
	uint64_t events;           /* largest event count seen or written */
	uint64_t bitmap_events;    /* see struct gga_lc_record */
	uint64_t rec_offset;       /* checkpoint: the pass is done below this block */
	uint64_t clear_events;     /* one-phase clear: events of the update it waits for */
	struct gga_lc_clear clear; /* two-phase clear (rule 8) */
	uint64_t clear_issued;     /* events of the update that carries clear.stage */
	bool clear_one_phase;      /* one-phase clear: the next update issued carries it */
	uint32_t pass_targets;     /* members of the running pass */
	bool pass;                 /* a recovery pass is running */
	bool pass_rebuild;         /* it copies every block, not only the marked ones */
	bool resume_ok;            /* an assembly found a checkpoint no pass has used yet */
	bool retry_wait;           /* a pass failed: the next starts on GGA_LC_EV_PASS_START */
	bool deleted;
	struct gga_lc_member mb[GGA_LC_MAX_MEMBERS];
	/* Per member: the count of the last record it is known to hold. */
	uint64_t seen[GGA_LC_MAX_MEMBERS];
	/* The latest update known persisted: its count, where it landed, who it says is in sync. */
	uint64_t persisted_events;
	uint32_t persisted_mask;
	uint32_t persisted_sync;
	uint32_t persisted_rec;
	uint32_t issued_sync; /* who the latest update asked for says is in sync */
	uint32_t issued_rec;  /* and its rec_mask */
};

enum gga_lc_event_type {
	GGA_LC_EV_IO_ERROR = 0,    /* member: an I/O (data, record or bitmap) failed */
	GGA_LC_EV_CTRLR_LOST,      /* member: its controller is gone */
	GGA_LC_EV_CTRLR_BACK,      /* member: its controller (or its media) is back */
	GGA_LC_EV_PROBE,           /* member: what reading its record found (found, rec) */
	GGA_LC_EV_PASS_START,      /* the retry delay is over, or auto re-add was turned on */
	GGA_LC_EV_PASS_CHECKPOINT, /* the pass is done below offset */
	GGA_LC_EV_PASS_DONE,       /* result 0, -EIO or -ECANCELED; mask: the targets it saw */
	GGA_LC_EV_REPLACE,         /* member: a new, blank base bdev in its place */
	GGA_LC_EV_PERSISTED,       /* the update `events` reached the members in mask */
	GGA_LC_EV_BITMAP_CLEAR,    /* the sweep would clear write-intent marks */
	GGA_LC_EV_DELETE,          /* the bdev is being deleted */
	GGA_LC_EV_DISTRUST,        /* member, faulted and down: cleared by the operator */
	GGA_LC_EV_READD,           /* auto re-add turned on: foreign members tried again */
	GGA_LC_EV_FAULT,           /* member: its confirmed errors passed the policy's limit */
};

struct gga_lc_event {
	enum gga_lc_event_type type;
	uint32_t member;          /* member events; 0 for the others */
	enum gga_lc_found found;  /* GGA_LC_EV_PROBE */
	struct gga_lc_record rec; /* GGA_LC_EV_PROBE with GGA_LC_FOUND_RECORD */
	uint64_t offset;          /* GGA_LC_EV_PASS_CHECKPOINT */
	int result;               /* GGA_LC_EV_PASS_DONE */
	uint32_t mask;            /* GGA_LC_EV_PASS_DONE, GGA_LC_EV_PERSISTED */
	uint64_t events;          /* GGA_LC_EV_PERSISTED */
};

/* Bits of struct gga_lc_actions.flags. */
#define GGA_LC_ACT_PERSIST      (1u << 0) /* write `record` to the members in persist_to */
#define GGA_LC_ACT_FORMAT       (1u << 1) /* write the reserved region of format_mask first */
#define GGA_LC_ACT_START_PASS   (1u << 2) /* start a pass: pass_targets, pass_rebuild, pass_from */
#define GGA_LC_ACT_STOP_PASS    (1u << 3) /* stop the running pass, without reporting it done */
#define GGA_LC_ACT_PROBE        (1u << 4) /* read probe_member's record, answer GGA_LC_EV_PROBE */
#define GGA_LC_ACT_FAIL_IO      (1u << 5) /* the array is failed: fail every I/O */
#define GGA_LC_ACT_CLEAR_BITMAP (1u << 6) /* the marks may be cleared and the bitmap written */
#define GGA_LC_ACT_REFUSE       (1u << 7) /* assembly refused: `refuse` and `why`, nothing written */
/* With PERSIST: `record` is made (only e5a27b9's format, rule B1 off); else gga_lc_issue(). */
#define GGA_LC_ACT_RECORD_MADE  (1u << 8)
/* GGA_LC_EV_FAULT refused: faulting it would leave fewer than k members online. */
#define GGA_LC_ACT_FAULT_KEPT   (1u << 9)

/*
 * What the I/O code must do, in this order: start pass (its cursor), format
 * and persist (an update: when the writer issues it, gga_lc_issue() gives the
 * record, the same for every member but for its member_index, and its count;
 * several asked for before the writer is free go out as one; then report
 * GGA_LC_EV_IO_ERROR for each member it could not write, then
 * GGA_LC_EV_PERSISTED with the members that have it), stop pass,
 * probe, clear the bitmap. Events that an action causes are applied before
 * the rest of the actions are carried out; FAIL_IO holds while the array is
 * failed.
 */
struct gga_lc_actions {
	uint32_t flags;
	uint32_t persist_to;
	struct gga_lc_record record;
	uint32_t format_mask;
	uint32_t pass_targets;
	bool pass_rebuild;
	uint64_t pass_from;
	uint32_t probe_member;
	int refuse; /* negative errno */
	const char *why;
};

/*
 * The superblock writer is free and an update was asked for (GGA_LC_ACT_PERSIST):
 * the record to write, with the next count (rule 1: every update issued
 * takes a new one, persisted or not; several changes asked for meanwhile go
 * out in one). False, and nothing to write, with fewer than k members online
 * (rule 5). A member neither online nor rebuilding is recorded as not in
 * sync (rule 7); the update carries the bitmap clear's stage, if one runs.
 */
bool gga_lc_issue(struct gga_lc_view *view, struct gga_lc_record *rec);

/*
 * Rule 5: may anything be written to the members' reserved regions now (a
 * record, or the format of a blank member)? Only with k members online: an
 * update that fewer than k hold could be outvoted by k that never saw it,
 * which would then reuse its count.
 */
bool gga_lc_may_record(const struct gga_lc_view *view);

/*
 * The update of count `events` was written to no member at all (none could
 * take it): if no other was issued since, its count is handed out again, so
 * that a member that misses the next update in a crash is exactly one behind
 * it (see assembly). A count any member may hold is never reused.
 */
void gga_lc_unissue(struct gga_lc_view *view, uint64_t events);

/*
 * What create was asked to do with what it finds on the members: the values
 * of bdev_gga.h's enum bdev_gga_mode (this header cannot include that one,
 * which includes it; bdev_gga_create.c checks that the two agree).
 */
enum gga_lc_mode {
	GGA_LC_MODE_AUTO = 0,     /* format if all are blank, else assemble */
	GGA_LC_MODE_CREATE = 1,   /* format; without force only blank members */
	GGA_LC_MODE_ASSEMBLE = 2, /* assemble; never format */
};

enum gga_lc_plan_kind {
	GGA_LC_PLAN_FORMAT = 0, /* format a new array on every member */
	GGA_LC_PLAN_ASSEMBLE,   /* assemble the existing array (its records are checked next) */
	GGA_LC_PLAN_REFUSE,     /* write nothing: rc, why, member (and member2) */
};

/* Why a plan refuses, and so what create's message says about `member`. */
enum gga_lc_plan_why {
	GGA_LC_WHY_NONE = 0,
	/* Mode create without force: `member` holds a gga superblock (-EEXIST). */
	GGA_LC_WHY_NOT_BLANK_RECORD,
	/* Mode create without force: `member` holds data that did not decode (-EEXIST). */
	GGA_LC_WHY_NOT_BLANK_DATA,
	/*
	 * Modes auto and assemble: `member` holds data that did not decode as a
	 * superblock. rc is -EMEDIUMTYPE; create words it, and picks the errno,
	 * from the member's own decode result.
	 */
	GGA_LC_WHY_OTHER_DATA,
	/* No member formatted and `member` absent: a new array needs all (-ENODEV). */
	GGA_LC_WHY_ABSENT_NEW,
	/* Mode assemble and no member formatted: `member` is blank (-ENOENT). */
	GGA_LC_WHY_NOTHING_TO_ASSEMBLE,
	/* `member` formatted, `member2` blank, fewer than k formatted (-EEXIST). */
	GGA_LC_WHY_TOO_FEW_FORMATTED,
};

struct gga_lc_plan {
	enum gga_lc_plan_kind kind;
	int rc;                   /* negative errno when REFUSE, else 0 */
	enum gga_lc_plan_why why; /* GGA_LC_WHY_NONE unless REFUSE */
	uint32_t member;          /* REFUSE: the member the refusal names */
	uint32_t member2;         /* GGA_LC_WHY_TOO_FEW_FORMATTED: the first blank member */
};

/*
 * Create's decision for a k + m array of n members, once it has read the
 * superblocks: the masks say which members have no base bdev (absent), read
 * as blank, hold a gga superblock that decoded (formatted: whether of this
 * array, role and geometry is checked at assembly) or hold anything else
 * (other). The checks, in order, each naming the lowest member of its mask:
 *   create:   without force, a formatted or other member refuses; else FORMAT
 *             (absent members never reach it: create needs all of them);
 *   auto and assemble: an other member refuses; absent members with none
 *             formatted refuse (a new array needs all); assemble with none
 *             formatted refuses; blank members beside fewer than k formatted
 *             ones refuse; then FORMAT if every member is blank, else ASSEMBLE.
 * A mode outside the three plans ASSEMBLE with no check, as create always
 * did (the RPC gives only the three). Pure: no I/O, no allocation.
 */
void gga_lc_plan_create(uint32_t n, uint32_t k, enum gga_lc_mode mode, bool force, uint32_t absent,
			uint32_t blank, uint32_t formatted, uint32_t other,
			struct gga_lc_plan *plan);

/* Fill `rules` with every fix on: what production code uses. */
void gga_lc_rules_default(struct gga_lc_rules *rules);

/*
 * The view of an array just formatted: every member online and in sync, no
 * update yet (the first gga_lc_issue() gives count 1).
 */
void gga_lc_new(struct gga_lc_view *view, uint32_t k, uint32_t m);

/*
 * Assemble the view of a k + m array from what was found on each member
 * (found[i], and rec[i] where found[i] is GGA_LC_FOUND_RECORD). rules NULL
 * means the default; `held`: members the I/O code's policy keeps out of a
 * pass (auto re-add off). Returns 0 with the initial view in `view` and its
 * first actions (persist the assembly's records, format blank members, start
 * a pass; a checkpoint no pass resumes now is dropped, as writes will land
 * below it), or a negative errno with act->flags GGA_LC_ACT_REFUSE and act->why
 * (-EINVAL: bad geometry; -EEXIST: a foreign member; -ENODEV: no record;
 * -EIO: fewer than k trusted members). A refusal writes nothing. m >= k is
 * accepted here (create refuses it) so that the checker can show why it must
 * be refused.
 */
int gga_lc_assemble(struct gga_lc_view *view, uint32_t k, uint32_t m,
		    const struct gga_lc_rules *rules, const enum gga_lc_found *found,
		    const struct gga_lc_record *rec, uint32_t held, struct gga_lc_actions *act);

/*
 * gga_lc_assemble() refused (rc) with the view and `found` it was given: may
 * the shell wait for members rather than give up? Only when it refused for
 * want of members in sync (-EIO) and the members not found
 * (GGA_LC_FOUND_ABSENT: no base bdev, or one that did not answer) could make
 * k in sync with those trusted now if they came back: an array whose
 * members are only down. Any other refusal is final.
 */
bool gga_lc_assemble_may_wait(const struct gga_lc_view *view, const enum gga_lc_found *found,
			      int rc);

/*
 * The assembly's records (gga_lc_assemble()'s PERSIST, issued) reached the
 * members in `written`; the others failed the write. Does the assembly
 * stand? Rule 5: only if k members it trusts (online) hold them; then the
 * others are failed (GGA_LC_EV_IO_ERROR) and the next update says so. Else
 * the records may be outvoted, and nothing may be acknowledged on them.
 */
bool gga_lc_assembly_written(const struct gga_lc_view *view, uint32_t written);

/*
 * A member whose I/O has had no answer for member_timeout_ms (a stall, not an
 * error: it may answer yet). May it be failed, with `online` the members
 * online now? Issue 32: not while that would leave fewer than k online: the
 * array would fail every request at once, when waiting for the member can
 * still serve them all. A member not online (rebuilding, stale) may always
 * be failed. Only errors and a delete take an array below k.
 */
bool gga_lc_stall_may_fail(uint32_t online, uint32_t k, uint32_t i);

/*
 * Apply one event to the view and fill `act` (always cleared first) with what
 * the I/O code must do. Returns 0, or -EINVAL for an event that makes no sense
 * (member out of range); an event that no longer applies (a probe of a member
 * that is online again) is ignored and returns 0 with no action.
 */
int gga_lc_apply(struct gga_lc_view *view, const struct gga_lc_event *ev,
		 struct gga_lc_actions *act);

/*
 * The array's state from the count of members online and whether blocks are
 * known lost (rule 10: the true redundancy): what bdev_gga_get_info and the
 * health report.
 */
enum gga_lc_array_state gga_lc_state_of(uint32_t online, uint32_t n, uint32_t k, bool lost);

/* The array's state of a view (no block known lost). */
enum gga_lc_array_state gga_lc_array_state(const struct gga_lc_view *view);

/* Members that reads may use: the online ones; 0 when the array is failed. */
uint32_t gga_lc_read_mask(const struct gga_lc_view *view);

/* Members that writes go to: online and rebuilding; 0 when the array is failed. */
uint32_t gga_lc_write_mask(const struct gga_lc_view *view);

/*
 * Rule 7 as the I/O threads apply it: what the latest persisted update says.
 * The module keeps it in the view (persisted_mask, persisted_sync,
 * persisted_rec); the I/O code publishes the same three masks, packed in one
 * word (gga_lc_durable_pack), when a superblock update lands, and every
 * write and flush completion decides with gga_lc_ack_decide() on them.
 */
struct gga_lc_durable {
	uint32_t reached; /* members the update reached */
	uint32_t sync;    /* members it records in sync */
	uint32_t rec;     /* members of its checkpoint (rec_mask) */
};

static inline uint64_t
gga_lc_durable_pack(const struct gga_lc_durable *d)
{
	return (uint64_t)(d->reached & 0xffffu) | (uint64_t)(d->sync & 0xffffu) << 16 |
	       (uint64_t)(d->rec & 0xffffu) << 32;
}

static inline void
gga_lc_durable_unpack(uint64_t word, struct gga_lc_durable *d)
{
	d->reached = (uint32_t)(word & 0xffffu);
	d->sync = (uint32_t)((word >> 16) & 0xffffu);
	d->rec = (uint32_t)((word >> 32) & 0xffffu);
}

enum gga_lc_ack {
	GGA_LC_ACK_YES = 0, /* acknowledge it */
	GGA_LC_ACK_WAIT,    /* durable once an update that records the missers lands */
	GGA_LC_ACK_NEVER,   /* fewer than k online members have it: fail it */
};

/*
 * Rule 7: may a write that the members in `received` took be acknowledged,
 * with the members in `online` online now? Yes when k online members have it
 * and either every member has it, or, by the latest persisted update, which
 * reached every online member that has the write: every member that lacks it
 * is recorded as not in sync, and every member in `held` that lacks it is
 * outside the checkpoint's rec_mask. `held`: the targets of the running pass
 * that the write went to (their pass may be past its blocks before the
 * update that puts them in the checkpoint lands) and the members of the
 * persisted checkpoint when it went out. (A member online when the write
 * went out, or one that joins a pass after, gets the block from the pass,
 * which waits for the range lock the write holds: its checkpoint bit does
 * not hold the write back; if it did, the write would wait for the pass and
 * the pass for the write. One that left the pass, failed, before the write
 * went out holds it until an update drops its bit: a restart would resume
 * its pass past the write.) A flush, which holds no range, also counts every
 * member it was sent to, with `received` every member but those whose flush
 * failed. The one formula of the acknowledgement: the I/O path calls it at
 * every write and flush completion, gga_lc_ack_ok() in the checker.
 */
enum gga_lc_ack gga_lc_ack_decide(const struct gga_lc_durable *d, uint32_t n, uint32_t k,
				  uint32_t held, uint32_t received, uint32_t online);

/*
 * Rule 6: where a pass's checkpoint may stand: the next block it would issue
 * (`cursor`), or the first block of the lowest of its `count` chunks still in
 * flight (`starts`), whichever is lower. Every block below it is recovered on
 * every target; a chunk in flight is not, whatever is above it. Feed the
 * result as GGA_LC_EV_PASS_CHECKPOINT.
 */
uint64_t gga_lc_checkpoint_at(uint64_t cursor, const uint64_t *starts, uint32_t count);

/* gga_lc_ack_decide() with the view's persisted update and online members: YES or not. */
bool gga_lc_ack_ok(const struct gga_lc_view *view, uint32_t held, uint32_t received);

/*
 * The record an update carries (rule 7): each member in `sync` recorded in
 * sync, every other as stale, or as needing a rebuild where needs[i] says so;
 * the checkpoint only with members. The one formula of a record:
 * gga_lc_record_fill() makes every record the I/O code writes with it.
 */
void gga_lc_record_make(struct gga_lc_record *rec, uint32_t n, uint64_t events,
			uint64_t bitmap_events, uint32_t sync, const uint8_t *needs,
			uint32_t rec_mask, uint64_t rec_offset);

/* The record member i's superblock would carry now (the last one persisted or asked for). */
void gga_lc_record_fill(const struct gga_lc_view *view, struct gga_lc_record *rec);

#endif /* GGA_LIFECYCLE_H */
