/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * How a gga bdev gets its members back (app thread). The passes that then
 * recover them (resync, rebuild) and the scrub run in bdev_gga_walk.c.
 *
 * - Re-add. Once a second, a failed member whose base answers again (its
 *   NVMe controller reconnected), or an absent one whose base bdev appeared
 *   again, is probed: its superblock is read. This array's superblock: the
 *   member is stale and is resynced. Blank: it is formatted and rebuilt
 *   whole. Anything else: it is left alone until bdev_gga_replace_member.
 * - Replace. bdev_gga_replace_member puts a new base in place of a member
 *   that is not online, formats its reserved region and rebuilds it whole.
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
#include "bdev_gga_front.h"
#include "bdev_gga_member.h"
#include "bdev_gga_recover.h"
#include "bdev_gga_remove.h"
#include "bdev_gga_sb.h"
#include "bdev_gga_walk.h"

#define PROBE_PERIOD_US (1000u * 1000u)

/* ---------------------------------------------------------------------- */
/* Attaching a base to a member                                            */
/* ---------------------------------------------------------------------- */

struct member_op;
typedef void (*member_step_cb)(struct member_op *op, int rc);

struct member_op {
	struct gga_member *member;
	member_step_cb cb;
	char *new_base;
	uint8_t *buf;
	struct gga_member_ctx ctx;
	char msg[256];
	/* replace only */
	bdev_gga_replace_cb user_cb;
	void *user_arg;
};

/*
 * A step on a member ended: its callback goes on, or frees op. If the gga
 * bdev is being deleted, this may have been the last thing it waited for.
 */
static void
member_op_end(struct member_op *op, int rc)
{
	struct gga_disk *disk = op->member->disk;

	op->member->probing = false;
	env_dma_free(op->buf);
	op->buf = NULL;
	op->cb(op, rc);
	if (disk->destructing) {
		gga_disk_try_free(disk);
	}
}

static void
attach_channel(struct io_channel_iter *i)
{
	struct member_op *op = io_channel_iter_get_ctx(i);
	struct gga_channel *ch = io_channel_get_ctx(io_channel_iter_get_channel(i));
	uint32_t index = op->member->index;

	if (ch->member_ch[index] == NULL && op->member->desc != NULL) {
		ch->member_ch[index] = bdev_get_io_channel(op->member->desc);
	}
	io_channel_iter_continue(i, ch->member_ch[index] != NULL ? 0 : -ENOMEM);
}

static void
attach_channels_done(struct io_channel_iter *i, int status)
{
	struct member_op *op = io_channel_iter_get_ctx(i);

	op->member->disk->pending_ops--;
	if (status != 0) {
		snprintf(op->msg, sizeof(op->msg), "no I/O channel to '%s'", op->member->name);
	}
	member_op_end(op, status);
}

