/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The calls of bdev_gga_member.c: member states and masks, failures and
 * the error policy, blocks lost and the health, role names, and the
 * lifecycle module's view of the disk. The lowest of the gga bdev's own
 * files: it calls none of them, and asks the superblock writer for an
 * update through gga_sb_kick().
 * The structures they work on are in bdev_gga_disk.h.
 */
#ifndef GGA_BDEV_GGA_MEMBER_H
#define GGA_BDEV_GGA_MEMBER_H

#include "bdev_gga_disk.h"

/*
 * Timings that only the unit tests change (0: the default), so that a
 * torture run reaches persisted checkpoints mid-pass and gets its members
 * back in milliseconds rather than seconds.
 */
struct gga_test_knobs {
	uint32_t checkpoint_ms; /* a pass persists its checkpoint this often (2000) */
	uint32_t chunk_blocks;  /* blocks per chunk of a pass (128 KiB worth) */
	uint32_t probe_ms;      /* failed members are probed this often (1000) */
	uint32_t retry_ms;      /* a pass that failed is retried this much later (10000) */
	uint32_t sweep_ms;      /* the bitmap sweep looks this often (1000) */
	bool keep_marks;        /* a delete leaves the marks, as an unclean stop does */
};
extern struct gga_test_knobs gga_test_knobs;

/* The array's state from its members (the true redundancy). */
enum bdev_gga_state gga_disk_state(const struct gga_disk *disk);
/* True when every member is online. */
bool gga_disk_all_online(const struct gga_disk *disk);
/*
 * Count n more blocks found unrecoverable, or (a full scrub) set the count
 * to n (any thread). A change between none and some changes the health.
 */
void gga_lost_blocks_add(struct gga_disk *disk, uint64_t n);
void gga_lost_blocks_set(struct gga_disk *disk, uint64_t n);
/*
 * Any thread: a read found block `lba` unrecoverable. Counted (and true
 * returned, for the caller to log it) only if it is not the block last
 * counted in its slot of a small direct-mapped table: a host that retries
 * one unreadable block neither inflates the count nor floods the log.
 */
bool gga_lost_block_read(struct gga_disk *disk, uint64_t lba);
/* bdev_get_health of a gga bdev (any thread). */
void gga_disk_health(const struct gga_disk *disk, struct bdev_health *health);
/* "data_2" etc. for this disk's member `index`, in buf. */
const char *gga_role_of(const struct gga_disk *disk, uint32_t index, char *buf, size_t len);
/* "data_2 'M2'": member `index`'s role and base name, for messages; written to buf. */
const char *gga_member_label(const struct gga_disk *disk, uint32_t index, char *buf, size_t len);
/*
 * App thread: move member `index` to `state` for `reason` (a string
 * literal), updating the masks and logging the change once.
 */
void gga_member_set_state(struct gga_disk *disk, uint32_t index, enum bdev_gga_member_state state,
			  const char *reason);
/*
 * App thread: move member `index` from `from` to `to` only if it is still in
 * `from` (another thread may have failed it meanwhile). True if it moved.
 */
bool gga_member_cas_state(struct gga_disk *disk, uint32_t index, enum bdev_gga_member_state from,
			  enum bdev_gga_member_state to, const char *reason);
/* Mark a member failed after an I/O error (any thread); logs once. */
void gga_member_fail(struct gga_disk *disk, uint32_t index, const char *why);
/*
 * Any thread: member `index` stalled (no answer within member_timeout_ms).
 * Fails it (and returns true) if the lifecycle module allows it
 * (gga_lc_stall_may_fail(): k others stay online), else keeps it and returns
 * false: its requests wait for it. One stall decision at a time per disk, so
 * two members stalling together cannot both be failed below k.
 */
bool gga_member_stall(struct gga_disk *disk, uint32_t index, const char *why);
/*
 * Any thread: confirmed corrupt or stale fragments of block `lba` (read
 * under the block's lock; not torn writes, which are no member's fault, nor
 * fragments gga poisoned itself) on the members in `mask`. Each member is
 * charged once per block (GGA_CHARGED_SLOTS); past the error policy's limit
 * within its window, the module is asked to fault it
 * (gga_member_faults_decide()).
 */
void gga_member_charge(struct gga_disk *disk, uint64_t lba, uint32_t mask);
/*
 * App thread, in the superblock writer's message: the members gga_member_charge()
 * found past the limit, each told to the module (GGA_LC_EV_FAULT), which
 * faults it only while k others stay online. Their counts start over.
 */
void gga_member_faults_decide(struct gga_disk *disk);
/*
 * The lifecycle module's view of the disk as it stands (app thread): member
 * states, what each needs (not in sync unless the last persisted record says
 * so), the checkpoint, the pass running, and the members the I/O code holds
 * back from a pass (auto re-add off, a probe under way, a base going away).
 */
void gga_lc_view_of(const struct gga_disk *disk, struct gga_lc_view *v);
/*
 * Carry the view the module returned (from `before`) into the disk: every
 * member whose state it changed moves with `reason`, by compare-and-swap
 * from its state in `before` (an I/O thread that failed it since has the
 * last word); what each needs, the checkpoint and the running pass follow.
 * Returns the members moved.
 */
uint32_t gga_lc_take(struct gga_disk *disk, const struct gga_lc_view *before,
		     const struct gga_lc_view *v, const char *reason);
/*
 * gga_lc_view_of() after telling the module of the failures the I/O threads
 * took since the last step (GGA_LC_EV_IO_ERROR, GGA_LC_EV_CTRLR_LOST for a
 * base that went away) and carrying out what it returned (an update; a pass
 * to stop: disk->pass_stop): every lifecycle step of the app thread and
 * every superblock update starts with it.
 */
void gga_lc_view_now(struct gga_disk *disk, struct gga_lc_view *v);
/*
 * The decision of one lifecycle step (app thread): gga_lc_view_now(), `ev`
 * applied by the module (with the pass held back when hold_pass: the caller
 * starts one for every member at once later), the new view taken into the
 * disk with `reason` (or reason_of(view after, ev) when not NULL). Returns
 * the members it moved and the module's actions in *act, for the caller to
 * carry out (gga_lc_step() carries them all).
 */
uint32_t gga_lc_decide(struct gga_disk *disk, const struct gga_lc_event *ev, bool hold_pass,
		       const char *reason,
		       const char *(*reason_of)(const struct gga_lc_view *v,
						const struct gga_lc_event *ev),
		       struct gga_lc_actions *act);
/*
 * Ask for the members' states (and any new generation window) to be
 * persisted in the superblocks (any thread): queue the superblock writer's
 * update message (disk->sb_update, bdev_gga_sb.c) on the app thread, once.
 */
void gga_sb_kick(struct gga_disk *disk);

#endif /* GGA_BDEV_GGA_MEMBER_H */