/* Open, claim and check a base for member `member`, then give every channel a channel to it. */
static int
member_attach(struct member_op *op, const char *name)
{
	struct gga_member *member = op->member;
	struct gga_disk *disk = member->disk;
	struct bdev *b;
	int rc;

	rc = bdev_open(name, true, gga_member_event_cb, member, &member->desc);
	if (rc != 0) {
		snprintf(op->msg, sizeof(op->msg), "cannot open '%s': %s", name,
			 rc == -ENODEV ? "no such bdev" : strerror(-rc));
		return rc;
	}
	b = bdev_desc_get_bdev(member->desc);
	if (bdev_get_block_size(b) != disk->frag_size || bdev_get_md_size(b) != disk->md_size ||
	    bdev_get_num_blocks(b) != disk->member_blocks) {
		snprintf(op->msg, sizeof(op->msg),
			 "'%s' has %u-byte blocks with %u metadata bytes "
			 "and %" PRIu64 " blocks; the array needs %u, %u and %" PRIu64,
			 name, bdev_get_block_size(b), bdev_get_md_size(b), bdev_get_num_blocks(b),
			 disk->frag_size, disk->md_size, disk->member_blocks);
		rc = -EINVAL;
		goto out_close_desc;
	}
	if (disk->direct_reads && bdev_get_buf_align(b) > 1) {
		/* Reads go straight into callers' buffers, which have no alignment. */
		snprintf(op->msg, sizeof(op->msg),
			 "'%s' needs buffers aligned to %u bytes; the "
			 "array was assembled with members that take any buffer",
			 name, bdev_get_buf_align(b));
		rc = -EINVAL;
		goto out_close_desc;
	}
	rc = bdev_module_claim_bdev(b, member->desc, &gga_bdev_module);
	if (rc != 0) {
		snprintf(op->msg, sizeof(op->msg), "'%s' is claimed by another bdev", name);
		goto out_close_desc;
	}
	member->bdev = b;
	member->claimed = true;
	member->app_ch = bdev_get_io_channel(member->desc);
	if (member->app_ch == NULL) {
		snprintf(op->msg, sizeof(op->msg), "no I/O channel to '%s'", name);
		rc = -ENOMEM;
		goto out_release_claim;
	}
	member->flush_supported = bdev_io_type_supported(b, BDEV_IO_TYPE_FLUSH);
	member->reset_supported = bdev_io_type_supported(b, BDEV_IO_TYPE_RESET);
	member->removing = false;
	member->close_deferred = false;
	disk->pending_ops++;
	io_device_for_each_channel(disk, attach_channel, op, attach_channels_done);
	return 0;

out_release_claim:
	bdev_module_release_bdev(b);
	member->claimed = false;
out_close_desc:
	bdev_close(member->desc);
	member->desc = NULL;
	return rc;
}

static void
region_write_done(struct bdev_io *io, bool success, void *cb_arg)
{
	struct member_op *op = cb_arg;

	bdev_free_io(io);
	gga_member_app_io_done(op->member);
	if (!success) {
		snprintf(op->msg, sizeof(op->msg), "writing the reserved region of '%s' failed",
			 op->member->name);
	} else {
		/* It holds no record now: the next update's will be its first. */
		op->member->sb_events = 0;
	}
	member_op_end(op, success ? 0 : -EIO);
}

/*
 * Format a member's reserved region: a blank superblock area, zeros, and the
 * bitmap as it stands. Its record is the next update's, like every other
 * member's (rule 1: the lifecycle module formats a blank or replaced member
 * by an update; GGA_LC_EV_PROBE found blank, or GGA_LC_EV_REPLACE, asks for
 * it): a record of its own would take a count no other member holds, and a
 * member that then missed the next update in a crash would be two behind the
 * freshest, not one. A crash before that update finds it blank again.
 */
static int
member_format_region(struct member_op *op)
{
	struct gga_member *member = op->member;
	struct gga_disk *disk = member->disk;
	size_t len = disk->data_offset * disk->mbs;
	uint64_t first = gga_bitmap_offset(disk->frag_size) / disk->frag_size;
	int rc;

	op->buf = env_dma_zmalloc(len, 0);
	if (op->buf == NULL) {
		snprintf(op->msg, sizeof(op->msg), "out of DMA memory");
		return -ENOMEM;
	}
	/*
	 * Nothing is decided here: the module hears of the member once its
	 * region is written (GGA_LC_EV_PROBE found blank, or GGA_LC_EV_REPLACE)
	 * and makes it stale, to be rebuilt whole, without a checkpoint bit
	 * (lc_format()). Until then it is failed (or held by the replace, which
	 * it is probing for): no pass takes it, and an update meanwhile may say
	 * it needs a resync, which is safe: its superblock area is blank before
	 * and after this write, so an assembly after a crash finds it blank and
	 * rebuilds it whole.
	 */
	gga_bitmap_encode_area(disk, op->buf + first * disk->mbs);
	rc = bdev_write_blocks(member->desc, member->app_ch, op->buf, 0, disk->data_offset,
			       region_write_done, op);
	if (rc != 0) {
		snprintf(op->msg, sizeof(op->msg), "writing the reserved region of '%s': %s",
			 member->name, strerror(-rc));
		return rc;
	}
	member->app_io++;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Re-add                                                                  */
/* ---------------------------------------------------------------------- */

static void
probe_end(struct member_op *op, int rc)
{
	struct gga_member *member = op->member;
	struct gga_disk *disk = member->disk;

	free(op);
	if (rc == 0 && gga_member_state(member) == BDEV_GGA_MEMBER_STALE) {
		gga_sb_kick(disk);
	}
	/* Whatever this probe found, a pass that waited for it may start. */
	gga_recover_maybe_start(disk);
}

/*
 * What a probe found, to the lifecycle module, which decides: a foreign
 * record leaves the member failed until a replace; a blank one (formatted
 * by now) is rebuilt whole; a record of this array brings it back online
 * if it failed with the array (no write was acknowledged since), else makes
 * it stale, to be rebuilt whole if its record is older than the last
 * clearing of the bitmap (an old copy of its own storage) and resynced if
 * not. The I/O code carries it out.
 */
static const char *
probe_reason(const struct gga_lc_view *v, const struct gga_lc_event *ev)
{
	const struct gga_lc_member *mb = &v->mb[ev->member];

	return mb->run == GGA_LC_ONLINE          ? "back; it missed no acknowledged write" :
	       ev->found == GGA_LC_FOUND_BLANK   ? "came back blank: needs a full rebuild" :
	       mb->needs == GGA_LC_NEEDS_REBUILD ? "back, needs a full rebuild" :
						   "back with its superblock; missed writes";
}

static void
probe_apply(struct member_op *op, enum gga_lc_found found, const struct gga_sb *sb)
{
	struct gga_member *member = op->member;
	struct gga_disk *disk = member->disk;
	struct gga_lc_event ev = { .type = GGA_LC_EV_PROBE };
	char label[160];

	ev.member = member->index;
	ev.found = found;
	if (found == GGA_LC_FOUND_RECORD) {
		ev.rec.events = sb->events;
		ev.rec.bitmap_events = sb->bitmap_events;
		ev.rec.rec_offset = sb->recovery_offset;
		ev.rec.rec_mask = sb->recovery_mask;
		/* A count it holds is never handed out again (lc_probe()). */
		memcpy(ev.rec.member_state, sb->member_state, disk->n);
	}
	/* The probe's end starts the pass (probe_end()), one for every member back. */
	gga_lc_step(disk, &ev, true, NULL, probe_reason, NULL);
	if (found == GGA_LC_FOUND_RECORD && member->needs == GGA_LC_NEEDS_REBUILD &&
	    sb->events < disk->bitmap_events) {
		WARNLOG("gga bdev '%s': %s is back with a record of event %" PRIu64
			", older than the write-intent bitmap (%" PRIu64 "): an old copy; "
			"rebuilding it whole\n",
			disk->bdev.name,
			gga_member_label(disk, member->index, label, sizeof(label)), sb->events,
			disk->bitmap_events);
	}
}

static void
probe_blank_formatted(struct member_op *op, int rc)
{
	struct gga_member *member = op->member;
	struct gga_disk *disk = member->disk;
	char label[160];

	if (rc != 0) {
		ERRLOG("gga bdev '%s': %s came back blank, but %s\n", disk->bdev.name,
		       gga_member_label(disk, member->index, label, sizeof(label)), op->msg);
		free(op);
		return;
	}
	probe_apply(op, GGA_LC_FOUND_BLANK, NULL);
	probe_end(op, 0);
}

static void
probe_read_done(struct bdev_io *io, bool success, void *cb_arg)
{
	struct member_op *op = cb_arg;
	struct gga_member *member = op->member;
	struct gga_disk *disk = member->disk;
	enum gga_sb_mismatch mm = GGA_SB_MATCH;
	struct gga_lc_view view;
	uint8_t rec[GGA_SB_SIZE];
	struct gga_sb sb, want;
	char label[160], why[200];
	int rc;

	bdev_free_io(io);
	gga_member_app_io_done(member);
	if (!success || gga_member_state(member) == BDEV_GGA_MEMBER_ONLINE || disk->destructing) {
		/* Still unreachable: the next probe tries again. */
		member_op_end(op, -EIO);
		return;
	}
	gga_member_label(disk, member->index, label, sizeof(label));
	gga_area_gather(disk, op->buf, rec, sizeof(rec));
	rc = gga_sb_decode(rec, sizeof(rec), &sb);
	if (rc == -ENOENT) {
		gga_lc_view_now(disk, &view);
		if (!gga_lc_may_record(&view)) {
			/*
			 * Blank, but the module lets nothing be written to the members'
			 * regions now (rule 5: fewer than k online): its format would
			 * be the first half of an update. The next probe after the
			 * array is back formats it.
			 */
			member_op_end(op, -EAGAIN);
			return;
		}
		env_dma_free(op->buf);
		op->buf = NULL;
		op->cb = probe_blank_formatted;
		NOTICELOG("gga bdev '%s': %s answers again and is blank\n", disk->bdev.name, label);
		rc = member_format_region(op);
		if (rc != 0) {
			member_op_end(op, rc);
		}
		return;
	}
	if (rc == 0) {
		gga_sb_init(&want, disk->array_uuid, member->index, disk->k, disk->m, disk->matrix,
			    disk->block_size, disk->md_size, disk->member_blocks);
		mm = gga_sb_compare(&sb, &want, why, sizeof(why));
	}
	if (rc != 0 || mm != GGA_SB_MATCH) {
		probe_apply(op, GGA_LC_FOUND_FOREIGN, NULL);
		__atomic_store_n(&member->reason,
				 "holds a foreign or damaged superblock; "
				 "bdev_gga_replace_member reuses it",
				 __ATOMIC_RELEASE);
		WARNLOG("gga bdev '%s': %s answers again but holds %s; not re-added "
			"(bdev_gga_replace_member rebuilds onto it)\n",
			disk->bdev.name, label, rc != 0 ? "no valid gga superblock" : why);
		member_op_end(op, -EEXIST);
		return;
	}
	probe_apply(op, GGA_LC_FOUND_RECORD, &sb);
	member_op_end(op, 0);
}

static void
probe_read(struct member_op *op)
{
	struct gga_member *member = op->member;
	struct gga_disk *disk = member->disk;
	int rc;

	op->buf = env_dma_zmalloc((size_t)disk->sb_blocks * disk->mbs, 0);
	if (op->buf == NULL) {
		member_op_end(op, -ENOMEM);
		return;
	}
	rc = bdev_read_blocks(member->desc, member->app_ch, op->buf, 0, disk->sb_blocks,
			      probe_read_done, op);
	if (rc != 0) {
		member_op_end(op, rc);
		return;
	}
	member->app_io++;
}

static void
probe_attached(struct gga_member *member, int rc, const char *msg)
{
	struct gga_lc_event ev = { .type = GGA_LC_EV_PROBE, .found = GGA_LC_FOUND_FOREIGN };
	struct gga_disk *disk = member->disk;
	char label[160];

	if (rc != 0) {
		/* Unusable as found, like a foreign record: only a replace (or auto re-add) retries. */
		ev.member = member->index;
		gga_lc_step(disk, &ev, true, "its base cannot be used", NULL, NULL);
		WARNLOG("gga bdev '%s': base of %s is back but cannot be used: %s\n",
			disk->bdev.name,
			gga_member_label(disk, member->index, label, sizeof(label)), msg);
		return;
	}
	/* Probed on the next round like any failed member with a base. */
	gga_member_set_state(disk, member->index, BDEV_GGA_MEMBER_FAILED, "base bdev back");
}

static void
probe_attach_end(struct member_op *op, int rc)
{
	struct gga_disk *disk = op->member->disk;

	probe_attached(op->member, rc, op->msg);
	free(op);
	gga_recover_maybe_start(disk);
}

static struct member_op *
member_op_new(struct gga_member *member, member_step_cb cb)
{
	struct member_op *op = calloc(1, sizeof(*op));

	if (op != NULL) {
		op->member = member;
		op->cb = cb;
		member->probing = true;
	}
	return op;
}

static int
probe_poll(void *arg)
{
	struct gga_lc_event ev = { .type = GGA_LC_EV_CTRLR_BACK };
	struct gga_disk *disk = arg;
	struct gga_lc_actions act;
	struct gga_member *member;
	struct member_op *op;
	uint32_t i, state;
	bool busy = false;

	if (disk->destructing || gga_disk_gated(disk)) {
		return POLLER_IDLE;
	}
	for (i = 0; i < disk->n; i++) {
		member = &disk->members[i];
		state = gga_member_state(member);
		if ((state != BDEV_GGA_MEMBER_FAILED && state != BDEV_GGA_MEMBER_ABSENT) ||
		    member->probing || member->foreign ||
		    __atomic_load_n(&member->faulted, __ATOMIC_ACQUIRE) ||
		    (!disk->auto_readd && !member->forced)) {
			continue;
		}
		if (member->desc == NULL) {
			if (bdev_get_by_name(member->name) == NULL) {
				continue;
			}
			op = member_op_new(member, probe_attach_end);
			if (op == NULL) {
				continue;
			}
			if (member_attach(op, member->name) != 0) {
				member->probing = false;
				probe_attached(member, -EINVAL, op->msg);
				free(op);
			}
			busy = true;
			continue;
		}
		if (member->removing || member->app_ch == NULL) {
			continue;
		}
		/* Its base answers: the module says whether to read its record. */
		ev.member = i;
		gga_lc_step(disk, &ev, false, "its base answers", NULL, &act);
		if (!(act.flags & GGA_LC_ACT_PROBE) || act.probe_member != i) {
			continue;
		}
		op = member_op_new(member, probe_end);
		if (op != NULL) {
			probe_read(op);
			busy = true;
		}
	}
	/* A pass that waited for members, or for its retry time, may go now. */
	gga_recover_maybe_start(disk);
	return busy ? POLLER_BUSY : POLLER_IDLE;
}

void
gga_recover_start_disk(struct gga_disk *disk)
{
	disk->probe_poller = poller_register(probe_poll, disk,
					     gga_test_knobs.probe_ms != 0 ?
						     gga_test_knobs.probe_ms * 1000u :
						     PROBE_PERIOD_US,
					     "gga_probe");
	if (disk->probe_poller == NULL) {
		WARNLOG("gga bdev '%s': no probe poller: failed members are not re-added\n",
			disk->bdev.name);
	}
	/*
	 * The pass the assembly started (gga_lc_assemble(); a checkpoint none
	 * resumes now it dropped), carried out now that the disk has channels.
	 */
	gga_recover_start_assembled(disk);
	/*
	 * Regions still marked when an array is assembled may hold writes torn by
	 * an unclean stop: with every member in sync, check them now rather than
	 * on their first read.
	 */
	gga_walk_check_marked(disk);
}

void
gga_recover_stop_disk(struct gga_disk *disk)
{
	poller_unregister(&disk->probe_poller);
	gga_walk_stop(disk);
}

/* ---------------------------------------------------------------------- */
/* Public calls                                                            */
/* ---------------------------------------------------------------------- */

int
bdev_gga_set_options(const char *name, const uint32_t *rebuild_rate_mib_s, const bool *auto_readd)
{
	struct gga_lc_event ev = { .type = GGA_LC_EV_READD };
	struct gga_disk *disk = gga_disk_lookup(name);
	bool assembled;

	if (disk == NULL) {
		return -ENODEV;
	}
	gga_disk_unready(disk, &assembled);
	if (rebuild_rate_mib_s != NULL) {
		disk->rebuild_rate = *rebuild_rate_mib_s;
		gga_walk_set_rate(disk, *rebuild_rate_mib_s);
	}
	if (auto_readd != NULL) {
		disk->auto_readd = *auto_readd;
		/*
		 * Not assembled: only recorded. The assembly to come takes it (a
		 * member out of sync is resynced or not, gga_lc_assemble()); the
		 * lifecycle module has no view of the members yet.
		 */
		if (!assembled) {
			return 0;
		}
		if (*auto_readd) {
			/* The pass, if one may start, starts below, as after any retry delay. */
			gga_lc_step(disk, &ev, true, "auto re-add on", NULL, NULL);
		}
		gga_recover_maybe_start(disk);
	}
	return 0;
}

int
bdev_gga_set_member_policy(const char *name, const uint32_t *member_error_limit,
			   const uint32_t *member_error_window_s, const uint32_t *member_timeout_ms)
{
	struct gga_disk *disk = gga_disk_lookup(name);

	if (disk == NULL) {
		return -ENODEV;
	}
	if (member_error_limit != NULL) {
		__atomic_store_n(&disk->err_limit, *member_error_limit, __ATOMIC_RELAXED);
	}
	if (member_error_window_s != NULL) {
		__atomic_store_n(&disk->err_window_s, *member_error_window_s, __ATOMIC_RELAXED);
	}
	if (member_timeout_ms != NULL) {
		__atomic_store_n(&disk->timeout_ms, *member_timeout_ms, __ATOMIC_RELAXED);
	}
	return 0;
}

/* The member of `disk` that `name` names: a role ("data_2") or its base's name; NULL if none. */
static struct gga_member *
member_by_name(struct gga_disk *disk, const char *name)
{
	char role[16];
	uint32_t i;

	for (i = 0; i < disk->n && name != NULL; i++) {
		if (strcmp(name, gga_role_of(disk, i, role, sizeof(role))) == 0 ||
		    strcmp(name, disk->members[i].name) == 0) {
			return &disk->members[i];
		}
	}
	return NULL;
}

int
bdev_gga_clear_member(const char *name, const char *member_name)
{
	struct gga_lc_event ev = { .type = GGA_LC_EV_DISTRUST };
	struct gga_disk *disk = gga_disk_lookup(name);
	struct gga_member *member;
	char label[160];

	if (disk == NULL) {
		return -ENODEV;
	}
	member = member_by_name(disk, member_name);
	if (member == NULL) {
		return -ENOENT;
	}
	if (gga_disk_unready(disk, NULL) != NULL) {
		/* Whether it is faulted is the superblocks' word: read at assembly. */
		return -EAGAIN;
	}
	if (!__atomic_load_n(&member->faulted, __ATOMIC_ACQUIRE)) {
		return -EALREADY;
	}
	/*
	 * The module takes it back as a failed member that missed the writes
	 * since its fault (all marked in the bitmap): the probe re-adds it and a
	 * resync brings it up to date; bad fragments left on it are mended as
	 * they are read, or by a scrub.
	 */
	ev.member = member->index;
	gga_lc_step(disk, &ev, true, "cleared by the operator", NULL, NULL);
	member->forced = true;
	__atomic_store_n(&member->err_count, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&member->err_start, 0, __ATOMIC_RELAXED);
	NOTICELOG("gga bdev '%s': %s cleared by the operator; it is re-added and resynced\n",
		  disk->bdev.name, gga_member_label(disk, member->index, label, sizeof(label)));
	return 0;
}

/* Replace: detach the old base (if any and different), attach the new, format, rebuild. */

static void
replace_end(struct member_op *op, int rc)
{
	bdev_gga_replace_cb cb = op->user_cb;
	void *arg = op->user_arg;
	struct gga_member *member = op->member;
	struct gga_disk *disk = member->disk;
	struct gga_lc_event ev = { .type = GGA_LC_EV_REPLACE };
	char msg[sizeof(op->msg)], label[160];

	memcpy(msg, op->msg, sizeof(msg));
	member->probing = false;
	member->replace_op = NULL;
	if (rc == 0) {
		member->forced = true;
		__atomic_store_n(&member->err_count, 0, __ATOMIC_RELAXED);
		NOTICELOG("gga bdev '%s': %s replaced; rebuilding it\n", disk->bdev.name,
			  gga_member_label(disk, member->index, label, sizeof(label)));
		/* The module decides (GGA_LC_EV_REPLACE): rebuilt whole, its format persisted. */
		/* The pass starts below (gga_recover_maybe_start()), logged apart. */
		ev.member = member->index;
		gga_lc_step(disk, &ev, true, "replaced: needs a full rebuild", NULL, NULL);
		gga_recover_maybe_start(disk);
	} else {
		ERRLOG("gga bdev '%s': replacing %s failed: %s\n", disk->bdev.name,
		       gga_member_label(disk, member->index, label, sizeof(label)), msg);
	}
	free(op->new_base);
	env_dma_free(op->buf);
	free(op);
	cb(arg, rc, msg);
}

static void
replace_formatted(struct member_op *op, int rc)
{
	replace_end(op, rc);
}

static void
replace_attached(struct member_op *op, int rc)
{
	struct gga_member *member = op->member;

	if (rc != 0) {
		replace_end(op, rc);
		return;
	}
	member->probing = true;
	op->cb = replace_formatted;
	rc = member_format_region(op);
	if (rc != 0) {
		replace_end(op, rc);
	}
}

static void
replace_attach_new(struct member_op *op)
{
	struct gga_member *member = op->member;
	int rc;

	char *old = member->name;

	gga_member_set_state(member->disk, member->index, BDEV_GGA_MEMBER_ABSENT, "being replaced");
	/* The member carries its new base's name from now on (and in save_config). */
	member->name = op->new_base;
	op->new_base = old;
	op->cb = replace_attached;
	rc = member_attach(op, member->name);
	if (rc != 0) {
		op->new_base = member->name;
		member->name = old;
		replace_end(op, rc);
	}
}

static void
replace_attach_msg(void *arg)
{
	replace_attach_new(arg);
}

static void
replace_detached(struct io_channel_iter *i, int status)
{
	struct gga_member *member = io_channel_iter_get_ctx(i);
	struct member_op *op = member->replace_op;

	member->disk->pending_ops--;
	if (member->app_io > 0) {
		/* Cannot happen for a member that is not online: nothing writes to it. */
		snprintf(op->msg, sizeof(op->msg), "I/O to the old base is still in flight");
		replace_end(op, -EBUSY);
		return;
	}
	gga_member_close(member);
	replace_attach_new(op);
}

int
bdev_gga_replace_member(const char *name, const char *member_name, const char *new_base,
			bdev_gga_replace_cb cb, void *cb_arg, char *msg, size_t msg_len)
{
	struct gga_disk *disk = gga_disk_lookup(name);
	struct gga_member *member = NULL;
	struct member_op *op;
	uint32_t i, state;
	struct bdev *b;
	char role[16];

	if (disk == NULL) {
		snprintf(msg, msg_len, "gga bdev '%s' does not exist", name ? name : "");
		return -ENODEV;
	}
	for (i = 0; i < disk->n && member_name != NULL; i++) {
		if (strcmp(member_name, gga_role_of(disk, i, role, sizeof(role))) == 0 ||
		    strcmp(member_name, disk->members[i].name) == 0) {
			member = &disk->members[i];
			break;
		}
	}
	if (member == NULL) {
		snprintf(msg, msg_len,
			 "gga bdev '%s' has no member '%s' (a role such as data_1, "
			 "or a base bdev name)",
			 name, member_name ? member_name : "");
		return -ENOENT;
	}
	if (gga_disk_unready_msg(disk, msg, msg_len)) {
		/*
		 * Its members' states are not known (or not this front's to
		 * change): a replace would format the new base and claim it for an
		 * array that may not take it.
		 */
		return -EAGAIN;
	}
	state = gga_member_state(member);
	if (state == BDEV_GGA_MEMBER_ONLINE || state == BDEV_GGA_MEMBER_REBUILDING ||
	    member->probing || member->replace_op != NULL || member->app_io > 0) {
		snprintf(msg, msg_len,
			 "member %s '%s' is %s; only a member that is not online or "
			 "being recovered can be replaced",
			 role, member->name,
			 member->probing ? "being probed" : bdev_gga_member_state_name(state));
		return -EBUSY;
	}
	if ((uint32_t)__builtin_popcount(gga_live_mask(disk)) < disk->k) {
		/* Nothing to rebuild it from, and no record may be written meanwhile. */
		snprintf(msg, msg_len,
			 "gga bdev '%s' has fewer than %u members online: a new member cannot "
			 "be rebuilt",
			 name, disk->k);
		return -EIO;
	}
	b = new_base != NULL ? bdev_get_by_name(new_base) : NULL;
	if (b == NULL) {
		snprintf(msg, msg_len, "base bdev '%s' does not exist", new_base ? new_base : "");
		return -ENODEV;
	}
	for (i = 0; i < disk->n; i++) {
		if (&disk->members[i] != member && strcmp(disk->members[i].name, new_base) == 0) {
			snprintf(msg, msg_len, "'%s' is already member %s of '%s'", new_base,
				 gga_role_of(disk, i, role, sizeof(role)), name);
			return -EEXIST;
		}
	}
	/* Checked before anything is let go of, so a refusal changes nothing. */
	if (bdev_get_block_size(b) != disk->frag_size || bdev_get_md_size(b) != disk->md_size ||
	    bdev_get_num_blocks(b) != disk->member_blocks) {
		snprintf(msg, msg_len,
			 "'%s' has %u-byte blocks with %u metadata bytes and %" PRIu64
			 " blocks; the members have %u, %u and %" PRIu64,
			 new_base, bdev_get_block_size(b), bdev_get_md_size(b),
			 bdev_get_num_blocks(b), disk->frag_size, disk->md_size,
			 disk->member_blocks);
		return -EINVAL;
	}
	if (bdev_is_claimed(b) && b != member->bdev) {
		snprintf(msg, msg_len, "'%s' is claimed by another bdev", new_base);
		return -EPERM;
	}
	op = member_op_new(member, NULL);
	if (op == NULL || (op->new_base = strdup(new_base)) == NULL) {
		free(op);
		member->probing = false;
		snprintf(msg, msg_len, "out of memory");
		return -ENOMEM;
	}
	op->user_cb = cb;
	op->user_arg = cb_arg;
	member->replace_op = op;
	if (member->desc != NULL && strcmp(member->name, new_base) == 0 && !member->removing) {
		/* The same base again: format it and rebuild it whole. */
		op->cb = replace_formatted;
		if (member_format_region(op) != 0) {
			member->probing = false;
			member->replace_op = NULL;
			snprintf(msg, msg_len, "%s", op->msg);
			free(op->new_base);
			env_dma_free(op->buf);
			free(op);
			return -EIO;
		}
		return 0;
	}
	if (member->desc != NULL) {
		/* Every channel lets go of the old base before it is closed. */
		member->removing = true;
		disk->pending_ops++;
		io_device_for_each_channel(disk, gga_member_release_channel, member,
					   replace_detached);
		return 0;
	}
	/* Nothing to let go of: attach from a message, so cb never runs inside this call. */
	op->cb = replace_attached;
	if (thread_send_msg(thread_get_current(), replace_attach_msg, op) != 0) {
		member->probing = false;
		member->replace_op = NULL;
		free(op->new_base);
		free(op);
		snprintf(msg, msg_len, "out of memory");
		return -ENOMEM;
	}
	return 0;
}
